/* memory.c - allocations, the allocation table, pointer attributes and the
 * copy/set family of the simulator's CUDA runtime.
 *
 * "Device" memory is host memory recorded in a table with its type and
 * device, so cudaPointerGetAttributes and a2asim_pointer_lookup answer like
 * CUDA with unified addressing. The table is a sorted array searched by
 * binary search under a reader/writer lock.
 *
 * Host synchronization of the synchronous forms follows CUDA's "API
 * synchronization behavior" page: cudaMemcpy blocks until the copy is done,
 * except device-to-device copies, which only enqueue; cudaMemset is
 * asynchronous unless the target is pinned host or managed memory; the
 * *Async forms never block, except host-to-host copies, which are fully
 * synchronous. Sync forms run on the legacy default stream (per-thread
 * default stream for the _ptds entry points).
 */
#include "sim_rt.h"

#include "a2asim_driver.h"

#include <stdlib.h>
#include <string.h>

#define SIM_DEVICE_MEM ((size_t)80 << 30)
#define SIM_ALIGN 512

typedef struct alloc_rec {
  uintptr_t base;
  size_t size;
  int type;          /* SIM_MEM_* */
  int device;
  unsigned flags;
  bool owned;        /* false for cudaHostRegister'ed ranges */
  bool free_pending; /* cudaFreeAsync queued */
  unsigned long long id; /* unique per allocation (CU_POINTER_ATTRIBUTE_BUFFER_ID) */
} alloc_rec;

static pthread_rwlock_t tab_lock = PTHREAD_RWLOCK_INITIALIZER;
static alloc_rec *tab;
static size_t tab_n, tab_cap;
static _Atomic unsigned long long alloc_ids;

/* Index of the first record with base > p (caller holds the lock). */
static size_t tab_upper(uintptr_t p) {
  size_t lo = 0, hi = tab_n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (tab[mid].base <= p) lo = mid + 1; else hi = mid;
  }
  return lo;
}

/* Record containing p, or NULL (caller holds the lock). A zero-sized range
 * never contains anything. */
static alloc_rec *tab_find(uintptr_t p) {
  size_t i = tab_upper(p);
  if (i == 0) return NULL;
  alloc_rec *r = &tab[i - 1];
  return p - r->base < r->size ? r : NULL;
}

static int tab_insert(alloc_rec *r) {
  r->id = atomic_fetch_add(&alloc_ids, 1) + 1;
  pthread_rwlock_wrlock(&tab_lock);
  if (tab_n == tab_cap) {
    size_t cap = tab_cap ? tab_cap * 2 : 256;
    alloc_rec *t = realloc(tab, cap * sizeof *t);
    if (!t) { pthread_rwlock_unlock(&tab_lock); return -1; }
    tab = t;
    tab_cap = cap;
  }
  size_t i = tab_upper(r->base);
  memmove(&tab[i + 1], &tab[i], (tab_n - i) * sizeof *tab);
  tab[i] = *r;
  tab_n++;
  pthread_rwlock_unlock(&tab_lock);
  return 0;
}

/* Removes the record whose base is exactly p and whose type is one of the
 * bits of type_mask; copies it to *out. Returns 0 or -1. */
static int tab_remove(uintptr_t p, unsigned type_mask, alloc_rec *out) {
  pthread_rwlock_wrlock(&tab_lock);
  size_t i = tab_upper(p);
  int rc = -1;
  if (i > 0 && tab[i - 1].base == p && (type_mask & (1u << tab[i - 1].type))) {
    *out = tab[i - 1];
    memmove(&tab[i - 1], &tab[i], (tab_n - i) * sizeof *tab);
    tab_n--;
    rc = 0;
  }
  pthread_rwlock_unlock(&tab_lock);
  return rc;
}

int a2asim_pointer_lookup(const void *p, int *type, int *device, uintptr_t *base, size_t *size) {
  pthread_rwlock_rdlock(&tab_lock);
  alloc_rec *r = tab_find((uintptr_t)p);
  alloc_rec c = r ? *r : (alloc_rec){0};
  pthread_rwlock_unlock(&tab_lock);
  if (type) *type = r ? c.type : SIM_MEM_HOST;
  if (device) *device = r ? c.device : -1;
  if (base) *base = r ? c.base : 0;
  if (size) *size = r ? c.size : 0;
  return r ? 0 : -1;
}

