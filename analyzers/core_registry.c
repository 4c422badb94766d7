/* core_registry.c - the communicator and allocation registries.
 *
 * Communicators: a fixed open-addressing table of handle -> record, with
 * lock-free lookup (slots are atomic pointers, records are never freed: a
 * process creates few communicators, and analyzers may hold a record while
 * another thread destroys the comm). Insertion takes a mutex; it happens only
 * when a communicator is created.
 *
 * Allocations: a sorted array of segments under a reader-writer lock.
 * Writers are cudaMalloc/cudaFree (rare with a caching allocator); readers
 * are the analyzers at each NCCL operation and some copies and copy kernels
 * (a shared lock, no syscall in the uncontended case), answered without it
 * when the thread's last lookup already found the segment (see
 * a2a_alloc_gen).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "a2a_core.h"
#include "core_internal.h"

/* ---------------- communicators ---------------- */

#define COMM_SLOTS 8192 /* power of two; more comms than this are not tracked */

static _Atomic(a2a_comm *) g_comm_slots[COMM_SLOTS];
static a2a_comm *g_comm_all[COMM_SLOTS];
static _Atomic unsigned g_comm_count;
static _Atomic unsigned g_comm_dropped;
/* Records inserted without their size and rank (a2a_comm_complete): what
 * a2a_registry_comm_ready reads first, so that a program's polls cost one
 * load while none is incomplete. */
static _Atomic unsigned g_comm_incomplete;
static pthread_mutex_t g_comm_mu = PTHREAD_MUTEX_INITIALIZER;
/* Bumped by every insertion (and the tests' reset): a thread's cached
 * answers (a2a_comm_last) are valid while it is unchanged. Records are never
 * freed while the process runs, so a cached record is always readable; a
 * handle's answer changes only when a newer record takes its slot. */
_Atomic unsigned a2a_comm_ver;
_Thread_local a2a_comm_memo a2a_comm_last;

static size_t slot_of(const void *h) {
  uint64_t x = (uint64_t)(uintptr_t)h;
  x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33;
  return (size_t)x & (COMM_SLOTS - 1);
}

static a2a_comm *comm_find(const void *handle) {
  size_t i = slot_of(handle);
  for (size_t n = 0; n < COMM_SLOTS; n++, i = (i + 1) & (COMM_SLOTS - 1)) {
    a2a_comm *c = atomic_load_explicit(&g_comm_slots[i], memory_order_acquire);
    if (!c) return NULL;
    if (c->handle == handle) return c;
  }
  return NULL;
}

/* The thread's memo past its last answer (which a2a_comm_lookup, a2a_core.h,
 * checks inline), then the table. Every answer the memo holds was taken at
 * m->ver; another version discards them all (an insertion may have given
 * any handle a newer record, or a record to a handle that had none). The
 * ways are filled round-robin, so a thread alternating among up to
 * A2A_COMM_MEMO_WAYS communicators finds each in a way from its second
 * round on (a hit moves nothing: the last answer is copied out, and is
 * always in a way too, found or filled last). Thread-local: no lock, no
 * allocation; a forked child keeps the memo and the registry alike. */
a2a_comm *a2a_comm_lookup_slow(const void *handle, unsigned ver) {
  a2a_comm_memo *m = &a2a_comm_last;
  if (m->ver == ver) {
    for (unsigned i = 0; i < A2A_COMM_MEMO_WAYS; i++)
      if (m->way[i].handle == handle) {
        a2a_comm *c = m->way[i].rec;
        m->handle = handle;
        m->rec = c;
        return c;
      }
  } else {
    memset(m->way, 0, sizeof m->way);
    m->next = 0;
    m->ver = ver;
  }
  a2a_comm *c = comm_find(handle);
  m->way[m->next].handle = handle;
  m->way[m->next].rec = c;
  m->next = (m->next + 1) % A2A_COMM_MEMO_WAYS;
  m->handle = handle;
  m->rec = c;
  return c;
}

unsigned a2a_comm_dropped(void) {
  return atomic_load_explicit(&g_comm_dropped, memory_order_relaxed);
}

void a2a_comm_foreach(int (*fn)(a2a_comm *c, void *arg), void *arg) {
  unsigned n = atomic_load_explicit(&g_comm_count, memory_order_acquire);
  for (unsigned i = 0; i < n && i < COMM_SLOTS; i++)
    if (g_comm_all[i] && fn(g_comm_all[i], arg)) return;
}

