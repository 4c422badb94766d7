/* wrap_cuda.c - the exported wrappers for the CUDA runtime calls the
 * analyzers need: device selection, streams, events, memory, copies and
 * sets, host functions, kernel launches, graph capture/launch and the
 * last-error queries (the WRAP rows of intercept_table.inc).
 *
 * Same contract as wrap_nccl.c. CUDA specifics:
 *  - The per-thread-default-stream twins (_ptsz for stream-ordered calls,
 *    _ptds for the synchronous copies/sets) are separate exported symbols;
 *    their events carry per_thread = 1 so a NULL stream means
 *    cudaStreamPerThread, not the legacy default stream.
 *  - The thread's current device is tracked here from cudaSetDevice (also
 *    on the pass-through path, so a disabled or re-entered call still keeps
 *    it right). Most events use it as is; allocations and NCCL events ask
 *    the runtime until the thread has called cudaSetDevice
 *    (a2a_shim_query_device, under the last-error rule: a failing internal
 *    call must never replace the application's "last error").
 *  - Launch events: u.launch.func is what the entry point received: the
 *    host stub address for cudaLaunchKernel*, the cudaKernel_t handle for
 *    nvcc's __cudaLaunchKernel* (both accepted by cudaFuncGetName /
 *    cudaFuncGetParamInfo). cudaLaunchKernelExC's stream comes from its
 *    cudaLaunchConfig_t.
 *  - cudaStreamGetPriority has no event kind: forwarded without an event.
 *  - The calls that block the host until the GPU is done (stream, event and
 *    device synchronization, synchronous cudaMemcpy) get a Python-aware call
 *    site (a2a_rt_py_site) like NCCL calls: they are where a deadlocked
 *    rank waits, and the deadlock story names them. So do asynchronous
 *    device-to-host copies: into pageable memory they block (torch's
 *    .cpu(), .item()), and they are rare next to launches. Other CUDA calls
 *    keep the native return address (no per-call Python work on launches).
 */
#include <string.h>

#include "intercept.h"

/* A blocking call's site: the Python line when Python called it. */
#define A2A_BLOCKING_SITE(ev) ((ev).callsite = a2a_rt_py_site((ev).callsite))

/* ------------------------------------------------------------------ */
/* Current device */

/* The thread's current device: in the runtime's thread-local object
 * (a2a_rt_thread), beside what every wrapper reads with it. */
#define tls_device a2a_rt_t.device
#define tls_device_set a2a_rt_t.device_set

int a2a_shim_query_device_slow(void)
{
  int d;
  if (tls_device_set || !A2A_FOUND(cudaGetDevice) ||
      A2A_REAL(cudaPeekAtLastError)() != cudaSuccess)
    return tls_device;
  if (A2A_REAL(cudaGetDevice)(&d) != cudaSuccess) {
    (void)A2A_REAL(cudaGetLastError)(); /* the error our query left */
    return tls_device;
  }
  return d;
}

A2A_PUBLIC cudaError_t cudaSetDevice(int device)
{
  A2A_ERRNO_SAVE();
  if (!a2a_rt_enter()) {
    A2A_ERRNO = a2a_errno_;
    cudaError_t r = A2A_REAL(cudaSetDevice)(device);
    if (r == cudaSuccess) {
      tls_device = device;
      tls_device_set = true;
    }
    return r;
  }
  A2A_EVENT(ev, A2A_EV_SET_DEVICE, "cudaSetDevice");
  ev.u.dev.device = device;
  A2A_PRE(ev);
  cudaError_t r = A2A_REAL(cudaSetDevice)(device);
  A2A_POST_BEGIN(ev, r);
  if (r == cudaSuccess) {
    tls_device = device;
    tls_device_set = true;
  }
  A2A_POST_END(ev);
  return r;
}

