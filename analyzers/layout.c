/* layout.c - the `layout` analyzer: checks the buffers handed to NCCL
 * (pitfall 1). At the NCCL boundary PyTorch has already rejected
 * non-contiguous tensors; what remains are raw pointer ranges, judged here
 * before NCCL runs (PRE), so a finding exists even if NCCL then crashes.
 *
 * Checks (docs/checks.md, section "layout"):
 *  - layout.host-memory (error): a buffer in pageable/unregistered host
 *    memory (cudaPointerGetAttributes says cudaMemoryTypeUnregistered).
 *    Pinned (cudaMallocHost/cudaHostRegister) and managed memory are mapped
 *    into the device's address space and are not reported.
 *  - layout.wrong-device (error): a device buffer on another device than the
 *    communicator's.
 *  - layout.out-of-bounds (error): the bytes the operation touches (see
 *    layout_ranges.h) run past the end of the cudaMalloc segment holding the
 *    buffer. Bounds come from the allocation registry only (segment bounds:
 *    a caching allocator's sub-allocations are not visible).
 *  - layout.overlap (error): one operation whose receive range overlaps its
 *    send range other than in the in-place form nccl.h defines, or, inside
 *    one group, a receive range of one operation overlapping a send or
 *    receive range of another (checked at the outermost ncclGroupEnd). Two
 *    operations posted in different groups nested inside one outer group
 *    are in one group for NCCL: the message says so, and where the outer
 *    group was opened.
 *  - layout.misaligned (warning): a buffer, or a per-peer chunk of a
 *    per-rank buffer, whose address is not 16-byte aligned, when the region
 *    is at least LAYOUT_ALIGN_MIN_BYTES (below that NCCL's latency-bound
 *    protocols make alignment irrelevant).
 *  - layout.scattered (warning): a group on one communicator that sends to
 *    and receives from every other rank (a grouped all-to-all) whose
 *    non-empty per-peer chunks do not form one contiguous region per
 *    direction (in any order: the chunks, merged by address, leave gaps;
 *    a gap where this rank's own chunk belongs, when it posts none, is not
 *    one). A group that exchanges with several peers but not all of them
 *    (a halo exchange, steps of an all-gather merged by an outer group) is
 *    an info that says what was seen, without the all-to-all advice. An
 *    all-to-all whose chunks look like separate tensors of PyTorch's caching
 *    allocator in both directions (separate_blocks) is an info too.
 *  - layout.hidden-copy (info): a send buffer written, since the thread's
 *    previous NCCL operation, by a device-to-device copy of exactly the bytes
 *    sent (cudaMemcpy*), or by a kernel whose name says copy/contiguous and
 *    whose parameters point at the buffer: the cost of an implicit
 *    .contiguous(). Reported with the copy's duration once a later copy
 *    from the same site was timed, else at exit (layout_hidden.c).
 *
 * State is per application thread (NCCL groups are per thread), written only
 * by that thread (layout_state.h); claimed (a2a_tslots) at the thread's
 * first communicator init, NCCL operation or device-to-device copy, and
 * handed to a later thread once this one exited.
 */
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2a_core.h"
#include "layout_ranges.h"
#include "layout_state.h"

static a2a_tslots g_threads;

/* An exited thread's record handed to a new thread: its pending
 * hidden-copy findings are reported, then it starts clean. */
static void thread_fini(void *rec) {
  ly_thread *t = rec;
  if (t->nfeeds) lyh_poll(t, true);
  lyh_release(t);
}

static void release_events(void *rec) { lyh_release(rec); }

/* A thread's first record (out of line: thread_get is on hot paths). */
__attribute__((noinline)) static ly_thread *thread_claim(uint32_t id);

/* The calling thread's record, cached in the thread: a record belongs to
 * its thread until the thread exits (then this cache is gone with it), so
 * (id, record) stays right until the analyzer is re-initialized or the
 * process forks, which bump g_ly_gen. Saves the slot lookup on both phases
 * of every NCCL call and on every device-to-device copy. */
static _Atomic unsigned g_ly_gen = 1; /* never 0 (only ever incremented) */
/* A thread's cache starts at generation 0 and is filled by
 * thread_get_slow only with a record: one whose gen is current holds a
 * record, so the lookups test no pointer. */
static _Thread_local struct {
  unsigned gen;
  uint32_t id;
  ly_thread *t;
} t_ly;

__attribute__((noinline)) static ly_thread *thread_get_slow(uint32_t id, bool create,
                                                            unsigned gen) {
  ly_thread *t = a2a_tslots_get(&g_threads, id);
  if (!t && create) t = thread_claim(id);
  if (t) {
    t_ly.gen = gen;
    t_ly.id = id;
    t_ly.t = t;
  }
  return t;
}

static inline ly_thread *thread_get(uint32_t id, bool create) {
  unsigned gen = atomic_load_explicit(&g_ly_gen, memory_order_relaxed);
  if (t_ly.gen == gen && t_ly.id == id) return t_ly.t;
  return thread_get_slow(id, create, gen);
}

/* Whether thread id's record is cached (then t_ly.t, not NULL; otherwise
 * ask thread_get). */
static inline bool thread_cached(uint32_t id) {
  unsigned gen = atomic_load_explicit(&g_ly_gen, memory_order_relaxed);
  return t_ly.gen == gen && t_ly.id == id;
}

static ly_thread *thread_claim(uint32_t id) {
  ly_thread *t;
  bool reused;
  t = a2a_tslots_claim(&g_threads, id, sizeof *t, &reused);
  if (!t) return NULL;
  if (reused) {
    /* An exited thread's bracket is never closed by its POST. */
    if (t->open_end >= 0) atomic_fetch_sub_explicit(&lyh_brackets_open, 1, memory_order_relaxed);
    thread_fini(t);
    memset(t, 0, sizeof *t);
  }
  t->open_end = -1;
  for (int i = 0; i < LAYOUT_GSLOTS; i++) {
    t->gs[i].ops = i ? t->gops_s[i - 1] : t->gops0;
    t->gs[i].ranges = i ? t->granges_s[i - 1] : t->granges0;
  }
  t->ranges = t->granges0;
  t->wslot = -1;
  t->keep = a2a_group_keep_slot(id);
  return t;
}

/* ------------------------------------------------------------------ */
/* Pointer classification. */

typedef struct ly_mem {
  int type;                 /* -1 unknown, 0 host, 1 pinned, 2 device, 3 managed */
  int device;
  bool seg;                 /* segment bounds known (allocation registry) */
  uintptr_t base;
  size_t size;
} ly_mem;

static const char *mem_type_name(int t) {
  switch (t) {
    case 0: return "pageable host memory";
    case 1: return "pinned host memory";
    case 2: return "device memory";
    case 3: return "managed memory";
    default: return "unknown memory";
  }
}

static void classify(const void *p, ly_mem *m) {
  a2a_alloc a;
  memset(m, 0, sizeof *m);
  m->type = -1;
  m->device = -1;
  if (a2a_alloc_find(p, &a)) {
    m->seg = true;
    m->base = a.base;
    m->size = a.size;
    m->device = a.device;
    switch (a.mem) {
      case A2A_MEM_HOST_PINNED: m->type = 1; break;
      case A2A_MEM_MANAGED: m->type = 3; break;
      default: m->type = 2; break;
    }
    return;
  }
  a2a_ptrinfo pi;
  if (a2a_hostsvc->pointer_info(p, &pi) == 0) {
    m->type = pi.type;
    m->device = pi.device;
  }
}

/* ------------------------------------------------------------------ */
/* Reporting helpers. */

static void report(a2a_check_id check, a2a_severity sev, const void *site, const a2a_comm *c,
                   const char *msg, const char *js) {
  a2a_finding f = {.check = check, .severity = sev, .site = site, .comm = c, .message = msg,
                   .details_json = js, .capture_stack = true};
  a2a_report(&f);
}

/* The findings of a verdict being drawn for a memo (on_op_slow's checks,
 * check_group), each noted where it is established - reported, or counted
 * as a repeat: one occurrence either way - so that a hit on the memo
 * counts them again (replay). NULL while no memoized verdict is drawn. */
typedef struct ly_cap {
  uint8_t n;
  bool lost; /* more than LY_REPS: not remembered */
  ly_rep rep[LY_REPS];
} ly_cap;
static _Thread_local ly_cap *tl_cap;

static inline void cap_note(a2a_check_id check, a2a_severity sev, uint16_t idx) {
  ly_cap *c = tl_cap;
  if (!c) return;
  if (c->n == LY_REPS) { c->lost = true; return; }
  c->rep[c->n++] = (ly_rep){.check = (uint8_t)check, .sev = (uint8_t)sev, .idx = idx};
}

/* A remembered verdict's findings counted again, all or none
 * (a2a_report_repeats), each at the current call's site: a range of the
 * open group (idx) or `site` (the operation's call, or the ncclGroupEnd). */
static bool replay_findings(const ly_thread *t, const ly_rep *rep, unsigned n, const void *site) {
  a2a_repeat r[LY_REPS];
  for (unsigned i = 0; i < n; i++)
    r[i] = (a2a_repeat){.check = (a2a_check_id)rep[i].check,
                        .severity = (a2a_severity)rep[i].sev,
                        .site = rep[i].idx == LY_REP_END ? site : t->ranges[rep[i].idx].site};
  return a2a_report_repeats(r, n);
}
_Static_assert(A2A_CK__COUNT <= 256, "ly_rep keeps a check id in a byte");
_Static_assert(LAYOUT_MAX_RANGES < LY_REP_END, "ly_rep keeps a range index in 16 bits");

static const char *role(const lr_range *r, const a2a_event *ev) {
  if (ev->kind == A2A_EV_P2P) return ev->u.p2p.is_send ? "send buffer" : "receive buffer";
  return r->is_recv ? "recvbuff" : "sendbuff";
}

static void json_common(a2a_json *j, const a2a_event *ev, const a2a_comm *c) {
  a2a_json_str(j, "api", ev->api);
  a2a_json_ptr(j, "comm_handle", ev->comm);
  if (c) {
    a2a_json_str(j, "comm", c->name);
    a2a_json_int(j, "nranks", c->nranks);
    a2a_json_int(j, "rank", c->rank);
    a2a_json_int(j, "comm_device", c->device);
  }
  if (ev->kind == A2A_EV_P2P) {
    a2a_json_int(j, "peer", ev->u.p2p.peer);
    a2a_json_uint(j, "count", ev->u.p2p.count);
    a2a_json_str(j, "dtype", a2a_dtype_name(ev->u.p2p.dtype));
  } else {
    a2a_json_uint(j, "count", ev->u.coll.count);
    a2a_json_str(j, "dtype", a2a_dtype_name(ev->u.coll.dtype));
    if (ev->u.coll.root >= 0) a2a_json_int(j, "root", ev->u.coll.root);
  }
}

static void json_range(a2a_json *j, const char *key, const lr_range *r) {
  a2a_json_obj_begin(j, key);
  a2a_json_ptr(j, "lo", (const void *)r->lo);
  a2a_json_uint(j, "bytes", (unsigned long long)(r->hi - r->lo));
  a2a_json_obj_end(j);
}

/* ------------------------------------------------------------------ */
/* Per-buffer checks: host-memory, wrong-device, out-of-bounds, misaligned.
 * Returns true when the verdict rests on the allocation registry alone (a
 * ly_memo may keep it, with the findings noted in tl_cap). */

