/* unroll_loop.c -- expands loops marked unrolled whose constant extent is at most
 * max_extent (TVM src/tir/transforms/unroll_loop.cc, explicit unroll).  Larger unrolled
 * loops keep their mark and codegen asks nvcc to unroll them (#pragma unroll). */
#include "pass_util.h"
#include "tir/arith.h"

typedef struct {
  int max_extent;
} Ctx;

/* Every copy of an unrolled body gets its own loop variables, let variables and allocations:
 * a definition appearing twice would make the function print as a script that loads back
 * different (and confuses passes that key on identity). */
static tir_Node *fresh_fn(const tir_Node *n, void *p) {
  (void)p;
  if (tir_is_expr(n)) return tir_retain(n);
  if (n->kind == TIR_For) {
    const tir_For *f = (const tir_For *)n;
    tir_Var *nv = tir_var_new(f->loop_var->name, f->loop_var->hdr.dtype);
    tir_Var *ov = f->loop_var;
    tir_Node *b0 = tir_substitute(f->body, 1, &ov, (tir_Node *const *)&nv);
    tir_Node *b1 = tir_mutate(b0, fresh_fn, p);
    tir_release(b0);
    tir_For *nf = (tir_For *)tir_node_copy(n);
    tir_release(nf->loop_var);
    nf->loop_var = nv;
    tir_release(nf->body);
    nf->body = b1;
    return &nf->hdr;
  }
  if (n->kind == TIR_LetStmt) {
    const tir_LetStmt *l = (const tir_LetStmt *)n;
    tir_Var *nv = tir_var_new(l->var->name, l->var->hdr.dtype);
    tir_Var *ov = l->var;
    tir_Node *b0 = tir_substitute(l->body, 1, &ov, (tir_Node *const *)&nv);
    tir_Node *b1 = tir_mutate(b0, fresh_fn, p);
    tir_release(b0);
    return tir_let_stmt(nv, R(l->value), b1);
  }
  if (n->kind == TIR_Allocate) {
    const tir_Allocate *a = (const tir_Allocate *)n;
    tir_Buffer *ob = a->buffer;
    tir_Buffer *nb = tir_buffer_new(ob->name, ob->hdr.dtype, (tir_Array *)R(&ob->shape->hdr), (tir_Array *)R(&ob->strides->hdr),
                                    R(ob->elem_offset), ob->scope);
    nb->align = ob->align;
    nb->offset_factor = ob->offset_factor;
    tir_Node *b0 = tir_substitute_buffers(a->body, 1, &ob, &nb);
    /* views of the buffer (flattened accesses go through the data variable) */
    tir_Var *od = ob->data;
    tir_Node *b0b = tir_substitute(b0, 1, &od, (tir_Node *const *)&nb->data);
    tir_release(b0);
    tir_Node *b1 = tir_mutate(b0b, fresh_fn, p);
    tir_release(b0b);
    return tir_allocate(nb, b1);
  }
  return NULL;
}

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
      tir_Node *own = i == 0 ? tir_retain(copy) : tir_mutate(copy, fresh_fn, NULL);
      seq->items[i] = tir_simplify_stmt(NULL, own); /* k_0 * 4 + 0 -> k_0 * 4 */
      tir_release(own);
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
