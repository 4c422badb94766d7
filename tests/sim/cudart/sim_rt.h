/* sim_rt.h - private declarations of the simulator's CUDA runtime, grouped
 * by the .c file that defines them.
 *
 * Model in one paragraph: every stream is a FIFO of work items executed in
 * order by its own worker thread. Each stream numbers its items with a
 * monotonically increasing sequence number (enq_seq at enqueue, done_seq
 * when the item has finished). Any ordering constraint between streams is a
 * dependency (stream, seq) carried by an item: the worker waits until that
 * stream's done_seq reaches seq before it runs the item. Events capture
 * (stream, seq) when recorded; cudaStreamWaitEvent enqueues a marker that
 * depends on the captured point; the legacy default stream's implicit
 * synchronization is expressed with the same dependencies, computed at
 * enqueue time. Host-side synchronization waits on the same counters.
 */
#ifndef A2ASIM_SIM_RT_H
#define A2ASIM_SIM_RT_H

/* Declare both the plain and the _ptsz/_ptds entry points with their exact
 * prototypes, so the compiler checks every definition against the header. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda_runtime_api.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "a2asim.h"
#include "a2asim_internal.h"

#define SIM_EXPORT __attribute__((visibility("default")))
#define SIM_MAX_DEVICES 64

typedef struct sim_stream sim_stream;
typedef struct sim_event sim_event;
typedef struct sim_item sim_item;
typedef struct sim_graph sim_graph;
typedef struct sim_kernel sim_kernel;
typedef struct sim_multi sim_multi;
typedef struct sim_capture sim_capture;

/* Shared by every copy of a capturable internal item (the queued item, its
 * graph nodes, each launch): release(arg) runs when the last copy is gone. */
struct sim_fn_holder {
  a2asim_work_fn release;
  void *arg;
  _Atomic int refs;
};

/* ---- core.c: knobs, devices, errors, fork ------------------------------ */

typedef struct sim_knobs {
  int devices;             /* A2ASIM_DEVICES, default 8 */
  unsigned kernel_delay_us;/* A2ASIM_KERNEL_DELAY_US, default 0 */
  unsigned launch_us;      /* A2ASIM_LAUNCH_US, default 0 */
  double bw_gbps;          /* A2ASIM_BW_GBPS, default 0 = off */
  char host[256];          /* A2ASIM_HOST, default gethostname() */
  int trace;               /* A2ASIM_TRACE, default 0 */
  int unimpl_fail;         /* A2ASIM_UNIMPLEMENTED_KERNELS=fail (default warn) */
  bool timed;              /* cost model on (launch_us, kernel_delay_us or
                              bw_gbps): workers keep a device timeline */
} sim_knobs;

typedef struct sim_device {
  pthread_mutex_t mu;      /* guards streams list, legacy, mem_used */
  sim_stream *streams;     /* every live or draining stream of the device */
  sim_stream *legacy;      /* the legacy default stream, created lazily */
  _Atomic int sticky;      /* sticky error (cudaError_t), 0 = none */
  size_t mem_used;         /* bytes of device + managed allocations */
  unsigned flags;          /* cudaSetDeviceFlags */
  unsigned char peer[SIM_MAX_DEVICES]; /* peer access enabled to device i */
} sim_device;

extern sim_knobs sim_kn;
extern sim_device sim_dev[SIM_MAX_DEVICES];
/* Incremented in a forked child: handles of the parent become invalid. */
extern _Atomic unsigned sim_gen;

void sim_init(void);                   /* idempotent, thread-safe */
int sim_cur_device(void);              /* thread's current device */
void sim_set_cur_device(int dev);
/* Records err as the thread's last error (unless success or NotReady) and
 * returns it. Every API entry point returns through this. */
cudaError_t sim_ret(cudaError_t err);
/* Sticky error of dev, or 0. */
static inline int sim_sticky(int dev) {
  return (dev >= 0 && dev < SIM_MAX_DEVICES) ? atomic_load_explicit(&sim_dev[dev].sticky, memory_order_acquire) : 0;
}
uint64_t sim_now_ns(void);             /* CLOCK_MONOTONIC */
void sim_sleep_us(double us);
/* Sleeps until CLOCK_MONOTONIC reaches t_ns (at once if it has). */
void sim_sleep_until_ns(uint64_t t_ns);
/* The device the calling worker is executing for (-1 on a host thread). */
extern _Thread_local int sim_worker_device;

