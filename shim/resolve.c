/* resolve.c - finds the real NCCL and CUDA runtime functions behind the
 * wrappers, lazily and thread-safely, without ever finding ourselves.
 *
 * Resolution chain for one table row (first hit wins; a candidate inside
 * liba2acheck.so itself is always refused):
 *   1. NCCL only: dlsym(RTLD_NEXT, "p<name>") - NCCL >= 2.16 exports every API
 *      function as a weak ncclX and a strong pncclX alias (PMPI-style);
 *   2. dlsym(RTLD_NEXT, "<name>") - the next definition in the global
 *      lookup scope (older NCCL, every cudart symbol);
 *   3. dlopen(soname, RTLD_NOLOAD | RTLD_LAZY) + dlsym - the library was
 *      loaded into a local scope (dlopen(RTLD_LOCAL), the Python extension
 *      case) where RTLD_NEXT cannot see it; NOLOAD never loads anything;
 *   4. a dl_iterate_phdr scan: every loaded object other than ourselves and
 *      the main program that defines the library's marker symbol (pncclSend
 *      or ncclSend for NCCL, cudaLaunchKernel for cudart) - a renamed or
 *      vendored copy (e.g. libnccl.so.2 under another soname).
 *
 * If all fail, the slot gets the row's fallback (generated below), which
 * reports once through a2a_rt_unresolved() and returns the library's error
 * code. A fallback retries the chain when objects were loaded since the last
 * attempt (dl_phdr_info.dlpi_adds), so a library dlopen()ed later is found.
 *
 * Concurrency: slots are atomics; two threads may run the chain for the same
 * row at once and both store the same answer (no locks of our own, no data
 * race). The loader's own locks are taken by dlsym/dlopen, only on this
 * slow path, never while we hold anything.
 *
 * errno is preserved: the chain runs inside wrappers before the real call.
 * Handles from dlopen(RTLD_NOLOAD) are closed again (they only add a
 * reference), so the application's dlclose() keeps its meaning.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "intercept.h"

_Atomic(void *) a2a_real_slot[A2A_SYM__COUNT];

/* ---- per-row static facts, from the table ---------------------------- */

static const char *const sym_names[A2A_SYM__COUNT] = {
#define A2A_SYM(lib, mode, ret, name, params, args, err) [A2A_SYM_##name] = #name,
#include "intercept_table.inc"
#undef A2A_SYM
};

static const unsigned char sym_libs[A2A_SYM__COUNT] = {
#define A2A_SYM(lib, mode, ret, name, params, args, err) [A2A_SYM_##name] = A2A_LIB_##lib,
#include "intercept_table.inc"
#undef A2A_SYM
};

/* Per library: sonames to try with RTLD_NOLOAD, the scan marker(s), and the
 * name used in messages. */
typedef struct lib_info {
  const char *label;
  const char *sonames[3];
  const char *markers[2];
  bool profiling_alias;  /* try "p<name>" first */
} lib_info;

static const lib_info libs[A2A_LIB__COUNT] = {
    [A2A_LIB_NCCL] = {"libnccl.so.2", {"libnccl.so.2", "libnccl.so", NULL},
                      {"pncclSend", "ncclSend"}, true},
    [A2A_LIB_CUDA] = {"libcudart.so.13", {"libcudart.so.13", "libcudart.so", NULL},
                      {"cudaLaunchKernel", NULL}, false},
};

/* How each row was resolved (for diagnostics and tests). */
enum resolve_how {
  HOW_NOT_YET = 0, HOW_PNCCL_NEXT, HOW_RTLD_NEXT, HOW_NOLOAD, HOW_SCAN, HOW_UNRESOLVED
};
static const char *const how_names[] = {
    [HOW_NOT_YET] = "unresolved-yet", [HOW_PNCCL_NEXT] = "pnccl-rtld-next",
    [HOW_RTLD_NEXT] = "rtld-next",    [HOW_NOLOAD] = "dlopen-noload",
    [HOW_SCAN] = "phdr-scan",         [HOW_UNRESOLVED] = "unresolved",
};
static _Atomic unsigned char sym_how[A2A_SYM__COUNT];
/* dlpi_adds at the last failed attempt, and whether the failure was reported. */
static _Atomic unsigned long long sym_fail_adds[A2A_SYM__COUNT];
static atomic_bool sym_reported[A2A_SYM__COUNT];

