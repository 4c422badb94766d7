/* nccl_api230.c - the NCCL 2.29/2.30 API surface of the simulator: what is
 * modelled behaves as NCCL 2.30.7 documents it, what is not fails the way
 * tests/sim/nccl/unmodelled.c's table says (result code and a WARN kept as
 * the last error). Two ranks as processes.
 *
 *   nccl_api230
 *
 * Checks: ncclGetVersion and ncclGetErrorString(ncclTimeout); ncclConfig_t
 * of 2.30 (graph fields validated), of an older caller (shorter struct,
 * older version) and without the magic; ncclCommSuspend/Resume/MemStats
 * (collective, state errors, operations refused while suspended);
 * ncclWinGetUserPtr; ncclCommQueryProperties; the team functions and the
 * requirement helpers against NCCL's formulas; the ncclParam* API of an
 * empty registry; every row of the unmodelled table.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "nccl_harness.h"
#include "nccl_v230.h"

#define EXPECT_LAST(comm, text)                                                        \
  do {                                                                                 \
    const char *le_ = ncclGetLastError(comm);                                          \
    if (!strstr(le_, text)) FAILF("last error '%s' lacks '%s'", le_, text);            \
  } while (0)

/* The 2.28.9 layout (ncclConfig_v22800): the 2.30 one without its last
 * four fields. */
struct config_v22800 {
  size_t size;
  unsigned int magic, version;
  int blocking, cgaClusterSize, minCTAs, maxCTAs;
  const char *netName;
  int splitShare, trafficClass;
  const char *commName;
  int collnetEnable, CTAPolicy, shrinkShare, nvlsCTAs, nChannelsPerNetPeer, nvlinkCentricSched;
};

static struct sim_config_v23000 config230(void) {
  struct sim_config_v23000 c;
  memset(&c, 0, sizeof c);
  c.size = sizeof c;
  c.magic = NCCL_API_MAGIC;
  c.version = 23007;
  int *f = &c.blocking;   /* every int field from blocking on is UNDEF */
  for (int *p = f; p < &c.graphStreamOrdering + 1; p++) *p = NCCL_CONFIG_UNDEF_INT;
  c.netName = NULL;
  c.commName = NULL;
  return c;
}

static int test_config(ncclComm_t comm, int rank) {
  int fails = 0;
  ncclComm_t sub;
  struct sim_config_v23000 c = config230();
  c.graphUsageMode = 3;
  EXPECT_RC(ncclCommSplit(comm, 0, rank, &sub, (ncclConfig_t *)&c), ncclInvalidArgument);
  EXPECT_LAST(comm, "graphUsageMode attribute value 3");
  c = config230();
  c.graphStreamOrdering = 2;
  EXPECT_RC(ncclCommSplit(comm, 0, rank, &sub, (ncclConfig_t *)&c), ncclInvalidArgument);
  EXPECT_LAST(comm, "graphStreamOrdering attribute value 2");
  c = config230();
  c.magic = 0;
  EXPECT_RC(ncclCommSplit(comm, 0, rank, &sub, (ncclConfig_t *)&c), ncclInvalidArgument);
  EXPECT_LAST(comm, "NCCL_CONFIG_INITIALIZER");
  /* Valid 2.30 config with graph fields, then a 2.28 caller's: both split
   * (collective: every rank makes the same calls). */
  c = config230();
  c.graphUsageMode = 2;
  c.graphStreamOrdering = 1;
  c.commName = "sub230";
  NCCL_OK(ncclCommSplit(comm, 0, rank, &sub, (ncclConfig_t *)&c));
  NCCL_OK(ncclCommDestroy(sub));
  struct config_v22800 o;
  memcpy(&o, &c, sizeof o);
  o.size = sizeof o;
  o.version = 22809;
  o.blocking = 1;
  NCCL_OK(ncclCommSplit(comm, 0, rank, &sub, (ncclConfig_t *)&o));
  NCCL_OK(ncclCommDestroy(sub));
  return fails;
}

