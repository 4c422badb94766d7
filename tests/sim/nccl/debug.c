/* debug.c - NCCL_DEBUG-style logging, error strings and the last-error
 * buffer of the simulator's NCCL.
 *
 * NCCL_DEBUG=VERSION|WARN|INFO|TRACE selects the level (default: silent, as
 * NCCL). Lines look like NCCL's: "host:pid:tid [dev] NCCL WARN message".
 * Every WARN is also kept as the last error (ncclGetLastError), as NCCL does.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sim_nccl.h"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t log_atfork_once = PTHREAD_ONCE_INIT;
static int log_level = -1;              /* -1: not parsed yet */
static char last_error[1024];

/* Parses NCCL_DEBUG once (again after ncclResetDebugInit). Unknown values
 * leave logging off, like NCCL. */
int sim_log_level(void) {
  int lvl = __atomic_load_n(&log_level, __ATOMIC_ACQUIRE);
  if (lvl >= 0) return lvl;
  const char *e = getenv("NCCL_DEBUG");
  lvl = SIM_LOG_NONE;
  if (e) {
    if (!strcasecmp(e, "VERSION")) lvl = SIM_LOG_VERSION;
    else if (!strcasecmp(e, "WARN")) lvl = SIM_LOG_WARN;
    else if (!strcasecmp(e, "INFO") || !strcasecmp(e, "TRACE")) lvl = SIM_LOG_INFO;
  }
  __atomic_store_n(&log_level, lvl, __ATOMIC_RELEASE);
  return lvl;
}

void sim_log_reset(void) { __atomic_store_n(&log_level, -1, __ATOMIC_RELEASE); }

/* A fork while another thread holds log_lock would leave it locked in the
 * child forever (its next WARN hangs): fork takes it first. Registered at
 * the first use of the lock, before which no fork can find it held. */
static void log_prepare(void) { pthread_mutex_lock(&log_lock); }
static void log_release(void) { pthread_mutex_unlock(&log_lock); }
static void log_atfork(void) { pthread_atfork(log_prepare, log_release, log_release); }

static void vlog(const char *kind, const char *fmt, va_list ap, int print) {
  char msg[900];
  vsnprintf(msg, sizeof msg, fmt, ap);
  if (print) {
    char host[64] = "sim";
    const char *h = a2asim_hostname();
    if (h) snprintf(host, sizeof host, "%s", h);
    fprintf(stderr, "%s:%d:%d [%d] NCCL %s %s\n", host, (int)getpid(),
            (int)syscall(SYS_gettid), a2asim_get_device(), kind, msg);
  }
  if (kind[0] == 'W') {
    pthread_once(&log_atfork_once, log_atfork);
    pthread_mutex_lock(&log_lock);
    snprintf(last_error, sizeof last_error, "%s", msg);
    pthread_mutex_unlock(&log_lock);
  }
}

void sim_warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog("WARN", fmt, ap, sim_log_level() >= SIM_LOG_WARN);
  va_end(ap);
}

void sim_info(const char *fmt, ...) {
  if (sim_log_level() < SIM_LOG_INFO) return;
  va_list ap;
  va_start(ap, fmt);
  vlog("INFO", fmt, ap, 1);
  va_end(ap);
}

/* The buffer is global like NCCL's ncclLastError; the pointer stays valid
 * (its content may change under another thread's WARN, as in NCCL). */
const char *sim_last_error(void) { return last_error; }

void sim_version_banner(void) {
  static atomic_int printed;
  if (sim_log_level() < SIM_LOG_VERSION || atomic_exchange(&printed, 1)) return;
  fprintf(stderr, "NCCL version %d.%d.%d+sim (a2acheck CPU simulator)\n", SIM_NCCL_MAJOR, SIM_NCCL_MINOR,
          SIM_NCCL_PATCH);
}

SIM_API(const char *, ncclGetErrorString, ncclResult_t result) {
  /* Texts of NCCL 2.30 (src/init.cc ncclGetErrorString). */
  switch (result) {
  case ncclSuccess: return "no error";
  case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
  case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
  case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
  case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
  case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
  case ncclRemoteError: return "remote process exited or there was a network error";
  case ncclInProgress: return "NCCL operation in progress";
  case ncclTimeout: return "timeout";
  default: return "unknown result code";
  }
}

SIM_API(const char *, ncclGetLastError, ncclComm_t comm) {
  (void)comm;   /* NCCL keeps one process-wide buffer too */
  return sim_last_error();
}

SIM_API(ncclResult_t, ncclGetVersion, int *version) {
  if (version == NULL) {
    sim_warn("ncclGetVersion : version argument is NULL");
    return ncclInvalidArgument;
  }
  /* The API level the library implements, not the build's nccl.h: see
   * docs/simulator-nccl.md "Version". */
  *version = SIM_NCCL_VERSION_CODE;
  return ncclSuccess;
}

/* Deprecated in nccl.h (returns void): makes the next log call re-read
 * NCCL_DEBUG. The deprecation warning of the declaration is silenced here. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
SIM_API(void, ncclResetDebugInit, void) { ncclResetDebugInitInternal(); }
#pragma GCC diagnostic pop

/* NCCL exports this one strong, without a pncclX twin (debug.cc). */
__attribute__((visibility("default"))) void ncclResetDebugInitInternal(void) { sim_log_reset(); }
