/* test_perf_comm.c - perf_comm and perf_stream driven by synthetic events
 * through the collector: timing with the fake host's events (completed by
 * hand at chosen times), small messages, low bandwidth, no-overlap, stream
 * priority, sync-heavy, stream churn, the summary, and what must NOT be
 * reported (the fixed patterns). */
#include <check.h>
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "core_internal.h"
#include "perf_internal.h"
#include "perf_math.h"

extern const a2a_analyzer a2a_analyzer_perf_comm, a2a_analyzer_perf_stream;

#define COMM ((void *)0xC0)
#define S1 ((void *)0x51)
#define S2 ((void *)0x52)
#define NCCL_FLOAT 7
#define NCCL_INT8 0

static uint64_t now = 1000000000ULL;

static void comm_init(void *h, int nranks) {
  a2a_event ev = ev_make(A2A_EV_COMM_INIT);
  ev.u.init.how = A2A_INIT_RANK;
  ev.u.init.newcomm = h;
  ev.u.init.nranks = nranks;
  ev.u.init.rank = 0;
  ev.u.init.blocking = 1;
  ev_dispatch(&ev, 0);
}

/* The fake host numbers events 1, 2, ... in creation order; perf_comm
 * creates (start, end) per ring slot at comm init, so the i-th timed op of
 * a communicator created first uses events 2*(i%32) and 2*(i%32)+1. */
static void complete_op(size_t i, double ms) {
  size_t slot = i % 32;
  void *e0 = collector_event_at(2 * slot), *e1 = collector_event_at(2 * slot + 1);
  ck_assert_ptr_nonnull(e0);
  collector_event_complete(e0, now);
  now += (uint64_t)(ms * 1e6);
  collector_event_complete(e1, now);
  now += 1000;
}

static a2a_event coll(int op, size_t count, int dtype, void *stream) {
  a2a_event ev = ev_make(A2A_EV_COLL);
  ev.api = "ncclX";
  ev.comm = COMM;
  ev.stream = stream;
  ev.u.coll.coll = op;
  ev.u.coll.count = count;
  ev.u.coll.dtype = dtype;
  ev.u.coll.redop = -1;
  ev.u.coll.root = -1;
  ev.callsite = (const void *)0x4000;
  return ev;
}

/* One lone AlltoAll of `bytes` per rank in total on a 4-rank comm that
 * takes ms on the GPU; i is the op's index on the comm. */
static void alltoall(size_t i, uint64_t bytes, double ms, void *stream) {
  a2a_event ev = coll(A2A_COLL_ALLTOALL, bytes / 4, NCCL_INT8, stream);
  ev_dispatch(&ev, 0);
  ck_assert_ptr_eq(collector_event_stream(collector_event_at(2 * (i % 32) + 1)), stream);
  complete_op(i, ms);
}

static void simple(a2a_kind k, void *stream) {
  a2a_event ev = ev_make(k);
  ev.stream = stream;
  ev_dispatch(&ev, 0);
}

static double details_num(const collected *c, const char *key) {
  char pat[80];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *p = strstr(c->details, pat);
  ck_assert_msg(p != NULL, "no %s in %s", key, c->details);
  return strtod(p + strlen(pat), NULL);
}

static void setup(void) {
  collector_reset();
  now = 1000000000ULL;
}

START_TEST(busbw_and_low_bandwidth_against_best) {
  comm_init(COMM, 4);
  /* 17 ops of 4 MiB at 1 ms, then 48 at 4 ms (the links got slower for
   * most of the run): same bucket. Windows of 8 after the warm-up op: 2
   * fast, 6 slow; typical = the slow median, best = the fast one. */
  for (size_t i = 0; i < 65; i++) alltoall(i, 4u << 20, i < 17 ? 1.0 : 4.0, S1);
  a2a_core_fini();
  const collected *f = collector_find("perf.low-bandwidth");
  ck_assert_ptr_nonnull(f);
  double best = (4.0 * 1048576) / 1e9 / 1e-3 * 0.75;            /* 3.146 GB/s */
  double typ = best / 4;                                         /* 0.786 GB/s */
  ck_assert_double_eq_tol(details_num(f, "best_busbw_gbps"), best, best * 1e-3);
  ck_assert_double_eq_tol(details_num(f, "busbw_gbps"), typ, typ * 1e-3);
  ck_assert_int_eq((int)details_num(f, "measured_ops"), 65);
  ck_assert_int_eq((int)details_num(f, "judged_ops"), 64);
  ck_assert_int_eq((int)details_num(f, "windows"), 8);
  ck_assert_ptr_nonnull(strstr(f->details, "below-best"));
  ck_assert_ptr_nonnull(strstr(f->message, "time includes waiting for the slowest rank"));
  const collected *s = collector_find("perf.summary");
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq((int)details_num(s, "ops"), 65);
  ck_assert_ptr_nonnull(strstr(s->details, "\"op\":\"AlltoAll\""));
  ck_assert_uint_eq(collector_count("perf.small-messages"), 0);
}
END_TEST

/* A non-blocking split's child is created without its size (NCCL cannot be
 * asked before it is ready): the registry's record gets it, from the
 * host's comm_info, when the application sees the child ready
 * (ncclCommGetAsyncError: success both ways), and perf_comm's summary
 * reports it. The GPU validation's program found "(-1 ranks)" there. Polls
 * while it is in progress, and those of a complete communicator, ask
 * nothing. */
START_TEST(nonblocking_child_size_known_at_ready) {
  void *parent = (void *)0xB0;
  comm_init(parent, 4);
  a2a_event sp = ev_make(A2A_EV_COMM_INIT);
  sp.u.init.how = A2A_INIT_SPLIT;
  sp.u.init.parent = parent;
  sp.u.init.newcomm = COMM;
  sp.u.init.nranks = sp.u.init.rank = -1;
  sp.u.init.blocking = 0;
  ev_dispatch(&sp, 0);
  collector_add_comm_info(COMM, 2, 1, 0);
  a2a_event poll = ev_make(A2A_EV_COMM_ASYNC_ERROR);
  poll.comm = COMM;
  poll.u.async_err.async_error = 7; /* ncclInProgress */
  ev_dispatch(&poll, 0);
  ck_assert_uint_eq(collector_comm_info_asks(), 0);
  ck_assert_int_eq(a2a_comm_lookup(COMM)->nranks, -1);
  poll.u.async_err.async_error = 0;
  ev_dispatch(&poll, 0);
  ck_assert_uint_eq(collector_comm_info_asks(), 1);
  ck_assert_int_eq(a2a_comm_lookup(COMM)->nranks, 2);
  ck_assert_int_eq(a2a_comm_lookup(COMM)->rank, 1);
  ev_dispatch(&poll, 0);
  poll.comm = parent;
  ev_dispatch(&poll, 0);
  ck_assert_uint_eq(collector_comm_info_asks(), 1);
  a2a_event ev = coll(A2A_COLL_ALLTOALL, 1024, NCCL_INT8, S1);
  ev_dispatch(&ev, 0);
  a2a_core_fini();
  const collected *f = NULL;
  for (size_t i = 0; i < collector_total() && !f; i++)
    if (strcmp(collector_get(i)->check, "perf.summary") == 0 && strstr(collector_get(i)->message, "AlltoAll"))
      f = collector_get(i);
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq((int)details_num(f, "nranks"), 2);
  ck_assert_ptr_nonnull(strstr(f->message, "(2 ranks)"));
}
END_TEST

START_TEST(steady_bandwidth_is_quiet) {
  comm_init(COMM, 4);
  for (size_t i = 0; i < 40; i++) alltoall(i, 4u << 20, 1.0 + 0.1 * (double)(i % 3), S1);
  a2a_core_fini();
  ck_assert_uint_eq(collector_count("perf.low-bandwidth"), 0);
  ck_assert_uint_eq(collector_count("perf.summary"), 1);
}
END_TEST

START_TEST(warmup_outlier_is_not_judged) {
  comm_init(COMM, 4);
  /* The first operation pays the connection setup (500 ms), the others 1 ms. */
  for (size_t i = 0; i < 20; i++) alltoall(i, 4u << 20, i == 0 ? 500.0 : 1.0, S1);
  a2a_core_fini();
  ck_assert_uint_eq(collector_count("perf.low-bandwidth"), 0);
}
END_TEST

/* QA F1: a correct program whose ranks arrive skewed (a host sync per
 * step, one rank late now and then): one operation in four waits 10x
 * longer for a late peer. The old time-weighted average (31% of the best)
 * reported it; the windows' medians are all the fast time. */
START_TEST(arrival_skew_is_not_low_bandwidth) {
  comm_init(COMM, 4);
  for (size_t i = 0; i < 64; i++) alltoall(i, 4u << 20, i % 4 == 3 ? 10.0 : 1.0, S1);
  a2a_core_fini();
  ck_assert_uint_eq(collector_count("perf.low-bandwidth"), 0);
}
END_TEST

/* QA F1: 4 KiB operations are latency-bound: the first waits 50 ms for
 * the peers' init, the rest vary 20x with the arrival skew. Not judged
 * (perf.small-messages' domain), not even against an expectation. */
START_TEST(small_buckets_are_not_judged) {
  collector_options()->expected_busbw = 10.0;
  collector_reinit();
  comm_init(COMM, 4);
  for (size_t i = 0; i < 40; i++)
    alltoall(i, 4u << 10, i == 0 ? 50.0 : i >= 20 ? 2.0 : 0.1, S1);
  a2a_core_fini();
  ck_assert_uint_eq(collector_count("perf.low-bandwidth"), 0);
  ck_assert_int_eq((int)details_num(collector_find("perf.summary"), "measured_ops"), 40);
}
END_TEST

/* Too few operations to judge: 12 after the warm-up (one window). */
START_TEST(short_run_is_not_judged) {
  comm_init(COMM, 4);
  for (size_t i = 0; i < 13; i++) alltoall(i, 4u << 20, i < 5 ? 1.0 : 4.0, S1);
  a2a_core_fini();
  ck_assert_uint_eq(collector_count("perf.low-bandwidth"), 0);
}
END_TEST

/* QA F4: a forked child (a data loader) does not report the parent's
 * communicators; one it creates itself is its own. */
START_TEST(fork_child_forgets_parent_comms) {
  comm_init(COMM, 4);
  for (size_t i = 0; i < 8; i++) alltoall(i, 4u << 20, 1.0, S1);
  /* One more in flight at the fork: its events are the parent's. */
  a2a_event ev = coll(A2A_COLL_ALLTOALL, 1u << 20, NCCL_INT8, S1);
  ev_dispatch(&ev, 0);
  a2a_core_after_fork_child();
  /* The child must not use the parent's communicator; if it did, it is
   * not accounted either. */
  a2a_event again = coll(A2A_COLL_ALLTOALL, 1u << 20, NCCL_INT8, S1);
  ev_dispatch(&again, 0);
  a2a_core_fini();
  ck_assert_uint_eq(collector_count("perf.summary"), 0);
}
END_TEST

START_TEST(fork_child_reports_its_own_comm) {
  comm_init(COMM, 4);
  for (size_t i = 0; i < 8; i++) alltoall(i, 4u << 20, 1.0, S1);
  a2a_core_after_fork_child();
  void *mine = (void *)0xC8;
  comm_init(mine, 2);
  a2a_event ev = coll(A2A_COLL_ALLREDUCE, 1u << 20, NCCL_FLOAT, S1);
  ev.comm = mine;
  ev_dispatch(&ev, 0);
  a2a_core_fini();
  ck_assert_uint_eq(collector_count("perf.summary"), 1);
  const collected *s = collector_find("perf.summary");
  ck_assert_int_eq((int)details_num(s, "ops"), 1);
  ck_assert_int_eq((int)details_num(s, "nranks"), 2);
}
END_TEST

START_TEST(below_expected_busbw) {
  collector_options()->expected_busbw = 10.0;
  collector_reinit();
  comm_init(COMM, 4);
  for (size_t i = 0; i < 20; i++) alltoall(i, 4u << 20, 1.0, S1);
  a2a_core_fini();
  const collected *f = collector_find("perf.low-bandwidth");
  ck_assert_ptr_nonnull(f);
  ck_assert_ptr_nonnull(strstr(f->details, "below-expected"));
  ck_assert_double_eq_tol(details_num(f, "busbw_gbps"), 3.146, 0.01);
}
END_TEST

