/* transform_block_layout.c -- remap a block's iteration space with an index map (TVM
 * src/tir/schedule/primitive/layout_transformation.cc, TransformBlockLayout; facts only).
 *
 *   for i, j in grid(128, 128):                   for ax0 in range(16384):
 *     block B: vi, vj = remap("SS", i, j)   -->      block B: v0 = ax0
 *       B[vi, vj] = A[vi, vj] * 2                       B[v0 // 128, v0 % 128] = A[v0 // 128, v0 % 128] * 2
 * with the map (i, j) -> (i * 128 + j).  The map f takes the block's iteration variables to
 * new ones; the block gets one iteration variable v_k per output (domain [0, extent of
 * output k)), one new serial loop ax_k per output binds it, and every old variable in the
 * block (body, init, regions) becomes its value under f's inverse.  A new variable's kind is
 * that of the old variables it uses (data-parallel when its extent is 1); one mixing spatial
 * and reduction variables has no kind and is refused.
 *
 * Preconditions (TVM's, each a ScheduleError naming the rule): every loop above the block in
 * its scope starts at 0; the outermost has the block as its only child block; the bindings
 * are trivial (binding k is loop k's variable); the map takes one index per iteration
 * variable; it is a bijective affine map of the iteration domain (tir_iter_map_inverse).
 * Stricter than TVM, whose result is wrong or crashes there: the loops are perfectly
 * nested (TVM would drop statements between them), serial and without annotations (the
 * new loops are serial; a thread binding would be lost), the block has no predicate (TVM
 * keeps it, over loop variables that no longer exist), loop extents equal the domains,
 * every output starts at 0 (TVM's MapShape asserts it), extents are constants and the
 * iteration variables share one dtype. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sched_util.h"
#include "tir/strbuf.h"

static const char *P = "transform_block_layout";

static const char *iter_type_name(int t) {
  switch (t) {
    case TIR_ITER_DATA_PAR: return "spatial";
    case TIR_ITER_COMM_REDUCE: return "reduction";
    case TIR_ITER_ORDERED: return "ordered";
    case TIR_ITER_THREAD_INDEX: return "thread index";
    default: return "opaque";
  }
}

/* "(i, j) -> (i * 128 + j)" (malloc'd) */
static char *map_text(const tir_Array *vars, const tir_Array *exprs) {
  tir_StrBuf sb;
  tir_sb_init(&sb);
  tir_sb_printf(&sb, "(");
  for (int i = 0; i < vars->size; i++) tir_sb_printf(&sb, "%s%s", i ? ", " : "", ((const tir_Var *)vars->items[i])->name);
  tir_sb_printf(&sb, ") -> (");
  for (int o = 0; o < exprs->size; o++) {
    char *e = tir_print_expr(exprs->items[o]);
    tir_sb_printf(&sb, "%s%s", o ? ", " : "", e ? e : "?");
    free(e);
  }
  tir_sb_printf(&sb, ")");
  return tir_sb_take(&sb);
}

static int has_load_fn(const tir_Node *n, void *p) {
  if (n->kind == TIR_BufferLoad) *(int *)p = 1;
  return *(int *)p;
}

/* Old iteration variables -> their inverse; integer expressions that change are simplified
 * with the new variables' domains (TVM simplifies the block's accesses likewise).  Loads are
 * recursed into rather than simplified whole, so their indices are simplified too. */
typedef struct {
  int n;
  tir_Var *const *vars;
  tir_Node *const *vals;
  tir_Analyzer *an;
} Subst;

static tir_Node *subst_fn(const tir_Node *n, void *p) {
  Subst *c = p;
  if (n->kind == TIR_Buffer || n->kind == TIR_IterVar) return tir_retain(n);
  if (!tir_is_expr(n)) return NULL;
  if (!tir_uses_any_var(n, c->n, c->vars)) return tir_retain(n);
  int has_load = 0;
  tir_visit(n, has_load_fn, &has_load);
  if (has_load || n->dtype.code != TIR_DT_INT || n->dtype.lanes != 1) return NULL;
  tir_Node *s = tir_substitute(n, c->n, c->vars, c->vals);
  tir_Node *r = tir_simplify(c->an, s);
  tir_release(s);
  return r;
}

