/* test_tool.c - unit tests of the a2acheck command's pure parts (tool/):
 * the strict JSON parser, the JSONL record reader on valid and hostile
 * lines, stack frame parsing (native and Python forms), merging a job's
 * logs (fixtures/), the failure policy, the renderers' invariants, and a
 * deterministic mutation run through the fuzz entry (a2a_fuzz_one).
 * Fixtures are read from A2A_TOOL_FIXTURES (compile definition). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "graph.h"
#include "job.h"
#include "json.h"
#include "options.h"
#include "record.h"
#include "report.h"

int a2a_fuzz_one(const uint8_t *data, size_t size);

#define FIX(d) A2A_TOOL_FIXTURES "/" d

/* ---- JSON ---------------------------------------------------------- */

static int parse_ok(const char *text, jval **v, arena *a) {
  char err[128];
  return json_parse(text, strlen(text), a, NULL, v, err, sizeof err);
}

/* `a2acheck run`'s flags check values by the runtime's rules, ranges from
 * the one options table (a2a_options.inc) included: a value the runtime
 * would reject is a usage error before anything runs. */
START_TEST(run_flags_use_the_table_ranges) {
  const a2a_opt_row *r = a2a_opt_by_env("A2ACHECK_HANG_TIMEOUT");
  ck_assert_ptr_nonnull(r);
  ck_assert_ptr_null(a2a_opt_check_value(r, "10"));
  ck_assert_str_eq(a2a_opt_check_value(r, "-5"), "out of range");
  ck_assert_str_eq(a2a_opt_check_value(r, "0"), "out of range");
  ck_assert_str_eq(a2a_opt_check_value(r, "nan"), "not a finite number");
  ck_assert_str_eq(a2a_opt_check_value(r, " 5"), "not a finite number");
  r = a2a_opt_by_env("A2ACHECK_XRANK_QUEUE");
  ck_assert_ptr_null(a2a_opt_check_value(r, "2048"));
  ck_assert_str_eq(a2a_opt_check_value(r, "3000"), "out of range");
  ck_assert_str_eq(a2a_opt_check_value(r, "4611686018427387904"), "out of range");
  ck_assert_str_eq(a2a_opt_check_value(r, "0x800"), "not a decimal integer");
  ck_assert_str_eq(a2a_opt_type_text(r), "int a power of two in 1024..4194304");
  r = a2a_opt_by_env("A2ACHECK_STALL_WARNING");
  ck_assert_ptr_null(a2a_opt_check_value(r, "0"));
  ck_assert_str_eq(a2a_opt_check_value(r, "0.1"), "out of range");
  r = a2a_opt_by_env("A2ACHECK_LOW_BW_RATIO");
  ck_assert_str_eq(a2a_opt_check_value(r, "1"), "out of range");
  ck_assert_ptr_null(a2a_opt_check_value(r, ".5"));
}
END_TEST

START_TEST(json_accepts_rfc8259) {
  arena a = {0};
  jval *v;
  ck_assert_int_eq(parse_ok(" {\"a\":[1,-2.5e3,true,false,null,\"x\\u00e9\\ud83d\\ude00\"],\"b\":{}} ", &v, &a), 0);
  ck_assert_int_eq(v->kind, J_OBJ);
  const jval *arr = json_get_arr(v, "a");
  ck_assert_ptr_nonnull(arr);
  ck_assert_int_eq(arr->u.arr.n, 6);
  long long i;
  ck_assert(json_as_int(arr->u.arr.v[0], &i) && i == 1);
  double d;
  ck_assert(json_as_num(arr->u.arr.v[1], &d) && d == -2500);
  ck_assert(!arr->u.arr.v[1]->u.num.is_int);
  ck_assert_str_eq(arr->u.arr.v[5]->u.str.s, "x\xc3\xa9\xf0\x9f\x98\x80");
  ck_assert_int_eq(json_get_obj(v, "b")->u.obj.n, 0);
  /* integers beyond long long are numbers, not ints */
  ck_assert_int_eq(parse_ok("123456789012345678901234567890", &v, &a), 0);
  ck_assert(!v->u.num.is_int);
  ck_assert_int_eq(parse_ok("-9223372036854775808", &v, &a), 0);
  ck_assert(v->u.num.is_int && v->u.num.i == INT64_MIN);
  arena_free(&a);
}
END_TEST

