/* json.c - the strict, bounded JSON parser and writer (json.h). */
#include "json.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct parser {
  const unsigned char *s, *p, *end;
  arena *a;
  unsigned depth, max_depth;
  size_t nvalues, max_values;
  char *err;
  size_t errcap;
  bool failed;
} parser;

static void fail(parser *ps, const char *what) {
  if (ps->failed) return;
  ps->failed = true;
  if (ps->err && ps->errcap)
    snprintf(ps->err, ps->errcap, "offset %zu: %s", (size_t)(ps->p - ps->s), what);
}

static void *alloc(parser *ps, size_t n) {
  void *p = arena_alloc(ps->a, n);
  if (!p) fail(ps, "memory limit reached");
  return p;
}

static void skip_ws(parser *ps) {
  while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
    ps->p++;
}

static bool lit(parser *ps, const char *word) {
  size_t n = strlen(word);
  if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0) return false;
  ps->p += n;
  return true;
}

/* ---- strings ---- */

static int hexval(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static bool hex4(const unsigned char *p, const unsigned char *end, unsigned *out) {
  if (end - p < 4) return false;
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    int h = hexval(p[i]);
    if (h < 0) return false;
    v = v << 4 | (unsigned)h;
  }
  *out = v;
  return true;
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if it is not one. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end) {
  unsigned char c = p[0];
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if ((size_t)(end - p) < n) return 0;
  if (p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < n; i++)
    if (p[i] < 0x80 || p[i] > 0xBF) return 0;
  return n;
}

static size_t put_cp(unsigned char *out, unsigned cp) {
  if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) cp = 0xFFFD;
  unsigned char b[4];
  size_t n;
  if (cp < 0x80) b[0] = (unsigned char)cp, n = 1;
  else if (cp < 0x800) b[0] = (unsigned char)(0xC0 | cp >> 6), b[1] = (unsigned char)(0x80 | (cp & 0x3F)), n = 2;
  else if (cp < 0x10000)
    b[0] = (unsigned char)(0xE0 | cp >> 12), b[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F)),
    b[2] = (unsigned char)(0x80 | (cp & 0x3F)), n = 3;
  else
    b[0] = (unsigned char)(0xF0 | cp >> 18), b[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F)),
    b[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F)), b[3] = (unsigned char)(0x80 | (cp & 0x3F)), n = 4;
  if (out) memcpy(out, b, n);
  return n;
}

/* Decode the string body starting after the opening quote. With out NULL,
 * only validates and returns the decoded length; *endp gets the position
 * after the closing quote. Returns (size_t)-1 on a syntax error. */
