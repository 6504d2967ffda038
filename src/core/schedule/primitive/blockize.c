/* blockize.c -- the subtree under a loop becomes a new outer block (TVM
 * src/tir/schedule/primitive/blockize_tensorize.cc, Blockize; facts only).
 *
 *   for i0, i1 in grid(4, 16):                 for i0 in range(4):
 *     block B: vi = i0 * 16 + i1      -->        block B_o: vi_o = i0
 *       B[vi] = ...                                for i1 in range(16):
 *                                                    block B: vi_i = i1
 *                                                      B[vi_o * 16 + vi_i] = ...
 * The bindings of the block are divided (tir_subspace_divide, surjective) into a part over
 * the loops outside `loop` (the outer block's iteration variables, named <v>_o) and a part
 * over the loops from `loop` down (the inner block's, <v>_i; one of extent 1 is dropped);
 * each original variable becomes  v_o * inner_extent + v_i.  When the division fails,
 * TVM's trivial division is tried: every binding uses only outer or only inner loops.
 * The block keeps its identity (handles to it now name the inner block) but loses its
 * init: a reduction's init moves to the outer block as a loop nest over the inner spatial
 * loops around a block <name>_init.  Preconditions: exactly one block under `loop`,
 * reached through perfectly nested loops with constant ranges; a predicate of a
 * reduction's inner part may not use loops the init does not iterate over. */
#include <stdlib.h>
#include <string.h>

#include "../sched_util.h"
#include "tir/strbuf.h"

/* Substitutes vars and simplifies each integer expression that changed (TVM's Substitute
 * in blockize_tensorize.cc simplifies changed expressions with the new domains bound). */
typedef struct {
  int n;
  tir_Var *const *vars;
  tir_Node *const *vals;
  tir_Analyzer *an;
} SubstCtx;

static tir_Node *subst_fn(const tir_Node *n, void *p) {
  SubstCtx *c = p;
  if (n->kind == TIR_Buffer || n->kind == TIR_IterVar) return tir_retain(n);
  if (!tir_is_expr(n)) return NULL;
  if (!tir_uses_any_var(n, c->n, c->vars)) return tir_retain(n);
  if (n->dtype.code == TIR_DT_INT && n->dtype.lanes == 1) {
    tir_Node *s = tir_substitute(n, c->n, c->vars, c->vals);
    tir_Node *r = tir_simplify(c->an, s);
    tir_release(s);
    return r;
  }
  return NULL;
}

static tir_Node *subst_simplify(const tir_Node *root, int n, tir_Var *const *vars, tir_Node *const *vals, tir_Analyzer *an) {
  SubstCtx c = {n, vars, vals, an};
  return tir_mutate(root, subst_fn, &c);
}

static tir_Var *suffixed(const tir_Var *v, const char *suffix) {
  char *name = tir_strprintf("%s%s", v->name, suffix);
  tir_Var *r = tir_var_new(name, v->hdr.dtype);
  free(name);
  return r;
}

/* The constant part of an expression over the inner loops (its value with every inner
 * loop at its minimum), so that the inner iteration variable starts at 0. */
static tir_Node *offset_of(const tir_Node *e, const tir_For *const *loops, int n) {
  tir_Var **vars = calloc((size_t)n + 1, sizeof *vars);
  tir_Node **mins = calloc((size_t)n + 1, sizeof *mins);
  for (int i = 0; i < n; i++) {
    vars[i] = loops[i]->loop_var;
    mins[i] = loops[i]->min;
  }
  tir_Node *s = tir_substitute(e, n, vars, mins);
  tir_Node *r = tir_simplify(NULL, s);
  tir_release(s);
  free(vars);
  free(mins);
  return r;
}

