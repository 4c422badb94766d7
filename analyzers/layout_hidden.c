/* layout_hidden.c - layout.hidden-copy, part of the `layout` analyzer:
 * the thread's recent device-to-device copies and copy kernels, matched
 * against the send buffers of its NCCL operations, and the timing of a
 * repeated copy (layout.c dispatches to the lyh_* functions declared in
 * layout_state.h).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "a2a_core.h"
#include "layout_state.h"

/* How layout.hidden-copy works.
 *
 * Producers: the thread's last LAYOUT_MAX_PRODUCERS device-to-device
 * copies and copy kernels. A producer matches a send buffer when it was
 * written since the thread's previous operation (same generation) and
 * covers exactly the bytes sent (memcpy) or writes to the buffer's start
 * (copy kernel: its destination pointer, see lyh_on_launch).
 *
 * Timing. Measuring every copy would put two event records on the hot path
 * of every copy kernel. Instead, the first match of a copy site only marks
 * the site as "feeding" and keeps the finding pending; later copies from a
 * feeding site are bracketed by two timing events (host services: the REAL
 * runtime) recorded on the copy's stream right before and after it is
 * enqueued. The pending finding is reported, with the measured duration, at
 * the first NCCL operation of the thread after such a copy completed; at
 * process exit whatever is still pending is reported with what is known.
 * So a copy that happens once is reported at exit, without a duration.
 *
 * What the copy is for. A copy whose block the same operation or group
 * also receives next to - the block lies right before or after a receive
 * range of the group on the same communicator, or inside the collective's
 * own receive buffer - places this rank's own block into the output the
 * communication assembles (the local part of an all-gather built from
 * send/receive, of an in-place all-gather): part of the algorithm, avoidable
 * only by producing the block in place. Any other exact copy stages data
 * that already existed elsewhere (a .clone(), a copy_ into a send buffer, a
 * .contiguous() of a tensor that was dense); a copy kernel's output is a
 * packing copy (.contiguous() of a strided tensor). The message says which
 * was seen. */

static bool tev_ready(ly_thread *t) {
  if (t->tev_state) return t->tev_state > 0;
  t->tev_state = -1;
  for (int i = 0; i < LAYOUT_MAX_PRODUCERS; i++)
    for (int k = 0; k < 2; k++)
      if (a2a_hostsvc->event_create(&t->tev[i][k], 1) != 0) return false;
  t->tev_state = 1;
  return true;
}

static ly_feed *feed_find(ly_thread *t, const void *copy_site) {
  for (unsigned i = 0; i < t->nfeeds; i++)
    if (t->feeds[i].copy_site == copy_site) return &t->feeds[i];
  return NULL;
}

/* The copy's stream as a cudaStream_t (per-thread default = 0x2). */
static void *copy_stream(const a2a_event *ev) {
  return ev->stream ? ev->stream : (ev->per_thread ? (void *)2 : NULL);
}

/* Brackets whose end event a launch's or copy's POST records (open_end):
 * with none open anywhere, POSTs cost one load. */
_Atomic unsigned lyh_brackets_open;

/* The feeds' side of a new producer in slot (only while some copy site
 * is known to feed a send buffer): a feed waiting on the slot's events
 * loses that measurement, and a copy from a feeding site is bracketed. */
void lyh_producer_feeds(ly_thread *t, const a2a_event *ev, int slot, ly_producer *p) {
  for (unsigned i = 0; i < t->nfeeds; i++)
    if (t->feeds[i].slot == slot) t->feeds[i].slot = -1;
  ly_feed *f = feed_find(t, ev->callsite);
  if (f && !f->reported && tev_ready(t) &&
      a2a_hostsvc->event_record(t->tev[slot][0], copy_stream(ev)) == 0) {
    p->timed = true;
    t->open_end = slot;
    atomic_fetch_add_explicit(&lyh_brackets_open, 1, memory_order_relaxed);
  }
}

/* The producers' clock (lyh_ticks): on x86 the time-stamp counter, read
 * with one instruction instead of a clock_gettime per device-to-device
 * copy, and converted to nanoseconds only when a finding needs it, by the
 * rate measured between layout's initialization (lyh_clock_init) and that
 * moment. Elsewhere ticks are CLOCK_MONOTONIC nanoseconds already. */
#if LYH_TSC
static uint64_t g_cal_tsc, g_cal_ns;

void lyh_clock_init(void) {
  g_cal_tsc = lyh_ticks();
  g_cal_ns = a2a_hostsvc->now_ns();
}

