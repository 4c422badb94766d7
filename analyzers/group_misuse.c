/* group_misuse.c - the per-communicator checks of the `group_local`
 * analyzer (group_local.c tracks the groups and calls in here).
 *
 *  - group.device-mismatch: the calling thread's current device is not the
 *    communicator's device. Outside a group: reported at the operation.
 *    Inside a group: decided at the outermost ncclGroupEnd, and only when all
 *    the group's communicators are on one device (a group spanning several
 *    devices is NCCL's documented single-thread multi-GPU pattern, where the
 *    current device legitimately differs).
 *  - group.duplicate-device: two ranks of one id-created communicator
 *    initialized in this process on the same device (one thread per rank),
 *    or ncclCommInitAll with a repeated device. Not reported when
 *    NCCL_MULTI_RANK_GPU_ENABLE=1 (NCCL >= 2.30 allows it then).
 *  - group.use-after-destroy: an operation on a communicator that was
 *    destroyed, aborted, finalized or revoked, or on a handle no init call of
 *    this process returned (only when the registry knows at least one
 *    communicator and recorded every one: a process whose NCCL calls bypass
 *    the shim, or that created its communicators through a dlsym'd NCCL,
 *    has an empty registry and is not judged, nor is one whose registry
 *    overflowed; a NULL handle is left to NCCL, which returns
 *    ncclInvalidArgument).
 *  - group.concurrent-use: two threads inside NCCL calls on one communicator
 *    at the same time. A thread holds a communicator from the PRE of an
 *    operation to its POST, or, inside a group, to the POST of the outermost
 *    ncclGroupEnd. ncclCommGetAsyncError, ncclCommAbort and queries are
 *    meant to be called from other threads (watchdogs) and do not count.
 *  - group.async-error: an operation posted on a communicator for which
 *    ncclCommGetAsyncError last returned an error (neither ncclSuccess nor
 *    ncclInProgress). NCCL's asynchronous errors are sticky: the communicator
 *    must be aborted, so the new operation can only hang or fail.
 *
 * Per-communicator state lives in arrays indexed by the registry's serial
 * number (atomics, no lock); communicators beyond GM_MAX_COMMS are not
 * checked by concurrent-use and async-error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2a_core.h"
#include "group_local.h"

#define GM_MAX_INITS 1024

static _Atomic uint32_t g_owner[GM_MAX_COMMS];       /* ev->thread holding it, 0 none */
_Atomic int gm_async[GM_MAX_COMMS];                  /* last async error, 0 none */
static _Atomic(const void *) g_async_site[GM_MAX_COMMS];

/* Communicator initializations seen in this process, for duplicate-device.
 * Entries are appended (slot claimed with an atomic counter, published with
 * `ready`) and never removed. */
typedef struct gm_init_rec {
  _Atomic bool ready;
  uint64_t id_hash;
  int rank, nranks, device;
  uint32_t thread;
  const void *site;
} gm_init_rec;
static gm_init_rec g_inits[GM_MAX_INITS];
static _Atomic unsigned g_ninits;
static bool g_multi_rank_gpu_ok;

static const char *nccl_result_name(int r) {
  static const char *const names[] = {"ncclSuccess",       "ncclUnhandledCudaError",
                                      "ncclSystemError",   "ncclInternalError",
                                      "ncclInvalidArgument", "ncclInvalidUsage",
                                      "ncclRemoteError",   "ncclInProgress"};
  return r >= 0 && r < (int)(sizeof names / sizeof names[0]) ? names[r] : "unknown ncclResult_t";
}

static const char *state_name(int s) {
  switch (s) {
    case A2A_COMM_ACTIVE: return "active";
    case A2A_COMM_FINALIZED: return "finalized";
    case A2A_COMM_DESTROYED: return "destroyed";
    case A2A_COMM_ABORTED: return "aborted";
    case A2A_COMM_REVOKED: return "revoked";
    default: return "unknown";
  }
}

int gm_init(void) {
  memset(g_owner, 0, sizeof g_owner);
  memset(gm_async, 0, sizeof gm_async);
  memset(g_async_site, 0, sizeof g_async_site);
  memset(g_inits, 0, sizeof g_inits);
  atomic_store(&g_ninits, 0);
  const char *e = a2a_hostsvc->getenv("NCCL_MULTI_RANK_GPU_ENABLE");
  g_multi_rank_gpu_ok = e && strcmp(e, "1") == 0;
  return 0;
}

