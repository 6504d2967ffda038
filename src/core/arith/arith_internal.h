/* arith_internal.h -- shared between the arith files. */
#ifndef TIR_ARITH_INTERNAL_H
#define TIR_ARITH_INTERNAL_H

#include "tir/arith.h"

typedef struct {
  const tir_Var *var;
  int64_t lo, hi;  /* inclusive constant bound */
  tir_Node *value; /* owned; when set, var == value */
} Binding;

struct tir_Analyzer {
  Binding *b;
  int n, cap;
};

/* Latest binding of var v, or NULL. */
const Binding *arith_lookup(const tir_Analyzer *a, const tir_Node *v);
int64_t arith_sat_add(int64_t x, int64_t y);
int64_t arith_sat_mul(int64_t x, int64_t y);
int64_t arith_floordiv(int64_t a, int64_t b);
int64_t arith_floormod(int64_t a, int64_t b);

/* Work budget of one top-level tir_simplify / tir_const_int_bound call (simplify.c).  An
 * expression DAG that repeats a subexpression (e = max(e, y) + min(e, z), 24 times) is a
 * tree of 2^24 nodes; past the budget the simplifier returns subexpressions unchanged and
 * bounds are the dtype's full range -- both always correct, only less simplified. */
void arith_work_enter(void);
void arith_work_leave(void);
int arith_work_exhausted(void); /* spends one unit; 1 once the budget is used up */

#endif
