/* nccl_battery.c - functional self-test of the simulator's NCCL (no shim).
 *
 *   nccl_battery <proc|thread|group|initall> <nranks>
 *
 * Every rank runs: all collectives for every datatype and reduction (data
 * checked against a CPU reference), in-place variants, grouped all-to-all
 * with equal and unequal splits (small and larger than a channel FIFO),
 * ncclAlltoAll/Gather/Scatter, a grouped p2p ring, split communicators
 * (key ordering, NCCL_SPLIT_NOCOLOR), PreMulSum with host and device
 * scalars, ranks passing different reductions to one collective (they
 * complete, each rank with its own operation's result), zero-count
 * operations, and the argument errors.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_harness.h"

enum { COUNT = 37 };   /* not a multiple of anything */

static const char *op_name(int op) {
  static const char *const n[] = {"sum", "prod", "max", "min", "avg"};
  return n[op];
}

/* Test inputs: exact in every type, so results are exact too (see below). */
static double input(ncclDataType_t dt, int op, int rank, size_t i) {
  if (op == ncclProd) return 1 + ((rank + i) % 3 == 0);           /* 1 or 2: product <= 256 */
  if (dt == ncclFloat8e4m3 || dt == ncclFloat8e5m2) {
    if (op == ncclSum || op == ncclAvg) return (double)((rank + i) % 2);   /* partial sums <= 8 */
    return (double)((rank * 3 + i) % 5);
  }
  return (double)((rank * 3 + i * 7) % 11);                          /* sums <= 80 */
}

static double reference(ncclDataType_t dt, int op, int n, size_t i) {
  double acc = input(dt, op, 0, i);
  for (int r = 1; r < n; r++) {
    double x = input(dt, op, r, i);
    switch (op) {
    case ncclProd: acc *= x; break;
    case ncclMax: acc = x > acc ? x : acc; break;
    case ncclMin: acc = x < acc ? x : acc; break;
    default: acc += x; break;
    }
  }
  acc = wrap_val(dt, acc);
  if (op == ncclAvg) acc = type_is_float(dt) ? acc / n : (double)((int64_t)acc / n);
  return acc;
}

static int is_pow2(int n) { return (n & (n - 1)) == 0; }

static int check_buf(ncclDataType_t dt, const void *buf, size_t count, double (*want)(size_t, void *),
                     void *ctx, const char *what, int rank) {
  int fails = 0;
  for (size_t i = 0; i < count && fails < 3; i++) {
    double got = get_val(dt, buf, i), w = want(i, ctx);
    if (got != w) FAILF("rank %d %s %s [%zu]: got %g want %g", rank, what, type_name(dt), i, got, w);
  }
  return fails;
}

struct refctx { ncclDataType_t dt; int op, n, rank, root; size_t off; };
static double want_reduce(size_t i, void *p) {
  struct refctx *c = p;
  return reference(c->dt, c->op, c->n, c->off + i);
}
static double want_input_of(size_t i, void *p) {      /* rank (i / COUNT)'s input */
  struct refctx *c = p;
  return input(c->dt, ncclSum, (int)(i / COUNT), i % COUNT);
}
static double want_root_input(size_t i, void *p) {
  struct refctx *c = p;
  return input(c->dt, ncclSum, c->root, i);
}