/* Each report_* below first asks a2a_report_repeat: a misuse repeated every
 * step at one call site is counted without being formatted again. */
static void report(a2a_check_id check, const a2a_event *ev, const void *site, const a2a_comm *c,
                   const char *msg, const char *js) {
  a2a_finding f = {.check = check, .severity = A2A_SEV_ERROR, .site = site, .comm = c,
                   .message = msg, .details_json = js, .capture_stack = true};
  a2a_report(&f);
}


static void json_comm(a2a_json *j, const a2a_comm *c, const void *handle) {
  a2a_json_ptr(j, "comm_handle", handle);
  if (!c) return;
  a2a_json_str(j, "comm", c->name);
  a2a_json_int(j, "nranks", c->nranks);
  a2a_json_int(j, "rank", c->rank);
  a2a_json_int(j, "comm_device", c->device);
}

static bool is_op(const a2a_event *ev) { return ev->kind == A2A_EV_COLL || ev->kind == A2A_EV_P2P; }

/* ------------------------------------------------------------------ */
/* group.device-mismatch */

/* Both forms' details: the call and its communicator, then the form's. */
static void mismatch_json(a2a_json *j, char *js, size_t cap, const char *api, const a2a_comm *c) {
  a2a_json_init(j, js, cap);
  a2a_json_obj_begin(j, NULL);
  a2a_json_str(j, "api", api);
  json_comm(j, c, c->handle);
}

static void report_mismatch(const a2a_event *ev, const void *site, const char *api,
                            const a2a_comm *c, int cur) {
  if (a2a_report_repeat(A2A_CK_GROUP_DEVICE_MISMATCH, A2A_SEV_ERROR, site)) return;
  char msg[512], js[384];
  a2a_json j;
  mismatch_json(&j, js, sizeof js, api, c);
  a2a_json_int(&j, "current_device", cur);
  a2a_json_obj_end(&j);
  snprintf(msg, sizeof msg,
           "%s on %s (rank %d, bound to device %d) is called while the thread's current device is "
           "%d: streams and buffers made on the current device belong to another GPU; call "
           "cudaSetDevice(%d) before using this communicator (a device chosen as rank %% "
           "device_count is the usual cause).",
           api, c->name, c->rank, c->device, cur, c->device);
  report(A2A_CK_GROUP_DEVICE_MISMATCH, ev, site, c, msg, js);
}

/* The stream's form (gm_stream_device_failed). */
static void report_stream_mismatch(const a2a_event *ev, const void *site, const char *api,
                                   const a2a_comm *c, const void *stream, int sdev) {
  if (a2a_report_repeat(A2A_CK_GROUP_DEVICE_MISMATCH, A2A_SEV_ERROR, site)) return;
  char msg[640], js[384];
  a2a_json j;
  mismatch_json(&j, js, sizeof js, api, c);
  a2a_json_ptr(&j, "stream", stream);
  a2a_json_int(&j, "stream_device", sdev);
  a2a_json_str(&j, "result", nccl_result_name(ev->result));
  a2a_json_obj_end(&j);
  snprintf(msg, sizeof msg,
           "%s on %s (rank %d, bound to device %d) was given a stream of device %d, and NCCL "
           "failed with %s%s: NCCL runs the operation on the communicator's device, whose events "
           "and kernels cannot use another device's stream. Create the stream after "
           "cudaSetDevice(%d) (a stream made before the process chose its device - at import "
           "time, in a constructor - belongs to device %d).",
           api, c->name, c->rank, c->device, sdev, nccl_result_name(ev->result),
           ev->kind == A2A_EV_GROUP_END ? " at ncclGroupEnd" : "", c->device, sdev);
  report(A2A_CK_GROUP_DEVICE_MISMATCH, ev, site, c, msg, js);
}

/* group.device-mismatch, the stream's form: an operation that NCCL failed
 * (ev: the operation's POST, or the POST of the outermost ncclGroupEnd
 * that failed for the group holding it; site and api the operation's) on
 * an explicit stream of another device than c's. NCCL cannot run an
 * operation on such a stream (it records the communicator's events into
 * it and launches there: cudaErrorInvalidResourceHandle, returned as
 * ncclUnhandledCudaError), so judging only after a failure loses nothing,
 * a correct program never pays for the question (a runtime call), and the
 * failure is where the program needs the reason (NCCL's CUDACHECK clears
 * the runtime's last error it met, so the host service may ask). The legacy and
 * per-thread default handles (stream_key 1 and 2, gl_stream_key) are the
 * current device's streams: the current-device form judges those. */
