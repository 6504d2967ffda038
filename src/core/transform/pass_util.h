/* pass_util.h -- small helpers shared by the passes. */
#ifndef TIR_PASS_UTIL_H
#define TIR_PASS_UTIL_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "tir/arith.h"
#include "tir/error.h"
#include "tir/ir.h"

/* Sets a LoweringError of `pass` with the formatted message, f's IR and `where` (may be NULL)
 * marked `what`; returns TIR_MUTATE_ERROR, a mutator's failure. */
static inline tir_Node *pass_fail_at(const char *pass, const tir_PrimFunc *f, const tir_Node *where, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static inline tir_Node *pass_fail_at(const char *pass, const tir_PrimFunc *f, const tir_Node *where, const char *what, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  tir_error_set(TIR_ERR_LOWER, pass, "%s", msg);
  tir_error_set_ir(&f->hdr);
  if (where) tir_error_mark(where, what);
  return TIR_MUTATE_ERROR;
}

/* Returns a copy of f with a new body (stolen). */
static inline tir_PrimFunc *pass_with_body(const tir_PrimFunc *f, tir_Node *body) {
  if (!body) return NULL;
  if (body == f->body) {
    tir_release(body);
    return (tir_PrimFunc *)tir_retain(f);
  }
  tir_PrimFunc *g = (tir_PrimFunc *)tir_node_copy(&f->hdr);
  tir_release(g->body);
  g->body = body;
  return g;
}

/* f with body (stolen) as its body: f itself (retained) when body is f's. */
static inline tir_Node *pass_for_with_body(const tir_For *f, tir_Node *body) {
  if (body == f->body) {
    tir_release(body);
    return tir_retain(&f->hdr);
  }
  tir_For *nf = (tir_For *)tir_node_copy(&f->hdr);
  tir_release(nf->body);
  nf->body = body;
  return &nf->hdr;
}

/* A new array: first (stolen), then rest's items (retained). */
static inline tir_Array *pass_prepend(tir_Node *first, const tir_Array *rest) {
  tir_Array *a = tir_array_new(rest->size + 1);
  a->items[0] = first;
  for (int i = 0; i < rest->size; i++) a->items[i + 1] = tir_retain(rest->items[i]);
  return a;
}

/* b with a leading dimension of `versions` (a pipeline's multi-buffered copy of it) and a
 * fresh data var: a different allocation (inject_software_pipeline, inject_tma_pipeline). */
static inline tir_Buffer *pass_versioned_buffer(const tir_Buffer *b, int versions) {
  tir_Buffer *nb = (tir_Buffer *)tir_node_copy(&b->hdr);
  tir_DType it = b->shape->size ? b->shape->items[0]->dtype : TIR_INT32;
  tir_Array *shape = pass_prepend(tir_int_imm(it, versions), b->shape);
  tir_release(nb->shape);
  nb->shape = shape;
  if (b->strides->size) {
    tir_Node *s0 = tir_mul(R(b->strides->items[0]), R(b->shape->items[0]));
    tir_Array *strides = pass_prepend(s0, b->strides);
    tir_release(nb->strides);
    nb->strides = strides;
  }
  tir_release(nb->data);
  nb->data = tir_var_new(b->data->name, b->data->hdr.dtype);
  return nb;
}

/* e with the block's iteration variables replaced by their bindings (br's iter_values): an
 * index of the block body in terms of the enclosing loops.  Owned. */
static inline tir_Node *pass_bind_iters(const tir_BlockRealize *br, const tir_Node *e) {
  const tir_Block *b = br->block;
  int nv = b->iter_vars->size;
  tir_Var **vars = calloc((size_t)nv + 1, sizeof *vars);
  tir_Node **vals = calloc((size_t)nv + 1, sizeof *vals);
  for (int i = 0; i < nv; i++) {
    vars[i] = ((const tir_IterVar *)b->iter_vars->items[i])->var;
    vals[i] = br->iter_values->items[i];
  }
  tir_Node *r = tir_substitute(e, nv, vars, vals);
  free(vars), free(vals);
  return r;
}

/* An analyzer knowing 0 <= lv[i] < ext[i] for the n loop variables (tir_analyzer_free it). */
static inline tir_Analyzer *pass_loops_analyzer(const tir_Var *const *lv, const int64_t *ext, int n) {
  tir_Analyzer *an = tir_analyzer_new();
  for (int i = 0; i < n; i++) {
    tir_Node *z = tir_i32(0), *e = tir_int_imm(lv[i]->hdr.dtype, ext[i]);
    tir_analyzer_bind_range(an, lv[i], z, e);
    tir_release(z), tir_release(e);
  }
  return an;
}

#endif
