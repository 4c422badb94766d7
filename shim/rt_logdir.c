/* rt_logdir.c - the policy of where the logs go and which directories may
 * hold them; pure functions (no I/O), unit-tested in tests/unit/test_logdir.c.
 * rt_log.c is the mechanism that applies them.
 *
 * Run directory of a job (a2a_rt_job_label). Without A2ACHECK_LOG_DIR the
 * logs of one job go to ./a2acheck-logs/<label>, so that `a2acheck report`
 * (which takes the newest run of a runs directory) merges exactly one job's
 * files and an old run never mixes with a new one. The label comes from the
 * launcher's job identity, the first of:
 *   TORCHELASTIC_RUN_ID          torchrun-<id>; torchrun's default id "none"
 *                                (no --rdzv-id) says nothing, so the label is
 *                                torchrun-<host>.<parent pid>: the workers of
 *                                one torchrun are children of its agent
 *   SLURM_JOB_ID[.SLURM_STEP_ID] slurm-<job>[.<step>]
 *   PMIX_NAMESPACE               pmix-<namespace> (Open MPI 5, PRRTE, Slurm PMIx)
 *   OMPI_MCA_ess_base_jobid      ompi-<jobid> (Open MPI 4)
 *   none of them                 proc-<host>.<pid>: one process, and the
 *                                children it forks (the directory is decided
 *                                at initialization and inherited)
 * Characters other than [A-Za-z0-9._-] become '_' and the id is cut at 64
 * characters, so the label is one path component and never "." or "..".
 *
 * Directory rule (a2a_rt_dir_check), after OpenSSH's StrictModes: the
 * directory that receives the files must be owned by the effective user and
 * writable by nobody else. A directory that fails is refused, never
 * repaired: its owner chose its mode. The directories above it are not
 * checked (unlike StrictModes): rt_log.c opens the log directory once and
 * then creates and renames files only relative to that descriptor, so a
 * directory above it (a 1777 /tmp, a bind mount owned by another uid) can no
 * longer redirect where the files go.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "rt_internal.h"

/* Append id to out[*k..cap) with the unsafe characters replaced. */
static void put_id(char *out, size_t cap, size_t *k, const char *id, size_t max) {
  for (size_t i = 0; id[i] && i < max && *k + 1 < cap; i++) {
    char c = id[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    out[(*k)++] = ok ? c : '_';
  }
  out[*k] = '\0';
}

static const char *nonempty(a2a_rt_getenv_fn get, const char *name) {
  const char *v = get(name);
  return v && *v ? v : NULL;
}

const char *a2a_rt_job_label(a2a_rt_getenv_fn get, const char *host, int pid, int ppid,
                             char *out, size_t cap) {
  size_t k = 0;
  char num[48];
  const char *v, *src;
  out[0] = '\0';
  if ((v = nonempty(get, "TORCHELASTIC_RUN_ID"))) {
    src = "TORCHELASTIC_RUN_ID";
    snprintf(out, cap, "torchrun-");
    k = strlen(out);
    if (strcmp(v, "none") != 0) {
      put_id(out, cap, &k, v, 64);
    } else {
      put_id(out, cap, &k, host, 64);
      snprintf(num, sizeof num, ".%d", ppid);
      put_id(out, cap, &k, num, sizeof num);
      src = "TORCHELASTIC_RUN_ID=none and the parent pid";
    }
  } else if ((v = nonempty(get, "SLURM_JOB_ID"))) {
    src = "SLURM_JOB_ID";
    snprintf(out, cap, "slurm-");
    k = strlen(out);
    put_id(out, cap, &k, v, 64);
    const char *step = nonempty(get, "SLURM_STEP_ID");
    if (step) {
      put_id(out, cap, &k, ".", 1);
      put_id(out, cap, &k, step, 32);
      src = "SLURM_JOB_ID.SLURM_STEP_ID";
    }
  } else if ((v = nonempty(get, "PMIX_NAMESPACE"))) {
    src = "PMIX_NAMESPACE";
    snprintf(out, cap, "pmix-");
    k = strlen(out);
    put_id(out, cap, &k, v, 64);
  } else if ((v = nonempty(get, "OMPI_MCA_ess_base_jobid"))) {
    src = "OMPI_MCA_ess_base_jobid";
    snprintf(out, cap, "ompi-");
    k = strlen(out);
    put_id(out, cap, &k, v, 64);
  } else {
    src = "no launcher job identity: this process";
    snprintf(out, cap, "proc-");
    k = strlen(out);
    put_id(out, cap, &k, host, 64);
    snprintf(num, sizeof num, ".%d", pid);
    put_id(out, cap, &k, num, sizeof num);
  }
  return src;
}

const char *a2a_rt_dir_check(unsigned uid, unsigned mode, unsigned euid) {
  if (!S_ISDIR(mode)) return "it is not a directory";
  if (uid != euid) return "it is owned by another user";
  if (mode & (S_IWGRP | S_IWOTH)) return "others may write to it (group- or world-writable)";
  return NULL;
}
