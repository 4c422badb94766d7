/* unmodelled.c - the exported NCCL functions the simulator does not model,
 * in one table.
 *
 * Rule (docs/simulator-nccl.md "Export rule"): libnccl.so.2 exports every
 * function NCCL 2.30.7 exports (tests/sim/nccl/exports-2.30.7.txt, checked
 * by ctest sim.nccl.exports). A function the simulator cannot model fails
 * the way NCCL fails on a system without the feature, or on misuse: after
 * NCCL's own argument checks, the result code and WARN text of the table
 * below ("NCCL WARN <function>: <text>" under NCCL_DEBUG=WARN, and
 * ncclGetLastError returns it). Where NCCL 2.30.7 has such a path the text
 * is NCCL's own (host RMA on a communicator without host RMA support, a
 * device communicator without symmetric-memory support, a window NCCL
 * does not know as a symmetric window); otherwise it says the simulator
 * does not model the feature.
 */
#define _GNU_SOURCE
#include <stdint.h>

#include "sim_nccl.h"

/* X(function, result, WARN text) */
#define SIM_UNMODELLED(X)                                                                            \
  X(ncclCommGetUniqueId, ncclInvalidUsage,                                                          \
    "growing a communicator (ncclCommGetUniqueId/ncclCommGrow) is not modelled by the a2acheck simulator") \
  X(ncclCommGrow, ncclInvalidUsage,                                                                 \
    "growing a communicator (ncclCommGetUniqueId/ncclCommGrow) is not modelled by the a2acheck simulator") \
  X(ncclPutSignal, ncclInvalidArgument, "One sided RMA: host RMA is not supported in this communicator.") \
  X(ncclSignal, ncclInvalidArgument, "One sided RMA: host RMA is not supported in this communicator.")    \
  X(ncclWaitSignal, ncclInvalidArgument, "One sided RMA: host RMA is not supported in this communicator.") \
  X(ncclDevCommCreate, ncclInvalidUsage, "Communicator does not support symmetric memory!")         \
  X(ncclGetLsaMultimemDevicePointer, ncclInvalidArgument,                                           \
    "Could not find communicator matching window (the simulator's windows are not symmetric windows)") \
  X(ncclGetMultimemDevicePointer, ncclInvalidArgument,                                              \
    "Could not find communicator matching window (the simulator's windows are not symmetric windows)") \
  X(ncclGetLsaDevicePointer, ncclInvalidArgument,                                                   \
    "Could not find communicator matching window (the simulator's windows are not symmetric windows)") \
  X(ncclGetPeerDevicePointer, ncclInvalidArgument,                                                  \
    "Could not find communicator matching window (the simulator's windows are not symmetric windows)") \
  X(ncclGinOutboxCreateRequirement, ncclInvalidUsage,                                               \
    "GIN (GPU-initiated networking) is not modelled by the a2acheck simulator")                   \
  X(ncclGinInboxA2ACreateRequirement, ncclInvalidUsage,                                             \
    "GIN (GPU-initiated networking) is not modelled by the a2acheck simulator")

enum sim_unmodelled_id {
#define SIM_UM_ENUM(fn, res, text) SIM_UM_##fn,
  SIM_UNMODELLED(SIM_UM_ENUM)
#undef SIM_UM_ENUM
  SIM_UM_COUNT
};

static const struct { const char *fn; ncclResult_t result; const char *text; } um_table[SIM_UM_COUNT] = {
#define SIM_UM_ROW(fn, res, text) {#fn, res, text},
  SIM_UNMODELLED(SIM_UM_ROW)
#undef SIM_UM_ROW
};

static ncclResult_t unmodelled(enum sim_unmodelled_id id) {
  sim_warn("%s: %s", um_table[id].fn, um_table[id].text);
  return um_table[id].result;
}

static ncclResult_t null_arg(const char *fn, const char *what) {
  sim_warn("%s : %s argument is NULL", fn, what);
  return ncclInvalidArgument;
}

/* NCCL's CommCheck + ncclCommEnsureReady, as every comm-taking call. */
static ncclResult_t comm_prologue(ncclComm_t comm, const char *fn) {
  ncclResult_t r = sim_comm_check(comm, fn);
  return r == ncclSuccess ? sim_comm_ensure_ready(comm, fn) : r;
}

