/* rt_group_unbalanced.c - calls ncclGroupEnd() without ncclGroupStart()
 * from unbalanced_caller(), then exits with its own status 3.
 *   rt_group_unbalanced          one call
 *   rt_group_unbalanced repeat   the same call site 5 times plus one other
 *                                site (dedup: two findings, counts 5 and 1)
 *   rt_group_unbalanced comm     one call, then a 1-rank communicator: the
 *                                rank becomes known after the log files
 *                                were created (they are renamed)
 * The finding's stack must start in unbalanced_caller (rt_check.py). Under
 * a2acheck it also prints what include/a2acheck.h reports. */
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2acheck.h"

__attribute__((noinline)) static int unbalanced_caller(void) {
  int r = ncclGroupEnd();
  __asm__ volatile("" ::: "memory");   /* keep the call a real call */
  return r;
}

__attribute__((noinline)) static int other_site(void) {
  int r = ncclGroupEnd();
  __asm__ volatile("" ::: "memory");
  return r;
}

/* Registered before the first NCCL call, i.e. before a2acheck's own exit
 * handler: it must still run when a2acheck changes the exit status. */
static void app_cleanup(void) { printf("application atexit handler ran\n"); }

int main(int argc, char **argv) {
  atexit(app_cleanup);
  int repeat = argc > 1 && strcmp(argv[1], "repeat") == 0;
  int comm = argc > 1 && strcmp(argv[1], "comm") == 0;
  int r = unbalanced_caller();
  for (int i = 1; repeat && i < 5; i++) unbalanced_caller();
  if (repeat) other_site();
  if (comm) {
    ncclUniqueId id;
    ncclComm_t c = NULL;
    int a = ncclGetUniqueId(&id);
    int b = ncclCommInitRank(&c, 1, id, 0);
    printf("comm init %d %d\n", a, b);
    if (c) ncclCommDestroy(c);
  }
  printf("ncclGroupEnd -> %d\n", r);
  if (a2acheck_version && a2acheck_finding_count)
    printf("a2acheck %d: %lu error finding(s), %lu in all\n", a2acheck_version(),
           a2acheck_finding_count(2), a2acheck_finding_count(0));
  return 3;
}
