/* report_common.c - helpers every report format shares (report.h). */
#include <stdio.h>
#include <string.h>

#include "report.h"

static const char *const format_names[RP__NFORMATS] = {"text", "json", "markdown",
                                                        "junit", "sarif", "html"};

int rp_format_parse(const char *s) {
  for (int i = 0; i < RP__NFORMATS; i++)
    if (s && strcmp(s, format_names[i]) == 0) return i;
  if (s && strcmp(s, "md") == 0) return RP_MARKDOWN;
  if (s && strcmp(s, "xml") == 0) return RP_JUNIT;
  return -1;
}

const char *rp_format_name(rp_format f) {
  return (unsigned)f < RP__NFORMATS ? format_names[f] : "?";
}

void rp_render(strbuf *b, rp_format fmt, const rp_job *j, const rp_opts *o) {
  switch (fmt) {
  case RP_TEXT: rp_render_text(b, j, o); break;
  case RP_JSON: rp_render_json(b, j, o); break;
  case RP_MARKDOWN: rp_render_markdown(b, j, o); break;
  case RP_JUNIT: rp_render_junit(b, j, o); break;
  case RP_SARIF: rp_render_sarif(b, j, o); break;
  case RP_HTML: rp_render_html(b, j, o); break;
  default: break;
  }
}

bool rp_occ_site(const rp_occ *o, a2a_frame *f, char *out, unsigned cap) {
  const a2a_record *r = &o->rec;
  if (!r->nstack) {
    memset(f, 0, sizeof *f);
    if (cap) out[0] = 0;
    return false;
  }
  int k = a2a_frame_first_located(r->stack, (int)r->nstack, f);
  if (k < 0) {
    a2a_frame_parse(r->stack[0], f);
    k = 0;
  }
  a2a_frame_short(f, r->stack[k], out, cap);
  return true;
}

void rp_ranks_text(strbuf *b, const rp_finding *f) {
  if (f->nranks) {
    sb_puts(b, f->nranks == 1 ? "rank " : "ranks ");
    fmt_ranks(b, f->ranks, f->nranks);
  }
  if (f->unknown_rank) {
    if (f->nranks) sb_puts(b, " and ");
    sb_printf(b, "%zu process%s of unknown rank", f->unknown_rank,
              f->unknown_rank == 1 ? "" : "es");
  }
}

const char *rp_comm_short(const char *hash) {
  if (!hash) return "";
  return strncmp(hash, "0x", 2) == 0 ? hash + 2 : hash;
}

void rp_fmt_bw(char *out, size_t cap, double gbps) {
  if (gbps < 0) snprintf(out, cap, "-");
  else if (gbps >= 100) snprintf(out, cap, "%.0f", gbps);
  else if (gbps >= 1) snprintf(out, cap, "%.2f", gbps);
  else snprintf(out, cap, "%.3g", gbps);
}

void rp_headline(strbuf *b, const rp_job *j) {
  size_t total = j->by_sev[0] + j->by_sev[1] + j->by_sev[2];
  if (!total) {
    sb_puts(b, "no findings");
    return;
  }
  sb_printf(b, "%zu finding%s: %zu error%s", total, total == 1 ? "" : "s", j->by_sev[SEV_ERROR],
            j->by_sev[SEV_ERROR] == 1 ? "" : "s");
  if (j->deadlock) {
    for (size_t i = 0; i < j->nf; i++)
      if (j->f[i].kind == RP_DEADLOCK) {
        sb_printf(b, " (%s)", strcmp(j->f[i].check, "group.hang") == 0 ? "hang" : "deadlock");
        break;
      }
  }
  sb_printf(b, ", %zu warning%s, %zu info", j->by_sev[SEV_WARNING],
            j->by_sev[SEV_WARNING] == 1 ? "" : "s", j->by_sev[SEV_INFO]);
}

bool rp_proc_is_launcher(const rp_proc *p) {
  return p->rank < 0 && p->nfindings == 0 && !p->failed_now && !p->fail_matched;
}

void rp_count_ends(const rp_job *j, rp_ends *e) {
  memset(e, 0, sizeof *e);
  for (size_t i = 0; i < j->nprocs; i++) {
    const rp_proc *p = &j->procs[i];
    if (rp_proc_is_launcher(p)) e->launchers++;
    if (!p->has_summary) e->no_summary++;
    else if (p->failed_now) e->failed_now++;
    else if (p->fail_matched) e->fail_matched++;
    else e->ok++;
  }
}