/* Insert (or replace, when NCCL reuses a freed handle's address). */
static a2a_comm *comm_insert(a2a_comm *rec) {
  pthread_mutex_lock(&g_comm_mu);
  unsigned n = atomic_load_explicit(&g_comm_count, memory_order_relaxed);
  if (n >= COMM_SLOTS - 1) { /* keep the table sparse enough to terminate */
    pthread_mutex_unlock(&g_comm_mu);
    return NULL;
  }
  rec->serial = n + 1;
  snprintf(rec->name, sizeof rec->name, "comm#%u(%016llx)", rec->serial,
           (unsigned long long)a2a_comm_ident(rec));
  size_t i = slot_of(rec->handle);
  for (;; i = (i + 1) & (COMM_SLOTS - 1)) {
    a2a_comm *c = atomic_load_explicit(&g_comm_slots[i], memory_order_relaxed);
    if (!c || c->handle == rec->handle) break;
  }
  g_comm_all[n] = rec;
  atomic_store_explicit(&g_comm_count, n + 1, memory_order_release);
  atomic_store_explicit(&g_comm_slots[i], rec, memory_order_release);
  atomic_fetch_add_explicit(&a2a_comm_ver, 1, memory_order_release);
  a2a_core_epoch_advance();
  pthread_mutex_unlock(&g_comm_mu);
  return rec;
}

static uint64_t mix3(uint64_t a, uint64_t b, uint64_t c) {
  uint64_t v[3] = {a, b, c};
  return a2a_hash_bytes(v, sizeof v, 0x5eed);
}

/* A split's or shrink's identity: its parent's, its number among the
 * parent's splits and its color (or the excluded ranks). 0 without a
 * parent identity. */
static uint64_t child_id_hash(const __typeof__(((a2a_event *)0)->u.init) *in, const a2a_comm *parent,
                              uint32_t split_index) {
  if (!parent || !parent->id_hash) return 0;
  if (in->how == A2A_INIT_SPLIT) return mix3(parent->id_hash, split_index, (uint64_t)(int64_t)in->color);
  uint64_t ex = in->exclude ? a2a_hash_bytes(in->exclude, sizeof(int) * (size_t)in->nexclude, 1) : 0;
  return mix3(parent->id_hash, split_index, ex ^ 0x5412696eULL);
}

/* Process-local identities (a2a_comm.local_id). One ncclCommInitAll
 * call posts one event per communicator it made, on its thread, rank 0
 * first: rank 0 (or a thread's first) starts a new identity, which the
 * call's other ranks share. Unique per process and call: the first
 * handle, the time, the process and a counter. A child of a process-local
 * parent derives its identity as child_id_hash does an id-based parent's
 * (a shrink's excluded ranks, which every rank of one shrink gives alike,
 * are not needed to tell its children apart in one process). */
static _Thread_local uint64_t t_clique;
static _Atomic uint64_t g_local_seq;

static uint64_t initall_local_id(const a2a_event *ev) {
  if (ev->u.init.rank == 0 || !t_clique) {
    uint64_t v[4] = {(uint64_t)(uintptr_t)ev->u.init.newcomm, ev->t_ns, (uint64_t)getpid(),
                     atomic_fetch_add(&g_local_seq, 1) + 1};
    t_clique = a2a_hash_bytes(v, sizeof v, 0x1a11) | 1;
  }
  return t_clique;
}

static uint64_t child_local_id(const __typeof__(((a2a_event *)0)->u.init) *in, const a2a_comm *parent,
                               uint32_t split_index) {
  if (!parent || parent->id_hash || !parent->local_id) return 0;
  return mix3(parent->local_id, split_index,
              in->how == A2A_INIT_SPLIT ? (uint64_t)(int64_t)in->color : 0x5412696eULL) | 1;
}

/* Children awaited (a2a_event.u.init.awaited): what their first POST
 * computed, taken by their late POST. Under g_comm_mu. Entries of a
 * parent that ends go (a2a_registry_comm_end). A late POST without its
 * entry (a full table) gives the child no identity across ranks (id 0:
 * checked locally, not matched) rather than a split number the other
 * ranks do not share. */
#define AWAIT_MAX 64
static struct {
  const void *awaited;
  const void *parent;
  uint32_t split_index;
  uint64_t id_hash;
} g_await[AWAIT_MAX];

