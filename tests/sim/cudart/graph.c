/* graph.c - stream capture and CUDA graphs, simple model.
 *
 * What is modelled: cudaStreamBeginCapture on one stream (the origin)
 * starts a capture sequence (struct sim_capture); every operation issued to
 * a member stream (kernels, copies, sets, host functions, callbacks) is
 * recorded instead of executed, into one list in host issue order (any
 * issue order is a valid topological order of the captured DAG).
 * Fork/join: cudaEventRecord on a member makes the event a capture event
 * (no node unless cudaEventRecordExternal); cudaStreamWaitEvent on it joins
 * a non-capturing stream to the capture (sim_capture_wait), orders a member,
 * and is cudaErrorStreamCaptureMerge from a stream of another capture. A
 * member waiting on a non-capture event gets cudaErrorStreamCaptureIsolation
 * (cudaEventWaitExternal records a wait node instead). Vector clocks over the
 * members track the joins: cudaStreamEndCapture on the origin needs the
 * origin to depend on every member's every node (else
 * cudaErrorStreamCaptureUnjoined), on another member it is
 * cudaErrorStreamCaptureUnmatched; ending takes every member out of the
 * capture; invalidating any member invalidates the capture.
 * cudaStreamEndCapture returns a graph holding the list;
 * cudaGraphInstantiate copies it; cudaGraphLaunch enqueues the recorded
 * operations, in order, on the launch stream (kernel arguments are the bytes
 * captured at capture time, as in CUDA). User objects: reference counted,
 * owned by graphs (cudaGraphRetainUserObject, also on the graph being
 * captured, as PyTorch does) and by the execs instantiated from them; the
 * destructor runs on a thread of its own when the count reaches 0. What is
 * not modelled: graph node APIs (but cudaGraphGetNodes), graph updates,
 * conditional nodes, memory nodes (cudaMallocAsync and cudaFreeAsync inside
 * a capture are refused), internal work enqueued with
 * a2asim_stream_enqueue/_multi inside a capture (refused with
 * cudaErrorStreamCaptureUnsupported; a2asim_stream_enqueue_capturable is
 * captured), and the capture mode's restrictions on other threads.
 *
 * Locks: a stream's mu, then an event's mu, then a capture's mu (never two
 * captures' at once); a capture is freed with its last reference (members,
 * capture events, an ending call).
 *
 * Graph work (a2asim_stream_capture_work, for the simulator's NCCL): a node
 * standing for a persistent plan whose every launch is a new instance. It
 * is an IT_FN item whose fn is graph_work_node and whose arg is the
 * graph_work record; graph_launch turns each copy it queues into an
 * instance (fn = ops->run, arg = ops->launch(plan)), so per-launch state
 * (NCCL's per-launch operation sequence) is made on the launching thread,
 * in launch order.
 */
#include "sim_rt.h"

#include <stdlib.h>
#include <string.h>

#define GRAPH_MAGIC 0x47524150u   /* "GRAP" */
#define EXEC_MAGIC 0x45584543u    /* "EXEC" */

struct uobj_ref { struct sim_uobj *o; unsigned count; };

struct sim_graph {
  unsigned magic;
  sim_item **nodes;
  size_t n, cap;
  /* User-object references the graph (or exec) owns, guarded by uo_mu. */
  pthread_mutex_t uo_mu;
  struct uobj_ref *uo;
  size_t nuo, capuo;
};

/* One capture sequence: the origin stream and every stream joined to it
 * append to one graph, in host issue order (a valid topological order of
 * the captured DAG). Joins are tracked with vector clocks over the members:
 * ops[i] counts the nodes member i issued, vc[i][j] how many of member j's
 * nodes member i's next node depends on (vc[i][i] == ops[i]). A capture
 * event carries a copy of its member's clock; waiting on it merges the
 * clock. End capture requires vc[0][j] >= ops[j] for every member j: the
 * origin depends on every node (cudaErrorStreamCaptureUnjoined else). */
struct sim_capture {
  pthread_mutex_t mu;
  int refs;          /* members + capture events + an ending call */
  int status;        /* Active, Invalidated, or None once ended */
  int mode;
  unsigned long long id;
  sim_graph *graph;  /* NULL once ended */
  int n;
  sim_stream *mem[SIM_CAPTURE_MAX];
  uint64_t ops[SIM_CAPTURE_MAX];
  uint64_t vc[SIM_CAPTURE_MAX][SIM_CAPTURE_MAX];
};

