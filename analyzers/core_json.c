/* core_json.c - a JSON writer into a fixed buffer, for findings' details.
 * No allocation; truncation keeps the output NUL-terminated and sets
 * j->overflow (the closing brackets of an overflowed document are still
 * written when there is room: the writer reserves space for them). */
#include <stdio.h>
#include <string.h>

#include "a2a_core.h"

#define JSON_RESERVE 20 /* room kept for closing brackets */

static void put(a2a_json *j, const char *s, size_t n) {
  size_t room = j->cap > j->len + JSON_RESERVE ? j->cap - j->len - JSON_RESERVE : 0;
  if (n > room) { n = room; j->overflow = true; }
  memcpy(j->buf + j->len, s, n);
  j->len += n;
  j->buf[j->len] = '\0';
}

static void put_closing(a2a_json *j, char c) {
  if (j->len + 1 < j->cap) { j->buf[j->len++] = c; j->buf[j->len] = '\0'; }
  else j->overflow = true;
}

void a2a_json_init(a2a_json *j, char *buf, size_t cap) {
  memset(j, 0, sizeof *j);
  j->buf = buf;
  j->cap = cap;
  if (cap) buf[0] = '\0';
}

size_t a2a_json_escape(char *buf, size_t cap, size_t len, const char *s) {
  static const char hex[] = "0123456789abcdef";
  if (!s) s = "";
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    char tmp[7];
    size_t n = 0;
    if (c == '"' || c == '\\') { tmp[0] = '\\'; tmp[1] = (char)c; n = 2; }
    else if (c == '\n') { tmp[0] = '\\'; tmp[1] = 'n'; n = 2; }
    else if (c == '\t') { tmp[0] = '\\'; tmp[1] = 't'; n = 2; }
    else if (c == '\r') { tmp[0] = '\\'; tmp[1] = 'r'; n = 2; }
    else if (c < 0x20) {
      memcpy(tmp, "\\u00", 4); tmp[4] = hex[c >> 4]; tmp[5] = hex[c & 15]; n = 6;
    } else { tmp[0] = (char)c; n = 1; }
    if (len + n + 1 > cap) break;
    memcpy(buf + len, tmp, n);
    len += n;
  }
  if (len < cap) buf[len] = '\0';
  return len;
}

static void key(a2a_json *j, const char *k) {
  if (j->depth > 0 && j->depth < 16) {
    if (j->need_comma[j->depth]) put(j, ",", 1);
    j->need_comma[j->depth] = true;
  }
  if (k) {
    put(j, "\"", 1);
    size_t room = j->cap > j->len + JSON_RESERVE ? j->cap - JSON_RESERVE : j->len;
    size_t nl = a2a_json_escape(j->buf, room, j->len, k);
    if (nl - j->len < strlen(k)) j->overflow = true;
    j->len = nl;
    put(j, "\":", 2);
  }
}

static void open_(a2a_json *j, const char *k, char c) {
  key(j, k);
  put(j, &c, 1);
  if (j->depth < 15) j->depth++;
  j->need_comma[j->depth] = false;
}

void a2a_json_obj_begin(a2a_json *j, const char *k) { open_(j, k, '{'); }
void a2a_json_arr_begin(a2a_json *j, const char *k) { open_(j, k, '['); }
void a2a_json_obj_end(a2a_json *j) { if (j->depth > 0) j->depth--; put_closing(j, '}'); }
void a2a_json_arr_end(a2a_json *j) { if (j->depth > 0) j->depth--; put_closing(j, ']'); }

void a2a_json_str(a2a_json *j, const char *k, const char *v) {
  key(j, k);
  if (!v) { put(j, "null", 4); return; }
  put(j, "\"", 1);
  size_t room = j->cap > j->len + JSON_RESERVE ? j->cap - JSON_RESERVE : j->len;
  size_t nl = a2a_json_escape(j->buf, room, j->len, v);
  if (nl - j->len < strlen(v)) j->overflow = true;
  j->len = nl;
  put(j, "\"", 1);
}

static void raw(a2a_json *j, const char *k, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#include <stdarg.h>
static void raw(a2a_json *j, const char *k, const char *fmt, ...) {
  char tmp[64];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  key(j, k);
  put(j, tmp, n < 0 ? 0 : (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

void a2a_json_int(a2a_json *j, const char *k, long long v) { raw(j, k, "%lld", v); }
void a2a_json_uint(a2a_json *j, const char *k, unsigned long long v) { raw(j, k, "%llu", v); }
void a2a_json_bool(a2a_json *j, const char *k, bool v) { raw(j, k, "%s", v ? "true" : "false"); }
void a2a_json_null(a2a_json *j, const char *k) { raw(j, k, "%s", "null"); }
void a2a_json_ptr(a2a_json *j, const char *k, const void *p) {
  raw(j, k, "\"0x%llx\"", (unsigned long long)(uintptr_t)p);
}
void a2a_json_dbl(a2a_json *j, const char *k, double v) {
  if (v != v || v > 1e300 || v < -1e300) raw(j, k, "null"); /* NaN/inf are not JSON */
  else raw(j, k, "%.6g", v);
}
