/* extern.h -- external device functions called from TIR (TVM's tir.call_extern and
 * tir.call_pure_extern): Call(dtype, "call_extern" | "call_pure_extern", [name, args...]).
 *
 * The CUDA codegen passes `name(args...)` through to the CUDA C unchanged (a CUDA built-in
 * such as __dp4a, or a function whose source was registered here, emitted once per module
 * before the kernels).  The interpreter and the simulator cannot run device code: they refuse
 * such a call unless a CPU model is registered for the name, which they then call once per
 * thread (the simulator: per active lane) with the evaluated scalar arguments.
 * call_pure_extern promises no side effects (its pointer arguments are only read);
 * call_extern's address_of arguments count as written by passes that track memory.
 * The registry is global, replaced per name, and lives until tir_extern_clear. */
#ifndef TIR_EXTERN_H
#define TIR_EXTERN_H

#include <stddef.h>

#include "tir/ir.h"

/* One scalar argument or result: dtype (lanes 1) and its value (integers and bools in i,
 * floating point types in f). */
typedef struct {
  tir_DType dtype;
  int64_t i;
  double f;
} tir_ExternValue;

/* A CPU model: fills *ret (ret->dtype is preset to the call's dtype; void calls ignore it) and
 * returns 0, or writes a message to err (errlen bytes) and returns -1. */
typedef int (*tir_ExternModelFn)(void *ctx, const char *name, int nargs, const tir_ExternValue *args, tir_ExternValue *ret,
                                 char *err, size_t errlen);

/* Registers (or replaces) `name`: cuda_source (may be NULL: a CUDA built-in) is emitted before
 * the kernels of every module that calls it; model (may be NULL) is the CPU model, ctx its
 * data, freed with ctx_free (may be NULL) when replaced or cleared.  Errors (TIR_ERR_VALUE):
 * a name that is not a C identifier ([A-Za-z_][A-Za-z0-9_]*, '::' allowed between parts). */
int tir_extern_register(const char *name, const char *cuda_source, tir_ExternModelFn model, void *ctx, void (*ctx_free)(void *));
/* Looks name up: 1 and the registered source/model/ctx (any out pointer may be NULL), or 0. */
int tir_extern_lookup(const char *name, const char **cuda_source, tir_ExternModelFn *model, void **ctx);
/* Forgets every registration (frees the contexts). */
void tir_extern_clear(void);
/* True for a valid extern function name (see tir_extern_register). */
int tir_extern_name_valid(const char *name);
/* The name of a call_extern / call_pure_extern call (its first argument), or NULL for any
 * other node or a malformed call. */
const char *tir_extern_call_name(const tir_Node *n);
/* The most arguments a CPU model takes. */
#define TIR_EXTERN_MAX_ARGS 16
/* Before calling a CPU model for c: checks the name, that a model is registered, that every
 * argument is a scalar number (lanes 1, no handle/string); returns the number of model
 * arguments (c's arguments after the name), or -1 with the reason in err. */
int tir_extern_prepare(const tir_Call *c, tir_ExternModelFn *model, void **ctx, char *err, size_t errlen);

#endif
