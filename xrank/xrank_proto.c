/* xrank_proto.c - encoders and the strict parser of the side channel's wire
 * protocol (see xrank_proto.h). No I/O, no global state. */
#include "a2a_checks.h"
#include "xrank_proto.h"

#include "a2a_core.h"

#include <stdlib.h>
#include <string.h>

/* Fixed payload size per type; 0 = variable (checked by its decoder). */
static size_t fixed_size(uint16_t type) {
  switch (type) {
  case XR_MSG_HELLO: return sizeof(xr_hello);
  case XR_MSG_CHALLENGE: return sizeof(xr_challenge);
  case XR_MSG_AUTH: return sizeof(xr_auth);
  case XR_MSG_PING: return sizeof(xr_ping);
  case XR_MSG_COMMREG: return sizeof(xr_commreg);
  case XR_MSG_SITE: return sizeof(xr_site);
  case XR_MSG_COMMEND: return sizeof(xr_commend);
  case XR_MSG_BYE: return sizeof(xr_bye);
  case XR_MSG_FLUSH: return sizeof(xr_flush);
  case XR_MSG_FLUSHED: return sizeof(xr_flush);
  case XR_MSG_COMMFLUSH: return sizeof(xr_commflush);
  case XR_MSG_COMMFLUSHED: return sizeof(xr_commflush);
  default: return 0;
  }
}

bool xr_put(uint8_t *buf, size_t cap, size_t *len, xr_msgtype type,
            const void *payload, size_t plen) {
  if (plen > XR_MAX_PAYLOAD || *len > cap || cap - *len < sizeof(xr_hdr) + plen)
    return false;
  xr_hdr h = {.magic = XR_MAGIC, .type = (uint16_t)type, .flags = 0,
              .len = (uint32_t)plen};
  memcpy(buf + *len, &h, sizeof h);
  if (plen) memcpy(buf + *len + sizeof h, payload, plen);
  *len += sizeof h + plen;
  return true;
}

bool xr_put_ops(uint8_t *buf, size_t cap, size_t *len, const xr_op *ops,
                uint32_t n) {
  if (n == 0 || n > XR_MAX_OPS_PER_MSG) return false;
  size_t plen = 8 + (size_t)n * sizeof(xr_op);
  if (*len > cap || cap - *len < sizeof(xr_hdr) + plen) return false;
  xr_hdr h = {.magic = XR_MAGIC, .type = XR_MSG_OPS, .len = (uint32_t)plen};
  uint32_t head[2] = {n, 0};
  uint8_t *p = buf + *len;
  memcpy(p, &h, sizeof h);
  memcpy(p + sizeof h, head, sizeof head);
  memcpy(p + sizeof h + sizeof head, ops, (size_t)n * sizeof(xr_op));
  *len += sizeof h + plen;
  return true;
}

/* VERDICT payload: {u64 comm, u64 site, i32 sev, u32 flags, char check[48],
 * u32 textlen, u32 jsonlen} then text and json, each including its NUL
 * (jsonlen 0: no details). */
typedef struct vhead {
  uint64_t comm, site;
  int32_t severity;
  uint32_t flags;
  char check[48];
  uint32_t textlen, jsonlen;
  uint32_t rank_p1, pad;
} vhead;

