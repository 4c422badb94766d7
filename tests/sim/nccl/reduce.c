/* reduce.c - datatypes and reductions of the simulator's NCCL.
 *
 * Native integer and floating types reduce natively. half, bfloat16 and the
 * two fp8 formats are converted to float, combined, and rounded back to the
 * type after every step (round to nearest even), as NCCL's device code
 * does per element. Conversions to fp8 saturate to the largest finite value
 * (CUDA's __NV_SATFINITE); NaN stays NaN. Conversions to half/bfloat16
 * overflow to infinity like __float2half_rn/__float2bfloat16_rn.
 */
#include <math.h>
#include <string.h>

#include "sim_nccl.h"

size_t sim_type_size(ncclDataType_t dt) {
  switch (dt) {
  case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
  case ncclFloat16: case ncclBfloat16: return 2;
  case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
  case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
  default: return 0;
  }
}

const char *sim_type_name(ncclDataType_t dt) {
  static const char *const names[] = {"int8", "uint8", "int32", "uint32", "int64",
                                      "uint64", "half", "float", "double", "bfloat16",
                                      "fp8e4m3", "fp8e5m2"};
  return (dt >= 0 && dt < ncclNumTypes) ? names[dt] : "invalid";
}

int sim_type_is_float(ncclDataType_t dt) {
  return dt == ncclFloat16 || dt == ncclFloat32 || dt == ncclFloat64 ||
         dt == ncclBfloat16 || dt == ncclFloat8e4m3 || dt == ncclFloat8e5m2;
}

/* ---- small floats ------------------------------------------------------
 * A format: ebits exponent bits, mbits mantissa bits, bias; has_inf says
 * whether the all-ones exponent encodes inf/NaN (IEEE style: half, bf16,
 * e5m2) or only S.1111.111 is NaN (e4m3 "fn"). */
struct smallfmt { int ebits, mbits, bias, has_inf, satfinite; };
static const struct smallfmt F_HALF = {5, 10, 15, 1, 0};
static const struct smallfmt F_E4M3 = {4, 3, 7, 0, 1};
static const struct smallfmt F_E5M2 = {5, 2, 15, 1, 1};

static float small_decode(uint32_t v, const struct smallfmt *f) {
  uint32_t sign = v >> (f->ebits + f->mbits) & 1;
  uint32_t e = v >> f->mbits & ((1u << f->ebits) - 1);
  uint32_t m = v & ((1u << f->mbits) - 1);
  uint32_t emax = (1u << f->ebits) - 1;
  float r;
  if (f->has_inf && e == emax) r = m ? NAN : INFINITY;
  else if (!f->has_inf && e == emax && m == (1u << f->mbits) - 1) r = NAN;
  else if (e == 0) r = ldexpf((float)m, 1 - f->bias - f->mbits);
  else r = ldexpf((float)(m | (1u << f->mbits)), (int)e - f->bias - f->mbits);
  return sign ? -r : r;
}

