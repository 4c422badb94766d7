/* compat_13_1.h - the types of the CUDA 13.1 runtime API (green contexts and
 * device resources) that the simulator's stubs for 13.1 functions need when
 * the simulator is built with older (13.0) headers. They are the simulator's
 * own declarations with the ABI of the 13.1 ones: opaque handles are
 * pointers to incomplete structs of the same tags, structs are only ever
 * passed by pointer (so an incomplete declaration suffices), and the one
 * enumeration passed by value is int-sized. With 13.1+ headers the real
 * types are used and ctest sim.api.prototypes checks the stubs against
 * them. */
#ifndef A2ASIM_COMPAT_13_1_H
#define A2ASIM_COMPAT_13_1_H

#include <cuda_runtime_api.h>

#if CUDART_VERSION < 13010
typedef struct CUdevResourceDesc_st *cudaDevResourceDesc_t;
typedef struct cudaExecutionContext_st *cudaExecutionContext_t;
typedef struct cudaDevResource_st cudaDevResource;
typedef struct cudaDevSmResourceGroupParams_st cudaDevSmResourceGroupParams;
enum cudaDevResourceType { a2asim_cudaDevResourceTypeInvalid = 0 };
#endif

#endif /* A2ASIM_COMPAT_13_1_H */