/* The most common shape: an event that only names a stream (or nothing). */
#define A2A_STREAM_WRAP(name, evkind, per_thread_, stream_, ...)              \
  {                                                                           \
    A2A_PASS_THROUGH_UNLESS_WANTED((evkind), name, __VA_ARGS__);              \
    A2A_EVENT(ev, (evkind), #name);                                           \
    ev.stream = (void *)(stream_);                                            \
    ev.per_thread = (per_thread_);                                            \
    if ((evkind) == A2A_EV_STREAM_SYNC) A2A_BLOCKING_SITE(ev);                \
    A2A_PRE(ev);                                                              \
    cudaError_t r = A2A_REAL(name)(__VA_ARGS__);                              \
    A2A_POST_BEGIN(ev, r);                                                    \
    A2A_POST_END(ev);                                                         \
    return r;                                                                 \
  }

A2A_PUBLIC cudaError_t cudaDeviceSynchronize(void)
{
  A2A_PASS_THROUGH_UNLESS_ENTERED(cudaDeviceSynchronize);
  A2A_EVENT(ev, A2A_EV_DEVICE_SYNC, "cudaDeviceSynchronize");
  A2A_BLOCKING_SITE(ev);
  A2A_PRE(ev);
  cudaError_t r = A2A_REAL(cudaDeviceSynchronize)();
  A2A_POST_BEGIN(ev, r);
  A2A_POST_END(ev);
  return r;
}

/* ------------------------------------------------------------------ */
/* Streams */

#define A2A_STREAM_CREATE_WRAP(name, flags_, prio_, ...)                      \
  {                                                                           \
    A2A_PASS_THROUGH_UNLESS_ENTERED(name, __VA_ARGS__);                       \
    A2A_EVENT(ev, A2A_EV_STREAM_CREATE, #name);                               \
    ev.u.stream_create.flags = (flags_);                                      \
    ev.u.stream_create.priority = (prio_);                                    \
    A2A_PRE(ev);                                                              \
    cudaError_t r = A2A_REAL(name)(__VA_ARGS__);                              \
    A2A_POST_BEGIN(ev, r);                                                    \
    ev.stream = (r == cudaSuccess && pStream) ? (void *)*pStream : NULL;      \
    A2A_POST_END(ev);                                                         \
    return r;                                                                 \
  }

A2A_PUBLIC cudaError_t cudaStreamCreate(cudaStream_t *pStream)
    A2A_STREAM_CREATE_WRAP(cudaStreamCreate, 0, 0, pStream)
A2A_PUBLIC cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
    A2A_STREAM_CREATE_WRAP(cudaStreamCreateWithFlags, flags, 0, pStream, flags)
A2A_PUBLIC cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags,
                                                    int priority)
    A2A_STREAM_CREATE_WRAP(cudaStreamCreateWithPriority, flags, priority, pStream, flags, priority)

A2A_PUBLIC cudaError_t cudaStreamDestroy(cudaStream_t stream)
    A2A_STREAM_WRAP(cudaStreamDestroy, A2A_EV_STREAM_DESTROY, 0, stream, stream)

/* The polling queries (cudaStreamQuery here, cudaEventQuery below), which
 * nccl-tests' wait loop and PyTorch's work.is_completed() and watchdog
 * repeat per round, are hot wrappers like the launches: an event of kind
 * `evkind` made by A2A_EVENT_HOT, dispatched with a2a_dispatch_hot (the
 * kind and phase constant), forwarded without an event while no analyzer
 * handles the kind (A2A_PASS_THROUGH_UNLESS_WANTED), and without reading
 * the clock: t_ns is 0 at both phases (a2a_event.h). Exact: no analyzer
 * handles their PRE (only the activity store sees it: thread, seq and the
 * kind); their POST is read by stream_hb (result, stream, per_thread,
 * thread, device; u.event.event), group_local (the same, and the call
 * site and api in a report) and xrank (result, stream or u.event.event,
 * thread, seq, and the call site and the time when a not-ready query
 * starts a polling episode - the time it then asks a2a_hostsvc->now_ns
 * for, as for a blocking asynchronous copy). A stream query has no union
 * member; an event query fills u.event (event2 NULL and flags 0, as the
 * zeroed event had them). `fill` sets the kind's fields. */
#define A2A_POLL_QUERY_WRAP(name, evkind, fill, ...)                          \
  {                                                                           \
    A2A_PASS_THROUGH_UNLESS_WANTED((evkind), name, __VA_ARGS__);              \
    A2A_EVENT_HOT(ev, (evkind), #name);                                       \
    fill;                                                                     \
    A2A_PRE_HOT(ev, (evkind), 0);                                             \
    cudaError_t r = A2A_REAL(name)(__VA_ARGS__);                              \
    A2A_POST_BEGIN_HOT(ev, r);                                                \
    A2A_POST_END_HOT(ev, (evkind));                                           \
    return r;                                                                 \
  }
#define A2A_STREAM_QUERY_FILL(per_thread_)                                    \
  (ev.stream = (void *)stream, ev.per_thread = (per_thread_))

A2A_PUBLIC cudaError_t cudaStreamQuery(cudaStream_t stream)
    A2A_POLL_QUERY_WRAP(cudaStreamQuery, A2A_EV_STREAM_QUERY, A2A_STREAM_QUERY_FILL(0), stream)
A2A_PUBLIC cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream)
    A2A_POLL_QUERY_WRAP(cudaStreamQuery_ptsz, A2A_EV_STREAM_QUERY, A2A_STREAM_QUERY_FILL(1),
                        stream)
A2A_PUBLIC cudaError_t cudaStreamSynchronize(cudaStream_t stream)
    A2A_STREAM_WRAP(cudaStreamSynchronize, A2A_EV_STREAM_SYNC, 0, stream, stream)
A2A_PUBLIC cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream)
    A2A_STREAM_WRAP(cudaStreamSynchronize_ptsz, A2A_EV_STREAM_SYNC, 1, stream, stream)

/* No event kind: the depth guard is still entered so that anything the
 * runtime does inside is not analyzed twice. */
#define A2A_NO_EVENT_WRAP(name, ...)                                          \
  {                                                                           \
    A2A_PASS_THROUGH_UNLESS_ENTERED(name, __VA_ARGS__);                       \
    A2A_ERRNO = a2a_errno_;                                                   \
    cudaError_t r = A2A_REAL(name)(__VA_ARGS__);                              \
    a2a_errno_ = A2A_ERRNO;                                                   \
    a2a_rt_leave();                                                           \
    A2A_ERRNO = a2a_errno_;                                                   \
    return r;                                                                 \
  }

A2A_PUBLIC cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int *priority)
    A2A_NO_EVENT_WRAP(cudaStreamGetPriority, hStream, priority)
A2A_PUBLIC cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t hStream, int *priority)
    A2A_NO_EVENT_WRAP(cudaStreamGetPriority_ptsz, hStream, priority)

#define A2A_WAIT_EVENT_WRAP(name, per_thread_)                                \
  {                                                                           \
    A2A_PASS_THROUGH_UNLESS_WANTED(A2A_EV_STREAM_WAIT_EVENT, name, stream, event, flags); \
    A2A_EVENT_HOT(ev, A2A_EV_STREAM_WAIT_EVENT, #name);                       \
    ev.stream = (void *)stream;                                               \
    ev.per_thread = (per_thread_);                                            \
    ev.u.event.event = (void *)event;                                         \
    ev.u.event.event2 = NULL;                                                 \
    ev.u.event.flags = flags;                                                 \
    A2A_PRE_HOT(ev, A2A_EV_STREAM_WAIT_EVENT, 0);                             \
    cudaError_t r = A2A_REAL(name)(stream, event, flags);                     \
    A2A_POST_BEGIN_HOT(ev, r);                                                \
    A2A_POST_END_HOT(ev, A2A_EV_STREAM_WAIT_EVENT);                           \
    return r;                                                                 \
  }

A2A_PUBLIC cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
    A2A_WAIT_EVENT_WRAP(cudaStreamWaitEvent, 0)
A2A_PUBLIC cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event,
                                                unsigned int flags)
    A2A_WAIT_EVENT_WRAP(cudaStreamWaitEvent_ptsz, 1)