void gm_stream_device_failed(const a2a_event *ev, const void *site, const char *api,
                             const a2a_comm *c, uintptr_t stream_key) {
  if (!c || c->device < 0 || stream_key <= 2 || !a2a_check_on(A2A_CK_GROUP_DEVICE_MISMATCH))
    return;
  int sdev = -1;
  if (a2a_hostsvc->stream_device((void *)stream_key, &sdev) != 0 || sdev < 0 ||
      sdev == c->device)
    return;
  report_stream_mismatch(ev, site, api, c, (const void *)stream_key, sdev);
}

/* Inside a group (both devices known): c's device joins the group's
 * devices, and the group's first mismatch is recorded (judged at its end).
 * Shared by check_device and gm_op_pre's fast path. The devices are kept
 * as the end needs them (gl_thread.ncomm_devs == 1: one device): a second
 * distinct device makes the count 2 for good, since a set never loses a
 * member while the group is open - one test per operation instead of a
 * scan of a list. */
static inline void record_device(const a2a_event *ev, gl_thread *t, const a2a_comm *c) {
  if (t->ncomm_devs == 0) {
    t->comm_dev0 = c->device;
    t->ncomm_devs = 1;
  } else if (c->device != t->comm_dev0) {
    t->ncomm_devs = 2;
  }
  if (ev->device != c->device && !t->mismatch) {
    t->mismatch = true;
    t->mismatch_site = ev->callsite;
    t->mismatch_api = ev->api;
    t->mismatch_comm = c;
    t->mismatch_cur_dev = ev->device;
  }
}

static void check_device(const a2a_event *ev, gl_thread *t, const a2a_comm *c) {
  if (!c || c->device < 0 || ev->device < 0) return;
  int depth = t ? atomic_load_explicit(&t->depth, memory_order_relaxed) : 0;
  if (depth == 0) {
    if (ev->device != c->device) report_mismatch(ev, ev->callsite, ev->api, c, ev->device);
    return;
  }
  record_device(ev, t, c);
}

/* ------------------------------------------------------------------ */
/* group.duplicate-device */

static void report_duplicate(const a2a_event *ev, int dev, int rank, int other_rank,
                             const char *how, const a2a_comm *c) {
  if (a2a_report_repeat(A2A_CK_GROUP_DUPLICATE_DEVICE, A2A_SEV_ERROR, ev->callsite)) return;
  char msg[512], js[256];
  a2a_json j;
  a2a_json_init(&j, js, sizeof js);
  a2a_json_obj_begin(&j, NULL);
  a2a_json_str(&j, "api", ev->api);
  a2a_json_int(&j, "device", dev);
  a2a_json_int(&j, "rank", rank);
  a2a_json_int(&j, "other_rank", other_rank);
  a2a_json_int(&j, "nranks", ev->u.init.nranks);
  a2a_json_str(&j, "how", how);
  a2a_json_obj_end(&j);
  snprintf(msg, sizeof msg,
           "%s binds ranks %d and %d of one communicator to the same device %d (%s): NCCL "
           "rejects two ranks on one GPU (ncclInvalidUsage) or serializes them; give each rank its "
           "own device (cudaSetDevice(local_rank) before the init).",
           ev->api, other_rank, rank, dev, how);
  report(A2A_CK_GROUP_DUPLICATE_DEVICE, ev, ev->callsite, c, msg, js);
}

