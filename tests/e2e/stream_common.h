/* stream_common.h - what the stream end-to-end programs (tests/e2e/
 * stream_*.c, run by tests/e2e/stream.cmake) share beyond the harness of
 * e2e_common.h: their all-to-all and the data convention they verify.
 * Each program returns E2E_DATA_WRONG from a rank whose data was wrong and
 * prints e2e_verdict's line. */
#ifndef STREAM_E2E_COMMON_H
#define STREAM_E2E_COMMON_H

#include "e2e_common.h"

/* The value chunk element 0 holds when rank `from` sends to rank `to` at
 * `step` (element i holds base + i): every (step, from, to) differs, so a
 * stale or misrouted chunk is seen. */
static inline float se_base(int step, int from, int to) {
  return (float)(step * 100000 + from * 1000 + to * 10);
}

/* A grouped all-to-all of point-to-point calls on stream s: chunk p of
 * send (n floats at send + p*n) goes to rank p, chunk p of recv comes from
 * rank p (every rank also sends to itself). */
static inline void se_alltoall(const float *send, float *recv, size_t n, int nranks,
                               ncclComm_t comm, cudaStream_t s) {
  E2E_NCCL(ncclGroupStart());
  for (int p = 0; p < nranks; p++) {
    E2E_NCCL(ncclSend(send + (size_t)p * n, n, ncclFloat, p, comm, s));
    E2E_NCCL(ncclRecv(recv + (size_t)p * n, n, ncclFloat, p, comm, s));
  }
  E2E_NCCL(ncclGroupEnd());
}

/* Fills chunk p of send on stream s with what rank `rank` sends to rank p
 * at `step` (se_base). */
static inline void se_fill_chunks(cudaStream_t s, float *send, int n, int nranks, int step,
                                  int rank) {
  for (int p = 0; p < nranks; p++) e2e_fill(s, send + (size_t)p * n, n, se_base(step, rank, p));
}

/* The number of chunks of `host` (the receive buffer copied to the host:
 * chunk p, n floats, came from rank p) that are not what rank p sent to
 * `rank` at `step`. */
static inline int se_wrong_chunks(const float *host, int n, int nranks, int step, int rank) {
  int wrong = 0;
  for (int p = 0; p < nranks; p++)
    for (int i = 0; i < n; i++)
      if (host[(size_t)p * n + i] != se_base(step, p, rank) + (float)i) {
        wrong++;
        break;
      }
  return wrong;
}

#endif
