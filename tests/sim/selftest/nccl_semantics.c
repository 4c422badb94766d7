/* nccl_semantics.c - the simulator's model of mismatched point-to-point
 * sizes, zero-byte transfers and the bounded channel FIFO (2 ranks as
 * processes, channel slot size 1 KiB). See docs/simulator-nccl.md.
 *
 *   a) send 200 / recv 100 ints (one step each): truncated, FIFO clean;
 *   b) send 400 / recv 200 ints (2 steps vs 1): the extra step stays in the
 *      channel, the next receive gets it (shifted data), one more receive
 *      gets the real next message;
 *   c) send 10 / recv 20 ints: first 10 arrive, receive completes;
 *   d) zero-byte send/recv pair completes and keeps the pair in step;
 *   e) after connection, a small send completes with no receive posted;
 *   f) a send larger than the FIFO (8 slots) blocks until the receive.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "nccl_harness.h"

static pthread_barrier_t *bar;   /* process-shared, created before fork */

static int xfer(ncclComm_t comm, int rank, cudaStream_t s, int32_t *d, size_t nsend, size_t nrecv, int32_t base) {
  int fails = 0;
  if (rank == 0) {
    int32_t *h = malloc(nsend * 4 + 4);
    for (size_t i = 0; i < nsend; i++) h[i] = base + (int32_t)i;
    CUDA_OK(cudaMemcpy(d, h, nsend * 4, cudaMemcpyHostToDevice));
    free(h);
    NCCL_OK(ncclSend(d, nsend, ncclInt32, 1, comm, s));
  } else {
    CUDA_OK(cudaMemset(d, 0, nrecv * 4 + 4));
    NCCL_OK(ncclRecv(d, nrecv, ncclInt32, 0, comm, s));
  }
  CUDA_OK(cudaStreamSynchronize(s));
  return fails;
}

/* Checks rank 1's buffer: n values starting at first. */
static int expect_seq(int32_t *d, size_t n, int32_t first, const char *what) {
  int fails = 0;
  int32_t *h = malloc(n * 4 + 4);
  CUDA_OK(cudaMemcpy(h, d, n * 4, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < n; i++)
    if (h[i] != first + (int32_t)i) { FAILF("%s: [%zu] = %d, want %d", what, i, h[i], first + (int32_t)i); break; }
  free(h);
  return fails;
}

static int body(ncclComm_t comm, int rank, int n, void *arg) {
  int fails = 0;
  cudaStream_t s;
  int32_t *d;
  CUDA_OK(cudaStreamCreate(&s));
  CUDA_OK(cudaMalloc((void **)&d, 64 << 10));
  /* a) same step count: truncation only */
  fails += xfer(comm, rank, s, d, 200, 100, 0);
  if (rank == 1) fails += expect_seq(d, 100, 0, "a) truncated receive");
  fails += xfer(comm, rank, s, d, 10, 10, 5000);
  if (rank == 1) fails += expect_seq(d, 10, 5000, "a) next message after truncation");
  /* b) 400 ints = 1600 B = 2 steps, receiver takes 1 step */
  fails += xfer(comm, rank, s, d, 400, 200, 0);
  if (rank == 1) fails += expect_seq(d, 200, 0, "b) first part");
  fails += xfer(comm, rank, s, d, 50, 50, 7000);
  /* the leftover step started at byte 1024 = int 256 */
  if (rank == 1) fails += expect_seq(d, 50, 256, "b) shifted: next receive gets the leftover step");
  if (rank == 1) {
    NCCL_OK(ncclRecv(d, 50, ncclInt32, 0, comm, s));
    CUDA_OK(cudaStreamSynchronize(s));
    fails += expect_seq(d, 50, 7000, "b) one more receive gets the real message");
  }
  /* c) short send within one step */
  fails += xfer(comm, rank, s, d, 10, 20, 9000);
  if (rank == 1) fails += expect_seq(d, 10, 9000, "c) short send");
  /* d) zero bytes */
  fails += xfer(comm, rank, s, d, 0, 0, 0);
  fails += xfer(comm, rank, s, d, 5, 5, 11000);
  if (rank == 1) fails += expect_seq(d, 5, 11000, "d) after zero-byte pair");
  /* e) eager: rank 0's small send completes before rank 1 receives */
  if (rank == 0) {
    NCCL_OK(ncclSend(d, 16, ncclInt32, 1, comm, s));
    if (stream_done_within(s, 2000) != 1) FAILF("e) small send did not complete eagerly");
  }
  pthread_barrier_wait(bar);
  if (rank == 1) {
    NCCL_OK(ncclRecv(d, 16, ncclInt32, 0, comm, s));
    CUDA_OK(cudaStreamSynchronize(s));
  }
  /* f) 20 KiB = 20 steps > 8 slots: blocked until rank 1 receives */
  if (rank == 0) {
    NCCL_OK(ncclSend(d, 5 << 10, ncclInt32, 1, comm, s));
    if (stream_done_within(s, 300) != 0) FAILF("f) send larger than the FIFO completed without a receive");
  }
  pthread_barrier_wait(bar);
  if (rank == 1) NCCL_OK(ncclRecv(d, 5 << 10, ncclInt32, 0, comm, s));
  if (stream_done_within(s, 5000) != 1) FAILF("rank %d f) did not complete after the receive", rank);
  CUDA_OK(cudaFree(d));
  CUDA_OK(cudaStreamDestroy(s));
  (void)n; (void)arg;
  return fails;
}

int main(void) {
  setenv("A2ASIM_NCCL_CHUNK", "1024", 1);
  bar = mmap(NULL, sizeof *bar, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  pthread_barrierattr_t a;
  pthread_barrierattr_init(&a);
  pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
  pthread_barrier_init(bar, &a, 2);
  int fails = run_ranks("proc", 2, body, NULL, 30);
  printf("nccl_semantics: %s\n", fails ? "FAILED" : "ok");
  return fails ? 1 : 0;
}
