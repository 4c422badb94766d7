/* shim_wrap_test.c - Check suite for the wrappers (shim/wrap_nccl.c,
 * shim/wrap_cuda.c) and their contract with the runtime, without the
 * runtime: this program links the wrappers and resolve.c, and defines the
 * a2a_rt_* hooks and a2a_dispatch itself (recording every event). The
 * "real" NCCL and CUDA runtime are tests/e2e/shim_wrap_fake.c, loaded with
 * dlopen(RTLD_LOCAL). The program exports its symbols (ENABLE_EXPORTS), so
 * the fake's own PLT calls (ncclBcast -> ncclBroadcast) land in the wrappers,
 * as real NCCL's do under LD_PRELOAD.
 *   usage: shim_wrap_test <path of the fake library>
 */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "intercept.h"

/* ---- the runtime, faked --------------------------------------------- */

/* The runtime's inline guard (a2a_runtime.h) reads these: the state is
 * never READY here, so every call takes the slow path, which this fake
 * implements. */
_Atomic int a2a_rt_g_state = 0;
_Atomic uint64_t a2a_rt_ready_kinds = 0; /* not READY: nothing */
A2A_RT_TLS a2a_rt_thread a2a_rt_t = {.index = 1};
static bool enabled = true;
static int nccl_calls, unresolved_calls;

bool a2a_rt_enter_slow(void)
{
  errno = EAGAIN; /* the wrapper must hide what the runtime does to errno */
  if (!enabled || a2a_rt_t.depth) return false;
  a2a_rt_t.depth = 1;
  return true;
}
uint32_t a2a_rt_thread_index_slow(void) { return 1; }
/* Never sets a2a_rt_t.nccl_noted: every NCCL call comes here. */
void a2a_rt_note_nccl_call_slow(void) { nccl_calls++; }
/* The runtime's Python call sites (shim/rt_python.c): no Python here; the
 * wrapper must hide errno changes of this too. */
_Atomic bool a2a_rt_py_off; /* false: the wrappers call the slow path below */
const void *a2a_rt_py_site_slow(const void *pc) { errno = EAGAIN; return pc; }
void a2a_rt_unresolved(const char *symbol, const char *library) { unresolved_calls++; }
/* cudaLaunchHostFunc's trampoline (shim/rt_hostfn.c): never taken here, so
 * the wrapper enqueues the application's function as given. */
a2a_rt_hostfn *a2a_rt_hostfn_take(void *stream, int per_thread, void (*fn)(void *), void *user)
{
  return NULL;
}
void a2a_rt_hostfn_run(void *slot) {}
a2a_rt_hostfn *a2a_rt_hostcb_take(void *stream, int per_thread,
                                  void (*cb)(cudaStream_t, cudaError_t, void *), void *user)
{
  return NULL;
}
void a2a_rt_hostcb_run(cudaStream_t stream, cudaError_t status, void *slot) {}
void a2a_rt_hostfn_posted(a2a_rt_hostfn *h, bool enqueued) {}

enum { MAX_EVENTS = 64 };
static a2a_event events[MAX_EVENTS];
static int nevents;

/* The dispatch table the wrappers' inline dispatch reads: one recorder for
 * every (phase, kind). */
static void record_event(const a2a_event *ev)
{
  if (nevents < MAX_EVENTS) events[nevents++] = *ev;
  errno = EIO; /* analyzers may clobber errno: the application must not see it */
}
_Atomic(a2a_handler) a2a_handlers[2][A2A_ROWS][A2A_MAX_HANDLERS + 1];
_Atomic bool a2a_dispatch_ready = true;
bool a2a_activity_on = false;
uint32_t a2a_activity_threads = 0;
_Atomic uint64_t a2a_kinds_wanted = ~0ull;
void a2a_note_activity(const a2a_event *ev) { (void)ev; }
a2a_activity a2a_activity_tab[A2A_ACTIVITY_THREADS];
void a2a_run_flush(uint32_t thread) { (void)thread; }
void a2a_dispatch_list(_Atomic(a2a_handler) *h, const a2a_event *ev)
{
  for (a2a_handler f; (f = atomic_load(h)) != NULL; h++) f(ev);
}
const _Atomic unsigned a2a_gate_none;
a2a_hot_row a2a_hot_rows[2][A2A_ROWS]; /* none gated */
/* The communicator registry's memo and the quiet kinds (a2a_comm_quiet):
 * no kind quiet but in quiet_query_makes_no_event, which fills the memo. */
uint64_t a2a_comm_quiet_kinds;
/* Keeping nested group calls (a2a_group_keepable): on only in
 * kept_nested_group_makes_no_event. */
bool a2a_group_keep_on;
_Atomic unsigned a2a_comm_ver = 7;
_Thread_local a2a_comm_memo a2a_comm_last;
_Atomic(a2a_handler) a2a_launch_quiet[A2A_LIST_LEN];
__attribute__((constructor)) static void install_recorder(void)
{
  for (int ph = 0; ph < 2; ph++)
    for (int k = 0; k < A2A_ROWS; k++) {
      atomic_store(&a2a_handlers[ph][k][0], record_event);
      for (unsigned sel = 0; sel < A2A_GATE_SELS; sel++)
        atomic_store(&a2a_hot_rows[ph][k].sel[sel][0], record_event);
      for (int d = 0; d < A2A_MAX_GATES; d++) a2a_hot_rows[ph][k].gate[d] = &a2a_gate_none;
    }
  atomic_store(&a2a_launch_quiet[0], record_event);
}
void a2a_dispatch(const a2a_event *ev) { record_event(ev); }

/* ---- the fake library's bookkeeping --------------------------------- */

typedef struct fake_state {
  int send_calls, broadcast_calls, bcast_calls;
  int errno_at_entry;        /* errno the last ncclSend/cudaMalloc saw */
  int last_set_device;
  int current_device;        /* what cudaGetDevice answers (the context's) */
  int get_device_calls, get_device_fails;
  int last_error;            /* the thread's CUDA "last error" */
  int group_start_fail;      /* nonzero: what ncclGroupStart returns */
  int group_inner;           /* the group calls poll an async error (PLT) */
  int group_calls;           /* group calls made (any of the three) */
  /* The arguments the last ncclSend or ncclRecv got. */
  const void *p2p_buff;
  size_t p2p_count;
  int p2p_dtype, p2p_peer;
  void *p2p_comm, *p2p_stream;
  /* The arguments the last ncclBroadcast, ncclAllReduce or ncclReduce
   * got (op or root -1 when it takes none). */
  const void *coll_send;
  void *coll_recv;
  size_t coll_count;
  int coll_dtype, coll_op, coll_root;
  void *coll_comm, *coll_stream;
} fake_state;

static const char *fake_path;
static fake_state *fake;

static void setup(void)
{
  void *h = dlopen(fake_path, RTLD_NOW | RTLD_LOCAL);
  ck_assert_msg(h != NULL, "dlopen(%s): %s", fake_path, dlerror());
  fake_state *(*get)(void) = (fake_state * (*)(void)) dlsym(h, "fake_state_get");
  ck_assert_ptr_nonnull(get);
  fake = get();
}

/* A function with a dynamic symbol, so the call site can be named. */
__attribute__((noinline)) ncclResult_t shim_test_call_send(ncclComm_t comm);
__attribute__((noinline)) ncclResult_t shim_test_call_send(ncclComm_t comm)
{
  static float buf[16];
  ncclResult_t r = ncclSend(buf, 16, ncclFloat, 3, comm, (cudaStream_t)0x77);
  __asm__ volatile("" ::: "memory"); /* keep the call out of tail position */
  return r;
}

__attribute__((noinline)) ncclResult_t shim_test_call_gstart(void);
__attribute__((noinline)) ncclResult_t shim_test_call_gstart(void)
{
  ncclResult_t r = ncclGroupStart();
  __asm__ volatile("" ::: "memory");
  return r;
}

__attribute__((noinline)) ncclResult_t shim_test_call_count(ncclComm_t comm, int *n);
__attribute__((noinline)) ncclResult_t shim_test_call_count(ncclComm_t comm, int *n)
{
  ncclResult_t r = ncclCommCount(comm, n);
  __asm__ volatile("" ::: "memory");
  return r;
}

