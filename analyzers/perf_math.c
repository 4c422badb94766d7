/* perf_math.c - see perf_math.h. The formulas follow NVIDIA/nccl-tests
 * (src/<op>.cu: <Op>GetBw and <Op>GetCollByteCount; src/common.cu passes the
 * NCCL API count), see docs/performance.md. */
#include "perf_math.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *a2a_perf_op_name(int op) {
  if (op >= 0 && op < A2A_COLL__COUNT) return a2a_coll_name(op);
  switch (op) {
  case A2A_PERF_OP_P2P_ALLTOALL: return "AlltoAll(send/recv)";
  case A2A_PERF_OP_SENDRECV: return "SendRecv";
  case A2A_PERF_OP_MIXED: return "MixedGroup";
  default: return "?";
  }
}


double a2a_perf_busbw_factor(int op, int nranks) {
  double n = nranks < 1 ? 1.0 : (double)nranks;
  switch (op) {
  case A2A_COLL_ALLREDUCE:
    return 2.0 * (n - 1.0) / n;
  case A2A_COLL_ALLGATHER:
  case A2A_COLL_REDUCESCATTER:
  case A2A_COLL_ALLTOALL:
  case A2A_COLL_GATHER:
  case A2A_COLL_SCATTER:
  case A2A_PERF_OP_P2P_ALLTOALL:
    return (n - 1.0) / n;
  default: /* Broadcast, Reduce, SendRecv, mixed groups */
    return 1.0;
  }
}

double a2a_perf_algbw_gbps(uint64_t bytes, double seconds) {
  if (!(seconds > 0.0)) return 0.0;
  return (double)bytes / 1.0e9 / seconds;
}


uint64_t a2a_perf_bucket_lo(int bucket) {
  if (bucket <= 0) return 0;
  return 1ULL << bucket;
}

char *a2a_perf_fmt_bytes(uint64_t bytes, char *buf, size_t cap) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)bytes;
  int u = 0;
  while (v >= 1024.0 && u < 4) { v /= 1024.0; u++; }
  if (u == 0) snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
  else if (v == (double)(uint64_t)v) snprintf(buf, cap, "%.0f %s", v, unit[u]);
  else snprintf(buf, cap, "%.1f %s", v, unit[u]);
  return buf;
}

void a2a_perf_fit_add(a2a_perf_fit *f, double x, double y) {
  if (f->n == 0 || x < f->min_x) f->min_x = x;
  if (f->n == 0 || x > f->max_x) f->max_x = x;
  f->n += 1; f->sx += x; f->sy += y; f->sxx += x * x; f->sxy += x * y;
}

int a2a_perf_fit_alpha(const a2a_perf_fit *f, double *alpha) {
  if (f->n < 2 || f->max_x < 2.0 * f->min_x || f->max_x <= 0) return -1;
  /* Center x to keep the normal equations well conditioned. */
  double mx = f->sx / f->n, my = f->sy / f->n;
  double varx = f->sxx / f->n - mx * mx;
  if (!(varx > 0)) return -1;
  double cov = f->sxy / f->n - mx * my;
  double slope = cov / varx; /* seconds per byte = 1 / beta */
  double a = my - slope * mx;
  if (!(slope > 0) || a < 0) return -1;
  *alpha = a;
  return 0;
}

double a2a_perf_small_gain(uint64_t n, uint64_t bytes, uint64_t batch_bytes,
                           double alpha) {
  if (n == 0 || !(alpha > 0)) return 0.0;
  if (batch_bytes == 0) batch_bytes = 1;
  uint64_t batches = (bytes + batch_bytes - 1) / batch_bytes;
  if (batches < 1) batches = 1;
  if (batches >= n) return 0.0;
  return (double)(n - batches) * alpha;
}

int a2a_perf_edit_distance(const char *a, const char *b, int cap) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 127 || lb > 127) return cap + 1;
  if ((la > lb ? la - lb : lb - la) > (size_t)cap) return cap + 1;
  int prev[128], cur[128];
  for (size_t j = 0; j <= lb; j++) prev[j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    cur[0] = (int)i;
    int rowmin = cur[0];
    for (size_t j = 1; j <= lb; j++) {
      int sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
      int del = prev[j] + 1, ins = cur[j - 1] + 1;
      int m = sub < del ? sub : del;
      cur[j] = m < ins ? m : ins;
      if (cur[j] < rowmin) rowmin = cur[j];
    }
    if (rowmin > cap) return cap + 1;
    memcpy(prev, cur, (lb + 1) * sizeof(int));
  }
  return prev[lb] > cap ? cap + 1 : prev[lb];
}

int a2a_perf_parse_u64(const char *s, uint64_t *out) {
  if (!s || !*s || *s == '-' || *s == '+') return -1;
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 0);
  if (errno || end == s || *end != '\0') return -1;
  *out = v;
  return 0;
}