int a2asim_pointer_info(const void *p, a2asim_ptr_info *out) {
  pthread_rwlock_rdlock(&tab_lock);
  alloc_rec *r = tab_find((uintptr_t)p);
  alloc_rec c = r ? *r : (alloc_rec){0};
  pthread_rwlock_unlock(&tab_lock);
  if (!r) return -1;
  *out = (a2asim_ptr_info){c.type, c.device, c.base, c.size, c.id, c.flags};
  return 0;
}

static int mem_type(const void *p) {
  int t;
  a2asim_pointer_lookup(p, &t, NULL, NULL, NULL);
  return t;
}

/* ---- allocation ------------------------------------------------------------ */

static cudaError_t dev_alloc(void **out, size_t size, int type, unsigned flags) {
  sim_init();
  if (!out) return cudaErrorInvalidValue;
  int dev = sim_cur_device();
  int st = sim_sticky(dev);
  if (st) return (cudaError_t)st;
  sim_ctx_use(dev);
  if (size == 0) { *out = NULL; return cudaSuccess; }
  bool counts = type == SIM_MEM_DEVICE || type == SIM_MEM_MANAGED;
  if (counts) {
    pthread_mutex_lock(&sim_dev[dev].mu);
    bool ok = size <= SIM_DEVICE_MEM - sim_dev[dev].mem_used;
    if (ok) sim_dev[dev].mem_used += size;
    pthread_mutex_unlock(&sim_dev[dev].mu);
    if (!ok) return cudaErrorMemoryAllocation;
  }
  void *p = NULL;
  if (posix_memalign(&p, SIM_ALIGN, size) != 0) p = NULL;
  alloc_rec r = {(uintptr_t)p, size, type, dev, flags, true, false};
  if (!p || tab_insert(&r) != 0) {
    free(p);
    if (counts) {
      pthread_mutex_lock(&sim_dev[dev].mu);
      sim_dev[dev].mem_used -= size;
      pthread_mutex_unlock(&sim_dev[dev].mu);
    }
    return cudaErrorMemoryAllocation;
  }
  *out = p;
  return cudaSuccess;
}

static void release(const alloc_rec *r) {
  if (r->type == SIM_MEM_DEVICE || r->type == SIM_MEM_MANAGED) {
    pthread_mutex_lock(&sim_dev[r->device].mu);
    sim_dev[r->device].mem_used -= r->size;
    pthread_mutex_unlock(&sim_dev[r->device].mu);
  }
  if (r->owned) free((void *)r->base);
}

SIM_EXPORT cudaError_t cudaMalloc(void **devPtr, size_t size) {
  return sim_ret(dev_alloc(devPtr, size, SIM_MEM_DEVICE, 0));
}

SIM_EXPORT cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags) {
  if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost) return sim_ret(cudaErrorInvalidValue);
  return sim_ret(dev_alloc(devPtr, size, SIM_MEM_MANAGED, flags));
}

SIM_EXPORT cudaError_t cudaMallocHost(void **ptr, size_t size) {
  return sim_ret(dev_alloc(ptr, size, SIM_MEM_PINNED, 0));
}

SIM_EXPORT cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags) {
  if (flags & ~(unsigned)(cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined))
    return sim_ret(cudaErrorInvalidValue);
  return sim_ret(dev_alloc(pHost, size, SIM_MEM_PINNED, flags));
}

SIM_EXPORT cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height) {
  if (!pitch) return sim_ret(cudaErrorInvalidValue);
  size_t p = (width + SIM_ALIGN - 1) / SIM_ALIGN * SIM_ALIGN;
  if (height && p > SIZE_MAX / height) return sim_ret(cudaErrorMemoryAllocation);
  cudaError_t e = dev_alloc(devPtr, p * height, SIM_MEM_DEVICE, 0);
  if (!e) *pitch = p;
  return sim_ret(e);
}

/* cudaFree and cudaFreeHost synchronize with the device before releasing,
 * as CUDA does. */
