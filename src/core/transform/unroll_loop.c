/* unroll_loop.c -- expands loops marked unrolled whose constant extent is at most
 * max_extent (TVM src/tir/transforms/unroll_loop.cc, explicit unroll).  Larger unrolled
 * loops keep their mark and codegen asks nvcc to unroll them (#pragma unroll). */
#include "pass_util.h"
#include "tir/arith.h"

typedef struct {
  int max_extent;
} Ctx;

static tir_Node *mut(const tir_Node *n, void *p) {
  Ctx *c = p;
  if (tir_is_expr(n)) return tir_retain(n);
  if (n->kind != TIR_For) return NULL;
  const tir_For *f = (const tir_For *)n;
  tir_Node *body = tir_mutate(f->body, mut, p);
  if (!body) return TIR_MUTATE_ERROR;
  int64_t ext;
  if (f->kind == TIR_FOR_UNROLLED && tir_is_const_int(f->extent, &ext) && ext <= c->max_extent) {
    tir_Array *seq = tir_array_new((int)(ext > 0 ? ext : 0));
    for (int64_t i = 0; i < ext; i++) {
      tir_Node *val = tir_add(R(f->min), tir_int_imm(f->loop_var->hdr.dtype, i));
      tir_Var *lv = f->loop_var;
      tir_Node *copy = tir_substitute(body, 1, &lv, &val);
      seq->items[i] = tir_simplify_stmt(NULL, copy); /* k_0 * 4 + 0 -> k_0 * 4 */
      tir_release(copy);
      tir_release(val);
    }
    tir_release(body);
    return tir_seq(seq);
  }
  if (body == f->body) {
    tir_release(body);
    return tir_retain(n);
  }
  tir_For *nf = (tir_For *)tir_node_copy(n);
  tir_release(nf->body);
  nf->body = body;
  return &nf->hdr;
}

tir_PrimFunc *tir_pass_unroll_loop(const tir_PrimFunc *f, int max_extent) {
  Ctx c = {max_extent};
  return pass_with_body(f, tir_mutate(f->body, mut, &c));
}
