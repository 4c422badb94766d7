/* scenario_hostfunc_graph.c - host functions and CUDA graphs around
 * communication, 2 ranks as forked processes, 8 steps, data verified.
 *
 *   scenario_hostfunc_graph hostfunc  the AllReduce result is copied to
 *                                     pinned host memory on the communication
 *                                     stream, then cudaLaunchHostFunc sets a
 *                                     flag; the host spins on the flag (no
 *                                     CUDA call) and reads the pinned copy
 *   scenario_hostfunc_graph hostfunc_kernel  the same, but once the flag is set
 *                                     the consumer is a kernel on ANOTHER
 *                                     stream, with no event: ordered through
 *                                     the host (the callback ran after the
 *                                     AllReduce, the host saw its flag)
 *   scenario_hostfunc_graph callback_kernel  hostfunc_kernel with the flag set
 *                                     by a cudaStreamAddCallback callback
 *   scenario_hostfunc_graph legacy_kernel  hostfunc_kernel with the host function
 *                                     on the legacy default stream, made to
 *                                     wait for the communication stream by an
 *                                     event
 *   scenario_hostfunc_graph hostfunc_nowait  the bug: the same kernel consumer,
 *                                     but the host does not wait for the flag
 *                                     (rank 1 arrives late, so rank 0's
 *                                     AllReduce still runs when its consumer
 *                                     is enqueued): stream.unsynced-output on
 *                                     rank 0; acc is not checked
 *   scenario_hostfunc_graph graph     the "forward" (fill + axpy kernels) is
 *                                     captured once into a CUDA graph and
 *                                     replayed with cudaGraphLaunch on the
 *                                     compute stream; an event edge to the
 *                                     communication stream, AllReduce,
 *                                     an event edge back, consumer kernel
 *   scenario_hostfunc_graph nccl_graph  NCCL operations captured into graphs
 *                                     (each replay is a new operation): rank 0
 *                                     captures 3 AllReduces into one graph
 *                                     launched once, rank 1 captures one
 *                                     launched 3 times; both capture a grouped
 *                                     send/recv exchange launched twice; then
 *                                     an eager AllReduce of another count,
 *                                     rank 0 4 s late (its peer waits for it)
 *   scenario_hostfunc_graph nccl_graph_bug  the bug: rank 1 launches its
 *                                     graph twice, so its eager AllReduce
 *                                     meets rank 0's third replay
 *                                     (size.collective-mismatch, a hang)
 *   scenario_hostfunc_graph nccl_graph_late_destroy  the bug: rank 0
 *                                     destroys its communicator while a graph
 *                                     holding one of its AllReduces (and the
 *                                     graph's exec) is alive; NCCL waits in
 *                                     ncclCommDestroy for the graphs, which a
 *                                     second thread destroys 2 s later
 *                                     (without it the call never returns):
 *                                     group.use-after-destroy on rank 0 only
 *                                     (rank 1 destroys its graph first)
 * Correct: exit 0, no finding.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "scenario_common.h"

#define NR 2
#define N 4096L

static const char *mode;

static void CUDART_CB set_flag(void *p) { atomic_store((atomic_int *)p, 1); }
static void CUDART_CB set_flag_cb(cudaStream_t s, cudaError_t st, void *p) {
  (void)s;
  if (st == cudaSuccess) atomic_store((atomic_int *)p, 1);
}

static int run_hostfunc(int rank, ncclComm_t comm) {
  cudaStream_t cs, other;
  SC_CUDA(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
  SC_CUDA(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  int nowait = strcmp(mode, "hostfunc_nowait") == 0;
  int callback = strcmp(mode, "callback_kernel") == 0;
  int legacy = strcmp(mode, "legacy_kernel") == 0;
  int kernel_consumer = nowait || callback || legacy || strcmp(mode, "hostfunc_kernel") == 0;
  float *acc;
  SC_CUDA(cudaMalloc((void **)&acc, N * sizeof(float)));
  SC_CUDA(cudaMemsetAsync(acc, 0, N * sizeof(float), other));
  float *d, *pinned;
  SC_CUDA(cudaMalloc((void **)&d, N * sizeof(float)));
  SC_CUDA(cudaMallocHost((void **)&pinned, N * sizeof(float)));
  static atomic_int flag;
  long bad = 0;
  for (int t = 0; t < 8; t++) {
    atomic_store(&flag, 0);
    if (nowait && rank == 1 && t == 0) usleep(300 * 1000); /* rank 0 waits in its AllReduce */
    sc_fill(d, N, (float)(rank + t), 1.0f, cs);
    SC_NCCL(ncclAllReduce(d, d, N, ncclFloat32, ncclSum, comm, cs));
    SC_CUDA(cudaMemcpyAsync(pinned, d, N * sizeof(float), cudaMemcpyDeviceToHost, cs));
    if (callback) {
      SC_CUDA(cudaStreamAddCallback(cs, set_flag_cb, &flag, 0));
    } else if (legacy) {
      cudaEvent_t done;
      SC_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
      SC_CUDA(cudaEventRecord(done, cs));
      SC_CUDA(cudaStreamWaitEvent(NULL, done, 0));
      SC_CUDA(cudaEventDestroy(done));
      SC_CUDA(cudaLaunchHostFunc(NULL, set_flag, &flag));
    } else {
      SC_CUDA(cudaLaunchHostFunc(cs, set_flag, &flag));
    }
    if (!nowait) while (!atomic_load(&flag)) sched_yield();
    if (kernel_consumer) {
      sc_axpy(acc, d, N, 1.0f, other); /* ordered by the host having seen the flag */
      if (nowait) while (!atomic_load(&flag)) sched_yield(); /* (the bug: only now) */
      /* the next step's fill on cs rewrites d: order it after the consumer */
      cudaEvent_t used;
      SC_CUDA(cudaEventCreateWithFlags(&used, cudaEventDisableTiming));
      SC_CUDA(cudaEventRecord(used, other));
      SC_CUDA(cudaStreamWaitEvent(cs, used, 0));
      SC_CUDA(cudaEventDestroy(used));
    }
    for (long i = 0; i < N; i++) {
      float want = (float)(1 + 2 * t) + 2.0f * (float)i; /* (0+t+i) + (1+t+i) */
      if (pinned[i] != want && bad++ < 3) fprintf(stderr, "rank %d: [%ld]=%g want %g\n", rank, i, pinned[i], want);
    }
  }
  SC_CUDA(cudaStreamSynchronize(cs));
  SC_CUDA(cudaStreamSynchronize(other));
  if (kernel_consumer && !nowait) {
    float *h = malloc(N * sizeof(float));
    SC_CUDA(cudaMemcpy(h, acc, N * sizeof(float), cudaMemcpyDeviceToHost));
    for (long i = 0; i < N; i++) {
      float want = 0;
      for (int t = 0; t < 8; t++) want += (float)(1 + 2 * t) + 2.0f * (float)i;
      if (h[i] != want && bad++ < 3) fprintf(stderr, "rank %d: acc[%ld]=%g want %g\n", rank, i, h[i], want);
    }
    free(h);
  }
  SC_CUDA(cudaFree(acc));
  SC_CUDA(cudaFree(d));
  SC_CUDA(cudaFreeHost(pinned));
  SC_CUDA(cudaStreamDestroy(cs));
  SC_CUDA(cudaStreamDestroy(other));
  return (int)bad;
}

