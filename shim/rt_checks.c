/* rt_checks.c - A2ACHECK_CHECKS (which checks are enabled) and
 * A2ACHECK_FAIL_ON (which findings change the exit status).
 *
 * Pure: the unit test tests/unit/test_log_checks.c compiles this file.
 *
 * A2ACHECK_CHECKS is a comma list of entries, applied left to right, later
 * entries winning:
 *   all            every check
 *   perf           a category: every check named "perf.*"
 *   layout.overlap one check by its full name
 * prefixed with '-' (disable) or '+' / nothing (enable). A list that starts
 * with an enabling entry starts from "nothing enabled" ("layout,stream" means
 * only those two categories); a list that starts with '-' starts from
 * "everything enabled" ("-perf" means all but perf).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "rt_internal.h"

/* The categories of docs/checks.md. */
static const char *const categories[] = {"layout", "group", "size", "stream", "perf",
                                         "a2acheck"};

static bool known_category(const char *s, size_t n) {
  for (size_t i = 0; i < sizeof categories / sizeof categories[0]; i++)
    if (strlen(categories[i]) == n && strncmp(categories[i], s, n) == 0) return true;
  return false;
}

static bool valid_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.';
}

static void warn_line(a2a_rt_warn_fn warn, void *arg, int *nwarn, const char *fmt,
                      const char *entry, size_t n) {
  char line[256];
  snprintf(line, sizeof line, fmt, (int)n, entry);
  (*nwarn)++;
  if (warn) warn(arg, line);
}

int a2a_rt_checks_parse(a2a_rt_rules *rs, const char *spec, a2a_rt_warn_fn warn,
                        void *warn_arg) {
  int nwarn = 0;
  memset(rs, 0, sizeof *rs);
  rs->default_on = true;
  if (!spec || !*spec) return 0;
  bool first = true;
  for (const char *p = spec; *p;) {
    size_t n = strcspn(p, ",");
    const char *e = p;
    size_t en = n;
    p += n;
    if (*p == ',') p++;
    /* Trim blanks so "all, -perf" works. */
    while (en && (*e == ' ' || *e == '\t')) e++, en--;
    while (en && (e[en - 1] == ' ' || e[en - 1] == '\t')) en--;
    if (en == 0) continue;
    bool enable = true;
    if (*e == '-' || *e == '+') {
      enable = *e == '+';
      e++, en--;
    }
    bool ok = en > 0 && en < sizeof rs->r[0].pat;
    for (size_t i = 0; ok && i < en; i++) ok = valid_name_char(e[i]);
    if (!ok) {
      warn_line(warn, warn_arg, &nwarn,
                "A2ACHECK_CHECKS: ignoring malformed entry \"%.*s\"", e, en);
      continue;
    }
    unsigned char kind;
    const char *dot = memchr(e, '.', en);
    if (en == 3 && strncmp(e, "all", 3) == 0) {
      kind = 0;
    } else if (!dot) {
      kind = 1;
      if (!known_category(e, en)) {
        warn_line(warn, warn_arg, &nwarn,
                  "A2ACHECK_CHECKS: ignoring unknown category \"%.*s\" (known: "
                  "layout, group, size, stream, perf, a2acheck)", e, en);
        continue;
      }
    } else {
      kind = 2;
      if (!known_category(e, (size_t)(dot - e)) || dot + 1 == e + en) {
        warn_line(warn, warn_arg, &nwarn,
                  "A2ACHECK_CHECKS: ignoring \"%.*s\": not a check name of a known "
                  "category (layout, group, size, stream, perf, a2acheck)", e, en);
        continue;
      }
    }
    if (rs->n == A2A_RT_MAX_RULES) {
      warn_line(warn, warn_arg, &nwarn,
                "A2ACHECK_CHECKS: too many entries; ignoring \"%.*s\" and the rest", e, en);
      break;
    }
    if (first) rs->default_on = !enable;
    first = false;
    rs->r[rs->n].enable = enable;
    rs->r[rs->n].kind = kind;
    memcpy(rs->r[rs->n].pat, e, en);
    rs->r[rs->n].pat[en] = '\0';
    rs->n++;
  }
  return nwarn;
}

bool a2a_rt_rule_matches(const a2a_rt_rules *rs, int i, const char *check) {
  const char *pat = rs->r[i].pat;
  switch (rs->r[i].kind) {
  case 0: return true;
  case 1: {
    size_t n = strlen(pat);
    return strncmp(check, pat, n) == 0 && check[n] == '.';
  }
  default: return strcmp(check, pat) == 0;
  }
}

bool a2a_rt_checks_eval(const a2a_rt_rules *rs, const char *check) {
  bool on = rs->default_on;
  for (int i = 0; i < rs->n; i++)
    if (a2a_rt_rule_matches(rs, i, check)) on = rs->r[i].enable;
  return on;
}

bool a2a_rt_is_deadlock_check(const char *check) {
  /* The cross-rank detector's checks: "<category>.deadlock*" and
   * "<category>.hang*" (group.deadlock, group.hang, ...). */
  const char *dot = strchr(check, '.');
  if (!dot) return false;
  return strncmp(dot + 1, "deadlock", 8) == 0 || strncmp(dot + 1, "hang", 4) == 0;
}

bool a2a_rt_fail_matches(long fail_on, const char *check, a2a_severity sev) {
  switch (fail_on) {
  case A2A_FAIL_DEADLOCK: return a2a_rt_is_deadlock_check(check);
  case A2A_FAIL_ERROR: return sev >= A2A_SEV_ERROR || a2a_rt_is_deadlock_check(check);
  case A2A_FAIL_WARNING:
    return sev >= A2A_SEV_WARNING || a2a_rt_is_deadlock_check(check);
  default: return false;
  }
}
