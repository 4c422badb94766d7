/* stream_send_reader.c - a kernel reads the send buffer of an all-to-all
 * while it is in flight: correct, and a2acheck must stay silent.
 *
 * The MoE pattern: the compute stream produces the input x, the
 * communication stream waits for it and sends it with ncclAlltoAll
 * (dist.all_to_all_single(..., async_op=True)); while the all-to-all runs,
 * a residual connection reads x on the compute stream (residual = x + 0.5); then work.wait() and the consumers verify both the received
 * chunks and the residual. Two ranks, three steps, the communication stream
 * slowed down so the residual kernel really runs during the operation.
 *
 * Whether a kernel writes what it is passed cannot be known at the CUDA
 * boundary; a kernel on an in-flight SEND buffer is presumed to read it.
 *
 * Usage: stream_send_reader clean | nowait. `nowait` is the negative
 * control: work.wait() is forgotten, the consumers read the receive buffer
 * too early (wrong data, stream.unsynced-output) - proof that the clean
 * run's silence is not the analyzer being blind to these streams.
 */
#include "stream_common.h"

#define N 1024
#define STEPS 3

static float base_of(int step, int from) { return (float)(step * 100000 + from * 10000); }

static int rank_main(int rank, int nranks, ncclComm_t comm, void *arg) {
  int nowait = *(int *)arg;
  cudaStream_t comp = e2e_stream(), comm_s = e2e_stream();
  int total = nranks * N;
  size_t bytes = (size_t)total * sizeof(float);
  float *x, *recv, *residual;
  int *errors;
  E2E_CUDA(cudaMalloc((void **)&x, bytes));
  E2E_CUDA(cudaMalloc((void **)&recv, bytes));
  E2E_CUDA(cudaMalloc((void **)&residual, bytes));
  E2E_CUDA(cudaMalloc((void **)&errors, sizeof(int)));
  E2E_CUDA(cudaMemset(errors, 0, sizeof(int)));
  E2E_CUDA(cudaDeviceSynchronize());
  cudaEvent_t produced = e2e_event(), done = e2e_event();
  E2E_CUDA(a2asim_stream_set_delay(comm_s, 20000)); /* communication is slow */

  for (int step = 0; step < STEPS; step++) {
    /* x[p*N + i] = base(step, rank) + p*N + i: chunk p goes to rank p */
    e2e_fill(comp, x, total, base_of(step, rank));
    e2e_edge(produced, comp, comm_s);
    E2E_NCCL(ncclAlltoAll(x, recv, N, ncclFloat, comm, comm_s));
    E2E_CUDA(cudaEventRecord(done, comm_s));
    /* The residual connection reads x while the all-to-all sends it. */
    e2e_add(comp, residual, x, total, 0.5f);
    if (!nowait) E2E_CUDA(cudaStreamWaitEvent(comp, done, 0)); /* work.wait() */
    for (int q = 0; q < nranks; q++)
      e2e_check(comp, recv + (size_t)q * N, N, base_of(step, q) + (float)(rank * N), errors);
    e2e_check(comp, residual, total, base_of(step, rank) + 0.5f, errors);
    /* The next step's producer rewrites x: ordered after the operation by
     * work.wait() (in `nowait`, it is not - and the race is not reported,
     * see the header). */
  }
  E2E_CUDA(cudaStreamSynchronize(comp));
  E2E_CUDA(cudaStreamSynchronize(comm_s));
  int nerr = -1;
  E2E_CUDA(cudaMemcpy(&nerr, errors, sizeof nerr, cudaMemcpyDeviceToHost));
  if (nerr) fprintf(stderr, "rank %d: %d wrong elements\n", rank, nerr);
  E2E_CUDA(cudaEventDestroy(produced));
  E2E_CUDA(cudaEventDestroy(done));
  E2E_CUDA(cudaFree(x));
  E2E_CUDA(cudaFree(recv));
  E2E_CUDA(cudaFree(residual));
  E2E_CUDA(cudaFree(errors));
  E2E_CUDA(cudaStreamDestroy(comp));
  E2E_CUDA(cudaStreamDestroy(comm_s));
  return nerr ? E2E_DATA_WRONG : 0;
}

int main(int argc, char **argv) {
  int nowait = e2e_arg_is(argc, argv, "nowait");
  return e2e_verdict(NULL, e2e_run_ranks(2, e2e_register_kernels, rank_main, &nowait));
}
