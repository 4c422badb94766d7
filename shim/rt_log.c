/* rt_log.c - the two per-process log files in A2ACHECK_LOG_DIR:
 *   a2acheck.<host>.<pid>.rank<R>.log    human-readable: header (version,
 *                                        process, every effective option),
 *                                        one block per finding, summary
 *   a2acheck.<host>.<pid>.rank<R>.jsonl  one JSON object per line: one per
 *                                        finding, then the summary record
 *
 * Files are opened lazily, at the first finding or at exit (a process that
 * initialized the runtime always gets its two files: the summary is
 * written even when nothing was found). R is the global rank; if it is not
 * known yet when the files are created (no RANK-like variable and no
 * communicator so far) the files are named "rankunknown" and are renamed
 * as soon as a later write finds the rank known. The directory (with %h and
 * %p expanded) is created like mkdir -p. If it cannot be created or the
 * files cannot be opened, one clear message goes to stderr and every finding
 * is echoed to stderr instead; the process is never disturbed otherwise.
 *
 * Each JSON line is written with one pwrite(2) at the end of the file, so a
 * process that dies leaves a file of complete lines (valid JSON Lines). The
 * file is not opened O_APPEND because the exit path patches the "count"
 * fields in place (pwrite ignores the offset on O_APPEND files).
 *
 * All functions run with a2a_rt_mu held (see rt_report.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "a2acheck.h"
#include "rt_internal.h"

static int g_txt = -1, g_json = -1;
static bool g_unavailable;
static int g_file_rank = -1;     /* rank in the current file names */
static off_t g_json_end;
static char g_dir[PATH_MAX];
static char g_txt_path[PATH_MAX], g_json_path[PATH_MAX];

static void write_all(int fd, const char *s, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    s += w;
    n -= (size_t)w;
  }
}

/* Expand %h (host) and %p (pid) like NCCL_DEBUG_FILE. */
static void expand_dir(char *out, size_t cap) {
  size_t k = 0;
  for (const char *p = a2a_rt.log_dir; *p && k + 1 < cap; p++) {
    if (p[0] == '%' && (p[1] == 'h' || p[1] == 'p')) {
      char tmp[64];
      if (p[1] == 'h') snprintf(tmp, sizeof tmp, "%s", a2a_rt.host);
      else snprintf(tmp, sizeof tmp, "%d", a2a_rt.pid);
      for (const char *t = tmp; *t && k + 1 < cap; t++) out[k++] = *t;
      p++;
    } else {
      out[k++] = *p;
    }
  }
  out[k] = '\0';
}

/* mkdir -p; returns 0 or an errno value. */
static int mkdir_p(const char *dir) {
  char tmp[PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s", dir);
  size_t n = strlen(tmp);
  while (n > 1 && tmp[n - 1] == '/') tmp[--n] = '\0';
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return errno;
    *p = '/';
  }
  if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return errno;
  struct stat sb;
  if (stat(tmp, &sb) != 0) return errno;
  return S_ISDIR(sb.st_mode) ? 0 : ENOTDIR;
}

static void make_paths(int rank, char *txt, char *json) {
  char r[24];
  if (rank >= 0) snprintf(r, sizeof r, "%d", rank);
  else snprintf(r, sizeof r, "unknown");
  /* g_dir is shorter than PATH_MAX - 100 (expand_dir), so these fit. */
  snprintf(txt, PATH_MAX, "%.3950s/a2acheck.%.63s.%d.rank%.23s.log", g_dir, a2a_rt.host,
           a2a_rt.pid, r);
  snprintf(json, PATH_MAX, "%.3950s/a2acheck.%.63s.%d.rank%.23s.jsonl", g_dir, a2a_rt.host,
           a2a_rt.pid, r);
}

static void give_up(const char *what, const char *path, int err) {
  g_unavailable = true;
  a2a_rt_stderr("error: cannot %s '%s' (%s); a2acheck writes its findings to stderr "
                "only. Set A2ACHECK_LOG_DIR to a writable directory.",
                what, path, strerror(err));
}

