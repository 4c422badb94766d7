/* xr_build.h - a small builder of synthetic process states (xr_procstate)
 * for the cross-rank unit tests (wait-for graph, confirmation policy). */
#ifndef A2A_TEST_XR_BUILD_H
#define A2A_TEST_XR_BUILD_H

#include <stdio.h>
#include <string.h>

#include "xrank.h"

/* A small builder for one process's state. */
typedef struct pb {
  xr_commstate comms[4];
  xr_unitstate units[8];
  xr_threadstate threads[2];
  xr_peerent peers[32];
  xr_procstate st;
} pb;

static inline void pb_init(pb *b, int pid) {
  memset(b, 0, sizeof *b);
  b->st.alive = 1;
  b->st.pid = pid;
  b->st.grank = pid;
  snprintf(b->st.host, sizeof b->st.host, "h");
  b->st.comms = b->comms;
  b->st.units = b->units;
  b->st.threads = b->threads;
  b->st.peers = b->peers;
}
static inline xr_commstate *pb_comm(pb *b, uint64_t comm, int rank, int nranks, uint32_t colls) {
  xr_commstate *c = &b->comms[b->st.ncomms++];
  *c = (xr_commstate){.comm = comm, .rank = rank, .nranks = nranks, .coll_posted = colls,
                      .peer_off = b->st.npeers};
  return c;
}
static inline void pb_comm_peer(pb *b, xr_commstate *c, int peer, uint32_t sends, uint32_t recvs) {
  b->peers[b->st.npeers++] = (xr_peerent){.peer = peer, .send_hi = sends, .recv_hi = recvs};
  c->npeers++;
}
/* The builder's rank in comm (its first membership). */
static inline int32_t pb_rank(const pb *b, uint64_t comm) {
  for (uint32_t i = 0; i < b->st.ncomms; i++)
    if (b->comms[i].comm == comm) return b->comms[i].rank;
  return -1;
}
static inline xr_unitstate *pb_coll(pb *b, uint64_t comm, uint64_t stream, uint32_t k) {
  xr_unitstate *u = &b->units[b->st.nunits++];
  *u = (xr_unitstate){.comm = comm, .stream = stream, .coll_lo = k, .coll_hi = k + 1,
                      .kind = XR_OP_COLL, .coll = 0, .dtype = 7, .group = k + 1, .site = 0x100 + k,
                      .count = 1024, .rank = pb_rank(b, comm)};
  return u;
}
static inline xr_unitstate *pb_group(pb *b, uint64_t comm, uint64_t stream, uint32_t g) {
  xr_unitstate *u = &b->units[b->st.nunits++];
  *u = (xr_unitstate){.comm = comm, .stream = stream, .kind = XR_OP_SEND, .coll = -1,
                      .group = g, .peer_off = b->st.npeers, .site = 0x200 + g,
                      .rank = pb_rank(b, comm)};
  return u;
}
static inline void pb_unit_peer(pb *b, xr_unitstate *u, int peer, uint32_t slo, uint32_t shi,
                         uint32_t rlo, uint32_t rhi) {
  b->peers[b->st.npeers++] = (xr_peerent){.peer = peer, .send_lo = slo, .send_hi = shi,
                                          .recv_lo = rlo, .recv_hi = rhi};
  u->npeers++;
}
static inline void pb_block(pb *b, uint64_t stream, uint64_t ms) {
  b->threads[b->st.nthreads++] = (xr_threadstate){.stream = stream, .blocked_ms = ms, .thread = 1,
                                                  .wait = XR_WAIT_STREAM, .site = 0x999};
}

#endif