static cudaError_t free_device(void *devPtr) {
  sim_init();
  int st = sim_sticky(sim_cur_device());
  if (st) return (cudaError_t)st;
  sim_ctx_use(sim_cur_device());   /* cudaFree(NULL) is the classic context init */
  if (!devPtr) return cudaSuccess;
  pthread_rwlock_rdlock(&tab_lock);
  alloc_rec *r = tab_find((uintptr_t)devPtr);
  bool ok = r && r->base == (uintptr_t)devPtr && !r->free_pending &&
            (r->type == SIM_MEM_DEVICE || r->type == SIM_MEM_MANAGED);
  int dev = ok ? r->device : 0;
  pthread_rwlock_unlock(&tab_lock);
  if (!ok) return cudaErrorInvalidValue;
  sim_device_wait_all(dev);
  alloc_rec c;
  if (tab_remove((uintptr_t)devPtr, 1u << SIM_MEM_DEVICE | 1u << SIM_MEM_MANAGED, &c) != 0)
    return cudaErrorInvalidValue;   /* lost a race with another free */
  release(&c);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaFree(void *devPtr) { return sim_ret(free_device(devPtr)); }

/* Internal (a2asim_internal.h): device memory for the simulated NCCL's
 * ncclMemAlloc/ncclMemFree, tracked like cudaMalloc memory; never touches
 * the application's last error. */
int a2asim_device_alloc(void **p, size_t size, int device) {
  sim_init();
  if (device < 0 || device >= sim_kn.devices) return cudaErrorInvalidDevice;
  int cur = sim_cur_device();
  sim_set_cur_device(device);
  cudaError_t e = dev_alloc(p, size, SIM_MEM_DEVICE, 0);
  sim_set_cur_device(cur);
  return e;
}

int a2asim_device_free(void *p) { return free_device(p); }

SIM_EXPORT cudaError_t cudaFreeHost(void *ptr) {
  sim_init();
  int st = sim_sticky(sim_cur_device());
  if (st) return sim_ret((cudaError_t)st);
  if (!ptr) return cudaSuccess;
  pthread_rwlock_rdlock(&tab_lock);
  alloc_rec *r = tab_find((uintptr_t)ptr);
  bool ok = r && r->base == (uintptr_t)ptr && r->type == SIM_MEM_PINNED && r->owned;
  int dev = ok ? r->device : 0;
  pthread_rwlock_unlock(&tab_lock);
  if (!ok) return sim_ret(cudaErrorInvalidValue);
  sim_device_wait_all(dev);
  alloc_rec c;
  if (tab_remove((uintptr_t)ptr, 1u << SIM_MEM_PINNED, &c) != 0) return sim_ret(cudaErrorInvalidValue);
  release(&c);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags) {
  sim_init();
  if (!ptr || !size) return sim_ret(cudaErrorInvalidValue);
  if (flags & ~(unsigned)(cudaHostRegisterPortable | cudaHostRegisterMapped |
                          cudaHostRegisterIoMemory | cudaHostRegisterReadOnly))
    return sim_ret(cudaErrorInvalidValue);
  uintptr_t b = (uintptr_t)ptr;
  pthread_rwlock_rdlock(&tab_lock);
  size_t i = tab_upper(b + size - 1);
  bool overlap = i > 0 && tab[i - 1].base + tab[i - 1].size > b;
  pthread_rwlock_unlock(&tab_lock);
  if (overlap) return sim_ret(cudaErrorHostMemoryAlreadyRegistered);
  alloc_rec r = {b, size, SIM_MEM_PINNED, sim_cur_device(), flags, false, false};
  if (tab_insert(&r) != 0) return sim_ret(cudaErrorMemoryAllocation);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaHostUnregister(void *ptr) {
  sim_init();
  pthread_rwlock_rdlock(&tab_lock);
  alloc_rec *r = tab_find((uintptr_t)ptr);
  bool ok = r && r->base == (uintptr_t)ptr && r->type == SIM_MEM_PINNED && !r->owned;
  pthread_rwlock_unlock(&tab_lock);
  alloc_rec c;
  if (!ok || tab_remove((uintptr_t)ptr, 1u << SIM_MEM_PINNED, &c) != 0)
    return sim_ret(cudaErrorHostMemoryNotRegistered);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags) {
  sim_init();
  if (!pDevice || flags) return sim_ret(cudaErrorInvalidValue);
  if (mem_type(pHost) != SIM_MEM_PINNED) return sim_ret(cudaErrorInvalidValue);
  *pDevice = pHost;   /* unified addressing: same address */
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total) {
  sim_init();
  int dev = sim_cur_device();
  int st = sim_sticky(dev);
  if (st) return sim_ret((cudaError_t)st);
  pthread_mutex_lock(&sim_dev[dev].mu);
  size_t used = sim_dev[dev].mem_used;
  pthread_mutex_unlock(&sim_dev[dev].mu);
  if (free_b) *free_b = SIM_DEVICE_MEM - used;
  if (total) *total = SIM_DEVICE_MEM;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes, const void *ptr) {
  sim_init();
  if (!attributes) return sim_ret(cudaErrorInvalidValue);
  int type, dev;
  memset(attributes, 0, sizeof *attributes);
  if (a2asim_pointer_lookup(ptr, &type, &dev, NULL, NULL) != 0) {
    /* CUDA >= 11: unregistered host memory is a success. */
    attributes->type = cudaMemoryTypeUnregistered;
    attributes->device = cudaInvalidDeviceId;
    return cudaSuccess;
  }
  attributes->device = dev;
  attributes->devicePointer = (void *)ptr;
  switch (type) {
  case SIM_MEM_DEVICE: attributes->type = cudaMemoryTypeDevice; break;
  case SIM_MEM_MANAGED: attributes->type = cudaMemoryTypeManaged; attributes->hostPointer = (void *)ptr; break;
  default: attributes->type = cudaMemoryTypeHost; attributes->hostPointer = (void *)ptr; break;
  }
  return cudaSuccess;
}

/* A pure constructor (textures and arrays themselves are not modelled). */
SIM_EXPORT struct cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w,
                                                              enum cudaChannelFormatKind f) {
  return (struct cudaChannelFormatDesc){x, y, z, w, f};
}

/* ---- stream-ordered allocation ---------------------------------------------- */

static cudaError_t malloc_async(void **p, size_t size, cudaStream_t h, int ptds) {
  sim_init();
  if (!p) return cudaErrorInvalidValue;
  sim_stream *s;
  cudaError_t e = sim_stream_resolve(h, ptds, &s);
  if (e) return e;
  /* The memory comes from the stream's device; it is usable in stream order
   * from now on (and immediately, since nothing is reused before its
   * cudaFreeAsync has executed). */
  int cur = sim_cur_device();
  sim_set_cur_device(s->device);
  e = dev_alloc(p, size, SIM_MEM_DEVICE, 0);
  sim_set_cur_device(cur);
  return e;
}

SIM_EXPORT cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream) {
  return sim_ret(malloc_async(devPtr, size, hStream, 0));
}
SIM_EXPORT cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream) {
  return sim_ret(malloc_async(devPtr, size, hStream, 1));
}

