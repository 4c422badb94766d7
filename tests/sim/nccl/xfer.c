/* xfer.c - data movement of the simulator's NCCL: channels, the progress
 * engine, point-to-point batches and collectives.
 *
 * Channels. Each ordered pair (sender, receiver) of a communicator has two
 * channels in the shared segment: one for point-to-point traffic and one for
 * collectives (NCCL also uses separate connections for them). A channel is
 * NCCL's simple protocol in miniature: SIM_NSTEPS slots of `step` bytes
 * (A2ASIM_NCCL_CHUNK, default 64 KiB), a head counter posted by the sender
 * and a tail counter posted by the receiver. The sender may run ahead by
 * SIM_NSTEPS slots; beyond that it blocks until the receiver consumes.
 *
 * Point-to-point (send/recv, and AlltoAll/Gather/Scatter, which NCCL 2.28
 * decomposes into send/recv tasks in taskAppend). An operation of b bytes
 * is max(1, ceil(b / step)) steps - a zero-byte send or receive still moves
 * one empty step, as NCCL's runSend/runRecv loops run at least once. Sender
 * and receiver each walk their own step count, so with mismatched sizes:
 *   - send > recv: the receiver takes only its steps (and, in the last one,
 *     only its bytes); the sender's extra steps stay in the channel. If they
 *     fit in the FIFO the send completes and the NEXT receive from that peer
 *     consumes them (shifted/corrupted data); if not, the sender hangs.
 *   - send < recv within the same step count: the receiver copies its own
 *     byte count from the slot, i.e. the tail is stale slot content.
 *   - send < recv with more receive steps: the receiver waits for more
 *     steps, which only a later send provides (its data shifts), else hangs.
 * The first operation on a p2p channel waits until the other side has
 * executed one too (NCCL's lazy connection setup needs both ranks): a send
 * whose receive is never posted therefore blocks its stream forever. After
 * that, small sends complete eagerly into the FIFO as in NCCL.
 *
 * Cost model: every p2p send (to oneself too) charges a2asim_model_transfer
 * for its bytes; a collective charges once what NCCL's ring algorithm moves
 * per rank. Waits for a peer follow the device timelines, not the host's
 * wake-ups: each connection, posted step and consumed step carries its
 * side's a2asim_model_time, and the side that waited for it advances its
 * own timeline to that time (a2asim_model_advance) - a GPU waiting for its
 * peer's data resumes when the peer produced it.
 *
 * Collectives (AllReduce, Broadcast, Reduce, AllGather, ReduceScatter) use
 * direct all-pairs exchanges on the collective channels; every step carries
 * a descriptor (kind, root, bytes). A receiver that finds a descriptor
 * different from its own operation stops there forever: ranks calling
 * different collectives, with different roots, or moving different byte
 * counts, hang as on GPUs rather than crash or silently succeed (with
 * NCCL_DEBUG=WARN a "[simulator]" warning names the mismatch). NCCL's data
 * path moves bytes (steps and protocol lines are byte-sized), so ranks that
 * describe the same bytes with different datatypes do not hang, in a
 * reduction too: each rank reduces what it receives as its own type, and
 * the result is garbage. Nor does the reduction operation enter the
 * descriptor: NCCL chooses the algorithm and protocol from the collective
 * and its bytes (NVIDIA/nccl src/graph/tuning.cc ncclTopoGetAlgoTime has no
 * op argument; the op only removes NVLS/CollNet candidates, which the
 * simulator does not model), so ranks passing different operations
 * complete, each combining the contributions with its own operation (a
 * PreMulSum rank's contribution is scaled by its own scalar, as NCCL's
 * preOp scales a rank's input): the results are wrong, and in this all-pairs
 * model they differ between ranks (NCCL's ring/tree mixes the operations
 * along the reduction order instead). Reductions combine the contributions
 * in rank order 0..n-1 on every rank, so ranks with the same operation get
 * the same bits.
 *
 * Bounds (sim_execute): a buffer that runs past the end of the allocation
 * the runtime knows it in is replaced by a shadow for the operation, so
 * nothing here ever reads or writes beyond an allocation (see "bounds").
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_nccl.h"

struct xop {
  struct sim_chan *ch;
  char *slots;
  int send;
  int peer;
  int p2p;                 /* p2p channel: connection handshake first */
  int connected;
  char *buf;
  size_t bytes;
  uint64_t nsteps, k;
  int has_desc;
  struct sim_desc desc;
  int model;               /* send: charge the cost model for its bytes */
  int after;               /* op that must complete first (same channel), -1 */
  int done;
  int stuck;               /* collective mismatch seen: never progresses */
};