/* TVM TrivialSubspaceDivision: each binding uses only outer loops or only inner loops. */
static int trivial_division(const tir_BlockRealize *br, const tir_For *const *loops, int n_loops, int first_inner,
                            tir_SubspaceDivision *d) {
  if (!tir_is_one(br->predicate)) return 0;
  int n = br->iter_values->size;
  tir_Var **outer = calloc((size_t)n_loops + 1, sizeof *outer), **inner = calloc((size_t)n_loops + 1, sizeof *inner);
  int no = 0, ni = 0;
  for (int i = 0; i < n_loops; i++) {
    if (i < first_inner) outer[no++] = loops[i]->loop_var;
    else inner[ni++] = loops[i]->loop_var;
  }
  int ok = 1;
  for (int i = 0; i < n && ok; i++) {
    const tir_Node *b = br->iter_values->items[i];
    const tir_IterVar *iv = (const tir_IterVar *)br->block->iter_vars->items[i];
    if (tir_uses_any_var(b, no, outer) && tir_uses_any_var(b, ni, inner)) ok = 0;
    if (!tir_is_const_int(iv->dom->extent, NULL) || !tir_is_zero(iv->dom->min)) ok = 0;
  }
  if (ok) {
    memset(d, 0, sizeof *d);
    d->n = n;
    d->outer = calloc((size_t)n + 1, sizeof(tir_Node *));
    d->inner = calloc((size_t)n + 1, sizeof(tir_Node *));
    d->outer_extent = calloc((size_t)n + 1, sizeof(int64_t));
    d->inner_extent = calloc((size_t)n + 1, sizeof(int64_t));
    for (int i = 0; i < n; i++) {
      const tir_Node *b = br->iter_values->items[i];
      const tir_IterVar *iv = (const tir_IterVar *)br->block->iter_vars->items[i];
      int64_t ext = 1;
      tir_is_const_int(iv->dom->extent, &ext);
      tir_DType t = b->dtype;
      if (tir_uses_any_var(b, ni, inner)) {
        d->outer[i] = tir_int_imm(t, 0);
        d->outer_extent[i] = 1;
        d->inner[i] = tir_retain(b);
        d->inner_extent[i] = ext;
      } else {
        /* outer loops only, or constant: all in the outer part */
        d->outer[i] = tir_retain(b);
        d->outer_extent[i] = ext;
        d->inner[i] = tir_int_imm(t, 0);
        d->inner_extent[i] = 1;
      }
    }
    d->outer_pred = tir_bool_imm(1);
    d->inner_pred = tir_bool_imm(1);
  }
  free(outer);
  free(inner);
  return ok;
}

