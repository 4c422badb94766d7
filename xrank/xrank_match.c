/* xrank_match.c - the coordinator's operation matcher (see xrank_match.h). */
#include "xrank_match.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2a_core.h"

#define MAX_NRANKS (1 << 16)       /* larger registrations are rejected */
#define MAX_QUEUE (1u << 16)       /* pending ops per queue before giving up */
#define DIRECT_RANKS 256           /* up to this many ranks, pair (s, d) is
                                      slot s*nranks+d of a direct table (at
                                      most 256 KiB); beyond, a hash table */
#define MIN_BUCKETS 256            /* initial (sender, receiver) chains per comm */
#define MAX_PAIRS (1u << 22)      /* pairs per comm (a 2048-rank all-to-all):
                                     past it matching stops on the comm */
#define MAX_NODES (1u << 26)      /* pending sends/receives per comm (3.5 GiB
                                     of nodes, 32-bit indices): past it
                                     matching stops */
#define MAX_KEYS 256               /* distinct verdict keys per comm */

/* A FIFO of pending operations (a rank's unmatched collectives). */
typedef struct opq {
  xr_op *v;
  size_t head, len, cap;
} opq;

static int opq_push(opq *q, const xr_op *op) {
  if (q->len == q->cap) {
    if (q->cap >= MAX_QUEUE) return -1;
    size_t ncap = q->cap ? q->cap * 2 : 8;
    xr_op *nv = malloc(ncap * sizeof *nv);
    if (!nv) return -1;
    for (size_t i = 0; i < q->len; i++) nv[i] = q->v[(q->head + i) % q->cap];
    free(q->v);
    q->v = nv;
    q->cap = ncap;
    q->head = 0;
  }
  q->v[(q->head + q->len) % q->cap] = *op;
  q->len++;
  return 0;
}
static const xr_op *opq_front(const opq *q) { return q->len ? &q->v[q->head] : NULL; }
static const xr_op *opq_back(const opq *q) {
  return q->len ? &q->v[(q->head + q->len - 1) % q->cap] : NULL;
}
static void opq_pop(opq *q) {
  if (!q->len) return;
  q->head = (q->head + 1) % q->cap;
  q->len--;
}
static void opq_free(opq *q) { free(q->v); memset(q, 0, sizeof *q); }

/* One (sender s, receiver d) pair of a communicator: the i-th send s->d
 * matches the i-th receive at d from s. Its unmatched operations wait in
 * one FIFO of nodes (the comm's node pool): a pair never holds unmatched
 * sends and unmatched receives at once (an operation meeting a waiting
 * counterpart is matched, never queued), so `kind` says which the queue
 * holds. Pairs live in one array per comm and are found through a chained
 * hash table of indices: no allocation per pair or per pending operation
 * (the arrays double when full; matched operations' nodes are reused), and
 * freeing a comm frees a few arrays (a 1,024-rank all-to-all makes a
 * million pairs). Indices are 1-based; 0 is "none". */
typedef struct pairq {
  int32_t s, d;
  uint32_t nsend, nrecv;  /* posted so far */
  uint32_t next;          /* next pair in its bucket's chain */
  uint32_t head, tail;    /* the queue's first and last node */
  uint32_t len;           /* operations queued */
  uint16_t kind;          /* XR_OP_SEND or XR_OP_RECV while len > 0 */
} pairq;

typedef struct pnode {
  xr_op op;
  uint32_t next;          /* next in its pair's queue, or in the free list */
} pnode;

typedef struct mrank {
  int conn;               /* -1 until registered */
  int ended;              /* comm ended or process gone: 1; 2 when its process
                             died without a goodbye (then no
                             size.unmatched-p2p names it: rank_ended) */
  int32_t device;
  uint64_t site;          /* init call site */
  uint32_t ncoll;         /* collectives posted */
  opq colls;              /* collectives not yet matched across all ranks */
  size_t live;            /* this rank's queued sends/receives whose peer has
                             not ended (what pending counts) */
  uint32_t nrooted;       /* rooted API collectives (Scatter, Gather) posted */
  uint32_t parts_to;      /* pair queues of other ranks towards this one whose
                             front is part of an API collective (AlltoAll,
                             Gather, Scatter): while 0, no clash with one of
                             this rank's collectives is possible */
} mrank;

typedef struct mcomm {
  uint64_t id, parent;
  int32_t nranks, color;
  uint32_t split_index;
  int how;
  int nregistered;
  int nended;             /* ranks ended */
  int died;               /* 1 + a rank whose process died without a goodbye
                             (the last one), 0 none: see died_cause */
  uint32_t end_ncoll;     /* the fewest collectives an ended rank posted
                             (UINT32_MAX while none ended): a queued
                             collective numbered below it can still match */
  int nready;             /* ranks with an unmatched collective: the next
                             one is compared when all nranks have one */
  int desynced;           /* a queue overflowed: matching stopped */
  mrank *ranks;
  uint32_t coll_matched;
  pairq *pairs;           /* pairs[1..npairs] (pairs[0] unused), capacity cpairs */
  uint32_t npairs, cpairs;
  uint32_t *buckets;      /* direct: nranks^2 slots (pair index or 0);
                             else chain heads: nbuckets, a power of two,
                             doubled when there are more pairs than buckets
                             (an all-to-all on n ranks makes n^2); both made
                             with the first pair */
  size_t nbuckets;
  int direct;
  pnode *nodes;           /* nodes[1..nnodes] (nodes[0] unused), capacity
                             cnodes; the free ones chained from freenode */
  uint32_t nnodes, cnodes, freenode;
  uint64_t keys[MAX_KEYS];
  int nkeys;
  char last[768];
  /* The latest rooted API collectives, by number on the rank that posted
   * each first (rooted_check; idx 0: unused). */
  struct rooted { uint32_t idx; int32_t rank; xr_op op; } rooted[8];
  uint32_t rooted_next;
  struct mcomm *next;
} mcomm;

typedef struct mconn {
  int used, gone;
  int pid, grank;
  char host[64];
} mconn;

/* An abort whose unmatched operations are judged after XR_ABORT_GRACE_NS
 * (xr_matcher_tick): each connection's records arrive in batches of their
 * own, so at the abort's arrival a peer's counterparts posted before it may
 * still be on their way (a correct program that aborts at its end). */
#define XR_ABORT_GRACE_NS 500000000ull
#define XR_MAX_ABORTS 64
typedef struct pabort { uint64_t comm, at; int rank, conn; } pabort;

struct xr_matcher {
  xr_match_out out;
  mcomm *comms;
  mconn *conns;
  int nconns;
  uint64_t now;                     /* the last tick's time */
  pabort aborts[XR_MAX_ABORTS];     /* aborts awaiting their grace */
  int naborts;
};

/* ------------------------------------------------------------------ */

xr_matcher *xr_matcher_new(const xr_match_out *out) {
  xr_matcher *m = calloc(1, sizeof *m);
  if (m) m->out = *out;
  return m;
}

/* The pair table and node pool (a desynced comm keeps none). */
static void pairs_free(mcomm *c) {
  free(c->pairs);
  free(c->buckets);
  free(c->nodes);
  c->pairs = NULL;
  c->buckets = NULL;
  c->nodes = NULL;
  c->npairs = c->cpairs = c->nnodes = c->cnodes = c->freenode = 0;
  c->nbuckets = 0;
  c->direct = 0;
}

static void comm_free(mcomm *c) {
  pairs_free(c);
  if (c->ranks)
    for (int r = 0; r < c->nranks; r++) opq_free(&c->ranks[r].colls);
  free(c->ranks);
  free(c);
}

void xr_matcher_free(xr_matcher *m) {
  if (!m) return;
  mcomm *c = m->comms;
  while (c) {
    mcomm *n = c->next;
    comm_free(c);
    c = n;
  }
  free(m->conns);
  free(m);
}

static mconn *conn_get(xr_matcher *m, int conn) {
  if (conn < 0 || conn > 1 << 20) return NULL;
  if (conn >= m->nconns) {
    int n = m->nconns ? m->nconns : 16;
    while (n <= conn) n *= 2;
    mconn *nc = realloc(m->conns, (size_t)n * sizeof *nc);
    if (!nc) return NULL;
    memset(nc + m->nconns, 0, (size_t)(n - m->nconns) * sizeof *nc);
    m->conns = nc;
    m->nconns = n;
  }
  return &m->conns[conn];
}

