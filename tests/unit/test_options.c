/* test_options.c - the options table parser (shim/rt_options.c): strict
 * parsing, defaults kept on bad values, ENUM validation, the description of
 * effective values and the help table. The runtime's .c files are compiled
 * into this test directly: they are pure (no CUDA, files or global state). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../../shim/rt_format.c"
#include "../../shim/rt_options.c"
#include "corpus_replay.h"
#include "../fuzz/fuzz_options.c"
#include <dirent.h>

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
  ck_assert_ptr_nonnull(strstr(warned, "A2ACHECK_EXITCODE=\"0\" is out of range (valid: 1..255); "
                                       "keeping the default 66"));
}
END_TEST

/* The holes of issue 15 ("Options"): each value was accepted silently (or
 * clamped/rounded) before the ranges moved into the table. Each must now be
 * refused with a message naming the variable, the value and the default
 * kept, and the default must be what the options hold. */
START_TEST(issue15_option_holes) {
  static const struct { const char *env, *bad, *says; } holes[] = {
    {"A2ACHECK_HANG_CONFIRM", "-1", "(valid: 0.5..600); keeping the default 5"},
    {"A2ACHECK_HANG_CONFIRM", "0.01", "(valid: 0.5..600); keeping the default 5"},
    {"A2ACHECK_HANG_TIMEOUT", "-5", "keeping the default 300"},
    {"A2ACHECK_HANG_TIMEOUT", "0", "keeping the default 300"},
    {"A2ACHECK_XRANK_QUEUE", "4611686018427387904", "a power of two in 1024..4194304, not rounded"},
    {"A2ACHECK_XRANK_QUEUE", "3000", "a power of two in 1024..4194304, not rounded"},
    {"A2ACHECK_XRANK_QUEUE", "512", "keeping the default 16384"},
    {"A2ACHECK_LOW_BW_RATIO", "2", "(valid: 0 < x < 1); keeping the default 0.5"},
    {"A2ACHECK_LOW_BW_RATIO", "0", "(valid: 0 < x < 1)"},
    {"A2ACHECK_LOW_BW_RATIO", "1", "(valid: 0 < x < 1)"},
    {"A2ACHECK_SMALL_MSG", "-1", "keeping the default 1048576"},
    {"A2ACHECK_PERF_MIN_OPS", "0", "keeping the default 16"},
    {"A2ACHECK_SMALL_MSG_MIN_OPS", "0", "keeping the default 64"},
    {"A2ACHECK_PERF_MIN_GAIN", "1.5", "(valid: 0..1); keeping the default 0.05"},
    {"A2ACHECK_PERF_MIN_GAIN", "-0.1", "keeping the default 0.05"},
    {"A2ACHECK_STALL_WARNING", "0.1", "(valid: 0 or 0.5..604800); keeping the default 30"},
    {"A2ACHECK_STALL_WARNING", "-3", "keeping the default 30"},
    {"A2ACHECK_EXPECTED_BUSBW", "-1", "keeping the default 0"},
    {"A2ACHECK_PERF_LATENCY_US", "-2", "keeping the default 0"},
    {"A2ACHECK_STACK_DEPTH", "-1", "keeping the default 16"},
    {"A2ACHECK_MAX_PER_CHECK", "0", "keeping the default 100"},
    {"A2ACHECK_PERF_MEASURE", "2", "keeping the default 1"},
    {"A2ACHECK_HANG_CONFIRM", "nan", "is not a finite number"},
    {"A2ACHECK_HANG_CONFIRM", "inf", "is not a finite number"},
    {"A2ACHECK_HANG_TIMEOUT", "1e999", "is not a finite number"},
    {"A2ACHECK_LOW_BW_RATIO", "NaN", "is not a finite number"},
  };
  for (size_t i = 0; i < sizeof holes / sizeof holes[0]; i++) {
    fake_n = 0;
    env_set(holes[i].env, holes[i].bad);
    ck_assert_int_eq(parse(), 1);
    char head[160];
    snprintf(head, sizeof head, "%s=\"%s\" is ", holes[i].env, holes[i].bad);
    ck_assert_msg(strstr(warned, head) && strstr(warned, holes[i].says), "%s=%s: %s",
                  holes[i].env, holes[i].bad, warned);
    /* The header shows only what is in effect: the default, from the table. */
    char buf[8192];
    a2a_rt_options_describe(&o, from_env, buf, sizeof buf);
    char line[160];
    snprintf(line, sizeof line, "%s=%s  (", holes[i].env, holes[i].bad);
    ck_assert_msg(!strstr(buf, line), "the header shows the rejected %s", line);
  }
  ck_assert_double_eq(o.hang_confirm, 5.0);
  fake_n = 0;
  env_set("A2ACHECK_HANG_TIMEOUT", "0");
  env_set("A2ACHECK_XRANK_QUEUE", "4611686018427387904");
  parse();
  ck_assert_double_eq(o.hang_timeout, 300.0);
  ck_assert_int_eq(o.xrank_queue, 16384);
  ck_assert_int_eq(from_env[A2A_RT_OPT_hang_timeout], 0);
}
END_TEST

