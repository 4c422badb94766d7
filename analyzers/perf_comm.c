/* perf_comm.c - per-communicator performance: what each communicator moved,
 * how fast (timed with CUDA events, never with a synchronization), and how
 * its operations sit between the host and compute. Checks:
 *   perf.small-messages  a steady stream of operations below A2ACHECK_SMALL_MSG
 *   perf.low-bandwidth   a (comm, op, size bucket) well below its best, or
 *                        below A2ACHECK_EXPECTED_BUSBW
 *   perf.no-overlap      the host blocks right after communication, or
 *                        communication and compute share one stream alone
 *   perf.stream-priority communication on a lower-priority stream than the
 *                        compute it competes with (1-100 MiB operations)
 *   perf.summary         one record per communicator at exit
 * docs/performance.md explains the measurements and the models.
 *
 * Measurement contract. A "logical operation" is a collective or p2p call
 * outside any group, or everything one communicator posted inside an
 * outermost ncclGroupStart/ncclGroupEnd (NCCL launches the group's work at
 * ncclGroupEnd). Around it, on the operation's own stream, we record a start
 * event before the real call and an end event after it, through the host
 * services (the REAL cudaEventRecord: no a2a event, no wait, no new
 * happens-before edge between the application's streams: an event record
 * only marks a point in one stream). Completion is polled lazily with
 * event_query (never event_synchronize): after the application's own
 * synchronizations, at communicator destruction and at exit, and at the
 * communicator's next operations when the ring is full (see
 * ring_harvest_locked). Operations whose events are still
 * pending at exit, that ran while a graph was being captured (recording or
 * querying then would join or break the capture), on non-blocking
 * communicators (their work may be enqueued after ncclGroupEnd returns), or
 * that found all PC_RING slots busy are counted but not timed; so are, by
 * choice, all but one in PC_TIME_EVERY after a communicator's first
 * PC_TIME_ALL (pc_timed: an unbiased sample of every size bucket).
 *
 * Concurrency: per-communicator state is guarded by the communicator's own
 * mutex (never a global lock on the hot path), except the operation counts,
 * which the communicator's owner thread writes without it (pc_cnt) - an
 * operation that is not timed takes no lock at all; the handle table is
 * lock-free for lookups; group state and the no-overlap tracker are
 * thread-local; the one process-wide word a hot call may write is the
 * gate count (g_pc_gate), when a thread takes or gives back the gate (not
 * per operation: see gate_take). Nothing here allocates after the
 * communicator was created.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2a_core.h"
#include "perf_internal.h"
#include "perf_math.h"

#define PC_MAX_COMMS 512
#define PC_TABLE 1024          /* power of two, > PC_MAX_COMMS */
#define PC_RING 32             /* timed operations in flight per communicator */
#define PC_GROUP_COMMS 8       /* communicators one group may span and be timed */
#define PC_MEMO_WAYS 4         /* a thread's recent handle lookups (lookup_miss) */
#define PC_LAUNCH_STREAMS 8    /* streams tracked between two operations */
#define PC_MAX_LOWBW_REPORTS 8 /* perf.low-bandwidth findings per communicator */
#define PC_WINS 8              /* compute windows per overlap sample */
#define PC_SAMPLE_EVERY 4      /* an overlap sample every this many operations */
#define PC_TIME_ALL 64         /* a communicator's first operations: all timed */
#define PC_TIME_EVERY 16       /* after those, one operation in this many is
                                  timed (chosen by pc_timed, not by a fixed
                                  stride) and an overlap sample is taken
                                  about every PC_SAMPLE_EVERY * PC_TIME_EVERY
                                  operations (two event records and a poll
                                  cost several times the rest of the
                                  analyzer per call) */
#define PC_WEYL 0x9E3779B97F4A7C15ull /* 2^64 / golden ratio (pc_timed) */
#define PC_JUDGE 8             /* (operation, size bucket) cells judged for
                                  perf.low-bandwidth per communicator */
#define PC_WIN 8               /* operations per window (see pc_judge) */
#define PC_WMEDS 32            /* window medians kept per judged cell */

/* ------------------------------------------------------------------ */
/* State. */

typedef struct pc_stat {
  uint64_t ops, bytes;         /* every operation */
  uint64_t measured, meas_bytes;
  double time_s;               /* sum over measured operations */
  double best_busbw, worst_busbw;
  double slow_s;               /* the slowest operation's time */
} pc_stat;

/* perf.low-bandwidth's view of one (operation, size bucket) cell of at
 * least A2ACHECK_SMALL_MSG bytes (smaller operations are latency-bound:
 * their "bandwidth" measures the per-operation cost and the peers' arrival
 * skew, and they belong to perf.small-messages). An operation's time runs
 * from its start event to its end event on this rank's stream, so it
 * includes the wait for the slowest peer to arrive. To judge bandwidth and
 * not that wait, the cell's measured operations (the first one left out:
 * warm-up) are cut into windows of PC_WIN consecutive operations, and each
 * window is reduced to the median of its per-operation bus bandwidths (one
 * late peer, one host stall, one lucky operation do not move a median).
 * The cell's typical bandwidth is the median of its window medians, its
 * best the highest window median: a steady program - however skewed its
 * ranks' arrivals, however latency-bound - has similar windows and is never
 * judged below its best; a communicator whose transfers got slower for a
 * good part of the run (or whose peers keep it waiting from some point on)
 * is. Window medians beyond PC_WMEDS are decimated (every other one kept,
 * the stride doubled), so the median covers the whole run in fixed memory. */
typedef struct pc_judge {
  int op, bucket;              /* bucket -1: slot free */
  uint64_t seen;               /* measured operations of the cell */
  float win[PC_WIN];           /* busbw of the current window's operations */
  int nwin;
  float wmed[PC_WMEDS];        /* window medians, decimated */
  int nwmed;
  uint32_t stride, skip;       /* keep one window median in stride */
  uint64_t windows;            /* complete windows (all of them) */
  double best;                 /* highest window median (GB/s) */
  double time_s;               /* the complete windows' operations: */
  uint64_t bytes;              /* time and bytes */
} pc_judge;

/* What every successful logical operation adds, by whoever posted it
 * (pc_comm.cnt): its (operation, size bucket) cell's operations and bytes,
 * the small-message totals, and why it was not timed. Each copy has one
 * writer at a time, which updates it with relaxed loads and stores (no
 * read-modify-write, no lock); readers (the reports at exit, the overlap
 * sample schedule) load it relaxed and add the copies up (fold_counts). */
typedef struct pc_cnt {
  _Atomic uint64_t ops, small_ops, small_bytes;
  _Atomic uint64_t sampled_out;  /* not timed by choice (pc_timed) */
  _Atomic uint64_t untimed;      /* not timed: no events, a capture, ... */
  _Atomic uint64_t cell[A2A_PERF_OP__COUNT][A2A_PERF_NBUCKETS][2]; /* ops, bytes */
} pc_cnt;

typedef struct pc_meas {
  void *ev0, *ev1;
  int state;                   /* 0 free, 1 start recorded, 2 both recorded, 3 cancelled */
  int op, bucket;
  uint64_t bytes;
} pc_meas;

typedef struct pc_comm {
  void *handle;
  const a2a_comm *rec;         /* registry record (outlives destroy), may be NULL */
  char name[48];
  int nranks;                  /* the init's, when there is no registry record */
  const int *nranks_p;         /* pc_nranks: the record's, else nranks */
  bool can_measure;            /* events created, blocking communicator */
  pthread_mutex_t mu;

  /* The operation counts (pc_cnt): cnt[0] is written by the
   * communicator's owner - the first thread whose operation on it was
   * counted (owner = its thread index + 1) - with or without mu, cnt[1] by
   * every other thread under mu. An operation that needs nothing else
   * under mu (sampled out, no overlap sample of its own, not serialized)
   * is counted by its owner without the lock: one writer per copy, so the
   * counts stay exact even when threads take turns on a communicator or
   * misuse it concurrently. */
  pc_cnt cnt[2];
  _Atomic uint32_t owner;
  /* The report's view, summed from cnt at exit (fold_counts): */
  uint64_t ops, bytes, small_ops, small_bytes, sampled_out, untimed;
  uint64_t measured, unmeasured; /* unmeasured: harvests and end records that failed */
  _Atomic uint64_t started;    /* logical operations seen at PRE */
  /* The ops count at which an overlap sample is due (smp.next_at while no
   * sample is in flight, else UINT64_MAX), for the lock-free PRE of an
   * operation that is not timed (start_op). Written under mu wherever
   * smp.state or smp.next_at change. */
  _Atomic uint64_t smp_due;
  double time_s, small_time_s;
  uint64_t small_measured;
  double min_small_s;          /* fastest small operation */
  a2a_perf_fit fit;
  uint64_t hist[A2A_PERF_NBUCKETS];
  pc_stat st[A2A_PERF_OP__COUNT][A2A_PERF_NBUCKETS];
  pc_judge judge[PC_JUDGE];
  uint64_t unjudged;           /* measured ops of large cells beyond PC_JUDGE */
  bool inherited;              /* a forked child's copy of its parent's */

  pc_meas ring[PC_RING];
  uint32_t head, tail;         /* FIFO: head = next to take, tail = oldest */

  /* perf.no-overlap */
  uint64_t blocked_after;      /* ops followed at once by a blocking call */
  uint64_t serialized;         /* ops preceded by compute on their stream only */
  const void *block_site;
  const char *block_api;
  a2a_stack block_stack;
  bool have_block_stack;
  const void *serial_site;

  /* Overlap sampling (see "Overlap" below): one operation in flight at a
   * time, with the compute windows its thread opened on other streams. */
  struct {
    void *ev0, *ev1;
    int state;                 /* 0 idle, 1 start recorded, 2 epoch open
                                  (windows may open), 3 closed: awaiting
                                  completion */
    void *stream;
    uint64_t next_at;          /* sample when ops reaches this */
    struct { void *ev0, *ev1; void *stream; int state; } win[PC_WINS];
    int nwin;
  } smp;
  double ov_comm_s, ov_overlap_s; /* sums over the samples */
  uint64_t ov_samples;
} pc_comm;

/* The communicator's size: the registry record's, which a non-blocking
 * split's child gets only once the application saw it ready
 * (a2a_comm_complete, before its first operation), read where it is (one
 * load more than a copy; a copy refreshed on a miss would cost the group
 * end's loop a test per share); the init's without a record. */
static inline int pc_nranks(const pc_comm *c) { return *c->nranks_p; }

static pc_comm *g_comms[PC_MAX_COMMS];
static atomic_int g_ncomms;
static _Atomic(pc_comm *) g_table[PC_TABLE];
static pthread_mutex_t g_create_mu = PTHREAD_MUTEX_INITIALIZER; /* creation only */
static atomic_uint g_gen = 1;      /* bumps on (re)init: invalidates TLS */
static atomic_int g_captures;      /* graph captures in progress */
static atomic_bool g_full_warned;  /* PC_MAX_COMMS exceeded */
static atomic_uint g_table_ver;    /* bumps on every insertion into g_table */

/* One communicator's share of an open group. Created at the share's first
 * successful operation (which gives it its stream and call site); the
 * operations after it only add to it. */
typedef struct pc_gacc {
  pc_comm *c;
  /* The answer c was taken for (group_op_post's prediction): when keyed,
   * c is lookup's answer for handle h at g_table_ver ver (not keyed: it
   * was single_c). Kept after the group ends, for the next group's share
   * at the same index. */
  const void *h;
  unsigned ver;
  bool keyed;
  void *stream;
  const void *site;
  int slot;
  /* From here on, zero in a new share (share_open). */
  bool mixed_streams, coll_mixed;
  bool unequal;                    /* some p2p size differs from p2p0 */
  int ncoll, nsend, nrecv, coll;
  uint64_t coll_bytes, send_bytes, recv_bytes;
  uint64_t p2p0;                   /* the share's first p2p size */
} pc_gacc;

/* The thread's state. What every NCCL call and launch reads comes first
 * (one cache line: gen to last_ver); the group's shares and the launch
 * table after it. */
