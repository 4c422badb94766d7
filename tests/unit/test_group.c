/* test_group.c - the group_local analyzer (group_local.c, group_misuse.c)
 * driven with synthetic events: each check fires on its bug, stays silent on
 * the correct variant, and one call never yields both group.unbalanced and
 * group.sync-in-group. */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "a2a_core.h"
#include "collector.h"

static unsigned char id_a[128], id_b[128];

#define STREAM_A ((void *)0x5a00)
#define STREAM_B ((void *)0x5b00)
#define EVENT_1 ((void *)0xe100)
#define DEV_SEND 0x10000000u
#define DEV_RECV 0x20000000u

static void setup(void) {
  collector_reset();
  memset(id_a, 0, sizeof id_a);
  memset(id_b, 0, sizeof id_b);
  id_a[0] = 1;
  id_b[0] = 2;
}

static void *init_comm(void *handle, const void *id, int nranks, int rank, int dev) {
  a2a_event ev = ev_make(A2A_EV_COMM_INIT);
  ev.api = "ncclCommInitRank";
  ev.u.init.how = A2A_INIT_RANK;
  ev.u.init.ids = id;
  ev.u.init.nids = 1;
  ev.u.init.nranks = nranks;
  ev.u.init.rank = rank;
  ev.u.init.device = dev;
  ev.u.init.blocking = 1;
  ev.device = dev;
  ev_pre(&ev);
  ev.u.init.newcomm = handle;
  ev_post(&ev, 0);
  return handle;
}

/* How group() dispatches: every call to the kind's rows (ev_dispatch), or
 * as the shim does (ev_dispatch_group: a nested call's rows). */
static void (*g_group_dispatch)(a2a_event *ev, int result) = ev_dispatch;

static void group_r(a2a_kind k, uint32_t thread, int result) {
  a2a_event ev = ev_make(k);
  ev.api = k == A2A_EV_GROUP_START ? "ncclGroupStart" : "ncclGroupEnd";
  ev.thread = thread;
  ev.callsite = (const void *)(uintptr_t)(k == A2A_EV_GROUP_START ? 0x2000 : 0x2100);
  g_group_dispatch(&ev, result);
}
static void group(a2a_kind k, uint32_t thread) { group_r(k, thread, 0); }

static a2a_event p2p(void *comm, int is_send, uintptr_t buf, size_t count, int peer,
                     void *stream) {
  a2a_event ev = ev_make(A2A_EV_P2P);
  ev.api = is_send ? "ncclSend" : "ncclRecv";
  ev.comm = comm;
  ev.stream = stream;
  ev.u.p2p.is_send = is_send;
  ev.u.p2p.buff = (void *)buf;
  ev.u.p2p.count = count;
  ev.u.p2p.dtype = 7; /* ncclFloat32 */
  ev.u.p2p.peer = peer;
  return ev;
}

/* A send or receive of 16 elements to/from peer 0 on stream, posted from
 * a thread whose current device is device, at site. */
static void post_on(void *comm, int is_send, uintptr_t buf, void *stream, int device, uintptr_t site) {
  a2a_event ev = p2p(comm, is_send, buf, 16, 0, stream);
  ev.device = device;
  ev.callsite = (const void *)site;
  ev_dispatch(&ev, 0);
}

static void post_p2p(void *comm, int is_send, uintptr_t buf, size_t count, int peer, void *stream) {
  a2a_event ev = p2p(comm, is_send, buf, count, peer, stream);
  ev_dispatch(&ev, 0);
}

static void simple(a2a_kind k, const char *api, void *stream, int result) {
  a2a_event ev = ev_make(k);
  ev.api = api;
  ev.stream = stream;
  ev.callsite = (const void *)0x3000;
  ev_dispatch(&ev, result);
}

static void event_op(a2a_kind k, const char *api, void *event, void *stream, int result) {
  a2a_event ev = ev_make(k);
  ev.api = api;
  ev.stream = stream;
  ev.u.event.event = event;
  ev_dispatch(&ev, result);
}

static void memcpy_sync_at(const void *site, uintptr_t dst, uintptr_t src, size_t bytes,
                           int kind) {
  a2a_event ev = ev_make(A2A_EV_MEMCPY);
  ev.callsite = site;
  ev.api = "cudaMemcpy";
  ev.u.copy.dst = (void *)dst;
  ev.u.copy.src = (const void *)src;
  ev.u.copy.bytes = ev.u.copy.width = bytes;
  ev.u.copy.height = 1;
  ev.u.copy.cpykind = kind;
  ev_dispatch(&ev, 0);
}

/* At ev_make's call site. */
static void memcpy_sync(uintptr_t dst, uintptr_t src, size_t bytes, int kind) {
  memcpy_sync_at(ev_make(A2A_EV_MEMCPY).callsite, dst, src, bytes, kind);
}

static void exit_event(void) {
  a2a_event ev = ev_make(A2A_EV_PROCESS_EXIT);
  ev.api = "exit";
  ev_pre(&ev);
}

/* ---------------- group.unbalanced ---------------- */

START_TEST(end_without_start) {
  group(A2A_EV_GROUP_END, 1);
  ck_assert_uint_eq(collector_count("group.unbalanced"), 1);
  const collected *c = collector_find("group.unbalanced");
  ck_assert_int_eq(c->severity, A2A_SEV_ERROR);
  ck_assert_ptr_eq(c->site, (const void *)0x2100);
  ck_assert_int_ge(c->stack_n, 1);
  ck_assert_ptr_nonnull(strstr(c->message, "ncclGroupEnd"));
  ck_assert_ptr_nonnull(strstr(c->details, "\"group_depth\":0"));
}
END_TEST

/* A group call after a re-initialization finds the thread's new record,
 * not the one the thread's cache held (thread_of: its generation moved):
 * the new record has no group open. */
START_TEST(end_after_reinit_uses_the_new_record) {
  group(A2A_EV_GROUP_START, 1); /* the thread's record cached, depth 1 */
  collector_reinit();
  group(A2A_EV_GROUP_END, 1);
  ck_assert_uint_eq(collector_count("group.unbalanced"), 1);
  ck_assert_ptr_nonnull(strstr(collector_find("group.unbalanced")->details, "\"group_depth\":0"));
}
END_TEST

START_TEST(balanced_and_nested_groups_are_silent) {
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  group(A2A_EV_GROUP_START, 1);
  group(A2A_EV_GROUP_START, 1);
  post_p2p(comm, 1, DEV_SEND, 16, 1, STREAM_A);
  group(A2A_EV_GROUP_END, 1);
  post_p2p(comm, 0, DEV_RECV, 16, 1, STREAM_A);
  group(A2A_EV_GROUP_END, 1);
  simple(A2A_EV_STREAM_SYNC, "cudaStreamSynchronize", STREAM_A, 0);
  exit_event();
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
}
END_TEST

START_TEST(one_end_too_many) {
  group(A2A_EV_GROUP_START, 1);
  group(A2A_EV_GROUP_END, 1);
  group(A2A_EV_GROUP_END, 1);
  ck_assert_uint_eq(collector_count("group.unbalanced"), 1);
  ck_assert_uint_eq(collector_count_prefix("group."), 1);
}
END_TEST

START_TEST(groups_are_per_thread) {
  /* Thread 1 opens, thread 2 closes: NCCL sees an end without start on
   * thread 2 and a group left open on thread 1. */
  group(A2A_EV_GROUP_START, 1);
  group(A2A_EV_GROUP_END, 2);
  ck_assert_uint_eq(collector_count("group.unbalanced"), 1);
  exit_event();
  ck_assert_uint_eq(collector_count("group.unbalanced"), 2);
}
END_TEST

START_TEST(open_at_exit_points_at_group_start) {
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  group(A2A_EV_GROUP_START, 1);
  post_p2p(comm, 1, DEV_SEND, 16, 1, STREAM_A);
  exit_event();
  ck_assert_uint_eq(collector_count("group.unbalanced"), 1);
  const collected *c = collector_find("group.unbalanced");
  ck_assert_ptr_eq(c->site, (const void *)0x2000); /* the ncclGroupStart */
  ck_assert_int_eq(c->stack_n, 1);
  ck_assert_ptr_nonnull(strstr(c->details, "\"operations_in_group\":1"));
}
END_TEST

/* The operations an open group holds count those its full list of pending
 * operations turned into buffers (gl_thread.nflushed) and those still
 * pending (gl_nops), at exit as at a blocking call. */
START_TEST(open_at_exit_counts_flushed_and_pending_operations) {
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  group(A2A_EV_GROUP_START, 1);
  for (uintptr_t i = 0; i < 70; i++) /* 64 flushed when the list filled, 6 pending */
    post_p2p(comm, 1, DEV_SEND + i * 0x1000, 16, 1, STREAM_A);
  exit_event();
  ck_assert_uint_eq(collector_count("group.unbalanced"), 1);
  const collected *c = collector_find("group.unbalanced");
  ck_assert_ptr_nonnull(strstr(c->details, "\"operations_in_group\":70"));
  ck_assert_ptr_nonnull(strstr(c->message, "70 operation(s) never launched"));
}
END_TEST

START_TEST(open_at_blocking_call_without_ops) {
  group(A2A_EV_GROUP_START, 1);
  simple(A2A_EV_STREAM_SYNC, "cudaStreamSynchronize", STREAM_A, 0);
  ck_assert_uint_eq(collector_count("group.unbalanced"), 1);
  ck_assert_uint_eq(collector_count("group.sync-in-group"), 0);
  /* Reported once per open group, not again at exit. */
  simple(A2A_EV_DEVICE_SYNC, "cudaDeviceSynchronize", NULL, 0);
  exit_event();
  ck_assert_uint_eq(collector_count("group.unbalanced"), 1);
}
END_TEST

START_TEST(non_blocking_calls_in_group_are_silent) {
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  group(A2A_EV_GROUP_START, 1);
  post_p2p(comm, 1, DEV_SEND, 16, 1, STREAM_A);
  /* A failed query (not ready), a query of another stream, a D2D copy. */
  simple(A2A_EV_STREAM_QUERY, "cudaStreamQuery", STREAM_A, 600);
  simple(A2A_EV_STREAM_QUERY, "cudaStreamQuery", STREAM_B, 0);
  memcpy_sync(0x30000000u, 0x40000000u, 64, A2A_CPY_D2D);
  group(A2A_EV_GROUP_END, 1);
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
}
END_TEST

/* ---------------- group.sync-in-group ---------------- */

START_TEST(stream_sync_of_group_stream) {
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  group(A2A_EV_GROUP_START, 1);
  post_p2p(comm, 1, DEV_SEND, 16, 1, STREAM_A);
  post_p2p(comm, 0, DEV_RECV, 16, 1, STREAM_A);
  simple(A2A_EV_STREAM_SYNC, "cudaStreamSynchronize", STREAM_A, 0);
  ck_assert_uint_eq(collector_count("group.sync-in-group"), 1);
  ck_assert_uint_eq(collector_count("group.unbalanced"), 0);
  const collected *c = collector_find("group.sync-in-group");
  ck_assert_ptr_nonnull(strstr(c->message, "cudaStreamSynchronize"));
  ck_assert_ptr_nonnull(strstr(c->details, "\"operations_in_group\":2"));
  group(A2A_EV_GROUP_END, 1);
  ck_assert_uint_eq(collector_count_prefix("group."), 1);
}
END_TEST

