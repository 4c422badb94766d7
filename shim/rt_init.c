/* rt_init.c - the runtime's life cycle: lazy initialization, the
 * thread-local reentrancy guard, thread indices, the clock, and the
 * bookkeeping the interposition layer reports to (NCCL calls seen,
 * unresolved symbols).
 *
 * Nothing runs in a constructor. The first intercepted call on any thread
 * calls a2a_rt_enter(), which runs rt_init() once (pthread_once): read
 * A2ACHECK_DISABLE and stop there if it is 1 (pure pass-through: no files,
 * no threads, no handlers); otherwise parse the options, print the help if
 * asked, learn pid/host/rank, install the exit and fork handlers and hand
 * the options and host services to the core (a2a_core_init). Calls the
 * initializing thread makes meanwhile pass through; other threads wait in
 * pthread_once until the runtime is ready, so none of their calls escape.
 *
 * The guard: a thread-local depth. a2a_rt_enter() returns true only for the
 * outermost intercepted call of a thread while the runtime is READY, and
 * sets the depth; a2a_rt_leave() clears it. Inner calls (NCCL calling its
 * own exported functions through the PLT, a callback re-entering the API)
 * see the depth and pass through. Cost on the hot path: one relaxed load of
 * a read-mostly global and one TLS access.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "a2acheck.h"
#include "rt_internal.h"
#include "xrank_rec.h"

#define TLS __thread __attribute__((tls_model("initial-exec")))

a2a_rt_globals a2a_rt;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
_Atomic int a2a_rt_g_state = A2A_RT_UNINIT;
#define g_state a2a_rt_g_state
_Static_assert((int)A2A_RT_READY == (int)A2A_RT_STATE_READY, "the inline guard's READY");
static _Atomic uint32_t g_next_thread;
static _Atomic int g_nccl_seen;

A2A_RT_TLS a2a_rt_thread a2a_rt_t;
#define t_depth a2a_rt_t.depth
#define t_index a2a_rt_t.index
static TLS int t_in_init;

int a2a_rt_state(void) { return atomic_load_explicit(&g_state, memory_order_acquire); }
_Atomic uint64_t a2a_rt_ready_kinds;
/* a2a_rt_ready_kinds is nonzero only while the state is READY: cleared
 * before any other state is stored, set after READY is (a2a_kinds_wanted
 * is final then: a2a_core_init returned), with the READY mark. */
void a2a_rt_set_state(int s) {
  if (s != A2A_RT_READY) atomic_store_explicit(&a2a_rt_ready_kinds, 0, memory_order_release);
  atomic_store_explicit(&g_state, s, memory_order_release);
  if (s == A2A_RT_READY)
    atomic_store_explicit(&a2a_rt_ready_kinds,
                          atomic_load_explicit(&a2a_kinds_wanted, memory_order_relaxed) |
                              1ull << A2A_RT_READY_MARK,
                          memory_order_release);
}

void a2a_rt_stderr(const char *fmt, ...) {
  char line[1024];
  int saved = errno;
  size_t n = (size_t)snprintf(line, sizeof line, "a2acheck: ");
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
  va_end(ap);
  if (k > 0) n += (size_t)k < sizeof line - n - 1 ? (size_t)k : sizeof line - n - 2;
  line[n++] = '\n';
  ssize_t w = write(STDERR_FILENO, line, n);
  (void)w;
  errno = saved;
}

static const char *real_getenv(const char *name) { return getenv(name); }

/* Options warnings go to stderr at once and are kept for the log header. */
static void init_warn(void *arg, const char *line) {
  (void)arg;
  a2a_rt_stderr("warning: %s", line);
  size_t have = strlen(a2a_rt.init_warnings);
  snprintf(a2a_rt.init_warnings + have, sizeof a2a_rt.init_warnings - have,
           "  warning: %s\n", line);
}

