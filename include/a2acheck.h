/* a2acheck.h - the small public interface of liba2acheck.so.
 *
 * a2acheck is used by preloading it (LD_PRELOAD=.../liba2acheck.so); an
 * application needs nothing from this header to be checked. It exists for
 * programs and test harnesses that want to know, from inside the process,
 * which a2acheck they run under and whether it found something. Declare the
 * functions weak (as below) so that the program still links and runs when
 * a2acheck is not preloaded: the function addresses are then NULL.
 */
#ifndef A2ACHECK_H
#define A2ACHECK_H

#define A2ACHECK_VERSION_MAJOR 0
#define A2ACHECK_VERSION_MINOR 1
#define A2ACHECK_VERSION_PATCH 0
#define A2ACHECK_VERSION_STRING "0.1.0"
/* 100 * (100 * major + minor) + patch, like NCCL_VERSION_CODE. */
#define A2ACHECK_VERSION_CODE \
  ((A2ACHECK_VERSION_MAJOR * 100 + A2ACHECK_VERSION_MINOR) * 100 + A2ACHECK_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/* A2ACHECK_VERSION_CODE of the preloaded library. */
int a2acheck_version(void) __attribute__((weak));

/* Number of distinct findings (after deduplication) of at least min_severity
 * (0 info, 1 warning, 2 error) reported so far in this process. 0 when
 * a2acheck is disabled or has not seen an NCCL/CUDA call yet. */
unsigned long a2acheck_finding_count(int min_severity) __attribute__((weak));

#ifdef __cplusplus
}
#endif
#endif /* A2ACHECK_H */
