/* nccl_shm.c - shared-memory hygiene of the simulator's NCCL.
 *
 *  1. After a normal init the communicator's /dev/shm object is gone (the
 *     last rank to arrive unlinks it) - also when the ranks are then killed.
 *  2. A rank killed before every rank arrived leaves the object (the
 *     documented residual window); the sweep run by ncclGetUniqueId removes
 *     it once its ranks are all dead (A2ASIM_NCCL_SWEEP_AGE=0 here).
 * The object name is /a2asim-nccl-<uid>-<FNV-1a 64 of the 128-byte id>.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nccl_harness.h"

static void shm_path(const ncclUniqueId *id, char *out, size_t len) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < sizeof id->internal; i++) {
    h ^= (unsigned char)id->internal[i];
    h *= 0x100000001b3ULL;
  }
  snprintf(out, len, "/dev/shm/a2asim-nccl-%u-%016llx", (unsigned)getuid(), (unsigned long long)h);
}

static int exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0;
}

static int wait_exists(const char *p, int want, int ms) {
  for (int t = 0; t < ms; t += 5) {
    if (exists(p) == want) return 1;
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, NULL);
  }
  return exists(p) == want;
}

int main(void) {
  int fails = 0;
  char path[128];
  ncclUniqueId id;

  /* 1. both ranks arrive, then get killed while their comm is live */
  NCCL_OK(ncclGetUniqueId(&id));
  shm_path(&id, path, sizeof path);
  pid_t kids[2];
  int pfd[2];
  if (pipe(pfd) != 0) return 1;
  for (int r = 0; r < 2; r++) {
    kids[r] = fork();
    if (kids[r] == 0) {
      ncclComm_t c;
      cudaSetDevice(r);
      if (ncclCommInitRank(&c, 2, id, r) != ncclSuccess) _exit(1);
      if (write(pfd[1], "x", 1) != 1) _exit(1);
      pause();          /* killed below, comm still alive */
      _exit(0);
    }
  }
  char b;
  for (int r = 0; r < 2; r++)
    if (read(pfd[0], &b, 1) != 1) FAILF("rank did not finish init");
  if (exists(path)) FAILF("%s still exists after init", path);
  for (int r = 0; r < 2; r++) kill(kids[r], SIGKILL);
  while (wait(NULL) > 0) {}

  /* 2. rank 0 waits for a rank 1 that never comes, and is killed */
  NCCL_OK(ncclGetUniqueId(&id));
  shm_path(&id, path, sizeof path);
  pid_t k = fork();
  if (k == 0) {
    ncclComm_t c;
    cudaSetDevice(0);
    ncclCommInitRank(&c, 2, id, 0);   /* blocks: rank 1 never comes */
    _exit(1);
  }
  if (!wait_exists(path, 1, 5000)) FAILF("%s never appeared", path);
  kill(k, SIGKILL);
  waitpid(k, NULL, 0);
  if (!exists(path)) FAILF("%s vanished without a sweep", path);
  setenv("A2ASIM_NCCL_SWEEP_AGE", "0", 1);
  NCCL_OK(ncclGetUniqueId(&id));       /* sweeps */
  if (exists(path)) {
    FAILF("%s left after the sweep", path);
    unlink(path);
  }
  printf("nccl_shm: %s\n", fails ? "FAILED" : "ok");
  return fails ? 1 : 0;
}
