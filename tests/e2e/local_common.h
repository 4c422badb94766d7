/* local_common.h - shared scaffolding of the end-to-end programs of the
 * local analyzers (tests/e2e/layout_*.c, tests/e2e/group_*.c, run by
 * tests/e2e/local.cmake): checked CUDA/NCCL calls, a one-rank communicator,
 * ranks as forked processes around one ncclUniqueId, a reusable barrier for
 * threads, and the program convention:
 *   argv[1] = "buggy" (default) or "fixed" (some programs have more variants)
 *   exit 0  the program ran to its end (a buggy call's NCCL error included:
 *           what NCCL returns for the bug is printed, not fatal)
 *   exit 1  setup failure (a call that must work failed, a rank crashed)
 * Header-only (static functions): each program is one translation unit. */
#ifndef LOCAL_E2E_COMMON_H
#define LOCAL_E2E_COMMON_H

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LC_CUDA(call)                                                              \
  do {                                                                             \
    cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                       \
      fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #call, (int)e_);   \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)
#define LC_NCCL(call)                                                              \
  do {                                                                             \
    ncclResult_t r_ = (call);                                                      \
    if (r_ != ncclSuccess) {                                                       \
      fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #call, (int)r_);   \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)
/* The call the program is about (may fail on purpose): print the result. */
#define LC_TRY(call)                                                               \
  do {                                                                             \
    int r_ = (int)(call);                                                          \
    printf("%s -> %d\n", #call, r_);                                               \
  } while (0)

static inline int lc_fixed(int argc, char **argv) {
  return argc > 1 && strcmp(argv[1], "fixed") == 0;
}
static inline int lc_arg_is(int argc, char **argv, const char *what) {
  return argc > 1 && strcmp(argv[1], what) == 0;
}

/* A one-rank communicator on the current device. */
static inline ncclComm_t lc_comm1(void) {
  ncclUniqueId id;
  ncclComm_t c;
  LC_NCCL(ncclGetUniqueId(&id));
  LC_NCCL(ncclCommInitRank(&c, 1, id, 0));
  return c;
}

/* A zeroed device buffer; the device synchronize orders the memset before
 * any later use on any stream. */
static inline void *lc_dalloc(size_t bytes) {
  void *p = NULL;
  LC_CUDA(cudaMalloc(&p, bytes));
  LC_CUDA(cudaMemset(p, 0, bytes));
  LC_CUDA(cudaDeviceSynchronize());
  return p;
}

/* A communication stream: never the legacy default stream, which would be
 * a stream.default-stream finding of its own. */
static inline cudaStream_t lc_stream(void) {
  cudaStream_t s;
  LC_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return s;
}

typedef int (*lc_rank_fn)(int rank, int nranks, ncclComm_t comm, void *arg);

/* Runs fn in nranks forked processes sharing one ncclUniqueId made by the
 * parent. Each child binds device rank % device_count, creates its
 * communicator, runs fn, destroys the communicator and exits with fn's
 * status through exit(), so the preloaded tool writes its logs. Returns 0
 * if every rank returned 0, else 1. */
static inline int lc_run_ranks(int nranks, lc_rank_fn fn, void *arg) {
  ncclUniqueId id;
  LC_NCCL(ncclGetUniqueId(&id));
  fflush(NULL);
  pid_t pids[16];
  for (int r = 0; r < nranks && r < 16; r++) {
    pid_t p = fork();
    if (p < 0) {
      perror("fork");
      return 1;
    }
    if (p == 0) {
      int ndev = 1;
      LC_CUDA(cudaGetDeviceCount(&ndev));
      LC_CUDA(cudaSetDevice(r % ndev));
      ncclComm_t comm;
      LC_NCCL(ncclCommInitRank(&comm, nranks, id, r));
      int st = fn(r, nranks, comm, arg);
      LC_NCCL(ncclCommDestroy(comm));
      exit(st);
    }
    pids[r] = p;
  }
  int result = 0;
  for (int r = 0; r < nranks && r < 16; r++) {
    int ws;
    if (waitpid(pids[r], &ws, 0) < 0) {
      perror("waitpid");
      return 1;
    }
    if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
      fprintf(stderr, "rank %d failed (status 0x%x)\n", r, ws);
      result = 1;
    }
  }
  return result;
}

/* A reusable barrier for n threads: the programs order their threads with
 * barriers, never with sleeps. */
typedef struct lc_barrier {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int n, waiting;
  unsigned gen;
} lc_barrier;

static inline void lc_barrier_init(lc_barrier *b, int n) {
  pthread_mutex_init(&b->mu, NULL);
  pthread_cond_init(&b->cv, NULL);
  b->n = n;
  b->waiting = 0;
  b->gen = 0;
}

static inline void lc_barrier_wait(lc_barrier *b) {
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

#endif
