/* fuzz_proto.c - the fuzz entry of the side channel: everything a peer's
 * bytes reach, without the sockets. The first input byte chooses the path:
 *
 *   0  the coordinator before authentication: the stream is read as
 *      xr_coord.c reads it (exact-size HELLO, then AUTH, in pieces of
 *      varying size), proofs checked against a fixed secret; if the seed
 *      authenticated, the rest is sealed frames (xr_unseal) dispatched as
 *      the coordinator does: matcher, progress states, the deadlock policy;
 *   1  the client before authentication: CHALLENGE at its exact size, the
 *      coordinator's proof checked; if valid, the rest is sealed frames from
 *      the coordinator (verdicts decoded and sanitized as xr_chan.c does);
 *   2  plain frames into the coordinator's dispatch (as after the seal), a
 *      connection byte before each: the matcher, wait-for graph and
 *      confirmation policy over hostile but authenticated input;
 *   3  plain frames into the client's dispatch;
 *   4  the sanitizer, whose output contract is checked (abort if broken).
 *
 * Must never crash, hang, leak or read out of bounds on any input. With
 * -DA2A_LIBFUZZER it is a libFuzzer target (xrank/CMakeLists.txt,
 * A2A_FUZZ=ON, clang; run by tests/fuzz); the unit tests
 * (tests/unit/test_xrank_proto.c) replay the seed corpus
 * tests/fuzz/corpus/proto/ - and every input a fuzzer ever crashed on,
 * kept there - through xr_fuzz_one in every build. The seeds are written
 * by xr_fuzz_seeds (tests/fuzz/gen_proto_seeds.c).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2a_checks.h"
#include "xrank_auth.h"
#include "xrank_confirm.h"
#include "xrank_match.h"
#include "xrank_proto.h"

int xr_fuzz_one(const uint8_t *data, size_t size);
/* Write the seed corpus into dir (one file per seed); returns how many, or
 * -1 on an I/O error. */
int xr_fuzz_seeds(const char *dir);
/* Messages the last xr_fuzz_one dispatched after the handshake (the seeds'
 * test checks that the sessions reach that far). */
unsigned xr_fuzz_dispatched;

#define FUZZ_CONNS 4

/* The fixed secrets and nonces the seeds are made with. */
static const uint8_t k_token[XR_TOKEN_BYTES] = {0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a,
                                                0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a};
static void coord_nonce(uint8_t n[XR_NONCE_BYTES]) { memset(n, 0xc5, XR_NONCE_BYTES); }
static void client_hello(xr_hello *h) {
  memset(h, 0, sizeof *h);
  h->version = XR_PROTO_VERSION;
  memset(h->nonce, 0x3c, sizeof h->nonce);
  h->pid = 1234;
  h->grank = 0;
  strcpy(h->host, "fuzzhost");
}

/* ---- a coordinator without sockets (mirrors xr_coord.c's dispatch) ---- */

typedef struct fcoord {
  xr_matcher *m;
  xr_procstate st[FUZZ_CONNS];
  int has_state[FUZZ_CONNS], bye[FUZZ_CONNS];
  xr_confirm confirm;
  uint64_t now;
  uint8_t vbuf[sizeof(xr_hdr) + 128 + XR_MAX_TEXT + XR_MAX_JSON];
} fcoord;

static char g_text[XR_MAX_TEXT * 2], g_json[XR_MAX_JSON + 1];

/* A verdict goes through the encoder and back through the client's path. */
static void client_verdict(const xr_hdr *h, const uint8_t *pl) {
  xr_verdict v;
  if (xr_get_verdict(h, pl, &v) != 0) return;
  xr_sanitize_text(g_text, sizeof g_text, v.text, true);
  if (v.json) xr_sanitize_text(g_json, sizeof g_json, v.json, false);
}

static void f_verdict(void *ctx, int conn, const xr_verdict *v) {
  fcoord *k = ctx;
  (void)conn;
  size_t len = 0;
  if (!xr_put_verdict(k->vbuf, sizeof k->vbuf, &len, v)) return;
  xr_hdr h;
  const uint8_t *pl;
  size_t used;
  if (xr_frame(k->vbuf, len, &h, &pl, &used) != 1) abort(); /* our own encoder */
  client_verdict(&h, pl);
}

static const char *f_site(void *ctx, int conn, uint64_t site) {
  (void)ctx;
  (void)conn;
  return site & 1 ? "fn+0x10 (lib.so)" : NULL;
}

