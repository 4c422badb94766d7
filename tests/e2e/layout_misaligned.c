/* layout_misaligned.c - layout.misaligned.
 *   buggy: ncclAllReduce on a 16 KiB view that starts 4 bytes into its
 *          allocation (a slice at an odd element offset);
 *   fixed: the view starts 16 bytes in. */
#include "e2e_common.h"

#define N 4096

int main(int argc, char **argv) {
  int fixed = e2e_fixed(argc, argv);
  E2E_CUDA(cudaSetDevice(0));
  ncclComm_t comm = e2e_comm1();
  cudaStream_t s = e2e_stream();
  float *base = e2e_dalloc((N + 4) * sizeof(float));
  float *view = base + (fixed ? 4 : 1);
  E2E_TRY(ncclAllReduce(view, view, N, ncclFloat, ncclSum, comm, s));
  E2E_CUDA(cudaStreamSynchronize(s));
  E2E_NCCL(ncclCommDestroy(comm));
  return 0;
}
