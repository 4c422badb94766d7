/* test_xrank_match.c - the coordinator's matcher over synthetic fingerprint
 * streams: p2p size and dtype mismatches (naming both ranks, sizes and
 * sites), reordering within a group, zero counts, collectives (order and
 * argument mismatches), split comms, registrations, unmatched p2p, flush,
 * and a 1,024-rank communicator (matching, mismatches, pending, ends). */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "a2a_core.h"
#include "a2a_event.h"
#include "xrank_match.h"

typedef struct got {
  int conn;
  char check[48];
  char text[800];
  uint64_t site;
  int sev;
  uint32_t rank_p1;
} got;
static got g_got[256];
static int g_n;

static void on_verdict(void *ctx, int conn, const xr_verdict *v) {
  (void)ctx;
  if (g_n >= 256) return;
  got *g = &g_got[g_n++];
  g->conn = conn;
  snprintf(g->check, sizeof g->check, "%s", a2a_check_name((a2a_check_id)v->check));
  snprintf(g->text, sizeof g->text, "%s", v->text);
  g->site = v->site;
  g->sev = v->severity;
  g->rank_p1 = v->rank_p1;
}

static const char *site_name(void *ctx, int conn, uint64_t site) {
  static char b[64];
  (void)ctx;
  snprintf(b, sizeof b, "moe.py:%d(conn%d)", (int)site, conn);
  return b;
}

static int count(const char *check) {
  int n = 0;
  for (int i = 0; i < g_n; i++) n += strcmp(g_got[i].check, check) == 0;
  return n;
}
static const got *find(const char *check, int conn) {
  for (int i = 0; i < g_n; i++)
    if (strcmp(g_got[i].check, check) == 0 && (conn < 0 || g_got[i].conn == conn)) return &g_got[i];
  return NULL;
}

/* ncclFloat32 = 7, ncclInt8 = 0, ncclFloat16 = 6 */
enum { F32 = 7, I8 = 0, F16 = 6 };

static xr_matcher *mk(int nranks, uint64_t comm) {
  g_n = 0;
  xr_match_out out = {.verdict = on_verdict, .site_name = site_name};
  xr_matcher *m = xr_matcher_new(&out);
  for (int r = 0; r < nranks; r++) {
    char host[16];
    snprintf(host, sizeof host, "h%d", r);
    xr_matcher_hello(m, r, 100 + r, r, host);
    xr_commreg reg = {.comm = comm, .nranks = nranks, .rank = r, .device = 0, .site = 1};
    xr_matcher_register(m, r, &reg);
  }
  return m;
}

static xr_op p2p(uint64_t comm, int rank, int kind, int peer, uint64_t count, int dtype,
                 uint32_t group, uint64_t site) {
  return (xr_op){.comm = comm, .rank = rank, .kind = (uint16_t)kind, .peer = peer,
                 .count = count, .dtype = (int8_t)dtype, .group = group, .site = site,
                 .coll = -1, .redop = -1, .root = -1};
}
static xr_op coll(uint64_t comm, int rank, int c, uint64_t count, int dtype, int redop) {
  return (xr_op){.comm = comm, .rank = rank, .kind = XR_OP_COLL, .peer = -1, .count = count,
                 .dtype = (int8_t)dtype, .coll = (int8_t)c, .redop = (int8_t)redop, .root = -1,
                 .site = 50};
}

/* Grouped all-to-all on 4 ranks with unequal splits: rank r sends (r+1)*(p+1)
 * elements to p. Posting orders differ per rank (recvs first on odd ranks,
 * peers reversed on rank 2): no finding. */
static void alltoall(xr_matcher *m, uint64_t comm, int n, uint32_t group, int bad_recv_at2_from1) {
  for (int r = 0; r < n; r++) {
    for (int k = 0; k < n; k++) {
      int p = r == 2 ? n - 1 - k : k;
      xr_op s = p2p(comm, r, XR_OP_SEND, p, (uint64_t)(r + 1) * (p + 1), F32, group, 88);
      uint64_t rc = (uint64_t)(p + 1) * (r + 1);
      if (bad_recv_at2_from1 && r == 2 && p == 1) rc /= 4;
      xr_op v = p2p(comm, r, XR_OP_RECV, p, rc, F32, group, 91);
      if (r & 1) { xr_matcher_op(m, r, &v); xr_matcher_op(m, r, &s); }
      else { xr_matcher_op(m, r, &s); xr_matcher_op(m, r, &v); }
    }
  }
}

START_TEST(alltoall_clean_with_reordering) {
  xr_matcher *m = mk(4, 0xc0);
  for (uint32_t g = 1; g <= 50; g++) alltoall(m, 0xc0, 4, g, 0);
  ck_assert_int_eq(g_n, 0);
  for (int r = 0; r < 4; r++) ck_assert_uint_eq(xr_matcher_pending(m, r), 0);
  xr_matcher_free(m);
}
END_TEST

START_TEST(p2p_size_mismatch_names_both) {
  xr_matcher *m = mk(4, 0xc0);
  alltoall(m, 0xc0, 4, 1, 0);
  alltoall(m, 0xc0, 4, 2, 1);
  alltoall(m, 0xc0, 4, 3, 1); /* repeated: deduplicated */
  ck_assert_int_eq(count("size.p2p-mismatch"), 2);
  const got *a = find("size.p2p-mismatch", 1), *b = find("size.p2p-mismatch", 2);
  ck_assert_ptr_nonnull(a);
  ck_assert_ptr_nonnull(b);
  /* rank 1 sends 2*3=6 floats = 24 B to rank 2, rank 2 receives 1 float = 4 B. */
  ck_assert_ptr_nonnull(strstr(a->text, "rank 1 sends 24 B"));
  ck_assert_ptr_nonnull(strstr(a->text, "rank 2 receives 4 B"));
  ck_assert_ptr_nonnull(strstr(a->text, "group #2"));
  ck_assert_ptr_nonnull(strstr(a->text, "moe.py:88(conn1)"));
  ck_assert_ptr_nonnull(strstr(a->text, "moe.py:91(conn2)"));
  ck_assert_uint_eq(a->site, 88); /* each rank gets its own site */
  ck_assert_uint_eq(b->site, 91);
  ck_assert_int_eq(a->sev, A2A_SEV_ERROR);
  xr_matcher_free(m);
}
END_TEST

START_TEST(dtype_mismatch_same_bytes_is_warning) {
  xr_matcher *m = mk(2, 7);
  xr_op s = p2p(7, 0, XR_OP_SEND, 1, 8, F32, 1, 1);   /* 32 B */
  xr_op r = p2p(7, 1, XR_OP_RECV, 0, 16, F16, 1, 2);  /* 32 B */
  xr_matcher_op(m, 1, &r);
  xr_matcher_op(m, 0, &s);
  ck_assert_int_eq(count("size.dtype-mismatch"), 2);
  ck_assert_int_eq(count("size.p2p-mismatch"), 0);
  ck_assert_int_eq(find("size.dtype-mismatch", 0)->sev, A2A_SEV_WARNING);
  xr_matcher_free(m);
}
END_TEST

START_TEST(zero_counts_match_and_mismatch) {
  xr_matcher *m = mk(2, 7);
  xr_op s = p2p(7, 0, XR_OP_SEND, 1, 0, F32, 1, 1);
  xr_op r = p2p(7, 1, XR_OP_RECV, 0, 0, I8, 1, 2);   /* 0 B either way */
  xr_matcher_op(m, 0, &s);
  xr_matcher_op(m, 1, &r);
  ck_assert_int_eq(g_n, 0);
  s = p2p(7, 0, XR_OP_SEND, 1, 0, F32, 2, 1);
  r = p2p(7, 1, XR_OP_RECV, 0, 3, F32, 2, 2);
  xr_matcher_op(m, 0, &s);
  xr_matcher_op(m, 1, &r);
  ck_assert_int_eq(count("size.p2p-mismatch"), 2);
  ck_assert_ptr_nonnull(strstr(g_got[0].text, "rank 0 sends 0 B"));
  xr_matcher_free(m);
}
END_TEST

