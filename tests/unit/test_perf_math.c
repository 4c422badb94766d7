/* test_perf_math.c - the perf analyzers' arithmetic against nccl-tests'
 * published formulas (src/<op>.cu: <Op>GetBw, with common.cu passing the
 * NCCL API count), with communicator sizes that differ from the world size. */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "perf_math.h"

/* nccl-tests' busbw for one op, written out independently of perf_math.c:
 * baseBw = bytes/1e9/sec with bytes = count*typesize (*nranks for the
 * gather/scatter/alltoall family), busBw = baseBw * factor. */
static double nccltests_busbw(int op, size_t count, size_t ts, double sec, int n) {
  double base, factor;
  switch (op) {
  case A2A_COLL_ALLREDUCE: base = (double)(count * ts) / 1e9 / sec; factor = 2.0 * (n - 1) / n; break;
  case A2A_COLL_ALLGATHER: base = (double)(count * ts * n) / 1e9 / sec; factor = (double)(n - 1) / n; break;
  case A2A_COLL_REDUCESCATTER: base = (double)(count * ts * n) / 1e9 / sec; factor = (double)(n - 1) / n; break;
  case A2A_COLL_ALLTOALL: base = (double)(count * n * ts) / 1e9 / sec; factor = (double)(n - 1) / n; break;
  case A2A_COLL_GATHER: base = (double)(count * n * ts) / 1e9 / sec; factor = (double)(n - 1) / n; break;
  case A2A_COLL_SCATTER: base = (double)(count * n * ts) / 1e9 / sec; factor = (double)(n - 1) / n; break;
  case A2A_COLL_BROADCAST: base = (double)(count * ts) / 1e9 / sec; factor = 1; break;
  case A2A_COLL_REDUCE: base = (double)(count * ts) / 1e9 / sec; factor = 1; break;
  default: /* sendrecv */ base = (double)(count * ts) / 1e9 / sec; factor = 1; break;
  }
  return base * factor;
}

static double ours_busbw(int op, size_t count, size_t ts, double sec, int n) {
  uint64_t bytes = a2a_perf_op_bytes(op, count, ts, n);
  return a2a_perf_algbw_gbps(bytes, sec) * a2a_perf_busbw_factor(op, n);
}

START_TEST(busbw_matches_nccl_tests_for_every_op) {
  /* Communicator sizes 2, 3, 6 and 12 as sub-groups of a 16-rank world:
   * the factor must use the group size (DeepSpeed's bug uses the world). */
  const int sizes[] = {2, 3, 6, 12};
  const int ops[] = {A2A_COLL_ALLREDUCE, A2A_COLL_BROADCAST, A2A_COLL_REDUCE,
                     A2A_COLL_ALLGATHER, A2A_COLL_REDUCESCATTER, A2A_COLL_ALLTOALL,
                     A2A_COLL_GATHER, A2A_COLL_SCATTER, A2A_PERF_OP_SENDRECV};
  for (size_t s = 0; s < 4; s++)
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
      double want = nccltests_busbw(ops[o], 1 << 20, 4, 0.0025, sizes[s]);
      double got = ours_busbw(ops[o], 1 << 20, 4, 0.0025, sizes[s]);
      ck_assert_msg(fabs(want - got) < 1e-9 * want, "op %d n %d: want %f got %f", ops[o],
                    sizes[s], want, got);
      /* World size 16 would give a different answer for every op whose
       * factor depends on n: the test would catch using the wrong size. */
      if (ops[o] != A2A_COLL_BROADCAST && ops[o] != A2A_COLL_REDUCE && ops[o] != A2A_PERF_OP_SENDRECV)
        ck_assert(fabs(ours_busbw(ops[o], 1 << 20, 4, 0.0025, 16) - want) > 1e-6);
    }
}
END_TEST

START_TEST(published_factors) {
  /* The table in nccl-tests' doc/PERFORMANCE.md, n = 8. */
  ck_assert_double_eq_tol(a2a_perf_busbw_factor(A2A_COLL_ALLREDUCE, 8), 1.75, 1e-12);
  ck_assert_double_eq_tol(a2a_perf_busbw_factor(A2A_COLL_ALLGATHER, 8), 0.875, 1e-12);
  ck_assert_double_eq_tol(a2a_perf_busbw_factor(A2A_COLL_REDUCESCATTER, 8), 0.875, 1e-12);
  ck_assert_double_eq_tol(a2a_perf_busbw_factor(A2A_COLL_ALLTOALL, 8), 0.875, 1e-12);
  ck_assert_double_eq_tol(a2a_perf_busbw_factor(A2A_PERF_OP_P2P_ALLTOALL, 8), 0.875, 1e-12);
  ck_assert_double_eq_tol(a2a_perf_busbw_factor(A2A_COLL_BROADCAST, 8), 1.0, 1e-12);
  ck_assert_double_eq_tol(a2a_perf_busbw_factor(A2A_COLL_REDUCE, 8), 1.0, 1e-12);
  ck_assert_double_eq_tol(a2a_perf_busbw_factor(A2A_PERF_OP_SENDRECV, 8), 1.0, 1e-12);
  /* n = 1: no traffic leaves the rank. */
  ck_assert_double_eq_tol(a2a_perf_busbw_factor(A2A_COLL_ALLTOALL, 1), 0.0, 1e-12);
  ck_assert_double_eq_tol(a2a_perf_busbw_factor(A2A_COLL_ALLREDUCE, 0), 0.0, 1e-12);
  /* 1 GB = 1e9 B. */
  ck_assert_double_eq_tol(a2a_perf_algbw_gbps(1000000000ULL, 0.5), 2.0, 1e-12);
  ck_assert_double_eq_tol(a2a_perf_algbw_gbps(100, 0), 0.0, 1e-15);
  /* bytes: AlltoAll count is per peer, AllGather count per rank. */
  ck_assert_uint_eq(a2a_perf_op_bytes(A2A_COLL_ALLTOALL, 1000, 2, 4), 8000);
  ck_assert_uint_eq(a2a_perf_op_bytes(A2A_COLL_ALLGATHER, 1000, 4, 3), 12000);
  ck_assert_uint_eq(a2a_perf_op_bytes(A2A_COLL_ALLREDUCE, 1000, 4, 3), 4000);
}
END_TEST

