/* rt_threads.c - findings from many threads at once: NTHREADS threads each
 * call ncclGroupEnd() without ncclGroupStart() REPS times from each of
 * NSITES distinct call sites (site_0 ... site_19), starting together on a
 * barrier. With A2ACHECK_MAX_PER_CHECK=5, rt_check.py requires exact totals:
 * NSITES distinct findings (5 logged, 15 suppressed), NTHREADS * REPS
 * occurrences per logged entry and NTHREADS * NSITES * REPS in all. */
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>

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

int main(void) {
  pthread_t t[NTHREADS];
  pthread_barrier_init(&go, NULL, NTHREADS);
  for (int i = 0; i < NTHREADS; i++)
    if (pthread_create(&t[i], NULL, worker, NULL) != 0) return 2;
  for (int i = 0; i < NTHREADS; i++) pthread_join(t[i], NULL);
  printf("%d threads x %d sites x %d calls\n", NTHREADS, NSITES, REPS);
  return 0;
}