/* Within a group, two sends to the same peer are matched in posting order:
 * a receiver that swaps them gets two mismatches (it is a real bug). */
START_TEST(same_pair_order_matters) {
  xr_matcher *m = mk(2, 7);
  xr_op s1 = p2p(7, 0, XR_OP_SEND, 1, 100, F32, 1, 1), s2 = p2p(7, 0, XR_OP_SEND, 1, 200, F32, 1, 1);
  xr_op r1 = p2p(7, 1, XR_OP_RECV, 0, 200, F32, 1, 2), r2 = p2p(7, 1, XR_OP_RECV, 0, 100, F32, 1, 2);
  xr_matcher_op(m, 0, &s1);
  xr_matcher_op(m, 0, &s2);
  xr_matcher_op(m, 1, &r1);
  xr_matcher_op(m, 1, &r2);
  ck_assert_int_eq(count("size.p2p-mismatch"), 2); /* first one, deduplicated per pair */
  xr_matcher_free(m);
}
END_TEST

START_TEST(collective_count_and_order) {
  xr_matcher *m = mk(3, 5);
  for (int r = 0; r < 3; r++) {
    xr_op o = coll(5, r, A2A_COLL_ALLREDUCE, 1024, F32, 0);
    xr_matcher_op(m, r, &o);
  }
  ck_assert_int_eq(g_n, 0);
  for (int r = 0; r < 3; r++) {
    xr_op o = coll(5, r, A2A_COLL_ALLREDUCE, r == 1 ? 1000 : 1024, F32, 0);
    xr_matcher_op(m, r, &o);
  }
  ck_assert_int_eq(count("size.collective-mismatch"), 2); /* rank 1 and the reference */
  const got *g = find("size.collective-mismatch", 1);
  ck_assert_ptr_nonnull(g);
  ck_assert_ptr_nonnull(strstr(g->text, "rank 1 calls ncclAllReduce(count 1000"));
  ck_assert_ptr_nonnull(strstr(g->text, "count 1024"));
  ck_assert_ptr_nonnull(strstr(g->text, "collective #2"));
  g_n = 0;
  for (int r = 0; r < 3; r++) {
    xr_op o = coll(5, r, r == 2 ? A2A_COLL_ALLGATHER : A2A_COLL_ALLREDUCE, 1024, F32, r == 2 ? -1 : 0);
    xr_matcher_op(m, r, &o);
  }
  ck_assert_int_eq(count("group.order-mismatch"), 2);
  ck_assert_ptr_nonnull(find("group.order-mismatch", 2));
  ck_assert_ptr_nonnull(strstr(find("group.order-mismatch", 2)->text, "ncclAllGather"));
  xr_matcher_free(m);
}
END_TEST

/* A split comm matches independently of its parent. */
START_TEST(split_comms_independent) {
  xr_matcher *m = mk(4, 0xaa);
  for (int r = 0; r < 4; r++) {
    xr_commreg reg = {.comm = 0xb0 + (uint64_t)(r & 1), .parent = 0xaa, .nranks = 2, .rank = r / 2,
                      .device = r, .how = A2A_INIT_SPLIT, .color = r & 1, .split_index = 0};
    xr_matcher_register(m, r, &reg);
  }
  ck_assert_int_eq(g_n, 0);
  for (int r = 0; r < 4; r++) {
    xr_op o = coll(0xb0 + (uint64_t)(r & 1), r / 2, A2A_COLL_ALLREDUCE, (r & 1) ? 8 : 16, F32, 0);
    xr_matcher_op(m, r, &o);
    xr_op p = coll(0xaa, r, A2A_COLL_ALLREDUCE, 64, F32, 0);
    xr_matcher_op(m, r, &p);
  }
  ck_assert_int_eq(g_n, 0);
  xr_matcher_free(m);
}
END_TEST

START_TEST(registration_mismatches) {
  xr_matcher *m = mk(2, 1);
  /* A third process claims rank 1 again. */
  xr_matcher_hello(m, 2, 300, 2, "h0");
  xr_commreg dup = {.comm = 1, .nranks = 2, .rank = 1, .site = 9};
  xr_matcher_register(m, 2, &dup);
  ck_assert_int_ge(count("group.init-mismatch"), 2);
  ck_assert_ptr_nonnull(find("group.init-mismatch", 2));
  ck_assert_ptr_nonnull(find("group.init-mismatch", 1));
  ck_assert_ptr_nonnull(strstr(find("group.init-mismatch", 2)->text, "claimed twice, by pid 101"));
  /* The same process creates its rank of the id again (an id used again
   * after a re-initialization): said so, not "by pid 100 and by pid 100". */
  g_n = 0;
  xr_commreg again = {.comm = 1, .nranks = 2, .rank = 0, .site = 9};
  xr_matcher_register(m, 0, &again);
  ck_assert_ptr_nonnull(find("group.init-mismatch", 0));
  ck_assert_ptr_nonnull(strstr(find("group.init-mismatch", 0)->text, "created twice by pid 100"));
  ck_assert_ptr_null(strstr(find("group.init-mismatch", 0)->text, "claimed twice"));
  g_n = 0;
  xr_commreg bad = {.comm = 1, .nranks = 3, .rank = 2, .site = 9};
  xr_matcher_register(m, 2, &bad);
  ck_assert_ptr_nonnull(find("group.init-mismatch", 2));
  ck_assert_ptr_nonnull(strstr(find("group.init-mismatch", 2)->text, "nranks=3"));
  /* Same host, same device, two processes. */
  g_n = 0;
  xr_matcher_hello(m, 3, 400, 3, "hx");
  xr_matcher_hello(m, 4, 401, 4, "hx");
  xr_commreg a = {.comm = 2, .nranks = 2, .rank = 0, .device = 3};
  xr_commreg b = {.comm = 2, .nranks = 2, .rank = 1, .device = 3};
  xr_matcher_register(m, 3, &a);
  xr_matcher_register(m, 4, &b);
  ck_assert_int_eq(count("group.duplicate-device"), 2);
  /* Two splits of one parent sharing a color at different positions are
   * legitimate; members of one split disagreeing on its size are not. */
  g_n = 0;
  xr_commreg s0 = {.comm = 0x51, .parent = 2, .nranks = 2, .rank = 0, .how = A2A_INIT_SPLIT,
                   .color = 0, .split_index = 0, .device = 0};
  xr_commreg s1 = {.comm = 0x52, .parent = 2, .nranks = 1, .rank = 0, .how = A2A_INIT_SPLIT,
                   .color = 0, .split_index = 1, .device = 1};
  xr_matcher_register(m, 3, &s0);
  xr_matcher_register(m, 4, &s1);
  ck_assert_int_eq(g_n, 0);
  xr_commreg s2 = {.comm = 0x51, .parent = 2, .nranks = 3, .rank = 1, .how = A2A_INIT_SPLIT,
                   .color = 0, .split_index = 0, .device = 2};
  xr_matcher_register(m, 4, &s2);
  ck_assert_int_eq(count("group.init-mismatch"), 2);
  xr_matcher_free(m);
}
END_TEST