START_TEST(pending_events_are_never_waited_for) {
  comm_init(COMM, 4);
  /* Ops whose events never complete: counted, not timed, no hang. */
  for (int i = 0; i < 5; i++) {
    a2a_event ev = coll(A2A_COLL_ALLREDUCE, 1 << 20, NCCL_FLOAT, S1);
    ev_dispatch(&ev, 0);
  }
  a2a_core_fini();
  const collected *s = collector_find("perf.summary");
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq((int)details_num(s, "ops"), 5);
  ck_assert_int_eq((int)details_num(s, "measured_ops"), 0);
  ck_assert_int_eq((int)details_num(s, "unmeasured_ops"), 5);
}
END_TEST

START_TEST(small_messages_with_fitted_gain) {
  comm_init(COMM, 4);
  /* Cost model: 50 us + bytes / 10 GB/s. 8 ops of 4 MiB give the fit a
   * spread; 100 ops of 64 KiB are the small stream. */
  size_t i = 0;
  for (; i < 8; i++) alltoall(i, 4u << 20, 0.05 + (4.0 * 1048576) / 10e9 * 1e3, S1);
  for (; i < 108; i++) alltoall(i, 64u << 10, 0.05 + 65536.0 / 10e9 * 1e3, S1);
  a2a_core_fini();
  const collected *f = collector_find("perf.small-messages");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq((int)details_num(f, "small_ops"), 100);
  ck_assert_int_eq((int)details_num(f, "small_bytes"), 100 * 65536);
  ck_assert_int_eq((int)details_num(f, "batched_ops"), 7);
  ck_assert_double_eq_tol(details_num(f, "per_op_cost_s"), 50e-6, 1e-7);
  ck_assert_double_eq_tol(details_num(f, "estimated_gain_s"), 93 * 50e-6, 1e-5);
  double small_t = 100 * (0.05e-3 + 65536.0 / 10e9), big_t = 8 * (0.05e-3 + 4.0 * 1048576 / 10e9);
  ck_assert_double_eq_tol(details_num(f, "small_time_fraction"), small_t / (small_t + big_t), 1e-3);
  ck_assert_ptr_nonnull(strstr(f->details, "\"per_op_cost_source\":\"fitted\""));
  /* 4.65 ms of ~9.4 ms: material. */
  ck_assert_int_eq(f->severity, A2A_SEV_WARNING);
  ck_assert_ptr_nonnull(strstr(f->message, "Fix: batch or fuse them"));
}
END_TEST

/* The same shape with a 5 us per-operation cost and 512 KiB operations:
 * batching would save (100 - 50) x 5 us = 0.25 ms of ~9 ms, 2.7%: below
 * A2ACHECK_PERF_MIN_GAIN (5%), an info without the advice; a warning once
 * the threshold is set below it. */
static void small_immaterial_run(void) {
  comm_init(COMM, 4);
  size_t i = 0;
  for (; i < 8; i++) alltoall(i, 4u << 20, 0.005 + (4.0 * 1048576) / 10e9 * 1e3, S1);
  for (; i < 108; i++) alltoall(i, 512u << 10, 0.005 + 524288.0 / 10e9 * 1e3, S1);
  a2a_core_fini();
}

START_TEST(small_messages_immaterial_gain_is_info) {
  small_immaterial_run();
  const collected *f = collector_find("perf.small-messages");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(f->severity, A2A_SEV_INFO);
  double frac = details_num(f, "estimated_gain_fraction");
  ck_assert_double_eq_tol(frac, 50 * 5e-6 / (100 * (5e-6 + 524288.0 / 10e9) +
                                              8 * (5e-6 + 4.0 * 1048576 / 10e9)), 1e-3);
  ck_assert(frac < 0.05);
  ck_assert_ptr_nonnull(strstr(f->message, "below A2ACHECK_PERF_MIN_GAIN=5%"));
  ck_assert_ptr_null(strstr(f->message, "Fix:"));
}
END_TEST

START_TEST(small_messages_min_gain_option) {
  collector_options()->perf_min_gain = 0.02;
  collector_reinit();
  small_immaterial_run();
  const collected *f = collector_find("perf.small-messages");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(f->severity, A2A_SEV_WARNING);
  ck_assert_ptr_nonnull(strstr(f->message, "at least A2ACHECK_PERF_MIN_GAIN=2%"));
}
END_TEST

/* Not timed (A2ACHECK_PERF_MEASURE=0): the share is unknown, so nothing
 * says the gain matters: info. */
START_TEST(small_messages_untimed_is_info) {
  collector_options()->perf_measure = 0;
  collector_reinit();
  comm_init(COMM, 4);
  for (size_t i = 0; i < 100; i++) {
    a2a_event ev = coll(A2A_COLL_ALLTOALL, 1024, NCCL_INT8, S1);
    ev_dispatch(&ev, 0);
  }
  a2a_core_fini();
  const collected *f = collector_find("perf.small-messages");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(f->severity, A2A_SEV_INFO);
  ck_assert_ptr_nonnull(strstr(f->message, "were not timed"));
}
END_TEST

START_TEST(batched_messages_are_quiet) {
  comm_init(COMM, 4);
  for (size_t i = 0; i < 7; i++) alltoall(i, 1u << 20, 0.15, S1);
  a2a_core_fini();
  ck_assert_uint_eq(collector_count("perf.small-messages"), 0);
}
END_TEST

START_TEST(single_rank_comm_is_not_judged) {
  comm_init(COMM, 1);
  for (size_t i = 0; i < 100; i++) {
    a2a_event ev = coll(A2A_COLL_ALLREDUCE, 16, NCCL_FLOAT, S1);
    ev_dispatch(&ev, 0);
    complete_op(i, 0.01);
    simple(A2A_EV_STREAM_SYNC, S1);
  }
  a2a_core_fini();
  ck_assert_uint_eq(collector_count("perf.small-messages"), 0);
  ck_assert_uint_eq(collector_count("perf.no-overlap"), 0);
  ck_assert_uint_eq(collector_count("perf.low-bandwidth"), 0);
}
END_TEST

/* An AlltoAll's share with one peer: a send and a receive of 1 MiB. */
static void alltoall_share(int peer) {
  for (int send = 1; send >= 0; send--) {
    a2a_event ev = ev_make(A2A_EV_P2P);
    ev.comm = COMM;
    ev.stream = S1;
    ev.u.p2p.is_send = send;
    ev.u.p2p.count = 1 << 18;
    ev.u.p2p.dtype = NCCL_FLOAT;
    ev.u.p2p.peer = peer;
    ev_dispatch(&ev, 0);
  }
}

START_TEST(grouped_p2p_alltoall_is_one_op) {
  comm_init(COMM, 4);
  a2a_event gs = ev_make(A2A_EV_GROUP_START), ge = ev_make(A2A_EV_GROUP_END);
  ge.api = "ncclGroupEnd";
  for (size_t i = 0; i < 3; i++) {
    ev_dispatch(&gs, 0);
    for (int peer = 0; peer < 4; peer++) alltoall_share(peer);
    ev_dispatch(&ge, 0);
    complete_op(i, 2.0);
  }
  /* Unequal counts: a SendRecv group. */
  ev_dispatch(&gs, 0);
  a2a_event ev = ev_make(A2A_EV_P2P);
  ev.comm = COMM;
  ev.stream = S1;
  ev.u.p2p.is_send = 1;
  ev.u.p2p.count = 100;
  ev.u.p2p.dtype = NCCL_FLOAT;
  ev_dispatch(&ev, 0);
  ev_dispatch(&ge, 0);
  complete_op(3, 1.0);
  a2a_core_fini();
  const collected *s = collector_find("perf.summary");
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq((int)details_num(s, "ops"), 4);
  ck_assert_int_eq((int)details_num(s, "measured_ops"), 4);
  ck_assert_ptr_nonnull(strstr(s->details, "\"op\":\"AlltoAll(send/recv)\""));
  ck_assert_ptr_nonnull(strstr(s->details, "\"op\":\"SendRecv\""));
  /* 4 MiB per group in 2 ms: algbw 2.097 GB/s, busbw 1.573 GB/s. */
  ck_assert_ptr_nonnull(strstr(s->message, "algbw 2.10 GB/s, busbw 1.57 GB/s"));
}
END_TEST

/* nccl-tests' -g: one nested group per peer inside the outer group, as
 * the shim dispatches it (ev_dispatch_group: the nested calls' rows): the
 * outer group is still one AlltoAll, counted and timed once, at its
 * outermost end. */
START_TEST(nested_groups_are_one_op) {
  comm_init(COMM, 4);
  for (size_t i = 0; i < 3; i++) {
    a2a_event g = ev_make(A2A_EV_GROUP_START);
    ev_dispatch_group(&g, 0);
    for (int peer = 0; peer < 4; peer++) {
      g = ev_make(A2A_EV_GROUP_START);
      ev_dispatch_group(&g, 0);
      alltoall_share(peer);
      g = ev_make(A2A_EV_GROUP_END);
      ev_dispatch_group(&g, 0);
    }
    g = ev_make(A2A_EV_GROUP_END);
    ev_dispatch_group(&g, 0);
    complete_op(i, 2.0);
  }
  a2a_core_fini();
  const collected *s = collector_find("perf.summary");
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq((int)details_num(s, "ops"), 3);
  ck_assert_int_eq((int)details_num(s, "measured_ops"), 3);
  ck_assert_ptr_nonnull(strstr(s->details, "\"op\":\"AlltoAll(send/recv)\""));
}
END_TEST

START_TEST(no_overlap_host_blocks_after_comm) {
  comm_init(COMM, 4);
  for (size_t i = 0; i < 20; i++) {
    simple(A2A_EV_LAUNCH, S2);
    alltoall(i, 4u << 20, 1.0, S1);
    simple(A2A_EV_STREAM_SYNC, S1);
  }
  a2a_core_fini();
  const collected *f = collector_find("perf.no-overlap");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq((int)details_num(f, "blocked_after_ops"), 20);
  ck_assert_ptr_nonnull(strstr(f->details, "host-blocks-after-communication"));
}
END_TEST

START_TEST(no_overlap_single_stream) {
  comm_init(COMM, 4);
  for (size_t i = 0; i < 20; i++) {
    simple(A2A_EV_LAUNCH, S1);
    alltoall(i, 4u << 20, 1.0, S1);
  }
  a2a_core_fini();
  const collected *f = collector_find("perf.no-overlap");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq((int)details_num(f, "serialized_ops"), 20);
  ck_assert_ptr_nonnull(strstr(f->details, "single-stream"));
}
END_TEST

START_TEST(overlapped_pattern_is_quiet) {
  comm_init(COMM, 4);
  for (size_t i = 0; i < 20; i++) {
    simple(A2A_EV_LAUNCH, S2);          /* independent compute */
    alltoall(i, 4u << 20, 1.0, S1);     /* communication on its own stream */
    a2a_event rec = ev_make(A2A_EV_EVENT_RECORD);
    rec.stream = S1;
    rec.u.event.event = (void *)0xE1;
    ev_dispatch(&rec, 0);
    a2a_event w = ev_make(A2A_EV_STREAM_WAIT_EVENT);
    w.stream = S2;
    w.u.event.event = (void *)0xE1;
    ev_dispatch(&w, 0);
    simple(A2A_EV_LAUNCH, S2);          /* consumer waits on the GPU */
  }
  simple(A2A_EV_DEVICE_SYNC, NULL);     /* once, at the end */
  a2a_core_fini();
  ck_assert_uint_eq(collector_count("perf.no-overlap"), 0);
  ck_assert_uint_eq(collector_count("perf.sync-heavy"), 0);
  ck_assert_uint_eq(collector_count("perf.stream-churn"), 0);
}
END_TEST

static void create_stream(void *s, int prio) {
  a2a_event ev = ev_make(A2A_EV_STREAM_CREATE);
  ev.u.stream_create.priority = prio;
  ev_pre(&ev);
  ev.stream = s;
  ev_post(&ev, 0);
}