__attribute__((noinline)) ncclResult_t shim_test_call_async(ncclComm_t comm, ncclResult_t *e);
__attribute__((noinline)) ncclResult_t shim_test_call_async(ncclComm_t comm, ncclResult_t *e)
{
  ncclResult_t r = ncclCommGetAsyncError(comm, e);
  __asm__ volatile("" ::: "memory");
  return r;
}

__attribute__((noinline)) cudaError_t shim_test_call_squery(cudaStream_t s);
__attribute__((noinline)) cudaError_t shim_test_call_squery(cudaStream_t s)
{
  cudaError_t r = cudaStreamQuery(s);
  __asm__ volatile("" ::: "memory");
  return r;
}

__attribute__((noinline)) cudaError_t shim_test_call_equery(cudaEvent_t e);
__attribute__((noinline)) cudaError_t shim_test_call_equery(cudaEvent_t e)
{
  cudaError_t r = cudaEventQuery(e);
  __asm__ volatile("" ::: "memory");
  return r;
}

/* Leaves the stack below the caller's frame filled with 0xa5, so that a
 * field a hot wrapper (A2A_EVENT_HOT: no zeroing) forgot to fill shows. */
__attribute__((noinline)) static void poison_stack(void)
{
  volatile unsigned char junk[4096];
  memset((void *)junk, 0xa5, sizeof junk);
  __asm__ volatile("" ::"r"(junk) : "memory");
}

/* The fields every NCCL query or async-error event carries (the hot
 * wrappers fill them without zeroing the event: A2A_EVENT_HOT). */
static void check_query_event(const a2a_event *e, a2a_kind kind, const char *api, void *comm,
                              a2a_phase phase, const char *site)
{
  ck_assert_int_eq(e->kind, kind);
  ck_assert_str_eq(e->api, api);
  ck_assert_int_eq(e->phase, phase);
  ck_assert_ptr_eq(e->comm, comm);
  ck_assert_ptr_null(e->stream);
  ck_assert_int_eq(e->per_thread, 0);
  ck_assert_int_eq(e->thread, 1);
  ck_assert_int_eq(e->device, 0);
  ck_assert(e->t_ns == 0); /* not timed (a2a_event.h) */
  if (site) {
    Dl_info info;
    ck_assert(dladdr(e->callsite, &info));
    ck_assert_str_eq(info.dli_sname, site);
  }
}

/* The four events of a call on comm that succeeded, then one on NULL that
 * NCCL refused (ncclInvalidArgument), both made from `site`: the fields,
 * and the result, ok and in_progress as a2a_event_set_result gives them. */
static void check_ok_then_refused(a2a_kind kind, const char *api, void *comm, const char *site)
{
  ck_assert_int_eq(nevents, 4);
  for (int i = 0; i < 4; i++)
    check_query_event(&events[i], kind, api, i < 2 ? comm : NULL, i & 1 ? A2A_POST : A2A_PRE,
                      site);
  ck_assert_int_eq(events[1].result, ncclSuccess);
  ck_assert_int_eq(events[1].ok, 1);
  ck_assert_int_eq(events[1].in_progress, 0);
  ck_assert_int_eq(events[3].result, ncclInvalidArgument);
  ck_assert_int_eq(events[3].ok, 0);
  ck_assert_int_eq(events[3].in_progress, 0);
  ck_assert_uint_eq(events[0].seq + 1, events[2].seq); /* one seq per call */
  ck_assert_int_eq(nccl_calls, 2);
}

/* ---- tests ------------------------------------------------------------ */

START_TEST(send_event_fields_and_callsite)
{
  ncclComm_t comm = (ncclComm_t)0x5000;
  ck_assert_int_eq(shim_test_call_send(comm), ncclSuccess);
  ck_assert_int_eq(nevents, 2);
  ck_assert_int_eq(events[0].phase, A2A_PRE);
  ck_assert_int_eq(events[1].phase, A2A_POST);
  for (int i = 0; i < 2; i++) {
    const a2a_event *e = &events[i];
    ck_assert_int_eq(e->kind, A2A_EV_P2P);
    ck_assert_str_eq(e->api, "ncclSend");
    ck_assert_ptr_eq(e->comm, comm);
    ck_assert_ptr_eq(e->stream, (void *)0x77);
    ck_assert_int_eq(e->u.p2p.is_send, 1);
    ck_assert_int_eq(e->u.p2p.count, 16);
    ck_assert_int_eq(e->u.p2p.dtype, ncclFloat);
    ck_assert_int_eq(e->u.p2p.peer, 3);
    ck_assert_int_eq(e->thread, 1);
    ck_assert_int_eq(e->device, 0);
    Dl_info info;
    ck_assert(dladdr(e->callsite, &info));
    ck_assert_str_eq(info.dli_sname, "shim_test_call_send");
  }
  /* NCCL operations are not timed (a2a_event.h: t_ns 0). */
  ck_assert(events[0].t_ns == 0 && events[1].t_ns == 0);
  ck_assert_int_eq(events[1].result, ncclSuccess);
  ck_assert_int_eq(nccl_calls, 1);
}
END_TEST

/* The operation and group wrappers fill their event's union member
 * themselves (A2A_EVENT_HOT) and derive ok / in_progress from the result
 * with their kind known (A2A_POST_BEGIN_NCCL): the values
 * a2a_event_set_result gives, ncclInProgress included. */
START_TEST(recv_and_group_events_and_results)
{
  static float buf[4];
  ck_assert_int_eq(ncclGroupStart(), ncclSuccess);
  ck_assert_int_eq(ncclRecv(buf, 4, ncclInt32, 2, (ncclComm_t)0x5000, NULL), ncclSuccess);
  ck_assert_int_eq(ncclRecv(buf, 4, ncclInt32, 2, (ncclComm_t)0x7, NULL), ncclInProgress);
  ck_assert_int_eq(ncclRecv(buf, 4, ncclInt32, 2, NULL, NULL), ncclInvalidArgument);
  ck_assert_int_eq(ncclGroupEnd(), ncclSuccess);
  ck_assert_int_eq(nevents, 10);
  static const int want_result[3] = {ncclSuccess, ncclInProgress, ncclInvalidArgument};
  static const int want_ok[3] = {1, 1, 0}, want_in_progress[3] = {0, 1, 0};
  for (int i = 0; i < 3; i++) {
    const a2a_event *pre = &events[2 + 2 * i], *post = &events[3 + 2 * i];
    for (int k = 0; k < 2; k++) {
      const a2a_event *e = k ? post : pre;
      ck_assert_int_eq(e->kind, A2A_EV_P2P);
      ck_assert_int_eq(e->u.p2p.is_send, 0);
      ck_assert_ptr_eq(e->u.p2p.buff, buf);
      ck_assert_int_eq(e->u.p2p.count, 4);
      ck_assert_int_eq(e->u.p2p.dtype, ncclInt32);
      ck_assert_int_eq(e->u.p2p.peer, 2);
      ck_assert_int_eq(e->per_thread, 0);
    }
    ck_assert_int_eq(post->result, want_result[i]);
    ck_assert_int_eq(post->ok, want_ok[i]);
    ck_assert_int_eq(post->in_progress, want_in_progress[i]);
  }
  for (int i = 0; i < 2; i++) {
    const a2a_event *pre = &events[i ? 8 : 0], *post = &events[i ? 9 : 1];
    ck_assert_int_eq(pre->kind, i ? A2A_EV_GROUP_END : A2A_EV_GROUP_START);
    ck_assert_int_eq(pre->u.group.simulate, 0);
    ck_assert_int_eq(post->u.group.simulate, 0);
    ck_assert_ptr_null(post->comm);
    ck_assert_int_eq(post->ok, 1);
    ck_assert_int_eq(post->in_progress, 0);
  }
}
END_TEST

/* A communicator query (the hot wrapper A2A_COMM_QUERY_WRAP): one event
 * per phase with the communicator and the caller's site, the result and
 * ok as a2a_event_set_result gives them, the out-parameter, NCCL's return
 * value and errno as the library left it. */
