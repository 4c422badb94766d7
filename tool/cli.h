/* cli.h - what the subcommands share: argument matching, the report
 * outputs (--format/-o, --report FORMAT:FILE and the --junit FILE style
 * shortcuts), locating a job's run directory, and loading + writing a
 * report. */
#ifndef A2A_TOOL_CLI_H
#define A2A_TOOL_CLI_H

#include <stdbool.h>

#include "job.h"
#include "report.h"

#ifndef A2ACHECK_VERSION
#define A2ACHECK_VERSION "unknown"
#endif

/* Exit statuses of a2acheck itself (docs/report.md, "Exit status"). */
enum {
  A2A_EXIT_OK = 0,
  A2A_EXIT_NOLOGS = 1,      /* report: no log found / unreadable output */
  A2A_EXIT_USAGE = 2,
  A2A_EXIT_NOEXEC = 126,    /* run: CMD found but not executable */
  A2A_EXIT_NOTFOUND = 127,  /* run: CMD not found */
};

typedef struct argp {
  int argc;
  char **argv;
  int i;                    /* next argument */
  bool failed;
} argp;

/* The current argument is --name (or -short when short_ is not NULL). */
bool arg_is(argp *a, const char *name, const char *short_);
/* --name VALUE or --name=VALUE: *val is set and the cursor advances;
 * a missing value is a usage error (a->failed). */
bool arg_val(argp *a, const char *name, const char *short_, const char **val);

void cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

typedef struct rp_output {
  rp_format fmt;
  const char *path;         /* "-" = stdout */
} rp_output;

typedef struct rp_outputs {
  rp_output o[16];
  int n;
} rp_outputs;

/* Parse "FORMAT:FILE" (FORMAT one of rp_format_name). */
bool rp_outputs_add_spec(rp_outputs *outs, const char *spec, const char *cmd);
bool rp_outputs_add(rp_outputs *outs, rp_format fmt, const char *path, const char *cmd);
/* Consume one of the shared report options at the cursor (--report,
 * --json/--junit/--sarif/--html/--markdown FILE); false if it is none. */
bool rp_outputs_arg(rp_outputs *outs, argp *a, const char *cmd);
/* Write every output; 0, or -1 after a message on stderr. */
int rp_outputs_write(const rp_outputs *outs, const rp_job *j, const rp_opts *o);

/* --color auto|always|never for a stream (fd). */
int color_mode_parse(const char *s);   /* 0 auto, 1 always, 2 never, -1 bad */
bool color_wanted(int mode, int fd);

/* The run directories to merge for DIR (as given by the user): DIR itself
 * when it holds a2acheck logs, else its newest subdirectory that does (a
 * runs directory such as ./a2acheck-runs), said on stderr. Returns a
 * malloc'd path or NULL when nothing holds logs. */
char *resolve_run_dir(const char *dir, bool verbose);
/* Whether dir directly holds a2acheck.*.jsonl files (how many). */
int count_logs(const char *dir);

/* The documentation URL base for check help (SARIF helpUri, HTML links). */
#define A2A_CHECKS_DOC "docs/checks.md"

int cmd_report(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_preload_first(int argc, char **argv);   /* internal: --sim */
int cmd_checks(int argc, char **argv);
int cmd_options(int argc, char **argv);

#endif /* A2A_TOOL_CLI_H */
