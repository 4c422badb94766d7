/* xr_coord.c - the coordinator a process hosts when it created an
 * ncclUniqueId (or bound A2ACHECK_COORDINATOR): a TCP listener, one
 * connection per client process, the matcher (xrank_match.c) fed with every
 * client's registrations and operations, and the wait-for graph
 * (xrank_wfg.c) over the clients' progress reports, evaluated every 250 ms
 * (further apart when an evaluation costs more than 1/20 of that:
 * xr_confirm_eval_interval).
 *
 * Deadlock confirmation and the hang timeout are a pure policy
 * (xrank_confirm.c, unit-tested with a synthetic clock); this file only
 * gathers the states and delivers the verdicts it emits. With reports every
 * 300 ms a deadlock is reported within A2ACHECK_HANG_CONFIRM (>= 2.5 s) of
 * forming.
 *
 * The listener is reachable by anyone who can reach its address (it is the
 * interface NCCL's bootstrap uses), and the coordinator lives inside a
 * process of the job (often rank 0's training process). So before a
 * connection authenticated (xrank_auth.h) it costs a small fixed amount:
 *  - it occupies one of XR_PREAUTH_MAX slots (static memory, nothing is
 *    allocated), at most XR_PREAUTH_PER_SRC from one source address;
 *  - only the HELLO is read, at its exact size, then only the AUTH; any
 *    other byte closes it; it must authenticate within XR_AUTH_DEADLINE_NS;
 *  - when the slots are full, a new connection evicts the oldest one of its
 *    own address (or, below that cap, the oldest of all) that has not sent
 *    its HELLO yet, else the oldest one; a real client sends its HELLO with
 *    the connection and retries if it is evicted, so a flood of idle
 *    connections delays it by a round trip at most;
 *  - a connection whose descriptor would be among the process's last
 *    XR_FD_RESERVE under RLIMIT_NOFILE is closed at once (the application's
 *    own open() must not fail because of a2acheck), and when accept itself
 *    fails (EMFILE, ENOBUFS) the listener rests for 100 ms instead of
 *    spinning on a backlog it cannot take.
 * Authenticated connections are never reused: their index is the matcher's
 * connection id (at most MAX_SCONNS client processes per coordinator).
 *
 * How an authenticated connection ends decides what its process is to the
 * deadlock model: BYE - it exited; closed without BYE (end of file, reset) -
 * it died (killed or crashed: the kernel closed its socket); timed out (no
 * acknowledgement for XR_USER_TIMEOUT_MS), a bad seal or a protocol error -
 * it is lost: its state is forgotten and its counterparts are unknown, never
 * "exited" (a cut cable must not prove a deadlock).
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
#include <time.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "a2a_core.h"
#include "xr_internal.h"
#include "xrank_auth.h"
#include "xrank_confirm.h"
#include "xrank_match.h"
#include "xrank_wfg.h"

#define MAX_SCONNS 4096
#define XR_PREAUTH_MAX 64
#define XR_PREAUTH_PER_SRC 16
/* A connection must authenticate within XR_AUTH_DEADLINE_NS while more than
 * XR_PREAUTH_CALM slots are taken (a flood: slots are freed fast), within
 * XR_AUTH_DEADLINE_CALM_NS otherwise: a real client whose process is
 * starved of CPU at start-up (four ranks spinning on two cores, with the
 * coordinator's host among them) may take seconds to answer the challenge,
 * and a client closed after it verified the coordinator's proof is not
 * retried. A few slow connections cost a few descriptors. */
#define XR_AUTH_DEADLINE_NS 2000000000ull
#define XR_AUTH_DEADLINE_CALM_NS 15000000000ull
#define XR_PREAUTH_CALM 8
#define XR_FD_RESERVE 32
#define XR_PING_NS 1000000000ull

typedef struct site_ent {
  uint64_t site;
  char text[120];
} site_ent;

/* How an authenticated connection ended (see the file comment). */
enum { END_OPEN, END_BYE, END_DIED, END_LOST };

