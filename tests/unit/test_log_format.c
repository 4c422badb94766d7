/* test_log_format.c - one finding as a JSON line and as text
 * (shim/rt_format.c, compiled in: it is pure). The JSON checks are
 * structural (our validator plus exact substrings); tests/e2e re-checks the
 * real files with Python's json module. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../../shim/rt_format.c"

static char frames[3][A2A_RT_FRAME_LEN] = {"main+0x1c (prog)", "__libc_start_main+0x8a (libc.so.6)",
                                           "\"odd\\name\" (x)"};

static a2a_rt_record base(void) {
  a2a_rt_record r = {0};
  r.id = 7;
  r.check = "group.unbalanced";
  r.severity = A2A_SEV_ERROR;
  r.rank = 3;
  r.host = "node1";
  r.pid = 1234;
  r.thread = 2;
  r.message = "ncclGroupEnd without \"ncclGroupStart\"\n(fix it)";
  r.details_json = "{\"depth\": -1,\n \"api\": \"ncclGroupEnd\"}";
  r.frames = frames;
  r.nframes = 3;
  r.count = 1;
  r.time_iso = "2026-01-02T03:04:05.678Z";
  return r;
}

START_TEST(json_line_is_valid_and_complete) {
  a2a_rt_record r = base();
  char buf[4096];
  size_t off = 0;
  size_t n = a2a_rt_format_json(&r, buf, sizeof buf, &off);
  ck_assert_uint_eq(n, strlen(buf));
  ck_assert_int_eq(buf[n - 1], '\n');
  ck_assert_ptr_null(memchr(buf, '\n', n - 1));   /* exactly one line */
  buf[n - 1] = '\0';
  ck_assert(a2a_rt_json_is_object(buf));
  ck_assert_ptr_nonnull(strstr(buf, "{\"check\":\"group.unbalanced\",\"severity\":\"error\",\"id\":7,\"rank\":3,\"host\":\"node1\",\"pid\":1234,\"thread\":2,"));
  ck_assert_ptr_nonnull(strstr(buf, "\"message\":\"ncclGroupEnd without \\\"ncclGroupStart\\\"\\n(fix it)\""));
  ck_assert_ptr_nonnull(strstr(buf, "\"details\":{\"depth\": -1,  \"api\": \"ncclGroupEnd\"}"));
  ck_assert_ptr_nonnull(strstr(buf, "\"stack\":[\"main+0x1c (prog)\",\"__libc_start_main+0x8a (libc.so.6)\",\"\\\"odd\\\\name\\\" (x)\"]"));
  ck_assert_ptr_null(strstr(buf, "\"comm\""));
  ck_assert_ptr_null(strstr(buf, "truncated"));
  /* The count sits at off, padded to a fixed width, and can be patched. */
  ck_assert_int_eq(buf[off], '1');
  ck_assert_int_eq(buf[off + A2A_RT_COUNT_WIDTH], '}');
  memcpy(buf + off, "123456              ", A2A_RT_COUNT_WIDTH);
  ck_assert(a2a_rt_json_is_object(buf));
}
END_TEST

START_TEST(json_with_comm_and_unknown_rank) {
  a2a_rt_record r = base();
  a2a_comm c = {0};
  c.id_hash = 0xa1b2c3d4e5f60718ULL;
  c.nranks = 8;
  c.rank = 5;
  strcpy(c.name, "comm#1(a1b2c3d4e5f60718)");
  r.comm = &c;
  r.rank = -1;
  r.details_json = NULL;
  char buf[4096];
  size_t n = a2a_rt_format_json(&r, buf, sizeof buf, NULL);
  buf[n - 1] = '\0';
  ck_assert(a2a_rt_json_is_object(buf));
  ck_assert_ptr_nonnull(strstr(buf, "\"rank\":null,"));
  ck_assert_ptr_nonnull(strstr(buf, "\"comm\":{\"name\":\"comm#1(a1b2c3d4e5f60718)\",\"hash\":\"0xa1b2c3d4e5f60718\",\"size\":8,\"rank\":5}"));
  ck_assert_ptr_nonnull(strstr(buf, "\"details\":{}"));
}
END_TEST

