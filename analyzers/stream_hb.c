/* stream_hb.c - the stream happens-before analyzer (pitfall 4).
 *
 * Checks: stream.unsynced-input, stream.unsynced-output,
 * stream.free-in-flight (errors) and stream.default-stream (warning); see
 * docs/checks.md. stream.default-stream is reported for communication on
 * the legacy default stream of a device that also has blocking streams
 * (see "Blocking streams per device"): only those serialize with it. The model is described in docs/design.md, "Happens-before
 * model (stream checks) and blind spots"; in short:
 *
 *  - Timelines: every stream (a cudaStream_t handle; the legacy default
 *    stream once per device; the per-thread default stream once per host
 *    thread and device) and ONE host timeline shared by all host threads
 *    (host threads synchronize with each other through means we do not see,
 *    so treating them as one timeline avoids false reports).
 *  - Each timeline t has a vector clock vc_t. vc_t[t] is the epoch of t's
 *    latest tracked operation. An access is remembered as (timeline, epoch);
 *    access a happens before the current point of timeline x iff
 *    vc_x[a.tl] >= a.epoch.
 *  - Edges: every enqueue joins the host clock into the stream (work enqueued
 *    after a host synchronization runs after what the host waited for); the
 *    legacy default stream joins every blocking stream of its device and
 *    blocking streams join it; cudaEventRecord captures the stream clock
 *    (a re-record replaces it); cudaStreamWaitEvent joins it into the stream
 *    (an event never recorded adds nothing); stream/event/device synchronize
 *    and successful queries join into the host; host-synchronous copies join
 *    their stream into the host; cudaFree of cudaMalloc memory is treated as
 *    the device synchronization CUDA performs in practice. Streams that join
 *    a capture by waiting on an event recorded in a capturing stream capture
 *    too (their work is not run). Timelines of destroyed streams are
 *    recycled (see tl_new).
 *  - Accesses: NCCL operations read their send and write their receive
 *    ranges on their stream (grouped operations take effect at the outermost
 *    ncclGroupEnd, where NCCL enqueues them; an operation's range is exactly
 *    its buffer: older ranges reaching past it are split); memcpy/memset
 *    read and write their ranges; kernel launches "may read and write"
 *    every tracked range one of their parameter words points into - except
 *    a range an unordered communication READ (a send in flight) holds,
 *    which they are presumed to only read (see on_launch).
 *  - Recent copies: the destinations of the last STREAM_HB_COPY_RING copies
 *    and memsets that do not make the host wait are remembered even while
 *    nothing is tracked, and become the history of a range a communication
 *    operation creates (the producer of a fresh buffer; see "Recent
 *    copies").
 *
 * Cost. Only ranges touched by communication are tracked. While none is
 * tracked (g_nranges == 0), no recent copy is remembered (g_nring == 0)
 * and no capture is open, every CUDA event except stream/event creation and
 * destruction, NCCL calls and copies that do not make the host wait is
 * dropped after two or three relaxed atomic loads (kernel launches after
 * one, whatever the ring holds): no remembered access
 * exists, and every later access gets a fresh epoch larger than any clock
 * value a skipped join could have carried, so skipping the joins changes no
 * later ordering decision. A copy that does not make the host wait always
 * takes the lock once (to enter the ring). While ranges are tracked, the events that matter
 * take one analyzer-wide mutex for a short critical section (vector clocks
 * are at most STREAM_HB_MAX_TL words; kernel launches additionally scan
 * their parameter words); conflicts found under it are queued and turned
 * into findings after it is released. NCCL operations capture one stack per
 * (merged) operation, outside the lock.
 */
#include "stream_hb.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2a_core.h"
#include "a2a_lock.h"

#define MAX_TL STREAM_HB_MAX_TL
#define EV_SLOTS STREAM_HB_EVENT_SLOTS
#define EV_SLOTS_MAX STREAM_HB_EVENT_SLOTS_MAX
#define MAX_RANGES STREAM_HB_MAX_RANGES
#define MAX_ACC STREAM_HB_MAX_ACC
#define MAX_PENDING STREAM_HB_MAX_PENDING
#define MAX_THREADS STREAM_HB_MAX_THREADS
#define SREG_SLOTS 1024
#define PARAM_SCAN_MAX 4096 /* bytes scanned per kernel parameter */
#define KERNEL_MAX_HITS 16  /* distinct ranges one launch may touch */
#define STACK_RING 256
#define RP_MAX 16 /* entries of a replayed group (see "Repeated groups") */
#define RP_TICKS 64 /* clock entries a back-to-back replay keeps (8 streams) */

/* cudaStreamLegacy / cudaStreamPerThread (driver_types.h). */
#define STREAM_LEGACY ((void *)0x1)
#define STREAM_PER_THREAD ((void *)0x2)
#define CUDA_STREAM_NON_BLOCKING 0x1u

/* ------------------------------------------------------------------ */
/* Types */

typedef enum tl_kind {
  TL_HOST,
  TL_LEGACY,      /* legacy default stream of a device */
  TL_PER_THREAD,  /* per-thread default stream (blocking w.r.t. legacy) */
  TL_BLOCKING,    /* cudaStreamCreate without cudaStreamNonBlocking */
  TL_NONBLOCKING, /* cudaStreamNonBlocking */
  TL_UNKNOWN,     /* created before we saw it: treated as blocking (more
                     edges: can only hide a race, never invent one) */
} tl_kind;

typedef struct timeline {
  tl_kind kind;
  bool live;      /* handle still maps to this timeline */
  bool capturing; /* inside stream capture: work is recorded, not run */
  int cap_origin; /* capturing: the timeline whose cudaStreamBeginCapture
                     started the capture (itself, or the origin a joined
                     stream was forked from through an event) */
  int device;     /* -1 unknown: matches every device */
  uint32_t thread;/* TL_PER_THREAD: owning host thread */
  void *handle;
  uint64_t host_ver; /* g_host_ver when the host clock was last joined in */
  uint32_t vc[MAX_TL];
} timeline;

/* What cudaStreamCreate* told us about a stream. A timeline is allocated
 * only when a stream is first used while ranges are tracked, so the many
 * streams a framework creates up front (PyTorch: 32 per priority per device)
 * cost no timeline. */
typedef struct sreg_slot {
  void *handle; /* NULL = empty */
  tl_kind kind;
  int device;
  const void *site; /* the creating call */
} sreg_slot;

typedef struct ev_slot {
  void *handle; /* NULL = empty */
  bool recorded;
  int cap_origin; /* recorded on a capturing stream: its capture's origin
                     timeline (a wait on it joins that capture), else 0 */
  uint32_t vc[MAX_TL];
} ev_slot;

enum { F_READ = 1, F_WRITE = 2, F_COMM = 4 };

typedef enum acc_kind {
  AK_COMM,
  AK_KERNEL,
  AK_MEMCPY,
  AK_MEMSET,
  AK_HOSTCOPY, /* synchronous memcpy: the host reads/writes through it */
  AK_FREE,
} acc_kind;

typedef struct access {
  uint32_t clk;
  uint16_t tl;
  uint8_t flags;    /* F_* */
  uint8_t kind;     /* acc_kind */
  uint32_t nops;    /* AK_COMM: operations merged into this access */
  const void *site; /* user call site */
  const char *what; /* API name or kernel name (static strings) */
  void *comm;       /* AK_COMM: ncclComm_t */
  const a2a_stack *stk; /* AK_COMM: the call site's cached stack
                           (a2a_site_stack_ref: immutable until re-init), or
                           NULL: then the ring slot below, if any */
  int stack;        /* AK_COMM: slot in the stack ring, -1 none */
  uint32_t stack_gen;
} access;

typedef struct range {
  uintptr_t lo, hi;
  bool live;      /* in g_order (range hints check it; see range_hinted) */
  uint64_t last_use;
  int nacc;
  access acc[MAX_ACC];
} range;

/* What a grouped operation's pending_add arguments are derived from,
 * beyond the fields its entry holds as they are (buffer, stream, call
 * site, communicator, per_thread): see "Repeated operations". */
typedef struct op_key {
  uint64_t tag;      /* rep_gen << 2 | the entries the operation is: 1 (a
                        send or receive), 2 (a collective); 0 none */
  const char *api;   /* ev->api */
  size_t count;
  int dtype;
  int op;            /* a send or receive: is_send; a collective: its a2a_coll */
  int root;          /* a collective's root */
  int device;        /* ev->device, >= 0 */
  unsigned comm_ver; /* a collective: a2a_comm_ver before its extents were taken */
} op_key;

/* One pending (grouped) communication access. */
typedef struct pending {
  void *stream;
  int per_thread, device;
  uintptr_t lo, hi;
  uint8_t flags;
  uint32_t nops;
  const void *site;
  const char *what;
  void *comm;
  /* The operation's stack: the site's cached one, or (the site cache is
   * full) scratch holding this call's capture; NULL: none. */
  const a2a_stack *stk;
  a2a_stack scratch;
  /* The operation pending_repeat last found to be this entry (or, a
   * collective, this entry and the next), when it is the thread's group
   * entry (see "Repeated operations"). */
  op_key key;
} pending;

typedef struct thread_state {
  int depth; /* ncclGroupStart nesting */
  int npending;
  /* The site-stack cache's answers for the thread's last two call sites
   * (see site_stack). */
  const void *ss_site[2];
  const a2a_stack *ss_stk[2];
  unsigned ss_next;
  /* The range slots (slot + 1; 0 none) the fast path at the group end
   * found for the thread's first two entries (see range_memo). */
  uint16_t rmemo[2];
  /* The replay of the thread's last group (see "Repeated groups"): its
   * first rp_n entries (0: none) are the ones the group end applied last,
   * while g_tl_epoch was rp_epoch: through comm_fast_pend on timeline rp_s
   * (rp_ns 0), or through pending_apply_multi on the rp_ns timelines
   * rp_st, entry k on rp_tl[k] (see "Repeated groups on several
   * streams"). Entry k's range rp_r[k] then had last_use rp_use[k], and
   * its access went into slot rp_slot[k] (HB_SLOT_USE: the range's use
   * only). */
  uint8_t rp_n;
  uint8_t rp_ns;
  int8_t rp_slot[RP_MAX];
  /* The first rep_n entries of p are an earlier group's, none merged into,
   * each with the site cache's stack (none with stacks off): an operation
   * equal to entry npending is that entry (pending_repeat). Cleared when an
   * entry changes (pending_merge, pending_add_slow), set at the group end
   * (pending_repeat_set). rp_n != 0 implies rep_n >= rp_n. */
  int rep_n;
  /* Advanced whenever pending_repeat_set sets rep_n anew (the entries
   * changed): the operation keys (pending.key) taken under another value are
   * stale. */
  uint64_t rep_gen;
  int rp_s;
  uint64_t rp_epoch;
  /* g_lock_ver at the end of the section of the last group end of the
   * thread that replayed its group on several streams through join_ticks
   * (0: none yet): the next group end finds the state that replay left
   * while the version is unchanged (see "Back-to-back replays"). Never
   * cleared: every later section advances the version past it for good. */
  uint64_t rp_ver;
  /* Taken with rp_ver, for group_replay_quick: per entry the address of
   * its slot's epoch (HB_SLOT_USE: rp_sink, a word nothing reads); the
   * rp_nt clock entries join_ticks raises, in its order (0: more than
   * RP_TICKS, ticks_apply finds them). */
  uint32_t *rp_clk[RP_MAX];
  uint32_t rp_sink;
  int rp_nt;
  uint32_t *rp_tick[RP_TICKS];
  range *rp_r[RP_MAX];
  uint64_t rp_use[RP_MAX];
  int rp_tl[RP_MAX];
  int rp_st[RP_MAX];
  pending p[MAX_PENDING];
} thread_state;

typedef struct stack_slot {
  uint32_t gen;
  a2a_stack st;
} stack_slot;

/* ------------------------------------------------------------------ */
/* State. Everything below g_mu is protected by it, except: g_nranges
 * (atomic, read lock-free by the fast path), g_threads[i] and g_last_dev[i]
 * (touched only by thread i). */

/* (An a2a_lock, not a pthread mutex: it is taken once per NCCL call and per
 * event record or wait while buffers are in flight.) */
static a2a_lock g_mu = A2A_LOCK_INIT;
static _Atomic unsigned g_nranges; /* also the launch POST gate */
static _Atomic bool g_disabled;

static timeline *g_tl; /* [MAX_TL]; g_tl[0] is the host */
static int g_ntl;
/* Bumped whenever the host clock grows (host_join): a timeline whose
 * host_ver equals it already holds the host clock, and enqueue_edges skips
 * the join (every enqueue joins the host; the host clock changes only at
 * synchronizations, far less often). Starts at 1; a new timeline has 0. */
static uint64_t g_host_ver = 1;
/* Hints for tl_of: the timeline a key (stream handle; legacy stream per
 * device; per-thread stream per thread and device) last resolved to. A hint
 * is only a guess, checked with tl_is, so a stale one costs the scan. */
#define TL_HINTS 64
static int16_t g_tl_hint[TL_HINTS];
static sreg_slot *g_sreg; /* [SREG_SLOTS] */
static size_t g_nsreg;
static ev_slot *g_ev;  /* [g_ev_slots] */
static size_t g_ev_slots; /* a power of two: EV_SLOTS, doubled up to EV_SLOTS_MAX (ev_grow) */
static size_t g_nev;
static range *g_rng;   /* [MAX_RANGES] pool */
static uint16_t *g_order; /* indices into g_rng sorted by lo; g_nranges used */
static size_t g_nr;    /* == g_nranges, under the lock */
static uint64_t g_use;
/* Advanced by every locked section but a repeated launch's (see "Repeated
 * launches"), and by (re)initialization, always under g_mu (lock_advance);
 * atomic for hb_stream_sync, which reads it without the lock (see
 * "Repeated queries"). */
static _Atomic uint64_t g_lock_ver = 1;
static uintptr_t g_min_lo, g_max_hi; /* bounds of all tracked ranges */
/* Launch prefilter: one bit per hashed 2 MiB page that a tracked range
 * touches. Bits are only set (under g_mu) while ranges exist and cleared when
 * the last range goes: a stale bit costs a lock, never a missed access. */
#define PAGE_SHIFT 21
#define PAGE_BITS 65536
static _Atomic uint64_t g_pages[PAGE_BITS / 64];
static stack_slot *g_stacks; /* [STACK_RING] */
static uint32_t g_stack_next;
static thread_state *g_threads[MAX_THREADS];
static int g_last_dev[MAX_THREADS];

/* Blocking streams per device, for stream.default-stream. The legacy
 * default stream is ordered with every blocking stream of its device (CUDA
 * runtime API, "Stream synchronization behavior"): what is enqueued on it
 * waits for their earlier work and their later work waits for it.
 * Non-blocking streams (cudaStreamNonBlocking: PyTorch's, NCCL's own) are
 * not. So communication on the legacy stream costs overlap only on a
 * device that has blocking streams: streams created through an
 * intercepted cudaStreamCreate* without cudaStreamNonBlocking (counted on
 * creation and destruction, under g_mu), and per-thread default streams
 * (--default-stream per-thread, cudaStreamPerThread), noted when their
 * timeline is made. Streams we never saw created are not counted (they are
 * treated as blocking for ordering, where that is the safe side; here the
 * safe side is not to warn). Read lock-free by the warning. */
#define HB_MAX_DEV 64
static atomic_int g_dev_blocking[HB_MAX_DEV];
static atomic_bool g_dev_ptds[HB_MAX_DEV];
static void *g_dev_blk_example[HB_MAX_DEV];       /* g_mu: the latest live one */
static const void *g_dev_blk_site[HB_MAX_DEV];    /* g_mu: its creating call */

/* Recent copy/memset destinations (see "Recent copies" below): a fixed ring,
 * filled even while no range is tracked. g_nring counts live entries (the
 * fast path reads it lock-free, like g_nranges). */
/* An entry holds what its access has of its own: a copy or memset into
 * [lo,hi) is a write (F_WRITE) of kind AK_MEMCPY or AK_MEMSET, without a
 * communicator, an operation count or a stack (ring_access rebuilds it). */
typedef struct ring_ent {
  uintptr_t lo, hi;
  const void *site; /* access.site */
  const char *what; /* access.what */
  uint32_t clk;     /* access.clk */
  uint16_t tl;      /* access.tl */
  uint8_t kind;     /* access.kind: AK_MEMCPY or AK_MEMSET */
  bool live;
} ring_ent;
static ring_ent g_ring[STREAM_HB_COPY_RING];
static unsigned g_ring_next, g_ring_live;
static _Atomic unsigned g_nring;
/* Timelines inside a stream capture (read lock-free: while one captures,
 * event records and waits are followed even with nothing tracked, so that a
 * stream joining the capture through an event is known to capture). */
static _Atomic unsigned g_ncapture;
/* g_ncapture, plus 1 once the analyzer disabled itself (g_disabled):
 * while nonzero a copy's POST goes the locked way (hb_case_copy) - one
 * load for both tests. Written with them. */
static _Atomic unsigned g_copy_locked;

#define HOST_TL 0

/* The last timelines found by tl_of (under g_mu), keyed by its arguments:
 * a program records, waits and copies on the same few streams over and
 * over, and the lookup below walks every timeline. An entry is valid only
 * while g_tl_epoch is unchanged: it is advanced whenever a stream handle
 * stops or starts mapping to a timeline (tl_new, a stream's creation or
 * destruction, initialization). */
#define TL_CACHE 4
typedef struct tl_cache_ent {
  void *stream;
  uint32_t thread;
  int device;
  int per_thread;
  int tl;
  uint64_t epoch;
} tl_cache_ent;
static tl_cache_ent g_tl_cache[TL_CACHE];
static uint64_t g_tl_epoch = 1;


/* ------------------------------------------------------------------ */
/* Small helpers */

static void disable_self(const char *why) {
  if (!atomic_exchange(&g_disabled, true)) {
    atomic_fetch_add_explicit(&g_copy_locked, 1, memory_order_relaxed);
    a2a_analyzer_disable("stream_hb", why);
  }
}

static inline __attribute__((always_inline)) int dev_of(const a2a_event *ev) {
  if (ev->device >= 0) return ev->device;
  return ev->thread < MAX_THREADS ? g_last_dev[ev->thread] : 0;
}

static void vc_join(uint32_t *dst, const uint32_t *src) {
  for (int i = 0; i < g_ntl; i++)
    if (src[i] > dst[i]) dst[i] = src[i];
}

/* The host waits for what src covers: join it into the host clock. True
 * when src covered the host clock (every entry at least the host's): the
 * host clock is then exactly src. */
static bool host_join(const uint32_t *src) {
  uint32_t *dst = g_tl[HOST_TL].vc;
  bool grew = false, covered = true;
  for (int i = 0; i < g_ntl; i++)
    if (src[i] > dst[i]) {
      dst[i] = src[i];
      grew = true;
    } else if (src[i] < dst[i]) {
      covered = false;
    }
  if (grew) g_host_ver++;
  return covered;
}

/* The host waits for timeline s (a synchronization, a host-waiting copy).
 * When s's clock covered the host's, the host clock is now s's clock: s
 * holds it, and its host_ver is set to the current g_host_ver - what
 * enqueue_edges_slow would set at s's next enqueue after a join that
 * changes nothing (the legacy and blocking edges are not skipped: they
 * depend on the kind, not on host_ver). Exact: the host clock changes only
 * in host_join, which bumps g_host_ver, so host_ver stays equal only while
 * the host clock is the one s holds (s's clock only grows). A timeline
 * whose clock lacks something the host has (a synchronization of another
 * stream since) keeps its host_ver, and its next enqueue joins the host. */
static void host_join_tl(int s) {
  if (host_join(g_tl[s].vc)) g_tl[s].host_ver = g_host_ver;
}

static bool hb(const access *a, const uint32_t *vc) { return vc[a->tl] >= a->clk; }

static bool dev_match(int a, int b) { return a < 0 || b < 0 || a == b; }

static bool is_blocking_kind(tl_kind k) {
  return k == TL_BLOCKING || k == TL_PER_THREAD || k == TL_UNKNOWN;
}

/* ------------------------------------------------------------------ */
/* Open-addressed tables keyed by a handle (streams, events): linear probing,
 * backward-shift deletion. */

static size_t handle_hash(void *h, size_t slots) {
  uint64_t x = (uint64_t)(uintptr_t)h;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (size_t)x & (slots - 1);
}

static sreg_slot *sreg_find(void *h) {
  size_t i = handle_hash(h, SREG_SLOTS);
  for (size_t n = 0; n < SREG_SLOTS; n++, i = (i + 1) & (SREG_SLOTS - 1)) {
    if (g_sreg[i].handle == h) return &g_sreg[i];
    if (g_sreg[i].handle == NULL) return NULL;
  }
  return NULL;
}

static void sreg_remove(void *h) {
  sreg_slot *e = sreg_find(h);
  if (!e) return;
  if (e->kind == TL_BLOCKING && e->device >= 0 && e->device < HB_MAX_DEV) {
    atomic_fetch_sub_explicit(&g_dev_blocking[e->device], 1, memory_order_relaxed);
    if (g_dev_blk_example[e->device] == h) g_dev_blk_example[e->device] = NULL;
  }
  size_t i = (size_t)(e - g_sreg);
  g_sreg[i].handle = NULL;
  g_nsreg--;
  size_t hole = i;
  for (size_t j = (i + 1) & (SREG_SLOTS - 1); g_sreg[j].handle; j = (j + 1) & (SREG_SLOTS - 1)) {
    size_t home = handle_hash(g_sreg[j].handle, SREG_SLOTS);
    bool in_between = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
    if (!in_between) {
      g_sreg[hole] = g_sreg[j];
      g_sreg[j].handle = NULL;
      hole = j;
    }
  }
}

/* Remember a created stream. A full table only loses the kind (the stream
 * is then treated as blocking: the safe direction). */
static void sreg_put(void *h, tl_kind kind, int device, const void *site) {
  sreg_remove(h);
  if (g_nsreg >= SREG_SLOTS * 3 / 4) return;
  size_t i = handle_hash(h, SREG_SLOTS);
  while (g_sreg[i].handle) i = (i + 1) & (SREG_SLOTS - 1);
  g_sreg[i] = (sreg_slot){h, kind, device, site};
  g_nsreg++;
  if (kind == TL_BLOCKING && device >= 0 && device < HB_MAX_DEV) {
    atomic_fetch_add_explicit(&g_dev_blocking[device], 1, memory_order_relaxed);
    g_dev_blk_example[device] = h;
    g_dev_blk_site[device] = site;
  }
}

/* ------------------------------------------------------------------ */
/* Timelines */

static void set_capturing(int s, bool on, int origin);

/* A dead timeline (its stream was destroyed) to recycle: one the host clock
 * covers if any, else (only when every slot is used: any_dead) any dead one;
 * -1 if none. */
static int tl_dead(bool any_dead) {
  int fallback = -1;
  for (int i = 1; i < g_ntl; i++) {
    const timeline *t = &g_tl[i];
    if (t->live) continue;
    if (g_tl[HOST_TL].vc[i] >= t->vc[i]) return i;
    if (fallback < 0) fallback = i;
  }
  return any_dead ? fallback : -1;
}

/* A timeline for a stream seen for the first time.
 *
 * Timelines of destroyed streams are recycled (a program that creates a
 * stream per step - torch.cuda.Stream() in the loop - would otherwise run
 * out of them). The new stream CONTINUES the dead one's epoch counter and
 * starts from the host clock: every access, event and clock entry that
 * still names the slot keeps its meaning for the old epochs, and the only
 * edge this adds is "the new stream's work runs after the old stream's".
 * When the host clock covers the old stream (preferred: it synchronized
 * with all of its work) that edge is implied anyway - every enqueue joins
 * the host - so recycling is exact. Otherwise (every slot in use, none
 * covered) the edge is invented and can only hide a race, never report
 * one; disabling the analyzer would hide them all. */
static int tl_new(tl_kind kind, void *handle, int device, uint32_t thread) {
  int i = tl_dead(g_ntl >= MAX_TL);
  timeline *t;
  if (i > 0) {
    t = &g_tl[i];
    uint32_t last = t->vc[i];
    if (t->capturing) set_capturing(i, false, 0);
    memcpy(t->vc, g_tl[HOST_TL].vc, sizeof t->vc);
    t->host_ver = g_host_ver;
    if (t->vc[i] < last) t->vc[i] = last;
  } else if (g_ntl < MAX_TL) {
    i = g_ntl++;
    t = &g_tl[i];
    memset(t, 0, sizeof *t);
  } else {
    disable_self("the process uses more live streams than the 128 it tracks");
    return -1;
  }
  if (kind == TL_PER_THREAD && device >= 0 && device < HB_MAX_DEV)
    atomic_store_explicit(&g_dev_ptds[device], true, memory_order_relaxed);
  t->kind = kind;
  t->live = true;
  g_tl_epoch++; /* tl_of's cache: a handle maps anew */
  t->capturing = false;
  t->cap_origin = 0;
  t->device = device;
  t->thread = thread;
  t->handle = handle;
  return i;
}

/* Whether timeline i is the live timeline of a stream argument (kind as
 * tl_of derives it). At most one live timeline matches a key: tl_new runs
 * only when none does, and a stream's creation or destruction unmaps the
 * timeline its handle had. */
static bool tl_is(int i, tl_kind kind, void *stream, uint32_t thread, int device) {
  const timeline *t = &g_tl[i];
  if (!t->live) return false;
  if (kind == TL_LEGACY) return t->kind == TL_LEGACY && t->device == device;
  if (kind == TL_PER_THREAD)
    return t->kind == TL_PER_THREAD && t->thread == thread && t->device == device;
  return t->handle == stream && t->kind != TL_LEGACY && t->kind != TL_PER_THREAD;
}

static int tl_find(void *stream, int per_thread, uint32_t thread, int device);

/* A miss: look up (or make) the timeline and remember it in c. Out of
 * line, so that a hit needs no stack frame. */
__attribute__((noinline)) static int tl_of_miss(void *stream, int per_thread, uint32_t thread,
                                                int device, tl_cache_ent *c) {
  int s = tl_find(stream, per_thread, thread, device);
  if (s >= 0)
    *c = (tl_cache_ent){stream, thread, device, per_thread, s, g_tl_epoch};
  return s;
}

static inline int tl_of(void *stream, int per_thread, uint32_t thread, int device) {
  tl_cache_ent *c = &g_tl_cache[((uintptr_t)stream >> 4 ^ (uintptr_t)stream >> 12) % TL_CACHE];
  if (c->epoch == g_tl_epoch && c->stream == stream && c->per_thread == per_thread &&
      c->thread == thread && c->device == device)
    return c->tl;
  return tl_of_miss(stream, per_thread, thread, device, c);
}

/* The timeline of a stream argument; creates it on first sight. */
static int tl_find(void *stream, int per_thread, uint32_t thread, int device) {
  tl_kind kind;
  uintptr_t key;
  if (stream == STREAM_LEGACY || (stream == NULL && !per_thread)) {
    kind = TL_LEGACY;
    key = (uintptr_t)(unsigned)device << 4 | 1;
  } else if (stream == STREAM_PER_THREAD || stream == NULL) {
    kind = TL_PER_THREAD;
    key = ((uintptr_t)thread << 32 | (unsigned)device) << 4 | 2;
  } else {
    kind = TL_UNKNOWN;
    key = (uintptr_t)stream;
  }
  size_t h = handle_hash((void *)key, TL_HINTS);
  int hint = g_tl_hint[h];
  if (hint > 0 && hint < g_ntl && tl_is(hint, kind, stream, thread, device)) return hint;
  for (int i = 1; i < g_ntl; i++)
    if (tl_is(i, kind, stream, thread, device)) {
      g_tl_hint[h] = (int16_t)i;
      return i;
    }
  if (kind == TL_UNKNOWN) {
    const sreg_slot *r = sreg_find(stream);
    if (r) {
      kind = r->kind;
      device = r->device;
    }
  }
  int i = tl_new(kind, (kind == TL_LEGACY || kind == TL_PER_THREAD) ? NULL : stream, device,
                 thread);
  if (i > 0) g_tl_hint[h] = (int16_t)i;
  return i;
}

static inline int tl_of_ev(const a2a_event *ev) {
  return tl_of(ev->stream, ev->per_thread, ev->thread, dev_of(ev));
}

