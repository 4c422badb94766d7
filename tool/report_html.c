/* report_html.c - the report as ONE self-contained HTML page: no script,
 * no external style sheet, font or image; the drawings are inline SVG.
 * Sections: the status, the findings table (errors first; each finding's
 * sides and stacks in a <details>), for a deadlock or hang the story, the
 * wait-for graph and a per-rank timeline of the last operations (graph.h
 * says where they come from), the bus bandwidth by message size of every
 * communicator, the processes and the counts per check. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "graph.h"
#include "report.h"

static const char css[] =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}"
    "main{max-width:1200px;margin:0 auto;padding:20px 28px 60px}"
    "h1{font-size:22px;margin:8px 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d9dde3;padding-bottom:4px}"
    ".meta{color:#5b6472;margin:0 0 12px}.status{display:inline-block;padding:6px 12px;border-radius:6px;font-weight:600;margin:6px 0}"
    ".s-ok{background:#e3f5e8;color:#1e7b3a}.s-warning{background:#fff4d6;color:#8a5a00}.s-error{background:#fde2e1;color:#a4231b}"
    "table{border-collapse:collapse;width:100%;background:#fff;box-shadow:0 1px 2px rgba(0,0,0,.06)}"
    "th,td{border:1px solid #e1e4e8;padding:5px 8px;text-align:left;vertical-align:top}th{background:#eef1f5;font-weight:600}"
    "td.num{text-align:right;font-variant-numeric:tabular-nums}"
    ".sev{font-weight:700;text-transform:uppercase;font-size:12px;white-space:nowrap}.sev-error{color:#c0392b}.sev-warning{color:#b9770e}.sev-info{color:#2471a3}"
    "code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}"
    "pre{background:#fff;border:1px solid #e1e4e8;padding:10px;overflow-x:auto;white-space:pre-wrap;word-break:break-word}"
    "details>summary{cursor:pointer;color:#2c5282}.site{color:#3d4653;white-space:nowrap}"
    ".fig{background:#fff;border:1px solid #e1e4e8;padding:8px;overflow-x:auto}.note{color:#5b6472;font-size:12.5px}"
    ".legend span{display:inline-block;margin-right:14px}.sw{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:4px;vertical-align:-1px;border:1px solid #888}";

static void esc(strbuf *b, const char *s) { sb_xml(b, s ? s : ""); }

static const char *sev_class(int sev) {
  return sev == SEV_ERROR ? "error" : sev == SEV_WARNING ? "warning" : "info";
}

/* ---- the wait-for graph ---- */

typedef struct style {
  const char *fill, *stroke, *dash;
} style;

static style node_style(const char *state) {
  if (!strcmp(state, "blocked") || !strcmp(state, "stuck") || !strcmp(state, "waiting") ||
      !strcmp(state, "in-flight"))
    return (style){"#fde2e1", "#c0392b", ""};
  if (!strcmp(state, "missing") || !strcmp(state, "exited") || !strcmp(state, "ended") ||
      !strcmp(state, "cannot-start") || !strcmp(state, "not-started"))
    return (style){"#eceff1", "#6c7a89", "5,3"};
  if (!strcmp(state, "awaited") || !strcmp(state, "open")) return (style){"#fff4d6", "#d68910", ""};
  if (!strcmp(state, "ok") || !strcmp(state, "completed") || !strcmp(state, "done"))
    return (style){"#e3f5e8", "#27ae60", ""};
  return (style){"#e8eef8", "#5d7ca6", ""};
}

/* Where the segment from the box centre (cx,cy) towards (tx,ty) leaves a
 * box of half-size (hw,hh). */
static void box_exit(double cx, double cy, double tx, double ty, double hw, double hh, double *ox,
                     double *oy) {
  double dx = tx - cx, dy = ty - cy;
  double sx = dx != 0 ? hw / fabs(dx) : 1e9, sy = dy != 0 ? hh / fabs(dy) : 1e9;
  double s = sx < sy ? sx : sy;
  if (s > 1) s = 1;
  *ox = cx + dx * s;
  *oy = cy + dy * s;
}