int64_t tir_sched_blockize(tir_Schedule *s, const tir_Var *lv, int preserve_unit_iters) {
  const char *P = "blockize";
  SchPath pl;
  const tir_For *loop = sch_find_loop(s->func->body, lv, &pl);
  if (!loop) return tir_sched_loop(s, lv, P) ? 0 : -1;
  /* exactly one block under the loop, through a perfect loop nest */
  const tir_BlockRealize **kids;
  int nk = sch_child_blocks(&loop->hdr, &kids);
  if (nk != 1) {
    free(kids);
    return sch_error(s, P, &loop->hdr, "this loop", "loop %s must contain exactly one block to blockize, found %d", lv->name, nk);
  }
  const tir_BlockRealize *br = kids[0];
  free(kids);
  const tir_Block *blk = br->block;
  for (const tir_Node *n = &loop->hdr; n != &br->hdr;) {
    if (n->kind != TIR_For)
      return sch_error(s, P, n, "here", "the statements from loop %s down to block '%s' must be perfectly nested loops; found a %s",
                       lv->name, blk->name, tir_kind_name(n->kind));
    n = ((const tir_For *)n)->body;
  }
  SchPath pb;
  sch_find_block(s->func->body, blk->uid, &pb);
  const tir_For *loops[SCH_MAX_DEPTH];
  int n_loops = sch_loops_above(&pb, loops, SCH_MAX_DEPTH), first_inner = -1;
  for (int i = 0; i < n_loops; i++)
    if (loops[i] == loop) first_inner = i;
  if (first_inner < 0) return sch_error(s, P, &loop->hdr, "this loop", "loop %s is outside the scope of block '%s'", lv->name, blk->name);
  tir_LoopIter *iters = calloc((size_t)n_loops + 1, sizeof *iters);
  const tir_Var **inner_vars = calloc((size_t)n_loops + 1, sizeof *inner_vars);
  for (int i = 0; i < n_loops; i++) {
    if (!tir_is_const_int(loops[i]->min, &iters[i].min) || !tir_is_const_int(loops[i]->extent, &iters[i].extent)) {
      free(iters);
      free(inner_vars);
      return sch_error(s, P, &loops[i]->hdr, "this loop", "loop %s has a symbolic range; blockize needs constant loop ranges",
                       loops[i]->loop_var->name);
    }
    iters[i].var = loops[i]->loop_var;
    if (i >= first_inner) inner_vars[i - first_inner] = loops[i]->loop_var;
  }
  int nv = blk->iter_vars->size;
  tir_SubspaceDivision d;
  char why[400];
  int divided = tir_subspace_divide(NULL, (const tir_Node *const *)br->iter_values->items, nv, iters, n_loops, inner_vars,
                                    n_loops - first_inner, br->predicate, TIR_ITER_MAP_SURJECTIVE, !preserve_unit_iters, &d, why,
                                    sizeof why);
  free(iters);
  free(inner_vars);
  if (!divided && !trivial_division(br, loops, n_loops, first_inner, &d)) {
    sch_error(s, P, &br->hdr, "this block",
              "the bindings of block '%s' cannot be divided by the loops starting at %s into an outer and an inner part: %s",
              blk->name, lv->name, why);
    tir_error_mark(&loop->hdr, "from here");
    return -1;
  }
  /* the predicate must survive in the parts (unless the loop ranges imply it): a division
   * that absorbed it into the extents would run the outer block out of its domain */
  if (!tir_is_one(br->predicate) && tir_is_one(d.outer_pred) && tir_is_one(d.inner_pred)) {
    tir_Analyzer *pa = tir_analyzer_new();
    for (int i = 0; i < n_loops; i++) tir_analyzer_bind_range(pa, loops[i]->loop_var, loops[i]->min, loops[i]->extent);
    int implied = tir_can_prove(pa, br->predicate);
    tir_analyzer_free(pa);
    if (!implied) {
      tir_subspace_division_free(&d);
      return sch_error(s, P, &br->hdr, "this block",
                       "the predicate of block '%s' would be lost: the division of its bindings by the loops from %s "
                       "does not keep it on the outer or the inner part",
                       blk->name, lv->name);
    }
  }
  /* the outer and inner iteration variables; each old variable's substitution */
  int64_t rc = -1;
  tir_Var **old = calloc((size_t)nv + 1, sizeof *old);
  tir_Node **sub = calloc((size_t)nv + 1, sizeof *sub);
  tir_Array *o_ivs = tir_array_new(nv), *o_vals = tir_array_new(nv), *i_ivs = tir_array_empty(), *i_vals = tir_array_empty();
  tir_Analyzer *an = tir_analyzer_new();
  for (int i = 0; i < nv; i++) {
    const tir_IterVar *iv = (const tir_IterVar *)blk->iter_vars->items[i];
    tir_DType t = iv->var->hdr.dtype;
    old[i] = iv->var;
    tir_Var *ov = suffixed(iv->var, "_o");
    o_ivs->items[i] = &tir_iter_var((tir_Var *)R(ov), tir_range(tir_int_imm(t, 0), tir_int_imm(t, d.outer_extent[i])),
                                    (int)iv->iter_type, iv->thread_tag)->hdr;
    o_vals->items[i] = tir_retain(d.outer[i]);
    tir_analyzer_bind_bound(an, ov, 0, d.outer_extent[i] - 1);
    /* v = v_o * inner_extent + v_i (TVM DeriveBlockBinding): an outer part of extent 1 is
     * 0, an inner part of extent 1 is a constant (the binding's offset) */
    tir_Node *e;
    /* an inner part of extent 1 that still names an inner loop (of extent 1, kept when
     * preserving unit iterators) needs its own iteration variable: inlined, the loop
     * variable would appear inside the block */
    int names_inner = 0;
    for (int l = first_inner; l < n_loops && !names_inner; l++) names_inner = tir_uses_var(d.inner[i], loops[l]->loop_var);
    if (d.inner_extent[i] == 1 && !names_inner) {
      tir_Node *o = (d.outer_extent[i] == 1 && !preserve_unit_iters) ? tir_int_imm(t, 0) : tir_retain(&ov->hdr);
      e = tir_add(o, tir_retain(d.inner[i]));
    } else {
      tir_Var *inv = suffixed(iv->var, "_i");
      tir_Node *off = offset_of(d.inner[i], loops + first_inner, n_loops - first_inner);
      tir_Node *val = tir_sub(tir_retain(d.inner[i]), tir_retain(off));
      i_ivs = tir_array_push(i_ivs, &tir_iter_var((tir_Var *)R(inv), tir_range(tir_int_imm(t, 0), tir_int_imm(t, d.inner_extent[i])),
                                                  (int)iv->iter_type, iv->thread_tag)->hdr);
      i_vals = tir_array_push(i_vals, tir_simplify(NULL, val));
      tir_release(val);
      tir_analyzer_bind_bound(an, inv, 0, d.inner_extent[i] - 1);
      e = tir_add(&inv->hdr, off);
      if (d.outer_extent[i] != 1) e = tir_add(tir_mul(tir_retain(&ov->hdr), tir_int_imm(t, d.inner_extent[i])), e);
    }
    tir_release(ov);
    sub[i] = tir_simplify(an, e);
    tir_release(e);
  }
  tir_Node *blk_sub = subst_simplify(&blk->hdr, nv, old, sub, an);
  const tir_Block *bs = (const tir_Block *)blk_sub;
  /* the inner block: same identity, inner iteration variables, no init */
  tir_Block *ib = (tir_Block *)tir_node_copy(blk_sub);
  tir_release(ib->iter_vars);
  ib->iter_vars = (tir_Array *)R(i_ivs);
  tir_release(ib->init);
  ib->init = NULL;
  tir_Block *ibd = tir_block_with_detected_access(ib);
  tir_release(ib);
  tir_Node *inner_realize = tir_block_realize((tir_Array *)R(i_vals), R(d.inner_pred), ibd);
  tir_Node *nest = R(inner_realize);
  for (int i = n_loops - 1; i >= first_inner; i--) {
    const tir_For *f = loops[i];
    nest = tir_for((tir_Var *)R(f->loop_var), R(f->min), R(f->extent), (int)f->kind, f->thread_tag, (tir_Array *)R(f->annotations),
                   nest);
  }
  /* the outer init (TVM GenerateOuterInit) */
  tir_Node *init = NULL;
  if (bs->init) {
    const tir_Block *ibl = ((const tir_BlockRealize *)inner_realize)->block;
    tir_Array *ivs = tir_array_empty(), *vals = tir_array_empty();
    int ni = ibl->iter_vars->size, nused = 0;
    tir_Var **iold = calloc((size_t)ni + 1, sizeof *iold);
    tir_Node **inew = calloc((size_t)ni + 1, sizeof *inew);
    for (int i = 0; i < ni; i++) {
      const tir_IterVar *iv = (const tir_IterVar *)ibl->iter_vars->items[i];
      if (iv->iter_type != TIR_ITER_DATA_PAR || !tir_uses_var(bs->init, iv->var)) continue;
      tir_Var *nvv = suffixed(iv->var, "_init");
      iold[nused] = iv->var;
      inew[nused++] = &nvv->hdr;
      ivs = tir_array_push(ivs, &tir_iter_var((tir_Var *)R(nvv), (tir_Range *)R(iv->dom), TIR_ITER_DATA_PAR, "")->hdr);
      vals = tir_array_push(vals, tir_retain(((const tir_BlockRealize *)inner_realize)->iter_values->items[i]));
    }
    tir_Node *ibody = tir_substitute(bs->init, nused, iold, inew);
    for (int i = 0; i < nused; i++) tir_release(inew[i]);
    free(iold);
    free(inew);
    /* loops of the init: the inner loops its bindings use, with fresh variables; a
     * predicate on other inner loops (reduction loops) would be lost there */
    int nin = n_loops - first_inner, nl = 0;
    tir_Var **lold = calloc((size_t)nin + 1, sizeof *lold);
    tir_Node **lnew = calloc((size_t)nin + 1, sizeof *lnew);
    const tir_For **lsrc = calloc((size_t)nin + 1, sizeof *lsrc);
    for (int i = first_inner; i < n_loops; i++)
      if (tir_uses_any_var(&vals->hdr, 1, (tir_Var **)&loops[i]->loop_var)) {
        lold[nl] = loops[i]->loop_var;
        lsrc[nl] = loops[i];
        lnew[nl++] = &suffixed(loops[i]->loop_var, "")->hdr;
      }
    int pred_ok = 1;
    for (int i = first_inner; i < n_loops && pred_ok; i++) {
      int kept = 0;
      for (int k = 0; k < nl; k++) kept |= lold[k] == loops[i]->loop_var;
      if (!kept && tir_uses_var(d.inner_pred, loops[i]->loop_var)) pred_ok = 0;
    }
    if (!pred_ok) {
      for (int i = 0; i < nl; i++) tir_release(lnew[i]);
      free(lold), free(lnew), free(lsrc);
      tir_release(ibody), tir_release(ivs), tir_release(vals);
      sch_error(s, P, &br->hdr, "this block",
                "the predicate of block '%s' uses an inner loop that its init does not iterate over (a reduction loop); "
                "blockize would lose it for the init",
                blk->name);
      goto done;
    }
    char *iname = tir_strprintf("%s_init", blk->name);
    char *uname = sch_unique_name(s->func, iname);
    free(iname);
    tir_Block *nb = tir_block_new(uname, ivs, NULL, NULL, NULL, NULL, NULL, NULL, ibody);
    free(uname);
    tir_Block *nbd = tir_block_with_detected_access(nb);
    tir_release(nb);
    tir_Node *vals2 = tir_substitute(&vals->hdr, nl, lold, lnew);
    tir_Node *pred2 = tir_substitute(d.inner_pred, nl, lold, lnew);
    tir_release(vals);
    init = tir_block_realize((tir_Array *)vals2, pred2, nbd);
    for (int k = nl - 1; k >= 0; k--) {
      const tir_For *f = lsrc[k];
      init = tir_for((tir_Var *)lnew[k], R(f->min), R(f->extent), (int)f->kind, f->thread_tag, (tir_Array *)R(f->annotations), init);
    }
    free(lold), free(lnew), free(lsrc);
  }
  /* (TVM adds the writes to the inner block's reads when an outer variable reduces; here
   * the reads are detected from the body, which reads the output of a reduction) */
  {
    char *oname = tir_strprintf("%s_o", blk->name);
    char *uname = sch_unique_name(s->func, oname);
    free(oname);
    tir_Block *ob = tir_block_new(uname, (tir_Array *)R(o_ivs), NULL, NULL, init, NULL, NULL, NULL, nest);
    nest = NULL;
    init = NULL;
    free(uname);
    tir_Block *obd = tir_block_with_detected_access(ob);
    tir_release(ob);
    rc = obd->uid;
    tir_Node *outer_realize = tir_block_realize((tir_Array *)R(o_vals), R(d.outer_pred), obd);
    sch_replace(s, &loop->hdr, outer_realize);
  }
done:
  tir_release(nest);
  tir_release(init);
  tir_release(inner_realize);
  tir_release(blk_sub);
  for (int i = 0; i < nv; i++) tir_release(sub[i]);
  free(old);
  free(sub);
  tir_release(o_ivs), tir_release(o_vals), tir_release(i_ivs), tir_release(i_vals);
  tir_analyzer_free(an);
  tir_subspace_division_free(&d);
  return rc;
}

