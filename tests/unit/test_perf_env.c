/* test_perf_env.c - perf.env: the lint over synthetic environments (pure
 * function) and the analyzer end to end through the collector. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "perf_env.h"

static const a2a_perf_env_hit *find(const a2a_perf_env_hit *h, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(h[i].var, name) == 0) return &h[i];
  return NULL;
}

START_TEST(seed_document_settings) {
  char *env[] = {"NCCL_ALGO=tree", "NCCL_BUFFSIZE=4194304", "PATH=/usr/bin",
                 "CUDA_LAUNCH_BLOCKING=1", "NCCL_DEBUG=INFO", "NCCL_DEBUG_SUBSYS=ALL", NULL};
  a2a_perf_env_ctx ctx = {0};
  a2a_perf_env_hit h[16];
  size_t n = a2a_perf_env_lint(env, &ctx, h, 16);
  ck_assert_uint_eq(n, 5);
  const a2a_perf_env_hit *algo = find(h, n, "NCCL_ALGO");
  ck_assert_ptr_nonnull(algo);
  ck_assert_int_eq(algo->sev, A2A_SEV_WARNING);
  ck_assert_ptr_nonnull(strstr(algo->reason, "no effect on AlltoAll"));
  ck_assert_ptr_nonnull(strstr(algo->ref, "nccl-algo"));
  const a2a_perf_env_hit *buf = find(h, n, "NCCL_BUFFSIZE");
  ck_assert_int_eq(buf->sev, A2A_SEV_INFO);
  ck_assert_ptr_nonnull(strstr(buf->reason, "no-op"));
  ck_assert_int_eq(find(h, n, "CUDA_LAUNCH_BLOCKING")->sev, A2A_SEV_WARNING);
  ck_assert_int_eq(find(h, n, "NCCL_DEBUG")->sev, A2A_SEV_WARNING);
  ck_assert_ptr_nonnull(find(h, n, "NCCL_DEBUG_SUBSYS"));
  ck_assert_ptr_null(find(h, n, "PATH"));
}
END_TEST

/* NCCL_ALGO / NCCL_PROTO in NCCL's syntax: a selection for every
 * collective is forced (warning); naming functions only, or excluding, is
 * what the fix advises or a documented workaround (info). */
START_TEST(algo_and_proto_syntax) {
  struct { const char *kv; a2a_severity sev; } cases[] = {
      {"NCCL_ALGO=Ring,Tree", A2A_SEV_WARNING},
      {"NCCL_ALGO=ring;allreduce:tree", A2A_SEV_WARNING},
      {"NCCL_ALGO=allreduce:tree", A2A_SEV_INFO},
      {"NCCL_ALGO=allreduce:tree;broadcast:ring", A2A_SEV_INFO},
      {"NCCL_ALGO=^NVLS", A2A_SEV_INFO},
      {"NCCL_PROTO=Simple", A2A_SEV_WARNING},
      {"NCCL_PROTO=^LL128", A2A_SEV_INFO},
      {"NCCL_PROTO=^LL128;allreduce:LL128", A2A_SEV_INFO},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *env[] = {(char *)cases[i].kv, NULL};
    a2a_perf_env_ctx ctx = {0};
    a2a_perf_env_hit h[4];
    size_t n = a2a_perf_env_lint(env, &ctx, h, 4);
    ck_assert_msg(n == 1, "%s: %zu hits", cases[i].kv, n);
    ck_assert_msg(h[0].sev == cases[i].sev, "%s: severity %d", cases[i].kv, (int)h[0].sev);
  }
}
END_TEST