static void check_duplicate_init(const a2a_event *ev, gl_thread *t) {
  if (g_multi_rank_gpu_ok) return;
  int dev = ev->u.init.device >= 0 ? ev->u.init.device : ev->device;
  if (ev->u.init.how == A2A_INIT_ALL) {
    /* PRE carries the device list (u.init.devlist) when the shim provides
     * it: judged there, before NCCL rejects the list (ncclInvalidUsage, no
     * communicator created). Otherwise the shim's POST per created
     * communicator, in device-list order (rank = index, device =
     * devlist[i]), from the calling thread, is judged: index 0 starts a new
     * call. */
    if (ev->phase == A2A_PRE) {
      const int *dl = ev->u.init.devlist;
      int n = ev->u.init.nranks;
      if (t) t->initall_pre_judged = dl != NULL;
      for (int i = 1; dl && i < n; i++)
        for (int k = 0; k < i; k++)
          if (dl[k] == dl[i]) {
            report_duplicate(ev, dl[i], i, k, "device list of ncclCommInitAll", NULL);
            return;
          }
      return;
    }
    if (!t || t->initall_pre_judged || ev->u.init.rank < 0 || ev->u.init.device < 0) return;
    if (ev->u.init.rank == 0) t->ninitall = 0;
    for (unsigned i = 0; i < t->ninitall; i++)
      if (t->initall_devs[i] == dev) {
        report_duplicate(ev, dev, ev->u.init.rank, (int)i, "device list of ncclCommInitAll", NULL);
        break;
      }
    if (t->ninitall < GL_MAX_DEVS) t->initall_devs[t->ninitall++] = dev;
    return;
  }
  if (ev->u.init.how != A2A_INIT_RANK && ev->u.init.how != A2A_INIT_RANK_CONFIG &&
      ev->u.init.how != A2A_INIT_SCALABLE)
    return;
  /* At PRE: the ranks of one communicator block in the init until all have
   * joined, and NCCL may then fail them all, so POST may never be useful. */
  if (ev->phase != A2A_PRE || dev < 0 || !ev->u.init.ids) return;
  /* An init NCCL rejects for its rank arguments creates no rank: recording
   * it would make the next valid init of the same id look like a second
   * rank on the device. */
  if (ev->u.init.nranks <= 0 || ev->u.init.rank < 0 || ev->u.init.rank >= ev->u.init.nranks)
    return;
  size_t nids = ev->u.init.nids > 0 ? (size_t)ev->u.init.nids : 1;
  uint64_t h = a2a_hash_bytes(ev->u.init.ids, 128 * nids, 0);
  unsigned me = atomic_fetch_add(&g_ninits, 1);
  if (me >= GM_MAX_INITS) return;
  gm_init_rec *r = &g_inits[me];
  r->id_hash = h;
  r->rank = ev->u.init.rank;
  r->nranks = ev->u.init.nranks;
  r->device = dev;
  r->thread = ev->thread;
  r->site = ev->callsite;
  atomic_store(&r->ready, true);
  /* Publish first, then scan: of two concurrent inits, at least one sees the
   * other (both may; the report is deduplicated by site). */
  unsigned n = atomic_load(&g_ninits);
  if (n > GM_MAX_INITS) n = GM_MAX_INITS;
  for (unsigned i = 0; i < n; i++) {
    gm_init_rec *o = &g_inits[i];
    if (i == me || !atomic_load(&o->ready)) continue;
    if (o->id_hash == h && o->device == dev && o->rank != r->rank) {
      report_duplicate(ev, dev, r->rank, o->rank, "one thread per rank in this process", NULL);
      break;
    }
  }
}

/* ------------------------------------------------------------------ */
/* group.use-after-destroy */

static int any_comm(a2a_comm *c, void *arg) {
  *(bool *)arg = true;
  return 1;
}

static void report_uad(const a2a_event *ev, const a2a_comm *c, const void *handle,
                       const char *role) {
  if (a2a_report_repeat(A2A_CK_GROUP_USE_AFTER_DESTROY, A2A_SEV_ERROR, ev->callsite)) return;
  char msg[512], js[384];
  a2a_json j;
  a2a_json_init(&j, js, sizeof js);
  a2a_json_obj_begin(&j, NULL);
  a2a_json_str(&j, "api", ev->api);
  json_comm(&j, c, handle);
  a2a_json_str(&j, "state", c ? state_name(atomic_load(&c->state)) : "never created");
  a2a_json_str(&j, "role", role);
  a2a_json_obj_end(&j);
  if (c)
    snprintf(msg, sizeof msg,
             "%s uses %s %s, which was already %s: a communicator cannot be used after "
             "ncclCommDestroy/ncclCommAbort (or for new operations after ncclCommFinalize/"
             "ncclCommRevoke); create a new communicator or stop using the old handle.",
             ev->api, role, c->name, state_name(atomic_load(&c->state)));
  else
    snprintf(msg, sizeof msg,
             "%s uses %s %p, which no communicator initialization of this process returned "
             "(uninitialized, corrupted or stale handle): pass the ncclComm_t an ncclCommInit*/"
             "ncclCommSplit call produced.",
             ev->api, role, handle);
  report(A2A_CK_GROUP_USE_AFTER_DESTROY, ev, ev->callsite, c, msg, js);
}

