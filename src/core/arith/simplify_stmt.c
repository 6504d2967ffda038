/* simplify_stmt.c -- simplifies every expression of a statement tree, with the facts
 * each scope gives: loop variables lie in their ranges, block iteration variables in
 * their domains, let-bound variables equal their values, and the condition of an
 * if holds in its then-branch.  Constant conditions pick their branch; loops of
 * extent 1 keep their variable bound to the minimum (TVM's Simplify pass). */
#include <stdlib.h>
#include <string.h>

#include "arith_internal.h"

typedef struct {
  tir_Analyzer *a;
} Ctx;

static tir_Node *mut(const tir_Node *n, void *p);

static tir_Node *simp_child(Ctx *c, const tir_Node *n) { return tir_mutate(n, mut, c); }

static tir_Node *mut(const tir_Node *n, void *p) {
  Ctx *c = p;
  if (tir_is_expr(n)) return tir_simplify(c->a, n);
  switch (n->kind) {
    case TIR_For: {
      const tir_For *f = (const tir_For *)n;
      tir_Node *min = tir_simplify(c->a, f->min), *ext = tir_simplify(c->a, f->extent);
      int mark = tir_analyzer_mark(c->a);
      tir_analyzer_bind_range(c->a, f->loop_var, min, ext);
      tir_Node *body = simp_child(c, f->body);
      tir_analyzer_reset(c->a, mark);
      if (!body) {
        tir_release(min);
        tir_release(ext);
        return TIR_MUTATE_ERROR;
      }
      /* a serial loop of one iteration is its body with the variable at the minimum */
      if (tir_is_one(ext) && (f->kind == TIR_FOR_SERIAL || f->kind == TIR_FOR_UNROLLED) && f->annotations->size == 0) {
        tir_Var *lv = f->loop_var;
        tir_Node *sub = tir_substitute(body, 1, &lv, &min);
        tir_release(body);
        tir_release(ext);
        tir_release(min);
        tir_Node *r = tir_simplify_stmt(c->a, sub);
        tir_release(sub);
        return r ? r : TIR_MUTATE_ERROR;
      }
      if (min == f->min && ext == f->extent && body == f->body) {
        tir_release(min);
        tir_release(ext);
        tir_release(body);
        return tir_retain(n);
      }
      tir_For *nf = (tir_For *)tir_node_copy(n);
      tir_release(nf->min);
      tir_release(nf->extent);
      tir_release(nf->body);
      nf->min = min;
      nf->extent = ext;
      nf->body = body;
      return &nf->hdr;
    }
    case TIR_BlockRealize: {
      const tir_BlockRealize *br = (const tir_BlockRealize *)n;
      tir_Node *vals = simp_child(c, &br->iter_values->hdr);
      tir_Node *pred = tir_simplify(c->a, br->predicate);
      const tir_Block *b = br->block;
      int mark = tir_analyzer_mark(c->a);
      for (int i = 0; i < b->iter_vars->size; i++) {
        const tir_IterVar *iv = (const tir_IterVar *)b->iter_vars->items[i];
        tir_analyzer_bind_range(c->a, iv->var, iv->dom->min, iv->dom->extent);
      }
      tir_Node *nb = tir_mutate_children(&b->hdr, mut, c);
      tir_analyzer_reset(c->a, mark);
      if (!nb) {
        tir_release(vals);
        tir_release(pred);
        return TIR_MUTATE_ERROR;
      }
      if (vals == &br->iter_values->hdr && pred == br->predicate && nb == &b->hdr) {
        tir_release(vals);
        tir_release(pred);
        tir_release(nb);
        return tir_retain(n);
      }
      tir_BlockRealize *r = (tir_BlockRealize *)tir_node_copy(n);
      tir_release(r->iter_values);
      tir_release(r->predicate);
      tir_release(r->block);
      r->iter_values = (tir_Array *)vals;
      r->predicate = pred;
      r->block = (tir_Block *)nb;
      return &r->hdr;
    }
    case TIR_LetStmt: {
      const tir_LetStmt *l = (const tir_LetStmt *)n;
      tir_Node *v = tir_simplify(c->a, l->value);
      int mark = tir_analyzer_mark(c->a);
      tir_ConstIntBound b = tir_const_int_bound(c->a, v);
      tir_analyzer_bind_bound(c->a, l->var, b.min, b.max);
      tir_Node *body = simp_child(c, l->body);
      tir_analyzer_reset(c->a, mark);
      if (!body) {
        tir_release(v);
        return TIR_MUTATE_ERROR;
      }
      return tir_let_stmt((tir_Var *)R(l->var), v, body);
    }
    case TIR_IfThenElse: {
      const tir_IfThenElse *f = (const tir_IfThenElse *)n;
      tir_Node *cond = tir_simplify(c->a, f->cond);
      int64_t v;
      if (tir_is_const_int(cond, &v)) {
        tir_release(cond);
        const tir_Node *keep = v ? f->then_case : f->else_case;
        if (!keep) return tir_evaluate(tir_i32(0));
        tir_Node *r = simp_child(c, keep);
        return r ? r : TIR_MUTATE_ERROR;
      }
      int mark = tir_analyzer_mark(c->a);
      tir_analyzer_assume(c->a, cond);
      tir_Node *t = simp_child(c, f->then_case);
      tir_analyzer_reset(c->a, mark);
      tir_Node *e = f->else_case ? simp_child(c, f->else_case) : NULL;
      if (!t || (f->else_case && !e)) {
        tir_release(cond);
        tir_release(t);
        tir_release(e);
        return TIR_MUTATE_ERROR;
      }
      return tir_if(cond, t, e);
    }
    case TIR_AttrStmt: {
      const tir_AttrStmt *at = (const tir_AttrStmt *)n;
      if (strcmp(at->key, "thread_extent") == 0 && at->node && at->node->kind == TIR_IterVar) {
        const tir_IterVar *iv = (const tir_IterVar *)at->node;
        int mark = tir_analyzer_mark(c->a);
        tir_Node *zero = tir_int_imm(at->value->dtype, 0);
        tir_analyzer_bind_range(c->a, iv->var, zero, at->value);
        tir_release(zero);
        tir_Node *body = simp_child(c, at->body);
        tir_analyzer_reset(c->a, mark);
        if (!body) return TIR_MUTATE_ERROR;
        return tir_attr_stmt(tir_retain(at->node), at->key, tir_retain(at->value), body);
      }
      return NULL;
    }
    case TIR_Buffer:
    case TIR_IterVar: return tir_retain(n); /* definitions: keep identity */
    case TIR_BufferRegion: {
      const tir_BufferRegion *r = (const tir_BufferRegion *)n;
      tir_Node *reg = simp_child(c, &r->region->hdr);
      if (!reg) return TIR_MUTATE_ERROR;
      if (reg == &r->region->hdr) {
        tir_release(reg);
        return tir_retain(n);
      }
      return &tir_buffer_region((tir_Buffer *)R(r->buffer), (tir_Array *)reg)->hdr;
    }
    default: return NULL;
  }
}

tir_Node *tir_simplify_stmt(tir_Analyzer *a, const tir_Node *s) {
  tir_Analyzer *own = a ? NULL : tir_analyzer_new();
  Ctx c = {a ? a : own};
  tir_Node *r = tir_mutate(s, mut, &c);
  if (own) tir_analyzer_free(own);
  return r;
}
