/* scenario_mixed.c - correct programs that mix what real training code
 * mixes, 4 ranks as forked processes, data verified. Each mode is one
 * program:
 *
 *   two_streams   data parallel + expert parallel: an AllReduce of the
 *                 gradients on communicator A / stream 1 and a grouped
 *                 all-to-all of the tokens on communicator B (a split copy)
 *                 / stream 2 in flight at the same time, both reading one
 *                 input buffer, a compute kernel on a third stream writing a
 *                 different buffer meanwhile; double-buffered outputs,
 *                 event edges only where data flows; 8 steps
 *   segment       caching-allocator style: one cudaMalloc segment carved into
 *                 tensors (send, recv, counts) at 512-byte-aligned offsets,
 *                 adjacent but disjoint; AlltoAll + grouped send/recv in it
 *   memalloc      ncclMemAlloc buffers registered with ncclCommRegister,
 *                 AllReduce / AllGather on them, deregister, ncclMemFree
 *   dtypes        AllReduce with ncclAvg and with a ncclRedOpCreatePreMulSum
 *                 op, AllGather/AlltoAll of int8, uint8, half, bfloat16,
 *                 double, int64 buffers
 *   coalesced     torch's coalescing manager: nested ncclGroupStart/End
 *                 holding collectives of two communicators and send/recv
 *   one_comm_two_streams  one communicator used on two streams in turn
 *                 (AllReduce on stream 1, AllGather on stream 2), each op
 *                 ordered after the previous one by an event, 10 steps
 *   simulate      every step first asks NCCL for the estimated time of its
 *                 grouped all-to-all (ncclGroupStart + ops +
 *                 ncclGroupSimulateEnd: nothing is launched), then issues
 *                 it for real; only the real operations may count
 *   unrelated_sync  inside an open group of send/recv on stream 1 the program
 *                 synchronizes an UNRELATED stream 2 and copies an unrelated
 *                 buffer to the host (cudaMemcpy): legal, nothing to report
 *   user_timing   the user times each collective with its own timing events
 *                 (cudaEventRecord before/after, cudaEventElapsedTime)
 * Correct: exit 0, no error/warning finding.
 */
#include "scenario_common.h"

#define NR 4
#define N 4096L

static const char *mode;
static int is(const char *m) { return strcmp(mode, m) == 0; }

