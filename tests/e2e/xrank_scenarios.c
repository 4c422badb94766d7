/* xrank_scenarios.c - end-to-end programs for cross-rank checking
 * (ctest -R e2e.xrank). One binary, one scenario per argument. Ranks are
 * processes forked by a parent that created the ncclUniqueId(s) (so the
 * parent, never a rank, hosts the coordinator), except `coord_kill`, where a
 * separate helper process creates the id and is killed mid-run.
 *
 * The parent waits for every rank (bounded by WAIT_LIMIT_S, after which it
 * kills them) and prints one line per rank: "rank R exit S after T s" (S is
 * "signal N" when killed). It exits 0 when every rank ended, 1 otherwise.
 * The ctest driver (xrank_check.py) asserts on those lines and on the logs.
 *
 * XRANK_WAIT_LIMIT=S changes the limit (A2ACHECK_ON_DEADLOCK=wait tests).
 *
 * Scenarios:
 *   p2p_mismatch   4 ranks, grouped all-to-all; at step 3 rank 2 receives
 *                  1 MiB from rank 1, which sends 4 MiB (the simulator's
 *                  sender then hangs, as NCCL can on GPUs).
 *   skip           4 ranks, 10 grouped all-to-alls; rank 3 skips #5 and, having
 *                  "finished", destroys its communicator and exits.
 *   hang           skip, but rank 3 then sleeps 15 s outside CUDA: only
 *                  A2ACHECK_HANG_TIMEOUT may end the others (group.hang).
 *   order          2 ranks, comms A and B, AllReduce on both on one stream:
 *                  rank 0 A then B, rank 1 B then A.
 *   coll_count     4 ranks, AllReduce; rank 2 passes a different count.
 *   init_nranks    4 ranks; rank 3 calls ncclCommInitRank with nranks 3 as
 *                  rank 2 (the others hang in the init, as with NCCL).
 *   moe STEPS [busy|sleep|badhalf]
 *                  8 ranks, STEPS steps of grouped all-to-all with unequal
 *                  splits on the world comm + AllReduce on a split (color
 *                  0 = everyone) + AllReduce every 10 steps on halves (split
 *                  by rank / 4); busy/sleep: rank 5 spends 30 s outside CUDA
 *                  in the middle (no deadlock may be reported); badhalf: rank
 *                  5's AllReduce on its half passes another count at step 19.
 * With XRANK_RANK0_ID=1 rank 0 creates the world id after the fork and sends
 * it to the others (torchrun-like: a rank hosts the coordinator).
 * With XRANK_STRIP_ID=1 in the environment the ids carry no coordinator
 * record (as if made without a2acheck): A2ACHECK_COORDINATOR or nothing.
 *   garbage        a hostile process sends malformed, unauthenticated,
 *                  oversized and stalled messages to the coordinator, then
 *                  the `order` deadlock runs and must still be found.
 *   coord_kill     4 ranks, 300 steps; the id's creator (the coordinator
 *                  host) is SIGKILLed after rank 0 reached step 50.
 *   poll_skip      skip, every rank waiting by polling cudaStreamQuery (as
 *                  nccl-tests does) instead of cudaStreamSynchronize.
 *   poll_slow      a correct polling run; rank 2 sleeps 8 s mid-run; a
 *                  watchdog thread per rank polls an event (never posts).
 *   a2a_mixed      ranks 0-1 ncclAlltoAll, ranks 2-3 grouped send/recv; at
 *                  step 1 rank 2 receives 32 floats from rank 0 (sends 64).
 *   a2a_vs_sendrecv ranks 0-1 ncclAlltoAll, ranks 2-3 a send/recv ring, all
 *                  polling (nccl-tests alltoall_perf against sendrecv_perf).
 *   a2a_count      every rank ncclAlltoAll, rank 2 with count 48 once.
 *   coll_dtype     AllReduce of 4 KiB: float32 on ranks 0-1, float16 on 2-3.
 *   host_stuck     rank 3 skips an AllReduce; every rank then sleeps 25 s in
 *                  host code (no CUDA wait: no proof possible).
 *   host_phase [bad|destroy] 4 ranks: back-to-back all-to-alls and
 *                  AllReduces, then 4 s of host code, then a synchronization
 *                  (bad: rank 1's last AllReduce passes another count;
 *                  destroy: a thread posts the AllReduces on its own stream
 *                  and exits, the main thread destroys that stream at once).
 *   group_two_comms 4 ranks: a group of an AllReduce on the world comm
 *                  (rank 1: another count) and one on a split copy of it.
 *   burst STEPS    2 ranks, STEPS back-to-back AllReduces (no host
 *                  synchronization between them), then one with another
 *                  count on rank 1: cross-rank checking must still be
 *                  attached at the end to name it (size.collective-mismatch).
 *   loop STEPS     4 ranks, STEPS grouped all-to-alls, each followed by a
 *                  stream synchronization and XRANK_STEP_MS of host time;
 *                  XRANK_SKIP=R:S: rank R stops before step S (it
 *                  "finished"), the others hang in step S.
 *   rank0_exit MODE 4 ranks, torchrun-like (rank 0 creates the id and hosts
 *                  the coordinator); 3 all-to-alls, then rank 0 returns from
 *                  main (exit 0) while ranks 1-3 wait until its process is
 *                  gone (end of file on a pipe only it holds), then: deadlock
 *                  - a 4th all-to-all with rank 0 (they hang); mismatch -
 *                  rank 1 sends 64 floats to rank 2, which receives 48;
 *                  clean - a correct send/recv ring among ranks 1-3; long -
 *                  the ring after 12 s outside CUDA. The
 *                  coordinator must outlive rank 0's process. Every rank
 *                  prints "rank R calls exit after T s" before exit().
 *   exit_early     4 ranks (coordinator in a helper process); rank 2 stops
 *                  the helper before its init and has it resumed 0.5 s
 *                  later, posts an AllReduce in a group it never closes and
 *                  exits at once, its connection still authenticating; the
 *                  others hang in the AllReduce: the deadlock must be proven.
 * With XRANK_HELPER_HOST=1 (always for coord_kill, exit_early) a separate helper
 * process creates the world id and hosts the coordinator. The attack and
 * fault knobs (XRANK_ATTACK, XRANK_FAULT, XRANK_MEASURE, XRANK_NOFILE,
 * XRANK_NETNS_RANKS) are the launcher's, see xrank_harness.h.
 */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <pthread.h>
