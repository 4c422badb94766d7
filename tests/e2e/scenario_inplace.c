/* scenario_inplace.c - every collective in its in-place form as nccl.h
 * defines it, plus the root-only buffers of Gather/Scatter/Reduce/Broadcast
 * (NULL where NCCL ignores them), 4 ranks as forked processes, data
 * verified.
 *   AllReduce     sendbuff == recvbuff
 *   Broadcast     sendbuff == recvbuff (ncclBcast as well)
 *   Reduce        sendbuff == recvbuff; recvbuff NULL on non-roots
 *   AllGather     sendbuff == recvbuff + rank*sendcount
 *   ReduceScatter recvbuff == sendbuff + rank*recvcount
 *   Gather        root: sendbuff == recvbuff + root*count; non-roots: recvbuff NULL
 *   Scatter       root: recvbuff == sendbuff + root*count; non-roots: sendbuff NULL
 *
 *   scenario_inplace ok          correct
 *   scenario_inplace ag_same     BUGGY: AllGather with sendbuff == recvbuff
 *                                (correct only for rank 0): layout.overlap on
 *                                ranks 1-3, nothing on rank 0
 */
#include "scenario_common.h"

#define NR 4
#define C 1024L /* elements per rank chunk */

static const char *mode;

static long check(const float *d, long n, float (*want)(long, int, int), int rank, int arg, const char *what) {
  float *h = malloc(n * sizeof(float));
  SC_CUDA(cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost));
  long bad = 0;
  for (long i = 0; i < n; i++)
    if (h[i] != want(i, rank, arg) && bad++ < 3)
      fprintf(stderr, "rank %d: %s[%ld] = %g want %g\n", rank, what, i, h[i], want(i, rank, arg));
  free(h);
  return bad;
}
/* contribution of rank r to element i */
static float contrib(long i, int r) { return (float)(r * 10000 + i % 1000); }
static float w_sum(long i, int rank, int arg) {
  (void)rank; (void)arg;
  float s = 0;
  for (int r = 0; r < NR; r++) s += contrib(i, r);
  return s;
}
static float w_root(long i, int rank, int root) { (void)rank; return contrib(i, root); }
static float w_gather(long i, int rank, int arg) { (void)rank; (void)arg; return contrib(i % C, (int)(i / C)); }
/* ReduceScatter chunk of `rank`: element i of chunk rank, summed */
static float w_rs(long i, int rank, int arg) {
  (void)arg;
  float s = 0;
  for (int r = 0; r < NR; r++) s += contrib(rank * C + i, r);
  return s;
}
/* Scatter: rank gets chunk `rank` of root's buffer (filled with contrib(j, root)) */
static float w_scatter(long i, int rank, int root) { return contrib(rank * C + i, root); }

static void fill_contrib(float *d, long n, int r, cudaStream_t s) {
  /* contrib(i, r) = r*10000 + i%1000: fill per 1000-element block */
  for (long b = 0; b < n; b += 1000) {
    long m = n - b < 1000 ? n - b : 1000;
    sc_fill(d + b, m, (float)(r * 10000), 1.0f, s);
  }
}

static int rank_main(int rank, int nranks, ncclUniqueId id, void *arg) {
  (void)arg;
  ncclComm_t comm;
  SC_NCCL(ncclCommInitRank(&comm, nranks, id, rank));
  cudaStream_t s;
  SC_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float *buf;
  SC_CUDA(cudaMalloc((void **)&buf, NR * C * sizeof(float)));
  long bad = 0;
  int root = 2;

  /* AllReduce in place */
  fill_contrib(buf, C, rank, s);
  SC_NCCL(ncclAllReduce(buf, buf, C, ncclFloat32, ncclSum, comm, s));
  SC_CUDA(cudaStreamSynchronize(s));
  bad += check(buf, C, w_sum, rank, 0, "allreduce");

  /* Broadcast in place, then ncclBcast */
  fill_contrib(buf, C, rank, s);
  SC_NCCL(ncclBroadcast(buf, buf, C, ncclFloat32, root, comm, s));
  SC_CUDA(cudaStreamSynchronize(s));
  bad += check(buf, C, w_root, rank, root, "broadcast");
  fill_contrib(buf, C, rank, s);
  SC_NCCL(ncclBcast(buf, C, ncclFloat32, 1, comm, s));
  SC_CUDA(cudaStreamSynchronize(s));
  bad += check(buf, C, w_root, rank, 1, "bcast");

  /* Reduce in place at the root; non-roots pass recvbuff NULL */
  fill_contrib(buf, C, rank, s);
  SC_NCCL(ncclReduce(buf, rank == root ? buf : NULL, C, ncclFloat32, ncclSum, root, comm, s));
  SC_CUDA(cudaStreamSynchronize(s));
  if (rank == root) bad += check(buf, C, w_sum, rank, 0, "reduce");

  /* AllGather in place: my chunk already sits at recvbuff + rank*C */
  fill_contrib(buf + rank * C, C, rank, s);
  if (strcmp(mode, "ag_same") == 0)
    SC_NCCL(ncclAllGather(buf, buf, C, ncclFloat32, comm, s)); /* the bug */
  else
    SC_NCCL(ncclAllGather(buf + rank * C, buf, C, ncclFloat32, comm, s));
  SC_CUDA(cudaStreamSynchronize(s));
  if (strcmp(mode, "ok") == 0) bad += check(buf, NR * C, w_gather, rank, 0, "allgather");

  /* ReduceScatter in place: recvbuff = sendbuff + rank*C */
  fill_contrib(buf, NR * C, rank, s);
  SC_NCCL(ncclReduceScatter(buf, buf + rank * C, C, ncclFloat32, ncclSum, comm, s));
  SC_CUDA(cudaStreamSynchronize(s));
  bad += check(buf + rank * C, C, w_rs, rank, 0, "reducescatter");

  /* Gather in place at the root */
  if (rank == root) {
    fill_contrib(buf + root * C, C, rank, s);
    SC_NCCL(ncclGather(buf + root * C, buf, C, ncclFloat32, root, comm, s));
  } else {
    fill_contrib(buf, C, rank, s);
    SC_NCCL(ncclGather(buf, NULL, C, ncclFloat32, root, comm, s));
  }
  SC_CUDA(cudaStreamSynchronize(s));
  if (rank == root) bad += check(buf, NR * C, w_gather, rank, 0, "gather");

  /* Scatter in place at the root */
  if (rank == root) {
    fill_contrib(buf, NR * C, rank, s);
    SC_NCCL(ncclScatter(buf, buf + root * C, C, ncclFloat32, root, comm, s));
    SC_CUDA(cudaStreamSynchronize(s));
    bad += check(buf + root * C, C, w_scatter, rank, root, "scatter");
  } else {
    SC_NCCL(ncclScatter(NULL, buf, C, ncclFloat32, root, comm, s));
    SC_CUDA(cudaStreamSynchronize(s));
    bad += check(buf, C, w_scatter, rank, root, "scatter");
  }

  sc_sh->result[rank] = bad;
  SC_CUDA(cudaFree(buf));
  SC_CUDA(cudaStreamDestroy(s));
  SC_NCCL(ncclCommDestroy(comm));
  return bad ? SC_DATA_WRONG : 0;
}

int main(int argc, char **argv) {
  mode = argc > 1 ? argv[1] : "ok";
  return sc_fork_ranks(NR, rank_main, NULL);
}
