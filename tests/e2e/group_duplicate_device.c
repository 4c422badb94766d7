/* group_duplicate_device.c - group.duplicate-device: one thread per rank in
 * one process (A2ASIM_DEVICES=2).
 *   buggy: both threads bind device 0 (device = global_rank / ranks_per_node
 *          style mistake) before ncclCommInitRank with the same id: NCCL
 *          fails both inits (ncclInvalidUsage, "Duplicate GPU detected");
 *   fixed: thread r binds device r. */
#include "e2e_common.h"

static ncclUniqueId g_id;
static int g_fixed;

static void *rank_thread(void *arg) {
  int rank = (int)(intptr_t)arg;
  E2E_CUDA(cudaSetDevice(g_fixed ? rank : 0));
  ncclComm_t comm = NULL;
  ncclResult_t r = ncclCommInitRank(&comm, 2, g_id, rank);
  printf("rank %d: ncclCommInitRank -> %d\n", rank, (int)r);
  if (r == ncclSuccess) E2E_NCCL(ncclCommDestroy(comm));
  return NULL;
}

int main(int argc, char **argv) {
  g_fixed = e2e_fixed(argc, argv);
  E2E_NCCL(ncclGetUniqueId(&g_id));
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, rank_thread, (void *)(intptr_t)i);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  return 0;
}
