/* xrank_wfg.h - deadlock detection over the progress states of all
 * processes a coordinator hears from (xr_procstate: per comm what was
 * posted, per stream the incomplete launch units, the host threads blocked
 * in a synchronizing call). Pure C; unit-tested over synthetic states.
 *
 * Model (docs/design.md, "Cross-rank checking"):
 *  - a unit U (ops of one comm launched together on one stream) STARTS when
 *    the previous incomplete unit on its stream has completed;
 *  - U COMPLETES when it started and each of its counterparts can start: for
 *    collective k, every other rank's collective k; for the i-th send to q,
 *    q's i-th receive from us (and vice versa). A counterpart q has not
 *    posted yet is awaited from q's host thread: fine if q is alive and not
 *    stuck itself, or if the one thread that posts q's operations on that
 *    communicator (xr_commstate.poster) is in no wait - ranks as threads of
 *    one process, one computing while another waits; impossible if q
 *    exited or ended the communicator;
 *  - a process is STUCK when one of its threads is blocked in a
 *    synchronizing call (cudaStreamSynchronize, ...) on a unit that cannot
 *    complete; a stuck process posts nothing more (its posting thread is
 *    taken as the one that waits, unless its poster of the awaited rank is
 *    known and waits in nothing: documented limit for ranks posted by
 *    several threads);
 *  - a process with no blocked thread may still post anything (computing,
 *    sleeping, I/O): never stuck.
 * The least fixpoint of these positive rules gives what can still complete;
 * a blocked thread (of a live process) waiting on something that cannot is a
 * deadlock. Counterparts of ranks nobody reported are assumed to progress
 * (no false positives from partial information).
 */
#ifndef A2A_XRANK_WFG_H
#define A2A_XRANK_WFG_H

#include <stddef.h>
#include <stdint.h>

#include "xrank.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct xr_wfg_opts {
  /* A blocked thread counts as a deadlock only after this long. */
  uint64_t min_blocked_ms;
  void *ctx;
  /* Printable call site of process proc (index into the state array), or
   * NULL (hex is printed). */
  const char *(*site_name)(void *ctx, size_t proc, uint64_t site);
  /* A mismatch already known on comm (from the matcher), or NULL. Units on
   * such a comm are never assumed to complete (NCCL may hang on them). */
  const char *(*mismatch)(void *ctx, uint64_t comm);
  /* Process whose story comes first (the report's reader), or -1. */
  int focus;
  /* 1: also explain blocked threads that can still return (the group.hang
   * dump: what each waits for and which rank it awaits). */
  int explain_all;
  /* 1: look counterparts up by scanning every unit of the awaited
   * process, as for a malformed report, instead of the indexes (the same
   * answers: tests compare both ways). */
  int scan;
} xr_wfg_opts;

typedef struct xr_wfg_result {
  int deadlock;          /* 1: some blocked thread can never return */
  int cycle;             /* 1: the explanation walk closed a cycle */
  int dead_threads;      /* blocked threads that cannot return */
  int missing_proc;      /* a process awaited to post that exited/ended/is
                            stuck elsewhere (first found), or -1 */
  int missing_ended;     /* 1: missing_proc ended the awaited communicator
                            (ncclCommAbort/Destroy/Finalize: alive or not) */
} xr_wfg_result;

/* Analyze n process states. involved (n bytes, may be NULL) receives 1 for
 * each process the deadlock involves (stuck, awaited, or on the cycle).
 * story (may be NULL) receives the human-readable explanation. Returns
 * res->deadlock. */
int xr_wfg_analyze(const xr_procstate *ps, size_t n, const xr_wfg_opts *opts,
                   xr_wfg_result *res, uint8_t *involved, char *story,
                   size_t cap);

/* A digest of what a state says about progress (posted counts, incomplete
 * units): equal digests over time mean the process made no progress. */
uint64_t xr_state_progress(const xr_procstate *st);

/* Incomplete units of a process (any process) a blocked thread waits for:
 * the launched units on its stream; every launched unit when it waits on
 * the whole device or its stream holds none (the stream may wait on a comm
 * stream through an event). Units of a still-open group are not launched. */
int xr_thread_waits_on(const xr_procstate *st, const xr_threadstate *t,
                       const xr_unitstate *u);

#ifdef __cplusplus
}
#endif
#endif /* A2A_XRANK_WFG_H */
