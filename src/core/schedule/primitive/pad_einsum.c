/* pad_einsum.c -- pad an einsum block's iteration domain to multiples of given factors (TVM
 * src/tir/schedule/primitive/pad_einsum.cc, PadEinsum; facts only).
 *
 *   for i, j, k in grid(127, 127, 127):         pad_einsum(C, {16, 16, 16})
 *     block C: C[vi, vj] += A[vi, vk] * B[vk, vj]
 * becomes
 *   for i, k in grid(128, 128): block A_pad: A_pad[v0, v1] = if_then_else(v0 < 127 and v1 < 127, A[v0, v1], 0)
 *   for k, j in grid(128, 128): block B_pad: ...
 *   for i, j, k in grid(128, 128, 128): block C: C_pad[vi, vj] += A_pad[vi, vk] * B_pad[vk, vj]
 *   for i, j in grid(127, 127): block C_pad_unpad: C[v0, v1] = C_pad[v0, v1]
 * Each extent becomes the next multiple of its factor (127 -> 128 with 16, 132 -> 144).  Every
 * buffer the block accesses at a padded variable gets a padded copy "<buf>_pad" (the block's
 * shape of the dimensions it indexes by variables, the buffer's own elsewhere): an input is
 * copied in with zeros outside the original domain by a new block before the block's nest,
 * the output is copied back over the original domain by a new block after it.
 *
 * Preconditions (each a ScheduleError naming the rule): one padding factor (>= 1) per
 * iteration variable and at least one extent that changes; a leaf block writing one buffer,
 * the only block under perfectly nested serial loops from 0 in its scope whose extents are
 * the domains and whose variables are the bindings, in order, without a predicate (TVM:
 * trivial bindings); every index of every access is an iteration variable or a constant (the
 * einsum pattern), one index list per buffer; a padded reduction variable needs the update
 * C = C + e with e a product (casts allowed) one of whose factors is loaded from a buffer
 * indexed by that variable, so the padding adds zeros; a block reading its output needs an
 * init.  Differences from TVM (docs/ARCHITECTURE.md): the new blocks are returned (TVM
 * returns nothing) and TVM pads the producer stages in place where tirlua adds copies. */
#include <stdlib.h>
#include <string.h>

#include "../sched_util.h"
#include "tir/strbuf.h"

static const char *P = "pad_einsum";

#define PE_MAX_BUFS 32

typedef struct {
  const tir_Buffer *buf;
  const tir_Array *indices; /* first access (borrowed) */
  tir_Buffer *padded;       /* owned; NULL when it keeps its shape */
} PeBuf;

typedef struct {
  const tir_Block *blk;
  PeBuf bufs[PE_MAX_BUFS];
  int n;
  const tir_Node *bad;      /* an access that breaks the rules */
  const char *why;
} PeCollect;

static int iv_index(const tir_Block *blk, const tir_Node *e) {
  for (int q = 0; q < blk->iter_vars->size; q++)
    if (e == &((const tir_IterVar *)blk->iter_vars->items[q])->var->hdr) return q;
  return -1;
}

static int collect_fn(const tir_Node *n, void *p) {
  PeCollect *c = p;
  const tir_Buffer *buf = NULL;
  const tir_Array *idx = NULL;
  if (n->kind == TIR_BufferLoad) buf = ((const tir_BufferLoad *)n)->buffer, idx = ((const tir_BufferLoad *)n)->indices;
  if (n->kind == TIR_BufferStore) buf = ((const tir_BufferStore *)n)->buffer, idx = ((const tir_BufferStore *)n)->indices;
  if (!buf || c->bad) return 0;
  for (int d = 0; d < idx->size; d++) {
    const tir_Node *x = idx->items[d];
    if (x->kind != TIR_IntImm && iv_index(c->blk, x) < 0) {
      c->bad = n;
      c->why = "an index that is neither an iteration variable nor a constant (the einsum pattern)";
      return 0;
    }
  }
  for (int i = 0; i < c->n; i++)
    if (c->bufs[i].buf == buf) {
      if (!tir_expr_deep_equal(&c->bufs[i].indices->hdr, &idx->hdr)) {
        c->bad = n;
        c->why = "a buffer accessed with two different index lists";
      }
      return 0;
    }
  if (c->n == PE_MAX_BUFS) {
    c->bad = n;
    c->why = "more buffers than pad_einsum handles";
    return 0;
  }
  c->bufs[c->n].buf = buf;
  c->bufs[c->n].indices = idx;
  c->bufs[c->n].padded = NULL;
  c->n++;
  return 0;
}

