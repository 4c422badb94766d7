/* xrank_harness.c - see xrank_harness.h: attackers, measurements, faults
 * and network namespaces for the side channel's tests. The launcher runs
 * under liba2acheck.so like the ranks; nothing here calls CUDA or NCCL. */
#define _GNU_SOURCE
#include "xrank_harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int g_attack_out = -1;

static double wall_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void xh_limits(void) {
  const char *v = getenv("XRANK_NOFILE");
  if (!v) return;
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  rl.rlim_cur = (rlim_t)atol(v);
  if (rl.rlim_cur > rl.rlim_max) rl.rlim_cur = rl.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &rl) != 0) perror("setrlimit");
}

static long count_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return -1;
  long n = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n - 1; /* the directory's own descriptor */
}

static long rss_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kb = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld kB", &kb) == 1) break;
  fclose(f);
  return kb;
}

static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
         ru.ru_stime.tv_usec * 1e-6;
}

static int measuring(void) { return getenv("XRANK_MEASURE") != NULL; }

static void metric(const char *name, double v) {
  printf("metric %s %.3f\n", name, v);
  fflush(stdout);
}

/* Replace {host}, {port}, {token} in cmd. */
static void expand(const char *cmd, const char *host, const char *port, const char *token,
                   char *out, size_t cap) {
  size_t o = 0;
  for (const char *p = cmd; *p && o + 1 < cap;) {
    const char *v = NULL;
    size_t skip = 0;
    if (!strncmp(p, "{host}", 6)) v = host, skip = 6;
    else if (!strncmp(p, "{port}", 6)) v = port, skip = 6;
    else if (!strncmp(p, "{token}", 7)) v = token, skip = 7;
    if (v) {
      size_t n = strlen(v);
      if (o + n >= cap) break;
      memcpy(out + o, v, n);
      o += n;
      p += skip;
    } else {
      out[o++] = *p++;
    }
  }
  out[o] = 0;
}

/* Forward what the attacker printed (after "ready") to stdout. */
static void drain_attacker(int wait_ms) {
  if (g_attack_out < 0) return;
  char buf[4096];
  struct pollfd p = {.fd = g_attack_out, .events = POLLIN};
  while (poll(&p, 1, wait_ms) > 0) {
    ssize_t k = read(g_attack_out, buf, sizeof buf);
    if (k <= 0) break;
    fwrite(buf, 1, (size_t)k, stdout);
  }
  fflush(stdout);
}

