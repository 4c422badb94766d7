/* perf_internal.h - what the perf analyzers share (not for other areas):
 *   perf_comm.c   timing, perf.small-messages, perf.low-bandwidth,
 *                 perf.no-overlap, perf.stream-priority, perf.summary
 *   perf_stream.c stream priorities, perf.sync-heavy, perf.stream-churn
 * Grouped by the file that defines each function. */
#ifndef A2A_PERF_INTERNAL_H
#define A2A_PERF_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "a2a_core.h"

/* A stream handle as the runtime understands it: NULL with per_thread is
 * cudaStreamPerThread (0x2), cudaStreamLegacy (0x1) is the legacy NULL. The
 * result can be passed to the host's event_record. */
static inline void *a2a_perf_skey(void *stream, int per_thread) {
  if (stream == (void *)1) return NULL;
  if (stream == NULL) return per_thread ? (void *)2 : NULL;
  return stream;
}

/* A hot path's quick test that stream's key is key, without computing
 * it: a handle other than NULL and cudaStreamLegacy is its own key. False
 * also for those two (the caller then takes its slow path, which computes
 * the key), so true means a2a_perf_skey(stream, any per_thread) == key. */
static inline bool a2a_perf_skey_is(const void *stream, const void *key) {
  return (uintptr_t)stream > 1 && stream == key;
}

/* Option values as the checks use them: counts at least 1, sizes >= 0
 * (the parser accepts any long; a negative count must not wrap around). */
static inline uint64_t a2a_perf_min_ops(void) {
  return a2a_opt->perf_min_ops < 1 ? 1 : (uint64_t)a2a_opt->perf_min_ops;
}
static inline uint64_t a2a_perf_small_msg(void) {
  return a2a_opt->small_msg < 0 ? 0 : (uint64_t)a2a_opt->small_msg;
}
static inline uint64_t a2a_perf_small_min_ops(void) {
  return a2a_opt->small_msg_min_ops < 1 ? 1 : (uint64_t)a2a_opt->small_msg_min_ops;
}

/* The share of time a saving must reach to be material: a warning at or
 * above it, info below (A2ACHECK_PERF_MIN_GAIN, clamped to [0, 1]). */
static inline double a2a_perf_min_gain(void) {
  double g = a2a_opt->perf_min_gain;
  return g != g || g < 0 ? 0 : g > 1 ? 1 : g;
}

/* perf_comm.c: logical communication operations (a lone collective or p2p
 * call, or one outermost ncclGroupEnd) seen so far, process-wide and by the
 * calling thread. */
uint64_t a2a_perf_ops_total(void);
uint64_t a2a_perf_ops_thread(void);

/* perf_stream.c: the priority the stream was created with (0 for streams
 * created without a priority, the NULL/per-thread streams and unknown
 * handles). Lower numbers are higher priorities, as in CUDA. */
int a2a_perf_stream_priority(const void *skey);

#endif /* A2A_PERF_INTERNAL_H */
