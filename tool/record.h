/* record.h - one line of an a2acheck JSONL log as a typed record.
 *
 * a2a_record_parse is a pure function over one line (no global state, no
 * I/O): it parses the line as strict JSON (json.h) with bounded depth,
 * value count and memory, and checks the fields README.md ("Log format")
 * documents. A line that is not a record is refused with a reason; the
 * caller counts it and goes on. It is the entry point the libFuzzer target
 * (tool/fuzz_record.c) drives.
 *
 * Required: "check" (a string of 1..128 characters out of [A-Za-z0-9._-])
 * and "severity" ("error", "warning" or "info"). Optional fields, refused
 * when present with another type: "id", "pid", "thread", "count" (integers;
 * count >= 0), "rank" (integer or null), "host", "message", "time"
 * (strings), "comm" (object: "name", "hash" strings, "size", "rank"
 * integers), "details" (object or null), "stack" (array of strings).
 * Unknown fields are ignored (newer runtimes may add some).
 */
#ifndef A2A_TOOL_RECORD_H
#define A2A_TOOL_RECORD_H

#include <stdbool.h>
#include <stddef.h>

#include "json.h"
#include "util.h"

/* The longest line a2a_record_parse accepts (bytes). */
#define A2A_RECORD_MAX_LINE ((size_t)4 << 20)

enum { SEV_INFO = 0, SEV_WARNING = 1, SEV_ERROR = 2 };

typedef struct a2a_record {
  const char *check;
  int severity;                 /* SEV_* */
  long long id;                 /* -1: absent */
  bool has_rank;
  int rank;                     /* when has_rank */
  const char *host;             /* NULL: absent */
  long long pid;                /* -1: absent */
  long long thread;             /* -1: absent */
  bool has_comm;
  const char *comm_name;        /* NULL: absent */
  const char *comm_hash;        /* "0x...", NULL: absent */
  long long comm_size, comm_rank;   /* -1: absent */
  const char *message;          /* "" when absent */
  const jval *details;          /* J_OBJ or NULL */
  const char **stack;
  size_t nstack;
  const char *time;             /* NULL: absent */
  double time_ms;               /* milliseconds since the epoch, or -1 */
  long long count;              /* occurrences; 1 when absent */
  const jval *root;
} a2a_record;

typedef enum a2a_record_status {
  A2A_REC_OK = 0,
  A2A_REC_BLANK,        /* only whitespace: not an error */
  A2A_REC_TOO_LONG,
  A2A_REC_SYNTAX,       /* not strict JSON, or past the parser's limits */
  A2A_REC_SCHEMA,       /* JSON, but not a finding record */
} a2a_record_status;

/* Parse line[0..len) (a trailing newline is allowed). Memory for *out comes
 * from a; on failure nothing in *out is valid and why holds the reason. */
a2a_record_status a2a_record_parse(const char *line, size_t len, arena *a, a2a_record *out,
                                   char *why, size_t whycap);

/* "error" / "warning" / "info" -> SEV_*, -1 otherwise. */
int a2a_severity_parse(const char *s);
const char *a2a_severity_name(int sev);

/* ISO 8601 UTC "YYYY-MM-DDTHH:MM:SS[.fff]Z" -> ms since the epoch, or -1. */
double a2a_parse_time_ms(const char *s);

#endif /* A2A_TOOL_RECORD_H */