static int run_graph(int rank, ncclComm_t comm) {
  cudaStream_t comp, cs;
  SC_CUDA(cudaStreamCreateWithFlags(&comp, cudaStreamNonBlocking));
  SC_CUDA(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
  float *x, *y, *acc;
  SC_CUDA(cudaMalloc((void **)&x, N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&y, N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&acc, N * sizeof(float)));
  SC_CUDA(cudaMemsetAsync(acc, 0, N * sizeof(float), comp));
  /* capture the forward once: x = rank+1 (all elements); y = 0; y += 3x */
  cudaStream_t cap;
  SC_CUDA(cudaStreamCreateWithFlags(&cap, cudaStreamNonBlocking));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  SC_CUDA(cudaStreamBeginCapture(cap, cudaStreamCaptureModeThreadLocal));
  sc_fill(x, N, (float)(rank + 1), 0.0f, cap);
  sc_fill(y, N, 0.0f, 0.0f, cap);
  sc_axpy(y, x, N, 3.0f, cap);
  SC_CUDA(cudaStreamEndCapture(cap, &g));
  SC_CUDA(cudaGraphInstantiate(&ge, g, 0));
  cudaEvent_t fwd, comm_done;
  SC_CUDA(cudaEventCreateWithFlags(&fwd, cudaEventDisableTiming));
  SC_CUDA(cudaEventCreateWithFlags(&comm_done, cudaEventDisableTiming));
  for (int t = 0; t < 8; t++) {
    SC_CUDA(cudaGraphLaunch(ge, comp));
    SC_CUDA(cudaEventRecord(fwd, comp));
    SC_CUDA(cudaStreamWaitEvent(cs, fwd, 0));
    SC_NCCL(ncclAllReduce(y, y, N, ncclFloat32, ncclSum, comm, cs));
    SC_CUDA(cudaEventRecord(comm_done, cs));
    SC_CUDA(cudaStreamWaitEvent(comp, comm_done, 0));
    sc_axpy(acc, y, N, 1.0f, comp);
  }
  SC_CUDA(cudaStreamSynchronize(comp));
  float *h = malloc(N * sizeof(float));
  SC_CUDA(cudaMemcpy(h, acc, N * sizeof(float), cudaMemcpyDeviceToHost));
  long bad = 0;
  for (long i = 0; i < N; i++)
    if (h[i] != 8.0f * 3.0f * 3.0f && bad++ < 3) fprintf(stderr, "rank %d: acc[%ld]=%g\n", rank, i, h[i]); /* 8 * 3*(1+2) */
  free(h);
  SC_CUDA(cudaGraphExecDestroy(ge));
  SC_CUDA(cudaGraphDestroy(g));
  SC_CUDA(cudaEventDestroy(fwd));
  SC_CUDA(cudaEventDestroy(comm_done));
  SC_CUDA(cudaFree(x));
  SC_CUDA(cudaFree(y));
  SC_CUDA(cudaFree(acc));
  SC_CUDA(cudaStreamDestroy(comp));
  SC_CUDA(cudaStreamDestroy(cs));
  SC_CUDA(cudaStreamDestroy(cap));
  return (int)bad;
}

static int run_nccl_graph(int rank, ncclComm_t comm, int bug) {
  cudaStream_t s;
  SC_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float *a, *b;
  SC_CUDA(cudaMalloc((void **)&a, N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&b, N * sizeof(float)));
  sc_fill(a, N, 1.0f, 0.0f, s);
  const int peer = 1 - rank;
  const int ncap = rank == 0 ? 3 : 1, nlaunch = rank == 0 ? 1 : bug ? 2 : 3;
  cudaGraph_t g, g2;
  cudaGraphExec_t x, x2;
  SC_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int k = 0; k < ncap; k++) SC_NCCL(ncclAllReduce(a, b, N, ncclFloat32, ncclSum, comm, s));
  SC_CUDA(cudaStreamEndCapture(s, &g));
  SC_CUDA(cudaGraphInstantiate(&x, g, 0));
  for (int k = 0; k < nlaunch; k++) SC_CUDA(cudaGraphLaunch(x, s));
  SC_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  SC_NCCL(ncclGroupStart());
  SC_NCCL(ncclSend(a, N / 2, ncclFloat32, peer, comm, s));
  SC_NCCL(ncclRecv(b + N / 2, N / 2, ncclFloat32, peer, comm, s));
  SC_NCCL(ncclGroupEnd());
  SC_CUDA(cudaStreamEndCapture(s, &g2));
  SC_CUDA(cudaGraphInstantiateWithFlags(&x2, g2, 0));
  for (int k = 0; k < 2; k++) SC_CUDA(cudaGraphLaunch(x2, s));
  if (rank == 0 && !bug) {
    SC_CUDA(cudaStreamSynchronize(s));
    usleep(4000000); /* longer than A2ACHECK_HANG_CONFIRM: rank 1 waits for it */
  }
  SC_NCCL(ncclAllReduce(a, b, N / 2, ncclFloat32, ncclSum, comm, s));
  SC_CUDA(cudaStreamSynchronize(s));
  float *h = malloc(N * sizeof(float));
  SC_CUDA(cudaMemcpy(h, b, N * sizeof(float), cudaMemcpyDeviceToHost));
  long bad = 0;
  for (long i = 0; i < N; i++) /* AllReduce of ones over 2 ranks, then the peer's ones */
    if (h[i] != (i < N / 2 ? 2.0f : 1.0f) && bad++ < 3)
      fprintf(stderr, "rank %d: b[%ld]=%g\n", rank, i, h[i]);
  free(h);
  SC_CUDA(cudaGraphExecDestroy(x));
  SC_CUDA(cudaGraphExecDestroy(x2));
  SC_CUDA(cudaGraphDestroy(g));
  SC_CUDA(cudaGraphDestroy(g2));
  SC_CUDA(cudaFree(a));
  SC_CUDA(cudaFree(b));
  SC_CUDA(cudaStreamDestroy(s));
  return (int)bad;
}

