/* test_log_checks.c - A2ACHECK_CHECKS selection and the A2ACHECK_FAIL_ON
 * policy (shim/rt_checks.c, compiled in: it is pure), both validated
 * against the checks table. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../../shim/rt_checks.c"

static char warned[4096];
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
#define ON(id) a2a_rt_checks_eval(&rs, A2A_CK_##id)

START_TEST(unset_enables_everything) {
  ck_assert_int_eq(parse(NULL), 0);
  ck_assert(ON(PERF_ENV));
  ck_assert_int_eq(parse(""), 0);
  ck_assert(ON(LAYOUT_OVERLAP));
  a2a_check_set s = a2a_rt_checks_set(&rs);
  for (int i = 0; i < A2A_CK__COUNT; i++) ck_assert(a2a_check_set_has(&s, (a2a_check_id)i));
}
END_TEST

START_TEST(minus_category_keeps_the_rest) {
  ck_assert_int_eq(parse("-perf"), 0);
  ck_assert(!ON(PERF_ENV));
  ck_assert(!ON(PERF_SUMMARY));
  ck_assert(ON(GROUP_UNBALANCED));
  ck_assert_int_eq(parse("all,-perf"), 0);
  ck_assert(!ON(PERF_SMALL_MESSAGES));
  ck_assert(ON(NOT_INTERCEPTING));
}
END_TEST

START_TEST(positive_list_selects_only_those) {
  ck_assert_int_eq(parse("layout,stream"), 0);
  ck_assert(ON(LAYOUT_OVERLAP));
  ck_assert(ON(STREAM_UNSYNCED_INPUT));
  ck_assert(!ON(GROUP_UNBALANCED));
  a2a_check_set s = a2a_rt_checks_set(&rs);
  ck_assert(a2a_check_set_has(&s, A2A_CK_LAYOUT_SCATTERED));
  ck_assert(!a2a_check_set_has(&s, A2A_CK_SIZE_P2P_MISMATCH));
}
END_TEST

START_TEST(later_entries_win) {
  ck_assert_int_eq(parse("all, -perf, +perf.env"), 0);
  ck_assert(ON(PERF_ENV));
  ck_assert(!ON(PERF_NO_OVERLAP));
  ck_assert_int_eq(parse("perf.env,-perf"), 0);
  ck_assert(!ON(PERF_ENV));
  ck_assert(!ON(GROUP_HANG));
}
END_TEST

START_TEST(unknown_and_malformed_entries_warn) {
  ck_assert_int_eq(parse("all,-bogus,layout.,Perf,-nosuch.check,,-perf"), 4);
  ck_assert_ptr_nonnull(strstr(warned, "unknown category \"bogus\""));
  ck_assert_ptr_nonnull(strstr(warned, "\"layout.\""));
  ck_assert_ptr_nonnull(strstr(warned, "malformed entry \"Perf\""));
  ck_assert_ptr_nonnull(strstr(warned, "\"nosuch.check\": not a check name"));
  /* The valid entries still apply. */
  ck_assert_int_eq(rs.n, 2);
  ck_assert(!ON(PERF_ENV));
  ck_assert(ON(LAYOUT_OVERLAP));
}
END_TEST

START_TEST(misspelled_check_names_are_reported_with_a_suggestion) {
  /* A name of a real category that is not in the table: before the table
   * existed this was accepted silently. */
  ck_assert_int_eq(parse("-layout.overlpa"), 1);
  ck_assert_ptr_nonnull(strstr(warned, "A2ACHECK_CHECKS: ignoring \"layout.overlpa\""));
  ck_assert_ptr_nonnull(strstr(warned, "did you mean \"layout.overlap\""));
  ck_assert_int_eq(rs.n, 0);
  ck_assert(ON(LAYOUT_OVERLAP)); /* nothing was disabled */
  ck_assert_int_eq(parse("stream.default-stram,-group.dedlock"), 2);
  ck_assert_ptr_nonnull(strstr(warned, "did you mean \"stream.default-stream\""));
  ck_assert_ptr_nonnull(strstr(warned, "did you mean \"group.deadlock\""));
  /* Far from everything: no suggestion, but a pointer to the list. */
  ck_assert_int_eq(parse("-layout.zzzzzzzzzz"), 1);
  ck_assert_ptr_null(strstr(warned, "did you mean"));
  ck_assert_ptr_nonnull(strstr(warned, "a2acheck checks"));
}
END_TEST

START_TEST(too_many_entries) {
  char spec[4096] = "";
  for (int i = 0; i < A2A_RT_MAX_RULES + 3; i++) strcat(spec, "-perf.env,");
  ck_assert_int_eq(parse(spec), 1);
  ck_assert_int_eq(rs.n, A2A_RT_MAX_RULES);
}
END_TEST

static a2a_rt_failpol fp;
static int fparse(const char *spec) {
  warned[0] = '\0';
  nwarned = 0;
  return a2a_rt_failpol_parse(&fp, spec, collect, NULL);
}
#define FAILS(id, sev) a2a_rt_failpol_matches(&fp, A2A_CK_##id, A2A_SEV_##sev)

