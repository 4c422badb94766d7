/* test_options.c - the options table parser (shim/rt_options.c): strict
 * parsing, defaults kept on bad values, ENUM validation, the description of
 * effective values and the help table. The runtime's .c files are compiled
 * into this test directly: they are pure (no CUDA, files or global state). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../../shim/rt_format.c"
#include "../../shim/rt_options.c"

/* A fake environment: pairs of name, value. */
static const char *fake_env[16][2];
static int fake_n;
static const char *fake_getenv(const char *name) {
  for (int i = 0; i < fake_n; i++)
    if (strcmp(fake_env[i][0], name) == 0) return fake_env[i][1];
  return NULL;
}
static void env_set(const char *name, const char *value) {
  fake_env[fake_n][0] = name;
  fake_env[fake_n][1] = value;
  fake_n++;
}

static char warned[4096];
static int nwarned;
static void collect(void *arg, const char *line) {
  (void)arg;
  strncat(warned, line, sizeof warned - strlen(warned) - 2);
  strcat(warned, "\n");
  nwarned++;
}

static a2a_options o;
static unsigned char from_env[A2A_RT_NOPTS];

static int parse(void) {
  warned[0] = '\0';
  nwarned = 0;
  return a2a_rt_options_parse(&o, from_env, fake_getenv, collect, NULL);
}

static void setup(void) { fake_n = 0; }

START_TEST(defaults_without_environment) {
  ck_assert_int_eq(parse(), 0);
  ck_assert_int_eq(o.disable, 0);
  ck_assert_str_eq(o.log_dir, "./a2acheck-logs");
  ck_assert_ptr_null(o.checks);
  ck_assert_str_eq(o.fail_on, "deadlock");
  ck_assert_int_eq(o.exitcode, 66);
  ck_assert_int_eq(o.stack_depth, 16);
  ck_assert_int_eq(o.log_stderr, A2A_ECHO_ERROR);
  ck_assert_int_eq(o.max_per_check, 100);
  for (int i = 0; i < A2A_RT_NOPTS; i++) ck_assert_int_eq(from_env[i], 0);
}
END_TEST

START_TEST(valid_values_are_taken) {
  env_set("A2ACHECK_EXITCODE", "3");
  env_set("A2ACHECK_LOG_STDERR", "Warning");   /* enum names are case-insensitive */
  env_set("A2ACHECK_LOG_DIR", "/tmp/x");
  env_set("A2ACHECK_STACK_DEPTH", "+0");
  env_set("A2ACHECK_FAIL_ON", "error,-group.concurrent-use"); /* parsed by rt_checks.c */
  ck_assert_int_eq(parse(), 0);
  ck_assert_int_eq(o.exitcode, 3);
  ck_assert_str_eq(o.fail_on, "error,-group.concurrent-use");
  ck_assert_str_eq(o.log_dir, "/tmp/x");
  ck_assert_int_eq(o.stack_depth, 0);
  ck_assert_int_eq(o.log_stderr, A2A_ECHO_WARNING);
  ck_assert_int_eq(from_env[A2A_RT_OPT_exitcode], 1);
  ck_assert_int_eq(from_env[A2A_RT_OPT_max_per_check], 0);
}
END_TEST

START_TEST(bad_enum_warns_and_keeps_default) {
  env_set("A2ACHECK_LOG_DIR", "x");
  env_set("A2ACHECK_LOG_STDERR", "bogus");
  ck_assert_int_eq(parse(), 1);
  ck_assert_int_eq(o.log_stderr, A2A_ECHO_ERROR);
  ck_assert_str_eq(o.log_dir, "x");
  ck_assert_ptr_nonnull(strstr(warned, "A2ACHECK_LOG_STDERR=\"bogus\""));
  ck_assert_ptr_nonnull(strstr(warned, "none|error|warning|info"));
  ck_assert_ptr_nonnull(strstr(warned, "keeping the default \"error\""));
  ck_assert_int_eq(from_env[A2A_RT_OPT_log_stderr], 0);
}
END_TEST

START_TEST(integers_are_strict) {
  static const char *bad[] = {"12abc", " 5", "5 ", "0x10", "", "-", "1e3",
                              "99999999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    fake_n = 0;
    env_set("A2ACHECK_MAX_PER_CHECK", bad[i]);
    int w = parse();
    /* An empty value is "unset": no warning. */
    ck_assert_int_eq(w, bad[i][0] ? 1 : 0);
    ck_assert_int_eq(o.max_per_check, 100);
  }
}
END_TEST

