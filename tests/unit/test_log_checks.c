/* test_log_checks.c - A2ACHECK_CHECKS selection and the A2ACHECK_FAIL_ON
 * policy (shim/rt_checks.c, compiled in: it is pure). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../../shim/rt_checks.c"

static char warned[2048];
static int nwarned;
static void collect(void *arg, const char *line) {
  (void)arg;
  strncat(warned, line, sizeof warned - strlen(warned) - 2);
  strcat(warned, "\n");
  nwarned++;
}

static a2a_rt_rules rs;
static int parse(const char *spec) {
  warned[0] = '\0';
  nwarned = 0;
  return a2a_rt_checks_parse(&rs, spec, collect, NULL);
}

START_TEST(unset_enables_everything) {
  ck_assert_int_eq(parse(NULL), 0);
  ck_assert(a2a_rt_checks_eval(&rs, "perf.env"));
  ck_assert_int_eq(parse(""), 0);
  ck_assert(a2a_rt_checks_eval(&rs, "layout.overlap"));
}
END_TEST

START_TEST(minus_category_keeps_the_rest) {
  ck_assert_int_eq(parse("-perf"), 0);
  ck_assert(!a2a_rt_checks_eval(&rs, "perf.env"));
  ck_assert(a2a_rt_checks_eval(&rs, "group.unbalanced"));
  /* "perf" is a category prefix only up to the dot. */
  ck_assert_int_eq(parse("all,-perf"), 0);
  ck_assert(!a2a_rt_checks_eval(&rs, "perf.small_chunks"));
  ck_assert(a2a_rt_checks_eval(&rs, "a2acheck.not-intercepting"));
}
END_TEST

START_TEST(positive_list_selects_only_those) {
  ck_assert_int_eq(parse("layout,stream"), 0);
  ck_assert(a2a_rt_checks_eval(&rs, "layout.overlap"));
  ck_assert(a2a_rt_checks_eval(&rs, "stream.unsynced"));
  ck_assert(!a2a_rt_checks_eval(&rs, "group.unbalanced"));
}
END_TEST

START_TEST(later_entries_win) {
  ck_assert_int_eq(parse("all, -perf, +perf.env"), 0);
  ck_assert(a2a_rt_checks_eval(&rs, "perf.env"));
  ck_assert(!a2a_rt_checks_eval(&rs, "perf.other"));
  ck_assert_int_eq(parse("perf.env,-perf"), 0);
  ck_assert(!a2a_rt_checks_eval(&rs, "perf.env"));
  ck_assert(!a2a_rt_checks_eval(&rs, "group.x"));
}
END_TEST

START_TEST(unknown_and_malformed_entries_warn) {
  ck_assert_int_eq(parse("all,-bogus,layout.,Perf,-nosuch.check,,-perf"), 4);
  ck_assert_ptr_nonnull(strstr(warned, "unknown category \"bogus\""));
  ck_assert_ptr_nonnull(strstr(warned, "\"layout.\""));
  ck_assert_ptr_nonnull(strstr(warned, "malformed entry \"Perf\""));
  ck_assert_ptr_nonnull(strstr(warned, "\"nosuch.check\""));
  /* The valid entries still apply. */
  ck_assert_int_eq(rs.n, 2);
  ck_assert(!a2a_rt_checks_eval(&rs, "perf.env"));
  ck_assert(a2a_rt_checks_eval(&rs, "layout.overlap"));
}
END_TEST

START_TEST(too_many_entries) {
  char spec[4096] = "";
  for (int i = 0; i < A2A_RT_MAX_RULES + 3; i++) strcat(spec, "-perf.x,");
  ck_assert_int_eq(parse(spec), 1);
  ck_assert_int_eq(rs.n, A2A_RT_MAX_RULES);
}
END_TEST

START_TEST(fail_policy) {
  /* deadlock (the default): only the deadlock/hang checks. */
  ck_assert(a2a_rt_fail_matches(A2A_FAIL_DEADLOCK, "group.deadlock", A2A_SEV_ERROR));
  ck_assert(a2a_rt_fail_matches(A2A_FAIL_DEADLOCK, "group.hang", A2A_SEV_ERROR));
  ck_assert(!a2a_rt_fail_matches(A2A_FAIL_DEADLOCK, "group.unbalanced", A2A_SEV_ERROR));
  ck_assert(!a2a_rt_fail_matches(A2A_FAIL_DEADLOCK, "deadlock", A2A_SEV_ERROR));
  /* error: errors and deadlocks. */
  ck_assert(a2a_rt_fail_matches(A2A_FAIL_ERROR, "group.unbalanced", A2A_SEV_ERROR));
  ck_assert(!a2a_rt_fail_matches(A2A_FAIL_ERROR, "perf.env", A2A_SEV_WARNING));
  /* warning: warnings and errors, never info. */
  ck_assert(a2a_rt_fail_matches(A2A_FAIL_WARNING, "perf.env", A2A_SEV_WARNING));
  ck_assert(!a2a_rt_fail_matches(A2A_FAIL_WARNING, "perf.env", A2A_SEV_INFO));
  /* never. */
  ck_assert(!a2a_rt_fail_matches(A2A_FAIL_NEVER, "group.deadlock", A2A_SEV_ERROR));
}
END_TEST

static Suite *checks_suite(void) {
  Suite *s = suite_create("log_checks");
  TCase *tc = tcase_create("rules");
  tcase_set_timeout(tc, 10);
  tcase_add_test(tc, unset_enables_everything);
  tcase_add_test(tc, minus_category_keeps_the_rest);
  tcase_add_test(tc, positive_list_selects_only_those);
  tcase_add_test(tc, later_entries_win);
  tcase_add_test(tc, unknown_and_malformed_entries_warn);
  tcase_add_test(tc, too_many_entries);
  tcase_add_test(tc, fail_policy);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(checks_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