START_TEST(stream_sync_of_other_stream_is_unbalanced) {
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  group(A2A_EV_GROUP_START, 1);
  post_p2p(comm, 1, DEV_SEND, 16, 1, STREAM_A);
  simple(A2A_EV_STREAM_SYNC, "cudaStreamSynchronize", STREAM_B, 0);
  ck_assert_uint_eq(collector_count("group.unbalanced"), 1);
  ck_assert_uint_eq(collector_count("group.sync-in-group"), 0);
}
END_TEST

START_TEST(legacy_stream_and_device_sync) {
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  group(A2A_EV_GROUP_START, 1);
  post_p2p(comm, 1, DEV_SEND, 16, 1, STREAM_A);
  simple(A2A_EV_STREAM_SYNC, "cudaStreamSynchronize", NULL, 0); /* legacy default */
  ck_assert_uint_eq(collector_count("group.sync-in-group"), 1);
  group(A2A_EV_GROUP_END, 1);

  /* Device synchronize of another device: blocking, not covering. */
  group(A2A_EV_GROUP_START, 1);
  post_p2p(comm, 1, DEV_SEND, 16, 1, STREAM_A);
  a2a_event ev = ev_make(A2A_EV_DEVICE_SYNC);
  ev.api = "cudaDeviceSynchronize";
  ev.device = 3;
  ev_dispatch(&ev, 0);
  ck_assert_uint_eq(collector_count("group.unbalanced"), 1);
  ev.device = 0;
  ev.callsite = (const void *)0x4444;
  ev_dispatch(&ev, 0);
  ck_assert_uint_eq(collector_count("group.sync-in-group"), 2);
  ck_assert_uint_eq(collector_count("group.unbalanced"), 1);
}
END_TEST

START_TEST(event_sync_recorded_after_group_op) {
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  group(A2A_EV_GROUP_START, 1);
  event_op(A2A_EV_EVENT_RECORD, "cudaEventRecord", EVENT_1, STREAM_A, 0); /* before any op */
  post_p2p(comm, 0, DEV_RECV, 16, 1, STREAM_A);
  event_op(A2A_EV_EVENT_SYNC, "cudaEventSynchronize", EVENT_1, NULL, 0);
  /* Recorded before the op: the sync does not claim to cover it; it still
   * blocks with the group open. */
  ck_assert_uint_eq(collector_count("group.sync-in-group"), 0);
  ck_assert_uint_eq(collector_count("group.unbalanced"), 1);
  event_op(A2A_EV_EVENT_RECORD, "cudaEventRecord", EVENT_1, STREAM_A, 0);
  event_op(A2A_EV_EVENT_QUERY, "cudaEventQuery", EVENT_1, NULL, 0);
  ck_assert_uint_eq(collector_count("group.sync-in-group"), 1);
}
END_TEST

START_TEST(memcpy_of_receive_buffer) {
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  group(A2A_EV_GROUP_START, 1);
  post_p2p(comm, 1, DEV_SEND, 16, 1, STREAM_A);
  post_p2p(comm, 0, DEV_RECV, 16, 1, STREAM_A);
  /* Reading the send buffer is harmless for the group but blocks. */
  memcpy_sync(0x7000, DEV_SEND + 8, 8, A2A_CPY_D2H);
  ck_assert_uint_eq(collector_count("group.sync-in-group"), 0);
  ck_assert_uint_eq(collector_count("group.unbalanced"), 1);
  /* Reading the middle of the receive buffer: stale. */
  memcpy_sync(0x7000, DEV_RECV + 60, 4, A2A_CPY_D2H);
  ck_assert_uint_eq(collector_count("group.sync-in-group"), 1);
  const collected *c = collector_find("group.sync-in-group");
  ck_assert_ptr_nonnull(strstr(c->message, "receive"));
  ck_assert_ptr_nonnull(strstr(c->details, "\"buffer_bytes\":64"));
  /* Just past the end: no overlap, blocking -> but unbalanced was already
   * reported for this group. */
  memcpy_sync(0x7000, DEV_RECV + 64, 4, A2A_CPY_D2H);
  ck_assert_uint_eq(collector_count("group.sync-in-group"), 1);
  ck_assert_uint_eq(collector_count_prefix("group."), 2);
}
END_TEST

/* The group's operations are kept as their arguments and turned into
 * buffers and streams when a synchronizing call needs them, or when the
 * list is full (group_local.h, gl_pend): every operation counts, in order. */
START_TEST(every_operation_of_a_long_group_counts) {
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  group(A2A_EV_GROUP_START, 1);
  for (uintptr_t i = 0; i < 150; i++)
    post_p2p(comm, 0, DEV_RECV + i * 0x1000, 16, 1, i < 149 ? STREAM_A : STREAM_B);
  memcpy_sync(0x7000, DEV_RECV + 8, 4, A2A_CPY_D2H); /* the first receive */
  ck_assert_uint_eq(collector_count("group.sync-in-group"), 1);
  memcpy_sync(0x7000, DEV_RECV + 149 * 0x1000 + 8, 4, A2A_CPY_D2H); /* the last */
  ck_assert_uint_eq(collector_count("group.sync-in-group"), 2);
  post_p2p(comm, 1, DEV_SEND, 16, 1, STREAM_B);
  memcpy_sync(DEV_SEND, 0x7000, 4, A2A_CPY_H2D); /* after a sync, still recorded */
  ck_assert_uint_eq(collector_count("group.sync-in-group"), 3);
  simple(A2A_EV_STREAM_SYNC, "cudaStreamSynchronize", STREAM_B, 0);
  ck_assert_uint_eq(collector_count("group.sync-in-group"), 4);
  ck_assert_ptr_nonnull(strstr(collector_find("group.sync-in-group")->details,
                               "\"operations_in_group\":150"));
  group(A2A_EV_GROUP_END, 1);
  ck_assert_uint_eq(collector_count("group.unbalanced"), 0);
}
END_TEST

START_TEST(zero_count_receive_has_no_buffer) {
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  group(A2A_EV_GROUP_START, 1);
  post_p2p(comm, 0, DEV_RECV, 0, 1, STREAM_A);
  memcpy_sync(DEV_RECV, 0x7000, 4, A2A_CPY_H2D);
  ck_assert_uint_eq(collector_count("group.sync-in-group"), 0);
  ck_assert_uint_eq(collector_count("group.unbalanced"), 1);
}
END_TEST

START_TEST(sync_after_group_end_is_fine) {
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  group(A2A_EV_GROUP_START, 1);
  post_p2p(comm, 0, DEV_RECV, 16, 1, STREAM_A);
  group(A2A_EV_GROUP_END, 1);
  simple(A2A_EV_STREAM_SYNC, "cudaStreamSynchronize", STREAM_A, 0);
  memcpy_sync(0x7000, DEV_RECV, 64, A2A_CPY_D2H);
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
}
END_TEST

START_TEST(sync_in_group_disabled_does_not_become_unbalanced) {
  collector_disable_check("group.sync-in-group");
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  group(A2A_EV_GROUP_START, 1);
  post_p2p(comm, 0, DEV_RECV, 16, 1, STREAM_A);
  simple(A2A_EV_STREAM_SYNC, "cudaStreamSynchronize", STREAM_A, 0);
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
}
END_TEST

/* ---------------- group.device-mismatch ---------------- */

START_TEST(device_mismatch_outside_group) {
  void *comm = init_comm((void *)0x100, id_a, 2, 1, 1);
  a2a_event ev = p2p(comm, 1, DEV_SEND, 16, 0, STREAM_A);
  ev.device = 1;
  ev_dispatch(&ev, 0);
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
  ev.device = 0;
  ev_dispatch(&ev, 0);
  ck_assert_uint_eq(collector_count("group.device-mismatch"), 1);
  const collected *c = collector_find("group.device-mismatch");
  ck_assert_ptr_nonnull(strstr(c->details, "\"current_device\":0"));
  ck_assert_ptr_nonnull(strstr(c->details, "\"comm_device\":1"));
  ev.device = -1; /* unknown current device: no judgement */
  ev.callsite = (const void *)0x5555;
  ev_dispatch(&ev, 0);
  ck_assert_uint_eq(collector_count_prefix("group."), 1);
}
END_TEST

START_TEST(device_mismatch_in_single_device_group) {
  void *comm = init_comm((void *)0x100, id_a, 2, 1, 1);
  group(A2A_EV_GROUP_START, 1);
  post_p2p(comm, 1, DEV_SEND, 16, 0, STREAM_A); /* ev.device 0, comm on 1 */
  ck_assert_uint_eq(collector_count_prefix("group."), 0);      /* decided at the end */
  group(A2A_EV_GROUP_END, 1);
  ck_assert_uint_eq(collector_count("group.device-mismatch"), 1);
}
END_TEST

/* The stream's form: a stream made while device 0 was current, used with
 * a communicator of device 1 from a thread whose current device is right.
 * Judged only when NCCL failed: a successful operation asks nothing. */
START_TEST(stream_of_other_device_named_when_nccl_fails) {
  void *comm = init_comm((void *)0x100, id_a, 2, 1, 1);
  collector_add_stream(STREAM_A, 0);
  a2a_event ev = p2p(comm, 1, DEV_SEND, 16, 0, STREAM_A);
  ev.device = 1;
  ev.api = "ncclAllReduce";
  ev_dispatch(&ev, 0);
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
  ck_assert_uint_eq(collector_stream_asks(), 0);
  ev_dispatch(&ev, 1); /* ncclUnhandledCudaError */
  ck_assert_uint_eq(collector_count("group.device-mismatch"), 1);
  const collected *c = collector_find("group.device-mismatch");
  ck_assert_ptr_eq(c->site, ev.callsite);
  ck_assert_ptr_nonnull(strstr(c->message, "ncclAllReduce"));
  ck_assert_ptr_nonnull(strstr(c->message, "stream of device 0"));
  ck_assert_ptr_nonnull(strstr(c->message, "ncclUnhandledCudaError"));
  ck_assert_ptr_nonnull(strstr(c->message, "cudaSetDevice(1)"));
  ck_assert_ptr_nonnull(strstr(c->details, "\"stream_device\":0"));
  ck_assert_ptr_nonnull(strstr(c->details, "\"comm_device\":1"));
}
END_TEST

/* A failure on a stream of the communicator's device, on a stream the
 * runtime cannot place, or on a default-stream handle (the current
 * device's: not asked) is not this check's. */
START_TEST(failure_on_own_or_unknown_stream_is_not_judged) {
  void *comm = init_comm((void *)0x100, id_a, 2, 1, 1);
  collector_add_stream(STREAM_A, 1);
  a2a_event ev = p2p(comm, 1, DEV_SEND, 16, 0, STREAM_A);
  ev.device = 1;
  ev_dispatch(&ev, 1);
  ck_assert_uint_eq(collector_stream_asks(), 1);
  ev.stream = STREAM_B; /* unknown to the runtime */
  ev_dispatch(&ev, 1);
  ck_assert_uint_eq(collector_stream_asks(), 2);
  ev.stream = NULL; /* the legacy default stream */
  ev_dispatch(&ev, 1);
  ev.per_thread = 1; /* the per-thread default stream */
  ev_dispatch(&ev, 1);
  ck_assert_uint_eq(collector_stream_asks(), 2);
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
}
END_TEST

/* In a group NCCL fails at ncclGroupEnd: each stream of the group is
 * judged with its first operation's communicator, site and api. */
