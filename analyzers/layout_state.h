/* layout_state.h - the per-thread state of the `layout` analyzer, shared by
 * its two files: layout.c (the analyzer: buffer checks, overlap, scatter,
 * event handling) and layout_hidden.c (layout.hidden-copy: copy producers,
 * matching and timing). Not for other analyzers.
 *
 * A record belongs to one live application thread (ev->thread, a2a_tslots
 * in a2a_core.h) and is written only by it; the exit handler reads every
 * record once, at exit.
 */
#ifndef A2A_LAYOUT_STATE_H
#define A2A_LAYOUT_STATE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "a2a_core.h"
#include "layout_ranges.h"

#define LAYOUT_MAX_RANGES 2048     /* ranges of one open group */
#define LAYOUT_MAX_PRODUCERS 8     /* recent copies per thread */
#define LAYOUT_ALIGN 16
#define LAYOUT_ALIGN_MIN_BYTES 4096
#define LAYOUT_MAX_FEEDS 8         /* copy sites awaiting a timed report */

/* One range of an operation posted in the open group. */
typedef struct ly_range {
  uintptr_t lo, hi;
  const void *site;
  const char *api;
  const a2a_comm *comm;     /* NULL if unknown */
  void *comm_handle;
  uint32_t op;              /* operation index in the group */
  uint16_t grp;             /* the nested group it was posted in: 0 directly
                               in the outermost one, k the k-th
                               ncclGroupStart nested inside it */
  int peer;                 /* P2P peer, -1 for collectives */
  bool is_recv;
  bool p2p;
} ly_range;

/* A recent write that may be a hidden .contiguous(). */
typedef struct ly_producer {
  uintptr_t dst;            /* written address (memcpy dst / the copy
                               kernel's destination parameter) */
  uintptr_t src;            /* memcpy: the source; kernel: 0 */
  size_t bytes;             /* memcpy: bytes; kernel: 0 (unknown) */
  const char *what;         /* "cudaMemcpyAsync" or the kernel's name */
  const void *site;
  uint64_t gen;             /* thread's operation generation when written */
  uint64_t ticks;           /* lyh_ticks() when written */
  bool used;
  bool timed;               /* start event recorded before the copy */
  bool end_ok;              /* end event recorded after it */
} ly_producer;

/* A copy site known to feed an NCCL send buffer, and its finding while it
 * waits for a measured duration (see "Timing" below). */
typedef struct ly_feed {
  const void *copy_site;
  const char *what;
  size_t copy_bytes;
  uintptr_t copy_src;       /* memcpy: where the bytes came from, else 0 */
  bool reported;
  /* The copy places its block into a buffer the same operation or group
   * receives into (see lyh_assembles): part of the algorithm, not a
   * packing copy. Judged for the group the feed was found in (gen). */
  bool assembles;
  int assemble_peer;        /* the receive next to the block: its peer, -1 */
  bool assemble_inplace;    /* the block lies inside the operation's own
                               receive buffer (an in-place all-gather or
                               gather), not next to another receive */
  const char *assemble_api;
  uint64_t gen;
  /* the finding to report */
  const void *op_site;
  const char *op_api;
  const a2a_comm *comm;
  void *comm_handle;
  int op_peer;              /* P2P peer of the send, -1 */
  uintptr_t lo;
  size_t bytes;
  uint64_t ns_since_copy;
  int slot;                 /* producer slot timing a later copy, -1 none */
} ly_feed;


#define LAYOUT_MAX_DEPTH 8         /* nesting levels whose group index is kept */
#define LAYOUT_MEMO 32             /* clean verdicts remembered per thread (a power of 2) */

/* The findings a remembered verdict produced (a faulty operation or group
 * posted every step: nccl-tests' in-place sendrecv), counted again on a
 * hit as repeats (a2a_report_repeats: all, or none and the checks run
 * again). Where is the current call's: the operation's call site, or for a
 * group finding a range of the current group (idx; its ranges are the
 * remembered ones, sites included) or its ncclGroupEnd (LY_REP_END). */
