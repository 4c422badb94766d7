/* xrank.h - the data model of cross-rank checking, shared by the xrank
 * analyzer (xrank/xrank.c: fingerprints from events), the wire protocol
 * (xrank_proto.c), the coordinator's matcher (xrank_match.c), the wait-for
 * graph (xrank_wfg.c) and the process side in xrank/xr_*.c (channel thread,
 * sockets, coordinator hosting).
 *
 * Everything here is plain data: fixed-size records whose bytes are also the
 * wire format (explicit padding, sizes checked below). The wire uses the
 * host's byte order; every supported platform (x86-64, aarch64) is
 * little-endian and a peer speaking another order fails the magic check.
 *
 * Identity: a communicator is named across ranks by the registry's id_hash
 * (a2a_comm.id_hash): the hash of the ncclUniqueId bytes for id-created
 * comms, (parent, split sequence, color) for splits. Within a communicator a
 * rank's operations are numbered by the rank itself, in posting order:
 *   - collectives: k = 0, 1, ... (zero-count collectives are dropped by NCCL
 *     before they become tasks, so they are not numbered);
 *   - point-to-point: per peer, sends i = 0, 1, ... and receives j = 0, 1, ...
 * The i-th send of rank s to rank d matches the i-th receive of d from s.
 *
 * ncclAlltoAll, ncclGather and ncclScatter are collectives at the API but
 * not on the wire: NCCL (>= 2.28, src/enqueue.cc taskAppend) turns each into
 * per-peer sends and receives appended to the same per-peer queues as
 * ncclSend/ncclRecv, so a rank in ncclAlltoAll exchanges data with a peer in
 * a grouped send/recv loop. They travel as one XR_OP_COLL record, take no
 * collective index, and every consumer expands them with xr_coll_p2p_at
 * into the per-peer operations NCCL posts, in NCCL's order.
 */
#ifndef A2A_XRANK_H
#define A2A_XRANK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "a2a_event.h"

