/* test_xrank_ops.c - the cross-rank analyzer's NCCL operation paths, run
 * through the dispatcher with the analyzer as its only one (so that the
 * dispatch table calls its per-kind handlers, and completion markers are
 * on: a2a_thread_want_flush): the records of a grouped send and receive
 * carry exactly what the background thread reads (xrank_rec.h), back to
 * back groups on one stream share a marker run (close_prep's fast path),
 * and that fast path gives way to the slow one exactly when a stream was
 * destroyed or a capture began on another thread since the run began. The
 * dispatch table's handlers (xr_by_kind) are checked against on_event,
 * the reference, on the same calls. */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "a2a_core.h"
#include "collector.h"
#include "core_internal.h"
#include "xrank_rec.h"

#define STREAM 0x5100u

static const a2a_analyzer *const k_list[] = {&a2a_analyzer_xrank};

static void setup(void) {
  a2a_core_set_analyzers_for_tests(k_list, 1);
  collector_reset(); /* (re)initializes the core with the list above */
  ck_assert(xr_active());
}

static int drain(xr_rec *out, int max) {
  int n = 0;
  xr_rec r;
  while (xr_ring_pop(&r)) {
    if (n < max) out[n] = r;
    n++;
  }
  return n;
}

/* Rank 0 of a two-rank communicator made from id; a non-blocking one
 * (blocking 0) returns ncclInProgress. */
static void comm_init_on(void *comm, unsigned char *id, int blocking, int device) {
  a2a_event ini = ev_make(A2A_EV_COMM_INIT);
  ini.u.init.how = A2A_INIT_RANK;
  ini.u.init.newcomm = comm;
  ini.u.init.nranks = 2;
  ini.u.init.rank = 0;
  ini.u.init.device = device;
  ini.u.init.blocking = blocking;
  ini.u.init.ids = id;
  ev_dispatch(&ini, blocking ? 0 : A2A_NCCL_IN_PROGRESS);
}
static void comm_init_as(void *comm, unsigned char *id, int blocking) {
  comm_init_on(comm, id, blocking, 0);
}
static void comm_init(void *comm, unsigned char *id) { comm_init_as(comm, id, 1); }

static a2a_event p2p_ev(void *comm, int is_send, uint64_t count, int dtype, int peer,
                        uint32_t thread) {
  a2a_event ev = ev_make(A2A_EV_P2P);
  ev.comm = comm;
  ev.thread = thread;
  ev.stream = (void *)(uintptr_t)STREAM;
  ev.callsite = (const void *)(uintptr_t)(is_send ? 0x2222 : 0x3333);
  ev.u.p2p.is_send = is_send;
  ev.u.p2p.count = count;
  ev.u.p2p.dtype = dtype;
  ev.u.p2p.peer = peer;
  return ev;
}

/* One group of a send and a receive on STREAM (thread 1), through the
 * dispatcher (both phases). */
static void group_sendrecv(void *comm) {
  a2a_event g = ev_make(A2A_EV_GROUP_START);
  ev_dispatch(&g, 0);
  a2a_event s = p2p_ev(comm, 1, 8, 7, 1, 1);
  ev_dispatch(&s, 0);
  a2a_event r = p2p_ev(comm, 0, 16, 7, 1, 1);
  ev_dispatch(&r, 0);
  g = ev_make(A2A_EV_GROUP_END);
  ev_dispatch(&g, 0);
}

static void assert_op(const xr_op *op, uint64_t id, int kind, uint64_t count, uint64_t site) {
  ck_assert_uint_eq(op->comm, id);
  ck_assert_uint_eq(op->site, site);
  ck_assert_uint_eq(op->count, count);
  ck_assert_int_eq(op->group, 0);
  ck_assert_int_eq(op->rank, 0);
  ck_assert_int_eq(op->peer, 1);
  ck_assert_int_eq(op->root, -1);
  ck_assert_int_eq(op->kind, kind);
  ck_assert_int_eq(op->coll, -1);
  ck_assert_int_eq(op->dtype, 7);
  ck_assert_int_eq(op->redop, -1);
  ck_assert_int_eq(op->flags | op->pad[0] | op->pad[1], 0);
}

START_TEST(grouped_records_carry_what_the_background_thread_reads) {
  static unsigned char id[128] = {0x6a, 1, 2, 3};
  void *const comm = (void *)0xd0;
  comm_init(comm, id);
  const a2a_comm *c = a2a_comm_lookup(comm);
  ck_assert_ptr_nonnull(c);
  ck_assert_uint_ne(c->id_hash, 0);
  xr_rec rec[8];
  drain(rec, 8);

  group_sendrecv(comm);
  ck_assert_int_eq(drain(rec, 8), 3);
  ck_assert_int_eq(rec[0].type, XR_REC_OP);
  ck_assert_uint_eq(rec[0].thread, 1);
  ck_assert_uint_eq(rec[0].stream, STREAM);
  assert_op(&rec[0].u.op, c->id_hash, XR_OP_SEND, 8, 0x2222);
  ck_assert_int_eq(rec[1].type, XR_REC_OP);
  ck_assert_uint_eq(rec[1].thread, 1);
  ck_assert_uint_eq(rec[1].stream, STREAM);
  assert_op(&rec[1].u.op, c->id_hash, XR_OP_RECV, 16, 0x3333);
  /* The group's close: deferred into a marker run of the thread. */
  ck_assert_int_eq(rec[2].type, XR_REC_UNIT_END);
  ck_assert_uint_eq(rec[2].thread, 1);
  ck_assert_uint_eq(rec[2].stream, STREAM);
  ck_assert_int_eq(rec[2].device, 0);
  ck_assert_ptr_null(rec[2].event);
  ck_assert_int_eq(rec[2].u.unit.deferred, 1);
  uint32_t run = rec[2].u.unit.run;
  ck_assert_uint_ne(run, 0);

  /* Back to back: the same run (close_prep's fast path). */
  group_sendrecv(comm);
  ck_assert_int_eq(drain(rec, 8), 3);
  ck_assert_int_eq(rec[2].type, XR_REC_UNIT_END);
  ck_assert_int_eq(rec[2].u.unit.deferred, 1);
  ck_assert_uint_eq(rec[2].u.unit.run, run);
  ck_assert_ptr_null(rec[2].event);

  /* The thread's next call of another kind records the run's marker. */
  a2a_event q = ev_make(A2A_EV_STREAM_SYNC);
  q.stream = (void *)(uintptr_t)STREAM;
  ev_dispatch(&q, 0);
  ck_assert_int_eq(drain(rec, 8), 1);
  ck_assert_int_eq(rec[0].type, XR_REC_UNIT_MARK);
  ck_assert_uint_eq(rec[0].u.unit.run, run);
  ck_assert_uint_eq(rec[0].stream, STREAM);
  ck_assert_ptr_nonnull(rec[0].event);
  xr_event_release(rec[0].event, rec[0].device);

  /* A lone operation: one OP_UNIT, in a new run. */
  a2a_event s = p2p_ev(comm, 1, 4, 7, 1, 1);
  ev_dispatch(&s, 0);
  ck_assert_int_eq(drain(rec, 8), 1);
  ck_assert_int_eq(rec[0].type, XR_REC_OP_UNIT);
  ck_assert_uint_eq(rec[0].thread, 1);
  ck_assert_uint_eq(rec[0].stream, STREAM);
  ck_assert_ptr_null(rec[0].event);
  ck_assert_int_eq(rec[0].u.opu.deferred, 1);
  ck_assert_uint_ne(rec[0].u.opu.run, run);
  assert_op(&rec[0].u.opu.op, c->id_hash, XR_OP_SEND, 4, 0x2222);

  /* A group on two streams, back to the first: one unit per stream. */
  a2a_event g = ev_make(A2A_EV_GROUP_START);
  ev_dispatch(&g, 0);
  ev_dispatch(&s, 0);
  a2a_event r2 = p2p_ev(comm, 0, 16, 7, 1, 1);
  r2.stream = (void *)0x5200;
  ev_dispatch(&r2, 0);
  ev_dispatch(&s, 0);
  g = ev_make(A2A_EV_GROUP_END);
  ev_dispatch(&g, 0);
  ck_assert_int_eq(drain(rec, 8), 5);
  ck_assert_int_eq(rec[3].type, XR_REC_UNIT_END);
  ck_assert_uint_eq(rec[3].stream, STREAM);
  ck_assert_int_eq(rec[4].type, XR_REC_UNIT_END);
  ck_assert_uint_eq(rec[4].stream, 0x5200);
}
END_TEST

/* on_p2p's fast path takes the communicator from the thread's registry
 * memo only when the memo's last answer is for the operation's handle;
 * a send or receive posted right after a lookup of another communicator
 * takes the reference path (p2p_body), and the records of both paths are
 * the same, byte for byte, and carry the operation's own communicator. */
/* Two communicators of distinct identities at comm and other, made from
 * id and id2; their registry records in *c and *o. */
static void two_comms(void *comm, unsigned char *id, void *other, unsigned char *id2,
                      const a2a_comm **c, const a2a_comm **o) {
  comm_init(comm, id);
  comm_init(other, id2);
  *c = a2a_comm_lookup(comm);
  *o = a2a_comm_lookup(other);
  ck_assert_ptr_nonnull(*c);
  ck_assert_ptr_nonnull(*o);
  ck_assert_uint_ne((*c)->id_hash, (*o)->id_hash);
}

