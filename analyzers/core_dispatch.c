/* core_dispatch.c - the one dispatch point from events to analyzers, the
 * options defaults, and the host services in effect.
 *
 * Analyzers declare the (phase, kind) pairs they handle and the checks they
 * own; the table of who gets what is built once at init, so an event is
 * handed only to the analyzers that want it, and not at all to an analyzer
 * whose checks are all disabled.
 *
 * Order per event: on POST of a creation (COMM_INIT, ALLOC) the registry is
 * updated first, so analyzers see the new record; on POST of a destruction
 * (COMM_END, FREE) analyzers run first, so they still see the old record.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "a2a_core.h"
#include "core_internal.h"

/* ---------------- options ---------------- */

static const a2a_options g_defaults = {
#define A2A_OPT_INT(name, env, def, range, help) .name = (def),
#define A2A_OPT_DBL(name, env, def, range, help) .name = (def),
#define A2A_OPT_STR(name, env, def, help) .name = (def),
#include "a2a_options.inc"
#undef A2A_OPT_INT
#undef A2A_OPT_DBL
#undef A2A_OPT_STR
};

const a2a_options *a2a_opt = &g_defaults;

void a2a_options_defaults(a2a_options *o) { *o = g_defaults; }

/* ---------------- host services ---------------- */

static uint64_t fb_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}
static int fb_pointer_info(const void *p, a2a_ptrinfo *o) { return -1; }
static int fb_func_name(const void *f, const char **n) { return -1; }
static int fb_param_info(const void *f, size_t i, size_t *o, size_t *s) { return -1; }
static int fb_event_create(void **e, int t) { return -1; }
static int fb_event_record(void *e, void *s) { return -1; }
static int fb_event_query(void *e) { return -1; }
static int fb_event_elapsed(float *ms, void *a, void *b) { return -1; }
static int fb_event_destroy(void *e) { return -1; }
static int fb_stream_query(void *s) { return -1; }
static int fb_stream_device(void *s, int *d) { return -1; }
static int fb_comm_info(void *c, int *n, int *r, int *d) { return -1; }
static const void *fb_caller_site(const void *pc) { return pc; }
static void fb_capture_stack(a2a_stack *st) { st->n = 0; }
static int fb_global_rank(void) { return -1; }
static const char *fb_hostname(void) { return "localhost"; }
static void fb_fail_now(const char *reason) { (void)reason; }
static void fb_site_text(const void *pc, char *buf, size_t cap) {
  snprintf(buf, cap, "%p", pc);
}
extern char **environ;
static const char *fb_getenv(const char *name) { return getenv(name); }
static char **fb_environ(void) { return environ; }
bool a2a_infiniband_present(void) {
  DIR *d = opendir("/sys/class/infiniband");
  if (!d) return false;
  bool any = false;
  struct dirent *de;
  while (!any && (de = readdir(d)) != NULL) any = de->d_name[0] != '.';
  closedir(d);
  return any;
}
static bool fb_fail_policy(a2a_check_id check, int severity) {
  (void)severity;
  return a2a_check_is_deadlock(check); /* the default, "deadlock" */
}

static const a2a_host g_fallback_host = {
    .now_ns = fb_now_ns,
    .pointer_info = fb_pointer_info,
    .func_name = fb_func_name,
    .func_param_info = fb_param_info,
    .event_create = fb_event_create,
    .event_record = fb_event_record,
    .event_query = fb_event_query,
    .event_elapsed_ms = fb_event_elapsed,
    .event_destroy = fb_event_destroy,
    .stream_query = fb_stream_query,
    .stream_device = fb_stream_device,
    .comm_info = fb_comm_info,
    .caller_site = fb_caller_site,
    .capture_stack = fb_capture_stack,
    .global_rank = fb_global_rank,
    .hostname = fb_hostname,
    .fail_now = fb_fail_now,
    .fail_policy = fb_fail_policy,
    .site_text = fb_site_text,
    .getenv = fb_getenv,
    .environ = fb_environ,
    .infiniband_present = a2a_infiniband_present,
};

