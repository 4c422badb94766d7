/* xrank_rec.h - between the xrank analyzer (xrank/xrank.c, runs on the
 * application's threads) and the process side of cross-rank checking
 * (xrank/xr_*.c, one background thread per process).
 *
 * The analyzer never blocks: it turns events into fixed-size records pushed
 * into a bounded lock-free multi-producer queue (drops are counted), keeps
 * each thread's "blocked in a synchronizing call" state in a per-thread
 * slot, and records a completion event (REAL runtime, through a2a_hostsvc)
 * after each launch unit. The background thread pops the records, tracks
 * units and counters, and talks to the coordinators.
 *
 * The analyzer reaches the process side only through one port (xr_port),
 * registered at start-up the way the runtime's a2a_host is: the runtime
 * registers xr_process_port (xr_chan.c); unit tests register a fake or none
 * (then ids get no coordinator record, no thread starts, nothing waits).
 */
#ifndef A2A_XRANK_REC_H
#define A2A_XRANK_REC_H

#include <stddef.h>
#include <stdint.h>

#include "a2a_core.h"
#include "xrank.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Coordinator record written into the trailing zero bytes of an
 * ncclUniqueId (bytes XR_IDREC_OFF .. 127). */
#define XR_IDREC_OFF 80
#define XR_IDREC_BYTES 48
#define XR_IDREC_MAGIC 0x58613241u /* "A2aX" */
/* 3: the coordinator speaks XR_PROTO_VERSION 4 (2: version 3). A client of
 * another version finds no record it knows (no coordinator, said once). */
#define XR_IDREC_VERSION 3

typedef struct xr_idrec {
  uint32_t magic;
  uint8_t version;
  uint8_t family;    /* 4 or 6 */
  uint16_t port;     /* network order */
  uint8_t addr[16];  /* IPv4 in the first 4 bytes */
  uint8_t token[XR_TOKEN_BYTES]; /* the job's secret (xrank_auth.h) */
  uint32_t pid;      /* coordinator host's pid (for messages) */
  uint32_t check;    /* hash of the bytes above */
} xr_idrec;
_Static_assert(sizeof(xr_idrec) == XR_IDREC_BYTES, "xr_idrec fills the id's tail");

/* COMMBIND: a communicator registered at its init's PRE (comm NULL then)
 * got its registry record at POST.
 * Completion markers (xrank.c, "completion markers"): a UNIT_END with
 * u.unit.deferred set closes its units without an event yet: the thread
 * records one marker after a run of back-to-back operations on a stream,
 * before its next call that is not NCCL communication, and sends it as a
 * UNIT_MARK for the run (thread, stream, u.unit.run); event NULL there
 * means the marker could not be recorded (the run's units are untracked).
 * OP_UNIT: an operation outside any group, which is a launch unit by
 * itself: an OP followed by the UNIT_END of its thread and stream, in one
 * record (u.opu; event and device as in UNIT_END). */
enum { XR_REC_OP = 1, XR_REC_UNIT_END, XR_REC_COMMREG, XR_REC_COMMEND, XR_REC_COMMBIND,
       XR_REC_UNIT_MARK, XR_REC_OP_UNIT };

/* What a record carries: type, and per type the fields the background
 * thread reads (xr_chan.c drain); the application threads fill only those
 * in the hot records (the ring's cell keeps an older record's bytes in the
 * others, which nothing reads):
 *  OP: thread, stream, u.op;
 *  OP_UNIT: thread, stream, device, event, u.opu;
 *  UNIT_END, UNIT_MARK: thread, stream, device, event, u.unit;
 *  COMMREG: thread, comm, has_idrec, u.reg; COMMEND, COMMBIND: thread,
 *      comm, u.end (whole records, zero elsewhere). */