static long expect_eq(const void *d, const void *want, size_t bytes, int rank, const char *what) {
  unsigned char *h = malloc(bytes);
  SC_CUDA(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
  long bad = memcmp(h, want, bytes) != 0;
  if (bad) fprintf(stderr, "rank %d: %s differs\n", rank, what);
  free(h);
  return bad;
}

static long run_two_streams(int rank, int nranks, ncclComm_t A) {
  ncclComm_t B;
  SC_NCCL(ncclCommSplit(A, 0, rank, &B, NULL));
  cudaStream_t comp, s1, s2;
  SC_CUDA(cudaStreamCreateWithFlags(&comp, cudaStreamNonBlocking));
  SC_CUDA(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  SC_CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  SC_CUDA((cudaError_t)a2asim_stream_set_delay(s2, 1000));
  float *in, *red[2], *tok[2], *other, *acc;
  SC_CUDA(cudaMalloc((void **)&in, N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&other, N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&acc, N * sizeof(float)));
  for (int k = 0; k < 2; k++) {
    SC_CUDA(cudaMalloc((void **)&red[k], N * sizeof(float)));
    SC_CUDA(cudaMalloc((void **)&tok[k], N * sizeof(float)));
  }
  SC_CUDA(cudaMemsetAsync(acc, 0, N * sizeof(float), comp));
  cudaEvent_t produced, d1[2], d2[2], consumed[2];
  SC_CUDA(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming));
  for (int k = 0; k < 2; k++) {
    SC_CUDA(cudaEventCreateWithFlags(&d1[k], cudaEventDisableTiming));
    SC_CUDA(cudaEventCreateWithFlags(&d2[k], cudaEventDisableTiming));
    SC_CUDA(cudaEventCreateWithFlags(&consumed[k], cudaEventDisableTiming));
    SC_CUDA(cudaEventRecord(consumed[k], comp));
  }
  size_t c = N / nranks;
  for (int t = 0; t < 8; t++) {
    int k = t % 2;
    /* in is read by the previous step's communication: wait for it */
    if (t > 0) {
      SC_CUDA(cudaStreamWaitEvent(comp, d1[1 - k], 0));
      SC_CUDA(cudaStreamWaitEvent(comp, d2[1 - k], 0));
    }
    sc_fill(in, N, (float)(rank + t), 0.0f, comp);
    SC_CUDA(cudaEventRecord(produced, comp));
    /* outputs k were consumed two steps ago */
    SC_CUDA(cudaStreamWaitEvent(s1, produced, 0));
    SC_CUDA(cudaStreamWaitEvent(s1, consumed[k], 0));
    SC_CUDA(cudaStreamWaitEvent(s2, produced, 0));
    SC_CUDA(cudaStreamWaitEvent(s2, consumed[k], 0));
    SC_NCCL(ncclAllReduce(in, red[k], N, ncclFloat32, ncclSum, A, s1));
    SC_NCCL(ncclGroupStart());
    for (int p = 0; p < nranks; p++) {
      SC_NCCL(ncclSend(in + p * c, c, ncclFloat32, p, B, s2));
      SC_NCCL(ncclRecv(tok[k] + p * c, c, ncclFloat32, p, B, s2));
    }
    SC_NCCL(ncclGroupEnd());
    SC_CUDA(cudaEventRecord(d1[k], s1));
    SC_CUDA(cudaEventRecord(d2[k], s2));
    /* unrelated compute meanwhile */
    sc_fill(other, N, (float)t, 1.0f, comp);
    /* consume both outputs */
    SC_CUDA(cudaStreamWaitEvent(comp, d1[k], 0));
    SC_CUDA(cudaStreamWaitEvent(comp, d2[k], 0));
    sc_axpy(acc, red[k], N, 1.0f, comp);
    sc_axpy(acc, tok[k], N, 1.0f, comp);
    SC_CUDA(cudaEventRecord(consumed[k], comp));
  }
  SC_CUDA(cudaStreamSynchronize(comp));
  SC_CUDA(cudaStreamSynchronize(s1));
  SC_CUDA(cudaStreamSynchronize(s2));
  float *h = malloc(N * sizeof(float));
  SC_CUDA(cudaMemcpy(h, acc, N * sizeof(float), cudaMemcpyDeviceToHost));
  long bad = 0;
  for (long i = 0; i < N; i++) {
    double want = 0;
    for (int t = 0; t < 8; t++) {
      for (int r = 0; r < nranks; r++) want += r + t;
      want += (double)(i / c) + t; /* token chunk from rank i/c */
    }
    if (h[i] != (float)want && bad++ < 3) fprintf(stderr, "rank %d: acc[%ld]=%g want %g\n", rank, i, h[i], want);
  }
  free(h);
  SC_CUDA(cudaFree(in));
  SC_CUDA(cudaFree(other));
  SC_CUDA(cudaFree(acc));
  for (int k = 0; k < 2; k++) {
    SC_CUDA(cudaFree(red[k]));
    SC_CUDA(cudaFree(tok[k]));
    SC_CUDA(cudaEventDestroy(d1[k]));
    SC_CUDA(cudaEventDestroy(d2[k]));
    SC_CUDA(cudaEventDestroy(consumed[k]));
  }
  SC_CUDA(cudaEventDestroy(produced));
  SC_CUDA(cudaStreamDestroy(comp));
  SC_CUDA(cudaStreamDestroy(s1));
  SC_CUDA(cudaStreamDestroy(s2));
  SC_NCCL(ncclCommDestroy(B));
  return bad;
}

static long run_segment(int rank, int nranks, ncclComm_t comm) {
  cudaStream_t s;
  SC_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  char *seg;
  size_t seg_bytes = 2u << 20;
  SC_CUDA(cudaMalloc((void **)&seg, seg_bytes));
  /* tensors at 512-byte granularity, back to back */
  size_t c = 1000; /* floats per peer: 4000 bytes, not a multiple of 512 */
  size_t tb = (nranks * c * sizeof(float) + 511) / 512 * 512;
  float *send = (float *)seg, *recv = (float *)(seg + tb), *recv2 = (float *)(seg + 2 * tb);
  int64_t *cnt_out = (int64_t *)(seg + 3 * tb), *cnt_in = (int64_t *)(seg + 3 * tb + 512);
  float *hs = malloc(nranks * c * sizeof(float));
  for (int p = 0; p < nranks; p++)
    for (size_t i = 0; i < c; i++) hs[p * c + i] = (float)(rank * 1000 + p * 10) + (float)(i % 7);
  int64_t hc[NR];
  for (int p = 0; p < nranks; p++) hc[p] = rank * 10 + p;
  SC_CUDA(cudaMemcpyAsync(send, hs, nranks * c * sizeof(float), cudaMemcpyHostToDevice, s));
  SC_CUDA(cudaMemcpyAsync(cnt_out, hc, sizeof hc, cudaMemcpyHostToDevice, s));
  SC_NCCL(ncclAlltoAll(cnt_out, cnt_in, 1, ncclInt64, comm, s));
  SC_NCCL(ncclAlltoAll(send, recv, c, ncclFloat32, comm, s));
  SC_NCCL(ncclGroupStart());
  for (int p = 0; p < nranks; p++) {
    SC_NCCL(ncclSend(send + p * c, c, ncclFloat32, p, comm, s));
    SC_NCCL(ncclRecv(recv2 + p * c, c, ncclFloat32, p, comm, s));
  }
  SC_NCCL(ncclGroupEnd());
  SC_CUDA(cudaStreamSynchronize(s));
  float *want = malloc(nranks * c * sizeof(float));
  for (int p = 0; p < nranks; p++)
    for (size_t i = 0; i < c; i++) want[p * c + i] = (float)(p * 1000 + rank * 10) + (float)(i % 7);
  int64_t wc[NR];
  for (int p = 0; p < nranks; p++) wc[p] = p * 10 + rank;
  long bad = expect_eq(recv, want, nranks * c * sizeof(float), rank, "alltoall") +
             expect_eq(recv2, want, nranks * c * sizeof(float), rank, "grouped") +
             expect_eq(cnt_in, wc, sizeof wc, rank, "counts");
  free(hs);
  free(want);
  SC_CUDA(cudaFree(seg));
  SC_CUDA(cudaStreamDestroy(s));
  return bad;
}

static long run_memalloc(int rank, int nranks, ncclComm_t comm) {
  cudaStream_t s;
  SC_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float *a, *g;
  SC_NCCL(ncclMemAlloc((void **)&a, N * sizeof(float)));
  SC_NCCL(ncclMemAlloc((void **)&g, nranks * N * sizeof(float)));
  void *ha, *hg;
  SC_NCCL(ncclCommRegister(comm, a, N * sizeof(float), &ha));
  SC_NCCL(ncclCommRegister(comm, g, nranks * N * sizeof(float), &hg));
  sc_fill(a, N, (float)rank, 0.0f, s);
  SC_NCCL(ncclAllGather(a, g, N, ncclFloat32, comm, s));
  SC_NCCL(ncclAllReduce(a, a, N, ncclFloat32, ncclSum, comm, s));
  SC_CUDA(cudaStreamSynchronize(s));
  float *h = malloc(nranks * N * sizeof(float));
  long bad = 0;
  SC_CUDA(cudaMemcpy(h, g, nranks * N * sizeof(float), cudaMemcpyDeviceToHost));
  for (long i = 0; i < nranks * N; i++)
    if (h[i] != (float)(i / N) && bad++ < 3) fprintf(stderr, "rank %d: g[%ld]=%g\n", rank, i, h[i]);
  SC_CUDA(cudaMemcpy(h, a, N * sizeof(float), cudaMemcpyDeviceToHost));
  for (long i = 0; i < N; i++)
    if (h[i] != 6.0f && bad++ < 3) fprintf(stderr, "rank %d: a[%ld]=%g\n", rank, i, h[i]);
  free(h);
  SC_NCCL(ncclCommDeregister(comm, ha));
  SC_NCCL(ncclCommDeregister(comm, hg));
  SC_NCCL(ncclMemFree(a));
  SC_NCCL(ncclMemFree(g));
  SC_CUDA(cudaStreamDestroy(s));
  return bad;
}

static uint16_t f2h(float f) { /* exact for small integers */
  union { float f; uint32_t u; } v = {f};
  uint32_t sign = (v.u >> 16) & 0x8000, exp = ((v.u >> 23) & 0xff), man = v.u & 0x7fffff;
  if (f == 0) return (uint16_t)sign;
  return (uint16_t)(sign | ((exp - 127 + 15) << 10) | (man >> 13));
}
static uint16_t f2bf(float f) { union { float f; uint32_t u; } v = {f}; return (uint16_t)(v.u >> 16); }

static long run_dtypes(int rank, int nranks, ncclComm_t comm) {
  cudaStream_t s;
  SC_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  long bad = 0;
  /* Avg and PreMulSum on float */
  float *x;
  SC_CUDA(cudaMalloc((void **)&x, N * sizeof(float)));
  sc_fill(x, N, (float)(2 * rank), 0.0f, s);
  SC_NCCL(ncclAllReduce(x, x, N, ncclFloat32, ncclAvg, comm, s)); /* (0+2+4+6)/4 = 3 */
  float scale = 0.5f;
  ncclRedOp_t pm;
  SC_NCCL(ncclRedOpCreatePreMulSum(&pm, &scale, ncclFloat32, ncclScalarHostImmediate, comm));
  SC_NCCL(ncclAllReduce(x, x, N, ncclFloat32, pm, comm, s)); /* 4 * 0.5 * 3 = 6 */
  SC_CUDA(cudaStreamSynchronize(s));
  SC_NCCL(ncclRedOpDestroy(pm, comm));
  float *h = malloc(N * sizeof(float));
  SC_CUDA(cudaMemcpy(h, x, N * sizeof(float), cudaMemcpyDeviceToHost));
  for (long i = 0; i < N; i++)
    if (h[i] != 6.0f && bad++ < 3) fprintf(stderr, "rank %d: premulsum[%ld]=%g\n", rank, i, h[i]);
  free(h);
  SC_CUDA(cudaFree(x));
  /* AllGather and AlltoAll in every element size */
  ncclDataType_t types[] = {ncclInt8, ncclUint8, ncclFloat16, ncclBfloat16, ncclFloat64, ncclInt64};
  for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
    size_t es = sc_dtype_size(types[k]), cnt = 256;
    unsigned char *hin = malloc(nranks * cnt * es), *want = malloc(nranks * cnt * es), *hg = malloc(nranks * cnt * es);
    for (int p = 0; p < nranks; p++)
      for (size_t i = 0; i < cnt; i++) {
        int v = rank * 10 + p, w = p * 10 + rank;
        unsigned char *o = hin + (p * cnt + i) * es, *q = want + (p * cnt + i) * es;
        switch (types[k]) {
        case ncclInt8: case ncclUint8: *o = (unsigned char)v; *q = (unsigned char)w; break;
        case ncclFloat16: { uint16_t a = f2h((float)v), b = f2h((float)w); memcpy(o, &a, 2); memcpy(q, &b, 2); break; }
        case ncclBfloat16: { uint16_t a = f2bf((float)v), b = f2bf((float)w); memcpy(o, &a, 2); memcpy(q, &b, 2); break; }
        case ncclFloat64: { double a = v, b = w; memcpy(o, &a, 8); memcpy(q, &b, 8); break; }
        default: { int64_t a = v, b = w; memcpy(o, &a, 8); memcpy(q, &b, 8); break; }
        }
      }
    void *din, *dout, *dg;
    SC_CUDA(cudaMalloc(&din, nranks * cnt * es));
    SC_CUDA(cudaMalloc(&dout, nranks * cnt * es));
    SC_CUDA(cudaMalloc(&dg, nranks * cnt * es));
    SC_CUDA(cudaMemcpyAsync(din, hin, nranks * cnt * es, cudaMemcpyHostToDevice, s));
    SC_NCCL(ncclAlltoAll(din, dout, cnt, types[k], comm, s));
    SC_NCCL(ncclAllGather(din, dg, cnt, types[k], comm, s)); /* chunk 0 of every rank */
    SC_CUDA(cudaStreamSynchronize(s));
    bad += expect_eq(dout, want, nranks * cnt * es, rank, "alltoall dtype");
    SC_CUDA(cudaMemcpy(hg, dg, nranks * cnt * es, cudaMemcpyDeviceToHost));
    for (int p = 0; p < nranks; p++) {
      /* rank p's chunk 0 = values p*10 + 0, which is want's chunk p on rank 0 */
      unsigned char *expect = malloc(cnt * es);
      for (size_t i = 0; i < cnt; i++) {
        int v = p * 10;
        unsigned char *q = expect + i * es;
        switch (types[k]) {
        case ncclInt8: case ncclUint8: *q = (unsigned char)v; break;
        case ncclFloat16: { uint16_t b = f2h((float)v); memcpy(q, &b, 2); break; }
        case ncclBfloat16: { uint16_t b = f2bf((float)v); memcpy(q, &b, 2); break; }
        case ncclFloat64: { double b = v; memcpy(q, &b, 8); break; }
        default: { int64_t b = v; memcpy(q, &b, 8); break; }
        }
      }
      if (memcmp(hg + p * cnt * es, expect, cnt * es) != 0 && bad++ < 3)
        fprintf(stderr, "rank %d: allgather dtype %d chunk %d\n", rank, (int)types[k], p);
      free(expect);
    }
    free(hin);
    free(want);
    free(hg);
    SC_CUDA(cudaFree(din));
    SC_CUDA(cudaFree(dout));
    SC_CUDA(cudaFree(dg));
  }
  SC_CUDA(cudaStreamDestroy(s));
  return bad;
}

