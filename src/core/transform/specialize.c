/* specialize.c -- tir_specialize: a PrimFunc with some of its symbolic dimensions (or integer
 * scalar parameters) fixed to values, as TVM's PrimFunc.specialize (src/tir/ir/specialize.cc):
 * every buffer whose shape, strides or offset name a specialized variable is rebuilt with the
 * value (its data variable kept, so the buffer is the same memory), the variable is replaced in
 * the body, specialized scalar parameters leave the signature, and the body is simplified so
 * that loops over `M` become loops over the constant (which the tensor-core schedules need). */
#include <stdlib.h>
#include <string.h>

#include "pass_util.h"
#include "tir/arith.h"
#include "tir/error.h"
#include "tir/transform.h"

#define P "specialize"

typedef struct {
  int nvars;
  tir_Var *const *vars;
  tir_Array *found; /* distinct buffers whose layout uses one of vars (retained) */
} FindCtx;

static int buffer_uses(const tir_Buffer *b, int nvars, tir_Var *const *vars) {
  return tir_uses_any_var(&b->shape->hdr, nvars, vars) || (b->strides && tir_uses_any_var(&b->strides->hdr, nvars, vars)) ||
         (b->elem_offset && tir_uses_any_var(b->elem_offset, nvars, vars));
}

static int find_fn(const tir_Node *n, void *p) {
  FindCtx *c = p;
  if (tir_is_expr(n) && n->kind != TIR_BufferLoad) return n->kind == TIR_Var || n->kind == TIR_IntImm;
  if (n->kind != TIR_Buffer) return 0;
  const tir_Buffer *b = (const tir_Buffer *)n;
  for (int i = 0; i < c->found->size; i++)
    if (c->found->items[i] == n) return 1;
  if (buffer_uses(b, c->nvars, c->vars)) c->found = tir_array_push(c->found, tir_retain(n));
  return 1; /* a buffer's own fields hold no other buffers */
}

/* Is v a parameter, or a variable of a parameter buffer's shape / strides / offset? */
static int in_signature(const tir_PrimFunc *f, const tir_Var *v) {
  tir_Var *const one[1] = {(tir_Var *)v};
  for (int i = 0; i < f->params->size; i++) {
    const tir_Node *p = f->params->items[i];
    if (p == &v->hdr) return 1;
    if (p->kind == TIR_Buffer && buffer_uses((const tir_Buffer *)p, 1, one)) return 1;
  }
  return 0;
}

