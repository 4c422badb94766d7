/* report_sarif.c - the report as SARIF 2.1.0 (OASIS), for code-scanning
 * UIs (GitHub code scanning, GitLab, VS Code's SARIF viewer): one result
 * per merged finding, its location the first stack frame with a file:line
 * (Python or native), the other ranks' call sites as relatedLocations, and
 * every rank's stack as a SARIF stack. Rules come from the checks table.
 *
 * File paths: absolute paths become file:// URIs; relative ones (DWARF and
 * Python often give paths relative to the build or working directory) are
 * kept relative with uriBaseId "SRCROOT", which the consumer resolves
 * against the checkout. */
#include <stdio.h>
#include <string.h>

#include "a2a_checks.h"
#include "cli.h"
#include "report.h"

static void uri(strbuf *b, const char *path) {
  static const char hex[] = "0123456789ABCDEF";
  strbuf u = {0};
  if (path[0] == '/') sb_puts(&u, "file://");
  for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
    if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
        strchr("/-._~!$&'()*+,;=:@", *p))
      sb_putc(&u, (char)*p);
    else {
      sb_putc(&u, '%');
      sb_putc(&u, hex[*p >> 4]);
      sb_putc(&u, hex[*p & 15]);
    }
  }
  sb_json_str(b, sb_str(&u));
  sb_free(&u);
}

static const char *level(int sev) {
  return sev == SEV_ERROR ? "error" : sev == SEV_WARNING ? "warning" : "note";
}

/* {"physicalLocation":...,"logicalLocations":[...]} or false if nothing
 * is known about the place. */
static bool location(strbuf *b, const a2a_frame *f, int id, const char *message) {
  if (!f->file[0] && !f->func[0]) return false;
  sb_putc(b, '{');
  bool comma = false;
  if (id >= 0) {
    sb_printf(b, "\"id\":%d", id);
    comma = true;
  }
  if (f->file[0]) {
    sb_printf(b, "%s\"physicalLocation\":{\"artifactLocation\":{\"uri\":", comma ? "," : "");
    uri(b, f->file);
    if (f->file[0] != '/') sb_puts(b, ",\"uriBaseId\":\"SRCROOT\"");
    sb_printf(b, "},\"region\":{\"startLine\":%d", f->line > 0 ? f->line : 1);
    if (f->col > 0) sb_printf(b, ",\"startColumn\":%d", f->col);
    sb_puts(b, "}}");
    comma = true;
  }
  if (f->func[0]) {
    sb_printf(b, "%s\"logicalLocations\":[{\"name\":", comma ? "," : "");
    sb_json_str(b, f->func);
    sb_puts(b, ",\"kind\":\"function\"}]");
    comma = true;
  }
  if (message) {
    sb_printf(b, "%s\"message\":{\"text\":", comma ? "," : "");
    sb_json_str(b, message);
    sb_putc(b, '}');
  }
  sb_putc(b, '}');
  return true;
}