static const char *e_site(void *ctx, size_t proc, uint64_t site) {
  (void)proc;
  return f_site(ctx, 0, site);
}
static const char *e_mismatch(void *ctx, uint64_t comm) {
  fcoord *k = ctx;
  return xr_matcher_last_mismatch(k->m, comm);
}
static void e_emit(void *ctx, const xr_confirm_verdict *cv) {
  xr_verdict v = {.comm = cv->comm, .site = cv->site, .severity = cv->fail ? 2 : 1,
                  .flags = cv->fail ? XR_VERDICT_FAIL : 0u, .check = cv->check, .text = cv->text,
                  .json = cv->json};
  f_verdict(ctx, (int)cv->proc, &v);
}

static void fc_init(fcoord *k) {
  memset(k, 0, sizeof *k);
  xr_match_out out = {.ctx = k, .verdict = f_verdict, .site_name = f_site};
  k->m = xr_matcher_new(&out);
  xr_confirm_opts co = {.confirm_s = 0.5, .hang_timeout_s = 2.0, .stall_s = 1.0};
  xr_confirm_init(&k->confirm, &co);
  for (int i = 0; i < FUZZ_CONNS; i++) {
    char host[16];
    snprintf(host, sizeof host, "h%d", i & 1);
    xr_matcher_hello(k->m, i, 100 + i, i, host);
  }
}

static void fc_evaluate(fcoord *k) {
  xr_procstate ps[FUZZ_CONNS];
  uint32_t ids[FUZZ_CONNS];
  size_t n = 0;
  for (int i = 0; i < FUZZ_CONNS; i++)
    if (k->has_state[i]) {
      ps[n] = k->st[i];
      ps[n].alive = !k->bye[i];
      ps[n].died = 0;
      ids[n++] = (uint32_t)i;
    }
  if (!n) return;
  xr_confirm_io io = {.ctx = k, .site_name = e_site, .mismatch = e_mismatch, .emit = e_emit};
  xr_confirm_step(&k->confirm, k->now, ps, ids, n, &io);
}

static int fc_handle(fcoord *k, int i, const xr_hdr *h, const uint8_t *pl) {
  static xr_op ops[XR_MAX_OPS_PER_MSG];
  k->now += 100000000ull;
  switch (h->type) {
  case XR_MSG_COMMREG: {
    xr_commreg r;
    if (xr_get_fixed(h, pl, &r, sizeof r) != 0) return -1;
    xr_matcher_register(k->m, i, &r);
    return 0;
  }
  case XR_MSG_OPS: {
    uint32_t n = 0;
    if (xr_get_ops(h, pl, ops, XR_MAX_OPS_PER_MSG, &n) != 0) return -1;
    for (uint32_t j = 0; j < n; j++) xr_matcher_op(k->m, i, &ops[j]);
    return 0;
  }
  case XR_MSG_SITE: {
    xr_site s;
    if (xr_get_fixed(h, pl, &s, sizeof s) != 0) return -1;
    char t[sizeof s.text];
    xr_sanitize_text(t, sizeof t, s.text, false);
    return 0;
  }
  case XR_MSG_COMMEND: {
    xr_commend e;
    if (xr_get_fixed(h, pl, &e, sizeof e) != 0) return -1;
    xr_matcher_comm_end(k->m, i, e.comm, e.rank, e.how);
    xr_matcher_tick(k->m, 1ull << 40); /* (an abort's grace passed: its verdicts now) */
    return 0;
  }
  case XR_MSG_STATE: {
    xr_procstate st;
    if (xr_get_state(h, pl, &st) != 0) return -1;
    if (k->has_state[i]) xr_state_free(&k->st[i]);
    k->st[i] = st;
    k->st[i].pid = 100 + i;
    k->st[i].grank = i;
    snprintf(k->st[i].host, sizeof k->st[i].host, "h%d", i & 1);
    k->has_state[i] = 1;
    fc_evaluate(k);
    return 0;
  }
  case XR_MSG_BYE: {
    xr_bye b;
    if (xr_get_fixed(h, pl, &b, sizeof b) != 0) return -1;
    k->bye[i] = 1;
    if (b.status & 1) xr_matcher_conn_died(k->m, i);
    else xr_matcher_conn_gone(k->m, i);
    fc_evaluate(k);
    return 0;
  }
  case XR_MSG_COMMFLUSH: {
    xr_commflush f;
    if (xr_get_fixed(h, pl, &f, sizeof f) != 0) return -1;
    (void)xr_matcher_pending_rank(k->m, i, f.comm, f.rank);
    return 0;
  }
  case XR_MSG_FLUSH: {
    xr_flush f;
    if (xr_get_fixed(h, pl, &f, sizeof f) != 0) return -1;
    (void)xr_matcher_pending(k->m, i);
    return 0;
  }
  default:
    return -1;
  }
}