int tir_sched_transform_block_layout(tir_Schedule *s, int64_t uid, const tir_Array *vars, const tir_Array *exprs) {
  const tir_BlockRealize *br = tir_sched_block_realize(s, uid, P);
  if (!br) return -1;
  const tir_Block *blk = br->block;
  int n_iter = blk->iter_vars->size, n_out = exprs->size;
  if (n_iter == 0)
    return sch_error(s, P, &br->hdr, "this block", "block '%s' has no iteration variables: there is no iteration space to remap",
                     blk->name);
  if (n_out == 0) return sch_error(s, P, &br->hdr, "this block", "the index map returns no indices");
  SchPath path;
  if (!sch_path_to(s->func->body, &br->hdr, &path))
    return sch_error(s, P, &br->hdr, "this block", "block '%s' was not found in the function", blk->name);
  const tir_For **loops = calloc(SCH_MAX_DEPTH, sizeof *loops);
  int nl = sch_loops_above(&path, loops, SCH_MAX_DEPTH), rc = -1;
  tir_LoopIter *it = calloc((size_t)n_iter + 1, sizeof *it);
  tir_Var **nv = calloc((size_t)n_out + 1, sizeof *nv);
  int64_t *omin = calloc((size_t)n_out + 1, sizeof *omin), *oext = calloc((size_t)n_out + 1, sizeof *oext);
  int *otype = calloc((size_t)n_out + 1, sizeof *otype);
  tir_Node **inv = calloc((size_t)n_iter + 1, sizeof *inv);
  char why[400];

  /* the loops: start at 0 (TVM CheckLoopStartsWithZero), serial, perfectly nested, and the
   * outermost holds only this block (TVM CheckGetSingleChildBlockRealizeOnSRefTree) */
  for (int k = 0; k < nl; k++)
    if (!tir_is_zero(loops[k]->min)) {
      char *m = tir_print_expr(loops[k]->min);
      sch_error(s, P, &loops[k]->hdr, "this loop", "loop %s starts at %s; transform_block_layout only supports loops starting at 0",
                loops[k]->loop_var->name, m ? m : "?");
      free(m);
      goto done;
    }
  if (nl > 0) {
    const tir_BlockRealize **kids;
    int nk = sch_child_blocks(&loops[0]->hdr, &kids);
    free(kids);
    if (nk != 1) {
      sch_error(s, P, &loops[0]->hdr, "this loop",
                "loop %s, the outermost loop above block '%s', must have only one child block, but holds %d", loops[0]->loop_var->name,
                blk->name, nk);
      goto done;
    }
  }
  for (int k = 0; k < nl; k++) {
    const tir_Node *below = k + 1 < nl ? &loops[k + 1]->hdr : &br->hdr;
    if (loops[k]->body != below) {
      sch_error(s, P, loops[k]->body, "here",
                "the loops above block '%s' must be perfectly nested, but the body of loop %s is a %s (it would be lost when the "
                "loops are rebuilt)",
                blk->name, loops[k]->loop_var->name, tir_kind_name(loops[k]->body->kind));
      goto done;
    }
    if (loops[k]->kind != TIR_FOR_SERIAL || (loops[k]->annotations && loops[k]->annotations->size > 0)) {
      sch_error(s, P, &loops[k]->hdr, "this loop",
                "loop %s is %s; transform_block_layout rebuilds the loops as plain serial loops and would drop that. Apply it "
                "before bind/unroll/vectorize/parallel/annotate",
                loops[k]->loop_var->name, loops[k]->kind != TIR_FOR_SERIAL ? "not serial (bound, unrolled, vectorized or parallel)" : "annotated");
      goto done;
    }
  }
  /* trivial bindings (TVM CheckBlockHasTrivialBinding): binding k is loop k's variable */
  if (nl != n_iter) {
    sch_error(s, P, &br->hdr, "this block",
              "the bindings of block '%s' must be the variables of its outer loops, one loop per iteration variable (not "
              "a trivial binding): it has %d iteration variable(s) under %d loop(s)",
              blk->name, n_iter, nl);
    goto done;
  }
  for (int k = 0; k < n_iter; k++)
    if (br->iter_values->items[k] != &loops[k]->loop_var->hdr) {
      char *b = tir_print_expr(br->iter_values->items[k]);
      sch_error(s, P, &br->hdr, "this block",
                "the bindings of block '%s' must be the variables of its outer loops in order (not a trivial binding): "
                "iteration variable %s is bound to %s, not to loop %s",
                blk->name, ((const tir_IterVar *)blk->iter_vars->items[k])->var->name, b ? b : "?", loops[k]->loop_var->name);
      free(b);
      goto done;
    }
  if (!tir_is_one(br->predicate)) {
    sch_error(s, P, &br->hdr, "this block",
              "block '%s' has a predicate (T.where); it is written over the loops that transform_block_layout replaces", blk->name);
    goto done;
  }
  /* domains: [0, extent) with constant extents equal to the loops' */
  tir_DType dt = ((const tir_IterVar *)blk->iter_vars->items[0])->var->hdr.dtype;
  for (int k = 0; k < n_iter; k++) {
    const tir_IterVar *iv = (const tir_IterVar *)blk->iter_vars->items[k];
    int64_t e, le;
    if (!tir_is_zero(iv->dom->min) || !tir_is_const_int(iv->dom->extent, &e) || e <= 0) {
      sch_error(s, P, &br->hdr, "this block",
                "iteration variable %s of block '%s' must have a domain [0, n) with a constant n; transform_block_layout "
                "needs constant extents",
                iv->var->name, blk->name);
      goto done;
    }
    if (!tir_is_const_int(loops[k]->extent, &le) || le != e) {
      sch_error(s, P, &loops[k]->hdr, "this loop", "loop %s does not run over the whole domain of iteration variable %s (extent %lld)",
                loops[k]->loop_var->name, iv->var->name, (long long)e);
      goto done;
    }
    if (iv->var->hdr.dtype.bits != dt.bits || iv->var->hdr.dtype.code != dt.code) {
      sch_error(s, P, &br->hdr, "this block", "the iteration variables of block '%s' have different dtypes (%s and %s)", blk->name,
                ((const tir_IterVar *)blk->iter_vars->items[0])->var->name, iv->var->name);
      goto done;
    }
    it[k].extent = e;
  }
  /* the map (TVM IndexMapNotApplicableToBlockIterError) */
  if (vars->size != n_iter) {
    sch_error(s, P, &br->hdr, "this block",
              "the index map takes %d index(es), but block '%s' has %d iteration variable(s): it cannot be applied to them",
              vars->size, blk->name, n_iter);
    goto done;
  }
  for (int k = 0; k < n_iter; k++) {
    if (vars->items[k]->kind != TIR_Var || vars->items[k]->dtype.bits != dt.bits) {
      sch_error(s, P, &br->hdr, "this block", "index map input %d must be a variable of the iteration variables' dtype", k);
      goto done;
    }
    it[k].var = (const tir_Var *)vars->items[k];
  }
  for (int o = 0; o < n_out; o++) {
    char name[32];
    snprintf(name, sizeof name, "v%d", o);
    nv[o] = tir_var_new(name, dt);
  }
  /* bijective affine (TVM NotBijectiveAffineIndexMapError), outputs from 0 */
  if (!tir_iter_map_inverse((const tir_Node *const *)exprs->items, n_out, it, n_iter, (const tir_Var *const *)nv, omin, oext,
                            inv, why, sizeof why)) {
    char *m = map_text(vars, exprs);
    sch_error(s, P, &br->hdr, "this block", "the index map %s is not a bijective affine map of the iteration domain of block '%s': %s",
              m ? m : "?", blk->name, why);
    free(m);
    goto done;
  }
  for (int o = 0; o < n_out; o++)
    if (omin[o] != 0) {
      char *m = map_text(vars, exprs);
      sch_error(s, P, &br->hdr, "this block", "output %d of the index map %s ranges over [%lld, %lld); new iteration variables start at 0",
                o, m ? m : "?", (long long)omin[o], (long long)(omin[o] + oext[o]));
      free(m);
      goto done;
    }
  /* kinds of the new variables (TVM DetectNewBlockIterType, OpaqueNewIterTypeError) */
  for (int o = 0; o < n_out; o++) {
    int t = -1, first = -1, clash = -1;
    if (oext[o] == 1) {
      otype[o] = TIR_ITER_DATA_PAR;
      continue;
    }
    for (int k = 0; k < n_iter; k++) {
      if (!tir_uses_var(exprs->items[o], it[k].var)) continue;
      int tk = ((const tir_IterVar *)blk->iter_vars->items[k])->iter_type;
      if (t < 0) {
        t = tk;
        first = k;
      } else if (tk != t && clash < 0) {
        clash = k;
      }
    }
    if (clash >= 0 || t < 0 || t == TIR_ITER_OPAQUE) {
      char *e = tir_print_expr(exprs->items[o]);
      if (clash >= 0) {
        const tir_IterVar *a = (const tir_IterVar *)blk->iter_vars->items[first], *b = (const tir_IterVar *)blk->iter_vars->items[clash];
        sch_error(s, P, &br->hdr, "this block",
                  "output %d of the index map (%s) uses iteration variables of different kinds (%s is %s, %s is %s): the kind "
                  "of the new iteration variable cannot be chosen",
                  o, e ? e : "?", it[first].var->name, iter_type_name(a->iter_type), it[clash].var->name,
                  iter_type_name(b->iter_type));
      } else {
        sch_error(s, P, &br->hdr, "this block", "output %d of the index map (%s) has no kind: it uses only opaque iteration variables",
                  o, e ? e : "?");
      }
      free(e);
      goto done;
    }
    otype[o] = t;
  }

  /* the new block: new iteration variables, old ones replaced by the inverse */
  {
    tir_Block *nb = (tir_Block *)tir_node_copy(&blk->hdr);
    tir_release(nb->iter_vars);
    nb->iter_vars = tir_array_new(n_out);
    for (int o = 0; o < n_out; o++)
      nb->iter_vars->items[o] =
          &tir_iter_var((tir_Var *)R(&nv[o]->hdr), tir_range(tir_int_imm(dt, 0), tir_int_imm(dt, oext[o])), otype[o], "")->hdr;
    tir_Var **old = calloc((size_t)n_iter + 1, sizeof *old);
    for (int k = 0; k < n_iter; k++) old[k] = ((const tir_IterVar *)blk->iter_vars->items[k])->var;
    tir_Analyzer *an = tir_analyzer_new();
    for (int o = 0; o < n_out; o++) tir_analyzer_bind_bound(an, nv[o], 0, oext[o] - 1);
    Subst sc = {n_iter, old, inv, an};
    tir_Node *block = tir_mutate(&nb->hdr, subst_fn, &sc);
    tir_analyzer_free(an);
    free(old);
    tir_release(nb);
    if (!block) {
      sch_error(s, P, &br->hdr, "this block", "rewriting block '%s' failed", blk->name);
      goto done;
    }
    tir_Array *bind = tir_array_new(n_out);
    tir_Var **ax = calloc((size_t)n_out + 1, sizeof *ax);
    for (int o = 0; o < n_out; o++) {
      char name[32];
      snprintf(name, sizeof name, "ax%d", o);
      ax[o] = tir_var_new(name, dt);
      bind->items[o] = R(&ax[o]->hdr);
    }
    tir_Node *stmt = tir_block_realize(bind, tir_bool_imm(1), (tir_Block *)block);
    for (int o = n_out - 1; o >= 0; o--) stmt = tir_for(ax[o], tir_int_imm(dt, 0), tir_int_imm(dt, oext[o]), TIR_FOR_SERIAL, "", NULL, stmt);
    free(ax);
    sch_replace(s, &loops[0]->hdr, stmt);
  }
  rc = 0;
done:
  for (int k = 0; k < n_iter; k++) tir_release(inv[k]);
  for (int o = 0; o < n_out; o++) tir_release(nv[o]);
  free(inv);
  free(nv);
  free(omin);
  free(oext);
  free(otype);
  free(it);
  free(loops);
  return rc;
}
