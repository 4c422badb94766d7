/* test_xrank_wfg.c - the wait-for graph over synthetic progress states:
 * cycles through stream order across two comms, waiting on an exited rank,
 * on a rank that skipped an operation and is blocked elsewhere, a free
 * (computing) rank that is not a deadlock, a slow but progressing op, and
 * grouped p2p whose units need each other to start (not a deadlock). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "xrank_wfg.h"

#include "xr_build.h"

static char story[8192];
static uint8_t inv[8];

static int analyze(pb *bs, int n, xr_wfg_result *res) {
  xr_procstate ps[8];
  for (int i = 0; i < n; i++) ps[i] = bs[i].st;
  xr_wfg_opts o = {.min_blocked_ms = 100, .focus = -1};
  return xr_wfg_analyze(ps, (size_t)n, &o, res, inv, story, sizeof story);
}

/* Rank 0 posts A#0 then B#0 on stream 1, rank 1 posts B#0 then A#0: each
 * head waits for the other's op queued behind its own head. */
START_TEST(two_comms_opposite_order_cycle) {
  pb b[2];
  for (int r = 0; r < 2; r++) {
    pb_init(&b[r], 10 + r);
    pb_comm(&b[r], 0xA, r, 2, 1);
    pb_comm(&b[r], 0xB, r, 2, 1);
    pb_coll(&b[r], r == 0 ? 0xA : 0xB, 1, 0);
    pb_coll(&b[r], r == 0 ? 0xB : 0xA, 1, 0);
    pb_block(&b[r], 1, 2000);
  }
  xr_wfg_result res;
  ck_assert_int_eq(analyze(b, 2, &res), 1);
  ck_assert_int_eq(res.dead_threads, 2);
  ck_assert_int_eq(res.cycle, 1);
  ck_assert_int_eq(inv[0] && inv[1], 1);
  ck_assert_ptr_nonnull(strstr(story, "000000000000000a"));
  ck_assert_ptr_nonnull(strstr(story, "000000000000000b"));
  ck_assert_ptr_nonnull(strstr(story, "queued behind"));
  /* Same order on both ranks: nothing. */
  b[1].units[0].comm = 0xA;
  b[1].units[1].comm = 0xB;
  ck_assert_int_eq(analyze(b, 2, &res), 0);
}
END_TEST

/* Ranks 0-2 wait in group #10 for rank 3, which exited after 9 groups. */
static void skip_setup(pb *b, int rank3_alive, int rank3_blocked_elsewhere) {
  for (int r = 0; r < 4; r++) {
    pb_init(&b[r], 20 + r);
    uint32_t done = r == 3 ? 9 : 10;
    xr_commstate *c = pb_comm(&b[r], 0xC, r, 4, 0);
    for (int p = 0; p < 4; p++) pb_comm_peer(&b[r], c, p, done, done);
    if (r < 3) {
      xr_unitstate *u = pb_group(&b[r], 0xC, 1, 10);
      for (int p = 0; p < 4; p++) pb_unit_peer(&b[r], u, p, 9, 10, 9, 10);
      pb_block(&b[r], 1, 3000);
    }
  }
  b[3].st.alive = rank3_alive;
  if (rank3_blocked_elsewhere) {
    /* Rank 3 waits in an AllReduce on comm D that ranks 0-2 never reach. */
    for (int r = 0; r < 4; r++) pb_comm(&b[r], 0xD, r, 4, r == 3 ? 1 : 0);
    pb_coll(&b[3], 0xD, 2, 0);
    pb_block(&b[3], 2, 3000);
  }
}

START_TEST(waits_for_exited_rank) {
  pb b[4];
  skip_setup(b, 0, 0);
  xr_wfg_result res;
  ck_assert_int_eq(analyze(b, 4, &res), 1);
  ck_assert_int_eq(res.dead_threads, 3);
  ck_assert_int_eq(res.missing_proc, 3);
  ck_assert_ptr_nonnull(strstr(story, "rank 3 is the missing rank"));
  ck_assert_ptr_nonnull(strstr(story, "exited after posting 9"));
}
END_TEST

START_TEST(waits_for_rank_blocked_elsewhere) {
  pb b[4];
  skip_setup(b, 1, 1);
  xr_wfg_result res;
  ck_assert_int_eq(analyze(b, 4, &res), 1);
  ck_assert_int_eq(res.dead_threads, 4);
  ck_assert_int_eq(res.missing_proc, 3);
  ck_assert_int_eq(inv[3], 1);
  ck_assert_ptr_nonnull(strstr(story, "waits for rank 3 to post"));
}
END_TEST

/* The same skip, but rank 3 is computing (no blocked thread): it may still
 * post, so it is not a deadlock (only A2ACHECK_HANG_TIMEOUT applies). */
START_TEST(free_rank_is_not_deadlock) {
  pb b[4];
  skip_setup(b, 1, 0);
  xr_wfg_result res;
  ck_assert_int_eq(analyze(b, 4, &res), 0);
  ck_assert_int_eq(res.dead_threads, 0);
}
END_TEST

/* Ranks as threads of one process: rank 0's thread (1) waits in
 * cudaStreamSynchronize for its AllReduce, which needs rank 1's; rank 1 has
 * posted nothing yet. Its poster, thread 2, waits in nothing (computing):
 * it may still post, no deadlock. Unknown (0) or the waiting thread itself:
 * the process is taken as blocked as a whole, as before (a deadlock). */
