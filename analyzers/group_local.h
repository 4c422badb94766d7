/* group_local.h - state shared by the two files of the `group_local`
 * analyzer: group_local.c (the per-thread NCCL group tracker, with the
 * checks group.unbalanced and group.sync-in-group) and group_misuse.c (the
 * per-communicator checks group.device-mismatch, group.duplicate-device,
 * group.use-after-destroy, group.concurrent-use and group.async-error).
 *
 * NCCL groups are per thread (NCCL keeps `thread_local int ncclGroupDepth`)
 * and nest: only the outermost ncclGroupEnd launches the operations posted
 * since the outermost ncclGroupStart. The tracker therefore keeps one record
 * per live application thread (ev->thread; a2a_tslots, a2a_core.h), written
 * only by that thread, so the hot path takes no lock. A record is claimed at
 * the thread's first NCCL event (a thread that never calls NCCL never gets
 * one: its synchronizing calls cannot concern a group), never on later
 * events, and passed on to a later thread once its thread has exited.
 *
 * Capacities are fixed; what does not fit is not tracked (never a wrong
 * finding: a check that needs an untracked item stays silent):
 *  - threads beyond A2A_TSLOTS alive at once with a record,
 *  - more than GL_MAX_BUFS buffer ranges, GL_MAX_STREAMS streams,
 *    GL_MAX_EVENTS events recorded or GL_MAX_HELD communicators in one
 *    open group.
 */
#ifndef A2A_GROUP_LOCAL_H
#define A2A_GROUP_LOCAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "a2a_core.h"

#define GL_MAX_BUFS 512
#define GL_MAX_STREAMS 32
#define GL_MAX_EVENTS 32
#define GL_MAX_HELD 64
#define GL_MAX_DEVS 16
#define GL_HOT 8 /* a power of two */

/* One buffer range [lo, hi) of an operation posted in the open group. */
typedef struct gl_buf {
  uintptr_t lo, hi;
  uintptr_t stream;         /* gl_stream_key() of the operation's stream */
  const char *api;          /* "ncclRecv", ... (static strings) */
  const void *site;
  bool is_recv;             /* written by the operation */
} gl_buf;

/* A stream on which the open group holds operations. */
typedef struct gl_stream {
  uintptr_t key;
  int device;               /* the communicator's device, -1 unknown */
  const void *site;         /* first operation on it */
  const char *api;
  const a2a_comm *comm;
} gl_stream;

/* An event recorded during the open group on a stream that already held
 * operations of the group: synchronizing on it does not cover them. */
typedef struct gl_event {
  void *event;
  uintptr_t stream;
} gl_event;

/* An operation posted in the open group whose buffers and stream are not
 * yet in bufs/streams (gl_thread.pend): its communicator's record (which
 * is immutable once published) and the first GL_PEND_BYTES bytes of its
 * event, copied verbatim in 16-byte pieces - kind, api, device, callsite,
 * stream, per_thread and the operation's arguments (u.p2p or u.coll, as
 * kind says), which are every field record_op reads, directly or through
 * lr_op_ranges (kind and u only) - but for the piece at GL_PEND_HOLE,
 * which holds none of them (seq and t_ns), and, when c is not NULL, the
 * piece at GL_PEND_DEV (device, read only when c is NULL). Those pieces
 * and the event's later bytes are not written (they hold an older
 * operation's, or zeros) and nothing reads them. */
#define GL_MAX_PEND 64
#define GL_PEND_BYTES (offsetof(a2a_event, u) + sizeof(((a2a_event *)0)->u.coll))
/* A send's or receive's block: record_op reads only u.p2p of its
 * arguments (lr_op_ranges, kind P2P), which ends before u.coll does. */
#define GL_PEND_P2P_BYTES (offsetof(a2a_event, u) + sizeof(((a2a_event *)0)->u.p2p))
/* The piece of the block that holds t_ns: not copied. */
#define GL_PEND_HOLE (offsetof(a2a_event, t_ns) & ~(size_t)15)
/* Whether field f of a2a_event lies wholly outside the hole. */
#define GL_PEND_OUTSIDE_HOLE(f)                                                   \
  (offsetof(a2a_event, f) + sizeof(((a2a_event *)0)->f) <= GL_PEND_HOLE ||        \
   offsetof(a2a_event, f) >= GL_PEND_HOLE + 16)
