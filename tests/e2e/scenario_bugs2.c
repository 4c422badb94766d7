/* scenario_bugs2.c - more buggy shapes (and one correct neighbour), 4 ranks
 * as forked processes unless said otherwise.
 *
 *   host_malloc   the gradient bucket is a malloc'ed host array passed to
 *                 ncclAllReduce (a CPU tensor's data_ptr) -> layout.host-memory
 *   pinned_ok     CORRECT neighbour: the same with cudaMallocHost (pinned,
 *                 mapped) memory -> no error finding
 *   managed_ok    CORRECT neighbour: cudaMallocManaged buffers and a
 *                 cudaHostRegister'ed host array (both device-accessible)
 *                 passed to AllReduce / AlltoAll -> no error finding
 *   misaligned    an all-to-all of 1025 floats per peer (4100-byte chunks)
 *                 -> layout.misaligned (warning), data still right
 *   gather_oob    ncclGather whose root receive buffer holds `count`
 *                 elements instead of nranks*count -> layout.out-of-bounds
 *                 on the root only
 *   recv_overlap  grouped all-to-all whose receive offsets use the send
 *                 stride of a smaller dtype: the receive regions of
 *                 neighbouring peers overlap -> layout.overlap
 *   group_open    an "exception" path leaves ncclGroupStart open and the rank
 *                 then synchronizes its stream -> group.unbalanced
 *   redop         ReduceScatter where rank 1 passes ncclMax and the others
 *                 ncclSum -> size.collective-mismatch (NCCL completes it with
 *                 a wrong result: no deadlock)
 *   bcast_named   ranks 0-2 call ncclBroadcast in place with root 0, rank 3
 *                 calls ncclBcast with root 1 (the same operation for NCCL,
 *                 another root): NCCL hangs -> size.collective-mismatch
 *                 naming each call as made, group.deadlock, exit 66
 *   init_nranks   rank 3 calls ncclCommInitRank with nranks 3 (off by one)
 *                 -> group.init-mismatch (NCCL fails or hangs; the launcher
 *                 kills the ranks after its limit if nothing ends them)
 *   memcpy_race   the AllReduce runs on a non-blocking stream and the result is
 *                 read at once with a plain cudaMemcpy (legacy default stream,
 *                 which does not wait for non-blocking streams)
 *                 -> stream.unsynced-output
 *   stream_device the communication stream is created while device 0 is
 *                 current (at "import time", before cudaSetDevice(local_rank)),
 *                 then used with communicators and buffers of device rank:
 *                 what NCCL returns is printed; a2acheck should say why
 *                 (group.device-mismatch or similar)
 *   dup_device    every rank binds device rank % 2 (A2ASIM_DEVICES=2) before
 *                 ncclCommInitRank -> group.duplicate-device across processes
 *                 (NCCL refuses the init: printed, not fatal)
 */
#include "scenario_common.h"

#define NR 4
#define N 4096L

static const char *mode;
static int is(const char *m) { return strcmp(mode, m) == 0; }

