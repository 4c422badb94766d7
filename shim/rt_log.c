/* rt_log.c - the two per-process log files in A2ACHECK_LOG_DIR:
 *   a2acheck.<host>.<pid>.rank<R>.log    human-readable: header (version,
 *                                        process, every effective option),
 *                                        one block per finding, summary
 *   a2acheck.<host>.<pid>.rank<R>.jsonl  one JSON object per line: one per
 *                                        finding, then the summary record
 *
 * Files are opened lazily, at the first finding or at exit (the summary of a
 * process that made an NCCL call is written even when nothing was found; a
 * process that made none and found nothing leaves no files, rt_report.c).
 * R is the global rank; if it is not known yet when the files are created
 * (no RANK-like variable and no communicator so far) the files are named
 * "rankunknown" and are renamed as soon as a later write finds the rank
 * known. Without A2ACHECK_LOG_DIR the directory is a run directory of the
 * job under ./a2acheck-logs (rt_logdir.c, decided at init).
 *
 * Safety in shared directories (the directory may be in /tmp, the names are
 * predictable):
 *   - each missing component of the directory (with %h and %p expanded) is
 *     created 0700 (whatever the umask); the directory that receives the
 *     files is then opened once and must be owned by the effective user and
 *     writable by nobody else (a2a_rt_dir_check), else it is refused;
 *   - files are created relative to that descriptor with
 *     O_CREAT|O_EXCL|O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC, mode 0600: an existing
 *     name (a symlink, a FIFO, a file someone created) is never followed,
 *     truncated, opened or written; the process then logs to stderr only;
 *   - the rankunknown rename is renameat2(RENAME_NOREPLACE) (link+unlink
 *     where the file system lacks it), so it cannot replace an existing file.
 * Because the directory is ours and closed to others, and nothing existing
 * is ever opened, a guessable name gains an attacker nothing: no random part
 * is added and tool/ keeps parsing host, pid and rank from the name.
 * Whenever the logs cannot be used, one clear message naming the directory
 * or file and the reason goes to stderr and every finding is echoed to
 * stderr instead; the process is never disturbed otherwise.
 *
 * Write errors (ENOSPC, EIO, EFBIG): the first one is reported once on
 * stderr; the file it failed on is not written again, findings go to stderr
 * from then on, and the summary, on stderr and in whatever still fits in the
 * logs, names the error.
 * EFBIG only arises if the application ignores SIGXFSZ; otherwise exceeding
 * RLIMIT_FSIZE ends the process as it would without a2acheck.
 *
 * Each JSON line is written with one pwrite(2) at the end of the file, so a
 * process that dies leaves a file of complete lines (valid JSON Lines); a
 * line cut short by a full disk is truncated away. The file is not opened
 * O_APPEND because the exit path patches the "count" fields in place (pwrite
 * ignores the offset on O_APPEND files).
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
#include <sys/syscall.h>
#include <unistd.h>

#include "a2acheck.h"
#include "rt_internal.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

static int g_txt = -1, g_json = -1;
static int g_dirfd = -1;          /* the log directory, while a rename may come */
static dev_t g_dir_dev;
static ino_t g_dir_ino;
static bool g_unavailable;
static int g_write_err;           /* first write error (errno), 0 if none */
static bool g_txt_failed, g_json_failed;   /* a write to that file failed */
static int g_file_rank = -1;      /* rank in the current file names */
static off_t g_json_end;
static char g_dir[PATH_MAX];
static char g_txt_path[PATH_MAX], g_json_path[PATH_MAX];
static char g_err_path[PATH_MAX];

/* A failed write: the first one is said once on stderr. The file it failed
 * on is not written again (a later write could land after a gap); the other
 * one still is, so the summary record may still reach the JSONL when only
 * the text log failed, but a2a_rt_log_append returns false from now on, so
 * every later finding also goes to stderr. */
static void write_failed(bool json, const char *path, int err) {
  if (json) g_json_failed = true;
  else g_txt_failed = true;
  if (g_write_err) return;
  g_write_err = err ? err : EIO;
  snprintf(g_err_path, sizeof g_err_path, "%s", path);
  a2a_rt_stderr("error: cannot write the log file '%s' (%s); the log is incomplete and "
                "a2acheck writes further findings to stderr.",
                path, strerror(g_write_err));
}

/* write(2) all of s; returns 0 or an errno value (ENOSPC for a write the
 * kernel cut short and then refused to continue). */
static int write_all(int fd, const char *s, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return errno;
    if (w == 0) return ENOSPC;
    s += w;
    n -= (size_t)w;
  }
  return 0;
}

