/* test_pyframe.c - the pure half of Python call sites (shim/rt_pyframe.c,
 * compiled in): which frames are library code, the folding plan, frame and
 * fold text, fitting a site into the cross-rank channel's 120 bytes, the
 * CPython layout tables, PEP 393 strings, and the C++ name demangling
 * fallback and shortener. The layouts are checked against real CPython
 * headers by tests/py/layout_check.c; the process side by tests/py. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../../shim/rt_pyframe.c"

/* ---- classification ---- */

static int cls_of(const char *path, char *lib) { return a2a_rt_py_classify(path, lib, 32); }

START_TEST(classify_paths) {
  char lib[32];
  ck_assert_int_eq(cls_of("/v/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", lib),
                   A2A_PY_LIB);
  ck_assert_str_eq(lib, "torch");
  ck_assert_int_eq(cls_of("/usr/lib/python3/dist-packages/numpy/core/numeric.py", lib), A2A_PY_LIB);
  ck_assert_str_eq(lib, "numpy");
  ck_assert_int_eq(cls_of("/v/lib/python3.11/site-packages/six.py", lib), A2A_PY_LIB);
  ck_assert_str_eq(lib, "six");
  /* A venv inside a project: the last site-packages decides. */
  ck_assert_int_eq(cls_of("/p/site-packages/x/.venv/lib/python3.12/site-packages/deepspeed/comm/comm.py", lib),
                   A2A_PY_LIB);
  ck_assert_str_eq(lib, "deepspeed");
  ck_assert_int_eq(cls_of("/root/.pyenv/versions/3.11.7/lib/python3.11/threading.py", lib), A2A_PY_STDLIB);
  ck_assert_str_eq(lib, "stdlib");
  ck_assert_int_eq(cls_of("/usr/lib64/python3.9/runpy.py", lib), A2A_PY_STDLIB);
  ck_assert_int_eq(cls_of("/opt/py/lib/python3.13t/threading.py", lib), A2A_PY_STDLIB);
  ck_assert_int_eq(cls_of("<frozen importlib._bootstrap>", lib), A2A_PY_STDLIB);
  ck_assert_int_eq(cls_of("<string>", lib), A2A_PY_USER);
  ck_assert_int_eq(cls_of("<stdin>", lib), A2A_PY_USER);
  ck_assert_int_eq(cls_of("/home/u/train/moe.py", lib), A2A_PY_USER);
  ck_assert_str_eq(lib, "");
  ck_assert_int_eq(cls_of("train.py", lib), A2A_PY_USER);
  ck_assert_int_eq(cls_of("", lib), A2A_PY_USER);
  /* torch from a source checkout is torch; a user's own torch/ folder is not. */
  ck_assert_int_eq(cls_of("/src/pytorch/torch/distributed/distributed_c10d.py", lib), A2A_PY_LIB);
  ck_assert_str_eq(lib, "torch");
  ck_assert_int_eq(cls_of("/src/pytorch/torch/nn/modules/module.py", lib), A2A_PY_LIB);
  ck_assert_int_eq(cls_of("/home/u/proj/torch/moe_layer.py", lib), A2A_PY_USER);
  /* "python3." that is not the standard library's directory */
  ck_assert_int_eq(cls_of("/home/u/python3.11/train.py", lib), A2A_PY_USER);
  ck_assert_int_eq(cls_of("/home/u/lib/python3.x/train.py", lib), A2A_PY_USER);
}
END_TEST

/* ---- the folding plan ---- */

static int plan(const char *classes, a2a_rt_py_item *out, int max) {
  unsigned char cls[64];
  bool rec[64];
  int n = (int)strlen(classes);
  for (int i = 0; i < n; i++) {
    cls[i] = classes[i] == 'u' || classes[i] == '?' ? A2A_PY_USER
             : classes[i] == 's'                   ? A2A_PY_STDLIB
                                                   : A2A_PY_LIB;
    rec[i] = classes[i] != '?';
  }
  return a2a_rt_py_plan(cls, rec, n, out, max);
}

#define ITEM(it, k, a_, b_)                                                      \
  do {                                                                           \
    ck_assert_int_eq((it).kind, (k));                                            \
    ck_assert_int_eq((it).a, (a_));                                              \
    ck_assert_int_eq((it).b, (b_));                                              \
  } while (0)