typedef struct pc_tls {
  unsigned gen;
  int depth;                       /* ncclGroupStart nesting */
  int ng;                          /* shares of the open group (g) */
  bool g_overflow;
  bool gate_held;                  /* this thread's count in g_pc_gate */
  int nls;
  /* perf.no-overlap: armed by an operation, disarmed by the next GPU work */
  pc_comm *armed_c;
  pc_comm *sample_c;               /* the communicator whose overlap sample's
                                      epoch this thread has open */
  /* The stream a kernel launch can be on for pc_launch to have nothing
   * to do but disarm: ls[0] while nls > 0 and no epoch is open
   * (sample_c NULL), else PC_NO_KEY (launch_fast_update). */
  void *launch_fast;
  pc_comm *single_c;               /* lone operation between PRE and POST */
  int single_slot;
  unsigned last_ver;                /* g_table_ver every answer below was
                                      taken at (see lookup_cached) */
  /* The thread's last handle lookup. */
  const void *last_h;
  pc_comm *last_c;
  /* The open group's share that its last grouped p2p operation joined
   * (group_add_fast), NULL when none or on the legacy stream: set by
   * share_join, cleared wherever the shares are emptied (ng = 0); gfast_h
   * and gfast_ver: the handle its communicator was looked up by, and
   * g_table_ver that answer was taken at. */
  pc_gacc *gfast;
  const void *gfast_h;
  unsigned gfast_ver;
  /* The open group's shares at indices ng .. gpred-1 may be predicted
   * from the previous group's (group_op_post): gpred is that group's
   * share count, set at its end, and drops to 0 when the open group
   * creates a share any other way. */
  int gpred;
  void *armed_stream;
  void *armed_event;
  uint64_t ops;
  /* kernel launches since this thread's previous operation, by stream */
  uint32_t ls_lost;                /* launches on streams beyond the table */
  void *ls[PC_LAUNCH_STREAMS];     /* the streams launched on, in first-launch
                                      order (only which streams, not how many
                                      launches: op_serialized and
                                      check_priority need no more) */
  pc_gacc g[PC_GROUP_COMMS];
  /* The thread's few most recent distinct lookups (lookup_miss): a handle
   * and its answer (zeroed: empty); memo_next is the way the next table
   * lookup replaces. */
  unsigned memo_next;
  struct { const void *h; pc_comm *c; } memo[PC_MEMO_WAYS];
} pc_tls;

static _Thread_local pc_tls t_pc;

/* A key a2a_perf_skey never returns (it maps the handle 1 to NULL). */
#define PC_NO_KEY ((void *)1)

/* After every change of nls, ls[0] or sample_c: pc_launch's fast path
 * (a launch on launch_fast) is exactly the launch that note_launch would
 * find in ls[0] - adding nothing - and sample_launch would ignore (no
 * epoch open). */
static inline void launch_fast_update(pc_tls *t) {
  t->launch_fast = t->nls > 0 && !t->sample_c ? t->ls[0] : PC_NO_KEY;
}

static pc_tls *tls(void) {
  unsigned gen = atomic_load_explicit(&g_gen, memory_order_relaxed);
  if (__builtin_expect(t_pc.gen != gen, 0)) {
    memset(&t_pc, 0, sizeof t_pc);
    t_pc.gen = gen;
    t_pc.single_slot = -1;
    t_pc.launch_fast = PC_NO_KEY;
  }
  return &t_pc;
}

/* perf_comm's gate (a2a_analyzer.pre_gate / post_gate) for its handlers of
 * asynchronous copies, stream waits (PRE) and event records (POST): the
 * threads that hold it (gate_held). Those handlers act only on the calling
 * thread's armed window (armed_c) and open overlap epoch (sample_c), and
 * do nothing while both are NULL; a thread takes the gate before it sets
 * either (gate_take: in after_op and sample_finish_locked, sequenced
 * before its later calls), and gives it back only in those handlers once
 * both are NULL again (gate_drop). So a 0 read means that no thread - the
 * caller included - has anything for them to do. Released lazily so that
 * a loop of operations with launches between them (which disarm) writes
 * the counter once, not twice per operation. A thread that exits holding
 * it keeps the handlers called (slower, never wrong). */
static _Atomic unsigned g_pc_gate;

static inline void gate_take(pc_tls *t) {
  if (__builtin_expect(!t->gate_held, 0)) {
    t->gate_held = true;
    atomic_fetch_add_explicit(&g_pc_gate, 1, memory_order_relaxed);
  }
}

static inline void gate_drop(pc_tls *t) {
  if (t->gate_held && !t->armed_c && !t->sample_c) {
    t->gate_held = false;
    atomic_fetch_sub_explicit(&g_pc_gate, 1, memory_order_relaxed);
  }
}

uint64_t a2a_perf_ops_thread(void) { return tls()->ops; }

/* ------------------------------------------------------------------ */
/* Handle table. */

static size_t hslot(const void *h) {
  uintptr_t x = (uintptr_t)h;
  x ^= x >> 17; x *= 0xed5ad4bbU; x ^= x >> 11;
  return (size_t)x & (PC_TABLE - 1);
}

static pc_comm *lookup(const void *h) {
  if (!h) return NULL;
  size_t i = hslot(h);
  for (size_t k = 0; k < PC_TABLE; k++, i = (i + 1) & (PC_TABLE - 1)) {
    pc_comm *c = atomic_load_explicit(&g_table[i], memory_order_acquire);
    if (!c) return NULL;
    if (c->handle == h) return c->inherited ? NULL : c;
  }
  return NULL;
}

__attribute__((noinline)) static pc_comm *lookup_miss(pc_tls *t, const void *h, unsigned ver);

/* lookup() through the thread's last answer (inline: one compare while a
 * thread drives one communicator), then its few most recent distinct
 * answers (lookup_miss: a thread that drives several in turn - nccl-tests
 * -g N, one group per device; process groups of several parallel
 * dimensions). Why they are exact: the table only changes by insertions (a
 * reused handle's slot is overwritten by the newest communicator; a
 * destroy changes nothing in it), each of which bumps g_table_ver, and
 * every answer the thread holds was taken at last_ver, so each is the
 * table's while the version is unchanged; another version discards them
 * all. A communicator's state is freed only by re-initialization, which
 * resets every thread's record (g_gen), as fork does. */
static inline __attribute__((always_inline)) pc_comm *lookup_cached(pc_tls *t, const void *h) {
  unsigned ver = atomic_load_explicit(&g_table_ver, memory_order_acquire);
  if (__builtin_expect(h && t->last_h == h && t->last_ver == ver, 1)) return t->last_c;
  return lookup_miss(t, h, ver);
}

/* lookup_cached's miss: the thread's memo, then the table. The ways are
 * filled round-robin, so a thread alternating among up to PC_MEMO_WAYS
 * communicators finds each in a way from its second round on (the last
 * answer is always in a way too: found there or filled last). An empty way
 * (NULL, NULL) is lookup()'s own answer for a NULL handle, so no way needs
 * a test of the handle. Thread-local: no lock, no allocation. */
__attribute__((noinline)) static pc_comm *lookup_miss(pc_tls *t, const void *h, unsigned ver) {
  if (t->last_ver == ver) {
    for (unsigned i = 0; i < PC_MEMO_WAYS; i++)
      if (t->memo[i].h == h) {
        t->last_h = h;
        return t->last_c = t->memo[i].c;
      }
  } else {
    memset(t->memo, 0, sizeof t->memo);
    t->memo_next = 0;
    t->last_ver = ver;
  }
  pc_comm *c = lookup(h);
  t->memo[t->memo_next].h = h;
  t->memo[t->memo_next].c = c;
  t->memo_next = (t->memo_next + 1) % PC_MEMO_WAYS;
  t->last_h = h;
  t->last_c = c;
  return c;
}

static bool host_events_usable(void) {
  return a2a_opt->perf_measure != 0 && a2a_hostsvc && a2a_hostsvc->event_create &&
         a2a_hostsvc->event_record && a2a_hostsvc->event_query &&
         a2a_hostsvc->event_elapsed_ms;
}

static void destroy_events(pc_comm *c) {
  if (!a2a_hostsvc || !a2a_hostsvc->event_destroy) return;
  void *all[2 * PC_RING + 2 + 2 * PC_WINS];
  size_t n = 0;
  for (int k = 0; k < PC_RING; k++) { all[n++] = c->ring[k].ev0; all[n++] = c->ring[k].ev1; }
  all[n++] = c->smp.ev0;
  all[n++] = c->smp.ev1;
  for (int k = 0; k < PC_WINS; k++) { all[n++] = c->smp.win[k].ev0; all[n++] = c->smp.win[k].ev1; }
  for (size_t k = 0; k < n; k++)
    if (all[k]) a2a_hostsvc->event_destroy(all[k]);
}

/* A timing event of the communicator's device (its operations' streams
 * are that device's): ncclCommInitAll makes every device's communicator
 * with one device current. */
static bool timing_event(void **ev, int device) {
  if (device >= 0 && a2a_hostsvc->event_create_on)
    return a2a_hostsvc->event_create_on(ev, device, 1) == 0;
  return a2a_hostsvc->event_create(ev, 1) == 0;
}

static void comm_create(const a2a_event *ev) {
  void *h = ev->u.init.newcomm;
  if (!h) return;
  pc_comm *c = calloc(1, sizeof *c);
  if (!c) return;
  c->handle = h;
  c->rec = a2a_comm_lookup(h);
  c->nranks = ev->u.init.nranks;
  c->nranks_p = c->rec ? &c->rec->nranks : &c->nranks;
  snprintf(c->name, sizeof c->name, "%s", c->rec ? c->rec->name : "comm");
  pthread_mutex_init(&c->mu, NULL);
  for (int i = 0; i < PC_JUDGE; i++) c->judge[i].bucket = -1;
  int blocking = c->rec ? c->rec->blocking : ev->u.init.blocking;
  if (blocking && host_events_usable()) {
    int dev = c->rec ? c->rec->device : ev->u.init.device;
    c->can_measure = true;
    for (int i = 0; i < PC_RING && c->can_measure; i++)
      if (!timing_event(&c->ring[i].ev0, dev) || !timing_event(&c->ring[i].ev1, dev))
        c->can_measure = false;
    if (c->can_measure && (!timing_event(&c->smp.ev0, dev) || !timing_event(&c->smp.ev1, dev)))
      c->can_measure = false;
    for (int i = 0; i < PC_WINS && c->can_measure; i++)
      if (!timing_event(&c->smp.win[i].ev0, dev) || !timing_event(&c->smp.win[i].ev1, dev))
        c->can_measure = false;
  }
  pthread_mutex_lock(&g_create_mu);
  int n = atomic_load(&g_ncomms);
  if (n >= PC_MAX_COMMS) {
    pthread_mutex_unlock(&g_create_mu);
    if (!atomic_exchange(&g_full_warned, true))
      a2a_analyzer_disable("perf_comm", "more than 512 communicators");
    destroy_events(c);
    free(c);
    return;
  }
  g_comms[n] = c;
  atomic_store(&g_ncomms, n + 1);
  /* Insert (a reused handle's slot is overwritten: the newest wins). */
  size_t i = hslot(h);
  for (size_t k = 0; k < PC_TABLE; k++, i = (i + 1) & (PC_TABLE - 1)) {
    pc_comm *o = atomic_load(&g_table[i]);
    if (!o || o->handle == h) { atomic_store_explicit(&g_table[i], c, memory_order_release); break; }
  }
  atomic_fetch_add_explicit(&g_table_ver, 1, memory_order_release);
  pthread_mutex_unlock(&g_create_mu);
}

/* ------------------------------------------------------------------ */
/* Accounting. */

/* What start_op decided at an operation's PRE: a ring slot (>= 0, timed),
 * or one of these. The _FAST ones were decided without c->mu, which also
 * means that the PRE started no overlap sample: if nothing else needs the
 * lock, the POST counts the operation without it (count_fast). */
enum {
  PC_UNTIMED = -1,       /* not timed: no events, ring full, a capture */
  PC_SAMPLED = -2,       /* sampled out (pc_timed), under c->mu */
  PC_SAMPLED_FAST = -3,  /* sampled out, no sample due, decided lock-free */
  PC_UNTIMED_FAST = -4,  /* cannot time (no events, a capture), lock-free */
};

/* One writer per field (pc_cnt): a relaxed load and store, never a locked
 * read-modify-write. */
#define PC_ADD(f, v) \
  atomic_store_explicit(&(f), atomic_load_explicit(&(f), memory_order_relaxed) + (v), \
                        memory_order_relaxed)
#define PC_LOAD(f) atomic_load_explicit(&(f), memory_order_relaxed)

/* Count one successful operation into n (its single writer: see pc_cnt). */
static inline void count_op(pc_cnt *n, int op, uint64_t bytes, int slot) {
  int b = a2a_perf_bucket(bytes);
  PC_ADD(n->ops, 1);
  PC_ADD(n->cell[op][b][0], 1);
  PC_ADD(n->cell[op][b][1], bytes);
  if (bytes < a2a_perf_small_msg()) {
    PC_ADD(n->small_ops, 1);
    PC_ADD(n->small_bytes, bytes);
  }
  if (slot == PC_SAMPLED || slot == PC_SAMPLED_FAST) PC_ADD(n->sampled_out, 1);
  else if (slot == PC_UNTIMED || slot == PC_UNTIMED_FAST) PC_ADD(n->untimed, 1);
}

/* The operations counted so far (the overlap sample schedule's clock). */
static inline uint64_t pc_ops(const pc_comm *c) {
  return PC_LOAD(c->cnt[0].ops) + PC_LOAD(c->cnt[1].ops);
}

/* Every communicator's operations (perf_stream's reports): the sum of
 * their counts, so that no operation writes a process-wide counter (a
 * cache line every posting thread would share). A forked child's
 * inherited communicators are its parent's. */