static long run_coalesced(int rank, int nranks, ncclComm_t A) {
  ncclComm_t B;
  SC_NCCL(ncclCommSplit(A, rank % 2, rank, &B, NULL)); /* {0,2}, {1,3} */
  cudaStream_t sa, sb;
  SC_CUDA(cudaStreamCreateWithFlags(&sa, cudaStreamNonBlocking));
  SC_CUDA(cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking));
  float *x, *y, *z, *r;
  SC_CUDA(cudaMalloc((void **)&x, N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&y, N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&z, N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&r, N * sizeof(float)));
  sc_fill(x, N, 1.0f, 0.0f, sa);
  sc_fill(z, N, (float)(100 + rank), 0.0f, sa);
  sc_fill(y, N, (float)rank, 0.0f, sb);
  SC_CUDA(cudaStreamSynchronize(sa));
  SC_CUDA(cudaStreamSynchronize(sb));
  int peer = rank ^ 1;
  SC_NCCL(ncclGroupStart()); /* with dist._coalescing_manager(): */
  SC_NCCL(ncclGroupStart());
  SC_NCCL(ncclAllReduce(x, x, N, ncclFloat32, ncclSum, A, sa));
  SC_NCCL(ncclGroupEnd());
  SC_NCCL(ncclGroupStart());
  SC_NCCL(ncclAllReduce(y, y, N, ncclFloat32, ncclMax, B, sb));
  SC_NCCL(ncclSend(z, N, ncclFloat32, peer, A, sa));
  SC_NCCL(ncclRecv(r, N, ncclFloat32, peer, A, sa));
  SC_NCCL(ncclGroupEnd());
  SC_NCCL(ncclGroupEnd());
  SC_CUDA(cudaStreamSynchronize(sa));
  SC_CUDA(cudaStreamSynchronize(sb));
  float *h = malloc(N * sizeof(float));
  long bad = 0;
  SC_CUDA(cudaMemcpy(h, x, N * sizeof(float), cudaMemcpyDeviceToHost));
  for (long i = 0; i < N; i++)
    if (h[i] != (float)nranks && bad++ < 3) fprintf(stderr, "rank %d: x[%ld]=%g\n", rank, i, h[i]);
  SC_CUDA(cudaMemcpy(h, y, N * sizeof(float), cudaMemcpyDeviceToHost));
  for (long i = 0; i < N; i++)
    if (h[i] != (float)(rank % 2 + 2) && bad++ < 3) fprintf(stderr, "rank %d: y[%ld]=%g\n", rank, i, h[i]);
  SC_CUDA(cudaMemcpy(h, r, N * sizeof(float), cudaMemcpyDeviceToHost));
  for (long i = 0; i < N; i++)
    if (h[i] != (float)(100 + peer) && bad++ < 3) fprintf(stderr, "rank %d: r[%ld]=%g\n", rank, i, h[i]);
  free(h);
  SC_CUDA(cudaFree(x));
  SC_CUDA(cudaFree(y));
  SC_CUDA(cudaFree(z));
  SC_CUDA(cudaFree(r));
  SC_CUDA(cudaStreamDestroy(sa));
  SC_CUDA(cudaStreamDestroy(sb));
  SC_NCCL(ncclCommDestroy(B));
  return bad;
}

