/* layout_wrong_device.c - layout.wrong-device (needs A2ASIM_DEVICES >= 2).
 *   buggy: the receive buffer is allocated while device 1 is current (a
 *          tensor created before torch.cuda.set_device), then used with the
 *          communicator of device 0;
 *   fixed: both buffers are allocated on device 0. */
#include "e2e_common.h"

#define N 4096

int main(int argc, char **argv) {
  int fixed = e2e_fixed(argc, argv);
  E2E_CUDA(cudaSetDevice(fixed ? 0 : 1));
  float *recv = e2e_dalloc(N * sizeof(float));
  E2E_CUDA(cudaSetDevice(0));
  float *send = e2e_dalloc(N * sizeof(float));
  ncclComm_t comm = e2e_comm1();
  cudaStream_t s = e2e_stream();
  E2E_TRY(ncclAllReduce(send, recv, N, ncclFloat, ncclSum, comm, s));
  E2E_CUDA(cudaStreamSynchronize(s));
  E2E_NCCL(ncclCommDestroy(comm));
  return 0;
}
