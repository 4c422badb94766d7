/* a2a_core.h - what every analyzer builds on: the analyzer interface, the
 * dispatch point, the communicator and allocation registries, the options,
 * the host services and the report API.
 *
 * Contract (shim/ <-> analyzers/):
 *  - The runtime (shim/) calls a2a_core_init() once, lazily, with the parsed
 *    options and its host services, before the first a2a_dispatch().
 *  - The shim calls a2a_dispatch() for each phase of each intercepted call,
 *    from the application's thread. Several threads dispatch concurrently:
 *    analyzers are thread-safe and never block for long.
 *  - Analyzers never call CUDA or NCCL themselves: what they need from the
 *    process (pointer attributes, kernel parameter layout, timing events,
 *    stacks, the clock) goes through a2a_host, which the runtime implements
 *    with the REAL functions (never the intercepted ones, so the analyzers'
 *    own calls create no events) and unit tests implement with fakes.
 *  - Analyzers report through a2a_report(); the runtime implements it (log,
 *    dedup, caps, exit policy); unit tests link a collector instead.
 *
 * How to add an analyzer:
 *  1. write analyzers/<name>.c defining `const a2a_analyzer a2a_analyzer_<name>`;
 *  2. add `A2A_ANALYZER(<name>)` to analyzers/analyzers.inc;
 *  3. document each check it reports in docs/checks.md;
 *  4. add tests/unit/test_<name>.c (a Check suite driving synthetic events).
 */
#ifndef A2A_CORE_H
#define A2A_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "a2a_checks.h"
#include "a2a_event.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Options: one table (a2a_options.inc) drives the struct, the parser, the
 * defaults, A2ACHECK_HELP and docs. */

typedef struct a2a_options {
#define A2A_OPT_INT(name, env, def, range, help) long name;
#define A2A_OPT_DBL(name, env, def, range, help) double name;
#define A2A_OPT_STR(name, env, def, help) const char *name;
#include "a2a_options.inc"
#undef A2A_OPT_INT
#undef A2A_OPT_DBL
#undef A2A_OPT_STR
} a2a_options;

/* The effective options (defaults until a2a_core_init). Read-only. */
extern A2A_HIDDEN const a2a_options *a2a_opt;
/* Fill *o with the table's defaults (string defaults are static). */
void a2a_options_defaults(a2a_options *o);

/* ------------------------------------------------------------------ */
/* Host services. */

typedef struct a2a_ptrinfo {
  int type;     /* 0 unregistered host, 1 pinned host, 2 device, 3 managed */
  int device;   /* owning device, -1 for host */
} a2a_ptrinfo;

typedef struct a2a_stack {
  int n;
  void *pc[32];
} a2a_stack;

typedef struct a2a_host {
  /* Monotonic clock in ns. */
  uint64_t (*now_ns)(void);
  /* cudaPointerGetAttributes; returns 0 on success. */
  int (*pointer_info)(const void *p, a2a_ptrinfo *out);
  /* cudaFuncGetName; returns 0 on success. */
  int (*func_name)(const void *func, const char **name);
  /* cudaFuncGetParamInfo for parameter idx; 0 on success, nonzero past the
   * last parameter. */
  int (*func_param_info)(const void *func, size_t idx, size_t *offset,
                         size_t *size);
  /* Timing/completion events, created and recorded with the REAL runtime, so
   * they add no happens-before edge the application did not ask for.
   * event_query returns 0 complete, 1 pending, -1 error. */
  int (*event_create)(void **ev, int timing);
  /* event_create for an event that records on `device`'s streams: as
   * event_create when `device` is the calling thread's current device;
   * otherwise created with `device` made current for the call and the
   * thread's device restored, as NCCL's group launch switches devices -
   * only when the thread chose its device with cudaSetDevice. 0 on success,
   * -1 the runtime failed, -2 not switched (the event would belong to
   * another device: nothing was created), -3 not asked now (the
   * application has an error pending: the runtime is not at fault). NULL
   * in a host without devices: event_create is used. */
  int (*event_create_on)(void **ev, int device, int timing);
  int (*event_record)(void *ev, void *stream);
  int (*event_query)(void *ev);
  int (*event_elapsed_ms)(float *ms, void *start, void *end);
  int (*event_destroy)(void *ev);
  /* cudaStreamQuery with the REAL runtime: 0 every operation enqueued on
   * the stream so far is complete, 1 some is not, -1 error or no runtime.
   * Adds no happens-before edge and enqueues nothing. The caller must know
   * the stream is alive and not being captured (a query of a capturing
   * stream invalidates the capture). */
  int (*stream_query)(void *stream);
  /* cudaStreamGetDevice with the REAL runtime: 0 and *device set, or -1
   * (no such function in this runtime, an error pending, the handle
   * refused). Asks nothing else and enqueues nothing. Only for explicit
   * stream handles that the application just gave NCCL (not the legacy
   * or per-thread default handles, which name the current device's). */
  int (*stream_device)(void *stream, int *device);
  /* cudaStreamGetCaptureInfo with the REAL runtime: 1 and *id set to the
   * capture's unique id when `stream` (the per-thread default stream when
   * per_thread and stream is NULL) is capturing, 2 and *id when its capture
   * was invalidated (not yet ended), 0 when it is not capturing, -1 error
   * or no runtime. Enqueues nothing and is legal during any capture
   * (a query of the capture status, not of the stream's work). NULL in a
   * host without a runtime. */
  int (*capture_id)(void *stream, int per_thread, uint64_t *id);
  /* Whether the process's thread of that index (a2a_event.thread) has
   * exited. Any thread may ask (a load). NULL in a host that cannot tell. */
  bool (*thread_exited)(uint32_t thread);
  /* A communicator's size, rank and device, with the REAL ncclCommCount,
   * ncclCommUserRank and ncclCommCuDevice: 0 when all three answered.
   * Only for a communicator the application just saw ready
   * (ncclCommGetAsyncError said ncclSuccess) and has not used since: on a
   * non-blocking communicator that is not ready NCCL would warn and set
   * its last-error string, which the application can read. */
  int (*comm_info)(void *comm, int *nranks, int *rank, int *device);
  /* The site of the calling thread's current call, named as the NCCL
   * events name theirs: from a Python thread (the innermost user Python
   * frame, pc), so that every Python line is a site of its own although
   * all reach CUDA through the same few libtorch return addresses; else
   * pc. Only on the thread that made the call, during it. */
  const void *(*caller_site)(const void *pc);
  /* Capture the current thread's stack, skipping the tool's own frames. */
  void (*capture_stack)(a2a_stack *st);
  /* Global rank of this process (-1 until known) and host name. */
  int (*global_rank)(void);
  const char *(*hostname)(void);
  /* Ask the runtime to end the process with A2ACHECK_EXITCODE after the logs
   * are flushed (used by the deadlock detector); reason is logged. */
  void (*fail_now)(const char *reason);
  /* Whether a finding of this check and severity triggers the user's
   * failure policy (A2ACHECK_FAIL_ON): the deadlock detector ends the
   * process on a verdict only when it does. */
  bool (*fail_policy)(a2a_check_id check, int severity);
  /* A call site (a return address) as one printable frame, the runtime's
   * symbolizer's "func+0xoff (module) at file:line" (the same text the
   * logs' stacks use). Takes the runtime's report lock: never call it with
   * an analyzer lock held. */
  void (*site_text)(const void *pc, char *buf, size_t cap);
  /* The process environment as the runtime read it: one variable, and the
   * whole block (perf.env's lint). */
  const char *(*getenv)(const char *name);
  char **(*environ)(void);
  /* Whether this machine has InfiniBand devices (/sys/class/infiniband). */
  bool (*infiniband_present)(void);
} a2a_host;

extern A2A_HIDDEN const a2a_host *a2a_hostsvc;

/* ------------------------------------------------------------------ */
/* Kernel parameter layouts (core_kparams.c), asked from the host once per
 * function and cached for every analyzer. Lock-free lookups after the
 * first; NULL only when the cache is full (then the launch is not
 * analyzed). nparams is -1 when the runtime has no parameter information. */

#define A2A_KPARAMS_MAX 64
/* Kernel name classes (a2a_kparams.flags), from cudaFuncGetName. */
enum { A2A_KP_NAME_COPY = 1 /* "copy" or "contiguous" in the name */ };

typedef struct a2a_kparams {
  _Atomic(const void *) func;
  int nparams;
  unsigned flags;             /* A2A_KP_* */
  const char *name;           /* cudaFuncGetName, or NULL */
  uint32_t offset[A2A_KPARAMS_MAX];
  uint16_t size[A2A_KPARAMS_MAX];
} a2a_kparams;
const a2a_kparams *a2a_kernel_params(const void *func);

/* The stack of the first operation made from call site `site` (a return
 * address), captured on the calling thread then and reused for every later
 * one: an analyzer that keeps an operation's stack for a finding it may
 * report later pays one unwind per call site, not per call. (The deeper
 * frames are those of the first call through the site.) */
