/* xrank_confirm.c - the deadlock and hang confirmation policy (see
 * xrank_confirm.h): candidates, the stable window, freshness, the hang
 * timeout, and the text and details of group.deadlock / group.hang. */
#include "xrank_confirm.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2a_core.h"
#include "xrank_proto.h"

void xr_confirm_init(xr_confirm *c, const xr_confirm_opts *o) {
  memset(c, 0, sizeof *c);
  c->opts = *o;
  if (!(c->opts.confirm_s > 0)) c->opts.confirm_s = 5.0;
  if (!(c->opts.hang_timeout_s > 0)) c->opts.hang_timeout_s = 300.0;
  if (!(c->opts.stall_s > 0)) c->opts.stall_s = 0;
}

uint64_t xr_confirm_eval_interval(const xr_confirm *c, uint64_t last_cost_ns) {
  const xr_confirm_opts *o = &c->opts;
  double hi = o->confirm_s * 0.3e9;
  if (o->stall_s > 0 && o->stall_s * 0.1e9 < hi) hi = o->stall_s * 0.1e9;
  if (o->hang_timeout_s * 0.1e9 < hi) hi = o->hang_timeout_s * 0.1e9;
  double want = (double)last_cost_ns * XR_CONFIRM_DUTY;
  /* Past half the longest spacing, the longest: two evaluations that far
   * apart confirm a deadlock as early as three shorter ones would. */
  if (want > hi * 0.5) want = hi;
  return want > (double)XR_CONFIRM_PERIOD_NS ? (uint64_t)want : XR_CONFIRM_PERIOD_NS;
}

void xr_confirm_free(xr_confirm *c) {
  free(c->cand_vers);
  c->cand_vers = NULL;
  c->cand_cap = 0;
}

/* ---- verdict text and details ---- */

typedef struct story_ctx {
  const xr_confirm_io *io;
} story_ctx;

static const char *w_site(void *ctx, size_t proc, uint64_t site) {
  const story_ctx *s = ctx;
  return s->io->site_name ? s->io->site_name(s->io->ctx, proc, site) : NULL;
}
static const char *w_mismatch(void *ctx, uint64_t comm) {
  const story_ctx *s = ctx;
  return s->io->mismatch ? s->io->mismatch(s->io->ctx, comm) : NULL;
}

static void details_json(a2a_json *j, char *buf, size_t cap, const xr_procstate *ps, size_t n,
                         const uint8_t *inv, const xr_wfg_result *res, const xr_confirm_io *io,
                         int lvl);

/* Headline + story + the per-process list, to each involved live process
 * (or only to `only`, when it is not (size_t)-1). */
static void emit_story(const xr_confirm *c, a2a_check_id check, const xr_procstate *ps, size_t n,
                       const uint8_t *inv, const xr_wfg_result *res, const char *story,
                       size_t only, const xr_confirm_io *io, uint64_t stalled_ns) {
  static char text[XR_MAX_TEXT];
  static char json[XR_MAX_JSON];
  int ninv = 0;
  for (size_t p = 0; p < n; p++) ninv += inv[p];
  size_t len = 0;
  if (check == A2A_CK_GROUP_DEADLOCK)
    len += (size_t)snprintf(text, sizeof text,
                            "deadlock: %d blocked host thread%s can never return (%d process%s "
                            "involved%s)",
                            res->dead_threads, res->dead_threads == 1 ? "" : "s", ninv,
                            ninv == 1 ? "" : "es", res->cycle ? ", a wait-for cycle" : "");
  else if (check == A2A_CK_GROUP_HANG)
    len += (size_t)snprintf(text, sizeof text,
                            "hang: no rank made progress for %.0f s (A2ACHECK_HANG_TIMEOUT) while "
                            "operations are pending",
                            c->opts.hang_timeout_s);
  else
    len += (size_t)snprintf(text, sizeof text,
                            "stall: no rank made progress for %.0f s while operations are pending, "
                            "and no deadlock can be proven (a rank waits where a2acheck cannot see "
                            "it); group.hang follows after %.0f s without progress",
                            (double)stalled_ns / 1e9, c->opts.hang_timeout_s);
  /* In a wait-for cycle no process is missing: each rank's story starts at
   * itself, so the first awaited one differs from rank to rank; the story
   * names every hop (the details keep missing_pid for the merged report). */
  if (res->missing_proc >= 0 && !(res->cycle && check == A2A_CK_GROUP_DEADLOCK) &&
      len < sizeof text) {
    const xr_procstate *q = &ps[res->missing_proc];
    if (check != A2A_CK_GROUP_DEADLOCK)
      len += (size_t)snprintf(text + len, sizeof text - len, "; the awaited process: pid %d", q->pid);
    else
      len += (size_t)snprintf(text + len, sizeof text - len, "; the missing process: pid %d%s", q->pid,
                              q->alive && res->missing_ended
                                  ? " (alive; it ended the communicator)"
                              : q->alive ? " (alive, blocked elsewhere)"
                              : q->died ? " (died: killed or crashed)"
                                        : " (exited or ended the communicator)");
    if (q->grank >= 0 && len < sizeof text)
      len += (size_t)snprintf(text + len, sizeof text - len, ", global rank %d", q->grank);
  }
  if (len + 3 < sizeof text) {
    /* The story, cut to what fits. */
    size_t sl = strlen(story), room = sizeof text - len - 3;
    if (sl > room) sl = room;
    memcpy(text + len, ":\n", 2);
    memcpy(text + len + 2, story, sl);
    text[len + 2 + sl] = 0;
  }
  /* The details, as rich as fits: every pending operation and the graph,
   * then one operation per process, then the processes alone. */
  a2a_json j;
  for (int lvl = 2; lvl >= 0; lvl--) {
    details_json(&j, json, sizeof json, ps, n, inv, res, io, lvl);
    if (!j.overflow) break;
  }
  for (size_t p = 0; p < n; p++) {
    if (!inv[p] || !ps[p].alive || (only != (size_t)-1 && p != only)) continue;
    xr_confirm_verdict v = {.check = check,
                            .fail = check != A2A_CK_GROUP_STALL,
                            .proc = p,
                            .comm = ps[p].nunits ? ps[p].units[0].comm : 0,
                            .site = ps[p].nthreads ? ps[p].threads[0].site : 0,
                            .text = text,
                            .json = j.overflow ? NULL : json};
    io->emit(io->ctx, &v);
  }
}