static int test_collectives(ncclComm_t comm, int rank, int n, cudaStream_t s) {
  int fails = 0;
  size_t maxb = (size_t)COUNT * n * 8;
  char *send, *recv, *host = malloc(maxb);
  CUDA_OK(cudaMalloc((void **)&send, maxb));
  CUDA_OK(cudaMalloc((void **)&recv, maxb));
  for (int dti = 0; dti < ncclNumTypes; dti++) {
    ncclDataType_t dt = (ncclDataType_t)dti;
    size_t es = type_size(dt);
    for (int op = ncclSum; op <= ncclAvg; op++) {
      if (op == ncclAvg && !is_pow2(n)) continue;
      char what[64];
      struct refctx rc = {dt, op, n, rank, 0, 0};
      /* AllReduce, out of place then in place */
      for (int inplace = 0; inplace < 2; inplace++) {
        for (size_t i = 0; i < COUNT; i++) put_val(dt, host, i, input(dt, op, rank, i));
        CUDA_OK(cudaMemcpy(send, host, COUNT * es, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemset(recv, 0xee, maxb));
        char *out = inplace ? send : recv;
        NCCL_OK(ncclAllReduce(send, out, COUNT, dt, (ncclRedOp_t)op, comm, s));
        CUDA_OK(cudaStreamSynchronize(s));
        CUDA_OK(cudaMemcpy(host, out, COUNT * es, cudaMemcpyDeviceToHost));
        snprintf(what, sizeof what, "AllReduce(%s%s)", op_name(op), inplace ? ",inplace" : "");
        fails += check_buf(dt, host, COUNT, want_reduce, &rc, what, rank);
      }
      /* Reduce to the last rank */
      for (size_t i = 0; i < COUNT; i++) put_val(dt, host, i, input(dt, op, rank, i));
      CUDA_OK(cudaMemcpy(send, host, COUNT * es, cudaMemcpyHostToDevice));
      NCCL_OK(ncclReduce(send, recv, COUNT, dt, (ncclRedOp_t)op, n - 1, comm, s));
      CUDA_OK(cudaStreamSynchronize(s));
      if (rank == n - 1) {
        CUDA_OK(cudaMemcpy(host, recv, COUNT * es, cudaMemcpyDeviceToHost));
        snprintf(what, sizeof what, "Reduce(%s)", op_name(op));
        fails += check_buf(dt, host, COUNT, want_reduce, &rc, what, rank);
      }
      /* ReduceScatter: rank r gets elements [r*5, r*5+5) of the reduction */
      const size_t rs = 5;
      for (size_t i = 0; i < rs * n; i++) put_val(dt, host, i, input(dt, op, rank, i));
      CUDA_OK(cudaMemcpy(send, host, rs * n * es, cudaMemcpyHostToDevice));
      NCCL_OK(ncclReduceScatter(send, recv, rs, dt, (ncclRedOp_t)op, comm, s));
      CUDA_OK(cudaStreamSynchronize(s));
      CUDA_OK(cudaMemcpy(host, recv, rs * es, cudaMemcpyDeviceToHost));
      rc.off = rs * rank;
      snprintf(what, sizeof what, "ReduceScatter(%s)", op_name(op));
      fails += check_buf(dt, host, rs, want_reduce, &rc, what, rank);
      /* ReduceScatter in place: recvbuff = sendbuff + rank * recvcount */
      for (size_t i = 0; i < rs * n; i++) put_val(dt, host, i, input(dt, op, rank, i));
      CUDA_OK(cudaMemcpy(send, host, rs * n * es, cudaMemcpyHostToDevice));
      NCCL_OK(ncclReduceScatter(send, send + rs * rank * es, rs, dt, (ncclRedOp_t)op, comm, s));
      CUDA_OK(cudaStreamSynchronize(s));
      CUDA_OK(cudaMemcpy(host, send + rs * rank * es, rs * es, cudaMemcpyDeviceToHost));
      snprintf(what, sizeof what, "ReduceScatter(%s,inplace)", op_name(op));
      fails += check_buf(dt, host, rs, want_reduce, &rc, what, rank);
    }
    /* Data movement: Broadcast (root 1 % n), AllGather (out of and in place) */
    struct refctx rc = {dt, ncclSum, n, rank, 1 % n, 0};
    for (size_t i = 0; i < COUNT; i++) put_val(dt, host, i, input(dt, ncclSum, rank, i));
    CUDA_OK(cudaMemcpy(send, host, COUNT * es, cudaMemcpyHostToDevice));
    NCCL_OK(ncclBroadcast(send, recv, COUNT, dt, rc.root, comm, s));
    NCCL_OK(ncclBcast(send, COUNT, dt, rc.root, comm, s));          /* in place */
    CUDA_OK(cudaStreamSynchronize(s));
    CUDA_OK(cudaMemcpy(host, recv, COUNT * es, cudaMemcpyDeviceToHost));
    fails += check_buf(dt, host, COUNT, want_root_input, &rc, "Broadcast", rank);
    CUDA_OK(cudaMemcpy(host, send, COUNT * es, cudaMemcpyDeviceToHost));
    fails += check_buf(dt, host, COUNT, want_root_input, &rc, "Bcast", rank);
    for (size_t i = 0; i < COUNT; i++) put_val(dt, host, i, input(dt, ncclSum, rank, i));
    CUDA_OK(cudaMemcpy(send, host, COUNT * es, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(recv + (size_t)rank * COUNT * es, host, COUNT * es, cudaMemcpyHostToDevice));
    NCCL_OK(ncclAllGather(send, recv, COUNT, dt, comm, s));
    CUDA_OK(cudaStreamSynchronize(s));
    CUDA_OK(cudaMemcpy(host, recv, (size_t)n * COUNT * es, cudaMemcpyDeviceToHost));
    fails += check_buf(dt, host, (size_t)n * COUNT, want_input_of, &rc, "AllGather", rank);
    CUDA_OK(cudaMemset(recv, 0, maxb));
    CUDA_OK(cudaMemcpy(recv + (size_t)rank * COUNT * es, send, COUNT * es, cudaMemcpyDeviceToDevice));
    NCCL_OK(ncclAllGather(recv + (size_t)rank * COUNT * es, recv, COUNT, dt, comm, s));
    CUDA_OK(cudaStreamSynchronize(s));
    CUDA_OK(cudaMemcpy(host, recv, (size_t)n * COUNT * es, cudaMemcpyDeviceToHost));
    fails += check_buf(dt, host, (size_t)n * COUNT, want_input_of, &rc, "AllGather(inplace)", rank);
  }
  CUDA_OK(cudaFree(send));
  CUDA_OK(cudaFree(recv));
  free(host);
  return fails;
}

/* Value rank s sends to rank d at position i: identifies the pair. */
static int32_t a2a_val(int s, int d, size_t i) { return (int32_t)(s * 1000003 + d * 10007 + (int)i); }

/* Grouped send/recv all-to-all; counts(s, d) elements of int32 from s to d. */
static int test_a2a(ncclComm_t comm, int rank, int n, cudaStream_t s, size_t (*counts)(int, int),
                    const char *what) {
  int fails = 0;
  size_t stot = 0, rtot = 0;
  for (int p = 0; p < n; p++) { stot += counts(rank, p); rtot += counts(p, rank); }
  int32_t *hs = malloc((stot + 1) * 4), *hr = malloc((rtot + 1) * 4);
  int32_t *ds, *dr;
  CUDA_OK(cudaMalloc((void **)&ds, (stot + 1) * 4));
  CUDA_OK(cudaMalloc((void **)&dr, (rtot + 1) * 4));
  size_t o = 0;
  for (int p = 0; p < n; p++)
    for (size_t i = 0; i < counts(rank, p); i++) hs[o++] = a2a_val(rank, p, i);
  CUDA_OK(cudaMemcpy(ds, hs, stot * 4, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(dr, 0xff, (rtot + 1) * 4));
  NCCL_OK(ncclGroupStart());
  size_t so = 0, ro = 0;
  for (int p = 0; p < n; p++) {
    NCCL_OK(ncclSend(ds + so, counts(rank, p), ncclInt32, p, comm, s));
    NCCL_OK(ncclRecv(dr + ro, counts(p, rank), ncclInt32, p, comm, s));
    so += counts(rank, p);
    ro += counts(p, rank);
  }
  NCCL_OK(ncclGroupEnd());
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaMemcpy(hr, dr, (rtot + 1) * 4, cudaMemcpyDeviceToHost));
  o = 0;
  for (int p = 0; p < n && fails < 3; p++)
    for (size_t i = 0; i < counts(p, rank); i++, o++)
      if (hr[o] != a2a_val(p, rank, i)) {
        FAILF("rank %d %s: from %d [%zu] got %d want %d", rank, what, p, i, hr[o], a2a_val(p, rank, i));
        break;
      }
  if (hr[rtot] != -1) FAILF("rank %d %s: wrote past the receive buffer", rank, what);
  CUDA_OK(cudaFree(ds));
  CUDA_OK(cudaFree(dr));
  free(hs);
  free(hr);
  return fails;
}

static size_t c_equal(int s, int d) { (void)s; (void)d; return 16; }
static size_t c_unequal(int s, int d) { return (size_t)((s * 3 + d * 5) % 7); }   /* includes zeros */
/* Up to 1.2 MB per pair: larger than a channel FIFO (8 x 64 KiB). */
static size_t c_large(int s, int d) { return (size_t)(1 + (s + d) % 3) * 100000 + (size_t)s; }

static int test_a2a_builtin(ncclComm_t comm, int rank, int n, cudaStream_t s) {
  int fails = 0;
  const size_t c = 9;
  int32_t *hs = malloc(c * n * 4), *hr = malloc(c * n * 4);
  int32_t *ds, *dr;
  CUDA_OK(cudaMalloc((void **)&ds, c * n * 4));
  CUDA_OK(cudaMalloc((void **)&dr, c * n * 4));
  for (int p = 0; p < n; p++)
    for (size_t i = 0; i < c; i++) hs[p * c + i] = a2a_val(rank, p, i);
  CUDA_OK(cudaMemcpy(ds, hs, c * n * 4, cudaMemcpyHostToDevice));
  NCCL_OK(ncclAlltoAll(ds, dr, c, ncclInt32, comm, s));
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaMemcpy(hr, dr, c * n * 4, cudaMemcpyDeviceToHost));
  for (int p = 0; p < n; p++)
    for (size_t i = 0; i < c; i++)
      if (hr[p * c + i] != a2a_val(p, rank, i)) { FAILF("rank %d AlltoAll from %d", rank, p); p = n; break; }
  /* Gather to root n/2: chunk p of the root's buffer is rank p's block */
  int root = n / 2;
  NCCL_OK(ncclGather(ds, dr, c, ncclInt32, root, comm, s));
  CUDA_OK(cudaStreamSynchronize(s));
  if (rank == root) {
    CUDA_OK(cudaMemcpy(hr, dr, c * n * 4, cudaMemcpyDeviceToHost));
    for (int p = 0; p < n; p++)
      for (size_t i = 0; i < c; i++)
        if (hr[p * c + i] != a2a_val(p, 0, i)) { FAILF("rank %d Gather from %d", rank, p); p = n; break; }
  }
  /* Scatter from root: rank p gets chunk p of the root's buffer */
  NCCL_OK(ncclScatter(ds, dr, c, ncclInt32, root, comm, s));
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaMemcpy(hr, dr, c * 4, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < c; i++)
    if (hr[i] != a2a_val(root, rank, i)) { FAILF("rank %d Scatter [%zu]", rank, i); break; }
  CUDA_OK(cudaFree(ds));
  CUDA_OK(cudaFree(dr));
  free(hs);
  free(hr);
  return fails;
}

/* A token travels around the ring three times (grouped send/recv). */
static int test_ring(ncclComm_t comm, int rank, int n, cudaStream_t s) {
  int fails = 0;
  int64_t *buf;
  CUDA_OK(cudaMalloc((void **)&buf, 2 * sizeof(int64_t)));
  int64_t h[2] = {rank, -1};
  CUDA_OK(cudaMemcpy(buf, h, sizeof h, cudaMemcpyHostToDevice));
  for (int it = 0; it < 3 * n; it++) {
    NCCL_OK(ncclGroupStart());
    NCCL_OK(ncclSend(buf, 1, ncclInt64, (rank + 1) % n, comm, s));
    NCCL_OK(ncclRecv(buf + 1, 1, ncclInt64, (rank + n - 1) % n, comm, s));
    NCCL_OK(ncclGroupEnd());
    CUDA_OK(cudaMemcpyAsync(buf, buf + 1, sizeof(int64_t), cudaMemcpyDeviceToDevice, s));
  }
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaMemcpy(h, buf, sizeof h, cudaMemcpyDeviceToHost));
  if (h[0] != rank) FAILF("rank %d ring: token %lld after 3 laps", rank, (long long)h[0]);
  CUDA_OK(cudaFree(buf));
  return fails;
}

