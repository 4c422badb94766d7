/* util.c - allocation, string buffers, the arena and escaping (util.h). */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void oom(size_t n) {
  fprintf(stderr, "a2acheck: out of memory (allocating %zu bytes)\n", n);
  exit(70); /* EX_SOFTWARE */
}

void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) oom(n);
  return p;
}

void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) oom(n * size);
  return p;
}

void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q) oom(n);
  return q;
}

char *xstrdup(const char *s) { return xstrndup(s, strlen(s)); }

char *xstrndup(const char *s, size_t n) {
  char *p = xmalloc(n + 1);
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

char *xasprintf(const char *fmt, ...) {
  strbuf b = {0};
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(&b, fmt, ap);
  va_end(ap);
  if (!b.s) return xstrdup("");
  return b.s;
}

void xgrow(void *items_ptr, size_t *cap, size_t n, size_t sz) {
  void **items = items_ptr;
  if (n < *cap) return;
  size_t nc = *cap ? *cap : 8;
  while (nc <= n) {
    if (nc > SIZE_MAX / 2 / sz) oom(SIZE_MAX);
    nc *= 2;
  }
  *items = xrealloc(*items, nc * sz);
  *cap = nc;
}

/* ---- string buffer ---- */

static void sb_reserve(strbuf *b, size_t extra) {
  if (b->len + extra + 1 <= b->cap) return;
  size_t nc = b->cap ? b->cap : 256;
  while (nc < b->len + extra + 1) {
    if (nc > SIZE_MAX / 2) oom(SIZE_MAX);
    nc *= 2;
  }
  b->s = xrealloc(b->s, nc);
  b->cap = nc;
}

void sb_putn(strbuf *b, const char *s, size_t n) {
  sb_reserve(b, n);
  memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = 0;
}

void sb_puts(strbuf *b, const char *s) { sb_putn(b, s, strlen(s)); }

void sb_putc(strbuf *b, char c) { sb_putn(b, &c, 1); }

void sb_vprintf(strbuf *b, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  char tmp[256];
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  if (n < 0) {
    va_end(ap2);
    return;
  }
  if ((size_t)n < sizeof tmp) {
    sb_putn(b, tmp, (size_t)n);
  } else {
    sb_reserve(b, (size_t)n);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap2);
    b->len += (size_t)n;
  }
  va_end(ap2);
}

void sb_printf(strbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(b, fmt, ap);
  va_end(ap);
}

void sb_free(strbuf *b) {
  free(b->s);
  b->s = NULL;
  b->len = b->cap = 0;
}

const char *sb_str(const strbuf *b) { return b->s ? b->s : ""; }

/* ---- arena ---- */

struct arena_block {
  arena_block *next;
  size_t size, off;
  _Alignas(16) unsigned char data[];
};

void *arena_alloc(arena *a, size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (n == 0) n = 16;
  if (a->limit && (n > a->limit || a->used > a->limit - n)) return NULL;
  arena_block *b = a->head;
  if (!b || b->size - b->off < n) {
    size_t sz = n > 16384 ? n : 16384;
    b = xmalloc(sizeof *b + sz);
    b->size = sz;
    b->off = 0;
    b->next = a->head;
    a->head = b;
  }
  void *p = b->data + b->off;
  b->off += n;
  a->used += n;
  return p;
}

char *arena_strndup(arena *a, const char *s, size_t n) {
  char *p = arena_alloc(a, n + 1);
  if (!p) return NULL;
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

arena_mark arena_save(const arena *a) {
  arena_mark m = {a->head, a->head ? a->head->off : 0, a->used};
  return m;
}

void arena_restore(arena *a, arena_mark m) {
  while (a->head && a->head != m.head) {
    arena_block *n = a->head->next;
    free(a->head);
    a->head = n;
  }
  if (a->head) a->head->off = m.off;
  a->used = m.used;
}

void arena_free(arena *a) {
  arena_restore(a, (arena_mark){NULL, 0, 0});
}

/* ---- escaping ---- */

void sb_json_str(strbuf *b, const char *s) {
  static const char hex[] = "0123456789abcdef";
  if (!s) {
    sb_puts(b, "null");
    return;
  }
  sb_putc(b, '"');
  const char *run = s;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    const char *esc = NULL;
    char u[7];
    switch (*p) {
    case '"': esc = "\\\""; break;
    case '\\': esc = "\\\\"; break;
    case '\n': esc = "\\n"; break;
    case '\r': esc = "\\r"; break;
    case '\t': esc = "\\t"; break;
    default:
      if (*p < 0x20 || *p == 0x7f) {
        u[0] = '\\', u[1] = 'u', u[2] = '0', u[3] = '0', u[4] = hex[*p >> 4], u[5] = hex[*p & 15];
        u[6] = 0;
        esc = u;
      }
    }
    if (esc) {
      sb_putn(b, run, (size_t)((const char *)p - run));
      sb_puts(b, esc);
      run = (const char *)p + 1;
    }
  }
  sb_puts(b, run);
  sb_putc(b, '"');
}

void sb_xmln(strbuf *b, const char *s, size_t n) {
  const char *run = s, *end = s + n;
  for (const char *p = s; p < end; p++) {
    unsigned char c = (unsigned char)*p;
    const char *esc = NULL;
    switch (c) {
    case '&': esc = "&amp;"; break;
    case '<': esc = "&lt;"; break;
    case '>': esc = "&gt;"; break;
    case '"': esc = "&quot;"; break;
    case '\'': esc = "&#39;"; break;
    default:
      if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) esc = "";
    }
    if (esc) {
      sb_putn(b, run, (size_t)(p - run));
      sb_puts(b, esc);
      run = p + 1;
    }
  }
  sb_putn(b, run, (size_t)(end - run));
}

void sb_xml(strbuf *b, const char *s) {
  if (s) sb_xmln(b, s, strlen(s));
}

/* ---- misc ---- */

bool str_starts(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool str_ends(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

int write_file(const char *path, const char *data, size_t n) {
  int fd = strcmp(path, "-") == 0 ? STDOUT_FILENO
                                  : open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  size_t done = 0;
  while (done < n) {
    ssize_t w = write(fd, data + done, n - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      if (fd != STDOUT_FILENO) close(fd);
      errno = e;
      return -1;
    }
    done += (size_t)w;
  }
  if (fd != STDOUT_FILENO && close(fd) != 0) return -1;
  return 0;
}

void fmt_bytes(char *out, size_t cap, double bytes) {
  static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (bytes >= 1024 && u < 5) {
    bytes /= 1024;
    u++;
  }
  if (u == 0) snprintf(out, cap, "%.0f B", bytes);
  else if (bytes == (double)(long long)bytes) snprintf(out, cap, "%.0f %s", bytes, unit[u]);
  else snprintf(out, cap, "%.1f %s", bytes, unit[u]);
}

void fmt_ranks(strbuf *b, const int *ranks, size_t n) {
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j + 1 < n && ranks[j + 1] == ranks[j] + 1) j++;
    if (i) sb_putc(b, ',');
    if (j >= i + 2) sb_printf(b, "%d-%d", ranks[i], ranks[j]);
    else if (j == i + 1) sb_printf(b, "%d,%d", ranks[i], ranks[j]);
    else sb_printf(b, "%d", ranks[i]);
    i = j + 1;
  }
}
