/* test_core.c - the core: registries, identity hashing, dispatch order,
 * JSON writer, dtype table, and the analyzer table itself. */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "a2a_core.h"
#include "a2a_lock.h"
#include "collector.h"
#include "core_internal.h"

size_t a2a_core_analyzer_count(void);
const a2a_analyzer *a2a_core_analyzer_at(size_t i);

static unsigned char id_a[128], id_b[128];

static void *init_comm(void *handle, const void *id, int nranks, int rank, int dev) {
  a2a_event ev = ev_make(A2A_EV_COMM_INIT);
  ev.u.init.how = A2A_INIT_RANK;
  ev.u.init.ids = id;
  ev.u.init.nids = 1;
  ev.u.init.nranks = nranks;
  ev.u.init.rank = rank;
  ev.u.init.device = dev;
  ev.u.init.blocking = 1;
  ev_pre(&ev);
  ev.u.init.newcomm = handle;
  ev_post(&ev, 0);
  return handle;
}

static void split(void *parent, void *newcomm, int color, int nranks, int rank) {
  a2a_event ev = ev_make(A2A_EV_COMM_INIT);
  ev.u.init.how = A2A_INIT_SPLIT;
  ev.u.init.parent = parent;
  ev.u.init.color = color;
  ev.u.init.nranks = nranks;
  ev.u.init.rank = rank;
  ev_pre(&ev);
  ev.u.init.newcomm = newcomm;
  ev_post(&ev, 0);
}

static void setup(void) {
  collector_reset();
  memset(id_a, 0, sizeof id_a);
  memset(id_b, 0, sizeof id_b);
  id_a[0] = 1;
  id_b[0] = 2;
}

START_TEST(every_listed_analyzer_is_linked) {
  ck_assert_uint_eq(a2a_core_analyzer_count(), a2a_nlocal_analyzers);
  for (size_t i = 0; i < a2a_core_analyzer_count(); i++) {
    const a2a_analyzer *a = a2a_core_analyzer_at(i);
    ck_assert_msg(a != NULL, "analyzers.inc row %zu has no definition", i);
    ck_assert_ptr_nonnull(a->on_event);
    /* Every analyzer subscribes to something and owns checks of the table. */
    ck_assert_msg(a->pre | a->post, "%s subscribes to no event", a->name);
    ck_assert_msg(a2a_checks_any_owned(a->owner), "%s owns no check of the table", a->name);
  }
}
END_TEST

/* Two fake analyzers: one subscribed to PRE of collectives only, one to
 * POST of launches and owning the layout checks. */
static int g_pre_coll, g_other, g_post_launch;
static void fa_event(const a2a_event *ev) {
  if (ev->kind == A2A_EV_COLL && ev->phase == A2A_PRE) g_pre_coll++;
  else g_other++;
}
static void fb_event(const a2a_event *ev) {
  if (ev->kind == A2A_EV_LAUNCH && ev->phase == A2A_POST) g_post_launch++;
  else g_other++;
}
static const a2a_analyzer fake_a = {.name = "fake_a", .pre = A2A_KIND_BIT(A2A_EV_COLL),
                                    .on_event = fa_event};
static const a2a_analyzer fake_b = {.name = "fake_b", .owner = A2A_OWN_LAYOUT,
                                    .post = A2A_KIND_BIT(A2A_EV_LAUNCH), .on_event = fb_event};

START_TEST(dispatch_follows_subscriptions_and_owned_checks) {
  static const a2a_analyzer *const list[] = {&fake_a, &fake_b};
  a2a_core_set_analyzers_for_tests(list, 2);
  collector_reinit();
  g_pre_coll = g_other = g_post_launch = 0;
  a2a_event c = ev_make(A2A_EV_COLL);
  ev_dispatch(&c, 0);
  a2a_event l = ev_make(A2A_EV_LAUNCH);
  ev_dispatch(&l, 0);
  a2a_event m = ev_make(A2A_EV_MEMCPY);
  ev_dispatch(&m, 0);
  ck_assert_int_eq(g_pre_coll, 1);
  ck_assert_int_eq(g_post_launch, 1);
  ck_assert_int_eq(g_other, 0);
  /* Every check fake_b owns disabled: it is not called at all. */
  collector_disable_check("layout");
  collector_reinit();
  ev_dispatch(&l, 0);
  ck_assert_int_eq(g_post_launch, 1);
  ev_dispatch(&c, 0);
  ck_assert_int_eq(g_pre_coll, 2); /* fake_a owns nothing: always called */
  a2a_core_set_analyzers_for_tests(a2a_local_analyzers, a2a_nlocal_analyzers);
  collector_reset();
}
END_TEST

/* Per-kind handlers (a2a_analyzer.by_kind): the dispatch table calls the
 * kind's own handler instead of on_event, in both phases of the masks;
 * on_event still gets the kinds without one; a disabled analyzer's
 * per-kind handlers are silenced like its on_event. */
static int g_by_kind, g_by_event;
static void fd_event(const a2a_event *ev) { g_by_event++; }
static void fd_coll(const a2a_event *ev) {
  ck_assert_int_eq(ev->kind, A2A_EV_COLL);
  g_by_kind++;
}
static const a2a_by_kind fd_by_kind = {.fn = {[A2A_EV_COLL] = fd_coll}};
static const a2a_analyzer fake_d = {
    .name = "fake_d",
    .pre = A2A_KIND_BIT(A2A_EV_COLL) | A2A_KIND_BIT(A2A_EV_P2P),
    .post = A2A_KIND_BIT(A2A_EV_COLL) | A2A_KIND_BIT(A2A_EV_P2P),
    .on_event = fd_event,
    .by_kind = &fd_by_kind};

START_TEST(dispatch_calls_per_kind_handlers) {
  static const a2a_analyzer *const list[] = {&fake_d};
  a2a_core_set_analyzers_for_tests(list, 1);
  collector_reinit();
  g_by_kind = g_by_event = 0;
  a2a_event c = ev_make(A2A_EV_COLL);
  ev_dispatch(&c, 0);
  a2a_event p = ev_make(A2A_EV_P2P);
  ev_dispatch(&p, 0);
  ck_assert_int_eq(g_by_kind, 2);  /* the collective's PRE and POST */
  ck_assert_int_eq(g_by_event, 2); /* the p2p's */
  a2a_analyzer_disable("fake_d", "test");
  ev_dispatch(&c, 0);
  ev_dispatch(&p, 0);
  ck_assert_int_eq(g_by_kind, 2);
  ck_assert_int_eq(g_by_event, 2);
  a2a_core_set_analyzers_for_tests(a2a_local_analyzers, a2a_nlocal_analyzers);
  collector_reset();
}
END_TEST

/* POST handlers per kind (a2a_analyzer.by_kind_post): the kind's POST
 * goes there, its PRE to by_kind's; a kind without one keeps by_kind's
 * handler for both phases. */
static int g_pre_calls, g_post_calls;
static void fe_pre(const a2a_event *ev) {
  ck_assert_int_eq(ev->phase, A2A_PRE);
  g_pre_calls++;
}
static void fe_post(const a2a_event *ev) {
  ck_assert_int_eq(ev->phase, A2A_POST);
  g_post_calls++;
}
static int g_both_calls;
static void fe_both(const a2a_event *ev) { (void)ev; g_both_calls++; }
static const a2a_by_kind fe_by_kind = {.fn = {[A2A_EV_COLL] = fe_pre, [A2A_EV_P2P] = fe_both}};
static const a2a_by_kind fe_by_kind_post = {.fn = {[A2A_EV_COLL] = fe_post}};
static const a2a_analyzer fake_e = {
    .name = "fake_e",
    .pre = A2A_KIND_BIT(A2A_EV_COLL) | A2A_KIND_BIT(A2A_EV_P2P),
    .post = A2A_KIND_BIT(A2A_EV_COLL) | A2A_KIND_BIT(A2A_EV_P2P),
    .on_event = fd_event,
    .by_kind = &fe_by_kind,
    .by_kind_post = &fe_by_kind_post};

START_TEST(dispatch_calls_per_phase_handlers) {
  static const a2a_analyzer *const list[] = {&fake_e};
  a2a_core_set_analyzers_for_tests(list, 1);
  collector_reinit();
  g_pre_calls = g_post_calls = g_both_calls = g_by_event = 0;
  a2a_event c = ev_make(A2A_EV_COLL);
  ev_dispatch(&c, 0);
  ck_assert_int_eq(g_pre_calls, 1);
  ck_assert_int_eq(g_post_calls, 1);
  a2a_event p = ev_make(A2A_EV_P2P);
  ev_dispatch(&p, 0);
  ck_assert_int_eq(g_both_calls, 2); /* no POST entry: by_kind's, both phases */
  ck_assert_int_eq(g_by_event, 0);
  ck_assert_int_eq(g_pre_calls, 1);
  ck_assert_int_eq(g_post_calls, 1);
  a2a_core_set_analyzers_for_tests(a2a_local_analyzers, a2a_nlocal_analyzers);
  collector_reset();
}
END_TEST

/* Deferred per-thread work (a2a_set_flush_hook): the hook runs on the
 * thread's next call of a flushing kind, before any analyzer sees it, and
 * not for NCCL communication, group or query calls; only with an analyzer
 * that wants every call's activity. */
static int g_flushes, g_flush_seen_by_analyzer;
static uint32_t g_flush_thread;
static void count_flush(uint32_t thread) {
  g_flushes++;
  g_flush_thread = thread;
}
static void fc_event(const a2a_event *ev) {
  (void)ev;
  g_flush_seen_by_analyzer = g_flushes;
}
static const a2a_analyzer fake_c = {.name = "fake_c", .wants_activity = true,
                                    .pre = A2A_KIND_BIT(A2A_EV_LAUNCH), .on_event = fc_event};
START_TEST(flush_hook_runs_before_the_next_other_call) {
  static const a2a_analyzer *const list[] = {&fake_c};
  a2a_core_set_analyzers_for_tests(list, 1);
  collector_reinit();
  g_flushes = g_flush_seen_by_analyzer = 0;
  a2a_set_flush_hook(count_flush);
  ck_assert(a2a_thread_want_flush(1));
  static const a2a_kind quiet[] = {A2A_EV_COLL, A2A_EV_P2P, A2A_EV_GROUP_START,
                                   A2A_EV_GROUP_END, A2A_EV_ERROR_QUERY, A2A_EV_COMM_QUERY};
  for (size_t i = 0; i < sizeof quiet / sizeof quiet[0]; i++) {
    a2a_event q = ev_make(quiet[i]);
    ev_dispatch(&q, 0);
  }
  ck_assert_int_eq(g_flushes, 0);
  a2a_event l = ev_make(A2A_EV_LAUNCH);
  ev_dispatch(&l, 0);
  ck_assert_int_eq(g_flushes, 1);
  ck_assert_uint_eq(g_flush_thread, 1);
  ck_assert_int_eq(g_flush_seen_by_analyzer, 1); /* the hook ran first */
  a2a_event sync = ev_make(A2A_EV_STREAM_SYNC);
  ev_dispatch(&sync, 0);
  ck_assert_int_eq(g_flushes, 1); /* once per request */
  ck_assert(a2a_thread_want_flush(1));
  a2a_event sd = ev_make(A2A_EV_SET_DEVICE);
  ev_dispatch(&sd, 0);
  ck_assert_int_eq(g_flushes, 2);
  /* The hot wrappers' dispatch (constant kind) flushes too. */
  ck_assert(a2a_thread_want_flush(1));
  a2a_event h = ev_make(A2A_EV_LAUNCH);
  h.phase = A2A_PRE;
  h.thread = 1;
  h.seq = 4242;
  a2a_dispatch_hot(&h, A2A_EV_LAUNCH, A2A_PRE);
  ck_assert_int_eq(g_flushes, 3);
  ck_assert_uint_eq(a2a_thread_last_seq(1), 4242); /* its activity stored */
  ck_assert(!a2a_thread_want_flush(A2A_ACTIVITY_THREADS)); /* no slot: do it now */
  /* No analyzer wants activity: nothing can be deferred. */
  a2a_core_set_analyzers_for_tests(list + 1, 0);
  collector_reinit();
  ck_assert(!a2a_thread_want_flush(1));
  /* Nor is any activity stored (a2a_activity_threads 0). */
  h.seq = 4343;
  a2a_dispatch_hot(&h, A2A_EV_LAUNCH, A2A_PRE);
  ck_assert_uint_eq(a2a_thread_last_seq(1), 4242);
  a2a_set_flush_hook(NULL);
  a2a_core_set_analyzers_for_tests(a2a_local_analyzers, a2a_nlocal_analyzers);
  collector_reset();
}
END_TEST

