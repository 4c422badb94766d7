/* collector.c - see collector.h. Single-threaded use is the norm; a mutex
 * keeps findings consistent when a test drives events from several threads,
 * and another (ev_mu) the fake CUDA events: analyzers create and record them
 * on every thread, and an unlocked bound check and increment let two threads
 * write events[MAX_EVENTS] (found by ThreadSanitizer, test_stream_hb's
 * four-thread test). */
#include "collector.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core_internal.h"

#define MAX_FINDINGS 512
#define MAX_PTRS 256
#define MAX_KERNELS 64
#define MAX_EVENTS 4096
#define MAX_DISABLED 32

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static collected findings[MAX_FINDINGS];
static size_t nfindings;
static a2a_options opts;
static char disabled[MAX_DISABLED][64];
static size_t ndisabled;

static uint64_t fake_now;
static struct { uintptr_t base; size_t size; int type, device; } ptrs[MAX_PTRS];
static size_t nptrs;
#define MAX_STREAMS 16
static struct { const void *stream; int device; } streams[MAX_STREAMS];
static size_t nstreams, nstream_asks;
#define MAX_COMMS 8
static struct {
  const void *comm;
  int nranks, rank, device;
} comms[MAX_COMMS];
static size_t ncomms, ncomm_asks;
static struct { const void *func; const char *name; int n; size_t off[32], size[32]; } kernels[MAX_KERNELS];
static size_t nkernels;
static struct { bool done; uint64_t at; void *stream; } events[MAX_EVENTS];
static size_t nevents;
static pthread_mutex_t ev_mu = PTHREAD_MUTEX_INITIALIZER;
static int rank = -1;
static char fail_reason[512];
static bool failed;

/* ---------------- report sink ---------------- */

void a2a_report(const a2a_finding *f) {
  if (!a2a_check_on(f->check)) return;
  pthread_mutex_lock(&mu);
  if (nfindings < MAX_FINDINGS) {
    collected *c = &findings[nfindings++];
    memset(c, 0, sizeof *c);
    snprintf(c->check, sizeof c->check, "%s", a2a_check_name(f->check));
    c->severity = f->severity;
    c->site = f->site;
    if (f->comm) snprintf(c->comm, sizeof c->comm, "%s", f->comm->name);
    snprintf(c->message, sizeof c->message, "%s", f->message ? f->message : "");
    snprintf(c->details, sizeof c->details, "%s", f->details_json ? f->details_json : "");
    c->stack_n = f->stack ? f->stack->n : (f->capture_stack ? 1 : 0);
  }
  pthread_mutex_unlock(&mu);
}

/* By default every occurrence is collected in full (never a repeat). With
 * collector_dedup(true), as the runtime's sink: a finding already collected
 * at (check, site) is a repeat, counted on that entry. */
static bool dedup;
static size_t repeats[MAX_FINDINGS];

void collector_dedup(bool on) { dedup = on; }

bool a2a_report_repeat(a2a_check_id check, a2a_severity severity, const void *site) {
  (void)severity;
  if (!a2a_check_on(check)) return true;
  if (!dedup || !site) return false;
  bool found = false;
  pthread_mutex_lock(&mu);
  for (size_t i = 0; i < nfindings && !found; i++)
    if (findings[i].site == site && strcmp(findings[i].check, a2a_check_name(check)) == 0) {
      repeats[i]++;
      found = true;
    }
  pthread_mutex_unlock(&mu);
  return found;
}

bool a2a_report_repeats(const a2a_repeat *r, size_t n) {
  if (n > A2A_REPEATS_MAX) return false;
  size_t at[A2A_REPEATS_MAX];
  pthread_mutex_lock(&mu);
  for (size_t k = 0; k < n; k++) {
    at[k] = SIZE_MAX;
    if (!a2a_check_on(r[k].check)) continue;
    if (!dedup || !r[k].site) { pthread_mutex_unlock(&mu); return false; }
    for (size_t i = 0; i < nfindings && at[k] == SIZE_MAX; i++)
      if (findings[i].site == r[k].site && strcmp(findings[i].check, a2a_check_name(r[k].check)) == 0)
        at[k] = i;
    if (at[k] == SIZE_MAX) { pthread_mutex_unlock(&mu); return false; }
  }
  for (size_t k = 0; k < n; k++)
    if (at[k] != SIZE_MAX) repeats[at[k]]++;
  pthread_mutex_unlock(&mu);
  return true;
}