static int test_suspend(ncclComm_t comm, int rank, cudaStream_t s, float *d) {
  int fails = 0;
  uint64_t v = 99;
  EXPECT_RC(ncclCommMemStats(comm, ncclStatGpuMemTotal, NULL), ncclInvalidArgument);
  NCCL_OK(ncclCommMemStats(comm, ncclStatGpuMemTotal, &v));
  if (v != 0) FAILF("rank %d: GpuMemTotal %llu", rank, (unsigned long long)v);
  NCCL_OK(ncclCommMemStats(comm, ncclStatGpuMemSuspended, &v));
  if (v != 0) FAILF("rank %d: suspended before suspend", rank);
  EXPECT_RC(ncclCommMemStats(comm, (ncclCommMemStat_t)9, &v), ncclInvalidArgument);
  EXPECT_RC(ncclCommResume(comm), ncclInvalidUsage);
  EXPECT_LAST(comm, "Not in suspended state");
  NCCL_OK(ncclCommSuspend(comm, 0));            /* no flag: nothing to do */
  NCCL_OK(ncclCommSuspend(comm, NCCL_SUSPEND_MEM));
  NCCL_OK(ncclCommMemStats(comm, ncclStatGpuMemSuspended, &v));
  if (v != 1) FAILF("rank %d: not suspended after suspend", rank);
  EXPECT_RC(ncclCommSuspend(comm, NCCL_SUSPEND_MEM), ncclInvalidUsage);
  EXPECT_LAST(comm, "Already suspended");
  EXPECT_RC(ncclAllReduce(d, d, 4, ncclFloat32, ncclSum, comm, s), ncclInvalidUsage);
  EXPECT_LAST(comm, "suspended");
  NCCL_OK(ncclCommResume(comm));
  NCCL_OK(ncclAllReduce(d, d, 4, ncclFloat32, ncclSum, comm, s));
  CUDA_OK(cudaStreamSynchronize(s));
  return fails;
}