#include <sched.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "xrank_harness.h"

#define WAIT_LIMIT_S 100

#define CK_CUDA(call)                                                            \
  do {                                                                           \
    cudaError_t e_ = (call);                                                     \
    if (e_ != cudaSuccess) {                                                     \
      fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #call, (int)e_); \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)
#define CK_NCCL(call)                                                            \
  do {                                                                           \
    ncclResult_t r_ = (call);                                                    \
    if (r_ != ncclSuccess) {                                                     \
      fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #call, (int)r_); \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct ctx {
  int rank, nranks;
  ncclComm_t comm;
  ncclUniqueId ids[2];
  cudaStream_t s;
  const char *scenario;
  int steps;
  const char *variant;
  int progress_fd; /* coord_kill: rank 0 reports step 50 here */
  int idpipe[2];   /* XRANK_RANK0_ID: rank 0 makes the world id, sends it */
  int gone[2];     /* rank0_exit: only rank 0 holds the write end */
  pid_t host;      /* the helper hosting the coordinator, or -1 */
} ctx;

/* Grouped all-to-all: rank sends cnt(rank, p) floats to p and receives
 * cnt(p, rank) from p. */
typedef size_t (*count_fn)(int from, int to, int step);

/* Chunks are packed back to back, as all_to_all_single lays them out. */
static void alltoall(ctx *c, float *send, float *recv, count_fn cnt, int step,
                     int shrink_from, size_t shrunk) {
  size_t so = 0, ro = 0;
  CK_NCCL(ncclGroupStart());
  for (int p = 0; p < c->nranks; p++) {
    size_t sc = cnt(c->rank, p, step);
    CK_NCCL(ncclSend(send + so, sc, ncclFloat, p, c->comm, c->s));
    size_t rc = p == shrink_from ? shrunk : cnt(p, c->rank, step);
    CK_NCCL(ncclRecv(recv + ro, rc, ncclFloat, p, c->comm, c->s));
    so += sc;
    ro += cnt(p, c->rank, step);
  }
  CK_NCCL(ncclGroupEnd());
}

static size_t cnt_equal(int from, int to, int step) { (void)from; (void)to; (void)step; return 64; }
static size_t cnt_big(int from, int to, int step) {
  (void)step;
  return from == 1 && to == 2 ? (4u << 20) / sizeof(float) : 64;
}
/* MoE-like unequal splits, different every step. */
static size_t cnt_moe(int from, int to, int step) {
  return 16 + (size_t)((from * 7 + to * 3 + step) % 5) * 16;
}

static int run_p2p_mismatch(ctx *c) {
  size_t stride = (4u << 20) / sizeof(float);
  float *send, *recv;
  CK_CUDA(cudaMalloc((void **)&send, stride * sizeof(float) * (size_t)c->nranks));
  CK_CUDA(cudaMalloc((void **)&recv, stride * sizeof(float) * (size_t)c->nranks));
  for (int step = 0; step < 6; step++) {
    int bad = step == 3 && c->rank == 2;
    alltoall(c, send, recv, cnt_big, step, bad ? 1 : -1, (1u << 20) / sizeof(float));
    CK_CUDA(cudaStreamSynchronize(c->s));
  }
  CK_CUDA(cudaFree(send));
  CK_CUDA(cudaFree(recv));
  return 0;
}

/* p2p_exit: one all-to-all in which rank 2 receives 48 floats from rank 1,
 * which sends 64 (small enough that the exchange completes, as in
 * examples/a2a_bug.c); every rank then ends with _exit() right after
 * ncclCommDestroy (the forked-child pattern): no exit hook runs, and the
 * verdict, which the coordinator can only determine once both ranks'
 * records arrived, reaches the logs of ranks 1 and 2 only through the wait
 * at ncclCommDestroy. (A mismatch followed by further steps would be
 * reported before the end anyway.) */
static int run_p2p_exit(ctx *c) {
  float *send, *recv;
  CK_CUDA(cudaMalloc((void **)&send, 64 * sizeof(float) * (size_t)c->nranks));
  CK_CUDA(cudaMalloc((void **)&recv, 64 * sizeof(float) * (size_t)c->nranks));
  alltoall(c, send, recv, cnt_equal, 0, c->rank == 2 ? 1 : -1, 48);
  CK_CUDA(cudaStreamSynchronize(c->s));
  CK_CUDA(cudaFree(send));
  CK_CUDA(cudaFree(recv));
  return 0;
}

/* hang: like skip, but rank 3 then stays outside CUDA (sleeps 15 s)
 * before ending: it might still post the missing operation, so this is not
 * a deadlock; A2ACHECK_HANG_TIMEOUT ends the others with group.hang. */
static int run_skip(ctx *c) {
  size_t stride = 64;
  float *send, *recv;
  CK_CUDA(cudaMalloc((void **)&send, stride * sizeof(float) * (size_t)c->nranks));
  CK_CUDA(cudaMalloc((void **)&recv, stride * sizeof(float) * (size_t)c->nranks));
  for (int step = 0; step < 10; step++) {
    if (c->rank == 3 && step == 5) continue; /* "finished early" */
    alltoall(c, send, recv, cnt_equal, step, -1, 0);
    CK_CUDA(cudaStreamSynchronize(c->s));
  }
  if (c->rank == 3 && !strcmp(c->scenario, "hang")) {
    struct timespec ts = {15, 0};
    while (nanosleep(&ts, &ts) != 0) {}
  }
  CK_CUDA(cudaFree(send));
  CK_CUDA(cudaFree(recv));
  return 0;
}

static int run_order(ctx *c) {
  ncclComm_t b;
  CK_NCCL(ncclCommInitRank(&b, c->nranks, c->ids[1], c->rank));
  float *buf;
  CK_CUDA(cudaMalloc((void **)&buf, 1024 * sizeof(float)));
  ncclComm_t first = c->rank == 0 ? c->comm : b, second = c->rank == 0 ? b : c->comm;
  CK_NCCL(ncclAllReduce(buf, buf, 1024, ncclFloat, ncclSum, first, c->s));
  CK_NCCL(ncclAllReduce(buf, buf, 1024, ncclFloat, ncclSum, second, c->s));
  CK_CUDA(cudaStreamSynchronize(c->s));
  CK_NCCL(ncclCommDestroy(b));
  return 0;
}

static int run_coll_count(ctx *c) {
  float *buf;
  CK_CUDA(cudaMalloc((void **)&buf, 1024 * sizeof(float)));
  for (int i = 0; i < 3; i++) {
    size_t n = i == 1 && c->rank == 2 ? 1000 : 1024;
    CK_NCCL(ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, c->comm, c->s));
    CK_CUDA(cudaStreamSynchronize(c->s));
  }
  return 0;
}

static int run_burst(ctx *c) {
  float *buf;
  CK_CUDA(cudaMalloc((void **)&buf, 256 * sizeof(float)));
  for (int i = 0; i < c->steps; i++)
    CK_NCCL(ncclAllReduce(buf, buf, 256, ncclFloat, ncclSum, c->comm, c->s));
  CK_NCCL(ncclAllReduce(buf, buf, c->rank == 1 ? 200 : 256, ncclFloat, ncclSum, c->comm, c->s));
  CK_CUDA(cudaStreamSynchronize(c->s));
  printf("rank %d: %d allreduces done\n", c->rank, c->steps + 1);
  return 0;
}

/* host_phase [bad]: runs of back-to-back operations (grouped all-to-alls
 * and AllReduces, no other CUDA call between them), then 4 s of host code
 * with no CUDA call at all (a checkpoint write, a store barrier), then a
 * synchronization. The runs' completion markers are never recorded by the
 * threads before the host phase (xrank.c, "completion markers"): the
 * background thread must find the streams idle on its own, or
 * A2ACHECK_STALL_WARNING / A2ACHECK_HANG_TIMEOUT shorter than the phase
 * would report the completed operations as stuck. bad: rank 1's last
 * AllReduce passes another count (it hangs, as with NCCL): its run must
 * stay pending through the host phase (the mismatch and the deadlock once
 * the ranks synchronize). */
typedef struct poster {
  ctx *c;
  cudaStream_t s;
  float *buf;
} poster;

/* host_phase destroy: a thread posts back-to-back AllReduces on its own
 * stream and exits; the main thread destroys that stream at once. */
static void *post_and_exit(void *arg) {
  poster *p = arg;
  for (int i = 0; i < 20; i++)
    CK_NCCL(ncclAllReduce(p->buf, p->buf, 256, ncclFloat, ncclSum, p->c->comm, p->s));
  return NULL;
}

static int run_host_phase(ctx *c) {
  if (c->variant && !strcmp(c->variant, "destroy")) {
    poster p = {.c = c};
    CK_CUDA(cudaMalloc((void **)&p.buf, 256 * sizeof(float)));
    CK_CUDA(cudaStreamCreateWithFlags(&p.s, cudaStreamNonBlocking));
    pthread_t th;
    if (pthread_create(&th, NULL, post_and_exit, &p) != 0) return 1;
    pthread_join(th, NULL);
    CK_CUDA(cudaStreamDestroy(p.s));
    struct timespec ts = {4, 0};
    while (nanosleep(&ts, &ts) != 0) {}
    CK_CUDA(cudaDeviceSynchronize());
    printf("rank %d: host phase done\n", c->rank);
    return 0;
  }
  float *send, *recv, *grad;
  CK_CUDA(cudaMalloc((void **)&send, 64 * sizeof(float) * (size_t)c->nranks));
  CK_CUDA(cudaMalloc((void **)&recv, 64 * sizeof(float) * (size_t)c->nranks));
  CK_CUDA(cudaMalloc((void **)&grad, 256 * sizeof(float)));
  for (int step = 0; step < 20; step++) {
    alltoall(c, send, recv, cnt_equal, step, -1, 0);
    CK_NCCL(ncclAllReduce(grad, grad, 256, ncclFloat, ncclSum, c->comm, c->s));
  }
  int bad = c->variant && !strcmp(c->variant, "bad") && c->rank == 1;
  CK_NCCL(ncclAllReduce(grad, grad, bad ? 200 : 256, ncclFloat, ncclSum, c->comm, c->s));
  struct timespec ts = {4, 0};
  while (nanosleep(&ts, &ts) != 0) {}
  CK_CUDA(cudaStreamSynchronize(c->s));
  printf("rank %d: host phase done\n", c->rank);
  return 0;
}

/* group_two_comms: one group holds an AllReduce on the world comm (rank
 * 1 passes another count: it hangs, as with NCCL) and one on a split copy
 * of it; every rank then synchronizes. The two units share one completion
 * marker: the mismatch on the first comm must still make the second's
 * unit suspect, and the blocked ranks a deadlock. */
static int run_group_two_comms(ctx *c) {
  ncclComm_t other;
  CK_NCCL(ncclCommSplit(c->comm, 0, c->rank, &other, NULL));
  float *a, *b;
  CK_CUDA(cudaMalloc((void **)&a, 256 * sizeof(float)));
  CK_CUDA(cudaMalloc((void **)&b, 256 * sizeof(float)));
  CK_NCCL(ncclAllReduce(a, a, 256, ncclFloat, ncclSum, c->comm, c->s));
  CK_NCCL(ncclGroupStart());
  CK_NCCL(ncclAllReduce(a, a, c->rank == 1 ? 200 : 256, ncclFloat, ncclSum, c->comm, c->s));
  CK_NCCL(ncclAllReduce(b, b, 256, ncclFloat, ncclSum, other, c->s));
  CK_NCCL(ncclGroupEnd());
  CK_CUDA(cudaStreamSynchronize(c->s));
  printf("rank %d: group done\n", c->rank);
  return 0;
}

static void outside_cuda(const char *how) {
  double t0 = now_s();
  if (strcmp(how, "sleep") == 0) {
    struct timespec ts = {30, 0};
    while (nanosleep(&ts, &ts) != 0) {}
  } else {
    volatile double x = 0;
    while (now_s() - t0 < 30.0) x += 1.0;
  }
}

static int run_moe(ctx *c) {
  ncclComm_t dp, half;
  CK_NCCL(ncclCommSplit(c->comm, 0, c->rank, &dp, NULL));
  CK_NCCL(ncclCommSplit(c->comm, c->rank / 4, c->rank, &half, NULL));
  size_t stride = 96;
  float *send, *recv, *grad;
  CK_CUDA(cudaMalloc((void **)&send, stride * sizeof(float) * (size_t)c->nranks));
  CK_CUDA(cudaMalloc((void **)&recv, stride * sizeof(float) * (size_t)c->nranks));
  CK_CUDA(cudaMalloc((void **)&grad, 256 * sizeof(float)));
  for (int step = 0; step < c->steps; step++) {
    if (c->variant && strcmp(c->variant, "badhalf") && c->rank == 5 && step == c->steps / 2)
      outside_cuda(c->variant);
    if (c->progress_fd >= 0 && c->rank == 0 && step == 50) {
      char b = 1;
      if (write(c->progress_fd, &b, 1) != 1) return 1;
    }
    alltoall(c, send, recv, cnt_moe, step, -1, 0);
    CK_NCCL(ncclAllReduce(grad, grad, 256, ncclFloat, ncclSum, dp, c->s));
    if (step % 10 == 9) {
      /* badhalf: the negative control, rank 5 passes a smaller count once
       * on the split comm (proves the clean run's silence is not blindness). */
      int bad = c->variant && !strcmp(c->variant, "badhalf") && c->rank == 5 && step == 19;
      CK_NCCL(ncclAllReduce(grad, grad, bad ? 32 : 64, ncclFloat, ncclSum, half, c->s));
    }
    CK_CUDA(cudaStreamSynchronize(c->s));
    if (c->progress_fd >= 0) usleep(2000);
  }
  CK_NCCL(ncclCommDestroy(half));
  CK_NCCL(ncclCommDestroy(dp));
  return 0;
}

/* Wait for the stream the way nccl-tests' testStreamSynchronize does: poll
 * cudaStreamQuery, ask NCCL for asynchronous errors, yield - no blocking
 * call a2acheck could see as a wait. */
static void poll_wait(ctx *c) {
  for (;;) {
    cudaError_t e = cudaStreamQuery(c->s);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) CK_CUDA(e);
    ncclResult_t ae;
    CK_NCCL(ncclCommGetAsyncError(c->comm, &ae));
    if (ae != ncclSuccess) CK_NCCL(ae);
    sched_yield();
  }
}

/* poll_skip: `skip` with every rank waiting by polling. */
static int run_poll_skip(ctx *c) {
  float *send, *recv;
  CK_CUDA(cudaMalloc((void **)&send, 64 * sizeof(float) * (size_t)c->nranks));
  CK_CUDA(cudaMalloc((void **)&recv, 64 * sizeof(float) * (size_t)c->nranks));
  for (int step = 0; step < 10; step++) {
    if (c->rank == 3 && step == 5) continue;
    alltoall(c, send, recv, cnt_equal, step, -1, 0);
    poll_wait(c);
  }
  CK_CUDA(cudaFree(send));
  CK_CUDA(cudaFree(recv));
  return 0;
}

/* poll_slow: a correct run waiting by polling, in which rank 2 spends 8 s
 * outside CUDA in the middle, while a watchdog thread of each rank polls
 * cudaEventQuery on the last step's event (it never posts communication,
 * as PyTorch's watchdog): no deadlock may be reported. */
static cudaEvent_t g_last_ev;
static volatile int g_stop_watchdog;
static void *watchdog(void *arg) {
  (void)arg;
  while (!g_stop_watchdog) {
    (void)cudaEventQuery(g_last_ev);
    usleep(1000);
  }
  return NULL;
}
static int run_poll_slow(ctx *c) {
  float *send, *recv;
  CK_CUDA(cudaMalloc((void **)&send, 64 * sizeof(float) * (size_t)c->nranks));
  CK_CUDA(cudaMalloc((void **)&recv, 64 * sizeof(float) * (size_t)c->nranks));
  CK_CUDA(cudaEventCreateWithFlags(&g_last_ev, cudaEventDisableTiming));
  pthread_t wd;
  if (pthread_create(&wd, NULL, watchdog, NULL) != 0) return 1;
  for (int step = 0; step < 40; step++) {
    if (c->rank == 2 && step == 20) {
      struct timespec ts = {8, 0};
      while (nanosleep(&ts, &ts) != 0) {}
    }
    alltoall(c, send, recv, cnt_equal, step, -1, 0);
    CK_CUDA(cudaEventRecord(g_last_ev, c->s));
    poll_wait(c);
  }
  g_stop_watchdog = 1;
  pthread_join(wd, NULL);
  CK_CUDA(cudaEventDestroy(g_last_ev));
  CK_CUDA(cudaFree(send));
  CK_CUDA(cudaFree(recv));
  return 0;
}

/* a2a_mixed: ranks 0 and 1 call ncclAlltoAll (equal splits, as
 * all_to_all_single does with NCCL >= 2.28), ranks 2 and 3 a grouped
 * send/recv loop (unequal splits); at step 1 rank 2 receives 32 floats from
 * rank 0, whose AlltoAll sends 64: NCCL matches them pair by pair. */
static int run_a2a_mixed(ctx *c) {
  float *send, *recv;
  CK_CUDA(cudaMalloc((void **)&send, 64 * sizeof(float) * (size_t)c->nranks));
  CK_CUDA(cudaMalloc((void **)&recv, 64 * sizeof(float) * (size_t)c->nranks));
  for (int step = 0; step < 3; step++) {
    if (c->rank < 2)
      CK_NCCL(ncclAlltoAll(send, recv, 64, ncclFloat, c->comm, c->s));
    else
      alltoall(c, send, recv, cnt_equal, step, step == 1 && c->rank == 2 ? 0 : -1, 32);
    CK_CUDA(cudaStreamSynchronize(c->s));
  }
  CK_CUDA(cudaFree(send));
  CK_CUDA(cudaFree(recv));
  return 0;
}

/* a2a_vs_sendrecv: nccl-tests' alltoall_perf on ranks 0 and 1 against
 * sendrecv_perf (a ring: send to the next rank, receive from the previous)
 * on ranks 2 and 3, every rank waiting by polling as nccl-tests does. */
static int run_a2a_vs_sendrecv(ctx *c) {
  float *send, *recv;
  CK_CUDA(cudaMalloc((void **)&send, 64 * sizeof(float) * (size_t)c->nranks));
  CK_CUDA(cudaMalloc((void **)&recv, 64 * sizeof(float) * (size_t)c->nranks));
  for (int it = 0; it < 5; it++) {
    if (c->rank < 2) {
      CK_NCCL(ncclAlltoAll(send, recv, 64, ncclFloat, c->comm, c->s));
    } else {
      CK_NCCL(ncclGroupStart());
      CK_NCCL(ncclSend(send, 64, ncclFloat, (c->rank + 1) % c->nranks, c->comm, c->s));
      CK_NCCL(ncclRecv(recv, 64, ncclFloat, (c->rank + c->nranks - 1) % c->nranks, c->comm, c->s));
      CK_NCCL(ncclGroupEnd());
    }
    poll_wait(c);
  }
  CK_CUDA(cudaFree(send));
  CK_CUDA(cudaFree(recv));
  return 0;
}

/* a2a_count: every rank calls ncclAlltoAll, rank 2 with another count. */
static int run_a2a_count(ctx *c) {
  float *send, *recv;
  CK_CUDA(cudaMalloc((void **)&send, 64 * sizeof(float) * (size_t)c->nranks));
  CK_CUDA(cudaMalloc((void **)&recv, 64 * sizeof(float) * (size_t)c->nranks));
  for (int it = 0; it < 2; it++) {
    CK_NCCL(ncclAlltoAll(send, recv, it == 1 && c->rank == 2 ? 48 : 64, ncclFloat, c->comm, c->s));
    CK_CUDA(cudaStreamSynchronize(c->s));
  }
  CK_CUDA(cudaFree(send));
  CK_CUDA(cudaFree(recv));
  return 0;
}

/* coll_dtype: AllReduce of the same bytes, float32 x 1024 on ranks 0 and
 * 1, float16 x 2048 on ranks 2 and 3. */
static int run_coll_dtype(ctx *c) {
  void *buf;
  CK_CUDA(cudaMalloc(&buf, 4096));
  for (int it = 0; it < 2; it++) {
    if (c->rank < 2) CK_NCCL(ncclAllReduce(buf, buf, 1024, ncclFloat, ncclSum, c->comm, c->s));
    else CK_NCCL(ncclAllReduce(buf, buf, 2048, ncclHalf, ncclSum, c->comm, c->s));
    CK_CUDA(cudaStreamSynchronize(c->s));
  }
  CK_CUDA(cudaFree(buf));
  return 0;
}

/* host_stuck: ranks 0-2 post an AllReduce that rank 3 skips, and every
 * rank then waits in host code (an MPI barrier, a store barrier, a Python
 * sleep: here a sleep) instead of a CUDA wait: no deadlock can be proven.
 * group.stall must say early who waits for whom; group.hang ends the
 * waiting ranks at A2ACHECK_HANG_TIMEOUT. Rank 3 ends after 25 s. */
static int run_host_stuck(ctx *c) {
  float *buf;
  CK_CUDA(cudaMalloc((void **)&buf, 1024 * sizeof(float)));
  for (int it = 0; it < 12; it++) {
    CK_NCCL(ncclAllReduce(buf, buf, 1024, ncclFloat, ncclSum, c->comm, c->s));
    CK_CUDA(cudaStreamSynchronize(c->s));
  }
  if (c->rank != 3) CK_NCCL(ncclAllReduce(buf, buf, 1024, ncclFloat, ncclSum, c->comm, c->s));
  struct timespec ts = {25, 0};
  while (nanosleep(&ts, &ts) != 0) {}
  return 0;
}

/* loop: the fault tests' workload (see the file comment). */
static int run_loop(ctx *c) {
  float *send, *recv;
  CK_CUDA(cudaMalloc((void **)&send, 64 * sizeof(float) * (size_t)c->nranks));
  CK_CUDA(cudaMalloc((void **)&recv, 64 * sizeof(float) * (size_t)c->nranks));
  int skip_rank = -1, skip_step = -1;
  const char *sk = getenv("XRANK_SKIP");
  if (sk && sscanf(sk, "%d:%d", &skip_rank, &skip_step) != 2) skip_rank = -1;
  const char *ms = getenv("XRANK_STEP_MS");
  long step_us = (ms ? atol(ms) : 2) * 1000;
  for (int step = 0; step < c->steps; step++) {
    if (c->rank == skip_rank && step == skip_step) break;
    if (c->progress_fd >= 0 && c->rank == 0 && step == 50) {
      char b = 1;
      if (write(c->progress_fd, &b, 1) != 1) return 1;
    }
    alltoall(c, send, recv, cnt_equal, step, -1, 0);
    CK_CUDA(cudaStreamSynchronize(c->s));
    if (step_us > 0) usleep((useconds_t)step_us);
  }
  CK_CUDA(cudaFree(send));
  CK_CUDA(cudaFree(recv));
  return 0;
}

/* rank0_exit: see the file comment. */
static int run_rank0_exit(ctx *c) {
  float *send, *recv;
  CK_CUDA(cudaMalloc((void **)&send, 64 * sizeof(float) * (size_t)c->nranks));
  CK_CUDA(cudaMalloc((void **)&recv, 64 * sizeof(float) * (size_t)c->nranks));
  for (int step = 0; step < 3; step++) {
    alltoall(c, send, recv, cnt_equal, step, -1, 0);
    CK_CUDA(cudaStreamSynchronize(c->s));
  }
  if (c->rank == 0) {
    /* A device-file mapping, as a GPU process has (the driver's, NCCL's
     * /dev/shm): the lingering coordinator must not keep it (xrank_check.py
     * --lingerer-clean). */
    char name[64];
    snprintf(name, sizeof name, "/a2a-xrank-%d", (int)getpid());
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd >= 0) {
      if (ftruncate(fd, 1 << 16) == 0 &&
          mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED)
        perror("mmap");
      close(fd);
      shm_unlink(name);
    }
    return 0; /* finished: destroys its comm and exits */
  }
  char b;
  while (read(c->gone[0], &b, 1) > 0) {}
  const char *mode = c->variant ? c->variant : "deadlock";
  if (!strcmp(mode, "long")) {
    /* Longer than the lingering coordinator serves: it leaves, and the
     * ring below runs without it. */
    struct timespec ts = {12, 0};
    while (nanosleep(&ts, &ts) != 0) {}
    mode = "clean";
  }
  if (!strcmp(mode, "deadlock")) {
    alltoall(c, send, recv, cnt_equal, 3, -1, 0);
  } else if (!strcmp(mode, "mismatch")) {
    if (c->rank == 1) CK_NCCL(ncclSend(send, 64, ncclFloat, 2, c->comm, c->s));
    if (c->rank == 2) CK_NCCL(ncclRecv(recv, 48, ncclFloat, 1, c->comm, c->s));
  } else {
    for (int it = 0; it < 5; it++) {
      int next = c->rank % 3 + 1, prev = (c->rank + 1) % 3 + 1;
      CK_NCCL(ncclGroupStart());
      CK_NCCL(ncclSend(send, 64, ncclFloat, next, c->comm, c->s));
      CK_NCCL(ncclRecv(recv, 64, ncclFloat, prev, c->comm, c->s));
      CK_NCCL(ncclGroupEnd());
      CK_CUDA(cudaStreamSynchronize(c->s));
    }
  }
  CK_CUDA(cudaStreamSynchronize(c->s));
  CK_CUDA(cudaFree(send));
  CK_CUDA(cudaFree(recv));
  return 0;
}

