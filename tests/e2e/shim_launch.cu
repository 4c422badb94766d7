// shim_launch.cu - the kernel launch entry points as nvcc-built programs
// reach them. Built twice by tests/e2e/shim.cmake with `-cudart shared` (the
// default, static cudart, cannot be interposed) - once with the legacy
// default stream and once with --default-stream per-thread - so the calls go
// to __cudaLaunchKernel / cudaLaunchKernel / cudaMemcpy in one program and
// to their _ptsz / _ptds twins in the other. shim_launch.sh runs each plain
// and preloaded, diffs the outputs and checks the bindings.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void touch(int *p, int v) { if (p) p[threadIdx.x] = v; }

int main() {
  int *d = nullptr;
  int v = 7;
  touch<<<2, 32>>>(d, v);                       // nvcc: __cudaLaunchKernel(_ptsz)
  std::printf("<<<>>>                 -> %d\n", (int)cudaGetLastError());

  void *args[] = {&d, &v};
  std::printf("cudaLaunchKernel       -> %d\n",
              (int)cudaLaunchKernel((const void *)touch, dim3(1), dim3(32), args, 0, 0));
  std::printf("cudaLaunchCooperative  -> %d\n",
              (int)cudaLaunchCooperativeKernel((const void *)touch, dim3(1), dim3(32), args, 0, 0));
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(1);
  cfg.blockDim = dim3(32);
  std::printf("cudaLaunchKernelExC    -> %d\n", (int)cudaLaunchKernelExC(&cfg, (const void *)touch, args));
  int h[4] = {0};
  std::printf("cudaMemcpy             -> %d\n", (int)cudaMemcpy(h, h + 2, 8, cudaMemcpyHostToHost));
  std::printf("cudaPeekAtLastError    -> %d\n", (int)cudaPeekAtLastError());
  std::printf("cudaGetLastError       -> %d\n", (int)cudaGetLastError());
  return 0;
}
