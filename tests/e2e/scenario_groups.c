/* scenario_groups.c - several process groups made by ncclCommSplit (torch
 * new_group with init_process_group(device_id=...): eager groups, every
 * rank calls split, non-members pass NCCL_SPLIT_NOCOLOR), 4 ranks as forked
 * processes, used in the same order by every rank on one stream.
 *
 *   scenario_groups ok           world + pairs {0,1},{2,3} (color rank/2) +
 *                                parity {0,2},{1,3} + a group {0,1,2} that
 *                                rank 3 is not in (NOCOLOR -> NULL comm);
 *                                AllReduce, AllGather, ReduceScatter on them,
 *                                data verified
 *   scenario_groups wrong_color  BUGGY: rank 3 passes color 0 instead of 1
 *                                for the parity group, which therefore has
 *                                3 members {0,2,3}; the program sizes its
 *                                AllGather output for the 2 members it
 *                                expects -> layout.out-of-bounds
 *   scenario_groups rev_key      BUGGY: a split with reversed keys (sub rank =
 *                                3 - rank); in it sub rank 0 (global 3)
 *                                sends 1024 floats to sub rank 1 (global
 *                                2), which receives 512 -> size.p2p-mismatch
 *                                naming comm ranks 0 and 1 = global ranks 3
 *                                and 2
 *   scenario_groups skip_split   BUGGY: rank 3, not a member of {0,1,2},
 *                                does not call ncclCommSplit at all (it must,
 *                                with NCCL_SPLIT_NOCOLOR) and goes on to the
 *                                next world AllReduce: ranks 0-2 wait in the
 *                                split for rank 3, rank 3 waits in the
 *                                AllReduce for them -> deadlock (exit 66)
 *   scenario_groups grouped      "ok" with the pair and parity splits made in
 *                                one ncclGroupStart/ncclGroupEnd (NCCL
 *                                creates both at the group's end and only
 *                                then stores them in the program's
 *                                variables) -> no finding
 *   scenario_groups grouped_fail "grouped", after a first try whose group
 *                                fails (a split and an AllReduce with an
 *                                invalid type in one group: NCCL creates
 *                                nothing and never stores the child), made
 *                                by a helper whose local variable the
 *                                program's stack then reuses -> no finding,
 *                                no crash (QA: the shim once read that
 *                                variable as a child)
 *   scenario_groups grouped_count BUGGY: "grouped", and rank 3's AllReduce on
 *                                its pair moves half the elements ->
 *                                size.collective-mismatch on the pair
 *                                communicator, which a2acheck knows only
 *                                from the group's end on
 */
#include "scenario_common.h"

#define NR 4
#define N 1024L

static const char *mode;

static float g_rank_sum; /* sum of member ranks, for the want function */
static float want_sum(long i, const void *ctx) { (void)ctx; return g_rank_sum * (1.0f + (float)i); }

static int g_half_count; /* this rank's next AllReduce moves half the elements */
static long allreduce_check(ncclComm_t c, float *buf, int rank, cudaStream_t s, const int *members,
                            int nmem) {
  sc_fill(buf, N, (float)rank, (float)rank, s); /* buf[i] = rank * (1 + i) */
  SC_NCCL(ncclAllReduce(buf, buf, g_half_count ? N / 2 : N, ncclFloat32, ncclSum, c, s));
  if (g_half_count) {
    g_half_count = 0;
    SC_CUDA(cudaStreamSynchronize(s));
    return 0; /* the data is the bug's */
  }
  SC_CUDA(cudaStreamSynchronize(s));
  g_rank_sum = 0;
  for (int k = 0; k < nmem; k++) g_rank_sum += (float)members[k];
  return sc_verify(buf, N, want_sum, NULL, "allreduce");
}

/* The failed first try of "grouped_fail": its child variable is this
 * frame's, and the group's end fails. Returns ncclGroupEnd's result. */
