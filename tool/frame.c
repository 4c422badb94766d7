/* frame.c - stack frame strings -> func/module/file/line (frame.h). */
#define _GNU_SOURCE /* memrchr */
#include "frame.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void copy(char *dst, size_t cap, const char *s, size_t n) {
  while (n && isspace((unsigned char)*s)) s++, n--;
  while (n && isspace((unsigned char)s[n - 1])) n--;
  if (n >= cap) n = cap - 1;
  memcpy(dst, s, n);
  dst[n] = 0;
}

static bool is_py_file(const char *file) {
  size_t n = strlen(file);
  return (n > 3 && strcmp(file + n - 3, ".py") == 0) ||
         (n > 4 && (strcmp(file + n - 4, ".pyx") == 0 || strcmp(file + n - 4, ".pyi") == 0));
}

/* Parse "LINE" or "LINE:COL" at p; returns the end or NULL. */
static const char *parse_linecol(const char *p, int *line, int *col) {
  if (!isdigit((unsigned char)*p)) return NULL;
  long v = 0;
  while (isdigit((unsigned char)*p)) {
    if (v < 100000000) v = v * 10 + (*p - '0');
    p++;
  }
  *line = (int)v;
  *col = 0;
  if (*p == ':' && isdigit((unsigned char)p[1])) {
    long c = 0;
    p++;
    while (isdigit((unsigned char)*p)) {
      if (c < 100000000) c = c * 10 + (*p - '0');
      p++;
    }
    *col = (int)c;
  }
  return p;
}

/* "PATH:LINE[:COL]" filling the whole of s[0..n) (spaces allowed in PATH:
 * it follows " at "). */
static bool parse_whole_loc(const char *s, size_t n, a2a_frame *f) {
  while (n && isspace((unsigned char)s[n - 1])) n--;
  /* the first ':' after which the rest is LINE or LINE:COL */
  for (size_t i = 1; i < n; i++) {
    if (s[i] != ':') continue;
    int line, col;
    const char *e = parse_linecol(s + i + 1, &line, &col);
    if (!e || (size_t)(e - s) != n) continue;
    copy(f->file, sizeof f->file, s, i);
    if (!f->file[0]) return false;
    f->line = line;
    f->col = col;
    return true;
  }
  return false;
}

/* Find a location token "PATH:LINE[:COL]" in s whose PATH holds '.' or '/'
 * and no whitespace or parentheses; the last such token wins. */
static bool find_loc(const char *s, size_t *ls, size_t *le, a2a_frame *f) {
  bool found = false;
  size_t n = strlen(s);
  for (size_t i = 1; i < n; i++) {
    if (s[i] != ':') continue;
    int line, col;
    const char *e = parse_linecol(s + i + 1, &line, &col);
    if (!e) continue;
    if (*e && !(*e == ')' || *e == ' ' || *e == ',' || *e == ']' || *e == '>')) continue;
    size_t st = i;
    while (st > 0 && !isspace((unsigned char)s[st - 1]) && s[st - 1] != '(' && s[st - 1] != '"' &&
           s[st - 1] != '[' && s[st - 1] != '<')
      st--;
    if (st == i) continue;
    bool pathy = false;
    for (size_t k = st; k < i; k++)
      if (s[k] == '.' || s[k] == '/') pathy = true;
    if (!pathy) continue;
    copy(f->file, sizeof f->file, s + st, i - st);
    f->line = line;
    f->col = col;
    *ls = st;
    *le = (size_t)(e - s);
    found = true;
    i = (size_t)(e - s);
  }
  return found;
}

/* The native head: "func+0xOFF (module)", "func (inlined) (module)",
 * "?? (module+0xOFF)", "module+0xOFF", "func". The groups are taken from
 * the right, so a function name with parentheses of its own (a demangled
 * "std::function<void (int)>::operator()") stays whole. */
static void parse_head(const char *s, size_t n, a2a_frame *f) {
  char buf[1024];
  copy(buf, sizeof buf, s, n);
  size_t len = strlen(buf);
  bool had_module = false;
  for (int groups = 0; groups < 2 && len && buf[len - 1] == ')'; groups++) {
    int depth = 0;
    size_t o = len;
    while (o-- > 0) {
      if (buf[o] == ')') depth++;
      else if (buf[o] == '(' && --depth == 0) break;
    }
    if (depth != 0 || o == 0 || buf[o - 1] != ' ') break; /* not a trailing " (...)" group */
    size_t gl = len - o - 2;
    const char *g = buf + o + 1;
    if (gl == 7 && strncmp(g, "inlined", 7) == 0) {
      f->inlined = true;
    } else if (gl == 6 && strncmp(g, "python", 6) == 0) {
      f->python = true;
    } else if (!had_module && gl > 0) {
      char mod[256];
      copy(mod, sizeof mod, g, gl);
      char *plus = strstr(mod, "+0x");
      if (plus) *plus = 0;
      snprintf(f->module, sizeof f->module, "%s", mod);
      had_module = true;
    }
    len = o - 1;
    buf[len] = 0;
  }
  char func[256];
  copy(func, sizeof func, buf, len);
  /* a trailing "+0xHEX" offset */
  char *plus = NULL;
  for (char *q = strstr(func, "+0x"); q; q = strstr(q + 1, "+0x")) plus = q;
  if (plus && plus[3] && strspn(plus + 3, "0123456789abcdefABCDEF") == strlen(plus + 3)) {
    *plus = 0;
    if (!had_module && !f->inlined) { /* "module+0x1588": an unsymbolized site */
      snprintf(f->module, sizeof f->module, "%s", func);
      func[0] = 0;
    }
  }
  if (strcmp(func, "??") == 0) func[0] = 0;
  if (!f->func[0]) snprintf(f->func, sizeof f->func, "%s", func);
}