START_TEST(plan_torch_call) {
  /* innermost first: all_to_all_single, wrapper (torch), exchange, main,
   * <module> (user) */
  a2a_rt_py_item it[8];
  int n = plan("llu" "uu", it, 8);
  ck_assert_int_eq(n, 4);
  ITEM(it[0], A2A_PY_ITEM_FRAME, 2, 3);
  ITEM(it[1], A2A_PY_ITEM_FRAME, 3, 4);
  ITEM(it[2], A2A_PY_ITEM_FRAME, 4, 5);
  ITEM(it[3], A2A_PY_ITEM_LEADING, 0, 2);
}
END_TEST

START_TEST(plan_folds_between_user_frames) {
  /* user frame, 3 library frames (a trainer), user frames, threading.py */
  a2a_rt_py_item it[8];
  int n = plan("ulllussss", it, 8);
  ck_assert_int_eq(n, 4);
  ITEM(it[0], A2A_PY_ITEM_FRAME, 0, 1);
  ITEM(it[1], A2A_PY_ITEM_FOLD, 1, 4);
  ITEM(it[2], A2A_PY_ITEM_FRAME, 4, 5);
  ITEM(it[3], A2A_PY_ITEM_FOLD, 5, 9);
}
END_TEST

START_TEST(plan_without_user_frames) {
  a2a_rt_py_item it[8];
  /* All library frames (python -m an installed package): the innermost is
   * the anchor. */
  int n = plan("lll", it, 8);
  ck_assert_int_eq(n, 2);
  ITEM(it[0], A2A_PY_ITEM_FRAME, 0, 1);
  ITEM(it[1], A2A_PY_ITEM_FOLD, 1, 3);
  /* The standard library first, then a package: the package is the anchor. */
  n = plan("ssls", it, 8);
  ck_assert_int_eq(n, 3);
  ITEM(it[0], A2A_PY_ITEM_FRAME, 2, 3);
  ITEM(it[1], A2A_PY_ITEM_FOLD, 3, 4);
  ITEM(it[2], A2A_PY_ITEM_LEADING, 0, 2);
  /* An unrecorded user frame (table full) is folded, never the anchor. */
  n = plan("l?u", it, 8);
  ck_assert_int_eq(n, 2);
  ITEM(it[0], A2A_PY_ITEM_FRAME, 2, 3);
  ITEM(it[1], A2A_PY_ITEM_LEADING, 0, 2);
  /* Nothing recorded: frame 0 as a fold of its own, nothing inside. */
  n = plan("??", it, 8);
  ck_assert_int_eq(n, 2);
  ITEM(it[0], A2A_PY_ITEM_FOLD, 0, 1);
  ITEM(it[1], A2A_PY_ITEM_FOLD, 1, 2);
  ck_assert_int_eq(plan("", it, 8), 0);
}
END_TEST

START_TEST(plan_respects_max) {
  a2a_rt_py_item it[8];
  ck_assert_int_eq(plan("uuuuuuuuuu", it, 3), 3);
  ITEM(it[2], A2A_PY_ITEM_FRAME, 2, 3);
  /* The leading fold only if there is room for it. */
  ck_assert_int_eq(plan("luu", it, 2), 2);
  ITEM(it[1], A2A_PY_ITEM_FRAME, 2, 3);
  ck_assert_int_eq(plan("luu", it, 1), 1);
  ck_assert_int_eq(plan("luu", it, 0), 0);
}
END_TEST

/* ---- text ---- */

START_TEST(frame_text_forms) {
  char b[A2A_RT_FRAME_LEN];
  a2a_rt_py_frame_text(b, sizeof b, "exchange", "/w/moe.py", 91);
  ck_assert_str_eq(b, "exchange (/w/moe.py:91)");
  a2a_rt_py_frame_text(b, sizeof b, "", "<string>", 0);
  ck_assert_str_eq(b, "?? (<string>:0)");
  /* A long path keeps its end and the line. */
  char path[400];
  memset(path, 'a', sizeof path);
  memcpy(path, "/very", 5);
  strcpy(path + 300, "/deep/dir/train.py");
  a2a_rt_py_frame_text(b, 64, "Model.forward", path, 1234);
  ck_assert_uint_le(strlen(b), 63);
  ck_assert_ptr_nonnull(strstr(b, "Model.forward (..."));
  ck_assert_ptr_nonnull(strstr(b, "/train.py:1234)"));
  /* A huge function name is cut, the location kept. */
  char fn[200];
  memset(fn, 'f', sizeof fn - 1);
  fn[sizeof fn - 1] = 0;
  a2a_rt_py_frame_text(b, sizeof b, fn, "/w/x.py", 3);
  ck_assert_ptr_nonnull(strstr(b, "... (/w/x.py:3)"));
}
END_TEST

