/* cudart_kernel.c - self-tests of simulated kernels and graphs: registration,
 * argument copying at launch, every launch entry point, nvcc's hooks,
 * cudaFuncGetName/cudaFuncGetParamInfo, unregistered kernels as ordered
 * no-ops, stream capture and graph replay. */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "cudart_test.h"

/* nvcc's hooks, as compiler-generated code declares them (C++ only in the
 * headers). */
extern unsigned __cudaPushCallConfiguration(dim3, dim3, size_t, struct CUstream_st *);
extern cudaError_t __cudaPopCallConfiguration(dim3 *, dim3 *, size_t *, void *);
extern cudaError_t __cudaGetKernel(cudaKernel_t *, const void *);
extern cudaError_t __cudaLaunchKernel(cudaKernel_t, dim3, dim3, void **, size_t, cudaStream_t);
extern cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t, dim3, dim3, void **, size_t, cudaStream_t);
extern void **__cudaRegisterFatBinary(void *);
extern void __cudaRegisterFatBinaryEnd(void **);
extern void __cudaRegisterFunction(void **, const char *, char *, const char *, int, uint3 *,
                                   uint3 *, dim3 *, dim3 *, int *);
extern void __cudaUnregisterFatBinary(void **);
/* Per-thread entry points (declared by the header only in that compile mode). */
extern cudaError_t cudaLaunchKernel_ptsz(const void *, dim3, dim3, void **, size_t, cudaStream_t);
extern cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *, dim3, dim3, void **, size_t, cudaStream_t);
extern cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *, const void *, void **);

typedef struct pair { double x; char c; } pair;   /* 16 bytes, align 8 */

static void axpy(float a, float *x, int n, pair p, char flag) { (void)a; (void)x; (void)n; (void)p; (void)flag; }
static atomic_int axpy_runs;
static a2asim_launch_info last_info;
static void axpy_impl(void **args, const a2asim_launch_info *li) {
  float a = *(float *)args[0];
  float *x = *(float **)args[1];
  int n = *(int *)args[2];
  pair p = *(pair *)args[3];
  char flag = *(char *)args[4];
  for (int i = 0; i < n; i++) x[i] = a * x[i] + (float)p.x + (flag ? 1.0f : 0.0f);
  last_info = *li;
  atomic_fetch_add(&axpy_runs, 1);
}
static const size_t axpy_sizes[] = {sizeof(float), sizeof(float *), sizeof(int), sizeof(pair), sizeof(char)};

static void reg_axpy(void) {
  ck_assert_int_eq(a2asim_register_kernel((const void *)axpy, axpy_impl, "axpy", 5, axpy_sizes), 0);
}

START_TEST(register_rejects_bad_arguments) {
  ck_assert_int_eq(a2asim_register_kernel(NULL, axpy_impl, "x", 0, NULL), -1);
  ck_assert_int_eq(a2asim_register_kernel((const void *)axpy, NULL, "x", 0, NULL), -1);
  ck_assert_int_eq(a2asim_register_kernel((const void *)axpy, axpy_impl, "x", 2, NULL), -1);
  size_t zero[] = {0};
  ck_assert_int_eq(a2asim_register_kernel((const void *)axpy, axpy_impl, "x", 1, zero), -1);
}
END_TEST

START_TEST(name_and_param_info) {
  reg_axpy();
  const char *name = NULL;
  CK_CUDA(cudaFuncGetName(&name, (const void *)axpy));
  ck_assert_str_eq(name, "axpy");
  size_t off, size;
  const size_t want_off[] = {0, 8, 16, 24, 40};
  size_t i = 0;
  cudaError_t e;
  while ((e = cudaFuncGetParamInfo((const void *)axpy, i, &off, &size)) == cudaSuccess) {
    ck_assert_uint_eq(off, want_off[i]);
    ck_assert_uint_eq(size, axpy_sizes[i]);
    i++;
  }
  ck_assert_int_eq(e, cudaErrorInvalidValue);
  ck_assert_uint_eq(i, 5);
  ck_assert_int_eq(cudaFuncGetName(&name, (const void *)reg_axpy), cudaErrorInvalidDeviceFunction);
  ck_assert_int_eq(cudaFuncGetParamInfo((const void *)reg_axpy, 0, &off, &size), cudaErrorInvalidDeviceFunction);
  struct cudaFuncAttributes fa;
  CK_CUDA(cudaFuncGetAttributes(&fa, (const void *)axpy));
  ck_assert_int_eq(fa.maxThreadsPerBlock, 1024);
  ck_assert_int_eq(cudaFuncGetAttributes(&fa, (const void *)reg_axpy), cudaErrorInvalidDeviceFunction);
}
END_TEST

