/* nccl_hang.c - programs that must hang on the simulator as on GPUs.
 *
 *   nccl_hang <scenario>
 *
 * Ranks are processes. Each rank enqueues its part, then polls its stream:
 * a rank that is expected to hang passes if its stream is still busy after
 * HANG_MS; a rank expected to finish passes if it finishes. A rank that
 * observed its expected hang leaves with _exit (its stream worker is
 * blocked for good; the kernel reclaims everything). Scenarios:
 *   missing_recv  rank 0 sends to rank 1, which never receives
 *   wrong_order   two communicators used in opposite orders on one stream
 *                 (after a control run in the same order that completes)
 *   mismatch      rank 0 calls AllReduce, rank 1 AllGather of the same bytes
 *   missing_rank  ranks 0 and 1 of 3 call AllReduce, rank 2 never does
 *   dead_rank     rank 2 of 3 exits after init; the others' AllReduce hangs
 *   abort         rank 0's hung send is ended by ncclCommAbort
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl_harness.h"

enum { HANG_MS = 800 };

static const char *scenario;

/* Expect the stream to stay busy; leave the process if it does. */
static int expect_hang(cudaStream_t s, int rank, const char *what) {
  int fails = 0;
  int d = stream_done_within(s, HANG_MS);
  if (d != 0) {
    FAILF("rank %d %s: %s instead of hanging", rank, what, d > 0 ? "completed" : "cuda error");
    return fails;
  }
  printf("rank %d %s: hung as expected\n", rank, what);
  fflush(stdout);
  _exit(0);
}

static int expect_done(cudaStream_t s, int rank, const char *what) {
  int fails = 0;
  if (stream_done_within(s, 5000) != 1) FAILF("rank %d %s: did not complete", rank, what);
  return fails;
}

static int body(ncclComm_t comm, int rank, int n, void *arg) {
  int fails = 0;
  cudaStream_t s;
  float *d;
  CUDA_OK(cudaStreamCreate(&s));
  CUDA_OK(cudaMalloc((void **)&d, 4096));
  CUDA_OK(cudaMemset(d, 0, 4096));
  (void)arg;
  if (!strcmp(scenario, "missing_recv")) {
    if (rank == 0) {
      NCCL_OK(ncclSend(d, 16, ncclFloat32, 1, comm, s));
      fails += expect_hang(s, rank, "send without receive");
    }
  } else if (!strcmp(scenario, "wrong_order")) {
    ncclComm_t other;
    NCCL_OK(ncclCommSplit(comm, 0, rank, &other, NULL));
    /* control: same order on both ranks completes */
    NCCL_OK(ncclAllReduce(d, d, 8, ncclFloat32, ncclSum, comm, s));
    NCCL_OK(ncclAllReduce(d, d, 8, ncclFloat32, ncclSum, other, s));
    fails += expect_done(s, rank, "same order");
    if (fails) return fails;
    ncclComm_t first = rank == 0 ? comm : other, second = rank == 0 ? other : comm;
    NCCL_OK(ncclAllReduce(d, d, 8, ncclFloat32, ncclSum, first, s));
    NCCL_OK(ncclAllReduce(d, d, 8, ncclFloat32, ncclSum, second, s));
    fails += expect_hang(s, rank, "opposite communicator order");
  } else if (!strcmp(scenario, "mismatch")) {
    if (rank == 0) NCCL_OK(ncclAllReduce(d, d + 64, 8, ncclFloat32, ncclSum, comm, s));
    else NCCL_OK(ncclAllGather(d, d + 64, 4, ncclFloat32, comm, s));
    fails += expect_hang(s, rank, rank == 0 ? "AllReduce vs AllGather" : "AllGather vs AllReduce");
  } else if (!strcmp(scenario, "missing_rank")) {
    if (rank < 2) {
      NCCL_OK(ncclAllReduce(d, d, 8, ncclFloat32, ncclSum, comm, s));
      fails += expect_hang(s, rank, "AllReduce without rank 2");
    }
  } else if (!strcmp(scenario, "dead_rank")) {
    if (rank == 2) _exit(0);     /* dies after init, no destroy, no RAS */
    usleep(100 * 1000);
    NCCL_OK(ncclAllReduce(d, d, 8, ncclFloat32, ncclSum, comm, s));
    fails += expect_hang(s, rank, "AllReduce with a dead rank");
  } else if (!strcmp(scenario, "abort")) {
    if (rank == 0) {
      NCCL_OK(ncclSend(d, 16, ncclFloat32, 1, comm, s));
      if (stream_done_within(s, 300) != 0) FAILF("send without receive did not hang");
      NCCL_OK(ncclCommAbort(comm));
      if (stream_done_within(s, 3000) != 1) FAILF("abort did not end the hung send");
      int cnt;
      EXPECT_RC(ncclCommCount(comm, &cnt), ncclInvalidArgument);
      printf("rank 0: abort ended the hang\n");
      fflush(stdout);
      _exit(fails ? 1 : 0);
    }
  } else {
    FAILF("unknown scenario %s", scenario);
  }
  CUDA_OK(cudaStreamSynchronize(s));
  (void)n;
  return fails;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <missing_recv|wrong_order|mismatch|missing_rank|dead_rank|abort>\n", argv[0]);
    return 2;
  }
  scenario = argv[1];
  int n = !strcmp(scenario, "missing_rank") || !strcmp(scenario, "dead_rank") ? 3 : 2;
  int fails = run_ranks("proc", n, body, NULL, 20);
  printf("nccl_hang %s: %s\n", scenario, fails ? "FAILED" : "hung as expected");
  return fails ? 1 : 0;
}