START_TEST(query_events_fields_and_results)
{
  int n = 0;
  errno = 41;
  ck_assert_int_eq(shim_test_call_count((ncclComm_t)0x5000, &n), ncclSuccess);
  ck_assert_int_eq(fake->errno_at_entry, 41);
  ck_assert_int_eq(errno, 1235);
  ck_assert_int_eq(n, 3);
  errno = 42;
  ck_assert_int_eq(shim_test_call_count(NULL, &n), ncclInvalidArgument);
  ck_assert_int_eq(fake->errno_at_entry, 42);
  ck_assert_int_eq(errno, 1235);
  check_ok_then_refused(A2A_EV_COMM_QUERY, "ncclCommCount", (void *)0x5000,
                        "shim_test_call_count");
  /* The others of the same body. */
  ck_assert_int_eq(ncclCommUserRank((ncclComm_t)0x5000, &n), ncclSuccess);
  ck_assert_int_eq(n, 1);
  check_query_event(&events[5], A2A_EV_COMM_QUERY, "ncclCommUserRank", (void *)0x5000, A2A_POST,
                    NULL);
  ck_assert_int_eq(ncclCommCuDevice((ncclComm_t)0x5000, &n), ncclSuccess);
  ck_assert_int_eq(n, 5);
  check_query_event(&events[7], A2A_EV_COMM_QUERY, "ncclCommCuDevice", (void *)0x5000, A2A_POST,
                    NULL);
  ck_assert_int_eq(nevents, 8);
}
END_TEST

/* ncclCommGetAsyncError (the analyzed call behind its pass-through front):
 * the error it wrote at POST (-1 when the call failed), 0 at PRE. */
START_TEST(async_error_events_fields_and_results)
{
  ncclResult_t a = ncclSuccess;
  errno = 43;
  ck_assert_int_eq(shim_test_call_async((ncclComm_t)0x5006, &a), ncclSuccess);
  ck_assert_int_eq(fake->errno_at_entry, 43);
  ck_assert_int_eq(errno, 1236);
  ck_assert_int_eq(a, ncclRemoteError); /* 6 */
  errno = 44;
  ck_assert_int_eq(shim_test_call_async(NULL, &a), ncclInvalidArgument);
  ck_assert_int_eq(errno, 1236);
  check_ok_then_refused(A2A_EV_COMM_ASYNC_ERROR, "ncclCommGetAsyncError", (void *)0x5006,
                        "shim_test_call_async");
  ck_assert_int_eq(events[0].u.async_err.async_error, 0);
  ck_assert_int_eq(events[1].u.async_err.async_error, ncclRemoteError);
  ck_assert_int_eq(events[3].u.async_err.async_error, -1);
}
END_TEST

/* A query the core says is quiet (a2a_comm_quiet: the kind in
 * a2a_comm_quiet_kinds, the thread's memo holding the communicator's
 * record, active) is forwarded without an event, with the rest of the
 * analyzed path kept: the call's seq taken, its activity stored (both
 * seqs, the repeated-launch mark cleared), the NCCL call noted, the guard
 * entered and left, NCCL's result and out-parameter, errno as the
 * application had it for NCCL and as NCCL left it after. Any other - a
 * record not active, a handle the memo does not hold, another version, a
 * kind not quiet, a guard already entered - makes its events. */
START_TEST(quiet_query_makes_no_event)
{
  atomic_store(&a2a_rt_g_state, A2A_RT_STATE_READY);
  atomic_store(&a2a_rt_ready_kinds, ~0ull);
  atomic_store(&a2a_rt_py_off, true);
  a2a_activity_threads = A2A_ACTIVITY_THREADS;
  a2a_comm rec = {.handle = (void *)0x5000};
  atomic_store(&rec.state, A2A_COMM_ACTIVE);
  a2a_comm_last.handle = (void *)0x5000;
  a2a_comm_last.rec = &rec;
  a2a_comm_last.ver = atomic_load(&a2a_comm_ver);
  a2a_comm_quiet_kinds = A2A_KIND_BIT(A2A_EV_COMM_QUERY);
  a2a_activity *a = &a2a_activity_tab[1];
  a->quiet = 9;
  uint32_t seq = a2a_rt_t.call_seq;
  int n = 0, calls = nccl_calls;
  errno = 46;
  ck_assert_int_eq(shim_test_call_count((ncclComm_t)0x5000, &n), ncclSuccess);
  ck_assert_int_eq(fake->errno_at_entry, 46);
  ck_assert_int_eq(errno, 1235);
  ck_assert_int_eq(n, 3);
  ck_assert_int_eq(nevents, 0);
  ck_assert_uint_eq(a2a_rt_t.call_seq, seq + 1);
  ck_assert_uint_eq(atomic_load(&a->last_seq), seq + 1);
  ck_assert_uint_eq(atomic_load(&a->last_other_seq), seq + 1);
  ck_assert_uint_eq(a->quiet, 0);
  ck_assert_int_eq(nccl_calls, calls + 1);
  ck_assert_int_eq(a2a_rt_t.depth, 0);
  ck_assert_int_eq(ncclCommUserRank((ncclComm_t)0x5000, &n), ncclSuccess);
  ck_assert_int_eq(n, 1);
  ck_assert_int_eq(nevents, 0);
  ck_assert_uint_eq(a2a_rt_t.call_seq, seq + 2);
  /* Destroyed since: the state is read at every call. */
  atomic_store(&rec.state, A2A_COMM_DESTROYED);
  ck_assert_int_eq(shim_test_call_count((ncclComm_t)0x5000, &n), ncclSuccess);
  ck_assert_int_eq(nevents, 2);
  check_query_event(&events[0], A2A_EV_COMM_QUERY, "ncclCommCount", (void *)0x5000, A2A_PRE,
                    "shim_test_call_count");
  ck_assert_uint_eq(events[0].seq, seq + 3);
  atomic_store(&rec.state, A2A_COMM_ACTIVE);
  /* A handle the memo does not hold (NULL included), another version. */
  ck_assert_int_eq(ncclCommCount((ncclComm_t)0x5001, &n), ncclSuccess);
  ck_assert_int_eq(ncclCommCount(NULL, &n), ncclInvalidArgument);
  ck_assert_int_eq(nevents, 6);
  atomic_fetch_add(&a2a_comm_ver, 1);
  ck_assert_int_eq(ncclCommCount((ncclComm_t)0x5000, &n), ncclSuccess);
  ck_assert_int_eq(nevents, 8);
  a2a_comm_last.ver = atomic_load(&a2a_comm_ver);
  ck_assert_int_eq(ncclCommCount((ncclComm_t)0x5000, &n), ncclSuccess);
  ck_assert_int_eq(nevents, 8);
  /* Not a quiet kind; a Python process (call sites to walk). */
  a2a_comm_quiet_kinds = 0;
  ck_assert_int_eq(ncclCommCount((ncclComm_t)0x5000, &n), ncclSuccess);
  ck_assert_int_eq(nevents, 10);
  a2a_comm_quiet_kinds = A2A_KIND_BIT(A2A_EV_COMM_QUERY);
  atomic_store(&a2a_rt_py_off, false);
  ck_assert_int_eq(ncclCommCount((ncclComm_t)0x5000, &n), ncclSuccess);
  ck_assert_int_eq(nevents, 12);
  atomic_store(&a2a_rt_py_off, true);
  /* Inside an intercepted call: passed through, no seq taken. */
  seq = a2a_rt_t.call_seq;
  a2a_rt_t.depth = 1;
  ck_assert_int_eq(ncclCommCount((ncclComm_t)0x5000, &n), ncclSuccess);
  ck_assert_int_eq(a2a_rt_t.depth, 1);
  a2a_rt_t.depth = 0;
  ck_assert_uint_eq(a2a_rt_t.call_seq, seq);
  ck_assert_int_eq(nevents, 12);
  a2a_comm_quiet_kinds = 0;
  a2a_activity_threads = 0;
  atomic_store(&a2a_rt_py_off, false);
  atomic_store(&a2a_rt_ready_kinds, 0);
  atomic_store(&a2a_rt_g_state, 0);
}
END_TEST

/* A nested group pair that the thread keeps (A2A_GROUP_KEEP: a process
 * without CPython, a keepable call - a2a_group_keepable: nested, no veto,
 * no level kept for the start, the level kept and the thread not busy for
 * the end): the real call and no event, yet the seq its event would have
 * had is taken and the thread's activity stored as the dispatch would
 * (a2a_group_keep_note), errno as the call left it, the guard left. The
 * fake's group calls poll an async error through the PLT: passed through.
 * A nested start that fails is dispatched after the call (both phases,
 * the next seq); a nested ncclGroupSimulateEnd is kept as an end. */
