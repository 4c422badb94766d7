/* a2a_event.h - the typed events the shim hands to the analyzers.
 *
 * This header is the contract between shim/ (interposition) and analyzers/
 * (pure analyses). The shim builds one a2a_event per intercepted call, on the
 * calling thread's stack, and passes it to a2a_dispatch() twice: once with
 * phase A2A_PRE before the real function runs (arguments valid, result and
 * out-parameters not yet), once with phase A2A_POST after it returned (result
 * and out-parameters valid). Analyzers must not keep pointers to an event or
 * to anything it points at after on_event returns; copy what they need.
 *
 * Nothing here depends on nccl.h or cuda_runtime_api.h: handles are void*,
 * enums are ints with the values of those headers (ncclDataType_t,
 * ncclRedOp_t, cudaMemcpyKind, ...), so analyzers compile and unit-test
 * without the CUDA toolkit.
 */
#ifndef A2A_EVENT_H
#define A2A_EVENT_H

#include <stddef.h>
#include <stdint.h>

#include "a2a_visibility.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum a2a_phase {
  A2A_PRE = 0,  /* before the real call */
  A2A_POST = 1, /* after the real call; ev->result is valid */
} a2a_phase;

typedef enum a2a_kind {
  A2A_EV_NONE = 0,

  /* ---- NCCL ---- */
  A2A_EV_GET_UNIQUE_ID,   /* u.uid: ncclGetUniqueId */
  A2A_EV_COMM_INIT,       /* u.init: every way a communicator is created */
  A2A_EV_COMM_END,        /* u.end: finalize / destroy / abort / revoke */
  A2A_EV_COMM_ASYNC_ERROR,/* u.async_err: ncclCommGetAsyncError */
  A2A_EV_COMM_QUERY,      /* ncclCommCount/CuDevice/UserRank/GetLastError: comm only */
  A2A_EV_COLL,            /* u.coll: every collective */
  A2A_EV_P2P,             /* u.p2p: ncclSend / ncclRecv */
  A2A_EV_GROUP_START,     /* ncclGroupStart */
  A2A_EV_GROUP_END,       /* ncclGroupEnd and ncclGroupSimulateEnd (see api) */
  A2A_EV_NCCL_REGISTER,   /* u.reg: ncclCommRegister/Deregister, Window(De)Register */
  A2A_EV_REDOP,           /* ncclRedOpCreatePreMulSum / ncclRedOpDestroy: comm only */

  /* ---- CUDA runtime ---- */
  A2A_EV_SET_DEVICE,      /* u.dev: cudaSetDevice (device = new device) */
  A2A_EV_STREAM_CREATE,   /* u.stream: cudaStreamCreate* (stream valid in POST) */
  A2A_EV_STREAM_DESTROY,  /* ev->stream */
  A2A_EV_STREAM_SYNC,     /* ev->stream: cudaStreamSynchronize (blocking) */
  A2A_EV_STREAM_QUERY,    /* ev->stream: cudaStreamQuery; result 0 = all done */
  A2A_EV_STREAM_WAIT_EVENT, /* ev->stream waits for u.event.event */
  A2A_EV_EVENT_CREATE,    /* u.event (event valid in POST, flags) */
  A2A_EV_EVENT_DESTROY,   /* u.event */
  A2A_EV_EVENT_RECORD,    /* u.event on ev->stream */
  A2A_EV_EVENT_SYNC,      /* u.event: cudaEventSynchronize (blocking) */
  A2A_EV_EVENT_QUERY,     /* u.event: cudaEventQuery; result 0 = complete */
  A2A_EV_EVENT_ELAPSED,   /* u.event (event=start, event2=end) */
  A2A_EV_DEVICE_SYNC,     /* cudaDeviceSynchronize (blocking) */
  A2A_EV_ALLOC,           /* u.mem: cudaMalloc*, cudaMallocHost, cudaHostAlloc, ncclMemAlloc */
  A2A_EV_FREE,            /* u.mem: cudaFree*, cudaFreeHost, ncclMemFree (size 0) */
  A2A_EV_MEMCPY,          /* u.copy */
  A2A_EV_MEMSET,          /* u.copy (src NULL, value in u.copy.value) */
  A2A_EV_LAUNCH,          /* u.launch: every kernel launch entry point */
  A2A_EV_HOST_FUNC,       /* u.host_fn: cudaLaunchHostFunc */
  A2A_EV_GRAPH_CAPTURE_BEGIN, /* ev->stream */
  A2A_EV_GRAPH_CAPTURE_END,   /* ev->stream */
  A2A_EV_GRAPH_LAUNCH,        /* ev->stream, u.graph */
  A2A_EV_GRAPH_INSTANTIATE,   /* u.graph: cudaGraphInstantiate* (graph; the
                                 exec in *graph_out, valid in POST) */
  A2A_EV_GRAPH_DESTROY,       /* u.graph: cudaGraphDestroy (graph) or
                                 cudaGraphExecDestroy (graph_exec) */
  A2A_EV_ERROR_QUERY,     /* cudaGetLastError / cudaPeekAtLastError */

  /* ---- emitted by the runtime itself, not by an intercepted call ---- */
  A2A_EV_PROCESS_EXIT,    /* once, from the exit handler, before the summary */
  A2A_EV_FORK_CHILD,      /* once in a forked child, before anything else runs */
  A2A_EV_HOST_FUNC_RAN,   /* u.host_fn: a host function the runtime wrapped
                             (its A2A_EV_HOST_FUNC carried u.host_fn.token)
                             began to run, before the application's function
                             ran; once per token, always after that
                             HOST_FUNC's POST; phase POST, on any thread
                             (often CUDA's callback thread) */

  A2A_EV__COUNT
} a2a_kind;

