/* compat.h - the driver types of CUDA 13.1 and 13.2 that the simulated
 * driver's stubs for functions of those releases need when it is built with
 * older (13.0) headers: the simulator's own declarations with the ABI of the
 * real ones (structs of the same tags, only ever passed by pointer, so an
 * incomplete declaration suffices; a handle is a pointer; a callback type is
 * a function pointer with the parameters of cuda.h). With newer headers the
 * real types are used and ctest sim.api.prototypes checks the definitions
 * against them. */
#ifndef A2ASIM_DRV_COMPAT_H
#define A2ASIM_DRV_COMPAT_H

#include <cuda.h>

#if CUDA_VERSION < 13010
typedef struct CU_DEV_SM_RESOURCE_GROUP_PARAMS_st CU_DEV_SM_RESOURCE_GROUP_PARAMS;
#endif
#if CUDA_VERSION < 13020
typedef struct CUstreamCigCaptureParams_st CUstreamCigCaptureParams;
typedef struct CUcoredumpCallbackEntry_st *CUcoredumpCallbackHandle;
typedef void (*CUcoredumpStatusCallback)(void *userData, int pid, CUdevice dev);
#endif

#endif /* A2ASIM_DRV_COMPAT_H */
