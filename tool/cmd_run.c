/* cmd_run.c - `a2acheck run [flags] -- CMD...`: run CMD with
 * liba2acheck.so preloaded into every process it starts, the A2ACHECK_*
 * options taken from flags, the logs of this job in a fresh run directory;
 * then merge them, print the report and exit with the failure policy's
 * status (docs/report.md, "a2acheck run").
 *
 * The library is found relative to this binary (bin/../lib, the same in
 * the build tree and in an install prefix). Launchers started as CMD
 * (torchrun, deepspeed, mpirun, srun, a shell script) pass the environment
 * to the processes they start on this host; a2acheck itself only forks,
 * waits and forwards signals (launch.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "a2a_checks.h"
#include "cli.h"
#include "launch.h"
#include "options.h"

#ifndef A2A_REL_LIBDIR
#define A2A_REL_LIBDIR "../lib"
#endif
#define SHIM_NAME "liba2acheck.so"

/* Rows of the options table that have their own flag (or none). */
static bool own_flag(const char *env) {
  static const char *own[] = {"A2ACHECK_DISABLE", "A2ACHECK_HELP", "A2ACHECK_LOG_DIR",
                              "A2ACHECK_FAIL_ON", "A2ACHECK_EXITCODE", "A2ACHECK_CHECKS",
                              "A2ACHECK_SUPPRESSIONS"};
  for (size_t i = 0; i < sizeof own / sizeof *own; i++)
    if (strcmp(env, own[i]) == 0) return true;
  return false;
}

static void flag_name(const a2a_opt_row *r, char *out, size_t cap) {
  snprintf(out, cap, "--%s", r->field);
  for (char *p = out + 2; *p; p++)
    if (*p == '_') *p = '-';
}

static void print_help(void) {
  printf("usage: a2acheck run [flags] [--] CMD [ARGS...]\n"
         "\n"
         "Run CMD with liba2acheck.so preloaded (LD_PRELOAD, ahead of any existing entries),\n"
         "the logs of every process in a fresh run directory, then print the merged report\n"
         "(as `a2acheck report` does) and exit with the failure policy's status. CMD may be\n"
         "the program itself or a launcher that starts the ranks with this environment:\n"
         "torchrun, deepspeed, mpirun (Open MPI: add -x LD_PRELOAD -x A2ACHECK_LOG_DIR for\n"
         "remote nodes), srun, a shell script.\n"
         "\n"
         "flags:\n"
         "  --fail-on LEVEL        deadlock (default), error, warning, never: which findings make\n"
         "                         the job fail (A2ACHECK_FAIL_ON); use error in CI\n"
         "  --exitcode N           the failing status (A2ACHECK_EXITCODE, default 66)\n"
         "  --checks LIST          enable/disable checks: 'all,-perf,+perf.env' (A2ACHECK_CHECKS)\n"
         "  --suppressions FILE    check:pattern lines to silence (A2ACHECK_SUPPRESSIONS)\n"
         "  --log-dir DIR          the run directory (must not hold logs yet); default\n"
         "                         RUNS/<date>-<time>-<pid>\n"
         "  --runs-dir RUNS        where fresh run directories go (default $A2ACHECK_RUNS_DIR,\n"
         "                         else ./a2acheck-runs)\n"
         "  -e, --env NAME=VALUE   set any variable for the job (repeatable)\n"
         "  --sim                  run CMD on the CPU simulator (build tree only: a2asim-run)\n"
         "  --library PATH         the liba2acheck.so to preload (default: next to this binary)\n"
         "  --grace SECONDS        after CMD ended, how long its leftover processes may run\n"
         "                         before they are terminated (default 10)\n"
         "report:\n"
         "  --format FMT           format of the report on stderr: text (default), markdown, json\n"
         "  --report FMT:FILE      also write FMT (text, json, markdown, junit, sarif, html) to FILE\n"
         "  --junit FILE, --sarif FILE, --html FILE, --json FILE, --markdown FILE\n"
         "  --color WHEN           auto, always, never (stderr report)\n"
         "  -q, --quiet            no report on stderr (files are still written)\n"
         "  -v, --verbose          say what a2acheck sets and does\n"
         "runtime options (each sets the A2ACHECK_* variable of the same name):\n");
  for (size_t i = 0; i < a2a_opt_nrows; i++) {
    const a2a_opt_row *r = &a2a_opt_rows[i];
    if (own_flag(r->env)) continue;
    char flag[64], def[128];
    flag_name(r, flag, sizeof flag);
    a2a_opt_default_text(r, def, sizeof def);
    printf("  %-24s %s (%s, default %s)\n", flag, r->help, r->env, def);
  }
  printf("\n"
         "exit status: A2ACHECK_EXITCODE (66) when a process was ended by a deadlock verdict or\n"
         "the --fail-on policy matched (also when the launcher itself exited 1, and for\n"
         "processes killed before they wrote a summary); otherwise CMD's own status (128+N\n"
         "for a signal N). 2: usage error; 126/127: CMD could not be executed / not found.\n"
         "\n"
         "example: a2acheck run --fail-on error --junit report.xml -- torchrun --nproc-per-node 4 train.py\n");
}