/* Waits for the device's work, clears its sticky error and peer access and
 * destroys its primary context (cudaDeviceReset, cuDevicePrimaryCtxReset). */
void sim_device_reset(int dev);

/* ---- context.c: primary contexts, the thread's context stack ----------- */

void sim_ctx_mark_runtime_up(void);
/* The runtime takes its reference on dev's primary context (idempotent). */
void sim_ctx_activate(int dev);
/* Same, and makes it the calling thread's current context (replacing the
 * top of its stack). Called by every runtime call that needs the device. */
void sim_ctx_use(int dev);
void sim_ctx_device_reset(int dev);
void sim_ctx_after_fork_child(void);

/* ---- stream.c: streams, items, events, synchronization ---------------- */

enum sim_stream_kind { SK_USER = 0, SK_LEGACY = 1, SK_PERTHREAD = 2 };

struct sim_dep { sim_stream *s; uint64_t seq; };

enum sim_item_kind {
  IT_FN,        /* internal: fn(arg) (a2asim_stream_enqueue) */
  IT_HOSTFN,    /* cudaLaunchHostFunc */
  IT_CALLBACK,  /* cudaStreamAddCallback */
  IT_KERNEL,    /* kernel launch */
  IT_COPY,      /* 1D/2D copy (height 1 for 1D) */
  IT_SET,       /* 1D/2D memset */
  IT_WAIT,      /* cudaStreamWaitEvent: resolved to a dependency at submit */
  IT_RECORD,    /* cudaEventRecord: captures the point at submit */
  IT_FREE,      /* cudaFreeAsync: frees in stream order */
  IT_MULTI,     /* proxy of an a2asim_stream_enqueue_multi item */
  IT_NOP,       /* placeholder (graph launch of an empty graph) */
};

struct sim_item {
  sim_item *next;
  int kind;
  uint64_t seq;            /* assigned at submit */
  uint64_t submit_ns;      /* sim_now_ns() at submit when sim_kn.timed */
  int ndeps, capdeps;
  const char *what;        /* label for A2ASIM_TRACE (static string or NULL) */
  size_t extra;            /* bytes allocated after the item (kernel args) */
  bool pooled;             /* from the item pool (stream.c): room for
                              SIM_ITEM_POOL_EXTRA bytes after the item */
  struct sim_dep *deps;    /* deps_inline or heap */
  struct sim_dep deps_inline[2];
  union {
    struct {
      a2asim_work_fn fn;
      void *arg;
      struct sim_fn_holder *holder;   /* FN from enqueue_capturable, else NULL */
    } fn;                             /* FN, HOSTFN */
    struct { cudaStreamCallback_t cb; void *data; cudaStream_t h; } cb;
    struct {
      sim_kernel *k;       /* NULL: unregistered, no-op */
      a2asim_launch_info info;
      void **argv;         /* points into the item's own allocation */
      size_t argbytes;
    } kern;
    struct {
      char *dst;
      const char *src;     /* the item's own staging bytes when staged */
      size_t dpitch, spitch, width, height;
      bool staged;
    } copy;
    struct { char *dst; int value; size_t pitch, width, height; } set;
    struct { sim_event *ev; } wait;
    struct { sim_event *ev; uint64_t rec_id; } rec;
    struct { void *ptr; } free;
    struct { sim_multi *m; } multi;
  } u;
};

