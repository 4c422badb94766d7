/* core.c - initialization, A2ASIM_* knobs, devices, error state, versions
 * and fork handling of the simulator's CUDA runtime.
 *
 * Initialization is lazy (pthread_once on the first call that needs it);
 * nothing runs in a constructor. Knobs are parsed strictly: a malformed value
 * prints one line on stderr naming the variable and keeps the default.
 */
#include "sim_rt.h"

#include "a2asim_driver.h"
#include "a2asim_reference.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

sim_knobs sim_kn;
sim_device sim_dev[SIM_MAX_DEVICES];
_Atomic unsigned sim_gen = 1;
_Thread_local int sim_worker_device = -1;

static pthread_once_t sim_once = PTHREAD_ONCE_INIT;
static _Thread_local int tls_cur_dev;          /* 0 until cudaSetDevice */
static _Thread_local cudaError_t tls_last_err;

/* ---- knobs --------------------------------------------------------------- */

static void knob_warn(const char *name, const char *val, const char *why) {
  fprintf(stderr, "a2asim: ignoring %s=\"%s\" (%s); using the default\n", name, val, why);
}

/* Parses an unsigned decimal integer in [lo, hi]; the whole string must be
 * consumed. Returns 1 and sets *out on success. */
static int knob_uint(const char *name, unsigned long lo, unsigned long hi, unsigned long *out) {
  const char *v = getenv(name);
  if (!v) return 0;
  char *end;
  errno = 0;
  if (*v < '0' || *v > '9') { knob_warn(name, v, "not a non-negative integer"); return 0; }
  unsigned long x = strtoul(v, &end, 10);
  if (errno || *end) { knob_warn(name, v, "not a non-negative integer"); return 0; }
  if (x < lo || x > hi) { knob_warn(name, v, "out of range"); return 0; }
  *out = x;
  return 1;
}

static void knobs_parse(void) {
  unsigned long u;
  sim_kn.devices = 8;
  if (knob_uint("A2ASIM_DEVICES", 1, SIM_MAX_DEVICES, &u)) sim_kn.devices = (int)u;
  if (knob_uint("A2ASIM_KERNEL_DELAY_US", 0, 60000000, &u)) sim_kn.kernel_delay_us = (unsigned)u;
  if (knob_uint("A2ASIM_LAUNCH_US", 0, 60000000, &u)) sim_kn.launch_us = (unsigned)u;
  if (knob_uint("A2ASIM_TRACE", 0, 1, &u)) sim_kn.trace = (int)u;
  const char *uk = getenv("A2ASIM_UNIMPLEMENTED_KERNELS");
  if (uk && !strcmp(uk, "fail")) sim_kn.unimpl_fail = 1;
  else if (uk && strcmp(uk, "warn")) knob_warn("A2ASIM_UNIMPLEMENTED_KERNELS", uk, "not warn or fail");
  const char *bw = getenv("A2ASIM_BW_GBPS");
  if (bw) {
    char *end;
    errno = 0;
    double d = strtod(bw, &end);
    if (errno || end == bw || *end || !isfinite(d) || d < 0)
      knob_warn("A2ASIM_BW_GBPS", bw, "not a non-negative number");
    else
      sim_kn.bw_gbps = d;
  }
  sim_kn.timed = sim_kn.launch_us || sim_kn.kernel_delay_us || sim_kn.bw_gbps > 0;
  const char *h = getenv("A2ASIM_HOST");
  if (h && *h && strlen(h) < sizeof sim_kn.host) {
    strcpy(sim_kn.host, h);
  } else {
    if (h) knob_warn("A2ASIM_HOST", h, "empty or longer than 255 bytes");
    if (gethostname(sim_kn.host, sizeof sim_kn.host - 1) != 0 || !sim_kn.host[0])
      strcpy(sim_kn.host, "localhost");
    sim_kn.host[sizeof sim_kn.host - 1] = 0;
  }
}

/* ---- fork ------------------------------------------------------------------
 * CUDA forbids using the runtime in a child forked after initialization. The
 * simulator instead gives the child a fresh runtime: streams, events, graphs
 * and allocations of the parent are forgotten (their handles become invalid,
 * the memory stays mapped but untracked), sticky errors are cleared, kernel
 * registrations are kept. The prepare handler takes the global locks so that
 * the child never inherits one held by a thread that does not exist there. */