void xr_matcher_hello(xr_matcher *m, int conn, int pid, int grank,
                      const char *host) {
  mconn *c = conn_get(m, conn);
  if (!c) return;
  c->used = 1;
  c->gone = 0;
  c->pid = pid;
  c->grank = grank;
  snprintf(c->host, sizeof c->host, "%s", host ? host : "");
}

static mcomm *comm_find(const xr_matcher *m, uint64_t id) {
  for (mcomm *c = m->comms; c; c = c->next)
    if (c->id == id) return c;
  return NULL;
}

static const char *site_str(xr_matcher *m, int conn, uint64_t site, char *buf,
                            size_t cap) {
  /* Copied: the callback may reuse one buffer for every call. */
  const char *s = m->out.site_name && site ? m->out.site_name(m->out.ctx, conn, site) : NULL;
  if (s && *s) snprintf(buf, cap, "%s", s);
  else if (!site) snprintf(buf, cap, "unknown site");
  else snprintf(buf, cap, "0x%" PRIx64, site);
  return buf;
}

/* Dedup: true the first time (comm, check, a, b) is seen, false afterwards
 * and once the per-comm cap is reached. */
static int first_time(mcomm *c, a2a_check_id check, int a, int b) {
  int32_t ck = (int32_t)check;
  uint64_t k = a2a_hash_bytes(&ck, sizeof ck, ((uint64_t)(uint32_t)a << 32) | (uint32_t)b);
  for (int i = 0; i < c->nkeys; i++)
    if (c->keys[i] == k) return 0;
  if (c->nkeys >= MAX_KEYS) return 0;
  c->keys[c->nkeys++] = k;
  return 1;
}

static void send_verdict(xr_matcher *m, mcomm *c, int rank, a2a_check_id check,
                         a2a_severity sev, uint64_t site, const char *text,
                         const char *json) {
  if (rank < 0 || rank >= c->nranks) return;
  int conn = c->ranks[rank].conn;
  if (conn < 0 || !m->out.verdict) return;
  if (conn < m->nconns && m->conns[conn].gone) return;
  xr_verdict v = {.comm = c->id, .site = site, .severity = sev, .flags = 0,
                  .check = check, .text = text, .json = json, .rank_p1 = (uint32_t)rank + 1};
  m->out.verdict(m->out.ctx, conn, &v);
}

/* " (global ranks 5 and 4)" when communicator ranks differ from the
 * processes' global ranks (split communicators), else "". */
static const char *gnote(const xr_matcher *m, const mcomm *c, int r1, int r2, char *buf,
                         size_t cap) {
  buf[0] = 0;
  int g[2] = {-1, -1}, r[2] = {r1, r2};
  for (int i = 0; i < 2; i++) {
    int conn = r[i] >= 0 && r[i] < c->nranks ? c->ranks[r[i]].conn : -1;
    if (conn >= 0 && conn < m->nconns) g[i] = m->conns[conn].grank;
  }
  if (g[0] < 0 || g[1] < 0 || (g[0] == r1 && g[1] == r2)) return buf;
  /* Both ranks in one process (ncclCommInitAll, a thread per rank): the
   * process has one global rank, which names neither. */
  if (c->ranks[r1].conn == c->ranks[r2].conn) return buf;
  snprintf(buf, cap, " (comm ranks %d and %d are global ranks %d and %d)", r1, r2, g[0], g[1]);
  return buf;
}

const char *xr_op_coll_name(const xr_op *op) {
  return op->coll == A2A_COLL_BROADCAST && (op->flags & XR_OPF_BCAST) ? "Bcast"
                                                                     : a2a_coll_name(op->coll);
}

const char *xr_op_describe(const xr_op *op, char *buf, size_t cap) {
  size_t es = a2a_dtype_size(op->dtype);
  if (op->kind == XR_OP_COLL) {
    int n = snprintf(buf, cap, "nccl%s(count %" PRIu64 ", %s", xr_op_coll_name(op),
                     op->count, a2a_dtype_name(op->dtype));
    if (n < 0 || (size_t)n >= cap) return buf;
    if (op->redop >= 0)
      n += snprintf(buf + n, cap - (size_t)n, ", %s", a2a_redop_name(op->redop));
    if (n < 0 || (size_t)n >= cap) return buf;
    if (op->root >= 0) n += snprintf(buf + n, cap - (size_t)n, ", root %d", op->root);
    if (n < 0 || (size_t)n >= cap) return buf;
    snprintf(buf + n, cap - (size_t)n, "%s)",
             op->flags & XR_OPF_REPLAY ? "; a cudaGraphLaunch's replay of the captured call" : "");
  } else {
    int n = snprintf(buf, cap, "%s %" PRIu64 " B (%" PRIu64 " x %s) %s rank %d",
                     op->kind == XR_OP_SEND ? "sends" : "receives", op->count * es, op->count,
                     a2a_dtype_name(op->dtype), op->kind == XR_OP_SEND ? "to" : "from", op->peer);
    if (xr_coll_is_p2p(op->coll) && n > 0 && (size_t)n < cap) {
      if (op->coll == A2A_COLL_ALLTOALL)
        snprintf(buf + n, cap - (size_t)n, " in its ncclAlltoAll(count %" PRIu64 ", %s)",
                 op->count, a2a_dtype_name(op->dtype));
      else
        snprintf(buf + n, cap - (size_t)n, " in its nccl%s(count %" PRIu64 ", %s, root %d)",
                 a2a_coll_name(op->coll), op->count, a2a_dtype_name(op->dtype), op->root);
    }
    size_t m = strlen(buf);
    if (op->flags & XR_OPF_REPLAY && m < cap)
      snprintf(buf + m, cap - m, " (a cudaGraphLaunch's replay of the captured call)");
  }
  return buf;
}

/* How a send or receive was posted, for messages: "ncclSend" /
 * "ncclRecv", or the collective it is part of. */
static const char *p2p_api(const xr_op *op, char *buf, size_t cap) {
  if (xr_coll_is_p2p(op->coll))
    snprintf(buf, cap, "nccl%s", a2a_coll_name(op->coll));
  else
    snprintf(buf, cap, "%s", op->kind == XR_OP_SEND ? "ncclSend" : "ncclRecv");
  return buf;
}

/* ------------------------------------------------------------------ */
/* Registration. */

static void init_mismatch(xr_matcher *m, mcomm *c, int r1, uint64_t s1, int r2,
                          uint64_t s2, a2a_check_id check, const char *text) {
  snprintf(c->last, sizeof c->last, "%s", text);
  if (first_time(c, check, r1, r2)) {
    send_verdict(m, c, r1, check, A2A_SEV_ERROR, s1, text, NULL);
    if (r2 != r1) send_verdict(m, c, r2, check, A2A_SEV_ERROR, s2, text, NULL);
  }
}

/* A conn-level verdict for a rank not (yet) recorded in c->ranks (rank:
 * the one the registration claimed, for the process's own record of it;
 * -1 when not known). */
static void conn_verdict(xr_matcher *m, int conn, uint64_t comm, int rank, a2a_check_id check,
                         uint64_t site, const char *text) {
  if (!m->out.verdict) return;
  xr_verdict v = {.comm = comm, .site = site, .severity = A2A_SEV_ERROR,
                  .check = check, .text = text, .rank_p1 = rank >= 0 ? (uint32_t)rank + 1 : 0};
  m->out.verdict(m->out.ctx, conn, &v);
}

