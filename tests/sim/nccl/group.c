/* group.c - group semantics and launch of the simulator's NCCL.
 *
 * Like NCCL (src/group.cc), every operation is collected in the calling
 * thread's group; an operation outside ncclGroupStart/End is an implicit
 * group of one. ncclGroupEnd (outermost) first runs the deferred creation
 * jobs (one thread each, joined, or detached when a communicator is
 * non-blocking), then launches the collected operations: ONE stream item per
 * communicator holding all its operations of the group. NCCL launches one
 * kernel (plan) per communicator on the first user stream of the group and
 * makes the other user streams of that communicator join it; the simulator
 * uses a2asim_stream_enqueue_multi for such a set of streams. Items of
 * different communicators are independent (different GPUs in NCCL).
 *
 * Ordering. Each item takes a ticket from its communicator; the worker
 * waits until all earlier tickets of that communicator executed. So the
 * operations of one communicator execute in posting order even across
 * streams (NCCL serialises them on its internal strong stream), while two
 * communicators used in opposite orders by two ranks deadlock, as on GPUs.
 *
 * Errors. An argument error inside a group is returned by the call and
 * remembered (ncclGroupErrCheck); ncclGroupEnd then drops the whole group
 * and returns it.
 *
 * CUDA graphs. A communicator's operations of a group issued to a stream
 * being captured become one persistent plan recorded into the graph
 * instead (see "CUDA graph capture" below); each graph launch posts it
 * again with a new ticket.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sim_nccl.h"

static __thread int g_depth;
static __thread ncclResult_t g_err;
static __thread struct sim_task *g_tasks;
static __thread int g_ntasks, g_taskcap;
/* A group of up to GROUP_INLINE tasks - every collective outside a group,
 * the usual send/recv groups - is collected in the thread's own array and
 * launched with scratch on the stack: no allocation per group, so the
 * application thread's cost of an NCCL call does not depend on the heap's
 * state (the stream workers free what the application thread allocates,
 * which made malloc's cost vary from run to run; see bench/). Larger
 * groups use the heap as before. */
enum { GROUP_INLINE = 16 };
static __thread struct sim_task g_tasks_inline[GROUP_INLINE];

static void tasks_free(struct sim_task *t) {
  if (t != g_tasks_inline) free(t);
}
static __thread struct sim_job **g_jobs;
static __thread int g_njobs, g_jobcap;

int sim_group_depth(void) { return g_depth; }

void sim_group_error(ncclResult_t r) {
  if (g_depth > 0 && r != ncclSuccess && r != ncclInProgress && g_err == ncclSuccess) g_err = r;
}

ncclResult_t sim_group_start(void) {
  g_depth++;
  return ncclSuccess;
}

static void free_job(struct sim_job *j) { free(j); }
/* A job freed without running: a split's board ticket still completes
 * (sim_board_skip), before its parent's reference is given back. */
static void drop_job(struct sim_job *j) {
  if (j->board_ticket) sim_board_skip(j->parent, j->board_ticket);
  free_job(j);
}

/* Runs a job, then publishes a split's or shrink's child where NCCL does
 * (sim_job.out: at the job's end, a release store the application's
 * polling acquires) and gives a non-blocking job's parent the job's result
 * (sim_job.busy_parent). */
static ncclResult_t job_run(struct sim_job *j) {
  ncclResult_t r = j->fn(j);
  if (j->out && j->comm) __atomic_store_n(j->out, j->comm, __ATOMIC_RELEASE);
  if (j->busy_parent) {
    struct ncclComm *p = j->busy_parent;
    int ok = ncclSuccess;
    if (r != ncclSuccess) atomic_compare_exchange_strong(&p->busy_err, &ok, (int)r);
    if (atomic_fetch_sub(&p->busy_jobs, 1) == 1) atomic_store(&p->async, atomic_exchange(&p->busy_err, 0));
  }
  return r;
}

static void *job_thread(void *arg) {
  struct sim_job *j = arg;
  j->result = job_run(j);
  return NULL;
}

static void *job_thread_detached(void *arg) {
  struct sim_job *j = arg;
  j->result = job_run(j);
  free_job(j);
  return NULL;
}

