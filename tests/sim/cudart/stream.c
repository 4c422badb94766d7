/* stream.c - streams, work items, worker threads and host-side
 * synchronization of the simulator's CUDA runtime (see sim_rt.h for the
 * model; events are in event.c), plus the a2asim_stream_* internal API used
 * by the simulated NCCL.
 *
 * Handles. Streams live in a fixed slab (allocated once, like events) and a
 * handle is a pointer into its slab, so validating a handle is a range check
 * plus a state/generation check, without a global lock. A slot is recycled
 * only after its worker has drained and exited; sequence numbers continue
 * across incarnations, so a stale dependency (stream, seq) on a recycled slot
 * is already satisfied. Mutexes and condition variables of a slot are
 * initialized once per process generation (fork child = new generation) and
 * never while another thread may use them.
 *
 * Locks: sim_dev[d].mu (device stream list) may be taken before a stream's
 * mu; a stream's mu before an event's mu; several stream mus only in address
 * order (enqueue_multi). Workers never hold a lock while running a payload.
 */
#include "sim_rt.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#define STREAM_CAP 16384u

static pthread_mutex_t slab_mu = PTHREAD_MUTEX_INITIALIZER;
static sim_stream *stream_slab;     /* STREAM_CAP slots */
static unsigned stream_bump;
static sim_stream *stream_free;
static _Atomic unsigned long long stream_ids = 16;
static pthread_mutex_t legacy_mu = PTHREAD_MUTEX_INITIALIZER;

/* Per-thread default streams of the calling thread, one per device. */
static _Thread_local sim_stream *tls_pts[SIM_MAX_DEVICES];
static _Thread_local unsigned tls_pts_gen;
static pthread_key_t pts_key;
static pthread_once_t pts_key_once = PTHREAD_ONCE_INIT;

/* calloc of a large block is a lazily committed anonymous mapping, and
 * unlike a raw mmap it is heap memory that leak checkers scan (items still
 * queued at exit are then reachable, not leaked). */
static void *slab_map(size_t bytes) { return calloc(1, bytes); }

/* ---- items ---------------------------------------------------------------- */

/* Items come from a pool of fixed-size blocks (room for
 * SIM_ITEM_POOL_EXTRA bytes after the item; larger ones from malloc),
 * carved SIM_ITEM_SLAB at a time from one allocation and never given back:
 * the application thread allocates an item per enqueued operation and the
 * stream's worker frees it, so with malloc every allocation missed the
 * allocating thread's cache (glibc's tcache is the freeing thread's) and
 * its cost varied with how far the worker lagged - by hundreds of
 * instructions per call on a loaded machine, which the benchmarks'
 * instruction counts of the calls (bench/) charged to whichever run was
 * unlucky. A real runtime enqueues into preallocated queues; with the
 * pool an enqueue costs the same whatever the worker does (a slab's
 * allocation is shared by its SIM_ITEM_SLAB items). The pool holds as many
 * blocks as were ever queued at once; the slabs stay reachable from
 * g_slabs, so leak checkers see no leak. */
enum { SIM_ITEM_POOL_EXTRA = 192, SIM_ITEM_SLAB = 64 };
#define SIM_ITEM_BLOCK                                                                     \
  ((sizeof(sim_item) + SIM_ITEM_POOL_EXTRA + _Alignof(max_align_t) - 1) &                   \
   ~(_Alignof(max_align_t) - 1))
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static sim_item *pool_head;
static void *g_slabs;   /* each slab's first block-sized header: the next slab */

/* pool_mu held: one more slab's blocks onto the pool; false when out of
 * memory. */
static bool pool_refill(void) {
  char *slab = malloc(SIM_ITEM_BLOCK * (SIM_ITEM_SLAB + 1));
  if (!slab) return false;
  *(void **)slab = g_slabs;
  g_slabs = slab;
  for (int i = SIM_ITEM_SLAB; i >= 1; i--) {
    sim_item *it = (sim_item *)(slab + (size_t)i * SIM_ITEM_BLOCK);
    it->next = pool_head;
    pool_head = it;
  }
  return true;
}

sim_item *sim_item_new(int kind, size_t extra) {
  sim_item *it = NULL;
  bool pooled = extra <= SIM_ITEM_POOL_EXTRA;
  if (pooled) {
    pthread_mutex_lock(&pool_mu);
    if (pool_head || pool_refill()) {
      it = pool_head;
      pool_head = it->next;
    }
    pthread_mutex_unlock(&pool_mu);
  } else {
    it = malloc(sizeof *it + extra);   /* extra bytes are the caller's */
  }
  if (!it) return NULL;
  memset(it, 0, sizeof *it);
  it->kind = kind;
  it->extra = extra;
  it->pooled = pooled;
  it->deps = it->deps_inline;
  it->capdeps = 2;
  return it;
}

/* Drops the item's reference to a capturable payload (release(arg) when it
 * was the last one). */