START_TEST(json_refuses_what_rfc8259_refuses) {
  static const char *bad[] = {
      "", " ", "{", "[1,]", "{\"a\":1,}", "{'a':1}", "01", "1.", ".5", "-", "+1", "NaN", "Infinity",
      "[1 2]", "{\"a\" 1}", "\"a\tb\"", "\"\\x\"", "\"\\u12\"", "tru", "nul", "// c\n1", "1 2",
      "{\"a\":1}}", "\"unterminated", "[\"a\",", "1e", "1e+", "0x10",
  };
  arena a = {0};
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
    jval *v;
    char err[128];
    int rc = json_parse(bad[k], strlen(bad[k]), &a, NULL, &v, err, sizeof err);
    ck_assert_msg(rc != 0, "accepted invalid JSON: %s", bad[k]);
    ck_assert_msg(err[0], "no reason for %s", bad[k]);
  }
  arena_free(&a);
}
END_TEST

START_TEST(json_limits_bound_work) {
  arena a = {0};
  jval *v;
  char err[128];
  strbuf deep = {0};
  for (int k = 0; k < 65; k++) sb_putc(&deep, '[');
  for (int k = 0; k < 65; k++) sb_putc(&deep, ']');
  ck_assert_int_ne(json_parse(deep.s, deep.len, &a, NULL, &v, err, sizeof err), 0);
  ck_assert(strstr(err, "deep"));
  deep.len = 0;
  for (int k = 0; k < 64; k++) sb_putc(&deep, '[');
  for (int k = 0; k < 64; k++) sb_putc(&deep, ']');
  ck_assert_int_eq(json_parse(deep.s, deep.len, &a, NULL, &v, err, sizeof err), 0);
  sb_free(&deep);
  json_limits lim = {.max_depth = 8, .max_values = 10};
  const char *many = "[1,2,3,4,5,6,7,8,9,10,11]";
  ck_assert_int_ne(json_parse(many, strlen(many), &a, &lim, &v, err, sizeof err), 0);
  ck_assert(strstr(err, "too many"));
  arena small = {.limit = 64};
  const char *big = "[\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"]";
  ck_assert_int_ne(json_parse(big, strlen(big), &small, NULL, &v, err, sizeof err), 0);
  ck_assert(strstr(err, "memory"));
  arena_free(&small);
  arena_free(&a);
}
END_TEST

START_TEST(json_strings_are_valid_utf8) {
  arena a = {0};
  jval *v;
  /* invalid bytes and unpaired surrogates become U+FFFD; \u0000 too */
  const char raw[] = "\"a\xff" "b\xc3(\\ud800\\u0000z\"";
  char err[64];
  ck_assert_int_eq(json_parse(raw, sizeof raw - 1, &a, NULL, &v, err, sizeof err), 0);
  ck_assert_str_eq(v->u.str.s, "a\xef\xbf\xbd" "b\xef\xbf\xbd(\xef\xbf\xbd\xef\xbf\xbdz");
  /* and the writer round-trips a tree */
  ck_assert_int_eq(parse_ok("{\"k\":[1,2.5,\"q\\\"\\n\",null,{\"x\":false}]}", &v, &a), 0);
  strbuf b = {0};
  json_write(&b, v);
  ck_assert_str_eq(b.s, "{\"k\":[1,2.5,\"q\\\"\\n\",null,{\"x\":false}]}");
  sb_free(&b);
  arena_free(&a);
}
END_TEST

/* ---- records ------------------------------------------------------- */

