/* xrank_auth.h - mutual authentication and message authentication of the
 * side channel. Pure C over bytes (no sockets: xr_chan.c and xr_coord.c do
 * the I/O), unit-tested in tests/unit/test_xrank_auth.c and fuzzed with the
 * protocol (xrank/fuzz_proto.c).
 *
 * Every process of a job knows a 16-byte secret: the token of the
 * coordinator record in the ncclUniqueId's tail (the id travels through the
 * job's own channel: TCPStore, MPI, a pipe), or, for A2ACHECK_COORDINATOR,
 * one derived from A2ACHECK_TOKEN. It never goes on the wire.
 *
 * Handshake (each message exactly its size, nothing else is read before it
 * completes):
 *   client -> coordinator  HELLO     version, client nonce Nc, pid, rank, host
 *   coordinator -> client  CHALLENGE version, coordinator nonce Ns,
 *                                    Pc = HMAC(secret, "coordinator" | HELLO | Ns)
 *   client -> coordinator  AUTH      Pk = HMAC(secret, "client" | HELLO | CHALLENGE)
 * The client checks Pc before it sends AUTH or anything else, so a process
 * that does not know the secret (a fake coordinator that bound the address
 * first) learns nothing about the job and can make it report nothing; the
 * coordinator checks Pk before it reads anything else. Nonces come from
 * getrandom; the labels keep one side's proof from being replayed as the
 * other's, and each proof covers the whole transcript so far.
 *
 * After the handshake every message in both directions is sealed: the
 * header's XR_HDR_SEALED flag is set, its length includes a 16-byte tag
 * appended to the payload, tag = HMAC(K_dir, seq | header | payload)
 * truncated to 128 bits, where K_c2s / K_s2c = HMAC(secret, label | Nc | Ns)
 * and seq counts that direction's messages from 0. A message injected,
 * dropped, replayed or reordered on the connection fails its tag and closes
 * the connection; a verdict is acted on only after its tag verified.
 * Messages are authenticated, not encrypted (they hold operation
 * fingerprints and call sites, not the job's data).
 */
#ifndef A2A_XRANK_AUTH_H
#define A2A_XRANK_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xrank_proto.h"
#include "xrank_sha256.h"

#ifdef __cplusplus
extern "C" {
#endif

#define XR_TAG_BYTES XR_SEAL_BYTES

/* The job's secret, prepared as an HMAC key. */
typedef struct xr_secret {
  xr_hmac_key k;
} xr_secret;

void xr_secret_init(xr_secret *s, const uint8_t token[XR_TOKEN_BYTES]);

/* A2ACHECK_TOKEN's text -> the 16 token bytes (SHA-256 of a label and the
 * text, truncated): every process given the same text gets the same bytes. */
void xr_token_from_text(const char *text, uint8_t token[XR_TOKEN_BYTES]);

/* The coordinator's proof Pc for a HELLO and its nonce. */
void xr_auth_coord_proof(const xr_secret *s, const xr_hello *h,
                         const uint8_t nonce[XR_NONCE_BYTES], uint8_t out[XR_PROOF_BYTES]);
/* The client's proof Pk over HELLO and CHALLENGE. */
void xr_auth_client_proof(const xr_secret *s, const xr_hello *h, const xr_challenge *c,
                          uint8_t out[XR_PROOF_BYTES]);

/* One direction's message authentication state. */
typedef struct xr_mac {
  xr_hmac_key k;
  uint64_t seq;
} xr_mac;

/* The session keys of a completed handshake (both sides compute them). */
void xr_auth_session(const xr_secret *s, const xr_hello *h, const xr_challenge *c,
                     xr_mac *c2s, xr_mac *s2c);

/* Seal the message at frame[0..len) (header + payload, unsealed) in place:
 * set XR_HDR_SEALED, add XR_TAG_BYTES to the header's length and append
 * the tag. False (nothing changed) when cap - len < XR_TAG_BYTES or the
 * message is already sealed. */
bool xr_seal(xr_mac *m, uint8_t *frame, size_t len, size_t cap);

/* Check a sealed message as received: frame points at its header, *h is
 * that header as xr_frame decoded it. On success (0) the sequence advances
 * and *h describes the payload without the tag (flag cleared); -1 when the
 * message is not sealed, too short or its tag is wrong. */
int xr_unseal(xr_mac *m, const uint8_t *frame, xr_hdr *h);

#ifdef __cplusplus
}
#endif
#endif /* A2A_XRANK_AUTH_H */