START_TEST(ranks_as_threads_free_poster_is_not_deadlock) {
  pb b[1];
  pb_init(&b[0], 40);
  pb_comm(&b[0], 0xF, 0, 2, 1);
  xr_commstate *c1 = pb_comm(&b[0], 0xF, 1, 2, 0);
  pb_coll(&b[0], 0xF, 1, 0);
  pb_block(&b[0], 1, 4000);
  xr_wfg_result res;
  c1->poster = 2;
  ck_assert_int_eq(analyze(b, 1, &res), 0);
  c1->poster = 0;
  ck_assert_int_eq(analyze(b, 1, &res), 1);
  ck_assert_int_eq(res.dead_threads, 1);
  c1->poster = 1;
  ck_assert_int_eq(analyze(b, 1, &res), 1);
  /* Thread 2 waits too (on a stream of its own, behind nothing of
   * rank 1's): it will not post. */
  c1->poster = 2;
  b[0].threads[b[0].st.nthreads++] = (xr_threadstate){.stream = 7, .blocked_ms = 4000, .thread = 2,
                                                      .wait = XR_WAIT_STREAM, .site = 0x998};
  ck_assert_int_eq(analyze(b, 1, &res), 1);
}
END_TEST

/* The same, rank 1's poster (thread 2) having exited (a worker that
 * returned early): still no deadlock (another thread could take the rank
 * over), but the hang story says the poster exited instead of "may still
 * post it" from a thread in no wait. */
START_TEST(ranks_as_threads_exited_poster_story) {
  pb b[1];
  pb_init(&b[0], 41);
  pb_comm(&b[0], 0xF, 0, 2, 1);
  xr_commstate *c1 = pb_comm(&b[0], 0xF, 1, 2, 0);
  pb_coll(&b[0], 0xF, 1, 0);
  pb_block(&b[0], 1, 4000);
  c1->poster = 2;
  xr_procstate ps[1] = {b[0].st};
  xr_wfg_opts o = {.min_blocked_ms = 100, .focus = -1, .explain_all = 1};
  xr_wfg_result res;
  ck_assert_int_eq(xr_wfg_analyze(ps, 1, &o, &res, inv, story, sizeof story), 0);
  ck_assert_ptr_nonnull(strstr(story, "may still post it"));
  ck_assert_ptr_null(strstr(story, "has exited"));
  c1->poster_gone = 1;
  ps[0] = b[0].st;
  ck_assert_int_eq(xr_wfg_analyze(ps, 1, &o, &res, inv, story, sizeof story), 0);
  ck_assert_ptr_nonnull(strstr(story, "its thread #2 that posted for rank 1 has exited"));
  ck_assert_ptr_null(strstr(story, "may still post it"));
}
END_TEST

/* Ranks as threads of one process (ncclCommInitAll twice), the two
 * communicators used in opposite orders: thread 1 (rank 0) waits in A#1,
 * thread 2 (rank 1) in B#1; neither rank posted the other's yet. Both
 * threads are counted and tell their stories, and the cycle goes through
 * both communicators (each rank's owed operation leads to the thread that
 * posts that rank - for A's rank 1, which posted nothing on A, the thread
 * posting rank 1 elsewhere), never from a thread back to itself. */
START_TEST(ranks_as_threads_opposite_orders_story) {
  pb b[1];
  pb_init(&b[0], 45);
  pb_comm(&b[0], 0xA, 0, 2, 1)->poster = 1;
  pb_comm(&b[0], 0xA, 1, 2, 0);
  pb_comm(&b[0], 0xB, 0, 2, 0);
  pb_comm(&b[0], 0xB, 1, 2, 1)->poster = 2;
  xr_unitstate *ua = pb_coll(&b[0], 0xA, 1, 0);
  ua->rank = 0;
  xr_unitstate *ub = pb_coll(&b[0], 0xB, 2, 0);
  ub->rank = 1;
  pb_block(&b[0], 1, 4000);
  b[0].threads[b[0].st.nthreads++] = (xr_threadstate){.stream = 2, .blocked_ms = 4000, .thread = 2,
                                                      .wait = XR_WAIT_STREAM, .site = 0x998};
  xr_wfg_result res;
  ck_assert_int_eq(analyze(b, 1, &res), 1);
  ck_assert_int_eq(res.dead_threads, 2);
  ck_assert_int_eq(res.cycle, 1);
  /* Thread 1's story: A rank 0 -> rank 1 (thread 2) waiting in B -> back. */
  const char *t1 = strstr(story, "in its thread #1 is blocked");
  ck_assert_ptr_nonnull(t1);
  const char *hop = strstr(t1, "but rank 1, ");
  ck_assert_ptr_nonnull(hop);
  /* (Within thread 1's own line: the hop, not thread 2's story below.) */
  char line[2048];
  const char *eol = strchr(hop, '\n');
  size_t len = eol ? (size_t)(eol - hop) : strlen(hop);
  if (len >= sizeof line) len = sizeof line - 1;
  memcpy(line, hop, len);
  line[len] = 0;
  ck_assert_ptr_nonnull(strstr(line, "in its thread #2, is blocked"));
  ck_assert_ptr_nonnull(strstr(line, "[comm 000000000000000b rank 1"));
  ck_assert_ptr_nonnull(strstr(story, "in its thread #2 is blocked"));
}
END_TEST

/* Ranks as processes: rank 1's process has a thread blocked, and the
 * thread that posted its operations so far (2) waits in nothing - it may
 * wait in the host for the blocked one (a main thread joining workers,
 * autograd's thread idle until the forward returns): the process stays
 * one poster, taken as blocked (the poster rule is for several ranks of a
 * communicator in one process). */