/* ---- small helpers ---- */

static char *self_exe(void) {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return NULL;
  buf[n] = 0;
  return xstrdup(buf);
}

static char *dir_of(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? xstrndup(path, (size_t)(s - path)) : xstrdup(".");
}

static char *abs_path(const char *p) {
  char buf[PATH_MAX];
  if (realpath(p, buf)) return xstrdup(buf);
  if (p[0] == '/') return xstrdup(p);
  if (!getcwd(buf, sizeof buf)) return xstrdup(p);
  return xasprintf("%s/%s", buf, p);
}

/* mkdir -p; what it creates is 0700: the library refuses a log directory
 * that others may write to (shim/rt_logdir.c), whatever the umask made. */
static int mkdir_p(const char *path) {
  char *p = xstrdup(path);
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = 0;
    if (mkdir(p, 0700) != 0 && errno != EEXIST) {
      free(p);
      return -1;
    }
    *s = '/';
  }
  int rc = mkdir(p, 0700) != 0 && errno != EEXIST ? -1 : 0;
  free(p);
  return rc;
}

static bool readable_file(const char *p) {
  struct stat st;
  return p && stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, R_OK) == 0;
}

static char *find_library(const char *exe_dir) {
  const char *cands[2] = {A2A_REL_LIBDIR, "../lib"};
  for (int i = 0; i < 2; i++) {
    char *p = xasprintf("%s/%s/%s", exe_dir, cands[i], SHIM_NAME);
    if (readable_file(p)) {
      char *a = abs_path(p);
      free(p);
      return a;
    }
    free(p);
  }
  return NULL;
}

/* LD_PRELOAD with lib first and no other liba2acheck.so (ld.so separates
 * entries with ':' or spaces). */
static char *preload_first(const char *lib, const char *existing, int *dropped) {
  strbuf b = {0};
  sb_puts(&b, lib);
  *dropped = 0;
  if (existing) {
    const char *p = existing;
    while (*p) {
      size_t n = strcspn(p, ": ");
      if (n) {
        char *ent = xstrndup(p, n);
        const char *base = strrchr(ent, '/');
        base = base ? base + 1 : ent;
        if (strcmp(base, SHIM_NAME) == 0) {
          (*dropped)++;
        } else {
          sb_putc(&b, ':');
          sb_puts(&b, ent);
        }
        free(ent);
      }
      p += n;
      while (*p == ':' || *p == ' ') p++;
    }
  }
  return b.s;
}

/* `a2acheck __preload-first LIB -- CMD...`: reorder LD_PRELOAD so LIB
 * comes first, then exec CMD. --sim runs it inside the simulator's wrapper,
 * whatever that wrapper did to LD_PRELOAD: the checker must precede the
 * simulated libcudart/libnccl to interpose them. */
int cmd_preload_first(int argc, char **argv) {
  if (argc < 4 || strcmp(argv[2], "--") != 0) {
    fprintf(stderr, "a2acheck: usage: a2acheck __preload-first LIB -- CMD...\n");
    return A2A_EXIT_USAGE;
  }
  int dropped;
  char *pre = preload_first(argv[1], getenv("LD_PRELOAD"), &dropped);
  setenv("LD_PRELOAD", pre, 1);
  free(pre);
  execvp(argv[3], argv + 3);
  int e = errno;
  fprintf(stderr, "a2acheck: cannot run %s: %s\n", argv[3], strerror(e));
  return e == ENOENT ? A2A_EXIT_NOTFOUND : A2A_EXIT_NOEXEC;
}

