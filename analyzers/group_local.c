/* group_local.c - the `group_local` analyzer: tracks NCCL groups per thread
 * and reports misuse of the group and communicator API that one process can
 * see on its own.
 *
 * Checks reported here (group_misuse.c reports the per-communicator ones):
 *  - group.unbalanced: ncclGroupEnd (or ncclGroupSimulateEnd) with no open
 *    group on the thread (NCCL returns ncclInvalidUsage; reported at PRE so
 *    the finding exists even if the application then crashes); a group still
 *    open when the thread makes a blocking CUDA call that does not involve
 *    the group's operations; a group still open at process exit.
 *  - group.sync-in-group: a synchronizing call while the thread's open group
 *    holds operations that the call would be expected to wait for: those
 *    operations are launched only by the outermost ncclGroupEnd, so the call
 *    does not wait for them and the data read afterwards is stale.
 *
 * Which calls count (see docs/checks.md for the reasons):
 *  - blocking: cudaStreamSynchronize, cudaEventSynchronize,
 *    cudaDeviceSynchronize, and synchronous cudaMemcpy* that are not
 *    device-to-device (a D2D cudaMemcpy does not block the host). cudaMemset
 *    does not block the host for device memory and is not counted.
 *  - would-synchronize the group (-> sync-in-group instead of unbalanced):
 *    a stream synchronize of a stream holding group operations (the legacy
 *    default stream counts as every stream of the current device), a device
 *    synchronize of a device holding group operations, an event synchronize
 *    of an event recorded during the group on a stream that already held
 *    group operations, a stream/event query returning cudaSuccess under the
 *    same conditions, and a synchronous memcpy whose destination overlaps a
 *    buffer of a group operation or whose source overlaps a receive buffer.
 *  One call yields at most one of the two checks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2a_core.h"
#include "group_local.h"
#include "layout_ranges.h"

static a2a_tslots g_threads;

/* The calling thread's record, cached in the thread: a record belongs to
 * its thread until the thread exits (then this cache is gone with it), so
 * (id, record) stays right until the analyzer is re-initialized or the
 * process forks, which bump g_gl_gen. Saves the slot lookup on the two
 * phases of every NCCL call. */
static _Atomic unsigned g_gl_gen = 1; /* never 0 (only ever incremented) */
/* A thread's cache starts at generation 0 and is filled by
 * thread_get_slow only with a record: one whose gen is current holds a
 * record, so the lookups test no pointer. */
static _Thread_local struct {
  unsigned gen;
  uint32_t id;
  gl_thread *t;
} t_gl;

static void report_open(gl_thread *t, const a2a_event *ev);

static gl_thread *thread_claim(uint32_t id);

/* Out of line, so that the cached path below needs no stack frame. */
__attribute__((noinline)) static gl_thread *thread_get_slow(uint32_t id, unsigned gen) {
  gl_thread *t = thread_claim(id);
  if (t) {
    t_gl.gen = gen;
    t_gl.id = id;
    t_gl.t = t;
  }
  return t;
}

static inline gl_thread *thread_of(uint32_t id) {
  unsigned gen = atomic_load_explicit(&g_gl_gen, memory_order_relaxed);
  if (t_gl.gen == gen && t_gl.id == id) return t_gl.t;
  return thread_get_slow(id, gen);
}

gl_thread *gl_thread_get(uint32_t id) { return thread_of(id); }

/* Whether the thread's cache holds its record (thread_of's fast path):
 * then t_gl.t is the record (a current cache holds one). */
static inline bool thread_hit(uint32_t id) {
  unsigned gen = atomic_load_explicit(&g_gl_gen, memory_order_relaxed);
  return t_gl.gen == gen && t_gl.id == id;
}

/* The thread's record when its cache holds it (thread_of's fast path),
 * else NULL (thread_of's slow path would decide). */
static inline gl_thread *thread_cached(uint32_t id) {
  return thread_hit(id) ? t_gl.t : NULL;
}

static gl_thread *thread_claim(uint32_t id) {
  gl_thread *t = a2a_tslots_get(&g_threads, id);
  if (t) return t;
  /* First NCCL event of this thread: a slot's first claim is the only
   * allocation the tracker makes. An exited thread's record is reused: a
   * group it left open is reported now (its thread is gone, so its group
   * can never end), and the communicators it held are released. */
  bool reused;
  t = a2a_tslots_claim(&g_threads, id, sizeof *t, &reused);
  if (!t) return NULL;
  if (reused) {
    if (atomic_load(&t->depth) > 0 && !t->closing && a2a_check_on(A2A_CK_GROUP_UNBALANCED))
      report_open(t, NULL);
    gm_thread_gone(t);
    memset(t, 0, sizeof *t);
  }
  t->id = id;
  return t;
}

void gl_stack_one(a2a_stack *st, const void *pc) {
  memset(st, 0, sizeof *st);
  st->n = pc ? 1 : 0;
  st->pc[0] = (void *)pc;
}

/* Forget the open group's contents (not its depth). */
static void group_clear(gl_thread *t) {
  t->nflushed = 0;
  t->nbufs = 0;
  t->nstreams = 0;
  t->nevents = 0;
  t->npend = 0;
  t->closing = false;
  t->open_reported = false;
}


/* ------------------------------------------------------------------ */
/* Recording the open group's operations. */

static gl_stream *stream_find(gl_thread *t, uintptr_t key) {
  for (unsigned i = 0; i < t->nstreams; i++)
    if (t->streams[i].key == key) return &t->streams[i];
  return NULL;
}