static void check_kept_group_call(ncclResult_t (*call)(void), int app_errno, uint32_t seq,
                                  uint32_t gdepth, uint32_t gkeep, int events_before)
{
  a2a_activity *a = &a2a_activity_tab[1];
  a->quiet = 9;
  atomic_store(&a->last_seq, 0);
  atomic_store(&a->last_other_seq, 0);
  int calls = fake->group_calls;
  errno = app_errno;
  ck_assert_int_eq(call(), ncclSuccess);
  ck_assert_int_eq(errno, 1239); /* the library's */
  ck_assert_int_eq(fake->errno_at_entry, app_errno);
  ck_assert_int_eq(fake->group_calls, calls + 1);
  ck_assert_int_eq(nevents, events_before);
  ck_assert_uint_eq(a2a_rt_t.call_seq, seq);
  ck_assert_uint_eq(atomic_load(&a->last_seq), seq);
  ck_assert_uint_eq(atomic_load(&a->last_other_seq), seq);
  ck_assert_uint_eq(a->quiet, 0);
  ck_assert_int_eq(a2a_rt_t.depth, 0);
  ck_assert_uint_eq(a2a_rt_t.gdepth, gdepth);
  ck_assert_uint_eq(atomic_load(&a->gkeep), gkeep);
}
static ncclResult_t simulate_end(void) { return ncclGroupSimulateEnd(NULL); }

/* The PRE and POST of a dispatched group call, at events[i]. */
static void check_group_events(int i, a2a_kind kind, uint32_t seq, int depth, int simulate,
                               ncclResult_t result)
{
  for (int k = 0; k < 2; k++) {
    const a2a_event *e = &events[i + k];
    ck_assert_int_eq(e->kind, kind);
    ck_assert_int_eq(e->phase, k ? A2A_POST : A2A_PRE);
    ck_assert_uint_eq(e->seq, seq);
    ck_assert_int_eq(e->u.group.depth, depth);
    ck_assert_int_eq(e->u.group.kept, 0);
    ck_assert_int_eq(e->u.group.simulate, simulate);
  }
  ck_assert_int_eq(events[i + 1].result, result);
}

START_TEST(kept_nested_group_makes_no_event)
{
  atomic_store(&a2a_rt_g_state, A2A_RT_STATE_READY);
  atomic_store(&a2a_rt_ready_kinds, ~0ull);
  atomic_store(&a2a_rt_py_off, true);
  a2a_activity_threads = A2A_ACTIVITY_THREADS;
  a2a_group_keep_on = true;
  fake->group_inner = 1;
  const uint32_t seq = a2a_rt_t.call_seq;
  /* The outer start: dispatched. */
  errno = 45;
  ck_assert_int_eq(ncclGroupStart(), ncclSuccess);
  ck_assert_int_eq(errno, 1239);
  ck_assert_int_eq(nevents, 2);
  check_group_events(0, A2A_EV_GROUP_START, seq + 1, 0, 0, ncclSuccess);
  ck_assert_int_eq(a2a_rt_t.depth, 0);
  /* The nested pair: kept, one seq each. */
  check_kept_group_call(ncclGroupStart, 46, seq + 2, 2, 2 | A2A_GROUP_KEPT, 2);
  check_kept_group_call(ncclGroupEnd, 47, seq + 3, 1, 2, 2);
  /* The outer end: dispatched, with the seq after the kept pair's. */
  errno = 48;
  ck_assert_int_eq(ncclGroupEnd(), ncclSuccess);
  ck_assert_int_eq(errno, 1239);
  ck_assert_int_eq(fake->errno_at_entry, 48);
  ck_assert_int_eq(nevents, 4);
  check_group_events(2, A2A_EV_GROUP_END, seq + 4, 1, 0, ncclSuccess);
  ck_assert_int_eq(a2a_rt_t.depth, 0);
  ck_assert_uint_eq(a2a_rt_t.gdepth, 0);
  /* A nested start that fails: dispatched after the call, the next seq,
   * its call site the caller's (as the outer start's). */
  ck_assert_int_eq(shim_test_call_gstart(), ncclSuccess);
  fake->group_start_fail = ncclInvalidUsage;
  errno = 49;
  ck_assert_int_eq(shim_test_call_gstart(), ncclInvalidUsage);
  fake->group_start_fail = 0;
  ck_assert_int_eq(errno, 1239);
  ck_assert_int_eq(fake->errno_at_entry, 49);
  ck_assert_int_eq(nevents, 8);
  check_group_events(6, A2A_EV_GROUP_START, seq + 6, 1, 0, ncclInvalidUsage);
  for (int i = 4; i < 8; i++) {
    Dl_info info;
    ck_assert(dladdr(events[i].callsite, &info));
    ck_assert_str_eq(info.dli_sname, "shim_test_call_gstart");
  }
  ck_assert_int_eq(a2a_rt_t.depth, 0);
  ck_assert_uint_eq(a2a_rt_t.gdepth, 1);
  ck_assert_uint_eq(atomic_load(&a2a_activity_tab[1].gkeep), 2); /* left no level */
  /* A nested ncclGroupSimulateEnd ends the kept level as ncclGroupEnd. */
  check_kept_group_call(ncclGroupStart, 50, seq + 7, 2, 4 | A2A_GROUP_KEPT, 8);
  check_kept_group_call(simulate_end, 51, seq + 8, 1, 4, 8);
  ck_assert_int_eq(ncclGroupSimulateEnd(NULL), ncclSuccess);
  ck_assert_int_eq(nevents, 10);
  check_group_events(8, A2A_EV_GROUP_END, seq + 9, 1, 1, ncclSuccess);
  ck_assert_uint_eq(a2a_rt_t.gdepth, 0);
  /* Inside an analyzed call (the guard set: NCCL's own group calls), a
   * nested pair that could be kept is forwarded: no seq, no count. */
  ck_assert_int_eq(ncclGroupStart(), ncclSuccess);
  const uint32_t seq_in = a2a_rt_t.call_seq, gkeep_in = atomic_load(&a2a_activity_tab[1].gkeep);
  a2a_rt_t.depth = 1;
  ck_assert_int_eq(ncclGroupStart(), ncclSuccess);
  ck_assert_int_eq(ncclGroupEnd(), ncclSuccess);
  ck_assert_int_eq(a2a_rt_t.depth, 1);
  a2a_rt_t.depth = 0;
  ck_assert_uint_eq(a2a_rt_t.call_seq, seq_in);
  ck_assert_uint_eq(a2a_rt_t.gdepth, 1);
  ck_assert_uint_eq(atomic_load(&a2a_activity_tab[1].gkeep), gkeep_in);
  ck_assert_int_eq(ncclGroupEnd(), ncclSuccess);
  ck_assert_int_eq(nevents, 14);
  ck_assert_uint_eq(a2a_rt_t.gdepth, 0);
  /* In a Python process: every nested call dispatched. */
  atomic_store(&a2a_rt_py_off, false);
  ck_assert_int_eq(ncclGroupStart(), ncclSuccess);
  ck_assert_int_eq(ncclGroupStart(), ncclSuccess);
  ck_assert_int_eq(ncclGroupEnd(), ncclSuccess);
  ck_assert_int_eq(ncclGroupEnd(), ncclSuccess);
  ck_assert_int_eq(nevents, 22);
  ck_assert_uint_eq(events[21].seq, seq + 15);
  /* An analyzer on the nested rows not written for kept levels
   * (a2a_group_keep_on false): every nested call dispatched. */
  atomic_store(&a2a_rt_py_off, true);
  a2a_group_keep_on = false;
  ck_assert_int_eq(ncclGroupStart(), ncclSuccess);
  ck_assert_int_eq(ncclGroupStart(), ncclSuccess);
  ck_assert_int_eq(ncclGroupEnd(), ncclSuccess);
  ck_assert_int_eq(ncclGroupEnd(), ncclSuccess);
  ck_assert_int_eq(nevents, 30);
  ck_assert_uint_eq(events[29].seq, seq + 19);
  ck_assert_uint_eq(atomic_load(&a2a_activity_tab[1].gkeep), 4); /* nothing kept */
  fake->group_inner = 0;
  a2a_activity_threads = 0;
  atomic_store(&a2a_rt_ready_kinds, 0);
  atomic_store(&a2a_rt_g_state, 0);
}
END_TEST