void xr_matcher_register(xr_matcher *m, int conn, const xr_commreg *reg) {
  mconn *mc = conn_get(m, conn);
  if (!mc || reg->nranks <= 0 || reg->rank < 0 || reg->rank >= reg->nranks) return;
  char text[768];
  mcomm *c = comm_find(m, reg->comm);
  if (!c) {
    if (reg->nranks > MAX_NRANKS) return;
    c = calloc(1, sizeof *c);
    if (!c) return;
    c->ranks = calloc((size_t)reg->nranks, sizeof *c->ranks);
    if (!c->ranks) { free(c); return; }
    for (int r = 0; r < reg->nranks; r++) c->ranks[r].conn = -1;
    c->end_ncoll = UINT32_MAX;
    c->id = reg->comm;
    c->parent = reg->parent;
    c->nranks = reg->nranks;
    c->color = reg->color;
    c->split_index = reg->split_index;
    c->how = reg->how;
    c->next = m->comms;
    m->comms = c;
  }
  if (reg->nranks != c->nranks) {
    /* Name the first registered rank as the other party, by its process
     * too: the rank numbers of two processes that disagree on nranks may
     * well be the same. */
    int other = -1;
    for (int r = 0; r < c->nranks && other < 0; r++)
      if (c->ranks[r].conn >= 0) other = r;
    char who[96] = "";
    if (other >= 0) {
      const mconn *oc = &m->conns[c->ranks[other].conn];
      snprintf(who, sizeof who, " (pid %d on %s)", oc->pid, oc->host);
    }
    snprintf(text, sizeof text,
             "communicator %016" PRIx64 ": rank %d (pid %d on %s) created it with nranks=%d, but "
             "rank %d%s created it with nranks=%d: every rank must pass the same nranks",
             c->id, reg->rank, mc->pid, mc->host, reg->nranks, other, who, c->nranks);
    conn_verdict(m, conn, c->id, reg->rank, A2A_CK_GROUP_INIT_MISMATCH, reg->site, text);
    if (other >= 0)
      init_mismatch(m, c, other, c->ranks[other].site, other, 0, A2A_CK_GROUP_INIT_MISMATCH, text);
    return;
  }
  /* A process without a launcher rank variable is named, as the runtime
   * names it, by its rank in the first communicator it created. */
  if (mc->grank < 0) mc->grank = reg->rank;
  mrank *mr = &c->ranks[reg->rank];
  if (mr->conn >= 0) {
    mconn *oc = &m->conns[mr->conn];
    if (mr->conn == conn)
      /* One process created the same rank of the same id twice: an id
       * used again (a launcher's store handing out a destroyed
       * communicator's id after a re-initialization). */
      snprintf(text, sizeof text,
               "communicator %016" PRIx64 ": rank %d was created twice by pid %d on %s with the same "
               "ncclUniqueId: an id makes one communicator - after ncclCommDestroy the next one needs a "
               "new id (a store that still holds the old one hands it out again; the ranks then wait "
               "on different ids)",
               c->id, reg->rank, mc->pid, mc->host);
    else
      snprintf(text, sizeof text,
               "communicator %016" PRIx64 ": rank %d is claimed twice, by pid %d on %s and by pid %d "
               "on %s: every rank index must be used exactly once",
               c->id, reg->rank, oc->pid, oc->host, mc->pid, mc->host);
    conn_verdict(m, conn, c->id, reg->rank, A2A_CK_GROUP_INIT_MISMATCH, reg->site, text);
    init_mismatch(m, c, reg->rank, mr->site, reg->rank, mr->site, A2A_CK_GROUP_INIT_MISMATCH, text);
    return;
  }
  /* Same (host, device) under two processes. */
  for (int r = 0; r < c->nranks; r++) {
    mrank *o = &c->ranks[r];
    if (o->conn < 0 || o->conn == conn || o->device != reg->device || reg->device < 0) continue;
    mconn *oc = &m->conns[o->conn];
    if (strcmp(oc->host, mc->host) != 0) continue;
    snprintf(text, sizeof text,
             "communicator %016" PRIx64 ": ranks %d (pid %d) and %d (pid %d) both use CUDA device %d "
             "on host %s: give each rank its own device (cudaSetDevice(local_rank))",
             c->id, r, oc->pid, reg->rank, mc->pid, reg->device, mc->host);
    conn_verdict(m, conn, c->id, reg->rank, A2A_CK_GROUP_DUPLICATE_DEVICE, reg->site, text);
    if (first_time(c, A2A_CK_GROUP_DUPLICATE_DEVICE, r, reg->rank))
      send_verdict(m, c, r, A2A_CK_GROUP_DUPLICATE_DEVICE, A2A_SEV_ERROR, o->site, text, NULL);
    break;
  }
  mr->conn = conn;
  mr->device = reg->device;
  mr->site = reg->site;
  c->nregistered++;
  /* Inconsistent split membership shows up above: ranks that name the
   * same split (parent, split sequence, color) but disagree on its size,
   * or claim the same rank in it. Two splits of one parent that share a
   * color at different positions are legitimate (e.g. a data-parallel and
   * an expert-parallel split), so the position alone proves nothing. */
}

/* ------------------------------------------------------------------ */
/* Collectives. */

static int coll_same(const xr_op *a, const xr_op *b) {
  return a->coll == b->coll && a->count == b->count && a->dtype == b->dtype &&
         a->redop == b->redop && a->root == b->root;
}

/* Compares the next collective once every rank is registered and has one
 * queued (nready counts the ranks with one, so the check is O(1) per
 * operation and the comparison O(nranks) per collective: O(1) per entry). */
static void match_colls(xr_matcher *m, mcomm *c) {
  while (c->nregistered == c->nranks && c->nready == c->nranks) {
    /* Majority (first rank wins ties); O(n^2) but only up to 64 ranks, and
     * only when some rank differs from rank 0: when none does, rank 0 has
     * the most possible votes and wins. */
    int ref = 0, best = 0;
    int lim = c->nranks <= 64 ? c->nranks : 1;
    const xr_op *r0 = opq_front(&c->ranks[0].colls);
    int r = 1;
    while (r < c->nranks && coll_same(r0, opq_front(&c->ranks[r].colls))) r++;
    if (r == c->nranks) lim = 0, best = c->nranks;
    for (int a = 0; a < lim; a++) {
      int n = 0;
      for (int b = 0; b < c->nranks; b++)
        n += coll_same(opq_front(&c->ranks[a].colls), opq_front(&c->ranks[b].colls));
      if (n > best) { best = n; ref = a; }
    }
    const xr_op *rop = opq_front(&c->ranks[ref].colls);
    char text[768], d1[160], d2[160], s1[128], s2[128];
    for (int r = 0; r < c->nranks; r++) {
      const xr_op *op = opq_front(&c->ranks[r].colls);
      if (coll_same(op, rop)) continue;
      a2a_check_id check = op->coll != rop->coll ? A2A_CK_GROUP_ORDER_MISMATCH : A2A_CK_SIZE_COLLECTIVE_MISMATCH;
      /* The same operation moving the same bytes with another dtype (float
       * on some ranks, half with twice the count on others) does not hang:
       * the data is reinterpreted, and a reduction adds up bit patterns of
       * different types. */
      int same_bytes = op->coll == rop->coll && op->dtype != rop->dtype &&
                       op->redop == rop->redop && op->root == rop->root &&
                       op->count * a2a_dtype_size(op->dtype) == rop->count * a2a_dtype_size(rop->dtype);
      int reduction = op->coll == A2A_COLL_ALLREDUCE || op->coll == A2A_COLL_REDUCE ||
                      op->coll == A2A_COLL_REDUCESCATTER;
      /* Only the reduction differs. NCCL picks the algorithm and protocol
       * from the collective and its byte count (src/graph/tuning.cc:
       * ncclTopoGetAlgoTime takes coll, algorithm, protocol and bytes, not
       * the op), and the channel steps it enqueues are byte counts too, so
       * the ranks move the same data and complete; each rank's kernel
       * combines what it receives with its own operation, so the result is
       * a mix of the operations. The op does gate some candidates
       * (src/enqueue.cc: ncclNvlsSupported(op, type) for NVLS/NVLS_TREE,
       * collNetSupportMatrix[op][type] for CollNet, PAT ReduceScatter
       * without PreMulSum/Avg): only there can the ranks pick different
       * algorithms and hang. Read in NVIDIA/nccl 5067397c (2.28+). Not a
       * known cause of a hang: the deadlock analysis must not assume it
       * never completes. */
      int redop_only = op->coll == rop->coll && op->count == rop->count && op->dtype == rop->dtype &&
                       op->root == rop->root && op->redop != rop->redop;
      a2a_severity sev = A2A_SEV_ERROR;
      if (same_bytes) {
        check = A2A_CK_SIZE_DTYPE_MISMATCH;
        sev = reduction ? A2A_SEV_ERROR : A2A_SEV_WARNING;
      }
      const char *what = op->coll != rop->coll ? "a different operation"
                         : same_bytes ? "a different dtype at the same bytes"
                         : op->count != rop->count ? "a different count"
                         : op->dtype != rop->dtype ? "a different dtype"
                         : op->root != rop->root ? "a different root"
                                                 : "a different reduction";
      /* Who else calls the reference: every other rank, some (a tie or a
       * plurality: "the other ranks" would claim a majority), or nobody. */
      int others = best - 1;
      char with[48] = "";
      if (others > 0 && best == c->nranks - 1) snprintf(with, sizeof with, " and the other ranks");
      else if (others > 0)
        snprintf(with, sizeof with, " and %d other rank%s", others, others > 1 ? "s" : "");
      snprintf(text, sizeof text,
               "collective #%u on communicator %016" PRIx64 ": rank %d calls %s at %s, but rank %d%s "
               "call%s %s at %s (%s)%s",
               c->coll_matched + 1, c->id, r, xr_op_describe(op, d1, sizeof d1),
               site_str(m, c->ranks[r].conn, op->site, s1, sizeof s1), ref,
               with, others > 0 ? "" : "s",
               xr_op_describe(rop, d2, sizeof d2),
               site_str(m, c->ranks[ref].conn, rop->site, s2, sizeof s2), what,
               op->coll != rop->coll
                   ? ": the ranks call collectives in different orders or one rank skipped one"
               : same_bytes
                   ? (reduction ? ": NCCL moves the same bytes, but each rank reduces them as its "
                                  "own type: the result is garbage"
                                : ": NCCL moves the same bytes and each rank reinterprets them "
                                  "as its own type")
                   : redop_only
                   ? ": NCCL moves the same data and completes it, each rank reducing with "
                     "its own operation: the result is wrong (it can hang only where the "
                     "operation changes NCCL's algorithm: NVLS, CollNet)"
                   : op->count == rop->count && op->dtype == rop->dtype && op->root != rop->root
                   ? ": the ranks send and receive along different roots: NCCL hangs or "
                     "delivers wrong data"
                   : ": NCCL reads/writes the wrong number of elements or hangs");
      size_t tl = strlen(text);
      gnote(m, c, r, ref, text + tl, sizeof text - tl);
      /* A known cause of a hang (the wait-for graph never assumes such an
       * operation completes); a reinterpretation at equal bytes is none,
       * nor is a different reduction (see redop_only). */
      if (!same_bytes && !redop_only) snprintf(c->last, sizeof c->last, "%s", text);
      if (first_time(c, check, r, ref)) {
        send_verdict(m, c, r, check, sev, op->site, text, NULL);
        send_verdict(m, c, ref, check, sev, rop->site, text, NULL);
      }
    }
    for (int r = 0; r < c->nranks; r++) {
      opq_pop(&c->ranks[r].colls);
      if (!c->ranks[r].colls.len) c->nready--;
    }
    c->coll_matched++;
  }
}