static void learn_process(void) {
  a2a_rt.pid = (int)getpid();
  char h[256];
  if (gethostname(h, sizeof h) != 0) strcpy(h, "unknown-host");
  h[sizeof h - 1] = '\0';
  /* Short host name, like NCCL's log prefix; file names stay readable. */
  h[strcspn(h, ".")] = '\0';
  snprintf(a2a_rt.host, sizeof a2a_rt.host, "%.63s", h[0] ? h : "unknown-host");
  a2a_rt.env_rank = a2a_rt_env_rank(real_getenv);

  /* The log directory is made absolute now, so a later chdir() of the
   * application does not move the logs between the first and the last
   * write (or between the parent and a forked child). */
  const char *dir = a2a_rt.opts.log_dir ? a2a_rt.opts.log_dir : "./a2acheck-logs";
  char jobdir[sizeof a2a_rt.log_dir];
  if (a2a_rt.opt_from_env[A2A_RT_OPT_log_dir]) {
    snprintf(a2a_rt.log_dir_why, sizeof a2a_rt.log_dir_why, "A2ACHECK_LOG_DIR");
  } else {
    /* The default: one run directory per job (rt_logdir.c), decided now so
     * that forked children share it. */
    char label[160];
    const char *src = a2a_rt_job_label(real_getenv, a2a_rt.host, a2a_rt.pid, (int)getppid(),
                                       label, sizeof label);
    snprintf(jobdir, sizeof jobdir, "%.800s/%.160s", dir, label);
    dir = jobdir;
    snprintf(a2a_rt.log_dir_why, sizeof a2a_rt.log_dir_why, "default, run directory from %s",
             src);
  }
  char cwd[PATH_MAX];
  if (dir[0] == '/' || !getcwd(cwd, sizeof cwd)) {
    snprintf(a2a_rt.log_dir, sizeof a2a_rt.log_dir, "%s", dir);
  } else {
    if (dir[0] == '.' && dir[1] == '/') dir += 2;
    int n = snprintf(a2a_rt.log_dir, sizeof a2a_rt.log_dir, "%s/%s", cwd, dir);
    if (n < 0 || (size_t)n >= sizeof a2a_rt.log_dir)   /* keep it relative */
      snprintf(a2a_rt.log_dir, sizeof a2a_rt.log_dir, "%s", dir);
  }

  FILE *f = fopen("/proc/self/cmdline", "re");
  if (f) {
    size_t n = fread(a2a_rt.argv0, 1, sizeof a2a_rt.argv0 - 1, f);
    a2a_rt.argv0[n] = '\0';
    for (size_t i = 0; i + 1 < n; i++)
      if (a2a_rt.argv0[i] == '\0') a2a_rt.argv0[i] = ' ';
    fclose(f);
  }
}

/* The analyzers this runtime runs, in dispatch order: the local ones of
 * analyzers/ (analyzers.inc), then cross-rank checking (xrank/), which sees
 * every event after the local checks have reported on it. */
static const a2a_analyzer *g_analyzers[16];
static size_t g_nanalyzers;

static void compose_analyzers(void) {
  g_nanalyzers = 0;
  for (size_t i = 0; i < a2a_nlocal_analyzers && g_nanalyzers < 15; i++)
    g_analyzers[g_nanalyzers++] = a2a_local_analyzers[i];
  g_analyzers[g_nanalyzers++] = &a2a_analyzer_xrank;
  xr_set_port(&xr_process_port);
}

