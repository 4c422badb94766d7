/* driver_api.c - self-tests of the simulated CUDA driver (libcuda.so.1):
 * cuda.h's semantics for initialization, versions, error strings, device
 * queries, primary and current contexts, pointer attributes and
 * cuGetProcAddress, and its agreement with the simulated runtime (the same
 * devices, contexts made current by cudaSetDevice, attributes of cudaMalloc
 * memory). Linked with both simulated libraries; every test runs in its own
 * process (Check's fork mode), so "before initialization" is real. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <string.h>

#include <cuda.h>

#include "cudart_test.h"
#include "a2asim_reference.h"

#define CK_CU(call)                                                                \
  do {                                                                             \
    CUresult r_ = (call);                                                          \
    const char *n_ = NULL;                                                         \
    cuGetErrorName(r_, &n_);                                                       \
    ck_assert_msg(r_ == CUDA_SUCCESS, "%s -> %d (%s)", #call, (int)r_, n_ ? n_ : "?"); \
  } while (0)

START_TEST(init_versions_errors) {
  int n = -1;
  /* Before cuInit (and before any runtime call): not initialized. */
  ck_assert_int_eq(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
  int v = 0;
  CK_CU(cuDriverGetVersion(&v));   /* needs no initialization */
  ck_assert_int_eq(v, A2ASIM_REFERENCE_CUDA_VERSION);
  ck_assert_int_eq(cuInit(1), CUDA_ERROR_INVALID_VALUE);
  CK_CU(cuInit(0));
  CK_CU(cuDeviceGetCount(&n));
  ck_assert_int_eq(n, 8);
  const char *s = NULL;
  CK_CU(cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &s));
  ck_assert_str_eq(s, "CUDA_ERROR_INVALID_VALUE");
  CK_CU(cuGetErrorString(CUDA_ERROR_NOT_SUPPORTED, &s));
  ck_assert_str_eq(s, cudaGetErrorString(cudaErrorNotSupported));
  CK_CU(cuGetErrorString(CUDA_ERROR_INVALID_CONTEXT, &s));
  ck_assert_str_eq(s, "invalid device context");
  s = "x";
  ck_assert_int_eq(cuGetErrorString((CUresult)12345, &s), CUDA_ERROR_INVALID_VALUE);
  ck_assert_ptr_null(s);
}
END_TEST

START_TEST(runtime_initializes_the_driver) {
  int n = 0;
  CK_CUDA(cudaGetDeviceCount(&n));
  CK_CU(cuDeviceGetCount(&n));   /* no cuInit: the runtime initialized it */
  ck_assert_int_eq(n, 8);
}
END_TEST

START_TEST(devices_agree_with_the_runtime) {
  CK_CU(cuInit(0));
  CUdevice d;
  ck_assert_int_eq(cuDeviceGet(&d, 8), CUDA_ERROR_INVALID_DEVICE);
  CK_CU(cuDeviceGet(&d, 5));
  ck_assert_int_eq(d, 5);
  struct cudaDeviceProp p;
  CK_CUDA(cudaGetDeviceProperties(&p, 5));
  char name[256];
  CK_CU(cuDeviceGetName(name, sizeof name, d));
  ck_assert_str_eq(name, p.name);
  CUuuid u;
  CK_CU(cuDeviceGetUuid_v2(&u, d));
  ck_assert_int_eq(memcmp(u.bytes, p.uuid.bytes, 16), 0);
  size_t total = 0;
  CK_CU(cuDeviceTotalMem_v2(&total, d));
  ck_assert_uint_eq(total, p.totalGlobalMem);
  /* The CUDA 2.0 ABI (cuda.h maps the name to _v2): 32 bits, saturated. */
  CUresult (*total_v1)(unsigned int *, CUdevice) =
      (CUresult (*)(unsigned int *, CUdevice))dlsym(RTLD_DEFAULT, "cuDeviceTotalMem");
  unsigned int total32 = 0;
  CK_CU(total_v1(&total32, d));
  ck_assert_uint_eq(total32, 0xffffffffu);
  static const CUdevice_attribute shared[] = {
      CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
      CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID,
      CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED};
  for (size_t i = 0; i < sizeof shared / sizeof shared[0]; i++) {
    int a = -1, b = -2;
    CK_CU(cuDeviceGetAttribute(&a, shared[i], d));
    CK_CUDA(cudaDeviceGetAttribute(&b, (enum cudaDeviceAttr)shared[i], d));
    ck_assert_int_eq(a, b);
  }
  int vmm = -1;
  CK_CU(cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, d));
  ck_assert_int_eq(vmm, 0);   /* cuMemCreate & co are not modelled */
  ck_assert_int_eq(cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_MAX, d), CUDA_ERROR_INVALID_VALUE);
  char bus[32], rbus[32];
  CK_CU(cuDeviceGetPCIBusId(bus, sizeof bus, d));
  CK_CUDA(cudaDeviceGetPCIBusId(rbus, sizeof rbus, 5));
  ck_assert_str_eq(bus, rbus);
  CUdevice back = -1;
  CK_CU(cuDeviceGetByPCIBusId(&back, bus));
  ck_assert_int_eq(back, 5);
}
END_TEST

