/* report_text.c - the text report (stderr of `a2acheck run`, the default
 * of `a2acheck report`): findings first, errors first, the deadlock story
 * once, then performance, processes and per-check counts. ANSI colours
 * when rp_opts.color (a terminal, NO_COLOR unset). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "report.h"

typedef struct pen {
  const char *err, *warn, *info, *bold, *dim, *off;
} pen;

static pen make_pen(bool color) {
  if (!color) return (pen){"", "", "", "", "", ""};
  return (pen){"\033[1;31m", "\033[1;33m", "\033[1;36m", "\033[1m", "\033[2m", "\033[0m"};
}

static const char *sev_color(const pen *p, int sev) {
  return sev == SEV_ERROR ? p->err : sev == SEV_WARNING ? p->warn : p->info;
}

static void indent_block(strbuf *b, const char *text, const char *prefix) {
  for (const char *line = text; line && *line;) {
    const char *nl = strchr(line, '\n');
    size_t n = nl ? (size_t)(nl - line) : strlen(line);
    sb_puts(b, prefix);
    sb_putn(b, line, n);
    sb_putc(b, '\n');
    line = nl ? nl + 1 : NULL;
  }
}

/* "(4 processes involved: ranks 0-3; missing: rank 3, exited)" */
static void deadlock_who(strbuf *b, const rp_job *j, const rp_finding *f) {
  const rp_occ *src = rp_deadlock_source(j, f);
  const jval *procs = src ? json_get_arr(src->rec.details, "processes") : NULL;
  if (!procs) return;
  size_t n = procs->u.arr.n;
  int *ranks = xcalloc(n + 1, sizeof *ranks);
  size_t nr = 0;
  long long missing = -1, mrank = -1;
  bool malive = false;
  json_get_int(src->rec.details, "missing_pid", &missing);
  for (size_t i = 0; i < n; i++) {
    long long r, pid;
    const jval *p = procs->u.arr.v[i];
    if (json_get_int(p, "global_rank", &r) && r >= 0) ranks[nr++] = (int)r;
    if (missing >= 0 && json_get_int(p, "pid", &pid) && pid == missing) {
      json_get_int(p, "global_rank", &mrank);
      json_get_bool(p, "alive", &malive);
    }
  }
  for (size_t a = 1; a < nr; a++)
    for (size_t c = a; c > 0 && ranks[c] < ranks[c - 1]; c--) {
      int t = ranks[c];
      ranks[c] = ranks[c - 1];
      ranks[c - 1] = t;
    }
  sb_printf(b, "  (%zu process%s involved", n, n == 1 ? "" : "es");
  if (nr) {
    sb_puts(b, nr == 1 ? ": rank " : ": ranks ");
    fmt_ranks(b, ranks, nr);
  }
  if (missing >= 0) {
    bool hang = strcmp(f->check, "group.hang") == 0;
    sb_puts(b, hang ? "; awaited: " : "; missing: ");
    if (mrank >= 0) sb_printf(b, "rank %lld", mrank);
    else sb_printf(b, "pid %lld", missing);
    if (!hang) sb_puts(b, malive ? ", alive but blocked elsewhere" : ", exited or ended the communicator");
    else if (!malive) sb_puts(b, ", exited");
  }
  sb_putc(b, ')');
  free(ranks);
}

