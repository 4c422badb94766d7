/* a2asim_internal.h - the simulator's internal API between its two
 * libraries: libnccl.so.2 (sim) uses the simulated runtime only through these
 * functions, exported by libcudart.so.13 (sim). They are not CUDA API and the
 * shim never intercepts them.
 *
 * Contract:
 *  - A stream is a FIFO of work items executed in order by a worker thread,
 *    concurrently with other streams and the host. The legacy default stream
 *    (NULL) and cudaStreamPerThread follow CUDA's semantics.
 *  - a2asim_stream_enqueue() appends fn(arg) to the stream as one item,
 *    honouring the same implicit dependencies as a kernel launch (legacy
 *    default stream vs blocking streams). fn runs on the worker thread; it
 *    may block as long as it likes (a blocked item blocks its stream: that is
 *    how a NCCL hang is a real hang). The item is complete when fn returns.
 *  - a2asim_stream_enqueue_multi() enqueues one item on several streams
 *    that starts only when all of those streams reach it, and completes on
 *    all of them when fn returns (used for a NCCL group spanning streams).
 *  - Device numbers are per process, 0..a2asim_device_count()-1.
 * Details of the implementation (tests/sim/cudart, docs/simulator.md):
 *  - fn is called exactly once, on the worker, also after a sticky error
 *    (only user work is skipped then). In enqueue_multi the last stream to
 *    arrive calls fn; duplicate streams are merged; the per-stream parts are
 *    appended atomically, so two multi items on the same streams never cross.
 *  - While a stream is being captured into a CUDA graph, both enqueue calls
 *    return cudaErrorStreamCaptureUnsupported and invalidate the capture.
 *  - None of these functions changes the application's cudaGetLastError().
 *  - a2asim_stream_valid() also answers 1 for NULL, cudaStreamLegacy and
 *    cudaStreamPerThread.
 */
#ifndef A2ASIM_INTERNAL_H
#define A2ASIM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*a2asim_work_fn)(void *arg);

/* Returns a cudaError_t value (0 on success). stream is a cudaStream_t
 * (NULL = legacy default, or per-thread default if per_thread). */
int a2asim_stream_enqueue(void *stream, int per_thread, a2asim_work_fn fn,
                          void *arg, const char *what);
int a2asim_stream_enqueue_multi(void *const *streams, int nstreams,
                                a2asim_work_fn fn, void *arg, const char *what);
/* Device bookkeeping. */
int a2asim_get_device(void);                 /* current device of the thread */
int a2asim_device_count(void);
int a2asim_stream_device(void *stream, int *dev); /* cudaError_t */
int a2asim_stream_valid(void *stream);        /* 1 if a live stream handle */
/* Memory: type 0 unregistered host, 1 pinned host, 2 device, 3 managed;
 * device -1 for host. Returns 0 if p is inside a known allocation and fills
 * base/size. */
int a2asim_pointer_lookup(const void *p, int *type, int *device,
                          uintptr_t *base, size_t *size);
/* Cost model: simulated transfer time for n bytes (sleeps on the calling
 * worker as configured by A2ASIM_* knobs; no-op by default). On a worker
 * the time is charged to the worker's device timeline (docs/simulator.md,
 * "Cost model"). */
void a2asim_model_transfer(size_t bytes);
/* Cost model: the calling worker has just waited in real time for
 * something outside its stream (a peer rank's data): what it charges next
 * starts no earlier than now. No-op on a host thread or with the cost
 * model off. */
void a2asim_model_blocked(void);
/* Cost model across ranks: a2asim_model_time is the calling worker's
 * position on its device timeline (a CLOCK_MONOTONIC instant in ns, never
 * in the future), 0 on a host thread or with the cost model off; a peer
 * that waited for what happened at that time passes it to
 * a2asim_model_advance, so the wait costs the modelled time, not the
 * host's wake-ups. a2asim_model_advance(0) (the other side keeps no
 * timeline) is a2asim_model_blocked(); both are no-ops on a host thread or
 * with the cost model off. */