/* One recorded operation into bufs and streams. */
static void record_op(gl_thread *t, const gl_pend *p) {
  const a2a_event *ev = &p->ev; /* its first GL_PEND_BYTES bytes */
  uintptr_t key = gl_stream_key(ev->stream, ev->per_thread);
  if (!stream_find(t, key) && t->nstreams < GL_MAX_STREAMS) {
    gl_stream *s = &t->streams[t->nstreams++];
    s->key = key;
    s->device = p->c ? p->c->device : ev->device;
    s->site = ev->callsite;
    s->api = ev->api;
    s->comm = p->c;
  }
  lr_op op;
  if (!lr_op_ranges(ev, p->c, &op)) return;
  for (int i = 0; i < op.n; i++) {
    if (op.r[i].lo >= op.r[i].hi) continue; /* zero bytes: nothing to touch */
    if (t->nbufs >= GL_MAX_BUFS) return;
    gl_buf *b = &t->bufs[t->nbufs++];
    b->lo = op.r[i].lo;
    b->hi = op.r[i].hi;
    b->stream = key;
    b->api = ev->api;
    b->site = ev->callsite;
    b->is_recv = op.r[i].is_recv;
  }
}

/* bufs and streams with every operation posted so far (gl_thread.pend). */
__attribute__((noinline)) static void flush_pending(gl_thread *t) {
  for (unsigned i = 0; i < t->npend; i++) record_op(t, &t->pend[i]);
  t->nflushed += t->npend;
  t->npend = 0;
}

/* The operations posted in the open group: those flushed and those still
 * in pend (an operation is counted where it is, with no count of its own
 * to keep at every post). */
static unsigned gl_nops(const gl_thread *t) { return t->nflushed + t->npend; }

/* An operation posted in the open group: its inputs kept for
 * record_op (flush_pending): its event's leading block, as it is - one
 * copy, whatever the kind, but for the hole (GL_PEND_HOLE: no field
 * record_op reads); `bytes` (a constant) GL_PEND_BYTES, or
 * GL_PEND_P2P_BYTES for a send or receive (what record_op reads of one).
 * known (a constant): c is not NULL, so that the device piece
 * (GL_PEND_DEV: record_op takes a known communicator's device from its
 * record) is left out too. */
__attribute__((always_inline)) static inline void defer_into(gl_thread *t, unsigned i,
                                                             const a2a_event *ev,
                                                             const a2a_comm *c, size_t bytes,
                                                             bool known) {
  t->npend = i + 1; /* (counted: gl_nops) */
  gl_pend *p = &t->pend[i];
  p->c = c;
  /* In 16-byte pieces, each a load and a store (a block move is slower). */
  _Static_assert(GL_PEND_BYTES % 16 == 0 && GL_PEND_P2P_BYTES % 16 == 0,
                 "gl_pend's blocks are whole pieces");
#pragma GCC unroll 8
  for (size_t k = 0; k < bytes; k += 16)
    if (k != GL_PEND_HOLE && !(known && k == GL_PEND_DEV))
      memcpy((char *)&p->ev + k, (const char *)ev + k, 16);
}

static inline void defer_op(gl_thread *t, const a2a_event *ev, const a2a_comm *c) {
  if (t->npend == GL_MAX_PEND) flush_pending(t);
  defer_into(t, t->npend, ev, c, GL_PEND_BYTES, false);
}

static void record_event(gl_thread *t, const a2a_event *ev) {
  uintptr_t key = gl_stream_key(ev->stream, ev->per_thread);
  if (!stream_find(t, key)) return; /* recorded before any op on that stream */
  for (unsigned i = 0; i < t->nevents; i++)
    if (t->events[i].event == ev->u.event.event) {
      t->events[i].stream = key; /* re-recorded: the latest record counts */
      return;
    }
  if (t->nevents < GL_MAX_EVENTS)
    t->events[t->nevents++] = (gl_event){ev->u.event.event, key};
}

/* ------------------------------------------------------------------ */
/* Reports. */

static void put_site(a2a_json *j, const char *key, const void *site) {
  if (site) a2a_json_ptr(j, key, site);
}

/* The thread's group depth as this analyzer counts it (group_start_all:
 * every start at its PRE, every end while positive): its record's, which
 * leaves out the thread's kept nested level (a2a_group_keep), and that
 * level. The record's alone answers every test of it against 0, and every
 * test a group call makes (at most one level is kept, which the next
 * dispatched group call folds first: gl_depth_folded): a level is kept
 * only at a start whose depth d (the shim's count, which this one never
 * falls below: gl_nested) was >= 1, so the record's was >= 1 then, and no
 * group call of the thread reached this analyzer since. Read by another
 * thread (the exit report, report_open) it is racy by one level in one
 * window: between the owner's fold (the record's depth counts the level)
 * and the shim's clearing of the bit after that PRE
 * (a2a_group_kept_folded) the level counts twice - an exit report made
 * while another thread is inside a group call, as racy as the record's
 * other fields read then. */
static int gl_depth(const gl_thread *t) {
  return atomic_load(&t->depth) + (int)a2a_group_kept(t->id);
}

/* At the PRE of a group call ev of t's thread: the thread's kept level,
 * if the call carries one (u.group.kept), becomes the record's (the shim
 * clears it after this PRE: a2a_group_kept_folded); the depth then. Once
 * per call: each handler below folds on the one path that then decides. */
static inline int gl_depth_folded(gl_thread *t, const a2a_event *ev) {
  int depth = atomic_load_explicit(&t->depth, memory_order_relaxed);
  if (__builtin_expect(ev->u.group.kept != 0, 0))
    atomic_store_explicit(&t->depth, ++depth, memory_order_relaxed);
  return depth;
}

/* A group.unbalanced finding about a group left open: at a blocking call
 * (ev != NULL), or (ev == NULL) at process exit or when the record of a
 * thread that exited is reused. */