static void finding(strbuf *b, const rp_job *j, const rp_finding *f, size_t idx, const pen *p) {
  char site[1400];
  a2a_frame fr;
  const char *sevname = f->severity == SEV_ERROR ? "ERROR" : f->severity == SEV_WARNING ? "WARNING" : "INFO";
  sb_printf(b, "%s[%zu] %s%s %s%s%s  ", p->bold, idx, sev_color(p, f->severity), sevname, p->bold,
            f->check, p->off);
  rp_ranks_text(b, f);
  if (f->comm_hash && f->kind != RP_DEADLOCK) {
    sb_printf(b, "  comm %s", rp_comm_short(f->comm_hash));
    if (f->comm_size > 0) sb_printf(b, " (%lld ranks)", f->comm_size);
  }
  if (f->count > (long long)f->nocc) sb_printf(b, "  x%lld", f->count);
  if (f->kind == RP_DEADLOCK) deadlock_who(b, j, f);
  sb_putc(b, '\n');
  indent_block(b, f->message, "    ");
  if ((f->kind == RP_CROSS && f->nocc > 1) || (f->kind == RP_LOCAL && f->nocc > 1 && f->messages_differ)) {
    sb_printf(b, "    %scall sites:%s\n", p->dim, p->off);
    size_t shown = 0;
    for (size_t k = 0; k < f->nocc && shown < 16; k++, shown++) {
      const rp_occ *o = &j->occ[f->occ[k]];
      char who[64];
      rp_proc_label(&j->procs[o->proc], who, sizeof who);
      if (o->rank >= 0) snprintf(who, sizeof who, "rank %d", o->rank);
      /* A cross-rank side names its communicator rank where that is not
       * the process's (a split; several ranks in one process). */
      if (f->kind == RP_CROSS && o->rec.comm_rank >= 0 && o->rec.comm_rank != o->rank) {
        size_t wl = strlen(who);
        snprintf(who + wl, sizeof who - wl, "%scomm rank %lld", wl ? ", " : "",
                 (long long)o->rec.comm_rank);
      }
      const char *role = rp_occ_role(j, f, o);
      char lab[96];
      snprintf(lab, sizeof lab, "%s%s%s%s", who, role ? " (" : "", role ? role : "", role ? ")" : "");
      if (!rp_occ_site(o, &fr, site, sizeof site)) snprintf(site, sizeof site, "(no stack)");
      sb_printf(b, "      %-20s %s\n", lab, site);
    }
    if (f->nocc > shown) sb_printf(b, "      ... and %zu more\n", f->nocc - shown);
  } else if (f->nocc) {
    const rp_occ *o = &j->occ[f->occ[0]];
    if (rp_occ_site(o, &fr, site, sizeof site)) sb_printf(b, "    %sat %s%s\n", p->dim, site, p->off);
  }
  if (f->kind == RP_LOCAL && f->messages_differ)
    sb_printf(b, "    %s(message of the first rank; the others differ: see --format json)%s\n",
              p->dim, p->off);
  sb_putc(b, '\n');
}

static void perf(strbuf *b, const rp_job *j, const pen *p) {
  if (!j->ncomms) return;
  sb_printf(b, "%sperformance%s (perf.summary, per communicator)\n", p->bold, p->off);
  for (size_t i = 0; i < j->ncomms; i++) {
    const rp_comm *c = &j->comms[i];
    char bytes[32];
    fmt_bytes(bytes, sizeof bytes, c->bytes);
    sb_printf(b, "  comm %s", rp_comm_short(c->hash));
    if (c->size > 0) sb_printf(b, " (%lld ranks)", c->size);
    sb_printf(b, ": %zu rank%s reported, ", c->nranks, c->nranks == 1 ? "" : "s");
    if (c->ops_min == c->ops_max) sb_printf(b, "%lld ops each", c->ops_max);
    else sb_printf(b, "%lld..%lld ops per rank", c->ops_min, c->ops_max);
    sb_printf(b, ", %s in total", bytes);
    if (c->novl)
      sb_printf(b, ", overlap %.0f%% (min %.0f%%, max %.0f%%)", 100 * c->ovl_sum / c->novl,
                100 * c->ovl_min, 100 * c->ovl_max);
    sb_putc(b, '\n');
    if (c->nb) sb_printf(b, "    %-26s %10s %8s  %s\n", "operation", "size", "ops", "busbw GB/s min / mean / max");
    for (size_t k = 0; k < c->nb; k++) {
      const rp_bucket *t = &c->b[k];
      char lo[32], a[24], m[24], z[24];
      fmt_bytes(lo, sizeof lo, (double)t->lo);
      if (t->nbw) {
        rp_fmt_bw(a, sizeof a, t->bw_min);
        rp_fmt_bw(m, sizeof m, t->bw_sum / t->nbw);
        rp_fmt_bw(z, sizeof z, t->bw_max);
        sb_printf(b, "    %-26s %9s+ %8lld  %s / %s / %s\n", t->op, lo, t->ops, a, m, z);
      } else {
        sb_printf(b, "    %-26s %9s+ %8lld  (not measured)\n", t->op, lo, t->ops);
      }
    }
  }
  sb_putc(b, '\n');
}