START_TEST(unmatched_when_peer_ends_and_flush) {
  xr_matcher *m = mk(4, 3);
  for (uint32_t g = 1; g <= 3; g++) alltoall(m, 3, 4, g, 0);
  /* Group 4: rank 3 skips it; others post theirs. */
  for (int r = 0; r < 3; r++)
    for (int p = 0; p < 4; p++) {
      xr_op s = p2p(3, r, XR_OP_SEND, p, 1, F32, 4, 88), v = p2p(3, r, XR_OP_RECV, p, 1, F32, 4, 91);
      if (p == 3 || r != p) { xr_matcher_op(m, r, &s); xr_matcher_op(m, r, &v); }
      else { xr_matcher_op(m, r, &s); xr_matcher_op(m, r, &v); }
    }
  ck_assert_int_eq(g_n, 0);
  ck_assert_uint_gt(xr_matcher_pending(m, 0), 0);
  ck_assert_uint_eq(xr_matcher_pending(m, 3), 0);
  xr_matcher_comm_end(m, 3, 3, 3, A2A_END_DESTROY);
  ck_assert_int_ge(count("size.unmatched-p2p"), 3);
  const got *g = find("size.unmatched-p2p", 0);
  ck_assert_ptr_nonnull(g);
  ck_assert_ptr_nonnull(strstr(g->text, "rank 3 ended the communicator"));
  ck_assert_ptr_nonnull(xr_matcher_last_mismatch(m, 3));
  /* Nothing left to wait for once the peer is gone. */
  ck_assert_uint_eq(xr_matcher_pending(m, 0), 0);
  xr_matcher_free(m);
  /* A send posted after the peer ended is reported at once. */
  m = mk(2, 4);
  xr_matcher_comm_end(m, 1, 4, 1, A2A_END_DESTROY);
  ck_assert_int_eq(g_n, 0);
  xr_op late = p2p(4, 0, XR_OP_SEND, 1, 1, F32, 5, 93);
  xr_matcher_op(m, 0, &late);
  ck_assert_ptr_nonnull(find("size.unmatched-p2p", 0));
  ck_assert_ptr_nonnull(strstr(find("size.unmatched-p2p", 0)->text, "already ended"));
  ck_assert_uint_eq(find("size.unmatched-p2p", 0)->site, 93);
  xr_matcher_free(m);
}
END_TEST

/* A rank that posted its collectives and ended (the comm's end at exit)
 * while a peer's connection is still in its handshake: its collectives
 * can still match - they stay pending (its exit waits for the verdict)
 * until the peer's arrive; the e2e coll_dtype scenario lost its dtype
 * verdict on every rank but the late one when ending made them "never
 * matching". Collectives numbered beyond what an ended rank posted never
 * match: not pending. */
START_TEST(collectives_pending_after_end_until_late_peer) {
  g_n = 0;
  xr_match_out out = {.verdict = on_verdict, .site_name = site_name};
  xr_matcher *m = xr_matcher_new(&out);
  for (int r = 1; r < 4; r++) {
    char host[16];
    snprintf(host, sizeof host, "h%d", r);
    xr_matcher_hello(m, r, 100 + r, r, host);
    xr_commreg reg = {.comm = 9, .nranks = 4, .rank = r, .device = 0, .site = 1};
    xr_matcher_register(m, r, &reg);
  }
  for (int it = 0; it < 2; it++)
    for (int r = 1; r < 4; r++) {
      xr_op o = coll(9, r, A2A_COLL_ALLREDUCE, r < 2 ? 1024 : 2048, r < 2 ? F32 : F16, 0);
      xr_matcher_op(m, r, &o);
    }
  for (int r = 1; r < 4; r++) xr_matcher_comm_end(m, r, 9, r, A2A_END_DESTROY);
  for (int r = 1; r < 4; r++) ck_assert_uint_eq(xr_matcher_pending(m, r), 2);
  ck_assert_uint_eq(xr_matcher_pending_rank(m, 2, 9, 2), 2);
  ck_assert_int_eq(g_n, 0);
  /* Rank 0's connection comes late, with the same two collectives. */
  xr_matcher_hello(m, 0, 100, 0, "h0");
  xr_commreg reg0 = {.comm = 9, .nranks = 4, .rank = 0, .device = 0, .site = 1};
  xr_matcher_register(m, 0, &reg0);
  for (int it = 0; it < 2; it++) {
    xr_op o = coll(9, 0, A2A_COLL_ALLREDUCE, 1024, F32, 0);
    xr_matcher_op(m, 0, &o);
  }
  ck_assert_ptr_nonnull(find("size.dtype-mismatch", 2));
  ck_assert_ptr_nonnull(find("size.dtype-mismatch", 3));
  for (int r = 0; r < 4; r++) ck_assert_uint_eq(xr_matcher_pending(m, r), 0);
  xr_matcher_free(m);
  /* Rank 3 ends after one collective; the others posted three: only
   * their second and third can never match. */
  m = mk(4, 10);
  for (int r = 0; r < 4; r++)
    for (int k = 0; k < (r == 3 ? 1 : 3); k++) {
      xr_op o = coll(10, r, A2A_COLL_ALLREDUCE, 64, F32, 0);
      xr_matcher_op(m, r, &o);
    }
  ck_assert_uint_eq(xr_matcher_pending(m, 0), 2);
  xr_matcher_comm_end(m, 3, 10, 3, A2A_END_DESTROY);
  for (int r = 0; r < 4; r++) ck_assert_uint_eq(xr_matcher_pending(m, r), 0);
  xr_matcher_free(m);
  /* Rank 3 ends with two queued, the others posted one: rank 3's first
   * matched, its second waits for theirs. */
  m = mk(4, 11);
  for (int r = 0; r < 4; r++)
    for (int k = 0; k < (r == 3 ? 2 : 1); k++) {
      xr_op o = coll(11, r, A2A_COLL_ALLREDUCE, 64, F32, 0);
      xr_matcher_op(m, r, &o);
    }
  xr_matcher_comm_end(m, 3, 11, 3, A2A_END_DESTROY);
  ck_assert_uint_eq(xr_matcher_pending(m, 3), 1);
  ck_assert_uint_eq(xr_matcher_pending(m, 0), 0);
  xr_matcher_free(m);
}
END_TEST

/* Per rank and comm (the wait at ncclCommDestroy): pending until the
 * peer's counterpart arrives (then the verdict was emitted first), or the
 * peer ends the comm (then size.unmatched-p2p was); other comms and other
 * ranks do not count. */
START_TEST(pending_rank_per_comm) {
  xr_matcher *m = mk(2, 7);
  xr_commreg reg1 = {.comm = 8, .nranks = 2, .rank = 0, .site = 1};
  xr_matcher_register(m, 0, &reg1);
  reg1.rank = 1;
  xr_matcher_register(m, 1, &reg1);
  xr_op s = p2p(7, 0, XR_OP_SEND, 1, 64, F32, 1, 88);
  xr_matcher_op(m, 0, &s);
  xr_op other = p2p(8, 1, XR_OP_SEND, 0, 8, F32, 1, 89); /* comm 8, rank 1 */
  xr_matcher_op(m, 1, &other);
  ck_assert_uint_eq(xr_matcher_pending_rank(m, 0, 7, 0), 1);
  ck_assert_uint_eq(xr_matcher_pending_rank(m, 0, 8, 0), 0);
  ck_assert_uint_eq(xr_matcher_pending_rank(m, 1, 7, 1), 0);
  ck_assert_uint_eq(xr_matcher_pending_rank(m, 1, 8, 1), 1);
  ck_assert_uint_eq(xr_matcher_pending_rank(m, 1, 7, 0), 0); /* rank 0 is not conn 1's */
  ck_assert_uint_eq(xr_matcher_pending_rank(m, 0, 99, 0), 0); /* unknown comm */
  ck_assert_uint_eq(xr_matcher_pending_rank(m, 0, 7, 5), 0);  /* rank outside */
  /* The receive arrives short: the verdict goes out, nothing is pending. */
  xr_op v = p2p(7, 1, XR_OP_RECV, 0, 48, F32, 1, 91);
  xr_matcher_op(m, 1, &v);
  ck_assert_ptr_nonnull(find("size.p2p-mismatch", 0));
  ck_assert_uint_eq(xr_matcher_pending_rank(m, 0, 7, 0), 0);
  /* Rank 0 never receives rank 1's send on comm 8: settled when rank 0
   * ends comm 8, with the verdict to rank 1 first. */
  xr_matcher_comm_end(m, 0, 8, 0, A2A_END_DESTROY);
  ck_assert_ptr_nonnull(find("size.unmatched-p2p", 1));
  ck_assert_uint_eq(xr_matcher_pending_rank(m, 1, 8, 1), 0);
  xr_matcher_free(m);
}
END_TEST