static void report_open(gl_thread *t, const a2a_event *ev) {
  if (t->open_reported) return;
  t->open_reported = true;
  char msg[512], js[512];
  a2a_json j;
  a2a_json_init(&j, js, sizeof js);
  a2a_json_obj_begin(&j, NULL);
  a2a_json_int(&j, "thread", t->id);
  a2a_json_int(&j, "group_depth", gl_depth(t));
  a2a_json_uint(&j, "operations_in_group", gl_nops(t));
  put_site(&j, "group_start_site", t->start_site);
  a2a_json_str(&j, "event", ev ? ev->api : "process exit");
  a2a_json_obj_end(&j);
  a2a_finding f = {.check = A2A_CK_GROUP_UNBALANCED, .severity = A2A_SEV_ERROR,
                   .message = msg, .details_json = js};
  a2a_stack one;
  if (ev) {
    snprintf(msg, sizeof msg,
             "%s blocks while an NCCL group opened by ncclGroupStart is still open on this thread "
             "(depth %d, %u operation(s) not yet launched): call ncclGroupEnd before blocking.",
             ev->api ? ev->api : "a blocking CUDA call", gl_depth(t), gl_nops(t));
    f.site = ev->callsite;
    f.capture_stack = true;
  } else {
    snprintf(msg, sizeof msg,
             "An NCCL group is still open on thread %u when the thread or the process exits (depth "
             "%d, %u operation(s) never launched): every ncclGroupStart needs a matching "
             "ncclGroupEnd on the same thread.",
             t->id, gl_depth(t), gl_nops(t));
    /* The exit handler's stack says nothing; point at the ncclGroupStart. */
    gl_stack_one(&one, t->start_site);
    f.site = t->start_site;
    f.stack = t->start_site ? &one : NULL;
  }
  a2a_report(&f);
}

static void report_end_without_start(const a2a_event *ev) {
  if (a2a_report_repeat(A2A_CK_GROUP_UNBALANCED, A2A_SEV_ERROR, ev->callsite)) return;
  char msg[384], js[256];
  a2a_json j;
  a2a_json_init(&j, js, sizeof js);
  a2a_json_obj_begin(&j, NULL);
  a2a_json_int(&j, "thread", ev->thread);
  a2a_json_int(&j, "group_depth", 0);
  a2a_json_str(&j, "api", ev->api ? ev->api : "ncclGroupEnd");
  a2a_json_obj_end(&j);
  snprintf(msg, sizeof msg,
           "%s called with no open group on this thread (NCCL returns ncclInvalidUsage): pair every "
           "ncclGroupEnd with an ncclGroupStart on the same thread.",
           ev->api ? ev->api : "ncclGroupEnd");
  a2a_finding f = {.check = A2A_CK_GROUP_UNBALANCED, .severity = A2A_SEV_ERROR, .site = ev->callsite,
                   .message = msg, .details_json = js, .capture_stack = true};
  a2a_report(&f);
}

/* What a synchronizing call found in the open group. */
typedef struct sync_hit {
  const char *api;          /* the group operation it concerns */
  const void *site;
  uintptr_t stream;
  int device;
  uintptr_t lo, hi;         /* buffer range (memcpy hits) */
  bool is_recv;
} sync_hit;

static void report_sync(gl_thread *t, const a2a_event *ev, const sync_hit *h) {
  if (a2a_report_repeat(A2A_CK_GROUP_SYNC_IN_GROUP, A2A_SEV_ERROR, ev->callsite)) return;
  char msg[640], js[640];
  a2a_json j;
  a2a_json_init(&j, js, sizeof js);
  a2a_json_obj_begin(&j, NULL);
  a2a_json_str(&j, "api", ev->api);
  a2a_json_int(&j, "thread", t->id);
  a2a_json_int(&j, "group_depth", gl_depth(t));
  a2a_json_uint(&j, "operations_in_group", gl_nops(t));
  a2a_json_str(&j, "group_operation", h->api);
  put_site(&j, "group_operation_site", h->site);
  put_site(&j, "group_start_site", t->start_site);
  a2a_json_ptr(&j, "stream", (const void *)h->stream);
  a2a_json_int(&j, "device", h->device);
  if (h->hi > h->lo) {
    a2a_json_ptr(&j, "buffer_lo", (const void *)h->lo);
    a2a_json_uint(&j, "buffer_bytes", (unsigned long long)(h->hi - h->lo));
    a2a_json_bool(&j, "receive_buffer", h->is_recv);
  }
  a2a_json_obj_end(&j);
  if (h->hi > h->lo)
    snprintf(msg, sizeof msg,
             "%s touches the %s buffer [%p, +%zu) of %s posted in a still-open NCCL group: the "
             "operation is launched only at ncclGroupEnd, so the copy sees stale data; call "
             "ncclGroupEnd before the copy.",
             ev->api, h->is_recv ? "receive" : "send", (void *)h->lo, (size_t)(h->hi - h->lo),
             h->api);
  else
    snprintf(msg, sizeof msg,
             "%s inside an open NCCL group does not wait for %s (stream %p, device %d) posted in "
             "that group, which is launched only at ncclGroupEnd: data read afterwards is stale; "
             "call ncclGroupEnd before synchronizing.",
             ev->api, h->api, (void *)h->stream, h->device);
  a2a_finding f = {.check = A2A_CK_GROUP_SYNC_IN_GROUP, .severity = A2A_SEV_ERROR, .site = ev->callsite,
                   .message = msg, .details_json = js, .capture_stack = true};
  a2a_report(&f);
}

/* ------------------------------------------------------------------ */
/* Synchronizing calls. */

static bool hit_stream(const gl_stream *s, sync_hit *h) {
  *h = (sync_hit){.api = s->api, .site = s->site, .stream = s->key, .device = s->device};
  return true;
}

/* Device synchronize (and legacy-default-stream synchronize): any group
 * stream on device dev (-1: any device). */
static bool match_device(gl_thread *t, int dev, sync_hit *h) {
  for (unsigned i = 0; i < t->nstreams; i++)
    if (dev < 0 || t->streams[i].device < 0 || t->streams[i].device == dev)
      return hit_stream(&t->streams[i], h);
  return false;
}

static bool match_stream(gl_thread *t, const a2a_event *ev, sync_hit *h) {
  uintptr_t key = gl_stream_key(ev->stream, ev->per_thread);
  if (key == 1) return match_device(t, ev->device, h); /* legacy default stream */
  gl_stream *s = stream_find(t, key);
  return s && hit_stream(s, h);
}

