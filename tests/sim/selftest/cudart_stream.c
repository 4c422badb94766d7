/* cudart_stream.c - self-tests of simulated streams: FIFO order, concurrency
 * between streams, legacy default stream implicit synchronization,
 * non-blocking and per-thread default streams, priorities, destroy with
 * pending work. Host functions observe the order; a per-stream delay makes
 * the races deterministic (a delayed producer is still running when an
 * unsynchronized consumer runs). */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "cudart_test.h"

/* The per-thread entry points (what -default-stream per-thread compiles to). */
extern cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t, cudaHostFn_t, void *);
extern cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t);


typedef struct seq_log { pthread_mutex_t mu; int v[4096]; int n; } seq_log;
typedef struct seq_arg { seq_log *log; int v; } seq_arg;

static void log_fn(void *p) {
  seq_arg *a = p;
  pthread_mutex_lock(&a->log->mu);
  a->log->v[a->log->n++] = a->v;
  pthread_mutex_unlock(&a->log->mu);
}

START_TEST(fifo_order_mixed_items) {
  static seq_log log = {PTHREAD_MUTEX_INITIALIZER};
  static seq_arg args[1000];
  cudaStream_t s;
  CK_CUDA(cudaStreamCreate(&s));
  int *buf;
  CK_CUDA(cudaMalloc((void **)&buf, sizeof(int)));
  for (int i = 0; i < 1000; i++) {
    args[i] = (seq_arg){&log, i};
    if (i % 3 == 0) CK_CUDA(cudaMemsetAsync(buf, i & 0xff, sizeof(int), s));
    CK_CUDA(cudaLaunchHostFunc(s, log_fn, &args[i]));
  }
  CK_CUDA(cudaStreamSynchronize(s));
  ck_assert_int_eq(log.n, 1000);
  for (int i = 0; i < 1000; i++) ck_assert_int_eq(log.v[i], i);
  CK_CUDA(cudaStreamQuery(s));
  CK_CUDA(cudaFree(buf));
  CK_CUDA(cudaStreamDestroy(s));
}
END_TEST

/* Stream a's item waits for a flag that only stream b's later item sets:
 * completes only if the two streams run concurrently. */
typedef struct rendezvous { pthread_mutex_t mu; pthread_cond_t cv; int set, timed_out; } rendezvous;
static rendezvous rv = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};

static void wait_flag(void *p) {
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += 5;
  pthread_mutex_lock(&rv.mu);
  while (!rv.set)
    if (pthread_cond_timedwait(&rv.cv, &rv.mu, &dl) != 0) { rv.timed_out = 1; break; }
  pthread_mutex_unlock(&rv.mu);
}
static void set_flag(void *p) {
  pthread_mutex_lock(&rv.mu);
  rv.set = 1;
  pthread_cond_broadcast(&rv.cv);
  pthread_mutex_unlock(&rv.mu);
}

START_TEST(streams_run_concurrently_with_each_other_and_host) {
  cudaStream_t a, b;
  CK_CUDA(cudaStreamCreate(&a));
  CK_CUDA(cudaStreamCreate(&b));
  CK_CUDA(cudaLaunchHostFunc(a, wait_flag, NULL));
  /* The host is not blocked by a's pending item. */
  ck_assert_int_eq(cudaStreamQuery(a), cudaErrorNotReady);
  CK_CUDA(cudaLaunchHostFunc(b, set_flag, NULL));
  CK_CUDA(cudaStreamSynchronize(a));
  ck_assert_int_eq(rv.timed_out, 0);
}
END_TEST

static atomic_int produced, observed;
static void observe(void *p) { atomic_store(&observed, atomic_load(&produced) ? 1 : 2); }

/* Producer on `prod`, held by a gate the host opens; consumer on `cons`.
 * Returns what the consumer saw (1 = produced data, 2 = stale). Without a
 * dependency the consumer runs while the producer is held, whatever the
 * machine's load (the host waits up to 10 s for it); with one it cannot run
 * before the gate opens, so the verdict never depends on timing - only a
 * broken dependency could let it through, and then it reads stale data. */
