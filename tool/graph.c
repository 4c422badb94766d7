/* graph.c - wait-for graph and timeline of a deadlock verdict (graph.h). */
#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const rp_finding *rp_job_deadlock(const rp_job *j) {
  for (size_t i = 0; i < j->nf; i++)
    if (j->f[i].kind == RP_DEADLOCK) return &j->f[i];
  return NULL;
}

const rp_occ *rp_deadlock_source(const rp_job *j, const rp_finding *f) {
  if (!f || !f->nocc) return NULL;
  for (size_t k = 0; k < f->nocc; k++)
    if (json_get_obj(j->occ[f->occ[k]].rec.details, "graph")) return &j->occ[f->occ[k]];
  for (size_t k = 0; k < f->nocc; k++)
    if (json_get_arr(j->occ[f->occ[k]].rec.details, "processes")) return &j->occ[f->occ[k]];
  return &j->occ[f->occ[0]];
}

/* ---- graph ---- */

static int add_node(rp_graph *g, size_t *cap) {
  xgrow(&g->n, cap, g->nn, sizeof *g->n);
  rp_gnode *n = &g->n[g->nn];
  memset(n, 0, sizeof *n);
  n->rank = -1;
  n->pid = -1;
  return (int)g->nn++;
}

static void add_edge(rp_graph *g, size_t *cap, int from, int to, const char *label, bool cycle) {
  for (size_t i = 0; i < g->ne; i++)
    if (g->e[i].from == from && g->e[i].to == to) return;
  xgrow(&g->e, cap, g->ne, sizeof *g->e);
  rp_gedge *e = &g->e[g->ne++];
  memset(e, 0, sizeof *e);
  e->from = from;
  e->to = to;
  snprintf(e->label, sizeof e->label, "%s", label ? label : "");
  e->cycle = cycle;
}

static void id_text(const jval *v, char *out, size_t cap) {
  out[0] = 0;
  if (!v) return;
  if (v->kind == J_STR) snprintf(out, cap, "%s", v->u.str.s);
  else if (v->kind == J_NUM && v->u.num.is_int) snprintf(out, cap, "%lld", v->u.num.i);
}

static int node_by_id(const rp_graph *g, const char *id) {
  for (size_t i = 0; i < g->nn; i++)
    if (strcmp(g->n[i].id, id) == 0) return (int)i;
  return -1;
}

static int node_by_pid(const rp_graph *g, long long pid) {
  for (size_t i = 0; i < g->nn; i++)
    if (g->n[i].pid == pid) return (int)i;
  return -1;
}

static bool from_graph(rp_graph *g, const jval *gr) {
  const jval *nodes = json_get_arr(gr, "nodes"), *edges = json_get_arr(gr, "edges");
  if (!nodes) return false;
  size_t capn = 0, cape = 0;
  for (size_t i = 0; i < nodes->u.arr.n && i < 4096; i++) {
    const jval *n = nodes->u.arr.v[i];
    char id[64];
    id_text(json_get(n, "id"), id, sizeof id);
    if (!id[0] || node_by_id(g, id) >= 0) continue;
    int k = add_node(g, &capn);
    rp_gnode *x = &g->n[k];
    snprintf(x->id, sizeof x->id, "%s", id);
    long long v;
    if (json_get_int(n, "rank", &v)) x->rank = (int)v;
    if (json_get_int(n, "pid", &v)) x->pid = v;
    const char *s = json_get_str(n, "label");
    if (s) snprintf(x->label, sizeof x->label, "%s", s);
    else if (x->rank >= 0) snprintf(x->label, sizeof x->label, "rank %d", x->rank);
    else snprintf(x->label, sizeof x->label, "%s", id);
    s = json_get_str(n, "state");
    snprintf(x->state, sizeof x->state, "%s", s ? s : "");
  }
  for (size_t i = 0; edges && i < edges->u.arr.n && i < 16384; i++) {
    const jval *e = edges->u.arr.v[i];
    char a[64], b[64];
    id_text(json_get(e, "from"), a, sizeof a);
    id_text(json_get(e, "to"), b, sizeof b);
    int fa = node_by_id(g, a), fb = node_by_id(g, b);
    if (fa < 0 || fb < 0) continue;
    bool cyc = false;
    json_get_bool(e, "cycle", &cyc);
    add_edge(g, &cape, fa, fb, json_get_str(e, "label"), cyc);
  }
  return g->nn > 0;
}

