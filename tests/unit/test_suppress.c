/* test_suppress.c - A2ACHECK_SUPPRESSIONS (shim/rt_suppress.c): the
 * `check:pattern` parser (comments, blanks, bad lines with file:line), the
 * sanitizers' pattern rule, the frame parts a pattern is matched against
 * (native, inlined, Python), checks named by category or glob, the file
 * loader's one message, and the fuzz corpus replay
 * (tests/fuzz/fuzz_suppress.c). The runtime's pure .c files are compiled
 * in directly. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../shim/rt_suppress.c"
#include "corpus_replay.h"
#include "../fuzz/fuzz_suppress.c"

static char warned[8192];
static int nwarned;
static void collect(void *arg, const char *line) {
  (void)arg;
  strncat(warned, line, sizeof warned - strlen(warned) - 2);
  strcat(warned, "\n");
  nwarned++;
}

static a2a_rt_supp S;

static int parse(const char *text) {
  warned[0] = '\0';
  nwarned = 0;
  return a2a_rt_supp_parse(&S, text, strlen(text), "supp.txt", collect, NULL);
}

static char F[8][A2A_RT_FRAME_LEN];
static int frames(const char *a, const char *b) {
  int n = 0;
  if (a) snprintf(F[n++], A2A_RT_FRAME_LEN, "%s", a);
  if (b) snprintf(F[n++], A2A_RT_FRAME_LEN, "%s", b);
  return n;
}

static int match(const char *check, int n) {
  return a2a_rt_supp_match(&S, check, (const char(*)[A2A_RT_FRAME_LEN])F, n);
}

START_TEST(comments_blanks_and_rules) {
  ck_assert_int_eq(parse("# a comment\n\n   \t\n  # indented comment\n"
                         "size.p2p-mismatch: legacy_moe.py \r\n"
                         "perf:*\n"
                         "layout.*:*libmylib.so\n"
                         "*:^exact_fn$"),
                   0);
  ck_assert_int_eq(nwarned, 0);
  ck_assert_int_eq(S.n, 4);
  ck_assert_str_eq(S.rules[0].check, "size.p2p-mismatch");
  ck_assert_str_eq(S.rules[0].pattern, "legacy_moe.py");
  ck_assert_str_eq(S.rules[3].pattern, "^exact_fn$");
}
END_TEST

START_TEST(bad_lines_are_named_and_skipped) {
  ck_assert_int_eq(parse("size.p2p-mismatch\n"      /* 1: no ':' */
                         "nosuch.check:foo\n"       /* 2: unknown */
                         ":foo\n"                   /* 3: no check */
                         "perf:\n"                  /* 4: no pattern */
                         "PERF:x\n"                 /* 5: upper case: no check has it */
                         "perf.low-bandwidth:ok\n"), /* 6: good */
                   5);
  ck_assert_int_eq(S.n, 1);
  ck_assert_int_eq(nwarned, 5);
  ck_assert_ptr_nonnull(strstr(warned, "supp.txt:1: no ':'"));
  ck_assert_ptr_nonnull(strstr(warned, "supp.txt:2: unknown check or category"));
  ck_assert_ptr_nonnull(strstr(warned, "supp.txt:3: no check"));
  ck_assert_ptr_nonnull(strstr(warned, "supp.txt:4: no pattern"));
  ck_assert_ptr_nonnull(strstr(warned, "supp.txt:5: "));
  ck_assert_ptr_null(strstr(warned, "supp.txt:6"));
}
END_TEST

START_TEST(many_bad_lines_are_capped) {
  static char text[4096];
  text[0] = '\0';
  for (int i = 0; i < 50; i++) strcat(text, "junk\n");
  ck_assert_int_eq(parse(text), 50);
  ck_assert_int_eq(nwarned, MAX_LINE_WARNINGS + 1);
  ck_assert_ptr_nonnull(strstr(warned, "30 more bad lines ignored"));
}
END_TEST

START_TEST(glob_rule) {
  const char *t = "legacy_moe.py";
  size_t n = strlen(t);
  ck_assert(a2a_rt_supp_glob("moe", t, n));        /* substring */
  ck_assert(a2a_rt_supp_glob("^legacy", t, n));
  ck_assert(!a2a_rt_supp_glob("^moe", t, n));
  ck_assert(a2a_rt_supp_glob(".py$", t, n));
  ck_assert(!a2a_rt_supp_glob("legacy$", t, n));
  ck_assert(a2a_rt_supp_glob("^l*y_*.py$", t, n));
  ck_assert(a2a_rt_supp_glob("*", t, n));
  ck_assert(a2a_rt_supp_glob("^legacy_moe.py$", t, n));
  ck_assert(!a2a_rt_supp_glob("^legacy_moe.p$", t, n));
  ck_assert(a2a_rt_supp_glob("", t, n));
  ck_assert(!a2a_rt_supp_glob("x", "", 0));
}
END_TEST

