/* scenario_initall.c - one process, one thread, several devices:
 * ncclCommInitAll, then collectives on all devices inside one
 * ncclGroupStart/End, written exactly like NCCL's documentation example
 * "Single Process, Single Thread, Multiple Devices" (the loop inside the
 * group does not call cudaSetDevice: NCCL does not need it).
 *
 *   scenario_initall example   4 devices (devlist NULL): AllReduce + AllGather
 *                              + ReduceScatter + grouped send/recv ring in one
 *                              group, 5 rounds, data verified; the thread's
 *                              device and last error printed after the tool's
 *                              flush point in rounds 0 and 1
 *   scenario_initall devlist   devlist {3,2,1,0} (comm i on device 3-i), same
 *                              work, cudaSetDevice before each call
 *   scenario_initall nb_group  NCCL's non-blocking example: one thread
 *                              initializes 4 non-blocking communicators
 *                              (ncclCommInitRankConfig, blocking = 0)
 *                              inside one group, polls
 *                              ncclCommGetAsyncError until each is ready,
 *                              then the same collectives (each call may
 *                              return ncclInProgress)
 *   scenario_initall skip_dev  BUGGY: in round 2 the group leaves out the
 *                              AllReduce of device 3: the other three wait
 *                              for it forever -> group.deadlock (exit 66)
 *   scenario_initall other_dev_wait  BUGGY: with device 3 current, one group
 *                              of two ncclSends, device 0's communicator to
 *                              rank 1 and device 2's to rank 3, which post
 *                              nothing, then
 *                              cudaStreamSynchronize of device 0's stream
 *                              (still device 3 current): the sends'
 *                              completion markers are other devices' events
 *                              -> group.deadlock (exit 66)
 *   scenario_initall split_example  the example's work on children: one
 *                              group splits every ncclCommInitAll
 *                              communicator (color 0, key i: NCCL's way for
 *                              one thread to split several devices'), and
 *                              the rounds run on the children
 *   scenario_initall split_skip  BUGGY: skip_dev on those children
 *                              -> group.deadlock (exit 66; before, children
 *                              of process-local communicators were not
 *                              checked across ranks: a silent hang)
 *   scenario_initall dup       BUGGY: devlist {0,1,1,2} (device 1 twice)
 *                              -> group.duplicate-device; NCCL refuses
 *                              the init (printed, not fatal)
 */
#include "scenario_common.h"

