/* cmd_checks.c - `a2acheck checks` (the checks table, a2a_checks.inc) and
 * `a2acheck options` (the A2ACHECK_* table, a2a_options.inc). */
#include <stdio.h>
#include <string.h>

#include "a2a_checks.h"
#include "a2a_core.h"
#include "cli.h"
#include "options.h"

static const char checks_help[] =
    "usage: a2acheck checks [--format text|json|markdown] [NAME|CATEGORY...]\n"
    "\n"
    "List every check a2acheck reports: its stable name (used in logs, A2ACHECK_CHECKS,\n"
    "suppressions), default severity, category and a one-line summary. With names or\n"
    "categories, only those. docs/checks.md explains each check with an example.\n";

static const char options_help[] =
    "usage: a2acheck options [--format text|json|markdown]\n"
    "\n"
    "Print the A2ACHECK_* environment variables the runtime reads: values, default and\n"
    "meaning. `a2acheck run` sets them from its flags (--hang-timeout 30 sets\n"
    "A2ACHECK_HANG_TIMEOUT=30; see a2acheck run --help).\n";

static const char *sev_text(int s) {
  return s == A2A_SEV_ERROR ? "error" : s == A2A_SEV_WARNING ? "warning" : "info";
}

static bool selected(int argc, char **argv, const int *pos, int npos, const char *name) {
  if (npos == 0) return true;
  size_t cl = strcspn(name, ".");
  for (int k = 0; k < npos; k++) {
    const char *w = argv[pos[k]];
    if (strcmp(w, name) == 0) return true;
    if (strlen(w) == cl && strncmp(w, name, cl) == 0) return true;
  }
  (void)argc;
  return false;
}

static int parse_fmt(int argc, char **argv, const char *cmd, const char *help, int *fmt, int *pos,
                     int *npos) {
  argp a = {argc, argv, 1, false};
  *fmt = RP_TEXT;
  *npos = 0;
  while (a.i < argc) {
    const char *v;
    if (arg_is(&a, "--help", "-h")) {
      fputs(help, stdout);
      return 0;
    }
    if (arg_val(&a, "--format", "-f", &v)) {
      *fmt = rp_format_parse(v);
      if (*fmt != RP_TEXT && *fmt != RP_JSON && *fmt != RP_MARKDOWN) {
        cli_usage_error(cmd, "--format wants text, json or markdown");
        return A2A_EXIT_USAGE;
      }
      continue;
    }
    if (a.failed) return A2A_EXIT_USAGE;
    if (argv[a.i][0] == '-') {
      cli_usage_error(cmd, "unknown option '%s'", argv[a.i]);
      return A2A_EXIT_USAGE;
    }
    if (!pos) {
      cli_usage_error(cmd, "unexpected argument '%s'", argv[a.i]);
      return A2A_EXIT_USAGE;
    }
    pos[(*npos)++] = a.i++;
  }
  return -1;
}

int cmd_checks(int argc, char **argv) {
  int fmt, npos;
  int pos[64];
  if (argc > 65) argc = 65;
  int rc = parse_fmt(argc, argv, "checks", checks_help, &fmt, pos, &npos);
  if (rc >= 0) return rc;
  for (int k = 0; k < npos; k++) {
    const char *w = argv[pos[k]];
    if (a2a_check_by_name(w) == A2A_CK_NONE && !a2a_check_is_category(w, strlen(w))) {
      a2a_check_id s = a2a_check_suggest(w, strlen(w));
      fprintf(stderr, "a2acheck checks: no check or category '%s'%s%s%s\n", w,
              s != A2A_CK_NONE ? " (did you mean " : "", s != A2A_CK_NONE ? a2a_check_name(s) : "",
              s != A2A_CK_NONE ? "?)" : "");
      return A2A_EXIT_USAGE;
    }
  }
  strbuf b = {0};
  if (fmt == RP_JSON) {
    sb_printf(&b, "{\"version\":\"%s\",\"categories\":[", A2ACHECK_VERSION);
    for (size_t c = 0; c < a2a_check_ncategories; c++) {
      sb_printf(&b, "%s{\"name\":", c ? "," : "");
      sb_json_str(&b, a2a_check_categories[c].name);
      sb_puts(&b, ",\"title\":");
      sb_json_str(&b, a2a_check_categories[c].title);
      sb_putc(&b, '}');
    }
    sb_puts(&b, "],\"checks\":[");
    int n = 0;
    for (int i = 0; i < A2A_CK__COUNT; i++) {
      const a2a_check_info *c = &a2a_check_table[i];
      if (!selected(argc, argv, pos, npos, c->name)) continue;
      sb_printf(&b, "%s{\"name\":", n++ ? "," : "");
      sb_json_str(&b, c->name);
      sb_printf(&b, ",\"category\":\"%.*s\",\"severity\":\"%s\",\"summary\":",
                (int)a2a_check_category_len((a2a_check_id)i), c->name, sev_text(c->severity));
      sb_json_str(&b, c->summary);
      sb_printf(&b, ",\"doc\":\"%s#%s\"}", A2A_CHECKS_DOC, c->name);
    }
    sb_puts(&b, "]}\n");
  } else {
    bool md = fmt == RP_MARKDOWN;
    if (md) sb_puts(&b, "| Check | Severity | Summary |\n|---|---|---|\n");
    for (size_t c = 0; c < a2a_check_ncategories; c++) {
      const char *cat = a2a_check_categories[c].name;
      bool header = false;
      for (int i = 0; i < A2A_CK__COUNT; i++) {
        const a2a_check_info *k = &a2a_check_table[i];
        size_t cl = a2a_check_category_len((a2a_check_id)i);
        if (strlen(cat) != cl || strncmp(cat, k->name, cl) != 0) continue;
        if (!selected(argc, argv, pos, npos, k->name)) continue;
        if (!header && !md) sb_printf(&b, "%s%s: %s\n", b.len ? "\n" : "", cat, a2a_check_categories[c].title);
        header = true;
        if (md) sb_printf(&b, "| `%s` | %s | %s |\n", k->name, sev_text(k->severity), k->summary);
        else sb_printf(&b, "  %-28s %-8s %s\n", k->name, sev_text(k->severity), k->summary);
      }
    }
    if (!md) sb_printf(&b, "\nEach check is explained in %s (what, why, how to fix, an example).\n", A2A_CHECKS_DOC);
  }
  fputs(sb_str(&b), stdout);
  sb_free(&b);
  return 0;
}