/* Events perf_comm creates per communicator, in order: the 32 timing pairs
 * (0..63), the overlap sample's pair (64, 65), then 8 window pairs. */
#define SMP0 64
#define WIN(i, end) (66 + 2 * (i) + (end))

static void at_ms(size_t ev, double ms) {
  collector_event_complete(collector_event_at(ev), (uint64_t)(1e9 + ms * 1e6)); /* ms > -1000 */
}

START_TEST(overlap_fraction_measured) {
  comm_init(COMM, 4);
  a2a_event op = coll(A2A_COLL_ALLTOALL, 1 << 20, NCCL_INT8, S1);
  ev_dispatch(&op, 0);                 /* sampled: the first operation */
  ck_assert_ptr_eq(collector_event_stream(collector_event_at(SMP0)), S1);
  simple(A2A_EV_LAUNCH, S2);           /* opens a window on S2 */
  simple(A2A_EV_LAUNCH, (void *)0x53); /* and one on a third stream */
  a2a_event w = ev_make(A2A_EV_STREAM_WAIT_EVENT);
  w.stream = S2;
  w.u.event.event = (void *)0xE1;
  ev_dispatch(&w, 0);                  /* closes S2's window before the wait */
  simple(A2A_EV_LAUNCH, S2);           /* a new window on S2, after the wait */
  simple(A2A_EV_DEVICE_SYNC, NULL);    /* the epoch ends: all closed */
  ck_assert_ptr_eq(collector_event_stream(collector_event_at(WIN(0, 0))), S2);
  ck_assert_ptr_eq(collector_event_stream(collector_event_at(WIN(0, 1))), S2);
  ck_assert_ptr_eq(collector_event_stream(collector_event_at(WIN(1, 0))), (void *)0x53);
  ck_assert_ptr_eq(collector_event_stream(collector_event_at(WIN(2, 1))), S2);
  /* Communication [0, 10] ms; S2 busy [2, 6], the third stream [4, 8]
   * (union [2, 8]), S2 again [11, 12]: outside. Overlap 6 of 10 ms. */
  at_ms(0, 0); at_ms(1, 10);           /* the timing pair */
  at_ms(SMP0, 0); at_ms(SMP0 + 1, 10);
  at_ms(WIN(0, 0), 2); at_ms(WIN(0, 1), 6);
  at_ms(WIN(1, 0), 4); at_ms(WIN(1, 1), 8);
  at_ms(WIN(2, 0), 11); at_ms(WIN(2, 1), 12);
  a2a_core_fini();
  const collected *sum = collector_find("perf.summary");
  ck_assert_ptr_nonnull(sum);
  ck_assert_double_eq_tol(details_num(sum, "overlap_fraction"), 0.6, 1e-3);
  ck_assert_int_eq((int)details_num(sum, "overlap_samples"), 1);
  ck_assert_ptr_nonnull(strstr(sum->message, "60% of communication time overlapped compute"));
}
END_TEST

START_TEST(overlap_counts_compute_started_before) {
  comm_init(COMM, 4);
  a2a_event op = coll(A2A_COLL_ALLTOALL, 1 << 20, NCCL_INT8, S1);
  ev_dispatch(&op, 0);
  simple(A2A_EV_LAUNCH, S2);
  a2a_event next = coll(A2A_COLL_ALLTOALL, 1 << 20, NCCL_INT8, S1);
  ev_dispatch(&next, 0);               /* the next operation ends the epoch */
  /* The window's first kernel started before the communication (the GPU
   * ran it early): clipped to [0, 3] of [0, 10]. */
  at_ms(0, 0); at_ms(1, 10);
  at_ms(SMP0, 0); at_ms(SMP0 + 1, 10);
  at_ms(WIN(0, 0), -5); at_ms(WIN(0, 1), 3);
  a2a_core_fini();
  ck_assert_double_eq_tol(details_num(collector_find("perf.summary"), "overlap_fraction"), 0.3, 1e-3);
}
END_TEST

START_TEST(stream_priority) {
  comm_init(COMM, 4);
  create_stream(S1, 0);
  create_stream(S2, -1);
  simple(A2A_EV_LAUNCH, S2);
  alltoall(0, 4u << 20, 1.0, S1);
  ck_assert_uint_eq(collector_count("perf.stream-priority"), 1);
  ck_assert_int_eq((int)details_num(collector_find("perf.stream-priority"), "compute_priority"), -1);
  /* 64 KiB: outside 1-100 MiB, not reported. */
  simple(A2A_EV_LAUNCH, S2);
  alltoall(1, 64u << 10, 0.1, S1);
  ck_assert_uint_eq(collector_count("perf.stream-priority"), 1);
}
END_TEST

START_TEST(stream_priority_fixed) {
  comm_init(COMM, 4);
  create_stream(S1, -1);
  create_stream(S2, 0);
  simple(A2A_EV_LAUNCH, S2);
  alltoall(0, 4u << 20, 1.0, S1);
  ck_assert_uint_eq(collector_count("perf.stream-priority"), 0);
}
END_TEST

START_TEST(sync_heavy_device_sync_every_step) {
  comm_init(COMM, 4);
  for (size_t i = 0; i < 20; i++) {
    alltoall(i, 4u << 20, 1.0, S1);
    simple(A2A_EV_LAUNCH, S1);
    simple(A2A_EV_DEVICE_SYNC, NULL);
  }
  ck_assert_uint_eq(collector_count("perf.sync-heavy"), 1);
  ck_assert_int_eq((int)details_num(collector_find("perf.sync-heavy"), "synchronized_steps"), 16);
}
END_TEST

/* A training step of 8 operations that ends with one device
 * synchronization (the host reads the loss): normal, not sync-heavy. */
START_TEST(sync_once_per_step_is_quiet) {
  comm_init(COMM, 4);
  size_t k = 0;
  for (size_t step = 0; step < 20; step++) {
    for (int i = 0; i < 8; i++, k++) alltoall(k, 4u << 20, 1.0, S1);
    simple(A2A_EV_LAUNCH, S1);
    simple(A2A_EV_DEVICE_SYNC, NULL);
  }
  ck_assert_uint_eq(collector_count("perf.sync-heavy"), 0);
  /* From then on, a synchronization after every operation: the average
   * falls to 4 or less per synchronization after 27 more steps
   * ((160 + 27) / (20 + 27) = 3.98). */
  for (size_t step = 0; step < 30; step++, k++) {
    alltoall(k, 4u << 20, 1.0, S1);
    simple(A2A_EV_DEVICE_SYNC, NULL);
    ck_assert_uint_eq(collector_count("perf.sync-heavy"), step >= 26 ? 1 : 0);
  }
  const collected *f = collector_find("perf.sync-heavy");
  ck_assert_int_eq((int)details_num(f, "synchronized_steps"), 47);
  ck_assert_double_eq_tol(details_num(f, "ops_per_sync"), 187.0 / 47.0, 1e-4);
}
END_TEST

/* Both streams raised (CUDA clamps -10 into the device's range, which may
 * end at -5): the effective order is unknown, not judged. */
START_TEST(stream_priority_both_raised_is_quiet) {
  comm_init(COMM, 4);
  create_stream(S1, -5);
  create_stream(S2, -10);
  simple(A2A_EV_LAUNCH, S2);
  alltoall(0, 4u << 20, 1.0, S1);
  ck_assert_uint_eq(collector_count("perf.stream-priority"), 0);
}
END_TEST

START_TEST(negative_thresholds_are_clamped) {
  /* A negative count must act as 1, never wrap around to "never". */
  collector_options()->perf_min_ops = -5;
  collector_reinit();
  comm_init(COMM, 4);
  alltoall(0, 4u << 20, 1.0, S1);
  simple(A2A_EV_DEVICE_SYNC, NULL);
  ck_assert_uint_eq(collector_count("perf.sync-heavy"), 1);
  ck_assert_int_eq((int)details_num(collector_find("perf.sync-heavy"), "synchronized_steps"), 1);
}
END_TEST

START_TEST(sync_heavy_every_stream) {
  comm_init(COMM, 4);
  for (size_t i = 0; i < 20; i++) {
    simple(A2A_EV_LAUNCH, S2);
    alltoall(i, 4u << 20, 1.0, S1);
    simple(A2A_EV_LAUNCH, S2);
    simple(A2A_EV_STREAM_SYNC, S2);
    simple(A2A_EV_STREAM_SYNC, S1);
  }
  ck_assert_uint_eq(collector_count("perf.sync-heavy"), 1);
  ck_assert_ptr_nonnull(strstr(collector_find("perf.sync-heavy")->message, "every stream"));
}
END_TEST

/* A stream or event create/destroy whose call takes call_ns. */
static void timed_call(a2a_kind k, void *handle, unsigned flags, uint64_t call_ns) {
  a2a_event ev = ev_make(k);
  if (k == A2A_EV_EVENT_CREATE || k == A2A_EV_EVENT_DESTROY) {
    ev.u.event.event = handle;
    ev.u.event.flags = flags;
  } else {
    ev.u.stream_create.flags = flags;
  }
  if (k != A2A_EV_STREAM_CREATE && k != A2A_EV_EVENT_CREATE) ev.stream = handle;
  ev_pre(&ev);
  collector_advance_ns(call_ns);
  if (k == A2A_EV_STREAM_CREATE) ev.stream = handle;
  ev_post(&ev, 0);
}

/* One stream per operation; every create and destroy takes call_ns and
 * the rest of a step step_ns of host time. */
static void stream_churn_run(uint64_t call_ns, uint64_t step_ns) {
  comm_init(COMM, 4);
  for (size_t i = 0; i < 20; i++) {
    timed_call(A2A_EV_STREAM_CREATE, (void *)(0x1000 + i), 0, call_ns);
    alltoall(i, 4u << 20, 1.0, (void *)(0x1000 + i));
    collector_advance_ns(step_ns);
    timed_call(A2A_EV_STREAM_DESTROY, (void *)(0x1000 + i), 0, call_ns);
  }
}

START_TEST(stream_churn_measured_cost_decides) {
  /* 2 x 2 us of calls per 1 ms step: 0.4%, an info at exit. */
  stream_churn_run(2000, 1000000);
  ck_assert_uint_eq(collector_count("perf.stream-churn"), 0); /* judged at exit */
  a2a_core_fini();
  ck_assert_uint_eq(collector_count("perf.stream-churn"), 1);
  const collected *f = collector_find("perf.stream-churn");
  ck_assert_int_eq(f->severity, A2A_SEV_INFO);
  ck_assert_ptr_nonnull(strstr(f->details, "\"kind\":\"stream\""));
  ck_assert_int_eq((int)details_num(f, "created"), 20);
  ck_assert_int_eq((int)details_num(f, "comm_ops"), 20);
  ck_assert_double_eq_tol(details_num(f, "host_time_s"), 40 * 2e-6, 1e-9);
  /* From the first create's start to the last destroy's end. */
  ck_assert_double_eq_tol(details_num(f, "span_s"), 20 * (1e-3 + 4e-6), 1e-9);
  ck_assert_ptr_nonnull(strstr(f->message, "synchronizes nothing"));
  ck_assert_ptr_null(strstr(f->message, "can synchronize"));
  ck_assert_ptr_nonnull(strstr(f->message, "torch.cuda.Stream() takes a stream from PyTorch's pool"));
}
END_TEST

START_TEST(stream_churn_material_cost_warns) {
  /* 2 x 100 us of calls per 1 ms step: 16.7%. */
  stream_churn_run(100000, 1000000);
  a2a_core_fini();
  const collected *f = collector_find("perf.stream-churn");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(f->severity, A2A_SEV_WARNING);
  ck_assert_double_eq_tol(details_num(f, "host_time_fraction"), 0.2 / 1.2, 1e-6);
  ck_assert_ptr_nonnull(strstr(f->message, "a material share of the host's time"));
}
END_TEST

