/* nccl_v230.h - the parts of NCCL 2.30.7's host API that the build's nccl.h
 * (NCCL 2.28.9, /usr/local/cuda/include) does not declare, written from the
 * documented API of the 2.30 headers (nccl.h, nccl_device/core.h, and
 * ll_a2a.h, lsa_barrier.h, gin_barrier.h, gin_win_stub.h there) so that the
 * simulator can define and export every function NCCL 2.30.7 exports.
 *
 * Only what the simulator needs is here: prototypes (ncclX and pncclX, so
 * SIM_API checks each definition against them), the result code, the config
 * layout of 2.30 and the by-value types of the device API's host functions
 * (ncclTeam_t, ncclMultimemHandle_t). Types the simulator only passes by
 * pointer stay incomplete. Built against a 2.30 nccl.h, the nccl.h parts
 * come from it instead (the guard below); the device-API host types are
 * never in nccl.h and are always declared here.
 */
#ifndef SIM_NCCL_V230_H
#define SIM_NCCL_V230_H

#include <nccl.h>
#include <stdint.h>

/* The NCCL version the simulator implements and reports (ncclGetVersion,
 * the NCCL_DEBUG=VERSION banner): see docs/simulator-nccl.md "Version". */
#define SIM_NCCL_MAJOR 2
#define SIM_NCCL_MINOR 30
#define SIM_NCCL_PATCH 7
#define SIM_NCCL_VERSION_CODE (SIM_NCCL_MAJOR * 10000 + SIM_NCCL_MINOR * 100 + SIM_NCCL_PATCH)

#ifndef NCCL_API_MAGIC
#define NCCL_API_MAGIC 0xcafebeef
#endif

/* ncclConfig_t of 2.30 (ncclConfig_v23000): 2.28's fields, then four more.
 * Callers built against older headers pass a shorter struct (its size and
 * version fields say which); NCCL reads min(size, its own size) bytes. */
struct sim_config_v23000 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char *netName;
  int splitShare;
  int trafficClass;
  const char *commName;
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
  int graphUsageMode;       /* 2.29 */
  int numRmaCtx;            /* 2.29 */
  int maxP2pPeers;          /* 2.30 */
  int graphStreamOrdering;  /* 2.30.5 */
};

/* Device-API host types (nccl_device/core.h): passed by value, so their
 * layout is part of the ABI. */
typedef struct ncclTeam { int nRanks, rank, stride; } ncclTeam_t;
typedef struct ncclMultimemHandle { void *mcBasePtr; } ncclMultimemHandle_t;
/* Passed by pointer only. */
typedef struct ncclDevComm ncclDevComm_t;
typedef struct ncclDevCommRequirements ncclDevCommRequirements_t;
typedef struct ncclDevResourceRequirements ncclDevResourceRequirements_t;
typedef struct ncclCommProperties ncclCommProperties_t;
typedef struct ncclLsaBarrierHandle ncclLsaBarrierHandle_t;
typedef struct ncclGinBarrierHandle ncclGinBarrierHandle_t;
typedef struct ncclLLA2AHandle ncclLLA2AHandle_t;
typedef struct ncclGinOutboxHandle ncclGinOutboxHandle_t;
typedef struct ncclGinInboxA2AHandle ncclGinInboxA2AHandle_t;

/* ncclCommProperties_t (2.30): filled by ncclCommQueryProperties. */
typedef enum { SIM_GIN_TYPE_NONE = 0 } sim_gin_type;
struct ncclCommProperties {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int rank;
  int nRanks;
  int cudaDev;
  int nvmlDev;
  _Bool deviceApiSupport;
  _Bool multimemSupport;
  int ginType;              /* ncclGinType_t */
  int nLsaTeams;
  _Bool hostRmaSupport;
  int railedGinType;        /* ncclGinType_t */
};

/* Declares ncclX and pncclX with one prototype. */
#define SIM_DECLARE(ret, name, ...) ret name(__VA_ARGS__); ret p##name(__VA_ARGS__)

/* ---- host functions of the nccl_device headers ---- */
SIM_DECLARE(ncclResult_t, ncclCommQueryProperties, ncclComm_t comm, ncclCommProperties_t *props);
SIM_DECLARE(ncclResult_t, ncclDevCommCreate, ncclComm_t comm, const ncclDevCommRequirements_t *reqs,
            ncclDevComm_t *outDevComm);
SIM_DECLARE(ncclResult_t, ncclDevCommDestroy, ncclComm_t comm, const ncclDevComm_t *devComm);
SIM_DECLARE(ncclResult_t, ncclGetLsaMultimemDevicePointer, ncclWindow_t window, size_t offset, void **outPtr);
SIM_DECLARE(ncclResult_t, ncclGetMultimemDevicePointer, ncclWindow_t window, size_t offset,
            ncclMultimemHandle_t multimem, void **outPtr);
SIM_DECLARE(ncclResult_t, ncclGetLsaDevicePointer, ncclWindow_t window, size_t offset, int lsaRank,
            void **outPtr);
SIM_DECLARE(ncclResult_t, ncclGetPeerDevicePointer, ncclWindow_t window, size_t offset, int peer,
            void **outPtr);