START_TEST(launch_copies_arguments_at_launch_time) {
  reg_axpy();
  cudaStream_t s;
  CK_CUDA(cudaStreamCreate(&s));
  float *x;
  CK_CUDA(cudaMallocManaged((void **)&x, 4 * sizeof(float), cudaMemAttachGlobal));
  for (int i = 0; i < 4; i++) x[i] = (float)i;
  ck_assert_int_eq(a2asim_stream_set_delay(s, 100000), 0);
  float a = 2.0f;
  int n = 4;
  pair p = {0.5, 'q'};
  char flag = 1;
  void *args[] = {&a, &x, &n, &p, &flag};
  dim3 g = {2, 3, 1}, b = {32, 4, 1};
  CK_CUDA(cudaLaunchKernel((const void *)axpy, g, b, args, 128, s));
  a = 100.0f;          /* must not affect the queued launch */
  n = 0;
  CK_CUDA(cudaStreamSynchronize(s));
  for (int i = 0; i < 4; i++) ck_assert_float_eq(x[i], 2.0f * (float)i + 1.5f);
  ck_assert_uint_eq(last_info.grid[1], 3);
  ck_assert_uint_eq(last_info.block[1], 4);
  ck_assert_uint_eq(last_info.shared_mem, 128);
  ck_assert_ptr_eq(last_info.stream, s);
  ck_assert_ptr_eq(last_info.func, (const void *)axpy);
  ck_assert_str_eq(last_info.name, "axpy");
  ck_assert_int_eq(last_info.cooperative, 0);
}
END_TEST

START_TEST(all_entry_points_launch) {
  reg_axpy();
  float *x;
  CK_CUDA(cudaMallocManaged((void **)&x, sizeof(float), cudaMemAttachGlobal));
  *x = 0;
  float a = 1.0f;
  int n = 1;
  pair p = {1.0, 0};
  char flag = 0;
  void *args[] = {&a, &x, &n, &p, &flag};
  dim3 g = {1, 1, 1};
  cudaStream_t s;
  CK_CUDA(cudaStreamCreate(&s));
  CK_CUDA(cudaLaunchKernel((const void *)axpy, g, g, args, 0, s));
  CK_CUDA(cudaLaunchKernel_ptsz((const void *)axpy, g, g, args, 0, s));
  CK_CUDA(cudaLaunchCooperativeKernel((const void *)axpy, g, g, args, 0, s));
  CK_CUDA(cudaLaunchCooperativeKernel_ptsz((const void *)axpy, g, g, args, 0, s));
  cudaLaunchConfig_t cfg = {.gridDim = g, .blockDim = g, .dynamicSmemBytes = 0, .stream = s};
  CK_CUDA(cudaLaunchKernelExC(&cfg, (const void *)axpy, args));
  CK_CUDA(cudaLaunchKernelExC_ptsz(&cfg, (const void *)axpy, args));
  /* What nvcc 13 emits for axpy<<<g, g, 0, s>>>(...). */
  cudaKernel_t k = NULL;
  CK_CUDA(__cudaGetKernel(&k, (const void *)axpy));
  ck_assert_uint_eq(__cudaPushCallConfiguration(g, g, 0, s), 0);
  dim3 gg, bb;
  size_t shm;
  cudaStream_t st;
  CK_CUDA(__cudaPopCallConfiguration(&gg, &bb, &shm, &st));
  ck_assert_ptr_eq(st, s);
  CK_CUDA(__cudaLaunchKernel(k, gg, bb, args, shm, st));
  CK_CUDA(__cudaLaunchKernel_ptsz(k, gg, bb, args, shm, st));
  ck_assert_int_eq(__cudaPopCallConfiguration(&gg, &bb, &shm, &st), cudaErrorMissingConfiguration);
  CK_CUDA(cudaStreamSynchronize(s));
  ck_assert_int_eq(atomic_load(&axpy_runs), 8);
  ck_assert_float_eq(*x, 8.0f);
  ck_assert_int_eq(last_info.cooperative, 0);
  dim3 zero = {0, 1, 1}, big = {2048, 1, 1};
  ck_assert_int_eq(cudaLaunchKernel((const void *)axpy, zero, g, args, 0, s), cudaErrorInvalidConfiguration);
  ck_assert_int_eq(cudaLaunchKernel((const void *)axpy, g, big, args, 0, s), cudaErrorInvalidConfiguration);
  ck_assert_int_eq(cudaLaunchKernel(NULL, g, g, args, 0, s), cudaErrorInvalidDeviceFunction);
}
END_TEST

static void unregistered(void) {}
static atomic_int order_probe;
static void after_fn(void *p) { atomic_store(&order_probe, 1); }