static uint64_t ticks_to_ns(uint64_t ticks) {
  uint64_t tsc = lyh_ticks(), ns = a2a_hostsvc->now_ns();
  if (tsc <= g_cal_tsc || ns <= g_cal_ns) return 0; /* no usable rate */
  double v = (double)ticks * (double)(ns - g_cal_ns) / (double)(tsc - g_cal_tsc);
  return v < 1.8e19 ? (uint64_t)v : UINT64_MAX; /* a conversion out of range is undefined */
}
#else
void lyh_clock_init(void) {}
static uint64_t ticks_to_ns(uint64_t ticks) { return ticks; }
#endif

/* POST of a copy: close the bracket opened at its PRE. */
void lyh_on_copy_post(ly_thread *t, const a2a_event *ev) {
  int slot = t->open_end;
  if (slot < 0) return;
  t->open_end = -1;
  atomic_fetch_sub_explicit(&lyh_brackets_open, 1, memory_order_relaxed);
  ly_producer *p = &t->prod[slot];
  p->end_ok = ev->result == 0 &&
              a2a_hostsvc->event_record(t->tev[slot][1], copy_stream(ev)) == 0;
}


void lyh_on_launch(ly_thread *t, const a2a_event *ev) {
  if (!ev->u.launch.func || !ev->u.launch.args) return;
  const a2a_kparams *kp = a2a_kernel_params(ev->u.launch.func);
  if (!kp || !(kp->flags & A2A_KP_NAME_COPY)) return;
  /* The written pointer: the first pointer-sized word of the parameters
   * (by-value structs included) that lies in a known device segment, else
   * the first word that looks like a pointer. Copy kernels take their
   * destination first (TensorIterator puts outputs before inputs; memcpy
   * convention); the source must not count, or copying *from* a send buffer
   * (y.copy_(x); send(x)) would look like producing it. */
  uintptr_t first = 0, written = 0;
  for (int i = 0; i < kp->nparams && !written; i++) {
    size_t sz = kp->size[i];
    const unsigned char *arg = ev->u.launch.args[i];
    if (!arg) continue;
    for (size_t w = 0; w + sizeof(uintptr_t) <= sz && !written; w += sizeof(uintptr_t)) {
      uintptr_t v;
      memcpy(&v, arg + w, sizeof v);
      if (v < 0x10000 || v % 4 != 0) continue;
      a2a_alloc a;
      if (a2a_alloc_find((const void *)v, &a) && a.mem != A2A_MEM_HOST_PINNED) written = v;
      else if (!first) first = v;
    }
  }
  if (!written) written = first;
  if (!written) return;
  lyh_producer_add(t, ev, written, 0, 0, kp->name);
}