START_TEST(event_churn_and_pool_is_quiet) {
  comm_init(COMM, 4);
  /* A pool of 4 events kept for the run: quiet. */
  for (int k = 0; k < 4; k++) timed_call(A2A_EV_EVENT_CREATE, (void *)(uintptr_t)(0xe00 + k), 2, 0);
  for (size_t i = 0; i < 20; i++) alltoall(i, 4u << 20, 1.0, S1);
  a2a_core_fini();
  ck_assert_uint_eq(collector_count("perf.stream-churn"), 0);
}
END_TEST

/* PyTorch's Stream.wait_stream: a DisableTiming event created, recorded,
 * waited on and destroyed per call, ~1 us each, steps of 1 ms: an info
 * that says so, without TORCH_NCCL_CUDA_EVENT_CACHE advice (which does not
 * touch these events). */
START_TEST(event_churn_wait_stream_idiom_is_info) {
  comm_init(COMM, 4);
  for (size_t i = 0; i < 40; i++) {
    timed_call(A2A_EV_EVENT_CREATE, (void *)0xe1, 2 /* cudaEventDisableTiming */, 1000);
    alltoall(i, 4u << 20, 1.0, S1);
    collector_advance_ns(1000000);
    timed_call(A2A_EV_EVENT_DESTROY, (void *)0xe1, 0, 1000);
  }
  a2a_core_fini();
  const collected *f = collector_find("perf.stream-churn");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(f->severity, A2A_SEV_INFO);
  ck_assert_ptr_nonnull(strstr(f->details, "\"kind\":\"event\""));
  ck_assert_int_eq((int)details_num(f, "created_with_timing"), 0);
  ck_assert_ptr_nonnull(strstr(f->message, "Stream.wait_stream"));
  ck_assert_ptr_null(strstr(f->message, "TORCH_NCCL_CUDA_EVENT_CACHE"));
}
END_TEST

/* The event cache advice only where it works: TORCH_NCCL_CUDA_EVENT_CACHE=0
 * set (ProcessGroupNCCL's cache is on by default since PyTorch 2.6). */
START_TEST(event_churn_cache_advice_only_when_disabled) {
  setenv("TORCH_NCCL_CUDA_EVENT_CACHE", "0", 1); /* the fake host reads the process's */
  comm_init(COMM, 4);
  for (size_t i = 0; i < 40; i++) {
    timed_call(A2A_EV_EVENT_CREATE, (void *)0xe1, 0, 200000);
    alltoall(i, 4u << 20, 1.0, S1);
    collector_advance_ns(500000);
    timed_call(A2A_EV_EVENT_DESTROY, (void *)0xe1, 0, 200000);
  }
  a2a_core_fini();
  const collected *f = collector_find("perf.stream-churn");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(f->severity, A2A_SEV_WARNING);
  ck_assert_int_eq((int)details_num(f, "created_with_timing"), 40);
  ck_assert_ptr_nonnull(strstr(f->message, "TORCH_NCCL_CUDA_EVENT_CACHE=0 is set"));
  unsetenv("TORCH_NCCL_CUDA_EVENT_CACHE");
}
END_TEST

/* The timing and overlap sampling policy past the first 64 operations
 * (one in 16 timed, chosen by perf_comm.c's pc_timed; an overlap sample
 * about every 64): start_op decides sampled-out operations without the
 * communicator's lock when no overlap sample is due, and their POST counts
 * them without it. The counts here are those of the same policy with both
 * fast paths switched off (every PRE and POST under the lock): measured
 * ops, unmeasured ops, overlap samples, for lone operations and groups,
 * with events completing at once or only at the occasional
 * synchronization. 656 operations: 64 + 37 of the next 592 are timed. */
/* Every event completes, later in creation order (each timing pair and
 * overlap sample gets a positive duration), then the device is
 * synchronized. */
static void complete_and_sync(void) {
  for (size_t e = 0; e < collector_event_count(); e++)
    collector_event_complete(collector_event_at(e), now + e * 1000);
  now += 1000000;
  simple(A2A_EV_DEVICE_SYNC, NULL);
}

static void sampling_run(int nops, int sync_every, bool grouped) {
  comm_init(COMM, 4);
  for (int i = 0; i < nops; i++) {
    if (grouped) {
      a2a_event g = ev_make(A2A_EV_GROUP_START);
      ev_dispatch(&g, 0);
    }
    a2a_event op = coll(A2A_COLL_ALLTOALL, 1 << 20, NCCL_INT8, S1);
    ev_dispatch(&op, 0);
    if (grouped) {
      a2a_event g = ev_make(A2A_EV_GROUP_END);
      ev_dispatch(&g, 0);
    }
    simple(A2A_EV_LAUNCH, S2);
    if (sync_every == 1 || i % sync_every == 0) {
      complete_and_sync();
    }
  }
}

static void sampling_expect(int measured, int unmeasured, int samples) {
  a2a_core_fini();
  const collected *sum = collector_find("perf.summary");
  ck_assert_ptr_nonnull(sum);
  ck_assert_int_eq((int)details_num(sum, "measured_ops"), measured);
  ck_assert_int_eq((int)details_num(sum, "unmeasured_ops"), unmeasured);
  ck_assert_int_eq((int)details_num(sum, "overlap_samples"), samples);
}

START_TEST(sampling_policy_lone_ops_synced) {
  sampling_run(64 + 592, 1, false);
  sampling_expect(101, 0, 21);
}
END_TEST

START_TEST(sampling_policy_lone_ops_rare_sync) {
  sampling_run(64 + 592, 37, false);
  sampling_expect(94, 7, 8);
}
END_TEST

START_TEST(sampling_policy_groups_rare_sync) {
  sampling_run(64 + 592, 37, true);
  sampling_expect(94, 7, 8);
}
END_TEST

/* The cell of `bucket_lo` bytes of the summary's "buckets": its key. */
static double bucket_num(const collected *sum, uint64_t bucket_lo, const char *key) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"bucket_lo_bytes\":%llu,", (unsigned long long)bucket_lo);
  const char *b = strstr(sum->details, "\"buckets\"");
  ck_assert_ptr_nonnull(b);
  const char *p = strstr(b, pat);
  ck_assert_msg(p != NULL, "no bucket %s in %s", pat, sum->details);
  char k[64];
  snprintf(k, sizeof k, "\"%s\":", key);
  const char *v = strstr(p, k);
  ck_assert_ptr_nonnull(v);
  return strtod(v + strlen(k), NULL);
}

/* Past the first 64 operations the timed ones must not alias with the
 * program's step: a step of two AlltoAlls of different size buckets
 * (4 MiB, then 1 MiB) gets both timed equally often (every 16th
 * operation would time only the 4 MiB ones: its 1 MiB cell would keep its
 * 32 warm-up timings). 64 + 1,280 operations: 32 + 40 timed in each cell. */
START_TEST(sampling_does_not_alias_with_the_step) {
  comm_init(COMM, 4);
  for (int i = 0; i < 64 + 1280; i++) {
    a2a_event op = coll(A2A_COLL_ALLTOALL, (i % 2 ? 1u << 20 : 4u << 20) / 4, NCCL_INT8, S1);
    ev_dispatch(&op, 0);
    complete_and_sync();
  }
  a2a_core_fini();
  const collected *sum = collector_find("perf.summary");
  ck_assert_ptr_nonnull(sum);
  ck_assert_int_eq((int)details_num(sum, "measured_ops"), 144);
  ck_assert_int_eq((int)bucket_num(sum, 4u << 20, "measured_ops"), 72);
  ck_assert_int_eq((int)bucket_num(sum, 1u << 20, "measured_ops"), 72);
}
END_TEST

/* The owner of a communicator (the first thread that posts on it) counts
 * its sampled-out operations without the lock, any other thread under it
 * into a second copy: with two threads taking turns every operation is
 * counted once, timed, sampled out or unmeasured. */
START_TEST(counts_are_exact_across_threads) {
  comm_init(COMM, 4);
  for (int i = 0; i < 300; i++) {
    a2a_event op = coll(A2A_COLL_ALLTOALL, (1u << 20) / 4, NCCL_INT8, S1);
    op.thread = i % 3 == 0 ? 2 : 1;
    ev_dispatch(&op, 0);
    if (i % 10 == 9) {
      complete_and_sync();
    }
  }
  a2a_core_fini();
  const collected *sum = collector_find("perf.summary");
  ck_assert_ptr_nonnull(sum);
  ck_assert_int_eq((int)details_num(sum, "ops"), 300);
  ck_assert_int_eq((int)details_num(sum, "bytes"), 300 << 20);
  ck_assert_int_eq((int)bucket_num(sum, 1u << 20, "ops"), 300);
  int measured = (int)details_num(sum, "measured_ops");
  int unmeasured = (int)details_num(sum, "unmeasured_ops");
  int sampled = (int)details_num(sum, "sampled_out_ops");
  ck_assert_int_eq(measured + unmeasured + sampled, 300);
  ck_assert_int_gt(sampled, 200);
}
END_TEST

START_TEST(graph_capture_is_not_timed) {
  comm_init(COMM, 4);
  size_t before = collector_event_count();
  a2a_event b = ev_make(A2A_EV_GRAPH_CAPTURE_BEGIN);
  b.stream = S1;
  ev_dispatch(&b, 0);
  void *e1 = collector_event_at(1);
  a2a_event ev = coll(A2A_COLL_ALLREDUCE, 1 << 20, NCCL_FLOAT, S1);
  ev_dispatch(&ev, 0);
  /* No event was recorded on the capturing stream. */
  ck_assert_ptr_null(collector_event_stream(e1));
  a2a_event e = ev_make(A2A_EV_GRAPH_CAPTURE_END);
  e.stream = S1;
  ev_dispatch(&e, 0);
  ck_assert_uint_eq(collector_event_count(), before);
  a2a_core_fini();
  const collected *s = collector_find("perf.summary");
  ck_assert_int_eq((int)details_num(s, "unmeasured_ops"), 1);
}
END_TEST

/* The hot wrappers' dispatch (a2a_dispatch_hot) skips perf_comm's copy,
 * stream-wait (PRE) and event-record (POST) handlers while its gate reads
 * 0: an operation must open it, so that the record after it (the event a
 * later cudaEventSynchronize waits for) and a blocking copy after it are
 * still seen. */
static void hot_record(void *stream, void *event) {
  a2a_event ev = ev_make(A2A_EV_EVENT_RECORD);
  ev.stream = stream;
  ev.u.event.event = event;
  ev.phase = A2A_PRE;
  a2a_dispatch_hot(&ev, A2A_EV_EVENT_RECORD, A2A_PRE);
  ev.phase = A2A_POST;
  ev.result = 0;
  ev.ok = 1;
  a2a_dispatch_hot(&ev, A2A_EV_EVENT_RECORD, A2A_POST);
}

static void hot_copy(void *stream, bool async) {
  a2a_event ev = ev_make(A2A_EV_MEMCPY);
  ev.stream = stream;
  ev.u.copy.async = async;
  ev.u.copy.bytes = 64;
  ev.phase = A2A_PRE;
  a2a_dispatch_hot(&ev, A2A_EV_MEMCPY, A2A_PRE);
  ev.phase = A2A_POST;
  ev.result = 0;
  ev.ok = 1;
  a2a_dispatch_hot(&ev, A2A_EV_MEMCPY, A2A_POST);
}

/* Work on the stream of the thread's last work (perf_stream's note_work
 * fast path: *last): a copy on a stream right after that stream's own
 * synchronization makes it unsynchronized again, so the step's later
 * synchronization of the other stream is not one of every stream. Without
 * that copy it is, every step: perf.sync-heavy. */
static void copy_after_stream_sync_run(bool copy_again) {
  comm_init(COMM, 4);
  for (size_t i = 0; i < 20; i++) {
    alltoall(i, 4u << 20, 1.0, S1);
    hot_copy(S2, true);
    simple(A2A_EV_STREAM_SYNC, S2);
    if (copy_again) hot_copy(S2, true); /* S2 again: the last work's stream */
    simple(A2A_EV_STREAM_SYNC, S1);
  }
}
START_TEST(sync_heavy_copy_after_a_stream_sync_is_work) {
  copy_after_stream_sync_run(true);
  ck_assert_uint_eq(collector_count("perf.sync-heavy"), 0);
}
END_TEST
START_TEST(sync_heavy_without_that_copy) {
  copy_after_stream_sync_run(false);
  ck_assert_uint_eq(collector_count("perf.sync-heavy"), 1);
}
END_TEST