#ifdef __cplusplus
extern "C" {
#endif

#define XR_PROTO_VERSION 4u /* 4: verdicts name their rank (xr_verdict.rank_p1) */
#define XR_TOKEN_BYTES 16

/* Operation kinds of a fingerprint. */
enum { XR_OP_COLL = 1, XR_OP_SEND = 2, XR_OP_RECV = 3 };

/* Whether NCCL executes collective `coll` (a2a_coll) as per-peer sends and
 * receives (see above). */
static inline int xr_coll_is_p2p(int coll) {
  return coll == A2A_COLL_ALLTOALL || coll == A2A_COLL_GATHER || coll == A2A_COLL_SCATTER;
}

/* The i-th per-peer operation (0-based) that such a collective posts for
 * `rank` in an nranks communicator, in NCCL's order: AlltoAll, for each r
 * a send to r then a receive from r; Gather, a send to the root, then at
 * the root a receive from each r; Scatter, at the root a send to each r,
 * then a receive from the root. Each moves `count` elements. Returns 1 and
 * sets *kind (XR_OP_SEND/RECV) and *peer, 0 past the last one. A
 * one-rank communicator posts none (NCCL copies locally). */
static inline int xr_coll_p2p_at(int coll, int root, int rank, int nranks, uint32_t i,
                                 int *kind, int *peer) {
  if (nranks <= 1) return 0;
  uint32_t n = (uint32_t)nranks;
  if (coll == A2A_COLL_ALLTOALL) {
    if (i >= 2 * n) return 0;
    *kind = (i & 1) ? XR_OP_RECV : XR_OP_SEND;
    *peer = (int)(i / 2);
    return 1;
  }
  if (coll == A2A_COLL_GATHER) {
    if (i == 0) { *kind = XR_OP_SEND; *peer = root; return 1; }
    if (rank != root || i > n) return 0;
    *kind = XR_OP_RECV;
    *peer = (int)(i - 1);
    return 1;
  }
  if (coll == A2A_COLL_SCATTER) {
    uint32_t nsend = rank == root ? n : 0;
    if (i < nsend) { *kind = XR_OP_SEND; *peer = (int)i; return 1; }
    if (i > nsend) return 0;
    *kind = XR_OP_RECV;
    *peer = root;
    return 1;
  }
  return 0;
}

/* One operation fingerprint (48 bytes), in posting order per rank. */
typedef struct xr_op {
  uint64_t comm;     /* id_hash */
  uint64_t site;     /* caller's call-site address (process-local) */
  uint64_t count;    /* elements */
  uint32_t group;    /* per-comm launch-unit number on this rank (1, 2, ...):
                        ops of one ncclGroupStart/End share it */
  int32_t rank;      /* the poster's rank in the communicator */
  int32_t peer;      /* p2p peer rank, -1 for collectives */
  int32_t root;      /* collective root, -1 when rootless */
  uint16_t kind;     /* XR_OP_* */
  int8_t coll;       /* a2a_coll (XR_OP_COLL); for a send/receive, the
                        collective it is part of (xr_coll_is_p2p), else -1 */
  int8_t dtype;      /* ncclDataType_t */
  int8_t redop;      /* ncclRedOp_t, -1 when not a reduction */
  uint8_t flags;     /* XR_OPF_* */
  int8_t pad[2];
} xr_op;
/* xr_op.flags. REPLAY: posted by a cudaGraphLaunch, a replay of a call
 * captured into the graph (its site is the captured call's). BCAST: an
 * A2A_COLL_BROADCAST called as ncclBcast (messages name it so; it matches
 * ncclBroadcast). Only messages read the flags: no verdict depends on
 * them, so a peer's flags change no finding. */
enum { XR_OPF_REPLAY = 1, XR_OPF_BCAST = 2 };
_Static_assert(sizeof(xr_op) == 48, "xr_op is a wire record");

/* A communicator as one rank created it (44 + pad = 48 bytes). */
typedef struct xr_commreg {
  uint64_t comm;        /* id_hash */
  uint64_t parent;      /* parent's id_hash for split/shrink, else 0 */
  uint64_t site;        /* call site of the init call */
  int32_t nranks, rank;
  int32_t device;       /* CUDA device of the rank */
  int32_t how;          /* a2a_init_how */
  int32_t color;        /* split color */
  uint32_t split_index; /* index among the parent's splits */
} xr_commreg;
_Static_assert(sizeof(xr_commreg) == 48, "xr_commreg is a wire record");

/* ---- progress state (deadlock detection) ---------------------------- */

/* Per-peer index ranges. In a comm entry: send_hi/recv_hi are the numbers
 * of sends to / receives from the peer posted so far (lo fields 0). In a
 * unit entry: the half-open ranges of send/receive indexes the unit holds. */
typedef struct xr_peerent {
  int32_t peer;
  uint32_t send_lo, send_hi, recv_lo, recv_hi;
} xr_peerent;
_Static_assert(sizeof(xr_peerent) == 20, "xr_peerent is a wire record");

/* One communicator a process is a member of. */
typedef struct xr_commstate {
  uint64_t comm;
  int32_t rank, nranks;
  uint32_t coll_posted;  /* collectives posted so far */
  uint32_t ended;        /* 1 after finalize/destroy/abort */
  uint32_t peer_off, npeers; /* slice of the state's peer array */
  uint32_t splits;       /* ncclCommSplit/Shrink calls made on it so far */
  uint32_t last_kind;    /* its last posted operation: XR_OP_* (0: none) */
  uint64_t last_site;    /* ... and the call site of that operation */
  /* The one host thread (shim thread index, >= 1) that posts this rank's
   * operations: the only thread that posted any so far, or, before the
   * first, the thread that created it by an id-based init and no other
   * rank of it; 0 when two threads posted, or when not known (a split's
   * child, ncclCommInitAll's ranks, before their first operation). While
   * that thread is in no wait, in a process that hosts several ranks of
   * the communicator, the rank may still post (xrank_wfg.h): such a
   * process is not taken as blocked as a whole. */
  uint32_t poster;
  /* 1: that poster thread has exited (its process reports so): the rank
   * is no longer "may still post" from it; another thread of the process
   * could still post for it (the process's own rule applies). */
  uint32_t poster_gone;
} xr_commstate;
_Static_assert(sizeof(xr_commstate) == 56, "xr_commstate is a wire record");

/* One incomplete launch unit: the operations of one comm launched together
 * (one group, or one operation outside a group) on one stream. A process
 * lists its units in posting order; units on one stream execute in that
 * order. */
typedef struct xr_unitstate {
  uint64_t comm;
  uint64_t stream;       /* process-local stream handle value */
  uint64_t site;         /* call site of the unit's first operation */
  uint64_t count;        /* first operation's count (for the story) */
  uint32_t group;        /* per-comm unit number on this rank */
  uint32_t coll_lo, coll_hi; /* collective indexes [lo, hi) */
  uint32_t peer_off, npeers;
  int16_t kind;          /* first operation's XR_OP_* */
  int8_t coll;           /* first collective's a2a_coll, or -1 */
  int8_t dtype;
  int32_t rank;          /* the process's rank in comm (a process may hold
                            several ranks of one comm) */
  uint32_t flags;        /* XR_UNIT_* */
} xr_unitstate;

/* Unit flags. OPEN: posted inside a group whose ncclGroupEnd has not been
 * called yet: nothing is launched; it starts only if its process may still
 * end the group. MAYBE_DONE: a later unit of its stream shares its
 * completion marker (a run of back-to-back units, xrank.c "completion
 * markers"; the units of one group): it is reported incomplete because the
 * marker is, and may have completed. A known argument mismatch on its comm
 * does not keep it from completing in the wait-for graph, and a hang dump
 * does not name it while its counterparts are all posted. RUN: it stands
 * for a run of back-to-back collectives of its comm sharing one marker,
 * collectives [coll_lo, coll_hi), described by the last (site, count,
 * dtype). */
enum { XR_UNIT_OPEN = 1, XR_UNIT_MAYBE_DONE = 2, XR_UNIT_RUN = 4,
       XR_UNIT_BCAST = 8 /* its described collective was called as ncclBcast
                            (XR_OPF_BCAST): for messages only */ };
_Static_assert(sizeof(xr_unitstate) == 64, "xr_unitstate is a wire record");

/* The unit's collective's name after "nccl", as its rank called it. */
static inline const char *xr_unit_coll_name(const xr_unitstate *U) {
  return U->coll == A2A_COLL_BROADCAST && (U->flags & XR_UNIT_BCAST) ? "Bcast"
                                                                     : a2a_coll_name(U->coll);
}

/* Host-side blocking call on which a thread waits. */
enum { XR_WAIT_STREAM = 1, XR_WAIT_EVENT, XR_WAIT_DEVICE, XR_WAIT_MEMCPY,
       XR_WAIT_NCCL,
       XR_WAIT_SPLIT, /* inside ncclCommSplit/Shrink #index of comm: it returns
                        when every rank of comm made that split */
       XR_WAIT_INIT   /* inside a blocking ncclCommInitRank* of comm: it returns
                        when every rank joined (never when they disagree) */ };

/* A host thread inside a blocking call (PRE seen, POST not yet). */
typedef struct xr_threadstate {
  uint64_t stream;       /* the stream it waits on (XR_WAIT_STREAM) */
  uint64_t site;         /* call site of the blocking call */
  uint64_t blocked_ms;   /* how long it has been blocked */
  uint64_t comm;         /* XR_WAIT_SPLIT: the parent communicator */
  uint32_t thread;       /* shim thread index */
  uint32_t wait;         /* XR_WAIT_* */
  uint32_t all;          /* 1: waits for every incomplete unit of the process */
  uint32_t index;        /* XR_WAIT_SPLIT: the split's index in the parent */
  int32_t rank;          /* XR_WAIT_SPLIT: the caller's rank in the parent */
  uint32_t flags;        /* XR_THREAD_* */
} xr_threadstate;

/* Thread flags. POLLING: not inside a blocking call but in a loop that
 * only queries the stream or event (cudaStreamQuery/cudaEventQuery) until
 * it completes: the same wait (xrank.c, "Polling waits"). POLLED: an
 * XR_WAIT_SPLIT/INIT of a non-blocking communicator, whose call returned
 * ncclInProgress: the thread waits in it by polling ncclCommGetAsyncError
 * (xrank.c, wait_keep_polled). */
enum { XR_THREAD_POLLING = 1, XR_THREAD_POLLED = 2 };
_Static_assert(sizeof(xr_threadstate) == 56, "xr_threadstate is a wire record");

/* The call a thread waits in, for the stories and the details: the
 * blocking call, or the polling loop that waits the same way. */
static inline const char *xr_thread_wait_name(const xr_threadstate *T) {
  if (T->flags & XR_THREAD_POLLING)
    return T->wait == XR_WAIT_STREAM ? "a cudaStreamQuery polling loop"
                                     : "a cudaEventQuery polling loop";
  int polled = (T->flags & XR_THREAD_POLLED) != 0;
  switch (T->wait) {
  case XR_WAIT_STREAM: return "cudaStreamSynchronize";
  case XR_WAIT_EVENT: return "cudaEventSynchronize";
  case XR_WAIT_DEVICE: return "cudaDeviceSynchronize";
  case XR_WAIT_MEMCPY: return "a blocking cudaMemcpy";
  case XR_WAIT_SPLIT:
    return polled ? "a non-blocking ncclCommSplit (polling ncclCommGetAsyncError)" : "ncclCommSplit";
  case XR_WAIT_INIT:
    return polled ? "a non-blocking ncclCommInitRank (polling ncclCommGetAsyncError)"
                  : "ncclCommInitRank";
  default: return "a blocking call";
  }
}

/* A process's whole progress state, as the coordinator holds it. Arrays are
 * owned by whoever built the struct (the parser: one block). */
typedef struct xr_procstate {
  int alive;             /* 0 once the process said bye or its socket closed */
  int died;              /* not alive, and its socket closed without a bye:
                            killed or crashed (coordinator side only) */
  int32_t pid, grank;    /* process id, global rank (-1 unknown) */
  char host[64];
  uint32_t version;      /* report sequence number */
  uint32_t ncomms, nunits, nthreads, npeers;
  const xr_commstate *comms;
  const xr_unitstate *units;
  const xr_threadstate *threads;
  const xr_peerent *peers;
} xr_procstate;

/* How a process that is no longer alive ended, for stories. */
static inline const char *xr_proc_gone(const xr_procstate *p) {
  return p->died ? "died (its connection closed without a goodbye: killed or crashed)" : "exited";
}

/* Whether a thread of process P is inside split #index of comm for `rank`
 * (it made the call, which returns once every rank made it). */
static inline bool xr_inside_split(const xr_procstate *P, uint64_t comm, uint32_t index,
                                   int32_t rank) {
  for (uint32_t k = 0; k < P->nthreads; k++)
    if (P->threads[k].wait == XR_WAIT_SPLIT && P->threads[k].comm == comm &&
        P->threads[k].index == index && P->threads[k].rank == rank)
      return true;
  return false;
}

#ifdef __cplusplus
}
#endif
#endif /* A2A_XRANK_H */
