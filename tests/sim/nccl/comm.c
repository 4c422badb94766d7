/* comm.c - communicator lifecycle of the simulator's NCCL.
 *
 * Every creation (InitRank, InitRankConfig, InitRankScalable, InitAll, Split,
 * Shrink) allocates the ncclComm at call time and hands it out at once (as
 * NCCL does), then runs a job: attach the shared segment, claim the rank,
 * wait until all ranks arrived, check for duplicate GPUs. Outside a group a
 * blocking job runs on the calling thread; a non-blocking one
 * (config.blocking = 0) runs on its own thread and the call returns
 * ncclInProgress until ncclCommGetAsyncError reports the outcome. Inside
 * ncclGroupStart/End jobs are deferred to ncclGroupEnd, which runs them on
 * one thread each so that one thread can create all ranks of a communicator.
 *
 * Teardown. A destroyed or aborted communicator is never freed: its struct
 * stays as a tombstone so that a later call with it is reported as
 * ncclInvalidArgument instead of reading freed memory (NCCL would have
 * undefined behaviour there). Its resources (segment mapping, redops,
 * registrations) are released when the last queued stream item referencing
 * it completes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "sim_nccl.h"

ncclResult_t sim_comm_check(const struct ncclComm *comm, const char *opname) {
  if (comm == NULL) {
    sim_warn("%s : comm argument is NULL", opname);
    return ncclInvalidArgument;
  }
  if (comm->start_magic == SIM_COMM_DEAD) {
    sim_warn("%s : comm %p has already been destroyed", opname, (const void *)comm);
    return ncclInvalidArgument;
  }
  if (comm->start_magic != SIM_COMM_LIVE || comm->end_magic != SIM_COMM_LIVE) {
    sim_warn("Error: corrupted comm object detected");
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

ncclResult_t sim_comm_ensure_ready(struct ncclComm *comm, const char *opname) {
  /* Through the exported symbol, as NCCL's ncclCommEnsureReady does: a
   * preloaded shim sees this nested call on every operation and query. */
  ncclResult_t r;
  if (ncclCommGetAsyncError(comm, &r) != ncclSuccess) r = (ncclResult_t)atomic_load(&comm->async);
  if (r == ncclInProgress) {
    sim_warn("%s : Attempt to use communicator before the previous operation returned ncclSuccess", opname);
    return ncclInvalidArgument;
  }
  return r;
}

static void comm_release(struct ncclComm *comm) {
  sim_seg_detach(&comm->seg);
  comm->seg_mapped = 0;
  pthread_mutex_lock(&comm->lock);
  free(comm->redops);
  comm->redops = NULL;
  comm->nredops = 0;
  while (comm->regs) {
    struct sim_reg *r = comm->regs;
    comm->regs = r->next;
    free(r);
  }
  pthread_mutex_unlock(&comm->lock);
}

void sim_comm_ref(struct ncclComm *comm) { atomic_fetch_add(&comm->refs, 1); }

void sim_comm_unref(struct ncclComm *comm) {
  if (atomic_fetch_sub(&comm->refs, 1) == 1) comm_release(comm);
}

/* Waits until every operation posted on comm has executed (or given up
 * after an abort). A hung operation makes this hang, as NCCL's destroy
 * hangs on a hung kernel. */
void sim_comm_wait_idle(struct ncclComm *comm) {
  for (;;) {
    uint32_t v = atomic_load(&comm->executed);
    if (atomic_load(&comm->executed64) >= atomic_load(&comm->posted)) return;
    sim_futex_wait(&comm->executed, v, 100);
  }
}

static struct ncclComm *comm_alloc(int rank, int nranks, int dev, int blocking, uint64_t key) {
  struct ncclComm *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->start_magic = c->end_magic = SIM_COMM_LIVE;
  c->rank = rank;
  c->nranks = nranks;
  c->cuda_dev = dev;
  c->blocking = blocking;
  c->key = key;
  atomic_init(&c->async, ncclInProgress);
  atomic_init(&c->refs, 1);
  pthread_mutex_init(&c->lock, NULL);
  return c;
}