static void svg_label(strbuf *b, double x, double y, const char *label, const char *attrs) {
  /* one <tspan> per line of the label, centred */
  int lines = 1;
  for (const char *p = label; *p; p++) lines += *p == '\n';
  double y0 = y - (lines - 1) * 7.5;
  sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" %s>", x, y0 + 4, attrs);
  int k = 0;
  for (const char *line = label; line;) {
    const char *nl = strchr(line, '\n');
    size_t n = nl ? (size_t)(nl - line) : strlen(line);
    sb_printf(b, "<tspan x=\"%.1f\" dy=\"%s\">", x, k ? "15" : "0");
    sb_xmln(b, line, n > 40 ? 40 : n);
    sb_puts(b, "</tspan>");
    k++;
    line = nl ? nl + 1 : NULL;
  }
  sb_puts(b, "</text>");
}

static void graph_svg(strbuf *b, const rp_graph *g) {
  size_t n = g->nn > 64 ? 64 : g->nn;
  const double bw = 160, bh = 46, pad = 30;
  /* nodes on a circle (two side by side), then the drawing is cropped to
   * what it uses */
  double R = n <= 1 ? 0 : n == 2 ? 190 : 70 + 36.0 * (double)n;
  if (R > 560) R = 560;
  double *x = xcalloc(n ? n : 1, sizeof *x), *y = xcalloc(n ? n : 1, sizeof *y);
  double minx = 0, maxx = 0, miny = 0, maxy = 0;
  for (size_t i = 0; i < n; i++) {
    double a = n == 2 ? (i ? 0 : M_PI) : -M_PI / 2 + 2 * M_PI * (double)i / (double)n;
    x[i] = R * cos(a);
    y[i] = n == 2 ? 0 : R * sin(a);
    if (!i || x[i] < minx) minx = x[i];
    if (!i || x[i] > maxx) maxx = x[i];
    if (!i || y[i] < miny) miny = y[i];
    if (!i || y[i] > maxy) maxy = y[i];
  }
  double padx = n <= 12 ? pad + 170 : pad; /* room for the edge labels */
  double W = maxx - minx + bw + 2 * padx, H = maxy - miny + bh + 2 * pad + (n == 2 ? 24 : 0);
  for (size_t i = 0; i < n; i++) {
    x[i] += -minx + bw / 2 + padx;
    y[i] += -miny + bh / 2 + pad + (n == 2 ? 12 : 0);
  }
  sb_printf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"wfg\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"wait-for graph\" font-size=\"12\">",
            W, H, W, H);
  sb_puts(b, "<title>wait-for graph: an arrow from A to B means A waits for B</title>"
             "<defs><marker id=\"arr\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" "
             "markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,0L10,5L0,10z\" fill=\"#555\"/></marker>"
             "<marker id=\"arrc\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" "
             "markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,0L10,5L0,10z\" fill=\"#c0392b\"/></marker></defs>");
  for (size_t i = 0; i < g->ne; i++) {
    const rp_gedge *e = &g->e[i];
    if ((size_t)e->from >= n || (size_t)e->to >= n || e->from == e->to) continue;
    bool back = false; /* an edge both ways: each drawn off-centre, on its own side */
    for (size_t k = 0; k < g->ne; k++)
      if (g->e[k].from == e->to && g->e[k].to == e->from) back = true;
    double x1 = x[e->from], y1 = y[e->from], x2 = x[e->to], y2 = y[e->to];
    double dx = x2 - x1, dy = y2 - y1, l = sqrt(dx * dx + dy * dy);
    double nx = l > 0 ? -dy / l : 0, ny = l > 0 ? dx / l : 0; /* left normal */
    if (back) x1 += nx * 9, y1 += ny * 9, x2 += nx * 9, y2 += ny * 9;
    double sx, sy, tx, ty;
    box_exit(x1, y1, x2, y2, bw / 2 + 2, bh / 2 + 2, &sx, &sy);
    box_exit(x2, y2, x1, y1, bw / 2 + 4, bh / 2 + 4, &tx, &ty);
    sb_printf(b, "<g class=\"edge\"><title>");
    esc(b, g->n[e->from].label);
    sb_puts(b, " ");
    esc(b, e->label[0] ? e->label : "waits for");
    sb_puts(b, " ");
    esc(b, g->n[e->to].label);
    sb_printf(b, "</title><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                 "stroke-width=\"%s\" marker-end=\"url(#%s)\"/>",
              sx, sy, tx, ty, e->cycle ? "#c0392b" : "#555", e->cycle ? "2.4" : "1.6",
              e->cycle ? "arrc" : "arr");
    if (n <= 12 && e->label[0]) {
      /* the label near the middle, pushed to the edge's own side */
      double off = back ? 14 : 10;
      double mx = (sx + tx) / 2 + nx * off, my = (sy + ty) / 2 + ny * off + 4;
      const char *anchor = fabs(nx) < 0.3 ? "middle" : nx > 0 ? "start" : "end";
      size_t ll = strlen(e->label) > 44 ? 44 : strlen(e->label);
      sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" fill=\"#444\" font-size=\"11\" "
                   "paint-order=\"stroke\" stroke=\"#fff\" stroke-width=\"3\">",
                mx, my, anchor);
      sb_xmln(b, e->label, ll);
      sb_puts(b, "</text>");
    }
    sb_puts(b, "</g>");
  }
  for (size_t i = 0; i < n; i++) {
    const rp_gnode *nd = &g->n[i];
    style st = node_style(nd->state);
    sb_puts(b, "<g class=\"node\"><title>");
    esc(b, nd->label);
    if (nd->state[0]) {
      sb_puts(b, " (");
      esc(b, nd->state);
      sb_puts(b, ")");
    }
    sb_printf(b, "</title><rect x=\"%.1f\" y=\"%.1f\" width=\"%.0f\" height=\"%.0f\" rx=\"8\" fill=\"%s\" "
                 "stroke=\"%s\" stroke-width=\"1.8\"%s%s%s/>",
              x[i] - bw / 2, y[i] - bh / 2, bw, bh, st.fill, st.stroke, st.dash[0] ? " stroke-dasharray=\"" : "",
              st.dash, st.dash[0] ? "\"" : "");
    strbuf lab = {0};
    sb_puts(&lab, nd->label);
    if (nd->state[0] && !strchr(nd->label, '\n')) sb_printf(&lab, "\n%s", nd->state);
    svg_label(b, x[i], y[i], sb_str(&lab), "fill=\"#1d2330\"");
    sb_free(&lab);
    sb_puts(b, "</g>");
  }
  sb_puts(b, "</svg>");
  free(x);
  free(y);
}