_Static_assert(A2A_EV__COUNT <= 64, "analyzers subscribe with a 64-bit mask of kinds");

/* The bit of a kind in an analyzer's subscription masks (a2a_analyzer.pre,
 * .post). */
#define A2A_KIND_BIT(k) (1ull << (k))

/* Whether a kind is an NCCL call (its result is an ncclResult_t). */
static inline int a2a_kind_is_nccl(a2a_kind k) {
  return k >= A2A_EV_GET_UNIQUE_ID && k <= A2A_EV_REDOP;
}

/* ncclInProgress: a non-blocking communicator accepted the call (its work
 * or creation completes asynchronously). */
#define A2A_NCCL_IN_PROGRESS 7
/* cudaErrorNotReady: cudaStreamQuery / cudaEventQuery say "not yet". */
#define A2A_CUDA_ERROR_NOT_READY 600

/* Collective operations (A2A_EV_COLL). */
typedef enum a2a_coll {
  A2A_COLL_ALLREDUCE,
  A2A_COLL_BROADCAST,     /* ncclBroadcast and ncclBcast (send == recv) */
  A2A_COLL_REDUCE,
  A2A_COLL_ALLGATHER,     /* count = per-rank send count */
  A2A_COLL_REDUCESCATTER, /* count = per-rank recv count */
  A2A_COLL_ALLTOALL,      /* count = per-peer count */
  A2A_COLL_GATHER,        /* count = per-rank count */
  A2A_COLL_SCATTER,       /* count = per-rank count */
  A2A_COLL__COUNT
} a2a_coll;

/* How a communicator was created (A2A_EV_COMM_INIT). */
typedef enum a2a_init_how {
  A2A_INIT_RANK,        /* ncclCommInitRank */
  A2A_INIT_RANK_CONFIG, /* ncclCommInitRankConfig */
  A2A_INIT_SCALABLE,    /* ncclCommInitRankScalable */
  A2A_INIT_ALL,         /* ncclCommInitAll: one event per created comm */
  A2A_INIT_SPLIT,       /* ncclCommSplit */
  A2A_INIT_SHRINK,      /* ncclCommShrink */
} a2a_init_how;

/* How a communicator ended (A2A_EV_COMM_END). */
typedef enum a2a_end_how {
  A2A_END_FINALIZE,
  A2A_END_DESTROY,
  A2A_END_ABORT,
  A2A_END_REVOKE,
} a2a_end_how;

/* Memory kinds (A2A_EV_ALLOC / A2A_EV_FREE and the allocation registry). */
typedef enum a2a_mem_kind {
  A2A_MEM_DEVICE,       /* cudaMalloc, cudaMallocPitch */
  A2A_MEM_DEVICE_ASYNC, /* cudaMallocAsync / cudaFreeAsync (stream-ordered) */
  A2A_MEM_MANAGED,      /* cudaMallocManaged */
  A2A_MEM_HOST_PINNED,  /* cudaMallocHost, cudaHostAlloc */
  A2A_MEM_NCCL,         /* ncclMemAlloc / ncclMemFree */
} a2a_mem_kind;

/* Values of cudaMemcpyKind, repeated so analyzers need no CUDA header. */
enum {
  A2A_CPY_H2H = 0, A2A_CPY_H2D = 1, A2A_CPY_D2H = 2, A2A_CPY_D2D = 3,
  A2A_CPY_DEFAULT = 4
};

/* The size in bytes of an ncclDataType_t value (nccl.h 2.28: int8, uint8,
 * int32, uint32, int64, uint64, float16, float32, float64, bfloat16,
 * float8e4m3, float8e5m2), 0 for an invalid dtype. Inline: every NCCL
 * operation asks it several times (layout, group, perf and stream
 * analyzers), one table load each. */