/* A query or async-error poll of a kind no analyzer handles is forwarded
 * without an event (A2A_PASS_THROUGH_UNLESS_WANTED), unchanged. */
START_TEST(unwanted_query_kinds_pass_through)
{
  atomic_store(&a2a_kinds_wanted,
               ~(A2A_KIND_BIT(A2A_EV_COMM_QUERY) | A2A_KIND_BIT(A2A_EV_COMM_ASYNC_ERROR)));
  int n = 0;
  ncclResult_t a = ncclSuccess;
  errno = 45;
  ck_assert_int_eq(ncclCommCount((ncclComm_t)0x5000, &n), ncclSuccess);
  ck_assert_int_eq(fake->errno_at_entry, 45);
  ck_assert_int_eq(errno, 1235);
  ck_assert_int_eq(n, 3);
  ck_assert_int_eq(ncclCommGetAsyncError((ncclComm_t)0x5005, &a), ncclSuccess);
  ck_assert_int_eq(a, 5);
  ck_assert_int_eq(errno, 1236);
  ck_assert_int_eq(nevents, 0);
  ck_assert_int_eq(a2a_rt_t.depth, 0); /* the guard was left */
  atomic_store(&a2a_kinds_wanted, ~0ull);
  ck_assert_int_eq(ncclCommCount((ncclComm_t)0x5000, &n), ncclSuccess);
  ck_assert_int_eq(nevents, 2);
}
END_TEST

/* The polling queries (A2A_POLL_QUERY_WRAP): one event per phase, with the
 * stream (per_thread for the _ptsz twin) or the event, the caller's site,
 * no time (t_ns 0: hot calls, a2a_event.h), result and ok as
 * a2a_event_set_result gives them for cudaSuccess and cudaErrorNotReady,
 * the runtime's answer and errno as it left it; an event query's u.event
 * with event2 NULL and flags 0 as the zeroed event had them. */
static void check_poll_event(const a2a_event *e, a2a_kind kind, const char *api, a2a_phase phase,
                             void *stream, int per_thread, const char *site)
{
  ck_assert_int_eq(e->kind, kind);
  ck_assert_str_eq(e->api, api);
  ck_assert_int_eq(e->phase, phase);
  ck_assert_ptr_eq(e->stream, stream);
  ck_assert_int_eq(e->per_thread, per_thread);
  ck_assert_ptr_null(e->comm);
  ck_assert_int_eq(e->thread, 1);
  ck_assert_int_eq(e->device, 0);
  ck_assert_int_eq(e->in_progress, 0);
  ck_assert(e->t_ns == 0);
  if (phase == A2A_PRE) {
    ck_assert_int_eq(e->result, 0);
    ck_assert_int_eq(e->ok, 0);
  }
  if (site) {
    Dl_info info;
    ck_assert(dladdr(e->callsite, &info));
    ck_assert_str_eq(info.dli_sname, site);
  }
}

START_TEST(poll_query_events_fields_and_results)
{
  static const struct {
    cudaStream_t s;
    cudaEvent_t e;
    int want;
  } cases[] = {{(cudaStream_t)0x500, NULL, cudaSuccess},
               {(cudaStream_t)0x600, NULL, cudaErrorNotReady},
               {NULL, (cudaEvent_t)0xe500, cudaSuccess},
               {NULL, (cudaEvent_t)0xe600, cudaErrorNotReady}};
  for (int i = 0; i < 4; i++) {
    bool is_event = cases[i].e != NULL;
    poison_stack();
    errno = 50 + i;
    cudaError_t r = is_event ? shim_test_call_equery(cases[i].e) : shim_test_call_squery(cases[i].s);
    ck_assert_int_eq(r, cases[i].want);
    ck_assert_int_eq(fake->errno_at_entry, 50 + i);
    ck_assert_int_eq(errno, is_event ? 1238 : 1237);
    ck_assert_int_eq(nevents, 2 * i + 2);
    for (int ph = 0; ph < 2; ph++) {
      const a2a_event *e = &events[2 * i + ph];
      check_poll_event(e, is_event ? A2A_EV_EVENT_QUERY : A2A_EV_STREAM_QUERY,
                       is_event ? "cudaEventQuery" : "cudaStreamQuery", ph ? A2A_POST : A2A_PRE,
                       is_event ? NULL : (void *)cases[i].s, 0,
                       is_event ? "shim_test_call_equery" : "shim_test_call_squery");
      if (is_event) {
        ck_assert_ptr_eq(e->u.event.event, (void *)cases[i].e);
        ck_assert_ptr_null(e->u.event.event2);
        ck_assert_uint_eq(e->u.event.flags, 0);
      }
    }
    ck_assert_int_eq(events[2 * i + 1].result, cases[i].want);
    ck_assert_int_eq(events[2 * i + 1].ok, cases[i].want == cudaSuccess);
    ck_assert_uint_eq(events[2 * i].seq, events[2 * i + 1].seq);
    if (i) ck_assert_uint_eq(events[2 * i - 2].seq + 1, events[2 * i].seq);
  }
  /* The per-thread-default-stream twin. */
  ck_assert_int_eq(cudaStreamQuery_ptsz((cudaStream_t)0x600), cudaErrorNotReady);
  check_poll_event(&events[9], A2A_EV_STREAM_QUERY, "cudaStreamQuery_ptsz", A2A_POST,
                   (void *)0x600, 1, NULL);
  ck_assert_int_eq(events[9].result, cudaErrorNotReady);
  ck_assert_int_eq(a2a_rt_t.depth, 0); /* the guard was left */
}
END_TEST

/* A polling query of a kind no analyzer handles is forwarded without an
 * event, its answer and errno unchanged. */
START_TEST(unwanted_poll_query_kinds_pass_through)
{
  atomic_store(&a2a_kinds_wanted,
               ~(A2A_KIND_BIT(A2A_EV_STREAM_QUERY) | A2A_KIND_BIT(A2A_EV_EVENT_QUERY)));
  errno = 60;
  ck_assert_int_eq(cudaStreamQuery((cudaStream_t)0x600), cudaErrorNotReady);
  ck_assert_int_eq(fake->errno_at_entry, 60);
  ck_assert_int_eq(errno, 1237);
  ck_assert_int_eq(cudaEventQuery((cudaEvent_t)0xe600), cudaErrorNotReady);
  ck_assert_int_eq(errno, 1238);
  ck_assert_int_eq(nevents, 0);
  ck_assert_int_eq(a2a_rt_t.depth, 0);
  atomic_store(&a2a_kinds_wanted, ~0ull);
  ck_assert_int_eq(cudaEventQuery((cudaEvent_t)0xe500), cudaSuccess);
  ck_assert_int_eq(nevents, 2);
}
END_TEST

/* Once the runtime is READY a hot wrapper decides with one load of
 * a2a_rt_ready_kinds (the kinds wanted, stored after READY): a wanted kind
 * is analyzed through the READY guard (a2a_rt_enter_ready, not the
 * runtime's slow path), an unwanted one forwarded. A 0 read - READY
 * stored, the kinds not yet - asks the state and the kinds apart, with
 * the same answers. */