static _Atomic unsigned long long capture_ids = 1;
static void uobj_release(struct sim_uobj *o, unsigned count);
static int graph_retain_uobj(sim_graph *g, struct sim_uobj *o, unsigned count);

sim_item *sim_item_clone(const sim_item *it) {
  sim_item *c = malloc(sizeof *c + it->extra);
  if (!c) return NULL;
  memcpy(c, it, sizeof *c + it->extra);
  c->pooled = false;   /* malloc'd to the item's own size */
  c->next = NULL;
  c->seq = 0;
  c->ndeps = 0;
  c->capdeps = 2;
  c->deps = c->deps_inline;
  if (it->kind == IT_KERNEL && it->u.kern.argv) {
    /* argv points into the item's own allocation: rebase it. */
    size_t np = (size_t)it->u.kern.k->nparams;
    void **argv = (void **)(c + 1);
    for (size_t i = 0; i < np; i++)
      argv[i] = (char *)c + ((const char *)it->u.kern.argv[i] - (const char *)it);
    c->u.kern.argv = argv;
  }
  if (it->kind == IT_COPY && it->u.copy.staged) c->u.copy.src = (const char *)(c + 1);
  if (it->kind == IT_FN && it->u.fn.holder) atomic_fetch_add(&it->u.fn.holder->refs, 1);
  return c;
}

int sim_graph_append(sim_graph *g, sim_item *it) {
  if (g->n == g->cap) {
    size_t cap = g->cap ? g->cap * 2 : 16;
    sim_item **n = realloc(g->nodes, cap * sizeof *n);
    if (!n) return -1;
    g->nodes = n;
    g->cap = cap;
  }
  sim_item *c = sim_item_clone(it);
  if (!c) return -1;
  g->nodes[g->n++] = c;
  return 0;
}

static sim_graph *graph_new(unsigned magic) {
  sim_graph *g = calloc(1, sizeof *g);
  if (g) {
    g->magic = magic;
    pthread_mutex_init(&g->uo_mu, NULL);
  }
  return g;
}

static void graph_free(sim_graph *g) {
  if (!g) return;
  for (size_t i = 0; i < g->n; i++) sim_item_free(g->nodes[i]);
  free(g->nodes);
  /* The graph's (exec's) user-object references go with it. */
  for (size_t i = 0; i < g->nuo; i++) uobj_release(g->uo[i].o, g->uo[i].count);
  free(g->uo);
  pthread_mutex_destroy(&g->uo_mu);
  g->magic = 0;
  free(g);
}

/* ---- capture sequences ---------------------------------------------------------- */

void sim_capture_ref(sim_capture *c) {
  pthread_mutex_lock(&c->mu);
  c->refs++;
  pthread_mutex_unlock(&c->mu);
}

void sim_capture_unref(sim_capture *c) {
  if (!c) return;
  pthread_mutex_lock(&c->mu);
  int last = --c->refs == 0;
  sim_graph *g = last ? c->graph : NULL;
  pthread_mutex_unlock(&c->mu);
  if (!last) return;
  graph_free(g);
  pthread_mutex_destroy(&c->mu);
  free(c);
}

int sim_capture_live(sim_capture *c) {
  pthread_mutex_lock(&c->mu);
  int live = c->status != cudaStreamCaptureStatusNone;
  pthread_mutex_unlock(&c->mu);
  return live;
}

sim_capture *sim_capture_of_locked(sim_stream *s) {
  sim_capture *c = s->cap;
  if (!c) return NULL;
  if (sim_capture_live(c)) return c;
  s->cap = NULL;   /* ended by its origin: s left it */
  sim_capture_unref(c);
  return NULL;
}

int sim_capture_status_locked(sim_stream *s) {
  sim_capture *c = sim_capture_of_locked(s);
  if (!c) return cudaStreamCaptureStatusNone;
  pthread_mutex_lock(&c->mu);
  int st = c->status;
  pthread_mutex_unlock(&c->mu);
  return st;
}

int sim_capture_invalidate_locked(sim_stream *s) {
  sim_capture *c = sim_capture_of_locked(s);
  if (!c) return 0;
  pthread_mutex_lock(&c->mu);
  int was = c->status == cudaStreamCaptureStatusActive;
  if (was) c->status = cudaStreamCaptureStatusInvalidated;
  pthread_mutex_unlock(&c->mu);
  return was;
}