static unsigned long long fnv(const char *s, unsigned long long h) {
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

void rp_render_sarif(strbuf *b, const rp_job *j, const rp_opts *o) {
  (void)o;
  sb_printf(b, "{\"$schema\":\"https://json.schemastore.org/sarif-2.1.0.json\",\"version\":\"2.1.0\","
               "\"runs\":[{\"tool\":{\"driver\":{\"name\":\"a2acheck\",\"version\":\"%s\","
               "\"semanticVersion\":\"%s\",\"rules\":[",
            A2ACHECK_VERSION, A2ACHECK_VERSION);
  /* Rules: every row of the table (ruleIndex is the table index), then any
   * check a newer runtime logged that this table lacks. */
  const char *extra[256];
  int nextra = 0;
  for (size_t i = 0; i < j->nf && nextra < 256; i++) {
    if (a2a_check_by_name(j->f[i].check) != A2A_CK_NONE) continue;
    bool dup = false;
    for (int k = 0; k < nextra; k++) dup |= strcmp(extra[k], j->f[i].check) == 0;
    if (!dup) extra[nextra++] = j->f[i].check;
  }
  for (int i = 0; i < A2A_CK__COUNT + nextra; i++) {
    const char *name = i < A2A_CK__COUNT ? a2a_check_table[i].name : extra[i - A2A_CK__COUNT];
    const char *sum = i < A2A_CK__COUNT ? a2a_check_table[i].summary : "a check not in this a2acheck's table";
    int sev = i < A2A_CK__COUNT ? a2a_check_table[i].severity : SEV_WARNING;
    sb_printf(b, "%s{\"id\":", i ? "," : "");
    sb_json_str(b, name);
    sb_puts(b, ",\"shortDescription\":{\"text\":");
    sb_json_str(b, sum);
    sb_puts(b, "},\"help\":{\"text\":");
    strbuf h = {0};
    sb_printf(&h, "See %s#%s in the a2acheck documentation.", A2A_CHECKS_DOC, name);
    sb_json_str(b, sb_str(&h));
    sb_free(&h);
    sb_printf(b, "},\"defaultConfiguration\":{\"level\":\"%s\"},\"properties\":{\"category\":\"%.*s\"}}",
              level(sev), (int)strcspn(name, "."), name);
  }
  sb_puts(b, "]}},\"originalUriBaseIds\":{\"SRCROOT\":{\"description\":{\"text\":"
             "\"The source tree the program was built from (relative paths in stacks).\"}}},"
             "\"results\":[");
  for (size_t i = 0; i < j->nf; i++) {
    const rp_finding *f = &j->f[i];
    a2a_check_id id = a2a_check_by_name(f->check);
    int rule = id != A2A_CK_NONE ? (int)id : A2A_CK__COUNT;
    if (id == A2A_CK_NONE)
      for (int k = 0; k < nextra; k++)
        if (strcmp(extra[k], f->check) == 0) rule = A2A_CK__COUNT + k;
    strbuf ranks = {0};
    rp_ranks_text(&ranks, f);
    strbuf msg = {0};
    sb_printf(&msg, "%s (%s)", f->message, sb_str(&ranks));
    sb_printf(b, "%s{\"ruleId\":", i ? "," : "");
    sb_json_str(b, f->check);
    sb_printf(b, ",\"ruleIndex\":%d,\"level\":\"%s\",\"message\":{\"text\":", rule, level(f->severity));
    sb_json_str(b, sb_str(&msg));
    sb_puts(b, "},\"locations\":[");
    /* primary: the first side with a located frame, else the first side */
    a2a_frame fr;
    char site[1400];
    size_t primary = 0;
    for (size_t k = 0; k < f->nocc; k++)
      if (rp_occ_site(&j->occ[f->occ[k]], &fr, site, sizeof site) && fr.file[0]) {
        primary = k;
        break;
      }
    rp_occ_site(&j->occ[f->occ[primary]], &fr, site, sizeof site);
    location(b, &fr, -1, NULL);
    sb_puts(b, "],\"relatedLocations\":[");
    int rid = 0;
    for (size_t k = 0; k < f->nocc && rid < 64; k++) {
      if (k == primary) continue;
      const rp_occ *x = &j->occ[f->occ[k]];
      if (!rp_occ_site(x, &fr, site, sizeof site) || (!fr.file[0] && !fr.func[0])) continue;
      char lab[128];
      const char *role = rp_occ_role(j, f, x);
      snprintf(lab, sizeof lab, "rank %d%s%s%s", x->rank, role ? " (" : "", role ? role : "",
               role ? ")" : "");
      if (rid) sb_putc(b, ',');
      location(b, &fr, rid++, lab);
    }
    sb_puts(b, "],\"stacks\":[");
    size_t ns = 0;
    for (size_t k = 0; k < f->nocc && ns < 32; k++) {
      const rp_occ *x = &j->occ[f->occ[k]];
      if (!x->rec.nstack) continue;
      sb_printf(b, "%s{\"message\":{\"text\":\"rank %d (pid %lld)\"},\"frames\":[", ns++ ? "," : "",
                x->rank, j->procs[x->proc].pid);
      for (size_t s = 0; s < x->rec.nstack; s++) {
        a2a_frame sf;
        a2a_frame_parse(x->rec.stack[s], &sf);
        sb_printf(b, "%s{", s ? "," : "");
        if (sf.module[0]) {
          sb_puts(b, "\"module\":");
          sb_json_str(b, sf.module);
          sb_putc(b, ',');
        }
        sb_puts(b, "\"location\":");
        if (!location(b, &sf, -1, x->rec.stack[s])) {
          sb_puts(b, "{\"message\":{\"text\":");
          sb_json_str(b, x->rec.stack[s]);
          sb_puts(b, "}}");
        }
        sb_putc(b, '}');
      }
      sb_puts(b, "]}");
    }
    unsigned long long fp = fnv(f->check, 1469598103934665603ull);
    const rp_occ *x0 = &j->occ[f->occ[primary]];
    fp = fnv(x0->rec.nstack ? x0->rec.stack[0] : f->message, fp);
    sb_printf(b, "],\"partialFingerprints\":{\"a2acheckSite/v1\":\"%016llx\"},\"properties\":{\"ranks\":[", fp);
    for (size_t k = 0; k < f->nranks; k++) sb_printf(b, "%s%d", k ? "," : "", f->ranks[k]);
    sb_printf(b, "],\"occurrences\":%lld", f->count);
    if (f->comm_hash) {
      sb_puts(b, ",\"comm\":");
      sb_json_str(b, f->comm_hash);
    }
    sb_puts(b, "}}");
    sb_free(&ranks);
    sb_free(&msg);
  }
  rp_ends e;
  rp_count_ends(j, &e);
  sb_printf(b, "],\"invocations\":[{\"executionSuccessful\":%s", "true");
  if (o && o->command) {
    sb_puts(b, ",\"commandLine\":");
    sb_json_str(b, o->command);
  }
  if (o && o->exit_status >= 0) sb_printf(b, ",\"exitCode\":%d", o->exit_status);
  sb_puts(b, ",\"toolExecutionNotifications\":[");
  size_t nn = 0;
  for (size_t i = 0; i < j->nwarnings && i < 100; i++) {
    sb_printf(b, "%s{\"level\":\"warning\",\"message\":{\"text\":", nn++ ? "," : "");
    sb_json_str(b, j->warnings[i]);
    sb_puts(b, "}}");
  }
  sb_puts(b, "]}]}]}\n");
}