/* One group of one communicator spanning two streams: sends on s, receives
 * on a second stream (NCCL joins the streams; the simulator uses one item
 * on both). Both streams complete and the data arrives. */
static int test_two_streams(ncclComm_t comm, int rank, int n, cudaStream_t s) {
  int fails = 0;
  cudaStream_t s2;
  int32_t *d, h[2] = {rank * 10, -1};
  CUDA_OK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CUDA_OK(cudaMalloc((void **)&d, sizeof h));
  CUDA_OK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclSend(d, 1, ncclInt32, (rank + 1) % n, comm, s));
  NCCL_OK(ncclRecv(d + 1, 1, ncclInt32, (rank + n - 1) % n, comm, s2));
  NCCL_OK(ncclGroupEnd());
  CUDA_OK(cudaStreamSynchronize(s2));
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
  if (h[1] != ((rank + n - 1) % n) * 10) FAILF("rank %d two streams: got %d", rank, h[1]);
  CUDA_OK(cudaFree(d));
  CUDA_OK(cudaStreamDestroy(s2));
  return fails;
}

static int test_split(ncclComm_t comm, int rank, int n, cudaStream_t s) {
  int fails = 0;
  /* color = parity, key = n - rank: higher parent ranks come first */
  ncclComm_t sub = NULL;
  NCCL_OK(ncclCommSplit(comm, rank % 2, n - rank, &sub, NULL));
  if (!sub) { FAILF("rank %d split: no comm", rank); return fails; }
  int cnt, me;
  NCCL_OK(ncclCommCount(sub, &cnt));
  NCCL_OK(ncclCommUserRank(sub, &me));
  int members = (n - rank % 2 + 1) / 2, want_me = 0;
  for (int r = rank % 2; r < n; r += 2) want_me += r > rank;
  if (cnt != members || me != want_me) FAILF("rank %d split: count %d rank %d, want %d %d", rank, cnt, me, members, want_me);
  int32_t *d;
  CUDA_OK(cudaMalloc((void **)&d, 4));
  int32_t v = rank + 1;
  CUDA_OK(cudaMemcpy(d, &v, 4, cudaMemcpyHostToDevice));
  NCCL_OK(ncclAllReduce(d, d, 1, ncclInt32, ncclSum, sub, s));
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaMemcpy(&v, d, 4, cudaMemcpyDeviceToHost));
  int want = 0;
  for (int r = rank % 2; r < n; r += 2) want += r + 1;
  if (v != want) FAILF("rank %d split allreduce: %d want %d", rank, v, want);
  NCCL_OK(ncclCommDestroy(sub));
  /* rank 0 opts out */
  ncclComm_t sub2 = (ncclComm_t)(uintptr_t)1;
  NCCL_OK(ncclCommSplit(comm, rank == 0 ? NCCL_SPLIT_NOCOLOR : 7, 0, &sub2, NULL));
  if (rank == 0 && sub2 != NULL) FAILF("NOCOLOR split returned a comm");
  if (rank != 0) {
    if (!sub2) { FAILF("rank %d: no comm from split", rank); return fails; }
    NCCL_OK(ncclCommCount(sub2, &cnt));
    if (cnt != n - 1) FAILF("rank %d: split without rank 0 has %d ranks", rank, cnt);
    v = 1;
    CUDA_OK(cudaMemcpy(d, &v, 4, cudaMemcpyHostToDevice));
    NCCL_OK(ncclAllReduce(d, d, 1, ncclInt32, ncclSum, sub2, s));
    CUDA_OK(cudaStreamSynchronize(s));
    CUDA_OK(cudaMemcpy(&v, d, 4, cudaMemcpyDeviceToHost));
    if (v != n - 1) FAILF("rank %d split2 allreduce: %d", rank, v);
    NCCL_OK(ncclCommDestroy(sub2));
  }
  CUDA_OK(cudaFree(d));
  return fails;
}