cudaError_t sim_capture_append_locked(sim_stream *s, sim_item *it) {
  sim_capture *c = s->cap;
  cudaError_t e = cudaSuccess;
  pthread_mutex_lock(&c->mu);
  if (c->status == cudaStreamCaptureStatusInvalidated) {
    e = cudaErrorStreamCaptureInvalidated;
  } else if ((it->kind == IT_FN && !it->u.fn.holder) || it->kind == IT_MULTI || it->kind == IT_FREE) {
    c->status = cudaStreamCaptureStatusInvalidated;
    e = cudaErrorStreamCaptureUnsupported;
  } else if (sim_graph_append(c->graph, it) != 0) {
    e = cudaErrorMemoryAllocation;
  } else {
    int i = s->cap_idx;
    c->vc[i][i] = ++c->ops[i];
  }
  pthread_mutex_unlock(&c->mu);
  return e;
}

cudaError_t sim_capture_point_locked(sim_stream *s, sim_capture **cap, uint64_t **vc) {
  sim_capture *c = s->cap;
  uint64_t *v = malloc(sizeof *v * SIM_CAPTURE_MAX);
  if (!v) return cudaErrorMemoryAllocation;
  pthread_mutex_lock(&c->mu);
  if (c->status != cudaStreamCaptureStatusActive) {
    pthread_mutex_unlock(&c->mu);
    free(v);
    return cudaErrorStreamCaptureInvalidated;
  }
  memcpy(v, c->vc[s->cap_idx], sizeof *v * SIM_CAPTURE_MAX);
  c->refs++;
  pthread_mutex_unlock(&c->mu);
  *cap = c;
  *vc = v;
  return cudaSuccess;
}

cudaError_t sim_capture_wait(sim_stream *s, sim_capture *c, const uint64_t *vc) {
  pthread_mutex_lock(&s->mu);
  sim_capture *mine = sim_capture_of_locked(s);
  cudaError_t e = cudaSuccess;
  if (mine && mine != c) {
    /* Waiting, inside one capture, on a point of another would merge two
     * independent capture sequences; on the point of an ended one, it
     * would cross the capture's boundary. */
    int live = sim_capture_live(c);
    pthread_mutex_lock(&mine->mu);
    if (mine->status == cudaStreamCaptureStatusActive) {
      mine->status = cudaStreamCaptureStatusInvalidated;
      e = live ? cudaErrorStreamCaptureMerge : cudaErrorStreamCaptureIsolation;
    } else {
      e = cudaErrorStreamCaptureInvalidated;
    }
    pthread_mutex_unlock(&mine->mu);
    pthread_mutex_unlock(&s->mu);
    return e;
  }
  pthread_mutex_lock(&c->mu);
  if (c->status == cudaStreamCaptureStatusNone) {
    e = cudaErrorCapturedEvent;   /* the capture has ended meanwhile */
  } else if (c->status == cudaStreamCaptureStatusInvalidated) {
    e = cudaErrorStreamCaptureInvalidated;
  } else if (mine) {
    /* A dependency inside the capture: merge the clocks (an edge, no node). */
    int i = s->cap_idx;
    for (int j = 0; j < c->n; j++)
      if (vc[j] > c->vc[i][j]) c->vc[i][j] = vc[j];
  } else if (s->kind == SK_LEGACY) {
    /* The legacy stream cannot capture. */
    c->status = cudaStreamCaptureStatusInvalidated;
    e = cudaErrorStreamCaptureUnsupported;
  } else if (c->n == SIM_CAPTURE_MAX) {
    c->status = cudaStreamCaptureStatusInvalidated;
    e = cudaErrorStreamCaptureUnsupported;
  } else {
    /* Fork: s joins the capture, depending on the point. */
    int i = c->n++;
    c->mem[i] = s;
    c->ops[i] = 0;
    memcpy(c->vc[i], vc, sizeof c->vc[i]);
    c->refs++;
    s->cap = c;
    s->cap_idx = i;
  }
  pthread_mutex_unlock(&c->mu);
  pthread_mutex_unlock(&s->mu);
  return e;
}

