/* job.c - reading a job's logs and merging them (job.h). */
#include "job.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "a2a_checks.h"

#define MAX_WARNINGS 100

void rp_job_init(rp_job *j) { memset(j, 0, sizeof *j); }

void rp_job_free(rp_job *j) {
  for (size_t i = 0; i < j->nprocs; i++) {
    free(j->procs[i].path);
    free(j->procs[i].host);
  }
  for (size_t i = 0; i < j->nf; i++) {
    free(j->f[i].occ);
    free(j->f[i].ranks);
    free(j->f[i].key);
  }
  for (size_t i = 0; i < j->ncomms; i++) {
    free(j->comms[i].ranks);
    free(j->comms[i].b);
  }
  for (size_t i = 0; i < j->ncc; i++) free(j->cc[i].ranks);
  for (size_t i = 0; i < j->nwarnings; i++) free(j->warnings[i]);
  for (size_t i = 0; i < j->ndirs; i++) free(j->dirs[i]);
  free(j->dirs);
  free(j->procs);
  free(j->occ);
  free(j->f);
  free(j->comms);
  free(j->cc);
  free(j->warnings);
  arena_free(&j->mem);
  memset(j, 0, sizeof *j);
}

static void warn(rp_job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(rp_job *j, const char *fmt, ...) {
  if (j->nwarnings >= MAX_WARNINGS) {
    j->warnings_dropped++;
    return;
  }
  strbuf b = {0};
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(&b, fmt, ap);
  va_end(ap);
  size_t cap = j->capwarnings;
  xgrow(&j->warnings, &cap, j->nwarnings, sizeof *j->warnings);
  j->capwarnings = cap;
  j->warnings[j->nwarnings++] = b.s ? b.s : xstrdup("");
}

bool rp_check_is_deadlock(const char *check) {
  a2a_check_id id = a2a_check_by_name(check);
  return id != A2A_CK_NONE && a2a_check_is_deadlock(id);
}

static bool is_xrank(const char *check) {
  a2a_check_id id = a2a_check_by_name(check);
  return id != A2A_CK_NONE && (a2a_check_table[id].owners & A2A_OWN_XRANK);
}

static int check_order(const char *check) {
  a2a_check_id id = a2a_check_by_name(check);
  return id == A2A_CK_NONE ? 1000 : (int)id;
}

/* ---- processes and files ---- */

int rp_job_add_proc(rp_job *j, const char *path, const char *host, long long pid, int rank) {
  size_t cap = j->capprocs;
  xgrow(&j->procs, &cap, j->nprocs, sizeof *j->procs);
  j->capprocs = cap;
  rp_proc *p = &j->procs[j->nprocs];
  memset(p, 0, sizeof *p);
  p->path = xstrdup(path ? path : "");
  p->host = host ? xstrdup(host) : NULL;
  p->pid = pid;
  p->rank = rank;
  p->exit_status = -1;
  p->first_ms = p->last_ms = p->summary_ms = -1;
  return (int)j->nprocs++;
}

/* a2acheck.<host>.<pid>.rank<R|unknown>.jsonl -> host, pid, rank (the host
 * may contain dots: parse from the right). */
static bool parse_log_name(const char *base, char *host, size_t hcap, long long *pid, int *rank) {
  size_t n = strlen(base);
  if (!str_starts(base, "a2acheck.") || !str_ends(base, ".jsonl")) return false;
  char tmp[512];
  if (n >= sizeof tmp) return false;
  memcpy(tmp, base, n + 1);
  tmp[n - 6] = 0; /* strip .jsonl */
  char *r = strrchr(tmp, '.');
  if (!r || strncmp(r, ".rank", 5) != 0) return false;
  if (strcmp(r + 5, "unknown") == 0) {
    *rank = -1;
  } else {
    char *e;
    long v = strtol(r + 5, &e, 10);
    if (*e || e == r + 5 || v < 0) return false;
    *rank = (int)v;
  }
  *r = 0;
  char *p = strrchr(tmp, '.');
  if (!p) return false;
  char *e;
  long long v = strtoll(p + 1, &e, 10);
  if (*e || e == p + 1 || v < 0) return false;
  *pid = v;
  *p = 0;
  const char *h = tmp + strlen("a2acheck.");
  if (!*h) return false;
  snprintf(host, hcap, "%s", h);
  return true;
}

int rp_job_add_file(rp_job *j, const char *path) {
  FILE *fp = fopen(path, "rb");
  if (!fp) {
    warn(j, "%s: cannot read: %s", path, strerror(errno));
    return -1;
  }
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  char host[512];
  long long pid = -1;
  int rank = -1;
  bool named = parse_log_name(base, host, sizeof host, &pid, &rank);
  int pi = rp_job_add_proc(j, path, named ? host : NULL, named ? pid : -1, named ? rank : -1);

  /* Bounded line reader: a line longer than A2A_RECORD_MAX_LINE is skipped
   * up to its newline (and counted), never held whole. */
  size_t cap = 65536, len = 0, lineno = 0;
  char *buf = xmalloc(cap);
  bool skipping = false;
  char chunk[65536];
  size_t got;
  while ((got = fread(chunk, 1, sizeof chunk, fp)) > 0) {
    size_t off = 0;
    while (off < got) {
      char *nl = memchr(chunk + off, '\n', got - off);
      size_t take = nl ? (size_t)(nl - (chunk + off)) : got - off;
      if (!skipping) {
        if (len + take > A2A_RECORD_MAX_LINE) {
          skipping = true;
        } else {
          if (len + take + 1 > cap) {
            while (len + take + 1 > cap) cap *= 2;
            buf = xrealloc(buf, cap);
          }
          memcpy(buf + len, chunk + off, take);
          len += take;
        }
      }
      off += take;
      if (nl) {
        off++;
        lineno++;
        if (skipping) {
          j->procs[pi].nlines++;
          j->procs[pi].nbad++;
          j->bad_lines++;
          warn(j, "%s:%zu: line longer than %zu bytes, ignored", path, lineno,
               A2A_RECORD_MAX_LINE);
        } else {
          rp_job_add_line(j, pi, buf, len, lineno);
        }
        len = 0;
        skipping = false;
      }
    }
  }
  bool rerr = ferror(fp);
  fclose(fp);
  if (skipping) {
    j->procs[pi].nlines++;
    j->procs[pi].nbad++;
    j->bad_lines++;
    warn(j, "%s:%zu: line longer than %zu bytes, ignored", path, lineno + 1, A2A_RECORD_MAX_LINE);
  } else if (len) {
    /* A last line without a newline: the runtime writes whole lines, so
     * this is a process killed mid-write or a foreign file; try it. */
    rp_job_add_line(j, pi, buf, len, lineno + 1);
  }
  free(buf);
  if (rerr) warn(j, "%s: read error", path);
  return 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

size_t rp_job_add_dir(rp_job *j, const char *dir, strbuf *err) {
  size_t cap = j->ndirs;
  j->dirs = xrealloc(j->dirs, (cap + 1) * sizeof *j->dirs);
  j->dirs[j->ndirs++] = xstrdup(dir);
  DIR *d = opendir(dir);
  if (!d) {
    if (err) sb_printf(err, "cannot open %s: %s\n", dir, strerror(errno));
    return 0;
  }
  char **names = NULL;
  size_t n = 0, capn = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!str_starts(e->d_name, "a2acheck.") || !str_ends(e->d_name, ".jsonl")) continue;
    xgrow(&names, &capn, n, sizeof *names);
    names[n++] = xasprintf("%s/%s", dir, e->d_name);
  }
  closedir(d);
  if (n > 1) qsort(names, n, sizeof *names, cmp_str);
  size_t added = 0;
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode) && rp_job_add_file(j, names[i]) == 0)
      added++;
    free(names[i]);
  }
  free(names);
  return added;
}