static void devices_reset(void) {
  for (int d = 0; d < SIM_MAX_DEVICES; d++) {
    pthread_mutex_init(&sim_dev[d].mu, NULL);
    sim_dev[d].streams = NULL;
    sim_dev[d].legacy = NULL;
    atomic_store(&sim_dev[d].sticky, 0);
    sim_dev[d].mem_used = 0;
    memset(sim_dev[d].peer, 0, sizeof sim_dev[d].peer);
  }
}

static void fork_prepare(void) {
  sim_kernel_fork_prepare();
  sim_mem_fork_prepare();
  sim_streams_fork_prepare();
  sim_events_fork_prepare();
  /* Only the configured devices' locks are ever taken. */
  for (int d = 0; d < sim_kn.devices; d++) pthread_mutex_lock(&sim_dev[d].mu);
}

static void fork_parent(void) {
  for (int d = sim_kn.devices - 1; d >= 0; d--) pthread_mutex_unlock(&sim_dev[d].mu);
  sim_events_fork_parent();
  sim_streams_fork_parent();
  sim_mem_fork_parent();
  sim_kernel_fork_parent();
}

static void fork_child(void) {
  atomic_fetch_add(&sim_gen, 1);
  devices_reset();
  sim_ctx_after_fork_child();
  sim_streams_after_fork_child();
  sim_events_after_fork_child();
  sim_graphs_after_fork_child();
  sim_mem_after_fork_child();
  sim_kernel_after_fork_child();
}

static void init_once(void) {
  knobs_parse();
  devices_reset();
  pthread_atfork(fork_prepare, fork_parent, fork_child);
  sim_ctx_mark_runtime_up();
}

void sim_init(void) { pthread_once(&sim_once, init_once); }

/* ---- small services ---------------------------------------------------- */