size_t collector_occurrences(const char *check) {
  size_t n = 0;
  for (size_t i = 0; i < nfindings; i++)
    if (strcmp(findings[i].check, check) == 0) n += 1 + repeats[i];
  return n;
}

/* The enabled set the disabled names leave (exact names or categories). */
static void apply_disabled(void) {
  a2a_check_set set = a2a_check_set_all();
  for (size_t i = 0; i < ndisabled; i++) {
    size_t n = strlen(disabled[i]);
    for (int k = 0; k < A2A_CK__COUNT; k++) {
      const char *check = a2a_check_name((a2a_check_id)k);
      if (strcmp(check, disabled[i]) == 0 || (strncmp(check, disabled[i], n) == 0 && check[n] == '.'))
        a2a_check_set_put(&set, (a2a_check_id)k, false);
    }
  }
  a2a_checks_set_enabled(&set);
}

void collector_disable_check(const char *name) {
  if (ndisabled < MAX_DISABLED) snprintf(disabled[ndisabled++], 64, "%s", name);
  apply_disabled();
}

size_t collector_total(void) { return nfindings; }
const collected *collector_get(size_t i) { return i < nfindings ? &findings[i] : NULL; }

size_t collector_count(const char *check) {
  size_t n = 0;
  for (size_t i = 0; i < nfindings; i++) n += strcmp(findings[i].check, check) == 0;
  return n;
}

size_t collector_count_prefix(const char *prefix) {
  size_t n = 0, l = strlen(prefix);
  for (size_t i = 0; i < nfindings; i++) n += strncmp(findings[i].check, prefix, l) == 0;
  return n;
}

size_t collector_count_severity(a2a_severity sev) {
  size_t n = 0;
  for (size_t i = 0; i < nfindings; i++) n += findings[i].severity == sev;
  return n;
}

void collector_text(char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < collector_total() && n < cap; i++) {
    const collected *c = collector_get(i);
    int w = snprintf(buf + n, cap - n, "%s|%s|%s\n", c->check, c->message, c->details);
    if (w < 0) break;
    n += (size_t)w;
  }
}

const collected *collector_find(const char *check) {
  for (size_t i = 0; i < nfindings; i++)
    if (strcmp(findings[i].check, check) == 0) return &findings[i];
  return NULL;
}

void collector_dump(void) {
  static const char *sev[] = {"info", "warning", "error"};
  for (size_t i = 0; i < nfindings; i++)
    fprintf(stderr, "[%zu] %s %s: %s %s\n", i, sev[findings[i].severity],
            findings[i].check, findings[i].message, findings[i].details);
}

/* ---------------- fake host ---------------- */

static uint64_t h_now(void) { return fake_now; }

static int h_pointer_info(const void *p, a2a_ptrinfo *out) {
  uintptr_t x = (uintptr_t)p;
  for (size_t i = 0; i < nptrs; i++)
    if (x >= ptrs[i].base && x - ptrs[i].base < ptrs[i].size) {
      out->type = ptrs[i].type;
      out->device = ptrs[i].device;
      return 0;
    }
  return -1;
}

static int h_func_name(const void *func, const char **name) {
  for (size_t i = 0; i < nkernels; i++)
    if (kernels[i].func == func) { *name = kernels[i].name; return 0; }
  return -1;
}

static int h_param_info(const void *func, size_t idx, size_t *off, size_t *size) {
  for (size_t i = 0; i < nkernels; i++)
    if (kernels[i].func == func) {
      if (idx >= (size_t)kernels[i].n) return -1;
      *off = kernels[i].off[idx];
      *size = kernels[i].size[idx];
      return 0;
    }
  return -1;
}

static int h_stream_device(void *stream, int *device) {
  nstream_asks++;
  for (size_t i = 0; i < nstreams; i++)
    if (streams[i].stream == stream) {
      *device = streams[i].device;
      return 0;
    }
  return -1;
}

