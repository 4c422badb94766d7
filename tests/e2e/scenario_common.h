/* scenario_common.h - scaffolding of the QA scenario programs
 * (tests/e2e/scenario_*.c, run by tests/e2e/scenarios.cmake).
 *
 * The scenarios are written the way users (or PyTorch's ProcessGroupNCCL)
 * write CUDA + NCCL code, against the public headers only; a2asim.h is used
 * only to give the "kernels" a host implementation on the simulator and to
 * delay a stream (a2asim_stream_set_delay) so that a missing ordering edge
 * shows as wrong data.
 *
 * Conventions every scenario follows:
 *  - ranks are forked processes around one ncclUniqueId made by the parent
 *    (the launcher pattern; some scenarios vary it: rank 0 makes the id, the
 *    launcher is rank 0, ranks are exec'd programs), or threads of one
 *    process;
 *  - every rank verifies its own data and stores a result word (a checksum
 *    or an error count) in shared memory; only the parent prints, in rank
 *    order, so stdout is deterministic and can be diffed between a run with
 *    and a run without liba2acheck.so;
 *  - exit status of the program: 0 every rank ended with status 0; 66 some
 *    rank ended with 66 (a2acheck's deadlock exit) and the others with 0 or
 *    66; 3 some rank's data was wrong; 1 anything else (setup failure, crash,
 *    a rank still running after SC_WAIT_LIMIT_S and killed).
 *  - the parent prints "rank R exit S" per rank; the wall time of each rank
 *    goes to stderr (not diffed).
 * Header-only (static functions): each program is one translation unit. */
#ifndef SCENARIO_COMMON_H
#define SCENARIO_COMMON_H

#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "a2asim.h"
#include "e2e_common.h"

#define SC_DATA_WRONG 3
#define SC_WAIT_LIMIT_S 40
#define SC_MAX_RANKS 16

/* The rank that prints a failing call (set by the launchers). */
static __thread int sc_rank = -1;

