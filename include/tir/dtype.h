/* dtype.h -- scalar and vector data types of the IR (TVM's DataType).
 *
 * A dtype is (code, bits, lanes): int8..int64, uint8..uint64, float16/32/64, bfloat16,
 * bool (code BOOL, 1 bit), handle (an opaque pointer, 64 bits) and void (statements).
 * lanes > 1 is a vector ("float16x8").  Text forms match TVM: "float32", "int8x4", "bool".
 */
#ifndef TIR_DTYPE_H
#define TIR_DTYPE_H

#include <stdbool.h>
#include <stdint.h>

typedef enum {
  TIR_DT_INT = 0,
  TIR_DT_UINT = 1,
  TIR_DT_FLOAT = 2,
  TIR_DT_HANDLE = 3,
  TIR_DT_BFLOAT = 4,
  TIR_DT_BOOL = 5,
  TIR_DT_VOID = 6
} tir_DTypeCode;

typedef struct {
  uint8_t code;   /* tir_DTypeCode */
  uint8_t bits;   /* 1 (bool), 8, 16, 32, 64 */
  uint16_t lanes; /* 1 for scalars */
} tir_DType;

static inline tir_DType tir_dtype(tir_DTypeCode code, int bits, int lanes) {
  tir_DType t = {(uint8_t)code, (uint8_t)bits, (uint16_t)lanes};
  return t;
}
#define TIR_INT32 tir_dtype(TIR_DT_INT, 32, 1)
#define TIR_INT64 tir_dtype(TIR_DT_INT, 64, 1)
#define TIR_BOOL tir_dtype(TIR_DT_BOOL, 1, 1)
#define TIR_FLOAT32 tir_dtype(TIR_DT_FLOAT, 32, 1)
#define TIR_FLOAT16 tir_dtype(TIR_DT_FLOAT, 16, 1)
#define TIR_FLOAT64 tir_dtype(TIR_DT_FLOAT, 64, 1)
#define TIR_HANDLE tir_dtype(TIR_DT_HANDLE, 64, 1)
#define TIR_VOID tir_dtype(TIR_DT_VOID, 0, 0)

static inline bool tir_dtype_eq(tir_DType a, tir_DType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}
static inline bool tir_dtype_is_int(tir_DType t) { return t.code == TIR_DT_INT || t.code == TIR_DT_UINT; }
static inline bool tir_dtype_is_float(tir_DType t) { return t.code == TIR_DT_FLOAT || t.code == TIR_DT_BFLOAT; }
static inline bool tir_dtype_is_bool(tir_DType t) { return t.code == TIR_DT_BOOL; }
static inline bool tir_dtype_is_handle(tir_DType t) { return t.code == TIR_DT_HANDLE; }
static inline bool tir_dtype_is_void(tir_DType t) { return t.code == TIR_DT_VOID; }
static inline tir_DType tir_dtype_element(tir_DType t) { t.lanes = 1; return t; }
static inline tir_DType tir_dtype_with_lanes(tir_DType t, int lanes) { t.lanes = (uint16_t)lanes; return t; }
/* Bytes of one element of all lanes (bool counts as one byte per lane). */
static inline int tir_dtype_bytes(tir_DType t) { return (t.bits < 8 ? 1 : t.bits / 8) * t.lanes; }

/* Parses "float32", "int8x4", "bool", "handle", "void".  Returns false on unknown text. */
bool tir_dtype_parse(const char *s, tir_DType *out);
/* Writes the text form into buf (at least 24 bytes); returns buf. */
char *tir_dtype_str(tir_DType t, char *buf);
/* Largest and smallest finite value representable (for int types exact, floats as double). */
double tir_dtype_max(tir_DType t);
double tir_dtype_min(tir_DType t);
/* x converted to the integer (or bool) type `to` as CUDA's cvt.rzi.sat does: truncated
 * toward zero and saturated to to's range; NaN gives 0 (bool: x != 0, NaN false).  The
 * result is the value's int64 bit pattern (uint64 values above INT64_MAX wrap).  The one
 * float -> int rule of the constant folder, the interpreter and the simulator. */
int64_t tir_float_to_int_sat(double x, tir_DType to);

/* IEEE binary16 / bfloat16 conversions, round to nearest even (used by the interpreter and
 * NDArray).  Facts: IEEE 754-2008 binary16; bfloat16 is the top half of binary32. */
uint16_t tir_f32_to_f16(float f);
float tir_f16_to_f32(uint16_t h);
uint16_t tir_f32_to_bf16(float f);
float tir_bf16_to_f32(uint16_t h);
/* From a double with one rounding (PTX ISA cvt.rn.f16.f64 / cvt.rn.bf16.f64; CUDA's
 * __double2half / __double2bfloat16): overflow gives infinity, subnormals are kept. */
uint16_t tir_f64_to_f16(double x);
uint16_t tir_f64_to_bf16(double x);

#endif