START_TEST(in_range_values_are_taken) {
  env_set("A2ACHECK_HANG_CONFIRM", "0.5");
  env_set("A2ACHECK_HANG_TIMEOUT", "4");
  env_set("A2ACHECK_STALL_WARNING", "0");
  env_set("A2ACHECK_XRANK_QUEUE", "4194304");
  env_set("A2ACHECK_LOW_BW_RATIO", "0.999");
  env_set("A2ACHECK_SMALL_MSG", "0");
  env_set("A2ACHECK_PERF_MIN_GAIN", "1");
  env_set("A2ACHECK_PERF_MIN_OPS", "1");
  ck_assert_int_eq(parse(), 0);
  ck_assert_double_eq(o.hang_confirm, 0.5);
  ck_assert_double_eq(o.hang_timeout, 4);
  ck_assert_double_eq(o.stall_warning, 0);
  ck_assert_int_eq(o.xrank_queue, 4194304);
  ck_assert_double_eq(o.low_bw_ratio, 0.999);
  ck_assert_int_eq(o.small_msg, 0);
  ck_assert_double_eq(o.perf_min_gain, 1);
  ck_assert_int_eq(o.perf_min_ops, 1);
}
END_TEST

/* The table is consistent: every numeric default lies in its own range. */
START_TEST(defaults_are_in_range) {
  for (size_t i = 0; i < A2A_RT_NOPTS; i++) {
    const opt_row *r = &rows[i];
    if (r->type == T_INT) ck_assert_msg(a2a_opt_in_range(&r->range, (double)r->idef), "%s", r->env);
    if (r->type == T_DBL) ck_assert_msg(a2a_opt_in_range(&r->range, r->ddef), "%s", r->env);
    if (r->type == T_INT || r->type == T_DBL)
      ck_assert_msg(r->range.lo != 0 || r->range.hi != 0, "%s has no range", r->env);
  }
}
END_TEST

/* A hostile value cannot forge lines: control characters are replaced and
 * the value is cut. */
