/* client_nccltests.c - the CUDA and NCCL calls of NVIDIA nccl-tests
 * (v2.19.6: src/common.cu, src/hypercube.cu, src/alltoall.cu), reproduced
 * on the simulator for the checks nccl-tests showed wrong (issue 11, items
 * 6, 7, 10). What nccl-tests does:
 *
 *  - initComms: ncclGetUniqueId, then ncclGroupStart, per GPU cudaSetDevice
 *    + ncclCommInitRankConfig, ncclGroupEnd; one cudaStreamNonBlocking
 *    stream per GPU; buffers from ncclMemAlloc.
 *  - TimeTest: a warm-up of every size (step factor 2), then per size of
 *    the sweep BenchTime out of place, then in place: one call to sync, then
 *    `iters` calls back to back, then completeColl.
 *  - startColl: with -g N > 1 it opens an outer ncclGroupStart around the
 *    calls of all its GPUs and closes it after them.
 *  - completeColl / testStreamSynchronize: a cudaStreamQuery +
 *    ncclCommGetAsyncError + yield loop per stream, never a blocking wait.
 *  - HyperCubeRunColl (an all-gather): ncclCommCount, ncclCommUserRank; out
 *    of place, cudaMemcpyAsync of the rank's own block from the send buffer
 *    into its slot of the receive buffer; then for mask = 1, 2, 4, ...: its
 *    own ncclGroupStart, ncclSend of blocks s..s+mask (s = rank & ~(mask-1))
 *    to rank^mask, ncclRecv of the partner's blocks, ncclGroupEnd.
 *  - AlltoAllRunColl: one ncclAlltoAll.
 *
 * Modes (argv[1]); data verified where nccl-tests would (-c 1):
 *   hypercube_g4  hypercube_perf -g 4 (one process, 4 GPUs, 4 ranks): the
 *                 outer group merges all steps of all GPUs into one launch,
 *                 so step 2 sends the block step 1 receives while it is
 *                 being received - nccl-tests' own latent bug, a true
 *                 layout.overlap whose message must explain the merge; the
 *                 merged steps are not an all-to-all (layout.scattered at
 *                 most info, without the all_to_all advice); the copy of
 *                 the own block assembles the output (layout.hidden-copy
 *                 must not blame a .contiguous()). No data check: the
 *                 merged launch may legitimately produce wrong data.
 *   hypercube_t   hypercube_perf on 4 ranks with one GPU each (mpirun -np 4,
 *                 -g 1): no outer group, each step its own group: no
 *                 overlap, no scattered; the own-block copy assembles the
 *                 output (layout.hidden-copy info saying so); data verified.
 *   sweep         alltoall_perf -b 8 -e 64M -f 2 on 2 ranks (out of place):
 *                 most operations are small but the large ones take nearly
 *                 all the time, so batching would save a fraction of a
 *                 percent (perf.small-messages: info, not a warning).
 */
#include <sched.h>

#include "e2e_common.h"

#define NGPUS 4
#define WARMUP 1
#define ITERS 5

/* testStreamSynchronize: poll, never block. */
static void stream_sync_poll(int n, cudaStream_t *streams, ncclComm_t *comms) {
  int remaining = n, done[NGPUS] = {0};
  while (remaining) {
    int idle = 1;
    for (int i = 0; i < n; i++) {
      if (done[i]) continue;
      cudaError_t e = cudaStreamQuery(streams[i]);
      if (e == cudaSuccess) {
        done[i] = 1;
        remaining--;
        idle = 0;
        continue;
      }
      if (e != cudaErrorNotReady) E2E_CUDA(e);
      ncclResult_t async;
      E2E_NCCL(ncclCommGetAsyncError(comms[i], &async));
      if (async != ncclSuccess) E2E_NCCL(async);
    }
    if (idle) sched_yield();
  }
}

/* ---- hypercube ---------------------------------------------------------- */