/* ---- lines ---- */

static void take_summary(rp_proc *p, const a2a_record *r) {
  const jval *d = r->details;
  p->has_summary = true;
  p->summary_ms = r->time_ms;
  long long v;
  bool b;
  if (json_get_int(d, "exit_status", &v)) p->exit_status = v;
  if (json_get_bool(d, "failed_now", &b)) p->failed_now = b;
  if (json_get_bool(d, "fail_matched", &b)) p->fail_matched = b;
  if (json_get_bool(d, "nccl_calls_seen", &b)) p->nccl_seen = b;
  if (json_get_int(d, "dropped", &v)) p->dropped = v;
  p->fail_on = json_get_str(d, "fail_on");
  const jval *f = json_get_obj(d, "findings");
  if (json_get_int(f, "error", &v)) p->sum_by_sev[SEV_ERROR] = v;
  if (json_get_int(f, "warning", &v)) p->sum_by_sev[SEV_WARNING] = v;
  if (json_get_int(f, "info", &v)) p->sum_by_sev[SEV_INFO] = v;
  p->summary_checks = json_get_arr(d, "checks");
}

void rp_job_add_line(rp_job *j, int pi, const char *line, size_t len, size_t lineno) {
  rp_proc *p = &j->procs[pi];
  arena_mark m = arena_save(&j->mem);
  a2a_record r;
  char why[200];
  a2a_record_status st = a2a_record_parse(line, len, &j->mem, &r, why, sizeof why);
  if (st == A2A_REC_BLANK) return;
  p->nlines++;
  if (st != A2A_REC_OK) {
    arena_restore(&j->mem, m);
    p->nbad++;
    j->bad_lines++;
    warn(j, "%s:%zu: ignored: %s", p->path, lineno, why);
    return;
  }
  if (!p->host && r.host) p->host = xstrdup(r.host);
  if (p->pid < 0 && r.pid >= 0) p->pid = r.pid;
  if (r.has_rank && p->rank < 0) p->rank = r.rank;
  if (r.time_ms >= 0) {
    if (p->first_ms < 0 || r.time_ms < p->first_ms) p->first_ms = r.time_ms;
    if (r.time_ms > p->last_ms) p->last_ms = r.time_ms;
  }
  if (strcmp(r.check, "a2acheck.summary") == 0) {
    take_summary(p, &r);
    return;
  }
  size_t cap = j->capocc;
  xgrow(&j->occ, &cap, j->nocc, sizeof *j->occ);
  j->capocc = cap;
  rp_occ *o = &j->occ[j->nocc++];
  o->proc = pi;
  o->rank = -1;
  o->rec = r;
  if (strcmp(r.check, "perf.summary") != 0) p->nfindings++;
  if (rp_check_is_deadlock(r.check)) {
    p->deadlock = true;
    p->verdict = o->rec.check;
  }
}