bool xr_put_verdict(uint8_t *buf, size_t cap, size_t *len,
                    const xr_verdict *v) {
  vhead h = {.comm = v->comm, .site = v->site, .severity = v->severity,
             .flags = v->flags, .rank_p1 = v->rank_p1};
  const char *name = a2a_check_name((a2a_check_id)v->check);
  if (a2a_check_by_name(name) == A2A_CK_NONE || strlen(name) >= sizeof h.check || !v->text)
    return false;
  strcpy(h.check, name);
  size_t tl = strlen(v->text) + 1, jl = v->json ? strlen(v->json) + 1 : 0;
  if (tl > XR_MAX_TEXT) tl = XR_MAX_TEXT;   /* truncated below */
  if (jl > XR_MAX_JSON) jl = 0;             /* a cut JSON object is invalid */
  h.textlen = (uint32_t)tl;
  h.jsonlen = (uint32_t)jl;
  size_t plen = sizeof h + tl + jl;
  if (*len > cap || cap - *len < sizeof(xr_hdr) + plen) return false;
  xr_hdr fh = {.magic = XR_MAGIC, .type = XR_MSG_VERDICT, .len = (uint32_t)plen};
  uint8_t *p = buf + *len;
  memcpy(p, &fh, sizeof fh);
  p += sizeof fh;
  memcpy(p, &h, sizeof h);
  p += sizeof h;
  memcpy(p, v->text, tl - 1);
  p[tl - 1] = 0;
  p += tl;
  if (jl) memcpy(p, v->json, jl);
  *len += sizeof fh + plen;
  return true;
}

/* STATE payload: {u32 version, flags, ncomms, nunits, nthreads, npeers}
 * then comms, units, threads, peers (each array of its wire record). */
typedef struct shead {
  uint32_t version, flags, ncomms, nunits, nthreads, npeers;
} shead;

#define XR_STATE_MAX_ITEMS 65536u

static size_t state_bytes(uint32_t nc, uint32_t nu, uint32_t nt, uint32_t np) {
  return sizeof(shead) + (size_t)nc * sizeof(xr_commstate) +
         (size_t)nu * sizeof(xr_unitstate) + (size_t)nt * sizeof(xr_threadstate) +
         (size_t)np * sizeof(xr_peerent);
}

size_t xr_state_bytes(const xr_procstate *st) {
  return sizeof(xr_hdr) + state_bytes(st->ncomms, st->nunits, st->nthreads, st->npeers);
}

bool xr_put_state(uint8_t *buf, size_t cap, size_t *len,
                  const xr_procstate *st) {
  size_t plen = state_bytes(st->ncomms, st->nunits, st->nthreads, st->npeers);
  if (plen > XR_MAX_PAYLOAD || *len > cap || cap - *len < sizeof(xr_hdr) + plen)
    return false;
  xr_hdr fh = {.magic = XR_MAGIC, .type = XR_MSG_STATE, .len = (uint32_t)plen};
  shead h = {st->version, 0, st->ncomms, st->nunits, st->nthreads, st->npeers};
  uint8_t *p = buf + *len;
  memcpy(p, &fh, sizeof fh); p += sizeof fh;
  memcpy(p, &h, sizeof h); p += sizeof h;
#define PUT_ARR(arr, n) do { size_t b = (size_t)(n) * sizeof *(arr); \
    if (b) memcpy(p, (arr), b);                                            \
    p += b; } while (0)
  PUT_ARR(st->comms, st->ncomms);
  PUT_ARR(st->units, st->nunits);
  PUT_ARR(st->threads, st->nthreads);
  PUT_ARR(st->peers, st->npeers);
#undef PUT_ARR
  *len += sizeof fh + plen;
  return true;
}

int xr_frame(const uint8_t *buf, size_t len, xr_hdr *hdr,
             const uint8_t **payload, size_t *used) {
  if (len < sizeof(xr_hdr)) {
    /* Reject a bad magic as early as its bytes are there. */
    uint32_t m = 0;
    memcpy(&m, buf, len < 4 ? len : 4);
    uint32_t want = XR_MAGIC;
    if (memcmp(&m, &want, len < 4 ? len : 4) != 0) return -1;
    return 0;
  }
  xr_hdr h;
  memcpy(&h, buf, sizeof h);
  if (h.magic != XR_MAGIC) return -1;
  if (h.type == 0 || h.type >= XR_MSG__COUNT) return -1;
  if (h.flags & ~(uint16_t)XR_HDR_SEALED) return -1;
  if (h.len > XR_MAX_PAYLOAD + (h.flags & XR_HDR_SEALED ? XR_SEAL_BYTES : 0)) return -1;
  if (len - sizeof h < h.len) return 0;
  *hdr = h;
  *payload = buf + sizeof h;
  *used = sizeof h + h.len;
  return 1;
}