/* Quiet kinds (a2a_comm_quiet_kinds): a kind whose rows hold only
 * handlers of analyzers that declare it quiet for an active communicator
 * (a2a_analyzer.comm_quiet), and read no gate; a registry entry, another
 * analyzer's handler in either phase, or a gate in the row, and it is not
 * quiet. An empty row is quiet. */
static void cq_event(const a2a_event *ev) { (void)ev; }
static _Atomic unsigned g_cq_gate;
static const a2a_analyzer cq_quiet = {.name = "cq_quiet",
                                      .pre = A2A_KIND_BIT(A2A_EV_COMM_QUERY) |
                                             A2A_KIND_BIT(A2A_EV_COMM_INIT),
                                      .comm_quiet = A2A_KIND_BIT(A2A_EV_COMM_QUERY) |
                                                    A2A_KIND_BIT(A2A_EV_COMM_INIT),
                                      .on_event = cq_event};
static const a2a_analyzer cq_post = {.name = "cq_post", .post = A2A_KIND_BIT(A2A_EV_COMM_QUERY),
                                     .on_event = cq_event};
static const a2a_analyzer cq_gated = {.name = "cq_gated", .pre = A2A_KIND_BIT(A2A_EV_COMM_QUERY),
                                      .comm_quiet = A2A_KIND_BIT(A2A_EV_COMM_QUERY),
                                      .pre_gated = A2A_KIND_BIT(A2A_EV_COMM_QUERY),
                                      .pre_gate = &g_cq_gate, .on_event = cq_event};
START_TEST(comm_quiet_kinds_need_every_handler_quiet) {
  const uint64_t query = A2A_KIND_BIT(A2A_EV_COMM_QUERY);
  static const a2a_analyzer *const quiet[] = {&cq_quiet};
  a2a_core_set_analyzers_for_tests(quiet, 1);
  collector_reinit();
  ck_assert(a2a_comm_quiet_kinds & query);
  ck_assert(a2a_comm_quiet_kinds & A2A_KIND_BIT(A2A_EV_STREAM_QUERY)); /* no handler */
  /* The registry's entry at a creation's POST. */
  ck_assert(!(a2a_comm_quiet_kinds & A2A_KIND_BIT(A2A_EV_COMM_INIT)));
  static const a2a_analyzer *const with_post[] = {&cq_quiet, &cq_post};
  a2a_core_set_analyzers_for_tests(with_post, 2);
  collector_reinit();
  ck_assert(!(a2a_comm_quiet_kinds & query));
  static const a2a_analyzer *const with_gate[] = {&cq_quiet, &cq_gated};
  a2a_core_set_analyzers_for_tests(with_gate, 2);
  collector_reinit();
  ck_assert(!(a2a_comm_quiet_kinds & query));
  /* A quiet kind's query: quiet only for a record the memo holds, active. */
  a2a_core_set_analyzers_for_tests(quiet, 1);
  collector_reinit();
  void *h = (void *)0x4100;
  a2a_event init = ev_make(A2A_EV_COMM_INIT);
  init.u.init.how = A2A_INIT_ALL;
  init.u.init.newcomm = h;
  ev_dispatch(&init, 0);
  ck_assert(!a2a_comm_quiet(A2A_EV_COMM_QUERY, NULL));
  ck_assert(!a2a_comm_quiet(A2A_EV_COMM_QUERY, h)); /* not looked up since the insertion */
  ck_assert_ptr_nonnull(a2a_comm_lookup(h));
  ck_assert(a2a_comm_quiet(A2A_EV_COMM_QUERY, h));
  ck_assert(!a2a_comm_quiet(A2A_EV_COMM_INIT, h)); /* not a quiet kind */
  a2a_event end = ev_make(A2A_EV_COMM_END);
  end.comm = h;
  end.u.end.how = A2A_END_FINALIZE;
  ev_dispatch(&end, 0);
  ck_assert(!a2a_comm_quiet(A2A_EV_COMM_QUERY, h));
  a2a_core_set_analyzers_for_tests(a2a_local_analyzers, a2a_nlocal_analyzers);
  collector_reset();
}
END_TEST

/* Gates: the hot dispatch leaves a (phase, kind)'s gated handlers out
 * while their gate is 0, and calls the rest in order; an open gate runs
 * its own handlers only. The generic dispatch never skips. */
static _Atomic unsigned g_gate_a, g_gate_b;
static char g_calls[64]; /* who was called, in order: one letter each */
static void note_call(char who) {
  size_t n = strlen(g_calls);
  if (n + 1 < sizeof g_calls) g_calls[n] = who, g_calls[n + 1] = 0;
}
static void ev_a(const a2a_event *ev) { (void)ev; note_call('a'); }
static void ev_b(const a2a_event *ev) { (void)ev; note_call('b'); }
static void ev_u(const a2a_event *ev) { (void)ev; note_call('u'); }
static void ev_v(const a2a_event *ev) { (void)ev; note_call('v'); }
#define GK (A2A_KIND_BIT(A2A_EV_LAUNCH) | A2A_KIND_BIT(A2A_EV_MEMCPY))
static const a2a_analyzer gated_a = {.name = "gated_a", .pre = GK, .post = GK,
                                     .pre_gated = A2A_KIND_BIT(A2A_EV_MEMCPY),
                                     .pre_gate = &g_gate_a, .post_gated = GK,
                                     .post_gate = &g_gate_a, .on_event = ev_a};
static const a2a_analyzer gated_b = {.name = "gated_b", .pre = GK, .post = GK,
                                     .post_gated = A2A_KIND_BIT(A2A_EV_LAUNCH),
                                     .post_gate = &g_gate_b, .on_event = ev_b};
static const a2a_analyzer ungated_u = {.name = "ungated_u", .pre = GK, .post = GK,
                                       .on_event = ev_u};
static const a2a_analyzer ungated_v = {.name = "ungated_v", .pre = GK, .post = GK,
                                       .on_event = ev_v};

/* What a2a_dispatch_hot called for (kind, phase) - the letters: a
 * launch, a copy, a send or receive (kind and phase constants there), or,
 * for A2A_EV_GROUP_START, the nested start's row (a2a_dispatch_row). */
#define HOT_CASE(k, ph, call)                                                                  \
  if (kind == (k) && phase == (ph)) {                                                          \
    call;                                                                                      \
    return g_calls;                                                                            \
  }
static const char *hot(a2a_kind kind, a2a_phase phase) {
  a2a_event e = ev_make(kind);
  e.phase = phase;
  g_calls[0] = 0;
  HOT_CASE(A2A_EV_LAUNCH, A2A_POST, a2a_dispatch_hot(&e, A2A_EV_LAUNCH, A2A_POST));
  HOT_CASE(A2A_EV_LAUNCH, A2A_PRE, a2a_dispatch_hot(&e, A2A_EV_LAUNCH, A2A_PRE));
  HOT_CASE(A2A_EV_P2P, A2A_POST, a2a_dispatch_hot(&e, A2A_EV_P2P, A2A_POST));
  HOT_CASE(A2A_EV_P2P, A2A_PRE, a2a_dispatch_hot(&e, A2A_EV_P2P, A2A_PRE));
  HOT_CASE(A2A_EV_GROUP_START, A2A_POST,
           a2a_dispatch_row(&e, A2A_EV_GROUP_START, A2A_ROW_GSTART_NESTED, A2A_POST));
  HOT_CASE(A2A_EV_GROUP_START, A2A_PRE,
           a2a_dispatch_row(&e, A2A_EV_GROUP_START, A2A_ROW_GSTART_NESTED, A2A_PRE));
  if (phase == A2A_POST) a2a_dispatch_hot(&e, A2A_EV_MEMCPY, A2A_POST);
  else a2a_dispatch_hot(&e, A2A_EV_MEMCPY, A2A_PRE);
  return g_calls;
}
#undef HOT_CASE

START_TEST(gates_skip_only_closed_handlers) {
  static const a2a_analyzer *const two[] = {&gated_a, &gated_b};
  a2a_core_set_analyzers_for_tests(two, 2);
  collector_reinit();
  atomic_store(&g_gate_a, 0);
  atomic_store(&g_gate_b, 0);
  /* Every handler gated, every gate closed: nothing is called. */
  ck_assert_str_eq(hot(A2A_EV_LAUNCH, A2A_POST), "");
  atomic_store(&g_gate_b, 1); /* one open gate: its handler runs, not the other's */
  ck_assert_str_eq(hot(A2A_EV_LAUNCH, A2A_POST), "b");
  atomic_store(&g_gate_a, 3); /* both open: both, in order */
  ck_assert_str_eq(hot(A2A_EV_LAUNCH, A2A_POST), "ab");
  atomic_store(&g_gate_b, 0); /* the other one */
  ck_assert_str_eq(hot(A2A_EV_LAUNCH, A2A_POST), "a");
  atomic_store(&g_gate_a, 0);
  atomic_store(&g_gate_b, 0);
  ck_assert_str_eq(hot(A2A_EV_LAUNCH, A2A_POST), "");
  /* The generic dispatch never skips: the handlers test their gates. */
  a2a_event l = ev_make(A2A_EV_LAUNCH);
  l.phase = A2A_POST;
  g_calls[0] = 0;
  a2a_dispatch(&l);
  ck_assert_str_eq(g_calls, "ab");
  /* A phase or kind an analyzer does not gate: never skipped. */
  ck_assert_str_eq(hot(A2A_EV_LAUNCH, A2A_PRE), "ab");
  /* An ungated handler beside a closed gate: only the gated one skipped. */
  ck_assert_str_eq(hot(A2A_EV_MEMCPY, A2A_POST), "b");
  atomic_store(&g_gate_a, 1);
  ck_assert_str_eq(hot(A2A_EV_MEMCPY, A2A_POST), "ab");
  atomic_store(&g_gate_a, 0);

  /* Gated and ungated handlers mixed, PRE: a closed gate leaves out its
   * handler only, the others keep their order; open, all of them run. */
  static const a2a_analyzer *const mixed[] = {&ungated_u, &gated_a, &ungated_v};
  a2a_core_set_analyzers_for_tests(mixed, 3);
  collector_reinit();
  atomic_store(&g_gate_a, 0);
  ck_assert_str_eq(hot(A2A_EV_MEMCPY, A2A_PRE), "uv");
  ck_assert_str_eq(hot(A2A_EV_MEMCPY, A2A_POST), "uv");
  ck_assert_str_eq(hot(A2A_EV_LAUNCH, A2A_PRE), "uav"); /* a ungated there */
  atomic_store(&g_gate_a, 2);
  ck_assert_str_eq(hot(A2A_EV_MEMCPY, A2A_PRE), "uav");
  ck_assert_str_eq(hot(A2A_EV_MEMCPY, A2A_POST), "uav");
  /* A disabled analyzer calls nothing, from either list. */
  a2a_analyzer_disable("ungated_v", "test");
  ck_assert_str_eq(hot(A2A_EV_MEMCPY, A2A_PRE), "ua");
  atomic_store(&g_gate_a, 0);
  ck_assert_str_eq(hot(A2A_EV_MEMCPY, A2A_PRE), "u");
  a2a_analyzer_disable("gated_a", "test");
  atomic_store(&g_gate_a, 1);
  ck_assert_str_eq(hot(A2A_EV_MEMCPY, A2A_PRE), "u");
  atomic_store(&g_gate_a, 0);
  a2a_core_set_analyzers_for_tests(a2a_local_analyzers, a2a_nlocal_analyzers);
  collector_reset();
}
END_TEST

/* An NCCL kind's row without a slotted gate takes its one list without
 * reading the gates (a2a_hot_row.ungated); a row with a gated handler must
 * still select by its gate - the handler runs exactly while its gate is
 * open - and so must a row whose gate opens at its analyzer's init only
 * (a2a_analyzer.gates_open_at_init_only) when the init opened it; closed
 * at init, such a gate's handlers leave the row ungated. */
static _Atomic unsigned g_gate_n, g_gate_i;
static unsigned g_init_i_opens; /* what init_i leaves in g_gate_i */
static void ev_n(const a2a_event *ev) { (void)ev; note_call('n'); }
static void ev_i(const a2a_event *ev) {
  (void)ev;
  if (atomic_load(&g_gate_i)) note_call('i'); /* its own test, as the contract asks */
}
static int init_i(void) {
  atomic_store(&g_gate_i, g_init_i_opens);
  return 0;
}
#define NK (A2A_KIND_BIT(A2A_EV_P2P) | A2A_KIND_BIT(A2A_EV_GROUP_START))
static const a2a_analyzer ungated_w = {.name = "ungated_w", .pre = NK, .post = NK, .on_event = ev_u};
static const a2a_analyzer gated_n = {.name = "gated_n", .pre = NK, .post = NK,
                                     .pre_gated = A2A_KIND_BIT(A2A_EV_P2P), .pre_gate = &g_gate_n,
                                     .post_gated = A2A_KIND_BIT(A2A_EV_P2P), .post_gate = &g_gate_n,
                                     .on_event = ev_n};