START_TEST(fail_policy_levels) {
  /* deadlock (the default): only the deadlock/hang checks. */
  ck_assert_int_eq(fparse(NULL), 0);
  ck_assert(FAILS(GROUP_DEADLOCK, ERROR));
  ck_assert(FAILS(GROUP_HANG, ERROR));
  ck_assert(!FAILS(GROUP_UNBALANCED, ERROR));
  ck_assert_int_eq(fparse("deadlock"), 0);
  ck_assert(!FAILS(SIZE_P2P_MISMATCH, ERROR));
  /* error: errors and deadlocks. */
  ck_assert_int_eq(fparse("error"), 0);
  ck_assert(FAILS(GROUP_UNBALANCED, ERROR));
  ck_assert(!FAILS(PERF_ENV, WARNING));
  ck_assert(FAILS(GROUP_DEADLOCK, ERROR));
  /* warning: warnings and errors, never info; case-insensitive. */
  ck_assert_int_eq(fparse("Warning"), 0);
  ck_assert(FAILS(PERF_ENV, WARNING));
  ck_assert(!FAILS(PERF_ENV, INFO));
  /* never. */
  ck_assert_int_eq(fparse("never"), 0);
  ck_assert(!FAILS(GROUP_DEADLOCK, ERROR));
  ck_assert_int_eq(fparse("never,error"), 1);
  ck_assert(!FAILS(GROUP_UNBALANCED, ERROR));
}
END_TEST

START_TEST(fail_policy_names_checks) {
  /* A check by name fails at any severity; the default level stays off
   * unless named. */
  ck_assert_int_eq(fparse("size.dtype-mismatch"), 0);
  ck_assert(FAILS(SIZE_DTYPE_MISMATCH, WARNING));
  ck_assert(!FAILS(GROUP_DEADLOCK, ERROR));
  ck_assert_int_eq(fparse("deadlock,size.dtype-mismatch"), 0);
  ck_assert(FAILS(GROUP_DEADLOCK, ERROR));
  ck_assert(FAILS(SIZE_DTYPE_MISMATCH, WARNING));
  /* Exclusions override levels; categories work both ways. */
  ck_assert_int_eq(fparse("error,-group.concurrent-use"), 0);
  ck_assert(FAILS(GROUP_UNBALANCED, ERROR));
  ck_assert(!FAILS(GROUP_CONCURRENT_USE, ERROR));
  ck_assert_int_eq(fparse("warning,-perf"), 0);
  ck_assert(!FAILS(PERF_LOW_BANDWIDTH, WARNING));
  ck_assert(FAILS(LAYOUT_MISALIGNED, WARNING));
  ck_assert_int_eq(fparse("layout"), 0);
  ck_assert(FAILS(LAYOUT_HIDDEN_COPY, INFO));
  ck_assert(!FAILS(STREAM_UNSYNCED_INPUT, ERROR));
  char buf[256];
  ck_assert_int_eq(fparse("error,-group.concurrent-use"), 0);
  a2a_rt_failpol_describe(&fp, buf, sizeof buf);
  ck_assert_str_eq(buf, "error,-group.concurrent-use");
}
END_TEST

START_TEST(fail_policy_bad_entries_warn) {
  /* A misspelled check is reported (with a suggestion) and skipped; with
   * nothing usable left the default applies, never "nothing fails". */
  ck_assert_int_eq(fparse("size.p2p-mismach"), 1);
  ck_assert_ptr_nonnull(strstr(warned, "A2ACHECK_FAIL_ON: ignoring \"size.p2p-mismach\""));
  ck_assert_ptr_nonnull(strstr(warned, "did you mean \"size.p2p-mismatch\""));
  ck_assert(FAILS(GROUP_DEADLOCK, ERROR));
  ck_assert_int_eq(fparse("bogus"), 1);
  ck_assert(FAILS(GROUP_HANG, ERROR));
  ck_assert_int_eq(fparse("-error"), 1);
  ck_assert_ptr_nonnull(strstr(warned, "cannot be negated"));
  ck_assert_int_eq(fparse("error,layout.overlpa"), 1);
  ck_assert(FAILS(LAYOUT_OVERLAP, ERROR)); /* through "error" */
}
END_TEST

START_TEST(table_lookups) {
  ck_assert_int_eq(a2a_check_by_name("layout.overlap"), A2A_CK_LAYOUT_OVERLAP);
  ck_assert_int_eq(a2a_check_by_name("layout.overlapx"), A2A_CK_NONE);
  ck_assert_int_eq(a2a_check_by_name(""), A2A_CK_NONE);
  ck_assert_int_eq(a2a_check_by_name(NULL), A2A_CK_NONE);
  ck_assert_str_eq(a2a_check_name(A2A_CK_GROUP_HANG), "group.hang");
  ck_assert_str_eq(a2a_check_name(A2A_CK_NONE), "a2acheck.unknown");
  ck_assert_uint_eq(a2a_check_category_len(A2A_CK_STREAM_FREE_IN_FLIGHT), 6);
  ck_assert(a2a_check_is_category("perf", 4));
  ck_assert(!a2a_check_is_category("per", 3));
  /* Every name is "<known category>.<name>", unique. */
  for (int i = 0; i < A2A_CK__COUNT; i++) {
    const char *n = a2a_check_name((a2a_check_id)i);
    ck_assert(a2a_check_is_category(n, a2a_check_category_len((a2a_check_id)i)));
    ck_assert_int_eq(a2a_check_by_name(n), i);
    ck_assert_uint_ne(a2a_check_table[i].owners, 0);
    ck_assert_ptr_nonnull(a2a_check_table[i].summary);
  }
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
  tcase_add_test(tc, misspelled_check_names_are_reported_with_a_suggestion);
  tcase_add_test(tc, too_many_entries);
  tcase_add_test(tc, fail_policy_levels);
  tcase_add_test(tc, fail_policy_names_checks);
  tcase_add_test(tc, fail_policy_bad_entries_warn);
  tcase_add_test(tc, table_lookups);
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