static bool check_buffer(const a2a_event *ev, const a2a_comm *c, const lr_op *op,
                         const lr_range *r) {
  size_t bytes = r->hi - r->lo;
  if (bytes == 0) return true; /* NCCL does not touch a zero-byte buffer */
  char msg[640], js[768];
  a2a_json j;
  ly_mem m;
  classify((const void *)r->lo, &m);

  /* A finding repeated every step (the same call site) is only counted:
   * a2a_report_repeat, before anything is formatted. */
  if (m.type == 0 && a2a_check_on(A2A_CK_LAYOUT_HOST_MEMORY)) {
    cap_note(A2A_CK_LAYOUT_HOST_MEMORY, A2A_SEV_ERROR, LY_REP_END);
    if (a2a_report_repeat(A2A_CK_LAYOUT_HOST_MEMORY, A2A_SEV_ERROR, ev->callsite)) return false;
    a2a_json_init(&j, js, sizeof js);
    a2a_json_obj_begin(&j, NULL);
    json_common(&j, ev, c);
    json_range(&j, "buffer", r);
    a2a_json_str(&j, "memory", mem_type_name(m.type));
    a2a_json_obj_end(&j);
    snprintf(msg, sizeof msg,
             "%s gets a %s [%p, +%zu) in pageable host memory, which the GPU cannot access: "
             "pass device memory (cudaMalloc, a CUDA tensor) or at least pinned memory.",
             ev->api, role(r, ev), (void *)r->lo, bytes);
    report(A2A_CK_LAYOUT_HOST_MEMORY, A2A_SEV_ERROR, ev->callsite, c, msg, js);
    return false; /* the other checks mean nothing for host memory */
  }

  bool wrong_device = m.type == 2 && c && c->device >= 0 && m.device >= 0 &&
                      m.device != c->device && a2a_check_on(A2A_CK_LAYOUT_WRONG_DEVICE);
  if (wrong_device) cap_note(A2A_CK_LAYOUT_WRONG_DEVICE, A2A_SEV_ERROR, LY_REP_END);
  if (wrong_device && !a2a_report_repeat(A2A_CK_LAYOUT_WRONG_DEVICE, A2A_SEV_ERROR, ev->callsite)) {
    a2a_json_init(&j, js, sizeof js);
    a2a_json_obj_begin(&j, NULL);
    json_common(&j, ev, c);
    json_range(&j, "buffer", r);
    a2a_json_int(&j, "buffer_device", m.device);
    a2a_json_obj_end(&j);
    snprintf(msg, sizeof msg,
             "%s gets a %s [%p, +%zu) on device %d but %s is bound to device %d: allocate the "
             "buffer on the communicator's device (or use the communicator of that device).",
             ev->api, role(r, ev), (void *)r->lo, bytes, m.device, c->name, c->device);
    report(A2A_CK_LAYOUT_WRONG_DEVICE, A2A_SEV_ERROR, ev->callsite, c, msg, js);
  }

  bool past_end = m.seg && r->hi > m.base + m.size && a2a_check_on(A2A_CK_LAYOUT_OUT_OF_BOUNDS);
  if (past_end) cap_note(A2A_CK_LAYOUT_OUT_OF_BOUNDS, A2A_SEV_ERROR, LY_REP_END);
  if (past_end && !a2a_report_repeat(A2A_CK_LAYOUT_OUT_OF_BOUNDS, A2A_SEV_ERROR, ev->callsite)) {
    size_t over = r->hi - (m.base + m.size);
    a2a_json_init(&j, js, sizeof js);
    a2a_json_obj_begin(&j, NULL);
    json_common(&j, ev, c);
    json_range(&j, "buffer", r);
    a2a_json_uint(&j, "elements", r->elems);
    a2a_json_uint(&j, "element_size", op->elem);
    a2a_json_ptr(&j, "segment_base", (const void *)m.base);
    a2a_json_uint(&j, "segment_bytes", m.size);
    a2a_json_uint(&j, "bytes_past_end", over);
    a2a_json_bool(&j, "times_nranks", r->per_rank);
    a2a_json_obj_end(&j);
    snprintf(msg, sizeof msg,
             "%s %s [%p, +%zu) (%zu elements of %zu bytes%s) runs %zu bytes past the end of its "
             "allocation [%p, +%zu): fix the count or allocate a larger buffer.",
             ev->api, role(r, ev), (void *)r->lo, bytes, r->elems, op->elem,
             r->per_rank ? ", count times nranks" : "", over, (void *)m.base, m.size);
    report(A2A_CK_LAYOUT_OUT_OF_BOUNDS, A2A_SEV_ERROR, ev->callsite, c, msg, js);
  }

  if (r->saturated || !a2a_check_on(A2A_CK_LAYOUT_MISALIGNED)) return m.seg;
  /* The buffer itself, then the per-peer chunks of a per-rank buffer. */
  size_t chunk = r->per_rank ? lr_mul(r->elems / (c && c->nranks > 0 ? (size_t)c->nranks : 1),
                                      op->elem)
                             : bytes;
  uintptr_t bad = 0;
  if (r->lo % LAYOUT_ALIGN && chunk >= LAYOUT_ALIGN_MIN_BYTES) bad = r->lo;
  else if (r->per_rank && chunk % LAYOUT_ALIGN && chunk >= LAYOUT_ALIGN_MIN_BYTES && bytes > chunk)
    bad = r->lo + chunk;
  if (!bad) return m.seg;
  cap_note(A2A_CK_LAYOUT_MISALIGNED, A2A_SEV_WARNING, LY_REP_END);
  if (a2a_report_repeat(A2A_CK_LAYOUT_MISALIGNED, A2A_SEV_WARNING, ev->callsite)) return m.seg;
  a2a_json_init(&j, js, sizeof js);
  a2a_json_obj_begin(&j, NULL);
  json_common(&j, ev, c);
  json_range(&j, "buffer", r);
  a2a_json_ptr(&j, "misaligned_address", (const void *)bad);
  a2a_json_uint(&j, "chunk_bytes", chunk);
  a2a_json_int(&j, "alignment", LAYOUT_ALIGN);
  a2a_json_obj_end(&j);
  snprintf(msg, sizeof msg,
           "%s %s %s %p is not %d-byte aligned (%zu-byte %s): NCCL falls back to slower copies; "
           "allocate or slice buffers at multiples of %d bytes.",
           ev->api, role(r, ev), bad == r->lo ? "address" : "per-peer chunk at", (void *)bad,
           LAYOUT_ALIGN, chunk, bad == r->lo ? "region" : "chunks", LAYOUT_ALIGN);
  report(A2A_CK_LAYOUT_MISALIGNED, A2A_SEV_WARNING, ev->callsite, c, msg, js);
  return m.seg;
}

/* ------------------------------------------------------------------ */
/* layout.overlap inside one operation. */

/* The in-place form nccl.h defines for this collective: the send range
 * start that counts as in-place, or 0 if the operation has none. */
static bool inplace_ok(const a2a_event *ev, const a2a_comm *c, const lr_op *op) {
  uintptr_t s = (uintptr_t)ev->u.coll.sendbuff, r = (uintptr_t)ev->u.coll.recvbuff;
  size_t chunk = lr_mul(ev->u.coll.count, op->elem);
  int rank = c ? c->rank : -1;
  switch (ev->u.coll.coll) {
    case A2A_COLL_ALLREDUCE:
    case A2A_COLL_BROADCAST:
    case A2A_COLL_REDUCE:
      return s == r;
    case A2A_COLL_ALLGATHER: /* sendbuff == recvbuff + rank*sendcount */
      return rank >= 0 && s == r + lr_mul((size_t)rank, chunk);
    case A2A_COLL_REDUCESCATTER: /* recvbuff == sendbuff + rank*recvcount */
      return rank >= 0 && r == s + lr_mul((size_t)rank, chunk);
    case A2A_COLL_GATHER: /* sendbuff == recvbuff + root*count */
      return ev->u.coll.root >= 0 && s == r + lr_mul((size_t)ev->u.coll.root, chunk);
    case A2A_COLL_SCATTER: /* recvbuff == sendbuff + root*count */
      return ev->u.coll.root >= 0 && r == s + lr_mul((size_t)ev->u.coll.root, chunk);
    case A2A_COLL_ALLTOALL: /* nccl.h defines no in-place all-to-all */
    default:
      return false;
  }
}

static const char *inplace_rule(int coll) {
  switch (coll) {
    case A2A_COLL_ALLGATHER: return "in-place AllGather needs sendbuff == recvbuff + rank*sendcount";
    case A2A_COLL_REDUCESCATTER:
      return "in-place ReduceScatter needs recvbuff == sendbuff + rank*recvcount";
    case A2A_COLL_GATHER: return "in-place Gather needs sendbuff == recvbuff + root*count";
    case A2A_COLL_SCATTER: return "in-place Scatter needs recvbuff == sendbuff + root*count";
    case A2A_COLL_ALLTOALL: return "NCCL defines no in-place AlltoAll";
    default: return "in-place use needs sendbuff == recvbuff";
  }
}

/* Returns false when it reported (the verdict depends on the event's
 * arguments and the communicator's rank only). */
static bool check_op_overlap(const a2a_event *ev, const a2a_comm *c, const lr_op *op) {
  /* Two ranges: r[0] is the send range, r[1] the receive range. */
  if (ev->kind != A2A_EV_COLL || op->n < 2) return true;
  const lr_range *s = &op->r[0], *r = &op->r[1];
  if (s->saturated || r->saturated) return true; /* an overflowed count: out-of-bounds says it */
  if (!lr_overlap(s->lo, s->hi, r->lo, r->hi)) return true;
  /* Without the communicator the rank is unknown: only judge what does not
   * depend on it. */
  int coll = ev->u.coll.coll;
  if (!op->exact && (coll == A2A_COLL_ALLGATHER || coll == A2A_COLL_REDUCESCATTER ||
                     coll == A2A_COLL_ALLTOALL || coll == A2A_COLL_GATHER ||
                     coll == A2A_COLL_SCATTER))
    return true;
  if (inplace_ok(ev, c, op)) return true;
  cap_note(A2A_CK_LAYOUT_OVERLAP, A2A_SEV_ERROR, LY_REP_END);
  if (a2a_report_repeat(A2A_CK_LAYOUT_OVERLAP, A2A_SEV_ERROR, ev->callsite)) return false;
  char msg[640], js[768];
  a2a_json j;
  a2a_json_init(&j, js, sizeof js);
  a2a_json_obj_begin(&j, NULL);
  json_common(&j, ev, c);
  json_range(&j, "send", s);
  json_range(&j, "recv", r);
  a2a_json_str(&j, "collective", a2a_coll_name(coll));
  a2a_json_obj_end(&j);
  snprintf(msg, sizeof msg,
           "%s: recvbuff [%p, +%zu) overlaps sendbuff [%p, +%zu) in a way NCCL does not define "
           "(%s): the result is garbage; use separate buffers or the exact in-place layout.",
           ev->api, (void *)r->lo, (size_t)(r->hi - r->lo), (void *)s->lo,
           (size_t)(s->hi - s->lo), inplace_rule(coll));
  report(A2A_CK_LAYOUT_OVERLAP, A2A_SEV_ERROR, ev->callsite, c, msg, js);
  return false;
}

/* ------------------------------------------------------------------ */
/* layout.overlap across the operations of one group. */

/* Heapsort of range pointers: qsort may allocate (glibc merges through a
 * malloc'ed buffer), and ncclGroupEnd is on the application's hot path. */
typedef int (*ly_cmp)(const ly_range *, const ly_range *);

static void sift(const ly_range **v, size_t root, size_t n, ly_cmp cmp) {
  for (;;) {
    size_t child = 2 * root + 1;
    if (child >= n) return;
    if (child + 1 < n && cmp(v[child], v[child + 1]) < 0) child++;
    if (cmp(v[root], v[child]) >= 0) return;
    const ly_range *tmp = v[root];
    v[root] = v[child];
    v[child] = tmp;
    root = child;
  }
}

static void sort_ranges(const ly_range **v, size_t n, ly_cmp cmp) {
  for (size_t i = n / 2; i-- > 0;) sift(v, i, n, cmp);
  for (size_t end = n; end-- > 1;) {
    const ly_range *tmp = v[0];
    v[0] = v[end];
    v[end] = tmp;
    sift(v, 0, end, cmp);
  }
}

static int cmp_lo(const ly_range *x, const ly_range *y) {
  return x->lo < y->lo ? -1 : x->lo > y->lo ? 1 : (x->op < y->op ? -1 : x->op > y->op);
}

/* The two ranges with the greatest end among those seen, from two different
 * operations (b2 is the greatest among operations other than b1's). */
typedef struct best2 { const ly_range *b1, *b2; } best2;

static void best_add(best2 *b, const ly_range *x) {
  if (!b->b1) { b->b1 = x; return; }
  if (x->op == b->b1->op) {
    if (x->hi > b->b1->hi) b->b1 = x;
  } else if (x->hi > b->b1->hi) {
    b->b2 = b->b1;
    b->b1 = x;
  } else if (!b->b2 || x->hi > b->b2->hi) {
    b->b2 = x;
  }
}

static const ly_range *best_other(const best2 *b, const ly_range *x) {
  return b->b1 && b->b1->op != x->op ? b->b1 : b->b2;
}

/* The outermost open group's call site, symbolized (cached per site; the
 * symbolizer takes the runtime's report lock, this analyzer holds none). */
static const char *outer_text(ly_thread *t) {
  if (!t->outer_site) return "an unknown call site";
  if (t->outer_text_site != t->outer_site) {
    a2a_hostsvc->site_text(t->outer_site, t->outer_text, sizeof t->outer_text);
    t->outer_text_site = t->outer_site;
  }
  return t->outer_text;
}

/* "nested group 3", or "the outer group itself" for operations posted
 * directly in it. */
static const char *grp_name(uint16_t grp, char *buf, size_t cap) {
  if (grp == 0) snprintf(buf, cap, "the outer group itself");
  else snprintf(buf, cap, "nested group %u", (unsigned)grp);
  return buf;
}

/* Returns false when it reported (the verdict depends on the ranges'
 * bounds, directions and operations only). */