static uint32_t small_encode(float x, const struct smallfmt *f) {
  uint32_t sign = signbit(x) ? 1u << (f->ebits + f->mbits) : 0;
  uint32_t emax = (1u << f->ebits) - 1;
  uint32_t nan = f->has_inf ? (emax << f->mbits) | (1u << (f->mbits - 1))
                            : (emax << f->mbits) | ((1u << f->mbits) - 1);
  /* largest finite code and value */
  uint32_t maxcode = f->has_inf ? ((emax - 1) << f->mbits) | ((1u << f->mbits) - 1)
                                : (emax << f->mbits) | ((1u << f->mbits) - 2);
  float maxval = small_decode(maxcode, f);
  uint32_t inf = f->has_inf ? emax << f->mbits : maxcode;
  if (isnan(x)) return sign | nan;
  double a = fabs((double)x);
  if (isinf(x)) return sign | (f->satfinite ? maxcode : inf);
  int e2;
  frexp(a, &e2);                   /* a = m * 2^e2, m in [0.5, 1) */
  int E = e2 - 1;                  /* a = 1.f * 2^E */
  uint32_t code;
  if (a == 0.0) return sign;
  if (E < 1 - f->bias) {           /* subnormal range */
    double q = nearbyint(ldexp(a, f->bias - 1 + f->mbits));
    code = (uint32_t)q;            /* q == 2^mbits is the smallest normal */
  } else {
    double q = nearbyint(ldexp(a, f->mbits - E));
    if (q >= ldexp(1.0, f->mbits + 1)) { q = ldexp(1.0, f->mbits); E++; }
    code = ((uint32_t)(E + f->bias) << f->mbits) | ((uint32_t)q - (1u << f->mbits));
  }
  if (code > maxcode || small_decode(code, f) > maxval) {
    /* Between max and max + half an ulp rounds to max (nearest); beyond
     * it is an overflow: inf, or the largest finite value when saturating. */
    double ulp = ldexp(1.0, (int)((maxcode >> f->mbits) - f->bias - f->mbits));
    if (f->satfinite || a < maxval + ulp / 2) return sign | maxcode;
    return sign | inf;
  }
  return sign | code;
}

float sim_half_to_float(uint16_t h) { return small_decode(h, &F_HALF); }
uint16_t sim_float_to_half(float f) { return (uint16_t)small_encode(f, &F_HALF); }
float sim_fp8_to_float(uint8_t v, int e5m2) { return small_decode(v, e5m2 ? &F_E5M2 : &F_E4M3); }
uint8_t sim_float_to_fp8(float f, int e5m2) { return (uint8_t)small_encode(f, e5m2 ? &F_E5M2 : &F_E4M3); }

float sim_bf16_to_float(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

uint16_t sim_float_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if (isnan(f)) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fff + ((u >> 16) & 1);    /* round to nearest even */
  return (uint16_t)(u >> 16);
}

/* Element access through float for the converted types. */
static float ld_small(ncclDataType_t dt, const void *p, size_t i) {
  switch (dt) {
  case ncclFloat16: return sim_half_to_float(((const uint16_t *)p)[i]);
  case ncclBfloat16: return sim_bf16_to_float(((const uint16_t *)p)[i]);
  case ncclFloat8e4m3: return sim_fp8_to_float(((const uint8_t *)p)[i], 0);
  default: return sim_fp8_to_float(((const uint8_t *)p)[i], 1);
  }
}

static void st_small(ncclDataType_t dt, void *p, size_t i, float v) {
  switch (dt) {
  case ncclFloat16: ((uint16_t *)p)[i] = sim_float_to_half(v); break;
  case ncclBfloat16: ((uint16_t *)p)[i] = sim_float_to_bf16(v); break;
  case ncclFloat8e4m3: ((uint8_t *)p)[i] = sim_float_to_fp8(v, 0); break;
  default: ((uint8_t *)p)[i] = sim_float_to_fp8(v, 1); break;
  }
}

/* Integer sums and products wrap modulo 2^bits as on the GPU: they are
 * computed in the unsigned type U of the same width (no C undefined
 * behaviour on signed overflow). max/min compare with a > b ? a : b like
 * NCCL's device code. Floating types use T for both. */
#define RED_LOOP(T, U)                                                       \
  do {                                                                       \
    T *a = (T *)acc;                                                         \
    const T *b = (const T *)x;                                               \
    switch (op) {                                                            \
    case SIM_OP_PROD: for (size_t i = 0; i < count; i++) a[i] = (T)((U)a[i] * (U)b[i]); break; \
    case SIM_OP_MAX: for (size_t i = 0; i < count; i++) a[i] = a[i] > b[i] ? a[i] : b[i]; break; \
    case SIM_OP_MIN: for (size_t i = 0; i < count; i++) a[i] = a[i] < b[i] ? a[i] : b[i]; break; \
    default: for (size_t i = 0; i < count; i++) a[i] = (T)((U)a[i] + (U)b[i]); break; \
    }                                                                        \
  } while (0)