START_TEST(record_reads_the_documented_fields) {
  arena a = {0};
  a2a_record r;
  char why[128];
  const char *line =
      "{\"check\":\"size.p2p-mismatch\",\"severity\":\"error\",\"id\":1,\"rank\":2,\"host\":\"vm\","
      "\"pid\":24491,\"thread\":2,\"comm\":{\"name\":\"comm#1(c31)\",\"hash\":\"0xc31\",\"size\":4,"
      "\"rank\":2},\"message\":\"m\",\"details\":{\"sender\":1},\"stack\":[\"f (a) at a.c:1\"],"
      "\"time\":\"2026-12-01T19:45:59.008Z\",\"count\":3                   }\n";
  ck_assert_int_eq(a2a_record_parse(line, strlen(line), &a, &r, why, sizeof why), A2A_REC_OK);
  ck_assert_str_eq(r.check, "size.p2p-mismatch");
  ck_assert_int_eq(r.severity, SEV_ERROR);
  ck_assert(r.has_rank && r.rank == 2);
  ck_assert_int_eq(r.pid, 24491);
  ck_assert_str_eq(r.comm_hash, "0xc31");
  ck_assert_int_eq(r.comm_size, 4);
  ck_assert_int_eq(r.nstack, 1);
  ck_assert_int_eq(r.count, 3);
  long long s;
  ck_assert(json_get_int(r.details, "sender", &s) && s == 1);
  /* 2026-12-01T19:45:59.008Z */
  ck_assert(fabs(r.time_ms - 1796154359008.0) < 0.5);
  const char *minimal = "{\"check\":\"a.b\",\"severity\":\"info\",\"rank\":null}";
  ck_assert_int_eq(a2a_record_parse(minimal, strlen(minimal), &a, &r, why, sizeof why), A2A_REC_OK);
  ck_assert(!r.has_rank);
  ck_assert_int_eq(r.count, 1);
  ck_assert_str_eq(r.message, "");
  ck_assert_int_eq(a2a_record_parse("  \r\n", 4, &a, &r, why, sizeof why), A2A_REC_BLANK);
  arena_free(&a);
}
END_TEST

START_TEST(record_refuses_non_records) {
  static const char *bad[] = {
      "[1]", "{}", "{\"check\":\"\",\"severity\":\"info\"}", "{\"check\":\"a\",\"severity\":\"debug\"}",
      "{\"check\":\"a b\",\"severity\":\"info\"}", "{\"check\":\"a\",\"severity\":\"info\",\"pid\":1.5}",
      "{\"check\":\"a\",\"severity\":\"info\",\"rank\":\"0\"}", "{\"check\":\"a\",\"severity\":\"info\",\"stack\":\"x\"}",
      "{\"check\":\"a\",\"severity\":\"info\",\"stack\":[null]}", "{\"check\":\"a\",\"severity\":\"info\",\"details\":[]}",
      "{\"check\":\"a\",\"severity\":\"info\",\"comm\":{\"size\":\"4\"}}", "{\"check\":\"a\",\"severity\":\"info\",\"count\":-1}",
      "{\"check\":7,\"severity\":\"info\"}",
  };
  arena a = {0};
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
    a2a_record r;
    char why[128];
    ck_assert_msg(a2a_record_parse(bad[k], strlen(bad[k]), &a, &r, why, sizeof why) == A2A_REC_SCHEMA,
                  "accepted %s", bad[k]);
    ck_assert(why[0]);
  }
  /* longer than the limit: refused without parsing */
  size_t n = A2A_RECORD_MAX_LINE + 10;
  char *huge = malloc(n);
  memset(huge, ' ', n);
  huge[0] = '{';
  a2a_record r;
  char why[128];
  ck_assert_int_eq(a2a_record_parse(huge, n, &a, &r, why, sizeof why), A2A_REC_TOO_LONG);
  free(huge);
  arena_free(&a);
}
END_TEST

START_TEST(time_parsing) {
  ck_assert(fabs(a2a_parse_time_ms("1970-01-01T00:00:00Z")) < 1e-9);
  ck_assert(fabs(a2a_parse_time_ms("2000-03-01T00:00:01.5Z") - 951868801500.0) < 1e-6);
  ck_assert(a2a_parse_time_ms("2000-13-01T00:00:00Z") < 0);
  ck_assert(a2a_parse_time_ms("yesterday") < 0);
  ck_assert(a2a_parse_time_ms("2000-01-01T00:00:00+01:00") < 0);
}
END_TEST

