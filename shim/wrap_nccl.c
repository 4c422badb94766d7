/* wrap_nccl.c - the exported wrappers for every function of nccl.h.
 *
 * Each wrapper follows the contract of a2a_runtime.h / intercept.h: pass
 * through unless this is the outermost intercepted call of an enabled tool,
 * build one a2a_event on the stack, dispatch PRE, call the REAL function,
 * dispatch POST with the result and the out-parameters, return exactly what
 * NCCL returned with errno as NCCL left it. The depth guard matters here:
 * NCCL calls some of its own exported symbols through the PLT (every
 * enqueue calls ncclCommGetAsyncError, ncclBcast calls ncclBroadcast,
 * ncclCommInitAll calls ncclGetUniqueId); those inner calls reach these
 * wrappers and pass straight through, so only the application's call is
 * analyzed.
 *
 * Event field conventions beyond a2a_event.h:
 *  - ev.comm is the communicator operated on; for split/shrink, the parent.
 *  - COMM_INIT POST: newcomm is NULL unless NCCL returned ncclSuccess or
 *    ncclInProgress (a failed init may leave *comm untouched garbage).
 *    For split/shrink the new communicator's size, rank and device are not
 *    arguments: on success outside a group they are read with the REAL
 *    ncclCommCount / ncclCommUserRank / ncclCommCuDevice (pure queries on a
 *    ready communicator), else -1. A child NCCL stores in *newcomm only
 *    later (non-blocking, or inside a group) gets a second, late POST once
 *    it is there ("Children NCCL publishes later" below).
 *  - ncclCommInitAll: one PRE (rank -1, newcomm NULL); on success one POST
 *    per created communicator i (rank i, nranks ndev, device devlist[i] or
 *    i); on failure a single POST with newcomm NULL and rank -1.
 *  - ncclGetVersion and ncclGetErrorString have no event kind: they are
 *    forwarded (and counted as NCCL calls) without an event.
 */
#include <pthread.h>
#include <string.h>

#include "intercept.h"

/* blocking flag of a config: only an explicit config->blocking == 0 makes a
 * communicator non-blocking here. (NCCL also honours NCCL_COMM_BLOCKING=0
 * when the config leaves the field undefined; a non-blocking init shows up
 * anyway as the result ncclInProgress.) */
static int config_blocking(const ncclConfig_t *config)
{
  return (config && config->blocking == 0) ? 0 : 1;
}

/* A COMM_INIT event whose POST may carry a new communicator. */
static inline bool init_ok(ncclResult_t r) { return r == ncclSuccess || r == ncclInProgress; }

/* What every NCCL event carries beyond the shim's head: the communicator,
 * the stream, the call site, and the note that NCCL calls reach us. */
static inline void nccl_event_comm(a2a_event *ev, void *comm, cudaStream_t stream)
{
  ev->comm = comm;
  ev->stream = (void *)stream;
  /* From Python, the site is (the innermost user Python frame, the native
   * return address): every Python line reaches NCCL through the same few
   * libtorch return addresses. No Python work outside Python threads. */
  ev->callsite = a2a_rt_py_site(ev->callsite);
  a2a_rt_note_nccl_call();
}

/* Whether an NCCL event of this kind records or compares its device: then
 * it asks a2a_shim_query_device, others keep the head's. */
static inline bool nccl_device_asked(a2a_kind kind)
{
  return kind == A2A_EV_COMM_INIT || kind == A2A_EV_COLL || kind == A2A_EV_P2P ||
         kind == A2A_EV_ALLOC;
}

static void nccl_event(a2a_event *ev, void *comm, cudaStream_t stream)
{
  if (nccl_device_asked(ev->kind)) ev->device = a2a_shim_query_device();
  nccl_event_comm(ev, comm, stream);
}

/* A2A_EVENT_HOT then nccl_event (nccl_event_comm for a kind whose device
 * is the head's), each member stored once: for the hot NCCL wrappers
 * (evkind a constant). */
#define A2A_EVENT_NCCL(ev, evkind, apiname, comm_, stream_)                   \
  a2a_event ev;                                                               \
  nccl_event_head(&ev, (evkind), (apiname), __builtin_return_address(0),      \
                  (void *)(comm_), (stream_))
/* nccl_event_head of an event whose stream and communicator the caller
 * stored (A2A_P2P_WRAP). */
static inline void nccl_event_head_cs(a2a_event *ev, a2a_kind kind, const char *api, const void *pc)
{
  /* (A kind that asks its device, its common case: the device tracked and
   * the note made, one test - the device the tracked one, no note.) */
  if (nccl_device_asked(kind) && __builtin_expect(a2a_rt_device_set_and_noted(), 1)) {
    a2a_shim_event_head_cs(ev, kind, api, a2a_rt_t.device, a2a_rt_py_site(pc));
    return;
  }
  int device = nccl_device_asked(kind) ? a2a_shim_query_device() : a2a_shim_current_device();
  a2a_shim_event_head_cs(ev, kind, api, device, a2a_rt_py_site(pc));
  a2a_rt_note_nccl_call();
}
static inline void nccl_event_head(a2a_event *ev, a2a_kind kind, const char *api, const void *pc,
                                   void *comm, cudaStream_t stream)
{
  ev->stream = (void *)stream;
  ev->comm = comm;
  nccl_event_head_cs(ev, kind, api, pc);
}

/* The operation and group wrappers, the communicator queries and
 * ncclCommGetAsyncError know their event kind at compile time: they
 * dispatch with the hot wrappers' A2A_PRE_HOT / A2A_POST_END_HOT
 * (intercept.h) - a2a_dispatch_hot instead of a2a_dispatch_inline, the same
 * handlers in the same order (the gate selections only omit gated handlers that
 * would return at their own gate test: see a2a_analyzer.pre_gate), the
 * activity store with the kind's bits known, the handler list's address a
 * constant - and without reading the clock: t_ns is 0, as a2a_event.h
 * documents for these kinds (no analyzer reads the time of an NCCL
 * operation, group call, query or async-error poll; perf_comm times
 * operations with CUDA events; the cross-rank analyzer's polling episodes
 * start at a not-ready stream or event query, never at an async-error
 * poll), where two clock reads per call were a tenth of a grouped send's
 * cost. Their POST begins with A2A_POST_BEGIN_NCCL (an NCCL result may be
 * ncclInProgress: a2a_event_set_result's values, the kind known). They
 * declare their event with A2A_EVENT_NCCL (A2A_EVENT_HOT's head, no
 * zeroing of the union, with nccl_event's members; the operations store
 * their members, comm and stream first and add the head with
 * nccl_event_head_cs: A2A_COLL_WRAP, A2A_P2P_WRAP): each
 * fills every member of its kind's union member (u.coll: all seven; u.p2p:
 * is_send, buff, count, dtype, peer; u.group: simulate, depth; u.async_err:
 * async_error; a query has none), and the handlers read the union only
 * through the member of the event's kind. The queries and the async-error
 * poll are forwarded without an event while no analyzer handles their kind
 * (A2A_PASS_THROUGH_UNLESS_WANTED): then nothing would read it, nor its
 * seq (an analyzer that reads the threads' activity makes every kind
 * wanted); the NCCL call is not noted then (a2a_rt_note_nccl_call), but
 * the communicator a query names was created through a wrapper that noted
 * its creation (A2A_EV_COMM_INIT is always wanted). */

/* NCCL's group depth on this thread (see group_track below), and the
 * number of its outermost groups so far (which group an awaited child was
 * made in). */