typedef struct sconn {
  int fd;
  int open, authed, bye, detached, end;
  uint64_t t_open, last_tx;
  xr_buf in, out, wire;      /* out: messages to seal; wire: sealed bytes */
  xr_mac rx, tx;
  int pid, grank;
  char host[64];
  char addr[24];             /* the peer's address, for messages */
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

/* A connection before authentication: fixed size, static. */
typedef struct pconn {
  int fd;                    /* -1: free */
  int step;                  /* 1: HELLO expected; 2: CHALLENGE sent, AUTH expected */
  uint32_t src;              /* IPv4 source address (network order) */
  uint16_t sport;
  uint64_t t_open;
  size_t have;
  uint8_t buf[sizeof(xr_hdr) + sizeof(xr_hello)];
  xr_hello hello;
  xr_challenge chal;
} pconn;
_Static_assert(sizeof(xr_hdr) + sizeof(xr_auth) <= sizeof(((pconn *)0)->buf), "AUTH fits");

/* Why pre-authentication connections were closed (figures for the
 * a2acheck.auth-failed findings and the tests). */
#define XR_REJECTS(X)                                                 \
  X(timeout, "did not authenticate in time")                          \
  X(closed, "closed before authenticating")                           \
  X(bad_hello, "sent something other than a HELLO of this version")  \
  X(bad_auth, "sent a wrong proof (it does not know the job's secret)") \
  X(evicted, "were evicted by newer connections (slots full)")         \
  X(fd_reserve, "were refused: the process is near its descriptor limit")
enum {
#define X(name, text) REJ_##name,
  XR_REJECTS(X)
#undef X
  REJ__COUNT
};
static const char *const rej_text[] = {
#define X(name, text) text,
    XR_REJECTS(X)
#undef X
};

static struct {
  _Atomic int lfd;           /* -1 when not hosting */
  xr_secret secret;
  xr_idrec rec;
  sconn *c;
  int nc;
  xr_matcher *m;
  uint64_t last_eval;
  uint64_t eval_every;       /* xr_confirm_eval_interval of the last (0: due) */
  xr_confirm confirm;        /* the deadlock/hang policy's state */
  int confirm_init;
  pconn pre[XR_PREAUTH_MAX];
  uint64_t accept_rest_until;
  uint64_t rejects[REJ__COUNT];
  uint64_t accepted, authed;
  int reported_reject;
  int self_pid;              /* the hosting process (its own client connection) */
  int lingering;             /* this is the lingering process: it reports nothing */
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
  /* The text goes into other ranks' stories: nothing in it may forge a line. */
  xr_sanitize_text(s->sites[h].text, sizeof s->sites[h].text, in->text, false);
}

/* ---- closing and writing authenticated connections ---- */

static void conn_closed(int i, int end) {
  sconn *s = &K.c[i];
  if (s->open) close(s->fd);
  s->open = 0;
  s->fd = -1;
  s->st.alive = 0;
  if (!s->end) s->end = end;
  if (s->authed && !s->detached) {
    if (s->end == END_LOST) {
      /* Lost, not gone: forget its state (its counterparts are unknown from
       * now on, as for a process that detached). */
      s->detached = 1;
      if (s->has_state) xr_state_free(&s->st);
      s->has_state = 0;
    } else if (K.m && s->end == END_DIED) {
      xr_matcher_conn_died(K.m, i);
    } else if (K.m) {
      xr_matcher_conn_gone(K.m, i);
    }
  }
  xr_buf_free(&s->in);
  xr_buf_free(&s->out);
  xr_buf_free(&s->wire);
}

/* The end a socket error means: a timeout or an unreachable path is a lost
 * connection, anything else (end of file, reset) a dead process. */
static int end_of_errno(int e) {
  return e == ETIMEDOUT || e == EHOSTUNREACH || e == ENETUNREACH || e == ENETDOWN ||
                 e == EHOSTDOWN
             ? END_LOST
             : END_DIED;
}

static void conn_write(int i) {
  sconn *s = &K.c[i];
  if (!s->open || (!s->out.len && !s->wire.len)) return;
  int r = xr_write_sealed(s->fd, &s->out, &s->wire, &s->tx);
  if (r == XR_WRITE_DEAD) conn_closed(i, end_of_errno(errno));
  else if (r == XR_WRITE_FULL) conn_closed(i, END_LOST); /* it reads nothing */
}

/* ---- matcher callbacks ---- */

static void send_to(int conn, xr_msgtype t, const void *p, size_t n) {
  if (conn < 0 || conn >= K.nc || !K.c[conn].open) return;
  if (!xr_out_msg(&K.c[conn].out, t, p, n)) conn_closed(conn, END_LOST);
  else K.c[conn].last_tx = xr_now_ns();
}

static void m_verdict(void *ctx, int conn, const xr_verdict *v) {
  (void)ctx;
  if (conn < 0 || conn >= K.nc || !K.c[conn].open) return;
  sconn *s = &K.c[conn];
  size_t need = sizeof(xr_hdr) + 128 + XR_MAX_TEXT + XR_MAX_JSON;
  if (!xr_buf_reserve(&s->out, need, XR_OUT_MAX) ||
      !xr_put_verdict(s->out.p, s->out.cap, &s->out.len, v))
    conn_closed(conn, END_LOST);
  else
    s->last_tx = xr_now_ns();
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
  rec->version = XR_IDREC_VERSION;
  rec->family = 4;
  rec->port = sin.sin_port;
  memcpy(rec->addr, &sin.sin_addr.s_addr, 4);
  memcpy(rec->token, token, XR_TOKEN_BYTES);
  rec->pid = (uint32_t)getpid();
  K.self_pid = getpid();
  rec->check = (uint32_t)a2a_hash_bytes(rec, offsetof(xr_idrec, check), 0x1d);
  xr_secret_init(&K.secret, token);
  K.rec = *rec;
  for (int i = 0; i < XR_PREAUTH_MAX; i++) K.pre[i].fd = -1;
  if (!K.m) {
    xr_match_out out = {.ctx = NULL, .verdict = m_verdict, .site_name = m_site};
    K.m = xr_matcher_new(&out);
  }
  atomic_store(&K.lfd, fd);
  return 0;
}

size_t xr_coord_other_clients(void) {
  /* The host's own connection is told by the pid the listener was made in:
   * in the lingering process (another pid) it is still the host's. */
  size_t n = 0;
  for (int i = 0; i < K.nc; i++)
    if (K.c[i].open && K.c[i].authed && !K.c[i].bye && K.c[i].pid != K.self_pid) n++;
  return n;
}

size_t xr_coord_peers_left(void) {
  size_t n = xr_coord_other_clients();
  for (int p = 0; p < XR_PREAUTH_MAX; p++) n += K.pre[p].fd >= 0;
  return n;
}

/* ---- before authentication ---- */

static void addr_text(uint32_t ip, uint16_t port, char *out, size_t cap) {
  char a[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &ip, a, sizeof a);
  snprintf(out, cap, "%s:%u", a, ntohs(port));
}

static void pre_close(int p, int why) {
  pconn *c = &K.pre[p];
  if (c->fd < 0) return;
  close(c->fd);
  c->fd = -1;
  if (why < 0) return;
  K.rejects[why]++;
  /* An idle connection that timed out or was evicted is noise; a peer that
   * spoke the protocol wrongly is news: said once, with the address. Every
   * kind is counted for the summary at exit. */
  if (!K.reported_reject && !K.lingering && (why == REJ_bad_hello || why == REJ_bad_auth)) {
    K.reported_reject = 1;
    char from[24], at[24], msg[640];
    addr_text(c->src, c->sport, from, sizeof from);
    addr_text(*(const uint32_t *)(const void *)K.rec.addr, K.rec.port, at, sizeof at);
    snprintf(msg, sizeof msg,
             "a connection from %s to this process's cross-rank coordinator at %s %s; it was "
             "closed and nothing it sent was used. Another process may be probing the port, "
             "or a process of another job or a2acheck version uses the address. Connections "
             "that do not authenticate are closed within 2 s under a flood, 15 s otherwise (at most %d at a time, %d per "
             "address) and cost the job nothing else; further ones are only counted (the "
             "totals are reported at exit).",
             from, at, rej_text[why], XR_PREAUTH_MAX, XR_PREAUTH_PER_SRC);
    xr_report(A2A_CK_AUTH_FAILED, A2A_SEV_WARNING, NULL, 0, msg, true);
  }
}

/* Whether a should be evicted before b: one that sent nothing yet first,
 * then the older. */
static bool evict_before(const pconn *a, const pconn *b) {
  if (a->step != b->step) return a->step < b->step;
  return a->t_open < b->t_open;
}

/* A slot for a new connection from src, evicting if needed. */
static int pre_slot(uint32_t src) {
  int free_i = -1, nsrc = 0, old_src = -1, old_any = -1;
  for (int i = 0; i < XR_PREAUTH_MAX; i++) {
    pconn *c = &K.pre[i];
    if (c->fd < 0) {
      if (free_i < 0) free_i = i;
      continue;
    }
    if (c->src == src) {
      nsrc++;
      if (old_src < 0 || evict_before(c, &K.pre[old_src])) old_src = i;
    }
    if (old_any < 0 || evict_before(c, &K.pre[old_any])) old_any = i;
  }
  int v = nsrc >= XR_PREAUTH_PER_SRC ? old_src : free_i >= 0 ? free_i : old_any;
  if (K.pre[v].fd >= 0) pre_close(v, REJ_evicted);
  return v;
}

/* The client proved itself: an authenticated connection. */
static void promote(int p, uint64_t now) {
  pconn *c = &K.pre[p];
  if (K.nc >= MAX_SCONNS) { pre_close(p, -1); return; }
  if (K.nc % 64 == 0) {
    sconn *nc = realloc(K.c, (size_t)(K.nc + 64) * sizeof *nc);
    if (!nc) { pre_close(p, -1); return; }
    K.c = nc;
  }
  int i = K.nc++;
  sconn *s = &K.c[i];
  memset(s, 0, sizeof *s);
  s->fd = c->fd;
  s->open = 1;
  s->authed = 1;
  s->t_open = now;
  s->last_tx = now;
  xr_auth_session(&K.secret, &c->hello, &c->chal, &s->rx, &s->tx);
  s->pid = c->hello.pid;
  s->grank = c->hello.grank;
  xr_sanitize_text(s->host, sizeof s->host, c->hello.host, false);
  addr_text(c->src, c->sport, s->addr, sizeof s->addr);
  c->fd = -1; /* the descriptor moved */
  K.authed++;
  xr_matcher_hello(K.m, i, s->pid, s->grank, s->host);
}

/* Read what the handshake step expects, never more. */
static void pre_read(int p, uint64_t now) {
  pconn *c = &K.pre[p];
  while (c->fd >= 0) {
    uint16_t type = c->step == 1 ? XR_MSG_HELLO : XR_MSG_AUTH;
    size_t plen = c->step == 1 ? sizeof(xr_hello) : sizeof(xr_auth);
    size_t want = sizeof(xr_hdr) + plen - c->have;
    ssize_t k = recv(c->fd, c->buf + c->have, want, MSG_DONTWAIT);
    if (k == 0) { pre_close(p, REJ_closed); return; }
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) pre_close(p, REJ_closed);
      return;
    }
    c->have += (size_t)k;
    int r = xr_hs_check(c->buf, c->have, type, plen);
    if (r < 0) { pre_close(p, c->step == 1 ? REJ_bad_hello : REJ_bad_auth); return; }
    if (r == 0) return; /* more later */
    c->have = 0;
    if (c->step == 1) {
      memcpy(&c->hello, c->buf + sizeof(xr_hdr), sizeof c->hello);
      if (c->hello.version != XR_PROTO_VERSION || c->hello.flags != 0 ||
          !memchr(c->hello.host, 0, sizeof c->hello.host)) {
        pre_close(p, REJ_bad_hello);
        return;
      }
      memset(&c->chal, 0, sizeof c->chal);
      c->chal.version = XR_PROTO_VERSION;
      xr_random(c->chal.nonce, sizeof c->chal.nonce);
      xr_auth_coord_proof(&K.secret, &c->hello, c->chal.nonce, c->chal.proof);
      uint8_t out[sizeof(xr_hdr) + sizeof(xr_challenge)];
      size_t n = 0;
      xr_put(out, sizeof out, &n, XR_MSG_CHALLENGE, &c->chal, sizeof c->chal);
      /* A fresh socket's send buffer takes 68 bytes; anything less means
       * the peer is gone. */
      if (send(c->fd, out, n, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)n) {
        pre_close(p, REJ_closed);
        return;
      }
      c->step = 2;
    } else {
      xr_auth a;
      memcpy(&a, c->buf + sizeof(xr_hdr), sizeof a);
      uint8_t want_proof[XR_PROOF_BYTES];
      xr_auth_client_proof(&K.secret, &c->hello, &c->chal, want_proof);
      if (!xr_ct_equal(want_proof, a.proof, sizeof want_proof)) {
        pre_close(p, REJ_bad_auth);
        return;
      }
      promote(p, now);
      return;
    }
  }
}

