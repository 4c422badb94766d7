/* layout_hidden_copy.c - layout.hidden-copy (info).
 *   buggy: the data is produced in one buffer and copied (cudaMemcpyAsync
 *          device-to-device, exactly the bytes sent) into the send buffer
 *          right before ncclAllReduce: an implicit .contiguous();
 *   fixed: the data is produced directly in the send buffer. */
#include "local_common.h"

#define N 4096

int main(int argc, char **argv) {
  int fixed = lc_fixed(argc, argv);
  LC_CUDA(cudaSetDevice(0));
  ncclComm_t comm = lc_comm1();
  cudaStream_t s = lc_stream();
  float *produced = lc_dalloc(N * sizeof(float));
  float *send = fixed ? produced : lc_dalloc(N * sizeof(float));
  float *recv = lc_dalloc(N * sizeof(float));
  LC_CUDA(cudaMemsetAsync(produced, 0, N * sizeof(float), s));
  if (!fixed)
    LC_CUDA(cudaMemcpyAsync(send, produced, N * sizeof(float), cudaMemcpyDeviceToDevice, s));
  LC_TRY(ncclAllReduce(send, recv, N, ncclFloat, ncclSum, comm, s));
  LC_CUDA(cudaStreamSynchronize(s));
  LC_NCCL(ncclCommDestroy(comm));
  return 0;
}
