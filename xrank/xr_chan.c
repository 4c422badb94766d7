/* xr_chan.c - the process side of cross-rank checking: the background
 * thread, the client connections to the coordinators, launch-unit tracking
 * with completion polling, progress reports, verdicts -> findings, exit
 * flush, and fork handling (see xr_internal.h and docs/design.md).
 *
 * Lifecycle:
 *  - the thread starts lazily: on the first record the analyzer pushes
 *    (first communicator) or when this process creates an ncclUniqueId
 *    (then it also hosts a coordinator); never in a constructor, never when
 *    A2ACHECK_DISABLE=1 (the analyzer is inactive then);
 *  - in a forked child the thread does not exist: everything inherited is
 *    dropped (sockets closed, tables forgotten) and a new thread starts on
 *    the child's first record; the child never acts as the coordinator;
 *  - at exit (A2A_EV_PROCESS_EXIT) the thread drains the queue, sends a
 *    last report, asks each coordinator to confirm its operations were
 *    matched (FLUSH, bounded wait) so mismatch findings land in this
 *    process's log, says BYE, and stops.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "a2a_core.h"
#include "xr_internal.h"
#include "xrank_match.h"

pthread_mutex_t g_xr_mu = PTHREAD_MUTEX_INITIALIZER;

uint64_t xr_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- buffers and sockets ------------------------------------------ */

bool xr_buf_reserve(xr_buf *b, size_t more, size_t max) {
  if (b->len + more <= b->cap) return true;
  if (b->len + more > max) return false;
  size_t nc = b->cap ? b->cap : 4096;
  while (nc < b->len + more) nc *= 2;
  if (nc > max) nc = max;
  uint8_t *np = realloc(b->p, nc);
  if (!np) return false;
  b->p = np;
  b->cap = nc;
  return true;
}

void xr_buf_consume(xr_buf *b, size_t n) {
  if (n >= b->len) { b->len = 0; return; }
  memmove(b->p, b->p + n, b->len - n);
  b->len -= n;
}

void xr_buf_free(xr_buf *b) { free(b->p); memset(b, 0, sizeof *b); }

int xr_sock_write(int fd, xr_buf *out) {
  size_t off = 0;
  while (off < out->len) {
    ssize_t k = send(fd, out->p + off, out->len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k > 0) { off += (size_t)k; continue; }
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    xr_buf_consume(out, off);
    return -1;
  }
  xr_buf_consume(out, off);
  return 0;
}

int xr_sock_read(int fd, xr_buf *in, size_t max) {
  for (;;) {
    if (!xr_buf_reserve(in, 65536, max) && in->cap - in->len == 0) {
      /* Full. The buffer starts at a frame boundary (callers consume whole
       * frames), and a frame of at most max bytes is complete in it: the
       * caller takes the frames and reads the rest at the next poll (a burst
       * of small frames is not an error). Only a first frame larger than
       * max can never complete. */
      xr_hdr h;
      if (in->len >= sizeof h) {
        memcpy(&h, in->p, sizeof h);
        if (sizeof h + (size_t)h.len <= in->len) return 0;
      }
      errno = EMSGSIZE;
      return -1;
    }
    size_t room = in->cap - in->len;
    ssize_t k = recv(fd, in->p + in->len, room, MSG_DONTWAIT);
    if (k > 0) { in->len += (size_t)k; if ((size_t)k < room) return 0; continue; }
    if (k == 0) { errno = 0; return -1; }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    return -1;
  }
}

int xr_write_sealed(int fd, xr_buf *out, xr_buf *wire, xr_mac *tx) {
  size_t off = 0;
  while (off < out->len) {
    xr_hdr h;
    memcpy(&h, out->p + off, sizeof h);
    size_t n = sizeof h + h.len;
    if (!xr_buf_reserve(wire, n + XR_TAG_BYTES, XR_OUT_MAX)) {
      xr_buf_consume(out, off);
      return XR_WRITE_FULL;
    }
    memcpy(wire->p + wire->len, out->p + off, n);
    xr_seal(tx, wire->p + wire->len, n, wire->cap - wire->len);
    wire->len += n + XR_TAG_BYTES;
    off += n;
  }
  xr_buf_consume(out, off);
  return xr_sock_write(fd, wire) < 0 ? XR_WRITE_DEAD : XR_WRITE_OK;
}

bool xr_out_msg(xr_buf *out, xr_msgtype type, const void *payload, size_t plen) {
  if (!xr_buf_reserve(out, sizeof(xr_hdr) + plen, XR_OUT_MAX)) return false;
  return xr_put(out->p, out->cap, &out->len, type, payload, plen);
}

/* ---- client state (background thread only) ------------------------ */

/* A client connection: WAIT (between attempts, no socket) -> CONNECTING ->
 * HANDSHAKE (HELLO sent, CHALLENGE awaited) -> READY (the coordinator
 * proved it knows the secret; AUTH sent; everything sealed) -> DEAD.
 * Messages queued before READY wait in `out`; nothing but HELLO and AUTH
 * leaves this process before the coordinator proved itself. */
enum { CC_WAIT, CC_CONNECTING, CC_HANDSHAKE, CC_READY, CC_DEAD };

/* Attempts: a connection that is closed or silent before the coordinator
 * proved itself is tried again (a flooded coordinator evicts pending
 * connections), and so is a refused one to A2ACHECK_COORDINATOR (it may not
 * listen yet), with doubling pauses from 50 ms to 1 s, for XR_RETRY_NS from
 * the first try. A coordinator that answers with a wrong proof is never
 * retried. */
#define XR_ATTEMPT_NS 3000000000ull
#define XR_RETRY_NS 8000000000ull

typedef struct cconn {
  int fd, state;
  xr_idrec rec;
  xr_secret secret;
  uint64_t t_first, t_start, t_ready, next_try;
  int attempts, refused, closed;  /* failed attempts, by kind */
  xr_hello hello;                 /* this attempt's (the transcript) */
  uint8_t hs[sizeof(xr_hdr) + sizeof(xr_challenge)];
  size_t hs_have;
  xr_mac tx, rx;
  xr_buf in, out, wire;
  uint64_t *sites;          /* open-addressing set of sites already sent */
  size_t capsites, nsites;
  xr_op batch[256];
  uint32_t nbatch;
  uint64_t batch_t0;        /* when the batch's first operation came */
  int flushed;              /* FLUSHED received */
  int bye_sent;
  int lost;                 /* it was READY, then the connection died */
  int ending;               /* the coordinator said it ends with its process
                               (xr_coord_announce_end): its close is no news */
  char desc[96];
} cconn;

typedef struct ccomm {
  uint64_t id, parent;
  const a2a_comm *c;
  int32_t rank, nranks;
  int conn;                 /* -1: cross-rank checks off for it */
  const char *nocoord;      /* why conn < 0, reported once the comm exists */
  uint64_t site;            /* init call site */
  int ended;
  uint32_t coll_posted, units;
  uint32_t last_kind;       /* the last operation posted on it (stories) */
  uint64_t last_site;
  uint32_t poster;          /* xr_commstate.poster: 0 unknown ... */
  int op_seen;              /* (an operation was posted: poster is its thread) */
  int posters_many;         /* ... or two threads posted */
  uint32_t (*cnt)[2];       /* per peer: sends posted, receives posted */
} ccomm;

typedef struct cunit {
  ccomm *cc;
  uint32_t thread;
  uint64_t stream;
  void *event;
  int device;               /* the event's pool */
  int closed, owner;        /* owner: releases the event */
  uint32_t await_run;       /* closed, its marker not received yet (xrank.c) */
  uint32_t await_gen;
  uint64_t await_since;     /* when the background thread saw it closed */
  uint64_t site, count;
  uint32_t group, coll_lo, coll_hi;
  int16_t kind;
  int8_t coll, dtype;
  uint8_t bcast;            /* coll called as ncclBcast (XR_UNIT_BCAST) */
  xr_peerent *peers;
  uint32_t npeers, cappeers;
  struct cunit *next, *prev;   /* every unit, in posting order (S.head) */
  struct cunit *snext, *sprev; /* its (thread, stream) queue */
} cunit;

/* The units of one (thread, stream), in posting order: the stream runs
 * them in that order, so only the head can complete next, and the open
 * ones (posted into a group not yet ended) are the tail from `open` on.
 * Records and polls touch one queue and its head or tail: their cost does
 * not grow with the operations in flight. */
typedef struct squeue {
  uint32_t thread;
  uint64_t stream;
  cunit *head, *tail, *open;
} squeue;

#define MAX_CONNS 64
#define MAX_COMMS 4096

static struct {
  cconn conns[MAX_CONNS];
  int nconns;
  ccomm *comms[MAX_COMMS];
  int ncomms;
  cunit *head, *tail;
  squeue *sq;               /* one per (thread, stream) with units */
  int nsq, capsq;
  uint32_t state_version;
  uint64_t last_state_ns;
  int reported_drops;
  int failing;              /* a fail verdict was acted on */
  struct { uint32_t slot; int conn; } ewait[64]; /* COMMFLUSH sent, unanswered */
  xr_idrec fallback;        /* A2ACHECK_COORDINATOR record */
  int fallback_state;       /* 0 untried, 1 ok, -1 failed */
  const char *fallback_why; /* why it failed, for the per-comm finding */
  /* Local watchdog (coordinator lost): the last time this process made
   * progress (an operation posted, a unit completed). */
  uint64_t last_progress_ns, t_lost;
  int nlost, hang_reported;
} S;

/* The background thread holds g_work_mu except while it sleeps in poll():
 * a fork (pthread_atfork prepare) waits for it to be there, so the child
 * never inherits a lock the thread held mid-work (an allocator's, the
 * loader's in dladdr, the runtime's log lock in a2a_report). */
static pthread_mutex_t g_work_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_atfork_done;
/* Set on the background thread around its own forks (linger_fork): it
 * holds g_work_mu then, and the child keeps the state as it is. */
static __thread int t_own_fork;
/* Set on the background thread (thread_main): its findings are patient
 * (a2a_finding.patient) - it never reports from inside the loader. */
static __thread bool t_channel;
static bool on_channel_thread(void) { return t_channel; }
/* Start-up handshake: set before pthread_create, cleared by the thread once
 * it holds g_work_mu. Until then the new thread is inside its own start-up
 * (the C library's, a sanitizer runtime's: allocator and registry locks)
 * and g_work_mu alone does not keep a fork away from that; a fork waits for
 * the handshake first (bounded: a thread that never runs is not waited for
 * beyond 5 s). Found by ASan: ranks forked then inherited its allocator
 * lock held and hung. */