static _Atomic uint32_t *bell_of(struct sim_seg *seg, int rank) {
  return &seg->bell[(size_t)rank * SIM_BELL_STRIDE];
}

/* Wakes the peer's progress loop after a channel changed. */
static void ring(struct sim_seg *seg, int peer) {
  atomic_fetch_add(bell_of(seg, peer), 1);
  sim_futex_wake(bell_of(seg, peer));
}

static const char *kind_name(int k) {
  static const char *const n[] = {"?", "Send", "Recv", "AllReduce", "Broadcast", "Reduce",
                                  "AllGather", "ReduceScatter", "AlltoAll", "Gather", "Scatter"};
  return k >= 0 && k <= SIM_K_SCATTER ? n[k] : "?";
}

static void xop_init(struct ncclComm *c, struct xop *o, int send, int peer, int p2p, void *buf,
                     size_t bytes, const struct sim_desc *d) {
  memset(o, 0, sizeof *o);
  struct sim_seg *seg = &c->seg;
  int src = send ? c->rank : peer, dst = send ? peer : c->rank;
  o->ch = p2p ? sim_chan_p2p(seg, src, dst) : sim_chan_coll(seg, src, dst);
  o->slots = sim_chan_data(seg, o->ch);
  o->send = send;
  o->peer = peer;
  o->p2p = p2p;
  o->buf = buf;
  o->bytes = bytes;
  o->nsteps = bytes == 0 ? 1 : (bytes + seg->step - 1) / seg->step;
  if (d) { o->has_desc = 1; o->desc = *d; }
  /* Every p2p send pays for its bytes, a send to oneself included (the
   * perf tests' model: an AlltoAll of S bytes costs S / bandwidth);
   * collectives charge once for the whole operation (see run_coll). */
  o->model = send && p2p;
  o->after = -1;
}

/* Serialises operations of a batch that use the same channel in the same
 * direction: they match in posting order. */
static void chain(struct xop *ops, int n) {
  for (int i = 0; i < n; i++)
    for (int j = i - 1; j >= 0; j--)
      if (ops[j].ch == ops[i].ch && ops[j].send == ops[i].send) { ops[i].after = j; break; }
}

static void warn_mismatch(struct ncclComm *c, const struct xop *o, const struct sim_desc *got) {
  sim_warn("[simulator] rank %d of comm %016llx: %s(bytes %llu, root %d) met "
           "%s(bytes %llu, root %d) from rank %d: the ranks called different "
           "collectives; hanging as a GPU would",
           c->rank, (unsigned long long)c->key, kind_name(o->desc.kind),
           (unsigned long long)o->desc.count, o->desc.root,
           kind_name(got->kind), (unsigned long long)got->count, got->root, o->peer);
}

/* Moves data until every op is done. Returns 0, or -1 when the
 * communicator was aborted meanwhile (the ops are abandoned). */