/* The pid of (comm, rank) per details.processes[].comms. */
static long long pid_of_comm_rank(const jval *procs, const char *comm, size_t clen, long long rank) {
  for (size_t i = 0; i < procs->u.arr.n; i++) {
    const jval *p = procs->u.arr.v[i];
    const jval *cs = json_get_arr(p, "comms");
    for (size_t k = 0; cs && k < cs->u.arr.n; k++) {
      const char *c = json_get_str(cs->u.arr.v[k], "comm");
      long long r, pid;
      if (c && strlen(c) == clen && strncmp(c, comm, clen) == 0 &&
          json_get_int(cs->u.arr.v[k], "rank", &r) && r == rank && json_get_int(p, "pid", &pid))
        return pid;
    }
  }
  return -1;
}

static void edges_from_story(rp_graph *g, const jval *procs, const char *story) {
  size_t cape = g->ne;
  for (const char *line = story; line && *line;) {
    const char *nl = strchr(line, '\n');
    size_t n = nl ? (size_t)(nl - line) : strlen(line);
    char buf[8192];
    if (n >= sizeof buf) n = sizeof buf - 1;
    memcpy(buf, line, n);
    buf[n] = 0;
    line = nl ? nl + 1 : NULL;
    const char *s = buf;
    while (*s == ' ') s++;
    if (strncmp(s, "global rank ", 12) != 0) continue;
    const char *pp = strstr(s, "(pid ");
    if (!pp) continue;
    long long me = strtoll(pp + 5, NULL, 10);
    int from = node_by_pid(g, me);
    if (from < 0) continue;
    if (strstr(s, " is blocked ")) snprintf(g->n[from].state, sizeof g->n[from].state, "blocked");
    const char *rest = pp + 5;
    for (const char *q = rest; (q = strstr(q, "(pid ")); q += 5) {
      long long other = strtoll(q + 5, NULL, 10);
      int to = node_by_pid(g, other);
      if (to >= 0 && to != from) add_edge(g, &cape, from, to, "waits for", false);
    }
    for (const char *q = rest; (q = strstr(q, "[comm ")); q += 6) {
      const char *h = q + 6, *he = h;
      while ((*he >= '0' && *he <= '9') || (*he >= 'a' && *he <= 'f')) he++;
      if (strncmp(he, " rank ", 6) != 0) continue;
      long long r = strtoll(he + 6, NULL, 10);
      long long other = pid_of_comm_rank(procs, h, (size_t)(he - h), r);
      int to = other >= 0 ? node_by_pid(g, other) : -1;
      if (to >= 0 && to != from) add_edge(g, &cape, from, to, "waits for", false);
    }
  }
}

static void from_processes(rp_graph *g, const jval *d, const char *story) {
  const jval *procs = json_get_arr(d, "processes");
  long long missing = -1;
  json_get_int(d, "missing_pid", &missing);
  size_t capn = 0;
  for (size_t i = 0; i < procs->u.arr.n && i < 4096; i++) {
    const jval *p = procs->u.arr.v[i];
    long long pid = -1, gr = -1;
    json_get_int(p, "pid", &pid);
    json_get_int(p, "global_rank", &gr);
    if (pid >= 0 && node_by_pid(g, pid) >= 0) continue;
    bool alive = true;
    json_get_bool(p, "alive", &alive);
    int k = add_node(g, &capn);
    rp_gnode *x = &g->n[k];
    x->pid = pid;
    x->rank = (int)gr;
    snprintf(x->id, sizeof x->id, "p%lld", pid);
    const char *host = json_get_str(p, "host");
    if (gr >= 0) snprintf(x->label, sizeof x->label, "rank %lld", gr);
    else snprintf(x->label, sizeof x->label, "pid %lld", pid);
    size_t l = strlen(x->label);
    snprintf(x->label + l, sizeof x->label - l, "\npid %lld%s%s", pid, host ? " on " : "",
             host ? host : "");
    snprintf(x->state, sizeof x->state, "%s",
             pid == missing ? (alive ? "missing" : "exited") : alive ? "ok" : "exited");
  }
  g->source = "processes";
  if (story && *story) {
    edges_from_story(g, procs, story);
    if (g->ne) g->source = "story";
  }
  /* The processes others wait for but that are not blocked themselves. */
  for (size_t i = 0; i < g->ne; i++) {
    rp_gnode *t = &g->n[g->e[i].to];
    if (strcmp(t->state, "ok") == 0) snprintf(t->state, sizeof t->state, "awaited");
  }
}

