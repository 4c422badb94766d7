/* cudart_capture.c - self-tests of multi-stream (fork/join) stream capture
 * and of user objects: a stream joined to a capture through a capture event
 * records into the same graph and is replayed in order with the right data;
 * ending a capture with an unjoined fork fails; the cross-capture and
 * capture-boundary errors; user objects are destroyed when their last
 * reference goes, including the references of graphs and execs. */
#include <stdatomic.h>
#include <string.h>

#include "cudart_test.h"

static char order_log[64];
static atomic_int order_n;
static void log_fn(void *p) {
  int i = atomic_fetch_add(&order_n, 1);
  if (i < (int)sizeof order_log - 1) order_log[i] = *(const char *)p;
}

START_TEST(fork_join_replay) {
  cudaStream_t s1, s2;
  CK_CUDA(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CK_CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t fork, join;
  CK_CUDA(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CK_CUDA(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  enum { N = 64 };
  unsigned char *x, *y, *z, out[N];
  CK_CUDA(cudaMalloc((void **)&x, N));
  CK_CUDA(cudaMalloc((void **)&y, N));
  CK_CUDA(cudaMalloc((void **)&z, N));
  CK_CUDA(cudaMemset(x, 0, N));
  CK_CUDA(cudaMemset(y, 0, N));
  CK_CUDA(cudaMemset(z, 0, N));
  static const char A = 'A', B = 'B', C = 'C';

  CK_CUDA(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  CK_CUDA(cudaLaunchHostFunc(s1, log_fn, (void *)&A));
  CK_CUDA(cudaMemsetAsync(x, 7, N, s1));
  CK_CUDA(cudaEventRecord(fork, s1));
  /* Fork: s2 joins s1's capture. */
  CK_CUDA(cudaStreamWaitEvent(s2, fork, 0));
  enum cudaStreamCaptureStatus st;
  unsigned long long id1 = 0, id2 = 0;
  cudaGraph_t cg1 = NULL, cg2 = NULL;
  CK_CUDA(cudaStreamIsCapturing(s2, &st));
  ck_assert_int_eq(st, cudaStreamCaptureStatusActive);
  CK_CUDA(cudaStreamGetCaptureInfo(s1, &st, &id1, &cg1, NULL, NULL, NULL));
  CK_CUDA(cudaStreamGetCaptureInfo(s2, &st, &id2, &cg2, NULL, NULL, NULL));
  ck_assert_int_eq(st, cudaStreamCaptureStatusActive);
  ck_assert_uint_eq(id1, id2);
  ck_assert_ptr_nonnull(cg1);
  ck_assert_ptr_eq(cg1, cg2);
  CK_CUDA(cudaLaunchHostFunc(s2, log_fn, (void *)&B));
  CK_CUDA(cudaMemcpyAsync(y, x, N, cudaMemcpyDeviceToDevice, s2));
  CK_CUDA(cudaEventRecord(join, s2));
  /* Join: s1 depends on everything s2 issued. */
  CK_CUDA(cudaStreamWaitEvent(s1, join, 0));
  CK_CUDA(cudaLaunchHostFunc(s1, log_fn, (void *)&C));
  CK_CUDA(cudaMemcpyAsync(z, y, N, cudaMemcpyDeviceToDevice, s1));
  /* Capture events stand for no work of their own. */
  ck_assert_int_eq(cudaEventQuery(join), cudaErrorCapturedEvent);
  /* Only the origin ends the capture. */
  cudaGraph_t g = NULL;
  CK_CUDA(cudaStreamEndCapture(s1, &g));
  ck_assert_ptr_nonnull(g);
  CK_CUDA(cudaStreamIsCapturing(s2, &st));
  ck_assert_int_eq(st, cudaStreamCaptureStatusNone);
  CK_CUDA(cudaStreamIsCapturing(s1, &st));
  ck_assert_int_eq(st, cudaStreamCaptureStatusNone);
  CK_CUDA(cudaDeviceSynchronize());
  ck_assert_int_eq(atomic_load(&order_n), 0);   /* captured, not executed */
  size_t nn = 0;
  CK_CUDA(cudaGraphGetNodes(g, NULL, &nn));
  ck_assert_uint_eq(nn, 6);   /* 3 host functions, a memset, 2 copies; no event nodes */
  cudaGraphExec_t exec;
  CK_CUDA(cudaGraphInstantiateWithFlags(&exec, g, cudaGraphInstantiateFlagAutoFreeOnLaunch));
  CK_CUDA(cudaGraphDestroy(g));
  CK_CUDA(cudaGraphUpload(exec, s1));
  for (int i = 0; i < 2; i++) CK_CUDA(cudaGraphLaunch(exec, s1));
  CK_CUDA(cudaMemcpyAsync(out, z, N, cudaMemcpyDeviceToHost, s1));
  CK_CUDA(cudaStreamSynchronize(s1));
  order_log[atomic_load(&order_n)] = 0;
  ck_assert_str_eq(order_log, "ABCABC");
  for (int i = 0; i < N; i++) ck_assert_uint_eq(out[i], 7);
  /* s2 is an ordinary stream again. */
  CK_CUDA(cudaMemsetAsync(x, 1, N, s2));
  CK_CUDA(cudaStreamSynchronize(s2));
  CK_CUDA(cudaGraphExecDestroy(exec));
  CK_CUDA(cudaEventDestroy(fork));
  CK_CUDA(cudaEventDestroy(join));
  CK_CUDA(cudaStreamDestroy(s1));
  CK_CUDA(cudaStreamDestroy(s2));
}
END_TEST

static void nop_fn(void *p) { (void)p; }

START_TEST(unjoined_fork_fails) {
  cudaStream_t s1, s2;
  CK_CUDA(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CK_CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t e1, e2;
  CK_CUDA(cudaEventCreate(&e1));
  CK_CUDA(cudaEventCreate(&e2));
  cudaGraph_t g = (cudaGraph_t)1;
  enum cudaStreamCaptureStatus st;
  /* Work on the forked stream, never joined back. */
  CK_CUDA(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  CK_CUDA(cudaEventRecord(e1, s1));
  CK_CUDA(cudaStreamWaitEvent(s2, e1, 0));
  CK_CUDA(cudaLaunchHostFunc(s2, nop_fn, NULL));
  ck_assert_int_eq(cudaStreamEndCapture(s1, &g), cudaErrorStreamCaptureUnjoined);
  ck_assert_ptr_null(g);
  CK_CUDA(cudaStreamIsCapturing(s1, &st));
  ck_assert_int_eq(st, cudaStreamCaptureStatusNone);
  CK_CUDA(cudaStreamIsCapturing(s2, &st));
  ck_assert_int_eq(st, cudaStreamCaptureStatusNone);
  /* Joined before the last work on s2: still unjoined. */
  CK_CUDA(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  CK_CUDA(cudaEventRecord(e1, s1));
  CK_CUDA(cudaStreamWaitEvent(s2, e1, 0));
  CK_CUDA(cudaLaunchHostFunc(s2, nop_fn, NULL));
  CK_CUDA(cudaEventRecord(e2, s2));
  CK_CUDA(cudaLaunchHostFunc(s2, nop_fn, NULL));
  CK_CUDA(cudaStreamWaitEvent(s1, e2, 0));
  ck_assert_int_eq(cudaStreamEndCapture(s1, &g), cudaErrorStreamCaptureUnjoined);
  /* Joined through a third stream: the origin depends on all of s2's work. */
  cudaStream_t s3;
  CK_CUDA(cudaStreamCreateWithFlags(&s3, cudaStreamNonBlocking));
  CK_CUDA(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  CK_CUDA(cudaEventRecord(e1, s1));
  CK_CUDA(cudaStreamWaitEvent(s2, e1, 0));
  CK_CUDA(cudaLaunchHostFunc(s2, nop_fn, NULL));
  CK_CUDA(cudaEventRecord(e2, s2));
  CK_CUDA(cudaStreamWaitEvent(s3, e2, 0));
  CK_CUDA(cudaLaunchHostFunc(s3, nop_fn, NULL));
  CK_CUDA(cudaEventRecord(e2, s3));
  CK_CUDA(cudaStreamWaitEvent(s1, e2, 0));
  CK_CUDA(cudaStreamEndCapture(s1, &g));
  CK_CUDA(cudaGraphDestroy(g));
  /* A fork with no work of its own is joined by construction. */
  CK_CUDA(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  CK_CUDA(cudaEventRecord(e1, s1));
  CK_CUDA(cudaStreamWaitEvent(s2, e1, 0));
  CK_CUDA(cudaStreamEndCapture(s1, &g));
  CK_CUDA(cudaGraphDestroy(g));
  CK_CUDA(cudaStreamDestroy(s3));
  CK_CUDA(cudaStreamDestroy(s1));
  CK_CUDA(cudaStreamDestroy(s2));
}
END_TEST

START_TEST(capture_rules) {
  cudaStream_t s1, s2, s3;
  CK_CUDA(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CK_CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CK_CUDA(cudaStreamCreateWithFlags(&s3, cudaStreamNonBlocking));
  cudaEvent_t e1, e2;
  CK_CUDA(cudaEventCreate(&e1));
  CK_CUDA(cudaEventCreate(&e2));
  cudaGraph_t g;
  /* Ending on a joined stream that did not begin the capture. */
  CK_CUDA(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  CK_CUDA(cudaEventRecord(e1, s1));
  CK_CUDA(cudaStreamWaitEvent(s2, e1, 0));
  ck_assert_int_eq(cudaStreamEndCapture(s2, &g), cudaErrorStreamCaptureUnmatched);
  ck_assert_int_eq(cudaStreamEndCapture(s1, &g), cudaErrorStreamCaptureInvalidated);
  /* Synchronizing a joined stream invalidates the whole capture. */
  CK_CUDA(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  CK_CUDA(cudaEventRecord(e1, s1));
  CK_CUDA(cudaStreamWaitEvent(s2, e1, 0));
  ck_assert_int_eq(cudaStreamSynchronize(s2), cudaErrorStreamCaptureUnsupported);
  enum cudaStreamCaptureStatus st;
  CK_CUDA(cudaStreamIsCapturing(s1, &st));
  ck_assert_int_eq(st, cudaStreamCaptureStatusInvalidated);
  ck_assert_int_eq(cudaStreamEndCapture(s1, &g), cudaErrorStreamCaptureInvalidated);
  CK_CUDA(cudaStreamIsCapturing(s2, &st));
  ck_assert_int_eq(st, cudaStreamCaptureStatusNone);
  /* A capturing stream waiting on an event recorded outside the capture
   * crosses the capture boundary. */
  CK_CUDA(cudaEventRecord(e2, s3));
  CK_CUDA(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  ck_assert_int_eq(cudaStreamWaitEvent(s1, e2, 0), cudaErrorStreamCaptureIsolation);
  ck_assert_int_eq(cudaStreamEndCapture(s1, &g), cudaErrorStreamCaptureInvalidated);
  /* ... unless it asks for an external event wait node. */
  CK_CUDA(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  CK_CUDA(cudaStreamWaitEvent(s1, e2, cudaEventWaitExternal));
  CK_CUDA(cudaStreamEndCapture(s1, &g));
  CK_CUDA(cudaGraphDestroy(g));
  /* Waiting, in one capture, on an event of another merges two captures. */
  CK_CUDA(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  CK_CUDA(cudaStreamBeginCapture(s2, cudaStreamCaptureModeGlobal));
  CK_CUDA(cudaEventRecord(e1, s1));
  ck_assert_int_eq(cudaStreamWaitEvent(s2, e1, 0), cudaErrorStreamCaptureMerge);
  ck_assert_int_eq(cudaStreamEndCapture(s2, &g), cudaErrorStreamCaptureInvalidated);
  CK_CUDA(cudaStreamEndCapture(s1, &g));
  CK_CUDA(cudaGraphDestroy(g));
  /* The legacy stream cannot join a capture. */
  CK_CUDA(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  CK_CUDA(cudaEventRecord(e1, s1));
  ck_assert_int_eq(cudaStreamWaitEvent(cudaStreamLegacy, e1, 0), cudaErrorStreamCaptureUnsupported);
  ck_assert_int_eq(cudaStreamEndCapture(s1, &g), cudaErrorStreamCaptureInvalidated);
  CK_CUDA(cudaEventDestroy(e1));
  CK_CUDA(cudaEventDestroy(e2));
  CK_CUDA(cudaStreamDestroy(s1));
  CK_CUDA(cudaStreamDestroy(s2));
  CK_CUDA(cudaStreamDestroy(s3));
}
END_TEST

static atomic_int destroyed;
static void uobj_destroy(void *p) { atomic_fetch_add(&destroyed, *(int *)p); }

/* The destructor runs asynchronously: waits up to 5 s for it. */
static int destroyed_after(int want) {
  for (int i = 0; i < 5000 && atomic_load(&destroyed) != want; i++) test_sleep_ms(1);
  test_sleep_ms(20);   /* and no extra run */
  return atomic_load(&destroyed);
}

START_TEST(user_objects) {
  static int one = 1;
  cudaUserObject_t o;
  atomic_store(&destroyed, 0);
  ck_assert_int_eq(cudaUserObjectCreate(&o, &one, uobj_destroy, 1, 0), cudaErrorInvalidValue);
  ck_assert_int_eq(cudaUserObjectCreate(&o, &one, uobj_destroy, 0, cudaUserObjectNoDestructorSync),
                   cudaErrorInvalidValue);
  /* Plain references. */
  CK_CUDA(cudaUserObjectCreate(&o, &one, uobj_destroy, 1, cudaUserObjectNoDestructorSync));
  CK_CUDA(cudaUserObjectRetain(o, 2));
  CK_CUDA(cudaUserObjectRelease(o, 2));
  ck_assert_int_eq(destroyed_after(0), 0);
  CK_CUDA(cudaUserObjectRelease(o, 1));
  ck_assert_int_eq(destroyed_after(1), 1);
  /* A graph's reference (moved from the caller) outlives the caller's and
   * goes with the graph; an exec holds the graph's references. */
  cudaGraph_t g;
  cudaGraphExec_t x;
  CK_CUDA(cudaUserObjectCreate(&o, &one, uobj_destroy, 1, cudaUserObjectNoDestructorSync));
  CK_CUDA(cudaGraphCreate(&g, 0));
  CK_CUDA(cudaGraphRetainUserObject(g, o, 1, cudaGraphUserObjectMove));
  CK_CUDA(cudaGraphInstantiate(&x, g, 0));
  CK_CUDA(cudaGraphDestroy(g));
  ck_assert_int_eq(destroyed_after(1), 1);
  CK_CUDA(cudaGraphExecDestroy(x));
  ck_assert_int_eq(destroyed_after(2), 2);
  /* Retained without move, then released by the graph. */
  CK_CUDA(cudaUserObjectCreate(&o, &one, uobj_destroy, 1, cudaUserObjectNoDestructorSync));
  CK_CUDA(cudaGraphCreate(&g, 0));
  CK_CUDA(cudaGraphRetainUserObject(g, o, 2, 0));
  CK_CUDA(cudaGraphReleaseUserObject(g, o, 1));
  ck_assert_int_eq(cudaGraphReleaseUserObject(g, o, 2), cudaErrorInvalidValue);
  CK_CUDA(cudaUserObjectRelease(o, 1));
  ck_assert_int_eq(destroyed_after(2), 2);
  CK_CUDA(cudaGraphReleaseUserObject(g, o, 1));
  ck_assert_int_eq(destroyed_after(3), 3);
  CK_CUDA(cudaGraphDestroy(g));
  /* As PyTorch does: retained on the graph being captured (from
   * cudaStreamGetCaptureInfo), released when the captured graph goes. */
  cudaStream_t s;
  CK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK_CUDA(cudaUserObjectCreate(&o, &one, uobj_destroy, 1, cudaUserObjectNoDestructorSync));
  CK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  enum cudaStreamCaptureStatus st;
  cudaGraph_t cg = NULL;
  CK_CUDA(cudaStreamGetCaptureInfo(s, &st, NULL, &cg, NULL, NULL, NULL));
  ck_assert_ptr_nonnull(cg);
  CK_CUDA(cudaGraphRetainUserObject(cg, o, 1, cudaGraphUserObjectMove));
  CK_CUDA(cudaStreamEndCapture(s, &g));
  ck_assert_ptr_eq(g, cg);
  ck_assert_int_eq(destroyed_after(3), 3);
  CK_CUDA(cudaGraphDestroy(g));
  ck_assert_int_eq(destroyed_after(4), 4);
  /* An invalidated capture's graph goes at end capture, with its references. */
  CK_CUDA(cudaUserObjectCreate(&o, &one, uobj_destroy, 1, cudaUserObjectNoDestructorSync));
  CK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CK_CUDA(cudaStreamGetCaptureInfo(s, &st, NULL, &cg, NULL, NULL, NULL));
  CK_CUDA(cudaGraphRetainUserObject(cg, o, 1, cudaGraphUserObjectMove));
  ck_assert_int_eq(cudaStreamSynchronize(s), cudaErrorStreamCaptureUnsupported);
  ck_assert_int_eq(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
  ck_assert_int_eq(destroyed_after(5), 5);
  CK_CUDA(cudaStreamDestroy(s));
}
END_TEST

int main(void) {
  Suite *s = suite_create("sim.cudart.capture");
  TCase *tc = tcase_create("capture");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, fork_join_replay);
  tcase_add_test(tc, unjoined_fork_fails);
  tcase_add_test(tc, capture_rules);
  tcase_add_test(tc, user_objects);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
