/* rt_report.c - the report sink: a2a_report() and a2a_check_on()
 * (analyzers/a2a_core.h), deduplication, per-check caps, the stderr echo and
 * the summary at exit.
 *
 * A finding goes through:
 *   1. selection: a2a_check_on(check) (A2ACHECK_CHECKS);
 *   2. the failure policy (A2ACHECK_FAIL_ON), evaluated for every
 *      occurrence, logged or not;
 *   3. counting, under g_tab_mu: dedup by (check, call site) - a repeat only
 *      bumps the entry's count; a new entry beyond A2ACHECK_MAX_PER_CHECK
 *      for its check is only counted ("suppressed"); otherwise it is to be
 *      written;
 *   4. writing, under a2a_rt_mu: it gets the next finding number, its stack
 *      is captured (on the reporting thread, before the lock) and
 *      symbolized, it is formatted and written to both logs and, if its
 *      severity reaches A2ACHECK_LOG_STDERR (or the logs are unavailable),
 *      echoed to stderr as one line.
 * A finding whose site is NULL is deduplicated by (check, message text).
 * a2a_report_repeat() is step 3's repeat branch alone, for a caller that
 * has not formatted its finding yet: a check that fires at every step pays
 * for one lookup, not for a message and JSON that are deduplicated away.
 * Its common case takes no lock (see "Settled entries" below).
 *
 * Suppressions (A2ACHECK_SUPPRESSIONS, rt_suppress.c): with rules loaded, a
 * new distinct finding is matched before step 3 decides: its stack is
 * captured and symbolized (under a2a_rt_mu) and matched once; a silenced
 * entry is only counted (suppressed, per check) and its repeats with it; it
 * is never written nor echoed and never matches the failure policy, whose
 * evaluation waits for the match (an occurrence that arrives meanwhile is
 * remembered in the entry). Repeats are never matched again.
 *
 * Two locks, so that counting is exact whatever the writer does. g_tab_mu
 * guards the tables and counters and is only ever held for a few loads and
 * stores (no I/O, no symbolization, no call out, never while waiting for
 * another lock). a2a_rt_mu guards the log files, the formatting buffers, the
 * symbolizer caches and the entries' file offsets; it is held while a
 * finding is symbolized and written, which can take long (a large library's
 * symbol table read the first time, a slow file system). Lock order:
 * a2a_rt_mu, then g_tab_mu. A repeat, or a finding over the cap, never
 * waits for the writer: two threads raising the same finding at once are
 * both counted, whichever of them writes it.
 *
 * Settled entries: a repeat (a2a_report_repeat/_repeats) of an entry whose
 * failure-policy state is settled - not pending a suppression match, so
 * silenced or not for good - at a severity that cannot raise its check's
 * max_sev (at most the entry's first, which check_index already folded in)
 * changes nothing but counts: the entry's occurrences, its check's
 * occurrences (and silenced_occ when silenced) and, when it matches the
 * failure policy and is not silenced, g_fail_matched. It is counted without
 * g_tab_mu: found by a lock-free probe (an entry's identity is published
 * with a release store of its state and never changes, entries are never
 * removed while the process runs; only the fork child's reset clears them,
 * with one thread left), and counted by one atomic add to the entry's
 * `fast`. The check's occurrences are not touched: the snapshot (under
 * g_tab_mu) reads each entry's `fast` once and adds that one value to the
 * entry's count and to its check's occurrences (and silenced_occ), so the
 * summary, the patched JSONL counts and the per-check table agree, and an
 * occurrence is either in all of them or in none. Anything else (no entry,
 * a pending one, a higher severity) takes the locked path as before. A
 * batch of repeats equal to the thread's last lock-free one (an analyzer
 * replaying the findings it remembers, every step) finds its settled
 * entries in the thread's memo (t_rep) instead of probing the table.
 *
 * Memory: fixed tables (one check_stat per check of the table, MAX_ENTRIES
 * distinct findings), static formatting buffers; nothing is allocated after
 * init. When the entry table is full, further distinct findings are counted
 * as dropped.
 *
 * Reentrancy and deadlock freedom: a finding raised on a thread that is
 * already inside a2a_report (from a signal handler) is counted as dropped
 * instead of waiting for a lock that thread may hold. The writer holds
 * a2a_rt_mu while it symbolizes (dladdr takes the dynamic loader's lock); a
 * thread that reports from inside the loader (a library constructor run by
 * dlopen making an intercepted call) would wait for a2a_rt_mu while holding
 * the loader's lock. So a new finding waits for a2a_rt_mu at most
 * REPORT_WAIT_S seconds; it is then counted (distinct, occurrences) but not
 * written, and the summary says how many were not. A patient finding
 * (a2a_finding.patient: raised by the cross-rank background thread, which
 * never reports from inside the loader) waits up to REPORT_PATIENT_S: the
 * writer may be symbolizing a large library's inlined frames for the first
 * time (seconds on a loaded machine), and a verdict is not to be lost to
 * that.
 *
 * The summary counts what was reported until it is written. A finding that
 * a still running thread (the cross-rank channel delivering a late verdict)
 * raises after it is written as usual, followed by an amended summary.
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
#define REPORT_PATIENT_S 30      /* the same for a patient finding (a2a_finding) */
#define SUMMARY_WAIT_S 10        /* ... in the exit path */
#define MAX_ENTRIES 4096        /* power of two */

