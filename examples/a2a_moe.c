/* a2a_moe.c - a mixture-of-experts style token exchange, written only
 * against the public CUDA runtime and NCCL APIs.
 *
 *   a2a_moe [nranks]        (default 4; one process per rank)
 *
 * The parent creates the NCCL unique id and forks one process per rank (the
 * usual launcher pattern). Each rank routes a different number of tokens to
 * every other rank, so the exchange has unequal splits:
 *   1. the ranks exchange their per-destination token counts with
 *      ncclAlltoAll (what torch's all_to_all_single does with split sizes),
 *   2. the tokens move in one ncclGroupStart/End of ncclSend/ncclRecv per peer
 *      (what torch does for unequal splits), on a non-blocking stream,
 *   3. every rank checks every received token.
 * Exit status 0 when every rank received exactly what was sent to it.
 *
 * Runs on GPUs, or on the CPU simulator with LD_LIBRARY_PATH=build/sim/lib.
 */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define HIDDEN 64   /* floats per token */

#define CHECK_CUDA(x)                                                                   \
  do {                                                                                  \
    cudaError_t e_ = (x);                                                               \
    if (e_ != cudaSuccess) {                                                            \
      fprintf(stderr, "rank %d: %s: %s\n", rank, #x, cudaGetErrorString(e_));           \
      return 1;                                                                         \
    }                                                                                   \
  } while (0)
#define CHECK_NCCL(x)                                                                   \
  do {                                                                                  \
    ncclResult_t r_ = (x);                                                              \
    if (r_ != ncclSuccess) {                                                            \
      fprintf(stderr, "rank %d: %s: %s\n", rank, #x, ncclGetErrorString(r_));           \
      return 1;                                                                         \
    }                                                                                   \
  } while (0)

/* Tokens rank s routes to rank d: uneven, some zero. */
static int64_t route(int s, int d) { return (s * 7 + d * 3) % 5 * 3 + (s == d); }

/* Value of element k of token t sent from s to d. */
static float token_val(int s, int d, int64_t t, int k) { return (float)(s * 100000 + d * 1000 + t * 10 + k % 10); }

static int run_rank(int rank, int nranks, ncclUniqueId id) {
  ncclComm_t comm;
  cudaStream_t stream;
  CHECK_CUDA(cudaSetDevice(rank));
  CHECK_NCCL(ncclCommInitRank(&comm, nranks, id, rank));
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  /* 1. exchange the split sizes */
  int64_t *d_counts_out, *d_counts_in;
  int64_t *counts_out = malloc(nranks * sizeof(int64_t)), *counts_in = malloc(nranks * sizeof(int64_t));
  for (int d = 0; d < nranks; d++) counts_out[d] = route(rank, d);
  CHECK_CUDA(cudaMalloc((void **)&d_counts_out, nranks * sizeof(int64_t)));
  CHECK_CUDA(cudaMalloc((void **)&d_counts_in, nranks * sizeof(int64_t)));
  CHECK_CUDA(cudaMemcpyAsync(d_counts_out, counts_out, nranks * sizeof(int64_t), cudaMemcpyHostToDevice, stream));
  CHECK_NCCL(ncclAlltoAll(d_counts_out, d_counts_in, 1, ncclInt64, comm, stream));
  CHECK_CUDA(cudaMemcpyAsync(counts_in, d_counts_in, nranks * sizeof(int64_t), cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));

  /* 2. the tokens */
  int64_t nsend = 0, nrecv = 0;
  for (int p = 0; p < nranks; p++) { nsend += counts_out[p]; nrecv += counts_in[p]; }
  size_t tok = HIDDEN * sizeof(float);
  float *h_send = malloc(nsend * tok + 1), *h_recv = malloc(nrecv * tok + 1);
  float *d_send, *d_recv;
  CHECK_CUDA(cudaMalloc((void **)&d_send, nsend * tok + 1));
  CHECK_CUDA(cudaMalloc((void **)&d_recv, nrecv * tok + 1));
  int64_t o = 0;
  for (int d = 0; d < nranks; d++)
    for (int64_t t = 0; t < counts_out[d]; t++, o++)
      for (int k = 0; k < HIDDEN; k++) h_send[o * HIDDEN + k] = token_val(rank, d, t, k);
  CHECK_CUDA(cudaMemcpyAsync(d_send, h_send, nsend * tok, cudaMemcpyHostToDevice, stream));
  CHECK_NCCL(ncclGroupStart());
  int64_t so = 0, ro = 0;
  for (int p = 0; p < nranks; p++) {
    CHECK_NCCL(ncclSend(d_send + so * HIDDEN, counts_out[p] * HIDDEN, ncclFloat32, p, comm, stream));
    CHECK_NCCL(ncclRecv(d_recv + ro * HIDDEN, counts_in[p] * HIDDEN, ncclFloat32, p, comm, stream));
    so += counts_out[p];
    ro += counts_in[p];
  }
  CHECK_NCCL(ncclGroupEnd());
  CHECK_CUDA(cudaMemcpyAsync(h_recv, d_recv, nrecv * tok, cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));

  /* 3. verify */
  int bad = 0;
  o = 0;
  for (int s = 0; s < nranks; s++) {
    if (counts_in[s] != route(s, rank)) {
      fprintf(stderr, "rank %d: count from %d is %lld, want %lld\n", rank, s, (long long)counts_in[s],
              (long long)route(s, rank));
      bad++;
    }
    for (int64_t t = 0; t < counts_in[s]; t++, o++)
      for (int k = 0; k < HIDDEN; k++)
        if (h_recv[o * HIDDEN + k] != token_val(s, rank, t, k) && bad++ < 3)
          fprintf(stderr, "rank %d: token %lld from %d differs at %d\n", rank, (long long)t, s, k);
  }
  printf("rank %d: sent %lld tokens, received %lld tokens: %s\n", rank, (long long)nsend, (long long)nrecv,
         bad ? "WRONG" : "ok");
  CHECK_CUDA(cudaFree(d_send));
  CHECK_CUDA(cudaFree(d_recv));
  CHECK_CUDA(cudaFree(d_counts_out));
  CHECK_CUDA(cudaFree(d_counts_in));
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_NCCL(ncclCommDestroy(comm));
  free(h_send);
  free(h_recv);
  free(counts_out);
  free(counts_in);
  return bad != 0;
}

int main(int argc, char **argv) {
  int nranks = argc > 1 ? atoi(argv[1]) : 4;
  int rank = -1;   /* for the CHECK macros in the parent */
  if (nranks < 1 || nranks > 64) {
    fprintf(stderr, "usage: %s [nranks]\n", argv[0]);
    return 2;
  }
  ncclUniqueId id;
  CHECK_NCCL(ncclGetUniqueId(&id));
  fflush(stdout);
  for (int r = 0; r < nranks; r++) {
    pid_t p = fork();
    if (p < 0) { perror("fork"); return 1; }
    if (p == 0) {
      int rc = run_rank(r, nranks, id);
      fflush(stdout);
      exit(rc); /* a normal end: the child's own a2acheck runtime flushes its
                   logs and waits for the cross-rank verdicts (atexit) */
    }
  }
  int failed = 0, st;
  while (wait(&st) > 0)
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) failed++;
  printf("a2a_moe: %d ranks, %s\n", nranks, failed ? "FAILED" : "all tokens arrived");
  return failed ? 1 : 0;
}