/* ---- who waits for whom, per communicator ---- */

typedef struct sbuf {
  char *b;
  size_t cap, len;
} sbuf;

static void sb(sbuf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb(sbuf *s, const char *fmt, ...) {
  if (s->len + 1 >= s->cap) return;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(s->b + s->len, s->cap - s->len, fmt, ap);
  va_end(ap);
  if (k > 0) s->len = s->len + (size_t)k < s->cap ? s->len + (size_t)k : s->cap - 1;
}

static const char *site_or_hex(const xr_confirm_io *io, size_t p, uint64_t site, char *buf,
                               size_t cap) {
  const char *t = io->site_name && site ? io->site_name(io->ctx, p, site) : NULL;
  if (t && *t) return t;
  snprintf(buf, cap, "0x%" PRIx64, site);
  return buf;
}

/* The membership of (comm, rank): its process and its comm state, or -1. */
static int member(const xr_procstate *ps, size_t n, uint64_t comm, int32_t rank,
                  const xr_commstate **cs) {
  for (size_t p = 0; p < n; p++)
    for (uint32_t i = 0; i < ps[p].ncomms; i++)
      if (ps[p].comms[i].comm == comm && ps[p].comms[i].rank == rank) {
        *cs = &ps[p].comms[i];
        return (int)p;
      }
  return -1;
}

/* Sends and receives c's rank posted towards peer (0 when none). */
static void posted_with(const xr_procstate *P, const xr_commstate *c, int32_t peer, uint32_t *sends,
                        uint32_t *recvs) {
  *sends = *recvs = 0;
  for (uint32_t e = 0; e < c->npeers && c->peer_off + e < P->npeers; e++)
    if (P->peers[c->peer_off + e].peer == peer) {
      *sends = P->peers[c->peer_off + e].send_hi;
      *recvs = P->peers[c->peer_off + e].recv_hi;
    }
}

static void describe_unit(sbuf *s, const xr_confirm_io *io, size_t p, const xr_unitstate *U) {
  char hb[32];
  if (U->kind == XR_OP_COLL && xr_coll_is_p2p(U->coll))
    sb(s, "nccl%s(count %" PRIu64 ", %s)", xr_unit_coll_name(U), U->count,
       a2a_dtype_name(U->dtype));
  else if (U->kind == XR_OP_COLL && (U->flags & XR_UNIT_RUN) && U->coll_hi > U->coll_lo + 1)
    sb(s, "collectives #%u to #%u (back to back, one completion marker), the last nccl%s(count %"
          PRIu64 ", %s)", U->coll_lo + 1, U->coll_hi, xr_unit_coll_name(U), U->count,
       a2a_dtype_name(U->dtype));
  else if (U->kind == XR_OP_COLL)
    sb(s, "collective #%u nccl%s(count %" PRIu64 ", %s)", U->coll_lo + 1, xr_unit_coll_name(U),
       U->count, a2a_dtype_name(U->dtype));
  else if (U->npeers == 1)
    sb(s, "p2p group #%u (nccl%s, count %" PRIu64 ", %s)", U->group,
       U->kind == XR_OP_SEND ? "Send" : "Recv", U->count, a2a_dtype_name(U->dtype));
  else
    sb(s, "p2p group #%u (%u peers)", U->group, U->npeers);
  sb(s, " at %s", site_or_hex(io, p, U->site, hb, sizeof hb));
}


/* ---- details: processes, their blocked threads and pending operations,
 * and the wait-for graph between processes (the report tool draws it:
 * docs/report.md) ---- */

#define DETAIL_OPS 8 /* pending operations per process at lvl 2 (the newest) */

static const char *unit_op_name(const xr_unitstate *U, char *buf, size_t cap) {
  if (U->kind == XR_OP_COLL) snprintf(buf, cap, "nccl%s", xr_unit_coll_name(U));
  else if (U->npeers <= 1) snprintf(buf, cap, "%s", U->kind == XR_OP_SEND ? "ncclSend" : "ncclRecv");
  else snprintf(buf, cap, "ncclSend/ncclRecv");
  return buf;
}

/* Unit u of P is queued behind an earlier incomplete unit on its stream
 * (it cannot start before that one completes). */
static int queued_behind(const xr_procstate *P, uint32_t u) {
  for (uint32_t k = 0; k < u; k++)
    if (P->units[k].stream == P->units[u].stream && !(P->units[k].flags & XR_UNIT_OPEN)) return 1;
  return 0;
}

static int ranges_meet(uint32_t a0, uint32_t a1, uint32_t b0, uint32_t b1) {
  return a0 < a1 && b0 < b1 && a0 < b1 && b0 < a1;
}

/* Q's unit holding the counterpart of U (comm rank qc->rank), or -1. */
static int counterpart(const xr_procstate *P, const xr_unitstate *U, const xr_procstate *Q,
                       const xr_commstate *qc) {
  for (uint32_t k = 0; k < Q->nunits; k++) {
    const xr_unitstate *V = &Q->units[k];
    if (V->comm != U->comm || V->rank != qc->rank) continue;
    if (U->kind == XR_OP_COLL && !xr_coll_is_p2p(U->coll)) {
      if (ranges_meet(U->coll_lo, U->coll_hi, V->coll_lo, V->coll_hi)) return (int)k;
      continue;
    }
    for (uint32_t e = 0; e < U->npeers && U->peer_off + e < P->npeers; e++) {
      const xr_peerent *pe = &P->peers[U->peer_off + e];
      if (pe->peer != qc->rank) continue;
      for (uint32_t f = 0; f < V->npeers && V->peer_off + f < Q->npeers; f++) {
        const xr_peerent *qe = &Q->peers[V->peer_off + f];
        if (qe->peer == U->rank && (ranges_meet(pe->send_lo, pe->send_hi, qe->recv_lo, qe->recv_hi) ||
                                    ranges_meet(pe->recv_lo, pe->recv_hi, qe->send_lo, qe->send_hi)))
          return (int)k;
      }
    }
  }
  return -1;
}

/* Does unit U of process p wait for process q? q holds a rank of U's comm
 * that has not posted U's counterpart (a collective it has not called, a
 * receive or send it has not posted), or whose counterpart is queued
 * behind another of q's incomplete operations on its stream. */
static int unit_awaits(const xr_procstate *ps, size_t n, size_t p, const xr_unitstate *U,
                       size_t q) {
  const xr_procstate *P = &ps[p], *Q = &ps[q];
  for (uint32_t k = 0; k < Q->ncomms; k++) {
    const xr_commstate *qc = &Q->comms[k];
    if (qc->comm != U->comm || (q == p && qc->rank == U->rank)) continue;
    int involved = 0, posted = 1;
    if (U->kind == XR_OP_COLL && !xr_coll_is_p2p(U->coll)) {
      involved = 1;
      posted = qc->coll_posted >= U->coll_hi;
    } else {
      for (uint32_t e = 0; e < U->npeers && U->peer_off + e < P->npeers; e++) {
        const xr_peerent *pe = &P->peers[U->peer_off + e];
        if (pe->peer != qc->rank) continue;
        uint32_t qs, qr;
        posted_with(Q, qc, U->rank, &qs, &qr);
        involved = 1;
        if ((pe->send_hi > pe->send_lo && qr < pe->send_hi) ||
            (pe->recv_hi > pe->recv_lo && qs < pe->recv_hi))
          posted = 0;
      }
    }
    if (!involved) continue;
    if (!posted) return 1;
    int v = counterpart(P, U, Q, qc);
    if (v >= 0 && queued_behind(Q, (uint32_t)v)) return 1;
  }
  (void)n;
  return 0;
}

static void details_json(a2a_json *j, char *buf, size_t cap, const xr_procstate *ps, size_t n,
                         const uint8_t *inv, const xr_wfg_result *res, const xr_confirm_io *io,
                         int lvl) {
  char hb[32], id[24], nb[40];
  a2a_json_init(j, buf, cap);
  a2a_json_obj_begin(j, NULL);
  a2a_json_bool(j, "cycle", res->cycle != 0);
  a2a_json_int(j, "dead_threads", res->dead_threads);
  if (res->missing_proc >= 0) a2a_json_int(j, "missing_pid", ps[res->missing_proc].pid);
  a2a_json_arr_begin(j, "processes");
  for (size_t p = 0; p < n; p++) {
    if (!inv[p]) continue;
    const xr_procstate *P = &ps[p];
    a2a_json_obj_begin(j, NULL);
    a2a_json_int(j, "pid", P->pid);
    a2a_json_int(j, "global_rank", P->grank);
    a2a_json_str(j, "host", P->host);
    a2a_json_bool(j, "alive", P->alive != 0);
    a2a_json_arr_begin(j, "comms");
    for (uint32_t k = 0; k < P->ncomms; k++) {
      a2a_json_obj_begin(j, NULL);
      snprintf(id, sizeof id, "%016" PRIx64, P->comms[k].comm);
      a2a_json_str(j, "comm", id);
      a2a_json_int(j, "rank", P->comms[k].rank);
      a2a_json_int(j, "collectives_posted", P->comms[k].coll_posted);
      a2a_json_obj_end(j);
    }
    a2a_json_arr_end(j);
    if (lvl > 0 && P->nthreads) {
      const xr_threadstate *T = &P->threads[0];
      a2a_json_obj_begin(j, "blocked");
      a2a_json_str(j, "call", xr_thread_wait_name(T));
      a2a_json_str(j, "site", site_or_hex(io, p, T->site, hb, sizeof hb));
      a2a_json_uint(j, "ms", T->blocked_ms);
      a2a_json_uint(j, "thread", T->thread);
      a2a_json_obj_end(j);
    }
    if (lvl > 0) {
      uint32_t first = 0, most = lvl > 1 ? DETAIL_OPS : 1;
      if (P->nunits > most) first = P->nunits - most;
      a2a_json_arr_begin(j, "ops");
      for (uint32_t u = first; u < P->nunits; u++) {
        const xr_unitstate *U = &P->units[u];
        int coll = U->kind == XR_OP_COLL && !xr_coll_is_p2p(U->coll);
        int one = !coll && U->kind != XR_OP_COLL && U->npeers == 1 && U->peer_off < P->npeers;
        int waiting = 0;
        for (size_t q = 0; q < n && !waiting; q++) waiting = unit_awaits(ps, n, p, U, q);
        a2a_json_obj_begin(j, NULL);
        snprintf(id, sizeof id, "%016" PRIx64, U->comm);
        a2a_json_str(j, "comm", id);
        a2a_json_int(j, "comm_rank", U->rank);
        a2a_json_str(j, "op", unit_op_name(U, nb, sizeof nb));
        a2a_json_str(j, "kind", U->kind == XR_OP_COLL ? "collective"
                                : U->kind == XR_OP_SEND ? "send"
                                                        : "recv");
        if (one) a2a_json_int(j, "peer", P->peers[U->peer_off].peer);
        else a2a_json_null(j, "peer");
        if (!coll && U->npeers > 1) a2a_json_uint(j, "peers", U->npeers);
        a2a_json_uint(j, "count", U->count);
        a2a_json_uint(j, "bytes", U->count * a2a_dtype_size(U->dtype));
        a2a_json_str(j, "dtype", a2a_dtype_name(U->dtype));
        if (coll) a2a_json_uint(j, "index", U->coll_lo + 1);
        a2a_json_uint(j, "group", U->group);
        a2a_json_str(j, "site", site_or_hex(io, p, U->site, hb, sizeof hb));
        a2a_json_str(j, "state", U->flags & XR_UNIT_OPEN ? "open"
                                 : queued_behind(P, u)  ? "cannot-start"
                                 : waiting              ? "waiting"
                                                        : "in-flight");
        a2a_json_obj_end(j);
      }
      a2a_json_arr_end(j);
    }
    a2a_json_obj_end(j);
  }
  a2a_json_arr_end(j);
  if (lvl > 0) {
    /* The graph between the involved processes: p -> q when a thread of
     * p is blocked and one of p's pending operations awaits q. */
    a2a_json_obj_begin(j, "graph");
    a2a_json_arr_begin(j, "nodes");
    for (size_t p = 0; p < n; p++) {
      if (!inv[p]) continue;
      const xr_procstate *P = &ps[p];
      a2a_json_obj_begin(j, NULL);
      snprintf(id, sizeof id, "p%d", P->pid);
      a2a_json_str(j, "id", id);
      a2a_json_int(j, "pid", P->pid);
      if (P->grank >= 0) a2a_json_int(j, "rank", P->grank);
      int awaited = 0;
      for (size_t x = 0; x < n && !awaited; x++)
        if (inv[x] && x != p && ps[x].nthreads)
          for (uint32_t u = 0; u < ps[x].nunits && !awaited; u++)
            awaited = !(ps[x].units[u].flags & XR_UNIT_OPEN) &&
                      unit_awaits(ps, n, x, &ps[x].units[u], p);
      char lab[96];
      int ll = P->grank >= 0 ? snprintf(lab, sizeof lab, "rank %d", P->grank)
                             : snprintf(lab, sizeof lab, "pid %d", P->pid);
      if (P->nthreads && ll > 0 && (size_t)ll < sizeof lab)
        snprintf(lab + ll, sizeof lab - (size_t)ll, "\n%s", xr_thread_wait_name(&P->threads[0]));
      a2a_json_str(j, "label", lab);
      a2a_json_str(j, "state", !P->alive                    ? "exited"
                               : (int)p == res->missing_proc ? "missing"
                               : P->nthreads                 ? "blocked"
                               : awaited                     ? "awaited"
                                                             : "ok");
      a2a_json_obj_end(j);
    }
    a2a_json_arr_end(j);
    a2a_json_arr_begin(j, "edges");
    for (size_t p = 0; p < n; p++) {
      if (!inv[p] || !ps[p].nthreads) continue;
      for (size_t q = 0; q < n; q++) {
        if (!inv[q] || q == p) continue;
        const xr_unitstate *why = NULL;
        for (uint32_t u = 0; u < ps[p].nunits && !why; u++)
          if (!(ps[p].units[u].flags & XR_UNIT_OPEN) && unit_awaits(ps, n, p, &ps[p].units[u], q))
            why = &ps[p].units[u];
        if (!why) continue;
        a2a_json_obj_begin(j, NULL);
        snprintf(id, sizeof id, "p%d", ps[p].pid);
        a2a_json_str(j, "from", id);
        snprintf(id, sizeof id, "p%d", ps[q].pid);
        a2a_json_str(j, "to", id);
        char lab[64];
        snprintf(lab, sizeof lab, "waits in %s", unit_op_name(why, nb, sizeof nb));
        a2a_json_str(j, "label", lab);
        a2a_json_obj_end(j);
      }
    }
    a2a_json_arr_end(j);
    a2a_json_obj_end(j);
  }
  a2a_json_obj_end(j);
}

/* What the process is doing, as far as a2acheck sees it. */
static void describe_proc_state(sbuf *s, const xr_confirm_io *io, const xr_procstate *ps, size_t q,
                                const xr_commstate *qc) {
  char hb[32];
  const xr_procstate *Q = &ps[q];
  if (!Q->alive) { sb(s, "%s", xr_proc_gone(Q)); return; }
  if (qc && qc->ended) { sb(s, "ended the communicator"); return; }
  if (qc && qc->poster && qc->poster_gone) {
    sb(s, "its thread #%u, which posted its operations, has exited", qc->poster);
    return;
  }
  if (Q->nthreads) {
    /* The thread that posts the rank where it is known and blocked (ranks
     * as threads), else the process's first blocked one. */
    const xr_threadstate *T = &Q->threads[0];
    for (uint32_t k = 0; qc && qc->poster && k < Q->nthreads; k++)
      if (Q->threads[k].thread == qc->poster) T = &Q->threads[k];
    sb(s, "blocked in %s at %s for %" PRIu64 " ms", xr_thread_wait_name(T),
       site_or_hex(io, q, T->site, hb, sizeof hb), T->blocked_ms);
    return;
  }
  sb(s, "in no CUDA/NCCL wait a2acheck sees: stuck in host code (MPI, a store barrier, a "
        "sleep, I/O) or still computing");
}

/* The 1-based number of the first of [lo, hi) that a rank which posted
 * `posted` (unknown: 0) has not posted. */
static uint32_t first_missing(uint32_t lo, uint32_t posted) { return (posted > lo ? posted : lo) + 1; }

/* Whether rank q has not posted the counterpart unit U of process p waits
 * for; fills what ('c', 's', 'r': what q owes) and the number of the first
 * it owes (a unit may hold several: a group of collectives). */
static int awaits(const xr_procstate *ps, size_t n, size_t p, const xr_unitstate *U, int32_t q,
                  char *what, uint32_t *idx) {
  const xr_commstate *qc = NULL;
  int qp = member(ps, n, U->comm, q, &qc);
  if (U->coll_hi > U->coll_lo && (qp < 0 || qc->coll_posted < U->coll_hi)) {
    *what = 'c';
    *idx = first_missing(U->coll_lo, qp < 0 ? 0 : qc->coll_posted);
    return 1;
  }
  for (uint32_t e = 0; e < U->npeers && U->peer_off + e < ps[p].npeers; e++) {
    const xr_peerent *pe = &ps[p].peers[U->peer_off + e];
    if (pe->peer != q) continue;
    uint32_t qs = 0, qr = 0;
    if (qp >= 0) posted_with(&ps[qp], qc, U->rank, &qs, &qr);
    if (pe->send_hi > pe->send_lo && (qp < 0 || qr < pe->send_hi)) {
      *what = 'r';
      *idx = first_missing(pe->send_lo, qp < 0 ? 0 : qr);
      return 1;
    }
    if (pe->recv_hi > pe->recv_lo && (qp < 0 || qs < pe->recv_hi)) {
      *what = 's';
      *idx = first_missing(pe->recv_lo, qp < 0 ? 0 : qs);
      return 1;
    }
  }
  return 0;
}

/* Per communicator with pending work: each rank's oldest incomplete
 * operation on it, the ranks it waits for (those that have not posted its
 * counterpart yet), and what those ranks last did and are doing now. */
static void pending_story(sbuf *s, const xr_procstate *ps, size_t n, const xr_confirm_io *io) {
  uint64_t comms[8];
  int ncomms = 0;
  for (size_t p = 0; p < n; p++)
    for (uint32_t j = 0; j < ps[p].nunits && ps[p].alive; j++) {
      uint64_t c = ps[p].units[j].comm;
      int seen = 0;
      for (int k = 0; k < ncomms; k++) seen |= comms[k] == c;
      if (!seen && ncomms < 8) comms[ncomms++] = c;
    }
  char hb[32];
  for (int k = 0; k < ncomms; k++) {
    uint64_t comm = comms[k];
    int32_t nranks = 0;
    for (size_t p = 0; p < n && !nranks; p++)
      for (uint32_t i = 0; i < ps[p].ncomms; i++)
        if (ps[p].comms[i].comm == comm) nranks = ps[p].comms[i].nranks;
    sb(s, "%scomm %016" PRIx64 " (%d ranks):", s->len ? "\n  " : "  ", comm, nranks);
    int32_t awaited[16];
    int nawaited = 0, lines = 0;
    for (size_t p = 0; p < n; p++) {
      if (!ps[p].alive) continue;
      /* The oldest unit on comm, passing units that may be complete
       * (MAYBE_DONE: reported for a shared marker) whose counterparts are
       * all posted: the one after them is where the rank waits. */
      const xr_unitstate *U = NULL, *first = NULL;
      for (uint32_t j = 0; j < ps[p].nunits && !U; j++) {
        const xr_unitstate *V = &ps[p].units[j];
        if (V->comm != comm) continue;
        if (!first) first = V;
        int waits = !(V->flags & XR_UNIT_MAYBE_DONE);
        for (int32_t q = 0; q < nranks && !waits; q++) {
          char what;
          uint32_t idx;
          waits = q != V->rank && awaits(ps, n, p, V, q, &what, &idx);
        }
        if (waits) U = V;
      }
      if (!U) U = first;
      if (!U) continue;
      if (++lines > 12) continue;
      sb(s, "\n    rank %d (", U->rank);
      if (ps[p].grank >= 0) sb(s, "global rank %d, ", ps[p].grank);
      sb(s, "pid %d) waits in ", ps[p].pid);
      describe_unit(s, io, p, U);
      if (U->flags & XR_UNIT_OPEN) sb(s, ", never launched (its group is still open)");
      int nw = 0;
      for (int32_t q = 0; q < nranks && nw < 64; q++) {
        char what = 0;
        uint32_t idx = 0;
        if (q == U->rank || !awaits(ps, n, p, U, q, &what, &idx)) continue;
        if (nw < 6) {
          sb(s, "%s rank %d", nw ? "," : " for", q);
          if (nw == 0)
            sb(s, " to post its %s #%u",
               what == 'c' ? "collective" : what == 's' ? "send" : "receive", idx);
        }
        nw++;
        int known = 0;
        for (int a = 0; a < nawaited; a++) known |= awaited[a] == q;
        if (!known && nawaited < 16) awaited[nawaited++] = q;
      }
      if (nw > 6) sb(s, " and %d more", nw - 6);
      if (!nw) sb(s, "; its counterparts are posted (queued behind earlier work, or running)");
    }
    if (lines > 12) sb(s, "\n    ... and %d more ranks waiting", lines - 12);
    for (int a = 0; a < nawaited; a++) {
      int32_t q = awaited[a];
      const xr_commstate *qc = NULL;
      int qp = member(ps, n, comm, q, &qc);
      sb(s, "\n    rank %d", q);
      if (qp < 0) {
        sb(s, ": no report from it (not connected to this coordinator): not checked");
        continue;
      }
      sb(s, " (");
      if (ps[qp].grank >= 0) sb(s, "global rank %d, ", ps[qp].grank);
      sb(s, "pid %d): posted %u collective%s", ps[qp].pid, qc->coll_posted,
         qc->coll_posted == 1 ? "" : "s");
      uint32_t ts = 0, tr = 0;
      for (uint32_t e = 0; e < qc->npeers && qc->peer_off + e < ps[qp].npeers; e++) {
        ts += ps[qp].peers[qc->peer_off + e].send_hi;
        tr += ps[qp].peers[qc->peer_off + e].recv_hi;
      }
      if (ts || tr)
        sb(s, ", %u send%s and %u receive%s", ts, ts == 1 ? "" : "s", tr, tr == 1 ? "" : "s");
      if (qc->last_site)
        sb(s, " (the last at %s)", site_or_hex(io, (size_t)qp, qc->last_site, hb, sizeof hb));
      sb(s, " on it; ");
      describe_proc_state(s, io, ps, (size_t)qp, qc);
    }
  }
}

/* ---- the policy ---- */

static int deadlock_step(xr_confirm *c, uint64_t now, const xr_procstate *ps, const uint32_t *ids,
                         size_t n, const xr_wfg_opts *o, uint8_t *inv, const xr_confirm_io *io) {
  static char story[XR_MAX_TEXT], story2[XR_MAX_TEXT];
  xr_wfg_result res;
  if (!xr_wfg_analyze(ps, n, o, &res, inv, story, sizeof story)) {
    c->cand_active = 0;
    return XR_CONFIRM_NOTHING;
  }
  uint64_t sig = 0x5eed;
  uint32_t maxid = 0;
  for (size_t p = 0; p < n; p++) {
    if (ids[p] > maxid) maxid = ids[p];
    if (!inv[p]) continue;
    uint64_t v[2] = {(uint64_t)ids[p], xr_state_progress(&ps[p])};
    sig = a2a_hash_bytes(v, sizeof v, sig);
  }
  if (!c->cand_active || sig != c->cand_sig) {
    /* A new candidate: remember every process's report version now. */
    if (c->cand_cap <= maxid) {
      size_t cap = (size_t)maxid + 1 + 64;
      uint32_t *nv = realloc(c->cand_vers, cap * sizeof *nv);
      if (!nv) return XR_CONFIRM_NOTHING;
      c->cand_vers = nv;
      c->cand_cap = cap;
    }
    memset(c->cand_vers, 0, c->cand_cap * sizeof *c->cand_vers);
    for (size_t p = 0; p < n; p++) c->cand_vers[ids[p]] = ps[p].version;
    c->cand_active = 1;
    c->cand_sig = sig;
    c->cand_first = now;
    return XR_CONFIRM_CANDIDATE;
  }
  if ((double)(now - c->cand_first) < c->opts.confirm_s * 0.3e9) return XR_CONFIRM_CANDIDATE;
  for (size_t p = 0; p < n; p++)
    if (inv[p] && ps[p].alive && ids[p] < c->cand_cap && ps[p].version <= c->cand_vers[ids[p]])
      return XR_CONFIRM_CANDIDATE; /* not fresh yet */
  /* Confirmed: one verdict per involved live process, its own story first. */
  c->reported = 1;
  uint8_t *inv2 = malloc(n ? n : 1);
  int focused = 0;
  for (size_t p = 0; p < n && inv2; p++) {
    if (!inv[p] || !ps[p].alive) continue;
    if (++focused > 16) {
      /* Large jobs: the first 16 get their own story first, the rest the
       * common one (each story is a full graph analysis). */
      emit_story(c, A2A_CK_GROUP_DEADLOCK, ps, n, inv, &res, story, p, io, 0);
      continue;
    }
    xr_wfg_opts of = *o;
    of.focus = (int)p;
    xr_wfg_result r2;
    xr_wfg_analyze(ps, n, &of, &r2, inv2, story2, sizeof story2);
    emit_story(c, A2A_CK_GROUP_DEADLOCK, ps, n, inv2, &r2, story2, p, io, 0);
  }
  free(inv2);
  return XR_CONFIRM_DEADLOCK;
}

/* group.stall or group.hang: the blocked threads' stories (what each waits
 * for, which rank it awaits), then who waits for whom on each communicator
 * with pending work. */
static int wait_step(xr_confirm *c, a2a_check_id check, uint64_t stalled_ns,
                     const xr_procstate *ps, size_t n, const xr_wfg_opts *o, uint8_t *inv,
                     const xr_confirm_io *io) {
  static char story[XR_MAX_TEXT];
  xr_wfg_opts o2 = *o;
  o2.min_blocked_ms = 0;
  o2.explain_all = 1;
  xr_wfg_result res;
  xr_wfg_analyze(ps, n, &o2, &res, inv, story, sizeof story);
  sbuf s = {story, sizeof story, strlen(story)};
  pending_story(&s, ps, n, io);
  for (size_t p = 0; p < n; p++)
    if (ps[p].alive && (ps[p].nunits || ps[p].nthreads)) inv[p] = 1;
  emit_story(c, check, ps, n, inv, &res, story, (size_t)-1, io, stalled_ns);
  return check == A2A_CK_GROUP_HANG ? XR_CONFIRM_HANG : XR_CONFIRM_STALL;
}

/* Whether a thread of process P waits inside a communicator's creation
 * that some rank has not joined yet: a blocking ncclCommInitRank* whose
 * communicator fewer ranks registered than it has, or an
 * ncclCommSplit/Shrink #k of a parent some live member of which has
 * neither made split #k nor is inside it (xrank_wfg.c split_ok's rule).
 * Such a creation is pending work as much as an operation whose
 * counterpart a rank has not posted - one that never completes (a rank
 * that never joins: a stale ncclUniqueId after an elastic restart, a split
 * some rank skips) is a stall and then a hang. A creation every rank has
 * joined is NCCL's own (slow bootstrap at scale): not pending. */
static bool in_creation(const xr_procstate *ps, size_t n, const xr_procstate *P) {
  for (uint32_t k = 0; k < P->nthreads; k++) {
    const xr_threadstate *T = &P->threads[k];
    if (T->wait != XR_WAIT_INIT && T->wait != XR_WAIT_SPLIT) continue;
    int32_t nr = 0;
    uint32_t joined = 0;
    bool behind = false;
    for (size_t q = 0; q < n; q++)
      for (uint32_t i = 0; i < ps[q].ncomms; i++) {
        const xr_commstate *c = &ps[q].comms[i];
        if (c->comm != T->comm) continue;
        nr = c->nranks;
        joined++;
        behind |= T->wait == XR_WAIT_SPLIT && ps[q].alive && !c->ended && c->splits <= T->index &&
                  !xr_inside_split(&ps[q], T->comm, T->index, c->rank);
      }
    if (T->wait == XR_WAIT_INIT ? nr > 0 && joined < (uint32_t)nr : behind) return true;
  }
  return false;
}

int xr_confirm_step(xr_confirm *c, uint64_t now, const xr_procstate *ps, const uint32_t *ids,
                    size_t n, const xr_confirm_io *io) {
  if (!n) return XR_CONFIRM_NOTHING;
  uint8_t *inv = calloc(n, 1);
  if (!inv) return XR_CONFIRM_NOTHING;
  uint64_t all = 0;
  int pending = 0;
  for (size_t p = 0; p < n; p++) {
    uint64_t pg = xr_state_progress(&ps[p]);
    uint64_t v[2] = {(uint64_t)ids[p], pg};
    all = a2a_hash_bytes(v, sizeof v, all);
    pending |= ps[p].alive && (ps[p].nunits > 0 || in_creation(ps, n, &ps[p]));
  }
  if (!c->have_progress || all != c->progress_all || !pending) {
    c->have_progress = 1;
    c->progress_all = all;
    c->last_progress_ns = now;
    c->stall_reported = 0;
  }
  story_ctx sc = {.io = io};
  xr_wfg_opts o = {.min_blocked_ms = (uint64_t)(c->opts.confirm_s * 200.0), .ctx = &sc,
                   .site_name = w_site, .mismatch = w_mismatch, .focus = -1};
  int r = XR_CONFIRM_NOTHING;
  if (!c->reported) r = deadlock_step(c, now, ps, ids, n, &o, inv, io);
  double still = (double)(now - c->last_progress_ns);
  if (r != XR_CONFIRM_DEADLOCK && !c->reported && !c->hang_reported && pending &&
      still >= c->opts.hang_timeout_s * 1e9) {
    memset(inv, 0, n);
    c->hang_reported = 1;
    r = wait_step(c, A2A_CK_GROUP_HANG, now - c->last_progress_ns, ps, n, &o, inv, io);
  } else if (r != XR_CONFIRM_DEADLOCK && r != XR_CONFIRM_CANDIDATE && !c->reported &&
             !c->hang_reported && !c->stall_reported && pending && c->opts.stall_s > 0 &&
             c->opts.stall_s < c->opts.hang_timeout_s && still >= c->opts.stall_s * 1e9) {
    memset(inv, 0, n);
    c->stall_reported = 1;
    r = wait_step(c, A2A_CK_GROUP_STALL, now - c->last_progress_ns, ps, n, &o, inv, io);
  }
  free(inv);
  return r;
}