pid_t xh_attack_start(const ncclUniqueId *id) {
  const char *cmd = getenv("XRANK_ATTACK");
  if (!cmd || !*cmd) return 0;
  /* The coordinator record (xrank/xrank_rec.h): bytes 80..127, port at +6
   * (network order), IPv4 at +8, token at +24. */
  const unsigned char *r = (const unsigned char *)id->internal + 80;
  char host[32] = "127.0.0.1", port[16] = "0", token[33] = "";
  unsigned char zero[48] = {0};
  if (memcmp(r, zero, sizeof zero) != 0) {
    snprintf(host, sizeof host, "%u.%u.%u.%u", r[8], r[9], r[10], r[11]);
    snprintf(port, sizeof port, "%u", (unsigned)(r[6] << 8 | r[7]));
    for (int i = 0; i < 16; i++) snprintf(token + 2 * i, 3, "%02x", r[24 + i]);
  } else if (getenv("A2ACHECK_COORDINATOR")) {
    const char *c = strrchr(getenv("A2ACHECK_COORDINATOR"), ':');
    if (c) snprintf(port, sizeof port, "%s", c + 1);
  }
  char line[2048];
  memcpy(line, "exec ", 5); /* the shell becomes the attacker: one pid to stop */
  expand(cmd, host, port, token, line + 5, sizeof line - 5);
  long fds0 = count_fds(), rss0 = rss_kb();
  int pfd[2];
  if (pipe(pfd) != 0) return -1;
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    setpgid(0, 0); /* its own group: stopping it stops the shell's children */
    dup2(pfd[1], 1);
    close(pfd[0]);
    close(pfd[1]);
    /* The attacker is not part of the job: no a2acheck in it. */
    unsetenv("LD_PRELOAD");
    execl("/bin/sh", "sh", "-c", line, (char *)NULL);
    _exit(127);
  }
  close(pfd[1]);
  g_attack_out = pfd[0];
  /* Wait for "ready" (at most 60 s). */
  char got[512];
  size_t n = 0;
  double t0 = wall_s();
  int ok = 0;
  while (!ok && wall_s() - t0 < 60) {
    struct pollfd p = {.fd = g_attack_out, .events = POLLIN};
    if (poll(&p, 1, 200) <= 0) continue;
    ssize_t k = read(g_attack_out, got + n, sizeof got - 1 - n);
    if (k <= 0) break;
    n += (size_t)k;
    got[n] = 0;
    char *nl = strchr(got, '\n');
    if (nl && !strncmp(got, "ready", 5)) {
      ok = 1;
      printf("attack %.*s after %.2f s\n", (int)(nl - got), got, wall_s() - t0);
    } else if (n == sizeof got - 1) {
      n = 0;
    }
  }
  if (!ok) {
    printf("attack: the attacker never got ready\n");
    kill(-pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
  }
  if (measuring()) {
    /* The attack is in place: what it costs the process hosting the
     * coordinator - CPU in the next second (no busy loop), descriptors and
     * memory, and whether the application can still open files. */
    double c0 = cpu_s(), w0 = wall_s();
    struct timespec ts = {1, 0};
    while (nanosleep(&ts, &ts) != 0) {}
    double pct = 100.0 * (cpu_s() - c0) / (wall_s() - w0);
    int fails = 0, fds[64];
    for (int i = 0; i < 64; i++) {
      fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (fds[i] < 0) fails++;
    }
    long fds1 = count_fds(), rss1 = rss_kb();
    for (int i = 0; i < 64; i++)
      if (fds[i] >= 0) close(fds[i]);
    metric("host_fds_before", (double)fds0);
    metric("host_fds_under_attack", (double)fds1 - (64 - fails));
    metric("host_fds_growth", (double)(fds1 - (64 - fails) - fds0));
    metric("host_rss_kb_before", (double)rss0);
    metric("host_rss_kb_under_attack", (double)rss1);
    metric("host_rss_growth_kb", (double)(rss1 - rss0));
    metric("host_cpu_pct", pct);
    metric("host_open_failures", (double)fails);
  }
  return pid;
}

void xh_end(pid_t attacker) {
  if (attacker > 0) {
    kill(-attacker, SIGTERM);
    double t0 = wall_s();
    while (waitpid(attacker, NULL, WNOHANG) == 0) {
      drain_attacker(50);
      if (wall_s() - t0 > 5) {
        kill(-attacker, SIGKILL);
        waitpid(attacker, NULL, 0);
        break;
      }
    }
    drain_attacker(0);
  }
  if (measuring()) {
    metric("host_fds_end", (double)count_fds());
    metric("host_rss_kb_end", (double)rss_kb());
  }
}

int xh_rank_enter(void) {
  const char *ns = getenv("XRANK_NETNS_RANKS");
  if (!ns) return 0;
  int fd = open(ns, O_RDONLY | O_CLOEXEC);
  if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
    perror("setns");
    return -1;
  }
  close(fd);
  return 0;
}

int xh_fault_wanted(void) { return getenv("XRANK_FAULT") != NULL; }

int xh_fault(pid_t host, const pid_t *ranks, int nranks, double t0) {
  const char *f = getenv("XRANK_FAULT");
  if (!f) return -1;
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  double epoch = (double)now.tv_sec + now.tv_nsec * 1e-9;
  int killed = -1;
  if (!strcmp(f, "kill_coord") && host > 0) {
    kill(host, SIGKILL);
  } else if (!strcmp(f, "stop_coord") && host > 0) {
    kill(host, SIGSTOP);
  } else if (!strncmp(f, "kill_rank:", 10)) {
    int r = atoi(f + 10);
    if (r >= 0 && r < nranks) {
      kill(ranks[r], SIGKILL);
      killed = r;
    }
  } else if (!strncmp(f, "cmd:", 4)) {
    int st = system(f + 4);
    printf("fault command exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  }
  printf("fault %s after %.1f s\n", f, wall_s() - t0);
  metric("fault_epoch", epoch);
  return killed;
}