START_TEST(one_rank_per_process_keeps_the_process_rule) {
  pb b[2];
  for (int r = 0; r < 2; r++) {
    pb_init(&b[r], 50 + r);
    pb_comm(&b[r], 0xF, r, 2, r == 0 ? 1 : 0);
    pb_comm(&b[r], 0x1F, r, 2, r == 1 ? 1 : 0);
  }
  pb_coll(&b[0], 0xF, 1, 0);   /* rank 0 waits for rank 1's collective on F */
  pb_block(&b[0], 1, 4000);
  pb_coll(&b[1], 0x1F, 1, 0);  /* rank 1 waits for rank 0's on 1F */
  pb_block(&b[1], 1, 4000);
  b[1].comms[0].poster = 2;    /* F's poster on rank 1: a thread in no wait */
  xr_wfg_result res;
  ck_assert_int_eq(analyze(b, 2, &res), 1);
  ck_assert_int_eq(res.cycle, 1);
}
END_TEST

/* Grouped all-to-all in flight on 2 ranks, both blocked in sync: the units
 * need each other to START, not to complete: not a deadlock. */
START_TEST(group_in_flight_not_deadlock) {
  pb b[2];
  for (int r = 0; r < 2; r++) {
    pb_init(&b[r], 30 + r);
    xr_commstate *c = pb_comm(&b[r], 0xE, r, 2, 0);
    pb_comm_peer(&b[r], c, 1 - r, 5, 5);
    xr_unitstate *u = pb_group(&b[r], 0xE, 1, 5);
    pb_unit_peer(&b[r], u, 1 - r, 4, 5, 4, 5);
    pb_block(&b[r], 1, 5000);
  }
  xr_wfg_result res;
  ck_assert_int_eq(analyze(b, 2, &res), 0);
  /* Rank 1 posted only 4 receives from rank 0 and destroyed the comm. */
  b[1].peers[0].recv_hi = 4;
  b[1].peers[1].recv_hi = 4; b[1].peers[1].recv_lo = 4; /* its unit: no receive */
  b[1].comms[0].ended = 1;
  ck_assert_int_eq(analyze(b, 2, &res), 1);
  ck_assert_ptr_nonnull(strstr(story, "ended the communicator"));
  ck_assert_ptr_nonnull(strstr(story, "receive #5"));
  ck_assert_int_eq(res.missing_proc, 1);
  ck_assert_int_eq(res.missing_ended, 1); /* (the headline: "it ended the communicator") */
}
END_TEST

/* Collective k posted by every rank, completing on some: rank 0 blocked on
 * it while rank 1 already completed it (no unit left): progressing. */
START_TEST(counterpart_completed_is_satisfied) {
  pb b[2];
  pb_init(&b[0], 40);
  pb_init(&b[1], 41);
  pb_comm(&b[0], 0xF, 0, 2, 3);
  pb_comm(&b[1], 0xF, 1, 2, 3);
  pb_coll(&b[0], 0xF, 1, 2);
  pb_block(&b[0], 1, 9000);
  xr_wfg_result res;
  ck_assert_int_eq(analyze(b, 2, &res), 0);
  /* Rank 1 has not posted #3 yet and is sleeping: still not a deadlock. */
  b[1].comms[0].coll_posted = 2;
  ck_assert_int_eq(analyze(b, 2, &res), 0);
  /* Rank 1 blocked on a device-wide sync with nothing of its own pending:
   * its wait can return, so it is not stuck. */
  b[1].threads[b[1].st.nthreads++] = (xr_threadstate){.wait = XR_WAIT_DEVICE, .all = 1,
                                                      .blocked_ms = 9000};
  ck_assert_int_eq(analyze(b, 2, &res), 0);
  /* A blocked thread younger than min_blocked_ms does not count. */
  b[1].st.alive = 0;
  b[0].threads[0].blocked_ms = 10;
  ck_assert_int_eq(analyze(b, 2, &res), 0);
  b[0].threads[0].blocked_ms = 1000;
  ck_assert_int_eq(analyze(b, 2, &res), 1);
}
END_TEST

START_TEST(thread_targets) {
  pb b;
  pb_init(&b, 1);
  pb_comm(&b, 1, 0, 2, 2);
  pb_coll(&b, 1, 0x10, 0);
  pb_coll(&b, 1, 0x20, 1);
  xr_threadstate t = {.wait = XR_WAIT_STREAM, .stream = 0x10};
  ck_assert_int_eq(xr_thread_waits_on(&b.st, &t, &b.units[0]), 1);
  ck_assert_int_eq(xr_thread_waits_on(&b.st, &t, &b.units[1]), 0);
  t.stream = 0x30; /* no comm work of its own: may wait through an event */
  ck_assert_int_eq(xr_thread_waits_on(&b.st, &t, &b.units[1]), 1);
  t.wait = XR_WAIT_DEVICE;
  t.stream = 0x10;
  ck_assert_int_eq(xr_thread_waits_on(&b.st, &t, &b.units[1]), 1);
  uint64_t h1 = xr_state_progress(&b.st);
  b.comms[0].coll_posted++;
  ck_assert_uint_ne(h1, xr_state_progress(&b.st));
}
END_TEST

/* Ranks 0-2 are inside split #2 of the world comm; rank 3 never calls it
 * and waits in a world AllReduce the others have not posted: deadlock. If
 * rank 3 is merely computing, it may still call the split: none. */