START_TEST(grouped_records_without_the_memo_are_the_same) {
  static unsigned char id[128] = {0x6b, 1, 2, 3}, id2[128] = {0x6c, 1, 2, 3};
  void *const comm = (void *)0xd0, *const other = (void *)0xe0;
  const a2a_comm *c, *o;
  two_comms(comm, id, other, id2, &c, &o);
  xr_rec rec[8], ref[8];
  drain(rec, 8);

  /* The memo's last answer is the operation's communicator: fast. */
  a2a_event g = ev_make(A2A_EV_GROUP_START);
  ev_dispatch(&g, 0);
  a2a_event s = p2p_ev(comm, 1, 8, 7, 1, 1);
  ck_assert_ptr_eq(a2a_comm_lookup(comm), c);
  ev_dispatch(&s, 0);
  a2a_event r = p2p_ev(comm, 0, 16, 7, 1, 1);
  ck_assert_ptr_eq(a2a_comm_lookup(comm), c);
  ev_dispatch(&r, 0);
  ck_assert_int_eq(drain(ref, 8), 2);
  /* The memo's last answer is another communicator's: the reference. */
  ck_assert_ptr_eq(a2a_comm_lookup(other), o);
  ev_dispatch(&s, 0);
  ck_assert_ptr_eq(a2a_comm_lookup(other), o);
  ev_dispatch(&r, 0);
  ck_assert_int_eq(drain(rec, 8), 2);
  g = ev_make(A2A_EV_GROUP_END);
  ev_dispatch(&g, 0);
  ck_assert_int_eq(drain(rec + 2, 6), 1);
  ck_assert_int_eq(rec[2].type, XR_REC_UNIT_END);
  for (int i = 0; i < 2; i++) {
    ck_assert_int_eq(rec[i].type, XR_REC_OP);
    ck_assert_uint_eq(rec[i].stream, STREAM);
    ck_assert_uint_eq(rec[i].thread, 1);
    ck_assert_uint_eq(ref[i].u.op.comm, c->id_hash);
    /* What an OP carries (xrank_rec.h): its first word, stream and op. */
    ck_assert_int_eq(memcmp(&rec[i], &ref[i], offsetof(xr_rec, thread) + 4), 0);
    ck_assert_uint_eq(rec[i].stream, ref[i].stream);
    ck_assert_int_eq(memcmp(&rec[i].u.op, &ref[i].u.op, sizeof rec[i].u.op), 0);
  }
  assert_op(&rec[0].u.op, c->id_hash, XR_OP_SEND, 8, 0x2222);
  assert_op(&rec[1].u.op, c->id_hash, XR_OP_RECV, 16, 0x3333);
}
END_TEST

/* A grouped collective's POST takes the same frameless path as a send's
 * (on_op_fast, coll_grouped) when the memo's last answer is its
 * communicator; its records are those of the reference (op_body), byte
 * for byte, with every field of a collective (kind, coll, root, dtype, a
 * redop clamped to 127, no peer); a zero-count collective, which NCCL
 * drops, records nothing on either path. */
static a2a_event coll_ev(void *comm, a2a_coll coll, uint64_t count, int redop, int root) {
  a2a_event ev = ev_make(A2A_EV_COLL);
  ev.comm = comm;
  ev.thread = 1;
  ev.stream = (void *)(uintptr_t)STREAM;
  ev.callsite = (const void *)(uintptr_t)(0x4400 + coll);
  ev.u.coll.coll = coll;
  ev.u.coll.count = count;
  ev.u.coll.dtype = 9;
  ev.u.coll.redop = redop;
  ev.u.coll.root = root;
  return ev;
}

START_TEST(grouped_collective_records_on_both_paths_are_the_same) {
  static unsigned char id[128] = {0x6f, 1, 2, 3}, id2[128] = {0x70, 1, 2, 3};
  void *const comm = (void *)0xd0, *const other = (void *)0xe0;
  const a2a_comm *c, *o;
  two_comms(comm, id, other, id2, &c, &o);
  xr_rec rec[8], ref[8];
  drain(rec, 8);
  a2a_event ops[] = {coll_ev(comm, A2A_COLL_ALLTOALL, 32, -1, -1),
                     coll_ev(comm, A2A_COLL_ALLREDUCE, 64, 200, -1),
                     coll_ev(comm, A2A_COLL_BROADCAST, 0, -1, 1), /* dropped */
                     coll_ev(comm, A2A_COLL_REDUCE, 16, 2, 1)};
  a2a_event g = ev_make(A2A_EV_GROUP_START);
  ev_dispatch(&g, 0);
  for (int path = 0; path < 2; path++) {
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
      /* path 0: the memo's last answer is the operation's (fast); 1:
       * another communicator's (the reference). */
      ck_assert_ptr_eq(a2a_comm_lookup(path ? other : comm), path ? o : c);
      ev_dispatch(&ops[i], 0);
    }
    ck_assert_int_eq(drain(path ? rec : ref, 8), 3);
  }
  g = ev_make(A2A_EV_GROUP_END);
  ev_dispatch(&g, 0);
  ck_assert_int_eq(drain(rec + 3, 5), 1);
  ck_assert_int_eq(rec[3].type, XR_REC_UNIT_END);
  static const int want_coll[] = {A2A_COLL_ALLTOALL, A2A_COLL_ALLREDUCE, A2A_COLL_REDUCE};
  static const uint64_t want_count[] = {32, 64, 16};
  static const int want_redop[] = {-1, 127, 2}, want_root[] = {-1, -1, 1};
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(ref[i].type, XR_REC_OP);
    ck_assert_uint_eq(ref[i].thread, 1);
    ck_assert_uint_eq(ref[i].stream, STREAM);
    ck_assert_int_eq(memcmp(&rec[i], &ref[i], offsetof(xr_rec, thread) + 4), 0);
    ck_assert_uint_eq(rec[i].stream, ref[i].stream);
    ck_assert_int_eq(memcmp(&rec[i].u.op, &ref[i].u.op, sizeof rec[i].u.op), 0);
    const xr_op *op = &ref[i].u.op;
    ck_assert_uint_eq(op->comm, c->id_hash);
    ck_assert_uint_eq(op->site, 0x4400u + (unsigned)want_coll[i]);
    ck_assert_uint_eq(op->count, want_count[i]);
    ck_assert_int_eq(op->group, 0);
    ck_assert_int_eq(op->rank, 0);
    ck_assert_int_eq(op->peer, -1);
    ck_assert_int_eq(op->root, want_root[i]);
    ck_assert_int_eq(op->kind, XR_OP_COLL);
    ck_assert_int_eq(op->coll, want_coll[i]);
    ck_assert_int_eq(op->dtype, 9);
    ck_assert_int_eq(op->redop, want_redop[i]);
    ck_assert_int_eq(op->flags | op->pad[0] | op->pad[1], 0);
  }
  /* A lone collective (no group), the memo's last answer its
   * communicator: one OP_UNIT, its operation as in a group's OP. */
  ck_assert_ptr_eq(a2a_comm_lookup(comm), c);
  ev_dispatch(&ops[0], 0);
  ck_assert_int_eq(drain(rec, 8), 1);
  ck_assert_int_eq(rec[0].type, XR_REC_OP_UNIT);
  ck_assert_uint_eq(rec[0].stream, STREAM);
  ck_assert_int_eq(memcmp(&rec[0].u.opu.op, &ref[0].u.op, sizeof ref[0].u.op), 0);
  if (rec[0].event) xr_event_release(rec[0].event, rec[0].device);
}
END_TEST

/* The memo's last answer counts only at the registry's version it was
 * taken at: a handle NCCL reuses for a new communicator (destroyed, then
 * created again at the same address, here by another thread) is the new
 * communicator's, even while this thread's memo still holds the old
 * answer. */
static unsigned char g_reuse_id[128] = {0x6e, 1, 2, 3};
static void *reuse_handle(void *comm) {
  a2a_event d = ev_make(A2A_EV_COMM_END);
  d.thread = 2;
  d.comm = comm;
  d.u.end.how = A2A_END_DESTROY;
  ev_dispatch(&d, 0);
  comm_init(comm, g_reuse_id);
  return NULL;
}

START_TEST(grouped_records_follow_a_reused_handle) {
  static unsigned char id[128] = {0x6d, 1, 2, 3};
  void *const comm = (void *)0xd0;
  comm_init(comm, id);
  const a2a_comm *old = a2a_comm_lookup(comm); /* the memo's last answer */
  ck_assert_ptr_nonnull(old);
  uint64_t old_hash = old->id_hash;
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, reuse_handle, comm), 0);
  pthread_join(th, NULL);
  xr_rec rec[8];
  drain(rec, 8);
  a2a_event g = ev_make(A2A_EV_GROUP_START);
  ev_dispatch(&g, 0);
  a2a_event s = p2p_ev(comm, 1, 8, 7, 1, 1);
  ev_dispatch(&s, 0);
  ck_assert_int_eq(drain(rec, 8), 1);
  const a2a_comm *now = a2a_comm_lookup(comm);
  ck_assert_ptr_ne(now, old);
  ck_assert_uint_ne(now->id_hash, old_hash);
  ck_assert_int_eq(rec[0].type, XR_REC_OP);
  assert_op(&rec[0].u.op, now->id_hash, XR_OP_SEND, 8, 0x2222);
  g = ev_make(A2A_EV_GROUP_END);
  ev_dispatch(&g, 0);
}
END_TEST

/* Another thread's stream destroy since the run began: the run is closed
 * (its marker untracked: the handle may name a new stream) and a new one
 * begins, as defer_unit decides - close_prep's fast path must not keep the
 * old run. */