START_TEST(ready_hot_wrappers_test_the_ready_kinds)
{
  atomic_store(&a2a_kinds_wanted, ~A2A_KIND_BIT(A2A_EV_STREAM_QUERY));
  atomic_store(&a2a_rt_g_state, A2A_RT_STATE_READY);
  enabled = false; /* the slow path would pass everything through */
  static float buf[4];
  float *p = buf;
  void *args[] = {&p};
  dim3 one = {1, 1, 1};
  for (int window = 0; window < 2; window++) {
    atomic_store(&a2a_rt_ready_kinds, window ? 0 : atomic_load(&a2a_kinds_wanted));
    nevents = 0;
    errno = 70;
    ck_assert_int_eq(cudaLaunchKernel((const void *)0x7000, one, one, args, 0, (cudaStream_t)0x700),
                     cudaSuccess);
    ck_assert_int_eq(errno, 70);
    ck_assert_int_eq(nevents, 2);
    ck_assert_int_eq(events[0].kind, A2A_EV_LAUNCH);
    ck_assert_ptr_eq(events[0].u.launch.func, (const void *)0x7000);
    ck_assert_ptr_eq(events[1].u.launch.args, args);
    ck_assert_ptr_eq(events[1].stream, (void *)0x700);
    ck_assert_int_eq(a2a_rt_t.depth, 0);
    ck_assert_int_eq(cudaStreamQuery((cudaStream_t)0x600), cudaErrorNotReady);
    ck_assert_int_eq(errno, 1237);
    ck_assert_int_eq(nevents, 2);
  }
  /* Another state than READY: the slow path decides (here: not enabled). */
  atomic_store(&a2a_rt_ready_kinds, 0);
  atomic_store(&a2a_rt_g_state, 3);
  ck_assert_int_eq(cudaLaunchKernel((const void *)0x7000, one, one, args, 0, NULL), cudaSuccess);
  ck_assert_int_eq(nevents, 2);
}
END_TEST

/* A hot wrapper forwards a kind that is off on one read of
 * a2a_rt_ready_kinds only when that read has the READY mark (the kinds
 * stored after READY: a2a_rt_set_state): with the kind's bit clear and no
 * mark - not READY, or READY before the kinds were stored - it asks the
 * state and the kinds apart, and analyzes a wanted kind. */
START_TEST(ready_mark_decides_the_one_load_forward)
{
  static float buf[4];
  float *p = buf;
  void *args[] = {&p};
  dim3 one = {1, 1, 1};
  /* Marked, the launch's bit clear: forwarded, errno untouched, whatever
   * the slow path would say (here it would analyze: enabled). */
  atomic_store(&a2a_rt_ready_kinds, ~A2A_KIND_BIT(A2A_EV_LAUNCH) | 1ull << A2A_RT_READY_MARK);
  errno = 80;
  ck_assert_int_eq(cudaLaunchKernel((const void *)0x7000, one, one, args, 0, NULL), cudaSuccess);
  ck_assert_int_eq(errno, 80);
  ck_assert_int_eq(nevents, 0);
  ck_assert_int_eq(a2a_rt_t.depth, 0);
  /* Not marked, the bit clear: READY with the launch wanted (the window)
   * is analyzed through the READY guard; not READY, through the slow
   * path - never forwarded on the bit alone. */
  for (int ready = 0; ready < 2; ready++) {
    atomic_store(&a2a_rt_ready_kinds, ~A2A_KIND_BIT(A2A_EV_LAUNCH) & ~(1ull << A2A_RT_READY_MARK));
    atomic_store(&a2a_rt_g_state, ready ? A2A_RT_STATE_READY : 0);
    nevents = 0;
    errno = 81;
    ck_assert_int_eq(cudaLaunchKernel((const void *)0x7000, one, one, args, 0, NULL), cudaSuccess);
    ck_assert_int_eq(errno, 81);
    ck_assert_int_eq(nevents, 2);
    ck_assert_int_eq(events[0].kind, A2A_EV_LAUNCH);
    ck_assert_int_eq(a2a_rt_t.depth, 0);
  }
  atomic_store(&a2a_rt_g_state, 0);
  atomic_store(&a2a_rt_ready_kinds, 0);
}
END_TEST

START_TEST(errno_is_the_applications_and_the_librarys)
{
  errno = 555;
  ck_assert_int_eq(ncclSend(NULL, 0, ncclInt8, 0, (ncclComm_t)0x1, NULL), ncclSuccess);
  ck_assert_int_eq(fake->errno_at_entry, 555); /* not the runtime's / analyzers' */
  ck_assert_int_eq(errno, 1234);               /* what the library left */

  void *p = NULL;
  errno = 556;
  ck_assert_int_eq(cudaMalloc(&p, 64), cudaSuccess);
  ck_assert_int_eq(fake->errno_at_entry, 556);
  ck_assert_int_eq(errno, 556);
  ck_assert_int_eq(events[nevents - 1].kind, A2A_EV_ALLOC);
  ck_assert_ptr_eq(events[nevents - 1].u.mem.ptr, p);
  ck_assert_int_eq(events[nevents - 1].u.mem.size, 64);
  ck_assert_ptr_null(events[nevents - 2].u.mem.ptr); /* PRE: not yet */
}
END_TEST

/* The wrappers reach errno through its address kept in the runtime's
 * thread-local object (a2a_rt_errno_loc): each thread's own, taken at the
 * thread's first wrapper call - a new thread's is not the first thread's.
 * What a thread saw and left, for the test below. */
typedef struct errno_seen {
  bool loc_unset_at_start, loc_is_own;
  int send_entry, send_left, launch_left;
} errno_seen;
static void *errno_thread(void *arg)
{
  errno_seen *o = arg;
  o->loc_unset_at_start = a2a_rt_t.errno_loc == NULL;
  errno = 701;
  (void)ncclSend(NULL, 0, ncclInt8, 0, (ncclComm_t)0x1, NULL);
  o->send_entry = fake->errno_at_entry;
  o->send_left = errno;
  o->loc_is_own = a2a_rt_t.errno_loc == &errno;
  static float buf[4];
  float *p = buf;
  void *args[] = {&p};
  dim3 one = {1, 1, 1};
  errno = 702;
  (void)cudaLaunchKernel((const void *)0x7000, one, one, args, 0, NULL);
  o->launch_left = errno; /* the fake launch leaves errno alone */
  return NULL;
}
START_TEST(errno_is_each_threads_own)
{
  errno = 700;
  ck_assert_int_eq(ncclSend(NULL, 0, ncclInt8, 0, (ncclComm_t)0x1, NULL), ncclSuccess);
  ck_assert_int_eq(fake->errno_at_entry, 700);
  ck_assert_ptr_eq(a2a_rt_t.errno_loc, &errno);
  errno_seen o = {0};
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, errno_thread, &o), 0);
  ck_assert_int_eq(pthread_join(t, NULL), 0);
  ck_assert(o.loc_unset_at_start);
  ck_assert(o.loc_is_own);
  ck_assert_int_eq(o.send_entry, 701); /* the thread's errno, not the first thread's */
  ck_assert_int_eq(o.send_left, 1234);
  ck_assert_int_eq(o.launch_left, 702);
  ck_assert_ptr_eq(a2a_rt_t.errno_loc, &errno); /* still this thread's own */
  errno = 703;
  ck_assert_int_eq(ncclSend(NULL, 0, ncclInt8, 0, (ncclComm_t)0x1, NULL), ncclSuccess);
  ck_assert_int_eq(fake->errno_at_entry, 703);
  ck_assert_int_eq(errno, 1234);
}
END_TEST

START_TEST(inner_nccl_calls_pass_through)
{
  static float buf[4];
  ck_assert_int_eq(ncclBcast(buf, 4, ncclFloat, 2, (ncclComm_t)0x9, NULL), ncclSuccess);
  /* The fake's ncclBcast called ncclBroadcast through the PLT: it reached
   * our wrapper (the program exports it), which passed it through. */
  ck_assert_int_eq(fake->bcast_calls, 1);
  ck_assert_int_eq(fake->broadcast_calls, 1);
  ck_assert_int_eq(nevents, 2);
  ck_assert_str_eq(events[1].api, "ncclBcast");
  ck_assert_int_eq(events[1].kind, A2A_EV_COLL);
  ck_assert_int_eq(events[1].u.coll.coll, A2A_COLL_BROADCAST);
  ck_assert_ptr_eq(events[1].u.coll.sendbuff, buf);
  ck_assert_ptr_eq(events[1].u.coll.recvbuff, buf);
  ck_assert_int_eq(events[1].u.coll.root, 2);
  ck_assert_int_eq(events[1].u.coll.redop, -1);
  ck_assert_int_eq(nccl_calls, 1);
}
END_TEST