static atomic_int gate_open_flag;
static void gated_produce(void *p) {
  while (!atomic_load(&gate_open_flag)) test_sleep_ms(1);
  atomic_store(&produced, 1);
}

static int race_expect(cudaStream_t prod, cudaStream_t cons, int expect_stale) {
  atomic_store(&produced, 0);
  atomic_store(&observed, 0);
  atomic_store(&gate_open_flag, 0);
  CK_CUDA(cudaLaunchHostFunc(prod, gated_produce, NULL));
  CK_CUDA(cudaLaunchHostFunc(cons, observe, NULL));
  /* Give an unordered consumer the chance to run first. */
  double t0 = test_now_ms(), limit = expect_stale ? 10000 : 100;
  while (!atomic_load(&observed) && test_now_ms() - t0 < limit) test_sleep_ms(1);
  atomic_store(&gate_open_flag, 1);
  CK_CUDA(cudaDeviceSynchronize());
  return atomic_load(&observed);
}
#define race(prod, cons) race_expect(prod, cons, 0)
#define race_stale(prod, cons) race_expect(prod, cons, 1)

START_TEST(legacy_default_stream_waits_for_blocking_streams) {
  cudaStream_t s;
  CK_CUDA(cudaStreamCreate(&s));
  ck_assert_int_eq(race(s, NULL), 1);
  ck_assert_int_eq(race(s, cudaStreamLegacy), 1);
}
END_TEST

START_TEST(blocking_stream_waits_for_legacy_default_stream) {
  cudaStream_t s;
  CK_CUDA(cudaStreamCreate(&s));
  ck_assert_int_eq(race(NULL, s), 1);
}
END_TEST

START_TEST(non_blocking_streams_are_exempt) {
  cudaStream_t nb, b;
  CK_CUDA(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));
  CK_CUDA(cudaStreamCreate(&b));
  ck_assert_int_eq(race_stale(nb, NULL), 2);
  ck_assert_int_eq(race_stale(NULL, nb), 2);
  /* Two blocking user streams do not synchronize with each other. */
  ck_assert_int_eq(race_stale(b, nb), 2);
  cudaStream_t b2;
  CK_CUDA(cudaStreamCreate(&b2));
  ck_assert_int_eq(race_stale(b, b2), 2);
  unsigned flags;
  CK_CUDA(cudaStreamGetFlags(nb, &flags));
  ck_assert_uint_eq(flags, cudaStreamNonBlocking);
  CK_CUDA(cudaStreamGetFlags(b, &flags));
  ck_assert_uint_eq(flags, cudaStreamDefault);
}
END_TEST

START_TEST(per_thread_default_stream) {
  cudaStream_t b;
  CK_CUDA(cudaStreamCreate(&b));
  /* Synchronizes with the legacy default stream ... */
  ck_assert_int_eq(race(cudaStreamPerThread, NULL), 1);
  ck_assert_int_eq(race(NULL, cudaStreamPerThread), 1);
  /* ... but not with other blocking streams. */
  ck_assert_int_eq(race_stale(b, cudaStreamPerThread), 2);
  /* The _ptsz entry points map NULL to the per-thread stream. */
  atomic_store(&produced, 0);
  atomic_store(&observed, 0);
  atomic_store(&gate_open_flag, 0);
  CK_CUDA(cudaLaunchHostFunc(b, gated_produce, NULL));
  CK_CUDA(cudaLaunchHostFunc_ptsz(NULL, observe, NULL));
  CK_CUDA(cudaStreamSynchronize_ptsz(NULL));   /* returns while b is held */
  ck_assert_int_eq(atomic_load(&observed), 2);
  atomic_store(&gate_open_flag, 1);
  CK_CUDA(cudaDeviceSynchronize());
}
END_TEST

