/* tma.h -- facts about Hopper's Tensor Memory Accelerator and mbarriers, in one place for the
 * lowering pass, the codegen, the launch path, the interpreter and the simulator.
 *
 * A tensor map (CUDA Driver API cuTensorMapEncodeTiled; PTX ISA 5.5 "Tensors") describes a
 * global tensor of rank 1..5 (dims, row-major, compact: stride of dim d = product of the dims
 * after it) and a box (the tile one copy moves).  In tirlua it is the pure builtin
 *   tma_descriptor(data, "dtype", swizzle, rank, dim_0 .. dim_{r-1}, box_0 .. box_{r-1})
 * with dims and box outermost first (as buffer shapes; CUDA's arrays are innermost first).
 * One copy (ptx_tma_load, PTX ISA 9.7.9.25 cp.async.bulk.tensor) moves the box at element
 * coordinates c_0 .. c_{r-1} into shared memory as a dense row-major box (innermost dim
 * contiguous); elements outside the tensor read as zero (OOB fill NONE); the bytes are then
 * permuted by the swizzle mode.  Swizzles (PTX ISA 5.5.x "Tensor swizzling modes"; CUTLASS
 * Swizzle<B, 4, 3>): 32/64/128 bytes XOR byte-address bits [4, 4+B) with bits [7, 7+B), B = 1,
 * 2, 3: the 16-byte chunk j of 128-byte line l lands in chunk j ^ (l % 2^B).  The pattern is
 * taken from the shared address, so a swizzled destination must be aligned to 2^B * 128 bytes
 * (tirlua aligns every TMA destination to 1024).
 */
#ifndef TIR_TMA_H
#define TIR_TMA_H

#include <stddef.h>
#include <stdint.h>

#include "tir/dtype.h"
#include "tir/ir.h"

#define TIR_TMA_MAX_RANK 5
/* shared-memory alignment tirlua gives TMA destinations (the 128-byte swizzle's 1024-byte atom) */
#define TIR_TMA_SMEM_ALIGN 1024

typedef struct tir_TmaDesc {
  tir_DType dtype;
  int rank;
  int swizzle;                    /* 0, 32, 64, 128 (bytes) */
  int64_t dims[TIR_TMA_MAX_RANK]; /* outermost first */
  int64_t box[TIR_TMA_MAX_RANK];  /* outermost first */
} tir_TmaDesc;

/* The box-independent rules of cuTensorMapEncodeTiled (CUDA Driver API reference) for desc:
 * rank 1..5, every box dim 1..256 and at most its tensor dim, the inner box row a multiple of
 * 16 bytes, a swizzled inner box row at most the swizzle span, a dtype TMA has (8/16/32/64-bit
 * ints, float16/32/64, bfloat16).  0, or -1 with the reason in why. */
int tir_tma_desc_check(const tir_TmaDesc *d, char *why, size_t cap);
/* Bytes one copy moves (the box). */
int64_t tir_tma_box_bytes(const tir_TmaDesc *d);
/* The swizzled byte offset of dense box byte offset `off` (swizzle 0: off). */
int64_t tir_tma_swizzle(int64_t off, int swizzle);
/* The copy ptx_tma_load stands for: the box of `src` (the tensor's storage, dims as in d) at
 * coords into dst (box bytes, swizzled by d's mode as the hardware places them), out-of-tensor
 * elements zero.  The memory is physical: a storage_swizzle'd destination (Buffer.swizzle, the
 * same PTX mode) is addressed physically by the code lower_buffer_swizzle produced, so its
 * other accesses find the box's elements where the XOR put them. */
void tir_tma_copy_in(const tir_TmaDesc *d, const char *src, const int64_t *coords, char *dst);
/* ptx_tma_store: the box at src (physical, swizzled by d's mode, as above) back into the tensor
 * at coords; elements outside the tensor are not written. */
void tir_tma_copy_out(const tir_TmaDesc *d, char *dst_tensor, const int64_t *coords, const char *src);
/* Reads a tma_descriptor call (argument order above): eval gives an argument's integer value
 * (the dims may be expressions; returns 0 when it cannot), ctx its context.  Checks the rules
 * of tir_tma_desc_check.  0, or -1 with the reason in why (the data var is not checked). */
int tir_tma_desc_from_call(const tir_Node *call, int (*eval)(void *ctx, const tir_Node *e, int64_t *v), void *ctx,
                           tir_TmaDesc *out, char *why, size_t cap);
/* CUtensorMapDataType of a dtype (cuda.h), -1 when TMA has none. */
int tir_tma_cuda_dtype(tir_DType t);

#endif