START_TEST(harmless_values_are_quiet) {
  char *env[] = {"CUDA_LAUNCH_BLOCKING=0", "NCCL_DEBUG=WARN", "NCCL_DEBUG_SUBSYS=INIT,NET",
                 "NCCL_P2P_DISABLE=0", "NCCL_IB_DISABLE=1", "NCCL_SOCKET_IFNAME=eth0",
                 "NCCL_NTHREADS=512", "NCCL_ALGO=", "TORCH_NCCL_BLOCKING_WAIT=0",
                 "NCCL_LAUNCH_MODE=PARALLEL",
                 /* what production launch scripts commonly set */
                 "NCCL_DEBUG=warn", "NCCL_IB_HCA=mlx5", "NCCL_SOCKET_NTHREADS=4",
                 "NCCL_NSOCKS_PERTHREAD=4", "NCCL_CROSS_NIC=1", "NCCL_IB_GID_INDEX=3",
                 "TORCH_NCCL_ASYNC_ERROR_HANDLING=1", "TORCH_NCCL_HIGH_PRIORITY=1",
                 "TORCH_NCCL_AVOID_RECORD_STREAMS=1", "NCCL_NVLS_ENABLE=1",
                 "CUDA_DEVICE_MAX_CONNECTIONS=32",
                 /* NVIDIA's CUDA container images; build variables */
                 "NCCL_VERSION=2.28.3-1", "NCCL_HOME=/opt/nccl", "NCCL_LIB_DIR=/usr/lib", NULL};
  a2a_perf_env_ctx ctx = {.ib_host = false};
  a2a_perf_env_hit h[16];
  size_t n = a2a_perf_env_lint(env, &ctx, h, 16);
  for (size_t i = 0; i < n && i < 16; i++) fprintf(stderr, "unexpected: %s\n", h[i].var);
  ck_assert_uint_eq(n, 0);
}
END_TEST

START_TEST(conditional_rules) {
  a2a_perf_env_hit h[16];
  /* NCCL_IB_DISABLE only on an InfiniBand host. */
  char *ib[] = {"NCCL_IB_DISABLE=1", NULL};
  a2a_perf_env_ctx no_ib = {0}, with_ib = {.ib_host = true};
  ck_assert_uint_eq(a2a_perf_env_lint(ib, &no_ib, h, 16), 0);
  ck_assert_uint_eq(a2a_perf_env_lint(ib, &with_ib, h, 16), 1);
  ck_assert_int_eq(h[0].sev, A2A_SEV_WARNING);
  /* CUDA_DEVICE_MAX_CONNECTIONS=1: warning alone, info with TransformerEngine. */
  char *cdmc[] = {"CUDA_DEVICE_MAX_CONNECTIONS=1", NULL};
  ck_assert_uint_eq(a2a_perf_env_lint(cdmc, &no_ib, h, 16), 1);
  ck_assert_int_eq(h[0].sev, A2A_SEV_WARNING);
  char *cdmc_te[] = {"CUDA_DEVICE_MAX_CONNECTIONS=1", "NVTE_FLASH_ATTN=1", NULL};
  ck_assert_uint_eq(a2a_perf_env_lint(cdmc_te, &no_ib, h, 16), 1);
  ck_assert_int_eq(h[0].sev, A2A_SEV_INFO);
  /* BUFFSIZE: not a number, not a power of two, tiny, other. */
  char *b1[] = {"NCCL_BUFFSIZE=4M", "NCCL_NTHREADS=96", NULL};
  ck_assert_uint_eq(a2a_perf_env_lint(b1, &no_ib, h, 16), 2);
  ck_assert_ptr_nonnull(strstr(h[0].reason, "not a number"));
  ck_assert_ptr_nonnull(strstr(h[1].reason, "only 64, 128, 256 or 512"));
  char *b2[] = {"NCCL_BUFFSIZE=3000000", NULL};
  a2a_perf_env_lint(b2, &no_ib, h, 16);
  ck_assert_ptr_nonnull(strstr(h[0].reason, "power of two"));
  char *b3[] = {"NCCL_BUFFSIZE=65536", NULL};
  a2a_perf_env_lint(b3, &no_ib, h, 16);
  ck_assert_ptr_nonnull(strstr(h[0].reason, "below 1 MiB"));
  char *b4[] = {"NCCL_BUFFSIZE=8388608", NULL};
  a2a_perf_env_lint(b4, &no_ib, h, 16);
  ck_assert_int_eq(h[0].sev, A2A_SEV_INFO);
  /* Channels: far below / above the defaults warn, moderate values inform. */
  char *ch[] = {"NCCL_MAX_NCHANNELS=2", "NCCL_MIN_NCHANNELS=48", NULL};
  ck_assert_uint_eq(a2a_perf_env_lint(ch, &no_ib, h, 16), 2);
  ck_assert_int_eq(h[0].sev, A2A_SEV_WARNING);
  ck_assert_int_eq(h[1].sev, A2A_SEV_WARNING);
  char *ch2[] = {"NCCL_MAX_NCHANNELS=16", NULL};
  ck_assert_uint_eq(a2a_perf_env_lint(ch2, &no_ib, h, 16), 1);
  ck_assert_int_eq(h[0].sev, A2A_SEV_INFO);
  /* Levels: LOC disables (warning), other levels inform. */
  char *lv[] = {"NCCL_P2P_LEVEL=LOC", "NCCL_NET_GDR_LEVEL=PHB", NULL};
  ck_assert_uint_eq(a2a_perf_env_lint(lv, &no_ib, h, 16), 2);
  ck_assert_int_eq(h[0].sev, A2A_SEV_WARNING);
  ck_assert_int_eq(h[1].sev, A2A_SEV_INFO);
  /* Subsystems with '^': everything except INIT still logs COLL. */
  char *ss[] = {"NCCL_DEBUG_SUBSYS=^INIT", NULL};
  ck_assert_uint_eq(a2a_perf_env_lint(ss, &no_ib, h, 16), 1);
  char *ss2[] = {"NCCL_DEBUG_SUBSYS=^COLL,CALL,PROXY", NULL};
  ck_assert_uint_eq(a2a_perf_env_lint(ss2, &no_ib, h, 16), 0);
  char *lm[] = {"NCCL_LAUNCH_MODE=group", "TORCH_NCCL_BLOCKING_WAIT=1", "NCCL_PROTO=LL128", NULL};
  ck_assert_uint_eq(a2a_perf_env_lint(lm, &no_ib, h, 16), 3);
}
END_TEST

