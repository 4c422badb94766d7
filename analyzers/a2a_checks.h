/* a2a_checks.h - the checks table (a2a_checks.inc) as C: ids, names,
 * categories, default severities and owners, plus the process-wide enabled
 * set that A2ACHECK_CHECKS selects.
 *
 * Emitters name checks by id (a2a_finding.check = A2A_CK_LAYOUT_OVERLAP), so
 * a misspelled check is a compile error and every emitted name is in the
 * table. Names cross process boundaries only as text (the cross-rank
 * channel's verdicts) and are mapped back with a2a_check_by_name, which
 * refuses names that are not in the table.
 *
 * Pure C, no state but the enabled set; unit tests include it directly.
 */
#ifndef A2A_CHECKS_H
#define A2A_CHECKS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "a2a_visibility.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Who emits a check (the owners column). An analyzer declares its owner bit
 * (a2a_analyzer.owner); one whose checks are all disabled is not called. */
typedef enum a2a_check_owner {
  A2A_OWN_CORE = 1u << 0,        /* analyzers/core_*.c */
  A2A_OWN_RUNTIME = 1u << 1,     /* shim/rt_*.c */
  A2A_OWN_GROUP_LOCAL = 1u << 2,
  A2A_OWN_LAYOUT = 1u << 3,
  A2A_OWN_PERF_ENV = 1u << 4,
  A2A_OWN_STREAM_HB = 1u << 5,
  A2A_OWN_PERF_COMM = 1u << 6,
  A2A_OWN_PERF_STREAM = 1u << 7,
  A2A_OWN_XRANK = 1u << 8,
} a2a_check_owner;

typedef enum a2a_check_id {
#define A2A_CHECK(id, name, sev, owners, summary) A2A_CK_##id,
#include "a2a_checks.inc"
#undef A2A_CHECK
  A2A_CK__COUNT,
  A2A_CK_NONE = -1
} a2a_check_id;

_Static_assert(A2A_CK__COUNT <= 128, "the enabled set is two 64-bit words");

typedef struct a2a_check_info {
  const char *name;           /* "layout.overlap"; the category is the part
                                 before the dot (a2a_check_category_len) */
  int severity;               /* a2a_severity (default) */
  unsigned owners;            /* A2A_OWN_* */
  const char *summary;
} a2a_check_info;

/* The table, indexed by a2a_check_id. */
extern A2A_HIDDEN const a2a_check_info a2a_check_table[A2A_CK__COUNT];

typedef struct a2a_check_category_info {
  const char *name;           /* "layout" */
  const char *title;          /* "buffers at the NCCL boundary (pitfall 1)" */
} a2a_check_category_info;
extern A2A_HIDDEN const a2a_check_category_info a2a_check_categories[];
extern A2A_HIDDEN const size_t a2a_check_ncategories;

static inline const char *a2a_check_name(a2a_check_id id) {
  return (unsigned)id < (unsigned)A2A_CK__COUNT ? a2a_check_table[id].name : "a2acheck.unknown";
}
/* Length of the category prefix of a check's name ("layout" of
 * "layout.overlap"). */
static inline size_t a2a_check_category_len(a2a_check_id id) {
  const char *n = a2a_check_name(id), *d = n;
  while (*d && *d != '.') d++;
  return (size_t)(d - n);
}
/* The id of a full check name, A2A_CK_NONE if it is not in the table. */
a2a_check_id a2a_check_by_name(const char *name);
/* Same for the first n characters of s. */
a2a_check_id a2a_check_by_name_n(const char *s, size_t n);
/* Whether s[0..n) is a category of the table. */
bool a2a_check_is_category(const char *s, size_t n);
/* The deadlock verdicts (group.deadlock, group.hang): A2ACHECK_FAIL_ON's
 * "deadlock" level. */
static inline bool a2a_check_is_deadlock(a2a_check_id id) {
  return id == A2A_CK_GROUP_DEADLOCK || id == A2A_CK_GROUP_HANG;
}
/* The table row closest to s[0..n) by edit distance (for "did you mean"),
 * or A2A_CK_NONE when nothing is close. */
a2a_check_id a2a_check_suggest(const char *s, size_t n);

/* ---- the enabled set ---------------------------------------------- */

/* A bit set over check ids. */
typedef struct a2a_check_set { uint64_t w[2]; } a2a_check_set;

static inline bool a2a_check_set_has(const a2a_check_set *s, a2a_check_id id) {
  return (unsigned)id < (unsigned)A2A_CK__COUNT && (s->w[(unsigned)id >> 6] >> ((unsigned)id & 63)) & 1;
}
static inline void a2a_check_set_put(a2a_check_set *s, a2a_check_id id, bool on) {
  if ((unsigned)id >= (unsigned)A2A_CK__COUNT) return;
  uint64_t bit = 1ull << ((unsigned)id & 63);
  if (on) s->w[(unsigned)id >> 6] |= bit;
  else s->w[(unsigned)id >> 6] &= ~bit;
}
/* Every check of the table. */
a2a_check_set a2a_check_set_all(void);

/* The process-wide enabled set: every check until a2a_checks_set_enabled
 * (the runtime applies A2ACHECK_CHECKS at init; unit tests call it to
 * select). Read with relaxed atomics: cheap enough for hot paths. */
extern A2A_HIDDEN _Atomic uint64_t a2a_checks_enabled_w[2];
void a2a_checks_set_enabled(const a2a_check_set *s);

static inline bool a2a_check_on(a2a_check_id id) {
  return (unsigned)id < (unsigned)A2A_CK__COUNT &&
         (atomic_load_explicit(&a2a_checks_enabled_w[(unsigned)id >> 6], memory_order_relaxed) >>
          ((unsigned)id & 63)) & 1;
}
/* Whether any check with one of these owner bits is enabled. */
bool a2a_checks_any_owned(unsigned owners);

#ifdef __cplusplus
}
#endif
#endif /* A2A_CHECKS_H */
