/* stream_alltoall_8rank.c - a correct program a2acheck must stay silent on.
 *
 * Eight ranks (forked processes around one ncclUniqueId made by the parent)
 * run STEPS grouped all-to-alls (ncclGroupStart; per peer ncclSend +
 * ncclRecv; ncclGroupEnd) with the PyTorch async_op pattern:
 *   compute stream: producer kernel fills the send buffer, event `produced`
 *   communication stream: waits `produced`, all-to-all, event `done`
 *   compute stream: waits `done` (work.wait()), checker kernels verify every
 *   received chunk and count mismatches in a device counter.
 * Events are re-recorded every step and the host never synchronizes inside
 * the loop. The device counter is read once at the end. Buffers are small
 * (16 floats per peer) to keep the run short.
 *
 * Usage: stream_alltoall_8rank [STEPS [nowait]]. `nowait` is the negative
 * control: it drops the compute stream's wait on `done` and slows the
 * communication stream down, so the checkers read receive buffers NCCL has
 * not written yet (wrong data, stream.unsynced-output) - proof that the
 * clean run's silence is not the analyzer being blind.
 */
#include "stream_common.h"

#define N 16
#define STEPS_DEFAULT 1000

static float base_of(int step, int from) { return (float)((step % 1000) * 2048 + from * 256); }

typedef struct opts {
  int steps, nowait;
} opts;

static int rank_main(int rank, int nranks, ncclComm_t comm, void *arg) {
  const opts *o = arg;
  int steps = o->steps;
  cudaStream_t comp = e2e_stream(), comm_s = e2e_stream();
  size_t bytes = (size_t)nranks * N * sizeof(float);
  float *send, *recv;
  int *errors;
  E2E_CUDA(cudaMalloc((void **)&send, bytes));
  E2E_CUDA(cudaMalloc((void **)&recv, bytes));
  E2E_CUDA(cudaMalloc((void **)&errors, sizeof(int)));
  E2E_CUDA(cudaMemset(errors, 0, sizeof(int)));
  E2E_CUDA(cudaDeviceSynchronize());
  cudaEvent_t produced = e2e_event(), done = e2e_event();
  if (o->nowait) E2E_CUDA(a2asim_stream_set_delay(comm_s, 2000));

  for (int step = 0; step < steps; step++) {
    /* send[p*N + i] = base(step, rank) + p*N + i */
    e2e_fill(comp, send, nranks * N, base_of(step, rank));
    e2e_edge(produced, comp, comm_s);
    se_alltoall(send, recv, N, nranks, comm, comm_s);
    E2E_CUDA(cudaEventRecord(done, comm_s));
    if (!o->nowait) E2E_CUDA(cudaStreamWaitEvent(comp, done, 0)); /* work.wait() */
    for (int q = 0; q < nranks; q++)
      e2e_check(comp, recv + (size_t)q * N, N, base_of(step, q) + (float)(rank * N), errors);
  }
  E2E_CUDA(cudaStreamSynchronize(comp));
  int nerr = -1;
  E2E_CUDA(cudaMemcpy(&nerr, errors, sizeof nerr, cudaMemcpyDeviceToHost));
  if (nerr) fprintf(stderr, "rank %d: %d wrong elements\n", rank, nerr);
  E2E_CUDA(cudaEventDestroy(produced));
  E2E_CUDA(cudaEventDestroy(done));
  E2E_CUDA(cudaFree(send));
  E2E_CUDA(cudaFree(recv));
  E2E_CUDA(cudaFree(errors));
  E2E_CUDA(cudaStreamDestroy(comp));
  E2E_CUDA(cudaStreamDestroy(comm_s));
  return nerr ? E2E_DATA_WRONG : 0;
}

int main(int argc, char **argv) {
  opts o = {argc > 1 ? atoi(argv[1]) : STEPS_DEFAULT, argc > 2 && strcmp(argv[2], "nowait") == 0};
  if (o.steps <= 0) o.steps = STEPS_DEFAULT;
  return e2e_verdict(NULL, e2e_run_ranks(8, e2e_register_kernels, rank_main, &o));
}
