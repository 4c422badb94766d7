/* job.h - the merged view of one job: every process's JSONL log read
 * (record.h), findings deduplicated across ranks, the two sides of a
 * cross-rank finding joined, the deadlock verdicts folded into one,
 * per-communicator performance from the perf.summary records, and how each
 * process ended (its a2acheck.summary record).
 *
 * Merging rules (docs/report.md, "Merging"):
 *  - group.deadlock / group.hang: one finding per set of involved processes
 *    (details.processes[].pid), whatever communicator each rank names;
 *  - checks the cross-rank matcher emits (owner XRANK in a2a_checks.inc):
 *    the coordinator sends the same text to every rank involved, so
 *    (check, communicator, message) joins the sides; each side keeps its own
 *    stack (its call site);
 *  - every other check: (check, communicator, first stack frame) - the same
 *    call site on several ranks is one finding "ranks 1,2" (the message of
 *    the lowest rank is shown, the others are kept);
 *  - a2acheck.summary and perf.summary are not findings.
 * Ordering: errors, then warnings, then infos; within a severity the
 * deadlock verdicts first, then the order of the checks table.
 */
#ifndef A2A_TOOL_JOB_H
#define A2A_TOOL_JOB_H

#include <stdbool.h>
#include <stddef.h>

#include "record.h"
#include "util.h"

typedef struct rp_proc {
  char *path;
  char *host;
  long long pid;                /* -1 unknown */
  int rank;                     /* global rank, -1 unknown */
  size_t nlines, nbad, nfindings;
  bool has_summary;
  long long exit_status;        /* the application's own status */
  bool failed_now;              /* ended by a2acheck (deadlock verdict) */
  bool fail_matched;            /* A2ACHECK_FAIL_ON matched: status changed */
  bool nccl_seen;
  const char *fail_on;
  long long dropped;
  long long sum_by_sev[3];
  const jval *summary_checks;   /* details.checks of the summary, or NULL */
  double first_ms, last_ms, summary_ms;
  bool deadlock;                /* logged group.deadlock or group.hang */
  const char *verdict;          /* that check's name, or NULL */
} rp_proc;

typedef struct rp_occ {
  int proc;
  int rank;                     /* the record's rank, else the process's */
  a2a_record rec;
} rp_occ;

enum { RP_LOCAL = 0, RP_CROSS = 1, RP_DEADLOCK = 2 };

typedef struct rp_finding {
  const char *check;
  int severity;
  int kind;                     /* RP_* */
  int order;                    /* index in the checks table, or a large value */
  int *occ;                     /* indexes into job.occ, by rank then pid */
  size_t nocc;
  int *ranks;                   /* distinct known ranks, sorted */
  size_t nranks;
  size_t unknown_rank;          /* occurrences from processes of unknown rank */
  long long count;              /* occurrences (sum of the lines' count) */
  const char *message;          /* of the first occurrence */
  bool messages_differ;
  const char *comm_hash, *comm_name;
  long long comm_size;
  double first_ms;
  char *key;
} rp_finding;

typedef struct rp_bucket {
  const char *op;
  long long lo;                 /* bucket_lo_bytes */
  long long ops, measured_ops;
  double bytes, time_s;
  double bw_min, bw_max, bw_sum; /* busbw_gbps over the ranks that measured */
  double algbw_sum;
  int nbw;
} rp_bucket;

typedef struct rp_comm {
  const char *hash, *name;
  long long size;
  int *ranks;
  size_t nranks;
  long long ops_min, ops_max, small_ops, blocked_after_ops, serialized_ops;
  double bytes, time_max;
  double ovl_min, ovl_max, ovl_sum;
  int novl;
  rp_bucket *b;
  size_t nb, capb;
} rp_comm;

typedef struct rp_check_count {
  const char *check;
  int severity;                 /* highest seen */
  size_t findings;              /* merged */
  size_t lines;                 /* JSONL lines (per-process distinct findings) */
  long long occurrences;
  long long suppressed;         /* from the summaries */
  int *ranks;
  size_t nranks;
} rp_check_count;

typedef struct rp_job {
  arena mem;
  char **dirs;
  size_t ndirs;
  rp_proc *procs;
  size_t nprocs, capprocs;
  rp_occ *occ;
  size_t nocc, capocc;
  rp_finding *f;
  size_t nf, capf;
  rp_comm *comms;
  size_t ncomms, capcomms;
  rp_check_count *cc;
  size_t ncc, capcc;
  char **warnings;              /* "file:line: reason" (the first 100) */
  size_t nwarnings, capwarnings;
  size_t warnings_dropped;      /* past the first 100 */
  size_t bad_lines;
  size_t nranks;                /* distinct known ranks */
  size_t by_sev[3];             /* merged findings per severity */
  bool deadlock;
  bool merged;
} rp_job;

void rp_job_init(rp_job *j);
void rp_job_free(rp_job *j);

/* Add the run directories' logs: every a2acheck.*.jsonl directly in each
 * DIR. Returns the number of files added; problems are added as warnings
 * and to err. */
size_t rp_job_add_dir(rp_job *j, const char *dir, strbuf *err);
/* One log file; its name gives host, pid and rank when it follows
 * a2acheck.<host>.<pid>.rank<R>.jsonl. Returns 0 or -1 (cannot read). */
int rp_job_add_file(rp_job *j, const char *path);
/* One line of process proc (lineno for warnings). */
void rp_job_add_line(rp_job *j, int proc, const char *line, size_t len, size_t lineno);
/* A new process without a file (tests). */
int rp_job_add_proc(rp_job *j, const char *path, const char *host, long long pid, int rank);

/* Build findings, counts and performance from what was added. */
void rp_job_merge(rp_job *j);

/* "rank 3", "rank ? (pid 123)" */
void rp_proc_label(const rp_proc *p, char *out, size_t cap);
/* How the process ended, in words ("exit 0", "ended by a2acheck ..."). */
void rp_proc_ending(const rp_proc *p, char *out, size_t cap);
/* Role of an occurrence in a cross-rank finding ("sender", "receiver"),
 * or NULL. */
const char *rp_occ_role(const rp_job *j, const rp_finding *f, const rp_occ *o);

/* The failure policy over the job (A2ACHECK_FAIL_ON levels). */
enum { RP_FAIL_DEADLOCK = 0, RP_FAIL_ERROR = 1, RP_FAIL_WARNING = 2, RP_FAIL_NEVER = 3 };
int rp_fail_level_parse(const char *s);   /* -1 if not a level */
typedef struct rp_verdict {
  bool matched;
  bool deadlock;                /* a deadlock verdict ended or hit a process */
  char reason[512];
} rp_verdict;
/* Whether the job fails under level. With use_summaries, the processes'
 * own verdicts (failed_now, fail_matched: the policy the run was started
 * with) count, and the findings of processes without a summary (killed,
 * _exit()) are matched against level; without, every finding is matched
 * against level (report --fail-on). */
void rp_job_policy(const rp_job *j, int level, bool use_summaries, rp_verdict *v);
/* Whether a finding matches a level. */
bool rp_level_matches(int level, const char *check, int severity);
bool rp_check_is_deadlock(const char *check);

#endif /* A2A_TOOL_JOB_H */