static const a2a_analyzer init_only_i = {.name = "init_only_i", .pre = NK,
                                         .pre_gated = NK, .pre_gate = &g_gate_i,
                                         .gates_open_at_init_only = true, .init = init_i,
                                         .on_event = ev_i};

START_TEST(gates_ungated_nccl_rows) {
  /* A gated handler on an NCCL kind, its gate closed when the rows are
   * built (an ordinary gate: it may open later). */
  static const a2a_analyzer *const wn[] = {&ungated_w, &gated_n};
  atomic_store(&g_gate_n, 0);
  a2a_core_set_analyzers_for_tests(wn, 2);
  collector_reinit();
  ck_assert(!a2a_hot_rows[A2A_PRE][A2A_EV_P2P].ungated);
  ck_assert(!a2a_hot_rows[A2A_POST][A2A_EV_P2P].ungated);
  ck_assert(a2a_hot_rows[A2A_PRE][A2A_ROW_GSTART_NESTED].ungated); /* gated_n gates P2P only */
  ck_assert(a2a_hot_rows[A2A_POST][A2A_ROW_GSTART_NESTED].ungated);
  ck_assert_str_eq(hot(A2A_EV_P2P, A2A_PRE), "u");
  ck_assert_str_eq(hot(A2A_EV_P2P, A2A_POST), "u");
  atomic_store(&g_gate_n, 1); /* open: its handler runs, in order */
  ck_assert_str_eq(hot(A2A_EV_P2P, A2A_PRE), "un");
  ck_assert_str_eq(hot(A2A_EV_P2P, A2A_POST), "un");
  ck_assert_str_eq(hot(A2A_EV_GROUP_START, A2A_PRE), "un");
  atomic_store(&g_gate_n, 0);
  ck_assert_str_eq(hot(A2A_EV_P2P, A2A_PRE), "u");
  ck_assert_str_eq(hot(A2A_EV_GROUP_START, A2A_POST), "un"); /* never gated there */

  /* A gate that opens at init only, closed by its init: left out, the
   * rows ungated; the generic dispatch still calls the handler, which
   * tests its gate. */
  static const a2a_analyzer *const wi[] = {&ungated_w, &init_only_i};
  g_init_i_opens = 0;
  a2a_core_set_analyzers_for_tests(wi, 2);
  collector_reinit();
  ck_assert(a2a_hot_rows[A2A_PRE][A2A_EV_P2P].ungated);
  ck_assert(a2a_hot_rows[A2A_PRE][A2A_ROW_GSTART_NESTED].ungated);
  ck_assert_str_eq(hot(A2A_EV_P2P, A2A_PRE), "u");
  ck_assert_str_eq(hot(A2A_EV_GROUP_START, A2A_PRE), "u");
  a2a_event p = ev_make(A2A_EV_P2P);
  g_calls[0] = 0;
  a2a_dispatch(&p);
  ck_assert_str_eq(g_calls, "u");
  /* Opened by its init: selected by its gate, as any gate. */
  g_init_i_opens = 1;
  collector_reinit();
  ck_assert(!a2a_hot_rows[A2A_PRE][A2A_EV_P2P].ungated);
  ck_assert(!a2a_hot_rows[A2A_PRE][A2A_ROW_GSTART_NESTED].ungated);
  ck_assert_str_eq(hot(A2A_EV_P2P, A2A_PRE), "ui");
  ck_assert_str_eq(hot(A2A_EV_GROUP_START, A2A_PRE), "ui");
  atomic_store(&g_gate_i, 0); /* closed by its handler: left out from then on */
  ck_assert_str_eq(hot(A2A_EV_P2P, A2A_PRE), "u");
  g_init_i_opens = 0;
  a2a_core_set_analyzers_for_tests(a2a_local_analyzers, a2a_nlocal_analyzers);
  collector_reset();
}
END_TEST

/* The NCCL rows' fast path (a2a_hot_row.ungated) holds only while no
 * local analyzer gates an NCCL kind with a gate that may open after init:
 * an analyzer added with such a gate would keep every result exact but
 * cost each NCCL dispatch the flag's test on top of the gate loads. */
START_TEST(no_local_analyzer_gates_an_nccl_kind_after_init) {
  for (size_t i = 0; i < a2a_nlocal_analyzers; i++) {
    const a2a_analyzer *a = a2a_local_analyzers[i];
    if (a->gates_open_at_init_only) continue;
    for (int k = 0; k < A2A_EV__COUNT; k++)
      if (a2a_kind_is_nccl((a2a_kind)k))
        ck_assert_msg(!((a->pre_gated | a->post_gated) & A2A_KIND_BIT(k)),
                      "%s gates NCCL kind %d: the NCCL rows lose their ungated path", a->name, k);
  }
}
END_TEST

/* Open handlers (a2a_analyzer.pre_open / post_open): a selection list's
 * first entry, when it is a gated handler, is its analyzer's open one (the
 * dispatcher's read of the gate is its test); a later entry, the generic
 * dispatch and a repeated launch's list call the table's, which test the
 * gate themselves. Upper case: the open handler was called. */
static void ev_A(const a2a_event *ev) { (void)ev; note_call('A'); }
static void ev_B(const a2a_event *ev) { (void)ev; note_call('B'); }
static const a2a_by_kind open_a = {.fn = {[A2A_EV_LAUNCH] = ev_A, [A2A_EV_MEMCPY] = ev_A}};
static const a2a_by_kind open_b = {.fn = {[A2A_EV_LAUNCH] = ev_B}};
/* gated_a and gated_b with open handlers (gated_a's PRE: copies only). */
static const a2a_analyzer opened_a = {.name = "opened_a", .pre = GK, .post = GK,
                                      .pre_gated = A2A_KIND_BIT(A2A_EV_MEMCPY),
                                      .pre_gate = &g_gate_a, .post_gated = GK,
                                      .post_gate = &g_gate_a, .pre_open = &open_a,
                                      .post_open = &open_a, .on_event = ev_a};
static const a2a_analyzer opened_b = {.name = "opened_b", .pre = GK, .post = GK,
                                      .post_gated = A2A_KIND_BIT(A2A_EV_LAUNCH),
                                      .post_gate = &g_gate_b, .post_open = &open_b,
                                      .on_event = ev_b};

START_TEST(open_handlers_only_first_after_an_open_read) {
  static const a2a_analyzer *const two[] = {&opened_a, &opened_b};
  a2a_core_set_analyzers_for_tests(two, 2);
  collector_reinit();
  atomic_store(&g_gate_a, 0);
  atomic_store(&g_gate_b, 0);
  ck_assert_str_eq(hot(A2A_EV_LAUNCH, A2A_POST), "");
  atomic_store(&g_gate_b, 1);
  ck_assert_str_eq(hot(A2A_EV_LAUNCH, A2A_POST), "B"); /* first: open */
  atomic_store(&g_gate_a, 1);
  ck_assert_str_eq(hot(A2A_EV_LAUNCH, A2A_POST), "Ab"); /* b after a: the table's */
  atomic_store(&g_gate_b, 0);
  ck_assert_str_eq(hot(A2A_EV_LAUNCH, A2A_POST), "A");
  /* A PRE copy: a gated there (its open one), b not (the table's). */
  ck_assert_str_eq(hot(A2A_EV_MEMCPY, A2A_PRE), "Ab");
  /* A kind the phase does not gate: the table's, though pre_open has one. */
  ck_assert_str_eq(hot(A2A_EV_LAUNCH, A2A_PRE), "ab");
  /* The generic dispatch: the table's, gate open or not. */
  a2a_event l = ev_make(A2A_EV_LAUNCH);
  l.phase = A2A_POST;
  g_calls[0] = 0;
  a2a_dispatch(&l);
  ck_assert_str_eq(g_calls, "ab");
  atomic_store(&g_gate_a, 0);
  g_calls[0] = 0;
  a2a_dispatch(&l);
  ck_assert_str_eq(g_calls, "ab");
  /* The other order: b first. */
  static const a2a_analyzer *const rev[] = {&opened_b, &opened_a};
  a2a_core_set_analyzers_for_tests(rev, 2);
  collector_reinit();
  atomic_store(&g_gate_a, 1);
  atomic_store(&g_gate_b, 1);
  ck_assert_str_eq(hot(A2A_EV_LAUNCH, A2A_POST), "Ba");
  atomic_store(&g_gate_b, 0);
  ck_assert_str_eq(hot(A2A_EV_LAUNCH, A2A_POST), "A");
  /* After an ungated handler: the table's. */
  static const a2a_analyzer *const mixed[] = {&ungated_u, &opened_a, &ungated_v};
  a2a_core_set_analyzers_for_tests(mixed, 3);
  collector_reinit();
  ck_assert_str_eq(hot(A2A_EV_MEMCPY, A2A_PRE), "uav");
  ck_assert_str_eq(hot(A2A_EV_MEMCPY, A2A_POST), "uav");
  atomic_store(&g_gate_a, 0);
  ck_assert_str_eq(hot(A2A_EV_MEMCPY, A2A_PRE), "uv");
  /* A disabled analyzer's open handler calls nothing either. */
  a2a_core_set_analyzers_for_tests(two, 2);
  collector_reinit();
  atomic_store(&g_gate_a, 1);
  a2a_analyzer_disable("opened_a", "test");
  ck_assert_str_eq(hot(A2A_EV_LAUNCH, A2A_POST), "");
  ck_assert_str_eq(hot(A2A_EV_MEMCPY, A2A_PRE), "b");
  atomic_store(&g_gate_a, 0);
  a2a_core_set_analyzers_for_tests(a2a_local_analyzers, a2a_nlocal_analyzers);
  collector_reset();
}
END_TEST

/* A repeated launch's list reads no gate: a gated launch PRE handler there
 * is the table's, which tests its gate, though the same analyzer's open
 * one answers the launch's first PRE. */
static const a2a_analyzer opened_launch_pre = {
    .name = "opened_launch_pre", .pre = A2A_KIND_BIT(A2A_EV_LAUNCH),
    .pre_gated = A2A_KIND_BIT(A2A_EV_LAUNCH), .pre_gate = &g_gate_a, .pre_open = &open_a,
    .on_event = ev_a};

START_TEST(open_handler_not_in_repeated_launch_list) {
  static const a2a_analyzer *const one[] = {&opened_launch_pre};
  collector_use_with_activity(one, 1);
  atomic_store(&g_gate_a, 1);
  static char k;
  void *p = NULL, *args[] = {&p};
  g_calls[0] = 0;
  ck_assert(collector_hot_launch((void *)0x5100, 0, &k, args)); /* marked: nothing unquiet */
  ck_assert_str_eq(g_calls, "A");
  g_calls[0] = 0;
  collector_hot_launch((void *)0x5100, 0, &k, args); /* the repeat's list */
  ck_assert_str_eq(g_calls, "a");
  atomic_store(&g_gate_a, 0);
  a2a_core_set_analyzers_for_tests(a2a_local_analyzers, a2a_nlocal_analyzers);
  collector_reset();
}
END_TEST

/* Repeated launches (a2a_note_launch): a launch's PRE leaves out the
 * quiet analyzers' handlers (a2a_analyzer.launch_quiet) only when it
 * repeats the thread's previous dispatched call - the same function on the
 * same stream and per_thread - and none of them said otherwise
 * (a2a_launch_unquiet); any other dispatched call of the thread in
 * between, a re-initialization or a fork forgets the mark. Only while the
 * activity is stored (a wants_activity analyzer runs). */
static bool g_q_unquiet; /* ev_q says "not quiet" */
static void ev_q(const a2a_event *ev) {
  note_call('q');
  if (g_q_unquiet) a2a_launch_unquiet(ev->thread);
}
static const a2a_analyzer quiet_q = {.name = "quiet_q", .pre = GK, .post = GK,
                                     .launch_quiet = true, .on_event = ev_q};
static const a2a_analyzer active_w = {.name = "active_w", .pre = GK, .post = GK,
                                      .wants_activity = true, .on_event = ev_v};
/* Quiet too, and it reads the activity (so that the marks are kept). */
static void ev_k(const a2a_event *ev) { (void)ev; note_call('k'); }
static const a2a_analyzer quiet_k = {.name = "quiet_k", .pre = GK, .post = GK,
                                     .launch_quiet = true, .wants_activity = true,
                                     .on_event = ev_k};