static void accept_some(int lfd, uint64_t now) {
  if (now < K.accept_rest_until) return;
  struct rlimit rl;
  uint64_t fd_cap = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                        ? (uint64_t)rl.rlim_cur
                        : UINT64_MAX;
  for (int tries = 0; tries < 32; tries++) {
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    memset(&sa, 0, sizeof sa);
    int fd = accept4(lfd, (struct sockaddr *)&sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        /* Out of descriptors or memory: the backlog waits (real clients
         * retry); polling it now would only spin. */
        K.accept_rest_until = now + 100000000ull;
        K.rejects[REJ_fd_reserve]++;
      }
      return;
    }
    /* Descriptors are allocated lowest first: this one's number is a lower
     * bound of the descriptors the process has open. */
    if (fd_cap != UINT64_MAX && (uint64_t)fd + XR_FD_RESERVE >= fd_cap) {
      close(fd);
      K.rejects[REJ_fd_reserve]++;
      K.accept_rest_until = now + 50000000ull;
      return;
    }
    K.accepted++;
    uint32_t src = sa.sin_family == AF_INET ? sa.sin_addr.s_addr : 0;
    int p = pre_slot(src);
    pconn *c = &K.pre[p];
    memset(c, 0, sizeof *c);
    c->fd = fd;
    c->step = 1;
    c->src = src;
    c->sport = sa.sin_port;
    c->t_open = now;
    int one = 1;
    unsigned uto = XR_USER_TIMEOUT_MS;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &uto, sizeof uto);
    pre_read(p, now); /* a real client's HELLO is usually there already */
  }
}