static ncclResult_t spawn_detached(struct sim_job *j) {
  pthread_t t;
  pthread_attr_t a;
  if (j->busy_parent) {
    atomic_fetch_add(&j->busy_parent->busy_jobs, 1);
    atomic_store(&j->busy_parent->async, ncclInProgress);
  }
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  int rc = pthread_create(&t, &a, job_thread_detached, j);
  pthread_attr_destroy(&a);
  if (rc != 0) {
    if (j->comm) atomic_store(&j->comm->async, ncclSystemError);
    if (j->busy_parent && atomic_fetch_sub(&j->busy_parent->busy_jobs, 1) == 1)
      atomic_store(&j->busy_parent->async, ncclSystemError);
    drop_job(j);
    return ncclSystemError;
  }
  return ncclInProgress;
}

ncclResult_t sim_group_add_job(struct sim_job *job) {
  if (g_depth > 0) {
    if (g_njobs == g_jobcap) {
      int cap = g_jobcap ? 2 * g_jobcap : 8;
      struct sim_job **nj = realloc(g_jobs, (size_t)cap * sizeof *nj);
      if (!nj) { sim_group_error(ncclSystemError); drop_job(job); return ncclSystemError; }
      g_jobs = nj;
      g_jobcap = cap;
    }
    g_jobs[g_njobs++] = job;
    return ncclSuccess;
  }
  if (!job->blocking) return spawn_detached(job);
  ncclResult_t r = job_run(job);
  free_job(job);
  return r;
}

/* Runs the group's jobs: all blocking -> one thread each, joined (so that
 * one thread can create every rank of a communicator); any non-blocking ->
 * all detached, and the group returns ncclInProgress. */
static ncclResult_t run_jobs(struct sim_job **jobs, int n) {
  if (n <= 0) return ncclSuccess;
  int nonblocking = 0;
  for (int i = 0; i < n; i++) nonblocking |= !jobs[i]->blocking;
  ncclResult_t r = ncclSuccess;
  if (nonblocking) {
    for (int i = 0; i < n; i++) {
      ncclResult_t s = spawn_detached(jobs[i]);
      if (s != ncclInProgress && r == ncclSuccess) r = s;
    }
    return r == ncclSuccess ? ncclInProgress : r;
  }
  if (n == 1) {
    r = job_run(jobs[0]);
    free_job(jobs[0]);
    return r;
  }
  pthread_t *t = calloc((size_t)n, sizeof *t);
  int *started = calloc((size_t)n, sizeof *started);
  if (!t || !started) {
    free(t);
    free(started);
    for (int i = 0; i < n; i++) drop_job(jobs[i]);
    return ncclSystemError;
  }
  for (int i = 0; i < n; i++) started[i] = pthread_create(&t[i], NULL, job_thread, jobs[i]) == 0;
  for (int i = 0; i < n; i++) {
    if (started[i]) pthread_join(t[i], NULL);
    else jobs[i]->result = job_run(jobs[i]);   /* no thread: best effort */
    if (jobs[i]->result != ncclSuccess && r == ncclSuccess) r = jobs[i]->result;
    free_job(jobs[i]);
  }
  free(t);
  free(started);
  return r;
}

/* ---- task collection ---------------------------------------------------- */

/* NCCL's ncclPlannerSetCapturingGraph: the streams a communicator is given
 * within one group are all uncaptured or all captured by the same graph.
 * Checked against the latest earlier task of the same communicator. */
static ncclResult_t check_capture(const struct sim_task *t) {
  for (int i = g_ntasks - 1; i >= 0; i--) {
    if (g_tasks[i].comm != t->comm) continue;
    if (g_tasks[i].capture == t->capture) return ncclSuccess;
    sim_warn("Streams given to a communicator within a NCCL group must either be all uncaptured or all "
             "captured by the same graph.");
    return ncclInvalidUsage;
  }
  return ncclSuccess;
}

