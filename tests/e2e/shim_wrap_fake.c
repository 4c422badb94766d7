/* shim_wrap_fake.c - a fake NCCL + CUDA runtime for shim_wrap_test.c,
 * loaded with dlopen(RTLD_LOCAL) (found by the shim's loaded-object scan).
 *
 * It behaves like real NCCL where the wrappers depend on it: every API
 * function exists as pnccl<X> (strong) and ncclX (weak alias), and
 * pncclBcast forwards to the exported ncclBroadcast through the PLT, so in
 * a process that also defines ncclBroadcast (the wrappers) the inner call
 * lands there - the case the depth guard exists for. Functions record what
 * they saw (errno at entry, call counts) in `fake_state` for the test. */
#include <errno.h>
#include <stddef.h>

typedef struct fake_state {
  int send_calls, broadcast_calls, bcast_calls;
  int errno_at_entry;        /* errno the last ncclSend/cudaMalloc saw */
  int last_set_device;
  int current_device;        /* what cudaGetDevice answers (the context's) */
  int get_device_calls, get_device_fails;
  int last_error;            /* the thread's CUDA "last error" */
  int group_start_fail;      /* nonzero: what ncclGroupStart returns */
  int group_inner;           /* the group calls poll an async error (PLT) */
  int group_calls;           /* group calls made (any of the three) */
  /* The arguments the last ncclSend or ncclRecv got. */
  const void *p2p_buff;
  size_t p2p_count;
  int p2p_dtype, p2p_peer;
  void *p2p_comm, *p2p_stream;
  /* The arguments the last ncclBroadcast, ncclAllReduce or ncclReduce
   * got (op or root -1 when it takes none). */
  const void *coll_send;
  void *coll_recv;
  size_t coll_count;
  int coll_dtype, coll_op, coll_root;
  void *coll_comm, *coll_stream;
} fake_state;

fake_state fake_state_v;
fake_state *fake_state_get(void);
fake_state *fake_state_get(void) { return &fake_state_v; }

#define ALIAS(name) __attribute__((weak, alias("p" #name)))

typedef void *comm_t;

int pncclSend(const void *b, size_t n, int dt, int peer, comm_t comm, void *stream);
int ncclSend(const void *b, size_t n, int dt, int peer, comm_t comm, void *stream) ALIAS(ncclSend);
static void p2p_args(const void *b, size_t n, int dt, int peer, comm_t comm, void *stream)
{
  fake_state_v.p2p_buff = b;
  fake_state_v.p2p_count = n;
  fake_state_v.p2p_dtype = dt;
  fake_state_v.p2p_peer = peer;
  fake_state_v.p2p_comm = comm;
  fake_state_v.p2p_stream = stream;
}

int pncclSend(const void *b, size_t n, int dt, int peer, comm_t comm, void *stream)
{
  p2p_args(b, n, dt, peer, comm, stream);
  fake_state_v.errno_at_entry = errno;
  fake_state_v.send_calls++;
  errno = 1234; /* a library may leave errno changed: the app must see this */
  return comm ? 0 : 4;
}

int pncclRecv(void *b, size_t n, int dt, int peer, comm_t comm, void *stream);
int ncclRecv(void *b, size_t n, int dt, int peer, comm_t comm, void *stream) ALIAS(ncclRecv);
/* Communicator 0x7: a non-blocking one that accepted the call
 * (ncclInProgress). */
int pncclRecv(void *b, size_t n, int dt, int peer, comm_t comm, void *stream)
{
  p2p_args(b, n, dt, peer, comm, stream);
  return comm == (comm_t)0x7 ? 7 : comm ? 0 : 4;
}

int pncclBroadcast(const void *s, void *r, size_t n, int dt, int root, comm_t comm, void *stream);
int ncclBroadcast(const void *s, void *r, size_t n, int dt, int root, comm_t comm, void *stream)
    ALIAS(ncclBroadcast);
