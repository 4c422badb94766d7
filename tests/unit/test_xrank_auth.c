/* test_xrank_auth.c - SHA-256 and HMAC-SHA-256 against the published
 * vectors (FIPS 180-2 appendix B, RFC 4231 section 4), the side channel's
 * handshake (each side's proof, the secret never needed twice) and sealed
 * messages (tampering, replay, reordering, dropping and reflection all
 * detected). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xrank_auth.h"
#include "xrank_sha256.h"

static void hex(const uint8_t *d, size_t n, char *out) {
  for (size_t i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", d[i]);
}

static void check_sha(const void *p, size_t n, const char *want) {
  uint8_t d[32];
  char h[65];
  xr_sha256(p, n, d);
  hex(d, 32, h);
  ck_assert_str_eq(h, want);
}

START_TEST(sha256_fips_vectors) {
  check_sha("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  check_sha("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const char *m2 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  check_sha(m2, strlen(m2), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  const char *m3 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnop"
                   "qklmnopqrlmnopqrsmnopqrstnopqrstu";
  check_sha(m3, strlen(m3), "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  /* One million 'a', fed in uneven pieces (exercises the block buffer). */
  xr_sha256_ctx s;
  xr_sha256_init(&s);
  char a[1000];
  memset(a, 'a', sizeof a);
  size_t left = 1000000, step = 1;
  while (left) {
    size_t k = step < left ? step : left;
    if (k > sizeof a) k = sizeof a;
    xr_sha256_update(&s, a, k);
    left -= k;
    step = step * 7 % 997 + 1;
  }
  uint8_t d[32];
  char h[65];
  xr_sha256_final(&s, d);
  hex(d, 32, h);
  ck_assert_str_eq(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  /* Every length around the padding boundaries agrees with one-shot
   * hashing of the same bytes fed byte by byte. */
  for (size_t n = 50; n < 135; n++) {
    uint8_t one[32], two[32];
    xr_sha256(a, n, one);
    xr_sha256_init(&s);
    for (size_t i = 0; i < n; i++) xr_sha256_update(&s, a + i, 1);
    xr_sha256_final(&s, two);
    ck_assert_mem_eq(one, two, 32);
  }
}
END_TEST

/* The two block functions give the same digests: the FIPS vectors again
 * with the portable code forced, then random messages of every length up
 * to a few blocks, fed whole and in pieces, hashed both ways. (Where the
 * CPU has no SHA extensions both ways are the portable code: the test then
 * says so and still checks the vectors.) */