int xr_hs_check(const uint8_t *buf, size_t have, uint16_t type, size_t plen) {
  xr_hdr want = {.magic = XR_MAGIC, .type = type, .flags = 0, .len = (uint32_t)plen};
  size_t n = have < sizeof want ? have : sizeof want;
  if (memcmp(buf, &want, n) != 0) return -1;
  if (have > sizeof want + plen) return -1;
  return have == sizeof want + plen;
}

static bool nul_in(const char *s, size_t n) { return memchr(s, 0, n) != NULL; }

int xr_check_payload(const xr_hdr *hdr, const uint8_t *payload) {
  size_t fs = fixed_size(hdr->type);
  if (fs) {
    if (hdr->len != fs) return -1;
    if (hdr->type == XR_MSG_HELLO) {
      xr_hello h;
      memcpy(&h, payload, sizeof h);
      if (!nul_in(h.host, sizeof h.host)) return -1;
    } else if (hdr->type == XR_MSG_SITE) {
      xr_site s;
      memcpy(&s, payload, sizeof s);
      if (!nul_in(s.text, sizeof s.text)) return -1;
    } else if (hdr->type == XR_MSG_COMMREG) {
      xr_commreg r;
      memcpy(&r, payload, sizeof r);
      if (r.nranks <= 0 || r.nranks > XR_MAX_NRANKS || r.rank < 0 || r.rank >= r.nranks) return -1;
    } else if (hdr->type == XR_MSG_COMMFLUSH || hdr->type == XR_MSG_COMMFLUSHED) {
      xr_commflush f;
      memcpy(&f, payload, sizeof f);
      if (f.rank < 0 || f.seq == 0) return -1;
    }
    return 0;
  }
  switch (hdr->type) {
  case XR_MSG_OPS: {
    uint32_t head[2];
    if (hdr->len < sizeof head) return -1;
    memcpy(head, payload, sizeof head);
    if (head[0] == 0 || head[0] > XR_MAX_OPS_PER_MSG) return -1;
    if (hdr->len != sizeof head + (size_t)head[0] * sizeof(xr_op)) return -1;
    return 0;
  }
  case XR_MSG_VERDICT: {
    vhead h;
    if (hdr->len < sizeof h) return -1;
    memcpy(&h, payload, sizeof h);
    if (!nul_in(h.check, sizeof h.check)) return -1;
    /* Only checks of the table: a peer cannot invent findings. */
    if (a2a_check_by_name(h.check) == A2A_CK_NONE) return -1;
    if (h.textlen == 0 || h.textlen > XR_MAX_TEXT || h.jsonlen > XR_MAX_JSON) return -1;
    if (hdr->len != sizeof h + (size_t)h.textlen + h.jsonlen) return -1;
    const char *t = (const char *)payload + sizeof h;
    if (t[h.textlen - 1] != 0) return -1;
    if (h.jsonlen && t[h.textlen + h.jsonlen - 1] != 0) return -1;
    return 0;
  }
  case XR_MSG_STATE: {
    shead h;
    if (hdr->len < sizeof h) return -1;
    memcpy(&h, payload, sizeof h);
    if (h.ncomms > XR_STATE_MAX_ITEMS || h.nunits > XR_STATE_MAX_ITEMS ||
        h.nthreads > XR_STATE_MAX_ITEMS || h.npeers > XR_STATE_MAX_ITEMS)
      return -1;
    if (hdr->len != state_bytes(h.ncomms, h.nunits, h.nthreads, h.npeers)) return -1;
    /* Every slice must lie inside the peer array. */
    const uint8_t *p = payload + sizeof h;
    for (uint32_t i = 0; i < h.ncomms; i++) {
      xr_commstate c;
      memcpy(&c, p + (size_t)i * sizeof c, sizeof c);
      if (c.peer_off > h.npeers || c.npeers > h.npeers - c.peer_off) return -1;
      if (c.nranks <= 0 || c.nranks > XR_MAX_NRANKS || c.rank < 0 || c.rank >= c.nranks) return -1;
    }
    p += (size_t)h.ncomms * sizeof(xr_commstate);
    for (uint32_t i = 0; i < h.nunits; i++) {
      xr_unitstate u;
      memcpy(&u, p + (size_t)i * sizeof u, sizeof u);
      if (u.peer_off > h.npeers || u.npeers > h.npeers - u.peer_off) return -1;
      if (u.coll_lo > u.coll_hi) return -1;
    }
    p += (size_t)h.nunits * sizeof(xr_unitstate) + (size_t)h.nthreads * sizeof(xr_threadstate);
    for (uint32_t i = 0; i < h.npeers; i++) {
      xr_peerent e;
      memcpy(&e, p + (size_t)i * sizeof e, sizeof e);
      if (e.peer < 0 || e.send_lo > e.send_hi || e.recv_lo > e.recv_hi) return -1;
    }
    return 0;
  }
  default:
    return -1;
  }
}

