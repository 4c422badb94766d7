/* cudart_memory.c - self-tests of simulated memory: allocation table and
 * cudaPointerGetAttributes, invalid frees, stream-ordered allocation, data
 * movement of the copy/set family in stream order, host synchronization of
 * the synchronous forms. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "cudart_test.h"

START_TEST(pointer_attributes) {
  CK_CUDA(cudaSetDevice(2));
  char *d, *h, *m, *hr;
  CK_CUDA(cudaMalloc((void **)&d, 4096));
  CK_CUDA(cudaMallocHost((void **)&h, 256));
  CK_CUDA(cudaMallocManaged((void **)&m, 256, cudaMemAttachGlobal));
  static char pageable[1024];
  struct cudaPointerAttributes a;

  CK_CUDA(cudaPointerGetAttributes(&a, d + 100));   /* interior pointer */
  ck_assert_int_eq(a.type, cudaMemoryTypeDevice);
  ck_assert_int_eq(a.device, 2);
  ck_assert_ptr_eq(a.devicePointer, d + 100);
  ck_assert_ptr_null(a.hostPointer);

  CK_CUDA(cudaPointerGetAttributes(&a, h));
  ck_assert_int_eq(a.type, cudaMemoryTypeHost);
  ck_assert_int_eq(a.device, 2);
  ck_assert_ptr_eq(a.hostPointer, h);
  ck_assert_ptr_eq(a.devicePointer, h);

  CK_CUDA(cudaPointerGetAttributes(&a, m + 255));
  ck_assert_int_eq(a.type, cudaMemoryTypeManaged);

  CK_CUDA(cudaPointerGetAttributes(&a, pageable));
  ck_assert_int_eq(a.type, cudaMemoryTypeUnregistered);
  ck_assert_ptr_null(a.devicePointer);
  ck_assert_ptr_null(a.hostPointer);
  CK_CUDA(cudaPointerGetAttributes(&a, d + 4096 + 8192));
  ck_assert_int_eq(a.type, cudaMemoryTypeUnregistered);

  hr = pageable + 512;
  CK_CUDA(cudaHostRegister(hr, 256, cudaHostRegisterDefault));
  CK_CUDA(cudaPointerGetAttributes(&a, hr + 10));
  ck_assert_int_eq(a.type, cudaMemoryTypeHost);
  ck_assert_int_eq(cudaHostRegister(hr + 8, 8, 0), cudaErrorHostMemoryAlreadyRegistered);
  ck_assert_int_eq(cudaHostUnregister(hr + 1), cudaErrorHostMemoryNotRegistered);
  CK_CUDA(cudaHostUnregister(hr));
  CK_CUDA(cudaPointerGetAttributes(&a, hr + 10));
  ck_assert_int_eq(a.type, cudaMemoryTypeUnregistered);
  /* The last error is the most recent one; reading it clears it. */
  ck_assert_int_eq(cudaGetLastError(), cudaErrorHostMemoryNotRegistered);
  ck_assert_int_eq(cudaGetLastError(), cudaSuccess);

  CK_CUDA(cudaFree(d));
  CK_CUDA(cudaPointerGetAttributes(&a, d));
  ck_assert_int_eq(a.type, cudaMemoryTypeUnregistered);
  CK_CUDA(cudaFreeHost(h));
  CK_CUDA(cudaFree(m));
}
END_TEST

START_TEST(invalid_frees) {
  char *d, *h;
  CK_CUDA(cudaMalloc((void **)&d, 1024));
  CK_CUDA(cudaMallocHost((void **)&h, 64));
  ck_assert_int_eq(cudaFree(d + 8), cudaErrorInvalidValue);       /* not the base */
  ck_assert_int_eq(cudaGetLastError(), cudaErrorInvalidValue);
  ck_assert_int_eq(cudaGetLastError(), cudaSuccess);              /* reset */
  ck_assert_int_eq(cudaFree(h), cudaErrorInvalidValue);           /* pinned host */
  ck_assert_int_eq(cudaFreeHost(d), cudaErrorInvalidValue);
  static char stack[64];
  ck_assert_int_eq(cudaFree(stack), cudaErrorInvalidValue);
  CK_CUDA(cudaFree(NULL));
  CK_CUDA(cudaFree(d));
  ck_assert_int_eq(cudaFree(d), cudaErrorInvalidValue);           /* double free */
  CK_CUDA(cudaFreeHost(h));
  void *z = (void *)1;
  CK_CUDA(cudaMalloc(&z, 0));
  ck_assert_ptr_null(z);
}
END_TEST