static void *g_l_stream = (void *)0x5000;
static const void *g_l_func = (const void *)0x7000;
static int g_l_pt;
static uint32_t g_l_thread = 1;
/* The letters of a hot launch PRE (g_l_*'s stream, function, thread). */
static const char *launch_pre(void) {
  a2a_event e = ev_make(A2A_EV_LAUNCH);
  e.thread = g_l_thread;
  e.stream = g_l_stream;
  e.per_thread = g_l_pt;
  e.u.launch.func = g_l_func;
  g_calls[0] = 0;
  a2a_dispatch_hot(&e, A2A_EV_LAUNCH, A2A_PRE);
  return g_calls;
}

/* A repeated launch whose thread has work deferred (a2a_set_flush_hook):
 * the hook runs first, then the full repeat test, which sees what the
 * hook left (a2a_note_launch's one load of flush and mark falls back to
 * it). */
static void unquiet_flush(uint32_t thread) {
  g_flushes++;
  a2a_launch_unquiet(thread);
}
START_TEST(repeated_launch_with_deferred_work) {
  static const a2a_analyzer *const two[] = {&quiet_q, &active_w};
  a2a_core_set_analyzers_for_tests(two, 2);
  collector_reinit();
  g_q_unquiet = false;
  g_flushes = 0;
  a2a_set_flush_hook(count_flush);
  ck_assert_str_eq(launch_pre(), "qv");
  ck_assert_str_eq(launch_pre(), "v");
  /* Work deferred, the mark left alone by the hook: still a repeat. */
  ck_assert(a2a_thread_want_flush(g_l_thread));
  ck_assert_str_eq(launch_pre(), "v");
  ck_assert_int_eq(g_flushes, 1);
  ck_assert_str_eq(launch_pre(), "v");
  ck_assert_int_eq(g_flushes, 1);
  /* A hook that clears the mark: the quiet handler runs again. */
  a2a_set_flush_hook(unquiet_flush);
  ck_assert(a2a_thread_want_flush(g_l_thread));
  ck_assert_str_eq(launch_pre(), "qv");
  ck_assert_int_eq(g_flushes, 2);
  ck_assert_str_eq(launch_pre(), "v");
  /* Deferred work on a launch that is no repeat: flushed, not skipped. */
  ck_assert(a2a_thread_want_flush(g_l_thread));
  g_l_pt = 1;
  ck_assert_str_eq(launch_pre(), "qv");
  ck_assert_int_eq(g_flushes, 3);
  g_l_pt = 0;
  a2a_set_flush_hook(NULL);
  a2a_core_set_analyzers_for_tests(a2a_local_analyzers, a2a_nlocal_analyzers);
}
END_TEST

START_TEST(repeated_launch_skips_quiet_handlers_only) {
  static const a2a_analyzer *const two[] = {&quiet_q, &active_w};
  a2a_core_set_analyzers_for_tests(two, 2);
  collector_reinit();
  g_q_unquiet = false;
  ck_assert_str_eq(launch_pre(), "qv");
  ck_assert_str_eq(launch_pre(), "v"); /* the same launch again */
  ck_assert_str_eq(launch_pre(), "v");
  /* The launch's own POST changes nothing. */
  ck_assert_str_eq(hot(A2A_EV_LAUNCH, A2A_POST), "qv");
  ck_assert_str_eq(launch_pre(), "v");
  /* Another stream, function or per_thread: not a repeat. */
  g_l_stream = (void *)0x5100;
  ck_assert_str_eq(launch_pre(), "qv");
  ck_assert_str_eq(launch_pre(), "v");
  g_l_func = (const void *)0x7100;
  ck_assert_str_eq(launch_pre(), "qv");
  ck_assert_str_eq(launch_pre(), "v");
  g_l_stream = NULL;
  ck_assert_str_eq(launch_pre(), "qv");
  g_l_pt = 1;
  ck_assert_str_eq(launch_pre(), "qv");
  ck_assert_str_eq(launch_pre(), "v");
  /* Any other call of the thread in between: hot, generic PRE, or a
   * POST-only event through a2a_dispatch. */
  ck_assert_str_eq(hot(A2A_EV_MEMCPY, A2A_PRE), "qv");
  ck_assert_str_eq(launch_pre(), "qv");
  a2a_event o = ev_make(A2A_EV_STREAM_SYNC);
  a2a_dispatch(&o);
  ck_assert_str_eq(launch_pre(), "qv");
  ck_assert_str_eq(launch_pre(), "v");
  a2a_event x = ev_make(A2A_EV_PROCESS_EXIT);
  x.phase = A2A_POST;
  a2a_dispatch(&x);
  ck_assert_str_eq(launch_pre(), "qv");
  /* Another thread's calls do not matter; its own launch is its own. */
  g_l_thread = 2;
  ck_assert_str_eq(launch_pre(), "qv");
  a2a_event t2 = ev_make(A2A_EV_STREAM_SYNC);
  t2.thread = 2;
  a2a_dispatch(&t2);
  g_l_thread = 1;
  ck_assert_str_eq(launch_pre(), "v");
  /* A quiet handler that says otherwise is called again. */
  g_q_unquiet = true;
  g_l_func = (const void *)0x7200;
  ck_assert_str_eq(launch_pre(), "qv");
  ck_assert_str_eq(launch_pre(), "qv");
  g_q_unquiet = false;
  ck_assert_str_eq(launch_pre(), "qv");
  ck_assert_str_eq(launch_pre(), "v");
  /* The generic dispatch never skips, and forgets the mark. */
  a2a_event g = ev_make(A2A_EV_LAUNCH);
  g.stream = g_l_stream;
  g.per_thread = g_l_pt;
  g.u.launch.func = g_l_func;
  g_calls[0] = 0;
  a2a_dispatch(&g);
  ck_assert_str_eq(g_calls, "qv");
  ck_assert_str_eq(launch_pre(), "qv");
  /* A fork's child and a re-initialization forget every mark. */
  ck_assert_str_eq(launch_pre(), "v");
  a2a_core_after_fork_child();
  ck_assert_str_eq(launch_pre(), "qv");
  collector_reinit();
  ck_assert_str_eq(launch_pre(), "qv");
  ck_assert_str_eq(launch_pre(), "v");
  /* A disabled analyzer calls nothing from either list. */
  a2a_analyzer_disable("active_w", "test");
  ck_assert_str_eq(launch_pre(), "");
  g_l_func = (const void *)0x7300;
  ck_assert_str_eq(launch_pre(), "q");
  ck_assert_str_eq(launch_pre(), "");
  a2a_analyzer_disable("quiet_q", "test");
  g_l_func = (const void *)0x7400;
  ck_assert_str_eq(launch_pre(), "");
  /* Every launch PRE handler quiet: a repeat's list is empty (the
   * dispatcher's early return), any other launch calls them all. */
  static const a2a_analyzer *const all_quiet[] = {&quiet_q, &quiet_k};
  a2a_core_set_analyzers_for_tests(all_quiet, 2);
  collector_reinit();
  ck_assert_str_eq(launch_pre(), "qk");
  ck_assert_str_eq(launch_pre(), "");
  g_l_func = (const void *)0x7500;
  ck_assert_str_eq(launch_pre(), "qk");
  ck_assert_str_eq(launch_pre(), "");
  ck_assert_str_eq(hot(A2A_EV_LAUNCH, A2A_POST), "qk");
  ck_assert_str_eq(launch_pre(), "");
  /* Without stored activity the mark is never used. */
  static const a2a_analyzer *const one[] = {&quiet_q};
  a2a_core_set_analyzers_for_tests(one, 1);
  collector_reinit();
  ck_assert_str_eq(launch_pre(), "q");
  ck_assert_str_eq(launch_pre(), "q");
  g_l_stream = (void *)0x5000;
  g_l_func = (const void *)0x7000;
  g_l_pt = 0;
  a2a_core_set_analyzers_for_tests(a2a_local_analyzers, a2a_nlocal_analyzers);
  collector_reset();
}
END_TEST

/* The queued-copy row (A2A_ROW_QCOPY): at PRE the copy row without the
 * analyzers that skip a queued copy's PRE, the others in order, gates
 * included; at POST the copy row. A disabled analyzer calls nothing from
 * it either. */
static void ev_s(const a2a_event *ev) { (void)ev; note_call('s'); }
static const a2a_analyzer skip_s = {.name = "skip_s", .pre = GK, .post = GK,
                                    .pre_skips_queued_copy = true, .on_event = ev_s};
static const char *qcopy(a2a_phase phase) {
  a2a_event e = ev_make(A2A_EV_MEMCPY);
  e.phase = phase;
  e.u.copy.async = 1;
  e.u.copy.cpykind = A2A_CPY_D2D;
  ck_assert(a2a_copy_queued(&e));
  g_calls[0] = 0;
  if (phase == A2A_PRE) a2a_dispatch_row(&e, A2A_EV_MEMCPY, A2A_ROW_QCOPY, A2A_PRE);
  else a2a_dispatch_row(&e, A2A_EV_MEMCPY, A2A_ROW_QCOPY, A2A_POST);
  return g_calls;
}

START_TEST(queued_copy_row_skips_only_its_skippers) {
  static const a2a_analyzer *const list[] = {&ungated_u, &skip_s, &gated_a, &ungated_v};
  a2a_core_set_analyzers_for_tests(list, 4);
  collector_reinit();
  atomic_store(&g_gate_a, 0);
  ck_assert_str_eq(qcopy(A2A_PRE), "uv");
  ck_assert_str_eq(hot(A2A_EV_MEMCPY, A2A_PRE), "usv"); /* the copy row keeps it */
  ck_assert_str_eq(qcopy(A2A_POST), "usv");
  atomic_store(&g_gate_a, 1);
  ck_assert_str_eq(qcopy(A2A_PRE), "uav");
  ck_assert_str_eq(qcopy(A2A_POST), "usav");
  /* Which copies are queued: asynchronous, not device-to-host, not Default. */
  a2a_event e = ev_make(A2A_EV_MEMCPY);
  static const int queued[5] = {1, 1, 0, 1, 0}; /* H2H, H2D, D2H, D2D, Default */
  for (int k = 0; k < 5; k++) {
    e.u.copy.cpykind = k;
    e.u.copy.async = 1;
    ck_assert_int_eq(a2a_copy_queued(&e) != 0, queued[k]);
    e.u.copy.async = 0;
    ck_assert(!a2a_copy_queued(&e));
  }
  a2a_analyzer_disable("ungated_v", "test");
  ck_assert_str_eq(qcopy(A2A_PRE), "ua");
  ck_assert_str_eq(qcopy(A2A_POST), "usa");
  atomic_store(&g_gate_a, 0);
  ck_assert_str_eq(qcopy(A2A_PRE), "u");
  a2a_core_set_analyzers_for_tests(a2a_local_analyzers, a2a_nlocal_analyzers);
  collector_reset();
}
END_TEST

/* group_local's gate (g_groups_open) through the hot dispatch, with the
 * real analyzers: outside any group a copy's and an event record's PRE
 * skip it; inside the calling thread's group they must reach it - a
 * blocking copy of the pending receive buffer, and an event recorded after
 * the receive then synchronized, are group.sync-in-group. */
static void hot_pre_post(a2a_event *e, a2a_kind kind) {
  e->phase = A2A_PRE;
  if (kind == A2A_EV_MEMCPY) a2a_dispatch_hot(e, A2A_EV_MEMCPY, A2A_PRE);
  else a2a_dispatch_hot(e, A2A_EV_EVENT_RECORD, A2A_PRE);
  e->phase = A2A_POST;
  a2a_event_set_result(e, 0);
  if (kind == A2A_EV_MEMCPY) a2a_dispatch_hot(e, A2A_EV_MEMCPY, A2A_POST);
  else a2a_dispatch_hot(e, A2A_EV_EVENT_RECORD, A2A_POST);
}
static void gl_group(a2a_kind k) {
  a2a_event e = ev_make(k);
  e.api = k == A2A_EV_GROUP_START ? "ncclGroupStart" : "ncclGroupEnd";
  ev_dispatch(&e, 0);
}
static void gl_recv(void *comm, uintptr_t buf) {
  a2a_event e = ev_make(A2A_EV_P2P);
  e.api = "ncclRecv";
  e.comm = comm;
  e.stream = (void *)0x5a00;
  e.u.p2p.buff = (void *)buf;
  e.u.p2p.count = 16;
  e.u.p2p.dtype = 7; /* ncclFloat32 */
  e.u.p2p.peer = 1;
  ev_dispatch(&e, 0);
}
static void gl_copy_from(uintptr_t src) {
  a2a_event e = ev_make(A2A_EV_MEMCPY);
  e.api = "cudaMemcpy";
  e.u.copy.dst = (void *)0x7000;
  e.u.copy.src = (const void *)src;
  e.u.copy.bytes = e.u.copy.width = 4;
  e.u.copy.height = 1;
  e.u.copy.cpykind = A2A_CPY_D2H;
  hot_pre_post(&e, A2A_EV_MEMCPY);
}