static sim_graph *graph_from(const void *h, unsigned magic) {
  sim_graph *g = (sim_graph *)h;
  return (g && g->magic == magic) ? g : NULL;
}

void sim_graphs_after_fork_child(void) {}

/* ---- graph work ---------------------------------------------------------------- */

struct graph_work {
  const struct a2asim_graph_work *ops;
  void *plan;
};

/* The fn of a graph-work node: never queued as is (graph_launch replaces
 * it), so reaching it means a node was queued without a launch; it then
 * runs as one launch of its own. */
static void graph_work_node(void *arg) {
  struct graph_work *w = arg;
  void *inst = w->ops->launch(w->plan);
  if (!inst) return;
  w->ops->launched(w->plan, inst, 0);
  w->ops->run(inst);
}

static void graph_work_release(void *arg) {
  struct graph_work *w = arg;
  w->ops->release(w->plan);
  free(w);
}

int a2asim_stream_capture_state(void *stream, int per_thread, int *status, unsigned long long *id) {
  sim_stream *s;
  cudaError_t e = sim_stream_resolve((cudaStream_t)stream, per_thread, &s);
  if (e) return e;
  pthread_mutex_lock(&s->mu);
  int st = sim_capture_status_locked(s);
  if (status) *status = st;
  if (id) *id = st != cudaStreamCaptureStatusNone ? s->cap->id : 0;
  pthread_mutex_unlock(&s->mu);
  return cudaSuccess;
}

int a2asim_stream_capture_work(void *stream, int per_thread, const struct a2asim_graph_work *ops, void *plan,
                               const char *what) {
  sim_stream *s;
  cudaError_t e = ops ? sim_stream_resolve((cudaStream_t)stream, per_thread, &s) : cudaErrorInvalidValue;
  struct graph_work *w = e ? NULL : malloc(sizeof *w);
  struct sim_fn_holder *h = w ? malloc(sizeof *h) : NULL;
  sim_item *it = h ? sim_item_new(IT_FN, 0) : NULL;
  if (!it) {
    free(h);
    free(w);
    if (ops) ops->release(plan);
    return e ? e : cudaErrorMemoryAllocation;
  }
  w->ops = ops;
  w->plan = plan;
  h->release = graph_work_release;
  h->arg = w;
  atomic_store(&h->refs, 1);
  it->u.fn.fn = graph_work_node;
  it->u.fn.arg = w;
  it->u.fn.holder = h;
  it->what = what;
  pthread_mutex_lock(&s->mu);
  int st = sim_capture_status_locked(s);
  pthread_mutex_unlock(&s->mu);
  if (st != cudaStreamCaptureStatusActive) {
    sim_item_free(it);   /* the only reference: releases the plan */
    return st == cudaStreamCaptureStatusInvalidated ? cudaErrorStreamCaptureInvalidated : cudaErrorIllegalState;
  }
  /* Recorded the way every captured item is (sim_submit's capture path);
   * submitting drops this item's reference, the graph's copy keeps the
   * plan. Only a capture ended by another thread in between would queue
   * the node itself, which then runs as a launch of its own. */
  return sim_submit(s, it);
}

/* Queues one copy of graph node n on s: a graph-work node becomes this
 * launch's instance unless s is capturing (then the node itself is
 * recorded, to be launched with the outer graph). */
static cudaError_t launch_node(sim_stream *s, const sim_item *n) {
  sim_item *c = sim_item_clone(n);
  if (!c) return cudaErrorMemoryAllocation;
  /* An event destroyed since capture turns its node into a no-op. */
  if ((c->kind == IT_RECORD && !sim_event_from_handle((cudaEvent_t)c->u.rec.ev)) ||
      (c->kind == IT_WAIT && !sim_event_from_handle((cudaEvent_t)c->u.wait.ev)))
    c->kind = IT_NOP;
  if (c->kind != IT_FN || c->u.fn.fn != graph_work_node) return sim_submit(s, c);
  pthread_mutex_lock(&s->mu);
  int capturing = sim_capture_of_locked(s) != NULL;
  pthread_mutex_unlock(&s->mu);
  if (capturing) return sim_submit(s, c);
  struct graph_work *w = c->u.fn.arg;
  void *inst = w->ops->launch(w->plan);
  if (!inst) {
    sim_item_free(c);
    return cudaErrorMemoryAllocation;
  }
  c->u.fn.fn = w->ops->run;
  c->u.fn.arg = inst;
  cudaError_t e = sim_submit(s, c);
  w->ops->launched(w->plan, inst, e);
  return e;
}