int xr_get_fixed(const xr_hdr *hdr, const uint8_t *payload, void *out,
                 size_t size) {
  if (fixed_size(hdr->type) != size || xr_check_payload(hdr, payload) != 0) return -1;
  memcpy(out, payload, size);
  return 0;
}

int xr_get_ops(const xr_hdr *hdr, const uint8_t *payload, xr_op *out,
               uint32_t max, uint32_t *n) {
  if (hdr->type != XR_MSG_OPS || xr_check_payload(hdr, payload) != 0) return -1;
  uint32_t head[2];
  memcpy(head, payload, sizeof head);
  if (head[0] > max) return -1;
  memcpy(out, payload + sizeof head, (size_t)head[0] * sizeof(xr_op));
  *n = head[0];
  return 0;
}

int xr_get_verdict(const xr_hdr *hdr, const uint8_t *payload, xr_verdict *v) {
  if (hdr->type != XR_MSG_VERDICT || xr_check_payload(hdr, payload) != 0) return -1;
  vhead h;
  memcpy(&h, payload, sizeof h);
  v->comm = h.comm;
  v->site = h.site;
  v->severity = h.severity;
  v->flags = h.flags;
  v->rank_p1 = h.rank_p1;
  v->check = a2a_check_by_name((const char *)payload + offsetof(vhead, check));
  v->text = (const char *)payload + sizeof h;
  v->json = h.jsonlen ? v->text + h.textlen : NULL;
  return 0;
}

int xr_get_state(const xr_hdr *hdr, const uint8_t *payload, xr_procstate *st) {
  if (hdr->type != XR_MSG_STATE || xr_check_payload(hdr, payload) != 0) return -1;
  shead h;
  memcpy(&h, payload, sizeof h);
  size_t body = hdr->len - sizeof h;
  uint8_t *blk = malloc(body ? body : 1);
  if (!blk) return -1;
  memcpy(blk, payload + sizeof h, body);
  memset(st, 0, sizeof *st);
  st->alive = 1;
  st->version = h.version;
  st->ncomms = h.ncomms;
  st->nunits = h.nunits;
  st->nthreads = h.nthreads;
  st->npeers = h.npeers;
  /* Record sizes are multiples of 8 except the peers, which come last, so
   * every array in the malloc'd block is suitably aligned. */
  uint8_t *p = blk;
  st->comms = (const xr_commstate *)p;
  p += (size_t)h.ncomms * sizeof(xr_commstate);
  st->units = (const xr_unitstate *)p;
  p += (size_t)h.nunits * sizeof(xr_unitstate);
  st->threads = (const xr_threadstate *)p;
  p += (size_t)h.nthreads * sizeof(xr_threadstate);
  st->peers = (const xr_peerent *)p;
  return 0;
}

void xr_state_free(xr_procstate *st) {
  /* comms is the start of the block xr_get_state allocated. */
  free((void *)st->comms);
  st->comms = NULL;
  st->units = NULL;
  st->threads = NULL;
  st->peers = NULL;
  st->ncomms = st->nunits = st->nthreads = st->npeers = 0;
}

