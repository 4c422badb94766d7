/* test_resolve.c - Check suite for shim/resolve.c: the lazy, thread-safe
 * chain that finds the real NCCL / CUDA runtime functions.
 *
 * This program links resolve.c directly (not the preloaded library) and
 * loads fake libraries (tests/e2e/shim_fake_*.c) with dlopen(RTLD_LOCAL),
 * so dlsym(RTLD_NEXT) cannot see them - the Python-extension case. Each
 * test runs in its own forked process (Check's default), so every test
 * starts with empty slots and nothing loaded. The fakes return values no
 * real library would (4242, 7) so a test knows where a call landed.
 */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "intercept.h"

/* ---- the runtime hook resolve.c reports through ---------------------- */

static atomic_int unresolved_calls;
static char unresolved_sym[64], unresolved_lib[64];

void a2a_rt_unresolved(const char *symbol, const char *library)
{
  atomic_fetch_add(&unresolved_calls, 1);
  snprintf(unresolved_sym, sizeof unresolved_sym, "%s", symbol);
  snprintf(unresolved_lib, sizeof unresolved_lib, "%s", library);
  errno = EIO; /* resolve.c must hide this from the caller */
}

static void *load_local(const char *path)
{
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  ck_assert_msg(h != NULL, "dlopen(%s): %s", path, dlerror());
  /* RTLD_LOCAL really hides it from the global scope. */
  ck_assert_ptr_null(dlsym(RTLD_DEFAULT, "pncclSend"));
  return h;
}

/* ---- tests ----------------------------------------------------------- */

START_TEST(unresolved_returns_library_error_and_reports_once)
{
  int v = -1;
  errno = 77;
  ck_assert_int_eq(A2A_REAL(ncclGetVersion)(&v), ncclInternalError);
  ck_assert_int_eq(errno, 77);
  ck_assert_int_eq(v, -1);
  ck_assert_int_eq(A2A_REAL(ncclGetVersion)(&v), ncclInternalError);
  ck_assert_int_eq(atomic_load(&unresolved_calls), 1);
  ck_assert_str_eq(unresolved_sym, "ncclGetVersion");
  ck_assert_str_eq(unresolved_lib, "libnccl.so.2");
  ck_assert_str_eq(a2a_real_how(A2A_SYM_ncclGetVersion), "unresolved");
  ck_assert(!A2A_HAVE_REAL(ncclGetVersion));

  ck_assert_int_eq(A2A_REAL(cudaGetDeviceCount)(&v), cudaErrorSharedObjectSymbolNotFound);
  ck_assert_str_eq(A2A_REAL(ncclGetErrorString)(ncclSuccess), A2A_UNRESOLVED_STRING);
}
END_TEST

START_TEST(found_is_a_silent_cheap_probe)
{
  /* The tool's own optional use of a function (a static-cudart program has
   * no libcudart to ask): A2A_FOUND says no without reporting anything and
   * without re-running the chain on every call; once the application's
   * own call through the fallback found the library, it says yes. */
  ck_assert(!A2A_FOUND(cudaGetDeviceCount));
  ck_assert(!A2A_FOUND(cudaGetDeviceCount));
  ck_assert_int_eq(atomic_load(&unresolved_calls), 0);
  load_local(A2A_FAKE_CUDART);
  int n = -1;
  ck_assert_int_eq(A2A_REAL(cudaGetDeviceCount)(&n), cudaSuccess);
  ck_assert(A2A_FOUND(cudaGetDeviceCount));
  ck_assert_int_eq(atomic_load(&unresolved_calls), 0);
}
END_TEST

START_TEST(scan_finds_local_library_under_other_soname)
{
  load_local(A2A_FAKE_NCCL_SCAN);
  int v = -1;
  ck_assert_int_eq(A2A_REAL(ncclGetVersion)(&v), ncclSuccess);
  ck_assert_int_eq(v, 4242); /* the pncclGetVersion alias, not ncclGetVersion (1111) */
  ck_assert_str_eq(a2a_real_how(A2A_SYM_ncclGetVersion), "phdr-scan");
  ck_assert(A2A_HAVE_REAL(ncclGetVersion));
  ck_assert_int_eq(atomic_load(&unresolved_calls), 0);
}
END_TEST

