/* event.c - events of the simulator's CUDA runtime.
 *
 * An event captures a point (stream, sequence number) when it is recorded:
 * recording enqueues a marker item, and the event is complete when that
 * stream's completed sequence number reaches the marker's. The marker
 * stamps the completion time (cudaEventElapsedTime). cudaStreamWaitEvent
 * enqueues a marker that depends on the point captured at the time of the
 * call. Events live in a fixed slab like streams (see stream.c): a handle
 * is validated without a global lock, slots are recycled through a free
 * list, and every record has a process-unique id so that a stale marker
 * can never stamp a recycled slot.
 */
#include "sim_rt.h"

#include <stdlib.h>
#include <string.h>

#define EVENT_CAP 262144u

static pthread_mutex_t event_mu = PTHREAD_MUTEX_INITIALIZER;   /* the slab */
static sim_event *event_slab;
static unsigned event_bump;
static sim_event *event_free;
static _Atomic uint64_t record_ids = 1;

sim_event *sim_event_from_handle(cudaEvent_t e) {
  uintptr_t p = (uintptr_t)e, b = (uintptr_t)event_slab;
  if (!b || p < b || p >= b + sizeof(sim_event) * EVENT_CAP || (p - b) % sizeof(sim_event))
    return NULL;
  sim_event *ev = (sim_event *)e;
  if (atomic_load(&ev->state) != 1 || ev->gen != atomic_load(&sim_gen)) return NULL;
  return ev;
}

/* A capture point of an event: its capture and clock (owned by the event). */
typedef struct cap_point { sim_capture *cap; uint64_t *vc; } cap_point;

/* ev->mu held: ev's capture point becomes p (NULLs: none); the old one is
 * returned, for cap_point_free once the lock is released. */
static cap_point cap_point_swap_locked(sim_event *ev, cap_point p) {
  cap_point old = {ev->cap, ev->cap_vc};
  ev->cap = p.cap;
  ev->cap_vc = p.vc;
  return old;
}
static void cap_point_free(cap_point p) {
  sim_capture_unref(p.cap);
  free(p.vc);
}

uint64_t sim_event_set_point(sim_event *ev, sim_stream *s, uint64_t seq) {
  uint64_t id = atomic_fetch_add(&record_ids, 1);
  pthread_mutex_lock(&ev->mu);
  ev->recorded = true;
  cap_point old = cap_point_swap_locked(ev, (cap_point){0});
  ev->s = s;
  ev->seq = seq;
  ev->rec_id = id;
  ev->t_ns = 0;
  pthread_mutex_unlock(&ev->mu);
  cap_point_free(old);
  return id;
}

/* Makes ev a capture event (cap, vc owned by the event from now on). */
static void event_set_capture_point(sim_event *ev, sim_capture *cap, uint64_t *vc) {
  pthread_mutex_lock(&ev->mu);
  cap_point old = cap_point_swap_locked(ev, (cap_point){cap, vc});
  pthread_mutex_unlock(&ev->mu);
  cap_point_free(old);
}

/* 1 if ev's last record was in a capture (which may have ended since). */
static int event_is_captured(sim_event *ev) {
  pthread_mutex_lock(&ev->mu);
  int c = ev->cap != NULL;
  pthread_mutex_unlock(&ev->mu);
  return c;
}

void sim_event_record_reached(sim_event *ev, uint64_t rec_id, uint64_t t_ns) {
  pthread_mutex_lock(&ev->mu);
  if (ev->rec_id == rec_id) ev->t_ns = t_ns;
  pthread_mutex_unlock(&ev->mu);
}

void sim_events_fork_prepare(void) { pthread_mutex_lock(&event_mu); }
void sim_events_fork_parent(void) { pthread_mutex_unlock(&event_mu); }
void sim_events_after_fork_child(void) {
  /* Forget the parent's events; the bump pointer is kept so that the
   * child's handles never alias the parent's. */
  pthread_mutex_init(&event_mu, NULL);
  event_free = NULL;
}

/* ---- event API ----------------------------------------------------------------- */

