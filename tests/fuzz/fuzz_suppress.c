/* fuzz_suppress.c - the fuzz entry of A2ACHECK_SUPPRESSIONS
 * (shim/rt_suppress.c): the file parser and the matcher on hostile input.
 *
 * Input: the suppression file's text, a NUL byte, then a check name and up
 * to 8 rendered frames, one per line. The text is parsed (every warning
 * must be one bounded line without control characters, at most one per bad
 * line plus the "more" line; every rule kept must have a non-empty check and
 * pattern), then the finding is matched against the rules, and so are a few
 * real check names. Must never crash, hang or read out of bounds.
 *
 * With -DA2A_LIBFUZZER it is a libFuzzer target (tests/fuzz/CMakeLists.txt,
 * A2A_FUZZ=ON, run by tests/fuzz); tests/unit/test_suppress.c replays
 * corpus/suppress/ (seeds and every regress-* input a fuzzer crashed on)
 * through a2a_fuzz_suppress_one in every build.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../shim/rt_internal.h"

int a2a_fuzz_suppress_one(const uint8_t *data, size_t size);

static int g_fz_warnings;

static void fz_warn(void *arg, const char *line) {
  (void)arg;
  size_t n = strlen(line);
  if (n == 0 || n >= 512) abort();
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f) abort();
  g_fz_warnings++;
}

int a2a_fuzz_suppress_one(const uint8_t *data, size_t size) {
  static a2a_rt_supp s;
  static char frames[8][A2A_RT_FRAME_LEN];
  const uint8_t *nul = memchr(data, 0, size);
  size_t tn = nul ? (size_t)(nul - data) : size;
  g_fz_warnings = 0;
  int bad = a2a_rt_supp_parse(&s, (const char *)data, tn, "fuzz.supp", fz_warn, NULL);
  if (bad < 0 || g_fz_warnings > bad + 1 || (bad > 0 && g_fz_warnings == 0)) abort();
  if (s.n < 0 || s.n > A2A_RT_SUPP_MAX) abort();
  for (int i = 0; i < s.n; i++)
    if (!s.rules[i].check[0] || !s.rules[i].pattern[0] ||
        !memchr(s.rules[i].check, 0, sizeof s.rules[i].check) ||
        !memchr(s.rules[i].pattern, 0, sizeof s.rules[i].pattern))
      abort();
  /* The finding: a check, then frames, one per line. */
  char check[64] = "";
  int nf = 0;
  const uint8_t *p = nul ? nul + 1 : data + size, *end = data + size;
  for (int line = 0; p < end && nf < 8; line++) {
    const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
    char *dst = line == 0 ? check : frames[nf++];
    size_t cap = line == 0 ? sizeof check : A2A_RT_FRAME_LEN;
    if (n >= cap) n = cap - 1;
    memcpy(dst, p, n);
    dst[n] = '\0';
    p = nl ? nl + 1 : end;
  }
  int m = a2a_rt_supp_match(&s, check, (const char(*)[A2A_RT_FRAME_LEN])frames, nf);
  if (m < -1 || m >= s.n) abort();
  static const char *const real[] = {"size.p2p-mismatch", "group.deadlock", "perf.low-bandwidth",
                                     "layout.overlap"};
  for (size_t i = 0; i < sizeof real / sizeof real[0]; i++) {
    m = a2a_rt_supp_match(&s, real[i], (const char(*)[A2A_RT_FRAME_LEN])frames, nf);
    if (m < -1 || m >= s.n) abort();
  }
  /* The glob alone, each rule's pattern over each frame's whole text. */
  for (int i = 0; i < s.n && i < 16; i++)
    for (int f = 0; f < nf; f++) (void)a2a_rt_supp_glob(s.rules[i].pattern, frames[f], strlen(frames[f]));
  return 0;
}

#ifdef A2A_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return a2a_fuzz_suppress_one(data, size);
}
#endif
