/* sim_drv.h - private declarations of the simulator's CUDA driver
 * (libcuda.so.1), grouped by the .c file that defines them.
 *
 * The driver is a thin view of the simulated runtime's model (devices,
 * primary contexts, the allocation table) read through a2asim_driver.h, so
 * both APIs agree; it never calls a cuda* function (the preloaded shim would
 * see calls the application did not make). Every function is defined with
 * the exact prototype of cuda.h, which is included with the internal API
 * versions declared so that the old ABIs (cuDeviceTotalMem, ...) and the
 * per-thread variants are checked too; functions newer than the build's
 * headers use the types of compat.h.
 */
#ifndef A2ASIM_SIM_DRV_H
#define A2ASIM_SIM_DRV_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#if __has_include(<cudaProfiler.h>)
#include <cudaProfiler.h>
#endif
/* The graphics-interop headers; where OpenGL/EGL/VDPAU headers are not
 * installed, tests/sim/include/interop-fallback supplies the few types they
 * use (-idirafter). */
#include <cudaGL.h>
#include <cudaEGL.h>
#include <vdpau/vdpau.h>   /* cudaVDPAU.h expects it included */
#include <cudaVDPAU.h>

#include "compat.h"

#include "a2asim_driver.h"

#define DRV_EXPORT __attribute__((visibility("default")))
/* The runtime's limit on A2ASIM_DEVICES. */
#define DRV_MAX_DEVICES 64

/* ---- core.c: initialization, versions, errors, devices ------------------ */

/* CUDA_ERROR_NOT_INITIALIZED until cuInit or the runtime's first call. */
CUresult drv_check_init(void);
/* CUDA_ERROR_INVALID_DEVICE unless dev is a device ordinal. */
CUresult drv_check_device(CUdevice dev);

/* ---- context.c: contexts -------------------------------------------------- */

/* The primary context handle of dev (dev valid). */
CUcontext drv_primary(int dev);
/* The device of a context handle, or -1 if ctx is not one. */
int drv_ctx_device(CUcontext ctx);

#endif /* A2ASIM_SIM_DRV_H */
