/* value.h -- what one element of each dtype holds and what the operators, casts and math
 * builtins compute on it: the rules of docs/ARCHITECTURE.md "Numerics", in one place for the
 * interpreter (interp.c), the simulator (sim_exec.c, sim_warp.c) and the constant folder
 * (op.c), so that they cannot drift apart.  The CUDA codegen emits instructions with the same
 * results (codegen_cuda.c; tests/spec/numerics_spec.lua and gpu_numerics_spec.lua check it).
 *
 * Facts: PTX ISA 8.x, "cvt" (float -> integer conversions saturate, NaN gives 0; .rn/.rni round
 * to nearest even), "shl"/"shr" (shift amounts beyond the width clamp), "min"/"max"; IEEE 754
 * for the arithmetic; CUDA's cuda_fp16.h / cuda_bf16.h conversions (one rounding).
 */
#ifndef TIR_VALUE_H
#define TIR_VALUE_H

#include "tir/dtype.h"

/* One element.  Integers and bool: the int64 bit pattern, sign-extended for intN and
 * zero-extended for uintN (uint64 values above INT64_MAX wrap); bool is 0 or 1.  Floats: the
 * double holding exactly the dtype's value (float16/bfloat16/float32 values are doubles). */
typedef union {
  int64_t i;
  double f;
} tir_Value;

/* Results of tir_value_binop / tir_value_builtin. */
enum { TIR_VALUE_OK = 0, TIR_VALUE_DIV_BY_ZERO = 1, TIR_VALUE_UNKNOWN = 2, TIR_VALUE_BAD_DTYPE = 3 };

/* v brought into element type t: integers wrap to t's width (two's complement), floats round
 * to nearest even in one step (overflow: infinity; subnormals kept), bool is v != 0. */
tir_Value tir_value_norm(tir_DType t, tir_Value v);

/* Cast (TIR Cast node) of v from `from` to `to` (element types):
 *   int -> int: wraps (C's conversion); int/bool -> bool: v != 0
 *   int -> float: rounded once to nearest even (also int64 -> float16/bfloat16)
 *   float -> float: rounded once to nearest even
 *   float -> int: truncated toward zero and saturated to to's range, NaN gives 0
 *                 (PTX cvt.rzi.<int>.<float>); float -> bool: x != 0 and not NaN. */
tir_Value tir_value_cast(tir_DType to, tir_DType from, tir_Value v);

/* Binary node `kind` (TIR_Add .. TIR_Or) on operands of element type t.  Arithmetic results
 * have type t, comparisons and And/Or are bool (0/1).  Integers wrap; Div/Mod truncate (C),
 * FloorDiv/FloorMod round toward -inf; INT_MIN / -1 is INT_MIN (mod 0).  Floats: IEEE results
 * rounded to t; FloorDiv is floor(x / y) of the rounded quotient; Min/Max are tir_fmin/fmax.
 * Returns TIR_VALUE_OK, or TIR_VALUE_DIV_BY_ZERO for an integer division by zero. */
int tir_value_binop(int kind, tir_DType t, tir_Value x, tir_Value y, tir_Value *out);

/* The math builtin `op` (tir_math_builtin, docs/BUILTINS.md) of result type t on n arguments
 * of element types at[].  Float builtins convert their arguments to the computing type
 * (float64 for a float64 result, else float32), evaluate the function in double, round to the
 * computing type, then to t (float16/bfloat16 compute in float32, as the codegen).  Returns
 * TIR_VALUE_OK, TIR_VALUE_UNKNOWN (no such builtin with n arguments) or TIR_VALUE_BAD_DTYPE
 * (e.g. exp with an integer result, a bit operation on floats, isnan not bool). */
int tir_value_builtin(const char *op, tir_DType t, int n, const tir_DType *at, const tir_Value *args, tir_Value *out);

/* fmin/fmax as CUDA's fminf/fmaxf and PTX min/max.f32: a NaN operand gives the other one (both
 * NaN: NaN); -0.0 counts as smaller than +0.0. */
double tir_fmin(double x, double y);
double tir_fmax(double x, double y);

#endif
