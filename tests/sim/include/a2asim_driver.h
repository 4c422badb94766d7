/* a2asim_driver.h - the internal API through which the simulated CUDA driver
 * (libcuda.so.1, tests/sim/driver) reads the state of the simulated runtime
 * (libcudart.so.13, tests/sim/cudart). In the simulator the runtime owns the
 * model (devices, primary contexts, the allocation table); the driver is a
 * view of it, so a pointer allocated with cudaMalloc is known to
 * cuPointerGetAttribute and a context made current by cudaSetDevice is what
 * cuCtxGetCurrent returns. Not CUDA API; the shim never intercepts it; none
 * of these functions touches the application's cudaGetLastError().
 *
 * Devices are ordinals 0..a2asim_device_count()-1 (a2asim_internal.h);
 * functions taking a device return -1 for an invalid one.
 */
#ifndef A2ASIM_DRIVER_H
#define A2ASIM_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#include "a2asim_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 once the runtime has initialized (its first call); the real runtime
 * initializes the driver then, so driver calls need no cuInit after it. */
int a2asim_runtime_initialized(void);
/* The CUDA version the simulator implements (runtime and driver). */
int a2asim_cuda_version(void);

/* ---- devices (core.c) ---- */
/* attr is a cudaDeviceAttr code (equal to the CUdevice_attribute code of the
 * same name). Returns 0, 1 for an attribute the runtime does not know, -1 for
 * a bad device. */
int a2asim_device_attribute(int attr, int dev, int *value);
int a2asim_device_name(int dev, char *name, size_t len);
int a2asim_device_uuid(int dev, unsigned char uuid[16]);
int a2asim_device_total_mem(int dev, size_t *bytes);

/* ---- primary contexts and the thread's context stack (context.c) ---- */
/* flags: the device flags (cudaSetDeviceFlags / cuDevicePrimaryCtxSetFlags
 * share their values); active: a reference is held by the runtime or by
 * a2asim_ctx_retain. */
int a2asim_ctx_get_state(int dev, unsigned *flags, int *active);
int a2asim_ctx_retain(int dev);
/* Returns 0, 1 if no driver reference was held, -1 for a bad device. */
int a2asim_ctx_release(int dev);
/* Destroys the primary context (cuDevicePrimaryCtxReset = cudaDeviceReset
 * of that device). */
int a2asim_ctx_reset(int dev);
int a2asim_ctx_set_flags(int dev, unsigned flags);
/* The device of the calling thread's current context, or -1 if none. */
int a2asim_ctx_current(void);
/* Replaces the top of the thread's stack (pushes on an empty stack); dev -1
 * pops the top (cuCtxSetCurrent(NULL)). Also sets the runtime's current
 * device, as the real runtime follows the driver's current context. */
void a2asim_ctx_set_current(int dev);
/* Returns 0, or -1 if the stack is full. */
int a2asim_ctx_push(int dev);
/* Returns the popped device, or -1 if the stack was empty. */
int a2asim_ctx_pop(void);

/* ---- the allocation table (memory.c) ---- */
typedef struct a2asim_ptr_info {
  int type;                 /* 1 pinned host, 2 device, 3 managed */
  int device;               /* owning device (the current one at allocation) */
  uintptr_t base;           /* the allocation containing the pointer */
  size_t size;
  unsigned long long id;    /* unique per allocation in the process */
  unsigned flags;           /* cudaHostAlloc / cudaHostRegister / cudaMallocManaged flags */
} a2asim_ptr_info;
/* Returns 0 and fills *out if p lies inside a live allocation, else -1. */
int a2asim_pointer_info(const void *p, a2asim_ptr_info *out);

#ifdef __cplusplus
}
#endif
#endif /* A2ASIM_DRIVER_H */
