/* rt_checks.c - A2ACHECK_CHECKS (which checks are enabled) and
 * A2ACHECK_FAIL_ON (which findings change the exit status), both validated
 * against the one checks table (analyzers/a2a_checks.inc).
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
 * "everything enabled" ("-perf" means all but perf). A name that is not in
 * the table (a misspelling) is reported at start-up with the closest name
 * and skipped.
 *
 * A2ACHECK_FAIL_ON is a comma list of levels and checks:
 *   deadlock       group.deadlock and group.hang (the default)
 *   error          every error finding (and the deadlock checks)
 *   warning        every warning or error finding (and the deadlock checks)
 *   never          nothing (alone)
 *   CHECK|CATEGORY findings of these checks, whatever their severity
 *   -CHECK|-CATEGORY never these (overrides the levels above)
 * e.g. "error,-group.concurrent-use" or "deadlock,size.dtype-mismatch".
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "rt_internal.h"

static bool valid_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.';
}

static void warn_line(a2a_rt_warn_fn warn, void *arg, int *nwarn, const char *fmt,
                      const char *entry, size_t n, const char *extra) {
  char line[320];
  snprintf(line, sizeof line, fmt, (int)n, entry, extra ? extra : "");
  (*nwarn)++;
  if (warn) warn(arg, line);
}

static void categories_text(char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = 0;
  for (size_t i = 0; i < a2a_check_ncategories && len < cap; i++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? ", " : "",
                            a2a_check_categories[i].name);
}

/* One selector: "all", a category, or a check of the table. Returns the kind
 * (0 all, 1 category, 2 check) or -1 after warning. */
static int classify(const char *var, const char *e, size_t en, a2a_check_id *id,
                    a2a_rt_warn_fn warn, void *warn_arg, int *nwarn) {
  char fmt[160], extra[160], cats[96];
  bool ok = en > 0 && en < 64;
  for (size_t i = 0; ok && i < en; i++) ok = valid_name_char(e[i]);
  if (!ok) {
    snprintf(fmt, sizeof fmt, "%s: ignoring malformed entry \"%%.*s\"%%s", var);
    warn_line(warn, warn_arg, nwarn, fmt, e, en, NULL);
    return -1;
  }
  if (en == 3 && strncmp(e, "all", 3) == 0) return 0;
  const char *dot = memchr(e, '.', en);
  if (!dot) {
    if (a2a_check_is_category(e, en)) return 1;
    categories_text(cats, sizeof cats);
    snprintf(extra, sizeof extra, " (known: %s)", cats);
    snprintf(fmt, sizeof fmt, "%s: ignoring unknown category \"%%.*s\"%%s", var);
    warn_line(warn, warn_arg, nwarn, fmt, e, en, extra);
    return -1;
  }
  *id = a2a_check_by_name_n(e, en);
  if (*id != A2A_CK_NONE) return 2;
  a2a_check_id near = a2a_check_suggest(e, en);
  if (near != A2A_CK_NONE)
    snprintf(extra, sizeof extra, "; did you mean \"%s\"? (`a2acheck checks` lists them)",
             a2a_check_name(near));
  else
    snprintf(extra, sizeof extra, " (`a2acheck checks` lists the checks)");
  snprintf(fmt, sizeof fmt, "%s: ignoring \"%%.*s\": not a check name%%s", var);
  warn_line(warn, warn_arg, nwarn, fmt, e, en, extra);
  return -1;
}

/* Split a comma list; calls fn(entry, len, enable, arg) for each non-empty,
 * trimmed entry with its sign removed. */
typedef int (*entry_fn)(const char *e, size_t en, bool enable, bool signed_, void *arg);
static void for_entries(const char *spec, entry_fn fn, void *arg) {
  for (const char *p = spec; p && *p;) {
    size_t n = strcspn(p, ",");
    const char *e = p;
    size_t en = n;
    p += n;
    if (*p == ',') p++;
    /* Trim blanks so "all, -perf" works. */
    while (en && (*e == ' ' || *e == '\t')) e++, en--;
    while (en && (e[en - 1] == ' ' || e[en - 1] == '\t')) en--;
    if (en == 0) continue;
    bool enable = true, sgn = false;
    if (*e == '-' || *e == '+') {
      enable = *e == '+';
      sgn = true;
      e++, en--;
    }
    if (fn(e, en, enable, sgn, arg) != 0) break;
  }
}

