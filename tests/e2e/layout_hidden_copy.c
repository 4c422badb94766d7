/* layout_hidden_copy.c - layout.hidden-copy (info).
 *   buggy:  the data is produced in one buffer and copied (cudaMemcpyAsync
 *           device-to-device, exactly the bytes sent) into the send buffer
 *           right before ncclAllReduce;
 *   kernel: the same copy done by a kernel named like PyTorch's
 *           .contiguous() kernel (direct_copy_kernel_cuda), recognized by
 *           its name and its pointer parameters;
 *   fixed:  the data is produced directly in the send buffer. */
#include "e2e_common.h"

#define N 4096

/* The handle of the copy kernel, direct_copy(float *dst, const float *src,
 * int n), run by the shared copy stand-in under PyTorch's name. */
static void direct_copy_kernel_cuda(void) {}

int main(int argc, char **argv) {
  int fixed = e2e_fixed(argc, argv), kernel = e2e_arg_is(argc, argv, "kernel");
  static const size_t params[] = {sizeof(float *), sizeof(float *), sizeof(int)};
  if (a2asim_register_kernel((const void *)direct_copy_kernel_cuda, e2e_copy_impl,
                             "void at::native::direct_copy_kernel_cuda(...)", 3, params))
    return 1;
  E2E_CUDA(cudaSetDevice(0));
  ncclComm_t comm = e2e_comm1();
  cudaStream_t s = e2e_stream();
  float *produced = e2e_dalloc(N * sizeof(float));
  float *send = fixed ? produced : e2e_dalloc(N * sizeof(float));
  float *recv = e2e_dalloc(N * sizeof(float));
  /* Three steps: the first finds the copy, the second is timed, the third
   * reports the finding with the copy's duration. */
  for (int step = 0; step < 3; step++) {
    E2E_CUDA(cudaMemsetAsync(produced, 0, N * sizeof(float), s));
    if (kernel) {
      int n = N;
      void *args[] = {&send, &produced, &n};
      e2e_launch((const void *)direct_copy_kernel_cuda, args, s);
    } else if (!fixed) {
      E2E_CUDA(cudaMemcpyAsync(send, produced, N * sizeof(float), cudaMemcpyDeviceToDevice, s));
    }
    E2E_TRY(ncclAllReduce(send, recv, N, ncclFloat, ncclSum, comm, s));
    E2E_CUDA(cudaStreamSynchronize(s));
  }
  E2E_NCCL(ncclCommDestroy(comm));
  return 0;
}
