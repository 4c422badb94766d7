/* layout_misaligned.c - layout.misaligned.
 *   buggy: ncclAllReduce on a 16 KiB view that starts 4 bytes into its
 *          allocation (a slice at an odd element offset);
 *   fixed: the view starts 16 bytes in. */
#include "local_common.h"

#define N 4096

int main(int argc, char **argv) {
  int fixed = lc_fixed(argc, argv);
  LC_CUDA(cudaSetDevice(0));
  ncclComm_t comm = lc_comm1();
  cudaStream_t s = lc_stream();
  float *base = lc_dalloc((N + 4) * sizeof(float));
  float *view = base + (fixed ? 4 : 1);
  LC_TRY(ncclAllReduce(view, view, N, ncclFloat, ncclSum, comm, s));
  LC_CUDA(cudaStreamSynchronize(s));
  LC_NCCL(ncclCommDestroy(comm));
  return 0;
}
