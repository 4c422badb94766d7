/* cudart_ptds.c - self-test of the per-thread default stream compile mode
 * (nvcc --default-stream per-thread, or CUDA_API_PER_THREAD_DEFAULT_STREAM):
 * the header maps the stream API to the _ptsz/_ptds entry points, and the
 * NULL stream then means the calling thread's default stream, which does
 * not synchronize with other blocking streams. */
#define CUDA_API_PER_THREAD_DEFAULT_STREAM 1
#include <pthread.h>
#include <stdatomic.h>

#include "cudart_test.h"

static atomic_int produced, observed;
static void produce(void *p) { atomic_store(&produced, 1); }
static void observe(void *p) { atomic_store(&observed, atomic_load(&produced) ? 1 : 2); }

START_TEST(null_stream_is_per_thread) {
  cudaStream_t b;
  CK_CUDA(cudaStreamCreate(&b));
  int gate = 0;
  CK_CUDA(cudaLaunchHostFunc(b, test_gate_fn, &gate));
  CK_CUDA(cudaLaunchHostFunc(b, produce, NULL));
  CK_CUDA(cudaLaunchHostFunc(NULL, observe, NULL));     /* -> _ptsz */
  CK_CUDA(cudaStreamSynchronize(NULL));                 /* returns while b is held */
  ck_assert_int_eq(atomic_load(&observed), 2);          /* no implicit sync */
  test_gate_open(&gate);
  /* The legacy stream still synchronizes with everything blocking. */
  atomic_store(&observed, 0);
  CK_CUDA(cudaLaunchHostFunc(cudaStreamLegacy, observe, NULL));
  CK_CUDA(cudaStreamSynchronize(cudaStreamLegacy));
  ck_assert_int_eq(atomic_load(&observed), 1);
}
END_TEST

static void k(int *p) { (void)p; }
static void k_impl(void **args, const a2asim_launch_info *li) { **(int **)args[0] += 1; }

START_TEST(sync_copies_and_launches_use_per_thread_stream) {
  static const size_t sz[] = {sizeof(int *)};
  ck_assert_int_eq(a2asim_register_kernel((const void *)k, k_impl, "k", 1, sz), 0);
  int *d, h = 41;
  CK_CUDA(cudaMalloc((void **)&d, sizeof(int)));
  CK_CUDA(cudaMemcpy(d, &h, sizeof h, cudaMemcpyHostToDevice));   /* -> _ptds */
  void *args[] = {&d};
  dim3 g = {1, 1, 1};
  CK_CUDA(cudaLaunchKernel((const void *)k, g, g, args, 0, NULL)); /* -> _ptsz */
  CK_CUDA(cudaMemsetAsync(d + 0, 0, 0, NULL));
  CK_CUDA(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
  ck_assert_int_eq(h, 42);
}
END_TEST

int main(void) {
  Suite *s = suite_create("sim.cudart.ptds");
  TCase *tc = tcase_create("ptds");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, null_stream_is_per_thread);
  tcase_add_test(tc, sync_copies_and_launches_use_per_thread_stream);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