/* ---- frames -------------------------------------------------------- */

typedef struct fcase {
  const char *in, *func, *module, *file;
  int line, col;
  bool python;
} fcase;

START_TEST(frames_native_and_python) {
  static const fcase cases[] = {
      {"main+0x398 (a2a_bug) at a2a_bug.c:101", "main", "a2a_bug", "a2a_bug.c", 101, 0, false},
      {"run_rank (inlined) (a2a_bug) at a2a_bug.c:68", "run_rank", "a2a_bug", "a2a_bug.c", 68, 0, false},
      {"alltoall.part.0+0x74 (xrank_scenarios) at /src/x y/xrank_scenarios.c:107", "alltoall.part.0",
       "xrank_scenarios", "/src/x y/xrank_scenarios.c", 107, 0, false},
      {"__libc_start_main+0x85 (libc.so.6)", "__libc_start_main", "libc.so.6", "", 0, 0, false},
      {"?? (libc.so.6+0x2724a)", "", "libc.so.6", "", 0, 0, false},
      {"a2a_bug+0x1588", "", "a2a_bug", "", 0, 0, false},
      {"dispatch (moe.py:88)", "dispatch", "", "moe.py", 88, 0, true},
      {"combine (/work/my proj/moe.py:91:17)", "combine", "", "/work/my proj/moe.py", 91, 17, true},
      {"[py] forward (moe.py:121)", "forward", "", "moe.py", 121, 0, true},
      {"forward at moe.py:121", "forward", "", "moe.py", 121, 0, true},
      {"moe.py:121 in forward", "forward", "", "moe.py", 121, 0, true},
      {"moe.py:121 (forward)", "forward", "", "moe.py", 121, 0, true},
      {"File \"/a/train.py\", line 33, in <module>", "<module>", "", "/a/train.py", 33, 0, true},
      {"py:step (t.py:5)", "step", "", "t.py", 5, 0, true},
      {"layer.pyx:9", "", "", "layer.pyx", 9, 0, true},
      {"_ZN4c10d5nccl2ApiEv+0x59 (libtorch_cuda.so)", "_ZN4c10d5nccl2ApiEv", "libtorch_cuda.so", "", 0, 0, false},
      {"", "", "", "", 0, 0, false},
      {"garbage (((", "garbage (((", "", "", 0, 0, false},
      {"f (x:12)", "f", "x:12", "", 0, 0, false}, /* "x" is no path: not a location */
      {"std::function<void (int)>::operator()(int) const+0x2a (libtorch.so)",
       "std::function<void (int)>::operator()(int) const", "libtorch.so", "", 0, 0, false},
      {"c10d::(anonymous namespace)::run(int) (inlined) (libc10d.so) at pg.cpp:77",
       "c10d::(anonymous namespace)::run(int)", "libc10d.so", "pg.cpp", 77, 0, false},
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    const fcase *c = &cases[k];
    a2a_frame f;
    bool loc = a2a_frame_parse(c->in, &f);
    ck_assert_msg(loc == (c->line > 0), "%s: located %d", c->in, loc);
    ck_assert_msg(!strcmp(f.func, c->func), "%s: func '%s'", c->in, f.func);
    ck_assert_msg(!strcmp(f.module, c->module), "%s: module '%s'", c->in, f.module);
    ck_assert_msg(!strcmp(f.file, c->file), "%s: file '%s'", c->in, f.file);
    ck_assert_msg(f.line == c->line && f.col == c->col, "%s: %d:%d", c->in, f.line, f.col);
    ck_assert_msg(f.python == c->python, "%s: python %d", c->in, f.python);
  }
  const char *stack[] = {"_ZN4c10d4sendEv+0x59 (libtorch_cuda.so)", "dispatch (moe.py:88)", "main (m.py:1)"};
  a2a_frame f;
  ck_assert_int_eq(a2a_frame_first_located(stack, 3, &f), 1);
  ck_assert_str_eq(f.file, "moe.py");
}
END_TEST