static void item_drop_holder(sim_item *it) {
  if (it->kind != IT_FN || !it->u.fn.holder) return;
  struct sim_fn_holder *h = it->u.fn.holder;
  it->u.fn.holder = NULL;
  if (atomic_fetch_sub(&h->refs, 1) == 1) {
    if (h->release) h->release(h->arg);
    free(h);
  }
}

void sim_item_free(sim_item *it) {
  if (!it) return;
  item_drop_holder(it);
  if (it->deps != it->deps_inline) free(it->deps);
  if (!it->pooled) {
    free(it);
    return;
  }
  pthread_mutex_lock(&pool_mu);
  it->next = pool_head;
  pool_head = it;
  pthread_mutex_unlock(&pool_mu);
}

int sim_item_add_dep(sim_item *it, sim_stream *s, uint64_t seq) {
  for (int i = 0; i < it->ndeps; i++)
    if (it->deps[i].s == s) {
      if (it->deps[i].seq < seq) it->deps[i].seq = seq;
      return 0;
    }
  if (it->ndeps == it->capdeps) {
    int cap = it->capdeps * 2;
    struct sim_dep *d = malloc(sizeof *d * (size_t)cap);
    if (!d) return -1;
    memcpy(d, it->deps, sizeof *d * (size_t)it->ndeps);
    if (it->deps != it->deps_inline) free(it->deps);
    it->deps = d;
    it->capdeps = cap;
  }
  it->deps[it->ndeps].s = s;
  it->deps[it->ndeps].seq = seq;
  it->ndeps++;
  return 0;
}

/* ---- waiting on completion ------------------------------------------------- */

void sim_wait_done(sim_stream *s, uint64_t seq) {
  if (sim_done_of(s) >= seq) return;
  /* A very short spin catches items that are about to finish; then sleep. */
  for (int i = 0; i < 64; i++) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if (sim_done_of(s) >= seq) return;
  }
  pthread_mutex_lock(&s->mu);
  s->waiters++;
  while (sim_done_of(s) < seq) pthread_cond_wait(&s->done_cv, &s->mu);
  s->waiters--;
  pthread_mutex_unlock(&s->mu);
}

void sim_stream_wait_all(sim_stream *s) {
  sim_wait_done(s, atomic_load(&s->enq_seq));
}

void sim_device_wait_all(int dev) {
  if (dev < 0 || dev >= SIM_MAX_DEVICES) return;
  sim_device *d = &sim_dev[dev];
  size_t n = 0, cap = 16;
  struct sim_dep *snap = malloc(sizeof *snap * cap);
  pthread_mutex_lock(&d->mu);
  for (sim_stream *s = d->streams; s; s = s->dnext) {
    uint64_t e = atomic_load(&s->enq_seq);
    if (sim_done_of(s) >= e) continue;
    if (n == cap) {
      struct sim_dep *g = snap ? realloc(snap, sizeof *snap * cap * 2) : NULL;
      if (!g) break;
      snap = g;
      cap *= 2;
    }
    if (!snap) break;
    snap[n].s = s;
    snap[n].seq = e;
    n++;
  }
  pthread_mutex_unlock(&d->mu);
  for (size_t i = 0; i < n; i++) sim_wait_done(snap[i].s, snap[i].seq);
  free(snap);
}

/* ---- slab allocation ------------------------------------------------------ */

static void stream_slot_release(sim_stream *s) {
  atomic_store(&s->state, 0);
  pthread_mutex_lock(&slab_mu);
  s->free_next = stream_free;
  stream_free = s;
  pthread_mutex_unlock(&slab_mu);
}

static void device_unlink(sim_stream *s) {
  sim_device *d = &sim_dev[s->device];
  pthread_mutex_lock(&d->mu);
  if (s->dprev) s->dprev->dnext = s->dnext; else if (d->streams == s) d->streams = s->dnext;
  if (s->dnext) s->dnext->dprev = s->dprev;
  s->dnext = s->dprev = NULL;
  pthread_mutex_unlock(&d->mu);
}

static sim_stream *stream_alloc(int kind, int dev, unsigned flags, int prio) {
  unsigned gen = atomic_load(&sim_gen);
  pthread_mutex_lock(&slab_mu);
  if (!stream_slab) stream_slab = slab_map(sizeof(sim_stream) * STREAM_CAP);
  sim_stream *s = NULL;
  if (stream_free) {
    s = stream_free;
    stream_free = s->free_next;
  } else if (stream_slab && stream_bump < STREAM_CAP) {
    s = &stream_slab[stream_bump++];
  }
  pthread_mutex_unlock(&slab_mu);
  if (!s) return NULL;
  if (s->slot_gen != gen) {
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work_cv, NULL);
    pthread_cond_init(&s->done_cv, NULL);
    s->waiters = 0;
    s->slot_gen = gen;
    /* Sequence numbers continue from the previous incarnation (see top). */
    atomic_store(&s->done_seq, atomic_load(&s->enq_seq));
  }
  pthread_mutex_lock(&s->mu);
  s->gen = gen;
  s->kind = kind;
  s->device = dev;
  s->flags = flags;
  s->priority = prio;
  s->id = atomic_fetch_add(&stream_ids, 1);
  s->head = s->tail = NULL;
  s->worker_running = s->worker_idle = false;
  atomic_store(&s->delay_us, 0);
  s->cap = NULL;
  s->cap_idx = 0;
  s->dnext = s->dprev = NULL;
  atomic_store(&s->state, 1);
  pthread_mutex_unlock(&s->mu);
  sim_device *d = &sim_dev[dev];
  pthread_mutex_lock(&d->mu);
  s->dnext = d->streams;
  if (d->streams) d->streams->dprev = s;
  d->streams = s;
  pthread_mutex_unlock(&d->mu);
  return s;
}