START_TEST(ops_from_wrong_conn_or_unknown_comm_ignored) {
  xr_matcher *m = mk(2, 1);
  xr_op s = p2p(1, 0, XR_OP_SEND, 1, 8, F32, 1, 1);
  xr_matcher_op(m, 1, &s);         /* conn 1 is rank 1, not rank 0 */
  xr_op u = p2p(99, 0, XR_OP_SEND, 1, 8, F32, 1, 1);
  xr_matcher_op(m, 0, &u);
  xr_op bad = p2p(1, 0, XR_OP_SEND, 7, 8, F32, 1, 1); /* peer out of range */
  xr_matcher_op(m, 0, &bad);
  ck_assert_int_eq(g_n, 0);
  ck_assert_uint_eq(xr_matcher_pending(m, 0), 0);
  xr_matcher_free(m);
}
END_TEST

/* ncclAlltoAll on one rank against a grouped send/recv loop on the other:
 * NCCL matches them pair by pair (the AlltoAll is per-peer sends and
 * receives), so the sizes are compared pair by pair and the mismatch names
 * both operations; equal sizes match silently. */
static xr_op a2a(uint64_t comm, int rank, uint64_t count, int dtype, uint64_t site) {
  xr_op o = coll(comm, rank, A2A_COLL_ALLTOALL, count, dtype, -1);
  o.site = site;
  o.group = 1;
  return o;
}

START_TEST(alltoall_against_send_recv_pairwise) {
  xr_matcher *m = mk(2, 0xa2);
  /* Step 1: rank 0 ncclAlltoAll(256 float); rank 1 a loop with 256 each way: clean. */
  xr_op a = a2a(0xa2, 0, 256, F32, 70);
  xr_matcher_op(m, 0, &a);
  for (int p = 0; p < 2; p++) {
    xr_op sd = p2p(0xa2, 1, XR_OP_SEND, p, 256, F32, 1, 80);
    xr_op rv = p2p(0xa2, 1, XR_OP_RECV, p, 256, F32, 1, 81);
    xr_matcher_op(m, 1, &sd);
    xr_matcher_op(m, 1, &rv);
  }
  ck_assert_int_eq(g_n, 0);
  for (int r = 0; r < 2; r++) ck_assert_uint_eq(xr_matcher_pending(m, r), 0);
  /* Step 2: rank 1 receives 128 from rank 0 (unequal splits). */
  a = a2a(0xa2, 0, 256, F32, 70);
  xr_matcher_op(m, 0, &a);
  for (int p = 0; p < 2; p++) {
    xr_op sd = p2p(0xa2, 1, XR_OP_SEND, p, 256, F32, 2, 80);
    xr_op rv = p2p(0xa2, 1, XR_OP_RECV, p, p == 0 ? 128 : 256, F32, 2, 81);
    xr_matcher_op(m, 1, &sd);
    xr_matcher_op(m, 1, &rv);
  }
  ck_assert_int_eq(count("size.p2p-mismatch"), 2); /* one to each rank */
  const got *v = find("size.p2p-mismatch", 0);
  ck_assert_ptr_nonnull(v);
  ck_assert_ptr_nonnull(strstr(v->text, "rank 0 sends 1024 B (256 x float32) to rank 1"));
  ck_assert_ptr_nonnull(strstr(v->text, "ncclAlltoAll at moe.py:70(conn0)"));
  ck_assert_ptr_nonnull(strstr(v->text, "rank 1 receives 512 B (128 x float32) from rank 0"));
  ck_assert_ptr_nonnull(strstr(v->text, "ncclRecv at moe.py:81(conn1)"));
  ck_assert_ptr_nonnull(strstr(v->text, "different operations"));
  ck_assert_uint_eq(v->site, 70);
  ck_assert_uint_eq(find("size.p2p-mismatch", 1)->site, 81);
  ck_assert_int_eq(count("size.collective-mismatch"), 0);
  xr_matcher_free(m);
}
END_TEST

START_TEST(alltoall_everywhere_keeps_the_collective_message) {
  xr_matcher *m = mk(4, 0xa3);
  for (int r = 0; r < 4; r++) {
    xr_op a = a2a(0xa3, r, r == 2 ? 128 : 256, F32, 60 + r);
    xr_matcher_op(m, r, &a);
  }
  /* Rank 2 disagrees with each of the three others: one verdict per pair,
   * each rank 2's with its own site (the runtime folds them by site). */
  ck_assert_int_eq(count("size.collective-mismatch"), 6);
  ck_assert_int_eq(count("size.p2p-mismatch"), 0);
  const got *v = find("size.collective-mismatch", 2);
  ck_assert_ptr_nonnull(v);
  ck_assert_ptr_nonnull(strstr(v->text, "ncclAlltoAll on communicator 00000000000000a3"));
  ck_assert_ptr_nonnull(strstr(v->text, "calls ncclAlltoAll(count 128, float32) at moe.py:62(conn2)"));
  ck_assert_ptr_nonnull(strstr(v->text, "ncclAlltoAll(count 256, float32)"));
  ck_assert_ptr_nonnull(strstr(v->text, "(a different count)"));
  ck_assert_uint_eq(v->site, 62);
  for (int r = 0; r < 4; r++) ck_assert_ptr_nonnull(find("size.collective-mismatch", r));
  /* Every rank in the same AlltoAll: no collective index is consumed, a
   * later AllReduce still matches collective #1 on every rank. */
  g_n = 0;
  for (int r = 0; r < 4; r++) {
    xr_op c = coll(0xa3, r, A2A_COLL_ALLREDUCE, 16, F32, 0);
    xr_matcher_op(m, r, &c);
  }
  ck_assert_int_eq(g_n, 0);
  xr_matcher_free(m);
}
END_TEST

START_TEST(gather_and_scatter_expand_around_the_root) {
  xr_matcher *m = mk(3, 0xa4);
  /* Gather to root 1: every rank sends 10 to rank 1, rank 1 receives 10
   * from each; rank 2 passes 12: rank 1's receive from 2 mismatches. */
  for (int r = 0; r < 3; r++) {
    xr_op g = coll(0xa4, r, A2A_COLL_GATHER, r == 2 ? 12 : 10, F32, -1);
    g.root = 1;
    g.site = 40 + r;
    xr_matcher_op(m, r, &g);
  }
  ck_assert_int_eq(count("size.collective-mismatch"), 2);
  const got *v = find("size.collective-mismatch", 2);
  ck_assert_ptr_nonnull(v);
  ck_assert_ptr_nonnull(strstr(v->text, "ncclGather(count 12, float32, root 1)"));
  /* Scatter from root 0, all equal: clean, nothing pending. */
  g_n = 0;
  for (int r = 0; r < 3; r++) {
    xr_op sc = coll(0xa4, r, A2A_COLL_SCATTER, 5, F32, -1);
    sc.root = 0;
    xr_matcher_op(m, r, &sc);
  }
  ck_assert_int_eq(g_n, 0);
  xr_matcher_free(m);
}
END_TEST

/* Scatter whose ranks disagree on the root (nccl-tests -r 0 on some ranks,
 * -r 1 on others): no pair meets to compare - the root sends to ranks
 * waiting for another root - so the k-th rooted call of each rank is
 * compared with the first poster's: size.collective-mismatch naming both
 * roots, to both ranks, once per pair; the known cause of the hang. Equal
 * roots, and a Gather next to a Scatter at the same number, say nothing. */