SIM_EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags) {
  sim_init();
  if (!event) return sim_ret(cudaErrorInvalidValue);
  const unsigned valid = cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;
  if ((flags & ~valid) ||
      ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming)))
    return sim_ret(cudaErrorInvalidValue);
  int dev = sim_cur_device();
  int st = sim_sticky(dev);
  if (st) return sim_ret((cudaError_t)st);
  sim_ctx_use(dev);
  unsigned gen = atomic_load(&sim_gen);
  pthread_mutex_lock(&event_mu);
  /* calloc: lazily committed, and scanned by leak checkers. */
  if (!event_slab) event_slab = calloc(EVENT_CAP, sizeof(sim_event));
  sim_event *ev = NULL;
  if (event_free) {
    ev = event_free;
    event_free = ev->free_next;
  } else if (event_slab && event_bump < EVENT_CAP) {
    ev = &event_slab[event_bump++];
  }
  pthread_mutex_unlock(&event_mu);
  if (!ev) return sim_ret(cudaErrorMemoryAllocation);
  if (ev->slot_gen != gen) {
    pthread_mutex_init(&ev->mu, NULL);
    ev->slot_gen = gen;
  }
  pthread_mutex_lock(&ev->mu);
  ev->gen = gen;
  ev->flags = flags;
  ev->device = dev;
  ev->recorded = false;
  ev->cap = NULL;
  ev->cap_vc = NULL;
  ev->s = NULL;
  ev->seq = 0;
  ev->rec_id = 0;
  ev->t_ns = 0;
  atomic_store(&ev->state, 1);
  pthread_mutex_unlock(&ev->mu);
  *event = (cudaEvent_t)ev;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaEventCreate(cudaEvent_t *event) {
  return cudaEventCreateWithFlags(event, cudaEventDefault);
}

SIM_EXPORT cudaError_t cudaEventDestroy(cudaEvent_t event) {
  sim_init();
  sim_event *ev = sim_event_from_handle(event);
  if (!ev) return sim_ret(cudaErrorInvalidResourceHandle);
  /* A pending record still completes (its rec_id no longer matches once the
   * slot is reused, so it cannot touch the next event). */
  pthread_mutex_lock(&ev->mu);
  atomic_store(&ev->state, 0);
  ev->rec_id = 0;
  cap_point old = cap_point_swap_locked(ev, (cap_point){0});
  pthread_mutex_unlock(&ev->mu);
  cap_point_free(old);
  pthread_mutex_lock(&event_mu);
  ev->free_next = event_free;
  event_free = ev;
  pthread_mutex_unlock(&event_mu);
  return cudaSuccess;
}

static cudaError_t event_record(cudaEvent_t event, cudaStream_t stream, int ptds, unsigned flags) {
  sim_init();
  sim_event *ev = sim_event_from_handle(event);
  if (!ev) return cudaErrorInvalidResourceHandle;
  if (flags & ~(unsigned)cudaEventRecordExternal) return cudaErrorInvalidValue;
  sim_stream *s;
  cudaError_t e = sim_stream_resolve(stream, ptds, &s);
  if (e) return e;
  /* Event and stream must belong to the same device (context). */
  if (ev->device != s->device) return cudaErrorInvalidResourceHandle;
  int st = sim_sticky(s->device);
  if (st) return (cudaError_t)st;
  /* In a capture the event becomes a capture event: a point of the capture
   * graph other streams of it can wait on (or join it through); no node,
   * unless cudaEventRecordExternal asks for an event record node too. */
  pthread_mutex_lock(&s->mu);
  if (sim_capture_of_locked(s)) {
    sim_capture *cap;
    uint64_t *vc;
    e = sim_capture_point_locked(s, &cap, &vc);
    pthread_mutex_unlock(&s->mu);
    if (e) return e;
    event_set_capture_point(ev, cap, vc);
    if (!(flags & cudaEventRecordExternal)) return cudaSuccess;
  } else {
    pthread_mutex_unlock(&s->mu);
  }
  sim_item *it = sim_item_new(IT_RECORD, 0);
  if (!it) return cudaErrorMemoryAllocation;
  it->u.rec.ev = ev;
  return sim_submit(s, it);
}

SIM_EXPORT cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  return sim_ret(event_record(event, stream, 0, 0));
}
SIM_EXPORT cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream) {
  return sim_ret(event_record(event, stream, 1, 0));
}
SIM_EXPORT cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  return sim_ret(event_record(event, stream, 0, flags));
}
SIM_EXPORT cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  return sim_ret(event_record(event, stream, 1, flags));
}

/* Copies the captured point of ev. Returns 0 if never recorded. */
static int event_point(sim_event *ev, sim_stream **s, uint64_t *seq, uint64_t *t_ns) {
  pthread_mutex_lock(&ev->mu);
  int rec = ev->recorded;
  *s = ev->s;
  *seq = ev->seq;
  if (t_ns) *t_ns = ev->t_ns;
  pthread_mutex_unlock(&ev->mu);
  return rec;
}

