/* intercept.h - the interposition machinery of liba2acheck.so: typed access
 * to the REAL NCCL and CUDA runtime functions, and the helpers every wrapper
 * uses. It knows nothing of the analyses; wrappers turn calls into
 * a2a_event PRE/POST (analyzers/a2a_event.h) and forward them unchanged.
 *
 * ---------------------------------------------------------------------
 * How to call a real function (runtime, host services):
 *
 *     #include "intercept.h"
 *     cudaError_t e = A2A_REAL(cudaPointerGetAttributes)(&attr, p);
 *
 *   A2A_REAL(name) is a typed function pointer (ret (*)(params) exactly as
 *   in the table), resolved lazily and thread-safely on first use. It never
 *   is NULL: when the real symbol is not loaded, it points at a fallback
 *   that returns the table's unresolved value (ncclInternalError,
 *   cudaErrorSharedObjectSymbolNotFound, a static string), calls
 *   a2a_rt_unresolved() once, and retries resolution when new objects
 *   have been loaded since. A2A_HAVE_REAL(name) says whether the real one
 *   was found. The tool's own optional calls (not made on the
 *   application's behalf) test A2A_FOUND(name) first, so that a library
 *   the application does not load dynamically costs nothing and is not
 *   reported. The tool itself never calls an intercepted name directly
 *   (that would run our own wrapper and create events): always A2A_REAL.
 *   Calling a REAL CUDA function can set the thread's CUDA "last error";
 *   callers that may fail (pointer attributes of a host pointer, ...) must
 *   accept that the application could observe it, or avoid the call.
 *
 * How to add an interceptor:
 *  1. Add a row to intercept_table.inc:
 *       A2A_SYM(CUDA, WRAP, cudaError_t, cudaFoo, (int a, void *b), (a, b),
 *               A2A_CUDA_ERR)
 *     Check the prototype against the header and the exported name against
 *     `objdump -T libcudart.so.13` (the _ptsz/_ptds twins are separate rows).
 *     A resolve-only function (for the host services) uses mode REAL: it gets
 *     a slot and A2A_REAL(), no wrapper and no export.
 *  2. Define the wrapper in wrap_cuda.c / wrap_nccl.c with the same
 *     prototype, following the pattern there:
 *       A2A_PUBLIC cudaError_t cudaFoo(int a, void *b) {
 *         A2A_PASS_THROUGH_UNLESS_ENTERED(cudaFoo, a, b);
 *         A2A_EVENT(ev, A2A_EV_..., "cudaFoo");
 *         ... fill ev.stream / ev.u.* from the arguments ...
 *         A2A_PRE(ev);
 *         cudaError_t r = A2A_REAL(cudaFoo)(a, b);
 *         A2A_POST_BEGIN(ev, r);
 *         ... fill out-parameters valid after the call ...
 *         A2A_POST_END(ev);
 *         return r;
 *       }
 *     The export list (generated from the table) and the real-symbol slot
 *     come for free; the link fails if a WRAP row has no definition.
 *  3. Document the event fields in analyzers/a2a_event.h if they are new,
 *     and let tests/e2e/shim_exports.py know if the symbol is required.
 *
 * Wrapper contract (shim/a2a_runtime.h): pass through unchanged unless
 * a2a_rt_enter() says this is the outermost intercepted call of an enabled,
 * initialized tool; preserve errno across the tool's own work; never
 * allocate, lock or make a syscall on this path; a2a_rt_leave() after POST.
 * ---------------------------------------------------------------------
 */
#ifndef A2A_INTERCEPT_H
#define A2A_INTERCEPT_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "a2a_core.h"
#include "a2a_event.h"
#include "a2a_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Exported symbols (everything else is hidden: -fvisibility=hidden plus the
 * version script generated from the table). */
#define A2A_PUBLIC __attribute__((visibility("default")))

/* Returned by const char* functions whose real symbol cannot be found. */
#define A2A_UNRESOLVED_STRING "a2acheck: real function not found (library not loaded?)"

/* The libraries of the table's `lib` column. */
typedef enum a2a_lib { A2A_LIB_NCCL = 0, A2A_LIB_CUDA = 1, A2A_LIB__COUNT } a2a_lib;

/* One id per table row: A2A_SYM_ncclSend, ... */
typedef enum a2a_sym_id {
#define A2A_SYM(lib, mode, ret, name, params, args, err) A2A_SYM_##name,
#include "intercept_table.inc"
#undef A2A_SYM
  A2A_SYM__COUNT
} a2a_sym_id;

