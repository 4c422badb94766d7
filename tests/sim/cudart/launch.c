/* launch.c - kernel registry, every kernel launch entry point, nvcc's
 * registration hooks, host functions and callbacks, and function queries of
 * the simulator's CUDA runtime.
 *
 * A kernel is identified by its host-side symbol address (what programs pass
 * to cudaLaunchKernel). __cudaGetKernel/cudaGetKernel hand that same address
 * back as the cudaKernel_t, so every entry point resolves to one registry.
 * Entries come from a2asim_register_kernel (name, parameter layout, host
 * implementation) or from nvcc's __cudaRegisterFunction (name only).
 *
 * Unimplemented kernels: a launch of a kernel with no host implementation
 * (any nvcc-compiled program's own kernels, or a symbol never registered)
 * cannot run. So that this never silently looks like it ran, the first such
 * launch of each kernel prints "a2asim: kernel X has no host
 * implementation; not executed" on stderr, and the launch still takes its
 * place in the stream as an empty item. With A2ASIM_UNIMPLEMENTED_KERNELS=fail
 * such launches are refused with cudaErrorNoKernelImageForDevice (what CUDA
 * answers when a binary has no code for the device), so a program that
 * depends on them fails loudly.
 */
#define _GNU_SOURCE   /* dladdr */
#include "sim_rt.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_rwlock_t reg_lock = PTHREAD_RWLOCK_INITIALIZER;
static sim_kernel **reg;      /* sorted by func */
static size_t reg_n, reg_cap;

static size_t reg_lower(const void *func) {
  size_t lo = 0, hi = reg_n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if ((uintptr_t)reg[mid]->func < (uintptr_t)func) lo = mid + 1; else hi = mid;
  }
  return lo;
}

/* Entries are never freed (a replaced one is kept), so a pointer returned
 * here stays valid for items already queued. */
sim_kernel *sim_kernel_lookup(const void *func) {
  pthread_rwlock_rdlock(&reg_lock);
  size_t i = reg_lower(func);
  sim_kernel *k = (i < reg_n && reg[i]->func == func) ? reg[i] : NULL;
  pthread_rwlock_unlock(&reg_lock);
  return k;
}

static int reg_put(sim_kernel *k) {
  pthread_rwlock_wrlock(&reg_lock);
  size_t i = reg_lower(k->func);
  if (i < reg_n && reg[i]->func == k->func) {
    reg[i] = k;
  } else {
    if (reg_n == reg_cap) {
      size_t cap = reg_cap ? reg_cap * 2 : 64;
      sim_kernel **r = realloc(reg, cap * sizeof *r);
      if (!r) { pthread_rwlock_unlock(&reg_lock); return -1; }
      reg = r;
      reg_cap = cap;
    }
    memmove(&reg[i + 1], &reg[i], (reg_n - i) * sizeof *reg);
    reg[i] = k;
    reg_n++;
  }
  pthread_rwlock_unlock(&reg_lock);
  return 0;
}

static size_t align_of_size(size_t sz) {
  size_t a = 1;
  while (a < 8 && sz % (a * 2) == 0) a *= 2;
  return a;
}

int a2asim_register_kernel(const void *func, a2asim_kernel_impl impl, const char *name,
                           int nparams, const size_t *param_sizes) {
  if (!func || !impl || nparams < 0 || nparams > 64 || (nparams > 0 && !param_sizes)) {
    errno = EINVAL;
    return -1;
  }
  for (int i = 0; i < nparams; i++)
    if (param_sizes[i] == 0) { errno = EINVAL; return -1; }
  sim_kernel *k = calloc(1, sizeof *k);
  if (!k) return -1;
  k->func = func;
  k->impl = impl;
  k->name = strdup(name ? name : "a2asim_kernel");
  k->nparams = nparams;
  k->sizes = calloc((size_t)nparams + 1, sizeof *k->sizes);
  k->offsets = calloc((size_t)nparams + 1, sizeof *k->offsets);
  if (!k->name || !k->sizes || !k->offsets) {
    free(k->name); free(k->sizes); free(k->offsets); free(k);
    return -1;
  }
  size_t off = 0;
  for (int i = 0; i < nparams; i++) {
    size_t a = align_of_size(param_sizes[i]);
    off = (off + a - 1) / a * a;
    k->sizes[i] = param_sizes[i];
    k->offsets[i] = off;
    off += param_sizes[i];
  }
  k->argbytes = off;
  return reg_put(k);
}

