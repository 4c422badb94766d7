/* cudart_fork.c - self-tests of fork handling: a child forked after the
 * runtime is in use (even with work pending and other threads inside the
 * runtime) gets a fresh, usable runtime; the parent's handles are invalid
 * there. (Real CUDA forbids using the runtime in such a child.) */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cudart_test.h"

typedef struct gate { pthread_mutex_t mu; pthread_cond_t cv; int open; } gate;
static gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
static void gate_wait(void *p) {
  pthread_mutex_lock(&g.mu);
  while (!g.open) pthread_cond_wait(&g.cv, &g.mu);
  pthread_mutex_unlock(&g.mu);
}
static void gate_open(void) {
  pthread_mutex_lock(&g.mu);
  g.open = 1;
  pthread_cond_broadcast(&g.cv);
  pthread_mutex_unlock(&g.mu);
}

static atomic_int child_hostfn;
static void child_fn(void *p) { atomic_store(&child_hostfn, 1); }

/* Runs in the child; returns its exit status (0 = all good). */
static int child_body(cudaStream_t parent_stream, void *parent_dev_mem) {
  alarm(20);
  if (cudaStreamQuery(parent_stream) != cudaErrorInvalidResourceHandle) return 10;
  struct cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, parent_dev_mem) != cudaSuccess ||
      a.type != cudaMemoryTypeUnregistered) return 11;
  cudaGetLastError();
  cudaStream_t s;
  if (cudaStreamCreate(&s) != cudaSuccess) return 12;
  int *d, h = 0, v = 5;
  if (cudaMalloc((void **)&d, sizeof(int)) != cudaSuccess) return 13;
  if (cudaMemcpyAsync(d, &v, sizeof v, cudaMemcpyHostToDevice, s) != cudaSuccess) return 14;
  if (cudaLaunchHostFunc(s, child_fn, NULL) != cudaSuccess) return 15;
  if (cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, s) != cudaSuccess) return 16;
  if (cudaStreamSynchronize(s) != cudaSuccess) return 17;
  if (h != 5 || !atomic_load(&child_hostfn)) return 18;
  /* The legacy default stream works too. */
  if (cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost) != cudaSuccess) return 19;
  if (cudaDeviceSynchronize() != cudaSuccess) return 20;
  if (cudaFree(d) != cudaSuccess) return 21;
  return 0;
}

static int wait_child(pid_t pid) {
  int status = 0;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFEXITED(status), "child died (status 0x%x)", status);
  return WEXITSTATUS(status);
}

START_TEST(child_gets_fresh_usable_runtime) {
  cudaStream_t s;
  CK_CUDA(cudaStreamCreate(&s));
  void *d;
  CK_CUDA(cudaMalloc(&d, 64));
  /* The parent's stream is busy (its worker blocked) at fork time. */
  CK_CUDA(cudaLaunchHostFunc(s, gate_wait, NULL));
  CK_CUDA(cudaLaunchHostFunc(NULL, gate_wait, NULL));
  pid_t pid = fork();
  if (pid == 0) _exit(child_body(s, d));
  ck_assert_int_ge(pid, 0);
  ck_assert_int_eq(wait_child(pid), 0);
  /* The parent is unaffected. */
  ck_assert_int_eq(cudaStreamQuery(s), cudaErrorNotReady);
  gate_open();
  CK_CUDA(cudaDeviceSynchronize());
  CK_CUDA(cudaFree(d));
}
END_TEST

/* The churn threads must not use Check's assertions: a child forked while
 * one of them holds Check's internal lock would deadlock in its first
 * assertion. They count failures instead. */
static atomic_int stop, churn_failures, churn_iterations;
static void *churn(void *p) {
  cudaStream_t s;
  if (cudaStreamCreate(&s) != cudaSuccess) atomic_fetch_add(&churn_failures, 1);
  while (!atomic_load(&stop)) {
    void *m;
    cudaEvent_t e;
    int bad = cudaMalloc(&m, 128) != cudaSuccess;
    bad |= cudaMemsetAsync(m, 0, 128, s) != cudaSuccess;
    bad |= cudaEventCreate(&e) != cudaSuccess;
    bad |= cudaEventRecord(e, s) != cudaSuccess;
    bad |= cudaStreamWaitEvent(NULL, e, 0) != cudaSuccess;
    bad |= cudaEventDestroy(e) != cudaSuccess;
    bad |= cudaFree(m) != cudaSuccess;
    if (bad) atomic_fetch_add(&churn_failures, 1);
    atomic_fetch_add(&churn_iterations, 1);
  }
  if (cudaStreamSynchronize(s) != cudaSuccess) atomic_fetch_add(&churn_failures, 1);
  return NULL;
}

START_TEST(fork_while_other_threads_use_the_runtime) {
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, churn, NULL);
  for (int k = 0; k < 20; k++) {
    test_sleep_ms(2);
    cudaStream_t none = (cudaStream_t)(uintptr_t)0x4000;
    pid_t pid = fork();
    if (pid == 0) _exit(child_body(none, (void *)&stop));
    ck_assert_int_ge(pid, 0);
    ck_assert_int_eq(wait_child(pid), 0);
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  ck_assert_int_eq(atomic_load(&churn_failures), 0);
  ck_assert_int_gt(atomic_load(&churn_iterations), 20);
}
END_TEST

int main(void) {
  Suite *s = suite_create("sim.cudart.fork");
  TCase *tc = tcase_create("fork");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, child_gets_fresh_usable_runtime);
  tcase_add_test(tc, fork_while_other_threads_use_the_runtime);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
