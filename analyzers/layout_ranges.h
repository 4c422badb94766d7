/* layout_ranges.h - the byte ranges an NCCL operation reads and writes, as
 * nccl.h defines them (NCCL 2.28). Shared by the layout and group_local
 * analyzers (and usable by any analyzer that needs "which bytes does this
 * operation touch").
 *
 * Per operation (sz = a2a_dtype_size(dtype), n = nranks, c = count):
 *   AllReduce      send c*sz               recv c*sz
 *   Broadcast      send c*sz (root only)   recv c*sz
 *   Reduce         send c*sz               recv c*sz (root only)
 *   AllGather      send c*sz               recv n*c*sz
 *   ReduceScatter  send n*c*sz             recv c*sz
 *   AlltoAll       send n*c*sz             recv n*c*sz
 *   Gather         send c*sz               recv n*c*sz (root only)
 *   Scatter        send n*c*sz (root only) recv c*sz
 *   Send / Recv    c*sz
 * A buffer NCCL does not use on this rank (non-root recv of Reduce, ...)
 * gets no range, and neither does a NULL buffer. Zero-byte ranges are
 * returned with lo == hi: callers decide
 * (zero-count ranges never overlap anything). When nranks or rank is unknown
 * (comm not in the registry: nranks <= 0) the nranks factor is taken as 1 and
 * root-only buffers are assumed used, and `exact` is false.
 */
#ifndef A2A_LAYOUT_RANGES_H
#define A2A_LAYOUT_RANGES_H

#include <stdbool.h>
#include <stdint.h>

#include "a2a_core.h"

typedef struct lr_range {
  uintptr_t lo, hi;         /* [lo, hi) */
  size_t elems;             /* elements covered (for messages) */
  bool is_recv;             /* written by the operation */
  bool per_rank;            /* the range is n chunks of c elements (a peer
                               chunk = c*sz): AllGather recv, AlltoAll, ... */
  bool saturated;           /* the size overflowed (count * sz * n > SIZE_MAX
                               or past the address space): hi is clamped, and
                               only "past the end" can be judged */
} lr_range;

typedef struct lr_op {
  lr_range r[2];
  int n;                    /* ranges filled (0..2) */
  size_t elem;              /* dtype size, 0 if the dtype is invalid */
  bool exact;               /* nranks/rank known */
} lr_op;

/* Saturating multiply for size computations on untrusted counts. */
static inline size_t lr_mul(size_t a, size_t b) {
  size_t r;
  if (__builtin_mul_overflow(a, b, &r)) return SIZE_MAX;
  return r;
}

static inline void lr_add(lr_op *op, const void *p, size_t elems, bool is_recv,
                          bool per_rank) {
  /* A NULL buffer is one NCCL does not use here (non-root recvbuff of
   * Reduce, ...) or one NCCL's own argument check rejects: no range. */
  if (!p) return;
  lr_range *r = &op->r[op->n++];
  size_t bytes = lr_mul(elems, op->elem);
  r->lo = (uintptr_t)p;
  r->saturated = elems == SIZE_MAX || bytes == SIZE_MAX || bytes > UINTPTR_MAX - r->lo;
  r->hi = r->saturated ? UINTPTR_MAX : r->lo + bytes;
  r->elems = elems;
  r->is_recv = is_recv;
  r->per_rank = per_rank;
}

/* Fill *op for a COLL or P2P event; c may be NULL (unknown communicator).
 * Returns false for other events or an invalid dtype (op->n == 0). */
static inline bool lr_op_ranges(const a2a_event *ev, const a2a_comm *c, lr_op *op) {
  op->n = 0;
  op->exact = c && c->nranks > 0;
  size_t n = op->exact ? (size_t)c->nranks : 1;
  int rank = op->exact ? c->rank : -1;
  if (ev->kind == A2A_EV_P2P) {
    op->elem = a2a_dtype_size(ev->u.p2p.dtype);
    if (!op->elem) return false;
    lr_add(op, ev->u.p2p.buff, ev->u.p2p.count, !ev->u.p2p.is_send, false);
    return true;
  }
  if (ev->kind != A2A_EV_COLL) return false;
  op->elem = a2a_dtype_size(ev->u.coll.dtype);
  if (!op->elem) return false;
  size_t cnt = ev->u.coll.count;
  const void *s = ev->u.coll.sendbuff;
  const void *r = ev->u.coll.recvbuff;
  /* rank == -1 (unknown) counts as root: assume the buffer is used. */
  bool root = rank < 0 || rank == ev->u.coll.root;
  switch (ev->u.coll.coll) {
    case A2A_COLL_ALLREDUCE:
      lr_add(op, s, cnt, false, false);
      lr_add(op, r, cnt, true, false);
      break;
    case A2A_COLL_BROADCAST:
      if (root) lr_add(op, s, cnt, false, false);
      lr_add(op, r, cnt, true, false);
      break;
    case A2A_COLL_REDUCE:
      lr_add(op, s, cnt, false, false);
      if (root) lr_add(op, r, cnt, true, false);
      break;
    case A2A_COLL_ALLGATHER:
      lr_add(op, s, cnt, false, false);
      lr_add(op, r, lr_mul(n, cnt), true, true);
      break;
    case A2A_COLL_REDUCESCATTER:
      lr_add(op, s, lr_mul(n, cnt), false, true);
      lr_add(op, r, cnt, true, false);
      break;
    case A2A_COLL_ALLTOALL:
      lr_add(op, s, lr_mul(n, cnt), false, true);
      lr_add(op, r, lr_mul(n, cnt), true, true);
      break;
    case A2A_COLL_GATHER:
      lr_add(op, s, cnt, false, false);
      if (root) lr_add(op, r, lr_mul(n, cnt), true, true);
      break;
    case A2A_COLL_SCATTER:
      if (root) lr_add(op, s, lr_mul(n, cnt), false, true);
      lr_add(op, r, cnt, true, false);
      break;
    default:
      return false;
  }
  return true;
}

/* Whether two ranges share at least one byte (empty ranges never do). */
static inline bool lr_overlap(uintptr_t alo, uintptr_t ahi, uintptr_t blo, uintptr_t bhi) {
  return alo < ahi && blo < bhi && alo < bhi && blo < ahi;
}

#endif /* A2A_LAYOUT_RANGES_H */