#define LY_REPS 4
typedef struct ly_rep {
  uint8_t check, sev;
  uint16_t idx;             /* group findings: range index, or LY_REP_END */
} ly_rep;
#define LY_REP_END 0xffff

/* An operation whose per-buffer checks (host-memory, wrong-device,
 * out-of-bounds, misaligned) and own overlap check found nothing, or only
 * findings at its own call site (rep, counted again on a hit), with
 * every input of those verdicts: the arguments that shape its ranges, the
 * communicator record (immutable once published: rank, nranks, device),
 * the enabled checks and the allocation registry's generation. Only
 * verdicts drawn from the registry alone are kept: a buffer the registry
 * does not hold was judged by cudaPointerGetAttributes, which no
 * generation covers. An equal key later means the same verdict, so the
 * checks are skipped (a training loop posts the same buffers every step). */
/* Every write of an entry goes through memo_find, which clears the
 * thread's ly_thread.lone (lone_replay's premise: no other lookup since);
 * a new writer - an invalidation sweep, a reset - must clear it too. */
typedef struct ly_memo {
  uint64_t alloc_gen;       /* a2a_alloc_generation(); 0 = empty entry */
  const void *b0, *b1;      /* sendbuff, recvbuff (P2P: buff, NULL) */
  size_t count;
  const a2a_comm *comm;     /* NULL: unknown communicator */
  uint64_t checks[2];       /* a2a_checks_enabled_w */
  int32_t dtype, root;      /* P2P: root -1 */
  int32_t what;             /* kind << 8 | coll (COLL) or is_send (P2P) */
  /* The operation's ranges (lr_op_ranges), a function of the key alone:
   * the buffers, count, dtype, root and collective or direction, and the
   * communicator record's rank and size (immutable). Not part of the key
   * (memo_eq does not compare it); a known operation reuses it instead of
   * computing it again (an operation in a group records its ranges). */
  lr_op op;
  uint8_t nrep;             /* the findings it produced (ly_rep: at the call's site) */
  ly_rep rep[LY_REPS];
} ly_memo;

#define LAYOUT_GOPS 256            /* operations of a group whose clean verdict is kept */
#define LAYOUT_GSLOTS 4            /* groups remembered per thread (ly_gslot; at most 8) */
#define LAYOUT_GSLOT_OPS 128       /* operations of a small slot (1..LAYOUT_GSLOTS-1) */
#define LAYOUT_GSLOT_RANGES 256    /* ranges of a small slot */

/* One operation of a group as layout.c's replay compares it (replay_op),
 * and what it left in ly_thread.ranges. Everything an operation's verdict
 * and ranges depend on: its memo key (ly_memo: buffers, count, dtype, root,
 * collective or direction, the allocation registry's generation, the
 * enabled checks, and the communicator record, here as its handle, which a
 * lookup always answers with the same record while the communicator
 * registry's version is unchanged) - the generation, the checks and the
 * version as the core's epoch read before all three (a2a_core_epoch: while
 * it reads the same, none of them changed) - the inputs of its ly_range fields beyond
 * the ranges (site, api, peer, grp; op is its index) and the range count
 * before it (the earlier operations'). Equal inputs in equal order: the
 * same verdict (no finding, or the same findings at the same site), and
 * byte-identical ranges. */
typedef struct ly_opkey {
  const void *b0, *b1;      /* as ly_memo */
  size_t count;
  int32_t dtype;
  int32_t peer;             /* P2P peer, -1; right after dtype, as in the
                               event's u.p2p: layout.c's opkey_eq compares
                               the two as one word */
  int32_t root, what;
  void *comm_handle;
  const void *site;
  const char *api;
  uint64_t epoch;           /* a2a_core_epoch, read before the lookup and
                               the memo key's generation and checks; 0 for
                               an operation that is not replayable (its
                               verdict is not one a ly_memo would keep:
                               judged every time): the epoch starts at 1
                               and only grows, so layout.c's opkey_eq
                               refuses it */
  uint16_t grp;
  uint8_t nrep;             /* a replayable operation's findings (0: it
                               found nothing), each at its call
                               site (ly_rep, idx LY_REP_END): counted again
                               when it is replayed (layout.c, op_repeats) */
  unsigned rend;            /* nranges after the operation */
  ly_rep rep[LY_REPS];      /* (with nrep, ~16 bytes more per remembered
                               operation of every slot: per-thread memory) */
} ly_opkey;