static long run_user_timing(int rank, int nranks, ncclComm_t comm) {
  (void)nranks;
  cudaStream_t s;
  SC_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t t0, t1;
  SC_CUDA(cudaEventCreate(&t0));
  SC_CUDA(cudaEventCreate(&t1));
  float *x;
  SC_CUDA(cudaMalloc((void **)&x, N * sizeof(float)));
  long bad = 0;
  for (int t = 0; t < 5; t++) {
    sc_fill(x, N, 1.0f, 0.0f, s);
    SC_CUDA(cudaEventRecord(t0, s));
    SC_NCCL(ncclAllReduce(x, x, N, ncclFloat32, ncclSum, comm, s));
    SC_CUDA(cudaEventRecord(t1, s));
    SC_CUDA(cudaEventSynchronize(t1));
    float ms = -1;
    SC_CUDA(cudaEventElapsedTime(&ms, t0, t1));
    if (!(ms >= 0)) bad++;
    float v;
    SC_CUDA(cudaMemcpy(&v, x + N - 1, sizeof v, cudaMemcpyDeviceToHost));
    if (v != 4.0f) bad++;
  }
  (void)rank;
  SC_CUDA(cudaEventDestroy(t0));
  SC_CUDA(cudaEventDestroy(t1));
  SC_CUDA(cudaFree(x));
  SC_CUDA(cudaStreamDestroy(s));
  return bad;
}