START_TEST(mem_get_info_tracks_allocations) {
  size_t f0, t0, f1, t1;
  CK_CUDA(cudaMemGetInfo(&f0, &t0));
  void *d;
  CK_CUDA(cudaMalloc(&d, 1 << 20));
  CK_CUDA(cudaMemGetInfo(&f1, &t1));
  ck_assert_uint_eq(t0, t1);
  ck_assert_uint_eq(f0 - f1, 1 << 20);
  CK_CUDA(cudaFree(d));
  CK_CUDA(cudaMemGetInfo(&f1, &t1));
  ck_assert_uint_eq(f0, f1);
}
END_TEST

START_TEST(memcpy_async_moves_data_in_stream_order) {
  enum { n = 1 << 16 };
  cudaStream_t s;
  CK_CUDA(cudaStreamCreate(&s));
  int *src, *dst, *d1, *d2;
  CK_CUDA(cudaMallocHost((void **)&src, n * sizeof(int)));
  CK_CUDA(cudaMallocHost((void **)&dst, n * sizeof(int)));
  CK_CUDA(cudaMalloc((void **)&d1, n * sizeof(int)));
  CK_CUDA(cudaMalloc((void **)&d2, n * sizeof(int)));
  for (int i = 0; i < n; i++) src[i] = i * 3 + 1;
  memset(dst, 0, n * sizeof(int));
  int gate = 0;
  CK_CUDA(cudaLaunchHostFunc(s, test_gate_fn, &gate));
  CK_CUDA(cudaMemcpyAsync(d1, src, n * sizeof(int), cudaMemcpyHostToDevice, s));
  CK_CUDA(cudaMemcpyAsync(d2, d1, n * sizeof(int), cudaMemcpyDefault, s));
  CK_CUDA(cudaMemsetAsync(d2, 0xff, 4 * sizeof(int), s));
  CK_CUDA(cudaMemcpyAsync(dst, d2, n * sizeof(int), cudaMemcpyDeviceToHost, s));
  /* Asynchronous: nothing has moved yet (the stream is held). */
  ck_assert_int_eq(dst[100], 0);
  test_gate_open(&gate);
  CK_CUDA(cudaStreamSynchronize(s));
  for (int i = 0; i < 4; i++) ck_assert_int_eq(dst[i], -1);
  for (int i = 4; i < n; i++) ck_assert_int_eq(dst[i], i * 3 + 1);
  ck_assert_int_eq(cudaMemcpyAsync(dst, d2, 4, (enum cudaMemcpyKind)9, s), cudaErrorInvalidMemcpyDirection);
}
END_TEST

/* Pageable host memory is staged like the driver does: an async H2D copy
 * from pageable memory snapshots the source before returning, an async D2H
 * copy into pageable memory has landed when the call returns. Pinned memory
 * is truly asynchronous: reusing it before the copy ran is a real race. */
START_TEST(pageable_vs_pinned_async_copies) {
  enum { n = 1024 };
  static int pageable[n];
  int *pinned, *d1, *d2;
  CK_CUDA(cudaMallocHost((void **)&pinned, n * sizeof(int)));
  CK_CUDA(cudaMalloc((void **)&d1, n * sizeof(int)));
  CK_CUDA(cudaMalloc((void **)&d2, n * sizeof(int)));
  cudaStream_t s;
  CK_CUDA(cudaStreamCreate(&s));
  for (int i = 0; i < n; i++) pageable[i] = pinned[i] = 1;
  int gate = 0;
  CK_CUDA(cudaLaunchHostFunc(s, test_gate_fn, &gate));
  CK_CUDA(cudaMemcpyAsync(d1, pageable, sizeof pageable, cudaMemcpyHostToDevice, s));
  CK_CUDA(cudaMemcpyAsync(d2, pinned, n * sizeof(int), cudaMemcpyHostToDevice, s));
  for (int i = 0; i < n; i++) pageable[i] = pinned[i] = 2;   /* reuse at once */
  test_gate_open(&gate);
  CK_CUDA(cudaMemcpyAsync(pageable, d1, sizeof pageable, cudaMemcpyDeviceToHost, s));
  /* Landed already: no synchronization needed for a pageable destination. */
  for (int i = 0; i < n; i++) ck_assert_int_eq(pageable[i], 1);
  CK_CUDA(cudaMemcpyAsync(pinned, d2, n * sizeof(int), cudaMemcpyDeviceToHost, s));
  CK_CUDA(cudaStreamSynchronize(s));
  for (int i = 0; i < n; i++) ck_assert_int_eq(pinned[i], 2);   /* the race */
}
END_TEST

