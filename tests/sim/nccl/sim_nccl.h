/* sim_nccl.h - internal header of the CPU simulator's NCCL (libnccl.so.2).
 *
 * The library is grouped by file; each section below lists what one .c file
 * defines:
 *   api.c      exported API entry points (pncclX strong, ncclX weak alias),
 *              argument checks, communicator queries, registration, redops
 *   bootstrap.c unique ids, the per-communicator shared-memory segment,
 *              rendezvous, host-side allgather board, stale-segment sweep
 *   comm.c     communicator lifecycle: init (blocking, non-blocking, in a
 *              group), split, shrink, finalize, destroy, abort, revoke
 *   group.c    thread-local group state, task collection, launch of one
 *              stream item per communicator, per-communicator ordering,
 *              persistent plans of captured groups (CUDA graphs)
 *   xfer.c     channels (bounded step FIFOs in shared memory), the progress
 *              engine, execution of p2p batches and collectives
 *   reduce.c   datatype sizes, conversions (half, bfloat16, fp8), reductions
 *   debug.c    NCCL_DEBUG-style logging, error strings, last error, version
 *   devapi.c   host side of the device API: properties, teams, requirement sizes
 *   param.c    the ncclParam* API (an empty parameter registry)
 *   unmodelled.c the table of exported functions the simulator does not model
 *
 * Nothing here calls a cuda* function: the simulated runtime is reached only
 * through tests/sim/include/a2asim_internal.h, so - as with real NCCL, which
 * links cudart statically - this library's CUDA work is invisible to a
 * preloaded shim.
 */
#ifndef SIM_NCCL_H
#define SIM_NCCL_H

#include <nccl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "a2asim_internal.h"
#include "nccl_v230.h"

/* Everything declared from here on is internal to libnccl.so.2: only the
 * functions of nccl.h (declared above, default visibility) are exported. */
#pragma GCC visibility push(hidden)

/* PMPI-style export as in real NCCL (src/include/core.h NCCL_API): the strong
 * symbol is pncclX, ncclX is a weak alias of it, so a preloaded ncclX can
 * forward to pncclX. nccl.h declares both, so the definition is checked
 * against the real prototypes. */
