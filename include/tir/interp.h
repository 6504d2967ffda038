/* interp.h -- the CPU interpreter of TensorIR: the oracle for every schedule primitive
 * and lowering pass.
 *
 * It runs a PrimFunc at any stage before codegen: block-level TIR (block bindings,
 * predicates, init of reductions, allocations, match_buffer views) and lowered TIR
 * (flattened buffers, Allocate, launch-thread attributes, which it runs as serial
 * loops).  Arithmetic follows the dtype exactly: integers wrap at their width, float32
 * and float16/bfloat16 results are rounded after every operation (float32 through
 * float64 is exact for + - * / sqrt).  Accesses are bounds-checked, block bindings are
 * checked against their domains, and buffers it allocates start as NaN / 0x5a bytes so
 * reads of unwritten memory show.  GPU code may differ in the last bits (it contracts
 * a*b+c into FMA); tests compare with a tolerance.
 */
#ifndef TIR_INTERP_H
#define TIR_INTERP_H

#include "tir/ir.h"
#include "tir/runtime.h"

typedef struct {
  tir_NDArray *array; /* for Buffer parameters: a CPU array of the buffer's dtype and shape */
  int64_t ival;       /* for integer scalar parameters */
  double fval;        /* for float scalar parameters */
} tir_InterpArg;

/* Runs f with one argument per parameter.  Returns 0, or -1 with the error set (shape/
 * dtype mismatch, out-of-bounds access, division by zero, binding outside its domain,
 * unknown builtin). */
int tir_interpret(const tir_PrimFunc *f, const tir_InterpArg *args, int nargs);

/* Options of tir_interpret_opts.  async_deferred: async copies (ptx_cp_async, stores
 * inside an async_scope) land only when a ptx_wait_group covers their commit group, and
 * touching an element with a copy in flight fails -- a check of pipelines' wait counts
 * (docs/BUILTINS.md).  Default (NULL or 0): copies land at once, commit/wait do nothing. */
typedef struct {
  int async_deferred;
} tir_InterpOptions;
int tir_interpret_opts(const tir_PrimFunc *f, const tir_InterpArg *args, int nargs, const tir_InterpOptions *opts);

/* Sets the most bytes the interpreter's own allocations (alloc_buffer, allocate) may hold at
 * once (default 4 GiB); a run that would exceed it fails with a RuntimeError naming the
 * buffer.  bytes <= 0 only queries.  Returns the previous limit. */
int64_t tir_interp_set_alloc_limit(int64_t bytes);

/* Checks that args match the function's parameters (dtype, ndim, shape; constant or
 * consistently bound symbolic dims).  `require_dev` (-1: any) checks the device type.
 * Used by the interpreter and before every GPU launch. */
int tir_check_args(const tir_PrimFunc *f, const tir_InterpArg *args, int nargs, int require_dev, const char *who);

/* Asks a running interpreter to stop (safe to call from a signal handler); the run then
 * fails with "interrupted".  tirlua's SIGINT handler calls it. */
void tir_request_interrupt(void);

#endif
