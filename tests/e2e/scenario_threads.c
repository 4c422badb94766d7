/* scenario_threads.c - ranks as threads of one process, one communicator
 * per thread (ncclCommInitRank from each thread after cudaSetDevice), 4
 * ranks, two streams per rank (compute + communication) with event edges.
 * Each step: Broadcast from root t%4, Reduce to root (t+1)%4, AllReduce,
 * ncclBcast of a small int header; data verified.
 *
 *   scenario_threads ok      correct
 *   scenario_threads ptds    correct: compute and communication of every
 *                            thread on cudaStreamPerThread (the same handle
 *                            in every thread, a different stream in each)
 *   scenario_threads split   correct: additionally every thread splits its
 *                            communicator by rank % 2 (concurrently, as the
 *                            split is collective over the threads) and runs
 *                            an AllReduce on its half each step
 *   scenario_threads slow    correct: "ok", with thread 2 computing on the host
 *                            for 4 s before its first collective and again
 *                            before step 3's, while the others wait in
 *                            cudaStreamSynchronize for collectives that need
 *                            it (QA: was group.deadlock, exit 66: the process
 *                            was taken as blocked as a whole)
 *   scenario_threads skip_ptds  BUGGY: "skip" with cudaStreamPerThread streams
 *   scenario_threads skip    BUGGY: thread 2 skips the Broadcast of step 3
 *                            (an early "continue"): the others hang in it
 *                            -> group.deadlock, the process exits 66
 *   scenario_threads quit    BUGGY: thread 2 returns at step 3 (an early
 *                            "return"), before its Broadcast: the others hang
 *                            in it while main waits in pthread_join. Another
 *                            thread could still post for rank 2, so no
 *                            deadlock is proven: group.hang (the story: rank
 *                            2's posting thread has exited), exit 66
 */
#include "scenario_common.h"

#define NR 4
#define N 2048L
#define STEPS 6

static const char *mode;
static ncclUniqueId g_id;
static sc_tbarrier g_bar;
static long g_bad[NR];