/* Marks s destroyed: its handle stops being valid at once, queued work still
 * executes (CUDA semantics), and the slot is recycled after the worker has
 * drained. */
static void stream_destroy(sim_stream *s) {
  pthread_mutex_lock(&s->mu);
  atomic_store(&s->state, 2);
  if (s->worker_running) {
    pthread_cond_signal(&s->work_cv);
    pthread_mutex_unlock(&s->mu);
    return;
  }
  pthread_mutex_unlock(&s->mu);
  device_unlink(s);
  stream_slot_release(s);
}

static sim_stream *stream_from_handle(const void *h) {
  uintptr_t p = (uintptr_t)h, b = (uintptr_t)stream_slab;
  if (!b || p < b || p >= b + sizeof(sim_stream) * STREAM_CAP || (p - b) % sizeof(sim_stream))
    return NULL;
  sim_stream *s = (sim_stream *)h;
  if (atomic_load(&s->state) != 1 || s->gen != atomic_load(&sim_gen) || s->kind != SK_USER)
    return NULL;
  return s;
}

/* ---- default streams ------------------------------------------------------- */

static sim_stream *legacy_stream(int dev) {
  sim_stream *l = __atomic_load_n(&sim_dev[dev].legacy, __ATOMIC_ACQUIRE);
  if (l) return l;
  pthread_mutex_lock(&legacy_mu);
  l = sim_dev[dev].legacy;
  if (!l) {
    l = stream_alloc(SK_LEGACY, dev, cudaStreamDefault, 0);
    __atomic_store_n(&sim_dev[dev].legacy, l, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&legacy_mu);
  return l;
}

static void pts_destructor(void *unused) {
  /* Thread exit: the thread's default streams finish their work, then go. */
  if (tls_pts_gen != atomic_load(&sim_gen)) return;
  for (int d = 0; d < SIM_MAX_DEVICES; d++)
    if (tls_pts[d]) {
      stream_destroy(tls_pts[d]);
      tls_pts[d] = NULL;
    }
}

static void pts_key_init(void) { pthread_key_create(&pts_key, pts_destructor); }

static sim_stream *per_thread_stream(int dev) {
  unsigned gen = atomic_load(&sim_gen);
  if (tls_pts_gen != gen) {
    memset(tls_pts, 0, sizeof tls_pts);
    tls_pts_gen = gen;
  }
  if (!tls_pts[dev]) {
    pthread_once(&pts_key_once, pts_key_init);
    /* The per-thread default stream is a blocking stream: it synchronizes
     * with the legacy default stream, not with other streams. */
    tls_pts[dev] = stream_alloc(SK_PERTHREAD, dev, cudaStreamDefault, 0);
    pthread_setspecific(pts_key, (void *)1);
  }
  return tls_pts[dev];
}

cudaError_t sim_stream_resolve(cudaStream_t h, int ptds, sim_stream **out) {
  sim_init();
  sim_ctx_use(sim_cur_device());
  sim_stream *s;
  if (h == NULL) h = ptds ? cudaStreamPerThread : cudaStreamLegacy;
  if (h == cudaStreamLegacy) {
    s = legacy_stream(sim_cur_device());
  } else if (h == cudaStreamPerThread) {
    s = per_thread_stream(sim_cur_device());
  } else {
    s = stream_from_handle(h);
    if (!s) return cudaErrorInvalidResourceHandle;
  }
  if (!s) return cudaErrorMemoryAllocation;
  *out = s;
  return cudaSuccess;
}

/* ---- the device timeline ---------------------------------------------------
 * With the cost model on (sim_kn.timed), each worker keeps the timeline of
 * its stream's "device": a GPU runs queued work back to back, so an item
 * starts at max(its ready time, the end of the stream's previous item) and
 * ends its modelled cost later, however late the host thread that plays
 * the device wakes up. The ready time is the item's submission time, raised
 * to the modelled end its dependencies' streams had published when they
 * were satisfied (the end of the dependency's item or of a later one there,
 * never later than the moment the dependency was seen complete). The worker
 * sleeps to the absolute end of each charge, so a burst of costed items
 * takes their total cost plus one wake-up, not one wake-up (and timer
 * slack) per item. A kernel implementation's run time is added as device
 * time. Waits on other timelines move this one to the time the other side
 * reached: a multi-stream item's streams, a simulated NCCL peer's stamped
 * channel steps (a2asim_model_advance). Other time the worker really waits
 * - a per-stream delay, a host function (a2asim_model_blocked) - raises the
 * item's floor to now: it is not modelled, so it is taken as it happened.
 * Timeline times are CLOCK_MONOTONIC instants, never later than the moment
 * the worker reaches them, and event records stamp them (what
 * cudaEventElapsedTime reads). */
static _Thread_local struct {
  bool active;     /* executing an item on a worker, cost model on */
  uint64_t end;    /* end of the worker's last item or charge */
  uint64_t floor;  /* the current item's earliest start for a charge */
} tl;

void sim_model_us(double us) {
  if (us <= 0) return;
  if (!tl.active) { sim_sleep_us(us); return; }
  uint64_t start = tl.floor > tl.end ? tl.floor : tl.end;
  tl.end = start + (uint64_t)(us * 1e3);
  sim_sleep_until_ns(tl.end);
}

/* The current item's payload really ran for ns (a kernel's host
 * implementation: simulated device work): the timeline moves on by as much
 * from where it stood, without the worker's wake-up before the payload, so
 * the end is still no later than now. */
static void model_ran(uint64_t ns) {
  uint64_t start = tl.floor > tl.end ? tl.floor : tl.end;
  tl.end = start + ns;
}

void sim_model_advance(uint64_t t_ns) {
  if (!tl.active || t_ns <= tl.floor) return;
  /* A time from another timeline has passed (a2asim_internal.h); a stamp
   * that has not (a corrupt or foreign peer's) is taken as now, so that no
   * charge sleeps longer than its cost. */
  uint64_t now = sim_now_ns();
  tl.floor = t_ns < now ? t_ns : now;
}

void sim_model_blocked(void) {
  if (tl.active) sim_model_advance(sim_now_ns());
}

uint64_t sim_model_now(void) {
  if (!tl.active) return sim_now_ns();
  return tl.floor > tl.end ? tl.floor : tl.end;
}

uint64_t a2asim_model_time(void) { return tl.active ? sim_model_now() : 0; }

/* ---- the worker ----------------------------------------------------------- */

void sim_item_execute(sim_stream *s, sim_item *it);

static const char *const kind_names[] = {
    [IT_FN] = "internal", [IT_HOSTFN] = "hostfn", [IT_CALLBACK] = "callback",
    [IT_KERNEL] = "kernel", [IT_COPY] = "copy", [IT_SET] = "set", [IT_WAIT] = "wait-event",
    [IT_RECORD] = "record-event", [IT_FREE] = "free-async", [IT_MULTI] = "multi", [IT_NOP] = "nop"};

/* A2ASIM_TRACE=1: one line per item start and completion on stderr, to see
 * where a simulated program hangs. */
static void trace_item(sim_stream *s, sim_item *it, const char *phase) {
  const char *what = it->what;
  if (!what && it->kind == IT_KERNEL) what = it->u.kern.info.name;
  fprintf(stderr, "a2asim %s:%d dev %d stream %llu%s seq %llu %s %s%s%s\n", sim_kn.host,
          (int)getpid(), s->device, s->id,
          s->kind == SK_LEGACY ? "(legacy)" : s->kind == SK_PERTHREAD ? "(per-thread)" : "",
          (unsigned long long)it->seq, phase, kind_names[it->kind], what ? " " : "",
          what ? what : "");
}

static void *worker_main(void *arg) {
  sim_stream *s = arg;
  sim_worker_device = s->device;
  sim_set_cur_device(s->device);
  /* The timeline's absolute sleeps end within a microsecond or so of their
   * time instead of up to the default 50 us of slack later. */
  if (sim_kn.timed) prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (!s->head && atomic_load(&s->state) == 1) {
      s->worker_idle = true;
      pthread_cond_wait(&s->work_cv, &s->mu);
      s->worker_idle = false;
    }
    sim_item *it = s->head;
    if (!it) break;   /* destroyed and drained */
    s->head = it->next;
    if (!s->head) s->tail = NULL;
    pthread_mutex_unlock(&s->mu);

    uint64_t ready = it->submit_ns;
    for (int i = 0; i < it->ndeps; i++) {
      sim_wait_done(it->deps[i].s, it->deps[i].seq);
      uint64_t e = atomic_load_explicit(&it->deps[i].s->done_end_ns, memory_order_relaxed);
      if (e > ready) ready = e;
    }
    if (sim_kn.timed) {
      tl.active = true;
      tl.floor = ready > tl.end ? ready : tl.end;
    }
    if (sim_kn.trace) trace_item(s, it, "start");
    sim_item_execute(s, it);
    /* Released before the item counts as complete, so a synchronizing host
     * sees the release done. */
    item_drop_holder(it);
    if (sim_kn.trace) trace_item(s, it, "done");
    if (tl.active) {
      tl.end = sim_model_now();
      tl.active = false;
    }

    pthread_mutex_lock(&s->mu);
    atomic_store_explicit(&s->done_end_ns, tl.end, memory_order_relaxed);
    atomic_store_explicit(&s->done_seq, it->seq, memory_order_release);
    if (s->waiters) pthread_cond_broadcast(&s->done_cv);
    pthread_mutex_unlock(&s->mu);
    sim_item_free(it);
    pthread_mutex_lock(&s->mu);
  }
  s->worker_running = false;
  pthread_mutex_unlock(&s->mu);
  device_unlink(s);
  stream_slot_release(s);
  return NULL;
}

