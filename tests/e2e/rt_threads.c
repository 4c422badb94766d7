/* rt_threads.c - findings from many threads at once.
 *
 *   rt_threads         NTHREADS threads each call ncclGroupEnd() without
 *                      ncclGroupStart() REPS times from each of NSITES
 *                      distinct call sites (site_0 ... site_19), starting
 *                      together on a barrier. With A2ACHECK_MAX_PER_CHECK=5,
 *                      rt_check.py requires exact totals: NSITES distinct
 *                      findings (5 logged, 15 suppressed), NTHREADS * REPS
 *                      occurrences per logged entry and NTHREADS * NSITES *
 *                      REPS in all.
 *   rt_threads stall   the same finding raised by several threads while the
 *                      thread that raised it first is stuck writing it (the
 *                      first symbolization of a large library, a slow file
 *                      system; here: the call sites are in a copy of
 *                      librt_stall_sites.so, argv[2], whose path becomes a
 *                      FIFO nobody writes yet once it is loaded, so the
 *                      writer blocks opening it to read its symbols; the
 *                      log files themselves are never FIFOs: a2acheck
 *                      refuses an existing name). STALL_THREADS
 *                      threads then raise it STALL_REPS times each, and one
 *                      more thread raises a second, new finding (stall_site_1).
 *                      The repeats must return at once, while the writer
 *                      is still stuck (counting never waits for the
 *                      writer: exit status 5 otherwise); rt_check.py then requires every
 *                      occurrence counted: 1 + STALL_THREADS * STALL_REPS
 *                      for stall_site_0, 1 for stall_site_1 (counted but not
 *                      written), nothing dropped.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <nccl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NTHREADS 8
#define REPS 50

#define SITE(n)                                    \
  __attribute__((noinline)) static void site_##n(void) { \
    ncclGroupEnd();                                \
    __asm__ volatile("" ::: "memory");             \
  }
SITE(0) SITE(1) SITE(2) SITE(3) SITE(4) SITE(5) SITE(6) SITE(7) SITE(8) SITE(9)
SITE(10) SITE(11) SITE(12) SITE(13) SITE(14) SITE(15) SITE(16) SITE(17) SITE(18) SITE(19)

static void (*const sites[])(void) = {
    site_0, site_1, site_2, site_3, site_4, site_5, site_6, site_7, site_8, site_9,
    site_10, site_11, site_12, site_13, site_14, site_15, site_16, site_17, site_18, site_19};
#define NSITES (int)(sizeof sites / sizeof sites[0])

static pthread_barrier_t go;

static void *worker(void *arg) {
  (void)arg;
  pthread_barrier_wait(&go);
  for (int r = 0; r < REPS; r++)
    for (int s = 0; s < NSITES; s++) sites[s]();
  return NULL;
}

/* ---- stall ---- */

#define STALL_THREADS 4
#define STALL_REPS 3

static char g_fifo[4096];            /* the library's path, now a FIFO */
static atomic_int g_release;         /* the writer may be unblocked */
static atomic_int g_first_tid;       /* the first reporter's thread id */
static atomic_int g_first_done;      /* its call returned */
static void (*stall_0)(void), (*stall_1)(void);   /* in the library */

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Once released, opens the FIFO for writing and closes it: the runtime's
 * blocked open returns and it reads an empty file (no symbol table). */
static void *reader(void *arg) {
  (void)arg;
  while (!atomic_load(&g_release)) sleep_ms(5);
  int fd = open(g_fifo, O_WRONLY);
  if (fd >= 0) close(fd);
  return NULL;
}

static void *first_reporter(void *arg) {
  (void)arg;
  atomic_store(&g_first_tid, (int)syscall(SYS_gettid));
  stall_0();  /* the first finding: its writer opens the FIFO and blocks */
  atomic_store(&g_first_done, 1);
  return NULL;
}

static void *repeater(void *arg) {
  (void)arg;
  for (int r = 0; r < STALL_REPS; r++) stall_0();
  return NULL;
}

static void *other_finding(void *arg) {
  (void)arg;
  stall_1();
  return NULL;
}

/* Whether thread tid is blocked in open/openat (/proc/.../syscall starts
 * with the number of the system call it is in). */
static int in_open(int tid) {
  char path[64], line[128] = "";
  snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  int ok = fgets(line, sizeof line, f) != NULL;
  fclose(f);
  if (!ok) return 0;
  long nr = strtol(line, NULL, 10);
#ifdef SYS_open
  if (nr == SYS_open) return 1;
#endif
  return nr == SYS_openat;
}

static int stall_main(const char *lib) {
  if (!lib) {
    fprintf(stderr, "stall: needs the path of a copy of librt_stall_sites.so\n");
    return 2;
  }
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h || !(stall_0 = (void (*)(void))dlsym(h, "stall_site_0")) ||
      !(stall_1 = (void (*)(void))dlsym(h, "stall_site_1"))) {
    fprintf(stderr, "stall: %s\n", dlerror());
    return 2;
  }
  char tmp[4200];
  snprintf(g_fifo, sizeof g_fifo, "%s", lib);
  snprintf(tmp, sizeof tmp, "%s.fifo", lib);
  unlink(tmp);
  if (mkfifo(tmp, 0600) != 0 || rename(tmp, g_fifo) != 0) {
    perror("mkfifo");
    return 2;
  }
  pthread_t rd, first, other, rep[STALL_THREADS];
  if (pthread_create(&rd, NULL, reader, NULL) || pthread_create(&first, NULL, first_reporter, NULL))
    return 2;
  /* Wait (bounded) until the first reporter is stuck in the writer. */
  int stuck = 0;
  for (int i = 0; i < 2000 && !stuck; i++) {
    int tid = atomic_load(&g_first_tid);
    stuck = tid && in_open(tid);
    if (!stuck) sleep_ms(5);
  }
  if (!stuck) {
    fprintf(stderr, "stall: the first reporter never blocked on the FIFO\n");
    atomic_store(&g_release, 1);
    return 4;
  }
  /* The repeats take microseconds unless they wait for the writer (the
   * runtime gives up on it after 2 s): a second is a wide margin. */
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < STALL_THREADS; i++)
    if (pthread_create(&rep[i], NULL, repeater, NULL)) return 2;
  for (int i = 0; i < STALL_THREADS; i++) pthread_join(rep[i], NULL);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  int repeats_waited = secs >= 1.0 || atomic_load(&g_first_done);
  if (pthread_create(&other, NULL, other_finding, NULL)) return 2;
  pthread_join(other, NULL);
  atomic_store(&g_release, 1);
  pthread_join(first, NULL);
  printf("stall: %d repeats by %d threads %s the stuck writer (%.3f s)\n",
         STALL_THREADS * STALL_REPS, STALL_THREADS,
         repeats_waited ? "waited for" : "did not wait for", secs);
  fflush(stdout);
  return repeats_waited ? 5 : 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "stall") == 0) return stall_main(argc > 2 ? argv[2] : NULL);
  pthread_t t[NTHREADS];
  pthread_barrier_init(&go, NULL, NTHREADS);
  for (int i = 0; i < NTHREADS; i++)
    if (pthread_create(&t[i], NULL, worker, NULL) != 0) return 2;
  for (int i = 0; i < NTHREADS; i++) pthread_join(t[i], NULL);
  printf("%d threads x %d sites x %d calls\n", NTHREADS, NSITES, REPS);
  return 0;
}