/* ---- nvcc registration hooks --------------------------------------------------
 * A program compiled by nvcc calls these from static constructors. Device
 * code cannot run here; the hooks only record kernel names so that
 * cudaFuncGetName answers, and otherwise do nothing. */

static char fatbin_dummy;

SIM_EXPORT void **__cudaRegisterFatBinary(void *fatCubin) { return (void **)&fatbin_dummy; }
SIM_EXPORT void __cudaRegisterFatBinaryEnd(void **fatCubinHandle) {}
SIM_EXPORT void __cudaUnregisterFatBinary(void **fatCubinHandle) {}
SIM_EXPORT char __cudaInitModule(void **fatCubinHandle) { return 1; }
SIM_EXPORT void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
                                  const char *deviceName, int ext, size_t size, int constant,
                                  int global) {}
SIM_EXPORT void __cudaRegisterManagedVar(void **fatCubinHandle, void **hostVarPtrAddress,
                                         char *deviceAddress, const char *deviceName, int ext,
                                         size_t size, int constant, int global) {}

/* Registration hooks nvcc-generated code may call that no header declares
 * (their parameter lists are not public; the simulator ignores them). The
 * real __cudaGetProcAddress returns 0. */
SIM_EXPORT void __cudaRegisterHostVar(void **fatCubinHandle, const char *deviceName, char *hostVar,
                                      size_t size) {}
SIM_EXPORT void __cudaRegisterUnifiedTable(void **fatCubinHandle, const void *table, void *a,
                                           void *b, void *c) {}
SIM_EXPORT void *__cudaGetProcAddress(void) { return NULL; }

SIM_EXPORT void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                                       const char *deviceName, int thread_limit, uint3 *tid,
                                       uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize) {
  if (!hostFun || sim_kernel_lookup(hostFun)) return;   /* a2asim registration wins */
  sim_kernel *k = calloc(1, sizeof *k);
  if (!k) return;
  k->func = hostFun;
  k->name = strdup(deviceName ? deviceName : (deviceFun ? deviceFun : "?"));
  k->nparams = -1;
  if (!k->name || reg_put(k) != 0) { free(k->name); free(k); }
}

/* ---- call configuration (kernel<<<...>>>) ----------------------------------------- */

typedef struct call_config { dim3 grid, block; size_t shmem; cudaStream_t stream; } call_config;
static _Thread_local call_config tls_cfg[16];
static _Thread_local int tls_cfg_n;

SIM_EXPORT unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                                struct CUstream_st *stream) {
  if (tls_cfg_n == (int)(sizeof tls_cfg / sizeof tls_cfg[0])) return 1;
  tls_cfg[tls_cfg_n++] = (call_config){gridDim, blockDim, sharedMem, stream};
  return 0;
}