/* Called with s->mu held. Workers run with all signals blocked so that the
 * application's handlers run on its own threads. */
static int worker_start(sim_stream *s) {
  pthread_attr_t attr;
  sigset_t all, old;
  pthread_t t;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 1 << 20);
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&t, &attr, worker_main, s);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
  if (rc == 0) s->worker_running = true;
  return rc;
}

/* ---- submission ------------------------------------------------------------ */

/* Dependencies every stream operation carries: the legacy default stream
 * waits for all blocking streams of its device; a blocking stream (user
 * stream without cudaStreamNonBlocking, or a per-thread default stream)
 * waits for the legacy default stream. */
static int implicit_deps(sim_stream *s, sim_item *it) {
  if (s->kind == SK_LEGACY) {
    sim_device *d = &sim_dev[s->device];
    int rc = 0;
    pthread_mutex_lock(&d->mu);
    for (sim_stream *t = d->streams; t && rc == 0; t = t->dnext) {
      if (t == s || (t->flags & cudaStreamNonBlocking)) continue;
      uint64_t e = atomic_load(&t->enq_seq);
      if (sim_done_of(t) < e) rc = sim_item_add_dep(it, t, e);
    }
    pthread_mutex_unlock(&d->mu);
    return rc;
  }
  if (s->flags & cudaStreamNonBlocking) return 0;
  sim_stream *l = __atomic_load_n(&sim_dev[s->device].legacy, __ATOMIC_ACQUIRE);
  if (!l) return 0;
  uint64_t e = atomic_load(&l->enq_seq);
  return sim_done_of(l) < e ? sim_item_add_dep(it, l, e) : 0;
}

