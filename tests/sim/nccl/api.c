/* api.c - the operation entry points of the simulator's NCCL, their
 * argument checks, communicator queries, buffer/window registration,
 * PreMulSum operators and ncclMemAlloc/ncclMemFree.
 *
 * Checks follow NCCL's ncclEnqueueCheck (src/enqueue.cc) and ArgsCheck
 * (src/misc/argcheck.cc), in the same order: comm (NULL or destroyed ->
 * ncclInvalidArgument), revoked (ncclInvalidUsage), ready (a non-blocking
 * init still in progress -> ncclInvalidArgument), root/peer range, datatype,
 * reduction operator. One deliberate addition: a NULL buffer with count > 0
 * is rejected with ncclInvalidArgument (NCCL checks pointers only with
 * NCCL_CHECK_POINTERS=1; by default the kernel would fault). Then, as in
 * taskAppend, a zero-count collective is dropped while a zero-count send or
 * receive stays a task.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "sim_nccl.h"

static ncclResult_t check_op(struct ncclComm *c, ncclRedOp_t op, ncclDataType_t dt, const char *opname,
                             struct sim_task *t) {
  if ((int)op < 0 || (int)op > (int)ncclMaxRedOp) {
    sim_warn("%s : invalid reduction operation %d", opname, (int)op);
    return ncclInvalidArgument;
  }
  if ((int)op < (int)ncclNumOps) {
    t->op = (int)op;    /* SIM_OP_* follow ncclSum..ncclAvg */
    return ncclSuccess;
  }
  int ix = (int)op - (int)ncclNumOps;
  ncclResult_t r = ncclSuccess;
  pthread_mutex_lock(&c->lock);
  if (ix >= c->nredops || !c->redops[ix].used) {
    sim_warn("%s : reduction operation %d unknown to this communicator", opname, (int)op);
    r = ncclInvalidArgument;
  } else if (c->redops[ix].dtype != dt) {
    sim_warn("%s : reduction operation %d was created for datatype %d, not %d", opname, (int)op,
             (int)c->redops[ix].dtype, (int)dt);
    r = ncclInvalidArgument;
  } else {
    /* Copied now: the operator may be destroyed before the group ends. */
    t->op = SIM_OP_PREMULSUM;
    t->premul = c->redops[ix];
  }
  pthread_mutex_unlock(&c->lock);
  return r;
}

static ncclResult_t enqueue(struct sim_task *t, ncclRedOp_t op, const char *opname) {
  struct ncclComm *c = t->comm;
  ncclResult_t r = sim_comm_check(c, opname);
  if (r != ncclSuccess) goto fail;
  if (atomic_load(&c->revoked)) {
    sim_warn("%s: communicator was revoked", opname);
    r = ncclInvalidUsage;
    goto fail;
  }
  r = sim_comm_ensure_ready(c, opname);
  if (r != ncclSuccess) goto fail;
  if (atomic_load(&c->suspended)) {
    sim_warn("%s: [simulator] communicator %p is suspended (ncclCommSuspend); its GPU memory is released "
             "until ncclCommResume", opname, (void *)c);
    r = ncclInvalidUsage;
    goto fail;
  }
  if (t->peer < 0 || t->peer >= c->nranks) {
    sim_warn("%s : invalid root %d (root should be in the 0..%d range)", opname, t->peer, c->nranks);
    r = ncclInvalidArgument;
    goto fail;
  }
  if ((int)t->dtype < 0 || (int)t->dtype >= (int)ncclNumTypes) {
    sim_warn("%s : invalid type %d", opname, (int)t->dtype);
    r = ncclInvalidArgument;
    goto fail;
  }
  r = check_op(c, op, t->dtype, opname, t);
  if (r != ncclSuccess) goto fail;
  if (t->count > 0) {
    size_t sb, rb;
    sim_task_extent(t, &sb, &rb);
    int s = sb > 0, v = rb > 0;
    if ((s && t->sendbuff == NULL) || (v && t->recvbuff == NULL)) {
      sim_warn("%s : %s argument is NULL", opname, s && t->sendbuff == NULL ? "sendbuff" : "recvbuff");
      r = ncclInvalidArgument;
      goto fail;
    }
  }
  sim_info("%s: sendbuff %p recvbuff %p count %zu datatype %d op %d root %d comm %p [nranks=%d] stream %p",
           opname, t->sendbuff, t->recvbuff, t->count, (int)t->dtype, (int)op, t->peer, (void *)c,
           c->nranks, t->stream);
  if (t->count == 0 && t->kind != SIM_K_SEND && t->kind != SIM_K_RECV) return ncclSuccess;
  r = sim_group_add_task(t);
  /* As NCCL's ncclEnqueueCheck: a non-blocking comm answers with its async
   * state, asked through the exported symbol (a shim sees this call). */
  if (!c->blocking && (r == ncclSuccess || r == ncclInProgress)) {
    ncclResult_t st;
    if (ncclCommGetAsyncError(c, &st) == ncclSuccess) r = st;
  }
  return r;
fail:
  sim_group_error(r);
  return r;
}