START_TEST(fit_site_text) {
  char out[120];
  a2a_rt_py_fit("exchange (/w/moe.py:91)", out, sizeof out);
  ck_assert_str_eq(out, "exchange (/w/moe.py:91)");
  char in[300];
  snprintf(in, sizeof in, "dispatch (/home/user/projects/%0150d/models/moe/dispatch.py:88)", 0);
  a2a_rt_py_fit(in, out, sizeof out);
  ck_assert_uint_lt(strlen(out), sizeof out);
  ck_assert_ptr_nonnull(strstr(out, "dispatch (..."));
  ck_assert_ptr_nonnull(strstr(out, "/models/moe/dispatch.py:88)"));
  /* A native frame that does not fit is cut and marked. */
  char nat[300];
  memset(nat, 'n', sizeof nat - 1);
  nat[sizeof nat - 1] = 0;
  a2a_rt_py_fit(nat, out, sizeof out);
  ck_assert_uint_eq(strlen(out), sizeof out - 1);
  ck_assert_str_eq(out + sizeof out - 4, "...");
  /* A C++ frame that does not fit loses its parameter list, keeps its
   * offset and module (torch's collectives on autograd's thread: QA). */
  a2a_rt_py_fit("c10d::nccl2::DefaultNcclApi::allReduce(void const*, void*, unsigned long, "
                "ncclDataType_t, ncclRedOp_t, ncclComm*, CUstream_st*)+0x59 (libtorch_cuda.so)",
                out, sizeof out);
  ck_assert_str_eq(out, "c10d::nccl2::DefaultNcclApi::allReduce+0x59 (libtorch_cuda.so)");
}
END_TEST

START_TEST(fold_text_forms) {
  char b[A2A_RT_FRAME_LEN];
  a2a_rt_py_fold_text(b, sizeof b, 1, "stdlib", NULL, 1, NULL);
  ck_assert_str_eq(b, "... 1 frame in stdlib");
  a2a_rt_py_fold_text(b, sizeof b, 2, "torch", NULL, 1, "all_to_all_single");
  ck_assert_str_eq(b, "... 2 frames in torch, innermost all_to_all_single");
  a2a_rt_py_fold_text(b, sizeof b, 5, "torch", "deepspeed", 2, NULL);
  ck_assert_str_eq(b, "... 5 frames in torch, deepspeed");
  a2a_rt_py_fold_text(b, sizeof b, 9, "torch", "deepspeed", 4, NULL);
  ck_assert_str_eq(b, "... 9 frames in torch, deepspeed and 2 more");
  a2a_rt_py_fold_text(b, sizeof b, 3, "", NULL, 0, NULL);
  ck_assert_str_eq(b, "... 3 frames in libraries");
  /* No location in a fold: the report must never take it for a call site. */
  ck_assert_ptr_null(strchr(b, ':'));
}
END_TEST

/* ---- layouts and strings ---- */

START_TEST(builtin_layouts) {
  a2a_rt_py_layout L;
  for (int m = 9; m <= 12; m++) {
    ck_assert(a2a_rt_py_layout_builtin(m, &L));
    ck_assert_int_eq(L.minor, m);
    ck_assert_int_eq(L.ob_type, 8);
    ck_assert_int_eq(L.frame_objects, m <= 10);
    ck_assert_int_eq(L.instr_scale, m == 9 ? 1 : m == 10 ? 2 : 0);
    ck_assert_int_eq(L.co_qualname >= 0, m >= 11);
    ck_assert_int_eq(L.owner_cstack, m == 12 ? 3 : -1);
  }
  ck_assert(!a2a_rt_py_layout_builtin(8, &L));
  ck_assert(!a2a_rt_py_layout_builtin(13, &L));
}
END_TEST

static void put64(unsigned char *d, int at, uint64_t v) { memcpy(d + at, &v, 8); }