START_TEST(split_skipped_deadlock) {
  pb b[4];
  for (int r = 0; r < 4; r++) {
    pb_init(&b[r], 50 + r);
    xr_commstate *c = pb_comm(&b[r], 0x77, r, 4, 2);
    c->splits = 1;
    if (r < 3) {
      b[r].threads[b[r].st.nthreads++] = (xr_threadstate){
          .wait = XR_WAIT_SPLIT, .comm = 0x77, .index = 1, .rank = r, .blocked_ms = 3000};
    }
  }
  xr_wfg_result res;
  ck_assert_int_eq(analyze(b, 4, &res), 0);
  b[3].comms[0].coll_posted = 3;
  pb_coll(&b[3], 0x77, 1, 2);
  pb_block(&b[3], 1, 3000);
  ck_assert_int_eq(analyze(b, 4, &res), 1);
  ck_assert_int_eq(res.dead_threads, 4);
  ck_assert_ptr_nonnull(strstr(story, "ncclCommSplit #2"));
  ck_assert_ptr_nonnull(strstr(story, "rank 3"));
  /* Rank 3 made the split after all: the split waits return. */
  b[3].comms[0].splits = 2;
  ck_assert_int_eq(analyze(b, 4, &res), 0);
}
END_TEST

static const char *mm_cb(void *ctx, uint64_t comm) {
  (void)ctx;
  return comm == 0x99 ? "rank 2 calls count 1000" : NULL;
}

/* Every counterpart started, but the comm has a known argument mismatch:
 * the unit is not assumed to complete. */
START_TEST(known_mismatch_makes_suspect) {
  pb b[2];
  for (int r = 0; r < 2; r++) {
    pb_init(&b[r], 60 + r);
    pb_comm(&b[r], 0x99, r, 2, 1);
    pb_coll(&b[r], 0x99, 1, 0);
    pb_block(&b[r], 1, 3000);
  }
  xr_procstate ps[2] = {b[0].st, b[1].st};
  xr_wfg_opts o = {.min_blocked_ms = 100, .focus = 1};
  xr_wfg_result res;
  ck_assert_int_eq(xr_wfg_analyze(ps, 2, &o, &res, inv, story, sizeof story), 0);
  o.mismatch = mm_cb;
  ck_assert_int_eq(xr_wfg_analyze(ps, 2, &o, &res, inv, story, sizeof story), 1);
  ck_assert_ptr_nonnull(strstr(story, "known cause on comm 0000000000000099: rank 2 calls count 1000"));
  /* The focus process's line comes first. */
  ck_assert_ptr_nonnull(strstr(story, "global rank 61"));
  ck_assert(strstr(story, "global rank 61") < strstr(story, "global rank 60"));
}
END_TEST

/* A run of back-to-back collectives shares one completion marker: rank 0
 * reports collectives #1 and #2 pending (#1 MAYBE_DONE: only the marker is),
 * rank 1 finished #1. With a known mismatch on the comm, #1 still completes
 * in the graph (every counterpart posted) and the story names #2, the one
 * that hangs; without the flag the suspicion would stop at #1. */
START_TEST(maybe_done_unit_is_not_suspect) {
  pb b[2];
  for (int r = 0; r < 2; r++) {
    pb_init(&b[r], 70 + r);
    pb_comm(&b[r], 0x99, r, 2, 2);
  }
  pb_coll(&b[0], 0x99, 1, 0)->flags = XR_UNIT_MAYBE_DONE;
  pb_coll(&b[0], 0x99, 1, 1);
  pb_coll(&b[1], 0x99, 1, 1);
  for (int r = 0; r < 2; r++) pb_block(&b[r], 1, 3000);
  xr_procstate ps[2] = {b[0].st, b[1].st};
  xr_wfg_opts o = {.min_blocked_ms = 100, .focus = 0, .mismatch = mm_cb};
  xr_wfg_result res;
  ck_assert_int_eq(xr_wfg_analyze(ps, 2, &o, &res, inv, story, sizeof story), 1);
  ck_assert_ptr_nonnull(strstr(story, "collective #2"));
  ck_assert_ptr_null(strstr(story, "collective #1 "));
  /* The same state without the flag: #1 is suspect and named. */
  b[0].units[0].flags = 0;
  ps[0] = b[0].st;
  ck_assert_int_eq(xr_wfg_analyze(ps, 2, &o, &res, inv, story, sizeof story), 1);
  ck_assert_ptr_nonnull(strstr(story, "collective #1 "));
}
END_TEST

/* A group over two comms shares one marker: the first comm's unit
 * (MAYBE_DONE) has the known mismatch, the second's unit is certainly
 * incomplete: it carries the suspicion, so the blocked ranks are still a
 * deadlock. */
START_TEST(maybe_done_suspicion_passes_to_the_next_comm) {
  pb b[2];
  for (int r = 0; r < 2; r++) {
    pb_init(&b[r], 90 + r);
    pb_comm(&b[r], 0x99, r, 2, 1);
    pb_comm(&b[r], 0x55, r, 2, 1);
    pb_coll(&b[r], 0x99, 1, 0)->flags = XR_UNIT_MAYBE_DONE;
    pb_coll(&b[r], 0x55, 1, 0);
    pb_block(&b[r], 1, 3000);
  }
  xr_procstate ps[2] = {b[0].st, b[1].st};
  xr_wfg_opts o = {.min_blocked_ms = 100, .focus = 0, .mismatch = mm_cb};
  xr_wfg_result res;
  ck_assert_int_eq(xr_wfg_analyze(ps, 2, &o, &res, inv, story, sizeof story), 1);
  ck_assert_ptr_nonnull(strstr(story, "known cause on comm 0000000000000099"));
  o.mismatch = NULL; /* no mismatch known: both complete, no deadlock */
  ck_assert_int_eq(xr_wfg_analyze(ps, 2, &o, &res, inv, story, sizeof story), 0);
}
END_TEST

/* A run of back-to-back collectives reported as one unit (XR_UNIT_RUN,
 * collectives #1..#3): it waits for the peers' last one. Rank 1 posted two
 * and is computing: no deadlock; rank 1 exited: a deadlock whose story
 * names the run by its range and its last collective. */
