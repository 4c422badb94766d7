/* perf_stream.c - host-side stream habits that cost performance:
 *   perf.sync-heavy    cudaDeviceSynchronize (or a synchronization of every
 *                      stream the thread used) in step after step
 *   perf.stream-churn  streams or events created and destroyed per
 *                      communication operation
 * and the stream-priority table perf_comm.c uses for perf.stream-priority.
 *
 * perf.stream-churn's cost is measured, not presumed. Creating and
 * destroying a stream or event synchronizes nothing (cudaStreamDestroy and
 * cudaEventDestroy of a stream or event with pending work return at once
 * and release it when the work completes; creation enqueues nothing): what
 * churn costs is the host time of those driver calls. The analyzer times
 * each create/destroy call (its PRE to its POST) and, at exit, when the
 * pattern holds (about one created per operation and most destroyed
 * again, at least A2ACHECK_PERF_MIN_OPS of each), compares that time with
 * the wall time from the first creation to the last create/destroy call
 * (the whole churning period: a share taken at one moment would follow
 * the bursts): a warning when the share reaches A2ACHECK_PERF_MIN_GAIN,
 * else an info saying what was seen and what it cost. PyTorch's Stream.wait_stream (a new DisableTiming event per
 * call) is the common immaterial case.
 *
 * A "step", for perf.sync-heavy, is the span between two full
 * synchronizations of a thread that contains at least one communication
 * operation (perf_comm.c counts them). The check reports when
 * A2ACHECK_PERF_MIN_OPS such synchronized steps happened: a program that
 * synchronizes once at the end, or only waits on events, never reaches it.
 *
 * Concurrency: the priority table is lock-free (insert with CAS on create,
 * lookups on the hot path are plain atomic loads); counters are atomics;
 * per-thread state is thread-local. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "a2a_core.h"
#include "perf_internal.h"

#define PS_TABLE 4096        /* stream priority slots (power of two) */
#define CUDA_EVENT_DISABLE_TIMING 0x2u /* cudaEventDisableTiming (driver_types.h) */
#define PS_SYNC_STREAMS 8    /* streams tracked between full synchronizations */
#define PS_MAX_OPS_PER_SYNC 4 /* perf.sync-heavy: full synchronizations at least
                                 every this many communication operations on
                                 average; a program that synchronizes once at
                                 the end of a step of more operations is fine */

/* ------------------------------------------------------------------ */
/* Stream priorities. A slot's key is written once (CAS from NULL); a
 * destroyed stream's priority is reset to 0 so a reused handle starts at
 * the default until its own create event. */

static _Atomic(void *) g_skeys[PS_TABLE];
static atomic_int g_sprio[PS_TABLE];

static size_t ps_slot(const void *s) {
  uintptr_t x = (uintptr_t)s;
  x ^= x >> 15; x *= 0x2c1b3c6dU; x ^= x >> 12;
  return (size_t)x & (PS_TABLE - 1);
}

static void prio_set(void *s, int prio) {
  if (!s) return;
  size_t i = ps_slot(s);
  for (size_t k = 0; k < PS_TABLE; k++, i = (i + 1) & (PS_TABLE - 1)) {
    void *cur = atomic_load(&g_skeys[i]);
    if (cur == s) { atomic_store(&g_sprio[i], prio); return; }
    if (!cur) {
      void *expect = NULL;
      if (atomic_compare_exchange_strong(&g_skeys[i], &expect, s) || expect == s) {
        atomic_store(&g_sprio[i], prio);
        return;
      }
    }
  }
  /* Table full: the stream keeps the default priority 0. */
}

int a2a_perf_stream_priority(const void *s) {
  if (!s) return 0;
  size_t i = ps_slot(s);
  for (size_t k = 0; k < PS_TABLE; k++, i = (i + 1) & (PS_TABLE - 1)) {
    void *cur = atomic_load_explicit(&g_skeys[i], memory_order_acquire);
    if (cur == s) return atomic_load_explicit(&g_sprio[i], memory_order_relaxed);
    if (!cur) return 0;
  }
  return 0;
}