static bool check_group_overlap(ly_thread *t, const a2a_event *end) {
  if (t->nranges < 2) return true;
  const ly_range **sorted = t->scratch;
  unsigned n = 0;
  for (unsigned i = 0; i < t->nranges; i++)
    if (t->ranges[i].lo < t->ranges[i].hi) sorted[n++] = &t->ranges[i];
  sort_ranges(sorted, n, cmp_lo);
  best2 any = {0}, recv = {0};
  const ly_range *x = NULL, *y = NULL;
  unsigned pairs = 0;
  for (unsigned i = 0; i < n; i++) {
    const ly_range *cur = sorted[i];
    /* A receive range conflicts with anything; a send range with receives. */
    const ly_range *o = best_other(cur->is_recv ? &any : &recv, cur);
    if (o && o->hi > cur->lo) {
      pairs++;
      if (!x) { x = o; y = cur; }
    }
    best_add(&any, cur);
    if (cur->is_recv) best_add(&recv, cur);
  }
  if (!x) return true;
  /* The site of the later-posted operation of the pair: the line to fix. */
  const ly_range *later = x->op > y->op ? x : y;
  /* An in-place loop (nccl-tests' in-place sendrecv) repeats it every step:
   * only the first is formatted. */
  cap_note(A2A_CK_LAYOUT_OVERLAP, A2A_SEV_ERROR, (uint16_t)(later - t->ranges));
  if (a2a_report_repeat(A2A_CK_LAYOUT_OVERLAP, A2A_SEV_ERROR, later->site)) return false;
  uintptr_t lo = x->lo > y->lo ? x->lo : y->lo, hi = x->hi < y->hi ? x->hi : y->hi;
  char msg[1600], js[1024], merged[900] = "";
  char px[32] = "", py[32] = "", px2[32], py2[32];
  bool nested = x->grp != y->grp;
  if (nested)
    snprintf(merged, sizeof merged,
             " The two were posted in different ncclGroupStart/ncclGroupEnd pairs (%s and %s "
             "of the %u nested in it), but those pairs are nested inside the group opened at "
             "%s: a nested ncclGroupEnd launches nothing, NCCL merges everything posted until "
             "the outermost ncclGroupEnd into one launch, so operations posted as separate "
             "steps run at the same time, and here one writes bytes the other reads or writes. "
             "Fix: end the outer group before the dependent step (or post the steps outside any outer group), or give every "
             "receive its own disjoint region.",
             grp_name(x->grp, px2, sizeof px2), grp_name(y->grp, py2, sizeof py2),
             (unsigned)t->nnested, outer_text(t));
  a2a_json j;
  a2a_json_init(&j, js, sizeof js);
  a2a_json_obj_begin(&j, NULL);
  a2a_json_str(&j, "api", end->api);
  a2a_json_uint(&j, "operations_in_group", t->nops);
  a2a_json_uint(&j, "nested_groups", t->nnested);
  if (t->outer_site) a2a_json_ptr(&j, "group_site", t->outer_site);
  a2a_json_uint(&j, "overlapping_ranges", pairs);
  const ly_range *both[2] = {x, y};
  a2a_json_arr_begin(&j, "ranges");
  for (int k = 0; k < 2; k++) {
    a2a_json_obj_begin(&j, NULL);
    a2a_json_str(&j, "api", both[k]->api);
    if (both[k]->peer >= 0) a2a_json_int(&j, "peer", both[k]->peer);
    a2a_json_bool(&j, "receive", both[k]->is_recv);
    a2a_json_ptr(&j, "lo", (const void *)both[k]->lo);
    a2a_json_uint(&j, "bytes", (unsigned long long)(both[k]->hi - both[k]->lo));
    if (both[k]->comm) a2a_json_str(&j, "comm", both[k]->comm->name);
    a2a_json_ptr(&j, "site", both[k]->site);
    a2a_json_uint(&j, "nested_group", both[k]->grp);
    a2a_json_obj_end(&j);
  }
  a2a_json_arr_end(&j);
  a2a_json_uint(&j, "overlap_bytes", (unsigned long long)(hi - lo));
  a2a_json_obj_end(&j);
  if (x->peer >= 0) snprintf(px, sizeof px, " (peer %d)", x->peer);
  if (y->peer >= 0) snprintf(py, sizeof py, " (peer %d)", y->peer);
  snprintf(msg, sizeof msg,
           "In one NCCL group, the %s range [%p, +%zu) of %s%s overlaps the %s range [%p, +%zu) "
           "of %s%s by %zu bytes: the operations run concurrently, so the data is corrupted%s",
           x->is_recv ? "receive" : "send", (void *)x->lo, (size_t)(x->hi - x->lo), x->api, px,
           y->is_recv ? "receive" : "send", (void *)y->lo, (size_t)(y->hi - y->lo), y->api, py,
           (size_t)(hi - lo), nested ? "." : "; give every receive its own disjoint region.");
  if (nested) snprintf(msg + strlen(msg), sizeof msg - strlen(msg), "%s", merged);
  report(A2A_CK_LAYOUT_OVERLAP, A2A_SEV_ERROR, later->site, later->comm, msg, js);
  return false;
}

/* ------------------------------------------------------------------ */
/* layout.scattered: grouped all-to-all made of non-contiguous chunks. */

static int cmp_peer(const ly_range *x, const ly_range *y) {
  if (x->peer != y->peer) return x->peer < y->peer ? -1 : 1;
  return x->op < y->op ? -1 : x->op > y->op ? 1 : 0;
}

typedef struct dir_stats {
  unsigned chunks, regions, peers, others; /* peers: of every posted operation (empty
                                             ones too); others: those other than
                                             this rank */
  unsigned busy_peers;                     /* peers of the non-empty chunks */
  bool self;                               /* a chunk for this rank itself */
  size_t bytes, smallest;
  uint16_t grp_lo, grp_hi;                 /* nested groups the chunks came from */
  size_t self_gap;                         /* gap between peers rank-1 and rank+1 */
  uintptr_t self_at;                       /* where that gap starts */
  size_t max_gap;                          /* the largest gap between regions */
  size_t max_region;                       /* the largest region */
  bool aligned;                            /* every region starts 512-byte aligned */
  unsigned starts;                         /* distinct chunk addresses (empty chunks'
                                              too, null ones not) */
  bool even;                               /* those equally spaced, step apart (a step
                                              across this rank's own slot, when it
                                              posts nothing for itself, counted as
                                              two): meaningful from 3 starts */
  size_t step;
  const ly_range **sorted;                 /* the chunks in address order, empty ones
                                              too: a part of t->scratch */
  unsigned nsorted;
} dir_stats;

/* Why a direction's regions are taken as separate tensors, or not. */
typedef enum ly_sep {
  LY_SEP_VIEWS,       /* not: views of one buffer, as far as can be told */
  LY_SEP_ONE,         /* one region: nothing to explain */
  LY_SEP_BLOCKS,      /* (a) every gap below two blocks */
  LY_SEP_SMALL,       /* (b) every region below one block */
  LY_SEP_UNEVEN,      /* (c) 3+ regions not equally spaced */
  LY_SEP_INTERLEAVED, /* (d) the other direction fills every gap */
} ly_sep;

/* PyTorch's caching allocator hands out blocks rounded up to 512 bytes,
 * 512-byte aligned (c10/cuda/CUDACachingAllocator.cpp, kMinBlockSize): the
 * separate tensors of all_to_all(output_list, input_list) or of a
 * batch_isend_irecv list lie in such blocks, wherever the allocator had
 * room - one after another when allocated in a row, every other block when
 * sends and receives were allocated alternately, further apart when other
 * live tensors sit between them. Views of one buffer that skip data (a
 * strided or capacity-padded tensor) sit at base + p*stride instead. When
 * every region starts aligned, a direction's regions are taken as separate
 * tensors when any of:
 *  (a) every gap is below two blocks (a view that skips data skips at least
 *      a chunk: its gaps are as large as the data);
 *  (b) every region is below one block: an aligned start with less than a
 *      block of data is what a small tensor of the allocator looks like, and
 *      packing such chunks saves nothing (NCCL moves each per-peer chunk as
 *      a transfer of its own either way);
 *  (c) there are 3 or more regions and the chunks' starts are not equally
 *      spaced (a gap where this rank's own chunk belongs, when it posts
 *      none, counts as two steps);
 *  (d) every gap is covered, at least in part, by a chunk of the other
 *      direction (tensors allocated alternately, send then receive): an
 *      interleaving one strided view cannot produce (skip_at: a gap not to
 *      judge, this rank's own block kept local; 0 none).
 * Otherwise (any start unaligned, or equally spaced gaps of two blocks or
 * more that nothing explains) they are taken as views. (d) walks both
 * directions' chunks once more, so it is tried last. */
#define LY_ALLOC_BLOCK 512
static bool gaps_covered(const dir_stats *d, const dir_stats *o, uintptr_t skip_at) {
  uintptr_t end = 0, reach = 0; /* reach: the greatest end of o's chunks below the gap's end */
  unsigned k = 0;
  bool any = false;
  for (unsigned i = 0; i < d->nsorted; i++) {
    const ly_range *x = d->sorted[i];
    if (x->lo == x->hi) continue;
    if (any && x->lo > end && end != skip_at) { /* the gap [end, x->lo) */
      for (; k < o->nsorted && o->sorted[k]->lo < x->lo; k++)
        if (o->sorted[k]->lo < o->sorted[k]->hi && o->sorted[k]->hi > reach)
          reach = o->sorted[k]->hi;
      if (reach <= end) return false;
    }
    if (!any || x->hi > end) end = x->hi;
    any = true;
  }
  return true;
}

static ly_sep separate_blocks(const dir_stats *d, const dir_stats *o, uintptr_t skip_at) {
  if (d->regions <= 1) return LY_SEP_ONE;
  if (!d->aligned) return LY_SEP_VIEWS;
  if (d->max_gap < 2 * LY_ALLOC_BLOCK) return LY_SEP_BLOCKS;
  if (d->max_region < LY_ALLOC_BLOCK) return LY_SEP_SMALL;
  if (d->regions >= 3 && d->starts >= 3 && !d->even) return LY_SEP_UNEVEN;
  if (gaps_covered(d, o, skip_at)) return LY_SEP_INTERLEAVED;
  return LY_SEP_VIEWS;
}

/* P2P chunks of one direction on one comm, collected into v (a part of
 * t->scratch with room for every range of the group; d->sorted keeps them,
 * d->nsorted how many: the other direction's part starts after them).
 * Peers counted in peer order, empty chunks too; regions of the non-empty
 * chunks in address order (chunks that touch or overlap merge into one
 * region: a buffer laid out in another order than the peers', or one send
 * buffer posted to every peer, is still one region). A rank that posts no
 * chunk for itself (it copies its own block locally) leaves a gap where
 * that block belongs in an all_to_all_single layout, between the chunks of
 * peers rank-1 and rank+1: its size is recorded (self_gap; rank: this rank
 * in the communicator, -1 if unknown), and the caller forgives it when both
 * directions have one of the same size - what a rank sends to itself is
 * what it receives from itself. The chunks' starts are spaced in the same
 * pass (an empty chunk's address counts: a zero split of a padded buffer
 * still points at its slot; a null one does not). */
static void direction(ly_thread *t, void *comm, bool recv, int rank, dir_stats *d,
                      const ly_range **v) {
  unsigned n = 0;
  int last_peer = -1, busy_peer = -1; /* of the last chunk, of the last non-empty one */
  bool self_op = false; /* an operation for this rank, empty or not */
  memset(d, 0, sizeof *d);
  d->grp_lo = UINT16_MAX;
  d->aligned = true;
  d->even = true;
  for (unsigned i = 0; i < t->nranges; i++) {
    const ly_range *r = &t->ranges[i];
    if (r->p2p && r->comm_handle == comm && r->is_recv == recv) v[n++] = r;
  }
  d->sorted = v;
  d->nsorted = n;
  /* Peers: every posted operation counts, empty ones too (an all-to-all
   * with zero splits still addresses every rank). Chunks: the non-empty
   * ones. */
  sort_ranges(v, n, cmp_peer);
  for (unsigned i = 0; i < n; i++) {
    if (v[i]->peer != last_peer) {
      d->peers++;
      if (v[i]->peer == rank) self_op = true;
      else d->others++;
    }
    if (v[i]->grp < d->grp_lo) d->grp_lo = v[i]->grp;
    if (v[i]->grp > d->grp_hi) d->grp_hi = v[i]->grp;
    size_t b = v[i]->hi - v[i]->lo;
    if (b) {
      if (v[i]->peer == rank) d->self = true;
      if (!d->chunks || v[i]->peer != busy_peer) d->busy_peers++;
      busy_peer = v[i]->peer;
      d->chunks++;
      d->bytes += b;
      if (!d->smallest || b < d->smallest) d->smallest = b;
    }
    last_peer = v[i]->peer;
  }
  sort_ranges(v, n, cmp_lo);
  uintptr_t end = 0;   /* greatest end of the regions so far */
  uintptr_t rlo = 0;   /* the current region's start */
  int end_peer = -1;   /* the peer of the chunk that reaches it */
  uintptr_t prev = 0;  /* the last distinct start */
  int prev_peer = -1;  /* the peer of a chunk there */
  for (unsigned i = 0; i < n; i++) {
    const ly_range *x = v[i];
    if (x->lo && (!d->starts || x->lo != prev)) {
      if (d->starts) {
        size_t step = x->lo - prev;
        if (rank >= 0 && !self_op && prev_peer == rank - 1 && x->peer == rank + 1) {
          d->even &= step % 2 == 0; /* across this rank's own slot: two steps */
          step /= 2;
        }
        if (d->starts == 1) d->step = step;
        else d->even &= step == d->step;
      }
      d->starts++;
      prev = x->lo;
    }
    if (x->lo) prev_peer = x->peer;
    if (x->lo == x->hi) continue; /* regions: the non-empty chunks */
    if (d->regions && x->lo > end) {
      if (rank >= 0 && !d->self && end_peer == rank - 1 && x->peer == rank + 1) {
        d->self_gap = x->lo - end;
        d->self_at = end;
      }
      if (x->lo - end > d->max_gap) d->max_gap = x->lo - end;
      if (end - rlo > d->max_region) d->max_region = end - rlo;
    }
    if (!d->regions || x->lo > end) {
      d->regions++;
      rlo = x->lo;
      if (x->lo % LY_ALLOC_BLOCK) d->aligned = false;
    }
    if (x->hi > end) {
      end = x->hi;
      end_peer = x->peer;
    }
  }
  if (d->regions && end - rlo > d->max_region) d->max_region = end - rlo;
}

