/* xrank_wfg.c - the wait-for graph over launch units and processes, its
 * liveness fixpoint and the deadlock story (see xrank_wfg.h). */
#include "xrank_wfg.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2a_core.h"

enum { R_SAT, R_UNKNOWN, R_UNIT, R_POSTER, R_EXITED, R_ENDED };

typedef struct req {
  uint8_t type;
  char what;        /* 'c' collective, 's' send, 'r' receive (awaited from q) */
  uint8_t free;     /* R_POSTER whose poster thread waits in nothing: holds */
  uint8_t gone;     /* R_POSTER whose poster thread has exited (the story) */
  int32_t target;   /* unit index (R_UNIT) or process (others) */
  int32_t qrank;    /* q's rank in the comm */
  uint32_t index;   /* the awaited op's index (0-based) */
  uint32_t posted;  /* what q has posted of that kind */
  uint32_t poster;  /* R_POSTER: the thread that posts q's rank (0: unknown) */
} req;

typedef struct mem {
  uint64_t comm;
  int32_t rank;
  uint32_t proc, ci;
} mem;

/* The indexes that make one evaluation linear in the reports' size for
 * well-formed reports (build_index; it runs on every coordinator tick,
 * and the shim reports up to 2,048 units per process):
 *  - per membership (mems[i]): its process's units on that comm and rank,
 *    in posting order (mu[moff[i] .. moff[i+1]));
 *  - per (membership, peer): the units of that slice that list the peer,
 *    with their first entry for it, in posting order (pents[off .. off+n)),
 *    and the membership's own comm-level entry for the peer (ce) - an open
 *    addressing table of pkey;
 * so that resolve() finds what a scan of every unit of the process would
 * find, in the same order. A slice whose ranges are nondecreasing (lo and
 * hi: every report the shim builds, as operations are numbered in posting
 * order) is searched by bisection; any other is scanned, with the same
 * answer. */
typedef struct pent {
  uint32_t u;              /* global unit index */
  const xr_peerent *e;     /* the unit's first entry for the peer */
} pent;

typedef struct pkey {
  uint32_t mi;             /* membership index + 1; 0: an empty slot */
  int32_t peer;
  uint32_t off, n;         /* slice of pents */
  uint32_t last;           /* building: the last unit appended + 1 */
  uint8_t mono_s, mono_r;  /* send / receive ranges nondecreasing */
  const xr_peerent *ce;    /* the membership's first comm-level entry */
} pkey;

typedef struct graph {
  const xr_procstate *ps;
  const xr_wfg_opts *opts;
  size_t n;
  size_t nu;              /* units over all processes */
  size_t *uoff;           /* first global unit index per process (n+1) */
  int32_t *uproc;         /* process of each unit */
  int32_t *pred;          /* previous incomplete unit on the same stream */
  int32_t *succ;          /* next incomplete unit on the same stream */
  int32_t *myrank;        /* the unit's rank in its comm (-1 unknown) */
  size_t *roff;           /* reqs slice per unit (nu+1) */
  req *reqs;
  size_t nreqs, capreqs;
  mem *mems;
  size_t nmems;
  size_t *moff;           /* units per membership (nmems+1), see above */
  uint32_t *mu;
  uint8_t *mmono;         /* the membership's collective ranges nondecreasing */
  pkey *pk;
  size_t pkcap;           /* a power of two */
  pent *pents;
  size_t *toff;           /* first global thread index per process (n+1) */
  uint32_t *wcnt;         /* per thread: the units it waits on not complete */
  uint8_t *tany;          /* per thread: its stream holds a launched unit */
  bool scan;              /* no indexes: counterparts looked up by scanning (see build_index) */
  bool *start, *comp, *live;
  bool *suspect;          /* its comm has a known argument mismatch */
  uint64_t *scomm;        /* the comm whose mismatch made it suspect */
} graph;

static int mem_cmp(const void *a, const void *b) {
  const mem *x = a, *y = b;
  if (x->comm != y->comm) return x->comm < y->comm ? -1 : 1;
  return (x->rank > y->rank) - (x->rank < y->rank);
}

static const mem *find_mem(const graph *g, uint64_t comm, int32_t rank) {
  mem key = {.comm = comm, .rank = rank};
  return bsearch(&key, g->mems, g->nmems, sizeof key, mem_cmp);
}

/* The first membership of comm in the sorted table (g->nmems if none):
 * loops over a communicator's ranks visit the members that reported, never
 * 0..nranks (ranks nobody heard from are assumed to progress anyway, and a
 * communicator may have a million ranks). */
static size_t mem_first(const graph *g, uint64_t comm) {
  size_t lo = 0, hi = g->nmems;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (g->mems[mid].comm < comm) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* The process's membership of comm as rank (a process may hold several
 * ranks of one communicator: one thread or device per rank). */
static const xr_commstate *comm_of(const xr_procstate *p, uint64_t comm, int32_t rank) {
  for (uint32_t i = 0; i < p->ncomms; i++)
    if (p->comms[i].comm == comm && p->comms[i].rank == rank) return &p->comms[i];
  return NULL;
}

static int add_req(graph *g, req r) {
  if (g->nreqs == g->capreqs) {
    size_t nc = g->capreqs ? g->capreqs * 2 : 64;
    req *nr = realloc(g->reqs, nc * sizeof *nr);
    if (!nr) return -1;
    g->reqs = nr;
    g->capreqs = nc;
  }
  g->reqs[g->nreqs++] = r;
  return 0;
}

