/* perf_env.c - perf.env: lint the environment once at start-up against the
 * table in perf_env_table.inc (see perf_env.h). The environment is read
 * once, in the analyzer's init, never on the hot path; the findings are
 * reported at the first event, when the runtime's log is open. */
#include "perf_env.h"

#include <ctype.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "perf_math.h"


enum {
  R_ANY, R_IS, R_NOT, R_HAS, R_LT, R_GT, R_NAN, R_POW2, R_IB_HOST,
  R_NO_OVERLAP, R_OVERLAP, R_FORCES
};
#define SEV_W A2A_SEV_WARNING
#define SEV_I A2A_SEV_INFO

typedef struct env_row {
  const char *var;
  int rule;
  const char *arg;
  a2a_severity sev;
  const char *reason, *fix, *ref;
} env_row;

static const env_row g_rows[] = {
#define A2A_PERF_ENV(var, rule, arg, sev, reason, fix, ref) \
  {var, R_##rule, arg, SEV_##sev, reason, fix, ref},
#include "perf_env_table.inc"
#undef A2A_PERF_ENV
};
#define NROWS (sizeof g_rows / sizeof g_rows[0])

static const char *const g_nccl_names[] = {
#define A2A_PERF_NCCL_NAME(n) n,
#include "perf_env_table.inc"
#undef A2A_PERF_NCCL_NAME
};
#define NNAMES (sizeof g_nccl_names / sizeof g_nccl_names[0])

static const char *const g_not_nccl[] = {
#define A2A_PERF_NOT_NCCL(n, who) n,
#include "perf_env_table.inc"
#undef A2A_PERF_NOT_NCCL
};
#define NNOT (sizeof g_not_nccl / sizeof g_not_nccl[0])

/* value equals one of the '|'-separated words of list, ignoring case. */
static bool in_list(const char *value, size_t vlen, const char *list) {
  const char *p = list;
  while (*p) {
    const char *e = strchr(p, '|');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n == vlen && strncasecmp(p, value, n) == 0) return true;
    if (!e) break;
    p = e + 1;
  }
  return false;
}

/* One comma-separated token of value (NCCL_DEBUG_SUBSYS syntax) is in list.
 * A leading '^' inverts the value (every subsystem except those listed):
 * then the rule applies when some word of list is not excluded. */
static bool has_token(const char *value, const char *list) {
  bool invert = value[0] == '^';
  if (invert) value++;
  const char *p = list;
  while (*p) {
    const char *e = strchr(p, '|');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    bool found = false;
    for (const char *t = value; *t;) {
      const char *c = strchr(t, ',');
      size_t tn = c ? (size_t)(c - t) : strlen(t);
      if (tn == n && strncasecmp(t, p, n) == 0) found = true;
      if (!c) break;
      t = c + 1;
    }
    /* "ALL" in an exclusion list's complement is meaningless: skip it. */
    bool skip = invert && n == 3 && strncasecmp(p, "ALL", 3) == 0;
    if (!skip && found != invert) return true;
    if (!e) break;
    p = e + 1;
  }
  return false;
}

/* NCCL_ALGO / NCCL_PROTO's syntax (NCCL's parseList, src/graph/tuning.cc):
 * ';'-separated entries, each "[function:]list"; only the first may lack
 * the function prefix, and then it applies to every collective; a list
 * starting with '^' excludes its elements instead of selecting them. The
 * value forces a choice on every collective when its first entry has no
 * prefix and is not an exclusion ("Tree", "Ring,Tree"); not when it only
 * names functions ("allreduce:tree") or only excludes ("^LL128"). */
static bool forces_all(const char *value) {
  while (*value == ' ') value++;
  const char *end = strchr(value, ';');
  size_t n = end ? (size_t)(end - value) : strlen(value);
  if (memchr(value, ':', n)) return false; /* a function's entry */
  return n > 0 && value[0] != '^';
}

static bool row_applies(const env_row *r, const char *value, const a2a_perf_env_ctx *ctx,
                        bool overlap_fw) {
  size_t vlen = strlen(value);
  uint64_t num = 0, lim = 0;
  bool isnum = a2a_perf_parse_u64(value, &num) == 0;
  switch (r->rule) {
  case R_ANY: return true;
  case R_IS: return in_list(value, vlen, r->arg);
  case R_NOT: return !in_list(value, vlen, r->arg);
  case R_HAS: return has_token(value, r->arg);
  case R_LT: return isnum && a2a_perf_parse_u64(r->arg, &lim) == 0 && num < lim;
  case R_GT: return isnum && a2a_perf_parse_u64(r->arg, &lim) == 0 && num > lim;
  case R_NAN: return !isnum;
  case R_POW2: return isnum && (num == 0 || (num & (num - 1)) != 0);
  case R_IB_HOST: return ctx && ctx->ib_host && in_list(value, vlen, r->arg);
  case R_NO_OVERLAP: return !overlap_fw && in_list(value, vlen, r->arg);
  case R_OVERLAP: return overlap_fw && in_list(value, vlen, r->arg);
  case R_FORCES: return forces_all(value);
  default: return false;
  }
}

