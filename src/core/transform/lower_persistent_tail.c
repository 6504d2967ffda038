/* lower_persistent_tail.c -- a persistent grid of any CTA count, the last round's spare CTAs
 * repeating a tile (CUTLASS's persistent tile scheduler walks `for (t = blockIdx.x; t < T; t += G)`;
 * here every CTA runs the same number of rounds, so the pipelines need no predicate).
 *
 * tc_gemm.persistent_tiles builds a persistent grid whose CTA count G divides the tile count T
 * (each of the G CTAs walks R = T / G tiles: no tail, affine block bindings).  ResNet-50's tile
 * counts (7^2 factors) leave 98 or 112 of 132 SMs busy that way.  With the annotation
 * "persistent_tail" = G2 on the tile loop (serial, extent R, directly inside the blockIdx.x loop
 * of extent G), this pass re-grids the launch to G2 CTAs of R2 = ceil(T / G2) rounds:
 *   for b in blockIdx.x(G2): for r in serial(R2): body[t := min(r * G2 + b, T - 1)]
 * where the old body's indices, functions of the tile number t = r_old * G + b_old, get
 * r_old := t / G and b_old := t % G.  The last round's CTAs past T (R2 * G2 - T of them) compute
 * tile T - 1 again and store the same values over it: correct only when the tile's writes do not
 * read what they overwrite (D = f(A, B), no D += ...), which the schedule that sets the annotation
 * guarantees (tc_gemm_wgmma persistent_tail; docs/TENSOR_CORES.md).  The loop counters
 * themselves are untouched, so the pipelines' mbarrier phases (inject_tma_pipeline,
 * inject_warp_specialization) count the rounds as they run.  Runs on block-level IR before those.
 *
 * Errors: the annotated loop must be serial with a constant extent, directly the body of a
 * blockIdx.x loop of constant extent, and G2 a positive integer. */
#include <string.h>

#include "pass_util.h"

#define KEY "persistent_tail"

typedef struct {
  const tir_PrimFunc *f;
  int failed;
} Ctx;

static tir_Node *mut(const tir_Node *n, void *p);

static tir_Node *fail(Ctx *c, const tir_Node *where, const char *fmt, const char *a) {
  pass_fail_at("lower_persistent_tail", c->f, where, "this loop", fmt, a);
  c->failed = 1;
  return TIR_MUTATE_ERROR;
}

/* the blockIdx.x loop `cta` whose body is the annotated tile loop `tl` */
static tir_Node *regrid(Ctx *c, const tir_For *cta, const tir_For *tl, int64_t g2) {
  int64_t g, r;
  if (!tir_is_const_int(cta->extent, &g) || !tir_is_const_int(tl->extent, &r) || !tir_is_zero(cta->min) || !tir_is_zero(tl->min))
    return fail(c, &tl->hdr, "loop '%s' (persistent_tail): the tile loop and its blockIdx.x loop need constant extents from 0",
                tl->loop_var->name);
  int64_t t = g * r, r2 = (t + g2 - 1) / g2;
  /* t' = min(r * G2 + b, T - 1): the tile of round r on CTA b */
  tir_Node *tn = tir_min(tir_add(tir_mul(R(&tl->loop_var->hdr), tir_int_imm(tl->loop_var->hdr.dtype, g2)), R(&cta->loop_var->hdr)),
                         tir_int_imm(tl->loop_var->hdr.dtype, t - 1));
  tir_Var *vars[2] = {tl->loop_var, cta->loop_var};
  tir_Node *vals[2] = {tir_floordiv(R(tn), tir_int_imm(tl->loop_var->hdr.dtype, g)), tir_floormod(tn, tir_int_imm(cta->loop_var->hdr.dtype, g))};
  tir_Node *inner = tir_mutate(tl->body, mut, c);
  if (!inner) {
    tir_release(vals[0]);
    tir_release(vals[1]);
    return TIR_MUTATE_ERROR;
  }
  tir_Node *body = tir_substitute(inner, 2, vars, vals);
  tir_release(inner);
  tir_release(vals[0]);
  tir_release(vals[1]);
  if (!body) return TIR_MUTATE_ERROR;
  tir_Array *anns = tir_ann_remove(tl->annotations, KEY);
  tir_Node *nt = tir_for(R(tl->loop_var), R(tl->min), tir_int_imm(tl->extent->dtype, r2), (int)tl->kind, tl->thread_tag,
                         anns, body);
  return tir_for(R(cta->loop_var), R(cta->min), tir_int_imm(cta->extent->dtype, g2), (int)cta->kind, cta->thread_tag,
                 cta->annotations ? R(cta->annotations) : NULL, nt);
}

static tir_Node *mut(const tir_Node *n, void *p) {
  Ctx *c = p;
  if (tir_is_expr(n) || n->kind != TIR_For) return NULL;
  const tir_For *f = (const tir_For *)n;
  const tir_Node *an = f->annotations ? tir_ann_get(f->annotations, KEY) : NULL;
  if (an) /* reached without its blockIdx.x loop just above */
    return fail(c, n, "loop '%s' carries persistent_tail but is not the body of a blockIdx.x loop (tc_gemm.persistent_tiles' tile loop)",
                f->loop_var->name);
  if (f->kind != TIR_FOR_THREAD_BINDING || strcmp(f->thread_tag, "blockIdx.x") != 0 || f->body->kind != TIR_For) return NULL;
  const tir_For *tl = (const tir_For *)f->body;
  an = tl->annotations ? tir_ann_get(tl->annotations, KEY) : NULL;
  if (!an) return NULL;
  int64_t g2;
  if (!tir_is_const_int(an, &g2) || g2 < 1)
    return fail(c, &tl->hdr, "loop '%s': persistent_tail must be a positive integer CTA count", tl->loop_var->name);
  if (tl->kind != TIR_FOR_SERIAL) return fail(c, &tl->hdr, "loop '%s' (persistent_tail) must be serial", tl->loop_var->name);
  return regrid(c, f, tl, g2);
}

tir_PrimFunc *tir_pass_lower_persistent_tail(const tir_PrimFunc *f) {
  Ctx c = {.f = f};
  tir_Node *body = tir_mutate(f->body, mut, &c);
  if (!body) return NULL;
  return pass_with_body(f, body);
}