/* exit_early: rank 2's coordinator is stopped (SIGSTOP) from before its
 * init until 0.5 s later, so its process reaches exit while its connection
 * still waits for the coordinator's challenge; what it left pending (an
 * AllReduce in a group never closed) must still reach the coordinator. */
static int run_exit_early(ctx *c) {
  float *buf;
  CK_CUDA(cudaMalloc((void **)&buf, 1024 * sizeof(float)));
  CK_NCCL(ncclGroupStart());
  CK_NCCL(ncclAllReduce(buf, buf, 1024, ncclFloat, ncclSum, c->comm, c->s));
  if (c->rank == 2) {
    printf("rank 2 calls exit with its group open\n");
    fflush(stdout);
    exit(0);
  }
  CK_NCCL(ncclGroupEnd());
  CK_CUDA(cudaStreamSynchronize(c->s));
  CK_CUDA(cudaFree(buf));
  return 0;
}

static void stop_host_briefly(pid_t host) {
  if (host <= 0 || kill(host, SIGSTOP) != 0) return;
  pid_t p = fork();
  if (p == 0) {
    usleep(500000);
    kill(host, SIGCONT);
    _exit(0);
  }
  if (p < 0) kill(host, SIGCONT);
}

static int rank_main(ctx *c) {
  if (c->idpipe[0] >= 0) {
    /* torchrun-like: rank 0 creates the id (and hosts the coordinator) and
     * hands it to the others. */
    if (c->rank == 0) {
      CK_NCCL(ncclGetUniqueId(&c->ids[0]));
      for (int r = 1; r < c->nranks; r++)
        if (write(c->idpipe[1], &c->ids[0], sizeof c->ids[0]) != (ssize_t)sizeof c->ids[0]) return 1;
    } else if (read(c->idpipe[0], &c->ids[0], sizeof c->ids[0]) != (ssize_t)sizeof c->ids[0]) {
      return 1;
    }
  }
  int ndev = 1;
  CK_CUDA(cudaGetDeviceCount(&ndev));
  CK_CUDA(cudaSetDevice(c->rank % ndev));
  CK_CUDA(cudaStreamCreateWithFlags(&c->s, cudaStreamNonBlocking));
  if (!strcmp(c->scenario, "init_nranks")) {
    /* Rank 3 believes the job has 3 ranks and that it is rank 2. */
    ncclResult_t r = ncclCommInitRank(&c->comm, c->rank == 3 ? 3 : c->nranks, c->ids[0],
                                      c->rank == 3 ? 2 : c->rank);
    if (r == ncclSuccess) ncclCommDestroy(c->comm);
    return r == ncclSuccess ? 0 : 1;
  }
  if (!strcmp(c->scenario, "exit_early") && c->rank == 2) stop_host_briefly(c->host);
  CK_NCCL(ncclCommInitRank(&c->comm, c->nranks, c->ids[0], c->rank));
  int st;
  const char *s = c->scenario;
  if (!strcmp(s, "p2p_mismatch")) st = run_p2p_mismatch(c);
  else if (!strcmp(s, "p2p_exit")) st = run_p2p_exit(c);
  else if (!strcmp(s, "skip") || !strcmp(s, "hang")) st = run_skip(c);
  else if (!strcmp(s, "order")) st = run_order(c);
  else if (!strcmp(s, "coll_count")) st = run_coll_count(c);
  else if (!strcmp(s, "poll_skip")) st = run_poll_skip(c);
  else if (!strcmp(s, "poll_slow")) st = run_poll_slow(c);
  else if (!strcmp(s, "a2a_mixed")) st = run_a2a_mixed(c);
  else if (!strcmp(s, "a2a_vs_sendrecv")) st = run_a2a_vs_sendrecv(c);
  else if (!strcmp(s, "a2a_count")) st = run_a2a_count(c);
  else if (!strcmp(s, "coll_dtype")) st = run_coll_dtype(c);
  else if (!strcmp(s, "host_stuck")) st = run_host_stuck(c);
  else if (!strcmp(s, "loop")) st = run_loop(c);
  else if (!strcmp(s, "rank0_exit")) st = run_rank0_exit(c);
  else if (!strcmp(s, "burst")) st = run_burst(c);
  else if (!strcmp(s, "host_phase")) st = run_host_phase(c);
  else if (!strcmp(s, "group_two_comms")) st = run_group_two_comms(c);
  else if (!strcmp(s, "exit_early")) st = run_exit_early(c);
  else st = run_moe(c);
  CK_NCCL(ncclCommDestroy(c->comm));
  CK_CUDA(cudaStreamDestroy(c->s));
  return st;
}