uint64_t a2a_perf_ops_total(void) {
  uint64_t n = 0;
  int k = atomic_load(&g_ncomms);
  for (int i = 0; i < k; i++)
    if (!g_comms[i]->inherited) n += pc_ops(g_comms[i]);
  return n;
}

/* The copy of the counts the posting thread writes: cnt[0] when it owns
 * the communicator (claimed by the first thread that counts on it), else
 * NULL: cnt[1], under c->mu. */
static inline pc_cnt *own_counts(pc_comm *c, uint32_t thread) {
  uint32_t me = thread + 1, o = atomic_load_explicit(&c->owner, memory_order_relaxed);
  if (o == 0 && atomic_compare_exchange_strong(&c->owner, &o, me)) o = me;
  return o == me ? &c->cnt[0] : NULL;
}

/* The count of an operation under c->mu, by its owner or anyone else. */
static void count_locked(pc_comm *c, uint32_t thread, int op, uint64_t bytes, int slot) {
  pc_cnt *n = own_counts(c, thread);
  count_op(n ? n : &c->cnt[1], op, bytes, slot);
}

/* The POST of an operation whose PRE decided lock-free that it is not
 * timed (PC_*_FAST: no slot, no overlap sample of its own) and that is not
 * serialized (count_serialized_locked): counted without c->mu by the
 * owner. False when the caller must take the lock. */
static inline bool count_fast(pc_comm *c, uint32_t thread, int op, uint64_t bytes, int slot,
                              bool serialized) {
  if ((slot != PC_SAMPLED_FAST && slot != PC_UNTIMED_FAST) || serialized) return false;
  pc_cnt *n = own_counts(c, thread);
  if (!n) return false;
  count_op(n, op, bytes, slot);
  return true;
}

/* The report's totals from both copies of the counts (c->mu held, at
 * exit; an owner still posting adds to cnt[0] meanwhile, which the next
 * fold would see). */
static void fold_counts(pc_comm *c) {
  c->ops = c->bytes = c->small_ops = c->small_bytes = c->sampled_out = c->untimed = 0;
  memset(c->hist, 0, sizeof c->hist);
  for (int op = 0; op < A2A_PERF_OP__COUNT; op++)
    for (int b = 0; b < A2A_PERF_NBUCKETS; b++) {
      c->st[op][b].ops = PC_LOAD(c->cnt[0].cell[op][b][0]) + PC_LOAD(c->cnt[1].cell[op][b][0]);
      c->st[op][b].bytes = PC_LOAD(c->cnt[0].cell[op][b][1]) + PC_LOAD(c->cnt[1].cell[op][b][1]);
      c->hist[b] += c->st[op][b].ops;
      c->bytes += c->st[op][b].bytes;
    }
  for (int k = 0; k < 2; k++) {
    c->ops += PC_LOAD(c->cnt[k].ops);
    c->small_ops += PC_LOAD(c->cnt[k].small_ops);
    c->small_bytes += PC_LOAD(c->cnt[k].small_bytes);
    c->sampled_out += PC_LOAD(c->cnt[k].sampled_out);
    c->untimed += PC_LOAD(c->cnt[k].untimed);
  }
}

static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}

/* Median of n >= 1 values (sorted in place); the mean of the two middle
 * ones for an even n. */
static double median_f(float *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_float);
  return n % 2 ? (double)v[n / 2] : 0.5 * ((double)v[n / 2 - 1] + (double)v[n / 2]);
}

static pc_judge *judge_for(pc_comm *c, int op, int bucket) {
  for (int i = 0; i < PC_JUDGE; i++) {
    pc_judge *j = &c->judge[i];
    if (j->bucket == bucket && j->op == op) return j;
    if (j->bucket < 0) {
      memset(j, 0, sizeof *j);
      j->op = op;
      j->bucket = bucket;
      j->stride = 1;
      return j;
    }
  }
  return NULL;
}

/* One measured operation of a large cell (c->mu held); see pc_judge. */
static void judge_add(pc_comm *c, const pc_meas *m, double s, double busbw) {
  pc_judge *j = judge_for(c, m->op, m->bucket);
  if (!j) { c->unjudged++; return; }
  if (j->seen++ == 0) return; /* warm-up: connection setup, first arrival */
  j->win[j->nwin++] = (float)busbw;
  j->time_s += s;
  j->bytes += m->bytes;
  if (j->nwin < PC_WIN) return;
  float tmp[PC_WIN];
  memcpy(tmp, j->win, sizeof tmp);
  double med = median_f(tmp, PC_WIN);
  j->nwin = 0;
  if (j->windows++ == 0 || med > j->best) j->best = med;
  if (j->skip > 0) { j->skip--; return; }
  if (j->nwmed == PC_WMEDS) {
    for (int k = 0; k < PC_WMEDS / 2; k++) j->wmed[k] = j->wmed[2 * k];
    j->nwmed = PC_WMEDS / 2;
    j->stride *= 2;
    /* The last kept median (old index PC_WMEDS-2) is one old stride
     * before the newest (PC_WMEDS-1): the new one is due now. */
  }
  j->wmed[j->nwmed++] = (float)med;
  j->skip = j->stride - 1;
}

static void account_time(pc_comm *c, const pc_meas *m, double s) {
  pc_stat *st = &c->st[m->op][m->bucket];
  double busbw = a2a_perf_algbw_gbps(m->bytes, s) * a2a_perf_busbw_factor(m->op, pc_nranks(c));
  if (st->measured == 0 || busbw > st->best_busbw) st->best_busbw = busbw;
  if (st->measured == 0 || busbw < st->worst_busbw) st->worst_busbw = busbw;
  if (st->measured == 0 || s > st->slow_s) st->slow_s = s;
  if (a2a_perf_bucket_lo(m->bucket) >= a2a_perf_small_msg() && m->bytes > 0)
    judge_add(c, m, s, busbw);
  st->measured++;
  st->meas_bytes += m->bytes;
  st->time_s += s;
  c->measured++;
  c->time_s += s;
  if (m->bytes < a2a_perf_small_msg()) {
    if (c->small_measured == 0 || s < c->min_small_s) c->min_small_s = s;
    c->small_measured++;
    c->small_time_s += s;
  }
  /* The communicator's first operation also sets up its connections (NCCL
   * connects peers lazily): it would dominate the fit's intercept. */
  if (c->measured > 1) a2a_perf_fit_add(&c->fit, (double)m->bytes, s);
}

/* ------------------------------------------------------------------ */
/* Overlap (HTA: time communication overlaps compute / communication time),
 * measured on samples. An operation of a communicator every
 * PC_SAMPLE_EVERY, later about every PC_SAMPLE_EVERY * PC_TIME_EVERY
 * (sample_reset; one at a time) gets its own start/end events; from its
 * POST until the issuing thread's next operation or synchronization (the
 * "epoch"), the first kernel that thread launches on another stream opens a
 * compute window there: an event recorded on that stream before the
 * launch; the window closes (an event recorded on the same stream) when the
 * epoch ends or before a cudaStreamWaitEvent on that stream (so time spent
 * waiting for the communication does not count as compute). Once all
 * events completed, the windows are placed relative to the operation's
 * start with event_elapsed_ms, clipped to the operation, and their union is
 * the overlap. Compute issued before the operation is not seen (an
 * underestimate), and a window counts its stream busy from its first kernel
 * to its close (idle gaps inside would overestimate). All with the REAL
 * runtime's event records: no wait is added. */

/* Offset of event y from event x in ms, either order. Whether an elapsed
 * time with the end before the start comes out negative, fails, or wraps
 * is not something to rely on: ask both ways and keep the smaller
 * magnitude (the two agree when the answer is signed). */
static int ev_offset(void *x, void *y, double *ms) {
  float f1 = 0, f2 = 0;
  bool ok1 = a2a_hostsvc->event_elapsed_ms(&f1, x, y) == 0;
  bool ok2 = a2a_hostsvc->event_elapsed_ms(&f2, y, x) == 0;
  if (ok1 && (!ok2 || fabs((double)f1) <= fabs((double)f2))) { *ms = f1; return 0; }
  if (ok2) { *ms = -(double)f2; return 0; }
  return -1;
}

/* After every change of smp.state or smp.next_at (c->mu held). */
static void smp_publish(pc_comm *c) {
  atomic_store_explicit(&c->smp_due, c->smp.state == 0 ? c->smp.next_at : UINT64_MAX,
                        memory_order_relaxed);
}

/* The next overlap sample: PC_SAMPLE_EVERY operations on while every
 * operation is timed, then PC_SAMPLE_EVERY * PC_TIME_EVERY on average,
 * the gap drawn from [half, 1.5x) of that by the operation count (the same
 * Weyl sequence as pc_timed): a fixed gap would keep sampling the same
 * operation of a program's step (a step of two AlltoAlls and a fixed gap
 * of 64 sample only the first one, whose overlap can differ). */
static void sample_reset(pc_comm *c) {
  c->smp.state = 0;
  c->smp.nwin = 0;
  uint64_t ops = pc_ops(c), gap = PC_SAMPLE_EVERY;
  if (ops >= PC_TIME_ALL) {
    const uint64_t mean = PC_SAMPLE_EVERY * PC_TIME_EVERY; /* a power of two */
    gap = mean / 2 + ((ops * PC_WEYL) >> (64 - __builtin_ctzll(mean)));
  }
  c->smp.next_at = ops + gap;
  smp_publish(c);
}

/* Called with c->mu held at the start of a logical operation on stream. */
static void sample_start_locked(pc_comm *c, void *stream) {
  if (c->smp.state != 0 || pc_ops(c) < c->smp.next_at || !c->can_measure) return;
  if (a2a_hostsvc->event_record(c->smp.ev0, stream) != 0) return;
  c->smp.state = 1;
  c->smp.stream = stream;
  c->smp.nwin = 0;
  smp_publish(c);
}

/* At the operation's POST (c->mu held): the epoch opens on this thread. */
static void sample_finish_locked(pc_tls *t, pc_comm *c, void *stream, bool ok) {
  if (c->smp.state != 1 || c->smp.stream != stream) return;
  if (ok && a2a_hostsvc->event_record(c->smp.ev1, stream) == 0) {
    c->smp.state = 2;
    smp_publish(c);
    gate_take(t);
    t->sample_c = c;
    launch_fast_update(t);
  } else {
    sample_reset(c);
  }
}

/* A kernel launch on stream k by a thread with an open epoch. */
static void sample_launch(pc_tls *t, void *k) {
  pc_comm *c = t->sample_c;
  if (!c) return;
  pthread_mutex_lock(&c->mu);
  if (c->smp.state == 2 && k != c->smp.stream) {
    bool open = false;
    for (int i = 0; i < c->smp.nwin; i++)
      if (c->smp.win[i].stream == k && c->smp.win[i].state == 1) open = true;
    if (!open && c->smp.nwin < PC_WINS &&
        a2a_hostsvc->event_record(c->smp.win[c->smp.nwin].ev0, k) == 0) {
      c->smp.win[c->smp.nwin].stream = k;
      c->smp.win[c->smp.nwin].state = 1;
      c->smp.nwin++;
    }
  }
  pthread_mutex_unlock(&c->mu);
}

/* Close the open windows (all, or only stream k's); c->mu held. A window
 * whose close cannot be recorded is dropped. */
static void close_windows_locked(pc_comm *c, const void *k, bool only_k) {
  for (int i = 0; i < c->smp.nwin; i++) {
    if (c->smp.win[i].state != 1 || (only_k && c->smp.win[i].stream != k)) continue;
    c->smp.win[i].state =
        a2a_hostsvc->event_record(c->smp.win[i].ev1, c->smp.win[i].stream) == 0 ? 2 : 3;
  }
}

static void sample_wait_event(pc_tls *t, void *k) {
  pc_comm *c = t->sample_c;
  if (!c) return;
  pthread_mutex_lock(&c->mu);
  if (c->smp.state == 2) close_windows_locked(c, k, true);
  pthread_mutex_unlock(&c->mu);
}

/* The epoch ends: the thread's next operation or synchronization. (Inline
 * test, out-of-line work: nearly every call has no epoch open.) */
__attribute__((noinline)) static void sample_epoch_close(pc_tls *t) {
  pc_comm *c = t->sample_c;
  t->sample_c = NULL;
  launch_fast_update(t);
  pthread_mutex_lock(&c->mu);
  if (c->smp.state == 2) {
    close_windows_locked(c, NULL, false);
    c->smp.state = 3;
    smp_publish(c);
  }
  pthread_mutex_unlock(&c->mu);
}

static inline void sample_epoch_end(pc_tls *t) {
  if (t->sample_c) sample_epoch_close(t);
}

static int cmp_dbl2(const void *a, const void *b) {
  double x = ((const double *)a)[0], y = ((const double *)b)[0];
  return x < y ? -1 : x > y;
}