/* Frees a comm that was never handed to the application successfully. */
static void comm_free_unused(struct ncclComm *c) {
  comm_release(c);
  pthread_mutex_destroy(&c->lock);
  free(c);
}

/* Tombstones stay reachable from this list, so that leak checkers (the
 * ASan build) do not report them: they are kept on purpose. */
static pthread_mutex_t tomb_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ncclComm *tombs;

static void comm_tombstone(struct ncclComm *c) {
  c->start_magic = c->end_magic = SIM_COMM_DEAD;
  pthread_mutex_lock(&tomb_lock);
  c->tomb_next = tombs;
  tombs = c;
  pthread_mutex_unlock(&tomb_lock);
}

/* ---- config ------------------------------------------------------------- */
static int env_blocking(void) {
  const char *e = getenv("NCCL_COMM_BLOCKING");
  return e && *e ? atoi(e) != 0 : 1;
}

/* NCCL's parseCommConfig: the caller's struct may be shorter (older header)
 * or longer (newer header) than the 2.30 one; min(size, ours) bytes are
 * read over the defaults, and fields newer than the caller's version keep
 * their defaults. Only blocking and commName change what the simulator
 * does; the other fields are checked as NCCL checks them. */
static ncclResult_t parse_config(const ncclConfig_t *cfg, int *blocking, char *name, size_t namelen) {
  *blocking = env_blocking();
  if (name) name[0] = 0;
  if (cfg == NULL) return ncclSuccess;
  struct sim_config_v23000 c;
  memset(&c, 0, sizeof c);
  c.blocking = c.graphUsageMode = c.graphStreamOrdering = NCCL_CONFIG_UNDEF_INT;
  c.commName = NULL;
  size_t size;
  memcpy(&size, cfg, sizeof size);
  memcpy(&c, cfg, size < sizeof c ? size : sizeof c);
  if (c.magic != NCCL_API_MAGIC) {
    sim_warn("ncclConfig_t argument not initialized via NCCL_CONFIG_INITIALIZER");
    return ncclInvalidArgument;
  }
  if (c.version < 21400) c.blocking = NCCL_CONFIG_UNDEF_INT;
  if (c.version < 22900) c.graphUsageMode = NCCL_CONFIG_UNDEF_INT;
  if (c.version < 23005) c.graphStreamOrdering = NCCL_CONFIG_UNDEF_INT;
  if (c.blocking != NCCL_CONFIG_UNDEF_INT && c.blocking != 0 && c.blocking != 1) {
    sim_warn("Invalid config blocking attribute value %d", c.blocking);
    return ncclInvalidArgument;
  }
  if (c.graphUsageMode != NCCL_CONFIG_UNDEF_INT && (c.graphUsageMode < 0 || c.graphUsageMode > 2)) {
    sim_warn("Invalig config graphUsageMode attribute value %d", c.graphUsageMode);   /* sic, NCCL */
    return ncclInvalidArgument;
  }
  if (c.graphStreamOrdering != NCCL_CONFIG_UNDEF_INT && c.graphStreamOrdering != 0 && c.graphStreamOrdering != 1) {
    sim_warn("Invalid config graphStreamOrdering attribute value %d", c.graphStreamOrdering);
    return ncclInvalidArgument;
  }
  if (c.blocking != NCCL_CONFIG_UNDEF_INT) *blocking = c.blocking;
  if (name && size > offsetof(struct sim_config_v23000, commName) && c.commName)
    snprintf(name, namelen, "%s", c.commName);
  return ncclSuccess;
}

/* ---- the init job ------------------------------------------------------- */
static uint64_t host_hash(void) {
  const char *h = a2asim_hostname();
  return sim_hash(h ? h : "", h ? strlen(h) : 0, SIM_HASH_INIT);
}

