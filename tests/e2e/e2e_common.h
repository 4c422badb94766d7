/* e2e_common.h - the shared harness of the end-to-end programs of the local
 * (tests/e2e/layout_*.c, group_*.c), stream (stream_*.c) and perf
 * (perf_*.c) checks. Each program runs on the CPU simulator with
 * liba2acheck.so preloaded; its ctest entry (local.cmake, stream.cmake,
 * perf.cmake) asserts on the exit status and then on the JSONL logs.
 * Header-only (static functions): each program is one translation unit.
 *
 * Exit status of a program (and of each rank), what the ctest entries
 * assert on:
 *   0                 the program ran to its end; where it verifies data,
 *                     the data was right. (A call a program is about may
 *                     fail on purpose: E2E_TRY prints its result, it is
 *                     not a failure.)
 *   E2E_FAILED (1)    setup failure: a call that must work failed, a rank
 *                     crashed or was killed, fork/waitpid failed.
 *   2                 usage error (a program's unknown arguments).
 *   E2E_DATA_WRONG (3) some rank's data was wrong: the race did harm.
 *
 * Arguments: argv[1] names the variant ("buggy", the default, or "fixed";
 * some programs have more), tested with e2e_arg_is / e2e_fixed.
 *
 * Ranks: e2e_run_ranks forks one process per rank around one ncclUniqueId
 * made by the parent (see its comment). Threads inside one program are
 * ordered with e2e_barrier, never with sleeps.
 *
 * Kernels: the simulator runs a host function for each registered kernel
 * handle (a2asim_register_kernel). e2e_register_kernels registers the
 * stand-ins below (fill, copy, residual_add, check, compute); a program
 * that launches them passes it to e2e_run_ranks as the per-rank init. */
#ifndef E2E_COMMON_H
#define E2E_COMMON_H

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "a2asim.h"

#define E2E_FAILED 1
#define E2E_DATA_WRONG 3
/* The most ranks e2e_run_ranks forks (the largest program runs 8). */
#define E2E_MAX_RANKS 64

/* ---- checked calls ---------------------------------------------------- */

/* A CUDA / NCCL call that must work: on failure, print where and the code,
 * then exit(E2E_FAILED) (through exit(), so the preloaded tool still writes
 * its logs). */
#define E2E_CUDA(call)                                                             \
  do {                                                                             \
    cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                       \
      fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #call, (int)e_);   \
      exit(E2E_FAILED);                                                            \
    }                                                                              \
  } while (0)
#define E2E_NCCL(call)                                                             \
  do {                                                                             \
    ncclResult_t r_ = (call);                                                      \
    if (r_ != ncclSuccess) {                                                       \
      fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #call, (int)r_);   \
      exit(E2E_FAILED);                                                            \
    }                                                                              \
  } while (0)
/* The call the program is about (it may fail on purpose: NCCL's answer to
 * the bug): print its result, never fail. */
