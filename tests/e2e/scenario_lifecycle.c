/* scenario_lifecycle.c - process and communicator life cycle around a
 * correct training-like loop (AllReduce + AlltoAll on a side stream, 10
 * steps, data verified), ranks as forked processes.
 *
 *   scenario_lifecycle fork_loader  2 ranks; at step 4 every rank forks a
 *                                   data-loader child that does no CUDA/NCCL
 *                                   (rank 0's child ends with _exit(0) like
 *                                   Python multiprocessing, rank 1's with
 *                                   exit(0)); the rank reads its result
 *                                   from a pipe and goes on
 *   scenario_lifecycle busy_init    4 ranks; rank 2 computes on the host for
 *                                   7 s before it calls ncclCommInitRank (the
 *                                   others wait in the init)
 *   scenario_lifecycle busy         4 ranks; rank 2 computes 7 s in the middle
 *                                   of the run (the others wait in
 *                                   cudaStreamSynchronize)
 *   scenario_lifecycle sleep        4 ranks; rank 1 sleeps 7 s in the middle
 *   scenario_lifecycle abort        2 ranks; ncclCommAbort at the end, after
 *                                   the work completed (torch's shutdown path)
 *   scenario_lifecycle finalize     2 ranks; ncclCommFinalize, then
 *                                   ncclCommDestroy
 *   fork_storm      2 ranks, 60 steps; a second thread of every rank forks 40
 *                   short-lived children (data-loader workers that end with
 *                   _exit, some with exit) while the main thread communicates
 *                   and waits in cudaStreamSynchronize
 *   destroy_inflight 2 ranks; rank 0 posts its last AllReduce and destroys
 *                   the communicator at once (ncclCommDestroy finalizes:
 *                   it waits for the operation), while rank 1 computes 2 s
 *                   before posting its side; then rank 0 synchronizes and
 *                   checks the result
 * All correct: exit 0 and no finding (7 s is longer than
 * A2ACHECK_HANG_CONFIRM: no deadlock may be reported).
 */
#include "scenario_common.h"

#define N 4096L

static const char *mode;

static int data_loader_child(int fd, int use_exit) {
  /* "decode a batch": host work only */
  long sum = 0;
  for (long i = 0; i < 1000000; i++) sum += i % 7;
  if (write(fd, &sum, sizeof sum) != (ssize_t)sizeof sum) _exit(2);
  close(fd);
  if (use_exit) exit(0);
  _exit(0);
}

static void *forker_thread(void *arg) {
  long *failures = (long *)arg;
  for (int i = 0; i < 40; i++) {
    pid_t p = fork();
    if (p == 0) {
      long x = 0;
      for (long k = 0; k < 20000; k++) x += k % 3;
      if (i % 4 == 0) exit(x > 0 ? 0 : 1);
      _exit(x > 0 ? 0 : 1);
    }
    int ws;
    if (p < 0 || waitpid(p, &ws, 0) != p || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0) (*failures)++;
  }
  return NULL;
}