static a2a_host g_host; /* the caller's services, holes filled from fallback */
const a2a_host *a2a_hostsvc = &g_fallback_host;

static void merge_host(const a2a_host *h) {
  g_host = h ? *h : g_fallback_host;
  /* Every member is a function pointer: fill NULL holes generically. */
  void **dst = (void **)&g_host;
  void *const *fb = (void *const *)&g_fallback_host;
  for (size_t i = 0; i < sizeof g_host / sizeof(void *); i++)
    if (!dst[i]) dst[i] = fb[i];
  a2a_hostsvc = &g_host;
}

/* ---------------- analyzers ---------------- */

#define A2A_ANALYZER(n) extern const a2a_analyzer a2a_analyzer_##n;
#include "analyzers.inc"
#undef A2A_ANALYZER

const a2a_analyzer *const a2a_local_analyzers[] = {
#define A2A_ANALYZER(n) &a2a_analyzer_##n,
#include "analyzers.inc"
#undef A2A_ANALYZER
};
const size_t a2a_nlocal_analyzers = sizeof a2a_local_analyzers / sizeof a2a_local_analyzers[0];

#define MAX_ANALYZERS 16

/* The list in effect and, per (phase, kind), the handlers to call: built
 * at init from each analyzer's masks, minus those whose checks are all
 * disabled, so the hot path calls nothing else. An analyzer that disables
 * itself later has its entries replaced by noop(). */
static const a2a_analyzer *g_an[MAX_ANALYZERS];
static size_t g_nan;
static _Atomic bool g_off[MAX_ANALYZERS];
_Atomic(a2a_handler) a2a_handlers[2][A2A_ROWS][A2A_MAX_HANDLERS + 1];
static uint8_t g_hidx[2][A2A_ROWS][A2A_MAX_HANDLERS]; /* analyzer of each entry */
_Atomic bool a2a_dispatch_ready;
const _Atomic unsigned a2a_gate_none; /* never written */
a2a_hot_row a2a_hot_rows[2][A2A_ROWS];
static uint8_t g_hidx_sel[2][A2A_ROWS][A2A_GATE_SELS][A2A_LIST_LEN]; /* analyzer of each entry */
_Atomic(a2a_handler) a2a_launch_quiet[A2A_LIST_LEN];
static uint8_t g_hidx_quiet[A2A_LIST_LEN];
_Static_assert(A2A_LIST_LEN >= A2A_MAX_HANDLERS + 1, "a list and its NULL");
bool a2a_activity_on;
uint32_t a2a_activity_threads;
_Atomic uint64_t a2a_kinds_wanted = ~0ull;
uint64_t a2a_comm_quiet_kinds;
bool a2a_group_keep_on;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static const a2a_options *g_init_opt;
static const a2a_host *g_init_host;

static void set_list(const a2a_analyzer *const *list, size_t n) {
  g_nan = 0;
  for (size_t i = 0; i < n && g_nan < MAX_ANALYZERS; i++)
    if (list[i]) g_an[g_nan++] = list[i];
}

static bool wanted(const a2a_analyzer *a) {
  return a->owner == 0 || a2a_checks_any_owned(a->owner);
}

static void noop(const a2a_event *ev) { (void)ev; }

/* Registries as handlers: creations are visible to the analyzers of the
 * POST (first entries), destructions only after every analyzer saw it
 * (last entries). */
static void reg_comm_init(const a2a_event *ev) { if (ev->ok) a2a_registry_comm_init(ev); }
static void reg_alloc(const a2a_event *ev) { if (ev->ok) a2a_registry_alloc(ev); }
static void reg_comm_end(const a2a_event *ev) { if (ev->result == 0) a2a_registry_comm_end(ev); }
static void reg_comm_ready(const a2a_event *ev) { a2a_registry_comm_ready(ev); }
static void reg_free(const a2a_event *ev) { if (ev->result == 0) a2a_registry_free(ev); }

