/* scope.h -- storage scopes, parsed once (TVM src/runtime/thread_storage_scope.h: a rank plus a
 * tag).  Passes ask these predicates instead of comparing scope strings.
 *
 * A scope string is "<rank>[<tag>]": "global" (also ""; "global.zeroed": see tir_scope_is_zeroed), "shared" / "shared.dyn", "warp" (the
 * mma.sync operand buffers: a 16x16 tile per 256 elements, each lane keeps a 32nd), "local" /
 * "register", "wmma.matrix_a" / "wmma.matrix_b" / "wmma.accumulator" (nvcuda::wmma fragments),
 * and TVM's "m16n8k<k>.matrixA|B|C" fragment scopes (accepted by the schedule only),
 * "wgmma.accumulator" (the D fragment of wgmma.mma_async: a warpgroup of 128 threads holds a 64 x N
 * tile, N/2 elements a thread, PTX ISA 9.7.15.5.1.1; lane maps in include/tir/mma.h).
 *
 * A shared buffer's XOR swizzle is no part of its scope: it is the Buffer's `swizzle` field
 * (storage_swizzle; include/tir/swizzle.h), which wgmma descriptors and TMA tensor maps read.
 */
#ifndef TIR_SCOPE_H
#define TIR_SCOPE_H

typedef enum {
  TIR_SCOPE_GLOBAL,
  TIR_SCOPE_SHARED,
  TIR_SCOPE_WARP,
  TIR_SCOPE_LOCAL,
  TIR_SCOPE_WMMA_MATRIX_A,
  TIR_SCOPE_WMMA_MATRIX_B,
  TIR_SCOPE_WMMA_ACCUMULATOR,
  TIR_SCOPE_MMA_MATRIX, /* m16n8k<k>.matrixA|B|C */
  TIR_SCOPE_WGMMA_ACCUMULATOR, /* wgmma.accumulator */
  TIR_SCOPE_WGMMA_MATRIX_A, /* wgmma.matrix_a: wgmma's A operand in the registers of a warpgroup */
  TIR_SCOPE_UNKNOWN
} tir_ScopeRank;

typedef struct {
  tir_ScopeRank rank;
  const char *tag; /* what follows the rank's name: "", ".dyn" (borrowed from the string) */
} tir_Scope;

/* Parses a scope string (NULL reads as ""); an unknown string has rank TIR_SCOPE_UNKNOWN. */
tir_Scope tir_scope_parse(const char *scope);

int tir_scope_is_global(const char *scope); /* "global", "global.zeroed" or "" */
/* "global.zeroed": a global temporary that is 0 when a launch sequence starts and that its kernels
 * leave 0 again (the counters of tir_grid_arrive_last, made by lower_grid_tail); the runtime zeroes it
 * when it allocates it, the interpreter and tir.simulate start it at 0 (other temporaries start
 * poisoned) */
int tir_scope_is_zeroed(const char *scope);
int tir_scope_is_shared(const char *scope); /* "shared", "shared.dyn" */
int tir_scope_is_local(const char *scope);  /* "local", "register" */
int tir_scope_is_warp(const char *scope);   /* "warp" */
int tir_scope_is_wmma(const char *scope);   /* wmma.matrix_a/_b/accumulator */
int tir_scope_is_wgmma(const char *scope);  /* a warpgroup fragment: wgmma.accumulator, wgmma.matrix_a */
/* A tensor-core operand buffer: wmma fragments, warp buffers and wgmma accumulators (only the tensor-core builtins
 * may touch it: it has no per-thread element addresses). */
int tir_scope_is_fragment(const char *scope);
/* Whether the iterations of a loop bound to `thread_tag` get separate copies of a buffer in
 * `scope`: none for global, blockIdx for shared, blockIdx and threadIdx.y/z for warp and
 * wgmma fragments (a warp is 32 lanes of threadIdx.x, a warpgroup 128), any thread tag for local
 * and wmma fragments. */
int tir_scope_splits(const char *scope, const char *thread_tag);
/* Threads that share one element of the buffer: 1 for local, 32 for warp and wmma (the whole
 * warp holds a fragment), 128 for wgmma.accumulator, 0 for shared/global (all threads of a block /
 * the grid). */
int tir_scope_lanes_per_element(const char *scope);

/* Whether the schedule primitives (set_scope, cache_read, cache_write) and the T script accept
 * `scope`: every rank above except "register" and unknown strings. */
int tir_scope_valid(const char *scope);
/* The scopes tir_scope_valid accepts, for messages: "global, shared, ..." (static string). */
const char *tir_scope_valid_list(void);

#endif