static void pre_expire(uint64_t now) {
  int open = 0;
  for (int p = 0; p < XR_PREAUTH_MAX; p++) open += K.pre[p].fd >= 0;
  uint64_t limit = open > XR_PREAUTH_CALM ? XR_AUTH_DEADLINE_NS : XR_AUTH_DEADLINE_CALM_NS;
  for (int p = 0; p < XR_PREAUTH_MAX; p++)
    if (K.pre[p].fd >= 0 && now - K.pre[p].t_open > limit) pre_close(p, REJ_timeout);
}

/* ---- poll set ---- */

/* What each poll entry is: -1 the listener, -2 - p pre-auth slot p, i >= 0
 * authenticated connection i. */
static int g_pmap[1 + XR_PREAUTH_MAX + MAX_SCONNS];

size_t xr_coord_pollfds(struct pollfd *pfd, size_t max) {
  int lfd = atomic_load(&K.lfd);
  if (lfd < 0 || max == 0) return 0;
  size_t n = 0;
  if (xr_now_ns() >= K.accept_rest_until) {
    g_pmap[n] = -1;
    pfd[n++] = (struct pollfd){.fd = lfd, .events = POLLIN};
  }
  for (int p = 0; p < XR_PREAUTH_MAX && n < max; p++)
    if (K.pre[p].fd >= 0) {
      g_pmap[n] = -2 - p;
      pfd[n++] = (struct pollfd){.fd = K.pre[p].fd, .events = POLLIN};
    }
  for (int i = 0; i < K.nc && n < max; i++)
    if (K.c[i].open) {
      g_pmap[n] = i;
      pfd[n++] = (struct pollfd){
          .fd = K.c[i].fd,
          .events = (short)(POLLIN | (K.c[i].out.len || K.c[i].wire.len ? POLLOUT : 0))};
    }
  return n;
}