START_TEST(run_unit_waits_for_the_last_collective) {
  pb b[2];
  for (int r = 0; r < 2; r++) pb_init(&b[r], 80 + r);
  pb_comm(&b[0], 0x77, 0, 2, 3);
  pb_comm(&b[1], 0x77, 1, 2, 2);
  xr_unitstate *u = pb_coll(&b[0], 0x77, 1, 0);
  u->coll_hi = 3;
  u->flags = XR_UNIT_RUN;
  pb_block(&b[0], 1, 3000);
  xr_wfg_result res;
  ck_assert_int_eq(analyze(b, 2, &res), 0);
  b[1].st.alive = 0;
  ck_assert_int_eq(analyze(b, 2, &res), 1);
  ck_assert_ptr_nonnull(strstr(story, "collectives #1 to #3 (back to back, one completion marker)"));
}
END_TEST

/* One process holding two ranks of one comm (a thread per rank): units
 * are matched by their own rank. */
START_TEST(two_ranks_in_one_process) {
  pb b;
  pb_init(&b, 70);
  pb_comm(&b, 0x55, 0, 2, 1);
  pb_comm(&b, 0x55, 1, 2, 1);
  xr_unitstate *u0 = pb_coll(&b, 0x55, 1, 0);
  u0->rank = 0;
  xr_unitstate *u1 = pb_coll(&b, 0x55, 2, 0);
  u1->rank = 1;
  pb_block(&b, 1, 3000);
  xr_wfg_result res;
  ck_assert_int_eq(analyze(&b, 1, &res), 0);
  /* Rank 1's collective #1 was never posted: rank 0's waits forever. */
  b.comms[1].coll_posted = 0;
  b.st.nunits = 1;
  b.threads[b.st.nthreads++] = (xr_threadstate){.wait = XR_WAIT_DEVICE, .all = 1, .blocked_ms = 3000};
  ck_assert_int_eq(analyze(&b, 1, &res), 1);
}
END_TEST

/* Threads inside a blocking init: fine unless the comm's ranks are known
 * to disagree (then every one of them is stuck). */
START_TEST(init_wait_with_known_mismatch) {
  pb b[2];
  for (int r = 0; r < 2; r++) {
    pb_init(&b[r], 80 + r);
    pb_comm(&b[r], 0x99, r, 2, 0);
    b[r].threads[b[r].st.nthreads++] = (xr_threadstate){
        .wait = XR_WAIT_INIT, .comm = 0x99, .rank = r, .blocked_ms = 4000, .site = 0x42};
  }
  xr_wfg_result res;
  ck_assert_int_eq(analyze(b, 2, &res), 0);
  xr_procstate ps[2] = {b[0].st, b[1].st};
  xr_wfg_opts o = {.min_blocked_ms = 100, .focus = -1, .mismatch = mm_cb};
  ck_assert_int_eq(xr_wfg_analyze(ps, 2, &o, &res, inv, story, sizeof story), 1);
  ck_assert_int_eq(res.dead_threads, 2);
  ck_assert_ptr_nonnull(strstr(story, "ncclCommInitRank"));
  ck_assert_ptr_nonnull(strstr(story, "its ranks disagree"));
}
END_TEST

/* Rank 1 leaves its group open (the AllReduce is posted, never launched).
 * While it may still end the group (even blocked in a sync, which does not
 * wait for unlaunched work): none. Once it exited: deadlock. */
START_TEST(open_group_never_launched) {
  pb b[2];
  for (int r = 0; r < 2; r++) {
    pb_init(&b[r], 90 + r);
    pb_comm(&b[r], 0x31, r, 2, 1);
    pb_coll(&b[r], 0x31, 1, 0);
  }
  b[1].units[0].flags = XR_UNIT_OPEN;
  pb_block(&b[0], 1, 3000);
  xr_wfg_result res;
  ck_assert_int_eq(analyze(b, 2, &res), 0);
  pb_block(&b[1], 1, 3000);
  ck_assert_int_eq(analyze(b, 2, &res), 0);
  b[1].st.alive = 0;
  ck_assert_int_eq(analyze(b, 2, &res), 1);
  ck_assert_int_eq(res.dead_threads, 1);
  ck_assert_ptr_nonnull(strstr(story, "exited"));
}
END_TEST

/* A report whose slices are not in posting order (hostile or malformed:
 * the shim numbers operations in posting order) gets the answer a scan of
 * every unit gives. Rank 0 waits in U0 for rank 1's send #0, which rank 1
 * lists after sends #5 (on another stream) and #2 (in X), and queues
 * behind X on its stream; X needs rank 0's send #0, never posted: a
 * deadlock. */
START_TEST(hostile_slices_answer_as_a_scan) {
  pb b[2];
  pb_init(&b[0], 70);
  xr_commstate *c0 = pb_comm(&b[0], 0x41, 0, 2, 0);
  pb_comm_peer(&b[0], c0, 1, 0, 1);
  xr_unitstate *u0 = pb_group(&b[0], 0x41, 1, 1);
  pb_unit_peer(&b[0], u0, 1, 0, 0, 0, 1);
  pb_block(&b[0], 1, 3000);
  pb_init(&b[1], 71);
  xr_commstate *c1 = pb_comm(&b[1], 0x41, 1, 2, 0);
  pb_comm_peer(&b[1], c1, 0, 6, 1);
  xr_unitstate *a = pb_group(&b[1], 0x41, 2, 1);
  pb_unit_peer(&b[1], a, 0, 5, 6, 0, 0);
  xr_unitstate *x = pb_group(&b[1], 0x41, 3, 2);
  pb_unit_peer(&b[1], x, 0, 2, 3, 0, 1);
  xr_unitstate *bb = pb_group(&b[1], 0x41, 3, 3);
  pb_unit_peer(&b[1], bb, 0, 0, 1, 0, 0);
  xr_wfg_result res;
  ck_assert_int_eq(analyze(b, 2, &res), 1);
  ck_assert_int_eq(res.dead_threads, 1);
  ck_assert_ptr_nonnull(strstr(story, "queued behind"));
  /* A unit listing a peer twice is judged by its first entry (here
   * empty: B holds none of rank 0's awaited sends, and U0 can complete). */
  b[1].peers[bb->peer_off] = (xr_peerent){.peer = 0};
  pb_unit_peer(&b[1], bb, 0, 0, 1, 0, 0);
  ck_assert_int_eq(analyze(b, 2, &res), 0);
}
END_TEST