SIM_DECLARE(ncclTeam_t, ncclTeamWorld, ncclComm_t comm);
SIM_DECLARE(ncclTeam_t, ncclTeamLsa, ncclComm_t comm);
SIM_DECLARE(ncclTeam_t, ncclTeamRail, ncclComm_t comm);
SIM_DECLARE(int, ncclTeamRankToWorld, ncclComm_t comm, ncclTeam_t team, int rank);
SIM_DECLARE(int, ncclTeamRankToLsa, ncclComm_t comm, ncclTeam_t team, int rank);
SIM_DECLARE(int, ncclLLA2ACalcSlots, int maxElts, int maxEltSize);
SIM_DECLARE(ncclResult_t, ncclLLA2ACreateRequirement, int nBlocks, int nSlots, ncclLLA2AHandle_t *outHandle,
            ncclDevResourceRequirements_t *outReq);
SIM_DECLARE(ncclResult_t, ncclLsaBarrierCreateRequirement, ncclTeam_t team, int nBarriers,
            ncclLsaBarrierHandle_t *outHandle, ncclDevResourceRequirements_t *outReq);
SIM_DECLARE(ncclResult_t, ncclGinBarrierCreateRequirement, ncclComm_t comm, ncclTeam_t team, int nBarriers,
            ncclGinBarrierHandle_t *outHandle, ncclDevResourceRequirements_t *outReq);
SIM_DECLARE(ncclResult_t, ncclGinOutboxCreateRequirement, int nBlocks, int size_log2,
            ncclGinOutboxHandle_t *outHandle, ncclDevResourceRequirements_t *outReq);
SIM_DECLARE(ncclResult_t, ncclGinInboxA2ACreateRequirement, ncclTeam_t peers, int nBlocks, int size_log2,
            ncclGinInboxA2AHandle_t *outHandle, ncclDevResourceRequirements_t *outReq);
/* Exported (strong, no pncclX) by NCCL's debug.cc; ncclResetDebugInit uses it. */
void ncclResetDebugInitInternal(void);

#if NCCL_VERSION_CODE < 23000
/* ---- nccl.h of 2.29 / 2.30 ---- */
#define ncclTimeout ((ncclResult_t)8)
#define NCCL_WIN_STRICT_ORDERING 0x02
#define NCCL_SUSPEND_MEM 0x01
typedef enum {
  ncclStatGpuMemSuspend = 0,
  ncclStatGpuMemSuspended = 1,
  ncclStatGpuMemPersist = 2,
  ncclStatGpuMemTotal = 3
} ncclCommMemStat_t;
typedef struct {
  int opCnt;
  int peer;
  int sigIdx;
  int ctx;
} ncclWaitSignalDesc_t;
typedef struct ncclParamHandle *ncclParamHandle_t;

SIM_DECLARE(ncclResult_t, ncclCommGetUniqueId, ncclComm_t comm, ncclUniqueId *uniqueId);
SIM_DECLARE(ncclResult_t, ncclCommGrow, ncclComm_t comm, int nRanks, const ncclUniqueId *uniqueId, int rank,
            ncclComm_t *newcomm, ncclConfig_t *config);
SIM_DECLARE(ncclResult_t, ncclCommSuspend, ncclComm_t comm, int flags);
SIM_DECLARE(ncclResult_t, ncclCommResume, ncclComm_t comm);
SIM_DECLARE(ncclResult_t, ncclCommMemStats, ncclComm_t comm, ncclCommMemStat_t stat, uint64_t *value);
SIM_DECLARE(ncclResult_t, ncclWinGetUserPtr, ncclComm_t comm, ncclWindow_t win, void **outUserPtr);
SIM_DECLARE(ncclResult_t, ncclPutSignal, const void *localbuff, size_t count, ncclDataType_t datatype, int peer,
            ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags,
            ncclComm_t comm, cudaStream_t stream);
SIM_DECLARE(ncclResult_t, ncclSignal, int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
            cudaStream_t stream);
SIM_DECLARE(ncclResult_t, ncclWaitSignal, int nDesc, ncclWaitSignalDesc_t *signalDescs, ncclComm_t comm,
            cudaStream_t stream);
SIM_DECLARE(ncclResult_t, ncclParamBind, ncclParamHandle_t *out, const char *key);
SIM_DECLARE(ncclResult_t, ncclParamGetI8, ncclParamHandle_t h, int8_t *out);
SIM_DECLARE(ncclResult_t, ncclParamGetI16, ncclParamHandle_t h, int16_t *out);
SIM_DECLARE(ncclResult_t, ncclParamGetI32, ncclParamHandle_t h, int32_t *out);
SIM_DECLARE(ncclResult_t, ncclParamGetI64, ncclParamHandle_t h, int64_t *out);
SIM_DECLARE(ncclResult_t, ncclParamGetU8, ncclParamHandle_t h, uint8_t *out);
SIM_DECLARE(ncclResult_t, ncclParamGetU16, ncclParamHandle_t h, uint16_t *out);
SIM_DECLARE(ncclResult_t, ncclParamGetU32, ncclParamHandle_t h, uint32_t *out);
SIM_DECLARE(ncclResult_t, ncclParamGetU64, ncclParamHandle_t h, uint64_t *out);
SIM_DECLARE(ncclResult_t, ncclParamGetStr, ncclParamHandle_t h, const char **out);
SIM_DECLARE(ncclResult_t, ncclParamGet, ncclParamHandle_t h, void *out, int maxLen, int *len);
SIM_DECLARE(ncclResult_t, ncclParamGetParameter, const char *key, const char **value, int *valueLen);
SIM_DECLARE(ncclResult_t, ncclParamGetAllParameterKeys, const char ***table, int *tableLen);
SIM_DECLARE(void, ncclParamDumpAll, void);
#endif

#undef SIM_DECLARE
#endif /* SIM_NCCL_V230_H */