/* "1 region" / "3 separate regions". */
static const char *regions_text(unsigned n, char *buf, size_t cap) {
  if (n == 1) snprintf(buf, cap, "1 region");
  else snprintf(buf, cap, "%u separate regions", n);
  return buf;
}

/* The details' name of each ly_sep. */
static const char *const sep_name[] = {"views", "one-region", "blocks", "small", "uneven",
                                       "interleaved"};
_Static_assert(sizeof sep_name / sizeof *sep_name == LY_SEP_INTERLEAVED + 1,
               "a name for every ly_sep");

/* What the directions' verdicts rest on, for the message: each direction
 * whose verdict is not `skip` (the info leaves out LY_SEP_VIEWS, which it
 * never has, the warning the directions that are not views), one clause,
 * both in one when they agree. */
static const char *why_clause(const dir_stats *d, ly_sep w, char *buf, size_t cap) {
  switch (w) {
  case LY_SEP_ONE: snprintf(buf, cap, "one region"); break;
  case LY_SEP_BLOCKS:
    snprintf(buf, cap, "every region starts a 512-byte allocator block, less than two blocks "
             "apart");
    break;
  case LY_SEP_SMALL:
    snprintf(buf, cap, "every region starts a 512-byte allocator block and holds less than "
             "one, as small tensors do");
    break;
  case LY_SEP_UNEVEN:
    snprintf(buf, cap, "the regions start on 512-byte allocator blocks at unequal distances, "
             "where views of one strided or padded tensor are equally spaced");
    break;
  case LY_SEP_INTERLEAVED:
    snprintf(buf, cap, "the regions start on 512-byte allocator blocks and the other "
             "direction's chunks lie in every gap between them (tensors allocated "
             "alternately)");
    break;
  default:
    if (!d->aligned)
      snprintf(buf, cap, "a region starts off a 512-byte boundary, so not in a block of its own "
               "from PyTorch's caching allocator");
    else if (d->regions >= 3 && d->starts >= 3)
      snprintf(buf, cap, "chunks equally spaced %zu bytes apart with gaps of up to %zu bytes, "
               "as views of one strided or capacity-padded tensor lie", d->step, d->max_gap);
    else
      snprintf(buf, cap, "gaps of up to %zu bytes between regions of up to %zu bytes, nothing "
               "of the other direction in them", d->max_gap, d->max_region);
  }
  return buf;
}

static const char *why_text(const dir_stats *const both[2], const ly_sep why[2], ly_sep skip,
                            char *buf, size_t cap) {
  char c0[192], c1[192];
  bool k0 = why[0] != skip && why[0] != LY_SEP_ONE, k1 = why[1] != skip && why[1] != LY_SEP_ONE;
  why_clause(both[0], why[0], c0, sizeof c0);
  why_clause(both[1], why[1], c1, sizeof c1);
  if (k0 && k1 && !strcmp(c0, c1)) snprintf(buf, cap, "both directions: %s", c0);
  else if (k0 && k1) snprintf(buf, cap, "sends: %s; receives: %s", c0, c1);
  else snprintf(buf, cap, "%s: %s", k0 ? "sends" : "receives", k0 ? c0 : c1);
  return buf;
}

/* Returns false when it reported (the verdict depends on the P2P ranges'
 * bounds, directions, peers, nested groups and communicators only). */
static bool check_scattered(ly_thread *t, const a2a_event *end) {
  /* Each communicator of the group once. */
  void *done[16];
  unsigned ndone = 0;
  bool clean = true;
  for (unsigned i = 0; i < t->nranges && ndone < 16; i++) {
    const ly_range *r = &t->ranges[i];
    if (!r->p2p) continue;
    bool seen = false;
    for (unsigned k = 0; k < ndone; k++) seen |= done[k] == r->comm_handle;
    if (seen) continue;
    done[ndone++] = r->comm_handle;
    int nranks = r->comm && r->comm->nranks > 0 ? r->comm->nranks : -1;
    int rank = nranks > 0 ? r->comm->rank : -1;
    dir_stats s, v;
    direction(t, r->comm_handle, false, rank, &s, t->scratch);
    direction(t, r->comm_handle, true, rank, &v, t->scratch + s.nsorted);
    if (s.busy_peers < 2 || v.busy_peers < 2) continue; /* one peer: nothing to lay out */
    bool kept = s.self_gap && s.self_gap == v.self_gap; /* this rank's own block, kept local */
    if (kept) {
      s.regions--;
      v.regions--;
    }
    if (s.regions <= 1 && v.regions <= 1) continue;
    /* An all-to-all sends to and receives from every other rank. */
    bool a2a = nranks > 1 && (int)s.others == nranks - 1 && (int)v.others == nranks - 1;
    uint16_t glo = s.grp_lo < v.grp_lo ? s.grp_lo : v.grp_lo;
    uint16_t ghi = s.grp_hi > v.grp_hi ? s.grp_hi : v.grp_hi;
    bool merged = ghi > glo; /* chunks from more than one nested group */
    char msg[1400], js[768], peers[96], merge[600] = "";
    a2a_json j;
    a2a_json_init(&j, js, sizeof js);
    a2a_json_obj_begin(&j, NULL);
    a2a_json_str(&j, "api", end->api);
    if (r->comm) a2a_json_str(&j, "comm", r->comm->name);
    a2a_json_ptr(&j, "comm_handle", r->comm_handle);
    if (nranks > 0) a2a_json_int(&j, "nranks", nranks);
    a2a_json_bool(&j, "all_to_all", a2a);
    a2a_json_uint(&j, "nested_groups", t->nnested);
    const dir_stats *both[2] = {&s, &v};
    const char *names[2] = {"send", "recv"};
    ly_sep why[2] = {LY_SEP_VIEWS, LY_SEP_VIEWS};
    if (a2a) {
      why[0] = separate_blocks(&s, &v, kept ? s.self_at : 0);
      why[1] = separate_blocks(&v, &s, kept ? v.self_at : 0);
    }
    for (int k = 0; k < 2; k++) {
      a2a_json_obj_begin(&j, names[k]);
      a2a_json_uint(&j, "chunks", both[k]->chunks);
      a2a_json_uint(&j, "peers", both[k]->peers);
      a2a_json_uint(&j, "regions", both[k]->regions);
      a2a_json_uint(&j, "bytes", both[k]->bytes);
      a2a_json_uint(&j, "smallest_chunk_bytes", both[k]->smallest);
      a2a_json_uint(&j, "largest_gap_bytes", both[k]->max_gap);
      if (a2a) a2a_json_str(&j, "layout", sep_name[why[k]]);
      a2a_json_obj_end(&j);
    }
    a2a_json_obj_end(&j);
    const char *cname = r->comm ? r->comm->name : "a communicator";
    if (a2a && why[0] != LY_SEP_VIEWS && why[1] != LY_SEP_VIEWS) {
      /* all_to_all over tensor lists: nothing to pack without a copy. */
      char sr[48], vr[48], wt[416];
      snprintf(msg, sizeof msg,
               "A grouped all-to-all on %s (every rank a peer) sends %zu bytes from %s and "
               "receives %zu bytes into %s (%u/%u chunks): separate tensors, as all_to_all with "
               "tensor lists posts them, not views of one buffer (%s). NCCL moves every chunk "
               "as a transfer of its own, contiguous or not; packing them into one buffer "
               "would add a copy, not save one.",
               cname, s.bytes, regions_text(s.regions, sr, sizeof sr), v.bytes,
               regions_text(v.regions, vr, sizeof vr), s.chunks, v.chunks,
               why_text(both, why, LY_SEP_VIEWS, wt, sizeof wt));
      cap_note(A2A_CK_LAYOUT_SCATTERED, A2A_SEV_INFO, LY_REP_END);
      report(A2A_CK_LAYOUT_SCATTERED, A2A_SEV_INFO, end->callsite, r->comm, msg, js);
      clean = false;
      continue;
    }
    if (a2a) {
      char sr[48], vr[48], wt[416];
      snprintf(msg, sizeof msg,
               "A grouped all-to-all on %s (every rank a peer) sends %zu bytes from %s and "
               "receives %zu bytes into %s (%u/%u chunks): the per-peer chunks look like views "
               "of one buffer, not one contiguous buffer per direction (%s); pack them into one "
               "send and one receive buffer (all_to_all_single layout) to avoid extra copies "
               "and small transfers.",
               cname, s.bytes, regions_text(s.regions, sr, sizeof sr), v.bytes,
               regions_text(v.regions, vr, sizeof vr), s.chunks, v.chunks,
               why_text(both, why, LY_SEP_ONE, wt, sizeof wt));
      cap_note(A2A_CK_LAYOUT_SCATTERED, A2A_SEV_WARNING, LY_REP_END);
      report(A2A_CK_LAYOUT_SCATTERED, A2A_SEV_WARNING, end->callsite, r->comm, msg, js);
      clean = false;
      continue;
    }
    if (nranks > 0)
      snprintf(peers, sizeof peers, "%u of its %d other ranks", s.others > v.others ? s.others
                                                                                     : v.others,
               nranks - 1);
    else
      snprintf(peers, sizeof peers, "%u peers (the communicator's size is unknown)",
               s.peers > v.peers ? s.peers : v.peers);
    if (merged)
      snprintf(merge, sizeof merge,
               " Its operations were posted in %u separate ncclGroupStart/ncclGroupEnd pairs "
               "nested inside the group opened at %s, which NCCL launches as this one group.",
               (unsigned)(ghi - glo + 1), outer_text(t));
    char sr[48], vr[48];
    snprintf(msg, sizeof msg,
             "A group on %s exchanges with %s: it sends %zu bytes from %s and receives %zu bytes "
             "into %s (%u/%u chunks).%s It is not an all-to-all, so its layout is the "
             "algorithm's (a halo exchange, the steps of an all-gather); NCCL moves every chunk "
             "as a transfer of its own, contiguous or not, and nothing here needs repacking.",
             cname, peers, s.bytes, regions_text(s.regions, sr, sizeof sr), v.bytes,
             regions_text(v.regions, vr, sizeof vr), s.chunks, v.chunks, merge);
    cap_note(A2A_CK_LAYOUT_SCATTERED, A2A_SEV_INFO, LY_REP_END);
    report(A2A_CK_LAYOUT_SCATTERED, A2A_SEV_INFO, end->callsite, r->comm, msg, js);
    clean = false;
  }
  return clean;
}

/* ------------------------------------------------------------------ */
/* Events. */

/* The remembered slot holding the ending group whole, judged with the
 * enabled checks w0, w1; -1 none. The slots of gmask hold operations equal
 * to the group's operations 0..nops (replay_match): one with as many holds
 * exactly this group, its ranges in ranges[0..nranges). */
static inline int group_hit(const ly_thread *t, uint64_t w0, uint64_t w1) {
  unsigned m = t->gmask;
  if (!(m & (m - 1))) { /* none, or one */
    if (!m) return -1;
    const ly_gslot *g = &t->gs[__builtin_ctz(m)];
    return g->n == t->nops && g->checks[0] == w0 && g->checks[1] == w1 ? __builtin_ctz(m) : -1;
  }
  for (; m; m &= m - 1) {
    const ly_gslot *g = &t->gs[__builtin_ctz(m)];
    if (g->n == t->nops && g->checks[0] == w0 && g->checks[1] == w1) return __builtin_ctz(m);
  }
  return -1;
}