static int test_device_api(ncclComm_t comm, int rank, int n, float *d) {
  int fails = 0;
  ncclCommProperties_t p;
  memset(&p, 0xff, sizeof p);
  p.size = sizeof p;
  p.magic = 0;
  EXPECT_RC(ncclCommQueryProperties(comm, &p), ncclInvalidUsage);
  p.magic = NCCL_API_MAGIC;
  p.version = 23007;
  NCCL_OK(ncclCommQueryProperties(comm, &p));
  if (p.rank != rank || p.nRanks != n || p.cudaDev != rank || p.deviceApiSupport || p.multimemSupport ||
      p.hostRmaSupport || p.ginType != 0 || p.nLsaTeams != 1)
    FAILF("rank %d: properties rank %d nRanks %d dev %d api %d mm %d rma %d gin %d lsaTeams %d", rank, p.rank,
          p.nRanks, p.cudaDev, p.deviceApiSupport, p.multimemSupport, p.hostRmaSupport, p.ginType, p.nLsaTeams);
  /* All ranks on one host: the LSA team is the world, there is one rail. */
  ncclTeam_t w = ncclTeamWorld(comm), l = ncclTeamLsa(comm), r = ncclTeamRail(comm);
  if (w.nRanks != n || w.rank != rank || w.stride != 1) FAILF("world team %d/%d/%d", w.nRanks, w.rank, w.stride);
  if (l.nRanks != n || l.rank != rank || l.stride != 1) FAILF("lsa team %d/%d/%d", l.nRanks, l.rank, l.stride);
  if (r.nRanks != 1 || r.rank != 0 || r.stride != n) FAILF("rail team %d/%d/%d", r.nRanks, r.rank, r.stride);
  if (ncclTeamRankToWorld(comm, l, 0) != 0 || ncclTeamRankToLsa(comm, w, n - 1) != n - 1) FAILF("rank conversion");
  if (ncclLLA2ACalcSlots(10, 12) != 20) FAILF("ncclLLA2ACalcSlots");
  struct { size_t a[2]; } req[8];   /* ncclDevResourceRequirements, generously sized */
  struct { uint32_t h; uint32_t n; } hd;
  memset(req, 0, sizeof req);
  NCCL_OK(ncclLLA2ACreateRequirement(3, 5, (ncclLLA2AHandle_t *)&hd, (ncclDevResourceRequirements_t *)req));
  size_t *sz = (size_t *)((char *)req + sizeof(void *));   /* bufferSize, bufferAlign */
  if (hd.n != 5 || sz[0] != 3 * 11 * 16 || sz[1] != 16) FAILF("LLA2A requirement %u %zu %zu", hd.n, sz[0], sz[1]);
  NCCL_OK(ncclLsaBarrierCreateRequirement(l, 2, (ncclLsaBarrierHandle_t *)&hd, (ncclDevResourceRequirements_t *)req));
  if (hd.n != 2 || sz[0] != (size_t)(6 + 2 * n) * 4 || sz[1] != 4) FAILF("LSA barrier requirement");
  /* device communicators, symmetric windows, GIN, RMA: the table */
  struct { size_t size; unsigned magic, version; char rest[256]; } reqs = {0, 0, 0, {0}};
  char devcomm[512];
  EXPECT_RC(ncclDevCommCreate(comm, (ncclDevCommRequirements_t *)&reqs, (ncclDevComm_t *)devcomm), ncclInvalidUsage);
  EXPECT_LAST(comm, "NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER");
  reqs.magic = NCCL_API_MAGIC;
  reqs.version = 23007;
  EXPECT_RC(ncclDevCommCreate(comm, (ncclDevCommRequirements_t *)&reqs, (ncclDevComm_t *)devcomm), ncclInvalidUsage);
  EXPECT_LAST(comm, "Communicator does not support symmetric memory!");
  NCCL_OK(ncclDevCommDestroy(comm, (ncclDevComm_t *)devcomm));
  ncclWindow_t win;
  void *ptr = NULL;
  NCCL_OK(ncclCommWindowRegister(comm, d, 256, &win, NCCL_WIN_DEFAULT));
  NCCL_OK(ncclWinGetUserPtr(comm, win, &ptr));
  if (ptr != d) FAILF("ncclWinGetUserPtr %p, want %p", ptr, (void *)d);
  EXPECT_RC(ncclGetPeerDevicePointer(win, 0, 0, &ptr), ncclInvalidArgument);
  EXPECT_LAST(comm, "ncclGetPeerDevicePointer: Could not find communicator matching window");
  EXPECT_RC(ncclGetLsaDevicePointer(win, 0, 0, &ptr), ncclInvalidArgument);
  EXPECT_LAST(comm, "ncclGetLsaDevicePointer: Could not find");
  EXPECT_RC(ncclGetLsaMultimemDevicePointer(win, 0, &ptr), ncclInvalidArgument);
  EXPECT_LAST(comm, "ncclGetLsaMultimemDevicePointer: Could not find");
  ncclMultimemHandle_t mm = {NULL};
  EXPECT_RC(ncclGetMultimemDevicePointer(win, 0, mm, &ptr), ncclInvalidArgument);
  EXPECT_LAST(comm, "MCBasePtr");
  mm.mcBasePtr = d;
  EXPECT_RC(ncclGetMultimemDevicePointer(win, 0, mm, &ptr), ncclInvalidArgument);
  EXPECT_LAST(comm, "ncclGetMultimemDevicePointer: Could not find");
  EXPECT_RC(ncclGetPeerDevicePointer(NULL, 0, 0, &ptr), ncclInvalidArgument);
  EXPECT_LAST(comm, "window argument is NULL");
  NCCL_OK(ncclCommWindowDeregister(comm, win));
  EXPECT_RC(ncclGinOutboxCreateRequirement(1, 10, NULL, NULL), ncclInvalidUsage);
  EXPECT_LAST(comm, "ncclGinOutboxCreateRequirement: GIN");
  EXPECT_RC(ncclGinInboxA2ACreateRequirement(w, 1, 10, NULL, NULL), ncclInvalidUsage);
  EXPECT_LAST(comm, "ncclGinInboxA2ACreateRequirement: GIN");
  return fails;
}

