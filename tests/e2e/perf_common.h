/* perf_common.h - scaffolding of the perf end-to-end programs
 * (tests/e2e/perf_*.c): ranks as forked processes around one ncclUniqueId,
 * and host stand-ins for the kernels they launch. Exit status:
 *   0  the program ran and its data was right
 *   3  some rank's data was wrong (a race did harm)
 *   1  setup failure (a CUDA/NCCL call failed, a rank crashed)
 * Header-only (static functions): each program is one translation unit. */
#ifndef PERF_E2E_COMMON_H
#define PERF_E2E_COMMON_H

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "a2asim.h"

#define PE_DATA_WRONG 3

#define PE_CUDA(call)                                                              \
  do {                                                                             \
    cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                       \
      fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #call, (int)e_);   \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)
#define PE_NCCL(call)                                                              \
  do {                                                                             \
    ncclResult_t r_ = (call);                                                      \
    if (r_ != ncclSuccess) {                                                       \
      fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #call, (int)r_);   \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)

/* ---- kernels (host stand-ins; the symbols are only handles) ---- */

/* compute(float *p, int n, int us): p[i] += 1, taking `us` microseconds of
 * simulated GPU time. */
static void pe_k_compute(void) {}
static void pe_compute_impl(void **args, const a2asim_launch_info *li) {
  (void)li;
  float *p = *(float **)args[0];
  int n = *(int *)args[1];
  int us = *(int *)args[2];
  for (int i = 0; i < n; i++) p[i] += 1.0f;
  if (us > 0) {
    struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000L};
    nanosleep(&ts, NULL);
  }
}

/* fill(float *p, int n, float base): p[i] = base + i */
static void pe_k_fill(void) {}
static void pe_fill_impl(void **args, const a2asim_launch_info *li) {
  (void)li;
  float *p = *(float **)args[0];
  int n = *(int *)args[1];
  float base = *(float *)args[2];
  for (int i = 0; i < n; i++) p[i] = base + (float)i;
}

/* check(const float *p, int n, float base, int *errors) */
static void pe_k_check(void) {}
static void pe_check_impl(void **args, const a2asim_launch_info *li) {
  (void)li;
  const float *p = *(const float **)args[0];
  int n = *(int *)args[1];
  float base = *(float *)args[2];
  int *errors = *(int **)args[3];
  for (int i = 0; i < n; i++)
    if (p[i] != base + (float)i) (*errors)++;
}

static void pe_register_kernels(void) {
  static const size_t compute_p[] = {sizeof(float *), sizeof(int), sizeof(int)};
  static const size_t fill_p[] = {sizeof(float *), sizeof(int), sizeof(float)};
  static const size_t check_p[] = {sizeof(float *), sizeof(int), sizeof(float), sizeof(int *)};
  if (a2asim_register_kernel((const void *)pe_k_compute, pe_compute_impl, "compute", 3, compute_p) ||
      a2asim_register_kernel((const void *)pe_k_fill, pe_fill_impl, "fill", 3, fill_p) ||
      a2asim_register_kernel((const void *)pe_k_check, pe_check_impl, "check", 4, check_p)) {
    fprintf(stderr, "a2asim_register_kernel failed\n");
    exit(1);
  }
}

static const dim3 pe_one = {1, 1, 1};

static inline void pe_compute(cudaStream_t s, float *p, int n, int us) {
  void *args[] = {&p, &n, &us};
  PE_CUDA(cudaLaunchKernel((const void *)pe_k_compute, pe_one, pe_one, args, 0, s));
}
static inline void pe_fill(cudaStream_t s, float *p, int n, float base) {
  void *args[] = {&p, &n, &base};
  PE_CUDA(cudaLaunchKernel((const void *)pe_k_fill, pe_one, pe_one, args, 0, s));
}
static inline void pe_check(cudaStream_t s, const float *p, int n, float base, int *errors) {
  void *args[] = {&p, &n, &base, &errors};
  PE_CUDA(cudaLaunchKernel((const void *)pe_k_check, pe_one, pe_one, args, 0, s));
}

/* ---- ranks ---- */

typedef int (*pe_rank_fn)(int rank, int nranks, ncclComm_t comm, void *arg);

/* Runs fn in nranks forked processes sharing one ncclUniqueId made by the
 * parent; each child binds device rank % device_count, creates its
 * communicator, runs fn, destroys the communicator and exits with fn's
 * status through exit() (so the preloaded tool writes its logs). Returns
 * PE_DATA_WRONG if any rank returned it, 1 on any other failure, else 0. */
static int pe_run_ranks(int nranks, pe_rank_fn fn, void *arg) {
  ncclUniqueId id;
  PE_NCCL(ncclGetUniqueId(&id));
  fflush(NULL);
  pid_t pids[16];
  if (nranks > 16) return 1;
  for (int r = 0; r < nranks; r++) {
    pid_t p = fork();
    if (p < 0) { perror("fork"); return 1; }
    if (p == 0) {
      int ndev = 1;
      PE_CUDA(cudaGetDeviceCount(&ndev));
      PE_CUDA(cudaSetDevice(r % ndev));
      pe_register_kernels();
      ncclComm_t comm;
      PE_NCCL(ncclCommInitRank(&comm, nranks, id, r));
      int st = fn(r, nranks, comm, arg);
      PE_NCCL(ncclCommDestroy(comm));
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
    if (st == PE_DATA_WRONG && result == 0) result = PE_DATA_WRONG;
    else if (st != 0 && st != PE_DATA_WRONG) result = 1;
  }
  return result;
}

#endif
