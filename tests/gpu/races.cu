/* races.cu - real-kernel stream races around NCCL on a real GPU
 * (tests/gpu/run.sh steps "race-*"), one single-rank communicator:
 *
 *   races unsynced-input  [fixed]  a kernel fills the send buffer on the
 *                                  compute stream; the AlltoAll runs on the
 *                                  communication stream with no event edge
 *                                  -> stream.unsynced-input
 *   races unsynced-output [fixed]  a kernel (pointers inside a by-value
 *                                  struct) reads the receive buffer on the
 *                                  compute stream before the AlltoAll is
 *                                  known to be done -> stream.unsynced-output
 *   races free-in-flight  [fixed]  the send buffer (cudaMallocAsync) is
 *                                  freed with cudaFreeAsync on the compute
 *                                  stream while the AlltoAll may still read
 *                                  it -> stream.free-in-flight
 *   races hostfn-output   [fixed]  after the AlltoAll, cudaLaunchHostFunc on
 *                                  the communication stream sets a flag; the
 *                                  consumer kernel on the compute stream is
 *                                  launched without waiting for the flag
 *                                  -> stream.unsynced-output
 *   races callback-output [fixed]  the same with cudaStreamAddCallback
 *   races hostfn-graph             host functions the driver runs on its own
 *                                  thread: 2,000 enqueued behind a busy
 *                                  stream (more than the shim's 1,024
 *                                  trampoline slots), and one captured into a
 *                                  graph launched 4 times; each must run
 *                                  exactly once per enqueue or launch (3 if
 *                                  not) -> no finding
 *
 * "fixed" adds the event edge (cudaEventRecord on the producer,
 * cudaStreamWaitEvent on the consumer) - for the host-function modes, the
 * host waits for the flag before it launches the consumer (ordered through
 * the host, no CUDA call) - and must yield no finding. The
 * communication stream is kept busy by a spinning kernel first so that a
 * buggy consumer really overtakes it. Prints one JSON line; exit 0 unless a
 * fixed variant computed wrong data (3) or a call failed (1). Whether the
 * buggy variants corrupted data on this run is reported, not asserted: the
 * check under test is a2acheck's finding. */
#include <atomic>
#include <string.h>

#include "gpu_common.h"

static void CUDART_CB set_flag(void *p) { ((std::atomic<int> *)p)->store(1); }
static void CUDART_CB set_flag_cb(cudaStream_t, cudaError_t st, void *p) {
  if (st == cudaSuccess) ((std::atomic<int> *)p)->store(1);
}
static void CUDART_CB count_up(void *p) { ((std::atomic<int> *)p)->fetch_add(1); }

/* One round of the pattern; returns the number of wrong elements. */
static unsigned long long one_round(const char *mode, int fixed, ncclComm_t comm, cudaStream_t comp,
                                    cudaStream_t comm_s, cudaEvent_t ev, float *send, float *recv,
                                    float *out, unsigned long long *errors, size_t n) {
  /* free-in-flight frees its send buffer: a fresh stream-ordered one per
   * round; the others reuse the caller's. */
  if (!send) G_CUDA(cudaMallocAsync((void **)&send, n * sizeof(float), comm_s));
  *errors = 0;
  g_fill<<<128, 256, 0, comm_s>>>(send, n, 1.0f);
  g_fill<<<128, 256, 0, comm_s>>>(recv, n, -1.0f);
  G_CUDA(cudaStreamSynchronize(comm_s));

  long long spin = 200LL * 1000 * 1000; /* ~0.1 s at 2 GHz */
  if (strcmp(mode, "unsynced-input") == 0) {
    g_spin<<<1, 1, 0, comp>>>(spin);
    g_fill<<<128, 256, 0, comp>>>(send, n, 9.0f); /* producer */
    if (fixed) {
      G_CUDA(cudaEventRecord(ev, comp));
      G_CUDA(cudaStreamWaitEvent(comm_s, ev, 0));
    }
    g_alltoall(send, recv, n, comm, comm_s);
    g_check<<<128, 256, 0, comm_s>>>(recv, n, 9.0f, errors);
  } else if (strcmp(mode, "unsynced-output") == 0) {
    g_spin<<<1, 1, 0, comm_s>>>(spin);
    g_alltoall(send, recv, n, comm, comm_s);
    if (fixed) {
      G_CUDA(cudaEventRecord(ev, comm_s));
      G_CUDA(cudaStreamWaitEvent(comp, ev, 0));
    }
    g_iter_args a = {(int)n, 0, recv, out};
    g_scale_struct<<<128, 256, 0, comp>>>(a); /* consumer; checked on the host below */
  } else if (strcmp(mode, "hostfn-output") == 0 || strcmp(mode, "callback-output") == 0) {
    static std::atomic<int> flag;
    flag.store(0);
    g_spin<<<1, 1, 0, comm_s>>>(spin);
    g_alltoall(send, recv, n, comm, comm_s);
    if (mode[0] == 'h')
      G_CUDA(cudaLaunchHostFunc(comm_s, set_flag, &flag));
    else
      G_CUDA(cudaStreamAddCallback(comm_s, set_flag_cb, &flag, 0));
    if (fixed)
      while (!flag.load()) {
      }
    g_iter_args a = {(int)n, 0, recv, out};
    g_scale_struct<<<128, 256, 0, comp>>>(a);
  } else {
    g_spin<<<1, 1, 0, comm_s>>>(spin);
    g_alltoall(send, recv, n, comm, comm_s);
    if (fixed) {
      G_CUDA(cudaEventRecord(ev, comm_s));
      G_CUDA(cudaStreamWaitEvent(comp, ev, 0));
    }
    G_CUDA(cudaFreeAsync(send, comp));
    send = NULL;
    g_check<<<128, 256, 0, comm_s>>>(recv, n, 1.0f, errors);
  }
  G_CUDA(cudaDeviceSynchronize());
  unsigned long long wrong = *errors;
  if (strstr(mode, "output")) { /* out must be 2 * (1 + i % 4096) */
    float *h = (float *)malloc(n * sizeof(float));
    G_CUDA(cudaMemcpy(h, out, n * sizeof(float), cudaMemcpyDeviceToHost));
    wrong = 0;
    for (size_t i = 0; i < n; i++)
      if (h[i] != 2.0f * (1.0f + (float)(i % 4096))) wrong++;
    free(h);
  }
  return wrong;
}