/* HyperCubeRunColl for one GPU: count floats per rank. */
static void hypercube_run(float *send, float *recv, size_t count, ncclComm_t comm,
                          cudaStream_t s) {
  int nranks, rank;
  E2E_NCCL(ncclCommCount(comm, &nranks));
  E2E_NCCL(ncclCommUserRank(comm, &rank));
  size_t bytes = count * sizeof(float);
  float *mine = recv + (size_t)rank * count;
  if (mine != send) E2E_CUDA(cudaMemcpyAsync(mine, send, bytes, cudaMemcpyDeviceToDevice, s));
  for (int mask = 1; mask < nranks; mask <<= 1) {
    E2E_NCCL(ncclGroupStart());
    int sblk = rank & ~(mask - 1), rblk = sblk ^ mask;
    E2E_NCCL(ncclSend(recv + (size_t)sblk * count, count * (size_t)mask, ncclFloat, rank ^ mask,
                      comm, s));
    E2E_NCCL(ncclRecv(recv + (size_t)rblk * count, count * (size_t)mask, ncclFloat, rank ^ mask,
                      comm, s));
    E2E_NCCL(ncclGroupEnd());
  }
}

/* startColl: the outer group when this process drives several GPUs. */
static void start_coll(int ngpus, float **send, float **recv, size_t count, ncclComm_t *comms,
                       cudaStream_t *streams) {
  if (ngpus > 1) E2E_NCCL(ncclGroupStart());
  for (int i = 0; i < ngpus; i++) hypercube_run(send[i], recv[i], count, comms[i], streams[i]);
  if (ngpus > 1) E2E_NCCL(ncclGroupEnd());
}

/* The sizes of the sweep (bytes of the whole receive buffer, as nccl-tests
 * prints them): 4 KiB .. 256 KiB, factor 4. */
#define HC_MIN (4u << 10)
#define HC_MAX (256u << 10)

/* One process driving ngpus ranks (first..first+ngpus-1, devices the
 * same) of an nranks-rank hypercube on comms. Returns the number of wrong
 * blocks (when check). */