/* ---- capture ------------------------------------------------------------------- */

static cudaError_t begin_capture(cudaStream_t h, enum cudaStreamCaptureMode mode, int ptds) {
  sim_stream *s;
  cudaError_t e = sim_stream_resolve(h, ptds, &s);
  if (e) return e;
  if (s->kind == SK_LEGACY) return cudaErrorStreamCaptureUnsupported;
  if ((unsigned)mode > (unsigned)cudaStreamCaptureModeRelaxed) return cudaErrorInvalidValue;
  sim_capture *c = calloc(1, sizeof *c);
  sim_graph *g = c ? graph_new(GRAPH_MAGIC) : NULL;
  if (!g) {
    free(c);
    return cudaErrorMemoryAllocation;
  }
  pthread_mutex_init(&c->mu, NULL);
  c->refs = 1;   /* the origin's membership */
  c->status = cudaStreamCaptureStatusActive;
  c->mode = mode;
  c->graph = g;
  c->n = 1;
  c->mem[0] = s;
  pthread_mutex_lock(&s->mu);
  if (sim_capture_of_locked(s)) {
    pthread_mutex_unlock(&s->mu);
    sim_capture_unref(c);
    return cudaErrorIllegalState;
  }
  c->id = atomic_fetch_add(&capture_ids, 1);
  s->cap = c;
  s->cap_idx = 0;
  pthread_mutex_unlock(&s->mu);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
  return sim_ret(begin_capture(stream, mode, 0));
}
SIM_EXPORT cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
  return sim_ret(begin_capture(stream, mode, 1));
}

static cudaError_t end_capture(cudaStream_t h, cudaGraph_t *pGraph, int ptds) {
  if (!pGraph) return cudaErrorInvalidValue;
  sim_stream *s;
  cudaError_t e = sim_stream_resolve(h, ptds, &s);
  if (e) return e;
  pthread_mutex_lock(&s->mu);
  sim_capture *c = sim_capture_of_locked(s);
  if (!c) {
    pthread_mutex_unlock(&s->mu);
    return cudaErrorIllegalState;
  }
  if (s->cap_idx != 0) {
    /* Capture was not begun on this (joined) stream: the sequence is
     * invalidated, and stays open for its origin to end. */
    sim_capture_invalidate_locked(s);
    pthread_mutex_unlock(&s->mu);
    return cudaErrorStreamCaptureUnmatched;
  }
  pthread_mutex_lock(&c->mu);
  int st = c->status;
  if (st == cudaStreamCaptureStatusActive)
    for (int j = 1; j < c->n; j++)
      if (c->vc[0][j] < c->ops[j]) st = -1;   /* member j's work not joined back */
  sim_graph *g = c->graph;
  c->graph = NULL;
  c->status = cudaStreamCaptureStatusNone;   /* every member leaves the capture */
  int n = c->n;
  sim_stream *mem[SIM_CAPTURE_MAX];
  memcpy(mem, c->mem, sizeof mem[0] * (size_t)n);
  pthread_mutex_unlock(&c->mu);
  s->cap = NULL;
  pthread_mutex_unlock(&s->mu);
  /* Joined streams leave now (sim_capture_of_locked would drop them lazily). */
  for (int j = 1; j < n; j++) {
    pthread_mutex_lock(&mem[j]->mu);
    if (mem[j]->cap == c) {
      mem[j]->cap = NULL;
      sim_capture_unref(c);
    }
    pthread_mutex_unlock(&mem[j]->mu);
  }
  sim_capture_unref(c);
  if (st != cudaStreamCaptureStatusActive) {
    graph_free(g);
    *pGraph = NULL;
    return st < 0 ? cudaErrorStreamCaptureUnjoined : cudaErrorStreamCaptureInvalidated;
  }
  *pGraph = (cudaGraph_t)g;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph) {
  return sim_ret(end_capture(stream, pGraph, 0));
}
SIM_EXPORT cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *pGraph) {
  return sim_ret(end_capture(stream, pGraph, 1));
}