static void write_header(int rank) {
  static char buf[16384];
  size_t len = 0;
  bool ovf = false;
  char now[40], who[96];
  a2a_rt_time_iso(now, sizeof now);
  if (rank < 0)
    snprintf(who, sizeof who, "unknown (no RANK variable, no communicator yet)");
  else
    snprintf(who, sizeof who, "%d (%s)", rank,
             a2a_rt.env_rank >= 0 ? "from the launcher's environment"
                                  : "in the first communicator");
  len = a2a_rt_printf(buf, sizeof buf, len, &ovf,
                      "a2acheck %s warnings log\n"
                      "  host %s, pid %d, rank %s, started %s\n"
                      "  command: %s\n"
                      "  JSON lines: %s\n"
                      "options (each effective value):\n",
                      A2ACHECK_VERSION_STRING, a2a_rt.host, a2a_rt.pid, who, now,
                      a2a_rt.argv0, g_json_path);
  len += a2a_rt_options_describe(&a2a_rt.opts, a2a_rt.opt_from_env, buf + len,
                                 sizeof buf - len);
  if (a2a_rt.init_warnings[0])
    len = a2a_rt_printf(buf, sizeof buf, len, &ovf, "start-up warnings:\n%s",
                        a2a_rt.init_warnings);
  len = a2a_rt_puts(buf, sizeof buf, len, "----\n", &ovf);
  write_all(g_txt, buf, len);
}

static bool open_logs(void) {
  if (g_unavailable) return false;
  if (g_txt >= 0) return true;
  expand_dir(g_dir, sizeof g_dir - 140);
  int err = mkdir_p(g_dir);
  if (err) {
    give_up("create the log directory", g_dir, err);
    return false;
  }
  int rank = a2a_rt_global_rank();
  make_paths(rank, g_txt_path, g_json_path);
  g_txt = open(g_txt_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (g_txt < 0) {
    give_up("create the log file", g_txt_path, errno);
    return false;
  }
  g_json = open(g_json_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (g_json < 0) {
    err = errno;
    close(g_txt);
    g_txt = -1;
    unlink(g_txt_path);
    give_up("create the log file", g_json_path, err);
    return false;
  }
  g_json_end = 0;
  g_file_rank = rank;
  write_header(rank);
  return true;
}

/* The rank became known after the files were created: rename them. */
static void maybe_rename(void) {
  if (g_file_rank >= 0) return;
  int rank = a2a_rt_global_rank();
  if (rank < 0) return;
  char txt[PATH_MAX], json[PATH_MAX];
  make_paths(rank, txt, json);
  if (rename(g_txt_path, txt) != 0 || rename(g_json_path, json) != 0) {
    g_file_rank = rank;   /* do not retry on every write */
    return;
  }
  char line[PATH_MAX + 128];
  int n = snprintf(line, sizeof line,
                   "(rank %d learned from the first communicator; files renamed from "
                   "rankunknown)\n", rank);
  write_all(g_txt, line, (size_t)n);
  memcpy(g_txt_path, txt, sizeof txt);
  memcpy(g_json_path, json, sizeof json);
  g_file_rank = rank;
}

bool a2a_rt_log_append(const char *text, size_t tn, const char *json, size_t jn,
                       off_t *json_off) {
  if (json_off) *json_off = -1;
  if (!open_logs()) return false;
  maybe_rename();
  if (text && tn) write_all(g_txt, text, tn);
  if (json && jn) {
    ssize_t w;
    do w = pwrite(g_json, json, jn, g_json_end);
    while (w < 0 && errno == EINTR);
    if (w == (ssize_t)jn) {
      if (json_off) *json_off = g_json_end;
      g_json_end += w;
    } else if (w > 0) {
      /* Disk full mid-line: cut the partial line off so the file stays
       * valid JSON Lines. */
      if (ftruncate(g_json, g_json_end) != 0) g_json_end += w;
    }
  }
  return true;
}

void a2a_rt_log_patch_json(off_t off, const char *s, size_t n) {
  if (g_json < 0 || off < 0) return;
  ssize_t w = pwrite(g_json, s, n, off);
  (void)w;
}

const char *a2a_rt_log_jsonl_path(void) { return g_json >= 0 ? g_json_path : ""; }

bool a2a_rt_log_unavailable(void) { return g_unavailable; }

void a2a_rt_log_after_fork_child(void) {
  /* The descriptors are the parent's files: close them without writing a
   * byte; the child opens its own (its pid is in the names) when it writes. */
  if (g_txt >= 0) close(g_txt);
  if (g_json >= 0) close(g_json);
  g_txt = g_json = -1;
  g_file_rank = -1;
  g_json_end = 0;
  g_txt_path[0] = g_json_path[0] = '\0';
}
