/* rt_hostfn.c - cudaLaunchHostFunc's trampoline: the analyzers learn when
 * a host function starts to run (A2A_EV_HOST_FUNC_RAN).
 *
 * Why. A host function runs once everything enqueued before it on its
 * stream has completed; a program may wait for it with a flag (no CUDA
 * call) and then use that work's results, from the host or from another
 * stream. Without knowing when the function ran, the stream analyzer sees
 * no ordering there and reports a race that cannot happen.
 *
 * How. The wrapper (wrap_cuda.c, A2A_HOST_FUNC_WRAP) takes a slot holding
 * the application's (fn, user), enqueues a2a_rt_hostfn_run with the slot
 * instead, and passes the slot's address as the HOST_FUNC event's token.
 * The trampoline emits A2A_EV_HOST_FUNC_RAN for the token and then calls
 * fn(user) - so whatever fn makes visible (a flag) comes after the
 * analyzers saw the RAN. The RAN must also come after the HOST_FUNC's POST
 * (where the analyzer records what the token stands for), but the function
 * may run before the enqueuing thread reaches its POST; each slot has two
 * bits, POSTED (set by the enqueuing thread after its POST) and RAN (set
 * by the trampoline), and whichever side sets the second one emits the
 * RAN and frees the slot. So there is exactly one RAN per token, after its
 * POST; when the function runs first, its RAN is emitted by the enqueuing
 * thread before the wrapper returns - before that thread can see what fn
 * did. (Another thread that sees fn's effect in that short window is not
 * ordered: the analyzer then misses an ordering, never invents one.)
 *
 * Not wrapped (fn enqueued as given, token NULL): when no analyzer wants
 * A2A_EV_HOST_FUNC_RAN; on a stream that is capturing or whose capture
 * status cannot be told - a graph's host node would call the trampoline
 * at every launch of the graph, after its slot was freed (the legacy
 * default stream is never captured, and not asked); when no slot is
 * free. The application's function, argument, stream and result are
 * unchanged in every case.
 *
 * cudaStreamAddCallback's callbacks (the older form: the stream and its
 * status are passed too) go through their own trampoline the same way
 * (A2A_STREAM_CB_WRAP, a2a_rt_hostcb_run); CUDA runs them even after an
 * error on the stream, with that status.
 *
 * Slots are a fixed array (nothing allocates); a slot is taken with one
 * compare-and-swap after a probe of at most HOSTFN_PROBES slots from a
 * rotating position. The slot's fn and user are written before the real
 * enqueue and read by the trampoline after it: the runtime's own hand-off
 * between the enqueuing thread and its callback thread orders them.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "intercept.h"
#include "rt_internal.h"

#define HOSTFN_SLOTS 1024 /* host functions enqueued and not yet run */
#define HOSTFN_PROBES 64

enum { HF_FREE = 0, HF_TAKEN = 1, HF_POSTED = 2, HF_RAN = 4 };

struct a2a_rt_hostfn {
  _Atomic unsigned state;
  void (*fn)(void *);                           /* cudaLaunchHostFunc's, or */
  void (*cb)(cudaStream_t, cudaError_t, void *); /* cudaStreamAddCallback's */
  void *user;
};

static a2a_rt_hostfn g_hf[HOSTFN_SLOTS];
static _Atomic unsigned g_hf_next;

static a2a_rt_hostfn *slot_take(void *stream, int per_thread, void (*fn)(void *),
                                void (*cb)(cudaStream_t, cudaError_t, void *), void *user) {
  if ((!fn && !cb) || !a2a_kind_wanted(A2A_EV_HOST_FUNC_RAN)) return NULL;
  uintptr_t s = (uintptr_t)stream;
  /* The legacy default stream is never captured (CUDA refuses to begin a
   * capture on it; an enqueue on it while another stream captures fails),
   * so it is not asked - asking it could break that other capture. */
  bool legacy = (s == 0 && !per_thread) || s == (uintptr_t)cudaStreamLegacy;
  if (!legacy && !a2a_rt_stream_not_capturing(s == 0 ? (void *)cudaStreamPerThread : stream))
    return NULL;
  for (unsigned k = 0; k < HOSTFN_PROBES; k++) {
    a2a_rt_hostfn *h =
        &g_hf[atomic_fetch_add_explicit(&g_hf_next, 1, memory_order_relaxed) % HOSTFN_SLOTS];
    unsigned expect = HF_FREE;
    if (atomic_compare_exchange_strong_explicit(&h->state, &expect, HF_TAKEN,
                                                memory_order_acquire, memory_order_relaxed)) {
      h->fn = fn;
      h->cb = cb;
      h->user = user;
      return h;
    }
  }
  return NULL;
}

a2a_rt_hostfn *a2a_rt_hostfn_take(void *stream, int per_thread, void (*fn)(void *), void *user) {
  return slot_take(stream, per_thread, fn, NULL, user);
}

a2a_rt_hostfn *a2a_rt_hostcb_take(void *stream, int per_thread,
                                  void (*cb)(cudaStream_t, cudaError_t, void *), void *user) {
  return slot_take(stream, per_thread, NULL, cb, user);
}

/* The RAN event of slot h, then h freed. On the trampoline's thread or the
 * enqueuing one (see the header); only while the runtime takes events
 * (a2a_rt_enter: READY, and not inside an intercepted call on this
 * thread - an enqueuing thread is past its wrapper's leave). */
static void ran(a2a_rt_hostfn *h) {
  if (a2a_rt_enter()) {
    a2a_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = A2A_EV_HOST_FUNC_RAN;
    ev.phase = A2A_POST;
    ev.api = "cudaLaunchHostFunc";
    ev.device = -1;
    ev.thread = a2a_rt_thread_index();
    ev.u.host_fn.fn = h->fn ? (void *)h->fn : (void *)h->cb;
    ev.u.host_fn.user = h->user;
    ev.u.host_fn.token = h;
    a2a_event_set_result(&ev, 0);
    a2a_dispatch(&ev);
    a2a_rt_leave();
  }
  atomic_store_explicit(&h->state, HF_FREE, memory_order_release);
}

/* The RAN bit of slot h (see the header); its RAN when its POST came. */
static void started(a2a_rt_hostfn *h) {
  int saved = errno;
  if (atomic_fetch_or_explicit(&h->state, HF_RAN, memory_order_acq_rel) & HF_POSTED) ran(h);
  errno = saved;
}

void a2a_rt_hostfn_run(void *slot) {
  a2a_rt_hostfn *h = slot;
  void (*fn)(void *) = h->fn;
  void *user = h->user;
  started(h);
  fn(user);
}

void CUDART_CB a2a_rt_hostcb_run(cudaStream_t stream, cudaError_t status, void *slot) {
  a2a_rt_hostfn *h = slot;
  void (*cb)(cudaStream_t, cudaError_t, void *) = h->cb;
  void *user = h->user;
  started(h);
  cb(stream, status, user);
}

void a2a_rt_hostfn_posted(a2a_rt_hostfn *h, bool enqueued) {
  int saved = errno;
  if (!enqueued) atomic_store_explicit(&h->state, HF_FREE, memory_order_release);
  else if (atomic_fetch_or_explicit(&h->state, HF_POSTED, memory_order_acq_rel) & HF_RAN) ran(h);
  errno = saved;
}