START_TEST(group_gate_lets_own_group_through) {
  collector_reinit();
  enum { PRE = 0 }; /* the tables' index of the PRE phase */
  ck_assert_ptr_nonnull(a2a_hot_rows[PRE][A2A_EV_MEMCPY].gate[0]);
  ck_assert_ptr_nonnull(a2a_hot_rows[PRE][A2A_EV_EVENT_RECORD].gate[0]);
  ck_assert_uint_eq(atomic_load(a2a_hot_rows[PRE][A2A_EV_MEMCPY].gate[0]), 0); /* no group open */
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  uintptr_t recv = 0x20000000u;
  gl_copy_from(recv + 4); /* no group: nothing to say */
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
  gl_group(A2A_EV_GROUP_START);
  ck_assert_uint_ne(atomic_load(a2a_hot_rows[PRE][A2A_EV_MEMCPY].gate[0]), 0);
  gl_recv(comm, recv);
  gl_copy_from(recv + 4); /* blocking read of the pending receive */
  ck_assert_uint_eq(collector_count("group.sync-in-group"), 1);
  gl_group(A2A_EV_GROUP_END);
  ck_assert_uint_eq(atomic_load(a2a_hot_rows[PRE][A2A_EV_MEMCPY].gate[0]), 0);

  /* An event record after the receive, then its synchronization. */
  collector_reset();
  comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  gl_group(A2A_EV_GROUP_START);
  gl_recv(comm, recv);
  a2a_event r = ev_make(A2A_EV_EVENT_RECORD);
  r.api = "cudaEventRecord";
  r.stream = (void *)0x5a00;
  r.u.event.event = (void *)0xe100;
  hot_pre_post(&r, A2A_EV_EVENT_RECORD);
  a2a_event s = ev_make(A2A_EV_EVENT_SYNC);
  s.api = "cudaEventSynchronize";
  s.u.event.event = (void *)0xe100;
  ev_dispatch(&s, 0);
  ck_assert_uint_eq(collector_count("group.sync-in-group"), 1);
  gl_group(A2A_EV_GROUP_END);
  collector_reset();
}
END_TEST

START_TEST(event_result_facts) {
  a2a_event e = ev_make(A2A_EV_COMM_INIT);
  a2a_event_set_result(&e, A2A_NCCL_IN_PROGRESS);
  ck_assert(e.ok && e.in_progress);
  a2a_event k = ev_make(A2A_EV_STREAM_QUERY);
  a2a_event_set_result(&k, 7); /* a CUDA error code, not ncclInProgress */
  ck_assert(!k.ok && !k.in_progress);
  a2a_event_set_result(&k, 0);
  ck_assert(k.ok);
}
END_TEST

START_TEST(comm_registry_identity) {
  void *c1 = init_comm((void *)0x100, id_a, 4, 1, 1);
  void *c2 = init_comm((void *)0x200, id_a, 4, 1, 1);
  void *c3 = init_comm((void *)0x300, id_b, 4, 1, 1);
  a2a_comm *r1 = a2a_comm_lookup(c1), *r2 = a2a_comm_lookup(c2), *r3 = a2a_comm_lookup(c3);
  ck_assert_ptr_nonnull(r1);
  ck_assert_ptr_nonnull(r3);
  ck_assert_uint_eq(r1->id_hash, r2->id_hash); /* same id: same comm across ranks */
  ck_assert_uint_ne(r1->id_hash, r3->id_hash);
  ck_assert_int_eq(r1->nranks, 4);
  ck_assert_int_eq(r1->device, 1);
  ck_assert_uint_eq(r1->serial, 1);
  ck_assert_uint_eq(r3->serial, 3);
  ck_assert_ptr_null(a2a_comm_lookup((void *)0x999));
  ck_assert_ptr_null(a2a_comm_lookup(NULL));
}
END_TEST

START_TEST(split_identity_follows_sequence_and_color) {
  /* Two "ranks" (two parents with the same id) split twice each: the k-th
   * split with the same color names the same comm; NOCOLOR consumes a seq. */
  void *p0 = init_comm((void *)0x10, id_a, 2, 0, 0);
  void *p1 = init_comm((void *)0x20, id_a, 2, 1, 1);
  split(p0, (void *)0x11, 7, 2, 0);
  split(p1, (void *)0x21, 7, 2, 1);
  split(p0, NULL, -1, 0, 0);           /* NCCL_SPLIT_NOCOLOR on rank 0 */
  split(p1, NULL, -1, 0, 0);
  split(p0, (void *)0x12, 7, 1, 0);
  split(p1, (void *)0x22, 8, 1, 0);    /* different color: different comm */
  a2a_comm *a = a2a_comm_lookup((void *)0x11), *b = a2a_comm_lookup((void *)0x21);
  ck_assert_ptr_nonnull(a);
  ck_assert_uint_eq(a->id_hash, b->id_hash);
  ck_assert_ptr_eq(a->parent, a2a_comm_lookup(p0));
  ck_assert_uint_eq(a2a_comm_lookup((void *)0x12)->split_index, 2);
  ck_assert_uint_ne(a2a_comm_lookup((void *)0x12)->id_hash, a2a_comm_lookup((void *)0x22)->id_hash);
  ck_assert_uint_ne(a->id_hash, a2a_comm_lookup((void *)0x12)->id_hash);
}
END_TEST

/* A split inside a group, not yet queryable (size -1, the event's device
 * the thread's current one): the child is on its parent's device; one
 * queried after the call keeps what the query said. */
START_TEST(split_in_a_group_is_on_its_parents_device) {
  void *p = init_comm((void *)0x30, id_a, 2, 0, 1);
  a2a_event ev = ev_make(A2A_EV_COMM_INIT);
  ev.device = 3;
  ev.u.init.how = A2A_INIT_SPLIT;
  ev.u.init.parent = p;
  ev.u.init.color = 0;
  ev.u.init.nranks = ev.u.init.rank = -1;
  ev.u.init.device = 3;
  ev_pre(&ev);
  ev.u.init.newcomm = (void *)0x31;
  ev_post(&ev, 0);
  ck_assert_int_eq(a2a_comm_lookup((void *)0x31)->device, 1);
  split(p, (void *)0x32, 0, 2, 0); /* queried: nranks known, device 0 as the event says */
  ck_assert_int_eq(a2a_comm_lookup((void *)0x32)->device, 0);
}
END_TEST

START_TEST(comm_end_sets_state_and_handle_reuse_replaces) {
  void *c = init_comm((void *)0x100, id_a, 2, 0, 0);
  a2a_event ev = ev_make(A2A_EV_COMM_END);
  ev.comm = c;
  ev.u.end.how = A2A_END_DESTROY;
  ev_dispatch(&ev, 0);
  ck_assert_int_eq(a2a_comm_lookup(c)->state, A2A_COMM_DESTROYED);
  init_comm((void *)0x100, id_b, 2, 0, 0);  /* NCCL reused the address */
  ck_assert_int_eq(a2a_comm_lookup(c)->state, A2A_COMM_ACTIVE);
  ck_assert_uint_eq(a2a_comm_lookup(c)->serial, 2);
}
END_TEST

/* The lookup's per-thread memo (a2a_comm_memo): the last answer inline,
 * A2A_COMM_MEMO_WAYS recent ones out of line, all discarded by an insertion.
 * A thread driving several communicators in turn is answered from the ways;
 * these tests alternate among that many and more, and check every answer
 * against the record the table holds. */
#define NALT (A2A_COMM_MEMO_WAYS + 2)

static void comm_end(void *h, a2a_end_how how) {
  a2a_event ev = ev_make(A2A_EV_COMM_END);
  ev.comm = h;
  ev.u.end.how = how;
  ev_dispatch(&ev, 0);
}

/* Looks each handle up twice in a row (the second is the inline answer)
 * for a few rounds, and checks it is want[i]. */
static void alternate(void *const *h, a2a_comm *const *want, int n) {
  for (int round = 0; round < 3; round++)
    for (int i = 0; i < n; i++) {
      ck_assert_ptr_eq(a2a_comm_lookup(h[i]), want[i]);
      ck_assert_ptr_eq(a2a_comm_lookup(h[i]), want[i]);
    }
}

/* Creates a communicator at handle h on another thread (whose lookups
 * fill its own memo, not this thread's). */
static void *init_comm_thread(void *h) {
  init_comm(h, id_b, 2, 0, 0);
  return NULL;
}

static void init_comm_elsewhere(void *h) {
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, init_comm_thread, h), 0);
  pthread_join(th, NULL);
}

START_TEST(comm_memo_alternation_sees_destroy_and_reuse) {
  void *h[A2A_COMM_MEMO_WAYS];
  a2a_comm *r[A2A_COMM_MEMO_WAYS];
  for (int i = 0; i < A2A_COMM_MEMO_WAYS; i++) {
    h[i] = init_comm((void *)(uintptr_t)(0x1000 + 0x40 * i), i % 2 ? id_b : id_a, 4, i, i);
    r[i] = a2a_comm_lookup(h[i]);
    ck_assert_ptr_nonnull(r[i]);
    ck_assert_ptr_eq(r[i]->handle, h[i]);
    ck_assert_uint_eq(r[i]->serial, (unsigned)i + 1);
  }
  alternate(h, r, A2A_COMM_MEMO_WAYS);
  /* A destroy changes the record's state: the memo's answer shows it. */
  comm_end(h[1], A2A_END_DESTROY);
  ck_assert_ptr_eq(a2a_comm_lookup(h[2]), r[2]);
  ck_assert_int_eq(a2a_comm_lookup(h[1])->state, A2A_COMM_DESTROYED);
  alternate(h, r, A2A_COMM_MEMO_WAYS);
  /* NCCL reuses the address (on another thread) while every handle sits
   * in a way and another is the last answer: the new record must answer,
   * at once and after. */
  ck_assert_ptr_eq(a2a_comm_lookup(h[3]), r[3]);
  init_comm_elsewhere(h[1]);
  /* Another handle first: the memo must not keep h[1]'s old answer for
   * the next miss to find. */
  ck_assert_ptr_eq(a2a_comm_lookup(h[2]), r[2]);
  a2a_comm *fresh = a2a_comm_lookup(h[1]);
  ck_assert_ptr_ne(fresh, r[1]);
  ck_assert_uint_eq(fresh->serial, A2A_COMM_MEMO_WAYS + 1);
  ck_assert_int_eq(fresh->state, A2A_COMM_ACTIVE);
  ck_assert_int_eq(r[1]->state, A2A_COMM_DESTROYED); /* the old one stays readable */
  r[1] = fresh;
  alternate(h, r, A2A_COMM_MEMO_WAYS);
  /* The same again for the last answer itself (the inline check), on
   * this thread. */
  comm_end(h[0], A2A_END_ABORT);
  ck_assert_int_eq(a2a_comm_lookup(h[0])->state, A2A_COMM_ABORTED);
  init_comm(h[0], id_a, 2, 1, 1);
  ck_assert_uint_eq(a2a_comm_lookup(h[0])->serial, A2A_COMM_MEMO_WAYS + 2);
  ck_assert_int_eq(a2a_comm_lookup(h[0])->state, A2A_COMM_ACTIVE);
}
END_TEST

START_TEST(comm_memo_forgets_misses_on_insertion_by_other_threads) {
  /* A handle the registry does not know is answered NULL, and that answer
   * is remembered like any other; another thread creates it. */
  void *h[A2A_COMM_MEMO_WAYS];
  a2a_comm *r[A2A_COMM_MEMO_WAYS];
  void *unknown = (void *)0x7000;
  for (int i = 0; i < A2A_COMM_MEMO_WAYS - 1; i++) {
    h[i] = init_comm((void *)(uintptr_t)(0x2000 + 0x40 * i), id_a, 4, i, 0);
    r[i] = a2a_comm_lookup(h[i]);
  }
  h[A2A_COMM_MEMO_WAYS - 1] = unknown;
  r[A2A_COMM_MEMO_WAYS - 1] = NULL;
  alternate(h, r, A2A_COMM_MEMO_WAYS);
  ck_assert_ptr_eq(a2a_comm_lookup(h[0]), r[0]); /* unknown: in a way, not last */
  init_comm_elsewhere(unknown);
  ck_assert_ptr_eq(a2a_comm_lookup(h[1]), r[1]); /* another handle first */
  a2a_comm *c = a2a_comm_lookup(unknown);
  ck_assert_ptr_nonnull(c);
  ck_assert_ptr_eq(c->handle, unknown);
  r[A2A_COMM_MEMO_WAYS - 1] = c;
  alternate(h, r, A2A_COMM_MEMO_WAYS);
}
END_TEST