static _Thread_local int tls_group_depth;
static _Thread_local uint32_t tls_group_serial;

/* Fill nranks/rank/device of a communicator created by split/shrink. Only
 * outside a group: inside one NCCL defers the creation to ncclGroupEnd, and
 * querying the not-yet-ready communicator would make NCCL warn ("Attempt to
 * use communicator before...") and set its last-error string, which the
 * application could observe. Then the fields stay -1. */
static void query_new_comm(a2a_event *ev, ncclComm_t c)
{
  int v;
  ev->u.init.nranks = ev->u.init.rank = -1;
  ev->u.init.device = ev->device;
  if (!c) return;
  if (A2A_REAL(ncclCommCount)(c, &v) == ncclSuccess) ev->u.init.nranks = v;
  if (A2A_REAL(ncclCommUserRank)(c, &v) == ncclSuccess) ev->u.init.rank = v;
  if (A2A_REAL(ncclCommCuDevice)(c, &v) == ncclSuccess) ev->u.init.device = v;
}

/* ------------------------------------------------------------------ */
/* Memory */

A2A_PUBLIC ncclResult_t ncclMemAlloc(void **ptr, size_t size)
{
  A2A_PASS_THROUGH_UNLESS_ENTERED(ncclMemAlloc, ptr, size);
  A2A_EVENT(ev, A2A_EV_ALLOC, "ncclMemAlloc");
  nccl_event(&ev, NULL, NULL);
  ev.u.mem.mem = A2A_MEM_NCCL;
  ev.u.mem.size = size;
  A2A_PRE(ev);
  ncclResult_t r = A2A_REAL(ncclMemAlloc)(ptr, size);
  A2A_POST_BEGIN(ev, r);
  ev.u.mem.ptr = (r == ncclSuccess && ptr) ? *ptr : NULL;
  A2A_POST_END(ev);
  return r;
}

A2A_PUBLIC ncclResult_t ncclMemFree(void *ptr)
{
  A2A_PASS_THROUGH_UNLESS_ENTERED(ncclMemFree, ptr);
  A2A_EVENT(ev, A2A_EV_FREE, "ncclMemFree");
  nccl_event(&ev, NULL, NULL);
  ev.u.mem.mem = A2A_MEM_NCCL;
  ev.u.mem.ptr = ptr;
  A2A_PRE(ev);
  ncclResult_t r = A2A_REAL(ncclMemFree)(ptr);
  A2A_POST_BEGIN(ev, r);
  A2A_POST_END(ev);
  return r;
}

/* ------------------------------------------------------------------ */
/* Version, ids, errors */

A2A_PUBLIC ncclResult_t ncclGetVersion(int *version)
{
  A2A_PASS_THROUGH_UNLESS_ENTERED(ncclGetVersion, version);
  a2a_rt_note_nccl_call();
  A2A_ERRNO = a2a_errno_;
  ncclResult_t r = A2A_REAL(ncclGetVersion)(version);
  a2a_errno_ = A2A_ERRNO;
  a2a_rt_leave();
  A2A_ERRNO = a2a_errno_;
  return r;
}

A2A_PUBLIC const char *ncclGetErrorString(ncclResult_t result)
{
  A2A_PASS_THROUGH_UNLESS_ENTERED(ncclGetErrorString, result);
  a2a_rt_note_nccl_call();
  A2A_ERRNO = a2a_errno_;
  const char *s = A2A_REAL(ncclGetErrorString)(result);
  a2a_errno_ = A2A_ERRNO;
  a2a_rt_leave();
  A2A_ERRNO = a2a_errno_;
  return s;
}

/* A communicator query (A2A_EV_COMM_QUERY; its result `r_`): the
 * exported wrapper `name` with prototype `params` (its arguments the
 * variadic ones), in two parts. A query of a communicator the thread's
 * lookup memo knows active, while the query's rows are quiet for it
 * (a2a_comm_quiet: nccl-tests asks every communicator's size and rank at
 * every iteration), is made by the wrapper itself without an event: every
 * handler would return without a write, so what is left of the full path
 * is kept as it is there - the readiness and kind test
 * (a2a_rt_ready_wanted), the depth guard (a2a_rt_enter_ready's test and
 * store, and a2a_rt_leave: NCCL's ncclCommEnsureReady calls
 * ncclCommGetAsyncError through the PLT, which must still pass through),
 * the note of an NCCL call, the thread's index and the call's seq (the
 * cross-rank analyzer's polling episodes continue only while the seqs are
 * consecutive) and its activity store (a2a_note_activity_at: last_seq and
 * last_other_seq - a query is no polling call - and the repeated-launch
 * mark cleared), all before the real call as at the PRE. Not made: the
 * event's head (pure reads, but for the call site's, a2a_rt_py_site,
 * which a thread running Python makes do work: the path is taken only in
 * a process without CPython, a2a_rt_py_off), the dispatches' loads, and
 * the errno save and restores, as nothing on this path writes errno
 * (a2a_note_activity_at runs no flush for a query, one of
 * A2A_NOFLUSH_KINDS; the index's, the note's and the real pointer's slow
 * paths leave it): the real function sees the application's errno and
 * the application the one it left, as with the event. Any other call:
 * name##_event, the full path, out of line (the fast one then needs no
 * frame of its size), with the wrapper's return address as its call
 * site - the wrapper's own __builtin_return_address(0), as before. */
#define A2A_UNPAREN(...) __VA_ARGS__
#define A2A_COMM_QUERY_WRAP(name, ret, r_, params, ...)                        \
  __attribute__((noinline)) static ret name##_event(const void *a2a_pc_,       \
                                                    A2A_UNPAREN params)        \
  {                                                                            \
    A2A_PASS_THROUGH_UNLESS_WANTED(A2A_EV_COMM_QUERY, name, __VA_ARGS__);      \
    a2a_event ev;                                                              \
    nccl_event_head(&ev, A2A_EV_COMM_QUERY, #name, a2a_pc_, (void *)comm, NULL); \
    A2A_PRE_HOT(ev, A2A_EV_COMM_QUERY, 0);                                     \
    ret r = A2A_REAL(name)(__VA_ARGS__);                                       \
    A2A_POST_BEGIN_NCCL(ev, (r_), A2A_EV_COMM_QUERY);                          \
    A2A_POST_END_HOT(ev, A2A_EV_COMM_QUERY);                                   \
    return r;                                                                  \
  }                                                                            \
  A2A_PUBLIC ret name params                                                   \
  {                                                                            \
    _Static_assert(A2A_KIND_BIT(A2A_EV_COMM_QUERY) & A2A_NOFLUSH_KINDS,         \
                   "a quiet query flushes nothing");                           \
    if (__builtin_expect(a2a_rt_ready_wanted(A2A_EV_COMM_QUERY), 1) &&         \
        a2a_rt_t.depth == 0 &&                                                 \
        atomic_load_explicit(&a2a_rt_py_off, memory_order_relaxed) &&          \
        a2a_comm_quiet(A2A_EV_COMM_QUERY, comm)) {                             \
      a2a_rt_t.depth = 1;                                                      \
      a2a_rt_note_nccl_call();                                                 \
      a2a_note_activity_at(a2a_rt_thread_index(), a2a_rt_next_call_seq(),      \
                           A2A_EV_COMM_QUERY);                                 \
      ret r = A2A_REAL(name)(__VA_ARGS__);                                     \
      a2a_rt_leave();                                                          \
      return r;                                                                \
    }                                                                          \
    return name##_event(__builtin_return_address(0), __VA_ARGS__);             \
  }

/* The event's result is 0: the function returns a string. */
A2A_COMM_QUERY_WRAP(ncclGetLastError, const char *, 0, (ncclComm_t comm), comm)

A2A_PUBLIC ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId)
{
  A2A_PASS_THROUGH_UNLESS_ENTERED(ncclGetUniqueId, uniqueId);
  A2A_EVENT(ev, A2A_EV_GET_UNIQUE_ID, "ncclGetUniqueId");
  nccl_event(&ev, NULL, NULL);
  A2A_PRE(ev);
  ncclResult_t r = A2A_REAL(ncclGetUniqueId)(uniqueId);
  A2A_POST_BEGIN(ev, r);
  ev.u.uid.id = r == ncclSuccess ? (const void *)uniqueId : NULL;
  A2A_POST_END(ev);
  return r;
}