ncclResult_t sim_group_add_task(const struct sim_task *t0) {
  struct sim_task t = *t0;
  int status = 0;
  unsigned long long id = 0;
  /* A stream the runtime does not know is left to the launch to refuse. */
  if (a2asim_stream_capture_state(t.stream, 0, &status, &id) != 0 || status != cudaStreamCaptureStatusActive)
    id = 0;
  t.capture = id;
  sim_group_start();
  ncclResult_t r = check_capture(&t);
  if (r == ncclSuccess && !g_tasks) {
    g_tasks = g_tasks_inline;
    g_taskcap = GROUP_INLINE;
  }
  if (r == ncclSuccess && g_ntasks == g_taskcap) {
    int cap = 2 * g_taskcap;
    struct sim_task *nt = g_tasks == g_tasks_inline ? malloc((size_t)cap * sizeof *nt)
                                                    : realloc(g_tasks, (size_t)cap * sizeof *nt);
    if (nt && g_tasks == g_tasks_inline) memcpy(nt, g_tasks_inline, (size_t)g_ntasks * sizeof *nt);
    if (nt) {
      g_tasks = nt;
      g_taskcap = cap;
    } else {
      r = ncclSystemError;
    }
  }
  if (r != ncclSuccess) {
    sim_group_error(r);
    ncclResult_t e = sim_group_end(0, NULL);
    return e != ncclSuccess && e != ncclInProgress ? e : r;
  }
  g_tasks[g_ntasks++] = t;
  return sim_group_end(0, NULL);
}

/* ---- execution in communicator order -------------------------------------- */

/* Runs tasks as the communicator's operation number ticket: after every
 * earlier ticket executed (or gave up), unless the comm was aborted. */
static void execute_ticket(struct ncclComm *c, uint64_t ticket, const struct sim_task *tasks, int n) {
  for (;;) {
    uint32_t v = atomic_load(&c->executed);
    if (atomic_load(&c->executed64) == ticket) break;
    /* Cost model: the earlier ticket's time is not published; the wait
     * is taken as it happened. */
    if (sim_futex_wait(&c->executed, v, 100)) a2asim_model_blocked();
  }
  if (!atomic_load(&c->aborted)) sim_execute(c, tasks, n);
  atomic_fetch_add(&c->executed64, 1);
  atomic_fetch_add(&c->executed, 1);
  sim_futex_wake(&c->executed);
}

/* One eager stream item: every task of one communicator from one group. */
struct sim_item {
  struct ncclComm *comm;
  uint64_t ticket;
  int ntasks;
  struct sim_task tasks[];
};

static void run_item(void *arg) {
  struct sim_item *it = arg;
  struct ncclComm *c = it->comm;
  execute_ticket(c, it->ticket, it->tasks, it->ntasks);
  sim_comm_unref(c);
  free(it);
}

/* ---- CUDA graph capture -----------------------------------------------------
 * Inside a stream capture, ncclGroupEnd launches nothing: as NCCL's
 * ncclLaunchPrepare makes a persistent plan whose kernel is captured, the
 * group's operations of a communicator become one plan recorded as a graph
 * node (a2asim_stream_capture_work). Every cudaGraphLaunch of a graph
 * holding it takes a new ticket of the communicator on the launching
 * thread (the launch is the host-side posting of the work, in order with
 * eager operations), and the queued instance executes like an eager item:
 * same matching, same hangs. The plan holds a reference on the comm and
 * counts in comm->graph_plans until the last graph holding it is gone. */
struct sim_plan {
  struct ncclComm *comm;
  int ntasks;
  struct sim_task tasks[];
};
struct sim_launch {
  struct sim_plan *plan;
  uint64_t ticket;
};

static void *plan_launch(void *arg) {
  struct sim_plan *p = arg;
  struct sim_launch *l = malloc(sizeof *l);
  if (!l) return NULL;
  l->plan = p;
  /* Ticket and queueing under the comm lock, as for an eager item; the
   * lock is released by plan_launched. */
  pthread_mutex_lock(&p->comm->lock);
  l->ticket = atomic_fetch_add(&p->comm->posted, 1);
  sim_comm_ref(p->comm);
  return l;
}