static long run_one_comm_two_streams(int rank, int nranks, ncclComm_t comm) {
  cudaStream_t s1, s2;
  SC_CUDA(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  SC_CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t e1, e2;
  SC_CUDA(cudaEventCreateWithFlags(&e1, cudaEventDisableTiming));
  SC_CUDA(cudaEventCreateWithFlags(&e2, cudaEventDisableTiming));
  float *x, *g;
  SC_CUDA(cudaMalloc((void **)&x, N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&g, nranks * N * sizeof(float)));
  long bad = 0;
  for (int t = 0; t < 10; t++) {
    if (t > 0) SC_CUDA(cudaStreamWaitEvent(s1, e2, 0)); /* after the previous AllGather */
    sc_fill(x, N, (float)(rank + t), 0.0f, s1);
    SC_NCCL(ncclAllReduce(x, x, N, ncclFloat32, ncclSum, comm, s1));
    SC_CUDA(cudaEventRecord(e1, s1));
    SC_CUDA(cudaStreamWaitEvent(s2, e1, 0));
    SC_NCCL(ncclAllGather(x, g, N, ncclFloat32, comm, s2));
    SC_CUDA(cudaEventRecord(e2, s2));
  }
  SC_CUDA(cudaStreamSynchronize(s2));
  float *h = malloc(nranks * N * sizeof(float));
  SC_CUDA(cudaMemcpy(h, g, nranks * N * sizeof(float), cudaMemcpyDeviceToHost));
  for (long i = 0; i < nranks * N; i++)
    if (h[i] != (float)(6 + 4 * 9) && bad++ < 3) fprintf(stderr, "rank %d: g[%ld]=%g\n", rank, i, h[i]);
  free(h);
  SC_CUDA(cudaFree(x));
  SC_CUDA(cudaFree(g));
  SC_CUDA(cudaEventDestroy(e1));
  SC_CUDA(cudaEventDestroy(e2));
  SC_CUDA(cudaStreamDestroy(s1));
  SC_CUDA(cudaStreamDestroy(s2));
  return bad;
}

static long run_simulate(int rank, int nranks, ncclComm_t comm) {
  cudaStream_t s;
  SC_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  size_t c = 512;
  float *a, *b;
  SC_CUDA(cudaMalloc((void **)&a, nranks * c * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&b, nranks * c * sizeof(float)));
  long bad = 0;
  for (int t = 0; t < 5; t++) {
    sc_fill(a, nranks * c, (float)(rank * 10 + t), 0.0f, s);
    for (int real = 0; real < 2; real++) {
      SC_NCCL(ncclGroupStart());
      for (int p = 0; p < nranks; p++) {
        SC_NCCL(ncclSend(a + p * c, c, ncclFloat32, p, comm, s));
        SC_NCCL(ncclRecv(b + p * c, c, ncclFloat32, p, comm, s));
      }
      if (real) {
        SC_NCCL(ncclGroupEnd());
      } else {
        ncclSimInfo_t si = NCCL_SIM_INFO_INITIALIZER;
        SC_NCCL(ncclGroupSimulateEnd(&si));
        if (!(si.estimatedTime >= 0)) bad++;
      }
    }
    SC_CUDA(cudaStreamSynchronize(s));
    float *h = malloc(nranks * c * sizeof(float));
    SC_CUDA(cudaMemcpy(h, b, nranks * c * sizeof(float), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < nranks * c; i++)
      if (h[i] != (float)((i / c) * 10 + t) && bad++ < 3) fprintf(stderr, "rank %d: b[%zu]=%g\n", rank, i, h[i]);
    free(h);
  }
  SC_CUDA(cudaFree(a));
  SC_CUDA(cudaFree(b));
  SC_CUDA(cudaStreamDestroy(s));
  return bad;
}

static long run_unrelated_sync(int rank, int nranks, ncclComm_t comm) {
  cudaStream_t s1, s2;
  SC_CUDA(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  SC_CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  float *a, *b, *other;
  SC_CUDA(cudaMalloc((void **)&a, nranks * 256 * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&b, nranks * 256 * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&other, 256 * sizeof(float)));
  sc_fill(a, nranks * 256, (float)rank, 0.0f, s1);
  sc_fill(other, 256, 7.0f, 0.0f, s2);
  long bad = 0;
  SC_NCCL(ncclGroupStart());
  for (int p = 0; p < nranks; p++) {
    SC_NCCL(ncclSend(a + p * 256, 256, ncclFloat32, p, comm, s1));
    SC_NCCL(ncclRecv(b + p * 256, 256, ncclFloat32, p, comm, s1));
    if (p == 1) {
      float h = 0;
      SC_CUDA(cudaStreamSynchronize(s2));                                 /* unrelated stream */
      SC_CUDA(cudaMemcpy(&h, other, sizeof h, cudaMemcpyDeviceToHost)); /* unrelated buffer */
      if (h != 7.0f) bad++;
    }
  }
  SC_NCCL(ncclGroupEnd());
  SC_CUDA(cudaStreamSynchronize(s1));
  float *hb = malloc(nranks * 256 * sizeof(float));
  SC_CUDA(cudaMemcpy(hb, b, nranks * 256 * sizeof(float), cudaMemcpyDeviceToHost));
  for (long i = 0; i < nranks * 256; i++)
    if (hb[i] != (float)(i / 256) && bad++ < 3) fprintf(stderr, "rank %d: b[%ld]=%g\n", rank, i, hb[i]);
  free(hb);
  SC_CUDA(cudaFree(a));
  SC_CUDA(cudaFree(b));
  SC_CUDA(cudaFree(other));
  SC_CUDA(cudaStreamDestroy(s1));
  SC_CUDA(cudaStreamDestroy(s2));
  return bad;
}

static int rank_main(int rank, int nranks, ncclUniqueId id, void *arg) {
  (void)arg;
  ncclComm_t comm;
  SC_NCCL(ncclCommInitRank(&comm, nranks, id, rank));
  long bad;
  if (is("two_streams")) bad = run_two_streams(rank, nranks, comm);
  else if (is("segment")) bad = run_segment(rank, nranks, comm);
  else if (is("memalloc")) bad = run_memalloc(rank, nranks, comm);
  else if (is("dtypes")) bad = run_dtypes(rank, nranks, comm);
  else if (is("coalesced")) bad = run_coalesced(rank, nranks, comm);
  else if (is("user_timing")) bad = run_user_timing(rank, nranks, comm);
  else if (is("simulate")) bad = run_simulate(rank, nranks, comm);
  else if (is("unrelated_sync")) bad = run_unrelated_sync(rank, nranks, comm);
  else if (is("one_comm_two_streams")) bad = run_one_comm_two_streams(rank, nranks, comm);
  else return 1;
  sc_sh->result[rank] = bad;
  SC_NCCL(ncclCommDestroy(comm));
  return bad ? SC_DATA_WRONG : 0;
}

int main(int argc, char **argv) {
  mode = argc > 1 ? argv[1] : "two_streams";
  return sc_fork_ranks(NR, rank_main, NULL);
}