/* does e vanish when a buffer indexed by iteration variable q reads 0?  (products and casts
 * of loads; any factor will do) */
static int zero_along(const tir_Block *blk, const tir_Node *e, int q) {
  while (e->kind == TIR_Cast) e = ((const tir_Cast *)e)->value;
  if (e->kind == TIR_Mul) return zero_along(blk, ((const tir_Mul *)e)->a, q) || zero_along(blk, ((const tir_Mul *)e)->b, q);
  if (e->kind == TIR_BufferLoad) {
    const tir_Array *idx = ((const tir_BufferLoad *)e)->indices;
    for (int d = 0; d < idx->size; d++)
      if (iv_index(blk, idx->items[d]) == q) return 1;
  }
  return 0;
}

static tir_Node *strip_cast(const tir_Node *e) {
  while (e->kind == TIR_Cast) e = ((const tir_Cast *)e)->value;
  return (tir_Node *)e;
}

/* a nest of new serial loops ax0.. over `shape` around a block whose iteration variables
 * (spatial, one per entry of shape) are bound to them (stolen blk) */
static tir_Node *nest_for(tir_Block *blk, const tir_Array *doms, tir_Var **loop_vars) {
  int nd = doms->size;
  tir_Array *vals = tir_array_new(nd);
  for (int d = 0; d < nd; d++) vals->items[d] = tir_retain(&loop_vars[d]->hdr);
  tir_Node *nest = tir_block_realize(vals, tir_bool_imm(1), blk);
  for (int d = nd - 1; d >= 0; d--)
    nest = tir_for(loop_vars[d], tir_int_imm(loop_vars[d]->hdr.dtype, 0), tir_retain(doms->items[d]), TIR_FOR_SERIAL, NULL, NULL, nest);
  return nest;
}

/* The copy block: dst[v..] = cond ? src[v..] : 0 (cond: v_d < limit_d where limit_d >= 0),
 * iterating over `doms` (extents, borrowed).  Returns the loop nest (owned). */
static tir_Node *copy_nest(const tir_PrimFunc *f, const char *base, tir_Buffer *dst, tir_Buffer *src, const tir_Array *doms,
                           const int64_t *limit, const int64_t *fixed, int64_t *uid) {
  int nd = doms->size;
  tir_Array *ivs = tir_array_empty(), *idx = tir_array_new(nd);
  tir_Var **loop_vars = calloc((size_t)nd + 1, sizeof *loop_vars);
  tir_Array *ldoms = tir_array_empty();
  int nl = 0;
  tir_Node *cond = NULL;
  for (int d = 0; d < nd; d++) {
    if (fixed[d] >= 0) { /* a constant index: no loop */
      idx->items[d] = tir_int_imm(TIR_INT32, fixed[d]);
      continue;
    }
    char *vn = tir_strprintf("v%d", nl), *ln = tir_strprintf("ax%d", nl);
    tir_Var *v = tir_var_new(vn, TIR_INT32);
    loop_vars[nl] = tir_var_new(ln, TIR_INT32);
    free(vn);
    free(ln);
    ivs = tir_array_push(ivs, &tir_iter_var((tir_Var *)R(v), tir_range(tir_i32(0), tir_retain(doms->items[d])), TIR_ITER_DATA_PAR, "")->hdr);
    ldoms = tir_array_push(ldoms, tir_retain(doms->items[d]));
    idx->items[d] = &v->hdr;
    if (limit[d] >= 0) {
      tir_Node *c = tir_cmp(TIR_LT, tir_retain(&v->hdr), tir_i32(limit[d]));
      cond = cond ? tir_and(cond, c) : c;
    }
    nl++;
  }
  tir_Node *value = tir_buffer_load((tir_Buffer *)R(src), (tir_Array *)R(idx));
  if (cond) value = tir_if_then_else(cond, value, tir_make_zero(src->hdr.dtype));
  tir_Node *store = tir_buffer_store((tir_Buffer *)R(dst), value, idx);
  char *name = sch_unique_name(f, base);
  tir_Block *b = tir_block_new(name, ivs, NULL, NULL, NULL, NULL, NULL, NULL, store);
  free(name);
  tir_Block *bd = tir_block_with_detected_access(b);
  tir_release(b);
  *uid = bd->uid;
  tir_Node *nest = nest_for(bd, ldoms, loop_vars);
  tir_release(ldoms);
  free(loop_vars);
  return nest;
}