/* ---- Children NCCL publishes later ----
 * NCCL stores a split's or shrink's child in the application's *newcomm
 * only when the child's init job ends (init.cc: "*newcomm should be
 * NCCL_COMM_NULL until comm split fully complete"): after the call returned
 * ncclInProgress for a non-blocking parent (NCCL's thread runs the job; the
 * application polls ncclCommGetAsyncError - PyTorch polls the parent, waits
 * for the pointer, then polls the child), at the outermost ncclGroupEnd
 * for one inside a group. Such a call's POST has no child; its event is
 * kept here with the ncclComm_t* (a2a_event.u.init.awaited) and posted
 * again, late, from the first of these calls after which the pointer holds
 * the child: ncclCommGetAsyncError, before its own PRE (it may be the
 * child's first call) and after NCCL's, the outermost ncclGroupEnd, after
 * NCCL's, a split or shrink (its variable may be reused) and a
 * communicator's end (the child's may be its first call). The
 * pointer is read where NCCL itself writes it, and only while NCCL may
 * still write it: an entry goes when its child is posted, when the
 * variable is given to another split (the newest call's), when the
 * outermost ncclGroupEnd of the group it was made in fails (NCCL ran no
 * job: the variable stays NULL, and may be a local the program's stack
 * reuses), and when its parent is destroyed or aborted (after a last
 * look). Bounded (AW_MAX awaited at once; one more keeps the old
 * behaviour: no communicator), cold: these calls, and the communicator
 * ends, read g_aw_n, relaxed, while none is awaited. */
#define AW_MAX 64
static struct {
  ncclComm_t *where;
  a2a_event ev;
  uint32_t group; /* made inside ev.thread's outermost group #group; 0: outside */
} g_aw[AW_MAX];
static _Atomic unsigned g_aw_n;
static pthread_mutex_t g_aw_mu = PTHREAD_MUTEX_INITIALIZER;

/* Removes entry i (the lock held). */
static void await_remove_locked(unsigned i)
{
  unsigned n = atomic_load_explicit(&g_aw_n, memory_order_relaxed);
  g_aw[i] = g_aw[n - 1];
  atomic_store_explicit(&g_aw_n, n - 1, memory_order_relaxed);
}

/* Forgets the entries of the variable where, of the parent's children,
 * or of the thread's outermost group #group (thread index; 0: none). */
static void await_forget(ncclComm_t *where, void *parent, uint32_t thread, uint32_t group)
{
  if (!atomic_load_explicit(&g_aw_n, memory_order_relaxed)) return;
  pthread_mutex_lock(&g_aw_mu);
  for (unsigned i = 0; i < atomic_load_explicit(&g_aw_n, memory_order_relaxed);) {
    bool drop = (where && g_aw[i].where == where) || (parent && g_aw[i].ev.comm == parent) ||
                (thread && g_aw[i].group == group && g_aw[i].ev.thread == thread);
    if (drop) await_remove_locked(i);
    else i++;
  }
  pthread_mutex_unlock(&g_aw_mu);
}

/* Called by the split and shrink wrappers after their POST_END (errno
 * restored: kept). */
static void await_child(const a2a_event *ev, ncclComm_t *where)
{
  int saved = errno;
  pthread_mutex_lock(&g_aw_mu);
  unsigned n = atomic_load_explicit(&g_aw_n, memory_order_relaxed);
  if (n < AW_MAX) {
    g_aw[n].where = where;
    g_aw[n].ev = *ev;
    g_aw[n].group = tls_group_depth > 0 ? tls_group_serial : 0;
    /* The application's arrays need not outlive the call. */
    g_aw[n].ev.u.init.config = NULL;
    g_aw[n].ev.u.init.exclude = NULL;
    g_aw[n].ev.u.init.nexclude = 0;
    atomic_store_explicit(&g_aw_n, n + 1, memory_order_relaxed);
  }
  pthread_mutex_unlock(&g_aw_mu);
  errno = saved;
}

/* Posts every awaited child now published, as the late POST of its
 * call's event; cur is the call in progress (its thread, seq and device
 * head the late event: no call of its own). The child's size, rank and
 * device are asked only once NCCL says it is ready (the real
 * ncclCommGetAsyncError, a pure query), else left -1 with in_progress set:
 * the registry asks them when the application sees it ready. */
__attribute__((noinline)) static void awaited_resolve(const a2a_event *cur)
{
  /* The lock is held until the child's creation was dispatched: another
   * thread's call that looks (its own first call on the child, the
   * child's destroy) waits until the child is known, and NCCL is asked
   * about the child before anyone can destroy it. (Only the shim's
   * wrappers take this lock, before any analyzer's: no cycle.) */
  pthread_mutex_lock(&g_aw_mu);
  for (unsigned i = 0; i < atomic_load_explicit(&g_aw_n, memory_order_relaxed);) {
    ncclComm_t child = __atomic_load_n(g_aw[i].where, __ATOMIC_ACQUIRE);
    if (!child) {
      i++;
      continue;
    }
    a2a_event ev = g_aw[i].ev;
    await_remove_locked(i);
    ev.thread = cur->thread;
    ev.seq = cur->seq;
    ev.device = cur->device;
    ev.u.init.newcomm = (void *)child;
    ev.u.init.late = 1;
    ncclResult_t st = ncclInProgress;
    if (A2A_REAL(ncclCommGetAsyncError)(child, &st) == ncclSuccess && st == ncclSuccess)
      query_new_comm(&ev, child);
    else
      ev.u.init.nranks = ev.u.init.rank = -1;
    a2a_event_set_result(&ev, st == ncclSuccess ? ncclSuccess : ncclInProgress);
    a2a_shim_post(&ev);
  }
  pthread_mutex_unlock(&g_aw_mu);
}

void a2a_nccl_after_fork_child(void)
{
  pthread_mutex_init(&g_aw_mu, NULL);
  atomic_store_explicit(&g_aw_n, 0, memory_order_relaxed);
}

static inline void awaited_poll(const a2a_event *cur)
{
  if (__builtin_expect(atomic_load_explicit(&g_aw_n, memory_order_relaxed) != 0, 0))
    awaited_resolve(cur);
}

/* The outermost ncclGroupEnd (r its result): children published are
 * posted; a failed end ran no job, so the thread's in-group entries go. */
static inline void awaited_group_end(const a2a_event *cur, ncclResult_t r)
{
  if (__builtin_expect(atomic_load_explicit(&g_aw_n, memory_order_relaxed) != 0, 0)) {
    awaited_resolve(cur);
    if (r != ncclSuccess && r != ncclInProgress) await_forget(NULL, NULL, cur->thread, tls_group_serial);
  }
}