static void slot_take(ly_thread *t);

/* layout_replay_counts: only the slow paths count. */
static _Thread_local unsigned long tl_judged, tl_recorded;
void layout_replay_counts(unsigned long *judged, unsigned long *recorded) {
  *judged = tl_judged;
  *recorded = tl_recorded;
}

static void u0_update(ly_thread *t);

/* The ending group's verdicts (returns the slot that holds it now, -1
 * none): overlap and scatter are judged again only
 * when the group differs from every remembered one (a training loop posts
 * the same groups every step): gmask holds the slots whose operations
 * equal the group's so far, in order (replay_op), so ranges[] holds exactly
 * the ranges it held then, and a slot with as many operations is the whole
 * group. Its findings, if it had any, are counted again instead (judged
 * again when not all of them can be: another ncclGroupEnd site). */
static int check_group(ly_thread *t, const a2a_event *end) {
  uint64_t w0 = atomic_load_explicit(&a2a_checks_enabled_w[0], memory_order_relaxed);
  uint64_t w1 = atomic_load_explicit(&a2a_checks_enabled_w[1], memory_order_relaxed);
  int s = group_hit(t, w0, w1);
  if (s >= 0 && (!t->gs[s].nrep || replay_findings(t, t->gs[s].rep, t->gs[s].nrep, end->callsite))) {
    t->gs[s].used = ++t->gclock;
    return s;
  }
  tl_judged++;
  ly_cap cap = {0};
  tl_cap = &cap;
  if (a2a_check_on(A2A_CK_LAYOUT_OVERLAP)) check_group_overlap(t, end);
  if (a2a_check_on(A2A_CK_LAYOUT_SCATTERED)) check_scattered(t, end);
  tl_cap = NULL;
  /* Too many findings to keep, or nothing to keep: the remembered groups
   * stay as they are (but for the slot this group was written into, no
   * longer valid since its first write). */
  if (cap.lost || !t->nops) return -1;
  /* Where it is kept: the slot it was written into, or (every operation
   * replayed) the slot holding it whole - judged with other checks, or its
   * findings not replayable here - or, a shorter group than any of gmask,
   * a slot its prefix is copied into (slot_take). */
  s = t->wslot;
  if (s < 0) {
    for (unsigned m = t->gmask; m && s < 0; m &= m - 1)
      if (t->gs[__builtin_ctz(m)].n == t->nops) s = __builtin_ctz(m);
    if (s < 0) {
      slot_take(t);
      s = t->wslot;
    }
  }
  /* Every operation of a group written into slot s has its entry there
   * while it fits (record_ranges; a replayed one has it already). */
  if (t->nops > ly_slot_ocap(s)) return -1;
  ly_gslot *g = &t->gs[s];
  g->n = t->nops;
  g->checks[0] = w0;
  g->checks[1] = w1;
  g->nrep = cap.n;
  memcpy(g->rep, cap.rep, sizeof cap.rep);
  g->used = ++t->gclock;
  t->gvalid |= (uint8_t)(1u << s);
  u0_update(t);
  return s;
}

/* The innermost open group's index (ly_range.grp). */
static inline uint16_t grp_of(const ly_thread *t) {
  return t->grp_at[(t->depth < LAYOUT_MAX_DEPTH ? t->depth : LAYOUT_MAX_DEPTH) - 1];
}

/* The nested groups opened in the open outermost group so far, given the
 * thread's kept-groups word w (a2a_group_keep_word): the record's count
 * and the thread's kept starts since the record last counted them
 * (kword: w's count then, times 2), saturated as the record's count
 * saturates. */
static inline uint16_t nested_count(const ly_thread *t, uint32_t w) {
  uint32_t n = t->nnested + ((w - t->kword) >> 1);
  return n < UINT16_MAX ? (uint16_t)n : UINT16_MAX;
}

/* The same as grp_of, kept (ly_thread.cgrp) where depth changes inside a
 * group: read by every operation of a group, written by its few group
 * calls - or, while the thread keeps a nested level (a2a_group_kept), that
 * level's index: its start is the thread's latest nested one
 * (a2a_group_keep), so the count of nested groups, which
 * layout_group_start would have given it - when the level is within
 * LAYOUT_MAX_DEPTH: the record's depth is the enclosing level's (a kept
 * start reached no analyzer), the depth layout_group_start would have
 * tested, and deeper it leaves cgrp as it is (as kept_open does). */
static inline uint16_t cur_grp(const ly_thread *t) {
  uint32_t w = atomic_load_explicit(t->keep, memory_order_relaxed);
  if (__builtin_expect(w & A2A_GROUP_KEPT, 0) && t->depth < LAYOUT_MAX_DEPTH)
    return nested_count(t, w);
  return t->cgrp;
}

/* A group call that carries the thread's kept nested level
 * (u.group.kept), at its PRE (t its cached record): the level opened in
 * the record as layout_group_start would have opened it (the caller
 * clears the kept bit after this PRE: a2a_group_kept_folded); its kept
 * start stays counted by the word. While a level was kept no group call
 * of the thread reached this analyzer, so the record's cgrp is still the
 * enclosing group's: its end restores it as any nested end. */
__attribute__((noinline)) static void kept_open(ly_thread *t) {
  uint16_t g = nested_count(t, atomic_load_explicit(t->keep, memory_order_relaxed));
  if (t->depth < LAYOUT_MAX_DEPTH) t->grp_at[t->depth] = t->cgrp = g;
  t->depth++;
}

/* Whether a producer could match a send buffer now: only one written since
 * the thread's previous operation (its generation) can (find_producer),
 * and the newest producer has the greatest generation. */
static inline bool producers_live(const ly_thread *t) {
  return t->nprod && t->prod[(t->nprod - 1) % LAYOUT_MAX_PRODUCERS].gen == t->gen;
}

/* A P2P operation's dtype and peer as one word (opkey_eq): two 4-byte
 * fields with nothing between them, in the event and in an ly_opkey, so
 * the words are equal exactly when both fields are. */
_Static_assert(offsetof(a2a_event, u.p2p.peer) == offsetof(a2a_event, u.p2p.dtype) + 4 &&
                   offsetof(ly_opkey, peer) == offsetof(ly_opkey, dtype) + 4 &&
                   sizeof(int32_t) == 4 && sizeof(int) == 4,
               "dtype and peer adjacent");
static inline uint64_t dtype_peer(const void *dtype) {
  uint64_t w;
  memcpy(&w, dtype, sizeof w);
  return w;
}

/* Whether an operation of an open group equals o, a remembered group's
 * operation at its index (ly_opkey): o is replayable and every input of
 * its verdict and of its ranges is equal, so its checks would find again
 * exactly o's findings (none, or o->rep at its call site: op_repeats
 * counts them) and its ranges are in that slot's storage already, byte
 * for byte. An operation that is not replayable (judged every
 * time) keeps epoch 0, which no epoch read equals (ly_opkey.epoch). */
static inline bool opkey_eq(const ly_thread *t, const ly_opkey *o, const a2a_event *ev) {
  /* The memo key's fields (memo_key), per kind: an equal `what` of one
   * kind implies the others (a P2P key has b1 NULL and root -1, a
   * collective's peer is -1). */
  if (ev->kind == A2A_EV_P2P) {
    if (o->b0 != ev->u.p2p.buff || o->count != ev->u.p2p.count ||
        o->what != (A2A_EV_P2P << 8 | (ev->u.p2p.is_send != 0)) ||
        dtype_peer(&o->dtype) != dtype_peer(&ev->u.p2p.dtype))
      return false;
  } else {
    if (o->b0 != ev->u.coll.sendbuff || o->b1 != ev->u.coll.recvbuff ||
        o->count != ev->u.coll.count ||
        o->what != (A2A_EV_COLL << 8 | ((int32_t)ev->u.coll.coll & 0xff)) ||
        o->dtype != ev->u.coll.dtype || o->root != ev->u.coll.root)
      return false;
  }
  /* The epoch: the allocation registry's generation, the communicator
   * registry's version and the enabled checks it was drawn with, all at
   * once (ly_opkey.epoch). */
  return o->comm_handle == ev->comm && o->site == ev->callsite && o->api == ev->api &&
         o->grp == cur_grp(t) && o->epoch == a2a_core_epoch_now();
}

/* The slots of gmask (not 0) whose next operation (index nops) the event
 * equals (opkey_eq), as a mask. They held equal operations before it,
 * so equal ranges: any of them serves. Several slots (a group's first
 * operation, when several groups are remembered): out of line, the
 * one-slot case (replay_match) keeps the callers' frames small. */
__attribute__((noinline)) static unsigned replay_match_slots(const ly_thread *t,
                                                             const a2a_event *ev) {
  unsigned k = t->nops, keep = 0;
  for (unsigned m = t->gmask; m; m &= m - 1) {
    int s = __builtin_ctz(m);
    if (k < t->gs[s].n && opkey_eq(t, &t->gs[s].ops[k], ev)) keep |= 1u << s;
  }
  return keep;
}

static inline unsigned replay_match(const ly_thread *t, const a2a_event *ev) {
  unsigned k = t->nops, m = t->gmask;
  if (m & (m - 1)) return replay_match_slots(t, ev);
  /* One slot (the common case past a group's first operation). */
  const ly_gslot *g = &t->gs[__builtin_ctz(m)];
  return k < g->n && opkey_eq(t, &g->ops[k], ev) ? m : 0;
}

/* The replay cursor (ly_thread.rk, rkend) from gmask and nops: the next
 * operation of gmask's slot when it holds one, else none. Several slots
 * (a group's first operations, when several groups are remembered) are
 * compared by replay_match_slots. */
static inline void replay_cursor(ly_thread *t) {
  unsigned m = t->gmask;
  if (m && !(m & (m - 1)) && !t->nfeeds &&
      !(a2a_check_on(A2A_CK_LAYOUT_HIDDEN_COPY) && producers_live(t))) {
    const ly_gslot *g = &t->gs[__builtin_ctz(m)];
    t->rk = &g->ops[t->nops < g->n ? t->nops : g->n];
    t->rkend = &g->ops[g->n];
    t->rkmask = (uint8_t)m;
  } else {
    t->rk = t->rkend = NULL;
  }
}

/* Whether no operation can equal both a and b (opkey_eq): they differ
 * in a field opkey_eq compares with the event for their kind - an
 * equal `what` is one kind - so at most one of them equals the event.
 * Exact only while every field compared here is one opkey_eq compares
 * (replay_predict's prediction rests on it): a field added here must be
 * added there first. */
static bool opkey_distinct(const ly_opkey *a, const ly_opkey *b) {
  if (a->what != b->what || a->b0 != b->b0 || a->count != b->count || a->dtype != b->dtype ||
      a->comm_handle != b->comm_handle || a->site != b->site || a->api != b->api ||
      a->grp != b->grp)
    return true;
  return (a->what >> 8) == A2A_EV_P2P ? a->peer != b->peer : a->b1 != b->b1 || a->root != b->root;
}

/* ly_thread.u0 for the slots of gvalid (a valid slot holds one operation
 * or more: check_group keeps no empty group). Rare: when a slot becomes
 * valid, once per group that differs from the remembered ones. */
static void u0_update(ly_thread *t) {
  unsigned u = 0;
  for (unsigned m = t->gvalid; m; m &= m - 1) {
    int s = __builtin_ctz(m);
    bool distinct = true;
    for (unsigned o = t->gvalid & ~(1u << s); o && distinct; o &= o - 1)
      distinct = opkey_distinct(&t->gs[s].ops[0], &t->gs[__builtin_ctz(o)].ops[0]);
    if (distinct) u |= 1u << s;
  }
  t->u0 = (uint8_t)u;
}

/* At the outermost ncclGroupStart (nops 0), gmask holding several slots:
 * the cursor on the predicted slot p = gnext[glast], when p is one of them
 * and in u0. Exact: an operation that equals gs[p].ops[0] (layout_op_pre's
 * test, replay_op's for slot p) equals no other slot's operation 0 (u0),
 * so replay_match would keep p alone - the fast path then sets gmask to
 * rkmask (1 << p) and advances the cursor as replay_advance would; one
 * that does not is op_pre's, which compares it with every slot of gmask,
 * as without a prediction. */
static inline void replay_predict(ly_thread *t) {
  unsigned m = t->gmask, p = t->gnext[t->glast];
  if (!(m & (m - 1)) || p >= LAYOUT_GSLOTS || !((m & t->u0) >> p & 1u) || t->nfeeds ||
      (a2a_check_on(A2A_CK_LAYOUT_HIDDEN_COPY) && producers_live(t)))
    return;
  const ly_gslot *g = &t->gs[p];
  t->rk = &g->ops[0];
  t->rkend = &g->ops[g->n];
  t->rkmask = (uint8_t)(1u << p);
}

