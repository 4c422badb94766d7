// cudart_nvcc.cu - an nvcc-compiled program on the simulated runtime: the
// static registration hooks (__cudaRegisterFatBinary, __cudaRegisterFunction)
// load, kernel<<<...>>> goes through __cudaPushCallConfiguration,
// __cudaGetKernel and __cudaLaunchKernel with the real argument layout, a
// registered stand-in runs, an unregistered kernel is an ordered no-op known
// by its mangled name. Exit status 0 = all checks passed (ctest
// sim.cudart.nvcc, built at test time when nvcc is available).
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
extern "C" {
#include "a2asim.h"
}

__global__ void scale(float *x, int n, float a) {
  int i = threadIdx.x;
  if (i < n) x[i] *= a;
}
__global__ void never_registered(int *p) { *p = 1; }

static void scale_impl(void **args, const a2asim_launch_info *li) {
  float *x = *(float **)args[0];
  int n = *(int *)args[1];
  float a = *(float *)args[2];
  for (int i = 0; i < n; i++) x[i] *= a;
}

#define CHECK(c) do { if (!(c)) { std::printf("FAIL %s:%d %s\n", __FILE__, __LINE__, #c); return 1; } } while (0)

int main() {
  const char *name = nullptr;
  // nvcc's registration recorded the mangled name.
  CHECK(cudaFuncGetName(&name, (const void *)never_registered) == cudaSuccess);
  CHECK(std::strcmp(name, "_Z16never_registeredPi") == 0);
  static const size_t sz[] = {sizeof(float *), sizeof(int), sizeof(float)};
  CHECK(a2asim_register_kernel((const void *)scale, scale_impl, "scale", 3, sz) == 0);
  float *x;
  int *flag;
  CHECK(cudaMallocManaged(&x, 4 * sizeof(float)) == cudaSuccess);
  CHECK(cudaMallocManaged(&flag, sizeof(int)) == cudaSuccess);
  for (int i = 0; i < 4; i++) x[i] = (float)i;
  *flag = 0;
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s) == cudaSuccess);
  scale<<<1, 4, 0, s>>>(x, 4, 3.0f);
  never_registered<<<1, 1, 0, s>>>(flag);
  scale<<<1, 4, 0, s>>>(x, 4, 0.5f);
  CHECK(cudaGetLastError() == cudaSuccess);
  CHECK(cudaStreamSynchronize(s) == cudaSuccess);
  for (int i = 0; i < 4; i++) CHECK(x[i] == 1.5f * (float)i);
  CHECK(*flag == 0);   // device code never runs
  std::printf("nvcc program OK\n");
  return 0;
}