static void *rank_thread(void *arg) {
  int rank = (int)(intptr_t)arg;
  sc_rank = rank;
  SC_CUDA(cudaSetDevice(rank));
  ncclComm_t comm, half = NULL;
  SC_NCCL(ncclCommInitRank(&comm, NR, g_id, rank));
  int do_split = strcmp(mode, "split") == 0;
  float *hx = NULL; /* scratch for the half AllReduce */
  if (do_split) {
    SC_NCCL(ncclCommSplit(comm, rank % 2, rank, &half, NULL));
    SC_CUDA(cudaMalloc((void **)&hx, N * sizeof(float)));
  }
  cudaStream_t comp, comm_s;
  int ptds = strcmp(mode, "ptds") == 0 || strcmp(mode, "skip_ptds") == 0;
  if (ptds) {
    comp = comm_s = cudaStreamPerThread;
  } else {
    SC_CUDA(cudaStreamCreateWithFlags(&comp, cudaStreamNonBlocking));
    SC_CUDA(cudaStreamCreateWithFlags(&comm_s, cudaStreamNonBlocking));
  }
  cudaEvent_t produced, communicated;
  SC_CUDA(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming));
  SC_CUDA(cudaEventCreateWithFlags(&communicated, cudaEventDisableTiming));
  float *b, *r, *a;
  int *hdr;
  SC_CUDA(cudaMalloc((void **)&b, N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&r, N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&a, N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&hdr, 4 * sizeof(int)));
  float *h = malloc(N * sizeof(float));
  long bad = 0;
  for (int t = 0; t < STEPS; t++) {
    int broot = t % NR, rroot = (t + 1) % NR;
    sc_fill(b, N, rank == broot ? (float)(t * 1000) : -1.0f, 1.0f, comp);
    sc_fill(a, N, (float)(rank + 1), 0.0f, comp);
    int hv[4] = {t, rank, broot, 7};
    SC_CUDA(cudaMemcpyAsync(hdr, hv, sizeof hv, cudaMemcpyHostToDevice, comp));
    SC_CUDA(cudaEventRecord(produced, comp));
    SC_CUDA(cudaStreamWaitEvent(comm_s, produced, 0));
    if (strcmp(mode, "quit") == 0 && rank == 2 && t == 3) {
      g_bad[rank] = bad;
      return NULL; /* (the thread exits; nobody reaches the final barrier) */
    }
    if (strcmp(mode, "slow") == 0 && rank == 2 && (t == 0 || t == 3))
      sleep(4); /* host work (a sleep looks the same to a2acheck) */
    if (!(strncmp(mode, "skip", 4) == 0 && rank == 2 && t == 3))
      SC_NCCL(ncclBroadcast(b, b, N, ncclFloat32, broot, comm, comm_s));
    SC_NCCL(ncclReduce(a, r, N, ncclFloat32, ncclMax, rroot, comm, comm_s));
    SC_NCCL(ncclAllReduce(a, a, N, ncclFloat32, ncclProd, comm, comm_s));
    SC_NCCL(ncclBcast(hdr, 4, ncclInt32, broot, comm, comm_s));
    if (do_split) SC_NCCL(ncclAllReduce(hx, hx, N, ncclFloat32, ncclSum, half, comm_s));
    SC_CUDA(cudaEventRecord(communicated, comm_s));
    SC_CUDA(cudaStreamWaitEvent(comp, communicated, 0));
    SC_CUDA(cudaStreamSynchronize(comp));
    SC_CUDA(cudaMemcpy(h, b, N * sizeof(float), cudaMemcpyDeviceToHost));
    for (long i = 0; i < N; i++)
      if (h[i] != (float)(t * 1000 + i) && bad++ < 3) fprintf(stderr, "rank %d: bcast[%ld]=%g\n", rank, i, h[i]);
    if (rank == rroot) {
      SC_CUDA(cudaMemcpy(h, r, N * sizeof(float), cudaMemcpyDeviceToHost));
      for (long i = 0; i < N; i++)
        if (h[i] != (float)NR && bad++ < 3) fprintf(stderr, "rank %d: reduce[%ld]=%g\n", rank, i, h[i]);
    }
    SC_CUDA(cudaMemcpy(h, a, N * sizeof(float), cudaMemcpyDeviceToHost));
    for (long i = 0; i < N; i++)
      if (h[i] != 24.0f && bad++ < 3) fprintf(stderr, "rank %d: prod[%ld]=%g\n", rank, i, h[i]);
    SC_CUDA(cudaMemcpy(hv, hdr, sizeof hv, cudaMemcpyDeviceToHost));
    if ((hv[0] != t || hv[1] != broot || hv[2] != broot) && bad++ < 3) fprintf(stderr, "rank %d: hdr\n", rank);
  }
  g_bad[rank] = bad;
  free(h);
  SC_CUDA(cudaFree(b));
  SC_CUDA(cudaFree(r));
  SC_CUDA(cudaFree(a));
  SC_CUDA(cudaFree(hdr));
  SC_CUDA(cudaEventDestroy(produced));
  SC_CUDA(cudaEventDestroy(communicated));
  if (!ptds) {
    SC_CUDA(cudaStreamDestroy(comp));
    SC_CUDA(cudaStreamDestroy(comm_s));
  }
  sc_tbarrier_wait(&g_bar); /* nobody destroys while a peer still communicates */
  if (half) SC_NCCL(ncclCommDestroy(half));
  if (hx) SC_CUDA(cudaFree(hx));
  SC_NCCL(ncclCommDestroy(comm));
  return NULL;
}

int main(int argc, char **argv) {
  mode = argc > 1 ? argv[1] : "ok";
  sc_register_kernels();
  SC_NCCL(ncclGetUniqueId(&g_id));
  sc_tbarrier_init(&g_bar, NR);
  pthread_t th[NR];
  for (int r = 0; r < NR; r++) pthread_create(&th[r], NULL, rank_thread, (void *)(intptr_t)r);
  for (int r = 0; r < NR; r++) pthread_join(th[r], NULL);
  long bad = 0;
  for (int r = 0; r < NR; r++) {
    printf("rank %d errors %ld\n", r, g_bad[r]);
    bad += g_bad[r];
  }
  return bad ? SC_DATA_WRONG : 0;
}
