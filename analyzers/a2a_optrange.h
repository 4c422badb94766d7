/* a2a_optrange.h - the valid range of a numeric option, as written in its
 * row of a2a_options.inc (A2A_RANGE(lo, hi, flags)), and the two things
 * done with it: checking a value and describing the range in words. Both
 * the runtime's parser (shim/rt_options.c) and the command's `run` flags
 * (tool/options.c) use these, so the table is the one place a range lives.
 * Header-only, pure. */
#ifndef A2A_OPTRANGE_H
#define A2A_OPTRANGE_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>

enum {
  A2A_RANGE_OPEN = 1,   /* lo < v < hi instead of lo <= v <= hi */
  A2A_RANGE_OFF0 = 2,   /* 0 is also accepted (it means "off") */
  A2A_RANGE_POW2 = 4,   /* an integer power of two */
};

typedef struct a2a_opt_range {
  double lo, hi;        /* both exact for the integer rows (|v| < 2^53) */
  unsigned flags;
} a2a_opt_range;

/* A brace initializer of an a2a_opt_range. */
#define A2A_RANGE(lo, hi, flags) {(double)(lo), (double)(hi), (unsigned)(flags)}

/* Whether v (finite) is in the range. A range with lo == hi == 0 and no
 * flags is "no range" (ENUM rows expanded as INT). */
static inline bool a2a_opt_in_range(const a2a_opt_range *r, double v) {
  if (!isfinite(v)) return false;
  if (r->lo == 0 && r->hi == 0 && !r->flags) return true;
  if ((r->flags & A2A_RANGE_OFF0) && v == 0) return true;
  bool in = (r->flags & A2A_RANGE_OPEN) ? v > r->lo && v < r->hi : v >= r->lo && v <= r->hi;
  if (in && (r->flags & A2A_RANGE_POW2)) {
    int e;
    in = frexp(v, &e) == 0.5;   /* v = 2^(e-1) exactly */
  }
  return in;
}

/* The range in words: "0..32", "0 or 0.5..604800", "0 < x < 1", "a power
 * of two in 1024..4194304" ("" for no range). */
static inline void a2a_opt_range_text(const a2a_opt_range *r, char *buf, size_t cap) {
  if (r->lo == 0 && r->hi == 0 && !r->flags) {
    if (cap) buf[0] = '\0';
    return;
  }
  if (r->flags & A2A_RANGE_OPEN)
    snprintf(buf, cap, "%s%.15g < x < %.15g", (r->flags & A2A_RANGE_OFF0) ? "0 or " : "", r->lo,
             r->hi);
  else
    snprintf(buf, cap, "%s%s%.15g..%.15g", (r->flags & A2A_RANGE_OFF0) ? "0 or " : "",
             (r->flags & A2A_RANGE_POW2) ? "a power of two in " : "", r->lo, r->hi);
}

#endif /* A2A_OPTRANGE_H */
