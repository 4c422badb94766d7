/* rt_format.c - one finding as a JSON line (the .jsonl log) and as a text
 * block (the .log), into caller-provided buffers, without allocation.
 *
 * Pure: the unit test tests/unit/test_log_format.c compiles this file.
 *
 * JSON line layout (keys in this order; "comm" only when the finding names a
 * communicator; "truncated" only when something had to be dropped):
 *   {"check":..,"severity":..,"id":..,"rank":..|null,"host":..,"pid":..,
 *    "thread":..,"comm":{"name":..,"hash":"0x..","size":..,"rank":..},
 *    "message":..,"details":{..},"stack":["func+0xoff (module)",..],
 *    "time":"..Z","count":N<padding>}
 * "count" is last and its digits are padded with spaces to
 * A2A_RT_COUNT_WIDTH so that the exit path can overwrite the final count in
 * place (JSON allows whitespace after a value). details_json from an
 * analyzer is copied only if it is exactly one JSON object; anything else is
 * stored as {"invalid_details": "<the text>"} so the line stays valid.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "rt_internal.h"

size_t a2a_rt_puts(char *buf, size_t cap, size_t len, const char *s, bool *ovf) {
  if (len >= cap) {
    *ovf = true;
    return len;
  }
  size_t n = strlen(s);
  if (n >= cap - len) {
    n = cap - len - 1;
    *ovf = true;
  }
  memcpy(buf + len, s, n);
  buf[len + n] = '\0';
  return len + n;
}

size_t a2a_rt_printf(char *buf, size_t cap, size_t len, bool *ovf, const char *fmt,
                     ...) {
  if (len >= cap) {
    *ovf = true;
    return len;
  }
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + len, cap - len, fmt, ap);
  va_end(ap);
  if (n < 0) return len;
  if ((size_t)n >= cap - len) {
    *ovf = true;
    return cap - 1;
  }
  return len + (size_t)n;
}

size_t a2a_rt_put_jstr(char *buf, size_t cap, size_t len, const char *s, bool *ovf) {
  static const char hex[] = "0123456789abcdef";
  if (!s) return a2a_rt_puts(buf, cap, len, "null", ovf);
  len = a2a_rt_puts(buf, cap, len, "\"", ovf);
  for (const unsigned char *p = (const unsigned char *)s; *p && !*ovf; p++) {
    char e[8];
    switch (*p) {
    case '"': strcpy(e, "\\\""); break;
    case '\\': strcpy(e, "\\\\"); break;
    case '\n': strcpy(e, "\\n"); break;
    case '\r': strcpy(e, "\\r"); break;
    case '\t': strcpy(e, "\\t"); break;
    default:
      if (*p < 0x20) {
        e[0] = '\\', e[1] = 'u', e[2] = '0', e[3] = '0';
        e[4] = hex[*p >> 4], e[5] = hex[*p & 15], e[6] = '\0';
      } else {
        e[0] = (char)*p, e[1] = '\0';
      }
    }
    len = a2a_rt_puts(buf, cap, len, e, ovf);
  }
  return a2a_rt_puts(buf, cap, len, "\"", ovf);
}

const char *a2a_rt_severity_name(a2a_severity s) {
  switch (s) {
  case A2A_SEV_INFO: return "info";
  case A2A_SEV_WARNING: return "warning";
  case A2A_SEV_ERROR: return "error";
  }
  return "unknown";
}

void a2a_rt_time_iso(char *buf, size_t cap) {
  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  snprintf(buf, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
           tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
           ts.tv_nsec / 1000000);
}

/* ---- a minimal JSON validator (RFC 8259 syntax, depth-limited) ---- */

static const char *ws(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  return p;
}

static const char *value(const char *p, int depth);

