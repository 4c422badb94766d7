/* rt_suppress.c - suppressions (A2ACHECK_SUPPRESSIONS=FILE), like the
 * sanitizers': a file of `check:pattern` lines silencing the findings whose
 * call site matches.
 *
 * Format (docs/troubleshooting.md, "Suppressions"):
 *   - one rule per line, `check:pattern`, blanks around either part ignored;
 *     a line whose first non-blank character is '#' is a comment; blank
 *     lines are ignored;
 *   - check: a check name (`size.p2p-mismatch`), a category (`perf`), or a
 *     glob with '*' over check names (`*`, `layout.*`); a name that is none
 *     of these is a bad line;
 *   - pattern: a glob where '*' matches any run of characters, matched
 *     anywhere in the text (a substring) unless it starts with '^' (anchored
 *     at the start) or ends with '$' (anchored at the end) - the sanitizers'
 *     rule.
 * A finding is suppressed when a rule's check covers it and its pattern
 * matches the function, the file or the module of any frame of the
 * finding's stack as it would be logged (Python frames included), or when
 * the pattern is only '*'s (the whole check, stack or not).
 *
 * Bad lines get one message each (file:line, why), at most MAX_LINE_WARNINGS,
 * and are ignored; an unreadable file gets one message. The parser and the
 * matcher are pure (tests/unit/test_suppress.c, tests/fuzz/fuzz_suppress.c);
 * only a2a_rt_supp_load reads a file, once, at init. Matching runs only
 * when a new distinct finding is reported (rt_report.c), never per call.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_internal.h"

#define MAX_LINE_WARNINGS 20

static void supp_warn(a2a_rt_warn_fn warn, void *arg, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void supp_warn(a2a_rt_warn_fn warn, void *arg, const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (warn) warn(arg, line);
}

/* ---- globs ---- */

/* Whether pat[0..pn) matches all of t[0..tn): '*' is any run (iterative
 * backtracking to the last star: O(pn * tn) at worst, no recursion). */
static bool glob_full(const char *pat, size_t pn, const char *t, size_t tn) {
  size_t p = 0, i = 0, star = (size_t)-1, mark = 0;
  while (i < tn) {
    if (p < pn && pat[p] == '*') {
      star = p++;
      mark = i;
    } else if (p < pn && pat[p] == t[i]) {
      p++;
      i++;
    } else if (star != (size_t)-1) {
      p = star + 1;
      i = ++mark;
    } else {
      return false;
    }
  }
  while (p < pn && pat[p] == '*') p++;
  return p == pn;
}

bool a2a_rt_supp_glob(const char *pat, const char *t, size_t tn) {
  /* An unanchored side is an implicit '*': "^a*b" stays, "a*b" becomes
   * "*a*b*". Patterns are at most a rule's length. */
  char vp[sizeof ((a2a_rt_supp_rule *)0)->pattern + 2];
  size_t pn = strlen(pat);
  bool start = pn && pat[0] == '^';
  if (start) pat++, pn--;
  bool end = pn && pat[pn - 1] == '$';
  if (end) pn--;
  if (pn + 2 >= sizeof vp) return false;
  size_t k = 0;
  if (!start) vp[k++] = '*';
  memcpy(vp + k, pat, pn);
  k += pn;
  if (!end) vp[k++] = '*';
  return glob_full(vp, k, t, tn);
}

/* ---- the frame's parts ---- */

typedef struct part { const char *p; size_t n; } part;

/* Split one rendered frame (rt_stack.c, rt_python.c) into its function,
 * file and module, read from the right because demangled C++ names hold
 * parentheses and blanks:
 *   native  "NAME+0xOFF (MODULE) at FILE:LINE", "NAME+0xOFF (MODULE)",
 *           "NAME (inlined) (MODULE) at FILE:LINE", "?? (MODULE+0xOFF)"
 *   Python  "FUNC (PATH:LINE)"
 *   other   (a fold "... N frames in torch") the whole text as the function.
 * Returns the number of parts (1..3). */