static void fc_free(fcoord *k) {
  for (int i = 0; i < FUZZ_CONNS; i++)
    if (k->has_state[i]) xr_state_free(&k->st[i]);
  xr_confirm_free(&k->confirm);
  xr_matcher_free(k->m);
}

/* The client's dispatch (mirrors xr_chan.c conn_input). */
static int client_handle(const xr_hdr *h, const uint8_t *pl) {
  switch (h->type) {
  case XR_MSG_PING: { xr_ping p; return xr_get_fixed(h, pl, &p, sizeof p); }
  case XR_MSG_FLUSHED: { xr_flush f; return xr_get_fixed(h, pl, &f, sizeof f); }
  case XR_MSG_COMMFLUSHED: { xr_commflush f; return xr_get_fixed(h, pl, &f, sizeof f); }
  case XR_MSG_VERDICT: client_verdict(h, pl); return 0;
  default: return -1;
  }
}

/* Frames from p[0..n); mac NULL: plain. to_coord: dispatch as the
 * coordinator (connection byte first when plain). */
static void frames(const uint8_t *p, size_t n, xr_mac *mac, bool to_coord, fcoord *k) {
  size_t off = 0;
  while (off < n) {
    int conn = 0;
    if (to_coord && !mac) conn = p[off++] % FUZZ_CONNS;
    xr_hdr h;
    const uint8_t *pl;
    size_t used;
    if (off > n || xr_frame(p + off, n - off, &h, &pl, &used) != 1) return;
    if (used > n - off) abort();
    if (mac && xr_unseal(mac, p + off, &h) != 0) return;
    if (!mac && (h.flags & XR_HDR_SEALED)) return;
    int r = to_coord ? fc_handle(k, conn, &h, pl) : client_handle(&h, pl);
    if (r != 0) return; /* the connection would close */
    xr_fuzz_dispatched++;
    off += used;
  }
}

/* Exact-size reads of one handshake message: pieces of 1..16 bytes, never
 * past the message. Returns the bytes consumed, 0 on a refusal. */
static size_t hs_read(const uint8_t *p, size_t n, uint16_t type, size_t plen, uint8_t *buf) {
  size_t have = 0, i = 0, need = sizeof(xr_hdr) + plen;
  while (have < need) {
    size_t piece = 1 + (i++ * 7) % 16;
    if (piece > need - have) piece = need - have;
    if (piece > n - have) piece = n - have;
    if (!piece) return 0;
    memcpy(buf + have, p + have, piece);
    have += piece;
    int r = xr_hs_check(buf, have, type, plen);
    if (r < 0) return 0;
    if (r == 1) return have;
  }
  return 0;
}

static void coordinator_path(const uint8_t *p, size_t n) {
  uint8_t buf[sizeof(xr_hdr) + sizeof(xr_hello)];
  size_t used = hs_read(p, n, XR_MSG_HELLO, sizeof(xr_hello), buf);
  if (!used) return;
  xr_hello h;
  memcpy(&h, buf + sizeof(xr_hdr), sizeof h);
  if (h.version != XR_PROTO_VERSION || h.flags || !memchr(h.host, 0, sizeof h.host)) return;
  xr_secret sec;
  xr_secret_init(&sec, k_token);
  xr_challenge c = {.version = XR_PROTO_VERSION};
  coord_nonce(c.nonce);
  xr_auth_coord_proof(&sec, &h, c.nonce, c.proof);
  size_t u2 = hs_read(p + used, n - used, XR_MSG_AUTH, sizeof(xr_auth), buf);
  if (!u2) return;
  xr_auth a;
  memcpy(&a, buf + sizeof(xr_hdr), sizeof a);
  uint8_t want[XR_PROOF_BYTES];
  xr_auth_client_proof(&sec, &h, &c, want);
  if (!xr_ct_equal(want, a.proof, sizeof want)) return;
  xr_mac c2s, s2c;
  xr_auth_session(&sec, &h, &c, &c2s, &s2c);
  fcoord *k = malloc(sizeof *k);
  if (!k) return;
  fc_init(k);
  frames(p + used + u2, n - used - u2, &c2s, true, k);
  fc_free(k);
  free(k);
}