typedef struct gl_pend {
  const a2a_comm *c;
  a2a_event ev;             /* its first GL_PEND_BYTES bytes only, less the hole */
} gl_pend;
_Static_assert(sizeof(((a2a_event *)0)->u.p2p) <= sizeof(((a2a_event *)0)->u.coll) &&
                   offsetof(a2a_event, kind) < offsetof(a2a_event, u) &&
                   offsetof(a2a_event, api) < offsetof(a2a_event, u) &&
                   offsetof(a2a_event, device) < offsetof(a2a_event, u) &&
                   offsetof(a2a_event, callsite) < offsetof(a2a_event, u) &&
                   offsetof(a2a_event, stream) < offsetof(a2a_event, u) &&
                   offsetof(a2a_event, per_thread) < offsetof(a2a_event, u),
               "gl_pend's block holds every field record_op reads");
_Static_assert(GL_PEND_OUTSIDE_HOLE(kind) && GL_PEND_OUTSIDE_HOLE(api) &&
                   GL_PEND_OUTSIDE_HOLE(device) && GL_PEND_OUTSIDE_HOLE(callsite) &&
                   GL_PEND_OUTSIDE_HOLE(stream) && GL_PEND_OUTSIDE_HOLE(per_thread) &&
                   GL_PEND_HOLE + 16 <= offsetof(a2a_event, u),
               "gl_pend's hole holds no field record_op reads");
/* The piece that holds device, which record_op reads only for an
 * operation on no known communicator (gl_pend.c NULL: a known one's device
 * is its record's): not copied for an operation on a known communicator
 * (defer_into's `known`), whose piece there is then an older operation's. */
#define GL_PEND_DEV (offsetof(a2a_event, device) & ~(size_t)15)
#define GL_PEND_OUTSIDE_DEV(f)                                                    \
  (offsetof(a2a_event, f) + sizeof(((a2a_event *)0)->f) <= GL_PEND_DEV ||         \
   offsetof(a2a_event, f) >= GL_PEND_DEV + 16)
_Static_assert(GL_PEND_OUTSIDE_DEV(kind) && GL_PEND_OUTSIDE_DEV(api) &&
                   GL_PEND_OUTSIDE_DEV(callsite) && GL_PEND_OUTSIDE_DEV(stream) &&
                   GL_PEND_OUTSIDE_DEV(per_thread) && GL_PEND_DEV != GL_PEND_HOLE &&
                   GL_PEND_DEV + 16 <= offsetof(a2a_event, u),
               "gl_pend's device piece holds no other field record_op reads");

