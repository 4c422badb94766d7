/* core_checks.c - the checks table (a2a_checks.inc) as data, name lookups,
 * "did you mean" suggestions, and the process-wide enabled set (see
 * a2a_checks.h). Pure: no allocation, no locks; the set is two relaxed
 * atomic words written once at init. */
#include <string.h>

#include "a2a_checks.h"
#include "a2a_core.h"

#define OWN(x) A2A_OWN_##x
#define INFO A2A_SEV_INFO
#define WARNING A2A_SEV_WARNING
#define ERROR A2A_SEV_ERROR

const a2a_check_info a2a_check_table[A2A_CK__COUNT] = {
#define A2A_CHECK(id, name_, sev, owners_, summary_) \
  [A2A_CK_##id] = {.name = name_, .severity = sev, .owners = owners_, .summary = summary_},
#include "a2a_checks.inc"
#undef A2A_CHECK
};

const a2a_check_category_info a2a_check_categories[] = {
#define A2A_CHECK(id, name, sev, owners, summary)
#define A2A_CHECK_CATEGORY(name_, title_) {.name = #name_, .title = title_},
#include "a2a_checks.inc"
#undef A2A_CHECK
};
const size_t a2a_check_ncategories = sizeof a2a_check_categories / sizeof a2a_check_categories[0];

#undef OWN
#undef INFO
#undef WARNING
#undef ERROR

a2a_check_id a2a_check_by_name_n(const char *s, size_t n) {
  if (!s) return A2A_CK_NONE;
  for (int i = 0; i < A2A_CK__COUNT; i++) {
    const char *nm = a2a_check_table[i].name;
    if (strlen(nm) == n && memcmp(nm, s, n) == 0) return (a2a_check_id)i;
  }
  return A2A_CK_NONE;
}

a2a_check_id a2a_check_by_name(const char *name) {
  return name ? a2a_check_by_name_n(name, strlen(name)) : A2A_CK_NONE;
}

bool a2a_check_is_category(const char *s, size_t n) {
  for (size_t i = 0; i < a2a_check_ncategories; i++)
    if (strlen(a2a_check_categories[i].name) == n && memcmp(a2a_check_categories[i].name, s, n) == 0)
      return true;
  return false;
}

/* Levenshtein distance of a[0..an) and b, bounded inputs (names < 64). */
static size_t edit_distance(const char *a, size_t an, const char *b) {
  size_t bn = strlen(b);
  if (an > 63 || bn > 63) return 64;
  size_t row[64];
  for (size_t j = 0; j <= bn; j++) row[j] = j;
  for (size_t i = 1; i <= an; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= bn; j++) {
      size_t up = row[j];
      size_t best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[bn];
}

a2a_check_id a2a_check_suggest(const char *s, size_t n) {
  a2a_check_id best = A2A_CK_NONE;
  size_t bestd = 4; /* a suggestion is at most 3 edits away */
  for (int i = 0; i < A2A_CK__COUNT; i++) {
    size_t d = edit_distance(s, n, a2a_check_table[i].name);
    if (d < bestd) {
      bestd = d;
      best = (a2a_check_id)i;
    }
  }
  return best;
}

a2a_check_set a2a_check_set_all(void) {
  a2a_check_set s = {{0, 0}};
  for (int i = 0; i < A2A_CK__COUNT; i++) a2a_check_set_put(&s, (a2a_check_id)i, true);
  return s;
}

/* Everything enabled until the runtime applies A2ACHECK_CHECKS. The
 * initializer covers the 128 possible ids; bits past A2A_CK__COUNT are
 * never read (a2a_check_on bounds-checks the id). */
_Atomic uint64_t a2a_checks_enabled_w[2] = {~0ull, ~0ull};

/* a2a_core.h: advanced here and by the registries (core_registry.c);
 * defined here, the one core file every program that links the checks
 * has (tool/dump_checks links this one alone). */
_Atomic uint64_t a2a_core_epoch = 1;

void a2a_checks_set_enabled(const a2a_check_set *s) {
  atomic_store_explicit(&a2a_checks_enabled_w[0], s->w[0], memory_order_relaxed);
  atomic_store_explicit(&a2a_checks_enabled_w[1], s->w[1], memory_order_relaxed);
  a2a_core_epoch_advance(); /* after both words (a2a_core_epoch) */
}

bool a2a_checks_any_owned(unsigned owners) {
  for (int i = 0; i < A2A_CK__COUNT; i++)
    if ((a2a_check_table[i].owners & owners) && a2a_check_on((a2a_check_id)i)) return true;
  return false;
}
