/* xrank_sha256.c - SHA-256 and HMAC-SHA-256 (see xrank_sha256.h). Written
 * from FIPS 180-4 section 6.2 and RFC 2104; no global state. */
#include "xrank_sha256.h"

#include <stdatomic.h>
#include <string.h>

static const uint32_t K256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

static inline uint32_t ror(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

/* One round of FIPS 180-4 6.2.2 step 3, on the working variables named in
 * rotated order (8 rounds make a full rotation, so no variable is moved):
 * t the round, w its schedule word. */
#define XR_ROUND(a, b, c, d, e, f, g, h, t, w)                                                   \
  do {                                                                                          \
    uint32_t t1_ = h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K256[t] + \
                   (w);                                                                         \
    uint32_t t2_ = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));       \
    d += t1_;                                                                                   \
    h = t1_ + t2_;                                                                              \
  } while (0)

/* n 64-byte blocks (big-endian words), portable C. */
static void compress_c(uint32_t h[8], const uint8_t *p, size_t n) {
  for (; n--; p += XR_SHA256_BLOCK) {
    uint32_t w[64];
    for (int t = 0; t < 16; t++)
      w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 |
             (uint32_t)p[4 * t + 2] << 8 | (uint32_t)p[4 * t + 3];
    for (int t = 16; t < 64; t++) {
      uint32_t s0 = ror(w[t - 15], 7) ^ ror(w[t - 15], 18) ^ (w[t - 15] >> 3);
      uint32_t s1 = ror(w[t - 2], 17) ^ ror(w[t - 2], 19) ^ (w[t - 2] >> 10);
      w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int t = 0; t < 64; t += 8) {
      XR_ROUND(a, b, c, d, e, f, g, hh, t, w[t]);
      XR_ROUND(hh, a, b, c, d, e, f, g, t + 1, w[t + 1]);
      XR_ROUND(g, hh, a, b, c, d, e, f, t + 2, w[t + 2]);
      XR_ROUND(f, g, hh, a, b, c, d, e, t + 3, w[t + 3]);
      XR_ROUND(e, f, g, hh, a, b, c, d, t + 4, w[t + 4]);
      XR_ROUND(d, e, f, g, hh, a, b, c, t + 5, w[t + 5]);
      XR_ROUND(c, d, e, f, g, hh, a, b, t + 6, w[t + 6]);
      XR_ROUND(b, c, d, e, f, g, hh, a, t + 7, w[t + 7]);
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d;
    h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
  }
}

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define XR_HAVE_SHANI 1

/* The same with the x86 SHA extensions (Intel's SHA-NI: sha256rnds2 does
 * two rounds on the state held as ABEF/CDGH; sha256msg1/msg2 extend the
 * schedule four words at a time), from Intel's description of the
 * instructions. Only called when CPUID says the CPU has them. */
__attribute__((target("sha,sse4.1,ssse3"))) static void compress_shani(uint32_t h[8],
                                                                        const uint8_t *p,
                                                                        size_t n) {
  /* Big-endian words: each 32-bit lane's bytes reversed. */
  const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
  __m128i dcba = _mm_loadu_si128((const __m128i *)&h[0]);
  __m128i hgfe = _mm_loadu_si128((const __m128i *)&h[4]);
  __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);
  __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
  __m128i s0 = _mm_alignr_epi8(cdab, efgh, 8);    /* ABEF */
  __m128i s1 = _mm_blend_epi16(efgh, cdab, 0xF0); /* CDGH */
  for (; n--; p += XR_SHA256_BLOCK) {
    const __m128i save0 = s0, save1 = s1;
    __m128i m[4]; /* schedule words 4i..4i+3 of the last four groups, m[i & 3] */
    for (int i = 0; i < 4; i++)
      m[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), bswap);
    for (int i = 0; i < 16; i++) {
      if (i >= 4) {
        /* W[t..t+3] from W[t-16..t-13] (m[i&3]), W[t-12..] (m[i+1]),
         * W[t-7..t-4] (from m[i+2], m[i+3]) and W[t-2], W[t-1] (m[i+3]). */
        __m128i x = _mm_sha256msg1_epu32(m[i & 3], m[(i + 1) & 3]);
        x = _mm_add_epi32(x, _mm_alignr_epi8(m[(i + 3) & 3], m[(i + 2) & 3], 4));
        m[i & 3] = _mm_sha256msg2_epu32(x, m[(i + 3) & 3]);
      }
      __m128i wk = _mm_add_epi32(m[i & 3], _mm_loadu_si128((const __m128i *)&K256[4 * i]));
      s1 = _mm_sha256rnds2_epu32(s1, s0, wk);
      s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(wk, 0x0E));
    }
    s0 = _mm_add_epi32(s0, save0);
    s1 = _mm_add_epi32(s1, save1);
  }
  __m128i feba = _mm_shuffle_epi32(s0, 0x1B);
  __m128i dchg = _mm_shuffle_epi32(s1, 0xB1);
  _mm_storeu_si128((__m128i *)&h[0], _mm_blend_epi16(feba, dchg, 0xF0)); /* DCBA */
  _mm_storeu_si128((__m128i *)&h[4], _mm_alignr_epi8(dchg, feba, 8));    /* HGFE */
}

static int cpu_has_shani(void) {
  unsigned a, b, c, d;
  /* CPUID.(EAX=7,ECX=0):EBX bit 29 SHA; SSE4.1 (CPUID.1:ECX bit 19) and
   * SSSE3 (bit 9) for the shuffles and blends. */
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & (1u << 29))) return 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
  return (c & (1u << 19)) && (c & (1u << 9));
}
#endif

