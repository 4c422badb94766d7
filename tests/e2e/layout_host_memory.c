/* layout_host_memory.c - layout.host-memory.
 *   buggy: ncclAllReduce whose send buffer is a malloc'ed (pageable host)
 *          array, the CPU-tensor data_ptr() mistake;
 *   fixed: the same data copied to a cudaMalloc'ed buffer first. */
#include "local_common.h"

#define N 4096

int main(int argc, char **argv) {
  int fixed = lc_fixed(argc, argv);
  LC_CUDA(cudaSetDevice(0));
  ncclComm_t comm = lc_comm1();
  cudaStream_t s = lc_stream();
  float *host = malloc(N * sizeof(float));
  for (int i = 0; i < N; i++) host[i] = (float)i;
  float *recv = lc_dalloc(N * sizeof(float));
  const float *send = host;
  if (fixed) {
    float *dev = lc_dalloc(N * sizeof(float));
    LC_CUDA(cudaMemcpy(dev, host, N * sizeof(float), cudaMemcpyHostToDevice));
    send = dev;
  }
  LC_TRY(ncclAllReduce(send, recv, N, ncclFloat, ncclSum, comm, s));
  LC_CUDA(cudaStreamSynchronize(s));
  LC_NCCL(ncclCommDestroy(comm));
  free(host);
  return 0;
}