static cudaError_t is_capturing(cudaStream_t h, enum cudaStreamCaptureStatus *st,
                                unsigned long long *id, int ptds) {
  if (!st) return cudaErrorInvalidValue;
  sim_stream *s;
  cudaError_t e = sim_stream_resolve(h, ptds, &s);
  if (e) return e;
  pthread_mutex_lock(&s->mu);
  *st = (enum cudaStreamCaptureStatus)sim_capture_status_locked(s);
  if (id) *id = *st != cudaStreamCaptureStatusNone ? s->cap->id : 0;
  pthread_mutex_unlock(&s->mu);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus) {
  return sim_ret(is_capturing(stream, pCaptureStatus, NULL, 0));
}
SIM_EXPORT cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus) {
  return sim_ret(is_capturing(stream, pCaptureStatus, NULL, 1));
}

static cudaError_t capture_info(cudaStream_t stream, enum cudaStreamCaptureStatus *st,
                                unsigned long long *id, cudaGraph_t *graph,
                                const cudaGraphNode_t **deps, const cudaGraphEdgeData **edges,
                                size_t *ndeps, int ptds) {
  if (!st) return cudaErrorInvalidValue;
  sim_stream *s;
  cudaError_t e = sim_stream_resolve(stream, ptds, &s);
  if (e) return e;
  pthread_mutex_lock(&s->mu);
  *st = (enum cudaStreamCaptureStatus)sim_capture_status_locked(s);
  if (id) *id = *st != cudaStreamCaptureStatusNone ? s->cap->id : 0;
  /* The graph being captured (user objects can be retained on it; its
   * node set is not exposed: the dependency set reads empty). */
  if (graph) *graph = *st == cudaStreamCaptureStatusActive ? (cudaGraph_t)s->cap->graph : NULL;
  pthread_mutex_unlock(&s->mu);
  if (deps) *deps = NULL;
  if (edges) *edges = NULL;
  if (ndeps) *ndeps = 0;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, enum cudaStreamCaptureStatus *captureStatus_out,
                                                unsigned long long *id_out, cudaGraph_t *graph_out,
                                                const cudaGraphNode_t **dependencies_out,
                                                const cudaGraphEdgeData **edgeData_out,
                                                size_t *numDependencies_out) {
  return sim_ret(capture_info(stream, captureStatus_out, id_out, graph_out, dependencies_out,
                              edgeData_out, numDependencies_out, 0));
}
SIM_EXPORT cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t stream, enum cudaStreamCaptureStatus *captureStatus_out,
                                                     unsigned long long *id_out, cudaGraph_t *graph_out,
                                                     const cudaGraphNode_t **dependencies_out,
                                                     const cudaGraphEdgeData **edgeData_out,
                                                     size_t *numDependencies_out) {
  return sim_ret(capture_info(stream, captureStatus_out, id_out, graph_out, dependencies_out,
                              edgeData_out, numDependencies_out, 1));
}

SIM_EXPORT cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode) {
  static _Thread_local enum cudaStreamCaptureMode tls_mode = cudaStreamCaptureModeGlobal;
  if (!mode) return sim_ret(cudaErrorInvalidValue);
  enum cudaStreamCaptureMode old = tls_mode;
  tls_mode = *mode;
  *mode = old;
  return cudaSuccess;
}

/* ---- graphs ------------------------------------------------------------------------- */

SIM_EXPORT cudaError_t cudaGraphCreate(cudaGraph_t *pGraph, unsigned int flags) {
  if (!pGraph || flags) return sim_ret(cudaErrorInvalidValue);
  sim_graph *g = graph_new(GRAPH_MAGIC);
  if (!g) return sim_ret(cudaErrorMemoryAllocation);
  *pGraph = (cudaGraph_t)g;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  sim_graph *g = graph_from(graph, GRAPH_MAGIC);
  if (!g) return sim_ret(cudaErrorInvalidValue);
  graph_free(g);
  return cudaSuccess;
}

