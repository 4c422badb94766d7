/* report_json.c - the report as one JSON document (schema
 * "a2acheck-report/1", docs/report.md "JSON"). Every merged finding with
 * its sides (one per rank and process, each with its own message, stack and
 * parsed frames), the deadlock drawings' data, counts, performance,
 * processes and the lines that were ignored. */
#include <stdio.h>
#include <string.h>

#include "graph.h"
#include "report.h"

static void kv_str(strbuf *b, const char *k, const char *v, bool comma) {
  if (comma) sb_putc(b, ',');
  sb_json_str(b, k);
  sb_putc(b, ':');
  sb_json_str(b, v);
}

static void frame_json(strbuf *b, const char *raw) {
  a2a_frame f;
  a2a_frame_parse(raw, &f);
  sb_puts(b, "{\"raw\":");
  sb_json_str(b, raw);
  if (f.func[0]) kv_str(b, "function", f.func, true);
  if (f.module[0]) kv_str(b, "module", f.module, true);
  if (f.file[0]) {
    kv_str(b, "file", f.file, true);
    sb_printf(b, ",\"line\":%d", f.line);
    if (f.col) sb_printf(b, ",\"column\":%d", f.col);
  }
  if (f.inlined) sb_puts(b, ",\"inlined\":true");
  if (f.python) sb_puts(b, ",\"python\":true");
  sb_putc(b, '}');
}

static void location_json(strbuf *b, const rp_occ *o) {
  a2a_frame f;
  char site[1400];
  if (!rp_occ_site(o, &f, site, sizeof site) || !f.file[0]) {
    sb_puts(b, "null");
    return;
  }
  sb_puts(b, "{\"file\":");
  sb_json_str(b, f.file);
  sb_printf(b, ",\"line\":%d", f.line);
  if (f.func[0]) kv_str(b, "function", f.func, true);
  if (f.module[0]) kv_str(b, "module", f.module, true);
  sb_putc(b, '}');
}

static void graph_json(strbuf *b, const rp_graph *g) {
  sb_puts(b, "{\"source\":");
  sb_json_str(b, g->source);
  sb_printf(b, ",\"cycle\":%s,\"nodes\":[", g->cycle ? "true" : "false");
  for (size_t i = 0; i < g->nn; i++) {
    const rp_gnode *n = &g->n[i];
    sb_printf(b, "%s{\"id\":", i ? "," : "");
    sb_json_str(b, n->id);
    if (n->rank >= 0) sb_printf(b, ",\"rank\":%d", n->rank);
    if (n->pid >= 0) sb_printf(b, ",\"pid\":%lld", n->pid);
    kv_str(b, "label", n->label, true);
    kv_str(b, "state", n->state, true);
    sb_putc(b, '}');
  }
  sb_puts(b, "],\"edges\":[");
  for (size_t i = 0; i < g->ne; i++) {
    const rp_gedge *e = &g->e[i];
    sb_printf(b, "%s{\"from\":", i ? "," : "");
    sb_json_str(b, g->n[e->from].id);
    sb_puts(b, ",\"to\":");
    sb_json_str(b, g->n[e->to].id);
    kv_str(b, "label", e->label, true);
    sb_printf(b, ",\"cycle\":%s}", e->cycle ? "true" : "false");
  }
  sb_puts(b, "]}");
}

