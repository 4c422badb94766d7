/* xrank.c - the cross-rank analyzer: fingerprints from events.
 *
 * Runs on the application's threads and never blocks (see xrank_rec.h):
 *  - NCCL operations become xr_op records in a bounded lock-free queue
 *    (Vyukov's bounded MPMC queue, used multi-producer/single-consumer);
 *  - after each launch unit (an operation outside a group, or at the
 *    outermost ncclGroupEnd, once per stream the group used) a completion
 *    event from a small pool is recorded with the REAL runtime, so the
 *    background thread can poll for completion without adding any
 *    happens-before edge to the application - one per run of back-to-back
 *    units on a stream ("completion markers" below);
 *  - synchronizing calls (stream/event/device synchronize, blocking memcpy)
 *    set the calling thread's "blocked" slot in PRE and clear it in POST;
 *  - ncclGetUniqueId POST hands the id to the process side, which hosts a
 *    coordinator and writes its record into the id's trailing zero bytes.
 * Zero-count collectives are dropped by NCCL before they become tasks, so
 * they are not fingerprinted (zero-count send/recv are).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "a2a_core.h"
#include "xrank.h"
#include "xrank_rec.h"

#define MAX_THREADS 1024
#define MAX_GROUP_STREAMS 64 /* streams per group tracked (one slot per thread) */
#define POOL_DEVICES 16      /* per-device pools for devices 0..15 */
#define EVENT_POOL_MAX 512   /* events kept per device */

/* ---- the port to the process side ---------------------------------- */

/* An empty port (every member NULL) until the runtime registers its own,
 * before a2a_core_init: no thread, no coordinator hosting, no waits. */
static const xr_port k_no_port;
static const xr_port *g_port = &k_no_port;

void xr_set_port(const xr_port *port) { g_port = port ? port : &k_no_port; }

/* ---- the queue ---------------------------------------------------- */

typedef struct cell {
  _Atomic size_t seq;
  xr_rec rec;
} cell;

static cell *g_ring;
static size_t g_mask;
static _Atomic size_t g_enq;
static size_t g_deq;               /* consumer only */
static _Atomic uint64_t g_drops;
static pthread_once_t g_ring_once = PTHREAD_ONCE_INIT;
static _Atomic int g_ring_ok;
static _Atomic int g_thread_requested;
/* g_active and g_thread_requested set and g_npend 0 (below), which
 * implies g_ring_ok (the thread is asked for after a push, which saw it;
 * it is never cleared once set): on_p2p's fast path tests this one flag
 * for the four, and its push needs no request test (push_claim,
 * push_publish). Every writer of the three recomputes it after its own
 * write, under g_pend_mu (live_update), so that it is always what they
 * make it: a thread's own writes are seen by its later tests, as those of
 * the three were; the stores are sequentially consistent, so that a
 * reader that sees it set sees the ring too (through the request's
 * push). A fork's child clears it with the request. */
static _Atomic int g_ring_live;
static void live_update(void);

static void ring_alloc(void) {
  /* A2ACHECK_XRANK_QUEUE is a power of two in 1024..2^22 (the options
   * parser rejects anything else, never rounds it), so the ring is exactly
   * the size the log header shows; the loop only guards a hand-built
   * a2a_options (unit tests). */
  long want = a2a_opt ? a2a_opt->xrank_queue : 16384;
  size_t n = 1024;
  while ((long)n < want && n < (1u << 22)) n <<= 1;
  cell *r = calloc(n, sizeof *r);
  if (!r) return;
  for (size_t i = 0; i < n; i++) atomic_init(&r[i].seq, i);
  g_ring = r;
  g_mask = n - 1;
  atomic_store(&g_enq, 0);
  g_deq = 0;
  atomic_store(&g_ring_ok, 1);
}

/* The queue is full: the application has run A2ACHECK_XRANK_QUEUE records
 * ahead of the background thread (a burst of back-to-back operations on a
 * loaded machine). A dropped record would detach this process from
 * cross-rank checking for the rest of the run, so the posting thread waits
 * for room instead (backpressure, as NCCL's own enqueue blocks when its
 * work FIFO is full): yielding, then sleeping 50 us at a time, at most
 * BACKPRESSURE_NS per record. If the thread makes no room in that time it
 * is not running (not started, stuck): backpressure is switched off for
 * the process and records are dropped and reported as before (the drain's
 * warning). Only this full-queue path waits; the hot path is unchanged.
 * True when the cell at pos may be free now (the caller retries). */
#define BACKPRESSURE_NS 2000000000ull
static _Atomic int g_backpressure_off;

static bool backpressure(cell *c, size_t pos) {
  if (atomic_load_explicit(&g_backpressure_off, memory_order_relaxed) || !a2a_hostsvc ||
      !a2a_hostsvc->now_ns)
    return false;
  uint64_t t0 = a2a_hostsvc->now_ns();
  for (unsigned i = 0;; i++) {
    size_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
    if ((intptr_t)seq - (intptr_t)pos >= 0) return true;
    if (i < 64) {
      sched_yield();
      continue;
    }
    if (a2a_hostsvc->now_ns() - t0 > BACKPRESSURE_NS) {
      atomic_store(&g_backpressure_off, 1);
      return false;
    }
    struct timespec ts = {0, 50000};
    nanosleep(&ts, NULL);
  }
}

/* Pushing is in two steps, so that a hot record is written once, in its
 * cell, instead of being built on the stack and copied: push_begin claims
 * the next cell (waiting for room as above) and returns its record, or
 * NULL when the record is dropped; the caller sets every field the
 * record's type uses (the cell holds an older record) and publishes it
 * with push_end. Between the two the consumer stops at this cell, so the
 * caller does nothing there but fill it. */
typedef struct push_tok { cell *c; size_t pos; } push_tok;

/* push_begin's general case: the ring not allocated yet, the cell still
 * taken (full: backpressure), another producer's claim in between. */
__attribute__((noinline)) static xr_rec *push_begin_slow(push_tok *tok) {
  /* The ring is allocated on the first communicator, off the hot path. */
  if (!atomic_load_explicit(&g_ring_ok, memory_order_acquire)) {
    pthread_once(&g_ring_once, ring_alloc);
    if (!atomic_load(&g_ring_ok)) return NULL;
  }
  size_t pos = atomic_load_explicit(&g_enq, memory_order_relaxed);
  for (;;) {
    cell *c = &g_ring[pos & g_mask];
    size_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
    intptr_t diff = (intptr_t)seq - (intptr_t)pos;
    if (diff == 0) {
      if (atomic_compare_exchange_weak_explicit(&g_enq, &pos, pos + 1, memory_order_relaxed,
                                                memory_order_relaxed)) {
        tok->c = c;
        tok->pos = pos;
        return &c->rec;
      }
    } else if (diff < 0) {
      if (!backpressure(c, pos)) {
        atomic_fetch_add_explicit(&g_drops, 1, memory_order_relaxed);
        return NULL;
      }
      pos = atomic_load_explicit(&g_enq, memory_order_relaxed);
    } else {
      pos = atomic_load_explicit(&g_enq, memory_order_relaxed);
    }
  }
}

/* The common case (no call): the next cell is free and no other
 * producer claims it first; else NULL, nothing claimed. push_claim needs
 * the ring allocated; push_try tests that first. */
static inline xr_rec *push_claim(push_tok *tok) {
  size_t pos = atomic_load_explicit(&g_enq, memory_order_relaxed);
  cell *c = &g_ring[pos & g_mask];
  if (atomic_load_explicit(&c->seq, memory_order_acquire) == pos &&
      atomic_compare_exchange_weak_explicit(&g_enq, &pos, pos + 1, memory_order_relaxed,
                                            memory_order_relaxed)) {
    tok->c = c;
    tok->pos = pos;
    return &c->rec;
  }
  return NULL;
}
static inline xr_rec *push_try(push_tok *tok) {
  return atomic_load_explicit(&g_ring_ok, memory_order_acquire) ? push_claim(tok) : NULL;
}

static inline xr_rec *push_begin(push_tok *tok) {
  xr_rec *r = push_try(tok);
  return r ? r : push_begin_slow(tok);
}

/* The first record pushed asks the process side for its thread (out of
 * line: once per process). It takes g_pend_mu (live_update): g_pend_mu is
 * a leaf lock, never held across a push (pend_add and pend_take call
 * nothing under it; pend_flush pushes after pend_take released it), so no
 * push reaches here with it held. A fork's child re-initializes it
 * (after_fork_child) before anything there pushes. */
__attribute__((noinline)) static void request_thread(void) {
  atomic_store(&g_thread_requested, 1);
  live_update();
  if (g_port->need_thread) g_port->need_thread();
}

/* Publishes tok's record (push_end without its request test). */
static inline void push_publish(const push_tok *tok) {
  atomic_store_explicit(&tok->c->seq, tok->pos + 1, memory_order_release);
}

static inline void push_end(const push_tok *tok) {
  push_publish(tok);
  if (!atomic_load_explicit(&g_thread_requested, memory_order_relaxed)) request_thread();
}


/* A whole record (the rarer ones): 1 pushed, 0 dropped. */
static int push(const xr_rec *rec) {
  push_tok tok;
  xr_rec *r = push_begin(&tok);
  if (!r) return 0;
  *r = *rec;
  push_end(&tok);
  return 1;
}

/* A record's first 8 bytes - type, has_idrec (0), device, thread - in one
 * store where the layout allows. */
static inline void rec_head(xr_rec *r, uint8_t type, int16_t device, uint32_t thread) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  _Static_assert(offsetof(xr_rec, type) == 0 && offsetof(xr_rec, has_idrec) == 1 &&
                     offsetof(xr_rec, device) == 2 && offsetof(xr_rec, thread) == 4,
                 "rec_head's packed store follows xr_rec's layout");
  uint64_t w = (uint64_t)type | (uint64_t)(uint16_t)device << 16 | (uint64_t)thread << 32;
  memcpy(r, &w, sizeof w);
#else
  r->type = type;
  r->has_idrec = 0;
  r->device = device;
  r->thread = thread;
#endif
}

int xr_ring_pop(xr_rec *out) {
  if (!atomic_load_explicit(&g_ring_ok, memory_order_acquire)) return 0;
  cell *c = &g_ring[g_deq & g_mask];
  size_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
  if ((intptr_t)seq - (intptr_t)(g_deq + 1) != 0) return 0;
  *out = c->rec;
  atomic_store_explicit(&c->seq, g_deq + g_mask + 1, memory_order_release);
  g_deq++;
  return 1;
}

uint64_t xr_ring_drops(void) { return atomic_load(&g_drops); }

/* ---- completion events -------------------------------------------- */

static pthread_mutex_t g_pool_mu = PTHREAD_MUTEX_INITIALIZER;
static void *g_pool[POOL_DEVICES][EVENT_POOL_MAX];
static size_t g_npool[POOL_DEVICES];
static _Atomic int g_events_broken[POOL_DEVICES]; /* creation failed: no more tries */

/* An event for a unit on `device` (>= 0: unit_dev's; events belong to
 * the device current when they were created, and can only be recorded on
 * its streams): from that device's pool, else created for that device
 * (event_create_on: with it made current for the call when the thread's
 * current device is another - nccl-tests -g N marks every device's run
 * from one thread). NULL when the runtime cannot: the unit is untracked. */
static void *event_get(int device) {
  if ((unsigned)device >= POOL_DEVICES) return NULL;
  void *ev = NULL;
  pthread_mutex_lock(&g_pool_mu);
  if (g_npool[device]) ev = g_pool[device][--g_npool[device]];
  pthread_mutex_unlock(&g_pool_mu);
  if (ev || atomic_load(&g_events_broken[device]) || !a2a_hostsvc || !a2a_hostsvc->event_create)
    return ev;
  int rc = a2a_hostsvc->event_create_on ? a2a_hostsvc->event_create_on(&ev, device, 0)
                                        : a2a_hostsvc->event_create(&ev, 0);
  /* -2: another device's, not switched to; -3: the application has an
   * error pending. This unit is untracked; the next one tries again. */
  if (rc == -2 || rc == -3) return NULL;
  if (rc != 0) {
    atomic_store(&g_events_broken[device], 1);
    return NULL;
  }
  return ev;
}

void xr_event_release(void *ev, int device) {
  if (!ev) return;
  if (device < 0) device = 0;
  pthread_mutex_lock(&g_pool_mu);
  if (device >= 0 && device < POOL_DEVICES && g_npool[device] < EVENT_POOL_MAX) {
    g_pool[device][g_npool[device]++] = ev;
    ev = NULL;
  }
  pthread_mutex_unlock(&g_pool_mu);
  if (ev && a2a_hostsvc && a2a_hostsvc->event_destroy) a2a_hostsvc->event_destroy(ev);
}

/* ---- per-thread state --------------------------------------------- */

/* What a host thread waits in, as the background thread reads it: a
 * blocking call (PRE seen, POST not yet), or a polling loop (below). */
typedef struct blockpub {
  _Atomic uint32_t wait;           /* XR_WAIT_*, 0 = none */
  _Atomic uint64_t stream, site, since_ns;
  _Atomic uint64_t comm;           /* XR_WAIT_SPLIT/INIT: the comm */
  _Atomic uint32_t index;          /* XR_WAIT_SPLIT: split index */
  _Atomic int32_t rank;            /* XR_WAIT_SPLIT/INIT: rank in it */
  /* XR_WAIT_SPLIT/INIT of a split or init that returned ncclInProgress
   * (a non-blocking communicator): the thread waits in it while it only
   * polls (ncclCommGetAsyncError, as NCCL documents and PyTorch does),
   * i.e. while its last call a polling loop does not make
   * (a2a_thread_last_other_seq) is older than this seq; 0 for a blocking
   * call. */
  _Atomic uint32_t polled_from;
} blockpub;