/* ---- merging the fixtures ------------------------------------------- */

static void load(rp_job *j, const char *dir) {
  rp_job_init(j);
  ck_assert_uint_gt(rp_job_add_dir(j, dir, NULL), 0);
  rp_job_merge(j);
}

static const rp_finding *find(const rp_job *j, const char *check) {
  for (size_t i = 0; i < j->nf; i++)
    if (!strcmp(j->f[i].check, check)) return &j->f[i];
  return NULL;
}

START_TEST(merge_joins_the_two_sides_of_a_mismatch) {
  rp_job j;
  load(&j, FIX("p2p"));
  ck_assert_uint_eq(j.nprocs, 5);
  ck_assert_uint_eq(j.nranks, 4);
  ck_assert_uint_eq(j.nf, 1);
  const rp_finding *f = find(&j, "size.p2p-mismatch");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(f->kind, RP_CROSS);
  ck_assert_uint_eq(f->nranks, 2);
  ck_assert_int_eq(f->ranks[0], 1);
  ck_assert_int_eq(f->ranks[1], 2);
  ck_assert_uint_eq(f->nocc, 2);
  ck_assert_str_eq(rp_occ_role(&j, f, &j.occ[f->occ[0]]), "sender");
  ck_assert_str_eq(rp_occ_role(&j, f, &j.occ[f->occ[1]]), "receiver");
  char site[256];
  a2a_frame fr;
  ck_assert(rp_occ_site(&j.occ[f->occ[0]], &fr, site, sizeof site));
  ck_assert_str_eq(site, "run_rank at a2a_bug.c:67");
  ck_assert(rp_occ_site(&j.occ[f->occ[1]], &fr, site, sizeof site));
  ck_assert_str_eq(site, "run_rank at a2a_bug.c:68");
  ck_assert_uint_eq(j.ncomms, 1);
  ck_assert_uint_eq(j.comms[0].nranks, 4);
  ck_assert_uint_eq(j.bad_lines, 0);
  /* a launcher (rank unknown, nothing but its summary) */
  size_t launchers = 0;
  for (size_t i = 0; i < j.nprocs; i++) launchers += rp_proc_is_launcher(&j.procs[i]);
  ck_assert_uint_eq(launchers, 1);
  rp_verdict v;
  rp_job_policy(&j, RP_FAIL_DEADLOCK, true, &v);
  ck_assert(!v.matched);
  rp_job_policy(&j, RP_FAIL_ERROR, false, &v);
  ck_assert(v.matched);
  rp_job_free(&j);
}
END_TEST

START_TEST(merge_tells_the_deadlock_once) {
  rp_job j;
  load(&j, FIX("order")); /* each rank names another communicator */
  ck_assert_uint_eq(j.nf, 1);
  const rp_finding *f = &j.f[0];
  ck_assert_str_eq(f->check, "group.deadlock");
  ck_assert_int_eq(f->kind, RP_DEADLOCK);
  ck_assert_uint_eq(f->nranks, 2);
  ck_assert(j.deadlock);
  rp_graph g;
  rp_graph_build(&j, f, &g);
  ck_assert_str_eq(g.source, "story");
  ck_assert_uint_eq(g.nn, 2);
  ck_assert_uint_eq(g.ne, 2); /* 0 -> 1 and 1 -> 0 */
  ck_assert(g.cycle && g.e[0].cycle && g.e[1].cycle);
  ck_assert_str_eq(g.n[0].state, "blocked");
  rp_graph_free(&g);
  rp_verdict v;
  rp_job_policy(&j, RP_FAIL_DEADLOCK, true, &v);
  ck_assert(v.matched && v.deadlock);
  rp_job_free(&j);

  load(&j, FIX("skip"));
  /* the deadlock first, then the three unmatched p2p (one per rank) */
  ck_assert_str_eq(j.f[0].check, "group.deadlock");
  ck_assert_uint_eq(j.f[0].nranks, 3);
  ck_assert_uint_eq(j.nf, 4);
  rp_graph_build(&j, &j.f[0], &g);
  ck_assert_uint_eq(g.nn, 4);
  ck_assert_uint_eq(g.ne, 3); /* everybody waits for the missing rank 3 */
  ck_assert(!g.cycle);
  int missing = -1;
  for (size_t i = 0; i < g.nn; i++)
    if (!strcmp(g.n[i].state, "exited")) missing = g.n[i].rank;
  ck_assert_int_eq(missing, 3);
  rp_graph_free(&g);
  rp_job_free(&j);
}
END_TEST

