/* test_xrank_confirm.c - the deadlock/hang confirmation policy
 * (xrank/xrank_confirm.c) with a synthetic clock and synthetic states, no
 * sockets or threads: a deadlock is confirmed only after the stable window
 * and fresh reports from every involved process; progress or a changed
 * candidate restarts the window; exactly one verdict per involved live
 * process, its own story first; a hang after the timeout without progress;
 * progress keeps the hang away; never both. */
#include <check.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "xr_build.h"
#include "xrank_confirm.h"

#define S 1000000000ull /* ns per second */

typedef struct got {
  a2a_check_id check;
  size_t proc;
  uint64_t site;
  char text[2048];
  char json[8192];
  int has_json;
  int fail;
} got;
static got g[32];
static int ng;

static void emit(void *ctx, const xr_confirm_verdict *v) {
  (void)ctx;
  if (ng >= 32) return;
  g[ng].check = v->check;
  g[ng].proc = v->proc;
  g[ng].site = v->site;
  snprintf(g[ng].text, sizeof g[ng].text, "%s", v->text);
  g[ng].has_json = v->json != NULL;
  snprintf(g[ng].json, sizeof g[ng].json, "%s", v->json ? v->json : "");
  g[ng].fail = v->fail;
  ng++;
}
static const char *site_name(void *ctx, size_t proc, uint64_t site) {
  static char b[64];
  (void)ctx;
  snprintf(b, sizeof b, "train.py:%d(proc%zu)", (int)(site & 0xfff) - 17, proc);
  return b;
}
static xr_confirm_io io = {.site_name = site_name, .emit = emit};

static xr_confirm c;
static pb b[4];
static xr_procstate ps[4];
static uint32_t ids[4] = {3, 7, 9, 11};

static int step(uint64_t t_ns, int n) {
  for (int i = 0; i < n; i++) ps[i] = b[i].st;
  return xr_confirm_step(&c, t_ns, ps, ids, (size_t)n, &io);
}

/* Two ranks, two comms posted in opposite order on one stream each, both
 * host threads blocked in cudaStreamSynchronize: a real deadlock. */
static void opposite_order(uint64_t blocked_ms) {
  for (int r = 0; r < 2; r++) {
    pb_init(&b[r], 100 + r);
    pb_comm(&b[r], 0xA, r, 2, 1);
    pb_comm(&b[r], 0xB, r, 2, 1);
    pb_coll(&b[r], r == 0 ? 0xA : 0xB, 1, 0);
    pb_coll(&b[r], r == 0 ? 0xB : 0xA, 1, 0);
    pb_block(&b[r], 1, blocked_ms);
    b[r].st.version = 1;
  }
}

static void setup(void) {
  xr_confirm_opts o = {.confirm_s = 5.0, .hang_timeout_s = 300.0};
  xr_confirm_init(&c, &o);
  ng = 0;
}
static void teardown(void) { xr_confirm_free(&c); }