static void await_put(const void *awaited, const void *parent, uint32_t split_index, uint64_t id_hash) {
  pthread_mutex_lock(&g_comm_mu);
  int free_i = -1;
  for (int i = 0; i < AWAIT_MAX; i++) {
    if (g_await[i].awaited == awaited) { free_i = i; break; } /* the variable reused */
    if (!g_await[i].awaited && free_i < 0) free_i = i;
  }
  if (free_i >= 0) {
    g_await[free_i].awaited = awaited;
    g_await[free_i].parent = parent;
    g_await[free_i].split_index = split_index;
    g_await[free_i].id_hash = id_hash;
  }
  pthread_mutex_unlock(&g_comm_mu);
}

static bool await_take(const void *awaited, uint32_t *split_index, uint64_t *id_hash) {
  bool found = false;
  pthread_mutex_lock(&g_comm_mu);
  for (int i = 0; awaited && i < AWAIT_MAX && !found; i++)
    if (g_await[i].awaited == awaited) {
      *split_index = g_await[i].split_index;
      *id_hash = g_await[i].id_hash;
      g_await[i].awaited = NULL;
      found = true;
    }
  pthread_mutex_unlock(&g_comm_mu);
  return found;
}

void a2a_registry_comm_init(const a2a_event *ev) {
  const __typeof__(ev->u.init) *in = &ev->u.init;
  a2a_comm *parent = in->parent ? a2a_comm_lookup(in->parent) : NULL;
  bool child = in->how == A2A_INIT_SPLIT || in->how == A2A_INIT_SHRINK;
  uint32_t split_index = 0;
  uint64_t child_id = 0;
  bool named = true; /* the split's number is known (a local child's identity) */
  if (child && in->late) {
    if (!await_take(in->awaited, &split_index, &child_id)) child_id = 0, named = false;
  } else if (child) {
    /* Every member of the parent calls split (NOCOLOR ones too), in the same
     * order, so the per-parent sequence names the split across ranks. */
    if (parent) split_index = atomic_fetch_add(&parent->nsplits, 1);
    child_id = child_id_hash(in, parent, split_index);
    if (!in->newcomm && in->awaited) {
      await_put(in->awaited, in->parent, split_index, child_id);
      return;
    }
  }
  if (!in->newcomm) return; /* NCCL_SPLIT_NOCOLOR or failure */

  a2a_comm *c = calloc(1, sizeof *c);
  if (!c) {
    atomic_fetch_add(&g_comm_dropped, 1);
    return;
  }
  c->handle = in->newcomm;
  c->nranks = in->nranks;
  c->rank = in->rank;
  c->device = in->device;
  /* A split or shrink inside a group cannot be asked before the group's
   * end (the shim leaves its size -1 and its device the thread's current
   * one); NCCL gives the child its parent's device - which the per-device
   * completion markers and timing events rely on. */
  if (child && in->nranks < 0 && parent && parent->device >= 0)
    c->device = parent->device;
  c->how = in->how;
  c->parent = parent;
  c->color = in->color;
  c->split_index = split_index;
  c->blocking = in->blocking;
  atomic_init(&c->state, A2A_COMM_ACTIVE);
  switch (in->how) {
  case A2A_INIT_RANK:
  case A2A_INIT_RANK_CONFIG:
    c->id_hash = in->ids ? a2a_hash_bytes(in->ids, 128, 0) : 0;
    break;
  case A2A_INIT_SCALABLE:
    c->id_hash = in->ids ? a2a_hash_bytes(in->ids, 128 * (size_t)(in->nids > 0 ? in->nids : 1), 0) : 0;
    break;
  case A2A_INIT_ALL:
    c->id_hash = 0; /* process-local */
    c->local_id = initall_local_id(ev);
    break;
  case A2A_INIT_SPLIT:
  case A2A_INIT_SHRINK:
    c->id_hash = child_id;
    if (!child_id && named) c->local_id = child_local_id(in, parent, split_index);
    break;
  }
  bool incomplete = c->nranks < 0;
  if (!comm_insert(c)) {
    free(c);
    atomic_fetch_add(&g_comm_dropped, 1);
  } else if (incomplete) {
    atomic_fetch_add(&g_comm_incomplete, 1);
  }
}

void a2a_comm_complete(a2a_comm *c, int nranks, int rank, int device) {
  if (!c || nranks <= 0 || rank < 0 || rank >= nranks) return;
  pthread_mutex_lock(&g_comm_mu);
  if (c->nranks < 0) {
    c->nranks = nranks;
    c->rank = rank;
    if (device >= 0) c->device = device;
    atomic_fetch_sub(&g_comm_incomplete, 1);
    a2a_core_epoch_advance();
  }
  pthread_mutex_unlock(&g_comm_mu);
}