/* ---- merging ---- */

static bool is_perf_summary(const rp_occ *o) { return strcmp(o->rec.check, "perf.summary") == 0; }

static int cmp_ll(const void *a, const void *b) {
  long long x = *(const long long *)a, y = *(const long long *)b;
  return x < y ? -1 : x > y;
}

static char *merge_key(const rp_occ *o, int *kind) {
  const a2a_record *r = &o->rec;
  strbuf k = {0};
  sb_printf(&k, "%s\x1f", r->check);
  if (rp_check_is_deadlock(r->check)) {
    *kind = RP_DEADLOCK;
    const jval *ps = json_get_arr(r->details, "processes");
    size_t n = ps ? ps->u.arr.n : 0;
    long long *pids = xcalloc(n ? n : 1, sizeof *pids);
    size_t np = 0;
    for (size_t i = 0; i < n; i++) {
      long long v;
      if (json_get_int(ps->u.arr.v[i], "pid", &v)) pids[np++] = v;
    }
    qsort(pids, np, sizeof *pids, cmp_ll);
    for (size_t i = 0; i < np; i++) sb_printf(&k, "%lld,", pids[i]);
    free(pids);
    return k.s;
  }
  sb_printf(&k, "%s\x1f", r->comm_hash ? r->comm_hash : "");
  if (is_xrank(r->check)) {
    *kind = RP_CROSS;
    sb_puts(&k, r->message);
  } else {
    *kind = RP_LOCAL;
    if (r->nstack) sb_printf(&k, "@%s", r->stack[0]);
    else sb_printf(&k, "=%s", r->message);
  }
  return k.s;
}

/* A hash map from key to finding index (open addressing). */
typedef struct kmap {
  size_t cap;
  int *slot;
} kmap;

