/* scenario_a2a_single.c - torch.distributed.all_to_all_single as
 * ProcessGroupNCCL issues it (async_op=False: on the current stream, no
 * events), 4 ranks as forked processes, 20 steps, data verified every step.
 *
 *   scenario_a2a_single equal      equal splits through ncclAlltoAll
 *                                  (torch built against NCCL >= 2.28)
 *   scenario_a2a_single grouped    equal splits through the grouped
 *                                  ncclSend/ncclRecv loop (older NCCL)
 *   scenario_a2a_single unequal    unequal splits, some zero, through the
 *                                  grouped loop (zero counts are posted,
 *                                  as torch does)
 *   scenario_a2a_single idle_rank  unequal splits, and at odd steps rank 2
 *                                  neither sends nor receives anything (an
 *                                  idle expert: all its counts are zero)
 *   scenario_a2a_single idle_skip  BUGGY: "idle_rank", but the idle rank
 *                                  returns early and posts nothing at all
 *                                  (the peers still post their zero-count
 *                                  send/recv to it, which NCCL matches)
 *   scenario_a2a_single legacy_handle  "legacy" with the explicit cudaStreamLegacy
 *                                  handle instead of 0: the same warning
 *   scenario_a2a_single legacy_skip  BUGGY: "legacy" (everything on stream 0),
 *                                  and rank 3 skips the all-to-all of step 5
 *                                  -> group.deadlock, exit 66
 *   scenario_a2a_single split_bug  BUGGY: "grouped", and at step 3 rank 2
 *                                  moves half its split for rank 0 into its
 *                                  split for rank 1 (the total is right):
 *                                  size.p2p-mismatch for both pairs - both
 *                                  in rank 2's log, although one ncclSend
 *                                  call site makes both (QA: its log kept
 *                                  one, deduplicated by the site)
 *   scenario_a2a_single legacy     "equal" on the legacy default stream
 *                                  (torch's default current stream): only
 *                                  stream.default-stream may be reported.
 * Correct program: exit 0, every rank's result is its error count (0). */
#include "scenario_common.h"

#define NR 4
#define UNIT 256 /* floats: 1 KiB, a multiple of 16 bytes */

static const char *mode;

/* Elements rank s sends to rank d at step t (unequal mode): 0..3 units,
 * zero for some pairs, never zero for everybody. */
static long split(int s, int d, int t) {
  int idle = strcmp(mode, "idle_rank") == 0 || strcmp(mode, "idle_skip") == 0;
  if (idle && t % 2 == 1 && (s == 2 || d == 2)) return 0;
  if (strcmp(mode, "unequal") != 0 && !idle) return UNIT;
  return (long)((s * 3 + d * 5 + t) % 4) * UNIT / 2;
}
static float val(int s, int d, int t, long i) { return (float)(s * 100000 + d * 10000 + t * 100 + i % 89); }

static int rank_main(int rank, int nranks, ncclUniqueId id, void *arg) {
  (void)arg;
  ncclComm_t comm;
  SC_NCCL(ncclCommInitRank(&comm, nranks, id, rank));
  cudaStream_t cur = 0; /* legacy default stream */
  int legacy = strncmp(mode, "legacy", 6) == 0;
  if (strcmp(mode, "legacy_handle") == 0) cur = cudaStreamLegacy;
  if (!legacy) SC_CUDA(cudaStreamCreate(&cur)); /* with torch.cuda.stream(s) */
  long cap = 4L * UNIT * nranks;
  float *in, *out;
  SC_CUDA(cudaMalloc((void **)&in, cap * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&out, cap * sizeof(float)));
  float *h = malloc(cap * sizeof(float)), *g = malloc(cap * sizeof(float));
  long errors = 0;
  for (int t = 0; t < 20; t++) {
    long off = 0;
    for (int d = 0; d < nranks; d++)
      for (long i = 0; i < split(rank, d, t); i++) h[off++] = val(rank, d, t, i);
    /* the input tensor is produced on the current stream */
    SC_CUDA(cudaMemcpyAsync(in, h, off * sizeof(float), cudaMemcpyHostToDevice, cur));
    if (strcmp(mode, "legacy_skip") == 0 && rank == 3 && t == 5) {
      /* the bug: this rank "finished early" */
    } else if (strcmp(mode, "equal") == 0 || legacy) {
      SC_NCCL(ncclAlltoAll(in, out, UNIT, ncclFloat32, comm, cur));
    } else if (strcmp(mode, "idle_skip") == 0 && rank == 2 && t % 2 == 1) {
      /* the bug: "nothing to send or receive, skip the exchange" */
    } else {
      long so = 0, ro = 0;
      int bug = strcmp(mode, "split_bug") == 0 && rank == 2 && t == 3;
      SC_NCCL(ncclGroupStart());
      for (int p = 0; p < nranks; p++) {
        long sn = split(rank, p, t) + (bug && p == 0 ? -UNIT / 2 : bug && p == 1 ? UNIT / 2 : 0);
        SC_NCCL(ncclSend(in + so, sn, ncclFloat32, p, comm, cur));
        SC_NCCL(ncclRecv(out + ro, split(p, rank, t), ncclFloat32, p, comm, cur));
        so += split(rank, p, t);
        ro += split(p, rank, t);
      }
      SC_NCCL(ncclGroupEnd());
    }
    long rtotal = 0;
    for (int p = 0; p < nranks; p++) rtotal += split(p, rank, t);
    /* out.cpu(): a copy on the current stream, then the host waits */
    SC_CUDA(cudaMemcpyAsync(g, out, rtotal * sizeof(float), cudaMemcpyDeviceToHost, cur));
    SC_CUDA(cudaStreamSynchronize(cur));
    long ro = 0;
    for (int p = 0; p < nranks; p++)
      for (long i = 0; i < split(p, rank, t); i++, ro++)
        if (g[ro] != val(p, rank, t, i) && errors++ < 3)
          fprintf(stderr, "rank %d step %d: from %d elem %ld = %g\n", rank, t, p, i, (double)g[ro]);
  }
  sc_sh->result[rank] = errors;
  SC_CUDA(cudaFree(in));
  SC_CUDA(cudaFree(out));
  if (!legacy) SC_CUDA(cudaStreamDestroy(cur));
  SC_NCCL(ncclCommDestroy(comm));
  free(h);
  free(g);
  return errors ? SC_DATA_WRONG : 0;
}

int main(int argc, char **argv) {
  mode = argc > 1 ? argv[1] : "equal";
  return sc_fork_ranks(NR, rank_main, NULL);
}
