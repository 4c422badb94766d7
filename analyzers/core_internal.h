/* core_internal.h - functions shared between the core's files (dispatch,
 * registries); not for analyzers. Grouped by the file that defines them. */
#ifndef A2A_CORE_INTERNAL_H
#define A2A_CORE_INTERNAL_H

#include "a2a_core.h"

/* core_registry.c */
void a2a_registry_comm_init(const a2a_event *ev);
void a2a_registry_comm_end(const a2a_event *ev);
/* ncclCommGetAsyncError's POST: the application saw the communicator
 * ready (ncclSuccess both ways). A record created without its size and
 * rank (a non-blocking split or shrink: NCCL cannot be asked before the
 * child is ready) gets them now, from the host's comm_info, before the
 * analyzers of this POST and before the communicator's first operation. */
void a2a_registry_comm_ready(const a2a_event *ev);
void a2a_registry_alloc(const a2a_event *ev);
void a2a_registry_free(const a2a_event *ev);
void a2a_registry_after_fork_child(void);
/* Forget every communicator and allocation (unit tests only). */
void a2a_registry_reset_for_tests(void);

/* core_dispatch.c */
/* Re-run init of every analyzer and clear disabled flags (unit tests only). */
void a2a_core_reset_for_tests(const a2a_options *opt, const a2a_host *host);
/* The analyzers reset_for_tests initializes (default: the local ones). */
void a2a_core_set_analyzers_for_tests(const a2a_analyzer *const *list, size_t n);

/* core_dispatch.c: the fallback host's InfiniBand probe, which the
 * runtime's host reuses. */
bool a2a_infiniband_present(void);

/* core_kparams.c */
/* Forget every cached layout (init, unit tests). */
void a2a_kparams_reset(void);
void a2a_site_stacks_reset(void);

#endif