/* One message from client i. Returns -1 on a protocol error. */
static int handle(int i, const xr_hdr *h, const uint8_t *pl, uint64_t now) {
  sconn *s = &K.c[i];
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
    xr_matcher_comm_end(K.m, i, e.comm, e.rank, e.how);
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
    s->end = END_BYE;
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

/* Answer the FLUSH requests that are settled: nothing of the process is
 * waiting for a counterpart any more (every verdict about it was queued
 * before this answer), or the request is older than a client waits. Runs
 * after every batch of input (an exiting process waits for the answer:
 * at the next tick it came up to 100 ms late, the whole of a clean
 * process's exit time) and on the tick. */
static void flush_check(uint64_t now) {
  for (int i = 0; i < K.nc; i++) {
    sconn *s = &K.c[i];
    if (!s->open || !s->flush_pending) continue;
    if (xr_matcher_pending(K.m, i) == 0 || now - s->flush_since > 2500000000ull) {
      xr_flush f = {.token = 1};
      send_to(i, XR_MSG_FLUSHED, &f, sizeof f);
      s->flush_pending = 0;
    }
  }
}

/* Input of authenticated connection i: sealed frames only. */
static void conn_input(int i, uint64_t now) {
  sconn *s = &K.c[i];
  errno = 0;
  int rr = xr_sock_read(s->fd, &s->in, XR_IN_MAX);
  int rerr = errno;
  size_t off = 0;
  for (;;) {
    xr_hdr h;
    const uint8_t *pl;
    size_t used;
    int fr = xr_frame(s->in.p + off, s->in.len - off, &h, &pl, &used);
    if (fr == 0) break;
    /* A frame that is malformed or whose seal is wrong was not sent by the
     * client we authenticated (or the stream is corrupt): the connection is
     * lost, and nothing in the frame is used. */
    if (fr < 0 || xr_unseal(&s->rx, s->in.p + off, &h) != 0 || handle(i, &h, pl, now) != 0) {
      conn_closed(i, END_LOST);
      return;
    }
    off += used;
    if (!s->open) return;
  }
  if (rr < 0) { conn_closed(i, s->bye ? END_BYE : rerr ? end_of_errno(rerr) : END_DIED); return; }
  xr_buf_consume(&s->in, off);
}

void xr_coord_io(const struct pollfd *pfd, size_t n, uint64_t now) {
  int lfd = atomic_load(&K.lfd);
  if (lfd < 0) return;
  for (size_t j = 0; j < n; j++) {
    int m = g_pmap[j];
    short re = pfd[j].revents;
    if (!re) continue;
    if (m == -1) {
      if (pfd[j].fd == lfd) accept_some(lfd, now);
    } else if (m <= -2) {
      int p = -2 - m;
      if (K.pre[p].fd == pfd[j].fd) pre_read(p, now);
    } else if (m < K.nc && K.c[m].open && K.c[m].fd == pfd[j].fd) {
      if (re & (POLLIN | POLLHUP | POLLERR)) conn_input(m, now);
      if (K.c[m].open) conn_write(m);
    }
  }
  pre_expire(now);
  if (K.m) xr_matcher_tick(K.m, now);
  /* Input may have settled a waiting rank (its peers' records arrived). */
  cflush_check(now);
  flush_check(now);
  for (int i = 0; i < K.nc; i++) conn_write(i);
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
      ps[k].died = !K.c[i].open && K.c[i].end == END_DIED;
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
  pre_expire(now);
  if (K.m) xr_matcher_tick(K.m, now);
  cflush_check(now);
  flush_check(now);
  for (int i = 0; i < K.nc; i++) {
    sconn *s = &K.c[i];
    if (!s->open) continue;
    /* Something unacknowledged on every connection, so a dead path times
     * out (TCP_USER_TIMEOUT) even while the coordinator has nothing to say. */
    if (s->open && now - s->last_tx >= XR_PING_NS) {
      xr_ping pg = {.n = now};
      send_to(i, XR_MSG_PING, &pg, sizeof pg);
    }
  }
  if (now - K.last_eval >= K.eval_every) {
    /* The cadence from the evaluation's CPU time (this thread's: a
     * preempted evaluation is not a costly one). */
    K.last_eval = now;
    struct timespec c0, c1;
    int timed = clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0) == 0;
    evaluate(now);
    uint64_t cost = 0;
    if (timed && clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1) == 0)
      cost = (uint64_t)(c1.tv_sec - c0.tv_sec) * 1000000000ull + (uint64_t)c1.tv_nsec -
             (uint64_t)c0.tv_nsec;
    K.eval_every = xr_confirm_eval_interval(&K.confirm, cost); /* evaluate() set K.confirm up */
  }
  for (int i = 0; i < K.nc; i++) conn_write(i);
}