ncclResult_t sim_job_init(struct sim_job *job) {
  struct ncclComm *c = job->comm;
  ncclResult_t r = sim_seg_attach(&c->seg, c->key, c->nranks);
  if (r != ncclSuccess) goto fail;
  c->seg_mapped = 1;
  struct sim_seg *seg = &c->seg;
  int32_t zero = 0;
  if (!atomic_compare_exchange_strong(&seg->ranks[c->rank].claimed, &zero, 1)) {
    sim_warn("Bootstrap : rank %d of %d joined twice with the same unique id", c->rank, c->nranks);
    r = ncclInvalidUsage;
    goto fail;
  }
  seg->ranks[c->rank].pid = (int32_t)getpid();
  seg->ranks[c->rank].dev = c->cuda_dev;
  seg->ranks[c->rank].hosthash = host_hash();
  uint32_t now = atomic_fetch_add(&seg->shm->arrived, 1) + 1;
  sim_futex_wake(&seg->shm->arrived);
  /* Everybody has the object mapped: remove its name so that nothing is
   * left behind however the ranks end. */
  if (now == (uint32_t)c->nranks) shm_unlink(seg->name);
  /* Wait for the others: a rank that never comes blocks init forever, as
   * NCCL's bootstrap does. An abort of this comm ends the wait. */
  for (;;) {
    uint32_t v = atomic_load(&seg->shm->arrived);
    if (v >= (uint32_t)c->nranks) break;
    if (atomic_load(&c->aborted)) { r = ncclInvalidUsage; goto fail; }
    sim_futex_wait(&seg->shm->arrived, v, 100);
  }
  for (int i = 0; i < c->nranks; i++) {
    if (i == c->rank) continue;
    if (seg->ranks[i].hosthash == seg->ranks[c->rank].hosthash && seg->ranks[i].dev == c->cuda_dev) {
      /* busId as NCCL prints it; the simulator's bus ids are per device */
      sim_warn("Duplicate GPU detected : rank %d and rank %d both on CUDA device %x", c->rank, i,
               (unsigned)(c->cuda_dev + 1) << 12);
      r = ncclInvalidUsage;
      goto fail;
    }
  }
  if (c->rank == 0) sim_version_banner();
  sim_info("comm %p rank %d nRanks %d cudaDev %d - Init COMPLETE", (void *)c, c->rank, c->nranks, c->cuda_dev);
  atomic_store(&c->async, ncclSuccess);
  return ncclSuccess;
fail:
  atomic_store(&c->async, r);
  return r;
}

/* Runs a creation job now (blocking), on a thread (non-blocking) or defers
 * it to ncclGroupEnd. On a blocking failure outside a group the comm is
 * freed and *out set to NULL, as NCCL does. */
static ncclResult_t submit(struct sim_job *job, ncclComm_t *out) {
  int in_group = sim_group_depth() > 0;
  struct ncclComm *c = job->comm;
  int blocking = job->blocking;
  ncclResult_t r = sim_group_add_job(job);   /* owns job from here on */
  if (!in_group && blocking && r != ncclSuccess && c) {
    comm_free_unused(c);
    if (out) *out = NULL;
  }
  return r;
}

static ncclResult_t init_rank(ncclComm_t *newcomm, int nranks, uint64_t key, int rank,
                              const ncclConfig_t *config, const char *opname) {
  if (newcomm == NULL) {
    sim_warn("%s : newcomm argument is NULL", opname);
    return ncclInvalidArgument;
  }
  if (nranks < 1 || rank < 0 || rank >= nranks) {
    sim_warn("Invalid rank requested : %d/%d", rank, nranks);
    return ncclInvalidArgument;
  }
  int blocking;
  char name[64];
  ncclResult_t r = parse_config(config, &blocking, name, sizeof name);
  if (r != ncclSuccess) return r;
  int dev = a2asim_get_device();
  struct ncclComm *c = comm_alloc(rank, nranks, dev, blocking, key);
  if (!c) return ncclSystemError;
  snprintf(c->comm_name, sizeof c->comm_name, "%s", name);
  struct sim_job *job = calloc(1, sizeof *job);
  if (!job) { comm_free_unused(c); return ncclSystemError; }
  job->fn = sim_job_init;
  job->comm = c;
  job->blocking = blocking;
  *newcomm = c;
  sim_seg_sweep();
  return submit(job, newcomm);
}

