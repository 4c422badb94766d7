/* cli.c - argument helpers, report outputs and run-directory lookup
 * shared by the subcommands (cli.h). */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool arg_is(argp *a, const char *name, const char *short_) {
  if (a->i >= a->argc) return false;
  const char *s = a->argv[a->i];
  return strcmp(s, name) == 0 || (short_ && strcmp(s, short_) == 0);
}

bool arg_val(argp *a, const char *name, const char *short_, const char **val) {
  if (a->i >= a->argc) return false;
  const char *s = a->argv[a->i];
  size_t n = strlen(name);
  if (strncmp(s, name, n) == 0 && s[n] == '=') {
    *val = s + n + 1;
    a->i++;
    return true;
  }
  if (strcmp(s, name) == 0 || (short_ && strcmp(s, short_) == 0)) {
    if (a->i + 1 >= a->argc) {
      fprintf(stderr, "a2acheck: %s needs a value\n", s);
      a->failed = true;
      a->i++;
      return false;
    }
    *val = a->argv[a->i + 1];
    a->i += 2;
    return true;
  }
  return false;
}

void cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "a2acheck %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n(see a2acheck %s --help)\n", cmd);
  va_end(ap);
}

bool rp_outputs_add(rp_outputs *outs, rp_format fmt, const char *path, const char *cmd) {
  if (outs->n >= (int)(sizeof outs->o / sizeof outs->o[0])) {
    cli_usage_error(cmd, "too many report outputs");
    return false;
  }
  if (!path || !*path) {
    cli_usage_error(cmd, "an empty output file name");
    return false;
  }
  outs->o[outs->n].fmt = fmt;
  outs->o[outs->n].path = path;
  outs->n++;
  return true;
}

bool rp_outputs_add_spec(rp_outputs *outs, const char *spec, const char *cmd) {
  const char *colon = strchr(spec, ':');
  char fmt[32];
  if (!colon || (size_t)(colon - spec) >= sizeof fmt) {
    cli_usage_error(cmd, "--report wants FORMAT:FILE (e.g. junit:report.xml), not '%s'", spec);
    return false;
  }
  memcpy(fmt, spec, (size_t)(colon - spec));
  fmt[colon - spec] = 0;
  int f = rp_format_parse(fmt);
  if (f < 0) {
    cli_usage_error(cmd, "unknown report format '%s' (text, json, markdown, junit, sarif, html)", fmt);
    return false;
  }
  return rp_outputs_add(outs, (rp_format)f, colon + 1, cmd);
}

bool rp_outputs_arg(rp_outputs *outs, argp *a, const char *cmd) {
  const char *v;
  if (arg_val(a, "--report", NULL, &v)) {
    if (!rp_outputs_add_spec(outs, v, cmd)) a->failed = true;
    return true;
  }
  static const struct { const char *opt; rp_format fmt; } shortcut[] = {
      {"--json", RP_JSON},   {"--junit", RP_JUNIT},       {"--sarif", RP_SARIF},
      {"--html", RP_HTML},   {"--markdown", RP_MARKDOWN}, {"--text", RP_TEXT},
  };
  for (size_t k = 0; k < sizeof shortcut / sizeof *shortcut; k++)
    if (arg_val(a, shortcut[k].opt, NULL, &v)) {
      if (!rp_outputs_add(outs, shortcut[k].fmt, v, cmd)) a->failed = true;
      return true;
    }
  return a->failed;
}

int rp_outputs_write(const rp_outputs *outs, const rp_job *j, const rp_opts *o) {
  int rc = 0;
  for (int i = 0; i < outs->n; i++) {
    strbuf b = {0};
    rp_opts oo = *o;
    oo.color = false; /* files never get colour codes */
    if (strcmp(outs->o[i].path, "-") == 0) oo.color = o->color;
    rp_render(&b, outs->o[i].fmt, j, &oo);
    if (write_file(outs->o[i].path, sb_str(&b), b.len) != 0) {
      fprintf(stderr, "a2acheck: cannot write %s: %s\n", outs->o[i].path, strerror(errno));
      rc = -1;
    }
    sb_free(&b);
  }
  return rc;
}

int color_mode_parse(const char *s) {
  if (!strcmp(s, "auto")) return 0;
  if (!strcmp(s, "always")) return 1;
  if (!strcmp(s, "never")) return 2;
  return -1;
}

bool color_wanted(int mode, int fd) {
  if (mode == 1) return true;
  if (mode == 2) return false;
  const char *nc = getenv("NO_COLOR");
  if (nc && *nc) return false;
  const char *term = getenv("TERM");
  if (term && strcmp(term, "dumb") == 0) return false;
  return isatty(fd);
}

int count_logs(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (str_starts(e->d_name, "a2acheck.") && str_ends(e->d_name, ".jsonl")) n++;
  closedir(d);
  return n;
}

char *resolve_run_dir(const char *dir, bool verbose) {
  int n = count_logs(dir);
  if (n > 0) return xstrdup(dir);
  if (n < 0) return NULL;
  DIR *d = opendir(dir);
  if (!d) return NULL;
  char *best = NULL;
  struct timespec best_t = {0, 0};
  int runs = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char *sub = xasprintf("%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(sub, &st) == 0 && S_ISDIR(st.st_mode) && count_logs(sub) > 0) {
      runs++;
      /* newest by modification time, ties by name (timestamped names) */
      if (!best || st.st_mtim.tv_sec > best_t.tv_sec ||
          (st.st_mtim.tv_sec == best_t.tv_sec &&
           (st.st_mtim.tv_nsec > best_t.tv_nsec ||
            (st.st_mtim.tv_nsec == best_t.tv_nsec && strcmp(sub, best) > 0)))) {
        free(best);
        best = sub;
        best_t = st.st_mtim;
        continue;
      }
    }
    free(sub);
  }
  closedir(d);
  if (best && verbose && runs > 1)
    fprintf(stderr, "a2acheck: %s holds %d runs; reporting the newest, %s (name another to choose)\n",
            dir, runs, best);
  return best;
}