/* No thread blocked min_blocked_ms: nothing to report, and no graph is
 * built - unless the caller asked for every thread's story (the hang
 * dump), which the early answer must not skip. */
START_TEST(story_without_a_long_wait_only_on_request) {
  pb b[2];
  for (int r = 0; r < 2; r++) {
    pb_init(&b[r], 80 + r);
    pb_comm(&b[r], 0xA, r, 2, 1);
    pb_comm(&b[r], 0xB, r, 2, 1);
    pb_coll(&b[r], r == 0 ? 0xA : 0xB, 1, 0);
    pb_coll(&b[r], r == 0 ? 0xB : 0xA, 1, 0);
    pb_block(&b[r], 1, 50);
  }
  xr_procstate ps[2] = {b[0].st, b[1].st};
  xr_wfg_opts o = {.min_blocked_ms = 100, .focus = -1};
  xr_wfg_result res;
  strcpy(story, "stale");
  ck_assert_int_eq(xr_wfg_analyze(ps, 2, &o, &res, inv, story, sizeof story), 0);
  ck_assert_str_eq(story, "");
  ck_assert_int_eq(res.missing_proc, -1);
  o.explain_all = 1;
  ck_assert_int_eq(xr_wfg_analyze(ps, 2, &o, &res, inv, story, sizeof story), 0);
  ck_assert_ptr_nonnull(strstr(story, "is blocked in cudaStreamSynchronize"));
  ck_assert_ptr_nonnull(strstr(story, "queued behind"));
}
END_TEST

/* A process with n collectives of comm 0x51 on stream 1 in flight, then
 * one of `last` (its own arrays: beyond xr_build.h's sizes). */
typedef struct bigp {
  xr_commstate comms[2];
  xr_unitstate *units;
  xr_threadstate thread;
  xr_procstate st;
} bigp;

static void bigp_init(bigp *b, int rank, uint32_t n, uint64_t first, uint64_t last) {
  memset(b, 0, sizeof *b);
  b->units = calloc(n + 2, sizeof *b->units);
  ck_assert_ptr_nonnull(b->units);
  b->comms[0] = (xr_commstate){.comm = 0x51, .rank = rank, .nranks = 2, .coll_posted = n + 1};
  b->comms[1] = (xr_commstate){.comm = 0x52, .rank = rank, .nranks = 2, .coll_posted = 1};
  for (uint32_t k = 0; k < n; k++)
    b->units[k] = (xr_unitstate){.comm = 0x51, .stream = 1, .coll_lo = k, .coll_hi = k + 1,
                                 .kind = XR_OP_COLL, .dtype = 7, .group = k + 1, .rank = rank};
  b->units[n] = (xr_unitstate){.comm = first, .stream = 1, .coll_lo = first == 0x51 ? n : 0,
                               .kind = XR_OP_COLL, .dtype = 7, .group = n + 1, .rank = rank};
  b->units[n].coll_hi = b->units[n].coll_lo + 1;
  b->units[n + 1] = (xr_unitstate){.comm = last, .stream = 1, .coll_lo = last == 0x51 ? n : 0,
                                   .kind = XR_OP_COLL, .dtype = 7, .group = n + 2, .rank = rank};
  b->units[n + 1].coll_hi = b->units[n + 1].coll_lo + 1;
  b->thread = (xr_threadstate){.stream = 1, .blocked_ms = 3000, .wait = XR_WAIT_STREAM};
  b->st = (xr_procstate){.alive = 1, .pid = 60 + rank, .grank = rank, .ncomms = 2,
                         .nunits = n + 2, .nthreads = 1, .comms = b->comms, .units = b->units,
                         .threads = &b->thread};
}

/* The two ranks take comms 0x51 and 0x52 in opposite orders after 3,000
 * healthy collectives on one stream: every one of those completes (each
 * only after its predecessor: the longest chain the fixpoint follows), and
 * the deadlock is the pair at the end. */
START_TEST(long_chain_deadlock_at_its_end) {
  enum { N = 3000 };
  bigp b[2];
  bigp_init(&b[0], 0, N, 0x51, 0x52);
  bigp_init(&b[1], 1, N, 0x52, 0x51);
  xr_procstate ps[2] = {b[0].st, b[1].st};
  xr_wfg_opts o = {.min_blocked_ms = 100, .focus = -1};
  xr_wfg_result res;
  ck_assert_int_eq(xr_wfg_analyze(ps, 2, &o, &res, inv, story, sizeof story), 1);
  ck_assert_int_eq(res.dead_threads, 2);
  ck_assert_int_eq(res.cycle, 1);
  ck_assert_ptr_nonnull(strstr(story, "collective #3001"));
  ck_assert_ptr_null(strstr(story, "collective #3000 "));
  /* The same order on both: nothing. */
  b[1].units[N].comm = 0x51, b[1].units[N].coll_lo = N, b[1].units[N].coll_hi = N + 1;
  b[1].units[N + 1].comm = 0x52, b[1].units[N + 1].coll_lo = 0, b[1].units[N + 1].coll_hi = 1;
  ck_assert_int_eq(xr_wfg_analyze(ps, 2, &o, &res, inv, story, sizeof story), 0);
  free(b[0].units);
  free(b[1].units);
}
END_TEST

