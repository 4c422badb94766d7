/* xr_coord.c - the coordinator a process hosts when it created an
 * ncclUniqueId (or bound A2ACHECK_COORDINATOR): a TCP listener, one
 * connection per client process (authenticated by the token of the id's
 * record), the matcher (xrank_match.c) fed with every client's
 * registrations and operations, and the wait-for graph (xrank_wfg.c) over
 * the clients' progress reports, evaluated every 250 ms.
 *
 * Deadlock confirmation and the hang timeout are a pure policy
 * (xrank_confirm.c, unit-tested with a synthetic clock); this file only
 * gathers the states and delivers the verdicts it emits. With reports every
 * 300 ms a deadlock is reported within A2ACHECK_HANG_CONFIRM of forming.
 *
 * Runs on the background thread only, except xr_coord_listen (g_xr_mu).
 * Nothing a client sends can crash or stall it: frames are bounded and
 * validated, a protocol error closes that connection, sockets never block.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "a2a_core.h"
#include "xr_internal.h"
#include "xrank_confirm.h"
#include "xrank_match.h"
#include "xrank_wfg.h"

#define MAX_SCONNS 4096
#define HELLO_TIMEOUT_NS 10000000000ull

typedef struct site_ent {
  uint64_t site;
  char text[120];
} site_ent;

typedef struct sconn {
  int fd;
  int open, authed, bye, detached;
  uint64_t t_open;
  xr_buf in, out;
  int pid, grank;
  char host[64];
  xr_procstate st;
  int has_state;
  uint64_t progress;
  site_ent *sites;
  size_t capsites, nsites;
  int flush_pending;
  uint64_t flush_since;
  /* COMMFLUSH requests not yet answered (a rank inside ncclCommDestroy or
   * ncclCommFinalize waits for the answer, bounded on its side). */
  struct { xr_commflush f; uint64_t since; } cf[16];
  int ncf;
} sconn;

static struct {
  _Atomic int lfd;           /* -1 when not hosting */
  int init;
  uint8_t token[XR_TOKEN_BYTES];
  xr_idrec rec;
  sconn *c;
  int nc;
  xr_matcher *m;
  uint64_t last_eval;
  xr_confirm confirm;        /* the deadlock/hang policy's state */
  int confirm_init;
} K = {.lfd = -1};

static xr_op g_ops[XR_MAX_OPS_PER_MSG];

bool xr_coord_hosting(void) { return atomic_load(&K.lfd) >= 0; }

static const char *site_lookup(const sconn *s, uint64_t site) {
  if (!s->capsites) return NULL;
  size_t h = (size_t)(site * 0x9e3779b97f4a7c15ull) & (s->capsites - 1);
  while (s->sites[h].site) {
    if (s->sites[h].site == site) return s->sites[h].text;
    h = (h + 1) & (s->capsites - 1);
  }
  return NULL;
}

static void site_store(sconn *s, const xr_site *in) {
  if (!in->site) return;
  if (s->nsites * 2 >= s->capsites) {
    size_t nc = s->capsites ? s->capsites * 2 : 256;
    if (nc > 16384) return;
    site_ent *ns = calloc(nc, sizeof *ns);
    if (!ns) return;
    for (size_t i = 0; i < s->capsites; i++)
      if (s->sites[i].site) {
        size_t h = (size_t)(s->sites[i].site * 0x9e3779b97f4a7c15ull) & (nc - 1);
        while (ns[h].site) h = (h + 1) & (nc - 1);
        ns[h] = s->sites[i];
      }
    free(s->sites);
    s->sites = ns;
    s->capsites = nc;
  }
  size_t h = (size_t)(in->site * 0x9e3779b97f4a7c15ull) & (s->capsites - 1);
  while (s->sites[h].site && s->sites[h].site != in->site) h = (h + 1) & (s->capsites - 1);
  if (!s->sites[h].site) s->nsites++;
  s->sites[h].site = in->site;
  snprintf(s->sites[h].text, sizeof s->sites[h].text, "%s", in->text);
}

