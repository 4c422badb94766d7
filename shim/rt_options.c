/* rt_options.c - parsing, describing and printing the options table
 * (analyzers/a2a_options.inc).
 *
 * Pure: no global runtime state, no CUDA, no files; the environment comes
 * through a getenv function and warnings go to a callback, so the unit test
 * (tests/unit/test_options.c) drives it with a fake environment.
 *
 * Strictness (mimalloc's rule): a value either parses completely or is
 * rejected with a warning that names the variable, shows the bad value and
 * the default that is kept. Integers are decimal, optionally signed, with no
 * leading/trailing spaces or garbage; numbers are finite (no NaN, no inf);
 * both must lie in the row's range (A2A_RANGE in the table), which is
 * enforced, never clamped or rounded; ENUM values are one of the row's names
 * (case-insensitive); an empty value is unset. The bad value is shown
 * truncated and with control characters replaced, so a hostile environment
 * cannot forge lines on stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "a2a_optrange.h"
#include "rt_internal.h"

typedef enum { T_INT, T_DBL, T_STR, T_ENUM } opt_type;

typedef struct opt_row {
  const char *env;
  opt_type type;
  size_t off;
  long idef;
  double ddef;
  const char *sdef;
  const char *values;   /* ENUM: "a|b|c" */
  const char *help;
  a2a_opt_range range;  /* INT, DBL */
} opt_row;

static const opt_row rows[] = {
#define A2A_OPT_INT(name, env, def, range, help) \
  {env, T_INT, offsetof(a2a_options, name), (long)(def), 0.0, NULL, NULL, help, range},
#define A2A_OPT_DBL(name, env, def, range, help) \
  {env, T_DBL, offsetof(a2a_options, name), 0, (double)(def), NULL, NULL, help, range},
#define A2A_OPT_STR(name, env, def, help) \
  {env, T_STR, offsetof(a2a_options, name), 0, 0.0, (def), NULL, help, {0, 0, 0}},
#define A2A_OPT_ENUM(name, env, def, values, help) \
  {env, T_ENUM, offsetof(a2a_options, name), (long)(def), 0.0, NULL, values, help, {0, 0, 0}},
#include "a2a_options.inc"
#undef A2A_OPT_INT
#undef A2A_OPT_DBL
#undef A2A_OPT_STR
#undef A2A_OPT_ENUM
};
_Static_assert(sizeof rows / sizeof rows[0] == A2A_RT_NOPTS, "row count");

/* String rows whose value is a secret: the log header says whether one is
 * set, never what it is (logs may be readable by others). */
static bool row_secret(const opt_row *r) { return strcmp(r->env, "A2ACHECK_TOKEN") == 0; }

/* String rows with a syntax: why the value is unusable, or NULL. Refused
 * at start-up like any other option (said once, the default - unset -
 * kept), not only when the value is first needed - which for
 * A2ACHECK_COORDINATOR may be never (an ncclUniqueId that carries
 * a2acheck's own record needs none), leaving a typo unseen. */
static const char *row_str_error(const opt_row *r, const char *s) {
  if (strcmp(r->env, "A2ACHECK_COORDINATOR") == 0) {
    uint32_t a;
    uint16_t p;
    return a2a_coord_spec_parse(s, &a, &p);
  }
  return NULL;
}

/* The bad value as shown in a warning: at most 64 bytes, control
 * characters and non-ASCII bytes as '?'. */
static const char *shown(const char *s, char *buf, size_t cap) {
  size_t k = 0;
  for (; s[k] && k + 1 < cap && k < 64; k++)
    buf[k] = s[k] >= 0x20 && s[k] < 0x7f ? s[k] : '?';
  buf[k] = '\0';
  if (s[k] && k + 4 < cap) memcpy(buf + k, "...", 4);
  return buf;
}

/* String values are copied here so that a later setenv() by the
 * application cannot change or free what the options point at. */
static char str_pool[4096];
static size_t str_pool_len;

static const char *pool_copy(const char *s) {
  size_t n = strlen(s) + 1;
  if (str_pool_len + n > sizeof str_pool) return NULL;
  char *p = str_pool + str_pool_len;
  memcpy(p, s, n);
  str_pool_len += n;
  return p;
}

bool a2a_rt_parse_long(const char *s, long lo, long hi, long *out) {
  if (!s || !*s) return false;
  /* strtol would skip leading blanks: refuse them explicitly. */
  if (!(*s == '-' || *s == '+' || (*s >= '0' && *s <= '9'))) return false;
  errno = 0;
  char *end = NULL;
  long v = strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0') return false;
  if (v < lo || v > hi) return false;
  *out = v;
  return true;
}