static void add_handler(int ph, int k, a2a_handler f, int analyzer, unsigned *n) {
  if (*n >= A2A_MAX_HANDLERS) return; /* cannot happen with the table's analyzers */
  g_hidx[ph][k][*n] = (uint8_t)(analyzer < 0 ? 0xff : analyzer);
  atomic_store(&a2a_handlers[ph][k][(*n)++], f);
}

/* The kind of a row of the tables (A2A_ROW_QCOPY: copies; the nested
 * group rows: their kinds). */
static int row_kind(int row) {
  if (row == (int)A2A_ROW_QCOPY) return A2A_EV_MEMCPY;
  if (row == (int)A2A_ROW_GSTART_NESTED) return A2A_EV_GROUP_START;
  if (row == (int)A2A_ROW_GEND_NESTED) return A2A_EV_GROUP_END;
  return row;
}

static bool row_nested(int row) {
  return row == (int)A2A_ROW_GSTART_NESTED || row == (int)A2A_ROW_GEND_NESTED;
}

/* Analyzer a's handler of (ph, row k), NULL when it has none there: its
 * nested handler in a nested row when it declares them
 * (a2a_analyzer.nested), else its by_kind_post (POST), by_kind or
 * on_event. */
static a2a_handler row_handler(const a2a_analyzer *a, int ph, int k) {
  int kind = row_kind(k);
  if (row_nested(k) && a->nested)
    return kind == A2A_EV_GROUP_START ? a->nested->start[ph] : a->nested->end[ph];
  const a2a_by_kind *bk = a->by_kind, *bp = a->by_kind_post;
  if (ph == A2A_POST && bp && bp->fn[kind]) bk = bp;
  return bk && bk->fn[kind] ? bk->fn[kind] : a->on_event;
}

/* The gate of analyzer entry j of (ph, row k), or NULL when the entry is a
 * registry's or its analyzer does not gate (ph, its kind). */
static const _Atomic unsigned *entry_gate(int ph, int k, unsigned j) {
  uint8_t i = g_hidx[ph][k][j];
  const a2a_analyzer *a = i == 0xff ? NULL : g_an[i];
  if (!a) return NULL;
  uint64_t gated = ph == A2A_PRE ? a->pre_gated : a->post_gated;
  const _Atomic unsigned *gate = ph == A2A_PRE ? a->pre_gate : a->post_gate;
  return gate && (gated & A2A_KIND_BIT(row_kind(k))) ? gate : NULL;
}

/* The handler "only called when its gate read open" (a2a_analyzer.
 * pre_open / post_open) of analyzer entry j of (ph, row k), or NULL. */
static a2a_handler entry_open(int ph, int k, unsigned j) {
  uint8_t i = g_hidx[ph][k][j];
  if (i != 0xff && row_nested(k) && g_an[i]->nested) return NULL; /* its nested handler, gate and all */
  const a2a_by_kind *bo = i == 0xff ? NULL : ph == A2A_PRE ? g_an[i]->pre_open : g_an[i]->post_open;
  return bo ? bo->fn[row_kind(k)] : NULL;
}

/* The gates of (ph, k) (n entries in the table), each once, at most
 * A2A_MAX_GATES (a gate past them leaves its handler in every list, as if
 * ungated), and per selection the table's entries but those of the
 * slotted gates the selection leaves closed, in order - the first one,
 * when it is a slotted gate's handler, its open handler if it has one
 * (the hot dispatch read that gate nonzero last, just before: see
 * a2a_analyzer.pre_open); for the launch PRE row also the repeated
 * launch's list: the full list (the last selection's) less the quiet
 * analyzers' entries, the table's handlers all (no gate read before it). */
