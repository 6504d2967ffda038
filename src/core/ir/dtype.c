/* dtype.c -- dtype text forms, limits, and half/bfloat16 conversions. */
#include "tir/dtype.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool tir_dtype_parse(const char *s, tir_DType *out) {
  if (!s) return false;
  static const struct {
    const char *prefix;
    tir_DTypeCode code;
  } pre[] = {{"bfloat", TIR_DT_BFLOAT}, {"float", TIR_DT_FLOAT}, {"uint", TIR_DT_UINT}, {"int", TIR_DT_INT}};
  if (strcmp(s, "bool") == 0) return *out = TIR_BOOL, true;
  if (strcmp(s, "handle") == 0) return *out = TIR_HANDLE, true;
  if (strcmp(s, "void") == 0) return *out = TIR_VOID, true;
  for (size_t i = 0; i < sizeof pre / sizeof pre[0]; i++) {
    size_t n = strlen(pre[i].prefix);
    if (strncmp(s, pre[i].prefix, n) != 0) continue;
    const char *p = s + n;
    char *end;
    long bits = strtol(p, &end, 10);
    if (end == p) return false;
    long lanes = 1;
    if (*end == 'x') {
      const char *q = end + 1;
      lanes = strtol(q, &end, 10);
      if (end == q || lanes < 1 || lanes > 1024) return false;
    }
    if (*end) return false;
    tir_DTypeCode c = pre[i].code;
    if (c == TIR_DT_FLOAT && bits != 16 && bits != 32 && bits != 64) return false;
    if (c == TIR_DT_BFLOAT && bits != 16) return false;
    if ((c == TIR_DT_INT || c == TIR_DT_UINT) && bits != 8 && bits != 16 && bits != 32 && bits != 64)
      return false;
    *out = tir_dtype(c, (int)bits, (int)lanes);
    return true;
  }
  return false;
}

char *tir_dtype_str(tir_DType t, char *buf) {
  const char *base;
  switch (t.code) {
    case TIR_DT_INT: base = "int"; break;
    case TIR_DT_UINT: base = "uint"; break;
    case TIR_DT_FLOAT: base = "float"; break;
    case TIR_DT_BFLOAT: base = "bfloat"; break;
    case TIR_DT_BOOL: strcpy(buf, "bool"); goto lanes;
    case TIR_DT_HANDLE: strcpy(buf, "handle"); return buf;
    case TIR_DT_VOID: strcpy(buf, "void"); return buf;
    default: strcpy(buf, "?"); return buf;
  }
  sprintf(buf, "%s%d", base, t.bits);
lanes:
  if (t.lanes > 1) sprintf(buf + strlen(buf), "x%d", t.lanes);
  return buf;
}

double tir_dtype_max(tir_DType t) {
  switch (t.code) {
    case TIR_DT_INT: return t.bits >= 64 ? 9223372036854775807.0 : ldexp(1.0, t.bits - 1) - 1;
    case TIR_DT_UINT: return ldexp(1.0, t.bits) - 1;
    case TIR_DT_BOOL: return 1;
    case TIR_DT_FLOAT:
      return t.bits == 16 ? 65504.0 : t.bits == 32 ? FLT_MAX : DBL_MAX;
    case TIR_DT_BFLOAT: return 3.38953138925153547590e+38;
    default: return 0;
  }
}

double tir_dtype_min(tir_DType t) {
  switch (t.code) {
    case TIR_DT_INT: return -ldexp(1.0, t.bits - 1);
    case TIR_DT_FLOAT:
    case TIR_DT_BFLOAT: return -tir_dtype_max(t);
    default: return 0;
  }
}

int64_t tir_float_to_int_sat(double x, tir_DType to) {
  if (x != x) return 0;
  if (to.code == TIR_DT_BOOL) return x != 0;
  if (to.code == TIR_DT_UINT) {
    if (x <= 0) return 0;
    if (to.bits >= 64) return x >= 18446744073709551616.0 ? (int64_t)UINT64_MAX : (int64_t)(uint64_t)x;
    double hi = ldexp(1.0, to.bits) - 1;
    return x >= hi ? (int64_t)hi : (int64_t)x;
  }
  int bits = to.bits >= 64 ? 64 : to.bits;
  double lim = ldexp(1.0, bits - 1); /* exact: -lim is the minimum, lim - 1 the maximum */
  if (x >= lim) return bits >= 64 ? INT64_MAX : (int64_t)lim - 1;
  if (x <= -lim) return bits >= 64 ? INT64_MIN : -(int64_t)lim;
  return (int64_t)x;
}

/* binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits. */
uint16_t tir_f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t man = x & 0x7fffffu;
  if (exp == 0xff) return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0)); /* inf / nan */
  int e = (int)exp - 127 + 15;
  if (e >= 31) return (uint16_t)(sign | 0x7c00u);                          /* overflow */
  if (e <= 0) {                                                            /* subnormal */
    if (e < -10) return (uint16_t)sign;
    man |= 0x800000u;
    int shift = 14 - e;
    uint32_t half = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) half++;
    return (uint16_t)(sign | half);
  }
  uint32_t h = sign | ((uint32_t)e << 10) | (man >> 13);
  uint32_t rem = man & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++; /* may carry into exponent: correct */
  return (uint16_t)h;
}

float tir_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  uint32_t x;
  if (exp == 0) {
    if (man == 0) {
      x = sign;
    } else { /* subnormal: normalize */
      int e = -1;
      do {
        man <<= 1;
        e++;
      } while (!(man & 0x400u));
      x = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000u | (man << 13);
  } else {
    x = sign | ((exp - 15 + 127) << 23) | (man << 13);
  }
  float f;
  memcpy(&f, &x, 4);
  return f;
}

uint16_t tir_f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet nan */
  uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;
  return (uint16_t)(x >> 16);
}

float tir_bf16_to_f32(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

/* x rounded (to nearest, ties to even) to a binary format of p significand bits whose
 * normal numbers have exponents emin..emax; beyond the largest finite value: infinity.  One
 * rounding of the exact double, as cvt.rn.f16.f64 / cvt.rn.bf16.f64: going through float
 * would round twice (0x1.0020000000001p0 is 1.0 by float, 1.0009765625 by one rounding). */
static double round_to_format(double x, int p, int emin, int emax) {
  if (x != x || x == 0 || isinf(x)) return x;
  int e;
  frexp(x, &e); /* |x| = m * 2^e, m in [0.5, 1): the exponent of x is e - 1 */
  int ex = e - 1 < emin ? emin : e - 1; /* subnormals share the smallest exponent's quantum */
  double q = ldexp(1.0, ex - (p - 1));
  double r = nearbyint(x / q) * q; /* scaling by a power of two is exact; nearbyint rounds to even */
  if (fabs(r) >= ldexp(1.0, emax + 1)) return copysign(INFINITY, x);
  return r;
}

uint16_t tir_f64_to_f16(double x) {
  float f = (float)x;
  if ((double)f == x || x != x) return tir_f32_to_f16(f); /* exact in float (the common case) or NaN */
  return tir_f32_to_f16((float)round_to_format(x, 11, -14, 15)); /* exact: the result is a half */
}

uint16_t tir_f64_to_bf16(double x) {
  float f = (float)x;
  if ((double)f == x || x != x) return tir_f32_to_bf16(f);
  return tir_f32_to_bf16((float)round_to_format(x, 8, -126, 127));
}
