/* xrank_auth.c - the side channel's handshake proofs, session keys and
 * message seals (see xrank_auth.h). No I/O, no global state. */
#include "xrank_auth.h"

#include <string.h>

/* Labels: each HMAC use of the secret has its own, so no output of one use
 * is ever a valid output of another (a coordinator's proof is not a
 * client's, a proof is not a key). */
static const char L_TOKEN[] = "a2acheck-xrank-v3 token";
static const char L_COORD[] = "a2acheck-xrank-v3 coordinator proof";
static const char L_CLIENT[] = "a2acheck-xrank-v3 client proof";
static const char L_C2S[] = "a2acheck-xrank-v3 client-to-coordinator key";
static const char L_S2C[] = "a2acheck-xrank-v3 coordinator-to-client key";

void xr_secret_init(xr_secret *s, const uint8_t token[XR_TOKEN_BYTES]) {
  xr_hmac_key_init(&s->k, token, XR_TOKEN_BYTES);
}

void xr_token_from_text(const char *text, uint8_t token[XR_TOKEN_BYTES]) {
  xr_sha256_ctx h;
  uint8_t d[XR_SHA256_BYTES];
  xr_sha256_init(&h);
  xr_sha256_update(&h, L_TOKEN, sizeof L_TOKEN);
  xr_sha256_update(&h, text, strlen(text));
  xr_sha256_final(&h, d);
  memcpy(token, d, XR_TOKEN_BYTES);
  memset(d, 0, sizeof d);
}

void xr_auth_coord_proof(const xr_secret *s, const xr_hello *h,
                         const uint8_t nonce[XR_NONCE_BYTES], uint8_t out[XR_PROOF_BYTES]) {
  xr_hmac(&s->k, L_COORD, sizeof L_COORD, h, sizeof *h, nonce, XR_NONCE_BYTES, NULL, 0, out);
}

void xr_auth_client_proof(const xr_secret *s, const xr_hello *h, const xr_challenge *c,
                          uint8_t out[XR_PROOF_BYTES]) {
  xr_hmac(&s->k, L_CLIENT, sizeof L_CLIENT, h, sizeof *h, c, sizeof *c, NULL, 0, out);
}

static void derive(const xr_secret *s, const char *label, size_t ln, const xr_hello *h,
                   const xr_challenge *c, xr_mac *m) {
  uint8_t k[XR_SHA256_BYTES];
  xr_hmac(&s->k, label, ln, h->nonce, XR_NONCE_BYTES, c->nonce, XR_NONCE_BYTES, NULL, 0, k);
  xr_hmac_key_init(&m->k, k, sizeof k);
  m->seq = 0;
  memset(k, 0, sizeof k);
}

void xr_auth_session(const xr_secret *s, const xr_hello *h, const xr_challenge *c,
                     xr_mac *c2s, xr_mac *s2c) {
  derive(s, L_C2S, sizeof L_C2S, h, c, c2s);
  derive(s, L_S2C, sizeof L_S2C, h, c, s2c);
}

static void tag_of(const xr_mac *m, const uint8_t *frame, size_t n, uint8_t tag[XR_SHA256_BYTES]) {
  uint8_t seq[8];
  for (int i = 0; i < 8; i++) seq[i] = (uint8_t)(m->seq >> (8 * i));
  xr_hmac(&m->k, seq, sizeof seq, frame, n, NULL, 0, NULL, 0, tag);
}

bool xr_seal(xr_mac *m, uint8_t *frame, size_t len, size_t cap) {
  if (len < sizeof(xr_hdr) || cap < len || cap - len < XR_TAG_BYTES) return false;
  xr_hdr h;
  memcpy(&h, frame, sizeof h);
  if (h.flags & XR_HDR_SEALED) return false;
  h.flags |= XR_HDR_SEALED;
  h.len += XR_TAG_BYTES;
  memcpy(frame, &h, sizeof h);
  uint8_t tag[XR_SHA256_BYTES];
  tag_of(m, frame, len, tag);
  memcpy(frame + len, tag, XR_TAG_BYTES);
  m->seq++;
  return true;
}

int xr_unseal(xr_mac *m, const uint8_t *frame, xr_hdr *h) {
  if (!(h->flags & XR_HDR_SEALED) || h->len < XR_TAG_BYTES) return -1;
  size_t body = sizeof(xr_hdr) + h->len - XR_TAG_BYTES;
  uint8_t tag[XR_SHA256_BYTES];
  tag_of(m, frame, body, tag);
  if (!xr_ct_equal(tag, frame + body, XR_TAG_BYTES)) return -1;
  m->seq++;
  h->len -= XR_TAG_BYTES;
  h->flags &= (uint16_t)~XR_HDR_SEALED;
  return 0;
}
