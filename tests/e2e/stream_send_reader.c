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
  cudaStream_t comp, comm_s;
  SE_CUDA(cudaStreamCreateWithFlags(&comp, cudaStreamNonBlocking));
  SE_CUDA(cudaStreamCreateWithFlags(&comm_s, cudaStreamNonBlocking));
  int total = nranks * N;
  size_t bytes = (size_t)total * sizeof(float);
  float *x, *recv, *residual;
  int *errors;
  SE_CUDA(cudaMalloc((void **)&x, bytes));
  SE_CUDA(cudaMalloc((void **)&recv, bytes));
  SE_CUDA(cudaMalloc((void **)&residual, bytes));
  SE_CUDA(cudaMalloc((void **)&errors, sizeof(int)));
  SE_CUDA(cudaMemset(errors, 0, sizeof(int)));
  SE_CUDA(cudaDeviceSynchronize());
  cudaEvent_t produced, done;
  SE_CUDA(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming));
  SE_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  SE_CUDA(a2asim_stream_set_delay(comm_s, 20000)); /* communication is slow */

  for (int step = 0; step < STEPS; step++) {
    /* x[p*N + i] = base(step, rank) + p*N + i: chunk p goes to rank p */
    se_fill(comp, x, total, base_of(step, rank));
    SE_CUDA(cudaEventRecord(produced, comp));
    SE_CUDA(cudaStreamWaitEvent(comm_s, produced, 0));
    SE_NCCL(ncclAlltoAll(x, recv, N, ncclFloat, comm, comm_s));
    SE_CUDA(cudaEventRecord(done, comm_s));
    /* The residual connection reads x while the all-to-all sends it. */
    se_add(comp, residual, x, total, 0.5f);
    if (!nowait) SE_CUDA(cudaStreamWaitEvent(comp, done, 0)); /* work.wait() */
    for (int q = 0; q < nranks; q++)
      se_check(comp, recv + (size_t)q * N, N, base_of(step, q) + (float)(rank * N), errors);
    se_check(comp, residual, total, base_of(step, rank) + 0.5f, errors);
    /* The next step's producer rewrites x: ordered after the operation by
     * work.wait() (in `nowait`, it is not - and the race is not reported,
     * see the header). */
  }
  SE_CUDA(cudaStreamSynchronize(comp));
  SE_CUDA(cudaStreamSynchronize(comm_s));
  int nerr = -1;
  SE_CUDA(cudaMemcpy(&nerr, errors, sizeof nerr, cudaMemcpyDeviceToHost));
  if (nerr) fprintf(stderr, "rank %d: %d wrong elements\n", rank, nerr);
  SE_CUDA(cudaEventDestroy(produced));
  SE_CUDA(cudaEventDestroy(done));
  SE_CUDA(cudaFree(x));
  SE_CUDA(cudaFree(recv));
  SE_CUDA(cudaFree(residual));
  SE_CUDA(cudaFree(errors));
  SE_CUDA(cudaStreamDestroy(comp));
  SE_CUDA(cudaStreamDestroy(comm_s));
  return nerr ? SE_DATA_WRONG : 0;
}

int main(int argc, char **argv) {
  int nowait = argc > 1 && strcmp(argv[1], "nowait") == 0;
  return se_verdict(se_run_ranks(2, rank_main, &nowait));
}