static int test_unmodelled(ncclComm_t comm, int rank, int n, cudaStream_t s, float *d) {
  int fails = 0;
  ncclUniqueId id;
  ncclComm_t nc = (ncclComm_t)&id;
  EXPECT_RC(ncclCommGetUniqueId(comm, NULL), ncclInvalidArgument);
  EXPECT_RC(ncclCommGetUniqueId(comm, &id), ncclInvalidUsage);
  EXPECT_LAST(comm, "ncclCommGetUniqueId: growing a communicator");
  EXPECT_RC(ncclCommGrow(comm, n, NULL, -1, &nc, NULL), ncclInvalidArgument);   /* not more ranks */
  EXPECT_LAST(comm, "is less than current ranks");
  if (nc != (ncclComm_t)&id) FAILF("ncclCommGrow changed *newcomm before its size check");
  EXPECT_RC(ncclCommGrow(comm, n + 1, NULL, 0, &nc, NULL), ncclInvalidArgument);
  EXPECT_LAST(comm, "existing ranks must pass rank=-1");
  if (nc != NULL) FAILF("ncclCommGrow left *newcomm set");
  EXPECT_RC(ncclCommGrow(comm, n + 1, NULL, -1, &nc, NULL), ncclInvalidUsage);
  EXPECT_LAST(comm, "ncclCommGrow: growing a communicator");
  EXPECT_RC(ncclPutSignal(d, 4, ncclFloat32, 1 - rank, NULL, 0, 0, 0, 0, comm, s), ncclInvalidArgument);
  EXPECT_LAST(comm, "ncclPutSignal: One sided RMA: host RMA is not supported in this communicator.");
  EXPECT_RC(ncclPutSignal(d, 4, ncclFloat32, n, NULL, 0, 0, 0, 0, comm, s), ncclInvalidArgument);
  EXPECT_LAST(comm, "invalid root");
  EXPECT_RC(ncclSignal(1 - rank, 0, 0, 0, comm, s), ncclInvalidArgument);
  EXPECT_LAST(comm, "ncclSignal: One sided RMA");
  ncclWaitSignalDesc_t desc = {1, 1 - rank, 0, 0};
  EXPECT_RC(ncclWaitSignal(1, &desc, comm, s), ncclInvalidArgument);
  EXPECT_LAST(comm, "ncclWaitSignal: One sided RMA");
  /* inside a group the error also fails the group */
  NCCL_OK(ncclGroupStart());
  EXPECT_RC(ncclSignal(1 - rank, 0, 0, 0, comm, s), ncclInvalidArgument);
  EXPECT_RC(ncclGroupEnd(), ncclInvalidArgument);
  EXPECT_RC(ncclSignal(1 - rank, 0, 0, 0, NULL, s), ncclInvalidArgument);
  EXPECT_LAST(comm, "comm argument is NULL");
  return fails;
}

static int test_param(void) {
  int fails = 0;
  ncclParamHandle_t h = NULL;
  const char *v = "x", **keys = NULL;
  int len = 5, nkeys = -1;
  EXPECT_RC(ncclParamBind(&h, "NCCL_DEBUG"), ncclInvalidArgument);
  EXPECT_RC(ncclParamBind(NULL, "NCCL_DEBUG"), ncclInvalidArgument);
  EXPECT_RC(ncclParamGetParameter("NCCL_DEBUG", &v, &len), ncclInvalidArgument);
  if (v != NULL || len != 0) FAILF("ncclParamGetParameter left %p/%d", (const void *)v, len);
  NCCL_OK(ncclParamGetAllParameterKeys(&keys, &nkeys));
  if (nkeys != 0 || keys == NULL) FAILF("%d parameter keys", nkeys);
  int32_t i32;
  EXPECT_RC(ncclParamGetI32(NULL, &i32), ncclInvalidArgument);
  EXPECT_RC(ncclParamGetStr(NULL, &v), ncclInvalidArgument);
  return fails;
}

static int body(ncclComm_t comm, int rank, int n, void *arg) {
  (void)arg;
  int fails = 0;
  int ver;
  NCCL_OK(ncclGetVersion(&ver));
  if (ver != SIM_NCCL_VERSION_CODE || ver != 23007) FAILF("ncclGetVersion %d", ver);
  if (strcmp(ncclGetErrorString(ncclTimeout), "timeout")) FAILF("ncclTimeout text");
  cudaStream_t s;
  float *d;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CUDA_OK(cudaMalloc((void **)&d, 1024));
  CUDA_OK(cudaMemset(d, 0, 1024));
  CUDA_OK(cudaDeviceSynchronize());
  fails += test_config(comm, rank);
  fails += test_suspend(comm, rank, s, d);
  fails += test_device_api(comm, rank, n, d);
  fails += test_unmodelled(comm, rank, n, s, d);
  fails += test_param();
  cudaFree(d);
  CUDA_OK(cudaStreamDestroy(s));
  return fails;
}

int main(void) {
  int rc = run_ranks("proc", 2, body, NULL, 30);
  printf("nccl_api230: %s\n", rc ? "FAILED" : "PASS");
  return rc ? 1 : 0;
}