/* ------------------------------------------------------------------ */
/* Events */

#define A2A_EVENT_CREATE_WRAP(name, flags_, ...)                              \
  {                                                                           \
    A2A_PASS_THROUGH_UNLESS_ENTERED(name, __VA_ARGS__);                       \
    A2A_EVENT(ev, A2A_EV_EVENT_CREATE, #name);                                \
    ev.u.event.flags = (flags_);                                              \
    A2A_PRE(ev);                                                              \
    cudaError_t r = A2A_REAL(name)(__VA_ARGS__);                              \
    A2A_POST_BEGIN(ev, r);                                                    \
    ev.u.event.event = (r == cudaSuccess && event) ? (void *)*event : NULL;   \
    A2A_POST_END(ev);                                                         \
    return r;                                                                 \
  }

A2A_PUBLIC cudaError_t cudaEventCreate(cudaEvent_t *event)
    A2A_EVENT_CREATE_WRAP(cudaEventCreate, 0, event)
A2A_PUBLIC cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
    A2A_EVENT_CREATE_WRAP(cudaEventCreateWithFlags, flags, event, flags)

#define A2A_EVENT_RECORD_WRAP(name, per_thread_, flags_, ...)                 \
  {                                                                           \
    A2A_PASS_THROUGH_UNLESS_WANTED(A2A_EV_EVENT_RECORD, name, __VA_ARGS__);   \
    A2A_EVENT_HOT(ev, A2A_EV_EVENT_RECORD, #name);                            \
    ev.stream = (void *)stream;                                               \
    ev.per_thread = (per_thread_);                                            \
    ev.u.event.event = (void *)event;                                         \
    ev.u.event.event2 = NULL;                                                 \
    ev.u.event.flags = (flags_);                                              \
    A2A_PRE_HOT(ev, A2A_EV_EVENT_RECORD, 0);                                  \
    cudaError_t r = A2A_REAL(name)(__VA_ARGS__);                              \
    A2A_POST_BEGIN_HOT(ev, r);                                                \
    A2A_POST_END_HOT(ev, A2A_EV_EVENT_RECORD);                                \
    return r;                                                                 \
  }

A2A_PUBLIC cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
    A2A_EVENT_RECORD_WRAP(cudaEventRecord, 0, 0, event, stream)
A2A_PUBLIC cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream)
    A2A_EVENT_RECORD_WRAP(cudaEventRecord_ptsz, 1, 0, event, stream)
A2A_PUBLIC cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream,
                                                unsigned int flags)
    A2A_EVENT_RECORD_WRAP(cudaEventRecordWithFlags, 0, flags, event, stream, flags)
A2A_PUBLIC cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream,
                                                     unsigned int flags)
    A2A_EVENT_RECORD_WRAP(cudaEventRecordWithFlags_ptsz, 1, flags, event, stream, flags)

#define A2A_EVENT_ONLY_WRAP(name, evkind)                                     \
  {                                                                           \
    A2A_PASS_THROUGH_UNLESS_WANTED((evkind), name, event);                    \
    A2A_EVENT(ev, (evkind), #name);                                           \
    ev.u.event.event = (void *)event;                                         \
    if ((evkind) == A2A_EV_EVENT_SYNC) A2A_BLOCKING_SITE(ev);                 \
    A2A_PRE(ev);                                                              \
    cudaError_t r = A2A_REAL(name)(event);                                    \
    A2A_POST_BEGIN(ev, r);                                                    \
    A2A_POST_END(ev);                                                         \
    return r;                                                                 \
  }

/* A2A_POLL_QUERY_WRAP: above, with cudaStreamQuery. */
A2A_PUBLIC cudaError_t cudaEventQuery(cudaEvent_t event)
    A2A_POLL_QUERY_WRAP(cudaEventQuery, A2A_EV_EVENT_QUERY,
                        (ev.u.event.event = (void *)event, ev.u.event.event2 = NULL,
                         ev.u.event.flags = 0),
                        event)
A2A_PUBLIC cudaError_t cudaEventSynchronize(cudaEvent_t event)
    A2A_EVENT_ONLY_WRAP(cudaEventSynchronize, A2A_EV_EVENT_SYNC)
A2A_PUBLIC cudaError_t cudaEventDestroy(cudaEvent_t event)
    A2A_EVENT_ONLY_WRAP(cudaEventDestroy, A2A_EV_EVENT_DESTROY)

A2A_PUBLIC cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
  A2A_PASS_THROUGH_UNLESS_ENTERED(cudaEventElapsedTime, ms, start, end);
  A2A_EVENT(ev, A2A_EV_EVENT_ELAPSED, "cudaEventElapsedTime");
  ev.u.event.event = (void *)start;
  ev.u.event.event2 = (void *)end;
  A2A_PRE(ev);
  cudaError_t r = A2A_REAL(cudaEventElapsedTime)(ms, start, end);
  A2A_POST_BEGIN(ev, r);
  A2A_POST_END(ev);
  return r;
}

/* ------------------------------------------------------------------ */
/* Memory */

