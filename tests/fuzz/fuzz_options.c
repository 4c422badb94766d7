/* fuzz_options.c - the fuzz entry of the options parser
 * (shim/rt_options.c, analyzers/a2a_options.inc) on a hostile environment.
 *
 * Input: NAME=VALUE lines, the fake environment (the first line that names
 * a variable wins, like getenv). The options are parsed (every warning one
 * bounded line without control characters, at most one per row), then the
 * log header's description of the values in effect is parsed again as an
 * environment: it must give no warning and describe the same values - the
 * header shows only values really in effect, and each is valid and exact.
 * The help tables are rendered too. Must never crash, hang or read out of
 * bounds.
 *
 * With -DA2A_LIBFUZZER it is a libFuzzer target (tests/fuzz/CMakeLists.txt,
 * A2A_FUZZ=ON, run by tests/fuzz); tests/unit/test_options.c replays
 * corpus/options/ (seeds and every regress-* input a fuzzer crashed on)
 * through a2a_fuzz_options_one in every build.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../shim/rt_internal.h"

int a2a_fuzz_options_one(const uint8_t *data, size_t size);

#define FZ_VARS 64
static char fz_env[FZ_VARS][2][512];
static int fz_n, fz_warnings;

static const char *fz_getenv(const char *name) {
  for (int i = 0; i < fz_n; i++)
    if (strcmp(fz_env[i][0], name) == 0) return fz_env[i][1];
  return NULL;
}

static void fz_warn(void *arg, const char *line) {
  (void)arg;
  size_t n = strlen(line);
  if (n == 0 || n >= 512) abort();
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f) abort();
  fz_warnings++;
}

static void fz_put(const char *name, size_t nn, const char *value, size_t vn) {
  if (fz_n == FZ_VARS || nn >= sizeof fz_env[0][0]) return;
  if (vn >= sizeof fz_env[0][1]) vn = sizeof fz_env[0][1] - 1;
  memcpy(fz_env[fz_n][0], name, nn);
  fz_env[fz_n][0][nn] = '\0';
  memcpy(fz_env[fz_n][1], value, vn);
  fz_env[fz_n][1][vn] = '\0';   /* a NUL inside cuts the value, as in environ */
  fz_n++;
}

/* The values of a description ("  ENV=value  (origin)\n" lines), origins
 * dropped, for comparing two descriptions. */
static void values_only(const char *d, char *out, size_t cap) {
  size_t k = 0;
  for (const char *l = d; *l && k + 1 < cap;) {
    const char *nl = strchr(l, '\n');
    size_t n = nl ? (size_t)(nl - l) : strlen(l);
    const char *o = NULL;
    for (size_t i = 0; i + 3 < n; i++)
      if (memcmp(l + i, "  (", 3) == 0) o = l + i;
    size_t vn = o ? (size_t)(o - l) : n;
    if (k + vn + 1 >= cap) break;
    memcpy(out + k, l, vn);
    k += vn;
    out[k++] = '\n';
    l = nl ? nl + 1 : l + n;
  }
  out[k] = '\0';
}

int a2a_fuzz_options_one(const uint8_t *data, size_t size) {
  static a2a_options o;
  static unsigned char from_env[A2A_RT_NOPTS];
  static char d1[16384], d2[16384], v1[16384], v2[16384], help[32768];
  fz_n = 0;
  for (const char *p = (const char *)data, *end = p + size; p < end;) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
    const char *eq = memchr(p, '=', n);
    if (eq) fz_put(p, (size_t)(eq - p), eq + 1, n - (size_t)(eq - p) - 1);
    p = nl ? nl + 1 : end;
  }
  fz_warnings = 0;
  int w = a2a_rt_options_parse(&o, from_env, fz_getenv, fz_warn, NULL);
  if (w != fz_warnings || w > A2A_RT_NOPTS) abort();
  a2a_rt_options_describe(&o, from_env, d1, sizeof d1);

  /* The header, read back as an environment. */
  fz_n = 0;
  for (const char *l = d1; *l;) {
    const char *nl = strchr(l, '\n');
    size_t n = nl ? (size_t)(nl - l) : strlen(l);
    const char *s = l;
    while (s < l + n && *s == ' ') s++;
    const char *eq = memchr(s, '=', (size_t)(l + n - s));
    const char *o2 = NULL;
    for (const char *q = eq ? eq : l + n; q + 3 <= l + n; q++)
      if (memcmp(q, "  (", 3) == 0) o2 = q;
    if (eq && o2) {
      size_t vn = (size_t)(o2 - eq - 1);
      /* A secret is shown as set, never its value: set it to something. */
      if (vn == 16 && !memcmp(eq + 1, "(set, not shown)", 16)) fz_put(s, (size_t)(eq - s), "x", 1);
      else if (!(vn == 7 && !memcmp(eq + 1, "(unset)", 7))) fz_put(s, (size_t)(eq - s), eq + 1, vn);
    }
    l = nl ? nl + 1 : l + n;
  }
  fz_warnings = 0;
  w = a2a_rt_options_parse(&o, from_env, fz_getenv, fz_warn, NULL);
  a2a_rt_options_describe(&o, from_env, d2, sizeof d2);
  values_only(d1, v1, sizeof v1);
  values_only(d2, v2, sizeof v2);
  /* Every value the header shows is valid and shown exactly (a string
   * longer than the header shows is cut there, the same both times). */
  if (w != 0 || strcmp(v1, v2) != 0) abort();
  a2a_rt_options_help(help, sizeof help, 0);
  a2a_rt_options_help(help, sizeof help, 1);
  return 0;
}

#ifdef A2A_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return a2a_fuzz_options_one(data, size);
}
#endif
