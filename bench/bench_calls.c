/* bench_calls.c - one kind of intercepted call, N times, for callgrind:
 * `bench_calls MODE N [INFLIGHT [SYNC]]` runs a warm-up of the same calls, then
 * measured_loop(), the only function bench/run collects with callgrind's
 * --toggle-collect, so the count is the application thread's instructions
 * for exactly N calls (the simulator's own work included, which the plain
 * run without the shim subtracts).
 *
 * MODE: launch, record, wait, memcpy, allreduce, sendrecv (an ncclSend +
 * ncclRecv pair in a group, to and from itself on a one-rank communicator),
 * alltoall, poll (a polling loop's round, as nccl-tests' and PyTorch's:
 * cudaStreamQuery on an idle stream that carried an AllReduce before the
 * loop, then ncclCommGetAsyncError), launchrecv (a kernel whose two pointer
 * parameters point into the last buffer left in flight, its operation
 * ordered before the loop's stream by an event: the MoE step's launches on a
 * receive buffer, which the stream analyzer looks up under its lock; with
 * INFLIGHT 0, an untracked buffer), query (ncclCommCount + ncclCommUserRank,
 * what nccl-tests asks of every communicator per iteration), rotate (an
 * ncclAlltoAll whose send and receive buffers move by 32 bytes every call
 * through 4,096 places of their 1 MiB allocations: nccl-tests' per-iteration
 * shift, 8,192 ranges, eight times the stream analyzer's pool, which is full
 * from the warm-up on). INFLIGHT: communication buffers left in flight (their
 * operations never synchronized) before the loop, so the checks that track
 * in-flight buffers have that many to consider (0, 8, 32, 128). SYNC: if
 * > 0, the loop synchronizes its streams every SYNC calls (long runs: the
 * RSS figures, the background thread's cost with SYNC operations in flight).
 *
 * Not a test: it prints one JSON line - mode, N, the loop's wall time per
 * call (timed outside measured_loop, so callgrind's count does not include
 * the clock) and the process's RSS after the loop (VmRSS and VmHWM, KiB). */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "a2asim.h"

