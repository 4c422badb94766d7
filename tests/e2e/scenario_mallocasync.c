/* scenario_mallocasync.c - stream-ordered allocation (cudaMallocAsync /
 * cudaFreeAsync, what PyTorch's cudaMallocAsync backend does) around
 * communication on a side stream, 2 ranks as forked processes, 10 steps:
 *   buffers allocated on the current stream, produced there, an event edge
 *   to the communication stream, AllReduce + grouped send/recv there, an end
 *   event waited by the current stream, consumer kernel, then the buffers
 *   are freed with cudaFreeAsync on the current stream (ordered after the
 *   communication by the end event: record_stream's job).
 *
 *   scenario_mallocasync ok          correct
 *   scenario_mallocasync comm_alloc  correct: the receive buffer is allocated
 *                                    and freed on the communication stream
 *   scenario_mallocasync free_early  BUGGY: the receive buffer is freed with
 *                                    cudaFreeAsync on the current stream
 *                                    before the current stream waits for
 *                                    the end event (the record_stream bug)
 *                                    -> stream.free-in-flight
 */
#include "scenario_common.h"

#define NR 2
#define N 8192L

static const char *mode;

static int rank_main(int rank, int nranks, ncclUniqueId id, void *arg) {
  (void)arg;
  ncclComm_t comm;
  SC_NCCL(ncclCommInitRank(&comm, nranks, id, rank));
  cudaStream_t cur, cs;
  SC_CUDA(cudaStreamCreateWithFlags(&cur, cudaStreamNonBlocking));
  SC_CUDA(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
  SC_CUDA((cudaError_t)a2asim_stream_set_delay(cs, 2000));
  cudaEvent_t start, end;
  SC_CUDA(cudaEventCreateWithFlags(&start, cudaEventDisableTiming));
  SC_CUDA(cudaEventCreateWithFlags(&end, cudaEventDisableTiming));
  float *acc;
  SC_CUDA(cudaMalloc((void **)&acc, N * sizeof(float)));
  SC_CUDA(cudaMemsetAsync(acc, 0, N * sizeof(float), cur));
  int peer = 1 - rank;
  const int steps = 10;
  for (int t = 0; t < steps; t++) {
    float *in, *red, *p2p;
    SC_CUDA(cudaMallocAsync((void **)&in, N * sizeof(float), cur));
    SC_CUDA(cudaMallocAsync((void **)&p2p, N * sizeof(float), cur));
    sc_fill(in, N, (float)(rank + t), 0.0f, cur);
    SC_CUDA(cudaEventRecord(start, cur));
    SC_CUDA(cudaStreamWaitEvent(cs, start, 0));
    if (strcmp(mode, "comm_alloc") == 0)
      SC_CUDA(cudaMallocAsync((void **)&red, N * sizeof(float), cs));
    else
      SC_CUDA(cudaMallocAsync((void **)&red, N * sizeof(float), cur));
    SC_NCCL(ncclAllReduce(in, red, N, ncclFloat32, ncclSum, comm, cs));
    SC_NCCL(ncclGroupStart());
    SC_NCCL(ncclSend(in, N, ncclFloat32, peer, comm, cs));
    SC_NCCL(ncclRecv(p2p, N, ncclFloat32, peer, comm, cs));
    SC_NCCL(ncclGroupEnd());
    SC_CUDA(cudaEventRecord(end, cs));
    if (strcmp(mode, "free_early") == 0) {
      SC_CUDA(cudaFreeAsync(p2p, cur)); /* the bug: the recv may still be running */
      SC_CUDA(cudaStreamWaitEvent(cur, end, 0));
      sc_axpy(acc, red, N, 1.0f, cur);
      sc_axpy(acc, in, N, 1.0f, cur);
    } else {
      SC_CUDA(cudaStreamWaitEvent(cur, end, 0));
      sc_axpy(acc, red, N, 1.0f, cur);
      sc_axpy(acc, p2p, N, 1.0f, cur);
      SC_CUDA(cudaFreeAsync(p2p, cur));
    }
    SC_CUDA(cudaFreeAsync(in, cur));
    if (strcmp(mode, "comm_alloc") == 0) {
      /* the consumer on cur must be done before cs frees red */
      cudaEvent_t used;
      SC_CUDA(cudaEventCreateWithFlags(&used, cudaEventDisableTiming));
      SC_CUDA(cudaEventRecord(used, cur));
      SC_CUDA(cudaStreamWaitEvent(cs, used, 0));
      SC_CUDA(cudaFreeAsync(red, cs));
      SC_CUDA(cudaEventDestroy(used));
    } else {
      SC_CUDA(cudaFreeAsync(red, cur));
    }
  }
  SC_CUDA(cudaStreamSynchronize(cur));
  SC_CUDA(cudaStreamSynchronize(cs));
  float *h = malloc(N * sizeof(float));
  SC_CUDA(cudaMemcpy(h, acc, N * sizeof(float), cudaMemcpyDeviceToHost));
  double want = 0;
  for (int t = 0; t < steps; t++) {
    want += (0 + t) + (1 + t);                          /* AllReduce */
    want += strcmp(mode, "free_early") == 0 ? rank + t : peer + t; /* p2p (or own input) */
  }
  long bad = 0;
  for (long i = 0; i < N; i++)
    if (h[i] != (float)want && bad++ < 3) fprintf(stderr, "rank %d: acc[%ld]=%g want %g\n", rank, i, h[i], want);
  sc_sh->result[rank] = bad;
  free(h);
  SC_CUDA(cudaFree(acc));
  SC_CUDA(cudaEventDestroy(start));
  SC_CUDA(cudaEventDestroy(end));
  SC_CUDA(cudaStreamDestroy(cur));
  SC_CUDA(cudaStreamDestroy(cs));
  SC_NCCL(ncclCommDestroy(comm));
  return bad ? SC_DATA_WRONG : 0;
}

int main(int argc, char **argv) {
  mode = argc > 1 ? argv[1] : "ok";
  return sc_fork_ranks(NR, rank_main, NULL);
}