START_TEST(memcpy_2d_and_memset_2d) {
  enum { w = 8, h = 4, sp = 10, dp = 16 };
  char src[sp * h], *d, out[w * h];
  for (int i = 0; i < sp * h; i++) src[i] = (char)i;
  CK_CUDA(cudaMalloc((void **)&d, dp * h));
  CK_CUDA(cudaMemset(d, 0, dp * h));
  CK_CUDA(cudaMemcpy2D(d, dp, src, sp, w, h, cudaMemcpyHostToDevice));
  CK_CUDA(cudaMemset2D(d + 2, dp, 0x55, 2, h));
  CK_CUDA(cudaMemcpy2D(out, w, d, dp, w, h, cudaMemcpyDeviceToHost));
  for (int r = 0; r < h; r++)
    for (int c = 0; c < w; c++)
      ck_assert_int_eq(out[r * w + c], (c == 2 || c == 3) ? 0x55 : (char)(r * sp + c));
  ck_assert_int_eq(cudaMemcpy2D(d, 4, src, sp, w, h, cudaMemcpyHostToDevice), cudaErrorInvalidPitchValue);
  cudaStream_t s;
  CK_CUDA(cudaStreamCreate(&s));
  CK_CUDA(cudaMemset2DAsync(d, dp, 1, w, h, s));
  CK_CUDA(cudaMemcpy2DAsync(out, w, d, dp, w, h, cudaMemcpyDeviceToHost, s));
  CK_CUDA(cudaStreamSynchronize(s));
  for (int i = 0; i < w * h; i++) ck_assert_int_eq(out[i], 1);
  size_t pitch;
  void *pd;
  CK_CUDA(cudaMallocPitch(&pd, &pitch, 100, 3));
  ck_assert(pitch >= 100 && pitch % 256 == 0);
}
END_TEST

/* cudaMemcpy D2H blocks the host until the copy is done (here: until the
 * legacy stream, held by a gate, lets it run); D2D and cudaMemset on device
 * memory only enqueue. A gate opened from another thread makes this
 * independent of timing. */
static atomic_int opened;
static void *open_later(void *gate) {
  test_sleep_ms(50);
  atomic_store(&opened, 1);
  test_gate_open(gate);
  return NULL;
}

START_TEST(sync_memcpy_host_synchronization) {
  int *d1, *d2, h = 0;
  CK_CUDA(cudaMalloc((void **)&d1, sizeof(int)));
  CK_CUDA(cudaMalloc((void **)&d2, sizeof(int)));
  int v = 42;
  CK_CUDA(cudaMemcpy(d1, &v, sizeof v, cudaMemcpyHostToDevice));
  int gate = 0;
  CK_CUDA(cudaLaunchHostFunc(NULL, test_gate_fn, &gate));
  CK_CUDA(cudaMemcpy(d2, d1, sizeof v, cudaMemcpyDeviceToDevice));   /* returns: held */
  CK_CUDA(cudaMemset(d1, 0, sizeof(int)));                           /* returns: held */
  ck_assert_int_eq(atomic_load(&opened), 0);
  pthread_t t;
  pthread_create(&t, NULL, open_later, &gate);
  CK_CUDA(cudaMemcpy(&h, d2, sizeof h, cudaMemcpyDeviceToHost));     /* blocks */
  ck_assert_int_eq(atomic_load(&opened), 1);
  ck_assert_int_eq(h, 42);
  pthread_join(t, NULL);
  CK_CUDA(cudaMemcpy(&h, d1, sizeof h, cudaMemcpyDeviceToHost));
  ck_assert_int_eq(h, 0);
}
END_TEST

