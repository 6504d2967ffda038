/* create_prim_func.c -- tensor expressions to a TensorIR PrimFunc (see te.h). */
#include <stdlib.h>
#include <string.h>

#include "tir/analysis.h"
#include "tir/error.h"
#include "tir/strbuf.h"
#include "tir/te.h"

static int collect_fn(const tir_Node *n, void *p) {
  tir_Array **out = p;
  if (n->kind == TIR_BufferLoad) {
    const tir_Buffer *b = ((const tir_BufferLoad *)n)->buffer;
    for (int i = 0; i < (*out)->size; i++)
      if ((*out)->items[i] == &b->hdr) return 0;
    *out = tir_array_push(*out, tir_retain(b));
  }
  return 0;
}

tir_Array *tir_te_input_buffers(const tir_ComputeOp *op) {
  tir_Array *out = tir_array_empty();
  tir_visit(op->body, collect_fn, &out);
  return out;
}

static int find_reduce(const tir_Node *n, void *p) {
  if (n->kind == TIR_Reduce) *(int *)p = 1;
  return 0;
}

static int index_of(const tir_Array *a, const tir_Node *x) {
  for (int i = 0; a && i < a->size; i++)
    if (a->items[i] == x) return i;
  return -1;
}

/* One block and its loop nest for op. */
static tir_Node *lower_op(const tir_ComputeOp *op, const char *block_name) {
  const tir_Buffer *out = op->output;
  const tir_Reduce *red = op->body->kind == TIR_Reduce ? (const tir_Reduce *)op->body : NULL;
  int ns = op->axis->size, nr = red ? red->axis->size : 0, n = ns + nr;
  tir_Var **old_vars = calloc((size_t)n + 1, sizeof *old_vars);
  tir_Node **block_vars = calloc((size_t)n + 1, sizeof *block_vars);
  tir_Var **loop_vars = calloc((size_t)n + 1, sizeof *loop_vars);
  tir_Array *iter_vars = tir_array_new(n);
  const tir_Node **extents = calloc((size_t)n + 1, sizeof *extents);
  for (int i = 0; i < n; i++) {
    const tir_IterVar *iv = (const tir_IterVar *)(i < ns ? op->axis->items[i] : red->axis->items[i - ns]);
    old_vars[i] = iv->var;
    char *vname = tir_strprintf("v_%s", iv->var->name);
    tir_Var *bv = tir_var_new(vname, iv->var->hdr.dtype);
    free(vname);
    block_vars[i] = &bv->hdr;
    loop_vars[i] = tir_var_new(iv->var->name, iv->var->hdr.dtype);
    extents[i] = iv->dom->extent;
    iter_vars->items[i] = &tir_iter_var(bv, (tir_Range *)R(iv->dom), i < ns ? TIR_ITER_DATA_PAR : TIR_ITER_COMM_REDUCE, "")->hdr;
    tir_retain(bv);
  }
  tir_Array *idx = tir_array_new(ns);
  for (int i = 0; i < ns; i++) idx->items[i] = tir_retain(block_vars[i]);
  tir_Node *body, *init = NULL;
  if (red) {
    tir_Node *src = tir_substitute(red->source, n, old_vars, block_vars);
    tir_Node *cond = tir_substitute(red->condition, n, old_vars, block_vars);
    tir_Node *cur = tir_buffer_load((tir_Buffer *)R(out), (tir_Array *)R(idx));
    tir_Node *upd = tir_reduce_combine(red->combiner, R(cur), src);
    if (!tir_is_one(cond)) upd = tir_select(cond, upd, R(cur));
    else tir_release(cond);
    tir_release(cur);
    body = tir_buffer_store((tir_Buffer *)R(out), upd, (tir_Array *)R(idx));
    init = tir_buffer_store((tir_Buffer *)R(out), tir_reduce_identity(red->combiner, op->body->dtype), (tir_Array *)R(idx));
  } else {
    tir_Node *val = tir_substitute(op->body, n, old_vars, block_vars);
    if (!tir_dtype_eq(val->dtype, out->hdr.dtype)) val = tir_cast(out->hdr.dtype, val);
    body = tir_buffer_store((tir_Buffer *)R(out), val, (tir_Array *)R(idx));
  }
  tir_release(idx);
  tir_Block *blk = tir_block_new(block_name, iter_vars, NULL, NULL, init, NULL, NULL, NULL, body);
  tir_Block *blk2 = tir_block_with_detected_access(blk);
  tir_release(blk);
  tir_Array *vals = tir_array_new(n);
  for (int i = 0; i < n; i++) {
    /* loops run from 0; an axis starting elsewhere (te.reduce_axis({2, 6})) is shifted */
    const tir_IterVar *iv = (const tir_IterVar *)blk2->iter_vars->items[i];
    vals->items[i] = tir_is_zero(iv->dom->min) ? tir_retain(loop_vars[i]) : tir_add(R(iv->dom->min), tir_retain(loop_vars[i]));
  }
  tir_Node *stmt = tir_block_realize(vals, NULL, blk2);
  for (int i = n - 1; i >= 0; i--)
    stmt = tir_for(loop_vars[i], tir_int_imm(extents[i]->dtype, 0), R((tir_Node *)extents[i]), TIR_FOR_SERIAL, NULL, NULL, stmt);
  for (int i = 0; i < n; i++) tir_release(block_vars[i]);
  free(old_vars);
  free(block_vars);
  free(loop_vars);
  free(extents);
  return stmt;
}

