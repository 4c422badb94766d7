/* perf_env.h - the perf.env configuration lint, as a pure function over an
 * environment block (so unit tests pass their own), and the analyzer that
 * runs it once at start-up over the process environment. The rules live in
 * perf_env_table.inc. */
#ifndef A2A_PERF_ENV_H
#define A2A_PERF_ENV_H

#include <stdbool.h>
#include <stddef.h>

#include "a2a_core.h"

/* Facts about the host the rules need; filled by a2a_perf_env_probe() in
 * the analyzer, by hand in tests. */
typedef struct a2a_perf_env_ctx {
  bool ib_host;      /* /sys/class/infiniband has at least one device */
} a2a_perf_env_ctx;

/* One finding of the lint. var is the variable's name (in the table, or in
 * namebuf for unknown names: copy hits by value only through the lint);
 * value points into envp: copy it before the environment changes. */
typedef struct a2a_perf_env_hit {
  const char *var;
  const char *value;
  a2a_severity sev;
  const char *reason;
  const char *fix;
  const char *ref;
  char suggestion[64];   /* unknown NCCL_* name: the closest real name, or "" */
  char namebuf[128];     /* unknown NCCL_* name: var points here */
} a2a_perf_env_hit;

/* Lint envp ("NAME=value" strings, NULL-terminated). Writes up to max hits
 * in envp order and returns how many were found in all (may exceed max).
 * Variables set to the empty string are ignored (NCCL treats them as unset).
 * Unknown NCCL_* names get a hit with severity warning and a suggestion when
 * a real name is within edit distance 2 (3 for names over 16 characters),
 * info without a suggestion otherwise (a plugin's or a newer NCCL's). */
size_t a2a_perf_env_lint(char *const *envp, const a2a_perf_env_ctx *ctx,
                         a2a_perf_env_hit *out, size_t max);

/* The closest real NCCL_* name to name (or NULL when none is within cap)
 * and its distance in *dist. */
const char *a2a_perf_env_closest(const char *name, int cap, int *dist);
/* Whether name is a NCCL_* variable NCCL (or PyTorch/nccl-tests) reads. */
bool a2a_perf_env_known_nccl(const char *name);
/* NCCL_* names other programs set on purpose (NCCL_VERSION in NVIDIA's
 * container images, NCCL_HOME, PyTorch's build variables): not reported. */
bool a2a_perf_env_not_nccl(const char *name);

/* Probe the host (reads /sys/class/infiniband once; not for the hot path). */
void a2a_perf_env_probe(a2a_perf_env_ctx *ctx);

#endif /* A2A_PERF_ENV_H */
