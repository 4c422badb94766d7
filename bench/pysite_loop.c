/* pysite_loop.c - the timed loop of bench/bench_pysite.py: N calls of
 * ncclCommCount (an intercepted NCCL call that does nothing else) from the
 * calling thread - which runs Python when Python calls this through ctypes -
 * or from a new native thread without Python state. ncclCommCount is taken
 * from the global scope, so with liba2acheck.so preloaded it is the wrapper.
 * The difference between the two is what computing a Python call site
 * (shim/rt_python.c, a2a_rt_py_site) adds to an NCCL call. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <time.h>

typedef int (*count_fn)(void *comm, int *count);

typedef struct job {
  void *comm;
  long n;
  double ns;
} job;

static void *run(void *arg) {
  job *j = arg;
  count_fn f = (count_fn)dlsym(RTLD_DEFAULT, "ncclCommCount");
  int c = 0;
  struct timespec a, b;
  if (!f) return NULL;
  f(j->comm, &c);
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (long i = 0; i < j->n; i++) f(j->comm, &c);
  clock_gettime(CLOCK_MONOTONIC, &b);
  j->ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)j->n;
  return NULL;
}

/* ns per call on the calling thread. */
double pysite_loop(void *comm, long n) {
  job j = {comm, n, -1};
  run(&j);
  return j.ns;
}

/* ns per call on a native thread (no Python state). */
double pysite_loop_native(void *comm, long n) {
  job j = {comm, n, -1};
  pthread_t t;
  if (pthread_create(&t, NULL, run, &j) != 0) return -1;
  pthread_join(t, NULL);
  return j.ns;
}
