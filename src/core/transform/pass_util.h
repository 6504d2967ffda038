/* pass_util.h -- small helpers shared by the passes. */
#ifndef TIR_PASS_UTIL_H
#define TIR_PASS_UTIL_H

#include "tir/error.h"
#include "tir/ir.h"

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

#endif