uint64_t sim_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void sim_sleep_us(double us) {
  if (us <= 0) return;
  struct timespec ts;
  ts.tv_sec = (time_t)(us / 1e6);
  ts.tv_nsec = (long)((us - (double)ts.tv_sec * 1e6) * 1e3);
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

void sim_sleep_until_ns(uint64_t t_ns) {
  if (sim_now_ns() >= t_ns) return;
  struct timespec ts;
  ts.tv_sec = (time_t)(t_ns / 1000000000ull);
  ts.tv_nsec = (long)(t_ns % 1000000000ull);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {}
}

int sim_cur_device(void) { return tls_cur_dev; }
void sim_set_cur_device(int dev) { tls_cur_dev = dev; }

cudaError_t sim_ret(cudaError_t err) {
  /* cudaErrorNotReady is a status, not an error: CUDA does not record it. */
  if (err != cudaSuccess && err != cudaErrorNotReady) tls_last_err = err;
  return err;
}

/* Common prologue of calls that act on the current device: initializes and
 * returns the device's sticky error, if any. */
static cudaError_t dev_check(int dev) {
  sim_init();
  if (dev < 0 || dev >= sim_kn.devices) return cudaErrorInvalidDevice;
  int st = sim_sticky(dev);
  if (st) return (cudaError_t)st;
  sim_ctx_use(dev);
  return cudaSuccess;
}

/* ---- errors ------------------------------------------------------------ */

static const struct { int code; const char *name, *str; } err_table[] = {
#define SIM_ERR(c, n, s) {c, n, s},
#include "errors.inc"
#undef SIM_ERR
};

static int err_index(cudaError_t e) {
  for (size_t i = 0; i < sizeof err_table / sizeof err_table[0]; i++)
    if (err_table[i].code == (int)e) return (int)i;
  return -1;
}

SIM_EXPORT const char *cudaGetErrorName(cudaError_t error) {
  int i = err_index(error);
  return i < 0 ? "unrecognized error code" : err_table[i].name;
}

SIM_EXPORT const char *cudaGetErrorString(cudaError_t error) {
  int i = err_index(error);
  return i < 0 ? "unrecognized error code" : err_table[i].str;
}

SIM_EXPORT cudaError_t cudaGetLastError(void) {
  sim_init();
  int st = sim_sticky(tls_cur_dev);
  if (st) return (cudaError_t)st;   /* sticky: reported, never reset */
  cudaError_t e = tls_last_err;
  tls_last_err = cudaSuccess;
  return e;
}

SIM_EXPORT cudaError_t cudaPeekAtLastError(void) {
  sim_init();
  int st = sim_sticky(tls_cur_dev);
  return st ? (cudaError_t)st : tls_last_err;
}

void a2asim_raise_sticky(int err) {
  sim_init();
  int dev = sim_worker_device >= 0 ? sim_worker_device : tls_cur_dev;
  if (err == 0 || dev < 0 || dev >= SIM_MAX_DEVICES) return;
  int expected = 0;
  /* The first fault wins, as on a GPU. */
  atomic_compare_exchange_strong(&sim_dev[dev].sticky, &expected, err);
}

/* ---- versions ----------------------------------------------------------
 * The simulator implements the ABI of the reference release (its export
 * list, tests/sim/cudart/libcudart.exports), whatever header it was built
 * with, and its driver is of the same release. */

int a2asim_cuda_version(void) { return A2ASIM_REFERENCE_CUDA_VERSION; }

SIM_EXPORT cudaError_t cudaRuntimeGetVersion(int *runtimeVersion) {
  if (!runtimeVersion) return sim_ret(cudaErrorInvalidValue);
  *runtimeVersion = A2ASIM_REFERENCE_CUDA_VERSION;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaDriverGetVersion(int *driverVersion) {
  if (!driverVersion) return sim_ret(cudaErrorInvalidValue);
  *driverVersion = A2ASIM_REFERENCE_CUDA_VERSION;
  return cudaSuccess;
}

/* ---- devices ----------------------------------------------------------- */

SIM_EXPORT cudaError_t cudaGetDeviceCount(int *count) {
  sim_init();
  if (!count) return sim_ret(cudaErrorInvalidValue);
  *count = sim_kn.devices;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaSetDevice(int device) {
  sim_init();
  if (device < 0 || device >= sim_kn.devices) return sim_ret(cudaErrorInvalidDevice);
  /* Selecting a device is a thread-local choice: it succeeds even when the
   * device holds a sticky error (the next call on it reports that). Since
   * CUDA 12 it also initializes the device's primary context and makes it
   * current. */
  tls_cur_dev = device;
  sim_ctx_use(device);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaGetDevice(int *device) {
  sim_init();
  if (!device) return sim_ret(cudaErrorInvalidValue);
  *device = tls_cur_dev;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaInitDevice(int device, unsigned int deviceFlags, unsigned int flags) {
  sim_init();
  if (device < 0 || device >= sim_kn.devices) return sim_ret(cudaErrorInvalidDevice);
  if (flags & ~1u) return sim_ret(cudaErrorInvalidValue);
  if (flags & 1u) sim_dev[device].flags = deviceFlags;
  sim_ctx_activate(device);   /* initializes, does not make current */
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaSetDeviceFlags(unsigned int flags) {
  cudaError_t e = dev_check(tls_cur_dev);
  if (e) return sim_ret(e);
  if (flags & ~(unsigned)cudaDeviceMask) return sim_ret(cudaErrorInvalidValue);
  sim_dev[tls_cur_dev].flags = flags;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaGetDeviceFlags(unsigned int *flags) {
  sim_init();
  if (!flags) return sim_ret(cudaErrorInvalidValue);
  *flags = sim_dev[tls_cur_dev].flags | cudaDeviceMapHost;
  return cudaSuccess;
}

void sim_device_reset(int dev) {
  /* Reset waits for outstanding work (that still runs), then clears the
   * sticky error; allocations are not reclaimed in the simulator. */
  sim_device_wait_all(dev);
  atomic_store(&sim_dev[dev].sticky, 0);
  memset(sim_dev[dev].peer, 0, sizeof sim_dev[dev].peer);
  sim_ctx_device_reset(dev);
}

SIM_EXPORT cudaError_t cudaDeviceReset(void) {
  sim_init();
  sim_device_reset(tls_cur_dev);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaDeviceSynchronize(void) {
  cudaError_t e = dev_check(tls_cur_dev);
  if (e) return sim_ret(e);
  sim_device_wait_all(tls_cur_dev);
  int st = sim_sticky(tls_cur_dev);
  return st ? sim_ret((cudaError_t)st) : cudaSuccess;
}

static void fill_props(struct cudaDeviceProp *p, int dev) {
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "A2ASIM CPU device");
  /* A stable per-(host, device) uuid. */
  uint64_t h = 1469598103934665603ull;
  for (const char *c = sim_kn.host; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
  h ^= (uint64_t)dev * 0x9E3779B97F4A7C15ull;
  memcpy(p->uuid.bytes, &h, 8);
  memcpy(p->uuid.bytes + 8, "A2ASIM\0", 8);
  p->totalGlobalMem = (size_t)80 << 30;
  p->sharedMemPerBlock = 48 << 10;
  p->regsPerBlock = 65536;
  p->warpSize = 32;
  p->memPitch = SIZE_MAX / 2;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = 1024; p->maxThreadsDim[1] = 1024; p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647; p->maxGridSize[1] = 65535; p->maxGridSize[2] = 65535;
  p->totalConstMem = 65536;
  p->major = 9; p->minor = 0;
  p->textureAlignment = 512;
  p->texturePitchAlignment = 32;
  p->multiProcessorCount = 132;
  p->canMapHostMemory = 1;
  p->concurrentKernels = 1;
  p->ECCEnabled = 1;
  p->pciBusID = 0x10 + dev;
  p->pciDeviceID = 0;
  p->pciDomainID = 0;
  p->asyncEngineCount = 2;
  p->unifiedAddressing = 1;
  p->memoryBusWidth = 5120;
  p->l2CacheSize = 50 << 20;
  p->maxThreadsPerMultiProcessor = 2048;
  p->streamPrioritiesSupported = 1;
  p->globalL1CacheSupported = 1;
  p->localL1CacheSupported = 1;
  p->sharedMemPerMultiprocessor = 228 << 10;
  p->regsPerMultiprocessor = 65536;
  p->managedMemory = 1;
  p->concurrentManagedAccess = 1;
  p->computePreemptionSupported = 1;
  p->canUseHostPointerForRegisteredMem = 1;
  p->cooperativeLaunch = 1;
  p->sharedMemPerBlockOptin = 227 << 10;
  p->maxBlocksPerMultiProcessor = 32;
  p->hostRegisterSupported = 1;
  p->memoryPoolsSupported = 1;
  p->clusterLaunch = 1;
  p->hostNumaId = -1;
  p->deviceNumaId = -1;
}

SIM_EXPORT cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device) {
  sim_init();
  if (!prop) return sim_ret(cudaErrorInvalidValue);
  if (device < 0 || device >= sim_kn.devices) return sim_ret(cudaErrorInvalidDevice);
  fill_props(prop, device);
  return cudaSuccess;
}

/* The attribute table shared by cudaDeviceGetAttribute and the driver's
 * cuDeviceGetAttribute (same codes). Returns 0, 1 for an unknown attribute,
 * -1 for a bad device. */
int a2asim_device_attribute(int attr_code, int device, int *value) {
  sim_init();
  if (device < 0 || device >= sim_kn.devices) return -1;
  if (attr_code <= 0 || attr_code >= (int)cudaDevAttrMax) return 1;
  enum cudaDeviceAttr attr = (enum cudaDeviceAttr)attr_code;
  struct cudaDeviceProp p;
  fill_props(&p, device);
  int v = 0;
  switch (attr) {
  case cudaDevAttrMaxThreadsPerBlock: v = p.maxThreadsPerBlock; break;
  case cudaDevAttrMaxBlockDimX: v = p.maxThreadsDim[0]; break;
  case cudaDevAttrMaxBlockDimY: v = p.maxThreadsDim[1]; break;
  case cudaDevAttrMaxBlockDimZ: v = p.maxThreadsDim[2]; break;
  case cudaDevAttrMaxGridDimX: v = p.maxGridSize[0]; break;
  case cudaDevAttrMaxGridDimY: v = p.maxGridSize[1]; break;
  case cudaDevAttrMaxGridDimZ: v = p.maxGridSize[2]; break;
  case cudaDevAttrMaxSharedMemoryPerBlock: v = (int)p.sharedMemPerBlock; break;
  case cudaDevAttrTotalConstantMemory: v = (int)p.totalConstMem; break;
  case cudaDevAttrWarpSize: v = p.warpSize; break;
  case cudaDevAttrMaxRegistersPerBlock: v = p.regsPerBlock; break;
  case cudaDevAttrClockRate: v = 1980000; break;
  case cudaDevAttrMultiProcessorCount: v = p.multiProcessorCount; break;
  case cudaDevAttrCanMapHostMemory: v = 1; break;
  case cudaDevAttrConcurrentKernels: v = 1; break;
  case cudaDevAttrEccEnabled: v = 1; break;
  case cudaDevAttrPciBusId: v = p.pciBusID; break;
  case cudaDevAttrPciDeviceId: v = p.pciDeviceID; break;
  case cudaDevAttrPciDomainId: v = p.pciDomainID; break;
  case cudaDevAttrAsyncEngineCount: v = p.asyncEngineCount; break;
  case cudaDevAttrUnifiedAddressing: v = 1; break;
  case cudaDevAttrGlobalMemoryBusWidth: v = p.memoryBusWidth; break;
  case cudaDevAttrL2CacheSize: v = p.l2CacheSize; break;
  case cudaDevAttrMaxThreadsPerMultiProcessor: v = p.maxThreadsPerMultiProcessor; break;
  case cudaDevAttrComputeCapabilityMajor: v = p.major; break;
  case cudaDevAttrComputeCapabilityMinor: v = p.minor; break;
  case cudaDevAttrStreamPrioritiesSupported: v = 1; break;
  case cudaDevAttrMaxSharedMemoryPerMultiprocessor: v = (int)p.sharedMemPerMultiprocessor; break;
  case cudaDevAttrManagedMemory: v = 1; break;
  case cudaDevAttrConcurrentManagedAccess: v = 1; break;
  case cudaDevAttrCooperativeLaunch: v = 1; break;
  case cudaDevAttrMaxSharedMemoryPerBlockOptin: v = (int)p.sharedMemPerBlockOptin; break;
  case cudaDevAttrHostRegisterSupported: v = 1; break;
  case cudaDevAttrMemoryPoolsSupported: v = 1; break;
  default: v = 0; break;   /* valid attribute, not modelled */
  }
  *value = v;
  return 0;
}

SIM_EXPORT cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device) {
  sim_init();
  if (!value) return sim_ret(cudaErrorInvalidValue);
  int r = a2asim_device_attribute((int)attr, device, value);
  if (r < 0) return sim_ret(cudaErrorInvalidDevice);
  if (r > 0) return sim_ret(cudaErrorInvalidValue);
  return cudaSuccess;
}

int a2asim_device_name(int dev, char *name, size_t len) {
  sim_init();
  if (dev < 0 || dev >= sim_kn.devices) return -1;
  struct cudaDeviceProp p;
  fill_props(&p, dev);
  if (len) snprintf(name, len, "%s", p.name);
  return 0;
}

int a2asim_device_uuid(int dev, unsigned char uuid[16]) {
  sim_init();
  if (dev < 0 || dev >= sim_kn.devices) return -1;
  struct cudaDeviceProp p;
  fill_props(&p, dev);
  memcpy(uuid, p.uuid.bytes, 16);
  return 0;
}

int a2asim_device_total_mem(int dev, size_t *bytes) {
  sim_init();
  if (dev < 0 || dev >= sim_kn.devices) return -1;
  struct cudaDeviceProp p;
  fill_props(&p, dev);
  *bytes = p.totalGlobalMem;
  return 0;
}

SIM_EXPORT cudaError_t cudaDeviceGetPCIBusId(char *pciBusId, int len, int device) {
  sim_init();
  if (!pciBusId || len <= 0) return sim_ret(cudaErrorInvalidValue);
  if (device < 0 || device >= sim_kn.devices) return sim_ret(cudaErrorInvalidDevice);
  snprintf(pciBusId, (size_t)len, "00000000:%02X:00.0", 0x10 + device);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaDeviceGetByPCIBusId(int *device, const char *pciBusId) {
  sim_init();
  if (!device || !pciBusId) return sim_ret(cudaErrorInvalidValue);
  unsigned dom, bus, dv, fn;
  if (sscanf(pciBusId, "%x:%x:%x.%x", &dom, &bus, &dv, &fn) != 4 || dom != 0 || dv != 0 ||
      fn != 0 || bus < 0x10 || (int)(bus - 0x10) >= sim_kn.devices)
    return sim_ret(cudaErrorInvalidDevice);
  *device = (int)(bus - 0x10);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaChooseDevice(int *device, const struct cudaDeviceProp *prop) {
  sim_init();
  if (!device || !prop) return sim_ret(cudaErrorInvalidValue);
  *device = 0;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaDeviceCanAccessPeer(int *canAccessPeer, int device, int peerDevice) {
  sim_init();
  if (!canAccessPeer) return sim_ret(cudaErrorInvalidValue);
  if (device < 0 || device >= sim_kn.devices || peerDevice < 0 || peerDevice >= sim_kn.devices)
    return sim_ret(cudaErrorInvalidDevice);
  *canAccessPeer = device != peerDevice;   /* CUDA answers 0 for a device with itself */
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags) {
  cudaError_t e = dev_check(tls_cur_dev);
  if (e) return sim_ret(e);
  if (peerDevice < 0 || peerDevice >= sim_kn.devices) return sim_ret(cudaErrorInvalidDevice);
  if (flags) return sim_ret(cudaErrorInvalidValue);
  if (peerDevice == tls_cur_dev) return sim_ret(cudaErrorInvalidDevice);
  if (sim_dev[tls_cur_dev].peer[peerDevice]) return sim_ret(cudaErrorPeerAccessAlreadyEnabled);
  sim_dev[tls_cur_dev].peer[peerDevice] = 1;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaDeviceDisablePeerAccess(int peerDevice) {
  cudaError_t e = dev_check(tls_cur_dev);
  if (e) return sim_ret(e);
  if (peerDevice < 0 || peerDevice >= sim_kn.devices) return sim_ret(cudaErrorInvalidDevice);
  if (!sim_dev[tls_cur_dev].peer[peerDevice]) return sim_ret(cudaErrorPeerAccessNotEnabled);
  sim_dev[tls_cur_dev].peer[peerDevice] = 0;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority) {
  sim_init();
  /* Like current GPUs: 0 is the lowest priority, -5 the highest. */
  if (leastPriority) *leastPriority = 0;
  if (greatestPriority) *greatestPriority = -5;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaDeviceGetLimit(size_t *pValue, enum cudaLimit limit) {
  sim_init();
  if (!pValue) return sim_ret(cudaErrorInvalidValue);
  switch (limit) {
  case cudaLimitStackSize: *pValue = 1024; break;
  case cudaLimitPrintfFifoSize: *pValue = 1 << 20; break;
  case cudaLimitMallocHeapSize: *pValue = 8 << 20; break;
  default: *pValue = 0; break;
  }
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaDeviceSetLimit(enum cudaLimit limit, size_t value) {
  sim_init();
  return cudaSuccess;
}

/* ---- internal API ------------------------------------------------------ */

int a2asim_get_device(void) { sim_init(); return tls_cur_dev; }

int a2asim_set_device(int dev) {
  sim_init();
  if (dev < 0 || dev >= sim_kn.devices) return cudaErrorInvalidDevice;
  tls_cur_dev = dev;
  return cudaSuccess;
}
int a2asim_device_count(void) { sim_init(); return sim_kn.devices; }
const char *a2asim_hostname(void) { sim_init(); return sim_kn.host; }

void a2asim_model_transfer(size_t bytes) {
  sim_init();
  if (sim_kn.bw_gbps > 0 && bytes) sim_model_us((double)bytes / (sim_kn.bw_gbps * 1e3));
}

void a2asim_model_blocked(void) { sim_model_blocked(); }
void a2asim_model_advance(uint64_t t_ns) {
  /* 0: the other side keeps no timeline (a process whose cost model is
   * off): the wait is taken as it happened. */
  if (t_ns) sim_model_advance(t_ns);
  else sim_model_blocked();
}