/* Mark edges u->v that lie on a cycle (v reaches u): one breadth-first
 * search over an adjacency array per distinct edge target,
 * O(nodes * (nodes + edges)). */
static void mark_cycles(rp_graph *g) {
  size_t nn = g->nn, ne = g->ne;
  if (!nn || !ne || nn > 4096) return;
  size_t *first = xcalloc(nn + 1, sizeof *first);
  int *adj = xcalloc(ne, sizeof *adj);
  for (size_t i = 0; i < ne; i++) first[g->e[i].from + 1]++;
  for (size_t i = 0; i < nn; i++) first[i + 1] += first[i];
  size_t *fill = xcalloc(nn, sizeof *fill);
  for (size_t i = 0; i < ne; i++) {
    int u = g->e[i].from;
    adj[first[u] + fill[u]++] = g->e[i].to;
  }
  char *seen = xmalloc(nn), *done = xcalloc(nn, 1);
  int *queue = xmalloc(nn * sizeof *queue);
  for (size_t i = 0; i < ne; i++) {
    int v = g->e[i].to;
    if (done[v]) continue;
    done[v] = 1;
    memset(seen, 0, nn);
    size_t head = 0, tail = 0;
    queue[tail++] = v;
    seen[v] = 1;
    while (head < tail) {
      int x = queue[head++];
      for (size_t k = first[x]; k < first[x + 1]; k++)
        if (!seen[adj[k]]) {
          seen[adj[k]] = 1;
          queue[tail++] = adj[k];
        }
    }
    for (size_t k = 0; k < ne; k++)
      if (g->e[k].to == v && seen[g->e[k].from]) g->e[k].cycle = true;
  }
  for (size_t i = 0; i < ne; i++)
    if (g->e[i].cycle) g->cycle = true;
  free(first);
  free(adj);
  free(fill);
  free(seen);
  free(done);
  free(queue);
}

void rp_graph_build(const rp_job *j, const rp_finding *f, rp_graph *g) {
  memset(g, 0, sizeof *g);
  const rp_occ *o = rp_deadlock_source(j, f);
  if (!o) return;
  const jval *d = o->rec.details;
  const jval *gr = json_get_obj(d, "graph");
  if (gr && from_graph(g, gr)) {
    g->source = "details.graph";
  } else {
    rp_graph_free(g);
    if (json_get_arr(d, "processes")) from_processes(g, d, o->rec.message);
  }
  mark_cycles(g);
  bool c;
  if (json_get_bool(d, "cycle", &c) && c) g->cycle = true;
}

void rp_graph_free(rp_graph *g) {
  free(g->n);
  free(g->e);
  memset(g, 0, sizeof *g);
}

/* ---- timeline ---- */

static void add_item(rp_timeline *t, size_t *cap, int row, double x, const char *label,
                     const char *state, const char *tip, int sev) {
  xgrow(&t->items, cap, t->nitems, sizeof *t->items);
  rp_titem *it = &t->items[t->nitems++];
  memset(it, 0, sizeof *it);
  it->row = row;
  it->x = x;
  snprintf(it->label, sizeof it->label, "%s", label);
  snprintf(it->state, sizeof it->state, "%s", state ? state : "");
  snprintf(it->tip, sizeof it->tip, "%s", tip ? tip : "");
  it->severity = sev;
}

static int cmp_row_rank(const void *a, const void *b) {
  const rp_trow *x = a, *y = b;
  int rx = x->rank < 0 ? 0x7fffffff : x->rank, ry = y->rank < 0 ? 0x7fffffff : y->rank;
  return rx < ry ? -1 : rx > ry;
}