/* A remembered group (valid: its bit in ly_thread.gvalid): its operations
 * ops[0..n) and their ranges ranges[0..ops[n-1].rend), a group whose
 * overlap and scatter checks found nothing, or only the findings rep, with
 * the enabled checks `checks`. The storage is the thread's (ops and
 * ranges point into it): slot 0 the large one (LAYOUT_GOPS operations,
 * LAYOUT_MAX_RANGES ranges, the most one group records), the others
 * LAYOUT_GSLOT_OPS and LAYOUT_GSLOT_RANGES - a group that outgrows a small
 * slot while it is recorded moves to slot 0 (layout.c, slot_grow). */
typedef struct ly_gslot {
  ly_opkey *ops;            /* capacity ly_slot_ocap */
  ly_range *ranges;         /* capacity ly_slot_rcap */
  unsigned n;               /* operations */
  uint64_t checks[2];       /* a2a_checks_enabled_w it was judged with */
  uint64_t used;            /* ly_thread.gclock when last remembered or hit (LRU) */
  uint8_t nrep;             /* its findings (ly_rep) */
  ly_rep rep[LY_REPS];
} ly_gslot;

typedef struct ly_thread {
  int depth;                /* NCCL group nesting */
  /* The open outermost group: where it was opened, how many groups were
   * nested in it so far, and the index (ly_range.grp) of the innermost
   * open one per depth. */
  const void *outer_site;
  uint16_t nnested;
  const _Atomic uint32_t *keep; /* its thread's kept-groups word
                               (a2a_group_keep_slot) */
  uint32_t kword;           /* the thread's kept-groups word
                               (a2a_group_keep_word), kept bit clear, when
                               nnested last counted its kept starts: the
                               count is nnested and the kept starts since
                               (layout.c, nested_count) */
  uint16_t grp_at[LAYOUT_MAX_DEPTH];
  uint16_t cgrp;            /* while depth > 0: grp_at[min(depth,
                               LAYOUT_MAX_DEPTH) - 1], the innermost open
                               group's index (layout.c, cur_grp), kept by
                               ncclGroupStart and a nested ncclGroupEnd */
  /* outer_site symbolized (the runtime's symbolizer), cached per site. */
  const void *outer_text_site;
  char outer_text[192];
  uint64_t gen;             /* advanced after each operation outside a group
                               (at the end of its PRE) and at each outermost
                               ncclGroupEnd */
  uint32_t nops;
  unsigned nranges;
  /* The open group's ranges[0..nranges): a slot's storage - the lowest
   * slot of gmask while the group replays (set when read: layout.c,
   * group_ranges), or the one it is recorded into (wslot). */
  ly_range *ranges;
  bool ranges_overflow;
  ly_memo memo[LAYOUT_MEMO]; /* two-way: pairs of slots (memo_find) */
  uint8_t memo_mru[LAYOUT_MEMO / 2]; /* per pair, the way used last */
  /* The entry of memo the thread's last operation outside a group found,
   * clean (no findings), on a known communicator, with nothing to judge or
   * record (layout.c, on_op), and the core's epoch read before it was
   * found (a2a_core_epoch); NULL after any other memo_find. */
  const ly_memo *lone;
  uint64_t lone_ep;
  /* The remembered groups (ly_gslot), the last LAYOUT_GSLOTS distinct ones
   * judged (a training step alternates several: MoE's dispatch and combine
   * all-to-alls). gmask: the slots whose operations the open group's equal,
   * in order, so far (every one of gvalid at the outermost ncclGroupStart;
   * layout.c, replay_match): they hold the same ranges for them, byte for
   * byte, so nothing is judged or written while one remains - the verdicts
   * are the same (a slot's findings counted again) and the ranges are
   * already there, in the storage of gmask's slots. The first operation
   * that matches none takes a slot (the least recently used: slot_take),
   * copies the prefix into it from gmask's lowest slot unless it is that
   * one, and is written there with every later operation (wslot). */
  ly_gslot gs[LAYOUT_GSLOTS];
  uint8_t gvalid;           /* slots holding a remembered group */
  uint8_t gmask;            /* slots the open group still equals */
  int8_t wslot;             /* the slot the open group is written into, -1 */
  /* The replay cursor (layout.c, replay_cursor), set at the outermost
   * ncclGroupStart and kept with every change of gmask or nops inside the
   * group: while gmask holds one slot s, rk = &gs[s].ops[nops] (nops as
   * cursor_sync brings it up to date: the cursor's replays move rk alone) and
   * rkend = &gs[s].ops[gs[s].n] - the operation the open group's next one
   * must equal, and the slot's end (rk == rkend: none left) - else both
   * NULL, or (the group's first operation, several slots) the predicted
   * slot's (rkmask). A cursor (rk != rkend) exists only while depth > 0,
   * nfeeds is 0 and no producer could match (layout.c, producers_live,
   * while layout.hidden-copy is on), so that layout_op_pre tests nothing
   * else: group_reset clears it (every outermost ncclGroupEnd, the fork's
   * reset of the other threads, a claim's memset), replay_cursor and
   * replay_predict set it only while nfeeds is 0 and no producer could
   * match, a feed is added (lyh_check_op, lyh_check_group) only on paths
   * that then set it through replay_cursor (replay_advance) or clear it
   * (slot_take, group_reset), a new producer ends it (lyh_producer_add:
   * rkend = rk, which keeps rk for cursor_sync), and the generation, which
   * retires producers, does not change inside a group. */
  const ly_opkey *rk, *rkend;
  /* The slot mask the cursor's slot stands for (1 << s: what gmask is
   * once the open group's next operation equals *rk), kept with rk. At
   * the outermost ncclGroupStart, when gmask holds several slots, the
   * cursor may stand for one of them, s = gnext[glast], if s is in u0
   * (layout.c, replay_predict): rk = &gs[s].ops[0] while gmask still holds
   * them all. */
  uint8_t rkmask;
  /* The slots of gvalid whose operation 0 no operation can equal together
   * with another slot of gvalid's operation 0 (layout.c, opkey_distinct):
   * computed when a slot becomes valid (check_group), true of the slots
   * that remain when one is forgotten (fewer to differ from). */
  uint8_t u0;
  /* The slot that held the previous outermost group (glast; LAYOUT_GSLOTS:
   * none kept), and per slot the one that held the group after a group
   * held there (gnext): a step's groups come in the same order every step,
   * so the group after the one in glast is predicted to be gnext[glast]'s
   * (a prediction only: replay_predict's slot serves whether it is right
   * or not, its operation 0 is compared). */
  uint8_t glast;
  uint8_t gnext[LAYOUT_GSLOTS + 1];
  uint64_t gclock;          /* LRU clock (ly_gslot.used) */
  ly_opkey gops0[LAYOUT_GOPS];                          /* slot 0 */
  ly_range granges0[LAYOUT_MAX_RANGES];
  ly_opkey gops_s[LAYOUT_GSLOTS - 1][LAYOUT_GSLOT_OPS]; /* slots 1.. */
  ly_range granges_s[LAYOUT_GSLOTS - 1][LAYOUT_GSLOT_RANGES];
  ly_producer prod[LAYOUT_MAX_PRODUCERS];
  unsigned nprod;           /* ring position */
  int open_end;             /* slot whose end event the call's POST records, -1 */
  void *tev[LAYOUT_MAX_PRODUCERS][2]; /* timing events per slot (lazy) */
  int tev_state;            /* 0 not created, 1 ready, -1 unavailable */
  ly_feed feeds[LAYOUT_MAX_FEEDS];
  unsigned nfeeds;
  const ly_range *scratch[LAYOUT_MAX_RANGES]; /* sorting at ncclGroupEnd */
} ly_thread;

