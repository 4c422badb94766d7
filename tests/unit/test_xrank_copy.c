/* test_xrank_copy.c - the cross-rank analyzer's copy handler, driven
 * directly with synthetic events: a copy that blocks the host publishes
 * the thread as blocked from its PRE to its POST (what the wait-for graph
 * reads, xr_blocked_snapshot), one that cannot block publishes nothing, and
 * the analyzer's POST gate for copies is open exactly while a copy's PRE
 * published a blocked state (a2a_dispatch_hot skips the POST otherwise).
 * Also the front's routes: for NCCL operations (on_event straight to
 * on_coll and on_p2p), exactly a successful POST of a collective with a
 * count or of a send/receive pushes a record; for a polling loop's stream queries and
 * ncclCommGetAsyncError calls, the thread's published polling state. */
#include <check.h>
#include <stdlib.h>

#include "a2a_core.h"
#include "collector.h"
#include "core_internal.h"
#include "xrank_rec.h"

#define DEV 0x10000000u  /* a device segment */
#define HOST 0x7000000u  /* pageable host memory (not in the registry) */

static void setup(void) {
  collector_reset();
  a2a_event ev = ev_make(A2A_EV_ALLOC);
  ev.api = "cudaMalloc";
  ev.u.mem.mem = A2A_MEM_DEVICE;
  ev.u.mem.size = 1u << 20;
  ev.u.mem.ptr = (void *)(uintptr_t)DEV;
  ev_post(&ev, 0);
  ck_assert_int_eq(a2a_analyzer_xrank.init(), 0);
  ck_assert(xr_active());
}

static a2a_event copy_ev(uintptr_t dst, uintptr_t src, int kind, int async) {
  a2a_event ev = ev_make(A2A_EV_MEMCPY);
  ev.api = async ? "cudaMemcpyAsync" : "cudaMemcpy";
  ev.u.copy.dst = (void *)dst;
  ev.u.copy.src = (const void *)src;
  ev.u.copy.bytes = ev.u.copy.width = 256;
  ev.u.copy.height = 1;
  ev.u.copy.cpykind = kind;
  ev.u.copy.async = async;
  return ev;
}

static void phase(a2a_event *ev, a2a_phase ph) {
  ev->phase = ph;
  a2a_analyzer_xrank.on_event(ev);
}

static size_t blocked(void) {
  xr_threadstate ts[8];
  return xr_blocked_snapshot(ts, 8, 0);
}

static unsigned gate(void) {
  return atomic_load(a2a_analyzer_xrank.post_gate);
}

START_TEST(async_copy_that_cannot_block_publishes_nothing) {
  ck_assert(a2a_analyzer_xrank.post_gated & A2A_KIND_BIT(A2A_EV_MEMCPY));
  a2a_event ev = copy_ev(DEV + 4096, DEV, A2A_CPY_D2D, 1);
  phase(&ev, A2A_PRE);
  ck_assert_uint_eq(blocked(), 0);
  ck_assert_uint_eq(gate(), 0);
  phase(&ev, A2A_POST);
  ev = copy_ev(HOST, DEV, A2A_CPY_D2D, 1); /* the declared kind decides */
  phase(&ev, A2A_PRE);
  ck_assert_uint_eq(blocked(), 0);
  phase(&ev, A2A_POST);
  ck_assert_uint_eq(gate(), 0);
}
END_TEST

/* The shim's hot copy dispatch (A2A_PRE_HOT_COPY, A2A_POST_END_HOT), with
 * xrank in the dispatch table: a queued copy's PRE takes the queued-copy
 * row, which leaves xrank out (pre_skips_queued_copy); every copy the host
 * may wait in - asynchronous device-to-host or Default, any synchronous
 * one - takes the copy row and reaches it. */
static void hot_copy(a2a_event *ev) {
  ev->phase = A2A_PRE;
  if (a2a_copy_queued(ev)) a2a_dispatch_row(ev, A2A_EV_MEMCPY, A2A_ROW_QCOPY, A2A_PRE);
  else a2a_dispatch_hot(ev, A2A_EV_MEMCPY, A2A_PRE);
}
static void hot_post(a2a_event *ev) {
  ev->phase = A2A_POST;
  a2a_event_set_result(ev, 0);
  a2a_dispatch_hot(ev, A2A_EV_MEMCPY, A2A_POST);
}