START_TEST(typos_suggest_the_closest_real_name) {
  char *env[] = {"NCCL_IB_HAC=mlx5_0", "NCCL_SOCKET_IFNAM=eth0", "NCCL_BUFSIZE=1",
                 "NCCL_MY_PLUGIN_KNOB=3", "NCCL_DESYNC_DEBUG=1", "NCCL_TESTS_DEVICE=0", NULL};
  a2a_perf_env_ctx ctx = {0};
  a2a_perf_env_hit h[16];
  size_t n = a2a_perf_env_lint(env, &ctx, h, 16);
  ck_assert_uint_eq(n, 4);
  ck_assert_str_eq(h[0].suggestion, "NCCL_IB_HCA");
  ck_assert_int_eq(h[0].sev, A2A_SEV_WARNING);
  ck_assert_str_eq(h[1].suggestion, "NCCL_SOCKET_IFNAME");
  ck_assert_str_eq(h[2].suggestion, "NCCL_BUFFSIZE");
  ck_assert_str_eq(h[3].suggestion, "");
  ck_assert_int_eq(h[3].sev, A2A_SEV_INFO);
  ck_assert(a2a_perf_env_known_nccl("NCCL_NET_GDR_LEVEL"));
  ck_assert(a2a_perf_env_known_nccl("NCCL_DEBUG"));
  ck_assert(!a2a_perf_env_known_nccl("NCCL_IB_HAC"));
  ck_assert(a2a_perf_env_not_nccl("NCCL_VERSION"));
  ck_assert(!a2a_perf_env_not_nccl("NCCL_VERSIONS"));
  /* ... and never a typo suggestion: a misspelt real name still is. */
  char *v[] = {"NCCL_VERSOIN=2", NULL};
  ck_assert_uint_eq(a2a_perf_env_lint(v, &ctx, h, 16), 1);
  ck_assert_str_eq(h[0].suggestion, "");
}
END_TEST