/* ---- A2ACHECK_CHECKS ---- */

typedef struct parse_ctx {
  a2a_rt_rules *rs;
  a2a_rt_warn_fn warn;
  void *warn_arg;
  int nwarn;
  bool first;
} parse_ctx;

static int checks_entry(const char *e, size_t en, bool enable, bool sgn, void *arg) {
  parse_ctx *x = arg;
  a2a_rt_rules *rs = x->rs;
  a2a_check_id id = A2A_CK_NONE;
  int kind = classify("A2ACHECK_CHECKS", e, en, &id, x->warn, x->warn_arg, &x->nwarn);
  if (kind < 0) return 0;
  if (rs->n == A2A_RT_MAX_RULES) {
    warn_line(x->warn, x->warn_arg, &x->nwarn,
              "A2ACHECK_CHECKS: too many entries; ignoring \"%.*s\" and the rest%s", e, en, NULL);
    return 1;
  }
  if (x->first) rs->default_on = !enable;
  x->first = false;
  rs->r[rs->n].enable = enable;
  rs->r[rs->n].kind = (unsigned char)kind;
  memcpy(rs->r[rs->n].pat, e, en);
  rs->r[rs->n].pat[en] = '\0';
  rs->n++;
  return 0;
}

int a2a_rt_checks_parse(a2a_rt_rules *rs, const char *spec, a2a_rt_warn_fn warn,
                        void *warn_arg) {
  memset(rs, 0, sizeof *rs);
  rs->default_on = true;
  parse_ctx x = {.rs = rs, .warn = warn, .warn_arg = warn_arg, .first = true};
  for_entries(spec, checks_entry, &x);
  return x.nwarn;
}

bool a2a_rt_rule_matches(const a2a_rt_rules *rs, int i, a2a_check_id id) {
  const char *pat = rs->r[i].pat;
  const char *name = a2a_check_name(id);
  switch (rs->r[i].kind) {
  case 0: return true;
  case 1: {
    size_t n = strlen(pat);
    return n == a2a_check_category_len(id) && strncmp(name, pat, n) == 0;
  }
  default: return strcmp(name, pat) == 0;
  }
}

bool a2a_rt_checks_eval(const a2a_rt_rules *rs, a2a_check_id id) {
  bool on = rs->default_on;
  for (int i = 0; i < rs->n; i++)
    if (a2a_rt_rule_matches(rs, i, id)) on = rs->r[i].enable;
  return on;
}

a2a_check_set a2a_rt_checks_set(const a2a_rt_rules *rs) {
  a2a_check_set s = {{0, 0}};
  for (int i = 0; i < A2A_CK__COUNT; i++)
    a2a_check_set_put(&s, (a2a_check_id)i, a2a_rt_checks_eval(rs, (a2a_check_id)i));
  return s;
}

/* ---- A2ACHECK_FAIL_ON ---- */

/* FAIL_ON's warnings are held until the whole list is parsed, so that the
 * last one can say when nothing usable was left and the default applies. */
typedef struct fail_ctx {
  a2a_rt_failpol *p;
  int nwarn;
  int nentries, nusable;
  bool never;
  char held[4][320];
  int nheld;
} fail_ctx;

static void hold(void *arg, const char *line) {
  fail_ctx *x = arg;
  if (x->nheld < 4) snprintf(x->held[x->nheld++], sizeof x->held[0], "%s", line);
}

static void put_selector(a2a_check_set *s, int kind, a2a_check_id id, const char *e,
                         size_t en) {
  for (int i = 0; i < A2A_CK__COUNT; i++) {
    bool hit = kind == 0 || (kind == 2 && i == (int)id) ||
               (kind == 1 && a2a_check_category_len((a2a_check_id)i) == en &&
                strncmp(a2a_check_name((a2a_check_id)i), e, en) == 0);
    if (hit) a2a_check_set_put(s, (a2a_check_id)i, true);
  }
}