void a2a_site_stack(const void *site, a2a_stack *out);
/* The same without the copy: the cached stack itself, which stays valid and
 * unchanged until the analyzers are re-initialized (an analyzer may keep
 * the pointer in its state), or - when the cache is full - scratch, filled
 * with this call's own capture (valid as long as scratch is). NULL when
 * site is NULL. */
const a2a_stack *a2a_site_stack_ref(const void *site, a2a_stack *scratch);

/* ------------------------------------------------------------------ */
/* Per-thread activity: the seq (a2a_event.seq) of the last call of each
 * thread, stored by a2a_dispatch at PRE (one relaxed store per call, in a
 * cache line of the thread's own). Another thread can tell from it whether
 * a thread made any call since one it remembers (the cross-rank analyzer:
 * "is this thread still only polling?"). 0 for threads past
 * A2A_ACTIVITY_THREADS or never seen. */

#define A2A_ACTIVITY_THREADS 1024
/* One cache line per thread, so threads storing their own never share.
 * Written only by a2a_note_activity / a2a_note_activity_kind (the
 * dispatcher); read through the two functions below. */
typedef struct a2a_activity {
  _Atomic uint32_t last_seq;
  _Atomic uint32_t last_other_seq; /* the last call a polling loop does not make */
  uint32_t flush;                  /* owner thread only: deferred work (below) */
  /* Owner thread only: the repeated-launch mark (a2a_note_launch): 0, or
   * 1 + per_thread of the thread's last dispatched call, a launch of
   * quiet_func on quiet_stream after which every quiet analyzer's launch
   * handler is a no-op for the same launch (a2a_analyzer.launch_quiet). */
  uint32_t quiet;
  const void *quiet_stream;
  const void *quiet_func;
  /* Owner thread only: the analyzers' veto of the thread's nested group
   * rows (a2a_group_nested_full). */
  uint32_t gveto;
  /* The thread's kept nested groups (a2a_group_keep), in one word: bit 0
   * set while one is open, bits 1-31 the number the thread kept so far
   * (modulo 2^31). Written by the owner thread only; read by others at
   * exit (relaxed). */
  _Atomic uint32_t gkeep;
  /* Owner thread only: nonzero while a nested ncclGroupEnd would not be a
   * no-op for some analyzer on the thread (a2a_nested_end_busy). */
  uint32_t gend_busy;
  char pad[64 - 7 * sizeof(uint32_t) - 2 * sizeof(void *)];
} a2a_activity;
extern A2A_HIDDEN a2a_activity a2a_activity_tab[A2A_ACTIVITY_THREADS];
uint32_t a2a_thread_last_seq(uint32_t thread);
/* The same for the thread's last call that a polling loop does not make
 * (anything but cudaStreamQuery, cudaEventQuery, ncclCommGetAsyncError,
 * cudaGetLastError/PeekAtLastError, cudaSetDevice): whether a thread still
 * only polls since a call it remembers, without the polling thread
 * publishing every poll (a reader could never catch a spinning loop's
 * state between two of its writes). */
uint32_t a2a_thread_last_other_seq(uint32_t thread);

/* Deferred per-thread work. An analyzer that left work for a thread to
 * finish "before the thread does anything but more NCCL communication"
 * (the cross-rank analyzer's completion markers: xrank.c) registers one
 * hook and sets the thread's flag; the dispatcher calls the hook on that
 * thread at the PRE of its next call of any kind but A2A_NOFLUSH_KINDS,
 * before any analyzer sees that call, and clears the flag first. Costs one
 * load and branch per call of the thread (the activity store's cache
 * line). Only while a wants_activity analyzer runs (every call reaches the
 * dispatcher then); the flag of a thread past A2A_ACTIVITY_THREADS cannot
 * be set (a2a_thread_want_flush returns false: do the work at once). */
typedef void (*a2a_flush_fn)(uint32_t thread);
void a2a_set_flush_hook(a2a_flush_fn fn);
bool a2a_thread_want_flush(uint32_t thread);
/* Clear the thread's flag and run the hook (the dispatcher's slow path). */
void a2a_run_flush(uint32_t thread);
/* The calls that do not flush: NCCL communication and group calls, and
 * calls that neither enqueue work nor wait (error and communicator
 * queries, reduction-operator creation). */
#define A2A_NOFLUSH_KINDS                                                                 \
  (A2A_KIND_BIT(A2A_EV_COLL) | A2A_KIND_BIT(A2A_EV_P2P) | A2A_KIND_BIT(A2A_EV_GROUP_START) | \
   A2A_KIND_BIT(A2A_EV_GROUP_END) | A2A_KIND_BIT(A2A_EV_COMM_ASYNC_ERROR) |                 \
   A2A_KIND_BIT(A2A_EV_COMM_QUERY) | A2A_KIND_BIT(A2A_EV_ERROR_QUERY) |                     \
   A2A_KIND_BIT(A2A_EV_REDOP))

/* ------------------------------------------------------------------ */
/* Communicator registry. One record per communicator this process created;
 * records outlive destroy (state records it) so misuse can be named. The
 * registry is filled by a2a_dispatch before analyzers see a COMM_INIT POST. */

typedef enum a2a_comm_state {
  A2A_COMM_ACTIVE = 0,
  A2A_COMM_FINALIZED,
  A2A_COMM_DESTROYED,
  A2A_COMM_ABORTED,
  A2A_COMM_REVOKED,
} a2a_comm_state;

typedef struct a2a_comm {
  void *handle;              /* ncclComm_t */
  uint64_t id_hash;          /* identity shared by all ranks of the comm; 0
                                for process-local comms (ncclCommInitAll) */
  uint64_t local_id;         /* a process-local comm's identity (id_hash 0):
                                the same for the ranks one ncclCommInitAll
                                made, and derived for a split's or shrink's
                                child of such a comm as id_hash is for an
                                id-based parent's; 0 otherwise. Its ranks all
                                live in this process (the cross-rank analyzer
                                matches them in-process); names and logs show
                                it (a2a_comm_ident) */
  int nranks, rank, device;
  a2a_init_how how;
  struct a2a_comm *parent;   /* SPLIT/SHRINK */
  int color;
  uint32_t split_index;      /* this comm's index among its parent's splits */
  _Atomic uint32_t nsplits;  /* splits made from this comm so far */
  uint32_t serial;           /* creation order in this process (1, 2, ...) */
  int blocking;
  _Atomic int state;         /* a2a_comm_state */
  char name[40];             /* printable: "comm#3(a1b2c3d4e5f6a7b8)" */
} a2a_comm;

/* The identity a communicator is named and matched by: id_hash, or a
 * process-local comm's local_id, or 0 (unknown). */
static inline uint64_t a2a_comm_ident(const a2a_comm *c) {
  return c->id_hash ? c->id_hash : c->local_id;
}

/* Lookup by handle; NULL if this process never saw the handle created. The
 * newest record wins when NCCL reuses a freed handle address. Lock-free.
 * An NCCL call is looked up by several analyzers, both phases: the
 * thread's last answer first, inline (one compare when the program uses one
 * communicator at a time); then, out of line, the thread's few most recent
 * distinct answers (a thread that drives several communicators in turn:
 * nccl-tests -g N, one group per device; process groups of a data- and an
 * expert-parallel dimension); the table otherwise. a2a_comm_ver is advanced
 * by every insertion into the registry (the only change that can alter a
 * handle's answer: records are never freed while the process runs, and a
 * destroy changes the record's state, not which record answers), so every
 * answer the thread's memo holds is right while the version it was taken at
 * is current; a newer version discards them all. Internal to the registry
 * (core_registry.c); read here only. */
#define A2A_COMM_MEMO_WAYS 4
typedef struct a2a_comm_memo {
  const void *handle;   /* the last lookup's handle and answer */
  a2a_comm *rec;
  unsigned ver;         /* a2a_comm_ver every answer here was taken at */
  unsigned next;        /* the way the next table lookup replaces */
  struct {
    const void *handle; /* NULL: empty (and right for a lookup of NULL,
                           which the table never holds: ncclCommCount(NULL)) */
    a2a_comm *rec;
  } way[A2A_COMM_MEMO_WAYS];
} a2a_comm_memo;
extern A2A_HIDDEN _Atomic unsigned a2a_comm_ver;
extern A2A_HIDDEN _Thread_local a2a_comm_memo a2a_comm_last;
a2a_comm *a2a_comm_lookup_slow(const void *handle, unsigned ver);
/* A record created without its size and rank (a non-blocking split or
 * shrink: NCCL cannot be asked before the child is ready) gets them once
 * they are known, before the communicator's first operation: written
 * once, from -1, under the registry's lock. */