SIM_EXPORT cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
                                                  void *stream) {
  if (tls_cfg_n == 0) return cudaErrorMissingConfiguration;
  call_config c = tls_cfg[--tls_cfg_n];
  if (gridDim) *gridDim = c.grid;
  if (blockDim) *blockDim = c.block;
  if (sharedMem) *sharedMem = c.shmem;
  if (stream) *(cudaStream_t *)stream = c.stream;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *func) {
  if (!kernel || !func) return sim_ret(cudaErrorInvalidValue);
  *kernel = (cudaKernel_t)func;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaGetKernel(cudaKernel_t *kernelPtr, const void *entryFuncAddr) {
  sim_init();
  if (!kernelPtr || !entryFuncAddr) return sim_ret(cudaErrorInvalidValue);
  *kernelPtr = (cudaKernel_t)entryFuncAddr;
  return cudaSuccess;
}

/* ---- unimplemented kernels ------------------------------------------------------ */

/* Functions launched without any registration, warned about once each. A
 * lock-free open-addressing set; once full, one last line says so. */
#define UNKNOWN_CAP 256
static _Atomic(const void *) unknown_warned[UNKNOWN_CAP];
static atomic_bool unknown_full;

/* Returns true the first time func is seen. */
static bool unknown_first(const void *func) {
  size_t h = ((uintptr_t)func >> 4) * 0x9E3779B97F4A7C15ull % UNKNOWN_CAP;
  for (size_t i = 0; i < UNKNOWN_CAP; i++) {
    _Atomic(const void *) *slot = &unknown_warned[(h + i) % UNKNOWN_CAP];
    const void *cur = atomic_load_explicit(slot, memory_order_acquire);
    if (cur == func) return false;
    if (!cur) {
      const void *expected = NULL;
      if (atomic_compare_exchange_strong(slot, &expected, func)) return true;
      if (expected == func) return false;
    }
  }
  if (!atomic_exchange(&unknown_full, true))
    fprintf(stderr, "a2asim: more than %d unregistered kernels launched; no more are named\n",
            UNKNOWN_CAP);
  return false;
}

/* Applies the A2ASIM_UNIMPLEMENTED_KERNELS policy to a launch of func (k:
 * its registry entry or NULL). Returns the launch's error, or success. */
static cudaError_t unimplemented(const void *func, sim_kernel *k) {
  bool first;
  const char *name = k ? k->name : NULL;
  char buf[64];
  if (k) {
    first = !atomic_exchange(&k->warned, true);
  } else {
    first = unknown_first(func);
    Dl_info di;
    if (dladdr(func, &di) && di.dli_sname && di.dli_saddr == func) name = di.dli_sname;
  }
  if (!name) {
    snprintf(buf, sizeof buf, "%p", func);
    name = buf;
  }
  if (first)
    fprintf(stderr, "a2asim: kernel %s has no host implementation; %s\n", name,
            sim_kn.unimpl_fail ? "launch refused (A2ASIM_UNIMPLEMENTED_KERNELS=fail)"
                               : "not executed");
  return sim_kn.unimpl_fail ? cudaErrorNoKernelImageForDevice : cudaSuccess;
}

/* ---- launches --------------------------------------------------------------------- */

static cudaError_t launch(const void *func, dim3 grid, dim3 block, void **args, size_t shmem,
                          cudaStream_t h, int ptds, int coop) {
  sim_init();
  if (!func) return cudaErrorInvalidDeviceFunction;
  if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z ||
      (unsigned long long)block.x * block.y * block.z > 1024 || block.z > 64 ||
      grid.y > 65535 || grid.z > 65535)
    return cudaErrorInvalidConfiguration;
  sim_stream *s;
  cudaError_t e = sim_stream_resolve(h, ptds, &s);
  if (e) return e;
  int st = sim_sticky(s->device);
  if (st) return (cudaError_t)st;
  sim_kernel *k = sim_kernel_lookup(func);
  if (!k || !k->impl) {          /* name-only or unknown: nothing to run */
    e = unimplemented(func, k);
    if (e) return e;
    k = NULL;
  }
  size_t np = k ? (size_t)k->nparams : 0;
  size_t extra = k ? np * sizeof(void *) + k->argbytes + 8 : 0;
  sim_item *it = sim_item_new(IT_KERNEL, extra);
  if (!it) return cudaErrorMemoryAllocation;
  it->u.kern.k = k;
  a2asim_launch_info *li = &it->u.kern.info;
  li->func = func;
  li->name = k ? k->name : NULL;
  li->grid[0] = grid.x; li->grid[1] = grid.y; li->grid[2] = grid.z;
  li->block[0] = block.x; li->block[1] = block.y; li->block[2] = block.z;
  li->shared_mem = shmem;
  li->stream = (void *)h;
  li->device = s->device;
  li->cooperative = coop;
  if (k && np) {
    if (!args) { sim_item_free(it); return cudaErrorInvalidValue; }
    /* Copy the argument bytes now: the caller may reuse them at once. */
    void **argv = (void **)(it + 1);
    char *blob = (char *)(argv + np);
    blob = (char *)(((uintptr_t)blob + 7) & ~(uintptr_t)7);
    for (size_t i = 0; i < np; i++) {
      argv[i] = blob + k->offsets[i];
      memcpy(argv[i], args[i], k->sizes[i]);
    }
    it->u.kern.argv = argv;
    it->u.kern.argbytes = k->argbytes;
  }
  return sim_submit(s, it);
}

