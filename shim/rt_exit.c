/* rt_exit.c - the end of a process and the birth of a forked one: the exit
 * handler and failure policy, fail_now() for the deadlock detector, the
 * pthread_atfork handlers, and the a2acheck.not-intercepting check.
 *
 * Exit path (once per process, whichever comes first of the exit handler
 * and fail_now):
 *   1. the runtime state becomes FINISHED: intercepted calls made from now
 *      on (other atexit handlers, other threads) pass through unanalyzed;
 *   2. A2A_EV_PROCESS_EXIT is dispatched (phase POST) with the exit status;
 *   3. a2a_core_fini() runs every analyzer's fini (findings still accepted);
 *   4. a2acheck.not-intercepting is evaluated;
 *   5. the summary goes to stderr and both logs; final counts are patched
 *      into the JSONL;
 *   6. if fail_now was called, stdio is flushed and the process ends with
 *      _exit(A2ACHECK_EXITCODE); if A2ACHECK_FAIL_ON matched a finding, the
 *      library's destructor does the same once every other exit handler
 *      and the program's destructors have run; otherwise the application's
 *      status stands.
 * The handler is registered with on_exit(3) rather than atexit(3) because
 * on_exit passes the status given to exit() (or returned from main), which
 * step 2 and the summary report. It is registered at initialization, i.e.
 * at the first intercepted call, so it runs before the exit handlers the
 * application registered earlier and after those it registers later.
 * Processes that end with _exit(), a signal or exec do not run it: their
 * JSONL files still hold every finding written so far (complete lines).
 *
 * Fork: prepare takes a2a_rt_mu (no finding is half-written across fork);
 * the parent releases it; the child resets what belonged to the parent
 * (tables, open log files: the child writes its own, named with its pid),
 * releases it, then lets the core reset (a2a_core_after_fork_child) and
 * dispatches A2A_EV_FORK_CHILD. The exit handler is inherited: the child
 * writes its summary when it exits.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rt_internal.h"

static _Atomic int g_exit_started;
static _Atomic int g_fail_requested;

static void dispatch_simple(a2a_kind kind, const char *api, int status) {
  a2a_event ev;
  memset(&ev, 0, sizeof ev);
  ev.kind = kind;
  ev.phase = A2A_POST;
  ev.api = api;
  ev.device = -1;
  ev.thread = a2a_rt_thread_index();
  ev.t_ns = a2a_rt_now_ns();
  ev.u.exit.status = status;
  a2a_event_set_result(&ev, 0);
  a2a_dispatch(&ev);
}

static void exit_path(int status, const char *reason) {
  a2a_rt_set_state(A2A_RT_FINISHED);
  if (reason) {
    char line[600];
    int n = snprintf(line, sizeof line, "---- failing now: %s ----\n", reason);
    if (a2a_rt_lock_within(5)) {
      a2a_rt_log_append(line, (size_t)n, NULL, 0, NULL);
      pthread_mutex_unlock(&a2a_rt_mu);
    }
  }
  dispatch_simple(A2A_EV_PROCESS_EXIT, reason ? "a2acheck_fail_now" : "exit", status);
  a2a_core_fini();
  a2a_rt_check_not_intercepting();
  a2a_rt_report_summary(status, reason);
}

/* Set by the exit handler when the failure policy matched: the status is
 * changed by the destructor below, as late as possible. */
static _Atomic int g_exit_code_pending;

static void on_exit_handler(int status, void *arg) {
  (void)arg;
  if (a2a_rt_state() != A2A_RT_READY) return;
  if (atomic_exchange(&g_exit_started, 1)) return;   /* fail_now runs it */
  exit_path(status, NULL);
  if (atomic_load(&g_fail_requested)) {   /* fail_now is waiting for us */
    fflush(NULL);
    _exit((int)a2a_rt.opts.exitcode);
  }
  if (a2a_rt_report_fail_matched()) atomic_store(&g_exit_code_pending, 1);
}

/* Runs from the dynamic linker's _dl_fini, which is the first exit handler
 * registered in the process and so the last to run: after every atexit and
 * on_exit handler (also those registered before ours) and after the main
 * program's destructors. Changing the status here lets the application's
 * own exit-time cleanup run first; only stdio's final flush, done by exit()
 * after _dl_fini, is done here instead. Nothing else happens in it: it does
 * no work unless the exit handler asked for a failing status. */
__attribute__((destructor)) static void rt_destructor(void) {
  if (!atomic_load(&g_exit_code_pending)) return;
  fflush(NULL);
  _exit((int)a2a_rt.opts.exitcode);
}

/* Flush the standard streams without risking a deadlock on a stdio lock a
 * stuck application thread may hold (fail_now runs on any thread). */
static void flush_std_streams(void) {
  FILE *fs[2] = {stdout, stderr};
  for (int i = 0; i < 2; i++)
    if (ftrylockfile(fs[i]) == 0) {
      fflush_unlocked(fs[i]);
      funlockfile(fs[i]);
    }
}

void a2a_rt_fail_now(const char *reason) {
  atomic_store(&g_fail_requested, 1);
  int code = (int)a2a_rt.opts.exitcode;
  a2a_rt_stderr("failing now (exit status %d): %s", code, reason ? reason : "");
  if (atomic_exchange(&g_exit_started, 1)) {
    /* Another thread is running the exit path; it sees g_fail_requested and
     * ends the process with the exit code. Should it be stuck, end it here
     * after 10 s. */
    struct timespec ts = {0, 10 * 1000 * 1000};
    for (int i = 0; i < 1000; i++) nanosleep(&ts, NULL);
    _exit(code);
  }
  exit_path(code, reason ? reason : "fail_now");
  flush_std_streams();
  _exit(code);
}