/* ---- matcher callbacks ---- */

static void send_to(int conn, xr_msgtype t, const void *p, size_t n) {
  if (conn < 0 || conn >= K.nc || !K.c[conn].open) return;
  if (!xr_out_msg(&K.c[conn].out, t, p, n)) {
    close(K.c[conn].fd);
    K.c[conn].open = 0;
  }
}

static void m_verdict(void *ctx, int conn, const xr_verdict *v) {
  (void)ctx;
  if (conn < 0 || conn >= K.nc || !K.c[conn].open) return;
  sconn *s = &K.c[conn];
  size_t need = sizeof(xr_hdr) + 128 + XR_MAX_TEXT + XR_MAX_JSON;
  if (!xr_buf_reserve(&s->out, need, XR_OUT_MAX) ||
      !xr_put_verdict(s->out.p, s->out.cap, &s->out.len, v)) {
    close(s->fd);
    s->open = 0;
  }
}

static const char *m_site(void *ctx, int conn, uint64_t site) {
  (void)ctx;
  return conn >= 0 && conn < K.nc ? site_lookup(&K.c[conn], site) : NULL;
}

/* ---- listener ---- */

int xr_coord_listen(uint32_t ip4, uint16_t port_net, const uint8_t *token, xr_idrec *rec) {
  if (atomic_load(&K.lfd) >= 0) {
    /* One coordinator per process serves every id it creates. */
    if (port_net && port_net != K.rec.port) return -1;
    *rec = K.rec;
    return 0;
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  /* A fixed A2ACHECK_COORDINATOR port must be bindable again while the
   * previous run's connections sit in TIME_WAIT (a second live listener
   * still fails: that process then is a client). */
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = port_net};
  sin.sin_addr.s_addr = ip4 ? ip4 : htonl(INADDR_LOOPBACK);
  if (bind(fd, (struct sockaddr *)&sin, sizeof sin) != 0 || listen(fd, 512) != 0) {
    close(fd);
    return -1;
  }
  socklen_t sl = sizeof sin;
  getsockname(fd, (struct sockaddr *)&sin, &sl);
  memset(rec, 0, sizeof *rec);
  rec->magic = XR_IDREC_MAGIC;
  rec->version = 1;
  rec->family = 4;
  rec->port = sin.sin_port;
  memcpy(rec->addr, &sin.sin_addr.s_addr, 4);
  memcpy(rec->token, token, XR_TOKEN_BYTES);
  rec->pid = (uint32_t)getpid();
  rec->check = (uint32_t)a2a_hash_bytes(rec, offsetof(xr_idrec, check), 0x1d);
  memcpy(K.token, token, XR_TOKEN_BYTES);
  K.rec = *rec;
  if (!K.m) {
    xr_match_out out = {.ctx = NULL, .verdict = m_verdict, .site_name = m_site};
    K.m = xr_matcher_new(&out);
  }
  atomic_store(&K.lfd, fd);
  return 0;
}

size_t xr_coord_other_clients(void) {
  size_t n = 0;
  for (int i = 0; i < K.nc; i++)
    if (K.c[i].open && K.c[i].authed && !K.c[i].bye && K.c[i].pid != getpid()) n++;
  return n;
}

/* Connection index of each poll entry after the listener's. */
static int g_pmap[MAX_SCONNS];

size_t xr_coord_pollfds(struct pollfd *pfd, size_t max) {
  int lfd = atomic_load(&K.lfd);
  if (lfd < 0 || max == 0) return 0;
  size_t n = 0;
  pfd[n++] = (struct pollfd){.fd = lfd, .events = POLLIN};
  for (int i = 0; i < K.nc && n < max; i++)
    if (K.c[i].open) {
      g_pmap[n - 1] = i;
      pfd[n++] = (struct pollfd){.fd = K.c[i].fd,
                                 .events = (short)(POLLIN | (K.c[i].out.len ? POLLOUT : 0))};
    }
  return n;
}