/* The analyzed call (ncclCommGetAsyncError below): out of line, so that
 * the pass-through of NCCL's own nested calls pays for no frame. */
__attribute__((noinline)) static ncclResult_t comm_get_async_error(ncclComm_t comm,
                                                                   ncclResult_t *asyncError)
{
  A2A_PASS_THROUGH_UNLESS_WANTED(A2A_EV_COMM_ASYNC_ERROR, ncclCommGetAsyncError, comm,
                                 asyncError);
  A2A_EVENT_NCCL(ev, A2A_EV_COMM_ASYNC_ERROR, "ncclCommGetAsyncError", comm, NULL);
  ev.u.async_err.async_error = 0; /* valid at POST only; 0 as the zeroed event had it */
  awaited_poll(&ev); /* the child's own first call */
  A2A_PRE_HOT(ev, A2A_EV_COMM_ASYNC_ERROR, 0);
  ncclResult_t r = A2A_REAL(ncclCommGetAsyncError)(comm, asyncError);
  A2A_POST_BEGIN_NCCL(ev, r, A2A_EV_COMM_ASYNC_ERROR);
  awaited_poll(&ev); /* a parent that read ready: its child is published */
  ev.u.async_err.async_error = (r == ncclSuccess && asyncError) ? (int)*asyncError : -1;
  A2A_POST_END_HOT(ev, A2A_EV_COMM_ASYNC_ERROR);
  return r;
}

/* NCCL calls ncclCommGetAsyncError through the PLT at every enqueue (its
 * communicator readiness check), from inside the application's analyzed
 * NCCL call: there the depth guard is set, and with the guard set every
 * path of comm_get_async_error forwards the call unchanged - the kind off
 * forwards at once; otherwise the guard's test fails: a2a_rt_enter_ready
 * on the depth, a2a_rt_enter_slow on the state (DISABLED, FINISHED, or this
 * thread initializing) or, after READY, on the depth (a thread's guard is
 * set only by an entry that read READY, the quiet queries' included, and
 * the state never returns to UNINIT or INITIALIZING: no initialization
 * is waited for that this skips) - and its errno save and restore stores
 * the value it read. So that case, the guard set, is tested first, alone,
 * and tail-calls NCCL without saving and restoring errno, which nothing on
 * this path touches (an unresolved slot takes the full path, whose
 * resolution preserves errno). Anything else: comm_get_async_error, the
 * wrapper as every other. */
A2A_PUBLIC ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
  if (__builtin_expect(a2a_rt_t.depth != 0, 1)) {
    void *real = atomic_load_explicit(&a2a_real_slot[A2A_SYM_ncclCommGetAsyncError],
                                      memory_order_acquire);
    if (__builtin_expect(real != NULL, 1))
      return ((a2a_real_ncclCommGetAsyncError_t)real)(comm, asyncError);
  }
  return comm_get_async_error(comm, asyncError);
}

/* ------------------------------------------------------------------ */
/* Communicator creation */

/* Shared body of ncclCommInitRank and ncclCommInitRankConfig. */
#define A2A_INIT_RANK_BODY(name, how_, call, config_)                         \
  A2A_EVENT(ev, A2A_EV_COMM_INIT, #name);                                     \
  nccl_event(&ev, NULL, NULL);                                                \
  ev.u.init.how = (how_);                                                     \
  ev.u.init.nranks = nranks;                                                  \
  ev.u.init.rank = rank;                                                      \
  ev.u.init.device = ev.device;                                               \
  ev.u.init.ids = &commId;                                                    \
  ev.u.init.nids = 1;                                                         \
  ev.u.init.blocking = config_blocking(config_);                              \
  ev.u.init.config = (config_);                                               \
  A2A_PRE(ev);                                                                \
  ncclResult_t r = call;                                                      \
  A2A_POST_BEGIN(ev, r);                                                      \
  ev.u.init.newcomm = (init_ok(r) && comm) ? (void *)*comm : NULL;            \
  await_forget(comm, NULL, 0, 0); /* the variable given again */            \
  A2A_POST_END(ev);                                                           \
  return r

A2A_PUBLIC ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId,
                                               int rank, ncclConfig_t *config)
{
  A2A_PASS_THROUGH_UNLESS_ENTERED(ncclCommInitRankConfig, comm, nranks, commId, rank, config);
  A2A_INIT_RANK_BODY(ncclCommInitRankConfig, A2A_INIT_RANK_CONFIG,
                     A2A_REAL(ncclCommInitRankConfig)(comm, nranks, commId, rank, config), config);
}

A2A_PUBLIC ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
  A2A_PASS_THROUGH_UNLESS_ENTERED(ncclCommInitRank, comm, nranks, commId, rank);
  A2A_INIT_RANK_BODY(ncclCommInitRank, A2A_INIT_RANK,
                     A2A_REAL(ncclCommInitRank)(comm, nranks, commId, rank),
                     (const ncclConfig_t *)NULL);
}

A2A_PUBLIC ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
                                                 ncclUniqueId *commIds, ncclConfig_t *config)
{
  A2A_PASS_THROUGH_UNLESS_ENTERED(ncclCommInitRankScalable, newcomm, nranks, myrank, nId, commIds,
                                  config);
  A2A_EVENT(ev, A2A_EV_COMM_INIT, "ncclCommInitRankScalable");
  nccl_event(&ev, NULL, NULL);
  ev.u.init.how = A2A_INIT_SCALABLE;
  ev.u.init.nranks = nranks;
  ev.u.init.rank = myrank;
  ev.u.init.device = ev.device;
  ev.u.init.ids = commIds;
  ev.u.init.nids = nId;
  ev.u.init.blocking = config_blocking(config);
  ev.u.init.config = config;
  A2A_PRE(ev);
  ncclResult_t r = A2A_REAL(ncclCommInitRankScalable)(newcomm, nranks, myrank, nId, commIds, config);
  A2A_POST_BEGIN(ev, r);
  ev.u.init.newcomm = (init_ok(r) && newcomm) ? (void *)*newcomm : NULL;
  A2A_POST_END(ev);
  return r;
}

A2A_PUBLIC ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist)
{
  A2A_PASS_THROUGH_UNLESS_ENTERED(ncclCommInitAll, comm, ndev, devlist);
  A2A_EVENT(ev, A2A_EV_COMM_INIT, "ncclCommInitAll");
  nccl_event(&ev, NULL, NULL);
  ev.u.init.how = A2A_INIT_ALL;
  ev.u.init.devlist = devlist; /* NULL means devices 0..ndev-1 */
  ev.u.init.nranks = ndev;
  ev.u.init.rank = -1;
  ev.u.init.device = -1;
  ev.u.init.blocking = 1;
  A2A_PRE(ev);
  ncclResult_t r = A2A_REAL(ncclCommInitAll)(comm, ndev, devlist);
  A2A_POST_BEGIN(ev, r);
  if (r == ncclSuccess && comm && ndev > 0) {
    /* One POST per created communicator; the shim's own phase/timestamp
     * helpers are used for each, and the guard is left once at the end. */
    for (int i = 0; i < ndev; i++) {
      ev.u.init.rank = i;
      ev.u.init.device = devlist ? devlist[i] : i;
      ev.u.init.newcomm = (void *)comm[i];
      if (i + 1 < ndev) a2a_shim_post(&ev);
    }
  }
  A2A_POST_END(ev);
  return r;
}

