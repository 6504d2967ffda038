/* schedule.h -- TensorIR schedules (TVM's tir.Schedule, src/tir/schedule/).
 *
 * A schedule holds the current PrimFunc; each primitive checks its preconditions, builds
 * new subtrees and replaces them in the function (nodes are immutable, unchanged
 * subtrees are shared).  Handles:
 *   - a loop is named by its loop variable (the For whose loop_var it is); a loop that a
 *     later step replaced (split, fuse, ...) no longer exists and lookups fail clearly;
 *   - a block is named by its uid, which survives rewrites of the block (a Block copy
 *     keeps its uid); blocks created by a primitive get fresh uids.
 * On failure a primitive returns NULL / -1 with the error set (kind ScheduleError) naming
 * the primitive, the rule broken, and the function printed with the loop/block marked;
 * the schedule is left unchanged.
 */
#ifndef TIR_SCHEDULE_H
#define TIR_SCHEDULE_H

#include "tir/ir.h"

typedef struct tir_Schedule tir_Schedule;

/* A new schedule of func (borrowed; retained). */
tir_Schedule *tir_schedule_new(const tir_PrimFunc *func);
tir_Schedule *tir_schedule_copy(const tir_Schedule *s);
void tir_schedule_free(tir_Schedule *s);
/* The current function (borrowed; valid until the next primitive). */
const tir_PrimFunc *tir_schedule_func(const tir_Schedule *s);
/* Replaces the whole function (used by replay and by tests). Borrowed, retained. */
void tir_schedule_set_func(tir_Schedule *s, const tir_PrimFunc *f);

/* ---- lookups (primitive/get_block.c) ---- */
/* Unique block named `name`: returns its uid, or -1 (error: none / several). */
int64_t tir_sched_get_block(tir_Schedule *s, const char *name);
/* The BlockRealize of block uid (borrowed), or NULL (error) when it is gone. */
const tir_BlockRealize *tir_sched_block_realize(tir_Schedule *s, int64_t uid, const char *primitive);
/* The For of loop var v (borrowed), or NULL (error) when it is gone. */
const tir_For *tir_sched_loop(tir_Schedule *s, const tir_Var *v, const char *primitive);
/* Loop vars between the block and its enclosing block, outer to inner (owned Array of Var). */
tir_Array *tir_sched_get_loops(tir_Schedule *s, int64_t block);
/* Child blocks (uids as IntImm int64) of a block or loop: blocks under it not nested in another block. */
tir_Array *tir_sched_get_child_blocks(tir_Schedule *s, int64_t block, const tir_Var *loop);

/* ---- loop transformations ---- */
/* factors: n entries, positive, at most one -1 (inferred as ceildiv).  Returns the new
 * loop vars outer to inner (owned Array of Var).  A product that does not divide the
 * extent adds a predicate (new index < extent) to the child blocks. */
tir_Array *tir_sched_split(tir_Schedule *s, const tir_Var *loop, const int64_t *factors, int n);
/* Fuses perfectly nested loops (outer to inner) into one; returns its var (owned). */
tir_Var *tir_sched_fuse(tir_Schedule *s, tir_Var *const *loops, int n);
/* Merges sibling loops (items of one sequence, in order) of one constant extent starting at 0
 * into one loop at the last one's place, bodies in order (TVM Merge); refuses loops bound or
 * annotated, of different extents, or whose blocks (or an earlier loop's and the statements
 * it moves past) conflict on a buffer.  Returns the merged loop's variable (the first's; owned). */
tir_Var *tir_sched_merge(tir_Schedule *s, tir_Var *const *loops, int n);
/* Reorders loops lying on one chain into the given order (outer to inner). */
int tir_sched_reorder(tir_Schedule *s, tir_Var *const *loops, int n);

/* ---- loop kinds ---- */
/* Thread tags: blockIdx.{x,y,z}, threadIdx.{x,y,z}, vthread(.x/.y/.z). */
int tir_sched_bind(tir_Schedule *s, const tir_Var *loop, const char *thread_tag);
int tir_sched_unroll(tir_Schedule *s, const tir_Var *loop);
int tir_sched_parallel(tir_Schedule *s, const tir_Var *loop);
int tir_sched_vectorize(tir_Schedule *s, const tir_Var *loop);

