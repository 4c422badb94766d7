/* a2a_runtime.h - the process runtime's interface to the interposition layer.
 *
 * shim/ has two halves that know nothing of the analyses:
 *  - interposition (intercept table, symbol resolution, wrappers): turns each
 *    intercepted call into a2a_event PRE/POST and forwards it unchanged;
 *  - the runtime (rt_*.c): lazy init, options, the warnings log, stacks, the
 *    exit policy, fork handling, the host services the analyzers use.
 *
 * Contract for wrappers:
 *    if (!a2a_rt_enter()) return REAL(f)(args);   // disabled, not ready, or
 *                                                  // re-entered: pass through
 *    ... build event, a2a_dispatch(PRE) ...
 *    r = REAL(f)(args);  (errno and the CUDA error state untouched between)
 *    ... a2a_dispatch(POST) ...
 *    a2a_rt_leave();
 *    return r;
 */
#ifndef A2A_RUNTIME_H
#define A2A_RUNTIME_H

#include <errno.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "a2a_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The per-call state, inline for the wrappers (every intercepted call
 * reads it): the runtime's state, and per thread the guard depth, the
 * thread index and the call counter - one thread-local object, so that a
 * wrapper finds all three from one address. initial-exec TLS: the library
 * is preloaded. Defined in rt_init.c; nothing else writes them. */
#define A2A_RT_TLS __thread __attribute__((tls_model("initial-exec"), visibility("hidden")))
extern A2A_HIDDEN _Atomic int a2a_rt_g_state;
typedef struct a2a_rt_thread {
  int depth;          /* the guard: inside an intercepted call */
  uint32_t index;     /* a2a_rt_thread_index, 0 until assigned */
  uint32_t call_seq;  /* a2a_rt_next_call_seq */
  /* The interposition layer's (shim/wrap_cuda.c, a2a_shim_current_device):
   * the thread's current device, 0 (CUDA's default) until a successful
   * cudaSetDevice, which sets device_set. */
  int device;
  bool device_set;
  bool nccl_noted;    /* a2a_rt_note_nccl_call: this thread set the flag */
  int *errno_loc;     /* a2a_rt_errno_loc: &errno, NULL until first asked */
  /* The interposition layer's (shim/wrap_nccl.c): the thread's group depth
   * as its analyzed group calls counted it (a2a_group_nested); zeroed for
   * the forking thread in a forked child, with the analyzers' states. */
  uint32_t gdepth;
} a2a_rt_thread;
extern A2A_RT_TLS a2a_rt_thread a2a_rt_t;
enum { A2A_RT_STATE_READY = 2 };    /* = A2A_RT_READY (rt_internal.h) */
bool a2a_rt_enter_slow(void);
uint32_t a2a_rt_thread_index_slow(void);

/* a2a_rt_enter in two steps, for a wrapper that tests something the
 * initialization sets (a2a_kind_wanted) between them: whether the runtime
 * is READY (an acquire load: what a2a_core_init wrote is visible after a
 * true answer), then a2a_rt_enter_ready() (after true: the guard only) or
 * a2a_rt_enter_slow() (after false). */
static inline bool a2a_rt_ready(void) {
  return __builtin_expect(atomic_load_explicit(&a2a_rt_g_state, memory_order_acquire) ==
                              A2A_RT_STATE_READY, 1);
}
/* The kinds wanted (a2a_kinds_wanted, final once the core is initialized)
 * while the runtime is READY, else 0: a2a_rt_ready() and a2a_kind_wanted()
 * in one load, for the hot wrappers (A2A_PASS_THROUGH_UNLESS_WANTED).
 * Stored by a2a_rt_set_state, with release, after READY and before any
 * other state, so that a true answer (an acquire load) is what
 * a2a_rt_ready() then a2a_kind_wanted() would answer, as of a moment
 * between the two stores; 0 says nothing (ask those two). */
extern A2A_HIDDEN _Atomic uint64_t a2a_rt_ready_kinds;
/* Bit A2A_RT_READY_MARK of a2a_rt_ready_kinds, no kind's, is stored set
 * with the kinds: a read with the mark set says READY and, in its other
 * bits, the kinds wanted - with kind k's bit clear, a2a_rt_ready() then
 * !a2a_kind_wanted(k), as of a moment between the two stores, in the same
 * load (a2a_rt_ready_marked). */
#define A2A_RT_READY_MARK 63u
_Static_assert(A2A_EV__COUNT <= (int)A2A_RT_READY_MARK, "the READY mark is no kind's bit");
static inline uint64_t a2a_rt_ready_kinds_now(void) {
  return atomic_load_explicit(&a2a_rt_ready_kinds, memory_order_acquire);
}
static inline bool a2a_rt_ready_wanted(unsigned kind) {
  return (a2a_rt_ready_kinds_now() >> kind) & 1;
}
/* Whether rk, a read of a2a_rt_ready_kinds, has the READY mark. */
static inline bool a2a_rt_ready_marked(uint64_t rk) { return (rk >> A2A_RT_READY_MARK) & 1; }
static inline bool a2a_rt_enter_ready(void) {
  if (a2a_rt_t.depth) return false;
  a2a_rt_t.depth = 1;
  return true;
}
/* Lazily initializes the runtime (pthread_once) on first call. Returns true
 * when the calling thread should analyze this call: the tool is enabled,
 * initialized, and this is the outermost intercepted call on this thread
 * (the thread-local depth guard is incremented; pair with a2a_rt_leave).
 * Returns false (and changes nothing) otherwise. Never blocks for long. */