/* ---- the timeline ---- */

static void timeline_svg(strbuf *b, const rp_timeline *t) {
  size_t rows = t->nrows > 64 ? 64 : t->nrows;
  if (!rows || !t->nitems) {
    sb_puts(b, "<p class=\"note\">Nothing to draw.</p>");
    return;
  }
  const double left = 110, right = 30, top = 26, rh = 28, W = 1000;
  double H = top + rh * (double)rows + 34;
  double lo = 0, hi = 0;
  bool first = true;
  for (size_t i = 0; i < t->nitems; i++) {
    if ((size_t)t->items[i].row >= rows) continue;
    double v = t->items[i].x;
    if (first || v < lo) lo = v;
    if (first || v > hi) hi = v;
    first = false;
  }
  bool boxes = strcmp(t->source, "findings") != 0;
  if (boxes) lo -= 0.5, hi += 0.5;
  if (hi - lo < 1e-9) lo -= 1, hi += 1;
  double pw = W - left - right;
  double sx = pw / (hi - lo);
  sb_printf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timeline\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"timeline\" font-size=\"11\">",
            W, H, W, H);
  sb_puts(b, "<title>per-rank timeline</title>");
  for (size_t r = 0; r < rows; r++) {
    double y = top + rh * (double)r;
    sb_printf(b, "<rect x=\"%.0f\" y=\"%.1f\" width=\"%.0f\" height=\"%.0f\" fill=\"%s\"/>", left, y, pw,
              rh, r % 2 ? "#ffffff" : "#f3f5f8");
    sb_printf(b, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#1d2330\" font-size=\"12\">",
              left - 8, y + rh / 2 + 4);
    esc(b, t->rows[r].label);
    sb_puts(b, "</text>");
  }
  /* axis */
  double ay = top + rh * (double)rows;
  sb_printf(b, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#888\"/>", left, ay, W - right, ay);
  int nticks = boxes && hi - lo <= 21 ? (int)(hi - lo) : 5;
  for (int k = 0; k <= nticks; k++) {
    double v = boxes && nticks != 5 ? lo + 0.5 + k : lo + (hi - lo) * k / 5, xx = left + (v - lo) * sx;
    if (boxes && v > hi) break;
    sb_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\"/>", xx, ay, xx, ay + 4);
    sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#5b6472\">", xx, ay + 16);
    if (!boxes) {
      if (hi - lo >= 10000) sb_printf(b, "%.1f s", v / 1000);
      else if (hi - lo >= 20) sb_printf(b, "%.0f ms", v);
      else sb_printf(b, "%.1f ms", v);
    } else {
      sb_printf(b, "%ld", lround(v));
    }
    sb_puts(b, "</text>");
  }
  if (boxes)
    sb_printf(b, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#5b6472\">operations in posting order (0 = the last one before the verdict)</text>",
              W - right, ay + 30);
  for (size_t i = 0; i < t->nitems; i++) {
    const rp_titem *it = &t->items[i];
    if ((size_t)it->row >= rows) continue;
    double y = top + rh * it->row, xx = left + (it->x - lo) * sx;
    style st = node_style(it->state);
    const char *fill = st.fill, *stroke = st.stroke;
    if (it->severity >= 0) {
      fill = it->severity == SEV_ERROR ? "#c0392b" : it->severity == SEV_WARNING ? "#d68910" : "#2471a3";
      stroke = "#fff";
    } else if (!strcmp(it->state, "failed")) {
      fill = "#6c3483";
      stroke = "#fff";
    } else if (!strcmp(it->state, "exit")) {
      fill = "#27ae60";
      stroke = "#fff";
    }
    sb_puts(b, "<g><title>");
    esc(b, it->tip[0] ? it->tip : it->label);
    sb_puts(b, "</title>");
    if (boxes) {
      double w = sx * 0.9;
      if (w > 120) w = 120;
      sb_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.0f\" rx=\"3\" fill=\"%s\" stroke=\"%s\"/>",
                xx - w / 2, y + 4, w, rh - 8, fill, stroke);
      if (w > 36) {
        size_t maxc = (size_t)(w / 6.2);
        sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#1d2330\">", xx, y + rh / 2 + 4);
        sb_xmln(b, it->label, strlen(it->label) > maxc ? maxc : strlen(it->label));
        sb_puts(b, "</text>");
      }
    } else if (it->severity >= 0) {
      sb_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"6\" fill=\"%s\" stroke=\"%s\" stroke-width=\"1.5\"/>",
                xx, y + rh / 2, fill, stroke);
    } else {
      sb_printf(b, "<path d=\"M%.1f,%.1fl7,7l-7,7l-7,-7z\" fill=\"%s\" stroke=\"%s\" stroke-width=\"1.5\"/>",
                xx, y + rh / 2 - 7, fill, stroke);
    }
    sb_puts(b, "</g>");
  }
  sb_puts(b, "</svg>");
}