START_TEST(deadlock_confirmed_after_window_and_fresh_reports) {
  opposite_order(2000);
  /* First sight: a candidate, nothing reported. */
  ck_assert_int_eq(step(10 * S, 2), XR_CONFIRM_CANDIDATE);
  ck_assert_int_eq(ng, 0);
  /* Within the stable window (0.3 x 5 s = 1.5 s): still a candidate. */
  b[0].st.version = b[1].st.version = 2;
  ck_assert_int_eq(step(10 * S + 1 * S, 2), XR_CONFIRM_CANDIDATE);
  ck_assert_int_eq(ng, 0);
  /* Past the window but rank 1 has not sent a newer report: not fresh. */
  b[0].st.version = 3;
  b[1].st.version = 1;
  ck_assert_int_eq(step(10 * S + 2 * S, 2), XR_CONFIRM_CANDIDATE);
  ck_assert_int_eq(ng, 0);
  /* Fresh from both: confirmed, one verdict per process, FAIL-worthy. */
  b[1].st.version = 2;
  ck_assert_int_eq(step(10 * S + 2 * S + S / 4, 2), XR_CONFIRM_DEADLOCK);
  ck_assert_int_eq(ng, 2);
  ck_assert_int_eq(g[0].check, A2A_CK_GROUP_DEADLOCK);
  ck_assert_int_eq(g[1].check, A2A_CK_GROUP_DEADLOCK);
  ck_assert(g[0].proc != g[1].proc);
  ck_assert_ptr_nonnull(strstr(g[0].text, "deadlock: 2 blocked host threads can never return"));
  ck_assert_ptr_nonnull(strstr(g[0].text, "a wait-for cycle"));
  ck_assert_uint_eq(g[0].site, 0x999); /* the receiver's own blocked call */
  ck_assert(g[0].has_json);
  /* The details: each process blocked, its first operation waiting on
   * the other and its second queued behind it, and the graph's two edges
   * (the report tool draws them; docs/report.md). */
  const char *js = g[0].json;
  ck_assert_ptr_nonnull(strstr(js, "\"blocked\":{\"call\":\"cudaStreamSynchronize\""));
  ck_assert_ptr_nonnull(strstr(js, "\"state\":\"waiting\""));
  ck_assert_ptr_nonnull(strstr(js, "\"state\":\"cannot-start\""));
  ck_assert_ptr_nonnull(strstr(js, "\"from\":\"p100\",\"to\":\"p101\""));
  ck_assert_ptr_nonnull(strstr(js, "\"from\":\"p101\",\"to\":\"p100\""));
  ck_assert_ptr_nonnull(strstr(js, "\"label\":\"rank 100\\ncudaStreamSynchronize\""));
  /* Reported once: later steps say nothing, not even a hang. */
  b[0].st.version = b[1].st.version = 9;
  ck_assert_int_eq(step(400 * S, 2), XR_CONFIRM_NOTHING);
  ck_assert_int_eq(ng, 2);
}
END_TEST

START_TEST(progress_restarts_the_window) {
  opposite_order(2000);
  ck_assert_int_eq(step(0, 2), XR_CONFIRM_CANDIDATE);
  /* Rank 0 posted one more collective on a third comm: its digest changed,
   * the candidate is a new one and the window starts again. */
  pb_comm(&b[0], 0xC, 0, 2, 1);
  b[0].st.version = b[1].st.version = 2;
  ck_assert_int_eq(step(2 * S, 2), XR_CONFIRM_CANDIDATE);
  ck_assert_int_eq(ng, 0);
  b[0].st.version = b[1].st.version = 3;
  ck_assert_int_eq(step(3 * S, 2), XR_CONFIRM_CANDIDATE); /* 1 s into the new window */
  ck_assert_int_eq(ng, 0);
  b[0].st.version = b[1].st.version = 4;
  ck_assert_int_eq(step(3 * S + 6 * S / 10, 2), XR_CONFIRM_DEADLOCK);
  ck_assert_int_eq(ng, 2);
}
END_TEST

START_TEST(resolved_candidate_reports_nothing) {
  opposite_order(2000);
  ck_assert_int_eq(step(0, 2), XR_CONFIRM_CANDIDATE);
  /* Rank 1 reorders (its threads unblocked, it posts in the right order):
   * no deadlock any more. */
  b[1].units[0].comm = 0xA;
  b[1].units[1].comm = 0xB;
  b[0].st.version = b[1].st.version = 2;
  ck_assert_int_eq(step(5 * S, 2), XR_CONFIRM_NOTHING);
  ck_assert_int_eq(ng, 0);
}
END_TEST

START_TEST(short_blocks_do_not_count) {
  /* Threads blocked for less than 0.2 x confirm (1 s) are not stuck yet. */
  opposite_order(500);
  ck_assert_int_eq(step(0, 2), XR_CONFIRM_NOTHING);
  ck_assert_int_eq(ng, 0);
}
END_TEST

/* Four ranks each with a pending collective that no blocked thread waits
 * on (e.g. they poll, or sleep in host code): no deadlock can be proven;
 * after the timeout without any progress, a hang. */