static void client_path(const uint8_t *p, size_t n) {
  uint8_t buf[sizeof(xr_hdr) + sizeof(xr_challenge)];
  size_t used = hs_read(p, n, XR_MSG_CHALLENGE, sizeof(xr_challenge), buf);
  if (!used) return;
  xr_challenge c;
  memcpy(&c, buf + sizeof(xr_hdr), sizeof c);
  xr_hello h;
  client_hello(&h);
  xr_secret sec;
  xr_secret_init(&sec, k_token);
  uint8_t want[XR_PROOF_BYTES];
  xr_auth_coord_proof(&sec, &h, c.nonce, want);
  if (c.version != XR_PROTO_VERSION || !xr_ct_equal(want, c.proof, sizeof want)) return;
  xr_mac c2s, s2c;
  xr_auth_session(&sec, &h, &c, &c2s, &s2c);
  frames(p + used, n - used, &s2c, false, NULL);
}

/* The sanitizer's contract: the output is shorter than cap, NUL-terminated,
 * has no control byte but newlines (multiline), no ESC, no C1 control, and
 * every line after the first starts with two spaces. */
static void sanitize_path(const uint8_t *p, size_t n) {
  char *src = malloc(n + 1);
  if (!src) return;
  memcpy(src, p, n);
  src[n] = 0;
  char out[512];
  for (int ml = 0; ml < 2; ml++) {
    size_t caps[3] = {1, 17, sizeof out};
    for (int c = 0; c < 3; c++) {
      size_t len = xr_sanitize_text(out, caps[c], src, ml);
      if (len >= caps[c] || out[len] != 0 || strlen(out) != len) abort();
      for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)out[i];
        if ((ch < 0x20 && !(ml && ch == '\n')) || ch == 0x7f) abort();
        if (ch == 0xc2 && i + 1 < len && (unsigned char)out[i + 1] >= 0x80 &&
            (unsigned char)out[i + 1] <= 0x9f)
          abort();
        if (ch == '\n' && !(i + 2 < len ? out[i + 1] == ' ' && out[i + 2] == ' ' : 1)) abort();
      }
    }
  }
  free(src);
}

int xr_fuzz_one(const uint8_t *data, size_t size) {
  xr_fuzz_dispatched = 0;
  if (size < 1) return 0;
  const uint8_t *p = data + 1;
  size_t n = size - 1;
  switch (data[0] % 5) {
  case 0: coordinator_path(p, n); break;
  case 1: client_path(p, n); break;
  case 2: {
    fcoord *k = malloc(sizeof *k);
    if (!k) break;
    fc_init(k);
    frames(p, n, NULL, true, k);
    fc_free(k);
    free(k);
    break;
  }
  case 3: frames(p, n, NULL, false, NULL); break;
  default: sanitize_path(p, n); break;
  }
  return 0;
}

/* ---- seeds ---- */

typedef struct seed {
  uint8_t b[1 << 16];
  size_t n;
} seed;

static void put(seed *s, xr_msgtype t, const void *p, size_t n) {
  if (!xr_put(s->b, sizeof s->b, &s->n, t, p, n)) abort();
}
static void put_sealed(seed *s, xr_mac *m, xr_msgtype t, const void *p, size_t n) {
  size_t at = s->n;
  put(s, t, p, n);
  if (!xr_seal(m, s->b + at, s->n - at, sizeof s->b - at)) abort();
  s->n += XR_TAG_BYTES;
}

static int write_seed(const char *dir, const char *name, const seed *s) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  int ok = fwrite(s->b, 1, s->n, f) == s->n;
  return fclose(f) == 0 && ok ? 0 : -1;
}

/* A realistic client session body: registration, sites, operations that
 * mismatch, a progress state, an end, flushes. to_coord adds the
 * connection byte of the plain path. */