void xr_coord_announce_end(const char *check) {
  if (atomic_load(&K.lfd) < 0) return;
  char text[512];
  snprintf(text, sizeof text,
           "the cross-rank coordinator ends with its process (pid %d): a2acheck's failure policy "
           "ends that process on %s (see its log). Cross-rank checks stop here; this process keeps "
           "its own checks.",
           K.self_pid, check ? check : "a finding");
  xr_verdict v = {.severity = A2A_SEV_INFO, .check = A2A_CK_NO_COORDINATOR, .text = text};
  for (int i = 0; i < K.nc; i++)
    if (K.c[i].open && K.c[i].authed && !K.c[i].bye && K.c[i].pid != K.self_pid) m_verdict(NULL, i, &v);
}

void xr_coord_linger(uint64_t max_ns) {
  if (atomic_load(&K.lfd) < 0) return;
  uint64_t t0 = xr_now_ns();
  static struct pollfd pfd[1 + XR_PREAUTH_MAX + MAX_SCONNS];
  while (xr_coord_other_clients() > 0 && xr_now_ns() - t0 < max_ns) {
    for (int i = 0; i < K.nc; i++) conn_write(i);
    size_t n = xr_coord_pollfds(pfd, sizeof pfd / sizeof pfd[0]);
    if (poll(pfd, n, 10) < 0) continue;
    xr_coord_io(pfd, n, xr_now_ns());
  }
}