void sim_mem_free_async_item(void *ptr) {
  alloc_rec c;
  if (tab_remove((uintptr_t)ptr, 1u << SIM_MEM_DEVICE | 1u << SIM_MEM_MANAGED, &c) == 0) release(&c);
}

static cudaError_t free_async(void *ptr, cudaStream_t h, int ptds) {
  sim_init();
  sim_stream *s;
  cudaError_t e = sim_stream_resolve(h, ptds, &s);
  if (e) return e;
  int st = sim_sticky(s->device);
  if (st) return (cudaError_t)st;
  if (!ptr) return cudaSuccess;
  pthread_rwlock_wrlock(&tab_lock);
  alloc_rec *r = tab_find((uintptr_t)ptr);
  bool ok = r && r->base == (uintptr_t)ptr && !r->free_pending &&
            (r->type == SIM_MEM_DEVICE || r->type == SIM_MEM_MANAGED);
  if (ok) r->free_pending = true;
  pthread_rwlock_unlock(&tab_lock);
  if (!ok) return cudaErrorInvalidValue;
  sim_item *it = sim_item_new(IT_FREE, 0);
  if (it) it->u.free.ptr = ptr;
  e = sim_submit(s, it);
  if (e) {
    pthread_rwlock_wrlock(&tab_lock);
    r = tab_find((uintptr_t)ptr);
    if (r) r->free_pending = false;
    pthread_rwlock_unlock(&tab_lock);
  }
  return e;
}

SIM_EXPORT cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream) {
  return sim_ret(free_async(devPtr, hStream, 0));
}
SIM_EXPORT cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream) {
  return sim_ret(free_async(devPtr, hStream, 1));
}

/* ---- copies and sets ----------------------------------------------------------- */

void sim_copy2d(char *dst, size_t dpitch, const char *src, size_t spitch, size_t width, size_t height) {
  if (dpitch == width && spitch == width) {
    memmove(dst, src, width * height);
    return;
  }
  for (size_t r = 0; r < height; r++) memmove(dst + r * dpitch, src + r * spitch, width);
}