static ncclResult_t post(int kind, const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t dt,
                         ncclRedOp_t op, int peer, ncclComm_t comm, cudaStream_t stream, const char *name) {
  struct sim_task t;
  memset(&t, 0, sizeof t);
  t.kind = kind;
  t.comm = comm;
  t.stream = (void *)stream;
  t.sendbuff = sendbuff;
  t.recvbuff = recvbuff;
  t.count = count;
  t.dtype = dt;
  t.peer = peer;
  return enqueue(&t, op, name);
}

SIM_API(ncclResult_t, ncclAllReduce, const void *sendbuff, void *recvbuff, size_t count,
        ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return post(SIM_K_ALLREDUCE, sendbuff, recvbuff, count, datatype, op, 0, comm, stream, "AllReduce");
}

SIM_API(ncclResult_t, ncclBroadcast, const void *sendbuff, void *recvbuff, size_t count,
        ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return post(SIM_K_BROADCAST, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream, "Broadcast");
}

/* Legacy in-place broadcast; NCCL implements it as ncclBroadcast(buff,
 * buff), calling its own exported symbol (a shim sees both). */
SIM_API(ncclResult_t, ncclBcast, void *buff, size_t count, ncclDataType_t datatype, int root,
        ncclComm_t comm, cudaStream_t stream) {
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

SIM_API(ncclResult_t, ncclReduce, const void *sendbuff, void *recvbuff, size_t count,
        ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return post(SIM_K_REDUCE, sendbuff, recvbuff, count, datatype, op, root, comm, stream, "Reduce");
}

SIM_API(ncclResult_t, ncclAllGather, const void *sendbuff, void *recvbuff, size_t sendcount,
        ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return post(SIM_K_ALLGATHER, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, comm, stream, "AllGather");
}

SIM_API(ncclResult_t, ncclReduceScatter, const void *sendbuff, void *recvbuff, size_t recvcount,
        ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return post(SIM_K_REDUCESCATTER, sendbuff, recvbuff, recvcount, datatype, op, 0, comm, stream,
              "ReduceScatter");
}

SIM_API(ncclResult_t, ncclAlltoAll, const void *sendbuff, void *recvbuff, size_t count,
        ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return post(SIM_K_ALLTOALL, sendbuff, recvbuff, count, datatype, ncclSum, 0, comm, stream, "AlltoAll");
}

SIM_API(ncclResult_t, ncclGather, const void *sendbuff, void *recvbuff, size_t count,
        ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return post(SIM_K_GATHER, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream, "Gather");
}

SIM_API(ncclResult_t, ncclScatter, const void *sendbuff, void *recvbuff, size_t count,
        ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return post(SIM_K_SCATTER, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream, "Scatter");
}

SIM_API(ncclResult_t, ncclSend, const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
        ncclComm_t comm, cudaStream_t stream) {
  return post(SIM_K_SEND, sendbuff, NULL, count, datatype, ncclSum, peer, comm, stream, "Send");
}

SIM_API(ncclResult_t, ncclRecv, void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
        ncclComm_t comm, cudaStream_t stream) {
  return post(SIM_K_RECV, NULL, recvbuff, count, datatype, ncclSum, peer, comm, stream, "Recv");
}

/* ---- queries ------------------------------------------------------------------ */
static ncclResult_t query_prologue(const struct ncclComm *c, const void *out, const char *op,
                                   const char *what) {
  ncclResult_t r = sim_comm_check(c, op);
  if (r != ncclSuccess) return r;
  if (out == NULL) {
    sim_warn("%s : %s argument is NULL", op, what);
    return ncclInvalidArgument;
  }
  return sim_comm_ensure_ready((struct ncclComm *)c, op);
}

SIM_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int *count) {
  ncclResult_t r = query_prologue(comm, count, "CommCount", "count");
  if (r == ncclSuccess) *count = comm->nranks;
  return r;
}