void a2a_comm_complete(a2a_comm *c, int nranks, int rank, int device);
static inline a2a_comm *a2a_comm_lookup(const void *handle) {
  if (!handle) return NULL;
  unsigned ver = atomic_load_explicit(&a2a_comm_ver, memory_order_acquire);
  if (a2a_comm_last.handle == handle && a2a_comm_last.ver == ver) return a2a_comm_last.rec;
  return a2a_comm_lookup_slow(handle, ver);
}
/* a2a_comm_lookup's first test alone: the thread's last answer when it is
 * for handle and current, else NULL (also when that answer is NULL). For a
 * fast path that needs a known communicator and otherwise falls back to
 * its reference path, which looks the handle up: no call, no side effect. */
static inline a2a_comm *a2a_comm_lookup_last(const void *handle) {
  /* (No test of handle for NULL: the memo's last handle is NULL only with
   * the answer NULL - the memo starts zeroed, and only lookups of a handle
   * that is not NULL write its last handle (a2a_comm_lookup and
   * a2a_comm_lookup_memo test for NULL first; a2a_comm_lookup_slow has no
   * other caller) - so NULL's answer here is NULL, as with the test.) */
  if (a2a_comm_last.handle == handle &&
      a2a_comm_last.ver == atomic_load_explicit(&a2a_comm_ver, memory_order_acquire))
    return a2a_comm_last.rec;
  return NULL;
}
/* a2a_comm_lookup's answer when the thread's memo holds it - the last
 * answer, or a way (a thread driving several communicators in turn:
 * nccl-tests -g N posts one operation per communicator, so the last
 * answer is another communicator's at every operation's first lookup) -
 * inline, else NULL (also when that answer is NULL). A way's answer
 * becomes the last one, exactly as a2a_comm_lookup_slow's way hit makes
 * it: the memo is left as a2a_comm_lookup would leave it, so a fast path
 * that falls back to its reference path (which looks the handle up) sees
 * the same answers. No call, no lock, no allocation. */
static inline a2a_comm *a2a_comm_lookup_memo(const void *handle) {
  a2a_comm_memo *m = &a2a_comm_last;
  /* (a2a_comm_lookup_last's test first, in its order: the common case,
   * one thread on one communicator, costs what it cost there.) */
  if (!handle) return NULL;
  unsigned ver = atomic_load_explicit(&a2a_comm_ver, memory_order_acquire);
  if (m->handle == handle && m->ver == ver) return m->rec;
  if (m->ver != ver) return NULL;
  for (unsigned i = 0; i < A2A_COMM_MEMO_WAYS; i++)
    if (m->way[i].handle == handle) {
      m->handle = handle;
      return m->rec = m->way[i].rec;
    }
  return NULL;
}
/* Iterate over all records (for summaries); fn returns nonzero to stop. */
void a2a_comm_foreach(int (*fn)(a2a_comm *c, void *arg), void *arg);
/* Communicators created but not recorded (registry full, out of memory):
 * while nonzero, a handle missing from the registry may still be valid. */
unsigned a2a_comm_dropped(void);
/* Stable cross-rank hash of ncclUniqueId bytes (128 each). */
uint64_t a2a_hash_bytes(const void *p, size_t n, uint64_t seed);
/* A2ACHECK_COORDINATOR's syntax, A.B.C.D:PORT (IPv4 dotted quad, host
 * names are not resolved; port 1..65535): NULL and *addr (network order)
 * and *port (host order) set when usable, else why not ("is not
 * host:port", ...), for a message that quotes the value. Pure. */
const char *a2a_coord_spec_parse(const char *spec, uint32_t *addr, uint16_t *port);

/* ------------------------------------------------------------------ */
/* Allocation registry: segments from cudaMalloc & co, filled on ALLOC POST
 * and emptied after analyzers have seen FREE POST. Bounds are segment bounds
 * (PyTorch's caching allocator sub-allocates inside them). */

typedef struct a2a_alloc {
  uintptr_t base;
  size_t size;
  int device;                /* -1 for host-pinned */
  a2a_mem_kind mem;
  uint64_t serial;           /* allocation number, changes on reuse */
} a2a_alloc;

/* Find the segment containing p; returns true and fills *out. */
bool a2a_alloc_find(const void *p, a2a_alloc *out);
/* Number of live segments. */
size_t a2a_alloc_count(void);
/* The registry's generation: never 0, and advanced by every change to the
 * registry (an allocation, a free, a reset), so an answer derived from
 * lookups stays valid while the generation read before them is unchanged
 * (a per-thread memo of a verdict; core_registry.c's own lookup cache). */
extern A2A_HIDDEN _Atomic uint64_t a2a_alloc_gen;
static inline uint64_t a2a_alloc_generation(void) {
  return atomic_load_explicit(&a2a_alloc_gen, memory_order_acquire);
}

/* The core's epoch: never 0, advanced (release) after every change of the
 * allocation registry (with a2a_alloc_gen), of the communicator registry
 * (with a2a_comm_ver) and of the enabled checks (a2a_checks_enabled_w),
 * once the change and its own counter are written. Read (acquire) before
 * any of those, it bounds them all: an answer derived from them stays
 * valid while the epoch reads the same - one compare for a memo that
 * depends on all of them (layout's remembered group operations) instead of
 * one per input. A change under way on another thread when the epoch is
 * read (written, the epoch not advanced yet) is ordered after the reader,
 * as a registry lookup racing with it is; one made by the reading thread,
 * or ordered before its read by the program's own synchronization, has
 * advanced it. Changes that restore an earlier state (checks off, then on
 * again) advance it too: a memo keyed on it is then only dropped sooner. */
extern A2A_HIDDEN _Atomic uint64_t a2a_core_epoch;
static inline uint64_t a2a_core_epoch_now(void) {
  return atomic_load_explicit(&a2a_core_epoch, memory_order_acquire);
}
static inline void a2a_core_epoch_advance(void) {
  atomic_fetch_add_explicit(&a2a_core_epoch, 1, memory_order_release);
}

/* ------------------------------------------------------------------ */
/* Per-thread records (core_tslots.c). An analyzer that keeps state per
 * application thread declares `static a2a_tslots slots;` (zero-initialized)
 * and calls a2a_tslots_init from its init. A record belongs to one live
 * thread (ev->thread) and is handed to another thread after its owner
 * exited, so the number of threads ever created is unbounded; at most
 * A2A_TSLOTS threads hold a record at once (others get NULL: not checked).
 * get/claim are lock-free and, after a slot's first claim, allocation-free.
 * Only the owning thread writes its record; other threads may read it at
 * process exit (racy reads accepted there). */

#define A2A_TSLOTS 4096

typedef struct a2a_tslot {
  _Atomic uint32_t owner;     /* ev->thread of the owner, 0 = free */
  _Atomic(void *) rec;        /* allocated at the slot's first claim */
} a2a_tslot;

typedef struct a2a_tslots {
  a2a_tslot slot[A2A_TSLOTS];
  pthread_key_t key;          /* per thread: its slot, freed at thread exit */
  bool key_ok;
  _Atomic bool displaced;     /* some thread ever got a slot other than its
                                 first choice (lookups then probe further) */
} a2a_tslots;

/* (Re)initialize: every slot free, every record passed to fini (may be NULL)
 * and freed. Returns nonzero when no pthread key could be created. */
int a2a_tslots_init(a2a_tslots *t, void (*fini)(void *rec));
/* The record of thread id, or NULL if it has none. */
void *a2a_tslots_get(a2a_tslots *t, uint32_t id);
/* Claim a record of `size` bytes for the calling thread id (which must have
 * none). A new record is zeroed; *reused says it is an exited thread's
 * record, which the caller must reset. NULL when every probed slot is
 * owned by a live thread, or out of memory. */
void *a2a_tslots_claim(a2a_tslots *t, uint32_t id, size_t size, bool *reused);
/* In a forked child: free the slots of every thread but self. */
void a2a_tslots_fork_child(a2a_tslots *t, uint32_t self);

/* ------------------------------------------------------------------ */
/* Analyzers. */

/* An analyzer's handlers of nested group calls (a2a_analyzer.nested), per
 * phase (A2A_PRE, A2A_POST). */
typedef struct a2a_nested {
  void (*start[2])(const a2a_event *ev);
  void (*end[2])(const a2a_event *ev);
} a2a_nested;

/* An analyzer's per-kind handlers (a2a_analyzer.by_kind). */
typedef struct a2a_by_kind {
  void (*fn[A2A_EV__COUNT])(const a2a_event *ev);
} a2a_by_kind;