#define SC_CUDA(call)                                                                     \
  do {                                                                                    \
    cudaError_t e_ = (call);                                                              \
    if (e_ != cudaSuccess) {                                                              \
      fprintf(stderr, "rank %d: %s:%d: %s -> %d (%s)\n", sc_rank, __FILE__, __LINE__,     \
              #call, (int)e_, cudaGetErrorString(e_));                                    \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)
#define SC_NCCL(call)                                                                     \
  do {                                                                                    \
    ncclResult_t r_ = (call);                                                             \
    if (r_ != ncclSuccess) {                                                              \
      fprintf(stderr, "rank %d: %s:%d: %s -> %d (%s)\n", sc_rank, __FILE__, __LINE__,     \
              #call, (int)r_, ncclGetErrorString(r_));                                    \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

static inline double sc_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Host computation outside CUDA (a rank that is "computing"): spins for
 * seconds without any CUDA or NCCL call. */
static inline double sc_busy(double seconds) {
  double t0 = sc_now(), x = 0;
  while (sc_now() - t0 < seconds)
    for (int i = 0; i < 10000; i++) x += (double)i * 1e-9;
  return x;
}

/* ---- kernels: host stand-ins registered with the simulator ----
 * The kernel symbols are only handles (like __global__ stubs). */
static void sc_k_fill(void) {}
static void sc_k_axpy(void) {}
static void sc_k_copy(void) {}

/* fill(float *p, long n, float base, float step): p[i] = base + i*step */
static void sc_fill_impl(void **a, const a2asim_launch_info *li) {
  (void)li;
  float *p = *(float **)a[0];
  long n = *(long *)a[1];
  float base = *(float *)a[2], step = *(float *)a[3];
  for (long i = 0; i < n; i++) p[i] = base + (float)i * step;
}
/* axpy(float *y, const float *x, long n, float alpha): y[i] += alpha*x[i] */
static void sc_axpy_impl(void **a, const a2asim_launch_info *li) {
  (void)li;
  float *y = *(float **)a[0];
  const float *x = *(const float **)a[1];
  long n = *(long *)a[2];
  float alpha = *(float *)a[3];
  for (long i = 0; i < n; i++) y[i] += alpha * x[i];
}
/* copy(float *dst, const float *src, long n) */
static void sc_copy_impl(void **a, const a2asim_launch_info *li) {
  (void)li;
  float *d = *(float **)a[0];
  const float *s = *(const float **)a[1];
  long n = *(long *)a[2];
  for (long i = 0; i < n; i++) d[i] = s[i];
}

static inline void sc_register_kernels(void) {
  static const size_t fill_p[] = {sizeof(float *), sizeof(long), sizeof(float), sizeof(float)};
  static const size_t axpy_p[] = {sizeof(float *), sizeof(float *), sizeof(long), sizeof(float)};
  static const size_t copy_p[] = {sizeof(float *), sizeof(float *), sizeof(long)};
  if (a2asim_register_kernel((const void *)sc_k_fill, sc_fill_impl, "fill_kernel", 4, fill_p) ||
      a2asim_register_kernel((const void *)sc_k_axpy, sc_axpy_impl, "axpy_kernel", 4, axpy_p) ||
      a2asim_register_kernel((const void *)sc_k_copy, sc_copy_impl, "copy_kernel", 3, copy_p)) {
    fprintf(stderr, "a2asim_register_kernel failed\n");
    exit(1);
  }
}

static inline void sc_fill(float *p, long n, float base, float step, cudaStream_t s) {
  void *args[] = {&p, &n, &base, &step};
  SC_CUDA(cudaLaunchKernel((const void *)sc_k_fill, (dim3){1, 1, 1}, (dim3){256, 1, 1}, args, 0, s));
}
static inline void sc_axpy(float *y, const float *x, long n, float alpha, cudaStream_t s) {
  void *args[] = {&y, &x, &n, &alpha};
  SC_CUDA(cudaLaunchKernel((const void *)sc_k_axpy, (dim3){1, 1, 1}, (dim3){256, 1, 1}, args, 0, s));
}
static inline void sc_copy(float *d, const float *src, long n, cudaStream_t s) {
  void *args[] = {&d, &src, &n};
  SC_CUDA(cudaLaunchKernel((const void *)sc_k_copy, (dim3){1, 1, 1}, (dim3){256, 1, 1}, args, 0, s));
}

/* Copies n floats of device buffer d to a host array (the stream the data
 * was produced on must have been synchronized by the caller) and counts the
 * elements that differ from want(i, ctx). */
typedef float (*sc_want_fn)(long i, const void *ctx);
static inline long sc_verify(const float *d, long n, sc_want_fn want, const void *ctx,
                             const char *what) {
  float *h = (float *)malloc((size_t)n * sizeof(float) + 1);
  if (!h) exit(1);
  SC_CUDA(cudaMemcpy(h, d, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost));
  long bad = 0;
  for (long i = 0; i < n; i++) {
    float w = want(i, ctx);
    if (h[i] != w) {
      if (bad < 3)
        fprintf(stderr, "rank %d: %s[%ld] = %g, want %g\n", sc_rank, what, i, (double)h[i],
                (double)w);
      bad++;
    }
  }
  free(h);
  return bad;
}

/* ---- shared memory between forked ranks ---- */
typedef struct sc_shared {
  pthread_barrier_t barrier; /* process-shared, nranks parties */
  long result[SC_MAX_RANKS]; /* per-rank result word, printed by the parent */
  ncclUniqueId ids[8];       /* ids created by ranks (lazy groups) */
  unsigned char scratch[4096];
} sc_shared;

static sc_shared *sc_sh;
static int sc_print_base; /* rank number printed for pids[0] by sc_wait_ranks */

static inline sc_shared *sc_shared_create(int nranks) {
  void *p = mmap(NULL, sizeof(sc_shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    perror("mmap");
    exit(1);
  }
  sc_shared *s = (sc_shared *)p;
  pthread_barrierattr_t a;
  pthread_barrierattr_init(&a);
  pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
  pthread_barrier_init(&s->barrier, &a, (unsigned)nranks);
  pthread_barrierattr_destroy(&a);
  return s;
}

/* A host-side barrier among the forked ranks (a TCPStore barrier stand-in). */
static inline void sc_barrier(void) { pthread_barrier_wait(&sc_sh->barrier); }

typedef int (*sc_rank_fn)(int rank, int nranks, ncclUniqueId id, void *arg);

/* Waits for pids[0..n) for at most limit_s seconds, then SIGKILLs the
 * rest. Prints "rank R exit S" (or "rank R killed"/"rank R signal N") in
 * rank order and the result words when print_results. Returns the program
 * status described at the top of this file. */
static inline int sc_wait_ranks(pid_t *pids, int n, double limit_s, int print_results) {
  int status[SC_MAX_RANKS], done[SC_MAX_RANKS] = {0}, left = n, killed = 0;
  double t0 = sc_now(), when[SC_MAX_RANKS];
  while (left > 0) {
    for (int r = 0; r < n; r++) {
      if (done[r]) continue;
      pid_t p = waitpid(pids[r], &status[r], WNOHANG);
      if (p == pids[r]) {
        done[r] = 1;
        when[r] = sc_now() - t0;
        left--;
      }
    }
    if (left == 0) break;
    if (sc_now() - t0 > limit_s) {
      for (int r = 0; r < n; r++)
        if (!done[r]) kill(pids[r], SIGKILL);
      killed = 1;
      for (int r = 0; r < n; r++)
        if (!done[r]) {
          waitpid(pids[r], &status[r], 0);
          done[r] = 2;
          when[r] = sc_now() - t0;
        }
      break;
    }
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  int any66 = 0, anybad = 0, anywrong = 0;
  for (int r = 0; r < n; r++) {
    if (done[r] == 2) {
      printf("rank %d killed\n", sc_print_base + r);
      anybad = 1;
    } else if (WIFEXITED(status[r])) {
      int s = WEXITSTATUS(status[r]);
      printf("rank %d exit %d\n", sc_print_base + r, s);
      if (s == 66) any66 = 1;
      else if (s == SC_DATA_WRONG) anywrong = 1;
      else if (s != 0) anybad = 1;
    } else {
      printf("rank %d signal %d\n", sc_print_base + r, WTERMSIG(status[r]));
      anybad = 1;
    }
    fprintf(stderr, "rank %d ended after %.2f s\n", sc_print_base + r, when[r]);
    if (print_results) printf("rank %d result %ld\n", sc_print_base + r, sc_sh->result[sc_print_base + r]);
  }
  fflush(stdout);
  (void)killed;
  if (anybad) return 1;
  if (anywrong) return SC_DATA_WRONG;
  if (any66) return 66;
  return 0;
}

/* The launcher pattern: the parent creates the ncclUniqueId, forks nranks
 * processes; each binds device rank % device_count and runs fn (which
 * creates its communicator(s) from id) and exits with fn's status through
 * exit() so the preloaded tool writes its logs. */
static inline int sc_fork_ranks(int nranks, sc_rank_fn fn, void *arg) {
  if (nranks > SC_MAX_RANKS) nranks = SC_MAX_RANKS;
  sc_sh = sc_shared_create(nranks);
  ncclUniqueId id;
  SC_NCCL(ncclGetUniqueId(&id));
  fflush(NULL);
  pid_t pids[SC_MAX_RANKS];
  for (int r = 0; r < nranks; r++) {
    pid_t p = fork();
    if (p < 0) {
      perror("fork");
      exit(1);
    }
    if (p == 0) {
      sc_rank = r;
      int ndev = 1;
      SC_CUDA(cudaGetDeviceCount(&ndev));
      SC_CUDA(cudaSetDevice(r % ndev));
      sc_register_kernels();
      exit(fn(r, nranks, id, arg));
    }
    pids[r] = p;
  }
  return sc_wait_ranks(pids, nranks, SC_WAIT_LIMIT_S, 1);
}

/* ---- threads as ranks ---- */
/* The reusable thread barrier of the shared e2e harness. */
typedef e2e_barrier sc_tbarrier;
#define sc_tbarrier_init e2e_barrier_init
#define sc_tbarrier_wait e2e_barrier_wait

/* Element count helpers. */
static inline size_t sc_dtype_size(ncclDataType_t t) {
  switch (t) {
  case ncclInt8: case ncclUint8: return 1;
  case ncclFloat16: case ncclBfloat16: return 2;
  case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
  default: return 8;
  }
}

#endif