START_TEST(merge_reads_the_proposed_graph_and_ops) {
  rp_job j;
  load(&j, FIX("graph"));
  const rp_finding *f = rp_job_deadlock(&j);
  ck_assert_ptr_nonnull(f);
  rp_graph g;
  rp_graph_build(&j, f, &g);
  ck_assert_str_eq(g.source, "details.graph");
  ck_assert_uint_eq(g.nn, 3);
  ck_assert_uint_eq(g.ne, 3);
  ck_assert(g.cycle);
  ck_assert(g.e[0].cycle && g.e[1].cycle && !g.e[2].cycle);
  rp_graph_free(&g);
  rp_timeline t;
  rp_timeline_build(&j, f, &t);
  ck_assert_str_eq(t.source, "details.processes[].ops");
  ck_assert(!t.timed);
  /* in posting order, the last op of each row at 0; the age in the tip */
  ck_assert(t.items[3].x == 0 && t.items[0].x == -3);
  ck_assert(strstr(t.items[0].tip, "4100 ms before the verdict"));
  ck_assert_uint_eq(t.nrows, 3);
  ck_assert_uint_eq(t.nitems, 4 + 4 + 2);
  rp_timeline_free(&t);
  /* rank 2 left an empty log: no summary, counted as such */
  rp_ends e;
  rp_count_ends(&j, &e);
  ck_assert_uint_eq(e.no_summary, 1);
  ck_assert_uint_eq(e.failed_now, 2);
  rp_job_free(&j);
}
END_TEST

START_TEST(merge_dedups_local_findings_by_site) {
  rp_job j;
  load(&j, FIX("python"));
  const rp_finding *f = find(&j, "layout.scattered");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(f->kind, RP_LOCAL);
  ck_assert_uint_eq(f->nranks, 3);
  ck_assert(f->messages_differ);
  ck_assert_int_eq(f->count, 10 + 11 + 12);
  const rp_finding *d = find(&j, "size.dtype-mismatch");
  ck_assert_ptr_nonnull(d);
  ck_assert_uint_eq(d->nocc, 2);
  char site[256];
  a2a_frame fr;
  rp_occ_site(&j.occ[d->occ[0]], &fr, site, sizeof site);
  ck_assert_str_eq(fr.file, "moe.py");
  ck_assert_int_eq(fr.line, 88);
  rp_occ_site(&j.occ[d->occ[1]], &fr, site, sizeof site);
  ck_assert_int_eq(fr.line, 91);
  /* suppressed counts come from the summaries */
  bool seen = false;
  for (size_t i = 0; i < j.ncc; i++)
    if (!strcmp(j.cc[i].check, "layout.scattered")) {
      ck_assert_int_eq(j.cc[i].suppressed, 2);
      seen = true;
    }
  ck_assert(seen);
  /* performance: per (op, size) across ranks; unmeasured buckets have no bw */
  ck_assert_uint_eq(j.ncomms, 1);
  const rp_comm *c = &j.comms[0];
  ck_assert_uint_eq(c->nb, 3);
  ck_assert_str_eq(c->b[1].op, "AlltoAll");
  ck_assert_int_eq(c->b[1].lo, 1 << 20);
  ck_assert_int_eq(c->b[1].nbw, 4);
  ck_assert(fabs(c->b[1].bw_min - 1.1) < 1e-9 && fabs(c->b[1].bw_max - 4.1) < 1e-9);
  ck_assert_int_eq(c->b[0].nbw, 0);
  ck_assert(fabs(c->ovl_max - 0.75) < 1e-9);
  rp_verdict v;
  rp_job_policy(&j, RP_FAIL_ERROR, false, &v);
  ck_assert(!v.matched);
  rp_job_policy(&j, RP_FAIL_WARNING, false, &v);
  ck_assert(v.matched);
  rp_job_free(&j);
}
END_TEST

