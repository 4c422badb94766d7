/* xrank_match.h - the coordinator's per-communicator matcher: it receives
 * every rank's operation fingerprints (in each rank's posting order) and
 * communicator registrations, and produces verdicts addressed to the ranks
 * involved. Pure C: no sockets, no threads (the coordinator in
 * xrank/xr_coord.c serializes calls), so it is unit-tested over synthetic
 * fingerprint streams.
 *
 * Rules (docs/checks.md has the user-facing text):
 *  - collectives: once every rank of the comm posted its k-th collective,
 *    compare (operation, count, dtype, redop, root) against the majority:
 *    a different operation is group.order-mismatch, different arguments are
 *    size.collective-mismatch;
 *  - point-to-point: per (comm, sender, receiver) the i-th send matches the
 *    i-th receive: different bytes -> size.p2p-mismatch (error), same bytes
 *    but different dtypes -> size.dtype-mismatch (warning);
 *  - a rank that ends the communicator (or whose process goes away) while a
 *    peer's send/receive towards it has no counterpart ->
 *    size.unmatched-p2p to the waiting peer;
 *  - registrations: disagreeing nranks, one rank claimed twice (also for a
 *    split: inconsistent membership) -> group.init-mismatch; the same (host, device) for two ranks in different
 *    processes -> group.duplicate-device.
 * Verdicts are deduplicated per (comm, check, rank pair) and capped per
 * communicator, so a mismatch repeated every step is reported once.
 * Connections ("conn") are small non-negative integers chosen by the caller,
 * one per client process.
 */
#ifndef A2A_XRANK_MATCH_H
#define A2A_XRANK_MATCH_H

#include <stddef.h>
#include <stdint.h>

#include "xrank.h"
#include "xrank_proto.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct xr_matcher xr_matcher;

typedef struct xr_match_out {
  void *ctx;
  /* One verdict for one connection; v->site is that rank's own call site. */
  void (*verdict)(void *ctx, int conn, const xr_verdict *v);
  /* Printable call site of conn's address, or NULL (then hex is printed). */
  const char *(*site_name)(void *ctx, int conn, uint64_t site);
} xr_match_out;

xr_matcher *xr_matcher_new(const xr_match_out *out);
void xr_matcher_free(xr_matcher *m);

/* Identity of a connection (from its HELLO). */
void xr_matcher_hello(xr_matcher *m, int conn, int pid, int grank,
                      const char *host);
void xr_matcher_register(xr_matcher *m, int conn, const xr_commreg *reg);
void xr_matcher_op(xr_matcher *m, int conn, const xr_op *op);
/* Rank `rank` ended comm (how: a2a_end_how). An abort (ncclCommAbort: an
 * application's or PyTorch's watchdog after a timeout) with its own
 * sends/receives still unmatched a moment later (xr_matcher_tick) tells
 * that rank which peer had not posted their counterparts
 * (size.unmatched-p2p): the peer that skipped them may never end in a way
 * that would tell (it exits after the aborting rank). */
void xr_matcher_comm_end(xr_matcher *m, int conn, uint64_t comm, int rank, int how);
/* The coordinator's clock (ns), on every tick: settles the aborts whose
 * grace has passed (above: their peers' records before the abort have
 * arrived by then). */
void xr_matcher_tick(xr_matcher *m, uint64_t now);
/* The process behind conn went away (bye or closed socket). */
void xr_matcher_conn_gone(xr_matcher *m, int conn);
/* The same, when its connection closed without a goodbye: its operations
 * stop being pending, but no size.unmatched-p2p is told about them (its
 * last records may have been lost with it: see rank_ended). */
void xr_matcher_conn_died(xr_matcher *m, int conn);

/* Operations of conn still waiting for a counterpart that a live peer may
 * still post (a flushing client waits until this is 0). */
size_t xr_matcher_pending(const xr_matcher *m, int conn);
/* The same for one rank of one communicator (0 when the comm is unknown or
 * matching stopped on it). When it is 0, every verdict about that rank's
 * operations on comm that can be determined has been emitted: what is
 * matched was compared, and a counterpart a peer never posts is reported to
 * this rank (size.unmatched-p2p) when that peer ends the comm or exits,
 * which also makes the operation no longer pending. */
size_t xr_matcher_pending_rank(const xr_matcher *m, int conn, uint64_t comm, int rank);

/* The last mismatch reported on comm (for the deadlock story), or NULL. */
const char *xr_matcher_last_mismatch(const xr_matcher *m, uint64_t comm);

/* Human-readable description of an operation into buf ("ncclAllReduce(count
 * 1024, float32, sum)", "send of 4096 B (1024 x float32) to rank 2"). */
const char *xr_op_describe(const xr_op *op, char *buf, size_t cap);
/* The collective's name after "nccl", as the rank called it: "Bcast" for
 * an ncclBcast (XR_OPF_BCAST), else a2a_coll_name. */
const char *xr_op_coll_name(const xr_op *op);

#ifdef __cplusplus
}
#endif
#endif /* A2A_XRANK_MATCH_H */