/* ---- blockize of a list of blocks (TVM Blockize(blocks), BlockizeBlocks) ----
 *
 *   for m in range(6):                        for m in range(6):
 *     for i, j: block B (vm = m, ...)  -->      block outer_B_C_: vm = m
 *     for i, j: block C (vm = m, ...)             for i, j: block B (vm_i = vm, ...)
 *                                                 for i, j: block C (vm_i = vm, ...)
 * The blocks' lowest common ancestor (a loop or a block) holds them in consecutive items of
 * its body, each item a perfect loop nest around one of them; those items become the body of
 * a new block "outer_<names>_".  Its iteration variables stand for the loops between the
 * enclosing scope and the ancestor that the blocks' bindings use (named v<loop>, of the kind
 * of the iteration variables bound through them), and the blocks bind them instead of the
 * loops (a unit loop becomes its minimum unless preserve_unit_iters).  As in TVM, an outer
 * variable may not be a reduction when a block has an init. */
typedef struct {
  const tir_BlockRealize *br;
  SchPath *path;
  int item; /* index in the ancestor's body sequence */
} Target;

static int item_cmp(const void *a, const void *b) { return ((const Target *)a)->item - ((const Target *)b)->item; }

int64_t tir_sched_blockize_blocks(tir_Schedule *s, const int64_t *uids, int n, int preserve_unit_iters) {
  const char *P = "blockize";
  if (n < 1) return sch_error(s, P, s->func->body, "the function", "blockize needs at least one block");
  Target *t = calloc((size_t)n, sizeof *t);
  int64_t rc = -1;
  for (int i = 0; i < n; i++) t[i].path = malloc(sizeof(SchPath));
  for (int i = 0; i < n; i++) {
    t[i].br = sch_find_block(s->func->body, uids[i], t[i].path);
    if (!t[i].br) {
      tir_sched_block_realize(s, uids[i], P);
      goto out;
    }
    for (int k = 0; k < i; k++)
      if (uids[k] == uids[i]) {
        sch_error(s, P, &t[i].br->hdr, "this block", "block '%s' is given twice", t[i].br->block->name);
        goto out;
      }
  }
  /* the lowest common ancestor: the deepest loop or block on every path */
  int common = t[0].path->n;
  for (int i = 1; i < n; i++) {
    int c = 0;
    while (c < common && c < t[i].path->n && t[i].path->nodes[c] == t[0].path->nodes[c]) c++;
    common = c;
  }
  int lca = -1;
  for (int k = common - 1; k >= 0 && lca < 0; k--) {
    int kind = t[0].path->nodes[k]->kind;
    if (kind == TIR_For || kind == TIR_Block) lca = k;
    if (kind == TIR_BlockRealize && k == t[0].path->n - 1) break; /* a target is the ancestor */
  }
  for (int i = 0; i < n && lca >= 0; i++)
    if (t[i].path->n <= lca + 2) lca = -1; /* a target at or right under the ancestor */
  if (lca < 0) {
    sch_error(s, P, &t[0].br->hdr, "this block", "the blocks must not be nested in one another (block '%s')", t[0].br->block->name);
    goto out;
  }
  const tir_Node *anc = t[0].path->nodes[lca], *seq = t[0].path->nodes[lca + 1];
  if (seq->kind != TIR_SeqStmt || (anc->kind == TIR_Block && seq != ((const tir_Block *)anc)->body)) {
    sch_error(s, P, anc, "their common ancestor",
              "the blocks must be in consecutive statements of one sequence under their common ancestor; found a %s there",
              tir_kind_name(seq->kind));
    goto out;
  }
  const tir_Array *items = ((const tir_SeqStmt *)seq)->seq;
  for (int i = 0; i < n; i++) {
    const tir_Node *it = t[i].path->nodes[lca + 2];
    t[i].item = -1;
    for (int k = 0; k < items->size; k++)
      if (items->items[k] == it) t[i].item = k;
    /* the item is a perfect loop nest around the block */
    for (const tir_Node *x = it; x != &t[i].br->hdr;) {
      if (x->kind != TIR_For) {
        sch_error(s, P, x, "here",
                  "each block must be alone under perfectly nested loops in its statement of the sequence; above block '%s' "
                  "there is a %s",
                  t[i].br->block->name, tir_kind_name(x->kind));
        goto out;
      }
      x = ((const tir_For *)x)->body;
    }
  }
  qsort(t, (size_t)n, sizeof *t, item_cmp);
  for (int i = 1; i < n; i++)
    if (t[i].item != t[i - 1].item + 1) {
      sch_error(s, P, items->items[t[i - 1].item + 1], "this statement",
                "the blocks must be consecutive statements under their common ancestor; this one, between block '%s' and "
                "block '%s', is not one of them",
                t[i - 1].br->block->name, t[i].br->block->name);
      goto out;
    }
  {
    /* the loops between the scope block and the ancestor (inclusive) */
    int scope = -1;
    for (int k = lca; k >= 0 && scope < 0; k--)
      if (t[0].path->nodes[k]->kind == TIR_Block) scope = k;
    const tir_For *outer[SCH_MAX_DEPTH];
    int no = 0;
    for (int k = scope + 1; k <= lca; k++)
      if (t[0].path->nodes[k]->kind == TIR_For) outer[no++] = (const tir_For *)t[0].path->nodes[k];
    tir_Var **lv = calloc((size_t)no + 1, sizeof *lv);
    tir_Node **repl = calloc((size_t)no + 1, sizeof *repl);
    tir_Array *o_ivs = tir_array_empty(), *o_vals = tir_array_empty();
    int nr = 0, ok = 1;
    for (int k = 0; k < no && ok; k++) {
      const tir_For *l = outer[k];
      int type = -1, used = 0, has_init = 0;
      for (int i = 0; i < n; i++) {
        const tir_BlockRealize *br = t[i].br;
        if (tir_uses_var(br->predicate, l->loop_var)) used = 1;
        for (int v = 0; v < br->iter_values->size; v++) {
          if (!tir_uses_var(br->iter_values->items[v], l->loop_var)) continue;
          int ty = (int)((const tir_IterVar *)br->block->iter_vars->items[v])->iter_type;
          used = 1;
          /* the outer variable's kind: a reduction wins, then opaque, then spatial */
          if (type < 0 || ty == TIR_ITER_COMM_REDUCE || (ty == TIR_ITER_OPAQUE && type == TIR_ITER_DATA_PAR)) type = ty;
          if (br->block->init) has_init = 1;
        }
      }
      if (!used) continue;
      if (type < 0) type = TIR_ITER_DATA_PAR;
      if (type == TIR_ITER_COMM_REDUCE && has_init) {
        sch_error(s, P, &l->hdr, "this loop",
                  "loop %s is bound to a reduction variable of a block with an init; blockize of several blocks needs the "
                  "outer loops to be spatial (TVM: no reduction iter vars allowed for the outer loops)",
                  l->loop_var->name);
        ok = 0;
        break;
      }
      lv[nr] = l->loop_var;
      if (!preserve_unit_iters && tir_is_one(l->extent)) {
        repl[nr++] = tir_retain(l->min);
        continue;
      }
      char *name = tir_strprintf("v%s", l->loop_var->name);
      tir_Var *ov = tir_var_new(name, l->loop_var->hdr.dtype);
      free(name);
      o_ivs = tir_array_push(o_ivs, &tir_iter_var((tir_Var *)R(ov), tir_range(R(l->min), R(l->extent)), type, "")->hdr);
      o_vals = tir_array_push(o_vals, tir_retain(&l->loop_var->hdr));
      repl[nr++] = &ov->hdr;
    }
    if (ok) {
      tir_StrBuf name;
      tir_sb_init(&name);
      tir_sb_printf(&name, "outer_");
      tir_Array *body_items = tir_array_new(n);
      for (int i = 0; i < n; i++) {
        tir_sb_printf(&name, "%s_", t[i].br->block->name);
        body_items->items[i] = tir_substitute(items->items[t[i].item], nr, lv, repl);
      }
      char *uname = sch_unique_name(s->func, name.data);
      tir_sb_free(&name);
      tir_Node *obody = n == 1 ? R(body_items->items[0]) : tir_seq((tir_Array *)R(body_items));
      tir_release(body_items);
      tir_Block *ob = tir_block_new(uname, (tir_Array *)R(o_ivs), NULL, NULL, NULL, NULL, NULL, NULL, obody);
      free(uname);
      tir_Block *obd = tir_block_with_detected_access(ob);
      tir_release(ob);
      rc = obd->uid;
      tir_Node *orealize = tir_block_realize((tir_Array *)R(o_vals), tir_bool_imm(1), obd);
      /* the sequence with the blocks' statements replaced by the new block */
      tir_Array *nseq = tir_array_empty();
      for (int k = 0; k < items->size; k++) {
        if (k == t[0].item) nseq = tir_array_push(nseq, orealize);
        else if (k < t[0].item || k > t[n - 1].item) nseq = tir_array_push(nseq, tir_retain(items->items[k]));
      }
      tir_Node *nbody = nseq->size == 1 ? R(nseq->items[0]) : tir_seq((tir_Array *)R(nseq));
      tir_release(nseq);
      sch_replace(s, seq, nbody);
    }
    for (int k = 0; k < nr; k++) tir_release(repl[k]);
    free(lv);
    free(repl);
    tir_release(o_ivs);
    tir_release(o_vals);
  }
out:
  for (int i = 0; i < n; i++) free(t[i].path);
  free(t);
  return rc;
}