START_TEST(stream_of_other_device_in_failed_group) {
  void *c1 = init_comm((void *)0x100, id_a, 2, 1, 1);
  void *c2 = init_comm((void *)0x200, id_b, 2, 1, 1);
  collector_add_stream(STREAM_A, 1);
  collector_add_stream(STREAM_B, 0);
  for (int result = 0; result <= 1; result++) {
    group(A2A_EV_GROUP_START, 1);
    post_on(c1, 1, DEV_SEND, STREAM_A, 1, 0x7101);
    post_on(c2, 0, DEV_RECV, STREAM_B, 1, 0x7102);
    post_on(c1, 0, DEV_RECV + 0x1000, STREAM_B, 1, 0x7103);
    ck_assert_uint_eq(collector_count_prefix("group."), 0);
    group_r(A2A_EV_GROUP_END, 1, result);
    ck_assert_uint_eq(collector_stream_asks(), result ? 2 : 0);
  }
  ck_assert_uint_eq(collector_count("group.device-mismatch"), 1);
  const collected *c = collector_find("group.device-mismatch");
  ck_assert_ptr_eq(c->site, (const void *)0x7102);
  ck_assert_ptr_nonnull(strstr(c->message, "ncclRecv"));
  ck_assert_ptr_nonnull(strstr(c->message, "at ncclGroupEnd"));
  ck_assert_ptr_nonnull(strstr(c->details, "\"stream_device\":0"));
}
END_TEST

/* A group's first mismatch, recorded by gm_op_pre's fast path (the
 * communicator already held, the device list in place): its site, api and
 * current device are the report's at the group's end, not a later
 * mismatch's. */
START_TEST(group_mismatch_recorded_on_the_fast_path) {
  void *comm = init_comm((void *)0x100, id_a, 2, 1, 1);
  group(A2A_EV_GROUP_START, 1);
  a2a_event a = p2p(comm, 1, DEV_SEND, 16, 0, STREAM_A);
  a.device = 1; /* its device: acquires comm, lists device 1 */
  a.callsite = (const void *)0x7001;
  ev_dispatch(&a, 0);
  a2a_event b = p2p(comm, 0, DEV_RECV, 16, 0, STREAM_A);
  b.device = 0; /* the first mismatch */
  b.callsite = (const void *)0x7002;
  ev_dispatch(&b, 0);
  a2a_event d = p2p(comm, 1, DEV_SEND + 0x1000, 16, 0, STREAM_A);
  d.device = 2; /* a later one */
  d.callsite = (const void *)0x7003;
  ev_dispatch(&d, 0);
  /* A later one on another communicator of the device: not held yet. */
  void *other = init_comm((void *)0x200, id_b, 2, 1, 1);
  a2a_event e = p2p(other, 1, DEV_SEND + 0x2000, 16, 0, STREAM_A);
  e.device = 3;
  e.callsite = (const void *)0x7004;
  ev_dispatch(&e, 0);
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
  group(A2A_EV_GROUP_END, 1);
  ck_assert_uint_eq(collector_count("group.device-mismatch"), 1);
  const collected *c = collector_find("group.device-mismatch");
  ck_assert_ptr_eq(c->site, (const void *)0x7002);
  ck_assert_ptr_nonnull(strstr(c->message, "ncclRecv"));
  ck_assert_ptr_nonnull(strstr(c->details, "\"current_device\":0"));
}
END_TEST

START_TEST(multi_device_group_from_one_thread_is_fine) {
  /* NCCL's single-thread multi-GPU pattern: no cudaSetDevice in the loop. */
  void *c0 = init_comm((void *)0x100, id_a, 2, 0, 0);
  void *c1 = init_comm((void *)0x200, id_a, 2, 1, 1);
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
  group(A2A_EV_GROUP_START, 1);
  post_p2p(c0, 1, DEV_SEND, 16, 1, STREAM_A);
  post_p2p(c1, 0, DEV_RECV, 16, 0, STREAM_B);
  group(A2A_EV_GROUP_END, 1);
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
}
END_TEST

/* A group that recorded a mismatch on several devices reports nothing and
 * leaves its mismatch recorded (gl_thread.mismatch): the next group starts
 * without it, so that group's operations, which mismatch on none, are not
 * judged by it. */
START_TEST(multi_device_mismatch_does_not_outlive_its_group) {
  void *c0 = init_comm((void *)0x100, id_a, 2, 0, 0);
  void *c1 = init_comm((void *)0x200, id_a, 2, 1, 1);
  group(A2A_EV_GROUP_START, 1);
  a2a_event a = p2p(c0, 1, DEV_SEND, 16, 1, STREAM_A);
  a.device = 1; /* a mismatch: c0 is on device 0 */
  ev_dispatch(&a, 0);
  a2a_event b = p2p(c1, 0, DEV_RECV, 16, 0, STREAM_B);
  b.device = 1;
  ev_dispatch(&b, 0);
  group(A2A_EV_GROUP_END, 1);
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
  /* One device, its own: nothing to report. */
  group(A2A_EV_GROUP_START, 1);
  ev_dispatch(&b, 0);
  ev_dispatch(&b, 0);
  group(A2A_EV_GROUP_END, 1);
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
}
END_TEST

/* ---------------- group.duplicate-device ---------------- */

START_TEST(duplicate_device_same_id) {
  init_comm((void *)0x100, id_a, 2, 0, 0);
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
  init_comm((void *)0x200, id_a, 2, 1, 0);
  ck_assert_uint_eq(collector_count("group.duplicate-device"), 1);
  const collected *c = collector_find("group.duplicate-device");
  ck_assert_ptr_nonnull(strstr(c->details, "\"device\":0"));
}
END_TEST

START_TEST(distinct_devices_or_ids_are_fine) {
  init_comm((void *)0x100, id_a, 2, 0, 0);
  init_comm((void *)0x200, id_a, 2, 1, 1);
  init_comm((void *)0x300, id_b, 2, 0, 0); /* another comm on device 0: normal */
  init_comm((void *)0x400, id_b, 2, 1, 1);
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
}
END_TEST

static void init_all(void *handle, int ndev, int index, int dev) {
  a2a_event ev = ev_make(A2A_EV_COMM_INIT);
  ev.api = "ncclCommInitAll";
  ev.u.init.how = A2A_INIT_ALL;
  ev.u.init.nranks = ndev;
  ev.u.init.rank = index;
  ev.u.init.device = dev;
  ev_pre(&ev);
  ev.u.init.newcomm = handle;
  ev_post(&ev, 0);
}

START_TEST(init_all_device_list_at_pre) {
  /* With the device list on the PRE event the repeat is found before NCCL
   * rejects the call (no POST per communicator follows). */
  static const int good[3] = {0, 1, 2}, bad[3] = {0, 1, 1};
  a2a_event ev = ev_make(A2A_EV_COMM_INIT);
  ev.api = "ncclCommInitAll";
  ev.u.init.how = A2A_INIT_ALL;
  ev.u.init.nranks = 3;
  ev.u.init.rank = -1;
  ev.u.init.device = -1;
  ev.u.init.devlist = good;
  ev_pre(&ev);
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
  ev.u.init.devlist = bad;
  ev_pre(&ev);
  ev_post(&ev, 5 /* ncclInvalidUsage */);
  ck_assert_uint_eq(collector_count("group.duplicate-device"), 1);
  ck_assert_ptr_nonnull(strstr(collector_find("group.duplicate-device")->details, "\"device\":1"));
}
END_TEST

START_TEST(init_all_repeated_device) {
  init_all((void *)0x100, 3, 0, 0);
  init_all((void *)0x200, 3, 1, 1);
  init_all((void *)0x300, 3, 2, 2);
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
  init_all((void *)0x400, 2, 0, 1);
  init_all((void *)0x500, 2, 1, 1);
  ck_assert_uint_eq(collector_count("group.duplicate-device"), 1);
}
END_TEST

/* ---------------- group.use-after-destroy ---------------- */

static void comm_end(void *comm, a2a_end_how how, int result) {
  a2a_event ev = ev_make(A2A_EV_COMM_END);
  ev.api = how == A2A_END_DESTROY ? "ncclCommDestroy" : how == A2A_END_ABORT ? "ncclCommAbort"
                                                                            : "ncclCommFinalize";
  ev.comm = comm;
  ev.u.end.how = how;
  ev_dispatch(&ev, result);
}

START_TEST(op_after_destroy) {
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  post_p2p(comm, 1, DEV_SEND, 16, 1, STREAM_A);
  comm_end(comm, A2A_END_DESTROY, 0);
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
  post_p2p(comm, 1, DEV_SEND, 16, 1, STREAM_A);
  ck_assert_uint_eq(collector_count("group.use-after-destroy"), 1);
  ck_assert_ptr_nonnull(strstr(collector_find("group.use-after-destroy")->details,
                               "\"state\":\"destroyed\""));
  comm_end(comm, A2A_END_DESTROY, 0); /* double destroy */
  ck_assert_uint_eq(collector_count("group.use-after-destroy"), 2);
}
END_TEST

START_TEST(finalize_then_destroy_is_fine) {
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  comm_end(comm, A2A_END_FINALIZE, 0);
  a2a_event q = ev_make(A2A_EV_COMM_ASYNC_ERROR);
  q.comm = comm;
  ev_dispatch(&q, 0);
  comm_end(comm, A2A_END_DESTROY, 0);
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
}
END_TEST

START_TEST(op_after_finalize) {
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  comm_end(comm, A2A_END_FINALIZE, 0);
  post_p2p(comm, 0, DEV_RECV, 16, 1, STREAM_A);
  ck_assert_uint_eq(collector_count("group.use-after-destroy"), 1);
}
END_TEST

START_TEST(unknown_handle) {
  /* Registry empty: nothing can be said (comms made outside our view). */
  post_p2p((void *)0xbad, 1, DEV_SEND, 16, 1, STREAM_A);
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
  init_comm((void *)0x100, id_a, 2, 0, 0);
  post_p2p((void *)0xbad, 1, DEV_SEND, 16, 1, STREAM_A);
  ck_assert_uint_eq(collector_count("group.use-after-destroy"), 1);
  /* A NULL handle is left to NCCL (ncclInvalidArgument). */
  post_p2p(NULL, 1, DEV_SEND, 16, 1, STREAM_A);
  ck_assert_uint_eq(collector_count_prefix("group."), 1);
}
END_TEST

/* A query's or async-error poll's event on comm from site. */
static a2a_event comm_call(a2a_kind kind, const char *api, void *comm, uintptr_t site) {
  a2a_event ev = ev_make(kind);
  ev.api = api;
  ev.comm = comm;
  ev.callsite = (const void *)site;
  return ev;
}

/* Communicator queries and ncclCommGetAsyncError (group_local's per-kind
 * handlers for them), per loop index: allowed before the end and after
 * ncclCommFinalize (0) or ncclCommRevoke (1), a use after destroy once
 * the communicator is freed by ncclCommDestroy (0) or ncclCommAbort (1). */
START_TEST(queries_after_end) {
  static const a2a_end_how allowed[2] = {A2A_END_FINALIZE, A2A_END_REVOKE};
  static const a2a_end_how freed[2] = {A2A_END_DESTROY, A2A_END_ABORT};
  static const char *const state[2] = {"\"state\":\"destroyed\"", "\"state\":\"aborted\""};
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  a2a_event q = comm_call(A2A_EV_COMM_QUERY, _i ? "ncclCommUserRank" : "ncclCommCount", comm,
                          0x7001);
  a2a_event e = comm_call(A2A_EV_COMM_ASYNC_ERROR, "ncclCommGetAsyncError", comm, 0x7002);
  ev_dispatch(&q, 0);
  ev_dispatch(&e, 0);
  comm_end(comm, allowed[_i], 0);
  ev_dispatch(&q, 0);
  ev_dispatch(&e, 0);
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
  comm_end(comm, freed[_i], 0);
  ev_dispatch(&q, 0);
  ck_assert_uint_eq(collector_count("group.use-after-destroy"), 1);
  ck_assert_ptr_eq(collector_find("group.use-after-destroy")->site, (const void *)0x7001);
  ck_assert_ptr_nonnull(strstr(collector_find("group.use-after-destroy")->details, state[_i]));
  ev_dispatch(&e, 0);
  ck_assert_uint_eq(collector_count("group.use-after-destroy"), 2);
  /* A handle no init returned. */
  q.comm = (void *)0xbad;
  q.callsite = (const void *)0x7003;
  ev_dispatch(&q, 0);
  ck_assert_uint_eq(collector_count("group.use-after-destroy"), 3);
  ck_assert_uint_eq(collector_count_prefix("group."), 3);
}
END_TEST

