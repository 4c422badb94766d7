/* test_report.c - the report sink's counting (shim/rt_report.c): repeats
 * of a finding already seen (a2a_report_repeat, a2a_report_repeats), the
 * lock-free ones of a settled entry included, must leave exactly the counts,
 * the per-check severity, the failure-policy match and the suppression
 * silence the locked path leaves, in the summary and in the JSONL's patched
 * count. The sink is compiled in with the runtime's pure files (the failure
 * policy, the formatters); the logs, the symbolizer, the suppression match
 * and the runtime's state are stubs that record what the sink gives them.
 * Each test runs in its own process (Check's fork mode), on fresh tables. */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../../shim/rt_report.c"
#include "../../shim/rt_checks.c"
#include "../../shim/rt_format.c"

/* ---- stubs for the rest of the runtime ---- */

a2a_rt_globals a2a_rt;
A2A_RT_TLS a2a_rt_thread a2a_rt_t;
uint32_t a2a_rt_thread_index_slow(void) { return a2a_rt_t.index = 1; }
int a2a_rt_state(void) { return A2A_RT_READY; }
bool a2a_rt_nccl_seen(void) { return true; }
int a2a_rt_global_rank(void) { return 0; }
bool a2a_rt_pc_is_ours(const void *pc) { (void)pc; return false; }
void a2a_rt_capture_stack(a2a_stack *st) { st->n = 0; }
int a2a_rt_symbolize(const void *pc, char (*out)[A2A_RT_FRAME_LEN], int max) {
  (void)pc, (void)out, (void)max;
  return 0;
}
void a2a_rt_stderr(const char *fmt, ...) { (void)fmt; }
bool a2a_rt_log_opened(void) { return true; }
bool a2a_rt_log_unavailable(void) { return false; }
const char *a2a_rt_log_jsonl_path(void) { return ""; }
int a2a_rt_log_write_error(const char **path) { (void)path; return 0; }

/* The JSONL: each appended record gets the next offset; the last summary
 * record is kept; a count patch is kept by offset. */
static off_t g_json_end, g_first_len;
static char g_summary[16384];
static char g_patched[8][A2A_RT_COUNT_WIDTH + 1];
static off_t g_patched_off[8];
static int g_npatched;
bool a2a_rt_log_append(const char *text, size_t tn, const char *json, size_t jn, off_t *off) {
  (void)text, (void)tn;
  if (!json) return true;
  if (strstr(json, "\"a2acheck.summary\"")) snprintf(g_summary, sizeof g_summary, "%.*s", (int)jn, json);
  if (off) *off = g_json_end;
  if (!g_json_end) g_first_len = (off_t)jn;
  g_json_end += (off_t)jn;
  return true;
}
void a2a_rt_log_patch_json(off_t off, const char *s, size_t n) {
  int i = 0;
  while (i < g_npatched && g_patched_off[i] != off) i++;
  ck_assert_int_lt(i, 8);
  if (i == g_npatched) g_npatched++;
  g_patched_off[i] = off;
  snprintf(g_patched[i], sizeof g_patched[i], "%.*s", (int)n, s);
}

/* Suppressions: active when g_supp_on; every new finding matches rule
 * g_supp_rule (-1: none). When g_match_gate, the match waits there (the
 * entry pending) until the test opens it. */
static a2a_rt_supp g_supp;
static bool g_supp_on;
static int g_supp_rule = -1;
static bool g_match_gate;
static pthread_mutex_t g_gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_gate_cv = PTHREAD_COND_INITIALIZER;
static int g_gate;   /* 1: a match is waiting; 2: open */
const a2a_rt_supp *a2a_rt_supp_active(void) { return g_supp_on ? &g_supp : NULL; }
int a2a_rt_supp_match(const a2a_rt_supp *s, const char *check,
                      const char (*frames)[A2A_RT_FRAME_LEN], int n) {
  (void)s, (void)check, (void)frames, (void)n;
  if (g_match_gate) {
    pthread_mutex_lock(&g_gate_mu);
    g_gate = 1;
    pthread_cond_broadcast(&g_gate_cv);
    while (g_gate != 2) pthread_cond_wait(&g_gate_cv, &g_gate_mu);
    pthread_mutex_unlock(&g_gate_mu);
  }
  return g_supp_rule;
}

/* ---- helpers ---- */

static int SITE_A, SITE_B, SITE_C;

