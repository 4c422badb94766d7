/* fuzz_record.c - the fuzz entry of the JSONL reader and everything
 * downstream of it: the input is parsed as one record (record.h), then as
 * one process's log, merged (job.h) and rendered in every format
 * (report.h). Must never crash, hang or leak on any input.
 *
 * With -DA2A_LIBFUZZER it is a libFuzzer target (tool/CMakeLists.txt,
 * A2A_FUZZ=ON); the unit tests (tests/tool) drive a2a_fuzz_one with
 * mutated log lines in every build. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "job.h"
#include "record.h"
#include "report.h"

int a2a_fuzz_one(const uint8_t *data, size_t size);

int a2a_fuzz_one(const uint8_t *data, size_t size) {
  arena a = {0};
  a2a_record r;
  char why[160];
  a2a_record_parse((const char *)data, size, &a, &r, why, sizeof why);
  arena_free(&a);

  rp_job j;
  rp_job_init(&j);
  int p = rp_job_add_proc(&j, "fuzz.jsonl", "fuzzhost", 1, -1);
  const char *s = (const char *)data, *end = s + size;
  size_t lineno = 0;
  while (s < end) {
    const char *nl = memchr(s, '\n', (size_t)(end - s));
    size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
    rp_job_add_line(&j, p, s, n, ++lineno);
    s += n + (nl ? 1 : 0);
  }
  rp_job_merge(&j);
  rp_opts o = {.color = true, .fail_level = RP_FAIL_ERROR, .command = "fuzz", .command_status = 0,
               .verdict = NULL, .exit_status = 0};
  for (int f = 0; f < RP__NFORMATS; f++) {
    strbuf b = {0};
    rp_render(&b, (rp_format)f, &j, &o);
    sb_free(&b);
  }
  rp_verdict v;
  rp_job_policy(&j, RP_FAIL_WARNING, true, &v);
  rp_job_free(&j);
  return 0;
}

#ifdef A2A_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return a2a_fuzz_one(data, size); }
#endif
