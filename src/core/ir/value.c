/* value.c -- the value rules of scalars (see value.h): normalization per dtype, casts, the
 * binary operators and the math builtins, shared by the interpreter, the simulator and the
 * constant folder. */
#include "tir/value.h"

#include <math.h>
#include <string.h>

#include "tir/ir.h"

static int is_f(tir_DType t) { return tir_dtype_is_float(t); }

tir_Value tir_value_norm(tir_DType t, tir_Value v) {
  switch (t.code) {
    case TIR_DT_INT:
      if (t.bits < 64) {
        uint64_t m = (1ull << t.bits) - 1, u = (uint64_t)v.i & m;
        if (u >> (t.bits - 1)) u |= ~m;
        v.i = (int64_t)u;
      }
      return v;
    case TIR_DT_UINT:
      if (t.bits < 64) v.i = (int64_t)((uint64_t)v.i & ((1ull << t.bits) - 1));
      return v;
    case TIR_DT_BOOL: v.i = v.i != 0; return v;
    case TIR_DT_FLOAT:
      if (t.bits == 32) v.f = (float)v.f;
      else if (t.bits == 16) v.f = tir_f16_to_f32(tir_f64_to_f16(v.f));
      return v;
    case TIR_DT_BFLOAT: v.f = tir_bf16_to_f32(tir_f64_to_bf16(v.f)); return v;
    default: return v;
  }
}

/* An integer of type `from` as a float of type `to`, rounded once (PTX cvt.rn.<float>.<int>):
 * beyond 2^53 the integer is first rounded to odd at 53 bits, which a second rounding to 24 or
 * fewer bits cannot tell from the exact value (round-to-odd, Boldo & Melquiond). */
static tir_Value int_to_float(tir_DType to, tir_DType from, int64_t i) {
  int uns = from.code == TIR_DT_UINT || from.code == TIR_DT_BOOL;
  tir_Value r;
  if (to.code == TIR_DT_FLOAT && to.bits == 64) {
    r.f = uns ? (double)(uint64_t)i : (double)i;
    return r;
  }
  int neg = !uns && i < 0;
  uint64_t u = neg ? 0 - (uint64_t)i : (uint64_t)i;
  double d = (double)u;
  if (u >> 53) {
    int sh = 64 - __builtin_clzll(u) - 53;
    uint64_t m = u >> sh;
    if (u & ((1ull << sh) - 1)) m |= 1;
    d = ldexp((double)m, sh);
  }
  r.f = neg ? -d : d;
  return tir_value_norm(to, r);
}

tir_Value tir_value_cast(tir_DType to, tir_DType from, tir_Value v) {
  to = tir_dtype_element(to);
  from = tir_dtype_element(from);
  tir_Value r = {0};
  if (is_f(to)) return is_f(from) ? tir_value_norm(to, v) : int_to_float(to, from, v.i);
  if (is_f(from)) {
    /* truncated toward zero and saturated, NaN 0 (PTX cvt.rzi, which saturates by default) */
    r.i = tir_float_to_int_sat(v.f, to);
    return r;
  }
  r.i = to.code == TIR_DT_BOOL ? v.i != 0 : v.i;
  return tir_value_norm(to, r);
}

static int64_t floordiv64(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  return q;
}

int tir_value_binop(int kind, tir_DType t, tir_Value x, tir_Value y, tir_Value *out) {
  t = tir_dtype_element(t);
  tir_Value r = {0};
  int f = is_f(t), uns = t.code == TIR_DT_UINT || t.code == TIR_DT_BOOL;
  switch (kind) {
    case TIR_EQ: r.i = f ? x.f == y.f : x.i == y.i; break;
    case TIR_NE: r.i = f ? x.f != y.f : x.i != y.i; break;
    case TIR_LT: r.i = f ? x.f < y.f : uns ? (uint64_t)x.i < (uint64_t)y.i : x.i < y.i; break;
    case TIR_LE: r.i = f ? x.f <= y.f : uns ? (uint64_t)x.i <= (uint64_t)y.i : x.i <= y.i; break;
    case TIR_GT: r.i = f ? x.f > y.f : uns ? (uint64_t)x.i > (uint64_t)y.i : x.i > y.i; break;
    case TIR_GE: r.i = f ? x.f >= y.f : uns ? (uint64_t)x.i >= (uint64_t)y.i : x.i >= y.i; break;
    case TIR_And: r.i = x.i && y.i; break;
    case TIR_Or: r.i = x.i || y.i; break;
    default:
      if (f) {
        switch (kind) {
          case TIR_Add: r.f = x.f + y.f; break;
          case TIR_Sub: r.f = x.f - y.f; break;
          case TIR_Mul: r.f = x.f * y.f; break;
          case TIR_Div: r.f = x.f / y.f; break;
          case TIR_FloorDiv: r.f = floor(tir_value_norm(t, (tir_Value){.f = x.f / y.f}).f); break;
          case TIR_FloorMod: {
            /* x - floor(x / y) * y with every step rounded to t */
            double q = floor(tir_value_norm(t, (tir_Value){.f = x.f / y.f}).f);
            r.f = x.f - tir_value_norm(t, (tir_Value){.f = q * y.f}).f;
            break;
          }
          case TIR_Min: r.f = tir_fmin(x.f, y.f); break;
          case TIR_Max: r.f = tir_fmax(x.f, y.f); break;
          default: return TIR_VALUE_UNKNOWN;
        }
        *out = tir_value_norm(t, r);
        return TIR_VALUE_OK;
      }
      switch (kind) {
        case TIR_Add: r.i = (int64_t)((uint64_t)x.i + (uint64_t)y.i); break;
        case TIR_Sub: r.i = (int64_t)((uint64_t)x.i - (uint64_t)y.i); break;
        case TIR_Mul: r.i = (int64_t)((uint64_t)x.i * (uint64_t)y.i); break;
        case TIR_Div:
        case TIR_Mod:
        case TIR_FloorDiv:
        case TIR_FloorMod: {
          if (y.i == 0) return TIR_VALUE_DIV_BY_ZERO;
          int div = kind == TIR_Div || kind == TIR_FloorDiv;
          if (uns) {
            uint64_t ux = (uint64_t)x.i, uy = (uint64_t)y.i;
            r.i = (int64_t)(div ? ux / uy : ux % uy);
          } else if (x.i == INT64_MIN && y.i == -1) {
            r.i = div ? INT64_MIN : 0; /* narrower types: INT_MIN / -1 = -INT_MIN wraps below */
          } else if (kind == TIR_Div) r.i = x.i / y.i;
          else if (kind == TIR_Mod) r.i = x.i % y.i;
          else if (kind == TIR_FloorDiv) r.i = floordiv64(x.i, y.i);
          else r.i = (int64_t)((uint64_t)x.i - (uint64_t)floordiv64(x.i, y.i) * (uint64_t)y.i); /* no overflow (UB) */
          break;
        }
        case TIR_Min: r.i = (uns ? (uint64_t)x.i < (uint64_t)y.i : x.i < y.i) ? x.i : y.i; break;
        case TIR_Max: r.i = (uns ? (uint64_t)x.i > (uint64_t)y.i : x.i > y.i) ? x.i : y.i; break;
        default: return TIR_VALUE_UNKNOWN;
      }
      *out = tir_value_norm(t, r);
      return TIR_VALUE_OK;
  }
  *out = r;
  return TIR_VALUE_OK;
}

