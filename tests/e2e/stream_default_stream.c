/* stream_default_stream.c - stream.default-stream end to end.
 *
 * Two ranks run one all-to-all. The buggy version passes stream 0 (the
 * legacy default stream, which serializes with every blocking stream); the
 * fixed one a stream created with cudaStreamNonBlocking. Both compute the
 * right data: the finding is about lost overlap, not corruption.
 */
#include "stream_common.h"

#define N 256

static float base_of(int from, int to) { return (float)(from * 1000 + to * 10); }

static int rank_main(int rank, int nranks, ncclComm_t comm, void *arg) {
  int fixed = *(int *)arg;
  cudaStream_t s = 0;
  if (fixed) SE_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  size_t bytes = (size_t)nranks * N * sizeof(float);
  float *send, *recv, *host = malloc(bytes);
  SE_CUDA(cudaMalloc((void **)&send, bytes));
  SE_CUDA(cudaMalloc((void **)&recv, bytes));
  for (int p = 0; p < nranks; p++) se_fill(s, send + (size_t)p * N, N, base_of(rank, p));
  SE_NCCL(ncclGroupStart());
  for (int p = 0; p < nranks; p++) {
    SE_NCCL(ncclSend(send + (size_t)p * N, N, ncclFloat, p, comm, s));
    SE_NCCL(ncclRecv(recv + (size_t)p * N, N, ncclFloat, p, comm, s));
  }
  SE_NCCL(ncclGroupEnd());
  SE_CUDA(cudaStreamSynchronize(s));
  SE_CUDA(cudaMemcpy(host, recv, bytes, cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int p = 0; p < nranks; p++)
    for (int i = 0; i < N; i++)
      if (host[(size_t)p * N + i] != base_of(p, rank) + (float)i) { wrong++; break; }
  SE_CUDA(cudaFree(send));
  SE_CUDA(cudaFree(recv));
  if (fixed) SE_CUDA(cudaStreamDestroy(s));
  free(host);
  return wrong ? SE_DATA_WRONG : 0;
}

int main(int argc, char **argv) {
  int fixed = se_fixed_arg(argc, argv);
  return se_verdict(se_run_ranks(2, rank_main, &fixed));
}