static bool parse_double(const char *s, double *out) {
  if (!s || !*s) return false;
  if (!(*s == '-' || *s == '+' || *s == '.' || (*s >= '0' && *s <= '9')))
    return false;
  errno = 0;
  char *end = NULL;
  double v = strtod(s, &end);
  if (errno != 0 || end == s || *end != '\0' || !isfinite(v)) return false;
  *out = v;
  return true;
}

const char *a2a_rt_enum_name(const char *values, long idx, char *buf, size_t cap) {
  const char *p = values;
  for (long i = 0; p && i < idx; i++) {
    p = strchr(p, '|');
    if (p) p++;
  }
  if (!p || idx < 0) {
    snprintf(buf, cap, "%ld", idx);
    return buf;
  }
  size_t n = strcspn(p, "|");
  if (n >= cap) n = cap - 1;
  memcpy(buf, p, n);
  buf[n] = '\0';
  return buf;
}

/* Index of s in the "a|b|c" list, -1 if absent. */
static long enum_index(const char *values, const char *s) {
  size_t sl = strlen(s);
  long i = 0;
  for (const char *p = values; p; i++) {
    size_t n = strcspn(p, "|");
    if (n == sl && strncasecmp(p, s, n) == 0) return i;
    p = p[n] ? p + n + 1 : NULL;
  }
  return -1;
}