static void *other_thread(void *p) {
  /* Each thread has its own per-thread default stream. */
  CK_CUDA(cudaLaunchHostFunc(cudaStreamPerThread, observe, NULL));
  CK_CUDA(cudaStreamSynchronize(cudaStreamPerThread));
  return NULL;
}

START_TEST(per_thread_streams_are_per_thread) {
  atomic_store(&produced, 0);
  atomic_store(&observed, 0);
  atomic_store(&gate_open_flag, 0);
  CK_CUDA(cudaLaunchHostFunc(cudaStreamPerThread, gated_produce, NULL));
  pthread_t t;
  pthread_create(&t, NULL, other_thread, NULL);
  pthread_join(t, NULL);   /* its stream finished while ours is held */
  ck_assert_int_eq(atomic_load(&observed), 2);
  atomic_store(&gate_open_flag, 1);
  CK_CUDA(cudaStreamSynchronize(cudaStreamPerThread));
}
END_TEST

START_TEST(priorities_and_attributes) {
  int least = 99, greatest = 99;
  CK_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  ck_assert_int_eq(least, 0);
  ck_assert_int_eq(greatest, -5);
  cudaStream_t s, lo, hi;
  CK_CUDA(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, -3));
  CK_CUDA(cudaStreamCreateWithPriority(&lo, 0, 7));     /* clamped */
  CK_CUDA(cudaStreamCreateWithPriority(&hi, 0, -100));  /* clamped */
  int p;
  CK_CUDA(cudaStreamGetPriority(s, &p));
  ck_assert_int_eq(p, -3);
  CK_CUDA(cudaStreamGetPriority(lo, &p));
  ck_assert_int_eq(p, 0);
  CK_CUDA(cudaStreamGetPriority(hi, &p));
  ck_assert_int_eq(p, -5);
  CK_CUDA(cudaSetDevice(5));
  cudaStream_t d5;
  CK_CUDA(cudaStreamCreate(&d5));
  int dev;
  CK_CUDA(cudaStreamGetDevice(d5, &dev));
  ck_assert_int_eq(dev, 5);
  CK_CUDA(cudaStreamGetDevice(s, &dev));
  ck_assert_int_eq(dev, 0);
  unsigned long long id1, id2;
  CK_CUDA(cudaStreamGetId(s, &id1));
  CK_CUDA(cudaStreamGetId(d5, &id2));
  ck_assert(id1 != id2);
  ck_assert_int_eq(cudaStreamCreateWithFlags(&s, 0x10), cudaErrorInvalidValue);
  ck_assert_int_eq(cudaGetLastError(), cudaErrorInvalidValue);
}
END_TEST

static atomic_int ran_after_destroy;
static void count_fn(void *p) { atomic_fetch_add(&ran_after_destroy, 1); }

START_TEST(destroy_with_pending_work_completes_it) {
  cudaStream_t s;
  CK_CUDA(cudaStreamCreate(&s));
  ck_assert_int_eq(a2asim_stream_set_delay(s, 20000), 0);
  for (int i = 0; i < 10; i++) CK_CUDA(cudaLaunchHostFunc(s, count_fn, NULL));
  CK_CUDA(cudaStreamDestroy(s));
  /* The handle is dead at once ... */
  ck_assert_int_eq(cudaStreamQuery(s), cudaErrorInvalidResourceHandle);
  ck_assert_int_eq(cudaStreamDestroy(s), cudaErrorInvalidResourceHandle);
  ck_assert_int_eq(cudaLaunchHostFunc(s, count_fn, NULL), cudaErrorInvalidResourceHandle);
  /* ... and its work still completes (device synchronize waits for it). */
  CK_CUDA(cudaDeviceSynchronize());
  ck_assert_int_eq(atomic_load(&ran_after_destroy), 10);
  ck_assert_int_eq(cudaStreamDestroy(NULL), cudaErrorInvalidResourceHandle);
}
END_TEST