static bool match_event(gl_thread *t, const a2a_event *ev, sync_hit *h) {
  for (unsigned i = 0; i < t->nevents; i++)
    if (t->events[i].event == ev->u.event.event) {
      gl_stream *s = stream_find(t, t->events[i].stream);
      return s && hit_stream(s, h);
    }
  return false;
}

static bool match_copy(gl_thread *t, const a2a_event *ev, sync_hit *h) {
  uintptr_t dlo = (uintptr_t)ev->u.copy.dst, dhi = dlo + ev->u.copy.bytes;
  uintptr_t slo = (uintptr_t)ev->u.copy.src, shi = ev->u.copy.src ? slo + ev->u.copy.bytes : slo;
  for (unsigned i = 0; i < t->nbufs; i++) {
    const gl_buf *b = &t->bufs[i];
    /* Writing any group buffer, or reading one the group will write. */
    if (lr_overlap(dlo, dhi, b->lo, b->hi) || (b->is_recv && lr_overlap(slo, shi, b->lo, b->hi))) {
      gl_stream *s = stream_find(t, b->stream);
      *h = (sync_hit){.api = b->api, .site = b->site, .stream = b->stream,
                      .device = s ? s->device : -1, .lo = b->lo, .hi = b->hi,
                      .is_recv = b->is_recv};
      return true;
    }
  }
  return false;
}

/* Whether a synchronous memcpy blocks the host: every kind except
 * device-to-device (cudaMemcpyDefault is resolved with the allocation
 * registry: both ends in device segments = device-to-device). */
static bool copy_blocks(const a2a_event *ev) {
  if (ev->kind != A2A_EV_MEMCPY || ev->u.copy.async) return false;
  if (ev->u.copy.cpykind == A2A_CPY_D2D) return false;
  if (ev->u.copy.cpykind == A2A_CPY_DEFAULT) {
    a2a_alloc a, b;
    if (a2a_alloc_find(ev->u.copy.dst, &a) && a2a_alloc_find(ev->u.copy.src, &b) &&
        a.mem != A2A_MEM_HOST_PINNED && b.mem != A2A_MEM_HOST_PINNED)
      return false;
  }
  return true;
}

/* One synchronizing or blocking call while t's group is open. blocking:
 * the call blocks the host (else it is a successful query or a non-blocking
 * copy, which only matters when it concerns the group). */
static void on_sync(gl_thread *t, const a2a_event *ev, bool matched, const sync_hit *h,
                    bool blocking) {
  bool sync_on = a2a_check_on(A2A_CK_GROUP_SYNC_IN_GROUP);
  if (matched && sync_on) {
    report_sync(t, ev, h);
    return;
  }
  if (matched) return; /* never report the same call under the other name */
  if (blocking && a2a_check_on(A2A_CK_GROUP_UNBALANCED)) report_open(t, ev);
}

/* ------------------------------------------------------------------ */
/* The analyzer. */

static void on_exit_event(void) {
  if (!a2a_check_on(A2A_CK_GROUP_UNBALANCED)) return;
  for (size_t i = 0; i < A2A_TSLOTS; i++) {
    gl_thread *t = atomic_load_explicit(&g_threads.slot[i].rec, memory_order_acquire);
    if (t && atomic_load(&t->depth) > 0 && !t->closing) report_open(t, NULL);
  }
}

/* Threads with an open group right now. The CUDA-call checks here matter
 * only inside a group: with none open anywhere (the common case) a CUDA
 * event costs one load. A thread that exits with a group open leaves the
 * count high: the filter then only lets more events through.
 *
 * It is also the analyzer's gate (a2a_analyzer.pre_gate / post_gate) for
 * the CUDA kinds (GL_GATED_PRE / GL_GATED_POST): gl_on_event returns for
 * them, before anything else, while this reads 0, so the hot dispatch may
 * skip the call on the same test. Why a 0 read is right: the CUDA checks
 * act only on the calling thread's own open group (gl_body: depth > 0 of
 * ev->thread's record; gm_on_event does nothing for a CUDA kind), and that
 * thread's group open (gl_on_group_start: the +1, at its ncclGroupStart PRE) is
 * sequenced before its later calls, so by read-after-write coherence their
 * relaxed loads see the +1 or a later value in the count's modification
 * order; every later value still holds it (each -1 is the same thread's,
 * after its own +1, and ours is at the group's end), so it reads >= 1
 * while the group is open. Another thread's open group may or may not be
 * seen, and does not matter: with the caller's own depth 0 the body does
 * nothing observable either way. */
static _Atomic unsigned g_groups_open;

static void on_fork_child(uint32_t self) {
  /* Only the forking thread exists in the child: its NCCL group depth was
   * inherited (thread_local), its kept nested level included (gl_depth:
   * folded now, the shim forgets it after the fork's handling,
   * a2a_group_keep_after_fork); the other threads' groups are gone. */
  gl_thread *self_t = a2a_tslots_get(&g_threads, self);
  if (self_t && a2a_group_kept(self))
    atomic_store(&self_t->depth, atomic_load(&self_t->depth) + 1);
  for (size_t i = 0; i < A2A_TSLOTS; i++) {
    gl_thread *t = atomic_load_explicit(&g_threads.slot[i].rec, memory_order_relaxed);
    if (t && t->id != self) {
      atomic_store(&t->depth, 0);
      group_clear(t);
      gl_held_clear(t);
    }
  }
  a2a_tslots_fork_child(&g_threads, self);
  atomic_fetch_add_explicit(&g_gl_gen, 1, memory_order_relaxed);
  gm_after_fork_child(self);
  gl_thread *me = a2a_tslots_get(&g_threads, self);
  atomic_store(&g_groups_open, me && atomic_load(&me->depth) > 0 ? 1 : 0);
}

static bool needs_thread(a2a_kind k) {
  switch (k) {
    case A2A_EV_STREAM_SYNC: case A2A_EV_STREAM_QUERY:
    case A2A_EV_EVENT_RECORD: case A2A_EV_EVENT_SYNC: case A2A_EV_EVENT_QUERY:
    case A2A_EV_DEVICE_SYNC: case A2A_EV_MEMCPY:
    case A2A_EV_COMM_INIT:
      return true;
    default:
      return false;
  }
}

