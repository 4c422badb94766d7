/* collector.h - the unit tests' stand-in for the runtime: a report sink that
 * records findings in an array, a programmable fake host (clock, pointer
 * attributes, kernels, timing events, rank), and event helpers.
 *
 * Typical test:
 *   collector_reset();                       // defaults, fresh registries,
 *                                            // every analyzer re-initialized
 *   collector_options()->small_msg = 4096;   // then collector_reinit()
 *   a2a_event ev = ev_make(A2A_EV_COLL);  ... fill ...
 *   ev_dispatch(&ev, 0);                     // PRE, then POST with result 0
 *   ck_assert_int_eq(collector_count("layout.overlap"), 1);
 */
#ifndef A2A_TEST_COLLECTOR_H
#define A2A_TEST_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "a2a_core.h"

typedef struct collected {
  char check[64];
  a2a_severity severity;
  const void *site;
  char comm[48];
  char message[1024];
  char details[4096];
  int stack_n;
} collected;

/* Reset findings, options (defaults), registries, fake host; init analyzers. */
void collector_reset(void);
/* Mutable options (a2a_opt points here). Call collector_reinit() after
 * changing options that analyzers read at init. */
a2a_options *collector_options(void);
void collector_reinit(void);

/* Findings. */
size_t collector_total(void);
size_t collector_count(const char *check);            /* by exact name */
/* Deduplicate as the runtime does (a2a_report_repeat: a finding already
 * collected at its (check, site) is only counted); off after each reset. */
void collector_dedup(bool on);
size_t collector_occurrences(const char *check);      /* entries + repeats */
size_t collector_count_prefix(const char *prefix);    /* e.g. "layout." */
size_t collector_count_severity(a2a_severity sev);
const collected *collector_get(size_t i);
const collected *collector_find(const char *check);   /* first, or NULL */
/* Every finding's check, message and details, in order, into buf (cap
 * bytes, truncated): for comparing two runs' findings. */
void collector_text(char *buf, size_t cap);
/* Print every finding to stderr (debugging a failing test). */
void collector_dump(void);
/* Disable a check for a2a_check_on (exact name or category). */
void collector_disable_check(const char *name);

/* Fake host. */
void collector_set_time_ns(uint64_t ns);    /* now_ns returns this */
void collector_advance_ns(uint64_t ns);
/* Pointer attributes for [base, base+size). type: 0 host, 1 pinned, 2 device,
 * 3 managed. Unknown pointers: pointer_info fails (returns -1). */
void collector_add_pointer(uintptr_t base, size_t size, int type, int device);
/* The device of a stream handle (the host's stream_device; unknown
 * handles: -1), and how often it was asked since collector_reset. */
void collector_add_stream(const void *stream, int device);
size_t collector_stream_asks(void);
/* What the host's comm_info answers for a communicator (NCCL's size, rank
 * and device once it is ready; unknown handles: it fails), and how often it
 * was asked since collector_reset. */
void collector_add_comm_info(const void *comm, int nranks, int rank, int device);
size_t collector_comm_info_asks(void);
/* A kernel: name and parameters (offsets and sizes). */
void collector_add_kernel(const void *func, const char *name, int nparams,
                          const size_t *offsets, const size_t *sizes);
/* Timing events created through the host: handles are small integers cast
 * to pointers (1, 2, ...). They start pending; complete them by hand. */
size_t collector_event_count(void);
void *collector_event_at(size_t i);           /* i-th created event */
void *collector_event_stream(void *ev);       /* stream it was last recorded on */
void collector_event_complete(void *ev, uint64_t at_ns);
void collector_complete_all_events(uint64_t at_ns);
void collector_set_rank(int rank);
/* The reason of the last fail_now call, or NULL. */
const char *collector_fail_reason(void);

/* Events. */
/* Makes the fake runtime say stream is capturing, in capture id (0: it
 * is not). */
void collector_set_capture(const void *stream, uint64_t id);
a2a_event ev_make(a2a_kind kind);                 /* thread 1, device 0 */
void ev_dispatch(a2a_event *ev, int result);      /* PRE then POST */
void ev_pre(a2a_event *ev);
/* A group call (GROUP_START / GROUP_END) as the shim's group wrappers
 * make it: a nested call the thread may keep (a2a_group_keepable) is not
 * dispatched when kept (a2a_group_keep: its activity stored with ev->seq);
 * any other is dispatched, both phases with the row a2a_group_row chose
 * from the thread's depth (kept here per ev->thread, as the shim keeps it
 * per thread; zeroed by collector_reinit and collector_reset), the kept
 * level folded after its PRE (a2a_group_kept_folded), the result counted
 * (a2a_group_count) before the POST. u.group.depth: the depth before the
 * call, kept or not. A thread's group calls should all go through this or
 * all through ev_dispatch (a2a_group_nested). */
void ev_dispatch_group(a2a_event *ev, int result);
/* How many calls ev_dispatch_group kept since collector_reinit. */
unsigned ev_group_kept(void);
/* The same without keeping any call (every call dispatched on its row). */
void ev_dispatch_group_rows(a2a_event *ev, int result);
/* Zero those depths: what the shim's fork handler does for the forking
 * thread (call it with a2a_core_after_fork_child). */
void ev_group_forget(void);
void ev_post(a2a_event *ev, int result);

/* Repeated launches (a2a_note_launch, a2a_analyzer.launch_quiet): the
 * analyzers `a` (n of them, at most 8) and after them one that wants every
 * call's activity, so that the hot dispatch keeps the threads' marks
 * (collector_reinit follows; a2a_core_set_analyzers_for_tests with the
 * local analyzers and collector_reset restore the usual list). */
void collector_use_with_activity(const a2a_analyzer *const *a, size_t n);
/* A launch of func with args on (stream, per_thread) by thread 1, both
 * phases through the hot dispatch (a2a_dispatch_hot); returns whether the
 * thread's repeated-launch mark is set after its PRE (every quiet handler
 * left it: the same launch next would skip them). */
bool collector_hot_launch(void *stream, int per_thread, const void *func, void *args);

#endif