/* A communicator query as the shim's query wrappers make it
 * (shim/wrap_nccl.c, A2A_COMM_QUERY_WRAP): without an event when
 * a2a_comm_quiet says its handlers would do nothing, else dispatched
 * through its kind's hot rows. Returns whether it was quiet. */
static bool shim_query(a2a_event *q) {
  if (a2a_comm_quiet(A2A_EV_COMM_QUERY, q->comm)) return true;
  q->phase = A2A_PRE;
  a2a_dispatch_hot(q, A2A_EV_COMM_QUERY, A2A_PRE);
  q->phase = A2A_POST;
  a2a_dispatch_hot(q, A2A_EV_COMM_QUERY, A2A_POST);
  return false;
}

/* The query wrappers' fast path (a2a_comm_quiet, group_local's comm_quiet)
 * against the reference, per loop index the end of the communicator:
 * ncclCommDestroy, ncclCommAbort (a use after destroy: the same finding,
 * site and count as the dispatched query gives, also right after the
 * same handle was answered quiet), ncclCommFinalize, ncclCommRevoke (no
 * finding, as dispatched). Two communicators, so that the memo answers
 * one of them from a way; a handle never created is never quiet. */
START_TEST(quiet_queries_report_as_dispatched) {
  static const a2a_end_how how[4] = {A2A_END_DESTROY, A2A_END_ABORT, A2A_END_FINALIZE,
                                     A2A_END_REVOKE};
  const bool freed = _i < 2;
  collector_dedup(true);
  ck_assert(a2a_comm_quiet_kinds & A2A_KIND_BIT(A2A_EV_COMM_QUERY));
  /* ncclCommGetAsyncError's POST records the error it returned. */
  ck_assert(!(a2a_comm_quiet_kinds & A2A_KIND_BIT(A2A_EV_COMM_ASYNC_ERROR)));
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  void *other = init_comm((void *)0x200, id_b, 2, 0, 0);
  a2a_event q = comm_call(A2A_EV_COMM_QUERY, "ncclCommCount", comm, 0x7101);
  a2a_event o = comm_call(A2A_EV_COMM_QUERY, "ncclCommCount", other, 0x7102);
  shim_query(&q);
  shim_query(&o);
  ck_assert(shim_query(&q)); /* from a way of the memo */
  ck_assert(shim_query(&q)); /* the last answer */
  ck_assert(shim_query(&o));
  comm_end(comm, how[_i], 0);
  ck_assert(!shim_query(&q)); /* the state is read at every query */
  ck_assert(!shim_query(&q));
  ck_assert(shim_query(&o)); /* the other is still active */
  ck_assert(!shim_query(&q));
  if (freed) {
    ck_assert_uint_eq(collector_count("group.use-after-destroy"), 1);
    ck_assert_uint_eq(collector_occurrences("group.use-after-destroy"), 3);
    const collected *c = collector_find("group.use-after-destroy");
    ck_assert_ptr_eq(c->site, (const void *)0x7101);
    ck_assert_ptr_nonnull(strstr(c->message, "ncclCommCount"));
    ck_assert_ptr_nonnull(strstr(c->details, _i ? "\"state\":\"aborted\"" : "\"state\":\"destroyed\""));
  }
  /* A handle no init returned: dispatched, and reported. */
  a2a_event bad = comm_call(A2A_EV_COMM_QUERY, "ncclCommUserRank", (void *)0xbad, 0x7103);
  ck_assert(!shim_query(&bad));
  ck_assert(!shim_query(&bad));
  ck_assert_uint_eq(collector_count("group.use-after-destroy"), freed ? 2 : 1);
  ck_assert_uint_eq(collector_occurrences("group.use-after-destroy"), freed ? 5 : 2);
  ck_assert_uint_eq(collector_count_prefix("group."), freed ? 2 : 1);
}
END_TEST

/* With group.use-after-destroy off the queries' rows are still quiet
 * (gm_query_pre returns at its check's test): a query after the destroy
 * is dispatched and reports nothing, as without the fast path. */
START_TEST(quiet_queries_with_the_check_off) {
  collector_disable_check("group.use-after-destroy");
  collector_reinit();
  ck_assert(a2a_comm_quiet_kinds & A2A_KIND_BIT(A2A_EV_COMM_QUERY));
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  a2a_event q = comm_call(A2A_EV_COMM_QUERY, "ncclCommCount", comm, 0x7101);
  shim_query(&q);
  ck_assert(shim_query(&q));
  comm_end(comm, A2A_END_DESTROY, 0);
  ck_assert(!shim_query(&q));
  ck_assert_uint_eq(collector_total(), 0);
}
END_TEST

/* Rows that read a gate are never quiet: perf_env's report pending at
 * init (its gate, open at init only, left in the NCCL kinds' rows) - the
 * first query reports it, so it must be dispatched. */
START_TEST(queries_not_quiet_with_perf_env_pending) {
  setenv("NCCL_ALGO", "Tree", 1);
  collector_reinit();
  unsetenv("NCCL_ALGO");
  ck_assert(!(a2a_comm_quiet_kinds & A2A_KIND_BIT(A2A_EV_COMM_QUERY)));
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  a2a_event q = comm_call(A2A_EV_COMM_QUERY, "ncclCommCount", comm, 0x7101);
  ck_assert(!shim_query(&q));
  ck_assert(!shim_query(&q));
  ck_assert_uint_eq(collector_count("perf.env"), 1);
  collector_reinit();
  ck_assert(a2a_comm_quiet_kinds & A2A_KIND_BIT(A2A_EV_COMM_QUERY));
}
END_TEST

START_TEST(split_of_aborted_parent) {
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  comm_end(comm, A2A_END_ABORT, 0);
  a2a_event ev = ev_make(A2A_EV_COMM_INIT);
  ev.api = "ncclCommSplit";
  ev.u.init.how = A2A_INIT_SPLIT;
  ev.u.init.parent = comm;
  ev_pre(&ev);
  ck_assert_uint_eq(collector_count("group.use-after-destroy"), 1);
}
END_TEST

START_TEST(reused_handle_is_the_new_comm) {
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  comm_end(comm, A2A_END_DESTROY, 0);
  init_comm((void *)0x100, id_b, 2, 0, 0); /* NCCL reuses the address */
  post_p2p(comm, 1, DEV_SEND, 16, 1, STREAM_A);
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
}
END_TEST

/* ---------------- group.concurrent-use ---------------- */

START_TEST(two_threads_inside_one_comm) {
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  a2a_event a = p2p(comm, 1, DEV_SEND, 16, 1, STREAM_A);
  a2a_event b = p2p(comm, 0, DEV_RECV, 16, 1, STREAM_B);
  b.thread = 2;
  ev_pre(&a);
  ev_pre(&b);
  ev_post(&b, 0);
  ev_post(&a, 0);
  ck_assert_uint_eq(collector_count("group.concurrent-use"), 1);
  ck_assert_ptr_nonnull(strstr(collector_find("group.concurrent-use")->details,
                               "\"other_thread\":1"));
  /* Sequential use from two threads is fine. */
  b.callsite = (const void *)0x6666;
  ev_dispatch(&a, 0);
  ev_dispatch(&b, 0);
  ck_assert_uint_eq(collector_count_prefix("group."), 1);
}
END_TEST

/* The POST of an operation reuses the communicator record its PRE looked
 * up (group_local's op_handle/op_comm): interleaved operations of two
 * threads on two communicators each release what their own PRE acquired. */
START_TEST(post_releases_what_its_pre_acquired) {
  void *c0 = init_comm((void *)0x100, id_a, 2, 0, 0);
  void *c1 = init_comm((void *)0x200, id_b, 2, 0, 0);
  a2a_event a = p2p(c0, 1, DEV_SEND, 16, 1, STREAM_A);
  a2a_event b = p2p(c1, 0, DEV_RECV, 16, 1, STREAM_B);
  b.thread = 2;
  ev_pre(&a);
  ev_pre(&b);
  ev_post(&b, 0);
  a2a_event b2 = p2p(c1, 1, DEV_SEND, 16, 1, STREAM_B); /* thread 2 again, c1 */
  b2.thread = 2;
  ev_dispatch(&b2, 0);
  ev_post(&a, 0);
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
  /* Both communicators are free: each thread may use the other's. */
  a2a_event x = p2p(c1, 1, DEV_SEND, 16, 1, STREAM_A);
  a2a_event y = p2p(c0, 0, DEV_RECV, 16, 1, STREAM_B);
  y.thread = 2;
  ev_dispatch(&x, 0);
  ev_dispatch(&y, 0);
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
  /* And holding one while the other thread enters it is still caught. */
  ev_pre(&x);
  ev_dispatch(&b2, 0);
  ck_assert_uint_eq(collector_count("group.concurrent-use"), 1);
  ev_post(&x, 0);
}
END_TEST

START_TEST(open_group_holds_the_comm) {
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  group(A2A_EV_GROUP_START, 1);
  post_p2p(comm, 1, DEV_SEND, 16, 1, STREAM_A);
  a2a_event b = p2p(comm, 0, DEV_RECV, 16, 1, STREAM_B);
  b.thread = 2;
  ev_dispatch(&b, 0);
  ck_assert_uint_eq(collector_count("group.concurrent-use"), 1);
  group(A2A_EV_GROUP_END, 1);
  b.callsite = (const void *)0x6666;
  ev_dispatch(&b, 0);
  ck_assert_uint_eq(collector_count("group.concurrent-use"), 1);
}
END_TEST

/* An operation of the open group on a communicator the group holds
 * releases nothing at its POST (gl_op_post's memo of its PRE, held_handle);
 * when the group closed between the PRE and the POST (the outermost
 * ncclGroupEnd's PRE: depth 0), the POST releases it, as without the
 * memo: another thread may then use it. */
START_TEST(post_after_the_group_closed_releases) {
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  group(A2A_EV_GROUP_START, 1);
  post_p2p(comm, 1, DEV_SEND, 16, 1, STREAM_A); /* the group acquires comm */
  post_p2p(comm, 0, DEV_RECV, 16, 1, STREAM_A); /* held: nothing released */
  a2a_event b = p2p(comm, 1, DEV_SEND, 16, 0, STREAM_B);
  b.thread = 2;
  ev_dispatch(&b, 0);
  ck_assert_uint_eq(collector_count("group.concurrent-use"), 1);
  /* (Thread 1 again, so that its record is the cached one: the fast
   * paths, and the memo, are taken from here.) */
  post_p2p(comm, 1, DEV_SEND + 64, 16, 1, STREAM_A);
  a2a_event a = p2p(comm, 0, DEV_RECV + 64, 16, 1, STREAM_A);
  ev_pre(&a); /* held at its PRE */
  a2a_event end = ev_make(A2A_EV_GROUP_END);
  end.api = "ncclGroupEnd";
  end.thread = 1;
  ev_pre(&end); /* depth 0 */
  ev_post(&a, 0); /* releases comm */
  b.callsite = (const void *)0x6666;
  ev_dispatch(&b, 0);
  ck_assert_uint_eq(collector_count("group.concurrent-use"), 1);
  ev_post(&end, 0);
  ck_assert_uint_eq(collector_count("group.concurrent-use"), 1);
}
END_TEST