static void conn_closed(int i) {
  sconn *s = &K.c[i];
  if (s->open) close(s->fd);
  s->open = 0;
  s->st.alive = 0;
  if (s->authed && !s->detached && K.m) xr_matcher_conn_gone(K.m, i);
  xr_buf_free(&s->in);
  xr_buf_free(&s->out);
}

/* One message from client i. Returns -1 on a protocol error. */
static int handle(int i, const xr_hdr *h, const uint8_t *pl, uint64_t now) {
  sconn *s = &K.c[i];
  if (!s->authed) {
    xr_hello he;
    if (h->type != XR_MSG_HELLO || xr_get_fixed(h, pl, &he, sizeof he) != 0) return -1;
    if (memcmp(he.token, K.token, XR_TOKEN_BYTES) != 0 || he.version != XR_PROTO_VERSION) return -1;
    s->authed = 1;
    s->pid = he.pid;
    s->grank = he.grank;
    snprintf(s->host, sizeof s->host, "%s", he.host);
    xr_matcher_hello(K.m, i, he.pid, he.grank, he.host);
    xr_welcome w = {.version = XR_PROTO_VERSION, .conn = (uint32_t)i};
    send_to(i, XR_MSG_WELCOME, &w, sizeof w);
    return 0;
  }
  if (s->detached) return 0;
  switch (h->type) {
  case XR_MSG_COMMREG: {
    xr_commreg r;
    if (xr_get_fixed(h, pl, &r, sizeof r) != 0) return -1;
    if (s->grank < 0) s->grank = r.rank; /* as the matcher (and the runtime) name it */
    xr_matcher_register(K.m, i, &r);
    return 0;
  }
  case XR_MSG_OPS: {
    uint32_t n = 0;
    if (xr_get_ops(h, pl, g_ops, XR_MAX_OPS_PER_MSG, &n) != 0) return -1;
    for (uint32_t k = 0; k < n; k++) xr_matcher_op(K.m, i, &g_ops[k]);
    return 0;
  }
  case XR_MSG_SITE: {
    xr_site st;
    if (xr_get_fixed(h, pl, &st, sizeof st) != 0) return -1;
    site_store(s, &st);
    return 0;
  }
  case XR_MSG_COMMEND: {
    xr_commend e;
    if (xr_get_fixed(h, pl, &e, sizeof e) != 0) return -1;
    xr_matcher_comm_end(K.m, i, e.comm, e.rank);
    return 0;
  }
  case XR_MSG_STATE: {
    xr_procstate st;
    if (xr_get_state(h, pl, &st) != 0) return -1;
    if (s->has_state) xr_state_free(&s->st);
    s->st = st;
    s->st.pid = s->pid;
    s->st.grank = s->grank;
    snprintf(s->st.host, sizeof s->st.host, "%s", s->host);
    s->st.alive = !s->bye;
    s->has_state = 1;
    return 0;
  }
  case XR_MSG_BYE: {
    xr_bye b;
    if (xr_get_fixed(h, pl, &b, sizeof b) != 0) return -1;
    s->bye = 1;
    s->st.alive = 0;
    if (b.status == -1) {
      /* Detached (its record queue overflowed): forget it; its peers'
       * counterparts are unknown from now on, never "exited". */
      s->detached = 1;
      if (s->has_state) xr_state_free(&s->st);
      s->has_state = 0;
    } else {
      xr_matcher_conn_gone(K.m, i);
    }
    return 0;
  }
  case XR_MSG_COMMFLUSH: {
    xr_commflush f;
    if (xr_get_fixed(h, pl, &f, sizeof f) != 0) return -1;
    if (s->ncf == (int)(sizeof s->cf / sizeof s->cf[0])) {
      send_to(i, XR_MSG_COMMFLUSHED, &f, sizeof f); /* full: do not make it wait */
      return 0;
    }
    s->cf[s->ncf].f = f;
    s->cf[s->ncf++].since = now;
    return 0;
  }
  case XR_MSG_FLUSH: {
    xr_flush f;
    if (xr_get_fixed(h, pl, &f, sizeof f) != 0) return -1;
    s->flush_pending = 1;
    s->flush_since = now;
    return 0;
  }
  default:
    return -1;
  }
}