START_TEST(primary_context_state_follows_the_runtime) {
  CK_CU(cuInit(0));
  unsigned flags;
  int active = -1;
  CK_CU(cuDevicePrimaryCtxGetState(1, &flags, &active));
  ck_assert_int_eq(active, 0);
  int n;
  CK_CUDA(cudaGetDeviceCount(&n));   /* needs no context */
  CK_CU(cuDevicePrimaryCtxGetState(1, &flags, &active));
  ck_assert_int_eq(active, 0);
  CK_CUDA(cudaSetDevice(1));         /* CUDA >= 12: initializes the context */
  CK_CU(cuDevicePrimaryCtxGetState(1, &flags, &active));
  ck_assert_int_eq(active, 1);
  CK_CU(cuDevicePrimaryCtxGetState(0, &flags, &active));
  ck_assert_int_eq(active, 0);
  CUcontext cur = NULL, prim = NULL;
  CK_CU(cuCtxGetCurrent(&cur));
  CK_CU(cuDevicePrimaryCtxRetain(&prim, 1));
  ck_assert_ptr_eq(cur, prim);
  CUdevice d = -1;
  CK_CU(cuCtxGetDevice(&d));
  ck_assert_int_eq(d, 1);
  CK_CU(cuDevicePrimaryCtxRelease_v2(1));

  /* Driver references alone keep a context active. */
  CUcontext c2;
  CK_CU(cuDevicePrimaryCtxRetain(&c2, 2));
  CK_CU(cuDevicePrimaryCtxGetState(2, &flags, &active));
  ck_assert_int_eq(active, 1);
  CK_CU(cuDevicePrimaryCtxRelease_v2(2));
  CK_CU(cuDevicePrimaryCtxGetState(2, &flags, &active));
  ck_assert_int_eq(active, 0);
  ck_assert_int_eq(cuDevicePrimaryCtxRelease_v2(2), CUDA_ERROR_INVALID_CONTEXT);

  /* cudaDeviceReset destroys the current device's context; flags are
   * shared with cudaSetDeviceFlags. */
  void *p;
  CK_CUDA(cudaSetDevice(3));
  CK_CUDA(cudaMalloc(&p, 16));
  CK_CUDA(cudaFree(p));
  CK_CU(cuDevicePrimaryCtxGetState(3, &flags, &active));
  ck_assert_int_eq(active, 1);
  CK_CUDA(cudaDeviceReset());
  CK_CU(cuDevicePrimaryCtxGetState(3, &flags, &active));
  ck_assert_int_eq(active, 0);
  CK_CU(cuDevicePrimaryCtxSetFlags_v2(3, CU_CTX_SCHED_BLOCKING_SYNC));
  unsigned rflags = 0;
  CK_CUDA(cudaGetDeviceFlags(&rflags));
  ck_assert_uint_eq(rflags & cudaDeviceScheduleMask, cudaDeviceScheduleBlockingSync);
  ck_assert_int_eq(cuDevicePrimaryCtxSetFlags_v2(3, 0x7), CUDA_ERROR_INVALID_VALUE);
  ck_assert_int_eq(cuDevicePrimaryCtxGetState(9, &flags, &active), CUDA_ERROR_INVALID_DEVICE);
  ck_assert_int_eq(cuDevicePrimaryCtxGetState(0, NULL, &active), CUDA_ERROR_INVALID_VALUE);
}
END_TEST

