/* launch.c - the child process, its process group, signals and reaping
 * (launch.h). Linux: PR_SET_CHILD_SUBREAPER, /proc. */
#define _GNU_SOURCE /* pipe2 */
#include "launch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Signal every process that is in group pgid or whose parent is us (an
 * adopted orphan that left the group); returns how many there were. */
static int signal_leftovers(pid_t pgid, int sig) {
  int n = 0;
  DIR *d = opendir("/proc");
  if (!d) return kill(-pgid, sig) == 0;
  pid_t me = getpid();
  struct dirent *e;
  while ((e = readdir(d))) {
    char *end;
    long pid = strtol(e->d_name, &end, 10);
    if (*end || pid <= 0 || pid == me) continue;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    ssize_t k = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (k <= 0) continue;
    buf[k] = 0;
    /* pid (comm) state ppid pgrp ...; comm may hold spaces and ')' */
    char *rp = strrchr(buf, ')');
    if (!rp) continue;
    char state;
    long ppid, pgrp;
    if (sscanf(rp + 1, " %c %ld %ld", &state, &ppid, &pgrp) != 3) continue;
    if (state == 'Z') continue;
    if (pgrp == pgid || ppid == me) {
      if (kill((pid_t)pid, sig) == 0) n++;
    }
  }
  closedir(d);
  return n;
}

/* Reap every child that changed state. Returns 1 if children remain, 0 if
 * none; *main_status is set when the main child ended. */
static int reap(pid_t main, int *main_status, bool *main_done, bool *main_stopped) {
  for (;;) {
    int st;
    pid_t w = waitpid(-1, &st, WNOHANG | WUNTRACED);
    if (w == 0) return 1;
    if (w < 0) return errno == ECHILD ? 0 : 1;
    if (w == main) {
      if (WIFSTOPPED(st)) {
        if (main_stopped) *main_stopped = true;
      } else if (!*main_done) {
        *main_status = st;
        *main_done = true;
      }
    }
  }
}

void launch_run(char *const *argv, double grace_s, bool verbose, launch_result *r) {
  memset(r, 0, sizeof *r);
  r->status = -1;
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);

  sigset_t block, old;
  sigemptyset(&block);
  int fwd[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
  for (size_t i = 0; i < sizeof fwd / sizeof *fwd; i++) sigaddset(&block, fwd[i]);
  sigaddset(&block, SIGCHLD);
  sigaddset(&block, SIGTTOU); /* tcsetpgrp from the background */
  sigprocmask(SIG_BLOCK, &block, &old);
  sigset_t waitset = block;
  sigdelset(&waitset, SIGTTOU);

  int tty = STDIN_FILENO;
  bool give_tty = isatty(tty) && tcgetpgrp(tty) == getpgrp();

  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC) != 0) pfd[0] = pfd[1] = -1;
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    r->exec_failed = true;
    r->exec_errno = errno;
    r->status = 126;
    sigprocmask(SIG_SETMASK, &old, NULL);
    return;
  }
  if (pid == 0) {
    setpgid(0, 0);
    if (give_tty) tcsetpgrp(tty, getpid());
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (pfd[0] >= 0) close(pfd[0]);
    execvp(argv[0], argv);
    int e = errno;
    if (pfd[1] >= 0) {
      ssize_t w = write(pfd[1], &e, sizeof e);
      (void)w;
    }
    _exit(e == ENOENT ? 127 : 126);
  }
  setpgid(pid, pid); /* also here: whichever runs first */
  if (give_tty) tcsetpgrp(tty, pid);
  if (pfd[1] >= 0) close(pfd[1]);
  if (pfd[0] >= 0) {
    int e;
    ssize_t k;
    do k = read(pfd[0], &e, sizeof e);
    while (k < 0 && errno == EINTR);
    if (k == (ssize_t)sizeof e) {
      r->exec_failed = true;
      r->exec_errno = e;
    }
    close(pfd[0]);
  }

  int st = 0;
  bool done = false;
  while (!done) {
    struct timespec ts = {1, 0};
    siginfo_t si;
    int s = sigtimedwait(&waitset, &si, &ts);
    if (s > 0 && s != SIGCHLD) {
      kill(-pid, s);
      r->forwarded++;
      r->last_signal = s;
      if (verbose) fprintf(stderr, "a2acheck: forwarded %s to the job\n", strsignal(s));
      continue;
    }
    bool stopped = false;
    reap(pid, &st, &done, &stopped);
    if (stopped && !done && give_tty) {
      /* Ctrl-Z in the job: hand the terminal back and stop like a job
       * would; when continued (fg), give it back and continue the job. */
      tcsetpgrp(tty, getpgrp());
      kill(getpid(), SIGSTOP);
      tcsetpgrp(tty, pid);
      kill(-pid, SIGCONT);
    }
  }
  if (give_tty) tcsetpgrp(tty, getpgrp());
  if (WIFEXITED(st)) r->status = WEXITSTATUS(st);
  else if (WIFSIGNALED(st)) r->status = 128 + WTERMSIG(st);
  if (r->exec_failed) r->status = r->exec_errno == ENOENT ? 127 : 126;

  /* Stragglers: the rest of the group, and orphans adopted by us. */
  double start = now_s(), term_at = start + grace_s, kill_at = -1, giveup_at = -1;
  bool dummy_done = true;
  int dummy;
  for (;;) {
    int children = reap(pid, &dummy, &dummy_done, NULL);
    bool group = kill(-pid, 0) == 0;
    if (!children && !group) break;
    double t = now_s();
    if (kill_at < 0 && t >= term_at) {
      int n = signal_leftovers(pid, SIGTERM);
      r->stragglers = n;
      if (n && verbose)
        fprintf(stderr, "a2acheck: %d process%s of the job still running %.0f s after the command "
                        "ended: sent SIGTERM\n", n, n == 1 ? "" : "es", grace_s);
      kill_at = t + 3;
    } else if (kill_at >= 0 && giveup_at < 0 && t >= kill_at) {
      signal_leftovers(pid, SIGKILL);
      giveup_at = t + 5;
    } else if (giveup_at >= 0 && t >= giveup_at) {
      /* unkillable (uninterruptible I/O): do not wait forever */
      fprintf(stderr, "a2acheck: processes of the job survive SIGKILL; not waiting for them\n");
      break;
    }
    struct timespec ts = {0, 100 * 1000 * 1000};
    siginfo_t si;
    int s = sigtimedwait(&waitset, &si, &ts);
    if (s > 0 && s != SIGCHLD) {
      kill(-pid, s);
      signal_leftovers(pid, s);
      r->forwarded++;
      r->last_signal = s;
    }
  }
  sigprocmask(SIG_SETMASK, &old, NULL);
}