START_TEST(init_all_posts_once_per_comm)
{
  ncclComm_t comms[3];
  int devs[3] = {4, 6, 2};
  ck_assert_int_eq(ncclCommInitAll(comms, 3, devs), ncclSuccess);
  ck_assert_int_eq(nevents, 4);
  ck_assert_int_eq(events[0].phase, A2A_PRE);
  ck_assert_int_eq(events[0].u.init.rank, -1);
  for (int i = 0; i < 3; i++) {
    const a2a_event *e = &events[1 + i];
    ck_assert_int_eq(e->phase, A2A_POST);
    ck_assert_int_eq(e->kind, A2A_EV_COMM_INIT);
    ck_assert_int_eq(e->u.init.how, A2A_INIT_ALL);
    ck_assert_int_eq(e->u.init.nranks, 3);
    ck_assert_int_eq(e->u.init.rank, i);
    ck_assert_int_eq(e->u.init.device, devs[i]);
    ck_assert_ptr_eq(e->u.init.newcomm, comms[i]);
  }
}
END_TEST

START_TEST(split_reports_new_comm_shape)
{
  ncclComm_t parent = (ncclComm_t)0x42, child = NULL;
  ck_assert_int_eq(ncclCommSplit(parent, 1, 0, &child, NULL), ncclSuccess);
  ck_assert_int_eq(nevents, 2); /* the REAL queries made no events */
  const a2a_event *e = &events[1];
  ck_assert_ptr_eq(e->comm, parent);
  ck_assert_ptr_eq(e->u.init.parent, parent);
  ck_assert_ptr_eq(e->u.init.newcomm, child);
  ck_assert_int_eq(e->u.init.nranks, 3);
  ck_assert_int_eq(e->u.init.rank, 1);
  ck_assert_int_eq(e->u.init.device, 5);
  ck_assert_int_eq(e->u.init.color, 1);
  ck_assert_int_eq(e->u.init.blocking, 1);

  ck_assert_int_eq(ncclCommSplit(parent, NCCL_SPLIT_NOCOLOR, 0, &child, NULL), ncclSuccess);
  ck_assert_ptr_null(events[3].u.init.newcomm);
}
END_TEST

/* Inside a group NCCL defers the creation: the new communicator must not be
 * queried (NCCL would warn and set its last error). */
START_TEST(split_in_group_is_not_queried)
{
  ncclComm_t parent = (ncclComm_t)0x42, child = NULL;
  ck_assert_int_eq(ncclGroupStart(), ncclSuccess);
  ck_assert_int_eq(ncclCommSplit(parent, 1, 0, &child, NULL), ncclSuccess);
  ck_assert_int_eq(ncclGroupEnd(), ncclSuccess);
  ck_assert_int_eq(events[3].kind, A2A_EV_COMM_INIT);
  ck_assert_int_eq(events[3].phase, A2A_POST);
  ck_assert_ptr_eq(events[3].u.init.newcomm, child);
  ck_assert_int_eq(events[3].u.init.nranks, -1);
  ck_assert_int_eq(events[3].u.init.rank, -1);
  /* The group is closed again: the next split is queried. Groups passed
   * through (tool not analyzing) are tracked too. */
  enabled = false;
  ck_assert_int_eq(ncclGroupStart(), ncclSuccess);
  enabled = true;
  ck_assert_int_eq(ncclCommSplit(parent, 1, 0, &child, NULL), ncclSuccess);
  ck_assert_int_eq(events[nevents - 1].u.init.nranks, -1);
  ck_assert_int_eq(ncclGroupEnd(), ncclSuccess);
  ck_assert_int_eq(ncclCommSplit(parent, 1, 0, &child, NULL), ncclSuccess);
  ck_assert_int_eq(events[nevents - 1].u.init.nranks, 3);
}
END_TEST

START_TEST(device_is_tracked_from_set_device)
{
  ck_assert_int_eq(cudaSetDevice(3), cudaSuccess);
  ck_assert_int_eq(fake->last_set_device, 3);
  ck_assert_int_eq(events[1].kind, A2A_EV_SET_DEVICE);
  ck_assert_int_eq(events[1].u.dev.device, 3);
  ck_assert_int_eq(cudaSetDevice(99), 101); /* invalid: the device stays 3 */
  shim_test_call_send((ncclComm_t)0x1);
  ck_assert_int_eq(events[nevents - 1].device, 3);
  /* Also tracked when the tool does not analyze the call. */
  enabled = false;
  ck_assert_int_eq(cudaSetDevice(6), cudaSuccess);
  enabled = true;
  shim_test_call_send((ncclComm_t)0x1);
  ck_assert_int_eq(events[nevents - 1].device, 6);
  /* An event that records the thread's device without asking the runtime
   * (a2a_shim_current_device, in every event's head). */
  ck_assert_int_eq(ncclGroupStart(), ncclSuccess);
  ck_assert_int_eq(events[nevents - 1].kind, A2A_EV_GROUP_START);
  ck_assert_int_eq(events[nevents - 1].device, 6);
  ck_assert_int_eq(ncclGroupEnd(), ncclSuccess);
}
END_TEST

START_TEST(nccl_device_from_the_runtime_until_set_device)
{
  /* A thread that never called cudaSetDevice, whose context was made
   * current another way (cuCtxSetCurrent, as XLA does): NCCL events carry
   * the runtime's current device, asked quietly. */
  fake->current_device = 2;
  shim_test_call_send((ncclComm_t)0x1);
  ck_assert_int_eq(events[nevents - 1].device, 2);
  ck_assert_int_eq(fake->get_device_calls, 1);
  /* An error pending for the application: the runtime is not asked (the
   * error stays the application's), the tracked device (0) is used. */
  fake->last_error = 700;
  shim_test_call_send((ncclComm_t)0x1);
  ck_assert_int_eq(events[nevents - 1].device, 0);
  ck_assert_int_eq(fake->get_device_calls, 1);
  ck_assert_int_eq(fake->last_error, 700);
  /* A failing query leaves no error behind. */
  fake->last_error = 0;
  fake->get_device_fails = 1;
  shim_test_call_send((ncclComm_t)0x1);
  ck_assert_int_eq(events[nevents - 1].device, 0);
  ck_assert_int_eq(fake->last_error, 0);
  fake->get_device_fails = 0;
  /* Once the thread set its device, that is the answer; no more queries. */
  ck_assert_int_eq(cudaSetDevice(4), cudaSuccess);
  fake->current_device = 1;
  int calls = fake->get_device_calls;
  shim_test_call_send((ncclComm_t)0x1);
  ck_assert_int_eq(events[nevents - 1].device, 4);
  ck_assert_int_eq(fake->get_device_calls, calls);
}
END_TEST

/* An NCCL operation's head tests the tracked device and the thread's NCCL
 * note together: the note is made whenever the thread has not made it,
 * the device tracked or not, and is not made again; the device is the
 * tracked one once set, else the runtime's. */
START_TEST(nccl_note_and_device_in_one_test)
{
  int calls = nccl_calls;
  ck_assert_int_eq(cudaSetDevice(5), cudaSuccess);
  fake->current_device = 1;
  shim_test_call_send((ncclComm_t)0x1); /* tracked, not noted: noted */
  ck_assert_int_eq(events[nevents - 1].device, 5);
  ck_assert_int_eq(nccl_calls, calls + 1);
  a2a_rt_t.nccl_noted = true; /* (the fake's slow note leaves it clear) */
  shim_test_call_send((ncclComm_t)0x1); /* both: no note, the tracked device */
  ck_assert_int_eq(events[nevents - 1].device, 5);
  ck_assert_int_eq(nccl_calls, calls + 1);
  a2a_rt_t.device_set = false; /* noted, not tracked: the runtime's device */
  shim_test_call_send((ncclComm_t)0x1);
  ck_assert_int_eq(events[nevents - 1].device, 1);
  ck_assert_int_eq(nccl_calls, calls + 1);
  a2a_rt_t.nccl_noted = false;
}
END_TEST

/* ncclSend and ncclRecv read their arguments back from the event for the
 * real call and the pass-through (A2A_P2P_WRAP): NCCL gets each one as
 * the application passed it - a count past 32 bits, the element type, the
 * peer, the communicator and the stream - analyzed (both phases
 * dispatched, the event the same) or passed through, re-entered or
 * disabled. */