START_TEST(hot_dispatch_reaches_xrank_for_copies_that_may_block) {
  static const a2a_analyzer *const only[] = {&a2a_analyzer_xrank};
  a2a_core_set_analyzers_for_tests(only, 1);
  setup(); /* the core re-initialized with xrank alone, the device segment */
  ck_assert(a2a_analyzer_xrank.pre_skips_queued_copy);
  ck_assert_ptr_null(atomic_load(&a2a_hot_rows[A2A_PRE][A2A_ROW_QCOPY].sel[0][0]));
  ck_assert_ptr_nonnull(atomic_load(&a2a_handlers[A2A_PRE][A2A_EV_MEMCPY][0]));
  static const struct { int kind, async; } blocks[] = {
      {A2A_CPY_D2H, 1}, {A2A_CPY_DEFAULT, 1}, {A2A_CPY_D2H, 0}, {A2A_CPY_H2D, 0}};
  for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
    a2a_event ev = copy_ev(HOST, DEV, blocks[i].kind, blocks[i].async);
    hot_copy(&ev);
    ck_assert_msg(blocked() == 1, "copy %zu: not published", i);
    hot_post(&ev);
    ck_assert_uint_eq(blocked(), 0);
    ck_assert_uint_eq(gate(), 0);
  }
  a2a_event ev = copy_ev(DEV + 4096, DEV, A2A_CPY_D2D, 1);
  hot_copy(&ev);
  ck_assert_uint_eq(blocked(), 0);
  hot_post(&ev);
  a2a_core_set_analyzers_for_tests(a2a_local_analyzers, a2a_nlocal_analyzers);
  collector_reset();
}
END_TEST

START_TEST(async_copy_into_pageable_memory_blocks_until_its_post) {
  a2a_event ev = copy_ev(HOST, DEV, A2A_CPY_D2H, 1);
  phase(&ev, A2A_PRE);
  ck_assert_uint_eq(blocked(), 1);
  ck_assert_uint_eq(gate(), 1);
  phase(&ev, A2A_POST);
  ck_assert_uint_eq(blocked(), 0);
  ck_assert_uint_eq(gate(), 0);
  ev = copy_ev(DEV + 4096, DEV, A2A_CPY_D2H, 1); /* into device memory: does not block */
  phase(&ev, A2A_PRE);
  ck_assert_uint_eq(blocked(), 0);
  phase(&ev, A2A_POST);
  ev = copy_ev(HOST, DEV, A2A_CPY_DEFAULT, 1); /* DEFAULT from a device segment */
  phase(&ev, A2A_PRE);
  ck_assert_uint_eq(blocked(), 1);
  phase(&ev, A2A_POST);
  ck_assert_uint_eq(blocked(), 0);
  ck_assert_uint_eq(gate(), 0);
}
END_TEST

START_TEST(synchronous_copy_blocks_until_its_post) {
  a2a_event ev = copy_ev(DEV + 4096, DEV, A2A_CPY_D2D, 0);
  phase(&ev, A2A_PRE);
  ck_assert_uint_eq(blocked(), 1);
  ck_assert_uint_eq(gate(), 1);
  /* Another thread's copy POST leaves this thread's state alone. */
  a2a_event other = copy_ev(DEV + 4096, DEV, A2A_CPY_D2D, 0);
  other.thread = 2;
  phase(&other, A2A_POST);
  ck_assert_uint_eq(blocked(), 1);
  ck_assert_uint_eq(gate(), 1);
  phase(&ev, A2A_POST);
  ck_assert_uint_eq(blocked(), 0);
  ck_assert_uint_eq(gate(), 0);
}
END_TEST

/* Records in the queue now (drained). */
static int drain(xr_rec *last) {
  int n = 0;
  xr_rec r;
  while (xr_ring_pop(&r)) {
    n++;
    if (last) *last = r;
  }
  return n;
}

