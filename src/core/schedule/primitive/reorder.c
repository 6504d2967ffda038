/* reorder.c -- permute loops along one chain (TVM loop_transformation.cc, Reorder).
 *
 * The given loops must be distinct and lie on a single path where each loop between the
 * outermost and innermost given one has exactly one child loop (no branching, no block
 * in between).  Loops of the chain that are not given keep their positions; the given
 * ones fill their positions in the given order.  Blocks under the chain may only have
 * data-parallel or reduction iteration variables (their order of execution changes) bound
 * affinely to the loops of the range (TVM CheckPartialAffineBinding; see check_affine_under),
 * and no loop's range may depend on a loop moved inside it.
 */
#include <stdlib.h>
#include <string.h>

#include "../sched_util.h"

/* ---- TVM CheckPartialAffineBinding, as far as reorder needs it ----
 * Over the loops from the reorder range down to a block (outer loops are constants there),
 * each binding must be quasi-affine: a sum of loop variables times constants, with floordiv /
 * floormod by constants, no product of two such loops, and not a scaled iterator (its finest
 * step is 1: l * 16 alone is refused, i0 * 16 + i1 is not); each conjunct of the predicate
 * may only use the loops of one binding (a split's i0 * 16 + i1 < 50, not a bound on several
 * independent iterators).  TVM decides this with DetectIterMap (surjective, leading scale 1). */
typedef struct {
  const tir_Var *const *vars;
  int n;
  int nonlinear; /* a product of range loops, or an operation that is not affine */
  int unit;      /* some term moves in steps of 1 */
  unsigned char *used;
} Lin;

static int uses_range(const tir_Node *e, const Lin *L) {
  for (int i = 0; i < L->n; i++)
    if (tir_uses_var(e, L->vars[i])) return 1;
  return 0;
}

static void mark_used(const tir_Node *e, Lin *L) {
  for (int i = 0; i < L->n; i++)
    if (tir_uses_var(e, L->vars[i])) L->used[i] = 1;
}

static void lin_walk(const tir_Node *e, int64_t scale, Lin *L) {
  int64_t c;
  switch (e->kind) {
    case TIR_Var:
      for (int i = 0; i < L->n; i++)
        if ((const tir_Node *)L->vars[i] == e) {
          L->used[i] = 1;
          if (scale == 1 || scale == -1) L->unit = 1;
        }
      return;
    case TIR_IntImm: return;
    case TIR_Add: {
      const tir_Add *b = (const tir_Add *)e;
      lin_walk(b->a, scale, L);
      lin_walk(b->b, scale, L);
      return;
    }
    case TIR_Sub: {
      const tir_Sub *b = (const tir_Sub *)e;
      lin_walk(b->a, scale, L);
      lin_walk(b->b, -scale, L);
      return;
    }
    case TIR_Mul: {
      const tir_Mul *b = (const tir_Mul *)e;
      if (tir_is_const_int(b->b, &c)) lin_walk(b->a, scale * c, L);
      else if (tir_is_const_int(b->a, &c)) lin_walk(b->b, scale * c, L);
      else if (uses_range(b->a, L) && uses_range(b->b, L)) L->nonlinear = 1;
      else if (uses_range(b->a, L)) lin_walk(b->a, scale, L); /* times a symbol: a symbolic scale */
      else lin_walk(b->b, scale, L);
      return;
    }
    case TIR_FloorDiv:
    case TIR_FloorMod: {
      const tir_FloorDiv *b = (const tir_FloorDiv *)e;
      if (!tir_is_const_int(b->b, &c) || c <= 0) {
        if (uses_range(e, L)) L->nonlinear = 1;
        return;
      }
      /* a digit of an affine sum: it moves in steps of 1 */
      Lin inner = *L;
      inner.unit = 0;
      lin_walk(b->a, 1, &inner);
      L->nonlinear |= inner.nonlinear;
      if (uses_range(b->a, L) && (scale == 1 || scale == -1)) L->unit = 1;
      return;
    }
    default:
      if (uses_range(e, L)) {
        L->nonlinear = 1;
        mark_used(e, L);
      }
      return;
  }
}

