/* bench_overhead.c - what a2acheck costs the application, on the CPU
 * simulator (bench/run_bench.sh runs it with and without the shim):
 *
 *  1. host-side cost per intercepted call: the mean wall time of N calls of
 *     cudaLaunchKernel (a registered no-op kernel), ncclAllReduce (8 floats on
 *     a one-rank communicator), cudaEventRecord and cudaStreamWaitEvent, timed
 *     on the host in batches (the stream is drained between batches, outside
 *     the timed region);
 *  2. the step time: STEPS steps of compute + a 1 MiB AllReduce + an event
 *     edge, timed with CUDA events on the stream. With the simulator's cost
 *     model on (A2ASIM_LAUNCH_US, A2ASIM_BW_GBPS) this shows that timing the
 *     communication (A2ACHECK_PERF_MEASURE=1) does not lengthen the step: the
 *     timing events add no synchronization.
 *
 * Prints one JSON object. Not a ctest: timings on a shared machine are noise
 * a test could not assert on. */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "a2asim.h"

#define CK(call)                                                                   \
  do {                                                                             \
    int e_ = (int)(call);                                                          \
    if (e_ != 0) {                                                                 \
      fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #call, e_);        \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)

static void k_noop(void) {}
static void noop_impl(void **args, const a2asim_launch_info *li) { (void)args; (void)li; }

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

enum { B_LAUNCH, B_ALLREDUCE, B_RECORD, B_WAIT, B_N };
static const char *const names[B_N] = {"cudaLaunchKernel", "ncclAllReduce", "cudaEventRecord",
                                       "cudaStreamWaitEvent"};

int main(int argc, char **argv) {
  /* calls = 0 skips part 1, steps = 0 part 2 (run_bench.sh runs them in
   * separate processes: part 2 under the cost model, part 1 without). */
  int calls = argc > 1 ? atoi(argv[1]) : 20000;
  int steps = argc > 2 ? atoi(argv[2]) : 50;
  if (calls > 0 && calls < 1000) calls = 1000;
  CK(a2asim_register_kernel((const void *)k_noop, noop_impl, "noop", 0, NULL));
  CK(cudaSetDevice(0));
  ncclUniqueId id;
  ncclComm_t comm;
  CK(ncclGetUniqueId(&id));
  CK(ncclCommInitRank(&comm, 1, id, 0));
  cudaStream_t s, s2;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t ev, t0, t1;
  CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  CK(cudaEventCreate(&t0));
  CK(cudaEventCreate(&t1));
  float *buf;
  const size_t n = 1 << 18; /* 1 MiB */
  CK(cudaMalloc((void **)&buf, n * sizeof(float)));
  dim3 one = {1, 1, 1};

  /* 1. per-call host cost */
  double per_call_ns[B_N];
  const int batch = 1000;
  for (int b = 0; b < B_N; b++) {
    per_call_ns[b] = 0;
    if (calls == 0) continue;
    double total = 0;
    for (int done = 0; done < calls; done += batch) {
      double a = now_s();
      for (int i = 0; i < batch; i++) {
        switch (b) {
        case B_LAUNCH: CK(cudaLaunchKernel((const void *)k_noop, one, one, NULL, 0, s)); break;
        case B_ALLREDUCE: CK(ncclAllReduce(buf, buf, 8, ncclFloat, ncclSum, comm, s)); break;
        case B_RECORD: CK(cudaEventRecord(ev, s)); break;
        case B_WAIT: CK(cudaStreamWaitEvent(s2, ev, 0)); break;
        }
      }
      total += now_s() - a;
      CK(cudaStreamSynchronize(s)); /* drain, untimed */
      CK(cudaStreamSynchronize(s2));
    }
    per_call_ns[b] = total / (double)calls * 1e9;
  }

  /* 2. step time on the GPU (the simulator's cost model) */
  float ms = 0;
  if (steps > 0) {
  CK(cudaEventRecord(t0, s));
  for (int i = 0; i < steps; i++) {
    CK(cudaLaunchKernel((const void *)k_noop, one, one, NULL, 0, s2));
    CK(cudaEventRecord(ev, s2));
    CK(cudaStreamWaitEvent(s, ev, 0));
    CK(ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, comm, s));
  }
  CK(cudaEventRecord(t1, s));
  CK(cudaStreamSynchronize(s));
  CK(cudaEventElapsedTime(&ms, t0, t1));
  }

  printf("{");
  if (calls > 0)
    for (int b = 0; b < B_N; b++) printf("\"%s_ns\": %.1f, ", names[b], per_call_ns[b]);
  if (steps > 0) printf("\"step_ms\": %.4f, ", ms / steps);
  printf("\"steps\": %d, \"calls\": %d}\n", steps, calls);
  CK(ncclCommDestroy(comm));
  CK(cudaFree(buf));
  return 0;
}