/* ---- growing communicators ---------------------------------------------------- */
SIM_API(ncclResult_t, ncclCommGetUniqueId, ncclComm_t comm, ncclUniqueId *uniqueId) {
  ncclResult_t r = comm_prologue(comm, "ncclCommGetUniqueId");
  if (r != ncclSuccess) return r;
  if (uniqueId == NULL) return null_arg("CommGetUniqueId", "uniqueId");
  return unmodelled(SIM_UM_ncclCommGetUniqueId);
}

SIM_API(ncclResult_t, ncclCommGrow, ncclComm_t comm, int nRanks, const ncclUniqueId *uniqueId, int rank,
        ncclComm_t *newcomm, ncclConfig_t *config) {
  (void)uniqueId;
  (void)config;
  if (newcomm == NULL) return ncclInvalidArgument;   /* NCCL: no WARN */
  if (nRanks <= 0) {
    sim_warn("ncclCommGrow: total ranks must be positive, got %d", nRanks);
    return ncclInvalidArgument;
  }
  /* NCCL compares with the current size before it clears *newcomm. */
  if (comm && sim_comm_check(comm, "ncclCommGrow") == ncclSuccess && nRanks <= comm->nranks) {
    sim_warn("ncclCommGrow: total ranks %d is less than current ranks %d", nRanks, comm->nranks);
    return ncclInvalidArgument;
  }
  *newcomm = NULL;
  if (comm) {
    ncclResult_t r = comm_prologue(comm, "ncclCommGrow");
    if (r != ncclSuccess) return r;
    if (rank != -1) {
      sim_warn("ncclCommGrow: existing ranks must pass rank=-1, got %d", rank);
      return ncclInvalidArgument;
    }
  } else if (rank < 0) {
    sim_warn("ncclCommGrow: new ranks must pass valid rank >= 0, got %d", rank);
    return ncclInvalidArgument;
  }
  return unmodelled(SIM_UM_ncclCommGrow);
}

/* ---- one-sided RMA: enqueue checks, then "no host RMA support" ------------------ */
static ncclResult_t rma_prologue(ncclComm_t comm, int peer, const char *op) {
  ncclResult_t r = sim_comm_check(comm, op);
  if (r == ncclSuccess && atomic_load(&comm->revoked)) {
    sim_warn("%s: communicator was revoked", op);
    r = ncclInvalidUsage;
  }
  if (r == ncclSuccess) r = sim_comm_ensure_ready(comm, op);
  if (r == ncclSuccess && peer != -1 && (peer < 0 || peer >= comm->nranks)) {
    sim_warn("%s : invalid root %d (root should be in the 0..%d range)", op, peer, comm->nranks);
    r = ncclInvalidArgument;
  }
  return r;
}

SIM_API(ncclResult_t, ncclPutSignal, const void *localbuff, size_t count, ncclDataType_t datatype, int peer,
        ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
        cudaStream_t stream) {
  (void)localbuff; (void)count; (void)peerWin; (void)peerWinOffset; (void)sigIdx; (void)ctx; (void)flags;
  (void)stream;
  ncclResult_t r = rma_prologue(comm, peer, "PutSignal");
  if (r == ncclSuccess && ((int)datatype < 0 || (int)datatype >= (int)ncclNumTypes)) {
    sim_warn("PutSignal : invalid type %d", (int)datatype);
    r = ncclInvalidArgument;
  }
  if (r == ncclSuccess) r = unmodelled(SIM_UM_ncclPutSignal);
  sim_group_error(r);
  return r;
}

SIM_API(ncclResult_t, ncclSignal, int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
        cudaStream_t stream) {
  (void)sigIdx; (void)ctx; (void)flags; (void)stream;
  ncclResult_t r = rma_prologue(comm, peer, "Signal");
  if (r == ncclSuccess) r = unmodelled(SIM_UM_ncclSignal);
  sim_group_error(r);
  return r;
}

SIM_API(ncclResult_t, ncclWaitSignal, int nDesc, ncclWaitSignalDesc_t *signalDescs, ncclComm_t comm,
        cudaStream_t stream) {
  (void)stream;
  ncclResult_t r = rma_prologue(comm, -1, "WaitSignal");
  if (r == ncclSuccess && nDesc > 0 && signalDescs == NULL) r = null_arg("WaitSignal", "signalDescs");
  if (r == ncclSuccess) r = unmodelled(SIM_UM_ncclWaitSignal);
  sim_group_error(r);
  return r;
}

