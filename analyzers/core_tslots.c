/* core_tslots.c - per-thread analyzer records that outlive no thread: a
 * fixed table of slots, each owned by one live application thread (by its
 * ev->thread index) and handed to a new thread once its owner has exited.
 *
 * Why: thread indices grow for the whole life of the process (a server that
 * recreates worker threads passes any fixed bound sooner or later), so a
 * table indexed by the thread index would stop checking new threads and
 * keep the records of dead ones forever. Here capacity bounds the number of
 * *live* threads with a record, and memory is that of the peak.
 *
 * Ownership: a thread claims a free slot on its first use (one calloc per
 * slot, ever) and registers a pthread key whose destructor frees the slot
 * when the thread exits. Lookups probe a few slots from index % capacity
 * and compare owners: lock-free, no allocation, no syscall.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "a2a_core.h"

/* Slots probed from id % capacity when the first choice is taken by a live
 * thread (a2a_tslots.displaced): adjacent slots share cache lines (16 bytes
 * each). Until that happens, which takes A2A_TSLOTS live threads or an
 * unlucky id pattern, a lookup reads one slot: a kernel launch on a thread
 * with no record, the common case, costs two loads. */
#define PROBES 8

static void release_slot(void *p) {
  a2a_tslot *s = p;
  if (s) atomic_store_explicit(&s->owner, 0, memory_order_release);
}

int a2a_tslots_init(a2a_tslots *t, void (*fini)(void *rec)) {
  if (!t->key_ok) {
    if (pthread_key_create(&t->key, release_slot) != 0) return -1;
    t->key_ok = true;
  }
  for (size_t i = 0; i < A2A_TSLOTS; i++) {
    void *rec = atomic_exchange(&t->slot[i].rec, NULL);
    if (rec && fini) fini(rec);
    free(rec);
    atomic_store(&t->slot[i].owner, 0);
  }
  atomic_store(&t->displaced, false);
  return 0;
}

void *a2a_tslots_get(a2a_tslots *t, uint32_t id) {
  if (!id) return NULL;
  for (size_t k = 0; k < PROBES; k++) {
    if (k == 1 && !atomic_load_explicit(&t->displaced, memory_order_relaxed)) break;
    a2a_tslot *s = &t->slot[(id + k) % A2A_TSLOTS];
    if (atomic_load_explicit(&s->owner, memory_order_acquire) == id)
      return atomic_load_explicit(&s->rec, memory_order_acquire);
  }
  return NULL;
}

void *a2a_tslots_claim(a2a_tslots *t, uint32_t id, size_t size, bool *reused) {
  *reused = false;
  if (!id || !t->key_ok) return NULL;
  for (size_t k = 0; k < PROBES; k++) {
    a2a_tslot *s = &t->slot[(id + k) % A2A_TSLOTS];
    uint32_t free_owner = 0;
    if (!atomic_compare_exchange_strong(&s->owner, &free_owner, id)) continue;
    /* Set before any lookup of this id can happen (lookups of an id are
     * made by its own thread, after this claim). */
    if (k > 0) atomic_store_explicit(&t->displaced, true, memory_order_relaxed);
    void *rec = atomic_load_explicit(&s->rec, memory_order_acquire);
    if (rec) {
      *reused = true;
    } else {
      rec = calloc(1, size);
      if (!rec) {
        atomic_store(&s->owner, 0);
        return NULL;
      }
      atomic_store_explicit(&s->rec, rec, memory_order_release);
    }
    /* The calling thread is thread `id` (analyzers see events on the
     * application's own thread): free the slot when it exits. */
    pthread_setspecific(t->key, s);
    return rec;
  }
  return NULL;
}

void a2a_tslots_fork_child(a2a_tslots *t, uint32_t self) {
  for (size_t i = 0; i < A2A_TSLOTS; i++) {
    uint32_t o = atomic_load_explicit(&t->slot[i].owner, memory_order_relaxed);
    if (o && o != self) atomic_store_explicit(&t->slot[i].owner, 0, memory_order_relaxed);
  }
}