SIM_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int *device) {
  ncclResult_t r = query_prologue(comm, device, "CommCuDevice", "devid");
  if (r == ncclSuccess) *device = comm->cuda_dev;
  return r;
}

SIM_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int *rank) {
  ncclResult_t r = query_prologue(comm, rank, "CommUserRank", "rank");
  if (r == ncclSuccess) *rank = comm->rank;
  return r;
}

/* ---- registration (bookkeeping only: the simulator needs no IPC handles) -------- */
struct sim_window { uint64_t magic; struct ncclComm *comm; void *buff; size_t size; int flags; };
#define SIM_WIN_MAGIC 0x57494e444f57ULL

SIM_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void *buff, size_t size, void **handle) {
  ncclResult_t r = query_prologue(comm, handle, "ncclCommRegister", "handle");
  if (r != ncclSuccess) return r;
  if (buff == NULL || size == 0) {
    sim_warn("ncclCommRegister : invalid buffer %p size %zu", buff, size);
    return ncclInvalidArgument;
  }
  struct sim_reg *g = calloc(1, sizeof *g);
  if (!g) return ncclSystemError;
  g->buff = buff;
  g->size = size;
  pthread_mutex_lock(&comm->lock);
  g->next = comm->regs;
  comm->regs = g;
  pthread_mutex_unlock(&comm->lock);
  *handle = g;
  return ncclSuccess;
}

SIM_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void *handle) {
  ncclResult_t r = sim_comm_check(comm, "ncclCommDeregister");
  if (r != ncclSuccess) return r;
  pthread_mutex_lock(&comm->lock);
  struct sim_reg **pp = &comm->regs;
  while (*pp && *pp != handle) pp = &(*pp)->next;
  struct sim_reg *g = *pp;
  if (g) *pp = g->next;
  pthread_mutex_unlock(&comm->lock);
  if (!g) {
    sim_warn("ncclCommDeregister : handle %p is not registered with comm %p", handle, (void *)comm);
    return ncclInvalidArgument;
  }
  free(g);
  return ncclSuccess;
}

SIM_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win,
        int winFlags) {
  ncclResult_t r = query_prologue(comm, win, "ncclCommWindowRegister", "win");
  if (r != ncclSuccess) return r;
  if (buff == NULL || size == 0) {
    sim_warn("ncclCommWindowRegister : invalid buffer %p size %zu", buff, size);
    return ncclInvalidArgument;
  }
  struct sim_window *w = calloc(1, sizeof *w);
  if (!w) return ncclSystemError;
  *w = (struct sim_window){SIM_WIN_MAGIC, comm, buff, size, winFlags};
  *win = (ncclWindow_t)(void *)w;
  return ncclSuccess;
}

SIM_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win) {
  ncclResult_t r = sim_comm_check(comm, "ncclCommWindowDeregister");
  if (r != ncclSuccess) return r;
  struct sim_window *w = (struct sim_window *)(void *)win;
  if (w == NULL || w->magic != SIM_WIN_MAGIC || w->comm != comm) {
    sim_warn("ncclCommWindowDeregister : invalid window %p", (void *)win);
    return ncclInvalidArgument;
  }
  w->magic = 0;
  free(w);
  return ncclSuccess;
}

/* NCCL answers the registered user pointer of a window (NULL, with
 * success, on a communicator that gave no window). */
SIM_API(ncclResult_t, ncclWinGetUserPtr, ncclComm_t comm, ncclWindow_t win, void **outUserPtr) {
  ncclResult_t r = sim_comm_check(comm, "ncclWinGetUserPtr");
  if (r != ncclSuccess) return r;
  if (outUserPtr == NULL) {
    sim_warn("ncclWinGetUserPtr : outUserPtr argument is NULL");
    return ncclInvalidArgument;
  }
  struct sim_window *w = (struct sim_window *)(void *)win;
  if (w == NULL) {
    sim_warn("ncclWinGetUserPtr : win argument is NULL");
    return ncclInvalidArgument;
  }
  if (w->magic != SIM_WIN_MAGIC || w->comm != comm) {
    sim_warn("ncclWinGetUserPtr : invalid window %p", (void *)win);
    return ncclInvalidArgument;
  }
  *outUserPtr = w->buff;
  return ncclSuccess;
}