/* ---- device identity ---- */

int32_t xr_visible_device(const char *cvd, int ordinal) {
  if (ordinal < 0) return -1;
  if (!cvd) return ordinal;
  const char *p = cvd;
  for (int i = 0; i < ordinal; i++) { /* skip to entry `ordinal` */
    p = strchr(p, ',');
    if (!p) return -1;
    p++;
  }
  while (*p == ' ') p++;
  size_t n = strcspn(p, ",");
  while (n > 0 && p[n - 1] == ' ') n--;
  if (n == 0) return -1;
  /* CUDA stops at the first invalid entry; an integer is a physical index. */
  long v = 0;
  size_t k = 0;
  for (; k < n && p[k] >= '0' && p[k] <= '9' && v < (1L << 24); k++) v = v * 10 + (p[k] - '0');
  if (k == n) return (int32_t)v;
  return (int32_t)(0x40000000u | (uint32_t)(a2a_hash_bytes(p, n, 0xcd) & 0x3fffffffu));
}

/* ---- text from peers ---- */

/* Length of the well-formed UTF-8 sequence at p (1..4), 0 if malformed
 * (overlong forms, surrogates and code points past U+10FFFF included);
 * *cp gets its code point. */
static size_t utf8_seq(const unsigned char *p, uint32_t *cp) {
  unsigned char c = p[0];
  size_t n;
  uint32_t v, min;
  if (c >= 0xc2 && c <= 0xdf) { n = 2; v = c & 0x1f; min = 0x80; }
  else if (c >= 0xe0 && c <= 0xef) { n = 3; v = c & 0x0f; min = 0x800; }
  else if (c >= 0xf0 && c <= 0xf4) { n = 4; v = c & 0x07; min = 0x10000; }
  else return 0;
  for (size_t i = 1; i < n; i++) {
    if ((p[i] & 0xc0) != 0x80) return 0; /* also stops at the NUL */
    v = v << 6 | (p[i] & 0x3f);
  }
  if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return 0;
  *cp = v;
  return n;
}

/* Code points that move the cursor, end a line or reorder text. */
static bool cp_unsafe(uint32_t v) {
  return (v >= 0x80 && v <= 0x9f) ||                     /* C1 controls (CSI) */
         v == 0x2028 || v == 0x2029 ||                   /* line/paragraph sep */
         (v >= 0x200e && v <= 0x200f) || (v >= 0x202a && v <= 0x202e) ||
         (v >= 0x2066 && v <= 0x2069) || v == 0x061c ||  /* bidi controls */
         v == 0xfeff;
}

size_t xr_sanitize_text(char *dst, size_t cap, const char *src, bool multiline) {
  if (!cap) return 0;
  size_t o = 0;
  const unsigned char *p = (const unsigned char *)(src ? src : "");
#define PUT(ch) do { if (o + 1 >= cap) goto done; dst[o++] = (char)(ch); } while (0)
  while (*p) {
    unsigned char c = *p;
    if (c == '\n') {
      p++;
      if (!multiline) { PUT(' '); continue; }
      if (o + 3 >= cap) goto done;
      dst[o++] = '\n';
      int lead = p[0] == ' ' ? (p[1] == ' ' ? 2 : 1) : 0;
      for (; lead < 2; lead++) dst[o++] = ' ';
      continue;
    }
    if (c == '\t') { PUT(' '); p++; continue; }
    if (c < 0x20 || c == 0x7f) { PUT('?'); p++; continue; }
    if (c < 0x80) { PUT(c); p++; continue; }
    uint32_t cp = 0;
    size_t n = utf8_seq(p, &cp);
    if (!n || cp_unsafe(cp)) { PUT('?'); p += n ? n : 1; continue; }
    if (o + n >= cap) goto done;
    memcpy(dst + o, p, n);
    o += n;
    p += n;
  }
#undef PUT
done:
  dst[o] = 0;
  return o;
}