static int rank_main(int rank, int nranks, ncclUniqueId id, void *arg) {
  (void)arg;
  if (strcmp(mode, "busy_init") == 0 && rank == 2) sc_busy(7.0);
  ncclComm_t comm;
  SC_NCCL(ncclCommInitRank(&comm, nranks, id, rank));
  cudaStream_t cur, cs;
  SC_CUDA(cudaStreamCreateWithFlags(&cur, cudaStreamNonBlocking));
  SC_CUDA(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
  cudaEvent_t ev;
  SC_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  float *in, *out, *a2a;
  SC_CUDA(cudaMalloc((void **)&in, N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&out, N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&a2a, N * sizeof(float)));
  float *h = malloc(N * sizeof(float));
  long bad = 0, fork_failures = 0;
  pthread_t forker;
  int storm = strcmp(mode, "fork_storm") == 0;
  if (storm) pthread_create(&forker, NULL, forker_thread, &fork_failures);
  for (int t = 0; t < (storm ? 60 : 10); t++) {
    if (t == 4 && strcmp(mode, "fork_loader") == 0) {
      int fds[2];
      if (pipe(fds) != 0) return 1;
      fflush(NULL);
      pid_t p = fork();
      if (p == 0) {
        close(fds[0]);
        data_loader_child(fds[1], rank == 1);
      }
      close(fds[1]);
      long got = 0;
      if (read(fds[0], &got, sizeof got) != (ssize_t)sizeof got) bad++;
      close(fds[0]);
      int ws;
      waitpid(p, &ws, 0);
      if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) bad++;
    }
    if (t == 5 && strcmp(mode, "busy") == 0 && rank == 2) sc_busy(7.0);
    if (t == 5 && strcmp(mode, "sleep") == 0 && rank == 1) sleep(7);
    sc_fill(in, N, (float)(rank * 100 + t), 0.0f, cur);
    SC_CUDA(cudaEventRecord(ev, cur));
    SC_CUDA(cudaStreamWaitEvent(cs, ev, 0));
    SC_NCCL(ncclAllReduce(in, out, N, ncclFloat32, ncclMax, comm, cs));
    SC_NCCL(ncclAlltoAll(in, a2a, N / nranks, ncclFloat32, comm, cs));
    SC_CUDA(cudaStreamSynchronize(cs));
    SC_CUDA(cudaMemcpy(h, out, N * sizeof(float), cudaMemcpyDeviceToHost));
    for (long i = 0; i < N; i++)
      if (h[i] != (float)((nranks - 1) * 100 + t) && bad++ < 3) fprintf(stderr, "rank %d: max[%ld]=%g\n", rank, i, h[i]);
    SC_CUDA(cudaMemcpy(h, a2a, N * sizeof(float), cudaMemcpyDeviceToHost));
    for (long i = 0; i < N; i++)
      if (h[i] != (float)(i / (N / nranks) * 100 + t) && bad++ < 3) fprintf(stderr, "rank %d: a2a[%ld]=%g\n", rank, i, h[i]);
  }
  if (storm) {
    pthread_join(forker, NULL);
    bad += fork_failures;
  }
  sc_sh->result[rank] = bad;
  free(h);
  if (strcmp(mode, "destroy_inflight") == 0) {
    /* one more AllReduce, destroyed while in flight on rank 0 */
    if (rank == 1) sc_busy(2.0);
    sc_fill(in, N, 1.0f, 0.0f, cs);
    SC_NCCL(ncclAllReduce(in, out, N, ncclFloat32, ncclSum, comm, cs));
    SC_NCCL(ncclCommDestroy(comm));
    SC_CUDA(cudaStreamSynchronize(cs));
    float v = 0;
    SC_CUDA(cudaMemcpy(&v, out + N - 1, sizeof v, cudaMemcpyDeviceToHost));
    if (v != (float)nranks) bad++;
    sc_sh->result[rank] = bad;
  }
  if (strcmp(mode, "destroy_inflight") == 0) {
    /* already destroyed */
  } else if (strcmp(mode, "abort") == 0) {
    SC_NCCL(ncclCommAbort(comm));
  } else if (strcmp(mode, "finalize") == 0) {
    SC_NCCL(ncclCommFinalize(comm));
    SC_NCCL(ncclCommDestroy(comm));
  } else {
    SC_NCCL(ncclCommDestroy(comm));
  }
  SC_CUDA(cudaFree(in));
  SC_CUDA(cudaFree(out));
  SC_CUDA(cudaFree(a2a));
  SC_CUDA(cudaEventDestroy(ev));
  SC_CUDA(cudaStreamDestroy(cur));
  SC_CUDA(cudaStreamDestroy(cs));
  return bad ? SC_DATA_WRONG : 0;
}

int main(int argc, char **argv) {
  mode = argc > 1 ? argv[1] : "busy";
  int nr = strcmp(mode, "fork_loader") == 0 || strcmp(mode, "fork_storm") == 0 ||
           strcmp(mode, "destroy_inflight") == 0 || strcmp(mode, "abort") == 0 || strcmp(mode, "finalize") == 0 ? 2 : 4;
  return sc_fork_ranks(nr, rank_main, NULL);
}