START_TEST(context_stack_drives_the_runtime_device) {
  CK_CU(cuInit(0));
  CUcontext c = (CUcontext)1;
  CK_CU(cuCtxGetCurrent(&c));
  ck_assert_ptr_null(c);             /* nothing current on a new thread */
  ck_assert_int_eq(cuCtxGetDevice(&(CUdevice){0}), CUDA_ERROR_INVALID_CONTEXT);
  CUcontext c2, c5;
  CK_CU(cuDevicePrimaryCtxRetain(&c2, 2));
  CK_CU(cuDevicePrimaryCtxRetain(&c5, 5));
  CK_CU(cuCtxSetCurrent(c2));
  int dev = -1;
  CK_CUDA(cudaGetDevice(&dev));
  ck_assert_int_eq(dev, 2);
  CK_CU(cuCtxPushCurrent_v2(c5));
  CK_CUDA(cudaGetDevice(&dev));
  ck_assert_int_eq(dev, 5);
  CUcontext popped = NULL;
  CK_CU(cuCtxPopCurrent_v2(&popped));
  ck_assert_ptr_eq(popped, c5);
  CK_CUDA(cudaGetDevice(&dev));
  ck_assert_int_eq(dev, 2);
  CK_CUDA(cudaSetDevice(6));         /* the runtime replaces the top */
  CK_CU(cuCtxGetCurrent(&c));
  CUdevice d = -1;
  CK_CU(cuCtxGetDevice_v2(&d, c));
  ck_assert_int_eq(d, 6);
  CK_CU(cuCtxSetCurrent(NULL));      /* pops */
  CK_CU(cuCtxGetCurrent(&c));
  ck_assert_ptr_null(c);
  CK_CU(cuCtxSetCurrent(NULL));      /* a no-op on an empty stack */
  ck_assert_int_eq(cuCtxPopCurrent_v2(&popped), CUDA_ERROR_INVALID_CONTEXT);
  ck_assert_int_eq(cuCtxSetCurrent((CUcontext)&d), CUDA_ERROR_INVALID_CONTEXT);
  ck_assert_int_eq(cuCtxPushCurrent_v2(NULL), CUDA_ERROR_INVALID_CONTEXT);
}
END_TEST

