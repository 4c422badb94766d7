/* stream_hb.h - limits and test hooks of the stream happens-before analyzer
 * (analyzers/stream_hb.c). The analyzer itself is reached only through the
 * analyzer table (a2a_analyzer_stream_hb); this header exists so the unit
 * test can name the capacities it probes. */
#ifndef A2A_STREAM_HB_H
#define A2A_STREAM_HB_H

#include <stdbool.h>
#include <stddef.h>

/* Timelines (streams used while ranges are tracked + the one host
 * timeline) whose clocks are tracked.
 * Vector clocks are dense arrays of this many 32-bit entries. Past the limit
 * the analyzer disables itself (a lost timeline would lose edges, and lost
 * edges mean false reports). */
#define STREAM_HB_MAX_TL 128
/* Live CUDA events with a captured clock: an open-addressed table of
 * STREAM_HB_EVENT_SLOTS at first, doubled at 3/4 load up to
 * STREAM_HB_EVENT_SLOTS_MAX (about 530 bytes a slot: 34 MiB at the most,
 * 49,152 live events); past that the analyzer disables itself, for the
 * same reason. */
#define STREAM_HB_EVENT_SLOTS 4096
#define STREAM_HB_EVENT_SLOTS_MAX 65536
/* Buffer ranges touched by communication operations. When full, the least
 * recently used range is forgotten (which can only hide a race). */
#define STREAM_HB_MAX_RANGES 1024
/* Accesses remembered per range (one per timeline and access class). */
#define STREAM_HB_MAX_ACC 8
/* Pending (grouped) communication accesses per host thread, after merging
 * adjacent per-peer chunks (more are dropped). Communication calls of
 * threads with an index past STREAM_HB_MAX_THREADS are not tracked (whether
 * they are inside a group is unknown). */
#define STREAM_HB_MAX_PENDING 128
/* Destinations of the most recent cudaMemcpy*(Async)/cudaMemset*(Async)
 * calls that do not make the host wait, remembered even while no range is
 * tracked (a fixed ring: older ones are forgotten, which can only hide a
 * race). A communication operation that first touches a range consults
 * them: the producer of a fresh buffer is then known. */
#define STREAM_HB_COPY_RING 64
#define STREAM_HB_MAX_THREADS 256

/* Number of buffer ranges currently tracked (tests, summaries). */
size_t stream_hb_range_count(void);
/* CUDA events and host functions' tokens with a slot (tests). */
size_t stream_hb_event_count(void);
/* Number of live entries in the recent-copy ring (tests). */
size_t stream_hb_copy_ring_count(void);
/* Whether copies go the locked way, not deferred: a capture is open or the
 * analyzer disabled itself (tests). */
bool stream_hb_copies_locked(void);
/* Whether the calling thread keeps a filtered-out launch memo (see
 * "Filtered-out repeats" in stream_hb.c; tests). */
bool stream_hb_launch_skip_kept(void);
/* Whether the calling thread's repeat memo keeps the callsite of a repeat
 * it applied, which its next repeats there are counted on (see t_lmemo.site
 * in stream_hb.c; tests). */
bool stream_hb_launch_site_kept(void);

#endif