static _Atomic int g_thread_starting;
static void fork_prepare(void) {
  if (t_own_fork) return;
  for (int i = 0; i < 5000; i++) {
    pthread_mutex_lock(&g_work_mu);
    if (!atomic_load(&g_thread_starting)) return;
    pthread_mutex_unlock(&g_work_mu);
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  pthread_mutex_lock(&g_work_mu);
}
static void fork_parent(void) { if (!t_own_fork) pthread_mutex_unlock(&g_work_mu); }
static void fork_child(void) {
  if (t_own_fork) return;
  pthread_mutex_init(&g_work_mu, NULL);
  atomic_store(&g_thread_starting, 0);
}

/* Thread control (g_xr_mu). */
static pthread_t g_thread;
static int g_thread_running;
static pid_t g_thread_pid;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static _Atomic int g_exit_req;
static int g_exit_done;

/* End-of-comm waits (proc_end_wait*): slots under g_xr_mu. An
 * application thread inside ncclCommDestroy owns a slot from begin to the
 * end of its wait; the background thread marks it done. g_failing_pub
 * mirrors S.failing for application threads. */
#define XR_EWAIT_SLOTS 64
static struct { uint32_t id; int done; } g_ewait[XR_EWAIT_SLOTS];
static uint32_t g_ewait_next;
static _Atomic int g_failing_pub;

/* Background thread: slot id is answered (or can never be). */
static void ewait_done(uint32_t id) {
  if (!id) return;
  for (size_t i = 0; i < sizeof S.ewait / sizeof S.ewait[0]; i++)
    if (S.ewait[i].slot == id) S.ewait[i].slot = 0;
  pthread_mutex_lock(&g_xr_mu);
  for (int i = 0; i < XR_EWAIT_SLOTS; i++)
    if (g_ewait[i].id == id) g_ewait[i].done = 1;
  pthread_cond_broadcast(&g_cv);
  pthread_mutex_unlock(&g_xr_mu);
}

/* The runtime's dedup key of a cross-rank finding: its call site, except
 * - a stall: every stall is news (docs/checks.md: once per stall), and a
 *   later stall at the same call site - every tensor.cpu() waits in the
 *   same cudaStreamSynchronize - is not a repeat of the first: told apart
 *   by their text (the runtime's key without a site);
 * - a mismatch between two ranks (size.*, group.order-mismatch /
 *   init-mismatch / duplicate-device): the coordinator sends each pair of
 *   ranks once per communicator, and one call site of this process stands
 *   for several pairs (every peer of an all_to_all_single, a loop of
 *   ncclSend): the site and the text (which names the pair). */
static const void *finding_key(a2a_check_id check, uint64_t site, const char *msg) {
  if (check == A2A_CK_GROUP_STALL) return NULL;
  bool pair = check == A2A_CK_SIZE_P2P_MISMATCH || check == A2A_CK_SIZE_COLLECTIVE_MISMATCH ||
              check == A2A_CK_SIZE_DTYPE_MISMATCH || check == A2A_CK_SIZE_UNMATCHED_P2P ||
              check == A2A_CK_GROUP_ORDER_MISMATCH || check == A2A_CK_GROUP_INIT_MISMATCH ||
              check == A2A_CK_GROUP_DUPLICATE_DEVICE;
  if (!pair || !site) return (const void *)(uintptr_t)site;
  uint64_t k = site ^ a2a_hash_bytes(msg, strlen(msg), 0x9a1);
  return (const void *)(uintptr_t)(k ? k : 1);
}

static void report_ex(a2a_check_id check, a2a_severity sev, const a2a_comm *c, uint64_t site,
                      const char *msg, const char *json, bool echo) {
  /* This thread's stack means nothing to the user; the operation's own call
   * site (a return address in this process) does: the runtime symbolizes it
   * like any frame ("fn+off (module) at file.c:line"). */
  a2a_stack st = {.n = site ? 1 : 0, .pc = {(void *)(uintptr_t)site}};
  const void *key = finding_key(check, site, msg);
  a2a_finding f = {.check = check, .severity = sev, .site = key,
                   .comm = c, .message = msg, .details_json = json,
                   .stack = site ? &st : NULL, .capture_stack = false, .echo = echo,
                   .patient = on_channel_thread()};
  a2a_report(&f);
}

static void report(a2a_check_id check, a2a_severity sev, const a2a_comm *c, uint64_t site,
                   const char *msg, const char *json) {
  /* A stall is news the user needs while the job still runs. */
  report_ex(check, sev, c, site, msg, json, check == A2A_CK_GROUP_STALL);
}

void xr_report(a2a_check_id check, a2a_severity sev, const a2a_comm *c, uint64_t site,
               const char *msg, bool echo) {
  report_ex(check, sev, c, site, msg, NULL, echo);
}

/* The communicators that use connection k, for messages. */
static void comms_of(const cconn *k, char *out, size_t cap) {
  size_t len = 0;
  int idx = (int)(k - S.conns);
  out[0] = 0;
  for (int i = 0; i < S.ncomms && len + 40 < cap; i++)
    if (S.comms[i]->conn == idx)
      len += S.comms[i]->c
                 ? (size_t)snprintf(out + len, cap - len, "%s%s", len ? ", " : "", S.comms[i]->c->name)
                 : (size_t)snprintf(out + len, cap - len, "%s%016" PRIx64, len ? ", " : "",
                                    S.comms[i]->id);
  if (!len) snprintf(out, cap, "its communicators");
}

#define XR_CHECKS "cross-rank checks (size.*-mismatch, group.order-mismatch, group.deadlock, group.hang)"
#define XR_CHECKS_C "Cross-rank checks (size.*-mismatch, group.order-mismatch, group.deadlock, group.hang)"

/* Connection k ends for good: `what` says how (a sentence fragment after
 * "the cross-rank coordinator at ..."). Before the coordinator proved
 * itself that means it was never used; after, it is lost mid-run: a warning
 * on stderr, and this process's own watchdog (local_watchdog) takes over
 * its pending operations. */
static void conn_end(cconn *k, a2a_check_id check, a2a_severity sev, const char *what) {
  if (k->state == CC_DEAD) return;
  int was_ready = k->state == CC_READY;
  if (k->fd >= 0) close(k->fd);
  k->fd = -1;
  k->state = CC_DEAD;
  xr_buf_free(&k->in);
  xr_buf_free(&k->out);
  xr_buf_free(&k->wire);
  for (size_t i = 0; i < sizeof S.ewait / sizeof S.ewait[0]; i++)
    if (S.ewait[i].slot && S.ewait[i].conn == (int)(k - S.conns)) ewait_done(S.ewait[i].slot);
  uint64_t now = xr_now_ns();
  if (was_ready) {
    k->lost = 1;
    S.nlost++;
    if (!S.t_lost) S.t_lost = now;
  }
  /* Leaving anyway: a coordinator that goes first is no news then; one
   * never reached still is (nothing of this process was checked). */
  if (S.failing || (atomic_load(&g_exit_req) && was_ready) || k->ending) return;
  char comms[512], msg[1400];
  comms_of(k, comms, sizeof comms);
  if (was_ready)
    snprintf(msg, sizeof msg,
             "lost the cross-rank coordinator %s %.1f s after connecting: it %s. "
             XR_CHECKS_C " are off from now on for %s. This process keeps its own checks, "
             "and if its pending operations on them make no progress for "
             "A2ACHECK_HANG_TIMEOUT (%g s) it reports group.hang itself.",
             k->desc, (double)(now - k->t_ready) / 1e9, what, comms,
             a2a_opt ? a2a_opt->hang_timeout : 300.0);
  else
    snprintf(msg, sizeof msg,
             "the cross-rank coordinator %s %s: " XR_CHECKS " are off for %s. The run "
             "continues unchanged.",
             k->desc, what, comms);
  report_ex(check, sev, NULL, 0, msg, NULL, sev >= A2A_SEV_WARNING);
}

static void conn_dead(cconn *k, const char *what) {
  conn_end(k, A2A_CK_NO_COORDINATOR, A2A_SEV_WARNING, what);
}

/* What a socket error means for an authenticated connection. */
static const char *lost_why(int e) {
  switch (e) {
  case 0: return "closed the connection (its process ended or closed it)";
  case ECONNRESET: return "reset the connection (its process ended)";
  case ETIMEDOUT: return "stopped acknowledging for 10 s (its host or the network path to it is down)";
  case EHOSTUNREACH: case ENETUNREACH: case ENETDOWN: case EHOSTDOWN:
    return "became unreachable (the network path to it is down)";
  case EMSGSIZE: return "sent an oversized message";
  default: return "failed (socket error)";
  }
}

static void batch_flush(cconn *k);

/* Every message goes after the operations batched before it: the
 * coordinator relies on each client's messages being in posting order. */
static void conn_send(cconn *k, xr_msgtype t, const void *p, size_t n) {
  if (k->state == CC_DEAD) return;
  batch_flush(k);
  if (k->state == CC_DEAD) return;
  if (!xr_out_msg(&k->out, t, p, n)) conn_dead(k, "does not read its messages (32 MiB unsent)");
}

static void batch_flush(cconn *k) {
  if (!k->nbatch) return;
  if (k->state != CC_DEAD) {
    size_t need = sizeof(xr_hdr) + 8 + k->nbatch * sizeof(xr_op);
    if (!xr_buf_reserve(&k->out, need, XR_OUT_MAX) ||
        !xr_put_ops(k->out.p, k->out.cap, &k->out.len, k->batch, k->nbatch))
      conn_dead(k, "does not read its messages (32 MiB unsent)");
  }
  k->nbatch = 0;
}

static void send_site(cconn *k, uint64_t site) {
  if (!site || k->state == CC_DEAD) return;
  if (k->nsites * 2 >= k->capsites) {
    size_t nc = k->capsites ? k->capsites * 2 : 256;
    if (nc > 65536) return; /* enough: further sites print as hex */
    uint64_t *ns = calloc(nc, sizeof *ns);
    if (!ns) return;
    for (size_t i = 0; i < k->capsites; i++)
      if (k->sites[i]) {
        size_t h = (size_t)(k->sites[i] * 0x9e3779b97f4a7c15ull) & (nc - 1);
        while (ns[h]) h = (h + 1) & (nc - 1);
        ns[h] = k->sites[i];
      }
    free(k->sites);
    k->sites = ns;
    k->capsites = nc;
  }
  size_t h = (size_t)(site * 0x9e3779b97f4a7c15ull) & (k->capsites - 1);
  while (k->sites[h]) {
    if (k->sites[h] == site) return;
    h = (h + 1) & (k->capsites - 1);
  }
  k->sites[h] = site;
  k->nsites++;
  xr_site s = {.site = site};
  a2a_hostsvc->site_text((const void *)(uintptr_t)site, s.text, sizeof s.text);
  conn_send(k, XR_MSG_SITE, &s, sizeof s);
}

static bool idrec_valid(const xr_idrec *r) {
  if (r->magic != XR_IDREC_MAGIC || r->version != XR_IDREC_VERSION || r->family != 4) return false;
  return r->check == (uint32_t)a2a_hash_bytes(r, offsetof(xr_idrec, check), 0x1d);
}

void xr_random(uint8_t *out, size_t n) {
  if (getrandom(out, n, GRND_NONBLOCK) == (ssize_t)n) return;
  /* Before the entropy pool is ready (early boot): /dev/urandom never blocks. */
  size_t got = 0;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  while (fd >= 0 && got < n) {
    ssize_t k = read(fd, out + got, n - got);
    if (k <= 0) break;
    got += (size_t)k;
  }
  if (fd >= 0) close(fd);
  for (uint64_t t[2] = {xr_now_ns(), (uint64_t)getpid()}; got < n; got++)
    out[got] = (uint8_t)(a2a_hash_bytes(t, sizeof t, got) >> 11);
}

static void attempt_failed(cconn *k, uint64_t now, int refused);

/* One attempt: connect (non-blocking) and queue the HELLO. */
static void attempt_start(cconn *k, uint64_t now) {
  k->t_start = now;
  k->hs_have = 0;
  k->in.len = 0;
  k->wire.len = 0;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) { conn_dead(k, "cannot be reached (no socket)"); return; }
  int one = 1;
  unsigned uto = XR_USER_TIMEOUT_MS;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &uto, sizeof uto);
  struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = k->rec.port};
  memcpy(&sin.sin_addr, k->rec.addr, 4);
  k->fd = fd;
  k->state = CC_CONNECTING;
  memset(&k->hello, 0, sizeof k->hello);
  k->hello.version = XR_PROTO_VERSION;
  xr_random(k->hello.nonce, sizeof k->hello.nonce);
  k->hello.pid = (int32_t)getpid();
  k->hello.grank = a2a_hostsvc && a2a_hostsvc->global_rank ? a2a_hostsvc->global_rank() : -1;
  const char *hn = a2a_hostsvc && a2a_hostsvc->hostname ? a2a_hostsvc->hostname() : NULL;
  snprintf(k->hello.host, sizeof k->hello.host, "%s", hn ? hn : "?");
  xr_out_msg(&k->wire, XR_MSG_HELLO, &k->hello, sizeof k->hello);
  if (connect(fd, (struct sockaddr *)&sin, sizeof sin) == 0) {
    k->state = CC_HANDSHAKE;
    if (xr_sock_write(k->fd, &k->wire) < 0) attempt_failed(k, now, 0);
  } else if (errno != EINPROGRESS) {
    attempt_failed(k, now, errno == ECONNREFUSED);
  }
}