static size_t decode_string(parser *ps, const unsigned char *p, unsigned char *out,
                            const unsigned char **endp) {
  size_t n = 0;
  const unsigned char *end = ps->end;
  while (p < end) {
    unsigned char c = *p;
    if (c == '"') {
      *endp = p + 1;
      return n;
    }
    if (c < 0x20) {
      ps->p = p;
      fail(ps, "unescaped control character in string");
      return (size_t)-1;
    }
    if (c == '\\') {
      if (end - p < 2) break;
      unsigned char e = p[1];
      unsigned char one = 0;
      switch (e) {
      case '"': one = '"'; break;
      case '\\': one = '\\'; break;
      case '/': one = '/'; break;
      case 'b': one = '\b'; break;
      case 'f': one = '\f'; break;
      case 'n': one = '\n'; break;
      case 'r': one = '\r'; break;
      case 't': one = '\t'; break;
      case 'u': {
        unsigned cp;
        if (!hex4(p + 2, end, &cp)) {
          ps->p = p;
          fail(ps, "bad \\u escape");
          return (size_t)-1;
        }
        p += 6;
        if (cp >= 0xD800 && cp <= 0xDBFF && end - p >= 6 && p[0] == '\\' && p[1] == 'u') {
          unsigned lo;
          if (hex4(p + 2, end, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            p += 6;
          }
        }
        size_t k = put_cp(out ? out + n : NULL, cp);
        n += k;
        continue;
      }
      default:
        ps->p = p;
        fail(ps, "bad escape in string");
        return (size_t)-1;
      }
      if (out) out[n] = one;
      n++;
      p += 2;
      continue;
    }
    size_t k = utf8_len(p, end);
    if (k == 0) {
      n += put_cp(out ? out + n : NULL, 0xFFFD);
      p++;
    } else {
      if (out) memcpy(out + n, p, k);
      n += k;
      p += k;
    }
  }
  ps->p = end;
  fail(ps, "unterminated string");
  return (size_t)-1;
}

static const char *parse_string(parser *ps, size_t *lenp) {
  /* ps->p at the opening quote */
  const unsigned char *body = ps->p + 1, *after = NULL;
  size_t n = decode_string(ps, body, NULL, &after);
  if (n == (size_t)-1) return NULL;
  unsigned char *out = alloc(ps, n + 1);
  if (!out) return NULL;
  decode_string(ps, body, out, &after);
  out[n] = 0;
  ps->p = after;
  if (lenp) *lenp = n;
  return (const char *)out;
}

/* ---- numbers ---- */

static bool parse_number(parser *ps, jval *v) {
  const unsigned char *p = ps->p, *start = p, *end = ps->end;
  bool integral = true;
  if (p < end && *p == '-') p++;
  if (p >= end) goto bad;
  if (*p == '0') {
    p++;
  } else if (*p >= '1' && *p <= '9') {
    while (p < end && *p >= '0' && *p <= '9') p++;
  } else {
    goto bad;
  }
  if (p < end && *p == '.') {
    integral = false;
    p++;
    if (p >= end || *p < '0' || *p > '9') goto bad;
    while (p < end && *p >= '0' && *p <= '9') p++;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    integral = false;
    p++;
    if (p < end && (*p == '+' || *p == '-')) p++;
    if (p >= end || *p < '0' || *p > '9') goto bad;
    while (p < end && *p >= '0' && *p <= '9') p++;
  }
  size_t n = (size_t)(p - start);
  char buf[512];
  if (n >= sizeof buf) {
    fail(ps, "number too long");
    return false;
  }
  memcpy(buf, start, n);
  buf[n] = 0;
  v->kind = J_NUM;
  v->u.num.d = strtod(buf, NULL);
  v->u.num.is_int = false;
  if (integral) {
    const char *q = buf;
    bool neg = *q == '-';
    if (neg) q++;
    unsigned long long acc = 0;
    bool ovf = false;
    for (; *q; q++) {
      unsigned d = (unsigned)(*q - '0');
      if (acc > (ULLONG_MAX - d) / 10) {
        ovf = true;
        break;
      }
      acc = acc * 10 + d;
    }
    if (!ovf && (neg ? acc <= (unsigned long long)LLONG_MAX + 1 : acc <= (unsigned long long)LLONG_MAX)) {
      v->u.num.is_int = true;
      v->u.num.i = neg ? (long long)(0 - acc) : (long long)acc;
    }
  }
  ps->p = p;
  return true;
bad:
  ps->p = p;
  fail(ps, "malformed number");
  return false;
}

/* ---- values ---- */

typedef struct vnode {
  jval *v;
  const char *key;
  struct vnode *next;
} vnode;

static jval *parse_value(parser *ps);

static jval *new_val(parser *ps, jkind k) {
  if (++ps->nvalues > ps->max_values) {
    fail(ps, "too many values");
    return NULL;
  }
  jval *v = alloc(ps, sizeof *v);
  if (!v) return NULL;
  memset(v, 0, sizeof *v);
  v->kind = k;
  return v;
}

static jval *parse_container(parser *ps, bool object) {
  if (++ps->depth > ps->max_depth) {
    fail(ps, "nesting too deep");
    return NULL;
  }
  ps->p++; /* [ or { */
  jval *v = new_val(ps, object ? J_OBJ : J_ARR);
  if (!v) return NULL;
  vnode *head = NULL, **tail = &head;
  size_t n = 0;
  skip_ws(ps);
  char close = object ? '}' : ']';
  if (ps->p < ps->end && *ps->p == close) {
    ps->p++;
  } else {
    for (;;) {
      skip_ws(ps);
      const char *key = NULL;
      if (object) {
        if (ps->p >= ps->end || *ps->p != '"') {
          fail(ps, "expected a string key");
          return NULL;
        }
        key = parse_string(ps, NULL);
        if (!key) return NULL;
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != ':') {
          fail(ps, "expected ':'");
          return NULL;
        }
        ps->p++;
      }
      jval *item = parse_value(ps);
      if (!item) return NULL;
      vnode *nd = alloc(ps, sizeof *nd);
      if (!nd) return NULL;
      nd->v = item;
      nd->key = key;
      nd->next = NULL;
      *tail = nd;
      tail = &nd->next;
      n++;
      skip_ws(ps);
      if (ps->p < ps->end && *ps->p == ',') {
        ps->p++;
        continue;
      }
      if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        break;
      }
      fail(ps, object ? "expected ',' or '}'" : "expected ',' or ']'");
      return NULL;
    }
  }
  ps->depth--;
  if (object) {
    jmember *m = n ? alloc(ps, n * sizeof *m) : NULL;
    if (n && !m) return NULL;
    size_t i = 0;
    for (vnode *nd = head; nd; nd = nd->next, i++) m[i].key = nd->key, m[i].val = nd->v;
    v->u.obj.m = m;
    v->u.obj.n = n;
  } else {
    jval **a = n ? alloc(ps, n * sizeof *a) : NULL;
    if (n && !a) return NULL;
    size_t i = 0;
    for (vnode *nd = head; nd; nd = nd->next, i++) a[i] = nd->v;
    v->u.arr.v = a;
    v->u.arr.n = n;
  }
  return v;
}