/* ------------------------------------------------------------------ */
/* Point-to-point. */

static size_t pair_bucket(int32_t s, int32_t d, size_t nbuckets) {
  uint64_t k = ((uint64_t)(uint32_t)s << 32 | (uint32_t)d) * 0x9e3779b97f4a7c15ull;
  return (size_t)(k >> 32) & (nbuckets - 1);
}

/* Twice the chains, when there are more pairs than chains (nothing changes
 * if the allocation fails: chains just get longer). The first table has
 * MIN_BUCKETS chains. */
static void pairs_grow(mcomm *c) {
  size_t nb = c->nbuckets ? c->nbuckets * 2 : MIN_BUCKETS;
  uint32_t *t = calloc(nb, sizeof *t);
  if (!t) return;
  for (uint32_t i = 1; i <= c->npairs; i++) {
    pairq *p = &c->pairs[i];
    size_t b = pair_bucket(p->s, p->d, nb);
    p->next = t[b];
    t[b] = i;
  }
  free(c->buckets);
  c->buckets = t;
  c->nbuckets = nb;
}

static size_t pair_slot(const mcomm *c, int32_t s, int32_t d) {
  return (size_t)(uint32_t)s * (size_t)(uint32_t)c->nranks + (size_t)(uint32_t)d;
}

/* The pair (s, d) (both in [0, nranks)), or NULL. */
static inline __attribute__((always_inline)) pairq *pair_find(const mcomm *c, int32_t s, int32_t d) {
  if (c->direct) {
    uint32_t i = c->buckets[pair_slot(c, s, d)];
    return i ? &c->pairs[i] : NULL;
  }
  if (!c->nbuckets) return NULL;
  for (uint32_t i = c->buckets[pair_bucket(s, d, c->nbuckets)]; i; i = c->pairs[i].next)
    if (c->pairs[i].s == s && c->pairs[i].d == d) return &c->pairs[i];
  return NULL;
}

/* A new pair (s, d), not in the table yet; NULL when MAX_PAIRS is reached
 * or out of memory. Out of line: a pair is made once and found often. */
static __attribute__((noinline)) pairq *pair_new(mcomm *c, int32_t s, int32_t d) {
  if (c->npairs >= MAX_PAIRS) return NULL;
  if (c->npairs + 1 >= c->cpairs) {
    uint32_t nc = c->cpairs ? c->cpairs * 2 : 64;
    pairq *np = realloc(c->pairs, (size_t)nc * sizeof *np);
    if (!np) return NULL;
    c->pairs = np;
    c->cpairs = nc;
  }
  if (!c->nbuckets && c->nranks <= DIRECT_RANKS) {
    size_t n = (size_t)c->nranks * (size_t)c->nranks;
    if (!(c->buckets = calloc(n, sizeof *c->buckets))) return NULL;
    c->nbuckets = n;
    c->direct = 1;
  } else if (!c->direct && c->npairs >= c->nbuckets) {
    pairs_grow(c);
  }
  if (!c->nbuckets) return NULL;
  uint32_t i = ++c->npairs;
  pairq *p = &c->pairs[i];
  memset(p, 0, sizeof *p);
  p->s = s;
  p->d = d;
  if (c->direct) {
    c->buckets[pair_slot(c, s, d)] = i;
  } else {
    size_t b = pair_bucket(s, d, c->nbuckets);
    p->next = c->buckets[b];
    c->buckets[b] = i;
  }
  return p;
}

/* The pair (s, d), created when `create` (NULL when it is not there, or it
 * cannot be created). The pointer is valid until the next pair_new. */
static pairq *pair_get(mcomm *c, int32_t s, int32_t d, int create) {
  pairq *p = pair_find(c, s, d);
  return p || !create ? p : pair_new(c, s, d);
}

/* The peer p's queued operations wait for (their poster is op.rank). */
static int pq_other(const pairq *p) { return p->kind == XR_OP_SEND ? p->d : p->s; }
/* Unmatched sends s->d / receives at d from s. */
static uint32_t pq_sends(const pairq *p) { return p->kind == XR_OP_SEND ? p->len : 0; }
static uint32_t pq_recvs(const pairq *p) { return p->kind == XR_OP_RECV ? p->len : 0; }
static const xr_op *pq_front(const mcomm *c, const pairq *p) {
  return p->len ? &c->nodes[p->head].op : NULL;
}

/* A node never used yet (the pool grows), or 0. Out of line: the free list
 * serves nearly every push. */
static __attribute__((noinline)) uint32_t node_new(mcomm *c) {
  if (c->nnodes + 1 >= c->cnodes) {
    if (c->cnodes >= MAX_NODES) return 0;
    uint32_t nc = c->cnodes ? c->cnodes * 2 : 64;
    pnode *nn = realloc(c->nodes, (size_t)nc * sizeof *nn);
    if (!nn) return 0;
    c->nodes = nn;
    c->cnodes = nc;
  }
  return ++c->nnodes;
}

/* Whether op, queued on a pair by its poster towards `other`, counts in
 * the peer's parts_to (see mrank). */
static int is_part_towards(const xr_op *op, int other) {
  return other != op->rank && xr_coll_is_p2p(op->coll);
}

/* pair_find, pq_push and pq_pop are always inlined: with p2p_op they are
 * the path of every send and receive (their slow parts are out of line).
 *
 * Queue op (of p's kind, or p is empty) on p, keeping the ranks' counters:
 * `live` of its poster while the peer has not ended, `parts_to` of the
 * peer when it becomes the front. -1 (nothing queued) when the queue is
 * full or the pool cannot grow. */