void xr_coord_report_totals(void) {
  if (atomic_load(&K.lfd) < 0 || K.lingering) return;
  uint64_t total = 0;
  for (int r = 0; r < REJ__COUNT; r++) total += K.rejects[r];
  /* Evictions and refusals are counted with the flood that caused them;
   * clean runs (every connection authenticated) say nothing. */
  if (!total) return;
  char at[24], msg[1024];
  addr_text(*(const uint32_t *)(const void *)K.rec.addr, K.rec.port, at, sizeof at);
  size_t len = (size_t)snprintf(msg, sizeof msg,
                                "the cross-rank coordinator at %s accepted %" PRIu64
                                " connections, %" PRIu64 " of which authenticated; of the others",
                                at, K.accepted, K.authed);
  for (int r = 0; r < REJ__COUNT && len < sizeof msg; r++)
    if (K.rejects[r])
      len += (size_t)snprintf(msg + len, sizeof msg - len, "%s %" PRIu64 " %s", len ? "," : "",
                              K.rejects[r], rej_text[r]);
  if (len < sizeof msg)
    snprintf(msg + len, sizeof msg - len,
             ". None of them was used; the job's ranks were served meanwhile.");
  xr_report(A2A_CK_AUTH_FAILED, A2A_SEV_WARNING, NULL, 0, msg, false);
}

void xr_coord_after_fork_child(void) {
  /* The child never hosts: close the inherited listener and connections
   * (the parent's copies stay open) and forget the tables. */
  int lfd = atomic_load(&K.lfd);
  if (lfd >= 0) close(lfd);
  for (int i = 0; i < K.nc; i++)
    if (K.c[i].open) close(K.c[i].fd);
  for (int p = 0; p < XR_PREAUTH_MAX; p++)
    if (K.pre[p].fd >= 0 && lfd >= 0) close(K.pre[p].fd);
  memset(&K, 0, sizeof K);
  atomic_store(&K.lfd, -1);
}

/* ---- outliving the host's exit (the lingering process) ---- */

void xr_coord_release(void) {
  /* The lingering process owns the sockets now: close this process's
   * copies (close only: a shutdown would end them for both) and stop
   * hosting. Nothing is freed: the process is exiting. */
  int lfd = atomic_exchange(&K.lfd, -1);
  if (lfd < 0) return;
  close(lfd);
  for (int p = 0; p < XR_PREAUTH_MAX; p++)
    if (K.pre[p].fd >= 0) { close(K.pre[p].fd); K.pre[p].fd = -1; }
  for (int i = 0; i < K.nc; i++)
    if (K.c[i].open) { close(K.c[i].fd); K.c[i].open = 0; K.c[i].fd = -1; }
  K.nc = 0;
}

static bool fd_kept(int fd) {
  if (fd == atomic_load(&K.lfd)) return true;
  for (int p = 0; p < XR_PREAUTH_MAX; p++)
    if (K.pre[p].fd == fd) return true;
  for (int i = 0; i < K.nc; i++)
    if (K.c[i].open && K.c[i].fd == fd) return true;
  return false;
}

