/* context.c - primary contexts and the current context of the simulator's
 * CUDA driver.
 *
 * The simulator has only primary contexts (cuCtxCreate and green contexts
 * are not modelled), one per device, with a fixed handle. Their state lives
 * in the simulated runtime (tests/sim/cudart/context.c): the runtime's own
 * reference (taken at its first call needing the device, dropped by
 * cudaDeviceReset) and the references of cuDevicePrimaryCtxRetain; the
 * context is active while either is held. The calling thread's context
 * stack is shared with the runtime too, so cudaSetDevice(1) makes device
 * 1's primary context current for cuCtxGetCurrent and cuCtxSetCurrent
 * changes the runtime's current device, as with the real libraries.
 *
 * Simplifications: a context handle stays valid after its context is
 * destroyed (cuDevicePrimaryCtxReset, cudaDeviceReset); cuCtxGetDevice,
 * cuCtxSetCurrent and Push/Pop accept it (CUDA would report
 * CUDA_ERROR_CONTEXT_IS_DESTROYED until the context is retained again).
 */
#include "sim_drv.h"

/* Only the handles' addresses matter: the device is the index. */
struct CUctx_st {
  char unused;
};

static struct CUctx_st primary[DRV_MAX_DEVICES];

CUcontext drv_primary(int dev) { return &primary[dev]; }

int drv_ctx_device(CUcontext ctx) {
  uintptr_t p = (uintptr_t)ctx, b = (uintptr_t)primary;
  if (p < b || p >= b + sizeof primary || (p - b) % sizeof primary[0]) return -1;
  int dev = (int)((p - b) / sizeof primary[0]);
  return drv_check_device(dev) ? -1 : dev;
}

/* ---- primary contexts ------------------------------------------------- */

DRV_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active) {
  CUresult r = drv_check_init();
  if (r) return r;
  if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
  if ((r = drv_check_device(dev))) return r;
  a2asim_ctx_get_state(dev, flags, active);
  return CUDA_SUCCESS;
}

DRV_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  CUresult r = drv_check_init();
  if (r) return r;
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if ((r = drv_check_device(dev))) return r;
  a2asim_ctx_retain(dev);
  *pctx = drv_primary(dev);
  return CUDA_SUCCESS;
}

/* Releasing a reference this driver never handed out is an error (the
 * runtime's own reference is not the caller's to drop). */
static CUresult primary_release(CUdevice dev) {
  CUresult r = drv_check_init();
  if (r) return r;
  if ((r = drv_check_device(dev))) return r;
  return a2asim_ctx_release(dev) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

DRV_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { return primary_release(dev); }
DRV_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) { return primary_release(dev); }

/* Flags are the scheduling, map-host and local-memory-resize bits shared
 * with cudaSetDeviceFlags. Since CUDA 11 they may be set while the context
 * is active (the CUDA 7 ABI refused that; the simulator accepts both). */
static CUresult primary_set_flags(CUdevice dev, unsigned int flags) {
  CUresult r = drv_check_init();
  if (r) return r;
  if ((r = drv_check_device(dev))) return r;
  if (flags & ~(unsigned)CU_CTX_FLAGS_MASK) return CUDA_ERROR_INVALID_VALUE;
  unsigned sched = flags & CU_CTX_SCHED_MASK;
  if (sched != 0 && sched != CU_CTX_SCHED_SPIN && sched != CU_CTX_SCHED_YIELD &&
      sched != CU_CTX_SCHED_BLOCKING_SYNC)
    return CUDA_ERROR_INVALID_VALUE;
  a2asim_ctx_set_flags(dev, flags);
  return CUDA_SUCCESS;
}

DRV_EXPORT CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  return primary_set_flags(dev, flags);
}
DRV_EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
  return primary_set_flags(dev, flags);
}

/* Destroys the context: waits for the device's work, clears its sticky
 * error, drops every reference (what cudaDeviceReset does). */
static CUresult primary_reset(CUdevice dev) {
  CUresult r = drv_check_init();
  if (r) return r;
  if ((r = drv_check_device(dev))) return r;
  a2asim_ctx_reset(dev);
  return CUDA_SUCCESS;
}

DRV_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev) { return primary_reset(dev); }
DRV_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) { return primary_reset(dev); }

/* ---- the current context ---------------------------------------------- */

DRV_EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx) {
  CUresult r = drv_check_init();
  if (r) return r;
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  int dev = a2asim_ctx_current();
  *pctx = dev < 0 ? NULL : drv_primary(dev);
  return CUDA_SUCCESS;
}

/* Replaces the top of the thread's stack; NULL pops it (a no-op on an
 * empty stack). */
DRV_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  CUresult r = drv_check_init();
  if (r) return r;
  int dev = -1;
  if (ctx && (dev = drv_ctx_device(ctx)) < 0) return CUDA_ERROR_INVALID_CONTEXT;
  a2asim_ctx_set_current(dev);
  return CUDA_SUCCESS;
}

static CUresult ctx_push(CUcontext ctx) {
  CUresult r = drv_check_init();
  if (r) return r;
  int dev = ctx ? drv_ctx_device(ctx) : -1;
  if (dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
  return a2asim_ctx_push(dev) == 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

DRV_EXPORT CUresult cuCtxPushCurrent(CUcontext ctx) { return ctx_push(ctx); }
DRV_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) { return ctx_push(ctx); }

static CUresult ctx_pop(CUcontext *pctx) {
  CUresult r = drv_check_init();
  if (r) return r;
  int dev = a2asim_ctx_pop();
  if (dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx) *pctx = drv_primary(dev);
  return CUDA_SUCCESS;
}

DRV_EXPORT CUresult cuCtxPopCurrent(CUcontext *pctx) { return ctx_pop(pctx); }
DRV_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx) { return ctx_pop(pctx); }

DRV_EXPORT CUresult cuCtxGetDevice(CUdevice *device) {
  CUresult r = drv_check_init();
  if (r) return r;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  int dev = a2asim_ctx_current();
  if (dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
  *device = dev;
  return CUDA_SUCCESS;
}

/* CUDA 13.0: the device of ctx, or of the current context for NULL. */
DRV_EXPORT CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx) {
  if (!ctx) return cuCtxGetDevice(device);
  CUresult r = drv_check_init();
  if (r) return r;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  int dev = drv_ctx_device(ctx);
  if (dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
  *device = dev;
  return CUDA_SUCCESS;
}