static void build_gates(int ph, int k, unsigned n) {
  unsigned ng = 0;
  /* The gate slot of entry j, -1 ungated, -2 left out of every list: its
   * gate opens at its analyzer's init only and reads 0 after it
   * (a2a_analyzer.gates_open_at_init_only: the handler would return at its
   * own test until the next init rebuilds the rows). */
  int slot[A2A_MAX_HANDLERS];
  for (unsigned j = 0; j < n; j++) {
    const _Atomic unsigned *gate = entry_gate(ph, k, j);
    uint8_t i = g_hidx[ph][k][j];
    if (gate && g_an[i]->gates_open_at_init_only && atomic_load(gate) == 0) {
      slot[j] = -2;
      continue;
    }
    unsigned d = 0;
    while (gate && d < ng && a2a_hot_rows[ph][k].gate[d] != gate) d++;
    if (gate && d == ng && ng < A2A_MAX_GATES) a2a_hot_rows[ph][k].gate[ng++] = gate;
    slot[j] = gate && d < ng ? (int)d : -1;
  }
  bool launch_pre = ph == A2A_PRE && k == A2A_EV_LAUNCH;
  for (unsigned sel = 0; sel < A2A_GATE_SELS; sel++) {
    unsigned ns = 0, nq = 0;
    for (unsigned j = 0; j < n; j++) {
      if (slot[j] == -2 || (slot[j] >= 0 && !(sel >> slot[j] & 1))) continue; /* its gate reads 0 */
      uint8_t i = g_hidx[ph][k][j];
      a2a_handler f = atomic_load(&a2a_handlers[ph][k][j]);
      a2a_handler open = ns == 0 && slot[j] >= 0 ? entry_open(ph, k, j) : NULL;
      g_hidx_sel[ph][k][sel][ns] = i;
      atomic_store(&a2a_hot_rows[ph][k].sel[sel][ns++], open ? open : f);
      if (!launch_pre || sel != A2A_GATE_SELS - 1 || (i != 0xff && g_an[i]->launch_quiet)) continue;
      g_hidx_quiet[nq] = i;
      atomic_store(&a2a_launch_quiet[nq++], f);
    }
    atomic_store(&a2a_hot_rows[ph][k].sel[sel][ns], NULL);
    if (launch_pre && sel == A2A_GATE_SELS - 1) atomic_store(&a2a_launch_quiet[nq], NULL);
  }
  /* The hot dispatch reads every slot: a free one reads 0. No slot in use:
   * every selection above kept the same entries (only a slotted entry
   * depends on sel) with the same handlers (an open one replaces only a
   * slotted entry), so sel[0] is every selection's list. */
  for (unsigned d = ng; d < A2A_MAX_GATES; d++) a2a_hot_rows[ph][k].gate[d] = &a2a_gate_none;
  a2a_hot_rows[ph][k].ungated = ng == 0;
}

/* Forget every thread's repeated-launch mark (a2a_note_launch): the
 * analyzers' state it vouches for is being reset. */
static void forget_launch_marks(void) {
  for (size_t i = 0; i < A2A_ACTIVITY_THREADS; i++) a2a_activity_tab[i].quiet = 0;
}

/* Forget every thread's veto of the nested group rows (a2a_group_nested):
 * the analyzers' states start again. */
static void forget_groups(void) {
  for (size_t i = 0; i < A2A_ACTIVITY_THREADS; i++) a2a_activity_tab[i].gveto = 0;
}

/* At the analyzers' (re)initialization also every thread's kept nested
 * group and busy mark (a2a_group_keep): the analyzers' depths start from
 * zero. (Not in a forked child: group_local and layout keep the forking
 * thread's depth there, kept level included.) */
static void forget_kept_groups(void) {
  for (size_t i = 0; i < A2A_ACTIVITY_THREADS; i++) {
    atomic_store_explicit(&a2a_activity_tab[i].gkeep, 0, memory_order_relaxed);
    a2a_activity_tab[i].gend_busy = 0;
  }
}

/* Only the kept bit: layout reads differences of the count of kept starts
 * against the one its record last counted (nested_count), which a zeroed
 * word would wrap; group_local reads only the bit. */
void a2a_group_keep_after_fork(uint32_t thread) {
  if (thread < A2A_ACTIVITY_THREADS)
    atomic_fetch_and_explicit(&a2a_activity_tab[thread].gkeep, ~A2A_GROUP_KEPT,
                              memory_order_relaxed);
}