START_TEST(comm_memo_more_comms_than_ways) {
  /* More communicators in turn than the memo holds: each lookup evicts
   * one; every answer is still the table's. Then fewer again. */
  void *h[NALT];
  a2a_comm *r[NALT];
  for (int i = 0; i < NALT; i++) {
    h[i] = init_comm((void *)(uintptr_t)(0x3000 + 0x40 * i), id_a, NALT, i, i);
    r[i] = a2a_comm_lookup(h[i]);
    ck_assert_uint_eq(r[i]->rank, i);
  }
  alternate(h, r, NALT);
  for (int i = NALT - 1; i >= 0; i--) ck_assert_ptr_eq(a2a_comm_lookup(h[i]), r[i]);
  alternate(h + 1, r + 1, A2A_COMM_MEMO_WAYS);
  alternate(h, r, 2);
}
END_TEST

/* a2a_comm_lookup_memo: the memo's answer inline (the last one or a
 * way's, which becomes the last, as a2a_comm_lookup_slow makes it), else
 * NULL without a change. A thread alternating among A2A_COMM_MEMO_WAYS
 * communicators is answered for each, exactly the table's record, and a
 * fast path that follows it with a2a_comm_lookup_last finds the same;
 * every answer goes with an insertion (another thread's), a destroy shows
 * in the record's state, and a handle reused for a new communicator
 * answers the new record. */
START_TEST(comm_memo_inline_answers_as_the_lookup) {
  void *h[A2A_COMM_MEMO_WAYS];
  a2a_comm *r[A2A_COMM_MEMO_WAYS];
  for (int i = 0; i < A2A_COMM_MEMO_WAYS; i++)
    h[i] = init_comm((void *)(uintptr_t)(0x4000 + 0x40 * i), i % 2 ? id_b : id_a, 4, i, i);
  for (int i = 0; i < A2A_COMM_MEMO_WAYS; i++) {
    r[i] = a2a_comm_lookup(h[i]);
    ck_assert_ptr_nonnull(r[i]);
    ck_assert_ptr_eq(r[i]->handle, h[i]);
  }
  ck_assert_ptr_null(a2a_comm_lookup_memo(NULL));
  for (int round = 0; round < 3; round++)
    for (int i = 0; i < A2A_COMM_MEMO_WAYS; i++) {
      ck_assert_ptr_null(a2a_comm_lookup_last(h[i])); /* another's is the last answer */
      ck_assert_ptr_eq(a2a_comm_lookup_memo(h[i]), r[i]);
      ck_assert_ptr_eq(a2a_comm_lookup_last(h[i]), r[i]); /* now the last answer */
      ck_assert_ptr_eq(a2a_comm_lookup_memo(h[i]), r[i]);
      ck_assert_ptr_eq(a2a_comm_lookup(h[i]), r[i]);
    }
  /* A handle the memo does not hold: NULL, and the last answer stays. */
  void *const unknown = (void *)0x7100;
  ck_assert_ptr_null(a2a_comm_lookup_memo(unknown));
  ck_assert_ptr_eq(a2a_comm_lookup_last(h[A2A_COMM_MEMO_WAYS - 1]), r[A2A_COMM_MEMO_WAYS - 1]);
  /* A destroy: the same record, its state changed. */
  comm_end(h[1], A2A_END_DESTROY);
  ck_assert_ptr_eq(a2a_comm_lookup_memo(h[1]), r[1]);
  ck_assert_int_eq(a2a_comm_lookup_memo(h[1])->state, A2A_COMM_DESTROYED);
  /* NCCL reuses h[1] for a new communicator, on another thread: nothing
   * the memo holds answers any more; the lookups answer the new record. */
  ck_assert_ptr_eq(a2a_comm_lookup_memo(h[2]), r[2]);
  init_comm_elsewhere(h[1]);
  for (int i = 0; i < A2A_COMM_MEMO_WAYS; i++) ck_assert_ptr_null(a2a_comm_lookup_memo(h[i]));
  ck_assert_ptr_null(a2a_comm_lookup_last(h[2]));
  a2a_comm *fresh = a2a_comm_lookup(h[1]);
  ck_assert_ptr_ne(fresh, r[1]);
  ck_assert_int_eq(fresh->state, A2A_COMM_ACTIVE);
  r[1] = fresh;
  for (int i = 0; i < A2A_COMM_MEMO_WAYS; i++) ck_assert_ptr_eq(a2a_comm_lookup(h[i]), r[i]);
  for (int i = A2A_COMM_MEMO_WAYS - 1; i >= 0; i--) ck_assert_ptr_eq(a2a_comm_lookup_memo(h[i]), r[i]);
  /* A NULL answer (an unknown handle) is kept like any other: the memo
   * answers NULL for it, a2a_comm_lookup's own answer. */
  ck_assert_ptr_null(a2a_comm_lookup(unknown));
  ck_assert_ptr_null(a2a_comm_lookup_memo(unknown));
  ck_assert_ptr_eq(a2a_comm_lookup_memo(h[3]), r[3]);
}
END_TEST

/* a2a_comm_lookup_last(NULL) is NULL whatever the thread's memo holds
 * (a fast path looks a handle up with it without testing the handle for
 * NULL first): on a thread that looked nothing up, after lookups and way
 * hits, after lookups of NULL, after a newer version. */
static void *memo_null_fresh(void *arg) {
  (void)arg;
  return a2a_comm_lookup_last(NULL);
}
START_TEST(comm_memo_last_answer_for_null_is_null) {
  void *h[A2A_COMM_MEMO_WAYS + 1];
  for (int i = 0; i <= A2A_COMM_MEMO_WAYS; i++)
    h[i] = init_comm((void *)(uintptr_t)(0x4800 + 0x40 * i), i % 2 ? id_b : id_a, 4, i, i);
  pthread_t th;
  void *got = (void *)1;
  ck_assert_int_eq(pthread_create(&th, NULL, memo_null_fresh, NULL), 0);
  ck_assert_int_eq(pthread_join(th, &got), 0);
  ck_assert_ptr_null(got);
  for (int round = 0; round < 2; round++)
    for (int i = 0; i <= A2A_COMM_MEMO_WAYS; i++) {
      ck_assert_ptr_nonnull(a2a_comm_lookup(h[i]));
      ck_assert_ptr_null(a2a_comm_lookup_last(NULL));
      (void)a2a_comm_lookup_memo(h[(i + 3) % (A2A_COMM_MEMO_WAYS + 1)]); /* a way's hit, or none */
      ck_assert_ptr_null(a2a_comm_lookup_last(NULL));
      ck_assert_ptr_null(a2a_comm_lookup(NULL));
      ck_assert_ptr_null(a2a_comm_lookup_memo(NULL));
      ck_assert_ptr_null(a2a_comm_lookup_last(NULL));
    }
  init_comm_elsewhere(h[1]); /* a newer version */
  ck_assert_ptr_null(a2a_comm_lookup_last(NULL));
  ck_assert_ptr_nonnull(a2a_comm_lookup(h[2]));
  ck_assert_ptr_null(a2a_comm_lookup_last(NULL));
}
END_TEST

static void alloc(uintptr_t p, size_t n, int dev) {
  a2a_event ev = ev_make(A2A_EV_ALLOC);
  ev.device = dev;
  ev.u.mem.mem = A2A_MEM_DEVICE;
  ev.u.mem.size = n;
  ev_pre(&ev);
  ev.u.mem.ptr = (void *)p;
  ev_post(&ev, 0);
}

START_TEST(alloc_registry_bounds) {
  alloc(0x10000, 0x1000, 2);
  alloc(0x30000, 0x100, 3);
  alloc(0x20000, 0x10, 0);
  a2a_alloc a;
  ck_assert(a2a_alloc_find((void *)0x10fff, &a));
  ck_assert_uint_eq(a.base, 0x10000);
  ck_assert_int_eq(a.device, 2);
  ck_assert(!a2a_alloc_find((void *)0x11000, &a));
  ck_assert(!a2a_alloc_find((void *)0xffff, &a));
  ck_assert(a2a_alloc_find((void *)0x30000, &a));
  ck_assert_int_eq(a.device, 3);
  ck_assert_uint_eq(a2a_alloc_count(), 3);
  a2a_event ev = ev_make(A2A_EV_FREE);
  ev.u.mem.ptr = (void *)0x10000;
  ev_dispatch(&ev, 0);
  ck_assert(!a2a_alloc_find((void *)0x10000, &a));
  ev.u.mem.ptr = (void *)0x20008;   /* not a base: the real free failed */
  ev_dispatch(&ev, 1);
  ck_assert(a2a_alloc_find((void *)0x20008, &a));
  ck_assert_uint_eq(a2a_alloc_count(), 2);
}
END_TEST

/* a2a_alloc_find answers repeated lookups from the thread's last answer
 * (found segment, or pointer not found) while the registry is unchanged:
 * a free, a new allocation at the same address (another size and serial)
 * and an allocation over a pointer that was not found must all be seen. */
static void free_at(uintptr_t p) {
  a2a_event ev = ev_make(A2A_EV_FREE);
  ev.u.mem.ptr = (void *)p;
  ev_dispatch(&ev, 0);
}

START_TEST(alloc_cache_follows_frees_and_reuse) {
  alloc(0x40000, 0x1000, 1);
  a2a_alloc a;
  ck_assert(a2a_alloc_find((void *)0x40010, &a));
  ck_assert_uint_eq(a.size, 0x1000);
  uint64_t serial = a.serial;
  ck_assert(a2a_alloc_find((void *)0x40fff, &a)); /* same segment: cached */
  ck_assert_uint_eq(a.base, 0x40000);
  ck_assert(!a2a_alloc_find((void *)0x41000, &a)); /* past its end */
  free_at(0x40000);
  ck_assert(!a2a_alloc_find((void *)0x40010, &a)); /* freed */
  alloc(0x40000, 0x100, 2); /* the same address again, smaller */
  ck_assert(a2a_alloc_find((void *)0x40010, &a));
  ck_assert_uint_eq(a.size, 0x100);
  ck_assert_int_eq(a.device, 2);
  ck_assert_uint_ne(a.serial, serial);
  ck_assert(!a2a_alloc_find((void *)0x40800, &a)); /* was inside the old one */
  ck_assert(!a2a_alloc_find((void *)0x50000, &a));
  ck_assert(!a2a_alloc_find((void *)0x50000, &a)); /* a cached miss */
  alloc(0x50000, 0x10, 0);
  ck_assert(a2a_alloc_find((void *)0x50000, &a)); /* allocated since */
  ck_assert_uint_eq(a.size, 0x10);
  free_at(0x50000);
  ck_assert(!a2a_alloc_find((void *)0x50000, &a));
}
END_TEST

static void *alloc_elsewhere(void *arg) {
  (void)arg;
  alloc(0x60000, 0x1000, 3);
  return NULL;
}

START_TEST(alloc_cache_sees_other_threads) {
  a2a_alloc a;
  ck_assert(!a2a_alloc_find((void *)0x60000, &a));
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, alloc_elsewhere, NULL), 0);
  pthread_join(th, NULL);
  ck_assert(a2a_alloc_find((void *)0x60000, &a));
  ck_assert_int_eq(a.device, 3);
}
END_TEST

START_TEST(failed_alloc_is_not_registered) {
  a2a_event ev = ev_make(A2A_EV_ALLOC);
  ev.u.mem.size = 16;
  ev.u.mem.ptr = (void *)0x5000;
  ev_dispatch(&ev, 2 /* cudaErrorMemoryAllocation */);
  ck_assert_uint_eq(a2a_alloc_count(), 0);
}
END_TEST

START_TEST(json_writer) {
  char buf[256];
  a2a_json j;
  a2a_json_init(&j, buf, sizeof buf);
  a2a_json_obj_begin(&j, NULL);
  a2a_json_str(&j, "s", "a\"b\\c\n");
  a2a_json_int(&j, "i", -5);
  a2a_json_arr_begin(&j, "a");
  a2a_json_uint(&j, NULL, 1);
  a2a_json_uint(&j, NULL, 2);
  a2a_json_arr_end(&j);
  a2a_json_dbl(&j, "d", 1.5);
  a2a_json_bool(&j, "b", true);
  a2a_json_ptr(&j, "p", (void *)0x10);
  a2a_json_obj_end(&j);
  ck_assert_str_eq(buf, "{\"s\":\"a\\\"b\\\\c\\n\",\"i\":-5,\"a\":[1,2],\"d\":1.5,\"b\":true,\"p\":\"0x10\"}");
  ck_assert(!j.overflow);
}
END_TEST

