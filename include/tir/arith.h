/* arith.h -- integer analysis of index expressions: bounds, simplification, proofs,
 * integer sets, affine iteration maps.  What compilers quietly get wrong lives here, so
 * every rule is conservative: an answer is either proven or the input is kept.
 *
 * Facts used (TVM src/arith/{const_int_bound,canonical_simplify,int_set,iter_affine_map}.cc):
 *   floordiv(c*X + R, c) = X + floordiv(R, c)        for integers X and c > 0
 *   floormod(c*X + R, c) = floormod(R, c)
 *   floordiv(R, c) = k  when k*c <= R < (k+1)*c
 *   floormod(R, c) = R - k*c  in that same case
 *   floordiv(g*R, g*c) = floordiv(R, c), floormod(g*R, g*c) = g*floormod(R, c)   (g > 0)
 *   c*floordiv(E, c) + floormod(E, c) = E, and generally the digits of one index merge:
 *   floormod(floordiv(E, l1), h1/l1) * (l1/l2) + floormod(floordiv(E, l2), l1/l2)
 *     = floormod(floordiv(E, l2), h1/l2)       (x // 32 % 3 * 32 + x % 32 = x % 96)
 *   floordiv(floormod(E, d), c) = floormod(floordiv(E, c), d/c)   for c | d
 *   floordiv(A + c, d) - floordiv(A, d) = floordiv(floormod(A, d) + c, d)   (then bounds fold it)
 */
#ifndef TIR_ARITH_H
#define TIR_ARITH_H

#include <stdint.h>

#include "tir/ir.h"

#define TIR_NEG_INF INT64_MIN
#define TIR_POS_INF INT64_MAX

typedef struct {
  int64_t min, max; /* inclusive; TIR_NEG_INF / TIR_POS_INF when unbounded */
} tir_ConstIntBound;

typedef struct tir_Analyzer tir_Analyzer;

tir_Analyzer *tir_analyzer_new(void);
void tir_analyzer_free(tir_Analyzer *a);
/* Declares var in [min, min + extent) (borrowed expressions; constant bounds derived). */
void tir_analyzer_bind_range(tir_Analyzer *a, const tir_Var *v, const tir_Node *min, const tir_Node *extent);
/* Declares var in [lo, hi] (inclusive constants). */
void tir_analyzer_bind_bound(tir_Analyzer *a, const tir_Var *v, int64_t lo, int64_t hi);
/* Declares var == value (substituted by simplify). */
void tir_analyzer_bind_value(tir_Analyzer *a, const tir_Var *v, const tir_Node *value);
/* Marks of bindings, to scope facts: mark = tir_analyzer_mark(a); ... tir_analyzer_reset(a, mark). */
int tir_analyzer_mark(tir_Analyzer *a);
void tir_analyzer_reset(tir_Analyzer *a, int mark);
/* Adds a known-true condition (e.g. a block predicate); comparisons of a var with a
 * constant tighten its bound until the reset. */
void tir_analyzer_assume(tir_Analyzer *a, const tir_Node *cond);

tir_ConstIntBound tir_const_int_bound(tir_Analyzer *a, const tir_Node *e);
/* Simplifies e (borrowed) to canonical form; owned result.  a may be NULL (no facts). */
tir_Node *tir_simplify(tir_Analyzer *a, const tir_Node *e);
/* tir_simplify that takes ownership of e (for building and simplifying in one expression). */
tir_Node *tir_simplify_take(tir_Analyzer *a, tir_Node *e);
/* Simplifies every expression inside a statement/function (owned result). */
tir_Node *tir_simplify_stmt(tir_Analyzer *a, const tir_Node *s);
/* True when cond (a bool expression) is provably true. */
int tir_can_prove(tir_Analyzer *a, const tir_Node *cond);
/* True when a == b is provable (both integer expressions). */
int tir_can_prove_equal(tir_Analyzer *a, const tir_Node *x, const tir_Node *y);
/* A constant upper bound of v implied by a predicate (conjunctions of linear
 * comparisons), using the analyzer's bounds for the other variables; 1 when found. */