static cudaError_t instantiate(cudaGraphExec_t *pExec, cudaGraph_t graph, unsigned long long flags) {
  if (!pExec) return cudaErrorInvalidValue;
  sim_graph *g = graph_from(graph, GRAPH_MAGIC);
  if (!g) return cudaErrorInvalidValue;
  /* Flags are accepted and have no effect on the simulator (no device
   * memory nodes, no upload, no device launch, no priorities). */
  const unsigned long long known = cudaGraphInstantiateFlagAutoFreeOnLaunch | cudaGraphInstantiateFlagUpload |
                                   cudaGraphInstantiateFlagDeviceLaunch | cudaGraphInstantiateFlagUseNodePriority;
  if (flags & ~known) return cudaErrorInvalidValue;
  sim_graph *x = graph_new(EXEC_MAGIC);
  if (!x) return cudaErrorMemoryAllocation;
  for (size_t i = 0; i < g->n; i++)
    if (sim_graph_append(x, g->nodes[i]) != 0) { graph_free(x); return cudaErrorMemoryAllocation; }
  /* The exec holds the graph's user-object references until destroyed. */
  pthread_mutex_lock(&g->uo_mu);
  for (size_t i = 0; i < g->nuo; i++)
    if (graph_retain_uobj(x, g->uo[i].o, g->uo[i].count) != 0) {
      pthread_mutex_unlock(&g->uo_mu);
      graph_free(x);
      return cudaErrorMemoryAllocation;
    }
  pthread_mutex_unlock(&g->uo_mu);
  *pExec = (cudaGraphExec_t)x;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags) {
  return sim_ret(instantiate(pGraphExec, graph, flags));
}
SIM_EXPORT cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags) {
  return sim_ret(instantiate(pGraphExec, graph, flags));
}

/* Nodes are the graph's recorded items, in issue order. */
SIM_EXPORT cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *numNodes) {
  sim_graph *g = graph_from(graph, GRAPH_MAGIC);
  if (!g || !numNodes) return sim_ret(cudaErrorInvalidValue);
  if (nodes) {
    for (size_t i = 0; i < *numNodes; i++) nodes[i] = i < g->n ? (cudaGraphNode_t)g->nodes[i] : NULL;
  }
  *numNodes = g->n;
  return cudaSuccess;
}

/* Nothing to upload: graph launches read host memory. */
static cudaError_t graph_upload(cudaGraphExec_t exec, cudaStream_t h, int ptds) {
  sim_init();
  if (!graph_from(exec, EXEC_MAGIC)) return cudaErrorInvalidValue;
  sim_stream *s;
  return sim_stream_resolve(h, ptds, &s);
}
SIM_EXPORT cudaError_t cudaGraphUpload(cudaGraphExec_t graphExec, cudaStream_t stream) {
  return sim_ret(graph_upload(graphExec, stream, 0));
}
SIM_EXPORT cudaError_t cudaGraphUpload_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream) {
  return sim_ret(graph_upload(graphExec, stream, 1));
}

/* ---- user objects ---------------------------------------------------------------- */

#define UOBJ_MAGIC 0x554f424au   /* "UOBJ" */

struct sim_uobj {
  unsigned magic;
  _Atomic unsigned refs;
  void *ptr;
  cudaHostFn_t destroy;
};

static struct sim_uobj *uobj_from(cudaUserObject_t h) {
  struct sim_uobj *o = (struct sim_uobj *)h;
  return (o && o->magic == UOBJ_MAGIC) ? o : NULL;
}

/* Drops count references; the last runs the destructor, at once, on the
 * releasing thread, outside every simulator lock. CUDA runs it
 * asynchronously on a thread of its own (cudaUserObjectNoDestructorSync:
 * no ordering with any API call is promised), which makes running it here
 * one of the schedules it allows; a detached thread of the simulator's own
 * could still be running the application's destructor (PyTorch releases a
 * collective's Work in it) while the process tears down its statics at
 * exit, and crash it. */
static void uobj_release(struct sim_uobj *o, unsigned count) {
  if (atomic_fetch_sub(&o->refs, count) != count) return;
  o->magic = 0;
  o->destroy(o->ptr);
  free(o);
}

/* Adds count references of o owned by g (g->uo_mu held by the caller or g
 * private); the caller has already counted them in o->refs. */
static int graph_retain_uobj(sim_graph *g, struct sim_uobj *o, unsigned count) {
  for (size_t i = 0; i < g->nuo; i++)
    if (g->uo[i].o == o) {
      g->uo[i].count += count;
      atomic_fetch_add(&o->refs, count);
      return 0;
    }
  if (g->nuo == g->capuo) {
    size_t cap = g->capuo ? g->capuo * 2 : 4;
    struct uobj_ref *n = realloc(g->uo, cap * sizeof *n);
    if (!n) return -1;
    g->uo = n;
    g->capuo = cap;
  }
  g->uo[g->nuo].o = o;
  g->uo[g->nuo++].count = count;
  atomic_fetch_add(&o->refs, count);
  return 0;
}

