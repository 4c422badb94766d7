/* client_torch.c - the CUDA and NCCL calls of a PyTorch 2.15 training loop
 * around dist.all_to_all_single, reproduced on the simulator for the checks
 * real PyTorch showed wrong (issue 11, items 4-6). Two ranks (processes),
 * data verified. What PyTorch does, and where (pytorch/pytorch):
 *
 *  - c10/cuda/CUDAStream.cpp: the current stream is the legacy default
 *    stream unless the program chose one; torch.cuda.Stream() and
 *    ProcessGroupNCCL's streams come from per-device pools created at their
 *    first use, 32 per priority, with cudaStreamCreateWithPriority(...,
 *    cudaStreamNonBlocking, priority): non-blocking.
 *  - ProcessGroupNCCL (torch >= 2.8): a collective with async_op=False runs
 *    on the current stream, without events; an equal-split
 *    all_to_all_single is one ncclAlltoAll (NCCL >= 2.28).
 *  - torch/cuda/streams.py, Stream.wait_stream(other):
 *    self.wait_event(other.record_event()), and record_event() makes a new
 *    torch.cuda.Event, whose CUDA event (aten/src/ATen/cuda/CUDAEvent.h) is
 *    created at the first record with cudaEventCreateWithFlags(...,
 *    cudaEventDisableTiming) and destroyed with the Python object, right
 *    after the call: one create/record/wait/destroy per wait_stream.
 *  - tensor.to("cuda") / .cpu(): cudaMemcpyAsync on the current stream (and
 *    a cudaStreamSynchronize for .cpu()).
 *
 * Per step: produce the input on the current stream (a kernel), the
 * all-to-all on it, a side stream waits for it (wait_stream), copies the
 * output to the host there, the current stream waits for the side stream.
 * Run with the simulator's cost model (clients.cmake: A2ASIM_LAUNCH_US,
 * A2ASIM_BW_GBPS), so that an operation's time is its fixed cost plus its
 * bytes over a bandwidth, as on a GPU, not the simulator's own.
 *
 * Modes (argv[1]):
 *   sync      exactly that: a correct PyTorch program. No warning may be
 *             reported: the legacy default stream has only non-blocking
 *             streams beside it (no stream.default-stream), one
 *             DisableTiming event per wait_stream costs microseconds of host
 *             time and synchronizes nothing (perf.stream-churn at most
 *             info), and the 64 KiB all-to-alls' estimated batching gain
 *             (their time is mostly bytes) is below A2ACHECK_PERF_MIN_GAIN
 *             (perf.small-messages at most info).
 *   tiny      all-to-alls of 128 to 1024 bytes posted back to back (the
 *             host reads only the last one), whose time is mostly the
 *             per-operation cost: batching them would save a material
 *             share (perf.small-messages, warning).
 *   blocking  the side stream comes from a library that creates blocking
 *             streams (cudaStreamCreate: CuPy's default Stream, many C++
 *             extensions) and runs compute: the legacy stream now
 *             serializes with it (stream.default-stream, warning).
 *   events    like sync, but every step also creates and destroys
 *             EVENTS_PER_STEP events (code that makes an event per tensor
 *             and step "in case" and drops it): the host spends a material
 *             share of the run in those calls (perf.stream-churn, warning).
 * Every mode also gets perf.no-overlap (warning): the program really runs
 * its communication and all its compute on one stream, one after the
 * other, which async_op=True would change.
 */
#include "e2e_common.h"

#define NRANKS 2
#define N_BIG 8192        /* floats per peer chunk: 64 KiB per all-to-all */
#define N_TINY 16         /* ... tiny: 128 bytes */
#define STEPS 80          /* above A2ACHECK_SMALL_MSG_MIN_OPS (64) */
#define POOL 32           /* c10's kStreamsPerPool */
#define EVENTS_PER_STEP 2000

typedef enum { M_SYNC, M_BLOCKING, M_EVENTS, M_TINY } mode_t_;

static float base_of(int step, int from, int to) {
  return (float)(step * 10000 + from * 100 + to);
}

