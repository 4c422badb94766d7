/* options.c - a2a_options.inc expanded into a table (options.h). */
#include "options.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const a2a_opt_row a2a_opt_rows[] = {
#define A2A_OPT_INT(name, env, def, range, help) {#name, env, OPT_INT, (def), 0, NULL, NULL, help, range},
#define A2A_OPT_DBL(name, env, def, range, help) {#name, env, OPT_DBL, 0, (def), NULL, NULL, help, range},
#define A2A_OPT_STR(name, env, def, help) {#name, env, OPT_STR, 0, 0, (def), NULL, help, {0, 0, 0}},
#define A2A_OPT_ENUM(name, env, def, values, help) {#name, env, OPT_ENUM, (def), 0, NULL, values, help, {0, 0, 0}},
#include "a2a_options.inc"
#undef A2A_OPT_INT
#undef A2A_OPT_DBL
#undef A2A_OPT_STR
#undef A2A_OPT_ENUM
};
const size_t a2a_opt_nrows = sizeof a2a_opt_rows / sizeof a2a_opt_rows[0];

const char *a2a_opt_type_text(const a2a_opt_row *r) {
  /* "int 0..32", "number 0.5..600": the type and the row's range. */
  static char buf[96];
  char range[80];
  switch (r->type) {
  case OPT_INT:
  case OPT_DBL:
    a2a_opt_range_text(&r->range, range, sizeof range);
    snprintf(buf, sizeof buf, "%s%s%s", r->type == OPT_INT ? "int" : "number", *range ? " " : "",
             range);
    return buf;
  case OPT_STR: return "string";
  case OPT_ENUM: return r->values;
  }
  return "?";
}

static void enum_name(const char *values, long long idx, char *out, size_t cap) {
  const char *p = values;
  for (long long i = 0; i < idx && p; i++) {
    p = strchr(p, '|');
    if (p) p++;
  }
  if (!p) {
    snprintf(out, cap, "%lld", idx);
    return;
  }
  const char *e = strchr(p, '|');
  size_t n = e ? (size_t)(e - p) : strlen(p);
  snprintf(out, cap, "%.*s", (int)n, p);
}

void a2a_opt_default_text(const a2a_opt_row *r, char *out, size_t cap) {
  switch (r->type) {
  case OPT_INT: snprintf(out, cap, "%lld", r->idef); break;
  case OPT_DBL: snprintf(out, cap, "%g", r->ddef); break;
  case OPT_STR: snprintf(out, cap, "%s", r->sdef ? r->sdef : "(unset)"); break;
  case OPT_ENUM: enum_name(r->values, r->idef, out, cap); break;
  }
}

const a2a_opt_row *a2a_opt_by_env(const char *env) {
  for (size_t i = 0; i < a2a_opt_nrows; i++)
    if (strcmp(a2a_opt_rows[i].env, env) == 0) return &a2a_opt_rows[i];
  return NULL;
}

int a2a_opt_enum_index(const a2a_opt_row *r, const char *v) {
  if (r->type != OPT_ENUM) return -1;
  size_t vn = strlen(v);
  int i = 0;
  for (const char *p = r->values; p; i++) {
    const char *e = strchr(p, '|');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n == vn && strncmp(p, v, n) == 0) return i;
    p = e ? e + 1 : NULL;
  }
  return -1;
}

const char *a2a_opt_check_value(const a2a_opt_row *r, const char *v) {
  /* The runtime's rules (shim/rt_options.c): no blanks, nothing trailing,
   * finite, within the row's range. */
  char *end;
  errno = 0;
  bool lead = *v == '-' || *v == '+' || (*v >= '0' && *v <= '9') || (*v == '.' && r->type == OPT_DBL);
  double d = 0;
  switch (r->type) {
  case OPT_INT:
    d = (double)strtoll(v, &end, 10);
    if (!*v || !lead || *end || errno) return "not a decimal integer";
    break;
  case OPT_DBL:
    d = strtod(v, &end);
    if (!*v || !lead || *end || errno || !isfinite(d)) return "not a finite number";
    break;
  case OPT_STR: return NULL;
  case OPT_ENUM: return a2a_opt_enum_index(r, v) < 0 ? "not one of the listed values" : NULL;
  }
  return a2a_opt_in_range(&r->range, d) ? NULL : "out of range";
}