/* Polling waits. A thread that has posted communication and then calls
 * only cudaStreamQuery / cudaEventQuery (answered cudaErrorNotReady) and
 * the calls polling loops make between them (ncclCommGetAsyncError,
 * cudaGetLastError/PeekAtLastError, cudaSetDevice) - nothing else, by the
 * per-thread call numbers (a2a_event.seq) - waits on the streams and events
 * it polls exactly as if it were blocked in cudaStreamSynchronize /
 * cudaEventSynchronize on them: nccl-tests' testStreamSynchronize, a
 * Python loop on work.is_completed(). The episode starts at its first
 * not-ready query; an object leaves the set when its query succeeds; any
 * other call of the thread ends the episode (the background thread sees
 * that through a2a_thread_last_other_seq: the thread made a call a polling
 * loop does not make since the episode's first query). Only changes of the
 * polled set are published; a loop spinning on the same objects writes
 * nothing the background thread reads. A thread that never posted communication (PyTorch's watchdog
 * polls every work's events) is never taken as waiting. */
#define MAX_POLL 8
typedef struct pollpub {
  _Atomic uint32_t n;              /* objects polled, not yet complete */
  _Atomic uint32_t all;            /* more than MAX_POLL: waits for all units */
  _Atomic uint32_t start_seq;      /* seq of the episode's first query */
  _Atomic uint64_t since_ns, site;
  _Atomic uint64_t key[MAX_POLL];  /* stream id, or event handle */
  _Atomic uint32_t is_event[MAX_POLL];
} pollpub;

typedef struct tslot {
  /* Owner thread only. */
  int depth;                       /* ncclGroupStart nesting */
  int nstreams;
  /* The first 8 bytes of the thread's grouped OP records: rec_head's
   * type XR_REC_OP, device 0 and the slot's thread, which is ev->thread
   * of every event that finds this slot. Stored by each start that
   * raises depth (on_group_start: nothing else makes it positive; a
   * fork's child zeroes both), so it holds that word whenever depth > 0 -
   * the only time the grouped paths (group_op) copy it. */
  uint64_t op_head;
  /* streams[0 .. nkeep) are pairwise distinct, nkeep >= nstreams: past
   * the open group's set they hold an earlier group's streams, in its
   * order (group_stream_add). */
  int nkeep;
  uint32_t poll_last_seq;          /* seq of the polling episode's last
                                      call (here, op_head's 8 bytes leave
                                      the slot its size: one multiply) */
  uint64_t streams[MAX_GROUP_STREAMS];
  /* The device of streams[i]: its operations' communicator's (NCCL runs
   * an operation on its communicator's device, whose stream it must be),
   * not the thread's current one - one thread drives several devices in a
   * group (nccl-tests -g N, ncclCommInitAll), and the units' completion
   * markers must be events of their streams' devices (unit_dev). */
  int16_t sdev[MAX_GROUP_STREAMS];
  uint64_t init_hash;              /* id hash registered at an init's PRE */
  int32_t init_rank;
  int posted;                      /* this thread posted communication */
  int ndfr;                        /* completion markers deferred (below) */
  uint32_t run;                    /* the last marker run started */
  struct dfr { uint64_t stream; int device; uint32_t run, gen; } dfr[8];
  int blocked;                     /* a blocking call is published */
  const void *polled_comm;         /* ... a split or init in progress
                                      (polled_from): the communicator
                                      whose polls show it (a split's parent,
                                      an init's new one) */
  int copy_blocked;                /* ... by a copy's PRE, counted in
                                      g_copies_blocked until its POST */
  int polling;                     /* a polling episode is published */
  uint32_t gserial;                /* outermost groups opened (graph capture
                                      tags a captured operation with it) */
  uint64_t cap_end_id;             /* the capture a cudaStreamEndCapture's
                                      PRE found on its stream (0: none) */
  int cap_end_known;               /* ... and whether the runtime answered */
  int replaying;                   /* inside graph_replay: records are
                                      marked XR_OPF_REPLAY */
  /* Published under a sequence lock: written by the owner, read by the
   * background thread. Every field is atomic (relaxed), the sequence
   * orders them (C11 seqlock: odd while being written). */
  _Atomic uint32_t seq;
  blockpub b;
  pollpub p;
} tslot;

static tslot g_ts[MAX_THREADS];

static tslot *slot(uint32_t thread) { return thread < MAX_THREADS ? &g_ts[thread] : NULL; }

