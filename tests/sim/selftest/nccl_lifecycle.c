/* nccl_lifecycle.c - communicator creation paths of the simulator's NCCL
 * (ranks as threads of this process).
 *
 *   nccl_lifecycle <nonblocking|dupgpu|shrink|scalable|misc|memalloc|singlethread|singlethread_legacy|cost|timeline>
 *
 *   nonblocking  config.blocking = 0: ncclInProgress until every rank came,
 *                calls on the comm meanwhile are ncclInvalidArgument, then
 *                ncclCommGetAsyncError turns ncclSuccess and the comm works;
 *                a non-blocking split: *newcomm NULL until the child's job
 *                ends, the parent ncclInProgress meanwhile (a second split
 *                refused), then the child works; non-blocking finalize
 *   dupgpu       two ranks on one device fail with ncclInvalidUsage and
 *                "Duplicate GPU detected"; InitAll with a repeated device
 *   shrink       4 ranks, rank 3 excluded: 3-rank comm that works
 *   scalable     ncclCommInitRankScalable with two ids
 *   misc         bad init arguments and config, unique id layout
 *   memalloc     ncclMemAlloc/ncclMemFree give device memory
 *   cost         the cost model: durations follow A2ASIM_BW_GBPS
 *   timeline     the cost model across ranks: a wait for a peer follows the
 *                peer's device timeline, not the host's wake-ups
 *   singlethread one thread drives 4 devices: InitAll + grouped AllReduce
 *   singlethread_legacy  the same on the legacy default streams
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nccl_harness.h"

static ncclUniqueId g_id, g_id2;
static pthread_barrier_t g_bar;
static int g_nranks;

static int allreduce_check(ncclComm_t comm, int rank, int n, int members) {
  int fails = 0;
  cudaStream_t s;
  int32_t *d, v = rank + 1;
  CUDA_OK(cudaStreamCreate(&s));
  CUDA_OK(cudaMalloc((void **)&d, 4));
  CUDA_OK(cudaMemcpy(d, &v, 4, cudaMemcpyHostToDevice));
  NCCL_OK(ncclAllReduce(d, d, 1, ncclInt32, ncclSum, comm, s));
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaMemcpy(&v, d, 4, cudaMemcpyDeviceToHost));
  if (v != members * (members + 1) / 2) FAILF("rank %d: allreduce %d, want %d", rank, v, members * (members + 1) / 2);
  CUDA_OK(cudaFree(d));
  CUDA_OK(cudaStreamDestroy(s));
  (void)n;
  return fails;
}

static ncclResult_t wait_ready(ncclComm_t c) {
  ncclResult_t st = ncclInProgress;
  for (int i = 0; i < 5000 && st == ncclInProgress; i++) {
    if (ncclCommGetAsyncError(c, &st) != ncclSuccess) return ncclInternalError;
    struct timespec ts = {0, 1000000};
    if (st == ncclInProgress) nanosleep(&ts, NULL);
  }
  return st;
}

static int nonblocking_rank(int rank) {
  int fails = 0;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  ncclComm_t comm = NULL;
  if (rank == 1) pthread_barrier_wait(&g_bar);   /* rank 1 comes late */
  cudaSetDevice(rank);
  EXPECT_RC(ncclCommInitRankConfig(&comm, 2, g_id, rank, &cfg), ncclInProgress);
  if (!comm) { FAILF("no comm handle"); return fails; }
  if (rank == 0) {
    ncclResult_t st;
    EXPECT_RC(ncclCommGetAsyncError(comm, &st), ncclSuccess);
    if (st != ncclInProgress) FAILF("async state %d before rank 1 came, want ncclInProgress", st);
    int cnt;
    EXPECT_RC(ncclCommCount(comm, &cnt), ncclInvalidArgument);
    EXPECT_RC(ncclAllReduce(&cnt, &cnt, 1, ncclInt32, ncclSum, comm, NULL), ncclInvalidArgument);
    pthread_barrier_wait(&g_bar);
  }
  EXPECT_RC(wait_ready(comm), ncclSuccess);
  fails += allreduce_check(comm, rank, 2, 2);
  /* an explicit group of a non-blocking comm returns ncclInProgress */
  int32_t *d;
  CUDA_OK(cudaMalloc((void **)&d, 4));
  EXPECT_RC(ncclGroupStart(), ncclSuccess);
  EXPECT_RC(ncclAllReduce(d, d, 1, ncclInt32, ncclSum, comm, NULL), ncclSuccess);
  EXPECT_RC(ncclGroupEnd(), ncclInProgress);
  EXPECT_RC(wait_ready(comm), ncclSuccess);
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaFree(d));
  /* A non-blocking split (NCCL init.cc: "*newcomm should be NCCL_COMM_NULL
   * until comm split fully complete"; the job is the parent's group job,
   * so the parent reads ncclInProgress until it ends). Rank 1 comes late. */
  ncclComm_t child = (ncclComm_t)(uintptr_t)1, other = (ncclComm_t)(uintptr_t)1;
  if (rank == 1) pthread_barrier_wait(&g_bar);
  EXPECT_RC(ncclCommSplit(comm, 0, rank, &child, &cfg), ncclInProgress);
  if (rank == 0) {
    if (__atomic_load_n(&child, __ATOMIC_ACQUIRE) != NULL) FAILF("child published before its job ended");
    ncclResult_t st;
    EXPECT_RC(ncclCommGetAsyncError(comm, &st), ncclSuccess);
    if (st != ncclInProgress) FAILF("parent async state %d during the split, want ncclInProgress", st);
    EXPECT_RC(ncclCommSplit(comm, 0, rank, &other, &cfg), ncclInvalidArgument);
    if (other != (ncclComm_t)(uintptr_t)1) FAILF("refused split wrote *newcomm");
    pthread_barrier_wait(&g_bar);
  }
  EXPECT_RC(wait_ready(comm), ncclSuccess);
  for (int i = 0; i < 10000 && !__atomic_load_n(&child, __ATOMIC_ACQUIRE); i++) {
    struct timespec ts = {0, 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  child = __atomic_load_n(&child, __ATOMIC_ACQUIRE);
  if (!child) {
    FAILF("the split's child never published");
  } else {
    EXPECT_RC(wait_ready(child), ncclSuccess);
    fails += allreduce_check(child, rank, 2, 2);
    ncclResult_t cf = ncclCommFinalize(child);
    if (cf != ncclInProgress && cf != ncclSuccess) FAILF("child finalize: %d", cf);
    EXPECT_RC(wait_ready(child), ncclSuccess);
    EXPECT_RC(ncclCommDestroy(child), ncclSuccess);
  }
  ncclResult_t f = ncclCommFinalize(comm);
  if (f != ncclInProgress && f != ncclSuccess) FAILF("finalize: %d", f);
  EXPECT_RC(wait_ready(comm), ncclSuccess);
  EXPECT_RC(ncclCommDestroy(comm), ncclSuccess);
  return fails;
}

static int dup_rank(int rank) {
  int fails = 0;
  ncclComm_t comm = (ncclComm_t)(uintptr_t)1;
  cudaSetDevice(0);                               /* both ranks on device 0 */
  EXPECT_RC(ncclCommInitRank(&comm, 2, g_id, rank), ncclInvalidUsage);
  if (comm != NULL) FAILF("failed init left *comm = %p", (void *)comm);
  pthread_barrier_wait(&g_bar);                   /* both WARNed before the check */
  if (!strstr(ncclGetLastError(NULL), "Duplicate GPU detected"))
    FAILF("last error '%s'", ncclGetLastError(NULL));
  return fails;
}

static int shrink_rank(int rank) {
  int fails = 0;
  ncclComm_t comm, small = NULL;
  cudaSetDevice(rank);
  NCCL_OK(ncclCommInitRank(&comm, 4, g_id, rank));
  if (rank != 3) {
    int excl[] = {3};
    NCCL_OK(ncclCommShrink(comm, excl, 1, &small, NULL, NCCL_SHRINK_DEFAULT));
    int cnt, me;
    NCCL_OK(ncclCommCount(small, &cnt));
    NCCL_OK(ncclCommUserRank(small, &me));
    if (cnt != 3 || me != rank) FAILF("shrink: count %d rank %d", cnt, me);
    fails += allreduce_check(small, me, 3, 3);
    NCCL_OK(ncclCommDestroy(small));
  }
  NCCL_OK(ncclCommDestroy(comm));
  return fails;
}

static int scalable_rank(int rank) {
  int fails = 0;
  ncclUniqueId ids[2] = {g_id, g_id2};
  ncclComm_t comm;
  cudaSetDevice(rank);
  NCCL_OK(ncclCommInitRankScalable(&comm, g_nranks, rank, 2, ids, NULL));
  fails += allreduce_check(comm, rank, g_nranks, g_nranks);
  NCCL_OK(ncclCommDestroy(comm));
  return fails;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* Cost model: with A2ASIM_BW_GBPS=0.1 (100 bytes/us) an AllReduce of S
 * bytes on 2 ranks costs 2(n-1)/n S = S, a grouped all-to-all of C bytes per
 * peer costs n C (every send, the self copy included). Sleeps are lower
 * bounds; the upper bound only guards against gross overcharging. */
static int cost_rank(int rank) {
  int fails = 0;
  ncclComm_t comm;
  cudaStream_t s;
  char *d;
  const size_t S = 2 << 20, C = 1 << 20;
  CUDA_OK(cudaSetDevice(rank));
  NCCL_OK(ncclCommInitRank(&comm, 2, g_id, rank));
  CUDA_OK(cudaStreamCreate(&s));
  CUDA_OK(cudaMalloc((void **)&d, 2 * S));
  pthread_barrier_wait(&g_bar);
  double t0 = now_ms();
  NCCL_OK(ncclAllReduce(d, d, S / 4, ncclFloat32, ncclSum, comm, s));
  CUDA_OK(cudaStreamSynchronize(s));
  double t1 = now_ms();
  NCCL_OK(ncclGroupStart());
  for (int p = 0; p < 2; p++) {
    NCCL_OK(ncclSend(d + p * C, C, ncclInt8, p, comm, s));
    NCCL_OK(ncclRecv(d + S + p * C, C, ncclInt8, p, comm, s));
  }
  NCCL_OK(ncclGroupEnd());
  CUDA_OK(cudaStreamSynchronize(s));
  double t2 = now_ms();
  double want_ar = S / 100e3, want_a2a = 2 * C / 100e3;   /* ms */
  if (t1 - t0 < 0.9 * want_ar || t1 - t0 > 2.5 * want_ar + 300)
    FAILF("rank %d AllReduce took %.1f ms, model says %.1f", rank, t1 - t0, want_ar);
  if (t2 - t1 < 0.9 * want_a2a || t2 - t1 > 2.5 * want_a2a + 300)
    FAILF("rank %d all-to-all took %.1f ms, model says %.1f", rank, t2 - t1, want_a2a);
  CUDA_OK(cudaFree(d));
  CUDA_OK(cudaStreamDestroy(s));
  NCCL_OK(ncclCommDestroy(comm));
  return fails;
}

/* Cost model across ranks (A2ASIM_LAUNCH_US=2000, no bandwidth cost).
 * In every round both ranks' streams hold on a gate until both have
 * queued their work; rank 1 is late - TL_N kernels before its NCCL item -
 * and rank 0 does nothing before its own. Rank 0's item can only finish
 * when rank 1's has done its part, which on rank 1's timeline is
 * (TL_N + 1) x cost after its record f0; rank 0 records e1 after its item.
 * With the waits following the timelines e1 - f0 is exactly that, however
 * late any worker woke; each round exercises one kind of wait:
 *   1  0 -> 1, one step: the send waits for the receiver's connection
 *   2  1 -> 0, one step: the receive waits for the connection and data
 *   3  1 -> 0 again (connected): only the posted step's time
 *   4  0 -> 1, 1 MiB = 16 steps of 64 KiB: past the 8-slot FIFO the send
 *      waits for the receiver to consume (connected) */
enum { TL_N = 10, TL_COST_US = 2000, TL_ROUNDS = 4 };
static atomic_int tl_gate[TL_ROUNDS];
static cudaEvent_t tl_f0[TL_ROUNDS], tl_e1[TL_ROUNDS];
static void tl_gate_fn(void *p) {
  struct timespec ts = {0, 1000000};
  while (!atomic_load((atomic_int *)p)) nanosleep(&ts, NULL);
}
static void tl_kernel(void) {}

static int timeline_rank(int rank) {
  int fails = 0;
  ncclComm_t comm;
  cudaStream_t s;
  char *d;
  const size_t big = 1 << 20;
  CUDA_OK(cudaSetDevice(rank));
  NCCL_OK(ncclCommInitRank(&comm, 2, g_id, rank));
  CUDA_OK(cudaStreamCreate(&s));
  CUDA_OK(cudaMalloc((void **)&d, big));
  dim3 g = {1, 1, 1};
  for (int r = 0; r < TL_ROUNDS; r++) {
    CUDA_OK(cudaLaunchHostFunc(s, tl_gate_fn, &tl_gate[r]));
    if (rank == 1) {
      CUDA_OK(cudaEventCreate(&tl_f0[r]));
      CUDA_OK(cudaEventRecord(tl_f0[r], s));
      for (int i = 0; i < TL_N; i++) CUDA_OK(cudaLaunchKernel((const void *)tl_kernel, g, g, NULL, 0, s));
    }
    size_t bytes = r == 3 ? big : 4096;
    if ((r == 0 || r == 3) == (rank == 0)) NCCL_OK(ncclSend(d, bytes, ncclInt8, 1 - rank, comm, s));
    else NCCL_OK(ncclRecv(d, bytes, ncclInt8, 1 - rank, comm, s));
    if (rank == 0) {
      CUDA_OK(cudaEventCreate(&tl_e1[r]));
      CUDA_OK(cudaEventRecord(tl_e1[r], s));
    }
    pthread_barrier_wait(&g_bar);   /* both queued */
    if (rank == 0) atomic_store(&tl_gate[r], 1);
    CUDA_OK(cudaStreamSynchronize(s));
    pthread_barrier_wait(&g_bar);   /* both done */
    if (rank == 0) {
      float ms = -1;
      CUDA_OK(cudaEventElapsedTime(&ms, tl_f0[r], tl_e1[r]));
      double want = (TL_N + 1) * TL_COST_US / 1000.0;
      if (ms < want - 0.005 || ms > want + 0.005)
        FAILF("round %d: rank 0's item ends %.4f ms after rank 1's f0, the timelines say %.4f", r + 1,
              ms, want);
    }
  }
  CUDA_OK(cudaFree(d));
  CUDA_OK(cudaStreamDestroy(s));
  NCCL_OK(ncclCommDestroy(comm));
  return fails;
}

struct tctx { int (*fn)(int); int rank, fails; };
static void *trampoline(void *p) {
  struct tctx *c = p;
  c->fails = c->fn(c->rank);
  return NULL;
}

/* NCCL's "one thread, several devices" pattern: ncclCommInitAll, a stream
 * per device, one group of AllReduces over all communicators. With
 * legacy=1 every rank uses its device's legacy default stream (NULL):
 * ncclGroupEnd must enqueue each comm's work with that comm's device
 * current, or the ranks would serialise on one stream and deadlock. */
static int single_thread(int n, int legacy) {
  int fails = 0;
  ncclComm_t comms[8];
  cudaStream_t s[8];
  int32_t *d[8];
  NCCL_OK(ncclCommInitAll(comms, n, NULL));
  for (int i = 0; i < n; i++) {
    CUDA_OK(cudaSetDevice(i));
    s[i] = NULL;
    if (!legacy) CUDA_OK(cudaStreamCreate(&s[i]));
    CUDA_OK(cudaMalloc((void **)&d[i], 64 * sizeof(int32_t)));
    int32_t h[64];
    for (int k = 0; k < 64; k++) h[k] = i * k;
    CUDA_OK(cudaMemcpy(d[i], h, sizeof h, cudaMemcpyHostToDevice));
  }
  NCCL_OK(ncclGroupStart());
  for (int i = 0; i < n; i++) NCCL_OK(ncclAllReduce(d[i], d[i], 64, ncclInt32, ncclSum, comms[i], s[i]));
  NCCL_OK(ncclGroupEnd());
  for (int i = 0; i < n; i++) {
    CUDA_OK(cudaSetDevice(i));
    if (legacy) CUDA_OK(cudaDeviceSynchronize());
    else CUDA_OK(cudaStreamSynchronize(s[i]));
    int32_t h[64];
    CUDA_OK(cudaMemcpy(h, d[i], sizeof h, cudaMemcpyDeviceToHost));
    for (int k = 0; k < 64; k++)
      if (h[k] != k * n * (n - 1) / 2) { FAILF("dev %d [%d] = %d", i, k, h[k]); break; }
    CUDA_OK(cudaFree(d[i]));
    if (!legacy) CUDA_OK(cudaStreamDestroy(s[i]));
    NCCL_OK(ncclCommDestroy(comms[i]));
  }
  return fails;
}

static int run_threads(int n, int (*fn)(int)) {
  int fails = 0;
  pthread_t t[8];
  struct tctx c[8];
  g_nranks = n;
  pthread_barrier_init(&g_bar, NULL, (unsigned)n);
  for (int r = 0; r < n; r++) {
    c[r] = (struct tctx){fn, r, 0};
    pthread_create(&t[r], NULL, trampoline, &c[r]);
  }
  for (int r = 0; r < n; r++) {
    pthread_join(t[r], NULL);
    fails += c[r].fails;
  }
  pthread_barrier_destroy(&g_bar);
  return fails;
}

static int misc(void) {
  int fails = 0;
  ncclComm_t c = NULL;
  ncclUniqueId id;
  EXPECT_RC(ncclGetUniqueId(NULL), ncclInvalidArgument);
  EXPECT_RC(ncclCommInitRank(NULL, 2, g_id, 0), ncclInvalidArgument);
  EXPECT_RC(ncclCommInitRank(&c, 2, g_id, 2), ncclInvalidArgument);
  EXPECT_RC(ncclCommInitRank(&c, 0, g_id, 0), ncclInvalidArgument);
  ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
  bad.magic = 0;
  EXPECT_RC(ncclCommInitRankConfig(&c, 1, g_id, 0, &bad), ncclInvalidArgument);
  EXPECT_RC(ncclCommDestroy(NULL), ncclSuccess);
  EXPECT_RC(ncclCommAbort(NULL), ncclSuccess);
  int devs[2] = {1, 1};
  ncclComm_t two[2];
  EXPECT_RC(ncclCommInitAll(two, 2, devs), ncclInvalidUsage);
  devs[1] = 99;
  EXPECT_RC(ncclCommInitAll(two, 2, devs), ncclInvalidArgument);
  /* id layout: magic, then sockaddr_in 127.0.0.1:port, then zeros */
  NCCL_OK(ncclGetUniqueId(&id));
  struct sockaddr_in sin;
  memcpy(&sin, id.internal + 8, sizeof sin);
  if (sin.sin_family != AF_INET || sin.sin_addr.s_addr != htonl(INADDR_LOOPBACK) || sin.sin_port == 0)
    FAILF("unique id address: family %d addr %x port %d", sin.sin_family, ntohl(sin.sin_addr.s_addr), ntohs(sin.sin_port));
  for (size_t i = 8 + sizeof sin; i < sizeof id.internal; i++)
    if (id.internal[i]) { FAILF("unique id byte %zu not zero", i); break; }
  /* trailing bytes written by someone else: still a valid id for all ranks */
  memset(id.internal + 64, 0x5a, 64);
  cudaSetDevice(0);
  NCCL_OK(ncclCommInitRank(&c, 1, id, 0));
  fails += allreduce_check(c, 0, 1, 1);
  NCCL_OK(ncclCommDestroy(c));
  return fails;
}

/* ncclMemAlloc gives device memory of the current device. */
static int memalloc(void) {
  int fails = 0;
  void *m = NULL;
  EXPECT_RC(ncclMemAlloc(NULL, 16), ncclInvalidArgument);
  CUDA_OK(cudaSetDevice(2));
  NCCL_OK(ncclMemAlloc(&m, 1 << 20));
  struct cudaPointerAttributes at;
  CUDA_OK(cudaPointerGetAttributes(&at, m));
  if (at.type != cudaMemoryTypeDevice || at.device != 2) FAILF("ncclMemAlloc memory: type %d device %d", at.type, at.device);
  NCCL_OK(ncclMemFree(m));
  return fails;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <nonblocking|dupgpu|shrink|scalable|misc|memalloc|singlethread|singlethread_legacy|cost|timeline>\n", argv[0]);
    return 2;
  }
  int fails = 0;
  if (!strcmp(argv[1], "cost")) setenv("A2ASIM_BW_GBPS", "0.1", 1);   /* before the runtime starts */
  if (!strcmp(argv[1], "timeline")) setenv("A2ASIM_LAUNCH_US", "2000", 1);   /* TL_COST_US */
  if (ncclGetUniqueId(&g_id) != ncclSuccess || ncclGetUniqueId(&g_id2) != ncclSuccess) return 1;
  if (!strcmp(argv[1], "nonblocking")) fails = run_threads(2, nonblocking_rank);
  else if (!strcmp(argv[1], "dupgpu")) fails = run_threads(2, dup_rank);
  else if (!strcmp(argv[1], "shrink")) fails = run_threads(4, shrink_rank);
  else if (!strcmp(argv[1], "scalable")) fails = run_threads(3, scalable_rank);
  else if (!strcmp(argv[1], "misc")) fails = misc();
  else if (!strcmp(argv[1], "singlethread")) fails = single_thread(4, 0);
  else if (!strcmp(argv[1], "cost")) fails = run_threads(2, cost_rank);
  else if (!strcmp(argv[1], "timeline")) fails = run_threads(2, timeline_rank);
  else if (!strcmp(argv[1], "singlethread_legacy")) fails = single_thread(4, 1);
  else if (!strcmp(argv[1], "memalloc")) fails = memalloc();
  else { fprintf(stderr, "unknown test %s\n", argv[1]); return 2; }
  printf("nccl_lifecycle %s: %s\n", argv[1], fails ? "FAILED" : "ok");
  return fails ? 1 : 0;
}
