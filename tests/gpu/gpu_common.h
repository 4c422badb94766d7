/* gpu_common.h - shared helpers of the real-GPU validation programs
 * (tests/gpu/*.cu, driven by tests/gpu/run.sh): error checks that exit with
 * status 1 and say where, and a one-rank NCCL communicator.
 * Exit status convention: 0 success (data right where checked), 1 setup
 * failure (a CUDA/NCCL call failed), 3 data wrong. */
#ifndef A2A_GPU_COMMON_H
#define A2A_GPU_COMMON_H

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static void g_sim_register(void);

/* NCCL refuses two ranks of one communicator on one GPU: every program
 * uses a single-rank communicator on device 0 (send/recv to self). */
static ncclComm_t g_one_rank_comm(void) {
  ncclUniqueId id;
  ncclComm_t comm;
  g_sim_register();
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

/* ---- running on the CPU simulator (run.sh --sim) ----
 * The simulator cannot run device code; when its libcudart is the one
 * loaded (it exports a2asim_register_kernel), give each kernel a host
 * stand-in with the same parameter layout, so the programs compute the same
 * data and a2acheck sees the same parameters (cudaFuncGetParamInfo). On a
 * real GPU the symbol is absent and nothing happens. */
typedef int (*g_sim_reg_fn)(const void *func, void (*impl)(void **, const void *),
                            const char *name, int nparams, const size_t *sizes);

static void g_fill_host(void **args, const void *info) {
  (void)info;
  float *p = *(float **)args[0];
  size_t n = *(size_t *)args[1];
  float base = *(float *)args[2];
  for (size_t i = 0; i < n; i++) p[i] = base + (float)(i % 4096);
}
static void g_check_host(void **args, const void *info) {
  (void)info;
  const float *p = *(const float **)args[0];
  size_t n = *(size_t *)args[1];
  float base = *(float *)args[2];
  unsigned long long *errors = *(unsigned long long **)args[3];
  for (size_t i = 0; i < n; i++)
    if (p[i] != base + (float)(i % 4096)) (*errors)++;
}
static void g_scale_struct_host(void **args, const void *info) {
  (void)info;
  g_iter_args a;
  memcpy(&a, args[0], sizeof a);
  for (int i = 0; i < a.n; i++) a.out[i] = 2.0f * a.in[i];
}
static void g_spin_host(void **args, const void *info) {
  (void)info;
  long long cycles = *(long long *)args[0];
  long long us = cycles / 2000; /* as a 2 GHz clock would */
  struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000L};
  nanosleep(&ts, NULL);
}

static void g_sim_register(void) {
  g_sim_reg_fn reg = (g_sim_reg_fn)dlsym(RTLD_DEFAULT, "a2asim_register_kernel");
  if (!reg) return;
  static const size_t fill_p[] = {sizeof(float *), sizeof(size_t), sizeof(float)};
  static const size_t check_p[] = {sizeof(float *), sizeof(size_t), sizeof(float), sizeof(void *)};
  static const size_t scale_p[] = {sizeof(g_iter_args)};
  static const size_t spin_p[] = {sizeof(long long)};
  if (reg((const void *)g_fill, g_fill_host, "g_fill", 3, fill_p) ||
      reg((const void *)g_check, g_check_host, "g_check", 4, check_p) ||
      reg((const void *)g_scale_struct, g_scale_struct_host, "g_scale_struct", 1, scale_p) ||
      reg((const void *)g_spin, g_spin_host, "g_spin", 1, spin_p)) {
    fprintf(stderr, "a2asim_register_kernel failed\n");
    exit(1);
  }
}

#endif