/* The outermost group that just ended is held in slot s now (-1: in none):
 * the successor of the previous one's (ly_thread.gnext). */
static inline void group_succ(ly_thread *t, int s) {
  if (s >= 0) t->gnext[t->glast] = (uint8_t)s;
  t->glast = s >= 0 ? (uint8_t)s : LAYOUT_GSLOTS;
}

/* A matched operation (replay_match's keep, not 0): the slots that still
 * equal the group, the counts advanced (ranges is set when it is read:
 * group_ranges). */
static inline void replay_advance(ly_thread *t, unsigned keep) {
  t->gmask = (uint8_t)keep;
  t->nranges = t->gs[__builtin_ctz(keep)].ops[t->nops].rend;
  t->nops++;
  replay_cursor(t);
}

/* A replayed operation's own findings (o->rep, each at the operation's
 * call site) counted again, all or none - what on_op's memo hit does for
 * the same verdict (an in-place all-to-all's layout.overlap, every step):
 * true when it has none or every one was counted; false when not all can
 * be (no entry yet at this site): nothing is counted and the caller takes
 * on_op's path, which counts or reports each itself. */
static inline bool op_repeats(const ly_thread *t, const ly_opkey *o, const void *site) {
  return !o->nrep || replay_findings(t, o->rep, o->nrep, site);
}

/* The whole operation replayed: matched, no producer to match (the
 * hidden-copy check needs the operation: on_op_slow), its findings
 * counted. The slots of keep hold equal keys, so equal findings: the
 * lowest one's are counted. */
static inline bool replay_op(ly_thread *t, const a2a_event *ev) {
  unsigned keep = replay_match(t, ev);
  if (!keep || (a2a_check_on(A2A_CK_LAYOUT_HIDDEN_COPY) && producers_live(t)) ||
      !op_repeats(t, &t->gs[__builtin_ctz(keep)].ops[t->nops], ev->callsite))
    return false;
  replay_advance(t, keep);
  return true;
}

/* The slot the open group is written into from now on (wslot): its first
 * operation that matches no remembered group's, or a group shorter than
 * every one it matched, to be kept (check_group). The least recently used
 * slot (an empty one first; on a tie a small one), slot 0 when the
 * group's operations so far do not fit a small one. They were replayed
 * from gmask's lowest slot, their entries and ranges in its storage: copied
 * into the new slot unless it is that one, so that it holds the group's own
 * operations 0..nops before the next is written. Rare: once per group that
 * differs from the remembered ones. */
static void slot_take(ly_thread *t) {
  int v = 0;
  uint64_t best = UINT64_MAX;
  for (int i = 1; i <= LAYOUT_GSLOTS; i++) {
    int s = i % LAYOUT_GSLOTS; /* the small slots first, slot 0 last */
    uint64_t u = t->gvalid >> s & 1u ? t->gs[s].used : 0;
    if (u < best) {
      best = u;
      v = s;
    }
  }
  if (t->nops > ly_slot_ocap(v) || t->nranges > ly_slot_rcap(v)) v = 0;
  /* Operations replayed (nops, not written: wslot < 0) leave gmask not 0
   * (a mismatch does not change it). */
  int src = t->gmask ? __builtin_ctz(t->gmask) : v;
  if (t->nops && v != src) {
    memcpy(t->gs[v].ops, t->gs[src].ops, t->nops * sizeof(ly_opkey));
    memcpy(t->gs[v].ranges, t->gs[src].ranges, t->nranges * sizeof(ly_range));
  }
  t->gvalid &= (uint8_t)~(1u << v);
  t->gmask = 0;
  t->rk = t->rkend = NULL;
  t->wslot = (int8_t)v;
  t->ranges = t->gs[v].ranges;
}

/* The open group outgrew the small slot it is written into: moved to slot
 * 0, whose remembered group is forgotten. False when it is in slot 0. */
static bool slot_grow(ly_thread *t) {
  if (t->wslot == 0) return false;
  /* Its operations 0..nops have their entries (a small slot grows before
   * one would not fit). */
  memcpy(t->gops0, t->gs[t->wslot].ops, t->nops * sizeof(ly_opkey));
  memcpy(t->granges0, t->ranges, t->nranges * sizeof(ly_range));
  t->gvalid &= (uint8_t)~1u;
  t->wslot = 0;
  t->ranges = t->granges0;
  return true;
}

/* Record an operation's ranges in the open group (its op index: t->nops,
 * advanced by the caller). m: the memo key the verdict was drawn with
 * (memo_key's fields), ok: the verdict is one a memo keeps, its findings
 * m->rep (m->nrep) all of them; ep: a2a_core_epoch read before c was
 * looked up and before m's generation and checks were read. */
static void record_ranges(ly_thread *t, const a2a_event *ev, const a2a_comm *c,
                          const lr_op *op, const ly_memo *m, bool ok, uint64_t ep) {
  tl_recorded++;
  if (t->wslot < 0) slot_take(t);
  unsigned k = t->nops;
  if (k >= ly_slot_ocap(t->wslot)) slot_grow(t);
  uint16_t grp = cur_grp(t);
  int peer = ev->kind == A2A_EV_P2P ? ev->u.p2p.peer : -1;
  for (int i = 0; i < op->n; i++) {
    if (op->r[i].saturated) continue; /* would overlap everything */
    if (t->nranges >= ly_slot_rcap(t->wslot) && !slot_grow(t)) {
      t->ranges_overflow = true; /* never judged, never remembered */
      return;
    }
    ly_range *r = &t->ranges[t->nranges++];
    r->lo = op->r[i].lo;
    r->hi = op->r[i].hi;
    r->site = ev->callsite;
    r->api = ev->api;
    r->comm = c;
    r->comm_handle = ev->comm;
    r->op = k;
    r->grp = grp;
    r->peer = peer;
    r->is_recv = op->r[i].is_recv;
    r->p2p = ev->kind == A2A_EV_P2P;
  }
  if (k < ly_slot_ocap(t->wslot))
    t->gs[t->wslot].ops[k] =
        (ly_opkey){.b0 = m->b0, .b1 = m->b1, .count = m->count, .dtype = m->dtype,
                   .root = m->root, .what = m->what, .peer = peer, .comm_handle = ev->comm,
                   .site = ev->callsite, .api = ev->api, .epoch = ok ? ep : 0, .grp = grp,
                   .nrep = ok ? m->nrep : 0, .rend = t->nranges};
  if (k < ly_slot_ocap(t->wslot) && ok && m->nrep)
    memcpy(t->gs[t->wslot].ops[k].rep, m->rep, m->nrep * sizeof(ly_rep));
}

/* The memo key of a COLL or P2P event on communicator c (ly_memo), with
 * the allocation registry's generation and the enabled checks read before
 * the verdict was drawn. */
static inline void memo_key(const a2a_event *ev, const a2a_comm *c, uint64_t gen, uint64_t w0,
                            uint64_t w1, ly_memo *k) {
  k->alloc_gen = gen;
  k->comm = c;
  k->checks[0] = w0;
  k->checks[1] = w1;
  if (ev->kind == A2A_EV_P2P) {
    k->b0 = ev->u.p2p.buff;
    k->b1 = NULL;
    k->count = ev->u.p2p.count;
    k->dtype = ev->u.p2p.dtype;
    k->root = -1;
    k->what = A2A_EV_P2P << 8 | (ev->u.p2p.is_send != 0);
  } else {
    k->b0 = ev->u.coll.sendbuff;
    k->b1 = ev->u.coll.recvbuff;
    k->count = ev->u.coll.count;
    k->dtype = ev->u.coll.dtype;
    k->root = ev->u.coll.root;
    k->what = A2A_EV_COLL << 8 | ((int32_t)ev->u.coll.coll & 0xff);
  }
}

/* The event's slot, and whether it holds the event's key (memo_key's
 * fields compared with the event's own, without building the key: the
 * same fields, the same conversions). */
static inline ly_memo *memo_find(ly_thread *t, const a2a_event *ev, const a2a_comm *c,
                                 uint64_t gen, uint64_t w0, uint64_t w1, bool *known) {
  t->lone = NULL; /* lone_replay's memo_mru: only while no other lookup ran */
  const void *b0, *b1;
  size_t count;
  int32_t dtype, root, what;
  if (ev->kind == A2A_EV_P2P) {
    b0 = ev->u.p2p.buff;
    b1 = NULL;
    count = ev->u.p2p.count;
    dtype = ev->u.p2p.dtype;
    root = -1;
    what = A2A_EV_P2P << 8 | (ev->u.p2p.is_send != 0);
  } else {
    b0 = ev->u.coll.sendbuff;
    b1 = ev->u.coll.recvbuff;
    count = ev->u.coll.count;
    dtype = ev->u.coll.dtype;
    root = ev->u.coll.root;
    what = A2A_EV_COLL << 8 | ((int32_t)ev->u.coll.coll & 0xff);
  }
  /* what too: an in-place send and receive of one buffer (nccl-tests'
   * sendrecv) differ only there, and took each other's slot every step. */
  /* (tests/unit/test_layout.c, memo_pair_recv, repeats it.) */
  uint64_t x = (uint64_t)(uintptr_t)b0 ^ ((uint64_t)(uintptr_t)b1 << 1) ^ count ^
               ((uint64_t)(uint32_t)what << 40);
  x *= 0x9e3779b97f4a7c15ULL;
  /* Two ways: a pair of slots, the one not used last replaced on a miss
   * (a group of eight operations - nccl-tests' four devices - had two that
   * shared a slot and evicted each other every step). */
  unsigned pair = (unsigned)(x >> 59) & (LAYOUT_MEMO / 2 - 1);
  for (unsigned w = 0; w < 2; w++) {
    ly_memo *m = &t->memo[2 * pair + w];
    if (m->b0 == b0 && m->b1 == b1 && m->count == count && m->alloc_gen == gen &&
        m->comm == c && m->what == what && m->dtype == dtype && m->root == root &&
        m->checks[0] == w0 && m->checks[1] == w1) {
      t->memo_mru[pair] = (uint8_t)w;
      *known = true;
      return m;
    }
  }
  *known = false;
  unsigned w = t->memo_mru[pair] ^ 1u;
  t->memo_mru[pair] = (uint8_t)w;
  return &t->memo[2 * pair + w];
}


/* An operation on_op did not finish: judged, or taken from the memo, then
 * matched against producers and recorded. flags: 1 the memo slot m holds
 * the event's key (known), 2 a producer could match (hidden); ep:
 * a2a_core_epoch read before c was looked up and m found (on_op). Out of line: its scratch
 * (lr_op, the key) and calls would give the fast paths a frame. */
__attribute__((noinline)) static void on_op_slow(ly_thread *t, const a2a_event *ev,
                                                 const a2a_comm *c, ly_memo *m, unsigned flags,
                                                 uint64_t ep) {
  /* A known operation's ranges are the memo's (ly_memo.op: what
   * lr_op_ranges returned for the same key, when it succeeded). */
  lr_op fresh;
  const lr_op *op = &m->op;
  const ly_memo *key = m;
  ly_memo mine;
  /* ok: a verdict a memo keeps (replayable, with its findings): a known
   * one is (on_op counted its findings again), a fresh one when settled
   * with every finding noted. */
  bool ok = true;
  if (!(flags & 1)) {
    /* Read before the verdict is drawn: a change meanwhile leaves a key
     * that no later operation matches. */
    uint64_t gen = a2a_alloc_generation();
    uint64_t w0 = atomic_load_explicit(&a2a_checks_enabled_w[0], memory_order_relaxed);
    uint64_t w1 = atomic_load_explicit(&a2a_checks_enabled_w[1], memory_order_relaxed);
    if (!lr_op_ranges(ev, c, &fresh)) return;
    op = &fresh;
    bool settled = true;
    ly_cap cap = {0};
    tl_cap = &cap;
    for (int i = 0; i < fresh.n; i++) settled &= check_buffer(ev, c, &fresh, &fresh.r[i]);
    if (a2a_check_on(A2A_CK_LAYOUT_OVERLAP)) check_op_overlap(ev, c, &fresh);
    tl_cap = NULL;
    ok = settled && !cap.lost;
    memo_key(ev, c, gen, w0, w1, &mine);
    mine.nrep = cap.n;
    memcpy(mine.rep, cap.rep, sizeof cap.rep);
    key = &mine;
    if (ok) {
      *m = mine;
      m->op = fresh;
    }
  }
  if (flags & 2) lyh_check_op(t, ev, c, op);
  if (t->depth > 0) {
    unsigned keep;
    if (t->gmask && (keep = replay_match(t, ev))) {
      replay_advance(t, keep);
      return;
    }
    record_ranges(t, ev, c, op, key, ok, ep);
  }
  t->nops++;
}

/* An operation's PRE that was not replayed (replay_op). The common case
 * outside a group returns here: a known operation (its buffer checks found
 * nothing before, with the same inputs) with no producer to match. */