typedef struct xr_rec {
  uint8_t type;
  uint8_t has_idrec;     /* COMMREG: 1 idrec is valid; 2 a process-local
                            (ncclCommInitAll) comm: this process's own
                            coordinator matches it */
  int16_t device;        /* UNIT_END/MARK/OP_UNIT: the device of the event's pool */
  uint32_t thread;       /* shim thread index */
  uint64_t stream;       /* normalized stream id (see xr_stream_id) */
  void *event;           /* UNIT_END/OP_UNIT: completion event, or NULL (untracked) */
  const a2a_comm *comm;  /* COMMREG/COMMEND/COMMBIND: the registry record */
  union {
    xr_op op;
    struct { xr_op op; uint32_t run, gen; uint8_t deferred; } opu; /* OP_UNIT:
                           the operation, then its unit's close as in unit */
    struct { xr_commreg reg; xr_idrec idrec; } reg;
    struct { uint64_t comm; int32_t how, rank; uint32_t wait; } end; /* wait:
                           COMMEND, the end-of-comm wait slot or 0 */
    struct { uint32_t run, gen; uint8_t deferred; } unit; /* UNIT_END/MARK:
                           the marker run; gen: xr_deferred_query's */
  } u;
} xr_rec;

/* Stream identity: the handle value; the per-thread default stream (NULL
 * under _ptsz entry points, or cudaStreamPerThread) is 0x2, legacy 0. */
static inline uint64_t xr_stream_id(const void *stream, int per_thread) {
  uint64_t s = (uint64_t)(uintptr_t)stream;
  if (__builtin_expect(s > 1, 1)) return s; /* an explicit stream (or 0x2) */
  if (s == 0 && per_thread) return 2;
  if (s == 1) return 0; /* cudaStreamLegacy */
  return s;
}

/* ---- provided by xrank/xrank.c (the background thread calls these) -- */
/* Pop one record; 1 if one was there. Single consumer. */
int xr_ring_pop(xr_rec *out);
uint64_t xr_ring_drops(void);
/* Blocked host threads right now (blocked_ms computed against now_ns). */
size_t xr_blocked_snapshot(xr_threadstate *out, size_t max, uint64_t now_ns);
/* Give a completed completion event back to its device's pool. */
void xr_event_release(void *ev, int device);
/* Whether cross-rank checking runs in this process (not disabled). */
int xr_active(void);
/* Whether every operation enqueued so far on stream (an xr_stream_id of an
 * explicit stream) is complete: 0 yes, 1 no, -1 cannot tell now (a capture
 * is active: the query could invalidate it; or too many streams were
 * destroyed since to tell), -2 the stream was destroyed since (nothing can
 * be asked). For units whose marker their thread has not recorded yet (it
 * went on with host code). gen is the run's u.unit.gen. */
int xr_deferred_query(uint64_t stream, uint32_t gen);

/* ---- the port to the process side (xr_chan.c provides xr_process_port) -- */
typedef struct xr_port {
  /* ncclGetUniqueId POST: host a coordinator, write its record into id. */
  void (*uid_created)(unsigned char *id);
  /* A record was pushed for the first time: start the background thread. */
  void (*need_thread)(void);
  /* ncclCommDestroy/ncclCommFinalize POST (application thread), in two
   * steps around pushing the COMMEND record: end_wait_begin returns a wait
   * slot (0: do not wait - no background thread of this process, the
   * thread is exiting or the process is failing, or no slot free); the
   * record carries it; end_wait blocks until the coordinator confirmed
   * that every verdict about this rank on the comm was delivered and
   * reported, the connection is gone, or max_ns passed. Every slot begun
   * must be waited on (that frees it). */
  uint32_t (*end_wait_begin)(void);
  void (*end_wait)(uint32_t slot, uint64_t max_ns);
  /* Process exit (A2A_EV_PROCESS_EXIT): flush, wait briefly for verdicts. */
  void (*process_exit)(void);
  /* Forked child: forget threads, sockets and the coordinator role. */
  void (*after_fork_child)(void);
} xr_port;

/* The cross-rank analyzer (xrank.c); the runtime runs it after the local
 * analyzers. */
extern A2A_HIDDEN const a2a_analyzer a2a_analyzer_xrank;

/* Register the process side before a2a_core_init (NULL: none). Members may
 * be NULL. */
void xr_set_port(const xr_port *port);
/* The runtime's process side (xrank/xr_chan.c). */
extern A2A_HIDDEN const xr_port xr_process_port;

#ifdef __cplusplus
}
#endif
#endif /* A2A_XRANK_REC_H */
