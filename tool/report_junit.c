/* report_junit.c - the report as JUnit XML, so CI systems (GitHub Actions
 * test reporters, GitLab's junit artifacts, Jenkins) list a2acheck's
 * results as tests: one <testsuite> per process (rank), in it one
 * <testcase> per check that reported on that rank, failing when its
 * severity reaches rp_opts.fail_level (errors by default), plus one
 * "process" testcase per rank that fails when a2acheck ended the process or
 * changed its exit status. The counts in the tests/failures attributes are
 * the testcases written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

typedef struct jcase {
  int proc;
  const char *check;
  int severity;
  int *occ;                 /* occurrence indexes */
  size_t nocc;
  int finding;              /* index of the first merged finding */
} jcase;

static int proc_order(const rp_job *j, int a, int b) {
  int ra = j->procs[a].rank < 0 ? 0x7fffffff : j->procs[a].rank;
  int rb = j->procs[b].rank < 0 ? 0x7fffffff : j->procs[b].rank;
  if (ra != rb) return ra < rb ? -1 : 1;
  return j->procs[a].pid < j->procs[b].pid ? -1 : j->procs[a].pid > j->procs[b].pid;
}

static void first_line(strbuf *b, const char *s, size_t max) {
  size_t n = strcspn(s, "\n");
  if (n > max) n = max;
  sb_xmln(b, s, n);
  if (n < strlen(s)) sb_puts(b, "...");
}

static void occ_text(strbuf *b, const rp_job *j, const rp_finding *f, const rp_occ *o, size_t fi) {
  sb_printf(b, "%s %s (finding %zu of the report", a2a_severity_name(o->rec.severity), o->rec.check,
            fi + 1);
  if (f->nranks > 1) {
    strbuf r = {0};
    rp_ranks_text(&r, f);
    sb_printf(b, ", on %s", sb_str(&r));
    sb_free(&r);
  }
  sb_puts(b, ")\n");
  /* CI views show this per test case: a long story (a deadlock over many
   * ranks) is cut; the other formats keep it whole */
  size_t ml = strlen(o->rec.message), cap = 16384;
  sb_xmln(b, o->rec.message, ml > cap ? cap : ml);
  if (ml > cap) sb_printf(b, "\n... (%zu more bytes: see the HTML or JSON report)", ml - cap);
  sb_putc(b, '\n');
  for (size_t s = 0; s < o->rec.nstack; s++) {
    sb_puts(b, "    at ");
    sb_xml(b, o->rec.stack[s]);
    sb_putc(b, '\n');
  }
  if (f->kind == RP_CROSS) {
    for (size_t k = 0; k < f->nocc; k++) {
      const rp_occ *x = &j->occ[f->occ[k]];
      if (x == o) continue;
      char site[1400];
      a2a_frame fr;
      if (!rp_occ_site(x, &fr, site, sizeof site)) snprintf(site, sizeof site, "(no stack)");
      const char *role = rp_occ_role(j, f, x);
      sb_printf(b, "  other side: rank %d%s%s%s at ", x->rank, role ? " (" : "", role ? role : "",
                role ? ")" : "");
      sb_xml(b, site);
      sb_putc(b, '\n');
    }
  }
}