START_TEST(pointer_attributes_match_the_allocation_table) {
  CK_CUDA(cudaSetDevice(4));
  char *dp, *hp, *mp, *dq;
  CK_CUDA(cudaMalloc((void **)&dp, 4096));
  CK_CUDA(cudaMalloc((void **)&dq, 64));
  CK_CUDA(cudaMallocHost((void **)&hp, 256));
  CK_CUDA(cudaMallocManaged((void **)&mp, 128, cudaMemAttachGlobal));
  CUdeviceptr in = (CUdeviceptr)(uintptr_t)(dp + 100);
  unsigned type = 0;
  CK_CU(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, in));
  ck_assert_uint_eq(type, CU_MEMORYTYPE_DEVICE);
  int ord = -1;
  CK_CU(cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, in));
  ck_assert_int_eq(ord, 4);
  CUcontext ctx = NULL, prim = NULL;
  CK_CU(cuPointerGetAttribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, in));
  CK_CU(cuDevicePrimaryCtxRetain(&prim, 4));
  ck_assert_ptr_eq(ctx, prim);
  CUdeviceptr start = 0, devptr = 0;
  size_t size = 0;
  CK_CU(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, in));
  CK_CU(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, in));
  CK_CU(cuPointerGetAttribute(&devptr, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, in));
  ck_assert_ptr_eq((void *)(uintptr_t)start, dp);
  ck_assert_uint_eq(size, 4096);
  ck_assert_uint_eq(devptr, in);
  void *host = NULL;
  ck_assert_int_eq(cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, in), CUDA_ERROR_INVALID_VALUE);
  unsigned long long id1 = 0, id2 = 0;
  CK_CU(cuPointerGetAttribute(&id1, CU_POINTER_ATTRIBUTE_BUFFER_ID, in));
  CK_CU(cuPointerGetAttribute(&id2, CU_POINTER_ATTRIBUTE_BUFFER_ID, (CUdeviceptr)(uintptr_t)dq));
  ck_assert(id1 != 0 && id2 != 0 && id1 != id2);
  bool managed = true;
  CK_CU(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, in));
  ck_assert(!managed);
  CK_CU(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, (CUdeviceptr)(uintptr_t)mp));
  ck_assert(managed);
  CK_CU(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)(hp + 8)));
  ck_assert_uint_eq(type, CU_MEMORYTYPE_HOST);
  CK_CU(cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, (CUdeviceptr)(uintptr_t)(hp + 8)));
  ck_assert_ptr_eq(host, hp + 8);
  ck_assert_int_eq(cuPointerGetAttribute(NULL, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, in), CUDA_ERROR_INVALID_VALUE);
  ck_assert_int_eq(cuPointerGetAttribute(&ctx, CU_POINTER_ATTRIBUTE_P2P_TOKENS, in), CUDA_ERROR_NOT_SUPPORTED);

  /* Memory no allocation contains. */
  int stack_var;
  CUdeviceptr sp = (CUdeviceptr)(uintptr_t)&stack_var;
  ck_assert_int_eq(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, sp), CUDA_ERROR_INVALID_VALUE);
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                 CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_HOST_POINTER};
  unsigned t2 = 7;
  int o2 = 7;
  CUcontext c2 = prim;
  void *h2 = &h2;
  void *data[] = {&t2, &o2, &c2, &h2};
  CK_CU(cuPointerGetAttributes(4, attrs, data, sp));
  ck_assert_uint_eq(t2, 0);
  ck_assert_int_eq(o2, -2);
  ck_assert_ptr_null(c2);
  ck_assert_ptr_null(h2);
  CK_CU(cuPointerGetAttributes(4, attrs, data, in));
  ck_assert_uint_eq(t2, CU_MEMORYTYPE_DEVICE);
  ck_assert_int_eq(o2, 4);
  ck_assert_ptr_eq(c2, prim);
  ck_assert_ptr_null(h2);            /* device memory has no host address */

  /* Address ranges. */
  CUdeviceptr base = 0;
  CK_CU(cuMemGetAddressRange_v2(&base, &size, in));
  ck_assert_ptr_eq((void *)(uintptr_t)base, dp);
  ck_assert_uint_eq(size, 4096);
  CK_CU(cuMemGetAddressRange_v2(NULL, &size, (CUdeviceptr)(uintptr_t)(mp + 127)));
  ck_assert_uint_eq(size, 128);
  CK_CUDA(cudaFree(dp));
  ck_assert_int_eq(cuMemGetAddressRange_v2(&base, &size, in), CUDA_ERROR_NOT_FOUND);
  ck_assert_int_eq(cuMemGetAddressRange_v2(&base, &size, sp), CUDA_ERROR_NOT_FOUND);
}
END_TEST

/* Every ABI of the generated table, asked for at exactly its version and
 * of its kind, resolves to the symbol of that name in this library. */
typedef struct row { const char *base; int version; int ptds; const char *symbol; } row;
static const row rows[] = {
#define SIM_CU_PROC(since, base, version, suffix, symbol) {#base, version, sizeof(#suffix) > 1, #symbol},
#include "../driver/procaddr.inc"
#undef SIM_CU_PROC
};

