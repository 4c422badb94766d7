/* main.c - the a2acheck command: subcommand dispatch, --help, --version.
 *
 *   a2acheck run [flags] -- CMD...   run CMD with liba2acheck.so preloaded
 *   a2acheck report [DIR...]         merge a job's logs into one report
 *   a2acheck checks                  the checks table
 *   a2acheck options                 the A2ACHECK_* options table
 *
 * Plain C11 and libc; the checks and options tables are compiled in from
 * analyzers/ (a2a_checks.inc, a2a_options.inc), so they never disagree
 * with the runtime they were built with.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char main_help[] =
    "usage: a2acheck COMMAND [options]\n"
    "\n"
    "a2acheck checks programs that use NCCL all-to-all and point-to-point communication\n"
    "(PyTorch, DeepSpeed, hand-written ncclSend/ncclRecv) for buffer layout errors,\n"
    "API misuse, size and dtype mismatches between ranks, unsynchronized streams,\n"
    "deadlocks and slow configurations.\n"
    "\n"
    "commands:\n"
    "  run [flags] -- CMD...   run CMD (torchrun, mpirun, srun, python, ...) with\n"
    "                          liba2acheck.so preloaded, then print the merged report;\n"
    "                          exits 66 on a deadlock or when --fail-on matched\n"
    "  report [DIR...]         merge the per-process logs of a job: text, json,\n"
    "                          markdown, junit, sarif or html\n"
    "  checks                  list every check (name, severity, summary)\n"
    "  options                 list the A2ACHECK_* environment variables\n"
    "\n"
    "  a2acheck COMMAND --help    help on one command\n"
    "  a2acheck --version         the version\n"
    "\n"
    "example (CI): a2acheck run --fail-on error --junit report.xml -- torchrun --nproc-per-node 4 train.py\n";

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(main_help, stderr);
    return A2A_EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
    if (!strcmp(cmd, "help") && argc > 2) {
      char *sub[3] = {argv[2], "--help", NULL};
      if (!strcmp(argv[2], "run")) return cmd_run(2, sub);
      if (!strcmp(argv[2], "report")) return cmd_report(2, sub);
      if (!strcmp(argv[2], "checks")) return cmd_checks(2, sub);
      if (!strcmp(argv[2], "options")) return cmd_options(2, sub);
    }
    fputs(main_help, stdout);
    return 0;
  }
  if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V") || !strcmp(cmd, "version")) {
    printf("a2acheck %s\n", A2ACHECK_VERSION);
    return 0;
  }
  if (!strcmp(cmd, "run")) return cmd_run(argc - 1, argv + 1);
  if (!strcmp(cmd, "__preload-first")) return cmd_preload_first(argc - 1, argv + 1);
  if (!strcmp(cmd, "report")) return cmd_report(argc - 1, argv + 1);
  if (!strcmp(cmd, "checks")) return cmd_checks(argc - 1, argv + 1);
  if (!strcmp(cmd, "options")) return cmd_options(argc - 1, argv + 1);
  fprintf(stderr, "a2acheck: unknown command '%s' (run, report, checks, options; see a2acheck --help)\n", cmd);
  return A2A_EXIT_USAGE;
}