/* ---- PreMulSum operators ------------------------------------------------------ */
SIM_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
        ncclScalarResidence_t residence, ncclComm_t comm) {
  ncclResult_t r = sim_comm_check(comm, "ncclRedOpCreatePreMulSum");
  if (r == ncclSuccess) r = sim_comm_ensure_ready(comm, "ncclRedOpCreatePreMulSum");
  if (r != ncclSuccess) return r;
  if (op == NULL || scalar == NULL) {
    sim_warn("ncclRedOpCreatePreMulSum : %s argument is NULL", op == NULL ? "op" : "scalar");
    return ncclInvalidArgument;
  }
  if ((int)datatype < 0 || (int)datatype >= (int)ncclNumTypes) {
    sim_warn("ncclRedOpCreatePreMulSum : invalid type %d", (int)datatype);
    return ncclInvalidArgument;
  }
  if (residence != ncclScalarDevice && residence != ncclScalarHostImmediate) {
    sim_warn("ncclRedOpCreatePreMulSum : invalid residence %d", (int)residence);
    return ncclInvalidArgument;
  }
  pthread_mutex_lock(&comm->lock);
  int ix = 0;
  while (ix < comm->nredops && comm->redops[ix].used) ix++;
  if (ix == comm->nredops) {
    int cap = comm->nredops ? 2 * comm->nredops : 4;
    struct sim_redop *n = realloc(comm->redops, (size_t)cap * sizeof *n);
    if (!n) { pthread_mutex_unlock(&comm->lock); return ncclSystemError; }
    memset(n + comm->nredops, 0, (size_t)(cap - comm->nredops) * sizeof *n);
    comm->redops = n;
    comm->nredops = cap;
  }
  struct sim_redop *o = &comm->redops[ix];
  memset(o, 0, sizeof *o);
  o->used = 1;
  o->dtype = datatype;
  o->residence = residence;
  if (residence == ncclScalarHostImmediate) memcpy(&o->imm, scalar, sim_type_size(datatype));
  else o->dev_scalar = scalar;
  pthread_mutex_unlock(&comm->lock);
  *op = (ncclRedOp_t)((int)ncclNumOps + ix);
  return ncclSuccess;
}

SIM_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm) {
  ncclResult_t r = sim_comm_check(comm, "ncclRedOpDestroy");
  if (r != ncclSuccess) return r;
  if ((int)op < (int)ncclNumOps) {
    sim_warn("ncclRedOpDestroy : operator is a NCCL builtin.");
    return ncclInvalidArgument;
  }
  int ix = (int)op - (int)ncclNumOps;
  pthread_mutex_lock(&comm->lock);
  if (ix >= comm->nredops || !comm->redops[ix].used) {
    pthread_mutex_unlock(&comm->lock);
    sim_warn("ncclRedOpDestroy : operator is unknown to this communicator.");
    return ncclInvalidArgument;
  }
  comm->redops[ix].used = 0;
  pthread_mutex_unlock(&comm->lock);
  return ncclSuccess;
}

/* ---- memory ------------------------------------------------------------------- */
SIM_API(ncclResult_t, ncclMemAlloc, void **ptr, size_t size) {
  if (ptr == NULL || size == 0) {
    sim_warn("ncclMemAlloc : invalid arguments ptr %p size %zu", (void *)ptr, size);
    return ncclInvalidArgument;
  }
  int err = a2asim_device_alloc(ptr, size, a2asim_get_device());
  if (err != 0) {
    sim_warn("Cuda failure %d in ncclMemAlloc", err);
    return ncclUnhandledCudaError;
  }
  return ncclSuccess;
}

SIM_API(ncclResult_t, ncclMemFree, void *ptr) {
  if (ptr == NULL) return ncclSuccess;
  int err = a2asim_device_free(ptr);
  if (err != 0) {
    sim_warn("Cuda failure %d in ncclMemFree", err);
    return ncclUnhandledCudaError;
  }
  return ncclSuccess;
}