/* Split and shrink: the parent is ev.comm and u.init.parent; the child's
 * size, rank and device are known only after the call (query_new_comm). */
static void child_init_pre(a2a_event *ev, a2a_init_how how, ncclComm_t parent,
                           const ncclConfig_t *config)
{
  nccl_event(ev, parent, NULL);
  ev->u.init.how = how;
  ev->u.init.nranks = ev->u.init.rank = -1;
  ev->u.init.device = ev->device;
  ev->u.init.parent = parent;
  ev->u.init.blocking = config_blocking(config);
  ev->u.init.config = config;
}

/* The POST's fields; true when the child will be published later: the
 * event then names the variable (awaited), and the wrapper enters it in
 * the table once its POST was dispatched (await_child), so that no
 * late POST can come before it. */
static bool child_init_post(a2a_event *ev, ncclResult_t r, ncclComm_t *newcomm, bool nocolor)
{
  ev->u.init.newcomm = (init_ok(r) && newcomm) ? (void *)*newcomm : NULL;
  if (r == ncclSuccess && tls_group_depth == 0) query_new_comm(ev, ev->u.init.newcomm);
  /* The variable given again: what it awaited is not coming (a child
   * already there was posted before the call: child_init_pre_poll). */
  await_forget(newcomm, NULL, 0, 0);
  bool later = init_ok(r) && newcomm && !ev->u.init.newcomm && !nocolor;
  if (later) ev->u.init.awaited = newcomm;
  return later;
}


A2A_PUBLIC ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                                      ncclConfig_t *config)
{
  A2A_PASS_THROUGH_UNLESS_ENTERED(ncclCommSplit, comm, color, key, newcomm, config);
  A2A_EVENT(ev, A2A_EV_COMM_INIT, "ncclCommSplit");
  child_init_pre(&ev, A2A_INIT_SPLIT, comm, config);
  ev.u.init.color = color;
  ev.u.init.key = key;
  awaited_poll(&ev); /* a child already in the variable it may reuse */
  A2A_PRE(ev);
  ncclResult_t r = A2A_REAL(ncclCommSplit)(comm, color, key, newcomm, config);
  A2A_POST_BEGIN(ev, r);
  bool later = child_init_post(&ev, r, newcomm, color == NCCL_SPLIT_NOCOLOR);
  A2A_POST_END(ev);
  if (later) await_child(&ev, newcomm);
  return r;
}

A2A_PUBLIC ncclResult_t ncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
                                       ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags)
{
  A2A_PASS_THROUGH_UNLESS_ENTERED(ncclCommShrink, comm, excludeRanksList, excludeRanksCount, newcomm,
                                  config, shrinkFlags);
  A2A_EVENT(ev, A2A_EV_COMM_INIT, "ncclCommShrink");
  child_init_pre(&ev, A2A_INIT_SHRINK, comm, config);
  ev.u.init.exclude = excludeRanksList;
  ev.u.init.nexclude = excludeRanksCount;
  awaited_poll(&ev);
  A2A_PRE(ev);
  ncclResult_t r =
      A2A_REAL(ncclCommShrink)(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
  A2A_POST_BEGIN(ev, r);
  bool later = child_init_post(&ev, r, newcomm, false);
  A2A_POST_END(ev);
  if (later) await_child(&ev, newcomm);
  return r;
}

/* ------------------------------------------------------------------ */
/* Communicator end of life */

#define A2A_COMM_END_WRAP(name, how_, flags_, ...)                            \
  {                                                                           \
    A2A_PASS_THROUGH_UNLESS_ENTERED(name, __VA_ARGS__);                       \
    A2A_EVENT(ev, A2A_EV_COMM_END, #name);                                    \
    nccl_event(&ev, comm, NULL);                                              \
    ev.u.end.how = (how_);                                                    \
    ev.u.end.flags = (flags_);                                                \
    awaited_poll(&ev); /* a child's end may be its first call since */       \
    A2A_PRE(ev);                                                              \
    ncclResult_t r = A2A_REAL(name)(__VA_ARGS__);                             \
    A2A_POST_BEGIN(ev, r);                                                    \
    if ((how_) == A2A_END_DESTROY || (how_) == A2A_END_ABORT) {              \
      awaited_poll(&ev);                                                      \
      await_forget(NULL, (void *)comm, 0, 0); /* NCCL publishes no more */   \
    }                                                                         \
    A2A_POST_END(ev);                                                         \
    return r;                                                                 \
  }

A2A_PUBLIC ncclResult_t ncclCommFinalize(ncclComm_t comm)
    A2A_COMM_END_WRAP(ncclCommFinalize, A2A_END_FINALIZE, 0, comm)
A2A_PUBLIC ncclResult_t ncclCommDestroy(ncclComm_t comm)
    A2A_COMM_END_WRAP(ncclCommDestroy, A2A_END_DESTROY, 0, comm)
A2A_PUBLIC ncclResult_t ncclCommAbort(ncclComm_t comm)
    A2A_COMM_END_WRAP(ncclCommAbort, A2A_END_ABORT, 0, comm)
A2A_PUBLIC ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags)
    A2A_COMM_END_WRAP(ncclCommRevoke, A2A_END_REVOKE, revokeFlags, comm, revokeFlags)

/* ------------------------------------------------------------------ */
/* Communicator queries */

/* A2A_COMM_QUERY_WRAP: above, with ncclGetLastError. */
A2A_COMM_QUERY_WRAP(ncclCommCount, ncclResult_t, r, (const ncclComm_t comm, int *count), comm,
                    count)
A2A_COMM_QUERY_WRAP(ncclCommCuDevice, ncclResult_t, r, (const ncclComm_t comm, int *device), comm,
                    device)
A2A_COMM_QUERY_WRAP(ncclCommUserRank, ncclResult_t, r, (const ncclComm_t comm, int *rank), comm,
                    rank)

/* ------------------------------------------------------------------ */
/* Buffer and window registration */

A2A_PUBLIC ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle)
{
  A2A_PASS_THROUGH_UNLESS_ENTERED(ncclCommRegister, comm, buff, size, handle);
  A2A_EVENT(ev, A2A_EV_NCCL_REGISTER, "ncclCommRegister");
  nccl_event(&ev, comm, NULL);
  ev.u.reg.buff = buff;
  ev.u.reg.size = size;
  A2A_PRE(ev);
  ncclResult_t r = A2A_REAL(ncclCommRegister)(comm, buff, size, handle);
  A2A_POST_BEGIN(ev, r);
  ev.u.reg.handle = (r == ncclSuccess && handle) ? *handle : NULL;
  A2A_POST_END(ev);
  return r;
}

A2A_PUBLIC ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle)
{
  A2A_PASS_THROUGH_UNLESS_ENTERED(ncclCommDeregister, comm, handle);
  A2A_EVENT(ev, A2A_EV_NCCL_REGISTER, "ncclCommDeregister");
  nccl_event(&ev, comm, NULL);
  ev.u.reg.handle = handle;
  ev.u.reg.deregister = 1;
  A2A_PRE(ev);
  ncclResult_t r = A2A_REAL(ncclCommDeregister)(comm, handle);
  A2A_POST_BEGIN(ev, r);
  A2A_POST_END(ev);
  return r;
}