static int coll_args(const void *s, void *r, size_t n, int dt, int op, int root, comm_t comm,
                     void *stream)
{
  fake_state_v.coll_send = s;
  fake_state_v.coll_recv = r;
  fake_state_v.coll_count = n;
  fake_state_v.coll_dtype = dt;
  fake_state_v.coll_op = op;
  fake_state_v.coll_root = root;
  fake_state_v.coll_comm = comm;
  fake_state_v.coll_stream = stream;
  return 0;
}

int pncclBroadcast(const void *s, void *r, size_t n, int dt, int root, comm_t comm, void *stream)
{
  fake_state_v.broadcast_calls++;
  return coll_args(s, r, n, dt, -1, root, comm, stream);
}

int pncclAllReduce(const void *s, void *r, size_t n, int dt, int op, comm_t comm, void *stream);
int ncclAllReduce(const void *s, void *r, size_t n, int dt, int op, comm_t comm, void *stream)
    ALIAS(ncclAllReduce);
int pncclAllReduce(const void *s, void *r, size_t n, int dt, int op, comm_t comm, void *stream)
{
  return coll_args(s, r, n, dt, op, -1, comm, stream);
}

int pncclReduce(const void *s, void *r, size_t n, int dt, int op, int root, comm_t comm,
                void *stream);
int ncclReduce(const void *s, void *r, size_t n, int dt, int op, int root, comm_t comm,
               void *stream) ALIAS(ncclReduce);
int pncclReduce(const void *s, void *r, size_t n, int dt, int op, int root, comm_t comm,
                void *stream)
{
  return coll_args(s, r, n, dt, op, root, comm, stream);
}

int pncclBcast(void *b, size_t n, int dt, int root, comm_t comm, void *stream);
int ncclBcast(void *b, size_t n, int dt, int root, comm_t comm, void *stream) ALIAS(ncclBcast);
int pncclBcast(void *b, size_t n, int dt, int root, comm_t comm, void *stream)
{
  fake_state_v.bcast_calls++;
  return ncclBroadcast(b, b, n, dt, root, comm, stream); /* through the PLT, like NCCL */
}

int pncclCommInitAll(comm_t *comms, int ndev, const int *devlist);
int ncclCommInitAll(comm_t *comms, int ndev, const int *devlist) ALIAS(ncclCommInitAll);
int pncclCommInitAll(comm_t *comms, int ndev, const int *devlist)
{
  for (int i = 0; i < ndev; i++) comms[i] = (comm_t)(size_t)(0x1000 + i);
  return 0;
}

int pncclCommSplit(comm_t comm, int color, int key, comm_t *newcomm, void *config);
int ncclCommSplit(comm_t comm, int color, int key, comm_t *newcomm, void *config) ALIAS(ncclCommSplit);
int pncclCommSplit(comm_t comm, int color, int key, comm_t *newcomm, void *config)
{
  *newcomm = color < 0 ? NULL : (comm_t)(size_t)0x2000;
  return 0;
}

int pncclCommCount(comm_t comm, int *n);
int ncclCommCount(comm_t comm, int *n) ALIAS(ncclCommCount);
int pncclCommCount(comm_t comm, int *n)
{
  fake_state_v.errno_at_entry = errno;
  errno = 1235; /* the application must see what the library left */
  if (!comm) return 4; /* ncclInvalidArgument */
  *n = 3;
  return 0;
}
int pncclCommUserRank(comm_t comm, int *r);
int ncclCommUserRank(comm_t comm, int *r) ALIAS(ncclCommUserRank);
int ncclCommGetAsyncError(comm_t comm, int *e);
int pncclCommUserRank(comm_t comm, int *r)
{
  /* NCCL's ncclCommEnsureReady: the async error, through the PLT (it
   * reaches the wrapper, which must pass it through). */
  int e;
  (void)ncclCommGetAsyncError(comm, &e);
  *r = 1;
  return 0;
}
int pncclCommCuDevice(comm_t comm, int *d);
int ncclCommCuDevice(comm_t comm, int *d) ALIAS(ncclCommCuDevice);
int pncclCommCuDevice(comm_t comm, int *d) { *d = 5; return 0; }