SIM_EXPORT cudaError_t cudaEventQuery(cudaEvent_t event) {
  sim_init();
  sim_event *ev = sim_event_from_handle(event);
  if (!ev) return sim_ret(cudaErrorInvalidResourceHandle);
  int st = sim_sticky(ev->device);
  if (st) return sim_ret((cudaError_t)st);
  /* A capture event stands for no work that could complete. */
  if (event_is_captured(ev)) return sim_ret(cudaErrorCapturedEvent);
  sim_stream *s;
  uint64_t seq;
  if (!event_point(ev, &s, &seq, NULL)) return cudaSuccess;
  return sim_done_of(s) >= seq ? cudaSuccess : cudaErrorNotReady;
}

SIM_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  sim_init();
  sim_event *ev = sim_event_from_handle(event);
  if (!ev) return sim_ret(cudaErrorInvalidResourceHandle);
  if (event_is_captured(ev)) return sim_ret(cudaErrorCapturedEvent);
  sim_stream *s;
  uint64_t seq;
  if (event_point(ev, &s, &seq, NULL)) sim_wait_done(s, seq);
  int st = sim_sticky(ev->device);
  return st ? sim_ret((cudaError_t)st) : cudaSuccess;
}

SIM_EXPORT cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
  sim_init();
  if (!ms) return sim_ret(cudaErrorInvalidValue);
  sim_event *a = sim_event_from_handle(start), *b = sim_event_from_handle(end);
  if (!a || !b) return sim_ret(cudaErrorInvalidResourceHandle);
  if ((a->flags | b->flags) & cudaEventDisableTiming) return sim_ret(cudaErrorInvalidResourceHandle);
  int st = sim_sticky(a->device);
  if (st) return sim_ret((cudaError_t)st);
  sim_stream *sa, *sb;
  uint64_t qa, qb, ta, tb;
  int ra = event_point(a, &sa, &qa, &ta), rb = event_point(b, &sb, &qb, &tb);
  if (!ra || !rb) return sim_ret(cudaErrorInvalidResourceHandle);
  if (sim_done_of(sa) < qa || sim_done_of(sb) < qb) return sim_ret(cudaErrorNotReady);
  /* The record item sets t_ns before its completion is published. */
  event_point(a, &sa, &qa, &ta);
  event_point(b, &sb, &qb, &tb);
  if (!ta || !tb) return sim_ret(cudaErrorInvalidResourceHandle);
  *ms = (float)(((double)tb - (double)ta) / 1e6);
  return cudaSuccess;
}

static cudaError_t stream_wait_event(cudaStream_t stream, cudaEvent_t event, unsigned flags, int ptds) {
  sim_init();
  sim_event *ev = sim_event_from_handle(event);
  if (!ev) return cudaErrorInvalidResourceHandle;
  if (flags & ~(unsigned)cudaEventWaitExternal) return cudaErrorInvalidValue;
  sim_stream *s;
  cudaError_t e = sim_stream_resolve(stream, ptds, &s);
  if (e) return e;
  int st = sim_sticky(s->device);
  if (st) return (cudaError_t)st;
  /* A capture event: s joins its capture (fork) or, already in it, depends
   * on the point (join); the rules of other captures in sim_capture_wait. */
  pthread_mutex_lock(&ev->mu);
  sim_capture *cap = ev->cap;
  uint64_t vc[SIM_CAPTURE_MAX];
  if (cap) {
    sim_capture_ref(cap);
    memcpy(vc, ev->cap_vc, sizeof vc);
  }
  pthread_mutex_unlock(&ev->mu);
  if (cap) {
    e = sim_capture_wait(s, cap, vc);
    sim_capture_unref(cap);
    return e;
  }
  /* A capturing stream may only depend on work outside its capture through
   * an external event wait node (cudaEventWaitExternal). */
  pthread_mutex_lock(&ev->mu);
  bool recorded = ev->recorded;
  pthread_mutex_unlock(&ev->mu);
  pthread_mutex_lock(&s->mu);
  bool capturing = sim_capture_of_locked(s) != NULL;
  if (capturing && !recorded && !(flags & cudaEventWaitExternal)) {
    pthread_mutex_unlock(&s->mu);
    return cudaSuccess;   /* a never-recorded event: no dependency */
  }
  if (capturing && !(flags & cudaEventWaitExternal)) {
    int was = sim_capture_invalidate_locked(s);
    pthread_mutex_unlock(&s->mu);
    return was ? cudaErrorStreamCaptureIsolation : cudaErrorStreamCaptureInvalidated;
  }
  pthread_mutex_unlock(&s->mu);
  sim_item *it = sim_item_new(IT_WAIT, 0);
  if (!it) return cudaErrorMemoryAllocation;
  it->u.wait.ev = ev;
  return sim_submit(s, it);
}

SIM_EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  return sim_ret(stream_wait_event(stream, event, flags, 0));
}
SIM_EXPORT cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  return sim_ret(stream_wait_event(stream, event, flags, 1));
}

