/* core_dispatch.c - the one dispatch point from events to analyzers, the
 * options defaults, and the host services in effect.
 *
 * Order per event: on POST of a creation (COMM_INIT, ALLOC) the registry is
 * updated first, so analyzers see the new record; on POST of a destruction
 * (COMM_END, FREE) analyzers run first, so they still see the old record.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "a2a_core.h"
#include "core_internal.h"

/* ---------------- options ---------------- */

static const a2a_options g_defaults = {
#define A2A_OPT_INT(name, env, def, help) .name = (def),
#define A2A_OPT_DBL(name, env, def, help) .name = (def),
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
static void fb_capture_stack(a2a_stack *st) { st->n = 0; }
static int fb_global_rank(void) { return -1; }
static const char *fb_hostname(void) { return "localhost"; }
static void fb_fail_now(const char *reason) { (void)reason; }

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
    .capture_stack = fb_capture_stack,
    .global_rank = fb_global_rank,
    .hostname = fb_hostname,
    .fail_now = fb_fail_now,
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

/* Analyzers are referenced weakly: a row of analyzers.inc whose file is not
 * linked yields a NULL entry (reported by the core unit test, which checks
 * that every listed analyzer is present), never a link error. */
#define A2A_ANALYZER(n) extern const a2a_analyzer a2a_analyzer_##n __attribute__((weak));
#include "analyzers.inc"
#undef A2A_ANALYZER

static const a2a_analyzer *const g_analyzers[] = {
#define A2A_ANALYZER(n) &a2a_analyzer_##n,
#include "analyzers.inc"
#undef A2A_ANALYZER
    NULL};
#define NANALYZERS (sizeof g_analyzers / sizeof g_analyzers[0] - 1)

static _Atomic bool g_off[NANALYZERS + 1];
static _Atomic bool g_ready;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static const a2a_options *g_init_opt;
static const a2a_host *g_init_host;

static void init_analyzers(void) {
  for (size_t i = 0; i < NANALYZERS; i++) {
    const a2a_analyzer *a = g_analyzers[i];
    atomic_store(&g_off[i], a == NULL);
    if (a && a->init && a->init() != 0)
      a2a_analyzer_disable(a->name, "its initialization failed");
  }
}

static void init_once(void) {
  if (g_init_opt) a2a_opt = g_init_opt;
  merge_host(g_init_host);
  init_analyzers();
  atomic_store_explicit(&g_ready, true, memory_order_release);
}

void a2a_core_init(const a2a_options *opt, const a2a_host *host) {
  g_init_opt = opt;
  g_init_host = host;
  pthread_once(&g_once, init_once);
}

void a2a_core_reset_for_tests(const a2a_options *opt, const a2a_host *host) {
  a2a_opt = opt ? opt : &g_defaults;
  merge_host(host);
  a2a_registry_reset_for_tests();
  init_analyzers();
  atomic_store(&g_ready, true);
}

size_t a2a_core_analyzer_count(void);
size_t a2a_core_analyzer_count(void) { return NANALYZERS; }
const a2a_analyzer *a2a_core_analyzer_at(size_t i);
const a2a_analyzer *a2a_core_analyzer_at(size_t i) {
  return i < NANALYZERS ? g_analyzers[i] : NULL;
}

static inline bool ok_result(const a2a_event *ev) {
  /* ncclInProgress (7): a non-blocking init returned a valid handle. */
  return ev->result == 0 || (ev->kind == A2A_EV_COMM_INIT && ev->result == 7);
}

void a2a_dispatch(const a2a_event *ev) {
  if (!atomic_load_explicit(&g_ready, memory_order_acquire)) return;
  bool post = ev->phase == A2A_POST;
  if (post && ok_result(ev)) {
    if (ev->kind == A2A_EV_COMM_INIT) a2a_registry_comm_init(ev);
    else if (ev->kind == A2A_EV_ALLOC) a2a_registry_alloc(ev);
  }
  for (size_t i = 0; i < NANALYZERS; i++) {
    if (atomic_load_explicit(&g_off[i], memory_order_relaxed)) continue;
    g_analyzers[i]->on_event(ev);
  }
  if (post && ev->result == 0) {
    if (ev->kind == A2A_EV_COMM_END) a2a_registry_comm_end(ev);
    else if (ev->kind == A2A_EV_FREE) a2a_registry_free(ev);
  }
}

void a2a_core_fini(void) {
  if (!atomic_load(&g_ready)) return;
  for (size_t i = 0; i < NANALYZERS; i++)
    if (!atomic_load(&g_off[i]) && g_analyzers[i]->fini) g_analyzers[i]->fini();
}

void a2a_core_after_fork_child(void) {
  a2a_registry_after_fork_child();
  if (!atomic_load(&g_ready)) return;
  for (size_t i = 0; i < NANALYZERS; i++)
    if (!atomic_load(&g_off[i]) && g_analyzers[i]->after_fork_child)
      g_analyzers[i]->after_fork_child();
}

void a2a_analyzer_disable(const char *name, const char *why) {
  bool newly_off = false;
  for (size_t i = 0; i < NANALYZERS; i++) {
    const a2a_analyzer *a = g_analyzers[i];
    if (a && strcmp(a->name, name) == 0 && !atomic_exchange(&g_off[i], true))
      newly_off = true;
  }
  if (!newly_off) return; /* only the first call says so */
  char msg[256];
  snprintf(msg, sizeof msg, "The %s analyzer disabled itself: %s. Its checks are off for the rest of the run.",
           name, why ? why : "internal error");
  a2a_finding f = {.check = "a2acheck.analyzer-disabled", .severity = A2A_SEV_WARNING,
                   .message = msg};
  a2a_report(&f);
}
