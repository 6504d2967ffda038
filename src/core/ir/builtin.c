/* builtin.c -- the builtin registry (include/tir/builtins.def, docs/BUILTINS.md): what each
 * builtin call does to memory and which attributes it has, for the passes that reason about
 * calls (thread_sync, split_host_device) without knowing each builtin. */
#include <string.h>

#include "tir/ir.h"

static const tir_BuiltinInfo table[] = {
#define TIR_BUILTIN(id, op, lo, hi, writes, flags, doc) {TIR_BI_##id, op, lo, hi, writes, flags, doc},
#include "tir/builtins.def"
#undef TIR_BUILTIN
};

const tir_BuiltinInfo *tir_builtin_table(void) { return table; }

const tir_BuiltinInfo *tir_builtin_info(const char *op) {
  if (!op) return NULL;
  for (int k = 0; k < TIR_BI_COUNT; k++)
    if (strcmp(op, table[k].op) == 0) return &table[k];
  return NULL;
}

int tir_builtin_has(const char *op, unsigned flags) {
  const tir_BuiltinInfo *b = tir_builtin_info(op);
  return b && (b->flags & flags) == flags;
}

int tir_builtin_is_float_math(const char *op) { return tir_builtin_has(op, TIR_BUILTIN_FLOAT_MATH); }

const tir_BufferLoad *tir_address_of_load(const tir_Node *e) {
  if (!e || e->kind != TIR_Call) return NULL;
  const tir_Call *c = (const tir_Call *)e;
  if (strcmp(c->op, "address_of") != 0 || c->args->size != 1 || c->args->items[0]->kind != TIR_BufferLoad) return NULL;
  return (const tir_BufferLoad *)c->args->items[0];
}

tir_Node *tir_address_of(tir_Node *load) { return tir_call(TIR_HANDLE, "address_of", tir_array_of(1, load)); }

int tir_builtin_writes_arg(const char *op, int i) {
  const tir_BuiltinInfo *b = tir_builtin_info(op);
  return b && i >= 0 && i < 32 && ((b->writes >> i) & 1u);
}