uint64_t a2asim_model_time(void);
void a2asim_model_advance(uint64_t t_ns);
/* Host identity for the simulated topology ("host" = process group sharing
 * A2ASIM_DEVICES devices). */
const char *a2asim_hostname(void);

/* Added for the simulator's NCCL (requests in /tmp/sim-nccl-requests.md).
 * a2asim_set_device: sets the calling thread's current device without a
 *   cudaSetDevice call (real NCCL does cudaSetDevice(comm->cudaDev) around
 *   its launches, invisibly to the shim); returns a cudaError_t.
 * a2asim_device_alloc/a2asim_device_free: device memory for ncclMemAlloc /
 *   ncclMemFree, tracked like cudaMalloc memory (cudaPointerGetAttributes
 *   answers type device, the given device); return a cudaError_t. */
int a2asim_set_device(int dev);
int a2asim_device_alloc(void **p, size_t size, int device);
int a2asim_device_free(void *p);

/* Added by the runtime (additive): a capturable a2asim_stream_enqueue.
 * Outside a capture it behaves like a2asim_stream_enqueue and then calls
 * release(arg) (if not NULL) after fn has run, before the item counts as
 * complete. While the stream is being
 * captured, the item is recorded into the graph instead: every launch of an
 * instantiated graph calls fn(arg) again, in stream order on the launch
 * stream; all copies share arg, and release(arg) runs once, when the last
 * copy is gone (queued items executed, graph and graph execs destroyed).
 * release may run on a worker or on the thread destroying a graph. On an
 * error return release has already been called. Returns a cudaError_t. */
int a2asim_stream_enqueue_capturable(void *stream, int per_thread, a2asim_work_fn fn,
                                     void *arg, a2asim_work_fn release, const char *what);

/* Added for NCCL work captured into CUDA graphs (implemented in
 * cudart/graph.c; docs/simulator-nccl.md "CUDA graphs").
 *
 * a2asim_stream_capture_state: *status = the stream's
 *   cudaStreamCaptureStatus (None, Active, Invalidated), *id = the capture
 *   id while not None (as cudaStreamGetCaptureInfo), else 0. Returns a
 *   cudaError_t; calls no cuda* function and changes no last error.
 *
 * a2asim_stream_capture_work: records a node into the ACTIVE capture of
 *   stream (cudaErrorStreamCaptureInvalidated if the capture was
 *   invalidated, cudaErrorIllegalState if the stream is not capturing: the
 *   work is never run eagerly). The node stands for a persistent plan:
 *   at every cudaGraphLaunch of an instantiated graph holding it, on the
 *   launching thread and in node order, ops->launch(plan) returns this
 *   launch's instance (NULL: the launch fails with
 *   cudaErrorMemoryAllocation); the instance is queued on the launch stream
 *   in stream order, then ops->launched(plan, inst, err) is called (err: the
 *   cudaError_t of queueing it; on success inst may already have run and
 *   must not be touched; on failure it will never run). The worker calls
 *   ops->run(inst) once per queued instance (it also frees inst). Launched
 *   into a stream that is itself capturing, the node is recorded into that
 *   capture instead (a graph launched inside a capture), and launch is
 *   called when the outer graph is launched. ops->release(plan) runs once,
 *   when the last graph, graph exec and queued instance holding the node
 *   are gone; on an error return it has already run. ops must outlive
 *   every plan. */
struct a2asim_graph_work {
  void *(*launch)(void *plan);
  void (*launched)(void *plan, void *inst, int err);
  a2asim_work_fn run;
  a2asim_work_fn release;
};
int a2asim_stream_capture_state(void *stream, int per_thread, int *status, unsigned long long *id);
int a2asim_stream_capture_work(void *stream, int per_thread, const struct a2asim_graph_work *ops,
                               void *plan, const char *what);

#ifdef __cplusplus
}
#endif
#endif /* A2ASIM_INTERNAL_H */