static int frame_parts(const char *f, part out[3]) {
  size_t n = strlen(f);
  int k = 0;
  /* " at FILE:LINE" at the end. */
  const char *at = NULL;
  for (const char *q = f; (q = strstr(q, " at ")) != NULL; q++) at = q;
  size_t rest = n;
  if (at) {
    const char *file = at + 4, *colon = strrchr(file, ':');
    out[k++] = (part){file, colon ? (size_t)(colon - file) : strlen(file)};
    rest = (size_t)(at - f);
  }
  /* The last "(...)" group ending the rest: the module, or Python's
   * "PATH:LINE". */
  if (rest >= 2 && f[rest - 1] == ')') {
    size_t open = rest - 1;
    while (open > 0 && !(f[open] == '(' && f[open - 1] == ' ')) open--;
    if (f[open] == '(' && open > 0) {
      const char *g = f + open + 1;
      size_t gn = rest - 1 - (open + 1);
      size_t d = gn;
      while (d > 0 && g[d - 1] >= '0' && g[d - 1] <= '9') d--;
      if (!at && d < gn && d > 0 && g[d - 1] == ':') {
        out[k++] = (part){g, d - 1};           /* Python: PATH */
      } else {
        const char *plus = memchr(g, '+', gn);
        out[k++] = (part){g, plus ? (size_t)(plus - g) : gn};   /* MODULE */
      }
      rest = open - 1;
      if (rest >= 10 && memcmp(f + rest - 10, " (inlined)", 10) == 0) rest -= 10;
      const char *plus = NULL;
      for (size_t i = rest; i-- > 0;)
        if (f[i] == '+' && i + 2 < rest && f[i + 1] == '0' && f[i + 2] == 'x') {
          plus = f + i;
          break;
        }
      if (plus) rest = (size_t)(plus - f);
    }
  }
  out[k++] = (part){f, rest};
  return k;
}

/* ---- rules ---- */

static bool all_stars(const char *p) {
  for (; *p; p++)
    if (*p != '*') return false;
  return true;
}

static bool check_covers(const a2a_rt_supp_rule *r, const char *check) {
  if (strchr(r->check, '*')) return glob_full(r->check, strlen(r->check), check, strlen(check));
  size_t n = strlen(r->check);
  return strcmp(r->check, check) == 0 || (strncmp(r->check, check, n) == 0 && check[n] == '.');
}

int a2a_rt_supp_match(const a2a_rt_supp *s, const char *check,
                      const char (*frames)[A2A_RT_FRAME_LEN], int nframes) {
  if (!s || !check) return -1;
  for (int i = 0; i < s->n; i++) {
    const a2a_rt_supp_rule *r = &s->rules[i];
    if (!check_covers(r, check)) continue;
    if (all_stars(r->pattern)) return i;
    for (int f = 0; f < nframes; f++) {
      part p[3];
      int np = frame_parts(frames[f], p);
      for (int j = 0; j < np; j++)
        if (p[j].n && a2a_rt_supp_glob(r->pattern, p[j].p, p[j].n)) return i;
    }
  }
  return -1;
}

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

static void trim(const char **b, const char **e) {
  while (*b < *e && is_blank(**b)) (*b)++;
  while (*e > *b && is_blank((*e)[-1])) (*e)--;
}

/* Why check[0..n) cannot be a rule's check, NULL if it can. */
static const char *bad_check(const char *c, size_t n) {
  if (!n) return "no check before ':'";
  for (size_t i = 0; i < n; i++)
    if (!(c[i] == '*' || c[i] == '.' || c[i] == '-' || c[i] == '_' ||
          (c[i] >= 'a' && c[i] <= 'z') || (c[i] >= '0' && c[i] <= '9')))
      return "the check has a character no check name has";
  if (memchr(c, '*', n)) return NULL;
  if (a2a_check_by_name_n(c, n) != A2A_CK_NONE || a2a_check_is_category(c, n)) return NULL;
  return "unknown check or category (`a2acheck checks` lists them)";
}