/* The same with an NCCL operation as that work (ps_by_op's fast path: the
 * stream of the thread's last work, S2, a handle that is its own key):
 * a p2p call on S2 right after S2's synchronization makes it
 * unsynchronized again. Untimed (a non-blocking communicator): only the
 * synchronizations matter. */
static void op_after_stream_sync_run(bool op_again) {
  a2a_event ci = ev_make(A2A_EV_COMM_INIT);
  ci.u.init.how = A2A_INIT_RANK;
  ci.u.init.newcomm = COMM;
  ci.u.init.nranks = 4;
  ci.u.init.blocking = 0;
  ev_dispatch(&ci, 0);
  for (size_t i = 0; i < 20; i++) {
    a2a_event a = coll(A2A_COLL_ALLTOALL, 1u << 20, NCCL_INT8, S1);
    ev_dispatch(&a, 0);
    hot_copy(S2, true);
    simple(A2A_EV_STREAM_SYNC, S2);
    if (op_again) { /* S2 again: the last work's stream */
      a2a_event p = ev_make(A2A_EV_P2P);
      p.api = "ncclSend";
      p.comm = COMM;
      p.stream = S2;
      p.u.p2p.buff = (void *)0x1000;
      p.u.p2p.count = 1024;
      p.u.p2p.dtype = NCCL_INT8;
      p.u.p2p.peer = 1;
      p.u.p2p.is_send = 1;
      p.callsite = (const void *)0x4100;
      ev_dispatch(&p, 0);
    }
    simple(A2A_EV_STREAM_SYNC, S1);
  }
}
START_TEST(sync_heavy_op_after_a_stream_sync_is_work) {
  op_after_stream_sync_run(true);
  ck_assert_uint_eq(collector_count("perf.sync-heavy"), 0);
}
END_TEST
START_TEST(sync_heavy_without_that_op) {
  op_after_stream_sync_run(false);
  ck_assert_uint_eq(collector_count("perf.sync-heavy"), 1);
}
END_TEST

/* Work on a stream that is not the last work's (perf_stream's
 * note_work_slow finds its entry): S2's copy after its synchronization,
 * with S3H's work last, makes S2 unsynchronized again, so the step's later
 * synchronizations are not of every stream. The streams come in another
 * order every other step (the table is rebuilt after each full
 * synchronization: the same stream at another entry). Without that copy
 * every stream is synchronized, every step: perf.sync-heavy. */
#define S3H ((void *)0x53) /* (S3: a later test's local) */
static void work_after_stream_sync_run(bool again) {
  comm_init(COMM, 4);
  for (size_t i = 0; i < 20; i++) {
    void *a = i % 2 ? S3H : S2, *b = i % 2 ? S2 : S3H;
    hot_copy(a, true);
    hot_copy(b, true);
    alltoall(i, 4u << 20, 1.0, S1);
    simple(A2A_EV_STREAM_SYNC, S2);
    hot_copy(S3H, true);
    if (again) hot_copy(S2, true); /* not the last work's stream (S3H) */
    simple(A2A_EV_STREAM_SYNC, S3H);
    simple(A2A_EV_STREAM_SYNC, S1);
  }
}
START_TEST(sync_heavy_work_on_an_earlier_stream_is_work) {
  work_after_stream_sync_run(true);
  ck_assert_uint_eq(collector_count("perf.sync-heavy"), 0);
  setup(); /* (the counter-case in the same test) */
  work_after_stream_sync_run(false);
  ck_assert_uint_eq(collector_count("perf.sync-heavy"), 1);
}
END_TEST

/* The same with the stream's entry the one after the last work's
 * (note_work_slow's first test, before its scan): the table is S1, S2,
 * S3H; after S2's synchronization, work on S1 and then on S2 makes S2
 * unsynchronized again. */
static void work_on_the_next_stream_run(bool again) {
  comm_init(COMM, 4);
  for (size_t i = 0; i < 20; i++) {
    alltoall(i, 4u << 20, 1.0, S1);
    hot_copy(S2, true);
    hot_copy(S3H, true);
    simple(A2A_EV_STREAM_SYNC, S2);
    hot_copy(S1, true);
    if (again) hot_copy(S2, true); /* the entry after S1's */
    simple(A2A_EV_STREAM_SYNC, S3H);
    simple(A2A_EV_STREAM_SYNC, S1);
  }
}
START_TEST(sync_heavy_work_on_the_next_stream_is_work) {
  work_on_the_next_stream_run(true);
  ck_assert_uint_eq(collector_count("perf.sync-heavy"), 0);
  setup();
  work_on_the_next_stream_run(false);
  ck_assert_uint_eq(collector_count("perf.sync-heavy"), 1);
}
END_TEST

START_TEST(gated_hot_calls_see_the_armed_window) {
  comm_init(COMM, 4);
  for (size_t i = 0; i < 20; i++) {
    /* A copy with nothing armed (the gate may be shut): no effect. */
    hot_copy(S2, true);
    alltoall(i, 4u << 20, 1.0, S1);
    if (i % 2) {
      hot_record(S1, (void *)0xE1);
      a2a_event es = ev_make(A2A_EV_EVENT_SYNC);
      es.u.event.event = (void *)0xE1;
      ev_dispatch(&es, 0);
    } else {
      hot_copy(S1, false); /* blocking copy right after the operation */
    }
  }
  /* An asynchronous copy ends the armed window: the synchronization after
   * it does not count (nor does the event recorded after it). */
  alltoall(20, 4u << 20, 1.0, S1);
  hot_copy(S2, true);
  hot_record(S1, (void *)0xE2);
  a2a_event es = ev_make(A2A_EV_EVENT_SYNC);
  es.u.event.event = (void *)0xE2;
  ev_dispatch(&es, 0);
  hot_copy(S1, false);
  a2a_core_fini();
  const collected *f = collector_find("perf.no-overlap");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq((int)details_num(f, "blocked_after_ops"), 20);
  ck_assert_int_eq((int)details_num(f, "ops"), 21);
}
END_TEST

static void p2p_on(void *comm, int send, size_t count, void *stream) {
  a2a_event ev = ev_make(A2A_EV_P2P);
  ev.comm = comm;
  ev.stream = stream;
  ev.u.p2p.is_send = send;
  ev.u.p2p.count = count;
  ev.u.p2p.dtype = NCCL_INT8;
  ev_dispatch(&ev, 0);
}

static void p2p(void *comm, int send, size_t count) { p2p_on(comm, send, count, S1); }

/* A group of one send and one receive per rank is an AlltoAll only when
 * every size is the same: sends of one size and receives of another, or
 * one receive of a different size, make it a SendRecv of the larger
 * direction's bytes. */
START_TEST(grouped_p2p_sizes_decide_alltoall) {
  comm_init(COMM, 2);
  a2a_event gs = ev_make(A2A_EV_GROUP_START), ge = ev_make(A2A_EV_GROUP_END);
  const size_t sizes[3][4] = {{4096, 4096, 4096, 4096},   /* AlltoAll, 8 KiB */
                              {4096, 4096, 8192, 8192},   /* SendRecv, 16 KiB */
                              {4096, 4096, 4096, 1024}};  /* SendRecv, 8 KiB */
  for (int g = 0; g < 3; g++) {
    ev_dispatch(&gs, 0);
    for (int k = 0; k < 4; k++) p2p(COMM, k < 2, sizes[g][k]);
    ev_dispatch(&ge, 0);
  }
  a2a_core_fini();
  const collected *s = collector_find("perf.summary");
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq((int)details_num(s, "ops"), 3);
  ck_assert_int_eq((int)details_num(s, "bytes"), 8192 + 16384 + 8192);
  ck_assert_ptr_nonnull(strstr(s->message, "AlltoAll(send/recv) 8 KiB+: 1 ops"));
  ck_assert_ptr_nonnull(strstr(s->message, "SendRecv 8 KiB+: 1 ops"));
  ck_assert_ptr_nonnull(strstr(s->message, "SendRecv 16 KiB+: 1 ops"));
}
END_TEST

/* A failed ncclGroupStart opens no group: the calls after it are lone
 * operations, each counted at its own POST. */
START_TEST(failed_group_start_opens_no_group) {
  comm_init(COMM, 2);
  a2a_event gs = ev_make(A2A_EV_GROUP_START);
  ev_dispatch(&gs, 1);
  p2p(COMM, 1, 4096);
  p2p(COMM, 0, 4096);
  a2a_core_fini();
  const collected *s = collector_find("perf.summary");
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq((int)details_num(s, "ops"), 2);
}
END_TEST

/* Inside a group an operation's PRE ends the armed window only for a
 * tracked communicator: after one on an unknown handle a synchronization
 * of the armed stream still follows the previous operation. */
START_TEST(grouped_pre_disarms_for_tracked_comm_only) {
  comm_init(COMM, 4);
  a2a_event gs = ev_make(A2A_EV_GROUP_START), ge = ev_make(A2A_EV_GROUP_END);
  for (size_t i = 0; i < 20; i++) {
    alltoall(2 * i, 4u << 20, 1.0, S1);
    ev_dispatch(&gs, 0);
    p2p((void *)0xBAD, 1, 4096); /* not a communicator perf_comm knows */
    simple(A2A_EV_STREAM_SYNC, S1);
    p2p(COMM, 1, 4u << 20);
    p2p(COMM, 0, 4u << 20);
    simple(A2A_EV_STREAM_SYNC, S1); /* disarmed by the tracked send */
    ev_dispatch(&ge, 0);
    complete_op(2 * i + 1, 1.0);
  }
  a2a_core_fini();
  const collected *f = collector_find("perf.no-overlap");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq((int)details_num(f, "ops"), 40);
  ck_assert_int_eq((int)details_num(f, "blocked_after_ops"), 20);
}
END_TEST

/* A grouped operation's PRE on a tracked communicator ends the armed
 * window (group_op_pre, which pc_op_pre calls while a window is armed or
 * a sample open - here only the window: a synchronization of another
 * stream ended the epoch): a synchronization of the armed stream after it
 * follows no operation - none of the steps is blocked after one. */
START_TEST(grouped_pre_ends_the_armed_window) {
  comm_init(COMM, 4);
  a2a_event gs = ev_make(A2A_EV_GROUP_START), ge = ev_make(A2A_EV_GROUP_END);
  for (size_t i = 0; i < 20; i++) {
    alltoall(2 * i, 4u << 20, 1.0, S1);
    simple(A2A_EV_STREAM_SYNC, S2); /* ends a sample's epoch, not the window */
    ev_dispatch(&gs, 0);
    p2p(COMM, 1, 4u << 20); /* disarms */
    p2p(COMM, 0, 4u << 20);
    simple(A2A_EV_STREAM_SYNC, S1);
    ev_dispatch(&ge, 0);
    complete_op(2 * i + 1, 1.0);
  }
  a2a_core_fini();
  const collected *f = collector_find("perf.no-overlap");

  ck_assert_int_eq(f ? (int)details_num(f, "blocked_after_ops") : 0, 0);
}
END_TEST

/* A nested ncclGroupEnd's PRE ends the armed window as any group end's
 * does (group_end_pre; the nested rows' pc_group_end_nested): a
 * synchronization of the armed stream after it follows no operation. The
 * same through the kind's rows (ev_dispatch, every call) and as the shim
 * dispatches (ev_dispatch_group, a nested call's rows); without the nested
 * pair the window stays armed until the synchronization. */