static void pub_begin(tslot *t) {
  uint32_t s = atomic_load_explicit(&t->seq, memory_order_relaxed);
  atomic_store_explicit(&t->seq, s + 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
}
static void pub_end(tslot *t) {
  uint32_t s = atomic_load_explicit(&t->seq, memory_order_relaxed);
  atomic_store_explicit(&t->seq, s + 1, memory_order_release);
}
#define RSTORE(f, v) atomic_store_explicit(&(f), (v), memory_order_relaxed)
#define RLOAD(f) atomic_load_explicit(&(f), memory_order_relaxed)

/* Publish (wait != 0) or clear (wait == 0) a blocking call. */
static void set_blocked(tslot *t, uint32_t wait, uint64_t stream, uint64_t site, uint64_t now,
                        uint64_t comm, uint32_t index, int32_t rank) {
  pub_begin(t);
  RSTORE(t->b.stream, stream);
  RSTORE(t->b.site, site);
  RSTORE(t->b.since_ns, now);
  RSTORE(t->b.comm, comm);
  RSTORE(t->b.index, index);
  RSTORE(t->b.rank, rank);
  RSTORE(t->b.polled_from, 0);
  RSTORE(t->b.wait, wait);
  pub_end(t);
  t->blocked = wait != 0;
  t->polled_comm = NULL;
}

/* A split's or a non-blocking init's POST returned ncclInProgress: its
 * published wait stays while the thread only polls after this call (seq:
 * the call's). NCCL refuses the parent's use until a split is done, an
 * init's communicator is usable only once it is, and NCCL's child exists
 * only then: their ranks wait in them as in a blocking call. `comm` is the
 * communicator whose polls show the state (on_async_error). */
static void wait_keep_polled(tslot *t, uint32_t seq, const void *comm, uint64_t since_ns) {
  pub_begin(t);
  if (since_ns) RSTORE(t->b.since_ns, since_ns);
  RSTORE(t->b.polled_from, seq + 1 ? seq + 1 : 1); /* (0 means none) */
  pub_end(t);
  t->polled_comm = comm;
}
static void clear_blocked(tslot *t) {
  if (t->blocked) set_blocked(t, 0, 0, 0, 0, 0, 0, 0);
}

static void poll_clear(tslot *t) {
  if (!t->polling) return;
  pub_begin(t);
  RSTORE(t->p.n, 0);
  RSTORE(t->p.all, 0);
  pub_end(t);
  t->polling = 0;
}

/* The time now, for the hot calls whose events carry none (a2a_event.h:
 * t_ns 0): the host's clock, 0 without one (unit tests). */
static uint64_t host_now_ns(void) {
  return a2a_hostsvc && a2a_hostsvc->now_ns ? a2a_hostsvc->now_ns() : 0;
}

/* A poll-loop call of the thread: a query of a stream (what 1) or an event
 * (what 2) with its key, answered not_ready or not, or one of the neutral
 * calls loops make between queries (what 0). */
enum { POLL_NEUTRAL = 0, POLL_STREAM = 1, POLL_EVENT = 2 };
static void on_poll(tslot *t, const a2a_event *ev, int what, uint64_t key, int not_ready) {
  if (!t->posted) return;
  int cont = t->polling && ev->seq == t->poll_last_seq + 1;
  int is_event = what == POLL_EVENT;
  t->poll_last_seq = ev->seq;
  if (!cont) {
    poll_clear(t);
    if (what == POLL_NEUTRAL || !not_ready) return; /* an episode starts with a not-ready query */
  }
  /* What changes (the owner reads its own fields). A continuation that
   * changes nothing - a loop spinning on the same not-ready objects -
   * publishes nothing: the episode is alive as long as the thread made no
   * other call (a2a_thread_last_other_seq), so the reader's sequence lock
   * is not broken by every poll. */
  uint32_t n = cont ? RLOAD(t->p.n) : 0, i = 0;
  uint32_t all = cont ? RLOAD(t->p.all) : 0;
  int add = 0, del = 0;
  if (what != POLL_NEUTRAL) {
    while (i < n && !(RLOAD(t->p.key[i]) == key && RLOAD(t->p.is_event[i]) == (uint32_t)is_event)) i++;
    add = not_ready && i == n && (n < MAX_POLL || !all);
    del = !not_ready && i < n; /* complete: the loop stops polling it */
  }
  if (cont && !add && !del) return;
  pub_begin(t);
  if (!cont) {
    RSTORE(t->p.all, 0);
    /* (A stream or event query carries no time - a hot call, a2a_event.h -
     * and only one that starts an episode needs it.) */
    RSTORE(t->p.since_ns, ev->t_ns ? ev->t_ns : host_now_ns());
    RSTORE(t->p.site, (uint64_t)(uintptr_t)ev->callsite);
    RSTORE(t->p.start_seq, ev->seq);
  }
  if (add) {
    if (n < MAX_POLL) {
      RSTORE(t->p.key[n], key);
      RSTORE(t->p.is_event[n], (uint32_t)is_event);
      n++;
    } else {
      RSTORE(t->p.all, 1);
    }
  } else if (del) {
    n--;
    RSTORE(t->p.key[i], RLOAD(t->p.key[n]));
    RSTORE(t->p.is_event[i], RLOAD(t->p.is_event[n]));
  }
  RSTORE(t->p.n, n);
  pub_end(t);
  t->polling = n > 0 || RLOAD(t->p.all);
  if (!t->polling) poll_clear(t);
}

static xr_threadstate thread_state(uint32_t thread, uint32_t wait, uint64_t stream, uint64_t site,
                                   uint64_t since, uint64_t now_ns) {
  xr_threadstate ts = {.stream = stream, .site = site, .thread = thread, .wait = wait,
                       .all = wait != XR_WAIT_STREAM && wait != XR_WAIT_SPLIT && wait != XR_WAIT_INIT};
  ts.blocked_ms = now_ns > since ? (now_ns - since) / 1000000u : 0;
  return ts;
}

size_t xr_blocked_snapshot(xr_threadstate *out, size_t max, uint64_t now_ns) {
  size_t n = 0;
  for (uint32_t i = 0; i < MAX_THREADS && n < max; i++) {
    tslot *t = &g_ts[i];
    if (!atomic_load_explicit(&t->seq, memory_order_acquire)) continue; /* never published */
    for (int tries = 0; tries < 4; tries++) {
      xr_threadstate got[1 + MAX_POLL];
      size_t k = 0;
      uint32_t s1 = atomic_load_explicit(&t->seq, memory_order_acquire);
      if (s1 & 1) continue;
      uint32_t w = RLOAD(t->b.wait), from = RLOAD(t->b.polled_from);
      /* A split or init in progress is a wait while the thread only polls. */
      if (from && (int32_t)(a2a_thread_last_other_seq(i) - from) >= 0) w = 0;
      if (w) {
        got[k] = thread_state(i, w, RLOAD(t->b.stream), RLOAD(t->b.site), RLOAD(t->b.since_ns),
                              now_ns);
        if (from) got[k].flags = XR_THREAD_POLLED;
        got[k].comm = RLOAD(t->b.comm);
        got[k].index = RLOAD(t->b.index);
        got[k].rank = RLOAD(t->b.rank);
        k++;
      }
      uint32_t np = RLOAD(t->p.n), all = RLOAD(t->p.all);
      /* Still polling: no call but polls since the episode began. */
      int polling = (np || all) &&
                    (int32_t)(a2a_thread_last_other_seq(i) - RLOAD(t->p.start_seq)) < 0;
      if (polling && !w) {
        uint64_t since = RLOAD(t->p.since_ns), site = RLOAD(t->p.site);
        if (all) {
          got[k] = thread_state(i, XR_WAIT_EVENT, 0, site, since, now_ns);
          got[k++].flags = XR_THREAD_POLLING;
        } else {
          for (uint32_t j = 0; j < np && j < MAX_POLL; j++) {
            int ev = RLOAD(t->p.is_event[j]) != 0;
            got[k] = thread_state(i, ev ? XR_WAIT_EVENT : XR_WAIT_STREAM, ev ? 0 : RLOAD(t->p.key[j]),
                                  site, since, now_ns);
            got[k++].flags = XR_THREAD_POLLING;
          }
        }
      }
      atomic_thread_fence(memory_order_acquire);
      if (atomic_load_explicit(&t->seq, memory_order_relaxed) != s1) continue;
      for (size_t j = 0; j < k && n < max; j++) out[n++] = got[j];
      break;
    }
  }
  return n;
}

/* ---- process-local communicators ----------------------------------- */
/* All ranks of an ncclCommInitAll live in this process, and so do those of
 * a split's or shrink's child of such a communicator: the registry names
 * them process-locally (id_hash 0, a2a_comm.local_id), and they are
 * matched in-process, registered with a coordinator this process hosts for
 * itself. The cross-rank identity of a registry record: its id_hash, or
 * that local identity, or 0 (unknown). */
static inline uint64_t comm_id(const a2a_comm *c) { return c ? a2a_comm_ident(c) : 0; }

/* ---- events -> records -------------------------------------------- */

static _Atomic int g_active = 1;
static void flush_markers(uint32_t thread);

/* Copies whose PRE published a blocked state (tslot.copy_blocked) and
 * whose POST has not cleared it yet: a copy's POST does nothing while this
 * is 0, so it is the analyzer's POST gate for copies (a2a_analyzer.
 * post_gate; a2a_dispatch_hot leaves this analyzer out of a copy's POST
 * while this and the kind's other gates are 0). Exact: a thread's
 * copy_blocked and its +1 here are written by its copy's PRE, so the same
 * thread's POST reads >= 1 (coherence; each -1 is a POST's after its own
 * +1, and a fork's reset clears copy_blocked too). */
static _Atomic unsigned g_copies_blocked;

int xr_active(void) { return atomic_load(&g_active); }

/* The checks this analyzer (with its coordinator) reports are the table's
 * rows owned by XRANK. With every one of them disabled through
 * A2ACHECK_CHECKS it does nothing at all: no thread, no socket, no
 * completion event. */
static int init(void) {
  int on = !(a2a_opt && a2a_opt->disable);
  atomic_store(&g_active, on && a2a_checks_any_owned(A2A_OWN_XRANK));
  live_update();
  a2a_set_flush_hook(flush_markers);
  return 0;
}

/* ---- non-blocking inits ------------------------------------------- */
/* A split's or shrink's child that NCCL created in progress (a
 * non-blocking parent) may still fail (ncclCommGetAsyncError) and is not
 * yet sized: it is registered with the coordinator only once an operation
 * is posted on it, which NCCL allows only after its init completed (an
 * id-based non-blocking init registers at its PRE, as a blocking one:
 * its ranks are known from its arguments, and ranks that disagree must be
 * told while they poll). Rare path: a small table under a lock. */
#define MAX_PENDING 64
static pthread_mutex_t g_pend_mu = PTHREAD_MUTEX_INITIALIZER;
static xr_rec g_pend[MAX_PENDING];
static const void *g_pend_handle[MAX_PENDING];
static _Atomic int g_npend;

static _Atomic int g_capturing; /* captures begun, not yet ended (below) */
static void live_update_locked(void) {
  /* While a capture is active every operation takes op_body, which asks
   * whether its stream is capturing (graph_capture_op). */
  atomic_store(&g_ring_live, atomic_load(&g_active) && atomic_load(&g_thread_requested) &&
                                 atomic_load(&g_npend) == 0 && atomic_load(&g_capturing) == 0);
}
static void live_update(void) {
  pthread_mutex_lock(&g_pend_mu);
  live_update_locked();
  pthread_mutex_unlock(&g_pend_mu);
}

static void pend_add(const void *handle, const xr_rec *r) {
  pthread_mutex_lock(&g_pend_mu);
  for (int i = 0; i < MAX_PENDING; i++)
    if (!g_pend_handle[i]) {
      g_pend_handle[i] = handle;
      g_pend[i] = *r;
      atomic_fetch_add(&g_npend, 1);
      live_update_locked();
      break;
    }
  pthread_mutex_unlock(&g_pend_mu);
}

/* The application saw handle ready (ncclCommGetAsyncError: ncclSuccess).
 * A child that a non-blocking split or shrink returned in progress was
 * registered without its size and rank (the shim cannot ask NCCL before
 * it is ready: wrap_nccl.c's query_new_comm), and the coordinator drops a
 * registration without them; the registry's record has them now (it is
 * completed before the analyzers of this POST: a2a_registry_comm_ready),
 * and they go into the held-back registration, before the operation that
 * will push it. Rare path: only while some registration is held back. */
static void pend_ready(const void *handle) {
  bool ask = false;
  pthread_mutex_lock(&g_pend_mu);
  for (int i = 0; i < MAX_PENDING; i++)
    if (g_pend_handle[i] == handle) ask = g_pend[i].u.reg.reg.nranks <= 0;
  pthread_mutex_unlock(&g_pend_mu);
  const a2a_comm *rec = ask ? a2a_comm_lookup(handle) : NULL;
  if (!rec || rec->nranks <= 0) return;
  int n = rec->nranks, r = rec->rank, d = rec->device;
  pthread_mutex_lock(&g_pend_mu);
  for (int i = 0; i < MAX_PENDING; i++)
    if (g_pend_handle[i] == handle && g_pend[i].u.reg.reg.nranks <= 0) {
      g_pend[i].u.reg.reg.nranks = n;
      g_pend[i].u.reg.reg.rank = r;
      if (g_pend[i].u.reg.reg.device < 0) g_pend[i].u.reg.reg.device = d;
    }
  pthread_mutex_unlock(&g_pend_mu);
}

/* Returns 1 and fills *out when handle had a pending registration. */
static int pend_take(const void *handle, xr_rec *out, int drop) {
  if (!atomic_load_explicit(&g_npend, memory_order_relaxed)) return 0;
  int found = 0;
  pthread_mutex_lock(&g_pend_mu);
  for (int i = 0; i < MAX_PENDING; i++)
    if (g_pend_handle[i] == handle) {
      if (!drop) *out = g_pend[i];
      g_pend_handle[i] = NULL;
      atomic_fetch_sub(&g_npend, 1);
      live_update_locked();
      found = 1;
      break;
    }
  pthread_mutex_unlock(&g_pend_mu);
  return found && !drop;
}

/* ---- completion markers ---------------------------------------------- */
/* A unit is known complete when an event recorded after it on its stream
 * is. Recording one per unit costs a real cudaEventRecord per operation
 * (the largest part of an NCCL call's cost), yet between two units of a
 * stream that the thread posts back to back - nothing but NCCL
 * communication calls between them (A2A_NOFLUSH_KINDS) - nothing else runs
 * on that stream, so one marker after the last unit of such a run tells
 * when the run is complete:
 *  - a unit on an explicit stream is closed "deferred" (UNIT_END with
 *    u.unit.deferred, or a lone operation's OP_UNIT with u.opu.deferred)
 *    into the thread's run for that stream (one run per
 *    stream, at most 8 streams; a ninth records the oldest run's marker);
 *  - at the PRE of the thread's next call of any other kind (the
 *    dispatcher's flush hook: a synchronization, a query, a launch, an
 *    event record, a set-device, a stream destroy ...), before anything is
 *    enqueued behind the run, the thread records one marker per run and
 *    sends it as UNIT_MARK: the marker sits exactly where per-unit events
 *    would have sat after the run's last unit;
 *  - a thread that goes on with host code only (a checkpoint, a store
 *    barrier) leaves its runs unmarked: the background thread, which never
 *    records into the application's streams, asks cudaStreamQuery after
 *    XR_MARK_RESCUE_NS whether the stream is idle (xr_deferred_query); a
 *    run whose stream was destroyed since is closed untracked (the handle
 *    may dangle: nothing can be asked about it any more).
 * What a run loses: the run's units complete together in the model, so a
 * unit that completed but whose run did not is still reported pending.
 * The wait-for graph completes such a unit anyway when its peers posted
 * their counterparts (its requirements hold), so a deadlock proof still
 * names the unit that really blocks; a hang dump may list the completed
 * ones of the run before it.
 * Not deferred (recorded at once, as before): units on the legacy or
 * per-thread default stream (the handle means the calling thread's stream,
 * which the background thread cannot name), units while any stream capture
 * is active (a marker recorded into a capture would join the graph), a
 * thread past A2A_ACTIVITY_THREADS. */
/* The background thread queries a stream only when it cannot be dangling
 * or captured: every stream destroy (PRE, any thread) writes the handle
 * into a ring of the last 256 and bumps g_destroy_gen; a run remembers the
 * generation it began at; and neither a destroy nor a capture begin goes
 * on while a query runs (a Dekker pair: sequentially consistent on both
 * sides, either the query sees the destroy or capture, or the call waits
 * for the query). */
#define DESTROY_RING 256
static _Atomic uint32_t g_destroy_gen;
static _Atomic uint32_t g_destroy_next; /* slots taken; g_destroy_gen: slots published */
static _Atomic uint64_t g_destroyed[DESTROY_RING];
static _Atomic int g_querying;       /* the background thread is in xr_deferred_query */

/* Whether stream was destroyed since generation gen (1), was not (0), or
 * cannot be told (-1: more destroys since than the ring holds). */
static int destroyed_since(uint64_t stream, uint32_t gen) {
  uint32_t now = atomic_load(&g_destroy_gen);
  if (now - gen >= DESTROY_RING - 16) return -1; /* margin: destroys racing this scan */
  for (uint32_t k = gen; k != now; k++)
    if (atomic_load(&g_destroyed[k % DESTROY_RING]) == stream) return 1;
  return 0;
}

/* An event that failed to record (another device's context current, a
 * stream the runtime refuses) is destroyed, not pooled: the pool is LIFO,
 * and it would be handed out, and fail, for every later unit. When the
 * destroy is refused too (the application has an error pending: the host
 * services stay away from the runtime), the event was not at fault: it
 * goes back to the pool rather than leak. */
static void event_drop(void *ev, int device) {
  if (ev && a2a_hostsvc->event_destroy(ev) != 0) xr_event_release(ev, device);
}

static _Atomic int g_marking; /* application threads inside mark_run */

static void mark_run(uint32_t thread, const struct dfr *d) {
  void *ev = NULL;
  /* A capture began since (another thread's: ours flushed at its PRE):
   * the marker would join it. Or the run's stream was destroyed by another
   * thread since (the handle may dangle or name a new stream). The run is
   * closed untracked instead. g_marking pairs with destroy_fence (Dekker):
   * a destroy either shows in the ring here or waits for this record. */
  atomic_fetch_add(&g_marking, 1);
  if (!atomic_load(&g_capturing) && destroyed_since(d->stream, d->gen) == 0) {
    ev = event_get(d->device);
    if (ev && a2a_hostsvc->event_record(ev, (void *)(uintptr_t)d->stream) != 0) {
      event_drop(ev, d->device);
      ev = NULL;
    }
  }
  atomic_fetch_sub(&g_marking, 1);
  xr_rec r = {.type = XR_REC_UNIT_MARK, .thread = thread, .stream = d->stream, .event = ev,
              .device = (int16_t)d->device};
  r.u.unit.run = d->run;
  push(&r);
}

/* The dispatcher's flush hook (a2a_set_flush_hook), on the thread itself. */
static void flush_markers(uint32_t thread) {
  tslot *t = slot(thread);
  if (!t) return;
  for (int i = 0; i < t->ndfr; i++) mark_run(thread, &t->dfr[i]);
  t->ndfr = 0;
}

static void wait_no_query(void) {
  while (atomic_load(&g_querying)) sched_yield();
}

/* PRE of a stream destroy (any thread). */
static void destroy_fence(uint64_t stream) {
  /* The slot first, the generation after (readers scan [gen, now)):
   * concurrent destroys each take their own slot. */
  uint32_t g = atomic_fetch_add(&g_destroy_next, 1);
  atomic_store(&g_destroyed[g % DESTROY_RING], stream);
  while (atomic_load(&g_destroy_gen) != g) sched_yield(); /* publish in order */
  atomic_fetch_add(&g_destroy_gen, 1);
  wait_no_query();
  while (atomic_load(&g_marking)) sched_yield();
}

int xr_deferred_query(uint64_t stream, uint32_t gen) {
  if (stream == 0 || stream == 2) return -1;
  atomic_store(&g_querying, 1);
  int st = -1;
  if (atomic_load(&g_capturing) == 0) {
    int d = destroyed_since(stream, gen);
    st = d < 0 ? -1 : d ? -2 : a2a_hostsvc->stream_query((void *)(uintptr_t)stream);
  }
  atomic_store(&g_querying, 0);
  return st;
}

/* Record the marker of the thread's run on stream now, if it has one. */
static void mark_stream(uint32_t thread, tslot *t, uint64_t stream) {
  for (int i = 0; i < t->ndfr; i++)
    if (t->dfr[i].stream == stream) {
      mark_run(thread, &t->dfr[i]);
      t->dfr[i] = t->dfr[--t->ndfr];
      return;
    }
}

/* How a launch unit is closed (the UNIT_END fields, or an OP_UNIT's):
 * deferred into the thread's marker run (run, gen), or with its own
 * completion event (NULL: untracked). */
typedef struct unit_close {
  void *event;
  uint32_t run, gen;
  uint8_t deferred;
  int16_t device;
} unit_close;

/* Close a unit into the thread's run for its stream (fills u's run and
 * gen); false when it must get its own event now. */
__attribute__((noinline)) static bool defer_unit(uint32_t thread, uint64_t stream, int device,
                                                 unit_close *u) {
  tslot *t = slot(thread);
  if (!t) return false;
  if (stream == 0 || stream == 2 || atomic_load_explicit(&g_capturing, memory_order_relaxed)) {
    /* This unit gets its own event: a run of the thread on its stream is
     * closed first, so that the stream's units stay in marker order. */
    mark_stream(thread, t, stream);
    return false;
  }
  struct dfr *d = NULL;
  for (int i = 0; i < t->ndfr && !d; i++)
    if (t->dfr[i].stream == stream && t->dfr[i].device == device) d = &t->dfr[i];
  if (d && atomic_load_explicit(&g_destroy_gen, memory_order_relaxed) != d->gen &&
      destroyed_since(stream, d->gen) != 0) {
    /* The run's stream was destroyed and this handle may be a new stream
     * at the same address: the old run is closed, a new one begins. */
    mark_stream(thread, t, stream);
    d = NULL;
  }
  if (!d) {
    if (t->ndfr == (int)(sizeof t->dfr / sizeof t->dfr[0])) {
      mark_run(thread, &t->dfr[0]);
      memmove(&t->dfr[0], &t->dfr[1], (size_t)(t->ndfr - 1) * sizeof t->dfr[0]);
      t->ndfr--;
    }
    if (!a2a_thread_want_flush(thread)) return false;
    if (++t->run == 0) t->run = 1; /* 0: no run */
    d = &t->dfr[t->ndfr++];
    *d = (struct dfr){.stream = stream, .device = device, .run = t->run,
                      .gen = atomic_load(&g_destroy_gen)};
  }
  u->run = d->run;
  u->gen = d->gen;
  u->deferred = 1;
  return true;
}

/* Decide how the unit the thread just posted on stream is closed: in its
 * marker run, or with an event recorded now (after the real call). t is
 * slot(thread), looked up once by the caller. */
/* The thread's run a unit on stream (device) joins without defer_unit: a
 * run of that stream (back-to-back units on one stream; a group over
 * several streams - nccl-tests' one stream per device - closes one unit
 * per stream, each into its stream's run), nothing destroyed and no
 * capture begun since it began: exactly defer_unit's outcome - its search,
 * in its order (the first run of the stream and device), finds the same
 * run, skips the destroyed test (generation unchanged) and joins it. NULL
 * otherwise (defer_unit decides). */
static inline const struct dfr *run_join(const tslot *t, uint64_t stream, int device) {
  if (!t || stream == 0 || stream == 2 || atomic_load_explicit(&g_capturing, memory_order_relaxed))
    return NULL;
  for (int i = 0; i < t->ndfr; i++) {
    const struct dfr *d = &t->dfr[i];
    if (d->stream != stream || d->device != device) continue;
    return atomic_load_explicit(&g_destroy_gen, memory_order_relaxed) == d->gen ? d : NULL;
  }
  return NULL;
}

/* Decide how the unit the thread just posted on stream is closed: in its
 * marker run, or with an event recorded now (after the real call). t is
 * slot(thread), looked up once by the caller. */
static inline void close_prep(tslot *t, uint32_t thread, uint64_t stream, void *rawstream,
                              int device, unit_close *u) {
  u->device = (int16_t)device; /* (unit_dev's: not negative) */
  const struct dfr *d = run_join(t, stream, device);
  if (d) {
    u->event = NULL;
    u->run = d->run;
    u->gen = d->gen;
    u->deferred = 1;
    return;
  }
  u->event = NULL;
  u->run = u->gen = 0;
  u->deferred = 0;
  if (defer_unit(thread, stream, device, u)) return;
  void *ev = event_get(device);
  if (ev && a2a_hostsvc->event_record(ev, rawstream) != 0) {
    /* Not recordable here (another device's stream): untracked. */
    event_drop(ev, device);
    ev = NULL;
  }
  u->event = ev;
}

/* Close the thread's unit on stream with a UNIT_END record (group ends).
 * The record carries what the background thread reads of a UNIT_END
 * (xrank_rec.h): type, thread, stream, event, device and u.unit. */
static inline void unit_end_fill(xr_rec *r, uint32_t thread, uint64_t stream, int16_t device,
                                 void *event, uint32_t run, uint32_t gen, uint8_t deferred) {
  rec_head(r, XR_REC_UNIT_END, device, thread);
  r->stream = stream;
  r->event = event;
  r->u.unit.run = run;
  r->u.unit.gen = gen;
  r->u.unit.deferred = deferred;
}
static inline void unit_end(uint32_t thread, uint64_t stream, int16_t device, void *event,
                            uint32_t run, uint32_t gen, uint8_t deferred) {
  push_tok tok;
  xr_rec *r = push_begin(&tok);
  if (!r) {
    xr_event_release(event, device); /* dropped: the event is not lost */
    return;
  }
  unit_end_fill(r, thread, stream, device, event, run, gen, deferred);
  push_end(&tok);
}

static void close_unit(tslot *t, uint32_t thread, uint64_t stream, void *rawstream, int device) {
  /* A unit joining its stream's run (the common case, close_prep's first
   * outcome): the record is written from the run directly. */
  const struct dfr *d = run_join(t, stream, device);
  if (d) {
    unit_end(thread, stream, (int16_t)(device < 0 ? 0 : device), NULL, d->run, d->gen, 1);
    return;
  }
  unit_close u;
  close_prep(t, thread, stream, rawstream, device, &u);
  unit_end(thread, stream, u.device, u.event, u.run, u.gen, u.deferred);
}

/* Streams are re-derived from their ids when recording: the legacy and
 * per-thread defaults map back to their handle values. */
static void *raw_stream(uint64_t id) {
  return (void *)(uintptr_t)id;
}

/* The fingerprint of a successful collective or p2p call (its POST), in
 * the record's cell: every byte of it (group 0: the background thread
 * numbers the units). */
__attribute__((always_inline)) static inline void fill_op(xr_op *op, const a2a_event *ev,
                                                          a2a_kind kind, uint64_t id,
                                                          int32_t rank) {
  op->comm = id;
  op->site = (uint64_t)(uintptr_t)ev->callsite;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  /* A send or receive (the grouped hot path) in wide stores: group (0)
   * and rank in one; peer, then root (-1); kind and coll (-1) in one,
   * then dtype; redop (-1) and pad (0) in one - the same bytes as the
   * field stores below, each part a load or a constant (no shifts or
   * 64-bit constants to merge them). */
  if (kind == A2A_EV_P2P) {
    uint64_t count = ev->u.p2p.count, group_rank = (uint64_t)(uint32_t)rank << 32;
    int32_t peer = ev->u.p2p.peer, root = -1;
    uint32_t kind_coll = (uint32_t)(ev->u.p2p.is_send ? XR_OP_SEND : XR_OP_RECV) | 0xff0000u;
    int8_t dtype = (int8_t)ev->u.p2p.dtype;
    uint32_t redop_pad = 0xffu;
    _Static_assert(offsetof(xr_op, count) == 16 && offsetof(xr_op, group) == 24 &&
                       offsetof(xr_op, rank) == 28 && offsetof(xr_op, peer) == 32 &&
                       offsetof(xr_op, root) == 36 && offsetof(xr_op, kind) == 40 &&
                       offsetof(xr_op, coll) == 42 && offsetof(xr_op, dtype) == 43 &&
                       offsetof(xr_op, redop) == 44 && offsetof(xr_op, flags) == 45 &&
                       offsetof(xr_op, pad) == 46 &&
                       sizeof(xr_op) == 48,
                   "fill_op's packed stores follow xr_op's layout");
    /* Word by word (an array would be built on the stack, then copied);
     * kind_coll's byte 3 (0) is dtype's, stored after it; redop_pad's
     * upper bytes are flags and pad (0). */
    memcpy(&op->count, &count, 8);
    memcpy(&op->group, &group_rank, 8);
    memcpy(&op->peer, &peer, 4);
    memcpy(&op->root, &root, 4);
    memcpy(&op->kind, &kind_coll, 4);
    memcpy(&op->dtype, &dtype, 1);
    memcpy(&op->redop, &redop_pad, 4);
    return;
  }
#endif
  op->group = 0;
  op->rank = rank;
  op->flags = 0;
  op->pad[0] = op->pad[1] = 0;
  if (kind == A2A_EV_COLL) {
    op->count = ev->u.coll.count;
    op->peer = -1;
    op->root = ev->u.coll.root;
    op->kind = XR_OP_COLL;
    op->coll = (int8_t)ev->u.coll.coll;
    op->dtype = (int8_t)ev->u.coll.dtype;
    op->redop = (int8_t)(ev->u.coll.redop > 127 ? 127 : ev->u.coll.redop);
    /* ncclBcast: the same operation as ncclBroadcast for NCCL and for
     * matching; its name only for messages (a broadcast's path only). */
    if (op->coll == A2A_COLL_BROADCAST && ev->api && strcmp(ev->api, "ncclBcast") == 0)
      op->flags = XR_OPF_BCAST;
  } else {
    op->count = ev->u.p2p.count;
    op->peer = ev->u.p2p.peer;
    op->root = -1;
    op->kind = (uint16_t)(ev->u.p2p.is_send ? XR_OP_SEND : XR_OP_RECV);
    op->coll = -1;
    op->dtype = (int8_t)ev->u.p2p.dtype;
    op->redop = -1;
  }
}

/* A grouped operation's OP record, in the cell r claimed for it: what
 * the background thread reads of an OP (type, thread, stream, op). */
static inline void group_op(xr_rec *r, const tslot *t, const a2a_event *ev, a2a_kind kind,
                            uint64_t id, int32_t rank, uint64_t sid) {
  memcpy(r, &t->op_head, sizeof t->op_head); /* (t: ev's thread's, depth > 0) */
  r->stream = sid;
  fill_op(&r->u.op, ev, kind, id, rank);
}

/* The device of an operation's unit: its communicator's (NCCL runs the
 * operation on that device, whatever device the thread has current - with
 * the legacy or per-thread default stream, that device's, as it makes the
 * device current to launch); the current one when the communicator's is
 * unknown. (A default-stream unit's marker is recorded on the handle,
 * which names the current device's stream: with another device current
 * the record is refused and the unit untracked, never wrongly placed.) */
static inline int unit_dev(const a2a_event *ev, const a2a_comm *c) {
  int d = c->device < 0 ? ev->device : c->device;
  return d < 0 ? 0 : d; /* (never negative: the records' device field is 0 for unknown) */
}

/* The open group's stream set gains sid; the previous operation's stream
 * first (a group on one stream: one compare). More streams than slots:
 * the extra units stay untracked (the background thread treats a unit
 * without an event as complete).
 * A grouped operation's posting flag (tslot.posted, read by the thread's
 * own polls) is set here, once per group rather than per operation: each
 * grouped operation, on either path, calls group_stream before its
 * handler returns, and group_stream skips this call only when the set
 * holds a stream (n > 0) - added by this call in an earlier operation of
 * the group (the set is emptied at each outermost end, and a fork's child
 * clears set and flag together), which set the flag; nothing else clears
 * it.
 * A group that posts on the streams of the thread's previous group, in
 * the same order (nccl-tests -g N: one stream per device, every
 * iteration), finds each new stream where the previous group left it:
 * streams[n] == sid with n < nkeep means sid is in no slot before n (the
 * slots before nkeep are pairwise distinct), so the scan would not find
 * it and the add would write sid into slot n - which holds it already.
 * An add that writes slot n otherwise leaves slots n + 1 .. unknown
 * against it: nkeep becomes n + 1. Nothing else writes the slots (the
 * ends empty the set by its count only; a fork's child zeroes the slot
 * with its count). The stream's device (unit_dev) is computed here, on
 * the miss path only: the caller's fast path keeps its registers. */
__attribute__((noinline)) static void group_stream_add(tslot *t, uint64_t sid, const a2a_event *ev,
                                                      const a2a_comm *c) {
  const int dev = unit_dev(ev, c);
  t->posted = 1;
  int n = t->nstreams;
  if (n < t->nkeep && t->streams[n] == sid) {
    t->sdev[n] = (int16_t)dev; /* (a handle may have been destroyed and made again since) */
    t->nstreams = n + 1;
    return;
  }
  for (int i = 0; i < n - 1; i++)
    if (t->streams[i] == sid) return;
  if (n < MAX_GROUP_STREAMS) {
    t->streams[n] = sid;
    t->sdev[n] = (int16_t)dev;
    t->nstreams = t->nkeep = n + 1;
  }
}

static inline void group_stream(tslot *t, uint64_t sid, const a2a_event *ev, const a2a_comm *c) {
  /* n as a size_t (nstreams is 0 .. MAX_GROUP_STREAMS): streams[n - 1]
   * is then one indexed load, without a 32-bit n - 1 to widen first. The
   * rest (the group's first operation, another stream: the only calls
   * that need the stream's device) out of line. */
  size_t n = (uint32_t)t->nstreams;
  if (n > 0 && t->streams[n - 1] == sid) return;
  group_stream_add(t, sid, ev, c);
}

/* A non-blocking init's registration, pushed before its first operation
 * (rare: only while g_npend is nonzero). */
__attribute__((noinline)) static void pend_flush(const void *handle) {
  xr_rec reg;
  if (pend_take(handle, &reg, 0)) push(&reg);
}

/* ---- CUDA graphs ------------------------------------------------------ */
/* An NCCL operation issued to a capturing stream runs nothing at its call:
 * NCCL makes it a node of the captured graph (a persistent plan), and
 * every cudaGraphLaunch of an exec instantiated from that graph runs it
 * again, as a NEW operation of its communicator - its next operation
 * number on the launching thread, in node order (NCCL's per-launch
 * sequence; docs/simulator-nccl.md "CUDA graphs"). So a captured operation
 * is not posted at its call but kept in its capture's plan (the capture's
 * id: cudaStreamGetCaptureInfo, which NCCL asks of the same stream); the
 * plan follows cudaStreamEndCapture to its graph and cudaGraphInstantiate*
 * to each exec (cudaGraphDestroy / cudaGraphExecDestroy forget them); and
 * each successful launch posts the plan's operations as if the launching
 * thread issued them on the launch stream then: the operations of one
 * captured group as one group, a lone one alone (its own unit, marked
 * after the launch), each marked XR_OPF_REPLAY (the findings say it is a
 * replay; its site is the captured call's). A launch into a stream that is
 * itself capturing posts into that capture's plan (op_body), as CUDA
 * records the nodes into the outer graph.
 * Rare path (captures, instantiations, launches of graphs that hold NCCL
 * work): a small table under a lock; a plan is shared (refcounted) by its
 * capture, graph and execs. Handles are recycled by CUDA after a destroy:
 * besides the destroys, every successful end of capture and instantiation
 * sets what its handle holds (nothing, for a graph without NCCL work), so
 * only a graph made otherwise (cudaGraphCreate, a clone) at the address of
 * a graph never destroyed through the runtime's entry point could inherit
 * a plan. At most XG_SLOTS entries per table (past that an entry is
 * forgotten, round robin: its launches post nothing, as before this
 * model). The count of active captures (g_capturing) follows the runtime:
 * an end of capture decrements it when the stream was capturing at its PRE
 * and is not after it, whatever the result.
 * Not modelled: graphs built or edited by hand (cudaGraphAddChildGraphNode,
 * cudaGraphExecUpdate, captures into a user graph), captures begun through
 * the driver API. */
#define XG_SLOTS 256
typedef struct xg_op {
  a2a_event ev;    /* the captured call's POST (its comm, arguments, site) */
  uint32_t comm_serial; /* its communicator's registry record (a2a_comm.serial):
                           a handle NCCL reuses names another record */
  uint64_t group;  /* nonzero: the captured group it belongs to (the
                      capturing thread and its group number) */
} xg_op;
typedef struct xg_plan {
  int refs, n, cap;
  xg_op *ops;
} xg_plan;
typedef struct xg_slot { uint64_t key; xg_plan *plan; } xg_slot;
enum { XG_CAPTURE, XG_GRAPH, XG_EXEC, XG_TABLES };
static pthread_mutex_t g_xg_mu = PTHREAD_MUTEX_INITIALIZER;
static xg_slot g_xg[XG_TABLES][XG_SLOTS];
static unsigned g_xg_next[XG_TABLES];  /* the next slot to evict */
static _Atomic int g_xg_execs;         /* execs holding a plan: launches look */

static void xg_unref(xg_plan *p) {
  if (p && --p->refs == 0) {
    free(p->ops);
    free(p);
  }
}

/* The slot of key in table tb, or NULL (g_xg_mu held). */
static xg_slot *xg_find(int tb, uint64_t key) {
  for (int i = 0; i < XG_SLOTS; i++)
    if (g_xg[tb][i].plan && g_xg[tb][i].key == key) return &g_xg[tb][i];
  return NULL;
}

/* key -> p in table tb (p's reference taken by the caller), replacing
 * what key held; NULL p forgets key (g_xg_mu held). */
static void xg_set(int tb, uint64_t key, xg_plan *p) {
  xg_slot *s = xg_find(tb, key);
  if (!s && p) {
    for (int i = 0; i < XG_SLOTS && !s; i++)
      if (!g_xg[tb][i].plan) s = &g_xg[tb][i];
    if (!s) s = &g_xg[tb][g_xg_next[tb]++ % XG_SLOTS];
  }
  if (!s) return;
  if (tb == XG_EXEC) atomic_fetch_add(&g_xg_execs, (p != NULL) - (s->plan != NULL));
  xg_unref(s->plan);
  s->key = key;
  s->plan = p;
}

/* ev (a successful NCCL operation's POST on a known communicator, some
 * capture active in the process) is issued to a capturing stream: kept in
 * its capture's plan. False: not captured (post it now), or unknown (the
 * runtime could not say: posted now, as before this model). */
__attribute__((noinline, cold)) static bool graph_capture_op(const a2a_event *ev) {
  uint64_t cid = 0;
  if (!a2a_hostsvc || !a2a_hostsvc->capture_id ||
      a2a_hostsvc->capture_id(ev->stream, ev->per_thread, &cid) != 1)
    return false;
  tslot *t = slot(ev->thread);
  uint64_t group = t && t->depth > 0 ? (uint64_t)ev->thread << 32 | t->gserial | 1u << 31 : 0;
  pthread_mutex_lock(&g_xg_mu);
  xg_slot *s = xg_find(XG_CAPTURE, cid);
  xg_plan *p = s ? s->plan : NULL;
  if (!p && (p = calloc(1, sizeof *p))) {
    p->refs = 1;
    xg_set(XG_CAPTURE, cid, p);
  }
  if (p && p->n == p->cap) {
    int cap = p->cap ? 2 * p->cap : 16;
    xg_op *o = realloc(p->ops, (size_t)cap * sizeof *o);
    if (o) {
      p->ops = o;
      p->cap = cap;
    }
  }
  if (p && p->n < p->cap) {
    const a2a_comm *rc = a2a_comm_lookup(ev->comm);
    p->ops[p->n].ev = *ev;
    p->ops[p->n].comm_serial = rc ? rc->serial : 0;
    p->ops[p->n].group = group;
    p->n++;
  }
  pthread_mutex_unlock(&g_xg_mu);
  return true; /* captured: never posted now, kept or not */
}

static void op_body_any(const a2a_event *ev);
static void on_group_start(const a2a_event *ev);
static void on_group_end(const a2a_event *ev);

/* cudaStreamEndCapture: PRE notes the capture of its stream; a successful
 * POST hands that capture's plan to the graph (an invalidated or failed
 * one drops it). cudaGraphInstantiate*: the exec takes the graph's plan
 * (or none). */
static void graph_capture_end(const a2a_event *ev) {
  tslot *t = slot(ev->thread);
  uint64_t cid = 0;
  int rc = a2a_hostsvc && a2a_hostsvc->capture_id
               ? a2a_hostsvc->capture_id(ev->stream, ev->per_thread, &cid)
               : -1;
  if (ev->phase == A2A_PRE) {
    if (t) {
      t->cap_end_id = rc >= 1 ? cid : 0;
      t->cap_end_known = rc >= 0;
    }
    return;
  }
  const uint64_t was = t ? t->cap_end_id : 0;
  const int known = t && t->cap_end_known;
  if (t) t->cap_end_id = 0, t->cap_end_known = 0;
  /* Ended: capturing at the PRE and not (in that capture) now; where the
   * runtime did not answer, the results that end a capture (success, or
   * invalidated: cudaErrorStreamCaptureInvalidated, 901). */
  bool ended = known && rc >= 0 ? was && !(rc >= 1 && cid == was)
                                : ev->result == 0 || ev->result == 901;
  if (ended && atomic_load(&g_capturing) > 0) {
    atomic_fetch_sub(&g_capturing, 1);
    live_update();
  }
  void *graph = ev->result == 0 && ev->u.graph.graph_out ? *ev->u.graph.graph_out : NULL;
  if (!graph && !(ended && was)) return;
  pthread_mutex_lock(&g_xg_mu);
  xg_slot *s = ended && was ? xg_find(XG_CAPTURE, was) : NULL;
  xg_plan *p = s ? s->plan : NULL;
  if (s) s->plan = NULL; /* (the capture's reference moves to the graph, or goes) */
  if (graph) xg_set(XG_GRAPH, (uint64_t)(uintptr_t)graph, p); /* (NULL: no NCCL work) */
  else xg_unref(p);
  pthread_mutex_unlock(&g_xg_mu);
}

static void graph_instantiate(const a2a_event *ev) {
  if (ev->phase != A2A_POST || ev->result != 0 || !ev->u.graph.graph_out ||
      !*ev->u.graph.graph_out)
    return;
  pthread_mutex_lock(&g_xg_mu);
  xg_slot *s = xg_find(XG_GRAPH, (uint64_t)(uintptr_t)ev->u.graph.graph);
  xg_plan *p = s ? s->plan : NULL;
  if (p) p->refs++;
  xg_set(XG_EXEC, (uint64_t)(uintptr_t)*ev->u.graph.graph_out, p);
  pthread_mutex_unlock(&g_xg_mu);
}

/* cudaGraphDestroy / cudaGraphExecDestroy: the handle holds nothing. */
static void graph_destroy(const a2a_event *ev) {
  if (ev->phase != A2A_POST || ev->result != 0) return;
  pthread_mutex_lock(&g_xg_mu);
  if (ev->u.graph.graph) xg_set(XG_GRAPH, (uint64_t)(uintptr_t)ev->u.graph.graph, NULL);
  if (ev->u.graph.graph_exec) xg_set(XG_EXEC, (uint64_t)(uintptr_t)ev->u.graph.graph_exec, NULL);
  pthread_mutex_unlock(&g_xg_mu);
}

/* ncclCommFinalize, or ncclCommDestroy of a communicator not finalized
 * yet, at its PRE: NCCL's finalize (commDestroySync) waits until every
 * graph and graph exec holding captured work of the communicator is
 * destroyed (the plans' user objects: NCCL's persistentRefs), so with one
 * still alive the call returns only once another thread destroys it - in a
 * program that destroys its graphs after its communicators, never, with no
 * operation pending for the stall and hang analysis to see. Reported
 * before the call (group.use-after-destroy: a replay would use the ended
 * communicator), from the graphs and execs the model holds (XG_GRAPH,
 * XG_EXEC; an evicted entry is not seen), for the communicator's own record
 * (not another one NCCL gave the same handle). Blocking communicators only
 * (a non-blocking one's finalize returns at once). NCCL 2.14 and later
 * (earlier ones did not wait in the call). */
static void graph_holds_comm(const a2a_event *ev) {
  if (!a2a_check_on(A2A_CK_GROUP_USE_AFTER_DESTROY) || !ev->comm) return;
  const a2a_comm *c = a2a_comm_lookup(ev->comm);
  /* A non-blocking communicator's finalize returns at once; the wait is in
   * its polls, and the program may destroy its graphs between: correct. */
  if (!c || atomic_load(&c->state) != A2A_COMM_ACTIVE || c->blocking == 0) return;
  unsigned held[2] = {0, 0}, nops = 0;
  const void *site = NULL;
  const char *api = NULL;
  pthread_mutex_lock(&g_xg_mu);
  for (int tb = XG_GRAPH; tb <= XG_EXEC; tb++)
    for (int i = 0; i < XG_SLOTS; i++) {
      const xg_plan *p = g_xg[tb][i].plan;
      unsigned k = 0;
      for (int j = 0; p && j < p->n; j++)
        if (p->ops[j].ev.comm == ev->comm && p->ops[j].comm_serial == c->serial) {
          if (!k++ && !site) {
            site = p->ops[j].ev.callsite;
            api = p->ops[j].ev.api;
          }
        }
      if (k) {
        held[tb - XG_GRAPH]++;
        if (k > nops) nops = k;
      }
    }
  pthread_mutex_unlock(&g_xg_mu);
  if (!held[0] && !held[1]) return;
  if (a2a_report_repeat(A2A_CK_GROUP_USE_AFTER_DESTROY, A2A_SEV_ERROR, ev->callsite)) return;
  char msg[768], js[320];
  a2a_json j;
  a2a_json_init(&j, js, sizeof js);
  a2a_json_obj_begin(&j, NULL);
  a2a_json_str(&j, "api", ev->api);
  a2a_json_str(&j, "comm", c->name);
  a2a_json_str(&j, "state", "held by CUDA graphs");
  a2a_json_uint(&j, "graphs", held[0]);
  a2a_json_uint(&j, "graph_execs", held[1]);
  a2a_json_uint(&j, "captured_ops", nops);
  a2a_json_str(&j, "captured_api", api ? api : "");
  a2a_json_obj_end(&j);
  char held_s[96];
  if (held[0] && held[1])
    snprintf(held_s, sizeof held_s, "%u CUDA graph%s and %u graph exec%s still hold", held[0],
             held[0] == 1 ? "" : "s", held[1], held[1] == 1 ? "" : "s");
  else
    snprintf(held_s, sizeof held_s, "%u %s still hold%s", held[0] + held[1],
             held[0] ? (held[0] == 1 ? "CUDA graph" : "CUDA graphs")
                     : (held[1] == 1 ? "graph exec" : "graph execs"),
             held[0] + held[1] == 1 ? "s" : "");
  snprintf(msg, sizeof msg,
           "%s of %s while %s its captured operations "
           "(%u in the largest plan, the first an %s): NCCL's finalize waits until "
           "every graph and graph exec holding a communicator's captured work is destroyed, so this "
           "call does not return unless another thread destroys them, and a replay after it would "
           "use the ended communicator. Destroy the graphs first (cudaGraphExecDestroy and "
           "cudaGraphDestroy; in PyTorch, drop every torch.cuda.CUDAGraph that captured collectives "
           "and let it be collected, or call its reset(), before destroy_process_group).",
           ev->api, c->name, held_s, nops, api ? api : "NCCL operation");
  a2a_finding f = {.check = A2A_CK_GROUP_USE_AFTER_DESTROY, .severity = A2A_SEV_ERROR,
                   .site = ev->callsite, .comm = c, .message = msg, .details_json = js,
                   .capture_stack = true};
  a2a_report(&f);
}

/* A successful cudaGraphLaunch of an exec holding a plan: its operations
 * posted as the launching thread's, on the launch stream, now. */
static void graph_replay(const a2a_event *ev) {
  if (ev->phase != A2A_POST || ev->result != 0 ||
      !atomic_load_explicit(&g_xg_execs, memory_order_relaxed))
    return;
  pthread_mutex_lock(&g_xg_mu);
  xg_slot *s = xg_find(XG_EXEC, (uint64_t)(uintptr_t)ev->u.graph.graph_exec);
  xg_plan *p = s ? s->plan : NULL;
  if (p) p->refs++;
  pthread_mutex_unlock(&g_xg_mu);
  if (!p) return;
  tslot *t = slot(ev->thread);
  /* A launch inside the thread's own open group joins that group. */
  const bool own_groups = t && t->depth == 0;
  a2a_event g = {.phase = A2A_POST, .thread = ev->thread, .seq = ev->seq, .t_ns = ev->t_ns,
                 .ok = 1, .device = ev->device};
  uint64_t open = 0;
  if (t) t->replaying = 1; /* (its records take op_body's paths, which mark them) */
  for (int i = 0; i < p->n; i++) {
    const xg_op *o = &p->ops[i];
    if (own_groups && open && o->group != open) {
      g.kind = A2A_EV_GROUP_END;
      on_group_end(&g);
      open = 0;
    }
    if (own_groups && o->group && !open) {
      g.kind = A2A_EV_GROUP_START;
      on_group_start(&g);
      open = o->group;
    }
    a2a_event e = o->ev;
    e.thread = ev->thread;
    e.stream = ev->stream;
    e.per_thread = ev->per_thread;
    e.seq = ev->seq;
    e.t_ns = ev->t_ns;
    op_body_any(&e);
  }
  if (open) {
    g.kind = A2A_EV_GROUP_END;
    on_group_end(&g);
  }
  if (t) t->replaying = 0;
  pthread_mutex_lock(&g_xg_mu);
  xg_unref(p);
  pthread_mutex_unlock(&g_xg_mu);
}

/* A lone operation (outside any group): its OP_UNIT record, after
 * deciding how its unit is closed. */
__attribute__((always_inline)) static inline void op_lone(const a2a_event *ev, a2a_kind kind,
                                                          tslot *t, uint64_t sid, uint64_t id,
                                                          int32_t rank, int dev) {
  if (t) t->posted = 1;
  unit_close u;
  close_prep(t, ev->thread, sid, ev->per_thread && !ev->stream ? (void *)(uintptr_t)2 : ev->stream,
             dev, &u);
  push_tok tok;
  xr_rec *r = push_begin(&tok);
  if (!r) {
    xr_event_release(u.event, u.device); /* dropped: the event is not lost */
    return;
  }
  rec_head(r, XR_REC_OP_UNIT, u.device, ev->thread);
  r->stream = sid;
  r->event = u.event;
  r->u.opu.run = u.run;
  r->u.opu.gen = u.gen;
  r->u.opu.deferred = u.deferred;
  fill_op(&r->u.opu.op, ev, kind, id, rank);
  if (t && t->replaying) r->u.opu.op.flags |= XR_OPF_REPLAY;
  push_end(&tok);
}

/* A lone send or receive, out of line: the grouped path (on_p2p's hot
 * one) keeps a small frame. */
__attribute__((noinline)) static void p2p_lone(const a2a_event *ev, tslot *t, uint64_t sid,
                                               uint64_t id, int32_t rank, int dev) {
  op_lone(ev, A2A_EV_P2P, t, sid, id, rank, dev);
}

/* A successful collective (with a count: NCCL drops a zero-count one
 * before it becomes a task) or send/receive (kind: the event's), at its
 * POST: one record per operation. Inside a group an OP (its unit is
 * closed at the group's end, one UNIT_END per stream); outside one an
 * OP_UNIT - the operation and the close of the unit it forms, which a
 * lone operation always is (one record, not an OP and a UNIT_END). Each
 * record carries exactly what the background thread reads of its type
 * (xrank_rec.h): an OP its type, thread, stream and op; an OP_UNIT also
 * event, device and the close. */
__attribute__((always_inline)) static inline void op_body(const a2a_event *ev, a2a_kind kind) {
  if (!atomic_load_explicit(&g_active, memory_order_relaxed) || ev->phase != A2A_POST ||
      !ev->ok || (kind == A2A_EV_COLL && ev->u.coll.count == 0))
    return;
  const a2a_comm *c = a2a_comm_lookup(ev->comm);
  uint64_t id = comm_id(c);
  if (!id) return; /* unknown communicator */
  if (__builtin_expect(atomic_load_explicit(&g_capturing, memory_order_relaxed) != 0, 0) &&
      graph_capture_op(ev))
    return; /* a graph node: posted at each launch of the graph (graph_replay) */
  if (atomic_load_explicit(&g_npend, memory_order_relaxed)) pend_flush(ev->comm);
  tslot *t = slot(ev->thread);
  uint64_t sid = xr_stream_id(ev->stream, ev->per_thread);
  if (t && t->depth > 0) {
    /* In a group (the posting flag: group_stream). */
    push_tok tok;
    xr_rec *r = push_begin(&tok);
    if (r) {
      group_op(r, t, ev, kind, id, c->rank, sid);
      if (t->replaying) r->u.op.flags |= XR_OPF_REPLAY; /* (graph_replay: this path only) */
      push_end(&tok);
    }
    group_stream(t, sid, ev, c);
    return;
  }
  if (kind == A2A_EV_COLL) op_lone(ev, A2A_EV_COLL, t, sid, id, c->rank, unit_dev(ev, c));
  else p2p_lone(ev, t, sid, id, c->rank, unit_dev(ev, c));
}

/* The handlers of the dispatch table (xr_by_kind) and on_event's. */
__attribute__((noinline)) static void coll_body(const a2a_event *ev) { op_body(ev, A2A_EV_COLL); }
__attribute__((noinline)) static void p2p_body(const a2a_event *ev) { op_body(ev, A2A_EV_P2P); }
static void op_body_any(const a2a_event *ev) {
  if (ev->kind == A2A_EV_COLL) coll_body(ev);
  else p2p_body(ev);
}

/* on_op_fast's writes, once its tests passed and it claimed tok's cell
 * (inlined there: with everything in registers the handler needs no
 * frame, and no tail call to a writer of its own). */
__attribute__((always_inline)) static inline void op_grouped(const a2a_event *ev, a2a_kind kind,
                                                             const a2a_comm *c, tslot *t,
                                                             push_tok tok) {
  uint64_t sid = xr_stream_id(ev->stream, ev->per_thread);
  group_op(&tok.c->rec, t, ev, kind, c->id_hash, c->rank, sid);
  push_publish(&tok); /* (g_ring_live: the thread was asked for) */
  group_stream(t, sid, ev, c); /* (after the push, as op_body: its miss a tail call) */
}

/* A send or receive, or a collective (kind, a constant): op_body's grouped
 * branch without a frame in its common case - where each of its tests has
 * its common outcome (the analyzer active, no pending registration and the
 * background thread asked for already, all three in one test of
 * g_ring_live; a collective with a count; a communicator the thread's
 * registry memo answers with its last answer - a2a_comm_lookup's fast
 * path, without its call to the table - with a cross-rank identity of its
 * own; the thread in a group; a cell free at once) - writing what that
 * branch writes, in its order: the record, then the group's stream set
 * and posting flag (the thread's own state, read at its ncclGroupEnd and
 * its polls).
 * Anything else is op_body's (a tail call), which then makes every test
 * again: nothing was written yet (a claimed cell is the last test).
 * post_known: the caller knows the event is a POST (xr_by_kind_post's
 * handlers: P2P and COLL are in this analyzer's post mask only), and the
 * phase is not tested again. */
/* slot(thread), its address computed once and kept in a register: the
 * compiler would otherwise compute it again (a multiply) for op_grouped's
 * writes after the ring's claim. (The empty asm only hides the value's
 * origin; it emits nothing.) */
static inline tslot *slot_kept(uint32_t thread) {
  if (thread >= MAX_THREADS) return NULL; /* (slot's test) */
  tslot *t = &g_ts[thread];
  __asm__("" : "+r"(t));
  if (!t) __builtin_unreachable(); /* (an element's address: never NULL) */
  return t;
}

__attribute__((always_inline)) static inline void on_op_fast(const a2a_event *ev, a2a_kind kind,
                                                             bool post_known) {
  const a2a_comm *c;
  tslot *t;
  push_tok tok;
  const void *h = ev->comm;
  if (kind == A2A_EV_COLL) {
    /* (The thread's depth first: a lone collective - an all-reduce
     * outside any group - leaves at its first test, for op_body.) */
    if ((t = slot_kept(ev->thread)) && t->depth > 0 &&
        atomic_load_explicit(&g_ring_live, memory_order_acquire) &&
        (post_known || ev->phase == A2A_POST) && ev->ok && ev->u.coll.count != 0 &&
        (c = a2a_comm_lookup_last(h)) && c->id_hash && push_claim(&tok)) {
      op_grouped(ev, A2A_EV_COLL, c, t, tok);
      return;
    }
    coll_body(ev);
    return;
  }
  if (atomic_load_explicit(&g_ring_live, memory_order_acquire) &&
      (post_known || ev->phase == A2A_POST) && ev->ok && (c = a2a_comm_lookup_last(h)) &&
      c->id_hash && (t = slot_kept(ev->thread)) && t->depth > 0 && push_claim(&tok)) {
    op_grouped(ev, A2A_EV_P2P, c, t, tok);
    return;
  }
  p2p_body(ev);
}
__attribute__((noinline)) static void on_p2p(const a2a_event *ev) {
  on_op_fast(ev, A2A_EV_P2P, false);
}
__attribute__((noinline)) static void on_coll(const a2a_event *ev) {
  on_op_fast(ev, A2A_EV_COLL, false);
}
/* The dispatch table's handlers of a send's or receive's and of a
 * collective's POST (xr_by_kind_post): on_p2p and on_coll without their
 * test of the phase. */
__attribute__((noinline)) static void on_p2p_post(const a2a_event *ev) {
  on_op_fast(ev, A2A_EV_P2P, true);
}
__attribute__((noinline)) static void on_coll_post(const a2a_event *ev) {
  on_op_fast(ev, A2A_EV_COLL, true);
}

static void on_event_body(const a2a_event *ev);

/* ncclGroupStart (POST): the thread's nesting. */
static void on_group_start(const a2a_event *ev) {
  tslot *t;
  if (atomic_load_explicit(&g_active, memory_order_relaxed) && ev->phase == A2A_POST &&
      ev->result == 0 && (t = slot(ev->thread))) {
    xr_rec h;
    rec_head(&h, XR_REC_OP, 0, ev->thread);
    memcpy(&t->op_head, &h, sizeof t->op_head);
    if (t->depth == 0) t->gserial++;
    t->depth++;
  }
}

/* A group that failed or was only simulated launched nothing: its units
 * are closed untracked (out of line: the group end's frame stays small). */
__attribute__((noinline)) static void close_untracked(tslot *t, uint32_t thread) {
  for (int i = 0; i < t->nstreams; i++) {
    xr_rec r = {.type = XR_REC_UNIT_END, .thread = thread, .stream = t->streams[i]};
    push(&r);
  }
}

/* ncclGroupEnd (POST): the outermost closes the group's units, one per
 * stream. */
__attribute__((noinline)) static void group_close(tslot *t, const a2a_event *ev, int from);

/* A nested end only counts down. The outermost's common case is closed
 * by group_end_units, without group_close's frame: a launching end whose
 * every stream's unit joins the thread's run on it (run_join:
 * close_unit's first outcome) - close_unit's UNIT_END record, stream by
 * stream in the group's order: in one claim of the ring where the runs
 * are in the group's stream order (group_end_batch), else stream by
 * stream, each getting a cell at once (push_try; group_end_streams). At
 * the first stream that does not, group_close closes that one and the
 * rest (nothing of them was written). */
__attribute__((noinline)) static void group_end_units(tslot *t, const a2a_event *ev);

__attribute__((noinline)) static void on_group_end(const a2a_event *ev) {
  tslot *t;
  if (!atomic_load_explicit(&g_active, memory_order_relaxed) || ev->phase != A2A_POST ||
      !(t = slot(ev->thread)) || t->depth == 0)
    return;
  if (--t->depth != 0) return;
  /* No marker run open (the thread's other calls since closed them: a
   * training step's launches between its groups): no unit joins one. */
  if (t->ndfr) group_end_units(t, ev);
  else group_close(t, ev, 0);
}

/* group_end_units' general case (below): stream by stream. */
__attribute__((noinline)) static void group_end_streams(tslot *t, const a2a_event *ev) {
  if (ev->u.group.simulate || !ev->ok) {
    group_close(t, ev, 0);
    return;
  }
  int n = t->nstreams;
  for (int i = 0; i < n; i++) {
    const int dev = t->sdev[i];
    const struct dfr *d = run_join(t, t->streams[i], dev);
    push_tok tok;
    xr_rec *r;
    if (!d || !(r = push_try(&tok))) {
      group_close(t, ev, i);
      return;
    }
    unit_end_fill(r, ev->thread, t->streams[i], (int16_t)dev, NULL, d->run, d->gen, 1);
    push_end(&tok);
  }
  t->nstreams = 0;
}

/* The outermost group end's common case, in one claim of the ring: a
 * launching end where stream i of the group joins the thread's run at the
 * same position, dfr[i] (the runs a group over several streams opened at
 * its first end, in the group's stream order: nccl-tests' one stream per
 * device), and the n cells from the enqueue position are free and do not
 * wrap. Writes
 * what group_end_streams' loop writes - one UNIT_END per stream in the
 * group's order, then the empty stream set. Exact:
 *  - run_join(t, streams[i], sdev[i]) is &dfr[i] when dfr[j].stream ==
 *    streams[j] for every j <= i, dfr[i].device == sdev[i] and dfr[i].gen
 *    is the destroy generation, with no capture: the group's streams are
 *    pairwise distinct (group_stream_add), so no run before i is on
 *    streams[i] and dfr[i] is run_join's first match; and a run is never
 *    on stream 0 or 2 (defer_unit opens none there), so run_join's test
 *    of those passes. g_capturing and g_destroy_gen are read once for the
 *    group: as if a capture begun or a stream destroyed by another thread
 *    meanwhile came after this end, an order the per-stream reads allow.
 *  - The n records are claimed by one CAS of the enqueue position over n
 *    cells seen free for this lap: n consecutive claims that no other
 *    producer came between (the position only grows, so none claimed a
 *    cell past it; the consumer touches a free cell only after its
 *    producer published it). The last cell's test (push_claim's) answers
 *    for all n: the one consumer frees positions in order, so position
 *    pos + n - 1 free for this lap (its seq, acquire: the consumer's
 *    release of it, after its releases of the earlier ones) means every
 *    earlier position of the lap is free too and the consumer's reads of
 *    them are done; past the enqueue position nothing claimed them since.
 *    Each record is written into its cell and published (its seq,
 *    release) in the group's order, as unit_end's push would: the
 *    consumer reads the same records in the same order, whichever of the
 *    n cells it reaches first.
 *  - g_ring_live (acquire) says the ring is allocated and the background
 *    thread was asked for: push_end's request test has nothing to do.
 * False when any of this does not hold (a simulated or failed end too),
 * with nothing claimed or written: group_end_streams closes the units
 * stream by stream, and a ring with fewer free cells, or whose n cells
 * wrap, gives what it gave before (a wait for room, a drop). */
__attribute__((always_inline)) static inline bool group_end_batch(tslot *t,
                                                                  const a2a_event *ev) {
  const size_t n = (uint32_t)t->nstreams; /* (0 .. MAX_GROUP_STREAMS) */
  if (ev->u.group.simulate || !ev->ok || n > (uint32_t)t->ndfr ||
      !atomic_load_explicit(&g_ring_live, memory_order_acquire) ||
      atomic_load_explicit(&g_capturing, memory_order_relaxed))
    return false;
  const uint32_t gen = atomic_load_explicit(&g_destroy_gen, memory_order_relaxed);
  size_t pos = atomic_load_explicit(&g_enq, memory_order_relaxed);
  const size_t first = pos & g_mask;
  if (first + n > g_mask + 1) return false; /* the cells wrap: stream by stream */
  /* The n cells in order (a local base: the record stores could alias the
   * globals for the compiler, which would load them again). */
  cell *const c = &g_ring[first];
  for (size_t i = 0; i < n; i++)
    if (t->dfr[i].stream != t->streams[i] || t->dfr[i].device != t->sdev[i] || t->dfr[i].gen != gen)
      return false;
  /* (A group without an operation has nothing to claim: the general
   * path's loop does nothing either.) */
  if (!n || atomic_load_explicit(&c[n - 1].seq, memory_order_acquire) != pos + n - 1) return false;
  if (!atomic_compare_exchange_strong_explicit(&g_enq, &pos, pos + n, memory_order_relaxed,
                                               memory_order_relaxed))
    return false;
  const uint32_t thread = ev->thread;
  for (size_t i = 0; i < n; i++) {
    xr_rec *r = &c[i].rec;
    /* unit_end_fill's record, its run and generation copied together
     * from the run (its gen is gen: tested above). */
    rec_head(r, XR_REC_UNIT_END, t->sdev[i], thread); /* (unit_dev's: not negative) */
    r->stream = t->streams[i];
    r->event = NULL;
    memcpy(&r->u.unit.run, &t->dfr[i].run, 8);
    r->u.unit.deferred = 1;
    atomic_store_explicit(&c[i].seq, pos + i + 1, memory_order_release);
  }
  t->nstreams = 0;
  return true;
}
_Static_assert(offsetof(struct dfr, gen) == offsetof(struct dfr, run) + 4 &&
                   offsetof(xr_rec, u.unit.gen) == offsetof(xr_rec, u.unit.run) + 4,
               "a run's run and gen are copied into a UNIT_END as one 8-byte word");

static void group_end_units(tslot *t, const a2a_event *ev) {
  if (!group_end_batch(t, ev)) group_end_streams(t, ev);
}

/* The outermost ncclGroupEnd's closes from the group's stream `from` on
 * (out of on_group_end: its common case needs no frame). */
static void group_close(tslot *t, const a2a_event *ev, int from) {
  /* ncclGroupSimulateEnd ends the group but launches nothing: its units
   * are closed untracked (documented limit: their fingerprints were
   * already counted, so the peers' matching may shift). */
  if (!ev->u.group.simulate && ev->ok) {
    for (int i = from; i < t->nstreams; i++)
      close_unit(t, ev->thread, t->streams[i], raw_stream(t->streams[i]), t->sdev[i]);
  } else {
    close_untracked(t, ev->thread);
  }
  t->nstreams = 0;
}

/* A polling loop's calls: a stream query, and ncclCommGetAsyncError, which
 * matters only while a polling episode is published. */
static void on_stream_query(const a2a_event *ev) {
  tslot *t;
  if (atomic_load_explicit(&g_active, memory_order_relaxed) && (t = slot(ev->thread)))
    on_poll(t, ev, POLL_STREAM, xr_stream_id(ev->stream, ev->per_thread),
            ev->result == A2A_CUDA_ERROR_NOT_READY);
}
static void on_async_error(const a2a_event *ev) {
  tslot *t;
  /* A split or init in progress ends for the model when a poll of its
   * communicator says it is no longer in progress (done or failed); polls
   * of other communicators leave it. A poll that finds it still in progress
   * after the thread made other calls (its wait lapsed: torch allocates
   * between a non-blocking init and its wait for the communicator) starts
   * the wait again from this poll: the thread waits in it as long as it
   * only polls. */
  if (ev->phase == A2A_POST && ev->comm && (t = slot(ev->thread)) && ev->comm == t->polled_comm) {
    if (!(ev->result == 0 && ev->u.async_err.async_error == A2A_NCCL_IN_PROGRESS))
      clear_blocked(t);
    else if ((int32_t)(a2a_thread_last_other_seq(ev->thread) - RLOAD(t->b.polled_from)) >= 0)
      wait_keep_polled(t, ev->seq - 1, ev->comm, host_now_ns()); /* from this poll on */
  }
  if (__builtin_expect(atomic_load_explicit(&g_npend, memory_order_relaxed) != 0, 0) &&
      ev->phase == A2A_POST && ev->result == 0 && ev->u.async_err.async_error == 0)
    pend_ready(ev->comm);
  if (atomic_load_explicit(&g_active, memory_order_relaxed) && (t = slot(ev->thread)) &&
      t->polling)
    on_poll(t, ev, POLL_NEUTRAL, 0, 0);
}

/* A copy: an asynchronous one other than device to host (or of an unknown
 * direction) never blocks the host, so neither of its phases has anything
 * to publish - the common copy returns here. */
static void on_memcpy(const a2a_event *ev) {
  /* A queued copy: the host cannot block in it (pre_skips_queued_copy). */
  if (a2a_copy_queued(ev)) return;
  if (!atomic_load_explicit(&g_active, memory_order_relaxed)) return;
  on_event_body(ev);
}

/* The reference handler (direct callers, and the kinds xr_by_kind leaves
 * out): each hot kind goes to its own handler, which the dispatch table
 * calls directly. */
static void on_event(const a2a_event *ev) {
  switch (ev->kind) {
  case A2A_EV_MEMCPY: on_memcpy(ev); return;
  case A2A_EV_COLL: on_coll(ev); return;
  case A2A_EV_P2P: on_p2p(ev); return;
  case A2A_EV_STREAM_QUERY: on_stream_query(ev); return;
  case A2A_EV_COMM_ASYNC_ERROR: on_async_error(ev); return;
  case A2A_EV_GROUP_START: on_group_start(ev); return;
  case A2A_EV_GROUP_END: on_group_end(ev); return;
  default:
    if (atomic_load_explicit(&g_active, memory_order_relaxed)) on_event_body(ev);
    return;
  }
}

/* The dispatch table's handlers: on_event's targets, per kind. */
static const a2a_by_kind xr_by_kind = {
    .fn = {[A2A_EV_MEMCPY] = on_memcpy, [A2A_EV_COLL] = on_coll, [A2A_EV_P2P] = on_p2p,
           [A2A_EV_STREAM_QUERY] = on_stream_query, [A2A_EV_COMM_ASYNC_ERROR] = on_async_error,
           [A2A_EV_GROUP_START] = on_group_start, [A2A_EV_GROUP_END] = on_group_end}};
/* Nested group calls (a2a_analyzer.nested; a2a_group_nested): none. This
 * analyzer's depth (tslot.depth) counts as the shim's does (a start that
 * returned 0 at its POST, on_group_start; an end at its POST while
 * positive, whatever its result, on_group_end), from zero (its slots are
 * zero until the thread's first event; a forked child clears them,
 * after_fork_child, as the shim zeroes the forking thread's depth), while
 * g_active holds (set at init only; while 0 nothing here acts at all), and
 * slot() has every thread that may take the nested rows (the assertion).
 * So the table's handlers, given every call, would hold the shim's depth d
 * (u.group.depth) at each, and there a nested start (d >= 1) or end
 * (d >= 2) only counts: no record, no other state. Left out of the
 * counting, the depth is min(d, 1): the same answer to the operations'
 * test (depth > 0), and the same value at every group call that is not
 * nested (a start at d 0, an end at d <= 1), which closes the group's
 * units exactly when the full count would - the same records, in the same
 * order. */
_Static_assert(MAX_THREADS >= A2A_ACTIVITY_THREADS, "a slot for every thread a2a_group_nested may nest");
static const a2a_nested xr_nested = {.start = {NULL, NULL}, .end = {NULL, NULL}};

/* A send's or receive's and a collective's POST (the only phase of P2P
 * and COLL in this analyzer's masks: xr_by_kind's on_p2p and on_coll then
 * never see a PRE from the table). */
static const a2a_by_kind xr_by_kind_post = {
    .fn = {[A2A_EV_P2P] = on_p2p_post, [A2A_EV_COLL] = on_coll_post}};

__attribute__((noinline)) static void on_event_body(const a2a_event *ev) {
  tslot *t;
  switch (ev->kind) {
  case A2A_EV_GET_UNIQUE_ID:
    if (ev->phase == A2A_POST && ev->result == 0 && ev->u.uid.id && g_port->uid_created)
      g_port->uid_created((unsigned char *)(uintptr_t)ev->u.uid.id);
    return;
  case A2A_EV_COMM_INIT: {
    /* (A late POST - a2a_event.u.init.awaited - comes from a thread that
     * was never blocked in that split.) */
    if ((ev->u.init.how == A2A_INIT_SPLIT || ev->u.init.how == A2A_INIT_SHRINK) &&
        !ev->u.init.late && (t = slot(ev->thread))) {
      /* A split is collective over the parent: the thread is blocked in it
       * until every rank of the parent made the same split. */
      const a2a_comm *par = ev->u.init.parent ? a2a_comm_lookup(ev->u.init.parent) : NULL;
      /* A non-blocking parent split before any operation on it (torch's
       * eager init with TORCH_NCCL_USE_COMM_NONBLOCKING=1 splits its world
       * communicator at once) still holds back its registration: it goes
       * first, so that the coordinator knows the parent the split waits in
       * and that the child's registration names. (Splitting it tells
       * that its init completed, as an operation would.) */
      if (ev->phase == A2A_PRE && par && atomic_load_explicit(&g_npend, memory_order_relaxed))
        pend_flush(par->handle);
      if (ev->phase == A2A_PRE && par && par->id_hash) {
        set_blocked(t, XR_WAIT_SPLIT, 0, (uint64_t)(uintptr_t)ev->callsite, ev->t_ns, par->id_hash,
                    atomic_load_explicit(&par->nsplits, memory_order_relaxed), par->rank);
      } else if (ev->phase == A2A_POST) {
        if (ev->in_progress && t->blocked && RLOAD(t->b.wait) == XR_WAIT_SPLIT)
          wait_keep_polled(t, ev->seq, ev->u.init.parent, 0);
        else
          clear_blocked(t);
      }
    }
    /* Id-based inits register at PRE: ranks that disagree (nranks, rank,
     * device) make NCCL fail or hang inside the init, before any POST - or,
     * for a non-blocking one (config.blocking = 0), in the init job its
     * ranks then poll forever. The hash is the registry's
     * (core_registry.c): the 128 bytes of each id. */
    int by_id = ev->u.init.how == A2A_INIT_RANK || ev->u.init.how == A2A_INIT_RANK_CONFIG ||
                ev->u.init.how == A2A_INIT_SCALABLE;
    if (by_id && ev->u.init.ids && (t = slot(ev->thread))) {
      if (ev->phase == A2A_PRE) {
        int nids = ev->u.init.how == A2A_INIT_SCALABLE && ev->u.init.nids > 0 ? ev->u.init.nids : 1;
        uint64_t h = a2a_hash_bytes(ev->u.init.ids, 128 * (size_t)nids, 0);
        xr_rec r = {.type = XR_REC_COMMREG, .thread = ev->thread, .comm = NULL};
        r.u.reg.reg = (xr_commreg){.comm = h, .site = (uint64_t)(uintptr_t)ev->callsite,
                                   .nranks = ev->u.init.nranks, .rank = ev->u.init.rank,
                                   .device = ev->u.init.device >= 0 ? ev->u.init.device : ev->device,
                                   .how = (int32_t)ev->u.init.how, .color = -1};
        memcpy(&r.u.reg.idrec, (const unsigned char *)ev->u.init.ids + XR_IDREC_OFF, XR_IDREC_BYTES);
        r.has_idrec = 1;
        if (r.u.reg.reg.nranks <= 0 || r.u.reg.reg.rank < 0 || r.u.reg.reg.rank >= r.u.reg.reg.nranks)
          return; /* NCCL rejects the arguments at once; the local checks say so */
        t->init_hash = h;
        t->init_rank = ev->u.init.rank;
        push(&r);
        set_blocked(t, XR_WAIT_INIT, 0, (uint64_t)(uintptr_t)ev->callsite, ev->t_ns, h, 0,
                    ev->u.init.rank);
        return;
      }
      if (!t->init_hash) return;
      uint64_t h = t->init_hash;
      t->init_hash = 0;
      const a2a_comm *c = ev->ok && ev->u.init.newcomm ? a2a_comm_lookup(ev->u.init.newcomm) : NULL;
      if (c && c->id_hash == h && c->rank == t->init_rank) {
        /* In progress (non-blocking): the thread waits in the init while
         * it polls; a failure it sees there ends the communicator
         * (ncclCommAbort/Destroy: COMMEND) as a blocking init's would. */
        if (ev->in_progress && t->blocked && RLOAD(t->b.wait) == XR_WAIT_INIT)
          wait_keep_polled(t, ev->seq, ev->u.init.newcomm, 0);
        else
          clear_blocked(t);
        xr_rec b = {.type = XR_REC_COMMBIND, .thread = ev->thread, .comm = c};
        b.u.end.comm = h;
        b.u.end.rank = c->rank;
        push(&b);
        return;
      }
      clear_blocked(t);
      /* Failed (or named differently by the registry): end the PRE record;
       * a successful comm is then registered below under its real name. */
      xr_rec e = {.type = XR_REC_COMMEND, .thread = ev->thread};
      e.u.end.comm = h;
      e.u.end.how = A2A_END_ABORT;
      e.u.end.rank = t->init_rank;
      push(&e);
    }
    if (ev->phase != A2A_POST || !ev->ok || !ev->u.init.newcomm)
      return;
    const a2a_comm *c = a2a_comm_lookup(ev->u.init.newcomm);
    if (c && !c->id_hash && c->local_id && ev->result == 0) {
      xr_rec r = {.type = XR_REC_COMMREG, .thread = ev->thread, .comm = c, .has_idrec = 2};
      r.u.reg.reg = (xr_commreg){.comm = c->local_id, .parent = c->parent ? comm_id(c->parent) : 0,
                                 .site = (uint64_t)(uintptr_t)ev->callsite, .nranks = c->nranks,
                                 .rank = c->rank, .device = c->device, .how = (int32_t)c->how,
                                 .color = c->how == A2A_INIT_ALL ? -1 : c->color,
                                 .split_index = c->split_index};
      push(&r);
      return;
    }
    if (!c || !c->id_hash) return;
    xr_rec r = {.type = XR_REC_COMMREG, .thread = ev->thread, .comm = c};
    r.u.reg.reg = (xr_commreg){.comm = c->id_hash, .parent = c->parent ? c->parent->id_hash : 0,
                               .site = (uint64_t)(uintptr_t)ev->callsite, .nranks = c->nranks,
                               .rank = c->rank, .device = c->device, .how = (int32_t)c->how,
                               .color = c->color, .split_index = c->split_index};
    if (ev->u.init.ids && (c->how == A2A_INIT_RANK || c->how == A2A_INIT_RANK_CONFIG ||
                           c->how == A2A_INIT_SCALABLE)) {
      memcpy(&r.u.reg.idrec, (const unsigned char *)ev->u.init.ids + XR_IDREC_OFF, XR_IDREC_BYTES);
      r.has_idrec = 1;
    }
    if (ev->in_progress) pend_add(ev->u.init.newcomm, &r);
    else push(&r);
    return;
  }
  case A2A_EV_COMM_END: {
    if (ev->phase != A2A_POST) {
      if (ev->u.end.how == A2A_END_FINALIZE || ev->u.end.how == A2A_END_DESTROY)
        graph_holds_comm(ev);
      return;
    }
    const a2a_comm *c = a2a_comm_lookup(ev->comm);
    uint64_t cid = comm_id(c);
    if (!cid) return;
    /* A non-blocking init that never saw an operation was never
     * registered: forget it (the background thread ignores the end of a
     * communicator it does not know). */
    xr_rec unused;
    (void)pend_take(ev->comm, &unused, 1);
    /* A wait the thread kept on it (an init or split in progress) ends
     * with it: the handle may be NCCL's again for another communicator. */
    if ((t = slot(ev->thread)) && t->polled_comm && t->polled_comm == ev->comm) clear_blocked(t);
    xr_rec r = {.type = XR_REC_COMMEND, .thread = ev->thread, .comm = c};
    r.u.end.comm = cid;
    r.u.end.how = (int32_t)ev->u.end.how;
    r.u.end.rank = c->rank;
    /* A process may end right after ncclCommDestroy/Finalize with _exit()
     * (forked ranks do), where no exit hook runs: verdicts about this
     * rank's operations that the coordinator determines only once its
     * peers' records arrive would be lost. Wait here (the call blocks
     * anyway) until the coordinator confirms they were delivered, bounded
     * by min(2 s, A2ACHECK_HANG_CONFIRM). Not for ncclCommAbort/Revoke
     * (error paths must not slow down), not for a failed end, not for
     * process-local (ncclCommInitAll) comms: their ranks' records all come
     * from this process, and a peer rank that never posts its counterpart
     * is ended by this same thread later, so waiting could only time out. */
    uint32_t slot = 0;
    if ((ev->u.end.how == A2A_END_DESTROY || ev->u.end.how == A2A_END_FINALIZE) &&
        ev->result == 0 && c->id_hash && g_port->end_wait_begin && g_port->end_wait)
      slot = g_port->end_wait_begin();
    r.u.end.wait = slot;
    int pushed = push(&r);
    if (slot) {
      double hc = a2a_opt ? a2a_opt->hang_confirm : 5.0;
      double bound = hc > 0 && hc < 2.0 ? hc : 2.0;
      g_port->end_wait(slot, pushed ? (uint64_t)(bound * 1e9) : 0);
    }
    return;
  }
  /* (A2A_EV_COLL and A2A_EV_P2P: on_coll, on_p2p.) */
  /* (A2A_EV_GROUP_START, A2A_EV_GROUP_END: on_group_start, on_group_end.) */
  case A2A_EV_STREAM_SYNC:
  case A2A_EV_EVENT_SYNC:
  case A2A_EV_DEVICE_SYNC:
  case A2A_EV_MEMCPY: {
    /* A copy's POST clears only what its PRE published (copy_blocked). */
    if (ev->kind == A2A_EV_MEMCPY && ev->phase == A2A_POST) {
      if (!(t = slot(ev->thread)) || !t->copy_blocked) return;
      t->copy_blocked = 0;
      atomic_fetch_sub_explicit(&g_copies_blocked, 1, memory_order_relaxed);
      clear_blocked(t);
      return;
    }
    /* cudaMemcpyAsync into pageable host memory returns only when the copy
     * is done (the driver stages it): a wait on its stream. Into pinned,
     * managed or device memory it does not block. */
    int async_blocks = 0;
    if (ev->kind == A2A_EV_MEMCPY && ev->u.copy.async) {
      int k = ev->u.copy.cpykind;
      if (k == A2A_CPY_D2H || k == A2A_CPY_DEFAULT) {
        a2a_alloc a;
        async_blocks = !a2a_alloc_find(ev->u.copy.dst, &a);
        if (k == A2A_CPY_DEFAULT && async_blocks) {
          /* DEFAULT: only a device source makes it a device-to-host copy. */
          a2a_alloc sa;
          async_blocks = a2a_alloc_find(ev->u.copy.src, &sa) && sa.mem != A2A_MEM_HOST_PINNED;
        }
      }
      if (!async_blocks) return;
    }
    if (!(t = slot(ev->thread))) return;
    if (ev->phase == A2A_POST) {
      clear_blocked(t);
      return;
    }
    uint32_t w = ev->kind == A2A_EV_STREAM_SYNC || async_blocks ? XR_WAIT_STREAM
                 : ev->kind == A2A_EV_EVENT_SYNC ? XR_WAIT_EVENT
                 : ev->kind == A2A_EV_DEVICE_SYNC ? XR_WAIT_DEVICE
                                                  : XR_WAIT_MEMCPY;
    /* An asynchronous copy that blocks (pageable host memory) is a hot call:
     * its event carries no time (a2a_event.h), so the clock is read here. */
    uint64_t since = ev->t_ns ? ev->t_ns : host_now_ns();
    set_blocked(t, w, xr_stream_id(ev->stream, ev->per_thread), (uint64_t)(uintptr_t)ev->callsite,
                since, 0, 0, 0);
    if (ev->kind == A2A_EV_MEMCPY && !t->copy_blocked) {
      t->copy_blocked = 1;
      atomic_fetch_add_explicit(&g_copies_blocked, 1, memory_order_relaxed);
    }
    return;
  }
  /* (A2A_EV_STREAM_QUERY: on_stream_query.) */
  case A2A_EV_EVENT_QUERY:
    if ((t = slot(ev->thread)))
      on_poll(t, ev, POLL_EVENT, (uint64_t)(uintptr_t)ev->u.event.event,
              ev->result == A2A_CUDA_ERROR_NOT_READY);
    return;
  case A2A_EV_ERROR_QUERY: /* (A2A_EV_COMM_ASYNC_ERROR: on_async_error) */
  case A2A_EV_SET_DEVICE:
    if ((t = slot(ev->thread)) && t->polling) on_poll(t, ev, POLL_NEUTRAL, 0, 0);
    return;
  case A2A_EV_PROCESS_EXIT:
    flush_markers(ev->thread);
    if (g_port->process_exit) g_port->process_exit();
    return;
  case A2A_EV_STREAM_DESTROY:
    destroy_fence(xr_stream_id(ev->stream, ev->per_thread));
    return;
  case A2A_EV_GRAPH_CAPTURE_BEGIN:
    if (ev->phase == A2A_PRE) {
      atomic_fetch_add(&g_capturing, 1);
      live_update();
      wait_no_query();
    } else if (ev->result != 0) {
      atomic_fetch_sub(&g_capturing, 1); /* no capture began */
      live_update();
    }
    return;
  case A2A_EV_GRAPH_CAPTURE_END: /* (both phases: the count of captures too) */
    graph_capture_end(ev);
    return;
  case A2A_EV_GRAPH_DESTROY:
    graph_destroy(ev);
    return;
  case A2A_EV_GRAPH_INSTANTIATE:
    graph_instantiate(ev);
    return;
  case A2A_EV_GRAPH_LAUNCH:
    graph_replay(ev);
    return;
  default:
    return;
  }
}

static void after_fork_child(void) {
  /* Only the forking thread survives: per-thread state of the others is
   * meaningless, the queue's consumer is gone, and the pool's events belong
   * to the parent's CUDA context. Start from scratch (the ring memory is
   * reused; nothing is freed because another thread may have held it). */
  memset(g_ts, 0, sizeof g_ts);
  atomic_store(&g_copies_blocked, 0); /* no thread of the child is in a copy */
  pthread_mutex_init(&g_pool_mu, NULL);
  pthread_mutex_init(&g_pend_mu, NULL);
  pthread_mutex_init(&g_xg_mu, NULL); /* (plans of the parent's graphs: leaked) */
  memset(g_xg, 0, sizeof g_xg);
  atomic_store(&g_xg_execs, 0);
  memset(g_pend_handle, 0, sizeof g_pend_handle);
  atomic_store(&g_npend, 0);
  memset(g_npool, 0, sizeof g_npool);
  if (g_ring) {
    for (size_t i = 0; i <= g_mask; i++) atomic_store(&g_ring[i].seq, i);
    atomic_store(&g_enq, 0);
    g_deq = 0;
  }
  atomic_store(&g_drops, 0);
  atomic_store(&g_thread_requested, 0);
  atomic_store(&g_ring_live, 0);
  atomic_store(&g_capturing, 0); /* other threads' captures are gone */
  atomic_store(&g_querying, 0);
  atomic_store(&g_marking, 0);
  atomic_store(&g_destroy_next, atomic_load(&g_destroy_gen)); /* a destroy in flight is gone */
  if (g_port->after_fork_child) g_port->after_fork_child();
}

#define XR_SYNC_KINDS                                                        \
  (A2A_KIND_BIT(A2A_EV_STREAM_SYNC) | A2A_KIND_BIT(A2A_EV_EVENT_SYNC) |         \
   A2A_KIND_BIT(A2A_EV_DEVICE_SYNC) | A2A_KIND_BIT(A2A_EV_MEMCPY))

const a2a_analyzer a2a_analyzer_xrank = {
    .name = "xrank",
    .owner = A2A_OWN_XRANK,
    .wants_activity = true, /* polling waits: a2a_thread_last_other_seq */
    .pre = A2A_KIND_BIT(A2A_EV_COMM_INIT) | XR_SYNC_KINDS | A2A_KIND_BIT(A2A_EV_STREAM_DESTROY) |
           A2A_KIND_BIT(A2A_EV_GRAPH_CAPTURE_BEGIN) | A2A_KIND_BIT(A2A_EV_GRAPH_CAPTURE_END) |
           A2A_KIND_BIT(A2A_EV_COMM_END),
    .post = A2A_KIND_BIT(A2A_EV_GET_UNIQUE_ID) | A2A_KIND_BIT(A2A_EV_COMM_INIT) |
            A2A_KIND_BIT(A2A_EV_COMM_END) | A2A_KIND_BIT(A2A_EV_COLL) | A2A_KIND_BIT(A2A_EV_P2P) |
            A2A_KIND_BIT(A2A_EV_GROUP_START) | A2A_KIND_BIT(A2A_EV_GROUP_END) | XR_SYNC_KINDS |
            A2A_KIND_BIT(A2A_EV_STREAM_QUERY) | A2A_KIND_BIT(A2A_EV_EVENT_QUERY) |
            A2A_KIND_BIT(A2A_EV_COMM_ASYNC_ERROR) | A2A_KIND_BIT(A2A_EV_ERROR_QUERY) |
            A2A_KIND_BIT(A2A_EV_SET_DEVICE) | A2A_KIND_BIT(A2A_EV_PROCESS_EXIT) |
            A2A_KIND_BIT(A2A_EV_GRAPH_CAPTURE_BEGIN) | A2A_KIND_BIT(A2A_EV_GRAPH_CAPTURE_END) |
            A2A_KIND_BIT(A2A_EV_GRAPH_INSTANTIATE) | A2A_KIND_BIT(A2A_EV_GRAPH_LAUNCH) |
            A2A_KIND_BIT(A2A_EV_GRAPH_DESTROY),
    /* A copy's POST only clears the blocked state its PRE published. */
    .post_gated = A2A_KIND_BIT(A2A_EV_MEMCPY),
    .post_gate = &g_copies_blocked,
    /* A queued copy's PRE publishes nothing (on_memcpy): only a copy the
     * host may wait in can be where a rank hangs. */
    .pre_skips_queued_copy = true,
    .init = init,
    .on_event = on_event,
    .by_kind = &xr_by_kind,
    .by_kind_post = &xr_by_kind_post,
    .nested = &xr_nested,
    .fini = NULL,
    .after_fork_child = after_fork_child,
};