static void finding_json(strbuf *b, const rp_job *j, const rp_finding *f) {
  static const char *kinds[] = {"local", "cross-rank", "deadlock"};
  sb_puts(b, "{\"check\":");
  sb_json_str(b, f->check);
  sb_printf(b, ",\"severity\":\"%s\",\"kind\":\"%s\",\"ranks\":[", a2a_severity_name(f->severity),
            kinds[f->kind]);
  for (size_t k = 0; k < f->nranks; k++) sb_printf(b, "%s%d", k ? "," : "", f->ranks[k]);
  sb_printf(b, "],\"unknown_rank_processes\":%zu,\"count\":%lld", f->unknown_rank, f->count);
  if (f->comm_hash) {
    sb_puts(b, ",\"comm\":{\"hash\":");
    sb_json_str(b, f->comm_hash);
    if (f->comm_name) kv_str(b, "name", f->comm_name, true);
    if (f->comm_size >= 0) sb_printf(b, ",\"size\":%lld", f->comm_size);
    sb_putc(b, '}');
  } else {
    sb_puts(b, ",\"comm\":null");
  }
  kv_str(b, "message", f->message, true);
  sb_printf(b, ",\"messages_differ\":%s,\"location\":", f->messages_differ ? "true" : "false");
  location_json(b, &j->occ[f->occ[0]]);
  sb_puts(b, ",\"sides\":[");
  for (size_t k = 0; k < f->nocc; k++) {
    const rp_occ *o = &j->occ[f->occ[k]];
    const rp_proc *p = &j->procs[o->proc];
    sb_printf(b, "%s{", k ? "," : "");
    if (o->rank >= 0) sb_printf(b, "\"rank\":%d", o->rank);
    else sb_puts(b, "\"rank\":null");
    sb_printf(b, ",\"pid\":%lld", p->pid);
    if (p->host) kv_str(b, "host", p->host, true);
    const char *role = rp_occ_role(j, f, o);
    if (role) kv_str(b, "role", role, true);
    if (o->rec.comm_rank >= 0) sb_printf(b, ",\"comm_rank\":%lld", o->rec.comm_rank);
    sb_printf(b, ",\"count\":%lld", o->rec.count);
    if (o->rec.time) kv_str(b, "time", o->rec.time, true);
    kv_str(b, "message", o->rec.message, true);
    sb_puts(b, ",\"location\":");
    location_json(b, o);
    sb_puts(b, ",\"stack\":[");
    for (size_t s = 0; s < o->rec.nstack; s++) {
      if (s) sb_putc(b, ',');
      frame_json(b, o->rec.stack[s]);
    }
    sb_putc(b, ']');
    /* a deadlock verdict's details (every process involved) are the same on
     * every rank: written once, with the first side */
    if (f->kind != RP_DEADLOCK || k == 0) {
      sb_puts(b, ",\"details\":");
      json_write(b, o->rec.details);
    }
    kv_str(b, "file", p->path, true);
    sb_putc(b, '}');
  }
  sb_putc(b, ']');
  if (f->kind == RP_DEADLOCK) {
    rp_graph g;
    rp_graph_build(j, f, &g);
    sb_puts(b, ",\"graph\":");
    if (g.source) graph_json(b, &g);
    else sb_puts(b, "null");
    rp_graph_free(&g);
  }
  sb_putc(b, '}');
}

