/* report_markdown.c - the report as GitHub-flavoured Markdown, made for a
 * CI job summary ($GITHUB_STEP_SUMMARY, a GitLab MR note): a status line,
 * the findings table (errors first), the deadlock story once, performance
 * per communicator, processes and per-check counts. Text from the logs is
 * escaped so it can never open HTML or break a table. */
#include <stdio.h>
#include <string.h>

#include "graph.h"
#include "report.h"

/* Table-cell text: HTML-escaped, '|' escaped, newlines as <br>. */
static void cell(strbuf *b, const char *s) {
  for (; s && *s; s++) {
    switch (*s) {
    case '|': sb_puts(b, "\\|"); break;
    case '\n': sb_puts(b, "<br>"); break;
    case '\r': break;
    case '&': sb_puts(b, "&amp;"); break;
    case '<': sb_puts(b, "&lt;"); break;
    case '>': sb_puts(b, "&gt;"); break;
    case '`': sb_puts(b, "&#96;"); break;
    case '*': case '_': case '[': case ']': case '\\':
      sb_putc(b, '\\');
      sb_putc(b, *s);
      break;
    default:
      if ((unsigned char)*s >= 0x20 || *s == '\t') sb_putc(b, *s);
    }
  }
}

/* Inside a fenced block: only a fence could end it early. */
static void fenced(strbuf *b, const char *s) {
  sb_puts(b, "````text\n");
  for (; s && *s; s++) {
    if (s[0] == '`' && s[1] == '`' && s[2] == '`' && s[3] == '`') {
      sb_puts(b, "` ` ` `");
      s += 3;
      continue;
    }
    if ((unsigned char)*s >= 0x20 || *s == '\n' || *s == '\t') sb_putc(b, *s);
  }
  sb_puts(b, "\n````\n");
}

static const char *sev_icon(int sev) {
  return sev == SEV_ERROR ? "\xe2\x9d\x8c error" : sev == SEV_WARNING ? "\xe2\x9a\xa0\xef\xb8\x8f warning" : "\xe2\x84\xb9\xef\xb8\x8f info";
}

