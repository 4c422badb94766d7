/* graph.c - stream capture and CUDA graphs, simple model.
 *
 * What is modelled: cudaStreamBeginCapture on one stream records, in order,
 * every operation issued to that stream (kernels, copies, sets, host
 * functions, callbacks, event records and waits) instead of executing it;
 * cudaStreamEndCapture returns a graph holding that list; cudaGraphInstantiate
 * copies it; cudaGraphLaunch enqueues the recorded operations, in order, on
 * the launch stream (kernel arguments are the bytes captured at capture
 * time, as in CUDA). What is not: multi-stream (fork/join) capture, graph
 * node APIs, graph updates, conditional nodes, memory nodes (cudaMallocAsync
 * and cudaFreeAsync inside a capture are refused), internal work enqueued
 * with a2asim_stream_enqueue/_multi inside a capture (refused with
 * cudaErrorStreamCaptureUnsupported; a2asim_stream_enqueue_capturable is
 * captured), and the capture mode's restrictions on other threads.
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

struct sim_graph {
  unsigned magic;
  sim_item **nodes;
  size_t n, cap;
};

static _Atomic unsigned long long capture_ids = 1;

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
  if (g) g->magic = magic;
  return g;
}

static void graph_free(sim_graph *g) {
  if (!g) return;
  for (size_t i = 0; i < g->n; i++) sim_item_free(g->nodes[i]);
  free(g->nodes);
  g->magic = 0;
  free(g);
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
  if (status) *status = s->capture;
  if (id) *id = s->capture != cudaStreamCaptureStatusNone ? s->cap_id : 0;
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
  int st = s->capture;
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
  int capturing = s->capture != cudaStreamCaptureStatusNone;
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
  sim_graph *g = graph_new(GRAPH_MAGIC);
  if (!g) return cudaErrorMemoryAllocation;
  pthread_mutex_lock(&s->mu);
  if (s->capture != cudaStreamCaptureStatusNone) {
    pthread_mutex_unlock(&s->mu);
    graph_free(g);
    return cudaErrorIllegalState;
  }
  s->capture = cudaStreamCaptureStatusActive;
  s->capture_mode = mode;
  s->cap_graph = g;
  s->cap_id = atomic_fetch_add(&capture_ids, 1);
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
  int st = s->capture;
  sim_graph *g = s->cap_graph;
  if (st != cudaStreamCaptureStatusNone) {
    s->capture = cudaStreamCaptureStatusNone;
    s->cap_graph = NULL;
  }
  pthread_mutex_unlock(&s->mu);
  if (st == cudaStreamCaptureStatusNone) return cudaErrorIllegalState;
  if (st == cudaStreamCaptureStatusInvalidated) {
    graph_free(g);
    *pGraph = NULL;
    return cudaErrorStreamCaptureInvalidated;
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
  *st = (enum cudaStreamCaptureStatus)s->capture;
  if (id) *id = s->capture != cudaStreamCaptureStatusNone ? s->cap_id : 0;
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
  cudaError_t e = is_capturing(stream, st, id, ptds);
  if (e) return e;
  if (graph) *graph = NULL;   /* the captured graph is not exposed mid-capture */
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

static cudaError_t instantiate(cudaGraphExec_t *pExec, cudaGraph_t graph) {
  if (!pExec) return cudaErrorInvalidValue;
  sim_graph *g = graph_from(graph, GRAPH_MAGIC);
  if (!g) return cudaErrorInvalidValue;
  sim_graph *x = graph_new(EXEC_MAGIC);
  if (!x) return cudaErrorMemoryAllocation;
  for (size_t i = 0; i < g->n; i++)
    if (sim_graph_append(x, g->nodes[i]) != 0) { graph_free(x); return cudaErrorMemoryAllocation; }
  *pExec = (cudaGraphExec_t)x;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags) {
  return sim_ret(instantiate(pGraphExec, graph));
}
SIM_EXPORT cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags) {
  return sim_ret(instantiate(pGraphExec, graph));
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