/* The block function: chosen at the first compression (CPUID, no
 * allocation, no lock: racing threads store the same answer), or forced
 * portable by xr_sha256_portable (tests). 0 unknown, 1 portable, 2 SHA-NI. */
static _Atomic int g_impl;

void xr_sha256_portable(int on) { atomic_store_explicit(&g_impl, on ? 1 : 0, memory_order_relaxed); }

int xr_sha256_accelerated(void) {
  int v = atomic_load_explicit(&g_impl, memory_order_relaxed);
  if (v == 0) {
#ifdef XR_HAVE_SHANI
    v = cpu_has_shani() ? 2 : 1;
#else
    v = 1;
#endif
    atomic_store_explicit(&g_impl, v, memory_order_relaxed);
  }
  return v == 2;
}

static void compress(uint32_t h[8], const uint8_t *p, size_t n) {
#ifdef XR_HAVE_SHANI
  if (xr_sha256_accelerated()) {
    compress_shani(h, p, n);
    return;
  }
#endif
  compress_c(h, p, n);
}

void xr_sha256_init(xr_sha256_ctx *s) {
  static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  memcpy(s->h, iv, sizeof iv);
  s->nbytes = 0;
  s->nbuf = 0;
}

void xr_sha256_update(xr_sha256_ctx *s, const void *pv, size_t n) {
  const uint8_t *p = pv;
  s->nbytes += n;
  if (s->nbuf) {
    size_t k = XR_SHA256_BLOCK - s->nbuf < n ? XR_SHA256_BLOCK - s->nbuf : n;
    memcpy(s->buf + s->nbuf, p, k);
    s->nbuf += k;
    p += k;
    n -= k;
    if (s->nbuf < XR_SHA256_BLOCK) return;
    compress(s->h, s->buf, 1);
    s->nbuf = 0;
  }
  if (n >= XR_SHA256_BLOCK) {
    size_t k = n / XR_SHA256_BLOCK;
    compress(s->h, p, k);
    p += k * XR_SHA256_BLOCK;
    n -= k * XR_SHA256_BLOCK;
  }
  if (n) memcpy(s->buf, p, n);
  s->nbuf = n;
}

void xr_sha256_final(xr_sha256_ctx *s, uint8_t out[XR_SHA256_BYTES]) {
  uint64_t bits = s->nbytes * 8;
  uint8_t pad[XR_SHA256_BLOCK + 8] = {0x80};
  /* 0x80, zeros up to 56 mod 64, then the bit length big-endian. */
  size_t padn = (s->nbuf < 56 ? 56 - s->nbuf : 120 - s->nbuf);
  uint8_t len[8];
  for (int i = 0; i < 8; i++) len[i] = (uint8_t)(bits >> (56 - 8 * i));
  xr_sha256_update(s, pad, padn);
  xr_sha256_update(s, len, 8);
  for (int i = 0; i < 8; i++) {
    out[4 * i] = (uint8_t)(s->h[i] >> 24);
    out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
    out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
    out[4 * i + 3] = (uint8_t)s->h[i];
  }
  memset(s, 0, sizeof *s);
}

void xr_sha256(const void *p, size_t n, uint8_t out[XR_SHA256_BYTES]) {
  xr_sha256_ctx s;
  xr_sha256_init(&s);
  xr_sha256_update(&s, p, n);
  xr_sha256_final(&s, out);
}

void xr_hmac_key_init(xr_hmac_key *k, const void *key, size_t n) {
  uint8_t kb[XR_SHA256_BLOCK] = {0};
  if (n > XR_SHA256_BLOCK) xr_sha256(key, n, kb); /* long keys are hashed first */
  else if (n) memcpy(kb, key, n);
  uint8_t pad[XR_SHA256_BLOCK];
  for (int i = 0; i < XR_SHA256_BLOCK; i++) pad[i] = kb[i] ^ 0x36;
  xr_sha256_init(&k->inner);
  xr_sha256_update(&k->inner, pad, sizeof pad);
  for (int i = 0; i < XR_SHA256_BLOCK; i++) pad[i] = kb[i] ^ 0x5c;
  xr_sha256_init(&k->outer);
  xr_sha256_update(&k->outer, pad, sizeof pad);
  memset(kb, 0, sizeof kb);
  memset(pad, 0, sizeof pad);
}

void xr_hmac(const xr_hmac_key *k, const void *p1, size_t n1, const void *p2, size_t n2,
             const void *p3, size_t n3, const void *p4, size_t n4,
             uint8_t out[XR_SHA256_BYTES]) {
  xr_sha256_ctx s = k->inner;
  if (n1) xr_sha256_update(&s, p1, n1);
  if (n2) xr_sha256_update(&s, p2, n2);
  if (n3) xr_sha256_update(&s, p3, n3);
  if (n4) xr_sha256_update(&s, p4, n4);
  uint8_t ih[XR_SHA256_BYTES];
  xr_sha256_final(&s, ih);
  s = k->outer;
  xr_sha256_update(&s, ih, sizeof ih);
  xr_sha256_final(&s, out);
}

int xr_ct_equal(const void *a, const void *b, size_t n) {
  const volatile uint8_t *x = a, *y = b;
  uint8_t d = 0;
  for (size_t i = 0; i < n; i++) d |= (uint8_t)(x[i] ^ y[i]);
  return d == 0;
}