/* Validate an A2ACHECK_CHECKS list against the checks table. */
static bool checks_ok(const char *list) {
  bool ok = true;
  const char *p = list;
  while (*p) {
    size_t n = strcspn(p, ",");
    const char *w = p;
    size_t wn = n;
    while (wn && (*w == ' ')) w++, wn--;
    while (wn && w[wn - 1] == ' ') wn--;
    if (wn && (*w == '+' || *w == '-')) w++, wn--;
    if (wn && !(wn == 3 && strncmp(w, "all", 3) == 0) && !a2a_check_is_category(w, wn) &&
        a2a_check_by_name_n(w, wn) == A2A_CK_NONE) {
      a2a_check_id s = a2a_check_suggest(w, wn);
      fprintf(stderr, "a2acheck run: --checks: '%.*s' is no check or category%s%s%s\n", (int)wn, w,
              s != A2A_CK_NONE ? " (did you mean " : "", s != A2A_CK_NONE ? a2a_check_name(s) : "",
              s != A2A_CK_NONE ? "?)" : "");
      ok = false;
    }
    p += n;
    if (*p == ',') p++;
  }
  return ok;
}

typedef struct setting {
  const char *name;
  char *value;
  char *owned_name;           /* --env NAME=VALUE: the name's copy */
} setting;

typedef struct settings {
  setting s[128];
  int n;
} settings;

/* Set name=value for the job (a copy of value; name is copied when
 * copy_name). */
static void set_var(settings *ss, const char *name, const char *value, bool copy_name) {
  for (int i = 0; i < ss->n; i++)
    if (strcmp(ss->s[i].name, name) == 0) {
      free(ss->s[i].value);
      ss->s[i].value = xstrdup(value);
      return;
    }
  if (ss->n < (int)(sizeof ss->s / sizeof ss->s[0])) {
    setting *t = &ss->s[ss->n++];
    t->owned_name = copy_name ? xstrdup(name) : NULL;
    t->name = copy_name ? t->owned_name : name;
    t->value = xstrdup(value);
  }
}

static void settings_free(settings *ss) {
  for (int i = 0; i < ss->n; i++) {
    free(ss->s[i].value);
    free(ss->s[i].owned_name);
  }
  ss->n = 0;
}

static const char *get_var(const settings *ss, const char *name) {
  for (int i = 0; i < ss->n; i++)
    if (strcmp(ss->s[i].name, name) == 0) return ss->s[i].value;
  const char *e = getenv(name);
  return e && *e ? e : NULL;
}

static bool is_mpirun(const char *cmd) {
  const char *b = strrchr(cmd, '/');
  b = b ? b + 1 : cmd;
  return !strcmp(b, "mpirun") || !strcmp(b, "mpiexec") || !strcmp(b, "orterun") ||
         !strcmp(b, "prterun") || !strcmp(b, "mpirun.openmpi") || !strcmp(b, "mpiexec.openmpi");
}

