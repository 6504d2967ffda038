/* mma.h -- the tensor-core instruction configurations, one row each (TVM src/target/source/ptx.cc
 * and TileLang's instruction/mma.h keep the same kind of table).  The CUDA codegen emits one
 * helper per used row (ptx_mma.c), the simulator takes its lane maps and dtypes from the rows
 * (sim_warp.c), and lib/tir/intrin/cuda.lua generates the desc/impl intrinsics per row
 * (tir.core.mma_configs()).  Adding an instruction family is a row here plus its registration.
 *
 * The builtins work on warp tiles: mma_sync multiplies a 16 x k A tile by a k x 16 B tile into a
 * 16x16 C tile, i.e. two instructions m16n8k (the second on columns 8-15); the "warp" buffer of an
 * operand keeps its tile in (tile elements / 32) consecutive elements per lane, in the order of
 * the lane maps below.  wmma rows are nvcuda::wmma fragment shapes (layout unspecified by PTX;
 * the simulator models a fragment as the warp's collective tile).
 *
 * wgmma rows (PTX ISA 9.7.15 "Asynchronous Warpgroup Level Matrix Multiply-Accumulate
 * Instructions") are one instruction wgmma.mma_async.sync.aligned.m64nNk<k> of a warpgroup (128
 * consecutive threads, the first a multiple of 128): N is an operand of the instruction, not of the
 * row (n = 0; tir_wgmma_n_valid says which N exist), A and B come from shared memory through
 * matrix descriptors (9.7.15.5.1.2), or A from registers ("wgmma.matrix_a" buffers: regs_a 32-bit
 * registers a thread per instruction, map_a over lanes 0..127, 9.7.15.5.1.1.1), and the accumulator
 * D lives in registers, N/2 per thread ("wgmma.accumulator" buffers, map_c over lanes 0..127).
 * The rows need the sm_90a target.
 */
#ifndef TIR_MMA_H
#define TIR_MMA_H

#include "tir/dtype.h"

typedef enum { TIR_MMA_SYNC, TIR_MMA_WMMA, TIR_MMA_WGMMA } tir_MmaFamily;

/* element e of lane `lane`'s part of a warp-tile operand -> (row, col) of the tile
 * (A: row m, col k; B: row k, col n; C/D: row m, col n) */
typedef void (*tir_MmaLaneMap)(int lane, int e, int *row, int *col);

typedef struct {
  const char *name;      /* "<shape>.<A>.<B>.<C>", e.g. "m16n8k16.f16.f16.f32": the row's key */
  tir_MmaFamily family;
  int m, n, k;           /* one instruction's shape */
  tir_DType a, b, c;     /* input and accumulator (C = D) element types */
  const char *ptx_a, *ptx_b, *ptx_c; /* PTX type names (f16 bf16 s8 u8 f32 s32) */
  int min_sm;            /* the oldest architecture with the instruction (80 = sm_80) */
  /* mma.sync only: 32-bit registers per lane of one instruction, and the warp tile's lane maps
   * (PTX ISA 9.7.14.5.8 for m16n8k16 .f16/.bf16, 9.7.14.5.10 for m16n8k32 .s8/.u8) */
  int regs_a, regs_b, regs_c;
  tir_MmaLaneMap map_a, map_b, map_c;
  const char *source;    /* the PTX ISA / CUDA guide section the facts come from */
  /* wgmma only: the valid N are multiples of n_step up to 32 and of n_step_hi above, up to 256
   * (PTX ISA 9.7.15.5.1.1: .f32 accumulators N = 8 i; .s32 N = 8 i up to 32, then 16 i) */
  int n_step, n_step_hi;
} tir_MmaConfig;

/* All rows (static storage); *n gets their number. */
const tir_MmaConfig *tir_mma_table(int *n);
/* The row named `name` of `family`, or NULL. */
const tir_MmaConfig *tir_mma_find(tir_MmaFamily family, const char *name);
/* The row of `family` with these element types (and shape, 0 = any), or NULL. */
const tir_MmaConfig *tir_mma_for(tir_MmaFamily family, tir_DType a, tir_DType b, tir_DType c, int m, int n, int k);
/* Whether N is a valid n dimension of a wgmma row (see n_step). */
int tir_wgmma_n_valid(const tir_MmaConfig *c, int n);
/* The device helper of one wgmma instruction m64n<n>k<k> of row c; flags: TIR_WGMMA_TRANS_B (B
 * stored N-major, 16-bit inputs only), TIR_WGMMA_A_REGISTERS (A from registers).  Shared A:
 * void NAME(acc *d, unsigned long long desc_a, unsigned long long desc_b); A in registers:
 * void NAME(acc *d, const unsigned *a, unsigned long long desc_b), a = the thread's regs_a 32-bit
 * registers of A in the order of the row's map_a (PTX ISA 9.7.15.5.1.1.1 "Register Fragments":
 * the A fragment of m64nNk16 / m64nNk32, each warp w's 16 rows 16 w .. laid out as mma.sync's
 * m16n8k16 / m16n8k32 A).  Accumulates into d's n/2 registers (scale-d = 1).  Name: static
 * storage; source: owned. */
#define TIR_WGMMA_TRANS_B 1
#define TIR_WGMMA_A_REGISTERS 2
const char *tir_wgmma_helper_name(const tir_MmaConfig *c, int n, int flags);
char *tir_wgmma_helper_source(const tir_MmaConfig *c, int n, int flags);
/* The thread's element offset of slab s (columns s k .. s k + k - 1) of a [64, D] "wgmma.matrix_a"
 * fragment: s * k / 2 (each thread holds 64 k / 128 elements of a slab, in map_a's order; the
 * slabs follow one another).  A fragment is addressed as every warpgroup fragment is, by
 * address_of(frag[flat index]) whose thread part starts at flat / 128: slab s is at flat 64 k s. */
int tir_wgmma_a_slab_offset(const tir_MmaConfig *c, int s);

/* Warp-tile extents of a row: A is tile_m x k, B k x tile_n, C tile_m x tile_n (mma.sync: 16 x 16,
 * two instructions along n; wmma: the fragment shape). */
int tir_mma_tile_m(const tir_MmaConfig *c);
int tir_mma_tile_n(const tir_MmaConfig *c);
/* Elements per lane of a warp tile's operand ('a', 'b', 'c'); mma.sync rows only. */
int tir_mma_lane_elems(const tir_MmaConfig *c, char operand);
/* The device helper's name ("tir_mma_m16n8k16_f16_f16_f32") and its CUDA definition (static
 * storage / owned string): void NAME(acc *d, const unsigned *a, const unsigned *b, const acc *c)
 * issuing the two instructions of a 16x16 warp tile. */
const char *tir_mma_helper_name(const tir_MmaConfig *c);
char *tir_mma_helper_source(const tir_MmaConfig *c);

#endif