/* Called with s->mu held: assigns the sequence number and queues it. */
static cudaError_t enqueue_locked(sim_stream *s, sim_item *it) {
  if (!s->worker_running && worker_start(s) != 0) return cudaErrorMemoryAllocation;
  it->seq = atomic_load(&s->enq_seq) + 1;
  atomic_store(&s->enq_seq, it->seq);
  if (sim_kn.timed) it->submit_ns = sim_now_ns();
  if (it->kind == IT_RECORD) it->u.rec.rec_id = sim_event_set_point(it->u.rec.ev, s, it->seq);
  it->next = NULL;
  if (s->tail) s->tail->next = it; else s->head = it;
  s->tail = it;
  if (s->worker_idle) pthread_cond_signal(&s->work_cv);
  return cudaSuccess;
}

cudaError_t sim_submit(sim_stream *s, sim_item *it) { return sim_submit_seq(s, it, NULL); }

cudaError_t sim_submit_seq(sim_stream *s, sim_item *it, uint64_t *seq_out) {
  if (seq_out) *seq_out = 0;
  if (!it) return cudaErrorMemoryAllocation;
  pthread_mutex_lock(&s->mu);
  if (sim_capture_of_locked(s)) {
    cudaError_t e = sim_capture_append_locked(s, it);
    pthread_mutex_unlock(&s->mu);
    sim_item_free(it);
    return e;
  }
  pthread_mutex_unlock(&s->mu);

  if (implicit_deps(s, it) != 0) { sim_item_free(it); return cudaErrorMemoryAllocation; }
  if (it->kind == IT_WAIT) {
    sim_event *ev = it->u.wait.ev;
    pthread_mutex_lock(&ev->mu);
    /* A never-recorded event is a no-op wait (CUDA semantics). */
    int rc = (ev->recorded && ev->s != s) ? sim_item_add_dep(it, ev->s, ev->seq) : 0;
    pthread_mutex_unlock(&ev->mu);
    if (rc) { sim_item_free(it); return cudaErrorMemoryAllocation; }
  }
  pthread_mutex_lock(&s->mu);
  cudaError_t e = enqueue_locked(s, it);
  if (!e && seq_out) *seq_out = it->seq;   /* it may be freed once unlocked */
  pthread_mutex_unlock(&s->mu);
  if (e) sim_item_free(it);
  return e;
}

/* ---- multi-stream items ---------------------------------------------------- */

struct sim_multi {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  a2asim_work_fn fn;
  void *arg;
  int n, arrived, refs;
  bool done;
  uint64_t t_ns;   /* timeline: latest start of the streams, then the end */
};