START_TEST(bad_values_are_shown_safely) {
  env_set("A2ACHECK_HANG_CONFIRM", "1\n[rank 0] error group.deadlock: forged\x1b[2J");
  env_set("A2ACHECK_LOG_STDERR", "x\ry");
  ck_assert_int_eq(parse(), 2);
  ck_assert_ptr_null(strchr(warned, '\r'));
  ck_assert_ptr_null(strchr(warned, '\x1b'));
  int lines = 0;
  for (char *p = warned; *p; p++) lines += *p == '\n';
  ck_assert_int_eq(lines, 2);
  char big[300];
  memset(big, '7', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  fake_n = 0;
  env_set("A2ACHECK_STACK_DEPTH", big);
  ck_assert_int_eq(parse(), 1);
  ck_assert_ptr_nonnull(strstr(warned, "...\" is not a decimal integer"));
}
END_TEST

/* A2ACHECK_COORDINATOR's syntax is checked at start-up, needed or not (an
 * id that carries a2acheck's record never asks for it): a host name, no
 * port or a port out of range is said once and the value refused. */
START_TEST(coordinator_syntax_is_checked_at_start) {
  env_set("A2ACHECK_COORDINATOR", "localhost:1234");
  ck_assert_int_eq(parse(), 1);
  ck_assert_ptr_null(o.coordinator);
  ck_assert_ptr_nonnull(strstr(warned, "A2ACHECK_COORDINATOR=\"localhost:1234\" does not start with an IPv4"));
  setup();
  env_set("A2ACHECK_COORDINATOR", "10.0.0.1:70000");
  ck_assert_int_eq(parse(), 1);
  ck_assert_ptr_nonnull(strstr(warned, "has no port in 1..65535"));
  setup();
  env_set("A2ACHECK_COORDINATOR", "10.0.0.1:29400");
  ck_assert_int_eq(parse(), 0);
  ck_assert_str_eq(o.coordinator, "10.0.0.1:29400");
}
END_TEST

START_TEST(help_shows_ranges) {
  char md[16384];
  a2a_rt_options_help(md, sizeof md, 1);
  ck_assert_ptr_nonnull(strstr(md, "| `A2ACHECK_HANG_CONFIRM` | number 0.5..600 | `5` |"));
  ck_assert_ptr_nonnull(strstr(md, "| `A2ACHECK_XRANK_QUEUE` | int a power of two in 1024..4194304 |"));
  ck_assert_ptr_nonnull(strstr(md, "| `A2ACHECK_STALL_WARNING` | number 0 or 0.5..604800 |"));
  ck_assert_ptr_nonnull(strstr(md, "| `A2ACHECK_LOW_BW_RATIO` | number 0 < x < 1 |"));
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
  ck_assert_ptr_nonnull(strstr(md, "| `A2ACHECK_EXITCODE` | int 1..255 | `66` |"));
}
END_TEST

START_TEST(enum_name_out_of_range) {
  char b[16];
  ck_assert_str_eq(a2a_rt_enum_name("a|bb|c", 1, b, sizeof b), "bb");
  ck_assert_str_eq(a2a_rt_enum_name("a|bb|c", 2, b, sizeof b), "c");
  ck_assert_str_eq(a2a_rt_enum_name("a|bb|c", 5, b, sizeof b), "5");
}
END_TEST

/* The fuzz target's corpus (seeds and every input a fuzzer crashed on)
 * through the fuzz entry, each seed also in single-byte mutations. */
START_TEST(fuzz_corpus_replay) {
  ck_assert_int_ge(a2a_test_replay_corpus(A2A_FUZZ_OPTIONS_CORPUS, a2a_fuzz_options_one, 200, 5u), 3);
}
END_TEST

/* The header shows the value in effect exactly, even one just inside a
 * bound that %g would round onto it. */
START_TEST(header_values_are_exact) {
  env_set("A2ACHECK_LOW_BW_RATIO", "0.9999999");
  env_set("A2ACHECK_LOG_DIR", "a\nb");
  ck_assert_int_eq(parse(), 0);
  char buf[8192];
  a2a_rt_options_describe(&o, from_env, buf, sizeof buf);
  ck_assert_ptr_nonnull(strstr(buf, "A2ACHECK_LOW_BW_RATIO=0.9999999  (environment)"));
  ck_assert_ptr_nonnull(strstr(buf, "A2ACHECK_LOG_DIR=a?b  (environment)"));
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
  tcase_add_test(tc, issue15_option_holes);
  tcase_add_test(tc, in_range_values_are_taken);
  tcase_add_test(tc, defaults_are_in_range);
  tcase_add_test(tc, bad_values_are_shown_safely);
  tcase_add_test(tc, help_shows_ranges);
  tcase_add_test(tc, coordinator_syntax_is_checked_at_start);
  tcase_add_test(tc, fuzz_corpus_replay);
  tcase_add_test(tc, header_values_are_exact);
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