START_TEST(a_destroy_on_another_thread_ends_the_run) {
  static unsigned char id[128] = {0x6b, 1, 2, 3};
  void *const comm = (void *)0xd1;
  comm_init(comm, id);
  xr_rec rec[8];
  drain(rec, 8);
  group_sendrecv(comm);
  ck_assert_int_eq(drain(rec, 8), 3);
  uint32_t run = rec[2].u.unit.run;
  ck_assert_int_eq(rec[2].u.unit.deferred, 1);

  a2a_event d = ev_make(A2A_EV_STREAM_DESTROY);
  d.thread = 2;
  d.stream = (void *)(uintptr_t)STREAM;
  ev_dispatch(&d, 0);
  ck_assert_int_eq(drain(rec, 8), 0); /* thread 1 made no call yet */

  group_sendrecv(comm);
  ck_assert_int_eq(drain(rec, 8), 4);
  ck_assert_int_eq(rec[0].type, XR_REC_OP);
  ck_assert_int_eq(rec[1].type, XR_REC_OP);
  ck_assert_int_eq(rec[2].type, XR_REC_UNIT_MARK); /* the old run, untracked */
  ck_assert_uint_eq(rec[2].u.unit.run, run);
  ck_assert_ptr_null(rec[2].event);
  ck_assert_int_eq(rec[3].type, XR_REC_UNIT_END);
  ck_assert_int_eq(rec[3].u.unit.deferred, 1);
  ck_assert_uint_ne(rec[3].u.unit.run, run);
  ck_assert_uint_ne(rec[3].u.unit.gen, 0); /* the new run began after a destroy */

  /* Back to back on the new run: its close carries the run and its
   * generation, as the close that began it did (group_end_units). */
  xr_rec first = rec[3];
  group_sendrecv(comm);
  ck_assert_int_eq(drain(rec, 8), 3);
  ck_assert_int_eq(rec[2].type, XR_REC_UNIT_END);
  ck_assert_uint_eq(rec[2].u.unit.run, first.u.unit.run);
  ck_assert_uint_eq(rec[2].u.unit.gen, first.u.unit.gen);
  ck_assert_int_eq(rec[2].u.unit.deferred, 1);
}
END_TEST

/* One group of a send on STREAM and a receive on 0x5200 (thread 1): one
 * unit per stream at its end, in that order. */
static void group_two_streams(void *comm) {
  a2a_event g = ev_make(A2A_EV_GROUP_START);
  ev_dispatch(&g, 0);
  a2a_event s = p2p_ev(comm, 1, 8, 7, 1, 1);
  ev_dispatch(&s, 0);
  a2a_event r = p2p_ev(comm, 0, 16, 7, 1, 1);
  r.stream = (void *)0x5200;
  ev_dispatch(&r, 0);
  g = ev_make(A2A_EV_GROUP_END);
  ev_dispatch(&g, 0);
}

/* A group over two streams, repeated (nccl-tests: one stream per device):
 * each unit joins its own stream's run, not only the newest run's
 * (close_prep's search), and a destroy of the older run's stream on
 * another thread ends that run alone, as defer_unit decides. */
START_TEST(units_on_several_streams_join_their_runs) {
  static unsigned char id[128] = {0x6e, 1, 2, 3};
  void *const comm = (void *)0xd4;
  comm_init(comm, id);
  xr_rec rec[8];
  drain(rec, 8);
  group_two_streams(comm);
  ck_assert_int_eq(drain(rec, 8), 4);
  ck_assert_int_eq(rec[2].type, XR_REC_UNIT_END);
  ck_assert_uint_eq(rec[2].stream, STREAM);
  ck_assert_int_eq(rec[2].u.unit.deferred, 1);
  ck_assert_int_eq(rec[3].type, XR_REC_UNIT_END);
  ck_assert_uint_eq(rec[3].stream, 0x5200);
  ck_assert_int_eq(rec[3].u.unit.deferred, 1);
  uint32_t run_a = rec[2].u.unit.run, run_b = rec[3].u.unit.run;
  uint32_t gen_a = rec[2].u.unit.gen, gen_b = rec[3].u.unit.gen;
  ck_assert_uint_ne(run_a, run_b);

  /* Again: the same two runs (STREAM's is not the newest), with the
   * generations they began at (xr_deferred_query's). */
  group_two_streams(comm);
  ck_assert_int_eq(drain(rec, 8), 4);
  ck_assert_uint_eq(rec[2].stream, STREAM);
  ck_assert_int_eq(rec[2].u.unit.deferred, 1);
  ck_assert_uint_eq(rec[2].u.unit.run, run_a);
  ck_assert_uint_eq(rec[2].u.unit.gen, gen_a);
  ck_assert_uint_eq(rec[3].u.unit.gen, gen_b);
  ck_assert_int_eq(rec[3].device, 0);
  ck_assert_ptr_null(rec[2].event);
  ck_assert_uint_eq(rec[3].stream, 0x5200);
  ck_assert_int_eq(rec[3].u.unit.deferred, 1);
  ck_assert_uint_eq(rec[3].u.unit.run, run_b);

  /* STREAM destroyed by thread 2: its run is closed untracked and a new
   * one begins; 0x5200's run goes on. */
  a2a_event d = ev_make(A2A_EV_STREAM_DESTROY);
  d.thread = 2;
  d.stream = (void *)(uintptr_t)STREAM;
  ev_dispatch(&d, 0);
  ck_assert_int_eq(drain(rec, 8), 0);
  group_two_streams(comm);
  ck_assert_int_eq(drain(rec, 8), 5);
  ck_assert_int_eq(rec[2].type, XR_REC_UNIT_MARK);
  ck_assert_uint_eq(rec[2].u.unit.run, run_a);
  ck_assert_ptr_null(rec[2].event);
  ck_assert_int_eq(rec[3].type, XR_REC_UNIT_END);
  ck_assert_uint_eq(rec[3].stream, STREAM);
  ck_assert_int_eq(rec[3].u.unit.deferred, 1);
  ck_assert_uint_ne(rec[3].u.unit.run, run_a);
  ck_assert_uint_ne(rec[3].u.unit.run, run_b);
  ck_assert_int_eq(rec[4].type, XR_REC_UNIT_END);
  ck_assert_uint_eq(rec[4].stream, 0x5200);
  /* 0x5200's run began before the destroy: its generation is older, so
   * defer_unit asks the ring (0x5200 not destroyed) and keeps the run. */
  ck_assert_int_eq(rec[4].u.unit.deferred, 1);
  ck_assert_uint_eq(rec[4].u.unit.run, run_b);
}
END_TEST

/* The open group's stream set (group_stream): one UNIT_END per stream, in
 * the order of each stream's first operation, however the operations
 * alternate among them - 40 streams posted twice in turn, none of the
 * second round's the previous operation's stream (so each is found by
 * group_stream_add's scan, not the inline test of the last one). Then the
 * next group starts from an empty set. */
START_TEST(group_stream_set_alternating_streams) {
  unsigned char id[128] = {0x5e};
  comm_init((void *)0xC0, id);
  xr_rec rec[256];
  drain(rec, 256);
  a2a_event g = ev_make(A2A_EV_GROUP_START);
  ev_dispatch(&g, 0);
  for (int round = 0; round < 2; round++)
    for (uintptr_t i = 0; i < 40; i++) {
      a2a_event s = p2p_ev((void *)0xC0, 1, 8, 7, 1, 1);
      s.stream = (void *)(0x100000 + i * 0x7770);
      ev_dispatch(&s, 0);
    }
  g = ev_make(A2A_EV_GROUP_END);
  ev_dispatch(&g, 0);
  int n = drain(rec, 256);
  ck_assert_int_le(n, 256);
  int ends = 0;
  for (int i = 0; i < n; i++) {
    if (rec[i].type != XR_REC_UNIT_END) continue;
    ck_assert_uint_eq(rec[i].stream, 0x100000 + (uint64_t)ends * 0x7770);
    ends++;
  }
  ck_assert_int_eq(ends, 40);
  /* The next group starts an empty set. */
  a2a_event x = p2p_ev((void *)0xC0, 1, 8, 7, 1, 1);
  x.stream = (void *)0x900000;
  g = ev_make(A2A_EV_GROUP_START);
  ev_dispatch(&g, 0);
  ev_dispatch(&x, 0);
  a2a_event y = p2p_ev((void *)0xC0, 1, 8, 7, 1, 1);
  ev_dispatch(&y, 0); /* STREAM */
  ev_dispatch(&x, 0);
  g = ev_make(A2A_EV_GROUP_END);
  ev_dispatch(&g, 0);
  n = drain(rec, 256);
  ends = 0;
  uint64_t want[] = {0x900000, STREAM};
  for (int i = 0; i < n; i++)
    if (rec[i].type == XR_REC_UNIT_END) {
      ck_assert_int_lt(ends, 2);
      ck_assert_uint_eq(rec[i].stream, want[ends++]);
    }
  ck_assert_int_eq(ends, 2);
}
END_TEST

/* The group's stream set starts from the previous group's slots
 * (group_stream_add): a group on the same streams in the same order finds
 * each in place, and one that writes another stream into a slot must not
 * take a later old slot for new - here C's old slot 2, with C already in
 * slot 0. Each group closes one unit per distinct stream, in first-use
 * order. */
static void group_on_streams(const uintptr_t *streams, int n, uint64_t *ends, int *nends) {
  a2a_event g = ev_make(A2A_EV_GROUP_START);
  ev_dispatch(&g, 0);
  for (int i = 0; i < n; i++) {
    a2a_event s = p2p_ev((void *)0xC0, 1, 8, 7, 1, 1);
    s.stream = (void *)streams[i];
    ev_dispatch(&s, 0);
  }
  g = ev_make(A2A_EV_GROUP_END);
  ev_dispatch(&g, 0);
  xr_rec rec[64];
  int nr = drain(rec, 64);
  ck_assert_int_le(nr, 64);
  *nends = 0;
  for (int i = 0; i < nr; i++)
    if (rec[i].type == XR_REC_UNIT_END && *nends < 8) ends[(*nends)++] = rec[i].stream;
}

