/* lower_opaque_block.c -- removes blocks (TVM ConvertBlocksToOpaque + LowerOpaqueBlock):
 * iteration variables are replaced by their bindings, a predicate becomes an if, each
 * buffer the block allocates becomes an Allocate around the block's body.  Runs after
 * lower_init_block and lower_match_buffer. */
#include <stdlib.h>
#include <string.h>

#include "pass_util.h"
#include "tir/scope.h"

static tir_Node *mut(const tir_Node *n, void *p) {
  if (tir_is_expr(n)) return tir_retain(n);
  if (n->kind != TIR_BlockRealize) return NULL;
  const tir_BlockRealize *br = (const tir_BlockRealize *)n;
  const tir_Block *b = br->block;
  if (b->init) {
    tir_error_set(TIR_ERR_LOWER, "lower_opaque_block", "block '%s' still has an init statement", b->name);
    return TIR_MUTATE_ERROR;
  }
  if (b->match_buffers->size) {
    tir_error_set(TIR_ERR_LOWER, "lower_opaque_block", "block '%s' still has match_buffer views", b->name);
    return TIR_MUTATE_ERROR;
  }
  tir_Node *body = tir_mutate(b->body, mut, p);
  if (!body) return TIR_MUTATE_ERROR;
  int n_iv = b->iter_vars->size;
  if (n_iv) {
    tir_Var **vars = calloc((size_t)n_iv, sizeof *vars);
    for (int i = 0; i < n_iv; i++) vars[i] = ((tir_IterVar *)b->iter_vars->items[i])->var;
    tir_Node *sub = tir_substitute(body, n_iv, vars, br->iter_values->items);
    free(vars);
    tir_release(body);
    body = sub;
  }
  if (!tir_is_one(br->predicate)) body = tir_if(R(br->predicate), body, NULL);
  /* Global-scope allocations go outermost: split_host_device hoists the leading global
   * allocations of the body to the host, and one nested in a shared/local allocation
   * would be left inside a kernel, where it cannot be allocated. */
  for (int global = 0; global < 2; global++)
    for (int i = b->alloc_buffers->size - 1; i >= 0; i--) {
      const tir_Buffer *buf = (const tir_Buffer *)b->alloc_buffers->items[i];
      if (tir_scope_is_global(buf->scope) != global) continue;
      body = tir_allocate((tir_Buffer *)R(buf), body);
    }
  return body;
}

tir_PrimFunc *tir_pass_lower_opaque_block(const tir_PrimFunc *f) { return pass_with_body(f, tir_mutate(f->body, mut, NULL)); }
