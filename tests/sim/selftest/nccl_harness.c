/* nccl_harness.c - see nccl_harness.h. */
#define _GNU_SOURCE
#include "nccl_harness.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- values ------------------------------------------------------------- */
size_t type_size(ncclDataType_t dt) {
  static const size_t sz[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return (int)dt >= 0 && dt < ncclNumTypes ? sz[dt] : 0;
}

int type_is_float(ncclDataType_t dt) { return dt >= ncclFloat16; }

const char *type_name(ncclDataType_t dt) {
  static const char *const n[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64",
                                  "half", "float", "double", "bf16", "e4m3", "e5m2"};
  return (int)dt >= 0 && dt < ncclNumTypes ? n[dt] : "?";
}

struct fmt { int ebits, mbits, bias; };
static const struct fmt *small_fmt(ncclDataType_t dt) {
  static const struct fmt half = {5, 10, 15}, bf16 = {8, 7, 127}, e4m3 = {4, 3, 7}, e5m2 = {5, 2, 15};
  switch (dt) {
  case ncclFloat16: return &half;
  case ncclBfloat16: return &bf16;
  case ncclFloat8e4m3: return &e4m3;
  case ncclFloat8e5m2: return &e5m2;
  default: return NULL;
  }
}

/* Encodes an exactly representable normal value (or zero). */
static uint32_t enc(double v, const struct fmt *f) {
  if (v == 0) return 0;
  uint32_t sign = v < 0;
  int e;
  double m = frexp(fabs(v), &e);
  uint32_t mant = (uint32_t)((2 * m - 1) * (double)(1u << f->mbits));
  return sign << (f->ebits + f->mbits) | (uint32_t)(e - 1 + f->bias) << f->mbits | mant;
}

static double dec(uint32_t b, const struct fmt *f) {
  uint32_t sign = b >> (f->ebits + f->mbits) & 1;
  uint32_t e = b >> f->mbits & ((1u << f->ebits) - 1);
  uint32_t m = b & ((1u << f->mbits) - 1);
  double v = e == 0 ? ldexp(m, 1 - f->bias - f->mbits) : ldexp(m | (1u << f->mbits), (int)e - f->bias - f->mbits);
  return sign ? -v : v;
}

void put_val(ncclDataType_t dt, void *buf, size_t i, double v) {
  switch (dt) {
  case ncclInt8: ((int8_t *)buf)[i] = (int8_t)v; break;
  case ncclUint8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
  case ncclInt32: ((int32_t *)buf)[i] = (int32_t)v; break;
  case ncclUint32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
  case ncclInt64: ((int64_t *)buf)[i] = (int64_t)v; break;
  case ncclUint64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
  case ncclFloat32: ((float *)buf)[i] = (float)v; break;
  case ncclFloat64: ((double *)buf)[i] = v; break;
  case ncclFloat16: case ncclBfloat16: ((uint16_t *)buf)[i] = (uint16_t)enc(v, small_fmt(dt)); break;
  default: ((uint8_t *)buf)[i] = (uint8_t)enc(v, small_fmt(dt)); break;
  }
}

double get_val(ncclDataType_t dt, const void *buf, size_t i) {
  switch (dt) {
  case ncclInt8: return ((const int8_t *)buf)[i];
  case ncclUint8: return ((const uint8_t *)buf)[i];
  case ncclInt32: return ((const int32_t *)buf)[i];
  case ncclUint32: return ((const uint32_t *)buf)[i];
  case ncclInt64: return (double)((const int64_t *)buf)[i];
  case ncclUint64: return (double)((const uint64_t *)buf)[i];
  case ncclFloat32: return ((const float *)buf)[i];
  case ncclFloat64: return ((const double *)buf)[i];
  case ncclFloat16: case ncclBfloat16: return dec(((const uint16_t *)buf)[i], small_fmt(dt));
  default: return dec(((const uint8_t *)buf)[i], small_fmt(dt));
  }
}

double wrap_val(ncclDataType_t dt, double v) {
  int64_t x = (int64_t)v;
  switch (dt) {
  case ncclInt8: return (int8_t)x;
  case ncclUint8: return (uint8_t)x;
  case ncclInt32: return (int32_t)x;
  case ncclUint32: return (uint32_t)x;
  default: return v;
  }
}

int stream_done_within(cudaStream_t s, int ms) {
  for (int t = 0; t <= ms; t += 10) {
    cudaError_t e = cudaStreamQuery(s);
    if (e == cudaSuccess) return 1;
    if (e != cudaErrorNotReady) return -1;
    struct timespec ts = {0, 10 * 1000000L};
    nanosleep(&ts, NULL);
  }
  return 0;
}

/* ---- ranks ---------------------------------------------------------------- */
struct rank_ctx {
  int rank, nranks;
  ncclComm_t comm;
  ncclUniqueId id;
  rank_body body;
  void *arg;
  int init;          /* 1: the thread does cudaSetDevice + ncclCommInitRank */
  int result;
};

static int finish(struct rank_ctx *c) {
  int fails = c->body(c->comm, c->rank, c->nranks, c->arg);
  EXPECT_RC(ncclCommDestroy(c->comm), ncclSuccess);
  int cnt;
  /* The simulator keeps destroyed comms as tombstones: reuse is reported. */
  EXPECT_RC(ncclCommCount(c->comm, &cnt), ncclInvalidArgument);
  EXPECT_RC(ncclCommDestroy(c->comm), ncclInvalidArgument);
  return fails;
}

static int init_and_run(struct rank_ctx *c) {
  int fails = 0;
  CUDA_OK(cudaSetDevice(c->rank));
  NCCL_OK(ncclCommInitRank(&c->comm, c->nranks, c->id, c->rank));
  return finish(c);
}

static void *rank_thread(void *p) {
  struct rank_ctx *c = p;
  if (c->init) {
    c->result = init_and_run(c);
  } else {
    int fails = 0;
    if (cudaSetDevice(c->rank) != cudaSuccess) FAILF("cudaSetDevice(%d)", c->rank);
    c->result = fails + finish(c);
  }
  return NULL;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int run_ranks(const char *mode, int n, rank_body body, void *arg, int timeout_s) {
  int fails = 0;
  struct rank_ctx *ctx = calloc((size_t)n, sizeof *ctx);
  ncclUniqueId id;
  NCCL_OK(ncclGetUniqueId(&id));
  for (int r = 0; r < n; r++) ctx[r] = (struct rank_ctx){r, n, NULL, id, body, arg, 1, 0};

  if (!strcmp(mode, "proc")) {
    pid_t *pids = calloc((size_t)n, sizeof *pids);
    for (int r = 0; r < n; r++) {
      pids[r] = fork();
      if (pids[r] == 0) {
        alarm((unsigned)timeout_s + 5);   /* never outlive the test */
        _exit(init_and_run(&ctx[r]) ? 1 : 0);
      }
    }
    double deadline = now_s() + timeout_s;
    int left = n;
    while (left > 0) {
      int st;
      pid_t p = waitpid(-1, &st, WNOHANG);
      if (p > 0) {
        left--;
        for (int r = 0; r < n; r++)
          if (pids[r] == p && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
            FAILF("%s rank %d: %s %d", mode, r, WIFEXITED(st) ? "exit" : "signal",
                  WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
        continue;
      }
      if (now_s() > deadline) {
        FAILF("%s: timeout after %d s, killing the ranks", mode, timeout_s);
        for (int r = 0; r < n; r++) kill(pids[r], SIGKILL);
        while (waitpid(-1, &st, 0) > 0) {}
        break;
      }
      struct timespec ts = {0, 5000000};
      nanosleep(&ts, NULL);
    }
    free(pids);
    free(ctx);
    return fails;
  }

  if (!strcmp(mode, "group") || !strcmp(mode, "initall")) {
    ncclComm_t *comms = calloc((size_t)n, sizeof *comms);
    if (!strcmp(mode, "group")) {
      NCCL_OK(ncclGroupStart());
      for (int r = 0; r < n; r++) {
        CUDA_OK(cudaSetDevice(r));
        NCCL_OK(ncclCommInitRank(&comms[r], n, id, r));
      }
      NCCL_OK(ncclGroupEnd());
    } else {
      NCCL_OK(ncclCommInitAll(comms, n, NULL));
    }
    for (int r = 0; r < n; r++) {
      int dev = -1, rank = -1, cnt = -1;
      NCCL_OK(ncclCommCuDevice(comms[r], &dev));
      NCCL_OK(ncclCommUserRank(comms[r], &rank));
      NCCL_OK(ncclCommCount(comms[r], &cnt));
      if (dev != r || rank != r || cnt != n) FAILF("%s comm %d: dev %d rank %d count %d", mode, r, dev, rank, cnt);
      ctx[r].comm = comms[r];
      ctx[r].init = 0;
    }
    free(comms);
  }
  /* thread, group, initall: bodies on threads; a hang is caught by the
   * ctest TIMEOUT (threads cannot be killed individually). */
  pthread_t *t = calloc((size_t)n, sizeof *t);
  for (int r = 0; r < n; r++) pthread_create(&t[r], NULL, rank_thread, &ctx[r]);
  for (int r = 0; r < n; r++) {
    pthread_join(t[r], NULL);
    if (ctx[r].result) FAILF("%s rank %d: %d failures", mode, r, ctx[r].result);
  }
  free(t);
  free(ctx);
  return fails;
}
