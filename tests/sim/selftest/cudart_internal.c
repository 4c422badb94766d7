/* cudart_internal.c - self-tests of the simulator's internal API
 * (a2asim_internal.h), the contract the simulated NCCL builds on. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cudart_test.h"

/* ---- a2asim_stream_enqueue: FIFO, runs on a worker, blocking items block ---- */

typedef struct order_log {
  pthread_mutex_t mu;
  int v[4096];
  int n;
  pthread_t tid[4096];
} order_log;

typedef struct order_arg { order_log *log; int v; } order_arg;

static void append_fn(void *p) {
  order_arg *a = p;
  pthread_mutex_lock(&a->log->mu);
  a->log->tid[a->log->n] = pthread_self();
  a->log->v[a->log->n++] = a->v;
  pthread_mutex_unlock(&a->log->mu);
}

START_TEST(enqueue_fifo_on_worker) {
  static order_log log = {PTHREAD_MUTEX_INITIALIZER};
  static order_arg args[2000];
  cudaStream_t s;
  CK_CUDA(cudaStreamCreate(&s));
  for (int i = 0; i < 2000; i++) {
    args[i] = (order_arg){&log, i};
    ck_assert_int_eq(a2asim_stream_enqueue(s, 0, append_fn, &args[i], "append"), 0);
  }
  CK_CUDA(cudaStreamSynchronize(s));
  ck_assert_int_eq(log.n, 2000);
  for (int i = 0; i < 2000; i++) {
    ck_assert_int_eq(log.v[i], i);
    ck_assert(!pthread_equal(log.tid[i], pthread_self()));
  }
  CK_CUDA(cudaStreamDestroy(s));
}
END_TEST

typedef struct gate { pthread_mutex_t mu; pthread_cond_t cv; int open; } gate;

static void gate_wait_fn(void *p) {
  gate *g = p;
  pthread_mutex_lock(&g->mu);
  while (!g->open) pthread_cond_wait(&g->cv, &g->mu);
  pthread_mutex_unlock(&g->mu);
}

static void gate_open(gate *g) {
  pthread_mutex_lock(&g->mu);
  g->open = 1;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
}

static void flag_fn(void *p) { atomic_store((atomic_int *)p, 1); }

