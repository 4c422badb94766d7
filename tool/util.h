/* util.h - small helpers the a2acheck command shares: a growable string
 * buffer, a bump arena with a byte limit, checked allocation, and text
 * escaping for the output formats (JSON, XML/HTML).
 *
 * The command is an ordinary short-lived program: allocation failure ends it
 * with a message (xmalloc), unlike the preloaded library, which never
 * allocates on hot paths and never exits on its own account.
 */
#ifndef A2A_TOOL_UTIL_H
#define A2A_TOOL_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* ---- allocation ---------------------------------------------------- */

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Grow *items (each of size sz) so that index n fits; *cap is updated. */
void xgrow(void *items_ptr, size_t *cap, size_t n, size_t sz);

/* ---- string buffer ------------------------------------------------- */

typedef struct strbuf {
  char *s;      /* always NUL-terminated once anything was added */
  size_t len, cap;
} strbuf;

void sb_putn(strbuf *b, const char *s, size_t n);
void sb_puts(strbuf *b, const char *s);
void sb_putc(strbuf *b, char c);
void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_vprintf(strbuf *b, const char *fmt, va_list ap);
void sb_free(strbuf *b);
/* The contents ("" when empty); the buffer keeps ownership. */
const char *sb_str(const strbuf *b);

/* ---- arena --------------------------------------------------------- */

/* A bump allocator over chained blocks. limit (bytes, 0 = none) bounds the
 * total: arena_alloc returns NULL past it, which the JSON parser turns into
 * an error instead of growing without bound on hostile input. */
typedef struct arena_block arena_block;
typedef struct arena {
  arena_block *head;
  size_t used;       /* bytes handed out, over all blocks */
  size_t limit;
} arena;

typedef struct arena_mark {
  arena_block *head;
  size_t off, used;
} arena_mark;

void *arena_alloc(arena *a, size_t n);          /* 16-byte aligned, or NULL */
char *arena_strndup(arena *a, const char *s, size_t n);
arena_mark arena_save(const arena *a);
void arena_restore(arena *a, arena_mark m);     /* frees blocks added since */
void arena_free(arena *a);

/* ---- escaping ------------------------------------------------------ */

/* A JSON string literal (with quotes). s is UTF-8; control characters are
 * escaped as \u00XX. NULL writes null. */
void sb_json_str(strbuf *b, const char *s);
/* XML/HTML text or attribute content: & < > " ' escaped; characters XML 1.0
 * does not allow (C0 controls but tab, newline, carriage return) dropped. */
void sb_xml(strbuf *b, const char *s);
void sb_xmln(strbuf *b, const char *s, size_t n);

/* ---- misc ---------------------------------------------------------- */

bool str_starts(const char *s, const char *prefix);
bool str_ends(const char *s, const char *suffix);
/* Write the whole buffer to path ("-" = stdout). 0 or -1 (errno set). */
int write_file(const char *path, const char *data, size_t n);
/* "1.5 KiB", "768 B" (IEC units, like the runtime's messages). */
void fmt_bytes(char *out, size_t cap, double bytes);
/* Compress sorted distinct ranks into "0-3,5,7". */
void fmt_ranks(strbuf *b, const int *ranks, size_t n);

#endif /* A2A_TOOL_UTIL_H */