/* ------------------------------------------------------------------ */
/* Counters. */

static atomic_uint g_gen = 1;
static atomic_ullong g_stream_creates, g_stream_destroys, g_event_creates, g_event_destroys;
static atomic_ullong g_synced_steps, g_synced_ops;
static atomic_bool g_warned_streams, g_warned_events, g_warned_sync;
/* perf.stream-churn's measurements, [0] streams, [1] events: host time in
 * the create and destroy calls, the first creation's time, and (events)
 * how many were created with timing enabled. */
static atomic_ullong g_churn_ns[2], g_churn_first_ns[2], g_churn_last_ns[2];
static atomic_ullong g_event_timing;
static const void *g_churn_site[2];    /* written once, by the first creator */
static a2a_stack g_churn_stack[2];

typedef struct ps_stream {
  void *s;
  bool synced;
} ps_stream;

typedef struct ps_tls {
  unsigned gen;
  uint64_t churn_pre_ns;       /* PRE time of this thread's create/destroy call */
  uint64_t ops_at_sync;        /* a2a_perf_ops_thread() at the last full sync */
  ps_stream st[PS_SYNC_STREAMS];
  int nst;
  ps_stream *last;             /* the stream of the last work (an entry of st:
                                  a pointer, not an index, so that the hot
                                  test needs no address arithmetic) */
  bool lost;                   /* more streams than tracked: no equivalence */
} ps_tls;
static _Thread_local ps_tls t_ps;

/* The key no stream has (a2a_perf_skey maps the handle 1 to NULL): an
 * empty table's st[0].s, so that note_work's test of *last needs no
 * bound (last is &st[i] with i < nst, or &st[0] while nst == 0). */
#define PS_NO_STREAM ((void *)1)

static void forget_streams(ps_tls *t) {
  t->nst = 0;
  t->last = &t->st[0];
  t->st[0].s = PS_NO_STREAM;
}

static ps_tls *tls(void) {
  unsigned gen = atomic_load_explicit(&g_gen, memory_order_relaxed);
  if (__builtin_expect(t_ps.gen != gen, 0)) {
    memset(&t_ps, 0, sizeof t_ps);
    t_ps.gen = gen;
    forget_streams(&t_ps);
  }
  return &t_ps;
}

__attribute__((noinline)) static void note_work_slow(ps_tls *t, void *s);

static inline void note_work(ps_tls *t, void *s) {
  /* Most launches go to the stream of the previous one (st[last], or
   * PS_NO_STREAM while the table is empty). */
  if (__builtin_expect(t->last->s == s, 1)) {
    t->last->synced = false;
    return;
  }
  note_work_slow(t, s);
}

/* The table's keys are distinct (one is added only when the scan finds
 * none), so the entry after the last one - the first one after the last
 * entry - when it has s, is the one the scan would find: a program that
 * rotates over its streams (nccl-tests -g N, one stream per device; MoE's
 * compute and communication streams in turn) names them in their table
 * order. With the table empty that is st[0], whose key PS_NO_STREAM is no
 * stream's. */
static void note_work_slow(ps_tls *t, void *s) {
  ps_stream *next = t->last + 1;
  if (next >= &t->st[t->nst]) next = &t->st[0];
  if (next->s == s) {
    next->synced = false;
    t->last = next;
    return;
  }
  for (int i = 0; i < t->nst; i++)
    if (t->st[i].s == s) { t->st[i].synced = false; t->last = &t->st[i]; return; }
  if (t->nst < PS_SYNC_STREAMS) {
    t->st[t->nst].s = s;
    t->st[t->nst].synced = false;
    t->last = &t->st[t->nst];
    t->nst++;
  } else {
    t->lost = true;
  }
}

/* A cudaStreamSynchronize: true when, with it, every stream this thread put
 * work on since the last full synchronization (at least two) is synchronized. */