void a2a_group_nested_full(uint32_t thread) {
  if (thread < A2A_ACTIVITY_THREADS) a2a_activity_tab[thread].gveto = 1;
}

/* Whether kind k's rows are quiet for an active communicator
 * (a2a_comm_quiet_kinds): both ungated - the hot dispatch calls sel[0]
 * without reading a gate - and every entry of sel[0] an analyzer's (not a
 * registry's) that declares k in its comm_quiet. Only kinds without a
 * registry entry qualify; an empty row is quiet. */
static bool rows_comm_quiet(int k) {
  for (int ph = 0; ph < 2; ph++) {
    if (!a2a_hot_rows[ph][k].ungated) return false;
    for (unsigned j = 0; atomic_load(&a2a_hot_rows[ph][k].sel[0][j]) != NULL; j++) {
      uint8_t i = g_hidx_sel[ph][k][0][j];
      if (i == 0xff || !(g_an[i]->comm_quiet & A2A_KIND_BIT(k))) return false;
    }
  }
  return true;
}

/* Whether every analyzer entry of the nested rows is one written for kept
 * nested levels (a2a_group_keep_on): an empty row keeps. */
static bool rows_keep_ok(void) {
  static const int rows[] = {A2A_ROW_GSTART_NESTED, A2A_ROW_GEND_NESTED};
  for (int ph = 0; ph < 2; ph++)
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++)
      for (unsigned j = 0; atomic_load(&a2a_handlers[ph][rows[r]][j]) != NULL; j++) {
        uint8_t i = g_hidx[ph][rows[r]][j];
        if (i != 0xff && !g_an[i]->nested_keep_ok) return false;
      }
  return true;
}

static void init_analyzers(void) {
  atomic_store(&a2a_dispatch_ready, false);
  a2a_kparams_reset();
  a2a_site_stacks_reset();
  for (size_t i = 0; i < g_nan; i++) {
    const a2a_analyzer *a = g_an[i];
    bool off = !wanted(a);
    atomic_store(&g_off[i], off);
    if (!off && a->init && a->init() != 0)
      a2a_analyzer_disable(a->name, "its initialization failed");
  }
  uint64_t want = 0;
  a2a_activity_on = false;
  forget_launch_marks();
  forget_groups();
  forget_kept_groups();
  for (int ph = 0; ph < 2; ph++)
    for (int row = 0; row < A2A_ROWS; row++) {
      unsigned n = 0;
      int k = row_kind(row);
      /* The queued-copy row: the copy row but the analyzers that skip a
       * queued copy's PRE. */
      bool qcopy_pre = row == (int)A2A_ROW_QCOPY && ph == A2A_PRE;
      if (ph == A2A_POST && k == A2A_EV_COMM_INIT) add_handler(ph, row, reg_comm_init, -1, &n);
      if (ph == A2A_POST && k == A2A_EV_ALLOC) add_handler(ph, row, reg_alloc, -1, &n);
      /* Dispatched only where an analyzer wants the kind (nothing else
       * reads a record's size). */
      if (ph == A2A_POST && k == A2A_EV_COMM_ASYNC_ERROR) add_handler(ph, row, reg_comm_ready, -1, &n);
      for (size_t i = 0; i < g_nan; i++) {
        uint64_t mask = ph == A2A_PRE ? g_an[i]->pre : g_an[i]->post;
        if (!atomic_load(&g_off[i]) && (mask & A2A_KIND_BIT(k)) &&
            !(qcopy_pre && g_an[i]->pre_skips_queued_copy)) {
          want |= A2A_KIND_BIT(k);
          a2a_handler f = row_handler(g_an[i], ph, row);
          if (f) add_handler(ph, row, f, (int)i, &n);
        }
      }
      if (ph == A2A_POST && k == A2A_EV_COMM_END) add_handler(ph, row, reg_comm_end, -1, &n);
      if (ph == A2A_POST && k == A2A_EV_FREE) add_handler(ph, row, reg_free, -1, &n);
      atomic_store(&a2a_handlers[ph][row][n], NULL);
      build_gates(ph, row, n);
    }
  a2a_comm_quiet_kinds = 0;
  for (int k = 0; k < A2A_EV__COUNT; k++)
    if (rows_comm_quiet(k)) a2a_comm_quiet_kinds |= A2A_KIND_BIT(k);
  a2a_group_keep_on = rows_keep_ok();
  for (size_t i = 0; i < g_nan; i++)
    if (!atomic_load(&g_off[i]) && g_an[i]->wants_activity) a2a_activity_on = true;
  a2a_activity_threads = a2a_activity_on ? A2A_ACTIVITY_THREADS : 0;
  /* The registries see every creation and destruction, whoever else does;
   * the runtime dispatches the process-exit and fork events itself. */
  want |= A2A_KIND_BIT(A2A_EV_COMM_INIT) | A2A_KIND_BIT(A2A_EV_COMM_END) |
          A2A_KIND_BIT(A2A_EV_ALLOC) | A2A_KIND_BIT(A2A_EV_FREE) |
          A2A_KIND_BIT(A2A_EV_PROCESS_EXIT) | A2A_KIND_BIT(A2A_EV_FORK_CHILD);
  if (a2a_activity_on) want = ~0ull; /* every call's seq must reach the dispatcher */
  /* Written here only, before the runtime stores READY: the runtime's
   * a2a_rt_ready_kinds (shim/rt_init.c) is a copy taken at READY, which
   * the hot wrappers test instead. Anything that changes the wanted kinds
   * later must refresh that copy too. */
  atomic_store(&a2a_kinds_wanted, want);
}