/* torch.cuda.Stream.wait_stream(other) on `self`. */
static void wait_stream(cudaStream_t self, cudaStream_t other) {
  cudaEvent_t e;
  E2E_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  E2E_CUDA(cudaEventRecord(e, other));
  E2E_CUDA(cudaStreamWaitEvent(self, e, 0));
  E2E_CUDA(cudaEventDestroy(e));
}

static int rank_main(int rank, int nranks, ncclComm_t comm, void *arg) {
  mode_t_ mode = *(mode_t_ *)arg;
  const int N = mode == M_TINY ? N_TINY << 3 : N_BIG; /* largest chunk */
  /* c10's stream pools of this device: low and high priority. */
  int lo = 0, hi = 0;
  E2E_CUDA(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  cudaStream_t pool[2][POOL];
  for (int p = 0; p < 2; p++)
    for (int i = 0; i < POOL; i++)
      E2E_CUDA(cudaStreamCreateWithPriority(&pool[p][i], cudaStreamNonBlocking, p ? hi : lo));
  cudaStream_t cur = 0; /* torch.cuda.current_stream(): the legacy default stream */
  cudaStream_t side = pool[0][1];
  if (mode == M_BLOCKING) E2E_CUDA(cudaStreamCreate(&side));

  size_t n = (size_t)nranks * N;
  float *inp = e2e_dalloc(n * sizeof(float)), *out = e2e_dalloc(n * sizeof(float));
  float *work = e2e_dalloc(n * sizeof(float));
  float *host = NULL;
  E2E_CUDA(cudaMallocHost((void **)&host, n * sizeof(float)));
  int wrong = 0;
  for (int step = 0; step < STEPS; step++) {
    /* tiny: 16, 32, 64, 128 floats per peer in turn, posted back to back
     * (the host waits only for the last) */
    int c = mode == M_TINY ? N_TINY << (step % 4) : N;
    for (int p = 0; p < nranks; p++) e2e_fill(cur, inp + (size_t)p * c, c, base_of(step, rank, p));
    E2E_NCCL(ncclAlltoAll(inp, out, (size_t)c, ncclFloat, comm, cur));
    if (mode == M_TINY && step < STEPS - 1) continue;
    wait_stream(side, cur);
    if (mode == M_BLOCKING) e2e_compute(side, work, (int)n, 0);
    E2E_CUDA(cudaMemcpyAsync(host, out, (size_t)nranks * c * sizeof(float), cudaMemcpyDeviceToHost,
                             side));
    E2E_CUDA(cudaStreamSynchronize(side));
    wait_stream(cur, side);
    if (mode == M_EVENTS)
      for (int i = 0; i < EVENTS_PER_STEP; i++) {
        cudaEvent_t ev;
        E2E_CUDA(cudaEventCreate(&ev));
        E2E_CUDA(cudaEventDestroy(ev));
      }
    for (int p = 0; p < nranks; p++)
      for (int i = 0; i < c; i++)
        if (host[(size_t)p * c + i] != base_of(step, p, rank) + (float)i) {
          wrong++;
          break;
        }
  }
  E2E_CUDA(cudaStreamSynchronize(cur));
  if (mode == M_BLOCKING) E2E_CUDA(cudaStreamDestroy(side));
  E2E_CUDA(cudaFreeHost(host));
  E2E_CUDA(cudaFree(inp));
  E2E_CUDA(cudaFree(out));
  E2E_CUDA(cudaFree(work));
  return wrong ? E2E_DATA_WRONG : 0;
}

int main(int argc, char **argv) {
  mode_t_ mode;
  if (e2e_arg_is(argc, argv, "sync")) mode = M_SYNC;
  else if (e2e_arg_is(argc, argv, "blocking")) mode = M_BLOCKING;
  else if (e2e_arg_is(argc, argv, "events")) mode = M_EVENTS;
  else if (e2e_arg_is(argc, argv, "tiny")) mode = M_TINY;
  else {
    fprintf(stderr, "usage: %s sync|blocking|events|tiny\n", argv[0]);
    return 2;
  }
  return e2e_verdict(NULL, e2e_run_ranks(NRANKS, e2e_register_kernels, rank_main, &mode));
}