static int progress(struct ncclComm *c, struct xop *ops, int n) {
  struct sim_seg *seg = &c->seg;
  _Atomic uint32_t *bell = bell_of(seg, c->rank);
  size_t step = seg->step;
  for (;;) {
    uint32_t v = atomic_load(bell);
    int remaining = 0, moved = 0;
    for (int i = 0; i < n; i++) {
      struct xop *o = &ops[i];
      if (o->done) continue;
      remaining++;
      if (o->stuck || (o->after >= 0 && !ops[o->after].done)) continue;
      if (o->p2p && !o->connected) {
        _Atomic uint32_t *mine = o->send ? &o->ch->send_conn : &o->ch->recv_conn;
        _Atomic uint32_t *theirs = o->send ? &o->ch->recv_conn : &o->ch->send_conn;
        if (!atomic_load(mine)) {
          o->ch->conn_t[o->send ? 0 : 1] = a2asim_model_time();
          atomic_store(mine, 1);
          ring(seg, o->peer);
        }
        if (!atomic_load(theirs)) continue;
        a2asim_model_advance(o->ch->conn_t[o->send ? 1 : 0]);
        o->connected = 1;
      }
      int touched = 0;
      if (o->send) {
        uint64_t head = atomic_load_explicit(&o->ch->head, memory_order_relaxed);
        uint64_t tail = atomic_load_explicit(&o->ch->tail, memory_order_acquire);
        while (o->k < o->nsteps && head - tail < SIM_NSTEPS) {
          size_t off = (size_t)o->k * step;
          size_t len = o->bytes - off < step ? o->bytes - off : step;
          unsigned slot = (unsigned)(head % SIM_NSTEPS);
          /* The slot is free since step head - SIM_NSTEPS was consumed. */
          if (head >= SIM_NSTEPS) a2asim_model_advance(o->ch->take_t[slot]);
          if (len) memcpy(o->slots + (size_t)slot * step, o->buf + off, len);
          o->ch->size[slot] = len;
          if (o->has_desc) o->ch->desc[slot] = o->desc;
          o->ch->post_t[slot] = a2asim_model_time();
          head++;
          atomic_store_explicit(&o->ch->head, head, memory_order_release);
          o->k++;
          touched = 1;
        }
      } else {
        uint64_t tail = atomic_load_explicit(&o->ch->tail, memory_order_relaxed);
        uint64_t head = atomic_load_explicit(&o->ch->head, memory_order_acquire);
        while (o->k < o->nsteps && tail < head) {
          unsigned slot = (unsigned)(tail % SIM_NSTEPS);
          if (o->has_desc && memcmp(&o->ch->desc[slot], &o->desc, sizeof o->desc) != 0) {
            struct sim_desc got = o->ch->desc[slot];
            warn_mismatch(c, o, &got);
            o->stuck = 1;
            break;
          }
          size_t off = (size_t)o->k * step;
          size_t len = o->bytes - off < step ? o->bytes - off : step;
          /* The receiver copies its own length: if the sender put fewer
           * bytes in this slot, the rest is stale slot content. */
          if (len) memcpy(o->buf + off, o->slots + (size_t)slot * step, len);
          a2asim_model_advance(o->ch->post_t[slot]);
          o->ch->take_t[slot] = a2asim_model_time();
          tail++;
          atomic_store_explicit(&o->ch->tail, tail, memory_order_release);
          o->k++;
          touched = 1;
        }
      }
      if (touched) {
        moved = 1;
        ring(seg, o->peer);
      }
      if (o->k == o->nsteps) {
        o->done = 1;
        moved = 1;
        if (o->model) a2asim_model_transfer(o->bytes);
      }
    }
    if (remaining == 0) return 0;
    if (!moved) {
      if (atomic_load(&c->aborted)) return -1;
      sim_futex_wait(bell, v, 50);
    }
  }
}

/* ---- collectives ------------------------------------------------------------ */

/* Reductions run in segments of at most SIM_SEG_BYTES so that the staging
 * memory (one segment per rank) stays bounded however large the buffer.
 * Every rank uses the same segmentation, so segments match one to one. */
#define SIM_SEG_BYTES ((size_t)4 << 20)