/* Report a feed's finding; ms < 0: duration unknown. */
static void report_feed(ly_feed *f, double ms) {
  f->reported = true;
  f->slot = -1;
  char msg[1200], js[900], dur[64] = "", peer[32] = "";
  const char *what = f->what ? f->what : "a copy";
  a2a_json j;
  a2a_json_init(&j, js, sizeof js);
  a2a_json_obj_begin(&j, NULL);
  a2a_json_str(&j, "api", f->op_api);
  if (f->comm) a2a_json_str(&j, "comm", f->comm->name);
  a2a_json_ptr(&j, "send_buffer", (const void *)f->lo);
  a2a_json_uint(&j, "send_bytes", f->bytes);
  a2a_json_str(&j, "copy", what);
  a2a_json_ptr(&j, "copy_site", f->copy_site);
  if (f->copy_bytes) a2a_json_uint(&j, "copy_bytes", f->copy_bytes);
  if (f->copy_src) a2a_json_ptr(&j, "copy_source", (const void *)f->copy_src);
  a2a_json_str(&j, "kind", f->assembles ? "assembles-output" : f->copy_bytes ? "staging" : "packing");
  a2a_json_uint(&j, "ns_since_copy", f->ns_since_copy);
  if (ms >= 0) {
    a2a_json_dbl(&j, "copy_ms", ms);
    snprintf(dur, sizeof dur, ", %.3f ms per call", ms);
  }
  a2a_json_obj_end(&j);
  if (f->op_peer >= 0) snprintf(peer, sizeof peer, " (peer %d)", f->op_peer);
  if (f->assembles && f->assemble_inplace) {
    snprintf(msg, sizeof msg,
             "The send buffer [%p, +%zu) of %s%s is this rank's block of its own receive buffer "
             "(the in-place form), and %s copied it there just before%s: the copy places this "
             "rank's own block into the output the communication assembles, which is part of "
             "the algorithm, not a .contiguous(). It costs one copy of the block per call; "
             "producing the block directly in its place in the output (computing into that "
             "slice of the receive buffer) avoids it.",
             (void *)f->lo, f->bytes, f->op_api, peer, what, dur);
  } else if (f->assembles) {
    char rpeer[32] = "";
    if (f->assemble_peer >= 0) snprintf(rpeer, sizeof rpeer, " from peer %d", f->assemble_peer);
    snprintf(msg, sizeof msg,
             "The send buffer [%p, +%zu) of %s%s is the block %s copied there just before%s, "
             "and %s%s receives into the bytes next to it: the copy places this rank's own "
             "block into the output the communication assembles (the local part of an "
             "all-gather built from sends and receives), which is part of the algorithm, not a "
             ".contiguous(). It costs one copy of the block per call; producing the block in "
             "its place in the output (the in-place form, with the send buffer inside the "
             "receive buffer) avoids it.",
             (void *)f->lo, f->bytes, f->op_api, peer, what, dur,
             f->assemble_api ? f->assemble_api : "the same operation", rpeer);
  } else if (f->copy_bytes) {
    char src[48] = "";
    if (f->copy_src) snprintf(src, sizeof src, " from %p", (void *)f->copy_src);
    snprintf(msg, sizeof msg,
             "The send buffer [%p, +%zu) of %s%s was filled just before by %s, a copy of "
             "exactly these bytes%s%s: the data already existed in another buffer and was "
             "copied only to be sent (a staging copy, a .clone() or copy_() into the send "
             "buffer, a .contiguous() of a tensor that was already dense). Send from the "
             "source buffer, or produce the data in the send buffer, to save a full copy per "
             "call.",
             (void *)f->lo, f->bytes, f->op_api, peer, what, src, dur);
  } else {
    snprintf(msg, sizeof msg,
             "The send buffer [%p, +%zu) of %s%s was written just before by the copy kernel "
             "%s%s: a packing copy, like an implicit .contiguous() of a strided tensor. Produce "
             "the data directly in a contiguous buffer to save a full copy per call.",
             (void *)f->lo, f->bytes, f->op_api, peer, what, dur);
  }
  /* Reported later than the operation: its call site is the stack. */
  a2a_stack one = {.n = f->op_site ? 1 : 0};
  one.pc[0] = (void *)f->op_site;
  a2a_finding fd = {.check = A2A_CK_LAYOUT_HIDDEN_COPY, .severity = A2A_SEV_INFO, .site = f->op_site,
                    .comm = f->comm, .message = msg, .details_json = js,
                    .stack = f->op_site ? &one : NULL};
  a2a_report(&fd);
}

/* The time since producer p was written (0 if the clock went backwards,
 * e.g. counters of two cores that disagree). */
static uint64_t ns_since(const ly_producer *p) {
  uint64_t now = lyh_ticks();
  return now > p->ticks ? ticks_to_ns(now - p->ticks) : 0;
}

/* A producer matched a send buffer of the operation (api at site); the
 * feed that waits for its report, or NULL if it was reported at once. */
static ly_feed *hidden_match(ly_thread *t, const a2a_event *ev, const char *api, const a2a_comm *c,
                             void *comm_handle, int peer, ly_producer *p, uintptr_t lo,
                             size_t bytes) {
  p->used = true;
  ly_feed *f = feed_find(t, p->site);
  ly_feed fresh = {.copy_site = p->site, .what = p->what, .copy_bytes = p->bytes,
                   .copy_src = p->src, .op_site = ev->callsite, .op_api = api, .comm = c,
                   .comm_handle = comm_handle, .op_peer = peer, .lo = lo, .bytes = bytes,
                   .ns_since_copy = ns_since(p),
                   .slot = -1, .gen = t->gen, .assemble_peer = -1};
  if (!f) {
    if (t->nfeeds == LAYOUT_MAX_FEEDS) { /* no room to wait: report untimed */
      report_feed(&fresh, -1);
      return NULL;
    }
    f = &t->feeds[t->nfeeds++];
    *f = fresh;
    return f;
  }
  if (f->reported || !p->timed || !p->end_ok) return NULL;
  f->slot = (int)(p - t->prod);
  return NULL;
}

