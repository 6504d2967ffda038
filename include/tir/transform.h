/* transform.h -- the lowering pipeline: block-level TensorIR to flat, launchable code.
 *
 * Each pass takes a PrimFunc (borrowed) and returns a new one (owned), or NULL with the
 * error set (kind LoweringError, primitive = the pass name).  One pass per file in
 * src/core/transform/, named after the TVM pass it mirrors.  tir_lower runs them in
 * order (pipeline.c) and can record the IR after every pass.
 */
#ifndef TIR_TRANSFORM_H
#define TIR_TRANSFORM_H

#include "tir/ir.h"

/* Reduction blocks whose reduction loops are bound to threadIdx become a per-thread partial
 * plus an allreduce across the threads: warp shuffles (ptx_shfl_sync_*) within a warp, shared
 * memory across warps (TVM LowerCrossThreadReduction + LowerThreadAllreduce).  Errors name
 * the block when its loops or body do not have the form a cross-thread reduction needs. */
tir_PrimFunc *tir_pass_lower_cross_thread_reduction(const tir_PrimFunc *f);
/* Reduction init -> "if all reduce iters are at their start: init" (TVM LowerInitBlock). */
tir_PrimFunc *tir_pass_lower_init_block(const tir_PrimFunc *f);
/* Code after a loop bound to blockIdx, inside other blockIdx loops, runs once after all of that
 * loop's CTAs (the in-launch reduction of split-K): the loop takes it in, guarded by
 * tir_grid_arrive_last on a "global.zeroed" counter per enclosing CTA (lower_grid_tail.c).
 * Block-level IR; LoweringError when the enclosing blockIdx extents are not constant. */
tir_PrimFunc *tir_pass_lower_grid_tail(const tir_PrimFunc *f);
/* A persistent grid re-gridded to the CTA count of its tile loop's "persistent_tail" annotation:
 * G2 CTAs of ceil(T / G2) rounds, the last round's spare CTAs repeating tile T - 1
 * (lower_persistent_tail.c).  Block-level IR, before inject_tma_pipeline. */
tir_PrimFunc *tir_pass_lower_persistent_tail(const tir_PrimFunc *f);
/* Moves block-allocated buffers to the lowest common ancestor of their uses
 * (TVM PlanAndUpdateBufferAllocationLocation). */
tir_PrimFunc *tir_pass_plan_buffer_allocation(const tir_PrimFunc *f);
/* Fails (LoweringError) when a local buffer is allocated outside a thread-bound loop
 * that accesses it, or a shared one outside a blockIdx loop: those copies are private to
 * a thread / thread block on the GPU.  Returns f (retained) otherwise. */
tir_PrimFunc *tir_pass_verify_memory_scope(const tir_PrimFunc *f);
/* Shrinks block-allocated buffers to the region used under their allocation point and
 * applies storage_align annotations (TVM CompactBufferAllocation). */
tir_PrimFunc *tir_pass_compact_buffer_allocation(const tir_PrimFunc *f);
/* Replaces match_buffer views by accesses to their source (TVM LowerMatchBuffer). */
tir_PrimFunc *tir_pass_lower_match_buffer(const tir_PrimFunc *f);
/* Removes blocks: bindings substituted, predicates become ifs, allocations become
 * Allocate statements (TVM ConvertBlocksToOpaque + LowerOpaqueBlock). */
tir_PrimFunc *tir_pass_lower_opaque_block(const tir_PrimFunc *f);
/* Multi-dimensional accesses to flat offsets (TVM FlattenBuffer). */
tir_PrimFunc *tir_pass_flatten_buffer(const tir_PrimFunc *f);
/* Simplifies every expression with the facts of each scope (TVM Simplify). */
tir_PrimFunc *tir_pass_simplify(const tir_PrimFunc *f);
/* Thread-bound loops -> launch_thread attributes, one variable per tag (TVM
 * LowerThreadBinding / UnifyThreadBinding).  Loops with a smaller extent than the launch
 * dimension of their tag get a guard. */
tir_PrimFunc *tir_pass_lower_thread_binding(const tir_PrimFunc *f);
/* Constant-extent loops marked unrolled with at most `max_extent` iterations are
 * expanded (the rest keep the mark: codegen emits #pragma unroll) (TVM UnrollLoop). */
tir_PrimFunc *tir_pass_unroll_loop(const tir_PrimFunc *f, int max_extent);
/* Vectorized loops -> Ramp/Broadcast vector expressions when every access allows it,
 * serial loops otherwise (TVM VectorizeLoop). */