/* Typed pointers: a2a_real_ncclSend_t, ... */
#define A2A_SYM(lib, mode, ret, name, params, args, err) typedef ret(*a2a_real_##name##_t) params;
#include "intercept_table.inc"
#undef A2A_SYM

/* Prototypes of every exported wrapper. For names the CUDA/NCCL headers
 * declare, this makes the compiler check each table row against the header
 * (a mismatch is a "conflicting types" error); for the _ptsz/_ptds and
 * __cudaLaunchKernel names it is the only declaration. */
#define A2A_DECL_WRAP(ret, name, params) A2A_PUBLIC ret name params;
#define A2A_DECL_REAL(ret, name, params)
#define A2A_SYM(lib, mode, ret, name, params, args, err) A2A_DECL_##mode(ret, name, params)
#include "intercept_table.inc"
#undef A2A_SYM
#undef A2A_DECL_WRAP
#undef A2A_DECL_REAL

/* Real-function slots, indexed by a2a_sym_id. NULL until first use, then
 * the real function or the row's unresolved fallback. Written only with
 * atomic stores (several threads may resolve the same slot at once; they
 * store the same value). */
extern A2A_HIDDEN _Atomic(void *) a2a_real_slot[A2A_SYM__COUNT];

/* Slow path of A2A_REAL: runs the resolution chain (see resolve.c) and
 * stores the result in the slot. Never returns NULL. Preserves errno. */
void *a2a_real_resolve(a2a_sym_id id);

/* (Always inline: a wrapper's forward is this load and test, then a jump
 * to the real function; in a cold branch - a pass-through - GCC would
 * call it out of line.) */
__attribute__((always_inline)) static inline void *a2a_real_ptr(a2a_sym_id id)
{
  void *p = atomic_load_explicit(&a2a_real_slot[id], memory_order_acquire);
  return __builtin_expect(p != NULL, 1) ? p : a2a_real_resolve(id);
}

#define A2A_REAL(name) ((a2a_real_##name##_t)a2a_real_ptr(A2A_SYM_##name))

/* True when the real function was found (resolving it if needed; while it
 * is not found, every call re-runs the chain if objects were loaded since). */
bool a2a_real_available(a2a_sym_id id);
#define A2A_HAVE_REAL(name) a2a_real_available(A2A_SYM_##name)

/* True when the real function is available now: resolved on first use like
 * A2A_REAL, but never re-resolved here and never reported as unresolved -
 * one load and compare. For the tool's own optional calls into a library
 * the application may not have loaded dynamically (a program that links
 * the CUDA runtime statically has no libcudart for the tool to ask; that is
 * no reason to warn, nor to scan the loaded objects at every call). A
 * library loaded later is seen once an application call through the
 * wrapper has found it. */
bool a2a_real_found(a2a_sym_id id);
#define A2A_FOUND(name) a2a_real_found(A2A_SYM_##name)

/* Introspection, for diagnostics and tests: the symbol's name, its library,
 * and how it was resolved so far ("unresolved-yet", "pnccl-rtld-next",
 * "rtld-next", "dlopen-noload", "phdr-scan", "unresolved"). */
const char *a2a_sym_name(a2a_sym_id id);
a2a_lib a2a_sym_lib(a2a_sym_id id);
const char *a2a_real_how(a2a_sym_id id);

/* ------------------------------------------------------------------ */
/* The calling thread's current CUDA device, tracked from the intercepted
 * cudaSetDevice (default 0, CUDA's own default). The tool never asks the
 * runtime (cudaGetDevice) on the hot path of CUDA calls. Inline: one load
 * from the runtime's thread-local object (a2a_rt_thread.device, which
 * shim/wrap_cuda.c's cudaSetDevice wrapper keeps), in every event's head. */
static inline int a2a_shim_current_device(void) { return a2a_rt_t.device; }
/* The device of an event whose device is recorded or compared: NCCL
 * communicator inits and operations, allocations. The tracked one once the
 * thread called cudaSetDevice; before that the runtime is asked, because
 * the context may have been made current through the driver API
 * (cuCtxSetCurrent, as XLA and other driver-API users do): assuming device
 * 0 there would bind communicators and buffers to the wrong device. The
 * query follows the last-error rule of shim/rt_host.c: not made while the
 * application has an error pending, and a failure it causes is consumed.
 * Blind spot left: cuCtxSetCurrent after a cudaSetDevice on one thread.
 * Inline, the tracked device's test (every NCCL operation asks): the
 * runtime's query is a2a_shim_query_device_slow. */
