/* run_probe.c - what a program started by a2asim-run sees (ctest
 * sim.run.*). Linked with nothing CUDA: it prints LD_PRELOAD, the file that
 * owns each simulated soname in the process (dlopen by soname, as libraries
 * do), the simulated device count (A2ASIM_DEVICES reaches it) and, for
 * "rpath", the answer of cudaGetDeviceCount through a copy linked with a
 * DT_RPATH to a real libcudart (the PyTorch situation). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void owner(const char *soname, const char *sym) {
  void *h = dlopen(soname, RTLD_NOW);
  void *p = h ? dlsym(h, sym) : NULL;
  Dl_info di;
  printf("%s=%s\n", soname, p && dladdr(p, &di) ? di.dli_fname : "(none)");
}

int main(void) {
  const char *pre = getenv("LD_PRELOAD");
  printf("LD_PRELOAD=%s\n", pre ? pre : "");
  owner("libcudart.so.13", "cudaGetDeviceCount");
  owner("libnccl.so.2", "ncclGetVersion");
  owner("libcuda.so.1", "cuInit");
  int (*count)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "a2asim_device_count");
  printf("devices=%d\n", count ? count() : -1);
  void *cu = dlopen("libcuda.so.1", RTLD_NOW);
  printf("sim_driver=%d\n", cu && dlsym(cu, "a2asim_driver_marker") ? 1 : 0);
  return 0;
}