void sim_reduce(ncclDataType_t dt, int op, void *acc, const void *x, size_t count) {
  switch (dt) {
  case ncclInt8: RED_LOOP(int8_t, uint32_t); break;
  case ncclUint8: RED_LOOP(uint8_t, uint32_t); break;
  case ncclInt32: RED_LOOP(int32_t, uint32_t); break;
  case ncclUint32: RED_LOOP(uint32_t, uint32_t); break;
  case ncclInt64: RED_LOOP(int64_t, uint64_t); break;
  case ncclUint64: RED_LOOP(uint64_t, uint64_t); break;
  case ncclFloat32: RED_LOOP(float, float); break;
  case ncclFloat64: RED_LOOP(double, double); break;
  default:
    for (size_t i = 0; i < count; i++) {
      float a = ld_small(dt, acc, i), b = ld_small(dt, x, i), r;
      switch (op) {
      case SIM_OP_PROD: r = a * b; break;
      case SIM_OP_MAX: r = a > b ? a : b; break;
      case SIM_OP_MIN: r = a < b ? a : b; break;
      default: r = a + b; break;
      }
      st_small(dt, acc, i, r);
    }
  }
}

#define SCALE_LOOP(T, U)                                                     \
  do {                                                                       \
    T s;                                                                     \
    memcpy(&s, scalar, sizeof s);                                            \
    for (size_t i = 0; i < count; i++) ((T *)dst)[i] = (T)((U)((const T *)src)[i] * (U)s); \
  } while (0)

void sim_scale(ncclDataType_t dt, void *dst, const void *src, size_t count, const void *scalar) {
  switch (dt) {
  case ncclInt8: SCALE_LOOP(int8_t, uint32_t); break;
  case ncclUint8: SCALE_LOOP(uint8_t, uint32_t); break;
  case ncclInt32: SCALE_LOOP(int32_t, uint32_t); break;
  case ncclUint32: SCALE_LOOP(uint32_t, uint32_t); break;
  case ncclInt64: SCALE_LOOP(int64_t, uint64_t); break;
  case ncclUint64: SCALE_LOOP(uint64_t, uint64_t); break;
  case ncclFloat32: SCALE_LOOP(float, float); break;
  case ncclFloat64: SCALE_LOOP(double, double); break;
  default: {
    float s = ld_small(dt, scalar, 0);
    for (size_t i = 0; i < count; i++) st_small(dt, dst, i, ld_small(dt, src, i) * s);
  }
  }
}

#define DIV_LOOP(T) for (size_t i = 0; i < count; i++) ((T *)x)[i] = (T)(((T *)x)[i] / (T)n)

void sim_divide(ncclDataType_t dt, void *x, size_t count, int n) {
  switch (dt) {
  case ncclInt8: DIV_LOOP(int8_t); break;
  case ncclUint8: DIV_LOOP(uint8_t); break;
  case ncclInt32: DIV_LOOP(int32_t); break;
  case ncclUint32: DIV_LOOP(uint32_t); break;
  case ncclInt64: DIV_LOOP(int64_t); break;
  case ncclUint64: DIV_LOOP(uint64_t); break;
  case ncclFloat32: DIV_LOOP(float); break;
  case ncclFloat64: DIV_LOOP(double); break;
  default:
    for (size_t i = 0; i < count; i++) st_small(dt, x, i, ld_small(dt, x, i) / (float)n);
  }
}

void sim_inverse(ncclDataType_t dt, int n, void *out) {
  switch (dt) {
  case ncclFloat32: { float v = 1.0f / (float)n; memcpy(out, &v, 4); break; }
  case ncclFloat64: { double v = 1.0 / (double)n; memcpy(out, &v, 8); break; }
  default: st_small(dt, out, 0, 1.0f / (float)n); break;
  }
}