void rp_render_markdown(strbuf *b, const rp_job *j, const rp_opts *o) {
  size_t total = j->by_sev[0] + j->by_sev[1] + j->by_sev[2];
  strbuf h = {0};
  rp_headline(&h, j);
  const char *mark = j->deadlock ? "\xf0\x9f\x9b\x91" : j->by_sev[SEV_ERROR] ? "\xe2\x9d\x8c"
                     : total ? "\xe2\x9a\xa0\xef\xb8\x8f" : "\xe2\x9c\x85";
  sb_printf(b, "## %s a2acheck: ", mark);
  cell(b, sb_str(&h));
  sb_free(&h);
  sb_printf(b, "\n\n%zu process%s, %zu rank%s", j->nprocs, j->nprocs == 1 ? "" : "es", j->nranks,
            j->nranks == 1 ? "" : "s");
  if (o && o->command) {
    sb_puts(b, "; command `");
    for (const char *c = o->command; *c; c++)
      if (*c != '`' && (unsigned char)*c >= 0x20) sb_putc(b, *c);
    sb_puts(b, "`");
    if (o->command_status >= 0) sb_printf(b, " exited %d", o->command_status);
  }
  if (o && o->exit_status >= 0) sb_printf(b, "; a2acheck exited %d", o->exit_status);
  sb_puts(b, ".");
  if (o && o->verdict && o->verdict->matched) {
    sb_puts(b, " **Failing:** ");
    cell(b, o->verdict->reason);
    sb_puts(b, ".");
  }
  sb_puts(b, "\n\n");

  if (total) {
    sb_puts(b, "| # | Severity | Check | Ranks | Where | Message |\n|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < j->nf; i++) {
      const rp_finding *f = &j->f[i];
      strbuf r = {0};
      rp_ranks_text(&r, f);
      sb_printf(b, "| %zu | %s | `%s` | ", i + 1, sev_icon(f->severity), f->check);
      cell(b, sb_str(&r));
      sb_puts(b, " | ");
      size_t shown = 0;
      for (size_t k = 0; k < f->nocc && shown < 4; k++) {
        const rp_occ *x = &j->occ[f->occ[k]];
        char site[1400];
        a2a_frame fr;
        if (!rp_occ_site(x, &fr, site, sizeof site)) continue;
        if (f->kind == RP_LOCAL && shown) break;
        if (shown) sb_puts(b, "<br>");
        if (f->kind != RP_LOCAL && x->rank >= 0) sb_printf(b, "rank %d: ", x->rank);
        cell(b, site);
        shown++;
      }
      sb_puts(b, " | ");
      if (f->kind == RP_DEADLOCK) {
        const char *nl = strchr(f->message, '\n');
        strbuf first = {0};
        sb_putn(&first, f->message, nl ? (size_t)(nl - f->message) : strlen(f->message));
        cell(b, sb_str(&first));
        sb_puts(b, " (story below)");
        sb_free(&first);
      } else {
        cell(b, f->message);
      }
      sb_puts(b, " |\n");
      sb_free(&r);
    }
    sb_putc(b, '\n');
    for (size_t i = 0; i < j->nf; i++) {
      const rp_finding *f = &j->f[i];
      if (f->kind != RP_DEADLOCK) continue;
      sb_printf(b, "<details open><summary><b>%s</b> (finding %zu): who waits for whom</summary>\n\n",
                f->check, i + 1);
      fenced(b, f->message);
      sb_puts(b, "\n</details>\n\n");
    }
  }

  if (j->ncomms) {
    sb_puts(b, "<details><summary>Performance per communicator (perf.summary)</summary>\n\n"
               "| Communicator | Ranks | Operation | Size | Ops (all ranks) | busbw GB/s min / mean / max | Overlap (mean) |\n"
               "|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < j->ncomms; i++) {
      const rp_comm *c = &j->comms[i];
      char ov[32] = "-";
      if (c->novl) snprintf(ov, sizeof ov, "%.0f%%", 100 * c->ovl_sum / c->novl);
      for (size_t k = 0; k < c->nb; k++) {
        const rp_bucket *t = &c->b[k];
        char lo[32], a[24] = "-", m[24] = "-", z[24] = "-";
        fmt_bytes(lo, sizeof lo, (double)t->lo);
        if (t->nbw) {
          rp_fmt_bw(a, sizeof a, t->bw_min);
          rp_fmt_bw(m, sizeof m, t->bw_sum / t->nbw);
          rp_fmt_bw(z, sizeof z, t->bw_max);
        }
        sb_printf(b, "| `%s` | %zu/%lld | ", rp_comm_short(c->hash), c->nranks, c->size);
        cell(b, t->op);
        sb_printf(b, " | %s+ | %lld | %s / %s / %s | %s |\n", lo, t->ops, a, m, z, ov);
      }
      if (!c->nb)
        sb_printf(b, "| `%s` | %zu/%lld | - | - | %lld | - | %s |\n", rp_comm_short(c->hash), c->nranks,
                  c->size, c->ops_max, ov);
    }
    sb_puts(b, "\n</details>\n\n");
  }

  sb_puts(b, "<details><summary>Processes</summary>\n\n| Rank | PID | Host | Ended | Findings |\n|---|---|---|---|---|\n");
  for (size_t i = 0; i < j->nprocs; i++) {
    const rp_proc *p = &j->procs[i];
    char end[200];
    rp_proc_ending(p, end, sizeof end);
    if (p->rank >= 0) sb_printf(b, "| %d | %lld | ", p->rank, p->pid);
    else sb_printf(b, "| ? | %lld | ", p->pid);
    cell(b, p->host ? p->host : "?");
    sb_puts(b, " | ");
    cell(b, end);
    sb_printf(b, " | %zu |\n", p->nfindings);
  }
  sb_puts(b, "\n</details>\n\n");

  if (j->ncc) {
    sb_puts(b, "<details><summary>Counts per check</summary>\n\n| Check | Severity | Findings | Occurrences | Suppressed | Ranks |\n|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < j->ncc; i++) {
      const rp_check_count *c = &j->cc[i];
      strbuf r = {0};
      fmt_ranks(&r, c->ranks, c->nranks);
      sb_printf(b, "| `%s` | %s | %zu | %lld | %lld | %s |\n", c->check, a2a_severity_name(c->severity),
                c->findings, c->occurrences, c->suppressed, c->nranks ? sb_str(&r) : "-");
      sb_free(&r);
    }
    sb_puts(b, "\n</details>\n\n");
  }
  if (j->bad_lines)
    sb_printf(b, "> %zu malformed log line%s ignored (see `a2acheck report --format json`, \"warnings\").\n\n",
              j->bad_lines, j->bad_lines == 1 ? "" : "s");
}