/* This attempt failed before the coordinator proved itself; refused:
 * nothing listened. Try again after a pause, for XR_RETRY_NS in all. */
static void attempt_failed(cconn *k, uint64_t now, int refused) {
  if (k->fd >= 0) close(k->fd);
  k->fd = -1;
  k->attempts++;
  if (refused) k->refused++;
  else k->closed++;
  /* An id record's coordinator listened before the id was handed out:
   * refused means it is gone. A2ACHECK_COORDINATOR's may not listen yet
   * (the process that binds it first is still starting). */
  int gone = refused && k->rec.pid && !k->closed;
  if (gone || now - k->t_first > XR_RETRY_NS || atomic_load(&g_exit_req)) {
    char what[400];
    if (!k->closed) {
      /* Nothing ever listened: the id's creator is gone (a setup script
       * that exited: documented, not a fault of the job). */
      snprintf(what, sizeof what,
               "could not be reached (connection refused, %d attempts in %.1f s): the process that "
               "created the ncclUniqueId has ended - a setup script's, or an earlier run's whose id "
               "was reused (a torchrun elastic restart reading a stale id from its store: then the "
               "other ranks may never join this one)",
               k->attempts, (double)(now - k->t_first) / 1e9);
      conn_end(k, A2A_CK_NO_COORDINATOR, A2A_SEV_INFO, what);
    } else {
      snprintf(what, sizeof what,
               "could not be authenticated with: %d attempts in %.1f s were refused, closed or "
               "left unanswered before it proved itself (is it overloaded or flooded?)",
               k->attempts, (double)(now - k->t_first) / 1e9);
      conn_dead(k, what);
    }
    return;
  }
  int sh = k->attempts - 1 < 5 ? k->attempts - 1 : 5;
  uint64_t pause = 50000000ull << sh;
  k->next_try = now + (pause > 1000000000ull ? 1000000000ull : pause);
  k->state = CC_WAIT;
}

/* The process at k's address answered but is not the coordinator of this
 * job: never retried, nothing it sent is used. */
static void auth_failed(cconn *k, const char *how) {
  char what[640];
  snprintf(what, sizeof what, "%s; nothing it sent was used%s", how,
           k->rec.pid ? " (the process at that address is not the one that created the "
                        "ncclUniqueId)"
                      : " (another process may hold A2ACHECK_COORDINATOR's address, or "
                        "A2ACHECK_TOKEN differs between the job's processes)");
  conn_end(k, A2A_CK_AUTH_FAILED, A2A_SEV_WARNING, what);
}

/* Connect to the coordinator named by rec; reuse a connection to the same
 * coordinator. Returns its index or -1. */
static int conn_for(const xr_idrec *rec) {
  for (int i = 0; i < S.nconns; i++)
    if (S.conns[i].rec.port == rec->port && !memcmp(S.conns[i].rec.addr, rec->addr, 16) &&
        !memcmp(S.conns[i].rec.token, rec->token, XR_TOKEN_BYTES))
      return S.conns[i].state == CC_DEAD && !S.conns[i].lost ? -1 : i;
  if (S.nconns >= MAX_CONNS) return -1;
  cconn *k = &S.conns[S.nconns];
  memset(k, 0, sizeof *k);
  k->rec = *rec;
  k->fd = -1;
  xr_secret_init(&k->secret, rec->token);
  char ip[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, rec->addr, ip, sizeof ip);
  if (rec->pid) snprintf(k->desc, sizeof k->desc, "at %s:%u (pid %u)", ip, ntohs(rec->port), rec->pid);
  else snprintf(k->desc, sizeof k->desc, "at %s:%u (A2ACHECK_COORDINATOR)", ip, ntohs(rec->port));
  int idx = S.nconns++;
  k->t_first = xr_now_ns();
  attempt_start(k, k->t_first);
  return k->state == CC_DEAD ? -1 : idx;
}

/* A2ACHECK_COORDINATOR=host:port (IPv4 dotted quad only: a host name is
 * not resolved). The process that can bind it hosts it. Its
 * secret comes from A2ACHECK_TOKEN; without one, only
 * A2ACHECK_XRANK_INSECURE=1 lets it run (secret derived from the address,
 * which anyone who can reach it knows). */
static int fallback_conn(void) {
  if (S.fallback_state < 0) return -1;
  if (S.fallback_state == 0) {
    S.fallback_state = -1;
    const char *spec = a2a_opt ? a2a_opt->coordinator : NULL;
    if (!spec || !*spec) return -1;
    struct in_addr a;
    uint16_t port = 0;
    /* An unusable value is said once, on stderr (the user set it and would
     * otherwise get no cross-rank checks without a word). The option
     * parser refuses such a value at start-up already (rt_options.c keeps
     * it unset, with a warning): this is the same rule for any other way
     * a2a_opt is filled (tests, embedders). */
    const char *bad = a2a_coord_spec_parse(spec, &a.s_addr, &port);
    if (bad) {
      char msg[300];
      snprintf(msg, sizeof msg,
               "A2ACHECK_COORDINATOR=%.100s %s: cross-rank checks through it are off. Use "
               "A.B.C.D:PORT, e.g. 10.0.0.1:29400.", spec, bad);
      report_ex(A2A_CK_NO_COORDINATOR, A2A_SEV_WARNING, NULL, 0, msg, NULL, true);
      S.fallback_why = "was not used: A2ACHECK_COORDINATOR is unusable (see the warning)";
      return -1;
    }
    uint8_t token[XR_TOKEN_BYTES];
    const char *secret = a2a_opt->xrank_token;
    if (secret && *secret && strlen(secret) >= 16) {
      xr_token_from_text(secret, token);
    } else if (a2a_opt->xrank_insecure == 1 && !(secret && *secret)) {
      char t[160];
      snprintf(t, sizeof t, "insecure:%s", spec);
      xr_token_from_text(t, token);
    } else {
      char msg[900];
      if (secret && *secret)
        snprintf(msg, sizeof msg,
                 "A2ACHECK_TOKEN has %zu characters, fewer than the 16 a secret needs: cross-rank "
                 "checks through A2ACHECK_COORDINATOR=%s are off. Set A2ACHECK_TOKEN to the same "
                 "secret of at least 16 characters (e.g. from `openssl rand -hex 16`) in every "
                 "process of the job.",
                 strlen(secret), spec);
      else
        snprintf(msg, sizeof msg,
                 "A2ACHECK_COORDINATOR=%s is set but A2ACHECK_TOKEN is not: cross-rank checks "
                 "through it are off. Without a secret shared by the job's processes, any process "
                 "that can reach %s could pose as the coordinator, fail the job or forge its "
                 "findings. Set A2ACHECK_TOKEN to the same secret of at least 16 characters (e.g. "
                 "from `openssl rand -hex 16`) in every process of the job, or "
                 "A2ACHECK_XRANK_INSECURE=1 to accept that risk.",
                 spec, spec);
      report_ex(A2A_CK_NO_COORDINATOR, A2A_SEV_WARNING, NULL, 0, msg, NULL, true);
      S.fallback_why = "was not used: A2ACHECK_COORDINATOR is set without a usable A2ACHECK_TOKEN "
                       "(see the warning)";
      return -1;
    }
    xr_idrec rec;
    pthread_mutex_lock(&g_xr_mu);
    int hosted = xr_coord_listen(a.s_addr, htons((uint16_t)port), token, &rec);
    pthread_mutex_unlock(&g_xr_mu);
    if (hosted != 0) {
      memset(&rec, 0, sizeof rec);
      rec.magic = XR_IDREC_MAGIC;
      rec.version = XR_IDREC_VERSION;
      rec.family = 4;
      rec.port = htons((uint16_t)port);
      memcpy(rec.addr, &a.s_addr, 4);
      memcpy(rec.token, token, sizeof token);
    } else {
      rec.pid = 0; /* name it by the option in messages */
    }
    memset(token, 0, sizeof token);
    S.fallback = rec;
    S.fallback_state = 1;
  }
  return conn_for(&S.fallback);
}

/* The coordinator this process hosts for its own ncclCommInitAll
 * communicators (created on first need; the same one as for its ids). */
static int local_conn(void) {
  uint8_t token[XR_TOKEN_BYTES];
  xr_random(token, sizeof token);
  xr_idrec rec;
  pthread_mutex_lock(&g_xr_mu);
  int rc = xr_coord_listen(htonl(INADDR_LOOPBACK), 0, token, &rec);
  pthread_mutex_unlock(&g_xr_mu);
  return rc == 0 ? conn_for(&rec) : -1;
}

static ccomm *comm_find(uint64_t id, int32_t rank) {
  for (int i = S.ncomms; i-- > 0;)
    if (S.comms[i]->id == id && (rank < 0 || S.comms[i]->rank == rank)) return S.comms[i];
  return NULL;
}