/* Rank 0 of a two-rank communicator made from id (the registry's record:
 * an id hash, so the comm is known to the cross-rank analyzer). */
static void comm_init(void *comm, unsigned char *id) {
  a2a_event ini = ev_make(A2A_EV_COMM_INIT);
  ini.u.init.how = A2A_INIT_RANK;
  ini.u.init.newcomm = comm;
  ini.u.init.nranks = 2;
  ini.u.init.rank = 0;
  ini.u.init.device = 0;
  ini.u.init.blocking = 1;
  ini.u.init.ids = id;
  ev_dispatch(&ini, 0);
}

/* comm_init, then the queue emptied of the registration's records. */
static void comm_ready(void *comm, unsigned char *id) {
  comm_init(comm, id);
  drain(NULL);
}

START_TEST(operations_reach_the_queue_from_the_front) {
  static unsigned char id[128] = {0x5a, 1, 2, 3};
  void *const comm = (void *)0xc0;
  comm_ready(comm, id);

  a2a_event op = ev_make(A2A_EV_COLL);
  op.comm = comm;
  op.stream = (void *)0x5100;
  op.u.coll.coll = A2A_COLL_ALLREDUCE;
  op.u.coll.count = 8;
  op.u.coll.dtype = 7;
  op.u.coll.root = -1;
  a2a_event_set_result(&op, 0); /* (a PRE that claims success, to test the phase alone) */
  phase(&op, A2A_PRE);
  ck_assert_int_eq(drain(NULL), 0); /* a PRE: nothing */
  a2a_event_set_result(&op, 5);
  phase(&op, A2A_POST);
  ck_assert_int_eq(drain(NULL), 0); /* failed: nothing */
  a2a_event_set_result(&op, 0);
  phase(&op, A2A_POST);
  xr_rec r;
  ck_assert_int_eq(drain(&r), 1);
  ck_assert_int_eq(r.type, XR_REC_OP_UNIT);
  ck_assert_int_eq(r.u.opu.op.kind, XR_OP_COLL);
  ck_assert_uint_eq(r.u.opu.op.count, 8);
  op.u.coll.count = 0; /* dropped by NCCL: never a task */
  phase(&op, A2A_POST);
  ck_assert_int_eq(drain(NULL), 0);

  a2a_event p2p = ev_make(A2A_EV_P2P);
  p2p.comm = comm;
  p2p.stream = (void *)0x5100;
  p2p.u.p2p.is_send = 1;
  p2p.u.p2p.count = 0; /* a send of nothing is still an operation */
  p2p.u.p2p.dtype = 0;  /* (dtype and peer 0: u.coll.count, which they */
  p2p.u.p2p.peer = 0;   /* overlay, is 0 too - a collective's test would drop it) */
  a2a_event_set_result(&p2p, 0);
  phase(&p2p, A2A_POST);
  ck_assert_int_eq(drain(&r), 1);
  ck_assert_int_eq(r.u.opu.op.kind, XR_OP_SEND);

  /* In a group (the front's group brackets): OP records, then one
   * UNIT_END for the group's stream at the outermost end. */
  a2a_event g = ev_make(A2A_EV_GROUP_START);
  a2a_event_set_result(&g, 0);
  phase(&g, A2A_POST);
  p2p.u.p2p.count = 8;
  phase(&p2p, A2A_POST);
  phase(&p2p, A2A_POST);
  ck_assert_int_eq(drain(&r), 2);
  ck_assert_int_eq(r.type, XR_REC_OP);
  g = ev_make(A2A_EV_GROUP_END);
  a2a_event_set_result(&g, 0);
  phase(&g, A2A_POST);
  ck_assert_int_eq(drain(&r), 1);
  ck_assert_int_eq(r.type, XR_REC_UNIT_END);
  ck_assert_uint_eq(r.stream, 0x5100);
  p2p.u.p2p.count = 8; /* after the group: a unit by itself again */
  phase(&p2p, A2A_POST);
  ck_assert_int_eq(drain(&r), 1);
  ck_assert_int_eq(r.type, XR_REC_OP_UNIT);
}
END_TEST