static inline void on_op(ly_thread *t, const a2a_event *ev) {
  /* First: every input read below (the communicator's record, the
   * registry's generation, the enabled checks) is at least as new. */
  uint64_t ep = a2a_core_epoch_now();
  const a2a_comm *c = a2a_comm_lookup(ev->comm);
  uint64_t gen = a2a_alloc_generation();
  uint64_t w0 = atomic_load_explicit(&a2a_checks_enabled_w[0], memory_order_relaxed);
  uint64_t w1 = atomic_load_explicit(&a2a_checks_enabled_w[1], memory_order_relaxed);
  bool known;
  ly_memo *m = memo_find(t, ev, c, gen, w0, w1, &known);
  /* A remembered verdict with findings: counted again, or (not all can be:
   * another call site) judged again, which reports or counts each. */
  if (known && m->nrep && !replay_findings(t, m->rep, m->nrep, ev->callsite)) known = false;
  bool hidden = a2a_check_on(A2A_CK_LAYOUT_HIDDEN_COPY) && producers_live(t);
  if (known && !hidden && t->depth == 0) { /* nothing to judge or record */
    if (c && !m->nrep) {
      t->lone = m;
      t->lone_ep = ep;
    }
    t->nops++;
    return;
  }
  on_op_slow(t, ev, c, m, (unsigned)known | (unsigned)hidden << 1, ep);
}

/* ranges for its readers at the outermost ncclGroupEnd (the checks,
 * replayed findings, lyh_check_group): while the group replays (gmask),
 * the storage of gmask's lowest slot, which holds its ranges (the
 * replay sets only the counts); once written, wslot's (slot_take). */
static inline void group_ranges(ly_thread *t) {
  if (t->gmask) t->ranges = t->gs[__builtin_ctz(t->gmask)].ranges;
}

static void group_reset(ly_thread *t) {
  t->rk = t->rkend = NULL; /* no cursor at depth 0 (ly_thread.rk) */
  t->nranges = 0;
  t->nops = 0;
  t->ranges_overflow = false;
  t->gmask = t->gvalid;
  t->wslot = -1;
}

/* A launch's or copy's POST: closes the timing bracket its PRE opened, if
 * one is open anywhere (out of line: the PREs' paths keep no frame for
 * it). */
__attribute__((noinline)) static void layout_bracket_post(const a2a_event *ev) {
  ly_thread *t;
  if (atomic_load_explicit(&lyh_brackets_open, memory_order_relaxed) &&
      (t = thread_get(ev->thread, false)))
    lyh_on_copy_post(t, ev);
}

/* The calling thread's last launched function that a2a_kernel_params
 * knew, and whether its name says copy: an entry of that table is
 * immutable once published, and the table only empties at a2a_kparams_
 * reset, which the dispatcher calls only right before the analyzers' init
 * (layout_init bumps g_ly_gen, so an answer cached before it is not
 * used). A program launches the same few kernels over and over. */
static _Thread_local struct {
  unsigned gen;
  const void *func;
  bool copy;
} t_lk;

/* A launch's PRE past the memo: the function's parameters (the
 * table's answer remembered when there is one), then a copy kernel's
 * producer. */
__attribute__((noinline)) static void launch_kernel(const a2a_event *ev) {
  ly_thread *t;
  unsigned gen = atomic_load_explicit(&g_ly_gen, memory_order_relaxed);
  const a2a_kparams *kp = a2a_kernel_params(ev->u.launch.func);
  if (!kp) { /* not known (a full table): asked again next time */
    a2a_launch_unquiet(ev->thread);
    return;
  }
  t_lk.gen = gen;
  t_lk.func = ev->u.launch.func;
  t_lk.copy = kp->flags & A2A_KP_NAME_COPY;
  if (!t_lk.copy) return; /* quiet: the same launch again is the memo's */
  a2a_launch_unquiet(ev->thread);
  if ((t = thread_get(ev->thread, false))) lyh_on_launch(t, ev);
}

/* Launches are the hot path: a POST matters only while a copy's timing
 * bracket is open somewhere (layout_bracket_post); a PRE only for a copy
 * kernel (by its name, classified once per function) on a thread that
 * already talks to NCCL. The same function as the thread's last launch,
 * not a copy kernel, returns here without a call or a frame (t_lk). */
static void layout_launch_pre(const a2a_event *ev) {
  const void *f = ev->u.launch.func;
  if (!f || !ev->u.launch.args || !a2a_check_on(A2A_CK_LAYOUT_HIDDEN_COPY)) {
    /* Not quiet: the same function with arguments, or the check on, is
     * looked at. */
    a2a_launch_unquiet(ev->thread);
    return;
  }
  if (f == t_lk.func && !t_lk.copy &&
      t_lk.gen == atomic_load_explicit(&g_ly_gen, memory_order_relaxed))
    return;
  launch_kernel(ev);
}

/* A copy's PRE (layout_copy_pre's reference). */
__attribute__((noinline)) static void memcpy_pre(const a2a_event *ev) {
  ly_thread *t;
  if (ev->u.copy.cpykind >= A2A_CPY_D2D && a2a_check_on(A2A_CK_LAYOUT_HIDDEN_COPY) &&
      (t = thread_get(ev->thread, true)))
    lyh_on_memcpy(t, ev);
}

/* Copies (a hot call too): a POST closes a timing bracket if one is open
 * (layout_bracket_post); a PRE of a device-to-device copy is a candidate
 * producer of a send buffer (only those can be a hidden .contiguous()).
 * memcpy_pre without a frame in the common case: a device-to-device copy
 * (not cudaMemcpyDefault, which asks the registry) on a thread whose
 * record is cached - memcpy_pre's tests in its order, then lyh_on_memcpy's
 * (its test of the kind is true: this is called for copies only, by the
 * dispatch table's A2A_EV_MEMCPY rows and by layout_on_event). */
static void layout_copy_pre(const a2a_event *ev) {
  if (ev->u.copy.cpykind == A2A_CPY_D2D && a2a_check_on(A2A_CK_LAYOUT_HIDDEN_COPY) &&
      thread_cached(ev->thread)) {
    if (ev->u.copy.height > 1 || !ev->u.copy.bytes) return;
    lyh_producer_add(t_ly.t, ev, (uintptr_t)ev->u.copy.dst, (uintptr_t)ev->u.copy.src,
                     ev->u.copy.bytes, ev->api);
    return;
  }
  memcpy_pre(ev);
}

__attribute__((noinline)) static void layout_other(const a2a_event *ev);

/* The cursor's operation o replayed (layout_op_pre, cursor_reps): what
 * replay_advance does for gmask's one slot, but only the cursor moved on -
 * nops, nranges and gmask are left for cursor_sync, which every other
 * reader of them calls first. */
static inline void cursor_advance(ly_thread *t, const ly_opkey *o) { t->rk = o + 1; }

/* The counts the cursor's replays left behind (cursor_advance), brought up
 * to date: what cursor_advance did not store. Called first by every path
 * that reads nops, nranges or gmask in a group: op_pre (every operation
 * not replayed on the cursor) and the outermost ncclGroupEnd; nothing else
 * of the thread reads them (a copy or launch, a nested group call, the
 * events past the group's end: group_reset). Exact: a cursor is set
 * (replay_cursor, replay_predict) at index nops of the slot rkmask holds
 * (nops < n, or n), and only cursor_advance moves it, one operation
 * replayed at a time: k = rk - ops is nops plus the operations replayed
 * on it since, the last of them rk[-1], whose rend is the range count
 * after it; and each of those replays left gmask rkmask (replay_advance:
 * keep is rkmask, the only slot replay_match would keep - replay_predict's
 * u0). k == nops: none since. */
static inline void cursor_sync(ly_thread *t) {
  const ly_opkey *rk = t->rk;
  if (!rk) return;
  unsigned k = (unsigned)(rk - t->gs[__builtin_ctz(t->rkmask)].ops);
  if (k == t->nops) return;
  t->nops = k;
  t->nranges = rk[-1].rend;
  t->gmask = t->rkmask;
}

/* An operation's PRE past the replay (layout_op_pre): the pending
 * hidden-copy findings, then the operation. */
__attribute__((noinline)) static void op_pre_rest(ly_thread *t, const a2a_event *ev) {
  if (t->nfeeds) {
    lyh_poll(t, false);
    if (t->gmask && t->depth > 0 && replay_op(t, ev)) return;
  }
  on_op(t, ev);
}

/* An operation's PRE: out of layout_other, so that the NCCL calls' own
 * paths do not pay for the rare kinds' frame. The replay of the remembered
 * group's operation, the common case in a group, makes no call.
 * An operation outside a group then closes the thread's generation (what
 * its POST did before): nothing of this thread reaches the analyzer
 * between an operation's PRE and its POST (NCCL's own launches and calls
 * pass through the shim's depth guard), so the generation every later
 * event sees is the same, and the operation's POST needs no handler (the
 * dispatch table calls none: layout's post mask has no NCCL operation). */
__attribute__((noinline)) static void op_pre(const a2a_event *ev) {
  ly_thread *t = thread_get(ev->thread, true);
  if (!t) return;
  cursor_sync(t);
  if (!t->nfeeds && t->gmask && t->depth > 0 && replay_op(t, ev)) return;
  op_pre_rest(t, ev);
  if (t->depth == 0) t->gen++;
}

/* The same operation outside a group as the thread's last one found in
 * the memo (ly_thread.lone), with nothing to judge or record: op_pre's
 * path for it - on_op returning at its first test, then the generation
 * closed - without a call. Exact: the event's key fields equal the entry's
 * (memo_find's tests); the epoch is the one read before the entry was
 * found, so the allocation registry's generation and the enabled checks
 * are still the ones it was found with, and the registry's inline answer
 * for the handle (no side effect; a2a_comm_lookup would give it) is the
 * entry's communicator (lone is set for a known one only); the entry has
 * no findings (nothing for replay_findings to count); no memo_find ran
 * since (it clears lone), so it would find this entry and leave memo_mru
 * as it is; and nothing to poll, no producer to match, depth 0, as on_op
 * tests. */
static inline bool lone_replay(ly_thread *t, const a2a_event *ev) {
  const ly_memo *m = t->lone;
  if (!m || t->depth != 0 || t->nfeeds) return false;
  if (ev->kind == A2A_EV_P2P) {
    if (m->b0 != ev->u.p2p.buff || m->b1 != NULL || m->count != ev->u.p2p.count ||
        m->what != (A2A_EV_P2P << 8 | (ev->u.p2p.is_send != 0)) ||
        m->dtype != ev->u.p2p.dtype || m->root != -1)
      return false;
  } else {
    if (m->b0 != ev->u.coll.sendbuff || m->b1 != ev->u.coll.recvbuff ||
        m->count != ev->u.coll.count ||
        m->what != (A2A_EV_COLL << 8 | ((int32_t)ev->u.coll.coll & 0xff)) ||
        m->dtype != ev->u.coll.dtype || m->root != ev->u.coll.root)
      return false;
  }
  if (t->lone_ep != a2a_core_epoch_now() || a2a_comm_lookup_last(ev->comm) != m->comm ||
      (a2a_check_on(A2A_CK_LAYOUT_HIDDEN_COPY) && producers_live(t)))
    return false;
  t->nops++;
  t->gen++;
  return true;
}

/* layout_op_pre's replay on the cursor of an operation with findings of
 * its own (nrep not 0), matched by its tests: its findings counted
 * (op_repeats, as replay_op does), then the cursor moved on - out of line,
 * so that the clean operations' path keeps no frame. When not all of
 * them can be counted (nothing was), op_pre's, which makes the same
 * tests again (replay_op, then on_op's path). */
__attribute__((noinline)) static void cursor_reps(ly_thread *t, const ly_opkey *o,
                                                  const a2a_event *ev) {
  if (op_repeats(t, o, ev->callsite)) {
    cursor_advance(t, o);
    return;
  }
  op_pre(ev);
}

/* The dispatch table's handler: op_pre's replay of a remembered group's
 * next operation when one slot remains (the cursor: rk is
 * &gs[s].ops[nops], s gmask's slot, when it is not rkend) or, at the
 * group's first operation, on the predicted slot (replay_predict: gmask
 * becomes rkmask, as replay_advance would set it), on a thread
 * whose record is cached, with nothing to poll - replay_op's match and
 * advance, the same tests in the same order - without a frame: anything
 * else is op_pre's (a tail call), which makes the same tests again. A
 * replayable operation only matches (opkey_eq: an operation judged every
 * time keeps an epoch no event matches); one with findings to count
 * (nrep not 0) is cursor_reps' (a tail call): the count's call
 * would give this path a frame. The cursor's existence says depth > 0,
 * nothing to poll (ly_thread.rk: op_pre's first two tests) and no producer
 * to match (replay_op's test: the event matched o, so o's epoch is the
 * current one, and the enabled checks are the ones the cursor was set
 * with - set before the cursor, o was recorded before any change after
 * it). lone_replay
 * needs depth 0, the cursor depth > 0: at most one of them applies. */