static void session(seed *s, xr_mac *m, int plain) {
#define PUT(T_, P_, N_)                                                 \
  do {                                                                  \
    if (plain) s->b[s->n++] = (uint8_t)(conn_);                         \
    if (m) put_sealed(s, m, T_, P_, N_); else put(s, T_, P_, N_);      \
  } while (0)
  for (int conn_ = 0; conn_ < (plain ? 2 : 1); conn_++) {
    xr_commreg r = {.comm = 0xabc, .nranks = 2, .rank = conn_, .device = conn_, .site = 0x11};
    PUT(XR_MSG_COMMREG, &r, sizeof r);
    xr_site st = {.site = 0x11};
    strcpy(st.text, conn_ ? "f+0x1 (a.so)\n[forged] error\x1b[2J" : "main+0x40 (prog)");
    PUT(XR_MSG_SITE, &st, sizeof st);
    xr_op ops[3] = {
        {.comm = 0xabc, .site = 0x11, .count = conn_ ? 100 : 64, .group = 1, .rank = conn_,
         .peer = 1 - conn_, .root = -1, .kind = XR_OP_SEND, .coll = -1, .dtype = 7, .redop = -1},
        {.comm = 0xabc, .site = 0x13, .count = 64, .group = 1, .rank = conn_, .peer = 1 - conn_,
         .root = -1, .kind = XR_OP_RECV, .coll = -1, .dtype = 7, .redop = -1},
        {.comm = 0xabc, .site = 0x15, .count = conn_ ? 8 : 16, .group = 2, .rank = conn_,
         .peer = -1, .root = -1, .kind = XR_OP_COLL, .coll = 0, .dtype = 7, .redop = 0}};
    uint8_t opsmsg[8 + sizeof ops];
    uint32_t head[2] = {3, 0};
    memcpy(opsmsg, head, 8);
    memcpy(opsmsg + 8, ops, sizeof ops);
    PUT(XR_MSG_OPS, opsmsg, sizeof opsmsg);
    xr_commstate cs = {.comm = 0xabc, .rank = conn_, .nranks = 2, .coll_posted = 1,
                       .peer_off = 0, .npeers = 1};
    xr_unitstate us = {.comm = 0xabc, .stream = 0x10, .site = 0x15, .count = 16, .group = 2,
                       .coll_lo = 0, .coll_hi = 1, .peer_off = 1, .npeers = 1,
                       .kind = XR_OP_COLL, .coll = 0, .dtype = 7, .rank = conn_};
    xr_threadstate ts = {.stream = 0x10, .site = 0x17, .blocked_ms = 5000, .thread = 1,
                         .wait = XR_WAIT_STREAM};
    xr_peerent pe[2] = {{.peer = 1 - conn_, .send_hi = 1, .recv_hi = 1},
                        {.peer = 1 - conn_, .send_lo = 0, .send_hi = 1, .recv_lo = 0, .recv_hi = 1}};
    xr_procstate ps = {.version = 1, .ncomms = 1, .nunits = 1, .nthreads = 1, .npeers = 2,
                       .comms = &cs, .units = &us, .threads = &ts, .peers = pe};
    uint8_t sb[1024];
    size_t sl = 0;
    if (!xr_put_state(sb, sizeof sb, &sl, &ps)) abort();
    PUT(XR_MSG_STATE, sb + sizeof(xr_hdr), sl - sizeof(xr_hdr));
    PUT(XR_MSG_STATE, sb + sizeof(xr_hdr), sl - sizeof(xr_hdr));
    xr_commflush cf = {.comm = 0xabc, .rank = conn_, .seq = 1};
    PUT(XR_MSG_COMMFLUSH, &cf, sizeof cf);
    xr_commend ce = {.comm = 0xabc, .how = 1, .rank = conn_};
    PUT(XR_MSG_COMMEND, &ce, sizeof ce);
    xr_flush fl = {.token = 1};
    PUT(XR_MSG_FLUSH, &fl, sizeof fl);
  }
  xr_bye by = {.status = 1};
  int conn_ = 1;
  PUT(XR_MSG_BYE, &by, sizeof by);
#undef PUT
}

static void verdicts(seed *s, xr_mac *m) {
  const char *texts[] = {"rank 0 sends 4 B but rank 1 receives 8 B",
                         "deadlock:\n  comm 1 (2 ranks):\n    rank 0 waits\n[fake] error x\x1b[31m"};
  for (int i = 0; i < 2; i++) {
    xr_verdict v = {.comm = 0xabc, .site = 0x11, .severity = 2, .flags = (uint32_t)i,
                    .check = i ? A2A_CK_GROUP_DEADLOCK : A2A_CK_SIZE_P2P_MISMATCH,
                    .text = texts[i], .json = i ? "{\"a\":[1,2]}" : NULL};
    size_t at = s->n;
    if (!xr_put_verdict(s->b, sizeof s->b, &s->n, &v)) abort();
    if (m && !xr_seal(m, s->b + at, s->n - at, sizeof s->b - at)) abort();
    if (m) s->n += XR_TAG_BYTES;
  }
  xr_ping pg = {.n = 5};
  xr_flush fl = {.token = 1};
  xr_commflush cf = {.comm = 0xabc, .rank = 0, .seq = 3};
  if (m) {
    put_sealed(s, m, XR_MSG_PING, &pg, sizeof pg);
    put_sealed(s, m, XR_MSG_FLUSHED, &fl, sizeof fl);
    put_sealed(s, m, XR_MSG_COMMFLUSHED, &cf, sizeof cf);
  } else {
    put(s, XR_MSG_PING, &pg, sizeof pg);
    put(s, XR_MSG_FLUSHED, &fl, sizeof fl);
    put(s, XR_MSG_COMMFLUSHED, &cf, sizeof cf);
  }
}