static bool is_devmem(int t) { return t == SIM_MEM_DEVICE || t == SIM_MEM_MANAGED; }

enum { SYNC_NONE, SYNC_API, SYNC_ASYNC };

static cudaError_t copy_common(void *dst, size_t dpitch, const void *src, size_t spitch,
                               size_t width, size_t height, enum cudaMemcpyKind kind,
                               cudaStream_t h, int ptds, int mode) {
  sim_init();
  if ((unsigned)kind > (unsigned)cudaMemcpyDefault) return cudaErrorInvalidMemcpyDirection;
  if (dpitch < width || spitch < width) return cudaErrorInvalidPitchValue;
  sim_stream *s;
  cudaError_t e = sim_stream_resolve(h, ptds, &s);
  if (e) return e;
  int st = sim_sticky(s->device);
  if (st) return (cudaError_t)st;
  if (width == 0 || height == 0) return cudaSuccess;
  if (!dst || !src) return cudaErrorInvalidValue;
  int dt = mem_type(dst), stype = mem_type(src);
  bool ddev = is_devmem(dt), sdev = is_devmem(stype);
  bool wait = mode == SYNC_API ? !(ddev && sdev) : (!ddev && !sdev);
  /* Pageable host memory goes through the driver's staging buffers, which
   * makes the asynchronous forms partly synchronous in practice: a
   * pageable source is staged (copied) before the call returns, so the
   * caller may reuse it at once; a pageable destination is written before
   * the call returns. Modelled as: snapshot the source now; wait for the
   * copy. Pinned and device memory stay fully asynchronous. */
  bool stage = mode == SYNC_ASYNC && ddev && stype == SIM_MEM_HOST;
  if (mode == SYNC_ASYNC && sdev && dt == SIM_MEM_HOST) wait = true;
  if (stage && height && width > SIZE_MAX / height) return cudaErrorInvalidValue;
  sim_item *it = sim_item_new(IT_COPY, stage ? width * height : 0);
  if (!it) return cudaErrorMemoryAllocation;
  if (stage) {
    char *staging = (char *)(it + 1);
    sim_copy2d(staging, width, src, spitch, width, height);
    src = staging;
    spitch = width;
    it->u.copy.staged = true;
  }
  it->u.copy.dst = dst;
  it->u.copy.src = src;
  it->u.copy.dpitch = dpitch;
  it->u.copy.spitch = spitch;
  it->u.copy.width = width;
  it->u.copy.height = height;
  uint64_t seq;
  e = sim_submit_seq(s, it, &seq);
  if (e) return e;
  /* Wait for this copy only, not for work other threads queued after it. */
  if (wait && seq) {
    sim_wait_done(s, seq);
    st = sim_sticky(s->device);
    if (st) return (cudaError_t)st;
  }
  return cudaSuccess;
}

static cudaError_t set_common(void *dst, size_t pitch, int value, size_t width, size_t height,
                              cudaStream_t h, int ptds, int mode) {
  sim_init();
  if (pitch < width) return cudaErrorInvalidPitchValue;
  sim_stream *s;
  cudaError_t e = sim_stream_resolve(h, ptds, &s);
  if (e) return e;
  int st = sim_sticky(s->device);
  if (st) return (cudaError_t)st;
  if (width == 0 || height == 0) return cudaSuccess;
  if (!dst) return cudaErrorInvalidValue;
  int t = mem_type(dst);
  bool wait = mode == SYNC_API && (t == SIM_MEM_PINNED || t == SIM_MEM_MANAGED);
  sim_item *it = sim_item_new(IT_SET, 0);
  if (!it) return cudaErrorMemoryAllocation;
  it->u.set.dst = dst;
  it->u.set.value = value;
  it->u.set.pitch = pitch;
  it->u.set.width = width;
  it->u.set.height = height;
  uint64_t seq;
  e = sim_submit_seq(s, it, &seq);
  if (e) return e;
  if (wait && seq) {
    sim_wait_done(s, seq);
    st = sim_sticky(s->device);
    if (st) return (cudaError_t)st;
  }
  return cudaSuccess;
}

#define R(x) return sim_ret(x)