/* 0 when the block's bindings are affine over vars (see above); else -1 with the error set. */
static int check_affine_under(tir_Schedule *s, const char *P, const tir_BlockRealize *br, const tir_Var *const *vars, int nv) {
  const tir_Block *b = br->block;
  int nb = br->iter_values->size;
  unsigned char *used = calloc((size_t)(nb + 1) * (size_t)(nv + 1), 1);
  int rc = 0;
  for (int j = 0; j < nb && rc == 0; j++) {
    Lin L = {vars, nv, 0, 0, used + (size_t)j * (size_t)(nv + 1)};
    const tir_Node *v = br->iter_values->items[j];
    lin_walk(v, 1, &L);
    int any = 0;
    for (int i = 0; i < nv; i++) any |= L.used[i];
    if (L.nonlinear || (any && !L.unit)) {
      char *t = tir_print_expr(v);
      rc = sch_error(s, P, &br->hdr, "this block",
                     "block '%s' binds %s to %s, which is not an affine binding of the loops to reorder (%s); TVM requires "
                     "affine bindings under them",
                     b->name, ((const tir_IterVar *)b->iter_vars->items[j])->var->name, t ? t : "?",
                     L.nonlinear ? "not linear in them" : "a scaled iterator");
      free(t);
    }
  }
  /* the predicate: each conjunct within the loops of one binding */
  const tir_Node *pred = br->predicate;
  while (rc == 0 && pred && !tir_is_one(pred)) {
    const tir_Node *conj = pred;
    if (pred->kind == TIR_And) {
      conj = ((const tir_And *)pred)->b;
      pred = ((const tir_And *)pred)->a;
    } else {
      pred = NULL;
    }
    /* loops that no binding uses do not count (a unit dimension whose binding simplified
     * to a constant keeps its split's predicate) */
    unsigned char *in = calloc((size_t)nv + 1, 1);
    int fits = 0, any = 0;
    for (int i = 0; i < nv; i++) {
      int bound = 0;
      for (int j = 0; j < nb; j++) bound |= used[(size_t)j * (size_t)(nv + 1) + (size_t)i];
      in[i] = bound && tir_uses_var(conj, vars[i]);
      any |= in[i];
    }
    for (int j = 0; j < nb && !fits && any; j++) {
      const unsigned char *u = used + (size_t)j * (size_t)(nv + 1);
      int ok = 1;
      for (int i = 0; i < nv && ok; i++)
        if (in[i] && !u[i]) ok = 0;
      fits = ok;
    }
    free(in);
    if (any && !fits) {
      char *t = tir_print_expr(conj);
      rc = sch_error(s, P, &br->hdr, "this block",
                     "the predicate %s of block '%s' couples loops that bind different iteration variables; its bindings are "
                     "not affine under the loops to reorder (TVM requires affine bindings)",
                     t ? t : "?", b->name);
      free(t);
    }
  }
  free(used);
  return rc;
}

