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
 *
 * Im2col mode (CUDA Driver API cuTensorMapEncodeIm2col; PTX ISA 5.5.4 "Im2col mode", 9.7.9.25
 * cp.async.bulk.tensor .im2col): a channels-last tensor of rank 3..5 (N, [D,] [H,] W, C) and, per
 * spatial dim, a bounding box [lower, dim - 1 + upper] with a traversal stride.  In tirlua it is
 *   tma_im2col_descriptor(data, "dtype", swizzle, rank, dim_0 .. dim_{r-1}, lower_1 .. lower_{r-2},
 *                         upper_1 .. upper_{r-2}, stride_1 .. stride_{r-2}, pixels, channels)
 * (outermost first, the spatial dims only for the corners and strides).  One copy
 * (ptx_tma_load_im2col: coordinates n, spatial..., c and r-2 im2col offsets) moves `pixels` pixels
 * of `channels` channels each into a dense [pixels, channels] box: the first pixel at the
 * coordinates, each next one a traversal stride further along the innermost spatial dim, wrapping
 * to the box's lower corner and stepping the next-outer dim (past the outermost: the next n);
 * pixel (n, s) reads the channels c .. c + channels - 1 of element (n, s + offsets), zero outside
 * the tensor.  Convolution (docs/CONVOLUTION.md): lower = -pad, upper = pad_hi - (R - 1) dilation,
 * stride = the conv's, offsets = the filter tap times the dilation, so the box walks the output
 * pixels m = (n P + p) Q + q in order.
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
  int64_t box[TIR_TMA_MAX_RANK];  /* outermost first; im2col mode: {pixels, channels} */
  int im2col;                     /* 1: an im2col tensor map (tma_im2col_descriptor) */
  int64_t lower[TIR_TMA_MAX_RANK - 2], upper[TIR_TMA_MAX_RANK - 2], estride[TIR_TMA_MAX_RANK - 2]; /* im2col: per spatial dim, outermost first */
} tir_TmaDesc;

/* Whether n is a tensor-map call (tma_descriptor or tma_im2col_descriptor). */
int tir_tma_is_descriptor(const tir_Node *n);

/* The box-independent rules of cuTensorMapEncodeTiled (CUDA Driver API reference) for desc:
 * rank 1..5, every box dim 1..256 and at most its tensor dim, the inner box row a multiple of
 * 16 bytes, a swizzled inner box row at most the swizzle span, a dtype TMA has (8/16/32/64-bit
 * ints, float16/32/64, bfloat16).  0, or -1 with the reason in why. */
int tir_tma_desc_check(const tir_TmaDesc *d, char *why, size_t cap);
/* The rules of cuTensorMapEncodeIm2col (CUDA Driver API reference) for an im2col desc: rank 3..5,
 * channels 1..256 and a multiple of 16 bytes (at most the swizzle span), pixels 1..1024, traversal
 * strides 1..8, corners within the driver's range (rank 3: -2^15 .. 2^15 - 1, 4: -2^7 .. 2^7 - 1,
 * 5: -2^4 .. 2^4 - 1).  0, or -1 with the reason in why (tir_tma_desc_check calls it). */
int tir_tma_im2col_check(const tir_TmaDesc *d, char *why, size_t cap);
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
/* ptx_tma_load_im2col: the copy of an im2col desc (rules above) from the tensor `src` at coords
 * (rank of them, outermost first) with offsets (rank - 2, outermost first) into dst, swizzled. */
void tir_tma_copy_in_im2col(const tir_TmaDesc *d, const char *src, const int64_t *coords, const int64_t *offsets, char *dst);
/* ptx_tma_store: the box at src (physical, swizzled by d's mode, as above) back into the tensor
 * at coords; elements outside the tensor are not written. */
void tir_tma_copy_out(const tir_TmaDesc *d, char *dst_tensor, const int64_t *coords, const char *src);
/* Reads a tma_descriptor or tma_im2col_descriptor call (argument orders above): eval gives an argument's integer value
 * (the dims may be expressions; returns 0 when it cannot), ctx its context.  Checks the rules
 * of tir_tma_desc_check.  0, or -1 with the reason in why (the data var is not checked). */
int tir_tma_desc_from_call(const tir_Node *call, int (*eval)(void *ctx, const tir_Node *e, int64_t *v), void *ctx,
                           tir_TmaDesc *out, char *why, size_t cap);
/* CUtensorMapDataType of a dtype (cuda.h), -1 when TMA has none. */
int tir_tma_cuda_dtype(tir_DType t);

#endif
