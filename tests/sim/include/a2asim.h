/* a2asim.h - the test-only public API of the CPU simulator's CUDA runtime
 * (build/sim/lib/libcudart.so.13). Test programs include it next to
 * cuda_runtime_api.h to give "kernels" a host implementation and to make races
 * reproducible. It is not CUDA API: the shim never intercepts it, and a
 * program that uses it only runs on the simulator.
 *
 * Kernels. The simulator cannot run device code. A program declares a host
 * stand-in for each kernel symbol it launches and registers it once:
 *
 *     static void scale_impl(void **args, const a2asim_launch_info *li) {
 *         float *x = *(float **)args[0]; int n = *(int *)args[1];
 *         for (int i = 0; i < n; i++) x[i] *= 2.0f;
 *     }
 *     static const size_t scale_params[] = { sizeof(float *), sizeof(int) };
 *     a2asim_register_kernel((const void *)scale, scale_impl, "scale", 2, scale_params);
 *     ...
 *     void *args[] = { &x, &n };
 *     cudaLaunchKernel((const void *)scale, grid, block, args, 0, stream);
 *
 * The runtime copies the argument bytes at launch time (as CUDA does), so
 * args[i] inside impl points at a private copy of parameter i. impl runs once
 * per launch (not once per thread) on the stream's worker thread, in stream
 * order. A launch of a function pointer that was never registered is accepted
 * and executes as a no-op that still occupies its place in the stream.
 */
#ifndef A2ASIM_H
#define A2ASIM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a kernel stand-in learns about its launch. */
typedef struct a2asim_launch_info {
  const void *func;          /* the launched host-side symbol */
  const char *name;          /* the registered name */
  unsigned grid[3];          /* gridDim.x/y/z */
  unsigned block[3];         /* blockDim.x/y/z */
  size_t shared_mem;         /* dynamic shared memory bytes */
  void *stream;              /* the cudaStream_t as passed to the launch */
  int device;                /* device of the stream */
  int cooperative;           /* 1 for cudaLaunchCooperativeKernel */
} a2asim_launch_info;

typedef void (*a2asim_kernel_impl)(void **args, const a2asim_launch_info *info);

/* Registers impl as the host implementation of kernel symbol func.
 * nparams/param_sizes describe the kernel's parameters in order (used to
 * copy the arguments at launch and to answer cudaFuncGetParamInfo; parameter
 * i is placed at the next offset aligned to min(8, largest power of two
 * dividing its size)). name is copied. Registering func again replaces the
 * previous registration. Returns 0, or -1 (errno EINVAL) on bad arguments
 * (func or impl NULL, nparams < 0 or > 64, param_sizes NULL with nparams >
 * 0, a zero size). Thread-safe. */
int a2asim_register_kernel(const void *func, a2asim_kernel_impl impl,
                           const char *name, int nparams,
                           const size_t *param_sizes);

/* Marks the device of the calling stream worker (or, called from a host
 * thread, the thread's current device) with a sticky error, as a faulting
 * kernel does on a GPU: from now on every runtime call touching that device
 * returns err, cudaGetLastError returns it without clearing it, and
 * user work (kernels, copies, memsets, host functions) queued on that device
 * is completed without being executed. cudaDeviceReset clears it. err should
 * be one of CUDA's sticky codes (cudaErrorIllegalAddress,
 * cudaErrorLaunchFailure, cudaErrorAssert, ...). */
void a2asim_raise_sticky(int err);

/* Delays every work item of stream (a cudaStream_t; NULL = legacy default
 * stream of the current device) by us microseconds before it executes.
 * Makes cross-stream races reproducible: delay the producer stream and a
 * consumer that forgot the event dependency reads stale data. Returns a
 * cudaError_t (cudaErrorInvalidResourceHandle for a bad stream). */
int a2asim_stream_set_delay(void *stream, unsigned us);

#ifdef __cplusplus
}
#endif
#endif /* A2ASIM_H */