void a2a_registry_comm_ready(const a2a_event *ev) {
  if (__builtin_expect(atomic_load_explicit(&g_comm_incomplete, memory_order_relaxed) == 0, 1)) return;
  if (ev->result != 0 || ev->u.async_err.async_error != 0 || !a2a_hostsvc || !a2a_hostsvc->comm_info)
    return;
  a2a_comm *c = a2a_comm_lookup(ev->comm);
  int n, r, d;
  if (c && c->nranks < 0 && a2a_hostsvc->comm_info(ev->comm, &n, &r, &d) == 0)
    a2a_comm_complete(c, n, r, d);
}

void a2a_registry_comm_end(const a2a_event *ev) {
  if (ev->u.end.how == A2A_END_DESTROY || ev->u.end.how == A2A_END_ABORT) {
    /* Its children still awaited are not coming (the shim forgets them). */
    pthread_mutex_lock(&g_comm_mu);
    for (int i = 0; i < AWAIT_MAX; i++)
      if (g_await[i].awaited && g_await[i].parent == ev->comm) g_await[i].awaited = NULL;
    pthread_mutex_unlock(&g_comm_mu);
  }
  a2a_comm *c = a2a_comm_lookup(ev->comm);
  if (!c) return;
  int st = A2A_COMM_DESTROYED;
  switch (ev->u.end.how) {
  case A2A_END_FINALIZE: st = A2A_COMM_FINALIZED; break;
  case A2A_END_DESTROY: st = A2A_COMM_DESTROYED; break;
  case A2A_END_ABORT: st = A2A_COMM_ABORTED; break;
  case A2A_END_REVOKE: st = A2A_COMM_REVOKED; break;
  }
  atomic_store(&c->state, st);
}

/* ---------------- allocations ---------------- */

static pthread_rwlock_t g_alloc_mu = PTHREAD_RWLOCK_INITIALIZER;
static a2a_alloc *g_allocs;
static size_t g_nallocs, g_cap_allocs;
static uint64_t g_alloc_serial;

/* Index of the first segment with base > p. */
static size_t upper(uintptr_t p) {
  size_t lo = 0, hi = g_nallocs;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (g_allocs[mid].base <= p) lo = mid + 1; else hi = mid;
  }
  return lo;
}

/* The registry's generation: advanced (under the write lock) by every
 * change - an allocation, a free, a reset. A per-thread cache remembers
 * the last segment a lookup found and the last pointer it did not find,
 * each with the generation it was read at (under the read lock), and
 * answers a lookup from them, without the lock, while the generation is
 * unchanged: a free, or a free and a new allocation at the same address
 * (another size, another serial), makes every cached answer stale. A
 * lookup racing with a change on another thread may answer from before
 * it, as if it had run first (as with the lock). A forked child keeps the
 * registry and this thread's cache, consistently. */
_Atomic uint64_t a2a_alloc_gen = 1;
static _Thread_local struct {
  uint64_t gen;          /* of the found segment; 0 = none */
  a2a_alloc seg;
  uint64_t miss_gen;     /* of the pointer not found; 0 = none */
  uintptr_t miss;
} t_alloc_last;

static bool seg_holds(const a2a_alloc *a, uintptr_t x) {
  /* A zero-size allocation still names its base address. */
  return x == a->base || x - a->base < a->size;
}

bool a2a_alloc_find(const void *p, a2a_alloc *out) {
  uintptr_t x = (uintptr_t)p;
  uint64_t gen = atomic_load_explicit(&a2a_alloc_gen, memory_order_acquire);
  if (t_alloc_last.gen == gen && seg_holds(&t_alloc_last.seg, x)) {
    if (out) *out = t_alloc_last.seg;
    return true;
  }
  if (t_alloc_last.miss_gen == gen && t_alloc_last.miss == x) return false;
  bool found = false;
  pthread_rwlock_rdlock(&g_alloc_mu);
  gen = atomic_load_explicit(&a2a_alloc_gen, memory_order_relaxed); /* stable under the lock */
  size_t i = upper(x);
  if (i > 0) {
    const a2a_alloc *a = &g_allocs[i - 1];
    if (seg_holds(a, x)) {
      if (out) *out = *a;
      t_alloc_last.seg = *a;
      t_alloc_last.gen = gen;
      found = true;
    }
  }
  if (!found) {
    t_alloc_last.miss = x;
    t_alloc_last.miss_gen = gen;
  }
  pthread_rwlock_unlock(&g_alloc_mu);
  return found;
}

