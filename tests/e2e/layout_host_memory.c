/* layout_host_memory.c - layout.host-memory.
 *   buggy: ncclAllReduce whose send buffer is a malloc'ed (pageable host)
 *          array, the CPU-tensor data_ptr() mistake;
 *   fixed: the same data copied to a cudaMalloc'ed buffer first. */
#include "e2e_common.h"

#define N 4096

int main(int argc, char **argv) {
  int fixed = e2e_fixed(argc, argv);
  E2E_CUDA(cudaSetDevice(0));
  ncclComm_t comm = e2e_comm1();
  cudaStream_t s = e2e_stream();
  float *host = malloc(N * sizeof(float));
  for (int i = 0; i < N; i++) host[i] = (float)i;
  float *recv = e2e_dalloc(N * sizeof(float));
  const float *send = host;
  if (fixed) {
    float *dev = e2e_dalloc(N * sizeof(float));
    E2E_CUDA(cudaMemcpy(dev, host, N * sizeof(float), cudaMemcpyHostToDevice));
    send = dev;
  }
  E2E_TRY(ncclAllReduce(send, recv, N, ncclFloat, ncclSum, comm, s));
  E2E_CUDA(cudaStreamSynchronize(s));
  E2E_NCCL(ncclCommDestroy(comm));
  free(host);
  return 0;
}