#define A2A_ALLOC_WRAP(name, memkind, size_, async_, per_thread_, stream_, pp, ...) \
  {                                                                           \
    A2A_PASS_THROUGH_UNLESS_ENTERED(name, __VA_ARGS__);                       \
    A2A_EVENT(ev, A2A_EV_ALLOC, #name);                                       \
    ev.device = a2a_shim_query_device();                                      \
    ev.stream = (void *)(stream_);                                            \
    ev.per_thread = (per_thread_);                                            \
    ev.u.mem.mem = (memkind);                                                 \
    ev.u.mem.size = (size_);                                                  \
    ev.u.mem.async = (async_);                                                \
    A2A_PRE(ev);                                                              \
    cudaError_t r = A2A_REAL(name)(__VA_ARGS__);                              \
    A2A_POST_BEGIN(ev, r);                                                    \
    ev.u.mem.ptr = (r == cudaSuccess && (pp)) ? *(pp) : NULL;                 \
    A2A_POST_END(ev);                                                         \
    return r;                                                                 \
  }

#define A2A_FREE_WRAP(name, memkind, async_, per_thread_, stream_, ptr_, ...) \
  {                                                                           \
    A2A_PASS_THROUGH_UNLESS_ENTERED(name, __VA_ARGS__);                       \
    A2A_EVENT(ev, A2A_EV_FREE, #name);                                        \
    ev.stream = (void *)(stream_);                                            \
    ev.per_thread = (per_thread_);                                            \
    ev.u.mem.mem = (memkind);                                                 \
    ev.u.mem.ptr = (ptr_);                                                    \
    ev.u.mem.async = (async_);                                                \
    A2A_PRE(ev);                                                              \
    cudaError_t r = A2A_REAL(name)(__VA_ARGS__);                              \
    A2A_POST_BEGIN(ev, r);                                                    \
    A2A_POST_END(ev);                                                         \
    return r;                                                                 \
  }

A2A_PUBLIC cudaError_t cudaMalloc(void **devPtr, size_t size)
    A2A_ALLOC_WRAP(cudaMalloc, A2A_MEM_DEVICE, size, 0, 0, NULL, devPtr, devPtr, size)
A2A_PUBLIC cudaError_t cudaFree(void *devPtr)
    A2A_FREE_WRAP(cudaFree, A2A_MEM_DEVICE, 0, 0, NULL, devPtr, devPtr)
A2A_PUBLIC cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
    A2A_ALLOC_WRAP(cudaMallocAsync, A2A_MEM_DEVICE_ASYNC, size, 1, 0, hStream, devPtr, devPtr, size,
                   hStream)
A2A_PUBLIC cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream)
    A2A_FREE_WRAP(cudaFreeAsync, A2A_MEM_DEVICE_ASYNC, 1, 0, hStream, devPtr, devPtr, hStream)
/* The _ptsz twins of the stream-ordered allocator: per_thread set. */
A2A_PUBLIC cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream)
    A2A_ALLOC_WRAP(cudaMallocAsync_ptsz, A2A_MEM_DEVICE_ASYNC, size, 1, 1, hStream, devPtr, devPtr,
                   size, hStream)
A2A_PUBLIC cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream)
    A2A_FREE_WRAP(cudaFreeAsync_ptsz, A2A_MEM_DEVICE_ASYNC, 1, 1, hStream, devPtr, devPtr, hStream)
A2A_PUBLIC cudaError_t cudaMallocHost(void **ptr, size_t size)
    A2A_ALLOC_WRAP(cudaMallocHost, A2A_MEM_HOST_PINNED, size, 0, 0, NULL, ptr, ptr, size)
A2A_PUBLIC cudaError_t cudaFreeHost(void *ptr)
    A2A_FREE_WRAP(cudaFreeHost, A2A_MEM_HOST_PINNED, 0, 0, NULL, ptr, ptr)
A2A_PUBLIC cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
    A2A_ALLOC_WRAP(cudaHostAlloc, A2A_MEM_HOST_PINNED, size, 0, 0, NULL, pHost, pHost, size, flags)
A2A_PUBLIC cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
    A2A_ALLOC_WRAP(cudaMallocManaged, A2A_MEM_MANAGED, size, 0, 0, NULL, devPtr, devPtr, size, flags)

/* PRE carries width*height (the pitch is not known yet); POST the real
 * segment size pitch*height. */
A2A_PUBLIC cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
  A2A_PASS_THROUGH_UNLESS_ENTERED(cudaMallocPitch, devPtr, pitch, width, height);
  A2A_EVENT(ev, A2A_EV_ALLOC, "cudaMallocPitch");
  ev.device = a2a_shim_query_device();
  ev.u.mem.mem = A2A_MEM_DEVICE;
  ev.u.mem.size = width * height;
  A2A_PRE(ev);
  cudaError_t r = A2A_REAL(cudaMallocPitch)(devPtr, pitch, width, height);
  A2A_POST_BEGIN(ev, r);
  if (r == cudaSuccess && devPtr && pitch) {
    ev.u.mem.ptr = *devPtr;
    ev.u.mem.size = *pitch * height;
  }
  A2A_POST_END(ev);
  return r;
}

/* ------------------------------------------------------------------ */
/* Copies and sets */

/* Extent in bytes of a pitched 2D region: pitch*(height-1)+width. */
static inline size_t extent2d(size_t pitch, size_t width, size_t height)
{
  return height ? pitch * (height - 1) + width : 0;
}

static inline size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }

/* 1D copy: bytes x 1, pitches equal to bytes. */
#define A2A_COPY1D_FIELDS(ev, dst_, src_, count_, kind_, async_)              \
  do {                                                                        \
    (ev).u.copy.dst = (dst_);                                                 \
    (ev).u.copy.src = (src_);                                                 \
    (ev).u.copy.bytes = (ev).u.copy.width = (count_);                         \
    (ev).u.copy.height = 1;                                                   \
    (ev).u.copy.dpitch = (ev).u.copy.spitch = (count_);                       \
    (ev).u.copy.cpykind = (int)(kind_);                                       \
    (ev).u.copy.async = (async_);                                             \
  } while (0)