static bool note_stream_sync(ps_tls *t, void *s) {
  bool all = t->nst >= 2 && !t->lost;
  bool found = false;
  for (int i = 0; i < t->nst; i++) {
    if (t->st[i].s == s) { t->st[i].synced = true; found = true; }
    if (!t->st[i].synced) all = false;
  }
  return found && all;
}

static void full_sync(ps_tls *t, const a2a_event *ev, const char *how) {
  uint64_t ops = a2a_perf_ops_thread();
  bool step = ops > t->ops_at_sync;
  uint64_t span = ops - t->ops_at_sync;
  t->ops_at_sync = ops;
  forget_streams(t);
  t->lost = false;
  if (!step) return;
  uint64_t n = atomic_fetch_add(&g_synced_steps, 1) + 1;
  uint64_t sops = atomic_fetch_add(&g_synced_ops, span) + span;
  /* Per operation or per few operations: a training step that ends with
   * one synchronization after many operations (reading the loss) is not
   * the pattern. */
  if (sops > PS_MAX_OPS_PER_SYNC * n) return;
  if (n < a2a_perf_min_ops() || atomic_load(&g_warned_sync) ||
      !a2a_check_on(A2A_CK_PERF_SYNC_HEAVY) || atomic_exchange(&g_warned_sync, true))
    return;
  char msg[768], det[256];
  snprintf(msg, sizeof msg,
           "%s was issued in %llu steps so far, one every %.1f communication operations (a "
           "step = the work between two full synchronizations that contains communication; "
           "%llu communication operations in all): "
           "each one drains the GPU, so the CPU cannot queue the next step while this one "
           "runs and the pipeline empties every step. Fix: synchronize only where the host "
           "needs a result (a loss value, a checkpoint), with cudaStreamSynchronize on the one "
           "stream or an event; order streams on the GPU with cudaStreamWaitEvent.",
           how, (unsigned long long)n, (double)sops / (double)n,
           (unsigned long long)a2a_perf_ops_total());
  a2a_json j;
  a2a_json_init(&j, det, sizeof det);
  a2a_json_obj_begin(&j, NULL);
  a2a_json_str(&j, "call", how);
  a2a_json_uint(&j, "synchronized_steps", n);
  a2a_json_dbl(&j, "ops_per_sync", (double)sops / (double)n);
  a2a_json_uint(&j, "comm_ops", a2a_perf_ops_total());
  a2a_json_obj_end(&j);
  a2a_finding f = {.check = A2A_CK_PERF_SYNC_HEAVY, .severity = A2A_SEV_WARNING, .site = ev->callsite,
                   .message = msg, .details_json = det, .capture_stack = true};
  a2a_report(&f);
}

/* Whether the churn pattern holds for streams/events: created about once
 * per communication operation or more, and mostly destroyed again (a pool
 * created once and kept is fine). */
static bool churn_pattern(int k, uint64_t *c, uint64_t *d, uint64_t *ops) {
  *c = atomic_load(k ? &g_event_creates : &g_stream_creates);
  *d = atomic_load(k ? &g_event_destroys : &g_stream_destroys);
  *ops = a2a_perf_ops_total();
  uint64_t min = a2a_perf_min_ops();
  return *c >= min && *d >= min && *ops >= min && *c * 2 >= *ops && *d * 2 >= *c;
}

/* Report perf.stream-churn for kind k (0 streams, 1 events), at exit: a
 * warning when the measured share of the host's time is material, an info
 * otherwise. */