static inline bool a2a_rt_enter(void) {
  return a2a_rt_ready() ? a2a_rt_enter_ready() : a2a_rt_enter_slow();
}
static inline void a2a_rt_leave(void) { a2a_rt_t.depth = 0; }

/* Small per-process thread index (1, 2, ...), cached thread-locally. */
static inline uint32_t a2a_rt_thread_index(void) {
  uint32_t i = a2a_rt_t.index;
  return __builtin_expect(i != 0, 1) ? i : a2a_rt_thread_index_slow();
}
/* The number of this call among the calling thread's analyzed calls
 * (1, 2, ...; a2a_event.seq). */
static inline uint32_t a2a_rt_next_call_seq(void) { return ++a2a_rt_t.call_seq; }
/* The address of the calling thread's errno, for the wrappers' save and
 * restore (shim/intercept.h): &errno - glibc's __errno_location(), a call
 * through the PLT - once per thread, then one load from the thread's own
 * object. Exact: the address of a thread's errno never changes while the
 * thread lives. A new thread's a2a_rt_t starts zeroed (its static TLS is
 * initialized for it, also when glibc reuses a dead thread's stack; and a
 * reused block, with the same thread pointer, would hold the same
 * address), so it asks once itself, whether or not its thread index
 * (a2a_rt_thread_index) was assigned yet. A forked child's only thread is
 * a copy of the forking thread, with the same TLS addresses (fork copies
 * the address space, the thread pointer is kept): the copied address is
 * the child's errno. A signal handler that runs a wrapper between the load
 * and the store stores the same address. Changes no errno. */
static inline int *a2a_rt_errno_loc(void) {
  int *p = a2a_rt_t.errno_loc;
  if (__builtin_expect(p == NULL, 0)) a2a_rt_t.errno_loc = p = &errno;
  return p;
}
/* CLOCK_MONOTONIC in ns (vDSO, no syscall). */
static inline uint64_t a2a_rt_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
/* Notes that NCCL calls are intercepted (for the a2acheck.not-intercepting
 * check): a thread stores the shared flag once, at its first NCCL call
 * (the slow path); later calls test the thread's own bit inline. */
void a2a_rt_note_nccl_call_slow(void);
static inline void a2a_rt_note_nccl_call(void) {
  if (__builtin_expect(!a2a_rt_t.nccl_noted, 0)) a2a_rt_note_nccl_call_slow();
}
/* Whether the thread's device is tracked (device_set) and its NCCL calls
 * noted (nccl_noted), the two adjacent flags in one load and compare: then
 * a2a_shim_query_device answers the tracked device and
 * a2a_rt_note_nccl_call does nothing. */
static inline bool a2a_rt_device_set_and_noted(void) {
  _Static_assert(offsetof(a2a_rt_thread, nccl_noted) == offsetof(a2a_rt_thread, device_set) + 1,
                 "device_set and nccl_noted adjacent");
  _Static_assert(sizeof(bool) == 1, "one byte each");
  const bool both[2] = {true, true};
  uint16_t w, want;
  memcpy(&w, &a2a_rt_t.device_set, sizeof w);
  memcpy(&want, both, sizeof want);
  return w == want;
}
/* The call site of an NCCL call (a2a_event.callsite): pc itself, or - when
 * the calling thread runs Python - an opaque handle for (the innermost user
 * Python frame, pc), so that two Python lines reaching NCCL through one
 * libtorch return address are two sites (shim/rt_python.c). Pure reads of
 * the calling thread's own interpreter state: no GIL, no allocation; a hash
 * probe per Python frame up to the first user frame. In a process without
 * CPython (known at the first call) it is one load: a2a_rt_py_off. */
extern A2A_HIDDEN _Atomic bool a2a_rt_py_off;
const void *a2a_rt_py_site_slow(const void *pc);
static inline const void *a2a_rt_py_site(const void *pc) {
  if (atomic_load_explicit(&a2a_rt_py_off, memory_order_relaxed)) return pc;
  return a2a_rt_py_site_slow(pc);
}

/* Called by the interposition layer when a real symbol cannot be resolved:
 * logs once per symbol. */
void a2a_rt_unresolved(const char *symbol, const char *library);

/* ------------------------------------------------------------------ */
/* rt_hostfn.c: cudaLaunchHostFunc's trampoline (A2A_EV_HOST_FUNC_RAN). */

typedef struct a2a_rt_hostfn a2a_rt_hostfn;
/* A slot for fn(user) enqueued on stream (per_thread: a _ptsz entry
 * point), or NULL: run it unwrapped (no analyzer wants
 * A2A_EV_HOST_FUNC_RAN, a stream that may be capturing, no free slot).
 * Its address is the event's u.host_fn.token. (cudaStreamAddCallback's
 * take and trampoline are in intercept.h: they need CUDA's types.) */
a2a_rt_hostfn *a2a_rt_hostfn_take(void *stream, int per_thread, void (*fn)(void *), void *user);
/* The trampoline to enqueue, with the slot as its argument. */
void a2a_rt_hostfn_run(void *slot);
/* After the HOST_FUNC event's POST: enqueued says whether the real call
 * succeeded (else the trampoline never runs and the slot is freed). Keeps
 * errno. */
void a2a_rt_hostfn_posted(a2a_rt_hostfn *h, bool enqueued);

/* ------------------------------------------------------------------ */
/* wrap_nccl.c */

/* In a forked child: the split children the parent awaited are not the
 * child's (NCCL's communicators do not survive fork), and the table's lock
 * may have been held by a thread that is gone. */
void a2a_nccl_after_fork_child(void);

#ifdef __cplusplus
}
#endif
#endif /* A2A_RUNTIME_H */