_Static_assert(LAYOUT_GSLOTS >= 2 && LAYOUT_GSLOTS <= 8, "slot masks are bytes");

/* A slot's capacities. */
static inline unsigned ly_slot_ocap(int s) { return s ? LAYOUT_GSLOT_OPS : LAYOUT_GOPS; }
static inline unsigned ly_slot_rcap(int s) { return s ? LAYOUT_GSLOT_RANGES : LAYOUT_MAX_RANGES; }

/* Test hook (layout.c): the calling thread's count of groups whose overlap
 * and scatter checks ran (check_group not replayed) and of operations whose
 * ranges were written (record_ranges), since the thread started. */
void layout_replay_counts(unsigned long *judged, unsigned long *recorded);

/* layout_hidden.c: layout.hidden-copy. */

/* The producers' clock: cheap to read on every device-to-device copy,
 * converted to nanoseconds only for a finding (layout_hidden.c). */
#if defined(__x86_64__) || defined(__i386__)
#define LYH_TSC 1
static inline uint64_t lyh_ticks(void) { return __builtin_ia32_rdtsc(); }
#else
#define LYH_TSC 0
static inline uint64_t lyh_ticks(void) { return a2a_hostsvc->now_ns(); }
#endif
/* Start of the tick rate's measurement (layout's initialization). */
void lyh_clock_init(void);