A2A_PUBLIC ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size,
                                               ncclWindow_t *win, int winFlags)
{
  A2A_PASS_THROUGH_UNLESS_ENTERED(ncclCommWindowRegister, comm, buff, size, win, winFlags);
  A2A_EVENT(ev, A2A_EV_NCCL_REGISTER, "ncclCommWindowRegister");
  nccl_event(&ev, comm, NULL);
  ev.u.reg.buff = buff;
  ev.u.reg.size = size;
  A2A_PRE(ev);
  ncclResult_t r = A2A_REAL(ncclCommWindowRegister)(comm, buff, size, win, winFlags);
  A2A_POST_BEGIN(ev, r);
  ev.u.reg.handle = (r == ncclSuccess && win) ? (void *)*win : NULL;
  A2A_POST_END(ev);
  return r;
}

A2A_PUBLIC ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win)
{
  A2A_PASS_THROUGH_UNLESS_ENTERED(ncclCommWindowDeregister, comm, win);
  A2A_EVENT(ev, A2A_EV_NCCL_REGISTER, "ncclCommWindowDeregister");
  nccl_event(&ev, comm, NULL);
  ev.u.reg.handle = (void *)win;
  ev.u.reg.deregister = 1;
  A2A_PRE(ev);
  ncclResult_t r = A2A_REAL(ncclCommWindowDeregister)(comm, win);
  A2A_POST_BEGIN(ev, r);
  A2A_POST_END(ev);
  return r;
}

/* ------------------------------------------------------------------ */
/* Reduction operators */

A2A_PUBLIC ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
                                                 ncclScalarResidence_t residence, ncclComm_t comm)
{
  A2A_PASS_THROUGH_UNLESS_ENTERED(ncclRedOpCreatePreMulSum, op, scalar, datatype, residence, comm);
  A2A_EVENT(ev, A2A_EV_REDOP, "ncclRedOpCreatePreMulSum");
  nccl_event(&ev, comm, NULL);
  A2A_PRE(ev);
  ncclResult_t r = A2A_REAL(ncclRedOpCreatePreMulSum)(op, scalar, datatype, residence, comm);
  A2A_POST_BEGIN(ev, r);
  A2A_POST_END(ev);
  return r;
}

A2A_PUBLIC ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm)
{
  A2A_PASS_THROUGH_UNLESS_ENTERED(ncclRedOpDestroy, op, comm);
  A2A_EVENT(ev, A2A_EV_REDOP, "ncclRedOpDestroy");
  nccl_event(&ev, comm, NULL);
  A2A_PRE(ev);
  ncclResult_t r = A2A_REAL(ncclRedOpDestroy)(op, comm);
  A2A_POST_BEGIN(ev, r);
  A2A_POST_END(ev);
  return r;
}

/* ------------------------------------------------------------------ */
/* Collectives: one body, the operation's fields filled per wrapper. */

/* As the grouped operations (A2A_P2P_WRAP, below): the operation's
 * members (u.coll), communicator and stream stored first, and the real
 * call and the pass-through given `args`, the wrapper's parameters in
 * NCCL's order as the event holds them (A2A_CA_*: the same values, in the
 * parameters' types, which nothing writes after the first stores - exact
 * as A2A_P2P_WRAP says; ncclBcast's one buffer is recvbuff, which the
 * event holds as sent and received). */
#define A2A_CA_SEND (ev).u.coll.sendbuff
#define A2A_CA_RECV (ev).u.coll.recvbuff
#define A2A_CA_COUNT (ev).u.coll.count
#define A2A_CA_DTYPE (ncclDataType_t)(ev).u.coll.dtype
#define A2A_CA_OP (ncclRedOp_t)(ev).u.coll.redop
#define A2A_CA_ROOT (ev).u.coll.root
#define A2A_CA_COMM (ncclComm_t)(ev).comm
#define A2A_CA_STREAM (cudaStream_t)(ev).stream
#define A2A_COLL_WRAP(name, coll_, send_, recv_, count_, dtype_, redop_, root_, args) \
  {                                                                           \
    a2a_event ev;                                                             \
    ev.u.coll.coll = (coll_);                                                 \
    ev.u.coll.sendbuff = (send_);                                             \
    ev.u.coll.recvbuff = (recv_);                                             \
    ev.u.coll.count = (count_);                                               \
    ev.u.coll.dtype = (int)(dtype_);                                          \
    ev.u.coll.redop = (int)(redop_);                                          \
    ev.u.coll.root = (root_);                                                 \
    ev.comm = (void *)comm;                                                   \
    ev.stream = (void *)stream;                                               \
    A2A_PASS_THROUGH_UNLESS_ENTERED(name, A2A_UNPAREN args);                  \
    nccl_event_head_cs(&ev, A2A_EV_COLL, #name, __builtin_return_address(0)); \
    A2A_PRE_HOT(ev, A2A_EV_COLL, 0);                                          \
    ncclResult_t r = A2A_REAL(name)(A2A_UNPAREN args);                        \
    A2A_POST_BEGIN_NCCL(ev, r, A2A_EV_COLL);                                  \
    A2A_POST_END_HOT(ev, A2A_EV_COLL);                                        \
    return r;                                                                 \
  }

A2A_PUBLIC ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
                                   ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                                   cudaStream_t stream)
    A2A_COLL_WRAP(ncclReduce, A2A_COLL_REDUCE, sendbuff, recvbuff, count, datatype, op, root,
                  (A2A_CA_SEND, A2A_CA_RECV, A2A_CA_COUNT, A2A_CA_DTYPE,
                   A2A_CA_OP, A2A_CA_ROOT, A2A_CA_COMM, A2A_CA_STREAM))

/* The deprecated in-place broadcast: send == recv == buff. */
A2A_PUBLIC ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root,
                                  ncclComm_t comm, cudaStream_t stream)
    A2A_COLL_WRAP(ncclBcast, A2A_COLL_BROADCAST, buff, buff, count, datatype, -1, root,
                  (A2A_CA_RECV, A2A_CA_COUNT, A2A_CA_DTYPE, A2A_CA_ROOT,
                   A2A_CA_COMM, A2A_CA_STREAM))

A2A_PUBLIC ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                                      ncclDataType_t datatype, int root, ncclComm_t comm,
                                      cudaStream_t stream)
    A2A_COLL_WRAP(ncclBroadcast, A2A_COLL_BROADCAST, sendbuff, recvbuff, count, datatype, -1, root,
                  (A2A_CA_SEND, A2A_CA_RECV, A2A_CA_COUNT, A2A_CA_DTYPE,
                   A2A_CA_ROOT, A2A_CA_COMM, A2A_CA_STREAM))

A2A_PUBLIC ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                                      ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                      cudaStream_t stream)
    A2A_COLL_WRAP(ncclAllReduce, A2A_COLL_ALLREDUCE, sendbuff, recvbuff, count, datatype, op, -1,
                  (A2A_CA_SEND, A2A_CA_RECV, A2A_CA_COUNT, A2A_CA_DTYPE,
                   A2A_CA_OP, A2A_CA_COMM, A2A_CA_STREAM))

A2A_PUBLIC ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                          ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                          cudaStream_t stream)
    A2A_COLL_WRAP(ncclReduceScatter, A2A_COLL_REDUCESCATTER, sendbuff, recvbuff, recvcount, datatype,
                  op, -1,
                  (A2A_CA_SEND, A2A_CA_RECV, A2A_CA_COUNT, A2A_CA_DTYPE,
                   A2A_CA_OP, A2A_CA_COMM, A2A_CA_STREAM))