/* Kinds this analyzer looks at; everything else (launches above all)
 * returns at the first test. */
static const bool g_relevant[A2A_EV__COUNT] = {
    [A2A_EV_COMM_INIT] = true,   [A2A_EV_COMM_END] = true,    [A2A_EV_COMM_ASYNC_ERROR] = true,
    [A2A_EV_COMM_QUERY] = true,  [A2A_EV_COLL] = true,        [A2A_EV_P2P] = true,
    [A2A_EV_GROUP_START] = true, [A2A_EV_GROUP_END] = true,   [A2A_EV_NCCL_REGISTER] = true,
    [A2A_EV_REDOP] = true,       [A2A_EV_STREAM_SYNC] = true, [A2A_EV_STREAM_QUERY] = true,
    [A2A_EV_EVENT_RECORD] = true, [A2A_EV_EVENT_SYNC] = true, [A2A_EV_EVENT_QUERY] = true,
    [A2A_EV_DEVICE_SYNC] = true, [A2A_EV_MEMCPY] = true,      [A2A_EV_PROCESS_EXIT] = true,
    [A2A_EV_FORK_CHILD] = true,
};

static bool is_nccl_kind(a2a_kind k) { return a2a_kind_is_nccl(k); }

/* A collective or p2p call: the hot path of gl_on_event, one function per
 * phase (the dispatch table calls each for its phase: gl_by_kind,
 * gl_by_kind_post), out of line so that gl_on_event needs no frame of its
 * own. The operation's communicator is looked up at the PRE, reused at the
 * POST (the same call; a handle reused meanwhile by another thread would
 * only make the POST release what the PRE acquired, which is right). */
/* An operation NCCL failed: why, when its stream is another device's
 * (gm_stream_device_failed). Then the POST's usual work. */
__attribute__((noinline, cold)) static void op_failed(const a2a_event *ev) {
  gm_stream_device_failed(ev, ev->callsite, ev->api, a2a_comm_lookup(ev->comm),
                          gl_stream_key(ev->stream, ev->per_thread));
}

__attribute__((noinline)) static void gl_op_post_all(const a2a_event *ev) {
  gl_thread *t = thread_of(ev->thread);
  /* Held: gm_op_post would find the PRE's record held (depth > 0, its
   * serial in hot, so in held) and return; op_handle and op_comm may be
   * an earlier operation's then (gl_thread). A NULL handle has no record:
   * nothing to release either. */
  if (t && t->held_handle == ev->comm) return;
  gm_op_post(ev, t, t && t->op_handle == ev->comm ? t->op_comm : a2a_comm_lookup(ev->comm));
}

/* gm_op_post releases the communicator unless the open group holds it: a
 * serial in the memo of held (gl_thread.hot) is held. Tested first with
 * the thread's cached record (thread_of's hit) and the record its PRE
 * looked up, so that this path needs no frame: what its PRE found
 * (held_handle, which implies the rest of the test) or, else, the test
 * itself; anything else: gl_op_post_all. */
__attribute__((noinline)) static void gl_op_post(const a2a_event *ev) {
  if (__builtin_expect(!ev->ok, 0)) op_failed(ev);
  unsigned gen = atomic_load_explicit(&g_gl_gen, memory_order_relaxed);
  if (t_gl.gen == gen && t_gl.id == ev->thread) {
    const gl_thread *t = t_gl.t;
    if (t->held_handle == ev->comm) return;
    if (t->op_handle != ev->comm) goto all;
    const a2a_comm *c = t->op_comm;
    if (c && atomic_load_explicit(&t->depth, memory_order_relaxed) > 0 && gl_hot(t, c->serial))
      return;
  }
all:
  gl_op_post_all(ev);
}

/* An operation's PRE, the reference. */
__attribute__((noinline)) static void gl_op_pre_all(const a2a_event *ev) {
  gl_thread *t = thread_of(ev->thread);
  a2a_comm *c = a2a_comm_lookup(ev->comm);
  if (t) {
    t->op_handle = ev->comm;
    t->op_comm = c;
    t->held_handle = NULL; /* (gl_op_post's memo: gm_op_pre_known's, or gm_op_pre's hold) */
    if (atomic_load_explicit(&t->depth, memory_order_relaxed) > 0) {
      defer_op(t, ev, c);
      if (c && gm_op_pre_known(ev, t, c)) return;
    }
  }
  gm_op_pre(ev, t, c);
}

/* gl_op_pre_all without a frame in its common cases: the thread's cached
 * record and the registry memo's answer (thread_of's fast path, without a
 * side effect, and a2a_comm_lookup_memo, which leaves the memo as
 * gl_op_pre_all's a2a_comm_lookup would: the last answer, or a way's - a
 * thread posting one operation per communicator in turn, nccl-tests -g N)
 * for a known communicator, and, inside a group, room in pend. Then exactly what
 * gl_op_pre_all does, in its order: the operation in progress; inside a
 * group the deferred operation, and gm_op_pre unless gm_op_pre_known (the
 * group's first operation on a communicator: gm_op_pre_grouped, which
 * does not test again what was read here); outside one gm_op_pre (a
 * tail call). Anything else: gl_op_pre_all, before anything was written.
 * bytes: defer_into's (a constant: the kind's handler below). */