/* Close every descriptor the host had except the coordinator's: its log
 * files, its pipes to the launcher (a reader waiting for end of file must
 * get it when the host ends), the host's own client end of its connection
 * (the coordinator must see it close), NCCL's and the GPU driver's files
 * (a device stays in use while any process holds them). */
static void close_all_but_coordinator(void) {
  struct rlimit rl;
  long max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (long)rl.rlim_cur
                                                                                 : 1L << 20;
  for (long fd = 0; fd < max; fd++) {
    if (fd_kept((int)fd)) continue;
    /* Ranges up to the next kept descriptor in one call where the kernel
     * has close_range (5.9); else one by one (bounded by the limit). */
    long next = max;
    for (int i = 0; i < K.nc; i++)
      if (K.c[i].open && K.c[i].fd > fd && K.c[i].fd < next) next = K.c[i].fd;
    for (int p = 0; p < XR_PREAUTH_MAX; p++)
      if (K.pre[p].fd > fd && K.pre[p].fd < next) next = K.pre[p].fd;
    int lfd = atomic_load(&K.lfd);
    if (lfd > fd && lfd < next) next = lfd;
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)fd, (unsigned)(next - 1), 0u) == 0) {
      fd = next - 1;
      continue;
    }
#endif
    close((int)fd);
  }
  /* 0-2 lead nowhere, so that nothing written there can reach a socket
   * that would otherwise get one of those numbers. */
  int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int fd = 0; fd <= 2 && nul >= 0; fd++)
    if (fd != nul && !fd_kept(fd)) dup2(nul, fd);
  if (nul > 2) close(nul);
}

/* Unmap what the host mapped from device files (/dev/nvidia*, /dev/shm
 * segments of NCCL's transports, InfiniBand): the driver keeps a device's
 * resources while a mapping exists. /dev/zero (shared anonymous memory)
 * stays: an allocator may hold it. */
static void unmap_devices(void) {
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  while (buf) {
    if (len + 4096 > cap) {
      char *nb = realloc(buf, cap * 2);
      if (!nb) break;
      buf = nb;
      cap *= 2;
    }
    ssize_t k = read(fd, buf + len, cap - len - 1);
    if (k <= 0) break;
    len += (size_t)k;
  }
  close(fd);
  if (!buf) return;
  buf[len] = 0;
  for (char *line = buf, *nl; line && *line; line = nl) {
    nl = strchr(line, '\n');
    if (nl) *nl++ = 0;
    unsigned long lo, hi;
    int path_at = 0;
    if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &path_at) < 2 || !path_at) continue;
    const char *path = line + path_at;
    if (!strncmp(path, "/dev/", 5) && strncmp(path, "/dev/zero", 9) != 0 && hi > lo)
      munmap((void *)lo, hi - lo);
  }
  free(buf);
}

_Noreturn void xr_coord_serve_detached(uint64_t max_ns) {
  K.lingering = 1;
  close_all_but_coordinator();
  unmap_devices();
  if (chdir("/") != 0) { /* keeps the host's directory busy, nothing else */ }
  prctl(PR_SET_NAME, "a2acheck-coord", 0, 0, 0);
  /* The host's handlers (Python's, the application's) would run code of a
   * process that no longer exists here: the defaults, so that the job's
   * signals (Ctrl-C to its process group, the launcher's SIGTERM) end this
   * process too. The background thread blocked every signal: unblock. */
  for (int sig = 1; sig < NSIG; sig++)
    if (sig != SIGKILL && sig != SIGSTOP) signal(sig, sig == SIGPIPE ? SIG_IGN : SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  static struct pollfd pfd[1 + XR_PREAUTH_MAX + MAX_SCONNS];
  uint64_t t0 = xr_now_ns(), last_tick = 0;
  for (uint64_t now = t0; xr_coord_peers_left() > 0 && now - t0 < max_ns; now = xr_now_ns()) {
    for (int i = 0; i < K.nc; i++) conn_write(i);
    size_t n = xr_coord_pollfds(pfd, sizeof pfd / sizeof pfd[0]);
    if (poll(pfd, n, 20) > 0) xr_coord_io(pfd, n, xr_now_ns());
    now = xr_now_ns();
    if (now - last_tick >= 100000000ull) {
      xr_coord_tick(now);
      last_tick = now;
    }
  }
  for (int i = 0; i < K.nc; i++) conn_write(i);
  _exit(0);
}