static void log_text(const char *s, size_t n) {
  if (g_txt_failed || g_txt < 0) return;
  int err = write_all(g_txt, s, n);
  if (err) write_failed(false, g_txt_path, err);
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

static void give_up(const char *what, const char *path, const char *why) {
  g_unavailable = true;
  a2a_rt_stderr("error: cannot %s '%s' (%s); a2acheck writes its findings to stderr "
                "only. Set A2ACHECK_LOG_DIR to a directory of your own.",
                what, path, why);
}

/* mkdir -p, each component we create 0700, then open the directory and
 * check it (a2a_rt_dir_check). Returns its descriptor, or -1 after
 * give_up. */
static int open_dir(const char *dir) {
  char tmp[PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s", dir);
  int fd = open(tmp[0] == '/' ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    give_up("create the log directory", dir, strerror(errno));
    return -1;
  }
  char *save = NULL;
  for (char *c = strtok_r(tmp, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
    bool created = false;
    int nfd = openat(fd, c, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (nfd < 0 && errno == ENOENT) {
      if (mkdirat(fd, c, 0700) == 0) created = true;
      else if (errno != EEXIST) {
        int err = errno;
        close(fd);
        give_up("create the log directory", dir, strerror(err));
        return -1;
      }
      /* Ours only if we made it: a name that appeared meanwhile is opened
       * like any existing one, and checked below if it is the last. */
      nfd = openat(fd, c, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (created ? O_NOFOLLOW : 0));
    }
    int err = errno;
    close(fd);
    if (nfd < 0) {
      give_up("create the log directory", dir, strerror(err));
      return -1;
    }
    /* The umask may have taken bits we need (0077 keeps 0700; 0277 not). */
    if (created) (void)fchmod(nfd, 0700);
    fd = nfd;
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    int err = errno;
    close(fd);
    give_up("create the log directory", dir, strerror(err));
    return -1;
  }
  const char *bad = a2a_rt_dir_check((unsigned)sb.st_uid, (unsigned)sb.st_mode,
                                     (unsigned)geteuid());
  if (bad) {
    char why[256];
    snprintf(why, sizeof why, "refused: %s; owner uid %u, mode %04o", bad, (unsigned)sb.st_uid,
             (unsigned)(sb.st_mode & 07777));
    close(fd);
    give_up("use the log directory", dir, why);
    return -1;
  }
  g_dir_dev = sb.st_dev;
  g_dir_ino = sb.st_ino;
  return fd;
}

/* g_dirfd still names the directory we checked (the application may have
 * closed it and reused the number). */
static bool dirfd_valid(void) {
  struct stat sb;
  return g_dirfd >= 0 && fstat(g_dirfd, &sb) == 0 && S_ISDIR(sb.st_mode) &&
         sb.st_dev == g_dir_dev && sb.st_ino == g_dir_ino;
}

static void make_name(int rank, const char *ext, char *out, size_t cap) {
  char r[24];
  if (rank >= 0) snprintf(r, sizeof r, "%d", rank);
  else snprintf(r, sizeof r, "unknown");
  snprintf(out, cap, "a2acheck.%.63s.%d.rank%.23s.%s", a2a_rt.host, a2a_rt.pid, r, ext);
}

static void make_paths(int rank, char *txt, char *json) {
  char n[160];
  /* g_dir is shorter than PATH_MAX - 140 (expand_dir), so these fit. */
  make_name(rank, "log", n, sizeof n);
  snprintf(txt, PATH_MAX, "%.3900s/%.150s", g_dir, n);
  make_name(rank, "jsonl", n, sizeof n);
  snprintf(json, PATH_MAX, "%.3900s/%.150s", g_dir, n);
}

/* Create one log file; never opens an existing name. */
static int create_file(int rank, const char *ext, int extra, const char *path) {
  char n[160];
  make_name(rank, ext, n, sizeof n);
  int fd = openat(g_dirfd, n,
                  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | extra,
                  0600);
  if (fd < 0) {
    int err = errno;
    char why[200];
    if (err == EEXIST)
      snprintf(why, sizeof why, "the name exists already (a file, link or FIFO a2acheck did "
               "not create; it is left untouched)");
    else
      snprintf(why, sizeof why, "%s", strerror(err));
    give_up("create the log file", path, why);
  } else {
    (void)fchmod(fd, 0600);   /* a umask like 0277 must not leave it unreadable */
  }
  return fd;
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
                      "  log directory: %s (%s)\n"
                      "options (each effective value):\n",
                      A2ACHECK_VERSION_STRING, a2a_rt.host, a2a_rt.pid, who, now,
                      a2a_rt.argv0, g_json_path, g_dir, a2a_rt.log_dir_why);
  len += a2a_rt_options_describe(&a2a_rt.opts, a2a_rt.opt_from_env, buf + len,
                                 sizeof buf - len);
  if (a2a_rt.init_warnings[0])
    len = a2a_rt_printf(buf, sizeof buf, len, &ovf, "start-up warnings:\n%s",
                        a2a_rt.init_warnings);
  len = a2a_rt_puts(buf, sizeof buf, len, "----\n", &ovf);
  log_text(buf, len);
}

static bool open_logs(void) {
  if (g_unavailable) return false;
  if (g_txt >= 0) return true;
  expand_dir(g_dir, sizeof g_dir - 140);
  if (!dirfd_valid()) {
    if (g_dirfd >= 0) close(g_dirfd);
    g_dirfd = open_dir(g_dir);
    if (g_dirfd < 0) return false;
  }
  int rank = a2a_rt_global_rank();
  make_paths(rank, g_txt_path, g_json_path);
  g_txt = create_file(rank, "log", O_APPEND, g_txt_path);
  if (g_txt < 0) return false;
  g_json = create_file(rank, "jsonl", 0, g_json_path);
  if (g_json < 0) {
    char n[160];
    close(g_txt);
    g_txt = -1;
    make_name(rank, "log", n, sizeof n);
    unlinkat(g_dirfd, n, 0);   /* ours: created just now */
    return false;
  }
  g_json_end = 0;
  g_file_rank = rank;
  write_header(rank);
  if (rank >= 0) {   /* no rename to come */
    close(g_dirfd);
    g_dirfd = -1;
  }
  return true;
}

/* Rename without replacing: renameat2(RENAME_NOREPLACE), else link+unlink
 * (both fail with EEXIST rather than clobber). Returns 0 or an errno. */
static int rename_noreplace(const char *from, const char *to) {
  if (syscall(SYS_renameat2, g_dirfd, from, g_dirfd, to, RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return errno;
  if (linkat(g_dirfd, from, g_dirfd, to, 0) != 0) return errno;
  unlinkat(g_dirfd, from, 0);
  return 0;
}

/* The rank became known after the files were created: rename them. */
static void maybe_rename(void) {
  if (g_file_rank >= 0) return;
  int rank = a2a_rt_global_rank();
  if (rank < 0) return;
  g_file_rank = rank;   /* one attempt only */
  char of[160], nf[160], txt[PATH_MAX], json[PATH_MAX];
  int err = dirfd_valid() ? 0 : EBADF;
  make_name(-1, "log", of, sizeof of);
  make_name(rank, "log", nf, sizeof nf);
  if (!err) err = rename_noreplace(of, nf);
  if (!err) {
    make_name(-1, "jsonl", of, sizeof of);
    make_name(rank, "jsonl", nf, sizeof nf);
    err = rename_noreplace(of, nf);
    if (err) {   /* keep the pair's names matching */
      make_name(-1, "log", of, sizeof of);
      make_name(rank, "log", nf, sizeof nf);
      rename_noreplace(nf, of);
    }
  }
  if (g_dirfd >= 0) close(g_dirfd);
  g_dirfd = -1;
  char line[PATH_MAX + 128];
  if (err) {
    int n = snprintf(line, sizeof line, "(rank %d learned from the first communicator; the "
                     "files keep the name rankunknown: %s)\n", rank, strerror(err));
    log_text(line, (size_t)n);
    return;
  }
  make_paths(rank, txt, json);
  int n = snprintf(line, sizeof line,
                   "(rank %d learned from the first communicator; files renamed from "
                   "rankunknown)\n", rank);
  log_text(line, (size_t)n);
  memcpy(g_txt_path, txt, sizeof txt);
  memcpy(g_json_path, json, sizeof json);
}

bool a2a_rt_log_append(const char *text, size_t tn, const char *json, size_t jn,
                       off_t *json_off) {
  if (json_off) *json_off = -1;
  if (!open_logs()) return false;
  maybe_rename();
  if (text && tn) log_text(text, tn);
  if (json && jn && !g_json_failed) {
    ssize_t w;
    do w = pwrite(g_json, json, jn, g_json_end);
    while (w < 0 && errno == EINTR);
    if (w == (ssize_t)jn) {
      if (json_off) *json_off = g_json_end;
      g_json_end += w;
    } else {
      int err = w < 0 ? errno : ENOSPC;
      /* Disk full mid-line: cut the partial line off so the file stays
       * valid JSON Lines. */
      if (w > 0 && ftruncate(g_json, g_json_end) != 0) g_json_end += w;
      write_failed(true, g_json_path, err);
    }
  }
  return !g_write_err;
}

void a2a_rt_log_patch_json(off_t off, const char *s, size_t n) {
  if (g_json < 0 || off < 0 || g_json_failed) return;
  ssize_t w = pwrite(g_json, s, n, off);
  if (w != (ssize_t)n) write_failed(true, g_json_path, w < 0 ? errno : ENOSPC);
}

const char *a2a_rt_log_jsonl_path(void) { return g_json >= 0 ? g_json_path : ""; }

bool a2a_rt_log_unavailable(void) { return g_unavailable; }

bool a2a_rt_log_opened(void) { return g_json >= 0; }

int a2a_rt_log_write_error(const char **path) {
  if (path) *path = g_err_path;
  return g_write_err;
}

void a2a_rt_log_after_fork_child(void) {
  /* The descriptors are the parent's files: close them without writing a
   * byte; the child opens its own (its pid is in the names) when it writes. */
  if (g_txt >= 0) close(g_txt);
  if (g_json >= 0) close(g_json);
  if (g_dirfd >= 0) close(g_dirfd);
  g_txt = g_json = g_dirfd = -1;
  g_file_rank = -1;
  g_json_end = 0;
  g_write_err = 0;
  g_txt_failed = g_json_failed = false;
  g_txt_path[0] = g_json_path[0] = g_err_path[0] = '\0';
}