START_TEST(rooted_collectives_with_different_roots) {
  xr_matcher *m = mk(4, 0xa6);
  for (int r = 0; r < 4; r++) {
    xr_op sc = coll(0xa6, r, A2A_COLL_SCATTER, 64, F32, -1);
    sc.root = r < 2 ? 0 : 1;
    sc.site = 60 + r;
    xr_matcher_op(m, r, &sc);
  }
  /* ranks 2 and 3, and rank 0 per pair (its runtime logs it once: same check, same site) */
  ck_assert_int_eq(count("size.collective-mismatch"), 4);
  const got *v = find("size.collective-mismatch", 2);
  ck_assert_ptr_nonnull(v);
  ck_assert_ptr_nonnull(strstr(v->text, "ncclScatter(count 64, float32, root 1)"));
  ck_assert_ptr_nonnull(strstr(v->text, "ncclScatter(count 64, float32, root 0)"));
  ck_assert_ptr_nonnull(strstr(v->text, "(a different root)"));
  ck_assert_ptr_nonnull(find("size.collective-mismatch", 0));
  ck_assert_ptr_null(find("size.collective-mismatch", 1));
  xr_matcher_free(m);
  m = mk(2, 0xa7);
  for (int r = 0; r < 2; r++) {
    xr_op sc = coll(0xa7, r, A2A_COLL_SCATTER, 8, F32, -1);
    sc.root = 1;
    xr_matcher_op(m, r, &sc);
  }
  xr_op g = coll(0xa7, 0, A2A_COLL_GATHER, 8, F32, -1);
  g.root = 0;
  xr_matcher_op(m, 0, &g);
  xr_op sc = coll(0xa7, 1, A2A_COLL_SCATTER, 8, F32, -1);
  sc.root = 1;
  xr_matcher_op(m, 1, &sc); /* #2: another collective (an order question, not a root) */
  ck_assert_int_eq(count("size.collective-mismatch"), 0);
  xr_matcher_free(m);
}
END_TEST

/* ncclBcast is ncclBroadcast for NCCL and for matching (one rank's
 * ncclBcast meets another's ncclBroadcast: no finding); messages name each
 * rank's call as it made it (XR_OPF_BCAST). */
START_TEST(bcast_matches_broadcast_and_is_named_as_called) {
  xr_matcher *m = mk(2, 0xa8);
  for (int r = 0; r < 2; r++) {
    xr_op b = coll(0xa8, r, A2A_COLL_BROADCAST, 16, F32, -1);
    b.root = 0;
    if (r == 0) b.flags = XR_OPF_BCAST;
    xr_matcher_op(m, r, &b);
  }
  ck_assert_int_eq(count("size.collective-mismatch"), 0);
  for (int r = 0; r < 2; r++) {
    xr_op b = coll(0xa8, r, A2A_COLL_BROADCAST, r == 0 ? 16 : 32, F32, -1);
    b.root = 0;
    if (r == 0) b.flags = XR_OPF_BCAST;
    xr_matcher_op(m, r, &b);
  }
  const got *v = find("size.collective-mismatch", 1);
  ck_assert_ptr_nonnull(v);
  ck_assert_ptr_nonnull(strstr(v->text, "ncclBcast(count 16, float32, root 0)"));
  ck_assert_ptr_nonnull(strstr(v->text, "ncclBroadcast(count 32, float32, root 0)"));
  xr_matcher_free(m);
}
END_TEST

/* Two ranks of one communicator in one process (one connection: ncclCommInitAll,
 * a thread per rank): each side of a mismatch is sent for its own rank
 * (xr_verdict.rank_p1), so the process files it under that rank. */
START_TEST(verdicts_name_their_rank_in_a_multi_rank_process) {
  g_n = 0;
  xr_match_out out = {.verdict = on_verdict, .site_name = site_name};
  xr_matcher *m = xr_matcher_new(&out);
  xr_matcher_hello(m, 0, 100, 0, "h0");
  for (int r = 0; r < 2; r++) {
    xr_commreg reg = {.comm = 0xa9, .nranks = 2, .rank = r, .device = r, .site = 1};
    xr_matcher_register(m, 0, &reg);
  }
  xr_op s = p2p(0xa9, 0, XR_OP_SEND, 1, 64, F32, 1, 10);
  xr_op v = p2p(0xa9, 1, XR_OP_RECV, 0, 32, F32, 1, 11);
  xr_matcher_op(m, 0, &s);
  xr_matcher_op(m, 0, &v);
  ck_assert_int_eq(count("size.p2p-mismatch"), 2);
  uint32_t seen = 0;
  for (int i = 0; i < g_n; i++) {
    ck_assert_int_eq(g_got[i].conn, 0);
    ck_assert(g_got[i].rank_p1 == 1 || g_got[i].rank_p1 == 2);
    seen |= 1u << g_got[i].rank_p1;
  }
  ck_assert_uint_eq(seen, 6u);
  xr_matcher_free(m);
}
END_TEST

/* PyTorch's watchdog after a timeout: rank 0 aborts the communicator while
 * its all-to-all #2 waits for rank 1, which skipped it (and exits later,
 * when rank 0 is gone): rank 0 is told at the abort. A destroy says
 * nothing here, nor an abort whose peer died. */
static void skip_second(xr_matcher *m, uint64_t comm) {
  for (int g = 1; g <= 2; g++)
    for (int r = 0; r < 2; r++) {
      if (g == 2 && r == 1) continue; /* rank 1 skips group 2 */
      xr_op s = p2p(comm, r, XR_OP_SEND, 1 - r, 16, F32, (uint32_t)g, 20 + g);
      xr_op v = p2p(comm, r, XR_OP_RECV, 1 - r, 16, F32, (uint32_t)g, 30 + g);
      xr_matcher_op(m, r, &s);
      xr_matcher_op(m, r, &v);
    }
}
START_TEST(abort_with_unmatched_operations_tells_the_aborting_rank) {
  xr_matcher *m = mk(2, 0xb1);
  skip_second(m, 0xb1);
  ck_assert_int_eq(count("size.unmatched-p2p"), 0);
  xr_matcher_tick(m, 1000000000ull);
  xr_matcher_comm_end(m, 0, 0xb1, 0, A2A_END_ABORT);
  xr_matcher_tick(m, 1400000000ull); /* within the grace: not yet */
  ck_assert_int_eq(count("size.unmatched-p2p"), 0);
  xr_matcher_tick(m, 1600000000ull);
  ck_assert_int_eq(count("size.unmatched-p2p"), 1);
  const got *v = find("size.unmatched-p2p", 0);
  ck_assert_ptr_nonnull(v);
  ck_assert_ptr_nonnull(strstr(v->text, "rank 0 ended communicator 00000000000000b1 with ncclCommAbort with an operation still unmatched: rank 0 sends 64 B"));
  ck_assert_ptr_nonnull(strstr(v->text, "rank 1 had not posted the matching receive (it posted 1 receives from rank 0"));
  ck_assert_uint_eq(v->rank_p1, 1);
  /* Rank 1 exits later: rank 0 already told (and gone), nothing more. */
  xr_matcher_conn_gone(m, 0);
  xr_matcher_conn_gone(m, 1);
  ck_assert_int_eq(count("size.unmatched-p2p"), 1);
  xr_matcher_free(m);
  m = mk(2, 0xb2);
  skip_second(m, 0xb2);
  xr_matcher_comm_end(m, 0, 0xb2, 0, A2A_END_DESTROY);
  xr_matcher_tick(m, 1000000000ull);
  ck_assert_int_eq(count("size.unmatched-p2p"), 0);
  xr_matcher_free(m);
  /* A correct program that aborts at its end: rank 1's counterparts were
   * posted before rank 0's abort but arrive after it (their own batch):
   * matched within the grace, nothing said. */
  m = mk(2, 0xb4);
  skip_second(m, 0xb4);
  xr_matcher_comm_end(m, 0, 0xb4, 0, A2A_END_ABORT);
  xr_op s2 = p2p(0xb4, 1, XR_OP_SEND, 0, 16, F32, 2, 22);
  xr_op v2 = p2p(0xb4, 1, XR_OP_RECV, 0, 16, F32, 2, 32);
  xr_matcher_op(m, 1, &s2);
  xr_matcher_op(m, 1, &v2);
  xr_matcher_tick(m, 1000000000ull);
  ck_assert_int_eq(count("size.unmatched-p2p"), 0);
  xr_matcher_free(m);
  m = mk(2, 0xb3);
  skip_second(m, 0xb3);
  xr_matcher_conn_died(m, 1);
  xr_matcher_comm_end(m, 0, 0xb3, 0, A2A_END_ABORT);
  xr_matcher_tick(m, 1000000000ull);
  ck_assert_int_eq(count("size.unmatched-p2p"), 0);
  xr_matcher_free(m);
}
END_TEST