bool a2a_frame_parse(const char *s, a2a_frame *f) {
  memset(f, 0, sizeof *f);
  if (!s) return false;
  while (isspace((unsigned char)*s)) s++;
  static const char *py_prefix[] = {"[py] ", "[python] ", "py:", "python:"};
  for (size_t i = 0; i < sizeof py_prefix / sizeof *py_prefix; i++)
    if (strncmp(s, py_prefix[i], strlen(py_prefix[i])) == 0) {
      s += strlen(py_prefix[i]);
      f->python = true;
      while (isspace((unsigned char)*s)) s++;
      break;
    }
  size_t n = strlen(s);

  /* Traceback: File "path", line N, in func */
  if (strncmp(s, "File \"", 6) == 0) {
    const char *q = strchr(s + 6, '"');
    if (q) {
      copy(f->file, sizeof f->file, s + 6, (size_t)(q - s - 6));
      const char *l = strstr(q, "line ");
      int col;
      if (l && parse_linecol(l + 5, &f->line, &col)) {
        const char *in = strstr(l, ", in ");
        if (in) copy(f->func, sizeof f->func, in + 5, strlen(in + 5));
        f->python = f->python || is_py_file(f->file);
        return f->file[0] && f->line > 0;
      }
      f->file[0] = 0;
    }
  }

  /* "head at PATH:LINE" (the runtime's native form; also "func at f.py:3") */
  const char *at = NULL;
  for (const char *p = strstr(s, " at "); p; p = strstr(p + 1, " at ")) at = p;
  if (at && parse_whole_loc(at + 4, strlen(at + 4), f)) {
    parse_head(s, (size_t)(at - s), f);
    f->python = f->python || is_py_file(f->file);
    return true;
  }
  f->file[0] = 0;
  f->line = f->col = 0;

  /* "func (PATH:LINE)": a parenthesized location may have spaces in PATH */
  for (const char *o = strrchr(s, '('); o; o = o > s ? memrchr(s, '(', (size_t)(o - s)) : NULL) {
    const char *c = strchr(o, ')');
    if (!c || c == o + 1) continue;
    if (parse_whole_loc(o + 1, (size_t)(c - o - 1), f) && (strchr(f->file, '.') || strchr(f->file, '/'))) {
      parse_head(s, (size_t)(o - s), f);
      f->python = f->python || is_py_file(f->file);
      return true;
    }
    f->file[0] = 0;
    f->line = f->col = 0;
  }

  size_t ls, le;
  if (find_loc(s, &ls, &le, f)) {
    /* What is around the location names the function. */
    const char *after = s + le;
    while (*after == ' ' || *after == ')' || *after == ',') after++;
    if (ls > 0 && s[ls - 1] == '(') {
      /* "func (file.py:12)" */
      size_t hl = ls - 1;
      parse_head(s, hl, f);
    } else if (strncmp(after, "in ", 3) == 0) {
      /* "file.py:12 in func" */
      copy(f->func, sizeof f->func, after + 3, strlen(after + 3));
    } else if (*after == '(') {
      /* "file.py:12 (func)" */
      const char *c = strchr(after, ')');
      copy(f->func, sizeof f->func, after + 1, c ? (size_t)(c - after - 1) : strlen(after + 1));
    } else if (ls > 0) {
      parse_head(s, ls, f);
    }
    f->python = f->python || is_py_file(f->file);
    return true;
  }

  parse_head(s, n, f);
  return false;
}

int a2a_frame_first_located(const char *const *stack, int n, a2a_frame *f) {
  for (int i = 0; i < n; i++)
    if (a2a_frame_parse(stack[i], f)) return i;
  memset(f, 0, sizeof *f);
  return -1;
}

void a2a_frame_short(const a2a_frame *f, const char *raw, char *out, unsigned cap) {
  const char *base = f->file;
  if (f->file[0] && f->line) {
    if (f->func[0]) snprintf(out, cap, "%s at %s:%d", f->func, base, f->line);
    else snprintf(out, cap, "%s:%d", base, f->line);
  } else if (f->func[0] && f->module[0]) {
    snprintf(out, cap, "%s (%s)", f->func, f->module);
  } else {
    snprintf(out, cap, "%s", raw ? raw : "?");
  }
}