START_TEST(many_streams_created_and_destroyed) {
  /* Slots are recycled after their workers drain. */
  for (int round = 0; round < 50; round++) {
    cudaStream_t s[40];
    for (int i = 0; i < 40; i++) {
      CK_CUDA(cudaStreamCreate(&s[i]));
      CK_CUDA(cudaLaunchHostFunc(s[i], count_fn, NULL));
    }
    for (int i = 0; i < 40; i++) CK_CUDA(cudaStreamDestroy(s[i]));
  }
  CK_CUDA(cudaDeviceSynchronize());
  ck_assert_int_eq(atomic_load(&ran_after_destroy), 2000);
}
END_TEST

static atomic_int dev_sync_done;
static void slow_fn(void *p) { test_sleep_ms(100); atomic_fetch_add(&dev_sync_done, 1); }

START_TEST(device_synchronize_covers_all_streams_of_the_device) {
  cudaStream_t s[4];
  for (int i = 0; i < 4; i++) {
    CK_CUDA(cudaStreamCreateWithFlags(&s[i], i % 2 ? cudaStreamNonBlocking : 0));
    CK_CUDA(cudaLaunchHostFunc(s[i], slow_fn, NULL));
  }
  CK_CUDA(cudaLaunchHostFunc(cudaStreamPerThread, slow_fn, NULL));
  CK_CUDA(cudaDeviceSynchronize());
  ck_assert_int_eq(atomic_load(&dev_sync_done), 5);
  /* Another device's work is not waited for. */
  CK_CUDA(cudaSetDevice(1));
  cudaStream_t o;
  CK_CUDA(cudaStreamCreate(&o));
  CK_CUDA(cudaLaunchHostFunc(o, slow_fn, NULL));
  CK_CUDA(cudaSetDevice(0));
  CK_CUDA(cudaDeviceSynchronize());
  ck_assert_int_eq(cudaStreamQuery(o), cudaErrorNotReady);
  CK_CUDA(cudaStreamSynchronize(o));
  ck_assert_int_eq(atomic_load(&dev_sync_done), 6);
}
END_TEST

static atomic_int cb_calls;
static cudaStream_t cb_stream_seen;
static void stream_cb(cudaStream_t st, cudaError_t status, void *data) {
  cb_stream_seen = st;
  if (status == cudaSuccess && data == (void *)&cb_calls) atomic_fetch_add(&cb_calls, 1);
}

START_TEST(host_funcs_and_callbacks) {
  cudaStream_t s;
  CK_CUDA(cudaStreamCreate(&s));
  CK_CUDA(cudaStreamAddCallback(s, stream_cb, &cb_calls, 0));
  CK_CUDA(cudaStreamSynchronize(s));
  ck_assert_int_eq(atomic_load(&cb_calls), 1);
  ck_assert_ptr_eq(cb_stream_seen, s);
  ck_assert_int_eq(cudaStreamAddCallback(s, stream_cb, NULL, 1), cudaErrorInvalidValue);
  ck_assert_int_eq(cudaLaunchHostFunc(s, NULL, NULL), cudaErrorInvalidValue);
}
END_TEST

int main(void) {
  Suite *s = suite_create("sim.cudart.stream");
  TCase *tc = tcase_create("stream");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, fifo_order_mixed_items);
  tcase_add_test(tc, streams_run_concurrently_with_each_other_and_host);
  tcase_add_test(tc, legacy_default_stream_waits_for_blocking_streams);
  tcase_add_test(tc, blocking_stream_waits_for_legacy_default_stream);
  tcase_add_test(tc, non_blocking_streams_are_exempt);
  tcase_add_test(tc, per_thread_default_stream);
  tcase_add_test(tc, per_thread_streams_are_per_thread);
  tcase_add_test(tc, priorities_and_attributes);
  tcase_add_test(tc, destroy_with_pending_work_completes_it);
  tcase_add_test(tc, many_streams_created_and_destroyed);
  tcase_add_test(tc, device_synchronize_covers_all_streams_of_the_device);
  tcase_add_test(tc, host_funcs_and_callbacks);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