__attribute__((always_inline)) static inline void gl_op_pre_body(const a2a_event *ev, size_t bytes) {
  if (!thread_hit(ev->thread)) {
    gl_op_pre_all(ev);
    return;
  }
  gl_thread *t = t_gl.t; /* (thread_cached's answer, without its NULL to test) */
  const void *h = ev->comm;
  a2a_comm *c;
  int depth;
  unsigned n;
  if ((c = a2a_comm_lookup_memo(h)) &&
      ((depth = atomic_load_explicit(&t->depth, memory_order_relaxed)) <= 0 ||
       (n = t->npend) < GL_MAX_PEND)) {
    if (depth > 0) {
      defer_into(t, n, ev, c, bytes, true); /* (c: the memo's answer) */
      if (gm_op_pre_known(ev, t, c)) {
        /* depth > 0, c in hot: gl_op_post has nothing to release. Nothing
         * reads op_handle and op_comm for this operation (gl_thread),
         * so they are left as they are. */
        t->held_handle = h;
        return;
      }
      t->op_handle = h;
      t->op_comm = c;
      t->held_handle = NULL;
      gm_op_pre_grouped(ev, t, c); /* (t, c known; depth > 0 read above) */
      return;
    }
    t->op_handle = h;
    t->op_comm = c;
    t->held_handle = NULL;
    gm_op_pre(ev, t, c);
    return;
  }
  gl_op_pre_all(ev);
}
/* A collective's PRE (and the reference's, any kind). */
__attribute__((noinline)) static void gl_op_pre(const a2a_event *ev) {
  gl_op_pre_body(ev, GL_PEND_BYTES);
}
/* A send's or receive's PRE (gl_by_kind's handler for P2P only): its
 * smaller block. */
__attribute__((noinline)) static void gl_op_pre_p2p(const a2a_event *ev) {
  gl_op_pre_body(ev, GL_PEND_P2P_BYTES);
}

static void gl_on_op(const a2a_event *ev) {
  if (ev->phase == A2A_POST) gl_op_post(ev);
  else gl_op_pre(ev);
}

/* ncclGroupStart / ncclGroupEnd (ncclGroupSimulateEnd too): the group
 * tracking. (group_misuse's checks judge neither call.) One function per
 * kind (gl_by_kind), each on the phases it acts in.
 *
 * A nested start or end (the thread's group stays open: NCCL only counts
 * its depth) is a depth counter here too: each handler below takes the
 * thread's cached record (thread_of's hit, which has no side effect) and
 * its depth, and counts, without a frame; the outermost start or end goes
 * to the same function (group_open, group_closing, group_closed) as the
 * reference (the *_all function) would, with the record; without a cached
 * record the reference decides, from thread_of - nothing was written yet. */

/* The outermost ncclGroupStart's PRE on t (depth 0): the group opens. */
__attribute__((noinline)) static void group_open(gl_thread *t, const a2a_event *ev) {
  group_clear(t);
  t->start_site = ev->callsite;
  gm_group_begin(t);
  atomic_fetch_add_explicit(&g_groups_open, 1, memory_order_relaxed);
  atomic_store_explicit(&t->depth, 1, memory_order_relaxed);
}

__attribute__((noinline)) static void group_start_all(const a2a_event *ev) {
  gl_thread *t = thread_of(ev->thread);
  if (ev->phase != A2A_PRE) return;
  if (!t) { /* no record to count in: every later group call to the kind's rows (gl_nested) */
    a2a_group_nested_full(ev->thread);
    return;
  }
  int depth = gl_depth_folded(t, ev);
  if (depth == 0) {
    group_open(t, ev);
    return;
  }
  atomic_store_explicit(&t->depth, depth + 1, memory_order_relaxed);
}

/* group_start_all with the thread's cached record: a nested start counts
 * (depth > 0), the outermost opens the group (depth 0: never negative). */
__attribute__((noinline)) static void gl_on_group_start(const a2a_event *ev) {
  gl_thread *t = thread_cached(ev->thread);
  if (t && ev->phase == A2A_PRE) {
    int depth = gl_depth_folded(t, ev);
    if (depth > 0) {
      atomic_store_explicit(&t->depth, depth + 1, memory_order_relaxed);
      return;
    }
    group_open(t, ev);
    return;
  }
  group_start_all(ev);
}

/* The outermost ncclGroupEnd's PRE on t (depth 1): the group closes. NCCL
 * decrements the depth whatever the outcome. */
__attribute__((noinline)) static void group_closing(gl_thread *t, const a2a_event *ev) {
  atomic_store_explicit(&t->depth, 0, memory_order_relaxed);
  t->held_handle = NULL; /* (depth 0: a POST now may release) */
  t->closing = true;
  gm_group_end_pre(ev, t);
  atomic_fetch_sub_explicit(&g_groups_open, 1, memory_order_relaxed);
}

/* An end's PRE on t at depth (folded: gl_depth_folded): the outermost
 * (1) closes the group, a nested one counts down, one without a start (0)
 * is reported. */
static void group_end_at(gl_thread *t, const a2a_event *ev, int depth) {
  if (depth == 0) {
    if (a2a_check_on(A2A_CK_GROUP_UNBALANCED)) report_end_without_start(ev);
    return;
  }
  if (depth == 1) {
    group_closing(t, ev);
    return;
  }
  atomic_store_explicit(&t->depth, depth - 1, memory_order_relaxed);
}

__attribute__((noinline)) static void group_end_pre_all(const a2a_event *ev) {
  gl_thread *t = thread_of(ev->thread);
  if (!t) return;
  group_end_at(t, ev, gl_depth_folded(t, ev));
}

/* group_end_pre_all with the thread's cached record: a nested end counts
 * down (depth > 1), the outermost closes the group. */
__attribute__((noinline)) static void gl_group_end_pre(const a2a_event *ev) {
  gl_thread *t = thread_cached(ev->thread);
  if (t) {
    int depth = gl_depth_folded(t, ev);
    if (depth > 1) {
      atomic_store_explicit(&t->depth, depth - 1, memory_order_relaxed);
      return;
    }
    group_end_at(t, ev, depth);
    return;
  }
  group_end_pre_all(ev);
}

/* The outermost ncclGroupEnd's POST on t: the group's end. */
/* The outermost ncclGroupEnd failed: for each stream of the group, with
 * its first operation's communicator, site and api, whether the stream is
 * another device's (gm_stream_device_failed). */