static void report_churn(int k) {
  uint64_t c, d, ops;
  atomic_bool *warned = k ? &g_warned_events : &g_warned_streams;
  if (atomic_load(warned) || !churn_pattern(k, &c, &d, &ops) ||
      !a2a_check_on(A2A_CK_PERF_STREAM_CHURN))
    return;
  uint64_t cost = atomic_load(&g_churn_ns[k]), first = atomic_load(&g_churn_first_ns[k]);
  uint64_t last = atomic_load(&g_churn_last_ns[k]);
  double span = first && last > first ? (double)(last - first) : 0;
  double share = span > 0 ? (double)cost / span : 0;
  bool material = share >= a2a_perf_min_gain();
  if (atomic_exchange(warned, true)) return;
  const char *what = k ? "events" : "streams";
  double per_op = (double)c / (double)ops;
  char msg[1400], det[384], fix[400] = "", measured[300];
  snprintf(measured, sizeof measured,
           "The host spent %.3f ms in those create and destroy calls, %.1f%% of the %.1f ms "
           "from the first creation to the last call (A2ACHECK_PERF_MIN_GAIN=%.0f%%)",
           (double)cost * 1e-6, 100.0 * share, span * 1e-6, 100.0 * a2a_perf_min_gain());
  const char *cache = k ? a2a_hostsvc->getenv("TORCH_NCCL_CUDA_EVENT_CACHE") : NULL;
  if (k)
    snprintf(fix, sizeof fix,
             "create the events once and reuse them (PyTorch: keep a torch.cuda.Event and call "
             "event.record(stream) and other.wait_event(event) instead of "
             "other.wait_stream(stream), which makes a new event per call)%s",
             cache && strcmp(cache, "0") == 0
                 ? "; TORCH_NCCL_CUDA_EVENT_CACHE=0 is set: remove it, so that "
                   "ProcessGroupNCCL reuses its per-collective events again"
                 : "");
  else
    snprintf(fix, sizeof fix,
             "create the streams once and reuse them (torch.cuda.Stream() takes a stream "
             "from PyTorch's pool and creates none: these come from code that calls "
             "cudaStreamCreate* itself)");
  if (material)
    snprintf(msg, sizeof msg,
             "%llu %s were created and %llu destroyed during %llu communication operations "
             "(%.1f per operation). %s: a material share of the host's time. Creating and "
             "destroying CUDA %s synchronizes nothing (a destroyed %s with pending work is "
             "released once the work completes), but each is a driver call on the host. Fix: "
             "%s.",
             (unsigned long long)c, what, (unsigned long long)d, (unsigned long long)ops, per_op,
             measured, what, k ? "event" : "stream", fix);
  else
    snprintf(msg, sizeof msg,
             "%llu %s were created and %llu destroyed during %llu communication operations "
             "(%.1f per operation%s). %s, below the share that would matter. Creating and "
             "destroying CUDA %s synchronizes nothing; it costs only those host calls, so this "
             "matters only if the host is the bottleneck. To avoid it anyway: %s.",
             (unsigned long long)c, what, (unsigned long long)d, (unsigned long long)ops, per_op,
             k && atomic_load(&g_event_timing) == 0
                 ? "; without timing, as PyTorch's Stream.wait_stream and record_event() make "
                   "them, one per call"
                 : "",
             measured, what, fix);
  a2a_json j;
  a2a_json_init(&j, det, sizeof det);
  a2a_json_obj_begin(&j, NULL);
  a2a_json_str(&j, "kind", k ? "event" : "stream");
  a2a_json_uint(&j, "created", c);
  a2a_json_uint(&j, "destroyed", d);
  a2a_json_uint(&j, "comm_ops", ops);
  a2a_json_dbl(&j, "per_op", per_op);
  if (k) a2a_json_uint(&j, "created_with_timing", atomic_load(&g_event_timing));
  a2a_json_dbl(&j, "host_time_s", (double)cost * 1e-9);
  a2a_json_dbl(&j, "span_s", span * 1e-9);
  a2a_json_dbl(&j, "host_time_fraction", share);
  a2a_json_dbl(&j, "min_gain", a2a_perf_min_gain());
  a2a_json_obj_end(&j);
  a2a_finding f = {.check = A2A_CK_PERF_STREAM_CHURN,
                   .severity = material ? A2A_SEV_WARNING : A2A_SEV_INFO,
                   .site = g_churn_site[k], .message = msg, .details_json = det,
                   .stack = g_churn_stack[k].n ? &g_churn_stack[k] : NULL};
  a2a_report(&f);
}