int cmd_options(int argc, char **argv) {
  int fmt, npos;
  int rc = parse_fmt(argc, argv, "options", options_help, &fmt, NULL, &npos);
  if (rc >= 0) return rc;
  strbuf b = {0};
  char def[256];
  if (fmt == RP_JSON) {
    sb_puts(&b, "{\"options\":[");
    for (size_t i = 0; i < a2a_opt_nrows; i++) {
      const a2a_opt_row *r = &a2a_opt_rows[i];
      a2a_opt_default_text(r, def, sizeof def);
      sb_printf(&b, "%s{\"variable\":", i ? "," : "");
      sb_json_str(&b, r->env);
      static const char *tn[] = {"int", "number", "string", "enum"};
      sb_printf(&b, ",\"type\":\"%s\"", tn[r->type]);
      char range[80];
      a2a_opt_range_text(&r->range, range, sizeof range);
      if (*range) {
        sb_puts(&b, ",\"range\":");
        sb_json_str(&b, range);
      }
      if (r->type == OPT_ENUM) {
        sb_puts(&b, ",\"values\":[");
        const char *p = r->values;
        for (int k = 0; p; k++) {
          const char *e = strchr(p, '|');
          char one[64];
          snprintf(one, sizeof one, "%.*s", (int)(e ? (size_t)(e - p) : strlen(p)), p);
          if (k) sb_putc(&b, ',');
          sb_json_str(&b, one);
          p = e ? e + 1 : NULL;
        }
        sb_putc(&b, ']');
      }
      sb_puts(&b, ",\"default\":");
      if (r->type == OPT_STR && !r->sdef) sb_puts(&b, "null");
      else if (r->type == OPT_INT) sb_printf(&b, "%lld", r->idef);
      else if (r->type == OPT_DBL) sb_printf(&b, "%g", r->ddef);
      else sb_json_str(&b, def);
      sb_puts(&b, ",\"meaning\":");
      sb_json_str(&b, r->help);
      sb_putc(&b, '}');
    }
    sb_puts(&b, "]}\n");
  } else if (fmt == RP_MARKDOWN) {
    sb_puts(&b, "| Variable | Values | Default | Meaning |\n|---|---|---|---|\n");
    for (size_t i = 0; i < a2a_opt_nrows; i++) {
      const a2a_opt_row *r = &a2a_opt_rows[i];
      a2a_opt_default_text(r, def, sizeof def);
      strbuf t = {0};
      for (const char *p = a2a_opt_type_text(r); *p; p++) {
        if (*p == '|') sb_puts(&t, "\\|");
        else sb_putc(&t, *p);
      }
      sb_printf(&b, "| `%s` | %s | `%s` | %s |\n", r->env, sb_str(&t), def, r->help);
      sb_free(&t);
    }
  } else {
    for (size_t i = 0; i < a2a_opt_nrows; i++) {
      const a2a_opt_row *r = &a2a_opt_rows[i];
      a2a_opt_default_text(r, def, sizeof def);
      sb_printf(&b, "%-28s %-28s default %s\n    %s\n", r->env, a2a_opt_type_text(r), def, r->help);
    }
  }
  fputs(sb_str(&b), stdout);
  sb_free(&b);
  return 0;
}