/* ---- compute location ---- */
/* Moves a producer block under `loop` (of its consumers), its loops regenerated to produce
 * what the consumers under the loop read (TVM compute_at.cc).  index: -1 = just before the
 * first consumer, -2 = just after the last producer, >= 0 a position among the loop body's
 * statements.  Checks: complete or reduction block, the only writer of what it writes, not
 * writing a parameter, a predicate no stronger than its domain, all consumers under the
 * loop, nothing between its old place and the loop changing what it reads.  0 or -1. */
int tir_sched_compute_at(tir_Schedule *s, int64_t block, const tir_Var *loop, int preserve_unit_loops, int index);
/* Moves a consumer block under `loop` (of its producers), consuming what the producers under
 * the loop write; index as compute_at.  All producers must be under the loop (prior_producers:
 * or run entirely before it, like inputs -- beyond TVM) and write everything it reads there;
 * a reduction may only be split into whole tiles per iteration. */
int tir_sched_reverse_compute_at(tir_Schedule *s, int64_t block, const tir_Var *loop, int preserve_unit_loops, int index,
                                 int prior_producers);
/* Inlines a producer's expression into its consumers and removes it. */
int tir_sched_compute_inline(tir_Schedule *s, int64_t block);
/* Folds a consumer into its single producer and removes it (prior_producers: into the last of
 * several producers, the others running before it -- beyond TVM). */
int tir_sched_reverse_compute_inline(tir_Schedule *s, int64_t block, int prior_producers);

/* ---- caches ---- */
/* Copies the block's read buffer `index` into a new buffer in `scope` through a new block,
 * placed as TVM's CacheLocDetector does (after the buffer's writer, before the first reader,
 * in the lowest loop holding both; at the start for an input) and copying what the writer
 * writes there; readers (all but the writer, or the given consumer uids) use the copy.
 * Returns the new block's uid or -1. */
int64_t tir_sched_cache_read(tir_Schedule *s, int64_t block, int index, const char *scope, const int64_t *consumers,
                             int n_consumers);
/* The block writes a new buffer in `scope`; a new block copies what it writes back to the
 * original buffer, after it and before its first consumer (the lowest loop holding both; the
 * end of the scope without consumers).  With consumer uids (TVM consumer_blocks), those
 * blocks read the cache instead, and the copy goes before the first other consumer (the end
 * of the scope when there is none).  Returns the copy block's uid or -1. */
int64_t tir_sched_cache_write(tir_Schedule *s, int64_t block, int index, const char *scope, const int64_t *consumers,
                              int n_consumers);
/* Changes the storage scope of a buffer the block writes (allocated by a block, not a
 * parameter or match_buffer view); views matched from it take the scope too. */
int tir_sched_set_scope(tir_Schedule *s, int64_t block, int index, const char *scope);
/* Pads the stride of `axis` of written buffer `index` to be == offset (mod factor). */
int tir_sched_storage_align(tir_Schedule *s, int64_t block, int index, int axis, int factor, int offset);
/* Gives written shared buffer `index` the XOR swizzle sw (packed, include/tir/swizzle.h; 0
 * removes it), applied to its physical layout when lowering (storage_swizzle.c). */
int tir_sched_storage_swizzle(tir_Schedule *s, int64_t block, int index, int64_t sw);
/* Rewrites the layout of the buffer that block `block` reads (is_write = 0) or writes at
 * `index`: vars (one Var per dimension) map to exprs (the new indices).  The map must be
 * one-to-one and non-negative over the old shape (checked exactly); new shape = ranges. */
int tir_sched_transform_layout(tir_Schedule *s, int64_t block, int is_write, int index, const tir_Array *vars,
                               const tir_Array *exprs);
/* Remaps the block's iteration space (TVM TransformBlockLayout): vars (one Var per iteration
 * variable, of their dtype) map to exprs, the new iteration variables v0, v1, ... (domain
 * [0, extent of output k)), bound to new serial loops ax0, ax1, ...; the old variables in the
 * block become their value under the map's inverse.  The map must be a bijective affine map
 * of the (constant) iteration domain with outputs from 0, each output using variables of one
 * kind (spatial or reduction).  The block must be the only block under perfectly nested,
 * serial, unannotated loops starting at 0 that bind its variables one to one (trivial
 * binding), without predicate.  0 or -1 (ScheduleError naming the rule). */
int tir_sched_transform_block_layout(tir_Schedule *s, int64_t block, const tir_Array *vars, const tir_Array *exprs);