#define A2A_MEMCPY_WRAP(name, async_, per_thread_, stream_, ...)              \
  {                                                                           \
    A2A_PASS_THROUGH_UNLESS_WANTED(A2A_EV_MEMCPY, name, __VA_ARGS__);         \
    A2A_EVENT_HOT(ev, A2A_EV_MEMCPY, #name);                                  \
    ev.u.copy.value = 0;                                                      \
    ev.u.copy.peer = 0;                                                       \
    ev.stream = (void *)(stream_);                                            \
    ev.per_thread = (per_thread_);                                            \
    A2A_COPY1D_FIELDS(ev, dst, src, count, kind, async_);                     \
    A2A_PRE_HOT_COPY(ev, !(async_),                                           \
                     if (!(async_) || kind == cudaMemcpyDeviceToHost) A2A_BLOCKING_SITE(ev)); \
    cudaError_t r = A2A_REAL(name)(__VA_ARGS__);                              \
    A2A_POST_BEGIN_HOT(ev, r);                                                \
    A2A_POST_END_HOT(ev, A2A_EV_MEMCPY);                                      \
    return r;                                                                 \
  }

A2A_PUBLIC cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
    A2A_MEMCPY_WRAP(cudaMemcpy, 0, 0, NULL, dst, src, count, kind)
A2A_PUBLIC cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count,
                                       enum cudaMemcpyKind kind)
    A2A_MEMCPY_WRAP(cudaMemcpy_ptds, 0, 1, NULL, dst, src, count, kind)
A2A_PUBLIC cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
                                       enum cudaMemcpyKind kind, cudaStream_t stream)
    A2A_MEMCPY_WRAP(cudaMemcpyAsync, 1, 0, stream, dst, src, count, kind, stream)
A2A_PUBLIC cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count,
                                            enum cudaMemcpyKind kind, cudaStream_t stream)
    A2A_MEMCPY_WRAP(cudaMemcpyAsync_ptsz, 1, 1, stream, dst, src, count, kind, stream)

#define A2A_MEMSET_WRAP(name, async_, per_thread_, stream_, ...)              \
  {                                                                           \
    A2A_PASS_THROUGH_UNLESS_WANTED(A2A_EV_MEMSET, name, __VA_ARGS__);         \
    A2A_EVENT(ev, A2A_EV_MEMSET, #name);                                      \
    ev.stream = (void *)(stream_);                                            \
    ev.per_thread = (per_thread_);                                            \
    A2A_COPY1D_FIELDS(ev, devPtr, NULL, count, A2A_CPY_DEFAULT, async_);      \
    ev.u.copy.value = value;                                                  \
    A2A_PRE(ev);                                                              \
    cudaError_t r = A2A_REAL(name)(__VA_ARGS__);                              \
    A2A_POST_BEGIN(ev, r);                                                    \
    A2A_POST_END(ev);                                                         \
    return r;                                                                 \
  }

A2A_PUBLIC cudaError_t cudaMemset(void *devPtr, int value, size_t count)
    A2A_MEMSET_WRAP(cudaMemset, 0, 0, NULL, devPtr, value, count)
A2A_PUBLIC cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count)
    A2A_MEMSET_WRAP(cudaMemset_ptds, 0, 1, NULL, devPtr, value, count)
A2A_PUBLIC cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
    A2A_MEMSET_WRAP(cudaMemsetAsync, 1, 0, stream, devPtr, value, count, stream)
A2A_PUBLIC cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count,
                                            cudaStream_t stream)
    A2A_MEMSET_WRAP(cudaMemsetAsync_ptsz, 1, 1, stream, devPtr, value, count, stream)

/* 2D copies: bytes is the larger of the two sides' extents (each side's own
 * extent follows from its pitch, width and height). */
#define A2A_MEMCPY2D_WRAP(name, async_, per_thread_, stream_, ...)            \
  {                                                                           \
    A2A_PASS_THROUGH_UNLESS_ENTERED(name, __VA_ARGS__);                       \
    A2A_EVENT(ev, A2A_EV_MEMCPY, #name);                                      \
    ev.stream = (void *)(stream_);                                            \
    ev.per_thread = (per_thread_);                                            \
    ev.u.copy.dst = dst;                                                      \
    ev.u.copy.src = src;                                                      \
    ev.u.copy.width = width;                                                  \
    ev.u.copy.height = height;                                                \
    ev.u.copy.dpitch = dpitch;                                                \
    ev.u.copy.spitch = spitch;                                                \
    ev.u.copy.bytes = max_sz(extent2d(dpitch, width, height), extent2d(spitch, width, height)); \
    ev.u.copy.cpykind = (int)kind;                                            \
    ev.u.copy.async = (async_);                                               \
    A2A_PRE(ev);                                                              \
    cudaError_t r = A2A_REAL(name)(__VA_ARGS__);                              \
    A2A_POST_BEGIN(ev, r);                                                    \
    A2A_POST_END(ev);                                                         \
    return r;                                                                 \
  }

A2A_PUBLIC cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch,
                                    size_t width, size_t height, enum cudaMemcpyKind kind)
    A2A_MEMCPY2D_WRAP(cudaMemcpy2D, 0, 0, NULL, dst, dpitch, src, spitch, width, height, kind)
A2A_PUBLIC cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src, size_t spitch,
                                         size_t width, size_t height, enum cudaMemcpyKind kind)
    A2A_MEMCPY2D_WRAP(cudaMemcpy2D_ptds, 0, 1, NULL, dst, dpitch, src, spitch, width, height, kind)
A2A_PUBLIC cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                                         size_t width, size_t height, enum cudaMemcpyKind kind,
                                         cudaStream_t stream)
    A2A_MEMCPY2D_WRAP(cudaMemcpy2DAsync, 1, 0, stream, dst, dpitch, src, spitch, width, height, kind,
                      stream)