START_TEST(group_stream_set_follows_the_previous_group) {
  unsigned char id[128] = {0x5f};
  comm_init((void *)0xC0, id);
  xr_rec rec[16];
  drain(rec, 16);
  enum { A = 0x71000, B = 0x72000, C = 0x73000, D = 0x74000 };
  static const uintptr_t abc[] = {A, B, C}, cbc[] = {C, B, C}, abcd[] = {A, B, C, D},
                         adbd[] = {A, D, B, D, A};
  uint64_t ends[8];
  int n;
  for (int k = 0; k < 2; k++) { /* the same streams again: each in its old slot */
    group_on_streams(abc, 3, ends, &n);
    ck_assert_int_eq(n, 3);
    ck_assert(ends[0] == A && ends[1] == B && ends[2] == C);
  }
  group_on_streams(cbc, 3, ends, &n);
  ck_assert_int_eq(n, 2);
  ck_assert(ends[0] == C && ends[1] == B);
  group_on_streams(abcd, 4, ends, &n);
  ck_assert_int_eq(n, 4);
  ck_assert(ends[0] == A && ends[1] == B && ends[2] == C && ends[3] == D);
  group_on_streams(adbd, 5, ends, &n);
  ck_assert_int_eq(n, 3);
  ck_assert(ends[0] == A && ends[1] == D && ends[2] == B);
}
END_TEST

/* A thread whose only communication is a grouped send and receive
 * (on_p2p's fast path) has posted: its later not-ready stream query
 * starts a polling wait the background thread sees. */
/* A grouped OP record's first 8 bytes are its own thread's (tslot.op_head,
 * stored per slot at the thread's group start): two threads' groups open
 * at once, their operations interleaved, each OP names its thread - on
 * the fast path (the memo's last answer is the communicator's) and on the
 * reference one. */
START_TEST(grouped_records_name_their_own_thread_between_open_groups) {
  static unsigned char id[128] = {0x71, 1, 2, 3}, id2[128] = {0x72, 1, 2, 3};
  void *const comm = (void *)0xd8, *const other = (void *)0xe8;
  const a2a_comm *c, *o;
  two_comms(comm, id, other, id2, &c, &o);
  xr_rec rec[16];
  drain(rec, 16);
  static const uint32_t threads[] = {1, 2};
  for (int i = 0; i < 2; i++) {
    a2a_event g = ev_make(A2A_EV_GROUP_START);
    g.thread = threads[i];
    ev_dispatch(&g, 0);
  }
  for (int path = 0; path < 2; path++)
    for (int k = 0; k < 4; k++) {
      ck_assert_ptr_eq(a2a_comm_lookup(path ? other : comm), path ? o : c);
      a2a_event s = p2p_ev(comm, k & 1, 8, 7, 1, threads[(k >> 1) ^ (k & 1)]);
      ev_dispatch(&s, 0);
    }
  ck_assert_int_eq(drain(rec, 16), 8);
  for (int i = 0; i < 8; i++) {
    int k = i & 3;
    xr_rec want;
    memset(&want, 0, sizeof want);
    want.type = XR_REC_OP;
    want.thread = threads[(k >> 1) ^ (k & 1)];
    ck_assert_int_eq(memcmp(&rec[i], &want, offsetof(xr_rec, thread) + 4), 0);
    ck_assert_uint_eq(rec[i].u.op.comm, c->id_hash);
  }
  /* A send on no communicator (NULL) that the shim saw succeed, the
   * memo's last answer a communicator: no record (the fast path's lookup,
   * a2a_comm_lookup_last, answers NULL for NULL). */
  ck_assert_ptr_eq(a2a_comm_lookup(comm), c);
  a2a_event z = p2p_ev(NULL, 1, 8, 7, 1, 1);
  ev_dispatch(&z, 0);
  ck_assert_int_eq(drain(rec, 16), 0);
  for (int i = 0; i < 2; i++) {
    a2a_event g = ev_make(A2A_EV_GROUP_END);
    g.thread = threads[i];
    ev_dispatch(&g, 0);
  }
}
END_TEST

START_TEST(grouped_operations_make_the_thread_a_poster) {
  static unsigned char id[128] = {0x6f, 1, 2, 3};
  void *const comm = (void *)0xd5;
  comm_init(comm, id);
  xr_rec rec[8];
  drain(rec, 8);
  group_sendrecv(comm);
  ck_assert_int_eq(drain(rec, 8), 3);
  a2a_event q = ev_make(A2A_EV_STREAM_QUERY);
  q.stream = (void *)(uintptr_t)STREAM;
  q.seq += 1000;
  q.phase = A2A_POST;
  a2a_event_set_result(&q, A2A_CUDA_ERROR_NOT_READY);
  a2a_analyzer_xrank.on_event(&q);
  xr_threadstate ts[4];
  ck_assert_uint_eq(xr_blocked_snapshot(ts, 4, 0), 1);
  ck_assert_uint_eq(ts[0].thread, 1);
  ck_assert_uint_eq(ts[0].stream, STREAM);
  ck_assert_uint_eq(ts[0].flags, XR_THREAD_POLLING);
}
END_TEST

/* on_p2p's fast path publishes without asking for the background thread
 * (push_try_live): it is taken only once the thread was asked for. A
 * fork's child has asked for none, so its first grouped send asks -
 * through the reference path, with the same records - and the later ones
 * do not ask again. */
static int g_asked;
static void count_ask(void) { g_asked++; }

START_TEST(a_fork_child_asks_for_the_thread_at_its_first_grouped_send) {
  static unsigned char id[128] = {0x71, 1, 2, 3};
  void *const comm = (void *)0xd7;
  static const xr_port port = {.need_thread = count_ask};
  comm_init(comm, id);
  const a2a_comm *c = a2a_comm_lookup(comm);
  ck_assert_ptr_nonnull(c);
  xr_rec rec[8];
  group_sendrecv(comm); /* (the parent: its thread asked for by now) */
  drain(rec, 8);
  xr_set_port(&port);
  a2a_analyzer_xrank.after_fork_child();
  g_asked = 0;
  a2a_event g = ev_make(A2A_EV_GROUP_START);
  ev_dispatch(&g, 0);
  a2a_event snd = p2p_ev(comm, 1, 8, 7, 1, 1);
  ev_dispatch(&snd, 0);
  ck_assert_int_eq(g_asked, 1); /* at the send's own record */
  a2a_event rcv = p2p_ev(comm, 0, 16, 7, 1, 1);
  ev_dispatch(&rcv, 0);
  g = ev_make(A2A_EV_GROUP_END);
  ev_dispatch(&g, 0);
  ck_assert_int_eq(g_asked, 1);
  ck_assert_int_eq(drain(rec, 8), 3);
  ck_assert_int_eq(rec[0].type, XR_REC_OP);
  assert_op(&rec[0].u.op, c->id_hash, XR_OP_SEND, 8, 0x2222);
  ck_assert_int_eq(rec[1].type, XR_REC_OP);
  assert_op(&rec[1].u.op, c->id_hash, XR_OP_RECV, 16, 0x3333);
  ck_assert_int_eq(rec[2].type, XR_REC_UNIT_END);
  group_sendrecv(comm);
  ck_assert_int_eq(g_asked, 1);
  ck_assert_int_eq(drain(rec, 8), 3);
  xr_set_port(NULL);
}
END_TEST

/* A communicator made from id, and a group on it: the thread asked for,
 * on_p2p's fast path open (g_ring_live); the records drained. */
static void fast_path_open(void *comm, unsigned char *id, xr_rec *rec) {
  comm_init(comm, id);
  group_sendrecv(comm);
  drain(rec, 8);
}

/* A non-blocking split's child, made in progress (its size unknown until
 * the application sees it ready), is registered only at its first
 * operation, and pushed before it (pend_flush): on_p2p's fast path, which
 * makes no such test of its own, is not taken while a registration is
 * pending (g_ring_live), and is again once none is. */
START_TEST(a_pending_registration_goes_before_a_grouped_send) {
  static unsigned char id[128] = {0x72, 1, 2, 3};
  void *const comm = (void *)0xd8, *const child = (void *)0xd9;
  xr_rec rec[8];
  fast_path_open(comm, id, rec);
  /* The split's late POST (wrap_nccl.c: NCCL stored the child after the
   * call, not yet ready), then the application's poll that sees it ready. */
  static void *where; /* the application's ncclComm_t */
  a2a_event sp = ev_make(A2A_EV_COMM_INIT);
  sp.comm = comm;
  sp.u.init.how = A2A_INIT_SPLIT;
  sp.u.init.parent = comm;
  sp.u.init.newcomm = NULL;
  sp.u.init.awaited = &where;
  sp.u.init.nranks = sp.u.init.rank = -1;
  ev_dispatch(&sp, A2A_NCCL_IN_PROGRESS); /* the call: no child yet */
  sp.u.init.newcomm = child;
  sp.u.init.late = 1;
  ev_post(&sp, A2A_NCCL_IN_PROGRESS);
  collector_add_comm_info(child, 2, 0, 0);
  a2a_event poll = ev_make(A2A_EV_COMM_ASYNC_ERROR);
  poll.comm = child;
  poll.u.async_err.async_error = 0;
  ev_dispatch(&poll, 0);
  /* (the previous group's marker, at most: the registration is pending) */
  for (int i = 0, n = drain(rec, 8); i < n; i++) ck_assert_int_ne(rec[i].type, XR_REC_COMMREG);
  const a2a_comm *c2 = a2a_comm_lookup(child);
  ck_assert_ptr_nonnull(c2);
  ck_assert_uint_ne(c2->id_hash, 0);
  group_sendrecv(child);
  ck_assert_int_eq(drain(rec, 8), 4);
  ck_assert_int_eq(rec[0].type, XR_REC_COMMREG);
  ck_assert_uint_eq(rec[0].u.reg.reg.comm, c2->id_hash);
  ck_assert_int_eq(rec[0].u.reg.reg.nranks, 2); /* completed at the poll */
  ck_assert_int_eq(rec[1].type, XR_REC_OP);
  assert_op(&rec[1].u.op, c2->id_hash, XR_OP_SEND, 8, 0x2222);
  ck_assert_int_eq(rec[2].type, XR_REC_OP);
  ck_assert_int_eq(rec[3].type, XR_REC_UNIT_END);
  group_sendrecv(child); /* nothing pending: the OPs alone again */
  ck_assert_int_eq(drain(rec, 8), 3);
  ck_assert_int_eq(rec[0].type, XR_REC_OP);
}
END_TEST