static void multi_execute(sim_multi *m) {
  pthread_mutex_lock(&m->mu);
  /* Timeline: the item starts when the last of its streams is ready and
   * ends, on every stream, where the runner's charges end. */
  uint64_t t = sim_model_now();
  if (t > m->t_ns) m->t_ns = t;
  if (++m->arrived == m->n) {
    /* The last stream to arrive runs fn; the others wait for it, so the item
     * starts only when every stream has reached it and completes on all. */
    uint64_t start = m->t_ns;
    pthread_mutex_unlock(&m->mu);
    sim_model_advance(start);
    m->fn(m->arg);
    pthread_mutex_lock(&m->mu);
    m->t_ns = sim_model_now();
    m->done = true;
    pthread_cond_broadcast(&m->cv);
  } else {
    while (!m->done) pthread_cond_wait(&m->cv, &m->mu);
    sim_model_advance(m->t_ns);
  }
  int last = --m->refs == 0;
  pthread_mutex_unlock(&m->mu);
  if (last) {
    pthread_mutex_destroy(&m->mu);
    pthread_cond_destroy(&m->cv);
    free(m);
  }
}

static int cmp_ptr(const void *a, const void *b) {
  uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;
  return x < y ? -1 : x > y;
}

int a2asim_stream_enqueue_multi(void *const *streams, int nstreams, a2asim_work_fn fn,
                                void *arg, const char *what) {
  sim_init();
  if (!streams || nstreams <= 0 || !fn) return cudaErrorInvalidValue;
  sim_stream **ss = malloc(sizeof *ss * (size_t)nstreams);
  sim_item **items = calloc((size_t)nstreams, sizeof *items);
  sim_multi *m = calloc(1, sizeof *m);
  cudaError_t e = cudaSuccess;
  int n = 0;
  if (!ss || !items || !m) { e = cudaErrorMemoryAllocation; goto fail; }
  for (int i = 0; i < nstreams; i++) {
    sim_stream *s;
    e = sim_stream_resolve((cudaStream_t)streams[i], 0, &s);
    if (e) goto fail;
    ss[n++] = s;
  }
  /* Distinct streams in address order: a consistent lock order, and one
   * proxy per stream (two proxies on one stream would wait for each other). */
  qsort(ss, (size_t)n, sizeof *ss, cmp_ptr);
  int u = 0;
  for (int i = 0; i < n; i++) if (u == 0 || ss[u - 1] != ss[i]) ss[u++] = ss[i];
  n = u;
  pthread_mutex_init(&m->mu, NULL);
  pthread_cond_init(&m->cv, NULL);
  m->fn = fn;
  m->arg = arg;
  m->n = m->refs = n;
  for (int i = 0; i < n; i++) {
    items[i] = sim_item_new(IT_MULTI, 0);
    if (!items[i] || implicit_deps(ss[i], items[i]) != 0) { e = cudaErrorMemoryAllocation; goto fail_items; }
    items[i]->u.multi.m = m;
    items[i]->what = what;
  }
  for (int i = 0; i < n; i++) pthread_mutex_lock(&ss[i]->mu);
  for (int i = 0; i < n && !e; i++)
    if (sim_capture_of_locked(ss[i])) e = cudaErrorStreamCaptureUnsupported;
  /* Start every worker first so that enqueue_locked cannot fail halfway. */
  for (int i = 0; i < n && !e; i++)
    if (!ss[i]->worker_running && worker_start(ss[i]) != 0) e = cudaErrorMemoryAllocation;
  for (int i = 0; i < n && !e; i++) enqueue_locked(ss[i], items[i]);
  for (int i = n - 1; i >= 0; i--) pthread_mutex_unlock(&ss[i]->mu);
  if (e) goto fail_items;
  free(ss);
  free(items);
  return cudaSuccess;
fail_items:
  for (int i = 0; i < n; i++) sim_item_free(items[i]);
  pthread_mutex_destroy(&m->mu);
  pthread_cond_destroy(&m->cv);
fail:
  free(m);
  free(items);
  free(ss);
  return e;
}

/* ---- executing items -------------------------------------------------------- */

static void kernel_execute(sim_stream *s, sim_item *it) {
  /* One charge: the kernel's cost is both knobs together. */
  sim_model_us((double)sim_kn.kernel_delay_us + (double)sim_kn.launch_us);
  sim_kernel *k = it->u.kern.k;
  if (!k || !k->impl) return;
  if (!tl.active) {
    k->impl(it->u.kern.argv, &it->u.kern.info);
    return;
  }
  /* The implementation's own run time is device time too (a test's
   * compute kernel sleeps for its simulated work). */
  uint64_t t0 = sim_now_ns();
  k->impl(it->u.kern.argv, &it->u.kern.info);
  model_ran(sim_now_ns() - t0);
}