int tir_bound_from_predicate(tir_Analyzer *a, const tir_Node *pred, const tir_Var *v, int64_t *max_out);
/* If e simplifies to a constant, stores it and returns 1. */
int tir_as_const_int(tir_Analyzer *a, const tir_Node *e, int64_t *out);

/* ---- integer sets (int_set.c) ----
 * A symbolic interval [min, max] (inclusive).  Evaluating an expression over a domain
 * map (var -> its interval) gives a conservative covering interval.  min/max NULL means
 * unbounded on that side. */
typedef struct {
  tir_Node *min, *max; /* owned */
} tir_IntSet;

typedef struct {
  const tir_Var *var;
  tir_IntSet set; /* borrowed nodes */
} tir_DomEntry;

/* Evaluates e over doms (vars not listed stay symbolic).  Returns 0, or -1 when the set is
 * unbounded (then out is {NULL, NULL}). */
int tir_int_set_eval(tir_Analyzer *a, const tir_Node *e, const tir_DomEntry *doms, int n_doms, tir_IntSet *out);
void tir_int_set_free(tir_IntSet *s);
/* Union hull of two sets of the same expression type (owned, inputs borrowed). */
int tir_int_set_union(tir_Analyzer *a, const tir_IntSet *x, const tir_IntSet *y, tir_IntSet *out);

/* Relaxes a region (Array of Range) over doms: each range's covering interval.  Returns an
 * owned Array of Range, or NULL when a dimension is unbounded and no fallback is given;
 * with `shape` (borrowed, may be NULL) an unbounded dimension becomes the whole extent. */
tir_Array *tir_relax_region(tir_Analyzer *a, const tir_Array *region, const tir_DomEntry *doms, int n_doms,
                            const tir_Array *shape);

/* Relaxes a region like tir_relax_region, first tightening the domains of the relaxed
 * variables with what `predicate` (may be NULL) implies about them. */
tir_Array *tir_relax_region_pred(tir_Analyzer *a, const tir_Array *region, const tir_DomEntry *doms, int n_doms,
                                 const tir_Array *shape, const tir_Node *predicate);

/* ---- affine iteration maps (iter_map.c) ----
 * Decides whether `bindings` (expressions of the loop vars) are an affine map of the loop
 * iterators (TVM src/arith/iter_affine_map.cc, DetectIterMap): every binding is one split
 *   floormod(floordiv(M, lower), extent) * scale
 * of a mark M, where a mark is a loop variable or a fused sum of splits whose scales chain
 * (i0 * 16 + i1 with i1 in [0, 16)); a predicate such as i0 * 16 + i1 < 50 (from a split
 * that does not divide) shrinks the extent of that fused mark.  Then every mark must be
 * covered by the splits that use it without overlap:
 *   - bijective: exactly, and every loop var of extent > 1 is used (what split, fuse and
 *     reorder preserve; TVM check_level=bijective);
 *   - surjective: a divisor-aligned part (TVM's IsAffineBinding and SubspaceDivide use this:
 *     a block under a loop it does not use is still affine).
 * Extents, scales and factors must be constants; scales positive; overlapping windows
 * (i * 2 + r, r in [0, 3)) and offsets that are not multiples of a divisor are rejected.
 * Loops are [min, min + extent); `loops` lists the loop vars (others are free symbols). */
typedef struct {
  const tir_Var *var;
  int64_t extent;
  int64_t min; /* usually 0; after extent so that {var, extent} initializers stay valid */
} tir_LoopIter;

#define TIR_ITER_MAP_BIJECTIVE 0
#define TIR_ITER_MAP_SURJECTIVE 1

