/* procaddr.c - cuGetProcAddress, how the runtime (cudaGetDriverEntryPoint),
 * NCCL, PyTorch and Triton find driver functions.
 *
 * procaddr.inc (generated from the reference cudaTypedefs.h) has one row per
 * ABI of every driver function: base name, the CUDA version that introduced
 * the ABI, whether it is a per-thread-default-stream variant, and the symbol
 * (cuMemAlloc 2000 -> cuMemAlloc, 3020 -> cuMemAlloc_v2). Semantics of
 * cuda.h: the newest ABI not newer than the requested version is returned;
 * with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM the per-thread variant
 * is preferred when one exists; a name that is not a driver function, or
 * none of whose ABIs is old enough, is a success with *pfn = NULL and the
 * reason in symbolStatus; a version newer than the driver's is
 * CUDA_ERROR_INVALID_VALUE. cuGetProcAddress needs no cuInit. Every row
 * resolves to a function this library exports - the modelled ones or their
 * CUDA_ERROR_NOT_SUPPORTED stubs - so "the driver has it" and "it works"
 * are told apart by calling it, as on a real driver without the feature.
 *
 * The compiler checks each row against the header's PFN_ typedef of that
 * ABI (for ABIs the build's headers know).
 */
#include "sim_drv.h"

#include <string.h>

#include <cudaTypedefs.h>
#if __has_include(<cudaProfilerTypedefs.h>)
#include <cudaProfilerTypedefs.h>
#endif
#include <cudaGLTypedefs.h>
#include <cudaEGLTypedefs.h>
#include <cudaVDPAUTypedefs.h>

/* Declarations of every stub (also those newer than the build's cuda.h). */
#define SIM_CU_UNMODELLED(since, name, params) CUresult name params;
#include "unmodelled.inc"
#undef SIM_CU_UNMODELLED

typedef struct proc_row {
  const char *base;
  int version;
  int ptds;
  void *fn;
} proc_row;

#define SIM_CU_PROC(since, base, version, suffix, symbol) \
  {#base, version, sizeof(#suffix) > 1, (void *)&symbol},
static const proc_row proc_table[] = {
#include "procaddr.inc"
};
#undef SIM_CU_PROC

/* Each row's symbol has the type of the header's PFN_ typedef of its ABI
 * (rows newer than the build's headers are skipped: procaddr.inc guards
 * them with #if CUDA_VERSION when SIM_PFN_CHECK is defined). */
#define SIM_CU_PROC(since, base, version, suffix, symbol)                               \
  _Static_assert(__builtin_types_compatible_p(PFN_##base##_v##version##suffix,          \
                                              __typeof__(&symbol)),                     \
                 #symbol " does not match PFN_" #base "_v" #version #suffix);
#define SIM_PFN_CHECK 1
#include "procaddr.inc"
#undef SIM_PFN_CHECK
#undef SIM_CU_PROC

static CUresult get_proc(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                         CUdriverProcAddressQueryResult *status) {
  if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  *pfn = NULL;
  if (flags != CU_GET_PROC_ADDRESS_DEFAULT && flags != CU_GET_PROC_ADDRESS_LEGACY_STREAM &&
      flags != CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
    return CUDA_ERROR_INVALID_VALUE;
  if (cudaVersion > a2asim_cuda_version()) return CUDA_ERROR_INVALID_VALUE;
  const proc_row *legacy = NULL, *ptds = NULL;
  int known = 0;
  for (size_t i = 0; i < sizeof proc_table / sizeof proc_table[0]; i++) {
    const proc_row *r = &proc_table[i];
    if (strcmp(r->base, symbol) != 0) continue;
    known = 1;
    if (r->version > cudaVersion) continue;
    const proc_row **best = r->ptds ? &ptds : &legacy;
    if (!*best || (*best)->version < r->version) *best = r;
  }
  /* CU_GET_PROC_ADDRESS_DEFAULT is the legacy search here: code built with
   * per-thread default streams calls cuda.h's inline _ptsz wrapper, which
   * asks for the per-thread search itself. */
  const proc_row *r = (flags == CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM && ptds) ? ptds : legacy;
  if (r) {
    *pfn = r->fn;
    if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  } else if (known && status) {
    *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
  }
  return CUDA_SUCCESS;
}

DRV_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                        CUdriverProcAddressQueryResult *symbolStatus) {
  return get_proc(symbol, pfn, cudaVersion, flags, symbolStatus);
}

/* The CUDA 11.3 ABI, without the status. */
DRV_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags) {
  return get_proc(symbol, pfn, cudaVersion, flags, NULL);
}