static void nested_end_disarms(void (*group)(a2a_event *, int), bool nested, int blocked) {
  comm_init(COMM, 4);
  for (size_t i = 0; i < 20; i++) {
    alltoall(i, 4u << 20, 1.0, S1);
    a2a_event g = ev_make(A2A_EV_GROUP_START);
    group(&g, 0);
    if (nested) {
      g = ev_make(A2A_EV_GROUP_START);
      group(&g, 0);
      g = ev_make(A2A_EV_GROUP_END);
      group(&g, 0);
    }
    simple(A2A_EV_STREAM_SYNC, S1);
    g = ev_make(A2A_EV_GROUP_END);
    group(&g, 0);
  }
  a2a_core_fini();
  const collected *f = collector_find("perf.no-overlap");
  ck_assert_int_eq(f ? (int)details_num(f, "blocked_after_ops") : 0, blocked);
}
START_TEST(nested_group_end_ends_the_armed_window) { nested_end_disarms(ev_dispatch, true, 0); }
END_TEST
START_TEST(nested_group_end_ends_the_armed_window_in_its_row) {
  nested_end_disarms(ev_dispatch_group, true, 0);
}
END_TEST
START_TEST(group_start_leaves_the_window_armed) { nested_end_disarms(ev_dispatch_group, false, 20); }
END_TEST

/* The same when a group end arms the window (its shares, after_op): the
 * nested end that follows in the next group, before any operation, is
 * dispatched (the thread marked busy: a2a_nested_end_busy) and ends it;
 * kept, it would leave the synchronization blocked after each group. The
 * nested pairs after the group's operation are kept. */
START_TEST(group_end_marks_nested_ends_busy) {
  comm_init(COMM, 4);
  for (size_t i = 0; i < 20; i++) {
    a2a_event g = ev_make(A2A_EV_GROUP_START);
    ev_dispatch_group(&g, 0);
    g = ev_make(A2A_EV_GROUP_START);
    ev_dispatch_group(&g, 0);
    g = ev_make(A2A_EV_GROUP_END);
    ev_dispatch_group(&g, 0);
    simple(A2A_EV_STREAM_SYNC, S1);
    p2p_on(COMM, 1, 4u << 20, S1);
    p2p_on(COMM, 0, 4u << 20, S1);
    g = ev_make(A2A_EV_GROUP_START);
    ev_dispatch_group(&g, 0);
    g = ev_make(A2A_EV_GROUP_END);
    ev_dispatch_group(&g, 0);
    g = ev_make(A2A_EV_GROUP_END);
    ev_dispatch_group(&g, 0);
  }
  ck_assert_uint_ge(ev_group_kept(), 2 * 19);
  a2a_core_fini();
  const collected *f = collector_find("perf.no-overlap");
  ck_assert_int_eq(f ? (int)details_num(f, "blocked_after_ops") : 0, 0);
}
END_TEST

/* A group over two communicators, each on its own stream, after compute
 * on the first one's: the first share is serialized (its stream shared
 * with the compute since the previous operation), the second not (no
 * launch left: after_op reset them), and the armed window is the last
 * share's: a synchronization of its stream blocks after an operation of
 * the second communicator, every step; each share is one operation of the
 * thread. */
#define COMM2 ((void *)0xC1)
START_TEST(group_end_arms_the_last_share) {
  comm_init(COMM, 4);
  comm_init(COMM2, 4);
  a2a_event gs = ev_make(A2A_EV_GROUP_START), ge = ev_make(A2A_EV_GROUP_END);
  uint64_t ops0 = a2a_perf_ops_thread();
  for (size_t i = 0; i < 20; i++) {
    simple(A2A_EV_LAUNCH, S1);
    ev_dispatch(&gs, 0);
    p2p_on(COMM, 1, 4u << 20, S1);
    p2p_on(COMM, 0, 4u << 20, S1);
    p2p_on(COMM2, 1, 4u << 20, S2);
    p2p_on(COMM2, 0, 4u << 20, S2);
    ev_dispatch(&ge, 0);
    simple(A2A_EV_STREAM_SYNC, S2);
  }
  ck_assert_uint_eq(a2a_perf_ops_thread() - ops0, 40);
  a2a_core_fini();
  ck_assert_int_eq((int)collector_count("perf.no-overlap"), 2);
  int blocked = 0, serialized = 0;
  for (size_t i = 0; i < collector_total(); i++) {
    const collected *f = collector_get(i);
    if (strcmp(f->check, "perf.no-overlap") != 0) continue;
    blocked += (int)details_num(f, "blocked_after_ops");
    serialized += (int)details_num(f, "serialized_ops");
  }
  ck_assert_int_eq(blocked, 20);
  ck_assert_int_eq(serialized, 20);
}
END_TEST

/* After a full synchronization the thread's stream table starts empty: a
 * stream used again first (the table's old first entry) is work to
 * synchronize like any other, so a step that synchronizes only the two
 * streams used after it is never a full synchronization, and there are no
 * synchronized steps to report. */
START_TEST(sync_heavy_table_restarts_after_full_sync) {
  comm_init(COMM, 4);
  simple(A2A_EV_LAUNCH, S2);
  alltoall(0, 4u << 20, 1.0, S1);
  simple(A2A_EV_STREAM_SYNC, S2);
  simple(A2A_EV_STREAM_SYNC, S1); /* full: S2 and S1 */
  void *const S3 = (void *)0x53;
  for (size_t i = 1; i < 30; i++) {
    void *first = i % 2 ? S2 : S3, *second = i % 2 ? S3 : S2;
    simple(A2A_EV_LAUNCH, first);
    simple(A2A_EV_LAUNCH, second);
    alltoall(i, 4u << 20, 1.0, S1);
    simple(A2A_EV_STREAM_SYNC, second);
    simple(A2A_EV_STREAM_SYNC, S1); /* `first` still has work: not full */
  }
  ck_assert_uint_eq(collector_count("perf.sync-heavy"), 0);
}
END_TEST

/* Repeated launches (a2a_analyzer.launch_quiet): perf_comm leaves a
 * launch's mark set only when the same launch again would do nothing -
 * its stream is the first of the launch table and no overlap epoch is
 * open (launch_fast) - and clears it otherwise: another stream of the
 * table (the slow path, a no-op, but not the fast one), a stream past the
 * table (counted again: ls_lost), an open epoch (a launch may open a
 * window). */
START_TEST(repeated_launch_mark_follows_perf_comm_fast_path) {
  static const a2a_analyzer *const pc[] = {&a2a_analyzer_perf_comm};
  collector_use_with_activity(pc, 1);
  const void *f = (const void *)0x7000;
  void *args = (void *)0x8000;
  ck_assert(collector_hot_launch(S2, 0, f, args)); /* the table's first */
  ck_assert(collector_hot_launch(S2, 0, f, args));
  ck_assert(!collector_hot_launch(S1, 0, f, args)); /* its second */
  ck_assert(collector_hot_launch(S2, 0, f, args));
  for (uintptr_t i = 0; i < 6; i++) collector_hot_launch((void *)(0x60 + i), 0, f, args);
  ck_assert(!collector_hot_launch((void *)0x90, 0, f, args)); /* past the table */
  ck_assert(!collector_hot_launch((void *)0x90, 0, f, args));
  ck_assert(collector_hot_launch(S2, 0, f, args));
  /* The legacy and per-thread default streams: their own keys. */
  comm_init(COMM, 4);
  a2a_event op = coll(A2A_COLL_ALLREDUCE, 16, NCCL_FLOAT, S1);
  ev_dispatch(&op, 0); /* sampled (the first operation): an epoch opens */
  ck_assert(!collector_hot_launch(S2, 0, f, args));
  ck_assert(!collector_hot_launch(S2, 0, f, args));
  simple(A2A_EV_DEVICE_SYNC, NULL); /* the epoch ends */
  ck_assert(collector_hot_launch(S2, 0, f, args));
  ck_assert(!collector_hot_launch(NULL, 1, f, args));
  a2a_core_set_analyzers_for_tests(a2a_local_analyzers, a2a_nlocal_analyzers);
}
END_TEST

/* perf_stream: the mark stays while the stream is the last one worked on,
 * and is cleared for a stream past its table (scanned again, lost). */
START_TEST(repeated_launch_mark_follows_perf_stream_fast_path) {
  static const a2a_analyzer *const ps[] = {&a2a_analyzer_perf_stream};
  collector_use_with_activity(ps, 1);
  const void *f = (const void *)0x7000;
  void *args = (void *)0x8000;
  ck_assert(collector_hot_launch(S2, 0, f, args));
  ck_assert(collector_hot_launch(S1, 0, f, args)); /* now the last stream */
  ck_assert(collector_hot_launch(NULL, 0, f, args));
  ck_assert(collector_hot_launch(NULL, 1, f, args));
  for (uintptr_t i = 0; i < 4; i++) collector_hot_launch((void *)(0x60 + i), 0, f, args);
  ck_assert(!collector_hot_launch((void *)0x90, 0, f, args)); /* past the table */
  ck_assert(!collector_hot_launch((void *)0x90, 0, f, args));
  ck_assert(collector_hot_launch(S2, 0, f, args));
  a2a_core_set_analyzers_for_tests(a2a_local_analyzers, a2a_nlocal_analyzers);
}
END_TEST

/* pc_launch's fast path (a launch on the stream in launch_fast returns at
 * once): it must stop applying when the operation resets the launch table
 * (after_op), and while an overlap epoch is open (a launch on the first
 * stream again must still open a new window after a stream wait closed
 * the old one). */
START_TEST(launch_fast_path_keeps_windows_and_serialization) {
  comm_init(COMM, 4);
  a2a_event op = coll(A2A_COLL_ALLTOALL, 1 << 20, NCCL_INT8, S1);
  ev_dispatch(&op, 0);                 /* sampled: the epoch opens */
  simple(A2A_EV_LAUNCH, S2);           /* window 0 on S2 */
  simple(A2A_EV_LAUNCH, S2);           /* S2 again: nothing new */
  a2a_event w = ev_make(A2A_EV_STREAM_WAIT_EVENT);
  w.stream = S2;
  w.u.event.event = (void *)0xE1;
  ev_dispatch(&w, 0);                  /* closes window 0 */
  simple(A2A_EV_LAUNCH, S2);           /* S2 again, first in the table: window 1 */
  ck_assert_ptr_eq(collector_event_stream(collector_event_at(WIN(1, 0))), S2);
  /* Operations 1-4: compute on S1 only before each (serialized; not
   * operation 1: the epoch's launches on S2 came before it), the later
   * launches of each on the table's first stream; then 5-8: S1 first, S2
   * after it (not serialized). */
  for (int i = 0; i < 8; i++) {
    simple(A2A_EV_LAUNCH, S1);
    simple(A2A_EV_LAUNCH, S1);
    if (i >= 4) simple(A2A_EV_LAUNCH, S2);
    simple(A2A_EV_LAUNCH, S1);
    a2a_event o = coll(A2A_COLL_ALLTOALL, 1 << 20, NCCL_INT8, S1);
    ev_dispatch(&o, 0);
  }
  a2a_core_fini();
  const collected *sum = collector_find("perf.summary");
  ck_assert_ptr_nonnull(sum);
  ck_assert_int_eq((int)details_num(sum, "serialized_ops"), 3);
}
END_TEST

/* An operation's start harvests the timing ring only when it is full
 * (ring_harvest_locked): a full ring whose oldest timings completed gives
 * their slots to the next operations, as when every start harvested.
 * (sampling_policy_*_rare_sync cover a full ring whose oldest is pending:
 * untimed.) */
START_TEST(full_ring_is_harvested_at_an_operations_start) {
  comm_init(COMM, 4);
  /* 40 operations, each complete before the next, no synchronization:
   * all timed (the 33rd finds the ring full of completed timings). Then
   * 24 left pending, to the end of the first PC_TIME_ALL (64, all timed):
   * pending at exit. */
  for (size_t i = 0; i < 40; i++) alltoall(i, 4u << 20, 1.0, S1);
  for (int i = 0; i < 24; i++) {
    a2a_event op = coll(A2A_COLL_ALLTOALL, 1 << 20, NCCL_INT8, S1);
    ev_dispatch(&op, 0);
  }
  a2a_core_fini();
  const collected *sum = collector_find("perf.summary");
  ck_assert_ptr_nonnull(sum);
  ck_assert_int_eq((int)details_num(sum, "ops"), 64);
  ck_assert_int_eq((int)details_num(sum, "measured_ops"), 40);
  ck_assert_int_eq((int)details_num(sum, "unmeasured_ops"), 24);
}
END_TEST

/* The launch handlers' quick key test (a2a_perf_skey_is): true only when
 * a2a_perf_skey would give that key, whatever per_thread is. */