/* Report the pending feeds whose timed copy completed (at_exit: all). */
void lyh_poll(ly_thread *t, bool at_exit) {
  for (unsigned i = 0; i < t->nfeeds; i++) {
    ly_feed *f = &t->feeds[i];
    if (f->reported) continue;
    if (f->slot < 0) {
      if (at_exit) report_feed(f, -1);
      continue;
    }
    int q = a2a_hostsvc->event_query(t->tev[f->slot][1]);
    float ms = -1;
    if (q == 0 && a2a_hostsvc->event_elapsed_ms(&ms, t->tev[f->slot][0], t->tev[f->slot][1]) != 0)
      ms = -1;
    if (q == 0 || q < 0 || at_exit) report_feed(f, q == 0 ? ms : -1);
  }
}

/* A producer of exactly [lo, lo+bytes) since the previous operation. */
static ly_producer *find_producer(ly_thread *t, uintptr_t lo, size_t bytes) {
  for (unsigned i = 0; i < LAYOUT_MAX_PRODUCERS; i++) {
    ly_producer *p = &t->prod[i];
    if (!p->site || p->used || p->gen != t->gen) continue;
    /* A copy of known size must match it; a copy kernel's size is unknown. */
    if (p->dst == lo && (!p->bytes || p->bytes == bytes)) return p;
  }
  return NULL;
}

void lyh_check_op(ly_thread *t, const a2a_event *ev, const a2a_comm *c, const lr_op *op) {
  int peer = ev->kind == A2A_EV_P2P ? ev->u.p2p.peer : -1;
  for (int i = 0; i < op->n; i++) {
    const lr_range *r = &op->r[i];
    if (r->is_recv || r->lo >= r->hi) continue;
    ly_producer *p = find_producer(t, r->lo, r->hi - r->lo);
    if (!p) continue;
    ly_feed *f = hidden_match(t, ev, ev->api, c, ev->comm, peer, p, r->lo, r->hi - r->lo);
    /* A collective sending a block of its own receive buffer (in-place
     * all-gather, gather): the copy placed the local block. Not one that
     * sends its whole receive buffer (an in-place all-reduce, broadcast or
     * reduce, send == receive): the copy staged the data, as a .clone()
     * before an in-place all-reduce does. */
    for (int k = 0; f && k < op->n; k++)
      if (op->r[k].is_recv && op->r[k].lo <= r->lo && r->hi <= op->r[k].hi &&
          (op->r[k].lo < r->lo || r->hi < op->r[k].hi)) {
        f->assembles = true;
        f->assemble_inplace = true;
        f->assemble_api = ev->api;
      }
  }
}

/* At the end of a group: the group's sends to one comm together span
 * exactly the bytes of one copy (the grouped all-to-all case); and for the
 * copies matched in this group, whether a receive of the group on the same
 * communicator lies right next to the copied block. */
void lyh_check_group(ly_thread *t, const a2a_event *end) {
  for (unsigned k = 0; k < t->nfeeds; k++) {
    ly_feed *f = &t->feeds[k];
    if (f->reported || f->assembles || f->gen != t->gen) continue;
    for (unsigned i = 0; i < t->nranges; i++) {
      const ly_range *r = &t->ranges[i];
      if (!r->is_recv || r->lo >= r->hi || r->comm_handle != f->comm_handle) continue;
      if (r->lo == f->lo + f->bytes || r->hi == f->lo) {
        f->assembles = true;
        f->assemble_api = r->api;
        f->assemble_peer = r->peer;
        break;
      }
    }
  }
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  const ly_range *first = NULL;
  for (unsigned i = 0; i < t->nranges; i++) {
    const ly_range *r = &t->ranges[i];
    if (r->is_recv || r->lo >= r->hi) continue;
    if (!first) first = r;
    if (r->comm_handle != first->comm_handle) return;
    if (r->lo < lo) lo = r->lo;
    if (r->hi > hi) hi = r->hi;
  }
  if (!first) return;
  ly_producer *p = find_producer(t, lo, hi - lo);
  if (p) hidden_match(t, end, "the group's sends", first->comm, first->comm_handle, -1, p, lo, hi - lo);
}

void lyh_release(ly_thread *t) {
  if (t->tev_state <= 0) return;
  for (int k = 0; k < LAYOUT_MAX_PRODUCERS; k++) {
    a2a_hostsvc->event_destroy(t->tev[k][0]);
    a2a_hostsvc->event_destroy(t->tev[k][1]);
  }
  t->tev_state = 0;
}