A2A_PUBLIC ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                                      ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
    A2A_COLL_WRAP(ncclAllGather, A2A_COLL_ALLGATHER, sendbuff, recvbuff, sendcount, datatype, -1, -1,
                  (A2A_CA_SEND, A2A_CA_RECV, A2A_CA_COUNT, A2A_CA_DTYPE,
                   A2A_CA_COMM, A2A_CA_STREAM))

A2A_PUBLIC ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
                                     ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
    A2A_COLL_WRAP(ncclAlltoAll, A2A_COLL_ALLTOALL, sendbuff, recvbuff, count, datatype, -1, -1,
                  (A2A_CA_SEND, A2A_CA_RECV, A2A_CA_COUNT, A2A_CA_DTYPE,
                   A2A_CA_COMM, A2A_CA_STREAM))

A2A_PUBLIC ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count,
                                   ncclDataType_t datatype, int root, ncclComm_t comm,
                                   cudaStream_t stream)
    A2A_COLL_WRAP(ncclGather, A2A_COLL_GATHER, sendbuff, recvbuff, count, datatype, -1, root,
                  (A2A_CA_SEND, A2A_CA_RECV, A2A_CA_COUNT, A2A_CA_DTYPE,
                   A2A_CA_ROOT, A2A_CA_COMM, A2A_CA_STREAM))

A2A_PUBLIC ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count,
                                    ncclDataType_t datatype, int root, ncclComm_t comm,
                                    cudaStream_t stream)
    A2A_COLL_WRAP(ncclScatter, A2A_COLL_SCATTER, sendbuff, recvbuff, count, datatype, -1, root,
                  (A2A_CA_SEND, A2A_CA_RECV, A2A_CA_COUNT, A2A_CA_DTYPE,
                   A2A_CA_ROOT, A2A_CA_COMM, A2A_CA_STREAM))

/* ------------------------------------------------------------------ */
/* Point to point */

/* The grouped operations, ncclSend and ncclRecv (is_send_ 1 or 0, buff_
 * the buffer's parameter, the others named as in nccl.h): their
 * operation's members (u.p2p), communicator and stream are stored into
 * the event first, from the argument registers, and every later use of an
 * argument - the pass-through, the real call - reads it back from there
 * (A2A_P2P_ARGS), so that no argument stays live across the wrapper's
 * calls: no spill at the entry and reload at the real call, no
 * callee-saved register for one. Exact: each member holds its argument
 * unchanged (u.p2p.dtype the enum's value as an int, the others in their
 * own types) and nothing writes them after - the head leaves the union
 * alone, as nccl_event_head_cs the comm and stream, and the handlers see
 * the event only as const a2a_event * (a2a_handler), which none casts
 * away; the runtime's calls before the first dispatch never have its
 * address. So the real function, called or passed through, gets the
 * application's arguments. */
#define A2A_P2P_ARGS(ev)                                                      \
  (ev).u.p2p.buff, (ev).u.p2p.count, (ncclDataType_t)(ev).u.p2p.dtype,        \
      (ev).u.p2p.peer, (ncclComm_t)(ev).comm, (cudaStream_t)(ev).stream
#define A2A_P2P_WRAP(name, is_send_, buff_)                                   \
  {                                                                           \
    a2a_event ev;                                                             \
    ev.u.p2p.is_send = (is_send_);                                            \
    ev.u.p2p.buff = (void *)(buff_);                                          \
    ev.u.p2p.count = count;                                                   \
    ev.u.p2p.dtype = (int)datatype;                                           \
    ev.u.p2p.peer = peer;                                                     \
    ev.comm = (void *)comm;                                                   \
    ev.stream = (void *)stream;                                               \
    A2A_PASS_THROUGH_UNLESS_ENTERED(name, A2A_P2P_ARGS(ev));                  \
    nccl_event_head_cs(&ev, A2A_EV_P2P, #name, __builtin_return_address(0)); \
    A2A_PRE_HOT(ev, A2A_EV_P2P, 0);                                           \
    ncclResult_t r = A2A_REAL(name)(A2A_P2P_ARGS(ev));                        \
    A2A_POST_BEGIN_NCCL(ev, r, A2A_EV_P2P);                                   \
    A2A_POST_END_HOT(ev, A2A_EV_P2P);                                         \
    return r;                                                                 \
  }

A2A_PUBLIC ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                 ncclComm_t comm, cudaStream_t stream)
    A2A_P2P_WRAP(ncclSend, 1, sendbuff)

A2A_PUBLIC ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
                                 ncclComm_t comm, cudaStream_t stream)
    A2A_P2P_WRAP(ncclRecv, 0, recvbuff)

/* ------------------------------------------------------------------ */
/* Groups */

/* Mirror NCCL's group depth (tls_group_depth, above) from the group calls
 * that reach NCCL through us, analyzed or passed through. NCCL decrements
 * its depth in ncclGroupEnd whenever it is positive, whatever the result. */
static void group_track(bool start, ncclResult_t r)
{
  if (start) {
    if (r == ncclSuccess && tls_group_depth++ == 0) tls_group_serial++;
  } else if (tls_group_depth > 0) {
    tls_group_depth--;
  }
}

/* A2A_EVENT_NCCL with the call site given (a wrapper's own return
 * address, handed to the out-of-line part that builds the event). */
#define A2A_EVENT_NCCL_AT(ev, evkind, apiname, pc_, comm_, stream_)           \
  a2a_event ev;                                                               \
  nccl_event_head(&ev, (evkind), (apiname), (pc_), (void *)(comm_), (stream_))

/* The group calls: NCCL's depth is mirrored (group_track) on the
 * pass-through path too, so a re-entered or pre-init call keeps it right.
 * An analyzed call is dispatched, both phases, with the row a2a_group_nested
 * chose at its PRE from the thread's count (a2a_rt_t.gdepth; a nested
 * call's rows reach only the analyzers that act on one), and its result
 * counted (a2a_group_count) before its POST (A2A_PRE_ROW and
 * A2A_POST_END_ROW: A2A_PRE_HOT's and A2A_POST_END_HOT's with the row);
 * after its PRE the analyzers that count nested calls have folded the
 * thread's kept level (a2a_group_kept_folded). A nested call that the
 * thread may keep (a2a_group_keepable: nccl-tests' per-device pairs) goes
 * without an event (A2A_GROUP_KEEP) - only in a process without CPython
 * (a2a_rt_py_off, as the quiet queries): an event's head interns its call
 * site (a2a_rt_py_site), which in a thread running Python makes a site
 * handle, and a kept call would leave every later handle numbered
 * differently.
 *
 * In three parts, so that a kept call pays for no event's frame. The
 * exported `name` tests first, while the runtime is READY and the thread
 * outside the tool, whether the call may be kept - the test the analyzed
 * path makes right after its entry (a2a_rt_enter_ready: the guard's test
 * and store, which it then makes itself), on the same thread-owned state -
 * and keeps it (A2A_GROUP_KEEP), errno untouched: neither the tests nor a
 * kept call write it, so the real call sees the application's and the
 * application the call's. Any other call: name##_event, the wrapper as
 * before, out of line, with the exported function's return address as its
 * call site (sim_: its simInfo, NULL for the others, which take none);
 * its own keep test, after its entry, then answers no (the same reads of
 * the same thread's state: only a core re-initialization, or a fork,
 * rewrites another thread's words), unless the runtime was not READY at
 * the first test. A kept start that failed: name##_failed, its dispatch. */