#define E2E_TRY(call)                                                              \
  do {                                                                             \
    int r_ = (int)(call);                                                          \
    printf("%s -> %d\n", #call, r_);                                               \
  } while (0)

/* ---- arguments and verdict --------------------------------------------- */

static inline int e2e_arg_is(int argc, char **argv, const char *what) {
  return argc > 1 && strcmp(argv[1], what) == 0;
}
static inline int e2e_fixed(int argc, char **argv) { return e2e_arg_is(argc, argv, "fixed"); }

/* Prints the verdict of a data-checking program ("DATA OK", "DATA WRONG"
 * or "FAILED", after "what: " when what is not NULL) and returns st, the
 * program's exit status. */
static inline int e2e_verdict(const char *what, int st) {
  const char *v = st == 0 ? "DATA OK" : st == E2E_DATA_WRONG ? "DATA WRONG" : "FAILED";
  if (what) printf("%s: %s\n", what, v);
  else printf("%s\n", v);
  fflush(stdout);
  return st;
}

/* ---- resources --------------------------------------------------------- */

/* A one-rank communicator on the current device. */
static inline ncclComm_t e2e_comm1(void) {
  ncclUniqueId id;
  ncclComm_t c;
  E2E_NCCL(ncclGetUniqueId(&id));
  E2E_NCCL(ncclCommInitRank(&c, 1, id, 0));
  return c;
}

/* A zeroed device buffer; the device synchronize orders the memset before
 * any later use on any stream. */
static inline void *e2e_dalloc(size_t bytes) {
  void *p = NULL;
  E2E_CUDA(cudaMalloc(&p, bytes));
  E2E_CUDA(cudaMemset(p, 0, bytes));
  E2E_CUDA(cudaDeviceSynchronize());
  return p;
}

/* A non-blocking stream: never the legacy default stream, which would be a
 * stream.default-stream finding of its own. */
static inline cudaStream_t e2e_stream(void) {
  cudaStream_t s;
  E2E_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return s;
}

/* An event without timing, what frameworks record for stream edges. */
static inline cudaEvent_t e2e_event(void) {
  cudaEvent_t ev;
  E2E_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  return ev;
}

/* A stream edge: `to` waits for the work submitted to `from` so far
 * (ev recorded on from, then cudaStreamWaitEvent(to, ev)). */
static inline void e2e_edge(cudaEvent_t ev, cudaStream_t from, cudaStream_t to) {
  E2E_CUDA(cudaEventRecord(ev, from));
  E2E_CUDA(cudaStreamWaitEvent(to, ev, 0));
}

/* ---- ranks ------------------------------------------------------------- */

typedef int (*e2e_rank_fn)(int rank, int nranks, ncclComm_t comm, void *arg);

/* Runs fn in nranks (1..E2E_MAX_RANKS) forked processes sharing one
 * ncclUniqueId made by the parent. Each child binds device
 * rank % device_count, calls init (if not NULL; e.g. e2e_register_kernels),
 * creates its communicator with ncclCommInitRank, runs fn, destroys the
 * communicator and exits with fn's status through exit(), so the preloaded
 * tool writes its logs. The parent waits for every child and returns
 * E2E_DATA_WRONG if some rank returned it and none failed otherwise,
 * E2E_FAILED if any rank exited with another non-zero status or died (or
 * fork/waitpid failed), else 0. If a fork fails, the children already
 * started are killed (they would wait for the missing rank forever). */
static inline int e2e_run_ranks(int nranks, void (*init)(void), e2e_rank_fn fn, void *arg) {
  if (nranks < 1 || nranks > E2E_MAX_RANKS) {
    fprintf(stderr, "e2e_run_ranks: %d ranks (1..%d)\n", nranks, E2E_MAX_RANKS);
    return E2E_FAILED;
  }
  ncclUniqueId id;
  E2E_NCCL(ncclGetUniqueId(&id));
  fflush(NULL); /* nothing buffered is written twice by the children */
  pid_t pids[E2E_MAX_RANKS];
  for (int r = 0; r < nranks; r++) {
    pid_t p = fork();
    if (p < 0) {
      perror("fork");
      for (int k = 0; k < r; k++) kill(pids[k], SIGKILL);
      for (int k = 0; k < r; k++) waitpid(pids[k], NULL, 0);
      return E2E_FAILED;
    }
    if (p == 0) {
      int ndev = 1;
      E2E_CUDA(cudaGetDeviceCount(&ndev));
      E2E_CUDA(cudaSetDevice(r % ndev));
      if (init) init();
      ncclComm_t comm;
      E2E_NCCL(ncclCommInitRank(&comm, nranks, id, r));
      int st = fn(r, nranks, comm, arg);
      E2E_NCCL(ncclCommDestroy(comm));
      exit(st);
    }
    pids[r] = p;
  }
  int result = 0;
  for (int r = 0; r < nranks; r++) {
    int ws;
    if (waitpid(pids[r], &ws, 0) < 0) {
      perror("waitpid");
      result = E2E_FAILED;
      continue;
    }
    int st = WIFEXITED(ws) ? WEXITSTATUS(ws) : E2E_FAILED;
    if (!WIFEXITED(ws)) fprintf(stderr, "rank %d died (status 0x%x)\n", r, ws);
    else if (st != 0) fprintf(stderr, "rank %d exited with %d\n", r, st);
    if (st == E2E_DATA_WRONG && result == 0) result = E2E_DATA_WRONG;
    else if (st != 0 && st != E2E_DATA_WRONG) result = E2E_FAILED;
  }
  return result;
}

/* ---- threads ----------------------------------------------------------- */

/* A reusable barrier for n threads. */
typedef struct e2e_barrier {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int n, waiting;
  unsigned gen;
} e2e_barrier;

static inline void e2e_barrier_init(e2e_barrier *b, int n) {
  pthread_mutex_init(&b->mu, NULL);
  pthread_cond_init(&b->cv, NULL);
  b->n = n;
  b->waiting = 0;
  b->gen = 0;
}

static inline void e2e_barrier_wait(e2e_barrier *b) {
  pthread_mutex_lock(&b->mu);
  unsigned gen = b->gen;
  if (++b->waiting == b->n) {
    b->waiting = 0;
    b->gen++;
    pthread_cond_broadcast(&b->cv);
  } else {
    while (gen == b->gen) pthread_cond_wait(&b->cv, &b->mu);
  }
  pthread_mutex_unlock(&b->mu);
}

/* ---- simulator kernels ------------------------------------------------- */
/* Host stand-ins: the empty functions are only handles passed to
 * cudaLaunchKernel; the simulator runs the matching *_impl with the
 * launch's argument array. The registered names are what a2acheck sees
 * (cudaFuncGetName): none looks like a copy kernel except "copy", which is
 * only launched where a copy is meant (layout.hidden-copy judges copies by
 * name and pointer parameters). */

/* fill(float *p, int n, float base): p[i] = base + i */
static void e2e_k_fill(void) {}
static void e2e_fill_impl(void **args, const a2asim_launch_info *li) {
  (void)li;
  float *p = *(float **)args[0];
  int n = *(int *)args[1];
  float base = *(float *)args[2];
  for (int i = 0; i < n; i++) p[i] = base + (float)i;
}

/* copy(float *dst, const float *src, int n) */
static void e2e_k_copy(void) {}
static void e2e_copy_impl(void **args, const a2asim_launch_info *li) {
  (void)li;
  float *dst = *(float **)args[0];
  const float *src = *(const float **)args[1];
  int n = *(int *)args[2];
  for (int i = 0; i < n; i++) dst[i] = src[i];
}

/* residual_add(float *dst, const float *src, int n, float c):
 * dst[i] = src[i] + c (a residual connection reading src; not named like a
 * copy kernel, which layout.hidden-copy would take for the producer of its
 * source) */
static void e2e_k_add(void) {}
static void e2e_add_impl(void **args, const a2asim_launch_info *li) {
  (void)li;
  float *dst = *(float **)args[0];
  const float *src = *(const float **)args[1];
  int n = *(int *)args[2];
  float c = *(float *)args[3];
  for (int i = 0; i < n; i++) dst[i] = src[i] + c;
}

/* check(const float *p, int n, float base, int *errors): counts
 * p[i] != base + i into *errors (device or pinned memory) */
static void e2e_k_check(void) {}
static void e2e_check_impl(void **args, const a2asim_launch_info *li) {
  (void)li;
  const float *p = *(const float **)args[0];
  int n = *(int *)args[1];
  float base = *(float *)args[2];
  int *errors = *(int **)args[3];
  for (int i = 0; i < n; i++)
    if (p[i] != base + (float)i) (*errors)++;
}

/* compute(float *p, int n, int us): p[i] += 1, taking `us` microseconds of
 * simulated GPU time (the stream is busy meanwhile). */
static void e2e_k_compute(void) {}
static void e2e_compute_impl(void **args, const a2asim_launch_info *li) {
  (void)li;
  float *p = *(float **)args[0];
  int n = *(int *)args[1];
  int us = *(int *)args[2];
  for (int i = 0; i < n; i++) p[i] += 1.0f;
  if (us > 0) {
    struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000L};
    nanosleep(&ts, NULL);
  }
}