__attribute__((noinline, cold)) static void group_failed(gl_thread *t, const a2a_event *ev) {
  if (t->npend) flush_pending(t);
  for (unsigned i = 0; i < t->nstreams; i++) {
    const gl_stream *s = &t->streams[i];
    gm_stream_device_failed(ev, s->site, s->api, s->comm, s->key);
  }
}

__attribute__((noinline)) static void group_closed(gl_thread *t, const a2a_event *ev) {
  if (__builtin_expect(!ev->ok, 0)) group_failed(t, ev);
  gm_group_end_post(ev, t);
  group_clear(t);
}

__attribute__((noinline)) static void group_end_post_all(const a2a_event *ev) {
  gl_thread *t = thread_of(ev->thread);
  if (t && t->closing && atomic_load_explicit(&t->depth, memory_order_relaxed) == 0)
    group_closed(t, ev);
}

/* group_end_post_all with the thread's cached record: only the outermost
 * end's PRE sets closing (the group's end clears it), so a nested end's
 * POST has nothing to do. */
__attribute__((noinline)) static void gl_group_end_post(const a2a_event *ev) {
  gl_thread *t = thread_cached(ev->thread);
  if (!t) {
    group_end_post_all(ev);
    return;
  }
  if (t->closing && atomic_load_explicit(&t->depth, memory_order_relaxed) == 0)
    group_closed(t, ev);
}

/* Nested group calls (a2a_analyzer.nested; a2a_group_nested): the
 * table's PRE handlers, which count every start and end, but not a nested
 * end's POST, a no-op there. This analyzer's depth D counts at PRE - +1
 * per start whatever its result, -1 per end while positive - in the
 * thread's record, kept from its claim while the thread lives (zeroed when
 * claimed; the forking thread's kept in a child, where the shim's depth d
 * starts again from zero), and it gets every group call at PRE; a start
 * without a record vetoes the nested rows (group_start_all) before any
 * nested call. So D >= d at every call: a start adds 1 to D whenever it
 * adds 1 to d, an end takes 1 from both while d > 0 (then D > 0 too), and
 * at d = 0 D stays >= 0. A nested end's POST (d >= 2 before it, so D >= 2
 * before its PRE and >= 1 after) then finds its cached record (its PRE
 * took it; a record that exists is found, never claimed) with depth > 0:
 * the POST acts only at depth 0 after the outermost end's PRE set closing
 * (gl_group_end_post), so it does nothing. */
static const a2a_nested gl_nested = {.start = {[A2A_PRE] = gl_on_group_start},
                                     .end = {[A2A_PRE] = gl_group_end_pre}};

static void gl_on_group_end(const a2a_event *ev) {
  if (ev->phase == A2A_PRE) gl_group_end_pre(ev);
  else gl_group_end_post(ev);
}

static void gl_on_group(const a2a_event *ev) {
  if (ev->kind == A2A_EV_GROUP_START) gl_on_group_start(ev);
  else gl_on_group_end(ev);
}

__attribute__((noinline)) static void gl_body(const a2a_event *ev);

/* The front: CUDA calls (event records, copies: hot calls) matter only
 * while some thread has a group open, so they return here, before the
 * body's prologue. */
static void gl_on_event(const a2a_event *ev) {
  if (ev->kind == A2A_EV_COLL || ev->kind == A2A_EV_P2P) {
    gl_on_op(ev);
    return;
  }
  if (ev->kind == A2A_EV_GROUP_START || ev->kind == A2A_EV_GROUP_END) {
    gl_on_group(ev);
    return;
  }
  if ((unsigned)ev->kind >= A2A_EV__COUNT || !g_relevant[ev->kind]) return;
  if (!is_nccl_kind(ev->kind) && ev->kind != A2A_EV_PROCESS_EXIT && ev->kind != A2A_EV_FORK_CHILD &&
      atomic_load_explicit(&g_groups_open, memory_order_relaxed) == 0)
    return;
  gl_body(ev);
}

static void gl_body(const a2a_event *ev) {
  if (ev->kind == A2A_EV_PROCESS_EXIT) {
    on_exit_event();
    return;
  }
  if (ev->kind == A2A_EV_FORK_CHILD) {
    on_fork_child(ev->thread);
    return;
  }
  gl_thread *t = NULL;
  if (needs_thread(ev->kind)) {
    /* Non-NCCL events need a record only while a group is open; avoid
     * allocating one for threads that never touch NCCL. */
    t = ev->kind == A2A_EV_COMM_INIT ? thread_of(ev->thread)
                                     : a2a_tslots_get(&g_threads, ev->thread);
  }
  int depth = t ? atomic_load_explicit(&t->depth, memory_order_relaxed) : 0;
  /* Every case below that reads bufs or streams needs depth > 0. */
  if (depth > 0 && t->npend) flush_pending(t);
  sync_hit h;
  switch (ev->kind) {
    case A2A_EV_EVENT_RECORD:
      if (ev->phase == A2A_PRE && t && depth > 0) record_event(t, ev);
      break;

    case A2A_EV_STREAM_SYNC:
      if (ev->phase == A2A_PRE && t && depth > 0) on_sync(t, ev, match_stream(t, ev, &h), &h, true);
      break;
    case A2A_EV_DEVICE_SYNC:
      if (ev->phase == A2A_PRE && t && depth > 0)
        on_sync(t, ev, match_device(t, ev->device, &h), &h, true);
      break;
    case A2A_EV_EVENT_SYNC:
      if (ev->phase == A2A_PRE && t && depth > 0) on_sync(t, ev, match_event(t, ev, &h), &h, true);
      break;
    case A2A_EV_STREAM_QUERY:
      /* A successful query is how polling code decides work is done. */
      if (ev->phase == A2A_POST && ev->result == 0 && t && depth > 0)
        on_sync(t, ev, match_stream(t, ev, &h), &h, false);
      break;
    case A2A_EV_EVENT_QUERY:
      if (ev->phase == A2A_POST && ev->result == 0 && t && depth > 0)
        on_sync(t, ev, match_event(t, ev, &h), &h, false);
      break;
    case A2A_EV_MEMCPY:
      if (ev->phase == A2A_PRE && t && depth > 0 && !ev->u.copy.async)
        on_sync(t, ev, match_copy(t, ev, &h), &h, copy_blocks(ev));
      break;
    default:
      break;
  }
  gm_on_event(ev, t, NULL);
}