static void processes(strbuf *b, const rp_job *j, const pen *p) {
  sb_printf(b, "%sprocesses%s\n", p->bold, p->off);
  for (size_t i = 0; i < j->nprocs; i++) {
    const rp_proc *q = &j->procs[i];
    char who[64], end[200];
    if (q->rank >= 0) snprintf(who, sizeof who, "rank %d", q->rank);
    else snprintf(who, sizeof who, "rank ?");
    rp_proc_ending(q, end, sizeof end);
    bool bad = !q->has_summary || q->failed_now || q->fail_matched;
    sb_printf(b, "  %-9s pid %-8lld %-16s %s%s%s", who, q->pid, q->host ? q->host : "?",
              bad ? p->warn : "", end, bad ? p->off : "");
    if (q->nfindings) sb_printf(b, ", %zu finding%s", q->nfindings, q->nfindings == 1 ? "" : "s");
    if (rp_proc_is_launcher(q)) sb_puts(b, " (no communicator: a launcher?)");
    if (q->nbad) sb_printf(b, ", %zu malformed line%s", q->nbad, q->nbad == 1 ? "" : "s");
    if (q->dropped) sb_printf(b, ", %lld dropped", q->dropped);
    sb_putc(b, '\n');
  }
  sb_putc(b, '\n');
}

static void checks(strbuf *b, const rp_job *j, const pen *p) {
  if (!j->ncc) return;
  sb_printf(b, "%schecks%s\n  %-30s %-8s %8s %12s %10s  %s\n", p->bold, p->off, "check", "severity",
            "findings", "occurrences", "suppressed", "ranks");
  for (size_t i = 0; i < j->ncc; i++) {
    const rp_check_count *c = &j->cc[i];
    strbuf r = {0};
    fmt_ranks(&r, c->ranks, c->nranks);
    sb_printf(b, "  %-30s %s%-8s%s %8zu %12lld %10lld  %s\n", c->check, sev_color(p, c->severity),
              a2a_severity_name(c->severity), p->off, c->findings, c->occurrences, c->suppressed,
              c->nranks ? sb_str(&r) : "-");
    sb_free(&r);
  }
  sb_putc(b, '\n');
}

void rp_render_text(strbuf *b, const rp_job *j, const rp_opts *o) {
  pen p = make_pen(o && o->color);
  size_t nproc = j->nprocs;
  sb_printf(b, "%sa2acheck report%s: %zu process%s (%zu rank%s)", p.bold, p.off, nproc,
            nproc == 1 ? "" : "es", j->nranks, j->nranks == 1 ? "" : "s");
  for (size_t i = 0; i < j->ndirs && i < 4; i++) sb_printf(b, "%s%s", i ? ", " : " in ", j->dirs[i]);
  if (j->ndirs > 4) sb_printf(b, " and %zu more", j->ndirs - 4);
  sb_putc(b, '\n');
  if (o && o->command) sb_printf(b, "  command: %s\n", o->command);
  sb_putc(b, '\n');

  for (size_t i = 0; i < j->nf; i++) finding(b, j, &j->f[i], i + 1, &p);
  perf(b, j, &p);
  processes(b, j, &p);
  checks(b, j, &p);
  if (j->bad_lines) {
    sb_printf(b, "%s%zu malformed log line%s ignored:%s\n", p.warn, j->bad_lines,
              j->bad_lines == 1 ? "" : "s", p.off);
    for (size_t i = 0; i < j->nwarnings && i < 100 && i < 5; i++) sb_printf(b, "  %s\n", j->warnings[i]);
    if (j->nwarnings + j->warnings_dropped > 5)
      sb_printf(b, "  ... (%zu more)\n", j->nwarnings + j->warnings_dropped - 5);
    sb_putc(b, '\n');
  }
  sb_printf(b, "%sresult%s: ", p.bold, p.off);
  size_t total = j->by_sev[0] + j->by_sev[1] + j->by_sev[2];
  if (total) sb_puts(b, j->by_sev[SEV_ERROR] ? p.err : j->by_sev[SEV_WARNING] ? p.warn : "");
  strbuf h = {0};
  rp_headline(&h, j);
  sb_puts(b, sb_str(&h));
  sb_free(&h);
  if (total) sb_puts(b, p.off);
  if (o && o->verdict && o->verdict->matched) sb_printf(b, "; failing: %s", o->verdict->reason);
  if (o && o->command_status >= 0) sb_printf(b, "; the command exited %d", o->command_status);
  if (o && o->exit_status >= 0) sb_printf(b, "; a2acheck exits %d", o->exit_status);
  sb_putc(b, '\n');
}