#define ND 4
#define N 1024L

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "example";
  sc_register_kernels();
  ncclComm_t comms[ND];
  int devs[ND] = {0, 1, 2, 3};
  int *devlist = NULL;
  if (strcmp(mode, "devlist") == 0) {
    for (int i = 0; i < ND; i++) devs[i] = ND - 1 - i;
    devlist = devs;
  } else if (strcmp(mode, "dup") == 0) {
    int d[ND] = {0, 1, 1, 2};
    memcpy(devs, d, sizeof d);
    devlist = devs;
    ncclResult_t r = ncclCommInitAll(comms, ND, devlist);
    printf("ncclCommInitAll with a repeated device -> %s\n", r == ncclSuccess ? "success" : "error");
    if (r == ncclSuccess)
      for (int i = 0; i < ND; i++) ncclCommDestroy(comms[i]);
    return 0;
  }
  float *send[ND], *recv[ND], *gat[ND], *p2p[ND];
  cudaStream_t s[ND];
  for (int i = 0; i < ND; i++) {
    SC_CUDA(cudaSetDevice(devs[i]));
    SC_CUDA(cudaMalloc((void **)&send[i], ND * N * sizeof(float)));
    SC_CUDA(cudaMalloc((void **)&recv[i], ND * N * sizeof(float)));
    SC_CUDA(cudaMalloc((void **)&gat[i], ND * N * sizeof(float)));
    SC_CUDA(cudaMalloc((void **)&p2p[i], N * sizeof(float)));
    SC_CUDA(cudaStreamCreate(&s[i]));
  }
  if (strcmp(mode, "nb_group") == 0) {
    ncclUniqueId id;
    SC_NCCL(ncclGetUniqueId(&id));
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    SC_NCCL(ncclGroupStart());
    for (int i = 0; i < ND; i++) {
      SC_CUDA(cudaSetDevice(devs[i]));
      ncclResult_t r = ncclCommInitRankConfig(&comms[i], ND, id, i, &cfg);
      if (r != ncclSuccess && r != ncclInProgress) SC_NCCL(r);
    }
    ncclResult_t ge = ncclGroupEnd();
    if (ge != ncclSuccess && ge != ncclInProgress) SC_NCCL(ge);
    for (int i = 0; i < ND; i++) {
      ncclResult_t st;
      do SC_NCCL(ncclCommGetAsyncError(comms[i], &st)); while (st == ncclInProgress);
      SC_NCCL(st);
    }
  } else {
    SC_NCCL(ncclCommInitAll(comms, ND, devlist));
  }
  int nonblocking = strcmp(mode, "nb_group") == 0;
  ncclComm_t parents[ND] = {NULL};
  if (strncmp(mode, "split_", 6) == 0) {
    ncclComm_t kids[ND];
    SC_NCCL(ncclGroupStart());
    for (int i = 0; i < ND; i++) SC_NCCL(ncclCommSplit(comms[i], 0, i, &kids[i], NULL));
    SC_NCCL(ncclGroupEnd());
    for (int i = 0; i < ND; i++) {
      parents[i] = comms[i];
      comms[i] = kids[i];
    }
  }
  const int skip = strcmp(mode, "skip_dev") == 0 || strcmp(mode, "split_skip") == 0;
  for (int i = 0; i < ND; i++) {
    int d = -1, r = -1;
    SC_NCCL(ncclCommCuDevice(comms[i], &d));
    SC_NCCL(ncclCommUserRank(comms[i], &r));
    if (d != devs[i] || r != i) {
      fprintf(stderr, "comm %d: device %d rank %d\n", i, d, r);
      return 1;
    }
  }
  if (strcmp(mode, "other_dev_wait") == 0) {
    SC_CUDA(cudaSetDevice(3));
    SC_NCCL(ncclGroupStart());
    SC_NCCL(ncclSend(send[0], N, ncclFloat32, 1, comms[0], s[0]));
    SC_NCCL(ncclSend(send[2], N, ncclFloat32, 3, comms[2], s[2]));
    SC_NCCL(ncclGroupEnd());
    SC_CUDA(cudaStreamSynchronize(s[0])); /* never returns: rank 1 posts no receive */
    return 1;
  }
  long bad = 0;
  float *h = malloc(ND * N * sizeof(float));
  for (int round = 0; round < 5; round++) {
    for (int i = 0; i < ND; i++) {
      SC_CUDA(cudaSetDevice(devs[i]));
      sc_fill(send[i], ND * N, (float)(i + round), 0.0f, s[i]); /* every element = i + round */
    }
#define NBOK(call)                                                             \
  do {                                                                         \
    ncclResult_t r_ = (call);                                                  \
    if (r_ != ncclSuccess && !(nonblocking && r_ == ncclInProgress)) SC_NCCL(r_); \
  } while (0)
    NBOK(ncclGroupStart());
    for (int i = 0; i < ND; i++) {
      if (devlist) SC_CUDA(cudaSetDevice(devs[i]));
      if (!(skip && round == 2 && i == 3))
        NBOK(ncclAllReduce(send[i], recv[i], N, ncclFloat32, ncclSum, comms[i], s[i]));
      NBOK(ncclAllGather(send[i], gat[i], N, ncclFloat32, comms[i], s[i]));
      NBOK(ncclReduceScatter(send[i], recv[i] + N, N, ncclFloat32, ncclMin, comms[i], s[i]));
      NBOK(ncclSend(send[i], N, ncclFloat32, (i + 1) % ND, comms[i], s[i]));
      NBOK(ncclRecv(p2p[i], N, ncclFloat32, (i + ND - 1) % ND, comms[i], s[i]));
    }
    NBOK(ncclGroupEnd());
    if (strcmp(mode, "example") == 0 && round < 2) {
      /* At this query (a flush point) the tool records the completion
       * markers of the group's four streams, three of them on devices not
       * current (it switches the thread's device to create their events):
       * none of it may show. The device stays 3 and the last error is the
       * program's own - round 0 with one pending (cudaGetDevice(NULL): no
       * intercepted call, so the tool asks the runtime nothing then), round
       * 1 without. stdout is compared with the run without the tool. */
      if (round == 0) (void)cudaGetDevice(NULL);
      cudaError_t q = cudaStreamQuery(s[ND - 1]);
      int cur = -1;
      cudaError_t g = cudaGetDevice(&cur);
      cudaError_t le = cudaGetLastError();
      printf("round %d: query %s, device %d (%s), last error %s\n", round,
             q == cudaSuccess || q == cudaErrorNotReady ? "ok" : cudaGetErrorName(q), cur,
             cudaGetErrorName(g), cudaGetErrorName(le));
    }
    if (nonblocking)
      for (int i = 0; i < ND; i++) {
        ncclResult_t st;
        do SC_NCCL(ncclCommGetAsyncError(comms[i], &st)); while (st == ncclInProgress);
        SC_NCCL(st);
      }
    for (int i = 0; i < ND; i++) {
      SC_CUDA(cudaSetDevice(devs[i]));
      SC_CUDA(cudaStreamSynchronize(s[i]));
    }
    float sum = 0;
    for (int i = 0; i < ND; i++) sum += (float)(i + round);
    for (int i = 0; i < ND; i++) {
      SC_CUDA(cudaSetDevice(devs[i]));
      SC_CUDA(cudaMemcpy(h, recv[i], 2 * N * sizeof(float), cudaMemcpyDeviceToHost));
      for (long k = 0; k < N; k++) {
        if (h[k] != sum && bad++ < 3) fprintf(stderr, "dev %d allreduce[%ld]=%g\n", i, k, h[k]);
        if (h[N + k] != (float)round && bad++ < 3) fprintf(stderr, "dev %d rs[%ld]=%g\n", i, k, h[N + k]);
      }
      SC_CUDA(cudaMemcpy(h, gat[i], ND * N * sizeof(float), cudaMemcpyDeviceToHost));
      for (long k = 0; k < ND * N; k++)
        if (h[k] != (float)(k / N + round) && bad++ < 3) fprintf(stderr, "dev %d gather[%ld]=%g\n", i, k, h[k]);
      SC_CUDA(cudaMemcpy(h, p2p[i], N * sizeof(float), cudaMemcpyDeviceToHost));
      for (long k = 0; k < N; k++)
        if (h[k] != (float)((i + ND - 1) % ND + round) && bad++ < 3) fprintf(stderr, "dev %d p2p[%ld]=%g\n", i, k, h[k]);
    }
  }
  free(h);
  for (int i = 0; i < ND; i++) {
    SC_CUDA(cudaSetDevice(devs[i]));
    SC_CUDA(cudaFree(send[i]));
    SC_CUDA(cudaFree(recv[i]));
    SC_CUDA(cudaFree(gat[i]));
    SC_CUDA(cudaFree(p2p[i]));
    SC_CUDA(cudaStreamDestroy(s[i]));
    SC_NCCL(ncclCommDestroy(comms[i]));
    if (parents[i]) SC_NCCL(ncclCommDestroy(parents[i]));
  }
  printf("errors %ld\n", bad);
  return bad ? SC_DATA_WRONG : 0;
}