pthread_mutex_t a2a_rt_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_tab_mu = PTHREAD_MUTEX_INITIALIZER;

/* g_tab_mu guards check_stat, the entries' identity and counts, and the
 * counters below it, except an entry's `fast` (atomic, see "Settled
 * entries" above); a2a_rt_mu guards the entries' file fields (json_off,
 * count_off, written) and g_next_id. */
typedef struct check_stat {
  bool seen;                           /* reported at least once */
  a2a_severity max_sev;
  unsigned long logged;                /* distinct findings written (or being
                                          written) */
  unsigned long suppressed;            /* distinct findings over the cap or
                                          silenced by a suppression */
  unsigned long silenced;              /* of these, by a suppression */
  unsigned long long silenced_occ;     /* their occurrences */
  unsigned long unwritten;             /* distinct findings the writer could
                                          not take within REPORT_WAIT_S */
  unsigned long distinct_by_sev[3];
  bool is_report;                      /* perf.summary: statistics about the
                                          run, listed apart, not a finding */
  unsigned long long occurrences;
} check_stat;

/* entry.state: set under g_tab_mu with a release store, read with an
 * acquire load also without it; it only grows (until the fork child's
 * reset). */
enum {
  ENTRY_FREE = 0,
  ENTRY_USED,      /* check and key set, never changed again */
  ENTRY_SETTLED,   /* also sev, pending (false) and silenced final */
};

typedef struct entry {
  _Atomic unsigned char state;         /* ENTRY_* */
  int check;                           /* index in g_checks */
  uintptr_t key;                       /* call site, or a message hash */
  a2a_severity sev;                    /* the first occurrence's */
  unsigned long long count;            /* occurrences folded in (g_tab_mu) */
  _Atomic unsigned long long fast;     /* lock-free repeats of a settled
                                          entry, not in count nor in its
                                          check's occurrences */
  unsigned long long written;          /* count value in the JSONL (a2a_rt_mu) */
  off_t json_off;                      /* -1: not in the JSONL (a2a_rt_mu) */
  bool pending;                        /* being matched against the suppressions */
  bool fail_pending;                   /* an occurrence matched the failure
                                          policy while pending */
  bool silenced;                       /* matched a suppression */
  unsigned count_off;                  /* of the count digits in the line */
} entry;

static check_stat g_checks[A2A_CK__COUNT];   /* indexed by a2a_check_id */
static entry g_entries[MAX_ENTRIES];
static unsigned long g_dropped_full;         /* entry table full */
static bool g_summary_done;                  /* the summary was computed */
static unsigned long g_next_id;              /* a2a_rt_mu */
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

/* ---- tables (g_tab_mu held) ---- */

