/* xrank_confirm.c - the deadlock and hang confirmation policy (see
 * xrank_confirm.h): candidates, the stable window, freshness, the hang
 * timeout, and the text and details of group.deadlock / group.hang. */
#include "xrank_confirm.h"

#include <inttypes.h>
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

/* Headline + story + the per-process list, to each involved live process
 * (or only to `only`, when it is not (size_t)-1). */
static void emit_story(const xr_confirm *c, a2a_check_id check, const xr_procstate *ps, size_t n,
                       const uint8_t *inv, const xr_wfg_result *res, const char *story,
                       size_t only, const xr_confirm_io *io) {
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
  else
    len += (size_t)snprintf(text, sizeof text,
                            "hang: no rank made progress for %.0f s (A2ACHECK_HANG_TIMEOUT) while "
                            "operations are pending",
                            c->opts.hang_timeout_s);
  if (res->missing_proc >= 0 && len < sizeof text) {
    const xr_procstate *q = &ps[res->missing_proc];
    if (check == A2A_CK_GROUP_HANG)
      len += (size_t)snprintf(text + len, sizeof text - len, "; the awaited process: pid %d", q->pid);
    else
      len += (size_t)snprintf(text + len, sizeof text - len, "; the missing process: pid %d%s", q->pid,
                              q->alive ? " (alive, blocked elsewhere)"
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
  a2a_json j;
  a2a_json_init(&j, json, sizeof json);
  a2a_json_obj_begin(&j, NULL);
  a2a_json_bool(&j, "cycle", res->cycle != 0);
  a2a_json_int(&j, "dead_threads", res->dead_threads);
  if (res->missing_proc >= 0) a2a_json_int(&j, "missing_pid", ps[res->missing_proc].pid);
  a2a_json_arr_begin(&j, "processes");
  for (size_t p = 0; p < n; p++) {
    if (!inv[p]) continue;
    a2a_json_obj_begin(&j, NULL);
    a2a_json_int(&j, "pid", ps[p].pid);
    a2a_json_int(&j, "global_rank", ps[p].grank);
    a2a_json_str(&j, "host", ps[p].host);
    a2a_json_bool(&j, "alive", ps[p].alive != 0);
    a2a_json_arr_begin(&j, "comms");
    for (uint32_t k = 0; k < ps[p].ncomms; k++) {
      a2a_json_obj_begin(&j, NULL);
      char id[24];
      snprintf(id, sizeof id, "%016" PRIx64, ps[p].comms[k].comm);
      a2a_json_str(&j, "comm", id);
      a2a_json_int(&j, "rank", ps[p].comms[k].rank);
      a2a_json_int(&j, "collectives_posted", ps[p].comms[k].coll_posted);
      a2a_json_obj_end(&j);
    }
    a2a_json_arr_end(&j);
    a2a_json_obj_end(&j);
  }
  a2a_json_arr_end(&j);
  a2a_json_obj_end(&j);
  for (size_t p = 0; p < n; p++) {
    if (!inv[p] || !ps[p].alive || (only != (size_t)-1 && p != only)) continue;
    xr_confirm_verdict v = {.check = check,
                            .proc = p,
                            .comm = ps[p].nunits ? ps[p].units[0].comm : 0,
                            .site = ps[p].nthreads ? ps[p].threads[0].site : 0,
                            .text = text,
                            .json = j.overflow ? NULL : json};
    io->emit(io->ctx, &v);
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
      emit_story(c, A2A_CK_GROUP_DEADLOCK, ps, n, inv, &res, story, p, io);
      continue;
    }
    xr_wfg_opts of = *o;
    of.focus = (int)p;
    xr_wfg_result r2;
    xr_wfg_analyze(ps, n, &of, &r2, inv2, story2, sizeof story2);
    emit_story(c, A2A_CK_GROUP_DEADLOCK, ps, n, inv2, &r2, story2, p, io);
  }
  free(inv2);
  return XR_CONFIRM_DEADLOCK;
}

static int hang_step(xr_confirm *c, const xr_procstate *ps, size_t n, const xr_wfg_opts *o,
                     uint8_t *inv, const xr_confirm_io *io) {
  static char story[XR_MAX_TEXT];
  c->hang_reported = 1;
  /* The same dump: every process with pending work or a blocked thread. */
  xr_wfg_opts o2 = *o;
  o2.min_blocked_ms = 0;
  o2.explain_all = 1;
  xr_wfg_result res;
  xr_wfg_analyze(ps, n, &o2, &res, inv, story, sizeof story);
  size_t len = strlen(story);
  for (size_t p = 0; p < n; p++) {
    if (!ps[p].alive || (!ps[p].nunits && !ps[p].nthreads)) continue;
    inv[p] = 1;
    if (ps[p].nthreads) continue; /* already in the story */
    if (len + 200 < sizeof story) {
      char sb[128] = "";
      const char *st = ps[p].nunits && io->site_name
                           ? io->site_name(io->ctx, p, ps[p].units[0].site) : NULL;
      if (!st && ps[p].nunits) snprintf(sb, sizeof sb, "0x%" PRIx64, ps[p].units[0].site);
      len += (size_t)snprintf(story + len, sizeof story - len,
                              "%s  pid %d: %u incomplete launch unit%s (oldest at %s), no "
                              "host thread blocked",
                              len ? "\n" : "", ps[p].pid, ps[p].nunits,
                              ps[p].nunits == 1 ? "" : "s", st ? st : sb);
    }
  }
  emit_story(c, A2A_CK_GROUP_HANG, ps, n, inv, &res, story, (size_t)-1, io);
  return XR_CONFIRM_HANG;
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
    pending |= ps[p].alive && ps[p].nunits > 0;
  }
  if (!c->have_progress || all != c->progress_all || !pending) {
    c->have_progress = 1;
    c->progress_all = all;
    c->last_progress_ns = now;
  }
  story_ctx sc = {.io = io};
  xr_wfg_opts o = {.min_blocked_ms = (uint64_t)(c->opts.confirm_s * 200.0), .ctx = &sc,
                   .site_name = w_site, .mismatch = w_mismatch, .focus = -1};
  int r = XR_CONFIRM_NOTHING;
  if (!c->reported) r = deadlock_step(c, now, ps, ids, n, &o, inv, io);
  if (r != XR_CONFIRM_DEADLOCK && !c->reported && !c->hang_reported && pending &&
      (double)(now - c->last_progress_ns) >= c->opts.hang_timeout_s * 1e9) {
    memset(inv, 0, n);
    r = hang_step(c, ps, n, &o, inv, io);
  }
  free(inv);
  return r;
}
