/* nccl_bounds.c - operations whose buffers run past the end of their
 * allocation never make the simulator touch memory beyond it.
 *
 *   nccl_bounds proc|thread
 *
 * Two ranks. Each buffer is the first part of a larger host array
 * registered with cudaHostRegister (so the runtime knows exactly where the
 * buffer ends); the rest of the array is a canary the simulator must
 * neither read nor write:
 *   ReduceScatter whose send buffer holds recvcount instead of
 *     nranks*recvcount elements: the missing block reads as zeros (not the
 *     canary);
 *   AllGather whose receive buffer holds sendcount instead of
 *     nranks*sendcount elements: the canary after it is untouched;
 *   a Recv larger than its buffer (the sender sends the full count): the
 *     canary is untouched, the buffer gets its part;
 *   the ReduceScatter again with cudaMalloc'ed buffers (no canary: that is
 *     for the ASan build).
 * Each case must also leave a "[simulator] ... allocation" WARN as the last
 * error (checked with processes: threads share the last-error buffer). Run under the ASan build (-DA2A_SANITIZE=ON) it would report any
 * access beyond the arrays' registered parts that escaped the check (the
 * QA finding this pins: a heap-buffer-overflow in xfer.c on such a
 * ReduceScatter).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "nccl_harness.h"

enum { N = 4096, CANARY = 1024 };
static const float MARK = 7.0f;

/* An array of n + CANARY floats of which the first n are registered. */
static float *reg_alloc(size_t n) {
  float *a = malloc((n + CANARY) * sizeof(float));
  if (!a) return NULL;
  for (size_t i = 0; i < n + CANARY; i++) a[i] = MARK;
  if (cudaHostRegister(a, n * sizeof(float), cudaHostRegisterDefault) != cudaSuccess) {
    free(a);
    return NULL;
  }
  return a;
}

static int canary_ok(const float *a, size_t n) {
  for (size_t i = n; i < n + CANARY; i++)
    if (a[i] != MARK) return 0;
  return 1;
}

static void reg_free(float *a) {
  cudaHostUnregister(a);
  free(a);
}

static int check_warn;

/* Makes the last error something else, so that the next check sees a new WARN. */
static void reset_warn(void) {
  int cnt;
  (void)ncclCommCount(NULL, &cnt);
}

static int expect_warn(ncclComm_t comm, int rank, const char *what) {
  int fails = 0;
  if (!check_warn) return 0;
  const char *e = ncclGetLastError(comm);
  if (!strstr(e, "[simulator]") || !strstr(e, "allocation")) FAILF("rank %d %s: last error '%s'", rank, what, e);
  return fails;
}

static int body(ncclComm_t comm, int rank, int n, void *arg) {
  (void)arg;
  int fails = 0;
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  /* ReduceScatter: send buffer of N instead of n*N elements. */
  float *send = reg_alloc(N), *recv = reg_alloc(N);
  if (!send || !recv) return 1;
  for (size_t i = 0; i < N; i++) send[i] = (float)(rank + 1);
  reset_warn();
  NCCL_OK(ncclReduceScatter(send, recv, N, ncclFloat32, ncclSum, comm, s));
  CUDA_OK(cudaStreamSynchronize(s));
  float want = rank == 0 ? (float)(n * (n + 1) / 2) : 0.0f;   /* block 0 in bounds, the others zeros */
  for (size_t i = 0; i < N; i++)
    if (recv[i] != want) { FAILF("rank %d: ReduceScatter[%zu] = %g, want %g", rank, i, recv[i], want); break; }
  if (!canary_ok(send, N) || !canary_ok(recv, N)) FAILF("rank %d: ReduceScatter touched a canary", rank);
  fails += expect_warn(comm, rank, "ReduceScatter");
  reg_free(send);
  reg_free(recv);

  /* The same with cudaMalloc'ed buffers (the QA case, tests/e2e/
   * layout_out_of_bounds.c): no canary, but the ASan build reports any
   * access past the allocation. */
  float *dsend, *drecv, *h = malloc(N * sizeof(float));
  CUDA_OK(cudaMalloc((void **)&dsend, N * sizeof(float)));
  CUDA_OK(cudaMalloc((void **)&drecv, N * sizeof(float)));
  for (size_t i = 0; i < N; i++) h[i] = (float)(rank + 1);
  CUDA_OK(cudaMemcpy(dsend, h, N * sizeof(float), cudaMemcpyHostToDevice));
  reset_warn();
  NCCL_OK(ncclReduceScatter(dsend, drecv, N, ncclFloat32, ncclSum, comm, s));
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaMemcpy(h, drecv, N * sizeof(float), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < N; i++)
    if (h[i] != want) { FAILF("rank %d: ReduceScatter (cudaMalloc)[%zu] = %g, want %g", rank, i, h[i], want); break; }
  fails += expect_warn(comm, rank, "ReduceScatter (cudaMalloc)");
  cudaFree(dsend);
  cudaFree(drecv);
  free(h);

  /* AllGather: receive buffer of N instead of n*N elements. */
  send = reg_alloc(N);
  recv = reg_alloc(N);
  if (!send || !recv) return 1;
  for (size_t i = 0; i < N; i++) send[i] = (float)(10 + rank);
  reset_warn();
  NCCL_OK(ncclAllGather(send, recv, N, ncclFloat32, comm, s));
  CUDA_OK(cudaStreamSynchronize(s));
  for (size_t i = 0; i < N; i++)
    if (recv[i] != 10.0f) { FAILF("rank %d: AllGather[%zu] = %g, want 10", rank, i, recv[i]); break; }
  if (!canary_ok(recv, N)) FAILF("rank %d: AllGather wrote past its receive buffer", rank);
  fails += expect_warn(comm, rank, "AllGather");
  reg_free(send);
  reg_free(recv);

  /* Recv of 2N elements into a buffer of N; the sender sends 2N. */
  send = reg_alloc(2 * N);
  recv = reg_alloc(N);
  if (!send || !recv) return 1;
  for (size_t i = 0; i < 2 * N; i++) send[i] = (float)(100 + rank);
  int peer = 1 - rank;
  reset_warn();
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclSend(send, 2 * N, ncclFloat32, peer, comm, s));
  NCCL_OK(ncclRecv(recv, 2 * N, ncclFloat32, peer, comm, s));
  NCCL_OK(ncclGroupEnd());
  CUDA_OK(cudaStreamSynchronize(s));
  for (size_t i = 0; i < N; i++)
    if (recv[i] != (float)(100 + peer)) { FAILF("rank %d: Recv[%zu] = %g", rank, i, recv[i]); break; }
  if (!canary_ok(recv, N)) FAILF("rank %d: Recv wrote past its buffer", rank);
  fails += expect_warn(comm, rank, "Recv");
  reg_free(send);
  reg_free(recv);

  CUDA_OK(cudaStreamDestroy(s));
  return fails;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "proc";
  check_warn = !strcmp(mode, "proc");
  int rc = run_ranks(mode, 2, body, NULL, 30);
  printf("nccl_bounds %s: %s\n", mode, rc ? "FAILED" : "PASS");
  return rc ? 1 : 0;
}