typedef struct a2a_analyzer {
  const char *name;              /* e.g. "layout" */
  /* The A2A_OWN_* bit of the checks it reports (a2a_checks.inc): it is not
   * called at all when every one of them is disabled. 0: always called. */
  unsigned owner;
  /* The events it handles: A2A_KIND_BIT(kind) per kind, one mask per phase.
   * It is called only for those. */
  uint64_t pre, post;
  /* It reads a2a_thread_last_(other_)seq: every call of every kind must reach the
   * dispatcher (which stores the seq) while it runs, even kinds no analyzer
   * handles. */
  bool wants_activity;
  /* Optional gates, one per phase: for the kinds of pre_gated (a subset of
   * pre), its PRE handler does nothing observable while *pre_gate is 0;
   * likewise post_gated / post_gate for the POST. The handler tests that
   * itself (it must: the generic dispatch calls it regardless), so a gate
   * is only a hint: the hot dispatch (a2a_dispatch_hot) leaves the gated
   * handlers of a (phase, kind) out of the list while every gate of that
   * (phase, kind) reads 0, without calling them. A gate is read with a
   * relaxed load, like the handler's own test: skipping on a 0 read is the
   * handler's own early return moved before the call, so the analyzer must
   * make its gate nonzero, on the thread whose later calls need the
   * handler, before those calls (a write sequenced before them is seen by
   * them: read-after-write coherence), as it must for its own test. */
  uint64_t pre_gated;
  const _Atomic unsigned *pre_gate;
  uint64_t post_gated;
  const _Atomic unsigned *post_gate;
  /* Optional: per kind of pre_gated (post_gated), the handler "only called
   * when its gate read open": the table's handler for that kind and phase
   * (by_kind, by_kind_post or on_event) without its own test of the gate.
   * pre_open->fn[k] must do exactly what the table's handler does for a
   * PRE of kind k whose test of *pre_gate reads nonzero; likewise
   * post_open for a POST. The hot dispatch calls it in place of the
   * table's handler only where that is the handler's own test moved, read
   * for read: as the first entry of a selection list, after the
   * dispatcher's last read of the entry's gate found it nonzero, so that
   * between that read and the call the thread does nothing but relaxed
   * loads (of the other gate, of the list) - no handler that could write
   * the gate or synchronize with a thread that did (an acquire after
   * which the handler's own load would have to see that newer value).
   * The handler's own relaxed load could then have read the very value
   * the dispatcher read, in every execution (read-read coherence allows a
   * later load to read the same store while no newer one happens before
   * it), so calling the open handler is that execution's path: exact also
   * when another thread changes the gate between the two reads, which is
   * a race between that thread and this call either way. Everywhere else -
   * a later entry of a list, the generic dispatch (a2a_dispatch,
   * a2a_dispatch_inline), a repeated launch's list (no gate is read
   * before it) - the table's handler runs and tests the gate itself. */
  const struct a2a_by_kind *pre_open;
  const struct a2a_by_kind *post_open;
  /* Optional: its PRE handler of A2A_EV_MEMCPY does nothing for a queued
   * copy (a2a_copy_queued) - it must return at once for one itself (the
   * generic dispatch calls it) - so the hot dispatch of such a copy's PRE
   * (the table's row A2A_ROW_QCOPY) leaves it out. */
  bool pre_skips_queued_copy;
  /* Optional: its launch PRE handler is quiet (a2a_note_launch): called
   * for a launch of the same function on the same stream (stream and
   * per_thread) as the calling thread's previous dispatched call, it would
   * do nothing observable - unless that previous call's handler said
   * otherwise with a2a_launch_unquiet, which it must do on every path that
   * leaves its state such that the same launch again would change
   * something (or report, or read state other threads change). Its state
   * for launches must change only through the thread's own dispatched
   * calls and its re-initialization (which the dispatcher sees: it forgets
   * every mark at init and in a forked child), and its own launch POST
   * handler, which runs between two repeated launches, must not change
   * what its launch PRE handler reads. Marks are kept per ev->thread: a
   * test that fakes several threads from one OS thread must not rely on
   * them for thread-local state. The hot dispatch then
   * leaves it out of a repeated launch's PRE. */
  bool launch_quiet;
  /* Optional: its gates (pre_gate, post_gate) open only in its init:
   * nothing else ever stores a nonzero value in them (its handlers may
   * close them). A gate of such an analyzer that reads 0 when the core
   * builds the hot rows (a2a_hot_rows, just after every init) therefore
   * stays 0 until the next init, which rebuilds the rows: its gated
   * handlers there, which would return at their own tests on every call,
   * are left out of every selection (and of a repeated launch's list), and
   * their gate takes no slot - the generic dispatch (a2a_handlers) still
   * calls them. perf_env's report, pending only if its init found
   * something to say. The gates must be the analyzer's own, shared with no
   * other analyzer (gates are matched by pointer, entries dropped per
   * analyzer: another analyzer could open a shared gate after the rows
   * were built, and these handlers would miss it). */
  bool gates_open_at_init_only;
  /* Optional: the kinds (A2A_KIND_BIT) of its masks whose handlers - of
   * both phases, the table's and the open ones - do nothing observable for
   * an event whose communicator ev->comm is a record of the registry in
   * state A2A_COMM_ACTIVE, whatever the event's other members: no finding,
   * no state written, except the thread's lookup memo (a2a_comm_last) as
   * a2a_comm_lookup leaves it for that handle. A call of such a kind
   * whose rows hold only these handlers then needs no event at all
   * (a2a_comm_quiet_kinds): the communicator queries. */
  uint64_t comm_quiet;
  /* Optional: its handlers of nested group calls (a2a_group_nested), which
   * the nested rows call instead of its table handlers of GROUP_START and
   * GROUP_END (each only for a phase and kind of its masks); a NULL entry
   * leaves it out of that row. NULL: its table handlers, as in the kind's
   * own rows (always exact). An analyzer that declares them states why
   * each does exactly what its table handler would do for a nested call,
   * given only what a2a_group_nested guarantees: the thread's depth as its
   * analyzed group calls counted it (a2a_event.u.group.depth; from zero,
   * and from zero again in a forked child) is >= 1 at a nested start, >= 2
   * at a nested end, and every group call of the thread
   * that was not nested reached the kind's own rows - unless the analyzer
   * vetoed the nested rows for the thread (a2a_group_nested_full) at a
   * call where its own state could not follow that count. */
  const struct a2a_nested *nested;
  /* Whether its handlers on the nested rows (its nested ones, or its
   * table handlers of the group kinds where it declares none) stay exact
   * when the caller keeps a nested level instead of dispatching it
   * (a2a_group_keep): they read the kept level where they need the
   * thread's depth or nested-group index, fold it at the thread's next
   * dispatched group call (u.group.kept), and mark the thread busy
   * (a2a_nested_end_busy) while its nested end would not be a no-op for
   * them. A running analyzer with a handler on a nested row that does not
   * say so turns keeping off (a2a_group_keep_on, set at init): a new
   * analyzer sees every nested call until it is written for kept ones. */
  bool nested_keep_ok;
  /* Called once from a2a_core_init; nonzero disables the analyzer. Unit
   * tests call it again between cases (a2a_core_reset_for_tests): it must
   * (re)set all of the analyzer's state. May be NULL. */
  int (*init)(void);
  /* The events of its masks. Must be thread-safe and must not block. */
  void (*on_event)(const a2a_event *ev);
  /* Optional: per kind, a handler the dispatch table calls instead of
   * on_event for the events of that kind (both phases of its masks), so
   * that the hot kinds skip on_event's own switch over kinds. by_kind[k],
   * when not NULL, must do exactly what on_event does for an event of kind
   * k (on_event stays the reference, and what direct callers use) - for
   * its PREs only where by_kind_post has an entry for k. NULL, or a NULL
   * entry: on_event. */
  const struct a2a_by_kind *by_kind;
  /* Optional: per kind, the handler the dispatch table calls for the POSTs
   * of that kind instead of by_kind's, which then handles the PREs only
   * and may take the phase for granted (no test of it on the hot path).
   * by_kind_post[k] must do exactly what on_event does for a POST of kind
   * k. NULL, or a NULL entry: by_kind's (or on_event) for both phases. */
  const struct a2a_by_kind *by_kind_post;
  /* Called once at process exit (after A2A_EV_PROCESS_EXIT was dispatched),
   * to flush summaries. May be NULL. */
  void (*fini)(void);
  /* Called in the child after fork (state of other threads is gone).
   * May be NULL. */
  void (*after_fork_child)(void);
} a2a_analyzer;

/* The analyzers of analyzers/ (analyzers.inc), in dispatch order. */
extern A2A_HIDDEN const a2a_analyzer *const a2a_local_analyzers[];
extern A2A_HIDDEN const size_t a2a_nlocal_analyzers;

/* Initialize the core with options, host services and the analyzers to run,
 * in dispatch order (all must outlive the process; at most 16 analyzers).
 * The runtime composes the list (the local analyzers, then cross-rank).
 * Safe to call once; later calls are ignored. */
void a2a_core_init(const a2a_options *opt, const a2a_host *host,
                   const a2a_analyzer *const *analyzers, size_t n);