START_TEST(different_comms_in_parallel_are_fine) {
  void *c0 = init_comm((void *)0x100, id_a, 2, 0, 0);
  void *c1 = init_comm((void *)0x200, id_b, 2, 0, 0);
  a2a_event a = p2p(c0, 1, DEV_SEND, 16, 1, STREAM_A);
  a2a_event b = p2p(c1, 1, DEV_SEND, 16, 1, STREAM_B);
  b.thread = 2;
  ev_pre(&a);
  ev_pre(&b);
  /* A watchdog polling the async error meanwhile is allowed. */
  a2a_event q = ev_make(A2A_EV_COMM_ASYNC_ERROR);
  q.comm = c0;
  q.thread = 3;
  ev_dispatch(&q, 0);
  ev_post(&b, 0);
  ev_post(&a, 0);
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
}
END_TEST

/* ---------------- group.async-error ---------------- */

static void async_query(void *comm, int async_error) {
  a2a_event q = ev_make(A2A_EV_COMM_ASYNC_ERROR);
  q.api = "ncclCommGetAsyncError";
  q.comm = comm;
  q.callsite = (const void *)0x7777;
  ev_pre(&q);
  q.u.async_err.async_error = async_error;
  ev_post(&q, 0);
}

START_TEST(op_after_async_error) {
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  async_query(comm, 0);
  async_query(comm, 7); /* ncclInProgress: not an error */
  post_p2p(comm, 1, DEV_SEND, 16, 1, STREAM_A);
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
  async_query(comm, 6); /* ncclRemoteError */
  post_p2p(comm, 1, DEV_SEND, 16, 1, STREAM_A);
  ck_assert_uint_eq(collector_count("group.async-error"), 1);
  const collected *c = collector_find("group.async-error");
  ck_assert_ptr_nonnull(strstr(c->message, "ncclRemoteError"));
  ck_assert_ptr_nonnull(strstr(c->details, "\"async_error\":6"));
  /* Aborting is the right reaction, and is not an "operation". */
  comm_end(comm, A2A_END_ABORT, 0);
  ck_assert_uint_eq(collector_count_prefix("group."), 1);
}
END_TEST

/* A poll that finds no error clears what an earlier one recorded (the
 * recorder writes the table only when it holds something to clear). */
START_TEST(async_error_cleared_by_a_clean_poll) {
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  async_query(comm, 6);
  async_query(comm, 0);
  post_p2p(comm, 1, DEV_SEND, 16, 1, STREAM_A);
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
  async_query(comm, 0); /* nothing recorded, nothing to clear */
  async_query(comm, 5);
  post_p2p(comm, 1, DEV_SEND, 16, 1, STREAM_A);
  ck_assert_uint_eq(collector_count("group.async-error"), 1);
  ck_assert_ptr_nonnull(strstr(collector_find("group.async-error")->details, "\"async_error\":5"));
}
END_TEST

/* ---------------- an open group's later operations (the memo of held) ----------------
 * Inside a group, an operation on a communicator the thread already holds
 * takes group_local's short path (gm_op_pre_known, gl_op_post): each test
 * below fails if that path skips something the full path does. */

/* An operation of thread 1's open group, with its own call site. */
static void group_op(void *comm, int is_send, int device, uintptr_t site) {
  a2a_event ev = p2p(comm, is_send, is_send ? DEV_SEND : DEV_RECV, 16, 1, STREAM_A);
  ev.device = device;
  ev.callsite = (const void *)site;
  ev_dispatch(&ev, 0);
}

/* A communicator on device dev that thread 1's open group holds: two
 * operations posted (the second already on the short path). */
static void *held_comm(int dev) {
  void *comm = init_comm((void *)0x100, id_a, 2, dev, dev);
  group(A2A_EV_GROUP_START, 1);
  group_op(comm, 1, dev, 0x8001);
  group_op(comm, 0, dev, 0x8002);
  return comm;
}

START_TEST(held_comm_async_error_and_finalize_are_still_judged) {
  void *comm = held_comm(0);
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
  /* The async error polled meanwhile is an error: the next operation of
   * the group is on a communicator that can only fail. */
  async_query(comm, 6);
  group_op(comm, 1, 0, 0x8003);
  ck_assert_uint_eq(collector_count("group.async-error"), 1);
  async_query(comm, 0); /* no error on it any more */
  group_op(comm, 0, 0, 0x8004);
  ck_assert_uint_eq(collector_count_prefix("group."), 1);
  /* Finalized meanwhile: the group's next operation is new work on it. */
  comm_end(comm, A2A_END_FINALIZE, 0);
  group_op(comm, 1, 0, 0x8005);
  ck_assert_uint_eq(collector_count("group.use-after-destroy"), 1);
  group(A2A_EV_GROUP_END, 1);
}
END_TEST

START_TEST(held_comm_first_mismatch_is_still_recorded) {
  /* The first operation holds the communicator on the right device; a
   * later one, on the same communicator, from another current device, is
   * the group's first mismatch (one device in the group: reported). */
  void *comm = held_comm(1);
  group_op(comm, 1, 0, 0x8003);
  group_op(comm, 0, 0, 0x8004); /* after the first mismatch: short path */
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
  group(A2A_EV_GROUP_END, 1);
  ck_assert_uint_eq(collector_count("group.device-mismatch"), 1);
  ck_assert_ptr_eq(collector_find("group.device-mismatch")->site, (const void *)0x8003);
}
END_TEST

/* One group of thread 1 on c0 (device 0) and c1 (device 1): operation i
 * on comm ops[i][0] from current device ops[i][1]. Returns the group
 * findings after the group's end. */
static unsigned two_device_group(const int (*ops)[2], int n) {
  void *c[2] = {init_comm((void *)0x100, id_a, 2, 0, 0), init_comm((void *)0x200, id_a, 2, 1, 1)};
  group(A2A_EV_GROUP_START, 1);
  for (int i = 0; i < n; i++) group_op(c[ops[i][0]], i & 1, ops[i][1], 0x8001 + i);
  group(A2A_EV_GROUP_END, 1);
  return collector_count_prefix("group.");
}

START_TEST(held_comm_unknown_device_is_listed_later) {
  /* c1 is first held while the current device is unknown, so its device
   * is not in the group's device list yet; c0 then records the group's
   * mismatch (current device 1). The next operation on c1 must still list
   * device 1: two devices, NCCL's multi-GPU pattern, no finding. */
  static const int ops[][2] = {{1, -1}, {0, 1}, {1, 1}};
  ck_assert_uint_eq(two_device_group(ops, 3), 0);
}
END_TEST

START_TEST(multi_device_group_ops_after_the_mismatch) {
  /* One thread drives two devices, current device 0 throughout: every
   * operation on c1 mismatches, those after the first take the short
   * path; the group spans two devices, so nothing is reported, and the
   * next group on c1 alone does report its mismatch. */
  void *c0 = init_comm((void *)0x100, id_a, 2, 0, 0);
  void *c1 = init_comm((void *)0x200, id_a, 2, 1, 1);
  for (int step = 0; step < 3; step++) {
    group(A2A_EV_GROUP_START, 1);
    for (int i = 0; i < 4; i++) {
      group_op(c0, i & 1, 0, 0x8000 + i);
      group_op(c1, i & 1, 0, 0x8100 + i);
    }
    group(A2A_EV_GROUP_END, 1);
  }
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
  group(A2A_EV_GROUP_START, 1);
  group_op(c1, 1, 0, 0x8200);
  group_op(c1, 0, 0, 0x8201);
  group(A2A_EV_GROUP_END, 1);
  ck_assert_uint_eq(collector_count("group.device-mismatch"), 1);
}
END_TEST

/* The group's devices as a set (gl_thread.comm_dev0 and ncomm_devs): one
 * group of thread 1 with one operation on each of n communicators, the
 * i-th on device devs[i], all from current device cur. Returns the
 * group.device-mismatch findings after its end: one only when the group
 * holds a single device. */
static unsigned one_group_on_devices(const int *devs, int n, int cur) {
  static unsigned char ids[8][128];
  void *c[8];
  for (int i = 0; i < n; i++) {
    ids[i][0] = (unsigned char)(0x40 + i); /* one id each: no duplicate-device */
    c[i] = init_comm((void *)(uintptr_t)(0x1000 * (i + 1)), ids[i], 2, 0, devs[i]);
  }
  group(A2A_EV_GROUP_START, 1);
  for (int i = 0; i < n; i++) group_op(c[i], 1, cur, 0x8400 + (uintptr_t)i);
  group(A2A_EV_GROUP_END, 1);
  return collector_count("group.device-mismatch");
}

START_TEST(group_device_list_is_a_set) {
  /* Three communicators on device 2, current device 0: one device listed
   * (a device listed twice would count as two), so the mismatch is
   * reported. */
  static const int same[] = {2, 2, 2};
  ck_assert_uint_eq(one_group_on_devices(same, 3, 0), 1);
}
END_TEST

START_TEST(group_devices_count_a_second_device_for_good) {
  /* The group's devices are its first device and a count up to 2
   * (record_device): a second device counts for the rest of the group,
   * whatever comes after it - the first device again, or more of either.
   * Only the group on device 2 alone reports its mismatch. */
  static const int back[] = {2, 3, 2}, late[] = {2, 2, 3}, many[] = {2, 3, 3, 2, 2};
  ck_assert_uint_eq(one_group_on_devices(back, 3, 0), 0);
  ck_assert_uint_eq(one_group_on_devices(late, 3, 0), 0);
  ck_assert_uint_eq(one_group_on_devices(many, 5, 0), 0);
  static const int one[] = {2, 2};
  ck_assert_uint_eq(one_group_on_devices(one, 2, 0), 1);
}
END_TEST

/* nccl-tests -g 4: one thread posts one operation (or a send and a
 * receive) per communicator in turn, so each operation's communicator is
 * the registry memo's answer from one of its ways, not its last one
 * (group_local's fast path, a2a_comm_lookup_memo). The answers must be
 * each operation's own communicator: a destroyed one among them is
 * reported, at its operation only; one that another thread holds is a
 * concurrent use; the others, on their own devices, are silent. */
START_TEST(alternating_comms_are_each_judged) {
  enum { NC = 4 };
  void *c[NC];
  for (int i = 0; i < NC; i++)
    c[i] = init_comm((void *)(uintptr_t)(0x100 * (i + 1)), id_a, NC, i, i);
  for (int step = 0; step < 3; step++) {
    group(A2A_EV_GROUP_START, 1);
    for (int i = 0; i < NC; i++) {
      group_op(c[i], 1, 0, 0x9000 + i);
      group_op(c[i], 0, 0, 0x9100 + i);
    }
    group(A2A_EV_GROUP_END, 1);
  }
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
  comm_end(c[2], A2A_END_DESTROY, 0);
  group(A2A_EV_GROUP_START, 1);
  for (int i = 0; i < NC; i++) group_op(c[i], 1, 0, 0x9200 + i);
  group(A2A_EV_GROUP_END, 1);
  ck_assert_uint_eq(collector_count("group.use-after-destroy"), 1);
  ck_assert_ptr_eq(collector_find("group.use-after-destroy")->site, (const void *)0x9202);
  ck_assert_uint_eq(collector_count_prefix("group."), 1);
  /* Thread 2 holds c[1] in its open group; thread 1's next group uses it. */
  group(A2A_EV_GROUP_START, 2);
  a2a_event o = p2p(c[1], 1, DEV_SEND, 16, 1, STREAM_B);
  o.thread = 2;
  o.device = 1;
  ev_dispatch(&o, 0);
  group(A2A_EV_GROUP_START, 1);
  for (int i = 0; i < NC; i++)
    if (i != 2) group_op(c[i], 0, 0, 0x9300 + i);
  group(A2A_EV_GROUP_END, 1);
  ck_assert_uint_eq(collector_count("group.concurrent-use"), 1);
  ck_assert_ptr_eq(collector_find("group.concurrent-use")->site, (const void *)0x9301);
  group(A2A_EV_GROUP_END, 2);
  ck_assert_uint_eq(collector_count_prefix("group."), 2);
}
END_TEST