START_TEST(get_proc_address_versions_and_table) {
  void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  ck_assert_ptr_nonnull(drv);
  void *fn = NULL;
  CUdriverProcAddressQueryResult st;
  /* No cuInit needed. */
  CK_CU(cuGetProcAddress_v2("cuDeviceTotalMem", &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st));
  ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_SUCCESS);
  ck_assert_ptr_eq(fn, dlsym(drv, "cuDeviceTotalMem_v2"));
  CK_CU(cuGetProcAddress_v2("cuDeviceTotalMem", &fn, 3000, CU_GET_PROC_ADDRESS_DEFAULT, &st));
  ck_assert_ptr_eq(fn, dlsym(drv, "cuDeviceTotalMem"));
  CK_CU(cuGetProcAddress_v2("cuMemcpyHtoD", &fn, 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st));
  ck_assert_ptr_eq(fn, dlsym(drv, "cuMemcpyHtoD_v2_ptds"));
  /* No per-thread variant: the legacy one. */
  CK_CU(cuGetProcAddress_v2("cuInit", &fn, 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st));
  ck_assert_ptr_eq(fn, dlsym(drv, "cuInit"));
  fn = &fn;
  CK_CU(cuGetProcAddress_v2("cudaMalloc", &fn, 12000, 0, &st));
  ck_assert_ptr_null(fn);
  ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  CK_CU(cuGetProcAddress_v2("cuGetProcAddress", &fn, 11020, 0, &st));
  ck_assert_ptr_null(fn);
  ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  ck_assert_int_eq(cuGetProcAddress_v2("cuInit", &fn, 99000, 0, &st), CUDA_ERROR_INVALID_VALUE);
  ck_assert_int_eq(cuGetProcAddress_v2("cuInit", &fn, 12000, 3, &st), CUDA_ERROR_INVALID_VALUE);
  ck_assert_int_eq(cuGetProcAddress_v2(NULL, &fn, 12000, 0, &st), CUDA_ERROR_INVALID_VALUE);
  /* The CUDA 11.3 ABI, without the status. */
  CUresult (*v1)(const char *, void **, int, cuuint64_t) =
      (CUresult (*)(const char *, void **, int, cuuint64_t))dlsym(drv, "cuGetProcAddress");
  ck_assert_int_eq(v1("cuMemAlloc", &fn, 12000, 0), CUDA_SUCCESS);
  ck_assert_ptr_eq(fn, dlsym(drv, "cuMemAlloc_v2"));
  /* An unmodelled function is handed out and answers "not supported". */
  CK_CU(cuGetProcAddress_v2("cuMemCreate", &fn, 12000, 0, &st));
  ck_assert_int_eq(((CUresult (*)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                                  unsigned long long))fn)(NULL, 0, NULL, 0), CUDA_ERROR_NOT_SUPPORTED);

  size_t n = sizeof rows / sizeof rows[0];
  ck_assert_uint_gt(n, 600);
  for (size_t i = 0; i < n; i++) {
    void *want = dlsym(drv, rows[i].symbol);
    ck_assert_msg(want != NULL, "%s not exported", rows[i].symbol);
    CK_CU(cuGetProcAddress_v2(rows[i].base, &fn, rows[i].version,
                              rows[i].ptds ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                                           : CU_GET_PROC_ADDRESS_LEGACY_STREAM, &st));
    ck_assert_msg(fn == want, "cuGetProcAddress(%s, %d, %s) is not %s", rows[i].base, rows[i].version,
                  rows[i].ptds ? "ptds" : "legacy", rows[i].symbol);
  }
  dlclose(drv);
}
END_TEST

int main(void) {
  unsetenv("A2ASIM_DEVICES");
  Suite *s = suite_create("sim.driver.api");
  TCase *tc = tcase_create("driver");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, init_versions_errors);
  tcase_add_test(tc, runtime_initializes_the_driver);
  tcase_add_test(tc, devices_agree_with_the_runtime);
  tcase_add_test(tc, primary_context_state_follows_the_runtime);
  tcase_add_test(tc, context_stack_drives_the_runtime_device);
  tcase_add_test(tc, pointer_attributes_match_the_allocation_table);
  tcase_add_test(tc, get_proc_address_versions_and_table);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