int xr_fuzz_seeds(const char *dir) {
  static seed s;
  int count = 0;
  xr_secret sec;
  xr_secret_init(&sec, k_token);
  xr_hello h;
  client_hello(&h);
  xr_challenge c = {.version = XR_PROTO_VERSION};
  coord_nonce(c.nonce);
  xr_auth_coord_proof(&sec, &h, c.nonce, c.proof);
  xr_auth a;
  xr_auth_client_proof(&sec, &h, &c, a.proof);
  xr_mac c2s, s2c;

  /* 0: a whole authenticated client session as the coordinator reads it. */
  s.n = 0;
  s.b[s.n++] = 0;
  put(&s, XR_MSG_HELLO, &h, sizeof h);
  put(&s, XR_MSG_AUTH, &a, sizeof a);
  xr_auth_session(&sec, &h, &c, &c2s, &s2c);
  session(&s, &c2s, 0);
  if (write_seed(dir, "coord-session", &s)) return -1;
  count++;
  /* 0: a HELLO with a 1 MiB length, and one with a wrong proof. */
  s.n = 0;
  s.b[s.n++] = 0;
  xr_hdr big = {.magic = XR_MAGIC, .type = XR_MSG_HELLO, .len = 1u << 20};
  memcpy(s.b + s.n, &big, sizeof big);
  s.n += sizeof big;
  if (write_seed(dir, "coord-hello-1mib", &s)) return -1;
  count++;
  s.n = 0;
  s.b[s.n++] = 0;
  put(&s, XR_MSG_HELLO, &h, sizeof h);
  xr_auth bad = a;
  bad.proof[0] ^= 1;
  put(&s, XR_MSG_AUTH, &bad, sizeof bad);
  if (write_seed(dir, "coord-bad-proof", &s)) return -1;
  count++;
  /* 1: the client reading an authenticated coordinator's answers. */
  s.n = 0;
  s.b[s.n++] = 1;
  put(&s, XR_MSG_CHALLENGE, &c, sizeof c);
  xr_auth_session(&sec, &h, &c, &c2s, &s2c);
  verdicts(&s, &s2c);
  if (write_seed(dir, "client-session", &s)) return -1;
  count++;
  /* 1: the version-2 fake coordinator of issue 15 (WELCOME + VERDICT). */
  s.n = 0;
  s.b[s.n++] = 1;
  uint32_t w[2] = {2, 0};
  put(&s, XR_MSG_CHALLENGE, w, sizeof w);
  if (write_seed(dir, "client-legacy-fake", &s)) return -1;
  count++;
  /* 2, 3: plain sessions into both dispatchers. */
  s.n = 0;
  s.b[s.n++] = 2;
  session(&s, NULL, 1);
  if (write_seed(dir, "coord-plain", &s)) return -1;
  count++;
  s.n = 0;
  s.b[s.n++] = 3;
  verdicts(&s, NULL);
  if (write_seed(dir, "client-plain", &s)) return -1;
  count++;
  /* 4: text with every kind of hazard. */
  s.n = 0;
  s.b[s.n++] = 4;
  const char *t = "story:\n  line\n[2026-01-01T00:00:00Z] error x\x1b[2J\r\x7f\t\xc2\x9b\xe2\x80\xae"
                  "\xc3\xa9\xf0\x9f\x98\x80\xc0\xaf\xed\xa0\x80\n\na2acheck: x";
  memcpy(s.b + s.n, t, strlen(t));
  s.n += strlen(t);
  if (write_seed(dir, "text-hazards", &s)) return -1;
  count++;
  return count;
}

#ifdef A2A_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return xr_fuzz_one(data, size); }
#endif
