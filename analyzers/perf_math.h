/* perf_math.h - the pure arithmetic behind the perf.* checks: nccl-tests'
 * byte counts and bus-bandwidth factors, size buckets, the latency fit used
 * by the small-message gain estimate, and the edit distance used for
 * NCCL_* typo suggestions (the two the hot path needs per operation,
 * the byte count and the bucket, inline). No state, no I/O: unit-tested directly
 * (tests/unit/test_perf_math.c). docs/performance.md explains every formula.
 */
#ifndef A2A_PERF_MATH_H
#define A2A_PERF_MATH_H

#include <stddef.h>
#include <stdint.h>

#include "a2a_event.h"

/* The operations the perf analyzers keep statistics for: the collectives
 * (same values as a2a_coll), then logical operations made of grouped
 * point-to-point calls. */
enum {
  A2A_PERF_OP_P2P_ALLTOALL = A2A_COLL__COUNT, /* a group of one send and one
                                                 recv per peer, equal counts:
                                                 an all-to-all (torch's path) */
  A2A_PERF_OP_SENDRECV,                      /* any other send/recv group or a
                                                 lone ncclSend/ncclRecv */
  A2A_PERF_OP_MIXED,                         /* collectives and p2p in one group */
  A2A_PERF_OP__COUNT
};

/* Printable name ("AllReduce", "AlltoAll(send/recv)", "SendRecv", ...). */
const char *a2a_perf_op_name(int op);

/* nccl-tests' byte count for one operation ("size" column; algbw = this /
 * time). count has the NCCL API meaning recorded in a2a_event (per-rank for
 * AllGather/ReduceScatter/Gather/Scatter, per-peer for AlltoAll):
 *   AllReduce, Broadcast, Reduce, SendRecv:       count * size
 *   AllGather, ReduceScatter, AlltoAll,
 *   Gather, Scatter:                              count * size * nranks
 * For the grouped p2p ops pass the summed bytes as count with size 1 and
 * nranks 1 (they are already totals). */
static inline uint64_t a2a_perf_op_bytes(int op, size_t count, size_t dtype_size, int nranks) {
  uint64_t n = nranks < 1 ? 1 : (uint64_t)nranks;
  uint64_t b = (uint64_t)count * (uint64_t)dtype_size;
  switch (op) {
  case A2A_COLL_ALLGATHER:
  case A2A_COLL_REDUCESCATTER:
  case A2A_COLL_ALLTOALL:
  case A2A_COLL_GATHER:
  case A2A_COLL_SCATTER:
    return b * n;
  default:
    return b;
  }
}

/* nccl-tests' bus-bandwidth factor for a communicator of nranks ranks
 * (the communicator's size, never the world size):
 *   AllReduce 2(n-1)/n; AllGather, ReduceScatter, AlltoAll, Gather, Scatter,
 *   AlltoAll(send/recv) (n-1)/n; Broadcast, Reduce, SendRecv, mixed 1.
 * nranks < 1 is treated as 1. */
double a2a_perf_busbw_factor(int op, int nranks);

/* algbw in GB/s (1 GB = 1e9 B) for bytes moved in seconds; 0 if seconds <= 0. */
double a2a_perf_algbw_gbps(uint64_t bytes, double seconds);

/* Size buckets: bucket b holds sizes in [2^b, 2^(b+1)); size 0 is bucket 0.
 * Buckets above A2A_PERF_NBUCKETS-1 are clamped into the last one. */
#define A2A_PERF_NBUCKETS 48
static inline int a2a_perf_bucket(uint64_t bytes) {
  if (bytes == 0) return 0;
  int b = 63 - __builtin_clzll(bytes);
  return b >= A2A_PERF_NBUCKETS ? A2A_PERF_NBUCKETS - 1 : b;
}
/* Lower bound of a bucket in bytes. */
uint64_t a2a_perf_bucket_lo(int bucket);
/* Human size "64 KiB", "1.5 MiB" into buf (returns buf). */
char *a2a_perf_fmt_bytes(uint64_t bytes, char *buf, size_t cap);

/* Running least-squares fit time = alpha + bytes / beta over measured
 * operations; alpha is the per-operation fixed cost (launch + latency). */
typedef struct a2a_perf_fit {
  double n, sx, sy, sxx, sxy;
  double min_x, max_x;
} a2a_perf_fit;
void a2a_perf_fit_add(a2a_perf_fit *f, double bytes, double seconds);
/* Intercept in seconds; returns 0 and sets *alpha when the sizes are spread
 * enough to fit (max >= 2 * min, at least 2 points) and the intercept is
 * >= 0, else returns -1. */
int a2a_perf_fit_alpha(const a2a_perf_fit *f, double *alpha);

/* The small-message gain model: n small operations moving `bytes` in total
 * could be sent as ceil(bytes / batch_bytes) operations (at least 1) of
 * batch_bytes each; each operation saved saves the fixed cost alpha. Returns
 * the estimated seconds saved, (n - batches) * alpha, never negative. */
double a2a_perf_small_gain(uint64_t n, uint64_t bytes, uint64_t batch_bytes,
                           double alpha);

/* Levenshtein distance between a and b (ASCII, case-sensitive), capped:
 * returns cap+1 as soon as the distance is known to exceed cap. Strings
 * longer than 127 characters compare as cap+1. */
int a2a_perf_edit_distance(const char *a, const char *b, int cap);

/* Strict unsigned parse of a decimal or 0x-hex value (NCCL uses strtoll base
 * 0); returns 0 on success. */
int a2a_perf_parse_u64(const char *s, uint64_t *out);

#endif /* A2A_PERF_MATH_H */