/* Which states make this use invalid. */
static bool bad_state(const a2a_event *ev, int st) {
  if (st == A2A_COMM_DESTROYED || st == A2A_COMM_ABORTED) return true; /* freed */
  switch (ev->kind) {
    case A2A_EV_COLL:
    case A2A_EV_P2P:
    case A2A_EV_NCCL_REGISTER:
    case A2A_EV_REDOP:
      return st != A2A_COMM_ACTIVE; /* no new work after finalize/revoke */
    default:
      return false; /* queries, async-error polling, destroy after finalize */
  }
}

static void check_use(const a2a_event *ev, a2a_comm *op_comm) {
  if (ev->phase != A2A_PRE) return;
  switch (ev->kind) {
    case A2A_EV_COLL: case A2A_EV_P2P: case A2A_EV_NCCL_REGISTER: case A2A_EV_REDOP:
    case A2A_EV_COMM_QUERY: case A2A_EV_COMM_ASYNC_ERROR: case A2A_EV_COMM_END:
      break;
    case A2A_EV_COMM_INIT: {
      if (ev->u.init.how != A2A_INIT_SPLIT && ev->u.init.how != A2A_INIT_SHRINK) return;
      a2a_comm *p = a2a_comm_lookup(ev->u.init.parent);
      if (!p) return; /* an unknown parent: NCCL checks it; be conservative */
      int st = atomic_load(&p->state);
      /* Shrinking a revoked communicator is the intended recovery path. */
      bool bad = st == A2A_COMM_DESTROYED || st == A2A_COMM_ABORTED ||
                 (ev->u.init.how == A2A_INIT_SPLIT && st != A2A_COMM_ACTIVE);
      if (bad) report_uad(ev, p, p->handle, "parent communicator");
      return;
    }
    default:
      return;
  }
  if (!ev->comm) return; /* NCCL itself returns ncclInvalidArgument */
  a2a_comm *c = is_op(ev) ? op_comm : a2a_comm_lookup(ev->comm);
  if (!c) {
    bool known = false;
    if (a2a_comm_dropped() == 0) a2a_comm_foreach(any_comm, &known);
    if (known) report_uad(ev, NULL, ev->comm, "communicator");
    return;
  }
  if (bad_state(ev, atomic_load(&c->state))) report_uad(ev, c, ev->comm, "communicator");
}

/* ------------------------------------------------------------------ */
/* group.concurrent-use */

static bool held_by(gl_thread *t, uint32_t serial) {
  for (unsigned i = 0; i < t->nheld; i++)
    if (t->held[i] == serial) return true;
  return false;
}

__attribute__((noinline)) static void report_concurrent(const a2a_event *ev, const a2a_comm *c,
                                                       uint32_t other) {
  if (a2a_report_repeat(A2A_CK_GROUP_CONCURRENT_USE, A2A_SEV_ERROR, ev->callsite)) return;
  char msg[512], js[384];
  a2a_json j;
  a2a_json_init(&j, js, sizeof js);
  a2a_json_obj_begin(&j, NULL);
  a2a_json_str(&j, "api", ev->api);
  json_comm(&j, c, c->handle);
  a2a_json_int(&j, "thread", ev->thread);
  a2a_json_int(&j, "other_thread", other);
  a2a_json_obj_end(&j);
  snprintf(msg, sizeof msg,
           "%s on %s from thread %u while thread %u is inside an NCCL call or an open group on the "
           "same communicator: NCCL communicators are not thread-safe; serialize their use or give "
           "each thread its own communicator.",
           ev->api, c->name, ev->thread, other);
  report(A2A_CK_GROUP_CONCURRENT_USE, ev, ev->callsite, c, msg, js);
}

/* serial was just appended to t's held; listed: its communicator's device
 * is recorded in the group's devices (or the communicator has no device).
 * Then the memo (gl_thread.hot) may say so, and the operation in progress
 * is held (gl_thread.held_handle, which spares its POST the memo's test):
 * it is on this communicator (gm_op_pre's callers set op_handle and
 * op_comm to it first) and inside a group (hold's callers test
 * depth > 0). */