#define SIM_API(ret, name, ...)                                              \
  __attribute__((visibility("default"))) ret name(__VA_ARGS__)             \
      __attribute__((weak, alias("p" #name)));                               \
  __attribute__((visibility("default"))) ret p##name(__VA_ARGS__)

/* ---- debug.c ---------------------------------------------------------- */
enum { SIM_LOG_NONE = 0, SIM_LOG_VERSION, SIM_LOG_WARN, SIM_LOG_INFO };
int sim_log_level(void);
void sim_log_reset(void);
/* WARN also records the message as the last error (ncclGetLastError). */
void sim_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sim_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *sim_last_error(void);
/* "NCCL version 2.30.7+sim" once per process with NCCL_DEBUG>=VERSION, as
 * NCCL prints it when rank 0 of a communicator initializes. */
void sim_version_banner(void);

/* ---- reduce.c --------------------------------------------------------- */
size_t sim_type_size(ncclDataType_t dt);      /* 0 for an invalid type */
const char *sim_type_name(ncclDataType_t dt);
/* Reduction operations (ncclSum..ncclAvg, then PreMulSum). */
enum { SIM_OP_SUM = 0, SIM_OP_PROD, SIM_OP_MAX, SIM_OP_MIN, SIM_OP_AVG,
       SIM_OP_PREMULSUM };
/* acc[i] = op(acc[i], x[i]) for count elements of dt, with the result
 * rounded to dt after each step (as NCCL's per-element device reduction).
 * op is SUM, PROD, MAX or MIN (AVG and PREMULSUM reduce with SUM). */
void sim_reduce(ncclDataType_t dt, int op, void *acc, const void *x, size_t count);
/* dst[i] = src[i] * scalar (scalar holds one element of dt). */
void sim_scale(ncclDataType_t dt, void *dst, const void *src, size_t count,
               const void *scalar);
/* x[i] = x[i] / n (integer division for integer types). */
void sim_divide(ncclDataType_t dt, void *x, size_t count, int n);
/* Stores 1/n as one element of dt in out (for float AVG as PreMulSum). */
void sim_inverse(ncclDataType_t dt, int n, void *out);
int sim_type_is_float(ncclDataType_t dt);
/* Exposed for the self-tests' references. */
float sim_half_to_float(uint16_t h);
uint16_t sim_float_to_half(float f);
float sim_bf16_to_float(uint16_t h);
uint16_t sim_float_to_bf16(float f);
float sim_fp8_to_float(uint8_t v, int e5m2);
uint8_t sim_float_to_fp8(float f, int e5m2);

/* ---- bootstrap.c: the shared-memory segment of one communicator ------- */
#define SIM_NSTEPS 8                    /* NCCL_STEPS: slots per channel */
#define SIM_ID_MAGIC_FIXED 0x0280028002800280ULL  /* NCCL_COMM_ID magic */

/* What a collective step carries so that the receiver can tell that both
 * ranks execute the same operation: what decides NCCL's data movement (the
 * collective, its root and bytes). Not the datatype nor the reduction: each
 * rank reduces what it receives as its own type, with its own operation. */
struct sim_desc {
  int32_t kind;          /* enum sim_kind */
  int32_t dtype;         /* always -1 */
  int32_t root;
  int32_t pad;
  uint64_t count;        /* bytes */
};

/* One direction of one pair: a FIFO of SIM_NSTEPS slots of `step` bytes,
 * written by the sender, read by the receiver (NCCL's simple protocol). */
struct sim_chan {
  _Atomic uint64_t head;        /* steps posted by the sender */
  char pad0[56];
  _Atomic uint64_t tail;        /* steps consumed by the receiver */
  char pad1[56];
  _Atomic uint32_t send_conn;   /* p2p: the sender executed an op on it */
  _Atomic uint32_t recv_conn;   /* p2p: the receiver executed an op on it */
  char pad2[56];
  uint64_t size[SIM_NSTEPS];    /* bytes the sender put in each slot */
  /* Cost model (a2asim_model_time, 0 when off): the device-timeline time
   * of each side's connection [0 send, 1 receive], at which the sender
   * posted each slot, and at which the receiver consumed it. Each is
   * written before the release store that publishes it (conn flag, head,
   * tail), so a peer that sees the step sees its time. */
  uint64_t conn_t[2];
  uint64_t post_t[SIM_NSTEPS];
  uint64_t take_t[SIM_NSTEPS];
  struct sim_desc desc[SIM_NSTEPS];
  /* followed by SIM_NSTEPS * step bytes of slot data */
};

struct sim_rankinfo {
  _Atomic int32_t claimed;      /* 0 -> 1 by the rank that owns the slot */
  int32_t pid;
  int32_t dev;
  int32_t pad;
  uint64_t hosthash;
};

struct sim_board_slot {         /* host-side allgather (split) */
  _Atomic uint64_t seq;
  int64_t v[3];
};

#define SIM_SHM_MAGIC 0x6132617369636e6cULL
#define SIM_BELL_STRIDE 16              /* uint32 words: one cache line each */
struct sim_shm {
  uint64_t magic;
  _Atomic int32_t nranks;       /* CAS 0 -> n by every rank; must agree */
  _Atomic int32_t step;         /* CAS 0 -> step; must agree */
  _Atomic uint32_t arrived;     /* futex: ranks that attached */
  _Atomic uint32_t board_bell;  /* futex: bumped on every board post */
  _Atomic int32_t creator_pid;
  int32_t pad;
  /* followed by (offsets in struct sim_seg):
   *   struct sim_rankinfo ranks[n]
   *   struct sim_board_slot board[2][n]
   *   doorbells: one futex word per rank, a cache line apart
   *   channels: p2p[s][r] then coll[s][r] */
};

/* A mapping of a segment by one rank. */
struct sim_seg {
  struct sim_shm *shm;
  size_t size;
  int nranks;
  size_t step;                  /* slot size in bytes */
  size_t chan_stride;
  struct sim_rankinfo *ranks;
  struct sim_board_slot *board;
  _Atomic uint32_t *bell;       /* rank r's doorbell: bell[r * SIM_BELL_STRIDE] */
  char *chans;
  char name[64];
};

uint64_t sim_hash(const void *p, size_t n, uint64_t h);  /* FNV-1a 64 */
#define SIM_HASH_INIT 0xcbf29ce484222325ULL
ncclResult_t sim_make_unique_id(ncclUniqueId *id);
/* Opens/creates and maps the segment named after key for nranks ranks. */
ncclResult_t sim_seg_attach(struct sim_seg *seg, uint64_t key, int nranks);
void sim_seg_detach(struct sim_seg *seg);
void sim_seg_sweep(void);       /* unlink segments whose ranks all died */
struct sim_chan *sim_chan_p2p(struct sim_seg *seg, int src, int dst);
struct sim_chan *sim_chan_coll(struct sim_seg *seg, int src, int dst);
static inline char *sim_chan_data(struct sim_seg *seg, struct sim_chan *c) {
  (void)seg;
  return (char *)c + ((sizeof(struct sim_chan) + 63) & ~(size_t)63);
}
/* futex helpers on shared (non-private) words */
/* Returns 1 if it really slept (woken or timed out), 0 if *w != val. */
int sim_futex_wait(_Atomic uint32_t *w, uint32_t val, int timeout_ms);
void sim_futex_wake(_Atomic uint32_t *w);

/* ---- comm.c ------------------------------------------------------------ */
#define SIM_COMM_LIVE 0x4c4956454e43434cULL
#define SIM_COMM_DEAD 0x444541444e43434cULL

struct sim_redop {
  int used;
  ncclDataType_t dtype;
  int residence;                /* ncclScalarResidence_t */
  const void *dev_scalar;       /* ncclScalarDevice: read at execution */
  uint64_t imm;                 /* ncclScalarHostImmediate: the value */
};

struct sim_reg { struct sim_reg *next; void *buff; size_t size; };

struct ncclComm {
  uint64_t start_magic;
  int rank, nranks, cuda_dev;
  int blocking;
  uint64_t key;                 /* names the communicator across ranks */
  struct sim_seg seg;
  int seg_mapped;
  _Atomic int async;            /* ncclResult_t: InProgress during init */
  /* Non-blocking split/shrink jobs of this parent still running, and the
   * first error among them: the parent gets its result once, when the
   * last ends (sim_job.busy_parent). */
  _Atomic int busy_jobs, busy_err;
  _Atomic int aborted;          /* in-flight and queued work gives up */
  _Atomic int revoked;
  _Atomic int suspended;        /* ncclCommSuspend(NCCL_SUSPEND_MEM) */
  int finalized;
  /* ordering of the operations of this communicator */
  _Atomic uint64_t posted;      /* tickets handed out (host side) */
  _Atomic uint32_t executed;    /* futex: tickets completed (low 32 bits) */
  _Atomic uint64_t executed64;
  _Atomic int refs;             /* the comm itself + one per queued item,
                                   captured plan and queued graph launch */
  _Atomic uint32_t graph_plans; /* futex: plans held by CUDA graphs */
  uint32_t split_seq, shrink_seq;
  /* Board exchanges (board_allgather): tickets taken by the issuing thread
   * in call order (board_seq), run in ticket order (board_done: the last
   * one finished) - a non-blocking split's job thread may start while an
   * earlier split's exchange is still running. */
  uint32_t board_seq;
  _Atomic uint32_t board_done;
  pthread_mutex_t lock;         /* redops, registrations */
  struct sim_redop *redops;
  int nredops;
  struct sim_reg *regs;
  char comm_name[64];
  struct ncclComm *tomb_next;   /* list of destroyed comms (comm.c) */
  uint64_t end_magic;
};

/* Checks comm is a live communicator: NULL -> ncclInvalidArgument,
 * destroyed/garbage -> ncclInvalidArgument (with a WARN). */
ncclResult_t sim_comm_check(const struct ncclComm *comm, const char *opname);
/* NCCL's ncclCommEnsureReady: a non-blocking init in progress is an
 * ncclInvalidArgument; a failed async state is returned as is. */
ncclResult_t sim_comm_ensure_ready(struct ncclComm *comm, const char *opname);
void sim_comm_ref(struct ncclComm *comm);
void sim_comm_unref(struct ncclComm *comm);
void sim_comm_wait_idle(struct ncclComm *comm);
/* Waits until no CUDA graph holds a captured plan of comm (NCCL's
 * commDestroySync polls until every graph capturing the comm died). */
void sim_comm_wait_graphs(struct ncclComm *comm);

/* A deferred host-side job (init, split), run by ncclGroupEnd in its own
 * thread so that several ranks driven by one thread can meet. */
struct sim_job {
  ncclResult_t (*fn)(struct sim_job *job);
  struct ncclComm *comm;        /* the communicator being created */
  struct ncclComm *parent;      /* split/shrink */
  int blocking;
  int color, key;                /* split */
  uint32_t board_ticket;         /* split: its exchange on the parent's board */
  ncclResult_t result;
  /* Split and shrink: NCCL stores the child in the application's *newcomm
   * only when the init job ends (init.cc: "*newcomm should be
   * NCCL_COMM_NULL until comm split fully complete") - after the call for a
   * non-blocking one, at the outermost ncclGroupEnd inside a group. */
  ncclComm_t *out;
  /* A non-blocking split's or shrink's parent: NCCL runs the job as its
   * parent's group job, so the parent reads ncclInProgress until the job
   * ends and then its result (group.cc: ncclCommSetAsyncError(job->comm,
   * ...)); meanwhile NCCL refuses the parent's use. */
  struct ncclComm *busy_parent;
};
ncclResult_t sim_job_init(struct sim_job *job);   /* rendezvous */
/* A job that will not run gives back its board ticket (comm.c). */
void sim_board_skip(struct ncclComm *c, uint32_t ticket);

/* ---- group.c ----------------------------------------------------------- */
enum sim_kind {
  SIM_K_SEND = 1, SIM_K_RECV, SIM_K_ALLREDUCE, SIM_K_BROADCAST, SIM_K_REDUCE,
  SIM_K_ALLGATHER, SIM_K_REDUCESCATTER, SIM_K_ALLTOALL, SIM_K_GATHER,
  SIM_K_SCATTER
};
struct sim_task {
  int kind;
  struct ncclComm *comm;
  void *stream;
  const void *sendbuff;
  void *recvbuff;
  size_t count;
  ncclDataType_t dtype;
  int peer;                     /* send/recv peer, or root */
  int op;                       /* SIM_OP_* */
  struct sim_redop premul;      /* snapshot when op is PREMULSUM */
  unsigned long long capture;   /* id of the stream's active CUDA graph
                                   capture at the call, 0 if none */
};
/* Adds a checked task to the thread's group (an implicit group of one when
 * none is open: launched before returning). */
ncclResult_t sim_group_add_task(const struct sim_task *t);
/* Adds a job; outside a group it runs now (blocking) or in a thread. */
ncclResult_t sim_group_add_job(struct sim_job *job);
int sim_group_depth(void);
void sim_group_error(ncclResult_t r);   /* ncclGroupErrCheck */
ncclResult_t sim_group_start(void);
ncclResult_t sim_group_end(int simulate, float *est_us);

/* ---- xfer.c ------------------------------------------------------------ */
/* Executes the tasks of one communicator launched together (one stream
 * item): collectives in posting order, then all point-to-point tasks
 * concurrently. Blocks as long as peers do not match (a real hang). Returns
 * when done or when the communicator is aborted. */
void sim_execute(struct ncclComm *comm, const struct sim_task *tasks, int ntasks);
/* Bytes an operation reads from sendbuff and writes to recvbuff on this
 * rank (0 where it does not touch that buffer), as its count implies. */
void sim_task_extent(const struct sim_task *t, size_t *send_bytes, size_t *recv_bytes);

#pragma GCC visibility pop
#endif /* SIM_NCCL_H */