A2A_PUBLIC cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src,
                                              size_t spitch, size_t width, size_t height,
                                              enum cudaMemcpyKind kind, cudaStream_t stream)
    A2A_MEMCPY2D_WRAP(cudaMemcpy2DAsync_ptsz, 1, 1, stream, dst, dpitch, src, spitch, width, height,
                      kind, stream)

#define A2A_MEMSET2D_WRAP(name, async_, per_thread_, stream_, ...)            \
  {                                                                           \
    A2A_PASS_THROUGH_UNLESS_ENTERED(name, __VA_ARGS__);                       \
    A2A_EVENT(ev, A2A_EV_MEMSET, #name);                                      \
    ev.stream = (void *)(stream_);                                            \
    ev.per_thread = (per_thread_);                                            \
    ev.u.copy.dst = devPtr;                                                   \
    ev.u.copy.width = width;                                                  \
    ev.u.copy.height = height;                                                \
    ev.u.copy.dpitch = pitch;                                                 \
    ev.u.copy.bytes = extent2d(pitch, width, height);                         \
    ev.u.copy.cpykind = A2A_CPY_DEFAULT;                                      \
    ev.u.copy.value = value;                                                  \
    ev.u.copy.async = (async_);                                               \
    A2A_PRE(ev);                                                              \
    cudaError_t r = A2A_REAL(name)(__VA_ARGS__);                              \
    A2A_POST_BEGIN(ev, r);                                                    \
    A2A_POST_END(ev);                                                         \
    return r;                                                                 \
  }

A2A_PUBLIC cudaError_t cudaMemset2D(void *devPtr, size_t pitch, int value, size_t width, size_t height)
    A2A_MEMSET2D_WRAP(cudaMemset2D, 0, 0, NULL, devPtr, pitch, value, width, height)
A2A_PUBLIC cudaError_t cudaMemset2D_ptds(void *devPtr, size_t pitch, int value, size_t width,
                                         size_t height)
    A2A_MEMSET2D_WRAP(cudaMemset2D_ptds, 0, 1, NULL, devPtr, pitch, value, width, height)
A2A_PUBLIC cudaError_t cudaMemset2DAsync(void *devPtr, size_t pitch, int value, size_t width,
                                         size_t height, cudaStream_t stream)
    A2A_MEMSET2D_WRAP(cudaMemset2DAsync, 1, 0, stream, devPtr, pitch, value, width, height, stream)
A2A_PUBLIC cudaError_t cudaMemset2DAsync_ptsz(void *devPtr, size_t pitch, int value, size_t width,
                                              size_t height, cudaStream_t stream)
    A2A_MEMSET2D_WRAP(cudaMemset2DAsync_ptsz, 1, 1, stream, devPtr, pitch, value, width, height,
                      stream)

/* Peer copies: device to device between two devices. */
#define A2A_MEMCPY_PEER_WRAP(name, async_, stream_, ...)                      \
  {                                                                           \
    A2A_PASS_THROUGH_UNLESS_ENTERED(name, __VA_ARGS__);                       \
    A2A_EVENT(ev, A2A_EV_MEMCPY, #name);                                      \
    ev.stream = (void *)(stream_);                                            \
    A2A_COPY1D_FIELDS(ev, dst, src, count, A2A_CPY_D2D, async_);              \
    ev.u.copy.peer = 1;                                                       \
    A2A_PRE(ev);                                                              \
    cudaError_t r = A2A_REAL(name)(__VA_ARGS__);                              \
    A2A_POST_BEGIN(ev, r);                                                    \
    A2A_POST_END(ev);                                                         \
    return r;                                                                 \
  }

A2A_PUBLIC cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice,
                                      size_t count)
    A2A_MEMCPY_PEER_WRAP(cudaMemcpyPeer, 0, NULL, dst, dstDevice, src, srcDevice, count)
A2A_PUBLIC cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice,
                                           size_t count, cudaStream_t stream)
    A2A_MEMCPY_PEER_WRAP(cudaMemcpyPeerAsync, 1, stream, dst, dstDevice, src, srcDevice, count,
                         stream)

/* ------------------------------------------------------------------ */
/* Host functions and kernel launches */

/* A host function's event (A2A_EV_HOST_FUNC): its stream, the
 * application's function and argument, and the trampoline's slot (token). */
static inline void host_fn_fields(a2a_event *ev, cudaStream_t stream, int per_thread, void *fn,
                                  void *user, a2a_rt_hostfn *h)
{
  ev->stream = (void *)stream;
  ev->per_thread = per_thread;
  ev->u.host_fn.fn = fn;
  ev->u.host_fn.user = user;
  ev->u.host_fn.token = h;
}

/* The application's function runs through the runtime's trampoline when
 * a2a_rt_hostfn_take gives a slot (rt_hostfn.c says when, and why the RAN
 * event needs a2a_rt_hostfn_posted after the POST). */