static inline __attribute__((always_inline)) int pq_push(mcomm *c, pairq *p, const xr_op *op) {
  if (p->len >= MAX_QUEUE) return -1;
  uint32_t i = c->freenode;
  if (i) c->freenode = c->nodes[i].next;
  else if (!(i = node_new(c))) return -1;
  pnode *n = &c->nodes[i];
  n->op = *op;
  n->next = 0;
  int other = op->kind == XR_OP_SEND ? p->d : p->s; /* the poster is op->rank */
  mrank *O = &c->ranks[other];
  if (p->len++) {
    c->nodes[p->tail].next = i;
  } else {
    p->head = i;
    p->kind = op->kind;
    if (is_part_towards(op, other)) O->parts_to++;
  }
  p->tail = i;
  if (!O->ended) c->ranks[op->rank].live++;
  return 0;
}

/* Drop p's front operation (its node goes to the free list). */
static inline __attribute__((always_inline)) void pq_pop(mcomm *c, pairq *p) {
  if (!p->len) return;
  uint32_t i = p->head;
  pnode *n = &c->nodes[i];
  int other = pq_other(p);
  mrank *O = &c->ranks[other];
  if (!O->ended) c->ranks[n->op.rank].live--;
  int was_part = is_part_towards(&n->op, other);
  p->head = n->next;
  n->next = c->freenode;
  c->freenode = i;
  if (--p->len == 0) {
    p->head = p->tail = 0;
    O->parts_to -= (uint32_t)was_part;
  } else {
    O->parts_to += (uint32_t)is_part_towards(&c->nodes[p->head].op, other) - (uint32_t)was_part;
  }
}

/* A send and the receive it matches, in NCCL's per-pair order. Three cases:
 *  - both sides are the same collective executed as sends and receives
 *    (every rank in ncclAlltoAll, say): the collective-level message,
 *    size.collective-mismatch, or size.dtype-mismatch at equal bytes;
 *  - otherwise different bytes: size.p2p-mismatch, naming how each side
 *    posted (ncclSend, ncclRecv, or its part of ncclAlltoAll/Gather/Scatter);
 *  - same bytes, different dtypes: size.dtype-mismatch (a warning: the
 *    receiver reinterprets the data).
 * Zero bytes either way carry no data: their dtypes do not matter. */
static void compare_p2p(xr_matcher *m, mcomm *c, const xr_op *snd, const xr_op *rcv,
                        uint32_t idx) {
  size_t ss = a2a_dtype_size(snd->dtype), rs = a2a_dtype_size(rcv->dtype);
  uint64_t sb = snd->count * ss, rb = rcv->count * rs;
  if (sb == rb && (snd->dtype == rcv->dtype || sb == 0)) return;
  int s = snd->rank, d = rcv->rank;
  char text[768], s1[128], s2[128], a1[32], a2[32], d1[160], d2[160];
  a2a_check_id check;
  a2a_severity sev;
  int same_coll = xr_coll_is_p2p(snd->coll) && snd->coll == rcv->coll;
  if (same_coll) {
    /* The ranks agree on the operation: say it the way they wrote it. */
    check = sb == rb ? A2A_CK_SIZE_DTYPE_MISMATCH : A2A_CK_SIZE_COLLECTIVE_MISMATCH;
    sev = sb == rb ? A2A_SEV_WARNING : A2A_SEV_ERROR;
    xr_op cs = *snd, cr = *rcv;
    cs.kind = cr.kind = XR_OP_COLL;
    cs.redop = cr.redop = -1;
    if (cs.coll == A2A_COLL_ALLTOALL) cs.root = cr.root = -1;
    const char *what = sb == rb ? "a different dtype at the same bytes"
                       : snd->root != rcv->root ? "a different root"
                       : snd->dtype == rcv->dtype ? "a different count"
                                                  : "a different count and dtype";
    char conseq[160];
    if (sb == rb)
      snprintf(conseq, sizeof conseq,
               "same bytes, different dtypes; each rank reinterprets what it receives");
    else if (sb > rb)
      snprintf(conseq, sizeof conseq,
               "rank %d sends more than rank %d receives (NCCL may hang or corrupt memory)", s, d);
    else
      snprintf(conseq, sizeof conseq, "rank %d waits for bytes that never come (NCCL may hang)", d);
    snprintf(text, sizeof text,
             "nccl%s on communicator %016" PRIx64 ": rank %d calls %s at %s, but rank %d calls "
             "%s at %s (%s): %s",
             a2a_coll_name(snd->coll), c->id, s, xr_op_describe(&cs, d1, sizeof d1),
             site_str(m, c->ranks[s].conn, snd->site, s1, sizeof s1), d,
             xr_op_describe(&cr, d2, sizeof d2),
             site_str(m, c->ranks[d].conn, rcv->site, s2, sizeof s2), what, conseq);
  } else if (sb != rb) {
    check = A2A_CK_SIZE_P2P_MISMATCH;
    sev = A2A_SEV_ERROR;
    snprintf(text, sizeof text,
             "rank %d sends %" PRIu64 " B (%" PRIu64 " x %s) to rank %d in group #%u (%s at %s) but "
             "rank %d receives %" PRIu64 " B (%" PRIu64 " x %s) from rank %d in group #%u (%s at %s), "
             "p2p #%u between them on communicator %016" PRIx64 ": %s; %s",
             s, sb, snd->count, a2a_dtype_name(snd->dtype), d, snd->group,
             p2p_api(snd, a1, sizeof a1), site_str(m, c->ranks[s].conn, snd->site, s1, sizeof s1), d,
             rb, rcv->count, a2a_dtype_name(rcv->dtype), s, rcv->group, p2p_api(rcv, a2, sizeof a2),
             site_str(m, c->ranks[d].conn, rcv->site, s2, sizeof s2), idx + 1, c->id,
             xr_coll_is_p2p(snd->coll) || xr_coll_is_p2p(rcv->coll)
                 ? "the two ranks exchange data with different operations (a collective that NCCL "
                   "runs as per-peer sends and receives on one side, a different one on the other)"
                 : "the sizes the two ranks give this pair disagree (in an all-to-all: its split "
                   "sizes)",
             sb > rb ? "the receiver's buffer is too small (NCCL may hang or corrupt memory)"
                     : "the receiver waits for bytes that never come (NCCL may hang)");
  } else {
    check = A2A_CK_SIZE_DTYPE_MISMATCH;
    sev = A2A_SEV_WARNING;
    snprintf(text, sizeof text,
             "rank %d sends %" PRIu64 " x %s to rank %d in group #%u (%s at %s) but rank %d receives "
             "%" PRIu64 " x %s from rank %d in group #%u (%s at %s) on communicator %016" PRIx64
             ": same bytes, different dtypes; the receiver reinterprets the data",
             s, snd->count, a2a_dtype_name(snd->dtype), d, snd->group, p2p_api(snd, a1, sizeof a1),
             site_str(m, c->ranks[s].conn, snd->site, s1, sizeof s1), d, rcv->count,
             a2a_dtype_name(rcv->dtype), s, rcv->group, p2p_api(rcv, a2, sizeof a2),
             site_str(m, c->ranks[d].conn, rcv->site, s2, sizeof s2), c->id);
  }
  size_t tl = strlen(text);
  gnote(m, c, s, d, text + tl, sizeof text - tl);
  if (sev == A2A_SEV_ERROR) snprintf(c->last, sizeof c->last, "%s", text);
  /* One verdict per pair of ranks and check (a collective-level mismatch is
   * found from both directions of the pair). */
  if (!first_time(c, check, same_coll && d < s ? d : s, same_coll && d < s ? s : d)) return;
  char json[640];
  snprintf(json, sizeof json,
           "{\"sender\":%d,\"receiver\":%d,\"send_bytes\":%" PRIu64 ",\"recv_bytes\":%" PRIu64
           ",\"send_count\":%" PRIu64 ",\"recv_count\":%" PRIu64
           ",\"send_dtype\":\"%s\",\"recv_dtype\":\"%s\",\"send_group\":%u,\"recv_group\":%u,"
           "\"p2p_index\":%u,\"send_api\":\"%s\",\"recv_api\":\"%s\"}",
           s, d, sb, rb, snd->count, rcv->count, a2a_dtype_name(snd->dtype),
           a2a_dtype_name(rcv->dtype), snd->group, rcv->group, idx + 1,
           p2p_api(snd, a1, sizeof a1), p2p_api(rcv, a2, sizeof a2));
  send_verdict(m, c, s, check, sev, snd->site, text, json);
  if (d != s) send_verdict(m, c, d, check, sev, rcv->site, text, json);
}