/* garbage: a hostile local process talks to the coordinator named in the
 * id before the ranks start: wrong magic, a version-2 HELLO carrying the
 * token in clear (refused: protocol 3 never sends it), a frame header that
 * promises 1 MiB and stalls, an oversized one, the version-2 HELLO followed
 * by malformed messages, random bytes. The coordinator must drop them and
 * still find the ranks' deadlock. (Authenticated peers sending junk:
 * xrank_attack.py junk-client.) The record layout is a2acheck's
 * (xrank/xrank_rec.h): bytes 80..127, port at +6, IPv4 at +8, token
 * at +24. */
static int connect_coord(const ncclUniqueId *id) {
  const unsigned char *r = (const unsigned char *)id->internal + 80;
  struct sockaddr_in sin = {.sin_family = AF_INET};
  memcpy(&sin.sin_port, r + 6, 2);
  memcpy(&sin.sin_addr, r + 8, 4);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof sin) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

static void put_hdr(unsigned char *b, unsigned type, unsigned len) {
  unsigned magic = 0x52583241u; /* "A2XR" */
  unsigned short t = (unsigned short)type, f = 0;
  memcpy(b, &magic, 4);
  memcpy(b + 4, &t, 2);
  memcpy(b + 6, &f, 2);
  memcpy(b + 8, &len, 4);
}

