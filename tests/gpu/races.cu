/* races.cu - real-kernel stream races around NCCL on a real GPU
 * (tests/gpu/run.sh steps "race-*"), one single-rank communicator:
 *
 *   races unsynced-input  [fixed]  a kernel fills the send buffer on the
 *                                  compute stream; the AlltoAll runs on the
 *                                  communication stream with no event edge
 *                                  -> stream.unsynced-input
 *   races unsynced-output [fixed]  a kernel (pointers inside a by-value
 *                                  struct) reads the receive buffer on the
 *                                  compute stream before the AlltoAll is
 *                                  known to be done -> stream.unsynced-output
 *   races free-in-flight  [fixed]  the send buffer (cudaMallocAsync) is
 *                                  freed with cudaFreeAsync on the compute
 *                                  stream while the AlltoAll may still read
 *                                  it -> stream.free-in-flight
 *
 * "fixed" adds the event edge (cudaEventRecord on the producer,
 * cudaStreamWaitEvent on the consumer) and must yield no finding. The
 * communication stream is kept busy by a spinning kernel first so that a
 * buggy consumer really overtakes it. Prints one JSON line; exit 0 unless a
 * fixed variant computed wrong data (3) or a call failed (1). Whether the
 * buggy variants corrupted data on this run is reported, not asserted: the
 * check under test is a2acheck's finding. */
#include <string.h>

#include "gpu_common.h"

/* One round of the pattern; returns the number of wrong elements. */
static unsigned long long one_round(const char *mode, int fixed, ncclComm_t comm, cudaStream_t comp,
                                    cudaStream_t comm_s, cudaEvent_t ev, float *send, float *recv,
                                    float *out, unsigned long long *errors, size_t n) {
  /* free-in-flight frees its send buffer: a fresh stream-ordered one per
   * round; the others reuse the caller's. */
  if (!send) G_CUDA(cudaMallocAsync((void **)&send, n * sizeof(float), comm_s));
  *errors = 0;
  g_fill<<<128, 256, 0, comm_s>>>(send, n, 1.0f);
  g_fill<<<128, 256, 0, comm_s>>>(recv, n, -1.0f);
  G_CUDA(cudaStreamSynchronize(comm_s));

  long long spin = 200LL * 1000 * 1000; /* ~0.1 s at 2 GHz */
  if (strcmp(mode, "unsynced-input") == 0) {
    g_spin<<<1, 1, 0, comp>>>(spin);
    g_fill<<<128, 256, 0, comp>>>(send, n, 9.0f); /* producer */
    if (fixed) {
      G_CUDA(cudaEventRecord(ev, comp));
      G_CUDA(cudaStreamWaitEvent(comm_s, ev, 0));
    }
    g_alltoall(send, recv, n, comm, comm_s);
    g_check<<<128, 256, 0, comm_s>>>(recv, n, 9.0f, errors);
  } else if (strcmp(mode, "unsynced-output") == 0) {
    g_spin<<<1, 1, 0, comm_s>>>(spin);
    g_alltoall(send, recv, n, comm, comm_s);
    if (fixed) {
      G_CUDA(cudaEventRecord(ev, comm_s));
      G_CUDA(cudaStreamWaitEvent(comp, ev, 0));
    }
    g_iter_args a = {(int)n, 0, recv, out};
    g_scale_struct<<<128, 256, 0, comp>>>(a); /* consumer; checked on the host below */
  } else {
    g_spin<<<1, 1, 0, comm_s>>>(spin);
    g_alltoall(send, recv, n, comm, comm_s);
    if (fixed) {
      G_CUDA(cudaEventRecord(ev, comm_s));
      G_CUDA(cudaStreamWaitEvent(comp, ev, 0));
    }
    G_CUDA(cudaFreeAsync(send, comp));
    send = NULL;
    g_check<<<128, 256, 0, comm_s>>>(recv, n, 1.0f, errors);
  }
  G_CUDA(cudaDeviceSynchronize());
  unsigned long long wrong = *errors;
  if (strcmp(mode, "unsynced-output") == 0) { /* out must be 2 * (1 + i % 4096) */
    float *h = (float *)malloc(n * sizeof(float));
    G_CUDA(cudaMemcpy(h, out, n * sizeof(float), cudaMemcpyDeviceToHost));
    wrong = 0;
    for (size_t i = 0; i < n; i++)
      if (h[i] != 2.0f * (1.0f + (float)(i % 4096))) wrong++;
    free(h);
  }
  return wrong;
}

int main(int argc, char **argv) {
  if (argc < 2 || (strcmp(argv[1], "unsynced-input") != 0 && strcmp(argv[1], "unsynced-output") != 0 &&
                   strcmp(argv[1], "free-in-flight") != 0)) {
    fprintf(stderr, "usage: %s unsynced-input|unsynced-output|free-in-flight [fixed]\n", argv[0]);
    return 2;
  }
  const char *mode = argv[1];
  int fixed = argc > 2 && strcmp(argv[2], "fixed") == 0;
  ncclComm_t comm = g_one_rank_comm();
  const size_t n = 1 << 22;
  cudaStream_t comp, comm_s;
  G_CUDA(cudaStreamCreateWithFlags(&comp, cudaStreamNonBlocking));
  G_CUDA(cudaStreamCreateWithFlags(&comm_s, cudaStreamNonBlocking));
  cudaEvent_t ev;
  G_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  float *send = NULL, *recv, *out;
  unsigned long long *errors;
  if (strcmp(mode, "free-in-flight") != 0) G_CUDA(cudaMalloc((void **)&send, n * sizeof(float)));
  G_CUDA(cudaMalloc((void **)&recv, n * sizeof(float)));
  G_CUDA(cudaMalloc((void **)&out, n * sizeof(float)));
  G_CUDA(cudaMallocHost((void **)&errors, sizeof *errors));
  /* Two rounds, a device synchronization between them: like a training
   * loop, and because a2acheck tracks a buffer from its first communication
   * on (a kernel that writes a send buffer before any operation used it is
   * not remembered), so the first round's producer race is not seen. */
  unsigned long long wrong = 0;
  for (int round = 0; round < 2; round++)
    wrong += one_round(mode, fixed, comm, comp, comm_s, ev, send, recv, out, errors, n);
  printf("{\"mode\": \"%s\", \"fixed\": %s, \"wrong_elements\": %llu}\n", mode,
         fixed ? "true" : "false", wrong);
  G_NCCL(ncclCommDestroy(comm));
  if (send) G_CUDA(cudaFree(send));
  G_CUDA(cudaFree(recv));
  G_CUDA(cudaFree(out));
  G_CUDA(cudaFreeHost(errors));
  G_CUDA(cudaEventDestroy(ev));
  G_CUDA(cudaStreamDestroy(comp));
  G_CUDA(cudaStreamDestroy(comm_s));
  return (fixed && wrong) ? 3 : 0;
}