START_TEST(unknown_current_device_is_not_a_mismatch) {
  /* The group's first operation on c1 is posted while the current device
   * is unknown (-1): device-mismatch has nothing to compare, nothing is
   * listed or recorded; the next ones, from c1's own device, list it. One
   * device, no mismatch: silent. The same with c0's operations first. */
  static const int ops[][2] = {{1, -1}, {1, 1}, {1, 1}};
  ck_assert_uint_eq(two_device_group(ops, 3), 0);
  static const int ops2[][2] = {{0, -1}, {0, 0}, {0, -1}, {0, 0}};
  ck_assert_uint_eq(two_device_group(ops2, 4), 0);
  /* From another device after the unknown one: reported at the end. */
  static const int ops3[][2] = {{1, -1}, {1, 0}};
  ck_assert_uint_eq(two_device_group(ops3, 2), 1);
  ck_assert_ptr_eq(collector_find("group.device-mismatch")->site, (const void *)0x8002);
}
END_TEST

START_TEST(later_mismatches_still_list_their_device) {
  /* The group's first mismatch (c1 from device 0) is recorded; the next
   * operation mismatches too (c0 from device 2) and must still put device
   * 0 in the group's list: two devices, no finding. */
  static const int ops[][2] = {{1, 0}, {0, 2}};
  ck_assert_uint_eq(two_device_group(ops, 2), 0);
}
END_TEST

START_TEST(held_memo_ends_with_the_group) {
  /* Thread 1's group held comm and ended; thread 2 then holds it in its
   * own open group. Thread 1's next group on it is a concurrent use, at
   * its first and at its later operations' PREs. */
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  group(A2A_EV_GROUP_START, 1);
  group_op(comm, 1, 0, 0x8001);
  group_op(comm, 0, 0, 0x8002);
  group(A2A_EV_GROUP_END, 1);
  group(A2A_EV_GROUP_START, 2);
  a2a_event b = p2p(comm, 1, DEV_SEND, 16, 1, STREAM_B);
  b.thread = 2;
  ev_dispatch(&b, 0);
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
  group(A2A_EV_GROUP_START, 1);
  group_op(comm, 1, 0, 0x8003);
  ck_assert_uint_eq(collector_count("group.concurrent-use"), 1);
  group_op(comm, 0, 0, 0x8004);
  ck_assert_uint_eq(collector_count("group.concurrent-use"), 2);
  group(A2A_EV_GROUP_END, 1);
  group(A2A_EV_GROUP_END, 2);
  /* Both released: thread 1 again, alone, is fine; and an operation
   * outside any group releases the communicator at its POST. */
  group(A2A_EV_GROUP_START, 1);
  group_op(comm, 1, 0, 0x8005);
  group_op(comm, 0, 0, 0x8006);
  group(A2A_EV_GROUP_END, 1);
  group_op(comm, 1, 0, 0x8007);
  ev_dispatch(&b, 0);
  ck_assert_uint_eq(collector_count("group.concurrent-use"), 2);
}
END_TEST

START_TEST(comm_past_the_held_capacity_is_released_at_its_post) {
  /* A group on more communicators than it can hold (GL_MAX_HELD, 64):
   * the 65th is acquired at its operation's PRE and released at its POST
   * (not tracked, never a wrong finding), so another thread may use it
   * while the group is still open; the held ones stay held. */
  void *comms[65];
  for (int i = 0; i < 65; i++)
    comms[i] = init_comm((void *)(uintptr_t)(0x1000 + 0x100 * i), id_a, 2, 0, 0);
  group(A2A_EV_GROUP_START, 1);
  for (int i = 0; i < 65; i++) group_op(comms[i], 1, 0, 0x9000 + i);
  group_op(comms[64], 0, 0, 0x9100);
  a2a_event b = p2p(comms[64], 1, DEV_SEND, 16, 1, STREAM_B);
  b.thread = 2;
  ev_dispatch(&b, 0);
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
  b = p2p(comms[63], 1, DEV_SEND, 16, 1, STREAM_B);
  b.thread = 2;
  ev_dispatch(&b, 0);
  ck_assert_uint_eq(collector_count("group.concurrent-use"), 1);
  group(A2A_EV_GROUP_END, 1);
}
END_TEST

/* ---------------- real threads ---------------- */

typedef struct worker_arg {
  void *comm;
  uint32_t thread;
  void *stream;
} worker_arg;

static void *worker(void *p) {
  worker_arg *w = p;
  for (int i = 0; i < 2000; i++) {
    a2a_event g = ev_make(A2A_EV_GROUP_START);
    g.thread = w->thread;
    ev_dispatch(&g, 0);
    a2a_event s = p2p(w->comm, 1, DEV_SEND + w->thread * 0x100000u, 16, 1, w->stream);
    s.thread = w->thread;
    ev_dispatch(&s, 0);
    a2a_event r = p2p(w->comm, 0, DEV_RECV + w->thread * 0x100000u, 16, 1, w->stream);
    r.thread = w->thread;
    ev_dispatch(&r, 0);
    g = ev_make(A2A_EV_GROUP_END);
    g.thread = w->thread;
    ev_dispatch(&g, 0);
    a2a_event y = ev_make(A2A_EV_STREAM_SYNC);
    y.thread = w->thread;
    y.stream = w->stream;
    ev_dispatch(&y, 0);
  }
  return NULL;
}

START_TEST(threads_with_their_own_comms_are_silent) {
  /* Four threads, each with its own communicator, groups and stream, run
   * concurrently: per-thread group state and per-comm ownership must not
   * leak between them. */
  unsigned char ids[4][128];
  pthread_t th[4];
  worker_arg args[4];
  for (int i = 0; i < 4; i++) {
    memset(ids[i], 0, 128);
    ids[i][0] = (unsigned char)(10 + i);
    args[i].comm = init_comm((void *)(uintptr_t)(0x1000 + 0x100 * i), ids[i], 2, 0, 0);
    args[i].thread = (uint32_t)(2 + i);
    args[i].stream = (void *)(uintptr_t)(0x9000 + 0x100 * i);
  }
  for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, worker, &args[i]);
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  exit_event();
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
}
END_TEST

START_TEST(fork_child_forgets_other_threads_groups) {
  /* Thread 2 has a group open when thread 1 forks: in the child only
   * thread 1 exists, so nothing is open at the child's exit. */
  group(A2A_EV_GROUP_START, 2);
  a2a_event f = ev_make(A2A_EV_FORK_CHILD);
  f.thread = 1;
  ev_pre(&f);
  exit_event();
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
  /* Thread 1's own open group survives the fork (NCCL's depth is
   * thread_local and the forking thread keeps it). */
  group(A2A_EV_GROUP_START, 1);
  ev_pre(&f);
  exit_event();
  ck_assert_uint_eq(collector_count("group.unbalanced"), 1);
}
END_TEST

START_TEST(invalid_init_arguments_are_not_a_duplicate) {
  /* Inits NCCL rejects for their arguments (rank >= nranks, nranks 0) create
   * no rank: a later valid init with the same id on the same device is not
   * a second rank of that communicator. */
  init_comm(NULL, id_a, 1, 5, 0);
  init_comm(NULL, id_a, 0, 0, 0);
  init_comm(NULL, id_a, 1, -1, 0);
  init_comm((void *)0x100, id_a, 1, 0, 0);
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
}
END_TEST

START_TEST(fork_child_releases_other_threads_comms) {
  /* Thread 2 is inside a group on the comm when thread 1 forks: in the
   * child thread 2 does not exist, so thread 1 using the comm there is not
   * concurrent use. */
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  group(A2A_EV_GROUP_START, 2);
  a2a_event b = p2p(comm, 0, DEV_RECV, 16, 1, STREAM_B);
  b.thread = 2;
  ev_dispatch(&b, 0);
  a2a_event f = ev_make(A2A_EV_FORK_CHILD);
  f.thread = 1;
  ev_pre(&f);
  post_p2p(comm, 1, DEV_SEND, 16, 1, STREAM_A);
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
}
END_TEST

START_TEST(full_registry_does_not_make_unknown_handles) {
  /* Once the communicator registry is full, a new communicator is not
   * recorded: its operations must not be reported as using a handle no
   * init returned. */
  unsigned char id[128];
  memset(id, 0, sizeof id);
  uintptr_t h = 0x100000;
  for (unsigned i = 0; i < 8200; i++, h += 0x40) {
    memcpy(id, &i, sizeof i);
    init_comm((void *)h, id, 1, 0, 0);
  }
  post_p2p((void *)(h - 0x40), 1, DEV_SEND, 16, 0, STREAM_A);
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
}
END_TEST

START_TEST(thread_indices_past_4096_are_checked) {
  /* Thread indices grow for the life of the process. */
  group(A2A_EV_GROUP_END, 5000);
  group(A2A_EV_GROUP_END, 1u << 30);
  ck_assert_uint_eq(collector_count("group.unbalanced"), 2);
}
END_TEST

typedef struct open_arg { uint32_t thread; } open_arg;

static void *open_group_and_exit(void *p) {
  group(A2A_EV_GROUP_START, ((open_arg *)p)->thread);
  return NULL;
}

START_TEST(exited_threads_record_is_reused_after_its_report) {
  /* A thread exits with a group open; a later thread whose index maps to
   * the same slot takes the record over: the open group is reported once
   * (not lost, not reported again at exit), the new thread starts clean. */
  pthread_t th;
  open_arg a = {7000};
  pthread_create(&th, NULL, open_group_and_exit, &a);
  pthread_join(th, NULL);
  open_arg b = {7000 + 4096};
  pthread_create(&th, NULL, open_group_and_exit, &b);
  pthread_join(th, NULL);
  ck_assert_uint_eq(collector_count("group.unbalanced"), 1);
  exit_event();
  ck_assert_uint_eq(collector_count("group.unbalanced"), 2); /* thread b's */
}
END_TEST

/* ---------------- correct programs stay silent ---------------- */

