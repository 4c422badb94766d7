/* devapi.c - the host side of NCCL's device API (the nccl_device headers) as far as
 * the simulator models it: communicator properties, teams, and the
 * requirement helpers that only compute sizes.
 *
 * The simulator's communicators behave like NCCL communicators without
 * symmetric-memory support (comm->symmetricSupport == 0 in NCCL): no device
 * communicators, no multimem, no GIN, no host RMA - the simulator cannot
 * run the device kernels that would use them. Everything NCCL computes on
 * the host from the topology alone is computed the same way here: the world
 * team, the LSA team (ranks of one host, NCCL's computeLsaSize: the gcd of
 * the lengths of the runs of consecutive ranks on one host, and of
 * NCCL_LSA_TEAM_SIZE when set), the rail team, rank conversions and the
 * buffer sizes of LL all-to-all, LSA barrier and GIN barrier requirements.
 * The rest of the device API is in unmodelled.c.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "sim_nccl.h"

static int gcd(int a, int b) {
  while (b) {
    int t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* NCCL's computeLsaSize for a communicator whose ranks are all attached. */
static int lsa_size(const struct ncclComm *c) {
  const char *e = getenv("NCCL_LSA_TEAM_SIZE");
  int lsa = e && *e ? atoi(e) : 0;
  if (lsa < 0) lsa = 0;
  int run = 1;
  for (int r = 1; r < c->nranks; r++) {
    if (c->seg.ranks[r].hosthash == c->seg.ranks[r - 1].hosthash) {
      run++;
    } else {
      lsa = gcd(lsa, run);
      run = 1;
    }
  }
  lsa = gcd(lsa, run);
  return lsa > 0 ? lsa : 1;
}

/* The team functions return a value, not a status: like NCCL's, they give
 * an empty team for a communicator they cannot use. */
static int team_ready(const struct ncclComm *c) {
  return c && c->start_magic == SIM_COMM_LIVE && c->seg_mapped && atomic_load(&c->async) == ncclSuccess;
}

SIM_API(ncclTeam_t, ncclTeamWorld, ncclComm_t comm) {
  ncclTeam_t t = {0, 0, 0};
  if (!team_ready(comm)) return t;
  t.nRanks = comm->nranks;
  t.rank = comm->rank;
  t.stride = 1;
  return t;
}

SIM_API(ncclTeam_t, ncclTeamLsa, ncclComm_t comm) {
  ncclTeam_t t = {0, 0, 0};
  if (!team_ready(comm)) return t;
  int lsa = lsa_size(comm);
  t.nRanks = lsa;
  t.rank = comm->rank % lsa;
  t.stride = 1;
  return t;
}

SIM_API(ncclTeam_t, ncclTeamRail, ncclComm_t comm) {
  ncclTeam_t t = {0, 0, 0};
  if (!team_ready(comm)) return t;
  int lsa = lsa_size(comm);
  t.nRanks = comm->nranks / lsa;
  t.rank = comm->rank / lsa;
  t.stride = lsa;
  return t;
}

SIM_API(int, ncclTeamRankToWorld, ncclComm_t comm, ncclTeam_t team, int rank) {
  if (!team_ready(comm)) return -1;
  return comm->rank + (rank - team.rank) * team.stride;
}

SIM_API(int, ncclTeamRankToLsa, ncclComm_t comm, ncclTeam_t team, int rank) {
  if (!team_ready(comm)) return -1;
  return comm->rank % lsa_size(comm) + (rank - team.rank) * team.stride;
}