/* Harvest a closed sample when all its events completed (c->mu held). */
static void sample_poll_locked(pc_comm *c) {
  if (c->smp.state != 3) return;
  int q = a2a_hostsvc->event_query(c->smp.ev1);
  for (int i = 0; i < c->smp.nwin && q == 0; i++)
    if (c->smp.win[i].state == 2) q = a2a_hostsvc->event_query(c->smp.win[i].ev1);
  if (q == 1) return;
  double T = 0, iv[PC_WINS][2];
  int n = 0;
  if (q == 0 && ev_offset(c->smp.ev0, c->smp.ev1, &T) == 0 && T > 0) {
    for (int i = 0; i < c->smp.nwin; i++) {
      if (c->smp.win[i].state != 2) continue;
      double a, b;
      if (ev_offset(c->smp.ev0, c->smp.win[i].ev0, &a) != 0 ||
          ev_offset(c->smp.ev0, c->smp.win[i].ev1, &b) != 0)
        continue;
      if (a < 0) a = 0;
      if (b > T) b = T;
      if (b > a) { iv[n][0] = a; iv[n][1] = b; n++; }
    }
    qsort(iv, (size_t)n, sizeof iv[0], cmp_dbl2);
    double o = 0, cs = -1, ce = -1;
    for (int i = 0; i < n; i++) {
      if (iv[i][0] > ce) {
        if (ce > cs) o += ce - cs;
        cs = iv[i][0];
        ce = iv[i][1];
      } else if (iv[i][1] > ce) {
        ce = iv[i][1];
      }
    }
    if (ce > cs) o += ce - cs;
    c->ov_comm_s += T / 1e3;
    c->ov_overlap_s += o / 1e3;
    c->ov_samples++;
  }
  sample_reset(c);
}

/* Harvest the ring's completed timings in FIFO order; stops at the first
 * pending one. Never blocks. (c->mu held, no graph capture.)
 *
 * Where the ring stands after a harvest at time T does not depend on
 * whether earlier harvests ran: a completed event stays completed and its
 * elapsed time does not change until its slot is recorded again, which
 * needs the slot harvested first; so a harvest at T takes exactly the
 * slots from tail up to the first one still pending (or being posted) at
 * T, and accounts them in the same FIFO order, whether some of them were
 * taken before or not. Only the reports at exit read what the harvest
 * accounts (after a last one). start_locked therefore harvests only when
 * the ring is full - when it decides whether the operation gets a slot -
 * and the application's synchronizations, communicator destruction and
 * exit (poll_locked) harvest everything: an operation's start no longer
 * queries the previous, usually still running, operation's end event.
 * (One thing does depend on when a query runs: a query that fails - the
 * host services refuse while the application has an unconsumed CUDA error
 * - drops that timing as unmeasured. Polled less often, a timing is lost
 * that way only if such an error is pending at a later poll instead of at
 * an earlier one: which timings a program with unconsumed CUDA errors
 * loses was, and stays, a matter of when its errors happen to be pending.) */
static void ring_harvest_locked(pc_comm *c) {
  while (c->tail != c->head) {
    pc_meas *m = &c->ring[c->tail % PC_RING];
    if (m->state == 1) break; /* still being posted by its thread */
    if (m->state == 2) {
      int q = a2a_hostsvc->event_query(m->ev1);
      if (q == 1) break;
      float ms = 0;
      if (q == 0 && a2a_hostsvc->event_elapsed_ms(&ms, m->ev0, m->ev1) == 0 && ms >= 0)
        account_time(c, m, (double)ms / 1e3);
      else
        c->unmeasured++;
    }
    m->state = 0;
    c->tail++;
  }
}

/* Harvest the overlap sample and the ring. Not during a graph capture (a
 * query could break it). */
static void poll_locked(pc_comm *c) {
  if (atomic_load_explicit(&g_captures, memory_order_relaxed) > 0) return;
  sample_poll_locked(c);
  ring_harvest_locked(c);
}

/* Whether the communicator's operation number k (0-based, counted at PRE)
 * is timed. Every one of the first PC_TIME_ALL, so that a short run - and
 * the start of every run, where the warm-up and lazy connections show - is
 * judged on all its operations; then one in PC_TIME_EVERY, chosen by the
 * Weyl sequence j * (2^64 / golden ratio) mod 2^64 < 2^64 / PC_TIME_EVERY
 * (j = k - PC_TIME_ALL): exactly one in PC_TIME_EVERY in the long run, gaps
 * of 8, 13 or 21 operations (j = 0 is timed), and - unlike every
 * PC_TIME_EVERY-th operation - equally often for every position in a
 * program's step, whatever the step's length (a step of two operations of
 * different sizes would otherwise only ever time one of them, and its
 * other (operation, size bucket) cell would be judged on the first
 * PC_TIME_ALL operations alone). Sound for the checks because the timed
 * operations are an unbiased sample of each cell:
 *  - perf.low-bandwidth judges windows of PC_WIN timed operations of a
 *    cell by their median (pc_judge): a window spans ~PC_WIN *
 *    PC_TIME_EVERY operations of the cell instead of PC_WIN, and a slowdown
 *    that lasts for more than half the run is still more than half of the
 *    windows; the check needs 2 complete windows (A2ACHECK_PERF_MIN_OPS)
 *    and the warm-up operation, which a cell gets within its share of the
 *    first PC_TIME_ALL operations or after about (2 * PC_WIN + 1) *
 *    PC_TIME_EVERY more of its operations;
 *  - perf.small-messages scales the mean time of the timed small and large
 *    operations by their counts (every operation is counted), and fits
 *    alpha by least squares over the timed ones: fewer points, same
 *    expectation. */
static inline bool pc_timed(uint64_t k) {
  return k < PC_TIME_ALL || (k - PC_TIME_ALL) * PC_WEYL < (UINT64_MAX / PC_TIME_EVERY) + 1;
}

/* Take a slot and record the start event on stream; -1 if not timed, -2
 * if sampled out (pc_timed). The statistics that need counts
 * (small-message share, time per operation) extrapolate from the timed
 * operations; the judged windows and the latency/bandwidth fit only see
 * fewer points. k: the operation's number (c->started before it). */
static int start_locked(pc_comm *c, void *stream, uint64_t k) {
  /* The overlap sample is harvested here as before (sample_reset draws
   * the next one from the count at its harvest); the ring only when it is
   * full (see ring_harvest_locked). A sample due here is idle (state 0),
   * which sample_poll_locked would leave alone. */
  bool capture = atomic_load_explicit(&g_captures, memory_order_relaxed) > 0;
  if (!pc_timed(k)) {
    if (c->smp.state == 0 && pc_ops(c) >= c->smp.next_at) sample_start_locked(c, stream);
    return PC_SAMPLED;
  }
  if (!capture) sample_poll_locked(c);
  sample_start_locked(c, stream);
  if (c->head - c->tail >= PC_RING && !capture) ring_harvest_locked(c);
  if (c->head - c->tail >= PC_RING) return PC_UNTIMED;
  int slot = (int)(c->head % PC_RING);
  pc_meas *m = &c->ring[slot];
  if (a2a_hostsvc->event_record(m->ev0, stream) != 0) return PC_UNTIMED;
  m->state = 1;
  c->head++;
  return slot;
}

/* start_op's timed (or sample-due) case. */
__attribute__((noinline)) static int start_slow(pc_comm *c, void *stream, uint64_t k) {
  pthread_mutex_lock(&c->mu);
  int slot = start_locked(c, stream, k);
  pthread_mutex_unlock(&c->mu);
  return slot;
}

/* The PRE of a logical operation on stream: start_locked under c->mu.
 * An operation that is sampled out while no overlap sample is due (15 in
 * 16 after the first PC_TIME_ALL), or that cannot be timed at all, has
 * nothing to record or poll, and returns without the lock (PC_*_FAST):
 * the counts and smp_due say so (exact for a communicator used by one
 * thread at a time; under concurrent misuse a sample may start a few
 * operations late). */
static inline __attribute__((always_inline)) int start_op(pc_comm *c, void *stream) {
  if (!c->can_measure || atomic_load_explicit(&g_captures, memory_order_relaxed) > 0)
    return PC_UNTIMED_FAST;
  uint64_t k = atomic_fetch_add_explicit(&c->started, 1, memory_order_relaxed);
  if (!pc_timed(k) && pc_ops(c) < atomic_load_explicit(&c->smp_due, memory_order_relaxed))
    return PC_SAMPLED_FAST;
  return start_slow(c, stream, k);
}

/* Record the end event for a started slot, or cancel it (ok false).
 * (Operations without a slot are counted as sampled out or untimed by
 * count_op.) */
static void finish_locked(pc_comm *c, int slot, void *stream, bool ok, int op, uint64_t bytes) {
  if (slot < 0) return;
  pc_meas *m = &c->ring[slot];
  if (ok && atomic_load_explicit(&g_captures, memory_order_relaxed) == 0 &&
      a2a_hostsvc->event_record(m->ev1, stream) == 0) {
    m->op = op;
    m->bytes = bytes;
    m->bucket = a2a_perf_bucket(bytes);
    m->state = 2;
  } else {
    if (ok) c->unmeasured++;
    m->state = 3;
  }
}

/* ------------------------------------------------------------------ */
/* perf.stream-priority and the stream-sharing half of perf.no-overlap:
 * look at the kernels this thread launched since its previous operation. */

static void note_launch(pc_tls *t, void *s) {
  for (int i = 0; i < t->nls; i++)
    if (t->ls[i] == s) return;
  if (t->nls < PC_LAUNCH_STREAMS) t->ls[t->nls++] = s;
  else t->ls_lost++;
  launch_fast_update(t);
}

/* Whether check_priority has anything to judge: mid-size communication
 * (1-100 MiB) on a communicator of 2 ranks or more, and compute launched
 * since the previous operation (inline: most operations stop here). */
static inline bool priority_applies(const pc_tls *t, const pc_comm *c, uint64_t bytes) {
  return t->nls > 0 && pc_nranks(c) >= 2 && bytes >= (1ULL << 20) && bytes <= 100ULL * (1ULL << 20);
}

__attribute__((noinline)) static void check_priority(pc_tls *t, pc_comm *c, void *stream,
                                                     uint64_t bytes, const void *site) {
  if (!a2a_check_on(A2A_CK_PERF_STREAM_PRIORITY)) return;
  int pc = a2a_perf_stream_priority(stream);
  /* Only communication at the default (lowest) priority is judged: CUDA
   * clamps a requested priority into the device's range, which a2acheck
   * does not query, so of two raised priorities (comm -5, compute -10 on a
   * device whose range ends at -5) the effective order is unknown - and a
   * raised communication stream shows the user already chose. */
  if (pc < 0) return;
  for (int i = 0; i < t->nls; i++) {
    if (t->ls[i] == stream) continue;
    int pk = a2a_perf_stream_priority(t->ls[i]);
    if (pk >= pc) continue;
    char msg[700], det[384], sz[32];
    snprintf(msg, sizeof msg,
             "%s: a %s operation runs on stream %p with priority %d while compute launched "
             "since the previous operation ran on stream %p with the higher priority %d "
             "(lower number = higher priority). Mid-size messages (1-100 MiB) then wait for "
             "compute blocks to drain instead of overlapping. Fix: create the communication "
             "stream with the highest priority (cudaDeviceGetStreamPriorityRange; "
             "torch.cuda.Stream(priority=-1); PyTorch's own NCCL streams: "
             "TORCH_NCCL_HIGH_PRIORITY=1).",
             c->name, a2a_perf_fmt_bytes(bytes, sz, sizeof sz), stream, pc, t->ls[i], pk);
    a2a_json j;
    a2a_json_init(&j, det, sizeof det);
    a2a_json_obj_begin(&j, NULL);
    a2a_json_ptr(&j, "comm_stream", stream);
    a2a_json_int(&j, "comm_priority", pc);
    a2a_json_ptr(&j, "compute_stream", t->ls[i]);
    a2a_json_int(&j, "compute_priority", pk);
    a2a_json_uint(&j, "bytes", bytes);
    a2a_json_obj_end(&j);
    a2a_finding f = {.check = A2A_CK_PERF_STREAM_PRIORITY, .severity = A2A_SEV_INFO, .site = site,
                     .comm = c->rec, .message = msg, .details_json = det, .capture_stack = true};
    a2a_report(&f);
    return;
  }
}

/* Whether the operation on stream was serialized: compute launched by this
 * thread since its previous operation, all of it on the operation's own
 * stream (the stream-sharing half of perf.no-overlap). Read at the POST,
 * before after_op resets the launches. */
static bool op_serialized(const pc_tls *t, void *stream) {
  bool same = false, other = t->ls_lost > 0;
  for (int i = 0; i < t->nls; i++) {
    if (t->ls[i] == stream) same = true;
    else other = true;
  }
  return same && !other;
}

/* The serialization count, with c->mu held: in the critical section of the
 * operation's POST (one lock pair per operation, not two). */
static void count_serialized_locked(pc_comm *c, bool serialized, const void *site) {
  if (!serialized) return;
  c->serialized++;
  if (!c->serial_site) c->serial_site = site;
}

/* Called once per logical operation (after its POST, c->mu released):
 * priority looks at the launches since the previous one, then they are
 * reset. */