/* The scalar this rank pre-multiplies its contribution by: PreMulSum's, or
 * 1/n for floating-point Avg (NCCL implements it as PreMulSum). Returns 0
 * when the contribution is the send buffer itself. */
static int premul_scalar(struct ncclComm *c, const struct sim_task *t, unsigned char scalar[8]) {
  size_t es = sim_type_size(t->dtype);
  memset(scalar, 0, 8);
  if (t->op == SIM_OP_PREMULSUM) {
    if (t->premul.residence == ncclScalarDevice) memcpy(scalar, t->premul.dev_scalar, es);
    else memcpy(scalar, &t->premul.imm, es);
    return 1;
  }
  if (t->op == SIM_OP_AVG && sim_type_is_float(t->dtype)) {
    sim_inverse(t->dtype, c->nranks, scalar);
    return 1;
  }
  return 0;
}

/* out = parts[0] op parts[1] op ... op parts[n-1] (rank order on every
 * rank), then the integer Avg division. */
static void reduce_all(struct ncclComm *c, const struct sim_task *t, void *out, const char *parts,
                       size_t count) {
  size_t bytes = count * sim_type_size(t->dtype);
  int red = t->op == SIM_OP_AVG || t->op == SIM_OP_PREMULSUM ? SIM_OP_SUM : t->op;
  memcpy(out, parts, bytes);
  for (int r = 1; r < c->nranks; r++) sim_reduce(t->dtype, red, out, parts + (size_t)r * bytes, count);
  if (t->op == SIM_OP_AVG && !sim_type_is_float(t->dtype)) sim_divide(t->dtype, out, count, c->nranks);
}

/* AllReduce, Reduce (to root t->peer) and ReduceScatter. Returns -1 if the
 * communicator was aborted meanwhile. */
static int run_reduction(struct ncclComm *c, const struct sim_task *t, const struct sim_desc *d,
                         struct xop *ops) {
  int n = c->nranks, me = c->rank;
  size_t es = sim_type_size(t->dtype);
  int rs = t->kind == SIM_K_REDUCESCATTER;
  int root = t->kind == SIM_K_REDUCE ? t->peer : -1;
  int gather = root < 0 || root == me;       /* this rank reduces something */
  size_t seg = SIM_SEG_BYTES / es;
  if (seg > t->count) seg = t->count;
  unsigned char scalar[8];
  int scaled = premul_scalar(c, t, scalar);
  /* scaled contributions of one segment: one block per destination for
   * ReduceScatter, one block for the others */
  char *mine = scaled ? malloc((rs ? (size_t)n : 1) * seg * es) : NULL;
  char *parts = gather ? malloc((size_t)n * seg * es) : NULL;
  int rc = 0;
  if ((scaled && !mine) || (gather && !parts)) rc = -1;
  for (size_t off = 0; rc == 0 && off < t->count; off += seg) {
    size_t len = t->count - off < seg ? t->count - off : seg, lb = len * es;
    const char *src[64 + 1];
    const char **srcp = n <= 64 ? src : malloc(sizeof *srcp * (size_t)n);
    if (!srcp) { rc = -1; break; }
    for (int p = 0; p < n; p++) {
      const char *b = (const char *)t->sendbuff + ((rs ? (size_t)p * t->count : 0) + off) * es;
      if (scaled && (rs || p == 0)) sim_scale(t->dtype, mine + (rs ? (size_t)p * lb : 0), b, len, scalar);
      srcp[p] = scaled ? mine + (rs ? (size_t)p * lb : 0) : b;
    }
    int nops = 0;
    for (int p = 0; p < n; p++) {
      if (p == me) continue;
      if (root < 0 || p == root) xop_init(c, &ops[nops++], 1, p, 0, (void *)srcp[p], lb, d);
      if (gather) xop_init(c, &ops[nops++], 0, p, 0, parts + (size_t)p * lb, lb, d);
    }
    if (gather) memcpy(parts + (size_t)me * lb, srcp[me], lb);
    if (progress(c, ops, nops) != 0) rc = -1;
    else if (gather) reduce_all(c, t, (char *)t->recvbuff + off * es, parts, len);
    if (srcp != src) free(srcp);
  }
  free(mine);
  free(parts);
  return rc;
}

