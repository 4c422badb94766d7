/* test_logdir.c - where the logs go and which directories may hold them
 * (shim/rt_logdir.c): the run directory of a job from each launcher's
 * identity, the characters a label may hold, and the StrictModes-like rule
 * for the directory that receives the files. rt_logdir.c is pure (no I/O)
 * and compiled in directly. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../shim/rt_logdir.c"

static const char *fake_env[8][2];
static int fake_n;
static const char *fake_getenv(const char *name) {
  for (int i = 0; i < fake_n; i++)
    if (strcmp(fake_env[i][0], name) == 0) return fake_env[i][1];
  return NULL;
}
static void env_set(const char *name, const char *value) {
  fake_env[fake_n][0] = name;
  fake_env[fake_n][1] = value;
  fake_n++;
}
static void setup(void) { fake_n = 0; }

static char label[160];
static const char *job(void) {
  return a2a_rt_job_label(fake_getenv, "node7", 4242, 4100, label, sizeof label);
}

START_TEST(no_launcher_is_this_process) {
  ck_assert_str_eq(job(), "no launcher job identity: this process");
  ck_assert_str_eq(label, "proc-node7.4242");
}
END_TEST

START_TEST(torchrun_run_id) {
  env_set("TORCHELASTIC_RUN_ID", "a1b2-c3");
  env_set("SLURM_JOB_ID", "99");   /* torchrun inside an allocation: torchrun wins */
  ck_assert_str_eq(job(), "TORCHELASTIC_RUN_ID");
  ck_assert_str_eq(label, "torchrun-a1b2-c3");
}
END_TEST

START_TEST(torchrun_default_id_uses_the_agent) {
  env_set("TORCHELASTIC_RUN_ID", "none");
  job();
  ck_assert_str_eq(label, "torchrun-node7.4100");
}
END_TEST

START_TEST(slurm_job_and_step) {
  env_set("SLURM_JOB_ID", "123456");
  ck_assert_str_eq(job(), "SLURM_JOB_ID");
  ck_assert_str_eq(label, "slurm-123456");
  env_set("SLURM_STEP_ID", "2");
  ck_assert_str_eq(job(), "SLURM_JOB_ID.SLURM_STEP_ID");
  ck_assert_str_eq(label, "slurm-123456.2");
}
END_TEST

START_TEST(pmix_and_ompi) {
  env_set("OMPI_MCA_ess_base_jobid", "3735879681");
  ck_assert_str_eq(job(), "OMPI_MCA_ess_base_jobid");
  ck_assert_str_eq(label, "ompi-3735879681");
  env_set("PMIX_NAMESPACE", "prterun-node7-3095@1");
  ck_assert_str_eq(job(), "PMIX_NAMESPACE");
  ck_assert_str_eq(label, "pmix-prterun-node7-3095_1");
}
END_TEST

START_TEST(empty_values_are_not_identities) {
  env_set("TORCHELASTIC_RUN_ID", "");
  env_set("SLURM_JOB_ID", "");
  env_set("PMIX_NAMESPACE", "ns");
  job();
  ck_assert_str_eq(label, "pmix-ns");
}
END_TEST

START_TEST(labels_are_one_safe_component) {
  env_set("TORCHELASTIC_RUN_ID", "../../etc/x y");
  job();
  ck_assert_str_eq(label, "torchrun-.._.._etc_x_y");
  ck_assert_ptr_null(strchr(label, '/'));
  fake_n = 0;
  char longid[300];
  memset(longid, 'a', sizeof longid - 1);
  longid[sizeof longid - 1] = '\0';
  env_set("SLURM_JOB_ID", longid);
  job();
  ck_assert_uint_eq(strlen(label), strlen("slurm-") + 64);
  char tiny[8];
  a2a_rt_job_label(fake_getenv, "h", 1, 1, tiny, sizeof tiny);
  ck_assert_str_eq(tiny, "slurm-a");
}
END_TEST

START_TEST(dir_rule) {
  unsigned me = 1000, other = 65534;
  ck_assert_ptr_null(a2a_rt_dir_check(me, S_IFDIR | 0700, me));
  ck_assert_ptr_null(a2a_rt_dir_check(me, S_IFDIR | 0755, me));
  ck_assert_ptr_null(a2a_rt_dir_check(0, S_IFDIR | 0700, 0));
  ck_assert_str_eq(a2a_rt_dir_check(other, S_IFDIR | 0700, me), "it is owned by another user");
  ck_assert_str_eq(a2a_rt_dir_check(0, S_IFDIR | 01777, me), "it is owned by another user");
  ck_assert_ptr_nonnull(a2a_rt_dir_check(me, S_IFDIR | 0777, me));
  ck_assert_ptr_nonnull(a2a_rt_dir_check(me, S_IFDIR | 0770, me));
  ck_assert_ptr_nonnull(a2a_rt_dir_check(me, S_IFDIR | 0702, me));
  ck_assert_ptr_nonnull(a2a_rt_dir_check(me, S_IFDIR | 01777, me));   /* sticky is no excuse */
  ck_assert_str_eq(a2a_rt_dir_check(me, S_IFREG | 0600, me), "it is not a directory");
}
END_TEST

int main(void) {
  Suite *s = suite_create("logdir");
  TCase *tc = tcase_create("policy");
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_set_timeout(tc, 10);
  tcase_add_test(tc, no_launcher_is_this_process);
  tcase_add_test(tc, torchrun_run_id);
  tcase_add_test(tc, torchrun_default_id_uses_the_agent);
  tcase_add_test(tc, slurm_job_and_step);
  tcase_add_test(tc, pmix_and_ompi);
  tcase_add_test(tc, empty_values_are_not_identities);
  tcase_add_test(tc, labels_are_one_safe_component);
  tcase_add_test(tc, dir_rule);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