/* ---- bus bandwidth by size ---- */

static const char *palette[] = {"#2471a3", "#c0392b", "#27ae60", "#8e44ad", "#d68910",
                                "#17a589", "#7f8c8d", "#a04000"};

static void bw_svg(strbuf *b, const rp_job *j) {
  long long *xs = NULL;
  size_t nx = 0, capx = 0;
  double ymax = 0;
  size_t nseries = 0;
  for (size_t i = 0; i < j->ncomms; i++)
    for (size_t k = 0; k < j->comms[i].nb; k++) {
      const rp_bucket *t = &j->comms[i].b[k];
      if (!t->nbw) continue;
      bool have = false;
      for (size_t q = 0; q < nx; q++) have |= xs[q] == t->lo;
      if (!have) {
        xgrow(&xs, &capx, nx, sizeof *xs);
        xs[nx++] = t->lo;
      }
      if (t->bw_max > ymax) ymax = t->bw_max;
    }
  if (!nx) {
    sb_puts(b, "<p class=\"note\">No measured operations (perf.summary buckets without timing: "
               "A2ACHECK_PERF_MEASURE=0, or no perf.summary records).</p>");
    free(xs);
    return;
  }
  for (size_t a = 1; a < nx; a++)
    for (size_t c = a; c > 0 && xs[c] < xs[c - 1]; c--) {
      long long tmp = xs[c];
      xs[c] = xs[c - 1];
      xs[c - 1] = tmp;
    }
  /* a round top for the y axis */
  double step = pow(10, floor(log10(ymax > 0 ? ymax : 1)));
  double top = ceil((ymax > 0 ? ymax : 1) / step) * step;
  if (top <= 0) top = 1;
  const double L = 70, R = 20, T = 16, Bm = 46, W = 900, H = 330;
  double pw = W - L - R, ph = H - T - Bm;
  double dx = pw / (double)nx;
  sb_printf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"busbw\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"bus bandwidth by message size\" font-size=\"11\">",
            W, H, W, H);
  sb_puts(b, "<title>bus bandwidth (GB/s) by message size bucket, mean over ranks with the min..max range</title>");
  for (int k = 0; k <= 4; k++) {
    double v = top * k / 4, y = T + ph - ph * k / 4;
    char lab[24];
    rp_fmt_bw(lab, sizeof lab, v);
    sb_printf(b, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#e1e4e8\"/>"
                 "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#5b6472\">%s</text>",
              L, y, W - R, y, L - 6, y + 4, lab);
  }
  sb_printf(b, "<text x=\"14\" y=\"%.0f\" transform=\"rotate(-90 14 %.0f)\" text-anchor=\"middle\" fill=\"#5b6472\">busbw GB/s</text>",
            T + ph / 2, T + ph / 2);
  for (size_t q = 0; q < nx; q++) {
    char lo[32];
    fmt_bytes(lo, sizeof lo, (double)xs[q]);
    sb_printf(b, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\" fill=\"#5b6472\">%s+</text>",
              L + dx * (q + 0.5), T + ph + 16, lo);
  }
  sb_printf(b, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\" fill=\"#5b6472\">message size (bytes per operation, bucket lower bound)</text>",
            L + pw / 2, H - 6);
  strbuf legend = {0};
  for (size_t i = 0; i < j->ncomms; i++) {
    const rp_comm *c = &j->comms[i];
    for (size_t k = 0; k < c->nb;) {
      const char *op = c->b[k].op;
      const char *col = palette[nseries % 8];
      strbuf pts = {0};
      size_t npts = 0;
      size_t k2 = k;
      for (; k2 < c->nb && !strcmp(c->b[k2].op, op); k2++) {
        const rp_bucket *t = &c->b[k2];
        if (!t->nbw) continue;
        size_t q = 0;
        while (xs[q] != t->lo) q++;
        double xx = L + dx * (q + 0.5) + ((double)(nseries % 5) - 2) * 3;
        double mean = t->bw_sum / t->nbw;
        double y = T + ph - ph * mean / top, y1 = T + ph - ph * t->bw_min / top, y2 = T + ph - ph * t->bw_max / top;
        sb_printf(&pts, "%s%.1f,%.1f", npts++ ? " " : "", xx, y);
        char m[24], a[24], z[24], lo[32];
        rp_fmt_bw(m, sizeof m, mean);
        rp_fmt_bw(a, sizeof a, t->bw_min);
        rp_fmt_bw(z, sizeof z, t->bw_max);
        fmt_bytes(lo, sizeof lo, (double)t->lo);
        sb_printf(b, "<g><title>comm %s %s, %s+: busbw %s GB/s (min %s, max %s) over %d rank%s, %lld ops</title>",
                  rp_comm_short(c->hash), op, lo, m, a, z, t->nbw, t->nbw == 1 ? "" : "s", t->ops);
        sb_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\" opacity=\".55\"/>",
                  xx, y1, xx, y2, col);
        sb_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"%s\"/></g>", xx, y, col);
      }
      if (npts > 1)
        sb_printf(b, "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\"/>", sb_str(&pts), col);
      sb_free(&pts);
      if (npts) {
        sb_printf(&legend, "<span><i class=\"sw\" style=\"background:%s\"></i>comm <code>%s</code> ", col,
                  rp_comm_short(c->hash));
        esc(&legend, op);
        sb_puts(&legend, "</span>");
        nseries++;
      }
      k = k2;
    }
  }
  sb_puts(b, "</svg>");
  sb_printf(b, "<div class=\"legend note\">%s</div>", sb_str(&legend));
  sb_free(&legend);
  free(xs);
}