static int gl_init(void) {
  /* Re-initialization (unit tests) starts from a clean slate. */
  atomic_store(&g_groups_open, 0);
  atomic_fetch_add(&g_gl_gen, 1);
  if (a2a_tslots_init(&g_threads, NULL) != 0) return -1;
  return gm_init();
}

/* CUDA calls matter in the phase that judges them only: the blocking
 * calls and event records before the call, the queries after it (their
 * answer). */
#define GL_NCCL_KINDS                                                                         \
  (A2A_KIND_BIT(A2A_EV_COMM_INIT) | A2A_KIND_BIT(A2A_EV_COMM_END) |                           \
   A2A_KIND_BIT(A2A_EV_COMM_ASYNC_ERROR) | A2A_KIND_BIT(A2A_EV_COMM_QUERY) |                  \
   A2A_KIND_BIT(A2A_EV_COLL) | A2A_KIND_BIT(A2A_EV_P2P) | A2A_KIND_BIT(A2A_EV_GROUP_START) |  \
   A2A_KIND_BIT(A2A_EV_GROUP_END) | A2A_KIND_BIT(A2A_EV_NCCL_REGISTER) |                      \
   A2A_KIND_BIT(A2A_EV_REDOP) | A2A_KIND_BIT(A2A_EV_PROCESS_EXIT) |                           \
   A2A_KIND_BIT(A2A_EV_FORK_CHILD))

/* The CUDA kinds gl_on_event passes only while g_groups_open is nonzero,
 * per phase (the CUDA kinds of .pre and .post below). */
#define GL_GATED_PRE                                                                          \
  (A2A_KIND_BIT(A2A_EV_EVENT_RECORD) | A2A_KIND_BIT(A2A_EV_STREAM_SYNC) |                     \
   A2A_KIND_BIT(A2A_EV_DEVICE_SYNC) | A2A_KIND_BIT(A2A_EV_EVENT_SYNC) |                       \
   A2A_KIND_BIT(A2A_EV_MEMCPY))
#define GL_GATED_POST (A2A_KIND_BIT(A2A_EV_STREAM_QUERY) | A2A_KIND_BIT(A2A_EV_EVENT_QUERY))

/* The NCCL hot kinds straight to gl_on_event's own targets for them: the
 * operations' and ncclGroupEnd's PREs here, their POSTs in
 * gl_by_kind_post. And the calls a polling loop repeats (nccl-tests asks
 * every communicator's size and rank per iteration and its async error per
 * poll): for a communicator query or ncclCommGetAsyncError, gl_body takes
 * no thread record (needs_thread), has no group state to act on (its
 * switch ignores them) and ends in gm_on_event(ev, NULL, NULL), whose two
 * branches for these kinds are gm_query_pre and gm_async_error_post. */
static const a2a_by_kind gl_by_kind = {
    .fn = {[A2A_EV_COLL] = gl_op_pre, [A2A_EV_P2P] = gl_op_pre_p2p,
           [A2A_EV_GROUP_START] = gl_on_group_start,
           [A2A_EV_GROUP_END] = gl_group_end_pre,
           [A2A_EV_COMM_QUERY] = gm_query_pre,
           [A2A_EV_COMM_ASYNC_ERROR] = gm_query_pre}};
static const a2a_by_kind gl_by_kind_post = {
    .fn = {[A2A_EV_COLL] = gl_op_post, [A2A_EV_P2P] = gl_op_post,
           [A2A_EV_GROUP_END] = gl_group_end_post,
           [A2A_EV_COMM_ASYNC_ERROR] = gm_async_error_post}};

const a2a_analyzer a2a_analyzer_group_local = {
    .name = "group_local",
    .owner = A2A_OWN_GROUP_LOCAL,
    .pre = GL_NCCL_KINDS | GL_GATED_PRE,
    /* After the call, of the NCCL kinds only these do anything: the
     * communicator's creation (ncclCommInitAll's devices), the async error
     * it returned, an operation's end (concurrent-use) and the group's end
     * (ncclGroupStart, queries, registrations and ncclCommDestroy are
     * judged before the call only). */
    .post = A2A_KIND_BIT(A2A_EV_COMM_INIT) | A2A_KIND_BIT(A2A_EV_COMM_ASYNC_ERROR) |
            A2A_KIND_BIT(A2A_EV_COLL) | A2A_KIND_BIT(A2A_EV_P2P) |
            A2A_KIND_BIT(A2A_EV_GROUP_END) | A2A_KIND_BIT(A2A_EV_PROCESS_EXIT) |
            A2A_KIND_BIT(A2A_EV_FORK_CHILD) | A2A_KIND_BIT(A2A_EV_STREAM_QUERY) |
            A2A_KIND_BIT(A2A_EV_EVENT_QUERY),
    /* Inside a group only (g_groups_open). */
    .pre_gated = GL_GATED_PRE,
    .pre_gate = &g_groups_open,
    .post_gated = GL_GATED_POST,
    .post_gate = &g_groups_open,
    .init = gl_init,
    .on_event = gl_on_event,
    .by_kind = &gl_by_kind,
    .by_kind_post = &gl_by_kind_post,
    /* A communicator query: gm_query_pre at PRE only, which returns
     * without a write for an active communicator (at its check's test, or
     * at the state's after a2a_comm_lookup). Not ncclCommGetAsyncError:
     * its POST records the async error it returned (gm_async_error_post). */
    .comm_quiet = A2A_KIND_BIT(A2A_EV_COMM_QUERY),
    .nested = &gl_nested,
    /* gl_nested's depth reads the kept bit and folds it (gl_depth). */
    .nested_keep_ok = true,
};
