/* overhead.cu - the shim's overhead on a real GPU (tests/gpu/run.sh step
 * "overhead"): ITERS iterations of a small kernel + a 1 MiB single-rank
 * AllReduce + an AlltoAll on one stream, timed with CUDA events (after a
 * warm-up). run.sh runs it with and without LD_PRELOAD and reports the
 * ratio. Prints one JSON line. */
#include "gpu_common.h"

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 2000;
  ncclComm_t comm = g_one_rank_comm();
  const size_t n = 1 << 18; /* 1 MiB of floats */
  float *a, *b;
  cudaStream_t s;
  G_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  G_CUDA(cudaMalloc((void **)&a, n * sizeof(float)));
  G_CUDA(cudaMalloc((void **)&b, n * sizeof(float)));
  cudaEvent_t t0, t1;
  G_CUDA(cudaEventCreate(&t0));
  G_CUDA(cudaEventCreate(&t1));
  for (int phase = 0; phase < 2; phase++) {
    int k = phase == 0 ? 100 : iters;
    if (phase == 1) G_CUDA(cudaEventRecord(t0, s));
    for (int i = 0; i < k; i++) {
      g_fill<<<32, 256, 0, s>>>(a, n, (float)i);
      G_NCCL(ncclAllReduce(a, b, n, ncclFloat, ncclSum, comm, s));
      g_alltoall(b, a, n, comm, s);
    }
    if (phase == 1) G_CUDA(cudaEventRecord(t1, s));
    G_CUDA(cudaStreamSynchronize(s));
  }
  float ms = 0;
  G_CUDA(cudaEventElapsedTime(&ms, t0, t1));
  printf("{\"iters\": %d, \"ms_total\": %.3f, \"us_per_iter\": %.3f}\n", iters, ms,
         1000.0 * ms / iters);
  G_NCCL(ncclCommDestroy(comm));
  G_CUDA(cudaFree(a));
  G_CUDA(cudaFree(b));
  G_CUDA(cudaEventDestroy(t0));
  G_CUDA(cudaEventDestroy(t1));
  G_CUDA(cudaStreamDestroy(s));
  return 0;
}