static int rank_main(int rank, int nranks, ncclUniqueId id, void *arg) {
  (void)arg;
  ncclComm_t comm;
  if (is("dup_device")) {
    SC_CUDA(cudaSetDevice(rank % 2));
    ncclResult_t r = ncclCommInitRank(&comm, nranks, id, rank);
    fprintf(stderr, "rank %d: ncclCommInitRank on device %d -> %d\n", rank, rank % 2, (int)r);
    if (r == ncclSuccess) ncclCommDestroy(comm);
    return 0;
  }
  if (is("init_nranks")) {
    ncclResult_t r = ncclCommInitRank(&comm, rank == 3 ? 3 : nranks, id, rank == 3 ? 2 : rank);
    fprintf(stderr, "rank %d: ncclCommInitRank -> %d\n", rank, (int)r);
    if (r == ncclSuccess) ncclCommDestroy(comm);
    return 0;
  }
  cudaStream_t s0 = NULL;
  if (is("stream_device")) {
    SC_CUDA(cudaSetDevice(0));
    SC_CUDA(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking)); /* the bug */
    SC_CUDA(cudaSetDevice(rank));
  }
  SC_NCCL(ncclCommInitRank(&comm, nranks, id, rank));
  cudaStream_t s;
  SC_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float *a, *b;
  SC_CUDA(cudaMalloc((void **)&a, NR * N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&b, NR * N * sizeof(float)));
  SC_CUDA(cudaMemsetAsync(a, 0, NR * N * sizeof(float), s));
  SC_CUDA(cudaMemsetAsync(b, 0, NR * N * sizeof(float), s));
  long bad = 0;
  if (is("host_malloc") || is("pinned_ok")) {
    float *h;
    if (is("pinned_ok")) SC_CUDA(cudaMallocHost((void **)&h, N * sizeof(float)));
    else h = malloc(N * sizeof(float));
    for (long i = 0; i < N; i++) h[i] = (float)rank;
    ncclResult_t r = ncclAllReduce(h, h, N, ncclFloat32, ncclSum, comm, s);
    cudaError_t e = cudaStreamSynchronize(s);
    fprintf(stderr, "rank %d: AllReduce on host memory -> %d, sync -> %d, h[0] = %g\n", rank, (int)r, (int)e, h[0]);
    if (is("pinned_ok")) {
      if (r != ncclSuccess || e != cudaSuccess || h[0] != 6.0f) bad++;
      SC_CUDA(cudaFreeHost(h));
    } else {
      free(h);
    }
  } else if (is("managed_ok")) {
    float *m1, *m2;
    SC_CUDA(cudaMallocManaged((void **)&m1, N * sizeof(float), cudaMemAttachGlobal));
    SC_CUDA(cudaMallocManaged((void **)&m2, N * sizeof(float), cudaMemAttachGlobal));
    for (long i = 0; i < N; i++) m1[i] = (float)rank;
    float *reg = malloc(N * sizeof(float));
    for (long i = 0; i < N; i++) reg[i] = 1.0f;
    SC_CUDA(cudaHostRegister(reg, N * sizeof(float), cudaHostRegisterDefault));
    SC_NCCL(ncclAllReduce(m1, m2, N, ncclFloat32, ncclSum, comm, s));
    SC_NCCL(ncclAllReduce(reg, reg, N, ncclFloat32, ncclSum, comm, s));
    SC_CUDA(cudaStreamSynchronize(s));
    if (m2[N - 1] != 6.0f || reg[N - 1] != 4.0f) bad++;
    SC_CUDA(cudaHostUnregister(reg));
    free(reg);
    SC_CUDA(cudaFree(m1));
    SC_CUDA(cudaFree(m2));
  } else if (is("misaligned")) {
    long c = 1025;
    sc_fill(a, NR * c, (float)rank, 0.0f, s);
    SC_NCCL(ncclAlltoAll(a, b, c, ncclFloat32, comm, s));
    SC_CUDA(cudaStreamSynchronize(s));
    float *h = malloc(NR * c * sizeof(float));
    SC_CUDA(cudaMemcpy(h, b, NR * c * sizeof(float), cudaMemcpyDeviceToHost));
    for (long i = 0; i < NR * c; i++)
      if (h[i] != (float)(i / c) && bad++ < 3) fprintf(stderr, "rank %d: b[%ld]=%g\n", rank, i, h[i]);
    free(h);
  } else if (is("gather_oob")) {
    int root = 1;
    float *rb = NULL;
    if (rank == root) SC_CUDA(cudaMalloc((void **)&rb, N * sizeof(float))); /* the bug: N, not NR*N */
    SC_NCCL(ncclGather(a, rb, N, ncclFloat32, root, comm, s));
    SC_CUDA(cudaStreamSynchronize(s));
    if (rb) SC_CUDA(cudaFree(rb));
  } else if (is("recv_overlap")) {
    /* the payload is float32 but the offsets are computed in halves */
    size_t c = 1024;
    uint16_t *rb = (uint16_t *)b;
    SC_NCCL(ncclGroupStart());
    for (int p = 0; p < nranks; p++) {
      SC_NCCL(ncclSend(a + p * c, c, ncclFloat32, p, comm, s));
      SC_NCCL(ncclRecv(rb + p * c, c, ncclFloat32, p, comm, s)); /* the bug: stride in halves */
    }
    SC_NCCL(ncclGroupEnd());
    SC_CUDA(cudaStreamSynchronize(s));
  } else if (is("group_open")) {
    SC_NCCL(ncclGroupStart());
    SC_NCCL(ncclAllReduce(a, b, N, ncclFloat32, ncclSum, comm, s));
    if (rank == 2) {
      /* "exception" between start and end: the handler synchronizes and
       * goes on without ncclGroupEnd */
      fprintf(stderr, "rank 2: ValueError in the bucket hook, skipping ncclGroupEnd\n");
      SC_CUDA(cudaStreamSynchronize(s));
    } else {
      SC_NCCL(ncclGroupEnd());
      SC_CUDA(cudaStreamSynchronize(s));
    }
  } else if (is("memcpy_race")) {
    SC_CUDA((cudaError_t)a2asim_stream_set_delay(s, 20000));
    sc_fill(a, N, (float)(rank + 1), 0.0f, s);
    SC_NCCL(ncclAllReduce(a, b, N, ncclFloat32, ncclSum, comm, s));
    float first = -1;
    SC_CUDA(cudaMemcpy(&first, b, sizeof first, cudaMemcpyDeviceToHost)); /* the bug */
    SC_CUDA(cudaStreamSynchronize(s));
    if (first != 10.0f) fprintf(stderr, "rank %d: read %g before the AllReduce finished\n", rank, first);
  } else if (is("stream_device")) {
    sc_fill(a, N, 1.0f, 0.0f, s);
    SC_CUDA(cudaStreamSynchronize(s));
    ncclResult_t r = ncclAllReduce(a, b, N, ncclFloat32, ncclSum, comm, s0);
    cudaError_t e = cudaStreamSynchronize(s0);
    fprintf(stderr, "rank %d: AllReduce on a stream of device 0 -> %d, sync -> %d\n", rank, (int)r, (int)e);
    SC_CUDA(cudaStreamDestroy(s0));
  } else if (is("bcast_named")) {
    if (rank == 3) SC_NCCL(ncclBcast(a, N, ncclFloat32, 1, comm, s));
    else SC_NCCL(ncclBroadcast(a, a, N, ncclFloat32, 0, comm, s));
    SC_CUDA(cudaStreamSynchronize(s));
  } else if (is("redop")) {
    SC_NCCL(ncclReduceScatter(a, b, N, ncclFloat32, rank == 1 ? ncclMax : ncclSum, comm, s));
    SC_CUDA(cudaStreamSynchronize(s));
  } else {
    return 1;
  }
  sc_sh->result[rank] = bad;
  SC_CUDA(cudaFree(a));
  SC_CUDA(cudaFree(b));
  SC_CUDA(cudaStreamDestroy(s));
  if (!is("group_open") || rank != 2) SC_NCCL(ncclCommDestroy(comm));
  return bad ? SC_DATA_WRONG : 0;
}

int main(int argc, char **argv) {
  mode = argc > 1 ? argv[1] : "host_malloc";
  return sc_fork_ranks(NR, rank_main, NULL);
}