__attribute__((noinline)) static void ps_other(const a2a_event *ev);
/* A create or destroy call of kind k (0 streams, 1 events) returned: add
 * its duration (from this thread's PRE) to the measured host time. */
static void churn_time(int k, const a2a_event *ev, bool create) {
  ps_tls *t = tls();
  uint64_t pre = t->churn_pre_ns;
  t->churn_pre_ns = 0;
  if (pre && ev->t_ns >= pre) atomic_fetch_add(&g_churn_ns[k], ev->t_ns - pre);
  uint64_t last = atomic_load_explicit(&g_churn_last_ns[k], memory_order_relaxed);
  while (ev->t_ns > last &&
         !atomic_compare_exchange_weak(&g_churn_last_ns[k], &last, ev->t_ns)) {
  }
  if (create && pre) {
    uint64_t zero = 0;
    if (atomic_compare_exchange_strong(&g_churn_first_ns[k], &zero, pre)) {
      /* The first creation's stack (once per kind), reported at exit. */
      a2a_hostsvc->capture_stack(&g_churn_stack[k]);
      g_churn_site[k] = ev->callsite;
    }
  }
}

static void perf_stream_on_event(const a2a_event *ev) {
  /* Launches (the hot path, PRE only): the stream had work since its last
   * synchronization. */
  if (ev->kind == A2A_EV_LAUNCH) note_work(tls(), a2a_perf_skey(ev->stream, ev->per_thread));
  /* Copies (PRE): an asynchronous one is work on its stream, as in
   * ps_other, without entering it. */
  else if (ev->kind == A2A_EV_MEMCPY && ev->phase == A2A_PRE && ev->u.copy.async)
    note_work(tls(), a2a_perf_skey(ev->stream, ev->per_thread));
  else ps_other(ev);
}

/* ps_by_launch past its inline test: note_work. A launch is quiet
 * (a2a_analyzer.launch_quiet) once the stream of the last work is its
 * own (last->s == key: the same launch again only clears synced, cleared
 * already); with a full table (lost) it is not (note_work scans again). */
__attribute__((noinline)) static void ps_launch_rest(ps_tls *t, const a2a_event *ev) {
  void *k = a2a_perf_skey(ev->stream, ev->per_thread);
  note_work(t, k);
  if (t->last->s != k) a2a_launch_unquiet(ev->thread);
}

/* The hot kinds, per kind, for the dispatch table (the same calls as
 * perf_stream_on_event and ps_other make): work on the event's stream at
 * a launch, an NCCL operation or an asynchronous copy (PRE). */
static void ps_by_launch(const a2a_event *ev) {
  ps_tls *t = tls();
  /* note_work's common case without computing the key first. */
  if (__builtin_expect(a2a_perf_skey_is(ev->stream, t->last->s), 1)) {
    t->last->synced = false;
    return;
  }
  ps_launch_rest(t, ev);
}
/* An NCCL operation (PRE only: A2A_EV_COLL and A2A_EV_P2P are in the pre
 * mask, not in the post mask, so the dispatcher calls this for PREs only,
 * as ps_by_memcpy): note_work, its common case - the stream of the
 * thread's last work, a handle that is its own key (a2a_perf_skey_is) -
 * without computing the key first, as ps_by_launch. */
static void ps_by_op(const a2a_event *ev) {
  ps_tls *t = tls();
  if (__builtin_expect(a2a_perf_skey_is(ev->stream, t->last->s), 1)) {
    t->last->synced = false;
    return;
  }
  note_work(t, a2a_perf_skey(ev->stream, ev->per_thread));
}
/* (Without perf_stream_on_event's test of the phase: the dispatcher calls
 * it for PREs only, A2A_EV_MEMCPY being in the pre mask and not in the
 * post mask.) */