static void pending_no_blocked(void) {
  for (int r = 0; r < 4; r++) {
    pb_init(&b[r], 200 + r);
    pb_comm(&b[r], 0xD, r, 4, r == 3 ? 0 : 1);
    if (r < 3) pb_coll(&b[r], 0xD, 1, 0);
    b[r].st.version = 1;
  }
}

START_TEST(hang_after_timeout_without_progress) {
  xr_confirm_free(&c);
  xr_confirm_opts o = {.confirm_s = 5.0, .hang_timeout_s = 30.0};
  xr_confirm_init(&c, &o);
  pending_no_blocked();
  ck_assert_int_eq(step(100 * S, 4), XR_CONFIRM_NOTHING);
  ck_assert_int_eq(step(129 * S, 4), XR_CONFIRM_NOTHING);
  ck_assert_int_eq(ng, 0);
  ck_assert_int_eq(step(130 * S, 4), XR_CONFIRM_HANG);
  /* Every process with pending work gets it (rank 3 has none, no thread). */
  ck_assert_int_eq(ng, 3);
  for (int i = 0; i < ng; i++) {
    ck_assert_int_eq(g[i].check, A2A_CK_GROUP_HANG);
    ck_assert(g[i].fail);
    ck_assert_ptr_nonnull(strstr(g[i].text, "no rank made progress for 30 s"));
    /* Who waits in what for whom, and what the awaited rank is doing. */
    ck_assert_ptr_nonnull(strstr(g[i].text, "comm 000000000000000d (4 ranks):"));
    ck_assert_ptr_nonnull(strstr(g[i].text, "rank 1 (global rank 201, pid 201) waits in collective #1 "
                                            "ncclAllReduce(count 1024, float32) at train.py:239(proc1) "
                                            "for rank 3 to post its collective #1"));
    ck_assert_ptr_nonnull(strstr(g[i].text, "rank 3 (global rank 203, pid 203): posted 0 collectives"));
    ck_assert_ptr_nonnull(strstr(g[i].text, "in no CUDA/NCCL wait a2acheck sees: stuck in host code"));
  }
  /* Once. */
  ck_assert_int_eq(step(500 * S, 4), XR_CONFIRM_NOTHING);
  ck_assert_int_eq(ng, 3);
}
END_TEST

/* A blocking init that a rank never joins (a stale ncclUniqueId after an
 * elastic restart: rank 1 went to another id): no operation is pending,
 * but the waiting creation is - a stall, then a hang naming rank 1. */