/* Hand one event to the registries and every enabled analyzer. */
void a2a_dispatch(const a2a_event *ev);

/* The dispatch table, per (phase, kind): the handlers to call, in order,
 * NULL-terminated (registry updates are entries too: creations first at
 * POST, destructions last). Built at init; an analyzer that disables
 * itself has its entries replaced by a no-op. a2a_dispatch_inline is
 * a2a_dispatch for the shim's hot path: no call, no prologue. */
#define A2A_MAX_HANDLERS 12
/* A handler reads the event and never writes it (nor casts its const
 * away): the shim's wrappers rely on that - ncclSend/ncclRecv and the
 * collectives pass the real call its arguments as the event holds them
 * after the PRE's dispatch (wrap_nccl.c, A2A_P2P_WRAP, A2A_COLL_WRAP). */
typedef void (*a2a_handler)(const a2a_event *ev);
/* The rows of the tables: one per kind, and A2A_ROW_QCOPY, A2A_EV_MEMCPY's
 * for a queued copy (a2a_copy_queued), which the hot copy wrappers
 * dispatch with a2a_dispatch_row: at PRE the kind's handlers but those of
 * the analyzers that skip a queued copy's PRE (pre_skips_queued_copy), in
 * the same order; at POST the kind's row. */
#define A2A_ROW_QCOPY ((unsigned)A2A_EV__COUNT)
/* The rows of nested group calls (a2a_group_nested): per analyzer its
 * a2a_analyzer.nested handlers, or its kind's table handlers. */
#define A2A_ROW_GSTART_NESTED ((unsigned)A2A_EV__COUNT + 1)
#define A2A_ROW_GEND_NESTED ((unsigned)A2A_EV__COUNT + 2)
#define A2A_ROWS (A2A_EV__COUNT + 3)
extern A2A_HIDDEN _Atomic(a2a_handler) a2a_handlers[2][A2A_ROWS][A2A_MAX_HANDLERS + 1];
extern A2A_HIDDEN _Atomic bool a2a_dispatch_ready;
extern A2A_HIDDEN bool a2a_activity_on;          /* store a2a_event.seq per thread at PRE */
/* A2A_ACTIVITY_THREADS while a2a_activity_on, else 0 (set with it): the
 * threads below it store their activity - the hot dispatch's one test for
 * both conditions. */
extern A2A_HIDDEN uint32_t a2a_activity_threads;
void a2a_note_activity(const a2a_event *ev);

/* The kinds a polling loop makes (a2a_thread_last_other_seq ignores them). */
#define A2A_POLL_KINDS                                                                    \
  (A2A_KIND_BIT(A2A_EV_STREAM_QUERY) | A2A_KIND_BIT(A2A_EV_EVENT_QUERY) |                 \
   A2A_KIND_BIT(A2A_EV_COMM_ASYNC_ERROR) | A2A_KIND_BIT(A2A_EV_ERROR_QUERY) |             \
   A2A_KIND_BIT(A2A_EV_SET_DEVICE))

/* a2a_note_activity, inline (the same stores and test). */
static inline void a2a_note_activity_inline(const a2a_event *ev) {
  if (ev->thread >= A2A_ACTIVITY_THREADS) return;
  a2a_activity *a = &a2a_activity_tab[ev->thread];
  uint64_t bit = A2A_KIND_BIT(ev->kind);
  atomic_store_explicit(&a->last_seq, ev->seq, memory_order_relaxed);
  a->quiet = 0; /* (a launch here too: the generic path never skips - a2a_note_launch) */
  if (!(bit & A2A_POLL_KINDS)) atomic_store_explicit(&a->last_other_seq, ev->seq, memory_order_relaxed);
  if (a->flush && !(bit & A2A_NOFLUSH_KINDS)) a2a_run_flush(ev->thread);
}

static inline void a2a_dispatch_inline(const a2a_event *ev) {
  if (!atomic_load_explicit(&a2a_dispatch_ready, memory_order_acquire)) return;
  unsigned k = (unsigned)ev->kind, ph = ev->phase == A2A_POST;
  if (k >= A2A_EV__COUNT) return;
  if (!ph && a2a_activity_on) a2a_note_activity_inline(ev);
  _Atomic(a2a_handler) *h = a2a_handlers[ph][k];
  for (a2a_handler f; (f = atomic_load_explicit(h, memory_order_relaxed)) != NULL; h++) f(ev);
}

/* The activity store of a call of kind `kind` (a constant) by thread
 * `thread` with seq `seq`: what the dispatch does at an event's PRE
 * (a2a_note_activity_kind), also for a call that makes no event
 * (a2a_comm_quiet). */
__attribute__((always_inline)) static inline void a2a_note_activity_at(uint32_t thread, uint32_t seq,
                                                                       a2a_kind kind) {
  if (thread >= a2a_activity_threads) return;
  a2a_activity *a = &a2a_activity_tab[thread];
  atomic_store_explicit(&a->last_seq, seq, memory_order_relaxed);
  a->quiet = 0; /* not a launch's (a2a_note_launch) */
  if (!(A2A_KIND_BIT(kind) & A2A_POLL_KINDS))
    atomic_store_explicit(&a->last_other_seq, seq, memory_order_relaxed);
  if (!(A2A_KIND_BIT(kind) & A2A_NOFLUSH_KINDS) && a->flush) a2a_run_flush(thread);
}

/* a2a_note_activity for an event whose kind the caller knows at compile
 * time, including its test of a2a_activity_on (a2a_activity_threads): two
 * relaxed stores into the thread's own line and the deferred-work test, no
 * call unless work was deferred. */
__attribute__((always_inline)) static inline void a2a_note_activity_kind(const a2a_event *ev, a2a_kind kind) {
  /* (The seq read once: the stores could be assumed to change it.) */
  a2a_note_activity_at(ev->thread, ev->seq, kind);
}

/* Per (phase, row), the gates of its gated handlers (a2a_analyzer.
 * pre_gate / post_gate), at most A2A_MAX_GATES distinct ones (a handler
 * whose gate finds no slot counts as ungated), and per selection - bit d
 * set: gate slot d is open (reads nonzero) - the handler list without the
 * handlers of the closed gates (a2a_hot_row.sel, in the table's order;
 * selection 0 leaves out every gated handler, the last one none; a first
 * entry that is a gated handler is its analyzer's open one when it
 * declares one, a2a_analyzer.pre_open / post_open; an
 * analyzer that disables itself has its entries there replaced by the
 * same no-op). A slot without a gate - every slot of a row none of whose
 * handlers is gated, all of whose lists are then its full list - points
 * to a2a_gate_none (always 0), so that the hot test reads every slot
 * without a branch. Built at init with the handler table (NULL before). */
#define A2A_MAX_GATES 2
#define A2A_GATE_SELS (1u << A2A_MAX_GATES)
#define A2A_LIST_LEN 16 /* >= A2A_MAX_HANDLERS + 1: a power of two, for the index */
extern A2A_HIDDEN const _Atomic unsigned a2a_gate_none;
/* One (phase, row)'s gates and lists together, so that the hot dispatch
 * finds both from one address. */
typedef struct a2a_hot_row {
  const _Atomic unsigned *gate[A2A_MAX_GATES];
  /* No gate slot in use (every slot a2a_gate_none): no entry of the row's
   * lists is a slotted gate's handler, so every selection is the same list
   * - each selection keeps an entry unless its slot is closed, and no
   * entry has a slot; the first entry is replaced by an open handler only
   * when it has one - and the hot dispatch may take sel[0] without reading
   * the gates (a2a_dispatch_row). Set where the row is built, with its
   * gates (init, re-init; a forked child keeps the parent's rows and
   * analyzers; an analyzer's self-disable replaces entries in place,
   * which keeps the lists equal). */
  bool ungated;
  _Atomic(a2a_handler) sel[A2A_GATE_SELS][A2A_LIST_LEN];
} a2a_hot_row;
extern A2A_HIDDEN a2a_hot_row a2a_hot_rows[2][A2A_ROWS];
/* A repeated launch's PRE list (a2a_note_launch): the launch PRE row's
 * handlers but the quiet analyzers' (a2a_analyzer.launch_quiet), all of
 * the others, gated or not, each the table's handler (a gated handler
 * tests its own gate: no gate is read before this list, so never a
 * pre_open one). */
extern A2A_HIDDEN _Atomic(a2a_handler) a2a_launch_quiet[A2A_LIST_LEN];
/* Call the handlers of list h (NULL-terminated) in order with ev: a
 * repeated launch's list when it is not empty, out of line (a2a_dispatch_
 * row: its empty test needs no address of the list). */
void a2a_dispatch_list(_Atomic(a2a_handler) *h, const a2a_event *ev);