#define A2A_HOST_FUNC_WRAP(name, per_thread_)                                 \
  {                                                                           \
    A2A_PASS_THROUGH_UNLESS_ENTERED(name, stream, fn, userData);              \
    A2A_EVENT(ev, A2A_EV_HOST_FUNC, #name);                                   \
    a2a_rt_hostfn *h = a2a_rt_hostfn_take((void *)stream, (per_thread_), fn, userData); \
    host_fn_fields(&ev, stream, (per_thread_), (void *)fn, userData, h);      \
    A2A_PRE(ev);                                                              \
    cudaError_t r = h ? A2A_REAL(name)(stream, a2a_rt_hostfn_run, h)          \
                      : A2A_REAL(name)(stream, fn, userData);                 \
    A2A_POST_BEGIN(ev, r);                                                    \
    A2A_POST_END(ev);                                                         \
    if (h) a2a_rt_hostfn_posted(h, r == cudaSuccess);                         \
    return r;                                                                 \
  }

/* cudaStreamAddCallback: the same event (a host function enqueued), its
 * callback through the runtime's other trampoline. */
#define A2A_STREAM_CB_WRAP(name, per_thread_)                                 \
  {                                                                           \
    A2A_PASS_THROUGH_UNLESS_ENTERED(name, stream, callback, userData, flags); \
    A2A_EVENT(ev, A2A_EV_HOST_FUNC, #name);                                   \
    a2a_rt_hostfn *h = a2a_rt_hostcb_take((void *)stream, (per_thread_), callback, userData); \
    host_fn_fields(&ev, stream, (per_thread_), (void *)callback, userData, h); \
    A2A_PRE(ev);                                                              \
    cudaError_t r = h ? A2A_REAL(name)(stream, a2a_rt_hostcb_run, h, flags)   \
                      : A2A_REAL(name)(stream, callback, userData, flags);    \
    A2A_POST_BEGIN(ev, r);                                                    \
    A2A_POST_END(ev);                                                         \
    if (h) a2a_rt_hostfn_posted(h, r == cudaSuccess);                         \
    return r;                                                                 \
  }

A2A_PUBLIC cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback,
                                             void *userData, unsigned int flags)
    A2A_STREAM_CB_WRAP(cudaStreamAddCallback, 0)
A2A_PUBLIC cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t stream,
                                                  cudaStreamCallback_t callback, void *userData,
                                                  unsigned int flags)
    A2A_STREAM_CB_WRAP(cudaStreamAddCallback_ptsz, 1)

A2A_PUBLIC cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
    A2A_HOST_FUNC_WRAP(cudaLaunchHostFunc, 0)
A2A_PUBLIC cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *userData)
    A2A_HOST_FUNC_WRAP(cudaLaunchHostFunc_ptsz, 1)

static inline void launch_fields(a2a_event *ev, const void *func, void **args,
                                 cudaStream_t stream, int per_thread)
{
  ev->stream = (void *)stream;
  ev->per_thread = per_thread;
  ev->u.launch.func = func;
  ev->u.launch.args = args;
}

/* All launch entry points with the (func, grid, block, args, shmem, stream)
 * shape; functype is `const void *` or `cudaKernel_t`. */
#define A2A_LAUNCH_WRAP(name, per_thread_, fparam)                            \
  {                                                                           \
    A2A_PASS_THROUGH_UNLESS_WANTED(A2A_EV_LAUNCH, name, fparam, gridDim, blockDim, args,   \
                                   sharedMem, stream);                        \
    A2A_EVENT_HOT(ev, A2A_EV_LAUNCH, #name);                                  \
    launch_fields(&ev, (const void *)fparam, args, stream, (per_thread_));   \
    A2A_PRE_HOT(ev, A2A_EV_LAUNCH, 0);                                        \
    cudaError_t r = A2A_REAL(name)(fparam, gridDim, blockDim, args, sharedMem, stream); \
    A2A_POST_BEGIN_HOT(ev, r);                                                \
    A2A_POST_END_HOT(ev, A2A_EV_LAUNCH);                                      \
    return r;                                                                 \
  }

A2A_PUBLIC cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                        size_t sharedMem, cudaStream_t stream)
    A2A_LAUNCH_WRAP(cudaLaunchKernel, 0, func)
A2A_PUBLIC cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim,
                                             void **args, size_t sharedMem, cudaStream_t stream)
    A2A_LAUNCH_WRAP(cudaLaunchKernel_ptsz, 1, func)
A2A_PUBLIC cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                          void **args, size_t sharedMem, cudaStream_t stream)
    A2A_LAUNCH_WRAP(__cudaLaunchKernel, 0, kernel)
A2A_PUBLIC cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                               void **args, size_t sharedMem, cudaStream_t stream)
    A2A_LAUNCH_WRAP(__cudaLaunchKernel_ptsz, 1, kernel)
A2A_PUBLIC cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 gridDim, dim3 blockDim,
                                                   void **args, size_t sharedMem,
                                                   cudaStream_t stream)
    A2A_LAUNCH_WRAP(cudaLaunchCooperativeKernel, 0, func)
A2A_PUBLIC cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *func, dim3 gridDim,
                                                        dim3 blockDim, void **args,
                                                        size_t sharedMem, cudaStream_t stream)
    A2A_LAUNCH_WRAP(cudaLaunchCooperativeKernel_ptsz, 1, func)

#define A2A_LAUNCH_EX_WRAP(name, per_thread_)                                 \
  {                                                                           \
    A2A_PASS_THROUGH_UNLESS_WANTED(A2A_EV_LAUNCH, name, config, func, args);  \
    A2A_EVENT(ev, A2A_EV_LAUNCH, #name);                                      \
    launch_fields(&ev, func, args, config ? config->stream : NULL, (per_thread_)); \
    A2A_PRE(ev);                                                              \
    cudaError_t r = A2A_REAL(name)(config, func, args);                       \
    A2A_POST_BEGIN(ev, r);                                                    \
    A2A_POST_END(ev);                                                         \
    return r;                                                                 \
  }

A2A_PUBLIC cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func,
                                           void **args)
    A2A_LAUNCH_EX_WRAP(cudaLaunchKernelExC, 0)
A2A_PUBLIC cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config, const void *func,
                                                void **args)
    A2A_LAUNCH_EX_WRAP(cudaLaunchKernelExC_ptsz, 1)

/* ------------------------------------------------------------------ */
/* Graphs */