/* Matching stops on c for good: nothing reads its queues or pairs again
 * (operations, ends and pending skip a desynced comm), so they are freed. */
static void desync(mcomm *c) {
  c->desynced = 1;
  pairs_free(c);
  for (int r = 0; r < c->nranks; r++) {
    opq_free(&c->ranks[r].colls);
    c->ranks[r].live = 0;
    c->ranks[r].parts_to = 0;
  }
  c->nready = 0;
}

/* The communicator's known cause (c->last: the deadlock analysis never
 * completes its incomplete units) when an operation waits for rank
 * c->died - 1, whose process died: set only then, so that ranks that go on
 * among themselves after a peer left are not suspected. */
static void died_cause(mcomm *c) {
  snprintf(c->last, sizeof c->last,
           "rank %d died (killed or crashed) without ending communicator %016" PRIx64
           ": no operation with it can complete any more",
           c->died - 1, c->id);
}

/* One send or receive, matched per (sender, receiver) in posting order. */
static void p2p_op(xr_matcher *m, mcomm *c, int conn, const xr_op *op) {
  if (op->peer < 0 || op->peer >= c->nranks) return; /* the local checks report it */
  int s = op->kind == XR_OP_SEND ? op->rank : op->peer;
  int d = op->kind == XR_OP_SEND ? op->peer : op->rank;
  pairq *p = pair_get(c, s, d, 1);
  if (!p) { desync(c); return; } /* a skipped operation would shift every later match */
  /* Posted towards a peer that already ended the comm or exited: it will
   * never be matched (told unless the peer died: see rank_ended - this
   * record may simply have arrived after the death of a peer whose own
   * counterpart died with it). */
  int other = op->kind == XR_OP_SEND ? d : s;
  uint32_t waiting = op->kind == XR_OP_SEND ? pq_recvs(p) : pq_sends(p); /* counterparts */
  if (other != op->rank && c->ranks[other].ended == 2 && !waiting) {
    if (op->kind == XR_OP_SEND) p->nsend++; else p->nrecv++;
    c->died = other + 1;
    died_cause(c);
    return;
  }
  if (other != op->rank && c->ranks[other].ended && !waiting) {
    char text[768], d1[160], s1[128];
    snprintf(text, sizeof text,
             "rank %d %s in group #%u (%s) on communicator %016" PRIx64 ", but rank %d already "
             "ended the communicator or exited: the matching %s never comes",
             op->rank, xr_op_describe(op, d1, sizeof d1), op->group,
             site_str(m, conn, op->site, s1, sizeof s1), c->id, other,
             op->kind == XR_OP_SEND ? "receive" : "send");
    snprintf(c->last, sizeof c->last, "%s", text);
    if (first_time(c, A2A_CK_SIZE_UNMATCHED_P2P, op->rank, other))
      send_verdict(m, c, op->rank, A2A_CK_SIZE_UNMATCHED_P2P, A2A_SEV_ERROR, op->site, text, NULL);
    if (op->kind == XR_OP_SEND) p->nsend++; else p->nrecv++;
    return;
  }
  if (op->kind == XR_OP_SEND) {
    uint32_t idx = p->nsend++;
    if (waiting) { /* compared in place, then dropped (compare_p2p keeps no pointer) */
      compare_p2p(m, c, op, pq_front(c, p), idx);
      pq_pop(c, p);
    } else if (pq_push(c, p, op) != 0) {
      desync(c);
    }
  } else if (op->kind == XR_OP_RECV) {
    uint32_t idx = p->nrecv++;
    if (waiting) {
      compare_p2p(m, c, pq_front(c, p), op, idx);
      pq_pop(c, p);
    } else if (pq_push(c, p, op) != 0) {
      desync(c);
    }
  }
}

/* An API collective that NCCL runs as sends and receives (ncclAlltoAll,
 * ncclGather, ncclScatter) on rank q against a real collective on rank r:
 * nothing in NCCL ever matches the two, so the ranks hang. Named when q's
 * front operation towards r (unmatched) is part of such a collective while
 * r posts a real collective, or the reverse, and r never posted a send or
 * receive with q on this communicator (then it is no send/recv-loop rank
 * that may still post the counterparts), and q has not posted that
 * collective (so it is not merely ahead of r): group.order-mismatch, a
 * known cause of the hang. */
static const xr_op *pending_part(mcomm *c, int q, int r) {
  pairq *a = pair_get(c, q, r, 0), *b = pair_get(c, r, q, 0);
  const xr_op *x = a && pq_sends(a) ? pq_front(c, a) : NULL;
  if (x && x->rank == q && xr_coll_is_p2p(x->coll)) return x;
  x = b && pq_recvs(b) ? pq_front(c, b) : NULL;
  if (x && x->rank == q && xr_coll_is_p2p(x->coll)) return x;
  return NULL;
}

static int never_p2p(mcomm *c, int r, int q) {
  pairq *a = pair_get(c, r, q, 0), *b = pair_get(c, q, r, 0);
  return (!a || a->nsend == 0) && (!b || b->nrecv == 0);
}

static void kind_clash(xr_matcher *m, mcomm *c, int q, const xr_op *part, int r,
                       const xr_op *coll) {
  char text[768], d1[160], d2[160], s1[128], s2[128];
  xr_op api = *part;
  api.kind = XR_OP_COLL;
  api.redop = -1;
  if (api.coll == A2A_COLL_ALLTOALL) api.root = -1;
  snprintf(text, sizeof text,
           "communicator %016" PRIx64 ": rank %d calls %s at %s while rank %d calls %s at %s: "
           "NCCL runs nccl%s as per-peer sends and receives, which a nccl%s never matches; the "
           "ranks call collectives in different orders or one rank skipped one",
           c->id, q, xr_op_describe(&api, d1, sizeof d1),
           site_str(m, c->ranks[q].conn, part->site, s1, sizeof s1), r,
           xr_op_describe(coll, d2, sizeof d2), site_str(m, c->ranks[r].conn, coll->site, s2, sizeof s2),
           a2a_coll_name(part->coll), xr_op_coll_name(coll));
  size_t tl = strlen(text);
  gnote(m, c, q, r, text + tl, sizeof text - tl);
  snprintf(c->last, sizeof c->last, "%s", text);
  if (first_time(c, A2A_CK_GROUP_ORDER_MISMATCH, q < r ? q : r, q < r ? r : q)) {
    send_verdict(m, c, q, A2A_CK_GROUP_ORDER_MISMATCH, A2A_SEV_ERROR, part->site, text, NULL);
    send_verdict(m, c, r, A2A_CK_GROUP_ORDER_MISMATCH, A2A_SEV_ERROR, coll->site, text, NULL);
  }
}

/* A real collective of rank r, its collective #k, was just queued: a clash
 * with a part of an API collective of rank q pending towards r when q has
 * posted fewer than k real collectives (in q's order the AlltoAll comes
 * before collective #k, in r's order collective #k comes before any send or
 * receive with q: the ranks' orders differ). */
static void clash_on_coll(xr_matcher *m, mcomm *c, int r) {
  /* Such a part is the front of a queue towards r: without one, no q
   * qualifies (the common case, and the walk below is O(nranks)). */
  if (!c->ranks[r].parts_to) return;
  const xr_op *coll = opq_back(&c->ranks[r].colls);
  uint32_t k = c->ranks[r].ncoll;
  for (int q = 0; q < c->nranks && coll; q++) {
    if (q == r || c->ranks[q].ncoll >= k) continue;
    const xr_op *part = pending_part(c, q, r);
    if (part && never_p2p(c, r, q)) kind_clash(m, c, q, part, r, coll);
  }
}

/* A part of an API collective of rank q towards r is pending: a clash when
 * r waits in a real collective that q has not posted (q is at its
 * AlltoAll instead). */
static void clash_on_part(xr_matcher *m, mcomm *c, int q, int r) {
  if (r == q || r < 0 || r >= c->nranks) return;
  const mrank *R = &c->ranks[r];
  const xr_op *coll = opq_front(&R->colls);
  if (!coll) return;
  uint32_t k = R->ncoll - (uint32_t)R->colls.len + 1; /* its number */
  if (c->ranks[q].ncoll >= k) return;
  const xr_op *part = pending_part(c, q, r);
  if (part && never_p2p(c, r, q)) kind_clash(m, c, q, part, r, coll);
}