static void run_coll(struct ncclComm *c, struct sim_task *t) {
  int n = c->nranks, me = c->rank;
  size_t es = sim_type_size(t->dtype);
  size_t bytes = t->count * es;
  struct sim_desc d;
  memset(&d, 0, sizeof d);
  d.kind = t->kind;
  /* NCCL moves bytes: two ranks that describe the same bytes with
   * different datatypes still match, reductions included (each reduces as
   * its own type). Nor does the reduction change the data movement (NCCL's
   * algorithm, protocol and steps follow the collective and its bytes), so
   * ranks with different operations match too, each reducing with its own. */
  d.dtype = -1;
  d.root = (t->kind == SIM_K_BROADCAST || t->kind == SIM_K_REDUCE) ? t->peer : -1;
  d.count = bytes;

  struct xop *ops = calloc(2 * (size_t)n, sizeof *ops);
  int nops = 0;
  if (!ops) return;
  switch (t->kind) {
  case SIM_K_ALLREDUCE:
  case SIM_K_REDUCE:
  case SIM_K_REDUCESCATTER:
    run_reduction(c, t, &d, ops);
    break;
  case SIM_K_BROADCAST:
    if (me == t->peer) {
      if (t->recvbuff != t->sendbuff) memmove(t->recvbuff, t->sendbuff, bytes);
      for (int p = 0; p < n; p++)
        if (p != me) xop_init(c, &ops[nops++], 1, p, 0, (void *)t->sendbuff, bytes, &d);
    } else {
      xop_init(c, &ops[nops++], 0, t->peer, 0, t->recvbuff, bytes, &d);
    }
    progress(c, ops, nops);
    break;
  case SIM_K_ALLGATHER: {
    char *own = (char *)t->recvbuff + (size_t)me * bytes;
    if (own != (const char *)t->sendbuff) memmove(own, t->sendbuff, bytes);
    for (int p = 0; p < n; p++) {
      if (p == me) continue;
      xop_init(c, &ops[nops++], 1, p, 0, own, bytes, &d);
      xop_init(c, &ops[nops++], 0, p, 0, (char *)t->recvbuff + (size_t)p * bytes, bytes, &d);
    }
    progress(c, ops, nops);
    break;
  }
  default:
    break;
  }
  /* Cost model: what NCCL's ring algorithms move per rank, so that
   * nccl-tests' busbw formulas recover the configured bandwidth:
   * AllReduce 2(n-1)/n S, AllGather/ReduceScatter (n-1)/n of the total,
   * Broadcast/Reduce S. */
  if (n > 1 && !atomic_load(&c->aborted)) {
    double total = (double)bytes * (t->kind == SIM_K_ALLGATHER || t->kind == SIM_K_REDUCESCATTER ? n : 1);
    double f = t->kind == SIM_K_ALLREDUCE ? 2.0 * (n - 1) / n
             : t->kind == SIM_K_ALLGATHER || t->kind == SIM_K_REDUCESCATTER ? (double)(n - 1) / n : 1.0;
    a2asim_model_transfer((size_t)(total * f));
  }
  free(ops);
}

/* ---- point-to-point batch ----------------------------------------------------- */

/* Appends the send/recv operations a p2p-style task decomposes into, in
 * NCCL's order (src/enqueue.cc taskAppend). */
