/* cmd_report.c - `a2acheck report [DIR...]`: merge the JSONL logs of one
 * job and render them (docs/report.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

static const char report_help[] =
    "usage: a2acheck report [options] [DIR...]\n"
    "\n"
    "Merge the per-process JSONL logs of one job (the a2acheck.<host>.<pid>.rank<R>.jsonl\n"
    "files in each DIR) into one report: findings deduplicated across ranks, the two\n"
    "sides of a cross-rank mismatch joined, errors first, the deadlock story once,\n"
    "per-communicator performance, and how every process ended.\n"
    "\n"
    "DIR defaults to $A2ACHECK_LOG_DIR, else the newest run in ./a2acheck-runs, else\n"
    "the newest job in ./a2acheck-logs. A DIR without logs of its own but with run\n"
    "subdirectories (like ./a2acheck-runs) stands for its newest run. Several DIRs are\n"
    "merged as one job (e.g. one directory per host); a .jsonl file stands for itself.\n"
    "\n"
    "options:\n"
    "  --format FMT          text (default), json, markdown, junit, sarif, html\n"
    "  -o, --output FILE     write the report there instead of stdout\n"
    "  --report FMT:FILE     also write FMT to FILE (repeatable)\n"
    "  --json FILE, --junit FILE, --sarif FILE, --html FILE, --markdown FILE\n"
    "                        shortcuts for --report FMT:FILE\n"
    "  --color WHEN          auto (default: on a terminal unless NO_COLOR), always, never\n"
    "  --fail-on LEVEL       exit with --exitcode when a finding matches LEVEL:\n"
    "                        deadlock, error, warning, never (default never)\n"
    "  --junit-fail-on LEVEL junit: findings at LEVEL are <failure>s (default error)\n"
    "  --exitcode N          status for --fail-on (default 66)\n"
    "  -q, --quiet           no report on stdout (only the --report files)\n"
    "  -h, --help            this text\n"
    "\n"
    "exit status: 0; --exitcode when --fail-on matched; 1 no log found or an output\n"
    "could not be written; 2 usage error.\n";

int cmd_report(int argc, char **argv) {
  argp a = {argc, argv, 1, false};
  const char *fmt_s = "text", *out = NULL, *color_s = "auto";
  const char *fail_s = "never", *jfail_s = "error", *exit_s = "66";
  bool quiet = false;
  rp_outputs outs = {.n = 0};
  const char **dirs = xcalloc((size_t)argc + 1, sizeof *dirs);
  int ndirs = 0;
  while (a.i < argc) {
    const char *v;
    if (arg_is(&a, "--help", "-h")) {
      fputs(report_help, stdout);
      free(dirs);
      return 0;
    } else if (arg_val(&a, "--format", "-f", &v)) fmt_s = v;
    else if (arg_val(&a, "--output", "-o", &v)) out = v;
    else if (arg_val(&a, "--color", NULL, &v)) color_s = v;
    else if (arg_val(&a, "--fail-on", NULL, &v)) fail_s = v;
    else if (arg_val(&a, "--junit-fail-on", NULL, &v)) jfail_s = v;
    else if (arg_val(&a, "--exitcode", NULL, &v)) exit_s = v;
    else if (arg_is(&a, "--quiet", "-q")) quiet = true, a.i++;
    else if (rp_outputs_arg(&outs, &a, "report")) {
    } else if (a.failed) {
    } else if (strcmp(argv[a.i], "--") == 0) {
      a.i++;
      while (a.i < argc) dirs[ndirs++] = argv[a.i++];
    } else if (argv[a.i][0] == '-' && argv[a.i][1]) {
      cli_usage_error("report", "unknown option '%s'", argv[a.i]);
      free(dirs);
      return A2A_EXIT_USAGE;
    } else {
      dirs[ndirs++] = argv[a.i++];
    }
    if (a.failed) {
      free(dirs);
      return A2A_EXIT_USAGE;
    }
  }
  int fmt = rp_format_parse(fmt_s);
  int color = color_mode_parse(color_s);
  int fail = rp_fail_level_parse(fail_s), jfail = rp_fail_level_parse(jfail_s);
  char *end;
  long exitcode = strtol(exit_s, &end, 10);
  if (fmt < 0 || color < 0 || fail < 0 || jfail < 0 || *end || end == exit_s || exitcode < 1 ||
      exitcode > 255) {
    cli_usage_error("report", "%s",
                    fmt < 0 ? "unknown --format" : color < 0 ? "--color wants auto, always or never"
                    : fail < 0 || jfail < 0 ? "a --fail-on level is deadlock, error, warning or never"
                                            : "--exitcode wants 1..255");
    free(dirs);
    return A2A_EXIT_USAGE;
  }

  rp_job j;
  rp_job_init(&j);
  int found = 0;
  if (ndirs == 0) {
    const char *env = getenv("A2ACHECK_LOG_DIR");
    const char *cands[3] = {env && *env && !strchr(env, '%') ? env : NULL, "./a2acheck-runs",
                            "./a2acheck-logs"};
    for (int k = 0; k < 3 && !found; k++) {
      if (!cands[k]) continue;
      char *d = resolve_run_dir(cands[k], true);
      if (d) {
        found += rp_job_add_dir(&j, d, NULL) > 0;
        free(d);
      }
    }
    if (!found)
      fprintf(stderr, "a2acheck report: no a2acheck logs in $A2ACHECK_LOG_DIR, ./a2acheck-runs or "
                      "./a2acheck-logs; name the run directory\n");
  } else {
    for (int k = 0; k < ndirs; k++) {
      struct stat st;
      if (stat(dirs[k], &st) == 0 && S_ISREG(st.st_mode)) { /* one log file */
        if (rp_job_add_file(&j, dirs[k]) == 0) found++;
        continue;
      }
      char *d = resolve_run_dir(dirs[k], true);
      if (!d) {
        fprintf(stderr, "a2acheck report: %s: no a2acheck logs (a2acheck.*.jsonl) %s\n", dirs[k],
                access(dirs[k], R_OK) == 0 ? "in it or in its subdirectories" : "(cannot open it)");
        continue;
      }
      found += rp_job_add_dir(&j, d, NULL) > 0;
      free(d);
    }
  }
  free(dirs);
  if (!found) {
    rp_job_free(&j);
    return A2A_EXIT_NOLOGS;
  }
  rp_job_merge(&j);
  for (size_t i = 0; i < j.nwarnings && i < 20; i++) fprintf(stderr, "a2acheck: warning: %s\n", j.warnings[i]);
  if (j.nwarnings + j.warnings_dropped > 20)
    fprintf(stderr, "a2acheck: warning: ... and %zu more\n", j.nwarnings + j.warnings_dropped - 20);

  rp_verdict v;
  rp_job_policy(&j, fail, false, &v);
  int status = v.matched ? (int)exitcode : 0;
  rp_opts o = {.color = false, .fail_level = jfail, .command = NULL, .command_status = -1,
               .verdict = v.matched ? &v : NULL, .exit_status = -1};
  int rc = 0;
  if (!quiet) {
    rp_outputs main_out = {.n = 0};
    rp_outputs_add(&main_out, (rp_format)fmt, out ? out : "-", "report");
    o.color = (!out || strcmp(out, "-") == 0) && fmt == RP_TEXT && color_wanted(color, STDOUT_FILENO);
    rc |= rp_outputs_write(&main_out, &j, &o);
  }
  o.color = false;
  rc |= rp_outputs_write(&outs, &j, &o);
  rp_job_free(&j);
  if (rc) return A2A_EXIT_NOLOGS;
  return status;
}