tir_PrimFunc *tir_pass_vectorize_loop(const tir_PrimFunc *f);
/* Inserts __syncthreads where shared memory written by one thread may be read by
 * another (TVM ThreadSync("shared")). */
tir_PrimFunc *tir_pass_thread_sync(const tir_PrimFunc *f);
/* Loops annotated software_pipeline_stage (/ _order / _async_stages) become prologue,
 * steady state and epilogue, their buffers multi-versioned; async stages get async_scope,
 * ptx_commit_group and ptx_wait_group (TVM InjectSoftwarePipeline). Block-level IR. */
tir_PrimFunc *tir_pass_inject_software_pipeline(const tir_PrimFunc *f);
/* Loops annotated tma_pipeline_stages = N whose body starts with copies marked tma_copy become
 * N-stage pipelines of TMA copies (one per tile, issued by thread 0) ordered by full/empty
 * mbarriers, with no __syncthreads in the loop (inject_tma_pipeline.c has the form and the
 * code).  Block-level IR. */
tir_PrimFunc *tir_pass_inject_tma_pipeline(const tir_PrimFunc *f);
/* A shared -> global tile copy marked tma_store becomes one TMA store by one thread (proxy fence and
 * barrier before it, bulk wait and barrier after; inject_tma_store.c).  Block-level IR. */
tir_PrimFunc *tir_pass_inject_tma_store(const tir_PrimFunc *f);
/* The threadIdx.x extent inject_tma_pipeline gives its leader loop in region when no wider loop
 * is bound: 128 (a warpgroup) when region calls warpgroup-wide builtins (wgmma), else 32. */
int tir_tma_leader_lanes(const tir_Node *region);
/* A TMA pipeline annotated warp_specialize = {1, producer regs, consumer regs} (split by
 * inject_tma_pipeline) runs its copies on one thread of an added producer warpgroup and the
 * rest of the warpgroup loop on the consumers, with setmaxnreg and a named barrier among the
 * consumers (inject_warp_specialization.c has the form).  Block-level IR, after
 * inject_tma_pipeline. */
tir_PrimFunc *tir_pass_inject_warp_specialization(const tir_PrimFunc *f);
/* Inside async_scope: shared <- global copies of 4, 8 or 16 bytes become ptx_cp_async
 * (TVM InjectPTXAsyncCopy). Flat IR (after flatten_buffer / vectorize_loop). */
tir_PrimFunc *tir_pass_inject_ptx_async_copy(const tir_PrimFunc *f);
/* wgmma_operand(address_of(S[i]), ld, major) -> wgmma_desc(address_of(S[i]), LBO, SBO, swizzle) from
 * S's swizzled shared scope (PTX ISA 9.7.15.5.1.2); refuses layouts without a canonical form. */
tir_PrimFunc *tir_pass_lower_wgmma_descriptor(const tir_PrimFunc *f);
/* Applies the swizzle of swizzled shared buffers (storage_swizzle) to the flat indices of the
 * lowered code; refuses accesses the swizzle would split (lower_buffer_swizzle.c). */
tir_PrimFunc *tir_pass_lower_buffer_swizzle(const tir_PrimFunc *f);

/* f with vars[i] fixed to values[i] (integer constants; borrowed arrays of n), named `name`
 * (NULL: f's): TVM's PrimFunc.specialize (src/tir/ir/specialize.cc).  Each var must be an
 * integer scalar parameter (it leaves the parameters) or a variable of a parameter buffer's
 * shape, strides or offset (a dimension must get a value >= 1); every buffer whose layout names
 * one is rebuilt over the same data, the body rewritten and simplified (loops over M become
 * loops over the value); n = 0 gives a renamed copy.  NULL with a TypeError / ValueError naming the function and variable. */
tir_PrimFunc *tir_specialize(const tir_PrimFunc *f, int n, tir_Var *const *vars, tir_Node *const *values, const char *name);