static uint64_t id_key(const ncclUniqueId *ids, int n) {
  return sim_hash(ids, sizeof(ncclUniqueId) * (size_t)n, SIM_HASH_INIT);
}

SIM_API(ncclResult_t, ncclCommInitRank, ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank) {
  return init_rank(comm, nranks, id_key(&commId, 1), rank, NULL, "ncclCommInitRank");
}

SIM_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t *comm, int nranks, ncclUniqueId commId,
        int rank, ncclConfig_t *config) {
  return init_rank(comm, nranks, id_key(&commId, 1), rank, config, "ncclCommInitRankConfig");
}

SIM_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t *newcomm, int nranks, int myrank, int nId,
        ncclUniqueId *commIds, ncclConfig_t *config) {
  if (commIds == NULL || nId < 1) {
    sim_warn("ncclCommInitRankScalable : invalid commIds %p / nId %d", (void *)commIds, nId);
    return ncclInvalidArgument;
  }
  return init_rank(newcomm, nranks, id_key(commIds, nId), myrank, config, "ncclCommInitRankScalable");
}

SIM_API(ncclResult_t, ncclCommInitAll, ncclComm_t *comms, int ndev, const int *devlist) {
  if (comms == NULL) {
    sim_warn("CommInitAll : comms argument is NULL");
    return ncclInvalidArgument;
  }
  if (ndev < 0) {
    sim_warn("Invalid device count requested : %d", ndev);
    return ncclInvalidArgument;
  }
  int total = a2asim_device_count();
  if (devlist) {
    for (int i = 0; i < ndev; i++) {
      if (devlist[i] < 0 || devlist[i] >= total) {
        sim_warn("Invalid device %d (totalnDev=%d)", devlist[i], total);
        return ncclInvalidArgument;
      }
      for (int j = 0; j < i; j++)
        if (devlist[j] == devlist[i]) return ncclInvalidUsage;   /* NCCL: no WARN */
    }
  }
  if (ndev == 0) return ncclSuccess;
  ncclUniqueId id;
  ncclResult_t r = ncclGetUniqueId(&id);   /* exported symbol, as NCCL calls it */
  if (r != ncclSuccess) return r;
  uint64_t key = id_key(&id, 1);
  sim_group_start();
  for (int i = 0; i < ndev; i++) {
    struct ncclComm *c = comm_alloc(i, ndev, devlist ? devlist[i] : i, 1, key);
    struct sim_job *job = c ? calloc(1, sizeof *job) : NULL;
    if (!job) {
      free(c);
      sim_group_error(ncclSystemError);
      comms[i] = NULL;
      continue;
    }
    job->fn = sim_job_init;
    job->comm = c;
    job->blocking = 1;
    comms[i] = c;
    sim_group_add_job(job);
  }
  return sim_group_end(0, NULL);
}

/* ---- split and shrink ----------------------------------------------------- */

/* Host-side allgather of three values over the parent's board (see
 * sim_nccl.h), as exchange number `seq` (its ticket, taken when the call
 * was issued: every rank issues the same calls on a communicator in the
 * same order, so ticket s is the same exchange on every rank - NCCL tags
 * its bootstrap messages likewise, so concurrent non-blocking splits of
 * one parent do not mix). Exchanges run in ticket order on each rank. Two
 * boards alternate by sequence parity: a rank can only reach sequence s+2
 * after every rank posted s+1, i.e. after every rank finished reading s.
 * Returns ncclInvalidUsage if comm is aborted. */