/* A non-blocking id-based init registers at its PRE, as a blocking one
 * (ranks that disagree are told while they poll), and binds at its POST;
 * its thread waits in it while it only polls: a call of another kind ends
 * the wait, a poll of the communicator still in progress starts it again,
 * a poll of another communicator changes nothing, and one that finds it
 * ready ends it. The wait is published as polled (XR_THREAD_POLLED). */
START_TEST(a_nonblocking_init_registers_at_once_and_is_waited_in_while_polled) {
  static unsigned char id[128] = {0x75, 1, 2, 3};
  void *const comm = (void *)0xdb, *const other = (void *)0xdc;
  xr_rec rec[8];
  comm_init_as(comm, id, 0);
  ck_assert_int_eq(drain(rec, 8), 2);
  ck_assert_int_eq(rec[0].type, XR_REC_COMMREG);
  ck_assert_int_eq(rec[0].u.reg.reg.nranks, 2);
  ck_assert_int_eq(rec[1].type, XR_REC_COMMBIND);
  const a2a_comm *c = a2a_comm_lookup(comm);
  ck_assert_ptr_eq(rec[1].comm, c);
  ck_assert_uint_eq(rec[1].u.end.comm, c->id_hash);
  xr_threadstate ts[4];
  ck_assert_uint_eq(xr_blocked_snapshot(ts, 4, 0), 1);
  ck_assert_uint_eq(ts[0].wait, XR_WAIT_INIT);
  ck_assert_uint_eq(ts[0].flags, XR_THREAD_POLLED);
  ck_assert_uint_eq(ts[0].comm, c->id_hash);
  ck_assert_str_eq(xr_thread_wait_name(&ts[0]),
                   "a non-blocking ncclCommInitRank (polling ncclCommGetAsyncError)");
  a2a_event poll = ev_make(A2A_EV_COMM_ASYNC_ERROR);
  poll.comm = comm;
  poll.u.async_err.async_error = A2A_NCCL_IN_PROGRESS;
  ev_dispatch(&poll, 0);
  ck_assert_uint_eq(xr_blocked_snapshot(ts, 4, 0), 1);
  a2a_event other_call = ev_make(A2A_EV_ALLOC); /* torch allocates before it waits */
  other_call.api = "cudaMalloc";
  ev_dispatch(&other_call, 0);
  ck_assert_uint_eq(xr_blocked_snapshot(ts, 4, 0), 0);
  a2a_event poll_other = ev_make(A2A_EV_COMM_ASYNC_ERROR);
  poll_other.comm = other;
  poll_other.u.async_err.async_error = A2A_NCCL_IN_PROGRESS;
  ev_dispatch(&poll_other, 0);
  ck_assert_uint_eq(xr_blocked_snapshot(ts, 4, 0), 0);
  poll = ev_make(A2A_EV_COMM_ASYNC_ERROR);
  poll.comm = comm;
  poll.u.async_err.async_error = A2A_NCCL_IN_PROGRESS;
  ev_dispatch(&poll, 0); /* waits again */
  ck_assert_uint_eq(xr_blocked_snapshot(ts, 4, 0), 1);
  ck_assert_uint_eq(ts[0].wait, XR_WAIT_INIT);
  ck_assert_uint_eq(ts[0].flags, XR_THREAD_POLLED);
  poll = ev_make(A2A_EV_COMM_ASYNC_ERROR);
  poll.comm = comm;
  poll.u.async_err.async_error = 0; /* ready */
  ev_dispatch(&poll, 0);
  ck_assert_uint_eq(xr_blocked_snapshot(ts, 4, 0), 0);
  poll = ev_make(A2A_EV_COMM_ASYNC_ERROR);
  poll.comm = comm;
  poll.u.async_err.async_error = A2A_NCCL_IN_PROGRESS; /* (an operation's, later) */
  ev_dispatch(&poll, 0);
  ck_assert_uint_eq(xr_blocked_snapshot(ts, 4, 0), 0);
}
END_TEST

/* An analyzer made inactive (every check it owns disabled, at its init)
 * posts nothing, on_p2p's fast path included (g_ring_live), even inside a
 * group it saw open; made active again, it posts again. */
START_TEST(an_inactive_analyzer_posts_no_grouped_send) {
  static unsigned char id[128] = {0x74, 1, 2, 3};
  void *const comm = (void *)0xda;
  xr_rec rec[8];
  fast_path_open(comm, id, rec);
  a2a_event g = ev_make(A2A_EV_GROUP_START);
  ev_dispatch(&g, 0);
  a2a_event s = p2p_ev(comm, 1, 8, 7, 1, 1);
  s.phase = A2A_POST;
  a2a_event_set_result(&s, 0);
  void (*const post)(const a2a_event *) = a2a_analyzer_xrank.by_kind_post->fn[A2A_EV_P2P];
  ck_assert_ptr_nonnull(post);
  a2a_check_set none = a2a_check_set_all();
  for (int k = 0; k < A2A_CK__COUNT; k++) a2a_check_set_put(&none, (a2a_check_id)k, false);
  a2a_checks_set_enabled(&none);
  a2a_analyzer_xrank.init();
  ck_assert(!xr_active());
  post(&s);
  ck_assert_int_eq(drain(rec, 8), 0);
  a2a_check_set all = a2a_check_set_all();
  a2a_checks_set_enabled(&all);
  a2a_analyzer_xrank.init();
  ck_assert(xr_active());
  post(&s);
  ck_assert_int_eq(drain(rec, 8), 1);
  ck_assert_int_eq(rec[0].type, XR_REC_OP);
}
END_TEST

/* A nested ncclGroupEnd only counts down: the units are closed once, at
 * the outermost one (nccl-tests: one nested group per device inside an
 * outer group). */
START_TEST(nested_group_ends_close_nothing) {
  static unsigned char id[128] = {0x70, 1, 2, 3};
  void *const comm = (void *)0xd6;
  comm_init(comm, id);
  xr_rec rec[8];
  drain(rec, 8);
  a2a_event g = ev_make(A2A_EV_GROUP_START);
  ev_dispatch(&g, 0);
  ev_dispatch(&g, 0);
  a2a_event s = p2p_ev(comm, 1, 8, 7, 1, 1);
  ev_dispatch(&s, 0);
  a2a_event e = ev_make(A2A_EV_GROUP_END);
  ev_dispatch(&e, 0);
  ck_assert_int_eq(drain(rec, 8), 1);
  ck_assert_int_eq(rec[0].type, XR_REC_OP);
  ev_dispatch(&g, 0);
  a2a_event r = p2p_ev(comm, 0, 16, 7, 1, 1);
  ev_dispatch(&r, 0);
  ev_dispatch(&e, 0);
  ck_assert_int_eq(drain(rec, 8), 1);
  ck_assert_int_eq(rec[0].type, XR_REC_OP);
  ev_dispatch(&e, 0);
  ck_assert_int_eq(drain(rec, 8), 1);
  ck_assert_int_eq(rec[0].type, XR_REC_UNIT_END);
  ck_assert_uint_eq(rec[0].stream, STREAM);
}
END_TEST

/* Another thread's capture began since the run began: the run is marked
 * now and the unit gets its own event (a marker recorded later could join
 * the capture). */
START_TEST(a_capture_on_another_thread_ends_the_run) {
  static unsigned char id[128] = {0x6c, 1, 2, 3};
  void *const comm = (void *)0xd2;
  comm_init(comm, id);
  xr_rec rec[8];
  drain(rec, 8);
  group_sendrecv(comm);
  ck_assert_int_eq(drain(rec, 8), 3);
  uint32_t run = rec[2].u.unit.run;

  a2a_event cb = ev_make(A2A_EV_GRAPH_CAPTURE_BEGIN);
  cb.thread = 2;
  cb.stream = (void *)0x7700;
  ev_pre(&cb);

  group_sendrecv(comm);
  ck_assert_int_eq(drain(rec, 8), 4);
  ck_assert_int_eq(rec[2].type, XR_REC_UNIT_MARK);
  ck_assert_uint_eq(rec[2].u.unit.run, run);
  ck_assert_int_eq(rec[3].type, XR_REC_UNIT_END);
  ck_assert_int_eq(rec[3].u.unit.deferred, 0);
  ck_assert_ptr_nonnull(rec[3].event); /* its own event */
  ck_assert_ptr_eq(collector_event_stream(rec[3].event), (void *)(uintptr_t)STREAM);
}
END_TEST

/* NCCL work issued to a capturing stream is a node of the graph: nothing is
 * posted at its call; each launch of an exec of that graph posts it anew on
 * the launching thread and stream, marked a replay, the captured group as
 * one group. A later capture without NCCL work that ends with the same
 * graph handle (CUDA recycles a destroyed graph's address) holds nothing;
 * nor does an exec once destroyed. */