/* One device kernel split from the function (TVM SplitHostDevice). */
typedef struct {
  char *name;
  tir_PrimFunc *func;   /* the kernel: params are data vars (handles) and scalar vars */
  tir_Node *grid[3];    /* launch dimensions: expressions over the host function's scalars */
  tir_Node *block[3];
  int64_t dyn_smem_bytes;
  const char *warp_op;  /* a warp-wide builtin the kernel calls (borrowed from func), or NULL */
  tir_Array *tma_descs; /* the distinct tma_descriptor calls of the kernel (include/tir/tma.h): each is a
                           `const __grid_constant__ CUtensorMap` parameter after func's params, encoded at launch */
  tir_Array *tma_smem;  /* data vars of the shared buffers TMA copies write or read: aligned to TIR_TMA_SMEM_ALIGN */
  int cluster[3];       /* thread-block cluster dims (AttrStmt "cluster_dims"; 0: no cluster launch) */
} tir_Kernel;

typedef struct {
  tir_PrimFunc *host;       /* the function the user calls (parameters, checks) */
  tir_Kernel *kernels;      /* launched in order */
  int n_kernels;
  tir_Array *host_allocs;   /* global-scope temporaries the host must allocate (Buffers) */
} tir_DeviceSplit;

int tir_split_host_device(const tir_PrimFunc *lowered, const tir_PrimFunc *host, tir_DeviceSplit *out);
/* Bytes a shared buffer takes in a kernel's dynamic shared memory (its size rounded up to 16,
 * so every slice stays 16-byte aligned for vector and cp.async accesses); -1 when symbolic. */
int64_t tir_shared_slice_bytes(const tir_Buffer *b);
/* The alignment (bytes) of shared buffer b in kernel k (k may be NULL): 128 (whole lines, so a
 * 32-byte global sector copied by cp.async lands in one 32-byte shared sector), a storage_swizzle'd
 * buffer's repeat (include/tir/swizzle.h) when larger, so that the swizzle of the offset is the
 * swizzle of the address (the PTX modes are defined on addresses), and TIR_TMA_SMEM_ALIGN
 * (include/tir/tma.h) for a TMA copy's shared operand. */
int64_t tir_shared_slice_align(const tir_Kernel *k, const tir_Buffer *b);
void tir_device_split_free(tir_DeviceSplit *s);

/* Moves each shared Allocate down to the statements using its buffer, so that buffers used
 * one after the other become sibling allocations (narrow_shared_allocations.c). */
tir_PrimFunc *tir_pass_narrow_shared_allocations(const tir_PrimFunc *f);

/* floormod(k + c, S) of a serial in-kernel loop k (c, S constants, S > 1 not a power of two:
 * a pipeline's stage indices) as int32 registers set before the loop and advanced with a wrap
 * at the end of each iteration (CUTLASS's stage indices; strength_reduce_modulo.c). */
tir_PrimFunc *tir_pass_strength_reduce_modulo(const tir_PrimFunc *f);

/* The dynamic shared memory plan of a kernel region (shared_memory_plan.c): per shared
 * Allocate its byte offset (stack placement: siblings share bytes) and whether a barrier must
 * precede its body (its bytes were an earlier buffer's); under loops and conditions nothing
 * is reused.  bytes: the peak (what the launch asks for); sum: without reuse. */
typedef struct {
  const tir_Allocate *alloc; /* borrowed from the region */
  int64_t offset;
  int barrier;
} tir_SharedSlot;
typedef struct {
  tir_SharedSlot *slots;
  int n;
  int64_t bytes, sum;
  int any_dyn, unknown; /* a "shared.dyn" buffer; a buffer of symbolic size */
} tir_SharedPlan;
void tir_shared_plan(const tir_Node *region, tir_SharedPlan *out);
const tir_SharedSlot *tir_shared_plan_find(const tir_SharedPlan *p, const tir_Node *alloc);
void tir_shared_plan_free(tir_SharedPlan *p);
/* The data vars of the shared buffers TMA copies (ptx_tma_load / ptx_tma_store) write or read
 * in region: aligned to TIR_TMA_SMEM_ALIGN by the plan and the codegen.  Owned. */
tir_Array *tir_tma_shared_operands(const tir_Node *region);

/* ---- pipeline (pipeline.c) ---- */
typedef struct {
  int dump;                 /* record the IR after each pass */
  char **pass_names;        /* filled when dump: n_dumps entries, malloc'd */
  char **pass_ir;
  int n_dumps;
  int unroll_max_extent;    /* default 16 */
} tir_LowerOptions;

/* Runs the pipeline up to (not including) host/device split.  Owned result. */
tir_PrimFunc *tir_lower(const tir_PrimFunc *f, tir_LowerOptions *opts);
void tir_lower_options_free(tir_LowerOptions *opts);

#endif