/* The dispatch table's handler of a send's or receive's POST (by_kind_post,
 * which takes the phase for granted: P2P is in the post mask only) does
 * what on_event does for it: an OP inside a group, nothing for a failed
 * call, an OP_UNIT outside a group. */
START_TEST(p2p_post_handler_is_on_events_for_a_post) {
  ck_assert(!(a2a_analyzer_xrank.pre & A2A_KIND_BIT(A2A_EV_P2P)));
  ck_assert(a2a_analyzer_xrank.by_kind_post != NULL);
  void (*post)(const a2a_event *) = a2a_analyzer_xrank.by_kind_post->fn[A2A_EV_P2P];
  ck_assert(post != NULL);
  static unsigned char id[128] = {0x5c, 7, 8, 9};
  void *const comm = (void *)0xc4;
  comm_ready(comm, id);

  a2a_event p2p = ev_make(A2A_EV_P2P);
  p2p.comm = comm;
  p2p.stream = (void *)0x5200;
  p2p.phase = A2A_POST;
  p2p.u.p2p.is_send = 0;
  p2p.u.p2p.count = 16;
  p2p.u.p2p.dtype = 7;
  p2p.u.p2p.peer = 3;
  a2a_event g = ev_make(A2A_EV_GROUP_START);
  a2a_event_set_result(&g, 0);
  phase(&g, A2A_POST);
  a2a_event_set_result(&p2p, 0);
  post(&p2p);
  xr_rec r;
  ck_assert_int_eq(drain(&r), 1);
  ck_assert_int_eq(r.type, XR_REC_OP);
  ck_assert_uint_eq(r.stream, 0x5200);
  ck_assert_int_eq(r.u.op.kind, XR_OP_RECV);
  ck_assert_uint_eq(r.u.op.count, 16);
  ck_assert_int_eq(r.u.op.peer, 3);
  a2a_event_set_result(&p2p, 5);
  post(&p2p);
  ck_assert_int_eq(drain(NULL), 0); /* failed: nothing */
  g = ev_make(A2A_EV_GROUP_END);
  a2a_event_set_result(&g, 0);
  phase(&g, A2A_POST);
  ck_assert_int_eq(drain(&r), 1);
  ck_assert_int_eq(r.type, XR_REC_UNIT_END);
  a2a_event_set_result(&p2p, 0);
  post(&p2p); /* outside a group: a unit by itself */
  ck_assert_int_eq(drain(&r), 1);
  ck_assert_int_eq(r.type, XR_REC_OP_UNIT);
  ck_assert_int_eq(r.u.opu.op.kind, XR_OP_RECV);
}
END_TEST

static a2a_event poll_ev(a2a_kind kind, void *stream, uint32_t seq, int result) {
  a2a_event ev = ev_make(kind);
  ev.stream = stream;
  ev.seq = seq;
  ev.phase = A2A_POST;
  a2a_event_set_result(&ev, result);
  return ev;
}

/* The thread posts communication: an AllReduce on comm and stream, both
 * phases; returns its seq. */
static uint32_t post_allreduce(void *comm, void *stream) {
  a2a_event op = ev_make(A2A_EV_COLL);
  op.comm = comm;
  op.stream = stream;
  op.u.coll.coll = A2A_COLL_ALLREDUCE;
  op.u.coll.count = 8;
  op.u.coll.dtype = 7;
  op.u.coll.root = -1;
  a2a_event_set_result(&op, 0);
  phase(&op, A2A_POST);
  return op.seq;
}