static int ops_in(const xr_rec *rec, int n) {
  int k = 0;
  for (int i = 0; i < n && i < 16; i++) k += rec[i].type == XR_REC_OP;
  return k;
}
static int replays(const xr_rec *rec, int n, uint64_t sid) {
  int k = 0;
  for (int i = 0; i < n && i < 16; i++)
    if (rec[i].type == XR_REC_OP) {
      ck_assert_uint_eq(rec[i].stream, sid);
      ck_assert_int_eq(rec[i].u.op.flags, XR_OPF_REPLAY);
      k++;
    }
  return k;
}
static void capture_end(void *stream, void *graph) {
  void *out = graph;
  a2a_event ce = ev_make(A2A_EV_GRAPH_CAPTURE_END);
  ce.stream = stream;
  ce.u.graph.graph_out = &out;
  ev_pre(&ce);
  collector_set_capture(stream, 0); /* (the real call ends it) */
  ev_post(&ce, 0);
}
static void instantiate(void *graph, void *exec) {
  void *out = exec;
  a2a_event in = ev_make(A2A_EV_GRAPH_INSTANTIATE);
  in.u.graph.graph = graph;
  in.u.graph.graph_out = &out;
  ev_dispatch(&in, 0);
}
static void launch(void *exec, void *stream) {
  a2a_event l = ev_make(A2A_EV_GRAPH_LAUNCH);
  l.stream = stream;
  l.u.graph.graph_exec = exec;
  ev_dispatch(&l, 0);
}
START_TEST(captured_work_is_posted_per_launch_and_recycled_handles_hold_nothing) {
  static unsigned char id[128] = {0x6d, 1, 2, 3};
  void *const comm = (void *)0xd3, *const G = (void *)0x6701, *const X = (void *)0x6801,
             *const X2 = (void *)0x6802, *const L = (void *)0x5200;
  comm_init(comm, id);
  xr_rec rec[16];
  drain(rec, 16);
  a2a_event cb = ev_make(A2A_EV_GRAPH_CAPTURE_BEGIN);
  cb.stream = (void *)(uintptr_t)STREAM;
  ev_pre(&cb);
  collector_set_capture(cb.stream, 41);
  ev_post(&cb, 0);
  group_sendrecv(comm);
  ck_assert_int_eq(drain(rec, 16), 0); /* captured: nothing posted */
  capture_end(cb.stream, G);
  instantiate(G, X);
  for (int k = 0; k < 2; k++) {
    launch(X, L);
    int n = drain(rec, 16);
    ck_assert_int_eq(replays(rec, n, xr_stream_id(L, 0)), 2);
  }
  /* After the capture ended, operations are posted at once again. */
  group_sendrecv(comm);
  ck_assert_int_ge(drain(rec, 16), 2);
  /* A capture with no NCCL work ends with G's handle again (no destroy
   * seen): G holds nothing now, nor does an exec made from it. */
  ev_pre(&cb);
  collector_set_capture(cb.stream, 42);
  ev_post(&cb, 0);
  capture_end(cb.stream, G);
  instantiate(G, X2);
  launch(X2, L);
  ck_assert_int_eq(ops_in(rec, drain(rec, 16)), 0); /* (the eager group's marker only) */
  /* X still holds the first plan until it is destroyed. */
  launch(X, L);
  ck_assert_int_eq(replays(rec, drain(rec, 16), xr_stream_id(L, 0)), 2);
  a2a_event xd = ev_make(A2A_EV_GRAPH_DESTROY);
  xd.u.graph.graph_exec = X;
  ev_dispatch(&xd, 0);
  launch(X, L);
  ck_assert_int_eq(ops_in(rec, drain(rec, 16)), 0);
}
END_TEST

/* The records of two threads' runs of the same calls are the same, byte
 * for byte, but for the thread and the completion event (each run's own
 * event from the pool: compared by whether there is one). The two runs
 * write fresh cells of the ring (calloc'd, not yet wrapped in a test), so
 * the bytes a hot record leaves unwritten (xrank_rec.h) are zero in both;
 * the records are copied whole (memcpy) so that their padding is compared
 * as the ring held it. */
static void assert_same_records(const xr_rec *a, int na, uint32_t ta, const xr_rec *b, int nb,
                                uint32_t tb) {
  ck_assert_int_eq(na, nb);
  for (int i = 0; i < na; i++) {
    xr_rec x, y;
    memcpy(&x, &a[i], sizeof x);
    memcpy(&y, &b[i], sizeof y);
    ck_assert_uint_eq(x.thread, ta);
    ck_assert_uint_eq(y.thread, tb);
    ck_assert_int_eq(x.event != NULL, y.event != NULL);
    x.thread = y.thread = 0;
    x.event = y.event = NULL;
    ck_assert_msg(!memcmp(&x, &y, sizeof x), "record %d (type %d) differs", i, (int)x.type);
  }
}

/* ---- the dispatch table's handlers against on_event ---- */

/* The calls of one thread: a group of a send and a receive, a lone
 * collective, one with no count (dropped by NCCL), a failed one, a PRE, a
 * nested group, a failed group start, a simulated group end, a stream
 * query, ncclCommGetAsyncError, and copies. */
static void drive(void (*call)(const a2a_event *), void *comm, uint32_t thread) {
  a2a_event e;
#define CALL(ph, res)            \
  do {                           \
    e.phase = (ph);              \
    e.thread = thread;           \
    a2a_event_set_result(&e, (res)); \
    call(&e);                    \
  } while (0)
  e = ev_make(A2A_EV_GROUP_START);
  CALL(A2A_PRE, 0);
  CALL(A2A_POST, 0);
  e = p2p_ev(comm, 1, 8, 7, 1, thread);
  CALL(A2A_PRE, 0);
  CALL(A2A_POST, 0);
  e = p2p_ev(comm, 0, 8, 7, 1, thread);
  e.stream = (void *)0x5200; /* a second stream in the group */
  CALL(A2A_POST, 0);
  e = ev_make(A2A_EV_GROUP_START); /* nested */
  CALL(A2A_POST, 0);
  e = p2p_ev(comm, 0, 3, 7, 1, thread);
  CALL(A2A_POST, 0);
  e = ev_make(A2A_EV_GROUP_END);
  CALL(A2A_POST, 0);
  e = ev_make(A2A_EV_GROUP_START); /* failed: no nesting */
  CALL(A2A_POST, 5);
  e = ev_make(A2A_EV_GROUP_END);
  CALL(A2A_PRE, 0);
  CALL(A2A_POST, 0);
  e = ev_make(A2A_EV_COLL);
  e.comm = comm;
  e.stream = (void *)(uintptr_t)STREAM;
  e.u.coll.coll = A2A_COLL_ALLREDUCE;
  e.u.coll.count = 8;
  e.u.coll.dtype = 7;
  e.u.coll.root = -1;
  e.u.coll.redop = 200;
  CALL(A2A_PRE, 0);
  CALL(A2A_POST, 5);
  CALL(A2A_POST, 0);
  e.u.coll.count = 0;
  CALL(A2A_POST, 0);
  e = ev_make(A2A_EV_GROUP_START);
  CALL(A2A_POST, 0);
  e = p2p_ev(comm, 1, 0, 7, 1, thread);
  CALL(A2A_POST, 0);
  e = ev_make(A2A_EV_GROUP_END);
  e.u.group.simulate = 1;
  CALL(A2A_POST, 0);
  e = ev_make(A2A_EV_STREAM_QUERY);
  e.stream = (void *)(uintptr_t)STREAM;
  CALL(A2A_POST, A2A_CUDA_ERROR_NOT_READY);
  e = ev_make(A2A_EV_COMM_ASYNC_ERROR);
  e.comm = comm;
  CALL(A2A_POST, 0);
  e = ev_make(A2A_EV_MEMCPY);
  e.u.copy.cpykind = A2A_CPY_D2D;
  e.u.copy.async = 1;
  CALL(A2A_PRE, 0);
  CALL(A2A_POST, 0);
  e.u.copy.async = 0;
  CALL(A2A_PRE, 0);
#undef CALL
}

static void by_table(const a2a_event *ev) {
  const a2a_by_kind *bk = a2a_analyzer_xrank.by_kind;
  ck_assert_ptr_nonnull(bk);
  if (bk->fn[ev->kind]) bk->fn[ev->kind](ev);
  else a2a_analyzer_xrank.on_event(ev);
}

START_TEST(table_handlers_do_what_on_event_does) {
  static unsigned char id[128] = {0x6d, 1, 2, 3};
  void *const comm = (void *)0xd3;
  comm_init(comm, id);
  xr_rec a[32], b[32];
  drain(a, 32);
  drive(a2a_analyzer_xrank.on_event, comm, 3);
  int na = drain(a, 32);
  xr_threadstate ta[8], tb[8];
  size_t nta = xr_blocked_snapshot(ta, 8, 0);
  drive(by_table, comm, 4);
  int nb = drain(b, 32);
  size_t ntb = xr_blocked_snapshot(tb, 8, 0);
  ck_assert_int_ge(na, 6);
  assert_same_records(a, na, 3, b, nb, 4);
  /* The blocked states: thread 3's synchronous copy, then also thread 4's
   * (each thread's polling episode ended with its later calls). */
  ck_assert_uint_eq(nta + 1, ntb);
  ck_assert_uint_eq(ta[0].wait, tb[ntb - 1].wait);
}
END_TEST

/* ---- nested group calls (a2a_group_row) ---- */

/* Groups of one thread, each group call through `group`: ev_dispatch
 * (every call to the kind's rows: the reference) or ev_dispatch_group (the
 * shim's rows: a nested call's leave this analyzer out). Nesting three
 * deep, a failed nested start, a failed nested end, an end without a
 * start, a failed outermost start, a failed outermost end, a simulated
 * end. */
static void nested_groups(void (*group)(a2a_event *, int), void *comm, uint32_t thread) {
  a2a_event g, o;
#define G(k, res, sim)            \
  do {                            \
    g = ev_make(k);               \
    g.thread = thread;            \
    g.u.group.simulate = (sim);   \
    group(&g, (res));             \
  } while (0)
#define OP(is_send, count)                                   \
  do {                                                       \
    o = p2p_ev(comm, (is_send), (count), 7, 1, thread);      \
    ev_dispatch(&o, 0);                                      \
  } while (0)
  const a2a_kind S = A2A_EV_GROUP_START, E = A2A_EV_GROUP_END;
  G(S, 0, 0);
  OP(1, 8);
  G(S, 0, 0);
  OP(0, 8);
  G(S, 0, 0);
  OP(1, 4);
  G(E, 0, 0);
  G(S, 5, 0); /* failed: no level */
  G(E, 3, 0); /* failed, still one level less */
  OP(0, 4);
  G(E, 0, 0); /* the outermost: closes the units */
  G(E, 5, 0); /* without a start */
  G(S, 5, 0); /* failed outermost */
  G(S, 0, 0);
  G(S, 0, 0);
  OP(1, 2);
  G(E, 0, 0);
  G(E, 3, 0); /* a failed outermost end: its units closed untracked */
  G(S, 0, 0);
  G(S, 0, 0);
  OP(0, 2);
  G(E, 0, 1);
  G(E, 0, 1); /* simulated */
  G(S, 0, 0);
  OP(1, 1);
  G(E, 0, 0);
#undef G
#undef OP
}