START_TEST(invalid_details_are_quoted) {
  a2a_rt_record r = base();
  r.details_json = "{\"a\": 1,}";
  char buf[4096];
  size_t n = a2a_rt_format_json(&r, buf, sizeof buf, NULL);
  buf[n - 1] = '\0';
  ck_assert(a2a_rt_json_is_object(buf));
  ck_assert_ptr_nonnull(strstr(buf, "\"details\":{\"invalid_details\":\"{\\\"a\\\": 1,}\"}"));
}
END_TEST

START_TEST(small_buffer_drops_details_then_stack) {
  a2a_rt_record r = base();
  char big[1500];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  char details[1600];
  snprintf(details, sizeof details, "{\"k\":\"%s\"}", big);
  r.details_json = details;
  char buf[700];
  size_t n = a2a_rt_format_json(&r, buf, sizeof buf, NULL);
  ck_assert_uint_gt(n, 0);
  buf[n - 1] = '\0';
  ck_assert(a2a_rt_json_is_object(buf));
  ck_assert_ptr_nonnull(strstr(buf, "\"truncated\":true"));
  ck_assert_ptr_nonnull(strstr(buf, "main+0x1c"));   /* the stack survived */
  /* Even a message longer than the buffer yields a valid line. */
  r.message = big;
  n = a2a_rt_format_json(&r, buf, sizeof buf, NULL);
  ck_assert_uint_gt(n, 0);
  buf[n - 1] = '\0';
  ck_assert(a2a_rt_json_is_object(buf));
}
END_TEST

START_TEST(validator) {
  static const char *good[] = {"{}", " { \"a\" : [1, -2.5e3, true, false, null, {\"b\":\"\\u00e9\"}] } ",
                               "{\"s\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"}"};
  static const char *bad[] = {"", "[]", "{", "{\"a\"}", "{\"a\":01}", "{\"a\":1}x",
                              "{\"a\":\"\x01\"}", "{\"a\":tru}", "{'a':1}", "{\"a\":\"\\x\"}",
                              "{\"a\":1,}", "{\"a\":-}", "{\"a\":1.}"};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
    ck_assert_msg(a2a_rt_json_is_object(good[i]), "%s", good[i]);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    ck_assert_msg(!a2a_rt_json_is_object(bad[i]), "%s", bad[i]);
  /* Depth is bounded: deep nesting is rejected, not a stack overflow. */
  char deep[300] = "";
  strcat(deep, "{\"a\":");
  for (int i = 0; i < 100; i++) strcat(deep, "[");
  ck_assert(!a2a_rt_json_is_object(deep));
}
END_TEST

START_TEST(text_block) {
  a2a_rt_record r = base();
  char buf[4096];
  size_t n = a2a_rt_format_text(&r, buf, sizeof buf);
  ck_assert_uint_eq(n, strlen(buf));
  ck_assert_ptr_nonnull(strstr(buf, "[2026-01-02T03:04:05.678Z] error group.unbalanced  (finding #7, rank 3, thread 2)\n"));
  ck_assert_ptr_nonnull(strstr(buf, "    #0 main+0x1c (prog)\n"));
  r.rank = -1;
  char small[64];
  n = a2a_rt_format_text(&r, small, sizeof small);
  ck_assert_uint_eq(n, strlen(small));
  ck_assert_ptr_nonnull(strstr(small, "[truncated]\n"));
}
END_TEST

static Suite *format_suite(void) {
  Suite *s = suite_create("log_format");
  TCase *tc = tcase_create("format");
  tcase_set_timeout(tc, 10);
  tcase_add_test(tc, json_line_is_valid_and_complete);
  tcase_add_test(tc, json_with_comm_and_unknown_rank);
  tcase_add_test(tc, invalid_details_are_quoted);
  tcase_add_test(tc, small_buffer_drops_details_then_stack);
  tcase_add_test(tc, validator);
  tcase_add_test(tc, text_block);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(format_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