/* hostfn-graph: returns 0 when every host function ran exactly as often
 * as it was enqueued or launched. */
static int hostfn_graph(void) {
  g_sim_register();
  G_CUDA(cudaSetDevice(0));
  cudaStream_t s, cap;
  G_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  G_CUDA(cudaStreamCreateWithFlags(&cap, cudaStreamNonBlocking));
  static std::atomic<int> pending_runs, graph_runs;
  /* 2,000 behind a busy stream: all pending at once. */
  g_spin<<<1, 1, 0, s>>>(200LL * 1000 * 1000);
  for (int i = 0; i < 2000; i++) G_CUDA(cudaLaunchHostFunc(s, count_up, &pending_runs));
  G_CUDA(cudaStreamSynchronize(s));
  /* Captured: the graph's host node runs once per launch. */
  float *buf;
  G_CUDA(cudaMalloc((void **)&buf, 4096 * sizeof(float)));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  G_CUDA(cudaStreamBeginCapture(cap, cudaStreamCaptureModeThreadLocal));
  g_fill<<<4, 256, 0, cap>>>(buf, 4096, 1.0f);
  G_CUDA(cudaLaunchHostFunc(cap, count_up, &graph_runs));
  G_CUDA(cudaStreamEndCapture(cap, &g));
  G_CUDA(cudaGraphInstantiate(&ge, g, 0));
  for (int i = 0; i < 4; i++) G_CUDA(cudaGraphLaunch(ge, s));
  G_CUDA(cudaStreamSynchronize(s));
  int p = pending_runs.load(), gr = graph_runs.load();
  printf("{\"mode\": \"hostfn-graph\", \"pending_runs\": %d, \"graph_runs\": %d}\n", p, gr);
  G_CUDA(cudaGraphExecDestroy(ge));
  G_CUDA(cudaGraphDestroy(g));
  G_CUDA(cudaFree(buf));
  G_CUDA(cudaStreamDestroy(s));
  G_CUDA(cudaStreamDestroy(cap));
  return p == 2000 && gr == 4 ? 0 : 3;
}

int main(int argc, char **argv) {
  static const char *const modes[] = {"unsynced-input", "unsynced-output", "free-in-flight",
                                      "hostfn-output", "callback-output", "hostfn-graph"};
  int known = 0;
  for (size_t i = 0; argc > 1 && i < sizeof modes / sizeof *modes; i++) known |= strcmp(argv[1], modes[i]) == 0;
  if (!known) {
    fprintf(stderr,
            "usage: %s unsynced-input|unsynced-output|free-in-flight|hostfn-output|callback-output [fixed]\n"
            "       %s hostfn-graph\n",
            argv[0], argv[0]);
    return 2;
  }
  const char *mode = argv[1];
  if (strcmp(mode, "hostfn-graph") == 0) return hostfn_graph();
  int fixed = argc > 2 && strcmp(argv[2], "fixed") == 0;
  ncclComm_t comm = g_one_rank_comm();
  const size_t n = 1 << 22;
  cudaStream_t comp, comm_s;
  G_CUDA(cudaStreamCreateWithFlags(&comp, cudaStreamNonBlocking));
  G_CUDA(cudaStreamCreateWithFlags(&comm_s, cudaStreamNonBlocking));
  cudaEvent_t ev;
  G_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  float *send = NULL, *recv, *out;
  unsigned long long *errors;
  if (strcmp(mode, "free-in-flight") != 0) G_CUDA(cudaMalloc((void **)&send, n * sizeof(float)));
  G_CUDA(cudaMalloc((void **)&recv, n * sizeof(float)));
  G_CUDA(cudaMalloc((void **)&out, n * sizeof(float)));
  G_CUDA(cudaMallocHost((void **)&errors, sizeof *errors));
  /* Two rounds, a device synchronization between them: like a training
   * loop, and because a2acheck tracks a buffer from its first communication
   * on (a kernel that writes a send buffer before any operation used it is
   * not remembered), so the first round's producer race is not seen. */
  unsigned long long wrong = 0;
  for (int round = 0; round < 2; round++)
    wrong += one_round(mode, fixed, comm, comp, comm_s, ev, send, recv, out, errors, n);
  printf("{\"mode\": \"%s\", \"fixed\": %s, \"wrong_elements\": %llu}\n", mode,
         fixed ? "true" : "false", wrong);
  G_NCCL(ncclCommDestroy(comm));
  if (send) G_CUDA(cudaFree(send));
  G_CUDA(cudaFree(recv));
  G_CUDA(cudaFree(out));
  G_CUDA(cudaFreeHost(errors));
  G_CUDA(cudaEventDestroy(ev));
  G_CUDA(cudaStreamDestroy(comp));
  G_CUDA(cudaStreamDestroy(comm_s));
  return (fixed && wrong) ? 3 : 0;
}