START_TEST(init_never_joined_is_a_hang) {
  xr_confirm_free(&c);
  xr_confirm_opts o = {.confirm_s = 5.0, .hang_timeout_s = 30.0, .stall_s = 10.0};
  xr_confirm_init(&c, &o);
  pb_init(&b[0], 300);
  pb_comm(&b[0], 0x99, 0, 2, 0);
  b[0].threads[b[0].st.nthreads++] = (xr_threadstate){
      .wait = XR_WAIT_INIT, .comm = 0x99, .rank = 0, .blocked_ms = 4000, .site = 0x42, .thread = 1};
  b[0].st.version = 1;
  ck_assert_int_eq(step(100 * S, 1), XR_CONFIRM_NOTHING);
  ck_assert_int_eq(step(111 * S, 1), XR_CONFIRM_STALL);
  ck_assert_int_eq(step(131 * S, 1), XR_CONFIRM_HANG);
  ck_assert_int_eq(ng, 2);
  ck_assert_int_eq(g[1].check, A2A_CK_GROUP_HANG);
  ck_assert_ptr_nonnull(strstr(g[1].text, "is blocked in ncclCommInitRank"));
  ck_assert_ptr_nonnull(strstr(g[1].text, "which returns when all its 2 ranks have called their init "
                                          "with its ncclUniqueId; 1 has, not rank 1"));
  ck_assert_ptr_null(strstr(g[1].text, "its ranks disagree"));
  /* Both ranks joined (NCCL's own bootstrap is slow): nothing pending. */
  xr_confirm_free(&c);
  xr_confirm_init(&c, &o);
  ng = 0;
  pb_init(&b[1], 301);
  pb_comm(&b[1], 0x99, 1, 2, 0);
  b[1].threads[b[1].st.nthreads++] = (xr_threadstate){
      .wait = XR_WAIT_INIT, .comm = 0x99, .rank = 1, .blocked_ms = 4000, .site = 0x42, .thread = 1};
  b[1].st.version = 1;
  ck_assert_int_eq(step(100 * S, 2), XR_CONFIRM_NOTHING);
  ck_assert_int_eq(step(200 * S, 2), XR_CONFIRM_NOTHING);
  ck_assert_int_eq(ng, 0);
  /* A split #0 of comm 0x77: both ranks inside it - nothing pending; rank 1
   * computing elsewhere (not inside, has made none) - pending. */
  for (int r = 0; r < 2; r++) {
    pb_init(&b[r], 310 + r);
    pb_comm(&b[r], 0x77, r, 2, 0);
    b[r].threads[b[r].st.nthreads++] = (xr_threadstate){
        .wait = XR_WAIT_SPLIT, .comm = 0x77, .index = 0, .rank = r, .blocked_ms = 4000, .thread = 1};
    b[r].st.version = 1;
  }
  xr_confirm_free(&c);
  xr_confirm_init(&c, &o);
  ng = 0;
  ck_assert_int_eq(step(100 * S, 2), XR_CONFIRM_NOTHING);
  ck_assert_int_eq(step(200 * S, 2), XR_CONFIRM_NOTHING);
  ck_assert_int_eq(ng, 0);
  b[1].st.nthreads = 0;
  ck_assert_int_eq(step(200 * S + S / 4, 2), XR_CONFIRM_NOTHING);
  ck_assert_int_eq(step(211 * S, 2), XR_CONFIRM_STALL);
}
END_TEST

/* A unit holding two grouped collectives (#11 and #12; nccl-tests -m 2)
 * while the awaited rank posted 10: the story names #11, the first it
 * owes (QA: named #12, the unit's last). */
START_TEST(hang_names_the_first_missing_collective_of_a_group) {
  xr_confirm_free(&c);
  xr_confirm_opts o = {.confirm_s = 5.0, .hang_timeout_s = 30.0};
  xr_confirm_init(&c, &o);
  for (int r = 0; r < 4; r++) {
    pb_init(&b[r], 200 + r);
    pb_comm(&b[r], 0xD, r, 4, r == 3 ? 10 : 12);
    if (r < 3) {
      xr_unitstate *u = pb_coll(&b[r], 0xD, 1, 10);
      u->coll_hi = 12;
    }
    b[r].st.version = 1;
  }
  ck_assert_int_eq(step(100 * S, 4), XR_CONFIRM_NOTHING);
  ck_assert_int_eq(step(130 * S, 4), XR_CONFIRM_HANG);
  ck_assert_int_ge(ng, 1);
  ck_assert_ptr_nonnull(strstr(g[0].text, "for rank 3 to post its collective #11"));
  ck_assert_ptr_null(strstr(g[0].text, "collective #12"));
}
END_TEST

START_TEST(progress_keeps_the_hang_away) {
  xr_confirm_free(&c);
  xr_confirm_opts o = {.confirm_s = 5.0, .hang_timeout_s = 30.0};
  xr_confirm_init(&c, &o);
  pending_no_blocked();
  ck_assert_int_eq(step(0, 4), XR_CONFIRM_NOTHING);
  /* Rank 3 posts its collective at 20 s: progress. */
  b[3].comms[0].coll_posted = 1;
  ck_assert_int_eq(step(20 * S, 4), XR_CONFIRM_NOTHING);
  ck_assert_int_eq(step(45 * S, 4), XR_CONFIRM_NOTHING); /* 25 s since progress */
  ck_assert_int_eq(step(51 * S, 4), XR_CONFIRM_HANG);    /* 31 s */
  /* Nothing pending at all is never a hang, however long. */
  xr_confirm_free(&c);
  xr_confirm_init(&c, &o);
  ng = 0;
  for (int r = 0; r < 4; r++) b[r].st.nunits = 0;
  ck_assert_int_eq(step(0, 4), XR_CONFIRM_NOTHING);
  ck_assert_int_eq(step(1000 * S, 4), XR_CONFIRM_NOTHING);
  ck_assert_int_eq(ng, 0);
}
END_TEST