/* shift_left / shift_right: the amount is read as unsigned, and amounts of the width or more
 * shift every bit out (0; a signed shift_right gives the sign), as PTX shl/shr clamp them. */
static int64_t shift(int left, tir_DType t, int64_t x, int64_t amount) {
  uint64_t s = (uint64_t)amount;
  if (left) return s >= 64 ? 0 : (int64_t)((uint64_t)x << s);
  if (t.code == TIR_DT_UINT) return s >= 64 ? 0 : (int64_t)((uint64_t)x >> s);
  return s >= 64 ? (x < 0 ? -1 : 0) : x >> s;
}

int tir_value_builtin(const char *op, tir_DType t, int n, const tir_DType *at, const tir_Value *a, tir_Value *out) {
  const tir_MathBuiltin *m = tir_math_builtin(op);
  t = tir_dtype_element(t);
  if (!m || m->arity != n) return TIR_VALUE_UNKNOWN;
  tir_Value r = {0};
  switch (m->kind) {
    case TIR_MATH_BITS: {
      if (!tir_dtype_is_int(t)) return TIR_VALUE_BAD_DTYPE;
      int64_t x = a[0].i, y = n > 1 ? a[1].i : 0;
      if (strcmp(op, "shift_left") == 0) r.i = shift(1, t, x, y);
      else if (strcmp(op, "shift_right") == 0) r.i = shift(0, t, x, y);
      else if (strcmp(op, "bitwise_and") == 0) r.i = x & y;
      else if (strcmp(op, "bitwise_or") == 0) r.i = x | y;
      else if (strcmp(op, "bitwise_xor") == 0) r.i = x ^ y;
      else r.i = ~x;
      *out = tir_value_norm(t, r);
      return TIR_VALUE_OK;
    }
    case TIR_MATH_PRED: {
      if (t.code != TIR_DT_BOOL) return TIR_VALUE_BAD_DTYPE;
      double x = tir_value_cast(TIR_FLOAT64, at[0], a[0]).f;
      r.i = strcmp(op, "isnan") == 0 ? isnan(x) != 0 : strcmp(op, "isinf") == 0 ? isinf(x) != 0 : isfinite(x) != 0;
      *out = r;
      return TIR_VALUE_OK;
    }
    case TIR_MATH_ABS:
      if (!is_f(t)) {
        if (is_f(at[0])) return TIR_VALUE_BAD_DTYPE;
        tir_DType et = tir_dtype_element(at[0]);
        int64_t x = a[0].i;
        if (et.code == TIR_DT_INT && x < 0) x = (int64_t)(0 - (uint64_t)x); /* INT_MIN wraps to itself */
        r.i = x;
        *out = tir_value_norm(t, r);
        return TIR_VALUE_OK;
      }
      break;
    default:
      if (!is_f(t)) return TIR_VALUE_BAD_DTYPE;
      break;
  }
  /* float builtins: arguments converted to the computing type first, as the CUDA C does */
  tir_DType ct = t.bits == 64 ? TIR_FLOAT64 : TIR_FLOAT32;
  double x = tir_value_cast(ct, at[0], a[0]).f, y = n > 1 ? tir_value_cast(ct, at[1], a[1]).f : 0;
  if (!m->f1 && !m->f2) {
    /* sigmoid: 1 / (1 + exp(-x)), each step in the computing type */
    double e = tir_value_norm(ct, (tir_Value){.f = exp(-x)}).f;
    double d = tir_value_norm(ct, (tir_Value){.f = 1.0 + e}).f;
    r.f = 1.0 / d;
  } else {
    r.f = m->f1 ? m->f1(x) : m->f2(x, y);
  }
  r = tir_value_norm(ct, r);
  *out = tir_value_norm(t, r);
  return TIR_VALUE_OK;
}
