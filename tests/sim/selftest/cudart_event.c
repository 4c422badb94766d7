/* cudart_event.c - self-tests of simulated events: cudaStreamWaitEvent
 * creates a real cross-stream dependency (the classic race: without the wait
 * the consumer sees stale data, with it the produced data), query,
 * synchronize, elapsed time and its error rules, re-recording, waits on
 * never-recorded events. */
#include <stdatomic.h>
#include <string.h>

#include "cudart_test.h"

#define N 4096

/* "Kernels" with host implementations. */
static void fill_kernel(int *p, int n, int v) { (void)p; (void)n; (void)v; }
static void fill_impl(void **args, const a2asim_launch_info *li) {
  int *p = *(int **)args[0];
  int n = *(int *)args[1], v = *(int *)args[2];
  for (int i = 0; i < n; i++) p[i] = v;
}
static void copy_kernel(int *dst, const int *src, int n) { (void)dst; (void)src; (void)n; }
static void copy_impl(void **args, const a2asim_launch_info *li) {
  int *d = *(int **)args[0];
  const int *s = *(const int **)args[1];
  int n = *(int *)args[2];
  for (int i = 0; i < n; i++) d[i] = s[i];
}

static void register_kernels(void) {
  static const size_t fill_sz[] = {sizeof(int *), sizeof(int), sizeof(int)};
  static const size_t copy_sz[] = {sizeof(int *), sizeof(int *), sizeof(int)};
  ck_assert_int_eq(a2asim_register_kernel((const void *)fill_kernel, fill_impl, "fill", 3, fill_sz), 0);
  ck_assert_int_eq(a2asim_register_kernel((const void *)copy_kernel, copy_impl, "copy", 3, copy_sz), 0);
}

static void launch_fill(int *p, int n, int v, cudaStream_t s) {
  void *args[] = {&p, &n, &v};
  dim3 g = {1, 1, 1}, b = {128, 1, 1};
  CK_CUDA(cudaLaunchKernel((const void *)fill_kernel, g, b, args, 0, s));
}
static void launch_copy(int *d, const int *src, int n, cudaStream_t s) {
  void *args[] = {&d, &src, &n};
  dim3 g = {1, 1, 1}, b = {128, 1, 1};
  CK_CUDA(cudaLaunchKernel((const void *)copy_kernel, g, b, args, 0, s));
}

/* Producer fills buf with 7 on a delayed stream; the consumer copies buf to
 * out on another stream, with or without waiting for the producer's event. */
static int producer_consumer(int with_wait) {
  register_kernels();
  cudaStream_t prod, cons;
  CK_CUDA(cudaStreamCreateWithFlags(&prod, cudaStreamNonBlocking));
  CK_CUDA(cudaStreamCreateWithFlags(&cons, cudaStreamNonBlocking));
  int *buf, *out;
  CK_CUDA(cudaMalloc((void **)&buf, N * sizeof(int)));
  CK_CUDA(cudaMalloc((void **)&out, N * sizeof(int)));
  CK_CUDA(cudaMemset(buf, 0, N * sizeof(int)));
  CK_CUDA(cudaDeviceSynchronize());
  cudaEvent_t done;
  CK_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  /* Without the wait, the consumer must run while the producer is delayed:
   * a long delay keeps that true on a loaded machine. */
  ck_assert_int_eq(a2asim_stream_set_delay(prod, with_wait ? 200000 : 1000000), 0);
  launch_fill(buf, N, 7, prod);
  CK_CUDA(cudaEventRecord(done, prod));
  if (with_wait) CK_CUDA(cudaStreamWaitEvent(cons, done, 0));
  launch_copy(out, buf, N, cons);
  int host[N];
  CK_CUDA(cudaMemcpyAsync(host, out, sizeof host, cudaMemcpyDeviceToHost, cons));
  CK_CUDA(cudaStreamSynchronize(cons));
  int good = 0;
  for (int i = 0; i < N; i++) good += host[i] == 7;
  CK_CUDA(cudaDeviceSynchronize());
  return good;
}

START_TEST(race_without_wait_reads_stale_data) {
  ck_assert_int_eq(producer_consumer(0), 0);
}
END_TEST

START_TEST(wait_event_creates_dependency) {
  ck_assert_int_eq(producer_consumer(1), N);
}
END_TEST

START_TEST(wait_on_never_recorded_event_is_noop) {
  cudaStream_t s;
  cudaEvent_t e;
  CK_CUDA(cudaStreamCreate(&s));
  CK_CUDA(cudaEventCreate(&e));
  CK_CUDA(cudaEventQuery(e));          /* never recorded: complete */
  CK_CUDA(cudaEventSynchronize(e));
  CK_CUDA(cudaStreamWaitEvent(s, e, 0));
  CK_CUDA(cudaStreamSynchronize(s));
  ck_assert_int_eq(cudaStreamWaitEvent(s, e, 0x10), cudaErrorInvalidValue);
}
END_TEST