START_TEST(dead_processes_get_no_verdict) {
  /* Rank 1 exited without posting its half: rank 0 is stuck on it. Only
   * the live process receives the verdict. */
  for (int r = 0; r < 2; r++) {
    pb_init(&b[r], 300 + r);
    pb_comm(&b[r], 0xE, r, 2, r == 0 ? 1 : 0);
    b[r].st.version = 1;
  }
  pb_coll(&b[0], 0xE, 1, 0);
  pb_block(&b[0], 1, 3000);
  b[1].st.alive = 0;
  ck_assert_int_eq(step(0, 2), XR_CONFIRM_CANDIDATE);
  b[0].st.version = 2;
  ck_assert_int_eq(step(2 * S, 2), XR_CONFIRM_DEADLOCK);
  ck_assert_int_eq(ng, 1);
  ck_assert_uint_eq(g[0].proc, 0);
  ck_assert_ptr_nonnull(strstr(g[0].text, "the missing process: pid 301"));
}
END_TEST

/* Rank 1 is alive but ended the communicator (torch's watchdog aborts it
 * after its timeout) without posting its half: the headline says so, not
 * "blocked elsewhere". */
START_TEST(alive_process_that_ended_the_comm_is_named_so) {
  for (int r = 0; r < 2; r++) {
    pb_init(&b[r], 310 + r);
    pb_comm(&b[r], 0xE, r, 2, r == 0 ? 1 : 0);
    b[r].st.version = 1;
  }
  pb_coll(&b[0], 0xE, 1, 0);
  pb_block(&b[0], 1, 3000);
  b[1].comms[0].ended = 1;
  ck_assert_int_eq(step(0, 2), XR_CONFIRM_CANDIDATE);
  b[0].st.version = 2;
  b[1].st.version = 2; /* (alive: its fresh report too) */
  ck_assert_int_eq(step(2 * S, 2), XR_CONFIRM_DEADLOCK);
  ck_assert_int_ge(ng, 1);
  ck_assert_ptr_nonnull(strstr(g[0].text, "the missing process: pid 311 (alive; it ended the communicator)"));
  ck_assert_ptr_null(strstr(g[0].text, "blocked elsewhere"));
}
END_TEST