/* Answer the COMMFLUSH requests that are settled: the rank has no operation
 * on the comm still waiting for a counterpart a live peer may post (so
 * every verdict about it was queued on its connection before this answer),
 * or the request is older than any client waits (a slot is freed). Runs
 * after every batch of input, so a correct program's ranks, which end the
 * comm together, are answered as soon as their peers' records arrived. */
static void cflush_check(uint64_t now) {
  for (int i = 0; i < K.nc; i++) {
    sconn *s = &K.c[i];
    if (!s->open || !s->ncf) continue;
    int k = 0;
    for (int j = 0; j < s->ncf; j++) {
      if (xr_matcher_pending_rank(K.m, i, s->cf[j].f.comm, s->cf[j].f.rank) == 0 ||
          now - s->cf[j].since > 10000000000ull)
        send_to(i, XR_MSG_COMMFLUSHED, &s->cf[j].f, sizeof s->cf[j].f);
      else
        s->cf[k++] = s->cf[j];
    }
    s->ncf = k;
  }
}

void xr_coord_io(const struct pollfd *pfd, size_t n, uint64_t now) {
  int lfd = atomic_load(&K.lfd);
  if (lfd < 0 || n == 0) return;
  if (pfd[0].revents & POLLIN) {
    for (int tries = 0; tries < 64; tries++) {
      int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) break;
      if (K.nc >= MAX_SCONNS) { close(fd); continue; }
      if (K.nc % 64 == 0) {
        sconn *nc = realloc(K.c, (size_t)(K.nc + 64) * sizeof *nc);
        if (!nc) { close(fd); continue; }
        K.c = nc;
      }
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      sconn *s = &K.c[K.nc++];
      memset(s, 0, sizeof *s);
      s->fd = fd;
      s->open = 1;
      s->t_open = now;
      s->grank = -1;
    }
  }
  for (size_t j = 1; j < n; j++) {
    int i = g_pmap[j - 1];
    if (i < 0 || i >= K.nc || !K.c[i].open || K.c[i].fd != pfd[j].fd) continue;
    sconn *s = &K.c[i];
    if (pfd[j].revents & (POLLIN | POLLHUP | POLLERR)) {
      int rr = xr_sock_read(s->fd, &s->in, XR_IN_MAX);
      size_t off = 0;
      int bad = 0;
      for (;;) {
        xr_hdr h;
        const uint8_t *pl;
        size_t used;
        int fr = xr_frame(s->in.p + off, s->in.len - off, &h, &pl, &used);
        if (fr == 0) break;
        if (fr < 0 || handle(i, &h, pl, now) != 0) { bad = 1; break; }
        off += used;
        if (!s->open) break;
      }
      if (bad || rr < 0) { conn_closed(i); continue; }
      xr_buf_consume(&s->in, off);
    }
    if (s->open && !s->authed && now - s->t_open > HELLO_TIMEOUT_NS) { conn_closed(i); continue; }
    if (s->open && s->out.len && xr_sock_write(s->fd, &s->out) < 0) conn_closed(i);
  }
  /* Input may have settled a waiting rank (its peers' records arrived). */
  cflush_check(now);
  for (int i = 0; i < K.nc; i++)
    if (K.c[i].open && K.c[i].out.len && xr_sock_write(K.c[i].fd, &K.c[i].out) < 0)
      conn_closed(i);
}

/* ---- deadlock / hang evaluation (policy: xrank_confirm.c) ---- */

typedef struct eval_ctx {
  const int *map;            /* state index -> connection index */
} eval_ctx;