START_TEST(unregistered_kernel_is_ordered_noop) {
  cudaStream_t s;
  CK_CUDA(cudaStreamCreate(&s));
  int gate = 0;
  CK_CUDA(cudaLaunchHostFunc(s, test_gate_fn, &gate));
  dim3 g = {1, 1, 1};
  CK_CUDA(cudaLaunchKernel((const void *)unregistered, g, g, NULL, 0, s));
  CK_CUDA(cudaLaunchHostFunc(s, after_fn, NULL));
  ck_assert_int_eq(cudaStreamQuery(s), cudaErrorNotReady);
  ck_assert_int_eq(atomic_load(&order_probe), 0);
  test_gate_open(&gate);
  CK_CUDA(cudaStreamSynchronize(s));
  ck_assert_int_eq(atomic_load(&order_probe), 1);
}
END_TEST

START_TEST(nvcc_registration_hooks) {
  void **h = __cudaRegisterFatBinary(NULL);
  ck_assert_ptr_nonnull(h);
  __cudaRegisterFunction(h, (const char *)unregistered, (char *)"_Z12unregisteredv",
                         "_Z12unregisteredv", -1, NULL, NULL, NULL, NULL, NULL);
  __cudaRegisterFatBinaryEnd(h);
  const char *name;
  CK_CUDA(cudaFuncGetName(&name, (const void *)unregistered));
  ck_assert_str_eq(name, "_Z12unregisteredv");
  size_t off, sz;
  ck_assert_int_eq(cudaFuncGetParamInfo((const void *)unregistered, 0, &off, &sz), cudaErrorNotSupported);
  dim3 g = {1, 1, 1};
  CK_CUDA(cudaLaunchKernel((const void *)unregistered, g, g, NULL, 0, NULL));
  CK_CUDA(cudaDeviceSynchronize());
  __cudaUnregisterFatBinary(h);
}
END_TEST

static atomic_int host_node_runs;
static void host_node(void *p) { atomic_fetch_add(&host_node_runs, 1); }

START_TEST(capture_and_replay) {
  reg_axpy();
  cudaStream_t s;
  CK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float *x;
  CK_CUDA(cudaMalloc((void **)&x, sizeof(float)));
  float one = 1.0f, out = 0;
  CK_CUDA(cudaMemcpy(x, &one, sizeof one, cudaMemcpyHostToDevice));
  float a = 2.0f;
  int n = 1;
  pair p = {0.0, 0};
  char flag = 0;
  void *args[] = {&a, &x, &n, &p, &flag};
  dim3 g = {1, 1, 1};
  CK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  enum cudaStreamCaptureStatus st;
  CK_CUDA(cudaStreamIsCapturing(s, &st));
  ck_assert_int_eq(st, cudaStreamCaptureStatusActive);
  CK_CUDA(cudaLaunchKernel((const void *)axpy, g, g, args, 0, s));  /* x *= 2 */
  CK_CUDA(cudaLaunchHostFunc(s, host_node, NULL));
  a = 3.0f;   /* captured arguments are the bytes at capture time */
  ck_assert_int_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaErrorIllegalState);
  cudaGraph_t graph;
  CK_CUDA(cudaStreamEndCapture(s, &graph));
  CK_CUDA(cudaStreamIsCapturing(s, &st));
  ck_assert_int_eq(st, cudaStreamCaptureStatusNone);
  CK_CUDA(cudaStreamSynchronize(s));
  ck_assert_int_eq(atomic_load(&axpy_runs), 0);   /* captured, not executed */
  cudaGraphExec_t exec;
  CK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  CK_CUDA(cudaGraphDestroy(graph));
  for (int i = 0; i < 3; i++) CK_CUDA(cudaGraphLaunch(exec, s));
  CK_CUDA(cudaMemcpyAsync(&out, x, sizeof out, cudaMemcpyDeviceToHost, s));
  CK_CUDA(cudaStreamSynchronize(s));
  ck_assert_float_eq(out, 8.0f);
  ck_assert_int_eq(atomic_load(&host_node_runs), 3);
  CK_CUDA(cudaGraphExecDestroy(exec));
  /* Capturing the legacy stream, or syncing a capturing stream, fails. */
  ck_assert_int_eq(cudaStreamBeginCapture(NULL, cudaStreamCaptureModeGlobal), cudaErrorStreamCaptureUnsupported);
  CK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
  ck_assert_int_eq(cudaStreamSynchronize(s), cudaErrorStreamCaptureUnsupported);
  ck_assert_int_eq(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
  ck_assert_ptr_null(graph);
  ck_assert_int_eq(cudaStreamEndCapture(s, &graph), cudaErrorIllegalState);
}
END_TEST

int main(void) {
  Suite *s = suite_create("sim.cudart.kernel");
  TCase *tc = tcase_create("kernel");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, register_rejects_bad_arguments);
  tcase_add_test(tc, name_and_param_info);
  tcase_add_test(tc, launch_copies_arguments_at_launch_time);
  tcase_add_test(tc, all_entry_points_launch);
  tcase_add_test(tc, unregistered_kernel_is_ordered_noop);
  tcase_add_test(tc, nvcc_registration_hooks);
  tcase_add_test(tc, capture_and_replay);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