extern A2A_HIDDEN const unsigned char a2a_dtype_sizes[12];
static inline size_t a2a_dtype_size(int nccl_dtype) {
  return (unsigned)nccl_dtype < 12u ? a2a_dtype_sizes[nccl_dtype] : 0;
}
const char *a2a_dtype_name(int nccl_dtype);
const char *a2a_coll_name(int coll);
const char *a2a_redop_name(int redop);

typedef struct a2a_event {
  a2a_kind kind;
  a2a_phase phase;
  const char *api;      /* the intercepted function's name, e.g. "ncclSend" */
  int result;           /* POST: the value the real function returned */
  uint8_t ok;           /* POST: the call succeeded: result 0, or for an NCCL
                           call ncclInProgress (set by the shim) */
  uint8_t in_progress;  /* POST: an NCCL call returned ncclInProgress */

  int device;           /* current CUDA device of the calling thread at the
                           call (filled for NCCL events and launches), -1 if
                           unknown */
  uint32_t thread;      /* small per-process thread index assigned by the
                           shim (1, 2, ...); analyzers key per-thread state by it */
  uint32_t seq;         /* the call's number among the thread's analyzed calls
                           (1, 2, ...): two events of a thread are consecutive
                           calls when their seqs differ by one (see
                           a2a_thread_last_seq) */
  uint64_t t_ns;        /* CLOCK_MONOTONIC ns at the phase; 0 for kernel
                           launches, event records, stream waits,
                           asynchronous copies, NCCL collectives and p2p
                           calls, group calls, communicator queries,
                           ncclCommGetAsyncError and the stream and event
                           queries (the hot calls: an analyzer that needs
                           their time asks a2a_hostsvc->now_ns) */
  const void *callsite; /* return address into the caller of the intercepted
                           function: the call-site handle for dedup and for
                           symbolizing later */
  void *stream;         /* cudaStream_t the call operates on, or NULL (which
                           is also the legacy default stream: see per_thread) */
  int per_thread;       /* 1 if NULL/0 stream means cudaStreamPerThread
                           (the _ptsz/_ptds entry points) */
  void *comm;           /* ncclComm_t for NCCL events, else NULL */

  union {
    struct { const void *id; /* 128 bytes, POST */ } uid;

    struct {
      a2a_init_how how;
      int late;               /* see awaited below (in how's padding) */
      void *newcomm;          /* POST: the created ncclComm_t */
      int nranks, rank;       /* as passed (INIT_ALL: ndev and index) */
      int device;             /* device the comm is bound to */
      const void *ids;        /* ncclUniqueId bytes (128 each) or NULL */
      int nids;               /* number of ids (scalable init), else 1/0 */
      void *parent;           /* SPLIT/SHRINK: the parent ncclComm_t */
      int color, key;         /* SPLIT */
      const int *exclude;     /* SHRINK: excluded ranks */
      int nexclude;
      int blocking;           /* config->blocking (1 unless config says 0) */
      const void *config;     /* ncclConfig_t* or NULL */
      /* (A union: the event's size is every call's copy cost.) */
      union {
        const int *devlist;   /* INIT_ALL: ncclCommInitAll's device list
                                 (nranks entries; NULL = devices 0..n-1) */
        /* SPLIT/SHRINK whose child NCCL publishes later: NCCL stores the
         * child in the application's *newcomm only when its init job ends
         * (after the call for a non-blocking parent, at the outermost
         * ncclGroupEnd inside a group), so this POST has newcomm NULL and
         * `awaited` that ncclComm_t*. Once the shim sees the child there
         * it dispatches a second POST of the same event, `late` 1 (no PRE
         * before it; the thread that saw it; newcomm, nranks, rank and
         * device filled; in_progress while NCCL cannot yet be asked its
         * size; config and exclude NULL), which creates the communicator
         * as an ordinary POST would: the registry gives it the split index
         * its first POST took (a split's number is its call order on the
         * parent, as on every rank). NULL and 0 otherwise. */
        const void *awaited;
      };
    } init;

    struct { a2a_end_how how; int flags; } end;

    struct { int async_error; /* POST: *asyncError */ } async_err;

    struct {
      a2a_coll coll;
      const void *sendbuff;
      void *recvbuff;
      size_t count;           /* see a2a_coll for the meaning per op */
      int dtype;              /* ncclDataType_t */
      int redop;              /* ncclRedOp_t, -1 when not a reduction */
      int root;               /* -1 when rootless */
    } coll;

    struct {
      int is_send;
      void *buff;             /* sendbuff or recvbuff */
      size_t count;
      int dtype;
      int peer;
    } p2p;

    struct { void *buff; size_t size; void *handle; int deregister; } reg;

    struct { int device; } dev;

    struct { unsigned flags; int priority; } stream_create;

    struct { void *event; void *event2; unsigned flags; } event;

    struct {
      a2a_mem_kind mem;
      void *ptr;              /* ALLOC POST: the new pointer; FREE: the freed one */
      size_t size;            /* ALLOC: bytes (pitch*height for pitched) */
      int async;              /* 1 for the stream-ordered variants (ev->stream) */
    } mem;

    struct {
      void *dst;
      const void *src;        /* NULL for memset */
      size_t bytes;           /* span covered: width for 1D; for 2D the extent
                                 (pitch*(height-1)+width) of each side */
      size_t width, height;   /* 2D: width bytes x height rows; 1D: bytes x 1 */
      size_t dpitch, spitch;  /* 2D pitches; 1D: equal to bytes */
      int cpykind;            /* cudaMemcpyKind (A2A_CPY_*) */
      int value;              /* memset value */
      int async;              /* 1 for the *Async variants (ev->stream) */
      int peer;               /* cudaMemcpyPeer*: 1 */
    } copy;

    /* (Not the grid, block and dynamic shared memory size: no analyzer
     * reads them, and a launch is the hottest call - the wrapper would
     * keep six more values to store them. The hot wrappers leave the
     * union's bytes past `args` unwritten: a copy of the whole union is
     * a copy, never compared.) */
    struct {
      const void *func;       /* host-side kernel handle */
      void **args;            /* args[i] points at parameter i's bytes */
    } launch;

    struct {
      void *fn, *user;        /* the application's function and argument */
      /* Nonzero: the runtime runs fn through its trampoline and emits
       * A2A_EV_HOST_FUNC_RAN with this token when it starts (shim's
       * rt_hostfn.c: only for a stream that is not capturing). Unique
       * among the tokens whose RAN is still to come. */
      const void *token;
    } host_fn;

    /* Graphs: LAUNCH graph_exec; CAPTURE_BEGIN mode; CAPTURE_END graph_out
     * (the cudaGraph_t * the application passed: *graph_out is the
     * captured graph in a successful POST); INSTANTIATE graph and
     * graph_out (the cudaGraphExec_t *). */
    struct { void *graph_exec; int mode; void *graph; void **graph_out; } graph;

    struct {
      int simulate;           /* GROUP_END: ncclGroupSimulateEnd (launches
                                 nothing) */
      int depth;              /* the thread's group depth before the call as
                                 its analyzed group calls counted it
                                 (a2a_group_nested: +1 per start that
                                 returned 0, -1 per end while positive), 0
                                 when the event did not come through
                                 a2a_group_nested */
      int kept;               /* 1: the call is nested (a2a_group_nested)
                                 and its thread kept a nested level
                                 (a2a_group_keep), which the analyzers that
                                 count nested calls fold into their counts
                                 at this call's PRE; else 0 */
    } group;

    struct { int status; /* exit status, for A2A_EV_PROCESS_EXIT */ } exit;
  } u;
} a2a_event;
/* Every wrapper builds one on the stack and the grouped paths copy them:
 * a field added to the largest member must fit its padding or a union
 * (u.init's devlist/awaited) - bench's instruction counts notice 16 bytes. */
_Static_assert(sizeof(((a2a_event *)0)->u) <= 96, "a2a_event's union grew past 96 bytes");

/* A queued copy (an A2A_EV_MEMCPY event): an asynchronous one whose kind
 * lets the host go on at once - not device-to-host (into pageable memory
 * the call returns only once the copy is done), nor cudaMemcpyDefault
 * (unknown until the pointers are looked up). The analyzers that care
 * only about copies the host may wait on skip its PRE
 * (a2a_analyzer.pre_skips_queued_copy). */
static inline int a2a_copy_queued(const a2a_event *ev) {
  return ev->u.copy.async && ev->u.copy.cpykind != A2A_CPY_D2H &&
         ev->u.copy.cpykind != A2A_CPY_DEFAULT;
}

/* Record the real call's result and the facts derived from it (ok,
 * in_progress). The shim calls this once per call; so do the unit tests'
 * event helpers. */
static inline void a2a_event_set_result(a2a_event *ev, int result) {
  ev->result = result;
  ev->in_progress = a2a_kind_is_nccl(ev->kind) && result == A2A_NCCL_IN_PROGRESS;
  ev->ok = result == 0 || ev->in_progress;
}

#ifdef __cplusplus
}
#endif
#endif /* A2A_EVENT_H */
