/* stream_unsynced_output.c - stream.unsynced-output end to end (the
 * forgotten work.wait()).
 *
 * Two ranks. Each step an all-to-all runs on a communication stream (its
 * input correctly ordered after the producer by an event), then a consumer
 * kernel on the compute stream copies the receive buffer. The buggy version
 * does not make the compute stream wait for the operation's end event; the
 * communication stream is slowed down so the consumer copies the receive
 * buffer before NCCL wrote it. `fixed` adds cudaStreamWaitEvent(compute,
 * done) - what work.wait() does.
 *
 * `buggy-host` / `fixed-host`: the consumer is the host instead, through a
 * synchronous cudaMemcpy of the receive buffer. That copy runs on the legacy
 * default stream, which does not wait for a non-blocking stream, so it reads
 * the buffer before NCCL wrote it; the fixed version synchronizes the host
 * with the operation's end event first.
 *
 * `buggy-post` / `fixed-post`: as buggy / fixed, with a post-processing
 * kernel on the communication stream right after the operation that reads
 * the receive buffer (QA: it hid the forgotten wait - the kernel stood in
 * for the operation in the buffer's history).
 *
 * `fixed-pageable`: the host copies the receive buffer on the communication
 * stream with cudaMemcpyAsync into pageable (malloc) memory, which returns
 * only once the copy is done, then the consumer kernel runs on the compute
 * stream without an event: ordered through the host (QA: was reported).
 * `buggy-registered`: the same into cudaHostRegister'ed memory, where the
 * copy is asynchronous: the consumer races.
 */
#include "stream_common.h"

#define N 1024
#define STEPS 3

typedef struct mode {
  int fixed, host, post, pageable, registered;
} mode;

static int rank_main(int rank, int nranks, ncclComm_t comm, void *arg) {
  const mode *m = arg;
  int fixed = m->fixed;
  cudaStream_t comp = e2e_stream(), comm_s = e2e_stream();
  size_t bytes = (size_t)nranks * N * sizeof(float);
  float *send, *recv, *out, *scratch, *host = malloc(bytes);
  if (m->registered) E2E_CUDA(cudaHostRegister(host, bytes, cudaHostRegisterDefault));
  E2E_CUDA(cudaMalloc((void **)&scratch, bytes));
  E2E_CUDA(cudaMalloc((void **)&send, bytes));
  E2E_CUDA(cudaMalloc((void **)&recv, bytes));
  E2E_CUDA(cudaMalloc((void **)&out, bytes));
  E2E_CUDA(cudaMemset(recv, 0, bytes));
  E2E_CUDA(cudaDeviceSynchronize());
  cudaEvent_t produced = e2e_event(), done = e2e_event();
  E2E_CUDA(a2asim_stream_set_delay(comm_s, 30000)); /* communication is slow */

  int wrong = 0;
  for (int step = 1; step <= STEPS; step++) {
    se_fill_chunks(comp, send, N, nranks, step, rank);
    e2e_edge(produced, comp, comm_s);
    se_alltoall(send, recv, N, nranks, comm, comm_s);
    E2E_CUDA(cudaEventRecord(done, comm_s));
    if (m->pageable || m->registered) {
      E2E_CUDA(cudaMemcpyAsync(host, recv, bytes, cudaMemcpyDeviceToHost, comm_s));
      e2e_copy(comp, out, recv, nranks * N); /* the consumer: no event */
      E2E_CUDA(cudaStreamSynchronize(comp));
      E2E_CUDA(cudaStreamSynchronize(comm_s));
      E2E_CUDA(cudaMemcpy(host, out, bytes, cudaMemcpyDeviceToHost));
    } else if (m->host) {
      if (fixed) E2E_CUDA(cudaEventSynchronize(done));
      E2E_CUDA(cudaMemcpy(host, recv, bytes, cudaMemcpyDeviceToHost)); /* the consumer */
      E2E_CUDA(cudaStreamSynchronize(comm_s));
    } else {
      if (m->post) {
        e2e_copy(comm_s, scratch, recv, nranks * N); /* post-processing, in order */
        E2E_CUDA(cudaEventRecord(done, comm_s));
      }
      if (fixed) E2E_CUDA(cudaStreamWaitEvent(comp, done, 0)); /* work.wait() */
      e2e_copy(comp, out, recv, nranks * N);                     /* the consumer */
      E2E_CUDA(cudaStreamSynchronize(comp));
      E2E_CUDA(cudaStreamSynchronize(comm_s));
      E2E_CUDA(cudaMemcpy(host, out, bytes, cudaMemcpyDeviceToHost));
    }
    wrong += se_wrong_chunks(host, N, nranks, step, rank);
  }
  if (wrong) fprintf(stderr, "rank %d: %d wrong chunks\n", rank, wrong);
  E2E_CUDA(cudaEventDestroy(produced));
  E2E_CUDA(cudaEventDestroy(done));
  E2E_CUDA(cudaFree(send));
  E2E_CUDA(cudaFree(recv));
  E2E_CUDA(cudaFree(out));
  E2E_CUDA(cudaFree(scratch));
  if (m->registered) E2E_CUDA(cudaHostUnregister(host));
  E2E_CUDA(cudaStreamDestroy(comp));
  E2E_CUDA(cudaStreamDestroy(comm_s));
  free(host);
  return wrong ? E2E_DATA_WRONG : 0;
}

int main(int argc, char **argv) {
  const char *a = argc > 1 ? argv[1] : "buggy";
  mode m = {strncmp(a, "fixed", 5) == 0, strstr(a, "host") != NULL, strstr(a, "post") != NULL,
            strstr(a, "pageable") != NULL, strstr(a, "registered") != NULL};
  return e2e_verdict(NULL, e2e_run_ranks(2, e2e_register_kernels, rank_main, &m));
}