static ncclResult_t board_allgather(struct ncclComm *c, uint32_t seq, const int64_t mine[3],
                                    int64_t *all) {
  struct sim_seg *seg = &c->seg;
  while (atomic_load(&c->board_done) != seq - 1) {
    if (atomic_load(&c->aborted)) {
      atomic_store(&c->board_done, seq);
      return ncclInvalidUsage;
    }
    struct timespec ts = {0, 100 * 1000};
    nanosleep(&ts, NULL);
  }
  ncclResult_t r = ncclSuccess;
  struct sim_board_slot *row = seg->board + (seq & 1) * (size_t)c->nranks;
  memcpy(row[c->rank].v, mine, sizeof row[c->rank].v);
  atomic_store(&row[c->rank].seq, seq);
  atomic_fetch_add(&seg->shm->board_bell, 1);
  sim_futex_wake(&seg->shm->board_bell);
  for (int i = 0; i < c->nranks;) {
    uint32_t v = atomic_load(&seg->shm->board_bell);
    if (atomic_load(&row[i].seq) >= seq) { i++; continue; }
    if (atomic_load(&c->aborted)) { r = ncclInvalidUsage; break; }
    sim_futex_wait(&seg->shm->board_bell, v, 100);
  }
  if (r == ncclSuccess)
    for (int i = 0; i < c->nranks; i++) memcpy(all + 3 * i, row[i].v, sizeof row[i].v);
  atomic_store(&c->board_done, seq);
  return r;
}

/* A split dropped before its job ran (its group failed or was only
 * simulated): its ticket still completes in its turn, or every later
 * exchange on the parent would wait for it. When its turn has not come, a
 * detached thread waits for it (holding a reference to c). */
static void *board_skip_thread(void *arg) {
  struct sim_job *j = arg;
  struct ncclComm *c = j->parent;
  while (atomic_load(&c->board_done) != j->board_ticket - 1 && !atomic_load(&c->aborted)) {
    struct timespec ts = {0, 100 * 1000};
    nanosleep(&ts, NULL);
  }
  atomic_store(&c->board_done, j->board_ticket);
  sim_comm_unref(c);
  free(j);
  return NULL;
}

void sim_board_skip(struct ncclComm *c, uint32_t ticket) {
  if (!c || !ticket) return;
  if (atomic_load(&c->board_done) == ticket - 1) {
    atomic_store(&c->board_done, ticket);
    return;
  }
  struct sim_job *j = calloc(1, sizeof *j);
  pthread_t t;
  pthread_attr_t a;
  if (!j) return;
  j->parent = c;
  j->board_ticket = ticket;
  sim_comm_ref(c);
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  if (pthread_create(&t, &a, board_skip_thread, j) != 0) {
    sim_comm_unref(c);
    free(j);
  }
  pthread_attr_destroy(&a);
}

/* Runs on the job thread: exchange (color, key) with the parent's ranks,
 * order the members of my color by (key, parent rank), then rendezvous. */
static ncclResult_t job_split(struct sim_job *job) {
  struct ncclComm *p = job->parent;
  int n = p->nranks;
  int64_t mine[3] = {job->color, job->key, p->rank};
  int64_t *all = calloc((size_t)n * 3, sizeof *all);
  ncclResult_t r = ncclSystemError;
  if (all) r = board_allgather(p, job->board_ticket, mine, all);
  else sim_board_skip(p, job->board_ticket);
  sim_comm_unref(p);
  if (r != ncclSuccess || job->color == NCCL_SPLIT_NOCOLOR) {
    free(all);
    if (job->comm) atomic_store(&job->comm->async, r);
    return r;
  }
  int count = 0, myrank = 0;
  for (int i = 0; i < n; i++) {
    if (all[3 * i] != job->color) continue;
    count++;
    if (all[3 * i + 1] < job->key || (all[3 * i + 1] == job->key && i < p->rank)) myrank++;
  }
  free(all);
  job->comm->rank = myrank;
  job->comm->nranks = count;
  return sim_job_init(job);
}