/* A rooted API collective (ncclScatter, ncclGather: NCCL posts them as
 * sends and receives, matched pair by pair) whose ranks disagree on the
 * root leaves no pair to compare - the root sends to ranks that wait for
 * another root - and hangs. The k-th such call of each rank is compared
 * with the k-th of the first rank that posted it (the latest 8 numbers are
 * remembered: ranks further apart are not compared): the same collective
 * with another root is size.collective-mismatch, the known cause of the
 * hang. */
static void rooted_check(xr_matcher *m, mcomm *c, const xr_op *op) {
  uint32_t k = ++c->ranks[op->rank].nrooted;
  const size_t n = sizeof c->rooted / sizeof c->rooted[0];
  for (size_t i = 0; i < n; i++) {
    const struct rooted *e = &c->rooted[i];
    if (e->idx != k) continue;
    if (e->op.coll != op->coll || e->op.root == op->root || e->rank == op->rank) return;
    char text[768], d1[160], d2[160], s1[128], s2[128];
    snprintf(text, sizeof text,
             "nccl%s #%u on communicator %016" PRIx64 ": rank %d calls %s at %s, but rank %d calls "
             "%s at %s (a different root): the ranks send to and receive from different roots, so "
             "NCCL hangs",
             xr_op_coll_name(op), k, c->id, op->rank, xr_op_describe(op, d1, sizeof d1),
             site_str(m, c->ranks[op->rank].conn, op->site, s1, sizeof s1), e->rank,
             xr_op_describe(&e->op, d2, sizeof d2),
             site_str(m, c->ranks[e->rank].conn, e->op.site, s2, sizeof s2));
    snprintf(c->last, sizeof c->last, "%s", text);
    if (first_time(c, A2A_CK_SIZE_COLLECTIVE_MISMATCH, op->rank, e->rank)) {
      send_verdict(m, c, op->rank, A2A_CK_SIZE_COLLECTIVE_MISMATCH, A2A_SEV_ERROR, op->site, text, NULL);
      send_verdict(m, c, e->rank, A2A_CK_SIZE_COLLECTIVE_MISMATCH, A2A_SEV_ERROR, e->op.site, text,
                   NULL);
    }
    return;
  }
  struct rooted *e = &c->rooted[c->rooted_next++ % n];
  e->idx = k;
  e->rank = op->rank;
  e->op = *op;
}

void xr_matcher_op(xr_matcher *m, int conn, const xr_op *op) {
  mcomm *c = comm_find(m, op->comm);
  if (!c || c->desynced) return;
  if (op->rank < 0 || op->rank >= c->nranks || c->ranks[op->rank].conn != conn) return;
  if (op->kind != XR_OP_COLL) {
    p2p_op(m, c, conn, op);
    return;
  }
  if (xr_coll_is_p2p(op->coll)) {
    /* NCCL posts these as sends and receives in the per-peer queues: so do
     * we, each remembering the collective it is part of. */
    if (op->coll == A2A_COLL_SCATTER || op->coll == A2A_COLL_GATHER) rooted_check(m, c, op);
    xr_op p = *op;
    p.redop = -1;
    int kind, peer;
    for (uint32_t i = 0; !c->desynced &&
                         xr_coll_p2p_at(op->coll, op->root, op->rank, c->nranks, i, &kind, &peer);
         i++) {
      p.kind = (uint16_t)kind;
      p.peer = peer;
      p2p_op(m, c, conn, &p);
      if (!c->desynced) clash_on_part(m, c, op->rank, peer);
    }
    return;
  }
  if (opq_push(&c->ranks[op->rank].colls, op) != 0) { desync(c); return; }
  if (c->ranks[op->rank].colls.len == 1) c->nready++;
  c->ranks[op->rank].ncoll++;
  /* A collective the dead rank never posted: it waits for that rank. */
  if (c->died && c->ranks[op->rank].ncoll > c->ranks[c->died - 1].ncoll) died_cause(c);
  match_colls(m, c);
  if (!c->desynced && c->ranks[op->rank].colls.len) clash_on_coll(m, c, op->rank);
}

/* ------------------------------------------------------------------ */
/* Ends. */

static int conn_of(const mcomm *c, int r) {
  return r >= 0 && r < c->nranks ? c->ranks[r].conn : -1;
}

/* A send to x that x never received (pair (r, x)) or a receive from x
 * never sent (pair (x, r)), queued by waiter r != x: size.unmatched-p2p to
 * r, about the queue's front operation. */
/* "the matching receive (it posted 3 receives from rank 0; 1 of rank 0's
 * operations towards it are unmatched)": what the peer of pair queue p
 * posted against its front operation op (a send or receive of its waiter).
 * `tense`: "are" or "were". */
static const char *unmatched_note(const pairq *p, const xr_op *op, const char *tense, char *buf,
                                  size_t cap) {
  uint32_t posted = op->kind == XR_OP_SEND ? p->nrecv : p->nsend;
  snprintf(buf, cap, "the matching %s (it posted %u %s rank %d; %" PRIu32 " of rank %d's operations "
           "towards it %s unmatched)", op->kind == XR_OP_SEND ? "receive" : "send", posted,
           op->kind == XR_OP_SEND ? "receives from" : "sends to", op->rank, p->len, op->rank, tense);
  return buf;
}

static void unmatched_towards(xr_matcher *m, mcomm *c, const pairq *p, int x, const char *how) {
  char text[768], d1[160], s1[128], n1[200];
  const xr_op *op = pq_front(c, p);
  int waiter = op->rank;
  snprintf(text, sizeof text,
           "rank %d %s in group #%u (%s) on communicator %016" PRIx64 ", but rank %d %s "
           "without posting %s",
           waiter, xr_op_describe(op, d1, sizeof d1), op->group,
           site_str(m, conn_of(c, waiter), op->site, s1, sizeof s1), c->id, x, how,
           unmatched_note(p, op, "are", n1, sizeof n1));
  snprintf(c->last, sizeof c->last, "%s", text);
  if (first_time(c, A2A_CK_SIZE_UNMATCHED_P2P, waiter, x))
    send_verdict(m, c, waiter, A2A_CK_SIZE_UNMATCHED_P2P, A2A_SEV_ERROR, op->site, text, NULL);
}

/* Rank x ended: every operation queued towards x stops being pending, and
 * each waiter is told (verdicts), in rank order (for each rank r its sends
 * to x, then its receives from x): 2 nranks pair lookups, not a walk of
 * the table. Not told when x's process died without its goodbye (killed,
 * crashed, or _exit()/os._exit() with no exit hook): its last records may
 * have died with it, still in its batch, so "never posted" is not known -
 * operations it did post, which its peers completed, would be named
 * unmatched. The peers that wait for it are told by the deadlock
 * analysis, whose story names the process that died: the comm's known
 * cause (c->last, which makes its incomplete units never complete in the
 * model) says so instead. */
static void rank_ended(xr_matcher *m, mcomm *c, int x, const char *how, bool verdicts) {
  if (x < 0 || x >= c->nranks || c->ranks[x].ended) return;
  c->ranks[x].ended = verdicts ? 1 : 2;
  c->nended++;
  if (!verdicts) c->died = x + 1;
  if (c->ranks[x].ncoll < c->end_ncoll) c->end_ncoll = c->ranks[x].ncoll;
  bool waited = false; /* an operation of another rank waits for x */
  for (int r = 0; r < c->nranks; r++) {
    const pairq *p = pair_get(c, r, x, 0);
    if (r == x) { /* x's operations with itself: no longer pending, nobody told */
      if (p) c->ranks[x].live -= p->len;
      continue;
    }
    waited |= c->ranks[r].ncoll > c->ranks[x].ncoll;
    if (p && pq_sends(p)) {
      c->ranks[r].live -= p->len;
      waited = true;
      if (verdicts) unmatched_towards(m, c, p, x, how);
    }
    p = pair_get(c, x, r, 0);
    if (p && pq_recvs(p)) {
      c->ranks[r].live -= p->len;
      waited = true;
      if (verdicts) unmatched_towards(m, c, p, x, how);
    }
  }
  if (!verdicts && waited) died_cause(c);
}