/* The first membership at or after (comm, rank) in the sorted table. */
static size_t mem_lower(const graph *g, uint64_t comm, int32_t rank) {
  size_t lo = 0, hi = g->nmems;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const mem *m = &g->mems[mid];
    if (m->comm < comm || (m->comm == comm && m->rank < rank)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static const xr_unitstate *unit_at(const graph *g, size_t u) {
  size_t p = (size_t)g->uproc[u];
  return &g->ps[p].units[u - g->uoff[p]];
}

/* The slot of (membership mi, peer): its key, or the empty slot where it
 * would go (the table is at most half full). */
static size_t pk_find(const graph *g, uint32_t mi, int32_t peer) {
  uint64_t h = ((uint64_t)mi + 1) * 0x9e3779b97f4a7c15ull ^
               (uint64_t)(uint32_t)peer * 0xc2b2ae3d27d4eb4full;
  size_t i = (size_t)(h ^ (h >> 29)) & (g->pkcap - 1);
  while (g->pk[i].mi && (g->pk[i].mi != mi + 1 || g->pk[i].peer != peer))
    i = (i + 1) & (g->pkcap - 1);
  return i;
}

static pkey *pk_get(graph *g, uint32_t mi, int32_t peer) {
  pkey *k = &g->pk[pk_find(g, mi, peer)];
  if (!k->mi) {
    k->mi = mi + 1;
    k->peer = peer;
    k->mono_s = k->mono_r = 1;
  }
  return k;
}

static bool nondecreasing(uint32_t alo, uint32_t ahi, uint32_t blo, uint32_t bhi) {
  return alo <= blo && ahi <= bhi;
}

/* Every unit's peer entries of membership mi's slice, each unit's first
 * entry per peer (the one a scan of its entries meets first), in posting order: counted
 * (fill 0) or written into pents (fill 1). */
static void index_peers(graph *g, uint32_t mi, int fill) {
  const xr_procstate *P = &g->ps[g->mems[mi].proc];
  for (size_t i = g->moff[mi]; i < g->moff[mi + 1]; i++) {
    uint32_t u = g->mu[i];
    const xr_unitstate *v = unit_at(g, u);
    for (uint32_t x = 0; x < v->npeers; x++) {
      const xr_peerent *pe = &P->peers[v->peer_off + x];
      pkey *k = pk_get(g, mi, pe->peer);
      if (k->last == u + 1) continue; /* not the unit's first entry for the peer */
      k->last = u + 1;
      if (fill) {
        if (k->n) {
          const xr_peerent *pv = g->pents[k->off + k->n - 1].e;
          k->mono_s &= nondecreasing(pv->send_lo, pv->send_hi, pe->send_lo, pe->send_hi);
          k->mono_r &= nondecreasing(pv->recv_lo, pv->recv_hi, pe->recv_lo, pe->recv_hi);
        }
        g->pents[k->off + k->n] = (pent){u, pe};
      }
      k->n++;
    }
  }
}

/* The indexes are linear in the reports for well-formed ones: per
 * process, the communicators' and units' peer slices disjoint (their
 * lengths sum to at most the peer array's: the shim appends each slice
 * once) and no membership listed twice (a unit then is in one list at
 * most). Any other report (the decoder checks only that each slice is in
 * bounds: a hostile one may point every unit at the whole array, or list
 * a membership many times) gets no indexes - every lookup scans
 * (g->scan), with the same answers, costing what it did before the
 * indexes (time in the slices' lengths, memory linear) - and so does a
 * caller that asks for it (xr_wfg_opts.scan). build_index bounds what it
 * builds by what was received: the lists by the units, the keys and
 * entries by the peer entries. */
static bool well_formed(const graph *g) {
  for (size_t p = 0; p < g->n; p++) {
    const xr_procstate *P = &g->ps[p];
    uint64_t sum = 0;
    for (uint32_t i = 0; i < P->ncomms; i++) sum += P->comms[i].npeers;
    for (uint32_t j = 0; j < P->nunits; j++) sum += P->units[j].npeers;
    if (sum > P->npeers) return false;
  }
  return true;
}

static int build_index(graph *g) {
  size_t nm = g->nmems, kmax = 16;
  g->scan = (g->opts && g->opts->scan) || !well_formed(g);
  if (g->scan) return 0;
  g->moff = calloc(nm + 2, sizeof *g->moff);
  g->mmono = calloc(nm + 1, 1);
  size_t *fillp = calloc(nm + 1, sizeof *fillp);
  if (!g->moff || !g->mmono || !fillp) { free(fillp); return -1; }
  /* Units per membership: those of its process on its comm and rank (a
   * process listing one membership twice gets the units in both). */
  for (int pass = 0; pass < 2; pass++) {
    for (size_t p = 0; p < g->n; p++)
      for (uint32_t j = 0; j < g->ps[p].nunits; j++) {
        const xr_unitstate *v = &g->ps[p].units[j];
        for (size_t e = mem_lower(g, v->comm, v->rank);
             e < nm && g->mems[e].comm == v->comm && g->mems[e].rank == v->rank; e++) {
          if (g->mems[e].proc != p) continue;
          if (pass == 0) g->moff[e + 1]++;
          else g->mu[fillp[e]++] = (uint32_t)(g->uoff[p] + j);
        }
      }
    if (pass == 0) {
      for (size_t e = 0; e < nm; e++) {
        g->moff[e + 1] += g->moff[e];
        fillp[e] = g->moff[e];
      }
      if (g->moff[nm] > g->nu) { /* units in several lists: a membership listed twice */
        free(fillp);
        g->scan = true;
        return 0;
      }
      g->mu = malloc((g->moff[nm] + 1) * sizeof *g->mu);
      if (!g->mu) { free(fillp); return -1; }
    }
  }
  free(fillp);
  for (size_t e = 0; e < nm; e++) {
    g->mmono[e] = 1;
    for (size_t i = g->moff[e] + 1; i < g->moff[e + 1] && g->mmono[e]; i++) {
      const xr_unitstate *a = unit_at(g, g->mu[i - 1]), *b = unit_at(g, g->mu[i]);
      g->mmono[e] = nondecreasing(a->coll_lo, a->coll_hi, b->coll_lo, b->coll_hi);
    }
    const xr_procstate *P = &g->ps[g->mems[e].proc];
    kmax += P->comms[g->mems[e].ci].npeers;
    for (size_t i = g->moff[e]; i < g->moff[e + 1]; i++) kmax += unit_at(g, g->mu[i])->npeers;
  }
  /* Without two memberships of one process on one comm and rank holding
   * units, the keys number at most the peer entries received: a report
   * over that bound (one unit in many lists) is scanned, as is one
   * beyond the slots' 32-bit offsets (never in practice). */
  size_t peers = 16;
  for (size_t p = 0; p < g->n; p++) peers += g->ps[p].npeers;
  if (kmax > peers || kmax > UINT32_MAX / 4) {
    g->scan = true;
    return 0;
  }
  g->pkcap = 64;
  while (g->pkcap < 2 * kmax) g->pkcap *= 2;
  g->pk = calloc(g->pkcap, sizeof *g->pk);
  if (!g->pk) return -1;
  for (uint32_t e = 0; e < nm; e++) {
    index_peers(g, e, 0);
    const xr_procstate *P = &g->ps[g->mems[e].proc];
    const xr_commstate *c = &P->comms[g->mems[e].ci];
    for (uint32_t x = 0; x < c->npeers; x++) {
      pkey *k = pk_get(g, e, P->peers[c->peer_off + x].peer);
      if (!k->ce) k->ce = &P->peers[c->peer_off + x];
    }
  }
  size_t total = 0; /* <= kmax */
  for (size_t i = 0; i < g->pkcap; i++) {
    g->pk[i].off = (uint32_t)total;
    total += g->pk[i].n;
    g->pk[i].n = g->pk[i].last = 0;
  }
  g->pents = malloc((total + 1) * sizeof *g->pents);
  if (!g->pents) return -1;
  for (uint32_t e = 0; e < nm; e++) index_peers(g, e, 1);
  return 0;
}

/* pred and succ: per process, a table from stream to its latest unit so
 * far (the previous incomplete unit on a stream is the latest earlier one
 * of the process with that stream). */
static int build_streams(graph *g) {
  size_t maxu = 0;
  for (size_t p = 0; p < g->n; p++) if (g->ps[p].nunits > maxu) maxu = g->ps[p].nunits;
  size_t cap = 16;
  while (cap < 2 * maxu) cap *= 2;
  struct slot { uint64_t stream; int32_t u; } *tab = malloc(cap * sizeof *tab);
  if (!tab) return -1;
  for (size_t p = 0; p < g->n; p++) {
    const xr_procstate *P = &g->ps[p];
    size_t c = 16;
    while (c < 2 * (size_t)P->nunits) c *= 2;
    for (size_t i = 0; i < c; i++) tab[i].u = -1;
    for (uint32_t j = 0; j < P->nunits; j++) {
      uint64_t s = P->units[j].stream, h = s * 0x9e3779b97f4a7c15ull;
      size_t i = (size_t)(h >> 32) & (c - 1);
      while (tab[i].u >= 0 && tab[i].stream != s) i = (i + 1) & (c - 1);
      size_t u = g->uoff[p] + j;
      g->pred[u] = tab[i].u;
      if (tab[i].u >= 0) g->succ[tab[i].u] = (int32_t)u;
      tab[i].stream = s;
      tab[i].u = (int32_t)u;
    }
  }
  free(tab);
  return 0;
}

/* Whether blocked thread T of process p waits on unit U: what
 * xr_thread_waits_on answers, with its scan of the process's units for a
 * launched unit on T's stream done once per thread (tany). */
static bool waits(const graph *g, size_t p, const xr_threadstate *T, const xr_unitstate *U) {
  if (U->flags & XR_UNIT_OPEN) return false;
  if (T->all || T->wait != XR_WAIT_STREAM) return true;
  return !g->tany[g->toff[p] + (size_t)(T - g->ps[p].threads)] || U->stream == T->stream;
}

static int build_threads(graph *g) {
  g->toff = calloc(g->n + 1, sizeof *g->toff);
  if (!g->toff) return -1;
  for (size_t p = 0; p < g->n; p++) g->toff[p + 1] = g->toff[p] + g->ps[p].nthreads;
  g->tany = calloc(g->toff[g->n] + 1, 1);
  g->wcnt = calloc(g->toff[g->n] + 1, sizeof *g->wcnt);
  if (!g->tany || !g->wcnt) return -1;
  for (size_t p = 0; p < g->n; p++) {
    const xr_procstate *P = &g->ps[p];
    for (uint32_t t = 0; t < P->nthreads; t++) {
      const xr_threadstate *T = &P->threads[t];
      size_t ti = g->toff[p] + t;
      for (uint32_t j = 0; j < P->nunits && !g->tany[ti]; j++)
        g->tany[ti] = !(P->units[j].flags & XR_UNIT_OPEN) && P->units[j].stream == T->stream;
      for (uint32_t j = 0; j < P->nunits; j++) g->wcnt[ti] += waits(g, p, T, &P->units[j]);
    }
  }
  return 0;
}

/* Entry i's range [*a, *b) in a resolve's slice: the membership's i-th
 * unit's collectives ('c'), or the peer slice's i-th entry's sends ('s')
 * or receives ('r'). */
static void slice_range(const graph *g, char what, const uint32_t *mu, const pent *pe, size_t i,
                        uint32_t *a, uint32_t *b) {
  if (what == 'c') {
    const xr_unitstate *v = unit_at(g, mu[i]);
    *a = v->coll_lo;
    *b = v->coll_hi;
  } else if (what == 's') {
    *a = pe[i].e->send_lo;
    *b = pe[i].e->send_hi;
  } else {
    *a = pe[i].e->recv_lo;
    *b = pe[i].e->recv_hi;
  }
}

/* The first entry for peer in a slice of p's peer array, or NULL. */
static const xr_peerent *peer_of(const xr_procstate *p, uint32_t off, uint32_t np,
                                 int32_t peer) {
  for (uint32_t i = 0; i < np; i++)
    if (p->peers[off + i].peer == peer) return &p->peers[off + i];
  return NULL;
}

/* A requirement on Q's unit u (global index): to start, or never (Q is
 * gone). */
static int add_hit(graph *g, const req *base, const xr_procstate *Q, size_t u) {
  req r = *base;
  r.type = Q->alive ? R_UNIT : R_EXITED;
  if (Q->alive) r.target = (int32_t)u;
  return add_req(g, r);
}

/* resolve's hits without indexes (g->scan): every unit of m's process on
 * m's comm and rank, in posting order, judged by its first entry for me. */
static int resolve_scan(graph *g, const mem *m, int32_t me, char what, uint32_t lo, uint32_t hi,
                        const req *base) {
  const xr_procstate *Q = &g->ps[m->proc];
  for (uint32_t j = 0; j < Q->nunits; j++) {
    const xr_unitstate *v = &Q->units[j];
    if (v->comm != m->comm || v->rank != m->rank) continue;
    bool hit = false;
    if (what == 'c') {
      hit = v->coll_lo < hi && lo < v->coll_hi;
    } else {
      const xr_peerent *e = peer_of(Q, v->peer_off, v->npeers, me);
      if (e) hit = what == 's' ? (e->send_lo < hi && lo < e->send_hi)
                               : (e->recv_lo < hi && lo < e->recv_hi);
    }
    if (hit && add_hit(g, base, Q, g->uoff[m->proc] + j) != 0) return -1;
  }
  return 0;
}

/* Whether the one thread that posts rank qc of process Q (xr_commstate.
 * poster) waits in nothing Q reports: it may still post, whatever Q's
 * other threads wait for. Only where Q hosts several ranks of that
 * communicator as threads - the shape this is for; elsewhere a thread in
 * no CUDA wait may wait in the host for a stuck one (a main thread joining
 * workers, autograd's thread idle until the forward returns), and the
 * process stays one poster as before (a deadlock it would hide). */
static bool poster_free(const xr_procstate *Q, const xr_commstate *qc) {
  /* (A poster that has exited, xr_commstate.poster_gone, counts as free
   * too: another thread may take the rank over - a pool's next worker - and
   * the process as a whole is not known blocked; only the story says it.) */
  if (!qc->poster) return false;
  uint32_t ranks = 0;
  for (uint32_t i = 0; i < Q->ncomms && ranks < 2; i++) ranks += Q->comms[i].comm == qc->comm;
  if (ranks < 2) return false;
  for (uint32_t k = 0; k < Q->nthreads; k++)
    if (Q->threads[k].thread == qc->poster) return false;
  return true;
}

/* What rank q (process Q) owes to unit u for op `what` #[lo, hi). */
static int resolve(graph *g, uint64_t comm, int32_t me, int32_t q, char what,
                   uint32_t lo, uint32_t hi) {
  const mem *m = find_mem(g, comm, q);
  if (!m) return 0; /* a rank nobody heard from: assumed to progress */
  uint32_t mi = (uint32_t)(m - g->mems);
  const xr_procstate *Q = &g->ps[m->proc];
  const xr_commstate *qc = &Q->comms[m->ci];
  const pkey *k = NULL;
  if (what != 'c' && !g->scan) {
    k = &g->pk[pk_find(g, mi, me)];
    if (!k->mi) k = NULL;
  }
  uint32_t posted;
  if (what == 'c') {
    posted = qc->coll_posted;
  } else {
    const xr_peerent *e = g->scan ? peer_of(Q, qc->peer_off, qc->npeers, me) : k ? k->ce : NULL;
    posted = e ? (what == 's' ? e->send_hi : e->recv_hi) : 0;
  }
  req base = {.what = what, .qrank = q, .index = lo, .posted = posted,
              .target = (int32_t)m->proc};
  if (g->scan) {
    if (resolve_scan(g, m, me, what, lo, hi, &base) != 0) return -1;
  } else {
    /* Q's incomplete units holding any of the awaited indexes (a process
     * that is gone never completes them), in posting order: the
     * membership's slice ('c') or its slice for peer me. In a
     * nondecreasing slice the hits are the entries from the first that
     * ends after lo up to the first that begins at or after hi. */
    size_t n = what == 'c' ? g->moff[mi + 1] - g->moff[mi] : k ? k->n : 0;
    bool mono = what == 'c' ? g->mmono[mi] : k && (what == 's' ? k->mono_s : k->mono_r);
    const uint32_t *mu = g->mu + g->moff[mi];
    const pent *pe = k ? g->pents + k->off : NULL;
    size_t i = 0;
    if (mono) {
      size_t l = 0, h = n;
      while (l < h) {
        size_t mid = l + (h - l) / 2;
        uint32_t a, b;
        slice_range(g, what, mu, pe, mid, &a, &b);
        if (b <= lo) l = mid + 1;
        else h = mid;
      }
      i = l;
    }
    for (; i < n; i++) {
      uint32_t a, b;
      slice_range(g, what, mu, pe, i, &a, &b);
      if (!(a < hi && lo < b)) {
        if (mono && a >= hi) break;
        continue;
      }
      if (add_hit(g, &base, Q, what == 'c' ? mu[i] : pe[i].u) != 0) return -1;
    }
  }
  if (posted < hi) {
    base.type = !Q->alive ? R_EXITED : qc->ended ? R_ENDED : R_POSTER;
    base.index = posted > lo ? posted : lo;
    base.free = base.type == R_POSTER && poster_free(Q, qc);
    base.gone = base.type == R_POSTER && qc->poster && qc->poster_gone;
    /* The story's guess where the poster is not known yet (the rank
     * posted nothing on this communicator): the thread that posts the same
     * rank on another communicator of Q - ncclCommInitAll's sets, thread r
     * driving rank r of each. The wait-for rules never use the guess. */
    base.poster = qc->poster;
    for (uint32_t i = 0; !base.poster && i < Q->ncomms; i++)
      if (Q->comms[i].rank == qc->rank && Q->comms[i].comm != qc->comm)
        base.poster = Q->comms[i].poster;
    return add_req(g, base);
  }
  return 0;
}

static int build(graph *g) {
  size_t n = g->n;
  g->uoff = calloc(n + 1, sizeof *g->uoff);
  size_t nm = 0;
  for (size_t p = 0; p < n; p++) {
    g->uoff[p + 1] = g->uoff[p] + g->ps[p].nunits;
    nm += g->ps[p].ncomms;
  }
  g->nu = g->uoff[n];
  g->uproc = calloc(g->nu + 1, sizeof *g->uproc);
  g->pred = calloc(g->nu + 1, sizeof *g->pred);
  g->succ = malloc((g->nu + 1) * sizeof *g->succ);
  g->myrank = calloc(g->nu + 1, sizeof *g->myrank);
  g->roff = calloc(g->nu + 1, sizeof *g->roff);
  g->mems = calloc(nm + 1, sizeof *g->mems);
  g->start = calloc(g->nu + 1, 1);
  g->comp = calloc(g->nu + 1, 1);
  g->live = calloc(n + 1, 1);
  g->suspect = calloc(g->nu + 1, 1);
  g->scomm = calloc(g->nu + 1, sizeof *g->scomm);
  if (!g->suspect || !g->scomm || !g->uoff || !g->uproc || !g->pred || !g->succ || !g->myrank ||
      !g->roff || !g->mems || !g->start || !g->comp || !g->live)
    return -1;
  for (size_t p = 0; p < n; p++)
    for (uint32_t i = 0; i < g->ps[p].ncomms; i++)
      g->mems[g->nmems++] = (mem){g->ps[p].comms[i].comm, g->ps[p].comms[i].rank,
                                  (uint32_t)p, i};
  qsort(g->mems, g->nmems, sizeof *g->mems, mem_cmp);
  for (size_t p = 0; p < n; p++)
    for (uint32_t j = 0; j < g->ps[p].nunits; j++) {
      g->uproc[g->uoff[p] + j] = (int32_t)p;
      g->succ[g->uoff[p] + j] = -1;
    }
  if (build_index(g) != 0 || build_streams(g) != 0 || build_threads(g) != 0) return -1;
  for (size_t p = 0; p < n; p++) {
    const xr_procstate *P = &g->ps[p];
    for (uint32_t j = 0; j < P->nunits; j++) {
      size_t u = g->uoff[p] + j;
      const xr_unitstate *U = &P->units[j];
      g->roff[u] = g->nreqs;
      /* Operations whose peers disagree on sizes or kinds may never
       * complete even with every counterpart started (NCCL hangs on
       * them): with a known mismatch on its comm a unit completes only in
       * reality, never in the model. The caller's stability check keeps
       * a unit that does complete from being reported. Not a unit that
       * shares its completion marker with a later one (MAYBE_DONE): it is
       * reported pending for the marker's sake, and the later unit, which
       * is certainly incomplete, carries the suspicion. */
      bool mm = g->opts && g->opts->mismatch;
      g->suspect[u] = mm && !(U->flags & XR_UNIT_MAYBE_DONE) &&
                      g->opts->mismatch(g->opts->ctx, U->comm);
      g->scomm[u] = U->comm;
      /* The suspicion of MAYBE_DONE units before it on the stream (its
       * run) passes to the first unit that is not: that one is certainly
       * incomplete, and may be so only because one of them hangs, also
       * when it belongs to another comm (a group or run over two comms,
       * the first with the mismatch). */
      for (int32_t k = g->pred[u]; mm && !g->suspect[u] && !(U->flags & XR_UNIT_MAYBE_DONE) && k >= 0;
           k = g->pred[k]) {
        const xr_unitstate *K = &P->units[(size_t)k - g->uoff[p]];
        if (!(K->flags & XR_UNIT_MAYBE_DONE)) break;
        if (g->opts->mismatch(g->opts->ctx, K->comm)) {
          g->suspect[u] = true;
          g->scomm[u] = K->comm;
        }
      }
      const xr_commstate *cs = comm_of(P, U->comm, U->rank);
      g->myrank[u] = cs ? cs->rank : -1;
      if (!cs) continue;
      if (U->coll_hi > U->coll_lo) {
        /* The first and the last collective of the unit stand for all. */
        uint32_t ks[2] = {U->coll_lo, U->coll_hi - 1};
        for (int t = 0; t < (ks[0] == ks[1] ? 1 : 2); t++)
          for (size_t i = mem_first(g, U->comm); i < g->nmems && g->mems[i].comm == U->comm; i++) {
            int32_t q = g->mems[i].rank;
            if (q == cs->rank || q < 0 || q >= cs->nranks || (i && g->mems[i - 1].comm == U->comm &&
                                                               g->mems[i - 1].rank == q))
              continue;
            if (resolve(g, U->comm, cs->rank, q, 'c', ks[t], ks[t] + 1) != 0) return -1;
          }
      }
      for (uint32_t e = 0; e < U->npeers; e++) {
        const xr_peerent *pe = &P->peers[U->peer_off + e];
        if (pe->peer == cs->rank || pe->peer >= cs->nranks) continue;
        /* My sends need q's receives from me, my receives q's sends to me. */
        if (pe->send_hi > pe->send_lo &&
            resolve(g, U->comm, cs->rank, pe->peer, 'r', pe->send_lo, pe->send_hi) != 0)
          return -1;
        if (pe->recv_hi > pe->recv_lo &&
            resolve(g, U->comm, cs->rank, pe->peer, 's', pe->recv_lo, pe->recv_hi) != 0)
          return -1;
      }
    }
  }
  g->roff[g->nu] = g->nreqs;
  return 0;
}

static void graph_free(graph *g) {
  free(g->uoff); free(g->uproc); free(g->pred); free(g->succ); free(g->myrank); free(g->roff);
  free(g->reqs); free(g->mems); free(g->start); free(g->comp); free(g->live);
  free(g->suspect);
  free(g->scomm);
  free(g->moff); free(g->mu); free(g->mmono); free(g->pk); free(g->pents);
  free(g->toff); free(g->wcnt); free(g->tany);
}

int xr_thread_waits_on(const xr_procstate *st, const xr_threadstate *t,
                       const xr_unitstate *u) {
  /* A synchronizing call waits for launched work only. */
  if (u->flags & XR_UNIT_OPEN) return 0;
  if (t->all || t->wait != XR_WAIT_STREAM) return 1;
  for (uint32_t j = 0; j < st->nunits; j++)
    if (!(st->units[j].flags & XR_UNIT_OPEN) && st->units[j].stream == t->stream)
      return u->stream == t->stream;
  return 1;
}

static bool req_ok(const graph *g, const req *r) {
  switch (r->type) {
  case R_SAT: case R_UNKNOWN: return true;
  case R_UNIT: return g->start[r->target];
  case R_POSTER: return r->free || g->live[r->target];
  default: return false;
  }
}

/* A thread inside split #index of comm returns once every rank of comm
 * made that split. Rank q is fine when it made it, is inside it too, or
 * may still call it (alive, not stuck); *bad gets the first rank that
 * cannot (and *why: R_EXITED, R_ENDED or R_POSTER), else -1. */
static bool split_ok(const graph *g, size_t p, const xr_threadstate *t, int32_t *bad, int *why,
                     uint32_t *made) {
  const xr_commstate *me = comm_of(&g->ps[p], t->comm, t->rank);
  if (bad) *bad = -1;
  if (!me) return true;
  for (size_t i = mem_first(g, t->comm); i < g->nmems && g->mems[i].comm == t->comm; i++) {
    int32_t q = g->mems[i].rank;
    if (q == t->rank || q < 0 || q >= me->nranks) continue;
    /* Ranks nobody heard from are not in the table: assumed to progress. */
    const mem *m = find_mem(g, t->comm, q);
    const xr_procstate *Q = &g->ps[m->proc];
    const xr_commstate *qc = &Q->comms[m->ci];
    if (qc->splits > t->index) continue;
    if (Q->alive && xr_inside_split(Q, t->comm, t->index, q)) continue;
    int w = !Q->alive ? R_EXITED : qc->ended ? R_ENDED : R_POSTER;
    if (w == R_POSTER && (poster_free(Q, qc) || g->live[m->proc])) continue;
    if (bad) { *bad = q; *why = w; *made = qc->splits; }
    return false;
  }
  return true;
}

/* Whether blocked thread t of process p can return, given what can
 * complete: wcnt counts the units it waits on that cannot (yet). */
static bool thread_ok(const graph *g, size_t p, const xr_threadstate *t) {
  if (t->wait == XR_WAIT_SPLIT) return split_ok(g, p, t, NULL, NULL, NULL);
  /* Inside a blocking init: it returns when every rank joined, which
   * nothing here can tell, except that ranks that disagree never do. */
  if (t->wait == XR_WAIT_INIT)
    return !(g->opts && g->opts->mismatch && g->opts->mismatch(g->opts->ctx, t->comm));
  return g->wcnt[g->toff[p] + (size_t)(t - g->ps[p].threads)] == 0;
}

/* The least fixpoint of the model's rules (xrank_wfg.h) from all false:
 *   start[u] <- (no pred or comp[pred]) and (not open or live[its process])
 *   comp[u]  <- start[u] and not suspect[u] and every req of u holds
 *               (R_UNIT: start[target]; R_POSTER: live[target]; R_EXITED,
 *               R_ENDED never)
 *   live[p]  <- alive and every blocked thread of p can return
 * Every rule is monotone, so the least fixpoint is unique whatever order
 * the rules fire in: a worklist fires each only when one of its premises
 * changed (need[u] counts u's reqs that do not hold yet, wcnt a thread's
 * waited units not complete), each flag once - linear in the graph,
 * where sweeps to convergence took a sweep per link of the longest
 * chain of dependencies (a unit per process and sweep in a healthy job
 * with thousands of operations in flight). */
typedef struct wl {
  graph *g;
  uint32_t *need;
  size_t *dsoff, *dloff;  /* per unit / per process: the units whose reqs wait for it */
  uint32_t *ds, *dl;
  uint64_t *stack;        /* pushed: (unit << 2 | 0 started, | 1 complete), (process << 2 | 2) */
  size_t top;
  const uint32_t *splitp; /* processes with a thread inside a split */
  size_t nsplitp;
} wl;

static void try_start(wl *w, size_t u) {
  graph *g = w->g;
  size_t p = (size_t)g->uproc[u];
  bool open = g->ps[p].units[u - g->uoff[p]].flags & XR_UNIT_OPEN;
  if (!g->start[u] && (g->pred[u] < 0 || g->comp[g->pred[u]]) && (!open || g->live[p])) {
    g->start[u] = true;
    w->stack[w->top++] = (uint64_t)u << 2;
  }
}

static void try_comp(wl *w, size_t u) {
  graph *g = w->g;
  if (!g->comp[u] && g->start[u] && !g->suspect[u] && w->need[u] == 0) {
    g->comp[u] = true;
    w->stack[w->top++] = (uint64_t)u << 2 | 1;
  }
}

static void try_live(wl *w, size_t p) {
  graph *g = w->g;
  if (g->live[p] || !g->ps[p].alive) return;
  for (uint32_t t = 0; t < g->ps[p].nthreads; t++)
    if (!thread_ok(g, p, &g->ps[p].threads[t])) return;
  g->live[p] = true;
  w->stack[w->top++] = (uint64_t)p << 2 | 2;
}

static int fixpoint(graph *g) {
  size_t nu = g->nu, n = g->n, nsp = 0;
  wl w = {.g = g};
  w.need = calloc(nu + 1, sizeof *w.need);
  w.dsoff = calloc(nu + 2, sizeof *w.dsoff);
  w.dloff = calloc(n + 2, sizeof *w.dloff);
  w.ds = malloc((g->nreqs + 1) * sizeof *w.ds);
  w.dl = malloc((g->nreqs + 1) * sizeof *w.dl);
  w.stack = malloc((2 * nu + n + 1) * sizeof *w.stack);
  uint32_t *splitp = malloc((n + 1) * sizeof *splitp);
  int rc = -1;
  if (!w.need || !w.dsoff || !w.dloff || !w.ds || !w.dl || !w.stack || !splitp) goto out;
  for (size_t u = 0; u < nu; u++)
    for (size_t r = g->roff[u]; r < g->roff[u + 1]; r++) {
      const req *q = &g->reqs[r];
      w.need[u] += q->type != R_SAT && q->type != R_UNKNOWN && !q->free;
      if (q->type == R_UNIT) w.dsoff[q->target + 1]++;
      if (q->type == R_POSTER && !q->free) w.dloff[q->target + 1]++;
    }
  for (size_t u = 0; u < nu; u++) w.dsoff[u + 1] += w.dsoff[u];
  for (size_t p = 0; p < n; p++) w.dloff[p + 1] += w.dloff[p];
  for (size_t u = 0; u < nu; u++)
    for (size_t r = g->roff[u]; r < g->roff[u + 1]; r++) {
      const req *q = &g->reqs[r];
      if (q->type == R_UNIT) w.ds[w.dsoff[q->target]++] = (uint32_t)u;
      if (q->type == R_POSTER && !q->free) w.dl[w.dloff[q->target]++] = (uint32_t)u;
    }
  /* The fill advanced each start to the next one's: shift back. */
  for (size_t u = nu; u > 0; u--) w.dsoff[u] = w.dsoff[u - 1];
  w.dsoff[0] = 0;
  for (size_t p = n; p > 0; p--) w.dloff[p] = w.dloff[p - 1];
  w.dloff[0] = 0;
  for (size_t p = 0; p < n; p++)
    for (uint32_t t = 0; t < g->ps[p].nthreads; t++)
      if (g->ps[p].threads[t].wait == XR_WAIT_SPLIT) { splitp[nsp++] = (uint32_t)p; break; }
  w.splitp = splitp;
  w.nsplitp = nsp;
  for (size_t p = 0; p < n; p++) try_live(&w, p);
  for (size_t u = 0; u < nu; u++) try_start(&w, u);
  while (w.top) {
    uint64_t x = w.stack[--w.top];
    size_t i = x >> 2;
    switch (x & 3) {
    case 0: /* unit i started: it and the units whose reqs waited for that */
      try_comp(&w, i);
      for (size_t k = w.dsoff[i]; k < w.dsoff[i + 1]; k++) {
        w.need[w.ds[k]]--;
        try_comp(&w, w.ds[k]);
      }
      break;
    case 1: { /* unit i complete: the next on its stream, its process's waiting threads */
      if (g->succ[i] >= 0) try_start(&w, (size_t)g->succ[i]);
      size_t p = (size_t)g->uproc[i];
      const xr_unitstate *U = &g->ps[p].units[i - g->uoff[p]];
      for (uint32_t t = 0; t < g->ps[p].nthreads; t++)
        if (waits(g, p, &g->ps[p].threads[t], U) && --g->wcnt[g->toff[p] + t] == 0) try_live(&w, p);
      break;
    }
    default: /* process i live: the reqs awaiting its posts, its open units, splits */
      for (size_t k = w.dloff[i]; k < w.dloff[i + 1]; k++) {
        w.need[w.dl[k]]--;
        try_comp(&w, w.dl[k]);
      }
      for (uint32_t j = 0; j < g->ps[i].nunits; j++)
        if (g->ps[i].units[j].flags & XR_UNIT_OPEN) try_start(&w, g->uoff[i] + j);
      for (size_t k = 0; k < w.nsplitp; k++) try_live(&w, w.splitp[k]);
      break;
    }
  }
  rc = 0;
out:
  free(w.need); free(w.dsoff); free(w.dloff); free(w.ds); free(w.dl); free(w.stack);
  free(splitp);
  return rc;
}

/* ------------------------------------------------------------------ */
/* The story. */

typedef struct sbuf {
  char *b;
  size_t cap, len;
} sbuf;

static void sb(sbuf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb(sbuf *s, const char *fmt, ...) {
  if (!s->b || s->len + 1 >= s->cap) return;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(s->b + s->len, s->cap - s->len, fmt, ap);
  va_end(ap);
  if (k > 0) s->len = s->len + (size_t)k < s->cap ? s->len + (size_t)k : s->cap - 1;
}

static const char *site_of(const graph *g, const xr_wfg_opts *o, size_t p, uint64_t site,
                           char *buf, size_t cap) {
  const char *s = o && o->site_name && site ? o->site_name(o->ctx, p, site) : NULL;
  if (s && *s) return s;
  snprintf(buf, cap, "0x%" PRIx64, site);
  return buf;
}

static void proc_name(sbuf *s, const xr_procstate *P) {
  if (P->grank >= 0) sb(s, "global rank %d (pid %d on %s)", P->grank, P->pid, P->host);
  else sb(s, "pid %d on %s", P->pid, P->host);
}

static void unit_desc(sbuf *s, const graph *g, const xr_wfg_opts *o, size_t u) {
  size_t p = (size_t)g->uproc[u];
  const xr_unitstate *U = &g->ps[p].units[u - g->uoff[p]];
  char sbuf_[128];
  sb(s, "[comm %016" PRIx64 " rank %d: ", U->comm, g->myrank[u]);
  if (U->kind == XR_OP_COLL && xr_coll_is_p2p(U->coll))
    sb(s, "nccl%s(count %" PRIu64 ", %s) as sends and receives with %u peer%s", xr_unit_coll_name(U),
       U->count, a2a_dtype_name(U->dtype), U->npeers, U->npeers == 1 ? "" : "s");
  else if (U->kind == XR_OP_COLL && (U->flags & XR_UNIT_RUN) && U->coll_hi > U->coll_lo + 1)
    sb(s, "collectives #%u to #%u (back to back, one completion marker), the last nccl%s(count %"
          PRIu64 ", %s)", U->coll_lo + 1, U->coll_hi, xr_unit_coll_name(U), U->count,
       a2a_dtype_name(U->dtype));
  else if (U->kind == XR_OP_COLL)
    sb(s, "collective #%u nccl%s(count %" PRIu64 ", %s)", U->coll_lo + 1,
       xr_unit_coll_name(U), U->count, a2a_dtype_name(U->dtype));
  else if (U->npeers <= 2) {
    /* Few peers: name the operations ("ncclSend to rank 3 and ncclRecv
     * from rank 1"), as the program wrote them. */
    sb(s, "p2p group #%u:", U->group);
    int k = 0;
    for (uint32_t e = 0; e < U->npeers && U->peer_off + e < g->ps[p].npeers; e++) {
      const xr_peerent *pe = &g->ps[p].peers[U->peer_off + e];
      if (pe->send_hi > pe->send_lo)
        sb(s, "%s ncclSend to rank %d", k++ ? " and" : "", pe->peer);
      if (pe->recv_hi > pe->recv_lo)
        sb(s, "%s ncclRecv from rank %d", k++ ? " and" : "", pe->peer);
    }
  } else
    sb(s, "p2p group #%u (%u peer%s)", U->group, U->npeers, U->npeers == 1 ? "" : "s");
  sb(s, " at %s]", site_of(g, o, p, U->site, sbuf_, sizeof sbuf_));
}

static const char *what_name(char w) {
  return w == 'c' ? "collective" : w == 's' ? "send" : "receive";
}

/* The first blocked thread of p that cannot return, or NULL. */
static const xr_threadstate *dead_thread(const graph *g, size_t p, uint64_t min_ms) {
  for (uint32_t t = 0; t < g->ps[p].nthreads; t++) {
    const xr_threadstate *T = &g->ps[p].threads[t];
    if (T->blocked_ms >= min_ms && !thread_ok(g, p, T)) return T;
  }
  return NULL;
}

/* The thread of process p that cannot return and posts a rank (its
 * poster, xr_commstate.poster), else p's first such thread: in a process
 * of ranks as threads the story follows the thread that owes the
 * operation, not whichever blocked thread comes first. */
static const xr_threadstate *poster_dead(const graph *g, size_t p, uint32_t poster) {
  for (uint32_t t = 0; poster && t < g->ps[p].nthreads; t++) {
    const xr_threadstate *T = &g->ps[p].threads[t];
    if (T->thread == poster && !thread_ok(g, p, T)) return T;
  }
  return dead_thread(g, p, 0);
}

/* How many of process p's threads cannot return (blocked min_ms). */
static uint32_t dead_count(const graph *g, size_t p, uint64_t min_ms) {
  uint32_t k = 0;
  for (uint32_t t = 0; t < g->ps[p].nthreads; t++) {
    const xr_threadstate *T = &g->ps[p].threads[t];
    k += T->blocked_ms >= min_ms && !thread_ok(g, p, T);
  }
  return k;
}

static int32_t first_dead_target(const graph *g, size_t p, const xr_threadstate *T) {
  const xr_procstate *P = &g->ps[p];
  if (T->wait == XR_WAIT_SPLIT || T->wait == XR_WAIT_INIT) return -1;
  for (uint32_t j = 0; j < P->nunits; j++)
    if (waits(g, p, T, &P->units[j]) && !g->comp[g->uoff[p] + j]) return (int32_t)(g->uoff[p] + j);
  return -1;
}

static void mark(uint8_t *inv, size_t p) { if (inv) inv[p] = 1; }

/* Explain why a unit cannot complete (or a thread inside a split cannot
 * return), following the graph until a process that is gone, a node seen
 * before (a cycle), or a step limit. The cursor is either a unit (T NULL)
 * or a thread T of process p blocked in a split. */
static void walk(const graph *g, const xr_wfg_opts *o, size_t u, size_t p,
                 const xr_threadstate *T, uint8_t *seen, uint8_t *seenp, sbuf *s,
                 xr_wfg_result *res, uint8_t *inv) {
  char sitebuf[128];
  for (int step = 0; step < 32; step++) {
    if (T && T->wait == XR_WAIT_INIT) {
      mark(inv, p);
      if (g->opts && g->opts->mismatch && g->opts->mismatch(g->opts->ctx, T->comm)) {
        sb(s, " (communicator %016" PRIx64 "), which never completes: its ranks disagree (known "
              "cause below).", T->comm);
        return;
      }
      /* Waiting for ranks to join: the ones nobody reported (the reports
       * hold the ranks each process registered at its init's call). */
      int32_t nr = 0;
      for (uint32_t i = 0; i < g->ps[p].ncomms; i++)
        if (g->ps[p].comms[i].comm == T->comm) nr = g->ps[p].comms[i].nranks;
      uint32_t joined = 0, listed = 0;
      size_t k0 = mem_first(g, T->comm);
      for (size_t k = k0; k < g->nmems && g->mems[k].comm == T->comm; k++)
        joined += k == k0 || g->mems[k].rank != g->mems[k - 1].rank;
      sb(s, " (communicator %016" PRIx64 "), which returns when all its %d ranks have called their "
            "init with its ncclUniqueId; %u ha%s", T->comm, nr, joined, joined == 1 ? "s" : "ve");
      if (nr > 0 && joined < (uint32_t)nr && nr <= (1 << 20)) {
        sb(s, ", not rank");
        for (int32_t r = 0; r < nr && listed < 8; r++)
          if (!find_mem(g, T->comm, r)) sb(s, "%s %d", listed++ ? "," : "", r);
        if ((uint32_t)nr - joined > listed) sb(s, " and %u more", (uint32_t)nr - joined - listed);
        sb(s, " (late, failed before it, or given another ncclUniqueId - e.g. a stale one from an "
              "earlier run's store after an elastic restart)");
      }
      sb(s, ".");
      return;
    }
    if (T) {
      if (seenp[p]) { sb(s, " -> back to that split: a cycle."); res->cycle = 1; return; }
      seenp[p] = 1;
      mark(inv, p);
      int32_t q;
      int why = 0;
      uint32_t made = 0;
      if (split_ok(g, p, T, &q, &why, &made) || q < 0) { sb(s, "."); return; }
      const mem *m = find_mem(g, T->comm, q);
      size_t qp = m->proc;
      const xr_procstate *Q = &g->ps[qp];
      mark(inv, qp);
      if (res->missing_proc < 0) res->missing_proc = (int)qp;
      sb(s, " -> waits for rank %d to call ncclCommSplit #%u of comm %016" PRIx64
            " too (it has made %u), but rank %d, ", q, T->index + 1, T->comm, made, q);
      proc_name(s, Q);
      if (why != R_POSTER) {
        sb(s, ", %s: rank %d is the missing rank.",
           why == R_EXITED ? xr_proc_gone(Q) : "ended the communicator", q);
        return;
      }
      const xr_threadstate *T2 = dead_thread(g, qp, 0);
      if (!T2) { sb(s, ", cannot call it."); return; }
      sb(s, ", is blocked in %s at %s", xr_thread_wait_name(T2),
         site_of(g, o, qp, T2->site, sitebuf, sizeof sitebuf));
      if (T2->wait == XR_WAIT_SPLIT || T2->wait == XR_WAIT_INIT) { p = qp; T = T2; continue; }
      int32_t v = first_dead_target(g, qp, T2);
      if (v < 0) { sb(s, "."); return; }
      sb(s, " waiting for ");
      unit_desc(s, g, o, (size_t)v);
      u = (size_t)v;
      T = NULL;
      continue;
    }
    if (seen[u]) {
      sb(s, " -> back to ");
      unit_desc(s, g, o, u);
      sb(s, ": a cycle.");
      res->cycle = 1;
      return;
    }
    seen[u] = 1;
    mark(inv, (size_t)g->uproc[u]);
    if (!g->start[u] && (g->ps[g->uproc[u]].units[u - g->uoff[g->uproc[u]]].flags & XR_UNIT_OPEN) &&
        (g->pred[u] < 0 || g->comp[g->pred[u]])) {
      sb(s, ", which was never launched: its group is still open (no ncclGroupEnd) and its process %s.",
         g->ps[g->uproc[u]].alive ? "is stuck" : xr_proc_gone(&g->ps[g->uproc[u]]));
      return;
    }
    if (!g->start[u]) {
      sb(s, " -> queued behind ");
      unit_desc(s, g, o, (size_t)g->pred[u]);
      sb(s, " on the same stream");
      u = (size_t)g->pred[u];
      continue;
    }
    const req *bad = NULL;
    for (size_t r = g->roff[u]; r < g->roff[u + 1] && !bad; r++)
      if (!req_ok(g, &g->reqs[r])) bad = &g->reqs[r];
    if (!bad) {
      if (g->suspect[u])
        sb(s, ", which cannot complete (known cause below)"); /* a mismatch or a dead peer */
      /* Live but waiting (a hang report): name the rank it waits for. */
      for (size_t r = g->roff[u]; r < g->roff[u + 1] && !g->suspect[u]; r++) {
        const req *w = &g->reqs[r];
        if (w->type != R_POSTER) continue;
        sb(s, " -> waits for rank %d to post its %s #%u (it has posted %u); rank %d, ", w->qrank,
           what_name(w->what), w->index + 1, w->posted, w->qrank);
        proc_name(s, &g->ps[w->target]);
        if (w->gone)
          sb(s, ": its thread #%u that posted for rank %d has exited (returned early?); only another "
                "thread of it could still post it",
             w->poster, w->qrank);
        else
          sb(s, w->free ? ", posts it from a thread that is in no CUDA/NCCL wait (computing, sleeping or "
                          "doing I/O) and may still post it"
                        : ", is in no CUDA/NCCL wait (computing, sleeping or doing I/O) and may still post it");
        mark(inv, (size_t)w->target);
        if (res->missing_proc < 0) res->missing_proc = w->target;
        break;
      }
      sb(s, ".");
      return;
    }
    const xr_procstate *Q = &g->ps[bad->type != R_UNIT ? (size_t)bad->target
                                                       : (size_t)g->uproc[bad->target]];
    switch (bad->type) {
    case R_UNIT:
      sb(s, " -> needs rank %d's ", bad->qrank);
      unit_desc(s, g, o, (size_t)bad->target);
      sb(s, " to start");
      u = (size_t)bad->target;
      continue;
    case R_EXITED:
    case R_ENDED: {
      size_t q = (size_t)bad->target;
      mark(inv, q);
      if (res->missing_proc < 0) {
        res->missing_proc = (int)q;
        res->missing_ended = bad->type == R_ENDED;
      }
      sb(s, " -> waits for rank %d's %s #%u, but rank %d, ", bad->qrank, what_name(bad->what),
         bad->index + 1, bad->qrank);
      proc_name(s, Q);
      if (bad->posted > bad->index)
        sb(s, ", %s before completing it: rank %d is the missing rank.",
           bad->type == R_EXITED ? xr_proc_gone(Q) : "ended the communicator", bad->qrank);
      else
        sb(s, ", %s after posting %u %s%s: rank %d is the missing rank.",
           bad->type == R_EXITED ? xr_proc_gone(Q) : "ended the communicator", bad->posted,
           what_name(bad->what), bad->posted == 1 ? "" : "s", bad->qrank);
      return;
    }
    case R_POSTER: {
      size_t q = (size_t)bad->target;
      mark(inv, q);
      if (res->missing_proc < 0) res->missing_proc = (int)q;
      sb(s, " -> waits for rank %d to post its %s #%u (it has posted %u), but rank %d, ",
         bad->qrank, what_name(bad->what), bad->index + 1, bad->posted, bad->qrank);
      proc_name(s, Q);
      const xr_threadstate *T2 = poster_dead(g, q, bad->poster);
      if (!T2) { sb(s, ", cannot post it."); return; }
      if (dead_count(g, q, 0) > 1) sb(s, " in its thread #%u", T2->thread);
      sb(s, ", is blocked in %s at %s", xr_thread_wait_name(T2),
         site_of(g, o, q, T2->site, sitebuf, sizeof sitebuf));
      if (T2->wait == XR_WAIT_INIT) { p = q; T = T2; continue; }
      if (T2->wait == XR_WAIT_SPLIT) {
        sb(s, " (#%u of comm %016" PRIx64 ")", T2->index + 1, T2->comm);
        p = q;
        T = T2;
        continue;
      }
      int32_t v = first_dead_target(g, q, T2);
      if (v < 0) { sb(s, "."); return; }
      sb(s, " waiting for ");
      unit_desc(s, g, o, (size_t)v);
      u = (size_t)v;
      continue;
    }
    default:
      sb(s, ".");
      return;
    }
  }
  sb(s, " ...");
}

int xr_wfg_analyze(const xr_procstate *ps, size_t n, const xr_wfg_opts *opts,
                   xr_wfg_result *res, uint8_t *involved, char *story,
                   size_t cap) {
  xr_wfg_result dummy;
  if (!res) res = &dummy;
  memset(res, 0, sizeof *res);
  res->missing_proc = -1;
  if (involved) memset(involved, 0, n);
  if (story && cap) story[0] = 0;
  uint64_t min_ms = opts ? opts->min_blocked_ms : 0;
  /* The verdict needs a thread blocked min_ms (dead_thread), and the story
   * tells only of such threads (explain_all aside): without one there is
   * nothing to find, and the coordinator's every evaluation of a healthy job
   * builds no graph. */
  bool blocked = opts && opts->explain_all;
  for (size_t p = 0; p < n && !blocked; p++)
    for (uint32_t t = 0; ps[p].alive && t < ps[p].nthreads && !blocked; t++)
      blocked = ps[p].threads[t].blocked_ms >= min_ms;
  if (!blocked) return 0;
  graph g = {.ps = ps, .n = n, .opts = opts};
  if (build(&g) != 0 || fixpoint(&g) != 0) { graph_free(&g); return 0; }
  sbuf s = {story, cap, 0};
  uint8_t *seen = calloc(g.nu + 1, 1);
  uint8_t *seenp = calloc(n + 1, 1);
  uint64_t comms_seen[8];
  int ncomms_seen = 0, nlines = 0;
  for (size_t k = 0; k < n && seen && seenp; k++) {
    /* The focus process (the report's reader) tells its story first. */
    size_t p = opts && opts->focus >= 0 && (size_t)opts->focus < n
                   ? (k == 0 ? (size_t)opts->focus : k <= (size_t)opts->focus ? k - 1 : k)
                   : k;
    if (!ps[p].alive) continue;
    /* Every thread of p that cannot return tells its story (ranks as
     * threads: each waits for its own rank's operations); named by its
     * thread index where there are several. */
    const uint32_t ndead = dead_count(&g, p, min_ms);
    for (uint32_t ti = 0; ti < ps[p].nthreads || (ti == 0 && !ndead); ti++) {
      const xr_threadstate *T = NULL;
      if (ndead) {
        T = &ps[p].threads[ti];
        if (T->blocked_ms < min_ms || thread_ok(&g, p, T)) continue;
        res->dead_threads++;
      } else if (ti == 0 && opts && opts->explain_all && ps[p].nthreads) {
        T = &ps[p].threads[0];
      }
      if (!T) break;
      mark(involved, p);
      int32_t u = first_dead_target(&g, p, T);
      if (u < 0 && T->wait != XR_WAIT_SPLIT)
        for (uint32_t j = 0; j < ps[p].nunits && u < 0; j++)
          if (waits(&g, p, T, &ps[p].units[j])) u = (int32_t)(g.uoff[p] + j);
      if (++nlines > 8) continue; /* the story names the first eight */
      char sitebuf[128];
      sb(&s, "%s", nlines > 1 ? "\n  " : "  ");
      proc_name(&s, &ps[p]);
      if (ndead > 1) sb(&s, " in its thread #%u", T->thread);
      sb(&s, " is blocked in %s at %s for %" PRIu64 " ms", xr_thread_wait_name(T),
         site_of(&g, opts, p, T->site, sitebuf, sizeof sitebuf), T->blocked_ms);
      memset(seen, 0, g.nu + 1);
      memset(seenp, 0, n + 1);
      uint64_t comm;
      if (T->wait == XR_WAIT_SPLIT || T->wait == XR_WAIT_INIT) {
        if (T->wait == XR_WAIT_SPLIT)
          sb(&s, " (split #%u of comm %016" PRIx64 ")", T->index + 1, T->comm);
        walk(&g, opts, 0, p, T, seen, seenp, &s, res, involved);
        comm = T->comm;
      } else {
        sb(&s, ", waiting for ");
        if (u < 0) { sb(&s, "nothing known."); continue; }
        unit_desc(&s, &g, opts, (size_t)u);
        walk(&g, opts, (size_t)u, p, NULL, seen, seenp, &s, res, involved);
        comm = g.scomm[u] ? g.scomm[u] : ps[p].units[(size_t)u - g.uoff[p]].comm;
      }
      int known = 0;
      for (int i = 0; i < ncomms_seen; i++) known |= comms_seen[i] == comm;
      if (!known && ncomms_seen < 8) {
        comms_seen[ncomms_seen++] = comm;
        const char *mm = opts && opts->mismatch ? opts->mismatch(opts->ctx, comm) : NULL;
        if (mm) sb(&s, "\n  known cause on comm %016" PRIx64 ": %s", comm, mm);
      }
    }
  }
  free(seen);
  free(seenp);
  res->deadlock = res->dead_threads > 0;
  graph_free(&g);
  return res->deadlock;
}

uint64_t xr_state_progress(const xr_procstate *st) {
  uint64_t h = a2a_hash_bytes(&st->nunits, sizeof st->nunits, st->ncomms);
  for (uint32_t i = 0; i < st->ncomms; i++) {
    const xr_commstate *c = &st->comms[i];
    uint64_t v[4] = {c->comm, c->coll_posted, c->ended, c->splits};
    h = a2a_hash_bytes(v, sizeof v, h);
    for (uint32_t e = 0; e < c->npeers && c->peer_off + e < st->npeers; e++) {
      const xr_peerent *pe = &st->peers[c->peer_off + e];
      uint32_t w[3] = {(uint32_t)pe->peer, pe->send_hi, pe->recv_hi};
      h = a2a_hash_bytes(w, sizeof w, h);
    }
  }
  for (uint32_t j = 0; j < st->nunits; j++) {
    uint64_t v[2] = {st->units[j].comm, st->units[j].group};
    h = a2a_hash_bytes(v, sizeof v, h);
  }
  return h;
}
