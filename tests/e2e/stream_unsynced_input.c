/* stream_unsynced_input.c - stream.unsynced-input end to end.
 *
 * Two ranks. Each step a producer kernel fills the send buffer on a compute
 * stream, then an all-to-all (grouped ncclSend/ncclRecv) runs on a separate
 * communication stream. The buggy version forgets the event edge from the
 * producer to the communication stream; the compute stream is slowed down
 * (a2asim_stream_set_delay) so NCCL sends the buffer before the producer
 * wrote it and the peers receive stale data. `fixed` records an event after
 * the producer and makes the communication stream wait for it.
 *
 * a2acheck tracks a buffer once a communication operation has touched it,
 * so the finding comes from the second step on (the first use of a buffer
 * produced by a kernel is a documented blind spot); the harm shows from the
 * first step.
 *
 * `buggy-fresh` / `fixed-fresh`: the send buffer is a fresh
 * cudaMallocAsync block every step (PyTorch's cudaMallocAsync backend),
 * uploaded from pinned host memory with cudaMemcpyAsync on the compute
 * stream and freed with cudaFreeAsync after the operation. Every use is a
 * first use; the upload is known through the recent-copy ring, so the
 * finding comes from the first step.
 */
#include "stream_common.h"

#define N 1024 /* floats per peer */
#define STEPS 3

typedef struct mode {
  int fixed, fresh;
} mode;

static int rank_main(int rank, int nranks, ncclComm_t comm, void *arg) {
  const mode *m = arg;
  int fixed = m->fixed;
  cudaStream_t comp = e2e_stream(), comm_s = e2e_stream();
  size_t bytes = (size_t)nranks * N * sizeof(float);
  float *send, *recv, *host = malloc(bytes), *pinned;
  E2E_CUDA(cudaMallocHost((void **)&pinned, bytes));
  E2E_CUDA(cudaMalloc((void **)&send, bytes));
  E2E_CUDA(cudaMalloc((void **)&recv, bytes));
  E2E_CUDA(cudaMemset(send, 0, bytes));
  E2E_CUDA(cudaMemset(recv, 0, bytes));
  E2E_CUDA(cudaDeviceSynchronize());
  cudaEvent_t produced = e2e_event();
  E2E_CUDA(a2asim_stream_set_delay(comp, 30000)); /* the producer is slow */

  int wrong = 0;
  float *const send0 = send;
  for (int step = 1; step <= STEPS; step++) {
    if (m->fresh) {
      E2E_CUDA(cudaMallocAsync((void **)&send, bytes, comm_s));
      E2E_CUDA(cudaStreamSynchronize(comm_s));
      for (int p = 0; p < nranks; p++)
        for (int i = 0; i < N; i++) pinned[(size_t)p * N + i] = se_base(step, rank, p) + (float)i;
      E2E_CUDA(cudaMemcpyAsync(send, pinned, bytes, cudaMemcpyHostToDevice, comp));
    } else {
      se_fill_chunks(comp, send, N, nranks, step, rank);
    }
    if (fixed) e2e_edge(produced, comp, comm_s);
    se_alltoall(send, recv, N, nranks, comm, comm_s);
    E2E_CUDA(cudaStreamSynchronize(comm_s));
    E2E_CUDA(cudaStreamSynchronize(comp));
    if (m->fresh) {
      E2E_CUDA(cudaFreeAsync(send, comm_s));
      send = send0;
    }
    E2E_CUDA(cudaMemcpy(host, recv, bytes, cudaMemcpyDeviceToHost));
    wrong += se_wrong_chunks(host, N, nranks, step, rank);
  }
  if (wrong) fprintf(stderr, "rank %d: %d wrong chunks\n", rank, wrong);
  E2E_CUDA(cudaEventDestroy(produced));
  E2E_CUDA(cudaFree(send));
  E2E_CUDA(cudaFree(recv));
  E2E_CUDA(cudaStreamDestroy(comp));
  E2E_CUDA(cudaStreamDestroy(comm_s));
  E2E_CUDA(cudaFreeHost(pinned));
  free(host);
  return wrong ? E2E_DATA_WRONG : 0;
}

int main(int argc, char **argv) {
  const char *a = argc > 1 ? argv[1] : "buggy";
  mode m = {strncmp(a, "fixed", 5) == 0, strstr(a, "-fresh") != NULL};
  return e2e_verdict(NULL, e2e_run_ranks(2, e2e_register_kernels, rank_main, &m));
}