void sim_item_execute(sim_stream *s, sim_item *it) {
  int sticky = sim_sticky(s->device);
  unsigned delay = atomic_load_explicit(&s->delay_us, memory_order_relaxed);
  if (delay && it->kind != IT_WAIT && it->kind != IT_RECORD && it->kind != IT_NOP) {
    /* A real-time delay (the race-making knob), not a cost: the item's
     * modelled work starts after it, as it did before the timeline. */
    sim_sleep_us(delay);
    sim_model_blocked();
  }
  switch (it->kind) {
  case IT_FN:
    /* The simulated NCCL's own machinery always runs (it must release its
     * resources); a sticky error only skips user work. */
    sim_model_us(sim_kn.launch_us);
    it->u.fn.fn(it->u.fn.arg);
    break;
  case IT_HOSTFN:
    /* Host code holds the stream for as long as it really runs. */
    if (!sticky) it->u.fn.fn(it->u.fn.arg);
    sim_model_blocked();
    break;
  case IT_CALLBACK:
    it->u.cb.cb(it->u.cb.h, (cudaError_t)sticky, it->u.cb.data);
    sim_model_blocked();
    break;
  case IT_KERNEL:
    if (!sticky) kernel_execute(s, it);
    break;
  case IT_COPY:
    if (!sticky) {
      a2asim_model_transfer(it->u.copy.width * it->u.copy.height);
      sim_copy2d(it->u.copy.dst, it->u.copy.dpitch, it->u.copy.src, it->u.copy.spitch,
                 it->u.copy.width, it->u.copy.height);
    }
    break;
  case IT_SET:
    if (!sticky)
      for (size_t r = 0; r < it->u.set.height; r++)
        memset(it->u.set.dst + r * it->u.set.pitch, it->u.set.value, it->u.set.width);
    break;
  case IT_RECORD:
    sim_event_record_reached(it->u.rec.ev, it->u.rec.rec_id, sim_model_now());
    break;
  case IT_FREE:
    sim_mem_free_async_item(it->u.free.ptr);
    break;
  case IT_MULTI:
    multi_execute(it->u.multi.m);
    break;
  case IT_WAIT:
  case IT_NOP:
  default:
    break;
  }
}

/* ---- fork ---------------------------------------------------------------- */

void sim_streams_fork_prepare(void) {
  pthread_mutex_lock(&legacy_mu);
  pthread_mutex_lock(&slab_mu);
  pthread_mutex_lock(&pool_mu);
}

void sim_streams_fork_parent(void) {
  pthread_mutex_unlock(&pool_mu);
  pthread_mutex_unlock(&slab_mu);
  pthread_mutex_unlock(&legacy_mu);
}

void sim_streams_after_fork_child(void) {
  /* No worker exists in the child: forget every slot in use. Slots are
   * re-initialized on first use because their slot_gen is stale. */
  pthread_mutex_init(&slab_mu, NULL);
  pthread_mutex_init(&legacy_mu, NULL);
  /* The pool's list was whole at fork (its lock was held): kept. */
  pthread_mutex_init(&pool_mu, NULL);
  /* The bump pointers are kept: the child's new handles never alias a
   * handle of the parent, which stays invalid there. */
  stream_free = NULL;
}

/* ---- stream API ------------------------------------------------------------- */

static cudaError_t stream_create(cudaStream_t *pStream, unsigned flags, int prio) {
  sim_init();
  if (!pStream) return cudaErrorInvalidValue;
  if (flags & ~(unsigned)cudaStreamNonBlocking) return cudaErrorInvalidValue;
  int dev = sim_cur_device();
  int st = sim_sticky(dev);
  if (st) return (cudaError_t)st;
  sim_ctx_use(dev);
  if (prio > 0) prio = 0;      /* CUDA clamps to [greatest, least] */
  if (prio < -5) prio = -5;
  sim_stream *s = stream_alloc(SK_USER, dev, flags, prio);
  if (!s) return cudaErrorMemoryAllocation;
  *pStream = (cudaStream_t)s;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaStreamCreate(cudaStream_t *pStream) {
  return sim_ret(stream_create(pStream, cudaStreamDefault, 0));
}

SIM_EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags) {
  return sim_ret(stream_create(pStream, flags, 0));
}

SIM_EXPORT cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags, int priority) {
  return sim_ret(stream_create(pStream, flags, priority));
}

SIM_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  sim_init();
  sim_stream *s = stream_from_handle(stream);
  if (!s) return sim_ret(cudaErrorInvalidResourceHandle);
  pthread_mutex_lock(&s->mu);
  int cap = sim_capture_status_locked(s);
  pthread_mutex_unlock(&s->mu);
  if (cap != cudaStreamCaptureStatusNone) return sim_ret(cudaErrorStreamCaptureUnsupported);
  stream_destroy(s);
  return cudaSuccess;
}

static cudaError_t stream_get(cudaStream_t h, int ptds, unsigned *flags, int *prio, int *dev,
                              unsigned long long *id) {
  sim_stream *s;
  cudaError_t e = sim_stream_resolve(h, ptds, &s);
  if (e) return e;
  if (flags) *flags = s->flags;
  if (prio) *prio = s->priority;
  if (dev) *dev = s->device;
  if (id) *id = s->id;
  return cudaSuccess;
}