int a2a_shim_query_device_slow(void);
static inline int a2a_shim_query_device(void)
{
  return __builtin_expect(a2a_rt_t.device_set, 1) ? a2a_rt_t.device : a2a_shim_query_device_slow();
}

/* ------------------------------------------------------------------ */
/* Wrapper helpers. Macros (not functions) where the code must run in the
 * wrapper's own frame: __builtin_return_address(0) and the early return. */

/* The wrapper's save of the application's errno: a2a_errno_, the value,
 * and A2A_ERRNO, the calling thread's errno itself, through its address
 * (a2a_rt_errno_loc: one thread-local load, where `errno` is a call of
 * __errno_location through the PLT). Every wrapper reads and writes errno
 * as A2A_ERRNO after this. */
#define A2A_ERRNO_SAVE()                                                      \
  int *const a2a_errno_loc_ = a2a_rt_errno_loc();                             \
  int a2a_errno_ = *a2a_errno_loc_
#define A2A_ERRNO (*a2a_errno_loc_)

/* First statement of every wrapper: capture errno, and forward unchanged
 * when the tool must not analyze this call (disabled, initializing, or
 * re-entered from inside the library, e.g. ncclBcast -> ncclBroadcast). */
#define A2A_PASS_THROUGH_UNLESS_ENTERED(name, ...)                            \
  A2A_ERRNO_SAVE();                                                           \
  if (!a2a_rt_enter()) {                                                      \
    A2A_ERRNO = a2a_errno_;                                                   \
    return A2A_REAL(name)(__VA_ARGS__);                                       \
  }

/* The same for the hot CUDA wrappers (launches, event record and wait,
 * copies, queries) and the NCCL communicator queries and
 * ncclCommGetAsyncError: also forward unchanged, without building an event,
 * when no running analyzer handles this kind of call (a2a_kind_wanted).
 * That test comes first, before errno is touched: with the kind off
 * (A2ACHECK_CHECKS=-all) the wrapper is its frame's setup, a few loads and
 * a jump to the real function (no errno save and restore, no runtime
 * enter and leave). It is made once the runtime reads READY (acquire:
 * a2a_kinds_wanted is final then, the core's initialization having set it
 * before READY was stored); before that every kind is wanted, so the lazy
 * initialization still runs on the first call, and the kind is tested
 * once the initialization returned (a2a_rt_enter_slow). The common case,
 * READY and the kind wanted, is one load and test (a2a_rt_ready_wanted);
 * its 0 answer is the kind off when the same load has the READY mark
 * (a2a_rt_ready_marked: -all, one load), else asks both again, apart
 * (the window between READY's store and the kinds'). */
#define A2A_PASS_THROUGH_UNLESS_WANTED(evkind, name, ...)                     \
  bool a2a_ready_ = true;                                                     \
  const uint64_t a2a_rk_ = a2a_rt_ready_kinds_now();                          \
  if (__builtin_expect(!((a2a_rk_ >> (evkind)) & 1), 0)) {                    \
    if (a2a_rt_ready_marked(a2a_rk_)) return A2A_REAL(name)(__VA_ARGS__);    \
    a2a_ready_ = a2a_rt_ready();                                              \
    if (a2a_ready_ && !a2a_kind_wanted(evkind)) return A2A_REAL(name)(__VA_ARGS__); \
  }                                                                           \
  A2A_ERRNO_SAVE();                                                           \
  if (!(a2a_ready_ ? a2a_rt_enter_ready() : a2a_rt_enter_slow())) {           \
    A2A_ERRNO = a2a_errno_;                                                   \
    return A2A_REAL(name)(__VA_ARGS__);                                       \
  }                                                                           \
  if (!a2a_ready_ && !a2a_kind_wanted(evkind)) {                              \
    a2a_rt_leave();                                                           \
    A2A_ERRNO = a2a_errno_;                                                   \
    return A2A_REAL(name)(__VA_ARGS__);                                       \
  }

/* Declare and initialize the event of this call. */
#define A2A_EVENT(ev, evkind, apiname)                                        \
  a2a_event ev;                                                               \
  a2a_shim_event_init(&ev, (evkind), (apiname), __builtin_return_address(0))

