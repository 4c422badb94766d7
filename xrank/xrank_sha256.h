/* xrank_sha256.h - SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104), for
 * the side channel's authentication (xrank_auth.h). Pure C (and the x86
 * SHA extensions' intrinsics where the CPU has them), no library:
 * liba2acheck.so must not add a dependency (an OpenSSL the application
 * loads could be another version than ours).
 *
 * Not constant-time with respect to message lengths (they are public);
 * the key only enters through XOR pads, so timing does not depend on it.
 * Tested against the FIPS 180-2 and RFC 4231 vectors
 * (tests/unit/test_xrank_auth.c).
 */
#ifndef A2A_XRANK_SHA256_H
#define A2A_XRANK_SHA256_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define XR_SHA256_BYTES 32
#define XR_SHA256_BLOCK 64

typedef struct xr_sha256_ctx {
  uint32_t h[8];
  uint64_t nbytes;          /* message bytes so far */
  uint8_t buf[XR_SHA256_BLOCK];
  size_t nbuf;
} xr_sha256_ctx;

void xr_sha256_init(xr_sha256_ctx *s);
void xr_sha256_update(xr_sha256_ctx *s, const void *p, size_t n);
void xr_sha256_final(xr_sha256_ctx *s, uint8_t out[XR_SHA256_BYTES]);
void xr_sha256(const void *p, size_t n, uint8_t out[XR_SHA256_BYTES]);

/* HMAC with a prepared key: the inner and outer hash states after the
 * padded key block, so each MAC costs two compressions less. */
typedef struct xr_hmac_key {
  xr_sha256_ctx inner, outer;
} xr_hmac_key;

void xr_hmac_key_init(xr_hmac_key *k, const void *key, size_t n);
/* One MAC over the concatenation of up to 4 parts (NULL/0 parts skipped). */
void xr_hmac(const xr_hmac_key *k, const void *p1, size_t n1, const void *p2, size_t n2,
             const void *p3, size_t n3, const void *p4, size_t n4,
             uint8_t out[XR_SHA256_BYTES]);

/* Whether blocks are hashed with the x86 SHA extensions (chosen by CPUID
 * at the first use; the portable C otherwise - the same digests). Tests
 * compare the two: xr_sha256_portable(1) forces the portable code until
 * xr_sha256_portable(0) lets the next use choose again. */
int xr_sha256_accelerated(void);
void xr_sha256_portable(int on);

/* 1 when the n bytes are equal; the time does not depend on where they
 * differ. */
int xr_ct_equal(const void *a, const void *b, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* A2A_XRANK_SHA256_H */