START_TEST(memcpy_peer) {
  int *a, *b, h = 0, v = 9;
  CK_CUDA(cudaSetDevice(0));
  CK_CUDA(cudaMalloc((void **)&a, sizeof(int)));
  CK_CUDA(cudaSetDevice(1));
  CK_CUDA(cudaMalloc((void **)&b, sizeof(int)));
  CK_CUDA(cudaMemcpy(a, &v, sizeof v, cudaMemcpyDefault));
  CK_CUDA(cudaMemcpyPeer(b, 1, a, 0, sizeof(int)));
  CK_CUDA(cudaMemcpy(&h, b, sizeof h, cudaMemcpyDefault));
  ck_assert_int_eq(h, 9);
  ck_assert_int_eq(cudaMemcpyPeer(b, 99, a, 0, 4), cudaErrorInvalidDevice);
  int can;
  CK_CUDA(cudaDeviceCanAccessPeer(&can, 0, 1));
  ck_assert_int_eq(can, 1);
  CK_CUDA(cudaDeviceEnablePeerAccess(0, 0));
  ck_assert_int_eq(cudaDeviceEnablePeerAccess(0, 0), cudaErrorPeerAccessAlreadyEnabled);
}
END_TEST

/* A kernel stand-in that reads a buffer late (its stream is delayed);
 * cudaFreeAsync queued behind it must not release the memory first. */
static void reader_kernel(const int *p, int *out) { (void)p; (void)out; }
static atomic_int reader_saw_live;
static void reader_impl(void **args, const a2asim_launch_info *li) {
  const int *p = *(const int **)args[0];
  int type;
  /* Still a live device allocation when the kernel runs. */
  atomic_store(&reader_saw_live, a2asim_pointer_lookup(p, &type, NULL, NULL, NULL) == 0 && type == 2);
  **(int **)args[1] = p[0];
}

START_TEST(malloc_async_free_async_order) {
  static const size_t sz[] = {sizeof(int *), sizeof(int *)};
  ck_assert_int_eq(a2asim_register_kernel((const void *)reader_kernel, reader_impl, "reader", 2, sz), 0);
  cudaStream_t s;
  CK_CUDA(cudaStreamCreate(&s));
  int *p, *out;
  CK_CUDA(cudaMallocAsync((void **)&p, sizeof(int), s));
  CK_CUDA(cudaMallocHost((void **)&out, sizeof(int)));
  struct cudaPointerAttributes a;
  CK_CUDA(cudaPointerGetAttributes(&a, p));
  ck_assert_int_eq(a.type, cudaMemoryTypeDevice);
  CK_CUDA(cudaMemsetAsync(p, 0x11, sizeof(int), s));
  int gate = 0;
  CK_CUDA(cudaLaunchHostFunc(s, test_gate_fn, &gate));
  void *args[] = {&p, &out};
  dim3 g = {1, 1, 1};
  CK_CUDA(cudaLaunchKernel((const void *)reader_kernel, g, g, args, 0, s));
  CK_CUDA(cudaFreeAsync(p, s));
  /* Freed in stream order: still tracked while the kernel is pending. */
  CK_CUDA(cudaPointerGetAttributes(&a, p));
  ck_assert_int_eq(a.type, cudaMemoryTypeDevice);
  ck_assert_int_eq(cudaFreeAsync(p, s), cudaErrorInvalidValue);  /* already queued */
  ck_assert_int_eq(cudaFree(p), cudaErrorInvalidValue);
  ck_assert_int_eq(cudaGetLastError(), cudaErrorInvalidValue);
  test_gate_open(&gate);
  CK_CUDA(cudaStreamSynchronize(s));
  ck_assert_int_eq(atomic_load(&reader_saw_live), 1);
  ck_assert_int_eq(*out, 0x11111111);
  CK_CUDA(cudaPointerGetAttributes(&a, p));
  ck_assert_int_eq(a.type, cudaMemoryTypeUnregistered);
}
END_TEST

int main(void) {
  Suite *s = suite_create("sim.cudart.memory");
  TCase *tc = tcase_create("memory");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, pointer_attributes);
  tcase_add_test(tc, invalid_frees);
  tcase_add_test(tc, mem_get_info_tracks_allocations);
  tcase_add_test(tc, memcpy_async_moves_data_in_stream_order);
  tcase_add_test(tc, pageable_vs_pinned_async_copies);
  tcase_add_test(tc, memcpy_2d_and_memset_2d);
  tcase_add_test(tc, sync_memcpy_host_synchronization);
  tcase_add_test(tc, memcpy_peer);
  tcase_add_test(tc, malloc_async_free_async_order);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