static unsigned long long hash_str(const char *s) {
  unsigned long long h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static int kmap_find(rp_job *j, kmap *m, const char *key, bool *fresh) {
  if (m->cap == 0 || j->nf * 2 >= m->cap) {
    size_t nc = m->cap ? m->cap * 2 : 64;
    int *ns = xmalloc(nc * sizeof *ns);
    for (size_t i = 0; i < nc; i++) ns[i] = -1;
    for (size_t i = 0; i < j->nf; i++) {
      size_t h = (size_t)(hash_str(j->f[i].key) & (nc - 1));
      while (ns[h] >= 0) h = (h + 1) & (nc - 1);
      ns[h] = (int)i;
    }
    free(m->slot);
    m->slot = ns;
    m->cap = nc;
  }
  size_t h = (size_t)(hash_str(key) & (m->cap - 1));
  while (m->slot[h] >= 0) {
    if (strcmp(j->f[m->slot[h]].key, key) == 0) {
      *fresh = false;
      return m->slot[h];
    }
    h = (h + 1) & (m->cap - 1);
  }
  *fresh = true;
  m->slot[h] = (int)j->nf;
  return (int)j->nf;
}

static const rp_job *g_sort_job; /* qsort has no context argument in C11 */

static int occ_before(const rp_job *j, int a, int b) {
  const rp_occ *x = &j->occ[a], *y = &j->occ[b];
  int rx = x->rank < 0 ? 0x7fffffff : x->rank, ry = y->rank < 0 ? 0x7fffffff : y->rank;
  if (rx != ry) return rx < ry ? -1 : 1;
  long long px = j->procs[x->proc].pid, py = j->procs[y->proc].pid;
  if (px != py) return px < py ? -1 : 1;
  return a < b ? -1 : a > b;
}

static int cmp_occ_idx(const void *a, const void *b) {
  return occ_before(g_sort_job, *(const int *)a, *(const int *)b);
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return x < y ? -1 : x > y;
}

static size_t uniq_ints(int *v, size_t n) {
  if (n > 1) qsort(v, n, sizeof *v, cmp_int);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (k == 0 || v[k - 1] != v[i]) v[k++] = v[i];
  return k;
}

static int cmp_finding(const void *a, const void *b) {
  const rp_finding *x = a, *y = b;
  if (x->severity != y->severity) return y->severity - x->severity;
  bool dx = x->kind == RP_DEADLOCK, dy = y->kind == RP_DEADLOCK;
  if (dx != dy) return dx ? -1 : 1;
  if (x->order != y->order) return x->order - y->order;
  int c = strcmp(x->check, y->check);
  if (c) return c;
  int rx = x->nranks ? x->ranks[0] : 0x7fffffff, ry = y->nranks ? y->ranks[0] : 0x7fffffff;
  if (rx != ry) return rx < ry ? -1 : 1;
  return strcmp(x->message, y->message);
}

static rp_check_count *count_for(rp_job *j, const char *check) {
  for (size_t i = 0; i < j->ncc; i++)
    if (strcmp(j->cc[i].check, check) == 0) return &j->cc[i];
  size_t cap = j->capcc;
  xgrow(&j->cc, &cap, j->ncc, sizeof *j->cc);
  j->capcc = cap;
  rp_check_count *c = &j->cc[j->ncc++];
  memset(c, 0, sizeof *c);
  c->check = check;
  c->severity = -1;
  return c;
}

static int cmp_cc(const void *a, const void *b) {
  const rp_check_count *x = a, *y = b;
  if (x->severity != y->severity) return y->severity - x->severity;
  int ox = check_order(x->check), oy = check_order(y->check);
  if (ox != oy) return ox - oy;
  return strcmp(x->check, y->check);
}

static rp_comm *comm_for(rp_job *j, const a2a_record *r) {
  const char *h = r->comm_hash ? r->comm_hash : "";
  for (size_t i = 0; i < j->ncomms; i++)
    if (strcmp(j->comms[i].hash, h) == 0) return &j->comms[i];
  size_t cap = j->capcomms;
  xgrow(&j->comms, &cap, j->ncomms, sizeof *j->comms);
  j->capcomms = cap;
  rp_comm *c = &j->comms[j->ncomms++];
  memset(c, 0, sizeof *c);
  c->hash = h;
  c->name = r->comm_name;
  c->size = r->comm_size;
  c->ops_min = -1;
  c->ovl_min = 2;
  c->ovl_max = -1;
  return c;
}

static void add_perf(rp_job *j, const rp_occ *o) {
  rp_comm *c = comm_for(j, &o->rec);
  const jval *d = o->rec.details;
  c->ranks = xrealloc(c->ranks, (c->nranks + 1) * sizeof *c->ranks);
  c->ranks[c->nranks++] = o->rank;
  long long v;
  double x;
  if (json_get_int(d, "ops", &v)) {
    if (c->ops_min < 0 || v < c->ops_min) c->ops_min = v;
    if (v > c->ops_max) c->ops_max = v;
  }
  if (json_get_int(d, "small_ops", &v)) c->small_ops += v;
  if (json_get_int(d, "blocked_after_ops", &v)) c->blocked_after_ops += v;
  if (json_get_int(d, "serialized_ops", &v)) c->serialized_ops += v;
  if (json_get_num(d, "bytes", &x)) c->bytes += x;
  if (json_get_num(d, "time_s", &x) && x > c->time_max) c->time_max = x;
  long long samples = 0;
  if (json_get_num(d, "overlap_fraction", &x) &&
      (!json_get_int(d, "overlap_samples", &samples) || samples > 0)) {
    if (x < c->ovl_min) c->ovl_min = x;
    if (x > c->ovl_max) c->ovl_max = x;
    c->ovl_sum += x;
    c->novl++;
  }
  const jval *bs = json_get_arr(d, "buckets");
  for (size_t i = 0; bs && i < bs->u.arr.n; i++) {
    const jval *b = bs->u.arr.v[i];
    const char *op = json_get_str(b, "op");
    long long lo;
    if (!op || !json_get_int(b, "bucket_lo_bytes", &lo)) continue;
    rp_bucket *t = NULL;
    for (size_t k = 0; k < c->nb; k++)
      if (c->b[k].lo == lo && strcmp(c->b[k].op, op) == 0) t = &c->b[k];
    if (!t) {
      xgrow(&c->b, &c->capb, c->nb, sizeof *c->b);
      t = &c->b[c->nb++];
      memset(t, 0, sizeof *t);
      t->op = op;
      t->lo = lo;
      t->bw_min = -1;
    }
    if (json_get_int(b, "ops", &v)) t->ops += v;
    long long mo = 0;
    if (json_get_int(b, "measured_ops", &mo)) t->measured_ops += mo;
    if (json_get_num(b, "bytes", &x)) t->bytes += x;
    if (json_get_num(b, "time_s", &x)) t->time_s += x;
    double bw;
    if (mo > 0 && json_get_num(b, "busbw_gbps", &bw)) {
      if (t->bw_min < 0 || bw < t->bw_min) t->bw_min = bw;
      if (bw > t->bw_max) t->bw_max = bw;
      t->bw_sum += bw;
      t->nbw++;
      if (json_get_num(b, "algbw_gbps", &x)) t->algbw_sum += x;
    }
  }
}

static int cmp_bucket(const void *a, const void *b) {
  const rp_bucket *x = a, *y = b;
  int c = strcmp(x->op, y->op);
  if (c) return c;
  return x->lo < y->lo ? -1 : x->lo > y->lo;
}

void rp_job_merge(rp_job *j) {
  if (j->merged) return;
  j->merged = true;
  /* ranks of the occurrences */
  for (size_t i = 0; i < j->nocc; i++) {
    rp_occ *o = &j->occ[i];
    o->rank = o->rec.has_rank ? o->rec.rank : j->procs[o->proc].rank;
  }
  int *all = xcalloc(j->nprocs + 1, sizeof *all);
  size_t na = 0;
  for (size_t i = 0; i < j->nprocs; i++)
    if (j->procs[i].rank >= 0) all[na++] = j->procs[i].rank;
  j->nranks = uniq_ints(all, na);
  free(all);

  kmap m = {0};
  for (size_t i = 0; i < j->nocc; i++) {
    rp_occ *o = &j->occ[i];
    if (is_perf_summary(o)) {
      add_perf(j, o);
      continue;
    }
    int kind;
    char *key = merge_key(o, &kind);
    bool fresh;
    int fi = kmap_find(j, &m, key, &fresh);
    if (fresh) {
      size_t cap = j->capf;
      xgrow(&j->f, &cap, j->nf, sizeof *j->f);
      j->capf = cap;
      rp_finding *f = &j->f[j->nf++];
      memset(f, 0, sizeof *f);
      f->key = key;
      f->check = o->rec.check;
      f->severity = o->rec.severity;
      f->kind = kind;
      f->order = check_order(o->rec.check);
      f->first_ms = o->rec.time_ms;
      f->comm_hash = o->rec.comm_hash;
      f->comm_name = o->rec.comm_name;
      f->comm_size = o->rec.comm_size;
    } else {
      free(key);
    }
    rp_finding *f = &j->f[fi];
    f->occ = xrealloc(f->occ, (f->nocc + 1) * sizeof *f->occ);
    f->occ[f->nocc++] = (int)i;
    if (o->rec.severity > f->severity) f->severity = o->rec.severity;
    f->count += o->rec.count;
    if (o->rec.time_ms >= 0 && (f->first_ms < 0 || o->rec.time_ms < f->first_ms))
      f->first_ms = o->rec.time_ms;
  }
  free(m.slot);

  g_sort_job = j;
  for (size_t i = 0; i < j->nf; i++) {
    rp_finding *f = &j->f[i];
    if (f->nocc > 1) qsort(f->occ, f->nocc, sizeof *f->occ, cmp_occ_idx);
    f->ranks = xcalloc(f->nocc, sizeof *f->ranks);
    size_t nr = 0;
    for (size_t k = 0; k < f->nocc; k++) {
      int r = j->occ[f->occ[k]].rank;
      if (r >= 0) f->ranks[nr++] = r;
      else f->unknown_rank++;
    }
    f->nranks = uniq_ints(f->ranks, nr);
    const a2a_record *head = &j->occ[f->occ[0]].rec;
    f->message = head->message;
    if (!f->comm_hash) f->comm_hash = head->comm_hash;
    for (size_t k = 1; k < f->nocc; k++)
      if (strcmp(j->occ[f->occ[k]].rec.message, f->message) != 0) f->messages_differ = true;
    j->by_sev[f->severity]++;
    if (f->kind == RP_DEADLOCK) j->deadlock = true;
  }
  if (j->nf > 1) qsort(j->f, j->nf, sizeof *j->f, cmp_finding);

  /* per-check counts */
  for (size_t i = 0; i < j->nf; i++) {
    rp_finding *f = &j->f[i];
    rp_check_count *c = count_for(j, f->check);
    if (f->severity > c->severity) c->severity = f->severity;
    c->findings++;
    c->lines += f->nocc;
    c->occurrences += f->count;
    c->ranks = xrealloc(c->ranks, (c->nranks + f->nranks + 1) * sizeof *c->ranks);
    memcpy(c->ranks + c->nranks, f->ranks, f->nranks * sizeof *c->ranks);
    c->nranks = uniq_ints(c->ranks, c->nranks + f->nranks);
  }
  for (size_t i = 0; i < j->nprocs; i++) {
    const jval *cs = j->procs[i].summary_checks;
    for (size_t k = 0; cs && k < cs->u.arr.n; k++) {
      const char *name = json_get_str(cs->u.arr.v[k], "check");
      long long s;
      if (!name || strcmp(name, "perf.summary") == 0 ||
          !json_get_int(cs->u.arr.v[k], "suppressed", &s) || s <= 0)
        continue;
      rp_check_count *c = count_for(j, name);
      c->suppressed += s;
      int sev = a2a_severity_parse(json_get_str(cs->u.arr.v[k], "severity"));
      if (sev > c->severity) c->severity = sev;
    }
  }
  for (size_t i = 0; i < j->ncc; i++)
    if (j->cc[i].severity < 0) j->cc[i].severity = SEV_INFO;
  if (j->ncc > 1) qsort(j->cc, j->ncc, sizeof *j->cc, cmp_cc);

  for (size_t i = 0; i < j->ncomms; i++) {
    rp_comm *c = &j->comms[i];
    c->nranks = uniq_ints(c->ranks, c->nranks);
    if (c->nb > 1) qsort(c->b, c->nb, sizeof *c->b, cmp_bucket);
  }
}

/* ---- words ---- */

void rp_proc_label(const rp_proc *p, char *out, size_t cap) {
  if (p->rank >= 0) snprintf(out, cap, "rank %d", p->rank);
  else snprintf(out, cap, "rank ? (pid %lld)", p->pid);
}

void rp_proc_ending(const rp_proc *p, char *out, size_t cap) {
  if (!p->has_summary) {
    snprintf(out, cap, "no summary: killed, ended with _exit() or still running%s%s%s",
             p->verdict ? " (after a " : "", p->verdict ? p->verdict : "", p->verdict ? " verdict)" : "");
  } else if (p->failed_now) {
    snprintf(out, cap, "ended by a2acheck%s%s%s", p->verdict ? " on the " : "", p->verdict ? p->verdict : "",
             p->verdict ? " verdict" : "");
  } else if (p->fail_matched) {
    snprintf(out, cap, "exit %lld, changed by A2ACHECK_FAIL_ON=%s", p->exit_status,
             p->fail_on ? p->fail_on : "?");
  } else {
    snprintf(out, cap, "exit %lld", p->exit_status);
  }
}

const char *rp_occ_role(const rp_job *j, const rp_finding *f, const rp_occ *o) {
  (void)j;
  long long s, r;
  const jval *d = o->rec.details;
  if (f->kind != RP_CROSS || !json_get_int(d, "sender", &s) || !json_get_int(d, "receiver", &r))
    return NULL;
  long long me = o->rec.comm_rank >= 0 ? o->rec.comm_rank : o->rank;
  if (me == s && me != r) return "sender";
  if (me == r && me != s) return "receiver";
  return NULL;
}

/* ---- policy ---- */

int rp_fail_level_parse(const char *s) {
  static const char *names[] = {"deadlock", "error", "warning", "never"};
  for (int i = 0; i < 4; i++)
    if (s && strcmp(s, names[i]) == 0) return i;
  return -1;
}

bool rp_level_matches(int level, const char *check, int severity) {
  switch (level) {
  case RP_FAIL_DEADLOCK: return rp_check_is_deadlock(check);
  case RP_FAIL_ERROR: return severity >= SEV_ERROR;
  case RP_FAIL_WARNING: return severity >= SEV_WARNING;
  default: return false;
  }
}

void rp_job_policy(const rp_job *j, int level, bool use_summaries, rp_verdict *v) {
  memset(v, 0, sizeof *v);
  char who[64];
  for (size_t i = 0; i < j->nprocs && !v->matched; i++) {
    const rp_proc *p = &j->procs[i];
    rp_proc_label(p, who, sizeof who);
    if (use_summaries && p->has_summary) {
      if (p->failed_now) {
        v->matched = true;
        v->deadlock = p->deadlock;
        snprintf(v->reason, sizeof v->reason, "%s (pid %lld) was ended by a2acheck%s%s%s", who, p->pid,
                 p->verdict ? " on a " : "", p->verdict ? p->verdict : "", p->verdict ? " verdict" : "");
      } else if (p->fail_matched) {
        v->matched = true;
        snprintf(v->reason, sizeof v->reason, "A2ACHECK_FAIL_ON=%s matched in %s (pid %lld)",
                 p->fail_on ? p->fail_on : "?", who, p->pid);
      }
      continue;
    }
  }
  if (v->matched) return;
  for (size_t i = 0; i < j->nocc; i++) {
    const rp_occ *o = &j->occ[i];
    const rp_proc *p = &j->procs[o->proc];
    if (use_summaries && p->has_summary) continue;
    if (strcmp(o->rec.check, "perf.summary") == 0) continue;
    if (!rp_level_matches(level, o->rec.check, o->rec.severity)) continue;
    rp_proc_label(p, who, sizeof who);
    v->matched = true;
    v->deadlock = rp_check_is_deadlock(o->rec.check);
    snprintf(v->reason, sizeof v->reason, "%s %s in %s (pid %lld)%s",
             a2a_severity_name(o->rec.severity), o->rec.check, who, p->pid,
             use_summaries ? ", which ended without a summary" : "");
    return;
  }
}
