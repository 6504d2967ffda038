/* simplify.c -- the Simplify pass: every expression simplified with the facts of its
 * scope (arith/simplify_stmt.c does the work). */
#include "pass_util.h"
#include "tir/arith.h"

tir_PrimFunc *tir_pass_simplify(const tir_PrimFunc *f) {
  tir_Node *body = tir_simplify_stmt(NULL, f->body);
  if (!body) {
    if (!tir_error_occurred()) tir_error_set(TIR_ERR_LOWER, "simplify", "simplification failed");
    return NULL;
  }
  return pass_with_body(f, body);
}
