/* rt_report.c - the report sink: a2a_report() and a2a_check_on()
 * (analyzers/a2a_core.h), deduplication, per-check caps, the stderr echo and
 * the summary at exit.
 *
 * A finding goes through:
 *   1. selection: a2a_check_on(check) (A2ACHECK_CHECKS);
 *   2. under a2a_rt_mu: dedup by (check, call site) - a repeat only bumps the
 *      entry's count; a new entry beyond A2ACHECK_MAX_PER_CHECK for its check
 *      is only counted ("suppressed"); otherwise it gets the next finding
 *      number, its stack is captured (on the reporting thread) and
 *      symbolized, it is formatted and written to both logs and, if its
 *      severity reaches A2ACHECK_LOG_STDERR (or the logs are unavailable),
 *      echoed to stderr as one line;
 *   3. the failure policy (A2ACHECK_FAIL_ON) is evaluated for every
 *      occurrence, logged or not.
 * A finding whose site is NULL is deduplicated by (check, message text).
 *
 * Memory: fixed tables (MAX_CHECKS checks, MAX_ENTRIES distinct findings),
 * static formatting buffers; nothing is allocated after init. When the entry
 * table is full, further distinct findings are counted as dropped.
 *
 * Reentrancy and deadlock freedom: a finding raised on a thread that is
 * already inside a2a_report (for example from a signal handler) is counted
 * as dropped instead of waiting for the lock that thread holds. The writer
 * holds a2a_rt_mu while it symbolizes (dladdr takes the dynamic loader's
 * lock); a thread that reports from inside the loader (a library
 * constructor run by dlopen making an intercepted call) would wait for
 * a2a_rt_mu while holding the loader's lock. So a2a_report waits for the
 * mutex at most REPORT_WAIT_S seconds and then drops the finding (counted),
 * which breaks any such cycle.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rt_internal.h"

#define REPORT_WAIT_S 2          /* longest wait for a2a_rt_mu in a2a_report */
#define SUMMARY_WAIT_S 10        /* ... in the exit path */
#define MAX_ENTRIES 4096        /* power of two */

pthread_mutex_t a2a_rt_mu = PTHREAD_MUTEX_INITIALIZER;

typedef struct check_stat {
  bool seen;                           /* reported at least once */
  a2a_severity max_sev;
  unsigned long logged;                /* distinct findings written */
  unsigned long suppressed;            /* distinct findings over the cap */
  unsigned long distinct_by_sev[3];
  bool is_summary;                     /* perf.summary: a report about the
                                          run, listed but not counted as a
                                          finding */
  unsigned long long occurrences;
} check_stat;

typedef struct entry {
  bool used;
  int check;                           /* index in g_checks */
  uintptr_t key;                       /* call site, or a message hash */
  a2a_severity sev;
  unsigned long long count;            /* occurrences folded in */
  unsigned long long written;          /* count value in the JSONL */
  off_t json_off;                      /* -1: not in the JSONL */
  unsigned count_off;                  /* of the count digits in the line */
} entry;

static check_stat g_checks[A2A_CK__COUNT];   /* indexed by a2a_check_id */
static entry g_entries[MAX_ENTRIES];
static unsigned long g_next_id;
static unsigned long g_dropped_full;
static _Atomic unsigned long g_dropped_nested;
static _Atomic bool g_fail_matched;
static _Atomic unsigned long g_distinct_by_sev[3];

static __thread int t_in_report;

bool a2a_rt_lock_within(int seconds) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += seconds;
  return pthread_mutex_timedlock(&a2a_rt_mu, &ts) == 0;
}

/* Formatting buffers, used under a2a_rt_mu. */
static char g_json_buf[32768];
static char g_text_buf[32768];
static char g_frames[32][A2A_RT_FRAME_LEN];

void a2a_rt_report_init(void) {
  /* Learn our own text range now (single-threaded), not on a racing first
   * stack capture. */
  (void)a2a_rt_pc_is_ours(NULL);
}

