/* test_log_dwarf.c - file:line lookup from DWARF line tables
 * (shim/rt_dwarf.c, compiled in: it is pure). The test reads its own
 * executable, which tests/e2e/runtime.cmake builds with -g whatever the
 * build type, and looks up addresses whose source line it knows. */
#define _GNU_SOURCE
#include <check.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../shim/rt_dwarf.c"

/* Each on one line, so the line of its first instruction is known. */
__attribute__((noinline)) static int marker(void) { return __LINE__; }
__attribute__((noinline)) static void *return_address(void) { return __builtin_return_address(0); }
static unsigned call_line;
__attribute__((noinline)) static void *caller(void) {
  void *r; call_line = __LINE__; r = return_address();
  __asm__ volatile("" : "+r"(r));   /* no tail call: the return address stays in caller */
  return r;
}

/* An always-inlined helper inside a noinline function: the return address
 * of ret_addr2 lies in inlined_helper's code, inlined into outer(). */
__attribute__((noinline)) static void *ret_addr2(void) { return __builtin_return_address(0); }
static inline __attribute__((always_inline)) void *inlined_helper(void) {
  void *r = ret_addr2();
  __asm__ volatile("" : "+r"(r));
  return r;
}
static unsigned inline_call_line;
__attribute__((noinline)) static void *outer(void) {
  void *r; inline_call_line = __LINE__; r = inlined_helper();
  __asm__ volatile("" : "+r"(r));
  return r;
}

static const uint8_t *image;
static size_t image_size;
static uintptr_t bias;

static int first_object(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size, (void)arg;
  bias = info->dlpi_addr;   /* the main program comes first */
  return 1;
}

static void setup(void) {
  int fd = open("/proc/self/exe", O_RDONLY);
  ck_assert_int_ge(fd, 0);
  struct stat sb;
  ck_assert_int_eq(fstat(fd, &sb), 0);
  image_size = (size_t)sb.st_size;
  image = mmap(NULL, image_size, PROT_READ, MAP_PRIVATE, fd, 0);
  ck_assert(image != MAP_FAILED);
  close(fd);
  dl_iterate_phdr(first_object, NULL);
}

static const char *base(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

START_TEST(own_functions_have_their_lines) {
  a2a_rt_dwarf d;
  ck_assert(a2a_rt_dwarf_from_elf(image, image_size, &d));
  const char *file = NULL;
  unsigned line = 0;
  ck_assert(a2a_rt_dwarf_lookup(&d, (uintptr_t)&marker - bias, &file, &line));
  ck_assert_str_eq(base(file), "test_log_dwarf.c");
  ck_assert_uint_eq(line, (unsigned)marker());
  /* A return address, looked up at pc-1 as the symbolizer does, names the
   * line of the call. */
  uintptr_t ret = (uintptr_t)caller();
  ck_assert(a2a_rt_dwarf_lookup(&d, ret - 1 - bias, &file, &line));
  ck_assert_str_eq(base(file), "test_log_dwarf.c");
  ck_assert_uint_eq(line, call_line);
}
END_TEST

START_TEST(inlined_calls_are_named) {
  a2a_rt_dwarf d;
  ck_assert(a2a_rt_dwarf_from_elf(image, image_size, &d));
  a2a_rt_inline in[8];
  uintptr_t pc = (uintptr_t)outer() - 1 - bias;
  int n = a2a_rt_dwarf_inlines(&d, pc, in, 8);
  ck_assert_int_ge(n, 1);
  ck_assert_str_eq(in[0].name, "inlined_helper");
  ck_assert_ptr_nonnull(in[0].call_file);
  ck_assert_str_eq(base(in[0].call_file), "test_log_dwarf.c");
  ck_assert_uint_eq(in[0].call_line, inline_call_line);
  /* Code that is not inlined has no inline frames. */
  ck_assert_int_eq(a2a_rt_dwarf_inlines(&d, (uintptr_t)&marker - bias, in, 8), 0);
  ck_assert_int_eq(a2a_rt_dwarf_inlines(&d, 0, in, 8), 0);
}
END_TEST

START_TEST(addresses_outside_the_code_are_unknown) {
  a2a_rt_dwarf d;
  ck_assert(a2a_rt_dwarf_from_elf(image, image_size, &d));
  const char *file = NULL;
  unsigned line = 0;
  ck_assert(!a2a_rt_dwarf_lookup(&d, 0, &file, &line));
  ck_assert(!a2a_rt_dwarf_lookup(&d, UINT64_MAX - 16, &file, &line));
}
END_TEST

START_TEST(damaged_input_never_crashes) {
  a2a_rt_dwarf d;
  ck_assert(a2a_rt_dwarf_from_elf(image, image_size, &d));
  const char *file;
  unsigned line;
  uint64_t target = (uintptr_t)&marker - bias;
  /* Every truncation of the real section. */
  for (size_t n = 0; n < d.line_size && n < 4096; n += 7) {
    a2a_rt_dwarf t = d;
    t.line_size = n;
    (void)a2a_rt_dwarf_lookup(&t, target, &file, &line);
  }
  /* Random bytes, and the real section with random bytes flipped. */
  static uint8_t junk[8192];
  uint32_t x = 12345;
  for (int round = 0; round < 200; round++) {
    size_t n = d.line_size < sizeof junk ? d.line_size : sizeof junk;
    memcpy(junk, d.line, n);
    for (int k = 0; k < 16; k++) {
      x = x * 1664525u + 1013904223u;
      junk[(x >> 8) % n] = (uint8_t)(round < 100 ? x >> 24 : 0xff);
    }
    a2a_rt_dwarf t = d;
    t.line = junk;
    t.line_size = n;
    (void)a2a_rt_dwarf_lookup(&t, target, &file, &line);
  }
  /* The same for .debug_info and .debug_abbrev (inline frames). */
  a2a_rt_inline in[8];
  target = (uintptr_t)outer() - 1 - bias;
  static uint8_t info[65536], abbrev[16384];
  if (d.info_size <= sizeof info && d.abbrev_size <= sizeof abbrev) {
    for (int round = 0; round < 300; round++) {
      memcpy(info, d.info, d.info_size);
      memcpy(abbrev, d.abbrev, d.abbrev_size);
      for (int k = 0; k < 8; k++) {
        x = x * 1664525u + 1013904223u;
        if (round % 2) info[(x >> 8) % d.info_size] = (uint8_t)(x >> 24);
        else abbrev[(x >> 8) % d.abbrev_size] = (uint8_t)(x >> 24);
      }
      a2a_rt_dwarf t = d;
      t.info = info, t.abbrev = abbrev;
      if (round % 3 == 0) t.info_size = (x >> 4) % d.info_size;
      int n = a2a_rt_dwarf_inlines(&t, target, in, 8);
      ck_assert(n >= 0 && n <= 8);
    }
  }
  /* Not an ELF file at all. */
  ck_assert(!a2a_rt_dwarf_from_elf(junk, sizeof junk, &d));
  ck_assert(!a2a_rt_dwarf_from_elf(junk, 10, &d));
}
END_TEST

static Suite *dwarf_suite(void) {
  Suite *s = suite_create("log_dwarf");
  TCase *tc = tcase_create("lines");
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_set_timeout(tc, 20);
  tcase_add_test(tc, own_functions_have_their_lines);
  tcase_add_test(tc, inlined_calls_are_named);
  tcase_add_test(tc, addresses_outside_the_code_are_unknown);
  tcase_add_test(tc, damaged_input_never_crashes);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(dwarf_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