/* A launch's a2a_note_activity_kind, and whether it repeats the thread's
 * previous dispatched call: a launch of the same function on the same
 * stream (ev->stream and ev->per_thread) whose quiet handlers left the
 * mark set (none called a2a_launch_unquiet). Every other call's
 * dispatch clears the mark (a2a_note_activity_kind and _inline at PRE,
 * a2a_dispatch in both phases: the runtime's POST-only events), so a set
 * mark means that nothing reached any analyzer on this thread since that
 * launch but the launch's own POST, whose handlers in a quiet analyzer
 * must leave its launch PRE state alone (a2a_analyzer.launch_quiet;
 * layout's bracket POST touches only the bracket): each quiet handler's
 * state is the one it left, in which the same launch is a no-op. Otherwise the launch marks itself and the full list runs. Only
 * while the activity is stored (a2a_activity_threads), the same condition
 * as the clearing stores'. */
__attribute__((always_inline)) static inline bool a2a_note_launch(const a2a_event *ev) {
  if (ev->thread >= a2a_activity_threads) return false;
  a2a_activity *a = &a2a_activity_tab[ev->thread];
  /* (Read before the flush hook's call, which could be assumed to change
   * the event: the wrapper's registers serve.) */
  const void *stream = ev->stream, *func = ev->u.launch.func;
  uint32_t mark = 1u + (uint32_t)ev->per_thread;
  const uint32_t seq = ev->seq; /* once: the first store could be assumed to change it */
  atomic_store_explicit(&a->last_seq, seq, memory_order_relaxed);
  atomic_store_explicit(&a->last_other_seq, seq, memory_order_relaxed);
  _Static_assert(!(A2A_KIND_BIT(A2A_EV_LAUNCH) & (A2A_POLL_KINDS | A2A_NOFLUSH_KINDS)),
                 "a launch stores both seqs and flushes");
  /* flush and quiet (adjacent, the owner's own) in one load and compare:
   * equal to {0, mark} - no deferred work, and the mark's per_thread - is
   * the repeat's common case, which then compares stream and function.
   * Otherwise either work is deferred (the flush, then the full test, as
   * the flush's hook may change the mark) or the mark differs (not a
   * repeat: no flush to run). */
  _Static_assert(offsetof(a2a_activity, quiet) == offsetof(a2a_activity, flush) + sizeof(uint32_t),
                 "flush and quiet adjacent");
  const uint32_t want_fq[2] = {0, mark};
  uint64_t fq, want;
  memcpy(&fq, (const char *)a + offsetof(a2a_activity, flush), sizeof fq);
  memcpy(&want, want_fq, sizeof want);
  if (__builtin_expect(fq == want, 1)) {
    if (((uintptr_t)a->quiet_stream ^ (uintptr_t)stream) == 0 && ((uintptr_t)a->quiet_func ^ (uintptr_t)func) == 0)
      return true;
  } else if (__builtin_expect(a->flush != 0, 0)) {
    a2a_run_flush(ev->thread);
    if ((((uintptr_t)a->quiet_stream ^ (uintptr_t)stream) | ((uintptr_t)a->quiet_func ^ (uintptr_t)func) |
         (uintptr_t)(a->quiet ^ mark)) == 0)
      return true;
  }
  a->quiet = mark;
  a->quiet_stream = stream;
  a->quiet_func = func;
  return false;
}
/* A quiet analyzer's launch handler says that the same launch again would
 * not be a no-op (a2a_analyzer.launch_quiet). */
static inline void a2a_launch_unquiet(uint32_t thread) {
  if (thread < A2A_ACTIVITY_THREADS) a2a_activity_tab[thread].quiet = 0;
}

/* a2a_dispatch_hot with the table's row `row` (a constant): the kind's
 * own, or A2A_ROW_QCOPY for a queued copy (a2a_copy_queued(ev) true); or,
 * for a group call, its kind's or its nested row (a2a_group_nested). */
__attribute__((always_inline)) static inline void a2a_dispatch_row(const a2a_event *ev, a2a_kind kind,
                                                                   unsigned row, a2a_phase phase) {
  const bool launch_pre = phase == A2A_PRE && kind == A2A_EV_LAUNCH && row == (unsigned)A2A_EV_LAUNCH;
  bool quiet = false;
  if (launch_pre) quiet = a2a_note_launch(ev);
  else if (phase == A2A_PRE) a2a_note_activity_kind(ev, kind);
  const unsigned ph = phase == A2A_POST;
  _Atomic(a2a_handler) *h;
  if (launch_pre && quiet) {
    /* (Its first entry tested apart: the list is empty while every
     * analyzer with a launch PRE handler is quiet - the table's own - and
     * then a repeated launch's PRE is this one load and test.) */
    if (__builtin_expect(atomic_load_explicit(&a2a_launch_quiet[0], memory_order_relaxed) == NULL, 1))
      return;
    /* (Out of line: the list's address is not set up before the test.) */
    a2a_dispatch_list(a2a_launch_quiet, ev);
    return;
  } else {
    _Static_assert(A2A_MAX_GATES == 2, "the selection below reads every slot");
    a2a_hot_row *r = &a2a_hot_rows[ph][row];
    const _Atomic unsigned *const *g = r->gate;
    /* An NCCL kind's row tests its flag first: with every analyzer's
     * gates on CUDA kinds but perf_env's (open at init only, left out
     * when closed: a2a_analyzer.gates_open_at_init_only), its rows are
     * ungated, and the flag's one load and test replaces the two gates'
     * four loads. A CUDA kind's row (a launch's POST, an event record's,
     * a copy's: gated by the analyzers' own state) reads its gates
     * directly, as before; the choice by kind, a constant, only shapes
     * the code: either way an ungated row takes sel[0], its only list. */
    if (a2a_kind_is_nccl(kind) && __builtin_expect(r->ungated, 1)) {
      h = r->sel[0];
    } else {
      /* The selection by branches, each list's address a constant: every
       * gate closed (the common case) costs one test, as without
       * selections. A list with gate d's handlers is chosen only when the
       * last read of gate d found it nonzero, as the list's first entry may
       * be a handler that does not test its gate (a2a_analyzer.pre_open /
       * post_open: that read is its test): gate 1 is read once, and its
       * value kept; gate 0's read in the first test is the one selection 1
       * relies on (nonzero there, gate 1 being 0), and it is read again to
       * tell selection 2 from 3 (a 0 read is as good as another: a gated
       * handler left out on one would have returned at its own test - or,
       * when an earlier entry of the list synchronizes with the thread that
       * opened the gate, would have seen it open: the same race between that
       * thread and this call, decided the other way, as with any read of a
       * gate before the handlers run). */
      const unsigned g1 = atomic_load_explicit(g[1], memory_order_relaxed);
      if (__builtin_expect((atomic_load_explicit(g[0], memory_order_relaxed) | g1) == 0, 1))
        h = r->sel[0];
      else if (g1 == 0)
        h = r->sel[1];
      else if (atomic_load_explicit(g[0], memory_order_relaxed) == 0)
        h = r->sel[2];
      else
        h = r->sel[3];
    }
  }
  for (a2a_handler f; (f = atomic_load_explicit(h, memory_order_relaxed)) != NULL; h++) f(ev);
}

/* a2a_dispatch_inline for the shim's hot wrappers (launches, event
 * records, stream waits, copies), which know the event's kind and phase
 * at compile time (`kind` and `phase` must be constants and equal to
 * ev->kind and ev->phase): the handler list's address is a constant, the
 * activity store inline. Same handlers, same order, but for the gated
 * handlers of (phase, kind) whose gate reads 0: they would return at their
 * own gate test (a2a_analyzer.pre_gate), so the selection's list, which
 * omits them, calls the rest in the same order (the handlers of an open
 * gate test it themselves, but a list's first entry may leave its test to
 * the dispatcher's read: a2a_analyzer.pre_open); and but for the quiet analyzers' handlers of a
 * repeated launch's PRE (a2a_note_launch). Precondition, instead of a2a_dispatch_inline's test of
 * a2a_dispatch_ready: a2a_core_init returned before the call (happens
 * before it; the gate slots are NULL until then). The shim's wrappers
 * dispatch only inside a2a_rt_enter, which lets a call in only once its
 * acquire load reads the runtime's READY, stored (release) after
 * a2a_core_init returned; unit tests initialize the core first. */
__attribute__((always_inline)) static inline void a2a_dispatch_hot(const a2a_event *ev, a2a_kind kind, a2a_phase phase) {
  a2a_dispatch_row(ev, kind, (unsigned)kind, phase);
}
/* The thread's word (a2a_activity.gkeep), or a word that stays 0 for a
 * thread past the table (which keeps nothing): for a reader that caches
 * where to look. */