START_TEST(nested_group_rows_give_the_same_records) {
  static unsigned char id[128] = {0x71, 1, 2, 3};
  void *const comm = (void *)0xd7;
  comm_init(comm, id);
  xr_rec a[64], b[64];
  drain(a, 64);
  nested_groups(ev_dispatch, comm, 3);
  int na = drain(a, 64);
  nested_groups(ev_dispatch_group, comm, 4);
  int nb = drain(b, 64);
  ck_assert_int_eq(na, 11);
  assert_same_records(a, na, 3, b, nb, 4);
  int ends = 0;
  for (int i = 0; i < na; i++) ends += a[i].type == XR_REC_UNIT_END;
  ck_assert_int_eq(ends, 4); /* one per outermost end but the one without a start */
}
END_TEST

/* ---- the group end's one claim (group_end_batch) ---- */

static const uintptr_t k_streams[4] = {0x6100, 0x6200, 0x6300, 0x6400};

/* One group of thread 1: a send on each of the n streams in order (then
 * `extra` more on the last), closed by an end on `device` (group_on; in
 * two steps, group_open_on then group_end_on), `device` current for all. */
static void group_open_on(void *comm, const uintptr_t *streams, int n, int extra, int device) {
  a2a_event g = ev_make(A2A_EV_GROUP_START);
  g.device = device;
  ev_dispatch(&g, 0);
  for (int i = 0; i < n + extra; i++) {
    a2a_event s = p2p_ev(comm, 1, 8, 7, 1, 1);
    s.device = device; /* the thread's current device, as every event's head */
    s.stream = (void *)streams[i < n ? i : n - 1];
    ev_dispatch(&s, 0);
  }
}
static void group_end_on(int device) {
  a2a_event g = ev_make(A2A_EV_GROUP_END);
  g.device = device;
  ev_dispatch(&g, 0);
}
static void group_on(void *comm, const uintptr_t *streams, int n, int extra, int device) {
  group_open_on(comm, streams, n, extra, device);
  group_end_on(device);
}

/* What the background thread reads of a UNIT_END (xrank_rec.h), the same
 * in a and b: its first word (type, has_idrec, device, thread), stream,
 * event and u.unit. */
static void assert_same_unit_end(const xr_rec *a, const xr_rec *b) {
  ck_assert_int_eq(a->type, XR_REC_UNIT_END);
  ck_assert_int_eq(memcmp(a, b, offsetof(xr_rec, thread) + 4), 0);
  ck_assert_uint_eq(a->stream, b->stream);
  ck_assert_ptr_eq(a->event, b->event);
  ck_assert_uint_eq(a->u.unit.run, b->u.unit.run);
  ck_assert_uint_eq(a->u.unit.gen, b->u.unit.gen);
  ck_assert_int_eq(a->u.unit.deferred, b->u.unit.deferred);
}

/* A group over four streams whose runs its first end opened, in its
 * stream order: each later end closes the units in one claim, with the
 * records closing them stream by stream gives - byte for byte, the cells
 * being fresh (calloc'd) in both - and it gives way to that path when
 * the runs are not in the group's order, or not on the streams' device. */
START_TEST(a_group_end_in_one_claim_writes_what_stream_by_stream_writes) {
  static unsigned char id[128] = {0x75, 1, 2, 3};
  void *const comm = (void *)0xdb;
  comm_init(comm, id);
  /* (Inits first: an init flushes the thread's runs.) */
  static unsigned char id1[128] = {0x76, 1, 2, 3};
  void *const comm1 = (void *)0xdc;
  comm_init_on(comm1, id1, 1, 1);
  xr_rec rec[16], first[4];
  drain(rec, 16);
  group_on(comm, k_streams, 4, 0, 0); /* no run yet: group_close opens them */
  ck_assert_int_eq(drain(rec, 16), 8);
  memcpy(first, rec + 4, sizeof first);
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(first[i].type, XR_REC_UNIT_END);
    ck_assert_uint_eq(first[i].stream, k_streams[i]);
    ck_assert_int_eq(first[i].u.unit.deferred, 1);
  }
  group_on(comm, k_streams, 4, 0, 0); /* the runs in the group's order */
  ck_assert_int_eq(drain(rec, 16), 8);
  for (int i = 0; i < 4; i++) {
    xr_rec x, y;
    memcpy(&x, &rec[4 + i], sizeof x);
    memcpy(&y, &first[i], sizeof y);
    ck_assert_msg(!memcmp(&x, &y, sizeof x), "unit end %d differs", i);
  }
  /* The streams in the other order: each unit still joins its own
   * stream's run. */
  const uintptr_t rev[4] = {k_streams[3], k_streams[2], k_streams[1], k_streams[0]};
  group_on(comm, rev, 4, 0, 0);
  ck_assert_int_eq(drain(rec, 16), 8);
  for (int i = 0; i < 4; i++) assert_same_unit_end(&rec[4 + i], &first[3 - i]);
  /* An end with device 1 current: the units are the communicator's
   * device's (0) and join its runs, record for record (nccl-tests -g N
   * ends every group with its last device current). */
  group_on(comm, k_streams, 4, 0, 1);
  ck_assert_int_eq(drain(rec, 16), 8);
  for (int i = 0; i < 4; i++) assert_same_unit_end(&rec[4 + i], &first[i]);
  /* A communicator on device 1 over the same handles (the streams made
   * again on device 1): no run of the thread is on that device; new ones
   * open. */
  group_on(comm1, k_streams, 4, 0, 1);
  ck_assert_int_eq(drain(rec, 16), 8);
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(rec[4 + i].type, XR_REC_UNIT_END);
    ck_assert_uint_eq(rec[4 + i].stream, k_streams[i]);
    ck_assert_int_eq(rec[4 + i].device, 1);
    ck_assert_int_eq(rec[4 + i].u.unit.deferred, 1);
    for (int j = 0; j < 4; j++) ck_assert_uint_ne(rec[4 + i].u.unit.run, first[j].u.unit.run);
  }
  /* Device 0 again (its runs first in the thread's list), and a group on
   * the first two streams alone: the runs they opened. */
  group_on(comm, k_streams, 4, 0, 0);
  ck_assert_int_eq(drain(rec, 16), 8);
  for (int i = 0; i < 4; i++) assert_same_unit_end(&rec[4 + i], &first[i]);
  group_on(comm, k_streams, 2, 0, 0);
  ck_assert_int_eq(drain(rec, 16), 4);
  for (int i = 0; i < 2; i++) assert_same_unit_end(&rec[2 + i], &first[i]);
  ck_assert_uint_eq(xr_ring_drops(), 0);
}
END_TEST

/* Thread 1's runs on the four streams, in the group's order (its first
 * group's end opened them; first: that end's UNIT_END records), and a
 * second group closed in one claim with the same records. */
static void runs_in_group_order(void *comm, unsigned char *id, xr_rec first[4]) {
  xr_rec rec[16];
  comm_init(comm, id);
  drain(rec, 16);
  group_on(comm, k_streams, 4, 0, 0);
  ck_assert_int_eq(drain(rec, 16), 8);
  memcpy(first, rec + 4, 4 * sizeof *first);
  group_on(comm, k_streams, 4, 0, 0); /* the one claim */
  ck_assert_int_eq(drain(rec, 16), 8);
  for (int i = 0; i < 4; i++) assert_same_unit_end(&rec[4 + i], &first[i]);
}

/* One group of thread 1 over the four streams, its runs in the group's
 * order (the first end opened them), then another thread's destroy of
 * the third stream: the next end must not close its units in one claim
 * (the runs' generation is stale: group_end_batch's generation test).
 * Stream by stream (group_close: defer_unit), the first, second and
 * fourth streams' units join their runs (not destroyed: the same
 * UNIT_END as before), the third's run is closed untracked and a new run
 * begins there. */
START_TEST(a_group_end_after_a_destroy_does_not_take_the_one_claim) {
  static unsigned char id[128] = {0x77, 1, 2, 3};
  void *const comm = (void *)0xdd;
  xr_rec rec[16], first[4];
  runs_in_group_order(comm, id, first);

  a2a_event d = ev_make(A2A_EV_STREAM_DESTROY);
  d.thread = 2;
  d.stream = (void *)k_streams[2];
  ev_dispatch(&d, 0);
  ck_assert_int_eq(drain(rec, 16), 0);

  group_on(comm, k_streams, 4, 0, 0);
  ck_assert_int_eq(drain(rec, 16), 9);
  for (int i = 0; i < 4; i++) ck_assert_int_eq(rec[i].type, XR_REC_OP);
  assert_same_unit_end(&rec[4], &first[0]);
  assert_same_unit_end(&rec[5], &first[1]);
  ck_assert_int_eq(rec[6].type, XR_REC_UNIT_MARK); /* the old run, untracked */
  ck_assert_uint_eq(rec[6].stream, k_streams[2]);
  ck_assert_uint_eq(rec[6].u.unit.run, first[2].u.unit.run);
  ck_assert_ptr_null(rec[6].event);
  ck_assert_int_eq(rec[7].type, XR_REC_UNIT_END);
  ck_assert_uint_eq(rec[7].stream, k_streams[2]);
  ck_assert_ptr_null(rec[7].event);
  ck_assert_int_eq(rec[7].u.unit.deferred, 1);
  ck_assert_uint_ne(rec[7].u.unit.gen, first[2].u.unit.gen); /* begun after the destroy */
  for (int j = 0; j < 4; j++) ck_assert_uint_ne(rec[7].u.unit.run, first[j].u.unit.run);
  assert_same_unit_end(&rec[8], &first[3]);
  ck_assert_uint_eq(xr_ring_drops(), 0);
}
END_TEST

