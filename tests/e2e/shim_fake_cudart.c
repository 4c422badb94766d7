/* shim_fake_cudart.c - stand-ins for the CUDA runtime used by the symbol
 * resolution tests (tests/unit/test_resolve.c).
 *  - Built without A2A_FAKE_DECOY: a "vendored cudart" under its own soname
 *    that defines the scan marker cudaLaunchKernel; cudaGetDeviceCount
 *    reports 7.
 *  - Built with A2A_FAKE_DECOY: an unrelated library that happens to define
 *    cudaGetDeviceCount (reporting 99) but not the marker; the scan must
 *    not take it for the CUDA runtime. */
int cudaGetDeviceCount(int *count);

int cudaGetDeviceCount(int *count)
{
#ifdef A2A_FAKE_DECOY
  *count = 99;
#else
  *count = 7;
#endif
  return 0;
}

#ifndef A2A_FAKE_DECOY
typedef struct { unsigned x, y, z; } fake_dim3;
int cudaLaunchKernel(const void *func, fake_dim3 grid, fake_dim3 block, void **args, unsigned long shmem,
                     void *stream);
int cudaLaunchKernel(const void *func, fake_dim3 grid, fake_dim3 block, void **args, unsigned long shmem,
                     void *stream)
{
  return 0;
}
#endif