static int add_p2p(struct ncclComm *c, const struct sim_task *t, struct xop *ops, int nops) {
  size_t es = sim_type_size(t->dtype);
  size_t bytes = t->count * es;
  int n = c->nranks;
  switch (t->kind) {
  case SIM_K_SEND:
    xop_init(c, &ops[nops++], 1, t->peer, 1, (void *)t->sendbuff, bytes, NULL);
    break;
  case SIM_K_RECV:
    xop_init(c, &ops[nops++], 0, t->peer, 1, t->recvbuff, bytes, NULL);
    break;
  case SIM_K_ALLTOALL:
    for (int r = 0; r < n; r++) {
      xop_init(c, &ops[nops++], 1, r, 1, (char *)t->sendbuff + (size_t)r * bytes, bytes, NULL);
      xop_init(c, &ops[nops++], 0, r, 1, (char *)t->recvbuff + (size_t)r * bytes, bytes, NULL);
    }
    break;
  case SIM_K_GATHER:
    xop_init(c, &ops[nops++], 1, t->peer, 1, (void *)t->sendbuff, bytes, NULL);
    if (c->rank == t->peer)
      for (int r = 0; r < n; r++)
        xop_init(c, &ops[nops++], 0, r, 1, (char *)t->recvbuff + (size_t)r * bytes, bytes, NULL);
    break;
  case SIM_K_SCATTER:
    if (c->rank == t->peer)
      for (int r = 0; r < n; r++)
        xop_init(c, &ops[nops++], 1, r, 1, (char *)t->sendbuff + (size_t)r * bytes, bytes, NULL);
    xop_init(c, &ops[nops++], 0, t->peer, 1, t->recvbuff, bytes, NULL);
    break;
  }
  return nops;
}

static int is_p2p(int kind) {
  return kind == SIM_K_SEND || kind == SIM_K_RECV || kind == SIM_K_ALLTOALL ||
         kind == SIM_K_GATHER || kind == SIM_K_SCATTER;
}

void sim_task_extent(const struct sim_task *t, size_t *send_bytes, size_t *recv_bytes) {
  size_t b = t->count * sim_type_size(t->dtype), nb = b * (size_t)t->comm->nranks;
  int root = t->comm->rank == t->peer;
  size_t sb = 0, rb = 0;
  switch (t->kind) {
  case SIM_K_SEND: sb = b; break;
  case SIM_K_RECV: rb = b; break;
  case SIM_K_ALLREDUCE: sb = b; rb = b; break;
  case SIM_K_BROADCAST: sb = root ? b : 0; rb = b; break;
  case SIM_K_REDUCE: sb = b; rb = root ? b : 0; break;
  case SIM_K_ALLGATHER: sb = b; rb = nb; break;
  case SIM_K_REDUCESCATTER: sb = nb; rb = b; break;
  case SIM_K_ALLTOALL: sb = nb; rb = nb; break;
  case SIM_K_GATHER: sb = b; rb = root ? nb : 0; break;
  case SIM_K_SCATTER: sb = root ? nb : 0; rb = b; break;
  }
  *send_bytes = sb;
  *recv_bytes = rb;
}

/* ---- bounds -----------------------------------------------------------------
 * An operation whose buffer runs past the end of the allocation it starts
 * in (cudaMalloc, cudaMallocHost/HostAlloc, cudaMallocManaged, ncclMemAlloc
 * or cudaHostRegister memory: the runtime knows its extent) would, on a
 * GPU, read or overwrite whatever follows the allocation, or fault. The
 * simulator never touches memory it does not know to be the buffer's: such
 * a buffer is replaced by a shadow of the full extent for the operation -
 * the known part copied in, the rest zeros - and only the known part of a
 * written buffer is copied back. A WARN names the operation, the buffer
 * and both sizes. Buffers the runtime does not know (plain host memory)
 * are used as given. */
struct shadow {
  char *orig;                  /* the caller's buffer, NULL if not shadowed */
  char *buf;
  size_t avail;                /* bytes of orig inside its allocation */
  int write;
};