static bool from_ops(rp_timeline *t, const jval *procs) {
  size_t capi = 0;
  bool any = false;
  for (size_t i = 0; i < procs->u.arr.n; i++)
    if (json_get_arr(procs->u.arr.v[i], "ops")) any = true;
  if (!any) return false;
  /* rows sorted by global rank; items keep their row's index */
  size_t n = procs->u.arr.n < 4096 ? procs->u.arr.n : 4096;
  t->rows = xcalloc(n, sizeof *t->rows);
  int *order = xcalloc(n, sizeof *order);
  for (size_t i = 0; i < n; i++) {
    long long gr = -1, pid = -1;
    json_get_int(procs->u.arr.v[i], "global_rank", &gr);
    json_get_int(procs->u.arr.v[i], "pid", &pid);
    t->rows[i].rank = (int)gr;
    if (gr >= 0) snprintf(t->rows[i].label, sizeof t->rows[i].label, "rank %lld", gr);
    else snprintf(t->rows[i].label, sizeof t->rows[i].label, "pid %lld", pid);
  }
  t->nrows = n;
  /* Keep the original index to map items: sort a copy of indexes. */
  for (size_t i = 0; i < n; i++) order[i] = (int)i;
  for (size_t a = 1; a < n; a++) /* insertion sort by rank: n is small */
    for (size_t b = a; b > 0 && cmp_row_rank(&t->rows[order[b]], &t->rows[order[b - 1]]) < 0; b--) {
      int tmp = order[b];
      order[b] = order[b - 1];
      order[b - 1] = tmp;
    }
  rp_trow *sorted = xcalloc(n, sizeof *sorted);
  int *rowof = xcalloc(n, sizeof *rowof);
  for (size_t i = 0; i < n; i++) {
    sorted[i] = t->rows[order[i]];
    rowof[order[i]] = (int)i;
  }
  free(t->rows);
  t->rows = sorted;
  for (size_t i = 0; i < n; i++) {
    const jval *ops = json_get_arr(procs->u.arr.v[i], "ops");
    size_t no = ops ? ops->u.arr.n : 0;
    if (no > 256) no = 256;
    size_t first = ops && ops->u.arr.n > no ? ops->u.arr.n - no : 0;
    for (size_t k = first; ops && k < ops->u.arr.n; k++) {
      const jval *op = ops->u.arr.v[k];
      const char *name = json_get_str(op, "op");
      const char *state = json_get_str(op, "state");
      const char *site = json_get_str(op, "site");
      const char *dtype = json_get_str(op, "dtype");
      const char *comm = json_get_str(op, "comm");
      long long peer = -1, count = -1, bytes = -1, index = -1;
      bool has_peer = json_get_int(op, "peer", &peer);
      json_get_int(op, "count", &count);
      json_get_int(op, "bytes", &bytes);
      json_get_int(op, "index", &index);
      char label[96];
      const char *shown = name ? name : "op";
      if (!strncmp(shown, "nccl", 4) && shown[4]) shown += 4; /* ncclAllReduce -> AllReduce */
      size_t ll = (size_t)snprintf(label, sizeof label, "%s", shown);
      if (has_peer && ll < sizeof label) ll += (size_t)snprintf(label + ll, sizeof label - ll, " %s%lld",
                                                               json_get_str(op, "kind") && !strcmp(json_get_str(op, "kind"), "recv") ? "<-" : "->", peer);
      if (index >= 0 && ll < sizeof label) snprintf(label + ll, sizeof label - ll, " #%lld", index);
      char tip[400];
      size_t tl = 0;
#define TIP(...) \
  if (tl < sizeof tip) tl += (size_t)snprintf(tip + tl, sizeof tip - tl, __VA_ARGS__)
      TIP("%s", name ? name : "op");
      if (index >= 0) TIP(" #%lld", index);
      if (has_peer) TIP(" peer %lld", peer);
      if (comm) TIP(" on comm %s", comm);
      if (count >= 0) TIP(", count %lld", count);
      if (bytes >= 0) TIP(" (%lld B)", bytes);
      if (dtype) TIP(" %s", dtype);
      if (state) TIP(": %s", state);
      if (site) TIP(" at %s", site);
#undef TIP
      /* boxes in posting order, the last at 0; the age goes to the tip */
      double x = (double)k - (double)(ops->u.arr.n - 1);
      double age;
      if (json_get_num(op, "age_ms", &age) && tl < sizeof tip)
        snprintf(tip + tl, sizeof tip - tl, " (%.0f ms before the verdict)", age);
      add_item(t, &capi, rowof[i], x, label, state, tip, -1);
    }
  }
  free(order);
  free(rowof);
  t->timed = false;
  t->source = "details.processes[].ops";
  return true;
}