/* ---- page ---- */

static void finding_row(strbuf *b, const rp_job *j, const rp_finding *f, size_t idx) {
  char site[1400];
  a2a_frame fr;
  sb_printf(b, "<tr id=\"f%zu\"><td class=\"num\">%zu</td><td class=\"sev sev-%s\">%s</td><td><code>", idx, idx,
            sev_class(f->severity), a2a_severity_name(f->severity));
  esc(b, f->check);
  sb_puts(b, "</code></td><td>");
  strbuf r = {0};
  rp_ranks_text(&r, f);
  esc(b, sb_str(&r));
  sb_free(&r);
  if (f->comm_hash && f->kind != RP_DEADLOCK) {
    sb_puts(b, "<br><span class=\"note\">comm ");
    esc(b, rp_comm_short(f->comm_hash));
    sb_puts(b, "</span>");
  }
  sb_puts(b, "</td><td class=\"site\">");
  size_t shown = 0;
  for (size_t k = 0; k < f->nocc && shown < 4; k++) {
    const rp_occ *x = &j->occ[f->occ[k]];
    if (!rp_occ_site(x, &fr, site, sizeof site)) continue;
    if (f->kind == RP_LOCAL && shown) break;
    if (shown) sb_puts(b, "<br>");
    if (f->kind != RP_LOCAL && x->rank >= 0) {
      const char *role = rp_occ_role(j, f, x);
      sb_printf(b, "rank %d%s%s%s: ", x->rank, role ? " (" : "", role ? role : "", role ? ")" : "");
    }
    esc(b, site);
    shown++;
  }
  sb_puts(b, "</td><td>");
  if (f->kind == RP_DEADLOCK) {
    const char *nl = strchr(f->message, '\n');
    sb_xmln(b, f->message, nl ? (size_t)(nl - f->message) : strlen(f->message));
    sb_puts(b, " <a href=\"#deadlock\">(the story and the graph below)</a>");
  } else {
    esc(b, f->message);
  }
  sb_puts(b, "<details><summary>sides and stacks</summary>");
  for (size_t k = 0; k < f->nocc && k < 64; k++) {
    const rp_occ *x = &j->occ[f->occ[k]];
    const rp_proc *p = &j->procs[x->proc];
    sb_printf(b, "<p><b>rank %d</b> (pid %lld on ", x->rank, p->pid);
    esc(b, p->host ? p->host : "?");
    sb_printf(b, ")%s", x->rec.count > 1 ? "" : "");
    if (x->rec.count > 1) sb_printf(b, ", %lld occurrences", x->rec.count);
    sb_puts(b, "</p>");
    if (f->messages_differ && f->kind == RP_LOCAL) {
      sb_puts(b, "<p>");
      esc(b, x->rec.message);
      sb_puts(b, "</p>");
    }
    sb_puts(b, "<pre>");
    for (size_t s = 0; s < x->rec.nstack; s++) {
      esc(b, x->rec.stack[s]);
      sb_putc(b, '\n');
    }
    if (!x->rec.nstack) sb_puts(b, "(no stack)");
    sb_puts(b, "</pre>");
  }
  if (f->nocc > 64) sb_printf(b, "<p class=\"note\">... and %zu more</p>", f->nocc - 64);
  sb_puts(b, "</details></td></tr>\n");
}