extern A2A_HIDDEN const _Atomic uint32_t a2a_group_keep_none;
static inline const _Atomic uint32_t *a2a_group_keep_slot(uint32_t thread) {
  return thread < A2A_ACTIVITY_THREADS ? &a2a_activity_tab[thread].gkeep : &a2a_group_keep_none;
}
#define A2A_GROUP_KEPT 1u /* gkeep: a level is kept */
/* The thread's word: A2A_GROUP_KEPT, and the kept starts so far times 2. */
static inline uint32_t a2a_group_keep_word(uint32_t thread) {
  return atomic_load_explicit(a2a_group_keep_slot(thread), memory_order_relaxed);
}
/* Whether the thread keeps a nested level now. */
static inline uint32_t a2a_group_kept(uint32_t thread) {
  return a2a_group_keep_word(thread) & A2A_GROUP_KEPT;
}
/* Nested group calls. NCCL's groups nest: only the outermost
 * ncclGroupStart / ncclGroupEnd open and launch a group, the others only
 * count (nccl-tests' sendrecv nests one pair per device in its group). The
 * caller keeps each thread's group depth d - the shim in the thread's own
 * runtime object (a2a_rt_thread.gdepth), a test beside its events - counted
 * by the rule of the analyzers that count at POST (xrank, stream_hb,
 * perf_comm) over the thread's analyzed group calls (a2a_group_count: +1
 * per start that returned 0, -1 per end while positive, whatever its
 * result), from zero when the thread's first call is analyzed and again
 * in a forked child, where those analyzers start from zero too
 * (a2a_core_after_fork_child; the shim's fork handler zeroes the forking
 * thread's). That is not NCCL's depth, which also moves with the calls the
 * shim passes through unanalyzed (before the runtime is ready, re-entered
 * from NCCL), nor a count at PRE (group_local and layout count a failed
 * start too). A start at d >= 1 or an end at d >= 2 is nested
 * (a2a_group_nested): the caller dispatches both of its phases with the
 * kind's nested row, A2A_ROW_GSTART_NESTED / A2A_ROW_GEND_NESTED, where an
 * analyzer that declares nested handlers (a2a_analyzer.nested) has those;
 * every other call takes the kind's own rows, and so does every call of a
 * thread past A2A_ACTIVITY_THREADS or whose nested rows an analyzer vetoed
 * (a2a_group_nested_full; forgotten at the core's (re)initialization and
 * in a forked child). The generic dispatch (a2a_dispatch) never takes the
 * nested rows: a thread's group calls go either all through
 * a2a_group_nested (the shim) or none (a test's own dispatch). */
__attribute__((always_inline)) static inline bool a2a_group_nested(a2a_event *ev, a2a_kind kind,
                                                                   uint32_t d) {
  ev->u.group.depth = (int)d;
  ev->u.group.kept = 0;
  if (kind == A2A_EV_GROUP_START ? d < 1 : d < 2) return false;
  if (ev->thread >= A2A_ACTIVITY_THREADS) return false;
  const a2a_activity *a = &a2a_activity_tab[ev->thread];
  if (a->gveto) return false;
  ev->u.group.kept = (int)a2a_group_kept(ev->thread);
  return true;
}
/* A group kind's nested row. */
#define A2A_GROUP_NESTED_ROW(kind) \
  ((kind) == A2A_EV_GROUP_START ? A2A_ROW_GSTART_NESTED : A2A_ROW_GEND_NESTED)
/* The row of the group call of ev at depth d: its kind's, or its nested
 * row. */
__attribute__((always_inline)) static inline unsigned a2a_group_row(a2a_event *ev, a2a_kind kind,
                                                                    uint32_t d) {
  return a2a_group_nested(ev, kind, d) ? A2A_GROUP_NESTED_ROW(kind) : (unsigned)kind;
}
/* The thread's depth after a group call of kind that returned result, at
 * depth d before it. */
static inline uint32_t a2a_group_count(uint32_t d, a2a_kind kind, int result) {
  return kind == A2A_EV_GROUP_START ? d + (result == 0) : d - (d != 0);
}
/* Kept nested groups: a nested group call without an event. A nested
 * call reaches only analyzers that count it (a2a_analyzer.nested): of the
 * table's, group_local and layout count it at PRE (a depth, and layout's
 * nested-group index), perf_comm's nested end ends the thread's armed
 * window and overlap epoch, perf_env's handler returns (its one report is
 * made at the process's first NCCL event that reaches it - its pending
 * report is the process's, not the thread's - and its gate is closed by
 * then: the thread's outermost start, an NCCL event before any nested
 * call, reached it), the others take none. So the caller (the shim; a test's
 * ev_dispatch_group) may keep one nested level per thread itself instead
 * of dispatching its start and end:
 * - a start at d >= 1 on the nested rows (a2a_group_nested's test) while no
 *   level is kept (a2a_group_keepable), once it returned ncclSuccess
 *   (a2a_group_keep; a failed one is dispatched after the call, both
 *   phases, with its own seq: it leaves no level), opens the kept level
 *   (a2a_activity.gkeep: kept, one more kept start);
 * - an end at d >= 2 on the nested rows while a level is kept and no
 *   analyzer marked the thread busy (a2a_nested_end_busy: perf_comm while
 *   its armed window or epoch is open) closes it (not kept), whatever its
 *   result (every counter counts an end so).
 * Each still consumes its seq and stores the thread's activity as its PRE
 * would (a2a_group_keep_note: the polling test sees the call; group calls
 * never flush). The analyzers that count read the kept level where they
 * need the depth or the index, and fold it into their own count at the
 * PRE of the thread's next group call that is dispatched, which carries
 * it (u.group.kept): the caller clears the kept bit after that PRE
 * (a2a_group_kept_folded). That call is nested - while a level is kept
 * d >= 2, and no group call of the thread was dispatched since its start
 * (no veto either) - so it takes the nested rows, and the level is the
 * innermost open one, its start the thread's latest nested one. Forgotten
 * (gkeep 0) at the core's (re)initialization; in a forked child once the
 * analyzers' fork handling folded it (a2a_group_keep_after_fork: the kept
 * bit cleared, the count of kept starts kept, as layout's record counted
 * against it), as the child's count d starts from zero. */
/* Whether the thread's group call of kind at depth d (before it) may go
 * without an event: see above (an end's answer is final, a start's
 * depends on its result: a2a_group_keep). Never while a running analyzer
 * on the nested rows is not written for kept levels
 * (a2a_analyzer.nested_keep_ok): a2a_group_keep_on, set at init with the
 * rows, before the runtime stores READY. */
extern A2A_HIDDEN bool a2a_group_keep_on;
__attribute__((always_inline)) static inline bool a2a_group_keepable(a2a_kind kind, uint32_t thread,
                                                                     uint32_t d) {
  /* (The depth first: the outermost calls answer at once.) */
  if (kind == A2A_EV_GROUP_START ? d < 1 : d < 2) return false;
  if (!a2a_group_keep_on) return false;
  if (thread >= A2A_ACTIVITY_THREADS) return false;
  const a2a_activity *a = &a2a_activity_tab[thread];
  uint32_t kept = atomic_load_explicit(&a->gkeep, memory_order_relaxed) & A2A_GROUP_KEPT;
  if (kind == A2A_EV_GROUP_START) return !a->gveto && !kept;
  return !a->gveto && kept && !a->gend_busy;
}
/* After the real call of a keepable group call (a2a_group_keepable) that
 * returned result: whether it is kept - then the thread's word is updated
 * (a start: one more kept, and kept now; an end: kept no longer), and the
 * caller stores its activity (a2a_group_keep_note); false for a failed
 * start, which the caller dispatches. */
__attribute__((always_inline)) static inline bool a2a_group_keep(a2a_kind kind, uint32_t thread,
                                                                 int result) {
  _Atomic uint32_t *w = &a2a_activity_tab[thread].gkeep;
  uint32_t v = atomic_load_explicit(w, memory_order_relaxed);
  if (kind == A2A_EV_GROUP_START) {
    if (result != 0) return false;
    v = (v + 2) | A2A_GROUP_KEPT; /* (not kept before: a2a_group_keepable) */
  } else {
    v &= ~A2A_GROUP_KEPT;
  }
  atomic_store_explicit(w, v, memory_order_relaxed);
  return true;
}
/* A kept call's activity, with the seq its event would have had:
 * a2a_note_activity_at's for a group kind (both kinds alike: neither a
 * polling kind nor one that flushes). */
__attribute__((always_inline)) static inline void a2a_group_keep_note(uint32_t thread, uint32_t seq) {
  _Static_assert(!((A2A_KIND_BIT(A2A_EV_GROUP_START) | A2A_KIND_BIT(A2A_EV_GROUP_END)) &
                   (A2A_POLL_KINDS | ~A2A_NOFLUSH_KINDS)),
                 "group calls store both seqs and never flush");
  a2a_note_activity_at(thread, seq, A2A_EV_GROUP_START);
}
/* After the PRE of a dispatched group call ev: the analyzers that count
 * nested calls folded the thread's kept level, if it carried one
 * (u.group.kept). */
