/* group_concurrent_use.c - group.concurrent-use: two threads, one
 * communicator. Thread A opens a group and posts an all-reduce; thread B
 * posts its own all-reduce on the same communicator
 *   buggy: while A's group is still open (the barriers make the overlap
 *          deterministic);
 *   fixed: only after A's ncclGroupEnd returned. */
#include "e2e_common.h"

#define N 1024

static ncclComm_t g_comm;
static float *g_a, *g_b;
static cudaStream_t g_sa, g_sb;
static e2e_barrier g_bar;
static int g_fixed;

static void *thread_a(void *arg) {
  E2E_CUDA(cudaSetDevice(0));
  E2E_NCCL(ncclGroupStart());
  E2E_NCCL(ncclAllReduce(g_a, g_a, N, ncclFloat, ncclSum, g_comm, g_sa));
  if (!g_fixed) {
    e2e_barrier_wait(&g_bar); /* 1: B may post now */
    e2e_barrier_wait(&g_bar); /* 2: B has posted */
  }
  E2E_NCCL(ncclGroupEnd());
  if (g_fixed) e2e_barrier_wait(&g_bar); /* 1: B may post now */
  E2E_CUDA(cudaStreamSynchronize(g_sa));
  return NULL;
}

static void *thread_b(void *arg) {
  E2E_CUDA(cudaSetDevice(0));
  e2e_barrier_wait(&g_bar); /* 1 */
  E2E_TRY(ncclAllReduce(g_b, g_b, N, ncclFloat, ncclSum, g_comm, g_sb));
  if (!g_fixed) e2e_barrier_wait(&g_bar); /* 2 */
  E2E_CUDA(cudaStreamSynchronize(g_sb));
  return NULL;
}

int main(int argc, char **argv) {
  g_fixed = e2e_fixed(argc, argv);
  E2E_CUDA(cudaSetDevice(0));
  g_comm = e2e_comm1();
  g_a = e2e_dalloc(N * sizeof(float));
  g_b = e2e_dalloc(N * sizeof(float));
  g_sa = e2e_stream();
  g_sb = e2e_stream();
  e2e_barrier_init(&g_bar, 2);
  pthread_t a, b;
  pthread_create(&a, NULL, thread_a, NULL);
  pthread_create(&b, NULL, thread_b, NULL);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  E2E_NCCL(ncclCommDestroy(g_comm));
  return 0;
}