static int hypercube_proc(int ngpus, int first, int nranks, ncclComm_t *comms, int check) {
  cudaStream_t streams[NGPUS];
  float *send[NGPUS], *recv[NGPUS];
  for (int i = 0; i < ngpus; i++) {
    E2E_CUDA(cudaSetDevice(first + i));
    E2E_CUDA(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
    E2E_NCCL(ncclMemAlloc((void **)&send[i], HC_MAX));
    E2E_NCCL(ncclMemAlloc((void **)&recv[i], HC_MAX));
  }
  E2E_CUDA(cudaSetDevice(first));
  int wrong = 0;
  float *host = malloc(HC_MAX);
  for (size_t size = HC_MIN; size <= HC_MAX; size *= 4) {
    size_t count = size / sizeof(float) / (size_t)nranks;
    for (int i = 0; i < ngpus; i++) {
      E2E_CUDA(cudaSetDevice(first + i));
      e2e_fill(streams[i], send[i], (int)count, (float)(first + i) * 1000.0f);
      E2E_CUDA(cudaStreamSynchronize(streams[i]));
    }
    E2E_CUDA(cudaSetDevice(first));
    for (int it = 0; it < WARMUP + 1 + ITERS; it++)
      start_coll(ngpus, send, recv, count, comms, streams);
    stream_sync_poll(ngpus, streams, comms);
    for (int i = 0; check && i < ngpus; i++) {
      E2E_CUDA(cudaMemcpy(host, recv[i], count * (size_t)nranks * sizeof(float),
                          cudaMemcpyDeviceToHost));
      for (int r = 0; r < nranks; r++)
        for (size_t k = 0; k < count; k++)
          if (host[(size_t)r * count + k] != (float)r * 1000.0f + (float)k) {
            wrong++;
            break;
          }
    }
  }
  free(host);
  for (int i = 0; i < ngpus; i++) {
    E2E_NCCL(ncclMemFree(send[i]));
    E2E_NCCL(ncclMemFree(recv[i]));
    E2E_CUDA(cudaStreamDestroy(streams[i]));
  }
  return wrong;
}

/* hypercube_perf -g 4: initComms' group of ncclCommInitRankConfig, one per
 * GPU. */
static int hypercube_g4(void) {
  ncclUniqueId id;
  E2E_NCCL(ncclGetUniqueId(&id));
  e2e_register_kernels();
  ncclComm_t comms[NGPUS];
  E2E_NCCL(ncclGroupStart());
  for (int i = 0; i < NGPUS; i++) {
    E2E_CUDA(cudaSetDevice(i));
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    E2E_NCCL(ncclCommInitRankConfig(&comms[i], NGPUS, id, i, &cfg));
  }
  E2E_NCCL(ncclGroupEnd());
  hypercube_proc(NGPUS, 0, NGPUS, comms, 0);
  for (int i = 0; i < NGPUS; i++) E2E_NCCL(ncclCommDestroy(comms[i]));
  return 0;
}

/* One rank per process, one GPU each (mpirun -np 4 hypercube_perf): no
 * outer group. */
static int hypercube_rank(int rank, int nranks, ncclComm_t comm, void *arg) {
  (void)arg;
  return hypercube_proc(1, rank, nranks, &comm, 1) ? E2E_DATA_WRONG : 0;
}

/* ---- alltoall_perf sweep -------------------------------------------------- */

#define SW_MIN 8u
#define SW_MAX (64u << 20)

static int sweep_rank(int rank, int nranks, ncclComm_t comm, void *arg) {
  (void)arg;
  cudaStream_t s;
  E2E_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float *send, *recv;
  E2E_NCCL(ncclMemAlloc((void **)&send, SW_MAX));
  E2E_NCCL(ncclMemAlloc((void **)&recv, SW_MAX));
  /* Warm-up of every size, factor 2. */
  for (size_t size = SW_MIN; size <= SW_MAX; size *= 2) {
    size_t count = size / sizeof(float) / (size_t)nranks;
    for (int it = 0; it < WARMUP; it++)
      E2E_NCCL(ncclAlltoAll(send, recv, count, ncclFloat, comm, s));
    stream_sync_poll(1, &s, &comm);
  }
  /* BenchTime, out of place (the in-place column passes one buffer as both
   * and is not what this program is about). */
  int wrong = 0;
  float *host = malloc(SW_MAX);
  for (size_t size = SW_MIN; size <= SW_MAX; size *= 2) {
    size_t count = size / sizeof(float) / (size_t)nranks;
    if (count == 0) continue;
    for (int p = 0; p < nranks; p++)
      e2e_fill(s, send + (size_t)p * count, (int)count, (float)(rank * 100 + p) * 1e4f);
    for (int it = 0; it < 1 + ITERS; it++)
      E2E_NCCL(ncclAlltoAll(send, recv, count, ncclFloat, comm, s));
    stream_sync_poll(1, &s, &comm);
    E2E_CUDA(cudaMemcpy(host, recv, count * (size_t)nranks * sizeof(float),
                        cudaMemcpyDeviceToHost));
    for (int p = 0; p < nranks; p++)
      if (host[(size_t)p * count] != (float)(p * 100 + rank) * 1e4f) wrong++;
  }
  free(host);
  E2E_NCCL(ncclMemFree(send));
  E2E_NCCL(ncclMemFree(recv));
  E2E_CUDA(cudaStreamDestroy(s));
  return wrong ? E2E_DATA_WRONG : 0;
}

int main(int argc, char **argv) {
  if (e2e_arg_is(argc, argv, "hypercube_g4")) return e2e_verdict(NULL, hypercube_g4());
  if (e2e_arg_is(argc, argv, "hypercube_t"))
    return e2e_verdict(NULL, e2e_run_ranks(NGPUS, e2e_register_kernels, hypercube_rank, NULL));
  if (e2e_arg_is(argc, argv, "sweep"))
    return e2e_verdict(NULL, e2e_run_ranks(2, e2e_register_kernels, sweep_rank, NULL));
  fprintf(stderr, "usage: %s hypercube_g4|hypercube_t|sweep\n", argv[0]);
  return 2;
}