void rp_render_json(strbuf *b, const rp_job *j, const rp_opts *o) {
  sb_printf(b, "{\"schema\":\"a2acheck-report/1\",\"tool\":{\"name\":\"a2acheck\",\"version\":\"%s\"}",
#ifdef A2ACHECK_VERSION
            A2ACHECK_VERSION
#else
            "unknown"
#endif
  );
  sb_puts(b, ",\"dirs\":[");
  for (size_t i = 0; i < j->ndirs; i++) {
    if (i) sb_putc(b, ',');
    sb_json_str(b, j->dirs[i]);
  }
  sb_putc(b, ']');
  if (o && o->command) kv_str(b, "command", o->command, true);
  if (o && o->command_status >= 0) sb_printf(b, ",\"command_status\":%d", o->command_status);
  if (o && o->exit_status >= 0) sb_printf(b, ",\"exit_status\":%d", o->exit_status);
  rp_ends e;
  rp_count_ends(j, &e);
  strbuf h = {0};
  rp_headline(&h, j);
  sb_printf(b, ",\"summary\":{\"processes\":%zu,\"ranks\":%zu,\"findings\":%zu,"
               "\"by_severity\":{\"error\":%zu,\"warning\":%zu,\"info\":%zu},\"deadlock\":%s,"
               "\"processes_ended_by_a2acheck\":%zu,\"processes_fail_on_matched\":%zu,"
               "\"processes_without_summary\":%zu,\"ignored_lines\":%zu,\"headline\":",
            j->nprocs, j->nranks, j->nf, j->by_sev[SEV_ERROR], j->by_sev[SEV_WARNING],
            j->by_sev[SEV_INFO], j->deadlock ? "true" : "false", e.failed_now, e.fail_matched,
            e.no_summary, j->bad_lines);
  sb_json_str(b, sb_str(&h));
  sb_free(&h);
  if (o && o->verdict) {
    sb_puts(b, ",\"failing\":");
    sb_json_str(b, o->verdict->reason);
  }
  sb_puts(b, "},\"findings\":[");
  for (size_t i = 0; i < j->nf; i++) {
    if (i) sb_putc(b, ',');
    finding_json(b, j, &j->f[i]);
  }
  sb_puts(b, "],\"checks\":[");
  for (size_t i = 0; i < j->ncc; i++) {
    const rp_check_count *c = &j->cc[i];
    sb_printf(b, "%s{\"check\":", i ? "," : "");
    sb_json_str(b, c->check);
    sb_printf(b, ",\"severity\":\"%s\",\"findings\":%zu,\"lines\":%zu,\"occurrences\":%lld,"
                 "\"suppressed\":%lld,\"ranks\":[",
              a2a_severity_name(c->severity), c->findings, c->lines, c->occurrences, c->suppressed);
    for (size_t k = 0; k < c->nranks; k++) sb_printf(b, "%s%d", k ? "," : "", c->ranks[k]);
    sb_puts(b, "]}");
  }
  sb_puts(b, "],\"performance\":[");
  for (size_t i = 0; i < j->ncomms; i++) {
    const rp_comm *c = &j->comms[i];
    sb_printf(b, "%s{\"comm\":", i ? "," : "");
    sb_json_str(b, c->hash);
    if (c->name) kv_str(b, "name", c->name, true);
    sb_printf(b, ",\"size\":%lld,\"ranks\":[", c->size);
    for (size_t k = 0; k < c->nranks; k++) sb_printf(b, "%s%d", k ? "," : "", c->ranks[k]);
    sb_printf(b, "],\"ops_per_rank\":{\"min\":%lld,\"max\":%lld},\"bytes\":", c->ops_min, c->ops_max);
    json_write_num(b, c->bytes);
    sb_puts(b, ",\"time_s_max\":");
    json_write_num(b, c->time_max);
    sb_printf(b, ",\"small_ops\":%lld,\"blocked_after_ops\":%lld,\"serialized_ops\":%lld,\"overlap\":",
              c->small_ops, c->blocked_after_ops, c->serialized_ops);
    if (c->novl) {
      sb_puts(b, "{\"min\":");
      json_write_num(b, c->ovl_min);
      sb_puts(b, ",\"mean\":");
      json_write_num(b, c->ovl_sum / c->novl);
      sb_puts(b, ",\"max\":");
      json_write_num(b, c->ovl_max);
      sb_printf(b, ",\"ranks\":%d}", c->novl);
    } else {
      sb_puts(b, "null");
    }
    sb_puts(b, ",\"buckets\":[");
    for (size_t k = 0; k < c->nb; k++) {
      const rp_bucket *t = &c->b[k];
      sb_printf(b, "%s{\"op\":", k ? "," : "");
      sb_json_str(b, t->op);
      sb_printf(b, ",\"bucket_lo_bytes\":%lld,\"ops\":%lld,\"measured_ops\":%lld,\"bytes\":", t->lo,
                t->ops, t->measured_ops);
      json_write_num(b, t->bytes);
      sb_puts(b, ",\"busbw_gbps\":");
      if (t->nbw) {
        sb_puts(b, "{\"min\":");
        json_write_num(b, t->bw_min);
        sb_puts(b, ",\"mean\":");
        json_write_num(b, t->bw_sum / t->nbw);
        sb_puts(b, ",\"max\":");
        json_write_num(b, t->bw_max);
        sb_printf(b, ",\"ranks\":%d}", t->nbw);
        sb_puts(b, ",\"algbw_gbps_mean\":");
        json_write_num(b, t->algbw_sum / t->nbw);
      } else {
        sb_puts(b, "null");
      }
      sb_putc(b, '}');
    }
    sb_puts(b, "]}");
  }
  sb_puts(b, "],\"processes\":[");
  for (size_t i = 0; i < j->nprocs; i++) {
    const rp_proc *p = &j->procs[i];
    char end[200];
    rp_proc_ending(p, end, sizeof end);
    sb_printf(b, "%s{\"file\":", i ? "," : "");
    sb_json_str(b, p->path);
    sb_puts(b, ",\"host\":");
    sb_json_str(b, p->host);
    sb_printf(b, ",\"pid\":%lld,\"rank\":", p->pid);
    if (p->rank >= 0) sb_printf(b, "%d", p->rank);
    else sb_puts(b, "null");
    const char *how = !p->has_summary ? "no-summary" : p->failed_now ? "ended-by-a2acheck"
                      : p->fail_matched ? "fail-on-matched" : "exit";
    sb_printf(b, ",\"ended\":\"%s\",\"ending\":", how);
    sb_json_str(b, end);
    sb_printf(b, ",\"summary\":%s", p->has_summary ? "true" : "false");
    if (p->has_summary) {
      sb_printf(b, ",\"exit_status\":%lld,\"failed_now\":%s,\"fail_matched\":%s,\"fail_on\":",
                p->exit_status, p->failed_now ? "true" : "false", p->fail_matched ? "true" : "false");
      sb_json_str(b, p->fail_on);
      sb_printf(b, ",\"nccl_calls_seen\":%s,\"dropped\":%lld", p->nccl_seen ? "true" : "false",
                p->dropped);
    }
    sb_printf(b, ",\"findings\":%zu,\"lines\":%zu,\"ignored_lines\":%zu,\"launcher\":%s}",
              p->nfindings, p->nlines, p->nbad, rp_proc_is_launcher(p) ? "true" : "false");
  }
  sb_puts(b, "],\"warnings\":[");
  for (size_t i = 0; i < j->nwarnings && i < 100; i++) {
    if (i) sb_putc(b, ',');
    sb_json_str(b, j->warnings[i]);
  }
  sb_puts(b, "]}\n");
}