static int h_comm_info(void *comm, int *nranks, int *rank, int *device) {
  ncomm_asks++;
  for (size_t i = 0; i < ncomms; i++)
    if (comms[i].comm == comm) {
      *nranks = comms[i].nranks;
      *rank = comms[i].rank;
      *device = comms[i].device;
      return 0;
    }
  return -1;
}

static size_t ev_index(void *ev) { return (size_t)(uintptr_t)ev - 1; }
static int h_event_create(void **ev, int timing) {
  int rc = -1;
  pthread_mutex_lock(&ev_mu);
  if (nevents < MAX_EVENTS) {
    events[nevents] = (typeof(events[0])){0};
    *ev = (void *)(uintptr_t)(++nevents);
    rc = 0;
  }
  pthread_mutex_unlock(&ev_mu);
  return rc;
}
static int h_event_record(void *ev, void *stream) {
  size_t i = ev_index(ev);
  int rc = -1;
  pthread_mutex_lock(&ev_mu);
  if (i < nevents) {
    events[i].done = false;
    events[i].stream = stream;
    rc = 0;
  }
  pthread_mutex_unlock(&ev_mu);
  return rc;
}
static int h_event_query(void *ev) {
  size_t i = ev_index(ev);
  int rc = -1;
  pthread_mutex_lock(&ev_mu);
  if (i < nevents) rc = events[i].done ? 0 : 1;
  pthread_mutex_unlock(&ev_mu);
  return rc;
}
static int h_event_elapsed(float *ms, void *a, void *b) {
  size_t i = ev_index(a), j = ev_index(b);
  int rc = -1;
  pthread_mutex_lock(&ev_mu);
  if (i < nevents && j < nevents && events[i].done && events[j].done) {
    *ms = (float)((double)(events[j].at - events[i].at) / 1e6);
    rc = 0;
  }
  pthread_mutex_unlock(&ev_mu);
  return rc;
}
static int h_event_destroy(void *ev) {
  pthread_mutex_lock(&ev_mu);
  int rc = ev_index(ev) < nevents ? 0 : -1;
  pthread_mutex_unlock(&ev_mu);
  return rc;
}
/* Streams capturing (collector_set_capture): the runtime's answer to
 * cudaStreamGetCaptureInfo. */
static struct { const void *stream; uint64_t id; } caps[8];
void collector_set_capture(const void *stream, uint64_t id) {
  for (int i = 0; i < 8; i++)
    if (caps[i].stream == stream || (!caps[i].stream && id)) {
      caps[i].stream = id ? stream : NULL;
      caps[i].id = id;
      return;
    }
}
static int h_capture_id(void *stream, int per_thread, uint64_t *id) {
  (void)per_thread;
  for (int i = 0; i < 8; i++)
    if (caps[i].stream && caps[i].stream == stream) {
      *id = caps[i].id;
      return 1;
    }
  *id = 0;
  return 0;
}

static void h_capture_stack(a2a_stack *st) {
  st->n = 1;
  st->pc[0] = (void *)h_capture_stack;
}
static int h_global_rank(void) { return rank; }
static const char *h_hostname(void) { return "testhost"; }
static void h_fail_now(const char *reason) {
  failed = true;
  snprintf(fail_reason, sizeof fail_reason, "%s", reason ? reason : "");
}

static const a2a_host fake_host = {
    .now_ns = h_now,
    .pointer_info = h_pointer_info,
    .func_name = h_func_name,
    .func_param_info = h_param_info,
    .event_create = h_event_create,
    .event_record = h_event_record,
    .event_query = h_event_query,
    .event_elapsed_ms = h_event_elapsed,
    .event_destroy = h_event_destroy,
    .stream_device = h_stream_device,
    .comm_info = h_comm_info,
    .capture_stack = h_capture_stack,
    .capture_id = h_capture_id,
    .global_rank = h_global_rank,
    .hostname = h_hostname,
    .fail_now = h_fail_now,
};

