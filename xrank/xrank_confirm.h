/* xrank_confirm.h - the deadlock and hang confirmation policy: given the
 * time and every process's progress state, decide when a deadlock the
 * wait-for graph finds is confirmed, when no progress at all for
 * A2ACHECK_HANG_TIMEOUT is a hang, and write the verdicts (headline, story,
 * details) each involved process receives.
 *
 * Pure: no sockets, no threads, no clock of its own (the caller passes
 * now_ns), so it is unit-tested with a synthetic clock and synthetic
 * states (tests/unit/test_xrank_confirm.c). The coordinator (xr_coord.c)
 * calls xr_confirm_step every evaluation tick and delivers what it emits.
 *
 * The rules (docs/design.md, "Deadlock model"):
 *  - a deadlock found by xr_wfg_analyze is a candidate, identified by the
 *    set of involved processes and their progress digests; it is confirmed
 *    when the same candidate is still there after `stable` = 0.3 x
 *    confirm_s, and every involved live process has sent a newer report
 *    (version) than the one the candidate was first seen in: no verdict
 *    from a stale snapshot. Blocked threads count after 0.2 x confirm_s
 *    (xr_wfg_opts.min_blocked_ms). Any change of the candidate (someone
 *    progressed, another process joined) restarts the window. One deadlock
 *    verdict per coordinator: after it the involved processes end.
 *  - without a confirmed deadlock, no progress digest of any live process
 *    changing for stall_s while some live process has pending units is a
 *    stall: one group.stall warning (no exit) to every process with pending
 *    work or a blocked thread, saying per communicator which ranks wait in
 *    which operation for which ranks and what those are doing; again after
 *    progress resumed and stalled anew. For hang_timeout_s it is a hang:
 *    one group.hang (the failing verdict) with the same dump.
 */
#ifndef A2A_XRANK_CONFIRM_H
#define A2A_XRANK_CONFIRM_H

#include <stddef.h>
#include <stdint.h>

#include "a2a_checks.h"
#include "xrank.h"
#include "xrank_wfg.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct xr_confirm_opts {
  double confirm_s;        /* A2ACHECK_HANG_CONFIRM */
  double hang_timeout_s;   /* A2ACHECK_HANG_TIMEOUT */
  double stall_s;          /* A2ACHECK_STALL_WARNING (0: no stall warning) */
} xr_confirm_opts;

/* One verdict for one process (index into the step's array). text and
 * json point into the policy's buffers, valid until the next emit. */
typedef struct xr_confirm_verdict {
  a2a_check_id check;      /* A2A_CK_GROUP_DEADLOCK, _HANG or _STALL */
  int fail;                /* the receiver applies the deadlock exit policy */
  size_t proc;
  uint64_t comm;           /* the receiver's first pending unit's comm, or 0 */
  uint64_t site;           /* the receiver's blocked call site, or 0 */
  const char *text;
  const char *json;        /* NULL when the details did not fit */
} xr_confirm_verdict;

typedef struct xr_confirm_io {
  void *ctx;
  /* Printable call site of process proc (index into ps), or NULL. */
  const char *(*site_name)(void *ctx, size_t proc, uint64_t site);
  /* A mismatch already known on comm (from the matcher), or NULL. */
  const char *(*mismatch)(void *ctx, uint64_t comm);
  /* Deliver one verdict. */
  void (*emit)(void *ctx, const xr_confirm_verdict *v);
} xr_confirm_io;

typedef struct xr_confirm {
  xr_confirm_opts opts;
  uint64_t progress_all, last_progress_ns;
  int have_progress;
  int cand_active;
  uint64_t cand_first, cand_sig;
  uint32_t *cand_vers;     /* per id: the version when first seen */
  size_t cand_cap;
  int reported, hang_reported;
  int stall_reported;      /* for the current stall (reset by progress) */
} xr_confirm;

void xr_confirm_init(xr_confirm *c, const xr_confirm_opts *o);
void xr_confirm_free(xr_confirm *c);

/* What a step decided (for tests and diagnostics). */
enum {
  XR_CONFIRM_NOTHING = 0,
  XR_CONFIRM_CANDIDATE,    /* a deadlock candidate is being confirmed */
  XR_CONFIRM_DEADLOCK,     /* group.deadlock verdicts were emitted */
  XR_CONFIRM_HANG,         /* group.hang verdicts were emitted */
  XR_CONFIRM_STALL,        /* group.stall warnings were emitted */
};

/* One evaluation at now_ns over the states of n processes (alive or not:
 * ps[i].alive); ids[i] is process i's stable identity (the coordinator's
 * connection index), which survives reordering of the array between steps.
 * Emits the verdicts it decides through io->emit. Returns XR_CONFIRM_*. */
int xr_confirm_step(xr_confirm *c, uint64_t now_ns, const xr_procstate *ps,
                    const uint32_t *ids, size_t n, const xr_confirm_io *io);

/* The coordinator's evaluation cadence: how long after the start of one
 * evaluation (xr_confirm_step) the next is due, given the CPU time the last
 * one took. XR_CONFIRM_PERIOD_NS while evaluations cost under
 * 1/XR_CONFIRM_DUTY of it (every job up to a few thousand operations in
 * flight); a costlier one - once a thread has waited the threshold, every
 * evaluation builds the wait-for graph, ~9,000 instructions per unit in
 * flight: ~50 ms of a core for 8 ranks with 2,048 each - spaces the next
 * XR_CONFIRM_DUTY times its cost apart (5 % of a core), up to the longest
 * spacing: 0.3 x confirm_s (1.5 s by default; less with a stall warning or
 * hang timeout under 10x that: a tenth of it), taken as soon as the duty
 * asks for more than half of it (two evaluations that far apart confirm a
 * deadlock as early as three shorter ones). At the longest spacing the
 * share of a core is cost / (0.3 x confirm_s). A deadlock is confirmed by
 * two evaluations at least 0.3 x confirm_s apart with a report between
 * them (reports come every 300 ms): its threads pass the threshold (0.2 x
 * confirm_s), a report says so, an evaluation sees the candidate, the
 * next confirms it - at worst 0.8 x confirm_s + a report period + two
 * ticks (100 ms) after it forms: within confirm_s for confirm_s >= 2.5 s
 * (the default is 5 s). Pure. */
#define XR_CONFIRM_PERIOD_NS 250000000ull
#define XR_CONFIRM_DUTY 20u
uint64_t xr_confirm_eval_interval(const xr_confirm *c, uint64_t last_cost_ns);

#ifdef __cplusplus
}
#endif
#endif /* A2A_XRANK_CONFIRM_H */