SIM_EXPORT cudaError_t cudaUserObjectCreate(cudaUserObject_t *object_out, void *ptr, cudaHostFn_t destroy,
                                            unsigned int initialRefcount, unsigned int flags) {
  if (!object_out || !destroy || initialRefcount == 0 || flags != cudaUserObjectNoDestructorSync)
    return sim_ret(cudaErrorInvalidValue);
  struct sim_uobj *o = malloc(sizeof *o);
  if (!o) return sim_ret(cudaErrorMemoryAllocation);
  o->magic = UOBJ_MAGIC;
  atomic_store(&o->refs, initialRefcount);
  o->ptr = ptr;
  o->destroy = destroy;
  *object_out = (cudaUserObject_t)o;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaUserObjectRetain(cudaUserObject_t object, unsigned int count) {
  struct sim_uobj *o = uobj_from(object);
  if (!o || count == 0) return sim_ret(cudaErrorInvalidValue);
  atomic_fetch_add(&o->refs, count);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaUserObjectRelease(cudaUserObject_t object, unsigned int count) {
  struct sim_uobj *o = uobj_from(object);
  if (!o || count == 0) return sim_ret(cudaErrorInvalidValue);
  uobj_release(o, count);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaGraphRetainUserObject(cudaGraph_t graph, cudaUserObject_t object, unsigned int count,
                                                 unsigned int flags) {
  sim_graph *g = graph_from(graph, GRAPH_MAGIC);
  struct sim_uobj *o = uobj_from(object);
  if (!g || !o || count == 0 || (flags & ~(unsigned)cudaGraphUserObjectMove)) return sim_ret(cudaErrorInvalidValue);
  pthread_mutex_lock(&g->uo_mu);
  int rc = graph_retain_uobj(g, o, count);
  pthread_mutex_unlock(&g->uo_mu);
  if (rc) return sim_ret(cudaErrorMemoryAllocation);
  /* Move: the caller's references become the graph's. */
  if (flags & cudaGraphUserObjectMove) uobj_release(o, count);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaGraphReleaseUserObject(cudaGraph_t graph, cudaUserObject_t object, unsigned int count) {
  sim_graph *g = graph_from(graph, GRAPH_MAGIC);
  struct sim_uobj *o = uobj_from(object);
  if (!g || !o || count == 0) return sim_ret(cudaErrorInvalidValue);
  pthread_mutex_lock(&g->uo_mu);
  size_t i = 0;
  while (i < g->nuo && g->uo[i].o != o) i++;
  /* Releasing more references than the graph owns is an invalid value. */
  if (i == g->nuo || g->uo[i].count < count) {
    pthread_mutex_unlock(&g->uo_mu);
    return sim_ret(cudaErrorInvalidValue);
  }
  g->uo[i].count -= count;
  if (g->uo[i].count == 0) g->uo[i] = g->uo[--g->nuo];
  pthread_mutex_unlock(&g->uo_mu);
  uobj_release(o, count);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
  sim_graph *x = graph_from(graphExec, EXEC_MAGIC);
  if (!x) return sim_ret(cudaErrorInvalidValue);
  graph_free(x);
  return cudaSuccess;
}

static cudaError_t graph_launch(cudaGraphExec_t exec, cudaStream_t h, int ptds) {
  sim_init();
  sim_graph *x = graph_from(exec, EXEC_MAGIC);
  if (!x) return cudaErrorInvalidValue;
  sim_stream *s;
  cudaError_t e = sim_stream_resolve(h, ptds, &s);
  if (e) return e;
  int st = sim_sticky(s->device);
  if (st) return (cudaError_t)st;
  if (x->n == 0) return sim_submit(s, sim_item_new(IT_NOP, 0));
  for (size_t i = 0; i < x->n; i++) {
    e = launch_node(s, x->nodes[i]);
    if (e) return e;
  }
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream) {
  return sim_ret(graph_launch(graphExec, stream, 0));
}
SIM_EXPORT cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream) {
  return sim_ret(graph_launch(graphExec, stream, 1));
}