/* Reports are accepted from the moment the runtime's own state is ready -
 * during a2a_core_init (an analyzer whose init fails is reported) - until
 * the process ends. */
static bool accepting(int s) {
  return s == A2A_RT_INITIALIZING || s == A2A_RT_READY || s == A2A_RT_FINISHED;
}

/* ---- tables (a2a_rt_mu held) ---- */

static int check_index(a2a_check_id id, a2a_severity sev) {
  if ((unsigned)id >= (unsigned)A2A_CK__COUNT) return -1;
  check_stat *c = &g_checks[id];
  if (!c->seen) {
    c->seen = true;
    c->max_sev = sev;
    c->is_summary = id == A2A_CK_PERF_SUMMARY;
  } else if (sev > c->max_sev) {
    c->max_sev = sev;
  }
  return (int)id;
}

static uint64_t fnv1a(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; s && *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* Find or create the entry; *fresh says whether it is new. NULL if full. */
static entry *entry_for(int check, uintptr_t key, bool *fresh) {
  size_t h = (size_t)((key ^ ((uint64_t)check * 0x9E3779B97F4A7C15ull)) * 0xff51afd7ed558ccdull >> 32);
  for (size_t probe = 0; probe < MAX_ENTRIES; probe++) {
    entry *e = &g_entries[(h + probe) & (MAX_ENTRIES - 1)];
    if (!e->used) {
      memset(e, 0, sizeof *e);
      e->used = true;
      e->check = check;
      e->key = key;
      e->json_off = -1;
      *fresh = true;
      return e;
    }
    if (e->check == check && e->key == key) {
      *fresh = false;
      return e;
    }
    if (probe > MAX_ENTRIES / 2) break;   /* keep probing bounded */
  }
  return NULL;
}

static bool echo_wanted(a2a_severity sev) {
  long t = a2a_rt.opts.log_stderr;
  return t != A2A_ECHO_NONE && (long)sev >= 3 - t;
}

static void write_finding(const a2a_finding *f, a2a_severity sev, entry *e,
                          const a2a_stack *st) {
  char now[40];
  a2a_rt_time_iso(now, sizeof now);
  int nframes = 0;
  int max = a2a_rt.opts.stack_depth < 32 ? (int)a2a_rt.opts.stack_depth : 32;
  for (int i = 0; st && i < st->n && nframes < max; i++)
    nframes += a2a_rt_symbolize(st->pc[i], g_frames + nframes, max - nframes);
  a2a_rt_record rec = {
      .id = ++g_next_id,
      .check = a2a_check_name(f->check),
      .severity = sev,
      .rank = a2a_rt_global_rank(),
      .host = a2a_rt.host,
      .pid = a2a_rt.pid,
      .thread = a2a_rt_thread_index(),
      .comm = f->comm,
      .message = f->message,
      .details_json = f->details_json,
      .frames = g_frames,
      .nframes = nframes,
      .count = 1,
      .time_iso = now,
  };
  size_t count_off = 0;
  size_t jn = a2a_rt_format_json(&rec, g_json_buf, sizeof g_json_buf, &count_off);
  size_t tn = a2a_rt_format_text(&rec, g_text_buf, sizeof g_text_buf);
  off_t off = -1;
  bool logged = a2a_rt_log_append(g_text_buf, tn, g_json_buf, jn, &off);
  if (off >= 0) {
    e->json_off = off;
    e->count_off = (unsigned)count_off;
    e->written = 1;
  }
  if (!logged || echo_wanted(sev) || (f->echo && a2a_rt.opts.log_stderr != A2A_ECHO_NONE)) {
    char rank[16];
    if (rec.rank >= 0) snprintf(rank, sizeof rank, "%d", rec.rank);
    else snprintf(rank, sizeof rank, "?");
    /* Where: the first frame, so the line alone points at the code. */
    a2a_rt_stderr("[rank %s] %s %s: %s%s%s%s", rank, a2a_rt_severity_name(sev),
                  a2a_check_name(f->check), f->message ? f->message : "", nframes ? " [" : "",
                  nframes ? g_frames[0] : "", nframes ? "]" : "");
  }
}

void a2a_report(const a2a_finding *f) {
  int s = a2a_rt_state();
  if (!f || (unsigned)f->check >= (unsigned)A2A_CK__COUNT || !accepting(s)) return;
  if (!a2a_check_on(f->check)) return;
  if (t_in_report) {
    atomic_fetch_add(&g_dropped_nested, 1);
    return;
  }
  int saved = errno;
  t_in_report = 1;
  a2a_severity sev = f->severity > A2A_SEV_ERROR   ? A2A_SEV_ERROR
                     : f->severity < A2A_SEV_INFO ? A2A_SEV_INFO
                                                  : f->severity;
  if (a2a_rt_failpol_matches(&a2a_rt.failpol, f->check, sev))
    atomic_store(&g_fail_matched, true);

  uintptr_t key = f->site ? (uintptr_t)f->site : (uintptr_t)fnv1a(f->message) | 1;

  if (!a2a_rt_lock_within(REPORT_WAIT_S)) {
    atomic_fetch_add(&g_dropped_nested, 1);
    t_in_report = 0;
    errno = saved;
    return;
  }
  int ci = check_index(f->check, sev);
  if (ci < 0) {
    g_dropped_full++;
  } else {
    check_stat *c = &g_checks[ci];
    c->occurrences++;
    bool fresh = false;
    entry *e = entry_for(ci, key, &fresh);
    if (!e) {
      g_dropped_full++;
    } else if (!fresh) {
      e->count++;
    } else {
      e->sev = sev;
      e->count = 1;
      c->distinct_by_sev[sev]++;
      if (!c->is_summary) atomic_fetch_add(&g_distinct_by_sev[sev], 1);
      if ((long)c->logged >= a2a_rt.opts.max_per_check) {
        c->suppressed++;
      } else {
        /* The stack is captured only for a finding that is written (not
         * for repeats): this thread's own frames, the lock does not matter
         * to libunwind. */
        a2a_stack captured;
        const a2a_stack *st = f->stack;
        if (!st && f->capture_stack) {
          a2a_rt_capture_stack(&captured);
          st = &captured;
        }
        c->logged++;
        write_finding(f, sev, e, st);
      }
    }
  }
  pthread_mutex_unlock(&a2a_rt_mu);
  t_in_report = 0;
  errno = saved;
}

bool a2a_rt_report_fail_matched(void) { return atomic_load(&g_fail_matched); }

/* ---- summary ---- */

static char g_sum_text[16384];
static char g_sum_json[16384];

void a2a_rt_report_summary(int exit_status, const char *fail_reason) {
  if (!a2a_rt_lock_within(SUMMARY_WAIT_S)) {
    a2a_rt_stderr("warning: a finding being written did not complete within %d s; "
                  "no summary", SUMMARY_WAIT_S);
    return;
  }
  /* Final counts into the JSONL, in place (fixed-width field). */
  for (size_t i = 0; i < MAX_ENTRIES; i++) {
    entry *e = &g_entries[i];
    if (!e->used || e->json_off < 0 || e->count == e->written) continue;
    char digits[A2A_RT_COUNT_WIDTH + 1];
    snprintf(digits, sizeof digits, "%-*llu", A2A_RT_COUNT_WIDTH, e->count);
    a2a_rt_log_patch_json(e->json_off + (off_t)e->count_off, digits, A2A_RT_COUNT_WIDTH);
    e->written = e->count;
  }

  unsigned long n[3] = {0, 0, 0};
  unsigned long long occ = 0;
  for (int i = 0; i < A2A_CK__COUNT; i++) {
    if (!g_checks[i].seen || g_checks[i].is_summary) continue; /* reports about the run */
    for (int k = 0; k < 3; k++) n[k] += g_checks[i].distinct_by_sev[k];
    occ += g_checks[i].occurrences;
  }
  unsigned long total = n[0] + n[1] + n[2];
  unsigned long dropped = g_dropped_full + atomic_load(&g_dropped_nested);
  bool fail = atomic_load(&g_fail_matched);
  char fail_on[512];
  a2a_rt_failpol_describe(&a2a_rt.failpol, fail_on, sizeof fail_on);

  /* Text (log and stderr). */
  size_t tl = 0;
  bool ovf = false;
  char *T = g_sum_text;
  size_t TC = sizeof g_sum_text;
  tl = a2a_rt_printf(T, TC, tl, &ovf,
                     "summary: %lu distinct finding%s (%lu error, %lu warning, %lu info), "
                     "%llu occurrence%s\n",
                     total, total == 1 ? "" : "s", n[2], n[1], n[0], occ, occ == 1 ? "" : "s");
  int nseen = 0;
  for (int i = 0; i < A2A_CK__COUNT; i++) nseen += g_checks[i].seen;
  if (nseen)
    tl = a2a_rt_printf(T, TC, tl, &ovf, "  %-34s %-8s %8s %10s %12s\n", "check", "severity",
                       "logged", "suppressed", "occurrences");
  for (int i = 0; i < A2A_CK__COUNT; i++) {
    check_stat *c = &g_checks[i];
    if (!c->seen) continue;
    tl = a2a_rt_printf(T, TC, tl, &ovf, "  %-34s %-8s %8lu %10lu %12llu\n",
                       a2a_check_name((a2a_check_id)i),
                       a2a_rt_severity_name(c->max_sev), c->logged, c->suppressed,
                       c->occurrences);
  }
  if (dropped)
    tl = a2a_rt_printf(T, TC, tl, &ovf,
                       "  %lu finding(s) dropped (tables full, raised while another was "
                       "being written on the same thread, or the writer was stuck)\n", dropped);
  if (fail_reason)
    tl = a2a_rt_printf(T, TC, tl, &ovf, "  ended by a2acheck with exit status %ld: %.400s\n",
                       a2a_rt.opts.exitcode, fail_reason);
  else if (fail)
    tl = a2a_rt_printf(T, TC, tl, &ovf,
                       "  A2ACHECK_FAIL_ON=%s matched: exit status %ld (the application's "
                       "was %d)\n", fail_on, a2a_rt.opts.exitcode, exit_status);

  /* JSONL record. */
  size_t jl = 0;
  char *J = g_sum_json;
  size_t JC = sizeof g_sum_json;
  char now[40];
  a2a_rt_time_iso(now, sizeof now);
  int rank = a2a_rt_global_rank();
  char msg[160];
  snprintf(msg, sizeof msg, "%lu distinct findings (%lu error, %lu warning, %lu info)", total,
           n[2], n[1], n[0]);
  jl = a2a_rt_puts(J, JC, jl, "{\"check\":\"a2acheck.summary\",\"severity\":\"info\",\"rank\":", &ovf);
  jl = rank >= 0 ? a2a_rt_printf(J, JC, jl, &ovf, "%d", rank) : a2a_rt_puts(J, JC, jl, "null", &ovf);
  jl = a2a_rt_puts(J, JC, jl, ",\"host\":", &ovf);
  jl = a2a_rt_put_jstr(J, JC, jl, a2a_rt.host, &ovf);
  jl = a2a_rt_printf(J, JC, jl, &ovf, ",\"pid\":%d,\"message\":", a2a_rt.pid);
  jl = a2a_rt_put_jstr(J, JC, jl, msg, &ovf);
  jl = a2a_rt_printf(J, JC, jl, &ovf,
                     ",\"details\":{\"findings\":{\"error\":%lu,\"warning\":%lu,\"info\":%lu},"
                     "\"occurrences\":%llu,\"dropped\":%lu,\"nccl_calls_seen\":%s,"
                     "\"exit_status\":%d,\"fail_on\":\"%.400s\",\"fail_matched\":%s,"
                     "\"failed_now\":%s,\"checks\":[",
                     n[2], n[1], n[0], occ, dropped, a2a_rt_nccl_seen() ? "true" : "false",
                     exit_status, fail_on, fail ? "true" : "false",
                     fail_reason ? "true" : "false");
  for (int i = 0, k = 0; i < A2A_CK__COUNT; i++) {
    check_stat *c = &g_checks[i];
    if (!c->seen) continue;
    jl = a2a_rt_puts(J, JC, jl, k++ ? ",{\"check\":" : "{\"check\":", &ovf);
    jl = a2a_rt_put_jstr(J, JC, jl, a2a_check_name((a2a_check_id)i), &ovf);
    jl = a2a_rt_printf(J, JC, jl, &ovf,
                       ",\"severity\":\"%s\",\"logged\":%lu,\"suppressed\":%lu,"
                       "\"occurrences\":%llu}",
                       a2a_rt_severity_name(c->max_sev), c->logged, c->suppressed,
                       c->occurrences);
  }
  jl = a2a_rt_puts(J, JC, jl, "]},\"stack\":[],\"time\":", &ovf);
  jl = a2a_rt_put_jstr(J, JC, jl, now, &ovf);
  jl = a2a_rt_puts(J, JC, jl, ",\"count\":1}\n", &ovf);
  if (ovf) {
    /* Too many checks for the buffer: a minimal record rather than a
     * broken line. */
    jl = (size_t)snprintf(J, JC,
                          "{\"check\":\"a2acheck.summary\",\"severity\":\"info\",\"pid\":%d,"
                          "\"message\":\"%lu distinct findings\",\"details\":{},\"count\":1}\n",
                          a2a_rt.pid, total);
  }

  char header[64];
  int hn = snprintf(header, sizeof header, "---- a2acheck summary ----\n");
  a2a_rt_log_append(header, (size_t)hn, NULL, 0, NULL);
  a2a_rt_log_append(T, tl, J, jl, NULL);

  /* stderr: the table when something was found, one line otherwise; nothing
   * with A2ACHECK_LOG_STDERR=none unless the exit status is changed. */
  if (a2a_rt.opts.log_stderr != A2A_ECHO_NONE || fail || fail_reason) {
    const char *path = a2a_rt_log_jsonl_path();
    if (total == 0 && !dropped && !fail_reason) {
      a2a_rt_stderr("no findings%s%s", *path ? "; log: " : "", path);
    } else {
      /* One write(2) for the whole block, so the summaries of several ranks
       * sharing a terminal do not interleave line by line. */
      static char out[20480];
      size_t ol = 0;
      bool o2 = false;
      for (char *line = T; *line;) {
        char *nl = strchr(line, '\n');
        int k = (int)(nl ? (size_t)(nl - line) : strlen(line));
        ol = a2a_rt_printf(out, sizeof out, ol, &o2, "a2acheck: %.*s\n", k, line);
        line += k + (nl ? 1 : 0);
      }
      if (*path) ol = a2a_rt_printf(out, sizeof out, ol, &o2, "a2acheck: details: %s\n", path);
      ssize_t w = write(STDERR_FILENO, out, ol);
      (void)w;
    }
  }
  pthread_mutex_unlock(&a2a_rt_mu);
}

void a2a_rt_report_after_fork_child(void) {
  /* Called in the child before a2a_rt_mu is released (or re-created, when
   * prepare could not take it): only this thread exists. */
  memset(g_checks, 0, sizeof g_checks);
  memset(g_entries, 0, sizeof g_entries);
  g_next_id = 0;
  g_dropped_full = 0;
  atomic_store(&g_dropped_nested, 0);
  atomic_store(&g_fail_matched, false);
  for (int k = 0; k < 3; k++) atomic_store(&g_distinct_by_sev[k], 0);
  t_in_report = 0;
}

/* ---- public API (include/a2acheck.h) ---- */

A2A_RT_EXPORT unsigned long a2acheck_finding_count(int min_severity) {
  unsigned long n = 0;
  for (int k = min_severity < 0 ? 0 : min_severity; k < 3; k++)
    n += atomic_load(&g_distinct_by_sev[k]);
  return n;
}
