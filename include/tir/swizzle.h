/* swizzle.h -- XOR swizzles of a buffer's physical layout (the `swizzle` field of tir_Buffer).
 *
 * A swizzle permutes the 16-byte chunks of an allocation so that the rows a warp reads at one
 * column (ldmatrix, a TMA box, a wgmma operand) fall into different shared-memory banks
 * without padding.  It is CuTe's Swizzle<B, M, S> applied to BYTE offsets from the start of
 * the allocation:
 *     phys = off ^ (((off >> (M + S)) & ((1 << B) - 1)) << M)
 * i.e. the B bits above bit M + S are XORed into bits [M, M + B).  The PTX ISA's shared-memory
 * swizzling modes (cp.async.bulk.tensor / CUtensorMap CU_TENSOR_MAP_SWIZZLE_*, the wgmma
 * matrix-descriptor "swizzle mode", PTX ISA 9.7.9.27 "Tensor swizzling modes" and 9.7.15.5.1
 * "Shared memory matrix layout") are exactly:
 *     "32B"  = Swizzle<1, 4, 3>  (bit 7 into bit 4;      pattern repeats every  256 bytes)
 *     "64B"  = Swizzle<2, 4, 3>  (bits 7-8 into bits 4-5; repeats every  512 bytes)
 *     "128B" = Swizzle<3, 4, 3>  (bits 7-9 into bits 4-6; repeats every 1024 bytes)
 * The hardware applies them to the absolute shared address; tirlua applies the swizzle to the
 * offset inside the buffer and places swizzled shared buffers at a multiple of the repeat
 * (split_host_device), so that the two agree.
 *
 * The interpreter ignores the field (buffers keep their logical indices: a swizzle only moves
 * storage); lower_buffer_swizzle rewrites the flat indices of the lowered code, so the CUDA C
 * and the simulator see the physical addresses.  Only chunks move: an access must lie inside
 * one 16-byte chunk (M = 4), which vector accesses of <= 16 bytes aligned to their size do. */
#ifndef TIR_SWIZZLE_H
#define TIR_SWIZZLE_H

#include <stdint.h>

/* The packed form stored in tir_Buffer.swizzle: 0 = none, else B | M << 8 | S << 16 with
 * 1 <= B <= 8, 0 <= M <= 12, B <= S (the XOR source bits lie above the bits they change). */
static inline int64_t tir_swizzle_pack(int bits, int base, int shift) {
  return (int64_t)bits | ((int64_t)base << 8) | ((int64_t)shift << 16);
}
static inline int tir_swizzle_bits(int64_t sw) { return (int)(sw & 0xff); }
static inline int tir_swizzle_base(int64_t sw) { return (int)((sw >> 8) & 0xff); }
static inline int tir_swizzle_shift(int64_t sw) { return (int)((sw >> 16) & 0xff); }

/* 1 if sw is 0 or a well-formed packed swizzle. */
int tir_swizzle_valid(int64_t sw);
/* The physical byte offset of logical byte offset off (off >= 0). */
static inline int64_t tir_swizzle_apply(int64_t sw, int64_t off) {
  if (!sw) return off;
  int b = tir_swizzle_bits(sw), m = tir_swizzle_base(sw), s = tir_swizzle_shift(sw);
  return off ^ (((off >> (m + s)) & ((INT64_C(1) << b) - 1)) << m);
}
/* Bytes after which the pattern repeats (2^(B+M+S)); 1 for none.  A swizzled buffer's size
 * and base are multiples of it. */
static inline int64_t tir_swizzle_repeat(int64_t sw) {
  return sw ? INT64_C(1) << (tir_swizzle_bits(sw) + tir_swizzle_base(sw) + tir_swizzle_shift(sw)) : 1;
}
/* Bytes that stay together (2^M): the largest access that the swizzle does not split. */
static inline int64_t tir_swizzle_unit(int64_t sw) { return sw ? INT64_C(1) << tir_swizzle_base(sw) : 0; }
/* The PTX mode of sw: 32, 64 or 128 (bytes), 0 for none, -1 for a swizzle that is no PTX mode. */
int tir_swizzle_ptx_mode(int64_t sw);
/* Parses "none", "32B", "64B", "128B" into *sw; returns 0, or -1 for another string. */
int tir_swizzle_parse(const char *s, int64_t *sw);
/* Writes "none", "32B"/"64B"/"128B" or "{B, M, S}" into buf (>= 24 bytes); returns buf. */
const char *tir_swizzle_str(int64_t sw, char *buf);
/* The swizzle that spreads 8 consecutive rows of row_bytes (a power of two, >= 32) over the 8
 * 16-byte bank groups, the layout CUTLASS and Triton use for ldmatrix operands: the PTX mode of
 * that width for rows of 32, 64 or 128 bytes, Swizzle<3, 4, log2(row_bytes) - 4> above (the
 * low three row bits into the chunk index).  0 when row_bytes is no such width. */
int64_t tir_swizzle_for_rows(int64_t row_bytes);

#endif