/* Bijective check.  With `extents` (may be NULL), binding i must also cover exactly
 * extents[i] values (its iteration domain).  Returns 1 when affine and bijective;
 * otherwise 0 with the first reason in why (may be NULL).  `a` may be NULL. */
int tir_detect_iter_map(tir_Analyzer *a, const tir_Node *const *bindings, const int64_t *extents, int n,
                        const tir_LoopIter *loops, int n_loops, const tir_Node *predicate, char *why, int why_cap);
/* Same with a check level (TIR_ITER_MAP_BIJECTIVE or TIR_ITER_MAP_SURJECTIVE). */
int tir_detect_iter_map_level(tir_Analyzer *a, const tir_Node *const *bindings, const int64_t *extents, int n,
                              const tir_LoopIter *loops, int n_loops, const tir_Node *predicate, int level, char *why,
                              int why_cap);

/* Subspace division (TVM SubspaceDivide): each binding b_i, affine in the loops, is written
 *   b_i = outer_i * inner_extent_i + inner_i
 * where outer_i uses only loops not in inner_vars, over [0, outer_extent_i), and inner_i
 * only loops in inner_vars, over [0, inner_extent_i).  A predicate splits into the part on
 * the outer loops and the part on the inner loops (each `true` when absent).  This is what
 * blockize and tensorize need.  simplify_trivial: loops of extent 1 become constants. */
typedef struct {
  int n;
  tir_Node **outer, **inner; /* n owned expressions each, simplified */
  int64_t *outer_extent, *inner_extent;
  tir_Node *outer_pred, *inner_pred; /* owned */
} tir_SubspaceDivision;
/* Returns 1 and fills out (free with tir_subspace_division_free), or 0 with a reason. */
int tir_subspace_divide(tir_Analyzer *a, const tir_Node *const *bindings, int n, const tir_LoopIter *loops, int n_loops,
                        const tir_Var *const *inner_vars, int n_inner, const tir_Node *predicate, int level,
                        int simplify_trivial, tir_SubspaceDivision *out, char *why, int why_cap);
void tir_subspace_division_free(tir_SubspaceDivision *d);

/* Inverse of a bijective affine map (TVM IndexMap::Inverse / InverseAffineIterMap).
 * outputs[n_out] are expressions of the loops' variables that tir_detect_iter_map accepts
 * (each one split of a fused iterator plus a constant offset, together covering the loops'
 * box exactly).  On success returns 1 and fills, per output, out_min (its offset) and
 * out_extent (how many values it takes), and per loop inverse[l] (owned): loops[l].var as
 * an expression of new_vars (one per output, of the loops' dtype, ranging over
 * [out_min, out_min + out_extent)), simplified with those ranges; each input is recovered
 * digit by digit (floordiv/floormod by the scales of the fused sums).  Loops of extent 1
 * that no output uses become their minimum.  Otherwise returns 0 with the reason in why
 * (inverse all NULL).  Constant extents only, no predicate. */
int tir_iter_map_inverse(const tir_Node *const *outputs, int n_out, const tir_LoopIter *loops, int n_loops,
                         const tir_Var *const *new_vars, int64_t *out_min, int64_t *out_extent, tir_Node **inverse, char *why,
                         int why_cap);

/* ---- index maps (index_map.c) ----
 * Exact range and injectivity of `outputs` (integer expressions of `vars`) over the box
 * 0 <= vars[i] < extents[i], by enumeration of independent components (outputs sharing an
 * input), each limited to 2^26 points.  Fills out_min/out_max per output and *injective
 * (0 with an example collision in why).  Returns 0, or -1 with the error set when an output
 * uses something other than its inputs, constants, + - * // % min max, comparisons, select
 * and bitwise operations, or a component is too large to enumerate. */
int tir_index_map_analyze(const tir_Var *const *vars, const int64_t *extents, int n_vars, const tir_Node *const *outputs,
                          int n_out, int64_t *out_min, int64_t *out_max, int *injective, char *why, int why_cap);

#endif