START_TEST(stall_warns_early_then_hang_fails) {
  xr_confirm_free(&c);
  xr_confirm_opts o = {.confirm_s = 5.0, .hang_timeout_s = 30.0, .stall_s = 10.0};
  xr_confirm_init(&c, &o);
  pending_no_blocked();
  /* Rank 3 posted one collective on another comm before getting stuck. */
  pb_comm(&b[3], 0xF, 0, 1, 4);
  b[3].comms[1].last_site = 0x77;
  b[3].comms[0].last_site = 0x66;
  ck_assert_int_eq(step(100 * S, 4), XR_CONFIRM_NOTHING);
  ck_assert_int_eq(step(109 * S, 4), XR_CONFIRM_NOTHING);
  ck_assert_int_eq(step(110 * S, 4), XR_CONFIRM_STALL);
  ck_assert_int_eq(ng, 3);
  ck_assert_int_eq(g[0].check, A2A_CK_GROUP_STALL);
  ck_assert(!g[0].fail); /* a warning: the run goes on */
  ck_assert_ptr_nonnull(strstr(g[0].text, "stall: no rank made progress for 10 s"));
  ck_assert_ptr_nonnull(strstr(g[0].text, "no deadlock can be proven"));
  ck_assert_ptr_nonnull(strstr(g[0].text, "the last at train.py:85(proc3)"));
  /* Once per stall. */
  ck_assert_int_eq(step(115 * S, 4), XR_CONFIRM_NOTHING);
  ck_assert_int_eq(ng, 3);
  /* The hang at the timeout, failing. */
  ck_assert_int_eq(step(130 * S, 4), XR_CONFIRM_HANG);
  ck_assert_int_eq(ng, 6);
  ck_assert_int_eq(g[3].check, A2A_CK_GROUP_HANG);
  ck_assert(g[3].fail);
  /* Progress re-arms the stall warning (not the hang, reported once). */
  xr_confirm_free(&c);
  xr_confirm_init(&c, &o);
  ng = 0;
  ck_assert_int_eq(step(0, 4), XR_CONFIRM_NOTHING);
  ck_assert_int_eq(step(10 * S, 4), XR_CONFIRM_STALL);
  b[3].comms[0].coll_posted = 1; /* rank 3 moves */
  ck_assert_int_eq(step(12 * S, 4), XR_CONFIRM_NOTHING);
  ck_assert_int_eq(step(22 * S, 4), XR_CONFIRM_STALL);
  ck_assert_int_eq(ng, 6);
  /* A stall window not shorter than the timeout, or 0, means no stall. */
  xr_confirm_free(&c);
  xr_confirm_opts o2 = {.confirm_s = 5.0, .hang_timeout_s = 30.0, .stall_s = 0};
  xr_confirm_init(&c, &o2);
  ng = 0;
  ck_assert_int_eq(step(0, 4), XR_CONFIRM_NOTHING);
  ck_assert_int_eq(step(29 * S, 4), XR_CONFIRM_NOTHING);
  ck_assert_int_eq(step(30 * S, 4), XR_CONFIRM_HANG);
}
END_TEST

/* The cadence: every 250 ms while an evaluation costs under 1/20 of it;
 * 20 times a costlier one's CPU time; the longest spacing, 0.3 x confirm_s,
 * as soon as that asks for more than half of it (and at most a tenth of the
 * stall warning or hang timeout). */
START_TEST(cadence_bounds_the_coordinator_share) {
  const uint64_t ms = 1000000ull;
  ck_assert_uint_eq(xr_confirm_eval_interval(&c, 0), 250 * ms);
  ck_assert_uint_eq(xr_confirm_eval_interval(&c, 12 * ms), 250 * ms);
  ck_assert_uint_eq(xr_confirm_eval_interval(&c, 13 * ms), 260 * ms);
  ck_assert_uint_eq(xr_confirm_eval_interval(&c, 20 * ms), 400 * ms);
  ck_assert_uint_eq(xr_confirm_eval_interval(&c, 37 * ms), 740 * ms);
  ck_assert_uint_eq(xr_confirm_eval_interval(&c, 38 * ms), 1500 * ms); /* 760 > 1,500 / 2 */
  ck_assert_uint_eq(xr_confirm_eval_interval(&c, 5 * S), 1500 * ms);
  ck_assert_uint_eq(xr_confirm_eval_interval(&c, UINT64_MAX), 1500 * ms);
  /* A stall warning of 5 s: evaluations at most 0.5 s apart. */
  xr_confirm_opts st = {.confirm_s = 5.0, .hang_timeout_s = 300.0, .stall_s = 5.0};
  xr_confirm_free(&c);
  xr_confirm_init(&c, &st);
  ck_assert_uint_eq(xr_confirm_eval_interval(&c, 1 * S), 500 * ms);
  ck_assert_uint_eq(xr_confirm_eval_interval(&c, 12 * ms), 250 * ms);
  /* A 1 s confirm: 0.3 s at most; 0.1 s: never below the period. */
  xr_confirm_opts one = {.confirm_s = 1.0, .hang_timeout_s = 300.0};
  xr_confirm_free(&c);
  xr_confirm_init(&c, &one);
  ck_assert_uint_eq(xr_confirm_eval_interval(&c, 14 * ms), 300 * ms);
  ck_assert_uint_eq(xr_confirm_eval_interval(&c, 1 * S), 300 * ms);
  xr_confirm_opts tiny = {.confirm_s = 0.1, .hang_timeout_s = 300.0};
  xr_confirm_free(&c);
  xr_confirm_init(&c, &tiny);
  ck_assert_uint_eq(xr_confirm_eval_interval(&c, 1 * S), 250 * ms);
}
END_TEST