size_t a2a_alloc_count(void) {
  pthread_rwlock_rdlock(&g_alloc_mu);
  size_t n = g_nallocs;
  pthread_rwlock_unlock(&g_alloc_mu);
  return n;
}

void a2a_registry_alloc(const a2a_event *ev) {
  uintptr_t base = (uintptr_t)ev->u.mem.ptr;
  if (!base) return;
  pthread_rwlock_wrlock(&g_alloc_mu);
  size_t i = upper(base);
  if (i > 0 && g_allocs[i - 1].base == base) {
    i--; /* a stale record for a reused address: overwrite */
  } else {
    if (g_nallocs == g_cap_allocs) {
      size_t cap = g_cap_allocs ? g_cap_allocs * 2 : 256;
      a2a_alloc *n = realloc(g_allocs, cap * sizeof *n);
      if (!n) { pthread_rwlock_unlock(&g_alloc_mu); return; }
      g_allocs = n;
      g_cap_allocs = cap;
    }
    memmove(&g_allocs[i + 1], &g_allocs[i], (g_nallocs - i) * sizeof *g_allocs);
    g_nallocs++;
  }
  g_allocs[i] = (a2a_alloc){
      .base = base,
      .size = ev->u.mem.size,
      .device = ev->u.mem.mem == A2A_MEM_HOST_PINNED ? -1 : ev->device,
      .mem = ev->u.mem.mem,
      .serial = ++g_alloc_serial,
  };
  atomic_fetch_add_explicit(&a2a_alloc_gen, 1, memory_order_release); /* cached answers are stale */
  a2a_core_epoch_advance();
  pthread_rwlock_unlock(&g_alloc_mu);
}

void a2a_registry_free(const a2a_event *ev) {
  uintptr_t base = (uintptr_t)ev->u.mem.ptr;
  if (!base) return;
  pthread_rwlock_wrlock(&g_alloc_mu);
  size_t i = upper(base);
  if (i > 0 && g_allocs[i - 1].base == base) {
    i--;
    memmove(&g_allocs[i], &g_allocs[i + 1], (g_nallocs - i - 1) * sizeof *g_allocs);
    g_nallocs--;
    atomic_fetch_add_explicit(&a2a_alloc_gen, 1, memory_order_release); /* cached answers are stale */
    a2a_core_epoch_advance();
  }
  pthread_rwlock_unlock(&g_alloc_mu);
}

void a2a_registry_after_fork_child(void) {
  /* The locks may have been held by a thread that no longer exists. The
   * runtime's prepare handler does not take them (registries are leaf
   * locks held for a few instructions), so reinitialize them. */
  pthread_mutex_init(&g_comm_mu, NULL);
  pthread_rwlock_init(&g_alloc_mu, NULL);
  memset(g_await, 0, sizeof g_await); /* the parent's awaited children are not the child's */
}

void a2a_registry_reset_for_tests(void) {
  pthread_mutex_lock(&g_comm_mu);
  /* Records are never freed while the process runs (readers hold them
   * without a lock); a test resets with no reader left, so they go now
   * (else the next inserts overwrite g_comm_all and LeakSanitizer reports
   * them). */
  unsigned n = atomic_load(&g_comm_count);
  for (unsigned i = 0; i < n; i++) {
    free(g_comm_all[i]);
    g_comm_all[i] = NULL;
  }
  for (size_t i = 0; i < COMM_SLOTS; i++) atomic_store(&g_comm_slots[i], NULL);
  atomic_store(&g_comm_count, 0);
  atomic_store(&g_comm_dropped, 0);
  atomic_store(&g_comm_incomplete, 0);
  memset(g_await, 0, sizeof g_await);
  atomic_fetch_add(&a2a_comm_ver, 1);
  a2a_core_epoch_advance();
  pthread_mutex_unlock(&g_comm_mu);
  pthread_rwlock_wrlock(&g_alloc_mu);
  g_nallocs = 0;
  atomic_fetch_add(&a2a_alloc_gen, 1); /* cached answers are stale */
  a2a_core_epoch_advance();
  pthread_rwlock_unlock(&g_alloc_mu);
}
