/* stream_default_stream.c - stream.default-stream end to end.
 *
 * Two ranks run one all-to-all next to compute on a stream of their own
 * created with cudaStreamCreate (blocking). The buggy version passes NCCL
 * stream 0, the legacy default stream, which CUDA orders with every
 * blocking stream of the device: the all-to-all and the compute cannot
 * overlap. The fixed one passes a stream created with
 * cudaStreamNonBlocking. Both compute the right data: the finding is about
 * lost overlap, not corruption. (The legacy stream without blocking
 * streams beside it is not reported: tests/e2e/client_torch.c.)
 */
#include "stream_common.h"

#define N 256

static int rank_main(int rank, int nranks, ncclComm_t comm, void *arg) {
  int fixed = *(int *)arg;
  cudaStream_t s = 0, compute;
  E2E_CUDA(cudaStreamCreate(&compute)); /* blocking */
  if (fixed) E2E_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  size_t bytes = (size_t)nranks * N * sizeof(float);
  float *send, *recv, *host = malloc(bytes);
  E2E_CUDA(cudaMalloc((void **)&send, bytes));
  E2E_CUDA(cudaMalloc((void **)&recv, bytes));
  float *work;
  E2E_CUDA(cudaMalloc((void **)&work, bytes));
  se_fill_chunks(s, send, N, nranks, 0, rank);
  e2e_compute(compute, work, N, 0); /* independent compute */
  se_alltoall(send, recv, N, nranks, comm, s);
  E2E_CUDA(cudaStreamSynchronize(s));
  E2E_CUDA(cudaStreamSynchronize(compute));
  E2E_CUDA(cudaMemcpy(host, recv, bytes, cudaMemcpyDeviceToHost));
  int wrong = se_wrong_chunks(host, N, nranks, 0, rank);
  E2E_CUDA(cudaFree(send));
  E2E_CUDA(cudaFree(recv));
  E2E_CUDA(cudaFree(work));
  E2E_CUDA(cudaStreamDestroy(compute));
  if (fixed) E2E_CUDA(cudaStreamDestroy(s));
  free(host);
  return wrong ? E2E_DATA_WRONG : 0;
}

int main(int argc, char **argv) {
  int fixed = e2e_fixed(argc, argv);
  return e2e_verdict(NULL, e2e_run_ranks(2, e2e_register_kernels, rank_main, &fixed));
}