START_TEST(json_writer_overflow_stays_terminated) {
  char buf[40];
  a2a_json j;
  a2a_json_init(&j, buf, sizeof buf);
  a2a_json_obj_begin(&j, NULL);
  a2a_json_str(&j, "long", "0123456789012345678901234567890123456789");
  a2a_json_obj_end(&j);
  ck_assert(j.overflow);
  ck_assert_uint_lt(strlen(buf), sizeof buf);
  ck_assert_int_eq(buf[strlen(buf) - 1], '}');
}
END_TEST

START_TEST(dtype_table) {
  ck_assert_uint_eq(a2a_dtype_size(0), 1);   /* int8 */
  ck_assert_uint_eq(a2a_dtype_size(2), 4);   /* int32 */
  ck_assert_uint_eq(a2a_dtype_size(6), 2);   /* half */
  ck_assert_uint_eq(a2a_dtype_size(8), 8);   /* double */
  ck_assert_uint_eq(a2a_dtype_size(9), 2);   /* bfloat16 */
  ck_assert_uint_eq(a2a_dtype_size(11), 1);  /* fp8 e5m2 */
  ck_assert_uint_eq(a2a_dtype_size(12), 0);
  ck_assert_uint_eq(a2a_dtype_size(-1), 0);
  ck_assert_str_eq(a2a_dtype_name(7), "float32");
}
END_TEST

/* ---------------- per-thread records ---------------- */

static a2a_tslots g_slots;
typedef struct claim_arg { uint32_t id; void *rec; bool reused; } claim_arg;

static void *claim_and_exit(void *p) {
  claim_arg *a = p;
  a->rec = a2a_tslots_claim(&g_slots, a->id, 64, &a->reused);
  if (a->rec) ck_assert_ptr_eq(a2a_tslots_get(&g_slots, a->id), a->rec);
  return NULL;
}

/* a2a_lock: four threads add to a plain counter under the lock, with a
 * yield inside the critical section every so often so that the others
 * find it held and sleep in the kernel: no increment may be lost, and the
 * lock ends free. */
static a2a_lock g_test_lock = A2A_LOCK_INIT;
static long g_locked_count;

static void *lock_hammer(void *arg) {
  (void)arg;
  for (int i = 0; i < 20000; i++) {
    a2a_lock_acquire(&g_test_lock);
    long v = g_locked_count;
    if (i % 64 == 0) sched_yield();
    g_locked_count = v + 1;
    a2a_lock_release(&g_test_lock);
  }
  return NULL;
}

START_TEST(lock_excludes_under_contention) {
  pthread_t th[4];
  for (int i = 0; i < 4; i++) ck_assert_int_eq(pthread_create(&th[i], NULL, lock_hammer, NULL), 0);
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  ck_assert_int_eq(g_locked_count, 4 * 20000);
  ck_assert_int_eq(atomic_load(&g_test_lock.v), 0);
}
END_TEST

START_TEST(tslots_outlive_no_thread) {
  /* 3 x A2A_TSLOTS threads, one after the other, with ever-growing
   * indices: each gets a record, and from the second round on it is an
   * exited thread's (memory stays that of the peak). */
  ck_assert_int_eq(a2a_tslots_init(&g_slots, NULL), 0);
  for (uint32_t id = 1; id <= 3 * A2A_TSLOTS; id++) {
    claim_arg a = {.id = id};
    pthread_t th;
    pthread_create(&th, NULL, claim_and_exit, &a);
    pthread_join(th, NULL);
    ck_assert_ptr_nonnull(a.rec);
    ck_assert(a.reused == (id > A2A_TSLOTS));
    ck_assert_ptr_null(a2a_tslots_get(&g_slots, id)); /* freed at exit */
  }
  /* A live owner keeps its slot: a colliding index probes further. */
  bool reused;
  void *mine = a2a_tslots_claim(&g_slots, 5, 64, &reused);
  void *other = a2a_tslots_claim(&g_slots, 5 + A2A_TSLOTS, 64, &reused);
  ck_assert_ptr_nonnull(mine);
  ck_assert_ptr_nonnull(other);
  ck_assert_ptr_ne(mine, other);
  ck_assert_ptr_eq(a2a_tslots_get(&g_slots, 5), mine);
  ck_assert_ptr_eq(a2a_tslots_get(&g_slots, 5 + A2A_TSLOTS), other);
  /* In a forked child only the forking thread keeps its slot. */
  a2a_tslots_fork_child(&g_slots, 5);
  ck_assert_ptr_eq(a2a_tslots_get(&g_slots, 5), mine);
  ck_assert_ptr_null(a2a_tslots_get(&g_slots, 5 + A2A_TSLOTS));
  ck_assert_int_eq(a2a_tslots_init(&g_slots, NULL), 0);
}
END_TEST

/* a2a_kernel_params answers a repeated function from the calling thread's
 * last answer: the answer must be the table's, and a reset (init) must
 * not let a thread keep an answer from before it. */
static void k_one(void) {}
static void k_two(void) {}

START_TEST(kernel_params_cache_follows_resets) {
  size_t off1[] = {0}, sz1[] = {8};
  size_t off2[] = {0, 8}, sz2[] = {8, 4};
  collector_add_kernel((const void *)k_one, "copy_kernel", 1, off1, sz1);
  collector_add_kernel((const void *)k_two, "gemm", 2, off2, sz2);
  const a2a_kparams *a = a2a_kernel_params((const void *)k_one);
  ck_assert_ptr_nonnull(a);
  ck_assert_int_eq(a->nparams, 1);
  ck_assert(a->flags & A2A_KP_NAME_COPY);
  ck_assert_ptr_eq(a2a_kernel_params((const void *)k_one), a); /* repeated: cached */
  const a2a_kparams *b = a2a_kernel_params((const void *)k_two);
  ck_assert_int_eq(b->nparams, 2);
  ck_assert(!(b->flags & A2A_KP_NAME_COPY));
  ck_assert_ptr_eq(a2a_kernel_params((const void *)k_one), a);
  ck_assert_ptr_null(a2a_kernel_params(NULL));
  /* A reset empties the table: k_one is asked again, and the host now
   * knows nothing of it (a stale cached answer would still say 1
   * parameter, "copy_kernel"). */
  collector_reset();
  const a2a_kparams *c = a2a_kernel_params((const void *)k_one);
  ck_assert_ptr_nonnull(c);
  ck_assert_int_eq(c->nparams, -1);
  ck_assert_ptr_null(c->name);
  ck_assert(!(c->flags & A2A_KP_NAME_COPY));
}
END_TEST

START_TEST(hash_is_stable) {
  /* Pinned value: ranks on different hosts and builds must compute the same
   * communicator identity from the same bytes. */
  ck_assert_uint_eq(a2a_hash_bytes("abc", 3, 0), 0xcfd2ddeaa83fe67eULL);
  ck_assert_uint_ne(a2a_hash_bytes("abc", 3, 0), a2a_hash_bytes("abd", 3, 0));
  ck_assert_uint_ne(a2a_hash_bytes("abc", 3, 0), a2a_hash_bytes("abc", 3, 1));
}
END_TEST

/* Nested group calls (a2a_group_row): an analyzer that declares nested
 * handlers (fake_n: only a nested end's PRE) gets those in a nested call's
 * rows, and its table handler for every other group call; one that
 * declares none (fake_g) gets every group call. The depth counts a start
 * that returned 0 and an end while positive, whatever its result; the
 * veto, a thread past the table, the core's re-initialization and a fork
 * send every call to the kind's rows. */
static int g_gtab[2][2], g_gnest, g_gall;
static void fg_event(const a2a_event *ev) { g_gall++; }
static void fn_event(const a2a_event *ev) {
  g_gtab[ev->kind == A2A_EV_GROUP_END][ev->phase]++;
}
static void fn_end_nested(const a2a_event *ev) {
  ck_assert_int_eq(ev->kind, A2A_EV_GROUP_END);
  ck_assert_int_eq(ev->phase, A2A_PRE);
  g_gnest++;
}
#define GROUP_KINDS (A2A_KIND_BIT(A2A_EV_GROUP_START) | A2A_KIND_BIT(A2A_EV_GROUP_END))
static const a2a_nested fn_nested = {.end = {[A2A_PRE] = fn_end_nested}};
static const a2a_analyzer fake_g = {.name = "fake_g", .pre = GROUP_KINDS, .post = GROUP_KINDS,
                                    .on_event = fg_event};
static const a2a_analyzer fake_n = {.name = "fake_n", .pre = GROUP_KINDS, .post = GROUP_KINDS,
                                    .on_event = fn_event, .nested = &fn_nested};

/* One group call of thread `thread` as the shim dispatches it (no call
 * kept: the rows only); returns the depth the event carried. */
static int gcall(a2a_kind k, int result, uint32_t thread) {
  a2a_event ev = ev_make(k);
  ev.thread = thread;
  ev_dispatch_group_rows(&ev, result);
  return ev.u.group.depth;
}
static void gcounts_reset(void) {
  memset(g_gtab, 0, sizeof g_gtab);
  g_gnest = g_gall = 0;
}
#define ASSERT_G(start_pre, start_post, end_pre, end_post, nested, all) \
  do {                                                                  \
    ck_assert_int_eq(g_gtab[0][A2A_PRE], (start_pre));                  \
    ck_assert_int_eq(g_gtab[0][A2A_POST], (start_post));                \
    ck_assert_int_eq(g_gtab[1][A2A_PRE], (end_pre));                    \
    ck_assert_int_eq(g_gtab[1][A2A_POST], (end_post));                  \
    ck_assert_int_eq(g_gnest, (nested));                                \
    ck_assert_int_eq(g_gall, (all));                                    \
  } while (0)

START_TEST(nested_group_calls_take_the_nested_rows) {
  static const a2a_analyzer *const list[] = {&fake_g, &fake_n};
  a2a_core_set_analyzers_for_tests(list, 2);
  collector_reinit();
  gcounts_reset();
  const uint32_t T = 5;
  ck_assert_int_eq(gcall(A2A_EV_GROUP_START, 0, T), 0); /* outermost */
  ASSERT_G(1, 1, 0, 0, 0, 2);
  ck_assert_int_eq(gcall(A2A_EV_GROUP_START, 0, T), 1); /* nested */
  ck_assert_int_eq(gcall(A2A_EV_GROUP_START, 0, T), 2); /* nested */
  ASSERT_G(1, 1, 0, 0, 0, 6);
  ck_assert_int_eq(gcall(A2A_EV_GROUP_START, 5, T), 3); /* failed: not counted */
  ck_assert_int_eq(gcall(A2A_EV_GROUP_END, 3, T), 3);   /* failed: counted */
  ck_assert_int_eq(gcall(A2A_EV_GROUP_END, 0, T), 2);   /* nested */
  ASSERT_G(1, 1, 0, 0, 2, 12);
  ck_assert_int_eq(gcall(A2A_EV_GROUP_END, 0, T), 1); /* the outermost */
  ASSERT_G(1, 1, 1, 1, 2, 14);
  ck_assert_int_eq(gcall(A2A_EV_GROUP_END, 0, T), 0); /* without a start */
  ck_assert_int_eq(gcall(A2A_EV_GROUP_START, 0, T), 0);
  ASSERT_G(2, 2, 2, 2, 2, 18);
  /* Another thread counts its own. */
  ck_assert_int_eq(gcall(A2A_EV_GROUP_START, 0, T + 1), 0);
  ck_assert_int_eq(gcall(A2A_EV_GROUP_END, 0, T + 1), 1);
  ASSERT_G(3, 3, 3, 3, 2, 22);

  /* A veto: the thread's calls all take the kind's rows. */
  ck_assert_int_eq(gcall(A2A_EV_GROUP_START, 0, T), 1); /* nested */
  ASSERT_G(3, 3, 3, 3, 2, 24);
  a2a_group_nested_full(T);
  ck_assert_int_eq(gcall(A2A_EV_GROUP_START, 0, T), 2);
  ck_assert_int_eq(gcall(A2A_EV_GROUP_END, 0, T), 3);
  ASSERT_G(4, 4, 4, 4, 2, 28);
  /* The core's re-initialization forgets the vetoes (and no call was
   * analyzed before it: the depths are zero). */
  collector_reinit();
  gcounts_reset();
  ck_assert_int_eq(gcall(A2A_EV_GROUP_START, 0, T), 0);
  ck_assert_int_eq(gcall(A2A_EV_GROUP_START, 0, T), 1);
  ck_assert_int_eq(gcall(A2A_EV_GROUP_END, 0, T), 2);
  ASSERT_G(1, 1, 0, 0, 1, 6);
  /* So does a fork (the child's POST counters start again from zero; the
   * shim zeroes the forking thread's depth). */
  a2a_core_after_fork_child();
  ev_group_forget();
  ck_assert_int_eq(gcall(A2A_EV_GROUP_START, 0, T), 0);
  ck_assert_int_eq(gcall(A2A_EV_GROUP_END, 0, T), 1);
  ASSERT_G(2, 2, 1, 1, 1, 10);
  /* A thread past the table: every call to the kind's rows. */
  const uint32_t F = A2A_ACTIVITY_THREADS;
  ck_assert_int_eq(gcall(A2A_EV_GROUP_START, 0, F), 0);
  ck_assert_int_eq(gcall(A2A_EV_GROUP_START, 0, F), 1);
  ck_assert_int_eq(gcall(A2A_EV_GROUP_END, 0, F), 2);
  ASSERT_G(4, 4, 2, 2, 1, 16);
  /* The generic dispatch never takes the nested rows. */
  a2a_event e = ev_make(A2A_EV_GROUP_START);
  e.thread = T;
  ev_dispatch(&e, 0);
  ev_dispatch(&e, 0);
  ASSERT_G(6, 6, 2, 2, 1, 20);
  a2a_core_set_analyzers_for_tests(a2a_local_analyzers, a2a_nlocal_analyzers);
  collector_reset();
}
END_TEST