bool a2a_perf_env_known_nccl(const char *name) {
  for (size_t i = 0; i < NNAMES; i++)
    if (strcmp(name, g_nccl_names[i]) == 0) return true;
  return false;
}

bool a2a_perf_env_not_nccl(const char *name) {
  for (size_t i = 0; i < NNOT; i++)
    if (strcmp(name, g_not_nccl[i]) == 0) return true;
  return false;
}

const char *a2a_perf_env_closest(const char *name, int cap, int *dist) {
  const char *best = NULL;
  int bd = cap + 1;
  for (size_t i = 0; i < NNAMES; i++) {
    int d = a2a_perf_edit_distance(name, g_nccl_names[i], bd < cap ? bd : cap);
    if (d < bd) { bd = d; best = g_nccl_names[i]; }
  }
  if (dist) *dist = bd;
  return bd <= cap ? best : NULL;
}

size_t a2a_perf_env_lint(char *const *envp, const a2a_perf_env_ctx *ctx,
                         a2a_perf_env_hit *out, size_t max) {
  if (!envp) return 0;
  bool overlap_fw = false;
  for (char *const *e = envp; *e; e++)
    if (strncmp(*e, "NVTE_", 5) == 0) overlap_fw = true;

  size_t n = 0;
  for (char *const *e = envp; *e; e++) {
    const char *eq = strchr(*e, '=');
    if (!eq || eq == *e) continue;
    size_t nlen = (size_t)(eq - *e);
    const char *value = eq + 1;
    if (!*value) continue; /* empty means unset for NCCL's getenv users */
    char name[128];
    if (nlen >= sizeof name) continue;
    memcpy(name, *e, nlen);
    name[nlen] = '\0';

    const env_row *hit = NULL;
    bool any_row = false;
    for (size_t i = 0; i < NROWS && !hit; i++) {
      if (strcmp(g_rows[i].var, name) != 0) continue;
      any_row = true;
      if (row_applies(&g_rows[i], value, ctx, overlap_fw)) hit = &g_rows[i];
    }
    a2a_perf_env_hit h = {0};
    if (hit) {
      h.var = hit->var;
      h.value = value;
      h.sev = hit->sev;
      h.reason = hit->reason;
      h.fix = hit->fix;
      h.ref = hit->ref;
    } else if (!any_row && strncmp(name, "NCCL_", 5) == 0 && !a2a_perf_env_known_nccl(name) &&
               !a2a_perf_env_not_nccl(name)) {
      int cap = nlen > 16 ? 3 : 2, d = 0;
      const char *near = a2a_perf_env_closest(name, cap, &d);
      snprintf(h.namebuf, sizeof h.namebuf, "%s", name);
      h.var = h.namebuf;
      h.value = value;
      if (near) {
        h.sev = A2A_SEV_WARNING;
        snprintf(h.suggestion, sizeof h.suggestion, "%s", near);
        h.reason = "is not a variable NCCL reads (NCCL ignores it silently); it looks like a typo";
        h.fix = "rename it to the suggested name";
      } else {
        h.sev = A2A_SEV_INFO;
        h.reason = "is not a variable NCCL 2.28 reads (NCCL ignores it silently); it may belong to a plugin or a newer NCCL";
        h.fix = "check the name against the NCCL documentation";
      }
      h.ref = A2A_REF_NCCL_ENV;
    } else {
      continue;
    }
    if (n < max) {
      out[n] = h;
      if (h.var == h.namebuf) out[n].var = out[n].namebuf;
    }
    n++;
  }
  return n;
}

void a2a_perf_env_probe(a2a_perf_env_ctx *ctx) {
  memset(ctx, 0, sizeof *ctx);
  ctx->ib_host = a2a_hostsvc->infiniband_present();
}

/* ------------------------------------------------------------------ */
/* The analyzer: lint at init, report at the first event. */

#define MAX_HITS 64
static struct {
  char var[128];
  char value[160];
  a2a_severity sev;
  const char *reason, *fix, *ref;
  char suggestion[64];
} g_hits[MAX_HITS];
static size_t g_nhits;
/* 1 until the first event reported the hits; also the analyzer's gate
 * (a2a_analyzer.pre_gate): once it reads 0 the handler has nothing left to
 * do, so the hot dispatch leaves it out of every NCCL call's list. */
static _Atomic unsigned g_pending;