typedef struct gl_thread {
  uint32_t id;              /* ev->thread */
  _Atomic int depth;        /* ncclGroupStart nesting; read at exit by
                               another thread, hence atomic */
  const void *start_site;   /* call site of the outermost ncclGroupStart */
  bool closing;             /* outermost ncclGroupEnd PRE seen, POST pending */
  bool open_reported;       /* group.unbalanced already said for this group */
  unsigned nflushed;        /* operations posted in the open group that
                               left pend (flush_pending): the group holds
                               nflushed + npend (gl_nops) */

  gl_buf bufs[GL_MAX_BUFS];
  unsigned nbufs;
  gl_stream streams[GL_MAX_STREAMS];
  unsigned nstreams;
  gl_event events[GL_MAX_EVENTS];
  unsigned nevents;
  /* The open group's last operations, recorded as their inputs only: an
   * operation costs a copy of its arguments, and bufs/streams are filled
   * from them (in posting order, by the same code as before, so with the
   * same contents) only when something reads them - a synchronizing call
   * or an event record inside the group (gl_body), or a full list. A group
   * without such calls never computes its ranges. */
  gl_pend pend[GL_MAX_PEND];
  unsigned npend;

  /* group_misuse.c: communicators this thread holds for group.concurrent-use
   * until the group's end, and the deferred group.device-mismatch decision
   * (a group driving several devices from one thread is NCCL's documented
   * single-thread multi-GPU pattern and is not a mismatch). */
  uint32_t held[GL_MAX_HELD]; /* a2a_comm serials */
  unsigned nheld;
  /* A memo of held, direct-mapped by serial (hot[serial % GL_HOT]; 0:
   * empty): a serial here is in held, and its communicator's device is
   * recorded in the group's devices (below; or the communicator has no
   * device). Both stay true until the group's end: neither held nor the
   * devices forget anything while the group is open, gl_held_clear
   * empties held and hot together, and the devices are emptied only at a
   * new group's start, which empties them too. An operation of the open
   * group on such a communicator has nothing left to record at its PRE
   * (gm_op_pre) nor to release at its POST. */
  uint32_t hot[GL_HOT];
  /* The devices of the group's communicators, as much of the set as the
   * group's end asks (whether it holds exactly one device): the first
   * device recorded, and how many distinct devices were, counted up to 2
   * (0 none, 1 only comm_dev0, 2 several). Recording a device that is
   * already counted changes nothing. */
  int comm_dev0;
  unsigned ncomm_devs;
  /* The first mismatching operation, recorded below. Read only while the
   * group is open (depth > 0: gm_op_pre_known, record_device) and at its
   * outermost end's PRE; gm_group_begin clears it at the next group's
   * start, which is the only way from depth 0 to 1 (a reused record is
   * zeroed), so the group's end leaves it as it is. */
  bool mismatch;
  const void *mismatch_site;
  const char *mismatch_api;
  const a2a_comm *mismatch_comm;
  int mismatch_cur_dev;

  /* ncclCommInitAll: devices of the comms of the call in progress, and
   * whether its PRE already judged the device list. */
  int initall_devs[GL_MAX_DEVS];
  unsigned ninitall;
  bool initall_pre_judged;

  /* The communicator of the operation in progress (between the PRE and
   * the POST of a collective or p2p call): its handle and registry record,
   * looked up once at the PRE for both phases and both files - unless the
   * operation is held (held_handle, below, is its handle): then its POST
   * reads neither (gl_op_post, gl_op_post_all: it has nothing to release),
   * nor does anything else, and the PRE's fast path leaves them as an
   * earlier operation wrote them. */
  const void *op_handle;
  /* (held_handle between the two: the PRE stores the two pointers apart,
   * with no vector to build for one 16-byte store - GCC's choice when they
   * are adjacent: four instructions instead of two.) */
  /* op_handle when the operation in progress is held, else NULL. Held:
   * it is one of the open group's on a communicator the group holds - its
   * PRE found depth > 0 and op_comm in hot (gm_op_pre_known), or put
   * op_comm there at depth > 0 (gm_op_pre's hold) - so that its POST
   * releases nothing (gl_op_post's one test, held_handle == ev->comm,
   * which a NULL handle passes too: its POST has nothing to release, no
   * record). Held implies that the PRE's record is not NULL, depth > 0 and
   * gl_hot(its serial) until the next PRE of an operation, which sets held_handle
   * again: nothing else adds to or overwrites hot (gm_op_pre runs in a
   * PRE), and what lowers depth to 0 (group_closing; a fork's and a reused
   * record's reset) or clears hot (gl_held_clear) clears it. */
  const void *held_handle;
  a2a_comm *op_comm;
} gl_thread;

/* Normalized stream identity: NULL means the legacy default stream
 * (cudaStreamLegacy = 0x1) or, for _ptsz/_ptds entry points, the per-thread
 * default stream (cudaStreamPerThread = 0x2), as in CUDA's headers. */
static inline uintptr_t gl_stream_key(const void *s, int per_thread) {
  return s ? (uintptr_t)s : (per_thread ? 2u : 1u);
}

/* Empty held (and its memo, hot): the group's end, a new group, a thread
 * gone. */
static inline void gl_held_clear(gl_thread *t) {
  t->held_handle = NULL; /* (its hot entry goes) */
  t->nheld = 0;
  for (unsigned i = 0; i < GL_HOT; i++) t->hot[i] = 0;
}

/* Whether serial (nonzero) is in t's memo of held (gl_thread.hot). */
static inline bool gl_hot(const gl_thread *t, uint32_t serial) {
  return t->hot[serial & (GL_HOT - 1)] == serial;
}

/* group_misuse.c's per-communicator state that the tracker's fast path
 * (gm_op_pre_known) reads: the last asynchronous error reported per
 * communicator serial (0: none). Communicators beyond GM_MAX_COMMS are not
 * checked by concurrent-use and async-error. */
#define GM_MAX_COMMS 8192
extern A2A_HIDDEN _Atomic int gm_async[GM_MAX_COMMS];