static void assert_p2p_args(const void *buff, size_t count, int dtype, int peer, void *comm,
                            void *stream)
{
  ck_assert_ptr_eq(fake->p2p_buff, buff);
  ck_assert(fake->p2p_count == count);
  ck_assert_int_eq(fake->p2p_dtype, dtype);
  ck_assert_int_eq(fake->p2p_peer, peer);
  ck_assert_ptr_eq(fake->p2p_comm, comm);
  ck_assert_ptr_eq(fake->p2p_stream, stream);
}
START_TEST(p2p_real_call_gets_the_applications_arguments)
{
  static double buf[4];
  void *comm = (void *)0x5000, *stream = (void *)0x9a;
  const size_t big = ((size_t)3 << 32) + 5;
  ck_assert_int_eq(ncclSend(buf, big, ncclFloat64, 6, (ncclComm_t)comm, (cudaStream_t)stream),
                   ncclSuccess);
  assert_p2p_args(buf, big, ncclFloat64, 6, comm, stream);
  ck_assert_int_eq(nevents, 2);
  ck_assert_ptr_eq(events[1].stream, stream);
  ck_assert_ptr_eq(events[1].comm, comm);
  ck_assert(events[1].u.p2p.count == big);
  ck_assert_int_eq(ncclRecv(buf + 1, big + 1, ncclBfloat16, 7, (ncclComm_t)0x7, NULL),
                   ncclInProgress);
  assert_p2p_args(buf + 1, big + 1, ncclBfloat16, 7, (void *)0x7, NULL);
  ck_assert_int_eq(nevents, 4);
  /* Passed through: inside an analyzed call, then with the tool off. */
  a2a_rt_t.depth = 1;
  ck_assert_int_eq(ncclRecv(buf + 2, 9, ncclInt8, 1, (ncclComm_t)comm, (cudaStream_t)0x33),
                   ncclSuccess);
  assert_p2p_args(buf + 2, 9, ncclInt8, 1, comm, (void *)0x33);
  a2a_rt_t.depth = 0;
  enabled = false;
  ck_assert_int_eq(ncclSend(buf + 3, big, ncclUint64, 2, (ncclComm_t)comm, (cudaStream_t)stream),
                   ncclSuccess);
  assert_p2p_args(buf + 3, big, ncclUint64, 2, comm, stream);
  ck_assert_int_eq(nevents, 4);
}
END_TEST

/* The collectives the same (A2A_COLL_WRAP): the reduction operator and
 * the root where the function takes them, ncclBcast's one buffer
 * (forwarded by the fake to ncclBroadcast through the PLT, which passes
 * through). */
static void assert_coll_args(const void *send, void *recv, size_t count, int dtype, int op,
                             int root, void *comm, void *stream)
{
  ck_assert_ptr_eq(fake->coll_send, send);
  ck_assert_ptr_eq(fake->coll_recv, recv);
  ck_assert(fake->coll_count == count);
  ck_assert_int_eq(fake->coll_dtype, dtype);
  ck_assert_int_eq(fake->coll_op, op);
  ck_assert_int_eq(fake->coll_root, root);
  ck_assert_ptr_eq(fake->coll_comm, comm);
  ck_assert_ptr_eq(fake->coll_stream, stream);
}
START_TEST(coll_real_call_gets_the_applications_arguments)
{
  static double a[4], b[4];
  void *comm = (void *)0x5000, *stream = (void *)0x9a;
  const size_t big = ((size_t)3 << 32) + 5;
  ck_assert_int_eq(ncclAllReduce(a, b, big, ncclFloat64, ncclMax, (ncclComm_t)comm,
                                 (cudaStream_t)stream), ncclSuccess);
  assert_coll_args(a, b, big, ncclFloat64, ncclMax, -1, comm, stream);
  ck_assert_int_eq(nevents, 2);
  ck_assert(events[1].u.coll.count == big);
  ck_assert_int_eq(ncclReduce(a + 1, b + 1, big + 1, ncclBfloat16, ncclProd, 3, (ncclComm_t)0x7,
                              NULL), ncclSuccess);
  assert_coll_args(a + 1, b + 1, big + 1, ncclBfloat16, ncclProd, 3, (void *)0x7, NULL);
  ck_assert_int_eq(ncclBcast(a + 2, 11, ncclInt8, 2, (ncclComm_t)comm, (cudaStream_t)0x33),
                   ncclSuccess);
  assert_coll_args(a + 2, a + 2, 11, ncclInt8, -1, 2, comm, (void *)0x33);
  ck_assert_int_eq(nevents, 6);
  enabled = false;
  ck_assert_int_eq(ncclReduce(a + 3, b + 3, big, ncclUint64, ncclMin, 1, (ncclComm_t)comm,
                              (cudaStream_t)stream), ncclSuccess);
  assert_coll_args(a + 3, b + 3, big, ncclUint64, ncclMin, 1, comm, stream);
  ck_assert_int_eq(nevents, 6);
}
END_TEST

START_TEST(disabled_is_pure_pass_through)
{
  enabled = false;
  errno = 9;
  ck_assert_int_eq(ncclSend(NULL, 0, ncclInt8, 0, NULL, NULL), ncclInvalidArgument);
  ck_assert_int_eq(fake->errno_at_entry, 9);
  ck_assert_int_eq(fake->send_calls, 1);
  ck_assert_int_eq(nevents, 0);
  ck_assert_int_eq(nccl_calls, 0);
}
END_TEST

START_TEST(unresolved_call_returns_error_not_crash)
{
  /* The fake runtime has no cudaMemcpy. */
  char a[4], b[4] = {0};
  errno = 31;
  ck_assert_int_eq(cudaMemcpy(a, b, 4, cudaMemcpyHostToHost), cudaErrorSharedObjectSymbolNotFound);
  ck_assert_int_eq(errno, 31);
  ck_assert_int_eq(unresolved_calls, 1);
  ck_assert_int_eq(nevents, 2);
  ck_assert_int_eq(events[1].result, cudaErrorSharedObjectSymbolNotFound);
  ck_assert_int_eq(events[1].u.copy.bytes, 4);
  ck_assert_int_eq(events[1].u.copy.cpykind, cudaMemcpyHostToHost);
  /* An NCCL function the fake lacks. */
  ck_assert_int_eq(ncclCommAbort((ncclComm_t)0x1), ncclInternalError);
  ck_assert_int_eq(unresolved_calls, 2);
}
END_TEST

static Suite *wrap_suite(void)
{
  Suite *s = suite_create("shim_wrap");
  TCase *tc = tcase_create("wrappers");
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_set_timeout(tc, 20);
  tcase_add_test(tc, send_event_fields_and_callsite);
  tcase_add_test(tc, recv_and_group_events_and_results);
  tcase_add_test(tc, p2p_real_call_gets_the_applications_arguments);
  tcase_add_test(tc, coll_real_call_gets_the_applications_arguments);
  tcase_add_test(tc, query_events_fields_and_results);
  tcase_add_test(tc, quiet_query_makes_no_event);
  tcase_add_test(tc, kept_nested_group_makes_no_event);
  tcase_add_test(tc, poll_query_events_fields_and_results);
  tcase_add_test(tc, unwanted_poll_query_kinds_pass_through);
  tcase_add_test(tc, async_error_events_fields_and_results);
  tcase_add_test(tc, unwanted_query_kinds_pass_through);
  tcase_add_test(tc, errno_is_the_applications_and_the_librarys);
  tcase_add_test(tc, errno_is_each_threads_own);
  tcase_add_test(tc, ready_hot_wrappers_test_the_ready_kinds);
  tcase_add_test(tc, ready_mark_decides_the_one_load_forward);
  tcase_add_test(tc, inner_nccl_calls_pass_through);
  tcase_add_test(tc, init_all_posts_once_per_comm);
  tcase_add_test(tc, split_reports_new_comm_shape);
  tcase_add_test(tc, split_in_group_is_not_queried);
  tcase_add_test(tc, device_is_tracked_from_set_device);
  tcase_add_test(tc, nccl_device_from_the_runtime_until_set_device);
  tcase_add_test(tc, nccl_note_and_device_in_one_test);
  tcase_add_test(tc, disabled_is_pure_pass_through);
  tcase_add_test(tc, unresolved_call_returns_error_not_crash);
  suite_add_tcase(s, tc);
  return s;
}

int main(int argc, char **argv)
{
  if (argc != 2) {
    fprintf(stderr, "usage: %s fake-library.so\n", argv[0]);
    return 2;
  }
  fake_path = argv[1];
  SRunner *sr = srunner_create(wrap_suite());
  srunner_set_fork_status(sr, CK_FORK); /* fresh slots, state and fake per test */
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