/* The same without zeroing the union (96 bytes): for the hot wrappers
 * (the CUDA ones, the NCCL operations, group calls, communicator queries
 * and ncclCommGetAsyncError), which fill every member of their kind's
 * union member themselves (a query's kind has none). */
#define A2A_EVENT_HOT(ev, evkind, apiname)                                    \
  a2a_event ev;                                                               \
  a2a_shim_event_head(&ev, (evkind), (apiname), __builtin_return_address(0))

/* Dispatch PRE, then restore the application's errno for the real call. */
#define A2A_PRE(ev)                                                           \
  do {                                                                        \
    a2a_shim_pre(&(ev));                                                      \
    A2A_ERRNO = a2a_errno_;                                                   \
  } while (0)

/* The hot wrappers' PRE (launch, event record, stream wait, copy, stream
 * and event query; evkind
 * the event's kind, a constant: a2a_dispatch_hot), of an event made by
 * A2A_EVENT_HOT (phase A2A_PRE and t_ns 0 already): the clock is read only
 * when `timed` (a blocking copy, where a host may wait); otherwise t_ns
 * stays 0 (a2a_event.h) - one clock read is a tenth of a launch's budget
 * and nothing needs the time of the others. */
#define A2A_PRE_HOT(ev, evkind, timed)                                        \
  do {                                                                        \
    if (timed) (ev).t_ns = a2a_rt_now_ns();                                   \
    A2A_PRE_ROW(ev, (evkind), (unsigned)(evkind));                            \
  } while (0)

/* A2A_PRE_HOT's dispatch with the table's row `row` (a constant: the
 * kind's own, or another row of the kind - a2a_dispatch_row), untimed. */
#define A2A_PRE_ROW(ev, evkind, row)                                          \
  do {                                                                        \
    a2a_dispatch_row(&(ev), (evkind), (row), A2A_PRE);                        \
    A2A_ERRNO = a2a_errno_;                                                   \
  } while (0)

/* A2A_PRE_HOT for a copy (A2A_EV_MEMCPY): a queued one (a2a_copy_queued:
 * every cudaMemcpyAsync but device-to-host and cudaMemcpyDefault ones) is
 * dispatched with the table's queued-copy row, which leaves out the
 * analyzers that do nothing at its PRE (A2A_ROW_QCOPY). `other` is a
 * statement run before the PRE of any other copy (a queued one is never
 * timed - it is asynchronous - nor a blocking call site). */
#define A2A_PRE_HOT_COPY(ev, timed, other)                                    \
  do {                                                                        \
    if (a2a_copy_queued(&(ev))) {                                             \
      a2a_dispatch_row(&(ev), A2A_EV_MEMCPY, A2A_ROW_QCOPY, A2A_PRE);         \
    } else {                                                                  \
      other;                                                                  \
      if (timed) (ev).t_ns = a2a_rt_now_ns();                                 \
      a2a_dispatch_hot(&(ev), A2A_EV_MEMCPY, A2A_PRE);                        \
    }                                                                         \
    A2A_ERRNO = a2a_errno_;                                                   \
  } while (0)

/* Right after the real call: keep the errno it left, record the result. */
#define A2A_POST_BEGIN(ev, r)                                                 \
  do {                                                                        \
    a2a_errno_ = A2A_ERRNO;                                                   \
    a2a_event_set_result(&(ev), (int)(r));                                    \
  } while (0)

/* A2A_POST_BEGIN for the NCCL wrappers that dispatch with
 * A2A_POST_END_HOT (evkind their event's kind, a constant NCCL kind, which
 * the assertion checks): in_progress is result == ncclInProgress and ok is
 * result 0 or in progress - what a2a_event_set_result computes, without
 * reading the kind back from the event. */
#define A2A_POST_BEGIN_NCCL(ev, r, evkind)                                    \
  do {                                                                        \
    _Static_assert((evkind) >= A2A_EV_GET_UNIQUE_ID &&                        \
                       (evkind) <= A2A_EV_REDOP,                              \
                   "an NCCL kind (a2a_kind_is_nccl)");                        \
    a2a_errno_ = A2A_ERRNO;                                                   \
    (ev).result = (int)(r);                                                   \
    (ev).in_progress = (r) == A2A_NCCL_IN_PROGRESS;                           \
    (ev).ok = (r) == 0 || (r) == A2A_NCCL_IN_PROGRESS;                        \
  } while (0)

/* A2A_POST_BEGIN for the hot CUDA wrappers: their kind is never an NCCL
 * one, so `in_progress` stays 0 (a2a_shim_event_head) and `ok` is result
 * 0 - what a2a_event_set_result computes, without reading the kind back
 * from an event the handlers may have seen through a pointer. */
