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

/* Returns a copy of the block (uid kept) with reads/writes recomputed. */
tir_Block *tir_block_with_detected_access(const tir_Block *block);

/* Hull of two ranges (borrowed); owned result; NULL when not provable. */
tir_Range *tir_range_union(tir_Analyzer *a, const tir_Range *x, const tir_Range *y);

#endif