static int test_premulsum(ncclComm_t comm, int rank, int n, cudaStream_t s) {
  int fails = 0;
  float *d, *scal, h[4];
  CUDA_OK(cudaMalloc((void **)&d, sizeof h));
  CUDA_OK(cudaMalloc((void **)&scal, sizeof(float)));
  float hs = (float)(rank + 1), two = 2.0f;
  ncclRedOp_t op_host, op_dev;
  NCCL_OK(ncclRedOpCreatePreMulSum(&op_host, &hs, ncclFloat32, ncclScalarHostImmediate, comm));
  hs = 100.0f;   /* immediate: the value was read at creation */
  CUDA_OK(cudaMemcpy(scal, &two, sizeof two, cudaMemcpyHostToDevice));
  NCCL_OK(ncclRedOpCreatePreMulSum(&op_dev, scal, ncclFloat32, ncclScalarDevice, comm));
  for (int i = 0; i < 4; i++) h[i] = 1.0f;
  CUDA_OK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
  NCCL_OK(ncclAllReduce(d, d, 4, ncclFloat32, op_host, comm, s));
  NCCL_OK(ncclRedOpDestroy(op_host, comm));   /* allowed once the call returned */
  NCCL_OK(ncclAllReduce(d, d, 4, ncclFloat32, op_dev, comm, s));
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
  float want = (float)(n * (n + 1) / 2) * 2.0f * (float)n;
  if (h[0] != want || h[3] != want) FAILF("rank %d PreMulSum: %g want %g", rank, h[0], want);
  EXPECT_RC(ncclAllReduce(d, d, 4, ncclFloat64, op_dev, comm, s), ncclInvalidArgument);   /* type mismatch */
  NCCL_OK(ncclRedOpDestroy(op_dev, comm));
  EXPECT_RC(ncclRedOpDestroy(op_dev, comm), ncclInvalidArgument);
  EXPECT_RC(ncclAllReduce(d, d, 4, ncclFloat32, op_dev, comm, s), ncclInvalidArgument);
  EXPECT_RC(ncclRedOpDestroy(ncclSum, comm), ncclInvalidArgument);
  CUDA_OK(cudaFree(d));
  CUDA_OK(cudaFree(scal));
  return fails;
}

