/* options.h - the runtime's option table (analyzers/a2a_options.inc) as
 * data for the command: `a2acheck options` prints it and `a2acheck run`
 * derives its --flags from it (A2ACHECK_HANG_TIMEOUT <-> --hang-timeout). */
#ifndef A2A_TOOL_OPTIONS_H
#define A2A_TOOL_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "a2a_optrange.h"

typedef enum a2a_opt_type { OPT_INT, OPT_DBL, OPT_STR, OPT_ENUM } a2a_opt_type;

typedef struct a2a_opt_row {
  const char *field;        /* "hang_timeout" */
  const char *env;          /* "A2ACHECK_HANG_TIMEOUT" */
  a2a_opt_type type;
  long long idef;           /* INT, ENUM (index into values) */
  double ddef;              /* DBL */
  const char *sdef;         /* STR (may be NULL: unset) */
  const char *values;       /* ENUM: "a|b|c" */
  const char *help;
  a2a_opt_range range;      /* INT, DBL: the valid values (a2a_optrange.h) */
} a2a_opt_row;

extern const a2a_opt_row a2a_opt_rows[];
extern const size_t a2a_opt_nrows;

/* "int", "number", "string" or the enum's values. */
const char *a2a_opt_type_text(const a2a_opt_row *r);
/* The default as text ("(unset)" for a NULL string). */
void a2a_opt_default_text(const a2a_opt_row *r, char *out, size_t cap);
/* The row whose env name is env, or NULL. */
const a2a_opt_row *a2a_opt_by_env(const char *env);
/* Check a value the way the runtime parses it (strictly); NULL if fine,
 * else why not. */
const char *a2a_opt_check_value(const a2a_opt_row *r, const char *v);
/* The index of v in an ENUM row's values, -1 if absent. */
int a2a_opt_enum_index(const a2a_opt_row *r, const char *v);

#endif /* A2A_TOOL_OPTIONS_H */