START_TEST(skey_is_never_wrongly_true) {
  void *handles[] = {NULL, (void *)1, (void *)2, S1};
  for (int h = 0; h < 4; h++)
    for (int k = 0; k < 4; k++)
      for (int pt = 0; pt < 2; pt++)
        if (a2a_perf_skey_is(handles[h], handles[k]))
          ck_assert_ptr_eq(a2a_perf_skey(handles[h], pt), handles[k]);
  ck_assert(a2a_perf_skey_is(S1, S1));
  ck_assert(a2a_perf_skey_is((void *)2, (void *)2));
}
END_TEST

/* Kernels on the legacy stream (handle 1, or NULL without per_thread: key
 * NULL) and on the per-thread default stream (NULL with per_thread: key
 * 2) are on two streams for perf.no-overlap, in either order. */
static void launch_on(void *stream, int per_thread) {
  a2a_event l = ev_make(A2A_EV_LAUNCH);
  l.stream = stream;
  l.per_thread = per_thread;
  ev_dispatch(&l, 0);
}
static void op_on(void *stream, int per_thread) {
  a2a_event o = coll(A2A_COLL_ALLTOALL, 1 << 20, NCCL_INT8, stream);
  o.per_thread = per_thread;
  ev_dispatch(&o, 0);
}
START_TEST(launch_fast_path_tells_default_streams_apart) {
  comm_init(COMM, 4);
  for (int i = 0; i < 4; i++) {
    launch_on((void *)1, 0);
    launch_on(NULL, 1);
    op_on(NULL, 1);                    /* compute on two streams */
  }
  for (int i = 0; i < 2; i++) {
    launch_on(NULL, 0);
    launch_on(NULL, 1);
    op_on(NULL, 0);                    /* compute on two streams */
  }
  for (int i = 0; i < 2; i++) {
    launch_on(NULL, 0);
    launch_on((void *)1, 0);
    op_on((void *)1, 0);               /* serialized: legacy only */
  }
  a2a_core_fini();
  const collected *sum = collector_find("perf.summary");
  ck_assert_ptr_nonnull(sum);
  ck_assert_int_eq((int)details_num(sum, "serialized_ops"), 2);
}
END_TEST

/* The thread's per-communicator lookup (lookup_cached: the last answer,
 * then a few recent ones, all discarded when a communicator is created).
 * One thread drives several communicators in turn (nccl-tests -g N,
 * several process groups) - as many as the memo holds and more - and one
 * of them is destroyed and re-created at the same handle while the memo
 * holds it: the new communicator's operations must count to its own
 * state, never to the old one's. Each communicator is told apart by its
 * size (nranks) and its operations' size, so a summary shows every
 * operation counted to a wrong communicator. Non-blocking: untimed, only
 * the counts matter here. */
#define NMEMO_COMMS 6
#define MEMO_H(k) ((void *)(uintptr_t)(0xD00 + 0x40 * (k)))

static void memo_comm_init(int k, int nranks) {
  a2a_event ev = ev_make(A2A_EV_COMM_INIT);
  ev.u.init.how = A2A_INIT_RANK;
  ev.u.init.newcomm = MEMO_H(k);
  ev.u.init.nranks = nranks;
  ev.u.init.rank = 0;
  ev.u.init.blocking = 0;
  ev_dispatch(&ev, 0);
}

static void comm_end(void *h) {
  a2a_event ev = ev_make(A2A_EV_COMM_END);
  ev.comm = h;
  ev.u.end.how = A2A_END_DESTROY;
  ev_dispatch(&ev, 0);
}

/* One lone AllReduce of (k + 1) KiB on communicator k. */
static void memo_op(int k) {
  a2a_event ev = coll(A2A_COLL_ALLREDUCE, 256 * (size_t)(k + 1), NCCL_FLOAT, S1);
  ev.comm = MEMO_H(k);
  ev_dispatch(&ev, 0);
}

/* Rounds of one operation on each of comms[0..n), in turn. */
static void memo_rounds(const int *comms, int n, int rounds, uint64_t *ops) {
  for (int r = 0; r < rounds; r++)
    for (int i = 0; i < n; i++) {
      memo_op(comms[i]);
      ops[comms[i]]++;
    }
}

/* The summary of the communicator of nranks ranks, NULL when there is
 * none (never two). */
static const collected *summary_find(int nranks) {
  const collected *s = NULL;
  for (size_t i = 0; i < collector_total(); i++) {
    const collected *c = collector_get(i);
    if (strcmp(c->check, "perf.summary") == 0 && (int)details_num(c, "nranks") == nranks) {
      ck_assert_msg(s == NULL, "two summaries of %d ranks", nranks);
      s = c;
    }
  }
  return s;
}

/* The summary of the communicator of nranks ranks: its ops and bytes. */
static void memo_expect(int nranks, uint64_t ops, uint64_t op_bytes) {
  const collected *s = summary_find(nranks);
  if (ops == 0) {
    ck_assert_msg(s == NULL, "%d ranks: no operation, yet %s", nranks, s ? s->details : "");
    return;
  }
  ck_assert_msg(s != NULL, "no summary of %d ranks", nranks);
  ck_assert_uint_eq((uint64_t)details_num(s, "ops"), ops);
  ck_assert_uint_eq((uint64_t)details_num(s, "bytes"), ops * op_bytes);
}

START_TEST(lookup_memo_never_answers_a_recreated_comm_with_the_old) {
  uint64_t ops[NMEMO_COMMS] = {0}, old_ops[NMEMO_COMMS] = {0};
  for (int k = 0; k < NMEMO_COMMS; k++) memo_comm_init(k, 2 + k);
  const int few[] = {0, 1, 2, 3}, all[] = {0, 1, 2, 3, 4, 5};
  /* As many as the memo holds (answered from it from the second round
   * on), then more than it holds. */
  memo_rounds(few, 4, 5, ops);
  memo_rounds(all, NMEMO_COMMS, 5, ops);
  memo_rounds(few, 4, 5, ops);
  /* Communicator 1 is destroyed and re-created at the same handle while
   * the memo holds it (not the last answer: 3 was). */
  comm_end(MEMO_H(1));
  old_ops[1] = ops[1];
  ops[1] = 0;
  memo_comm_init(1, 20);
  memo_rounds(few, 4, 5, ops);
  /* Communicator 3 likewise, as the last answer. */
  comm_end(MEMO_H(3));
  old_ops[3] = ops[3];
  ops[3] = 0;
  memo_comm_init(3, 30);
  memo_rounds((const int[]){3, 0, 1, 2}, 4, 3, ops);
  memo_rounds(all, NMEMO_COMMS, 3, ops);
  a2a_core_fini();
  for (int k = 0; k < NMEMO_COMMS; k++) {
    uint64_t b = 1024 * (uint64_t)(k + 1);
    memo_expect(2 + k, k == 1 || k == 3 ? old_ops[k] : ops[k], b);
    if (k == 1) memo_expect(20, ops[k], b);
    if (k == 3) memo_expect(30, ops[k], b);
  }
  ck_assert_uint_eq(collector_count("perf.summary"), NMEMO_COMMS + 2);
}
END_TEST

/* A non-blocking communicator's calls may return ncclInProgress (a lone
 * operation, or the ncclGroupEnd of a group of them): NCCL took them, so
 * they are counted (torch with TORCH_NCCL_USE_COMM_NONBLOCKING=1). */
START_TEST(in_progress_operations_are_counted) {
  memo_comm_init(0, 3);
  a2a_event ar = coll(A2A_COLL_ALLREDUCE, 256, NCCL_FLOAT, S1);
  ar.comm = MEMO_H(0);
  ev_dispatch(&ar, A2A_NCCL_IN_PROGRESS);
  a2a_event gs = ev_make(A2A_EV_GROUP_START), ge = ev_make(A2A_EV_GROUP_END);
  ge.api = "ncclGroupEnd";
  ev_dispatch(&gs, 0);
  for (int send = 1; send >= 0; send--) {
    a2a_event p = ev_make(A2A_EV_P2P);
    p.comm = MEMO_H(0);
    p.stream = S1;
    p.u.p2p.is_send = send;
    p.u.p2p.count = 256;
    p.u.p2p.dtype = NCCL_FLOAT;
    p.u.p2p.peer = 1;
    ev_dispatch(&p, 0);
  }
  ev_dispatch(&ge, A2A_NCCL_IN_PROGRESS);
  a2a_core_fini();
  ck_assert_uint_eq((uint64_t)details_num(summary_find(3), "ops"), 2);
}
END_TEST

/* The summary of the communicator of nranks ranks (one there). */
static const collected *summary_of(int nranks) {
  const collected *s = summary_find(nranks);
  ck_assert_msg(s != NULL, "no summary of %d ranks", nranks);
  return s;
}

/* A grouped collective's POST never joins its share as a p2p call, even
 * where group_add_fast's other tests hold (after a send on the same
 * communicator and stream): the kind is tested for it (pc_op_post), and
 * only the send's and receive's handler (pc_op_post_p2p) leaves the test
 * out. The share is a mixed operation. */
START_TEST(grouped_collective_after_a_send_is_no_p2p_call) {
  comm_init(COMM, 4);
  a2a_event gs = ev_make(A2A_EV_GROUP_START), ge = ev_make(A2A_EV_GROUP_END);
  ev_dispatch(&gs, 0);
  p2p_on(COMM, 1, 4096, S1);
  a2a_event ar = coll(A2A_COLL_ALLREDUCE, 1024, NCCL_INT8, S1);
  ev_dispatch(&ar, 0);
  ev_dispatch(&ge, 0);
  a2a_core_fini();
  const collected *a = summary_of(4);
  ck_assert_uint_eq((uint64_t)details_num(a, "ops"), 1);
  ck_assert_ptr_nonnull(strstr(a->message, "Mixed"));
}
END_TEST

/* A grouped p2p call's POST joins its share inline (group_add_fast) when
 * the previous grouped p2p call joined the share of the communicator the
 * thread looked up last: never for a call on another stream (the share is
 * then on several streams, so not timed), nor when the last lookup was of
 * another communicator than that share's (a grouped collective's), nor
 * across groups (a share of the previous group is gone). */
START_TEST(grouped_p2p_fast_path_joins_the_right_share) {
  comm_init(COMM, 4); /* blocking, created first: complete_op's events */
  memo_comm_init(1, 3);
  void *B = MEMO_H(1);
  a2a_event gs = ev_make(A2A_EV_GROUP_START), ge = ev_make(A2A_EV_GROUP_END);
  /* An all-to-all on COMM whose second call is on another stream: one
   * operation, on several streams, not timed. */
  ev_dispatch(&gs, 0);
  for (int k = 0; k < 8; k++) p2p_on(COMM, k % 2 == 0, 4096, k == 1 ? S2 : S1);
  ev_dispatch(&ge, 0);
  complete_op(0, 1.0);
  /* A send on COMM, an AllReduce on B (looked up last), a send on B: B's
   * share is a mixed operation, COMM's a SendRecv of one send. */
  ev_dispatch(&gs, 0);
  p2p_on(COMM, 1, 4096, S1);
  a2a_event ar = coll(A2A_COLL_ALLREDUCE, 1024, NCCL_INT8, S1);
  ar.comm = B;
  ev_dispatch(&ar, 0);
  p2p_on(B, 1, 4096, S1);
  ev_dispatch(&ge, 0);
  /* Two groups of two sends each on B: two operations. */
  for (int g = 0; g < 2; g++) {
    ev_dispatch(&gs, 0);
    p2p_on(B, 1, 512, S1);
    p2p_on(B, 1, 512, S1);
    ev_dispatch(&ge, 0);
  }
  a2a_core_fini();
  const collected *a = summary_of(4), *b = summary_of(3);
  ck_assert_uint_eq((uint64_t)details_num(a, "ops"), 2);
  ck_assert_uint_eq((uint64_t)details_num(a, "bytes"), 4 * 4096 + 4096);
  ck_assert_uint_eq((uint64_t)details_num(a, "measured_ops"), 0);
  ck_assert_ptr_nonnull(strstr(a->message, "AlltoAll(send/recv) 16 KiB+: 1 ops"));
  ck_assert_ptr_nonnull(strstr(a->message, "SendRecv 4 KiB+: 1 ops"));
  ck_assert_uint_eq((uint64_t)details_num(b, "ops"), 3);
  ck_assert_ptr_nonnull(strstr(b->message, "Mixed"));
  ck_assert_ptr_nonnull(strstr(b->message, "SendRecv 1 KiB+: 2 ops"));
}
END_TEST