START_TEST(debug_offsets_layout) {
  unsigned char d[DBG_END];
  memset(d, 0, sizeof d);
  a2a_rt_py_layout L;
  ck_assert_int_eq(a2a_rt_py_layout_from_debug(d, sizeof d, &L), -1);   /* no cookie */
  memcpy(d, "xdebugpy", 8);
  put64(d, DBG_VERSION, 0x030c01f0);                                     /* 3.12.1 */
  ck_assert_int_eq(a2a_rt_py_layout_from_debug(d, sizeof d, &L), -1);
  put64(d, DBG_VERSION, 0x030d00f0);                                     /* 3.13.0 */
  put64(d, DBG_TS_CURRENT_FRAME, 72);
  put64(d, DBG_FR_PREVIOUS, 8);
  put64(d, DBG_FR_EXECUTABLE, 0);
  put64(d, DBG_FR_INSTR_PTR, 56);
  put64(d, DBG_FR_OWNER, 70);
  put64(d, DBG_CO_FILENAME, 112);
  put64(d, DBG_CO_NAME, 120);
  put64(d, DBG_CO_QUALNAME, 128);
  put64(d, DBG_CO_FIRSTLINENO, 68);
  put64(d, DBG_CO_CODE_ADAPTIVE, 200);
  put64(d, DBG_OB_TYPE, 8);
  put64(d, DBG_STR_STATE, 32);
  put64(d, DBG_STR_LENGTH, 16);
  put64(d, DBG_STR_ASCII_SIZE, 40);
  ck_assert_int_eq(a2a_rt_py_layout_from_debug(d, sizeof d, &L), 0);
  ck_assert_int_eq(L.minor, 13);
  ck_assert_int_eq(L.ts_frame, 72);
  ck_assert_int_eq(L.cframe_current, -1);
  ck_assert_int_eq(L.fr_instr, 56);
  ck_assert_int_eq(L.co_code, 200);
  ck_assert_int_eq(L.str_compact_size, 56);
  ck_assert_int_eq(a2a_rt_py_layout_from_debug(d, DBG_END - 1, &L), -1);   /* short */
  put64(d, DBG_CO_NAME, 1 << 20);                                          /* absurd */
  ck_assert_int_eq(a2a_rt_py_layout_from_debug(d, sizeof d, &L), -1);
  put64(d, DBG_CO_NAME, 120);
  put64(d, DBG_FREE_THREADED, 1);
  ck_assert_int_eq(a2a_rt_py_layout_from_debug(d, sizeof d, &L), -2);
}
END_TEST

START_TEST(pep393_strings) {
  char out[16];
  const uint8_t l1[] = {'a', 0xe9, 'b'};
  a2a_rt_py_str_utf8(1, l1, 3, out, sizeof out);
  ck_assert_str_eq(out, "a\xc3\xa9" "b");
  const uint16_t u2[] = {0x4e2d, 0xd800, 'x'};
  a2a_rt_py_str_utf8(2, u2, 3, out, sizeof out);
  ck_assert_str_eq(out, "\xe4\xb8\xad?x");   /* a lone surrogate is '?' */
  const uint32_t u4[] = {0x1f600, 'y'};
  a2a_rt_py_str_utf8(4, u4, 2, out, sizeof out);
  ck_assert_str_eq(out, "\xf0\x9f\x98\x80y");
  /* Cut at a whole character. */
  ck_assert_uint_eq(a2a_rt_py_str_utf8(4, u4, 2, out, 4), 0);
  ck_assert_str_eq(out, "");
  ck_assert_uint_eq(a2a_rt_py_str_utf8(1, l1, 3, out, 3), 1);
  ck_assert_str_eq(out, "a");
}
END_TEST

/* ---- C++ names ---- */

static int g_dm_calls;
static char *fake_dm(const char *mangled, char *buf, size_t *len, int *status) {
  g_dm_calls++;
  if (strcmp(mangled, "_Z3foov") != 0) {
    *status = -2;   /* not a valid name */
    return NULL;
  }
  if (!buf || *len < 6) {
    free(buf);
    buf = malloc(64);
    *len = 64;
  }
  strcpy(buf, "foo()");
  *status = 0;
  return buf;
}