#define A2A_GROUP_WRAP(name, evkind, start_, simulate_, params, sim_, ...)    \
  __attribute__((noinline)) static ncclResult_t name##_failed(                \
      const void *a2a_pc_, ncclResult_t r, uint32_t d_)                       \
  {                                                                           \
    A2A_GROUP_FAILED(name, (evkind), (start_), (simulate_), a2a_pc_, r, d_);  \
  }                                                                           \
  __attribute__((noinline)) static ncclResult_t name##_event(                 \
      const void *a2a_pc_, ncclSimInfo_t *simInfo)                            \
  {                                                                           \
    (void)simInfo;                                                            \
    A2A_ERRNO_SAVE();                                                         \
    if (!a2a_rt_enter()) {                                                    \
      A2A_ERRNO = a2a_errno_;                                                 \
      ncclResult_t r = A2A_REAL(name)(__VA_ARGS__);                           \
      group_track((start_), r);                                               \
      return r;                                                               \
    }                                                                         \
    const uint32_t d_ = a2a_rt_t.gdepth;                                      \
    /* (The depth first: the outermost calls ask no thread index here.) */   \
    if (d_ >= ((start_) ? 1u : 2u) &&                                         \
        atomic_load_explicit(&a2a_rt_py_off, memory_order_relaxed) &&          \
        a2a_group_keepable((evkind), a2a_rt_thread_index(), d_))              \
      A2A_GROUP_KEEP(name, (evkind), (start_), d_, a2a_rt_thread_index(),     \
                     a2a_pc_, __VA_ARGS__);                                   \
    A2A_EVENT_NCCL_AT(ev, (evkind), #name, a2a_pc_, NULL, NULL);              \
    ev.u.group.simulate = (simulate_);                                        \
    if (__builtin_expect(a2a_group_nested(&ev, (evkind), d_), 0))             \
      A2A_GROUP_CALL(ev, (evkind), A2A_GROUP_NESTED_ROW(evkind), true,        \
                     (start_), name, __VA_ARGS__);                            \
    A2A_GROUP_CALL(ev, (evkind), (unsigned)(evkind), false, (start_), name,   \
                   __VA_ARGS__);                                              \
  }                                                                           \
  A2A_PUBLIC ncclResult_t name params                                         \
  {                                                                           \
    const uint32_t d_ = a2a_rt_t.gdepth;                                      \
    if (d_ >= ((start_) ? 1u : 2u) && a2a_rt_ready() && a2a_rt_t.depth == 0 && \
        atomic_load_explicit(&a2a_rt_py_off, memory_order_relaxed) &&          \
        a2a_group_keepable((evkind), a2a_rt_thread_index(), d_)) {            \
      a2a_rt_t.depth = 1; /* a2a_rt_enter_ready's store */                    \
      A2A_GROUP_KEEP(name, (evkind), (start_), d_, a2a_rt_thread_index(),     \
                     __builtin_return_address(0), __VA_ARGS__);               \
    }                                                                         \
    return name##_event(__builtin_return_address(0), (sim_));                 \
  }

/* An analyzed group call's dispatch with its row (a constant: either
 * branch's list address is one), the real call and the return; on the
 * nested rows (nested_, a constant), the only ones a call carrying a kept
 * level takes, the kept bit cleared after its PRE. */
#define A2A_GROUP_CALL(ev, evkind, row, nested_, start_, name, ...)           \
  do {                                                                        \
    A2A_PRE_ROW(ev, (evkind), (row));                                         \
    if (nested_) a2a_group_kept_folded(&ev);                                  \
    ncclResult_t r = A2A_REAL(name)(__VA_ARGS__);                             \
    A2A_POST_BEGIN_NCCL(ev, r, (evkind));                                     \
    A2A_GROUP_COUNT(r, (evkind), (start_));                                   \
    if (!(start_) && !(nested_)) awaited_group_end(&ev, r);                   \
    A2A_POST_END_ROW(ev, (evkind), (row));                                    \
    return r;                                                                 \
  } while (0)

#define A2A_GROUP_COUNT(r, evkind, start_)                                    \
  do {                                                                        \
    group_track((start_), (r));                                               \
    a2a_rt_t.gdepth = a2a_group_count(a2a_rt_t.gdepth, (evkind), (int)(r));   \
  } while (0)

/* A keepable nested call (d_ the thread's count before it, th_ its
 * index, pc_ its call site), the guard taken: the real call, then, when it
 * is kept (a2a_group_keep: not a start that failed), only the counts and
 * the seq its event would have had with the thread's activity, none of
 * which writes errno: the application sees errno as the call left it. (No
 * NCCL note: the thread's outermost start, an event, made it, and
 * a2a_rt_t.nccl_noted is never cleared.) A start that failed is dispatched
 * now (name##_failed: A2A_GROUP_FAILED). */
#define A2A_GROUP_KEEP(name, evkind, start_, d_, th_, pc_, ...)               \
  do {                                                                        \
    const uint32_t t_ = (th_);                                                \
    ncclResult_t r = A2A_REAL(name)(__VA_ARGS__);                             \
    if (__builtin_expect(a2a_group_keep((evkind), t_, (int)r), 1)) {          \
      a2a_group_keep_note(t_, a2a_rt_next_call_seq());                        \
      A2A_GROUP_COUNT(r, (evkind), (start_));                                 \
      a2a_rt_leave();                                                         \
      return r;                                                               \
    }                                                                         \
    return name##_failed((pc_), r, (d_));                                     \
  } while (0)

/* A keepable start that failed (its result r, d_ the thread's count before
 * it, pc_ its call site), right after its real call: dispatched, both
 * phases on its nested row (a keepable start is nested: a2a_group_keepable
 * tests a2a_group_nested's condition), its event made after the call - the
 * same event (a group event's head reads no state the call changes; the
 * seq is the next one either way, nothing between took one) with its PRE
 * after the call: the handlers see what they would have, as no other call
 * of the thread was dispatched between, and no analyzer's nested start PRE
 * depends on NCCL's state. errno is read first, as the call left it, and
 * restored at its PRE. */
#define A2A_GROUP_FAILED(name, evkind, start_, simulate_, pc_, r, d_)         \
  A2A_ERRNO_SAVE();                                                           \
  A2A_EVENT_NCCL_AT(ev, (evkind), #name, (pc_), NULL, NULL);                  \
  ev.u.group.simulate = (simulate_);                                          \
  (void)a2a_group_nested(&ev, (evkind), (d_));                                \
  A2A_PRE_ROW(ev, (evkind), A2A_GROUP_NESTED_ROW(evkind));                    \
  A2A_POST_BEGIN_NCCL(ev, r, (evkind));                                       \
  A2A_GROUP_COUNT(r, (evkind), (start_));                                     \
  A2A_POST_END_ROW(ev, (evkind), A2A_GROUP_NESTED_ROW(evkind));               \
  return r

A2A_GROUP_WRAP(ncclGroupStart, A2A_EV_GROUP_START, true, 0, (void), NULL, )
A2A_GROUP_WRAP(ncclGroupEnd, A2A_EV_GROUP_END, false, 0, (void), NULL, )

/* Simulates the end of the group (u.group.simulate tells it apart from
 * ncclGroupEnd); NCCL ends the group as ncclGroupEnd does. */
A2A_GROUP_WRAP(ncclGroupSimulateEnd, A2A_EV_GROUP_END, false, 1, (ncclSimInfo_t * simInfo),
               simInfo, simInfo)
