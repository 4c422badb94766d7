/* perf_patterns.c - one program per slow pattern of issue 6, run as
 *   perf_patterns PATTERN [NRANKS]
 * (or PATTERN@NRANKS) on the simulator with liba2acheck.so preloaded
 * (tests/e2e/perf.cmake).
 * Each rank creates a non-blocking communication stream `s` and a compute
 * stream `sc`, then runs STEPS steps of the pattern; the simulator's cost
 * model (A2ASIM_LAUNCH_US, A2ASIM_BW_GBPS) makes the timings deterministic
 * enough for perf_check.py to assert the reported numbers.
 *
 * Patterns (the buggy ones show one problem each; "clean" is the fixed
 * program of all of them):
 *   clean      compute on sc, 1 MiB AlltoAll on s, an event edge s -> sc, the
 *              consumer on sc; one cudaStreamSynchronize at the very end
 *   overlap    1 MiB AlltoAll on s, then 10 ms of independent compute on
 *              sc, then the event edge: the measured overlap fraction is
 *              about 10 / 15.5 (perf.summary)
 *   small      8 AlltoAlls of 4 MiB, then 200 of 32 KiB     -> small-messages
 *   batched    the same bytes as `small` in operations of >= 1 MiB (fixed)
 *   slowlink   48 AlltoAlls of 1 MiB; from the 17th on, every rank's
 *              communication stream is slowed by the same 20 ms per
 *              operation (a2asim_stream_set_delay: the simulator's bandwidth is
 *              fixed at start-up, so this is how its transfers get slower
 *              mid-run), as a shared or degraded link would: every
 *              operation takes longer on every rank, nobody waits for a
 *              peer                                       -> low-bandwidth
 *   imbalance  48 AlltoAlls of 1 MiB; rank 1 computes 60 ms before each of
 *              the last 32: rank 0's operations wait for it. Not a
 *              bandwidth problem, but what rank 0 measures: rank 0 gets
 *              perf.low-bandwidth saying the time includes waiting for the
 *              slowest rank, the straggler (rank 1) gets nothing
 *   skew       48 AlltoAlls of 1 MiB with a host synchronization per step;
 *              one step in four a rank computes 100 ms longer (the late
 *              rank rotates): arrival skew of a correct program (fixed
 *              program of low-bandwidth: nothing)
 *   forkchild  8 AlltoAlls of 1 MiB; after the 4th, rank 1 forks a
 *              data-loader child that makes no CUDA/NCCL call and ends with
 *              exit(0) (QA F4): the child must not report the parent's
 *              operations a second time
 *   latency    4 KiB AlltoAlls with a copy in, a copy out and a host
 *              synchronization per step (QA F1): latency-bound, never
 *              judged for bandwidth
 *   blocking   cudaStreamSynchronize(s) right after each AlltoAll -> no-overlap
 *   serial     compute and AlltoAll on the same stream, nothing else -> no-overlap
 *   devsync    cudaDeviceSynchronize at the end of every step -> sync-heavy
 *   churn      a new stream per step, destroyed after use    -> stream-churn
 *   priority   compute on a priority -1 stream, 4 MiB AlltoAll on a
 *              priority 0 stream                             -> stream-priority
 *   race       the consumer reads the AlltoAll output on sc without waiting
 *              (s delayed by 20 ms): the data must come out wrong (exit 3)
 *              although a2acheck times every AlltoAll with events on s: the
 *              measurement adds no synchronization
 *   racefixed  the same with the event edge (exit 0)
 */
#include "e2e_common.h"

#define STEPS 20

static const char *g_pattern;

static size_t floats(size_t bytes) { return bytes / sizeof(float); }

/* A2A of `bytes` in total per rank (count per peer = bytes / 4 / n floats). */
static void a2a(float *send, float *recv, size_t bytes, int n, ncclComm_t comm, cudaStream_t s) {
  E2E_NCCL(ncclAlltoAll(send, recv, floats(bytes) / (size_t)n, ncclFloat, comm, s));
}

/* The consumer of an AlltoAll's output: sc waits for the AlltoAll on s
 * (event `done`), a kernel reads recv on sc, and s waits for that kernel
 * (event `used`), so the consumer is done with recv before the next
 * AlltoAll on s overwrites it (without that edge the next step races, and
 * the stream checks rightly say so). */
static void consume(float *recv, cudaEvent_t done, cudaEvent_t used, cudaStream_t s,
                    cudaStream_t sc) {
  e2e_edge(done, s, sc);
  e2e_compute(sc, recv, 1024, 100);
  e2e_edge(used, sc, s);
}

