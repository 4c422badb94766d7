/* rt_fork.c - fork after using the shim, with another thread reporting
 * findings while the process forks (the atfork handlers must leave the
 * child usable: no lock held by a thread that does not exist there).
 *
 * The main thread makes an intercepted call (the runtime initializes),
 * starts a thread that calls ncclGroupEnd() without ncclGroupStart() in a
 * loop (one group.unbalanced finding, many occurrences), waits on a barrier
 * until that thread runs, then forks NCHILD children. Each child makes its
 * own unbalanced call from child_site() and exits 0. The parent reaps them,
 * stops the thread, and exits 0. rt_fork.sh then requires 1 + NCHILD log
 * pairs, each with its own pid, each complete with a summary record. */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define NCHILD 3

static pthread_barrier_t started;
static atomic_int stop;

static void *reporter(void *arg) {
  (void)arg;
  ncclGroupEnd();
  pthread_barrier_wait(&started);
  while (!atomic_load(&stop)) ncclGroupEnd();
  return NULL;
}

__attribute__((noinline)) static void child_site(void) {
  ncclGroupEnd();
  __asm__ volatile("" ::: "memory");
}

int main(void) {
  cudaDeviceSynchronize();   /* intercepted: the runtime initializes */
  pthread_barrier_init(&started, NULL, 2);
  pthread_t t;
  if (pthread_create(&t, NULL, reporter, NULL) != 0) return 2;
  pthread_barrier_wait(&started);
  for (int i = 0; i < NCHILD; i++) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return 2;
    if (pid == 0) {
      child_site();
      printf("child %d done\n", i);
      exit(0);
    }
  }
  int failed = 0;
  for (int i = 0; i < NCHILD; i++) {
    int st = 0;
    if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) failed = 1;
  }
  atomic_store(&stop, 1);
  pthread_join(t, NULL);
  printf("parent done, children %s\n", failed ? "FAILED" : "ok");
  return failed;
}