#define A2A_CAPTURE_BEGIN_WRAP(name, per_thread_)                             \
  {                                                                           \
    A2A_PASS_THROUGH_UNLESS_ENTERED(name, stream, mode);                      \
    A2A_EVENT(ev, A2A_EV_GRAPH_CAPTURE_BEGIN, #name);                         \
    ev.stream = (void *)stream;                                               \
    ev.per_thread = (per_thread_);                                            \
    ev.u.graph.mode = (int)mode;                                              \
    A2A_PRE(ev);                                                              \
    cudaError_t r = A2A_REAL(name)(stream, mode);                             \
    A2A_POST_BEGIN(ev, r);                                                    \
    A2A_POST_END(ev);                                                         \
    return r;                                                                 \
  }

A2A_PUBLIC cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
    A2A_CAPTURE_BEGIN_WRAP(cudaStreamBeginCapture, 0)
A2A_PUBLIC cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream,
                                                   enum cudaStreamCaptureMode mode)
    A2A_CAPTURE_BEGIN_WRAP(cudaStreamBeginCapture_ptsz, 1)

#define A2A_CAPTURE_END_WRAP(name, per_thread_)                               \
  {                                                                           \
    A2A_PASS_THROUGH_UNLESS_WANTED(A2A_EV_GRAPH_CAPTURE_END, name, stream, pGraph); \
    A2A_EVENT(ev, A2A_EV_GRAPH_CAPTURE_END, #name);                           \
    ev.stream = (void *)stream;                                               \
    ev.per_thread = (per_thread_);                                            \
    ev.u.graph.graph_out = (void **)pGraph;                                   \
    A2A_PRE(ev);                                                              \
    cudaError_t r = A2A_REAL(name)(stream, pGraph);                           \
    A2A_POST_BEGIN(ev, r);                                                    \
    A2A_POST_END(ev);                                                         \
    return r;                                                                 \
  }

A2A_PUBLIC cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph)
    A2A_CAPTURE_END_WRAP(cudaStreamEndCapture, 0)
A2A_PUBLIC cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *pGraph)
    A2A_CAPTURE_END_WRAP(cudaStreamEndCapture_ptsz, 1)

/* Instantiation (the exec is valid in a successful POST). */
#define A2A_INSTANTIATE_WRAP(name, arg3)                                      \
  {                                                                           \
    A2A_PASS_THROUGH_UNLESS_WANTED(A2A_EV_GRAPH_INSTANTIATE, name, pGraphExec, graph, arg3); \
    A2A_EVENT(ev, A2A_EV_GRAPH_INSTANTIATE, #name);                           \
    ev.u.graph.graph = (void *)graph;                                         \
    ev.u.graph.graph_out = (void **)pGraphExec;                               \
    A2A_PRE(ev);                                                              \
    cudaError_t r = A2A_REAL(name)(pGraphExec, graph, arg3);                  \
    A2A_POST_BEGIN(ev, r);                                                    \
    A2A_POST_END(ev);                                                         \
    return r;                                                                 \
  }

A2A_PUBLIC cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                            unsigned long long flags)
    A2A_INSTANTIATE_WRAP(cudaGraphInstantiate, flags)
A2A_PUBLIC cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                                     unsigned long long flags)
    A2A_INSTANTIATE_WRAP(cudaGraphInstantiateWithFlags, flags)
/* Destruction: the handle is CUDA's to give out again. */
#define A2A_GRAPH_DESTROY_WRAP(name, param, field)                            \
  {                                                                           \
    A2A_PASS_THROUGH_UNLESS_WANTED(A2A_EV_GRAPH_DESTROY, name, param);        \
    A2A_EVENT(ev, A2A_EV_GRAPH_DESTROY, #name);                               \
    ev.u.graph.field = (void *)param;                                         \
    A2A_PRE(ev);                                                              \
    cudaError_t r = A2A_REAL(name)(param);                                    \
    A2A_POST_BEGIN(ev, r);                                                    \
    A2A_POST_END(ev);                                                         \
    return r;                                                                 \
  }
A2A_PUBLIC cudaError_t cudaGraphDestroy(cudaGraph_t graph)
    A2A_GRAPH_DESTROY_WRAP(cudaGraphDestroy, graph, graph)
A2A_PUBLIC cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec)
    A2A_GRAPH_DESTROY_WRAP(cudaGraphExecDestroy, graphExec, graph_exec)

A2A_PUBLIC cudaError_t cudaGraphInstantiateWithParams(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                                      cudaGraphInstantiateParams *instantiateParams)
    A2A_INSTANTIATE_WRAP(cudaGraphInstantiateWithParams, instantiateParams)

#define A2A_GRAPH_LAUNCH_WRAP(name, per_thread_)                              \
  {                                                                           \
    A2A_PASS_THROUGH_UNLESS_ENTERED(name, graphExec, stream);                 \
    A2A_EVENT(ev, A2A_EV_GRAPH_LAUNCH, #name);                                \
    ev.stream = (void *)stream;                                               \
    ev.per_thread = (per_thread_);                                            \
    ev.u.graph.graph_exec = (void *)graphExec;                                \
    A2A_PRE(ev);                                                              \
    cudaError_t r = A2A_REAL(name)(graphExec, stream);                        \
    A2A_POST_BEGIN(ev, r);                                                    \
    A2A_POST_END(ev);                                                         \
    return r;                                                                 \
  }

A2A_PUBLIC cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
    A2A_GRAPH_LAUNCH_WRAP(cudaGraphLaunch, 0)
A2A_PUBLIC cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream)
    A2A_GRAPH_LAUNCH_WRAP(cudaGraphLaunch_ptsz, 1)

/* ------------------------------------------------------------------ */
/* The last error: analyzers see the queries (result = the error returned). */

A2A_PUBLIC cudaError_t cudaGetLastError(void)
    A2A_STREAM_WRAP(cudaGetLastError, A2A_EV_ERROR_QUERY, 0, NULL, )
A2A_PUBLIC cudaError_t cudaPeekAtLastError(void)
    A2A_STREAM_WRAP(cudaPeekAtLastError, A2A_EV_ERROR_QUERY, 0, NULL, )