static void after_op(pc_tls *t, pc_comm *c, void *stream, uint64_t bytes, const void *site) {
  if (priority_applies(t, c, bytes)) check_priority(t, c, stream, bytes, site);
  t->nls = 0;
  t->ls_lost = 0;
  launch_fast_update(t);
  gate_take(t);
  t->armed_c = c;
  t->armed_stream = stream;
  t->armed_event = NULL;
  t->ops++;
}

static void note_blocked(pc_tls *t, const a2a_event *ev) {
  pc_comm *c = t->armed_c;
  t->armed_c = NULL;
  if (!c) return;
  bool first;
  pthread_mutex_lock(&c->mu);
  c->blocked_after++;
  first = !c->block_site;
  if (first) {
    c->block_site = ev->callsite;
    c->block_api = ev->api;
  }
  pthread_mutex_unlock(&c->mu);
  /* One stack per communicator, taken outside its lock. */
  if (first && a2a_hostsvc->capture_stack) {
    a2a_stack st = {0};
    a2a_hostsvc->capture_stack(&st);
    pthread_mutex_lock(&c->mu);
    c->block_stack = st;
    c->have_block_stack = true;
    pthread_mutex_unlock(&c->mu);
  }
}

/* ------------------------------------------------------------------ */
/* Events. */

static uint64_t coll_bytes(const a2a_event *ev, int nranks) {
  return a2a_perf_op_bytes(ev->u.coll.coll, ev->u.coll.count, a2a_dtype_size(ev->u.coll.dtype),
                           nranks);
}

/* A p2p call of b bytes counted into share g (share_join, group_add_fast). */
static inline void share_count_p2p(pc_gacc *g, const a2a_event *ev, uint64_t b) {
  if (ev->u.p2p.is_send) {
    g->nsend++;
    g->send_bytes += b;
  } else {
    g->nrecv++;
    g->recv_bytes += b;
  }
}

/* A new share g (the open group's at index ng, before ng counts it):
 * empty, on stream s, its key (c, h, ver, keyed) left to the caller. */
static inline void share_open(pc_gacc *g, const a2a_event *ev, void *s) {
  g->stream = s;
  g->site = ev->callsite;
  g->slot = PC_UNTIMED;
  memset(&g->mixed_streams, 0, sizeof *g - offsetof(pc_gacc, mixed_streams));
}

static inline void share_join(pc_tls *t, pc_gacc *g, const a2a_event *ev, unsigned ver);

/* A successful grouped operation on c joins c's share of the group
 * (keyed: c is lookup_cached's answer, taken at last_ver). */
static inline void group_add(pc_tls *t, pc_comm *c, const a2a_event *ev, bool keyed) {
  void *s = a2a_perf_skey(ev->stream, ev->per_thread);
  pc_gacc *g = NULL;
  for (int i = 0; i < t->ng; i++)
    if (t->g[i].c == c) { g = &t->g[i]; break; }
  if (!g) {
    if (t->ng >= PC_GROUP_COMMS) { t->g_overflow = true; return; }
    g = &t->g[t->ng++];
    share_open(g, ev, s);
    g->c = c;
    g->h = ev->comm;
    g->ver = t->last_ver;
    g->keyed = keyed;
    t->gpred = 0;
  } else if (g->stream != s) {
    g->mixed_streams = true;
  }
  share_join(t, g, ev, t->last_ver);
}

/* What ev adds to its share g (whose answer for ev->comm was taken at
 * g_table_ver ver): group_add's and group_op_post's common part. */
static inline void share_join(pc_tls *t, pc_gacc *g, const a2a_event *ev, unsigned ver) {
  if (ev->kind == A2A_EV_COLL) {
    if (g->ncoll == 0) g->coll = ev->u.coll.coll;
    else if (g->coll != (int)ev->u.coll.coll) g->coll_mixed = true;
    g->ncoll++;
    g->coll_bytes += coll_bytes(ev, pc_nranks(g->c));
  } else {
    uint64_t b = (uint64_t)ev->u.p2p.count * a2a_dtype_size(ev->u.p2p.dtype);
    if (g->nsend + g->nrecv == 0) g->p2p0 = b;
    else if (b != g->p2p0) g->unequal = true;
    share_count_p2p(g, ev, b);
    /* (Not a share on the legacy stream: see group_add_fast.) */
    t->gfast = g->stream ? g : NULL;
    t->gfast_h = ev->comm;
    t->gfast_ver = ver;
  }
}

/* group_op_post's common case inline, for the 2nd and later p2p calls of
 * a share (an all-to-all posts 2 x nranks of them on one communicator and
 * stream): false when it does not apply, and nothing is changed then.
 * Exact by this invariant: while gfast is set, group_op_post's answer for
 * gfast_h is gfast->c as long as g_table_ver is gfast_ver. share_join
 * establishes it: group_op_post's answer for a handle h is single_c when
 * that is h's, else lookup_cached's, which is lookup's answer for h, taken
 * at the version lookup_cached leaves in last_ver (or its prediction, the
 * same answer at the current version); single_c does not change while the
 * group is open (only a lone call, at depth 0, sets or clears it), and lookup's answer does not change while the version does
 * not (the table changes only by insertions, each of which bumps it; a
 * re-initialization resets the thread's record, g_gen). The shares of the
 * open group have distinct communicators (group_add creates one only for a
 * communicator none has, group_op_post's prediction likewise) and stay
 * in place until ng is reset (which clears gfast), so that communicator's
 * share is gfast; gfast's stream key is not NULL (share_join sets gfast
 * only then), and a handle equal to a key other than NULL is neither NULL
 * nor cudaStreamLegacy (1, which no key is), so it is its own key
 * (a2a_perf_skey): a call whose handle is gfast's stream key leaves
 * mixed_streams as it is; and gfast holds a p2p call already (it is set
 * only after one joined), so nsend + nrecv is not 0 and the size is
 * compared with p2p0. The rest is
 * share_join's p2p branch (share_count_p2p). The shares end as
 * group_op_post would leave them; of the thread's hints (gfast_ver, the
 * lookup memo) it may have left others, each as exact as these.
 * p2p_known: ev is a send or receive (pc_op_post_p2p's), the kind not
 * tested again. */
static inline bool group_add_fast(pc_tls *t, const a2a_event *ev, bool p2p_known) {
  pc_gacc *g = t->gfast;
  unsigned ver = atomic_load_explicit(&g_table_ver, memory_order_acquire);
  if (!g || (!p2p_known && ev->kind != A2A_EV_P2P) || ev->comm != t->gfast_h ||
      t->gfast_ver != ver || ev->stream != g->stream)
    return false;
  uint64_t b = (uint64_t)ev->u.p2p.count * a2a_dtype_size(ev->u.p2p.dtype);
  if (b != g->p2p0) g->unequal = true;
  share_count_p2p(g, ev, b);
  return true;
}

/* The logical operation a group's share on one communicator amounts to. A
 * share of p2p calls only is an all-to-all when it has one send and one
 * receive per rank, all of one size (every size equal to the first: the
 * same as sends all of one size, receives all of one size, and the two
 * sizes equal). */
static void group_classify(const pc_gacc *g, int nranks, int *op, uint64_t *bytes) {
  uint64_t p2p = g->send_bytes > g->recv_bytes ? g->send_bytes : g->recv_bytes;
  if (g->ncoll > 0 && g->nsend + g->nrecv == 0) {
    *op = g->coll_mixed ? A2A_PERF_OP_MIXED : g->coll;
    *bytes = g->coll_bytes;
  } else if (g->ncoll == 0) {
    bool a2a = nranks >= 1 && g->nsend == nranks && g->nrecv == nranks && !g->unequal;
    *op = a2a ? A2A_PERF_OP_P2P_ALLTOALL : A2A_PERF_OP_SENDRECV;
    *bytes = a2a ? g->send_bytes : p2p;
  } else {
    *op = A2A_PERF_OP_MIXED;
    *bytes = g->coll_bytes + p2p;
  }
}

/* The PRE of a lone collective or p2p call: it ends the overlap window
 * and epoch, and starts the operation (its timing decision). */
__attribute__((noinline)) static void on_lone_pre(pc_tls *t, const a2a_event *ev) {
  pc_comm *c = lookup_cached(t, ev->comm);
  if (!c) return;
  t->armed_c = NULL;
  sample_epoch_end(t);
  t->single_slot = start_op(c, a2a_perf_skey(ev->stream, ev->per_thread));
  t->single_c = c;
}

/* The POST of a lone one: finished and counted. */
static inline __attribute__((always_inline)) void on_lone_post(pc_tls *t, const a2a_event *ev,
                                                               pc_comm *c) {
  void *s = a2a_perf_skey(ev->stream, ev->per_thread);
  int slot = t->single_c == c ? t->single_slot : PC_UNTIMED;
  t->single_c = NULL;
  t->single_slot = PC_UNTIMED;
  int op;
  uint64_t bytes;
  if (ev->kind == A2A_EV_COLL) {
    op = ev->u.coll.coll;
    bytes = coll_bytes(ev, pc_nranks(c));
  } else {
    op = A2A_PERF_OP_SENDRECV;
    bytes = (uint64_t)ev->u.p2p.count * a2a_dtype_size(ev->u.p2p.dtype);
  }
  /* NCCL drops zero-byte collectives; a zero-byte p2p moves nothing. */
  bool ok = ev->ok && bytes > 0; /* (ncclInProgress: a non-blocking communicator took it) */
  bool serialized = ok && op_serialized(t, s);
  if (!ok || !count_fast(c, ev->thread, op, bytes, slot, serialized)) {
    pthread_mutex_lock(&c->mu);
    finish_locked(c, slot, s, ok, op, bytes);
    sample_finish_locked(t, c, s, ok);
    if (ok) count_locked(c, ev->thread, op, bytes, slot);
    count_serialized_locked(c, serialized, ev->callsite);
    pthread_mutex_unlock(&c->mu);
  }
  if (ok) after_op(t, c, s, bytes, ev->callsite);
  a2a_nested_end_busy(ev->thread, true); /* (pc_group_end_nested) */
}

/* A grouped operation's PRE with an armed window or an open epoch: both
 * end, for a tracked communicator. */
__attribute__((noinline)) static void group_op_pre(pc_tls *t, const a2a_event *ev) {
  if (!lookup_cached(t, ev->comm)) return;
  t->armed_c = NULL;
  sample_epoch_end(t);
  a2a_nested_end_busy(ev->thread, false); /* (pc_group_end_nested) */
}

/* A successful grouped operation's POST: it joins its communicator's
 * share (single_c, the lone operation's communicator, is never set inside
 * a group: the same test as a lone POST's, for the same answer).
 *
 * Its first call on a communicator is predicted to be the previous
 * group's share at the same index (nccl-tests -g N posts its shares in
 * the same order every iteration, MoE's groups one share each): the share
 * there, keyed to ev->comm at the current g_table_ver, is created again
 * on its communicator without the lookup and the scan of the shares.
 * Exact by these invariants: (1) a keyed share's c is lookup's answer for
 * h at ver, and lookup's answer does not change while the version does
 * not (see lookup_cached); and single_c is not another answer for h now:
 * when the share was created single_c was not h's (else c would be
 * single_c, not keyed), and a single_c set since was lookup's answer at
 * a version no older than ver, so, the version still being ver, it is c
 * if it is h's. So c is the answer the slow path below would take. (2)
 * While ng < gpred, the open group's shares 0 .. ng-1 were all predicted,
 * so they are the previous group's 0 .. ng-1 on the same communicators,
 * and the shares of one group have distinct communicators (group_add
 * creates one only for a communicator none has): none of them is
 * g[ng].c's, so the slow path's scan would find none and create the share
 * at index ng, as this does. The shares at index ng and above are not
 * written while the group is open before they are created, nor between
 * groups (only a grouped POST creates one), and every other creation sets
 * gpred to 0; a reset of the thread's record (g_gen) clears gpred. */
__attribute__((noinline)) static void group_op_lookup(pc_tls *t, const a2a_event *ev) {
  bool single = t->single_c && t->single_c->handle == ev->comm;
  pc_comm *c = single ? t->single_c : lookup_cached(t, ev->comm);
  if (c) group_add(t, c, ev, !single);
}

__attribute__((noinline)) static void group_op_post(pc_tls *t, const a2a_event *ev) {
  int n = t->ng;
  if (n < t->gpred) {
    pc_gacc *g = &t->g[n];
    unsigned ver = atomic_load_explicit(&g_table_ver, memory_order_acquire);
    if (g->keyed && g->h == ev->comm && g->ver == ver) {
      t->ng = n + 1;
      share_open(g, ev, a2a_perf_skey(ev->stream, ev->per_thread));
      share_join(t, g, ev, ver);
      return;
    }
  }
  group_op_lookup(t, ev);
}

/* A lone operation's POST: the communicator its PRE looked up. */
__attribute__((noinline)) static void lone_op_post(pc_tls *t, const a2a_event *ev) {
  pc_comm *c =
      t->single_c && t->single_c->handle == ev->comm ? t->single_c : lookup_cached(t, ev->comm);
  if (c) on_lone_post(t, ev, c);
}