struct sim_stream {
  /* Set once when the slot is first used (or re-used in a forked child). */
  unsigned slot_gen;       /* sim_gen at which mu/cvs were initialized */
  pthread_mutex_t mu;
  pthread_cond_t work_cv;  /* worker waits for items */
  pthread_cond_t done_cv;  /* waiters for done_seq */
  /* Identity, guarded by mu. */
  _Atomic int state;       /* 0 free, 1 live, 2 destroyed (draining) */
  unsigned gen;            /* sim_gen at creation */
  int kind;                /* sim_stream_kind */
  int device;
  unsigned flags;          /* cudaStreamDefault / cudaStreamNonBlocking */
  int priority;
  unsigned long long id;
  /* Queue, guarded by mu. */
  sim_item *head, *tail;
  _Atomic uint64_t enq_seq;  /* written under mu */
  _Atomic uint64_t done_seq; /* written under mu, read lock-free */
  _Atomic uint64_t done_end_ns; /* sim_kn.timed: modelled end of the last
                                   completed item, stored before done_seq */
  int waiters;             /* threads in done_cv */
  bool worker_running, worker_idle;
  _Atomic unsigned delay_us;
  /* Graph capture, guarded by mu: the capture sequence this stream is a
   * member of (began on it, or joined it by waiting on a capture event),
   * NULL when none; cap_idx is its member index (0 = the origin). Read it
   * through sim_capture_of_locked (a capture ended from another member
   * is dropped lazily). The capture's own state is guarded by its mu. */
  sim_capture *cap;
  int cap_idx;
  /* Device list, guarded by sim_dev[device].mu. */
  sim_stream *dnext, *dprev;
  sim_stream *free_next;   /* slab free list */
};

struct sim_event {
  unsigned slot_gen;
  pthread_mutex_t mu;
  _Atomic int state;       /* 0 free, 1 live */
  unsigned gen;
  unsigned flags;
  int device;
  /* Captured point, guarded by mu. */
  bool recorded;
  /* Last record happened inside a capture: the capture (one reference
   * held) and its point, the recording member's vector clock (cap_vc,
   * SIM_CAPTURE_MAX entries, malloc'd); NULL when the last record was
   * outside a capture. */
  sim_capture *cap;
  uint64_t *cap_vc;
  sim_stream *s;
  uint64_t seq;
  uint64_t rec_id;         /* identifies the record that set (s, seq) */
  uint64_t t_ns;           /* completion time of rec_id, 0 = not yet */
  sim_event *free_next;
};

/* Resolves a cudaStream_t (NULL per ptds) to a stream of the current device
 * for NULL/Legacy/PerThread, validating user handles. */
cudaError_t sim_stream_resolve(cudaStream_t h, int ptds, sim_stream **out);
sim_item *sim_item_new(int kind, size_t extra);
void sim_item_free(sim_item *it);
int sim_item_add_dep(sim_item *it, sim_stream *s, uint64_t seq);
/* Appends it to s (or to s's capture graph). Takes ownership of it, also
 * on failure. */
cudaError_t sim_submit(sim_stream *s, sim_item *it);
/* Same, and sets *seq_out to the item's sequence number on s (0 when the
 * item was captured into a graph instead of queued). */
cudaError_t sim_submit_seq(sim_stream *s, sim_item *it, uint64_t *seq_out);
/* Waits until s has completed everything enqueued so far. */
void sim_stream_wait_all(sim_stream *s);
void sim_wait_done(sim_stream *s, uint64_t seq);
/* Waits for all streams of dev (cudaDeviceSynchronize semantics). */
void sim_device_wait_all(int dev);
static inline uint64_t sim_done_of(sim_stream *s) {
  return atomic_load_explicit(&s->done_seq, memory_order_acquire);
}

/* ---- event.c: events --------------------------------------------------- */

sim_event *sim_event_from_handle(cudaEvent_t e);
/* Makes (s, seq) the event's captured point (called under s->mu when a
 * record item is queued); returns the record's unique id. */
uint64_t sim_event_set_point(sim_event *ev, sim_stream *s, uint64_t seq);
/* The record item rec_id executed at t_ns: stamps it if still current. */
void sim_event_record_reached(sim_event *ev, uint64_t rec_id, uint64_t t_ns);
void sim_events_fork_prepare(void);
void sim_events_fork_parent(void);
void sim_events_after_fork_child(void);
void sim_streams_after_fork_child(void);
void sim_streams_fork_prepare(void);
void sim_streams_fork_parent(void);
/* Runs one item's payload (used by the worker). */
void sim_item_execute(sim_stream *s, sim_item *it);
/* Cost model (docs/simulator.md, "Cost model"). On a worker executing an
 * item with sim_kn.timed, sim_model_us charges us of device time to the
 * worker's timeline: it starts when the previous charge ended or when the
 * item became ready, whichever is later, and the worker sleeps until its
 * absolute end. Elsewhere it is a relative sleep of us. */
