/* rpath_probe.c - a program linked against a real libcudart.so.13 with a
 * DT_RPATH to it (as PyTorch's libraries are linked to their nvidia-* wheel
 * copies): on its own it gets the real runtime (no GPU here: an error);
 * under a2asim-run it must get the simulator's. Prints the device count and
 * the status (ctest sim.run.rpath). */
#include <stdio.h>

#include <cuda_runtime_api.h>

int main(void) {
  int n = -1;
  cudaError_t e = cudaGetDeviceCount(&n);
  printf("cudaGetDeviceCount=%d devices=%d\n", (int)e, n);
  return 0;
}