static void report_nocoord(const a2a_comm *c, uint64_t id, uint64_t site, const char *how) {
  char msg[900], cname[48];
  if (c) snprintf(cname, sizeof cname, "%s", c->name);
  else snprintf(cname, sizeof cname, "%016" PRIx64, id);
  int unknown = !strcmp(how, "is unknown");
  snprintf(msg, sizeof msg,
           "no cross-rank coordinator for communicator %s: its coordinator %s%s. "
           "Cross-rank checks (size.*-mismatch, group.order-mismatch, group.deadlock) are off "
           "for this communicator.",
           cname, how,
           unknown ? " (the ncclUniqueId carries no a2acheck record - was the process that "
                     "called ncclGetUniqueId run without a2acheck? - and "
                     "A2ACHECK_COORDINATOR=host:port is not set, or was refused at start-up)"
                   : "");
  report(A2A_CK_NO_COORDINATOR, A2A_SEV_INFO, c, site, msg, NULL);
}

static void on_commreg(const xr_rec *r) {
  const xr_commreg *reg = &r->u.reg.reg;
  if (S.ncomms >= MAX_COMMS || reg->nranks <= 0 || reg->nranks > (1 << 20)) return;
  ccomm *cc = calloc(1, sizeof *cc);
  if (!cc) return;
  cc->cnt = calloc((size_t)reg->nranks, sizeof *cc->cnt);
  if (!cc->cnt) { free(cc); return; }
  cc->id = reg->comm;
  cc->parent = reg->parent;
  cc->c = r->comm;
  cc->rank = reg->rank;
  cc->nranks = reg->nranks;
  cc->conn = -1;
  const char *how = NULL;
  if (r->has_idrec == 2) {
    cc->conn = local_conn();
    if (cc->conn < 0) how = "could not be started in this process";
  } else if (r->has_idrec && idrec_valid(&r->u.reg.idrec)) {
    cc->conn = conn_for(&r->u.reg.idrec);
    if (cc->conn < 0) how = "could not be reached";
  } else if (reg->parent) {
    ccomm *p = comm_find(reg->parent, -1);
    cc->conn = p ? p->conn : -1;
    if (cc->conn < 0) how = p && p->conn < 0 ? NULL : "is unknown (parent communicator not seen)";
  } else {
    cc->conn = fallback_conn();
    if (cc->conn < 0) how = S.fallback_why ? S.fallback_why : "is unknown";
  }
  /* A communicator of a coordinator lost earlier keeps that connection:
   * its units are tracked for this process's own watchdog. */
  if (cc->conn >= 0 && S.conns[cc->conn].lost)
    how = "was lost earlier in the run (this process's own hang watchdog covers the "
          "communicator)";
  S.comms[S.ncomms++] = cc;
  cc->site = reg->site;
  /* A thread that created one rank of a communicator by an id-based init
   * (NCCL's thread-per-rank pattern) is taken as its poster until its first
   * operation says otherwise. Not a thread that created several ranks of it
   * (ncclCommInitAll, inits in a group) - workers may post them - nor a
   * split's child (its late registration may come from another thread's
   * poll): their poster is their first operation's. */
  if (reg->how == A2A_INIT_RANK || reg->how == A2A_INIT_RANK_CONFIG || reg->how == A2A_INIT_SCALABLE) {
    cc->poster = r->thread;
    for (int i = 0; i < S.ncomms; i++) {
      ccomm *o = S.comms[i];
      if (o != cc && o->id == cc->id && !o->op_seen && o->poster == r->thread) o->poster = cc->poster = 0;
    }
  }
  if (how && !r->comm) {
    /* Registered at the init's PRE: say it when the init succeeded (the
     * finding then names the communicator and this rank). */
    cc->nocoord = how;
    return;
  }
  if (how) report_nocoord(r->comm, reg->comm, reg->site, how);
  if (cc->conn < 0 || S.conns[cc->conn].state == CC_DEAD) return;
  cconn *k = &S.conns[cc->conn];
  send_site(k, reg->site);
  /* The coordinator compares devices across processes of one host: send the
   * physical identity, not this process's ordinal (per-rank
   * CUDA_VISIBLE_DEVICES makes every rank's GPU ordinal 0). Read here, on the
   * background thread, once per communicator. */
  xr_commreg wire = *reg;
  wire.device = xr_visible_device(getenv("CUDA_VISIBLE_DEVICES"), reg->device);
  conn_send(k, XR_MSG_COMMREG, &wire, sizeof wire);
}

static xr_peerent *unit_peer(cunit *u, int32_t peer) {
  for (uint32_t i = 0; i < u->npeers; i++)
    if (u->peers[i].peer == peer) return &u->peers[i];
  if (u->npeers == u->cappeers) {
    uint32_t nc = u->cappeers ? u->cappeers * 2 : 8;
    xr_peerent *np = realloc(u->peers, nc * sizeof *np);
    if (!np) return NULL;
    u->peers = np;
    u->cappeers = nc;
  }
  return memset(&u->peers[u->npeers++], 0, sizeof *u->peers);
}

/* One send or receive of the unit: the next index towards peer. */
static void unit_p2p(ccomm *cc, cunit *u, int kind, int32_t peer) {
  if (peer < 0 || peer >= cc->nranks) return;
  int s = kind == XR_OP_SEND ? 0 : 1;
  uint32_t idx = cc->cnt[peer][s]++;
  xr_peerent *e = unit_peer(u, peer);
  if (!e) return;
  e->peer = peer;
  if (s == 0) { if (e->send_hi == e->send_lo) e->send_lo = idx; e->send_hi = idx + 1; }
  else { if (e->recv_hi == e->recv_lo) e->recv_lo = idx; e->recv_hi = idx + 1; }
}

static squeue *sq_find(uint32_t thread, uint64_t stream, int create) {
  for (int i = 0; i < S.nsq; i++)
    if (S.sq[i].thread == thread && S.sq[i].stream == stream) return &S.sq[i];
  if (!create) return NULL;
  if (S.nsq == S.capsq) {
    int nc = S.capsq ? S.capsq * 2 : 16;
    squeue *n = realloc(S.sq, (size_t)nc * sizeof *n);
    if (!n) return NULL;
    S.sq = n;
    S.capsq = nc;
  }
  squeue *q = &S.sq[S.nsq++];
  *q = (squeue){.thread = thread, .stream = stream};
  return q;
}

/* Unlink u from the global list and its queue q, and free it. */
static void unit_retire(squeue *q, cunit *u) {
  if (u->prev) u->prev->next = u->next; else S.head = u->next;
  if (u->next) u->next->prev = u->prev; else S.tail = u->prev;
  if (u->sprev) u->sprev->snext = u->snext; else q->head = u->snext;
  if (u->snext) u->snext->sprev = u->sprev; else q->tail = u->sprev;
  if (q->open == u) q->open = u->snext;
  if (u->owner && u->event) xr_event_release(u->event, u->device);
  free(u->peers);
  free(u);
}

/* Drop empty queues (swap with the last). */
static void sq_compact(void) {
  for (int i = 0; i < S.nsq;)
    if (!S.sq[i].head) S.sq[i] = S.sq[--S.nsq];
    else i++;
}

static void on_op(const xr_rec *r, const xr_op *rop) {
  xr_op op = *rop;
  ccomm *cc = comm_find(op.comm, op.rank);
  if (!cc || cc->conn < 0) return;
  cconn *k = &S.conns[cc->conn];
  /* The open unit of this thread, stream and comm, or a new one. */
  squeue *q = sq_find(r->thread, r->stream, 1);
  if (!q) return;
  cunit *u = NULL;
  for (cunit *x = q->open; x; x = x->snext)
    if (x->cc == cc) u = x;
  if (!u) {
    u = calloc(1, sizeof *u);
    if (!u) return;
    u->cc = cc;
    u->thread = r->thread;
    u->stream = r->stream;
    u->group = ++cc->units;
    u->site = op.site;
    u->count = op.count;
    u->kind = (int16_t)op.kind;
    u->coll = op.coll;
    u->bcast = (op.flags & XR_OPF_BCAST) != 0;
    u->dtype = op.dtype;
    u->coll_lo = u->coll_hi = cc->coll_posted;
    u->prev = S.tail;
    if (S.tail) S.tail->next = u; else S.head = u;
    S.tail = u;
    u->sprev = q->tail;
    if (q->tail) q->tail->snext = u; else q->head = u;
    q->tail = u;
    if (!q->open) q->open = u;
  }
  op.group = u->group;
  if (!cc->op_seen) { /* the first operation's thread, whoever created it */
    cc->op_seen = 1;
    cc->poster = r->thread;
  } else if (r->thread != cc->poster) {
    cc->posters_many = 1;
  }
  cc->last_kind = op.kind;
  cc->last_site = op.site;
  if (op.kind == XR_OP_COLL && xr_coll_is_p2p(op.coll)) {
    /* Per-peer sends and receives, as NCCL posts them (xrank.h). The unit
     * is named after the collective for the stories. */
    if (u->coll_hi == u->coll_lo && u->npeers == 0) {
      u->kind = XR_OP_COLL; u->coll = op.coll; u->count = op.count; u->dtype = op.dtype;
    }
    int kind, peer;
    for (uint32_t i = 0; xr_coll_p2p_at(op.coll, op.root, op.rank, cc->nranks, i, &kind, &peer); i++)
      unit_p2p(cc, u, kind, peer);
  } else if (op.kind == XR_OP_COLL) {
    if (u->coll_hi == u->coll_lo && u->kind != XR_OP_COLL) {
      u->kind = XR_OP_COLL; u->coll = op.coll; u->count = op.count; u->dtype = op.dtype;
      u->bcast = (op.flags & XR_OPF_BCAST) != 0;
    }
    cc->coll_posted++;
    u->coll_hi = cc->coll_posted;
  } else {
    unit_p2p(cc, u, op.kind, op.peer);
  }
  send_site(k, op.site);
  if (!k->nbatch) k->batch_t0 = xr_now_ns();
  k->batch[k->nbatch++] = op;
  if (k->nbatch == sizeof k->batch / sizeof k->batch[0]) batch_flush(k);
}

/* The end of the open units of r's thread and stream (UNIT_END, and the
 * second half of an OP_UNIT): run, gen and deferred as in u.unit. */
static void on_unit_end(const xr_rec *r, uint32_t run, uint32_t gen, int deferred) {
  int owner = 1;
  squeue *q = sq_find(r->thread, r->stream, 0);
  uint64_t now = deferred ? xr_now_ns() : 0;
  for (cunit *x = q ? q->open : NULL; x; x = x->snext) {
    x->closed = 1;
    if (deferred) {
      /* Its marker comes later (UNIT_MARK of this run). */
      x->await_run = run;
      x->await_gen = gen;
      x->await_since = now;
      continue;
    }
    x->event = r->event;
    x->device = r->device;
    x->owner = owner;
    owner = 0;
  }
  if (q) q->open = NULL;
  if (owner && r->event) xr_event_release(r->event, r->device); /* no tracked unit */
}