static void plan_launched(void *arg, void *inst, int err) {
  struct sim_plan *p = arg;
  if (err) atomic_fetch_sub(&p->comm->posted, 1);
  pthread_mutex_unlock(&p->comm->lock);
  if (err) {
    sim_comm_unref(p->comm);
    free(inst);
    sim_warn("Cuda failure %d launching a CUDA graph with NCCL work of comm %p", err, (void *)p->comm);
  }
}

static void plan_run(void *arg) {
  struct sim_launch *l = arg;
  struct ncclComm *c = l->plan->comm;
  execute_ticket(c, l->ticket, l->plan->tasks, l->plan->ntasks);
  sim_comm_unref(c);
  free(l);
}

static void plan_release(void *arg) {
  struct sim_plan *p = arg;
  struct ncclComm *c = p->comm;
  free(p);
  atomic_fetch_sub(&c->graph_plans, 1);
  sim_futex_wake(&c->graph_plans);
  sim_comm_unref(c);
}

static const struct a2asim_graph_work plan_ops = {plan_launch, plan_launched, plan_run, plan_release};

static ncclResult_t capture_comm(struct ncclComm *c, const struct sim_task *tasks, int n, void *const *streams,
                                 int ns) {
  if (ns > 1) {
    /* The simulated runtime captures one stream per graph, so this needs
     * a capture that several streams joined. */
    sim_warn("[simulator] a captured NCCL group of comm %p uses %d streams of one capture: not modelled",
             (void *)c, ns);
    return ncclInvalidUsage;
  }
  struct sim_plan *p = malloc(sizeof *p + (size_t)n * sizeof(struct sim_task));
  if (!p) return ncclSystemError;
  p->comm = c;
  p->ntasks = n;
  memcpy(p->tasks, tasks, (size_t)n * sizeof *tasks);
  sim_comm_ref(c);
  atomic_fetch_add(&c->graph_plans, 1);
  int err = a2asim_stream_capture_work(streams[0], 0, &plan_ops, p, "ncclDevKernel");   /* owns p */
  if (err != 0) {
    sim_warn("Cuda failure %d capturing NCCL work on stream %p", err, streams[0]);
    return ncclUnhandledCudaError;
  }
  return ncclSuccess;
}

void sim_comm_wait_graphs(struct ncclComm *c) {
  for (;;) {
    uint32_t v = atomic_load(&c->graph_plans);
    if (v == 0) return;
    sim_futex_wait(&c->graph_plans, v, 100);
  }
}

/* ---- launch ------------------------------------------------------------------ */

/* NCCL launches its kernel on the last new stream of the group
 * (planner->streams is pushed at the head) after recording an event of the
 * comm's device on each other stream. A stream of another device fails:
 * cudaEventRecord, or cuLaunchKernelEx for the launch stream, returns
 * "invalid resource handle". Called with the comm's device current, so the
 * default streams resolve to it. */
static ncclResult_t check_stream_devices(struct ncclComm *c, void *const *streams, int ns) {
  for (int i = ns - 2; i >= -1; i--) {
    int j = i < 0 ? ns - 1 : i, dev;
    if (a2asim_stream_device(streams[j], &dev) != 0 || dev == c->cuda_dev) continue;
    if (i < 0) sim_warn("Cuda failure 400 'invalid resource handle'");
    else sim_warn("Cuda failure 'invalid resource handle'");
    sim_info("[simulator] stream %p belongs to device %d, comm %p (rank %d) to device %d", streams[j], dev,
             (void *)c, c->rank, c->cuda_dev);
    return ncclUnhandledCudaError;
  }
  return ncclSuccess;
}