START_TEST(hostile_lines_are_counted_never_fatal) {
  rp_job j;
  load(&j, FIX("hostile"));
  ck_assert_uint_eq(j.nprocs, 1);
  ck_assert_uint_eq(j.bad_lines, 19);
  ck_assert_uint_eq(j.procs[0].nbad, 19);
  ck_assert(j.procs[0].has_summary);
  ck_assert_uint_eq(j.nf, 3); /* group.unbalanced and the two repaired "x" lines */
  ck_assert_uint_eq(j.nwarnings, 19);
  rp_job_free(&j);
}
END_TEST

START_TEST(killed_processes_still_fail_the_job) {
  rp_job j;
  load(&j, FIX("killed")); /* the deadlock verdicts, no summaries */
  rp_verdict v;
  rp_job_policy(&j, RP_FAIL_DEADLOCK, true, &v);
  ck_assert(v.matched && v.deadlock);
  ck_assert(strstr(v.reason, "without a summary"));
  rp_job_policy(&j, RP_FAIL_NEVER, true, &v);
  ck_assert(!v.matched);
  rp_job_free(&j);
}
END_TEST

/* ---- renderers ----------------------------------------------------- */

static char *render(const rp_job *j, rp_format f) {
  strbuf b = {0};
  rp_opts o = {.fail_level = RP_FAIL_ERROR, .command_status = -1, .exit_status = -1};
  rp_render(&b, f, j, &o);
  return b.s;
}