static int perf_env_init(void) {
  atomic_store(&g_pending, 0);
  g_nhits = 0;
  if (!a2a_check_on(A2A_CK_PERF_ENV)) return 0;
  a2a_perf_env_ctx ctx;
  a2a_perf_env_probe(&ctx);
  a2a_perf_env_hit hits[MAX_HITS];
  size_t n = a2a_perf_env_lint(a2a_hostsvc->environ(), &ctx, hits, MAX_HITS);
  if (n > MAX_HITS) n = MAX_HITS;
  for (size_t i = 0; i < n; i++) {
    snprintf(g_hits[i].var, sizeof g_hits[i].var, "%s", hits[i].var);
    snprintf(g_hits[i].value, sizeof g_hits[i].value, "%s", hits[i].value);
    g_hits[i].sev = hits[i].sev;
    g_hits[i].reason = hits[i].reason;
    g_hits[i].fix = hits[i].fix;
    g_hits[i].ref = hits[i].ref;
    memcpy(g_hits[i].suggestion, hits[i].suggestion, sizeof g_hits[i].suggestion);
  }
  g_nhits = n;
  atomic_store(&g_pending, n > 0 ? 1u : 0u);
  return 0;
}

static void report_hits(void) {
  for (size_t i = 0; i < g_nhits; i++) {
    char msg[1024], details[1536];
    if (g_hits[i].suggestion[0])
      snprintf(msg, sizeof msg, "%s=%s %s: did you mean %s? Fix: %s. (see %s)",
               g_hits[i].var, g_hits[i].value, g_hits[i].reason, g_hits[i].suggestion,
               g_hits[i].fix, g_hits[i].ref);
    else
      snprintf(msg, sizeof msg, "%s=%s: %s. Fix: %s. (see %s)", g_hits[i].var,
               g_hits[i].value, g_hits[i].reason, g_hits[i].fix, g_hits[i].ref);
    a2a_json j;
    a2a_json_init(&j, details, sizeof details);
    a2a_json_obj_begin(&j, NULL);
    a2a_json_str(&j, "variable", g_hits[i].var);
    a2a_json_str(&j, "value", g_hits[i].value);
    a2a_json_str(&j, "reason", g_hits[i].reason);
    a2a_json_str(&j, "recommendation", g_hits[i].fix);
    a2a_json_str(&j, "reference", g_hits[i].ref);
    if (g_hits[i].suggestion[0]) a2a_json_str(&j, "suggestion", g_hits[i].suggestion);
    a2a_json_obj_end(&j);
    a2a_finding f = {.check = A2A_CK_PERF_ENV, .severity = g_hits[i].sev, .site = NULL,
                     .message = msg, .details_json = details};
    a2a_report(&f);
  }
}

static void perf_env_on_event(const a2a_event *ev) {
  (void)ev;
  if (atomic_load_explicit(&g_pending, memory_order_relaxed) &&
      atomic_exchange(&g_pending, 0))
    report_hits();
}

/* The lint ran at init; its findings are reported at the first NCCL event
 * (the log is open by then; NCCL's variables matter only to NCCL users). */
#define PE_KINDS (A2A_KIND_BIT(A2A_EV_GET_UNIQUE_ID) | A2A_KIND_BIT(A2A_EV_COMM_INIT) | \
              A2A_KIND_BIT(A2A_EV_COMM_END) | A2A_KIND_BIT(A2A_EV_COMM_ASYNC_ERROR) |   \
              A2A_KIND_BIT(A2A_EV_COMM_QUERY) | A2A_KIND_BIT(A2A_EV_COLL) |             \
              A2A_KIND_BIT(A2A_EV_P2P) | A2A_KIND_BIT(A2A_EV_GROUP_START) |             \
              A2A_KIND_BIT(A2A_EV_GROUP_END) | A2A_KIND_BIT(A2A_EV_NCCL_REGISTER) |     \
              A2A_KIND_BIT(A2A_EV_REDOP))

const a2a_analyzer a2a_analyzer_perf_env = {
    .name = "perf_env",
    .owner = A2A_OWN_PERF_ENV,
    .pre = PE_KINDS,
    .post = 0,
    /* perf_env_on_event does nothing once g_pending is 0 (set at init, before
     * any call is dispatched; cleared by the report, never set again). */
    .pre_gated = PE_KINDS,
    .pre_gate = &g_pending,
    /* Only perf_env_init sets it: with nothing to report, the hot rows
     * leave the handler out of the NCCL calls' lists altogether. */
    .gates_open_at_init_only = true,
    /* A nested call finds its gate closed: the thread's outermost start,
     * an NCCL event before it, made the report. */
    .nested_keep_ok = true,
    .init = perf_env_init,
    .on_event = perf_env_on_event,
};