typedef struct late_graph { cudaGraph_t g; cudaGraphExec_t x; } late_graph;
static void *destroy_late(void *p) {
  late_graph *lg = p;
  usleep(2000000);
  if (cudaGraphExecDestroy(lg->x) != cudaSuccess || cudaGraphDestroy(lg->g) != cudaSuccess)
    fprintf(stderr, "graph destroy failed\n");
  return NULL;
}

/* Ends its communicator itself (rank 0 with its graph alive). */
static int run_nccl_graph_late_destroy(int rank, ncclComm_t comm) {
  cudaStream_t s;
  SC_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float *a, *b;
  SC_CUDA(cudaMalloc((void **)&a, N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&b, N * sizeof(float)));
  sc_fill(a, N, 1.0f, 0.0f, s);
  late_graph lg;
  SC_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  SC_NCCL(ncclAllReduce(a, b, N, ncclFloat32, ncclSum, comm, s));
  SC_CUDA(cudaStreamEndCapture(s, &lg.g));
  SC_CUDA(cudaGraphInstantiate(&lg.x, lg.g, 0));
  for (int k = 0; k < 2; k++) SC_CUDA(cudaGraphLaunch(lg.x, s));
  SC_CUDA(cudaStreamSynchronize(s));
  float *h = malloc(N * sizeof(float));
  SC_CUDA(cudaMemcpy(h, b, N * sizeof(float), cudaMemcpyDeviceToHost));
  long bad = 0;
  for (long i = 0; i < N; i++)
    if (h[i] != 2.0f && bad++ < 3) fprintf(stderr, "rank %d: b[%ld]=%g\n", rank, i, h[i]);
  free(h);
  pthread_t th;
  if (rank == 0) {
    if (pthread_create(&th, NULL, destroy_late, &lg) != 0) return 1;
  } else {
    SC_CUDA(cudaGraphExecDestroy(lg.x));
    SC_CUDA(cudaGraphDestroy(lg.g));
  }
  SC_NCCL(ncclCommDestroy(comm)); /* rank 0: returns once destroy_late ran */
  if (rank == 0) pthread_join(th, NULL);
  SC_CUDA(cudaFree(a));
  SC_CUDA(cudaFree(b));
  SC_CUDA(cudaStreamDestroy(s));
  return (int)bad;
}

static int rank_main(int rank, int nranks, ncclUniqueId id, void *arg) {
  (void)arg;
  ncclComm_t comm;
  SC_NCCL(ncclCommInitRank(&comm, nranks, id, rank));
  if (strcmp(mode, "nccl_graph_late_destroy") == 0) {
    int bad = run_nccl_graph_late_destroy(rank, comm);
    sc_sh->result[rank] = bad;
    return bad ? SC_DATA_WRONG : 0;
  }
  int bad = strcmp(mode, "graph") == 0            ? run_graph(rank, comm)
            : strcmp(mode, "nccl_graph") == 0     ? run_nccl_graph(rank, comm, 0)
            : strcmp(mode, "nccl_graph_bug") == 0 ? run_nccl_graph(rank, comm, 1)
                                                  : run_hostfunc(rank, comm);
  sc_sh->result[rank] = bad;
  SC_NCCL(ncclCommDestroy(comm));
  return bad ? SC_DATA_WRONG : 0;
}

int main(int argc, char **argv) {
  mode = argc > 1 ? argv[1] : "hostfunc";
  return sc_fork_ranks(NR, rank_main, NULL);
}