static void ps_by_memcpy(const a2a_event *ev) {
  if (ev->u.copy.async) note_work(tls(), a2a_perf_skey(ev->stream, ev->per_thread));
}
static const a2a_by_kind ps_by_kind = {
    .fn = {[A2A_EV_LAUNCH] = ps_by_launch, [A2A_EV_COLL] = ps_by_op, [A2A_EV_P2P] = ps_by_op,
           [A2A_EV_MEMCPY] = ps_by_memcpy}};

static void ps_other(const a2a_event *ev) {
  ps_tls *t;
  switch (ev->kind) {
  case A2A_EV_STREAM_CREATE:
  case A2A_EV_STREAM_DESTROY:
  case A2A_EV_EVENT_CREATE:
  case A2A_EV_EVENT_DESTROY: {
    if (ev->phase == A2A_PRE) {
      tls()->churn_pre_ns = ev->t_ns;
      break;
    }
    int k = ev->kind == A2A_EV_EVENT_CREATE || ev->kind == A2A_EV_EVENT_DESTROY;
    bool create = ev->kind == A2A_EV_STREAM_CREATE || ev->kind == A2A_EV_EVENT_CREATE;
    churn_time(k, ev, create && ev->result == 0);
    if (ev->result != 0) break;
    if (ev->kind == A2A_EV_STREAM_CREATE) {
      prio_set(ev->stream, ev->u.stream_create.priority);
      atomic_fetch_add(&g_stream_creates, 1);
    } else if (ev->kind == A2A_EV_STREAM_DESTROY) {
      if (a2a_perf_stream_priority(ev->stream) != 0) prio_set(ev->stream, 0);
      atomic_fetch_add(&g_stream_destroys, 1);
    } else if (ev->kind == A2A_EV_EVENT_CREATE) {
      atomic_fetch_add(&g_event_creates, 1);
      if (!(ev->u.event.flags & CUDA_EVENT_DISABLE_TIMING)) atomic_fetch_add(&g_event_timing, 1);
    } else {
      atomic_fetch_add(&g_event_destroys, 1);
    }
    break;
  }
  case A2A_EV_COLL:
  case A2A_EV_P2P:
    if (ev->phase == A2A_PRE) note_work(tls(), a2a_perf_skey(ev->stream, ev->per_thread));
    break;
  case A2A_EV_MEMCPY:
  case A2A_EV_MEMSET:
    if (ev->phase == A2A_PRE && ev->u.copy.async)
      note_work(tls(), a2a_perf_skey(ev->stream, ev->per_thread));
    break;
  case A2A_EV_DEVICE_SYNC:
    if (ev->phase == A2A_PRE) full_sync(tls(), ev, "cudaDeviceSynchronize");
    break;
  case A2A_EV_STREAM_SYNC:
    if (ev->phase == A2A_PRE) {
      t = tls();
      if (note_stream_sync(t, a2a_perf_skey(ev->stream, ev->per_thread)))
        full_sync(t, ev, "cudaStreamSynchronize of every stream in use");
    }
    break;
  default:
    break;
  }
}

static int perf_stream_init(void) {
  for (size_t i = 0; i < PS_TABLE; i++) {
    atomic_store(&g_skeys[i], NULL);
    atomic_store(&g_sprio[i], 0);
  }
  atomic_store(&g_stream_creates, 0);
  atomic_store(&g_stream_destroys, 0);
  atomic_store(&g_event_creates, 0);
  atomic_store(&g_event_destroys, 0);
  atomic_store(&g_synced_steps, 0);
  atomic_store(&g_synced_ops, 0);
  atomic_store(&g_warned_streams, false);
  atomic_store(&g_warned_events, false);
  atomic_store(&g_warned_sync, false);
  for (int k = 0; k < 2; k++) {
    atomic_store(&g_churn_ns[k], 0);
    atomic_store(&g_churn_last_ns[k], 0);
    g_churn_site[k] = NULL;
    g_churn_stack[k].n = 0;
    atomic_store(&g_churn_first_ns[k], 0);
  }
  atomic_store(&g_event_timing, 0);
  atomic_fetch_add(&g_gen, 1);
  return 0;
}