static void shadow_buffer(struct ncclComm *c, const struct sim_task *t, const char *which, char **ptr,
                          size_t need, int write, struct shadow *sh) {
  int type, dev;
  uintptr_t base;
  size_t size;
  memset(sh, 0, sizeof *sh);
  if (need == 0 || *ptr == NULL || a2asim_pointer_lookup(*ptr, &type, &dev, &base, &size) != 0) return;
  size_t avail = base + size - (uintptr_t)*ptr;
  if (need <= avail) return;
  sim_warn("[simulator] rank %d of comm %016llx: %s(count %zu) %s buffer %p needs %zu bytes but only %zu "
           "are left in its %zu-byte allocation at %p: the %zu bytes beyond it are %s (a GPU would %s them, "
           "or fault)",
           c->rank, (unsigned long long)c->key, kind_name(t->kind), t->count, which, (void *)*ptr, need, avail,
           size, (void *)base, need - avail, write ? "written to a scratch copy and dropped" : "read as zeros",
           write ? "overwrite whatever follows" : "read whatever follows");
  sh->buf = malloc(need);
  if (!sh->buf) {
    /* Running without the shadow would touch unknown memory. */
    fprintf(stderr, "a2asim NCCL: out of memory for a %zu-byte shadow buffer\n", need);
    abort();
  }
  memcpy(sh->buf, *ptr, avail);
  memset(sh->buf + avail, 0, need - avail);
  sh->orig = *ptr;
  sh->avail = avail;
  sh->write = write;
  *ptr = sh->buf;
}

static void unshadow(struct shadow *sh) {
  if (!sh->orig) return;
  if (sh->write) memcpy(sh->orig, sh->buf, sh->avail);
  free(sh->buf);
}

static void execute_checked(struct ncclComm *c, struct sim_task *tasks, int ntasks) {
  size_t maxops = 0;
  for (int i = 0; i < ntasks; i++) {
    if (!is_p2p(tasks[i].kind)) {
      if (atomic_load(&c->aborted)) return;
      run_coll(c, &tasks[i]);
    } else {
      maxops += tasks[i].kind == SIM_K_SEND || tasks[i].kind == SIM_K_RECV ? 1 : 2 * (size_t)c->nranks + 1;
    }
  }
  if (maxops == 0 || atomic_load(&c->aborted)) return;
  struct xop *ops = calloc(maxops, sizeof *ops);
  if (!ops) return;
  int nops = 0;
  for (int i = 0; i < ntasks; i++)
    if (is_p2p(tasks[i].kind)) nops = add_p2p(c, &tasks[i], ops, nops);
  chain(ops, nops);
  progress(c, ops, nops);
  free(ops);
}

void sim_execute(struct ncclComm *c, const struct sim_task *tasks, int ntasks) {
  /* Works on a copy: buffers may be replaced by shadows, and a captured
   * plan's tasks run again at every graph launch. */
  struct sim_task local[8], *ts = ntasks <= 8 ? local : malloc((size_t)ntasks * sizeof *ts);
  struct shadow shl[16], *sh = ntasks <= 8 ? shl : malloc(2 * (size_t)ntasks * sizeof *sh);
  if (!ts || !sh) {
    if (ts != local) free(ts);
    if (sh != shl) free(sh);
    return;
  }
  memcpy(ts, tasks, (size_t)ntasks * sizeof *ts);
  for (int i = 0; i < ntasks; i++) {
    size_t sb, rb;
    sim_task_extent(&ts[i], &sb, &rb);
    char *send = (char *)ts[i].sendbuff, *recv = ts[i].recvbuff;
    shadow_buffer(c, &ts[i], "send", &send, sb, 0, &sh[2 * i]);
    shadow_buffer(c, &ts[i], "receive", &recv, rb, 1, &sh[2 * i + 1]);
    ts[i].sendbuff = send;
    ts[i].recvbuff = recv;
  }
  execute_checked(c, ts, ntasks);
  for (int i = 0; i < 2 * ntasks; i++) unshadow(&sh[i]);
  if (ts != local) free(ts);
  if (sh != shl) free(sh);
}