void rp_render_html(strbuf *b, const rp_job *j, const rp_opts *o) {
  size_t total = j->by_sev[0] + j->by_sev[1] + j->by_sev[2];
  sb_printf(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
               "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
               "<title>a2acheck report</title><style>%s</style></head><body><main>\n",
            css);
  sb_puts(b, "<h1>a2acheck report</h1>");
  strbuf h = {0};
  rp_headline(&h, j);
  sb_printf(b, "<div class=\"status s-%s\">", j->by_sev[SEV_ERROR] ? "error" : total ? "warning" : "ok");
  esc(b, sb_str(&h));
  sb_free(&h);
  sb_puts(b, "</div>");
  if (o && o->verdict && o->verdict->matched) {
    sb_puts(b, "<p><b>Failing:</b> ");
    esc(b, o->verdict->reason);
    sb_puts(b, "</p>");
  }
  sb_printf(b, "<p class=\"meta\">%zu process%s, %zu rank%s; logs in ", j->nprocs, j->nprocs == 1 ? "" : "es",
            j->nranks, j->nranks == 1 ? "" : "s");
  for (size_t i = 0; i < j->ndirs; i++) {
    if (i) sb_puts(b, ", ");
    sb_puts(b, "<code>");
    esc(b, j->dirs[i]);
    sb_puts(b, "</code>");
  }
  if (o && o->command) {
    sb_puts(b, "<br>command: <code>");
    esc(b, o->command);
    sb_puts(b, "</code>");
    if (o->command_status >= 0) sb_printf(b, " (exited %d)", o->command_status);
  }
  if (o && o->exit_status >= 0) sb_printf(b, "; a2acheck exited %d", o->exit_status);
  sb_puts(b, "</p>\n");

  sb_puts(b, "<h2>Findings</h2>");
  if (!total) {
    sb_puts(b, "<p>No findings.</p>");
  } else {
    sb_puts(b, "<table class=\"findings\"><thead><tr><th>#</th><th>Severity</th><th>Check</th><th>Ranks</th>"
               "<th>Where</th><th>Message</th></tr></thead><tbody>\n");
    for (size_t i = 0; i < j->nf; i++) finding_row(b, j, &j->f[i], i + 1);
    sb_puts(b, "</tbody></table>\n");
  }

  const rp_finding *dl = rp_job_deadlock(j);
  if (dl) {
    sb_printf(b, "<h2 id=\"deadlock\">%s</h2>", strcmp(dl->check, "group.hang") == 0 ? "Hang" : "Deadlock");
    sb_puts(b, "<pre class=\"story\">");
    esc(b, dl->message);
    sb_puts(b, "</pre>");
    rp_graph g;
    rp_graph_build(j, dl, &g);
    sb_puts(b, "<h3>Wait-for graph</h3>");
    if (g.nn) {
      sb_puts(b, "<div class=\"fig\">");
      graph_svg(b, &g);
      sb_puts(b, "</div><p class=\"legend note\">An arrow A &#8594; B: A waits for B");
      if (g.cycle) sb_puts(b, "; <b style=\"color:#c0392b\">red</b>: on a wait-for cycle");
      sb_puts(b, ". <span><i class=\"sw\" style=\"background:#fde2e1;border-color:#c0392b\"></i>blocked</span>"
                 "<span><i class=\"sw\" style=\"background:#fff4d6;border-color:#d68910\"></i>awaited</span>"
                 "<span><i class=\"sw\" style=\"background:#eceff1;border-color:#6c7a89\"></i>missing / exited</span>"
                 "<span><i class=\"sw\" style=\"background:#e3f5e8;border-color:#27ae60\"></i>not blocked</span>");
      sb_printf(b, " Drawn from %s.", !strcmp(g.source, "details.graph") ? "the verdict's graph"
                                     : !strcmp(g.source, "story") ? "the processes of the verdict and its story"
                                                                   : "the processes of the verdict (the story names no waits)");
      if (g.nn > 64) sb_printf(b, " Showing 64 of %zu nodes.", g.nn);
      sb_puts(b, "</p>");
    } else {
      sb_puts(b, "<p class=\"note\">The verdict carries no process list to draw (older log format); the story above says who waits for whom.</p>");
    }
    rp_graph_free(&g);
  }
  rp_timeline t;
  rp_timeline_build(j, dl, &t);
  if (t.nitems) {
    sb_printf(b, "<h2>Timeline</h2><p class=\"note\">%s</p><div class=\"fig\">",
              !strcmp(t.source, "findings")
                  ? "Findings (circles: red error, orange warning, blue info) and process ends (diamonds: "
                    "green exit, purple ended by a2acheck) per rank, over time from the first record. "
                    "The last operations of each rank appear here when the verdict carries them "
                    "(details.processes[].ops)."
                  : "The last operations of each rank before the verdict, oldest first (hover for details).");
    timeline_svg(b, &t);
    sb_puts(b, "</div>");
    if (strcmp(t.source, "findings") != 0)
      sb_puts(b, "<p class=\"legend note\"><span><i class=\"sw\" style=\"background:#e3f5e8;border-color:#27ae60\"></i>completed</span>"
                 "<span><i class=\"sw\" style=\"background:#fde2e1;border-color:#c0392b\"></i>waiting / in flight</span>"
                 "<span><i class=\"sw\" style=\"background:#eceff1;border-color:#6c7a89\"></i>cannot start</span>"
                 "<span><i class=\"sw\" style=\"background:#fff4d6;border-color:#d68910\"></i>in an open group</span></p>");
  }
  rp_timeline_free(&t);

  sb_puts(b, "<h2>Bus bandwidth by message size</h2><div class=\"fig\">");
  bw_svg(b, j);
  sb_puts(b, "</div>");
  if (j->ncomms) {
    sb_puts(b, "<table><thead><tr><th>Communicator</th><th>Ranks</th><th>Operation</th><th>Size</th><th>Ops (all ranks)</th>"
               "<th>busbw GB/s min / mean / max</th><th>Overlap mean (min..max)</th></tr></thead><tbody>");
    for (size_t i = 0; i < j->ncomms; i++) {
      const rp_comm *c = &j->comms[i];
      char ov[64] = "-";
      if (c->novl) snprintf(ov, sizeof ov, "%.0f%% (%.0f%%..%.0f%%)", 100 * c->ovl_sum / c->novl, 100 * c->ovl_min, 100 * c->ovl_max);
      for (size_t k = 0; k < c->nb; k++) {
        const rp_bucket *bk = &c->b[k];
        char lo[32], a[24] = "-", m[24] = "-", z[24] = "-";
        fmt_bytes(lo, sizeof lo, (double)bk->lo);
        if (bk->nbw) {
          rp_fmt_bw(a, sizeof a, bk->bw_min);
          rp_fmt_bw(m, sizeof m, bk->bw_sum / bk->nbw);
          rp_fmt_bw(z, sizeof z, bk->bw_max);
        }
        sb_puts(b, "<tr><td><code>");
        esc(b, rp_comm_short(c->hash));
        sb_printf(b, "</code></td><td class=\"num\">%zu/%lld</td><td>", c->nranks, c->size);
        esc(b, bk->op);
        sb_printf(b, "</td><td class=\"num\">%s+</td><td class=\"num\">%lld</td><td class=\"num\">%s / %s / %s</td><td>%s</td></tr>",
                  lo, bk->ops, a, m, z, ov);
      }
    }
    sb_puts(b, "</tbody></table>");
  }

  sb_puts(b, "<h2>Processes</h2><table><thead><tr><th>Rank</th><th>PID</th><th>Host</th><th>Ended</th><th>Findings</th><th>Log</th></tr></thead><tbody>");
  for (size_t i = 0; i < j->nprocs; i++) {
    const rp_proc *p = &j->procs[i];
    char end[200];
    rp_proc_ending(p, end, sizeof end);
    if (p->rank >= 0) sb_printf(b, "<tr><td class=\"num\">%d</td>", p->rank);
    else sb_puts(b, "<tr><td class=\"num\">?</td>");
    sb_printf(b, "<td class=\"num\">%lld</td><td>", p->pid);
    esc(b, p->host ? p->host : "?");
    sb_printf(b, "</td><td%s>", p->failed_now || p->fail_matched ? " class=\"sev-error\"" : "");
    esc(b, end);
    sb_printf(b, "</td><td class=\"num\">%zu</td><td><code>", p->nfindings);
    esc(b, p->path);
    sb_puts(b, "</code></td></tr>");
  }
  sb_puts(b, "</tbody></table>");

  if (j->ncc) {
    sb_puts(b, "<h2>Counts per check</h2><table><thead><tr><th>Check</th><th>Severity</th><th>Findings</th>"
               "<th>Occurrences</th><th>Suppressed</th><th>Ranks</th></tr></thead><tbody>");
    for (size_t i = 0; i < j->ncc; i++) {
      const rp_check_count *c = &j->cc[i];
      strbuf r = {0};
      fmt_ranks(&r, c->ranks, c->nranks);
      sb_puts(b, "<tr><td><code>");
      esc(b, c->check);
      sb_printf(b, "</code></td><td class=\"sev sev-%s\">%s</td><td class=\"num\">%zu</td><td class=\"num\">%lld</td>"
                   "<td class=\"num\">%lld</td><td>%s</td></tr>",
                sev_class(c->severity), a2a_severity_name(c->severity), c->findings, c->occurrences,
                c->suppressed, c->nranks ? sb_str(&r) : "-");
      sb_free(&r);
    }
    sb_puts(b, "</tbody></table>");
  }
  if (j->bad_lines) {
    sb_printf(b, "<h2>Ignored log lines</h2><p>%zu malformed line%s:</p><pre>", j->bad_lines, j->bad_lines == 1 ? "" : "s");
    for (size_t i = 0; i < j->nwarnings && i < 100; i++) {
      esc(b, j->warnings[i]);
      sb_putc(b, '\n');
    }
    sb_puts(b, "</pre>");
  }
  sb_printf(b, "<p class=\"note\">a2acheck %s. Every check is described in %s.</p>\n</main></body></html>\n",
#ifdef A2ACHECK_VERSION
            A2ACHECK_VERSION,
#else
            "",
#endif
            A2A_CHECKS_DOC);
}