static int test_errors_and_zero(ncclComm_t comm, int rank, int n, cudaStream_t s) {
  int fails = 0;
  int v;
  float *d;
  CUDA_OK(cudaMalloc((void **)&d, 64));
  EXPECT_RC(ncclGetVersion(&v), ncclSuccess);
  if (v != 23007) FAILF("version %d", v);   /* the API level simulated: 2.30.7 */
  if (strcmp(ncclGetErrorString(ncclInvalidArgument), "invalid argument (run with NCCL_DEBUG=WARN for details)"))
    FAILF("error string");
  EXPECT_RC(ncclAllReduce(d, d, 4, ncclFloat32, ncclSum, NULL, s), ncclInvalidArgument);
  EXPECT_RC(ncclSend(d, 4, ncclFloat32, n, comm, s), ncclInvalidArgument);
  EXPECT_RC(ncclRecv(d, 4, ncclFloat32, -1, comm, s), ncclInvalidArgument);
  EXPECT_RC(ncclAllReduce(d, d, 4, (ncclDataType_t)ncclNumTypes, ncclSum, comm, s), ncclInvalidArgument);
  EXPECT_RC(ncclAllReduce(d, d, 4, ncclFloat32, (ncclRedOp_t)42, comm, s), ncclInvalidArgument);
  EXPECT_RC(ncclAllReduce(NULL, d, 4, ncclFloat32, ncclSum, comm, s), ncclInvalidArgument);
  EXPECT_RC(ncclBroadcast(d, d, 4, ncclFloat32, n, comm, s), ncclInvalidArgument);
  EXPECT_RC(ncclGroupEnd(), ncclInvalidUsage);
  /* an error inside a group fails the whole group */
  EXPECT_RC(ncclGroupStart(), ncclSuccess);
  EXPECT_RC(ncclSend(d, 4, ncclFloat32, (rank + 1) % n, comm, s), ncclSuccess);
  EXPECT_RC(ncclSend(d, 4, ncclFloat32, n + 3, comm, s), ncclInvalidArgument);
  EXPECT_RC(ncclGroupEnd(), ncclInvalidArgument);
  /* a send to self needs a receive from self in the same group (NCCL's
   * "Trying to send to self without a matching recv"), and the reverse */
  EXPECT_RC(ncclGroupStart(), ncclSuccess);
  EXPECT_RC(ncclSend(d, 4, ncclFloat32, rank, comm, s), ncclSuccess);
  EXPECT_RC(ncclGroupEnd(), ncclInvalidUsage);
  EXPECT_RC(ncclRecv(d, 4, ncclFloat32, rank, comm, s), ncclInvalidUsage);
  EXPECT_RC(ncclGroupStart(), ncclSuccess);
  EXPECT_RC(ncclSend(d, 4, ncclFloat32, rank, comm, s), ncclSuccess);
  EXPECT_RC(ncclRecv(d + 4, 4, ncclFloat32, rank, comm, s), ncclSuccess);
  EXPECT_RC(ncclSend(d + 8, 4, ncclFloat32, rank, comm, s), ncclSuccess);
  EXPECT_RC(ncclGroupEnd(), ncclInvalidUsage);
  /* zero-count collectives are dropped (NULL buffers fine), zero-count
   * send/recv are real tasks that must match */
  EXPECT_RC(ncclAllReduce(NULL, NULL, 0, ncclFloat32, ncclSum, comm, s), ncclSuccess);
  EXPECT_RC(ncclGroupStart(), ncclSuccess);
  EXPECT_RC(ncclSend(NULL, 0, ncclFloat32, (rank + 1) % n, comm, s), ncclSuccess);
  EXPECT_RC(ncclRecv(NULL, 0, ncclFloat32, (rank + n - 1) % n, comm, s), ncclSuccess);
  EXPECT_RC(ncclGroupEnd(), ncclSuccess);
  CUDA_OK(cudaStreamSynchronize(s));
  ncclSimInfo_t si = NCCL_SIM_INFO_INITIALIZER;
  EXPECT_RC(ncclGroupStart(), ncclSuccess);
  EXPECT_RC(ncclAllReduce(d, d, 16, ncclFloat32, ncclSum, comm, s), ncclSuccess);
  EXPECT_RC(ncclGroupSimulateEnd(&si), ncclSuccess);
  if (!(si.estimatedTime > 0)) FAILF("simulate: estimatedTime %g", si.estimatedTime);
  int dev;
  EXPECT_RC(ncclCommCuDevice(comm, &dev), ncclSuccess);
  if (dev != rank) FAILF("rank %d: cuDevice %d", rank, dev);
  void *h1;
  EXPECT_RC(ncclCommRegister(comm, d, 64, &h1), ncclSuccess);
  EXPECT_RC(ncclCommDeregister(comm, h1), ncclSuccess);
  EXPECT_RC(ncclCommDeregister(comm, h1), ncclInvalidArgument);
  ncclWindow_t w;
  EXPECT_RC(ncclCommWindowRegister(comm, d, 64, &w, NCCL_WIN_DEFAULT), ncclSuccess);
  EXPECT_RC(ncclCommWindowDeregister(comm, w), ncclSuccess);
  CUDA_OK(cudaFree(d));
  return fails;
}