const char *a2a_sym_name(a2a_sym_id id) { return id < A2A_SYM__COUNT ? sym_names[id] : "?"; }
a2a_lib a2a_sym_lib(a2a_sym_id id) { return (a2a_lib)sym_libs[id]; }
const char *a2a_real_how(a2a_sym_id id)
{
  return how_names[atomic_load_explicit(&sym_how[id], memory_order_acquire)];
}

/* ---- refusing ourselves --------------------------------------------- */

/* Load address of liba2acheck.so (or of the program that linked this file,
 * in unit tests), found from the address of a function in this file. */
static void *self_base(void)
{
  static _Atomic(void *) base;
  void *b = atomic_load_explicit(&base, memory_order_acquire);
  if (!b) {
    Dl_info info;
    if (dladdr((void *)&self_base, &info) && info.dli_fbase)
      b = info.dli_fbase;
    atomic_store_explicit(&base, b, memory_order_release);
  }
  return b;
}

static bool is_self(const void *p)
{
  Dl_info info;
  if (!p) return false;
  if (!dladdr(p, &info)) return false;
  return info.dli_fbase == self_base();
}

/* dlsym that refuses definitions inside this object. */
static void *sym_not_self(void *handle, const char *name)
{
  void *p = dlsym(handle, name);
  return (p && !is_self(p)) ? p : NULL;
}

/* Look `name` up through handle, trying NCCL's p-alias first. */
static void *sym_in_handle(void *handle, const lib_info *li, const char *name)
{
  char pname[128];
  void *p = NULL;
  if (li->profiling_alias && snprintf(pname, sizeof pname, "p%s", name) < (int)sizeof pname)
    p = sym_not_self(handle, pname);
  if (!p) p = sym_not_self(handle, name);
  return p;
}

/* ---- step 4: scanning loaded objects -------------------------------- */

#define SCAN_MAX_OBJECTS 1024

typedef struct scan_ctx {
  const char *names[SCAN_MAX_OBJECTS];
  int n;
  void *self;
} scan_ctx;

static int scan_collect(struct dl_phdr_info *info, size_t size, void *arg)
{
  scan_ctx *ctx = arg;
  /* The main program ("") was covered by RTLD_NEXT; the vdso and we
   * ourselves cannot hold the real library. */
  if (!info->dlpi_name || !info->dlpi_name[0]) return 0;
  if ((void *)info->dlpi_addr == ctx->self) return 0;
  if (ctx->n < SCAN_MAX_OBJECTS) ctx->names[ctx->n++] = info->dlpi_name;
  return 0;
}

/* dlopen() must not run inside the dl_iterate_phdr callback (the loader
 * holds its object-list lock there), so names are collected first and
 * opened afterwards with RTLD_NOLOAD (which never loads anything new). */
static void *scan_loaded_objects(const lib_info *li, const char *name)
{
  scan_ctx ctx = {.n = 0, .self = self_base()};
  dl_iterate_phdr(scan_collect, &ctx);
  for (int i = 0; i < ctx.n; i++) {
    void *h = dlopen(ctx.names[i], RTLD_NOLOAD | RTLD_LAZY);
    if (!h) continue;
    void *p = NULL;
    bool has_marker = false;
    for (int m = 0; m < 2 && li->markers[m] && !has_marker; m++)
      has_marker = sym_not_self(h, li->markers[m]) != NULL;
    if (has_marker) p = sym_in_handle(h, li, name);
    dlclose(h);
    if (p) return p;
  }
  return NULL;
}

static int count_adds(struct dl_phdr_info *info, size_t size, void *arg)
{
  *(unsigned long long *)arg = info->dlpi_adds;
  return 1; /* the counter is the same in every entry: stop at the first */
}

static unsigned long long loader_adds(void)
{
  unsigned long long adds = 0;
  dl_iterate_phdr(count_adds, &adds);
  return adds;
}

/* ---- the chain ------------------------------------------------------- */