#define SIM_STREAM_GETTER(name, type, ...)                                         \
  SIM_EXPORT cudaError_t name(cudaStream_t hStream, type *out) {                  \
    if (!out) return sim_ret(cudaErrorInvalidValue);                               \
    return sim_ret(stream_get(hStream, 0, __VA_ARGS__));                           \
  }                                                                                \
  SIM_EXPORT cudaError_t name##_ptsz(cudaStream_t hStream, type *out) {           \
    if (!out) return sim_ret(cudaErrorInvalidValue);                               \
    return sim_ret(stream_get(hStream, 1, __VA_ARGS__));                           \
  }
SIM_STREAM_GETTER(cudaStreamGetFlags, unsigned int, out, NULL, NULL, NULL)
SIM_STREAM_GETTER(cudaStreamGetPriority, int, NULL, out, NULL, NULL)
SIM_STREAM_GETTER(cudaStreamGetDevice, int, NULL, NULL, out, NULL)
SIM_STREAM_GETTER(cudaStreamGetId, unsigned long long, NULL, NULL, NULL, out)

static cudaError_t stream_query(cudaStream_t h, int ptds) {
  sim_stream *s;
  cudaError_t e = sim_stream_resolve(h, ptds, &s);
  if (e) return e;
  pthread_mutex_lock(&s->mu);
  if (sim_capture_invalidate_locked(s)) {
    pthread_mutex_unlock(&s->mu);
    return cudaErrorStreamCaptureUnsupported;
  }
  pthread_mutex_unlock(&s->mu);
  int st = sim_sticky(s->device);
  if (st) return (cudaError_t)st;
  return sim_done_of(s) >= atomic_load(&s->enq_seq) ? cudaSuccess : cudaErrorNotReady;
}

SIM_EXPORT cudaError_t cudaStreamQuery(cudaStream_t stream) { return sim_ret(stream_query(stream, 0)); }
SIM_EXPORT cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream) { return sim_ret(stream_query(stream, 1)); }

static cudaError_t stream_sync(cudaStream_t h, int ptds) {
  sim_stream *s;
  cudaError_t e = sim_stream_resolve(h, ptds, &s);
  if (e) return e;
  pthread_mutex_lock(&s->mu);
  if (sim_capture_invalidate_locked(s)) {
    pthread_mutex_unlock(&s->mu);
    return cudaErrorStreamCaptureUnsupported;
  }
  pthread_mutex_unlock(&s->mu);
  sim_stream_wait_all(s);
  int st = sim_sticky(s->device);
  return st ? (cudaError_t)st : cudaSuccess;
}

SIM_EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t stream) { return sim_ret(stream_sync(stream, 0)); }
SIM_EXPORT cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) { return sim_ret(stream_sync(stream, 1)); }

/* ---- internal API -------------------------------------------------------------- */

int a2asim_stream_enqueue(void *stream, int per_thread, a2asim_work_fn fn, void *arg,
                          const char *what) {
  if (!fn) return cudaErrorInvalidValue;
  sim_stream *s;
  cudaError_t e = sim_stream_resolve((cudaStream_t)stream, per_thread, &s);
  if (e) return e;
  sim_item *it = sim_item_new(IT_FN, 0);
  if (!it) return cudaErrorMemoryAllocation;
  it->u.fn.fn = fn;
  it->u.fn.arg = arg;
  it->what = what;
  return sim_submit(s, it);
}

int a2asim_stream_enqueue_capturable(void *stream, int per_thread, a2asim_work_fn fn, void *arg,
                                     a2asim_work_fn release, const char *what) {
  sim_stream *s;
  cudaError_t e = fn ? sim_stream_resolve((cudaStream_t)stream, per_thread, &s) : cudaErrorInvalidValue;
  struct sim_fn_holder *h = e ? NULL : malloc(sizeof *h);
  sim_item *it = h ? sim_item_new(IT_FN, 0) : NULL;
  if (!it) {
    free(h);
    if (release) release(arg);
    return e ? e : cudaErrorMemoryAllocation;
  }
  h->release = release;
  h->arg = arg;
  atomic_store(&h->refs, 1);
  it->u.fn.fn = fn;
  it->u.fn.arg = arg;
  it->u.fn.holder = h;
  it->what = what;
  /* On failure sim_submit frees the item, which releases arg: the caller
   * gets its release callback in every case. */
  return sim_submit(s, it);
}

int a2asim_stream_device(void *stream, int *dev) {
  if (!dev) return cudaErrorInvalidValue;
  sim_stream *s;
  cudaError_t e = sim_stream_resolve((cudaStream_t)stream, 0, &s);
  if (e) return e;
  *dev = s->device;
  return cudaSuccess;
}

int a2asim_stream_valid(void *stream) {
  sim_init();
  if (!stream || stream == (void *)cudaStreamLegacy || stream == (void *)cudaStreamPerThread) return 1;
  return stream_from_handle(stream) != NULL;
}

int a2asim_stream_set_delay(void *stream, unsigned us) {
  sim_stream *s;
  cudaError_t e = sim_stream_resolve((cudaStream_t)stream, 0, &s);
  if (e) return e;
  atomic_store(&s->delay_us, us);
  return cudaSuccess;
}
