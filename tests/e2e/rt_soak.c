/* rt_soak.c - many operations with findings firing constantly, for the soak
 * test (rt_soak.py, ctest -R rt.soak).
 *   rt_soak N
 * creates a 1-rank communicator on the simulator, then makes N calls of
 * ncclGroupEnd() without ncclGroupStart() (each one a group.unbalanced
 * error) spread over NSITES distinct call sites, so both paths of the
 * report sink run all the time: a new finding (written until
 * A2ACHECK_MAX_PER_CHECK, then only counted) and a repeat (counted). Every
 * 1000th call is an 8-byte ncclAllReduce plus a stream synchronize, so the
 * simulator's and the runtime's threads are live throughout.
 * At 10^3 (warm-up) and at every power of ten from 10^5 up to N it prints
 *   checkpoint ops=<n> rss_kb=<VmRSS> fds=<open fds> threads=<threads>
 *              logbytes=<total size of a2acheck.* in A2ACHECK_LOG_DIR> secs=<s>
 * and exits 0. */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <dirent.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define NSITES 256

/* NSITES distinct call sites (each function's own return address). */
#define SITE(i)                                             \
  __attribute__((noinline)) static int site_##i(void) {     \
    int r = ncclGroupEnd();                                 \
    __asm__ volatile("" ::: "memory");                      \
    return r;                                               \
  }
#define S4(i) SITE(i##0) SITE(i##1) SITE(i##2) SITE(i##3)
#define S16(i) S4(i##0) S4(i##1) S4(i##2) S4(i##3)
#define S64(i) S16(i##0) S16(i##1) S16(i##2) S16(i##3)
S64(1) S64(2) S64(3) S64(4)
#define P4(i) site_##i##0, site_##i##1, site_##i##2, site_##i##3,
#define P16(i) P4(i##0) P4(i##1) P4(i##2) P4(i##3)
#define P64(i) P16(i##0) P16(i##1) P16(i##2) P16(i##3)
static int (*const sites[NSITES])(void) = {P64(1) P64(2) P64(3) P64(4)};

static long status_kb(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  size_t n = strlen(key);
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, key, n) == 0) v = strtol(line + n, NULL, 10);
  if (f) fclose(f);
  return v;
}

static int count_entries(const char *dir, const char *prefix, long long *bytes) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.' || strncmp(e->d_name, prefix, strlen(prefix)) != 0) continue;
    n++;
    if (bytes) {
      char p[4096];
      struct stat sb;
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      if (stat(p, &sb) == 0) *bytes += sb.st_size;
    }
  }
  closedir(d);
  return n;
}

static void checkpoint(long ops, double t0) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  long long bytes = 0;
  const char *dir = getenv("A2ACHECK_LOG_DIR");
  if (dir) count_entries(dir, "a2acheck.", &bytes);
  int fds = count_entries("/proc/self/fd", "", NULL) - 1;   /* less opendir's own */
  printf("checkpoint ops=%ld rss_kb=%ld fds=%d threads=%ld logbytes=%lld secs=%.2f\n", ops,
         status_kb("VmRSS:"), fds, status_kb("Threads:"), bytes,
         (double)ts.tv_sec + ts.tv_nsec * 1e-9 - t0);
  fflush(stdout);
}

int main(int argc, char **argv) {
  long n = argc > 1 ? strtol(argv[1], NULL, 10) : 100000;
  ncclUniqueId id;
  ncclComm_t comm = NULL;
  cudaStream_t s;
  float *buf = NULL;
  if (cudaSetDevice(0) != cudaSuccess || cudaStreamCreate(&s) != cudaSuccess ||
      cudaMalloc((void **)&buf, 8) != cudaSuccess || ncclGetUniqueId(&id) != ncclSuccess ||
      ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess) {
    fprintf(stderr, "rt_soak: set-up failed\n");
    return 2;
  }
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  double t0 = (double)ts.tv_sec + ts.tv_nsec * 1e-9;
  long next = 1000;
  for (long i = 1; i <= n; i++) {
    if (sites[i % NSITES]() == ncclSuccess) {
      fprintf(stderr, "rt_soak: ncclGroupEnd without a group did not fail\n");
      return 2;
    }
    if (i % 1000 == 0) {
      if (ncclAllReduce(buf, buf, 2, ncclFloat, ncclSum, comm, s) != ncclSuccess ||
          cudaStreamSynchronize(s) != cudaSuccess) {
        fprintf(stderr, "rt_soak: allreduce failed\n");
        return 2;
      }
    }
    if (i == next || i == n) {
      checkpoint(i, t0);
      next = next == 1000 ? 100000 : next * 10;
      if (i == n) break;
    }
  }
  ncclCommDestroy(comm);
  cudaFree(buf);
  cudaStreamDestroy(s);
  return 0;
}