static void rt_init(void) {
  int saved = errno;
  /* A2ACHECK_DISABLE first, and alone: when it is 1 nothing else happens. */
  long disable = 0;
  const char *d = getenv("A2ACHECK_DISABLE");
  if (d && *d && a2a_rt_parse_long(d, 0, 1, &disable) && disable == 1) {
    a2a_rt_set_state(A2A_RT_DISABLED);
    errno = saved;
    return;
  }
  a2a_rt_options_parse(&a2a_rt.opts, a2a_rt.opt_from_env, real_getenv, init_warn, NULL);
  if (a2a_rt.opts.help) {
    static char help[16384];
    size_t n = a2a_rt_options_help(help, sizeof help, a2a_rt.opts.help == 2);
    ssize_t w = write(STDERR_FILENO, help, n);
    (void)w;
  }
  a2a_rt_checks_parse(&a2a_rt.rules, a2a_rt.opts.checks, init_warn, NULL);
  a2a_check_set enabled = a2a_rt_checks_set(&a2a_rt.rules);
  a2a_checks_set_enabled(&enabled);
  a2a_rt_failpol_parse(&a2a_rt.failpol, a2a_rt.opts.fail_on, init_warn, NULL);
  /* The log header shows the policy in effect, canonically. */
  static char fail_on[512];
  a2a_rt_failpol_describe(&a2a_rt.failpol, fail_on, sizeof fail_on);
  a2a_rt.opts.fail_on = fail_on;
  if (a2a_rt.failpol.defaulted) a2a_rt.opt_from_env[A2A_RT_OPT_fail_on] = 0;
  /* Read once, here: matching happens only when a finding is reported. */
  if (a2a_rt_supp_load(a2a_rt.opts.suppressions, init_warn, NULL) < 0) {
    a2a_rt.opts.suppressions = NULL;   /* the header shows only what is in effect */
    a2a_rt.opt_from_env[A2A_RT_OPT_suppressions] = 0;
  }
  learn_process();
  a2a_rt_report_init();
  a2a_rt_exit_install();
  /* From here the report sink accepts findings: an analyzer whose init
   * fails is reported (a2acheck.analyzer-disabled). */
  a2a_rt_set_state(A2A_RT_INITIALIZING);
  compose_analyzers();
  a2a_core_init(&a2a_rt.opts, &a2a_rt_host, g_analyzers, g_nanalyzers);
  a2a_rt_set_state(A2A_RT_READY);
  errno = saved;
}

bool a2a_rt_enter_slow(void) {
  int s = atomic_load_explicit(&g_state, memory_order_acquire);
  if (s != A2A_RT_READY) {
    /* UNINIT or INITIALIZING: every thread but the initializing one waits
     * in pthread_once (microseconds), so no call of another thread escapes
     * analysis while the runtime starts. */
    if (s == A2A_RT_DISABLED || s == A2A_RT_FINISHED || t_in_init) return false;
    t_in_init = 1;
    pthread_once(&g_once, rt_init);
    t_in_init = 0;
    if (a2a_rt_state() != A2A_RT_READY) return false;
  }
  if (t_depth) return false;
  t_depth = 1;
  return true;
}

/* Threads that have exited, by index (a2a_rt_thread_exited): one bit per
 * index below EXIT_BITS, set by the destructor of a TLS key that a thread
 * registers when it gets its index (its first analyzed call; the slow path
 * below, once per thread). Indices are never reused, so a bit never goes
 * stale. A process's main thread ends with the process (exit runs no TLS
 * destructors): never marked. Read by the cross-rank analyzer's state
 * reports: a rank whose one posting thread has exited is no longer "may
 * still post" from that thread (xrank_wfg.c). Only story text depends on
 * it: a bit set while the thread's other TLS destructors may still call
 * into CUDA, or a first call made inside a signal handler (where
 * pthread_setspecific may allocate: the application's own CUDA call there
 * is not async-signal-safe either), changes no verdict. */
#define EXIT_BITS 8192
static _Atomic uint64_t g_exited[EXIT_BITS / 64];
static pthread_key_t g_exit_key;
static pthread_once_t g_exit_once = PTHREAD_ONCE_INIT;
static _Atomic int g_exit_key_ok;

static void thread_exited(void *p) {
  uint32_t i = (uint32_t)(uintptr_t)p;
  if (i && i < EXIT_BITS)
    atomic_fetch_or_explicit(&g_exited[i / 64], 1ull << (i % 64), memory_order_release);
}