/* The marker of a run: every unit of the run shares its event; the run's
 * last unit, retired last (the queue retires in order), gives it back.
 * Units a stream query already retired (poll_units) are simply gone. An
 * event NULL (not recordable) leaves the run's units untracked. */
static void on_unit_mark(const xr_rec *r) {
  squeue *q = sq_find(r->thread, r->stream, 0);
  cunit *last = NULL;
  for (cunit *x = q ? q->head : NULL; x; x = x->snext)
    if (x->closed && x->await_run == r->u.unit.run) {
      x->await_run = 0;
      x->event = r->event;
      x->device = r->device;
      x->owner = 0;
      last = x;
    }
  if (last && r->event) last->owner = 1;
  else if (r->event) xr_event_release(r->event, r->device);
}

static void on_commend(const xr_rec *r) {
  uint32_t w = r->u.end.wait;
  ccomm *cc = comm_find(r->u.end.comm, r->u.end.rank);
  /* Nothing to wait for: unknown comm, no coordinator, or ended before
   * (ncclCommFinalize then ncclCommDestroy: the first end waited). */
  if (!cc || cc->conn < 0 || cc->ended || S.conns[cc->conn].state == CC_DEAD ||
      S.conns[cc->conn].bye_sent) {
    if (cc) cc->ended = 1;
    ewait_done(w);
    return;
  }
  cc->ended = 1;
  cconn *k = &S.conns[cc->conn];
  xr_commend e = {.comm = cc->id, .how = r->u.end.how, .rank = cc->rank};
  conn_send(k, XR_MSG_COMMEND, &e, sizeof e);
  if (!w) return;
  size_t i = 0;
  while (i < sizeof S.ewait / sizeof S.ewait[0] && S.ewait[i].slot) i++;
  if (i == sizeof S.ewait / sizeof S.ewait[0] || k->state == CC_DEAD) { ewait_done(w); return; }
  S.ewait[i].slot = w;
  S.ewait[i].conn = cc->conn;
  xr_commflush f = {.comm = cc->id, .rank = cc->rank, .seq = w};
  conn_send(k, XR_MSG_COMMFLUSH, &f, sizeof f);
  if (k->state == CC_DEAD) ewait_done(w); /* conn_dead ran before the slot was sent */
}

static void on_commbind(const xr_rec *r) {
  ccomm *cc = comm_find(r->u.end.comm, r->u.end.rank);
  if (!cc || cc->c) return;
  cc->c = r->comm;
  if (cc->nocoord) report_nocoord(cc->c, cc->id, cc->site, cc->nocoord);
  cc->nocoord = NULL;
}

#define XR_BATCH_NS 1000000ull
static int batches_pending(void) {
  for (int i = 0; i < S.nconns; i++)
    if (S.conns[i].nbatch) return 1;
  return 0;
}

static int drain(int max) {
  xr_rec r;
  int n = 0;
  while (n < max && xr_ring_pop(&r)) {
    n++;
    switch (r.type) {
    case XR_REC_COMMREG: on_commreg(&r); break;
    case XR_REC_OP: on_op(&r, &r.u.op); break;
    case XR_REC_UNIT_END: on_unit_end(&r, r.u.unit.run, r.u.unit.gen, r.u.unit.deferred); break;
    case XR_REC_OP_UNIT:
      on_op(&r, &r.u.opu.op);
      on_unit_end(&r, r.u.opu.run, r.u.opu.gen, r.u.opu.deferred);
      break;
    case XR_REC_UNIT_MARK: on_unit_mark(&r); break;
    case XR_REC_COMMEND: on_commend(&r); break;
    case XR_REC_COMMBIND: on_commbind(&r); break;
    default: break;
    }
  }
  /* A batch goes out when it is full, before any other message of its
   * connection, or once it is XR_BATCH_NS old: every sealed frame costs a
   * MAC on both ends (two SHA-256 compressions and more), which a frame per
   * drain - one or two operations while the application posts them one by
   * one - paid per operation. The delay is far below the progress reports'
   * cadence (300 ms) that deadlock detection works at. */
  uint64_t now = 0;
  for (int i = 0; i < S.nconns; i++) {
    cconn *k = &S.conns[i];
    if (!k->nbatch) continue;
    if (!now) now = xr_now_ns();
    if (now - k->batch_t0 >= XR_BATCH_NS) batch_flush(k);
  }
  if (!S.reported_drops && xr_ring_drops()) {
    S.reported_drops = 1;
    char msg[512];
    snprintf(msg, sizeof msg,
             "the cross-rank queue overflowed (%" PRIu64 " operation records dropped; raise "
             "A2ACHECK_XRANK_QUEUE): this process's operation sequence is incomplete, so it "
             "detaches from cross-rank checking for the rest of the run.",
             xr_ring_drops());
    report(A2A_CK_NO_COORDINATOR, A2A_SEV_WARNING, NULL, 0, msg, NULL);
    xr_bye b = {.status = -1};
    for (int i = 0; i < S.nconns; i++) {
      conn_send(&S.conns[i], XR_MSG_BYE, &b, sizeof b);
      S.conns[i].bye_sent = 1;
    }
    for (int i = 0; i < S.ncomms; i++) S.comms[i]->conn = -1;
  }
  return n;
}

/* Completion: a unit is done when its event is; units without an event
 * (untracked) are done at once. Per queue, from the head: a unit whose
 * event is pending keeps the later ones of its stream (they run after it),
 * except untracked ones, which nothing can tell complete later either.
 * A unit still awaiting its run's marker (xrank.c, "completion markers") is
 * pending too; once it has waited XR_MARK_RESCUE_NS (its thread went on
 * with host code), an idle stream (xr_deferred_query) completes it and
 * every unit behind it: they were all drained, so enqueued, before the
 * query. A destroyed stream's awaiting units are retired untracked. */
#define XR_MARK_RESCUE_NS 20000000ull
static int poll_units(int final) {
  int changed = 0;
  uint64_t now = 0;
  for (int i = 0; i < S.nsq; i++) {
    squeue *q = &S.sq[i];
    void *last_ev = NULL;
    int last_st = 1, idle = 0;
    for (cunit *u = q->head, *n; u && u->closed; u = n) {
      n = u->snext;
      int done = 1;
      if (idle) {
        done = 1;
      } else if (u->await_run) {
        if (!now) now = xr_now_ns();
        int st = final || now - u->await_since > XR_MARK_RESCUE_NS
                     ? xr_deferred_query(q->stream, u->await_gen)
                     : -1;
        /* Idle: it and everything behind it are complete. Destroyed:
         * untracked from now on, like a unit whose event failed. */
        done = st == 0 || st == -2;
        idle = st == 0;
      } else if (u->event) {
        if (u->event != last_ev) {
          last_ev = u->event;
          last_st = a2a_hostsvc && a2a_hostsvc->event_query ? a2a_hostsvc->event_query(u->event) : 0;
        }
        done = last_st != 1; /* complete, or an error: stop tracking */
      }
      if (!done) {
        /* The rest of the stream waits behind it; untracked units go. */
        for (cunit *x = n, *xn; x && x->closed; x = xn) {
          xn = x->snext;
          if (!x->event && !x->await_run) { unit_retire(q, x); changed = 1; }
        }
        break;
      }
      unit_retire(q, u);
      changed = 1;
    }
  }
  if (changed) sq_compact();
  return changed;
}

/* ---- progress reports -------------------------------------------- */

/* A later unit of u's stream shares its completion marker (the runs of
 * xrank.c's completion markers and a group's units are consecutive in the
 * stream's queue): u may be complete although its marker is not. */
static int shares_marker(const cunit *u) {
  const cunit *n = u->snext;
  if (!n || !n->closed) return 0;
  return (u->await_run && n->await_run == u->await_run) || (u->event && n->event == u->event);
}

/* A plain collective unit (one collective, no peers) of a comm. */
static int plain_coll(const cunit *u) {
  return u->closed && u->npeers == 0 && u->kind == XR_OP_COLL && !xr_coll_is_p2p(u->coll) &&
         u->coll_hi == u->coll_lo + 1;
}

/* RUN_STEP: u continues, in a progress report, the unit before it on its
 * stream: both plain collectives of one comm, consecutive in the comm's
 * order, sharing one completion marker (a run of back-to-back AllReduces).
 * Such a run is reported as one unit, collectives [first, last + 1), named
 * after its last (XR_UNIT_RUN): it completes when its marker does, and its
 * counterparts are the same collectives of the peers. A report's size then
 * follows the runs, not the operations in flight (the background thread's
 * cost per record stays flat with 1,000 operations in flight). Units of
 * different comms are never merged: a cycle between communicators goes
 * through them (e2e.scenario.bug_order_groups). */
static int run_member(const cunit *u) {
  const cunit *p = u->sprev;
  return p && plain_coll(p) && plain_coll(u) && shares_marker(p) && p->cc == u->cc &&
         u->coll_lo == p->coll_hi;
}