/* A collective or p2p call (both phases). Inside a group the PRE only
 * ends the armed window and the overlap epoch - nothing to end after the
 * group's first operation ended them, so no lookup then - and the POST of
 * a successful one joins its communicator's share (the group's end times
 * and counts the shares); a lone one is started at its PRE and finished
 * at its POST. (Every path ends in a tail call: no frame here.) The
 * dispatch table calls the phase's own handler (pc_by_kind_post: no test
 * of the phase); pc_by_op is the reference, on_event's. */
static void pc_op_pre(const a2a_event *ev) {
  pc_tls *t = tls();
  if (t->depth > 0) {
    /* (Both pointers in one test: an or of the two, not two branches.) */
    if (((uintptr_t)t->armed_c | (uintptr_t)t->sample_c) != 0) group_op_pre(t, ev);
    return;
  }
  on_lone_pre(t, ev);
}
/* p2p_known: the caller is the dispatch table's handler of a send's or
 * receive's POST (pc_op_post_p2p), called for that kind only, and the
 * kind is not tested again. */
__attribute__((always_inline)) static inline void pc_op_post_body(const a2a_event *ev,
                                                                  bool p2p_known) {
  pc_tls *t = tls();
  if (t->depth > 0) {
    if (ev->ok && !group_add_fast(t, ev, p2p_known)) group_op_post(t, ev);
    return;
  }
  lone_op_post(t, ev);
}
static void pc_op_post(const a2a_event *ev) { pc_op_post_body(ev, false); }
static void pc_op_post_p2p(const a2a_event *ev) { pc_op_post_body(ev, true); }
static void pc_by_op(const a2a_event *ev) {
  if (ev->phase == A2A_PRE) pc_op_pre(ev);
  else pc_op_post(ev);
}

/* The outermost ncclGroupEnd's POST: finish and count each share. */
__attribute__((noinline)) static void group_end_post(pc_tls *t, const a2a_event *ev) {
  bool simulate = ev->u.group.simulate != 0;
  t->gpred = t->ng; /* (the loop leaves ng as it is) */
  for (int i = 0; i < t->ng; i++) {
    pc_gacc *g = &t->g[i];
    int op;
    uint64_t bytes;
    group_classify(g, pc_nranks(g->c), &op, &bytes);
    bool ok = ev->ok && !simulate && bytes > 0;
    bool serialized = ok && op_serialized(t, g->stream);
    if (!ok || !count_fast(g->c, ev->thread, op, bytes, g->slot, serialized)) {
      pthread_mutex_lock(&g->c->mu);
      finish_locked(g->c, g->slot, g->stream, ok, op, bytes);
      sample_finish_locked(t, g->c, g->stream, ok);
      if (ok) count_locked(g->c, ev->thread, op, bytes, g->slot);
      count_serialized_locked(g->c, serialized, g->site);
      pthread_mutex_unlock(&g->c->mu);
    }
    if (ok) after_op(t, g->c, g->stream, bytes, g->site);
  }
  t->ng = 0;
  t->gfast = NULL;
  t->g_overflow = false;
  a2a_nested_end_busy(ev->thread, true); /* (pc_group_end_nested) */
}

/* A share's timing decision (its own function: the loop's frame stays
 * small). */
__attribute__((noinline)) static void share_start(pc_gacc *g) {
  g->slot = start_op(g->c, g->stream);
}

/* The PRE: the outermost one starts the shares' operations (none when the
 * group overflowed PC_GROUP_COMMS, nor a share on several streams). */
/* What every group end's PRE does, nested or not: the armed window and
 * the overlap epoch end (pc_group_end_nested is only this). */
static inline void group_end_windows(pc_tls *t) {
  t->armed_c = NULL;
  sample_epoch_end(t);
}

__attribute__((noinline)) static void group_end_pre(pc_tls *t, const a2a_event *ev) {
  group_end_windows(t);
  if (t->depth != 1 || ev->u.group.simulate != 0 || t->g_overflow) return;
  for (int i = 0; i < t->ng; i++)
    if (!t->g[i].mixed_streams) share_start(&t->g[i]);
}

/* ncclGroupEnd: the outermost one's PRE starts the shares' operations
 * (their timing decisions), its POST finishes and counts them. Per phase
 * for the dispatch table, as pc_by_op. */
static void pc_group_end_pre(const a2a_event *ev) { group_end_pre(tls(), ev); }
static void pc_group_end_post(const a2a_event *ev) {
  pc_tls *t = tls();
  if (t->depth > 1) {
    t->depth--;
    return;
  }
  t->depth = 0;
  group_end_post(t, ev);
}
/* Nested group calls (a2a_analyzer.nested; a2a_group_nested). This
 * analyzer's depth counts as the shim's does (a successful start at its
 * POST, pc_by_group_start; an end at its POST while positive, whatever its
 * result, pc_group_end_post), from zero at init and in a forked child
 * (g_gen) as the shim's, and tls() always has the thread's record: so the
 * table's handlers, given every call, would hold the shim's depth d
 * (u.group.depth) at each. There a nested start
 * (d >= 1) only counts (its PRE returns; its POST's `depth++ == 0` is
 * false) and a nested end (d >= 2) clears the armed window and ends the
 * overlap epoch at its PRE (group_end_pre: then depth != 1 returns) and
 * only counts at its POST. Left out of the counting, this analyzer holds
 * min(d, 1) instead of d: the same answer to every test made of it
 * outside the group handlers (depth > 0: the operations' handlers), and
 * at a group call that is not nested (a start at d 0, an end at d <= 1)
 * the same value. So the nested rows call only pc_group_end_nested. */
static void pc_group_end_nested(const a2a_event *ev) {
  (void)ev;
  group_end_windows(tls());
}
/* The thread's mark (a2a_nested_end_busy) is clear only while a nested
 * end's handler above is a no-op: while armed_c and sample_c are NULL.
 * Only after_op and sample_finish_locked set either, both called only from
 * on_lone_post and group_end_post, which set the mark before they return
 * (nothing of the thread runs between); group_op_pre clears it after
 * making both NULL. A reset of the thread's record (g_gen) only makes both
 * NULL. So a thread whose mark is clear may keep its nested ends
 * (a2a_group_keep) without this analyzer. */
static const a2a_nested pc_nested = {.end = {[A2A_PRE] = pc_group_end_nested}};

static void pc_by_group_end(const a2a_event *ev) {
  if (ev->phase == A2A_PRE) pc_group_end_pre(ev);
  else pc_group_end_post(ev);
}

/* ncclGroupStart, at its POST only (one call, not two: nothing reaches
 * this thread's record between the PRE and the POST of one call): a
 * successful outermost one opens a group with no shares, a failed one
 * opens none. */
static void pc_by_group_start(const a2a_event *ev) {
  if (ev->phase != A2A_POST || ev->result != 0) return;
  pc_tls *t = tls();
  if (t->depth++ == 0) {
    t->ng = 0;
    t->gfast = NULL;
    t->g_overflow = false;
  }
}

static void poll_comm(pc_comm *c) {
  if (!c) return;
  pthread_mutex_lock(&c->mu);
  poll_locked(c);
  pthread_mutex_unlock(&c->mu);
}

static void poll_all(void) {
  int n = atomic_load(&g_ncomms);
  for (int i = 0; i < n; i++)
    if (!g_comms[i]->inherited) poll_comm(g_comms[i]);
}

/* A kernel launch (the hot path, PRE only): it ends the overlap window an
 * operation armed, and counts for the launches-per-stream and overlap
 * samples. */
__attribute__((noinline)) static void pc_launch_slow(pc_tls *t, const a2a_event *ev) {
  void *k = a2a_perf_skey(ev->stream, ev->per_thread);
  note_launch(t, k);
  if (t->sample_c) sample_launch(t, k);
  /* Quiet (a2a_analyzer.launch_quiet) only where the same launch again
   * takes the fast path below or finds k in ls[0] with no epoch open:
   * launch_fast is k. Otherwise it may count (ls_lost) or sample. */
  if (t->launch_fast != k) a2a_launch_unquiet(ev->thread);
}

static void pc_launch(const a2a_event *ev) {
  pc_tls *t = tls();
  t->armed_c = NULL;
  /* The common case inline, one test: the launch table's first stream
   * again (note_launch would find it and add nothing) and no epoch open
   * (see launch_fast_update). */
  if (__builtin_expect(a2a_perf_skey_is(ev->stream, t->launch_fast), 1)) return;
  pc_launch_slow(t, ev);
}

/* The gated kinds (g_pc_gate): each does nothing while the thread has no
 * armed window and no open epoch, and gives the gate back once it has
 * neither. A copy (PRE) ends the armed window; a blocking one is the host
 * blocking right after the operation, and ends the epoch. */
static void pc_by_memcpy(const a2a_event *ev) {
  if (ev->phase != A2A_PRE) return;
  pc_tls *t = tls();
  if (!ev->u.copy.async) {
    if (t->armed_c) note_blocked(t, ev);
    sample_epoch_end(t);
  }
  t->armed_c = NULL;
  gate_drop(t);
}

/* An event recorded (POST) on the armed operation's stream: a later
 * cudaEventSynchronize of it is the host blocking on the operation. */
static void pc_by_event_record(const a2a_event *ev) {
  if (ev->phase != A2A_POST) return;
  pc_tls *t = tls();
  if (t->armed_c && a2a_perf_skey(ev->stream, ev->per_thread) == t->armed_stream)
    t->armed_event = ev->u.event.event;
  gate_drop(t);
}

/* A stream wait (PRE) closes that stream's compute window of the open
 * epoch. */
static void pc_by_stream_wait(const a2a_event *ev) {
  if (ev->phase != A2A_PRE) return;
  pc_tls *t = tls();
  if (t->sample_c) sample_wait_event(t, a2a_perf_skey(ev->stream, ev->per_thread));
  gate_drop(t);
}

__attribute__((noinline)) static void pc_other(const a2a_event *ev);

/* The reference entry (a2a_analyzer.on_event): the hot kinds to their
 * per-kind handlers (the dispatch table calls those directly), the rest
 * to pc_other. */
static void perf_comm_on_event(const a2a_event *ev) {
  switch (ev->kind) {
  case A2A_EV_LAUNCH:
    pc_launch(ev);
    return;
  case A2A_EV_COLL:
  case A2A_EV_P2P:
    pc_by_op(ev);
    return;
  case A2A_EV_GROUP_START:
    pc_by_group_start(ev);
    return;
  case A2A_EV_GROUP_END:
    pc_by_group_end(ev);
    return;
  case A2A_EV_MEMCPY:
    pc_by_memcpy(ev);
    return;
  case A2A_EV_EVENT_RECORD:
    pc_by_event_record(ev);
    return;
  case A2A_EV_STREAM_WAIT_EVENT:
    pc_by_stream_wait(ev);
    return;
  default:
    pc_other(ev);
  }
}

static void pc_other(const a2a_event *ev) {
  pc_tls *t = tls();
  switch (ev->kind) {
  case A2A_EV_COMM_INIT:
    if (ev->phase == A2A_POST && ev->ok) comm_create(ev);
    break;
  case A2A_EV_COMM_END:
    if (ev->phase == A2A_PRE) poll_comm(lookup(ev->comm));
    break;
  case A2A_EV_GRAPH_LAUNCH:
    if (ev->phase == A2A_PRE) t->armed_c = NULL;
    break;
  case A2A_EV_HOST_FUNC:
  case A2A_EV_MEMSET:
    if (ev->phase == A2A_PRE) t->armed_c = NULL;
    break;
  case A2A_EV_STREAM_SYNC:
    if (ev->phase == A2A_PRE) sample_epoch_end(t);
    if (ev->phase == A2A_PRE && t->armed_c &&
        a2a_perf_skey(ev->stream, ev->per_thread) == t->armed_stream)
      note_blocked(t, ev);
    if (ev->phase == A2A_POST) poll_all();
    break;
  case A2A_EV_EVENT_SYNC:
    if (ev->phase == A2A_PRE) sample_epoch_end(t);
    if (ev->phase == A2A_PRE && t->armed_c && t->armed_event &&
        ev->u.event.event == t->armed_event)
      note_blocked(t, ev);
    if (ev->phase == A2A_POST) poll_all();
    break;
  case A2A_EV_DEVICE_SYNC:
    if (ev->phase == A2A_PRE) sample_epoch_end(t);
    if (ev->phase == A2A_PRE && t->armed_c) note_blocked(t, ev);
    if (ev->phase == A2A_POST) poll_all();
    break;
  case A2A_EV_GRAPH_CAPTURE_BEGIN:
    if (ev->phase == A2A_POST && ev->result == 0) atomic_fetch_add(&g_captures, 1);
    break;
  case A2A_EV_GRAPH_CAPTURE_END:
    if (ev->phase == A2A_POST && atomic_load(&g_captures) > 0) atomic_fetch_sub(&g_captures, 1);
    break;
  case A2A_EV_PROCESS_EXIT:
    poll_all();
    break;
  default:
    break;
  }
}