static int body(int rank, int n, ncclComm_t comm, void *arg) {
  (void)arg;
  const char *p = g_pattern;
  const size_t maxb = 4u << 20;
  float *send, *recv, *work;
  E2E_CUDA(cudaMalloc((void **)&send, maxb));
  E2E_CUDA(cudaMalloc((void **)&recv, maxb));
  E2E_CUDA(cudaMalloc((void **)&work, 4096));
  cudaStream_t s, sc;
  if (strcmp(p, "priority") == 0) {
    int least = 0, greatest = 0;
    E2E_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    E2E_CUDA(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, least));
    E2E_CUDA(cudaStreamCreateWithPriority(&sc, cudaStreamNonBlocking, greatest < least ? greatest : -1));
  } else {
    s = e2e_stream();
    sc = e2e_stream();
  }
  cudaEvent_t done = e2e_event(), used = e2e_event();
  int status = 0;

  if (strcmp(p, "clean") == 0) {
    for (int i = 0; i < STEPS; i++) {
      e2e_compute(sc, work, 1024, 200);
      a2a(send, recv, 1u << 20, n, comm, s);
      consume(recv, done, used, s, sc);
    }
    E2E_CUDA(cudaStreamSynchronize(sc));
  } else if (strcmp(p, "overlap") == 0) {
    /* Independent compute issued right after each AlltoAll, on sc: about
     * 10 ms of kernel (5 ms of work + the 5 ms launch cost) under the
     * 15.5 ms AlltoAll; then the consumer waits for the AlltoAll. */
    for (int i = 0; i < STEPS; i++) {
      a2a(send, recv, 1u << 20, n, comm, s);
      e2e_compute(sc, work, 1024, 5000);
      consume(recv, done, used, s, sc);
    }
    E2E_CUDA(cudaStreamSynchronize(sc));
  } else if (strcmp(p, "small") == 0 || strcmp(p, "batched") == 0) {
    for (int i = 0; i < 8; i++) a2a(send, recv, 4u << 20, n, comm, s);
    if (p[0] == 's') {
      for (int i = 0; i < 200; i++) a2a(send, recv, 32u << 10, n, comm, s);
    } else {
      /* 200 x 32 KiB = 6.25 MiB: six operations of 1 MiB and one of 256 KiB. */
      for (int i = 0; i < 6; i++) a2a(send, recv, 1u << 20, n, comm, s);
      a2a(send, recv, 256u << 10, n, comm, s);
    }
    E2E_CUDA(cudaStreamSynchronize(s));
  } else if (strcmp(p, "slowlink") == 0) {
    for (int i = 0; i < 48; i++) {
      if (i == 16) {
        /* Every rank, at the same point: the transfers get slower. */
        E2E_CUDA(cudaStreamSynchronize(s));
        E2E_CUDA(a2asim_stream_set_delay(s, 20000) == 0 ? cudaSuccess : cudaErrorInvalidValue);
      }
      a2a(send, recv, 1u << 20, n, comm, s);
    }
    E2E_CUDA(cudaStreamSynchronize(s));
    E2E_CUDA(a2asim_stream_set_delay(s, 0) == 0 ? cudaSuccess : cudaErrorInvalidValue);
  } else if (strcmp(p, "imbalance") == 0) {
    for (int i = 0; i < 48; i++) {
      /* A straggler: rank 1 computes 60 ms before each of the last 32, and
       * rank 0's AlltoAll waits for it on the GPU. */
      if (rank == 1 && i >= 16) e2e_compute(s, work, 1024, 60000);
      a2a(send, recv, 1u << 20, n, comm, s);
      /* The host looks at a result every 8 steps (and so no more than 32
       * operations are in flight: all of them are timed). */
      if (i % 8 == 7) E2E_CUDA(cudaStreamSynchronize(s));
    }
    E2E_CUDA(cudaStreamSynchronize(s));
  } else if (strcmp(p, "skew") == 0) {
    for (int i = 0; i < 48; i++) {
      if (i % 4 == 1 + 2 * (rank % 2)) e2e_compute(s, work, 1024, 100000);
      a2a(send, recv, 1u << 20, n, comm, s);
      consume(recv, done, used, s, sc);
      E2E_CUDA(cudaStreamSynchronize(sc)); /* the host reads a result */
    }
  } else if (strcmp(p, "forkchild") == 0) {
    for (int i = 0; i < 8; i++) {
      a2a(send, recv, 1u << 20, n, comm, s);
      if (i == 3 && rank == 1) {
        fflush(NULL);
        pid_t c = fork();
        if (c < 0) { perror("fork"); status = 1; break; }
        if (c == 0) exit(0); /* a data loader: host work only, then exit() */
        int ws;
        if (waitpid(c, &ws, 0) < 0 || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0) status = 1;
      }
    }
    E2E_CUDA(cudaStreamSynchronize(s));
  } else if (strcmp(p, "latency") == 0) {
    float *host;
    E2E_CUDA(cudaMallocHost((void **)&host, 4096));
    for (int i = 0; i < 40; i++) {
      for (int k = 0; k < 1024; k++) host[k] = (float)(i + k);
      E2E_CUDA(cudaMemcpyAsync(send, host, 4096, cudaMemcpyHostToDevice, s));
      a2a(send, recv, 4096, n, comm, s);
      E2E_CUDA(cudaMemcpyAsync(host, recv, 4096, cudaMemcpyDeviceToHost, s));
      E2E_CUDA(cudaStreamSynchronize(s));
    }
    E2E_CUDA(cudaFreeHost(host));
  } else if (strcmp(p, "blocking") == 0) {
    for (int i = 0; i < STEPS; i++) {
      e2e_compute(sc, work, 1024, 200);
      a2a(send, recv, 1u << 20, n, comm, s);
      E2E_CUDA(cudaStreamSynchronize(s));
      e2e_compute(sc, recv, 1024, 100);
      e2e_edge(used, sc, s);
    }
    E2E_CUDA(cudaStreamSynchronize(sc));
  } else if (strcmp(p, "serial") == 0) {
    for (int i = 0; i < STEPS; i++) {
      e2e_compute(s, work, 1024, 200);
      a2a(send, recv, 1u << 20, n, comm, s);
    }
    E2E_CUDA(cudaStreamSynchronize(s));
  } else if (strcmp(p, "devsync") == 0) {
    for (int i = 0; i < STEPS; i++) {
      a2a(send, recv, 1u << 20, n, comm, s);
      consume(recv, done, used, s, sc);
      E2E_CUDA(cudaDeviceSynchronize());
    }
  } else if (strcmp(p, "churn") == 0) {
    for (int i = 0; i < STEPS; i++) {
      cudaStream_t t = e2e_stream();
      if (i > 0) E2E_CUDA(cudaStreamWaitEvent(t, used, 0)); /* previous consumer */
      a2a(send, recv, 1u << 20, n, comm, t);
      e2e_edge(done, t, sc);
      e2e_compute(sc, recv, 1024, 100);
      E2E_CUDA(cudaEventRecord(used, sc));
      E2E_CUDA(cudaStreamDestroy(t));
    }
    E2E_CUDA(cudaStreamSynchronize(sc));
  } else if (strcmp(p, "priority") == 0) {
    for (int i = 0; i < 4; i++) {
      e2e_compute(sc, work, 1024, 200);
      a2a(send, recv, 4u << 20, n, comm, s);
      consume(recv, done, used, s, sc);
    }
    E2E_CUDA(cudaStreamSynchronize(sc));
  } else if (strcmp(p, "race") == 0 || strcmp(p, "racefixed") == 0) {
    int nf = (int)floats(1u << 20);
    int *errors;
    E2E_CUDA(cudaMallocHost((void **)&errors, sizeof *errors));
    *errors = 0;
    /* Every rank sends base 1000 + i in every chunk; chunk r of recv is
     * what rank r sent to us: 1000 + (its chunk index = our rank) ... all
     * chunks hold the same pattern when every rank fills the same way. */
    int chunk = nf / n;
    for (int r = 0; r < n; r++) e2e_fill(s, send + (size_t)r * chunk, chunk, 1000.0f);
    e2e_fill(s, recv, nf, -1.0f);
    E2E_CUDA(cudaStreamSynchronize(s));
    E2E_CUDA(a2asim_stream_set_delay(s, 20000) == 0 ? cudaSuccess : cudaErrorInvalidValue);
    a2a(send, recv, 1u << 20, n, comm, s);
    if (strcmp(p, "racefixed") == 0) e2e_edge(done, s, sc);
    for (int r = 0; r < n; r++) e2e_check(sc, recv + (size_t)r * chunk, chunk, 1000.0f, errors);
    E2E_CUDA(cudaStreamSynchronize(sc));
    E2E_CUDA(cudaStreamSynchronize(s));
    E2E_CUDA(a2asim_stream_set_delay(s, 0) == 0 ? cudaSuccess : cudaErrorInvalidValue);
    if (*errors) status = E2E_DATA_WRONG;
    E2E_CUDA(cudaFreeHost(errors));
  } else {
    fprintf(stderr, "unknown pattern %s\n", p);
    status = 1;
  }

  E2E_CUDA(cudaEventDestroy(done));
  E2E_CUDA(cudaEventDestroy(used));
  E2E_CUDA(cudaStreamDestroy(s));
  E2E_CUDA(cudaStreamDestroy(sc));
  E2E_CUDA(cudaFree(send));
  E2E_CUDA(cudaFree(recv));
  E2E_CUDA(cudaFree(work));
  return status;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PATTERN [NRANKS]\n", argv[0]);
    return 2;
  }
  /* PATTERN@N is PATTERN on N ranks (one argument, for the ctest helper). */
  static char pat[64];
  snprintf(pat, sizeof pat, "%s", argv[1]);
  char *at = strchr(pat, '@');
  int n = argc > 2 ? atoi(argv[2]) : 2;
  if (at) { *at = '\0'; n = atoi(at + 1); }
  g_pattern = pat;
  if (n < 1 || n > 16) return 2;
  return e2e_verdict(g_pattern, e2e_run_ranks(n, e2e_register_kernels, body, NULL));
}
