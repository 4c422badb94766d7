/* layout_wrong_device.c - layout.wrong-device (needs A2ASIM_DEVICES >= 2).
 *   buggy: the receive buffer is allocated while device 1 is current (a
 *          tensor created before torch.cuda.set_device), then used with the
 *          communicator of device 0;
 *   fixed: both buffers are allocated on device 0. */
#include "local_common.h"

#define N 4096

int main(int argc, char **argv) {
  int fixed = lc_fixed(argc, argv);
  LC_CUDA(cudaSetDevice(fixed ? 0 : 1));
  float *recv = lc_dalloc(N * sizeof(float));
  LC_CUDA(cudaSetDevice(0));
  float *send = lc_dalloc(N * sizeof(float));
  ncclComm_t comm = lc_comm1();
  cudaStream_t s = lc_stream();
  LC_TRY(ncclAllReduce(send, recv, N, ncclFloat, ncclSum, comm, s));
  LC_CUDA(cudaStreamSynchronize(s));
  LC_NCCL(ncclCommDestroy(comm));
  return 0;
}