/* The host enqueues work on timeline s: apply the implicit edges. */
__attribute__((noinline)) static void enqueue_edges_slow(int s) {
  timeline *t = &g_tl[s];
  if (t->host_ver != g_host_ver) { /* else t holds the host clock already */
    vc_join(t->vc, g_tl[HOST_TL].vc);
    t->host_ver = g_host_ver;
  }
  if (t->kind == TL_LEGACY) {
    for (int i = 1; i < g_ntl; i++)
      if (i != s && is_blocking_kind(g_tl[i].kind) && dev_match(g_tl[i].device, t->device))
        vc_join(t->vc, g_tl[i].vc);
  } else if (is_blocking_kind(t->kind)) {
    for (int i = 1; i < g_ntl; i++)
      if (g_tl[i].kind == TL_LEGACY && dev_match(g_tl[i].device, t->device))
        vc_join(t->vc, g_tl[i].vc);
  }
}

/* enqueue_edges_slow's common case inline: a non-blocking stream (no
 * edge to or from the legacy stream) that holds the host clock already has
 * no edge to apply. */
static inline __attribute__((always_inline)) void enqueue_edges(int s) {
  const timeline *t = &g_tl[s];
  if (t->host_ver == g_host_ver && t->kind == TL_NONBLOCKING) return;
  enqueue_edges_slow(s);
}

static uint32_t tick(int s) { return ++g_tl[s].vc[s]; }

static void ring_expire(void);

/* The host waits for everything enqueued on the streams of device dev. */
static void host_join_device(int dev) {
  for (int i = 1; i < g_ntl; i++)
    if (dev_match(g_tl[i].device, dev)) host_join_tl(i);
  ring_expire();
}

/* Start or end capturing on timeline s (origin: the capture's origin). */
static void set_capturing(int s, bool on, int origin) {
  if (g_tl[s].capturing == on) return;
  g_tl[s].capturing = on;
  g_tl[s].cap_origin = on ? origin : 0;
  if (on) {
    atomic_fetch_add_explicit(&g_ncapture, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_copy_locked, 1, memory_order_relaxed);
  } else {
    atomic_fetch_sub_explicit(&g_ncapture, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&g_copy_locked, 1, memory_order_relaxed);
  }
}

/* ------------------------------------------------------------------ */
/* CUDA events: open addressing on the handle, backward-shift deletion. */

static size_t ev_hash(void *h) { return handle_hash(h, g_ev_slots); }

/* The table at 3/4 load doubles (g_mu held; no slot pointer outlives the
 * section that found it): PyTorch keeps an event per operation alive until
 * its watchdog retires the work, and a loop of thousands of small
 * collectives between two of its polls has that many live (QA: 3,072
 * disabled the analyzer on a correct program). False when the table is at
 * EV_SLOTS_MAX (or memory is short): the analyzer then disables itself - a
 * forgotten event's edges would be lost, and lost edges mean false
 * reports. */
static bool ev_grow(void) {
  size_t n = g_ev_slots * 2;
  if (n > EV_SLOTS_MAX) return false;
  ev_slot *t = calloc(n, sizeof *t);
  if (!t) return false;
  ev_slot *old = g_ev;
  size_t on = g_ev_slots;
  g_ev = t;
  g_ev_slots = n;
  for (size_t j = 0; j < on; j++) {
    if (!old[j].handle) continue;
    size_t i = ev_hash(old[j].handle);
    while (g_ev[i].handle) i = (i + 1) & (n - 1);
    g_ev[i] = old[j];
  }
  free(old);
  return true;
}

/* ev_find's probe loop from its home slot i on (out of line: see ev_find). */
__attribute__((noinline)) static ev_slot *ev_find_probe(void *h, bool create, size_t i) {
  for (size_t n = 0; n < g_ev_slots; n++, i = (i + 1) & (g_ev_slots - 1)) {
    if (g_ev[i].handle == h) return &g_ev[i];
    if (g_ev[i].handle == NULL) {
      if (!create) return NULL;
      if (g_nev >= g_ev_slots * 3 / 4) {
        if (ev_grow()) return ev_find_probe(h, true, ev_hash(h)); /* (absent: probed to an empty slot) */
        char why[160];
        snprintf(why, sizeof why,
                 "more live CUDA events than it tracks (%zu; each event it saw recorded and not "
                 "yet destroyed is one)", g_nev);
        disable_self(why);
        return NULL;
      }
      g_nev++;
      memset(&g_ev[i], 0, sizeof g_ev[i]);
      g_ev[i].handle = h;
      return &g_ev[i];
    }
  }
  return NULL;
}

/* The slot of event handle h (create: made on first sight), or NULL. The
 * probe loop's first iteration inline but for the insertion: an event that
 * sits in its home slot (the common case: a program records and waits on
 * a handful of events) is found without the call, and a lookup that does
 * not create stops at an empty home slot. Exact: the loop's first
 * iteration answers the same (a handle is in the table at most once);
 * anything else runs the whole loop from the home slot. (create is a
 * constant at each call: the second test folds away for a record.) */
static inline __attribute__((always_inline)) ev_slot *ev_find(void *h, bool create) {
  size_t i = ev_hash(h);
  void *at = g_ev[i].handle;
  if (at == h) return &g_ev[i];
  if (at == NULL && !create) return NULL;
  return ev_find_probe(h, create, i);
}

static void ev_remove(void *h) {
  size_t i = ev_hash(h);
  for (size_t n = 0; n < g_ev_slots; n++, i = (i + 1) & (g_ev_slots - 1)) {
    if (g_ev[i].handle == NULL) return;
    if (g_ev[i].handle == h) break;
  }
  if (g_ev[i].handle != h) return;
  g_ev[i].handle = NULL;
  g_nev--;
  /* Backward-shift the rest of the cluster. */
  size_t hole = i;
  for (size_t j = (i + 1) & (g_ev_slots - 1); g_ev[j].handle; j = (j + 1) & (g_ev_slots - 1)) {
    size_t home = ev_hash(g_ev[j].handle);
    /* Move j into the hole if its home is not in (hole, j]. */
    bool in_between = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
    if (!in_between) {
      g_ev[hole] = g_ev[j];
      g_ev[j].handle = NULL;
      hole = j;
    }
  }
}

/* ------------------------------------------------------------------ */
/* Stack ring (stacks of communication operations). */

static int stack_put(const a2a_stack *st, uint32_t *gen) {
  if (!st || st->n <= 0) return -1;
  uint32_t k = g_stack_next++;
  stack_slot *s = &g_stacks[k % STACK_RING];
  s->gen = k + 1;
  s->st = *st;
  *gen = s->gen;
  return (int)(k % STACK_RING);
}

static const a2a_stack *stack_get(int slot, uint32_t gen) {
  if (slot < 0 || g_stacks[slot].gen != gen) return NULL;
  return &g_stacks[slot].st;
}

/* ------------------------------------------------------------------ */
/* Ranges: disjoint intervals in g_rng, sorted through g_order. */

static void pages_clear(void);
static void rng_grew(void);

static void bounds_update(void) {
  if (g_nr == 0) {
    g_min_lo = UINTPTR_MAX;
    g_max_hi = 0;
    pages_clear();
    return;
  }
  /* Ranges are disjoint and sorted by lo: the last ends last. */
  g_min_lo = g_rng[g_order[0]].lo;
  g_max_hi = g_rng[g_order[g_nr - 1]].hi;
}

/* First order position whose range ends after p (ranges are disjoint, so
 * sorted by lo is also sorted by hi). */
