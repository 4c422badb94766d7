/* cudart_unimpl.c - the unimplemented-kernel policy: a launch of a kernel
 * with no host implementation (never registered, or registered by nvcc's
 * hooks with a name only) is reported once per kernel on stderr and takes its
 * place in the stream without running; with A2ASIM_UNIMPLEMENTED_KERNELS=fail
 * it is refused with cudaErrorNoKernelImageForDevice. Each test runs in its
 * own process (Check's fork mode), so each reads the knob afresh. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cudart_test.h"

/* nvcc's hooks (no public header declares them for C). */
extern void **__cudaRegisterFatBinary(void *);
extern void __cudaRegisterFatBinaryEnd(void **);
extern void __cudaRegisterFunction(void **, const char *, char *, const char *, int, uint3 *,
                                   uint3 *, dim3 *, dim3 *, int *);
extern cudaError_t __cudaLaunchKernel(cudaKernel_t, dim3, dim3, void **, size_t, cudaStream_t);

static void never_registered(void) {}
static void nvcc_kernel(void) {}
static void implemented(void) {}
static int impl_runs;
static void implemented_impl(void **args, const a2asim_launch_info *li) { impl_runs++; }

/* stderr is redirected into a temporary file for the duration of a test. */
static FILE *capture;
static int saved_stderr = -1;

static void capture_begin(void) {
  capture = tmpfile();
  ck_assert_ptr_nonnull(capture);
  fflush(stderr);
  saved_stderr = dup(2);
  dup2(fileno(capture), 2);
}

/* Returns what was written to stderr (static buffer). */
static const char *capture_end(void) {
  static char buf[4096];
  fflush(stderr);
  dup2(saved_stderr, 2);
  close(saved_stderr);
  rewind(capture);
  size_t n = fread(buf, 1, sizeof buf - 1, capture);
  buf[n] = 0;
  fclose(capture);
  return buf;
}

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

static void register_nvcc_kernel(void) {
  void **h = __cudaRegisterFatBinary(NULL);
  __cudaRegisterFunction(h, (const char *)nvcc_kernel, (char *)"_Z11nvcc_kernelv", "_Z11nvcc_kernelv",
                         -1, NULL, NULL, NULL, NULL, NULL);
  __cudaRegisterFatBinaryEnd(h);
}

START_TEST(warns_once_per_kernel_and_keeps_stream_order) {
  register_nvcc_kernel();
  static const size_t no_params[1];
  ck_assert_int_eq(a2asim_register_kernel((const void *)implemented, implemented_impl, "implemented", 0,
                                          no_params), 0);
  dim3 g = {1, 1, 1};
  char self[64];
  snprintf(self, sizeof self, "kernel %p has no host implementation; not executed",
           (const void *)never_registered);
  capture_begin();
  for (int i = 0; i < 3; i++) {
    CK_CUDA(cudaLaunchKernel((const void *)never_registered, g, g, NULL, 0, NULL));
    CK_CUDA(cudaLaunchKernel((const void *)nvcc_kernel, g, g, NULL, 0, NULL));
    CK_CUDA(cudaLaunchKernel((const void *)implemented, g, g, NULL, 0, NULL));
  }
  CK_CUDA(cudaDeviceSynchronize());
  const char *err = capture_end();
  ck_assert_int_eq(count(err, "a2asim: kernel _Z11nvcc_kernelv has no host implementation; not executed\n"), 1);
  ck_assert_msg(count(err, self) == 1, "stderr: %s", err);
  ck_assert_int_eq(count(err, "a2asim:"), 2);
  ck_assert_int_eq(impl_runs, 3);
  ck_assert_int_eq(cudaGetLastError(), cudaSuccess);
}
END_TEST

START_TEST(fail_mode_refuses_the_launch) {
  setenv("A2ASIM_UNIMPLEMENTED_KERNELS", "fail", 1);
  register_nvcc_kernel();
  static const size_t no_params[1];
  a2asim_register_kernel((const void *)implemented, implemented_impl, "implemented", 0, no_params);
  dim3 g = {1, 1, 1};
  cudaStream_t s;
  CK_CUDA(cudaStreamCreate(&s));
  capture_begin();
  ck_assert_int_eq(cudaLaunchKernel((const void *)nvcc_kernel, g, g, NULL, 0, s),
                   cudaErrorNoKernelImageForDevice);
  ck_assert_int_eq(cudaGetLastError(), cudaErrorNoKernelImageForDevice);
  ck_assert_int_eq(cudaLaunchKernel((const void *)never_registered, g, g, NULL, 0, s),
                   cudaErrorNoKernelImageForDevice);
  ck_assert_int_eq(__cudaLaunchKernel((cudaKernel_t)(const void *)nvcc_kernel, g, g, NULL, 0, s),
                   cudaErrorNoKernelImageForDevice);
  cudaGetLastError();
  /* Not sticky: the stream and implemented kernels still work. */
  CK_CUDA(cudaLaunchKernel((const void *)implemented, g, g, NULL, 0, s));
  CK_CUDA(cudaStreamSynchronize(s));
  const char *err = capture_end();
  ck_assert_int_eq(impl_runs, 1);
  ck_assert_int_eq(count(err, "a2asim: kernel _Z11nvcc_kernelv has no host implementation; launch refused "
                              "(A2ASIM_UNIMPLEMENTED_KERNELS=fail)\n"), 1);
  ck_assert_int_eq(count(err, "a2asim:"), 2);
}
END_TEST

START_TEST(bad_knob_value_keeps_warn) {
  setenv("A2ASIM_UNIMPLEMENTED_KERNELS", "Fail ", 1);
  dim3 g = {1, 1, 1};
  capture_begin();
  CK_CUDA(cudaLaunchKernel((const void *)never_registered, g, g, NULL, 0, NULL));
  CK_CUDA(cudaDeviceSynchronize());
  const char *err = capture_end();
  ck_assert_msg(strstr(err, "a2asim: ignoring A2ASIM_UNIMPLEMENTED_KERNELS=\"Fail \" (not warn or fail); "
                            "using the default") != NULL, "stderr: %s", err);
  ck_assert_ptr_nonnull(strstr(err, "not executed"));
}
END_TEST

int main(void) {
  unsetenv("A2ASIM_UNIMPLEMENTED_KERNELS");
  Suite *s = suite_create("sim.cudart.unimpl");
  TCase *tc = tcase_create("unimpl");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, warns_once_per_kernel_and_keeps_stream_order);
  tcase_add_test(tc, fail_mode_refuses_the_launch);
  tcase_add_test(tc, bad_knob_value_keeps_warn);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