int a2a_rt_supp_parse(a2a_rt_supp *s, const char *text, size_t len, const char *fname,
                      a2a_rt_warn_fn warn, void *warn_arg) {
  memset(s, 0, sizeof *s);
  int bad = 0;
  const char *end = text + len;
  unsigned lineno = 0;
  for (const char *p = text; p < end;) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *le = nl ? nl : end;
    const char *b = p, *e = le;
    lineno++;
    p = nl ? nl + 1 : end;
    trim(&b, &e);
    if (b == e || *b == '#') continue;
    const char *why = NULL;
    const char *colon = memchr(b, ':', (size_t)(e - b));
    const char *cb = b, *ce = colon ? colon : e, *pb = colon ? colon + 1 : e, *pe = e;
    trim(&cb, &ce);
    trim(&pb, &pe);
    if (memchr(b, '\0', (size_t)(e - b))) why = "the line holds a NUL byte";
    else if (!colon) why = "no ':' (the format is check:pattern)";
    else if ((why = bad_check(cb, (size_t)(ce - cb))) != NULL) {
    } else if (pb == pe) why = "no pattern after ':'";
    else if ((size_t)(ce - cb) >= sizeof s->rules[0].check ||
             (size_t)(pe - pb) >= sizeof s->rules[0].pattern)
      why = "too long";
    else if (s->n == A2A_RT_SUPP_MAX) why = "too many rules (the first ones are kept)";
    if (why) {
      bad++;
      if (bad <= MAX_LINE_WARNINGS) {
        char shown[81];
        size_t k = 0;
        for (const char *q = b; q < e && k < 80; q++) shown[k++] = *q >= 0x20 && *q < 0x7f ? *q : '?';
        shown[k] = '\0';
        supp_warn(warn, warn_arg, "A2ACHECK_SUPPRESSIONS: %.200s:%u: %s: \"%s\"; line ignored",
                  fname ? fname : "?", lineno, why, shown);
      }
      continue;
    }
    a2a_rt_supp_rule *r = &s->rules[s->n++];
    memcpy(r->check, cb, (size_t)(ce - cb));
    memcpy(r->pattern, pb, (size_t)(pe - pb));
  }
  if (bad > MAX_LINE_WARNINGS)
    supp_warn(warn, warn_arg, "A2ACHECK_SUPPRESSIONS: %.200s: %d more bad lines ignored",
              fname ? fname : "?", bad - MAX_LINE_WARNINGS);
  return bad;
}

/* ---- the process's suppressions ---- */

static a2a_rt_supp g_supp;
static char g_supp_text[A2A_RT_SUPP_FILE_MAX];

int a2a_rt_supp_load(const char *path, a2a_rt_warn_fn warn, void *warn_arg) {
  g_supp.n = 0;
  if (!path || !*path) return 0;
  /* O_NONBLOCK and the regular-file check: a FIFO or a device named by
   * mistake must not hang the application. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  struct stat st;
  const char *why = NULL;
  int err = 0;
  if (fd < 0) err = errno, why = "cannot be opened";
  else if (fstat(fd, &st) != 0) err = errno, why = "cannot be read";
  else if (!S_ISREG(st.st_mode)) why = "is not a regular file";
  else if (st.st_size >= (off_t)sizeof g_supp_text) why = "is too large (more than 64 KiB)";
  size_t len = 0;
  while (!why) {
    ssize_t r = read(fd, g_supp_text + len, sizeof g_supp_text - len);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) err = errno, why = "cannot be read";
    else if (r == 0) break;
    else if ((len += (size_t)r) == sizeof g_supp_text) why = "is too large (more than 64 KiB)";
  }
  if (fd >= 0) close(fd);
  if (why) {
    supp_warn(warn, warn_arg, "A2ACHECK_SUPPRESSIONS=%.300s %s%s%s: no finding is suppressed",
              path, why, err ? ": " : "", err ? strerror(err) : "");
    return -1;
  }
  a2a_rt_supp_parse(&g_supp, g_supp_text, len, path, warn, warn_arg);
  snprintf(g_supp.file, sizeof g_supp.file, "%s", path);
  return g_supp.n;
}

const a2a_rt_supp *a2a_rt_supp_active(void) { return g_supp.n ? &g_supp : NULL; }