/* A small LCG for the random states below (deterministic per seed). */
static unsigned rnd(uint64_t *s, unsigned m) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (unsigned)((*s >> 33) % m);
}

/* A random well-formed state of up to 4 processes on comms 1 and 2 (each
 * slice appended once, as the shim builds reports): units with
 * collectives and per-peer ranges mostly in posting order (so the indexes
 * bisect), sometimes not, some entries for a peer twice, open and
 * maybe-done units, blocked threads of every kind, dead processes. */
static size_t random_state(uint64_t *s, pb *b) {
  size_t n = 1 + rnd(s, 4);
  int nr = 2 + (int)rnd(s, 3);
  for (size_t p = 0; p < n; p++) {
    pb_init(&b[p], 200 + (int)p);
    b[p].st.alive = rnd(s, 8) != 0;
    uint32_t ncm = 1 + rnd(s, 2);
    for (uint32_t i = 0; i < ncm; i++) {
      xr_commstate *c = pb_comm(&b[p], 1 + i, (int)((p + i) % (unsigned)nr), nr, rnd(s, 6));
      for (int q = 0; q < nr && b[p].st.npeers < 8; q++)
        if (rnd(s, 3)) pb_comm_peer(&b[p], c, q, rnd(s, 6), rnd(s, 6));
    }
    uint32_t next[4] = {0};
    for (uint32_t j = 0; j < 8 && rnd(s, 6); j++) {
      uint64_t comm = 1 + rnd(s, ncm);
      xr_unitstate *u;
      if (rnd(s, 2)) {
        u = pb_coll(&b[p], comm, 1 + rnd(s, 2), rnd(s, 5) ? next[0] : rnd(s, 6));
        next[0] = u->coll_hi;
      } else {
        u = pb_group(&b[p], comm, 1 + rnd(s, 2), j);
        for (uint32_t e = 0, ne = 1 + rnd(s, 3); e < ne && b[p].st.npeers < 32; e++) {
          int q = (int)rnd(s, (unsigned)nr);
          uint32_t lo = rnd(s, 5) ? next[q] : rnd(s, 6), w = rnd(s, 3);
          pb_unit_peer(&b[p], u, q, lo, lo + w, lo, lo + (w ? w : rnd(s, 2)));
          next[q] = lo + 2;
        }
      }
      u->flags = rnd(s, 5) ? 0 : 1 + rnd(s, 2);
    }
    static const uint32_t waits[] = {XR_WAIT_STREAM, XR_WAIT_DEVICE, XR_WAIT_SPLIT, XR_WAIT_INIT};
    for (uint32_t t = rnd(s, 3); t > 0; t--) {
      pb_block(&b[p], 1 + rnd(s, 3), rnd(s, 4) ? 3000 : 10);
      xr_threadstate *T = &b[p].threads[b[p].st.nthreads - 1];
      T->wait = waits[rnd(s, 4)];
      T->comm = 1 + rnd(s, 2);
      T->rank = (int32_t)rnd(s, (unsigned)nr);
      T->index = rnd(s, 2);
    }
  }
  return n;
}

/* The indexes answer as the scan every lookup made before them (and still
 * makes for a malformed report): the same verdict, result, involved set
 * and story for random states - in-order slices bisected, the others
 * scanned, duplicate entries judged by the first. */
START_TEST(indexed_lookups_answer_as_the_scan) {
  static char story2[8192];
  uint64_t s = 12345;
  int dead = 0;
  for (int it = 0; it < 20000; it++) {
    pb b[4];
    xr_procstate ps[4];
    size_t n = random_state(&s, b);
    for (size_t p = 0; p < n; p++) ps[p] = b[p].st;
    xr_wfg_opts o = {.min_blocked_ms = 100, .focus = -1, .explain_all = rnd(&s, 4) == 0};
    xr_wfg_result r1, r2;
    uint8_t i1[4] = {0}, i2[4] = {0};
    int a = xr_wfg_analyze(ps, n, &o, &r1, i1, story, sizeof story);
    o.scan = 1;
    int c = xr_wfg_analyze(ps, n, &o, &r2, i2, story2, sizeof story2);
    ck_assert_int_eq(a, c);
    ck_assert_int_eq(memcmp(&r1, &r2, sizeof r1), 0);
    ck_assert_int_eq(memcmp(i1, i2, sizeof i1), 0);
    ck_assert_str_eq(story, story2);
    dead += a;
  }
  ck_assert_int_gt(dead, 1000); /* the states do deadlock, often */
}
END_TEST

/* A report whose unit slices overlap (every unit pointing at the whole
 * peer array: the decoder checks only that each slice is in bounds), or
 * that lists a membership many times, gets no indexes - they would take memory in the sum of the slices' lengths
 * (here ~4 GiB), and a failed allocation would lose the analysis - and is
 * scanned: the deadlock of two other processes is still found, within an
 * address-space limit well under the indexes' size (not under ASan or
 * TSan, whose shadow memory and allocator need more address space than any
 * such limit: under TSan the limit fails the allocator's own mappings). */