/* ------------------------------------------------------------------ */
/* Reports at exit. */

static double stat_busbw(const pc_stat *st, int op, int nranks) {
  return a2a_perf_algbw_gbps(st->meas_bytes, st->time_s) * a2a_perf_busbw_factor(op, nranks);
}

/* The per-operation fixed cost for the small-message model, and where it
 * came from ("fitted", "configured", "assumed"). */
static double small_alpha(const pc_comm *c, const char **src) {
  double a;
  if (a2a_opt->perf_latency_us > 0) { *src = "configured"; return a2a_opt->perf_latency_us * 1e-6; }
  if (a2a_perf_fit_alpha(&c->fit, &a) == 0) {
    /* The intercept cannot exceed the fastest small operation. */
    if (c->small_measured && a > c->min_small_s) a = c->min_small_s;
    *src = "fitted";
    return a;
  }
  *src = "assumed";
  return 10e-6;
}

static void report_small(const pc_comm *c) {
  if (pc_nranks(c) < 2 || c->small_ops < a2a_perf_small_min_ops() ||
      c->small_ops * 2 < c->ops || !a2a_check_on(A2A_CK_PERF_SMALL_MESSAGES))
    return;
  const char *src;
  double alpha = small_alpha(c, &src);
  uint64_t batch = a2a_perf_small_msg();
  uint64_t batches = batch ? (c->small_bytes + batch - 1) / batch : 1;
  if (batches < 1) batches = 1;
  double gain = a2a_perf_small_gain(c->small_ops, c->small_bytes, batch, alpha);
  char b1[32], b2[32], b3[32], timing[320] = "";
  /* Not every operation is timed (PC_RING in flight): extrapolate each
   * class (small, large) from its measured mean to all its operations. */
  double est_small = 0, est_total = 0;
  if (c->small_measured)
    est_small = c->small_time_s / (double)c->small_measured * (double)c->small_ops;
  uint64_t large_meas = c->measured - c->small_measured, large_ops = c->ops - c->small_ops;
  double est_large = large_meas ? (c->time_s - c->small_time_s) / (double)large_meas * (double)large_ops : 0;
  est_total = est_small + est_large;
  bool timed = c->small_measured > 0 && (large_ops == 0 || large_meas > 0);
  double frac_time = timed && est_total > 0 ? est_small / est_total : 0;
  double gain_frac = timed && est_total > 0 ? gain / est_total : 0;
  if (timed)
    snprintf(timing, sizeof timing,
             " They took an estimated %.3f ms of %.3f ms of communication time (%.0f%%; %llu "
             "of them timed).",
             est_small * 1e3, est_total * 1e3, 100.0 * frac_time,
             (unsigned long long)c->small_measured);
  /* Material when the estimated saving is at least A2ACHECK_PERF_MIN_GAIN
   * of the communication time; without timing the share is unknown and
   * nothing says it matters: info. */
  bool material = timed && gain_frac >= a2a_perf_min_gain();
  char msg[1400], det[768], gain_pct[160] = "", verdict[200];
  if (timed)
    snprintf(gain_pct, sizeof gain_pct, ", %.1f%% of the communication time", 100.0 * gain_frac);
  if (material)
    snprintf(verdict, sizeof verdict, "at least A2ACHECK_PERF_MIN_GAIN=%.0f%%: worth it",
             100.0 * a2a_perf_min_gain());
  else if (timed)
    snprintf(verdict, sizeof verdict,
             "below A2ACHECK_PERF_MIN_GAIN=%.0f%%: the per-operation cost does not matter here",
             100.0 * a2a_perf_min_gain());
  else
    snprintf(verdict, sizeof verdict,
             "the operations were not timed, so their share of the communication time is "
             "unknown");
  snprintf(msg, sizeof msg,
           "%s: %llu of %llu operations (%.0f%%) moved less than %s each (%s in all, %s on "
           "average).%s Sent as %llu operations of %s instead, they would save an estimated "
           "%.3f ms (%llu fewer operations x %.1f us per-operation cost, %s)%s, %s.%s",
           c->name, (unsigned long long)c->small_ops, (unsigned long long)c->ops,
           100.0 * (double)c->small_ops / (double)c->ops,
           a2a_perf_fmt_bytes(batch, b1, sizeof b1),
           a2a_perf_fmt_bytes(c->small_bytes, b2, sizeof b2),
           a2a_perf_fmt_bytes(c->small_bytes / c->small_ops, b3, sizeof b3), timing,
           (unsigned long long)batches, b1, gain * 1e3,
           (unsigned long long)(c->small_ops - (batches < c->small_ops ? batches : c->small_ops)),
           alpha * 1e6, src, gain_pct, verdict,
           material ? " Fix: batch or fuse them: concatenate the tensors into one "
                      "all_to_all_single/all_reduce, raise the bucket size (DDP bucket_cap_mb), "
                      "or post them inside one ncclGroupStart/ncclGroupEnd so NCCL launches "
                      "them together."
                    : "");
  a2a_json j;
  a2a_json_init(&j, det, sizeof det);
  a2a_json_obj_begin(&j, NULL);
  a2a_json_uint(&j, "small_ops", c->small_ops);
  a2a_json_uint(&j, "ops", c->ops);
  a2a_json_uint(&j, "small_bytes", c->small_bytes);
  a2a_json_uint(&j, "threshold_bytes", batch);
  a2a_json_uint(&j, "measured_small_ops", c->small_measured);
  a2a_json_dbl(&j, "measured_small_time_s", c->small_time_s);
  a2a_json_dbl(&j, "small_time_s", est_small);
  a2a_json_dbl(&j, "comm_time_s", est_total);
  a2a_json_dbl(&j, "small_time_fraction", frac_time);
  a2a_json_uint(&j, "batched_ops", batches);
  a2a_json_dbl(&j, "per_op_cost_s", alpha);
  a2a_json_str(&j, "per_op_cost_source", src);
  a2a_json_dbl(&j, "estimated_gain_s", gain);
  a2a_json_dbl(&j, "estimated_gain_fraction", gain_frac);
  a2a_json_dbl(&j, "min_gain", a2a_perf_min_gain());
  a2a_json_bool(&j, "timed", timed);
  a2a_json_obj_end(&j);
  a2a_finding f = {.check = A2A_CK_PERF_SMALL_MESSAGES,
                   .severity = material ? A2A_SEV_WARNING : A2A_SEV_INFO,
                   .comm = c->rec, .message = msg, .details_json = det};
  a2a_report(&f);
}

/* perf.low-bandwidth: each judged cell (see pc_judge) whose typical
 * (median) window bandwidth is below A2ACHECK_LOW_BW_RATIO x its best
 * window, or below A2ACHECK_EXPECTED_BUSBW when set, with at least
 * A2ACHECK_PERF_MIN_OPS operations in complete windows and two windows. */
static void report_lowbw(const pc_comm *c) {
  if (pc_nranks(c) < 2 || !a2a_check_on(A2A_CK_PERF_LOW_BANDWIDTH)) return;
  int reported = 0;
  double expected = a2a_opt->expected_busbw;
  for (int i = 0; i < PC_JUDGE; i++) {
    const pc_judge *jd = &c->judge[i];
    if (jd->bucket < 0) break;
    uint64_t judged = jd->windows * PC_WIN;
    if (jd->windows < 2 || judged < a2a_perf_min_ops() || jd->nwmed < 1) continue;
    float tmp[PC_WMEDS];
    memcpy(tmp, jd->wmed, sizeof tmp);
    double typ = median_f(tmp, jd->nwmed);
    bool below_best = typ < a2a_opt->low_bw_ratio * jd->best;
    bool below_expected = expected > 0 && typ < expected;
    if (!below_best && !below_expected) continue;
    if (reported++ >= PC_MAX_LOWBW_REPORTS) return;
    int op = jd->op, b = jd->bucket;
    const pc_stat *st = &c->st[op][b];
    double factor = a2a_perf_busbw_factor(op, pc_nranks(c));
    char lo[32], hi[32], why[320], msg[1280], det[768];
    a2a_perf_fmt_bytes(a2a_perf_bucket_lo(b), lo, sizeof lo);
    a2a_perf_fmt_bytes(1ULL << (b + 1), hi, sizeof hi);
    if (below_expected)
      snprintf(why, sizeof why, "%.0f%% of the expected %.2f GB/s (A2ACHECK_EXPECTED_BUSBW)",
               100.0 * typ / expected, expected);
    else
      snprintf(why, sizeof why,
               "%.0f%% of the %.2f GB/s of its best window for the same operation and size",
               jd->best > 0 ? 100.0 * typ / jd->best : 0.0, jd->best);
    snprintf(msg, sizeof msg,
             "%s: %s of [%s, %s) on %d ranks: typical bus bandwidth %.2f GB/s (the median of "
             "per-window medians over %llu operations in windows of %d, the first operation "
             "left out; algbw %.2f GB/s, busbw factor %.3f), %s. The time includes waiting for "
             "the slowest rank: an operation is timed on this rank's stream from its start to "
             "its end, so a peer that arrives late (load imbalance, a straggler's compute or "
             "host stall) lowers the number as much as a slow link or other traffic on the "
             "links does. Fix: compare the ranks' perf.summary records - if one rank's "
             "bandwidth is high while the others' is low, that rank is the straggler; if all "
             "are low, check NCCL_* settings (see perf.env) and the topology, and run "
             "nccl-tests on the same nodes for the attainable number.",
             c->name, a2a_perf_op_name(op), lo, hi, pc_nranks(c), typ, (unsigned long long)judged,
             PC_WIN, typ / factor, factor, why);
    a2a_json j;
    a2a_json_init(&j, det, sizeof det);
    a2a_json_obj_begin(&j, NULL);
    a2a_json_str(&j, "op", a2a_perf_op_name(op));
    a2a_json_uint(&j, "bucket_lo_bytes", a2a_perf_bucket_lo(b));
    a2a_json_int(&j, "nranks", pc_nranks(c));
    a2a_json_uint(&j, "measured_ops", st->measured);
    a2a_json_uint(&j, "judged_ops", judged);
    a2a_json_uint(&j, "windows", jd->windows);
    a2a_json_uint(&j, "bytes", jd->bytes);
    a2a_json_dbl(&j, "time_s", jd->time_s);
    a2a_json_dbl(&j, "algbw_gbps", typ / factor);
    a2a_json_dbl(&j, "busbw_gbps", typ);
    a2a_json_dbl(&j, "best_busbw_gbps", jd->best);
    a2a_json_dbl(&j, "fastest_op_busbw_gbps", st->best_busbw);
    a2a_json_dbl(&j, "slowest_op_busbw_gbps", st->worst_busbw);
    a2a_json_dbl(&j, "slowest_op_s", st->slow_s);
    if (expected > 0) a2a_json_dbl(&j, "expected_busbw_gbps", expected);
    a2a_json_str(&j, "reason", below_expected ? "below-expected" : "below-best");
    a2a_json_str(&j, "includes", "waiting for the slowest rank");
    a2a_json_obj_end(&j);
    a2a_finding f = {.check = A2A_CK_PERF_LOW_BANDWIDTH, .severity = A2A_SEV_WARNING,
                     .comm = c->rec, .message = msg, .details_json = det};
    a2a_report(&f);
  }
}

static void report_no_overlap(const pc_comm *c) {
  if (pc_nranks(c) < 2 || c->ops < a2a_perf_min_ops() ||
      !a2a_check_on(A2A_CK_PERF_NO_OVERLAP))
    return;
  bool blocked = c->blocked_after >= a2a_perf_min_ops() && c->blocked_after * 2 >= c->ops;
  bool serial = c->serialized >= a2a_perf_min_ops() && c->serialized * 10 >= c->ops * 9;
  if (!blocked && !serial) return;
  char msg[1024], det[512];
  if (blocked)
    snprintf(msg, sizeof msg,
             "%s: the host blocked (%s) right after %llu of %llu communication operations "
             "(%.0f%%): the CPU waits for the network instead of enqueueing the next compute, so "
             "communication never overlaps compute. Fix: do not synchronize after issuing "
             "communication; make the consumer stream wait for it on the GPU "
             "(cudaEventRecord + cudaStreamWaitEvent, or work.wait() in PyTorch), and "
             "synchronize the host once per step at most.",
             c->name, c->block_api ? c->block_api : "a synchronization",
             (unsigned long long)c->blocked_after, (unsigned long long)c->ops,
             100.0 * (double)c->blocked_after / (double)c->ops);
  else
    snprintf(msg, sizeof msg,
             "%s: %llu of %llu communication operations (%.0f%%) were issued on the same stream "
             "as all the compute launched before them, with no work on any other stream: the "
             "GPU runs communication and compute strictly one after the other. Fix: issue "
             "independent compute (the next layer, the backward of other parameters) on another "
             "stream, or run communication on its own stream (async_op=True) and wait for it "
             "only where its result is consumed.",
             c->name, (unsigned long long)c->serialized, (unsigned long long)c->ops,
             100.0 * (double)c->serialized / (double)c->ops);
  a2a_json j;
  a2a_json_init(&j, det, sizeof det);
  a2a_json_obj_begin(&j, NULL);
  a2a_json_uint(&j, "ops", c->ops);
  a2a_json_uint(&j, "blocked_after_ops", c->blocked_after);
  if (c->block_api) a2a_json_str(&j, "blocking_call", c->block_api);
  a2a_json_uint(&j, "serialized_ops", c->serialized);
  a2a_json_str(&j, "pattern", blocked ? "host-blocks-after-communication" : "single-stream");
  /* The overlap fraction (HTA: overlapping time / communication time): the
   * sampled measurement when there is one; 0 by construction otherwise. */
  a2a_json_dbl(&j, "overlap_fraction", c->ov_comm_s > 0 ? c->ov_overlap_s / c->ov_comm_s : 0.0);
  a2a_json_uint(&j, "overlap_samples", c->ov_samples);
  a2a_json_obj_end(&j);
  a2a_finding f = {.check = A2A_CK_PERF_NO_OVERLAP, .severity = A2A_SEV_WARNING,
                   .site = blocked ? c->block_site : c->serial_site, .comm = c->rec,
                   .message = msg, .details_json = det,
                   .stack = blocked && c->have_block_stack ? &c->block_stack : NULL};
  a2a_report(&f);
}