START_TEST(polling_calls_reach_the_poll_state_from_the_front) {
  static unsigned char id[128] = {0x5b, 4, 5, 6};
  void *const comm = (void *)0xc1;
  comm_init(comm, id);
  uint32_t seq = post_allreduce(comm, (void *)0x5100) + 100;
  xr_threadstate ts[8];
  a2a_event q = poll_ev(A2A_EV_STREAM_QUERY, (void *)0x5100, seq, 600); /* not ready */
  a2a_analyzer_xrank.on_event(&q);
  ck_assert_uint_eq(xr_blocked_snapshot(ts, 8, 0), 1);
  ck_assert_uint_eq(ts[0].stream, 0x5100);
  ck_assert_uint_eq(ts[0].flags, XR_THREAD_POLLING);
  /* The neutral call between two queries continues the episode: the next
   * query's stream joins the set instead of starting a new one. */
  a2a_event ae = poll_ev(A2A_EV_COMM_ASYNC_ERROR, NULL, seq + 1, 0);
  ae.comm = comm;
  a2a_analyzer_xrank.on_event(&ae);
  q = poll_ev(A2A_EV_STREAM_QUERY, (void *)0x5200, seq + 2, 600);
  a2a_analyzer_xrank.on_event(&q);
  ck_assert_uint_eq(xr_blocked_snapshot(ts, 8, 0), 2);
  /* Complete: the streams leave the set. */
  q = poll_ev(A2A_EV_STREAM_QUERY, (void *)0x5100, seq + 3, 0);
  a2a_analyzer_xrank.on_event(&q);
  q = poll_ev(A2A_EV_STREAM_QUERY, (void *)0x5200, seq + 4, 0);
  a2a_analyzer_xrank.on_event(&q);
  ck_assert_uint_eq(xr_blocked_snapshot(ts, 8, 0), 0);
}
END_TEST

/* The shim's stream and event queries carry no time (hot calls: t_ns 0,
 * a2a_event.h): a not-ready one that starts a polling episode takes its
 * start from the host's clock, so the episode's age is right; a query
 * that continues the episode does not move the start. */
START_TEST(untimed_query_starts_an_episode_at_the_hosts_time) {
  static unsigned char id[128] = {0x5c, 4, 5, 6};
  void *const comm = (void *)0xc2;
  comm_init(comm, id);
  uint32_t op_seq = post_allreduce(comm, (void *)0x5300);

  for (int k = 0; k < 2; k++) {
    a2a_kind kind = k ? A2A_EV_EVENT_QUERY : A2A_EV_STREAM_QUERY;
    uint32_t seq = op_seq + 100 + 10 * (uint32_t)k;
    collector_set_time_ns(7000000000ull);
    a2a_event q = poll_ev(kind, (void *)0x5300, seq, 600); /* not ready */
    q.u.event.event = (void *)0xe5;
    q.t_ns = 0;
    a2a_analyzer_xrank.on_event(&q);
    collector_advance_ns(3000000); /* 3 ms later, still not ready */
    q.seq = seq + 1;
    a2a_analyzer_xrank.on_event(&q);
    xr_threadstate ts[8];
    ck_assert_uint_eq(xr_blocked_snapshot(ts, 8, 7005000000ull), 1);
    ck_assert_uint_eq(ts[0].flags, XR_THREAD_POLLING);
    ck_assert_uint_eq(ts[0].blocked_ms, 5);
    q.seq = seq + 2;
    a2a_event_set_result(&q, 0); /* complete: the episode ends */
    a2a_analyzer_xrank.on_event(&q);
    ck_assert_uint_eq(xr_blocked_snapshot(ts, 8, 7005000000ull), 0);
  }
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("xrank_copy");
  TCase *tc = tcase_create("xrank_copy");
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_set_timeout(tc, 20);
  tcase_add_test(tc, async_copy_that_cannot_block_publishes_nothing);
  tcase_add_test(tc, async_copy_into_pageable_memory_blocks_until_its_post);
  tcase_add_test(tc, hot_dispatch_reaches_xrank_for_copies_that_may_block);
  tcase_add_test(tc, synchronous_copy_blocks_until_its_post);
  tcase_add_test(tc, operations_reach_the_queue_from_the_front);
  tcase_add_test(tc, p2p_post_handler_is_on_events_for_a_post);
  tcase_add_test(tc, polling_calls_reach_the_poll_state_from_the_front);
  tcase_add_test(tc, untimed_query_starts_an_episode_at_the_hosts_time);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