__attribute__((noinline)) static ncclResult_t failed_grouped_split(ncclComm_t world, int rank, float *buf,
                                                                   cudaStream_t s) {
  ncclComm_t c = NULL;
  SC_NCCL(ncclGroupStart());
  SC_NCCL(ncclCommSplit(world, rank / 2, rank, &c, NULL));
  (void)ncclAllReduce(buf, buf, N, (ncclDataType_t)42, ncclSum, world, s); /* NCCL: invalid type */
  ncclResult_t r = ncclGroupEnd();
  if (c) fprintf(stderr, "rank %d: a failed group published a child\n", rank);
  return r;
}
/* Writes over the stack the returned helper used. */
__attribute__((noinline)) static double scribble(int k) {
  volatile double a[64];
  double t = 0;
  for (int i = 0; i < 64; i++) a[i] = 1.5 + i * k;
  for (int i = 0; i < 64; i++) t += a[i];
  return t;
}

static int rank_main(int rank, int nranks, ncclUniqueId id, void *arg) {
  (void)arg;
  ncclComm_t world, pair, parity, first3 = NULL;
  SC_NCCL(ncclCommInitRank(&world, nranks, id, rank));
  cudaStream_t s;
  SC_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float *buf, *gat;
  SC_CUDA(cudaMalloc((void **)&buf, N * sizeof(float)));
  long bad = 0;
  int all[] = {0, 1, 2, 3};
  bad += allreduce_check(world, buf, rank, s, all, 4);

  if (strcmp(mode, "rev_key") == 0) {
    ncclComm_t rev;
    SC_NCCL(ncclCommSplit(world, 0, nranks - 1 - rank, &rev, NULL));
    int sub = -1;
    SC_NCCL(ncclCommUserRank(rev, &sub));
    if (sub != nranks - 1 - rank) bad++;
    int next = (sub + 1) % nranks, prev = (sub + nranks - 1) % nranks;
    size_t rc = rank == 2 ? N / 2 : N; /* the bug: global rank 2 (sub 1) receives half */
    SC_NCCL(ncclGroupStart());
    SC_NCCL(ncclSend(buf, N, ncclFloat32, next, rev, s));
    float *rbuf;
    SC_CUDA(cudaMalloc((void **)&rbuf, N * sizeof(float)));
    SC_NCCL(ncclRecv(rbuf, rc, ncclFloat32, prev, rev, s));
    SC_NCCL(ncclGroupEnd());
    SC_CUDA(cudaStreamSynchronize(s));
    SC_NCCL(ncclCommDestroy(rev));
    SC_CUDA(cudaFree(rbuf));
    sc_sh->result[rank] = bad;
    SC_CUDA(cudaFree(buf));
    SC_CUDA(cudaStreamDestroy(s));
    SC_NCCL(ncclCommDestroy(world));
    return 0;
  }
  if (strcmp(mode, "grouped_fail") == 0) {
    if (failed_grouped_split(world, rank, buf, s) == ncclSuccess) bad++;
    if (scribble(rank + 2) < 0) bad++;
    ncclResult_t st;
    SC_NCCL(ncclCommGetAsyncError(world, &st)); /* where the shim looks for published children */
  }
  int grouped = strncmp(mode, "grouped", 7) == 0;
  if (grouped) SC_NCCL(ncclGroupStart());
  SC_NCCL(ncclCommSplit(world, rank / 2, rank, &pair, NULL));
  int parity_color = rank % 2;
  if (strcmp(mode, "wrong_color") == 0 && rank == 3) parity_color = 0; /* the bug */
  SC_NCCL(ncclCommSplit(world, parity_color, rank, &parity, NULL));
  if (grouped) SC_NCCL(ncclGroupEnd());
  if (strcmp(mode, "skip_split") == 0 && rank == 3) {
    /* the bug: "I am not in the group, so I do not call split" */
  } else {
    SC_NCCL(ncclCommSplit(world, rank < 3 ? 0 : NCCL_SPLIT_NOCOLOR, rank, &first3, NULL));
    if ((rank < 3) != (first3 != NULL)) {
      fprintf(stderr, "rank %d: NOCOLOR split gave comm %p\n", rank, (void *)first3);
      bad++;
    }
  }
  int pair_m[] = {rank / 2 * 2, rank / 2 * 2 + 1};
  int par_m[] = {rank % 2, rank % 2 + 2};
  int f3[] = {0, 1, 2};

  /* every group, in the same order on every rank */
  bad += allreduce_check(world, buf, rank, s, all, 4);
  g_half_count = strcmp(mode, "grouped_count") == 0 && rank == 3; /* the bug */
  bad += allreduce_check(pair, buf, rank, s, pair_m, 2);
  if (first3) bad += allreduce_check(first3, buf, rank, s, f3, 3);

  /* AllGather over the parity group: the output is sized for the 2 members
   * the program expects (torch: all_gather_into_tensor with world/2 rows) */
  int pn = 0;
  SC_NCCL(ncclCommCount(parity, &pn));
  SC_CUDA(cudaMalloc((void **)&gat, 2 * N * sizeof(float)));
  sc_fill(buf, N, (float)(rank * 10000), 1.0f, s);
  SC_NCCL(ncclAllGather(buf, gat, N, ncclFloat32, parity, s));
  SC_CUDA(cudaStreamSynchronize(s));
  if (strcmp(mode, "ok") == 0 || strcmp(mode, "grouped") == 0 || strcmp(mode, "grouped_fail") == 0) {
    float *h = malloc(2 * N * sizeof(float));
    SC_CUDA(cudaMemcpy(h, gat, 2 * N * sizeof(float), cudaMemcpyDeviceToHost));
    for (int k = 0; k < 2; k++)
      for (long i = 0; i < N; i++)
        if (h[k * N + i] != (float)(par_m[k] * 10000 + i) && bad++ < 3)
          fprintf(stderr, "rank %d: gather[%d][%ld] = %g\n", rank, k, i, (double)h[k * N + i]);
    free(h);
    /* ReduceScatter over the pair group, in place: recv = send + subrank*N */
    int sub = 0;
    SC_NCCL(ncclCommUserRank(pair, &sub));
    sc_fill(gat, 2 * N, 1.0f, 0.0f, s);
    SC_NCCL(ncclReduceScatter(gat, gat + sub * N, N, ncclFloat32, ncclSum, pair, s));
    SC_CUDA(cudaStreamSynchronize(s));
    float *h2 = malloc(N * sizeof(float));
    SC_CUDA(cudaMemcpy(h2, gat + sub * N, N * sizeof(float), cudaMemcpyDeviceToHost));
    for (long i = 0; i < N; i++)
      if (h2[i] != 2.0f && bad++ < 3) fprintf(stderr, "rank %d: rs[%ld] = %g\n", rank, i, (double)h2[i]);
    free(h2);
    /* AllGather in place on the parity group: sendbuff = recvbuff +
     * subrank*N, where the subrank (0 or 1) differs from the global rank */
    int psub = 0;
    SC_NCCL(ncclCommUserRank(parity, &psub));
    sc_fill(gat + psub * N, N, (float)(rank * 10000), 1.0f, s);
    SC_NCCL(ncclAllGather(gat + psub * N, gat, N, ncclFloat32, parity, s));
    SC_CUDA(cudaStreamSynchronize(s));
    float *h3 = malloc(2 * N * sizeof(float));
    SC_CUDA(cudaMemcpy(h3, gat, 2 * N * sizeof(float), cudaMemcpyDeviceToHost));
    for (int k = 0; k < 2; k++)
      for (long i = 0; i < N; i++)
        if (h3[k * N + i] != (float)(par_m[k] * 10000 + i) && bad++ < 3)
          fprintf(stderr, "rank %d: inplace gather[%d][%ld] = %g\n", rank, k, i, (double)h3[k * N + i]);
    free(h3);
  }
  (void)pn;
  bad += allreduce_check(world, buf, rank, s, all, 4);

  sc_sh->result[rank] = bad;
  SC_CUDA(cudaFree(buf));
  SC_CUDA(cudaFree(gat));
  SC_CUDA(cudaStreamDestroy(s));
  if (first3) SC_NCCL(ncclCommDestroy(first3));
  SC_NCCL(ncclCommDestroy(parity));
  SC_NCCL(ncclCommDestroy(pair));
  SC_NCCL(ncclCommDestroy(world));
  return bad ? SC_DATA_WRONG : 0;
}

int main(int argc, char **argv) {
  mode = argc > 1 ? argv[1] : "ok";
  return sc_fork_ranks(NR, rank_main, NULL);
}
