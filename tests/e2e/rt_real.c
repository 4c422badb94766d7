/* rt_real.c - what an application observes through a fixed series of NCCL
 * and CUDA runtime calls, printed on stdout so that runs with and without
 * liba2acheck.so preloaded can be diffed (rt_real.sh). Linked directly to
 * the real libnccl.so.2 and libcudart.so.13 (no GPU: comm init fails with
 * ncclUnhandledCudaError, most CUDA calls with 35) or, when those are not
 * installed, to the simulator.
 *
 * On stderr it prints the number of threads of the process at the end
 * ("tasks N"): with A2ACHECK_DISABLE=1 it must equal the plain run's. */
#include <cuda_runtime_api.h>
#include <dirent.h>
#include <errno.h>
#include <nccl.h>
#include <stdio.h>
#include <string.h>

#define SHOW(label, expr)                                                     \
  do {                                                                        \
    errno = 777;                                                              \
    long r_ = (long)(expr);                                                   \
    printf("%-34s -> %ld (errno %d)\n", label, r_, errno);                    \
  } while (0)

static int count_tasks(void) {
  DIR *d = opendir("/proc/self/task");
  int n = 0;
  if (!d) return -1;
  for (struct dirent *e; (e = readdir(d));)
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

int main(void) {
  int v = -1;
  SHOW("ncclGetVersion", ncclGetVersion(&v));
  printf("version %d\n", v);
  for (int r = 0; r < ncclNumResults; r++)
    printf("ncclGetErrorString(%d) = %s\n", r, ncclGetErrorString((ncclResult_t)r));

  int n = -1;
  SHOW("cudaGetDeviceCount", cudaGetDeviceCount(&n));
  printf("count %d\n", n);
  SHOW("cudaPeekAtLastError", cudaPeekAtLastError());
  SHOW("cudaGetLastError", cudaGetLastError());
  SHOW("cudaGetLastError (again)", cudaGetLastError());

  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  ncclComm_t comm = NULL;
  SHOW("ncclCommInitRank", ncclCommInitRank(&comm, 1, id, 0));
  printf("comm %s\n", comm ? "set" : "NULL");
  SHOW("cudaGetLastError after init", cudaGetLastError());

  void *p = NULL;
  SHOW("cudaMalloc", cudaMalloc(&p, 1024));
  SHOW("cudaPeekAtLastError", cudaPeekAtLastError());
  SHOW("cudaDeviceSynchronize", cudaDeviceSynchronize());
  SHOW("cudaGetLastError", cudaGetLastError());
  SHOW("cudaGetLastError (again)", cudaGetLastError());
  SHOW("ncclSend(comm=NULL)", ncclSend(NULL, 1, ncclFloat, 0, NULL, NULL));
  fflush(stdout);
  fprintf(stderr, "tasks %d\n", count_tasks());
  return 0;
}