static size_t pos_after(uintptr_t p) {
  size_t lo = 0, hi = g_nr;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (g_rng[g_order[mid]].hi <= p) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static range *range_containing(uintptr_t p) {
  if (p < g_min_lo || p >= g_max_hi) return NULL;
  size_t k = pos_after(p);
  if (k < g_nr && g_rng[g_order[k]].lo <= p) return &g_rng[g_order[k]];
  return NULL;
}

/* The pool's free slots (a stack) and the live ranges in least recently
 * used order (a binary min-heap of (last_use, slot), indexed by slot):
 * taking a slot and forgetting the least recently used range cost
 * O(log n), where two walks of the whole pool per new range cost ~55,000
 * instructions per operation once the pool was full - a client cycling
 * through more buffers than MAX_RANGES does that on every call (nccl-tests
 * moves its buffers by one message size every iteration: 1 KiB messages
 * in 1 MiB buffers are 2,048 ranges; on an H200 its 1 KiB rows took twice
 * as long under the shim). A live range's last_use only grows (every
 * ++g_use, a merge's maximum), so a heap key may lag behind it: keys are
 * exact when a range enters the heap, and the top is brought up to date
 * before it is taken (evict_lru): amortized O(log n) per use of a range,
 * though one eviction may refresh many lagging keys. Ties go to the lower
 * slot (the old walk forgot the lower address: either forgets a range of
 * the same recency). Under g_mu. */
_Static_assert(MAX_RANGES <= INT16_MAX, "g_lrh_pos holds heap indexes as int16_t");
static uint16_t g_free[MAX_RANGES]; /* free pool slots, a stack */
static size_t g_nfree;
static struct { uint64_t key; uint16_t slot; } g_lrh[MAX_RANGES];
static int16_t g_lrh_pos[MAX_RANGES]; /* slot -> heap index, -1 absent */
static size_t g_nlrh;

static bool lrh_less(size_t a, size_t b) {
  return g_lrh[a].key < g_lrh[b].key || (g_lrh[a].key == g_lrh[b].key && g_lrh[a].slot < g_lrh[b].slot);
}
static void lrh_swap(size_t a, size_t b) {
  __typeof__(g_lrh[0]) t = g_lrh[a];
  g_lrh[a] = g_lrh[b];
  g_lrh[b] = t;
  g_lrh_pos[g_lrh[a].slot] = (int16_t)a;
  g_lrh_pos[g_lrh[b].slot] = (int16_t)b;
}
static void lrh_up(size_t i) {
  while (i > 0 && lrh_less(i, (i - 1) / 2)) {
    lrh_swap(i, (i - 1) / 2);
    i = (i - 1) / 2;
  }
}
static void lrh_down(size_t i) {
  for (;;) {
    size_t m = i, l = 2 * i + 1, r = l + 1;
    if (l < g_nlrh && lrh_less(l, m)) m = l;
    if (r < g_nlrh && lrh_less(r, m)) m = r;
    if (m == i) return;
    lrh_swap(i, m);
    i = m;
  }
}
/* Slot enters the heap with its range's last_use (a new or split range). */
static void lrh_add(int slot) {
  size_t i = g_nlrh++;
  g_lrh[i].key = g_rng[slot].last_use;
  g_lrh[i].slot = (uint16_t)slot;
  g_lrh_pos[slot] = (int16_t)i;
  lrh_up(i);
}
/* Slot's range left the pool: out of the heap, onto the free stack. */
static void slot_release(int slot) {
  int16_t i = g_lrh_pos[slot];
  if (i >= 0) {
    g_lrh_pos[slot] = -1;
    if ((size_t)i != --g_nlrh) { /* the last entry takes its place */
      uint16_t moved = g_lrh[g_nlrh].slot;
      g_lrh[i] = g_lrh[g_nlrh];
      g_lrh_pos[moved] = i;
      lrh_up((size_t)i);
      lrh_down((size_t)g_lrh_pos[moved]);
    }
  }
  g_free[g_nfree++] = (uint16_t)slot;
}
/* Every slot free, the heap empty (initialization). The stack hands out
 * the lowest slot first. */
static void pool_reset(void) {
  g_nlrh = 0;
  g_nfree = 0;
  for (int i = MAX_RANGES - 1; i >= 0; i--) {
    g_lrh_pos[i] = -1;
    g_free[g_nfree++] = (uint16_t)i;
  }
}

static void order_remove_at(size_t k) {
  g_rng[g_order[k]].live = false;
  slot_release(g_order[k]);
  memmove(&g_order[k], &g_order[k + 1], (g_nr - k - 1) * sizeof g_order[0]);
  g_nr--;
}

/* A free pool slot (not referenced by g_order), or -1. */
static int pool_free_slot(void) {
  return g_nfree ? g_free[--g_nfree] : -1;
}

/* Forget the least recently used range (callers: g_nr > 0). Ranges are
 * never empty (range_for_comm), so pos_after finds the victim by its lo;
 * were the heap ever out of step with the order, the lowest range goes
 * instead, so the caller's loop always progresses. */
static void evict_lru(void) {
  while (g_nlrh && g_lrh[0].key != g_rng[g_lrh[0].slot].last_use) { /* lagging: update */
    g_lrh[0].key = g_rng[g_lrh[0].slot].last_use;
    lrh_down(0);
  }
  size_t k = g_nlrh ? pos_after(g_rng[g_lrh[0].slot].lo) : 0;
  if (k >= g_nr || (g_nlrh && g_order[k] != g_lrh[0].slot)) k = 0;
  order_remove_at(k);
}

/* Insert a new range [lo,hi) that overlaps nothing; returns it. */
static range *range_insert(uintptr_t lo, uintptr_t hi) {
  if (g_nr >= MAX_RANGES) evict_lru();
  int slot = pool_free_slot();
  if (slot < 0) return NULL;
  range *r = &g_rng[slot];
  memset(r, 0, sizeof *r);
  r->lo = lo;
  r->hi = hi;
  r->live = true;
  r->last_use = ++g_use; /* used now (its caller's access makes it newer): an exact heap key */
  lrh_add(slot);
  size_t k = pos_after(lo);
  memmove(&g_order[k + 1], &g_order[k], (g_nr - k) * sizeof g_order[0]);
  g_order[k] = (uint16_t)slot;
  g_nr++;
  return r;
}

static void acc_add(range *r, const access *a, const uint32_t *vc_now);

/* Split the range at order position k at address at (strictly inside it):
 * both parts keep its whole history (every access of the old range did
 * touch both). False when no pool slot is free. */
static bool range_split(size_t k, uintptr_t at) {
  if (g_nr >= MAX_RANGES) return false;
  int slot = pool_free_slot();
  if (slot < 0) return false;
  range *r = &g_rng[g_order[k]], *n = &g_rng[slot];
  *n = *r;
  n->lo = at;
  r->hi = at;
  lrh_add(slot);
  memmove(&g_order[k + 2], &g_order[k + 1], (g_nr - k - 1) * sizeof g_order[0]);
  g_order[k + 1] = (uint16_t)slot;
  g_nr++;
  return true;
}

/* Range hints: the pool slot of the range a communication access of
 * exactly [lo,hi) last used, keyed by lo. A hint is only a guess: it is
 * taken when that slot still holds a live range with exactly those bounds,
 * which is then the range range_for_comm would return (ranges are disjoint:
 * no split, no merge), found without the binary search. Not taken while
 * the pool is nearly full (range_for_comm evicts first then). */
#define RNG_HINTS 256
static uint16_t g_rng_hint[RNG_HINTS]; /* slot + 1; 0 none */

static size_t rng_hint_of(uintptr_t lo) { return handle_hash((void *)lo, RNG_HINTS); }

static range *range_hinted(uintptr_t lo, uintptr_t hi) {
  if (g_nr + 3 > MAX_RANGES) return NULL;
  unsigned h = g_rng_hint[rng_hint_of(lo)];
  if (!h) return NULL;
  range *r = &g_rng[h - 1];
  return r->live && r->lo == lo && r->hi == hi ? r : NULL;
}

static void range_hint_set(const range *r) {
  g_rng_hint[rng_hint_of(r->lo)] = (uint16_t)(r - g_rng + 1);
}

/* The range a communication access [lo,hi) uses: an exact match, a new
 * range, or the union of every range overlapping [lo,hi) (histories merged;
 * a merged history is conservative, see docs/design.md). A range that
 * reaches past lo or hi is split there first, so the operation's range is
 * exactly [lo,hi): the caching allocator splits and reuses blocks, and an
 * operation on a new tensor inside a block an earlier operation used whole
 * must not make accesses to the block's other tensors look like accesses
 * to this operation's buffer. (When the pool is full the split is skipped
 * and the union is wider: conservative.) */
static range *range_for_comm(uintptr_t lo, uintptr_t hi, bool *fresh, bool *exact) {
  /* A buffer that wraps past the end of the address space (a count that
   * overflows lo + bytes) is not tracked: an inverted range would break
   * the order, which bounds_update and the lookups rely on. */
  if (hi <= lo) return NULL;
  while (g_nr > 0 && g_nr + 3 > MAX_RANGES) evict_lru(); /* room for 2 splits + 1 insert */
  size_t k = pos_after(lo);
  if (k < g_nr && g_rng[g_order[k]].lo < lo && range_split(k, lo)) k++;
  size_t end = k;
  while (end < g_nr && g_rng[g_order[end]].lo < hi) end++;
  if (end > k && g_rng[g_order[end - 1]].hi > hi) range_split(end - 1, hi);
  *fresh = end == k;
  *exact = false;
  if (end == k) return range_insert(lo, hi);
  if (end == k + 1 && g_rng[g_order[k]].lo == lo && g_rng[g_order[k]].hi == hi) {
    *exact = true; /* (unless a split above made it: then g_nr grew) */
    return &g_rng[g_order[k]];
  }
  /* Merge ranges k..end-1 with [lo,hi) into the first one. */
  range *r = &g_rng[g_order[k]];
  if (r->lo < lo) lo = r->lo;
  for (size_t i = k + 1; i < end; i++) {
    range *o = &g_rng[g_order[i]];
    o->live = false; /* merged into r, dropped from g_order below */
    slot_release(g_order[i]);
    for (int j = 0; j < o->nacc; j++) acc_add(r, &o->acc[j], NULL);
    if (o->last_use > r->last_use) r->last_use = o->last_use;
  }
  if (g_rng[g_order[end - 1]].hi > hi) hi = g_rng[g_order[end - 1]].hi;
  r->lo = lo;
  r->hi = hi;
  memmove(&g_order[k + 1], &g_order[end], (g_nr - end) * sizeof g_order[0]);
  g_nr -= end - k - 1;
  return r;
}

/* ------------------------------------------------------------------ */
/* Launch prefilter */

static size_t page_bit(uintptr_t p) { return (size_t)(p >> PAGE_SHIFT) & (PAGE_BITS - 1); }

/* Under g_mu, for a range just inserted or widened (range_for_comm did
 * one or the other exactly when it answers !exact): its page bits, then
 * g_rng_gen advanced (see "Known misses"). */
static void pages_mark(uintptr_t lo, uintptr_t hi) {
  uintptr_t first = lo >> PAGE_SHIFT, last = (hi - 1) >> PAGE_SHIFT;
  if (last - first >= PAGE_BITS) last = first + PAGE_BITS - 1;
  for (uintptr_t pg = first; pg <= last; pg++) {
    size_t b = (size_t)pg & (PAGE_BITS - 1);
    atomic_fetch_or_explicit(&g_pages[b / 64], 1ull << (b % 64), memory_order_relaxed);
  }
  rng_grew();
}

static void pages_clear(void) {
  for (size_t i = 0; i < PAGE_BITS / 64; i++)
    atomic_store_explicit(&g_pages[i], 0, memory_order_relaxed);
}

static bool page_maybe(uintptr_t p) {
  size_t b = page_bit(p);
  return (atomic_load_explicit(&g_pages[b / 64], memory_order_relaxed) >> (b % 64)) & 1;
}

/* Whether no tracked range can overlap [lo, lo+n) (lock-free; a stale or
 * hashed-together bit only answers false). Spans over 16 pages answer
 * false. */
static bool span_pages_clear(uintptr_t lo, size_t n) {
  if (n == 0) return true;
  uintptr_t first = lo >> PAGE_SHIFT, last = (lo + n - 1) >> PAGE_SHIFT;
  if (last < first || last - first >= 16) return false;
  for (uintptr_t pg = first; pg <= last; pg++)
    if (page_maybe(pg << PAGE_SHIFT)) return false;
  return true;
}

/* Known misses. The page filter answers "maybe" for every small buffer
 * that shares a 2 MiB page with a tracked range (allocators pack small
 * blocks together: PyTorch's caching allocator cuts them from 2 MiB
 * segments, the simulator's from its pool), and each launch passed one
 * would take the lock to find nothing. So each thread keeps the last
 * LAUNCH_MISSES parameter words that the locked lookup placed in no range,
 * stamped with g_rng_gen, which grows (under g_mu) whenever a range is
 * inserted or widened - the only changes that can put a missed word in a
 * range (a split keeps the union; removals only shrink it) -, right after
 * the range's page bits are set (pages_mark; a release store, so that a
 * load of a generation with acquire sees every bit set before it: see
 * "Filtered-out repeats"), and in hb_init (the plans change). A word stamped
 * with the current generation is a miss for sure. A range inserted by
 * another thread concurrently with the launch is a race between the two
 * calls that the page filter's lock-free read has too; once that insert
 * happens-before the launch (any synchronization of the two threads), the
 * launch's load sees the new generation. */
#define LAUNCH_MISSES 8
static _Atomic uint64_t g_rng_gen;
static _Thread_local struct {
  uint64_t gen;
  uint64_t n; /* notes since gen was set (never wraps) */
  uintptr_t w[LAUNCH_MISSES];
} t_miss;
static void launch_skip_forget(void); /* see "Filtered-out repeats" */

static void rng_grew(void) {
  atomic_store_explicit(&g_rng_gen, atomic_load_explicit(&g_rng_gen, memory_order_relaxed) + 1,
                        memory_order_release);
}

static bool known_miss(uintptr_t w, uint64_t gen) {
  if (t_miss.gen != gen) return false;
  unsigned n = t_miss.n < LAUNCH_MISSES ? (unsigned)t_miss.n : LAUNCH_MISSES;
  for (unsigned i = 0; i < n; i++)
    if (t_miss.w[i] == w) return true;
  return false;
}

/* Under g_mu: w is in no range now. */
static void note_miss(uintptr_t w) {
  uint64_t gen = atomic_load_explicit(&g_rng_gen, memory_order_relaxed);
  if (t_miss.gen != gen) {
    t_miss.gen = gen;
    t_miss.n = 0;
  }
  t_miss.w[t_miss.n++ % LAUNCH_MISSES] = w;
  launch_skip_forget();
}

/* A launch's candidate words: the parameter words that the lock-free
 * filter could not rule out (not 0, page bit set, not a known miss), each
 * run of equal consecutive words once. The locked pass (on_launch_cands)
 * looks only at these: a word the filter ruled out is in no range as of
 * the filter's reads (page bits, g_rng_gen), and a range inserted or
 * widened after those reads by another thread is an insert concurrent with
 * this launch, unordered with it - the race the filter already accepts when
 * it rules out every word and the launch takes no lock at all (see "Known
 * misses"). n > LAUNCH_CANDS: more candidates than fit, every word is
 * scanned under the lock (on_launch). */
#define LAUNCH_CANDS 8
typedef struct launch_cands {
  int n;
  uintptr_t w[LAUNCH_CANDS];
} launch_cands;

/* Scan plans. The words a launch's parameters are scanned at - for each
 * parameter p < nparams of size >= 8, the byte offsets 0, 8, ... below
 * min(size[p], PARAM_SCAN_MAX) - are a function of the kernel's layout
 * (a2a_kparams' nparams and size[], from the runtime's parameter
 * information) alone, so each thread keeps them per kernel function in a
 * small direct-mapped cache, with the function's layout: the filter then
 * reads the words instead of walking every parameter, and a launch of a
 * cached kernel does not ask a2a_kernel_params. Its answer for a function
 * is the same entry, immutable once published, until the layouts are
 * reset, which happens only right before hb_init (the dispatcher's
 * init_analyzers), which bumps g_plan_epoch: an entry keyed on the
 * function and the epoch holds the function's layout and its plan. A NULL
 * layout (the cache is full) is not kept, as a2a_kernel_params does not
 * keep it. A kernel with more than PLAN_WORDS words has no plan (n < 0):
 * the filter walks its parameters. */
#define PLAN_WORDS 8
#define PLAN_SLOTS 16 /* power of two */
typedef struct scan_plan {
  const void *func;
  uint64_t epoch;
  const a2a_kparams *f;
  int n;
  uint8_t param[PLAN_WORDS];
  uint16_t off[PLAN_WORDS];
} __attribute__((aligned(64))) scan_plan; /* a power of two: the index is a shift */
static _Atomic uint64_t g_plan_epoch;
static _Thread_local scan_plan t_plan[PLAN_SLOTS];

static __attribute__((noinline)) const scan_plan *plan_make(scan_plan *pl, const void *func,
                                                            uint64_t epoch) {
  const a2a_kparams *f = a2a_kernel_params(func);
  if (!f) return NULL;
  int n = 0;
  for (int p = 0; p < f->nparams && n >= 0; p++) {
    size_t sz = f->size[p];
    if (sz < sizeof(uint64_t)) continue;
    if (sz > PARAM_SCAN_MAX) sz = PARAM_SCAN_MAX;
    for (size_t off = 0; off + sizeof(uint64_t) <= sz; off += sizeof(uint64_t)) {
      if (n == PLAN_WORDS) {
        n = -1;
        break;
      }
      pl->param[n] = (uint8_t)p;
      pl->off[n++] = (uint16_t)off;
    }
  }
  pl->n = n;
  pl->f = f;
  pl->func = func;
  pl->epoch = epoch;
  return pl;
}

/* The kernel's plan and layout, or NULL when it has no layout. */
static inline const scan_plan *plan_of(const void *func) {
  uint64_t epoch = atomic_load_explicit(&g_plan_epoch, memory_order_relaxed);
  scan_plan *pl = &t_plan[((uintptr_t)func >> 4) & (PLAN_SLOTS - 1)];
  if (pl->func == func && pl->epoch == epoch && func) return pl;
  return plan_make(pl, func, epoch);
}

/* A launch's plan words, for the memos of "Repeated launches" and
 * "Filtered-out repeats": the function, its plan (a copy: its t_plan slot
 * may be taken by another function; the plan of a function changes only
 * with g_plan_epoch, in hb_init, which advances g_lock_ver and g_rng_gen,
 * the memos' stamps) and the launch's words at it (0 for a NULL
 * parameter, which the filter skips as it skips a 0 word). */
typedef struct launch_key {
  const void *func;
  uint8_t n; /* 0 .. PLAN_WORDS: see key_words_match */
  uint8_t param[PLAN_WORDS];
  uint16_t off[PLAN_WORDS];
  uint64_t w[PLAN_WORDS];
} launch_key;

static inline uint64_t plan_word(const a2a_event *ev, uint8_t param, uint16_t off) {
  const unsigned char *bytes = ev->u.launch.args[param];
  uint64_t w = 0;
  if (bytes) memcpy(&w, bytes + off, sizeof w);
  return w;
}

/* The key of a launch of a kernel with plan pl (pl->n >= 0). */
static void key_take(launch_key *k, const a2a_event *ev, const scan_plan *pl) {
  for (int i = 0; i < pl->n; i++) {
    k->param[i] = pl->param[i];
    k->off[i] = pl->off[i];
    k->w[i] = plan_word(ev, pl->param[i], pl->off[i]);
  }
  k->n = (uint8_t)pl->n; /* a plan's n >= 0 (launch_skip_note, launch_memo_note) */
  k->func = ev->u.launch.func;
}

/* Whether a launch of k->func has k's words: the loop over i < n,
 * unrolled from the last word down and entered at n (a jump instead of a
 * test of i per word; the order of the compares does not change the
 * answer), where n is k->n as the caller reads it: k->n itself or k->n &
 * 15, the same value (k->n is a uint8_t in 0 .. PLAN_WORDS: key_take
 * takes a plan's n, never -1; a key never taken is all zero). Counts 9 ..
 * 15 never occur; they enter at the last word, so that a count masked
 * with 15 has a case for each of its values and the jump table needs no
 * bounds test; past 15 is unreachable. (Why the mask: GCC 12 drops the
 * bounds test of an unreachable default in one inlined copy of the switch
 * per function and keeps it - a compare and a second read of the count -
 * in the other; launch_skip's copy, the one a run of filtered-out
 * launches takes, gets no test, and launch_memo_match's masked count
 * costs an `and` instead of the test.) */
static inline __attribute__((always_inline)) bool key_words_match(const launch_key *k,
                                                                  const a2a_event *ev,
                                                                  unsigned n) {
#define KEY_WORD(i)                                                           \
  case (i) + 1:                                                               \
    if (plan_word(ev, k->param[i], k->off[i]) != k->w[i]) return false;       \
    __attribute__((fallthrough));
  _Static_assert(PLAN_WORDS == 8, "key_words_match has a case per plan word");
  switch (n) {
  case PLAN_WORDS + 1 ... 15:
    KEY_WORD(7)
    KEY_WORD(6)
    KEY_WORD(5)
    KEY_WORD(4)
    KEY_WORD(3)
    KEY_WORD(2)
    KEY_WORD(1)
    KEY_WORD(0)
  case 0:
    break;
  default:
    __builtin_unreachable();
  }
#undef KEY_WORD
  return true;
}

/* Whether any 8-byte word of the launch's parameters may point into a
 * tracked range (lock-free; false positives only), as of generation gen of
 * g_rng_gen, loaded (acquire) before; the candidates go to *c. A word equal
 * to the word before it has that word's answer (the filter's inputs do not
 * change within the scan; a repeated candidate would find the same range):
 * a kernel passed the same buffer twice, in place, is filtered once. The
 * previous word starts at 0, which is never a candidate. */
#define FILTER_WORD(w)                                                              \
  do {                                                                              \
    if ((w) == prev) break;                                                         \
    prev = (w);                                                                     \
    if (!page_maybe((uintptr_t)(w)) || known_miss((uintptr_t)(w), gen)) break;      \
    if (n == LAUNCH_CANDS) {                                                        \
      c->n = LAUNCH_CANDS + 1;                                                      \
      return true;                                                                  \
    }                                                                               \
    c->w[n++] = (uintptr_t)(w);                                                     \
  } while (0)

static inline __attribute__((always_inline)) bool launch_filter(const a2a_event *ev,
                                                                const scan_plan *pl,
                                                                uint64_t gen, launch_cands *c) {
  uint64_t prev = 0;
  int n = 0;
  void *const *args = ev->u.launch.args;
  const a2a_kparams *f = pl->f;
  if (pl->n >= 0) {
    for (int i = 0; i < pl->n; i++) {
      const unsigned char *bytes = args[pl->param[i]];
      if (!bytes) continue;
      uint64_t w;
      memcpy(&w, bytes + pl->off[i], sizeof w);
      FILTER_WORD(w);
    }
  } else {
    for (int p = 0; p < f->nparams; p++) {
      const unsigned char *bytes = args[p];
      size_t sz = f->size[p];
      if (!bytes || sz < sizeof(uint64_t)) continue;
      if (sz > PARAM_SCAN_MAX) sz = PARAM_SCAN_MAX;
      for (size_t off = 0; off + sizeof(uint64_t) <= sz; off += sizeof(uint64_t)) {
        uint64_t w;
        memcpy(&w, bytes + off, sizeof w);
        FILTER_WORD(w);
      }
    }
  }
  c->n = n;
  return n != 0;
}
#undef FILTER_WORD

/* Filtered-out repeats. A kernel launched over and over on buffers that are
 * not tracked (the MoE step's hundred launches on its activations) is
 * ruled out by the filter each time. The filter's answer depends only on
 * the plan words, the page bits, g_rng_gen and the thread's known misses;
 * so each thread keeps the key of its last launch the filter ruled out
 * (with a plan of n >= 0 words), stamped with the generation the filter
 * loaded, until the thread notes a known miss. A launch with that key
 * while the stamp is unchanged and the memo kept would be ruled out again,
 * and is without the filter:
 * - page bits are set only by pages_mark, which then advances g_rng_gen
 *   with release; the filter loaded the generation with acquire before
 *   reading the bits, so it saw every bit set before that generation, and
 *   a bit set after it comes with a newer one. Bits cleared (the last
 *   range gone) only rule out more.
 * - the known misses the answer used stay while no note is made (t_miss
 *   changes only in note_miss, which forgets the memo: its stamp 0, which
 *   no load of g_rng_gen gives after hb_init; the memo's test then needs
 *   nothing of t_miss).
 * - the plan changes only in hb_init, which advances g_rng_gen.
 * A range inserted by another thread concurrently with the launch is the
 * race the filter itself accepts (see "Known misses"); once the insert
 * happens-before the launch, the launch's load sees the newer generation.
 * The memo is apart from the repeat memo ("Repeated launches"), so that
 * launches on an untracked buffer interleaved with repeats on a tracked
 * one keep both. (It is t_lmemo.skip, below: one thread-local for both
 * memos, whose address a launch loads once.) */
typedef struct launch_skip_memo {
  launch_key key;    /* none yet: all zero, and gen 0 is past (hb_init) */
  uint64_t gen;   /* g_rng_gen as the filter loaded it; 0: forgotten */
} launch_skip_memo;

/* ------------------------------------------------------------------ */
/* Reporting */

/* Findings are built and handed to a2a_report only after g_mu is released:
 * formatting, symbolizing (the runtime's report lock and the loader's) and the sink's own
 * locking and file I/O stay out of the analyzer's critical section. Under
 * the lock, a conflict is queued with a snapshot of everything the message
 * needs; the handler that took the lock flushes the queue after unlocking. */

typedef struct tl_snap {
  tl_kind kind;
  int device;
  uint32_t thread;
  void *handle;
} tl_snap;

typedef struct queued {
  a2a_check_id check;
  uintptr_t lo, hi;
  access prev, now;
  tl_snap prev_tl, now_tl;
  bool has_prev_stack;
  a2a_stack prev_stack;
  const a2a_stack *now_stack; /* lives in the caller's pending list */
  bool here;                  /* now is the reporting thread's current call
                                 (not a drain of deferred work: g_draining) */
} queued;

#define REPORT_Q 8
typedef struct report_q {
  int n;
  queued q[REPORT_Q];
} report_q;

/* The queue of the handler running on this thread (NULL outside one). */
static _Thread_local report_q *tls_q;
/* Under g_mu: hb_drains is applying other calls' deferred work (possibly
 * other threads'), so a finding it queues is not about the reporting
 * thread's current call (queued.here). */
static bool g_draining;

static tl_snap snap_tl(int tl) {
  const timeline *t = &g_tl[tl];
  return (tl_snap){t->kind, t->device, t->thread, t->handle};
}

static void describe_tl(char *buf, size_t cap, const tl_snap *t) {
  switch (t->kind) {
  case TL_HOST: snprintf(buf, cap, "the host"); break;
  case TL_LEGACY: snprintf(buf, cap, "the legacy default stream (device %d)", t->device); break;
  case TL_PER_THREAD:
    snprintf(buf, cap, "the per-thread default stream of thread %u", (unsigned)t->thread);
    break;
  case TL_BLOCKING: snprintf(buf, cap, "stream %p (blocking)", t->handle); break;
  case TL_NONBLOCKING: snprintf(buf, cap, "stream %p (non-blocking)", t->handle); break;
  case TL_UNKNOWN: snprintf(buf, cap, "stream %p", t->handle); break;
  }
}

static const char *tl_kind_name(const tl_snap *t) {
  static const char *n[] = {"host", "legacy-default", "per-thread-default", "blocking",
                            "non-blocking", "unknown"};
  return n[t->kind];
}

/* A call site as the runtime's symbolizer prints it (called only while
 * flushing the report queue, outside g_mu). */
static void symbolize(char *buf, size_t cap, const void *pc) {
  a2a_hostsvc->site_text(pc, buf, cap);
}

static void describe_acc(char *buf, size_t cap, const access *a) {
  const char *w = a->what ? a->what : "?";
  switch (a->kind) {
  case AK_COMM:
    if (a->nops > 1) snprintf(buf, cap, "%s (%u grouped operations)", w, (unsigned)a->nops);
    else snprintf(buf, cap, "%s", w);
    break;
  case AK_KERNEL: snprintf(buf, cap, "kernel %s", w); break;
  case AK_HOSTCOPY: snprintf(buf, cap, "the host through %s", w); break;
  default: snprintf(buf, cap, "%s", w); break;
  }
}

static const char *acc_verb(const access *a) {
  if (a->kind == AK_FREE) return "frees";
  if (a->kind == AK_KERNEL) return (a->flags & F_WRITE) ? "may read and write" : "may read";
  if ((a->flags & (F_READ | F_WRITE)) == (F_READ | F_WRITE)) return "reads and writes";
  return (a->flags & F_WRITE) ? "writes" : "reads";
}

/* One side of a finding. The earlier side carries the stack of a
 * communication operation (the later side's stack is the finding's own). */
static void json_side(a2a_json *j, const char *key, const access *a, const tl_snap *t,
                      const a2a_stack *st) {
  char b[200];
  a2a_json_obj_begin(j, key);
  describe_acc(b, sizeof b, a);
  a2a_json_str(j, "what", b);
  a2a_json_str(j, "access", acc_verb(a));
  a2a_json_bool(j, "communication", (a->flags & F_COMM) != 0);
  a2a_json_str(j, "stream_kind", tl_kind_name(t));
  /* The handle as the application passes it: 0 for the legacy default
   * stream, cudaStreamPerThread (0x2) for the per-thread one. */
  void *handle = t->handle;
  if (t->kind == TL_LEGACY || t->kind == TL_HOST) handle = NULL;
  else if (t->kind == TL_PER_THREAD) handle = STREAM_PER_THREAD;
  a2a_json_ptr(j, "stream", handle);
  describe_tl(b, sizeof b, t);
  a2a_json_str(j, "timeline", b);
  a2a_json_ptr(j, "site", a->site);
  symbolize(b, sizeof b, a->site);
  a2a_json_str(j, "site_symbol", b);
  a2a_json_uint(j, "epoch", a->clk);
  if (a->kind == AK_COMM) {
    const a2a_comm *c = a2a_comm_lookup(a->comm);
    if (c) a2a_json_str(j, "comm", c->name);
  }
  if (st) {
    a2a_json_arr_begin(j, "stack");
    for (int i = 0; i < st->n && i < 32; i++) a2a_json_ptr(j, NULL, st->pc[i]);
    a2a_json_arr_end(j);
  }
  a2a_json_obj_end(j);
}

/* What the earlier access was doing, as seen from the later one. */
static const char *earlier_verb(const access *a) {
  if (a->flags & F_COMM) return (a->flags & F_WRITE) ? "may still be writing" : "may still be reading";
  if (a->kind == AK_KERNEL) return (a->flags & F_WRITE) ? "may have written" : "may have read";
  return (a->flags & F_WRITE) ? "wrote" : "read";
}

static const char *fix_hint(a2a_check_id check) {
  if (check == A2A_CK_STREAM_UNSYNCED_INPUT)
    return "Record an event on the producing stream after the write and make the "
           "communication stream wait for it (cudaStreamWaitEvent) before the operation "
           "(PyTorch: torch.cuda.current_stream().wait_stream(side_stream) before the "
           "collective, or event.wait()).";
  if (check == A2A_CK_STREAM_UNSYNCED_OUTPUT)
    return "Wait for the operation before touching its buffer: make this stream wait on an "
           "event recorded after the operation (work.wait()), or synchronize the host.";
  return "Keep the buffer alive and untouched until the operation is complete: record the "
         "buffer on the communication stream (record_stream) or wait on an event recorded "
         "after the operation before freeing or rewriting it.";
}

/* Under g_mu: queue a conflict (dropped when the queue is full: the sink
 * would count it as a repeat of the same site anyway). */
/* Queues a finding in the calling section's report queue (hb_lock's). Only
 * access_range_slow calls it, always inside such a section: outside one
 * (tls_q NULL) the finding would be dropped. hb_record_wait's section sets
 * up no queue when its drains have nothing to do, which relies on a record
 * or a wait (on_record, on_wait) never reaching access_range_slow: keep it
 * so, or give that path its queue. */
static void report(a2a_check_id check, const range *r, const access *prev,
                   const access *now, const a2a_stack *now_stack) {
  report_q *q = tls_q;
  if (!q || q->n >= REPORT_Q || !a2a_check_on(check)) return;
  queued *e = &q->q[q->n++];
  e->check = check;
  e->lo = r->lo;
  e->hi = r->hi;
  e->prev = *prev;
  e->now = *now;
  e->prev_tl = snap_tl(prev->tl);
  e->now_tl = snap_tl(now->tl);
  const a2a_stack *ps = prev->kind != AK_COMM ? NULL
                        : prev->stk           ? prev->stk
                                              : stack_get(prev->stack, prev->stack_gen);
  e->has_prev_stack = ps != NULL;
  if (ps) e->prev_stack = *ps;
  e->now_stack = now_stack;
  e->here = !g_draining;
}

/* After g_mu is released: format and hand the queued findings to the sink. */
static void flush_reports(report_q *q) {
  for (int i = 0; i < q->n; i++) {
    const queued *e = &q->q[i];
    const access *prev = &e->prev, *now = &e->now;
    const access *op = (now->flags & F_COMM) ? now : prev;
    /* The later access is the call being made (its stack is captured
     * now, on its thread) unless a drain kept its stack: from Python its
     * site is its Python line, as an NCCL call's is, not the libtorch
     * frame every Python line's copy or kernel goes through. */
    const void *now_site = e->now_stack || !e->here ? now->site : a2a_hostsvc->caller_site(now->site);
    /* A race repeated every step is counted without being described again
     * (two call sites symbolized, the message and JSON). */
    if (a2a_report_repeat(e->check, A2A_SEV_ERROR, now_site)) continue;
    char pa[200], pt[120], na[200], nt[120], ps[200], ns[200];
    describe_acc(pa, sizeof pa, prev);
    describe_tl(pt, sizeof pt, &e->prev_tl);
    describe_acc(na, sizeof na, now);
    describe_tl(nt, sizeof nt, &e->now_tl);
    symbolize(ps, sizeof ps, prev->site);
    symbolize(ns, sizeof ns, now_site);
    char msg[1280];
    snprintf(msg, sizeof msg,
             "%s on %s %s [%p, +%zu), but %s on %s, which %s it, is not ordered before it: "
             "no event edge and no host synchronization between them (earlier call site %s, "
             "this call site %s). %s",
             na, nt, acc_verb(now), (void *)e->lo, (size_t)(e->hi - e->lo), pa, pt,
             earlier_verb(prev), ps, ns, fix_hint(e->check));
    char js[4096];
    a2a_json j;
    a2a_json_init(&j, js, sizeof js);
    a2a_json_obj_begin(&j, NULL);
    a2a_json_obj_begin(&j, "buffer");
    a2a_json_ptr(&j, "addr", (void *)e->lo);
    a2a_json_uint(&j, "bytes", e->hi - e->lo);
    a2a_json_obj_end(&j);
    char ob[200];
    describe_acc(ob, sizeof ob, op);
    a2a_json_str(&j, "operation", ob);
    json_side(&j, "earlier", prev, &e->prev_tl, e->has_prev_stack ? &e->prev_stack : NULL);
    json_side(&j, "later", now, &e->now_tl, NULL);
    a2a_json_obj_end(&j);
    a2a_finding f = {
        .check = e->check,
        .severity = A2A_SEV_ERROR,
        .site = now_site,
        .comm = a2a_comm_lookup(op->comm),
        .message = msg,
        .details_json = js,
        .stack = e->now_stack,
        .capture_stack = e->now_stack == NULL,
    };
    a2a_report(&f);
  }
  q->n = 0;
}

static void stage_drain(void);
static void coal_drain(void);

/* Under g_mu: g_lock_ver's next value (one writer at a time: no atomic
 * read-modify-write needed). Returns the version it advanced from. */
static inline uint64_t lock_advance(void) {
  const uint64_t ver = atomic_load_explicit(&g_lock_ver, memory_order_relaxed);
  atomic_store_explicit(&g_lock_ver, ver + 1, memory_order_relaxed);
  return ver;
}

/* A section's report queue: what its handlers report goes to q until
 * hb_unlock flushes it outside the lock. */
static inline void q_open(report_q *q) {
  q->n = 0;
  tls_q = q;
}

/* Under g_mu, at a section's start: the deferred work of every thread
 * (see "Deferred copies"). */
static inline void hb_drains(void) {
  g_draining = true;
  coal_drain(); /* (first: see "Coalesced repeats") */
  stage_drain();
  g_draining = false;
}

/* Take / release the analyzer lock around a handler that may report; the
 * deferred copies of every thread are applied first. */
static void hb_lock(report_q *q) {
  q_open(q);
  a2a_lock_acquire(&g_mu);
  lock_advance(); /* see "Repeated launches" and "Repeated queries" */
  hb_drains();
}

static void hb_unlock(report_q *q) {
  a2a_lock_release(&g_mu);
  tls_q = NULL;
  if (q->n) flush_reports(q);
}

/* Which check a pair (earlier access p, new access with flags nf) violates
 * when they are unordered, or A2A_CK_NONE when the pair is none of our
 * business. */
static a2a_check_id classify(const access *p, unsigned nf, bool is_free) {
  bool pc = p->flags & F_COMM, nc = nf & F_COMM;
  bool pw = p->flags & F_WRITE, nw = nf & F_WRITE;
  if (is_free) return pc ? A2A_CK_STREAM_FREE_IN_FLIGHT : A2A_CK_NONE;
  if (!pc && !nc) return A2A_CK_NONE; /* compute vs compute: compute-sanitizer's job */
  if (!pw && !nw) return A2A_CK_NONE; /* read vs read */
  if (nc) {
    if (!pc) return A2A_CK_STREAM_UNSYNCED_INPUT;       /* producer not ordered before the op */
    if (pw && !nw) return A2A_CK_STREAM_UNSYNCED_INPUT; /* op reads another op's output */
    if (pw) return A2A_CK_STREAM_UNSYNCED_OUTPUT;       /* op overwrites another op's output */
    return A2A_CK_STREAM_FREE_IN_FLIGHT;                /* op overwrites another op's input */
  }
  if (pw) return A2A_CK_STREAM_UNSYNCED_OUTPUT;         /* touching an op's output too early */
  return A2A_CK_STREAM_FREE_IN_FLIGHT;                  /* rewriting an op's input too early */
}

/* One bit per check, to report each check once per access. */
static unsigned check_bit(a2a_check_id check) {
  if (check == A2A_CK_STREAM_UNSYNCED_INPUT) return 1u;
  if (check == A2A_CK_STREAM_UNSYNCED_OUTPUT) return 2u;
  return 4u;
}

static int acc_class(const access *a) {
  return ((a->flags & F_COMM) ? 2 : 0) | ((a->flags & F_WRITE) ? 1 : 0);
}

/* Remember access a in r (one entry per timeline and class; a newer epoch
 * replaces an older one, since whatever is ordered after the newer one is
 * ordered after the older one). vc_now: the clock of a's timeline, used to
 * pick a victim when full (NULL: drop the oldest). */
static void acc_add(range *r, const access *a, const uint32_t *vc_now) {
  for (int i = 0; i < r->nacc; i++) {
    access *e = &r->acc[i];
    if (e->tl == a->tl && acc_class(e) == acc_class(a)) {
      if (a->clk > e->clk) *e = *a;
      else if (a->clk == e->clk) e->flags |= a->flags;
      return;
    }
  }
  if (r->nacc < MAX_ACC) {
    r->acc[r->nacc++] = *a;
    return;
  }
  int victim = 0;
  if (vc_now)
    for (int i = 0; i < r->nacc; i++)
      if (hb(&r->acc[i], vc_now)) { victim = i; break; }
  memmove(&r->acc[victim], &r->acc[victim + 1], (size_t)(r->nacc - victim - 1) * sizeof(access));
  r->acc[r->nacc - 1] = *a;
}

/* Whether every access in r's history is ordered before vc (the common
 * case of a correct program: checking a new access against r finds no
 * conflict). */
static bool all_ordered(const range *r, const uint32_t *vc) {
  for (int i = 0; i < r->nacc; i++)
    if (!hb(&r->acc[i], vc)) return false;
  return true;
}

/* access_range's general path (out of line: its frame is large). */
__attribute__((noinline)) static void access_range_slow(range *r, const access *a, bool covers,
                                                        const a2a_stack *st,
                                                        unsigned *reported) {
  const uint32_t *vc = g_tl[a->tl].vc;
  bool conflicted[MAX_ACC] = {0};
  for (int i = 0; i < r->nacc; i++) {
    const access *p = &r->acc[i];
    if (hb(p, vc)) continue;
    a2a_check_id check = classify(p, a->flags, a->kind == AK_FREE);
    if (check == A2A_CK_NONE) continue;
    conflicted[i] = true;
    unsigned bit = check_bit(check);
    if (*reported & bit) continue;
    *reported |= bit;
    report(check, r, p, a, st);
  }
  r->last_use = ++g_use;
  if (a->kind == AK_FREE) return;
  if ((a->flags & F_WRITE) && covers) {
    int k = 0;
    for (int i = 0; i < r->nacc; i++)
      if (!hb(&r->acc[i], vc) && !conflicted[i]) r->acc[k++] = r->acc[i];
    r->nacc = k;
  }
  acc_add(r, a, vc);
}

/* Check access a (on timeline a->tl, whose clock is vc) against r's history,
 * report the first conflict of each check, then remember it. covers: a
 * touches every byte of r (a write then supersedes what it is ordered
 * after). *reported carries the checks already reported for this access. */
static inline void access_range(range *r, const access *a, bool covers, const a2a_stack *st,
                                unsigned *reported) {
  const uint32_t *vc = g_tl[a->tl].vc;
  if (a->kind != AK_FREE && all_ordered(r, vc)) {
    /* What access_range_slow does then: nothing to report; a covering
     * write supersedes every remembered access (all ordered before it) and
     * is remembered alone, anything else is added to them. */
    r->last_use = ++g_use;
    if ((a->flags & F_WRITE) && covers) {
      r->acc[0] = *a;
      r->nacc = 1;
    } else {
      acc_add(r, a, vc);
    }
    return;
  }
  access_range_slow(r, a, covers, st, reported);
}

/* A non-communication access [lo,hi) (memcpy/memset/host copy): every
 * overlapping tracked range. */
static void access_span(uintptr_t lo, uintptr_t hi, const access *a) {
  if (hi <= lo || hi <= g_min_lo || lo >= g_max_hi) return;
  unsigned rep = 0;
  for (size_t k = pos_after(lo); k < g_nr && g_rng[g_order[k]].lo < hi; k++) {
    range *r = &g_rng[g_order[k]];
    access_range(r, a, lo <= r->lo && hi >= r->hi, NULL, &rep);
  }
}

static bool span_tracked(uintptr_t lo, uintptr_t hi) {
  if (hi <= lo || hi <= g_min_lo || lo >= g_max_hi) return false;
  size_t k = pos_after(lo);
  return k < g_nr && g_rng[g_order[k]].lo < hi;
}

/* ------------------------------------------------------------------ */
/* Recent copies.
 *
 * Only ranges that communication touched are tracked, so the producer of a
 * buffer's FIRST communication use is not known - and with a fresh
 * allocation every step (cudaMallocAsync, a new tensor at a new offset)
 * every use is a first use. Copies and memsets that do not make the host
 * wait are the common producers of such buffers (an input uploaded on a
 * side stream) and they are rare next to kernel launches, so the last
 * STREAM_HB_COPY_RING destinations are remembered with their timeline and
 * epoch even while nothing is tracked, and a communication operation that
 * inserts a new range takes the overlapping ones into its history.
 *
 * A remembered epoch is only meaningful if the edges that may order it
 * before a later operation are followed: while an entry is live the
 * analyzer follows every event except kernel launches (whose only edges,
 * the implicit ones of enqueue_edges, are re-applied, more generously, at
 * the stream's next followed event). An entry dies when the host clock
 * covers it (every later enqueue is then ordered after it), when its span is
 * freed or allocated anew, or when newer copies push it out. Kernels are not
 * remembered: a ring of every launch's pointer words would cost every
 * launch, the path that must stay at a few nanoseconds. */

static void ring_set_live(unsigned n) {
  g_ring_live = n;
  atomic_store_explicit(&g_nring, n, memory_order_relaxed);
}

/* Remember a copy or memset into [lo,hi) on timeline tl at epoch clk
 * (kind AK_MEMCPY or AK_MEMSET; a write). */
static inline void ring_put(uintptr_t lo, uintptr_t hi, uint32_t clk, int tl, uint8_t kind,
                            const void *site, const char *what) {
  if (hi <= lo) return;
  ring_ent *e = &g_ring[g_ring_next++ % STREAM_HB_COPY_RING];
  if (!e->live) ring_set_live(g_ring_live + 1);
  e->lo = lo;
  e->hi = hi;
  e->site = site;
  e->what = what;
  e->clk = clk;
  e->tl = (uint16_t)tl;
  e->kind = kind;
  e->live = true;
}

/* n copies or memsets into [lo,hi) on timeline tl, back to back: what n
 * calls ring_put(lo, hi, tick(tl), tl, ...) do. Only the last
 * STREAM_HB_COPY_RING of them stay in the ring (the earlier ones' slots
 * are written again by the later ones), and whether a slot was live
 * before it is first written in the run is all the live count sees. */
static void ring_put_n(uintptr_t lo, uintptr_t hi, uint32_t n, int tl, uint8_t kind,
                       const void *site, const char *what) {
  uint32_t clk = g_tl[tl].vc[tl];
  g_tl[tl].vc[tl] = clk + n;
  if (hi <= lo) return; /* (ring_put writes nothing) */
  uint32_t skip = n > STREAM_HB_COPY_RING ? n - STREAM_HB_COPY_RING : 0;
  g_ring_next += skip;
  for (uint32_t k = skip; k < n; k++) ring_put(lo, hi, clk + k + 1, tl, kind, site, what);
}

/* The access an entry remembers (as on_copy built it). */
static access ring_access(const ring_ent *e) {
  return (access){.clk = e->clk, .tl = e->tl, .flags = F_WRITE, .kind = e->kind,
                  .site = e->site, .what = e->what, .stack = -1};
}

/* Forget the entries the host clock covers. */
static void ring_expire(void) {
  if (!g_ring_live) return;
  unsigned n = g_ring_live;
  for (int i = 0; i < STREAM_HB_COPY_RING; i++) {
    ring_ent *e = &g_ring[i];
    if (e->live && g_tl[HOST_TL].vc[e->tl] >= e->clk) { /* hb(&ring_access(e), host) */
      e->live = false;
      n--;
    }
  }
  ring_set_live(n);
}

/* Forget the entries overlapping [lo,hi) (freed or newly allocated). */
static void ring_drop_span(uintptr_t lo, uintptr_t hi) {
  if (!g_ring_live) return;
  unsigned n = g_ring_live;
  for (int i = 0; i < STREAM_HB_COPY_RING; i++) {
    ring_ent *e = &g_ring[i];
    if (e->live && e->lo < hi && lo < e->hi) {
      e->live = false;
      n--;
    }
  }
  ring_set_live(n);
}

/* A communication access inserted the new range r for [lo,hi): the
 * remembered copies into it become its history. */
static void ring_pull(range *r, uintptr_t lo, uintptr_t hi) {
  if (!g_ring_live) return;
  for (int i = 0; i < STREAM_HB_COPY_RING; i++) {
    const ring_ent *e = &g_ring[i];
    if (e->live && e->lo < hi && lo < e->hi) {
      access a = ring_access(e);
      acc_add(r, &a, NULL);
    }
  }
}

/* ------------------------------------------------------------------ */
/* Communication operations */

static thread_state *thread_state_of(uint32_t thread) {
  if (thread >= MAX_THREADS) return NULL;
  if (!g_threads[thread]) g_threads[thread] = calloc(1, sizeof(thread_state));
  return g_threads[thread];
}

/* a2a_site_stack_ref(site, scratch), answered from the thread's last two
 * answers for a site when it is one of them: an answer from the site cache
 * stays valid until a2a_site_stacks_reset, which only the analyzers'
 * (re)initialization calls, and hb_init then clears every thread's state.
 * (An answer that is this call's own capture, the cache being full, is not
 * kept.) */
static const a2a_stack *site_stack(thread_state *ts, const void *site, a2a_stack *scratch) {
  if (site && ts->ss_site[0] == site) return ts->ss_stk[0];
  if (site && ts->ss_site[1] == site) return ts->ss_stk[1];
  const a2a_stack *stk = a2a_site_stack_ref(site, scratch);
  if (site && stk != scratch) {
    unsigned k = ts->ss_next++ & 1;
    ts->ss_site[k] = site;
    ts->ss_stk[k] = stk;
  }
  return stk;
}

/* One side of a call as a pending entry, without its stack (pending_add,
 * and on_comm_op's ungrouped calls, which fill theirs directly). */
static void op_side(pending *p, const a2a_event *ev, int dev, uintptr_t lo, size_t bytes,
                    uint8_t flags, const char *what) {
  p->stream = ev->stream;
  p->per_thread = ev->per_thread;
  p->device = dev;
  p->lo = lo;
  p->hi = lo + bytes;
  p->flags = flags;
  p->nops = 1;
  p->site = ev->callsite;
  p->what = what;
  p->comm = ev->comm;
  p->stk = NULL;
}

/* The first part of pending_add, inline in its callers: an access with
 * no bytes adds nothing, and the same operation as the same entry of an
 * earlier group (within rep_n) is that entry, as it stands. True when
 * done; false: pending_merge, then pending_add_slow. Exact: entry n was
 * made by pending_add_slow from this operation (every field op_side sets
 * is compared; nops 1: nothing merged into it since) after entries 0..n-1
 * as they are now (none of them merged into later; each of this group's
 * equal to it), so pending_add_slow would again merge the operation into
 * none of them and append it as entry n, with the same stack: the site
 * cache's answer for its site, fixed until a re-initialization, which
 * clears the thread's state (pending_repeat_set keeps no entry with a
 * capture of its own, or with none while stacks are on). */
static inline __attribute__((always_inline)) bool pending_repeat(thread_state *ts,
                                                                 const a2a_event *ev,
                                                                 uintptr_t lo, size_t bytes,
                                                                 uint8_t flags,
                                                                 const char *what) {
  if (bytes == 0 || lo == 0) return true;
  uintptr_t hi = lo + bytes;
  int dev = dev_of(ev);
  int n = ts->npending;
  if (n >= ts->rep_n) return false;
  const pending *p = &ts->p[n];
  if (p->lo == lo && p->hi == hi && p->flags == flags && p->stream == ev->stream &&
      p->site == ev->callsite && p->comm == ev->comm && p->per_thread == ev->per_thread &&
      p->device == dev && p->what == what) {
    ts->npending = n + 1;
    return true;
  }
  return false;
}

/* The rest of pending_add (out of line: its frame is not the repeated
 * group's): append the access to ts's pending list, merging it into an
 * earlier one of the same stream, direction and communicator when the two
 * are adjacent (the per-peer chunks of a grouped all-to-all). */
__attribute__((noinline)) static void pending_add_slow(thread_state *ts, const a2a_event *ev,
                                                       uintptr_t lo, size_t bytes, uint8_t flags,
                                                       const char *what) {
  pending *arr = ts->p;
  int *npending = &ts->npending, cap = MAX_PENDING;
  uintptr_t hi = lo + bytes;
  int dev = dev_of(ev);
  ts->rp_n = 0; /* the entries change: no replay, no repeat */
  ts->rep_n = 0;
  for (int i = *npending - 1; i >= 0 && i >= *npending - 8; i--) {
    pending *p = &arr[i];
    /* (The direction first: a group's send and receive differ in it.) */
    if (p->flags == flags && p->stream == ev->stream && p->per_thread == ev->per_thread &&
        p->device == dev && p->comm == ev->comm && (p->hi == lo || p->lo == hi)) {
      if (p->hi == lo) p->hi = hi;
      else p->lo = lo;
      p->nops++;
      return;
    }
  }
  if (*npending >= cap) return; /* dropped: can only hide a race */
  pending *p = &arr[(*npending)++];
  op_side(p, ev, dev, lo, bytes, flags, what);
  if (a2a_opt->stack_depth <= 0) return;
  /* One lookup per call: the send and receive sides of a call share it. */
  const pending *q = p > arr ? p - 1 : NULL;
  if (q && q->site == p->site && q->stk && q->stk != &q->scratch) p->stk = q->stk;
  else p->stk = site_stack(ts, ev->callsite, &p->scratch);
  if (p->stk && p->stk->n <= 0) p->stk = NULL;
}

/* pending_add_slow's first two tests, unrolled, in a smaller frame (a
 * grouped all-to-all's chunks merge into the last entry or, its send and
 * receive sides alternating, the one before it): when the access merges
 * into entry n - 1 or, that one not taking it, n - 2, it is merged and
 * true (what pending_add_slow's loop, which tries those first, in that
 * order, does); false with nothing changed: the loop finds neither
 * again. (Out of pending_add's inline part: its loads would be hoisted
 * above pending_repeat's test, into the repeated operation's path.) */
static inline __attribute__((always_inline)) bool pending_merge(thread_state *ts,
                                                                const a2a_event *ev,
                                                                uintptr_t lo, size_t bytes,
                                                                uint8_t flags) {
  int n = ts->npending;
  uintptr_t hi = lo + bytes;
  pending *p = &ts->p[n];
  for (int k = 0; k < 2 && k < n; k++) {
    p--;
    if (p->flags == flags && p->stream == ev->stream && (p->hi == lo || p->lo == hi) &&
        p->comm == ev->comm && p->per_thread == ev->per_thread && p->device == dev_of(ev)) {
      ts->rp_n = 0; /* the entries change: no replay, no repeat */
      ts->rep_n = 0;
      if (p->hi == lo) p->hi = hi;
      else p->lo = lo;
      p->nops++;
      return true;
    }
  }
  return false;
}

/* pending_add past pending_repeat, out of line (see pending_merge):
 * the merge into one of the last two entries, else pending_add_slow (a
 * tail call). */
__attribute__((noinline)) static void pending_add_more(thread_state *ts, const a2a_event *ev,
                                                       uintptr_t lo, size_t bytes, uint8_t flags,
                                                       const char *what) {
  if (!pending_merge(ts, ev, lo, bytes, flags)) pending_add_slow(ts, ev, lo, bytes, flags, what);
}

/* At the outermost group end, before npending is cleared: rep_n for the
 * entries now in ts->p (see pending_repeat). A group whose every operation
 * was repeated (npending <= rep_n: any other clears rep_n) left the
 * entries, and rep_n, as they were. */
static void pending_repeat_set(thread_state *ts) {
  int n = ts->npending;
  if (n <= ts->rep_n) return;
  ts->rep_gen++; /* (the entries changed: rep_n was cleared) */
  bool stacks = a2a_opt->stack_depth > 0;
  for (int k = 0; k < n; k++) {
    const pending *p = &ts->p[k];
    if (p->nops != 1 || p->stk == &p->scratch || (!p->stk && stacks)) {
      ts->rep_n = 0;
      return;
    }
  }
  ts->rep_n = n;
}

/* Add one communication access to ts's pending list (the group's). */
static inline __attribute__((always_inline)) void pending_add(thread_state *ts,
                                                              const a2a_event *ev, uintptr_t lo,
                                                              size_t bytes, uint8_t flags,
                                                              const char *what) {
  if (!pending_repeat(ts, ev, lo, bytes, flags, what)) pending_add_more(ts, ev, lo, bytes, flags, what);
}

/* Whether two pending accesses name the same stream argument (then they
 * are on the same timeline). */
static bool same_stream(const pending *p, const pending *q) {
  return p->stream == q->stream && p->per_thread == q->per_thread && p->device == q->device;
}

/* The accesses of arr[0..npending) after their streams' edges and ticks:
 * arr[i] is on timeline tls[i] at epoch clk[i], or, when tls is NULL (one
 * stream), all on timeline s1 at epoch clk1. Caller holds g_mu. */
__attribute__((always_inline)) static inline void pending_access(pending *arr, int npending,
                                                                 const int *tls, const uint32_t *clk,
                                                                 int s1, uint32_t clk1) {
  size_t nr_before = g_nr;
  bool reshaped = false;
  range *prev_r = NULL; /* the range of arr[i - 1], exactly its bounds */
  for (int i = 0; i < npending; i++) {
    pending *p = &arr[i];
    int s = tls ? tls[i] : s1;
    if (g_tl[s].capturing) continue;
    bool fresh = false, exact = true;
    /* The receive side of an in-place operation has the bounds of its send
     * side: the range the send side just used is exactly it. A hinted
     * range is exactly its bounds too, and the hint of either already
     * names it: only a range range_for_comm found sets it. */
    range *r = prev_r && prev_r->lo == p->lo && prev_r->hi == p->hi ? prev_r
                                                                    : range_hinted(p->lo, p->hi);
    bool hinted = r != NULL;
    if (!r) r = range_for_comm(p->lo, p->hi, &fresh, &exact);
    prev_r = NULL;
    if (!r) continue;
    if (r->lo == p->lo && r->hi == p->hi) {
      prev_r = r;
      if (!hinted) range_hint_set(r);
    }
    if (fresh) ring_pull(r, p->lo, p->hi);
    /* An existing range with exactly these bounds has its pages marked
     * already (bits are cleared only when no range is left). */
    if (!exact) {
      pages_mark(r->lo, r->hi);
      reshaped = true;
    }
    /* An in-place operation (this read, then a write of exactly the same
     * bounds at the same point of the same timeline) on a range whose
     * history is all ordered before it: the read reports nothing, and the
     * write, which covers the range, reports nothing and supersedes every
     * access then remembered, the read included (whatever the read's
     * remembering evicted was ordered before it too). So the read leaves
     * nothing behind but its use of the range: skip it. (A read whose
     * stack is a capture of its own would have taken a stack-ring slot
     * nothing refers to any more.) */
    if (prev_r && i + 1 < npending && p->flags == F_READ) {
      const pending *w = &arr[i + 1];
      if (w->flags == F_WRITE && w->lo == p->lo && w->hi == p->hi &&
          (!tls || (tls[i + 1] == s && clk[i + 1] == clk[i])) && all_ordered(r, g_tl[s].vc)) {
        r->last_use = ++g_use;
        continue; /* arr[i + 1] finds prev_r */
      }
    }
    access a = {.clk = tls ? clk[i] : clk1, .tl = (uint16_t)s,
                .flags = (uint8_t)(p->flags | F_COMM), .kind = AK_COMM, .nops = p->nops,
                .site = p->site, .what = p->what, .comm = p->comm, .stack = -1};
    /* The site cache's stack is kept by reference; only a capture of this
     * call's own (cache full) is copied into the ring. */
    if (p->stk == &p->scratch) a.stack = stack_put(p->stk, &a.stack_gen);
    else a.stk = p->stk;
    unsigned rep = 0;
    bool covers = p->lo <= r->lo && p->hi >= r->hi; /* r may be a merged, larger range */
    access_range(r, &a, covers, p->stk, &rep);
  }
  if (reshaped || g_nr != nr_before) {
    atomic_store(&g_nranges, (unsigned)g_nr);
    bounds_update();
  }
}

/* *a = the communication access (flags | F_COMM) at epoch clk of timeline
 * s, as pending_access builds it, its stack the site cache's (stack -1).
 * Member by member: an initializer would also clear the padding, which
 * GCC does with a byte loop. */
static inline void acc_set(access *a, uint32_t clk, int s, uint8_t flags, uint32_t nops,
                           const void *site, const char *what, void *comm,
                           const a2a_stack *stk) {
  a->clk = clk;
  a->tl = (uint16_t)s;
  a->flags = (uint8_t)(flags | F_COMM);
  a->kind = AK_COMM;
  a->nops = nops;
  a->site = site;
  a->what = what;
  a->comm = comm;
  a->stk = stk;
  a->stack = -1;
  a->stack_gen = 0;
}

/* One access of comm_fast on its range r, whose history is all ordered
 * before vc: access_range's all-ordered branch for an access that covers
 * r (its bounds are exactly r's). The access is *a with flags f. */
__attribute__((always_inline)) static inline void fast_one(range *r, const access *a, uint8_t f, const uint32_t *vc) {
  r->last_use = ++g_use;
  if (f & F_WRITE) {
    r->acc[0] = *a;
    r->acc[0].flags = f;
    r->nacc = 1;
  } else {
    access t = *a;
    t.flags = f;
    acc_add(r, &t, vc);
  }
}

/* pending_access's common case without its loop: n (1 or 2) accesses with
 * bounds [lo[i], hi[i]), access i being *a[i] with flags fl[i] | F_COMM,
 * all on one timeline (a[0]->tl, after its edges and tick), each a
 * communication read or write (fl[i] F_READ or F_WRITE) whose stack, if
 * any, is the site cache's (stk; stack -1). Taken only when every
 * access's bounds are exactly a live range's found through its range hint
 * (range_hinted) and that range's history is all ordered before the
 * timeline's clock (all_ordered). Then pending_access with the same
 * accesses (tls NULL) does exactly this:
 *  - it finds the same ranges (the hint of either, the previous access's
 *    range for equal bounds), creates, splits, merges and re-marks none,
 *    pulls no recent copy (no range is fresh), sets no hint and leaves
 *    g_nranges and the bounds alone;
 *  - two accesses with equal bounds share one range: pending_access's
 *    in-place rule applies to a read followed by a write (the read only
 *    uses the range; the write then replaces its history); any other pair
 *    of equal bounds is left to pending_access;
 *  - with different bounds the two ranges are different (live ranges are
 *    disjoint), so checking both histories before touching either is
 *    checking each before its own access, as pending_access does;
 *  - each access takes access_range's all-ordered branch: no finding, one
 *    use of g_use, a write (covering: the bounds are the range's) replaces
 *    the history, a read is added to it (acc_add).
 * False, with nothing changed, when a condition does not hold: the caller
 * runs pending_access. Caller holds g_mu. */
__attribute__((always_inline)) static inline bool comm_fast(int n, const uintptr_t *lo, const uintptr_t *hi, const uint8_t *fl,
                             const access *const *a) {
  const uint32_t *vc = g_tl[a[0]->tl].vc;
  range *r0 = range_hinted(lo[0], hi[0]);
  if (!r0 || !all_ordered(r0, vc)) return false;
  if (n == 1) {
    fast_one(r0, a[0], (uint8_t)(fl[0] | F_COMM), vc);
    return true;
  }
  if (lo[1] == lo[0] && hi[1] == hi[0]) {
    if (fl[0] != F_READ || fl[1] != F_WRITE) return false;
    r0->last_use = ++g_use; /* the read: its use of the range only */
    fast_one(r0, a[1], F_WRITE | F_COMM, vc);
    return true;
  }
  range *r1 = range_hinted(lo[1], hi[1]);
  if (!r1 || !all_ordered(r1, vc)) return false;
  fast_one(r0, a[0], (uint8_t)(fl[0] | F_COMM), vc);
  fast_one(r1, a[1], (uint8_t)(fl[1] | F_COMM), vc);
  return true;
}

/* fast_one for pending entry p (flags p->flags | F_COMM) at epoch clk of
 * timeline s, its access written in place: the slot the write replaces
 * the history with, or the one acc_add would give the read (the entry of
 * the same timeline and class when the read is newer, else the next free
 * one); a read that only raises an entry's flags (same epoch) or that
 * finds the history full goes through acc_add itself, as fast_one's.
 * Returns the slot p's access went into, or -1 when acc_add placed it. */
#define HB_SLOT_USE (-2) /* (a group replay's slot: the range's use only) */
__attribute__((always_inline)) static inline int fast_pend(range *r, const pending *p, int s,
                                                           uint32_t clk, const uint32_t *vc) {
  r->last_use = ++g_use;
  access *e;
  if (p->flags & F_WRITE) {
    e = &r->acc[0];
    r->nacc = 1;
  } else {
    int i = 0;
    for (; i < r->nacc; i++) {
      const access *x = &r->acc[i];
      if (x->tl == s && acc_class(x) == 2) break; /* a communication read */
    }
    if (i < r->nacc ? clk > r->acc[i].clk : r->nacc < MAX_ACC) {
      if (i == r->nacc) r->nacc++;
      e = &r->acc[i];
    } else {
      access a;
      acc_set(&a, clk, s, p->flags, p->nops, p->site, p->what, p->comm, p->stk);
      acc_add(r, &a, vc);
      return -1;
    }
  }
  acc_set(e, clk, s, p->flags, p->nops, p->site, p->what, p->comm, p->stk);
  return (int)(e - r->acc);
}

/* comm_fast for pending_apply's entries arr[0..n) (n 1 or 2, none with a
 * stack of its own), all on timeline s at epoch clk: the same tests and
 * the same effects, each access written in place (fast_pend) rather than
 * built, then copied. */
/* range_hinted(lo, hi) for a group's entry, first at the slot *memo the
 * thread found for the same entry of its previous group (a program
 * repeats its group step after step), which it then keeps: hashing the
 * bounds is most of the lookup. A live range with exactly these bounds is
 * the one range_hinted returns when it returns one (live ranges are
 * disjoint). When range_hinted would miss it (its hint taken by another
 * range), comm_fast_pend takes the fast path for it where pending_access
 * would have found the same range exact and set its hint: the same
 * findings and histories, only the hint differs. Nothing when the pool is
 * nearly full, as range_hinted (range_for_comm evicts then). */
static inline range *range_memo(uint16_t *memo, uintptr_t lo, uintptr_t hi) {
  if (g_nr + 3 > MAX_RANGES) return NULL;
  unsigned m = *memo;
  if (m) {
    range *r = &g_rng[m - 1];
    if (r->live && r->lo == lo && r->hi == hi) return r;
  }
  range *r = range_hinted(lo, hi);
  if (r) *memo = (uint16_t)(r - g_rng + 1);
  return r;
}

/* (On success, rr[k] is entry k's range and slot[k] the slot its access
 * went into: fast_pend's answer, or HB_SLOT_USE for an in-place read.) */
__attribute__((always_inline)) static inline bool comm_fast_pend(int n, const pending *arr, int s,
                                                                 uint32_t clk, uint16_t *memo,
                                                                 range **rr, int *slot) {
  const uint32_t *vc = g_tl[s].vc;
  const pending *p0 = &arr[0];
  range *r0 = range_memo(&memo[0], p0->lo, p0->hi);
  if (!r0 || !all_ordered(r0, vc)) return false;
  rr[0] = r0;
  if (n == 1) {
    slot[0] = fast_pend(r0, p0, s, clk, vc);
    return true;
  }
  const pending *p1 = &arr[1];
  if (p1->lo == p0->lo && p1->hi == p0->hi) {
    if (p0->flags != F_READ || p1->flags != F_WRITE) return false;
    r0->last_use = ++g_use; /* the read: its use of the range only */
    slot[0] = HB_SLOT_USE;
    rr[1] = r0;
    slot[1] = fast_pend(r0, p1, s, clk, vc);
    return true;
  }
  range *r1 = range_memo(&memo[1], p1->lo, p1->hi);
  if (!r1 || !all_ordered(r1, vc)) return false;
  rr[1] = r1;
  slot[0] = fast_pend(r0, p0, s, clk, vc);
  slot[1] = fast_pend(r1, p1, s, clk, vc);
  return true;
}

/* pending_access for accesses on one timeline s at epoch clk, out of line
 * (its two callers share it). */
__attribute__((noinline)) static void pending_access_one(pending *arr, int npending, int s,
                                                         uint32_t clk) {
  pending_access(arr, npending, NULL, NULL, s, clk);
}

/* Repeated groups. A program posts the same group step after step (the
 * same operations on the same buffers and stream); when the group end
 * applied its entries through comm_fast_pend, the thread keeps what that
 * did (thread_state's rp_*), and the next group made of the same entries
 * is replayed: the edges and tick of its timeline, then for each entry
 * its range's use and its access's new epoch in the slot it took. Exact
 * when the replay's tests hold (group_replay), because then
 * pending_apply would do just that:
 *  - the entries: pending_add kept each one (pending_repeat, rep_n >=
 *    rp_n) only when the operation is the one op_side wrote it from (every field op_side sets; nops is 1
 *    and the stack the site cache's, or none with stacks off, fixed until
 *    a re-initialization, which clears the thread's state - the memo
 *    requires both), so no entry merged (the entries before one are as
 *    they were when it was made: none was merged into) and any change
 *    (a new or merged entry) clears rp_n;
 *  - the timeline: g_tl_epoch unchanged, the stream argument still maps to
 *    rp_s (tl_of), live, so its clock has only grown; not capturing;
 *  - the ranges: each still live with exactly the entry's bounds (range_memo
 *    finds it) and its last_use unchanged - every change of a range's
 *    history sets its last_use to a new ++g_use (access_range, the fast
 *    paths, launch_apply; a merge or a recent copy pulled into a new range
 *    is followed by an access to it), a split changes its bounds, and a
 *    range made in a freed slot gets a new value - so its history is the
 *    one the last group left, all ordered before the clock then (checked
 *    then; the group's own accesses are on the timeline) and so now;
 *  - so comm_fast_pend takes its fast path, and each fast_pend finds the
 *    slot it found last time (a write: slot 0 of a history of 1; a read:
 *    its own entry, the only one of its timeline and class, older than the
 *    new tick) and writes into it what is there already but the epoch.
 * The pool nearly full is left to pending_apply (range_memo declines). */
static void group_memo_set(thread_state *ts, int n, int s, range *const *rr, const int *slot) {
  for (int k = 0; k < n; k++) {
    const pending *p = &ts->p[k];
    if (slot[k] == -1 || p->nops != 1 || (!p->stk && a2a_opt->stack_depth > 0)) return;
  }
  ts->rp_s = s;
  ts->rp_ns = 0;
  ts->rp_epoch = g_tl_epoch;
  for (int k = 0; k < n; k++) {
    ts->rp_r[k] = rr[k];
    ts->rp_slot[k] = (int8_t)slot[k];
    ts->rp_use[k] = rr[k]->last_use;
  }
  ts->rp_n = (uint8_t)n;
}

/* Whether range r is still what the replay left (see "Repeated groups"):
 * live, with the bounds of entry p, its last_use `use`. */
static inline bool memo_holds(const range *r, const pending *p, uint64_t use) {
  return r->live && r->lo == p->lo && r->hi == p->hi && r->last_use == use;
}

/* Caller holds g_mu; ts->npending == ts->rp_n != 0. True when the group
 * was replayed (see "Repeated groups"), false with nothing changed. The
 * last entry always has a slot (only the first of two may be an in-place
 * read, HB_SLOT_USE: then its range is the last entry's, with the same
 * bounds, tested as the last entry's; its own rp_use is not kept). */
static inline bool group_replay(thread_state *ts) {
  int n = ts->rp_n, s = ts->rp_s, l = n - 1;
  if (ts->rp_epoch != g_tl_epoch || g_nr + 3 > MAX_RANGES || g_tl[s].capturing) return false;
  range *r0 = ts->rp_r[0], *rl = ts->rp_r[l];
  int slot0 = ts->rp_slot[0];
  if (!memo_holds(rl, &ts->p[l], ts->rp_use[l]) ||
      (n == 2 && slot0 != HB_SLOT_USE && !memo_holds(r0, &ts->p[0], ts->rp_use[0])))
    return false;
  enqueue_edges(s);
  uint32_t clk = tick(s);
  uint64_t u = g_use;
  if (n == 2) { /* the first entry's range use and access, as fast_pend's */
    r0->last_use = ts->rp_use[0] = ++u;
    if (slot0 >= 0) r0->acc[slot0].clk = clk;
  }
  rl->last_use = ts->rp_use[l] = ++u;
  rl->acc[ts->rp_slot[l]].clk = clk;
  g_use = u;
  return true;
}

/* NCCL launches a group spanning several streams as one unit: every
 * stream waits for the others before and after. The rest of
 * pending_apply_multi's timelines: the nstreams distinct timelines
 * streams[] (in the order of their first entry) each get their enqueue
 * edges and tick, then are joined. (Several stream arguments may still
 * name one timeline: then there is nothing to join, its own clock already
 * is the join.) Caller holds g_mu. */
static inline __attribute__((always_inline)) void group_join(const int *streams, int nstreams) {
  if (nstreams == 1) {
    if (!g_tl[streams[0]].capturing) {
      enqueue_edges(streams[0]);
      tick(streams[0]);
    }
    return;
  }
  /* joined: the join of the non-capturing streams' clocks after their
   * edges and ticks (enqueue_edges(s) changes only s's clock, so each
   * is final once ticked); it starts as the first one's (the join of
   * zeros and it). Each of those clocks is then joined (it is at most
   * joined, so it becomes joined: a copy); a capturing stream's clock
   * is joined with it. vc_join and the copies cover g_ntl entries. */
  uint32_t joined[MAX_TL];
  size_t bytes = (size_t)g_ntl * sizeof joined[0];
  bool any = false;
  for (int k = 0; k < nstreams; k++) {
    if (g_tl[streams[k]].capturing) continue;
    enqueue_edges(streams[k]);
    tick(streams[k]);
    if (any) vc_join(joined, g_tl[streams[k]].vc);
    else memcpy(joined, g_tl[streams[k]].vc, bytes);
    any = true;
  }
  for (int k = 0; any && k < nstreams; k++) {
    if (g_tl[streams[k]].capturing) vc_join(g_tl[streams[k]].vc, joined);
    else memcpy(g_tl[streams[k]].vc, joined, bytes);
  }
}

static void group_memo_multi(thread_state *ts, const int *tls, const int *streams, int nstreams);

/* pending_apply for accesses on several streams: join them first
 * (group_join), so the group's own accesses are not reported against
 * each other (overlaps inside a group are layout.overlap's business), then
 * the accesses; the replay of the group is kept when it can be (see
 * "Repeated groups on several streams"). */
__attribute__((noinline)) static void pending_apply_multi(thread_state *ts, uint32_t thread) {
  pending *arr = ts->p;
  int npending = ts->npending;
  int tls[MAX_PENDING];
  uint32_t clk[MAX_PENDING];
  int streams[MAX_PENDING], nstreams = 0;
  uint64_t seen[(MAX_TL + 63) / 64] = {0}; /* the timelines in streams[] */
  for (int i = 0; i < npending; i++) {
    pending *p = &arr[i];
    if (i > 0 && same_stream(&arr[i - 1], p)) { /* the same timeline, in streams[] */
      tls[i] = tls[i - 1];
      continue;
    }
    int s = tl_of(p->stream, p->per_thread, thread, p->device);
    tls[i] = s;
    if (s < 0) return;
    uint64_t bit = 1ull << (s & 63);
    if (!(seen[s >> 6] & bit)) {
      seen[s >> 6] |= bit;
      streams[nstreams++] = s;
    }
  }
  group_join(streams, nstreams);
  for (int i = 0; i < npending; i++) clk[i] = g_tl[tls[i]].vc[tls[i]];
  pending_access(arr, npending, tls, clk, 0, 0);
  group_memo_multi(ts, tls, streams, nstreams);
}

/* Repeated groups on several streams. The group of nccl-tests' `-g`
 * mode (one process, several devices: one outer group around each
 * device's send and receive, or all-to-all, on its own stream) spans
 * several streams, and the program posts it step after step. After
 * pending_apply_multi applied such a group, the thread keeps its
 * timelines, and per entry its timeline, range, the range's last_use and
 * the slot the access went into (group_memo_multi); the next group made
 * of the same entries is replayed (group_replay_multi): group_join on the
 * same timelines, then for each entry in order its range's use and its
 * access's new epoch (its timeline's own clock entry after the join) in
 * the slot it took. Exact when the replay's tests hold, because then
 * pending_apply_multi would do just that:
 *  - the entries: as for one stream (see "Repeated groups": pending_repeat
 *    kept each one, unmerged, with the site cache's stack or none with
 *    stacks off - group_memo_multi requires all of them - and any change
 *    clears rp_n);
 *  - the timelines: g_tl_epoch unchanged, so every entry's stream
 *    argument still maps to the timeline it did (tl_of), the same
 *    distinct timelines in the same order; none capturing (group_memo_multi
 *    and the replay both require it), so group_join ticks and joins all of
 *    them - it is the very function pending_apply_multi calls, or
 *    join_ticks where that is all group_join would do - and each
 *    clock has only grown since (a timeline's clock is reset only when it
 *    is recycled, which advances g_tl_epoch);
 *  - the ranges: each entry's range still live with exactly the entry's
 *    bounds and its last_use unchanged, so its history is the one the
 *    last group left (see "Repeated groups"), which group_memo_multi
 *    found all ordered before the entry's timeline's clock then, hence
 *    before it now; so pending_access finds that range for the entry
 *    (hinted or exact: no split, merge, insertion, recent copy or page
 *    mark, g_nranges and the bounds left alone) and takes access_range's
 *    all-ordered branch, with no finding. The ranges are distinct across
 *    entries but for an in-place pair (a read, then a write of the same
 *    bounds on the same timeline): pending_access then only uses the
 *    range for the read (HB_SLOT_USE), and the write is checked as any;
 *    so one entry's access never changes another's range;
 *  - the slots: a write (covering: its bounds are the range's) replaces
 *    the history with its access alone - group_memo_multi found the
 *    history exactly that access, in slot 0; a read goes to the entry of
 *    its timeline and class (one per pair: acc_add keeps them unique),
 *    replacing it since the new epoch is larger - group_memo_multi found
 *    that entry to be exactly the read's access. Either way the slot
 *    differs from the new access only in its epoch, and each entry's use
 *    is the next ++g_use, in entry order.
 * What differs: the range hints and tl_of's cache (lookup costs, never a
 * result) are not refreshed. The pool nearly full (range_hinted declines),
 * a capturing timeline, more than RP_MAX entries, and any entry the tests
 * above do not cover are left to pending_apply_multi. */

/* Whether slot e holds exactly the access pending_access would build for
 * entry p at epoch clk of timeline s (its stack the site cache's). */
static bool acc_is_entry(const access *e, const pending *p, int s, uint32_t clk) {
  return e->clk == clk && e->tl == (uint16_t)s && e->flags == (uint8_t)(p->flags | F_COMM) &&
         e->kind == AK_COMM && e->nops == p->nops && e->site == p->site && e->what == p->what &&
         e->comm == p->comm && e->stk == p->stk && e->stack == -1 && e->stack_gen == 0;
}

/* After pending_apply_multi applied ts's entries on timelines tls[] (the
 * distinct ones: streams[0..nstreams)): keep the replay when every test
 * of "Repeated groups on several streams" holds; else none (rp_n 0, as
 * pending_apply left it). Caller holds g_mu. */
static void group_memo_multi(thread_state *ts, const int *tls, const int *streams, int nstreams) {
  int n = ts->npending;
  if (n > RP_MAX || g_nr + 3 > MAX_RANGES) return;
  for (int k = 0; k < nstreams; k++)
    if (g_tl[streams[k]].capturing) return;
  range *rr[RP_MAX];
  int slot[RP_MAX];
  for (int i = 0; i < n; i++) {
    const pending *p = &ts->p[i];
    if (p->nops != 1 || p->stk == &p->scratch || (!p->stk && a2a_opt->stack_depth > 0)) return;
    int s = tls[i];
    range *r = range_hinted(p->lo, p->hi);
    if (!r) r = range_containing(p->lo);
    if (!r || r->lo != p->lo || r->hi != p->hi) return;
    rr[i] = r;
    const pending *w = i + 1 < n ? &ts->p[i + 1] : NULL;
    if (p->flags == F_READ && w && w->flags == F_WRITE && w->lo == p->lo && w->hi == p->hi &&
        tls[i + 1] == s) {
      slot[i] = HB_SLOT_USE; /* (its range is checked as entry i + 1's) */
      continue;
    }
    if (!all_ordered(r, g_tl[s].vc)) return;
    uint32_t clk = g_tl[s].vc[s];
    int k = 0;
    if (p->flags == F_WRITE) {
      if (r->nacc != 1) return;
    } else {
      while (k < r->nacc && !(r->acc[k].tl == s && acc_class(&r->acc[k]) == 2)) k++;
      if (k == r->nacc) return;
    }
    if (!acc_is_entry(&r->acc[k], p, s, clk)) return;
    slot[i] = k;
  }
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      if (rr[i] == rr[j] && !(j == i + 1 && slot[i] == HB_SLOT_USE)) return;
  ts->rp_ns = (uint8_t)nstreams;
  for (int k = 0; k < nstreams; k++) ts->rp_st[k] = streams[k];
  ts->rp_epoch = g_tl_epoch;
  for (int i = 0; i < n; i++) {
    ts->rp_r[i] = rr[i];
    ts->rp_slot[i] = (int8_t)slot[i];
    ts->rp_tl[i] = tls[i];
    ts->rp_use[i] = rr[i]->last_use;
  }
  ts->rp_n = (uint8_t)n;
}

/* group_join(st, ns) for distinct timelines none of which captures, when
 * it only ticks them: every one non-blocking and holding the host clock
 * (enqueue_edges does nothing for it), and all their clocks equal (the
 * last group's join left them so, and nothing joined into one of them
 * since). Then each tick raises one own entry, the join of the ticked
 * clocks is the common clock with every one of those entries raised, and
 * each clock becomes that: here, each clock's entry of each timeline
 * raised by one. False, with nothing changed, when a condition fails.
 * (The clocks are compared over g_ntl entries, which is all group_join
 * reads and writes.) */
static inline void ticks_apply(const int *st, int ns) {
  for (int k = 0; k < ns; k++) {
    uint32_t *vc = g_tl[st[k]].vc;
    for (int j = 0; j < ns; j++) vc[st[j]]++;
  }
}
static bool join_ticks(const int *st, int ns) {
  const uint32_t *vc0 = g_tl[st[0]].vc;
  size_t bytes = (size_t)g_ntl * sizeof vc0[0];
  for (int k = 0; k < ns; k++) {
    const timeline *t = &g_tl[st[k]];
    if (t->host_ver != g_host_ver || t->kind != TL_NONBLOCKING) return false;
    if (k > 0 && memcmp(t->vc, vc0, bytes) != 0) return false;
  }
  ticks_apply(st, ns);
  return true;
}

/* The replay's accesses, once its timelines are joined: each entry's
 * range's use and its slot's new epoch, in entry order. */
static inline void replay_ranges(thread_state *ts) {
  int n = ts->rp_n;
  uint64_t u = g_use;
  for (int i = 0; i < n; i++) {
    range *r = ts->rp_r[i];
    r->last_use = ts->rp_use[i] = ++u;
    int k = ts->rp_slot[i], s = ts->rp_tl[i];
    if (k >= 0) r->acc[k].clk = g_tl[s].vc[s];
  }
  g_use = u;
}

/* Caller holds g_mu; ts->npending == ts->rp_n != 0, ts->rp_ns != 0. True
 * when the group was replayed (see "Repeated groups on several streams"),
 * false with nothing changed. A replay whose join was join_ticks' sets
 * rp_ver to the section's version (the end of the section: nothing after
 * the replay changes the analyzer's state in it; see "Back-to-back
 * replays"). */
static bool group_replay_multi(thread_state *ts) {
  int n = ts->rp_n, ns = ts->rp_ns;
  if (ts->rp_epoch != g_tl_epoch || g_nr + 3 > MAX_RANGES) return false;
  for (int k = 0; k < ns; k++)
    if (g_tl[ts->rp_st[k]].capturing) return false;
  for (int i = 0; i < n; i++)
    if (ts->rp_slot[i] != HB_SLOT_USE && !memo_holds(ts->rp_r[i], &ts->p[i], ts->rp_use[i]))
      return false;
  if (!join_ticks(ts->rp_st, ns)) {
    group_join(ts->rp_st, ns);
    replay_ranges(ts);
    return true;
  }
  replay_ranges(ts);
  /* The addresses group_replay_quick writes through: g_tl and the range
   * pool are allocated once (hb_init), and while rp_ver is current the
   * timelines and ranges are the ones they were taken from. */
  ts->rp_ver = atomic_load_explicit(&g_lock_ver, memory_order_relaxed);
  for (int i = 0; i < n; i++) {
    int k = ts->rp_slot[i];
    ts->rp_clk[i] = k >= 0 ? &ts->rp_r[i]->acc[k].clk : &ts->rp_sink;
  }
  ts->rp_nt = 0;
  if (ns * ns <= RP_TICKS) {
    for (int k = 0; k < ns; k++)
      for (int j = 0; j < ns; j++) ts->rp_tick[ts->rp_nt++] = &g_tl[ts->rp_st[k]].vc[ts->rp_st[j]];
  }
  return true;
}

/* Back-to-back replays. nccl-tests posts its `-g` group step after step
 * with nothing else between (its timing loop), so a group end that
 * replays on several streams mostly finds the state the thread's previous
 * group end left. When that end replayed through join_ticks and g_lock_ver
 * is still the value it read at the end of its section (rp_ver; read here
 * under g_mu, which every writer of it holds), and neither a coalesced
 * slot is open nor a copy staged (one read each, before this section's
 * drains, which are then skipped: read so, they do nothing), the replay's
 * tests are not made again, and it is only join_ticks' ticks and the
 * ranges' updates (group_replay_quick). Exact, because then nothing that
 * group_replay_multi and join_ticks read changed since that replay:
 *  - every section but three advances g_lock_ver: launch_repeat's locked
 *    branch changes clocks and histories only for a launch memo taken at
 *    the current version, i.e. in a section after that end's (which takes
 *    none) - there was none; default_stream_warning only reads;
 *    cudaEventDestroy's removes an event slot, which no replay reads. A
 *    coalesced slot is opened only by that locked branch (so none is; the
 *    test is kept as hb_record_wait makes it), deferred copies are
 *    g_staged's (tested). So the clocks, the timelines (g_tl_epoch,
 *    g_host_ver, kinds, capturing), the ranges (live, bounds, last_use,
 *    histories), g_nr and g_use are as that replay left them; the
 *    thread's entries are its own (npending == rp_n: pending_repeat kept
 *    each one, as for any replay; any other change clears rp_n);
 *  - as that replay left them, the tests hold again: the epoch, the pool,
 *    no capture and the timelines' kinds and host versions unchanged; each
 *    range's last_use is the rp_use it wrote; the clocks, equal before its
 *    ticks, were each raised at the same entries, so they are equal
 *    still. join_ticks would return true, and group_replay_multi do what
 *    group_replay_quick does.
 * Any other section in between (another thread's call, a synchronization,
 * a launch that took the lock), a reinitialization (which advances the
 * version and clears the thread's state) or a replay through group_join
 * leaves the full tests to decide. */
static void group_replay_quick(thread_state *ts) {
  /* ticks_apply and replay_ranges through the addresses the replay that
   * set rp_ver kept (the same entries, in the same order). replay_ranges
   * sets a slot's epoch to its timeline's own clock entry, which that
   * replay (or the last quick one) left so, and the ticks raise every
   * own entry by exactly one (the timelines are distinct: each clock has
   * each of their entries raised once, its own among them), so the new
   * own entry is the slot's epoch plus one. */
  int nt = ts->rp_nt, n = ts->rp_n;
  if (nt) {
    /* (Unrolled: a replay on k streams raises k * k entries, each with a
     * loop iteration's overhead otherwise; 16 is four streams' group.) */
#pragma GCC unroll 16
    for (int i = 0; i < nt; i++) (*ts->rp_tick[i])++;
  } else {
    ticks_apply(ts->rp_st, ts->rp_ns);
  }
  uint64_t u = g_use;
  for (int i = 0; i < n; i++) {
    ts->rp_r[i]->last_use = ts->rp_use[i] = ++u;
    (*ts->rp_clk[i])++;
  }
  g_use = u;
}

/* Enqueue the pending accesses of ts (the outermost ncclGroupEnd).
 * Caller holds g_mu. The common case, every access on one stream
 * argument, needs no per-access timeline or epoch: one lookup, one set of
 * edges, one tick. ts's range slots for its first two entries
 * (range_memo) and its replay (see "Repeated groups") are kept. */
static void pending_apply(thread_state *ts, uint32_t thread) {
  pending *arr = ts->p;
  int npending = ts->npending;
  uint16_t *memo = ts->rmemo;
  ts->rp_n = 0; /* set again below if the fast path applies them */
  const pending *p0 = &arr[0];
  for (int i = 1; i < npending; i++)
    if (!same_stream(&arr[i], p0)) {
      pending_apply_multi(ts, thread);
      return;
    }
  int s = tl_of(p0->stream, p0->per_thread, thread, p0->device);
  if (s < 0 || g_tl[s].capturing) return; /* (a capturing stream's accesses are skipped) */
  enqueue_edges(s);
  uint32_t clk = tick(s);
  range *rr[2] = {NULL, NULL}; /* (set by comm_fast_pend for its n entries) */
  int slot[2] = {-1, -1};
  if (npending <= 2 && arr[0].stk != &arr[0].scratch &&
      (npending == 1 || arr[1].stk != &arr[1].scratch) &&
      comm_fast_pend(npending, arr, s, clk, memo, rr, slot)) {
    group_memo_set(ts, npending, s, rr, slot);
    return;
  }
  pending_access_one(arr, npending, s, clk);
}

/* The creating call of a device's example blocking stream, symbolized once
 * per thread and site (the symbolizer takes the runtime's report lock; a
 * program that is warned about keeps posting on the legacy stream). */
static _Thread_local struct { const void *site; char text[256]; } t_blk_site;

/* stream.default-stream: communication on the legacy default stream of a
 * device that has blocking streams (see "Blocking streams per device").
 * Two relaxed loads when it does not apply; the lock and the message only
 * when it does. */
static void default_stream_warning(const a2a_event *ev, const char *what) {
  bool legacy = ev->stream == STREAM_LEGACY || (ev->stream == NULL && !ev->per_thread);
  if (!legacy) return;
  int dev = dev_of(ev);
  if (dev < 0 || dev >= HB_MAX_DEV) return;
  int nblk = atomic_load_explicit(&g_dev_blocking[dev], memory_order_relaxed);
  bool ptds = atomic_load_explicit(&g_dev_ptds[dev], memory_order_relaxed);
  if ((nblk <= 0 && !ptds) || !a2a_check_on(A2A_CK_STREAM_DEFAULT_STREAM)) return;
  a2a_lock_acquire(&g_mu);
  void *example = g_dev_blk_example[dev];
  const void *site = g_dev_blk_site[dev];
  a2a_lock_release(&g_mu);
  char others[640] = "", created[300] = "";
  if (nblk > 0 && example) {
    if (site && t_blk_site.site != site) {
      a2a_hostsvc->site_text(site, t_blk_site.text, sizeof t_blk_site.text);
      t_blk_site.site = site;
    }
    if (site) snprintf(created, sizeof created, " at %s", t_blk_site.text);
    snprintf(others, sizeof others,
             "%d blocking stream%s (created without cudaStreamNonBlocking; the latest, %p, "
             "created%s)%s",
             nblk, nblk == 1 ? "" : "s", example, created,
             ptds ? " and per-thread default streams" : "");
  } else if (nblk > 0) {
    snprintf(others, sizeof others, "%d blocking stream%s (created without "
             "cudaStreamNonBlocking)%s", nblk, nblk == 1 ? "" : "s",
             ptds ? " and per-thread default streams" : "");
  } else {
    snprintf(others, sizeof others, "per-thread default streams (cudaStreamPerThread, "
             "--default-stream per-thread), which are blocking");
  }
  char msg[1400], js[768];
  snprintf(msg, sizeof msg,
           "%s runs on the legacy default stream of device %d, and device %d also has %s: "
           "CUDA orders the legacy default stream with every blocking stream of its device "
           "(work enqueued on those streams after this communication waits for it, and the "
           "communication waits for their earlier work), so it cannot overlap their "
           "computation. Fix: %s",
           what, dev, dev, others,
           nblk > 0 ? "create those streams with cudaStreamNonBlocking (as torch.cuda.Stream "
                      "and NCCL's own streams are), or pass NCCL a stream created with "
                      "cudaStreamNonBlocking."
                    : "pass NCCL cudaStreamPerThread (stream 0 means the legacy stream to NCCL, "
                      "which is not built for per-thread default streams) or a stream created "
                      "with cudaStreamNonBlocking.");
  a2a_json j;
  a2a_json_init(&j, js, sizeof js);
  a2a_json_obj_begin(&j, NULL);
  a2a_json_str(&j, "operation", what);
  a2a_json_int(&j, "device", dev);
  a2a_json_ptr(&j, "stream", ev->stream);
  a2a_json_int(&j, "blocking_streams", nblk);
  a2a_json_bool(&j, "per_thread_default_streams", ptds);
  if (example) a2a_json_ptr(&j, "example_stream", example);
  if (example && site) {
    a2a_json_ptr(&j, "example_stream_created_at", site);
    a2a_json_str(&j, "example_stream_created_at_text", t_blk_site.text);
  }
  a2a_json_obj_end(&j);
  a2a_finding f = {.check = A2A_CK_STREAM_DEFAULT_STREAM, .severity = A2A_SEV_WARNING,
                   .site = ev->callsite, .comm = a2a_comm_lookup(ev->comm),
                   .message = msg, .details_json = js, .capture_stack = true};
  a2a_report(&f);
}

/* Byte extents of a collective's send and receive buffers on this rank. */
static inline __attribute__((always_inline)) void coll_extents(const a2a_event *ev, size_t *sbytes,
                                                                size_t *rbytes) {
  size_t n = ev->u.coll.count * a2a_dtype_size(ev->u.coll.dtype);
  if (ev->u.coll.coll == A2A_COLL_ALLREDUCE) { /* needs neither size nor rank */
    *sbytes = *rbytes = n;
    return;
  }
  const a2a_comm *c = a2a_comm_lookup(ev->comm);
  size_t nr = c && c->nranks > 0 ? (size_t)c->nranks : 1;
  int rank = c ? c->rank : -1;
  bool root = c ? rank == ev->u.coll.root : true; /* unknown comm: assume both */
  *sbytes = *rbytes = 0;
  switch (ev->u.coll.coll) {
  case A2A_COLL_ALLREDUCE: *sbytes = n; *rbytes = n; break;
  case A2A_COLL_BROADCAST: *sbytes = root ? n : 0; *rbytes = n; break;
  case A2A_COLL_REDUCE: *sbytes = n; *rbytes = root ? n : 0; break;
  case A2A_COLL_ALLGATHER: *sbytes = n; *rbytes = n * nr; break;
  case A2A_COLL_REDUCESCATTER: *sbytes = n * nr; *rbytes = n; break;
  case A2A_COLL_ALLTOALL: *sbytes = n * nr; *rbytes = n * nr; break;
  case A2A_COLL_GATHER: *sbytes = n; *rbytes = root ? n * nr : 0; break;
  case A2A_COLL_SCATTER: *sbytes = root ? n * nr : 0; *rbytes = n; break;
  default: break;
  }
}

/* Whether any of the race checks is enabled (tracking is what costs: none,
 * no tracking): the three a2a_check_on tests, as one load and mask when
 * their bits share a word of the enabled set (constant-folded). */
#define HB_RACE_BIT(id) (1ull << ((unsigned)(id) & 63))
static inline bool race_checks_on(void) {
  if ((unsigned)A2A_CK_STREAM_UNSYNCED_INPUT >> 6 == (unsigned)A2A_CK_STREAM_UNSYNCED_OUTPUT >> 6 &&
      (unsigned)A2A_CK_STREAM_UNSYNCED_INPUT >> 6 == (unsigned)A2A_CK_STREAM_FREE_IN_FLIGHT >> 6 &&
      (unsigned)A2A_CK_STREAM_UNSYNCED_INPUT < (unsigned)A2A_CK__COUNT &&
      (unsigned)A2A_CK_STREAM_UNSYNCED_OUTPUT < (unsigned)A2A_CK__COUNT &&
      (unsigned)A2A_CK_STREAM_FREE_IN_FLIGHT < (unsigned)A2A_CK__COUNT)
    return (atomic_load_explicit(
                &a2a_checks_enabled_w[(unsigned)A2A_CK_STREAM_UNSYNCED_INPUT >> 6],
                memory_order_relaxed) &
            (HB_RACE_BIT(A2A_CK_STREAM_UNSYNCED_INPUT) | HB_RACE_BIT(A2A_CK_STREAM_UNSYNCED_OUTPUT) |
             HB_RACE_BIT(A2A_CK_STREAM_FREE_IN_FLIGHT))) != 0;
  return a2a_check_on(A2A_CK_STREAM_UNSYNCED_INPUT) ||
         a2a_check_on(A2A_CK_STREAM_UNSYNCED_OUTPUT) || a2a_check_on(A2A_CK_STREAM_FREE_IN_FLIGHT);
}

__attribute__((noinline)) static void on_comm_op(const a2a_event *ev) {
  const char *what = ev->api ? ev->api : "nccl";
  size_t sbytes = 0, rbytes = 0;
  uintptr_t sp = 0, rp = 0;
  if (ev->kind == A2A_EV_COLL) {
    /* NCCL drops zero-count collectives: no access, no stream use. */
    if (ev->u.coll.count == 0) return;
    coll_extents(ev, &sbytes, &rbytes);
    sp = (uintptr_t)ev->u.coll.sendbuff;
    rp = (uintptr_t)ev->u.coll.recvbuff;
  } else if (ev->u.p2p.is_send) {
    sbytes = ev->u.p2p.count * a2a_dtype_size(ev->u.p2p.dtype);
    sp = (uintptr_t)ev->u.p2p.buff;
  } else {
    rbytes = ev->u.p2p.count * a2a_dtype_size(ev->u.p2p.dtype);
    rp = (uintptr_t)ev->u.p2p.buff;
  }
  default_stream_warning(ev, what);
  /* Tracking is what costs: none of the race checks enabled, no tracking. */
  if (!race_checks_on()) return;

  thread_state *ts = thread_state_of(ev->thread);
  /* Without per-thread state we cannot tell whether the call is inside a
   * group (whose operations are enqueued later): skip it (can only hide a
   * race). */
  if (!ts) return;
  if (ts->depth > 0) {
    /* Inside a group: NCCL enqueues at the outermost ncclGroupEnd. */
    pending_add(ts, ev, sp, sbytes, F_READ, what);
    pending_add(ts, ev, rp, rbytes, F_WRITE, what);
    return;
  }
  /* An ungrouped call: one stream, one stack lookup for both sides (which
   * never merge: their directions differ). What pending_apply does with
   * the entries pending_add would make, without making them unless
   * comm_fast declines (then they are made as op_side makes them). */
  uintptr_t lo[2], hi[2];
  uint8_t fl[2];
  int n = 0;
  if (sbytes && sp) {
    lo[n] = sp;
    hi[n] = sp + sbytes;
    fl[n++] = F_READ;
  }
  if (rbytes && rp) {
    lo[n] = rp;
    hi[n] = rp + rbytes;
    fl[n++] = F_WRITE;
  }
  if (n == 0) return;
  int dev = dev_of(ev);
  a2a_stack scratch;
  const a2a_stack *stk = NULL;
  if (a2a_opt->stack_depth > 0) {
    stk = site_stack(ts, ev->callsite, &scratch);
    if (stk && stk->n <= 0) stk = NULL;
  }
  report_q q;
  hb_lock(&q);
  int s = tl_of(ev->stream, ev->per_thread, ev->thread, dev);
  if (s >= 0 && !g_tl[s].capturing) { /* (a capturing stream's accesses are skipped) */
    enqueue_edges(s);
    uint32_t clk = tick(s);
    access a; /* both sides' (comm_fast sets each one's flags) */
    acc_set(&a, clk, s, fl[0], 1, ev->callsite, what, ev->comm, stk);
    const access *ap[2] = {&a, &a};
    if (stk == &scratch || !comm_fast(n, lo, hi, fl, ap)) {
      pending now[2];
      for (int i = 0; i < n; i++) {
        op_side(&now[i], ev, dev, lo[i], hi[i] - lo[i], fl[i], what);
        if (stk == &scratch) { /* the site cache is full: each keeps its own */
          now[i].scratch = scratch;
          now[i].stk = &now[i].scratch;
        } else {
          now[i].stk = stk;
        }
      }
      pending_access_one(now, n, s, clk);
    }
  }
  hb_unlock(&q);
}

/* ------------------------------------------------------------------ */
/* Other events (caller holds g_mu unless noted). */

/* Whether r's history holds a communication READ not ordered before vc. */
static bool comm_read_in_flight(const range *r, const uint32_t *vc) {
  for (int i = 0; i < r->nacc; i++) {
    const access *p = &r->acc[i];
    if ((p->flags & F_COMM) && !(p->flags & F_WRITE) && !hb(p, vc)) return true;
  }
  return false;
}

/* The range a launch's parameter word w points into (g_mu held): the
 * range of the previous hit first, then the binary search. A program
 * launches kernel after kernel on the same buffers, and the search costs
 * ~50 instructions per pointer word. Exact: a range is `live` exactly
 * while it is in g_order (range_insert, range_split set it; order_remove_at,
 * a merge and hb_init clear it), live ranges are disjoint, and the bounds
 * g_min_lo / g_max_hi are brought up to date before g_mu is released by
 * every change of the set (pending_apply, drop_span, hb_init), so a live
 * range containing w is the one range_containing(w) returns. A stale hint
 * (its slot freed or reused) fails the test and costs the search. */
static range *g_launch_hint;

static inline range *launch_range_of(uintptr_t w) {
  range *h = g_launch_hint;
  if (h && h->live && h->lo <= w && w < h->hi) return h;
  range *r = range_containing(w);
  if (r) g_launch_hint = r;
  return r;
}

/* Adds r to the launch's distinct hits (a full list drops it). */
static inline void launch_hit(range **hits, int *nhits, range *r) {
  bool dup = false;
  for (int h = 0; h < *nhits; h++) dup |= hits[h] == r;
  if (!dup && *nhits < KERNEL_MAX_HITS) hits[(*nhits)++] = r;
}

static int launch_apply(const a2a_event *ev, const a2a_kparams *f, range **hits, int nhits);

/* Every parameter word of the launch against the ranges (g_mu held). */
static void on_launch(const a2a_event *ev, const a2a_kparams *f) {
  range *hits[KERNEL_MAX_HITS];
  int nhits = 0;
  for (int p = 0; p < f->nparams; p++) {
    const unsigned char *bytes = ev->u.launch.args[p];
    size_t sz = f->size[p];
    if (!bytes || sz < sizeof(uint64_t)) continue;
    if (sz > PARAM_SCAN_MAX) sz = PARAM_SCAN_MAX;
    for (size_t off = 0; off + sizeof(uint64_t) <= sz; off += sizeof(uint64_t)) {
      uint64_t w;
      memcpy(&w, bytes + off, sizeof w);
      range *r = launch_range_of((uintptr_t)w);
      if (!r) {
        if (w && page_maybe((uintptr_t)w)) note_miss((uintptr_t)w);
        continue;
      }
      launch_hit(hits, &nhits, r);
    }
  }
  if (nhits) launch_apply(ev, f, hits, nhits);
}

/* Repeated launches. A program launches the same kernel on the same
 * stream with the same buffers over and over (the MoE step: a hundred
 * kernels in place on the receive buffer of an all-to-all). What a
 * launch's locked lookup finds - its timeline (tl_of), which of its
 * parameter words lie in which tracked range - depends on the words, the
 * stream arguments and the analyzer's maps of handles to timelines and of
 * addresses to ranges, and those maps change only in a locked section that
 * goes through hb_lock (range insertion, removal, split, merge and
 * widening, timeline creation, recycling and unmapping, capture changes:
 * every handler that makes them takes it), or in hb_init. Each of them
 * advances g_lock_ver; the repeated launch below does not (it changes no
 * map: it ticks a clock and rewrites histories). So each thread keeps its
 * last locked launch's lookup, with g_lock_ver as of it: a launch of the
 * same function with the same plan words on the same stream arguments,
 * while g_lock_ver is unchanged, would find the same timeline and the same
 * ranges. launch_repeat then does what launch_apply does for them when
 * every hit's history is ordered before the stream's clock (checked under
 * the lock, as launch_apply checks it), and the locked path otherwise. The
 * memo is taken from the ranges the plan words lie in under the lock
 * (launch_memo_note), not from the lock-free filter's candidates: a word
 * the filter ruled out just before another thread's insert covered it is
 * in the memo's hits.
 */
#define MEMO_HITS 2
static _Atomic int g_staged; /* see "Deferred copies" */
static _Thread_local struct {
  uint64_t ver; /* g_lock_ver when taken; 0: none */
  /* The callsite of the last launch_repeat that applied it, or NO_SITE.
   * Only while thread < MAX_THREADS is it a callsite: launch_memo_note,
   * the only writer of thread, sets NO_SITE, and launch_repeat's applied
   * branch, the only other writer, sets the callsite only for a thread
   * below MAX_THREADS (the thread's slot it opens; before any memo, thread
   * is 0). launch_count's site compare, after launch_memo_match's thread
   * compare, so also rules out a thread past g_coal (tests:
   * stream_hb_launch_site_kept). */
  const void *site;
  void *stream;
  int per_thread, device;
  uint32_t thread;
  /* stream is a stream handle (not 0, cudaStreamLegacy nor
   * cudaStreamPerThread): its timeline is the handle's whatever the
   * per_thread flag and the device (tl_find, tl_is), so those two are not
   * compared (launch_memo_match). */
  bool handle;
  int s; /* the timeline */
  int nhits;
  range *hits[MEMO_HITS];
  const char *what; /* the access's */
  launch_key key; /* key.func: the function */
  /* Which memo answered the thread's previous launch: this one (a counted
   * or locked repeat, or a locked launch, which takes this memo) or the
   * filtered-out one (skip). hb_launch_first tries that one first, alone. */
  bool first;
  /* The filtered-out memo ("Filtered-out repeats"): no part of the repeat
   * memo (it changes also outside sections); here so that a launch loads
   * one thread-local's address for both memos. */
  launch_skip_memo skip;
} t_lmemo;
/* t_lmemo.site of a memo no repeat applied: a data address, never a
 * launch's callsite (a return address into code). */
static const char g_no_site;
#define NO_SITE ((const void *)&g_no_site)

/* After the filter ruled out a launch of plan pl (n >= 0) as of gen (a
 * generation loaded after hb_init: not 0). */
static void launch_skip_note(const a2a_event *ev, const scan_plan *pl, uint64_t gen) {
  key_take(&t_lmemo.skip.key, ev, pl);
  t_lmemo.skip.gen = gen;
}

/* note_miss: the thread's known misses change, the memo goes. */
static void launch_skip_forget(void) { t_lmemo.skip.gen = 0; }

/* Whether the filter would rule out this launch of t_lmemo.skip.key.func
 * again (see "Filtered-out repeats"). */
static inline __attribute__((always_inline)) bool launch_skip(const a2a_event *ev) {
  return key_words_match(&t_lmemo.skip.key, ev, t_lmemo.skip.key.n) &&
         atomic_load_explicit(&g_rng_gen, memory_order_acquire) == t_lmemo.skip.gen;
}

/* Under g_mu, after the locked lookup applied the launch on timeline s:
 * remember the ranges its plan words lie in now. */
static void launch_memo_note(const a2a_event *ev, const scan_plan *pl, int s) {
  t_lmemo.ver = 0;
  if (s < 0 || pl->n <= 0) return;
  int nhits = 0;
  range *hits[KERNEL_MAX_HITS];
  key_take(&t_lmemo.key, ev, pl);
  for (int i = 0; i < pl->n; i++) {
    uint64_t w = t_lmemo.key.w[i];
    if (!w || !page_maybe((uintptr_t)w)) continue; /* bits are set under g_mu */
    range *r = launch_range_of((uintptr_t)w);
    if (r) launch_hit(hits, &nhits, r);
  }
  if (nhits == 0 || nhits > MEMO_HITS) return;
  for (int h = 0; h < nhits; h++) t_lmemo.hits[h] = hits[h];
  t_lmemo.nhits = nhits;
  t_lmemo.s = s;
  t_lmemo.what = pl->f->name ? pl->f->name : "(unnamed)";
  t_lmemo.stream = ev->stream;
  t_lmemo.per_thread = ev->per_thread;
  t_lmemo.thread = ev->thread;
  t_lmemo.site = NO_SITE; /* (the slot is closed: hb_lock drained it) */
  t_lmemo.device = dev_of(ev);
  t_lmemo.handle = ev->stream != NULL && ev->stream != STREAM_LEGACY &&
                   ev->stream != STREAM_PER_THREAD;
  t_lmemo.ver = atomic_load_explicit(&g_lock_ver, memory_order_relaxed);
}

/* The launch's access (kernel what) on timeline s, after its enqueue
 * edges, into *dst (g_mu held; written in place: a range's history or the
 * caller's). */
static inline void launch_access(access *dst, const a2a_event *ev, const char *what, int s) {
  /* (Its inline test: no work for a non-blocking stream, PyTorch's and
   * NCCL's, that holds the current host clock.) */
  enqueue_edges(s);
  /* Member by member: the same access as the compound literal
   * (access){.clk, .tl, .flags, .kind, .site, .what, .stack = -1}, every
   * other member zero, without its fill of the whole struct first (a
   * string store per access; accesses are never compared bytewise, so the
   * padding is no part of their value). */
  dst->clk = tick(s);
  dst->tl = (uint16_t)s;
  dst->flags = F_READ | F_WRITE;
  dst->kind = AK_KERNEL;
  dst->nops = 0;
  dst->site = ev->callsite;
  dst->what = what;
  dst->comm = NULL;
  dst->stk = NULL;
  dst->stack = -1;
  dst->stack_gen = 0;
}
_Static_assert(sizeof(access) == 56, "launch_access writes every member of access: update it");

/* Coalesced repeats. A repeat that launch_repeat applied (under g_mu)
 * opens its thread's slot in g_coal: the timeline and hits it applied the
 * launch on. Every section that reads or writes a clock, a history or
 * g_use first closes every open slot (coal_drain: hb_lock, launch_repeat,
 * stream_hb_copy_ring_count; hb_init resets them; the two sections that
 * do neither - default_stream_warning reads an example stream,
 * cudaEventDestroy removes a handle - leave them). While the slot is open,
 * an equal repeat of the same thread - same function, words, stream
 * arguments (for a default stream - 0, cudaStreamLegacy,
 * cudaStreamPerThread - also the per-thread flag and device; a handle
 * names its timeline alone) (the memo's tests), the same callsite (the
 * access records it; its `what` is the memo's) - only counts one more on
 * the slot, lock-free, and the closing drain applies the count as that
 * many locked repeats back to back, before the section's own work. Exact:
 *  - what the locked repeat would do then: nothing changed since the
 *    slot's repeat (any change is a section, which closes the slot first),
 *    so its tests hold again (the memo's version; not capturing; each
 *    hit's history the previous repeat's access alone, at the stream's
 *    clock: all ordered), enqueue_edges joins nothing new (the host clock,
 *    g_host_ver and every other timeline's clock change only in sections),
 *    and it ticks the stream and writes into each hit the same access with
 *    the new clock and a new last_use, hits[0] first. n such repeats: the
 *    clock n ticks on, each hit's access at it, last_use as the n-th
 *    repeat left it (coal_apply);
 *  - the order: the count is raised by a compare-and-swap from a nonzero
 *    value and claimed by the drain with an exchange to 0 (closed), so a
 *    repeat counted before the claim is applied by that drain, in the
 *    analyzer's order before the section that claims it (the order the
 *    lock would have given had the repeat taken it first: the analyzer
 *    orders calls by handler, not by the real enqueue), and one tried after
 *    it fails and takes the lock. A section whose handler returned before
 *    the repeat's call closed the slot before the count is tried (its
 *    exchange happens before the compare-and-swap): the repeat takes the
 *    lock;
 *  - deferred copies (staged without a section): a repeat counts only
 *    while g_staged is clear, like the locked repeat (which takes the
 *    locked path otherwise, the drain applying the copies first), so a
 *    copy staged before the repeat - by its thread, or by another thread
 *    whose call returned before it - stops the count; one staged after it
 *    or concurrently is applied after it (the drain closes the slots
 *    first). g_staged is loaded before the count, with acquire: a clear
 *    read from a drain's stage_drain follows that section's coal_drain,
 *    whose exchange the compare-and-swap then sees. */
typedef struct coal_slot {
  _Atomic uint32_t n; /* 0: closed; else 1 + the repeats counted */
  int s;
  int nhits;
  range *hits[MEMO_HITS];
} coal_slot;
#define COAL_MAX (1u << 30) /* counts at most: then the lock */
static coal_slot g_coal[MAX_THREADS];
static bool g_coal_open;   /* g_mu: some slot may be open */
static uint32_t g_coal_hi; /* g_mu: 1 + the highest thread that opened one */

/* n locked repeats of slot c back to back (g_mu held; see "Coalesced
 * repeats"): launch_repeat's applied branch n times. */
static void coal_apply(const coal_slot *c, uint32_t n) {
  int s = c->s, nhits = c->nhits;
  uint32_t clk = g_tl[s].vc[s] += n; /* n ticks */
  uint64_t u = g_use + (uint64_t)(n - 1) * (uint64_t)nhits;
  for (int h = 0; h < nhits; h++) {
    range *r = c->hits[h];
    r->acc[0].clk = clk;
    r->last_use = ++u;
  }
  g_use = u;
}

/* Under g_mu, first in a section: close every open slot, applying its
 * count. */
static void coal_drain(void) {
  if (!g_coal_open) return;
  g_coal_open = false;
  for (uint32_t t = 0; t < g_coal_hi; t++) {
    uint32_t n = atomic_exchange_explicit(&g_coal[t].n, 0, memory_order_relaxed);
    if (n > 1) coal_apply(&g_coal[t], n - 1);
  }
  g_coal_hi = 0;
}

/* Under g_mu (initialization, a forked child): every slot closed. */
static void coal_reset(void) {
  for (uint32_t t = 0; t < MAX_THREADS; t++)
    atomic_store_explicit(&g_coal[t].n, 0, memory_order_relaxed);
  g_coal_open = false;
  g_coal_hi = 0;
}

/* t_lmemo.device == dev_of(ev), but false for a thread past MAX_THREADS
 * without a device (whose dev_of is 0): its launch then takes the locked
 * path, exact as ever, and the memo's test needs no value for it (the one
 * bound test picks the failing branch, not dev_of's 0). */
static inline __attribute__((always_inline)) bool launch_memo_device(const a2a_event *ev) {
  if (ev->device >= 0) return t_lmemo.device == ev->device;
  return ev->thread < MAX_THREADS && t_lmemo.device == g_last_dev[ev->thread];
}

/* Whether the thread's memo answers for a launch of t_lmemo.key.func (see
 * "Repeated launches"): the same words and stream arguments. */
static inline __attribute__((always_inline)) bool launch_memo_match(const a2a_event *ev) {
  /* (The words first: a launch of the same kernel on another buffer fails
   * at once.) */
  return key_words_match(&t_lmemo.key, ev, t_lmemo.key.n & 15u) && t_lmemo.stream == ev->stream &&
         t_lmemo.thread == ev->thread &&
         (t_lmemo.handle || (t_lmemo.per_thread == ev->per_thread && launch_memo_device(ev)));
}

/* A launch the thread's memo answers for (launch_memo_match) counted on
 * the thread's open slot (see "Coalesced repeats"): true when counted,
 * false with nothing done. */
static inline __attribute__((always_inline)) bool launch_count(const a2a_event *ev) {
  uint32_t thread = ev->thread;
  /* (A thread past MAX_THREADS fails the site compare: see t_lmemo.site.) */
  if (t_lmemo.site != ev->callsite || atomic_load_explicit(&g_staged, memory_order_acquire))
    return false;
  coal_slot *c = &g_coal[thread];
  uint32_t n = atomic_load_explicit(&c->n, memory_order_relaxed);
  return n && n < COAL_MAX &&
         atomic_compare_exchange_strong_explicit(&c->n, &n, n + 1, memory_order_relaxed,
                                                 memory_order_relaxed);
}

/* A kernel's access k supersedes range r's history, every access of
 * which is ordered before it (launch_apply's all-ordered branch, and
 * launch_repeat's): k goes into acc[0] (coal_apply counts repeats there),
 * alone - except the communication accesses the host clock does not cover
 * yet, which stay behind it. Whether the kernel writes what it is passed
 * is unknown, and a later access of another stream that is not ordered
 * after the kernel may not be ordered after the communication either:
 * against the kernel alone that race is kernel against kernel, which is
 * not reported (a post-processing kernel on the communication stream hid
 * a forgotten wait, QA). Once the host clock covers a communication
 * access, every later enqueue is ordered after it: it goes. */
__attribute__((noinline)) static void kernel_supersede_keep(range *r, const access *k) {
  const uint32_t *host = g_tl[HOST_TL].vc;
  /* The steady state after a communication: [the previous kernel, the
   * communication accesses kept] - only the kernel changes. */
  bool same = !(r->acc[0].flags & F_COMM);
  for (int i = 1; same && i < r->nacc; i++)
    same = (r->acc[i].flags & F_COMM) && !hb(&r->acc[i], host);
  if (same) {
    r->acc[0] = *k;
    return;
  }
  access keep[MAX_ACC];
  int n = 0;
  for (int i = 0; i < r->nacc; i++)
    if ((r->acc[i].flags & F_COMM) && !hb(&r->acc[i], host) && n < MAX_ACC - 1) keep[n++] = r->acc[i];
  r->acc[0] = *k;
  for (int i = 0; i < n; i++) r->acc[1 + i] = keep[i];
  r->nacc = 1 + n;
}
/* (The history a kernel replaces outright: its only access is not
 * communication.) */
static inline bool kernel_plain_history(const range *r) {
  return r->nacc == 1 && !(r->acc[0].flags & F_COMM);
}
static inline __attribute__((always_inline)) void kernel_supersede(range *r, const access *k) {
  if (__builtin_expect(kernel_plain_history(r), 1)) r->acc[0] = *k;
  else kernel_supersede_keep(r, k);
}

/* A launch of t_lmemo.key.func on the thread's memo (see "Repeated
 * launches"): applied (or counted), or false (nothing done) when the
 * memo does not answer for it or a hit's history is not all ordered before
 * the stream. */
static inline __attribute__((always_inline)) bool launch_repeat(const a2a_event *ev) {
  if (!launch_memo_match(ev)) return false;
  if (launch_count(ev)) return true;
  uint32_t thread = ev->thread;
  a2a_lock_acquire(&g_mu);
  /* (First, as every section: this thread's own count, counted before a
   * repeat from another callsite or past COAL_MAX; another thread's slot
   * is closed while this thread's memo is valid - the memo_note that made
   * it ran in hb_lock, and only a locked repeat opens a slot, for a memo
   * valid then - so this drains it only for a memo found stale below.) */
  coal_drain();
  int s = t_lmemo.s, nhits = t_lmemo.nhits;
  /* (Deferred copies are applied by hb_lock first: the locked path.) */
  bool ok = t_lmemo.ver == atomic_load_explicit(&g_lock_ver, memory_order_relaxed) &&
            !g_tl[s].capturing &&
            !atomic_load_explicit(&g_staged, memory_order_relaxed);
  /* Ordered before the clock now: ordered after launch_access's joins,
   * which only grow it. */
  for (int h = 0; ok && h < nhits; h++) ok = all_ordered(t_lmemo.hits[h], g_tl[s].vc);
  if (ok) {
    /* launch_apply's all-ordered branch for each hit. (The access is built
     * in the first hit's history, as the whole history it replaces when
     * that is plain, and copied to the others.) */
    range *r0 = t_lmemo.hits[0];
    if (__builtin_expect(kernel_plain_history(r0), 1)) {
      launch_access(&r0->acc[0], ev, t_lmemo.what, s);
    } else {
      access a;
      launch_access(&a, ev, t_lmemo.what, s);
      kernel_supersede_keep(r0, &a);
    }
    r0->last_use = ++g_use;
    for (int h = 1; h < nhits; h++) {
      range *r = t_lmemo.hits[h];
      r->last_use = ++g_use;
      kernel_supersede(r, &r0->acc[0]);
    }
    if (thread < MAX_THREADS) { /* open the thread's slot */
      t_lmemo.site = ev->callsite;
      coal_slot *c = &g_coal[thread];
      c->s = s;
      c->nhits = nhits;
      for (int h = 0; h < nhits; h++) c->hits[h] = t_lmemo.hits[h];
      atomic_store_explicit(&c->n, 1, memory_order_relaxed);
      g_coal_open = true;
      if (g_coal_hi <= thread) g_coal_hi = thread + 1;
    }
  }
  a2a_lock_release(&g_mu);
  return ok;
}

/* The launch's candidate words (launch_filter) against the ranges (g_mu
 * held): on_launch's result for them (see launch_cands); too many
 * candidates, on_launch itself. A candidate in no range is a miss noted as
 * on_launch notes it (a candidate's page bit was set). The timeline the
 * launch was applied on (launch_apply), or -1. */
static int on_launch_cands(const a2a_event *ev, const a2a_kparams *f, const launch_cands *c) {
  if (c->n > LAUNCH_CANDS) {
    on_launch(ev, f);
    return -1;
  }
  range *hits[KERNEL_MAX_HITS];
  int nhits = 0;
  for (int i = 0; i < c->n; i++) {
    range *r = launch_range_of(c->w[i]);
    if (!r) note_miss(c->w[i]);
    else launch_hit(hits, &nhits, r);
  }
  return nhits ? launch_apply(ev, f, hits, nhits) : -1;
}

/* The launch's access to each of its distinct hit ranges (g_mu held). The
 * timeline it was applied on, or -1 (none; capturing). */
static int launch_apply(const a2a_event *ev, const a2a_kparams *f, range **hits, int nhits) {
  int s = tl_of_ev(ev);
  if (s < 0 || g_tl[s].capturing) return -1;
  access a;
  launch_access(&a, ev, f->name ? f->name : "(unnamed)", s);
  const uint32_t *vc = g_tl[s].vc;
  unsigned rep = 0;
  for (int h = 0; h < nhits; h++) {
    range *r = hits[h];
    /* Every remembered access ordered before the launch (a correct
     * program): no access is in flight, so none is a communication READ in
     * flight and the kernel keeps F_READ | F_WRITE; access_range's fast
     * path for a covering write, inline - the kernel supersedes the range's
     * history but for communication the host has not waited for
     * (kernel_supersede; launch_repeat does the same). */
    if (all_ordered(r, vc)) {
      r->last_use = ++g_use;
      kernel_supersede(r, &a);
      continue;
    }
    /* Whether a kernel writes what it is passed is unknown here. Reading the
     * send buffer of an operation in flight is correct (a residual
     * connection reading the input an asynchronous all-to-all is sending),
     * so a kernel that overlaps an in-flight operation's READ is presumed
     * to read only: not reported, and remembered as a read. Overlapping an
     * in-flight WRITE is reported whatever the kernel does (reading a
     * receive buffer NCCL may still be writing is the race). (Not all
     * ordered: access_range would take its general path.) */
    access ah = a;
    if (comm_read_in_flight(r, vc)) ah.flags = F_READ;
    access_range_slow(r, &ah, true, NULL, &rep);
  }
  return s;
}

/* Whether a copy or memset makes the host wait until it is done: the
 * synchronous variants of D2H/H2D/H2H copies do, D2D copies and memsets do
 * not (CUDA's "API synchronization behavior"), nor does an *Async call -
 * except a device-to-host copy into pageable (unregistered) host memory,
 * which the driver stages and completes before it returns (what the
 * deadlock model takes as a wait too, xrank.c; the runtime answers which
 * memory is pageable, cudaHostRegister'ed ranges included). Called without
 * g_mu (it may ask the runtime about pointers). */
static bool copy_host_waits(const a2a_event *ev) {
  if (ev->kind == A2A_EV_MEMSET) return false;
  int k = ev->u.copy.cpykind;
  if (ev->u.copy.async) {
    if (a2a_copy_queued(ev)) return false; /* H2D, D2D, H2H: never */
    a2a_ptrinfo d, s;
    return a2a_hostsvc->pointer_info(ev->u.copy.dst, &d) == 0 && d.type == 0 &&
           (k == A2A_CPY_D2H ||
            (a2a_hostsvc->pointer_info(ev->u.copy.src, &s) == 0 && s.type >= 2));
  }
  if (k == A2A_CPY_D2D) return false;
  if (k != A2A_CPY_DEFAULT) return true;
  a2a_ptrinfo a, b;
  bool dd = a2a_hostsvc->pointer_info(ev->u.copy.dst, &a) == 0 && a.type >= 2 &&
            a2a_hostsvc->pointer_info(ev->u.copy.src, &b) == 0 && b.type >= 2;
  return !dd;
}

/* What on_copy needs of a copy or memset event: taken from the event at
 * its POST, or kept in a thread's deferred-copy ring until a drain (see
 * "Deferred copies"). device is dev_of(ev) at the call. */
typedef struct copy_rec {
  /* In a thread's deferred-copy ring only: how many copies, identical and
   * consecutive, the entry stands for (see "Repeated copies"); 0 once a
   * drain has claimed it. (First: stage_copy addresses the entry and its
   * count as one.) */
  _Atomic uint32_t n;
  int device;
  void *stream;
  const void *dst, *src;
  size_t bytes;
  const void *site;
  const char *api;
  /* The call's copy kind and async flag: not on_copy's business, but a copy
   * equal to a deferred one in these too is one hb_case_copy defers (see
   * stage_copy). */
  int cpykind;
  bool async;
  int8_t per_thread;
  bool memset_;
} copy_rec;
_Static_assert(sizeof(copy_rec) == 64, "stage_copy indexes a ring of 64-byte entries");

/* (The calling thread, ev->thread, is the caller's to keep: a deferred
 * copy's is its ring's.) */
/* (ms: ev->kind == A2A_EV_MEMSET, which the per-kind handlers know.) */
static inline __attribute__((always_inline)) void copy_rec_of_k(const a2a_event *ev, copy_rec *c,
                                                                bool ms) {
  c->stream = ev->stream;
  c->dst = ev->u.copy.dst;
  c->src = ev->u.copy.src;
  c->bytes = ev->u.copy.bytes;
  c->site = ev->callsite;
  c->api = ev->api;
  c->device = dev_of(ev);
  c->per_thread = (int8_t)ev->per_thread;
  c->memset_ = ms;
  c->async = ev->u.copy.async != 0;
  c->cpykind = ev->u.copy.cpykind;
}

static inline void copy_rec_of(const a2a_event *ev, copy_rec *c) {
  copy_rec_of_k(ev, c, ev->kind == A2A_EV_MEMSET);
}

/* Whether the copy of ev, of a thread below MAX_THREADS, is the one c
 * records (copy_rec_of(ev) would write the same fields; the device as
 * dev_of finds it, inline). */
static inline __attribute__((always_inline)) bool copy_rec_same(const copy_rec *c,
                                                                const a2a_event *ev, bool ms) {
  return c->dst == ev->u.copy.dst && c->stream == ev->stream && c->src == ev->u.copy.src &&
         c->bytes == ev->u.copy.bytes && c->site == ev->callsite && c->api == ev->api &&
         c->per_thread == (int8_t)ev->per_thread && c->memset_ == ms &&
         c->async == (ev->u.copy.async != 0) && c->cpykind == ev->u.copy.cpykind &&
         c->device == (ev->device >= 0 ? ev->device : g_last_dev[ev->thread]);
}

/* Whether a copy or memset event that does not make the host wait goes
 * into the recent-copy ring: unless its destination is known to be host
 * memory. */
static inline __attribute__((always_inline)) bool copy_remembered_k(const a2a_event *ev,
                                                                    bool ms) {
  return ev->u.copy.dst && ev->u.copy.bytes &&
         (ms ||
          (ev->u.copy.cpykind != A2A_CPY_D2H && ev->u.copy.cpykind != A2A_CPY_H2H));
}

static inline bool copy_remembered(const a2a_event *ev) {
  return copy_remembered_k(ev, ev->kind == A2A_EV_MEMSET);
}

/* cudaMemcpy* and cudaMemset* of thread `thread`. Synchronous variants run
 * on the default stream (legacy or per-thread); host_waits:
 * copy_host_waits(ev). remember: the copy goes into the recent-copy ring
 * (!host_waits && copy_remembered(ev)). */
static void on_copy(const copy_rec *c, uint32_t thread, bool host_waits, bool remember) {
  bool memset_ = c->memset_;
  uintptr_t dst = (uintptr_t)c->dst, src = (uintptr_t)c->src;
  size_t n = c->bytes;
  bool touches = span_tracked(dst, dst + n) || (!memset_ && span_tracked(src, src + n));
  if (!touches && !host_waits && !remember) return;
  int s = tl_of(c->stream, c->per_thread, thread, c->device);
  if (s < 0 || g_tl[s].capturing) return;
  enqueue_edges(s);
  if (touches || remember) {
    access a = {.clk = tick(s), .tl = (uint16_t)s, .site = c->site, .stack = -1,
                .what = c->api ? c->api : (memset_ ? "cudaMemset" : "cudaMemcpy"),
                .kind = host_waits ? AK_HOSTCOPY : (memset_ ? AK_MEMSET : AK_MEMCPY)};
    if (touches && !memset_) {
      a.flags = F_READ;
      access_span(src, src + n, &a);
    }
    a.flags = F_WRITE;
    if (touches) access_span(dst, dst + n, &a);
    if (remember) ring_put(dst, dst + n, a.clk, s, a.kind, a.site, a.what);
  }
  if (host_waits) {
    host_join_tl(s);
    ring_expire();
  }
}

/* ------------------------------------------------------------------ */
/* Deferred copies.
 *
 * A copy that does not make the host wait, made while nothing is tracked
 * and no capture is open, only enters the recent-copy ring - yet doing so
 * under g_mu (timeline lookup, edges, a tick) was most of an asynchronous
 * copy's cost. Such a copy is instead appended, without a lock, to a ring
 * of its own thread (single producer: the thread; single consumer: the
 * holder of g_mu), and every holder of g_mu first applies every thread's
 * deferred copies in order (stage_drain: exactly on_copy, as at the
 * copy's POST). So each thread's copies are applied before its own next
 * event that takes the lock, and a copy whose POST returned before another
 * thread's event is applied before that event: the same order the lock
 * would have given, for every pair of calls one of which happened before
 * the other. Two concurrent calls may be applied in either order, as
 * with the lock. The only difference: a copy applied by another thread's
 * drain that touches a range tracked meanwhile (a communication operation
 * concurrent with the copy) is reported with that thread's stack.
 *
 * g_staged says some ring may hold entries. The producer publishes its
 * entry, then (seq_cst) sets the flag if it reads it clear; the drain
 * clears it, then (seq_cst) reads every ring: one of the two sees the
 * other's write (store-buffering with fences), so no entry is left
 * unseen under a clear flag. The lock-free fronts treat a set flag like a
 * non-empty recent-copy ring (event records and waits take the lock). */

#define STAGE_N 32 /* deferred copies per thread */

/* Repeated copies. A program copies the same buffer on the same stream
 * step after step; a copy identical to the thread's latest deferred one
 * (every field of copy_rec) only counts one more on that entry, without
 * a new entry, so the ring fills, and its thread takes the lock, once per
 * STAGE_N * STAGE_REPEAT_MAX such copies instead of every STAGE_N + 1.
 * Exact: the drain applies an entry of count n as n copies back to back
 * (stage_apply), which is what n consecutive identical entries would
 * have been applied as - the same thread's copies in the same order, each
 * with its own tick. The count is claimed by the drain with an exchange
 * (to 0) and raised by the producer with a compare-and-swap from a
 * nonzero value, so a copy counted before the claim is applied by that
 * drain and one tried after it fails and takes a new entry (the usual
 * path, with its publication and flag). An entry with a nonzero count
 * is unclaimed, so its publication's flag is still set or a drain is
 * claiming it (see above): counting on it needs no flag. (The bound keeps
 * the drain's on_copy loop short, for an entry whose span a range made
 * meanwhile touches.) */
#define STAGE_REPEAT_MAX 1024

typedef struct stage_ring {
  _Atomic uint32_t head; /* written by the owning thread */
  _Atomic uint32_t tail; /* written under g_mu */
  /* The owning thread's only: its latest entry, &e[(head - 1) % STAGE_N]
   * (written with head; before the first, e[STAGE_N - 1], count 0). */
  copy_rec *last;
  copy_rec e[STAGE_N];
} stage_ring;

static _Atomic(stage_ring *) g_stage[MAX_THREADS]; /* allocated under g_mu */
static _Atomic uint32_t g_stage_hi;                /* 1 + the highest thread with a ring */
static _Atomic int g_staged;

/* A run of deferred copies on one stream, applied back to back: the
 * stream's timeline is looked up and its enqueue edges applied once (a
 * second enqueue_edges right after the first, with no clock changed in
 * between, joins nothing new); each copy still gets its own tick. */
typedef struct stage_run {
  bool ok;
  void *stream;
  int8_t per_thread;
  uint32_t thread;
  int device;
  int s;
} stage_run;

/* on_copy(c, thread, false, true) for a deferred copy of thread `thread`
 * (stage_copy deferred only copies the ring remembers, whose pages no
 * tracked range touched): it only enters the recent-copy ring. tracked:
 * g_nr != 0 (no deferred copy changes the ranges). */
static inline void stage_apply(const copy_rec *c, uint32_t n, uint32_t thread, bool tracked,
                               stage_run *run) {
  if (tracked) { /* the copy may touch a range (one made meanwhile, concurrently) */
    uintptr_t d = (uintptr_t)c->dst, sp = (uintptr_t)c->src;
    if (span_tracked(d, d + c->bytes) || (!c->memset_ && span_tracked(sp, sp + c->bytes))) {
      run->ok = false;
      for (uint32_t k = 0; k < n; k++) on_copy(c, thread, false, true);
      return;
    }
  }
  if (!run->ok || run->stream != c->stream || run->per_thread != c->per_thread ||
      run->thread != thread || run->device != c->device) {
    int s = tl_of(c->stream, c->per_thread, thread, c->device);
    run->ok = false;
    if (s < 0 || g_tl[s].capturing) return;
    enqueue_edges(s);
    *run = (stage_run){true, c->stream, c->per_thread, thread, c->device, s};
  }
  int s = run->s;
  uintptr_t dst = (uintptr_t)c->dst;
  ring_put_n(dst, dst + c->bytes, n, s, c->memset_ ? AK_MEMSET : AK_MEMCPY, c->site,
             c->api ? c->api : (c->memset_ ? "cudaMemset" : "cudaMemcpy"));
}

/* Under g_mu: apply every deferred copy, each thread's in order. */
static void stage_drain(void) {
  if (!atomic_load_explicit(&g_staged, memory_order_relaxed)) return;
  atomic_store(&g_staged, 0); /* seq_cst: see above */
  uint32_t hi = atomic_load(&g_stage_hi);
  stage_run run = {.ok = false};
  bool tracked = g_nr != 0;
  for (uint32_t i = 0; i < hi; i++) {
    stage_ring *r = atomic_load_explicit(&g_stage[i], memory_order_relaxed);
    if (!r) continue;
    uint32_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint32_t h = atomic_load(&r->head); /* seq_cst: see above */
    for (; t != h; t++) {
      copy_rec *c = &r->e[t % STAGE_N];
      uint32_t n = atomic_exchange(&c->n, 0); /* claimed: see "Repeated copies" */
      if (n) stage_apply(c, n, i, tracked, &run);
    }
    atomic_store_explicit(&r->tail, t, memory_order_release);
  }
}

/* hb_case_copy's copy or memset (ms: a memset) that passed its tests of
 * the call's result and the analyzer's state: true when it is done with -
 * counted on its thread's latest deferred entry, deferred as a new one, or
 * a copy the ring does not remember (nothing to do) - false when it goes
 * the locked way: a kind that makes the host wait, a thread without a ring
 * yet (the first call allocates it) or with a full one (the drain empties
 * it). */
static inline __attribute__((always_inline)) bool stage_copy(const a2a_event *ev, bool ms) {
  stage_ring *r = ev->thread < MAX_THREADS
                      ? atomic_load_explicit(&g_stage[ev->thread], memory_order_acquire)
                      : NULL;
  if (r) {
    /* The latest entry (r->last: slot head - 1; never written, its count
     * 0, before the first): one more of it if the copy is the same (see
     * "Repeated copies"). Equal in every field, the async flag and the
     * copy kind included, the copy passes the tests below as the entry
     * did: its kind and flags are deferrable, its destination remembered. */
    copy_rec *last = r->last;
    uint32_t n = atomic_load_explicit(&last->n, memory_order_relaxed);
    if (n != 0 && n < STAGE_REPEAT_MAX && copy_rec_same(last, ev, ms) &&
        atomic_compare_exchange_strong(&last->n, &n, n + 1))
      return true;
  }
  /* (The kinds that may make the host wait are not deferred - an
   * asynchronous device-to-host or Default copy may, into pageable memory:
   * copy_host_waits asks; a copy the ring does not remember has nothing to
   * do.) */
  if (!(ms || ev->u.copy.cpykind == A2A_CPY_D2D || (ev->u.copy.async && a2a_copy_queued(ev))))
    return false;
  if (!copy_remembered_k(ev, ms)) return true;
  if (!r) return false;
  uint32_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
  if (h - atomic_load_explicit(&r->tail, memory_order_acquire) >= STAGE_N) return false;
  copy_rec *c = &r->e[h % STAGE_N];
  copy_rec_of_k(ev, c, ms);
  atomic_store_explicit(&c->n, 1, memory_order_relaxed); /* published by the head */
  r->last = c;
  atomic_store(&r->head, h + 1); /* seq_cst: see above */
  if (!atomic_load(&g_staged)) atomic_store_explicit(&g_staged, 1, memory_order_relaxed);
  return true;
}

/* Under g_mu: give thread a ring (its next copies are deferred). */
static void stage_alloc(uint32_t thread) {
  if (thread >= MAX_THREADS || atomic_load_explicit(&g_stage[thread], memory_order_relaxed)) return;
  stage_ring *r = calloc(1, sizeof *r);
  if (!r) return; /* its copies keep taking the lock */
  r->last = &r->e[STAGE_N - 1]; /* = &e[(head - 1) % STAGE_N], count 0 */
  atomic_store_explicit(&g_stage[thread], r, memory_order_release);
  if (atomic_load(&g_stage_hi) <= thread) atomic_store(&g_stage_hi, thread + 1);
}

/* Under g_mu (initialization, a forked child): every ring empty. Rings
 * are kept: a thread may be between its load of the ring and its store. */
static void stage_reset(void) {
  for (uint32_t i = 0; i < MAX_THREADS; i++) {
    stage_ring *r = atomic_load(&g_stage[i]);
    if (!r) continue;
    /* Counts to 0 first: no later copy may count on a dropped entry. */
    for (int k = 0; k < STAGE_N; k++) atomic_store(&r->e[k].n, 0);
    atomic_store(&r->tail, atomic_load(&r->head));
  }
  atomic_store(&g_staged, 0);
}

static void drop_span(uintptr_t lo, uintptr_t hi) {
  ring_drop_span(lo, hi);
  size_t k = pos_after(lo);
  while (k < g_nr && g_rng[g_order[k]].lo < hi) order_remove_at(k);
  atomic_store(&g_nranges, (unsigned)g_nr);
  bounds_update();
}

static void on_free(const a2a_event *ev) {
  uintptr_t p = (uintptr_t)ev->u.mem.ptr;
  if (!p) return;
  a2a_alloc seg;
  uintptr_t lo = p, hi = p + 1;
  a2a_mem_kind mem = ev->u.mem.mem;
  if (a2a_alloc_find(ev->u.mem.ptr, &seg)) {
    lo = seg.base;
    hi = seg.base + seg.size;
    mem = seg.mem;
  } else {
    range *r = range_containing(p);
    if (r) { lo = r->lo; hi = r->hi; }
  }
  if (mem == A2A_MEM_HOST_PINNED) return; /* not a NCCL buffer we track */
  int tl;
  if (ev->u.mem.async) {
    tl = tl_of_ev(ev);
    if (tl < 0 || g_tl[tl].capturing) return;
    enqueue_edges(tl);
  } else if (mem == A2A_MEM_DEVICE_ASYNC) {
    /* cudaFree of stream-ordered memory does not synchronize. */
    tl = HOST_TL;
  } else {
    /* cudaFree of cudaMalloc memory synchronizes the device in practice (the
     * documentation says it "may"): model it as cudaDeviceSynchronize. */
    host_join_device(dev_of(ev));
    drop_span(lo, hi);
    return;
  }
  access a = {.clk = g_tl[tl].vc[tl], .tl = (uint16_t)tl, .flags = F_WRITE, .kind = AK_FREE,
              .site = ev->callsite, .what = ev->api ? ev->api : "cudaFree", .stack = -1};
  unsigned rep = 0;
  for (size_t k = pos_after(lo); k < g_nr && g_rng[g_order[k]].lo < hi; k++)
    access_range(&g_rng[g_order[k]], &a, false, NULL, &rep);
  drop_span(lo, hi);
}

/* ------------------------------------------------------------------ */
/* Analyzer interface */

static void *xcalloc(size_t n, size_t sz) { return calloc(n, sz); }

static int hb_init(void) {
  a2a_lock_acquire(&g_mu);
  if (!g_tl) g_tl = xcalloc(MAX_TL, sizeof *g_tl);
  if (!g_sreg) g_sreg = xcalloc(SREG_SLOTS, sizeof *g_sreg);
  if (g_ev && g_ev_slots != EV_SLOTS) { /* grown in an earlier run (unit tests re-init) */
    free(g_ev);
    g_ev = NULL;
  }
  if (!g_ev) g_ev = xcalloc(EV_SLOTS, sizeof *g_ev);
  g_ev_slots = EV_SLOTS;
  if (!g_rng) g_rng = xcalloc(MAX_RANGES, sizeof *g_rng);
  if (!g_order) g_order = xcalloc(MAX_RANGES, sizeof *g_order);
  if (!g_stacks) g_stacks = xcalloc(STACK_RING, sizeof *g_stacks);
  int rc = (g_tl && g_sreg && g_ev && g_rng && g_order && g_stacks) ? 0 : -1;
  if (rc == 0) {
    /* (Re)initialization starts from a clean slate (unit tests re-init). */
    atomic_fetch_add(&g_plan_epoch, 1); /* the layouts were just reset */
    memset(g_tl, 0, MAX_TL * sizeof *g_tl);
    memset(g_sreg, 0, SREG_SLOTS * sizeof *g_sreg);
    g_nsreg = 0;
    memset(g_ev, 0, EV_SLOTS * sizeof *g_ev);
    memset(g_stacks, 0, STACK_RING * sizeof *g_stacks);
    g_ntl = 1; /* the host */
    g_host_ver = 1;
    for (size_t i = 0; i < MAX_RANGES; i++) g_rng[i].live = false;
    pool_reset();
    memset(g_rng_hint, 0, sizeof g_rng_hint);
    g_launch_hint = NULL;
    lock_advance(); /* every thread's launch and query memo */
    rng_grew();   /* and filtered-out launch memo (the plans change) */
    memset(g_tl_hint, 0, sizeof g_tl_hint);
    g_tl[HOST_TL].kind = TL_HOST;
    g_tl[HOST_TL].live = true;
    g_tl_epoch++; /* tl_of's cache */
    g_tl[HOST_TL].device = -1;
    g_nev = 0;
    g_nr = 0;
    g_use = 0;
    g_stack_next = 0;
    bounds_update();
    for (int i = 0; i < MAX_THREADS; i++) {
      if (g_threads[i]) memset(g_threads[i], 0, sizeof *g_threads[i]);
      g_last_dev[i] = 0;
    }
    atomic_store(&g_nranges, 0u);
    memset(g_ring, 0, sizeof g_ring);
    g_ring_next = 0;
    ring_set_live(0);
    atomic_store(&g_ncapture, 0);
    stage_reset();
    coal_reset();
    atomic_store(&g_disabled, false);
    atomic_store(&g_copy_locked, 0);
    for (int d = 0; d < HB_MAX_DEV; d++) {
      atomic_store(&g_dev_blocking[d], 0);
      atomic_store(&g_dev_ptds[d], false);
      g_dev_blk_example[d] = NULL;
      g_dev_blk_site[d] = NULL;
    }
  }
  a2a_lock_release(&g_mu);
  return rc;
}

static bool ok_result(const a2a_event *ev) { return ev->result == 0; }

/* cudaEventRecord (g_mu held): the event captures the stream's clock. */
static inline __attribute__((always_inline)) void on_record(const a2a_event *ev) {
  int s = tl_of_ev(ev);
  if (s < 0) return;
  ev_slot *e = ev_find(ev->u.event.event, true);
  if (g_tl[s].capturing) {
    /* A graph node, not a completion point: the eager clock (if any) is
     * kept; a stream waiting on it joins the capture. */
    if (e) e->cap_origin = g_tl[s].cap_origin;
    return;
  }
  enqueue_edges(s);
  if (!e) return;
  /* The clock entries of timelines not made yet are 0 in every clock and
   * stay 0 in e->vc (slots start zeroed; g_ntl only grows until init):
   * copy the ones in use. */
  memcpy(e->vc, g_tl[s].vc, (size_t)g_ntl * sizeof e->vc[0]);
  e->recorded = true;
  e->cap_origin = 0;
}

/* cudaStreamWaitEvent (g_mu held): the stream joins the event's clock. */
static inline __attribute__((always_inline)) void on_wait(const a2a_event *ev) {
  int s = tl_of_ev(ev);
  if (s < 0 || g_tl[s].capturing) return;
  ev_slot *e = ev_find(ev->u.event.event, false);
  if (e && e->cap_origin && g_tl[e->cap_origin].capturing) {
    set_capturing(s, true, e->cap_origin); /* forked into the capture */
    return;
  }
  enqueue_edges(s);
  if (e && e->recorded) vc_join(g_tl[s].vc, e->vc);
}

/* Host functions (cudaLaunchHostFunc). A host function runs once the work
 * enqueued before it on its stream completed; a program may wait for it
 * without any CUDA call (a flag it sets) and then use that work. The
 * runtime tells when one starts (A2A_EV_HOST_FUNC_RAN, before the
 * application's function runs, after its HOST_FUNC's POST: shim's
 * rt_hostfn.c), so its enqueue is recorded like an event record under its
 * token (the token is a slot of the runtime's, never a CUDA event's
 * handle), and its start is a host synchronization with that event - as
 * a successful cudaEventQuery of it would be: host threads are one
 * timeline, and once the function started, that work is complete for
 * anything the host does afterwards. Joining it when the function starts
 * rather than when the host sees its flag can only hide a race whose
 * later access was issued after the function ran anyway (the work it
 * follows had completed: no overlap happened in this run) - the same
 * stance as a successful query. Not recorded: a capturing stream (the
 * runtime does not wrap those), a token-less enqueue, and once half the
 * event table is in use (its overflow disables the analyzer: real events
 * first). g_mu held. */
static void host_func_enqueued(int s, const void *token) {
  /* (Half of what the largest table holds before the analyzer gives up.) */
  if (!token || g_nev >= EV_SLOTS_MAX * 3 / 8) return;
  ev_slot *e = ev_find((void *)token, true);
  if (!e) return;
  memcpy(e->vc, g_tl[s].vc, (size_t)g_ntl * sizeof e->vc[0]);
  e->recorded = true;
  e->cap_origin = 0;
}

/* A host function started (g_mu held): the host joins what its enqueue
 * recorded, and the token's slot goes (each token's RAN comes once). */
static void host_func_ran(const void *token) {
  if (!token || !g_nev) return;
  ev_slot *e = ev_find((void *)token, false);
  if (!e) return;
  if (e->recorded) host_join(e->vc);
  ev_remove((void *)token);
  ring_expire();
}

/* The record or wait of ev (g_mu held). Neither reports: no access is
 * checked (report() is reached only from access_range_slow). */
static inline __attribute__((always_inline)) void record_wait_locked(const a2a_event *ev) {
  if (ev->kind == A2A_EV_EVENT_RECORD) on_record(ev);
  else on_wait(ev);
}

/* hb_record_wait's section when hb_lock's drains have work (a coalesced
 * slot may be open, or a copy is staged): g_mu held and g_lock_ver
 * advanced by the caller; the rest of hb_lock (the report queue, the
 * drains), the record or wait, hb_unlock. */
__attribute__((noinline)) static void hb_record_wait_drain(const a2a_event *ev) {
  report_q q;
  q_open(&q);
  hb_drains();
  record_wait_locked(ev);
  hb_unlock(&q);
}

/* Event records and stream waits while the analyzer is active (the front
 * tested that): hb_other's path for them, without its dispatch. hb_lock's
 * section, its report queue only when a drain has work: its drains are
 * what may report in it (the deferred copies they apply); with neither a
 * coalesced slot open nor a copy staged (the tests coal_drain and
 * stage_drain begin with, under g_mu as there) they do nothing, the
 * record or wait reports nothing, and the queue would stay empty - the
 * same state, without setting tls_q (NULL outside a section) or the
 * queue's frame. */
__attribute__((noinline)) static void hb_record_wait(const a2a_event *ev) {
  if (atomic_load_explicit(&g_disabled, memory_order_relaxed) || !ok_result(ev)) return;
  a2a_lock_acquire(&g_mu);
  lock_advance(); /* see "Repeated launches" and "Repeated queries" */
  if (g_coal_open || atomic_load_explicit(&g_staged, memory_order_relaxed)) {
    hb_record_wait_drain(ev);
    return;
  }
  record_wait_locked(ev);
  a2a_lock_release(&g_mu);
}

__attribute__((noinline)) static void hb_other(const a2a_event *ev);

/* A launch while ranges are tracked (the front tested that): hb_other's
 * path for it, without its dispatch. The parameter words against the
 * page filter, the lock only when one may hit. */
__attribute__((noinline)) static void hb_launch_locked(const a2a_event *ev, const scan_plan *pl,
                                                      const launch_cands *c) {
  report_q q;
  hb_lock(&q);
  launch_memo_note(ev, pl, on_launch_cands(ev, pl->f, c));
  hb_unlock(&q);
}

/* ncclGroupStart: one more level of the thread's group nesting.
 *
 * Nested group calls (a2a_analyzer.nested; a2a_group_nested) do not reach
 * this analyzer. Its depth counts as the shim's does (a start that
 * returned 0, an end while positive whatever its result, both at POST),
 * from zero at init and in a forked child (hb_init) as the shim's -
 * while the thread has a state: a successful start without one (a thread
 * past MAX_THREADS, an allocation that failed) vetoes the thread's nested
 * rows (a2a_group_nested_full), at a start the shim did not find
 * nested (a vetoed thread's are none), so every later group call of the
 * thread reaches it as before. (A state, once there, stays until init or
 * fork; while g_disabled nothing here acts at all.) So the table's
 * handlers, given every call, would hold the shim's depth d
 * (u.group.depth) at each, and there a nested start (d >= 1) or end
 * (d >= 2) only counts. Left out of the counting, the depth is min(d, 1):
 * the same answer to the operations' tests (depth > 0, <= 0), and the same
 * value at every group call that is not nested (a start at d 0, an end at
 * d <= 1): the outermost end applies the group's accesses exactly when
 * the full count would. */
static inline void hb_group_start(const a2a_event *ev) {
  if (ev->result == 0) {
    thread_state *ts = thread_state_of(ev->thread);
    if (ts) ts->depth++;
    else a2a_group_nested_full(ev->thread);
  }
}
static const a2a_nested hb_nested = {.start = {NULL, NULL}, .end = {NULL, NULL}};

/* ncclGroupEnd: the outermost one enqueues the group's accesses. */
__attribute__((noinline)) static void hb_group_end(const a2a_event *ev) {
  thread_state *ts = thread_state_of(ev->thread);
  if (!ts || ts->depth == 0) return;
  if (--ts->depth > 0) return;
  if (!ev->u.group.simulate && ev->ok && ts->npending) {
    /* hb_lock's section, its drains skipped for a back-to-back replay
     * (see "Back-to-back replays"): the version is read before this
     * section's advance. */
    report_q q;
    q_open(&q);
    a2a_lock_acquire(&g_mu);
    const uint64_t ver = lock_advance();
    bool replayed = false;
    if (ts->npending != ts->rp_n) {
      hb_drains();
    } else if (ts->rp_ver == ver && !g_coal_open &&
               !atomic_load_explicit(&g_staged, memory_order_relaxed)) {
      group_replay_quick(ts); /* (its drains skipped: they would do nothing) */
      ts->rp_ver = ver + 1;
      replayed = true;
    } else {
      hb_drains();
      replayed = ts->rp_ns ? group_replay_multi(ts) : group_replay(ts);
    }
    if (!replayed) pending_apply(ts, ev->thread);
    hb_unlock(&q);
  }
  pending_repeat_set(ts);
  ts->npending = 0;
}

/* A successful cudaStreamSynchronize / cudaStreamQuery: the host waited
 * for the stream. Caller holds g_mu. The timeline, or -1. */
static int stream_sync_locked(const a2a_event *ev) {
  int s = tl_of_ev(ev);
  if (s < 0) return -1;
  /* Synchronizing on the legacy stream also waits for the blocking
   * streams' earlier work it is ordered after. */
  if (g_tl[s].kind == TL_LEGACY) enqueue_edges(s);
  host_join_tl(s);
  ring_expire();
  return s;
}

/* Repeated queries. A polling loop queries the same stream at every round
 * (nccl-tests' wait loop, PyTorch's work.is_completed()), and once the
 * stream is idle nothing changes between rounds. Each thread remembers the
 * stream arguments of its last successful synchronization or query
 * (t_sq), with g_lock_ver as of the end of its locked section. While
 * g_lock_ver is unchanged and nothing is staged, the same query's locked
 * section would do nothing, so it is skipped:
 * - hb_lock's drains: that section's coal_drain closed every coalesced
 *   slot, and only launch_repeat's locked branch opens one, for a launch
 *   memo valid then; the section advanced g_lock_ver (every launch memo
 *   stale), and a launch memo is made valid again only by
 *   launch_memo_note in an hb_lock section, which advances g_lock_ver.
 *   Every deferred copy is counted in g_staged (see "Deferred copies": an
 *   entry published after a drain read the heads sets it; a repeat counts
 *   only on an entry no drain claimed), tested as launch_repeat tests it.
 * - tl_of: the maps of handles to timelines change only in hb_lock
 *   sections or hb_init, which advance g_lock_ver: the same timeline, whose
 *   cache is already filled.
 * - host_join: the host clock covered the stream's clock at the end of
 *   that section (it had just joined it). Clocks change only under g_mu:
 *   in hb_lock's sections and hb_init, which advance g_lock_ver, and in
 *   launch_repeat's locked branch and coal_drain, which need a valid
 *   launch memo or an open slot (above: g_lock_ver advanced since). Still
 *   covered. Not the legacy stream: its query joins the host clock and
 *   the blocking streams' clocks into its own first (enqueue_edges), which
 *   may change it at the next round too.
 * - ring_expire: the ring and the host clock are as that section's
 *   ring_expire left them: nothing more to expire.
 * What skipping the lock leaves out is g_lock_ver's advance, which only
 * makes launch memos stale (they are exact while the state they read is
 * unchanged, and it is). A concurrent thread's section the load of
 * g_lock_ver does not see yet is ordered after the query: a section that
 * happens before it (the same thread, or synchronized by the program) is
 * seen (coherence), so the query is never taken as ordered after less
 * work than it must cover. */
static _Thread_local struct {
  uint64_t ver; /* g_lock_ver when taken; 0: none */
  void *stream;
  int per_thread, device;
  uint32_t thread;
} t_sq;

/* Something tracked, remembered, staged or capturing: hb_other's test
 * ("the rest matters only while..."). */
static inline bool hb_active(void) {
  return atomic_load_explicit(&g_nranges, memory_order_relaxed) != 0 ||
         atomic_load_explicit(&g_nring, memory_order_relaxed) != 0 ||
         atomic_load_explicit(&g_staged, memory_order_relaxed) != 0 ||
         atomic_load_explicit(&g_ncapture, memory_order_relaxed) != 0;
}

/* hb_stream_sync's locked part (out of line: a repeated query keeps no
 * frame), which takes the memo (see "Repeated queries"). */
__attribute__((noinline)) static void hb_stream_sync_locked(const a2a_event *ev) {
  report_q q;
  hb_lock(&q);
  int s = stream_sync_locked(ev);
  t_sq.ver = 0;
  if (s >= 0 && g_tl[s].kind != TL_LEGACY) {
    t_sq.stream = ev->stream;
    t_sq.per_thread = ev->per_thread;
    t_sq.thread = ev->thread;
    t_sq.device = dev_of(ev);
    t_sq.ver = atomic_load_explicit(&g_lock_ver, memory_order_relaxed);
  }
  hb_unlock(&q);
}

/* hb_other's path for a stream synchronization or query (a polling loop
 * queries at every round), without its dispatch: the same tests in the
 * same order - the POST of a successful call, the analyzer enabled, and
 * something tracked, remembered, staged or capturing ("the rest matters
 * only while...") - then a repeated query skipped (see "Repeated
 * queries"). */
__attribute__((noinline)) static void hb_stream_sync(const a2a_event *ev) {
  if (ev->phase != A2A_POST || !ok_result(ev) ||
      atomic_load_explicit(&g_disabled, memory_order_relaxed))
    return;
  if (!hb_active()) return;
  /* g_staged first (acquire), then g_lock_ver: a section that drains the
   * staged copies advances g_lock_ver before it clears g_staged, so a 0
   * read here from that clear makes the advance visible to the load after
   * it. (The other order could read the old version and then the clear,
   * and skip a query whose copies that section had just applied.) */
  if (!atomic_load_explicit(&g_staged, memory_order_acquire) &&
      t_sq.ver == atomic_load_explicit(&g_lock_ver, memory_order_relaxed) &&
      t_sq.stream == ev->stream && t_sq.per_thread == ev->per_thread &&
      t_sq.thread == ev->thread && t_sq.device == dev_of(ev))
    return;
  hb_stream_sync_locked(ev);
}

/* Repeated event queries: a polling loop's cudaEventQuery, like its
 * stream queries (see "Repeated queries"). Each thread remembers the event
 * of its last successful cudaEventQuery/Synchronize, with g_lock_ver as of
 * the end of its section; while that is unchanged and nothing is staged,
 * the same query's section would do nothing: the drains as there; the
 * host clock covered the event's clock at the end of that section, and an
 * event's clock changes only when it is recorded (an hb_lock section),
 * host clock and ring as there. A destroyed event (ev_remove, a section
 * that does not advance g_lock_ver) is no longer found: its query joins
 * nothing, and the ring and the host clock are unchanged - still nothing
 * to do. */
static _Thread_local struct {
  uint64_t ver; /* g_lock_ver when taken; 0: none */
  void *event;
} t_eq;

/* hb_event_sync's locked part (out of line: a repeated query keeps no
 * frame), which takes the memo. */
__attribute__((noinline)) static void hb_event_sync_locked(const a2a_event *ev) {
  report_q q;
  hb_lock(&q);
  ev_slot *e = ev_find(ev->u.event.event, false);
  if (e && e->recorded) host_join(e->vc);
  ring_expire();
  t_eq.event = ev->u.event.event;
  t_eq.ver = atomic_load_explicit(&g_lock_ver, memory_order_relaxed);
  hb_unlock(&q);
}

/* hb_other's path for a successful cudaEventSynchronize / cudaEventQuery
 * (the host waited for the event's work), without its dispatch: the same
 * tests (the POST, the analyzer enabled, something tracked, remembered,
 * staged or capturing, a successful call), then a repeated query
 * skipped. */
__attribute__((noinline)) static void hb_event_sync(const a2a_event *ev) {
  if (ev->phase != A2A_POST || atomic_load_explicit(&g_disabled, memory_order_relaxed))
    return;
  if (!hb_active()) return;
  if (!ok_result(ev)) return;
  if (!atomic_load_explicit(&g_staged, memory_order_acquire) && /* first: hb_stream_sync */
      t_eq.ver == atomic_load_explicit(&g_lock_ver, memory_order_relaxed) &&
      t_eq.event == ev->u.event.event)
    return;
  hb_event_sync_locked(ev);
}

/* hb_on_event's NCCL kinds: hb_other's cases for them. */
__attribute__((noinline)) static void hb_nccl(const a2a_event *ev) {
  if (ev->phase != A2A_POST || atomic_load_explicit(&g_disabled, memory_order_relaxed)) return;
  if (ev->kind == A2A_EV_GROUP_START) hb_group_start(ev);
  else if (ev->kind == A2A_EV_GROUP_END) hb_group_end(ev);
  else if (ev->ok) on_comm_op(ev);
}

_Static_assert(A2A_EV_P2P == A2A_EV_COLL + 1 && A2A_EV_GROUP_START == A2A_EV_COLL + 2 &&
                   A2A_EV_GROUP_END == A2A_EV_COLL + 3,
               "hb_on_event tests the NCCL kinds as one interval");

/* A launch that is no repeat (see "Repeated launches") and not a known
 * filtered-out one (see "Filtered-out repeats", which it notes): the filter
 * inline and the locked part out of line - a launch that takes no lock
 * pays neither a call to the filter nor the report queue's frame. */
__attribute__((noinline)) static void hb_launch_filtered(const a2a_event *ev) {
  const scan_plan *pl = plan_of(ev->u.launch.func);
  if (!pl) return;
  uint64_t gen = atomic_load_explicit(&g_rng_gen, memory_order_acquire);
  launch_cands c;
  if (launch_filter(ev, pl, gen, &c)) {
    hb_launch_locked(ev, pl, &c);
    t_lmemo.first = true;
  } else if (pl->n >= 0) { /* (a kernel with no word at all too: ruled out) */
    launch_skip_note(ev, pl, gen);
    t_lmemo.first = false;
  }
}

/* A launch that the memo hb_launch_first tried did not answer for: both memos
 * (the filtered-out one first, then the repeat, with its locked part),
 * then the filter. The two memos never both answer for a launch (the
 * repeat memo's words lie in ranges as of its g_lock_ver, which every
 * insert, removal and known miss since advances; the filtered-out memo's
 * lie in none as of its stamps, which an insert since ends), so the order
 * of the tests is free, and trying one of them again here (hb_launch_first's
 * test failed) answers as it did. */
__attribute__((noinline)) static void hb_launch_memo(const a2a_event *ev) {
  if (atomic_load_explicit(&g_disabled, memory_order_relaxed)) return; /* see hb_launch_first */
  const void *func = ev->u.launch.func;
  if (t_lmemo.skip.key.func == func && launch_skip(ev)) {
    t_lmemo.first = false;
    return;
  }
  if (t_lmemo.ver && t_lmemo.key.func == func && launch_repeat(ev)) {
    t_lmemo.first = true;
    return;
  }
  hb_launch_filtered(ev);
}

/* The memo that answered the thread's previous launch, alone and
 * lock-free: a
 * program launches the same kernel on the same buffers in runs (the MoE
 * step's hundred launches on its activations, then a hundred on the
 * receive buffer), so the other memo's test would fail each time. Its
 * answer is the one hb_launch_memo would give (the order of the memos is
 * free: see there). The repeat memo's lock-free part: the launch counted
 * on the open slot, which needs no test of the memo's version: the slot
 * is open only after this thread's launch_repeat applied a repeat with
 * the memo valid and as it is now (the memo - all of t_lmemo but `first`,
 * which only says which memo to try first, and `skip`, the other memo -
 * changes only in sections:
 * launch_memo_note under hb_lock, launch_repeat's locked branch, which
 * opens the slot last), and every section since would have closed it
 * ("Coalesced repeats"). Anything else: hb_launch_memo (a tail call; this
 * path keeps no frame), which first returns if the analyzer disabled
 * itself. The two answers here are taken also then: the dispatcher stops
 * calling a disabled analyzer, and a call already under way either does
 * nothing (a filtered-out launch) or raises the count of an open slot,
 * which no section applies while the analyzer is disabled (each handler
 * returns first) and hb_init, which enables it again, closes unapplied. */
static inline __attribute__((always_inline)) void hb_launch_first(const a2a_event *ev) {
  if (!ok_result(ev) || !ev->u.launch.args) return;
  const void *func = ev->u.launch.func;
  if (t_lmemo.first) {
    if (t_lmemo.key.func == func && launch_memo_match(ev) && launch_count(ev)) return;
  } else if (t_lmemo.skip.key.func == func && launch_skip(ev)) {
    return;
  }
  hb_launch_memo(ev);
}

/* hb_launch_first out of line, for hb_on_event and the dispatch table's
 * handlers (hb_k_launch jumps to it; the hot dispatch calls it directly
 * where its read of the gate is this handler's test: hb_post_open). */
__attribute__((noinline)) static void hb_launch(const a2a_event *ev) { hb_launch_first(ev); }

/* hb_on_event's cases, one per kind or group of kinds, each inline in
 * hb_on_event and in the kind's handler of the dispatch table
 * (hb_by_kind), so that the table's handler is exactly hb_on_event's path
 * for its kind, without the tests of the kinds before it. */

/* Launches (the hot path) matter only while communication buffers are
 * tracked (see "Launch prefilter"). For a POST (the callers test it). */
static inline __attribute__((always_inline)) void hb_case_launch(const a2a_event *ev) {
  if (atomic_load_explicit(&g_nranges, memory_order_relaxed) != 0) hb_launch(ev);
}

/* Copies and memsets that do not make the host wait and cannot touch a
 * tracked range (none is tracked, or the launch prefilter's pages of both
 * spans are clear), while no capture is open: a recent copy is deferred
 * (see "Deferred copies"), any other has nothing to do. The rest (a
 * thread's first copy, a full ring, a span that may be tracked) goes the
 * locked way. ms: ev->kind == A2A_EV_MEMSET (a constant in the per-kind
 * handlers); post: the event is known to be a POST (the per-kind handlers:
 * the dispatcher calls this analyzer's handlers only for the kinds of its
 * post mask, its pre mask being empty). */
static inline __attribute__((always_inline)) void hb_case_copy(const a2a_event *ev, bool ms,
                                                                bool post) {
  if ((post || ev->phase == A2A_POST) && ev->result == 0 &&
      atomic_load_explicit(&g_copy_locked, memory_order_relaxed) == 0 && /* no capture, enabled */
      (atomic_load_explicit(&g_nranges, memory_order_relaxed) == 0 ||
       (span_pages_clear((uintptr_t)ev->u.copy.dst, ev->u.copy.bytes) &&
        (ms || span_pages_clear((uintptr_t)ev->u.copy.src, ev->u.copy.bytes))))) {
    if (stage_copy(ev, ms)) return;
  }
  hb_other(ev);
}

/* Event records and stream waits (the other hot calls) only while ranges
 * are tracked, recent copies remembered or a capture is open: hb_other's
 * own test ("the rest matters only while..."), made here without entering
 * it. */
static inline __attribute__((always_inline)) void hb_case_record_wait(const a2a_event *ev) {
  if (atomic_load_explicit(&g_nranges, memory_order_relaxed) == 0 &&
      atomic_load_explicit(&g_nring, memory_order_relaxed) == 0 &&
      atomic_load_explicit(&g_staged, memory_order_relaxed) == 0 &&
      atomic_load_explicit(&g_ncapture, memory_order_relaxed) == 0)
    return;
  if (ev->phase == A2A_POST) {
    hb_record_wait(ev);
    return;
  }
  hb_other(ev);
}

static void hb_on_event(const a2a_event *ev) {
  if (ev->kind == A2A_EV_LAUNCH) {
    if (ev->phase == A2A_POST) hb_case_launch(ev); /* (hb_k_launch's are POSTs: see there) */
    return;
  }
  /* (Tested before the event records and waits: the kinds exclude each
   * other.) */
  if (ev->kind == A2A_EV_MEMCPY || ev->kind == A2A_EV_MEMSET) {
    hb_case_copy(ev, ev->kind == A2A_EV_MEMSET, false);
    return;
  }
  if (ev->kind == A2A_EV_EVENT_RECORD || ev->kind == A2A_EV_STREAM_WAIT_EVENT) {
    hb_case_record_wait(ev);
    return;
  }
  /* NCCL operations and group brackets (consecutive kinds): hb_other's
   * cases for them, without its dispatch (out of line: hb_on_event keeps
   * no frame for the hot calls; tested after them, whose paths stay as
   * they were). */
  if ((unsigned)ev->kind - A2A_EV_COLL <= (unsigned)(A2A_EV_GROUP_END - A2A_EV_COLL)) {
    hb_nccl(ev);
    return;
  }
  if (ev->kind == A2A_EV_STREAM_QUERY || ev->kind == A2A_EV_STREAM_SYNC) {
    hb_stream_sync(ev);
    return;
  }
  if (ev->kind == A2A_EV_EVENT_QUERY || ev->kind == A2A_EV_EVENT_SYNC) {
    hb_event_sync(ev);
    return;
  }
  hb_other(ev);
}

/* The dispatch table's handlers (hb_by_kind): hb_on_event for one kind. */
/* (hb_case_launch for a POST: the dispatcher calls this analyzer's
 * handlers for POSTs only, its pre mask being empty.) */
static void hb_k_launch(const a2a_event *ev) { hb_case_launch(ev); }
static void hb_k_memcpy(const a2a_event *ev) { hb_case_copy(ev, false, true); }
static void hb_k_memset(const a2a_event *ev) { hb_case_copy(ev, true, true); }
static void hb_k_record_wait(const a2a_event *ev) { hb_case_record_wait(ev); }
/* hb_nccl for each NCCL kind, without its test of the kind, nor of the
 * phase: the dispatcher calls this analyzer's handlers for POSTs only (its
 * pre mask is empty). */
static void hb_k_group_start(const a2a_event *ev) {
  if (atomic_load_explicit(&g_disabled, memory_order_relaxed)) return;
  hb_group_start(ev);
}
static void hb_k_group_end(const a2a_event *ev) {
  if (atomic_load_explicit(&g_disabled, memory_order_relaxed)) return;
  hb_group_end(ev);
}
/* hb_k_p2p's pending_add for a send or receive past the entries an
 * earlier group left (ts->npending >= ts->rep_n: pending_repeat would
 * answer false once the access has bytes): its parts in the order it
 * takes them, the merge into one of the last two entries (a grouped
 * all-to-all's per-peer chunks) inline, without pending_add_more's
 * frame. (Out of hb_k_p2p: a repeated group's path keeps its frame.) */
__attribute__((noinline)) static void p2p_add_slow(thread_state *ts, const a2a_event *ev);
__attribute__((noinline)) static void p2p_merge(thread_state *ts, const a2a_event *ev) {
  uintptr_t lo = (uintptr_t)ev->u.p2p.buff;
  size_t bytes = ev->u.p2p.count * a2a_dtype_size(ev->u.p2p.dtype);
  if (bytes == 0 || lo == 0) return; /* (pending_repeat's first test) */
  if (!pending_merge(ts, ev, lo, bytes, ev->u.p2p.is_send ? F_READ : F_WRITE)) p2p_add_slow(ts, ev);
}

/* p2p_merge's pending_add_slow, its arguments derived again from the event
 * (the same expressions): out of p2p_merge, whose merge then keeps none of
 * them live across a call (a smaller frame on the merge's path). */
__attribute__((noinline)) static void p2p_add_slow(thread_state *ts, const a2a_event *ev) {
  pending_add_slow(ts, ev, (uintptr_t)ev->u.p2p.buff,
                   ev->u.p2p.count * a2a_dtype_size(ev->u.p2p.dtype),
                   ev->u.p2p.is_send ? F_READ : F_WRITE, ev->api ? ev->api : "nccl");
}

/* Repeated operations. pending_repeat takes an operation equal to the
 * entry at npending as that entry, after deriving what it compares from
 * the event (the byte count from the count and type, the direction, the
 * API name, the device). The operation of a repeated group is the one
 * that was there the group before, so when pending_repeat took an
 * operation as the entry (or, a collective, the two entries) at n, the
 * thread keeps what those derivations read (p[n].key, tagged with rep_gen
 * and the entry count); the next operation at n whose event has those
 * same fields, and the entry's buffer, stream, call site, communicator and
 * per_thread, is taken as they are without deriving anything. Exact,
 * because pending_repeat would take it too:
 *  - the derivations are functions of the key's fields alone: the type's
 *    size is a constant table, the device is the event's own (the key is
 *    kept only for a device >= 0; dev_of reads the thread's last device
 *    for -1), and a collective's extents (coll_extents) read, besides the
 *    operation, count, type and root, only the registry's record for the
 *    communicator, which is the same record while a2a_comm_ver is the
 *    value read before they were taken (see a2a_comm_lookup; a record's
 *    nranks and rank are fixed once inserted). So the operation yields the
 *    arguments the kept one did, which pending_repeat found equal to the
 *    entries then, with bytes and a buffer (it took them);
 *  - the entries are as they were then: they change only through
 *    pending_merge and pending_add_slow, which clear rep_n - while it is 0
 *    no key is tried (n < rep_n is required) - and the group end that sets
 *    rep_n again after such a change advances rep_gen, which the tag
 *    holds (a group that changed nothing leaves both, and its entries, as
 *    they were). A collective's two entries were both taken (n + 2 <= rep_n
 *    then, and rep_n, nonzero, is that value still).
 * Only the event's fields the key and the entry hold are compared, so a
 * change elsewhere (the peer, the reduction) leaves a key usable: nothing
 * here reads them. */
static inline uint64_t op_tag(const thread_state *ts, unsigned nent) {
  return ts->rep_gen << 2 | nent;
}

/* Whether entry p has the fields op_side copies from the call ev as they
 * are (the stream, call site, communicator and per_thread). */
static inline __attribute__((always_inline)) bool entry_of_call(const pending *p,
                                                                const a2a_event *ev) {
  return p->stream == ev->stream && p->site == ev->callsite && p->comm == ev->comm &&
         p->per_thread == ev->per_thread;
}

/* Keep p[n].key for the operation ev that pending_repeat just took as nent
 * entries at n (op, root: the key's operation fields). */
static void op_key_set(thread_state *ts, int n, unsigned nent, const a2a_event *ev, size_t count,
                       int dtype, int op, int root, unsigned comm_ver) {
  op_key *k = &ts->p[n].key;
  k->tag = op_tag(ts, nent);
  k->api = ev->api;
  k->count = count;
  k->dtype = dtype;
  k->op = op;
  k->root = root;
  k->device = ev->device;
  k->comm_ver = comm_ver;
}

/* A send or receive at npending < rep_n: the entry there by its key (see
 * "Repeated operations"), else pending_add, keeping the key when
 * pending_repeat took it (pending_add_more clears rep_n: npending one
 * more with rep_n not cleared is pending_repeat's). */
__attribute__((noinline)) static void p2p_repeat(thread_state *ts, const a2a_event *ev) {
  int n = ts->npending;
  pending_add(ts, ev, (uintptr_t)ev->u.p2p.buff, ev->u.p2p.count * a2a_dtype_size(ev->u.p2p.dtype),
              ev->u.p2p.is_send ? F_READ : F_WRITE, ev->api ? ev->api : "nccl");
  if (ts->npending == n + 1 && ts->rep_n != 0 && ev->device >= 0)
    op_key_set(ts, n, 1, ev, ev->u.p2p.count, ev->u.p2p.dtype, ev->u.p2p.is_send, 0, 0);
}
static inline __attribute__((always_inline)) void p2p_at_repeat(thread_state *ts,
                                                                const a2a_event *ev) {
  int n = ts->npending;
  const pending *p = &ts->p[n];
  const op_key *k = &p->key;
  if (k->tag == op_tag(ts, 1) && p->lo == (uintptr_t)ev->u.p2p.buff &&
      k->count == ev->u.p2p.count && k->dtype == ev->u.p2p.dtype && k->op == ev->u.p2p.is_send &&
      entry_of_call(p, ev) && k->device == ev->device && k->api == ev->api) {
    ts->npending = n + 1;
    return;
  }
  p2p_repeat(ts, ev);
}

/* hb_nccl for a send or receive: a grouped one on a stream other than
 * the legacy default stream (its common case: NCCL's point-to-point calls
 * are grouped) is on_comm_op's path for it without on_comm_op's frame or
 * its tests of the kind: default_stream_warning does nothing (not the
 * legacy stream), and with a race check enabled, the thread's state
 * existing (thread_state_of allocates nothing) and its group open, the
 * one side of a point-to-point call is pending_add'ed, as on_comm_op's
 * two calls (the other side has no bytes) do. Anything else: on_comm_op. */
static void hb_k_p2p(const a2a_event *ev) {
  if (atomic_load_explicit(&g_disabled, memory_order_relaxed)) return; /* (a POST: see above) */
  if (!ev->ok) return;
  thread_state *ts = ev->thread < MAX_THREADS ? g_threads[ev->thread] : NULL;
  /* (The legacy stream, or NULL without per_thread: one test of the
   * handle for both, (uintptr_t)STREAM_LEGACY being 1.) */
  _Static_assert((uintptr_t)STREAM_LEGACY == 1, "the legacy stream's handle is 1");
  if (!ts || ts->depth <= 0 ||
      ((uintptr_t)ev->stream <= 1 && (ev->stream == STREAM_LEGACY || !ev->per_thread))) {
    on_comm_op(ev);
    return;
  }
  if (!race_checks_on()) return;
  /* Past the entries an earlier group left (npending >= rep_n, where
   * pending_repeat answers false once the access has bytes): p2p_merge. */
  if (ts->npending >= ts->rep_n) {
    p2p_merge(ts, ev);
    return;
  }
  p2p_at_repeat(ts, ev);
}

/* hb_nccl for a collective: a grouped one on a stream other than the
 * legacy default stream (a group of collectives on several communicators:
 * nccl-tests -g N, one per device) is on_comm_op's path for it without
 * on_comm_op's frame or its tests of the kind, as hb_k_p2p is for a send
 * or receive: a count (NCCL drops a zero-count collective: on_comm_op
 * returns at once), default_stream_warning doing nothing (not the legacy
 * stream), a race check enabled, the thread's state existing
 * (thread_state_of allocates nothing) and its group open; then both sides
 * are pending_add'ed, the send side first, with on_comm_op's extents
 * (coll_extents) and name, as on_comm_op's two calls do (coll_grouped, out
 * of line: a lone collective's path, a tail call to on_comm_op, sets up
 * no frame). Anything else: on_comm_op. */
__attribute__((noinline)) static void coll_grouped(thread_state *ts, const a2a_event *ev) {
  int n = ts->npending;
  /* (Before the extents: see "Repeated operations".) */
  unsigned ver = atomic_load_explicit(&a2a_comm_ver, memory_order_acquire);
  size_t sbytes, rbytes;
  coll_extents(ev, &sbytes, &rbytes);
  const char *what = ev->api ? ev->api : "nccl";
  pending_add(ts, ev, (uintptr_t)ev->u.coll.sendbuff, sbytes, F_READ, what);
  pending_add(ts, ev, (uintptr_t)ev->u.coll.recvbuff, rbytes, F_WRITE, what);
  /* Both sides taken by pending_repeat (see p2p_repeat): keep the key. */
  if (ts->npending == n + 2 && ts->rep_n != 0 && ev->device >= 0)
    op_key_set(ts, n, 2, ev, ev->u.coll.count, ev->u.coll.dtype, (int)ev->u.coll.coll,
               ev->u.coll.root, ver);
}
/* A grouped collective at npending: its two entries by their key (see
 * "Repeated operations"). */
static inline __attribute__((always_inline)) bool coll_at_repeat(thread_state *ts,
                                                                 const a2a_event *ev) {
  int n = ts->npending;
  if (n >= ts->rep_n) return false;
  const pending *p = &ts->p[n];
  const op_key *k = &p->key;
  if (k->tag == op_tag(ts, 2) && p[0].lo == (uintptr_t)ev->u.coll.sendbuff &&
      p[1].lo == (uintptr_t)ev->u.coll.recvbuff && k->count == ev->u.coll.count &&
      k->dtype == ev->u.coll.dtype && k->op == (int)ev->u.coll.coll &&
      k->root == ev->u.coll.root && entry_of_call(p, ev) && k->device == ev->device &&
      k->api == ev->api &&
      k->comm_ver == atomic_load_explicit(&a2a_comm_ver, memory_order_acquire)) {
    ts->npending = n + 2;
    return true;
  }
  return false;
}
static void hb_k_coll(const a2a_event *ev) {
  if (atomic_load_explicit(&g_disabled, memory_order_relaxed)) return; /* (a POST: see above) */
  if (!ev->ok) return;
  thread_state *ts = ev->thread < MAX_THREADS ? g_threads[ev->thread] : NULL;
  if (!ts || ts->depth <= 0 || ev->u.coll.count == 0 ||
      ((uintptr_t)ev->stream <= 1 && (ev->stream == STREAM_LEGACY || !ev->per_thread))) {
    on_comm_op(ev);
    return;
  }
  if (!race_checks_on() || coll_at_repeat(ts, ev)) return;
  coll_grouped(ts, ev);
}

/* Every kind hb_on_event does not route itself: not launches, NCCL
 * operations, group brackets, stream queries and synchronizations, nor
 * the POST of event records and stream waits (their PRE returns here);
 * copies that were not deferred. */
static void hb_other(const a2a_event *ev) {
  if (ev->phase != A2A_POST) return;
  if (atomic_load_explicit(&g_disabled, memory_order_relaxed)) return;
  switch (ev->kind) {
  /* ---- always: cheap per-thread bookkeeping and the stream registry ---- */
  case A2A_EV_SET_DEVICE:
    if (ok_result(ev) && ev->thread < MAX_THREADS) g_last_dev[ev->thread] = ev->u.dev.device;
    return;
  case A2A_EV_STREAM_CREATE: {
    if (!ok_result(ev) || !ev->stream) return;
    report_q q;
    hb_lock(&q); /* applies the deferred copies: those before it were on the old stream */
    /* A live timeline with this handle belongs to a stream whose destroy
     * we missed: the new stream is a new timeline. */
    for (int i = 1; i < g_ntl; i++)
      if (g_tl[i].live && g_tl[i].handle == ev->stream && g_tl[i].kind != TL_LEGACY &&
          g_tl[i].kind != TL_PER_THREAD)
        g_tl[i].live = false;
    g_tl_epoch++; /* tl_of's cache: the handle no longer maps here */
    sreg_put(ev->stream,
             (ev->u.stream_create.flags & CUDA_STREAM_NON_BLOCKING) ? TL_NONBLOCKING : TL_BLOCKING,
             dev_of(ev), ev->callsite);
    hb_unlock(&q);
    return;
  }
  case A2A_EV_STREAM_DESTROY: {
    if (!ok_result(ev)) return;
    report_q q;
    hb_lock(&q); /* applies the deferred copies: those before it were on the old stream */
    /* The handle is unmapped, the timeline kept: its pending work still
     * completes, its clock values stay meaningful, a new stream that gets
     * the same handle is a new timeline. */
    for (int i = 1; i < g_ntl; i++)
      if (g_tl[i].live && g_tl[i].handle == ev->stream && g_tl[i].kind != TL_LEGACY &&
          g_tl[i].kind != TL_PER_THREAD)
        g_tl[i].live = false;
    g_tl_epoch++; /* tl_of's cache: the handle no longer maps here */
    sreg_remove(ev->stream);
    hb_unlock(&q);
    return;
  }
  case A2A_EV_GRAPH_CAPTURE_BEGIN:
  case A2A_EV_GRAPH_CAPTURE_END: {
    /* While a stream captures, its work is recorded into a graph, not run:
     * its accesses and edges are ignored (graph launches are coarse). So is
     * the work of every stream that joined the capture by waiting on an
     * event recorded in it (PyTorch's NCCL stream inside torch.cuda.graph);
     * the capture ends for all of them at the origin's cudaStreamEndCapture
     * (CUDA requires them to have rejoined the origin by then). */
    if (!ok_result(ev)) return;
    report_q q;
    hb_lock(&q); /* applies the deferred copies: those before the capture ran */
    int s = tl_of_ev(ev);
    if (s >= 0 && ev->kind == A2A_EV_GRAPH_CAPTURE_BEGIN) {
      set_capturing(s, true, s);
    } else if (s >= 0) {
      int origin = g_tl[s].capturing ? g_tl[s].cap_origin : s;
      for (int i = 1; i < g_ntl; i++)
        if (g_tl[i].capturing && g_tl[i].cap_origin == origin) set_capturing(i, false, 0);
    }
    hb_unlock(&q);
    return;
  }
  case A2A_EV_HOST_FUNC_RAN: {
    /* Always, even with nothing tracked now: the token's slot, if its
     * enqueue recorded one, must go. */
    report_q q;
    hb_lock(&q); /* applies the deferred copies: those issued before it ran */
    host_func_ran(ev->u.host_fn.token);
    hb_unlock(&q);
    return;
  }
  case A2A_EV_EVENT_DESTROY:
    if (!ok_result(ev)) return;
    a2a_lock_acquire(&g_mu);
    if (g_nev) ev_remove(ev->u.event.event);
    a2a_lock_release(&g_mu);
    return;
  default: break;
  }

  /* ---- the rest matters only while ranges are tracked, recent copies
   * are remembered or a capture is open (see "Recent copies") ---- */
  bool tracked = atomic_load_explicit(&g_nranges, memory_order_relaxed) != 0;
  bool active = tracked || atomic_load_explicit(&g_nring, memory_order_relaxed) != 0 ||
                atomic_load_explicit(&g_staged, memory_order_relaxed) != 0 ||
                atomic_load_explicit(&g_ncapture, memory_order_relaxed) != 0;
  if (!active && ev->kind != A2A_EV_MEMCPY && ev->kind != A2A_EV_MEMSET) return;
  if (!ok_result(ev)) return;
  report_q q;
  if (ev->kind == A2A_EV_MEMCPY || ev->kind == A2A_EV_MEMSET) {
    /* Inactive: only a copy that the ring would remember costs the lock. */
    bool host_waits = copy_host_waits(ev);
    if (!active && host_waits) return;
    copy_rec c;
    copy_rec_of(ev, &c);
    bool remember = !host_waits && copy_remembered(ev);
    /* The copy's own site, as a later finding names it (the earlier side's
     * site is the one stored now): from Python its Python line - every
     * torch copy reaches CUDA through the same libtorch frame (QA: the
     * user could not find the producing copy). Asked before the lock (the
     * runtime's own locks are never taken under g_mu), on this path only:
     * a deferred copy keeps its return address. */
    if (active || remember) c.site = a2a_hostsvc->caller_site(c.site);
    hb_lock(&q);
    stage_alloc(ev->thread); /* its next copies can be deferred */
    on_copy(&c, ev->thread, host_waits, remember);
    hb_unlock(&q);
    return;
  }
  hb_lock(&q);
  switch (ev->kind) {
  case A2A_EV_FREE: on_free(ev); break;
  case A2A_EV_ALLOC: {
    /* A new allocation over a tracked range means we missed its free. */
    uintptr_t p = (uintptr_t)ev->u.mem.ptr;
    /* (drop_span also forgets remembered copies into the old block.) */
    if (p && ev->u.mem.mem != A2A_MEM_HOST_PINNED) drop_span(p, p + (ev->u.mem.size ? ev->u.mem.size : 1));
    break;
  }
  case A2A_EV_DEVICE_SYNC: host_join_device(dev_of(ev)); break;
  case A2A_EV_HOST_FUNC:
  case A2A_EV_GRAPH_LAUNCH: {
    /* An enqueue whose accesses we do not see (blind spot). */
    int s = tl_of_ev(ev);
    if (s >= 0 && !g_tl[s].capturing) {
      enqueue_edges(s);
      if (ev->kind == A2A_EV_HOST_FUNC) host_func_enqueued(s, ev->u.host_fn.token);
    }
    break;
  }
  default: break;
  }
  hb_unlock(&q);
}

static void hb_after_fork_child(void) {
  /* The parent's other threads are gone; a mutex they held would stay held.
   * The child starts from a clean slate: CUDA work of the parent is not the
   * child's (CUDA cannot be used across fork; the simulator gives the child
   * a fresh runtime), and stale ranges would only confuse new allocations. */
  a2a_lock_reset(&g_mu);
  hb_init();
}

size_t stream_hb_range_count(void) { return atomic_load(&g_nranges); }

size_t stream_hb_event_count(void) {
  a2a_lock_acquire(&g_mu);
  size_t n = g_nev;
  a2a_lock_release(&g_mu);
  return n;
}

bool stream_hb_copies_locked(void) { return atomic_load(&g_copy_locked) != 0; }

bool stream_hb_launch_skip_kept(void) { return t_lmemo.skip.gen != 0; }

bool stream_hb_launch_site_kept(void) { return t_lmemo.site != NO_SITE && t_lmemo.site != NULL; }

size_t stream_hb_copy_ring_count(void) {
  /* Deferred copies count: apply them first. */
  a2a_lock_acquire(&g_mu);
  lock_advance();
  hb_drains();
  a2a_lock_release(&g_mu);
  return atomic_load(&g_nring);
}

static const a2a_by_kind hb_by_kind = {
    .fn = {
        [A2A_EV_LAUNCH] = hb_k_launch,
        [A2A_EV_MEMCPY] = hb_k_memcpy,
        [A2A_EV_MEMSET] = hb_k_memset,
        [A2A_EV_EVENT_RECORD] = hb_k_record_wait,
        [A2A_EV_STREAM_WAIT_EVENT] = hb_k_record_wait,
        [A2A_EV_COLL] = hb_k_coll,
        [A2A_EV_P2P] = hb_k_p2p,
        [A2A_EV_GROUP_START] = hb_k_group_start,
        [A2A_EV_GROUP_END] = hb_k_group_end,
        [A2A_EV_STREAM_QUERY] = hb_stream_sync,
        [A2A_EV_STREAM_SYNC] = hb_stream_sync,
        [A2A_EV_EVENT_QUERY] = hb_event_sync,
        [A2A_EV_EVENT_SYNC] = hb_event_sync,
    }};

/* The gated handlers without their test of the gate, for the hot
 * dispatch right after its read of the gate (g_nranges) found it nonzero
 * (a2a_analyzer.post_open says why that read is as good as the handler's
 * own): hb_k_launch past its test. */
static const a2a_by_kind hb_post_open = {.fn = {[A2A_EV_LAUNCH] = hb_launch}};

const a2a_analyzer a2a_analyzer_stream_hb = {
    .name = "stream_hb",
    .owner = A2A_OWN_STREAM_HB,
    .pre = 0, /* (the per-kind handlers rely on it: POSTs only) */
    .post = A2A_KIND_BIT(A2A_EV_SET_DEVICE) | A2A_KIND_BIT(A2A_EV_GROUP_START) |
            A2A_KIND_BIT(A2A_EV_GROUP_END) | A2A_KIND_BIT(A2A_EV_COLL) |
            A2A_KIND_BIT(A2A_EV_P2P) | A2A_KIND_BIT(A2A_EV_STREAM_CREATE) |
            A2A_KIND_BIT(A2A_EV_STREAM_DESTROY) | A2A_KIND_BIT(A2A_EV_GRAPH_CAPTURE_BEGIN) |
            A2A_KIND_BIT(A2A_EV_GRAPH_CAPTURE_END) | A2A_KIND_BIT(A2A_EV_EVENT_DESTROY) |
            A2A_KIND_BIT(A2A_EV_LAUNCH) | A2A_KIND_BIT(A2A_EV_MEMCPY) |
            A2A_KIND_BIT(A2A_EV_MEMSET) | A2A_KIND_BIT(A2A_EV_FREE) |
            A2A_KIND_BIT(A2A_EV_ALLOC) | A2A_KIND_BIT(A2A_EV_EVENT_RECORD) |
            A2A_KIND_BIT(A2A_EV_STREAM_WAIT_EVENT) | A2A_KIND_BIT(A2A_EV_EVENT_SYNC) |
            A2A_KIND_BIT(A2A_EV_EVENT_QUERY) | A2A_KIND_BIT(A2A_EV_STREAM_SYNC) |
            A2A_KIND_BIT(A2A_EV_STREAM_QUERY) | A2A_KIND_BIT(A2A_EV_DEVICE_SYNC) |
            A2A_KIND_BIT(A2A_EV_HOST_FUNC) | A2A_KIND_BIT(A2A_EV_GRAPH_LAUNCH) |
            A2A_KIND_BIT(A2A_EV_HOST_FUNC_RAN),
    /* Launches matter only while ranges are tracked. */
    .post_gated = A2A_KIND_BIT(A2A_EV_LAUNCH),
    .post_gate = &g_nranges,
    .post_open = &hb_post_open,
    .init = hb_init,
    .on_event = hb_on_event,
    .by_kind = &hb_by_kind,
    .nested = &hb_nested,
    .fini = NULL,
    .after_fork_child = hb_after_fork_child,
};
