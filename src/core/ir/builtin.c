/* builtin.c -- what the builtin calls of docs/BUILTINS.md do to memory, for the passes that
 * reason about accesses (thread_sync) without knowing each builtin. */
#include <string.h>

#include "tir/ir.h"

int tir_builtin_is_float_math(const char *op) {
  static const char *names[] = {"exp",  "log",   "sqrt", "tanh", "fabs",  "floor", "ceil", "round", "exp2", "log2", "erf",
                                "sin",  "cos",   "trunc", "log1p", "rsqrt", "pow",  "fmod", "fmin",  "fmax", "sigmoid",
                                "exp10"};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
    if (strcmp(op, names[k]) == 0) return 1;
  return 0;
}

const tir_BufferLoad *tir_address_of_load(const tir_Node *e) {
  if (!e || e->kind != TIR_Call) return NULL;
  const tir_Call *c = (const tir_Call *)e;
  if (strcmp(c->op, "address_of") != 0 || c->args->size != 1 || c->args->items[0]->kind != TIR_BufferLoad) return NULL;
  return (const tir_BufferLoad *)c->args->items[0];
}

tir_Node *tir_address_of(tir_Node *load) { return tir_call(TIR_HANDLE, "address_of", tir_array_of(1, load)); }

int tir_builtin_writes_arg(const char *op, int i) {
  /* an extern device function may write through any pointer it is given (call_pure_extern
   * promises not to) */
  if (strcmp(op, "call_extern") == 0 && i >= 1) return 1;
  static const struct {
    const char *op;
    int arg;
  } writes[] = {{"ptx_cp_async", 0}, {"wmma_store", 4}, {"wmma_load", 0}, {"wmma_fill", 0}, {"wmma_mma", 0},
                {"mma_ldmatrix", 2}, {"mma_sync", 0}, {"mma_fill", 0}, {"mma_store", 0}};
  for (size_t k = 0; k < sizeof writes / sizeof writes[0]; k++)
    if (strcmp(op, writes[k].op) == 0 && writes[k].arg == i) return 1;
  return 0;
}