static inline void a2a_group_kept_folded(const a2a_event *ev) {
  if (__builtin_expect(!ev->u.group.kept, 1)) return;
  _Atomic uint32_t *w = &a2a_activity_tab[ev->thread].gkeep; /* (kept: a2a_group_nested) */
  atomic_store_explicit(w, atomic_load_explicit(w, memory_order_relaxed) & ~A2A_GROUP_KEPT,
                        memory_order_relaxed);
}
/* In a forked child, after the analyzers' fork handling (their
 * after_fork_child hooks and the A2A_EV_FORK_CHILD event) folded the
 * forking thread's kept level into the depths they keep for it: the level
 * is forgotten, as the caller's count starts again from zero. Only the
 * kept bit is cleared: the count of kept starts stays, as layout's record
 * holds the count it last read (ly_thread.kword). */
void a2a_group_keep_after_fork(uint32_t thread);
/* An analyzer's mark, from a handler of the thread's own call: a nested
 * ncclGroupEnd of the thread is (busy) or is not a no-op for it. Its
 * handler of a nested end must be a no-op whenever the mark is clear. One
 * analyzer uses it (perf_comm); a second would need a mask. */
static inline void a2a_nested_end_busy(uint32_t thread, bool busy) {
  if (thread < A2A_ACTIVITY_THREADS) a2a_activity_tab[thread].gend_busy = busy;
}

/* An analyzer's veto, from a handler of the thread's own group call: the
 * thread's later group calls all take the kind's own rows (until the
 * analyzers are re-initialized or the process forks). For an analyzer
 * whose state for the thread cannot follow the depth's count (no record
 * for it). */
void a2a_group_nested_full(uint32_t thread);

/* Bit k set: some running analyzer handles events of kind k (or needs every
 * call's activity). A wrapper may forward a call of a kind nobody wants
 * without building its event (A2ACHECK_CHECKS=-all is a real off switch).
 * Set at init (all kinds until then). */
extern A2A_HIDDEN _Atomic uint64_t a2a_kinds_wanted;
static inline bool a2a_kind_wanted(a2a_kind k) {
  return (atomic_load_explicit(&a2a_kinds_wanted, memory_order_relaxed) >> k) & 1;
}

/* Quiet calls. Bit k set: every handler of kind k's rows, both phases, is
 * a running analyzer's that declares k quiet for an active communicator
 * (a2a_analyzer.comm_quiet), and no gate is read there (both rows
 * ungated: a2a_hot_row.ungated, so the hot dispatch would call exactly
 * sel[0], those handlers). Set at init with the rows, before the runtime
 * stores READY (its acquire makes it visible to the wrappers); not changed
 * by an analyzer's self-disable (its entries become no-ops, quiet too). */
extern A2A_HIDDEN uint64_t a2a_comm_quiet_kinds;
/* Whether a call of kind `kind` (a constant) on communicator `comm`
 * would change nothing through its handlers: the kind is quiet
 * (a2a_comm_quiet_kinds) and the thread's lookup memo holds comm's record
 * (a2a_comm_lookup_memo: a hit leaves the memo as a2a_comm_lookup would,
 * a miss changes nothing and says no), in state A2A_COMM_ACTIVE - one
 * relaxed load, as the handlers' own test of the state: a destroy on
 * another thread racing with this call is decided as it would be there,
 * and a destroy made by this thread, or ordered before the call, is seen.
 * The state is read at every call, never remembered: a destroy changes
 * the record's state, not the registry's version (a2a_comm_ver). Then the
 * caller may skip the event, both dispatches included, provided it keeps
 * everything else the dispatch does: the call's seq, taken from the
 * thread's counter as the event's would be, and its activity
 * (a2a_note_activity_at), at the point of the PRE. When the memo
 * answers but a handler would not have looked the handle up (its check
 * off), which of the memo's ways is the last answer may differ: that
 * changes no answer of a later lookup (every answer the memo holds is the
 * registry's at its version), only which one is found first. */
static inline bool a2a_comm_quiet(a2a_kind kind, const void *comm) {
  if (!((a2a_comm_quiet_kinds >> kind) & 1)) return false;
  a2a_comm *c = a2a_comm_lookup_memo(comm);
  return c && atomic_load_explicit(&c->state, memory_order_relaxed) == A2A_COMM_ACTIVE;
}
/* Run fini of every analyzer (process exit). */
void a2a_core_fini(void);
/* Fork hooks (called by the runtime's pthread_atfork child handler). */
void a2a_core_after_fork_child(void);
/* An analyzer that finds itself inconsistent disables itself, once. */
void a2a_analyzer_disable(const char *name, const char *why);

/* ------------------------------------------------------------------ */
/* Reporting. Implemented by the runtime (shim/report.c); unit tests link
 * tests/unit/collector.c instead. */

typedef enum a2a_severity {
  A2A_SEV_INFO = 0,
  A2A_SEV_WARNING = 1,
  A2A_SEV_ERROR = 2,
} a2a_severity;

typedef struct a2a_finding {
  a2a_check_id check;          /* a row of the checks table (a2a_checks.inc) */
  a2a_severity severity;
  const void *site;            /* dedup key with check: the user's call site
                                  (ev->callsite); NULL = no dedup by site */
  const a2a_comm *comm;        /* optional */
  const char *message;         /* what is wrong and what to do */
  const char *details_json;    /* a JSON object ("{...}") or NULL */
  const a2a_stack *stack;      /* captured earlier, or NULL */
  bool capture_stack;          /* stack == NULL: capture the current thread's */
  bool echo;                   /* also to stderr below A2ACHECK_LOG_STDERR's
                                  level (unless it is none): a warning the user
                                  must see while the job runs (group.stall) */
  bool patient;                /* raised by the tool's own background thread,
                                  which never holds the dynamic loader's lock:
                                  it may wait for the log writer far longer
                                  than an application thread (a cross-rank
                                  verdict must not be lost because another
                                  thread is symbolizing a large library for
                                  the first time) */
} a2a_finding;

void a2a_report(const a2a_finding *f);
/* A repeat of a finding already seen at (check, site), site not NULL:
 * counts this occurrence exactly as a2a_report would count it (the failure
 * policy, the entry's count, a suppression's silence) and returns true -
 * also when the check is off, as a2a_report would drop it. Returns false
 * when there is no such finding yet: the caller formats it and calls
 * a2a_report. For checks that can fire at every step, so that a repeat does
 * not format a message and JSON only to have them deduplicated away. */
bool a2a_report_repeat(a2a_check_id check, a2a_severity severity, const void *site);
/* Several repeats, all or nothing: when every r[i] is a repeat
 * a2a_report_repeat would count (a finding already seen at (check, site),
 * or its check off), counts each occurrence exactly as n calls of it would
 * and returns true; otherwise counts nothing and returns false, and the
 * caller takes the path that reports or repeats each finding itself. For an
 * analyzer that memoizes the findings a repeated input produced (layout's
 * memos): one lock for all, never half a replay. n <= A2A_REPEATS_MAX. */
#define A2A_REPEATS_MAX 8
typedef struct a2a_repeat {
  a2a_check_id check;
  a2a_severity severity;
  const void *site;
} a2a_repeat;
bool a2a_report_repeats(const a2a_repeat *r, size_t n);
/* Whether A2ACHECK_CHECKS enables a check: a2a_check_on(A2A_CK_...) in
 * a2a_checks.h (two relaxed loads; analyzers may call it on the hot path to
 * skip work). */

/* ------------------------------------------------------------------ */
/* A tiny JSON writer into a caller-provided buffer (no allocation). Output is
 * always NUL-terminated and valid JSON as long as calls are balanced; on
 * overflow the text is truncated and `overflow` set. */

typedef struct a2a_json {
  char *buf;
  size_t cap, len;
  int depth;
  bool need_comma[16];
  bool overflow;
} a2a_json;

void a2a_json_init(a2a_json *j, char *buf, size_t cap);
void a2a_json_obj_begin(a2a_json *j, const char *key); /* key NULL at top */
void a2a_json_obj_end(a2a_json *j);
void a2a_json_arr_begin(a2a_json *j, const char *key);
void a2a_json_arr_end(a2a_json *j);
void a2a_json_str(a2a_json *j, const char *key, const char *val);
void a2a_json_int(a2a_json *j, const char *key, long long val);
void a2a_json_uint(a2a_json *j, const char *key, unsigned long long val);
void a2a_json_dbl(a2a_json *j, const char *key, double val);
void a2a_json_null(a2a_json *j, const char *key);
void a2a_json_bool(a2a_json *j, const char *key, bool val);
void a2a_json_ptr(a2a_json *j, const char *key, const void *p); /* "0x..." */
/* Append JSON-escaped s (without quotes) to buf[len..cap). Returns new len. */
size_t a2a_json_escape(char *buf, size_t cap, size_t len, const char *s);

#ifdef __cplusplus
}
#endif
#endif /* A2A_CORE_H */
