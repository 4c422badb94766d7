/* context.c - primary contexts and the per-thread context stack, the state
 * the simulator's runtime shares with its driver (libcuda.so.1, which reaches
 * it through a2asim_driver.h).
 *
 * The CUDA model: every device has one primary context, reference counted.
 * The runtime takes a reference the first time a call needs the device - in
 * the simulator: cudaSetDevice (which, since CUDA 12, also makes the
 * context current), cudaInitDevice, allocation and free, stream and event
 * creation, any work submitted to a stream, device synchronization - and
 * gives it up in cudaDeviceReset. Driver users add their own references
 * with cuDevicePrimaryCtxRetain. The context is active while any reference
 * is held; that is what cuDevicePrimaryCtxGetState reports (PyTorch asks it
 * to avoid creating contexts on devices it does not use).
 *
 * Each thread has a stack of current contexts (cuCtxPushCurrent/Pop); the top
 * is the current context. All contexts of the simulator are primary contexts,
 * so a stack entry is a device ordinal, and the runtime's current device
 * follows the top: the runtime replaces the top (or binds the first entry)
 * with the device it acts on, and the driver's cuCtxSetCurrent/Push/Pop set
 * the runtime's current device. Nothing here allocates, locks or makes a
 * syscall.
 */
#include "sim_rt.h"

#include "a2asim_driver.h"

#define CTX_STACK_MAX 32

typedef struct pctx {
  _Atomic int runtime_held;   /* the runtime's reference */
  _Atomic int driver_refs;    /* cuDevicePrimaryCtxRetain - Release */
} pctx;

static pctx ctx_tab[SIM_MAX_DEVICES];
static _Atomic int runtime_up;
static _Thread_local int tls_stack[CTX_STACK_MAX];
static _Thread_local int tls_depth;

void sim_ctx_mark_runtime_up(void) { atomic_store_explicit(&runtime_up, 1, memory_order_release); }

void sim_ctx_activate(int dev) {
  if (dev < 0 || dev >= SIM_MAX_DEVICES) return;
  if (!atomic_load_explicit(&ctx_tab[dev].runtime_held, memory_order_relaxed))
    atomic_store_explicit(&ctx_tab[dev].runtime_held, 1, memory_order_relaxed);
}

void sim_ctx_use(int dev) {
  if (dev < 0 || dev >= SIM_MAX_DEVICES) return;
  sim_ctx_activate(dev);
  if (tls_depth == 0) tls_stack[tls_depth++] = dev;
  else tls_stack[tls_depth - 1] = dev;
}

void sim_ctx_device_reset(int dev) {
  if (dev < 0 || dev >= SIM_MAX_DEVICES) return;
  /* cudaDeviceReset and cuDevicePrimaryCtxReset destroy the primary context
   * whoever holds references to it. */
  atomic_store(&ctx_tab[dev].runtime_held, 0);
  atomic_store(&ctx_tab[dev].driver_refs, 0);
}

void sim_ctx_after_fork_child(void) {
  /* A fresh runtime: no context is active; the forking thread keeps its
   * stack (its current device survives, as documented for fork). */
  for (int d = 0; d < SIM_MAX_DEVICES; d++) sim_ctx_device_reset(d);
}

/* ---- the driver's view (a2asim_driver.h) -------------------------------- */

int a2asim_runtime_initialized(void) {
  return atomic_load_explicit(&runtime_up, memory_order_acquire);
}

static int dev_ok(int dev) { return dev >= 0 && dev < a2asim_device_count(); }

int a2asim_ctx_get_state(int dev, unsigned *flags, int *active) {
  if (!dev_ok(dev)) return -1;
  if (flags) *flags = sim_dev[dev].flags;
  if (active)
    *active = atomic_load(&ctx_tab[dev].runtime_held) || atomic_load(&ctx_tab[dev].driver_refs) > 0;
  return 0;
}

int a2asim_ctx_retain(int dev) {
  if (!dev_ok(dev)) return -1;
  atomic_fetch_add(&ctx_tab[dev].driver_refs, 1);
  return 0;
}

int a2asim_ctx_release(int dev) {
  if (!dev_ok(dev)) return -1;
  int r = atomic_load(&ctx_tab[dev].driver_refs);
  while (r > 0 && !atomic_compare_exchange_weak(&ctx_tab[dev].driver_refs, &r, r - 1)) {}
  return r > 0 ? 0 : 1;   /* 1: the driver held no reference */
}

int a2asim_ctx_reset(int dev) {
  if (!dev_ok(dev)) return -1;
  sim_device_reset(dev);
  return 0;
}

int a2asim_ctx_set_flags(int dev, unsigned flags) {
  if (!dev_ok(dev)) return -1;
  sim_dev[dev].flags = flags;
  return 0;
}

int a2asim_ctx_current(void) { return tls_depth ? tls_stack[tls_depth - 1] : -1; }

void a2asim_ctx_set_current(int dev) {
  if (dev < 0) {
    /* cuCtxSetCurrent(NULL): pops the top, a no-op on an empty stack. */
    if (tls_depth) tls_depth--;
    if (tls_depth) sim_set_cur_device(tls_stack[tls_depth - 1]);
    return;
  }
  if (tls_depth == 0) tls_stack[tls_depth++] = dev;
  else tls_stack[tls_depth - 1] = dev;
  sim_set_cur_device(dev);
}

int a2asim_ctx_push(int dev) {
  if (tls_depth == CTX_STACK_MAX) return -1;
  tls_stack[tls_depth++] = dev;
  sim_set_cur_device(dev);
  return 0;
}

int a2asim_ctx_pop(void) {
  if (tls_depth == 0) return -1;
  int dev = tls_stack[--tls_depth];
  if (tls_depth) sim_set_cur_device(tls_stack[tls_depth - 1]);
  return dev;
}
