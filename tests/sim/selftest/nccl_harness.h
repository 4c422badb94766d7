/* nccl_harness.h - helpers for the simulator's NCCL self-tests (no shim):
 * run N ranks as processes or threads, encode/decode test values for every
 * NCCL datatype, report failures.
 *
 * Ranks. run_ranks(mode, n, body, arg, timeout_s):
 *   "proc"    the parent creates the id and forks n children; each calls
 *             cudaSetDevice(r) and ncclCommInitRank (the usual launcher);
 *   "thread"  one thread per rank doing the same;
 *   "group"   one thread: ncclGroupStart; for r { cudaSetDevice(r);
 *             ncclCommInitRank } ncclGroupEnd; then one thread per body;
 *   "initall" ncclCommInitAll, then one thread per body.
 * body returns the number of failures of its rank. After the body the
 * harness destroys the comm and checks that using it again is rejected.
 * The run fails (non-zero) if a rank fails, crashes, or the whole run
 * exceeds timeout_s (then every child is killed).
 */
#ifndef NCCL_HARNESS_H
#define NCCL_HARNESS_H

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdio.h>

typedef int (*rank_body)(ncclComm_t comm, int rank, int nranks, void *arg);

int run_ranks(const char *mode, int nranks, rank_body body, void *arg, int timeout_s);

/* Exact values only: v must be representable in dt. */
void put_val(ncclDataType_t dt, void *buf, size_t i, double v);
double get_val(ncclDataType_t dt, const void *buf, size_t i);
/* Wraps an exact integer result the way dt's arithmetic does. */
double wrap_val(ncclDataType_t dt, double v);
size_t type_size(ncclDataType_t dt);
int type_is_float(ncclDataType_t dt);
const char *type_name(ncclDataType_t dt);

#define FAILF(...)                                                         \
  do {                                                                     \
    fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                   \
    fprintf(stderr, __VA_ARGS__);                                          \
    fprintf(stderr, "\n");                                                 \
    fails++;                                                               \
  } while (0)

#define EXPECT_RC(call, want)                                              \
  do {                                                                     \
    int rc_ = (int)(call);                                                 \
    if (rc_ != (int)(want)) FAILF("%s returned %d, want %d", #call, rc_, (int)(want)); \
  } while (0)

#define CUDA_OK(call)                                                      \
  do {                                                                     \
    cudaError_t e_ = (call);                                               \
    if (e_ != cudaSuccess) { FAILF("%s -> cuda error %d", #call, (int)e_); return fails; } \
  } while (0)

#define NCCL_OK(call)                                                      \
  do {                                                                     \
    ncclResult_t r_ = (call);                                              \
    if (r_ != ncclSuccess) { FAILF("%s -> %s", #call, ncclGetErrorString(r_)); return fails; } \
  } while (0)

/* Polls the stream for up to ms milliseconds: 1 if it completed, 0 if it
 * is still busy (an observed hang), -1 on a CUDA error. */
int stream_done_within(cudaStream_t s, int ms);

#endif /* NCCL_HARNESS_H */