#define L(...) return sim_ret(launch(__VA_ARGS__))

SIM_EXPORT cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                        size_t sharedMem, cudaStream_t stream) {
  L(func, gridDim, blockDim, args, sharedMem, stream, 0, 0);
}
SIM_EXPORT cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                             size_t sharedMem, cudaStream_t stream) {
  L(func, gridDim, blockDim, args, sharedMem, stream, 1, 0);
}
SIM_EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                          void **args, size_t sharedMem, cudaStream_t stream) {
  L((const void *)kernel, gridDim, blockDim, args, sharedMem, stream, 0, 0);
}
SIM_EXPORT cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                               void **args, size_t sharedMem, cudaStream_t stream) {
  L((const void *)kernel, gridDim, blockDim, args, sharedMem, stream, 1, 0);
}
SIM_EXPORT cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 gridDim, dim3 blockDim,
                                                   void **args, size_t sharedMem, cudaStream_t stream) {
  L(func, gridDim, blockDim, args, sharedMem, stream, 0, 1);
}
SIM_EXPORT cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim,
                                                        void **args, size_t sharedMem, cudaStream_t stream) {
  L(func, gridDim, blockDim, args, sharedMem, stream, 1, 1);
}

static cudaError_t launch_ex(const cudaLaunchConfig_t *config, const void *func, void **args, int ptds) {
  if (!config) return cudaErrorInvalidValue;
  int coop = 0;
  for (unsigned i = 0; i < config->numAttrs && config->attrs; i++)
    if (config->attrs[i].id == cudaLaunchAttributeCooperative && config->attrs[i].val.cooperative)
      coop = 1;
  return launch(func, config->gridDim, config->blockDim, args, config->dynamicSmemBytes,
                config->stream, ptds, coop);
}

SIM_EXPORT cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func, void **args) {
  return sim_ret(launch_ex(config, func, args, 0));
}
SIM_EXPORT cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config, const void *func, void **args) {
  return sim_ret(launch_ex(config, func, args, 1));
}

/* ---- host functions and callbacks ------------------------------------------------------ */

static cudaError_t host_func(cudaStream_t h, cudaHostFn_t fn, void *data, int ptds) {
  sim_init();
  if (!fn) return cudaErrorInvalidValue;
  sim_stream *s;
  cudaError_t e = sim_stream_resolve(h, ptds, &s);
  if (e) return e;
  int st = sim_sticky(s->device);
  if (st) return (cudaError_t)st;
  sim_item *it = sim_item_new(IT_HOSTFN, 0);
  if (!it) return cudaErrorMemoryAllocation;
  it->u.fn.fn = fn;
  it->u.fn.arg = data;
  return sim_submit(s, it);
}

SIM_EXPORT cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData) {
  return sim_ret(host_func(stream, fn, userData, 0));
}
SIM_EXPORT cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *userData) {
  return sim_ret(host_func(stream, fn, userData, 1));
}

