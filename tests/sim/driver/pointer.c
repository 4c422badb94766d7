/* pointer.c - pointer attributes and address ranges of the simulator's CUDA
 * driver, answered from the simulated runtime's allocation table, so that
 * memory from cudaMalloc, cudaMallocManaged, cudaMallocHost/cudaHostAlloc
 * and cudaHostRegister is described consistently by both APIs.
 *
 * The model (unified addressing, as on every 64-bit CUDA platform): device,
 * host and managed pointers share one address space and a pointer is its
 * own device and host address. Managed memory reads as
 * CU_MEMORYTYPE_DEVICE with CU_POINTER_ATTRIBUTE_IS_MANAGED set. Nothing is
 * IPC-, RDMA- or handle-exportable, nothing comes from a memory pool, and
 * every allocation is read-write for every device. The value types are
 * those of NVIDIA's own bindings (cuda.bindings): booleans are C bool.
 */
#include "sim_drv.h"

#include <stdbool.h>
#include <string.h>

/* Row: PA(attribute, C type written to *data). Attributes not listed
 * (P2P tokens) are not modelled. */
#define POINTER_ATTRS(PA)                                     \
  PA(CU_POINTER_ATTRIBUTE_CONTEXT, CUcontext)                 \
  PA(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, unsigned int)          \
  PA(CU_POINTER_ATTRIBUTE_DEVICE_POINTER, CUdeviceptr)        \
  PA(CU_POINTER_ATTRIBUTE_HOST_POINTER, void *)               \
  PA(CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, bool)                  \
  PA(CU_POINTER_ATTRIBUTE_BUFFER_ID, unsigned long long)      \
  PA(CU_POINTER_ATTRIBUTE_IS_MANAGED, bool)                   \
  PA(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, int)                \
  PA(CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, bool)   \
  PA(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CUdeviceptr)      \
  PA(CU_POINTER_ATTRIBUTE_RANGE_SIZE, size_t)                 \
  PA(CU_POINTER_ATTRIBUTE_MAPPED, bool)                       \
  PA(CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, unsigned long long) \
  PA(CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE, unsigned int) \
  PA(CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, unsigned int)         \
  PA(CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, CUmemoryPool)       \
  PA(CU_POINTER_ATTRIBUTE_MAPPING_SIZE, size_t)               \
  PA(CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, CUdeviceptr)     \
  PA(CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID, unsigned long long) \
  PA(CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE, bool)

/* Bytes written for attribute a, 0 if it is not modelled. */
static size_t attr_size(CUpointer_attribute a) {
  switch (a) {
#define PA(attr, type) case attr: return sizeof(type);
    POINTER_ATTRS(PA)
#undef PA
  default: return 0;
  }
}

#define PUT(type, v) (*(type *)data = (v), CUDA_SUCCESS)

/* The value of attribute a for pointer p inside allocation *i. */
static CUresult attr_value(CUpointer_attribute a, const a2asim_ptr_info *i, CUdeviceptr p, void *data) {
  enum { PINNED = 1, DEVICE = 2, MANAGED = 3 };
  switch (a) {
  case CU_POINTER_ATTRIBUTE_CONTEXT: return PUT(CUcontext, drv_primary(i->device));
  case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    return PUT(unsigned int, i->type == PINNED ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE);
  case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: return PUT(CUdeviceptr, p);
  case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    /* Device memory has no host address. */
    if (i->type == DEVICE) return CUDA_ERROR_INVALID_VALUE;
    return PUT(void *, (void *)(uintptr_t)p);
  case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: return PUT(bool, false);
  case CU_POINTER_ATTRIBUTE_BUFFER_ID: return PUT(unsigned long long, i->id);
  case CU_POINTER_ATTRIBUTE_IS_MANAGED: return PUT(bool, i->type == MANAGED);
  case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: return PUT(int, i->device);
  case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE: return PUT(bool, false);
  case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: return PUT(CUdeviceptr, (CUdeviceptr)i->base);
  case CU_POINTER_ATTRIBUTE_RANGE_SIZE: return PUT(size_t, i->size);
  case CU_POINTER_ATTRIBUTE_MAPPED: return PUT(bool, true);
  case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES: return PUT(unsigned long long, 0);
  case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE: return PUT(unsigned int, 0);
  case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
    return PUT(unsigned int, CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE);
  case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: return PUT(CUmemoryPool, NULL);
  case CU_POINTER_ATTRIBUTE_MAPPING_SIZE: return PUT(size_t, i->size);
  case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR: return PUT(CUdeviceptr, (CUdeviceptr)i->base);
  case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID: return PUT(unsigned long long, i->id);
  case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE: return PUT(bool, false);
  case CU_POINTER_ATTRIBUTE_P2P_TOKENS: return CUDA_ERROR_NOT_SUPPORTED;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
}

/* A pointer no CUDA allocation contains: CUDA_ERROR_INVALID_VALUE. */
DRV_EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  CUresult r = drv_check_init();
  if (r) return r;
  if (!data) return CUDA_ERROR_INVALID_VALUE;
  a2asim_ptr_info info;
  if (a2asim_pointer_info((const void *)(uintptr_t)ptr, &info) != 0) return CUDA_ERROR_INVALID_VALUE;
  return attr_value(attribute, &info, ptr, data);
}

/* Unlike cuPointerGetAttribute, an unknown pointer is a success with every
 * attribute at its default: zero / NULL, and device ordinal -2 (the value
 * cudaPointerGetAttributes reports as cudaInvalidDeviceId). A device
 * pointer's host pointer reads NULL. */
DRV_EXPORT CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes,
                                           void **data, CUdeviceptr ptr) {
  CUresult r = drv_check_init();
  if (r) return r;
  if (numAttributes && (!attributes || !data)) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned k = 0; k < numAttributes; k++)
    if (!data[k] || !attr_size(attributes[k])) return CUDA_ERROR_INVALID_VALUE;
  a2asim_ptr_info info;
  bool known = a2asim_pointer_info((const void *)(uintptr_t)ptr, &info) == 0;
  for (unsigned k = 0; k < numAttributes; k++) {
    memset(data[k], 0, attr_size(attributes[k]));
    if (!known) {
      if (attributes[k] == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) *(int *)data[k] = -2;
      continue;
    }
    /* The only failure left is "no host address", which reads NULL here. */
    (void)attr_value(attributes[k], &info, ptr, data[k]);
  }
  return CUDA_SUCCESS;
}

/* The allocation containing dptr (base and size are both optional);
 * CUDA_ERROR_NOT_FOUND for memory no CUDA allocation contains. */
DRV_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr) {
  CUresult r = drv_check_init();
  if (r) return r;
  a2asim_ptr_info info;
  if (a2asim_pointer_info((const void *)(uintptr_t)dptr, &info) != 0) return CUDA_ERROR_NOT_FOUND;
  if (pbase) *pbase = (CUdeviceptr)info.base;
  if (psize) *psize = info.size;
  return CUDA_SUCCESS;
}