/* Registers the five stand-ins with the simulator of this process; exits
 * with E2E_FAILED if it refuses. Call it in each rank (e2e_run_ranks' init)
 * or before the first launch of a single-process program. */
static inline void e2e_register_kernels(void) {
  static const size_t fill_p[] = {sizeof(float *), sizeof(int), sizeof(float)};
  static const size_t copy_p[] = {sizeof(float *), sizeof(float *), sizeof(int)};
  static const size_t add_p[] = {sizeof(float *), sizeof(float *), sizeof(int), sizeof(float)};
  static const size_t check_p[] = {sizeof(float *), sizeof(int), sizeof(float), sizeof(int *)};
  static const size_t compute_p[] = {sizeof(float *), sizeof(int), sizeof(int)};
  if (a2asim_register_kernel((const void *)e2e_k_fill, e2e_fill_impl, "fill", 3, fill_p) ||
      a2asim_register_kernel((const void *)e2e_k_copy, e2e_copy_impl, "copy", 3, copy_p) ||
      a2asim_register_kernel((const void *)e2e_k_check, e2e_check_impl, "check", 4, check_p) ||
      a2asim_register_kernel((const void *)e2e_k_add, e2e_add_impl, "residual_add", 4, add_p) ||
      a2asim_register_kernel((const void *)e2e_k_compute, e2e_compute_impl, "compute", 3,
                             compute_p)) {
    fprintf(stderr, "a2asim_register_kernel failed\n");
    exit(E2E_FAILED);
  }
}

/* Launchers: one block of one thread (the stand-in does the whole range);
 * a failed launch is a setup failure. */
static inline void e2e_launch(const void *k, void **args, cudaStream_t s) {
  const dim3 one = {1, 1, 1};
  E2E_CUDA(cudaLaunchKernel(k, one, one, args, 0, s));
}
static inline void e2e_fill(cudaStream_t s, float *p, int n, float base) {
  void *args[] = {&p, &n, &base};
  e2e_launch((const void *)e2e_k_fill, args, s);
}
static inline void e2e_copy(cudaStream_t s, float *dst, const float *src, int n) {
  void *args[] = {&dst, &src, &n};
  e2e_launch((const void *)e2e_k_copy, args, s);
}
static inline void e2e_add(cudaStream_t s, float *dst, const float *src, int n, float c) {
  void *args[] = {&dst, &src, &n, &c};
  e2e_launch((const void *)e2e_k_add, args, s);
}
static inline void e2e_check(cudaStream_t s, const float *p, int n, float base, int *errors) {
  void *args[] = {&p, &n, &base, &errors};
  e2e_launch((const void *)e2e_k_check, args, s);
}
static inline void e2e_compute(cudaStream_t s, float *p, int n, int us) {
  void *args[] = {&p, &n, &us};
  e2e_launch((const void *)e2e_k_compute, args, s);
}

#endif