int tir_sched_pad_einsum(tir_Schedule *s, int64_t uid, const int64_t *padding, int n_padding, int64_t *out_uids, int max_out) {
  SchPath pb;
  const tir_BlockRealize *br = sch_find_block(s->func->body, uid, &pb);
  if (!br) return tir_sched_block_realize(s, uid, P) ? 0 : -1;
  const tir_Block *blk = br->block;
  int nv = blk->iter_vars->size;
  if (n_padding != nv)
    return sch_error(s, P, &br->hdr, "this block", "block '%s' has %d iteration variable(s), but %d padding factor(s) were given", blk->name,
                     nv, n_padding);
  for (int q = 0; q < nv; q++)
    if (padding[q] < 1)
      return sch_error(s, P, &br->hdr, "this block",
                       "the padding factor of iteration variable %s (number %d of %d, counted from 1) is %lld; factors must be "
                       "positive (1: no padding)",
                       ((const tir_IterVar *)blk->iter_vars->items[q])->var->name, q + 1, nv, (long long)padding[q]);
  const tir_Block *scope = sch_leaf_scope(s, P, br, &pb);
  if (!scope) return -1;
  if (blk->writes->size != 1 || blk->body->kind != TIR_BufferStore)
    return sch_error(s, P, &br->hdr, "this block", "block '%s' must write one buffer with one store (it writes %d)", blk->name,
                     blk->writes->size);
  if (!tir_is_one(br->predicate))
    return sch_error(s, P, &br->hdr, "this block", "block '%s' has a predicate; pad_einsum needs the whole domain", blk->name);
  /* the loops: perfectly nested, serial, from 0, one per iteration variable, in order */
  const tir_For *loops[SCH_MAX_DEPTH];
  int n_loops = sch_loops_above(&pb, loops, SCH_MAX_DEPTH);
  if (n_loops != nv)
    return sch_error(s, P, &br->hdr, "this block", "block '%s' must sit under one loop per iteration variable (%d loops, %d variables)",
                     blk->name, n_loops, nv);
  int64_t *ext = calloc((size_t)nv + 1, sizeof *ext), *pext = calloc((size_t)nv + 1, sizeof *pext);
  int rc = -1, any = 0;
  for (int q = 0; q < nv; q++) {
    const tir_IterVar *iv = (const tir_IterVar *)blk->iter_vars->items[q];
    const tir_For *l = loops[q];
    int64_t mn, dmn, le;
    if (!tir_is_const_int(iv->dom->min, &dmn) || dmn != 0 || !tir_is_const_int(iv->dom->extent, &ext[q]) || !tir_is_const_int(l->min, &mn) ||
        mn != 0 || !tir_is_const_int(l->extent, &le) || le != ext[q]) {
      sch_error(s, P, &l->hdr, "this loop", "loop %s and iteration variable %s must both range over [0, n) for a constant n",
                l->loop_var->name, iv->var->name);
      goto done;
    }
    if (br->iter_values->items[q] != &l->loop_var->hdr) {
      sch_error(s, P, &br->hdr, "this block", "iteration variable %s of block '%s' must be bound to loop %s (trivial bindings, in order)",
                iv->var->name, blk->name, l->loop_var->name);
      goto done;
    }
    if (l->kind != TIR_FOR_SERIAL || (l->thread_tag && l->thread_tag[0]) || (l->annotations && l->annotations->size)) {
      sch_error(s, P, &l->hdr, "this loop", "loop %s must be serial without annotations (pad_einsum rebuilds the nest)", l->loop_var->name);
      goto done;
    }
    const tir_Node *inner = q + 1 < nv ? &loops[q + 1]->hdr : &br->hdr;
    if (l->body != inner) {
      sch_error(s, P, &l->hdr, "this loop", "the loops above block '%s' must be perfectly nested", blk->name);
      goto done;
    }
    if (iv->iter_type != TIR_ITER_DATA_PAR && iv->iter_type != TIR_ITER_COMM_REDUCE) {
      sch_error(s, P, &br->hdr, "this block", "iteration variable %s is neither spatial nor a reduction", iv->var->name);
      goto done;
    }
    pext[q] = (ext[q] + padding[q] - 1) / padding[q] * padding[q];
    any |= pext[q] != ext[q];
  }
  if (!any) {
    sch_error(s, P, &br->hdr, "this block", "no extent of block '%s' changes with these factors (nothing to pad)", blk->name);
    goto done;
  }
  int pos = sch_top_child_index(scope->body, &br->hdr);
  if (pos < 0 || sch_seq_item(scope->body, pos) != &loops[0]->hdr) {
    sch_error(s, P, &br->hdr, "this block", "block '%s' must be under loops directly in its scope's body", blk->name);
    goto done;
  }
  /* the accesses */
  PeCollect col;
  memset(&col, 0, sizeof col);
  col.blk = blk;
  tir_visit(blk->body, collect_fn, &col);
  if (blk->init) tir_visit(blk->init, collect_fn, &col);
  if (col.bad) {
    sch_error(s, P, &br->hdr, "this block", "block '%s' is not an einsum: %s in %s", blk->name, col.why,
              tir_kind_name(col.bad->kind));
    goto done;
  }
  const tir_BufferStore *st = (const tir_BufferStore *)blk->body;
  const tir_Buffer *out = st->buffer;
  if (sch_block_reads(blk, out) && !blk->init) {
    /* (a block with an init does not list its output among its reads; one without that
     * reads it would need the old values copied into the padded buffer) */
    sch_error(s, P, &br->hdr, "this block", "block '%s' reads %s before writing it and has no init", blk->name, out->name);
    goto done;
  }
  for (int q = 0; q < nv; q++) {
    const tir_IterVar *iv = (const tir_IterVar *)blk->iter_vars->items[q];
    if (pext[q] == ext[q] || iv->iter_type != TIR_ITER_COMM_REDUCE) continue;
    const tir_Node *v = st->value;
    int ok = 0;
    if (v->kind == TIR_Add) {
      const tir_Node *a = strip_cast(((const tir_Add *)v)->a), *b = strip_cast(((const tir_Add *)v)->b);
      if (a->kind == TIR_BufferLoad && ((const tir_BufferLoad *)a)->buffer == out) ok = zero_along(blk, ((const tir_Add *)v)->b, q);
      else if (b->kind == TIR_BufferLoad && ((const tir_BufferLoad *)b)->buffer == out) ok = zero_along(blk, ((const tir_Add *)v)->a, q);
    }
    if (!ok) {
      sch_error(s, P, &br->hdr, "this block",
                "padding reduction variable %s adds terms to the sum: the update must be %s = %s + e, e a product with a factor loaded "
                "from a buffer indexed by %s (zero in the padding)", iv->var->name, out->name, out->name, iv->var->name);
      goto done;
    }
  }
  /* padded buffers */
  int n_new = 0;
  for (int i = 0; i < col.n; i++) {
    PeBuf *pbf = &col.bufs[i];
    int padded = 0;
    tir_Array *shape = tir_array_new(pbf->indices->size);
    for (int d = 0; d < pbf->indices->size; d++) {
      int q = iv_index(blk, pbf->indices->items[d]);
      if (q >= 0 && pext[q] != ext[q]) {
        padded = 1;
        shape->items[d] = tir_int_imm(pbf->buf->shape->items[d]->dtype, pext[q]);
      } else {
        shape->items[d] = tir_retain(pbf->buf->shape->items[d]);
      }
    }
    if (padded) {
      char *base = tir_strprintf("%s_pad", pbf->buf->name);
      char *name = sch_unique_name(s->func, base);
      free(base);
      pbf->padded = tir_buffer_new(name, pbf->buf->hdr.dtype, shape, NULL, NULL, pbf->buf->scope);
      free(name);
      n_new++;
    } else {
      tir_release(shape);
    }
  }
  if (n_new + 1 > max_out) {
    sch_error(s, P, &br->hdr, "this block", "too many padded buffers");
    for (int i = 0; i < col.n; i++) tir_release(col.bufs[i].padded);
    goto done;
  }
  /* the einsum block on the padded domain and buffers */
  tir_Buffer *from[PE_MAX_BUFS], *to[PE_MAX_BUFS];
  int nsub = 0;
  for (int i = 0; i < col.n; i++)
    if (col.bufs[i].padded) from[nsub] = (tir_Buffer *)col.bufs[i].buf, to[nsub] = col.bufs[i].padded, nsub++;
  tir_Block *nb = (tir_Block *)tir_substitute_buffers(&blk->hdr, nsub, from, to);
  tir_Array *nivs = tir_array_new(nv);
  for (int q = 0; q < nv; q++) {
    const tir_IterVar *iv = (const tir_IterVar *)blk->iter_vars->items[q];
    nivs->items[q] = &tir_iter_var((tir_Var *)R(iv->var), tir_range(R(iv->dom->min), tir_int_imm(iv->dom->extent->dtype, pext[q])),
                                   iv->iter_type, iv->thread_tag)->hdr;
  }
  if (nb == blk) { /* nothing substituted (only a reduction padded): a copy to edit */
    tir_release(&nb->hdr);
    nb = (tir_Block *)tir_node_copy(&blk->hdr);
  } else if (nb->hdr.refcount > 1) {
    tir_Block *cp = (tir_Block *)tir_node_copy(&nb->hdr);
    tir_release(&nb->hdr);
    nb = cp;
  }
  tir_release(nb->iter_vars);
  nb->iter_vars = nivs;
  tir_Node *nest = sch_realize_with_block(br, nb);
  for (int q = nv - 1; q >= 0; q--) {
    const tir_For *l = loops[q];
    nest = tir_for((tir_Var *)R(l->loop_var), R(l->min), tir_int_imm(l->extent->dtype, pext[q]), l->kind, l->thread_tag, NULL, nest);
  }
  /* the copies in (inputs) and out (the output) */
  int nout = 0;
  tir_Node *body = tir_replace_stmt(scope->body, &loops[0]->hdr, nest);
  tir_Node *after = NULL;
  int64_t out_uid = -1;
  for (int i = 0; i < col.n; i++) {
    PeBuf *pbf = &col.bufs[i];
    if (!pbf->padded) continue;
    int nd = pbf->indices->size;
    int64_t *limit = calloc((size_t)nd + 1, sizeof *limit), *fixed = calloc((size_t)nd + 1, sizeof *fixed);
    tir_Array *doms = tir_array_new(nd);
    int is_out = pbf->buf == out;
    for (int d = 0; d < nd; d++) {
      const tir_Node *x = pbf->indices->items[d];
      int q = iv_index(blk, x);
      int64_t c;
      limit[d] = -1;
      fixed[d] = -1;
      if (is_out) {
        /* copy back the original domain: the extents the block covered, constants fixed */
        if (q >= 0) doms->items[d] = tir_i32(ext[q]);
        else if (tir_is_const_int(x, &c)) doms->items[d] = tir_i32(1), fixed[d] = c;
      } else {
        doms->items[d] = tir_retain(pbf->padded->shape->items[d]);
        if (q >= 0 && pext[q] != ext[q]) limit[d] = ext[q];
      }
    }
    int64_t nuid;
    char *base = is_out ? tir_strprintf("%s_unpad", pbf->padded->name) : strdup(pbf->padded->name);
    tir_Node *cn = is_out ? copy_nest(s->func, base, (tir_Buffer *)pbf->buf, pbf->padded, doms, limit, fixed, &nuid)
                          : copy_nest(s->func, base, pbf->padded, (tir_Buffer *)pbf->buf, doms, limit, fixed, &nuid);
    free(base);
    free(limit);
    free(fixed);
    tir_release(doms);
    if (is_out) {
      after = cn;
      out_uid = nuid;
    } else {
      tir_Node *nbody = sch_insert_into(body, pos, cn);
      tir_release(body);
      body = nbody;
      pos++;
      out_uids[nout++] = nuid;
    }
  }
  if (after) {
    tir_Node *nbody = sch_insert_into(body, pos + 1, after);
    tir_release(body);
    body = nbody;
    out_uids[nout++] = out_uid;
  }
  tir_Block *nscope = tir_block_with_body(scope, body);
  for (int i = 0; i < col.n; i++)
    if (col.bufs[i].padded) nscope->alloc_buffers = tir_array_push(nscope->alloc_buffers, &col.bufs[i].padded->hdr);
  sch_replace(s, &scope->hdr, &nscope->hdr);
  rc = nout;
done:
  free(ext);
  free(pext);
  return rc;
}