START_TEST(nonblocking_comm_in_progress_everywhere) {
  /* A non-blocking communicator (config->blocking = 0): the init, every
   * operation and the group end may return ncclInProgress; the watchdog
   * polls ncclCommGetAsyncError until it says ncclSuccess; finalize
   * returns ncclInProgress, then destroy. */
  a2a_event ev = ev_make(A2A_EV_COMM_INIT);
  ev.api = "ncclCommInitRankConfig";
  ev.u.init.how = A2A_INIT_RANK_CONFIG;
  ev.u.init.ids = id_a;
  ev.u.init.nids = 1;
  ev.u.init.nranks = 2;
  ev.u.init.rank = 0;
  ev.u.init.device = 0;
  ev.u.init.blocking = 0;
  ev_pre(&ev);
  ev.u.init.newcomm = (void *)0x100;
  ev_post(&ev, 7 /* ncclInProgress */);
  void *comm = (void *)0x100;
  async_query(comm, 7);
  async_query(comm, 0);
  group(A2A_EV_GROUP_START, 1);
  a2a_event s = p2p(comm, 1, DEV_SEND, 16, 1, STREAM_A);
  ev_pre(&s);
  ev_post(&s, 7);
  a2a_event e = ev_make(A2A_EV_GROUP_END);
  e.api = "ncclGroupEnd";
  ev_pre(&e);
  ev_post(&e, 7);
  async_query(comm, 7);
  async_query(comm, 0);
  a2a_event r = p2p(comm, 0, DEV_RECV, 16, 1, STREAM_A);
  ev_pre(&r);
  ev_post(&r, 7);
  comm_end(comm, A2A_END_FINALIZE, 7);
  async_query(comm, 7);
  comm_end(comm, A2A_END_DESTROY, 0);
  exit_event();
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
}
END_TEST

START_TEST(pytorch_watchdog_and_lazy_p2p_comms) {
  /* ProcessGroupNCCL: the main thread (1) posts; the watchdog (2) polls
   * ncclCommGetAsyncError on the same communicators meanwhile and finally
   * aborts one while the main thread is still inside an operation on it
   * (a hang being torn down). Lazy point-to-point communicators: one
   * 2-rank communicator per peer pair, all on this rank's device. */
  void *world = init_comm((void *)0x100, id_a, 4, 0, 0);
  void *pair[3];
  for (int i = 0; i < 3; i++) {
    unsigned char id[128] = {0};
    id[0] = (unsigned char)(40 + i);
    pair[i] = init_comm((void *)(uintptr_t)(0x1000 + 0x100 * i), id, 2, 0, 0);
  }
  for (int step = 0; step < 3; step++) {
    a2a_event op = p2p(pair[step], 1, DEV_SEND, 16, 1, STREAM_A);
    ev_pre(&op);
    a2a_event q = ev_make(A2A_EV_COMM_ASYNC_ERROR);
    q.api = "ncclCommGetAsyncError";
    q.thread = 2;
    for (int k = 0; k < 3; k++) {
      q.comm = pair[k];
      ev_pre(&q);
      ev_post(&q, 0);
    }
    q.comm = world;
    ev_pre(&q);
    ev_post(&q, 0);
    ev_post(&op, 0);
  }
  a2a_event hung = p2p(world, 0, DEV_RECV, 16, 1, STREAM_A);
  ev_pre(&hung);
  a2a_event ab = ev_make(A2A_EV_COMM_END);
  ab.api = "ncclCommAbort";
  ab.thread = 2;
  ab.comm = world;
  ab.u.end.how = A2A_END_ABORT;
  ev_dispatch(&ab, 0);
  ev_post(&hung, 6 /* ncclRemoteError */);
  exit_event();
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
}
END_TEST

START_TEST(nocolor_split_and_scalable_init) {
  /* Eager new_group: every rank of the parent calls ncclCommSplit, the
   * non-members with NCCL_SPLIT_NOCOLOR (no communicator returned), and
   * keep using the parent. Groups over 128 ranks: ncclCommInitRankScalable
   * with several ids. */
  void *parent = init_comm((void *)0x100, id_a, 4, 0, 0);
  a2a_event sp = ev_make(A2A_EV_COMM_INIT);
  sp.api = "ncclCommSplit";
  sp.comm = parent;
  sp.u.init.how = A2A_INIT_SPLIT;
  sp.u.init.parent = parent;
  sp.u.init.color = -1; /* NCCL_SPLIT_NOCOLOR */
  sp.u.init.nranks = sp.u.init.rank = -1;
  ev_dispatch(&sp, 0);
  post_p2p(parent, 1, DEV_SEND, 16, 1, STREAM_A);
  unsigned char ids[2][128];
  memset(ids, 0, sizeof ids);
  ids[0][0] = 7;
  ids[1][0] = 8;
  a2a_event sc = ev_make(A2A_EV_COMM_INIT);
  sc.api = "ncclCommInitRankScalable";
  sc.u.init.how = A2A_INIT_SCALABLE;
  sc.u.init.ids = ids;
  sc.u.init.nids = 2;
  sc.u.init.nranks = 256;
  sc.u.init.rank = 3;
  sc.u.init.device = 0;
  ev_pre(&sc);
  sc.u.init.newcomm = (void *)0x900;
  ev_post(&sc, 0);
  post_p2p((void *)0x900, 0, DEV_RECV, 16, 4, STREAM_A);
  exit_event();
  ck_assert_uint_eq(collector_count_prefix("group."), 0);
}
END_TEST

/* ---------------- the tracker's fast paths ---------------- */

/* The k-th finding (from 0) of check, or NULL. */
static const collected *find_nth(const char *check, size_t k) {
  for (size_t i = 0; i < collector_total(); i++) {
    const collected *c = collector_get(i);
    if (strcmp(c->check, check) == 0 && k-- == 0) return c;
  }
  return NULL;
}

/* Nested ncclGroupStart / ncclGroupEnd on a thread whose record is cached
 * are depth counters (gl_on_group_start, gl_group_end_pre,
 * gl_group_end_post): every nested start counts up, every nested end
 * counts down, and a nested end's POST leaves the open group's contents
 * alone. The same through the shim's rows (a nested end's POST not
 * called: gl_nested). */
static void nested_depth_body(void);
START_TEST(nested_group_calls_count_the_depth_exactly) { nested_depth_body(); }
END_TEST
START_TEST(nested_group_rows_count_the_depth_exactly) {
  g_group_dispatch = ev_dispatch_group;
  nested_depth_body();
  g_group_dispatch = ev_dispatch;
}
END_TEST
static void nested_depth_body(void) {
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  group(A2A_EV_GROUP_START, 1);
  group(A2A_EV_GROUP_START, 1);
  group(A2A_EV_GROUP_START, 1);
  group(A2A_EV_GROUP_START, 1); /* depth 4 */
  post_p2p(comm, 1, DEV_SEND, 16, 1, STREAM_A);
  group(A2A_EV_GROUP_END, 1);
  group(A2A_EV_GROUP_END, 1); /* depth 2: the operation still pending */
  simple(A2A_EV_STREAM_SYNC, "cudaStreamSynchronize", STREAM_B, 0);
  ck_assert_uint_eq(collector_count("group.unbalanced"), 1);
  ck_assert_ptr_nonnull(strstr(collector_find("group.unbalanced")->details, "\"group_depth\":2"));
  ck_assert_ptr_nonnull(
      strstr(collector_find("group.unbalanced")->details, "\"operations_in_group\":1"));
  simple(A2A_EV_STREAM_SYNC, "cudaStreamSynchronize", STREAM_A, 0);
  ck_assert_uint_eq(collector_count("group.sync-in-group"), 1);
  ck_assert_ptr_nonnull(strstr(collector_find("group.sync-in-group")->details, "\"group_depth\":2"));
  group(A2A_EV_GROUP_END, 1);
  group(A2A_EV_GROUP_END, 1); /* the outermost: closed */
  simple(A2A_EV_STREAM_SYNC, "cudaStreamSynchronize", STREAM_A, 0);
  ck_assert_uint_eq(collector_count_prefix("group."), 2);
  group(A2A_EV_GROUP_END, 1); /* one too many */
  ck_assert_uint_eq(collector_count("group.unbalanced"), 2);
  /* The outermost end's POST released the communicator: another thread
   * may use it. */
  a2a_event ev = p2p(comm, 1, DEV_SEND, 16, 1, STREAM_A);
  ev.thread = 2;
  ev_dispatch(&ev, 0);
  ck_assert_uint_eq(collector_count("group.concurrent-use"), 0);
  ck_assert_uint_eq(collector_count_prefix("group."), 3);
}

/* The shim keeps nested pairs without events (a2a_group_keep): this
 * analyzer's depth is its record's and the thread's kept level
 * (gl_depth), folded into the record by the next dispatched group call
 * (gl_depth_folded) - a start that fails inside a kept level, an end an
 * analyzer needs (a2a_nested_end_busy) - and into a forked child's record
 * at the fork. Two threads, each its own level; the findings, with the
 * depths they print, are those of every call dispatched. */
static void kept_steps(void) {
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 0);
  group(A2A_EV_GROUP_START, 1);
  group(A2A_EV_GROUP_START, 1); /* kept */
  post_p2p(comm, 1, DEV_SEND, 16, 1, STREAM_A);
  group(A2A_EV_GROUP_START, 7);
  group(A2A_EV_GROUP_START, 7); /* kept */
  simple(A2A_EV_STREAM_SYNC, "cudaStreamSynchronize", STREAM_A, 0); /* depth 2 */
  group_r(A2A_EV_GROUP_START, 1, 3); /* fails: dispatched, the level folded */
  group(A2A_EV_GROUP_END, 1);
  simple(A2A_EV_STREAM_SYNC, "cudaStreamSynchronize", STREAM_B, 0); /* depth 2 */
  group(A2A_EV_GROUP_END, 1);
  group(A2A_EV_GROUP_END, 1); /* the outermost here (the failed start) */
  group(A2A_EV_GROUP_END, 1); /* without a start */
  a2a_nested_end_busy(7, true);
  group(A2A_EV_GROUP_END, 7); /* dispatched, the level folded */
  group(A2A_EV_GROUP_END, 7);
  group(A2A_EV_GROUP_START, 7);
  group(A2A_EV_GROUP_START, 7); /* kept, open at the fork */
  a2a_core_after_fork_child(); /* as the shim's fork handler, on thread 7 */
  a2a_event ev = ev_make(A2A_EV_FORK_CHILD);
  ev.thread = 7;
  ev_post(&ev, 0); /* (the shim's: POST only) */
  a2a_group_keep_after_fork(7);
  ev_group_forget();
  ev = ev_make(A2A_EV_PROCESS_EXIT);
  ev.thread = 7;
  ev_dispatch(&ev, 0); /* open at exit: depth 2 */
}

START_TEST(kept_nested_groups_give_the_same_findings) {
  static char ref[16384], kept[16384];
  kept_steps();
  collector_text(ref, sizeof ref);
  ck_assert_uint_eq(collector_count("group.unbalanced"), 3);
  ck_assert_ptr_nonnull(strstr(ref, "\"group_depth\":2"));
  setup();
  g_group_dispatch = ev_dispatch_group;
  kept_steps();
  g_group_dispatch = ev_dispatch;
  ck_assert_uint_eq(ev_group_kept(), 3);
  collector_text(kept, sizeof kept);
  ck_assert_msg(strcmp(kept, ref) == 0, "kept: %.900s\nevery call dispatched: %.900s", kept, ref);
}
END_TEST

/* A broadcast of 4 floats from 0x30000000 into 0x31000000 on STREAM_A,
 * at site 0x5550. */
static void post_broadcast(void *comm, int root) {
  a2a_event b = ev_make(A2A_EV_COLL);
  b.api = "ncclBroadcast";
  b.comm = comm;
  b.stream = STREAM_A;
  b.callsite = (const void *)0x5550;
  b.u.coll.coll = A2A_COLL_BROADCAST;
  b.u.coll.sendbuff = (const void *)0x30000000u;
  b.u.coll.recvbuff = (void *)0x31000000u;
  b.u.coll.count = 4;
  b.u.coll.dtype = 7;
  b.u.coll.redop = -1;
  b.u.coll.root = root;
  ev_dispatch(&b, 0);
}

/* Operations of an open group after the first on their communicator take
 * gl_op_pre's fast path; each is kept as its event's leading block and
 * turned into buffers and streams with its own api, site, stream and
 * arguments - a collective's root included - and counted. */