static size_t count(const char *s, const char *needle) {
  size_t n = 0;
  for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

START_TEST(junit_counts_match_its_testcases) {
  static const char *dirs[] = {FIX("p2p"), FIX("skip"), FIX("python"), FIX("graph"), FIX("hostile")};
  for (size_t d = 0; d < sizeof dirs / sizeof *dirs; d++) {
    rp_job j;
    load(&j, dirs[d]);
    char *x = render(&j, RP_JUNIT);
    size_t cases = count(x, "<testcase "), fails = count(x, "<failure ");
    char want[96];
    snprintf(want, sizeof want, "<testsuites name=\"a2acheck\" tests=\"%zu\" failures=\"%zu\"", cases, fails);
    ck_assert_msg(strstr(x, want), "%s: %s", dirs[d], want);
    ck_assert_uint_eq(count(x, "<testsuite "), j.nprocs);
    free(x);
    rp_job_free(&j);
  }
  /* p2p: per rank one "process" case, plus one failing case on ranks 1 and 2 */
  rp_job j;
  load(&j, FIX("p2p"));
  char *x = render(&j, RP_JUNIT);
  ck_assert(strstr(x, "tests=\"7\" failures=\"2\""));
  free(x);
  rp_job_free(&j);
}
END_TEST

START_TEST(every_format_renders_every_fixture) {
  static const char *dirs[] = {FIX("p2p"), FIX("skip"), FIX("order"), FIX("killed"),
                               FIX("python"), FIX("graph"), FIX("hostile")};
  for (size_t d = 0; d < sizeof dirs / sizeof *dirs; d++) {
    rp_job j;
    load(&j, dirs[d]);
    for (int f = 0; f < RP__NFORMATS; f++) {
      char *s = render(&j, (rp_format)f);
      ck_assert_msg(s && strlen(s) > 100, "%s %s", dirs[d], rp_format_name((rp_format)f));
      if (f == RP_HTML) {
        ck_assert(!strstr(s, "<script") && !strstr(s, "http://www.w3.org/1999") && !strstr(s, "<link"));
        if (j.deadlock) ck_assert(strstr(s, "class=\"wfg\""));
      }
      if (f == RP_JSON || f == RP_SARIF) { /* valid JSON, by our own parser */
        arena a = {0};
        jval *v;
        char err[128];
        ck_assert_msg(json_parse(s, strlen(s), &a, &(json_limits){.max_depth = 64, .max_values = 1 << 22},
                                 &v, err, sizeof err) == 0, "%s %s: %s", dirs[d], rp_format_name((rp_format)f), err);
        arena_free(&a);
      }
      free(s);
    }
    rp_job_free(&j);
  }
}
END_TEST

/* ---- the fuzz entry on mutated real lines --------------------------- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

START_TEST(fuzz_smoke) {
  static const char *files[] = {FIX("p2p/a2acheck.vm.24490.rank1.jsonl"), FIX("skip/a2acheck.vm.24597.rank0.jsonl"),
                                FIX("graph/a2acheck.node1.101.rank0.jsonl"),
                                FIX("python/a2acheck.gpu-a.example.org.1000.rank0.jsonl")};
  static const char tokens[][8] = {"{", "}", "[", "]", "\"", ":", ",", "\\", "\\u", "null", "-", "0", "1e9", "\n", "\xff"};
  for (size_t fi = 0; fi < sizeof files / sizeof *files; fi++) {
    FILE *fp = fopen(files[fi], "rb");
    ck_assert_ptr_nonnull(fp);
    char *buf = malloc(1 << 16);
    size_t n = fread(buf, 1, (1 << 16) - 64, fp);
    fclose(fp);
    a2a_fuzz_one((const uint8_t *)buf, n);
    for (int round = 0; round < 300; round++) {
      char *m = malloc(n + 64);
      memcpy(m, buf, n);
      size_t len = n;
      int edits = 1 + (int)(next() % 8);
      for (int e = 0; e < edits && len; e++) {
        size_t at = (size_t)(next() % len);
        switch (next() % 4) {
        case 0: m[at] = (char)next(); break;                                  /* flip a byte */
        case 1: len = at; break;                                              /* truncate */
        case 2: memmove(m + at, m + at + 1, len - at - 1), len--; break;      /* delete */
        default: {                                                            /* insert a token */
          const char *t = tokens[next() % (sizeof tokens / sizeof *tokens)];
          size_t tl = strlen(t);
          if (len + tl > n + 60) break;
          memmove(m + at + tl, m + at, len - at);
          memcpy(m + at, t, tl);
          len += tl;
        }
        }
      }
      a2a_fuzz_one((const uint8_t *)m, len);
      free(m);
    }
    free(buf);
  }
}
END_TEST

static Suite *tool_suite(void) {
  Suite *s = suite_create("tool");
  TCase *tc = tcase_create("json");
  tcase_add_test(tc, run_flags_use_the_table_ranges);
  tcase_add_test(tc, json_accepts_rfc8259);
  tcase_add_test(tc, json_refuses_what_rfc8259_refuses);
  tcase_add_test(tc, json_limits_bound_work);
  tcase_add_test(tc, json_strings_are_valid_utf8);
  suite_add_tcase(s, tc);
  tc = tcase_create("record");
  tcase_add_test(tc, record_reads_the_documented_fields);
  tcase_add_test(tc, record_refuses_non_records);
  tcase_add_test(tc, time_parsing);
  tcase_add_test(tc, frames_native_and_python);
  suite_add_tcase(s, tc);
  tc = tcase_create("merge");
  tcase_add_test(tc, merge_joins_the_two_sides_of_a_mismatch);
  tcase_add_test(tc, merge_tells_the_deadlock_once);
  tcase_add_test(tc, merge_reads_the_proposed_graph_and_ops);
  tcase_add_test(tc, merge_dedups_local_findings_by_site);
  tcase_add_test(tc, hostile_lines_are_counted_never_fatal);
  tcase_add_test(tc, killed_processes_still_fail_the_job);
  suite_add_tcase(s, tc);
  tc = tcase_create("render");
  tcase_add_test(tc, junit_counts_match_its_testcases);
  tcase_add_test(tc, every_format_renders_every_fixture);
  tcase_add_test(tc, fuzz_smoke);
  tcase_set_timeout(tc, 120);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(tool_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