static ncclResult_t launch_comm(struct ncclComm *c, const struct sim_task *tasks, int n) {
  void *streams_inline[GROUP_INLINE];
  void **streams = n <= GROUP_INLINE ? streams_inline : malloc((size_t)n * sizeof *streams);
  if (!streams) return ncclSystemError;
  int ns = 0;
  for (int i = 0; i < n; i++) {
    int seen = 0;
    for (int j = 0; j < ns; j++) seen |= streams[j] == tasks[i].stream;
    if (!seen) streams[ns++] = tasks[i].stream;
  }
  /* NCCL launches with cudaSetDevice(comm->cudaDev): a launch on the legacy
   * default stream (NULL) must go to the comm's device, not the caller's. */
  int old = a2asim_get_device();
  if (old != c->cuda_dev) a2asim_set_device(c->cuda_dev);
  ncclResult_t r = check_stream_devices(c, streams, ns);
  if (r == ncclSuccess && tasks[0].capture) {
    r = capture_comm(c, tasks, n, streams, ns);
  } else if (r == ncclSuccess) {
    struct sim_item *it = malloc(sizeof *it + (size_t)n * sizeof(struct sim_task));
    if (!it) {
      r = ncclSystemError;
    } else {
      memcpy(it->tasks, tasks, (size_t)n * sizeof *tasks);
      it->comm = c;
      it->ntasks = n;
      /* Ticket and enqueue under the comm lock: if the enqueue fails the
       * ticket is handed back before anyone else can take the next one. */
      pthread_mutex_lock(&c->lock);
      it->ticket = atomic_fetch_add(&c->posted, 1);
      sim_comm_ref(c);
      int err = ns == 1 ? a2asim_stream_enqueue(streams[0], 0, run_item, it, "ncclDevKernel")
                        : a2asim_stream_enqueue_multi(streams, ns, run_item, it, "ncclDevKernel");
      if (err != 0) atomic_fetch_sub(&c->posted, 1);
      pthread_mutex_unlock(&c->lock);
      if (err != 0) {
        sim_comm_unref(c);
        free(it);
        sim_warn("Cuda failure %d enqueuing NCCL work on stream %p", err, streams[0]);
        r = ncclUnhandledCudaError;
      }
    }
  }
  if (old != c->cuda_dev) a2asim_set_device(old);
  if (streams != streams_inline) free(streams);
  return r;
}

/* NCCL's doLaunches: within a clique (the comms of one communicator that
 * this process drives: here, the same key) none or all are captured. */
static ncclResult_t check_clique_capture(const struct sim_task *tasks, int n) {
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      if (tasks[j].comm->key == tasks[i].comm->key && !tasks[j].capture != !tasks[i].capture) {
        sim_warn("Either none or all communicators in a ncclGroup() can be CUDA graph captured.");
        return ncclInvalidUsage;
      }
  return ncclSuccess;
}

/* NCCL's scheduleP2pTasksToPlan pairs a communicator's sends to itself with
 * its receives from itself, one of each per round, within the group: one
 * left over is "Trying to send to self without a matching recv" (or the
 * reverse) and ncclGroupEnd returns ncclInvalidUsage before anything of the
 * group is launched (never a hang). */
static bool self_p2p(const struct sim_task *t) {
  return (t->kind == SIM_K_SEND || t->kind == SIM_K_RECV) && t->peer == t->comm->rank;
}
static ncclResult_t check_self_p2p(const struct sim_task *tasks, int n) {
  for (int i = 0; i < n; i++) {
    if (!self_p2p(&tasks[i])) continue;
    bool first = true;   /* the communicator's first task to itself */
    for (int j = 0; j < i && first; j++) first = !(self_p2p(&tasks[j]) && tasks[j].comm == tasks[i].comm);
    if (!first) continue;
    long balance = 0;
    for (int j = i; j < n; j++)
      if (self_p2p(&tasks[j]) && tasks[j].comm == tasks[i].comm) balance += tasks[j].kind == SIM_K_SEND ? 1 : -1;
    if (balance) {
      sim_warn(balance > 0 ? "Trying to send to self without a matching recv"
                           : "Trying to recv to self without a matching send");
      return ncclInvalidUsage;
    }
  }
  return ncclSuccess;
}

static float estimate_us(const struct sim_task *t, int n) {
  double us = 0;
  for (int i = 0; i < n; i++) us += 5.0 + (double)(t[i].count * sim_type_size(t[i].dtype)) / 20e3;
  return (float)us;
}