/* ---- reduction ---- */
/* Splits a reduction block's init into "<name>_init" placed before `loop`; returns its uid. */
int64_t tir_sched_decompose_reduction(tir_Schedule *s, int64_t block, const tir_Var *loop);
/* rfactor (TVM reduction.cc): the reduction over `loop` is computed in two stages, a block
 * "<name>_rf" reducing everything but `loop` into a new buffer "<buf>_rf" whose extra
 * dimension (at factor_axis, negative counts from the end) is indexed by `loop`, and the
 * original block (same handle) reducing that buffer over `loop`.  Returns the rf block's uid. */
int64_t tir_sched_rfactor(tir_Schedule *s, const tir_Var *loop, int factor_axis);

/* ---- blockize and reindex ---- */
/* The subtree under `loop` (one block through perfectly nested loops) becomes a new block
 * "<name>_o" whose iteration variables are the outer part of the bindings' subspace
 * division; the block keeps the inner part (TVM Blockize).  Returns the new block's uid. */
int64_t tir_sched_blockize(tir_Schedule *s, const tir_Var *loop, int preserve_unit_iters);
/* The blocks (uids; consecutive statements of one sequence under their lowest common
 * ancestor, each a perfect loop nest around one of them) become the body of a new block
 * "outer_<names>_" whose iteration variables stand for the loops above that the blocks use
 * (TVM Blockize(blocks)).  Returns the new block's uid or -1. */
int64_t tir_sched_blockize_blocks(tir_Schedule *s, const int64_t *uids, int n, int preserve_unit_iters);
/* A new stage copying the block's read (is_write 0) or write buffer `index` to or from a
 * buffer "<buf>_reindex" indexed by the block's iteration variables; the block accesses the
 * new buffer at those variables (TVM ReIndex).  Returns the new stage's uid. */
int64_t tir_sched_reindex(tir_Schedule *s, int64_t block, int is_write, int index);
/* Pads the block's iteration domain: extent q becomes the next multiple of padding[q]
 * (n_padding = the number of iteration variables); buffers accessed at padded variables get
 * "<buf>_pad" copies, filled with zeros outside the original domain before the block (inputs)
 * and copied back after it (the output, block "<buf>_pad_unpad") (TVM PadEinsum).  Writes the
 * new blocks' uids (input copies in access order, then the output's) to out_uids (at most
 * max_out) and returns their number, or -1 with a ScheduleError (pad_einsum.c lists the rules). */
int tir_sched_pad_einsum(tir_Schedule *s, int64_t block, const int64_t *padding, int n_padding, int64_t *out_uids, int max_out);

/* ---- annotations and small structural steps ---- */
/* key/value on a block (block >= 0) or a loop (loop != NULL). value is borrowed. */
int tir_sched_annotate(tir_Schedule *s, int64_t block, const tir_Var *loop, const char *key, const tir_Node *value);
int tir_sched_unannotate(tir_Schedule *s, int64_t block, const tir_Var *loop, const char *key);
/* Wraps a block or loop in a loop of extent 1; returns its var (owned). */
tir_Var *tir_sched_add_unit_loop(tir_Schedule *s, int64_t block, const tir_Var *loop);
/* Blocks in the same scope that the block reads from / that read from it (uids as int64 IntImm). */
tir_Array *tir_sched_get_producers(tir_Schedule *s, int64_t block);
tir_Array *tir_sched_get_consumers(tir_Schedule *s, int64_t block);

/* ---- tensor intrinsics (tensor_intrin.c, tensorize.c) ----
 * register: desc and impl (retained) must have the same buffer parameters (dtype, scope,
 * constant shape).  Fails on a duplicate name unless override.  get: 1 when found (borrowed). */
int tir_tensor_intrin_register(const char *name, const tir_PrimFunc *desc, const tir_PrimFunc *impl, int override);
int tir_tensor_intrin_get(const char *name, const tir_PrimFunc **desc, const tir_PrimFunc **impl);
int tir_tensor_intrin_count(void);
/* desc with symbolic strides on its parameters, as the interpreter runs it (borrowed; NULL when unknown). */
const tir_PrimFunc *tir_tensor_intrin_desc_exec(const char *name);
const char *tir_tensor_intrin_name(int i);
void tir_tensor_intrin_clear(void);
/* Replaces the loop nest rooted at `loop` (or, with loop NULL, the innermost loops of
 * `block` as many as desc has) by intrinsic `name`: returns the uid of the new block. */
int64_t tir_sched_tensorize(tir_Schedule *s, const tir_Var *loop, int64_t block, const char *name);

#endif