static void ignore_warning(void *arg, const char *line) { (void)arg, (void)line; }
static void setup_policy(const char *fail_on) {
  a2a_rt.opts.max_per_check = 10;
  a2a_rt.opts.log_stderr = A2A_ECHO_NONE;
  a2a_rt.opts.stack_depth = 8;
  a2a_rt.pid = 1;
  ck_assert_int_eq(a2a_rt_failpol_parse(&a2a_rt.failpol, fail_on, ignore_warning, NULL), 0);
}

static void report(a2a_check_id check, a2a_severity sev, const void *site) {
  a2a_finding f = {.check = check, .severity = sev, .message = "m", .site = site};
  a2a_report(&f);
}

/* The summary's "occurrences" (findings, silenced excluded) and a check's
 * own occurrences, logged count and severity from its JSON record. */
static unsigned long long summary_occ(void) {
  const char *p = strstr(g_summary, "\"occurrences\":");
  ck_assert_ptr_nonnull(p);
  return strtoull(p + 14, NULL, 10);
}
static unsigned long long check_occ(const char *name, char *sev, size_t cap) {
  char key[96];
  snprintf(key, sizeof key, "{\"check\":\"%s\"", name);
  const char *p = strstr(g_summary, key);
  ck_assert_msg(p != NULL, "%s not in %s", name, g_summary);
  const char *s = strstr(p, "\"severity\":\"");
  ck_assert_ptr_nonnull(s);
  snprintf(sev, cap, "%.*s", (int)strcspn(s + 12, "\""), s + 12);
  return strtoull(strstr(p, "\"occurrences\":") + 14, NULL, 10);
}
/* The count patched into the JSONL record of the finding written first. */
static unsigned long long patched_first(void) {
  for (int i = 0; i < g_npatched; i++)
    if (g_patched_off[i] < g_first_len) return strtoull(g_patched[i], NULL, 10);
  return 1;   /* never patched: still the written 1 */
}

static void summary(void) { a2a_rt_report_summary(0, NULL); }

/* ---- tests ---- */

/* Repeats of a written finding, one by one and several at once, are all
 * counted: the entry's patched count, its check's and the summary's
 * occurrences agree; a check that is off is skipped as a2a_report would. */
START_TEST(repeats_are_counted_exactly) {
  setup_policy("deadlock");
  report(A2A_CK_LAYOUT_OVERLAP, A2A_SEV_ERROR, &SITE_A);
  report(A2A_CK_GROUP_UNBALANCED, A2A_SEV_ERROR, &SITE_B);
  for (int i = 0; i < 1000; i++)
    ck_assert(a2a_report_repeat(A2A_CK_LAYOUT_OVERLAP, A2A_SEV_ERROR, &SITE_A));
  a2a_repeat r[2] = {{A2A_CK_LAYOUT_OVERLAP, A2A_SEV_ERROR, &SITE_A},
                     {A2A_CK_GROUP_UNBALANCED, A2A_SEV_ERROR, &SITE_B}};
  for (int i = 0; i < 500; i++) ck_assert(a2a_report_repeats(r, 2));
  /* Not seen: no count at all, all or none. */
  ck_assert(!a2a_report_repeat(A2A_CK_LAYOUT_OVERLAP, A2A_SEV_ERROR, &SITE_C));
  a2a_repeat bad[2] = {{A2A_CK_LAYOUT_OVERLAP, A2A_SEV_ERROR, &SITE_A},
                       {A2A_CK_LAYOUT_OVERLAP, A2A_SEV_ERROR, &SITE_C}};
  ck_assert(!a2a_report_repeats(bad, 2));
  summary();
  char sev[16];
  ck_assert_uint_eq(check_occ("layout.overlap", sev, sizeof sev), 1501);
  ck_assert_uint_eq(check_occ("group.unbalanced", sev, sizeof sev), 501);
  ck_assert_uint_eq(summary_occ(), 2002);
  ck_assert_uint_eq(patched_first(), 1501);
  ck_assert(!a2a_rt_report_fail_matched());
}
END_TEST

/* The failure policy is evaluated for every repeat: a repeat that matches
 * it (the policy here made stricter after the first occurrence) sets the
 * exit-status decision, one by one and in a batch. */
START_TEST(repeat_matches_failure_policy) {
  setup_policy("never");
  report(A2A_CK_LAYOUT_OVERLAP, A2A_SEV_ERROR, &SITE_A);
  ck_assert(a2a_report_repeat(A2A_CK_LAYOUT_OVERLAP, A2A_SEV_ERROR, &SITE_A));
  ck_assert(!a2a_rt_report_fail_matched());
  setup_policy("error");
  ck_assert(a2a_report_repeat(A2A_CK_LAYOUT_OVERLAP, A2A_SEV_ERROR, &SITE_A));
  ck_assert(a2a_rt_report_fail_matched());
}
END_TEST