static void report_summary(const pc_comm *c) {
  if (!a2a_opt->perf_summary || c->ops == 0 || !a2a_check_on(A2A_CK_PERF_SUMMARY)) return;
  static char det[12288];
  char msg[1024], sz[32], part[200];
  a2a_json j;
  a2a_json_init(&j, det, sizeof det);
  a2a_json_obj_begin(&j, NULL);
  a2a_json_int(&j, "nranks", pc_nranks(c));
  a2a_json_uint(&j, "ops", c->ops);
  a2a_json_uint(&j, "bytes", c->bytes);
  a2a_json_uint(&j, "small_ops", c->small_ops);
  a2a_json_uint(&j, "measured_ops", c->measured);
  a2a_json_uint(&j, "unmeasured_ops", c->unmeasured + c->untimed + (c->head - c->tail));
  if (c->sampled_out) a2a_json_uint(&j, "sampled_out_ops", c->sampled_out);
  if (c->unjudged) a2a_json_uint(&j, "unjudged_ops", c->unjudged);
  a2a_json_dbl(&j, "time_s", c->time_s);
  a2a_json_uint(&j, "blocked_after_ops", c->blocked_after);
  a2a_json_uint(&j, "serialized_ops", c->serialized);
  a2a_json_arr_begin(&j, "size_histogram");
  for (int b = 0; b < A2A_PERF_NBUCKETS; b++) {
    if (!c->hist[b]) continue;
    a2a_json_obj_begin(&j, NULL);
    a2a_json_uint(&j, "bucket_lo_bytes", a2a_perf_bucket_lo(b));
    a2a_json_uint(&j, "ops", c->hist[b]);
    a2a_json_obj_end(&j);
  }
  a2a_json_arr_end(&j);
  int len = snprintf(msg, sizeof msg, "%s (%d ranks): %llu operations, %s, %llu timed, %.3f ms measured",
                     c->name, pc_nranks(c), (unsigned long long)c->ops,
                     a2a_perf_fmt_bytes(c->bytes, sz, sizeof sz),
                     (unsigned long long)c->measured, c->time_s * 1e3);
  if (c->ov_comm_s > 0 && len < (int)sizeof msg)
    len += snprintf(msg + len, sizeof msg - (size_t)len, "; %.0f%% of communication time overlapped compute (%llu samples)",
                    100.0 * c->ov_overlap_s / c->ov_comm_s, (unsigned long long)c->ov_samples);
  a2a_json_arr_begin(&j, "buckets");
  for (int op = 0; op < A2A_PERF_OP__COUNT; op++)
    for (int b = 0; b < A2A_PERF_NBUCKETS; b++) {
      const pc_stat *st = &c->st[op][b];
      if (!st->ops) continue;
      double alg = a2a_perf_algbw_gbps(st->meas_bytes, st->time_s);
      double bus = stat_busbw(st, op, pc_nranks(c));
      a2a_json_obj_begin(&j, NULL);
      a2a_json_str(&j, "op", a2a_perf_op_name(op));
      a2a_json_uint(&j, "bucket_lo_bytes", a2a_perf_bucket_lo(b));
      a2a_json_uint(&j, "ops", st->ops);
      a2a_json_uint(&j, "bytes", st->bytes);
      a2a_json_uint(&j, "measured_ops", st->measured);
      a2a_json_dbl(&j, "time_s", st->time_s);
      if (st->measured) {
        a2a_json_dbl(&j, "algbw_gbps", alg);
        a2a_json_dbl(&j, "busbw_gbps", bus);
        a2a_json_dbl(&j, "best_busbw_gbps", st->best_busbw);
      }
      a2a_json_obj_end(&j);
      if (len < (int)sizeof msg - 1) {
        if (st->measured)
          snprintf(part, sizeof part, "; %s %s+: %llu ops, algbw %.2f GB/s, busbw %.2f GB/s",
                   a2a_perf_op_name(op), a2a_perf_fmt_bytes(a2a_perf_bucket_lo(b), sz, sizeof sz),
                   (unsigned long long)st->ops, alg, bus);
        else
          snprintf(part, sizeof part, "; %s %s+: %llu ops", a2a_perf_op_name(op),
                   a2a_perf_fmt_bytes(a2a_perf_bucket_lo(b), sz, sizeof sz),
                   (unsigned long long)st->ops);
        len += snprintf(msg + len, sizeof msg - (size_t)len, "%s", part);
      }
    }
  a2a_json_arr_end(&j);
  /* Blocked-after or single-stream operations cannot overlap anything: an
   * upper bound of the overlap fraction (HTA's definition) is the share of
   * the other operations. Exact overlap needs compute timings we do not
   * take (see docs/performance.md). */
  double ub = c->ops ? 1.0 - (double)(c->blocked_after > c->serialized ? c->blocked_after : c->serialized) /
                                 (double)c->ops
                     : 1.0;
  a2a_json_dbl(&j, "overlap_fraction_upper_bound", ub < 0 ? 0 : ub);
  a2a_json_uint(&j, "overlap_samples", c->ov_samples);
  if (c->ov_comm_s > 0) a2a_json_dbl(&j, "overlap_fraction", c->ov_overlap_s / c->ov_comm_s);
  a2a_json_obj_end(&j);
  a2a_finding f = {.check = A2A_CK_PERF_SUMMARY, .severity = A2A_SEV_INFO, .comm = c->rec,
                   .message = msg, .details_json = det};
  a2a_report(&f);
}

static void perf_comm_fini(void) {
  int n = atomic_load(&g_ncomms);
  for (int i = 0; i < n; i++) {
    pc_comm *c = g_comms[i];
    if (c->inherited) continue;
    pthread_mutex_lock(&c->mu);
    poll_locked(c);
    fold_counts(c);
    pthread_mutex_unlock(&c->mu);
    report_small(c);
    report_lowbw(c);
    report_no_overlap(c);
    report_summary(c);
  }
}

/* (Re)initialization: unit tests re-init between cases. Frees what a
 * previous init created (events included). */
static int perf_comm_init(void) {
  pthread_mutex_lock(&g_create_mu);
  int n = atomic_load(&g_ncomms);
  for (size_t i = 0; i < PC_TABLE; i++) atomic_store(&g_table[i], NULL);
  for (int i = 0; i < n; i++) {
    pc_comm *c = g_comms[i];
    destroy_events(c);
    pthread_mutex_destroy(&c->mu);
    free(c);
    g_comms[i] = NULL;
  }
  atomic_store(&g_ncomms, 0);
  atomic_store(&g_captures, 0);
  atomic_store(&g_full_warned, false);
  atomic_store(&g_pc_gate, 0); /* every thread's record resets (g_gen) */
  atomic_fetch_add(&g_gen, 1);
  pthread_mutex_unlock(&g_create_mu);
  return 0;
}

/* In a forked child (a data loader, a subprocess launcher) the parent's
 * communicators are the parent's: their statistics were gathered and will
 * be reported by the parent, and their in-flight timing events belong to
 * the parent's CUDA context, which the child cannot use. Mark them
 * inherited: never looked up, polled or reported again here (the child
 * would otherwise write a second perf.summary of the same operations
 * under the same rank). Communicators the child creates itself are new
 * entries. The event handles are leaked on purpose (destroying them would
 * be a CUDA call in a child that may never initialize CUDA). */
static void perf_comm_after_fork_child(void) {
  int n = atomic_load(&g_ncomms);
  for (int i = 0; i < n; i++) {
    pc_comm *c = g_comms[i];
    pthread_mutex_init(&c->mu, NULL);
    c->inherited = true;
    c->can_measure = false;
    c->tail = c->head;
    c->smp.state = 0;
  }
  pthread_mutex_init(&g_create_mu, NULL);
  atomic_store(&g_captures, 0);
  atomic_store(&g_pc_gate, 0); /* the one thread's record resets (g_gen) */
  atomic_fetch_add(&g_gen, 1);
}

/* Each kind in the phase it is handled in (perf_comm_on_event). */
#define PC_BOTH                                                                          \
  (A2A_KIND_BIT(A2A_EV_COLL) | A2A_KIND_BIT(A2A_EV_P2P) | A2A_KIND_BIT(A2A_EV_GROUP_END) |   \
   A2A_KIND_BIT(A2A_EV_STREAM_SYNC) | A2A_KIND_BIT(A2A_EV_EVENT_SYNC) |                   \
   A2A_KIND_BIT(A2A_EV_DEVICE_SYNC))
#define PC_PRE                                                                            \
  (PC_BOTH | A2A_KIND_BIT(A2A_EV_COMM_END) | A2A_KIND_BIT(A2A_EV_LAUNCH) |                \
   A2A_KIND_BIT(A2A_EV_GRAPH_LAUNCH) | A2A_KIND_BIT(A2A_EV_HOST_FUNC) |                   \
   A2A_KIND_BIT(A2A_EV_MEMSET) | A2A_KIND_BIT(A2A_EV_MEMCPY) |                            \
   A2A_KIND_BIT(A2A_EV_STREAM_WAIT_EVENT))
#define PC_POST                                                                           \
  (PC_BOTH | A2A_KIND_BIT(A2A_EV_GROUP_START) | A2A_KIND_BIT(A2A_EV_COMM_INIT) | A2A_KIND_BIT(A2A_EV_EVENT_RECORD) |         \
   A2A_KIND_BIT(A2A_EV_GRAPH_CAPTURE_BEGIN) | A2A_KIND_BIT(A2A_EV_GRAPH_CAPTURE_END) |    \
   A2A_KIND_BIT(A2A_EV_PROCESS_EXIT))

/* perf_comm_on_event's hot kinds, per kind, for the dispatch table (the
 * same calls as its switch makes; the operations' and ncclGroupEnd's per
 * phase: their PREs here, their POSTs in pc_by_kind_post). */
static const a2a_by_kind pc_by_kind = {
    .fn = {[A2A_EV_LAUNCH] = pc_launch, [A2A_EV_COLL] = pc_op_pre, [A2A_EV_P2P] = pc_op_pre,
           [A2A_EV_GROUP_START] = pc_by_group_start, [A2A_EV_GROUP_END] = pc_group_end_pre,
           [A2A_EV_MEMCPY] = pc_by_memcpy, [A2A_EV_EVENT_RECORD] = pc_by_event_record,
           [A2A_EV_STREAM_WAIT_EVENT] = pc_by_stream_wait}};
static const a2a_by_kind pc_by_kind_post = {
    .fn = {[A2A_EV_COLL] = pc_op_post, [A2A_EV_P2P] = pc_op_post_p2p,
           [A2A_EV_GROUP_END] = pc_group_end_post}};

const a2a_analyzer a2a_analyzer_perf_comm = {
    .name = "perf_comm",
    .owner = A2A_OWN_PERF_COMM,
    .pre = PC_PRE,
    .post = PC_POST,
    .init = perf_comm_init,
    .on_event = perf_comm_on_event,
    .by_kind = &pc_by_kind,
    .by_kind_post = &pc_by_kind_post,
    /* pc_launch's state is the thread's own (t_pc; g_gen at init and fork):
     * after a launch that left launch_fast its stream's key, the same
     * launch only clears armed_c, which it cleared (pc_launch_slow). */
    .launch_quiet = true,
    .nested = &pc_nested,
    /* Its nested end is a no-op unless it marked the thread busy. */
    .nested_keep_ok = true,
    .pre_gated = A2A_KIND_BIT(A2A_EV_MEMCPY) | A2A_KIND_BIT(A2A_EV_STREAM_WAIT_EVENT),
    .pre_gate = &g_pc_gate,
    .post_gated = A2A_KIND_BIT(A2A_EV_EVENT_RECORD),
    .post_gate = &g_pc_gate,
    .fini = perf_comm_fini,
    .after_fork_child = perf_comm_after_fork_child,
};