static void init_once(void) {
  if (g_init_opt) a2a_opt = g_init_opt;
  merge_host(g_init_host);
  init_analyzers();
  atomic_store_explicit(&a2a_dispatch_ready, true, memory_order_release);
}

void a2a_core_init(const a2a_options *opt, const a2a_host *host,
                   const a2a_analyzer *const *analyzers, size_t n) {
  g_init_opt = opt;
  g_init_host = host;
  if (!atomic_load(&a2a_dispatch_ready)) set_list(analyzers, n);
  pthread_once(&g_once, init_once);
}

void a2a_core_reset_for_tests(const a2a_options *opt, const a2a_host *host) {
  a2a_opt = opt ? opt : &g_defaults;
  merge_host(host);
  if (g_nan == 0) set_list(a2a_local_analyzers, a2a_nlocal_analyzers);
  a2a_registry_reset_for_tests();
  init_analyzers();
  atomic_store(&a2a_dispatch_ready, true);
}

void a2a_core_set_analyzers_for_tests(const a2a_analyzer *const *list, size_t n) {
  set_list(list, n);
}

size_t a2a_core_analyzer_count(void);
size_t a2a_core_analyzer_count(void) { return g_nan; }
const a2a_analyzer *a2a_core_analyzer_at(size_t i);
const a2a_analyzer *a2a_core_analyzer_at(size_t i) { return i < g_nan ? g_an[i] : NULL; }

a2a_activity a2a_activity_tab[A2A_ACTIVITY_THREADS];
const _Atomic uint32_t a2a_group_keep_none;
static a2a_flush_fn g_flush_hook;

void a2a_set_flush_hook(a2a_flush_fn fn) { g_flush_hook = fn; }

bool a2a_thread_want_flush(uint32_t thread) {
  if (thread >= A2A_ACTIVITY_THREADS || !g_flush_hook || !a2a_activity_on) return false;
  a2a_activity_tab[thread].flush = 1;
  return true;
}

void a2a_dispatch_list(_Atomic(a2a_handler) *h, const a2a_event *ev) {
  for (a2a_handler f; (f = atomic_load_explicit(h, memory_order_relaxed)) != NULL; h++) f(ev);
}