static int check_index(a2a_check_id id, a2a_severity sev) {
  if ((unsigned)id >= (unsigned)A2A_CK__COUNT) return -1;
  check_stat *c = &g_checks[id];
  if (!c->seen) {
    c->seen = true;
    c->max_sev = sev;
    c->is_report = id == A2A_CK_PERF_SUMMARY;
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

/* Find the entry, or create it when create; *fresh says whether it is new.
 * NULL if full, or absent and !create. create needs g_tab_mu; a lookup
 * (!create) does not: it reads a slot's identity only after an acquire load
 * of its state, and a free slot's fields are never written but by its
 * creator before its release store (no memset: a free slot is all zero, from
 * the static initializer or the fork child's reset). A lookup racing a
 * creation may miss the new entry: its caller then takes the locked path. */
static entry *entry_for(int check, uintptr_t key, bool *fresh, bool create) {
  size_t h = (size_t)((key ^ ((uint64_t)check * 0x9E3779B97F4A7C15ull)) * 0xff51afd7ed558ccdull >> 32);
  for (size_t probe = 0; probe < MAX_ENTRIES; probe++) {
    entry *e = &g_entries[(h + probe) & (MAX_ENTRIES - 1)];
    if (atomic_load_explicit(&e->state, memory_order_acquire) == ENTRY_FREE) {
      if (!create) return NULL;
      e->check = check;
      e->key = key;
      e->json_off = -1;
      atomic_store_explicit(&e->state, ENTRY_USED, memory_order_release);
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

/* "rank 3, pid 1234" / "pid 1234, rank unknown": whose summary a line is,
 * for the many ranks that share one terminal. */
static void who(char *buf, size_t cap) {
  int rank = a2a_rt_global_rank();
  if (rank >= 0) snprintf(buf, cap, "rank %d, pid %d", rank, a2a_rt.pid);
  else snprintf(buf, cap, "pid %d, rank unknown", a2a_rt.pid);
}

/* a2a_rt_mu held: the stack as it is logged, into g_frames. */
static int symbolize_stack(const a2a_stack *st) {
  int nframes = 0;
  int max = a2a_rt.opts.stack_depth < 32 ? (int)a2a_rt.opts.stack_depth : 32;
  for (int i = 0; st && i < st->n && nframes < max; i++)
    nframes += a2a_rt_symbolize(st->pc[i], g_frames + nframes, max - nframes);
  return nframes;
}

/* a2a_rt_mu held; g_frames[0..nframes) symbolized. */
static void write_finding(const a2a_finding *f, a2a_severity sev, entry *e, int nframes) {
  char now[40];
  a2a_rt_time_iso(now, sizeof now);
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

static void summary_emit(bool amended);

/* g_tab_mu held: a new distinct finding that is not silenced is counted;
 * whether it is to be written (under A2ACHECK_MAX_PER_CHECK). */
static bool count_fresh(check_stat *c, a2a_severity sev) {
  c->distinct_by_sev[sev]++;
  if (!c->is_report) atomic_fetch_add(&g_distinct_by_sev[sev], 1);
  if ((long)c->logged >= a2a_rt.opts.max_per_check) {
    c->suppressed++;
    return false;
  }
  c->logged++;   /* reserved now: the cap holds under concurrency */
  return true;
}

/* g_tab_mu held: e's sev, pending and silenced are final; from now on its
 * repeats may be counted without the lock (count_settled). */
static void settle(entry *e) {
  atomic_store_explicit(&e->state, ENTRY_SETTLED, memory_order_release);
}

/* No lock: the entry of (check, site) when a repeat at sev may be counted
 * by count_settled - settled, and sev at most its first severity, so that
 * check_index would change nothing (the check is seen, and its max_sev,
 * which never decreases, is at least e->sev). NULL: take the locked path. */
static entry *settled_for(a2a_check_id check, a2a_severity sev, const void *site) {
  bool fresh;
  entry *e = entry_for((int)check, (uintptr_t)site, &fresh, false);
  if (!e || atomic_load_explicit(&e->state, memory_order_acquire) != ENTRY_SETTLED ||
      sev > e->sev)
    return NULL;
  return e;
}

/* No lock: a repeat at sev of settled entry e of check, counted as
 * count_repeat would (with or without suppressions loaded: a settled entry
 * is silenced, and never matches the failure policy, or it is not, and
 * matches it whenever the occurrence does). The snapshot folds `fast` into
 * the entry's and its check's counts. */
static void count_settled(entry *e, a2a_check_id check, a2a_severity sev) {
  atomic_fetch_add_explicit(&e->fast, 1, memory_order_relaxed);
  if (!e->silenced && a2a_rt_failpol_hit(&a2a_rt.failpol, check, sev))
    atomic_store(&g_fail_matched, true);
}

/* A repeat of entry e of check c: counted, matched against the failure
 * policy as its entry was (silenced: never; match pending: remembered).
 * g_tab_mu held. */
static void count_repeat(check_stat *c, entry *e, bool fail_now, bool supp) {
  e->count++;
  if (e->silenced) c->silenced_occ++;
  else if (e->pending) e->fail_pending |= fail_now;
  else if (fail_now && supp) atomic_store(&g_fail_matched, true);
}

static a2a_severity clamp_sev(a2a_severity s) {
  return s > A2A_SEV_ERROR ? A2A_SEV_ERROR : s < A2A_SEV_INFO ? A2A_SEV_INFO : s;
}

bool a2a_report_repeat(a2a_check_id check, a2a_severity severity, const void *site) {
  if (!site || (unsigned)check >= (unsigned)A2A_CK__COUNT || !accepting(a2a_rt_state()))
    return false; /* a2a_report decides (and drops) */
  if (!a2a_check_on(check)) return true; /* a2a_report would drop it unseen */
  if (t_in_report) return false;         /* a2a_report counts the nested drop */
  a2a_severity sev = clamp_sev(severity);
  entry *e = settled_for(check, sev, site);
  if (e) {
    count_settled(e, check, sev);
    return true;
  }
  bool fail_now = a2a_rt_failpol_matches(&a2a_rt.failpol, check, sev);
  const a2a_rt_supp *supp = a2a_rt_supp_active();
  bool fresh; /* (never set: nothing is created) */
  pthread_mutex_lock(&g_tab_mu);
  e = entry_for((int)check, (uintptr_t)site, &fresh, false);
  if (e) {
    check_stat *c = &g_checks[check_index(check, sev)];
    c->occurrences++;
    count_repeat(c, e, fail_now, supp != NULL);
  }
  pthread_mutex_unlock(&g_tab_mu);
  if (e && fail_now && !supp) atomic_store(&g_fail_matched, true);
  return e != NULL;
}

static bool repeats_locked(const a2a_repeat *r, size_t n);

/* The calling thread's last lock-free batch of a2a_report_repeats, per
 * position: the settled entry each repeat was counted on (NULL: none). A
 * caller that replays the same findings (layout's remembered operations,
 * every step) finds them here instead of probing the table. One pointer
 * per position, its identity read from the entry itself: a signal handler
 * that repeats findings on this thread between two accesses cannot leave
 * half of a position, and an entry that holds a repeat's (check, site) is
 * the one entry of it (entry_for never creates a second one). Only settled
 * entries are stored; they stay settled, identities never change and
 * entries are never removed while the process runs - only the fork child's
 * reset clears the table, with one thread left, whose memo it clears with
 * it (an entry created there again for the same finding may be pending). */
static __thread entry *_Atomic t_rep[A2A_REPEATS_MAX];

/* The memo's entries for r[0..n) into e, when each holds its repeat's
 * (check, site), its check is on and its severity not above the entry's
 * first: then settled_for would find each of them (sev is final once
 * settled, and this thread saw it settled), and a2a_report_repeats counts
 * them. Otherwise (a check off included) its probing path decides. */
static bool memo_hit(const a2a_repeat *r, size_t n, entry **e) {
  for (size_t k = 0; k < n; k++) {
    entry *m = atomic_load_explicit(&t_rep[k], memory_order_relaxed);
    if (!m || m->key != (uintptr_t)r[k].site || m->check != (int)r[k].check ||
        clamp_sev(r[k].severity) > m->sev || !a2a_check_on(r[k].check))
      return false;
    e[k] = m;
  }
  return true;
}

/* a2a_report_repeats past the memo: the entries probed. */
__attribute__((noinline)) static bool repeats_probe(const a2a_repeat *r, size_t n) {
  if (n == 0) return true;
  if (!r || n > A2A_REPEATS_MAX || !accepting(a2a_rt_state()) || t_in_report) return false;
  /* Lock-free when every entry is settled (or its check off): all are
   * found first, then all counted; a settled entry stays so, so all or
   * none holds. Otherwise the locked path decides, from scratch. */
  entry *e[A2A_REPEATS_MAX];
  for (size_t k = 0; k < n; k++) {
    if (!r[k].site || (unsigned)r[k].check >= (unsigned)A2A_CK__COUNT) return false;
    e[k] = NULL;
    if (a2a_check_on(r[k].check) &&
        !(e[k] = settled_for(r[k].check, clamp_sev(r[k].severity), r[k].site)))
      return repeats_locked(r, n);
  }
  for (size_t i = 0; i < n; i++) {
    if (!e[i]) continue;
    count_settled(e[i], r[i].check, clamp_sev(r[i].severity));
    atomic_store_explicit(&t_rep[i], e[i], memory_order_relaxed);
  }
  return true;
}

/* The memo's batch counted without a frame for repeats_probe's scratch:
 * the same tests (memo_hit stands for its probes), then the same counts. */
bool a2a_report_repeats(const a2a_repeat *r, size_t n) {
  entry *e[A2A_REPEATS_MAX];
  if (n - 1 >= A2A_REPEATS_MAX || !r || t_in_report || !memo_hit(r, n, e) ||
      !accepting(a2a_rt_state()))
    return repeats_probe(r, n);
  for (size_t k = 0; k < n; k++) count_settled(e[k], r[k].check, clamp_sev(r[k].severity));
  return true;
}

/* a2a_report_repeats with g_tab_mu: some entry is missing, or not settled. */
static bool repeats_locked(const a2a_repeat *r, size_t n) {
  bool fail_now[A2A_REPEATS_MAX];
  for (size_t i = 0; i < n; i++) {
    if (!r[i].site || (unsigned)r[i].check >= (unsigned)A2A_CK__COUNT) return false;
    fail_now[i] = a2a_check_on(r[i].check) &&
                  a2a_rt_failpol_matches(&a2a_rt.failpol, r[i].check, clamp_sev(r[i].severity));
  }
  entry *e[A2A_REPEATS_MAX];
  const a2a_rt_supp *supp = a2a_rt_supp_active();
  bool fresh, any_fail = false;
  pthread_mutex_lock(&g_tab_mu);
  /* Every entry first: none missing, or nothing is counted. Entries are
   * never removed while the process runs, so those found stay valid. */
  for (size_t i = 0; i < n; i++) {
    e[i] = NULL;
    if (!a2a_check_on(r[i].check)) continue; /* a2a_report would drop it unseen */
    if (!(e[i] = entry_for((int)r[i].check, (uintptr_t)r[i].site, &fresh, false))) {
      pthread_mutex_unlock(&g_tab_mu);
      return false;
    }
  }
  for (size_t i = 0; i < n; i++) {
    if (!e[i]) continue;
    check_stat *c = &g_checks[check_index(r[i].check, clamp_sev(r[i].severity))];
    c->occurrences++;
    count_repeat(c, e[i], fail_now[i], supp != NULL);
    any_fail |= fail_now[i];
  }
  pthread_mutex_unlock(&g_tab_mu);
  if (any_fail && !supp) atomic_store(&g_fail_matched, true);
  return true;
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
  a2a_severity sev = clamp_sev(f->severity);
  int wait_s = f->patient ? REPORT_PATIENT_S : REPORT_WAIT_S;
  /* With suppressions the failure policy waits for the match (below). */
  const a2a_rt_supp *supp = a2a_rt_supp_active();
  bool fail_now = a2a_rt_failpol_matches(&a2a_rt.failpol, f->check, sev);
  if (fail_now && !supp) atomic_store(&g_fail_matched, true);

  uintptr_t key = f->site ? (uintptr_t)f->site : (uintptr_t)fnv1a(f->message) | 1;

  /* Count: every occurrence, whatever the writer is doing. */
  entry *e = NULL;
  check_stat *c = NULL;
  bool write = false, match = false;
  pthread_mutex_lock(&g_tab_mu);
  int ci = check_index(f->check, sev);
  if (ci < 0) {
    g_dropped_full++;
    if (fail_now && supp) atomic_store(&g_fail_matched, true);
  } else {
    c = &g_checks[ci];
    c->occurrences++;
    bool fresh = false;
    e = entry_for(ci, key, &fresh, true);
    if (!e) {
      g_dropped_full++;
      if (fail_now && supp) atomic_store(&g_fail_matched, true);
    } else if (!fresh) {
      count_repeat(c, e, fail_now, supp != NULL);
    } else {
      e->sev = sev;
      e->count = 1;
      if (supp && !c->is_report) {
        e->pending = true;
        e->fail_pending = fail_now;
        match = true;
      } else {
        if (fail_now && supp) atomic_store(&g_fail_matched, true);
        write = count_fresh(c, sev);
        settle(e);
      }
    }
  }
  pthread_mutex_unlock(&g_tab_mu);

  if (match) {
    /* Matched once, on this thread: the stack as it would be logged. */
    a2a_stack captured;
    const a2a_stack *st = f->stack;
    if (!st && f->capture_stack) {
      a2a_rt_capture_stack(&captured);
      st = &captured;
    }
    bool locked = a2a_rt_lock_within(wait_s);
    int nframes = locked ? symbolize_stack(st) : 0;
    int rule = locked ? a2a_rt_supp_match(supp, a2a_check_name(f->check),
                                          (const char(*)[A2A_RT_FRAME_LEN])g_frames, nframes)
                      : -1;
    pthread_mutex_lock(&g_tab_mu);
    e->pending = false;
    if (rule >= 0) {
      e->silenced = true;
      c->silenced++;
      c->suppressed++;
      c->silenced_occ += e->count;
    } else {
      if (e->fail_pending) atomic_store(&g_fail_matched, true);
      write = count_fresh(c, sev);
      if (write && !locked) {
        c->logged--;
        c->unwritten++;
        write = false;
      }
    }
    settle(e);
    pthread_mutex_unlock(&g_tab_mu);
    if (locked) {
      if (write) {
        bool late = g_summary_done;
        write_finding(f, sev, e, nframes);
        if (late) summary_emit(true);
      }
      pthread_mutex_unlock(&a2a_rt_mu);
    }
    write = false;
  }

  if (write) {
    /* The stack is captured only for a finding that is written (not for
     * repeats), on this thread and before the writer's lock. */
    a2a_stack captured;
    const a2a_stack *st = f->stack;
    if (!st && f->capture_stack) {
      a2a_rt_capture_stack(&captured);
      st = &captured;
    }
    if (a2a_rt_lock_within(wait_s)) {
      /* g_summary_done only changes with a2a_rt_mu held. */
      bool late = g_summary_done;
      write_finding(f, sev, e, symbolize_stack(st));
      if (late) summary_emit(true);
      pthread_mutex_unlock(&a2a_rt_mu);
    } else {
      pthread_mutex_lock(&g_tab_mu);
      c->logged--;
      c->unwritten++;
      pthread_mutex_unlock(&g_tab_mu);
    }
  }
  t_in_report = 0;
  errno = saved;
}

bool a2a_rt_report_fail_matched(void) { return atomic_load(&g_fail_matched); }

/* ---- summary ---- */

static char g_sum_text[16384];
static char g_sum_json[16384];
static unsigned long long g_counts[MAX_ENTRIES]; /* snapshot of entry counts */
static check_stat g_snap[A2A_CK__COUNT];        /* snapshot of the checks */
static int g_exit_status;
static const char *g_fail_reason;

/* The summary's numbers, computed from a snapshot of the tables. */
typedef struct sum_counts {
  unsigned long n[3];          /* distinct findings by severity */
  unsigned long total, dropped_full, dropped_nested, unwritten, reports, silenced;
  unsigned long long occ;
} sum_counts;

/* a2a_rt_mu held: snapshot the tables (briefly under g_tab_mu) and patch
 * the final counts into the JSONL (fixed-width field, in place). Each
 * entry's lock-free repeats (`fast`) are read once and that value added to
 * its count and its check's, so that the snapshot is one cut of them. */
static void snapshot(sum_counts *k) {
  pthread_mutex_lock(&g_tab_mu);
  memcpy(g_snap, g_checks, sizeof g_snap);
  for (size_t i = 0; i < MAX_ENTRIES; i++) {
    entry *e = &g_entries[i];
    g_counts[i] = 0;
    if (atomic_load_explicit(&e->state, memory_order_relaxed) == ENTRY_FREE) continue;
    unsigned long long fast = atomic_load_explicit(&e->fast, memory_order_relaxed);
    g_counts[i] = e->count + fast;
    g_snap[e->check].occurrences += fast;
    if (e->silenced) g_snap[e->check].silenced_occ += fast;
  }
  k->dropped_full = g_dropped_full;
  g_summary_done = true;
  pthread_mutex_unlock(&g_tab_mu);

  for (size_t i = 0; i < MAX_ENTRIES; i++) {
    entry *e = &g_entries[i];
    if (e->json_off < 0 || g_counts[i] == e->written) continue;
    char digits[A2A_RT_COUNT_WIDTH + 1];
    snprintf(digits, sizeof digits, "%-*llu", A2A_RT_COUNT_WIDTH, g_counts[i]);
    a2a_rt_log_patch_json(e->json_off + (off_t)e->count_off, digits, A2A_RT_COUNT_WIDTH);
    e->written = g_counts[i];
  }
  memset(k->n, 0, sizeof k->n);
  k->occ = 0;
  k->unwritten = k->reports = k->silenced = 0;
  for (int i = 0; i < A2A_CK__COUNT; i++) {
    const check_stat *c = &g_snap[i];
    if (!c->seen) continue;
    if (c->is_report) { /* statistics about the run: listed apart */
      k->reports += c->distinct_by_sev[0] + c->distinct_by_sev[1] + c->distinct_by_sev[2];
      continue;
    }
    for (int s = 0; s < 3; s++) k->n[s] += c->distinct_by_sev[s];
    k->occ += c->occurrences - c->silenced_occ;
    k->unwritten += c->unwritten;
    k->silenced += c->silenced;
  }
  k->total = k->n[0] + k->n[1] + k->n[2];
  k->dropped_nested = atomic_load(&g_dropped_nested);
}

/* a2a_rt_mu held. amended: a finding arrived after the summary was
 * written; write the summary again (logs: a full one, marked amended;
 * stderr: one line). */
static void summary_emit(bool amended) {
  sum_counts k;
  snapshot(&k);
  int exit_status = g_exit_status;
  const char *fail_reason = g_fail_reason;
  unsigned long dropped = k.dropped_full + k.dropped_nested;
  bool fail = atomic_load(&g_fail_matched);
  char fail_on[512], me[64];
  a2a_rt_failpol_describe(&a2a_rt.failpol, fail_on, sizeof fail_on);
  who(me, sizeof me);
  /* A process that made no NCCL call and found nothing (a launcher such as
   * torchrun's agent, a helper process) leaves no files and says nothing. */
  if (!amended && !a2a_rt_log_opened() && !a2a_rt_nccl_seen() && k.total == 0 && !k.reports &&
      !dropped && !fail && !fail_reason)
    return;
  const char *werr_path;
  int werr = a2a_rt_log_write_error(&werr_path);

  /* Text (log and stderr). Findings only in the counts and the table; the
   * perf.summary reports on a line of their own. */
  size_t tl = 0;
  bool ovf = false;
  char *T = g_sum_text;
  size_t TC = sizeof g_sum_text;
  tl = a2a_rt_printf(T, TC, tl, &ovf,
                     "summary%s for %s: %lu distinct finding%s (%lu error, %lu warning, %lu info), "
                     "%llu occurrence%s\n",
                     amended ? " (amended: findings arrived after the first one)" : "", me,
                     k.total, k.total == 1 ? "" : "s", k.n[2], k.n[1], k.n[0], k.occ,
                     k.occ == 1 ? "" : "s");
  if (k.total || k.silenced)
    tl = a2a_rt_printf(T, TC, tl, &ovf, "  %-34s %-8s %8s %10s %12s\n", "check", "severity",
                       "logged", "suppressed", "occurrences");
  for (int i = 0; i < A2A_CK__COUNT; i++) {
    const check_stat *c = &g_snap[i];
    if (!c->seen || c->is_report) continue;
    tl = a2a_rt_printf(T, TC, tl, &ovf, "  %-34s %-8s %8lu %10lu %12llu\n",
                       a2a_check_name((a2a_check_id)i), a2a_rt_severity_name(c->max_sev),
                       c->logged, c->suppressed, c->occurrences);
  }
  if (k.reports)
    tl = a2a_rt_printf(T, TC, tl, &ovf,
                       "  and %lu perf.summary report%s (per-communicator statistics, not "
                       "findings) %s\n",
                       k.reports, k.reports == 1 ? "" : "s",
                       a2a_rt_log_unavailable() ? "on stderr above" : "in the log");
  if (k.silenced) {
    const a2a_rt_supp *sp = a2a_rt_supp_active();
    tl = a2a_rt_printf(T, TC, tl, &ovf,
                       "  %lu finding(s) silenced by A2ACHECK_SUPPRESSIONS=%.200s (counted as "
                       "suppressed, not in the log, not for A2ACHECK_FAIL_ON)\n",
                       k.silenced, sp ? sp->file : "?");
  }
  if (k.unwritten)
    tl = a2a_rt_printf(T, TC, tl, &ovf,
                       "  %lu of these finding(s) are counted but not in the log: the log writer "
                       "was busy for more than %d s\n",
                       k.unwritten, REPORT_WAIT_S);
  if (k.dropped_full)
    tl = a2a_rt_printf(T, TC, tl, &ovf,
                       "  %lu occurrence(s) not counted: the table of %d distinct findings is "
                       "full\n",
                       k.dropped_full, MAX_ENTRIES);
  if (k.dropped_nested)
    tl = a2a_rt_printf(T, TC, tl, &ovf,
                       "  %lu finding(s) dropped: raised on a thread that was already reporting "
                       "one (a signal handler)\n",
                       k.dropped_nested);
  if (werr)
    tl = a2a_rt_printf(T, TC, tl, &ovf, "  the log is incomplete: writing %.400s failed (%s)\n",
                       werr_path, strerror(werr));
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
  snprintf(msg, sizeof msg, "%lu distinct findings (%lu error, %lu warning, %lu info)", k.total,
           k.n[2], k.n[1], k.n[0]);
  jl = a2a_rt_puts(J, JC, jl, "{\"check\":\"a2acheck.summary\",\"severity\":\"info\",\"rank\":", &ovf);
  jl = rank >= 0 ? a2a_rt_printf(J, JC, jl, &ovf, "%d", rank) : a2a_rt_puts(J, JC, jl, "null", &ovf);
  jl = a2a_rt_puts(J, JC, jl, ",\"host\":", &ovf);
  jl = a2a_rt_put_jstr(J, JC, jl, a2a_rt.host, &ovf);
  jl = a2a_rt_printf(J, JC, jl, &ovf, ",\"pid\":%d,\"message\":", a2a_rt.pid);
  jl = a2a_rt_put_jstr(J, JC, jl, msg, &ovf);
  jl = a2a_rt_printf(J, JC, jl, &ovf,
                     ",\"details\":{\"findings\":{\"error\":%lu,\"warning\":%lu,\"info\":%lu},"
                     "\"occurrences\":%llu,\"dropped\":%lu,\"unwritten\":%lu,\"reports\":%lu,"
                     "\"amended\":%s,\"nccl_calls_seen\":%s,"
                     "\"exit_status\":%d,\"fail_on\":\"%.400s\",\"fail_matched\":%s,"
                     "\"failed_now\":%s,\"suppressions\":%lu,",
                     k.n[2], k.n[1], k.n[0], k.occ, dropped, k.unwritten, k.reports,
                     amended ? "true" : "false", a2a_rt_nccl_seen() ? "true" : "false",
                     exit_status, fail_on, fail ? "true" : "false",
                     fail_reason ? "true" : "false", k.silenced);
  if (werr) {
    jl = a2a_rt_puts(J, JC, jl, "\"log_write_error\":", &ovf);
    jl = a2a_rt_put_jstr(J, JC, jl, strerror(werr), &ovf);
    jl = a2a_rt_puts(J, JC, jl, ",", &ovf);
  }
  jl = a2a_rt_puts(J, JC, jl, "\"checks\":[", &ovf);
  for (int i = 0, n = 0; i < A2A_CK__COUNT; i++) {
    const check_stat *c = &g_snap[i];
    if (!c->seen) continue;
    jl = a2a_rt_puts(J, JC, jl, n++ ? ",{\"check\":" : "{\"check\":", &ovf);
    jl = a2a_rt_put_jstr(J, JC, jl, a2a_check_name((a2a_check_id)i), &ovf);
    jl = a2a_rt_printf(J, JC, jl, &ovf,
                       ",\"severity\":\"%s\",\"finding\":%s,\"logged\":%lu,\"suppressed\":%lu,"
                       "\"suppressed_by_file\":%lu,\"unwritten\":%lu,\"occurrences\":%llu}",
                       a2a_rt_severity_name(c->max_sev), c->is_report ? "false" : "true",
                       c->logged, c->suppressed, c->silenced, c->unwritten, c->occurrences);
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
                          a2a_rt.pid, k.total);
  }

  char header[80];
  int hn = snprintf(header, sizeof header, "---- a2acheck summary%s ----\n",
                    amended ? " (amended)" : "");
  a2a_rt_log_append(header, (size_t)hn, NULL, 0, NULL);
  a2a_rt_log_append(T, tl, J, jl, NULL);

  /* stderr: the table when something was found, one line otherwise; nothing
   * with A2ACHECK_LOG_STDERR=none unless the exit status is changed. Every
   * line says whose summary it is. */
  if (a2a_rt.opts.log_stderr == A2A_ECHO_NONE && !fail && !fail_reason) return;
  const char *path = a2a_rt_log_jsonl_path();
  if (amended) {
    a2a_rt_stderr("summary amended for %s: %lu distinct finding%s (%lu error, %lu warning, "
                  "%lu info) after findings reported once the summary was written%s%s",
                  me, k.total, k.total == 1 ? "" : "s", k.n[2], k.n[1], k.n[0],
                  *path ? "; details: " : "", path);
  } else if (k.total == 0 && !dropped && !fail_reason && !werr) {
    char rep[160] = "";
    if (k.reports)
      snprintf(rep, sizeof rep, " (%lu perf.summary report%s %s)", k.reports,
               k.reports == 1 ? "" : "s", a2a_rt_log_unavailable() ? "on stderr above" : "in the log");
    if (k.silenced)
      snprintf(rep + strlen(rep), sizeof rep - strlen(rep),
               " (%lu silenced by A2ACHECK_SUPPRESSIONS)", k.silenced);
    a2a_rt_stderr("%s: no findings%s%s%s", me, rep, *path ? "; log: " : "", path);
  } else {
    /* One write(2) for the whole block, so the summaries of several ranks
     * sharing a terminal do not interleave line by line. */
    static char out[20480];
    size_t ol = 0;
    bool o2 = false;
    for (char *line = T; *line;) {
      char *nl = strchr(line, '\n');
      int n = (int)(nl ? (size_t)(nl - line) : strlen(line));
      ol = a2a_rt_printf(out, sizeof out, ol, &o2, "a2acheck: %.*s\n", n, line);
      line += n + (nl ? 1 : 0);
    }
    if (*path) ol = a2a_rt_printf(out, sizeof out, ol, &o2, "a2acheck: details: %s\n", path);
    ssize_t w = write(STDERR_FILENO, out, ol);
    (void)w;
  }
}

void a2a_rt_report_summary(int exit_status, const char *fail_reason) {
  if (!a2a_rt_lock_within(SUMMARY_WAIT_S)) {
    a2a_rt_stderr("warning: a finding being written did not complete within %d s; "
                  "no summary", SUMMARY_WAIT_S);
    return;
  }
  g_exit_status = exit_status;
  g_fail_reason = fail_reason;
  summary_emit(false);
  pthread_mutex_unlock(&a2a_rt_mu);
}

void a2a_rt_report_after_fork_child(void) {
  /* Called in the child before a2a_rt_mu is released (or re-created, when
   * prepare could not take it): only this thread exists. A thread of the
   * parent may have held g_tab_mu at the fork: a fresh one. */
  pthread_mutex_init(&g_tab_mu, NULL);
  memset(g_checks, 0, sizeof g_checks);
  memset(g_entries, 0, sizeof g_entries);
  g_next_id = 0;
  g_dropped_full = 0;
  g_summary_done = false;
  atomic_store(&g_dropped_nested, 0);
  atomic_store(&g_fail_matched, false);
  for (int k = 0; k < 3; k++) atomic_store(&g_distinct_by_sev[k], 0);
  t_in_report = 0;
  for (size_t k = 0; k < A2A_REPEATS_MAX; k++) /* its entries are gone */
    atomic_store_explicit(&t_rep[k], NULL, memory_order_relaxed);
}

/* ---- public API (include/a2acheck.h) ---- */

A2A_RT_EXPORT unsigned long a2acheck_finding_count(int min_severity) {
  unsigned long n = 0;
  for (int k = min_severity < 0 ? 0 : min_severity; k < 3; k++)
    n += atomic_load(&g_distinct_by_sev[k]);
  return n;
}
