/* core_kparams.c - kernel parameter layouts, asked once per function from
 * the host (cudaFuncGetName, cudaFuncGetParamInfo through a2a_host) and
 * cached for every analyzer (a2a_core.h, a2a_kernel_params).
 *
 * Open addressing over a fixed table; an entry is written once under a
 * mutex taken only to insert, then published by a release store of its
 * function pointer, so lookups are lock-free and allocation-free. The host
 * queries run outside every analyzer lock (they call the real runtime). A
 * full table answers NULL: the launch is then not analyzed, never
 * mis-analyzed. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "a2a_core.h"
#include "core_internal.h"

#define KP_SLOTS 1024 /* power of two */

static a2a_kparams g_kp[KP_SLOTS];
static pthread_mutex_t g_kp_mu = PTHREAD_MUTEX_INITIALIZER;

/* The calling thread's last answer: a program launches the same few
 * kernels over and over, and one launch asks twice (layout, stream_hb),
 * so the probe of the table is skipped when the function repeats. An entry
 * is immutable once published and the table only empties at a reset
 * (init, unit tests), which bumps g_kp_gen: a cached answer from before it
 * is not used. Only found entries are cached (a full table answers NULL
 * and asks again next time). A forked child keeps the table and this
 * thread's cache, consistently. */
static _Atomic unsigned g_kp_gen;
static _Thread_local struct {
  const void *func;
  const a2a_kparams *kp;
  unsigned gen;
} t_kp_last;

static size_t kp_home(const void *func) {
  uint64_t x = (uint64_t)(uintptr_t)func;
  x ^= x >> 29;
  x *= 0x9e3779b97f4a7c15ULL;
  return (size_t)(x >> 40) & (KP_SLOTS - 1);
}

static bool contains_ci(const char *s, const char *w) {
  size_t n = strlen(w);
  for (; *s; s++)
    if (strncasecmp(s, w, n) == 0) return true;
  return false;
}

static const a2a_kparams *kp_probe(const void *func) {
  size_t i = kp_home(func);
  for (size_t n = 0; n < KP_SLOTS; n++, i = (i + 1) & (KP_SLOTS - 1)) {
    const void *k = atomic_load_explicit(&g_kp[i].func, memory_order_acquire);
    if (k == func) return &g_kp[i];
    if (k == NULL) return NULL;
  }
  return NULL;
}

static const a2a_kparams *kp_remember(const void *func, const a2a_kparams *kp, unsigned gen) {
  if (kp) {
    t_kp_last.func = func;
    t_kp_last.kp = kp;
    t_kp_last.gen = gen;
  }
  return kp;
}

/* Everything but the repeated function: out of line, so that the fast
 * path below needs no stack frame. */
__attribute__((noinline)) static const a2a_kparams *kp_lookup(const void *func, unsigned gen);

const a2a_kparams *a2a_kernel_params(const void *func) {
  unsigned gen = atomic_load_explicit(&g_kp_gen, memory_order_relaxed);
  if (func == t_kp_last.func && gen == t_kp_last.gen && func) return t_kp_last.kp;
  return kp_lookup(func, gen);
}