typedef struct {
  const tir_Array *params;
  const tir_Array *axes[2];
  const tir_Var *bad;
} FreeCtx;

static int known_var(const FreeCtx *c, const tir_Node *v) {
  for (int i = 0; i < c->params->size; i++) {
    const tir_Node *p = c->params->items[i];
    if (p == v) return 1;
    if (p->kind == TIR_Buffer) {
      const tir_Buffer *b = (const tir_Buffer *)p;
      for (int d = 0; d < b->shape->size; d++)
        if (b->shape->items[d] == v) return 1;
    }
  }
  for (int k = 0; k < 2; k++)
    for (int i = 0; c->axes[k] && i < c->axes[k]->size; i++)
      if (&((const tir_IterVar *)c->axes[k]->items[i])->var->hdr == v) return 1;
  return 0;
}

static int free_fn(const tir_Node *n, void *p) {
  FreeCtx *c = p;
  if (c->bad) return 1;
  if (n->kind == TIR_Var && !known_var(c, n)) c->bad = (const tir_Var *)n;
  if (n->kind == TIR_Reduce || n->kind == TIR_Buffer) return 1; /* reductions: checked apart; buffers: data, shapes */
  return 0;
}

tir_PrimFunc *tir_te_create_prim_func(const tir_Array *params, const tir_Array *ops, const char *name) {
  /* Check: every op input is a parameter or an earlier op's output; reductions only at the top. */
  for (int i = 0; i < params->size; i++) {
    if (params->items[i]->kind != TIR_Buffer && params->items[i]->kind != TIR_Var) {
      tir_error_set(TIR_ERR_TYPE, "create_prim_func", "argument %d is not a tensor", i + 1);
      return NULL;
    }
    for (int j = 0; j < i; j++)
      if (params->items[j] == params->items[i]) {
        tir_error_set(TIR_ERR_VALUE, "create_prim_func", "argument %d repeats argument %d", i + 1, j + 1);
        return NULL;
      }
  }
  if (ops->size == 0) {
    tir_error_set(TIR_ERR_VALUE, "create_prim_func", "none of the arguments is computed (te.compute); nothing to do");
    return NULL;
  }
  for (int i = 0; i < ops->size; i++) {
    const tir_ComputeOp *op = (const tir_ComputeOp *)ops->items[i];
    tir_Array *ins = tir_te_input_buffers(op);
    for (int j = 0; j < ins->size; j++) {
      const tir_Node *b = ins->items[j];
      int ok = index_of(params, b) >= 0;
      for (int k = 0; k < i && !ok; k++) ok = &((const tir_ComputeOp *)ops->items[k])->output->hdr == b;
      if (!ok) {
        tir_error_set(TIR_ERR_VALUE, "create_prim_func",
                      "compute '%s' reads tensor '%s', which is neither an argument nor computed by an earlier op "
                      "(pass every placeholder in the argument list)",
                      op->name, ((const tir_Buffer *)b)->name);
        tir_release(ins);
        return NULL;
      }
    }
    tir_release(ins);
    {
      /* every variable of the body is an axis of this op (or a reduce axis it reduces over) */
      const tir_Reduce *r = op->body->kind == TIR_Reduce ? (const tir_Reduce *)op->body : NULL;
      FreeCtx fc = {params, {op->axis, r ? r->axis : NULL}, NULL};
      tir_visit(r ? r->source : op->body, free_fn, &fc);
      if (r) tir_visit(r->condition, free_fn, &fc);
      if (fc.bad) {
        tir_error_set(TIR_ERR_VALUE, "create_prim_func",
                      "compute '%s' uses variable '%s', which is neither one of its axes nor reduced over "
                      "(a reduce axis must be listed in te.sum/te.max/te.min)",
                      op->name, fc.bad->name);
        return NULL;
      }
    }
    if (op->body->kind == TIR_Reduce) {
      const tir_Reduce *r = (const tir_Reduce *)op->body;
      tir_Node *id = tir_reduce_identity(r->combiner, r->hdr.dtype);
      if (!id) {
        tir_error_set(TIR_ERR_VALUE, "create_prim_func", "unknown reduction combiner '%s'", r->combiner);
        return NULL;
      }
      tir_release(id);
      int nested = 0;
      tir_visit(r->source, find_reduce, &nested);
      if (nested) {
        tir_error_set(TIR_ERR_VALUE, "create_prim_func",
                      "compute '%s' nests a reduction inside a reduction; split it into two computes", op->name);
        return NULL;
      }
    } else {
      int nested = 0;
      tir_visit(op->body, find_reduce, &nested);
      if (nested) {
        tir_error_set(TIR_ERR_VALUE, "create_prim_func",
                      "compute '%s': a reduction (te.sum/max/min) must be the whole body of the compute", op->name);
        return NULL;
      }
    }
  }
  tir_Array *stmts = tir_array_new(ops->size);
  tir_Array *allocs = tir_array_empty();
  for (int i = 0; i < ops->size; i++) {
    const tir_ComputeOp *op = (const tir_ComputeOp *)ops->items[i];
    /* block names are unique (get_block looks them up): repeated op names get _1, _2, ... */
    char *bname = tir_strdup(op->name);
    for (int k = 1;; k++) {
      int clash = 0;
      for (int j = 0; j < i && !clash; j++) clash = strcmp(((const tir_ComputeOp *)ops->items[j])->name, bname) == 0;
      for (int j = 0; j < i && !clash; j++) {
        const tir_Node *st = stmts->items[j];
        while (st->kind == TIR_For) st = ((const tir_For *)st)->body;
        clash = strcmp(((const tir_BlockRealize *)st)->block->name, bname) == 0;
      }
      if (!clash) break;
      free(bname);
      bname = tir_strprintf("%s_%d", op->name, k);
    }
    stmts->items[i] = lower_op(op, bname);
    free(bname);
    if (index_of(params, &op->output->hdr) < 0) allocs = tir_array_push(allocs, tir_retain(op->output));
  }
  tir_Node *body = tir_seq(stmts);
  tir_Block *root = tir_block_new("root", NULL, NULL, NULL, NULL, allocs, NULL, NULL, body);
  tir_Node *rr = tir_block_realize(NULL, NULL, root);
  return tir_prim_func(name ? name : "main", (tir_Array *)R(params), rr, NULL);
}