void sim_model_us(double us);
/* The executing worker waited in real time (a delay, a host function, a
 * peer): what follows on its timeline starts no earlier than now. No-op
 * off a worker or with the cost model off. */
void sim_model_blocked(void);
/* The executing item waited for something that happened at t_ns on
 * another timeline (a time that has passed): its next charge starts no
 * earlier. No-op off a worker or with the cost model off. */
void sim_model_advance(uint64_t t_ns);
/* The current item's position on the worker's timeline (its start, or
 * the end of its last charge); sim_now_ns() off the timeline. */
uint64_t sim_model_now(void);

/* ---- memory.c: allocation table, memcpy/memset ------------------------- */

enum { SIM_MEM_HOST = 0, SIM_MEM_PINNED = 1, SIM_MEM_DEVICE = 2, SIM_MEM_MANAGED = 3 };
void sim_copy2d(char *dst, size_t dpitch, const char *src, size_t spitch,
                size_t width, size_t height);
void sim_mem_fork_prepare(void);
void sim_mem_fork_parent(void);
void sim_mem_after_fork_child(void);
void sim_mem_free_async_item(void *ptr);   /* executes an IT_FREE item */

/* ---- launch.c: kernel registry ---------------------------------------- */

struct sim_kernel {
  const void *func;
  char *name;              /* owned */
  a2asim_kernel_impl impl; /* NULL: name-only (nvcc registration) */
  int nparams;             /* -1: unknown layout */
  size_t *sizes, *offsets; /* owned */
  size_t argbytes;         /* sum of sizes */
  atomic_bool warned;      /* launched without impl: reported once */
};
sim_kernel *sim_kernel_lookup(const void *func);
void sim_kernel_fork_prepare(void);
void sim_kernel_fork_parent(void);
void sim_kernel_after_fork_child(void);

/* ---- graph.c: capture and graphs -------------------------------------- */

/* Most streams one capture sequence can hold (origin + joined). */
#define SIM_CAPTURE_MAX 64
/* The capture s is a member of, or NULL (s->mu held); drops a reference
 * to a capture that has ended meanwhile. */
sim_capture *sim_capture_of_locked(sim_stream *s);
/* cudaStreamCaptureStatus of s (s->mu held). */
int sim_capture_status_locked(sim_stream *s);
/* Invalidates s's capture if it is active (s->mu held); returns 1 if it
 * was active. */
int sim_capture_invalidate_locked(sim_stream *s);
/* Records it (not consumed) in s's capture (s->mu held, s a member). */
cudaError_t sim_capture_append_locked(sim_stream *s, sim_item *it);
/* Capture events (event.c): the capture point of s, a new reference to
 * its capture and a copy of its vector clock (s->mu held, s a member);
 * returns cudaErrorStreamCaptureInvalidated or a malloc failure. */
cudaError_t sim_capture_point_locked(sim_stream *s, sim_capture **cap, uint64_t **vc);
/* Makes s wait on a capture point (cap, vc) (cudaStreamWaitEvent on a capture
 * event): joins s to cap when s is not capturing, else orders it. */
cudaError_t sim_capture_wait(sim_stream *s, sim_capture *cap, const uint64_t *vc);
void sim_capture_ref(sim_capture *c);
void sim_capture_unref(sim_capture *c);
/* 1 while c is still capturing (active or invalidated, not ended). */
int sim_capture_live(sim_capture *c);

/* Appends a copy of it to g (called with the capturing stream's mu held). */
int sim_graph_append(sim_graph *g, sim_item *it);
sim_item *sim_item_clone(const sim_item *it);
void sim_graphs_after_fork_child(void);

#endif /* A2ASIM_SIM_RT_H */