static void from_findings(rp_timeline *t, const rp_job *j) {
  size_t capi = 0;
  t->rows = xcalloc(j->nprocs ? j->nprocs : 1, sizeof *t->rows);
  int *rowof = xcalloc(j->nprocs ? j->nprocs : 1, sizeof *rowof);
  /* rows: processes that logged something, by rank */
  size_t n = 0;
  for (size_t i = 0; i < j->nprocs; i++) {
    const rp_proc *p = &j->procs[i];
    rowof[i] = -1;
    if (!p->nfindings && !p->has_summary) continue;
    if (!p->nfindings && p->rank < 0) continue; /* launchers: nothing to show */
    t->rows[n].rank = p->rank;
    rp_proc_label(p, t->rows[n].label, sizeof t->rows[n].label);
    rowof[i] = (int)i; /* temporarily the process index */
    n++;
  }
  t->nrows = n;
  qsort(t->rows, n, sizeof *t->rows, cmp_row_rank);
  /* map process -> row: by rank, then label */
  for (size_t i = 0; i < j->nprocs; i++) {
    if (rowof[i] < 0) continue;
    char lab[64];
    rp_proc_label(&j->procs[i], lab, sizeof lab);
    for (size_t r = 0; r < n; r++)
      if (strcmp(t->rows[r].label, lab) == 0) {
        rowof[i] = (int)r;
        break;
      }
  }
  double t0 = -1;
  for (size_t i = 0; i < j->nocc; i++)
    if (j->occ[i].rec.time_ms >= 0 && (t0 < 0 || j->occ[i].rec.time_ms < t0)) t0 = j->occ[i].rec.time_ms;
  for (size_t i = 0; i < j->nprocs; i++)
    if (j->procs[i].summary_ms >= 0 && (t0 < 0 || j->procs[i].summary_ms < t0)) t0 = j->procs[i].summary_ms;
  for (size_t i = 0; i < j->nocc; i++) {
    const rp_occ *o = &j->occ[i];
    if (rowof[o->proc] < 0 || o->rec.time_ms < 0 || strcmp(o->rec.check, "perf.summary") == 0)
      continue;
    char tip[400];
    snprintf(tip, sizeof tip, "%s %s: %.300s", a2a_severity_name(o->rec.severity), o->rec.check,
             o->rec.message);
    add_item(t, &capi, rowof[o->proc], o->rec.time_ms - t0, o->rec.check,
             a2a_severity_name(o->rec.severity), tip, o->rec.severity);
  }
  for (size_t i = 0; i < j->nprocs; i++) {
    const rp_proc *p = &j->procs[i];
    if (rowof[i] < 0 || p->summary_ms < 0) continue;
    char end[160];
    rp_proc_ending(p, end, sizeof end);
    add_item(t, &capi, rowof[i], p->summary_ms - t0, p->failed_now ? "ended" : "exit",
             p->failed_now || p->fail_matched ? "failed" : "exit", end, -1);
  }
  free(rowof);
  t->timed = true;
  t->source = "findings";
}

void rp_timeline_build(const rp_job *j, const rp_finding *f, rp_timeline *t) {
  memset(t, 0, sizeof *t);
  const rp_occ *o = rp_deadlock_source(j, f);
  const jval *procs = o ? json_get_arr(o->rec.details, "processes") : NULL;
  if (procs && from_ops(t, procs)) return;
  rp_timeline_free(t);
  from_findings(t, j);
}

void rp_timeline_free(rp_timeline *t) {
  free(t->rows);
  free(t->items);
  memset(t, 0, sizeof *t);
}