static cudaError_t add_callback(cudaStream_t h, cudaStreamCallback_t cb, void *data, unsigned flags, int ptds) {
  sim_init();
  if (!cb || flags != 0) return cudaErrorInvalidValue;
  sim_stream *s;
  cudaError_t e = sim_stream_resolve(h, ptds, &s);
  if (e) return e;
  int st = sim_sticky(s->device);
  if (st) return (cudaError_t)st;
  sim_item *it = sim_item_new(IT_CALLBACK, 0);
  if (!it) return cudaErrorMemoryAllocation;
  it->u.cb.cb = cb;
  it->u.cb.data = data;
  it->u.cb.h = h;
  return sim_submit(s, it);
}

SIM_EXPORT cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback,
                                             void *userData, unsigned int flags) {
  return sim_ret(add_callback(stream, callback, userData, flags, 0));
}
SIM_EXPORT cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t stream, cudaStreamCallback_t callback,
                                                  void *userData, unsigned int flags) {
  return sim_ret(add_callback(stream, callback, userData, flags, 1));
}

/* ---- function queries --------------------------------------------------------------------- */

SIM_EXPORT cudaError_t cudaFuncGetName(const char **name, const void *func) {
  sim_init();
  if (!name || !func) return sim_ret(cudaErrorInvalidValue);
  sim_kernel *k = sim_kernel_lookup(func);
  if (!k) return sim_ret(cudaErrorInvalidDeviceFunction);
  *name = k->name;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaFuncGetParamInfo(const void *func, size_t paramIndex, size_t *paramOffset,
                                            size_t *paramSize) {
  sim_init();
  if (!func) return sim_ret(cudaErrorInvalidDeviceFunction);
  sim_kernel *k = sim_kernel_lookup(func);
  if (!k) return sim_ret(cudaErrorInvalidDeviceFunction);
  /* nvcc-registered kernels have no known parameter layout. */
  if (k->nparams < 0) return sim_ret(cudaErrorNotSupported);
  if (paramIndex >= (size_t)k->nparams) return sim_ret(cudaErrorInvalidValue);
  if (paramOffset) *paramOffset = k->offsets[paramIndex];
  if (paramSize) *paramSize = k->sizes[paramIndex];
  return cudaSuccess;
}

/* CUDA 13.2 (declared by the 13.2 header; defined here whatever header
 * the simulator is built with). */
SIM_EXPORT cudaError_t cudaFuncGetParamCount(const void *func, size_t *paramCount) {
  sim_init();
  if (!paramCount) return sim_ret(cudaErrorInvalidValue);
  sim_kernel *k = func ? sim_kernel_lookup(func) : NULL;
  if (!k) return sim_ret(cudaErrorInvalidDeviceFunction);
  if (k->nparams < 0) return sim_ret(cudaErrorNotSupported);
  *paramCount = (size_t)k->nparams;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func) {
  sim_init();
  if (!attr) return sim_ret(cudaErrorInvalidValue);
  sim_kernel *k = func ? sim_kernel_lookup(func) : NULL;
  if (!k) return sim_ret(cudaErrorInvalidDeviceFunction);
  memset(attr, 0, sizeof *attr);
  attr->maxThreadsPerBlock = 1024;
  attr->numRegs = 32;
  attr->ptxVersion = 90;
  attr->binaryVersion = 90;
  attr->maxDynamicSharedSizeBytes = 48 << 10;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value) {
  sim_init();
  if (!func) return sim_ret(cudaErrorInvalidDeviceFunction);
  return cudaSuccess;
}

/* ---- fork ------------------------------------------------------------------------------------ */

void sim_kernel_fork_prepare(void) { pthread_rwlock_wrlock(&reg_lock); }
void sim_kernel_fork_parent(void) { pthread_rwlock_unlock(&reg_lock); }
void sim_kernel_after_fork_child(void) { pthread_rwlock_init(&reg_lock, NULL); }