static int fail_entry(const char *e, size_t en, bool enable, bool sgn, void *arg) {
  fail_ctx *x = arg;
  x->nentries++;
  static const char *const levels[] = {"deadlock", "warning", "error", "never"};
  static const int level_of[] = {A2A_FAIL_LEVEL_DEADLOCK, A2A_FAIL_LEVEL_WARNING,
                                 A2A_FAIL_LEVEL_ERROR, -2};
  for (int i = 0; i < 4; i++) {
    if (strlen(levels[i]) != en || strncasecmp(e, levels[i], en) != 0) continue;
    if (sgn) {
      warn_line(hold, x, &x->nwarn,
                "A2ACHECK_FAIL_ON: ignoring \"-%.*s\": a level cannot be negated%s", e, en, NULL);
      return 0;
    }
    x->nusable++;
    if (level_of[i] == -2) x->never = true;
    else if (level_of[i] > x->p->level) x->p->level = level_of[i];
    return 0;
  }
  if (!memchr(e, '.', en) && !a2a_check_is_category(e, en)) {
    warn_line(hold, x, &x->nwarn,
              "A2ACHECK_FAIL_ON: ignoring \"%.*s\": not a level (deadlock, error, warning, "
              "never), a check or a category%s", e, en, NULL);
    return 0;
  }
  a2a_check_id id = A2A_CK_NONE;
  int kind = classify("A2ACHECK_FAIL_ON", e, en, &id, hold, x, &x->nwarn);
  if (kind < 0) return 0;
  x->nusable++;
  put_selector(enable ? &x->p->include : &x->p->exclude, kind, id, e, en);
  return 0;
}

int a2a_rt_failpol_parse(a2a_rt_failpol *p, const char *spec, a2a_rt_warn_fn warn,
                         void *warn_arg) {
  memset(p, 0, sizeof *p);
  p->level = A2A_FAIL_LEVEL_NONE;
  fail_ctx x = {.p = p};
  for_entries(spec, fail_entry, &x);
  if (x.never) {
    if (x.nentries > 1) {
      x.nwarn++;
      hold(&x, "A2ACHECK_FAIL_ON: \"never\" given with other entries; using never");
    }
    memset(p, 0, sizeof *p);
    p->level = A2A_FAIL_LEVEL_NONE;
    p->never = true;
  } else if (x.nusable == 0) {
    /* Unset, empty, or nothing usable: the default. */
    p->level = A2A_FAIL_LEVEL_DEADLOCK;
    p->defaulted = true;
    if (x.nheld) {
      size_t l = strlen(x.held[x.nheld - 1]);
      snprintf(x.held[x.nheld - 1] + l, sizeof x.held[0] - l, "; keeping the default \"deadlock\"");
    }
  }
  for (int i = 0; i < x.nheld; i++)
    if (warn) warn(warn_arg, x.held[i]);
  for (int id = 0; id < A2A_CK__COUNT; id++) {
    int n = 0;
    while (n < 3 && a2a_rt_failpol_matches(p, (a2a_check_id)id, (a2a_severity)(A2A_SEV_ERROR - n))) n++;
    p->nmatch[id] = (uint8_t)n;
  }
  return x.nwarn;
}

bool a2a_rt_failpol_matches(const a2a_rt_failpol *p, a2a_check_id id, a2a_severity sev) {
  if (p->never || a2a_check_set_has(&p->exclude, id)) return false;
  if (a2a_check_set_has(&p->include, id)) return true;
  if (p->level >= A2A_FAIL_LEVEL_DEADLOCK && a2a_check_is_deadlock(id)) return true;
  if (p->level == A2A_FAIL_LEVEL_ERROR) return sev >= A2A_SEV_ERROR;
  if (p->level == A2A_FAIL_LEVEL_WARNING) return sev >= A2A_SEV_WARNING;
  return false;
}

size_t a2a_rt_failpol_describe(const a2a_rt_failpol *p, char *buf, size_t cap) {
  size_t len = 0;
  if (!cap) return 0;
  buf[0] = 0;
#define PUT(...) len += (size_t)snprintf(buf + len, len < cap ? cap - len : 0, __VA_ARGS__)
  if (p->never) {
    PUT("never");
    return len < cap ? len : cap - 1;
  }
  static const char *const names[] = {"", "deadlock", "error", "warning"};
  if (p->level > 0 && p->level < 4) PUT("%s", names[p->level]);
  for (int pass = 0; pass < 2; pass++) {
    const a2a_check_set *s = pass ? &p->exclude : &p->include;
    for (int i = 0; i < A2A_CK__COUNT; i++)
      if (a2a_check_set_has(s, (a2a_check_id)i))
        PUT("%s%s%s", len ? "," : "", pass ? "-" : "", a2a_check_name((a2a_check_id)i));
  }
#undef PUT
  if (len >= cap) len = cap - 1;
  return len;
}