void a2a_run_flush(uint32_t thread) {
  a2a_activity_tab[thread].flush = 0;
  if (g_flush_hook) g_flush_hook(thread);
}

uint32_t a2a_thread_last_seq(uint32_t thread) {
  return thread < A2A_ACTIVITY_THREADS
             ? atomic_load_explicit(&a2a_activity_tab[thread].last_seq, memory_order_relaxed)
             : 0;
}

uint32_t a2a_thread_last_other_seq(uint32_t thread) {
  return thread < A2A_ACTIVITY_THREADS
             ? atomic_load_explicit(&a2a_activity_tab[thread].last_other_seq, memory_order_relaxed)
             : 0;
}

void a2a_note_activity(const a2a_event *ev) { a2a_note_activity_inline(ev); }

/* Also the runtime's POST-only events (process exit, fork child), which
 * no PRE announced: every dispatch here clears the thread's repeated-launch
 * mark (a2a_note_launch), in both phases. */
void a2a_dispatch(const a2a_event *ev) {
  if (ev->thread < A2A_ACTIVITY_THREADS) a2a_activity_tab[ev->thread].quiet = 0;
  a2a_dispatch_inline(ev);
}

void a2a_core_fini(void) {
  if (!atomic_load(&a2a_dispatch_ready)) return;
  for (size_t i = 0; i < g_nan; i++)
    if (!atomic_load(&g_off[i]) && g_an[i]->fini) g_an[i]->fini();
}

void a2a_core_after_fork_child(void) {
  /* Deferred work belonged to the parent's threads (and its streams'
   * state): the analyzer that deferred it forgets it in its own hook. */
  for (size_t i = 0; i < A2A_ACTIVITY_THREADS; i++) a2a_activity_tab[i].flush = 0;
  forget_launch_marks(); /* the analyzers' fork hooks reset their state */
  forget_groups();       /* (their states for the threads' groups) */
  a2a_registry_after_fork_child();
  if (!atomic_load(&a2a_dispatch_ready)) return;
  for (size_t i = 0; i < g_nan; i++)
    if (!atomic_load(&g_off[i]) && g_an[i]->after_fork_child) g_an[i]->after_fork_child();
}

void a2a_analyzer_disable(const char *name, const char *why) {
  bool newly_off = false;
  for (size_t i = 0; i < g_nan; i++) {
    const a2a_analyzer *a = g_an[i];
    if (strcmp(a->name, name) == 0 && !atomic_exchange(&g_off[i], true)) {
      newly_off = true;
      /* Its entries call nothing from now on. */
      for (int ph = 0; ph < 2; ph++)
        for (int k = 0; k < A2A_ROWS; k++) {
          for (unsigned j = 0; j < A2A_MAX_HANDLERS &&
                               atomic_load(&a2a_handlers[ph][k][j]) != NULL; j++)
            if (g_hidx[ph][k][j] == i) atomic_store(&a2a_handlers[ph][k][j], noop);
          for (unsigned sel = 0; sel < A2A_GATE_SELS; sel++)
            for (unsigned j = 0; j < A2A_MAX_HANDLERS &&
                                 atomic_load(&a2a_hot_rows[ph][k].sel[sel][j]) != NULL; j++)
              if (g_hidx_sel[ph][k][sel][j] == i) atomic_store(&a2a_hot_rows[ph][k].sel[sel][j], noop);
        }
      for (unsigned j = 0; j < A2A_MAX_HANDLERS && atomic_load(&a2a_launch_quiet[j]) != NULL; j++)
        if (g_hidx_quiet[j] == i) atomic_store(&a2a_launch_quiet[j], noop);
    }
  }
  if (!newly_off) return; /* only the first call says so */
  char msg[256];
  snprintf(msg, sizeof msg, "The %s analyzer disabled itself: %s. Its checks are off for the rest of the run.",
           name, why ? why : "internal error");
  a2a_finding f = {.check = A2A_CK_ANALYZER_DISABLED, .severity = A2A_SEV_WARNING,
                   .message = msg};
  a2a_report(&f);
}