/* The asynchronous error of comm: its address' low three bits. */
int pncclCommGetAsyncError(comm_t comm, int *e);
int ncclCommGetAsyncError(comm_t comm, int *e) ALIAS(ncclCommGetAsyncError);
int pncclCommGetAsyncError(comm_t comm, int *e)
{
  fake_state_v.errno_at_entry = errno;
  errno = 1236;
  if (!comm || !e) return 4;
  *e = (int)((size_t)comm & 7);
  return 0;
}

/* The group calls record errno at entry and leave it changed (1239); with
 * group_inner set each polls comm 0x5000's async error through the PLT
 * (reaching the wrapper, which must pass it through). */
static int fake_group_call(int result)
{
  fake_state_v.group_calls++;
  int e0 = errno, e;
  if (fake_state_v.group_inner) (void)ncclCommGetAsyncError((comm_t)0x5000, &e);
  fake_state_v.errno_at_entry = e0;
  errno = 1239;
  return result;
}
int pncclGroupStart(void);
int ncclGroupStart(void) ALIAS(ncclGroupStart);
int pncclGroupStart(void) { return fake_group_call(fake_state_v.group_start_fail); }
int pncclGroupEnd(void);
int ncclGroupEnd(void) ALIAS(ncclGroupEnd);
int pncclGroupEnd(void) { return fake_group_call(0); }
int pncclGroupSimulateEnd(void *simInfo);
int ncclGroupSimulateEnd(void *simInfo) ALIAS(ncclGroupSimulateEnd);
int pncclGroupSimulateEnd(void *simInfo) { return fake_group_call(0); }

/* ---- CUDA runtime ---- */
typedef struct { unsigned x, y, z; } fake_dim3;

int cudaLaunchKernel(const void *f, fake_dim3 g, fake_dim3 b, void **args, size_t shmem, void *stream);
int cudaLaunchKernel(const void *f, fake_dim3 g, fake_dim3 b, void **args, size_t shmem, void *stream)
{
  return 0;
}

int cudaSetDevice(int device);
int cudaSetDevice(int device)
{
  if (device < 0 || device > 7) return 101; /* cudaErrorInvalidDevice */
  fake_state_v.last_set_device = fake_state_v.current_device = device;
  return 0;
}

int cudaGetDevice(int *device);
int cudaGetDevice(int *device)
{
  fake_state_v.get_device_calls++;
  if (fake_state_v.get_device_fails) return fake_state_v.last_error = 35;
  *device = fake_state_v.current_device;
  return 0;
}

int cudaPeekAtLastError(void);
int cudaPeekAtLastError(void) { return fake_state_v.last_error; }
int cudaGetLastError(void);
int cudaGetLastError(void)
{
  int e = fake_state_v.last_error;
  fake_state_v.last_error = 0;
  return e;
}

/* The polling queries: stream 0x600 and event 0xe600 are not ready
 * (cudaErrorNotReady, 600); each leaves errno changed. */
int cudaStreamQuery(void *stream);
int cudaStreamQuery(void *stream)
{
  fake_state_v.errno_at_entry = errno;
  errno = 1237;
  return stream == (void *)0x600 ? 600 : 0;
}
int cudaStreamQuery_ptsz(void *stream);
int cudaStreamQuery_ptsz(void *stream) { return cudaStreamQuery(stream); }
int cudaEventQuery(void *event);
int cudaEventQuery(void *event)
{
  fake_state_v.errno_at_entry = errno;
  errno = 1238;
  return event == (void *)0xe600 ? 600 : 0;
}

int cudaMalloc(void **p, size_t size);
int cudaMalloc(void **p, size_t size)
{
  static char arena[4096];
  fake_state_v.errno_at_entry = errno;
  if (size > sizeof arena) return 2; /* cudaErrorMemoryAllocation */
  *p = arena;
  return 0;
}