SIM_EXPORT cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) {
  R(copy_common(dst, count, src, count, count, 1, kind, NULL, 0, SYNC_API));
}
SIM_EXPORT cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) {
  R(copy_common(dst, count, src, count, count, 1, kind, NULL, 1, SYNC_API));
}
SIM_EXPORT cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream) {
  R(copy_common(dst, count, src, count, count, 1, kind, stream, 0, SYNC_ASYNC));
}
SIM_EXPORT cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream) {
  R(copy_common(dst, count, src, count, count, 1, kind, stream, 1, SYNC_ASYNC));
}
SIM_EXPORT cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind) {
  R(copy_common(dst, dpitch, src, spitch, width, height, kind, NULL, 0, SYNC_API));
}
SIM_EXPORT cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind) {
  R(copy_common(dst, dpitch, src, spitch, width, height, kind, NULL, 1, SYNC_API));
}
SIM_EXPORT cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind, cudaStream_t stream) {
  R(copy_common(dst, dpitch, src, spitch, width, height, kind, stream, 0, SYNC_ASYNC));
}
SIM_EXPORT cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind, cudaStream_t stream) {
  R(copy_common(dst, dpitch, src, spitch, width, height, kind, stream, 1, SYNC_ASYNC));
}

static cudaError_t peer_check(int dstDevice, int srcDevice) {
  sim_init();
  if (dstDevice < 0 || dstDevice >= sim_kn.devices || srcDevice < 0 || srcDevice >= sim_kn.devices)
    return cudaErrorInvalidDevice;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice, size_t count) {
  cudaError_t e = peer_check(dstDevice, srcDevice);
  if (e) R(e);
  /* Serialized with all work on both devices (CUDA semantics), modelled by
   * draining them first; then asynchronous to the host like a D2D copy. */
  sim_device_wait_all(srcDevice);
  if (dstDevice != srcDevice) sim_device_wait_all(dstDevice);
  R(copy_common(dst, count, src, count, count, 1, cudaMemcpyDeviceToDevice, NULL, 0, SYNC_ASYNC));
}
SIM_EXPORT cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice, size_t count, cudaStream_t stream) {
  cudaError_t e = peer_check(dstDevice, srcDevice);
  if (e) R(e);
  R(copy_common(dst, count, src, count, count, 1, cudaMemcpyDeviceToDevice, stream, 0, SYNC_ASYNC));
}

SIM_EXPORT cudaError_t cudaMemset(void *devPtr, int value, size_t count) {
  R(set_common(devPtr, count, value, count, 1, NULL, 0, SYNC_API));
}
SIM_EXPORT cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count) {
  R(set_common(devPtr, count, value, count, 1, NULL, 1, SYNC_API));
}
SIM_EXPORT cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream) {
  R(set_common(devPtr, count, value, count, 1, stream, 0, SYNC_ASYNC));
}
SIM_EXPORT cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream) {
  R(set_common(devPtr, count, value, count, 1, stream, 1, SYNC_ASYNC));
}
SIM_EXPORT cudaError_t cudaMemset2D(void *devPtr, size_t pitch, int value, size_t width, size_t height) {
  R(set_common(devPtr, pitch, value, width, height, NULL, 0, SYNC_API));
}
SIM_EXPORT cudaError_t cudaMemset2D_ptds(void *devPtr, size_t pitch, int value, size_t width, size_t height) {
  R(set_common(devPtr, pitch, value, width, height, NULL, 1, SYNC_API));
}
SIM_EXPORT cudaError_t cudaMemset2DAsync(void *devPtr, size_t pitch, int value, size_t width, size_t height, cudaStream_t stream) {
  R(set_common(devPtr, pitch, value, width, height, stream, 0, SYNC_ASYNC));
}
SIM_EXPORT cudaError_t cudaMemset2DAsync_ptsz(void *devPtr, size_t pitch, int value, size_t width, size_t height, cudaStream_t stream) {
  R(set_common(devPtr, pitch, value, width, height, stream, 1, SYNC_ASYNC));
}

/* ---- fork ------------------------------------------------------------------- */

void sim_mem_fork_prepare(void) { pthread_rwlock_wrlock(&tab_lock); }
void sim_mem_fork_parent(void) { pthread_rwlock_unlock(&tab_lock); }
void sim_mem_after_fork_child(void) {
  /* A fresh runtime: the parent's allocations stay mapped but are no longer
   * CUDA allocations in the child. */
  pthread_rwlock_init(&tab_lock, NULL);
  tab_n = 0;
}