static const char *string(const char *p) {
  if (*p++ != '"') return NULL;
  for (;;) {
    unsigned char c = (unsigned char)*p++;
    if (c == '"') return p;
    if (c < 0x20) return NULL;   /* includes the terminating NUL */
    if (c == '\\') {
      c = (unsigned char)*p++;
      if (c == 'u') {
        for (int i = 0; i < 4; i++, p++) {
          char h = *p;
          if (!((h >= '0' && h <= '9') || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F')))
            return NULL;
        }
      } else if (!strchr("\"\\/bfnrt", c) || c == '\0') {
        return NULL;
      }
    }
  }
}

static const char *number(const char *p) {
  if (*p == '-') p++;
  if (*p == '0') p++;
  else if (*p >= '1' && *p <= '9') while (*p >= '0' && *p <= '9') p++;
  else return NULL;
  if (*p == '.') {
    p++;
    if (!(*p >= '0' && *p <= '9')) return NULL;
    while (*p >= '0' && *p <= '9') p++;
  }
  if (*p == 'e' || *p == 'E') {
    p++;
    if (*p == '+' || *p == '-') p++;
    if (!(*p >= '0' && *p <= '9')) return NULL;
    while (*p >= '0' && *p <= '9') p++;
  }
  return p;
}

static const char *object(const char *p, int depth) {
  if (depth > 32 || *p++ != '{') return NULL;
  p = ws(p);
  if (*p == '}') return p + 1;
  for (;;) {
    p = string(ws(p));
    if (!p) return NULL;
    p = ws(p);
    if (*p++ != ':') return NULL;
    p = value(ws(p), depth);
    if (!p) return NULL;
    p = ws(p);
    if (*p == '}') return p + 1;
    if (*p++ != ',') return NULL;
  }
}

static const char *array(const char *p, int depth) {
  if (depth > 32 || *p++ != '[') return NULL;
  p = ws(p);
  if (*p == ']') return p + 1;
  for (;;) {
    p = value(ws(p), depth);
    if (!p) return NULL;
    p = ws(p);
    if (*p == ']') return p + 1;
    if (*p++ != ',') return NULL;
  }
}

static const char *value(const char *p, int depth) {
  switch (*p) {
  case '{': return object(p, depth + 1);
  case '[': return array(p, depth + 1);
  case '"': return string(p);
  case 't': return strncmp(p, "true", 4) == 0 ? p + 4 : NULL;
  case 'f': return strncmp(p, "false", 5) == 0 ? p + 5 : NULL;
  case 'n': return strncmp(p, "null", 4) == 0 ? p + 4 : NULL;
  default: return number(p);
  }
}

bool a2a_rt_json_is_object(const char *s) {
  if (!s) return false;
  const char *p = object(ws(s), 0);
  return p && *ws(p) == '\0';
}

/* Copy a validated JSON object, turning the whitespace between tokens into
 * single spaces so a pretty-printed object still fits on one line (newlines
 * cannot occur inside a valid JSON string). */
static size_t put_object_oneline(char *buf, size_t cap, size_t len, const char *s,
                                 bool *ovf) {
  char tmp[2] = {0, 0};
  for (const char *p = ws(s); *p && !*ovf; p++) {
    tmp[0] = (*p == '\n' || *p == '\r' || *p == '\t') ? ' ' : *p;
    len = a2a_rt_puts(buf, cap, len, tmp, ovf);
  }
  while (len > 0 && buf[len - 1] == ' ') buf[--len] = '\0';
  return len;
}

/* Everything up to and including "message"; returns the length. */
static size_t json_head(const a2a_rt_record *rec, char *buf, size_t cap, bool *ovf) {
  size_t len = 0;
  len = a2a_rt_puts(buf, cap, len, "{\"check\":", ovf);
  len = a2a_rt_put_jstr(buf, cap, len, rec->check, ovf);
  len = a2a_rt_printf(buf, cap, len, ovf, ",\"severity\":\"%s\",\"id\":%lu,\"rank\":",
                      a2a_rt_severity_name(rec->severity), rec->id);
  if (rec->rank >= 0) len = a2a_rt_printf(buf, cap, len, ovf, "%d", rec->rank);
  else len = a2a_rt_puts(buf, cap, len, "null", ovf);
  len = a2a_rt_puts(buf, cap, len, ",\"host\":", ovf);
  len = a2a_rt_put_jstr(buf, cap, len, rec->host, ovf);
  len = a2a_rt_printf(buf, cap, len, ovf, ",\"pid\":%d,\"thread\":%u", rec->pid,
                      (unsigned)rec->thread);
  if (rec->comm) {
    len = a2a_rt_puts(buf, cap, len, ",\"comm\":{\"name\":", ovf);
    len = a2a_rt_put_jstr(buf, cap, len, rec->comm->name, ovf);
    len = a2a_rt_printf(buf, cap, len, ovf,
                        ",\"hash\":\"0x%016llx\",\"size\":%d,\"rank\":%d}",
                        (unsigned long long)a2a_comm_ident(rec->comm), rec->comm->nranks,
                        rec->comm->rank);
  }
  len = a2a_rt_puts(buf, cap, len, ",\"message\":", ovf);
  len = a2a_rt_put_jstr(buf, cap, len, rec->message ? rec->message : "", ovf);
  return len;
}

size_t a2a_rt_format_json(const a2a_rt_record *rec, char *buf, size_t cap,
                          size_t *count_off) {
  /* Try with everything, then without details, then without stack, then
   * with the message cut: each attempt starts over from the head. */
  for (int attempt = 0; attempt < 4; attempt++) {
    bool ovf = false;
    size_t len;
    if (attempt < 3) {
      len = json_head(rec, buf, cap, &ovf);
    } else {
      a2a_rt_record r = *rec;
      r.message = "(message too long for the log line)";
      len = json_head(&r, buf, cap, &ovf);
    }
    if (attempt == 0) {
      len = a2a_rt_puts(buf, cap, len, ",\"details\":", &ovf);
      if (!rec->details_json) {
        len = a2a_rt_puts(buf, cap, len, "{}", &ovf);
      } else if (a2a_rt_json_is_object(rec->details_json)) {
        len = put_object_oneline(buf, cap, len, rec->details_json, &ovf);
      } else {
        len = a2a_rt_puts(buf, cap, len, "{\"invalid_details\":", &ovf);
        len = a2a_rt_put_jstr(buf, cap, len, rec->details_json, &ovf);
        len = a2a_rt_puts(buf, cap, len, "}", &ovf);
      }
    }
    len = a2a_rt_puts(buf, cap, len, ",\"stack\":[", &ovf);
    for (int i = 0; attempt < 2 && i < rec->nframes; i++) {
      if (i) len = a2a_rt_puts(buf, cap, len, ",", &ovf);
      len = a2a_rt_put_jstr(buf, cap, len, rec->frames[i], &ovf);
    }
    len = a2a_rt_puts(buf, cap, len, "]", &ovf);
    if (attempt > 0) len = a2a_rt_puts(buf, cap, len, ",\"truncated\":true", &ovf);
    len = a2a_rt_puts(buf, cap, len, ",\"time\":", &ovf);
    len = a2a_rt_put_jstr(buf, cap, len, rec->time_iso ? rec->time_iso : "", &ovf);
    len = a2a_rt_puts(buf, cap, len, ",\"count\":", &ovf);
    size_t off = len;
    len = a2a_rt_printf(buf, cap, len, &ovf, "%-*llu}\n", A2A_RT_COUNT_WIDTH,
                        rec->count);
    if (!ovf) {
      if (count_off) *count_off = off;
      return len;
    }
  }
  if (cap) buf[0] = '\0';
  return 0;
}

size_t a2a_rt_format_text(const a2a_rt_record *rec, char *buf, size_t cap) {
  size_t len = 0;
  bool ovf = false;
  char rank[16];
  if (rec->rank >= 0) snprintf(rank, sizeof rank, "%d", rec->rank);
  else snprintf(rank, sizeof rank, "?");
  len = a2a_rt_printf(buf, cap, len, &ovf, "[%s] %s %s  (finding #%lu, rank %s, thread %u)\n",
                      rec->time_iso ? rec->time_iso : "", a2a_rt_severity_name(rec->severity),
                      rec->check, rec->id, rank, (unsigned)rec->thread);
  len = a2a_rt_printf(buf, cap, len, &ovf, "  %s\n", rec->message ? rec->message : "");
  if (rec->comm)
    len = a2a_rt_printf(buf, cap, len, &ovf, "  communicator: %s, size %d, rank %d\n",
                        rec->comm->name, rec->comm->nranks, rec->comm->rank);
  if (rec->details_json)
    len = a2a_rt_printf(buf, cap, len, &ovf, "  details: %s\n", rec->details_json);
  if (rec->nframes > 0) len = a2a_rt_puts(buf, cap, len, "  stack:\n", &ovf);
  for (int i = 0; i < rec->nframes; i++)
    len = a2a_rt_printf(buf, cap, len, &ovf, "    #%d %s\n", i, rec->frames[i]);
  if (ovf && cap > 16) {
    /* Keep the block well-formed: end with a marker line. */
    len = cap - 16;
    memcpy(buf + len, "\n  [truncated]\n", 16);
    len += 15;
  }
  return len;
}