#define A2A_POST_BEGIN_HOT(ev, r)                                             \
  do {                                                                        \
    a2a_errno_ = A2A_ERRNO;                                                   \
    (ev).result = (int)(r);                                                   \
    (ev).ok = (r) == 0;                                                       \
  } while (0)

/* The same for the hot wrappers: the POST keeps the PRE's t_ns (one clock
 * read per call; nothing reads a launch's, copy's or event record's POST
 * time, and a query's only at a polling episode's start, from the host's
 * clock: wrap_cuda.c, A2A_POLL_QUERY_WRAP). */
#define A2A_POST_END_HOT(ev, evkind) A2A_POST_END_ROW(ev, (evkind), (unsigned)(evkind))

/* A2A_POST_END_HOT with the table's row `row` (as A2A_PRE_ROW). */
#define A2A_POST_END_ROW(ev, evkind, row)                                     \
  do {                                                                        \
    (ev).phase = A2A_POST;                                                    \
    a2a_dispatch_row(&(ev), (evkind), (row), A2A_POST);                       \
    a2a_rt_leave();                                                           \
    A2A_ERRNO = a2a_errno_;                                                   \
  } while (0)

/* Dispatch POST, leave the tool, restore errno as the real call left it. */
#define A2A_POST_END(ev)                                                      \
  do {                                                                        \
    a2a_shim_post(&(ev));                                                     \
    a2a_rt_leave();                                                           \
    A2A_ERRNO = a2a_errno_;                                                   \
  } while (0)

static inline void a2a_shim_event_init(a2a_event *ev, a2a_kind kind, const char *api,
                                       const void *callsite)
{
  *ev = (a2a_event){
      .kind = kind,
      .api = api,
      .device = a2a_shim_current_device(),
      .thread = a2a_rt_thread_index(),
      .seq = a2a_rt_next_call_seq(),
      .callsite = callsite,
  };
}

/* a2a_shim_event_head_at but for the stream and communicator, which the
 * caller stored (wrap_nccl.c's grouped operations: A2A_P2P_WRAP). */
static inline void a2a_shim_event_head_cs(a2a_event *ev, a2a_kind kind, const char *api, int device,
                                          const void *callsite)
{
  ev->kind = kind;
  ev->phase = A2A_PRE;
  ev->api = api;
  ev->result = 0;
  ev->ok = 0;
  ev->in_progress = 0;
  ev->device = device;
  ev->thread = a2a_rt_thread_index();
  ev->seq = a2a_rt_next_call_seq();
  ev->t_ns = 0;
  ev->callsite = callsite;
  ev->per_thread = 0;
}

/* a2a_shim_event_head with the device, call site, stream and
 * communicator given: each member stored once (the NCCL wrappers',
 * A2A_EVENT_NCCL in wrap_nccl.c, would otherwise overwrite four). */
static inline void a2a_shim_event_head_at(a2a_event *ev, a2a_kind kind, const char *api, int device,
                                          const void *callsite, void *stream, void *comm)
{
  a2a_shim_event_head_cs(ev, kind, api, device, callsite);
  ev->stream = stream;
  ev->comm = comm;
}

static inline void a2a_shim_event_head(a2a_event *ev, a2a_kind kind, const char *api,
                                       const void *callsite)
{
  a2a_shim_event_head_at(ev, kind, api, a2a_shim_current_device(), callsite, NULL, NULL);
}

static inline void a2a_shim_pre(a2a_event *ev)
{
  ev->phase = A2A_PRE;
  ev->t_ns = a2a_rt_now_ns();
  a2a_dispatch_inline(ev);
}

static inline void a2a_shim_post(a2a_event *ev)
{
  ev->phase = A2A_POST;
  ev->t_ns = a2a_rt_now_ns();
  a2a_dispatch_inline(ev);
}

/* rt_hostfn.c: cudaStreamAddCallback's trampoline (a2a_runtime.h has
 * cudaLaunchHostFunc's). */
a2a_rt_hostfn *a2a_rt_hostcb_take(void *stream, int per_thread, cudaStreamCallback_t cb,
                                  void *user);
void CUDART_CB a2a_rt_hostcb_run(cudaStream_t stream, cudaError_t status, void *slot);

#ifdef __cplusplus
}
#endif
#endif /* A2A_INTERCEPT_H */
