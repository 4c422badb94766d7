/* scenario_bugs.c - buggy programs, one bug per argument, in shapes the
 * team's own tests do not use. 4 ranks as forked processes (the parent
 * creates the id), a communication stream per rank. Each mode names the
 * check a2acheck must report; scenarios.cmake asserts it.
 *
 *   missing_recv   grouped equal all-to-all, 5 steps; at step 2 rank 1
 *                  leaves out its receive from rank 3 in the middle of the
 *                  group: rank 1's later receives from 3 are shifted by one,
 *                  rank 3's last send is never received
 *                  -> size.unmatched-p2p / group.deadlock, exit 66
 *   dtype_bytes    grouped all-to-all; rank 2 receives rank 0's chunk of N
 *                  bfloat16 as N/2 float32 (same bytes) -> size.dtype-mismatch
 *   coll_dtype     AllReduce; rank 3 passes ncclInt32 where the others pass
 *                  ncclFloat32 (same count and bytes)
 *                  -> size.dtype-mismatch (error: a reduction)
 *   bcast_root     Broadcast; rank 2 believes the root is 1, the others 0
 *                  -> size.collective-mismatch
 *   a2a_count      ncclAlltoAll; rank 0 passes half the count
 *                  -> size.collective-mismatch
 *   wrong_device   the tensors are created on device 0 before
 *                  cudaSetDevice(local_rank) -> layout.wrong-device on
 *                  ranks 1-3
 *   order_groups   two process groups (world and a split copy of it) used in
 *                  a different order by rank 0 on one stream
 *                  -> group.order-mismatch or group.deadlock, exit 66
 *   unsynced_in    4 steps: the send buffer (one cudaMalloc buffer reused
 *                  every step) is uploaded with cudaMemcpyAsync on a
 *                  separate copy stream and the AllReduce on the
 *                  communication stream does not wait for it
 *                  -> stream.unsynced-input (from step 2: a buffer's first
 *                  use is a documented blind spot)
 *   unsynced_in_async  the same with a cudaMallocAsync/cudaFreeAsync block
 *                  per step (PyTorch's cudaMallocAsync backend)
 *                  -> stream.unsynced-input
 *   read_in_group  a host read (synchronous cudaMemcpy) of a receive
 *                  buffer between ncclGroupStart and ncclGroupEnd
 *                  -> group.sync-in-group
 *   after_destroy  the world communicator is destroyed in a cleanup helper,
 *                  then used for a final AllReduce
 *                  -> group.use-after-destroy
 *   ring_peer      a ring exchange that receives from the NEXT rank instead
 *                  of the previous one (4 MiB messages): rank r's send to
 *                  r+1 has no matching receive -> group.deadlock (exit 66)
 *                  (size.unmatched-p2p may name the pairs)
 *   rewrite_send   async all-to-all on the communication stream; the next
 *                  step's producer overwrites the send buffer on the compute
 *                  stream without waiting for the end event
 *                  -> stream.free-in-flight (rewritten while in flight)
 *   rewrite_copy   the same, but the next step's input is copied into the send
 *                  buffer with cudaMemcpyAsync from pinned memory (x.copy_(batch,
 *                  non_blocking=True)) -> stream.free-in-flight
 *   sync_in_group  cudaStreamSynchronize of the communication stream between
 *                  ncclGroupStart and ncclGroupEnd, then the host reads the
 *                  receive buffer -> group.sync-in-group
 *   zero_split     grouped all-to-all with unequal splits exchanged up front;
 *                  at step 1 rank 0 uses a stale split table and posts a
 *                  ZERO-count send to rank 3, which expects 256 floats
 *                  -> size.p2p-mismatch naming ranks 0 and 3 (and the hang
 *                  it causes ends with group.deadlock, exit 66)
 *   heartbeat      a background "heartbeat" thread issues a 1-element
 *                  AllReduce on the same communicator as the main thread,
 *                  without a lock, while the main thread has an open NCCL
 *                  group holding its AllReduce (made deterministic with a
 *                  host handshake: the heartbeat posts between the main
 *                  thread's ncclGroupStart and ncclGroupEnd; every rank does
 *                  the same, so the program itself does not hang)
 *                  -> group.concurrent-use
 */
#include "scenario_common.h"

#define NR 4
#define N 4096L

static const char *mode;
static int is(const char *m) { return strcmp(mode, m) == 0; }

