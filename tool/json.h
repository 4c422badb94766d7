/* json.h - a small strict JSON parser (RFC 8259) into a tree allocated in
 * an arena, with lookups, and a writer that serializes a tree back.
 *
 * Strict: exactly one value with optional surrounding whitespace; no
 * comments, trailing commas, single quotes, NaN/Infinity, leading zeros or
 * unescaped control characters. Two deliberate allowances, both because
 * the runtime writes names it gets from the system verbatim:
 *  - bytes inside strings that are not valid UTF-8 are replaced by U+FFFD
 *    (a host name or file path in Latin-1 must not make a whole finding
 *    unreadable);
 *  - \u0000 and unpaired surrogate escapes decode to U+FFFD, so every
 *    decoded string is valid UTF-8 and a NUL-terminated C string.
 * Duplicate object keys are kept; json_get returns the first.
 *
 * Bounded: nesting depth, the number of values and the arena's byte limit
 * cap the work and memory for any input; exceeding them is a parse error,
 * never a crash. No global state: safe to drive from a fuzzer.
 */
#ifndef A2A_TOOL_JSON_H
#define A2A_TOOL_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "util.h"

typedef enum jkind { J_NULL, J_FALSE, J_TRUE, J_NUM, J_STR, J_ARR, J_OBJ } jkind;

typedef struct jval jval;
typedef struct jmember {
  const char *key;
  jval *val;
} jmember;

struct jval {
  jkind kind;
  union {
    struct {
      double d;
      long long i;      /* exact value when is_int */
      bool is_int;      /* no fraction/exponent and fits in long long */
    } num;
    struct {
      const char *s;    /* UTF-8, NUL-terminated */
      size_t len;
    } str;
    struct {
      jval **v;
      size_t n;
    } arr;
    struct {
      jmember *m;
      size_t n;
    } obj;
  } u;
};

typedef struct json_limits {
  unsigned max_depth;   /* nesting of arrays/objects (default 64) */
  size_t max_values;    /* values in one document (default 1 << 20) */
} json_limits;

/* Parse text[0..len). On success returns 0 and *out; otherwise -1 with a
 * reason ("offset 12: expected ':'") in err. Memory comes from a (whose
 * limit also bounds the parse); on failure the caller may arena_restore. */
int json_parse(const char *text, size_t len, arena *a, const json_limits *lim, jval **out,
               char *err, size_t errcap);

/* Lookups; NULL/false when absent or of another type. */
const jval *json_get(const jval *obj, const char *key);
const char *json_get_str(const jval *obj, const char *key);
bool json_get_int(const jval *obj, const char *key, long long *out);
bool json_get_num(const jval *obj, const char *key, double *out);
bool json_get_bool(const jval *obj, const char *key, bool *out);
const jval *json_get_arr(const jval *obj, const char *key);   /* J_ARR or NULL */
const jval *json_get_obj(const jval *obj, const char *key);   /* J_OBJ or NULL */
bool json_as_int(const jval *v, long long *out);
bool json_as_num(const jval *v, double *out);

/* Serialize v (compact). */
void json_write(strbuf *b, const jval *v);
/* A double as JSON (finite; NaN/inf written as null). */
void json_write_num(strbuf *b, double d);

#endif /* A2A_TOOL_JSON_H */