static void exit_key_init(void) {
  if (pthread_key_create(&g_exit_key, thread_exited) == 0) atomic_store(&g_exit_key_ok, 1);
}

uint32_t a2a_rt_thread_index_slow(void) {
  if (t_index == 0) {
    t_index = atomic_fetch_add_explicit(&g_next_thread, 1, memory_order_relaxed) + 1;
    if (t_index < EXIT_BITS) {
      int saved = errno; /* (the application's errno is never changed) */
      pthread_once(&g_exit_once, exit_key_init);
      if (atomic_load(&g_exit_key_ok))
        (void)pthread_setspecific(g_exit_key, (void *)(uintptr_t)t_index);
      errno = saved;
    }
  }
  return t_index;
}

bool a2a_rt_thread_exited(uint32_t thread) {
  return thread && thread < EXIT_BITS &&
         (atomic_load_explicit(&g_exited[thread / 64], memory_order_acquire) >> (thread % 64) & 1);
}


void a2a_rt_note_nccl_call_slow(void) {
  /* A thread writes the shared flag once, not on every call. */
  a2a_rt_t.nccl_noted = true;
  atomic_store_explicit(&g_nccl_seen, 1, memory_order_relaxed);
}

bool a2a_rt_nccl_seen(void) {
  return atomic_load_explicit(&g_nccl_seen, memory_order_relaxed) != 0;
}

/* Symbols already reported by a2a_rt_unresolved (names are the table's
 * static strings, compared by content). */
static const char *g_unresolved[64];
static int g_nunresolved;
static pthread_mutex_t g_unresolved_mu = PTHREAD_MUTEX_INITIALIZER;

void a2a_rt_unresolved(const char *symbol, const char *library) {
  int saved = errno;
  bool first = true;
  pthread_mutex_lock(&g_unresolved_mu);
  for (int i = 0; i < g_nunresolved; i++)
    if (strcmp(g_unresolved[i], symbol) == 0) first = false;
  if (first && g_nunresolved < (int)(sizeof g_unresolved / sizeof g_unresolved[0]))
    g_unresolved[g_nunresolved++] = symbol;
  pthread_mutex_unlock(&g_unresolved_mu);
  if (!first) {
    errno = saved;
    return;
  }
  if (a2a_rt_state() == A2A_RT_READY) {
    char msg[512], details[256];
    snprintf(msg, sizeof msg,
             "%s was called but no %s that defines it is loaded in this process; the "
             "call returned the library's own error code. Make sure the application "
             "loads the real %s (check LD_LIBRARY_PATH).",
             symbol, library, library);
    snprintf(details, sizeof details, "{\"symbol\":\"%s\",\"library\":\"%s\"}", symbol,
             library);
    a2a_finding f = {.check = A2A_CK_UNRESOLVED,
                     .severity = A2A_SEV_WARNING,
                     .site = NULL,
                     .message = msg,
                     .details_json = details,
                     .capture_stack = true};
    a2a_report(&f);
  } else if (a2a_rt_state() != A2A_RT_DISABLED) {
    a2a_rt_stderr("warning: %s not found in any loaded %s; the call returns an error",
                  symbol, library);
  }
  errno = saved;
}

void a2a_rt_init_after_fork_child(void) {
  /* Only the forking thread exists in the child. Its index, depth and
   * notes stay valid; indices are never reused, so the analyzers cannot
   * confuse a new thread with a dead one. The mutex of the unresolved list
   * was not taken by prepare (it is a leaf lock held for a few
   * instructions), so a thread of the parent may have held it: re-create. */
  pthread_mutex_init(&g_unresolved_mu, NULL);
  a2a_rt.pid = (int)getpid();
}

/* ---- public API (include/a2acheck.h) ---- */

A2A_RT_EXPORT int a2acheck_version(void) { return A2ACHECK_VERSION_CODE; }