/* A forked child counts its own streams, events and synchronized steps:
 * the parent's belong to the parent's report (the priority table is kept:
 * harmless, and a child cannot use the parent's streams anyway). */
static void perf_stream_after_fork_child(void) {
  atomic_store(&g_stream_creates, 0);
  atomic_store(&g_stream_destroys, 0);
  atomic_store(&g_event_creates, 0);
  atomic_store(&g_event_destroys, 0);
  atomic_store(&g_synced_steps, 0);
  atomic_store(&g_synced_ops, 0);
  atomic_store(&g_warned_streams, false);
  atomic_store(&g_warned_events, false);
  atomic_store(&g_warned_sync, false);
  for (int k = 0; k < 2; k++) {
    atomic_store(&g_churn_ns[k], 0);
    atomic_store(&g_churn_last_ns[k], 0);
    g_churn_site[k] = NULL;
    g_churn_stack[k].n = 0;
    atomic_store(&g_churn_first_ns[k], 0);
  }
  atomic_store(&g_event_timing, 0);
  atomic_fetch_add(&g_gen, 1);
}

/* At exit: perf.stream-churn, with the whole run's measurement. */
static void perf_stream_fini(void) {
  report_churn(0);
  report_churn(1);
}

/* Also runs for perf_comm's checks: perf.stream-priority reads the stream
 * priorities this analyzer records. */
/* The POSTs perf_stream handles. ps_by_launch, ps_by_op and ps_by_memcpy
 * take the phase for granted (PRE): their kinds must stay out of it. */
#define PS_POST_KINDS                                                             \
  (A2A_KIND_BIT(A2A_EV_STREAM_CREATE) | A2A_KIND_BIT(A2A_EV_STREAM_DESTROY) |     \
   A2A_KIND_BIT(A2A_EV_EVENT_CREATE) | A2A_KIND_BIT(A2A_EV_EVENT_DESTROY))
_Static_assert(!(PS_POST_KINDS & (A2A_KIND_BIT(A2A_EV_LAUNCH) | A2A_KIND_BIT(A2A_EV_COLL) |
                                  A2A_KIND_BIT(A2A_EV_P2P) | A2A_KIND_BIT(A2A_EV_MEMCPY))),
               "the by-kind handlers of these kinds assume a PRE");

const a2a_analyzer a2a_analyzer_perf_stream = {
    .name = "perf_stream",
    .owner = A2A_OWN_PERF_STREAM | A2A_OWN_PERF_COMM,
    .pre = A2A_KIND_BIT(A2A_EV_LAUNCH) | A2A_KIND_BIT(A2A_EV_COLL) |
           A2A_KIND_BIT(A2A_EV_P2P) | A2A_KIND_BIT(A2A_EV_MEMCPY) |
           A2A_KIND_BIT(A2A_EV_MEMSET) | A2A_KIND_BIT(A2A_EV_DEVICE_SYNC) |
           A2A_KIND_BIT(A2A_EV_STREAM_SYNC) | A2A_KIND_BIT(A2A_EV_STREAM_CREATE) |
           A2A_KIND_BIT(A2A_EV_STREAM_DESTROY) | A2A_KIND_BIT(A2A_EV_EVENT_CREATE) |
           A2A_KIND_BIT(A2A_EV_EVENT_DESTROY),
    .post = PS_POST_KINDS,
    .init = perf_stream_init,
    .on_event = perf_stream_on_event,
    .by_kind = &ps_by_kind,
    /* ps_by_launch's state is the thread's own (t_ps; g_gen at init and
     * fork): after a launch that left last->s its stream's key, the same
     * launch only clears a flag it cleared (ps_launch_rest). */
    .launch_quiet = true,
    .fini = perf_stream_fini,
    .after_fork_child = perf_stream_after_fork_child,
};
