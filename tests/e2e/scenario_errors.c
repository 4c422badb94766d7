/* scenario_errors.c - what the application observes on edge and error
 * paths must not change under a2acheck: every return code, the CUDA
 * last-error state and the NCCL error strings are printed, and the ctest
 * entry diffs the output with and without the shim.
 *
 *   scenario_errors zero     legal zero-count calls with NULL buffers
 *                            (AllReduce, AllGather, ReduceScatter,
 *                            AlltoAll, Broadcast, grouped send/recv) on a
 *                            1-rank communicator: success, no finding
 *   scenario_errors invalid  invalid arguments (bad peer, bad dtype, bad
 *                            root, NULL comm, bad free, bad device, bad
 *                            memcpy kind, NULL event, huge malloc) and the
 *                            error state after each: identical output with
 *                            and without the shim, no crash (findings
 *                            about the misuse are allowed)
 */
#include "scenario_common.h"

#define P(expr) printf("%-60s -> %d\n", #expr, (int)(expr))

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "zero";
  sc_rank = 0;
  ncclUniqueId id;
  ncclComm_t comm;
  SC_NCCL(ncclGetUniqueId(&id));
  SC_NCCL(ncclCommInitRank(&comm, 1, id, 0));
  cudaStream_t s;
  SC_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float *buf;
  SC_CUDA(cudaMalloc((void **)&buf, 4096));
  if (strcmp(mode, "zero") == 0) {
    P(ncclAllReduce(NULL, NULL, 0, ncclFloat32, ncclSum, comm, s));
    P(ncclAllGather(NULL, NULL, 0, ncclFloat32, comm, s));
    P(ncclReduceScatter(NULL, NULL, 0, ncclFloat32, ncclSum, comm, s));
    P(ncclAlltoAll(NULL, NULL, 0, ncclFloat32, comm, s));
    P(ncclBroadcast(NULL, NULL, 0, ncclFloat32, 0, comm, s));
    P(ncclGroupStart());
    P(ncclSend(NULL, 0, ncclFloat32, 0, comm, s));
    P(ncclRecv(NULL, 0, ncclFloat32, 0, comm, s));
    P(ncclGroupEnd());
    P(ncclAllReduce(buf, buf, 0, ncclFloat32, ncclSum, comm, s));
    P(cudaMemcpyAsync(buf, buf, 0, cudaMemcpyDeviceToDevice, s));
    P(cudaMemsetAsync(buf, 0, 0, s));
    P(cudaStreamSynchronize(s));
    P(cudaGetLastError());
  } else {
    int n = -1;
    P(ncclSend(buf, 16, ncclFloat32, 5, comm, s));
    printf("last error: %s\n", ncclGetLastError(comm) ? "set" : "null");
    P(ncclAllReduce(buf, buf, 16, (ncclDataType_t)99, ncclSum, comm, s));
    P(ncclAllReduce(buf, buf, 16, ncclFloat32, (ncclRedOp_t)77, comm, s));
    P(ncclBroadcast(buf, buf, 16, ncclFloat32, 3, comm, s));
    P(ncclCommCount(NULL, &n));
    P(ncclAllReduce(buf, buf, 16, ncclFloat32, ncclSum, NULL, s));
    P(ncclGroupStart());
    P(ncclSend(buf, 16, ncclFloat32, 7, comm, s));
    P(ncclGroupEnd());
    printf("%s\n", ncclGetErrorString(ncclInvalidArgument));
    P(cudaFree((void *)0x1234));
    P(cudaGetLastError());
    P(cudaGetLastError());
    P(cudaSetDevice(100));
    P(cudaPeekAtLastError());
    P(cudaGetLastError());
    P(cudaMemcpy(buf, buf, 16, (enum cudaMemcpyKind)77));
    P(cudaGetLastError());
    P(cudaEventRecord(NULL, s));
    void *huge = NULL;
    P(cudaMalloc(&huge, (size_t)1 << 60));
    printf("huge %s\n", huge ? "set" : "null");
    P(cudaGetLastError());
    P(cudaStreamSynchronize(s));
    /* the communicator still works */
    P(ncclAllReduce(buf, buf, 16, ncclFloat32, ncclSum, comm, s));
    P(cudaStreamSynchronize(s));
  }
  SC_CUDA(cudaFree(buf));
  SC_CUDA(cudaStreamDestroy(s));
  SC_NCCL(ncclCommDestroy(comm));
  return 0;
}