static inline void hold(gl_thread *t, uint32_t serial, bool listed) {
  t->held[t->nheld++] = serial;
  if (listed) {
    t->hot[serial & (GL_HOT - 1)] = serial;
    t->held_handle = t->op_handle;
  }
}

/* After check_device ran (dm: its check is on) at an operation inside a
 * group: whether c's device is recorded in t's group devices
 * (record_device), or need not be (no device). check_device records the
 * device whenever both devices are known; a mismatch does not stop it. */
static bool device_listed(const a2a_event *ev, const a2a_comm *c, bool dm) {
  return c->device < 0 || (dm && ev->device >= 0);
}

static void concurrent_pre(const a2a_event *ev, gl_thread *t, const a2a_comm *c, bool listed) {
  if (!t || !c || c->serial == 0 || c->serial >= GM_MAX_COMMS) return;
  uint32_t me = ev->thread, cur = 0;
  if (atomic_compare_exchange_strong(&g_owner[c->serial], &cur, me)) {
    /* Acquired. Inside a group it is held until the group's end. */
    if (atomic_load_explicit(&t->depth, memory_order_relaxed) > 0 && t->nheld < GL_MAX_HELD)
      hold(t, c->serial, listed);
    return;
  }
  if (cur != me) report_concurrent(ev, c, cur);
}

static void release(uint32_t serial, uint32_t me) {
  uint32_t cur = me;
  atomic_compare_exchange_strong(&g_owner[serial], &cur, 0);
}

static void concurrent_post(const a2a_event *ev, gl_thread *t, const a2a_comm *c) {
  if (!t || !c || c->serial == 0 || c->serial >= GM_MAX_COMMS) return;
  if (atomic_load_explicit(&t->depth, memory_order_relaxed) > 0 && held_by(t, c->serial)) return;
  release(c->serial, ev->thread);
}

/* ------------------------------------------------------------------ */
/* group.async-error */

static void async_post(const a2a_event *ev, const a2a_comm *c) {
  if (!c || c->serial >= GM_MAX_COMMS || ev->result != 0) return;
  int e = ev->u.async_err.async_error;
  if (e == 0) {
    /* The rule, at every poll of a loop: nothing recorded, nothing to
     * write (not storing the 0 it read is storing it then; no reader
     * depends on what this thread wrote before), so that polling threads
     * do not take the table's line from each other at every poll. */
    if (atomic_load_explicit(&gm_async[c->serial], memory_order_relaxed) != 0)
      atomic_store(&gm_async[c->serial], 0);
  } else if (e != A2A_NCCL_IN_PROGRESS) {
    atomic_store(&g_async_site[c->serial], ev->callsite);
    atomic_store(&gm_async[c->serial], e);
  }
}

static void report_async(const a2a_event *ev, const a2a_comm *c, int e);

/* One load when the communicator has no asynchronous error (the rule). */
static inline void async_pre(const a2a_event *ev, const a2a_comm *c) {
  if (!c || c->serial >= GM_MAX_COMMS) return;
  int e = atomic_load_explicit(&gm_async[c->serial], memory_order_acquire);
  if (e) report_async(ev, c, e);
}

__attribute__((noinline)) static void report_async(const a2a_event *ev, const a2a_comm *c,
                                                   int e) {
  if (a2a_report_repeat(A2A_CK_GROUP_ASYNC_ERROR, A2A_SEV_ERROR, ev->callsite)) return;
  const void *qsite = atomic_load(&g_async_site[c->serial]);
  char msg[512], js[384];
  a2a_json j;
  a2a_json_init(&j, js, sizeof js);
  a2a_json_obj_begin(&j, NULL);
  a2a_json_str(&j, "api", ev->api);
  json_comm(&j, c, c->handle);
  a2a_json_int(&j, "async_error", e);
  a2a_json_str(&j, "async_error_name", nccl_result_name(e));
  if (qsite) a2a_json_ptr(&j, "query_site", qsite);
  a2a_json_obj_end(&j);
  snprintf(msg, sizeof msg,
           "%s is posted on %s after ncclCommGetAsyncError reported %s for it: asynchronous NCCL "
           "errors are permanent, so this operation can only fail or hang; check the async error, "
           "then ncclCommAbort the communicator and create a new one.",
           ev->api, c->name, nccl_result_name(e));
  report(A2A_CK_GROUP_ASYNC_ERROR, ev, ev->callsite, c, msg, js);
}