tir_PrimFunc *tir_specialize(const tir_PrimFunc *f, int n, tir_Var *const *vars, tir_Node *const *values, const char *name) {
  if (n <= 0) { /* nothing to fix: a renamed copy, the body untouched */
    tir_PrimFunc *g = (tir_PrimFunc *)tir_node_copy(&f->hdr);
    if (name && *name) tir_node_set_str(&g->name, name);
    return g;
  }
  for (int i = 0; i < n; i++) {
    const tir_Var *v = vars[i];
    int64_t x;
    if (!v || v->hdr.kind != TIR_Var)
      return tir_error_set(TIR_ERR_TYPE, P, "function %s: specialization %d does not name a variable", f->name, i + 1), NULL;
    if (!tir_dtype_is_int(v->hdr.dtype))
      return tir_error_set(TIR_ERR_TYPE, P, "function %s: %s is not an integer variable (only shapes and integer scalars are specialized)",
                           f->name, v->name),
             NULL;
    if (!values[i] || !tir_is_const_int(values[i], &x))
      return tir_error_set(TIR_ERR_TYPE, P, "function %s: the value of %s must be an integer constant", f->name, v->name), NULL;
    if (v->hdr.dtype.bits < 64) { /* the value must fit the variable's dtype (no silent wrap-around) */
      int b = v->hdr.dtype.bits;
      int is_u = v->hdr.dtype.code == TIR_DT_UINT;
      int64_t lo = is_u ? 0 : -((int64_t)1 << (b - 1)), hi = is_u ? ((int64_t)1 << b) - 1 : ((int64_t)1 << (b - 1)) - 1;
      char dts[32];
      if (x < lo || x > hi)
        return tir_error_set(TIR_ERR_VALUE, P, "function %s: %lld does not fit %s's dtype %s (%lld .. %lld)", f->name, (long long)x,
                             v->name, tir_dtype_str(v->hdr.dtype, dts), (long long)lo, (long long)hi),
               NULL;
    }
    for (int j = 0; j < i; j++)
      if (vars[j] == vars[i]) return tir_error_set(TIR_ERR_VALUE, P, "function %s: %s is specialized twice", f->name, v->name), NULL;
    if (!in_signature(f, v)) {
      tir_error_set(TIR_ERR_VALUE, P,
                    "function %s: %s is neither a parameter nor a variable of a parameter buffer's shape, so it cannot be specialized",
                    f->name, v->name);
      tir_error_set_ir(&f->hdr);
      return NULL;
    }
    /* a dimension of a parameter buffer must be positive (a scalar parameter may be anything) */
    for (int p = 0; p < f->params->size; p++) {
      const tir_Node *pn = f->params->items[p];
      if (pn->kind != TIR_Buffer) continue;
      const tir_Buffer *b = (const tir_Buffer *)pn;
      for (int d = 0; d < b->shape->size; d++)
        if (b->shape->items[d] == &v->hdr && x < 1) {
          tir_error_set(TIR_ERR_VALUE, P, "function %s: %s is dimension %d of %s and must be at least 1, got %lld", f->name, v->name,
                        d + 1, b->name, (long long)x);
          return NULL;
        }
    }
  }
  /* values in the variables' own dtypes */
  tir_Node **vals = calloc((size_t)n + 1, sizeof *vals);
  for (int i = 0; i < n; i++) {
    int64_t x;
    tir_is_const_int(values[i], &x);
    vals[i] = tir_int_imm(vars[i]->hdr.dtype, x);
  }
  /* buffers whose layout names a specialized variable, anywhere in the function */
  FindCtx fc = {n, vars, tir_array_new(0)};
  for (int i = 0; i < f->params->size; i++) find_fn(f->params->items[i], &fc);
  tir_visit(f->body, find_fn, &fc);
  int nb = fc.found->size;
  tir_Buffer **from = calloc((size_t)(nb ? nb : 1), sizeof *from), **to = calloc((size_t)(nb ? nb : 1), sizeof *to);
  for (int i = 0; i < nb; i++) {
    from[i] = (tir_Buffer *)fc.found->items[i];
    tir_Buffer *c = (tir_Buffer *)tir_node_copy(&from[i]->hdr);
    tir_Node *s = tir_substitute(&c->shape->hdr, n, vars, vals);
    tir_release(c->shape);
    c->shape = (tir_Array *)tir_simplify_take(NULL, s);
    if (c->strides) {
      tir_Node *st = tir_substitute(&c->strides->hdr, n, vars, vals);
      tir_release(c->strides);
      c->strides = (tir_Array *)tir_simplify_take(NULL, st);
    }
    if (c->elem_offset) {
      tir_Node *eo = tir_simplify_take(NULL, tir_substitute(c->elem_offset, n, vars, vals));
      tir_release(c->elem_offset);
      c->elem_offset = eo;
    }
    to[i] = c;
  }
  /* the signature: specialized scalars leave it, rebuilt buffers take their place */
  tir_Array *params = tir_array_new(0);
  for (int i = 0; i < f->params->size; i++) {
    tir_Node *p = f->params->items[i];
    int drop = 0;
    for (int k = 0; k < n; k++) drop |= p == &vars[k]->hdr;
    if (drop) continue;
    for (int k = 0; k < nb; k++)
      if (p == &from[k]->hdr) p = &to[k]->hdr;
    params = tir_array_push(params, tir_retain(p));
  }
  tir_Node *b1 = tir_substitute_buffers(f->body, nb, from, to);
  tir_Node *b2 = b1 ? tir_substitute(b1, n, vars, vals) : NULL;
  tir_release(b1);
  tir_Node *body = b2 ? tir_simplify_stmt(NULL, b2) : NULL;
  tir_release(b2);
  for (int i = 0; i < n; i++) tir_release(vals[i]);
  for (int i = 0; i < nb; i++) tir_release(to[i]);
  free(vals);
  free(from);
  free(to);
  tir_release(fc.found);
  if (!body) {
    tir_release(params);
    if (!tir_error_occurred()) tir_error_set(TIR_ERR_INTERNAL, P, "function %s: rewriting the body failed", f->name);
    return NULL;
  }
  return tir_prim_func(name && *name ? name : f->name, params, body, f->attrs ? R(f->attrs) : NULL);
}