/* At every cadence an evaluation's cost can give, a deadlock is confirmed
 * within confirm_s (5 s) of forming, as the coordinator runs: ticks every
 * 100 ms, an evaluation at the first tick its interval allows; each rank
 * reporting every 300 ms (its own phase) the wait of its blocked thread
 * so far; the threads pass the threshold 1 s after the deadlock forms. */
START_TEST(deadlock_confirmed_at_every_cadence) {
  const uint64_t ms = 1000000ull;
  for (uint64_t cost = 0; cost <= 200 * ms; cost += 3 * ms) {
    for (uint64_t phase = 0; phase < 300 * ms; phase += 70 * ms) {
      xr_confirm_free(&c);
      setup();
      uint64_t every = xr_confirm_eval_interval(&c, cost);
      const uint64_t t0 = 50 * S; /* the deadlock forms */
      uint64_t last_eval = t0 - (phase * 7) % every; /* any phase of the cadence */
      uint64_t rep[2] = {t0 - phase, t0 - (phase * 3) % (300 * ms)}; /* the last reports */
      uint32_t ver = 1;
      int r = XR_CONFIRM_NOTHING;
      uint64_t t = t0;
      opposite_order(0);
      for (; t < t0 + 10 * S && r != XR_CONFIRM_DEADLOCK; t += 100 * ms) {
        for (int k = 0; k < 2; k++)
          if (t - rep[k] >= 300 * ms) {
            rep[k] = t;
            b[k].threads[0].blocked_ms = (t - t0) / ms;
            b[k].st.version = ++ver;
          }
        if (t - last_eval >= every) {
          last_eval = t;
          r = step(t, 2);
          ck_assert(r == XR_CONFIRM_NOTHING || r == XR_CONFIRM_CANDIDATE || r == XR_CONFIRM_DEADLOCK);
        }
      }
      ck_assert_msg(r == XR_CONFIRM_DEADLOCK && t - t0 <= 5 * S,
                    "cost %" PRIu64 " ms (every %" PRIu64 " ms), phase %" PRIu64 " ms: %s after %" PRIu64 " ms",
                    cost / ms, every / ms, phase / ms, r == XR_CONFIRM_DEADLOCK ? "confirmed" : "not confirmed",
                    (t - t0) / ms);
    }
  }
}
END_TEST

static Suite *confirm_suite(void) {
  Suite *s = suite_create("xrank_confirm");
  TCase *tc = tcase_create("policy");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 10);
  tcase_add_test(tc, deadlock_confirmed_after_window_and_fresh_reports);
  tcase_add_test(tc, progress_restarts_the_window);
  tcase_add_test(tc, resolved_candidate_reports_nothing);
  tcase_add_test(tc, short_blocks_do_not_count);
  tcase_add_test(tc, hang_after_timeout_without_progress);
  tcase_add_test(tc, init_never_joined_is_a_hang);
  tcase_add_test(tc, hang_names_the_first_missing_collective_of_a_group);
  tcase_add_test(tc, progress_keeps_the_hang_away);
  tcase_add_test(tc, stall_warns_early_then_hang_fails);
  tcase_add_test(tc, dead_processes_get_no_verdict);
  tcase_add_test(tc, alive_process_that_ended_the_comm_is_named_so);
  tcase_add_test(tc, cadence_bounds_the_coordinator_share);
  tcase_add_test(tc, deadlock_confirmed_at_every_cadence);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(confirm_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