START_TEST(fast_path_operations_keep_their_own_arguments) {
  void *comm = init_comm((void *)0x100, id_a, 2, 1, 0);
  group(A2A_EV_GROUP_START, 1);
  post_p2p(comm, 1, DEV_SEND, 16, 0, STREAM_A); /* the first: acquires comm */
  a2a_event r = p2p(comm, 0, DEV_RECV, 8, 0, STREAM_B);
  r.callsite = (const void *)0x4440;
  ev_dispatch(&r, 0);
  post_broadcast(comm, 1); /* this rank: its send buffer is read */
  /* Writing the broadcast's send buffer: only the root's counts. */
  memcpy_sync(0x30000000u + 4, 0x7000, 4, A2A_CPY_H2D);
  ck_assert_uint_eq(collector_count("group.sync-in-group"), 1);
  const collected *c = collector_find("group.sync-in-group");
  ck_assert_ptr_nonnull(strstr(c->details, "\"group_operation\":\"ncclBroadcast\""));
  ck_assert_ptr_nonnull(strstr(c->details, "\"group_operation_site\":\"0x5550\""));
  ck_assert_ptr_nonnull(strstr(c->details, "\"stream\":\"0x5a00\""));
  ck_assert_ptr_nonnull(strstr(c->details, "\"buffer_lo\":\"0x30000000\""));
  ck_assert_ptr_nonnull(strstr(c->details, "\"buffer_bytes\":16"));
  ck_assert_ptr_nonnull(strstr(c->details, "\"operations_in_group\":3"));
  ck_assert_ptr_nonnull(strstr(c->message, "send buffer"));
  /* The receive (another site, stream and count), after the flush (each
   * copy at its own site: a finding repeated at a site is counted, not
   * reported again). */
  post_p2p(comm, 1, 0x40000000u, 2, 0, STREAM_B);
  memcpy_sync_at((const void *)0x6001, 0x7000, DEV_RECV + 31, 1, A2A_CPY_D2H);
  ck_assert_uint_eq(collector_count("group.sync-in-group"), 2);
  c = find_nth("group.sync-in-group", 1);
  ck_assert_ptr_nonnull(strstr(c->details, "\"group_operation\":\"ncclRecv\""));
  ck_assert_ptr_nonnull(strstr(c->details, "\"group_operation_site\":\"0x4440\""));
  ck_assert_ptr_nonnull(strstr(c->details, "\"stream\":\"0x5b00\""));
  ck_assert_ptr_nonnull(strstr(c->details, "\"buffer_bytes\":32"));
  ck_assert_ptr_nonnull(strstr(c->details, "\"operations_in_group\":4"));
  /* The last send's buffer, past the copies (deferred again). */
  memcpy_sync_at((const void *)0x6002, 0x40000000u, 0x7000, 8, A2A_CPY_H2D);
  ck_assert_uint_eq(collector_count("group.sync-in-group"), 3);
  c = find_nth("group.sync-in-group", 2);
  ck_assert_ptr_nonnull(strstr(c->details, "\"buffer_bytes\":8"));
  ck_assert_ptr_nonnull(strstr(c->details, "\"stream\":\"0x5b00\""));
  group(A2A_EV_GROUP_END, 1);
}
END_TEST

/* An operation on no known communicator keeps its current device for its
 * stream (record_op), which the fast path leaves out of an operation on a
 * known one (GL_PEND_DEV: its device is its record's): each, in a slot the
 * other kind used before, gives its stream the device it must. */
START_TEST(unknown_comm_operation_keeps_its_device) {
  void *comm = init_comm((void *)0x100, id_a, 2, 0, 1);
  a2a_event k = p2p(comm, 1, DEV_SEND, 16, 1, STREAM_A);
  k.device = 1;
  a2a_event u = p2p((void *)0x999, 1, DEV_SEND + 0x1000, 16, 1, STREAM_B);
  a2a_event sync = ev_make(A2A_EV_DEVICE_SYNC);
  sync.api = "cudaDeviceSynchronize";
  for (int round = 0; round < 2; round++) {
    group(A2A_EV_GROUP_START, 1);
    u.device = 3 + round;
    if (round == 0) ev_dispatch(&k, 0);
    ev_dispatch(&u, 0); /* round 0: slot 1; round 1: slot 0, the known one's */
    if (round == 1) ev_dispatch(&k, 0); /* slot 1, the unknown one's */
    sync.device = 3 + round; /* the unknown operation's stream */
    sync.callsite = (const void *)(uintptr_t)(0x8100 + round);
    ev_dispatch(&sync, 0);
    ck_assert_uint_eq(collector_count("group.sync-in-group"), 2 * round + 1);
    ck_assert_ptr_nonnull(strstr(find_nth("group.sync-in-group", 2 * round)->details,
                                 "\"stream\":\"0x5b00\""));
    sync.device = 1; /* the known one's */
    sync.callsite = (const void *)(uintptr_t)(0x8200 + round);
    ev_dispatch(&sync, 0);
    ck_assert_uint_eq(collector_count("group.sync-in-group"), 2 * round + 2);
    ck_assert_ptr_nonnull(strstr(find_nth("group.sync-in-group", 2 * round + 1)->details,
                                 "\"stream\":\"0x5a00\""));
    group(A2A_EV_GROUP_END, 1);
  }
  ck_assert_uint_eq(collector_count("group.unbalanced"), 0);
}
END_TEST

/* A non-root rank's broadcast on the fast path does not read its send
 * buffer: the root kept with the operation decides. */
START_TEST(fast_path_collective_of_another_root) {
  void *comm = init_comm((void *)0x100, id_a, 2, 1, 0);
  group(A2A_EV_GROUP_START, 1);
  post_p2p(comm, 1, DEV_SEND, 16, 0, STREAM_A);
  post_broadcast(comm, 0);
  memcpy_sync(0x30000000u, 0x7000, 4, A2A_CPY_H2D);
  ck_assert_uint_eq(collector_count("group.sync-in-group"), 0);
  memcpy_sync(0x31000000u, 0x7000, 4, A2A_CPY_H2D);
  ck_assert_uint_eq(collector_count("group.sync-in-group"), 1);
  group(A2A_EV_GROUP_END, 1);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("group_local");
  TCase *tc = tcase_create("group");
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_set_timeout(tc, 20);
  tcase_add_test(tc, end_without_start);
  tcase_add_loop_test(tc, quiet_queries_report_as_dispatched, 0, 4);
  tcase_add_test(tc, quiet_queries_with_the_check_off);
  tcase_add_test(tc, queries_not_quiet_with_perf_env_pending);
  tcase_add_test(tc, nested_group_calls_count_the_depth_exactly);
  tcase_add_test(tc, nested_group_rows_count_the_depth_exactly);
  tcase_add_test(tc, kept_nested_groups_give_the_same_findings);
  tcase_add_test(tc, fast_path_operations_keep_their_own_arguments);
  tcase_add_test(tc, fast_path_collective_of_another_root);
  tcase_add_test(tc, unknown_comm_operation_keeps_its_device);
  tcase_add_test(tc, multi_device_mismatch_does_not_outlive_its_group);
  tcase_add_test(tc, open_at_exit_counts_flushed_and_pending_operations);
  tcase_add_test(tc, group_mismatch_recorded_on_the_fast_path);
  tcase_add_test(tc, end_after_reinit_uses_the_new_record);
  tcase_add_test(tc, balanced_and_nested_groups_are_silent);
  tcase_add_test(tc, one_end_too_many);
  tcase_add_test(tc, groups_are_per_thread);
  tcase_add_test(tc, open_at_exit_points_at_group_start);
  tcase_add_test(tc, open_at_blocking_call_without_ops);
  tcase_add_test(tc, non_blocking_calls_in_group_are_silent);
  tcase_add_test(tc, stream_sync_of_group_stream);
  tcase_add_test(tc, stream_sync_of_other_stream_is_unbalanced);
  tcase_add_test(tc, legacy_stream_and_device_sync);
  tcase_add_test(tc, event_sync_recorded_after_group_op);
  tcase_add_test(tc, memcpy_of_receive_buffer);
  tcase_add_test(tc, zero_count_receive_has_no_buffer);
  tcase_add_test(tc, every_operation_of_a_long_group_counts);
  tcase_add_test(tc, sync_after_group_end_is_fine);
  tcase_add_test(tc, sync_in_group_disabled_does_not_become_unbalanced);
  tcase_add_test(tc, device_mismatch_outside_group);
  tcase_add_test(tc, device_mismatch_in_single_device_group);
  tcase_add_test(tc, stream_of_other_device_named_when_nccl_fails);
  tcase_add_test(tc, failure_on_own_or_unknown_stream_is_not_judged);
  tcase_add_test(tc, stream_of_other_device_in_failed_group);
  tcase_add_test(tc, multi_device_group_from_one_thread_is_fine);
  tcase_add_test(tc, duplicate_device_same_id);
  tcase_add_test(tc, distinct_devices_or_ids_are_fine);
  tcase_add_test(tc, init_all_repeated_device);
  tcase_add_test(tc, init_all_device_list_at_pre);
  tcase_add_test(tc, op_after_destroy);
  tcase_add_test(tc, finalize_then_destroy_is_fine);
  tcase_add_test(tc, op_after_finalize);
  tcase_add_test(tc, unknown_handle);
  tcase_add_test(tc, split_of_aborted_parent);
  tcase_add_test(tc, reused_handle_is_the_new_comm);
  tcase_add_test(tc, two_threads_inside_one_comm);
  tcase_add_test(tc, open_group_holds_the_comm);
  tcase_add_test(tc, post_after_the_group_closed_releases);
  tcase_add_test(tc, post_releases_what_its_pre_acquired);
  tcase_add_test(tc, different_comms_in_parallel_are_fine);
  tcase_add_test(tc, held_comm_async_error_and_finalize_are_still_judged);
  tcase_add_test(tc, held_comm_first_mismatch_is_still_recorded);
  tcase_add_test(tc, held_comm_unknown_device_is_listed_later);
  tcase_add_test(tc, multi_device_group_ops_after_the_mismatch);
  tcase_add_test(tc, group_device_list_is_a_set);
  tcase_add_test(tc, group_devices_count_a_second_device_for_good);
  tcase_add_test(tc, alternating_comms_are_each_judged);
  tcase_add_test(tc, unknown_current_device_is_not_a_mismatch);
  tcase_add_test(tc, held_memo_ends_with_the_group);
  tcase_add_test(tc, later_mismatches_still_list_their_device);
  tcase_add_loop_test(tc, queries_after_end, 0, 2);
  tcase_add_test(tc, comm_past_the_held_capacity_is_released_at_its_post);
  tcase_add_test(tc, op_after_async_error);
  tcase_add_test(tc, async_error_cleared_by_a_clean_poll);
  tcase_add_test(tc, threads_with_their_own_comms_are_silent);
  tcase_add_test(tc, fork_child_forgets_other_threads_groups);
  tcase_add_test(tc, invalid_init_arguments_are_not_a_duplicate);
  tcase_add_test(tc, fork_child_releases_other_threads_comms);
  tcase_add_test(tc, full_registry_does_not_make_unknown_handles);
  tcase_add_test(tc, thread_indices_past_4096_are_checked);
  tcase_add_test(tc, nonblocking_comm_in_progress_everywhere);
  tcase_add_test(tc, pytorch_watchdog_and_lazy_p2p_comms);
  tcase_add_test(tc, nocolor_split_and_scalable_init);
  tcase_add_test(tc, exited_threads_record_is_reused_after_its_report);
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