/* ------------------------------------------------------------------ */
/* Entry points from group_local.c. */

void gm_group_begin(gl_thread *t) {
  t->ncomm_devs = 0;
  t->mismatch = false;
  gl_held_clear(t);
}

/* A group that recorded a device mismatch, all of its communicators on
 * one device, ends (gm_group_end_pre). The mismatch stays recorded: only
 * an open group reads it, and the next one starts without it
 * (gm_group_begin). */
void gm_group_end_mismatch(const a2a_event *ev, gl_thread *t) {
  if (a2a_check_on(A2A_CK_GROUP_DEVICE_MISMATCH))
    report_mismatch(ev, t->mismatch_site, t->mismatch_api, t->mismatch_comm,
                    t->mismatch_cur_dev);
}

void gm_after_fork_child(uint32_t self) {
  /* Only the forking thread exists in the child: what the other threads
   * held (operations in flight, open groups) is gone with them. */
  for (size_t i = 0; i < GM_MAX_COMMS; i++) {
    uint32_t cur = atomic_load_explicit(&g_owner[i], memory_order_relaxed);
    if (cur && cur != self) atomic_store_explicit(&g_owner[i], 0, memory_order_relaxed);
  }
}

/* Release every communicator t holds (its group ended, or its thread). */
static void release_held(gl_thread *t) {
  for (unsigned i = 0; i < t->nheld; i++) release(t->held[i], t->id);
  gl_held_clear(t);
}

void gm_thread_gone(gl_thread *t) { release_held(t); }

void gm_group_end_post(const a2a_event *ev, gl_thread *t) { release_held(t); }

/* gm_op_pre, the reference: every check in its order. */
__attribute__((noinline)) static void op_pre_all(const a2a_event *ev, gl_thread *t, a2a_comm *c) {
  /* An operation on a known, active communicator is a valid use
   * (bad_state): check_use only for the others. */
  if (a2a_check_on(A2A_CK_GROUP_USE_AFTER_DESTROY) &&
      (!c || atomic_load_explicit(&c->state, memory_order_relaxed) != A2A_COMM_ACTIVE))
    check_use(ev, c);
  bool dm = a2a_check_on(A2A_CK_GROUP_DEVICE_MISMATCH);
  if (dm) check_device(ev, t, c);
  if (a2a_check_on(A2A_CK_GROUP_ASYNC_ERROR)) async_pre(ev, c);
  if (a2a_check_on(A2A_CK_GROUP_CONCURRENT_USE))
    concurrent_pre(ev, t, c, t && c && device_listed(ev, c, dm));
}

#define GM_BIT(id) (1ull << ((unsigned)(id) & 63))
_Static_assert(A2A_CK_GROUP_USE_AFTER_DESTROY >> 6 == A2A_CK_GROUP_DEVICE_MISMATCH >> 6 &&
                   A2A_CK_GROUP_ASYNC_ERROR >> 6 == A2A_CK_GROUP_DEVICE_MISMATCH >> 6 &&
                   A2A_CK_GROUP_CONCURRENT_USE >> 6 == A2A_CK_GROUP_DEVICE_MISMATCH >> 6,
               "gm_op_pre reads one word of the enabled checks");

/* An operation's PRE: op_pre_all without a call or a frame in the common
 * case - a tracked thread, an active communicator with a serial in range,
 * no async error on it, and outside a group the current device its device
 * (or unknown) - where use-after-destroy, async-error and an outside-group
 * device-mismatch have nothing to say (each returns on the same tests),
 * the group's device list and its first mismatch (nccl-tests -g N drives
 * N devices' communicators from one thread: a mismatch in every group) and
 * concurrent-use's ownership are updated as op_pre_all's check_device and
 * concurrent_pre do, and only a concurrent use reports (last, as there).
 * Anything else: op_pre_all, before any state is touched. grouped (a
 * constant): gm_op_pre_grouped's caller knows t and c not NULL and t's
 * group open. */
