/* a2a_lock.h - a mutex for the analyzers' short, frequent critical sections.
 *
 * A futex mutex (U. Drepper, "Futexes Are Tricky", in the exchange-on-unlock
 * form of glibc's low-level lock): the word is 0 free, 1 held, 2 held and
 * maybe waited for. Uncontended, acquiring is one compare-exchange and
 * releasing one exchange, inline - a pthread_mutex_lock/unlock pair costs
 * about 55 instructions through the PLT, a tenth of an NCCL call's analysis
 * in stream_hb; contended, a waiter sleeps in the kernel (core_lock.c), as
 * on a pthread mutex. Acquire on taking and release on releasing order each
 * holder's writes before the next holder's reads (ThreadSanitizer sees the
 * same edges through the atomics).
 *
 * Not recursive; no owner, no error checking. A forked child whose parent
 * had other threads resets it (a2a_lock_reset), as it would re-initialize a
 * pthread mutex. */
#ifndef A2A_LOCK_H
#define A2A_LOCK_H

#include <stdatomic.h>

typedef struct a2a_lock {
  _Atomic int v;
} a2a_lock;

#define A2A_LOCK_INIT {0}

/* core_lock.c: the contended paths. c: the value the failed
 * compare-exchange saw. */
void a2a_lock_wait(a2a_lock *l, int c);
void a2a_lock_wake(a2a_lock *l);

static inline void a2a_lock_acquire(a2a_lock *l) {
  int c = 0;
  if (!atomic_compare_exchange_strong_explicit(&l->v, &c, 1, memory_order_acquire,
                                               memory_order_relaxed))
    a2a_lock_wait(l, c);
}

static inline void a2a_lock_release(a2a_lock *l) {
  if (atomic_exchange_explicit(&l->v, 0, memory_order_release) == 2) a2a_lock_wake(l);
}

/* Free, whoever held it (a forked child: the holder is gone). */
static inline void a2a_lock_reset(a2a_lock *l) { atomic_store(&l->v, 0); }

#endif