SIM_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
        ncclConfig_t *config) {
  ncclResult_t r = sim_comm_check(comm, "ncclCommSplit");
  if (r == ncclSuccess) r = sim_comm_ensure_ready(comm, "ncclCommSplit");
  if (r == ncclSuccess && newcomm == NULL) {
    sim_warn("ncclCommSplit : newcomm argument is NULL");
    r = ncclInvalidArgument;
  }
  if (r == ncclSuccess && color < 0 && color != NCCL_SPLIT_NOCOLOR) {
    sim_warn("ncclCommSplit : invalid color %d", color);
    r = ncclInvalidArgument;
  }
  int blocking = comm ? comm->blocking : 1;
  if (r == ncclSuccess && config) r = parse_config(config, &blocking, NULL, 0);
  if (r != ncclSuccess) { sim_group_error(r); return r; }
  uint32_t seq = ++comm->split_seq;
  struct sim_job *job = calloc(1, sizeof *job);
  if (!job) return ncclSystemError;
  job->fn = job_split;
  job->parent = comm;
  job->board_ticket = ++comm->board_seq;
  job->color = color;
  job->key = key;
  job->blocking = blocking;
  if (!blocking) job->busy_parent = comm;
  *newcomm = NULL;   /* until the job ends (sim_job.out) */
  if (color != NCCL_SPLIT_NOCOLOR) {
    uint64_t k[4] = {comm->key, 0x73706c6974ULL /* "split" */, seq, (uint64_t)(int64_t)color};
    job->comm = comm_alloc(0, 1, comm->cuda_dev, blocking, sim_hash(k, sizeof k, SIM_HASH_INIT));
    if (!job->comm) { free(job); return ncclSystemError; }
    job->out = newcomm;
  }
  sim_comm_ref(comm);   /* the parent's segment is used by the job */
  return submit(job, newcomm);
}

SIM_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
        ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags) {
  ncclResult_t r = sim_comm_check(comm, "ncclCommShrink");
  if (r == ncclSuccess) r = sim_comm_ensure_ready(comm, "ncclCommShrink");
  if (r == ncclSuccess && (newcomm == NULL || excludeRanksCount < 0 ||
                           (excludeRanksCount > 0 && excludeRanksList == NULL))) {
    sim_warn("ncclCommShrink : invalid arguments");
    r = ncclInvalidArgument;
  }
  if (r == ncclSuccess && shrinkFlags != NCCL_SHRINK_DEFAULT && shrinkFlags != NCCL_SHRINK_ABORT) {
    sim_warn("ncclCommShrink : invalid shrinkFlags %d", shrinkFlags);
    r = ncclInvalidArgument;
  }
  int blocking = comm ? comm->blocking : 1;
  if (r == ncclSuccess && config) r = parse_config(config, &blocking, NULL, 0);
  if (r != ncclSuccess) { sim_group_error(r); return r; }
  int myrank = 0, count = 0;
  for (int i = 0; i < comm->nranks; i++) {
    int excluded = 0;
    for (int j = 0; j < excludeRanksCount; j++) excluded |= excludeRanksList[j] == i;
    if (excluded && i == comm->rank) {
      sim_warn("ncclCommShrink : rank %d is in its own exclude list", i);
      sim_group_error(ncclInvalidArgument);
      return ncclInvalidArgument;
    }
    if (excluded) continue;
    if (i < comm->rank) myrank++;
    count++;
  }
  if (shrinkFlags == NCCL_SHRINK_ABORT) {
    /* Terminate the parent's outstanding operations first. */
    atomic_store(&comm->aborted, 1);
    sim_comm_wait_idle(comm);
  }
  uint32_t seq = ++comm->shrink_seq;
  uint64_t k[4] = {comm->key, 0x736872696e6bULL /* "shrink" */, seq, 0};
  for (int j = 0; j < excludeRanksCount; j++) k[3] = sim_hash(&excludeRanksList[j], sizeof(int), k[3] + 1);
  struct ncclComm *c = comm_alloc(myrank, count, comm->cuda_dev, blocking, sim_hash(k, sizeof k, SIM_HASH_INIT));
  struct sim_job *job = c ? calloc(1, sizeof *job) : NULL;
  if (!job) { free(c); return ncclSystemError; }
  job->fn = sim_job_init;
  job->comm = c;
  job->blocking = blocking;
  if (!blocking) job->busy_parent = comm;
  *newcomm = NULL;   /* until the job ends (sim_job.out) */
  job->out = newcomm;
  return submit(job, newcomm);
}