void collector_set_time_ns(uint64_t ns) { fake_now = ns; }
void collector_advance_ns(uint64_t ns) { fake_now += ns; }

void collector_add_pointer(uintptr_t base, size_t size, int type, int device) {
  if (nptrs < MAX_PTRS) ptrs[nptrs++] = (typeof(ptrs[0])){base, size, type, device};
}

void collector_add_stream(const void *stream, int device) {
  if (nstreams < MAX_STREAMS) streams[nstreams++] = (typeof(streams[0])){stream, device};
}

size_t collector_stream_asks(void) { return nstream_asks; }

void collector_add_comm_info(const void *comm, int nranks, int rank, int device) {
  if (ncomms < MAX_COMMS) comms[ncomms++] = (typeof(comms[0])){comm, nranks, rank, device};
}
size_t collector_comm_info_asks(void) { return ncomm_asks; }

void collector_add_kernel(const void *func, const char *name, int nparams,
                          const size_t *offsets, const size_t *sizes) {
  if (nkernels >= MAX_KERNELS || nparams > 32) return;
  kernels[nkernels].func = func;
  kernels[nkernels].name = name;
  kernels[nkernels].n = nparams;
  for (int i = 0; i < nparams; i++) {
    kernels[nkernels].off[i] = offsets[i];
    kernels[nkernels].size[i] = sizes[i];
  }
  nkernels++;
}

size_t collector_event_count(void) {
  pthread_mutex_lock(&ev_mu);
  size_t n = nevents;
  pthread_mutex_unlock(&ev_mu);
  return n;
}
void *collector_event_at(size_t i) { return i < collector_event_count() ? (void *)(uintptr_t)(i + 1) : NULL; }
void *collector_event_stream(void *ev) {
  size_t i = ev_index(ev);
  pthread_mutex_lock(&ev_mu);
  void *s = i < nevents ? events[i].stream : NULL;
  pthread_mutex_unlock(&ev_mu);
  return s;
}
void collector_event_complete(void *ev, uint64_t at_ns) {
  size_t i = ev_index(ev);
  pthread_mutex_lock(&ev_mu);
  if (i < nevents) { events[i].done = true; events[i].at = at_ns; }
  pthread_mutex_unlock(&ev_mu);
}
void collector_complete_all_events(uint64_t at_ns) {
  pthread_mutex_lock(&ev_mu);
  for (size_t i = 0; i < nevents; i++)
    if (!events[i].done) { events[i].done = true; events[i].at = at_ns; }
  pthread_mutex_unlock(&ev_mu);
}
void collector_set_rank(int r) { rank = r; }
const char *collector_fail_reason(void) { return failed ? fail_reason : NULL; }

/* ---------------- lifecycle ---------------- */

a2a_options *collector_options(void) { return &opts; }

/* ev_dispatch_group's per-thread group depths (the shim's
 * a2a_rt_thread.gdepth): zero when the analyzers are (re)initialized, as
 * no call of any thread was analyzed before. Threads past the array count
 * in its last entry (a2a_group_nested keeps them out of the nested rows
 * anyway: A2A_ACTIVITY_THREADS is below it). */
#define GROUP_THREADS 2048
_Static_assert(GROUP_THREADS > A2A_ACTIVITY_THREADS, "a depth for the threads past the table");
static uint32_t g_gdepth[GROUP_THREADS];

static unsigned g_nkept; /* ev_group_kept */

void ev_group_forget(void) { memset(g_gdepth, 0, sizeof g_gdepth); }

void collector_reinit(void) {
  ev_group_forget();
  g_nkept = 0;
  a2a_core_reset_for_tests(&opts, &fake_host);
}

void collector_reset(void) {
  pthread_mutex_lock(&mu);
  nfindings = 0;
  dedup = false;
  memset(repeats, 0, sizeof repeats);
  ndisabled = 0;
  apply_disabled();
  nptrs = 0;
  nstreams = nstream_asks = 0;
  ncomms = ncomm_asks = 0;
  nkernels = 0;
  memset(caps, 0, sizeof caps);
  pthread_mutex_lock(&ev_mu);
  nevents = 0;
  pthread_mutex_unlock(&ev_mu);
  rank = -1;
  failed = false;
  fail_reason[0] = '\0';
  fake_now = 1000000000ULL;
  pthread_mutex_unlock(&mu);
  a2a_options_defaults(&opts);
  collector_reinit();
}