static void send_state(uint64_t now, int exiting) {
  static xr_commstate comms[256];
  static xr_unitstate units[2048];
  static xr_threadstate threads[64];
  static xr_peerent peers[16384];
  xr_procstate st = {.comms = comms, .units = units, .threads = threads, .peers = peers};
  for (int i = 0; i < S.ncomms && st.ncomms < 256; i++) {
    ccomm *cc = S.comms[i];
    if (cc->conn < 0) continue;
    xr_commstate *c = &comms[st.ncomms++];
    *c = (xr_commstate){.comm = cc->id, .rank = cc->rank, .nranks = cc->nranks,
                        .coll_posted = cc->coll_posted, .ended = (uint32_t)cc->ended,
                        .peer_off = st.npeers, .last_kind = cc->last_kind,
                        .last_site = cc->last_site,
                        .poster = cc->posters_many ? 0 : cc->poster,
                        .poster_gone = !cc->posters_many && cc->poster && a2a_hostsvc &&
                                       a2a_hostsvc->thread_exited &&
                                       a2a_hostsvc->thread_exited(cc->poster),
                        .splits = cc->c ? atomic_load_explicit(&cc->c->nsplits, memory_order_relaxed) : 0};
    for (int32_t p = 0; p < cc->nranks && st.npeers < 16384; p++)
      if (cc->cnt[p][0] || cc->cnt[p][1]) {
        peers[st.npeers++] = (xr_peerent){.peer = p, .send_hi = cc->cnt[p][0], .recv_hi = cc->cnt[p][1]};
        c->npeers++;
      }
  }
  /* A report holds 2,048 units. More are pending (a long run of
   * back-to-back operations behind one marker): the first 1,536 are kept
   * in order (an order mismatch between communicators shows in the first
   * operations it involves), then only units that do not share their
   * marker with a later one - each run's last unit, the one certainly
   * incomplete. (Cutting at 2,048 dropped a hung burst's last unit: no
   * deadlock was found.) A unit left out counts as complete for the
   * peers' requirements, like any unit not reported: a deadlock can be
   * missed that way, never invented. Every unit is reported otherwise: a
   * run's middle units are what a cycle between communicators goes
   * through (e2e.scenario.bug_order_groups). */
  size_t total = 0;
  for (cunit *u = S.head; u && total <= 2048; u = u->next)
    total += u->cc->conn >= 0 && !run_member(u);
  for (cunit *u = S.head; u && st.nunits < 2048; u = u->next) {
    if (u->cc->conn < 0 || run_member(u)) continue;
    /* The run of collectives u begins (RUN_STEP), reported as one unit. */
    const cunit *last = u;
    while (last->snext && run_member(last->snext)) last = last->snext;
    if (total > 2048 && st.nunits >= 1536 && last->closed && shares_marker(last)) continue;
    if (st.npeers + u->npeers > 16384) break;
    units[st.nunits++] = (xr_unitstate){.comm = u->cc->id, .stream = u->stream, .site = last->site,
                                        .count = last->count, .group = u->group,
                                        .coll_lo = u->coll_lo, .coll_hi = last->coll_hi,
                                        .peer_off = st.npeers, .npeers = u->npeers,
                                        .kind = u->kind, .coll = last->coll, .dtype = last->dtype,
                                        .rank = u->cc->rank,
                                        .flags = (!u->closed ? (uint32_t)XR_UNIT_OPEN
                                                  : shares_marker(last) ? (uint32_t)XR_UNIT_MAYBE_DONE
                                                                        : 0u) |
                                                 (last != u ? (uint32_t)XR_UNIT_RUN : 0u) |
                                                 (last->bcast ? (uint32_t)XR_UNIT_BCAST : 0u)};
    if (u->npeers) memcpy(&peers[st.npeers], u->peers, u->npeers * sizeof *peers);
    st.npeers += u->npeers;
  }
  if (!exiting) st.nthreads = (uint32_t)xr_blocked_snapshot(threads, 64, now);
  st.version = ++S.state_version;
  for (uint32_t t = 0; t < st.nthreads; t++)
    for (int i = 0; i < S.nconns; i++) send_site(&S.conns[i], threads[t].site);
  for (uint32_t j = 0; j < st.nunits; j++)
    for (int i = 0; i < S.nconns; i++) send_site(&S.conns[i], units[j].site);
  for (uint32_t c = 0; c < st.ncomms; c++)
    for (int i = 0; i < S.nconns && comms[c].last_site; i++)
      send_site(&S.conns[i], comms[c].last_site);
  size_t need = xr_state_bytes(&st);
  for (int i = 0; i < S.nconns; i++) {
    cconn *k = &S.conns[i];
    batch_flush(k);
    /* A report is a snapshot: one not yet sendable is replaced by the next. */
    if (k->state != CC_READY || k->bye_sent) continue;
    if (!xr_buf_reserve(&k->out, need, XR_OUT_MAX) ||
        !xr_put_state(k->out.p, k->out.cap, &k->out.len, &st))
      conn_dead(k, "does not read its messages");
  }
  S.last_state_ns = now;
}

/* ---- verdicts ----------------------------------------------------- */

static void on_verdict(const xr_verdict *v) {
  /* The rank it is about, where the process hosts several ranks of comm
   * (ncclCommInitAll, a thread per rank): the finding names that rank's
   * communicator record (its rank, the report tool's side and role). A
   * rank it does not host (a hostile or stale number) falls back to any. */
  ccomm *cc = v->rank_p1 && v->rank_p1 <= INT32_MAX ? comm_find(v->comm, (int32_t)(v->rank_p1 - 1)) : NULL;
  if (!cc) cc = comm_find(v->comm, -1);
  a2a_severity sev = v->severity < 0 ? A2A_SEV_INFO : v->severity > 2 ? A2A_SEV_ERROR
                                                                        : (a2a_severity)v->severity;
  if (v->check < 0 || v->check >= A2A_CK__COUNT) return;
  /* The verdict's seal verified: it comes from the job's coordinator. Its
   * text still goes through the sanitizer before any log or terminal sees
   * it (a story keeps its indented lines, nothing else). */
  static char text[XR_MAX_TEXT + XR_MAX_TEXT / 2], json[XR_MAX_JSON + 1];
  xr_sanitize_text(text, sizeof text, v->text, true);
  if (v->json) xr_sanitize_text(json, sizeof json, v->json, false);
  report((a2a_check_id)v->check, sev, cc ? cc->c : NULL, v->site, text, v->json ? json : NULL);
  if (!(v->flags & XR_VERDICT_FAIL) || S.failing) return;
  /* A check disabled in A2ACHECK_CHECKS was not reported: it fails nothing. */
  if (!a2a_check_on((a2a_check_id)v->check)) return;
  /* Deadlock policy: A2ACHECK_ON_DEADLOCK=exit (0) ends the process with
   * A2ACHECK_EXITCODE when A2ACHECK_FAIL_ON matches the verdict. */
  if (!a2a_opt || a2a_opt->on_deadlock != 0 ||
      !a2a_hostsvc->fail_policy((a2a_check_id)v->check, sev))
    return;
  S.failing = 1;
  atomic_store(&g_failing_pub, 1);
  /* Hosting the coordinator: the other ranks' verdicts must reach them
   * before this process (and the coordinator with it) goes away. */
  xr_coord_announce_end(a2a_check_name((a2a_check_id)v->check));
  xr_coord_linger(3000000000ull);
  if (a2a_hostsvc && a2a_hostsvc->fail_now) a2a_hostsvc->fail_now(a2a_check_name((a2a_check_id)v->check));
}

/* Input of a READY connection: sealed frames only. */
static void conn_input(cconn *k) {
  size_t off = 0;
  for (;;) {
    xr_hdr h;
    const uint8_t *pl;
    size_t used;
    int fr = xr_frame(k->in.p + off, k->in.len - off, &h, &pl, &used);
    if (fr == 0) break;
    if (fr < 0 || xr_unseal(&k->rx, k->in.p + off, &h) != 0) {
      /* Not from the coordinator that proved itself (or a corrupt stream):
       * nothing in it is used. */
      conn_dead(k, "sent a message that is malformed or not sealed with the session's key");
      return;
    }
    off += used;
    if (h.type == XR_MSG_PING) {
      continue;
    } else if (h.type == XR_MSG_FLUSHED) {
      k->flushed = 1;
    } else if (h.type == XR_MSG_COMMFLUSHED) {
      xr_commflush f;
      if (xr_get_fixed(&h, pl, &f, sizeof f) != 0) { conn_dead(k, "sent a malformed message"); return; }
      /* Verdicts sent before it were reported above, in stream order. */
      ewait_done(f.seq);
    } else if (h.type == XR_MSG_VERDICT) {
      xr_verdict v;
      if (xr_get_verdict(&h, pl, &v) != 0) { conn_dead(k, "sent a malformed verdict"); return; }
      if (v.check == A2A_CK_NO_COORDINATOR) k->ending = 1;
      on_verdict(&v);
      if (k->state == CC_DEAD) return;
    } else {
      conn_dead(k, "sent an unexpected message");
      return;
    }
  }
  xr_buf_consume(&k->in, off);
}

/* HANDSHAKE: read the CHALLENGE at its exact size and check the
 * coordinator's proof; then AUTH, and everything queued, sealed. */
static void hs_input(cconn *k, uint64_t now) {
  for (;;) {
    ssize_t r = recv(k->fd, k->hs + k->hs_have, sizeof k->hs - k->hs_have, MSG_DONTWAIT);
    if (r == 0) { attempt_failed(k, now, 0); return; }
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) attempt_failed(k, now, errno == ECONNREFUSED);
      return;
    }
    k->hs_have += (size_t)r;
    int c = xr_hs_check(k->hs, k->hs_have, XR_MSG_CHALLENGE, sizeof(xr_challenge));
    if (c < 0) {
      auth_failed(k, "answered with something other than an a2acheck challenge of this "
                     "version (another a2acheck version, or not a2acheck)");
      return;
    }
    if (c == 0) continue;
    xr_challenge ch;
    memcpy(&ch, k->hs + sizeof(xr_hdr), sizeof ch);
    uint8_t want[XR_PROOF_BYTES];
    xr_auth_coord_proof(&k->secret, &k->hello, ch.nonce, want);
    if (ch.version != XR_PROTO_VERSION || !xr_ct_equal(want, ch.proof, sizeof want)) {
      auth_failed(k, "answered with a wrong proof: it does not know the job's secret");
      return;
    }
    xr_auth a;
    xr_auth_client_proof(&k->secret, &k->hello, &ch, a.proof);
    xr_auth_session(&k->secret, &k->hello, &ch, &k->tx, &k->rx);
    if (!xr_out_msg(&k->wire, XR_MSG_AUTH, &a, sizeof a)) { conn_dead(k, "failed (no memory)"); return; }
    k->state = CC_READY;
    k->t_ready = now;
    return;
  }
}

/* ---- the thread --------------------------------------------------- */

/* Attempts that are due, or past their deadline. */
static void client_tick(uint64_t now) {
  for (int i = 0; i < S.nconns; i++) {
    cconn *k = &S.conns[i];
    if (k->state == CC_WAIT) {
      if (atomic_load(&g_exit_req)) attempt_failed(k, now, 0); /* gives up: exiting */
      else if (now >= k->next_try) attempt_start(k, now);
    } else if ((k->state == CC_CONNECTING || k->state == CC_HANDSHAKE) &&
               now - k->t_start > XR_ATTEMPT_NS) {
      attempt_failed(k, now, 0);
    }
  }
}

static void client_io(struct pollfd *pfd, int *map, size_t n) {
  uint64_t now = xr_now_ns();
  for (size_t i = 0; i < n; i++) {
    cconn *k = &S.conns[map[i]];
    short re = pfd[i].revents;
    if (!re || k->fd != pfd[i].fd) continue;
    if (k->state == CC_CONNECTING) {
      int err = 0;
      socklen_t el = sizeof err;
      getsockopt(k->fd, SOL_SOCKET, SO_ERROR, &err, &el);
      if (err) { attempt_failed(k, now, err == ECONNREFUSED); continue; }
      k->state = CC_HANDSHAKE;
    }
    if (k->state == CC_HANDSHAKE) {
      if (k->wire.len && xr_sock_write(k->fd, &k->wire) < 0) { attempt_failed(k, now, 0); continue; }
      if (re & (POLLIN | POLLHUP | POLLERR)) hs_input(k, now);
      if (k->state != CC_READY) continue;
    }
    if (k->state == CC_READY && (re & (POLLIN | POLLHUP | POLLERR))) {
      errno = 0;
      int rr = xr_sock_read(k->fd, &k->in, XR_IN_MAX);
      int e = errno;
      conn_input(k);
      if (rr < 0 && k->state != CC_DEAD) conn_dead(k, lost_why(e));
    }
  }
}