START_TEST(frames_are_matched_by_function_file_and_module) {
  parse("size.p2p-mismatch:^do_send$\n");
  int n = frames("do_send+0x1c (libmylib.so) at /src/lib/send.c:42", NULL);
  ck_assert_int_eq(match("size.p2p-mismatch", n), 0);
  parse("size.p2p-mismatch:^libmylib.so$\n");
  ck_assert_int_eq(match("size.p2p-mismatch", n), 0);
  parse("size.p2p-mismatch:^/src/lib/send.c$\n");
  ck_assert_int_eq(match("size.p2p-mismatch", n), 0);
  parse("size.p2p-mismatch:send.c$\n");
  ck_assert_int_eq(match("size.p2p-mismatch", n), 0);
  /* ":42" is the line, not part of the file; "0x1c" not of the function. */
  parse("size.p2p-mismatch:send.c:42\nsize.p2p-mismatch:^do_send+0x1c$\n");
  ck_assert_int_eq(match("size.p2p-mismatch", n), -1);
  /* Demangled C++: parentheses inside the name. */
  parse("group.deadlock:^c10d::ProcessGroupNCCL::recv(std::vector<at::Tensor>&, int)$\n");
  n = frames("c10d::ProcessGroupNCCL::recv(std::vector<at::Tensor>&, int)+0x59 (libtorch_cuda.so)",
             NULL);
  ck_assert_int_eq(match("group.deadlock", n), 0);
  /* Inlined frames and unknown symbols. */
  parse("layout.overlap:^inner$\nlayout.overlap:^libz.so$\n");
  n = frames("inner (inlined) (libq.so) at q.c:3", "?? (libz.so+0x1234) at z.c:9");
  ck_assert_int_eq(match("layout.overlap", 1), 0);
  ck_assert_int_eq(a2a_rt_supp_match(&S, "layout.overlap",
                                     (const char(*)[A2A_RT_FRAME_LEN])(F + 1), 1), 1);
}
END_TEST

START_TEST(python_frames) {
  parse("size.p2p-mismatch:legacy_moe.py\n");
  int n = frames("forward (.../models/legacy_moe.py:91)", "ncclSend+0x10 (libnccl.so.2)");
  ck_assert_int_eq(match("size.p2p-mismatch", n), 0);
  parse("size.p2p-mismatch:^forward$\n");
  ck_assert_int_eq(match("size.p2p-mismatch", n), 0);
  parse("size.p2p-mismatch:^.../models/legacy_moe.py$\n");
  ck_assert_int_eq(match("size.p2p-mismatch", n), 0);
  parse("size.p2p-mismatch:train.py\n");
  ck_assert_int_eq(match("size.p2p-mismatch", n), -1);
  /* Any frame of the stack, not only the first. */
  parse("size.p2p-mismatch:libnccl\n");
  ck_assert_int_eq(match("size.p2p-mismatch", n), 0);
}
END_TEST

START_TEST(checks_by_name_category_and_glob) {
  int n = frames("f+0x1 (libm.so)", NULL);
  parse("perf:^f$\n");
  ck_assert_int_eq(match("perf.low-bandwidth", n), 0);
  ck_assert_int_eq(match("performance.x", n), -1);   /* a category is a whole prefix */
  ck_assert_int_eq(match("size.p2p-mismatch", n), -1);
  parse("*:^f$\n");
  ck_assert_int_eq(match("size.p2p-mismatch", n), 0);
  parse("layout.*:^f$\n");
  ck_assert_int_eq(match("layout.overlap", n), 0);
  ck_assert_int_eq(match("size.p2p-mismatch", n), -1);
  parse("size.p2p-mismatch:^g$\n");
  ck_assert_int_eq(match("size.p2p-mismatch", n), -1);
  /* Only '*': the whole check, with or without a stack. */
  parse("size.p2p-mismatch:*\n");
  ck_assert_int_eq(match("size.p2p-mismatch", 0), 0);
  ck_assert_int_eq(match("size.recv-larger", 0), -1);
}
END_TEST

START_TEST(loader_reports_unreadable_files_once) {
  warned[0] = '\0';
  nwarned = 0;
  ck_assert_int_eq(a2a_rt_supp_load("/nonexistent/supp.txt", collect, NULL), -1);
  ck_assert_int_eq(nwarned, 1);
  ck_assert_ptr_nonnull(strstr(warned, "A2ACHECK_SUPPRESSIONS=/nonexistent/supp.txt cannot be opened"));
  ck_assert_ptr_null(a2a_rt_supp_active());
  nwarned = 0;
  ck_assert_int_eq(a2a_rt_supp_load("/tmp", collect, NULL), -1);   /* a directory */
  ck_assert_int_eq(nwarned, 1);
  char path[] = "/tmp/a2a-supp-XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  const char *text = "# mine\nperf:*\nbogus line\n";
  ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
  nwarned = 0;
  warned[0] = '\0';
  ck_assert_int_eq(a2a_rt_supp_load(path, collect, NULL), 1);
  ck_assert_int_eq(nwarned, 1);
  ck_assert_ptr_nonnull(strstr(warned, ":3: no ':'"));
  ck_assert_ptr_nonnull(a2a_rt_supp_active());
  ck_assert_str_eq(a2a_rt_supp_active()->file, path);
  unlink(path);
}
END_TEST

/* The fuzz target's corpus (seeds and every input a fuzzer crashed on)
 * through the fuzz entry, each seed also in single-byte mutations. */
START_TEST(fuzz_corpus_replay) {
  ck_assert_int_ge(a2a_test_replay_corpus(A2A_FUZZ_SUPPRESS_CORPUS, a2a_fuzz_suppress_one, 300, 7u), 3);
}
END_TEST

static Suite *suppress_suite(void) {
  Suite *s = suite_create("suppress");
  TCase *tc = tcase_create("rules");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, comments_blanks_and_rules);
  tcase_add_test(tc, bad_lines_are_named_and_skipped);
  tcase_add_test(tc, many_bad_lines_are_capped);
  tcase_add_test(tc, glob_rule);
  tcase_add_test(tc, frames_are_matched_by_function_file_and_module);
  tcase_add_test(tc, python_frames);
  tcase_add_test(tc, checks_by_name_category_and_glob);
  tcase_add_test(tc, loader_reports_unreadable_files_once);
  tcase_add_test(tc, fuzz_corpus_replay);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suppress_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
