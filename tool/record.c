/* record.c - one JSONL line -> a2a_record (record.h). Pure: no globals. */
#include "record.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

int a2a_severity_parse(const char *s) {
  if (!s) return -1;
  if (strcmp(s, "error") == 0) return SEV_ERROR;
  if (strcmp(s, "warning") == 0) return SEV_WARNING;
  if (strcmp(s, "info") == 0) return SEV_INFO;
  return -1;
}

const char *a2a_severity_name(int sev) {
  return sev == SEV_ERROR ? "error" : sev == SEV_WARNING ? "warning" : "info";
}

static int digits(const char *s, int n) {
  int v = 0;
  for (int i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (no timegm: it is
 * not C11, and this stays pure). */
static long long days_from_civil(int y, int m, int d) {
  y -= m <= 2;
  long long era = (y >= 0 ? y : y - 399) / 400;
  long long yoe = y - era * 400;
  long long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

double a2a_parse_time_ms(const char *s) {
  if (!s || strlen(s) < 20) return -1;
  int Y = digits(s, 4), M = digits(s + 5, 2), D = digits(s + 8, 2);
  int h = digits(s + 11, 2), mi = digits(s + 14, 2), se = digits(s + 17, 2);
  if (Y < 0 || M < 1 || M > 12 || D < 1 || D > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 ||
      se < 0 || se > 60 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
      s[16] != ':')
    return -1;
  const char *p = s + 19;
  double frac = 0, scale = 1;
  if (*p == '.') {
    p++;
    int nd = 0;
    while (*p >= '0' && *p <= '9' && nd < 9) {
      frac = frac * 10 + (*p - '0');
      scale *= 10;
      p++;
      nd++;
    }
    if (nd == 0) return -1;
  }
  if (strcmp(p, "Z") != 0) return -1;
  long long days = days_from_civil(Y, M, D);
  double secs = (double)days * 86400.0 + h * 3600.0 + mi * 60.0 + se;
  return secs * 1000.0 + frac / scale * 1000.0;
}

static bool check_name_ok(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 128) return false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
          c == '_' || c == '-'))
      return false;
  }
  return true;
}

#define SCHEMA(...)                             \
  do {                                          \
    if (why && whycap) snprintf(why, whycap, __VA_ARGS__); \
    return A2A_REC_SCHEMA;                      \
  } while (0)

/* An optional integer member: absent -> dflt; present and not an integer
 * -> false. */
static bool opt_int(const jval *o, const char *key, long long dflt, long long *out) {
  const jval *v = json_get(o, key);
  if (!v) {
    *out = dflt;
    return true;
  }
  return json_as_int(v, out);
}

static bool opt_str(const jval *o, const char *key, const char **out) {
  const jval *v = json_get(o, key);
  *out = NULL;
  if (!v) return true;
  if (v->kind != J_STR) return false;
  *out = v->u.str.s;
  return true;
}

static a2a_record_status parse(const char *line, size_t len, arena *a, a2a_record *out,
                               char *why, size_t whycap) {
  memset(out, 0, sizeof *out);
  if (why && whycap) why[0] = 0;
  while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
  size_t i = 0;
  while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r' || line[i] == '\n')) i++;
  if (i == len) return A2A_REC_BLANK;
  if (len > A2A_RECORD_MAX_LINE) {
    if (why && whycap) snprintf(why, whycap, "line longer than %zu bytes", A2A_RECORD_MAX_LINE);
    return A2A_REC_TOO_LONG;
  }
  jval *root;
  json_limits lim = {.max_depth = 64, .max_values = (size_t)1 << 18};
  if (json_parse(line, len, a, &lim, &root, why, whycap) != 0) return A2A_REC_SYNTAX;
  if (root->kind != J_OBJ) SCHEMA("not a JSON object");
  out->root = root;

  const char *check = json_get_str(root, "check");
  if (!check) SCHEMA("no \"check\" string");
  if (!check_name_ok(check)) SCHEMA("\"check\" is not a check name");
  out->check = check;
  out->severity = a2a_severity_parse(json_get_str(root, "severity"));
  if (out->severity < 0) SCHEMA("\"severity\" is not error, warning or info");

  if (!opt_int(root, "id", -1, &out->id)) SCHEMA("\"id\" is not an integer");
  if (!opt_int(root, "pid", -1, &out->pid) || out->pid < -1) SCHEMA("\"pid\" is not an integer");
  if (!opt_int(root, "thread", -1, &out->thread)) SCHEMA("\"thread\" is not an integer");
  if (!opt_int(root, "count", 1, &out->count) || out->count < 0) SCHEMA("\"count\" is not a count");

  const jval *rank = json_get(root, "rank");
  if (rank && rank->kind != J_NULL) {
    long long r;
    if (!json_as_int(rank, &r) || r < 0 || r > 0x7fffffff) SCHEMA("\"rank\" is not a rank or null");
    out->has_rank = true;
    out->rank = (int)r;
  }
  if (!opt_str(root, "host", &out->host)) SCHEMA("\"host\" is not a string");
  if (!opt_str(root, "message", &out->message)) SCHEMA("\"message\" is not a string");
  if (!out->message) out->message = "";
  if (!opt_str(root, "time", &out->time)) SCHEMA("\"time\" is not a string");
  out->time_ms = out->time ? a2a_parse_time_ms(out->time) : -1;

  const jval *comm = json_get(root, "comm");
  out->comm_size = out->comm_rank = -1;
  if (comm && comm->kind != J_NULL) {
    if (comm->kind != J_OBJ) SCHEMA("\"comm\" is not an object");
    out->has_comm = true;
    if (!opt_str(comm, "name", &out->comm_name) || !opt_str(comm, "hash", &out->comm_hash) ||
        !opt_int(comm, "size", -1, &out->comm_size) || !opt_int(comm, "rank", -1, &out->comm_rank))
      SCHEMA("\"comm\" has a member of the wrong type");
  }

  const jval *details = json_get(root, "details");
  if (details && details->kind != J_NULL) {
    if (details->kind != J_OBJ) SCHEMA("\"details\" is not an object");
    out->details = details;
  }

  const jval *stack = json_get(root, "stack");
  if (stack && stack->kind != J_NULL) {
    if (stack->kind != J_ARR) SCHEMA("\"stack\" is not an array");
    size_t n = stack->u.arr.n;
    const char **fr = n ? arena_alloc(a, n * sizeof *fr) : NULL;
    if (n && !fr) SCHEMA("out of memory for the stack");
    for (size_t k = 0; k < n; k++) {
      const jval *f = stack->u.arr.v[k];
      if (f->kind != J_STR) SCHEMA("\"stack\" holds a non-string");
      fr[k] = f->u.str.s;
    }
    out->stack = fr;
    out->nstack = n;
  }
  return A2A_REC_OK;
}

a2a_record_status a2a_record_parse(const char *line, size_t len, arena *a, a2a_record *out,
                                   char *why, size_t whycap) {
  /* Bound the memory one line may take, whatever the caller's arena
   * allows: the decoded strings (at most 3 bytes per input byte) plus the
   * tree of at most json_limits.max_values values. */
  size_t old = a->limit;
  size_t room = (len < A2A_RECORD_MAX_LINE ? len : A2A_RECORD_MAX_LINE) * 4 + ((size_t)48 << 20);
  if (!old || a->used + room < old) a->limit = a->used + room;
  a2a_record_status st = parse(line, len, a, out, why, whycap);
  a->limit = old;
  if (st != A2A_REC_OK) memset(out, 0, sizeof *out);
  return st;
}