/* Reductions larger than the simulator's 4 MiB segments: 3.5 M floats
 * AllReduce (in place) and ReduceScatter of 1.1 M floats per rank. */
static int test_large_reduce(ncclComm_t comm, int rank, int n, cudaStream_t s) {
  int fails = 0;
  const size_t N = 3500000, R = 1100000;
  size_t tot = R * n > N ? R * n : N;
  float *h = malloc(tot * sizeof(float)), *d, *o;
  CUDA_OK(cudaMalloc((void **)&d, tot * sizeof(float)));
  CUDA_OK(cudaMalloc((void **)&o, R * sizeof(float)));
  for (size_t i = 0; i < tot; i++) h[i] = (float)((rank + 1) * (int)(i % 7));
  CUDA_OK(cudaMemcpy(d, h, tot * sizeof(float), cudaMemcpyHostToDevice));
  NCCL_OK(ncclReduceScatter(d, o, R, ncclFloat32, ncclSum, comm, s));
  NCCL_OK(ncclAllReduce(d, d, N, ncclFloat32, ncclSum, comm, s));
  CUDA_OK(cudaStreamSynchronize(s));
  float k = (float)(n * (n + 1) / 2);
  CUDA_OK(cudaMemcpy(h, d, N * sizeof(float), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < N; i++)
    if (h[i] != k * (float)(i % 7)) { FAILF("rank %d large AllReduce [%zu] = %g", rank, i, h[i]); break; }
  CUDA_OK(cudaMemcpy(h, o, R * sizeof(float), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < R; i++)
    if (h[i] != k * (float)((R * rank + i) % 7)) { FAILF("rank %d large ReduceScatter [%zu] = %g", rank, i, h[i]); break; }
  CUDA_OK(cudaFree(d));
  CUDA_OK(cudaFree(o));
  free(h);
  return fails;
}

/* Ranks passing different reductions to the same AllReduce / ReduceScatter
 * (sum, max, PreMulSum by 2, min by rank % 4): NCCL's data movement does not
 * depend on the operation, so the call completes on every rank, and each
 * rank combines the contributions with its own operation (a PreMulSum
 * rank's contribution is its input times its scalar, on every rank). */
static float mixed_in(int r, size_t i) { return (float)((r * 3 + (int)i * 7) % 11 + 1); }
static float mixed_contrib(int r, size_t i) { return mixed_in(r, i) * (r % 4 == 2 ? 2.0f : 1.0f); }
static float mixed_want(int rank, int n, size_t i) {
  float acc = mixed_contrib(0, i);
  for (int r = 1; r < n; r++) {
    float x = mixed_contrib(r, i);
    acc = rank % 4 == 1 ? (x > acc ? x : acc) : rank % 4 == 3 ? (x < acc ? x : acc) : acc + x;
  }
  return acc;
}
static int test_mixed_ops(ncclComm_t comm, int rank, int n, cudaStream_t s) {
  int fails = 0;
  float two = 2.0f, *d, *h = malloc(sizeof(float) * COUNT * (size_t)n);
  ncclRedOp_t op = rank % 4 == 1 ? ncclMax : rank % 4 == 3 ? ncclMin : ncclSum;
  if (rank % 4 == 2) NCCL_OK(ncclRedOpCreatePreMulSum(&op, &two, ncclFloat32, ncclScalarHostImmediate, comm));
  CUDA_OK(cudaMalloc((void **)&d, sizeof(float) * COUNT * (size_t)(n + 1)));
  for (int rs = 0; rs < 2; rs++) {
    size_t nin = rs ? COUNT * (size_t)n : COUNT;   /* ReduceScatter: COUNT per rank */
    for (size_t i = 0; i < nin; i++) h[i] = mixed_in(rank, i);
    CUDA_OK(cudaMemcpy(d, h, sizeof(float) * nin, cudaMemcpyHostToDevice));
    float *out = d + nin;
    if (rs) NCCL_OK(ncclReduceScatter(d, out, COUNT, ncclFloat32, op, comm, s));
    else NCCL_OK(ncclAllReduce(d, out, COUNT, ncclFloat32, op, comm, s));
    if (stream_done_within(s, 5000) != 1) {
      FAILF("rank %d mixed-op %s did not complete", rank, rs ? "ReduceScatter" : "AllReduce");
      break;
    }
    CUDA_OK(cudaMemcpy(h, out, sizeof(float) * COUNT, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < COUNT; i++) {
      size_t gi = rs ? (size_t)rank * COUNT + i : i;
      if (h[i] != mixed_want(rank, n, gi)) {
        FAILF("rank %d mixed-op %s [%zu]: %g want %g (its own operation's result)", rank,
              rs ? "ReduceScatter" : "AllReduce", gi, h[i], mixed_want(rank, n, gi));
        break;
      }
    }
  }
  if (rank % 4 == 2) NCCL_OK(ncclRedOpDestroy(op, comm));
  CUDA_OK(cudaFree(d));
  free(h);
  return fails;
}

static int body(ncclComm_t comm, int rank, int n, void *arg) {
  int fails = 0;
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  fails += test_collectives(comm, rank, n, s);
  fails += test_a2a(comm, rank, n, s, c_equal, "a2a(equal)");
  fails += test_a2a(comm, rank, n, s, c_unequal, "a2a(unequal)");
  if (arg) fails += test_a2a(comm, rank, n, s, c_large, "a2a(large)");
  if (arg) fails += test_large_reduce(comm, rank, n, s);
  fails += test_a2a_builtin(comm, rank, n, s);
  fails += test_ring(comm, rank, n, s);
  fails += test_two_streams(comm, rank, n, s);
  fails += test_split(comm, rank, n, s);
  fails += test_premulsum(comm, rank, n, s);
  fails += test_mixed_ops(comm, rank, n, s);
  fails += test_errors_and_zero(comm, rank, n, s);
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaStreamDestroy(s));
  return fails;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s <proc|thread|group|initall> <nranks> [large]\n", argv[0]);
    return 2;
  }
  int n = atoi(argv[2]);
  int large = argc > 3 && !strcmp(argv[3], "large");
  int fails = run_ranks(argv[1], n, body, large ? (void *)1 : NULL, 50);
  printf("nccl_battery %s %d: %s\n", argv[1], n, fails ? "FAILED" : "ok");
  return fails ? 1 : 0;
}