SIM_API(ncclResult_t, ncclCommQueryProperties, ncclComm_t comm, ncclCommProperties_t *props) {
  ncclResult_t r = sim_comm_check(comm, "ncclCommQueryProperties");
  if (r != ncclSuccess) return r;
  if (props == NULL) {
    sim_warn("ncclCommQueryProperties : props argument is NULL");
    return ncclInvalidArgument;
  }
  r = sim_comm_ensure_ready(comm, "ncclCommQueryProperties");
  if (r != ncclSuccess) return r;
  if (props->magic != NCCL_API_MAGIC) {
    sim_warn("Cannot get communicator properties: ncclCommProperties_t argument must be initialized via "
             "NCCL_COMM_PROPERTIES_INITIALIZER");
    return ncclInvalidUsage;
  }
  props->rank = comm->rank;
  props->nRanks = comm->nranks;
  props->cudaDev = comm->cuda_dev;
  props->nvmlDev = comm->cuda_dev;   /* no CUDA_VISIBLE_DEVICES remapping */
  props->deviceApiSupport = 0;
  props->multimemSupport = 0;
  /* Fields added after 2.29.3 are written for callers that have them. */
  if (props->version > 22903) {
    props->hostRmaSupport = 0;
    props->ginType = SIM_GIN_TYPE_NONE;
    props->railedGinType = SIM_GIN_TYPE_NONE;
    props->nLsaTeams = comm->nranks / lsa_size(comm);
  }
  return ncclSuccess;
}

/* No device communicator can exist (ncclDevCommCreate fails), so there is
 * nothing to release; NCCL's argument checks are kept. */
SIM_API(ncclResult_t, ncclDevCommDestroy, ncclComm_t comm, const ncclDevComm_t *devComm) {
  ncclResult_t r = sim_comm_check(comm, "ncclDevCommDestroy");
  if (r != ncclSuccess) return r;
  if (devComm == NULL) {
    sim_warn("ncclDevCommDestroy : devComm argument is NULL");
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

/* ---- requirement helpers: sizes only, as NCCL computes them -------------------- */

/* ncclDevResourceRequirements and the handles, as laid out by 2.28 and
 * 2.30 alike (nccl_device/core.h and impl/ *__types.h). */
struct ncclDevResourceRequirements {
  ncclDevResourceRequirements_t *next;
  size_t bufferSize, bufferAlign;
  uint32_t *outBufferHandle;
  int ginSignalCount;
  int ginCounterCount;
  uint32_t *outGinSignalStart;
  uint32_t *outGinCounterStart;
};
struct ncclLLA2AHandle { uint32_t bufHandle; uint32_t nSlots; };
struct ncclLsaBarrierHandle { uint32_t bufHandle; int nBarriers; };
struct ncclGinBarrierHandle { uint32_t signal0; uint32_t unused; };

SIM_API(int, ncclLLA2ACalcSlots, int maxElts, int maxEltSize) {
  return maxElts * ((maxEltSize + 7) / 8);
}

SIM_API(ncclResult_t, ncclLLA2ACreateRequirement, int nBlocks, int nSlots, ncclLLA2AHandle_t *outHandle,
        ncclDevResourceRequirements_t *outReq) {
  outHandle->nSlots = (uint32_t)nSlots;
  memset(outReq, 0, sizeof *outReq);
  outReq->bufferSize = (size_t)nBlocks * (1 + 2 * (size_t)nSlots) * 16;
  outReq->bufferAlign = 16;
  outReq->outBufferHandle = &outHandle->bufHandle;
  return ncclSuccess;
}

SIM_API(ncclResult_t, ncclLsaBarrierCreateRequirement, ncclTeam_t team, int nBarriers,
        ncclLsaBarrierHandle_t *outHandle, ncclDevResourceRequirements_t *outReq) {
  memset(outReq, 0, sizeof *outReq);
  outHandle->nBarriers = nBarriers;
  outReq->bufferSize = (3 * (size_t)nBarriers + (size_t)nBarriers * (size_t)team.nRanks) * sizeof(uint32_t);
  outReq->bufferAlign = _Alignof(uint32_t);
  outReq->outBufferHandle = &outHandle->bufHandle;
  return ncclSuccess;
}

SIM_API(ncclResult_t, ncclGinBarrierCreateRequirement, ncclComm_t comm, ncclTeam_t team, int nBarriers,
        ncclGinBarrierHandle_t *outHandle, ncclDevResourceRequirements_t *outReq) {
  (void)comm;
  memset(outReq, 0, sizeof *outReq);
  outReq->ginSignalCount = nBarriers * team.nRanks;
  outReq->outGinSignalStart = &outHandle->signal0;
  return ncclSuccess;
}