/* The same for a skipped collective: rank 0 aborts in its AllReduce #2,
 * which rank 1 never posted - the hang the abort ended, told to rank 0;
 * nothing when rank 1's #2 arrives within the grace. */
START_TEST(abort_in_a_collective_a_peer_skipped) {
  for (int late = 0; late < 2; late++) {
    xr_matcher *m = mk(2, 0xb5);
    for (int k = 0; k < 2; k++)
      for (int r = 0; r < 2; r++) {
        if (k == 1 && r == 1) continue;
        xr_op a = coll(0xb5, r, A2A_COLL_ALLREDUCE, 64, F32, 0);
        xr_matcher_op(m, r, &a);
      }
    xr_matcher_comm_end(m, 0, 0xb5, 0, A2A_END_ABORT);
    if (late) {
      xr_op a = coll(0xb5, 1, A2A_COLL_ALLREDUCE, 64, F32, 0);
      xr_matcher_op(m, 1, &a);
    }
    xr_matcher_tick(m, 1000000000ull);
    ck_assert_int_eq(count("group.hang"), late ? 0 : 1);
    if (!late) {
      const got *v = find("group.hang", 0);
      ck_assert_ptr_nonnull(v);
      ck_assert_ptr_nonnull(strstr(v->text, "with ncclCommAbort while its collective #2 ncclAllReduce(count 64, float32"));
      ck_assert_ptr_nonnull(strstr(v->text, "rank 1 had posted only 1 collective on it"));
    }
    xr_matcher_free(m);
  }
}
END_TEST

START_TEST(collective_dtype_at_equal_bytes) {
  /* float on two ranks, half with twice the count on two: not "a different
   * count" but the dtype mismatch it is; an error for a reduction. */
  xr_matcher *m = mk(4, 0xa5);
  for (int r = 0; r < 4; r++) {
    xr_op c = coll(0xa5, r, A2A_COLL_ALLREDUCE, r < 2 ? 1024 : 2048, r < 2 ? F32 : F16, 0);
    xr_matcher_op(m, r, &c);
  }
  ck_assert_int_eq(count("size.collective-mismatch"), 0);
  ck_assert_int_eq(count("size.dtype-mismatch"), 4); /* ranks 2 and 3, and the reference twice */
  const got *v = find("size.dtype-mismatch", 2);
  ck_assert_ptr_nonnull(v);
  ck_assert_ptr_nonnull(strstr(v->text, "a different dtype at the same bytes"));
  ck_assert_ptr_nonnull(strstr(v->text, "reduces them as its own type"));
  ck_assert_int_eq(v->sev, A2A_SEV_ERROR);
  /* Not a known cause of a hang. */
  ck_assert_ptr_null(xr_matcher_last_mismatch(m, 0xa5));
  xr_matcher_free(m);
  /* AllGather (no reduction): a warning. */
  m = mk(4, 0xa6);
  for (int r = 0; r < 4; r++) {
    xr_op c = coll(0xa6, r, A2A_COLL_ALLGATHER, r < 2 ? 64 : 128, r < 2 ? F32 : F16, -1);
    xr_matcher_op(m, r, &c);
  }
  ck_assert_int_eq(count("size.dtype-mismatch"), 4);
  ck_assert_int_eq(find("size.dtype-mismatch", 2)->sev, A2A_SEV_WARNING);
  xr_matcher_free(m);
}
END_TEST

/* The same AllReduce with ncclMax on rank 1 and ncclSum on the others: NCCL
 * moves the same data and completes it (each rank reduces with its own
 * operation), so the finding is an error but not a known cause of a hang
 * (the deadlock analysis must not assume the operation never completes).
 * A Broadcast with a different root is one, and says what happens. */
START_TEST(collective_reduction_or_root_differs) {
  xr_matcher *m = mk(4, 0xa9);
  for (int r = 0; r < 4; r++) {
    xr_op c = coll(0xa9, r, A2A_COLL_ALLREDUCE, 256, F32, r == 1 ? 2 /* max */ : 0 /* sum */);
    c.site = 70 + r;
    xr_matcher_op(m, r, &c);
  }
  ck_assert_int_eq(count("size.collective-mismatch"), 2); /* rank 1 and the reference */
  const got *v = find("size.collective-mismatch", 1);
  ck_assert_ptr_nonnull(v);
  ck_assert_int_eq(v->sev, A2A_SEV_ERROR);
  ck_assert_ptr_nonnull(strstr(v->text, "ncclAllReduce(count 256, float32, max)"));
  ck_assert_ptr_nonnull(strstr(v->text, "ncclAllReduce(count 256, float32, sum)"));
  ck_assert_ptr_nonnull(strstr(v->text, "(a different reduction): NCCL moves the same data and "
                                        "completes it, each rank reducing with its own operation"));
  ck_assert_ptr_null(strstr(v->text, "wrong number of elements"));
  ck_assert_ptr_null(xr_matcher_last_mismatch(m, 0xa9)); /* not a known hang cause */
  xr_matcher_free(m);
  /* Broadcast from root 0 on ranks 0-1, root 1 on rank 2: a hang cause. */
  m = mk(3, 0xaa);
  for (int r = 0; r < 3; r++) {
    xr_op c = coll(0xaa, r, A2A_COLL_BROADCAST, 64, F32, -1);
    c.root = r < 2 ? 0 : 1;
    xr_matcher_op(m, r, &c);
  }
  v = find("size.collective-mismatch", 2);
  ck_assert_ptr_nonnull(v);
  ck_assert_ptr_nonnull(strstr(v->text, "(a different root): the ranks send and receive along "
                                        "different roots: NCCL hangs or delivers wrong data"));
  ck_assert_ptr_nonnull(xr_matcher_last_mismatch(m, 0xaa));
  xr_matcher_free(m);
  /* Reduce with another root AND another reduction: the root is what hangs. */
  m = mk(2, 0xab);
  for (int r = 0; r < 2; r++) {
    xr_op c = coll(0xab, r, A2A_COLL_REDUCE, 64, F32, r ? 2 : 0);
    c.root = r;
    xr_matcher_op(m, r, &c);
  }
  v = find("size.collective-mismatch", 1);
  ck_assert_ptr_nonnull(v);
  ck_assert_ptr_nonnull(strstr(v->text, "(a different root): the ranks send and receive"));
  ck_assert_ptr_nonnull(xr_matcher_last_mismatch(m, 0xab));
  xr_matcher_free(m);
}
END_TEST

