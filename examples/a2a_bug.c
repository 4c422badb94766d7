/* a2a_bug.c - the same token exchange as a2a_moe.c with a real bug, for
 * the README demo: rank 2 sizes its receive from rank 1 with a stale split
 * table, one token short of what rank 1 sends.
 *
 *   a2a_bug [nranks]        (default 4, at least 3; one process per rank)
 *
 * Nothing fails: NCCL matches the send with the shorter receive, rank 2
 * keeps the first tokens and the last one is silently dropped (on a GPU as
 * on the CPU simulator, as long as the message fits in the same number of
 * protocol steps). The program prints a checksum per rank and exits 0 - the
 * kind of corruption a checker has to point at: "rank 2 receives 512 bytes
 * from rank 1, which sends 768" (3 tokens of 256 bytes sent, 2 received).
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

/* Tokens rank s routes to rank d (what s really sends). */
static int route(int s, int d) { return 2 + (s + 2 * d) % 4; }

/* What rank d believes it receives from s: rank 2's table is stale for
 * rank 1 - THE BUG. */
static int expected_from(int s, int d) { return route(s, d) - (d == 2 && s == 1); }

static int run_rank(int rank, int nranks, ncclUniqueId id) {
  ncclComm_t comm;
  cudaStream_t stream;
  CHECK_CUDA(cudaSetDevice(rank));
  CHECK_NCCL(ncclCommInitRank(&comm, nranks, id, rank));
  CHECK_CUDA(cudaStreamCreate(&stream));
  int nsend = 0, nrecv = 0;
  for (int p = 0; p < nranks; p++) { nsend += route(rank, p); nrecv += expected_from(p, rank); }
  size_t tok = HIDDEN * sizeof(float);
  float *h = malloc((size_t)(nsend > nrecv ? nsend : nrecv) * tok);
  float *d_send, *d_recv;
  CHECK_CUDA(cudaMalloc((void **)&d_send, nsend * tok));
  CHECK_CUDA(cudaMalloc((void **)&d_recv, nrecv * tok));
  for (int i = 0; i < nsend * HIDDEN; i++) h[i] = (float)(rank * 1000 + i % 1000);
  CHECK_CUDA(cudaMemcpy(d_send, h, nsend * tok, cudaMemcpyHostToDevice));
  CHECK_NCCL(ncclGroupStart());
  int so = 0, ro = 0;
  for (int p = 0; p < nranks; p++) {
    CHECK_NCCL(ncclSend(d_send + (size_t)so * HIDDEN, (size_t)route(rank, p) * HIDDEN, ncclFloat32, p, comm, stream));
    CHECK_NCCL(ncclRecv(d_recv + (size_t)ro * HIDDEN, (size_t)expected_from(p, rank) * HIDDEN, ncclFloat32, p, comm,
                        stream));
    so += route(rank, p);
    ro += expected_from(p, rank);
  }
  CHECK_NCCL(ncclGroupEnd());
  CHECK_CUDA(cudaMemcpyAsync(h, d_recv, nrecv * tok, cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  double sum = 0;
  for (int i = 0; i < nrecv * HIDDEN; i++) sum += h[i];
  printf("rank %d: received %d tokens, checksum %.0f\n", rank, nrecv, sum);
  CHECK_CUDA(cudaFree(d_send));
  CHECK_CUDA(cudaFree(d_recv));
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_NCCL(ncclCommDestroy(comm));
  free(h);
  return 0;
}

int main(int argc, char **argv) {
  int nranks = argc > 1 ? atoi(argv[1]) : 4;
  int rank = -1;
  if (nranks < 3 || nranks > 64) {
    fprintf(stderr, "usage: %s [nranks >= 3]\n", argv[0]);
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
  printf("a2a_bug: %d ranks finished%s\n", nranks, failed ? " with errors" : "");
  return failed ? 1 : 0;
}
