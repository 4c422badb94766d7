/* gpu_common.h - shared helpers of the real-GPU validation programs
 * (tests/gpu/*.cu, driven by tests/gpu/run.sh): error checks that exit with
 * status 1 and say where, and a one-rank NCCL communicator.
 * Exit status convention: 0 success (data right where checked), 1 setup
 * failure (a CUDA/NCCL call failed), 3 data wrong. */
#ifndef A2A_GPU_COMMON_H
#define A2A_GPU_COMMON_H

#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>

#define G_CUDA(call)                                                               \
  do {                                                                             \
    cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                       \
      fprintf(stderr, "%s:%d: %s -> %s\n", __FILE__, __LINE__, #call,             \
              cudaGetErrorString(e_));                                             \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)
#define G_NCCL(call)                                                               \
  do {                                                                             \
    ncclResult_t r_ = (call);                                                      \
    if (r_ != ncclSuccess) {                                                       \
      fprintf(stderr, "%s:%d: %s -> %s\n", __FILE__, __LINE__, #call,             \
              ncclGetErrorString(r_));                                             \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)

/* NCCL refuses two ranks of one communicator on one GPU: every program
 * uses a single-rank communicator on device 0 (send/recv to self). */
static ncclComm_t g_one_rank_comm(void) {
  ncclUniqueId id;
  ncclComm_t comm;
  G_CUDA(cudaSetDevice(0));
  G_NCCL(ncclGetUniqueId(&id));
  G_NCCL(ncclCommInitRank(&comm, 1, id, 0));
  return comm;
}

/* AlltoAll of count elements per peer: ncclAlltoAll when the headers have
 * it (NCCL >= 2.28), else the grouped send/recv loop PyTorch uses. */
static void g_alltoall(const float *send, float *recv, size_t count, ncclComm_t comm,
                       cudaStream_t s) {
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
  G_NCCL(ncclAlltoAll(send, recv, count, ncclFloat, comm, s));
#else
  int n = 1;
  G_NCCL(ncclCommCount(comm, &n));
  G_NCCL(ncclGroupStart());
  for (int p = 0; p < n; p++) {
    G_NCCL(ncclSend(send + (size_t)p * count, count, ncclFloat, p, comm, s));
    G_NCCL(ncclRecv(recv + (size_t)p * count, count, ncclFloat, p, comm, s));
  }
  G_NCCL(ncclGroupEnd());
#endif
}

__global__ void g_fill(float *p, size_t n, float base) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  for (; i < n; i += (size_t)gridDim.x * blockDim.x) p[i] = base + (float)(i % 4096);
}

/* Counts p[i] != base + i % 4096 into *errors. */
__global__ void g_check(const float *p, size_t n, float base, unsigned long long *errors) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  for (; i < n; i += (size_t)gridDim.x * blockDim.x)
    if (p[i] != base + (float)(i % 4096)) atomicAdd(errors, 1ULL);
}

/* A TensorIterator-style kernel: the data pointers travel inside a struct
 * passed by value, so a2acheck must scan the parameter's 8-byte words. */
struct g_iter_args {
  int n;
  int pad;
  const float *in;
  float *out;
};
__global__ void g_scale_struct(g_iter_args a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (; i < a.n; i += gridDim.x * blockDim.x) a.out[i] = 2.0f * a.in[i];
}

/* Spins for about `cycles` clock cycles: a kernel long enough to keep a
 * stream busy while another stream races it. */
__global__ void g_spin(long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

#endif