START_TEST(alltoall_against_allreduce_is_an_order_mismatch) {
  /* alltoall_perf on ranks 0-1, all_reduce_perf on ranks 2-3: NCCL never
   * matches the AlltoAll's sends with an AllReduce. */
  xr_matcher *m = mk(4, 0xa7);
  for (int r = 0; r < 2; r++) {
    xr_op a = a2a(0xa7, r, 64, F32, 30 + r);
    xr_matcher_op(m, r, &a);
  }
  for (int r = 2; r < 4; r++) {
    xr_op c = coll(0xa7, r, A2A_COLL_ALLREDUCE, 256, F32, 0);
    xr_matcher_op(m, r, &c);
  }
  ck_assert_int_gt(count("group.order-mismatch"), 0);
  const got *v = find("group.order-mismatch", 2);
  ck_assert_ptr_nonnull(v);
  ck_assert_ptr_nonnull(strstr(v->text, "calls ncclAlltoAll(count 64, float32)"));
  ck_assert_ptr_nonnull(strstr(v->text, "ncclAllReduce(count 256, float32, sum)"));
  ck_assert_ptr_nonnull(xr_matcher_last_mismatch(m, 0xa7)); /* a known hang cause */
  xr_matcher_free(m);
  /* A send/recv-loop rank that posts an AllReduce while a peer's AlltoAll
   * waits for it is no clash: it exchanged p2p with that peer before and
   * may post the counterparts later on another stream. */
  m = mk(2, 0xa8);
  xr_op a = a2a(0xa8, 0, 16, F32, 1);
  xr_matcher_op(m, 0, &a);
  for (int p = 0; p < 2; p++) {
    xr_op sd = p2p(0xa8, 1, XR_OP_SEND, p, 16, F32, 1, 2), rv = p2p(0xa8, 1, XR_OP_RECV, p, 16, F32, 1, 3);
    xr_matcher_op(m, 1, &sd);
    xr_matcher_op(m, 1, &rv);
  }
  a = a2a(0xa8, 0, 16, F32, 1);
  xr_matcher_op(m, 0, &a);
  xr_op c = coll(0xa8, 1, A2A_COLL_ALLREDUCE, 8, F32, 0);
  xr_matcher_op(m, 1, &c);
  ck_assert_int_eq(count("group.order-mismatch"), 0);
  xr_matcher_free(m);
  /* Every rank AllReduce then AlltoAll; rank 0 is ahead (its AlltoAll parts
   * arrive before rank 1's AllReduce): no clash. */
  m = mk(2, 0xa9);
  xr_op ar0 = coll(0xa9, 0, A2A_COLL_ALLREDUCE, 8, F32, 0);
  xr_matcher_op(m, 0, &ar0);
  a = a2a(0xa9, 0, 16, F32, 1);
  xr_matcher_op(m, 0, &a);
  xr_op ar1 = coll(0xa9, 1, A2A_COLL_ALLREDUCE, 8, F32, 0);
  xr_matcher_op(m, 1, &ar1);
  xr_op a1 = a2a(0xa9, 1, 16, F32, 1);
  xr_matcher_op(m, 1, &a1);
  ck_assert_int_eq(g_n, 0);
  xr_matcher_free(m);
}
END_TEST

/* A 1,024-rank communicator (issue 13's size): every rank ncclAlltoAll,
 * then ncclAllReduce (no clash: the AlltoAll parts are all matched by
 * then), then a grouped all-to-all of sends and receives posted round-robin
 * the way interleaved connections deliver it, with one short receive; then
 * one rank's sends with nobody receiving, settled by ends. Pending is asked
 * of every rank (cheap: counted as operations are queued and matched). */
enum { BIG = 1024 };
static const uint64_t BIGC = 0xb16;

static void big_round_robin(xr_matcher *m, uint32_t group, int short_s, int short_d) {
  for (int k = 0; k < BIG; k++)
    for (int r = 0; r < BIG; r++) {
      int to = (r + k) % BIG, from = (r - k + BIG) % BIG;
      xr_op s = p2p(BIGC, r, XR_OP_SEND, to, 16 + (uint64_t)((r + 3 * to) % 7), F32, group, 88);
      uint64_t rc = 16 + (uint64_t)((from + 3 * r) % 7);
      if (from == short_s && r == short_d) rc = 1;
      xr_op v = p2p(BIGC, r, XR_OP_RECV, from, rc, F32, group, 91);
      xr_matcher_op(m, r, &s);
      xr_matcher_op(m, r, &v);
    }
}

START_TEST(large_comm_alltoall) {
  xr_matcher *m = mk(BIG, BIGC);
  for (int r = 0; r < BIG; r++) {
    xr_op a = a2a(BIGC, r, 32, F32, 70);
    xr_matcher_op(m, r, &a);
  }
  for (int r = 0; r < BIG; r++) {
    xr_op c = coll(BIGC, r, A2A_COLL_ALLREDUCE, 8, F32, 0);
    xr_matcher_op(m, r, &c);
  }
  ck_assert_int_eq(g_n, 0);
  big_round_robin(m, 2, -1, -1);
  ck_assert_int_eq(g_n, 0);
  for (int r = 0; r < BIG; r++) ck_assert_uint_eq(xr_matcher_pending(m, r), 0);
  /* Rank 700 receives 1 float from rank 3, which sends 16 + (3 + 2100) % 7. */
  big_round_robin(m, 3, 3, 700);
  ck_assert_int_eq(g_n, 2);
  ck_assert_int_eq(count("size.p2p-mismatch"), 2);
  const got *v = find("size.p2p-mismatch", 700);
  ck_assert_ptr_nonnull(v);
  ck_assert_ptr_nonnull(find("size.p2p-mismatch", 3));
  ck_assert_ptr_nonnull(strstr(v->text, "rank 3 sends 76 B (19 x float32) to rank 700 in group #3"));
  ck_assert_ptr_nonnull(strstr(v->text, "rank 700 receives 4 B (1 x float32) from rank 3"));
  ck_assert_ptr_nonnull(strstr(v->text, "p2p #3 between them")); /* AlltoAll, step 2, step 3 */
  ck_assert_uint_eq(v->site, 91);
  for (int r = 0; r < BIG; r++) ck_assert_uint_eq(xr_matcher_pending(m, r), 0);
  /* Rank 0 sends to everyone, nobody receives yet. */
  g_n = 0;
  for (int p = 1; p < BIG; p++) {
    xr_op s = p2p(BIGC, 0, XR_OP_SEND, p, 8, F32, 4, 88);
    xr_matcher_op(m, 0, &s);
  }
  ck_assert_uint_eq(xr_matcher_pending(m, 0), BIG - 1);
  ck_assert_uint_eq(xr_matcher_pending_rank(m, 0, BIGC, 0), BIG - 1);
  ck_assert_uint_eq(xr_matcher_pending(m, 1), 0);
  /* Rank 9 receives its send: one fewer. */
  xr_op rv = p2p(BIGC, 9, XR_OP_RECV, 0, 8, F32, 4, 91);
  xr_matcher_op(m, 9, &rv);
  ck_assert_uint_eq(xr_matcher_pending(m, 0), BIG - 2);
  /* Rank 5 ends the comm, rank 6's process exits: each settles one send,
   * with the verdict to rank 0 first. */
  xr_matcher_comm_end(m, 5, BIGC, 5, A2A_END_DESTROY);
  ck_assert_int_eq(count("size.unmatched-p2p"), 1);
  ck_assert_ptr_nonnull(strstr(find("size.unmatched-p2p", 0)->text, "rank 5 ended the communicator"));
  ck_assert_uint_eq(xr_matcher_pending(m, 0), BIG - 3);
  xr_matcher_conn_gone(m, 6);
  ck_assert_int_eq(count("size.unmatched-p2p"), 2);
  ck_assert_uint_eq(xr_matcher_pending(m, 0), BIG - 4);
  /* Rank 7's process dies without its goodbye (its last records may have
   * died with it): its send settles, and nobody is told. */
  xr_matcher_conn_died(m, 7);
  ck_assert_int_eq(count("size.unmatched-p2p"), 2);
  ck_assert_uint_eq(xr_matcher_pending(m, 0), BIG - 5);
  /* A send to it that reaches the coordinator after its death (its own
   * receive may have died in its batch): not told either, not pending. */
  xr_op late = p2p(BIGC, 0, XR_OP_SEND, 7, 8, F32, 5, 88);
  xr_matcher_op(m, 0, &late);
  ck_assert_int_eq(count("size.unmatched-p2p"), 2);
  ck_assert_uint_eq(xr_matcher_pending(m, 0), BIG - 5);
  /* With a rank gone, no collective can complete: an AllReduce queued by
   * rank 0 is not pending. */
  xr_op c = coll(BIGC, 0, A2A_COLL_ALLREDUCE, 8, F32, 0);
  xr_matcher_op(m, 0, &c);
  ck_assert_uint_eq(xr_matcher_pending(m, 0), BIG - 5);
  xr_matcher_free(m); /* a million pairs: a few arrays */
}
END_TEST

/* 1,024-rank collectives: matched when the last rank posts (one rank
 * behind keeps the others pending), an argument mismatch of one rank
 * names it and the reference, and an AlltoAll of some ranks against an
 * AllReduce of another is an order mismatch (the ranks with AlltoAll parts
 * pending towards it are found among 1,024). */
