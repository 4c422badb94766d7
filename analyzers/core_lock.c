/* core_lock.c - the contended paths of a2a_lock (a2a_lock.h): sleeping in
 * and waking from the kernel's futex wait queue. */
#include "a2a_lock.h"

#include <linux/futex.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Mark the lock contended (2) and sleep until a release finds it so; the
 * exchange that sees 0 takes the lock (still marked contended: its release
 * wakes the next waiter, if any - at worst one wake-up too many). */
void a2a_lock_wait(a2a_lock *l, int c) {
  if (c != 2) c = atomic_exchange_explicit(&l->v, 2, memory_order_acquire);
  while (c != 0) {
    /* Returns at once if the word is no longer 2 (EAGAIN), on a wake-up or
     * a signal: every case retries the exchange. */
    syscall(SYS_futex, (int *)&l->v, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
    c = atomic_exchange_explicit(&l->v, 2, memory_order_acquire);
  }
}

void a2a_lock_wake(a2a_lock *l) {
  syscall(SYS_futex, (int *)&l->v, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