START_TEST(sha256_accelerated_equals_portable) {
  int accel = xr_sha256_accelerated();
  if (!accel) fprintf(stderr, "sha256: no SHA extensions on this CPU: portable code only\n");
  xr_sha256_portable(1);
  ck_assert_int_eq(xr_sha256_accelerated(), 0);
  check_sha("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const char *m3 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnop"
                   "qklmnopqrlmnopqrsmnopqrstnopqrstu";
  check_sha(m3, strlen(m3), "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  xr_sha256_portable(0);
  ck_assert_int_eq(xr_sha256_accelerated(), accel);
  uint8_t msg[700];
  unsigned x = 12345;
  for (size_t i = 0; i < sizeof msg; i++) msg[i] = (uint8_t)((x = x * 1103515245u + 12345u) >> 16);
  for (size_t n = 0; n <= sizeof msg; n += (n < 200 ? 1 : 37)) {
    uint8_t a[32], b[32], c[32];
    xr_sha256_portable(1);
    xr_sha256(msg, n, a);
    xr_sha256_portable(0);
    xr_sha256(msg, n, b);
    xr_sha256_ctx s;
    xr_sha256_init(&s);
    for (size_t i = 0; i < n; i += 100) xr_sha256_update(&s, msg + i, n - i < 100 ? n - i : 100);
    xr_sha256_final(&s, c);
    ck_assert_mem_eq(a, b, 32);
    ck_assert_mem_eq(a, c, 32);
  }
}
END_TEST

static void check_hmac(const void *key, size_t kn, const void *msg, size_t mn, const char *want) {
  xr_hmac_key k;
  uint8_t d[32];
  char h[65];
  xr_hmac_key_init(&k, key, kn);
  xr_hmac(&k, msg, mn, NULL, 0, NULL, 0, NULL, 0, d);
  hex(d, 32, h);
  ck_assert_int_eq(strncmp(h, want, strlen(want)), 0);
  /* The same message split in parts gives the same MAC. */
  if (mn >= 3) {
    uint8_t e[32];
    const uint8_t *m = msg;
    xr_hmac(&k, m, 1, m + 1, 1, m + 2, mn - 3, m + mn - 1, 1, e);
    ck_assert_mem_eq(d, e, 32);
  }
}

START_TEST(hmac_rfc4231_vectors) {
  uint8_t k1[20], k3[20], k4[25], k5[20], k6[131], d3[50], d4[50];
  memset(k1, 0x0b, sizeof k1);
  check_hmac(k1, 20, "Hi There", 8,
             "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  check_hmac("Jefe", 4, "what do ya want for nothing?", 28,
             "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  memset(k3, 0xaa, sizeof k3);
  memset(d3, 0xdd, sizeof d3);
  check_hmac(k3, 20, d3, 50, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  for (int i = 0; i < 25; i++) k4[i] = (uint8_t)(i + 1);
  memset(d4, 0xcd, sizeof d4);
  check_hmac(k4, 25, d4, 50, "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  memset(k5, 0x0c, sizeof k5);
  check_hmac(k5, 20, "Test With Truncation", 20, "a3b6167473100ee06e0c796c2955552b");
  memset(k6, 0xaa, sizeof k6);
  const char *m6 = "Test Using Larger Than Block-Size Key - Hash Key First";
  check_hmac(k6, 131, m6, strlen(m6),
             "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  const char *m7 = "This is a test using a larger than block-size key and a larger than block-size "
                   "data. The key needs to be hashed before being used by the HMAC algorithm.";
  check_hmac(k6, 131, m7, strlen(m7),
             "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
  ck_assert(xr_ct_equal("abcd", "abcd", 4));
  ck_assert(!xr_ct_equal("abcd", "abce", 4));
}
END_TEST

/* Both ends of one handshake. */
typedef struct side {
  xr_secret sec;
  xr_hello hello;
  xr_challenge chal;
  xr_mac tx, rx;
} side;

static void handshake(side *cl, side *co, const uint8_t *ct, const uint8_t *kt) {
  xr_secret_init(&cl->sec, ct);
  xr_secret_init(&co->sec, kt);
  memset(&cl->hello, 0, sizeof cl->hello);
  cl->hello.version = XR_PROTO_VERSION;
  memset(cl->hello.nonce, 0x11, XR_NONCE_BYTES);
  cl->hello.pid = 42;
  strcpy(cl->hello.host, "node1");
  co->hello = cl->hello;
  memset(&co->chal, 0, sizeof co->chal);
  co->chal.version = XR_PROTO_VERSION;
  memset(co->chal.nonce, 0x22, XR_NONCE_BYTES);
  xr_auth_coord_proof(&co->sec, &co->hello, co->chal.nonce, co->chal.proof);
  cl->chal = co->chal;
}

START_TEST(handshake_proofs) {
  uint8_t t1[XR_TOKEN_BYTES], t2[XR_TOKEN_BYTES];
  memset(t1, 5, sizeof t1);
  memcpy(t2, t1, sizeof t2);
  t2[15] ^= 1;
  side cl, co;
  /* Same secret: the client accepts the coordinator's proof and the
   * coordinator the client's. */
  handshake(&cl, &co, t1, t1);
  uint8_t want[XR_PROOF_BYTES], pk[XR_PROOF_BYTES], pk2[XR_PROOF_BYTES];
  xr_auth_coord_proof(&cl.sec, &cl.hello, cl.chal.nonce, want);
  ck_assert(xr_ct_equal(want, cl.chal.proof, sizeof want));
  xr_auth_client_proof(&cl.sec, &cl.hello, &cl.chal, pk);
  xr_auth_client_proof(&co.sec, &co.hello, &co.chal, pk2);
  ck_assert_mem_eq(pk, pk2, sizeof pk);
  /* The coordinator's proof is never a valid client proof (labels). */
  ck_assert(!xr_ct_equal(pk, cl.chal.proof, sizeof pk));
  /* A one-bit different secret: the client refuses the coordinator. */
  handshake(&cl, &co, t1, t2);
  xr_auth_coord_proof(&cl.sec, &cl.hello, cl.chal.nonce, want);
  ck_assert(!xr_ct_equal(want, cl.chal.proof, sizeof want));
  /* The proof covers the HELLO: another pid or host gives another proof
   * (a recorded proof cannot be reused for another client). */
  handshake(&cl, &co, t1, t1);
  xr_hello other = cl.hello;
  other.pid = 43;
  xr_auth_coord_proof(&cl.sec, &other, cl.chal.nonce, want);
  ck_assert(!xr_ct_equal(want, cl.chal.proof, sizeof want));
  /* A2ACHECK_TOKEN texts: deterministic, and distinct texts differ. */
  uint8_t a[XR_TOKEN_BYTES], b[XR_TOKEN_BYTES];
  xr_token_from_text("0123456789abcdef", a);
  xr_token_from_text("0123456789abcdef", b);
  ck_assert_mem_eq(a, b, sizeof a);
  xr_token_from_text("0123456789abcdeg", b);
  ck_assert(!xr_ct_equal(a, b, sizeof a));
}
END_TEST

static size_t put_msg(uint8_t *buf, size_t cap, xr_msgtype t, const void *p, size_t n) {
  size_t len = 0;
  ck_assert(xr_put(buf, cap, &len, t, p, n));
  return len;
}

static int open_frame(xr_mac *rx, uint8_t *buf, size_t len, xr_hdr *h) {
  const uint8_t *pl;
  size_t used;
  if (xr_frame(buf, len, h, &pl, &used) != 1) return -2;
  return xr_unseal(rx, buf, h);
}

START_TEST(sealed_messages) {
  uint8_t t[XR_TOKEN_BYTES];
  memset(t, 9, sizeof t);
  side cl, co;
  handshake(&cl, &co, t, t);
  xr_auth_session(&cl.sec, &cl.hello, &cl.chal, &cl.tx, &cl.rx);
  xr_auth_session(&co.sec, &co.hello, &co.chal, &co.rx, &co.tx);
  uint8_t m1[256], m2[256], copy[256];
  xr_bye b = {.status = 7};
  xr_flush f = {.token = 1};
  size_t n1 = put_msg(m1, sizeof m1, XR_MSG_BYE, &b, sizeof b);
  size_t n2 = put_msg(m2, sizeof m2, XR_MSG_FLUSH, &f, sizeof f);
  ck_assert(xr_seal(&cl.tx, m1, n1, sizeof m1));
  ck_assert(!xr_seal(&cl.tx, m1, n1 + XR_TAG_BYTES, sizeof m1)); /* sealed once */
  ck_assert(xr_seal(&cl.tx, m2, n2, sizeof m2));
  n1 += XR_TAG_BYTES;
  n2 += XR_TAG_BYTES;
  /* Every single-bit change anywhere in the first frame is refused. */
  for (size_t i = 0; i < n1; i++)
    for (int bit = 0; bit < 8; bit++) {
      memcpy(copy, m1, n1);
      copy[i] ^= (uint8_t)(1 << bit);
      xr_mac rx = co.rx;
      xr_hdr h;
      ck_assert_int_ne(open_frame(&rx, copy, n1, &h), 0);
    }
  /* Reordered (the second first), reflected (opened with the other
   * direction's key) or unsealed frames are refused. */
  xr_hdr h;
  xr_mac rx = co.rx;
  memcpy(copy, m2, n2);
  ck_assert_int_ne(open_frame(&rx, copy, n2, &h), 0);
  xr_mac refl = co.tx;
  memcpy(copy, m1, n1);
  ck_assert_int_ne(open_frame(&refl, copy, n1, &h), 0);
  uint8_t plain[64];
  size_t np = put_msg(plain, sizeof plain, XR_MSG_BYE, &b, sizeof b);
  rx = co.rx;
  ck_assert_int_eq(open_frame(&rx, plain, np, &h), -1);
  /* In order: both open, lengths and flags restored. */
  ck_assert_int_eq(open_frame(&co.rx, m1, n1, &h), 0);
  ck_assert_int_eq(h.type, XR_MSG_BYE);
  ck_assert_uint_eq(h.len, sizeof b);
  ck_assert_uint_eq(h.flags, 0);
  xr_bye got;
  ck_assert_int_eq(xr_get_fixed(&h, m1 + sizeof(xr_hdr), &got, sizeof got), 0);
  ck_assert_int_eq(got.status, 7);
  /* Replayed: the first frame again is refused (the sequence moved on). */
  xr_mac rx2 = co.rx;
  ck_assert_int_ne(open_frame(&rx2, m1, n1, &h), 0);
  ck_assert_int_eq(open_frame(&co.rx, m2, n2, &h), 0);
  ck_assert_int_eq(h.type, XR_MSG_FLUSH);
  /* The other direction works with its own key; a dropped message makes
   * the next one fail. */
  uint8_t m3[64], m4[64];
  size_t n3 = put_msg(m3, sizeof m3, XR_MSG_PING, &(xr_ping){.n = 1}, sizeof(xr_ping));
  size_t n4 = put_msg(m4, sizeof m4, XR_MSG_PING, &(xr_ping){.n = 2}, sizeof(xr_ping));
  ck_assert(xr_seal(&co.tx, m3, n3, sizeof m3));
  ck_assert(xr_seal(&co.tx, m4, n4, sizeof m4));
  xr_mac crx = cl.rx;
  ck_assert_int_ne(open_frame(&crx, m4, n4 + XR_TAG_BYTES, &h), 0);
  ck_assert_int_eq(open_frame(&cl.rx, m3, n3 + XR_TAG_BYTES, &h), 0);
  ck_assert_int_eq(open_frame(&cl.rx, m4, n4 + XR_TAG_BYTES, &h), 0);
  /* No room for the tag: nothing changes. */
  uint8_t m5[64];
  size_t n5 = put_msg(m5, sizeof m5, XR_MSG_BYE, &b, sizeof b);
  uint64_t seq = cl.tx.seq;
  ck_assert(!xr_seal(&cl.tx, m5, n5, n5 + XR_TAG_BYTES - 1));
  ck_assert_uint_eq(cl.tx.seq, seq);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("xrank_auth");
  TCase *t = tcase_create("auth");
  tcase_set_timeout(t, 30);
  tcase_add_test(t, sha256_fips_vectors);
  tcase_add_test(t, sha256_accelerated_equals_portable);
  tcase_add_test(t, hmac_rfc4231_vectors);
  tcase_add_test(t, handshake_proofs);
  tcase_add_test(t, sealed_messages);
  suite_add_tcase(s, t);
  return s;
}

int main(void) {
  SRunner *r = srunner_create(suite());
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? 1 : 0;
}