static void *run_chain(a2a_sym_id id, enum resolve_how *how)
{
  const lib_info *li = &libs[sym_libs[id]];
  const char *name = sym_names[id];
  char pname[128];
  void *p;

  if (li->profiling_alias && snprintf(pname, sizeof pname, "p%s", name) < (int)sizeof pname &&
      (p = sym_not_self(RTLD_NEXT, pname))) {
    *how = HOW_PNCCL_NEXT;
    return p;
  }
  if ((p = sym_not_self(RTLD_NEXT, name))) {
    *how = HOW_RTLD_NEXT;
    return p;
  }
  for (int i = 0; i < 3 && li->sonames[i]; i++) {
    void *h = dlopen(li->sonames[i], RTLD_NOLOAD | RTLD_LAZY);
    if (!h) continue;
    p = sym_in_handle(h, li, name);
    dlclose(h);
    if (p) {
      *how = HOW_NOLOAD;
      return p;
    }
  }
  if ((p = scan_loaded_objects(li, name))) {
    *how = HOW_SCAN;
    return p;
  }
  *how = HOW_UNRESOLVED;
  return NULL;
}

/* The unresolved fallbacks, one per row, with the row's exact prototype. */
static void *retry_resolve(a2a_sym_id id);
static void report_unresolved(a2a_sym_id id);

#define A2A_SYM(lib, mode, ret, name, params, args, err)                      \
  static ret a2a_unresolved_##name params                                    \
  {                                                                           \
    void *real = retry_resolve(A2A_SYM_##name);                               \
    if (real) return ((a2a_real_##name##_t)real) args;                        \
    report_unresolved(A2A_SYM_##name);                                        \
    return err;                                                               \
  }
#include "intercept_table.inc"
#undef A2A_SYM

static void *const fallbacks[A2A_SYM__COUNT] = {
#define A2A_SYM(lib, mode, ret, name, params, args, err)                      \
  [A2A_SYM_##name] = (void *)&a2a_unresolved_##name,
#include "intercept_table.inc"
#undef A2A_SYM
};

static void report_unresolved(a2a_sym_id id)
{
  int saved = errno;
  if (!atomic_exchange_explicit(&sym_reported[id], true, memory_order_relaxed))
    a2a_rt_unresolved(sym_names[id], libs[sym_libs[id]].label);
  errno = saved;
}

/* Run the chain and publish the outcome in the slot. Returns the real
 * function or NULL (the slot then holds the fallback). */
static void *resolve_and_store(a2a_sym_id id, unsigned long long adds)
{
  enum resolve_how how;
  void *p = run_chain(id, &how);
  if (p) {
    atomic_store_explicit(&sym_how[id], (unsigned char)how, memory_order_release);
    atomic_store_explicit(&a2a_real_slot[id], p, memory_order_release);
    return p;
  }
  atomic_store_explicit(&sym_fail_adds[id], adds, memory_order_relaxed);
  atomic_store_explicit(&sym_how[id], HOW_UNRESOLVED, memory_order_release);
  /* Only replace NULL: a concurrent successful resolution must win. */
  void *expected = NULL;
  atomic_compare_exchange_strong_explicit(&a2a_real_slot[id], &expected, fallbacks[id],
                                          memory_order_acq_rel, memory_order_acquire);
  return NULL;
}

void *a2a_real_resolve(a2a_sym_id id)
{
  int saved = errno;
  void *p = atomic_load_explicit(&a2a_real_slot[id], memory_order_acquire);
  if (!p) {
    resolve_and_store(id, loader_adds());
    p = atomic_load_explicit(&a2a_real_slot[id], memory_order_acquire);
  }
  errno = saved;
  return p;
}

/* Called by a fallback: try again only if the set of loaded objects grew
 * since the last failure (dlpi_adds only ever increases). */
static void *retry_resolve(a2a_sym_id id)
{
  int saved = errno;
  void *real = NULL;
  void *cur = atomic_load_explicit(&a2a_real_slot[id], memory_order_acquire);
  if (cur && cur != fallbacks[id]) {
    real = cur;  /* another thread found it meanwhile */
  } else {
    unsigned long long adds = loader_adds();
    if (adds != atomic_load_explicit(&sym_fail_adds[id], memory_order_relaxed)) {
      real = resolve_and_store(id, adds); /* replaces the fallback on success */
    }
  }
  errno = saved;
  return real;
}

bool a2a_real_found(a2a_sym_id id) { return a2a_real_ptr(id) != fallbacks[id]; }

bool a2a_real_available(a2a_sym_id id)
{
  void *p = a2a_real_ptr(id);
  if (p == fallbacks[id]) p = retry_resolve(id);
  return p != NULL;
}