START_TEST(query_and_synchronize) {
  cudaStream_t s;
  cudaEvent_t e;
  CK_CUDA(cudaStreamCreate(&s));
  CK_CUDA(cudaEventCreateWithFlags(&e, cudaEventBlockingSync));
  int gate = 0;
  CK_CUDA(cudaLaunchHostFunc(s, test_gate_fn, &gate));
  CK_CUDA(cudaEventRecord(e, s));
  ck_assert_int_eq(cudaEventQuery(e), cudaErrorNotReady);
  /* NotReady is a status: it is not recorded as the last error. */
  ck_assert_int_eq(cudaGetLastError(), cudaSuccess);
  test_gate_open(&gate);
  CK_CUDA(cudaEventSynchronize(e));
  CK_CUDA(cudaEventQuery(e));
  CK_CUDA(cudaEventDestroy(e));
  ck_assert_int_eq(cudaEventQuery(e), cudaErrorInvalidResourceHandle);
  ck_assert_int_eq(cudaEventCreateWithFlags(&e, cudaEventInterprocess), cudaErrorInvalidValue);
}
END_TEST

START_TEST(rerecord_replaces_captured_point) {
  cudaStream_t a, b;
  cudaEvent_t e;
  CK_CUDA(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CK_CUDA(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  CK_CUDA(cudaEventCreate(&e));
  int gate = 0;
  CK_CUDA(cudaLaunchHostFunc(a, test_gate_fn, &gate));
  CK_CUDA(cudaEventRecord(e, a));
  ck_assert_int_eq(cudaEventQuery(e), cudaErrorNotReady);
  CK_CUDA(cudaEventRecord(e, b));      /* b is idle: the new point completes at once */
  CK_CUDA(cudaStreamSynchronize(b));
  CK_CUDA(cudaEventQuery(e));
  ck_assert_int_eq(cudaStreamQuery(a), cudaErrorNotReady);
  test_gate_open(&gate);
  CK_CUDA(cudaStreamSynchronize(a));
}
END_TEST

START_TEST(elapsed_time) {
  cudaStream_t s;
  cudaEvent_t t0, t1, nt, never;
  CK_CUDA(cudaStreamCreate(&s));
  CK_CUDA(cudaEventCreate(&t0));
  CK_CUDA(cudaEventCreate(&t1));
  CK_CUDA(cudaEventCreate(&never));
  CK_CUDA(cudaEventCreateWithFlags(&nt, cudaEventDisableTiming));
  float ms = -1;
  ck_assert_int_eq(cudaEventElapsedTime(&ms, t0, t1), cudaErrorInvalidResourceHandle);
  int gate = 0;
  CK_CUDA(cudaEventRecord(t0, s));
  CK_CUDA(cudaLaunchHostFunc(s, test_gate_fn, &gate));
  CK_CUDA(cudaEventRecord(t1, s));
  CK_CUDA(cudaEventRecord(nt, s));
  ck_assert_int_eq(cudaEventElapsedTime(&ms, t0, t1), cudaErrorNotReady);
  CK_CUDA(cudaEventSynchronize(t0));   /* t0 has its timestamp ... */
  test_sleep_ms(80);                   /* ... and t1 runs at least 80 ms later */
  test_gate_open(&gate);
  CK_CUDA(cudaEventSynchronize(t1));
  CK_CUDA(cudaEventElapsedTime(&ms, t0, t1));
  ck_assert_msg(ms >= 75.0f && ms < 2000.0f, "elapsed %.3f ms", ms);
  ck_assert_int_eq(cudaEventElapsedTime(&ms, t0, nt), cudaErrorInvalidResourceHandle);
  ck_assert_int_eq(cudaEventElapsedTime(&ms, t0, never), cudaErrorInvalidResourceHandle);
  ck_assert_int_eq(cudaEventElapsedTime(NULL, t0, t1), cudaErrorInvalidValue);
  CK_CUDA(cudaEventElapsedTime(&ms, t1, t0));
  ck_assert_msg(ms <= -75.0f, "reverse elapsed %.3f ms", ms);
}
END_TEST

START_TEST(event_and_stream_of_different_devices) {
  cudaEvent_t e;
  CK_CUDA(cudaEventCreate(&e));        /* device 0 */
  CK_CUDA(cudaSetDevice(1));
  cudaStream_t s1;
  CK_CUDA(cudaStreamCreate(&s1));
  ck_assert_int_eq(cudaEventRecord(e, s1), cudaErrorInvalidResourceHandle);
  /* Waiting on another device's event is allowed. */
  CK_CUDA(cudaSetDevice(0));
  CK_CUDA(cudaEventRecord(e, NULL));
  CK_CUDA(cudaStreamWaitEvent(s1, e, 0));
  CK_CUDA(cudaStreamSynchronize(s1));
}
END_TEST

int main(void) {
  Suite *s = suite_create("sim.cudart.event");
  TCase *tc = tcase_create("event");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, race_without_wait_reads_stale_data);
  tcase_add_test(tc, wait_event_creates_dependency);
  tcase_add_test(tc, wait_on_never_recorded_event_is_noop);
  tcase_add_test(tc, query_and_synchronize);
  tcase_add_test(tc, rerecord_replaces_captured_point);
  tcase_add_test(tc, elapsed_time);
  tcase_add_test(tc, event_and_stream_of_different_devices);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