/* ---------------- events ---------------- */

a2a_event ev_make(a2a_kind kind) {
  a2a_event ev;
  memset(&ev, 0, sizeof ev);
  ev.kind = kind;
  ev.api = "test";
  ev.device = 0;
  ev.thread = 1;
  /* Every event is the next call (of whichever thread it is given to);
   * tests make events on several threads. */
  static _Atomic uint32_t seq;
  ev.seq = atomic_fetch_add_explicit(&seq, 1, memory_order_relaxed) + 1;
  ev.callsite = (const void *)0x1000;
  return ev;
}

void ev_pre(a2a_event *ev) {
  ev->phase = A2A_PRE;
  ev->t_ns = fake_now;
  a2a_dispatch(ev);
}

void ev_post(a2a_event *ev, int result) {
  ev->phase = A2A_POST;
  a2a_event_set_result(ev, result);
  ev->t_ns = fake_now;
  a2a_dispatch(ev);
}

void ev_dispatch(a2a_event *ev, int result) {
  ev_pre(ev);
  ev_post(ev, result);
}

static void group_dispatch(a2a_event *ev, int result, bool keep, bool *kept) {
  const a2a_kind kind = ev->kind;
  uint32_t *d = &g_gdepth[ev->thread < GROUP_THREADS ? ev->thread : GROUP_THREADS - 1];
  *kept = false;
  if (keep && a2a_group_keepable(kind, ev->thread, *d)) {
    /* (The shim's order: the real call, then the keep.) */
    if (a2a_group_keep(kind, ev->thread, result)) {
      a2a_group_keep_note(ev->thread, ev->seq);
      ev->u.group.depth = (int)*d;
      *d = a2a_group_count(*d, kind, result);
      *kept = true;
      return;
    }
  }
  const unsigned row = a2a_group_row(ev, kind, *d);
  ev->phase = A2A_PRE;
  ev->t_ns = fake_now;
  a2a_dispatch_row(ev, kind, row, A2A_PRE);
  a2a_group_kept_folded(ev);
  a2a_event_set_result(ev, result);
  *d = a2a_group_count(*d, kind, result);
  ev->phase = A2A_POST;
  a2a_dispatch_row(ev, kind, row, A2A_POST);
}

void ev_dispatch_group(a2a_event *ev, int result) {
  bool kept;
  group_dispatch(ev, result, true, &kept);
  g_nkept += kept;
}

unsigned ev_group_kept(void) { return g_nkept; }

void ev_dispatch_group_rows(a2a_event *ev, int result) {
  bool kept;
  group_dispatch(ev, result, false, &kept);
}

static void activity_only(const a2a_event *ev) { (void)ev; }
static const a2a_analyzer activity_analyzer = {.name = "test_activity", .wants_activity = true,
                                               .on_event = activity_only};

void collector_use_with_activity(const a2a_analyzer *const *a, size_t n) {
  static const a2a_analyzer *list[9];
  size_t k = 0;
  for (; k < n && k < 8; k++) list[k] = a[k];
  list[k++] = &activity_analyzer;
  a2a_core_set_analyzers_for_tests(list, k);
  collector_reinit();
}

bool collector_hot_launch(void *stream, int per_thread, const void *func, void *args) {
  a2a_event ev = ev_make(A2A_EV_LAUNCH);
  ev.stream = stream;
  ev.per_thread = per_thread;
  ev.u.launch.func = func;
  ev.u.launch.args = (void **)args;
  ev.t_ns = 0;
  a2a_dispatch_hot(&ev, A2A_EV_LAUNCH, A2A_PRE);
  bool marked = a2a_activity_tab[ev.thread].quiet != 0;
  ev.phase = A2A_POST;
  a2a_event_set_result(&ev, 0);
  a2a_dispatch_hot(&ev, A2A_EV_LAUNCH, A2A_POST);
  return marked;
}