int cmd_run(int argc, char **argv) {
  argp a = {argc, argv, 1, false};
  settings ss = {.n = 0};
  rp_outputs outs = {.n = 0};
  const char *fmt_s = "text", *color_s = "auto", *log_dir = NULL, *runs_dir = NULL;
  const char *library = NULL, *grace_s = "10";
  bool sim = false, quiet = false, verbose = false;
  int cmd_at = -1, status = 0;
  char *exe = NULL, *exe_dir = NULL, *lib = NULL, *simrun = NULL, *rundir = NULL, **cmd = NULL;
  strbuf cmdline = {0};
  while (a.i < argc && cmd_at < 0) {
    const char *v;
    const char *arg = argv[a.i];
    if (strcmp(arg, "--") == 0) {
      cmd_at = a.i + 1;
      break;
    }
    if (arg[0] != '-' || !arg[1]) {
      cmd_at = a.i;
      break;
    }
    if (arg_is(&a, "--help", "-h")) {
      print_help();
      goto out;
    } else if (arg_is(&a, "--sim", NULL)) sim = true, a.i++;
    else if (arg_is(&a, "--quiet", "-q")) quiet = true, a.i++;
    else if (arg_is(&a, "--verbose", "-v")) verbose = true, a.i++;
    else if (arg_val(&a, "--fail-on", NULL, &v)) {
      if (rp_fail_level_parse(v) < 0) {
        cli_usage_error("run", "--fail-on wants deadlock, error, warning or never, not '%s'", v);
        status = A2A_EXIT_USAGE;
        goto out;
      }
      set_var(&ss, "A2ACHECK_FAIL_ON", v, false);
    } else if (arg_val(&a, "--exitcode", NULL, &v)) {
      char *e;
      long x = strtol(v, &e, 10);
      if (*e || e == v || x < 1 || x > 255) {
        cli_usage_error("run", "--exitcode wants 1..255");
        status = A2A_EXIT_USAGE;
        goto out;
      }
      set_var(&ss, "A2ACHECK_EXITCODE", v, false);
    } else if (arg_val(&a, "--checks", NULL, &v)) {
      if (!checks_ok(v)) {
        status = A2A_EXIT_USAGE;
        goto out;
      }
      set_var(&ss, "A2ACHECK_CHECKS", v, false);
    } else if (arg_val(&a, "--suppressions", NULL, &v)) {
      if (!readable_file(v)) {
        cli_usage_error("run", "--suppressions: cannot read '%s'", v);
        status = A2A_EXIT_USAGE;
        goto out;
      }
      char *ab = abs_path(v);
      set_var(&ss, "A2ACHECK_SUPPRESSIONS", ab, false);
      free(ab);
    } else if (arg_val(&a, "--log-dir", NULL, &v)) log_dir = v;
    else if (arg_val(&a, "--runs-dir", NULL, &v)) runs_dir = v;
    else if (arg_val(&a, "--library", NULL, &v)) library = v;
    else if (arg_val(&a, "--grace", NULL, &v)) grace_s = v;
    else if (arg_val(&a, "--format", "-f", &v)) fmt_s = v;
    else if (arg_val(&a, "--color", NULL, &v)) color_s = v;
    else if (arg_val(&a, "--env", "-e", &v)) {
      const char *eq = strchr(v, '=');
      if (!eq || eq == v) {
        cli_usage_error("run", "--env wants NAME=VALUE, not '%s'", v);
        status = A2A_EXIT_USAGE;
        goto out;
      }
      char *name = xstrndup(v, (size_t)(eq - v));
      if (!strcmp(name, "A2ACHECK_LOG_DIR")) {
        free(name);
        cli_usage_error("run", "use --log-dir DIR, not -e A2ACHECK_LOG_DIR=");
        status = A2A_EXIT_USAGE;
        goto out;
      }
      set_var(&ss, name, eq + 1, true);
      free(name);
    } else if (rp_outputs_arg(&outs, &a, "run")) {
    } else if (!a.failed) {
      /* a flag derived from the options table */
      bool matched = false;
      for (size_t i = 0; i < a2a_opt_nrows && !matched; i++) {
        const a2a_opt_row *r = &a2a_opt_rows[i];
        if (own_flag(r->env)) continue;
        char flag[64];
        flag_name(r, flag, sizeof flag);
        if (arg_val(&a, flag, NULL, &v)) {
          matched = true;
          const char *why = a2a_opt_check_value(r, v);
          if (why) {
            cli_usage_error("run", "%s %s: %s (%s: %s)", flag, v, why, r->env, a2a_opt_type_text(r));
            status = A2A_EXIT_USAGE;
            goto out;
          }
          set_var(&ss, r->env, v, false);
        }
      }
      if (!matched && !a.failed) {
        cli_usage_error("run", "unknown flag '%s'", arg);
        status = A2A_EXIT_USAGE;
        goto out;
      }
    }
    if (a.failed) {
      status = A2A_EXIT_USAGE;
      goto out;
    }
  }
  if (cmd_at < 0 || cmd_at >= argc) {
    cli_usage_error("run", "no command to run (a2acheck run [flags] -- CMD...)");
    status = A2A_EXIT_USAGE;
    goto out;
  }
  int fmt = rp_format_parse(fmt_s), color = color_mode_parse(color_s);
  char *gend;
  double grace = strtod(grace_s, &gend);
  if (fmt < 0 || color < 0 || *gend || grace < 0) {
    cli_usage_error("run", "%s", fmt < 0 ? "unknown --format" : color < 0 ? "--color wants auto, always or never"
                                                                       : "--grace wants seconds");
    status = A2A_EXIT_USAGE;
    goto out;
  }

  /* the library (and the simulator's wrapper) next to this binary */
  exe = self_exe();
  exe_dir = exe ? dir_of(exe) : xstrdup(".");
  if (library) {
    if (!readable_file(library)) {
      fprintf(stderr, "a2acheck run: --library: cannot read %s\n", library);
      {
      status = A2A_EXIT_USAGE;
      goto out;
    }
    }
    lib = abs_path(library);
  } else {
    lib = find_library(exe_dir);
    if (!lib) {
      fprintf(stderr, "a2acheck run: %s not found next to %s (looked in %s/%s and %s/../lib); "
                      "pass --library PATH\n", SHIM_NAME, exe ? exe : "a2acheck", exe_dir,
              A2A_REL_LIBDIR, exe_dir);
      {
      status = A2A_EXIT_USAGE;
      goto out;
    }
    }
  }
  if (sim) {
    const char *env = getenv("A2ACHECK_SIM_RUN");
    simrun = env && *env ? xstrdup(env) : xasprintf("%s/../sim/bin/a2asim-run", exe_dir);
    if (access(simrun, X_OK) != 0) {
      fprintf(stderr, "a2acheck run --sim: the simulator's wrapper %s is not there: the CPU "
                      "simulator is part of a build tree with tests (cmake -DA2A_BUILD_TESTS=ON), "
                      "not of an installation (or set A2ACHECK_SIM_RUN)\n", simrun);
      {
      status = A2A_EXIT_USAGE;
      goto out;
    }
    }
  }

  /* the run directory */
  if (log_dir) {
    if (strchr(log_dir, '%')) {
      cli_usage_error("run", "--log-dir: %%h/%%p are not expanded here: a2acheck run uses one "
                             "directory per job (a2acheck report can merge per-host directories)");
      {
      status = A2A_EXIT_USAGE;
      goto out;
    }
    }
    if (mkdir_p(log_dir) != 0) {
      fprintf(stderr, "a2acheck run: cannot create %s: %s\n", log_dir, strerror(errno));
      {
      status = A2A_EXIT_USAGE;
      goto out;
    }
    }
    if (count_logs(log_dir) > 0) {
      fprintf(stderr, "a2acheck run: %s already holds a2acheck logs of another run; name an empty "
                      "directory (or leave --log-dir out for a fresh one)\n", log_dir);
      {
      status = A2A_EXIT_USAGE;
      goto out;
    }
    }
    rundir = abs_path(log_dir);
  } else {
    const char *parent = runs_dir ? runs_dir : getenv("A2ACHECK_RUNS_DIR");
    if (!parent || !*parent) parent = "./a2acheck-runs";
    char stamp[64];
    time_t t = time(NULL);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    char *d = xasprintf("%s/%s-%ld", parent, stamp, (long)getpid());
    if (mkdir_p(d) != 0) {
      fprintf(stderr, "a2acheck run: cannot create %s: %s\n", d, strerror(errno));
      {
      status = A2A_EXIT_USAGE;
      goto out;
    }
    }
    rundir = abs_path(d);
    free(d);
  }
  const char *old_dir = getenv("A2ACHECK_LOG_DIR");
  if (old_dir && *old_dir && verbose)
    fprintf(stderr, "a2acheck: A2ACHECK_LOG_DIR=%s from the environment is replaced by the run "
                    "directory\n", old_dir);
  set_var(&ss, "A2ACHECK_LOG_DIR", rundir, false);

  /* effective policy (flag, else environment, else the runtime's default);
   * a value the runtime would refuse is replaced by its default there too */
  int level = rp_fail_level_parse(get_var(&ss, "A2ACHECK_FAIL_ON"));
  if (level < 0) level = RP_FAIL_DEADLOCK;
  long exitcode = 66;
  const char *ec = get_var(&ss, "A2ACHECK_EXITCODE");
  if (ec) {
    char *e;
    long x = strtol(ec, &e, 10);
    if (!*e && e != ec && x >= 1 && x <= 255) exitcode = x;
  }

  /* environment */
  for (int i = 0; i < ss.n; i++) {
    setenv(ss.s[i].name, ss.s[i].value, 1);
    if (verbose) fprintf(stderr, "a2acheck: %s=%s\n", ss.s[i].name, ss.s[i].value);
  }
  if (!sim) {
    int dropped;
    char *pre = preload_first(lib, getenv("LD_PRELOAD"), &dropped);
    if (dropped)
      fprintf(stderr, "a2acheck: note: removed %d other %s from LD_PRELOAD\n", dropped, SHIM_NAME);
    setenv("LD_PRELOAD", pre, 1);
    if (verbose) fprintf(stderr, "a2acheck: LD_PRELOAD=%s\n", pre);
    free(pre);
  }

  /* the command line */
  int ncmd = argc - cmd_at;
  cmd = xcalloc((size_t)ncmd + 7, sizeof *cmd);
  int k = 0;
  if (sim) {
    /* a2asim-run [NAME=VALUE...] [--] COMMAND: set the simulator up, then
     * this binary puts the checker first and execs CMD */
    cmd[k++] = simrun;
    cmd[k++] = "--";
    cmd[k++] = exe ? exe : "a2acheck";
    cmd[k++] = "__preload-first";
    cmd[k++] = lib;
    cmd[k++] = "--";
  }
  for (int i = 0; i < ncmd; i++) cmd[k++] = argv[cmd_at + i];
  cmd[k] = NULL;
  for (int i = 0; i < ncmd; i++) {
    const char *w = argv[cmd_at + i];
    if (i) sb_putc(&cmdline, ' ');
    bool q = !*w || strpbrk(w, " \t'\"\\$`*?;&|<>()");
    if (q) {
      sb_putc(&cmdline, '\'');
      for (const char *c = w; *c; c++) {
        if (*c == '\'') sb_puts(&cmdline, "'\\''");
        else sb_putc(&cmdline, *c);
      }
      sb_putc(&cmdline, '\'');
    } else {
      sb_puts(&cmdline, w);
    }
  }
  fprintf(stderr, "a2acheck: run directory %s\n", rundir);
  if (is_mpirun(argv[cmd_at])) {
    bool x = false;
    for (int i = cmd_at + 1; i < argc; i++)
      if (!strcmp(argv[i], "-x") && i + 1 < argc && !strncmp(argv[i + 1], "LD_PRELOAD", 10)) x = true;
    if (!x)
      fprintf(stderr, "a2acheck: note: Open MPI passes the environment only to ranks on this host; "
                      "for other hosts add -x LD_PRELOAD -x A2ACHECK_LOG_DIR%s to the mpirun "
                      "command (the library and the run directory must exist there)\n",
              ss.n > 1 ? " and -x for each A2ACHECK_* variable set" : "");
  }

  launch_result lr;
  launch_run(cmd, grace, verbose, &lr);
  if (lr.exec_failed) {
    fprintf(stderr, "a2acheck run: cannot run %s: %s\n", cmd[0], strerror(lr.exec_errno));
    {
      status = lr.status;
      goto out;
    }
  }

  rp_job j;
  rp_job_init(&j);
  size_t files = rp_job_add_dir(&j, rundir, NULL);
  rp_job_merge(&j);
  for (size_t i = 0; i < j.nwarnings && i < 5; i++) fprintf(stderr, "a2acheck: warning: %s\n", j.warnings[i]);
  rp_verdict v;
  rp_job_policy(&j, level, true, &v);
  status = v.matched ? (int)exitcode : lr.status;
  rp_opts o = {.color = false, .fail_level = level == RP_FAIL_WARNING ? RP_FAIL_WARNING : RP_FAIL_ERROR,
               .command = sb_str(&cmdline), .command_status = lr.status,
               .verdict = v.matched ? &v : NULL, .exit_status = status};
  if (!files) {
    fprintf(stderr, "a2acheck: no process wrote a log in %s: the command made no NCCL or CUDA "
                    "runtime call through %s (it ended%s before its first one, NCCL is linked "
                    "statically or called through its own dlsym, or the launcher did not pass "
                    "LD_PRELOAD on)\n", rundir, SHIM_NAME,
            lr.status > 128 ? " or was interrupted" : "");
    if (!log_dir) rmdir(rundir); /* the fresh directory, if still empty */
  }
  if (!quiet && files) {
    strbuf b = {0};
    o.color = fmt == RP_TEXT && color_wanted(color, STDERR_FILENO);
    rp_render(&b, (rp_format)fmt, &j, &o);
    fputs("\n", stderr);
    fputs(sb_str(&b), stderr);
    sb_free(&b);
    o.color = false;
  }
  if (rp_outputs_write(&outs, &j, &o) == 0)
    for (int i = 0; i < outs.n; i++)
      fprintf(stderr, "a2acheck: wrote the %s report to %s\n", rp_format_name(outs.o[i].fmt), outs.o[i].path);
  if (v.matched)
    fprintf(stderr, "a2acheck: exit status %d: %s (the command exited %d)\n", status, v.reason, lr.status);
  else if (verbose)
    fprintf(stderr, "a2acheck: exit status %d (the command's)\n", status);
  rp_job_free(&j);
out:
  sb_free(&cmdline);
  settings_free(&ss);
  free(cmd);
  free(lib);
  free(simrun);
  free(exe);
  free(exe_dir);
  free(rundir);
  return status;
}
