/* stream_common.h - shared scaffolding of the stream end-to-end programs
 * (tests/e2e/stream_*.c): ranks as forked processes around one
 * ncclUniqueId, host stand-ins for the few kernels the programs launch, and
 * the exit-status convention the ctest entries assert on:
 *   0  every rank's data was right
 *   3  some rank's data was wrong (the race did harm)
 *   1  setup failure (a CUDA/NCCL call failed, a rank crashed)
 * Header-only (static functions): each program is one translation unit. */
#ifndef STREAM_E2E_COMMON_H
#define STREAM_E2E_COMMON_H

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "a2asim.h"

#define SE_DATA_WRONG 3

#define SE_CUDA(call)                                                              \
  do {                                                                             \
    cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                       \
      fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #call, (int)e_);   \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)
#define SE_NCCL(call)                                                              \
  do {                                                                             \
    ncclResult_t r_ = (call);                                                      \
    if (r_ != ncclSuccess) {                                                       \
      fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #call, (int)r_);   \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)

/* ---- kernels (host stand-ins; the symbols are only handles) ---- */

/* fill(float *p, int n, float base): p[i] = base + i */
static void se_k_fill(void) {}
static void se_fill_impl(void **args, const a2asim_launch_info *li) {
  (void)li;
  float *p = *(float **)args[0];
  int n = *(int *)args[1];
  float base = *(float *)args[2];
  for (int i = 0; i < n; i++) p[i] = base + (float)i;
}

/* copy(float *dst, const float *src, int n) */
static void se_k_copy(void) {}
static void se_copy_impl(void **args, const a2asim_launch_info *li) {
  (void)li;
  float *dst = *(float **)args[0];
  const float *src = *(const float **)args[1];
  int n = *(int *)args[2];
  for (int i = 0; i < n; i++) dst[i] = src[i];
}

/* add(float *dst, const float *src, int n, float c): dst[i] = src[i] + c
 * (a residual connection; not named like a copy kernel, which
 * layout.hidden-copy would take for the producer of its source) */
static void se_k_add(void) {}
static void se_add_impl(void **args, const a2asim_launch_info *li) {
  (void)li;
  float *dst = *(float **)args[0];
  const float *src = *(const float **)args[1];
  int n = *(int *)args[2];
  float c = *(float *)args[3];
  for (int i = 0; i < n; i++) dst[i] = src[i] + c;
}

/* check(const float *p, int n, float base, int *errors): counts p[i] != base + i */
static void se_k_check(void) {}
static void se_check_impl(void **args, const a2asim_launch_info *li) {
  (void)li;
  const float *p = *(const float **)args[0];
  int n = *(int *)args[1];
  float base = *(float *)args[2];
  int *errors = *(int **)args[3];
  for (int i = 0; i < n; i++)
    if (p[i] != base + (float)i) (*errors)++;
}

static void se_register_kernels(void) {
  static const size_t fill_p[] = {sizeof(float *), sizeof(int), sizeof(float)};
  static const size_t copy_p[] = {sizeof(float *), sizeof(float *), sizeof(int)};
  static const size_t check_p[] = {sizeof(float *), sizeof(int), sizeof(float), sizeof(int *)};
  static const size_t add_p[] = {sizeof(float *), sizeof(float *), sizeof(int), sizeof(float)};
  if (a2asim_register_kernel((const void *)se_k_fill, se_fill_impl, "fill", 3, fill_p) ||
      a2asim_register_kernel((const void *)se_k_copy, se_copy_impl, "copy", 3, copy_p) ||
      a2asim_register_kernel((const void *)se_k_check, se_check_impl, "check", 4, check_p) ||
      a2asim_register_kernel((const void *)se_k_add, se_add_impl, "residual_add", 4, add_p)) {
    fprintf(stderr, "a2asim_register_kernel failed\n");
    exit(1);
  }
}

static const dim3 se_one = {1, 1, 1};

static inline void se_fill(cudaStream_t s, float *p, int n, float base) {
  void *args[] = {&p, &n, &base};
  SE_CUDA(cudaLaunchKernel((const void *)se_k_fill, se_one, se_one, args, 0, s));
}
static inline void se_copy(cudaStream_t s, float *dst, const float *src, int n) {
  void *args[] = {&dst, &src, &n};
  SE_CUDA(cudaLaunchKernel((const void *)se_k_copy, se_one, se_one, args, 0, s));
}
static inline void se_add(cudaStream_t s, float *dst, const float *src, int n, float c) {
  void *args[] = {&dst, &src, &n, &c};
  SE_CUDA(cudaLaunchKernel((const void *)se_k_add, se_one, se_one, args, 0, s));
}
static inline void se_check(cudaStream_t s, const float *p, int n, float base, int *errors) {
  void *args[] = {&p, &n, &base, &errors};
  SE_CUDA(cudaLaunchKernel((const void *)se_k_check, se_one, se_one, args, 0, s));
}

/* ---- ranks ---- */

typedef int (*se_rank_fn)(int rank, int nranks, ncclComm_t comm, void *arg);

/* Runs fn in nranks forked processes sharing one ncclUniqueId made by the
 * parent. Each child binds device rank % device_count, creates its
 * communicator, runs fn, destroys the communicator and exits with fn's
 * status (through exit(), so the preloaded tool writes its logs). Returns
 * SE_DATA_WRONG if any rank returned it, 1 on any other failure, else 0. */
static int se_run_ranks(int nranks, se_rank_fn fn, void *arg) {
  ncclUniqueId id;
  SE_NCCL(ncclGetUniqueId(&id));
  fflush(NULL);
  pid_t pids[64];
  for (int r = 0; r < nranks; r++) {
    pid_t p = fork();
    if (p < 0) { perror("fork"); return 1; }
    if (p == 0) {
      int ndev = 1;
      SE_CUDA(cudaGetDeviceCount(&ndev));
      SE_CUDA(cudaSetDevice(r % ndev));
      se_register_kernels();
      ncclComm_t comm;
      SE_NCCL(ncclCommInitRank(&comm, nranks, id, r));
      int st = fn(r, nranks, comm, arg);
      SE_NCCL(ncclCommDestroy(comm));
      exit(st);
    }
    pids[r] = p;
  }
  int result = 0;
  for (int r = 0; r < nranks; r++) {
    int ws;
    if (waitpid(pids[r], &ws, 0) < 0) { perror("waitpid"); return 1; }
    int st = WIFEXITED(ws) ? WEXITSTATUS(ws) : 1;
    if (!WIFEXITED(ws)) fprintf(stderr, "rank %d died (status 0x%x)\n", r, ws);
    if (st == SE_DATA_WRONG && result == 0) result = SE_DATA_WRONG;
    else if (st != 0 && st != SE_DATA_WRONG) result = 1;
  }
  return result;
}

/* Exit status for a program: prints the verdict the ctest entry checks. */
static int se_verdict(int st) {
  if (st == 0) printf("DATA OK\n");
  else if (st == SE_DATA_WRONG) printf("DATA WRONG\n");
  else printf("FAILED\n");
  fflush(stdout);
  return st;
}

static inline int se_fixed_arg(int argc, char **argv) {
  return argc > 1 && strcmp(argv[1], "fixed") == 0;
}

#endif