START_TEST(buckets) {
  ck_assert_int_eq(a2a_perf_bucket(0), 0);
  ck_assert_int_eq(a2a_perf_bucket(1), 0);
  ck_assert_int_eq(a2a_perf_bucket(1023), 9);
  ck_assert_int_eq(a2a_perf_bucket(1024), 10);
  ck_assert_int_eq(a2a_perf_bucket(1048575), 19);
  ck_assert_int_eq(a2a_perf_bucket(1048576), 20);
  ck_assert_int_eq(a2a_perf_bucket(~0ULL), A2A_PERF_NBUCKETS - 1);
  ck_assert_uint_eq(a2a_perf_bucket_lo(20), 1048576);
  char b[32];
  ck_assert_str_eq(a2a_perf_fmt_bytes(65536, b, sizeof b), "64 KiB");
  ck_assert_str_eq(a2a_perf_fmt_bytes(1572864, b, sizeof b), "1.5 MiB");
  ck_assert_str_eq(a2a_perf_fmt_bytes(100, b, sizeof b), "100 B");
}
END_TEST

START_TEST(latency_fit_and_gain) {
  /* time = 50 us + bytes / 10 GB/s, sizes 4 KiB .. 4 MiB. */
  a2a_perf_fit f = {0};
  for (int k = 12; k <= 22; k++) {
    double x = (double)(1 << k);
    a2a_perf_fit_add(&f, x, 50e-6 + x / 10e9);
  }
  double alpha = 0;
  ck_assert_int_eq(a2a_perf_fit_alpha(&f, &alpha), 0);
  ck_assert_double_eq_tol(alpha, 50e-6, 1e-9);
  /* One size only: no fit. */
  a2a_perf_fit g = {0};
  for (int i = 0; i < 10; i++) a2a_perf_fit_add(&g, 65536, 60e-6);
  ck_assert_int_eq(a2a_perf_fit_alpha(&g, &alpha), -1);
  /* 1000 ops of 64 KiB = 62.5 MiB -> 63 batches of 1 MiB: 937 saved. */
  double gain = a2a_perf_small_gain(1000, 1000ULL * 65536, 1 << 20, 50e-6);
  ck_assert_double_eq_tol(gain, 937 * 50e-6, 1e-12);
  ck_assert_double_eq_tol(a2a_perf_small_gain(3, 3ULL << 20, 1 << 20, 50e-6), 0.0, 1e-15);
  ck_assert_double_eq_tol(a2a_perf_small_gain(0, 0, 1 << 20, 50e-6), 0.0, 1e-15);
}
END_TEST

START_TEST(edit_distance_and_parse) {
  ck_assert_int_eq(a2a_perf_edit_distance("NCCL_ALGO", "NCCL_ALGO", 2), 0);
  ck_assert_int_eq(a2a_perf_edit_distance("NCCL_ALOG", "NCCL_ALGO", 2), 2);
  ck_assert_int_eq(a2a_perf_edit_distance("NCCL_IB_HAC", "NCCL_IB_HCA", 3), 2);
  ck_assert_int_eq(a2a_perf_edit_distance("NCCL_BUFSIZE", "NCCL_BUFFSIZE", 2), 1);
  ck_assert_int_eq(a2a_perf_edit_distance("NCCL_X", "NCCL_SOCKET_IFNAME", 2), 3);
  uint64_t v;
  ck_assert_int_eq(a2a_perf_parse_u64("4194304", &v), 0);
  ck_assert_uint_eq(v, 4194304);
  ck_assert_int_eq(a2a_perf_parse_u64("0x400000", &v), 0);
  ck_assert_uint_eq(v, 4194304);
  ck_assert_int_eq(a2a_perf_parse_u64("4M", &v), -1);
  ck_assert_int_eq(a2a_perf_parse_u64("", &v), -1);
  ck_assert_int_eq(a2a_perf_parse_u64("-1", &v), -1);
}
END_TEST

int main(void) {
  Suite *s = suite_create("perf_math");
  TCase *tc = tcase_create("math");
  tcase_set_timeout(tc, 10);
  tcase_add_test(tc, busbw_matches_nccl_tests_for_every_op);
  tcase_add_test(tc, published_factors);
  tcase_add_test(tc, buckets);
  tcase_add_test(tc, latency_fit_and_gain);
  tcase_add_test(tc, edit_distance_and_parse);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
