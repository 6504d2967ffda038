/* analysis.h -- read-only analyses of TensorIR shared by te, schedule and passes. */
#ifndef TIR_ANALYSIS_H
#define TIR_ANALYSIS_H

#include "tir/arith.h"
#include "tir/ir.h"

/* The regions a block reads and writes, in terms of its iteration variables (TVM's
 * GetBlockAccessRegion): loads/stores in its body and init, and the declared regions of
 * nested blocks, relaxed over the loops inside the block.  Buffers the block allocates
 * are left out.  Regions of one buffer are merged into their hull; a dimension whose
 * hull is not provable becomes the buffer's whole extent.  As in TVM, a block with an
 * init does not list the buffers it writes among its reads (C = C + A*B with an init reads
 * A, B: the init overwrites C first); a block without an init that reads what it writes
 * (C = C + ..., an update block) lists it in both.  Owned arrays of BufferRegion. */
int tir_block_access_regions(const tir_Block *block, tir_Array **reads, tir_Array **writes);

/* The reads of a block that loses its init (decompose_reduction's update block, lowered
 * init): the written regions of buffers not already read, in front of the reads (TVM
 * DecomposeReductionBlockReplacer).  Borrowed arguments, owned Array of BufferRegion. */
tir_Array *tir_reads_with_writes(const tir_Array *reads, const tir_Array *writes);

/* Checks a block's declared regions against its body (the T script's T.reads/T.writes):
 * every load (check_reads) / store (check_writes) of the body and init, relaxed over the
 * loops inside the block, and every region a nested block declares must lie in a declared
 * region of the same buffer, provably for all values of the iteration variables; a
 * match_buffer source must lie in one of the two lists.  Over-approximation is legal (as
 * in TVM).  Reads of what a block with an init writes are not reads (TVM's rule).  An
 * opaque block (no iteration variables) that declares no region at all is not checked
 * (lowering passes build such blocks), and one may read what its declared writes cover
 * (an in-place update, as TVM scripts write them).
 * Returns 0, or -1 with a ValueError "in T.block" naming the block and the access, and
 * `ir` (a statement holding the block, e.g. its realize; NULL: the block) with the access
 * marked.  outer_vars / outer_doms (NULL, or Vars and their Ranges, of one size): the
 * loops around the block, whose variables an opaque block's regions may use (the T script
 * passes the enclosing T.serial/T.unroll loops, so `i // 8` with 0 <= i < 8 is known to be 0). */
int tir_block_check_access(const tir_Block *block, int check_reads, int check_writes, const tir_Node *ir,
                           const tir_Array *outer_vars, const tir_Array *outer_doms);

/* Returns a copy of the block (uid kept) with reads/writes recomputed. */
tir_Block *tir_block_with_detected_access(const tir_Block *block);

/* Hull of two ranges (borrowed); owned result; NULL when not provable. */
tir_Range *tir_range_union(tir_Analyzer *a, const tir_Range *x, const tir_Range *y);

#endif