__attribute__((noinline)) static void layout_op_pre(const a2a_event *ev) {
  if (thread_cached(ev->thread)) {
    ly_thread *t = t_ly.t;
    const ly_opkey *o = t->rk;
    if (o != t->rkend && opkey_eq(t, o, ev)) {
      if (o->nrep) {
        cursor_reps(t, o, ev);
        return;
      }
      cursor_advance(t, o);
      return;
    }
    if (lone_replay(t, ev)) return;
  }
  op_pre(ev);
}

/* Group calls: the depth counted at PRE (every start, every end while
 * positive), the nested groups numbered from the outermost start. A start
 * without a record vetoes the thread's nested rows (a2a_group_nested_full),
 * so a thread keeps a nested level (a2a_group_keep) only with a record
 * here, open since its outermost start: its kept starts are counted by
 * nested_count, a kept level by cur_grp and kept_open. */
__attribute__((noinline)) static void layout_group_start(const a2a_event *ev) {
  ly_thread *t = thread_get(ev->thread, true);
  if (!t) {
    a2a_group_nested_full(ev->thread);
    return;
  }
  if (__builtin_expect(ev->u.group.kept != 0, 0)) kept_open(t);
  uint32_t w = atomic_load_explicit(t->keep, memory_order_relaxed);
  if (t->depth == 0) {
    group_reset(t);
    replay_cursor(t); /* read from here on (depth > 0) */
    replay_predict(t);
    t->outer_site = ev->callsite;
    t->nnested = 0;
    t->grp_at[0] = t->cgrp = 0;
  } else {
    uint16_t n = nested_count(t, w);
    if (n < UINT16_MAX) n++;
    t->nnested = n;
    /* Deeper than LAYOUT_MAX_DEPTH: the innermost kept index stays. */
    if (t->depth < LAYOUT_MAX_DEPTH) t->grp_at[t->depth] = t->cgrp = n;
  }
  t->kword = w & ~A2A_GROUP_KEPT; /* nnested counts the kept starts so far */
  t->depth++;
}

/* The slot holding the ending group if it is a remembered one, whole,
 * judged with the enabled checks, else -1 (check_group's first test; it
 * takes such a group there when all of its findings can be counted):
 * group_hit on the counts cursor_sync brings up to date - without storing
 * them when the cursor is at its slot's end (every operation of the slot
 * replayed: nops n, gmask rkmask, cursor_sync's values), the common end
 * of a replayed group, whose paths (group_end_replayed, group_end_reps)
 * reset them unread; group_end calls cursor_sync first. */
static inline int group_replayed(ly_thread *t) {
  uint64_t w0 = atomic_load_explicit(&a2a_checks_enabled_w[0], memory_order_relaxed);
  uint64_t w1 = atomic_load_explicit(&a2a_checks_enabled_w[1], memory_order_relaxed);
  const ly_opkey *rk = t->rk;
  if (rk) {
    int s = __builtin_ctz(t->rkmask);
    const ly_gslot *g = &t->gs[s];
    if (rk == &g->ops[g->n]) return g->checks[0] == w0 && g->checks[1] == w1 ? s : -1;
  }
  cursor_sync(t);
  return group_hit(t, w0, w1);
}

/* The outermost ncclGroupEnd (layout_group_end). */
__attribute__((noinline)) static void group_end(ly_thread *t, const a2a_event *ev) {
  cursor_sync(t);
  /* The nested groups, kept ones included, for check_group's findings. */
  t->nnested = nested_count(t, atomic_load_explicit(t->keep, memory_order_relaxed));
  group_ranges(t);
  if (t->nfeeds) lyh_poll(t, false);
  /* Outermost end: judge the whole group before NCCL launches it. An
   * overflowed range list is incomplete: overlap and scatter are then
   * not judged (never a finding from partial data). */
  int s = -1;
  if (!t->ranges_overflow) {
    s = check_group(t, ev);
    /* Only a feed found in this group or a producer written since the
     * previous operation can match (lyh_check_group). */
    if (a2a_check_on(A2A_CK_LAYOUT_HIDDEN_COPY) && (t->nfeeds || producers_live(t)))
      lyh_check_group(t, ev);
  }
  group_succ(t, s);
  group_reset(t);
  t->gen++;
}

/* group_end's path for a whole replayed group, held in slot s (the
 * caller's tests: nothing to poll, not overflowed, no producer to match),
 * past check_group: the slot used now, the group closed. */
static inline void group_end_replayed(ly_thread *t, int s) {
  t->gs[s].used = ++t->gclock;
  group_succ(t, s);
  group_reset(t);
  t->gen++;
}

/* The same for a replayed group with findings (slot s's rep): counted
 * again at this group's ranges and ncclGroupEnd, as check_group's first
 * test does, all or none - none (another site without its finding yet):
 * group_end's, whose check_group then finds nothing counted and judges
 * the group. Out of line: the count's call would give layout_group_end a
 * frame. */
__attribute__((noinline)) static void group_end_reps(ly_thread *t, int s, const a2a_event *ev) {
  /* The ranges the findings' sites are read from: slot s holds the whole
   * group, its ranges those of every slot of gmask byte for byte
   * (group_ranges' lowest one), without the counts (cursor_sync). */
  t->ranges = t->gs[s].ranges;
  if (replay_findings(t, t->gs[s].rep, t->gs[s].nrep, ev->callsite)) {
    group_end_replayed(t, s);
    return;
  }
  group_end(t, ev);
}

__attribute__((noinline)) static void layout_group_end(const a2a_event *ev) {
  ly_thread *t = thread_get(ev->thread, true);
  if (!t) return;
  if (__builtin_expect(ev->u.group.kept != 0, 0)) kept_open(t);
  if (t->depth == 0) return;
  if (--t->depth > 0) {
    t->cgrp = grp_of(t); /* the enclosing group's */
    return;
  }
  /* group_end without its call: nothing to poll, no producer to match
   * (lyh_check_group would not run) and a whole replayed group (not
   * overflowed: it was judged), whose findings, if any, are all its
   * verdict (check_group's first test). Every test before the count. The
   * nested count (nnested) is for a judged group's messages only. */
  int s;
  if (!t->nfeeds && !t->ranges_overflow &&
      !(a2a_check_on(A2A_CK_LAYOUT_HIDDEN_COPY) && producers_live(t)) &&
      (s = group_replayed(t)) >= 0) {
    if (t->gs[s].nrep) {
      group_end_reps(t, s, ev);
      return;
    }
    group_end_replayed(t, s);
    return;
  }
  group_end(t, ev);
}

/* Per kind (layout_by_kind and the front below): groups and operations
 * matter at PRE only (an operation's generation closes at its PRE:
 * layout_op_pre). */
static void layout_on_op(const a2a_event *ev) {
  if (ev->phase == A2A_PRE) layout_op_pre(ev);
}
static void layout_on_group_start(const a2a_event *ev) {
  if (ev->phase == A2A_PRE) layout_group_start(ev);
}
static void layout_on_group_end(const a2a_event *ev) {
  if (ev->phase == A2A_PRE) layout_group_end(ev);
}

/* The front: each hot kind straight to its own function (tail calls, no
 * frame here). */
static void layout_on_event(const a2a_event *ev) {
  a2a_kind k = ev->kind;
  if (k == A2A_EV_LAUNCH || k == A2A_EV_MEMCPY) {
    if (ev->phase == A2A_POST) layout_bracket_post(ev);
    else if (k == A2A_EV_LAUNCH) layout_launch_pre(ev);
    else layout_copy_pre(ev);
  }
  else if (k == A2A_EV_COLL || k == A2A_EV_P2P) layout_on_op(ev);
  else if (k == A2A_EV_GROUP_START) layout_on_group_start(ev);
  else if (k == A2A_EV_GROUP_END) layout_on_group_end(ev);
  else layout_other(ev);
}

static void layout_other(const a2a_event *ev) {
  ly_thread *t;
  switch (ev->kind) {
    case A2A_EV_COMM_INIT:
      /* The thread that creates a communicator usually posts on it: give it
       * a record now so that its copy kernels are seen from the start. */
      if (ev->phase == A2A_PRE) (void)thread_get(ev->thread, true);
      return;
    case A2A_EV_PROCESS_EXIT:
      /* Pending hidden-copy findings of every thread (racy reads of other
       * threads' records are acceptable at exit). */
      for (size_t i = 0; i < A2A_TSLOTS; i++)
        if ((t = atomic_load_explicit(&g_threads.slot[i].rec, memory_order_acquire)) && t->nfeeds)
          lyh_poll(t, true);
      return;
    case A2A_EV_FORK_CHILD:
      /* Only the forking thread exists in the child. */
      t = thread_get(ev->thread, false);
      /* Its kept nested level, if any, now the record's (the shim forgets
       * it after the fork's handling: a2a_group_keep_after_fork). */
      if (t && a2a_group_kept(ev->thread)) kept_open(t);
      for (size_t i = 0; i < A2A_TSLOTS; i++) {
        ly_thread *o = atomic_load_explicit(&g_threads.slot[i].rec, memory_order_relaxed);
        if (o && o != t) {
          o->depth = 0;
          group_reset(o);
        }
      }
      a2a_tslots_fork_child(&g_threads, ev->thread);
      atomic_fetch_add_explicit(&g_ly_gen, 1, memory_order_relaxed);
      atomic_store(&lyh_brackets_open, t && t->open_end >= 0 ? 1u : 0u);
      return;
    default:
      return;
  }
}

static int layout_init(void) {
  /* Re-initialization (unit tests) starts from a clean slate. */
  atomic_store(&lyh_brackets_open, 0u);
  atomic_fetch_add(&g_ly_gen, 1); /* every thread's cached record is stale */
  lyh_clock_init();
  return a2a_tslots_init(&g_threads, release_events);
}

/* layout_on_event's targets, per kind, for the dispatch table: launches'
 * and copies' PREs here, their POSTs in layout_by_kind_post. The NCCL
 * operations and group calls are in the pre mask only, so the table calls
 * their PRE functions directly (layout_on_op and the group fronts, which
 * on_event's callers reach in both phases, only add the phase test). */
static const a2a_by_kind layout_by_kind = {
    .fn = {[A2A_EV_LAUNCH] = layout_launch_pre, [A2A_EV_MEMCPY] = layout_copy_pre,
           [A2A_EV_COLL] = layout_op_pre, [A2A_EV_P2P] = layout_op_pre,
           [A2A_EV_GROUP_START] = layout_group_start,
           [A2A_EV_GROUP_END] = layout_group_end}};
static const a2a_by_kind layout_by_kind_post = {
    .fn = {[A2A_EV_LAUNCH] = layout_bracket_post, [A2A_EV_MEMCPY] = layout_bracket_post}};

/* Launches (the hot path) in both phases: the hidden-copy check times copy
 * kernels between PRE and POST. */
const a2a_analyzer a2a_analyzer_layout = {
    .name = "layout",
    .owner = A2A_OWN_LAYOUT,
    /* (layout_by_kind relies on it: the NCCL operations and group calls
     * in this mask only.) */
    .pre = A2A_KIND_BIT(A2A_EV_GROUP_START) | A2A_KIND_BIT(A2A_EV_GROUP_END) |
           A2A_KIND_BIT(A2A_EV_COLL) | A2A_KIND_BIT(A2A_EV_P2P) |
           A2A_KIND_BIT(A2A_EV_MEMCPY) | A2A_KIND_BIT(A2A_EV_COMM_INIT) |
           A2A_KIND_BIT(A2A_EV_LAUNCH),
    .post = A2A_KIND_BIT(A2A_EV_MEMCPY) | A2A_KIND_BIT(A2A_EV_LAUNCH) |
            A2A_KIND_BIT(A2A_EV_PROCESS_EXIT) | A2A_KIND_BIT(A2A_EV_FORK_CHILD),
    /* A launch's or copy's POST only closes a timing bracket. */
    .post_gated = A2A_KIND_BIT(A2A_EV_LAUNCH) | A2A_KIND_BIT(A2A_EV_MEMCPY),
    .post_gate = &lyh_brackets_open,
    /* layout_launch_pre's state is the thread's memo (t_lk; g_ly_gen at
     * init and fork): after a launch of a function it found in the memo,
     * not a copy kernel, the same launch returns at the memo test. Every
     * other path says not quiet (a copy kernel opens a timing bracket). */
    .launch_quiet = true,
    /* Its group handlers read the kept word for the nested-group index
     * (nested_count, kword) and fold it at the next dispatched call. */
    .nested_keep_ok = true,
    .init = layout_init,
    .on_event = layout_on_event,
    .by_kind = &layout_by_kind,
    .by_kind_post = &layout_by_kind_post,
};