static void flush_outputs(void) {
  for (int i = 0; i < S.nconns; i++) {
    cconn *k = &S.conns[i];
    if (k->state != CC_READY || (!k->out.len && !k->wire.len)) continue;
    int r = xr_write_sealed(k->fd, &k->out, &k->wire, &k->tx);
    if (r == XR_WRITE_DEAD) conn_dead(k, lost_why(errno));
    else if (r == XR_WRITE_FULL) conn_dead(k, "does not read its messages (32 MiB unsent)");
  }
}

/* Whether a live connection still has bytes to send. */
static int outputs_pending(void) {
  for (int i = 0; i < S.nconns; i++)
    if (S.conns[i].state == CC_READY && (S.conns[i].out.len || S.conns[i].wire.len)) return 1;
  return 0;
}

static void loop_once(int timeout_ms) {
  static struct pollfd pfd[MAX_CONNS + 1 + 64 + 4096];
  int map[MAX_CONNS];
  size_t n = 0;
  for (int i = 0; i < S.nconns; i++) {
    cconn *k = &S.conns[i];
    if (k->state == CC_DEAD || k->state == CC_WAIT) continue;
    short ev = k->state == CC_CONNECTING ? POLLOUT
               : (short)(POLLIN | (k->wire.len || (k->state == CC_READY && k->out.len) ? POLLOUT : 0));
    pfd[n] = (struct pollfd){.fd = k->fd, .events = ev};
    map[n++] = i;
  }
  size_t nc = xr_coord_pollfds(pfd + n, sizeof pfd / sizeof pfd[0] - n);
  /* The only place the thread does not hold g_work_mu: see fork_prepare. */
  pthread_mutex_unlock(&g_work_mu);
  int pr = poll(pfd, n + nc, timeout_ms);
  pthread_mutex_lock(&g_work_mu);
  uint64_t now = xr_now_ns();
  if (pr > 0) {
    client_io(pfd, map, n);
    xr_coord_io(pfd + n, nc, now);
  }
  client_tick(now);
}

/* ---- local watchdog (coordinator lost) ------------------------------ */

static const char *wait_name(const xr_threadstate *t) {
  if (t->flags & XR_THREAD_POLLING) return "a polling loop (cudaStreamQuery/cudaEventQuery)";
  switch (t->wait) {
  case XR_WAIT_STREAM: return "a stream synchronization";
  case XR_WAIT_EVENT: return "an event synchronization";
  case XR_WAIT_DEVICE: return "cudaDeviceSynchronize";
  case XR_WAIT_MEMCPY: return "a blocking copy";
  case XR_WAIT_SPLIT:
    return t->flags & XR_THREAD_POLLED ? "a non-blocking ncclCommSplit/Shrink" : "ncclCommSplit/Shrink";
  case XR_WAIT_INIT:
    return t->flags & XR_THREAD_POLLED ? "a non-blocking communicator init" : "a blocking communicator init";
  default: return "a blocking call";
  }
}

/* Once a coordinator was lost, nobody else can tell this process that it
 * hangs: when its launched operations on the lost coordinator's
 * communicators stay incomplete and the process made no progress (no
 * operation posted, none completed) for A2ACHECK_HANG_TIMEOUT, it reports
 * group.hang itself and applies the same exit policy as a verdict. */
static void local_watchdog(uint64_t now) {
  if (!S.nlost || S.hang_reported || S.failing || !a2a_opt) return;
  double to = a2a_opt->hang_timeout;
  if (!(to > 0) || (double)(now - S.last_progress_ns) < to * 1e9) return;
  cunit *first = NULL;
  unsigned n = 0;
  char list[1600];
  size_t len = 0;
  list[0] = 0;
  for (cunit *u = S.head; u; u = u->next) {
    if (!u->closed || u->cc->conn < 0 || !S.conns[u->cc->conn].lost) continue;
    if (!first) first = u;
    if (n++ >= 8 || len + 200 >= sizeof list) continue;
    xr_op op = {.comm = u->cc->id, .count = u->count, .rank = u->cc->rank,
                .peer = u->npeers ? u->peers[0].peer : -1, .root = -1,
                .kind = (uint16_t)u->kind, .coll = u->coll, .dtype = u->dtype, .redop = -1,
                .flags = u->bcast ? (uint8_t)XR_OPF_BCAST : 0};
    char d[160], cname[48];
    if (u->cc->c) snprintf(cname, sizeof cname, "%s", u->cc->c->name);
    else snprintf(cname, sizeof cname, "%016" PRIx64, u->cc->id);
    len += (size_t)snprintf(list + len, sizeof list - len, "\n  %s on %s (rank %d of %d)%s",
                            xr_op_describe(&op, d, sizeof d), cname, u->cc->rank, u->cc->nranks,
                            u->npeers > 1 ? ", with its other peers in the same group" : "");
  }
  if (!n) return;
  if (n > 8) len += (size_t)snprintf(list + len, sizeof list - len, "\n  ... and %u more", n - 8);
  xr_threadstate th[8];
  size_t nt = xr_blocked_snapshot(th, 8, now);
  for (size_t t = 0; t < nt && len + 300 < sizeof list; t++) {
    char site[120] = "";
    if (th[t].site && a2a_hostsvc && a2a_hostsvc->site_text)
      a2a_hostsvc->site_text((const void *)(uintptr_t)th[t].site, site, sizeof site);
    len += (size_t)snprintf(list + len, sizeof list - len, "\n  thread %u waits in %s for %.1f s%s%s",
                            th[t].thread, wait_name(&th[t]), (double)th[t].blocked_ms / 1e3,
                            site[0] ? " at " : "", site);
  }
  S.hang_reported = 1;
  char msg[2400], json[256];
  snprintf(msg, sizeof msg,
           "this process made no progress for %.0f s (no operation posted, none completed) while "
           "%u launched operation(s) on communicators whose cross-rank coordinator was lost "
           "%.0f s ago are incomplete. Without the coordinator the other ranks' state is "
           "unknown; this is this process's own watchdog (A2ACHECK_HANG_TIMEOUT). Pending:%s",
           (double)(now - S.last_progress_ns) / 1e9, n, (double)(now - S.t_lost) / 1e9, list);
  snprintf(json, sizeof json,
           "{\"reason\":\"coordinator-lost\",\"seconds_without_progress\":%.1f,"
           "\"pending_units\":%u,\"seconds_since_coordinator_lost\":%.1f}",
           (double)(now - S.last_progress_ns) / 1e9, n, (double)(now - S.t_lost) / 1e9);
  report(A2A_CK_GROUP_HANG, A2A_SEV_ERROR, first->cc->c, first->site, msg, json);
  if (!a2a_check_on(A2A_CK_GROUP_HANG) || a2a_opt->on_deadlock != 0 ||
      !a2a_hostsvc->fail_policy(A2A_CK_GROUP_HANG, A2A_SEV_ERROR))
    return;
  S.failing = 1;
  atomic_store(&g_failing_pub, 1);
  xr_coord_announce_end("group.hang");
  xr_coord_linger(3000000000ull);
  if (a2a_hostsvc->fail_now) a2a_hostsvc->fail_now("group.hang");
}

/* ---- the coordinator outlives its host's normal exit ---------------- */

/* How long a host that exits waits in-process for the other clients' BYE
 * before it hands the coordinator to a lingering process instead: ranks
 * that end together (a correct job) say BYE within this, and no process is
 * made. */
#define XR_LINGER_GRACE_NS 100000000ull

/* How long the lingering process serves at most: a deadlock that involves
 * the exited host forms at once (its BYE makes it "exited"), and is proven
 * within A2ACHECK_HANG_CONFIRM of the survivors' reports; 10 s more cover
 * reports delayed by load and the delivery. Later work of the survivors
 * goes unchecked across ranks (they are told the coordinator is lost, and
 * their own watchdog covers hangs), and the host's memory, which the
 * lingering process shares copy-on-write, is not held for long. */
static uint64_t linger_bound_ns(void) {
  double hc = a2a_opt ? a2a_opt->hang_confirm : 5.0;
  return (uint64_t)((hc + 10.0) * 1e9);
}

/* The host exits normally with clients still connected: a grandchild takes
 * the coordinator over (xr_coord_serve_detached) and this process goes on
 * exiting at once with its own status. A grandchild (the child in between
 * exits at once and is reaped here) is never a child of the host: an
 * application that waits for its children at exit, or a launcher waiting
 * for its own, never sees it; it is adopted by init or the nearest
 * subreaper (`a2acheck run`), stays in the job's process group (the job's
 * signals reach it) and makes no CUDA or NCCL call. Runs on the background
 * thread holding g_work_mu (t_own_fork: our atfork handlers let it be; the
 * runtime's do nothing once it is FINISHED). Returns whether it took over;
 * if fork fails, the caller serves in-process as before. */
static int linger_fork(void) {
  uint64_t bound = linger_bound_ns();
  t_own_fork = 1;
  pid_t mid = fork();
  if (mid == 0) {
    pid_t l = fork();
    if (l == 0) xr_coord_serve_detached(bound);
    _exit(l < 0 ? 1 : 0);
  }
  t_own_fork = 0;
  if (mid < 0) return 0;
  int st = 0;
  pid_t w;
  do w = waitpid(mid, &st, 0);
  while (w < 0 && errno == EINTR);
  /* ECHILD: the application reaps children itself (SIGCHLD ignored or a
   * handler): the grandchild was made unless fork failed, which is rare;
   * take it as made. */
  if (w == mid && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) return 0;
  xr_coord_release();
  return 1;
}