static jval *parse_value(parser *ps) {
  skip_ws(ps);
  if (ps->failed) return NULL;
  if (ps->p >= ps->end) {
    fail(ps, "unexpected end of input");
    return NULL;
  }
  jval *v;
  switch (*ps->p) {
  case '{': return parse_container(ps, true);
  case '[': return parse_container(ps, false);
  case '"': {
    v = new_val(ps, J_STR);
    if (!v) return NULL;
    size_t n;
    const char *s = parse_string(ps, &n);
    if (!s) return NULL;
    v->u.str.s = s;
    v->u.str.len = n;
    return v;
  }
  case 't':
    if (!lit(ps, "true")) break;
    return new_val(ps, J_TRUE);
  case 'f':
    if (!lit(ps, "false")) break;
    return new_val(ps, J_FALSE);
  case 'n':
    if (!lit(ps, "null")) break;
    return new_val(ps, J_NULL);
  default:
    if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9')) {
      v = new_val(ps, J_NUM);
      if (!v || !parse_number(ps, v)) return NULL;
      return v;
    }
  }
  fail(ps, "unexpected character");
  return NULL;
}

int json_parse(const char *text, size_t len, arena *a, const json_limits *lim, jval **out,
               char *err, size_t errcap) {
  parser ps = {.s = (const unsigned char *)text, .p = (const unsigned char *)text,
               .end = (const unsigned char *)text + len, .a = a,
               .max_depth = lim && lim->max_depth ? lim->max_depth : 64,
               .max_values = lim && lim->max_values ? lim->max_values : (size_t)1 << 20,
               .err = err, .errcap = errcap};
  if (err && errcap) err[0] = 0;
  *out = NULL;
  jval *v = parse_value(&ps);
  if (!v) {
    fail(&ps, "invalid JSON");
    return -1;
  }
  skip_ws(&ps);
  if (ps.p != ps.end) {
    fail(&ps, "trailing characters after the value");
    return -1;
  }
  *out = v;
  return 0;
}

/* ---- lookups ---- */

const jval *json_get(const jval *obj, const char *key) {
  if (!obj || obj->kind != J_OBJ) return NULL;
  for (size_t i = 0; i < obj->u.obj.n; i++)
    if (strcmp(obj->u.obj.m[i].key, key) == 0) return obj->u.obj.m[i].val;
  return NULL;
}

const char *json_get_str(const jval *obj, const char *key) {
  const jval *v = json_get(obj, key);
  return v && v->kind == J_STR ? v->u.str.s : NULL;
}

bool json_as_int(const jval *v, long long *out) {
  if (!v || v->kind != J_NUM || !v->u.num.is_int) return false;
  *out = v->u.num.i;
  return true;
}

bool json_as_num(const jval *v, double *out) {
  if (!v || v->kind != J_NUM) return false;
  *out = v->u.num.d;
  return true;
}

bool json_get_int(const jval *obj, const char *key, long long *out) {
  return json_as_int(json_get(obj, key), out);
}

bool json_get_num(const jval *obj, const char *key, double *out) {
  return json_as_num(json_get(obj, key), out);
}

bool json_get_bool(const jval *obj, const char *key, bool *out) {
  const jval *v = json_get(obj, key);
  if (!v || (v->kind != J_TRUE && v->kind != J_FALSE)) return false;
  *out = v->kind == J_TRUE;
  return true;
}

const jval *json_get_arr(const jval *obj, const char *key) {
  const jval *v = json_get(obj, key);
  return v && v->kind == J_ARR ? v : NULL;
}

const jval *json_get_obj(const jval *obj, const char *key) {
  const jval *v = json_get(obj, key);
  return v && v->kind == J_OBJ ? v : NULL;
}

/* ---- writer ---- */

void json_write_num(strbuf *b, double d) {
  if (!isfinite(d)) {
    sb_puts(b, "null");
    return;
  }
  char buf[40];
  snprintf(buf, sizeof buf, "%.15g", d);
  if (strtod(buf, NULL) != d) snprintf(buf, sizeof buf, "%.17g", d);
  sb_puts(b, buf);
}

void json_write(strbuf *b, const jval *v) {
  if (!v) {
    sb_puts(b, "null");
    return;
  }
  switch (v->kind) {
  case J_NULL: sb_puts(b, "null"); break;
  case J_TRUE: sb_puts(b, "true"); break;
  case J_FALSE: sb_puts(b, "false"); break;
  case J_NUM:
    if (v->u.num.is_int) sb_printf(b, "%lld", v->u.num.i);
    else json_write_num(b, v->u.num.d);
    break;
  case J_STR: sb_json_str(b, v->u.str.s); break;
  case J_ARR:
    sb_putc(b, '[');
    for (size_t i = 0; i < v->u.arr.n; i++) {
      if (i) sb_putc(b, ',');
      json_write(b, v->u.arr.v[i]);
    }
    sb_putc(b, ']');
    break;
  case J_OBJ:
    sb_putc(b, '{');
    for (size_t i = 0; i < v->u.obj.n; i++) {
      if (i) sb_putc(b, ',');
      sb_json_str(b, v->u.obj.m[i].key);
      sb_putc(b, ':');
      json_write(b, v->u.obj.m[i].val);
    }
    sb_putc(b, '}');
    break;
  }
}