static const a2a_kparams *kp_lookup(const void *func, unsigned gen) {
  if (!func) return NULL;
  const a2a_kparams *f = kp_probe(func);
  if (f) return kp_remember(func, f, gen);
  /* Ask the host before taking the lock (the real runtime is called). */
  a2a_kparams tmp;
  memset(&tmp, 0, sizeof tmp);
  for (size_t p = 0; p < A2A_KPARAMS_MAX; p++) {
    size_t off, sz;
    if (a2a_hostsvc->func_param_info(func, p, &off, &sz) != 0) break;
    tmp.offset[p] = (uint32_t)(off > 0xffffffffu ? 0xffffffffu : off);
    tmp.size[p] = (uint16_t)(sz > 0xffff ? 0xffff : sz);
    tmp.nparams++;
  }
  if (tmp.nparams == 0) tmp.nparams = -1;
  const char *nm = NULL;
  if (a2a_hostsvc->func_name(func, &nm) == 0) tmp.name = nm;
  if (tmp.name && (contains_ci(tmp.name, "copy") || contains_ci(tmp.name, "contiguous")))
    tmp.flags |= A2A_KP_NAME_COPY;

  pthread_mutex_lock(&g_kp_mu);
  size_t i = kp_home(func);
  a2a_kparams *slot = NULL;
  for (size_t n = 0; n < KP_SLOTS; n++, i = (i + 1) & (KP_SLOTS - 1)) {
    const void *k = atomic_load_explicit(&g_kp[i].func, memory_order_relaxed);
    if (k == func) { slot = &g_kp[i]; break; }        /* another thread won */
    if (k == NULL) {
      slot = &g_kp[i];
      slot->nparams = tmp.nparams;
      slot->flags = tmp.flags;
      slot->name = tmp.name;
      memcpy(slot->offset, tmp.offset, sizeof tmp.offset);
      memcpy(slot->size, tmp.size, sizeof tmp.size);
      atomic_store_explicit(&slot->func, func, memory_order_release);
      break;
    }
  }
  pthread_mutex_unlock(&g_kp_mu);
  return kp_remember(func, slot, gen);
}

void a2a_kparams_reset(void) {
  pthread_mutex_init(&g_kp_mu, NULL);
  for (size_t i = 0; i < KP_SLOTS; i++) atomic_store(&g_kp[i].func, NULL);
  atomic_fetch_add(&g_kp_gen, 1); /* every thread's cached answer is stale */
}

/* ------------------------------------------------------------------ */
/* Call-site stacks (a2a_site_stack): one capture per call site. */

#define SS_SLOTS 512 /* power of two */

typedef struct site_stack {
  _Atomic(const void *) site;
  a2a_stack st;
} site_stack;

static site_stack g_ss[SS_SLOTS];
static pthread_mutex_t g_ss_mu = PTHREAD_MUTEX_INITIALIZER;

static size_t ss_home(const void *site) {
  uint64_t x = (uint64_t)(uintptr_t)site * 0x9e3779b97f4a7c15ULL;
  return (size_t)(x >> 40) & (SS_SLOTS - 1);
}

const a2a_stack *a2a_site_stack_ref(const void *site, a2a_stack *scratch) {
  if (!site) return NULL;
  size_t i = ss_home(site);
  for (size_t n = 0; n < SS_SLOTS; n++, i = (i + 1) & (SS_SLOTS - 1)) {
    const void *k = atomic_load_explicit(&g_ss[i].site, memory_order_acquire);
    if (k == site) return &g_ss[i].st;
    if (k == NULL) break;
  }
  /* First operation from this site: capture on this thread (outside every
   * lock: the unwinder may take the loader's), then publish. A slot's stack
   * is written once, before its site is published, and never again until
   * a2a_site_stacks_reset: readers need no lock and may keep the pointer. */
  a2a_hostsvc->capture_stack(scratch);
  const a2a_stack *ref = scratch; /* the cache is full: this call's own */
  pthread_mutex_lock(&g_ss_mu);
  i = ss_home(site);
  for (size_t n = 0; n < SS_SLOTS; n++, i = (i + 1) & (SS_SLOTS - 1)) {
    const void *k = atomic_load_explicit(&g_ss[i].site, memory_order_relaxed);
    if (k == site) { ref = &g_ss[i].st; break; } /* another thread was first */
    if (k == NULL) {
      g_ss[i].st = *scratch;
      atomic_store_explicit(&g_ss[i].site, site, memory_order_release);
      ref = &g_ss[i].st;
      break;
    }
  }
  pthread_mutex_unlock(&g_ss_mu);
  return ref;
}

void a2a_site_stack(const void *site, a2a_stack *out) {
  const a2a_stack *ref = a2a_site_stack_ref(site, out);
  if (!ref) out->n = 0;
  else if (ref != out) *out = *ref;
}

void a2a_site_stacks_reset(void) {
  pthread_mutex_init(&g_ss_mu, NULL);
  for (size_t i = 0; i < SS_SLOTS; i++) atomic_store(&g_ss[i].site, NULL);
}