static void *thread_main(void *arg) {
  (void)arg;
  t_channel = true;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  pthread_mutex_lock(&g_work_mu);
  atomic_store(&g_thread_starting, 0); /* see fork_prepare */
  uint64_t last_tick = 0;
  int idle = 0;
  S.last_progress_ns = xr_now_ns();
  for (;;) {
    int got = drain(8192);
    int changed = poll_units(0);
    uint64_t now = xr_now_ns();
    if (got || changed) S.last_progress_ns = now;
    int exiting = atomic_load(&g_exit_req);
    /* Reports: every 300 ms (the coordinator's freshness check relies on
     * a steady cadence), at once when a unit completed while blocked. */
    if (now - S.last_state_ns > 300000000ull || (changed && now - S.last_state_ns > 50000000ull))
      send_state(now, 0);
    if (now - last_tick > 100000000ull) {
      xr_coord_tick(now);
      local_watchdog(now);
      last_tick = now;
    }
    flush_outputs();
    if (exiting) break;
    idle = got || changed ? 0 : idle + 1;
    /* A full batch: more records wait (the application may be blocked on
     * the full queue, xrank.c's backpressure), so the sockets are only
     * polled, not waited on. */
    loop_once(got >= 8192 ? 0 : batches_pending() ? 1 : idle > 10 ? 10 : 2);
  }
  /* Exit: last records, a final report, FLUSH, bounded wait for FLUSHED
   * (and, when hosting, for the other processes to say bye), BYE. */
  drain(1 << 20);
  /* The last report: runs whose threads did not flush their marker (only
   * the exiting thread did) are asked about at once, not after 20 ms. */
  poll_units(1);
  /* A connection still connecting or authenticating (a process that exits
   * within milliseconds of its first communicator, or a loaded machine)
   * finishes first, within the exit's bound: the last report goes only to
   * a ready connection, and without it the coordinator never learns what
   * this process left pending (an operation in a group it never closed),
   * so its peers' deadlock could not be proven. At exit a failed attempt
   * is not retried (client_tick). */
  uint64_t t0 = xr_now_ns();
  while (xr_now_ns() - t0 < 5000000000ull) {
    int opening = 0;
    for (int i = 0; i < S.nconns; i++)
      if (S.conns[i].state == CC_CONNECTING || S.conns[i].state == CC_HANDSHAKE ||
          S.conns[i].state == CC_WAIT)
        opening = 1;
    if (!opening) break;
    loop_once(5);
    flush_outputs();
  }
  send_state(xr_now_ns(), 1);
  xr_flush fl = {.token = 1};
  for (int i = 0; i < S.nconns; i++)
    if (S.conns[i].state != CC_DEAD && !S.conns[i].bye_sent)
      conn_send(&S.conns[i], XR_MSG_FLUSH, &fl, sizeof fl);
  for (;;) {
    flush_outputs();
    int waiting = 0;
    for (int i = 0; i < S.nconns; i++)
      if (S.conns[i].state != CC_DEAD && !S.conns[i].bye_sent && !S.conns[i].flushed) waiting = 1;
    uint64_t el = xr_now_ns() - t0;
    /* Hosting: a short grace for the others' BYE, then a lingering process
     * serves them (below); this process's exit is not held up. */
    if (!waiting && (xr_coord_other_clients() == 0 || el > XR_LINGER_GRACE_NS)) break;
    if (el > 5000000000ull) break;
    loop_once(5);
    uint64_t now = xr_now_ns();
    if (now - last_tick > 100000000ull) { xr_coord_tick(now); last_tick = now; }
  }
  for (int i = 0; i < S.nconns; i++) {
    cconn *k = &S.conns[i];
    if (k->state != CC_READY || k->bye_sent || k->flushed) continue;
    /* A live coordinator answers within 2.5 s: this one is stopped,
     * overloaded or cut off, and what it would have said is lost. */
    char msg[600];
    snprintf(msg, sizeof msg,
             "the cross-rank coordinator %s did not confirm within %.0f s at exit that this "
             "process's operations were matched (it is stopped, overloaded, or the network path "
             "to it is down): mismatch findings about this process's last operations may be "
             "missing.",
             k->desc, (double)(xr_now_ns() - t0) / 1e9);
    report_ex(A2A_CK_NO_COORDINATOR, A2A_SEV_WARNING, NULL, 0, msg, NULL, true);
  }
  xr_bye b = {.status = 0};
  for (int i = 0; i < S.nconns; i++)
    if (S.conns[i].state == CC_READY && !S.conns[i].bye_sent) {
      conn_send(&S.conns[i], XR_MSG_BYE, &b, sizeof b);
      S.conns[i].bye_sent = 1;
    }
  flush_outputs();
  /* What the sockets did not take yet (a full buffer) goes before the close,
   * bounded: the BYE must arrive for this process to count as exited. */
  for (uint64_t t1 = xr_now_ns(); outputs_pending() && xr_now_ns() - t1 < 200000000ull;) {
    loop_once(5);
    flush_outputs();
  }
  xr_coord_report_totals();
  /* Our BYE is in the socket, ahead of its close: the coordinator - here or
   * in the lingering process - counts this process as exited, not died. */
  if (xr_coord_hosting() && xr_coord_peers_left() > 0 && !linger_fork()) {
    /* No lingering process: serve here as before, bounded. */
    xr_coord_linger(3000000000ull);
  }
  pthread_mutex_unlock(&g_work_mu);
  pthread_mutex_lock(&g_xr_mu);
  g_exit_done = 1;
  pthread_cond_broadcast(&g_cv);
  pthread_mutex_unlock(&g_xr_mu);
  return NULL;
}

static void start_thread_locked(void) {
  if (g_thread_running && g_thread_pid == getpid()) return;
  if (!xr_active()) return;
  if (!g_atfork_done) {
    /* Registered once, lazily (children inherit it). Its prepare runs
     * before the runtime's (handlers registered later run first). */
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    g_atfork_done = 1;
  }
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
  atomic_store(&g_thread_starting, 1);
  if (pthread_create(&g_thread, &at, thread_main, NULL) == 0) {
    g_thread_running = 1;
    g_thread_pid = getpid();
  } else {
    atomic_store(&g_thread_starting, 0);
  }
  pthread_attr_destroy(&at);
}

static void proc_need_thread(void) {
  pthread_mutex_lock(&g_xr_mu);
  start_thread_locked();
  pthread_mutex_unlock(&g_xr_mu);
}

/* The address a coordinator binds: the one in the id (NCCL's bootstrap
 * root, which honours NCCL_SOCKET_IFNAME) when it is IPv4 and local, else
 * the NCCL_SOCKET_IFNAME interface, else loopback. */
static uint32_t bind_address(const unsigned char *id) {
  uint16_t fam;
  memcpy(&fam, id + 8, sizeof fam);
  if (fam == AF_INET) {
    struct sockaddr_in sin;
    memcpy(&sin, id + 8, sizeof sin);
    if (sin.sin_addr.s_addr) return sin.sin_addr.s_addr;
  }
  const char *ifn = getenv("NCCL_SOCKET_IFNAME");
  uint32_t a = 0;
  struct ifaddrs *ifs = NULL;
  if (ifn && *ifn && getifaddrs(&ifs) == 0) {
    const char *want = ifn[0] == '=' || ifn[0] == '^' ? ifn + 1 : ifn;
    for (struct ifaddrs *i = ifs; i && !a; i = i->ifa_next)
      if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && ifn[0] != '^' &&
          strncmp(i->ifa_name, want, strlen(want)) == 0)
        a = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
    freeifaddrs(ifs);
  }
  return a ? a : htonl(INADDR_LOOPBACK);
}

static void proc_uid_created(unsigned char *id) {
  if (!xr_active()) return;
  /* A deterministic id (NCCL_COMM_ID: every process calls ncclGetUniqueId
   * and NCCL gives each the same bytes, magic NCCL_MAGIC) must stay
   * identical across processes: writing a per-process record into it would
   * make the ranks' ids differ, and NCCL (which hashes all 128 bytes) would
   * no longer connect them. Such ids get no coordinator record; ranks use
   * A2ACHECK_COORDINATOR or run without cross-rank checks. */
  static const uint64_t nccl_fixed_magic = 0x0280028002800280ULL;
  uint64_t magic;
  memcpy(&magic, id, sizeof magic);
  if (magic == nccl_fixed_magic || getenv("NCCL_COMM_ID")) return;
  /* Only when NCCL left the tail zero (it does: magic + sockaddr). */
  for (int i = XR_IDREC_OFF; i < 128; i++)
    if (id[i]) return;
  /* The job's secret: random, carried by the id to every rank. */
  uint8_t token[XR_TOKEN_BYTES];
  xr_random(token, sizeof token);
  xr_idrec rec;
  pthread_mutex_lock(&g_xr_mu);
  int rc = xr_coord_listen(bind_address(id), 0, token, &rec);
  if (rc != 0) rc = xr_coord_listen(htonl(INADDR_LOOPBACK), 0, token, &rec);
  if (rc == 0) {
    memcpy(id + XR_IDREC_OFF, &rec, sizeof rec);
    start_thread_locked();
  }
  pthread_mutex_unlock(&g_xr_mu);
}

static void proc_exit(void) {
  pthread_mutex_lock(&g_xr_mu);
  int running = g_thread_running && g_thread_pid == getpid() &&
                !pthread_equal(pthread_self(), g_thread);
  if (running) {
    atomic_store(&g_exit_req, 1);
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 8;
    while (!g_exit_done)
      if (pthread_cond_timedwait(&g_cv, &g_xr_mu, &dl) == ETIMEDOUT) break;
  }
  pthread_mutex_unlock(&g_xr_mu);
}

static uint32_t proc_end_wait_begin(void) {
  uint32_t id = 0;
  pthread_mutex_lock(&g_xr_mu);
  /* Only a process whose own background thread runs (a forked child that
   * has not started its own owns no connection), never on that thread,
   * never once exiting or failing. */
  if (g_thread_running && g_thread_pid == getpid() && !pthread_equal(pthread_self(), g_thread) &&
      !atomic_load(&g_exit_req) && !g_exit_done && !atomic_load(&g_failing_pub)) {
    for (int i = 0; i < XR_EWAIT_SLOTS; i++)
      if (!g_ewait[i].id) {
        if (++g_ewait_next == 0) g_ewait_next = 1;
        id = g_ewait_next;
        g_ewait[i].id = id;
        g_ewait[i].done = 0;
        break;
      }
  }
  pthread_mutex_unlock(&g_xr_mu);
  return id;
}

static void proc_end_wait(uint32_t id, uint64_t max_ns) {
  if (!id) return;
  pthread_mutex_lock(&g_xr_mu);
  int i = 0;
  while (i < XR_EWAIT_SLOTS && g_ewait[i].id != id) i++;
  if (i < XR_EWAIT_SLOTS) {
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    uint64_t ns = (uint64_t)dl.tv_nsec + max_ns;
    dl.tv_sec += (time_t)(ns / 1000000000ull);
    dl.tv_nsec = (long)(ns % 1000000000ull);
    while (max_ns && !g_ewait[i].done && !g_exit_done && !atomic_load(&g_failing_pub) &&
           g_thread_pid == getpid())
      if (pthread_cond_timedwait(&g_cv, &g_xr_mu, &dl) == ETIMEDOUT) break;
    g_ewait[i].id = 0;
  }
  pthread_mutex_unlock(&g_xr_mu);
}

static void proc_after_fork_child(void) {
  /* Only the forking thread exists here. Close the inherited sockets (the
   * parent keeps its own copies) and forget the tables without freeing:
   * another thread of the parent may have been using them. */
  pthread_mutex_init(&g_xr_mu, NULL);
  pthread_cond_init(&g_cv, NULL);
  for (int i = 0; i < S.nconns; i++)
    if (S.conns[i].fd >= 0) close(S.conns[i].fd);
  memset(&S, 0, sizeof S); /* S.sq leaks in the child, as the units do */
  g_thread_running = 0;
  g_thread_pid = 0;
  g_exit_done = 0;
  atomic_store(&g_exit_req, 0);
  memset(g_ewait, 0, sizeof g_ewait);
  atomic_store(&g_failing_pub, 0);
  xr_coord_after_fork_child();
}

const xr_port xr_process_port = {
    .uid_created = proc_uid_created,
    .need_thread = proc_need_thread,
    .end_wait_begin = proc_end_wait_begin,
    .end_wait = proc_end_wait,
    .process_exit = proc_exit,
    .after_fork_child = proc_after_fork_child,
};