START_TEST(noload_finds_local_library_by_soname)
{
  load_local(A2A_FAKE_NCCL_SONAME);
  int v = -1;
  ck_assert_int_eq(A2A_REAL(ncclGetVersion)(&v), ncclSuccess);
  ck_assert_int_eq(v, 4242);
  ck_assert_str_eq(a2a_real_how(A2A_SYM_ncclGetVersion), "dlopen-noload");
  ck_assert_int_eq(A2A_REAL(ncclSend)(NULL, 0, ncclInt8, 0, (ncclComm_t)&v, NULL), ncclSuccess);
  ck_assert_int_eq(A2A_REAL(ncclSend)(NULL, 0, ncclInt8, 0, NULL, NULL), ncclInvalidArgument);
}
END_TEST

START_TEST(retry_after_library_is_loaded_later)
{
  int v = -1;
  ck_assert_int_eq(A2A_REAL(ncclGetVersion)(&v), ncclInternalError);
  ck_assert_int_eq(atomic_load(&unresolved_calls), 1);
  load_local(A2A_FAKE_NCCL_SCAN);
  ck_assert_int_eq(A2A_REAL(ncclGetVersion)(&v), ncclSuccess);
  ck_assert_int_eq(v, 4242);
  ck_assert_str_eq(a2a_real_how(A2A_SYM_ncclGetVersion), "phdr-scan");
  /* The slot now holds the real function: no more reports. */
  ck_assert_int_eq(A2A_REAL(ncclGetVersion)(&v), ncclSuccess);
  ck_assert_int_eq(atomic_load(&unresolved_calls), 1);
}
END_TEST

START_TEST(scan_requires_the_library_marker)
{
  int n = -1;
  load_local(A2A_FAKE_CUDART_DECOY);
  ck_assert_int_eq(A2A_REAL(cudaGetDeviceCount)(&n), cudaErrorSharedObjectSymbolNotFound);
  ck_assert_int_eq(n, -1);
  load_local(A2A_FAKE_CUDART);
  ck_assert_int_eq(A2A_REAL(cudaGetDeviceCount)(&n), cudaSuccess);
  ck_assert_int_eq(n, 7);
  ck_assert_str_eq(a2a_real_how(A2A_SYM_cudaGetDeviceCount), "phdr-scan");
}
END_TEST

/* Many threads resolve the same slot at once; all must see the real one. */
enum { NTHREADS = 8 };
static pthread_barrier_t start_line;

static void *racer(void *arg)
{
  int *out = arg;
  pthread_barrier_wait(&start_line);
  if (A2A_REAL(ncclGetVersion)(out) != ncclSuccess) *out = -2;
  return NULL;
}

START_TEST(concurrent_first_use)
{
  load_local(A2A_FAKE_NCCL_SCAN);
  pthread_t th[NTHREADS];
  int got[NTHREADS];
  pthread_barrier_init(&start_line, NULL, NTHREADS);
  for (int i = 0; i < NTHREADS; i++) {
    got[i] = -1;
    ck_assert_int_eq(pthread_create(&th[i], NULL, racer, &got[i]), 0);
  }
  for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < NTHREADS; i++) ck_assert_int_eq(got[i], 4242);
  pthread_barrier_destroy(&start_line);
}
END_TEST

START_TEST(table_introspection)
{
  ck_assert_str_eq(a2a_sym_name(A2A_SYM_ncclAlltoAll), "ncclAlltoAll");
  ck_assert_int_eq(a2a_sym_lib(A2A_SYM_ncclAlltoAll), A2A_LIB_NCCL);
  ck_assert_str_eq(a2a_sym_name(A2A_SYM___cudaLaunchKernel_ptsz), "__cudaLaunchKernel_ptsz");
  ck_assert_int_eq(a2a_sym_lib(A2A_SYM_cudaMemcpy2DAsync_ptsz), A2A_LIB_CUDA);
  ck_assert_str_eq(a2a_real_how(A2A_SYM_ncclSend), "unresolved-yet");
}
END_TEST

static Suite *resolve_suite(void)
{
  Suite *s = suite_create("resolve");
  TCase *tc = tcase_create("chain");
  tcase_set_timeout(tc, 20);
  tcase_add_test(tc, unresolved_returns_library_error_and_reports_once);
  tcase_add_test(tc, found_is_a_silent_cheap_probe);
  tcase_add_test(tc, scan_finds_local_library_under_other_soname);
  tcase_add_test(tc, noload_finds_local_library_by_soname);
  tcase_add_test(tc, retry_after_library_is_loaded_later);
  tcase_add_test(tc, scan_requires_the_library_marker);
  tcase_add_test(tc, concurrent_first_use);
  tcase_add_test(tc, table_introspection);
  suite_add_tcase(s, tc);
  return s;
}

int main(void)
{
  SRunner *sr = srunner_create(resolve_suite());
  srunner_set_fork_status(sr, CK_FORK); /* fresh slots and no loaded fakes per test */
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
