/* core.c - initialization, versions, error strings and device queries of
 * the simulator's CUDA driver (libcuda.so.1).
 *
 * Initialization: as in CUDA, every call but cuInit, cuDriverGetVersion,
 * cuGetErrorName/String and cuGetProcAddress answers
 * CUDA_ERROR_NOT_INITIALIZED until cuInit(0) succeeded - or until the
 * simulated runtime initialized, since the real runtime initializes the
 * driver at its first call (PyTorch's driver calls rely on that).
 *
 * Devices are the simulated runtime's (A2ASIM_DEVICES of them); a CUdevice
 * is the device ordinal, as in the real driver.
 */
#include "sim_drv.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static atomic_int drv_inited;

CUresult drv_check_init(void) {
  return atomic_load_explicit(&drv_inited, memory_order_acquire) || a2asim_runtime_initialized()
             ? CUDA_SUCCESS
             : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult drv_check_device(CUdevice dev) {
  return dev >= 0 && dev < a2asim_device_count() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

/* Marks this library as the simulator's driver (the simulated runtime only
 * hands out entry points of a libcuda.so.1 that defines it). */
DRV_EXPORT const char a2asim_driver_marker[] = "a2asim CUDA driver";

DRV_EXPORT CUresult cuInit(unsigned int Flags) {
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  atomic_store_explicit(&drv_inited, 1, memory_order_release);
  return CUDA_SUCCESS;
}

DRV_EXPORT CUresult cuDriverGetVersion(int *driverVersion) {
  if (!driverVersion) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = a2asim_cuda_version();
  return CUDA_SUCCESS;
}

/* ---- errors ------------------------------------------------------------- */

static const struct { int code; const char *name, *str; } err_table[] = {
#define SIM_CU_ERR(c, n, s) {c, n, s},
#include "errors.inc"
#undef SIM_CU_ERR
};

static int err_index(CUresult e) {
  for (size_t i = 0; i < sizeof err_table / sizeof err_table[0]; i++)
    if (err_table[i].code == (int)e) return (int)i;
  return -1;
}

/* Unknown codes: CUDA_ERROR_INVALID_VALUE and *pStr = NULL (cuda.h). */
DRV_EXPORT CUresult cuGetErrorName(CUresult error, const char **pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  int i = err_index(error);
  *pStr = i < 0 ? NULL : err_table[i].name;
  return i < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

DRV_EXPORT CUresult cuGetErrorString(CUresult error, const char **pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  int i = err_index(error);
  *pStr = i < 0 ? NULL : err_table[i].str;
  return i < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

/* ---- devices ------------------------------------------------------------ */

DRV_EXPORT CUresult cuDeviceGetCount(int *count) {
  CUresult r = drv_check_init();
  if (r) return r;
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = a2asim_device_count();
  return CUDA_SUCCESS;
}

DRV_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  CUresult r = drv_check_init();
  if (r) return r;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (drv_check_device(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

DRV_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
  CUresult r = drv_check_init();
  if (r) return r;
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if ((r = drv_check_device(dev))) return r;
  a2asim_device_name(dev, name, (size_t)len);
  return CUDA_SUCCESS;
}

static CUresult device_uuid(CUuuid *uuid, CUdevice dev) {
  CUresult r = drv_check_init();
  if (r) return r;
  if (!uuid) return CUDA_ERROR_INVALID_VALUE;
  if ((r = drv_check_device(dev))) return r;
  a2asim_device_uuid(dev, (unsigned char *)uuid->bytes);
  return CUDA_SUCCESS;
}

/* The two ABIs differ only for MIG instances, which the simulator has not. */
DRV_EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) { return device_uuid(uuid, dev); }
DRV_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev) { return device_uuid(uuid, dev); }

DRV_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
  CUresult r = drv_check_init();
  if (r) return r;
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  if ((r = drv_check_device(dev))) return r;
  a2asim_device_total_mem(dev, bytes);
  return CUDA_SUCCESS;
}

/* The CUDA 2.0 ABI with a 32-bit size: the total saturates. */
DRV_EXPORT CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev) {
  size_t b;
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = cuDeviceTotalMem_v2(&b, dev);
  if (!r) *bytes = b > 0xffffffffu ? 0xffffffffu : (unsigned int)b;
  return r;
}

/* Driver attributes with no runtime counterpart describe features the
 * simulator does not have (virtual memory management, OS handles, RDMA,
 * compression...): they read 0. The rest share the runtime's codes. */
DRV_EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
  CUresult r = drv_check_init();
  if (r) return r;
  if (!pi) return CUDA_ERROR_INVALID_VALUE;
  if ((r = drv_check_device(dev))) return r;
  if ((int)attrib <= 0 || (int)attrib >= (int)CU_DEVICE_ATTRIBUTE_MAX) return CUDA_ERROR_INVALID_VALUE;
  int v = 0;
  if (a2asim_device_attribute((int)attrib, dev, &v) != 0) v = 0;
  *pi = v;
  return CUDA_SUCCESS;
}

/* Same bus ids as the runtime's cudaDeviceGetPCIBusId. */
DRV_EXPORT CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev) {
  CUresult r = drv_check_init();
  if (r) return r;
  if (!pciBusId || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if ((r = drv_check_device(dev))) return r;
  int dom = 0, bus = 0, d = 0;
  a2asim_device_attribute(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev, &dom);
  a2asim_device_attribute(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev, &bus);
  a2asim_device_attribute(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev, &d);
  snprintf(pciBusId, (size_t)len, "%08X:%02X:%02X.0", dom, bus, d);
  return CUDA_SUCCESS;
}

DRV_EXPORT CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId) {
  CUresult r = drv_check_init();
  if (r) return r;
  if (!dev || !pciBusId) return CUDA_ERROR_INVALID_VALUE;
  unsigned dom, bus, d, fn;
  if (sscanf(pciBusId, "%x:%x:%x.%x", &dom, &bus, &d, &fn) != 4) return CUDA_ERROR_INVALID_VALUE;
  for (int i = 0; i < a2asim_device_count(); i++) {
    int vdom = 0, vbus = 0, vd = 0;
    a2asim_device_attribute(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, i, &vdom);
    a2asim_device_attribute(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, i, &vbus);
    a2asim_device_attribute(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, i, &vd);
    if ((unsigned)vdom == dom && (unsigned)vbus == bus && (unsigned)vd == d && fn == 0) {
      *dev = i;
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_DEVICE;
}