__attribute__((always_inline)) static inline void op_pre_body(const a2a_event *ev, gl_thread *t,
                                                              a2a_comm *c, bool grouped) {
  uint64_t w = atomic_load_explicit(&a2a_checks_enabled_w[A2A_CK_GROUP_DEVICE_MISMATCH >> 6],
                                    memory_order_relaxed);
  if ((!grouped && (!t || !c)) || c->serial - 1u >= GM_MAX_COMMS - 1u) goto all;
  uint32_t serial = c->serial;
  if ((w & GM_BIT(A2A_CK_GROUP_USE_AFTER_DESTROY)) &&
      atomic_load_explicit(&c->state, memory_order_relaxed) != A2A_COMM_ACTIVE)
    goto all;
  if ((w & GM_BIT(A2A_CK_GROUP_ASYNC_ERROR)) &&
      atomic_load_explicit(&gm_async[serial], memory_order_acquire))
    goto all;
  /* grouped: the caller read t's depth > 0 since this event began, and
   * only t's thread writes it while the thread lives (a fork's child and
   * a reused record reset the depths of threads that are gone): only its
   * sign is tested below. */
  int depth = grouped ? 1 : atomic_load_explicit(&t->depth, memory_order_relaxed);
  bool dm = w & GM_BIT(A2A_CK_GROUP_DEVICE_MISMATCH);
  /* Whether c's device is recorded (device_listed): known true once
   * check_device recorded it (dm and ev->device >= 0, device_listed's own
   * last term), computed otherwise. */
  bool dev_checked = dm && c->device >= 0 && ev->device >= 0;
  if (dev_checked) {
    if (depth > 0) { /* check_device inside a group */
      record_device(ev, t, c);
    } else if (ev->device != c->device) {
      goto all; /* a mismatch outside a group: reported */
    }
  }
  if (w & GM_BIT(A2A_CK_GROUP_CONCURRENT_USE)) { /* concurrent_pre */
    uint32_t me = ev->thread, cur = 0;
    if (atomic_compare_exchange_strong(&g_owner[serial], &cur, me)) {
      if (depth > 0 && t->nheld < GL_MAX_HELD)
        hold(t, serial, dev_checked || device_listed(ev, c, dm));
    } else if (cur != me) {
      report_concurrent(ev, c, cur);
    }
  }
  return;
all:
  op_pre_all(ev, t, c);
}

void gm_op_pre(const a2a_event *ev, gl_thread *t, a2a_comm *c) { op_pre_body(ev, t, c, false); }

void gm_op_pre_grouped(const a2a_event *ev, gl_thread *t, a2a_comm *c) {
  op_pre_body(ev, t, c, true);
}

void gm_op_post(const a2a_event *ev, gl_thread *t, a2a_comm *c) { concurrent_post(ev, t, c); }

void gm_on_op(const a2a_event *ev, gl_thread *t, a2a_comm *c) {
  if (ev->phase == A2A_PRE) gm_op_pre(ev, t, c);
  else gm_op_post(ev, t, c);
}

void gm_query_pre(const a2a_event *ev) {
  if (!a2a_check_on(A2A_CK_GROUP_USE_AFTER_DESTROY)) return;
  /* check_use's verdict for a known communicator in a valid state (a
   * NULL handle has no record: check_use returns for it), without its
   * dispatch on the kind; an active one, the rule, is a valid use for
   * every kind (bad_state) and needs no test of the kind either. */
  a2a_comm *c = a2a_comm_lookup(ev->comm);
  if (c) {
    int st = atomic_load_explicit(&c->state, memory_order_relaxed);
    if (st == A2A_COMM_ACTIVE || !bad_state(ev, st)) return;
  }
  check_use(ev, NULL);
}

void gm_async_error_post(const a2a_event *ev) { async_post(ev, a2a_comm_lookup(ev->comm)); }

void gm_on_event(const a2a_event *ev, gl_thread *t, a2a_comm *op_comm) {
  if (is_op(ev)) {
    gm_on_op(ev, t, op_comm);
    return;
  }
  if (a2a_check_on(A2A_CK_GROUP_USE_AFTER_DESTROY)) check_use(ev, op_comm);
  if (ev->kind == A2A_EV_COMM_INIT) {
    if (a2a_check_on(A2A_CK_GROUP_DUPLICATE_DEVICE)) check_duplicate_init(ev, t);
    return;
  }
  if (ev->kind == A2A_EV_COMM_ASYNC_ERROR) {
    if (ev->phase == A2A_POST) gm_async_error_post(ev);
    return;
  }
}