/* Another thread's capture begun between two groups whose runs are in the
 * group's order: the end must not close its units in one claim
 * (group_end_batch's capture test). Stream by stream, each run is marked
 * now, untracked (a marker recorded now could join the capture), and each
 * unit gets its own event on its stream; once the capture ended, the next
 * end opens new runs, and the one after closes in one claim again. */
START_TEST(a_group_end_during_a_capture_does_not_take_the_one_claim) {
  static unsigned char id[128] = {0x78, 1, 2, 3};
  void *const comm = (void *)0xde;
  xr_rec rec[16], first[4];
  runs_in_group_order(comm, id, first);

  a2a_event cb = ev_make(A2A_EV_GRAPH_CAPTURE_BEGIN);
  cb.thread = 2;
  cb.stream = (void *)0x7700;
  ev_pre(&cb);
  ck_assert_int_eq(drain(rec, 16), 0);

  group_on(comm, k_streams, 4, 0, 0);
  ck_assert_int_eq(drain(rec, 16), 12);
  for (int i = 0; i < 4; i++) ck_assert_int_eq(rec[i].type, XR_REC_OP);
  for (int i = 0; i < 4; i++) {
    const xr_rec *m = &rec[4 + 2 * i], *e = &rec[5 + 2 * i];
    ck_assert_int_eq(m->type, XR_REC_UNIT_MARK);
    ck_assert_uint_eq(m->stream, k_streams[i]);
    ck_assert_uint_eq(m->u.unit.run, first[i].u.unit.run);
    ck_assert_ptr_null(m->event);
    ck_assert_int_eq(e->type, XR_REC_UNIT_END);
    ck_assert_uint_eq(e->stream, k_streams[i]);
    ck_assert_int_eq(e->u.unit.deferred, 0);
    ck_assert_ptr_nonnull(e->event); /* its own event */
    ck_assert_ptr_eq(collector_event_stream(e->event), (void *)k_streams[i]);
  }

  a2a_event ce = ev_make(A2A_EV_GRAPH_CAPTURE_END);
  ce.thread = 2;
  ce.stream = (void *)0x7700;
  collector_set_capture(ce.stream, 77); /* (capturing until the real call) */
  ev_pre(&ce);
  collector_set_capture(ce.stream, 0);
  ev_post(&ce, 0);
  drain(rec, 16);
  group_on(comm, k_streams, 4, 0, 0); /* no run: new ones open */
  ck_assert_int_eq(drain(rec, 16), 8);
  memcpy(first, rec + 4, sizeof first);
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(first[i].type, XR_REC_UNIT_END);
    ck_assert_uint_eq(first[i].stream, k_streams[i]);
    ck_assert_int_eq(first[i].u.unit.deferred, 1);
    ck_assert_ptr_null(first[i].event);
  }
  group_on(comm, k_streams, 4, 0, 0);
  ck_assert_int_eq(drain(rec, 16), 8);
  for (int i = 0; i < 4; i++) assert_same_unit_end(&rec[4 + i], &first[i]);
  ck_assert_uint_eq(xr_ring_drops(), 0);
}
END_TEST

/* What late_consumer (below) popped, in order. */
static xr_rec g_popped[1100];
static int g_npopped;

/* Set by the producer when all it has left to push is the group end's. */
static _Atomic int g_at_end;

/* A background consumer that starts late - once the producer is at its
 * group end, and a moment more so that the end finds the ring full - and
 * pops `want` records, giving up after a second without one. */
static void *late_consumer(void *arg) {
  int want = (int)(intptr_t)arg;
  while (!atomic_load(&g_at_end)) sched_yield();
  struct timespec ts = {0, 20 * 1000 * 1000};
  nanosleep(&ts, NULL);
  int idle = 0;
  while (g_npopped < want && idle < 10000) {
    if (xr_ring_pop(&g_popped[g_npopped])) {
      g_npopped++;
      idle = 0;
    } else {
      idle++;
      struct timespec t = {0, 100 * 1000};
      nanosleep(&t, NULL);
    }
  }
  return NULL;
}

/* The smallest ring (1024 records): a group end whose cells wrap past the
 * ring's end, or begin there, gives the same records as anywhere else;
 * one whose cells are not all free (the consumer behind: four records to
 * close, two free cells) waits for room (backpressure) and gives them in
 * order, none dropped, none of the consumer's unread records overwritten. */
START_TEST(a_group_end_across_the_ring_wrap_and_at_a_full_ring) {
  static unsigned char id[128] = {0x76, 1, 2, 3};
  void *const comm = (void *)0xdc;
  collector_options()->xrank_queue = 1024;
  comm_init(comm, id);
  xr_rec rec[16], first[4];
  long popped = drain(NULL, 0); /* the ring's position: records popped */
  group_on(comm, k_streams, 4, 0, 0);
  ck_assert_int_eq(drain(rec, 16), 8);
  popped += 8;
  memcpy(first, rec + 4, sizeof first);
  /* The ends' four cells from 1020 (the last four) to 1024 (the first
   * four): each lone send is one record (OP_UNIT) before the group. */
  for (long at = 1020; at <= 1024; at++) {
    while ((popped + 4) % 1024 != at % 1024) {
      a2a_event s = p2p_ev(comm, 1, 8, 7, 1, 1);
      s.stream = (void *)k_streams[0];
      ev_dispatch(&s, 0);
      ck_assert_int_eq(drain(rec, 16), 1);
      ck_assert_int_eq(rec[0].type, XR_REC_OP_UNIT);
      popped++;
    }
    group_on(comm, k_streams, 4, 0, 0);
    ck_assert_int_eq(drain(rec, 16), 8);
    popped += 8;
    for (int i = 0; i < 4; i++) assert_same_unit_end(&rec[4 + i], &first[i]);
  }
  /* A full ring: the position at 100 of a lap; a group of 1022 sends
   * (the last 1019 on the fourth stream) leaves two cells free. */
  while (popped % 1024 != 100) {
    a2a_event s = p2p_ev(comm, 1, 8, 7, 1, 1);
    s.stream = (void *)k_streams[0];
    ev_dispatch(&s, 0);
    popped += drain(rec, 16);
  }
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, late_consumer, (void *)(intptr_t)1026), 0);
  group_open_on(comm, k_streams, 4, 1018, 0);
  atomic_store(&g_at_end, 1);
  group_end_on(0);
  pthread_join(th, NULL);
  ck_assert_int_eq(g_npopped, 1026);
  for (int i = 0; i < 1022; i++) {
    ck_assert_int_eq(g_popped[i].type, XR_REC_OP);
    ck_assert_uint_eq(g_popped[i].stream, k_streams[i < 4 ? i : 3]);
  }
  for (int i = 0; i < 4; i++) assert_same_unit_end(&g_popped[1022 + i], &first[i]);
  ck_assert_int_eq(drain(NULL, 0), 0);
  ck_assert_uint_eq(xr_ring_drops(), 0);
  /* And in one claim again once the consumer caught up. */
  group_on(comm, k_streams, 4, 0, 0);
  ck_assert_int_eq(drain(rec, 16), 8);
  for (int i = 0; i < 4; i++) assert_same_unit_end(&rec[4 + i], &first[i]);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("xrank_ops");
  TCase *tc = tcase_create("xrank_ops");
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_set_timeout(tc, 20);
  tcase_add_test(tc, grouped_records_carry_what_the_background_thread_reads);
  tcase_add_test(tc, grouped_records_without_the_memo_are_the_same);
  tcase_add_test(tc, grouped_collective_records_on_both_paths_are_the_same);
  tcase_add_test(tc, grouped_records_follow_a_reused_handle);
  tcase_add_test(tc, a_destroy_on_another_thread_ends_the_run);
  tcase_add_test(tc, units_on_several_streams_join_their_runs);
  tcase_add_test(tc, group_stream_set_alternating_streams);
  tcase_add_test(tc, group_stream_set_follows_the_previous_group);
  tcase_add_test(tc, grouped_records_name_their_own_thread_between_open_groups);
  tcase_add_test(tc, grouped_operations_make_the_thread_a_poster);
  tcase_add_test(tc, nested_group_ends_close_nothing);
  tcase_add_test(tc, nested_group_rows_give_the_same_records);
  tcase_add_test(tc, a_fork_child_asks_for_the_thread_at_its_first_grouped_send);
  tcase_add_test(tc, a_pending_registration_goes_before_a_grouped_send);
  tcase_add_test(tc, a_nonblocking_init_registers_at_once_and_is_waited_in_while_polled);
  tcase_add_test(tc, an_inactive_analyzer_posts_no_grouped_send);
  tcase_add_test(tc, a_capture_on_another_thread_ends_the_run);
  tcase_add_test(tc, captured_work_is_posted_per_launch_and_recycled_handles_hold_nothing);
  tcase_add_test(tc, table_handlers_do_what_on_event_does);
  tcase_add_test(tc, a_group_end_in_one_claim_writes_what_stream_by_stream_writes);
  tcase_add_test(tc, a_group_end_after_a_destroy_does_not_take_the_one_claim);
  tcase_add_test(tc, a_group_end_during_a_capture_does_not_take_the_one_claim);
  tcase_add_test(tc, a_group_end_across_the_ring_wrap_and_at_a_full_ring);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  /* Each test in its own process: a fresh ring (allocated once per
   * process, zeroed), which assert_same_records' byte comparison needs,
   * whatever CK_FORK says. */
  srunner_set_fork_status(sr, CK_FORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
