/* layout_hidden_copy.c - layout.hidden-copy (info).
 *   buggy:  the data is produced in one buffer and copied (cudaMemcpyAsync
 *           device-to-device, exactly the bytes sent) into the send buffer
 *           right before ncclAllReduce;
 *   kernel: the same copy done by a kernel named like PyTorch's
 *           .contiguous() kernel (direct_copy_kernel_cuda), recognized by
 *           its name and its pointer parameters;
 *   fixed:  the data is produced directly in the send buffer. */
#include "local_common.h"

#include "a2asim.h"

#define N 4096

/* Host stand-in of the copy kernel: direct_copy(float *dst, const float *src, int n). */
static void direct_copy_kernel_cuda(void) {}
static void direct_copy_impl(void **args, const a2asim_launch_info *li) {
  (void)li;
  float *dst = *(float **)args[0];
  const float *src = *(const float **)args[1];
  int n = *(int *)args[2];
  for (int i = 0; i < n; i++) dst[i] = src[i];
}

int main(int argc, char **argv) {
  int fixed = lc_fixed(argc, argv), kernel = lc_arg_is(argc, argv, "kernel");
  static const size_t params[] = {sizeof(float *), sizeof(float *), sizeof(int)};
  if (a2asim_register_kernel((const void *)direct_copy_kernel_cuda, direct_copy_impl,
                             "void at::native::direct_copy_kernel_cuda(...)", 3, params))
    return 1;
  LC_CUDA(cudaSetDevice(0));
  ncclComm_t comm = lc_comm1();
  cudaStream_t s = lc_stream();
  float *produced = lc_dalloc(N * sizeof(float));
  float *send = fixed ? produced : lc_dalloc(N * sizeof(float));
  float *recv = lc_dalloc(N * sizeof(float));
  /* Three steps: the first finds the copy, the second is timed, the third
   * reports the finding with the copy's duration. */
  for (int step = 0; step < 3; step++) {
    LC_CUDA(cudaMemsetAsync(produced, 0, N * sizeof(float), s));
    if (kernel) {
      int n = N;
      void *args[] = {&send, &produced, &n};
      dim3 one = {1, 1, 1};
      LC_CUDA(cudaLaunchKernel((const void *)direct_copy_kernel_cuda, one, one, args, 0, s));
    } else if (!fixed) {
      LC_CUDA(cudaMemcpyAsync(send, produced, N * sizeof(float), cudaMemcpyDeviceToDevice, s));
    }
    LC_TRY(ncclAllReduce(send, recv, N, ncclFloat, ncclSum, comm, s));
    LC_CUDA(cudaStreamSynchronize(s));
  }
  LC_NCCL(ncclCommDestroy(comm));
  return 0;
}
