/* shim_invalid.c - hammers every kind of wrapper with invalid arguments
 * (NULL out-pointers, garbage handles, invalid dtypes/ops/peers/devices,
 * zero counts with NULL buffers, unbalanced groups, calls on a destroyed
 * communicator) and prints, per call, what the application observes: the
 * return value, errno (set to a sentinel before each call) and the CUDA
 * "last error" peeked right after. shim_invalid.sh runs it with and without
 * liba2acheck.so preloaded and requires identical output and exit status:
 * the shim must neither crash on bad arguments nor change anything the
 * application sees. Linked against the simulator (which validates handles
 * instead of dereferencing them, so garbage handles are safe to pass).
 *
 * Nothing printed may depend on addresses or timing: only result codes. */
#include <cuda_runtime_api.h>
#include <errno.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define SENTINEL 4242

/* One call: errno := SENTINEL, call, print result, errno and peeked error. */
#define T(expr)                                                               \
  do {                                                                        \
    errno = SENTINEL;                                                         \
    long r_ = (long)(expr);                                                   \
    int e_ = errno;                                                           \
    int last_ = (int)cudaPeekAtLastError();                                   \
    printf("%-60.60s -> %ld errno=%d peek=%d\n", #expr, r_, e_, last_);       \
  } while (0)

/* Same for functions returning a string: print the string itself. */
#define TS(expr)                                                              \
  do {                                                                        \
    errno = SENTINEL;                                                         \
    const char *s_ = (expr);                                                  \
    printf("%-60.60s -> \"%s\" errno=%d\n", #expr, s_ ? s_ : "(null)", errno); \
  } while (0)

static void host_fn(void *arg) { (void)arg; }

/* A handle no init returned, safe to dereference (NCCL reads its magic). */
static unsigned char not_a_comm[4096];

int main(void) {
  void *const garbage = (void *)(uintptr_t)0xdead0000u;
  ncclUniqueId id;
  ncclComm_t comm = NULL, dead = NULL, split = NULL, comms[2] = {NULL, NULL};
  void *d = NULL, *p = NULL;
  int v = 0;
  ncclResult_t ae;
  cudaStream_t s = NULL;
  cudaEvent_t ev = NULL;
  size_t pitch = 0;
  float out = 0;

  setvbuf(stdout, NULL, _IOLBF, 0);
  /* ---- NCCL: creation with bad arguments ---- */
  T(ncclGetUniqueId(NULL));
  T(ncclGetUniqueId(&id));
  T(ncclCommInitRank(NULL, 1, id, 0));
  T(ncclCommInitRank(&dead, 0, id, 0));
  T(ncclCommInitRank(&dead, 1, id, 5));
  T(ncclCommInitRankScalable(&dead, 1, 0, 0, NULL, NULL));
  T(ncclCommInitAll(NULL, 2, NULL));
  T(ncclCommInitAll(comms, -1, NULL));
  T(ncclCommSplit(NULL, 0, 0, &split, NULL));
  T(ncclCommShrink(NULL, NULL, 0, &split, NULL, 0));
  T(ncclGetUniqueId(&id));
  T(ncclCommInitRank(&comm, 1, id, 0));
  if (!comm) return 3;
  T(ncclCommSplit(comm, NCCL_SPLIT_NOCOLOR, 0, &split, NULL));
  printf("split (NOCOLOR) is NULL: %d\n", split == NULL);
  T(cudaMalloc(&d, 4096));

  /* ---- NCCL: queries, errors, versions ---- */
  TS(ncclGetErrorString((ncclResult_t)9999));
  TS(ncclGetErrorString((ncclResult_t)-1));
  T(ncclGetVersion(NULL));
  T(ncclCommGetAsyncError(comm, NULL));
  T(ncclCommGetAsyncError(NULL, &ae));
  T(ncclCommCount(comm, NULL));
  T(ncclCommCount(NULL, &v));
  T(ncclCommCuDevice(NULL, &v));
  T(ncclCommUserRank(comm, NULL));
  T(ncclMemAlloc(NULL, 16));
  T(ncclMemFree(NULL));
  T(ncclCommRegister(comm, NULL, 0, NULL));
  T(ncclCommDeregister(comm, NULL));
  T(ncclRedOpCreatePreMulSum(NULL, NULL, ncclFloat, ncclScalarHostImmediate, comm));
  T(ncclRedOpDestroy((ncclRedOp_t)77, comm));

  /* ---- NCCL: operations with bad arguments ---- */
  T(ncclSend(d, 16, (ncclDataType_t)99, 0, comm, NULL));
  T(ncclSend(d, 16, (ncclDataType_t)-3, 0, comm, NULL));
  T(ncclSend(d, 16, ncclFloat, 7, comm, NULL));
  T(ncclRecv(d, 16, ncclFloat, -1, comm, NULL));
  T(ncclSend(d, 16, ncclFloat, 0, NULL, NULL));
  T(ncclSend(d, 16, ncclFloat, 0, (ncclComm_t)not_a_comm, NULL));
  T(ncclAllReduce(NULL, NULL, 16, ncclFloat, ncclSum, comm, NULL));
  T(ncclAllReduce(d, d, 16, ncclFloat, (ncclRedOp_t)99, comm, NULL));
  T(ncclAllReduce(d, d, 0, ncclFloat, ncclSum, comm, NULL));
  T(ncclBroadcast(d, d, 16, ncclFloat, 3, comm, NULL));
  T(ncclReduce(d, d, 16, ncclFloat, ncclSum, -2, comm, NULL));
  T(ncclAllGather(d, NULL, 16, ncclFloat, comm, NULL));
  T(ncclAlltoAll(d, d, 16, (ncclDataType_t)12, comm, NULL));
  T(ncclGather(d, NULL, 16, ncclFloat, 9, comm, NULL));
  T(ncclScatter(NULL, d, 16, ncclFloat, 0, comm, NULL));
  T(ncclAllReduce(d, d, 16, ncclFloat, ncclSum, comm, (cudaStream_t)garbage));

  /* ---- NCCL: groups (send/recv to self only inside a group: outside one
   * a send to self waits forever for its receive, as in NCCL) ---- */
  T(ncclGroupEnd());
  T(ncclGroupStart());
  T(ncclSend(NULL, 0, ncclFloat, 0, comm, NULL));
  T(ncclRecv(NULL, 0, ncclFloat, 0, comm, NULL));
  T(ncclSend(d, 8, ncclFloat, 0, comm, NULL));
  T(ncclRecv((char *)d + 2048, 8, ncclFloat, 0, comm, NULL));
  T(ncclGroupEnd());
  T(ncclGroupEnd());
  T(ncclGroupSimulateEnd(NULL));

  /* ---- CUDA: memory ---- */
  T(cudaMalloc(NULL, 16));
  T(cudaMalloc(&p, 0));
  T(cudaFree(garbage));
  T(cudaFree(NULL));
  T(cudaMallocHost(NULL, 16));
  T(cudaFreeHost(garbage));
  T(cudaMallocPitch(NULL, &pitch, 16, 16));
  T(cudaMallocPitch(&p, NULL, 16, 16));
  T(cudaMallocAsync(NULL, 16, NULL));
  T(cudaFreeAsync(garbage, NULL));
  T(cudaMallocManaged(NULL, 16, cudaMemAttachGlobal));
  T(cudaHostAlloc(NULL, 16, 0));
  T(cudaMemcpy(NULL, NULL, 16, cudaMemcpyDeviceToDevice));
  T(cudaMemcpy(d, d, 16, (enum cudaMemcpyKind)99));
  T(cudaMemcpyAsync(d, d, 16, cudaMemcpyDeviceToDevice, (cudaStream_t)garbage));
  T(cudaMemset(NULL, 0, 16));
  T(cudaMemsetAsync(d, 0, 16, (cudaStream_t)garbage));
  T(cudaMemcpy2D(d, 0, d, 0, 16, 4, cudaMemcpyDeviceToDevice));
  T(cudaMemcpy2D(d, 8, d, 16, 16, 4, cudaMemcpyDeviceToDevice));
  T(cudaMemset2D(d, 8, 0, 16, 3));

  /* ---- CUDA: devices, streams, events ---- */
  T(cudaSetDevice(-1));
  T(cudaSetDevice(99));
  T(cudaGetLastError());
  T(cudaStreamCreate(NULL));
  T(cudaStreamCreateWithPriority(NULL, 0, 0));
  T(cudaStreamSynchronize((cudaStream_t)garbage));
  T(cudaStreamQuery((cudaStream_t)garbage));
  T(cudaStreamDestroy((cudaStream_t)garbage));
  T(cudaStreamGetPriority((cudaStream_t)garbage, NULL));
  T(cudaStreamWaitEvent(NULL, (cudaEvent_t)garbage, 0));
  T(cudaEventCreate(NULL));
  T(cudaEventCreateWithFlags(&ev, 0xffff));
  T(cudaEventRecord((cudaEvent_t)garbage, NULL));
  T(cudaEventRecord(NULL, NULL));
  T(cudaEventQuery((cudaEvent_t)garbage));
  T(cudaEventSynchronize((cudaEvent_t)garbage));
  T(cudaEventElapsedTime(NULL, (cudaEvent_t)garbage, (cudaEvent_t)garbage));
  T(cudaEventElapsedTime(&out, NULL, NULL));
  T(cudaEventDestroy(NULL));
  T(cudaEventDestroy((cudaEvent_t)garbage));
  T(cudaLaunchHostFunc((cudaStream_t)garbage, host_fn, NULL));
  T(cudaLaunchHostFunc(NULL, NULL, NULL));
  T(cudaLaunchKernel(NULL, (dim3){1, 1, 1}, (dim3){1, 1, 1}, NULL, 0, NULL));
  T(cudaLaunchKernel(garbage, (dim3){0, 0, 0}, (dim3){1, 1, 1}, NULL, 0, NULL));
  T(cudaLaunchKernelExC(NULL, NULL, NULL));
  T(cudaStreamBeginCapture((cudaStream_t)garbage, cudaStreamCaptureModeGlobal));
  T(cudaStreamEndCapture(NULL, NULL));
  T(cudaGraphLaunch(NULL, NULL));
  T(cudaGetLastError());
  T(cudaGetLastError());
  T(cudaDeviceSynchronize());
  (void)s;

  /* ---- NCCL: the end of life, then use of the dead communicator ---- */
  T(ncclCommDestroy(NULL));
  T(ncclCommAbort(NULL));
  T(ncclCommFinalize(NULL));
  T(ncclCommRevoke(NULL, 0));
  T(ncclCommDestroy(comm));
  T(cudaFree(d));
  T(cudaGetLastError());
  return 0;
}