/* Rank x aborted comm with its own operations towards r still queued, r
 * not having posted their counterparts (pair (x, r) holding x's sends,
 * pair (r, x) x's receives): x is told about the front one, for each such
 * peer that has not died (a killed peer's last records may be lost: "not
 * posted" is not known). Said XR_ABORT_GRACE_NS after the abort arrived
 * (what the peer posted before it has arrived then), while x is there to
 * hear it: a peer that skipped the operation may exit after x, when no
 * rank is left to tell (rank_ended tells waiters only). */
static void aborted_unmatched(xr_matcher *m, mcomm *c, int x) {
  for (int r = 0; r < c->nranks; r++) {
    if (r == x || c->ranks[r].ended == 2) continue;
    const pairq *p = pair_get(c, x, r, 0);
    if (!(p && pq_sends(p))) {
      p = pair_get(c, r, x, 0);
      if (!(p && pq_recvs(p))) continue;
    }
    const xr_op *op = pq_front(c, p);
    char text[sizeof c->last], d1[160], s1[128], n1[200];
    snprintf(text, sizeof text,
             "rank %d ended communicator %016" PRIx64 " with ncclCommAbort with an operation still "
             "unmatched: rank %d %s in group #%u (%s), but rank %d had not posted %s. Rank %d "
             "skipped the operation or was late: an abort after a timeout (PyTorch's watchdog, a "
             "user's) follows such an operation, and the data of whatever the abort cancelled is "
             "wrong",
             x, c->id, x, xr_op_describe(op, d1, sizeof d1), op->group,
             site_str(m, conn_of(c, x), op->site, s1, sizeof s1), r,
             unmatched_note(p, op, "were", n1, sizeof n1), r);
    snprintf(c->last, sizeof c->last, "%s", text);
    if (first_time(c, A2A_CK_SIZE_UNMATCHED_P2P, x, r))
      send_verdict(m, c, x, A2A_CK_SIZE_UNMATCHED_P2P, A2A_SEV_ERROR, op->site, text, NULL);
  }
  /* Its oldest collective not matched across all ranks, #k, that some
   * live peer had not posted (it posted fewer than k): the hang the abort
   * ended (group.hang, told to x only; not ended now - no XR_VERDICT_FAIL:
   * the application already ended the wait - but, as any group.hang, it
   * counts for the exit status under A2ACHECK_FAIL_ON's default). */
  const mrank *X = &c->ranks[x];
  const xr_op *co = opq_front(&X->colls);
  if (!co) return;
  uint32_t k = X->ncoll - (uint32_t)X->colls.len + 1;
  int lag = -1, nlag = 0;
  for (int r = 0; r < c->nranks; r++)
    if (r != x && c->ranks[r].conn >= 0 && c->ranks[r].ended != 2 && c->ranks[r].ncoll < k) {
      if (lag < 0) lag = r;
      nlag++;
    }
  if (lag < 0 || !first_time(c, A2A_CK_GROUP_HANG, x, lag)) return;
  char text[sizeof c->last], d1[160], s1[128], more[48] = "";
  if (nlag > 1) snprintf(more, sizeof more, " (and %d more rank%s)", nlag - 1, nlag > 2 ? "s" : "");
  snprintf(text, sizeof text,
           "rank %d ended communicator %016" PRIx64 " with ncclCommAbort while its collective #%u %s "
           "(%s) was incomplete: rank %d%s had posted only %u collective%s on it. Rank %d skipped it or "
           "was late: the abort (after a timeout: PyTorch's watchdog, a user's) ended a hang on it, and "
           "the data of whatever it cancelled is wrong",
           x, c->id, k, xr_op_describe(co, d1, sizeof d1), site_str(m, conn_of(c, x), co->site, s1, sizeof s1),
           lag, more, c->ranks[lag].ncoll, c->ranks[lag].ncoll == 1 ? "" : "s", lag);
  send_verdict(m, c, x, A2A_CK_GROUP_HANG, A2A_SEV_ERROR, co->site, text, NULL);
}

void xr_matcher_comm_end(xr_matcher *m, int conn, uint64_t comm, int rank, int how) {
  mcomm *c = comm_find(m, comm);
  if (!c || c->desynced || rank < 0 || rank >= c->nranks || c->ranks[rank].conn != conn) return;
  if (how == A2A_END_ABORT && !c->ranks[rank].ended && m->naborts < XR_MAX_ABORTS)
    m->aborts[m->naborts++] = (pabort){.comm = comm, .at = m->now, .rank = rank, .conn = conn};
  rank_ended(m, c, rank, "ended the communicator", true);
}

void xr_matcher_tick(xr_matcher *m, uint64_t now) {
  m->now = now;
  for (int i = 0; i < m->naborts;) {
    const pabort a = m->aborts[i];
    if (now - a.at < XR_ABORT_GRACE_NS) {
      i++;
      continue;
    }
    m->aborts[i] = m->aborts[--m->naborts];
    mcomm *c = comm_find(m, a.comm);
    const mconn *mc = conn_get(m, a.conn);
    if (c && !c->desynced && a.rank < c->nranks && c->ranks[a.rank].conn == a.conn && mc && !mc->gone)
      aborted_unmatched(m, c, a.rank);
  }
}

static void conn_ended(xr_matcher *m, int conn, const char *how, bool verdicts) {
  mconn *mc = conn_get(m, conn);
  if (!mc) return;
  for (mcomm *c = m->comms; c; c = c->next) {
    if (c->desynced) continue;
    for (int r = 0; r < c->nranks; r++)
      if (c->ranks[r].conn == conn) rank_ended(m, c, r, how, verdicts);
  }
  mc->gone = 1;
}

void xr_matcher_conn_gone(xr_matcher *m, int conn) { conn_ended(m, conn, "exited", true); }

void xr_matcher_conn_died(xr_matcher *m, int conn) {
  conn_ended(m, conn, "died (killed or crashed)", false);
}

/* Pending operations of conn on c; only those of `rank` when rank >= 0. A
 * queued collective counts while it can still match: every rank that
 * ended posted at least as many collectives (its numbers below
 * end_ncoll) - a rank that ended after posting it (its process exits
 * first) still has it queued here, and a slow peer's connection (late
 * handshake) brings the counterpart, so the verdict comes; a collective
 * numbered beyond what an ended rank posted never matches; a
 * send/receive counts while its peer has not ended. A peer not registered yet
 * still may (its connection can come later than ours: each one's
 * handshake takes its own round trips), so its counterparts are awaited;
 * every wait on this is bounded by its asker (ncclCommDestroy 2 s, exit
 * 2.5 s). O(1) for one rank, O(nranks) for a connection: the coordinator
 * asks at every tick for each flushing connection and rank. */
static size_t pending_in(const mcomm *c, int conn, int rank) {
  size_t n = 0;
  int lo = rank < 0 ? 0 : rank, hi = rank < 0 ? c->nranks : rank + 1;
  for (int r = lo; r < hi; r++) {
    const mrank *R = &c->ranks[r];
    if (R->conn != conn) continue;
    /* Its queued sends/receives towards peers that have not ended (kept
     * in `live` as they are queued, matched and their peers end). */
    n += R->live;
    /* Its queued collectives are numbered first..R->ncoll-1 (matching
     * pops every rank's front together). */
    uint32_t first = R->ncoll - (uint32_t)R->colls.len;
    uint32_t top = R->ncoll < c->end_ncoll ? R->ncoll : c->end_ncoll;
    if (top > first) n += top - first;
  }
  return n;
}

size_t xr_matcher_pending(const xr_matcher *m, int conn) {
  size_t n = 0;
  for (const mcomm *c = m->comms; c; c = c->next)
    if (!c->desynced) n += pending_in(c, conn, -1);
  return n;
}

size_t xr_matcher_pending_rank(const xr_matcher *m, int conn, uint64_t comm, int rank) {
  const mcomm *c = comm_find(m, comm);
  if (!c || c->desynced || rank < 0 || rank >= c->nranks) return 0;
  return pending_in(c, conn, rank);
}

const char *xr_matcher_last_mismatch(const xr_matcher *m, uint64_t comm) {
  const mcomm *c = comm_find(m, comm);
  return c && c->last[0] ? c->last : NULL;
}