/* A communicator destroyed and re-created at the same handle inside an
 * open group, between two p2p calls on it on the same stream: the second
 * call joins the new communicator's share, never the old one's, though
 * it follows a call that joined a share of the same handle and stream
 * (group_add_fast: its answer was taken at another g_table_ver). Each
 * communicator's share is one SendRecv of one send, told apart by nranks. */
START_TEST(grouped_p2p_fast_path_after_a_recreation_joins_the_new_comm) {
  memo_comm_init(1, 3);
  void *B = MEMO_H(1);
  a2a_event gs = ev_make(A2A_EV_GROUP_START), ge = ev_make(A2A_EV_GROUP_END);
  ev_dispatch(&gs, 0);
  p2p_on(B, 1, 4096, S1);
  comm_end(B);
  memo_comm_init(1, 5);
  p2p_on(B, 1, 4096, S1);
  ev_dispatch(&ge, 0);
  a2a_core_fini();
  memo_expect(3, 1, 4096);
  memo_expect(5, 1, 4096);
}
END_TEST

/* Groups of one send on each of communicators A and B, in that order:
 * from the second on, each share is predicted from the previous group's
 * at its index (group_op_post). Ones that must not be: B destroyed and
 * re-created at its handle between two groups (the prediction was taken
 * at another g_table_ver: the new communicator gets the send); a group
 * that posts on B first (its share 0 is B's, so the previous group's
 * share 1, also B's, is no prediction for the group's next call on B: an
 * AllReduce, which joins share 0 as a mixed operation). Each
 * communicator's count tells which share each call joined. */
START_TEST(grouped_share_prediction_follows_the_table_and_the_order) {
  memo_comm_init(0, 2);
  memo_comm_init(1, 3);
  void *A = MEMO_H(0), *B = MEMO_H(1);
  a2a_event gs = ev_make(A2A_EV_GROUP_START), ge = ev_make(A2A_EV_GROUP_END);
  for (int g = 0; g < 3; g++) {
    if (g == 2) {
      comm_end(B);
      memo_comm_init(1, 5);
    }
    ev_dispatch(&gs, 0);
    p2p_on(A, 1, 4096, S1);
    p2p_on(B, 1, 4096, S1);
    ev_dispatch(&ge, 0);
  }
  ev_dispatch(&gs, 0);
  p2p_on(B, 1, 4096, S1);
  a2a_event ar = coll(A2A_COLL_ALLREDUCE, 1024, NCCL_INT8, S1);
  ar.comm = B;
  ev_dispatch(&ar, 0);
  ev_dispatch(&ge, 0);
  a2a_core_fini();
  memo_expect(2, 3, 4096);
  memo_expect(3, 2, 4096);
  const collected *b = summary_of(5);
  ck_assert_uint_eq((uint64_t)details_num(b, "ops"), 2);
  ck_assert_ptr_nonnull(strstr(b->message, "SendRecv 4 KiB+: 1 ops"));
  ck_assert_ptr_nonnull(strstr(b->message, "Mixed"));
}
END_TEST

/* A share whose communicator was single_c's answer (a lone call's PRE on
 * B whose POST comes later: group_op_post answers single_c for B) is no
 * prediction: after single_c was cleared, the next group's call on B
 * joins the communicator lookup answers - here the one re-created at B's
 * handle after that PRE, though the share was recorded at the version
 * that re-creation made (the lookup of A, posted first, took it). */
START_TEST(grouped_share_prediction_never_from_single_c) {
  memo_comm_init(0, 2);
  memo_comm_init(1, 3);
  void *A = MEMO_H(0), *B = MEMO_H(1);
  a2a_event gs = ev_make(A2A_EV_GROUP_START), ge = ev_make(A2A_EV_GROUP_END);
  a2a_event lone = coll(A2A_COLL_ALLREDUCE, 1024, NCCL_INT8, S1);
  lone.comm = B;
  ev_pre(&lone);
  comm_end(B);
  memo_comm_init(1, 5);
  for (int g = 0; g < 2; g++) {
    ev_dispatch(&gs, 0);
    p2p_on(A, 1, 4096, S1);
    p2p_on(B, 1, 4096, S1);
    ev_dispatch(&ge, 0);
    if (g == 0) ev_post(&lone, 0);
  }
  a2a_core_fini();
  memo_expect(2, 2, 4096);
  const collected *old = summary_of(3);
  ck_assert_uint_eq((uint64_t)details_num(old, "ops"), 2);
  ck_assert_ptr_nonnull(strstr(old->message, "AllReduce 1 KiB+: 1 ops"));
  memo_expect(5, 1, 4096);
}
END_TEST

/* Grouped sends on the default streams' handles, two per group: NULL
 * (the legacy stream; with per_thread, cudaStreamPerThread) and
 * cudaStreamLegacy (1). The two calls of each group are on two streams -
 * in the first, with one handle - so each share is on several streams and
 * not timed (group_add_fast joins a call inline only on a handle that is
 * its own key, a2a_perf_skey_is). */
START_TEST(grouped_p2p_fast_path_tells_default_streams_apart) {
  comm_init(COMM, 2);
  a2a_event gs = ev_make(A2A_EV_GROUP_START), ge = ev_make(A2A_EV_GROUP_END);
  void *const hs[] = {NULL, NULL, (void *)1, NULL};
  const int pts[] = {0, 1, 0, 1};
  for (int r = 0; r < 3; r++) {
    ev_dispatch(&gs, 0);
    for (int k = 0; k < 2; k++) {
      /* round r: handle r then handle r + 1 (0: NULL, NULL + per_thread; 1:
       * NULL + per_thread, legacy; 2: legacy, NULL + per_thread) */
      a2a_event ev = ev_make(A2A_EV_P2P);
      ev.comm = COMM;
      ev.stream = hs[r + k];
      ev.per_thread = pts[r + k];
      ev.u.p2p.is_send = 1;
      ev.u.p2p.count = 4096;
      ev.u.p2p.dtype = NCCL_INT8;
      ev_dispatch(&ev, 0);
    }
    ev_dispatch(&ge, 0);
    if (r == 0) complete_op(0, 1.0);
  }
  a2a_core_fini();
  const collected *a = summary_of(2);
  ck_assert_uint_eq((uint64_t)details_num(a, "ops"), 3);
  ck_assert_uint_eq((uint64_t)details_num(a, "measured_ops"), 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("perf_comm");
  TCase *tc = tcase_create("perf");
  tcase_set_timeout(tc, 20);
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_add_test(tc, busbw_and_low_bandwidth_against_best);
  tcase_add_test(tc, sampling_does_not_alias_with_the_step);
  tcase_add_test(tc, counts_are_exact_across_threads);
  tcase_add_test(tc, steady_bandwidth_is_quiet);
  tcase_add_test(tc, warmup_outlier_is_not_judged);
  tcase_add_test(tc, below_expected_busbw);
  tcase_add_test(tc, arrival_skew_is_not_low_bandwidth);
  tcase_add_test(tc, small_buckets_are_not_judged);
  tcase_add_test(tc, short_run_is_not_judged);
  tcase_add_test(tc, fork_child_forgets_parent_comms);
  tcase_add_test(tc, fork_child_reports_its_own_comm);
  tcase_add_test(tc, pending_events_are_never_waited_for);
  tcase_add_test(tc, small_messages_with_fitted_gain);
  tcase_add_test(tc, small_messages_immaterial_gain_is_info);
  tcase_add_test(tc, small_messages_min_gain_option);
  tcase_add_test(tc, small_messages_untimed_is_info);
  tcase_add_test(tc, batched_messages_are_quiet);
  tcase_add_test(tc, single_rank_comm_is_not_judged);
  tcase_add_test(tc, grouped_p2p_alltoall_is_one_op);
  tcase_add_test(tc, no_overlap_host_blocks_after_comm);
  tcase_add_test(tc, no_overlap_single_stream);
  tcase_add_test(tc, overlapped_pattern_is_quiet);
  tcase_add_test(tc, overlap_fraction_measured);
  tcase_add_test(tc, overlap_counts_compute_started_before);
  tcase_add_test(tc, stream_priority);
  tcase_add_test(tc, stream_priority_fixed);
  tcase_add_test(tc, sync_heavy_device_sync_every_step);
  tcase_add_test(tc, negative_thresholds_are_clamped);
  tcase_add_test(tc, sync_once_per_step_is_quiet);
  tcase_add_test(tc, stream_priority_both_raised_is_quiet);
  tcase_add_test(tc, sync_heavy_every_stream);
  tcase_add_test(tc, sync_heavy_copy_after_a_stream_sync_is_work);
  tcase_add_test(tc, sync_heavy_without_that_copy);
  tcase_add_test(tc, sync_heavy_op_after_a_stream_sync_is_work);
  tcase_add_test(tc, sync_heavy_without_that_op);
  tcase_add_test(tc, sync_heavy_work_on_an_earlier_stream_is_work);
  tcase_add_test(tc, sync_heavy_work_on_the_next_stream_is_work);
  tcase_add_test(tc, stream_churn_measured_cost_decides);
  tcase_add_test(tc, stream_churn_material_cost_warns);
  tcase_add_test(tc, event_churn_wait_stream_idiom_is_info);
  tcase_add_test(tc, event_churn_cache_advice_only_when_disabled);
  tcase_add_test(tc, event_churn_and_pool_is_quiet);
  tcase_add_test(tc, graph_capture_is_not_timed);
  tcase_add_test(tc, sampling_policy_lone_ops_synced);
  tcase_add_test(tc, sampling_policy_lone_ops_rare_sync);
  tcase_add_test(tc, sampling_policy_groups_rare_sync);
  tcase_add_test(tc, gated_hot_calls_see_the_armed_window);
  tcase_add_test(tc, grouped_p2p_sizes_decide_alltoall);
  tcase_add_test(tc, failed_group_start_opens_no_group);
  tcase_add_test(tc, grouped_pre_disarms_for_tracked_comm_only);
  tcase_add_test(tc, grouped_pre_ends_the_armed_window);
  tcase_add_test(tc, nested_groups_are_one_op);
  tcase_add_test(tc, nested_group_end_ends_the_armed_window);
  tcase_add_test(tc, nested_group_end_ends_the_armed_window_in_its_row);
  tcase_add_test(tc, group_start_leaves_the_window_armed);
  tcase_add_test(tc, group_end_marks_nested_ends_busy);
  tcase_add_test(tc, group_end_arms_the_last_share);
  tcase_add_test(tc, grouped_collective_after_a_send_is_no_p2p_call);
  tcase_add_test(tc, sync_heavy_table_restarts_after_full_sync);
  tcase_add_test(tc, launch_fast_path_keeps_windows_and_serialization);
  tcase_add_test(tc, repeated_launch_mark_follows_perf_comm_fast_path);
  tcase_add_test(tc, repeated_launch_mark_follows_perf_stream_fast_path);
  tcase_add_test(tc, full_ring_is_harvested_at_an_operations_start);
  tcase_add_test(tc, skey_is_never_wrongly_true);
  tcase_add_test(tc, launch_fast_path_tells_default_streams_apart);
  tcase_add_test(tc, lookup_memo_never_answers_a_recreated_comm_with_the_old);
  tcase_add_test(tc, in_progress_operations_are_counted);
  tcase_add_test(tc, grouped_p2p_fast_path_joins_the_right_share);
  tcase_add_test(tc, grouped_p2p_fast_path_after_a_recreation_joins_the_new_comm);
  tcase_add_test(tc, grouped_share_prediction_follows_the_table_and_the_order);
  tcase_add_test(tc, grouped_share_prediction_never_from_single_c);
  tcase_add_test(tc, grouped_p2p_fast_path_tells_default_streams_apart);
  tcase_add_test(tc, nonblocking_child_size_known_at_ready);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