/* ---- device communicators and symmetric windows -------------------------------- */

/* The versioned prefix every device-API struct starts with. */
struct sim_api_prefix { size_t size; unsigned int magic; unsigned int version; };

SIM_API(ncclResult_t, ncclDevCommCreate, ncclComm_t comm, const ncclDevCommRequirements_t *reqs,
        ncclDevComm_t *outDevComm) {
  (void)outDevComm;
  ncclResult_t r = sim_comm_check(comm, "ncclDevCommCreate");
  if (r != ncclSuccess) return r;
  if (reqs == NULL) return null_arg("ncclDevCommCreate", "reqs");
  if (((const struct sim_api_prefix *)(const void *)reqs)->magic != NCCL_API_MAGIC) {
    sim_warn("Cannot create device communicator: ncclDevCommRequirements_t argument must be initialized via "
             "NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER");
    return ncclInvalidUsage;
  }
  return unmodelled(SIM_UM_ncclDevCommCreate);
}

SIM_API(ncclResult_t, ncclGetLsaMultimemDevicePointer, ncclWindow_t window, size_t offset, void **outPtr) {
  (void)offset;
  if (window == NULL) return null_arg("ncclGetLsaMultimemDevicePointer", "window");
  if (outPtr == NULL) return null_arg("ncclGetLsaMultimemDevicePointer", "outPtr");
  return unmodelled(SIM_UM_ncclGetLsaMultimemDevicePointer);
}

SIM_API(ncclResult_t, ncclGetMultimemDevicePointer, ncclWindow_t window, size_t offset,
        ncclMultimemHandle_t multimem, void **outPtr) {
  (void)offset;
  if (window == NULL) return null_arg("ncclGetMultimemDevicePointer", "window");
  if (outPtr == NULL) return null_arg("ncclGetMultimemDevicePointer", "outPtr");
  if (multimem.mcBasePtr == NULL) {
    sim_warn("MCBasePtr %p needs to be valid.", multimem.mcBasePtr);
    return ncclInvalidArgument;
  }
  return unmodelled(SIM_UM_ncclGetMultimemDevicePointer);
}

SIM_API(ncclResult_t, ncclGetLsaDevicePointer, ncclWindow_t window, size_t offset, int lsaRank, void **outPtr) {
  (void)offset; (void)lsaRank;
  if (window == NULL) return null_arg("ncclGetLsaDevicePointer", "window");
  if (outPtr == NULL) return null_arg("ncclGetLsaDevicePointer", "outPtr");
  return unmodelled(SIM_UM_ncclGetLsaDevicePointer);
}

SIM_API(ncclResult_t, ncclGetPeerDevicePointer, ncclWindow_t window, size_t offset, int peer, void **outPtr) {
  (void)offset; (void)peer;
  if (window == NULL) return null_arg("ncclGetPeerDevicePointer", "window");
  if (outPtr == NULL) return null_arg("ncclGetPeerDevicePointer", "outPtr");
  return unmodelled(SIM_UM_ncclGetPeerDevicePointer);
}

/* ---- GIN scratch requirements (their sizes depend on NCCL-internal state) ------- */
SIM_API(ncclResult_t, ncclGinOutboxCreateRequirement, int nBlocks, int size_log2, ncclGinOutboxHandle_t *outHandle,
        ncclDevResourceRequirements_t *outReq) {
  (void)nBlocks; (void)size_log2; (void)outHandle; (void)outReq;
  return unmodelled(SIM_UM_ncclGinOutboxCreateRequirement);
}

SIM_API(ncclResult_t, ncclGinInboxA2ACreateRequirement, ncclTeam_t peers, int nBlocks, int size_log2,
        ncclGinInboxA2AHandle_t *outHandle, ncclDevResourceRequirements_t *outReq) {
  (void)peers; (void)nBlocks; (void)size_log2; (void)outHandle; (void)outReq;
  return unmodelled(SIM_UM_ncclGinInboxA2ACreateRequirement);
}