/* The feeds' side of a new producer (only while t->nfeeds). */
void lyh_producer_feeds(ly_thread *t, const a2a_event *ev, int slot, ly_producer *p);

/* A new producer: the oldest slot, rewritten whole (dst, src, bytes and
 * what are the caller's). Inline: a device-to-device copy is a hot call. */
static inline ly_producer *lyh_producer_add(ly_thread *t, const a2a_event *ev, uintptr_t dst,
                                            uintptr_t src, size_t bytes, const char *what) {
  int slot = (int)(t->nprod++ % LAYOUT_MAX_PRODUCERS);
  ly_producer *p = &t->prod[slot];
  p->dst = dst;
  p->src = src;
  p->bytes = bytes;
  p->what = what;
  p->site = ev->callsite;
  p->gen = t->gen;
  p->ticks = lyh_ticks();
  p->used = p->timed = p->end_ok = false;
  t->rkend = t->rk; /* no replay cursor while a producer could match (ly_thread.rk) */
  if (t->nfeeds) lyh_producer_feeds(t, ev, slot, p);
  return p;
}

/* A device-to-device copy (PRE) by the thread: a producer. */
static inline void lyh_on_memcpy(ly_thread *t, const a2a_event *ev) {
  if (ev->kind != A2A_EV_MEMCPY || ev->u.copy.height > 1 || !ev->u.copy.bytes) return;
  int k = ev->u.copy.cpykind;
  if (k != A2A_CPY_D2D && k != A2A_CPY_DEFAULT) return;
  if (k == A2A_CPY_DEFAULT) { /* a D2D copy, as far as the registry knows */
    a2a_alloc a;
    if (!a2a_alloc_find(ev->u.copy.src, &a) || a.mem == A2A_MEM_HOST_PINNED) return;
  }
  lyh_producer_add(t, ev, (uintptr_t)ev->u.copy.dst, (uintptr_t)ev->u.copy.src, ev->u.copy.bytes,
                   ev->api);
}

/* A kernel launch (PRE) by the thread. */
void lyh_on_launch(ly_thread *t, const a2a_event *ev);
/* Timing brackets open anywhere (a POST must close them). */
extern A2A_HIDDEN _Atomic unsigned lyh_brackets_open;
/* POST of a copy or launch: closes a timing bracket opened at its PRE. */
void lyh_on_copy_post(ly_thread *t, const a2a_event *ev);
/* An operation's send ranges / an ending group's sends against the
 * thread's recent copies. */
void lyh_check_op(ly_thread *t, const a2a_event *ev, const a2a_comm *c, const lr_op *op);
void lyh_check_group(ly_thread *t, const a2a_event *end);
/* Report pending findings whose timed copy completed (at_exit: all). */
void lyh_poll(ly_thread *t, bool at_exit);
/* Destroy the record's timing events (re-initialization). */
void lyh_release(ly_thread *t);

#endif /* A2A_LAYOUT_STATE_H */
