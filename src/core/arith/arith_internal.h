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

#endif