static int send_garbage(const ncclUniqueId *id) {
  unsigned char buf[4096];
  int stalled[4], nst = 0;
  for (int attempt = 0; attempt < 6; attempt++) {
    int fd = connect_coord(id);
    if (fd < 0) return 1;
    size_t n = 0;
    switch (attempt) {
    case 0: memset(buf, 0x41, 64); n = 64; break;                  /* bad magic */
    case 1: put_hdr(buf, 1, 96); memset(buf + 12, 7, 96); n = 108; break; /* bad token */
    case 2: put_hdr(buf, 7, 1u << 20); n = 12; break;              /* promise, stall */
    case 3: put_hdr(buf, 7, 0x7fffffffu); n = 12; break;           /* oversized */
    case 4: {                                                      /* v2 HELLO, then junk */
      put_hdr(buf, 1, 96);
      memset(buf + 12, 0, 96);
      memcpy(buf + 12, (const unsigned char *)id->internal + 80 + 24, 16); /* token */
      unsigned v = 1;
      memcpy(buf + 12 + 16, &v, 4);
      put_hdr(buf + 108, 4, 8 + 48);                               /* OPS: n = 5000 */
      unsigned cnt[2] = {5000, 0};
      memcpy(buf + 120, cnt, 8);
      memset(buf + 128, 0xff, 48);
      put_hdr(buf + 176, 7, 24);                                   /* STATE: bad counts */
      memset(buf + 188, 0xff, 24);
      n = 212;
      break;
    }
    default:
      srand(7);
      for (int i = 0; i < 4096; i++) buf[i] = (unsigned char)rand();
      n = 4096;
    }
    if (write(fd, buf, n) != (ssize_t)n) { close(fd); continue; }
    if (attempt == 2 && nst < 4) stalled[nst++] = fd; /* keep it open, silent */
    else close(fd);
  }
  (void)stalled;
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s p2p_mismatch|p2p_exit|skip|order|coll_count|moe STEPS [busy|sleep]|coord_kill|loop STEPS\n",
            argv[0]);
    return 2;
  }
  xh_limits();
  ctx c = {.scenario = argv[1], .steps = 1000, .progress_fd = -1, .idpipe = {-1, -1},
           .gone = {-1, -1}, .host = -1};
  if (!strcmp(c.scenario, "host_phase") && argc > 2) c.variant = argv[2];
  if (!strcmp(c.scenario, "rank0_exit")) {
    setenv("XRANK_RANK0_ID", "1", 1);
    if (pipe(c.gone) != 0) return 1;
    if (argc > 2) c.variant = argv[2];
  }
  if (getenv("XRANK_RANK0_ID") && pipe(c.idpipe) != 0) return 1;
  if (!strcmp(c.scenario, "moe") || !strcmp(c.scenario, "loop") || !strcmp(c.scenario, "burst")) {
    if (argc > 2) c.steps = atoi(argv[2]);
    if (argc > 3) c.variant = argv[3];
  }
  c.nranks = !strcmp(c.scenario, "order") || !strcmp(c.scenario, "burst") ? 2
             : !strcmp(c.scenario, "moe")                                 ? 8
                                                                          : 4;
  pid_t helper = -1;
  int prog[2] = {-1, -1};
  if (!strcmp(c.scenario, "coord_kill")) {
    c.scenario = "moe";
    c.steps = 300;
    if (!getenv("XRANK_FAULT")) setenv("XRANK_FAULT", "kill_coord", 1);
    setenv("XRANK_HELPER_HOST", "1", 1);
  }
  if (!strcmp(c.scenario, "exit_early")) setenv("XRANK_HELPER_HOST", "1", 1);
  if (xh_fault_wanted() && pipe(prog) != 0) return 1;
  c.progress_fd = prog[1];
  if (getenv("XRANK_HELPER_HOST")) {
    /* The id's creator is a separate process that only hosts the
     * coordinator; it hands the id over a pipe and waits to be killed. */
    int idp[2];
    if (pipe(idp) != 0) return 1;
    helper = fork();
    if (helper == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      ncclUniqueId id;
      CK_NCCL(ncclGetUniqueId(&id));
      if (write(idp[1], &id, sizeof id) != (ssize_t)sizeof id) _exit(1);
      for (;;) pause();
    }
    if (read(idp[0], &c.ids[0], sizeof c.ids[0]) != (ssize_t)sizeof c.ids[0]) return 1;
    c.host = helper;
  } else {
    CK_NCCL(ncclGetUniqueId(&c.ids[0]));
    CK_NCCL(ncclGetUniqueId(&c.ids[1]));
    /* XRANK_STRIP_ID=1: the ids look as if made by a process without
     * a2acheck (no coordinator record in their trailing bytes). */
    if (getenv("XRANK_STRIP_ID")) {
      memset(c.ids[0].internal + 80, 0, 48);
      memset(c.ids[1].internal + 80, 0, 48);
    }
  }
  if (!strcmp(c.scenario, "garbage")) {
    if (send_garbage(&c.ids[0]) != 0) { fprintf(stderr, "cannot reach the coordinator\n"); return 1; }
    c.scenario = "order";
    c.nranks = 2;
  }
  pid_t attacker = xh_attack_start(&c.ids[0]);
  if (attacker < 0) return 1;
  const char *wl = getenv("XRANK_WAIT_LIMIT");
  double wait_limit = wl ? atof(wl) : WAIT_LIMIT_S;
  fflush(NULL);
  pid_t pids[8];
  double t0 = now_s();
  for (int r = 0; r < c.nranks; r++) {
    pid_t p = fork();
    if (p < 0) return 1;
    if (p == 0) {
      /* A rank never outlives its launcher (a killed test leaves nothing). */
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() == 1) _exit(1);
      if (xh_rank_enter() != 0) _exit(1);
      c.rank = r;
      if (r != 0 && c.gone[1] >= 0) close(c.gone[1]);
      int rst = rank_main(&c);
      if (!strcmp(c.scenario, "p2p_exit")) _exit(rst); /* no atexit handlers */
      printf("rank %d calls exit after %.3f s\n", r, now_s() - t0);
      fflush(stdout);
      exit(rst);
    }
    pids[r] = p;
  }
  if (c.gone[1] >= 0) close(c.gone[1]);
  int left = c.nranks, ok = 1;
  int done[8] = {0};
  while (left > 0) {
    if (prog[0] >= 0) {
      struct pollfd pf = {.fd = prog[0], .events = POLLIN};
      char b;
      if (poll(&pf, 1, 0) > 0 && read(prog[0], &b, 1) == 1) {
        xh_fault(helper, pids, c.nranks, t0);
        close(prog[0]);
        prog[0] = -1;
      }
    }
    int ws;
    pid_t p = waitpid(-1, &ws, WNOHANG);
    if (p > 0) {
      for (int r = 0; r < c.nranks; r++)
        if (pids[r] == p && !done[r]) {
          done[r] = 1;
          left--;
          if (WIFEXITED(ws)) printf("rank %d exit %d after %.3f s\n", r, WEXITSTATUS(ws), now_s() - t0);
          else printf("rank %d signal %d after %.1f s\n", r, WTERMSIG(ws), now_s() - t0);
        }
      continue;
    }
    if (now_s() - t0 > wait_limit) {
      for (int r = 0; r < c.nranks; r++)
        if (!done[r]) { printf("rank %d still running after %.0f s: killed\n", r, wait_limit); kill(pids[r], SIGKILL); }
      ok = 0;
      while (waitpid(-1, NULL, WNOHANG) > 0) {}
      for (int r = 0; r < c.nranks; r++)
        if (!done[r]) waitpid(pids[r], NULL, 0);
      break;
    }
    usleep(20000);
  }
  if (helper > 0) {
    kill(helper, SIGKILL);
    waitpid(helper, NULL, 0);
  }
  xh_end(attacker);
  fflush(stdout);
  return ok ? 0 : 1;
}