ncclResult_t sim_group_end(int simulate, float *est_us) {
  if (g_depth == 0) {
    sim_warn("ncclGroupEnd: not in a group call.");
    return ncclInvalidUsage;
  }
  if (--g_depth > 0) return ncclSuccess;
  ncclResult_t r = g_err;
  g_err = ncclSuccess;
  struct sim_task *tasks = g_tasks;
  int ntasks = g_ntasks;
  struct sim_job **jobs = g_jobs;
  int njobs = g_njobs;
  g_tasks = NULL; g_ntasks = g_taskcap = 0;
  g_jobs = NULL; g_njobs = g_jobcap = 0;

  if (r != ncclSuccess || simulate) {
    if (simulate && est_us) *est_us = estimate_us(tasks, ntasks);
    for (int i = 0; i < njobs; i++) {
      if (jobs[i]->comm) atomic_store(&jobs[i]->comm->async, r != ncclSuccess ? r : ncclSuccess);
      if (jobs[i]->board_ticket) sim_board_skip(jobs[i]->parent, jobs[i]->board_ticket);
      if (jobs[i]->parent) sim_comm_unref(jobs[i]->parent);
      free_job(jobs[i]);
    }
    free(jobs);
    tasks_free(tasks);
    return r;
  }
  if (njobs) r = run_jobs(jobs, njobs);
  free(jobs);

  /* Like NCCL, a group mixes blocking and non-blocking communicators only
   * at the price of ncclInvalidArgument; a group of non-blocking ones
   * returns ncclInProgress (the simulator has launched by then, so
   * ncclCommGetAsyncError reports ncclSuccess at once). */
  int nonblocking = 0, blocking = 0;
  for (int i = 0; i < ntasks; i++) {
    nonblocking |= !tasks[i].comm->blocking;
    blocking |= tasks[i].comm->blocking;
  }
  if (nonblocking && blocking) {
    sim_warn("Blocking and nonblocking communicators are not allowed in the same group.");
    tasks_free(tasks);
    return ncclInvalidArgument;
  }
  ncclResult_t cr = check_clique_capture(tasks, ntasks);
  if (cr == ncclSuccess) cr = check_self_p2p(tasks, ntasks);
  if (cr != ncclSuccess) {
    tasks_free(tasks);
    return cr;
  }
  /* One item per communicator, communicators in order of first use. */
  int done_inline[GROUP_INLINE];
  struct sim_task batch_inline[GROUP_INLINE];
  bool small = ntasks <= GROUP_INLINE;
  int *done = small ? done_inline : calloc((size_t)ntasks + 1, sizeof *done);
  struct sim_task *batch = small ? batch_inline : malloc(((size_t)ntasks + 1) * sizeof *batch);
  if (!done || !batch) {
    if (!small) { free(done); free(batch); }
    tasks_free(tasks);
    return ncclSystemError;
  }
  if (small) memset(done_inline, 0, sizeof done_inline);
  for (int i = 0; i < ntasks; i++) {
    if (done[i]) continue;
    int nb = 0;
    for (int j = i; j < ntasks; j++)
      if (!done[j] && tasks[j].comm == tasks[i].comm) { batch[nb++] = tasks[j]; done[j] = 1; }
    ncclResult_t s = launch_comm(tasks[i].comm, batch, nb);
    if (s != ncclSuccess && (r == ncclSuccess || r == ncclInProgress)) r = s;
  }
  if (!small) {
    free(done);
    free(batch);
  }
  tasks_free(tasks);
  if (nonblocking && r == ncclSuccess) r = ncclInProgress;
  return r;
}

SIM_API(ncclResult_t, ncclGroupStart, void) { return sim_group_start(); }

SIM_API(ncclResult_t, ncclGroupEnd, void) { return sim_group_end(0, NULL); }

#define SIM_INFO_MAGIC 0x74685283u
SIM_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t *simInfo) {
  if (simInfo && simInfo->magic != SIM_INFO_MAGIC) {
    sim_warn("ncclGroupSimulateEnd : simInfo not initialized with NCCL_SIM_INFO_INITIALIZER");
    sim_group_end(1, NULL);
    return ncclInvalidArgument;
  }
  float us = 0;
  ncclResult_t r = sim_group_end(1, &us);
  if (r == ncclSuccess && simInfo) simInfo->estimatedTime = us;
  return r;
}