#define CK(call)                                                                   \
  do {                                                                             \
    int e_ = (int)(call);                                                          \
    if (e_ != 0) {                                                                 \
      fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #call, e_);        \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)

static void k_noop(void) {}
static void k_ptr2(void) {}
static void noop_impl(void **args, const a2asim_launch_info *li) { (void)args; (void)li; }

typedef struct env {
  ncclComm_t comm;
  cudaStream_t s, s2;
  cudaEvent_t ev;
  float *buf, *buf2, *host;
  float *inflight; /* the last buffer left in flight (launchrecv) */
} env;

enum { M_LAUNCH, M_RECORD, M_WAIT, M_MEMCPY, M_ALLREDUCE, M_SENDRECV, M_ALLTOALL, M_POLL,
       M_LAUNCHRECV, M_QUERY, M_ROTATE, M_N };
static const char *const mode_names[M_N] = {"launch",    "record",   "wait",
                                            "memcpy",    "allreduce", "sendrecv",
                                            "alltoall",  "poll",      "launchrecv",
                                            "query",     "rotate"};
#define ROTATE_PLACES 4096

static void one(const env *e, int mode) {
  dim3 d1 = {1, 1, 1};
  float *arg = e->buf, *in = e->inflight;
  void *args[] = {&arg}, *args2[] = {&in, &in};
  switch (mode) {
  case M_LAUNCH: CK(cudaLaunchKernel((const void *)k_noop, d1, d1, args, 0, e->s)); break;
  case M_RECORD: CK(cudaEventRecord(e->ev, e->s)); break;
  case M_WAIT: CK(cudaStreamWaitEvent(e->s2, e->ev, 0)); break;
  case M_MEMCPY: CK(cudaMemcpyAsync(e->buf2, e->buf, 256, cudaMemcpyDeviceToDevice, e->s)); break;
  case M_ALLREDUCE: CK(ncclAllReduce(e->buf, e->buf, 8, ncclFloat, ncclSum, e->comm, e->s)); break;
  case M_SENDRECV:
    CK(ncclGroupStart());
    CK(ncclSend(e->buf, 8, ncclFloat, 0, e->comm, e->s));
    CK(ncclRecv(e->buf2, 8, ncclFloat, 0, e->comm, e->s));
    CK(ncclGroupEnd());
    break;
  case M_ALLTOALL: CK(ncclAlltoAll(e->buf, e->buf2, 8, ncclFloat, e->comm, e->s)); break;
  case M_POLL: {
    ncclResult_t async = ncclSuccess;
    CK(cudaStreamQuery(e->s)); /* idle: cudaSuccess */
    CK(ncclCommGetAsyncError(e->comm, &async));
    CK(async);
    break;
  }
  case M_LAUNCHRECV: CK(cudaLaunchKernel((const void *)k_ptr2, d1, d1, args2, 0, e->s)); break;
  case M_QUERY: {
    int nranks = 0, rank = -1;
    CK(ncclCommCount(e->comm, &nranks));
    CK(ncclCommUserRank(e->comm, &rank));
    if (nranks != 1 || rank != 0) exit(1);
    break;
  }
  case M_ROTATE: {
    static unsigned k;
    size_t off = (size_t)(k++ % ROTATE_PLACES) * 8;
    CK(ncclAlltoAll(e->buf + off, e->buf2 + off, 8, ncclFloat, e->comm, e->s));
    break;
  }
  }
}

/* Kept out of line and unmerged so callgrind can toggle on it. */
__attribute__((noinline, noclone)) void warmup_loop(const env *e, int mode, int n) {
  for (int i = 0; i < n; i++) one(e, mode);
}
__attribute__((noinline, noclone)) void measured_loop(const env *e, int mode, int n, int sync) {
  for (int i = 0; i < n; i++) {
    one(e, mode);
    if (sync > 0 && (i + 1) % sync == 0) {
      CK(cudaStreamSynchronize(e->s));
      CK(cudaStreamSynchronize(e->s2));
    }
  }
  __asm__ volatile("" ::: "memory");
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* "VmRSS:   1234 kB" -> 1234; -1 if /proc is not there. */
static long status_kib(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long v = -1;
  size_t kl = strlen(key);
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, key, kl) && line[kl] == ':') v = strtol(line + kl + 1, NULL, 10);
  fclose(f);
  return v;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr,
            "usage: %s launch|record|wait|memcpy|allreduce|sendrecv|alltoall|poll|launchrecv|query|rotate N "
            "[INFLIGHT [SYNC]]\n",
            argv[0]);
    return 2;
  }
  int mode = -1;
  for (int m = 0; m < M_N; m++)
    if (!strcmp(argv[1], mode_names[m])) mode = m;
  int n = atoi(argv[2]), inflight = argc > 3 ? atoi(argv[3]) : 0;
  int sync = argc > 4 ? atoi(argv[4]) : 0;
  if (mode < 0 || n <= 0 || inflight < 0 || inflight > 1024 || sync < 0) return 2;
  CK(a2asim_register_kernel((const void *)k_noop, noop_impl, "noop", 0, NULL));
  static const size_t ptr2_p[] = {sizeof(float *), sizeof(float *)};
  CK(a2asim_register_kernel((const void *)k_ptr2, noop_impl, "ptr2", 2, ptr2_p));
  CK(cudaSetDevice(0));
  env e;
  ncclUniqueId id;
  CK(ncclGetUniqueId(&id));
  CK(ncclCommInitRank(&e.comm, 1, id, 0));
  CK(cudaStreamCreateWithFlags(&e.s, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&e.s2, cudaStreamNonBlocking));
  CK(cudaEventCreateWithFlags(&e.ev, cudaEventDisableTiming));
  CK(cudaMalloc((void **)&e.buf, 1 << 20));
  CK(cudaMalloc((void **)&e.buf2, 1 << 20));
  e.inflight = e.buf;
  /* Buffers in flight: AllReduces on their own buffers on a third stream,
   * never synchronized (the checks keep them as in-flight ranges). */
  cudaStream_t s3;
  CK(cudaStreamCreateWithFlags(&s3, cudaStreamNonBlocking));
  for (int i = 0; i < inflight; i++) {
    float *b;
    CK(cudaMalloc((void **)&b, 4096));
    CK(ncclAllReduce(b, b, 64, ncclFloat, ncclSum, e.comm, s3));
    e.inflight = b;
  }
  if (mode == M_LAUNCHRECV && inflight > 0) { /* work.wait(): ordered, still tracked */
    CK(cudaEventRecord(e.ev, s3));
    CK(cudaStreamWaitEvent(e.s, e.ev, 0));
  }
  /* Polling follows communication: the stream carried an operation (the
   * analyzers track its buffer, the thread has posted). */
  if (mode == M_POLL) {
    CK(ncclAllReduce(e.buf, e.buf, 8, ncclFloat, ncclSum, e.comm, e.s));
    CK(cudaStreamSynchronize(e.s));
  }
  warmup_loop(&e, mode, mode == M_ROTATE ? 2 * ROTATE_PLACES : n < 200 ? n : 200);
  CK(cudaStreamSynchronize(e.s));
  CK(cudaStreamSynchronize(e.s2));
  double t0 = now_s();
  measured_loop(&e, mode, n, sync);
  double t1 = now_s();
  CK(cudaStreamSynchronize(e.s));
  CK(cudaStreamSynchronize(e.s2));
  printf("{\"mode\": \"%s\", \"n\": %d, \"inflight\": %d, \"sync\": %d, \"ns_per_call\": %.1f, "
         "\"rss_kib\": %ld, \"hwm_kib\": %ld}\n",
         mode_names[mode], n, inflight, sync, (t1 - t0) / n * 1e9, status_kib("VmRSS"),
         status_kib("VmHWM"));
  return 0;
}