/* heartbeat: a second thread using the main thread's communicator */
static ncclComm_t hb_comm;
static int hb_device;
static sc_tbarrier hb_bar; /* main thread <-> heartbeat handshake */
static void *heartbeat_thread(void *arg) {
  (void)arg;
  sc_rank = 99;
  SC_CUDA(cudaSetDevice(hb_device)); /* a new thread starts on device 0 */
  cudaStream_t hs;
  SC_CUDA(cudaStreamCreateWithFlags(&hs, cudaStreamNonBlocking));
  int *flag;
  SC_CUDA(cudaMalloc((void **)&flag, sizeof(int)));
  SC_CUDA(cudaMemsetAsync(flag, 0, sizeof(int), hs));
  for (int t = 0; t < 3; t++) {
    sc_tbarrier_wait(&hb_bar); /* the main thread's group is open */
    SC_NCCL(ncclAllReduce(flag, flag, 1, ncclInt32, ncclMax, hb_comm, hs));
    sc_tbarrier_wait(&hb_bar);
  }
  SC_CUDA(cudaStreamSynchronize(hs));
  SC_CUDA(cudaFree(flag));
  SC_CUDA(cudaStreamDestroy(hs));
  return NULL;
}

static int rank_main(int rank, int nranks, ncclUniqueId id, void *arg) {
  (void)arg;
  void *early = NULL;
  if (is("wrong_device")) {
    /* model = Model().cuda() before torch.cuda.set_device(local_rank) */
    SC_CUDA(cudaSetDevice(0));
    SC_CUDA(cudaMalloc(&early, N * sizeof(float)));
    SC_CUDA(cudaMemset(early, 0, N * sizeof(float)));
    SC_CUDA(cudaDeviceSynchronize()); /* cudaMemset is asynchronous on device memory */
    SC_CUDA(cudaSetDevice(rank));
  }
  ncclComm_t comm;
  SC_NCCL(ncclCommInitRank(&comm, nranks, id, rank));
  cudaStream_t s, up;
  SC_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  SC_CUDA(cudaStreamCreateWithFlags(&up, cudaStreamNonBlocking));
  float *a, *b;
  SC_CUDA(cudaMalloc((void **)&a, NR * N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&b, NR * N * sizeof(float)));
  /* zeroed on the communication stream: a plain cudaMemset would run on the
   * legacy default stream, which does not order the non-blocking stream s */
  SC_CUDA(cudaMemsetAsync(a, 0, NR * N * sizeof(float), s));
  long bad = 0;

  if (is("missing_recv")) {
    size_t c = N / 4;
    for (int t = 0; t < 5; t++) {
      SC_NCCL(ncclGroupStart());
      for (int p = 0; p < nranks; p++) {
        SC_NCCL(ncclSend(a + p * c, c, ncclFloat32, p, comm, s));
        if (!(t == 2 && rank == 1 && p == 3)) SC_NCCL(ncclRecv(b + p * c, c, ncclFloat32, p, comm, s));
      }
      SC_NCCL(ncclGroupEnd());
      SC_CUDA(cudaStreamSynchronize(s));
    }
  } else if (is("dtype_bytes")) {
    /* chunks of N bfloat16 (2N bytes) per peer */
    uint16_t *sa = (uint16_t *)a, *rb = (uint16_t *)b;
    SC_NCCL(ncclGroupStart());
    for (int p = 0; p < nranks; p++) {
      SC_NCCL(ncclSend(sa + p * N, N, ncclBfloat16, p, comm, s));
      if (rank == 2 && p == 0)
        SC_NCCL(ncclRecv(rb + p * N, N / 2, ncclFloat32, p, comm, s)); /* the bug */
      else
        SC_NCCL(ncclRecv(rb + p * N, N, ncclBfloat16, p, comm, s));
    }
    SC_NCCL(ncclGroupEnd());
    SC_CUDA(cudaStreamSynchronize(s));
  } else if (is("coll_dtype")) {
    for (int t = 0; t < 3; t++)
      SC_NCCL(ncclAllReduce(a, b, N, t == 1 && rank == 3 ? ncclInt32 : ncclFloat32, ncclSum, comm, s));
    SC_CUDA(cudaStreamSynchronize(s));
  } else if (is("bcast_root")) {
    SC_NCCL(ncclAllReduce(a, b, N, ncclFloat32, ncclSum, comm, s));
    SC_NCCL(ncclBroadcast(a, b, N, ncclFloat32, rank == 2 ? 1 : 0, comm, s));
    SC_NCCL(ncclAllReduce(a, b, N, ncclFloat32, ncclSum, comm, s));
    SC_CUDA(cudaStreamSynchronize(s));
  } else if (is("a2a_count")) {
    SC_NCCL(ncclAlltoAll(a, b, rank == 0 ? N / 2 : N, ncclFloat32, comm, s));
    SC_CUDA(cudaStreamSynchronize(s));
  } else if (is("wrong_device")) {
    SC_NCCL(ncclAllReduce(early, early, N, ncclFloat32, ncclSum, comm, s));
    SC_CUDA(cudaStreamSynchronize(s));
  } else if (is("order_groups")) {
    ncclComm_t dp;
    SC_NCCL(ncclCommSplit(comm, 0, rank, &dp, NULL));
    ncclComm_t first = rank == 0 ? dp : comm, second = rank == 0 ? comm : dp;
    for (int t = 0; t < 3; t++) {
      SC_NCCL(ncclAllReduce(a, b, N, ncclFloat32, ncclSum, first, s));
      SC_NCCL(ncclAllReduce(a, b, N, ncclFloat32, ncclSum, second, s));
    }
    SC_CUDA(cudaStreamSynchronize(s));
    SC_NCCL(ncclCommDestroy(dp));
  } else if (is("unsynced_in") || is("unsynced_in_async")) {
    /* 4 steps; the upload stream is slowed down so the race does harm */
    SC_CUDA((cudaError_t)a2asim_stream_set_delay(up, 20000));
    float *h;
    SC_CUDA(cudaMallocHost((void **)&h, N * sizeof(float)));
    for (int t = 0; t < 4; t++) {
      for (long i = 0; i < N; i++) h[i] = (float)(rank + 1 + t);
      float *in = a;
      if (is("unsynced_in_async")) {
        /* stream-ordered allocator: a fresh (usually recycled) block per step */
        SC_CUDA(cudaMallocAsync((void **)&in, N * sizeof(float), s));
        SC_CUDA(cudaStreamSynchronize(s));
      }
      SC_CUDA(cudaMemcpyAsync(in, h, N * sizeof(float), cudaMemcpyHostToDevice, up));
      SC_NCCL(ncclAllReduce(in, b, N, ncclFloat32, ncclSum, comm, s)); /* the bug: no wait on up */
      SC_CUDA(cudaStreamSynchronize(s));
      SC_CUDA(cudaStreamSynchronize(up));
      float got;
      SC_CUDA(cudaMemcpy(&got, b, sizeof got, cudaMemcpyDeviceToHost));
      if (got != (float)(10 + 4 * t)) bad++;
      if (is("unsynced_in_async")) {
        SC_CUDA(cudaFreeAsync(in, s));
        SC_CUDA(cudaStreamSynchronize(s));
      }
    }
    SC_CUDA(cudaFreeHost(h));
  } else if (is("read_in_group")) {
    float head[4];
    int peer = rank ^ 1;
    SC_NCCL(ncclGroupStart());
    SC_NCCL(ncclSend(a, N, ncclFloat32, peer, comm, s));
    SC_NCCL(ncclRecv(b, N, ncclFloat32, peer, comm, s));
    SC_CUDA(cudaMemcpy(head, b, sizeof head, cudaMemcpyDeviceToHost)); /* the bug */
    SC_NCCL(ncclGroupEnd());
    SC_CUDA(cudaStreamSynchronize(s));
  } else if (is("after_destroy")) {
    SC_NCCL(ncclAllReduce(a, b, N, ncclFloat32, ncclSum, comm, s));
    SC_CUDA(cudaStreamSynchronize(s));
    SC_NCCL(ncclCommDestroy(comm)); /* "cleanup()" */
    ncclResult_t r = ncclAllReduce(a, b, N, ncclFloat32, ncclSum, comm, s);
    fprintf(stderr, "rank %d: AllReduce after destroy -> %d\n", rank, (int)r);
    comm = NULL;
  } else if (is("ring_peer")) {
    size_t big = (size_t)4 << 20; /* 4 MiB */
    void *sb, *rb;
    SC_CUDA(cudaMalloc(&sb, big));
    SC_CUDA(cudaMalloc(&rb, big));
    int next = (rank + 1) % nranks;
    SC_NCCL(ncclGroupStart());
    SC_NCCL(ncclSend(sb, big, ncclUint8, next, comm, s));
    SC_NCCL(ncclRecv(rb, big, ncclUint8, next, comm, s)); /* the bug: should be prev */
    SC_NCCL(ncclGroupEnd());
    SC_CUDA(cudaStreamSynchronize(s));
    SC_CUDA(cudaFree(sb));
    SC_CUDA(cudaFree(rb));
  } else if (is("rewrite_send") || is("rewrite_copy")) {
    SC_CUDA((cudaError_t)a2asim_stream_set_delay(s, 5000));
    cudaEvent_t ready, done;
    SC_CUDA(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
    SC_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    float *batch;
    SC_CUDA(cudaMallocHost((void **)&batch, N * sizeof(float)));
    for (long i = 0; i < N; i++) batch[i] = (float)rank;
    for (int t = 0; t < 3; t++) {
      if (is("rewrite_copy")) /* "compute" stream = up */
        SC_CUDA(cudaMemcpyAsync(a, batch, N * sizeof(float), cudaMemcpyHostToDevice, up));
      else
        sc_fill(a, N, (float)(rank * 100 + t), 0.0f, up);
      SC_CUDA(cudaEventRecord(ready, up));
      SC_CUDA(cudaStreamWaitEvent(s, ready, 0));
      SC_NCCL(ncclAlltoAll(a, b, N / nranks, ncclFloat32, comm, s));
      SC_CUDA(cudaEventRecord(done, s));
      /* the bug: no cudaStreamWaitEvent(up, done) before the next fill */
    }
    SC_CUDA(cudaStreamSynchronize(s));
    SC_CUDA(cudaStreamSynchronize(up));
    SC_CUDA(cudaEventDestroy(ready));
    SC_CUDA(cudaEventDestroy(done));
    SC_CUDA(cudaFreeHost(batch));
  } else if (is("sync_in_group")) {
    int peer = rank ^ 1;
    sc_fill(a, N, (float)rank, 0.0f, s);
    float head = -1;
    SC_NCCL(ncclGroupStart());
    SC_NCCL(ncclSend(a, N, ncclFloat32, peer, comm, s));
    SC_NCCL(ncclRecv(b, N, ncclFloat32, peer, comm, s));
    SC_CUDA(cudaStreamSynchronize(s)); /* the bug: the group is not launched yet */
    SC_CUDA(cudaMemcpy(&head, b, sizeof head, cudaMemcpyDeviceToHost));
    SC_NCCL(ncclGroupEnd());
    SC_CUDA(cudaStreamSynchronize(s));
    if (head != (float)peer) fprintf(stderr, "rank %d: read %g before the group ran\n", rank, head);
  } else if (is("zero_split")) {
    for (int t = 0; t < 3; t++) {
      SC_NCCL(ncclGroupStart());
      for (int p = 0; p < nranks; p++) {
        size_t sc = (size_t)((rank + p + t) % 3) * 256, rc = (size_t)((p + rank + t) % 3) * 256;
        if (t == 1 && rank == 0 && p == 3) sc = 0; /* the bug: stale split */
        SC_NCCL(ncclSend(a + p * 512, sc, ncclFloat32, p, comm, s));
        SC_NCCL(ncclRecv(b + p * 512, rc, ncclFloat32, p, comm, s));
      }
      SC_NCCL(ncclGroupEnd());
      SC_CUDA(cudaStreamSynchronize(s));
    }
  } else if (is("heartbeat")) {
    hb_comm = comm;
    SC_CUDA(cudaGetDevice(&hb_device));
    sc_tbarrier_init(&hb_bar, 2);
    pthread_t th;
    pthread_create(&th, NULL, heartbeat_thread, NULL);
    for (int t = 0; t < 3; t++) {
      SC_NCCL(ncclGroupStart());
      SC_NCCL(ncclAllReduce(a, b, N, ncclFloat32, ncclSum, comm, s));
      sc_tbarrier_wait(&hb_bar); /* let the heartbeat post now */
      sc_tbarrier_wait(&hb_bar); /* ... and return */
      SC_NCCL(ncclGroupEnd());
      SC_CUDA(cudaStreamSynchronize(s));
    }
    pthread_join(th, NULL);
  } else {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 1;
  }
  sc_sh->result[rank] = bad;
  SC_CUDA(cudaFree(a));
  SC_CUDA(cudaFree(b));
  if (early) SC_CUDA(cudaFree(early));
  SC_CUDA(cudaStreamDestroy(s));
  SC_CUDA(cudaStreamDestroy(up));
  if (comm) SC_NCCL(ncclCommDestroy(comm));
  return bad ? SC_DATA_WRONG : 0;
}

int main(int argc, char **argv) {
  mode = argc > 1 ? argv[1] : "missing_recv";
  return sc_fork_ranks(NR, rank_main, NULL);
}