/* ---- teardown ------------------------------------------------------------- */
static void wait_init_done(struct ncclComm *c) {
  while (atomic_load(&c->async) == ncclInProgress) {
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
  }
}

/* Finalize waits for the comm's outstanding work and, as NCCL's
 * commDestroySync, until no CUDA graph holds a captured plan of it: a
 * graph that is never destroyed makes finalize (and destroy) hang. */
static void finalize_wait(struct ncclComm *c) {
  sim_comm_wait_graphs(c);
  sim_comm_wait_idle(c);
}

static void *finalize_thread(void *arg) {
  struct ncclComm *c = arg;
  finalize_wait(c);
  atomic_store(&c->async, ncclSuccess);
  sim_comm_unref(c);
  return NULL;
}

SIM_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm) {
  if (comm == NULL) return ncclSuccess;
  ncclResult_t r = sim_comm_check(comm, "ncclCommFinalize");
  if (r == ncclSuccess) r = sim_comm_ensure_ready(comm, "ncclCommFinalize");
  if (r != ncclSuccess) return r;
  if (comm->finalized) {
    sim_warn("ncclCommFinalize : comm %p already finalized", (void *)comm);
    return ncclInvalidArgument;
  }
  comm->finalized = 1;
  if (comm->blocking) {
    finalize_wait(comm);
    return ncclSuccess;
  }
  atomic_store(&comm->async, ncclInProgress);
  sim_comm_ref(comm);
  pthread_t t;
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  if (pthread_create(&t, &a, finalize_thread, comm) != 0) {
    pthread_attr_destroy(&a);
    sim_comm_unref(comm);
    finalize_wait(comm);
    atomic_store(&comm->async, ncclSuccess);
    return ncclSuccess;
  }
  pthread_attr_destroy(&a);
  return ncclInProgress;
}

SIM_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm) {
  if (comm == NULL) return ncclSuccess;
  ncclResult_t r = sim_comm_check(comm, "ncclCommDestroy");
  if (r != ncclSuccess) return r;
  wait_init_done(comm);
  /* Destroy without finalize finalizes: outstanding work completes first,
   * and graphs holding the comm's work must be gone (see finalize_wait). */
  finalize_wait(comm);
  comm_tombstone(comm);
  sim_comm_unref(comm);
  return ncclSuccess;
}

SIM_API(ncclResult_t, ncclCommAbort, ncclComm_t comm) {
  if (comm == NULL) return ncclSuccess;
  ncclResult_t r = sim_comm_check(comm, "ncclCommAbort");
  if (r != ncclSuccess) return r;
  /* Anything still queued or running for this comm gives up within one
   * poll period; peers are not told (no RAS): they stay hung. */
  atomic_store(&comm->aborted, 1);
  wait_init_done(comm);
  comm_tombstone(comm);
  sim_comm_unref(comm);
  return ncclSuccess;
}

SIM_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags) {
  ncclResult_t r = sim_comm_check(comm, "ncclCommRevoke");
  if (r != ncclSuccess) return r;
  if (revokeFlags != NCCL_REVOKE_DEFAULT) {
    sim_warn("ncclCommRevoke : invalid revokeFlags %d", revokeFlags);
    return ncclInvalidArgument;
  }
  r = sim_comm_ensure_ready(comm, "ncclCommRevoke");
  if (r != ncclSuccess) return r;
  /* In-flight operations stop; later enqueues fail with ncclInvalidUsage. */
  atomic_store(&comm->revoked, 1);
  atomic_store(&comm->aborted, 1);
  return ncclSuccess;
}