START_TEST(demangle_fallback) {
  char *buf = NULL;
  size_t len = 0;
  /* No C++ runtime in the process: names stay mangled. */
  ck_assert_str_eq(a2a_rt_cxx_demangle(NULL, "_Z3foov", &buf, &len), "_Z3foov");
  /* Not a C++ name: never handed to the demangler. */
  ck_assert_str_eq(a2a_rt_cxx_demangle(fake_dm, "main", &buf, &len), "main");
  ck_assert_int_eq(g_dm_calls, 0);
  /* The demangler fails: mangled, buffer untouched. */
  ck_assert_str_eq(a2a_rt_cxx_demangle(fake_dm, "_Zbad", &buf, &len), "_Zbad");
  ck_assert_ptr_null(buf);
  /* Success: the buffer it made is kept and reused. */
  ck_assert_str_eq(a2a_rt_cxx_demangle(fake_dm, "_Z3foov", &buf, &len), "foo()");
  char *first = buf;
  ck_assert_uint_eq(len, 64);
  ck_assert_str_eq(a2a_rt_cxx_demangle(fake_dm, "_Z3foov", &buf, &len), "foo()");
  ck_assert_ptr_eq(buf, first);
  free(buf);
}
END_TEST

static void shorten(const char *in, size_t budget, const char *want) {
  char b[1024];
  snprintf(b, sizeof b, "%s", in);
  a2a_rt_cxx_shorten(b, budget);
  ck_assert_str_eq(b, want);
}

START_TEST(cxx_shorten) {
  /* Fits: unchanged. */
  shorten("c10d::Backend::send(int)", 100, "c10d::Backend::send(int)");
  /* The parameter list goes first (with qualifiers after it). */
  shorten("c10d::ProcessGroupNCCL::alltoall_base(at::Tensor&, at::Tensor&, std::vector<long, "
          "std::allocator<long> >&) const",
          60, "c10d::ProcessGroupNCCL::alltoall_base");
  shorten("Foo::operator()(int, char) const &", 20, "Foo::operator()");
  shorten("c10d::f()::{lambda(int)#1}::operator()(int) const", 40,
          "c10d::f()::{lambda(int)#1}::operator()");
  shorten("(anonymous namespace)::alltoall_base_CUDA(at::Tensor&, std::vector<long>) [clone .cold]",
          45, "(anonymous namespace)::alltoall_base_CUDA");
  /* Then template arguments. */
  shorten("c10::impl::make_boxed_from_unboxed_functor<c10::impl::detail::WrapFunction<int, long>, "
          "false>::call(c10::OperatorKernel*)",
          60, "c10::impl::make_boxed_from_unboxed_functor<...>::call");
  shorten("bool operator<<Foo<int> >(Foo<int> const&)", 30, "bool operator<<Foo<int> >");
  /* Then a cut, marked. */
  shorten("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 20, "aaaaaaaaaaaaaaaaa...");
}
END_TEST

START_TEST(cxx_namespace) {
  ck_assert(a2a_rt_cxx_in_namespace("pybind11::cpp_function::dispatcher(_object*, _object*)", "pybind11::"));
  ck_assert(a2a_rt_cxx_in_namespace(
      "c10::intrusive_ptr<c10d::Work> pybind11::detail::function_ref<void (int)>::callback_fn<X>(long)",
      "pybind11::"));
  ck_assert(!a2a_rt_cxx_in_namespace("torch::distributed::c10d::init(pybind11::module_&)", "pybind11::"));
  ck_assert(!a2a_rt_cxx_in_namespace("std::vector<pybind11::object> f()", "pybind11::"));
  ck_assert(!a2a_rt_cxx_in_namespace("(anonymous namespace)::g(pybind11::handle)", "pybind11::"));
  ck_assert(a2a_rt_cxx_in_namespace("(anonymous namespace) pybind11::h()", "pybind11::"));
}
END_TEST

int main(void) {
  Suite *s = suite_create("pyframe");
  TCase *t = tcase_create("pyframe");
  tcase_add_test(t, classify_paths);
  tcase_add_test(t, plan_torch_call);
  tcase_add_test(t, plan_folds_between_user_frames);
  tcase_add_test(t, plan_without_user_frames);
  tcase_add_test(t, plan_respects_max);
  tcase_add_test(t, frame_text_forms);
  tcase_add_test(t, fit_site_text);
  tcase_add_test(t, fold_text_forms);
  tcase_add_test(t, builtin_layouts);
  tcase_add_test(t, debug_offsets_layout);
  tcase_add_test(t, pep393_strings);
  tcase_add_test(t, demangle_fallback);
  tcase_add_test(t, cxx_shorten);
  tcase_add_test(t, cxx_namespace);
  suite_add_tcase(s, t);
  SRunner *r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? 1 : 0;
}