static void warnf(a2a_rt_warn_fn warn, void *arg, int *nwarn, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void warnf(a2a_rt_warn_fn warn, void *arg, int *nwarn, const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  (*nwarn)++;
  if (warn) warn(arg, line);
}

void a2a_rt_options_defaults(a2a_options *o) {
  memset(o, 0, sizeof *o);
  for (size_t i = 0; i < A2A_RT_NOPTS; i++) {
    const opt_row *r = &rows[i];
    char *field = (char *)o + r->off;
    switch (r->type) {
    case T_INT:
    case T_ENUM: *(long *)field = r->idef; break;
    case T_DBL: *(double *)field = r->ddef; break;
    case T_STR: *(const char **)field = r->sdef; break;
    }
  }
}

int a2a_rt_options_parse(a2a_options *o, unsigned char *from_env,
                         a2a_rt_getenv_fn getenv_fn, a2a_rt_warn_fn warn,
                         void *warn_arg) {
  int nwarn = 0;
  a2a_rt_options_defaults(o);
  str_pool_len = 0;
  if (from_env) memset(from_env, 0, A2A_RT_NOPTS);
  for (size_t i = 0; i < A2A_RT_NOPTS; i++) {
    const opt_row *r = &rows[i];
    const char *s = getenv_fn ? getenv_fn(r->env) : NULL;
    if (!s || !*s) continue;
    char *field = (char *)o + r->off;
    char dbuf[64], bad[72];
    bool ok = false;
    switch (r->type) {
    case T_INT:
    case T_DBL: {
      /* Parse, then check the range: the message says which rule failed,
       * the valid values and what is kept. */
      char range[96], def[40];
      a2a_opt_range_text(&r->range, range, sizeof range);
      shown(s, bad, sizeof bad);
      if (r->type == T_INT) snprintf(def, sizeof def, "%ld", r->idef);
      else snprintf(def, sizeof def, "%g", r->ddef);
      long lv = 0;
      double dv = 0;
      bool parsed = r->type == T_INT ? a2a_rt_parse_long(s, -__LONG_MAX__ - 1, __LONG_MAX__, &lv)
                                     : parse_double(s, &dv);
      if (r->type == T_INT) dv = (double)lv;
      ok = parsed && a2a_opt_in_range(&r->range, dv);
      if (ok && r->type == T_INT) *(long *)field = lv;
      else if (ok) *(double *)field = dv;
      else if (!parsed)
        warnf(warn, warn_arg, &nwarn, "%s=\"%s\" is not %s (valid: %s); keeping the default %s",
              r->env, bad, r->type == T_INT ? "a decimal integer" : "a finite number", range, def);
      else
        warnf(warn, warn_arg, &nwarn,
              "%s=\"%s\" is out of range (valid: %s%s); keeping the default %s", r->env, bad,
              range, (r->range.flags & A2A_RANGE_POW2) ? ", not rounded" : "", def);
      break;
    }
    case T_ENUM: {
      long v = enum_index(r->values, s);
      ok = v >= 0;
      if (ok) *(long *)field = v;
      else
        warnf(warn, warn_arg, &nwarn,
              "%s=\"%s\" is not one of %s; keeping the default \"%s\"", r->env,
              shown(s, bad, sizeof bad),
              r->values, a2a_rt_enum_name(r->values, r->idef, dbuf, sizeof dbuf));
      break;
    }
    case T_STR: {
      const char *why = row_str_error(r, s);
      if (why) {
        warnf(warn, warn_arg, &nwarn,
              "%s=\"%s\" %s (valid: A.B.C.D:PORT, e.g. 10.0.0.1:29400); keeping the default (unset)",
              r->env, shown(s, bad, sizeof bad), why);
        break;
      }
      const char *c = pool_copy(s);
      ok = c != NULL;
      if (ok) *(const char **)field = c;
      else
        warnf(warn, warn_arg, &nwarn, "%s is too long; keeping the default", r->env);
      break;
    }
    }
    if (ok && from_env) from_env[i] = 1;
  }
  return nwarn;
}

static void value_text(const opt_row *r, const a2a_options *o, bool def, char *buf,
                       size_t cap) {
  /* def: the table's default; otherwise the value in *o. */
  const char *field = def ? NULL : (const char *)o + r->off;
  switch (r->type) {
  case T_INT: snprintf(buf, cap, "%ld", def ? r->idef : *(const long *)field); break;
  case T_DBL: {
    /* Short, yet exact: the header must show the value in effect, not a
     * neighbour that rounds across a range's bound. */
    double v = def ? r->ddef : *(const double *)field;
    snprintf(buf, cap, "%.15g", v);
    if (strtod(buf, NULL) != v) snprintf(buf, cap, "%.17g", v);
    break;
  }
  case T_ENUM:
    a2a_rt_enum_name(r->values, def ? r->idef : *(const long *)field, buf, cap);
    break;
  case T_STR: {
    const char *s = def ? r->sdef : *(const char *const *)field;
    snprintf(buf, cap, "%s", s ? s : "(unset)");
    /* One line per option in the log header, whatever the value holds. */
    for (char *p = buf; *p; p++)
      if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
    break;
  }
  }
}

size_t a2a_rt_options_describe(const a2a_options *o, const unsigned char *from_env,
                               char *buf, size_t cap) {
  size_t len = 0;
  bool ovf = false;
  if (cap) buf[0] = '\0';
  for (size_t i = 0; i < A2A_RT_NOPTS; i++) {
    char v[256];
    value_text(&rows[i], o, false, v, sizeof v);
    if (row_secret(&rows[i]) && strcmp(v, "(unset)") != 0) snprintf(v, sizeof v, "(set, not shown)");
    len = a2a_rt_printf(buf, cap, len, &ovf, "  %s=%s  (%s)\n", rows[i].env, v,
                        from_env && from_env[i] ? "environment" : "default");
  }
  return len;
}

/* "int 0..32", "number 0.5..600", "string" or the enum's values. */
static void type_text(const opt_row *r, char *buf, size_t cap) {
  char range[96];
  switch (r->type) {
  case T_INT:
  case T_DBL:
    a2a_opt_range_text(&r->range, range, sizeof range);
    snprintf(buf, cap, "%s%s%s", r->type == T_INT ? "int" : "number", *range ? " " : "", range);
    return;
  case T_STR: snprintf(buf, cap, "string"); return;
  case T_ENUM: snprintf(buf, cap, "%s", r->values); return;
  }
}

size_t a2a_rt_options_help(char *buf, size_t cap, int markdown) {
  size_t len = 0;
  bool ovf = false;
  if (cap) buf[0] = '\0';
  if (markdown)
    len = a2a_rt_puts(buf, cap, len,
                      "| Variable | Values | Default | Meaning |\n"
                      "|---|---|---|---|\n", &ovf);
  else
    len = a2a_rt_puts(buf, cap, len,
                      "a2acheck options (environment variables; a bad value is "
                      "reported and the default kept):\n", &ovf);
  for (size_t i = 0; i < A2A_RT_NOPTS; i++) {
    const opt_row *r = &rows[i];
    char d[256], tn[128];
    value_text(r, NULL, true, d, sizeof d);
    type_text(r, tn, sizeof tn);
    if (markdown) {
      /* '|' inside a cell must be escaped in Markdown tables. */
      char t[256];
      size_t k = 0;
      for (const char *p = tn; *p && k + 3 < sizeof t; p++) {
        if (*p == '|') t[k++] = '\\';
        t[k++] = *p;
      }
      t[k] = '\0';
      len = a2a_rt_printf(buf, cap, len, &ovf, "| `%s` | %s | `%s` | %s |\n", r->env,
                          t, d, r->help);
    } else {
      len = a2a_rt_printf(buf, cap, len, &ovf, "  %-26s %-28s default %s\n      %s\n",
                          r->env, tn, d, r->help);
    }
  }
  return len;
}
