/* stream_free_in_flight.c - stream.free-in-flight end to end (the
 * record_stream bug).
 *
 * Two ranks. Each step a producer fills the send buffer on the compute
 * stream, the communication stream waits for it and runs an all-to-all.
 * Then the application drops the send tensor and the caching allocator
 * hands the same block to a new tensor on the compute stream, which is
 * cleared at once (torch.zeros: cudaMemsetAsync). (A kernel overwriting it would not be reported: a
 * kernel on an in-flight send buffer is presumed to read it, see
 * docs/checks.md, stream.free-in-flight.) The buggy version does not wait for the
 * operation (no record_stream): the communication stream is slowed down, so
 * NCCL sends the overwritten block and the peers receive garbage. `fixed`
 * does what the allocator does for a block recorded on another stream: it
 * records an event on the communication stream and polls cudaEventQuery
 * until it completes before reusing the block.
 */
#include <sched.h>

#include "stream_common.h"

#define N 1024
#define STEPS 3

static int rank_main(int rank, int nranks, ncclComm_t comm, void *arg) {
  int fixed = *(int *)arg;
  cudaStream_t comp = e2e_stream(), comm_s = e2e_stream();
  size_t bytes = (size_t)nranks * N * sizeof(float);
  float *block, *recv, *host = malloc(bytes);
  E2E_CUDA(cudaMalloc((void **)&block, bytes)); /* the allocator's block */
  E2E_CUDA(cudaMalloc((void **)&recv, bytes));
  E2E_CUDA(cudaDeviceSynchronize());
  cudaEvent_t produced = e2e_event(), done = e2e_event();
  E2E_CUDA(a2asim_stream_set_delay(comm_s, 30000)); /* communication is slow */

  int wrong = 0;
  for (int step = 1; step <= STEPS; step++) {
    float *send = block; /* tensor A */
    se_fill_chunks(comp, send, N, nranks, step, rank);
    e2e_edge(produced, comp, comm_s);
    se_alltoall(send, recv, N, nranks, comm, comm_s);
    /* Tensor A is dropped; tensor B gets the same block on the compute
     * stream. */
    if (fixed) {
      E2E_CUDA(cudaEventRecord(done, comm_s));
      cudaError_t q;
      while ((q = cudaEventQuery(done)) == cudaErrorNotReady) sched_yield();
      E2E_CUDA(q);
    }
    float *tensor_b = block;
    E2E_CUDA(cudaMemsetAsync(tensor_b, 0, bytes, comp));
    E2E_CUDA(cudaStreamSynchronize(comm_s));
    E2E_CUDA(cudaStreamSynchronize(comp));
    E2E_CUDA(cudaMemcpy(host, recv, bytes, cudaMemcpyDeviceToHost));
    wrong += se_wrong_chunks(host, N, nranks, step, rank);
  }
  if (wrong) fprintf(stderr, "rank %d: %d wrong chunks\n", rank, wrong);
  E2E_CUDA(cudaEventDestroy(produced));
  E2E_CUDA(cudaEventDestroy(done));
  E2E_CUDA(cudaFree(block));
  E2E_CUDA(cudaFree(recv));
  E2E_CUDA(cudaStreamDestroy(comp));
  E2E_CUDA(cudaStreamDestroy(comm_s));
  free(host);
  return wrong ? E2E_DATA_WRONG : 0;
}

int main(int argc, char **argv) {
  int fixed = e2e_fixed(argc, argv);
  return e2e_verdict(NULL, e2e_run_ranks(2, e2e_register_kernels, rank_main, &fixed));
}