START_TEST(overlapping_slices_are_scanned) {
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  struct rlimit lim = {.rlim_cur = (rlim_t)1 << 30, .rlim_max = (rlim_t)1 << 30};
  ck_assert_int_eq(setrlimit(RLIMIT_AS, &lim), 0); /* the test's own forked process */
#endif
  enum { U = 4000, E = 16000 };
  pb b[2];
  for (int r = 0; r < 2; r++) {
    pb_init(&b[r], 310 + r);
    pb_comm(&b[r], 0xA, r, 2, 1);
    pb_comm(&b[r], 0xB, r, 2, 1);
    pb_coll(&b[r], r == 0 ? 0xA : 0xB, 1, 0);
    pb_coll(&b[r], r == 0 ? 0xB : 0xA, 1, 0);
    pb_block(&b[r], 1, 2000);
  }
  xr_commstate hc = {.comm = 0x71, .rank = 0, .nranks = 2};
  xr_unitstate *hu = calloc(U, sizeof *hu);
  xr_peerent *hp = calloc(E, sizeof *hp);
  ck_assert(hu && hp);
  for (int j = 0; j < U; j++)
    hu[j] = (xr_unitstate){.comm = 0x71, .stream = 5, .npeers = E, .kind = XR_OP_SEND, .coll = -1};
  xr_procstate ps[3] = {b[0].st, b[1].st,
                        {.alive = 1, .pid = 312, .grank = 2, .ncomms = 1, .nunits = U, .npeers = E,
                         .comms = &hc, .units = hu, .peers = hp}};
  xr_wfg_opts o = {.min_blocked_ms = 100, .focus = -1};
  xr_wfg_result res;
  ck_assert_int_eq(xr_wfg_analyze(ps, 3, &o, &res, inv, story, sizeof story), 1);
  ck_assert_int_eq(res.dead_threads, 2);
  /* Disjoint slices, but one membership listed 2,000 times and one unit
   * holding the whole peer array: the unit would be in 2,000 lists (its
   * entries 32 M keys). */
  enum { M = 2000 };
  xr_commstate *mc = calloc(M, sizeof *mc);
  ck_assert_ptr_nonnull(mc);
  for (int i = 0; i < M; i++) mc[i] = (xr_commstate){.comm = 0x72, .rank = 0, .nranks = 2};
  for (int j = 0; j < U; j++)
    hu[j] = (xr_unitstate){.comm = j ? 0x73 : 0x72, .stream = 5, .npeers = j ? 0 : E,
                           .kind = XR_OP_SEND, .coll = -1};
  ps[2].comms = mc;
  ps[2].ncomms = M;
  ck_assert_int_eq(xr_wfg_analyze(ps, 3, &o, &res, inv, story, sizeof story), 1);
  ck_assert_int_eq(res.dead_threads, 2);
  /* 20,000 memberships of one comm and rank and 20,000 units on it:
   * every unit in every list would be 400 M entries (1.6 GB). */
  enum { L = 20000 };
  xr_commstate *lc = calloc(L, sizeof *lc);
  xr_unitstate *lu = calloc(L, sizeof *lu);
  ck_assert(lc && lu);
  for (int i = 0; i < L; i++) {
    lc[i] = (xr_commstate){.comm = 0x74, .rank = 0, .nranks = 2};
    lu[i] = (xr_unitstate){.comm = 0x74, .stream = 5, .kind = XR_OP_SEND, .coll = -1};
  }
  ps[2] = (xr_procstate){.alive = 1, .pid = 312, .grank = 2, .ncomms = L, .nunits = L,
                         .comms = lc, .units = lu};
  ck_assert_int_eq(xr_wfg_analyze(ps, 3, &o, &res, inv, story, sizeof story), 1);
  ck_assert_int_eq(res.dead_threads, 2);
  free(lc);
  free(lu);
  free(mc);
  free(hu);
  free(hp);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("xrank_wfg");
  TCase *t = tcase_create("wfg");
  tcase_set_timeout(t, 30);
  tcase_add_test(t, two_comms_opposite_order_cycle);
  tcase_add_test(t, waits_for_exited_rank);
  tcase_add_test(t, waits_for_rank_blocked_elsewhere);
  tcase_add_test(t, free_rank_is_not_deadlock);
  tcase_add_test(t, ranks_as_threads_free_poster_is_not_deadlock);
  tcase_add_test(t, ranks_as_threads_exited_poster_story);
  tcase_add_test(t, one_rank_per_process_keeps_the_process_rule);
  tcase_add_test(t, ranks_as_threads_opposite_orders_story);
  tcase_add_test(t, group_in_flight_not_deadlock);
  tcase_add_test(t, counterpart_completed_is_satisfied);
  tcase_add_test(t, thread_targets);
  tcase_add_test(t, split_skipped_deadlock);
  tcase_add_test(t, known_mismatch_makes_suspect);
  tcase_add_test(t, maybe_done_unit_is_not_suspect);
  tcase_add_test(t, run_unit_waits_for_the_last_collective);
  tcase_add_test(t, maybe_done_suspicion_passes_to_the_next_comm);
  tcase_add_test(t, two_ranks_in_one_process);
  tcase_add_test(t, init_wait_with_known_mismatch);
  tcase_add_test(t, open_group_never_launched);
  tcase_add_test(t, hostile_slices_answer_as_a_scan);
  tcase_add_test(t, story_without_a_long_wait_only_on_request);
  tcase_add_test(t, long_chain_deadlock_at_its_end);
  tcase_add_test(t, indexed_lookups_answer_as_the_scan);
  tcase_add_test(t, overlapping_slices_are_scanned);
  suite_add_tcase(s, t);
  return s;
}

int main(void) {
  SRunner *r = srunner_create(suite());
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? 1 : 0;
}
