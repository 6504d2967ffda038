/* te.h -- tensor expressions to TensorIR (TVM's te.create_prim_func,
 * src/te/operation/create_primfunc.cc).
 *
 * A te tensor is a Buffer; a computed one also has a ComputeOp (output[axis] = body,
 * body possibly a Reduce over reduce axes).  create_prim_func makes one block per op,
 * named after the op, with spatial iteration variables v_<axis> bound to loops named
 * after the axes, reduce loops innermost, an init statement for reductions, and reads/
 * writes detected from the body.  Outputs of ops that are not parameters become
 * buffers allocated in the root block.
 */
#ifndef TIR_TE_H
#define TIR_TE_H

#include "tir/ir.h"

/* params: Buffers in call order; ops: ComputeOps in a topological order (producers
 * first).  Returns the PrimFunc (owned) or NULL with the error set (bad op bodies,
 * ops whose inputs are neither parameters nor produced by an earlier op). */
tir_PrimFunc *tir_te_create_prim_func(const tir_Array *params, const tir_Array *ops, const char *name);

/* The distinct buffers an op's body loads, in order of appearance (owned array). */
tir_Array *tir_te_input_buffers(const tir_ComputeOp *op);

#endif
