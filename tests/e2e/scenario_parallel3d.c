/* scenario_parallel3d.c - a Megatron/DeepSpeed-like layout on 8 ranks as
 * forked processes: tensor-parallel groups of 2 (ncclCommSplit color
 * rank/2), data-parallel groups of 4 (color rank%2), expert parallel on the
 * world communicator. Compute runs on the per-thread default stream
 * (cudaStreamPerThread, as with --default-stream per-thread), each group
 * communicates on its own non-blocking stream, with event edges.
 * 5 steps of: TP AllReduce of the activations; EP all-to-all with unequal
 * splits (zero for some pairs) through grouped send/recv; DP ZeRO-style
 * ReduceScatter of the gradients + AllGather of the parameters. Data
 * verified. Correct: exit 0, no error/warning finding.
 */
#include "scenario_common.h"

#define NR 8
#define N 2048L

static long split_cnt(int s, int d, int t) { return (long)((s + 2 * d + t) % 3) * 64; } /* 0, 64 or 128 */

static int rank_main(int rank, int nranks, ncclUniqueId id, void *arg) {
  (void)arg;
  ncclComm_t world, tp, dp;
  SC_NCCL(ncclCommInitRank(&world, nranks, id, rank));
  SC_NCCL(ncclCommSplit(world, rank / 2, rank, &tp, NULL));
  SC_NCCL(ncclCommSplit(world, rank % 2, rank, &dp, NULL));
  int tpn, dpn, dpr;
  SC_NCCL(ncclCommCount(tp, &tpn));
  SC_NCCL(ncclCommCount(dp, &dpn));
  SC_NCCL(ncclCommUserRank(dp, &dpr));
  cudaStream_t comp = cudaStreamPerThread, s_tp, s_ep, s_dp;
  SC_CUDA(cudaStreamCreateWithFlags(&s_tp, cudaStreamNonBlocking));
  SC_CUDA(cudaStreamCreateWithFlags(&s_ep, cudaStreamNonBlocking));
  SC_CUDA(cudaStreamCreateWithFlags(&s_dp, cudaStreamNonBlocking));
  cudaEvent_t e_c, e_tp, e_ep, e_dp;
  SC_CUDA(cudaEventCreateWithFlags(&e_c, cudaEventDisableTiming));
  SC_CUDA(cudaEventCreateWithFlags(&e_tp, cudaEventDisableTiming));
  SC_CUDA(cudaEventCreateWithFlags(&e_ep, cudaEventDisableTiming));
  SC_CUDA(cudaEventCreateWithFlags(&e_dp, cudaEventDisableTiming));
  float *act, *tok_in, *tok_out, *grad, *gshard, *params;
  SC_CUDA(cudaMalloc((void **)&act, N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&tok_in, 128 * NR * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&tok_out, 128 * NR * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&grad, N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&gshard, N / 4 * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&params, N * sizeof(float)));
  float *h = malloc(N * sizeof(float));
  long bad = 0;
  for (int t = 0; t < 5; t++) {
    /* forward: act = rank + t; TP AllReduce */
    sc_fill(act, N, (float)(rank + t), 0.0f, comp);
    sc_fill(tok_in, 128 * NR, (float)(rank * 100 + t), 0.0f, comp);
    SC_CUDA(cudaEventRecord(e_c, comp));
    SC_CUDA(cudaStreamWaitEvent(s_tp, e_c, 0));
    SC_NCCL(ncclAllReduce(act, act, N, ncclFloat32, ncclSum, tp, s_tp));
    SC_CUDA(cudaEventRecord(e_tp, s_tp));
    /* EP all-to-all, unequal splits, zero counts posted */
    SC_CUDA(cudaStreamWaitEvent(s_ep, e_c, 0));
    SC_NCCL(ncclGroupStart());
    long so = 0, ro = 0;
    for (int p = 0; p < nranks; p++) {
      SC_NCCL(ncclSend(tok_in + so, split_cnt(rank, p, t), ncclFloat32, p, world, s_ep));
      SC_NCCL(ncclRecv(tok_out + ro, split_cnt(p, rank, t), ncclFloat32, p, world, s_ep));
      so += split_cnt(rank, p, t);
      ro += split_cnt(p, rank, t);
    }
    SC_NCCL(ncclGroupEnd());
    SC_CUDA(cudaEventRecord(e_ep, s_ep));
    /* backward: grad = act (after TP) ; DP ReduceScatter + AllGather */
    SC_CUDA(cudaStreamWaitEvent(comp, e_tp, 0));
    sc_copy(grad, act, N, comp);
    SC_CUDA(cudaEventRecord(e_c, comp));
    SC_CUDA(cudaStreamWaitEvent(s_dp, e_c, 0));
    SC_NCCL(ncclReduceScatter(grad, gshard, N / 4, ncclFloat32, ncclSum, dp, s_dp));
    SC_NCCL(ncclAllGather(gshard, params, N / 4, ncclFloat32, dp, s_dp));
    SC_CUDA(cudaEventRecord(e_dp, s_dp));
    SC_CUDA(cudaStreamWaitEvent(comp, e_dp, 0));
    SC_CUDA(cudaStreamWaitEvent(comp, e_ep, 0));
    SC_CUDA(cudaStreamSynchronize(comp));
    /* verify: act after TP = (2*(rank/2)+t) + (2*(rank/2)+1+t); params =
     * sum over the DP group (ranks with my parity) of their TP sums */
    double dsum = 0;
    for (int r = rank % 2; r < nranks; r += 2) dsum += (2 * (r / 2) + t) + (2 * (r / 2) + 1 + t);
    SC_CUDA(cudaMemcpy(h, params, N * sizeof(float), cudaMemcpyDeviceToHost));
    for (long i = 0; i < N; i++)
      if (h[i] != (float)dsum && bad++ < 3) fprintf(stderr, "rank %d: params[%ld]=%g want %g\n", rank, i, h[i], dsum);
    SC_CUDA(cudaMemcpy(h, tok_out, ro * sizeof(float), cudaMemcpyDeviceToHost));
    long o = 0;
    for (int p = 0; p < nranks; p++)
      for (long i = 0; i < split_cnt(p, rank, t); i++, o++)
        if (h[o] != (float)(p * 100 + t) && bad++ < 3) fprintf(stderr, "rank %d: tok from %d=%g\n", rank, p, h[o]);
  }
  (void)tpn; (void)dpn; (void)dpr;
  sc_sh->result[rank] = bad;
  free(h);
  SC_CUDA(cudaFree(act));
  SC_CUDA(cudaFree(tok_in));
  SC_CUDA(cudaFree(tok_out));
  SC_CUDA(cudaFree(grad));
  SC_CUDA(cudaFree(gshard));
  SC_CUDA(cudaFree(params));
  SC_CUDA(cudaEventDestroy(e_c));
  SC_CUDA(cudaEventDestroy(e_tp));
  SC_CUDA(cudaEventDestroy(e_ep));
  SC_CUDA(cudaEventDestroy(e_dp));
  SC_CUDA(cudaStreamDestroy(s_tp));
  SC_CUDA(cudaStreamDestroy(s_ep));
  SC_CUDA(cudaStreamDestroy(s_dp));
  SC_NCCL(ncclCommDestroy(dp));
  SC_NCCL(ncclCommDestroy(tp));
  SC_NCCL(ncclCommDestroy(world));
  return bad ? SC_DATA_WRONG : 0;
}

int main(void) { return sc_fork_ranks(NR, rank_main, NULL); }