/* Kept nested calls (a2a_group_keep), as the shim makes them
 * (ev_dispatch_group): a successful nested start at d >= 1 while nothing
 * is kept and its end at d >= 2 while no analyzer marked the thread busy
 * reach no handler, but store the thread's activity with their seq; a
 * start that fails, a start inside a kept level, an end while busy are
 * dispatched, the first call after a kept start carrying it (and clearing
 * it after its PRE); a veto or a thread past the table keeps nothing. */
static int g_kept_seen;
static void fk_event(const a2a_event *ev) {
  if (ev->phase == A2A_PRE) g_kept_seen += ev->u.group.kept;
}
static const a2a_analyzer fake_k = {.name = "fake_k", .pre = GROUP_KINDS, .post = GROUP_KINDS,
                                    .on_event = fk_event, .wants_activity = true,
                                    .nested_keep_ok = true};
/* fake_g written for kept levels (it only counts what reaches it). */
static const a2a_analyzer fake_gk = {.name = "fake_gk", .pre = GROUP_KINDS, .post = GROUP_KINDS,
                                     .on_event = fg_event, .nested_keep_ok = true};
static bool kcall(a2a_kind k, int result, uint32_t thread, uint32_t seq) {
  a2a_event ev = ev_make(k);
  ev.thread = thread;
  ev.seq = seq;
  unsigned before = ev_group_kept();
  ev_dispatch_group(&ev, result);
  return ev_group_kept() != before;
}

START_TEST(nested_group_calls_are_kept) {
  static const a2a_analyzer *const list[] = {&fake_gk, &fake_k};
  a2a_core_set_analyzers_for_tests(list, 2);
  collector_reinit();
  gcounts_reset();
  g_kept_seen = 0;
  const uint32_t T = 5;
  ck_assert(!kcall(A2A_EV_GROUP_START, 0, T, 10)); /* outermost */
  ck_assert(kcall(A2A_EV_GROUP_START, 0, T, 11));
  ck_assert_uint_eq(a2a_thread_last_seq(T), 11); /* its activity */
  ck_assert_uint_eq(a2a_thread_last_other_seq(T), 11);
  ck_assert_uint_eq(a2a_group_kept(T), 1);
  ck_assert(kcall(A2A_EV_GROUP_END, 3, T, 12)); /* whatever its result */
  ck_assert_uint_eq(a2a_group_kept(T), 0);
  ck_assert_uint_eq(a2a_group_keep_word(T), 2); /* one kept start */
  ck_assert_int_eq(g_gall, 2);
  ck_assert(!kcall(A2A_EV_GROUP_START, 5, T, 13)); /* fails: dispatched */
  ck_assert_int_eq(g_gall, 4);
  ck_assert_int_eq(g_kept_seen, 0);
  ck_assert(kcall(A2A_EV_GROUP_START, 0, T, 14));
  ck_assert(!kcall(A2A_EV_GROUP_START, 0, T, 15)); /* inside a kept level */
  ck_assert_int_eq(g_kept_seen, 1); /* carried, then cleared */
  ck_assert_uint_eq(a2a_group_kept(T), 0);
  ck_assert(!kcall(A2A_EV_GROUP_END, 0, T, 16)); /* its level was dispatched */
  ck_assert(kcall(A2A_EV_GROUP_START, 0, T, 17));
  a2a_nested_end_busy(T, true);
  ck_assert(!kcall(A2A_EV_GROUP_END, 0, T, 18)); /* busy: dispatched */
  ck_assert_int_eq(g_kept_seen, 2);
  a2a_nested_end_busy(T, false);
  ck_assert(!kcall(A2A_EV_GROUP_END, 0, T, 19)); /* the outermost */
  ck_assert(!kcall(A2A_EV_GROUP_END, 0, T, 20)); /* without a start */
  ck_assert_uint_eq(a2a_thread_last_seq(T), 20);
  /* A veto: nothing kept. */
  ck_assert(!kcall(A2A_EV_GROUP_START, 0, T, 21));
  a2a_group_nested_full(T);
  ck_assert(!kcall(A2A_EV_GROUP_START, 0, T, 22));
  ck_assert(!kcall(A2A_EV_GROUP_END, 0, T, 23));
  ck_assert(!kcall(A2A_EV_GROUP_END, 0, T, 24));
  /* A thread past the table: nothing kept. */
  const uint32_t F = A2A_ACTIVITY_THREADS;
  ck_assert(!kcall(A2A_EV_GROUP_START, 0, F, 1));
  ck_assert(!kcall(A2A_EV_GROUP_START, 0, F, 2));
  ck_assert_uint_eq(a2a_group_kept(F), 0);
  /* The core's re-initialization forgets a kept level. */
  ck_assert(!kcall(A2A_EV_GROUP_START, 0, T + 1, 1));
  ck_assert(kcall(A2A_EV_GROUP_START, 0, T + 1, 2));
  collector_reinit();
  ck_assert_uint_eq(a2a_group_kept(T + 1), 0);
  a2a_core_set_analyzers_for_tests(a2a_local_analyzers, a2a_nlocal_analyzers);
  collector_reset();
}
END_TEST

/* Keeping needs every analyzer on the nested rows to be written for kept
 * levels (a2a_analyzer.nested_keep_ok, a2a_group_keep_on at init): one
 * that is not - fake_g, whose table handlers take the nested rows - sees
 * every nested call; one whose nested handlers are all NULL, or whose
 * masks hold no group kind, or that is off, does not count; the table's
 * analyzers all keep. */
static const a2a_nested none_nested = {.start = {NULL, NULL}, .end = {NULL, NULL}};
static const a2a_analyzer fake_none = {.name = "fake_none", .pre = GROUP_KINDS,
                                       .post = GROUP_KINDS, .on_event = fg_event,
                                       .nested = &none_nested};
static const a2a_analyzer fake_launch = {.name = "fake_launch",
                                         .pre = A2A_KIND_BIT(A2A_EV_LAUNCH),
                                         .on_event = fg_event};
/* fake_g owning the layout checks: off when they all are. */
static const a2a_analyzer fake_g_owned = {.name = "fake_g_owned", .owner = A2A_OWN_LAYOUT,
                                          .pre = GROUP_KINDS, .post = GROUP_KINDS,
                                          .on_event = fg_event};
START_TEST(keeping_needs_every_nested_row_analyzer_written_for_it) {
  const uint32_t T = 6;
  static const a2a_analyzer *const keeps[] = {&fake_k, &fake_none, &fake_launch};
  a2a_core_set_analyzers_for_tests(keeps, 3);
  collector_reinit();
  ck_assert(a2a_group_keep_on);
  ck_assert(!kcall(A2A_EV_GROUP_START, 0, T, 1));
  ck_assert(kcall(A2A_EV_GROUP_START, 0, T, 2));
  ck_assert(kcall(A2A_EV_GROUP_END, 0, T, 3));
  ck_assert(!kcall(A2A_EV_GROUP_END, 0, T, 4));

  static const a2a_analyzer *const veto[] = {&fake_k, &fake_g};
  a2a_core_set_analyzers_for_tests(veto, 2);
  collector_reinit();
  gcounts_reset();
  ck_assert(!a2a_group_keep_on);
  ck_assert(!kcall(A2A_EV_GROUP_START, 0, T, 1));
  ck_assert(!kcall(A2A_EV_GROUP_START, 0, T, 2));
  ck_assert(!kcall(A2A_EV_GROUP_END, 0, T, 3));
  ck_assert(!kcall(A2A_EV_GROUP_END, 0, T, 4));
  ck_assert_int_eq(g_gall, 8); /* every call, both phases */
  ck_assert_uint_eq(ev_group_kept(), 0);

  /* The same veto from an analyzer that is off: none. */
  static const a2a_analyzer *const off[] = {&fake_k, &fake_g_owned};
  a2a_core_set_analyzers_for_tests(off, 2);
  collector_reinit();
  ck_assert(!a2a_group_keep_on);
  collector_disable_check("layout");
  collector_reinit();
  ck_assert(a2a_group_keep_on);
  collector_reset();

  a2a_core_set_analyzers_for_tests(a2a_local_analyzers, a2a_nlocal_analyzers);
  collector_reinit();
  ck_assert(a2a_group_keep_on);
  collector_reset();
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("core");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_set_timeout(tc, 20);
  tcase_add_test(tc, every_listed_analyzer_is_linked);
  tcase_add_test(tc, dispatch_follows_subscriptions_and_owned_checks);
  tcase_add_test(tc, dispatch_calls_per_kind_handlers);
  tcase_add_test(tc, dispatch_calls_per_phase_handlers);
  tcase_add_test(tc, flush_hook_runs_before_the_next_other_call);
  tcase_add_test(tc, comm_quiet_kinds_need_every_handler_quiet);
  tcase_add_test(tc, repeated_launch_with_deferred_work);
  tcase_add_test(tc, gates_skip_only_closed_handlers);
  tcase_add_test(tc, gates_ungated_nccl_rows);
  tcase_add_test(tc, no_local_analyzer_gates_an_nccl_kind_after_init);
  tcase_add_test(tc, open_handlers_only_first_after_an_open_read);
  tcase_add_test(tc, open_handler_not_in_repeated_launch_list);
  tcase_add_test(tc, repeated_launch_skips_quiet_handlers_only);
  tcase_add_test(tc, queued_copy_row_skips_only_its_skippers);
  tcase_add_test(tc, group_gate_lets_own_group_through);
  tcase_add_test(tc, event_result_facts);
  tcase_add_test(tc, comm_registry_identity);
  tcase_add_test(tc, split_identity_follows_sequence_and_color);
  tcase_add_test(tc, split_in_a_group_is_on_its_parents_device);
  tcase_add_test(tc, comm_end_sets_state_and_handle_reuse_replaces);
  tcase_add_test(tc, comm_memo_alternation_sees_destroy_and_reuse);
  tcase_add_test(tc, comm_memo_forgets_misses_on_insertion_by_other_threads);
  tcase_add_test(tc, comm_memo_more_comms_than_ways);
  tcase_add_test(tc, comm_memo_inline_answers_as_the_lookup);
  tcase_add_test(tc, comm_memo_last_answer_for_null_is_null);
  tcase_add_test(tc, alloc_registry_bounds);
  tcase_add_test(tc, failed_alloc_is_not_registered);
  tcase_add_test(tc, alloc_cache_follows_frees_and_reuse);
  tcase_add_test(tc, alloc_cache_sees_other_threads);
  tcase_add_test(tc, json_writer);
  tcase_add_test(tc, json_writer_overflow_stays_terminated);
  tcase_add_test(tc, dtype_table);
  tcase_add_test(tc, hash_is_stable);
  tcase_add_test(tc, kernel_params_cache_follows_resets);
  tcase_add_test(tc, tslots_outlive_no_thread);
  tcase_add_test(tc, lock_excludes_under_contention);
  tcase_add_test(tc, nested_group_calls_take_the_nested_rows);
  tcase_add_test(tc, nested_group_calls_are_kept);
  tcase_add_test(tc, keeping_needs_every_nested_row_analyzer_written_for_it);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