START_TEST(ranges_are_enforced) {
  env_set("A2ACHECK_EXITCODE", "0");
  env_set("A2ACHECK_STACK_DEPTH", "33");
  env_set("A2ACHECK_DISABLE", "2");
  ck_assert_int_eq(parse(), 3);
  ck_assert_int_eq(o.exitcode, 66);
  ck_assert_int_eq(o.stack_depth, 16);
  ck_assert_int_eq(o.disable, 0);
  ck_assert_ptr_nonnull(strstr(warned, "A2ACHECK_EXITCODE=\"0\" is not a decimal integer in [1, 255]"));
}
END_TEST

START_TEST(parse_long_edges) {
  long v = 7;
  ck_assert(a2a_rt_parse_long("-12", -100, 100, &v));
  ck_assert_int_eq(v, -12);
  ck_assert(!a2a_rt_parse_long("101", -100, 100, &v));
  ck_assert(!a2a_rt_parse_long(NULL, 0, 1, &v));
  ck_assert(!a2a_rt_parse_long("1\n", 0, 1, &v));
  ck_assert_int_eq(v, -12);
}
END_TEST

START_TEST(strings_are_copied) {
  char value[] = "/tmp/logs";
  env_set("A2ACHECK_LOG_DIR", value);
  parse();
  value[1] = 'X';   /* the application changes its environment later */
  ck_assert_str_eq(o.log_dir, "/tmp/logs");
}
END_TEST

START_TEST(describe_names_every_variable_and_its_origin) {
  env_set("A2ACHECK_FAIL_ON", "error");
  parse();
  char buf[8192];
  a2a_rt_options_describe(&o, from_env, buf, sizeof buf);
  ck_assert_ptr_nonnull(strstr(buf, "A2ACHECK_FAIL_ON=error  (environment)"));
  ck_assert_ptr_nonnull(strstr(buf, "A2ACHECK_EXITCODE=66  (default)"));
  ck_assert_ptr_nonnull(strstr(buf, "A2ACHECK_CHECKS=(unset)  (default)"));
  ck_assert_ptr_nonnull(strstr(buf, "A2ACHECK_LOG_STDERR=error  (default)"));
  /* Exactly one line per table row. */
  int lines = 0;
  for (char *p = buf; *p; p++) lines += *p == '\n';
  ck_assert_int_eq(lines, A2A_RT_NOPTS);
}
END_TEST

START_TEST(help_lists_every_row) {
  char text[16384], md[16384];
  a2a_rt_options_help(text, sizeof text, 0);
  a2a_rt_options_help(md, sizeof md, 1);
  for (size_t i = 0; i < A2A_RT_NOPTS; i++) {
    ck_assert_ptr_nonnull(strstr(text, rows[i].env));
    ck_assert_ptr_nonnull(strstr(md, rows[i].env));
  }
  /* Markdown cells escape the '|' of enum value lists. */
  ck_assert_ptr_nonnull(strstr(md, "none\\|error\\|warning\\|info"));
  ck_assert_ptr_nonnull(strstr(md, "| `A2ACHECK_EXITCODE` | int | `66` |"));
}
END_TEST

START_TEST(enum_name_out_of_range) {
  char b[16];
  ck_assert_str_eq(a2a_rt_enum_name("a|bb|c", 1, b, sizeof b), "bb");
  ck_assert_str_eq(a2a_rt_enum_name("a|bb|c", 2, b, sizeof b), "c");
  ck_assert_str_eq(a2a_rt_enum_name("a|bb|c", 5, b, sizeof b), "5");
}
END_TEST

static Suite *options_suite(void) {
  Suite *s = suite_create("options");
  TCase *tc = tcase_create("parse");
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_set_timeout(tc, 10);
  tcase_add_test(tc, defaults_without_environment);
  tcase_add_test(tc, valid_values_are_taken);
  tcase_add_test(tc, bad_enum_warns_and_keeps_default);
  tcase_add_test(tc, integers_are_strict);
  tcase_add_test(tc, ranges_are_enforced);
  tcase_add_test(tc, parse_long_edges);
  tcase_add_test(tc, strings_are_copied);
  tcase_add_test(tc, describe_names_every_variable_and_its_origin);
  tcase_add_test(tc, help_lists_every_row);
  tcase_add_test(tc, enum_name_out_of_range);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(options_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