START_TEST(large_comm_collectives) {
  xr_matcher *m = mk(BIG, BIGC);
  for (int i = 0; i < 20; i++)
    for (int r = 0; r < BIG; r++) {
      if (i == 19 && r == 77) continue; /* rank 77 is behind */
      xr_op c = coll(BIGC, r, A2A_COLL_ALLREDUCE, 1024, F32, 0);
      xr_matcher_op(m, r, &c);
    }
  ck_assert_int_eq(g_n, 0);
  ck_assert_uint_eq(xr_matcher_pending(m, 5), 1);
  ck_assert_uint_eq(xr_matcher_pending_rank(m, 1023, BIGC, 1023), 1);
  ck_assert_uint_eq(xr_matcher_pending(m, 77), 0);
  xr_op late = coll(BIGC, 77, A2A_COLL_ALLREDUCE, 1024, F32, 0);
  xr_matcher_op(m, 77, &late);
  for (int r = 0; r < BIG; r++) ck_assert_uint_eq(xr_matcher_pending(m, r), 0);
  for (int r = 0; r < BIG; r++) {
    xr_op c = coll(BIGC, r, A2A_COLL_ALLREDUCE, r == 1000 ? 512 : 1024, F32, 0);
    xr_matcher_op(m, r, &c);
  }
  ck_assert_int_eq(g_n, 2);
  const got *g = find("size.collective-mismatch", 1000);
  ck_assert_ptr_nonnull(g);
  ck_assert_ptr_nonnull(find("size.collective-mismatch", 0)); /* the reference */
  ck_assert_ptr_nonnull(strstr(g->text, "collective #21"));
  ck_assert_ptr_nonnull(strstr(g->text, "rank 1000 calls ncclAllReduce(count 512"));
  xr_matcher_free(m);
  m = mk(BIG, BIGC);
  for (int r = 0; r < 4; r++) {
    xr_op a = a2a(BIGC, r, 16, F32, 30);
    xr_matcher_op(m, r, &a);
  }
  ck_assert_int_eq(g_n, 0);
  xr_op c = coll(BIGC, 900, A2A_COLL_ALLREDUCE, 8, F32, 0);
  xr_matcher_op(m, 900, &c);
  ck_assert_int_eq(count("group.order-mismatch"), 8); /* ranks 0-3 and 900, per pair */
  for (int q = 0; q < 4; q++) ck_assert_ptr_nonnull(find("group.order-mismatch", q));
  const got *v = find("group.order-mismatch", 900);
  ck_assert_ptr_nonnull(v);
  ck_assert_ptr_nonnull(strstr(v->text, "calls ncclAlltoAll(count 16, float32)"));
  ck_assert_ptr_nonnull(strstr(v->text, "rank 900 calls ncclAllReduce(count 8, float32, sum)"));
  xr_matcher_free(m);
}
END_TEST

/* Rank 0 first in posting order differs from the rest of 8: the majority
 * (rank 1) is the reference, not rank 0. */
START_TEST(collective_majority_not_rank0) {
  xr_matcher *m = mk(8, 6);
  for (int r = 0; r < 8; r++) {
    xr_op o = coll(6, r, A2A_COLL_ALLREDUCE, r == 0 ? 2048 : 1024, F32, 0);
    xr_matcher_op(m, r, &o);
  }
  ck_assert_int_eq(count("size.collective-mismatch"), 2);
  const got *g = find("size.collective-mismatch", 0);
  ck_assert_ptr_nonnull(g);
  ck_assert_ptr_nonnull(strstr(g->text, "rank 0 calls ncclAllReduce(count 2048"));
  ck_assert_ptr_nonnull(strstr(g->text, "but rank 1 and the other ranks call ncclAllReduce(count 1024"));
  ck_assert_ptr_nonnull(find("size.collective-mismatch", 1));
  xr_matcher_free(m);
}
END_TEST

/* Two ranks against two (a tie: the first rank's side is the reference):
 * neither side is "the other ranks". */
START_TEST(collective_tie_names_no_majority) {
  xr_matcher *m = mk(4, 7);
  for (int r = 0; r < 4; r++) {
    xr_op o = coll(7, r, A2A_COLL_ALLREDUCE, 256, F32, r < 2 ? 0 : 2);
    xr_matcher_op(m, r, &o);
  }
  const got *g = find("size.collective-mismatch", 3);
  ck_assert_ptr_nonnull(g);
  ck_assert_ptr_nonnull(strstr(g->text, "but rank 0 and 1 other rank call ncclAllReduce(count 256"));
  ck_assert_ptr_null(strstr(g->text, "the other ranks"));
  xr_matcher_free(m);
}
END_TEST

/* A rank's process dies with nothing of the others waiting for it: no
 * known cause (ranks that go on among themselves are not suspected); once
 * a collective it never posted is queued, the cause names it. */
START_TEST(death_is_a_cause_only_when_waited_for) {
  xr_matcher *m = mk(4, 8);
  xr_matcher_conn_died(m, 3);
  ck_assert_ptr_null(xr_matcher_last_mismatch(m, 8));
  xr_op s = p2p(8, 0, XR_OP_SEND, 1, 8, F32, 1, 88), r = p2p(8, 1, XR_OP_RECV, 0, 8, F32, 1, 89);
  xr_matcher_op(m, 0, &s);
  xr_matcher_op(m, 1, &r);
  ck_assert_ptr_null(xr_matcher_last_mismatch(m, 8));
  xr_op c = coll(8, 0, A2A_COLL_ALLREDUCE, 8, F32, 0);
  xr_matcher_op(m, 0, &c);
  ck_assert_ptr_nonnull(xr_matcher_last_mismatch(m, 8));
  ck_assert_ptr_nonnull(strstr(xr_matcher_last_mismatch(m, 8), "rank 3 died"));
  ck_assert_int_eq(count("size.unmatched-p2p"), 0);
  xr_matcher_free(m);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("xrank_match");
  TCase *t = tcase_create("match");
  tcase_set_timeout(t, 30);
  tcase_add_test(t, alltoall_clean_with_reordering);
  tcase_add_test(t, alltoall_against_send_recv_pairwise);
  tcase_add_test(t, alltoall_everywhere_keeps_the_collective_message);
  tcase_add_test(t, gather_and_scatter_expand_around_the_root);
  tcase_add_test(t, rooted_collectives_with_different_roots);
  tcase_add_test(t, collective_reduction_or_root_differs);
  tcase_add_test(t, collective_dtype_at_equal_bytes);
  tcase_add_test(t, bcast_matches_broadcast_and_is_named_as_called);
  tcase_add_test(t, verdicts_name_their_rank_in_a_multi_rank_process);
  tcase_add_test(t, abort_with_unmatched_operations_tells_the_aborting_rank);
  tcase_add_test(t, abort_in_a_collective_a_peer_skipped);
  tcase_add_test(t, alltoall_against_allreduce_is_an_order_mismatch);
  tcase_add_test(t, p2p_size_mismatch_names_both);
  tcase_add_test(t, dtype_mismatch_same_bytes_is_warning);
  tcase_add_test(t, zero_counts_match_and_mismatch);
  tcase_add_test(t, same_pair_order_matters);
  tcase_add_test(t, collective_count_and_order);
  tcase_add_test(t, split_comms_independent);
  tcase_add_test(t, registration_mismatches);
  tcase_add_test(t, unmatched_when_peer_ends_and_flush);
  tcase_add_test(t, pending_rank_per_comm);
  tcase_add_test(t, collectives_pending_after_end_until_late_peer);
  tcase_add_test(t, ops_from_wrong_conn_or_unknown_comm_ignored);
  tcase_add_test(t, collective_majority_not_rank0);
  tcase_add_test(t, collective_tie_names_no_majority);
  tcase_add_test(t, death_is_a_cause_only_when_waited_for);
  suite_add_tcase(s, t);
  /* 1,024 ranks: seconds under the sanitizers. */
  TCase *big = tcase_create("large");
  tcase_set_timeout(big, 100);
  tcase_add_test(big, large_comm_alltoall);
  tcase_add_test(big, large_comm_collectives);
  suite_add_tcase(s, big);
  return s;
}

int main(void) {
  SRunner *r = srunner_create(suite());
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? 1 : 0;
}