/* ---- fork ---- */

/* Whether prepare took the lock (the three handlers run on the forking
 * thread; the state may change between them, the decision must not). */
static __thread int t_fork_locked;

static __thread int t_fork_ready;

static void fork_prepare(void) {
  t_fork_ready = a2a_rt_state() == A2A_RT_READY;
  /* Bounded: a writer stuck on the loader lock must not hang fork(). */
  t_fork_locked = t_fork_ready && a2a_rt_lock_within(5);
}

static void fork_parent(void) {
  if (t_fork_locked) pthread_mutex_unlock(&a2a_rt_mu);
  t_fork_locked = t_fork_ready = 0;
}

static void fork_child(void) {
  if (!t_fork_ready) return;
  a2a_rt_log_after_fork_child();
  a2a_rt_report_after_fork_child();
  /* Ours to release; if prepare could not take it, the thread that held it
   * does not exist here: start from a fresh mutex. */
  if (t_fork_locked) pthread_mutex_unlock(&a2a_rt_mu);
  else pthread_mutex_init(&a2a_rt_mu, NULL);
  t_fork_locked = t_fork_ready = 0;
  a2a_rt_init_after_fork_child();
  a2a_nccl_after_fork_child();
  a2a_rt_t.gdepth = 0; /* the analyzers count the thread's groups from zero (a2a_group_nested) */
  a2a_core_after_fork_child();
  dispatch_simple(A2A_EV_FORK_CHILD, "fork", 0);
  a2a_group_keep_after_fork(a2a_rt_thread_index()); /* (folded by the fork handling above) */
}

void a2a_rt_exit_install(void) {
  on_exit(on_exit_handler, NULL);
  pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* ---- a2acheck.not-intercepting ---- */

#define MAX_OBJS 256
static char g_objs[MAX_OBJS][512];
static uintptr_t g_obj_bias[MAX_OBJS];
static int g_nobjs;

static int collect_objs(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size, (void)arg;
  if (g_nobjs == MAX_OBJS) return 1;
  /* Skip liba2acheck.so itself (it exports ncclSend) and the vDSO. */
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_LOAD) {
      if (a2a_rt_pc_is_ours((const void *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr)))
        return 0;
      break;
    }
  if (info->dlpi_name && strstr(info->dlpi_name, "linux-vdso")) return 0;
  snprintf(g_objs[g_nobjs], sizeof g_objs[0], "%s", info->dlpi_name ? info->dlpi_name : "");
  g_obj_bias[g_nobjs] = info->dlpi_addr;
  g_nobjs++;
  return 0;
}

/* Whether the object (path, "" for the main program) itself defines
 * ncclSend: a statically linked NCCL. dlopen/dlsym run outside the
 * dl_iterate_phdr callback (the loader's lock is held there). */
static bool defines_ncclsend(const char *path, uintptr_t bias) {
  void *h = dlopen(*path ? path : NULL, RTLD_NOLOAD | RTLD_LAZY);
  if (!h) return false;
  void *sym = dlsym(h, "ncclSend");
  bool own = false;
  Dl_info info;
  struct link_map *lm = NULL;
  if (sym && dladdr1(sym, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm)
    own = lm->l_addr == bias && strcmp(lm->l_name ? lm->l_name : "", path) == 0;
  dlclose(h);
  return own;
}

static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

void a2a_rt_check_not_intercepting(void) {
  if (a2a_rt_nccl_seen()) return;
  g_nobjs = 0;
  dl_iterate_phdr(collect_objs, NULL);
  const char *shared = NULL, *statically = NULL;
  for (int i = 0; i < g_nobjs; i++) {
    if (strncmp(base_name(g_objs[i]), "libnccl", 7) == 0) {
      if (!shared) shared = g_objs[i];
    } else if (!statically && defines_ncclsend(g_objs[i], g_obj_bias[i])) {
      statically = g_objs[i][0] ? g_objs[i] : "the main program";
    }
  }
  char msg[1024], details[1200];
  a2a_finding f = {.check = A2A_CK_NOT_INTERCEPTING, .message = msg,
                   .details_json = details};
  size_t dl = 0;
  bool ovf = false;
  if (statically) {
    snprintf(msg, sizeof msg,
             "NCCL is linked statically into %.400s (it defines ncclSend itself), so its NCCL "
             "calls never reach liba2acheck.so and were not checked; use a build that "
             "links the shared libnccl.so.2 (PyTorch: the pip wheels, or USE_SYSTEM_NCCL=1 "
             "when building from source).", statically);
    f.severity = A2A_SEV_WARNING;
    dl = a2a_rt_puts(details, sizeof details, dl, "{\"reason\":\"static-nccl\",\"object\":", &ovf);
    dl = a2a_rt_put_jstr(details, sizeof details, dl, statically, &ovf);
  } else if (shared) {
    snprintf(msg, sizeof msg,
             "%.200s is loaded but no NCCL call went through liba2acheck.so: either this "
             "process made no NCCL calls, or it calls NCCL through pointers from its own "
             "dlsym() (vLLM's pynccl does), which LD_PRELOAD cannot intercept; such calls "
             "are not checked.", base_name(shared));
    f.severity = A2A_SEV_INFO;
    dl = a2a_rt_puts(details, sizeof details, dl, "{\"reason\":\"no-call-intercepted\",\"object\":", &ovf);
    dl = a2a_rt_put_jstr(details, sizeof details, dl, shared, &ovf);
  } else {
    return;
  }
  a2a_rt_puts(details, sizeof details, dl, "}", &ovf);
  if (ovf) snprintf(details, sizeof details, "{}");
  a2a_report(&f);
}