int tir_sched_reorder(tir_Schedule *s, tir_Var *const *vars, int n) {
  const char *P = "reorder";
  if (n < 1) return tir_error_set(TIR_ERR_SCHEDULE, P, "reorder needs the loops to put in order");
  int rc = -1;
  const tir_For **loops = calloc((size_t)n, sizeof *loops);
  SchPath *paths = calloc((size_t)n, sizeof *paths);
  const tir_For **chain = NULL;
  for (int i = 0; i < n; i++) {
    loops[i] = sch_find_loop(s->func->body, vars[i], &paths[i]);
    if (!loops[i]) {
      tir_sched_loop(s, vars[i], P);
      goto done;
    }
    for (int j = 0; j < i; j++)
      if (loops[j] == loops[i]) {
        sch_error(s, P, &loops[i]->hdr, "given twice", "loop %s appears more than once", loops[i]->loop_var->name);
        goto done;
      }
  }
  /* the outermost (shortest path) and innermost (longest) */
  int top = 0, bot = 0;
  for (int i = 1; i < n; i++) {
    if (paths[i].n < paths[top].n) top = i;
    if (paths[i].n > paths[bot].n) bot = i;
  }
  /* every given loop must be on the path to the innermost one */
  const SchPath *bp = &paths[bot];
  int top_pos = paths[top].n - 1;
  for (int i = 0; i < n; i++) {
    int pos = paths[i].n - 1;
    if (pos >= bp->n || bp->nodes[pos] != &loops[i]->hdr) {
      sch_error(s, P, &loops[i]->hdr, "not on the chain",
                "loops %s and %s are not nested in one another (they are in different loop nests), so they cannot be reordered",
                loops[i]->loop_var->name, loops[bot]->loop_var->name);
      tir_error_mark(&loops[bot]->hdr, "the other loop");
      goto done;
    }
  }
  int len = bp->n - top_pos;
  chain = calloc((size_t)len, sizeof *chain);
  for (int k = 0; k < len; k++) {
    const tir_Node *nd = bp->nodes[top_pos + k];
    if (nd->kind != TIR_For) {
      sch_error(s, P, nd, "here", "the loops are separated by a %s; reorder needs a chain of directly nested loops",
                tir_kind_name(nd->kind));
      goto done;
    }
    chain[k] = (const tir_For *)nd;
    if (k + 1 < len && chain[k]->body != bp->nodes[top_pos + k + 1]) {
      sch_error(s, P, &chain[k]->hdr, "has several children",
                "loop %s has more than one statement in its body; reorder needs a single-branch chain",
                chain[k]->loop_var->name);
      goto done;
    }
  }
  /* blocks below: only S/R iteration variables, and no moved loop feeding both kinds (the
   * first visit of an output must still have every reduction variable at its start, which
   * is when the init runs) */
  {
    const tir_BlockRealize **blocks;
    int nb = sch_child_blocks(chain[len - 1]->body, &blocks);
    for (int i = 0; i < nb; i++) {
      const tir_Block *b = blocks[i]->block;
      if (!sch_block_is_reduction(b)) continue;
      for (int q = 0; q < n; q++) {
        int sp = 0, rd = 0;
        for (int j = 0; j < b->iter_vars->size; j++) {
          if (!tir_uses_var(blocks[i]->iter_values->items[j], loops[q]->loop_var)) continue;
          if (((const tir_IterVar *)b->iter_vars->items[j])->iter_type == TIR_ITER_COMM_REDUCE) rd = 1;
          else sp = 1;
        }
        if (sp && rd) {
          sch_error(s, P, &loops[q]->hdr, "spatial and reduction",
                    "loop %s feeds both spatial and reduction iteration variables of block '%s' (it came from fusing "
                    "them); reordering it would visit outputs before their reduction starts",
                    loops[q]->loop_var->name, b->name);
          free(blocks);
          goto done;
        }
      }
    }
    for (int i = 0; i < nb; i++)
      for (int j = 0; j < blocks[i]->block->iter_vars->size; j++) {
        const tir_IterVar *iv = (const tir_IterVar *)blocks[i]->block->iter_vars->items[j];
        if (iv->iter_type != TIR_ITER_DATA_PAR && iv->iter_type != TIR_ITER_COMM_REDUCE) {
          sch_error(s, P, &blocks[i]->hdr, "this block",
                    "block '%s' has an iteration variable (%s) that is neither spatial nor reduction; its loops cannot be reordered",
                    blocks[i]->block->name, iv->var->name);
          free(blocks);
          goto done;
        }
      }
    /* affine bindings over the loops from the range down to each block */
    for (int i = 0; i < nb; i++) {
      SchPath pp;
      sch_path_to(s->func->body, &blocks[i]->hdr, &pp);
      const tir_Var **rv = calloc((size_t)pp.n + 1, sizeof *rv);
      /* affine over all the loops of its scope (TVM: the cached affine flag), else over the
       * loops from the range down (the partial check, whose error is reported) */
      int nrv = 0, from = sch_scope_index(&pp) + 1;
      for (int q = from; q < pp.n; q++)
        if (pp.nodes[q]->kind == TIR_For) rv[nrv++] = ((const tir_For *)pp.nodes[q])->loop_var;
      int bad = check_affine_under(s, P, blocks[i], rv, nrv);
      if (bad) {
        tir_error_clear();
        nrv = 0;
        for (int q = top_pos; q < pp.n; q++)
          if (pp.nodes[q]->kind == TIR_For) rv[nrv++] = ((const tir_For *)pp.nodes[q])->loop_var;
        bad = check_affine_under(s, P, blocks[i], rv, nrv);
      }
      free(rv);
      if (bad) {
        free(blocks);
        goto done;
      }
    }
    free(blocks);
  }
  /* new order: positions of the given loops, filled in the given order */
  {
    const tir_For **order = calloc((size_t)len, sizeof *order);
    int next = 0;
    for (int k = 0; k < len; k++) {
      int given = 0;
      for (int i = 0; i < n; i++)
        if (loops[i] == chain[k]) given = 1;
      order[k] = given ? loops[next++] : chain[k];
    }
    /* no loop may depend on a loop now inside it */
    for (int k = 0; k < len; k++)
      for (int m = k + 1; m < len; m++)
        if (tir_uses_var(order[k]->min, order[m]->loop_var) || tir_uses_var(order[k]->extent, order[m]->loop_var)) {
          sch_error(s, P, &order[k]->hdr, "depends on an inner loop", "the range of loop %s depends on loop %s, which would be inside it",
                    order[k]->loop_var->name, order[m]->loop_var->name);
          free(order);
          goto done;
        }
    tir_Node *body = tir_retain(chain[len - 1]->body);
    for (int k = len - 1; k >= 0; k--) {
      const tir_For *o = order[k];
      body = tir_for((tir_Var *)R(o->loop_var), R(o->min), R(o->extent), (int)o->kind, o->thread_tag,
                     (tir_Array *)R(o->annotations), body);
    }
    free(order);
    sch_replace(s, &chain[0]->hdr, body);
  }
  rc = 0;
done:
  free(loops);
  free(paths);
  free(chain);
  return rc;
}