SIM_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t *asyncError) {
  ncclResult_t r = sim_comm_check(comm, "ncclGetAsyncError");
  if (r != ncclSuccess) return r;
  if (asyncError == NULL) {
    sim_warn("ncclGetAsyncError : asyncError argument is NULL");
    return ncclInvalidArgument;
  }
  *asyncError = (ncclResult_t)atomic_load(&comm->async);
  return ncclSuccess;
}

/* ---- memory suspend / resume (NCCL 2.29.7+, src/mem_manager.cc) --------------------
 * NCCL releases the communicator's dynamic GPU memory on ncclCommSuspend
 * and restores it on ncclCommResume; both are collective (a device
 * synchronization and a bootstrap barrier of all ranks). The simulator's
 * communicators own no GPU memory, so the statistics are 0 bytes; the
 * state, the checks and the barrier are modelled. An operation on a
 * suspended communicator is refused (ncclInvalidUsage): on a GPU its
 * kernel would touch released memory. */
static ncclResult_t suspend_barrier(struct ncclComm *c) {
  sim_comm_wait_idle(c);
  int64_t mine[3] = {0, 0, c->rank}, *all = calloc((size_t)c->nranks * 3, sizeof *all);
  uint32_t ticket = ++c->board_seq;
  ncclResult_t r = ncclSystemError;
  if (all) r = board_allgather(c, ticket, mine, all);
  else sim_board_skip(c, ticket);
  free(all);
  return r;
}

static ncclResult_t suspend_resume(ncclComm_t comm, int suspend, int flags, const char *fn) {
  ncclResult_t r = sim_comm_check(comm, fn);
  if (r == ncclSuccess) r = sim_comm_ensure_ready(comm, fn);
  if (r != ncclSuccess) return r;
  if (suspend && !(flags & NCCL_SUSPEND_MEM)) return ncclSuccess;
  if (atomic_load(&comm->suspended) == suspend) {
    sim_warn(suspend ? "MemManager: Already suspended" : "MemManager: Not in suspended state");
    return ncclInvalidUsage;
  }
  sim_info("%s: rank %d %s", fn, comm->rank, suspend ? "suspending memory" : "resuming all resources");
  r = suspend_barrier(comm);
  if (r == ncclSuccess) atomic_store(&comm->suspended, suspend);
  if (!comm->blocking && r == ncclSuccess) r = (ncclResult_t)atomic_load(&comm->async);
  return r;
}

SIM_API(ncclResult_t, ncclCommSuspend, ncclComm_t comm, int flags) {
  return suspend_resume(comm, 1, flags, "ncclCommSuspend");
}

SIM_API(ncclResult_t, ncclCommResume, ncclComm_t comm) {
  return suspend_resume(comm, 0, NCCL_SUSPEND_MEM, "ncclCommResume");
}

SIM_API(ncclResult_t, ncclCommMemStats, ncclComm_t comm, ncclCommMemStat_t stat, uint64_t *value) {
  ncclResult_t r = sim_comm_check(comm, "ncclCommMemStats");
  if (r == ncclSuccess) r = sim_comm_ensure_ready(comm, "ncclCommMemStats");
  if (r != ncclSuccess) return r;
  if (value == NULL) return ncclInvalidArgument;   /* NCCL: no WARN */
  switch (stat) {
  case ncclStatGpuMemSuspend:
  case ncclStatGpuMemPersist:
  case ncclStatGpuMemTotal:
    *value = 0;
    return ncclSuccess;
  case ncclStatGpuMemSuspended:
    *value = (uint64_t)atomic_load(&comm->suspended);
    return ncclSuccess;
  default:
    return ncclInvalidArgument;
  }
}