static const char *e_site(void *ctx, size_t proc, uint64_t site) {
  const eval_ctx *e = ctx;
  return site_lookup(&K.c[e->map[proc]], site);
}
static const char *e_mismatch(void *ctx, uint64_t comm) {
  (void)ctx;
  return K.m ? xr_matcher_last_mismatch(K.m, comm) : NULL;
}
static void e_emit(void *ctx, const xr_confirm_verdict *cv) {
  const eval_ctx *e = ctx;
  xr_verdict v = {.comm = cv->comm, .site = cv->site,
                  .severity = cv->fail ? A2A_SEV_ERROR : A2A_SEV_WARNING,
                  .flags = cv->fail ? XR_VERDICT_FAIL : 0u, .check = cv->check, .text = cv->text,
                  .json = cv->json};
  m_verdict(NULL, e->map[cv->proc], &v);
}

static void evaluate(uint64_t now) {
  if (!K.confirm_init) {
    xr_confirm_opts co = {.confirm_s = a2a_opt ? a2a_opt->hang_confirm : 5.0,
                          .hang_timeout_s = a2a_opt ? a2a_opt->hang_timeout : 300.0,
                          .stall_s = a2a_opt ? a2a_opt->stall_warning : 30.0};
    xr_confirm_init(&K.confirm, &co);
    K.confirm_init = 1;
  }
  size_t n = 0;
  for (int i = 0; i < K.nc; i++) n += K.c[i].has_state;
  if (!n) return;
  xr_procstate *ps = calloc(n, sizeof *ps);
  int *map = calloc(n, sizeof *map);
  uint32_t *ids = calloc(n, sizeof *ids);
  if (ps && map && ids) {
    size_t k = 0;
    for (int i = 0; i < K.nc; i++) {
      if (!K.c[i].has_state) continue;
      ps[k] = K.c[i].st;
      ps[k].alive = K.c[i].open && !K.c[i].bye;
      map[k] = i;
      ids[k] = (uint32_t)i;
      k++;
    }
    eval_ctx ec = {.map = map};
    xr_confirm_io io = {.ctx = &ec, .site_name = e_site, .mismatch = e_mismatch, .emit = e_emit};
    xr_confirm_step(&K.confirm, now, ps, ids, n, &io);
  }
  free(ps);
  free(map);
  free(ids);
}

void xr_coord_tick(uint64_t now) {
  if (atomic_load(&K.lfd) < 0) return;
  cflush_check(now);
  for (int i = 0; i < K.nc; i++) {
    sconn *s = &K.c[i];
    if (!s->open || !s->flush_pending) continue;
    if (xr_matcher_pending(K.m, i) == 0 || now - s->flush_since > 2500000000ull) {
      xr_flush f = {.token = 1};
      send_to(i, XR_MSG_FLUSHED, &f, sizeof f);
      s->flush_pending = 0;
    }
  }
  if (now - K.last_eval >= 250000000ull) {
    K.last_eval = now;
    evaluate(now);
  }
  for (int i = 0; i < K.nc; i++)
    if (K.c[i].open && K.c[i].out.len && xr_sock_write(K.c[i].fd, &K.c[i].out) < 0) conn_closed(i);
}

void xr_coord_linger(uint64_t max_ns) {
  if (atomic_load(&K.lfd) < 0) return;
  uint64_t t0 = xr_now_ns();
  struct pollfd pfd[MAX_SCONNS + 1];
  while (xr_coord_other_clients() > 0 && xr_now_ns() - t0 < max_ns) {
    for (int i = 0; i < K.nc; i++)
      if (K.c[i].open && K.c[i].out.len && xr_sock_write(K.c[i].fd, &K.c[i].out) < 0) conn_closed(i);
    size_t n = xr_coord_pollfds(pfd, sizeof pfd / sizeof pfd[0]);
    if (poll(pfd, n, 10) < 0) continue;
    xr_coord_io(pfd, n, xr_now_ns());
  }
}

void xr_coord_after_fork_child(void) {
  /* The child never hosts: close the inherited listener and connections
   * (the parent's copies stay open) and forget the tables. */
  int lfd = atomic_load(&K.lfd);
  if (lfd >= 0) close(lfd);
  for (int i = 0; i < K.nc; i++)
    if (K.c[i].open) close(K.c[i].fd);
  memset(&K, 0, sizeof K);
  atomic_store(&K.lfd, -1);
}