START_TEST(repeats_batch_matches_failure_policy) {
  setup_policy("never");
  report(A2A_CK_LAYOUT_OVERLAP, A2A_SEV_ERROR, &SITE_A);
  setup_policy("error");
  a2a_repeat r[1] = {{A2A_CK_LAYOUT_OVERLAP, A2A_SEV_ERROR, &SITE_A}};
  ck_assert(a2a_report_repeats(r, 1));
  ck_assert(a2a_rt_report_fail_matched());
}
END_TEST

/* A settled entry's lock-free repeat matches the failure policy from the
 * parsed table (a2a_rt_failpol_hit) exactly as a2a_rt_failpol_matches
 * would: each level from its own severity up, an included check at any,
 * an excluded one at none. Each case from a clean table and flag (the
 * fork child's reset), its first occurrence under "never". */
START_TEST(settled_repeats_match_the_policy_by_severity) {
  static const struct {
    const char *policy;
    a2a_severity first, repeat;
    bool fails;
  } cases[] = {
      {"warning", A2A_SEV_WARNING, A2A_SEV_INFO, false},
      {"warning", A2A_SEV_WARNING, A2A_SEV_WARNING, true},
      {"error", A2A_SEV_ERROR, A2A_SEV_WARNING, false},
      {"error", A2A_SEV_ERROR, A2A_SEV_ERROR, true},
      {"deadlock", A2A_SEV_ERROR, A2A_SEV_ERROR, false},
      {"layout.misaligned", A2A_SEV_WARNING, A2A_SEV_INFO, true},
      {"warning,-layout.misaligned", A2A_SEV_ERROR, A2A_SEV_ERROR, false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    for (int batch = 0; batch < 2; batch++) {
      a2a_rt_report_after_fork_child();
      setup_policy("never");
      report(A2A_CK_LAYOUT_MISALIGNED, cases[i].first, &SITE_A);
      setup_policy(cases[i].policy);
      ck_assert(a2a_rt_failpol_matches(&a2a_rt.failpol, A2A_CK_LAYOUT_MISALIGNED,
                                       cases[i].repeat) == cases[i].fails);
      a2a_repeat r[1] = {{A2A_CK_LAYOUT_MISALIGNED, cases[i].repeat, &SITE_A}};
      ck_assert(batch ? a2a_report_repeats(r, 1)
                      : a2a_report_repeat(A2A_CK_LAYOUT_MISALIGNED, cases[i].repeat, &SITE_A));
      ck_assert_msg(a2a_rt_report_fail_matched() == cases[i].fails, "case %zu batch %d", i, batch);
    }
  }
}
END_TEST

/* A repeat at a higher severity than the finding's first raises its
 * check's severity in the summary, as a2a_report would. */
START_TEST(repeat_at_higher_severity_raises_check) {
  setup_policy("deadlock");
  report(A2A_CK_LAYOUT_MISALIGNED, A2A_SEV_WARNING, &SITE_A);
  ck_assert(a2a_report_repeat(A2A_CK_LAYOUT_MISALIGNED, A2A_SEV_ERROR, &SITE_A));
  summary();
  char sev[16];
  ck_assert_uint_eq(check_occ("layout.misaligned", sev, sizeof sev), 2);
  ck_assert_str_eq(sev, "error");
}
END_TEST

/* A silenced finding's repeats are counted as silenced (not in the
 * summary's occurrences) and never match the failure policy. */
START_TEST(silenced_repeats_stay_silenced) {
  setup_policy("error");
  g_supp_on = true;
  g_supp_rule = 0;
  report(A2A_CK_LAYOUT_OVERLAP, A2A_SEV_ERROR, &SITE_A);
  for (int i = 0; i < 10; i++)
    ck_assert(a2a_report_repeat(A2A_CK_LAYOUT_OVERLAP, A2A_SEV_ERROR, &SITE_A));
  ck_assert(!a2a_rt_report_fail_matched());
  summary();
  char sev[16];
  ck_assert_uint_eq(check_occ("layout.overlap", sev, sizeof sev), 11);
  ck_assert_uint_eq(summary_occ(), 0);
}
END_TEST

/* Repeats that arrive while the first occurrence is still being matched
 * against the suppressions (the entry pending) wait for the match's
 * verdict: silenced, they must not match the failure policy. */
typedef struct rep_arg {
  int n;
  const void *site;
} rep_arg;
static void *repeat_thread(void *p) {
  const rep_arg *a = p;
  for (int i = 0; i < a->n; i++)
    ck_assert(a2a_report_repeat(A2A_CK_LAYOUT_OVERLAP, A2A_SEV_ERROR, a->site));
  return NULL;
}
static void *report_thread(void *p) {
  report(A2A_CK_LAYOUT_OVERLAP, A2A_SEV_ERROR, p);
  return NULL;
}
/* The gated match: wait until a match waits at the gate (its entry
 * pending), then let it go on. */
static void gate_reached(void) {
  pthread_mutex_lock(&g_gate_mu);
  while (g_gate != 1) pthread_cond_wait(&g_gate_cv, &g_gate_mu);
  pthread_mutex_unlock(&g_gate_mu);
}
static void gate_open(void) {
  pthread_mutex_lock(&g_gate_mu);
  g_gate = 2;
  pthread_cond_broadcast(&g_gate_cv);
  pthread_mutex_unlock(&g_gate_mu);
}

/* A first occurrence at site reported by a new thread (returned), its
 * entry pending at the gated match of a suppression that silences it. */
static pthread_t first_pending(const void *site) {
  g_supp_on = true;
  g_supp_rule = 0;
  g_match_gate = true;
  pthread_t t;
  pthread_create(&t, NULL, report_thread, (void *)site);
  gate_reached();
  return t;
}

START_TEST(repeats_while_pending_wait_for_the_match) {
  setup_policy("error");
  pthread_t t = first_pending(&SITE_A);
  rep_arg a = {5, &SITE_A};
  repeat_thread(&a);   /* the entry is pending now */
  gate_open();
  pthread_join(t, NULL);
  ck_assert(!a2a_rt_report_fail_matched());
  summary();
  char sev[16];
  ck_assert_uint_eq(check_occ("layout.overlap", sev, sizeof sev), 6);
  ck_assert_uint_eq(summary_occ(), 0);
}
END_TEST

/* Repeats racing the summary: whatever the interleaving, each summary is
 * one cut - the check's occurrences equal the entry's patched count - and
 * a summary written after the repeats end has all of them. */
START_TEST(repeats_racing_the_summary) {
  setup_policy("deadlock");
  report(A2A_CK_LAYOUT_OVERLAP, A2A_SEV_ERROR, &SITE_A);
  enum { N = 200000 };
  rep_arg a = {N, &SITE_A};
  pthread_t t;
  pthread_create(&t, NULL, repeat_thread, &a);
  char sev[16];
  for (int i = 0; i < 20; i++) {
    summary();
    ck_assert_uint_eq(check_occ("layout.overlap", sev, sizeof sev), patched_first());
  }
  pthread_join(t, NULL);
  summary();
  ck_assert_uint_eq(check_occ("layout.overlap", sev, sizeof sev), N + 1);
  ck_assert_uint_eq(patched_first(), N + 1);
}
END_TEST

/* A fork child starts from empty tables: a repeat there is no repeat. */
START_TEST(fork_child_forgets_entries) {
  setup_policy("deadlock");
  report(A2A_CK_LAYOUT_OVERLAP, A2A_SEV_ERROR, &SITE_A);
  ck_assert(a2a_report_repeat(A2A_CK_LAYOUT_OVERLAP, A2A_SEV_ERROR, &SITE_A));
  a2a_rt_report_after_fork_child();
  ck_assert(!a2a_report_repeat(A2A_CK_LAYOUT_OVERLAP, A2A_SEV_ERROR, &SITE_A));
  report(A2A_CK_LAYOUT_OVERLAP, A2A_SEV_ERROR, &SITE_A);
  ck_assert(a2a_report_repeat(A2A_CK_LAYOUT_OVERLAP, A2A_SEV_ERROR, &SITE_A));
  summary();
  char sev[16];
  ck_assert_uint_eq(check_occ("layout.overlap", sev, sizeof sev), 2);
}
END_TEST

/* The thread's memo of its last lock-free batch (t_rep) counts a batch
 * exactly as the probing path would: a severity above the entry's first
 * still raises its check's severity, a check turned off is still dropped,
 * and after the fork child's reset nothing is a repeat (an info finding:
 * a reset entry's severity is info too). Each batch is first memoized by
 * an equal one. */
START_TEST(batched_repeats_memo_follows_the_table) {
  setup_policy("deadlock");
  report(A2A_CK_LAYOUT_MISALIGNED, A2A_SEV_WARNING, &SITE_A);
  a2a_repeat warn[1] = {{A2A_CK_LAYOUT_MISALIGNED, A2A_SEV_WARNING, &SITE_A}};
  a2a_repeat err[1] = {{A2A_CK_LAYOUT_MISALIGNED, A2A_SEV_ERROR, &SITE_A}};
  for (int i = 0; i < 3; i++) ck_assert(a2a_report_repeats(warn, 1));
  ck_assert(a2a_report_repeats(err, 1));
  /* Off: dropped unseen, memoized or not. */
  uint64_t w0 = atomic_load(&a2a_checks_enabled_w[0]), w1 = atomic_load(&a2a_checks_enabled_w[1]);
  atomic_store(&a2a_checks_enabled_w[A2A_CK_LAYOUT_MISALIGNED >> 6],
               atomic_load(&a2a_checks_enabled_w[A2A_CK_LAYOUT_MISALIGNED >> 6]) &
                   ~(1ull << (A2A_CK_LAYOUT_MISALIGNED & 63)));
  for (int i = 0; i < 5; i++) ck_assert(a2a_report_repeats(warn, 1));
  atomic_store(&a2a_checks_enabled_w[0], w0);
  atomic_store(&a2a_checks_enabled_w[1], w1);
  summary();
  char sev[16];
  ck_assert_uint_eq(check_occ("layout.misaligned", sev, sizeof sev), 5);
  ck_assert_str_eq(sev, "error");

  /* Batches that alternate at one position: each counted on its own
   * entry (the first written one's patched count), not on the memo's. */
  a2a_rt_report_after_fork_child();
  g_npatched = 0;
  g_json_end = 0;
  setup_policy("deadlock");
  report(A2A_CK_LAYOUT_MISALIGNED, A2A_SEV_WARNING, &SITE_A);
  report(A2A_CK_LAYOUT_MISALIGNED, A2A_SEV_WARNING, &SITE_C);
  a2a_repeat at_c[1] = {{A2A_CK_LAYOUT_MISALIGNED, A2A_SEV_WARNING, &SITE_C}};
  for (int i = 0; i < 6; i++) ck_assert(a2a_report_repeats(i % 3 ? at_c : warn, 1));
  summary();
  ck_assert_uint_eq(check_occ("layout.misaligned", sev, sizeof sev), 8);
  ck_assert_uint_eq(patched_first(), 3);

  a2a_rt_report_after_fork_child();
  setup_policy("deadlock");
  report(A2A_CK_LAYOUT_SCATTERED, A2A_SEV_INFO, &SITE_B);
  a2a_repeat info[1] = {{A2A_CK_LAYOUT_SCATTERED, A2A_SEV_INFO, &SITE_B}};
  for (int i = 0; i < 2; i++) ck_assert(a2a_report_repeats(info, 1));
  a2a_rt_report_after_fork_child();
  ck_assert(!a2a_report_repeats(info, 1));
}
END_TEST

/* After the fork child's reset a finding's entry is created again,
 * pending while its first occurrence is matched against the suppressions:
 * a batch memoized before the fork is not counted on it lock-free (it
 * would match the failure policy the match then silences). */
START_TEST(batched_repeats_memo_is_forgotten_by_the_fork_child) {
  setup_policy("error");
  report(A2A_CK_LAYOUT_OVERLAP, A2A_SEV_ERROR, &SITE_A);
  a2a_repeat r[1] = {{A2A_CK_LAYOUT_OVERLAP, A2A_SEV_ERROR, &SITE_A}};
  for (int i = 0; i < 2; i++) ck_assert(a2a_report_repeats(r, 1));
  a2a_rt_report_after_fork_child();
  pthread_t t = first_pending(&SITE_A);
  ck_assert(a2a_report_repeats(r, 1)); /* the entry is pending now */
  gate_open();
  pthread_join(t, NULL);
  ck_assert(!a2a_rt_report_fail_matched());
}
END_TEST

int main(void) {
  Suite *s = suite_create("report");
  TCase *tc = tcase_create("repeats");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, repeats_are_counted_exactly);
  tcase_add_test(tc, repeat_matches_failure_policy);
  tcase_add_test(tc, repeats_batch_matches_failure_policy);
  tcase_add_test(tc, settled_repeats_match_the_policy_by_severity);
  tcase_add_test(tc, repeat_at_higher_severity_raises_check);
  tcase_add_test(tc, silenced_repeats_stay_silenced);
  tcase_add_test(tc, repeats_while_pending_wait_for_the_match);
  tcase_add_test(tc, repeats_racing_the_summary);
  tcase_add_test(tc, fork_child_forgets_entries);
  tcase_add_test(tc, batched_repeats_memo_follows_the_table);
  tcase_add_test(tc, batched_repeats_memo_is_forgotten_by_the_fork_child);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