START_TEST(enqueue_blocking_item_blocks_stream_only) {
  static gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
  static atomic_int after_a, on_b;
  cudaStream_t a, b;
  CK_CUDA(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CK_CUDA(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  ck_assert_int_eq(a2asim_stream_enqueue(a, 0, gate_wait_fn, &g, "hang"), 0);
  ck_assert_int_eq(a2asim_stream_enqueue(a, 0, flag_fn, &after_a, "after"), 0);
  ck_assert_int_eq(a2asim_stream_enqueue(b, 0, flag_fn, &on_b, "b"), 0);
  CK_CUDA(cudaStreamSynchronize(b));   /* b is independent of a's hang */
  ck_assert_int_eq(atomic_load(&on_b), 1);
  ck_assert_int_eq(cudaStreamQuery(a), cudaErrorNotReady);
  ck_assert_int_eq(atomic_load(&after_a), 0);
  gate_open(&g);
  CK_CUDA(cudaStreamSynchronize(a));
  ck_assert_int_eq(atomic_load(&after_a), 1);
}
END_TEST

/* ---- a2asim_stream_enqueue_multi ---- */

typedef struct multi_probe {
  atomic_int a_done, b_before, ran, ran_on_both_ready;
  atomic_int after_b;
} multi_probe;

static multi_probe mp;
static void mark_a_done(void *p) { atomic_store(&mp.a_done, 1); }
static void multi_fn(void *p) {
  atomic_fetch_add(&mp.ran, 1);
  if (atomic_load(&mp.a_done) && atomic_load(&mp.b_before)) atomic_store(&mp.ran_on_both_ready, 1);
}
static void mark_b_before(void *p) { atomic_store(&mp.b_before, 1); }
static void check_after_b(void *p) { if (atomic_load(&mp.ran)) atomic_store(&mp.after_b, 1); }

START_TEST(enqueue_multi_starts_when_all_reach_it) {
  cudaStream_t a, b;
  CK_CUDA(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CK_CUDA(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  ck_assert_int_eq(a2asim_stream_set_delay(a, 200000), 0);   /* a reaches it late */
  ck_assert_int_eq(a2asim_stream_enqueue(a, 0, mark_a_done, NULL, "a"), 0);
  ck_assert_int_eq(a2asim_stream_set_delay(a, 0), 0);
  ck_assert_int_eq(a2asim_stream_enqueue(b, 0, mark_b_before, NULL, "b"), 0);
  void *ss[3] = {a, b, a};   /* duplicates are merged */
  ck_assert_int_eq(a2asim_stream_enqueue_multi(ss, 3, multi_fn, NULL, "multi"), 0);
  ck_assert_int_eq(a2asim_stream_enqueue(b, 0, check_after_b, NULL, "after"), 0);
  CK_CUDA(cudaStreamSynchronize(b));
  /* b completed the multi item, so it ran, after a's delayed item. */
  ck_assert_int_eq(atomic_load(&mp.ran), 1);
  ck_assert_int_eq(atomic_load(&mp.ran_on_both_ready), 1);
  ck_assert_int_eq(atomic_load(&mp.after_b), 1);
  CK_CUDA(cudaStreamSynchronize(a));
  ck_assert_int_eq(atomic_load(&mp.ran), 1);
}
END_TEST

START_TEST(enqueue_multi_rejects_bad_args) {
  cudaStream_t bad = (cudaStream_t)(uintptr_t)0x1234;
  void *ss[1] = {bad};
  ck_assert_int_eq(a2asim_stream_enqueue_multi(ss, 1, flag_fn, NULL, "x"), cudaErrorInvalidResourceHandle);
  ck_assert_int_eq(a2asim_stream_enqueue_multi(ss, 0, flag_fn, NULL, "x"), cudaErrorInvalidValue);
  ck_assert_int_eq(a2asim_stream_enqueue(bad, 0, flag_fn, NULL, "x"), cudaErrorInvalidResourceHandle);
  /* Internal errors do not touch the application's last error. */
  ck_assert_int_eq(cudaGetLastError(), cudaSuccess);
}
END_TEST

/* ---- legacy default stream through the internal API ---- */

static atomic_int legacy_seen;
static atomic_int producer_done;
static void produce(void *p) { atomic_store(&producer_done, 1); }
static void consume(void *p) { atomic_store(&legacy_seen, atomic_load(&producer_done)); }

START_TEST(enqueue_legacy_waits_for_blocking_streams) {
  cudaStream_t s;
  CK_CUDA(cudaStreamCreate(&s));
  ck_assert_int_eq(a2asim_stream_set_delay(s, 200000), 0);
  ck_assert_int_eq(a2asim_stream_enqueue(s, 0, produce, NULL, "p"), 0);
  ck_assert_int_eq(a2asim_stream_enqueue(NULL, 0, consume, NULL, "c"), 0);
  CK_CUDA(cudaStreamSynchronize(NULL));
  ck_assert_int_eq(atomic_load(&legacy_seen), 1);
}
END_TEST

/* ---- bookkeeping ---- */

START_TEST(devices_streams_pointers_host) {
  unsetenv("A2ASIM_DEVICES");
  unsetenv("A2ASIM_HOST");
  ck_assert_int_eq(a2asim_device_count(), 8);
  ck_assert_int_eq(a2asim_get_device(), 0);
  CK_CUDA(cudaSetDevice(3));
  ck_assert_int_eq(a2asim_get_device(), 3);
  cudaStream_t s;
  CK_CUDA(cudaStreamCreate(&s));
  int dev = -1;
  ck_assert_int_eq(a2asim_stream_device(s, &dev), 0);
  ck_assert_int_eq(dev, 3);
  ck_assert_int_eq(a2asim_stream_device(NULL, &dev), 0);
  ck_assert_int_eq(dev, 3);
  ck_assert_int_eq(a2asim_stream_valid(s), 1);
  ck_assert_int_eq(a2asim_stream_valid(NULL), 1);
  ck_assert_int_eq(a2asim_stream_valid(cudaStreamPerThread), 1);
  ck_assert_int_eq(a2asim_stream_valid((void *)&dev), 0);
  CK_CUDA(cudaStreamDestroy(s));
  ck_assert_int_eq(a2asim_stream_valid(s), 0);

  char *d;
  CK_CUDA(cudaMalloc((void **)&d, 1000));
  int type, pdev;
  uintptr_t base;
  size_t size;
  ck_assert_int_eq(a2asim_pointer_lookup(d + 999, &type, &pdev, &base, &size), 0);
  ck_assert_int_eq(type, 2);
  ck_assert_int_eq(pdev, 3);
  ck_assert_uint_eq(base, (uintptr_t)d);
  ck_assert_uint_eq(size, 1000);
  ck_assert_int_eq(a2asim_pointer_lookup(d + 1000 + 4096, &type, &pdev, &base, &size), -1);
  ck_assert_int_eq(type, 0);
  ck_assert_int_eq(pdev, -1);
  void *h;
  CK_CUDA(cudaMallocHost(&h, 64));
  ck_assert_int_eq(a2asim_pointer_lookup(h, &type, &pdev, NULL, NULL), 0);
  ck_assert_int_eq(type, 1);
  CK_CUDA(cudaFree(d));
  ck_assert_int_eq(a2asim_pointer_lookup(d, &type, NULL, NULL, NULL), -1);
  CK_CUDA(cudaFreeHost(h));

  char host[256];
  gethostname(host, sizeof host);
  ck_assert_str_eq(a2asim_hostname(), host);
}
END_TEST

START_TEST(set_device_and_device_memory) {
  ck_assert_int_eq(a2asim_set_device(6), 0);
  ck_assert_int_eq(a2asim_get_device(), 6);
  int d = -1;
  CK_CUDA(cudaGetDevice(&d));
  ck_assert_int_eq(d, 6);
  ck_assert_int_eq(a2asim_set_device(99), cudaErrorInvalidDevice);
  ck_assert_int_eq(a2asim_get_device(), 6);
  void *p = NULL;
  ck_assert_int_eq(a2asim_device_alloc(&p, 4096, 2), 0);
  ck_assert_int_eq(a2asim_get_device(), 6);   /* unchanged */
  struct cudaPointerAttributes a;
  CK_CUDA(cudaPointerGetAttributes(&a, (char *)p + 10));
  ck_assert_int_eq(a.type, cudaMemoryTypeDevice);
  ck_assert_int_eq(a.device, 2);
  ck_assert_int_eq(a2asim_device_alloc(&p, 16, 42), cudaErrorInvalidDevice);
  ck_assert_int_eq(a2asim_device_free((char *)p + 1), cudaErrorInvalidValue);
  ck_assert_int_eq(a2asim_device_free(p), 0);
  ck_assert_int_eq(a2asim_device_free(p), cudaErrorInvalidValue);
  /* None of this is the application's error. */
  ck_assert_int_eq(cudaGetLastError(), cudaSuccess);
}
END_TEST

START_TEST(knobs_devices_host_and_bad_values) {
  setenv("A2ASIM_DEVICES", "4", 1);
  setenv("A2ASIM_HOST", "simhost-a", 1);
  setenv("A2ASIM_BW_GBPS", "1", 1);          /* 1 GB/s: 1 MB = 1 ms */
  setenv("A2ASIM_LAUNCH_US", "12x", 1);      /* rejected, default kept */
  ck_assert_int_eq(a2asim_device_count(), 4);
  ck_assert_str_eq(a2asim_hostname(), "simhost-a");
  int n;
  CK_CUDA(cudaGetDeviceCount(&n));
  ck_assert_int_eq(n, 4);
  ck_assert_int_eq(cudaSetDevice(4), cudaErrorInvalidDevice);
  double t0 = test_now_ms();
  a2asim_model_transfer(20u << 20);
  double dt = test_now_ms() - t0;
  ck_assert_msg(dt >= 19.0, "20 MiB at 1 GB/s took %.2f ms", dt);
}
END_TEST

static void nop_fn(void *p) { (void)p; }
static void knob_kernel(void) {}

/* A2ASIM_LAUNCH_US charges every kernel and every internal item;
 * A2ASIM_KERNEL_DELAY_US delays kernels only. Both run on the worker: the
 * host does not wait for them at enqueue time. */
START_TEST(cost_model_knobs) {
  setenv("A2ASIM_LAUNCH_US", "30000", 1);
  setenv("A2ASIM_KERNEL_DELAY_US", "40000", 1);
  cudaStream_t s;
  CK_CUDA(cudaStreamCreate(&s));
  double t0 = test_now_ms();
  ck_assert_int_eq(a2asim_stream_enqueue(s, 0, nop_fn, NULL, "nop"), 0);
  double t_enq = test_now_ms() - t0;
  CK_CUDA(cudaStreamSynchronize(s));
  double t_item = test_now_ms() - t0;
  ck_assert_msg(t_enq < 20 && t_item >= 29, "enqueue %.1f ms, item %.1f ms", t_enq, t_item);
  dim3 g = {1, 1, 1};
  t0 = test_now_ms();
  CK_CUDA(cudaLaunchKernel((const void *)knob_kernel, g, g, NULL, 0, s));
  CK_CUDA(cudaStreamSynchronize(s));
  double t_kernel = test_now_ms() - t0;
  ck_assert_msg(t_kernel >= 69, "kernel %.1f ms", t_kernel);
  t0 = test_now_ms();
  CK_CUDA(cudaLaunchHostFunc(s, nop_fn, NULL));   /* not a kernel: free */
  CK_CUDA(cudaStreamSynchronize(s));
  ck_assert_msg(test_now_ms() - t0 < 25, "host function was charged");
}
END_TEST

/* The cost model's device timeline. Stream a holds on a host function
 * until everything is queued, so every item is ready when the first starts:
 *   a: gate, record e0, N kernels, record ea, multi(a, b)
 *   b: multi(a, b), record em
 *   c: wait ea, one kernel, record ec
 * On a GPU the N kernels run back to back: ea - e0 is N * cost, however
 * late the worker thread wakes after each sleep (timer slack, a CPU hog on
 * the machine). The kernel on c starts when a published ea's end, so
 * ec - e0 is (N + 1) * cost. b reaches the multi-stream item at once and
 * waits for a; the item costs nothing, so it ends, on b too, where a's
 * timeline stood: em - e0 is N * cost. Timeline times are integer
 * nanoseconds, so the bounds are tight; a relative sleep per kernel
 * overshoots each by at least a wake-up (microseconds), N times, and
 * b's and c's workers wake late too. A CPU hog runs throughout. */
enum { TL_N = 100, TL_COST_US = 200 };
static atomic_int tl_gate, tl_hog_stop;
static void tl_gate_fn(void *p) {
  struct timespec ts = {0, 1000000};
  while (!atomic_load(&tl_gate)) nanosleep(&ts, NULL);
}
static void *tl_hog(void *p) {
  volatile unsigned long x = 0;
  while (!atomic_load(&tl_hog_stop)) x++;
  return NULL;
}
static float tl_elapsed(cudaEvent_t a, cudaEvent_t b) {
  float ms = -1;
  CK_CUDA(cudaEventElapsedTime(&ms, a, b));
  return ms;
}

START_TEST(cost_model_timeline_back_to_back) {
  setenv("A2ASIM_LAUNCH_US", "200", 1);   /* TL_COST_US */
  cudaStream_t a, b, c;
  cudaEvent_t e0, ea, ec, em;
  CK_CUDA(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CK_CUDA(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  CK_CUDA(cudaStreamCreateWithFlags(&c, cudaStreamNonBlocking));
  CK_CUDA(cudaEventCreate(&e0));
  CK_CUDA(cudaEventCreate(&ea));
  CK_CUDA(cudaEventCreate(&ec));
  CK_CUDA(cudaEventCreate(&em));
  pthread_t hog;
  ck_assert_int_eq(pthread_create(&hog, NULL, tl_hog, NULL), 0);
  dim3 g = {1, 1, 1};
  CK_CUDA(cudaLaunchHostFunc(a, tl_gate_fn, NULL));
  CK_CUDA(cudaEventRecord(e0, a));
  for (int i = 0; i < TL_N; i++) CK_CUDA(cudaLaunchKernel((const void *)knob_kernel, g, g, NULL, 0, a));
  CK_CUDA(cudaEventRecord(ea, a));
  void *ss[2] = {a, b};
  ck_assert_int_eq(a2asim_stream_enqueue_multi(ss, 2, nop_fn, NULL, "multi"), 0);
  CK_CUDA(cudaEventRecord(em, b));
  CK_CUDA(cudaStreamWaitEvent(c, ea, 0));
  CK_CUDA(cudaLaunchKernel((const void *)knob_kernel, g, g, NULL, 0, c));
  CK_CUDA(cudaEventRecord(ec, c));
  double t0 = test_now_ms();
  atomic_store(&tl_gate, 1);
  CK_CUDA(cudaDeviceSynchronize());
  double wall = test_now_ms() - t0;
  atomic_store(&tl_hog_stop, 1);
  pthread_join(hog, NULL);
  const double cost_ms = TL_COST_US / 1000.0, tol = 0.005;   /* 5 us in all */
  float d_a = tl_elapsed(e0, ea), d_c = tl_elapsed(e0, ec), d_m = tl_elapsed(e0, em);
  ck_assert_msg(d_a > TL_N * cost_ms - tol && d_a < TL_N * cost_ms + tol,
                "%d back-to-back kernels of %d us: %.4f ms of device time", TL_N, TL_COST_US, d_a);
  ck_assert_msg(d_c > (TL_N + 1) * cost_ms - tol && d_c < (TL_N + 1) * cost_ms + tol,
                "kernel after a cross-stream wait ends at %.4f ms", d_c);
  ck_assert_msg(d_m > TL_N * cost_ms - tol && d_m < TL_N * cost_ms + tol,
                "multi-stream item ends at %.4f ms", d_m);
  /* The host sees the work done no earlier than its modelled end. */
  ck_assert_msg(wall >= (TL_N + 1) * cost_ms, "done after %.3f ms of wall time", wall);
}
END_TEST

/* A kernel's host implementation is simulated device work: the time it
 * really runs is on the timeline too (a test's compute kernel sleeps for
 * its work), so K such kernels take at least K x (cost + its run time). */
enum { TL_K = 5, TL_WORK_US = 2000 };
static void tl_work_kernel(void) {}
static void tl_work_impl(void **args, const a2asim_launch_info *li) {
  struct timespec ts = {0, TL_WORK_US * 1000L};
  nanosleep(&ts, NULL);
}

START_TEST(cost_model_timeline_counts_kernel_work) {
  setenv("A2ASIM_LAUNCH_US", "200", 1);   /* TL_COST_US */
  ck_assert_int_eq(a2asim_register_kernel((const void *)tl_work_kernel, tl_work_impl, "work", 0, NULL), 0);
  cudaStream_t a;
  cudaEvent_t e0, e1;
  CK_CUDA(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CK_CUDA(cudaEventCreate(&e0));
  CK_CUDA(cudaEventCreate(&e1));
  dim3 g = {1, 1, 1};
  CK_CUDA(cudaLaunchHostFunc(a, tl_gate_fn, NULL));
  CK_CUDA(cudaEventRecord(e0, a));
  for (int i = 0; i < TL_K; i++) CK_CUDA(cudaLaunchKernel((const void *)tl_work_kernel, g, g, NULL, 0, a));
  CK_CUDA(cudaEventRecord(e1, a));
  atomic_store(&tl_gate, 1);
  CK_CUDA(cudaStreamSynchronize(a));
  float d = tl_elapsed(e0, e1);
  ck_assert_msg(d >= TL_K * (TL_COST_US + TL_WORK_US) / 1000.0, "%d kernels of %d + %d us: %.4f ms",
                TL_K, TL_COST_US, TL_WORK_US, d);
}
END_TEST

static atomic_int cap_runs, cap_releases;
static void cap_fn(void *p) { atomic_fetch_add(&cap_runs, *(int *)p); }
static void cap_release(void *p) { atomic_fetch_add(&cap_releases, 1); }

START_TEST(enqueue_capturable_outside_and_inside_capture) {
  static int one = 1;
  cudaStream_t s;
  CK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  /* Outside a capture: runs once, then released. */
  ck_assert_int_eq(a2asim_stream_enqueue_capturable(s, 0, cap_fn, &one, cap_release, "x"), 0);
  CK_CUDA(cudaStreamSynchronize(s));
  ck_assert_int_eq(atomic_load(&cap_runs), 1);
  ck_assert_int_eq(atomic_load(&cap_releases), 1);
  /* Inside: recorded, replayed by every launch, released with the last copy. */
  CK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  ck_assert_int_eq(a2asim_stream_enqueue_capturable(s, 0, cap_fn, &one, cap_release, "x"), 0);
  ck_assert_int_eq(a2asim_stream_enqueue(s, 0, cap_fn, &one, "plain"), cudaErrorStreamCaptureUnsupported);
  cudaGraph_t g;
  ck_assert_int_eq(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
  ck_assert_int_eq(atomic_load(&cap_releases), 2);   /* the invalidated graph is gone */
  CK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  ck_assert_int_eq(a2asim_stream_enqueue_capturable(s, 0, cap_fn, &one, cap_release, "x"), 0);
  CK_CUDA(cudaStreamEndCapture(s, &g));
  cudaGraphExec_t x;
  CK_CUDA(cudaGraphInstantiate(&x, g, 0));
  CK_CUDA(cudaGraphDestroy(g));
  for (int i = 0; i < 3; i++) CK_CUDA(cudaGraphLaunch(x, s));
  CK_CUDA(cudaStreamSynchronize(s));
  ck_assert_int_eq(atomic_load(&cap_runs), 4);
  ck_assert_int_eq(atomic_load(&cap_releases), 2);
  CK_CUDA(cudaGraphExecDestroy(x));
  ck_assert_int_eq(atomic_load(&cap_releases), 3);
  /* Errors release too. */
  ck_assert_int_eq(a2asim_stream_enqueue_capturable((void *)&one, 0, cap_fn, &one, cap_release, "x"),
                   cudaErrorInvalidResourceHandle);
  ck_assert_int_eq(atomic_load(&cap_releases), 4);
}
END_TEST

START_TEST(knob_bad_devices_keeps_default) {
  setenv("A2ASIM_DEVICES", "0", 1);
  ck_assert_int_eq(a2asim_device_count(), 8);
}
END_TEST

int main(void) {
  Suite *s = suite_create("sim.cudart.internal");
  TCase *tc = tcase_create("internal");
  tcase_set_timeout(tc, 20);
  tcase_add_test(tc, enqueue_fifo_on_worker);
  tcase_add_test(tc, enqueue_blocking_item_blocks_stream_only);
  tcase_add_test(tc, enqueue_multi_starts_when_all_reach_it);
  tcase_add_test(tc, enqueue_multi_rejects_bad_args);
  tcase_add_test(tc, enqueue_legacy_waits_for_blocking_streams);
  tcase_add_test(tc, devices_streams_pointers_host);
  tcase_add_test(tc, set_device_and_device_memory);
  tcase_add_test(tc, knobs_devices_host_and_bad_values);
  tcase_add_test(tc, knob_bad_devices_keeps_default);
  tcase_add_test(tc, cost_model_knobs);
  tcase_add_test(tc, cost_model_timeline_back_to_back);
  tcase_add_test(tc, cost_model_timeline_counts_kernel_work);
  tcase_add_test(tc, enqueue_capturable_outside_and_inside_capture);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