START_TEST(analyzer_reports_once_at_first_event) {
  setenv("NCCL_ALGO", "Tree", 1);
  setenv("NCCL_SOKET_IFNAME", "lo", 1);
  collector_reset(); /* init reads the environment */
  unsetenv("NCCL_ALGO"); /* later changes are not seen: read once */
  ck_assert_uint_eq(collector_count("perf.env"), 0);
  /* Reported at the first NCCL event, not before (a CUDA-only process,
   * such as a data loader, gets nothing). */
  a2a_event cu = ev_make(A2A_EV_SET_DEVICE);
  ev_dispatch(&cu, 0);
  ck_assert_uint_eq(collector_count("perf.env"), 0);
  a2a_event ev = ev_make(A2A_EV_GROUP_START);
  ev_dispatch(&ev, 0);
  ck_assert_uint_eq(collector_count("perf.env"), 2);
  ev_dispatch(&ev, 0);
  ck_assert_uint_eq(collector_count("perf.env"), 2);
  const collected *c = collector_find("perf.env");
  ck_assert_ptr_nonnull(strstr(c->message, "NCCL_ALGO=Tree"));
  ck_assert_ptr_nonnull(strstr(c->details, "\"recommendation\""));
  ck_assert_ptr_nonnull(strstr(c->details, "\"reference\""));
  ck_assert_ptr_nonnull(strstr(collector_get(1)->message, "did you mean NCCL_SOCKET_IFNAME"));
  /* Disabled check: nothing. */
  unsetenv("NCCL_SOKET_IFNAME");
  setenv("NCCL_ALGO", "Tree", 1);
  collector_reset();
  collector_disable_check("perf.env");
  collector_reinit();
  ev_dispatch(&ev, 0);
  ck_assert_uint_eq(collector_count("perf.env"), 0);
  unsetenv("NCCL_ALGO");
}
END_TEST

/* The gate (a2a_analyzer.pre_gate): open from init while findings wait to
 * be reported, shut by the report - the hot dispatch the NCCL wrappers use
 * leaves the handler out while it reads 0, so a gate shut too early loses
 * the report, and one left open keeps the handler in every call's list. */
extern const a2a_analyzer a2a_analyzer_perf_env;
START_TEST(gate_open_until_reported) {
  const a2a_analyzer *a = &a2a_analyzer_perf_env;
  const uint64_t nccl = A2A_KIND_BIT(A2A_EV_COLL) | A2A_KIND_BIT(A2A_EV_P2P) |
                        A2A_KIND_BIT(A2A_EV_GROUP_START) | A2A_KIND_BIT(A2A_EV_GROUP_END);
  ck_assert_ptr_nonnull(a->pre_gate);
  ck_assert((a->pre_gated & nccl) == nccl);
  ck_assert(a->pre_gated == a->pre);
  setenv("NCCL_ALGO", "Tree", 1);
  collector_reset();
  unsetenv("NCCL_ALGO");
  ck_assert_uint_ne(atomic_load(a->pre_gate), 0);
  a2a_event ev = ev_make(A2A_EV_P2P);
  ev.phase = A2A_PRE;
  a2a_dispatch_hot(&ev, A2A_EV_P2P, A2A_PRE);
  ck_assert_uint_eq(collector_count("perf.env"), 1);
  ck_assert_uint_eq(atomic_load(a->pre_gate), 0);
  a2a_dispatch_hot(&ev, A2A_EV_P2P, A2A_PRE);
  ck_assert_uint_eq(collector_count("perf.env"), 1);
  /* Nothing to report: shut from init. */
  collector_reset();
  ck_assert_uint_eq(atomic_load(a->pre_gate), 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("perf_env");
  TCase *tc = tcase_create("env");
  tcase_set_timeout(tc, 10);
  tcase_add_test(tc, seed_document_settings);
  tcase_add_test(tc, harmless_values_are_quiet);
  tcase_add_test(tc, algo_and_proto_syntax);
  tcase_add_test(tc, conditional_rules);
  tcase_add_test(tc, typos_suggest_the_closest_real_name);
  tcase_add_test(tc, analyzer_reports_once_at_first_event);
  tcase_add_test(tc, gate_open_until_reported);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