void rp_render_junit(strbuf *b, const rp_job *j, const rp_opts *o) {
  int level = o ? o->fail_level : RP_FAIL_ERROR;
  int *occ_finding = xcalloc(j->nocc + 1, sizeof *occ_finding);
  for (size_t q = 0; q < j->nf; q++)
    for (size_t r = 0; r < j->f[q].nocc; r++) occ_finding[j->f[q].occ[r]] = (int)q;
  /* (process, check) cases in report order */
  jcase *cs = NULL;
  size_t nc = 0, cap = 0;
  for (size_t fi = 0; fi < j->nf; fi++) {
    const rp_finding *f = &j->f[fi];
    for (size_t k = 0; k < f->nocc; k++) {
      const rp_occ *x = &j->occ[f->occ[k]];
      jcase *c = NULL;
      for (size_t i = 0; i < nc; i++)
        if (cs[i].proc == x->proc && strcmp(cs[i].check, f->check) == 0) c = &cs[i];
      if (!c) {
        xgrow(&cs, &cap, nc, sizeof *cs);
        c = &cs[nc++];
        memset(c, 0, sizeof *c);
        c->proc = x->proc;
        c->check = f->check;
        c->severity = -1;
        c->finding = (int)fi;
      }
      c->occ = xrealloc(c->occ, (c->nocc + 1) * sizeof *c->occ);
      c->occ[c->nocc++] = f->occ[k];
      if (x->rec.severity > c->severity) c->severity = x->rec.severity;
    }
  }
  /* processes in rank order */
  int *order = xcalloc(j->nprocs + 1, sizeof *order);
  for (size_t i = 0; i < j->nprocs; i++) order[i] = (int)i;
  for (size_t a = 1; a < j->nprocs; a++)
    for (size_t c = a; c > 0 && proc_order(j, order[c], order[c - 1]) < 0; c--) {
      int t = order[c];
      order[c] = order[c - 1];
      order[c - 1] = t;
    }

  size_t tests = 0, failures = 0;
  strbuf body = {0};
  for (size_t oi = 0; oi < j->nprocs; oi++) {
    int pi = order[oi];
    const rp_proc *p = &j->procs[pi];
    char cls[64], who[64];
    if (p->rank >= 0) snprintf(cls, sizeof cls, "a2acheck.rank%d", p->rank);
    else snprintf(cls, sizeof cls, "a2acheck.pid%lld", p->pid);
    rp_proc_label(p, who, sizeof who);
    size_t t = 0, fl = 0;
    strbuf s = {0};
    for (size_t i = 0; i < nc; i++) {
      if (cs[i].proc != pi) continue;
      jcase *c = &cs[i];
      bool fails = false;
      for (size_t k = 0; k < c->nocc; k++)
        if (rp_level_matches(level, j->occ[c->occ[k]].rec.check, j->occ[c->occ[k]].rec.severity))
          fails = true;
      t++;
      fl += fails;
      const rp_occ *x0 = &j->occ[c->occ[0]];
      a2a_frame fr;
      char site[1400];
      sb_printf(&s, "    <testcase classname=\"%s\" name=\"", cls);
      sb_xml(&s, c->check);
      sb_puts(&s, "\"");
      if (rp_occ_site(x0, &fr, site, sizeof site) && fr.file[0]) {
        sb_puts(&s, " file=\"");
        sb_xml(&s, fr.file);
        sb_printf(&s, "\" line=\"%d\"", fr.line);
      }
      sb_puts(&s, " time=\"0\">\n");
      strbuf text = {0};
      for (size_t k = 0; k < c->nocc; k++) {
        const rp_occ *x = &j->occ[c->occ[k]];
        size_t fi = (size_t)occ_finding[c->occ[k]];
        if (k) sb_putc(&text, '\n');
        occ_text(&text, j, &j->f[fi], x, fi);
      }
      if (fails) {
        sb_puts(&s, "      <failure type=\"");
        sb_xml(&s, c->check);
        sb_printf(&s, "\" message=\"%s %s on %s: ", a2a_severity_name(c->severity), c->check, who);
        first_line(&s, x0->rec.message, 300);
        sb_puts(&s, "\">");
        sb_puts(&s, sb_str(&text));
        sb_puts(&s, "</failure>\n");
      } else {
        sb_puts(&s, "      <system-out>");
        sb_puts(&s, sb_str(&text));
        sb_puts(&s, "</system-out>\n");
      }
      sb_free(&text);
      sb_puts(&s, "    </testcase>\n");
    }
    /* the process itself */
    char end[200];
    rp_proc_ending(p, end, sizeof end);
    bool pfail = p->failed_now || p->fail_matched;
    t++;
    fl += pfail;
    sb_printf(&s, "    <testcase classname=\"%s\" name=\"process\" time=\"0\">\n", cls);
    if (pfail) {
      sb_puts(&s, "      <failure type=\"a2acheck.exit\" message=\"");
      sb_xml(&s, who);
      sb_puts(&s, ": ");
      sb_xml(&s, end);
      sb_puts(&s, "\">");
      sb_xml(&s, p->path);
      sb_puts(&s, "</failure>\n");
    } else {
      sb_puts(&s, "      <system-out>");
      sb_xml(&s, end);
      sb_puts(&s, "; log ");
      sb_xml(&s, p->path);
      sb_puts(&s, "</system-out>\n");
    }
    sb_puts(&s, "    </testcase>\n");

    sb_printf(&body, "  <testsuite name=\"%s\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" skipped=\"0\" time=\"0\"",
              cls, t, fl);
    if (p->host) {
      sb_puts(&body, " hostname=\"");
      sb_xml(&body, p->host);
      sb_puts(&body, "\"");
    }
    sb_printf(&body, ">\n    <properties>\n      <property name=\"pid\" value=\"%lld\"/>\n"
                     "      <property name=\"log\" value=\"", p->pid);
    sb_xml(&body, p->path);
    sb_puts(&body, "\"/>\n    </properties>\n");
    sb_puts(&body, sb_str(&s));
    sb_puts(&body, "  </testsuite>\n");
    sb_free(&s);
    tests += t;
    failures += fl;
  }
  sb_printf(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<testsuites name=\"a2acheck\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" skipped=\"0\" time=\"0\">\n",
            tests, failures);
  sb_puts(b, sb_str(&body));
  sb_puts(b, "</testsuites>\n");
  sb_free(&body);
  for (size_t i = 0; i < nc; i++) free(cs[i].occ);
  free(cs);
  free(order);
  free(occ_finding);
}