/* For an operation of t's open group (depth > 0) on c (the registry's
 * record of its communicator): true when gm_op_pre would change nothing
 * and report nothing, so that the caller may skip it. That is known when
 * c is in t's memo of held (gl_thread.hot; registry serials start at 1,
 * so an empty entry, 0, matches none), c is active and has no async error
 * (use-after-destroy and async-error have nothing to say, whether on or
 * off), and the current device is c's or the group already recorded its
 * first mismatch:
 *  - device-mismatch (check_device): c's device is recorded already, and a
 *    mismatch is recorded once per group (a group driving several devices
 *    from one thread, NCCL's single-thread multi-GPU pattern, mismatches
 *    at most of its operations: after its first, they all come here);
 *  - concurrent-use: this thread owns c (g_owner[serial] == ev->thread)
 *    from its acquisition to the group's end, since another thread's CAS
 *    only fails on it and only the owner (group end, thread exit) or a
 *    fork (which keeps the forking thread's) clears it; so the CAS would
 *    fail with cur == ev->thread: no report, nothing more to hold. */
static inline bool gm_op_pre_known(const a2a_event *ev, const gl_thread *t, const a2a_comm *c) {
  uint32_t serial = c->serial;
  return gl_hot(t, serial) && (ev->device == c->device || t->mismatch) &&
         atomic_load_explicit(&c->state, memory_order_relaxed) == A2A_COMM_ACTIVE &&
         atomic_load_explicit(&gm_async[serial], memory_order_acquire) == 0;
}

/* group_local.c */
/* The calling thread's record (allocated on first use), NULL if the thread
 * index is out of range or allocation failed. */
gl_thread *gl_thread_get(uint32_t id);
/* Fill *st with one frame, pc: the call site of an earlier call, so that a
 * finding reported later still points at the user's line. */
void gl_stack_one(a2a_stack *st, const void *pc);

/* group_misuse.c */
int gm_init(void);
/* Per event, after the tracker updated t (t may be NULL). op_comm: for a
 * collective or p2p call, the registry record of ev->comm (NULL if none),
 * which the tracker looked up; ignored for other kinds. */
void gm_on_event(const a2a_event *ev, gl_thread *t, a2a_comm *op_comm);
/* gm_on_event, exactly, for the PRE of a communicator query
 * (A2A_EV_COMM_QUERY) or of ncclCommGetAsyncError, and for the POST of the
 * latter: the tracker's per-kind handlers (the kinds need no thread record
 * and no group state; gl_body calls gm_on_event for them with t NULL). */
void gm_query_pre(const a2a_event *ev);
void gm_async_error_post(const a2a_event *ev);
/* gm_on_event for a collective or p2p call (c: its communicator's record). */
void gm_on_op(const a2a_event *ev, gl_thread *t, a2a_comm *c);
/* gm_on_op's two phases, which the tracker's fast path (gl_on_op) calls
 * directly. gm_op_pre's caller has set t's op_handle to ev->comm, op_comm
 * to c and held_handle to NULL (t non-NULL): gm_op_pre sets held_handle
 * when it holds c in hot. */
void gm_op_pre(const a2a_event *ev, gl_thread *t, a2a_comm *c);
/* gm_op_pre for a caller that knows t and c not NULL and read t's depth
 * > 0 (an operation of t's open group), without testing them again. */
void gm_op_pre_grouped(const a2a_event *ev, gl_thread *t, a2a_comm *c);
void gm_op_post(const a2a_event *ev, gl_thread *t, a2a_comm *c);
/* The outermost ncclGroupEnd: PRE (decide deferred checks:
 * gm_group_end_pre, inline, which calls gm_group_end_mismatch only for a
 * report to make) and POST (release the communicators held by the group). */
void gm_group_end_mismatch(const a2a_event *ev, gl_thread *t);
static inline void gm_group_end_pre(const a2a_event *ev, gl_thread *t) {
  /* group.device-mismatch, deferred (group_misuse.c): a group whose
   * communicators are all on one device reports its first mismatch; one
   * on several (ncomm_devs 2: NCCL's single-thread multi-GPU pattern) or
   * on none has nothing to report. */
  if (t->mismatch && t->ncomm_devs == 1) gm_group_end_mismatch(ev, t);
}
void gm_group_end_post(const a2a_event *ev, gl_thread *t);
/* A failed operation, or a failed outermost ncclGroupEnd's operation, on
 * stream_key (gl_stream_key) with communicator c: group.device-mismatch
 * when the stream belongs to another device than c's. */
void gm_stream_device_failed(const a2a_event *ev, const void *site, const char *api,
                             const a2a_comm *c, uintptr_t stream_key);
/* A new outermost group starts on t. */
void gm_group_begin(gl_thread *t);
/* In a forked child: release the communicators other threads held. */
void gm_after_fork_child(uint32_t self);
/* t's thread has exited: release the communicators it held. */
void gm_thread_gone(gl_thread *t);

#endif /* A2A_GROUP_LOCAL_H */
