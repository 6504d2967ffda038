/* inject_tma_store.c -- a shared -> global tile copy marked `tma_store` becomes one TMA store
 * (cp.async.bulk.tensor global <- shared::cta in a bulk async-group, PTX ISA 9.7.9.25; CUTLASS's
 * sm90 TMA epilogue).  Block-level IR, run right after inject_tma_pipeline.
 *
 * The copy is a nest of serial loops around one block `dst[base_0 + i_0, ..] = src[.., sbase + i_0,
 * i_1, ..]`, dst a global tensor, src a shared tile whose inner dimensions are exactly the box
 * (so the box is contiguous from src[.., sbase, 0, ..]; the offset lets a warpgroup store its
 * rows of a CTA tile), each inner loop walking one box dimension.  src may have up to two outer
 * dimensions more than dst: they pick the box (tc_gemm_wgmma's tile of 128-byte boxes [BN / b,
 * BM, b]), indexed by the outermost loops only, which stay a serial loop of stores (one per box)
 * around the issue.  A swizzled src (storage_swizzle, a PTX mode) gives the tensor map that
 * swizzle: the box lands in shared memory as the buffer's XOR places it when the box starts at a
 * multiple of the pattern's repeat (proved here; the buffer starts at one).  It becomes
 *
 *   fence.proxy.async            every thread: its generic-proxy writes of the tile (wgmma_store,
 *                                st.shared) are made visible to the async proxy that reads it
 *   __syncthreads                all of them are done before the leader issues the store
 *   leader: ptx_tma_store(tensor map of dst, &src[sbase, 0, ..], base_0, ..); ptx_bulk_commit_group
 *
 * and the wait for the store's read of the tile, [leader: ptx_bulk_wait_group_read 0; barrier],
 * goes where the tile's bytes may be written next (CUTLASS's sm90 epilogue waits for the store
 * buffer's reuse, not for the store; defer_seq):
 *   - before the tile's writer (wgmma_store) when that is an earlier statement of the copy's
 *     sequence and runs again after the store: in the consumers' region of a warp-specialized
 *     kernel (an AttrStmt "named_barrier", inject_warp_specialization.c), or under a serial loop
 *     (a persistent tile loop).  The threads start the next tile's main loop while the TMA unit
 *     still reads the tile; the region (the consumers' branch, or the outermost such loop) then
 *     ends with the wait of every warpgroup's leader, so the CTA's shared memory outlives the last
 *     read.  (The pipeline tiles never share the tile's bytes there: the warp-specialized
 *     producer's branch spans the kernel, and the shared-memory plan reuses no bytes under a loop.)
 *   - otherwise right after the store (in the leader's block, then the barrier): one tile a CTA,
 *     where the plan may give the tile's bytes to a later sibling buffer, or the mark tma_store = 2
 *     (tc_gemm_wgmma's tma_store_wait = "store").
 * In the consumers' region the barriers are its bar.sync(id, n): a __syncthreads there would wait
 * for the producer warpgroup, which never reaches it.
 *
 * The leader is lane 0 of a threadIdx.x loop the pass adds (the kernel's threadIdx.x extent), in
 * the enclosing threadIdx.y/z iteration (a copy inside the warpgroup loop: one store per
 * warpgroup), and 0 in the threadIdx.y/z the copy is not inside (a copy at the CTA level: one
 * store per CTA).  Errors (LoweringError) name the copy that does not have this form. */
#include <string.h>

#include "pass_util.h"
#include "tir/arith.h"
#include "tir/scope.h"
#include "tir/swizzle.h"
#include "tir/tma.h"
#include "tir/transform.h"

#define PASS "inject_tma_store"
#define KEY "tma_store"

typedef struct {
  const tir_PrimFunc *func;
  int64_t cta[3]; /* the launch extents of threadIdx.x/y/z over the function (x >= 32) */
  int in[3];      /* inside a threadIdx.x/y/z loop */
  int64_t bar_id, bar_n; /* inside an AttrStmt "named_barrier" (the consumers of inject_warp_specialization): its barrier */
  int defer;             /* lowering a copy whose tile's writer is an earlier statement of the same sequence (see defer_seq) */
  int deferred;          /* copies lowered with the deferred wait */
  int loop_deferred;     /* of those, outside the consumers' region (their loop ends with the wait) */
  int loops;             /* serial loops (not a copy's) around the statement, outside the consumers' region */
  int store_in[3];       /* the thread loops around the deferred copies (their leaders wait at the region's end) */
} Ctx;

#define fail_at(c, where, ...) pass_fail_at(PASS, (c)->func, (where), "this copy", __VA_ARGS__)

/* d of a threadIdx.x/y/z loop, else -1 */
static int thread_dim(const tir_Node *n) {
  if (n->kind != TIR_For || ((const tir_For *)n)->kind != TIR_FOR_THREAD_BINDING) return -1;
  const char *t = ((const tir_For *)n)->thread_tag;
  return strncmp(t, "threadIdx.", 10) == 0 && t[10] >= 'x' && t[10] <= 'z' && !t[11] ? t[10] - 'x' : -1;
}

static int scan_threads(const tir_Node *n, void *p) {
  int64_t e, *cta = p;
  int d = thread_dim(n);
  if (d >= 0 && tir_is_const_int(((const tir_For *)n)->extent, &e) && e > cta[d]) cta[d] = e;
  return 0;
}

static int has_mark(const tir_Node *n, void *p) {
  if (n->kind == TIR_Block && tir_ann_get(((const tir_Block *)n)->annotations, KEY)) *(int *)p = 1;
  return 0;
}

/* whether e does not change with any of the n loop variables */
static int independent(tir_Analyzer *an, const tir_Node *e, const tir_Var *const *lv, int n) {
  for (int i = 0; i < n; i++) {
    tir_Node *z = tir_i32(0);
    tir_Node *e0 = tir_substitute(e, 1, (tir_Var *const *)&lv[i], &z);
    int same = tir_can_prove_equal(an, e0, e);
    tir_release(e0), tir_release(z);
    if (!same) return 0;
  }
  return 1;
}

/* the barrier around the store: the CTA's, or the enclosing named barrier's (PTX ISA 9.7.13.1 bar.sync) */
static tir_Node *barrier(const Ctx *c) {
  if (c->bar_n)
    return tir_evaluate(tir_call(TIR_VOID, "ptx_bar_sync", tir_array_of(2, tir_i32((int)c->bar_id), tir_i32((int)c->bar_n))));
  return tir_evaluate(tir_call(TIR_VOID, "tvm_storage_sync", tir_array_of(1, tir_string_imm("shared"))));
}

/* `body` on the leaders: lane 0 of an added threadIdx.x loop, and of added threadIdx.y/z loops the
 * statement is not inside (a copy at the CTA level: thread (0, 0)) -- every lane 0 of them for
 * the dimensions `every` marks (the end of a region whose copies ran inside those loops) */
static tir_Node *leader_of(const Ctx *c, const int every[3], tir_Node *body) {
  tir_Node *lead = body;
  for (int d = 0; d < 3; d++) {
    if (d > 0 && (c->in[d] || c->cta[d] <= 1)) continue;
    static const char *const tags[3] = {"threadIdx.x", "threadIdx.y", "threadIdx.z"};
    tir_Var *t = tir_var_new(d == 0 ? "tma_store_leader" : d == 1 ? "tma_store_ty" : "tma_store_tz", TIR_INT32);
    tir_Node *guard = d > 0 && every[d] ? lead : tir_if(tir_cmp(TIR_EQ, R((tir_Node *)t), tir_i32(0)), lead, NULL);
    lead = tir_for(t, tir_i32(0), tir_i32((int)c->cta[d]), TIR_FOR_THREAD_BINDING, tags[d], NULL, guard);
  }
  return lead;
}

static tir_Node *leader(const Ctx *c, tir_Node *body) {
  static const int none[3] = {0, 0, 0};
  return leader_of(c, none, body);
}

static tir_Node *wait_read(void) {
  return tir_evaluate(tir_call(TIR_VOID, "ptx_bulk_wait_group_read", tir_array_of(1, tir_i32(0))));
}

static tir_Node *lower(Ctx *c, const tir_Node *s) {
  const char *form = "a tma_store copy is serial loops (from 0, constant extents, one per box dimension, after those that pick a box) "
                     "around one block dst[base + i, ..] = src[.., sbase + i, j, ..] from a shared tile whose inner dimensions are the "
                     "box into a global tensor";
  if (c->in[0]) return fail_at(c, s, "the tma_store copy is inside a threadIdx.x loop; leave its loops unbound (one thread issues it)");
  const tir_Var *lv[TIR_TMA_MAX_RANK + 2];
  const tir_For *fl[TIR_TMA_MAX_RANK + 2];
  int64_t ext[TIR_TMA_MAX_RANK + 2];
  int nl = 0;
  const tir_Node *x = s;
  while (x->kind == TIR_For) {
    const tir_For *f = (const tir_For *)x;
    if ((f->kind != TIR_FOR_SERIAL && f->kind != TIR_FOR_UNROLLED) || !tir_is_zero(f->min) || !tir_is_const_int(f->extent, &ext[nl]) ||
        nl == TIR_TMA_MAX_RANK + 2)
      return fail_at(c, x, "%s; loop %s is not", form, f->loop_var->name);
    fl[nl] = f;
    lv[nl++] = f->loop_var;
    x = f->body;
  }
  if (x->kind != TIR_BlockRealize || !tir_is_one(((const tir_BlockRealize *)x)->predicate)) return fail_at(c, x, "%s", form);
  const tir_BlockRealize *br = (const tir_BlockRealize *)x;
  const tir_Block *b = br->block;
  if (b->body->kind != TIR_BufferStore || b->init || b->match_buffers->size || b->alloc_buffers->size ||
      ((const tir_BufferStore *)b->body)->value->kind != TIR_BufferLoad)
    return fail_at(c, x, "%s", form);
  const tir_BufferStore *st = (const tir_BufferStore *)b->body;
  const tir_BufferLoad *ld = (const tir_BufferLoad *)st->value;
  const tir_Buffer *dst = st->buffer, *src = ld->buffer;
  tir_DType et = tir_dtype_element(dst->hdr.dtype);
  /* rank: the box's (dst's); src may have outer dimensions more (`extra`: which box of the tile,
   * e.g. [BN / 64, BM, 64] boxes of 128-byte rows), indexed by the outer loops only */
  int rank = st->indices->size, srank = ld->indices->size, extra = srank - rank;
  int swz = src->swizzle ? tir_swizzle_ptx_mode(src->swizzle) : 0;
  if (!tir_scope_is_global(dst->scope) || !tir_scope_is_shared(src->scope) || tir_tma_cuda_dtype(et) < 0 ||
      tir_dtype_bytes(et) != tir_dtype_bytes(tir_dtype_element(src->hdr.dtype)) || dst->strides->size || src->strides->size ||
      !tir_is_zero(src->elem_offset) || swz < 0 || rank < 1 || rank > TIR_TMA_MAX_RANK || extra < 0 || extra > 2)
    return fail_at(c, &st->hdr, "%s; here %s (scope %s%s) <- %s (scope %s)", form, dst->name, dst->scope,
                   swz < 0 ? "; a swizzle that is no PTX mode (32B, 64B, 128B)" : "", src->name, src->scope);
  tir_Analyzer *an = pass_loops_analyzer(lv, ext, nl);
  tir_Node *gi[TIR_TMA_MAX_RANK] = {0}, *si[TIR_TMA_MAX_RANK + 2] = {0};
  for (int d = 0; d < rank; d++) {
    tir_Node *e = pass_bind_iters(br, st->indices->items[d]);
    gi[d] = tir_simplify(an, e);
    tir_release(e);
  }
  for (int d = 0; d < srank; d++) {
    tir_Node *e = pass_bind_iters(br, ld->indices->items[d]);
    si[d] = tir_simplify(an, e);
    tir_release(e);
  }
  /* the loops that pick a box (src's outer indices use them) come first; the others walk the box */
  int nrep = 0, ok = 1;
  for (int i = 0; i < nl; i++) {
    int rep = 0;
    for (int d = 0; d < extra; d++) rep |= !independent(an, si[d], &lv[i], 1);
    if (rep && i > nrep) ok = 0;
    if (rep) nrep++;
  }
  const tir_Var *const *bl = lv + nrep; /* the box loops */
  int nb = nl - nrep;
  if (nb > rank) ok = 0;
  tir_Node *gbase[TIR_TMA_MAX_RANK] = {0}, *sbase[TIR_TMA_MAX_RANK] = {0};
  int64_t box[TIR_TMA_MAX_RANK];
  int used[TIR_TMA_MAX_RANK + 2] = {0};
  for (int d = 0; d < extra && ok; d++) ok = independent(an, si[d], bl, nb);
  for (int d = 0; d < rank && ok; d++) {
    tir_Node *g = gi[d], *sx = si[d + extra];
    int which = -1;
    for (int i = 0; i < nb && which < 0; i++) {
      if (used[i]) continue;
      tir_Node *g0 = tir_sub(R(g), R((tir_Node *)bl[i])), *s0 = tir_sub(R(sx), R((tir_Node *)bl[i]));
      tir_Node *g1 = tir_simplify(an, g0), *s1 = tir_simplify(an, s0);
      tir_release(g0), tir_release(s0);
      if (independent(an, g1, bl, nb) && independent(an, s1, bl, nb)) {
        which = i;
        gbase[d] = g1, sbase[d] = s1;
      } else {
        tir_release(g1), tir_release(s1);
      }
    }
    if (which >= 0) {
      used[which] = 1;
      box[d] = ext[nrep + which];
    } else if (independent(an, g, bl, nb) && independent(an, sx, bl, nb)) {
      gbase[d] = R(g), sbase[d] = R(sx);
      box[d] = 1;
    } else {
      ok = 0;
    }
    /* the inner dimensions of the tile are the box: it is contiguous from src[.., sbase_0, 0, ..] */
    int64_t sh;
    if (ok && d > 0 && (!tir_is_zero(sbase[d]) || !tir_is_const_int(src->shape->items[d + extra], &sh) || sh != box[d])) ok = 0;
  }
  for (int i = 0; i < nb && ok; i++) ok = used[i];
  /* a swizzled box starts at a multiple of the pattern's repeat inside the buffer (which starts at
   * one, split_host_device), so that the box's pattern (from the shared address) is the buffer's */
  if (ok && swz) {
    tir_Node *off = NULL;
    for (int d = 0; d < srank && ok; d++) {
      int64_t sh;
      if (d > 0 && !tir_is_const_int(src->shape->items[d], &sh)) ok = 0;
      tir_Node *idx = d < extra ? R(si[d]) : R(sbase[d - extra]);
      off = off ? tir_add(tir_mul(off, tir_int_imm(idx->dtype, d > 0 ? sh : 1)), idx) : idx;
    }
    if (ok) {
      int64_t q = tir_swizzle_repeat(src->swizzle) / tir_dtype_bytes(et);
      tir_Node *m = tir_floormod(R(off), tir_int_imm(off->dtype, q)), *z = tir_int_imm(off->dtype, 0);
      ok = tir_can_prove_equal(an, m, z);
      tir_release(m), tir_release(z);
      if (!ok) {
        tir_release(off);
        tir_analyzer_free(an);
        tir_Node *out = fail_at(c, &st->hdr, "the TMA store of the swizzled %s: a box does not start at a multiple of the swizzle's "
                                "%lld-byte repeat", src->name, (long long)tir_swizzle_repeat(src->swizzle));
        for (int d = 0; d < TIR_TMA_MAX_RANK; d++) tir_release(gbase[d]), tir_release(sbase[d]), tir_release(gi[d]);
        for (int d = 0; d < TIR_TMA_MAX_RANK + 2; d++) tir_release(si[d]);
        return out;
      }
    }
    tir_release(off);
  }
  tir_analyzer_free(an);
  tir_Node *out = NULL;
  if (!ok) {
    out = fail_at(c, &st->hdr, "%s; here the loops do not walk the box of %s in %s that way", form, src->name, dst->name);
    goto done;
  }
  tir_TmaDesc dd;
  memset(&dd, 0, sizeof dd);
  dd.dtype = et;
  dd.rank = rank;
  dd.swizzle = swz;
  for (int d = 0; d < rank; d++) {
    int64_t v;
    dd.dims[d] = tir_is_const_int(dst->shape->items[d], &v) ? v : 0;
    dd.box[d] = box[d];
  }
  char why[256];
  if (tir_tma_desc_check(&dd, why, sizeof why)) {
    out = fail_at(c, &st->hdr, "the TMA store of %s into %s: %s", src->name, dst->name, why);
    goto done;
  }
  {
    char ts[32];
    tir_Array *da = tir_array_of(4, R((tir_Node *)dst->data), tir_string_imm(tir_dtype_str(et, ts)), tir_i32(swz), tir_i32(rank));
    for (int d = 0; d < rank; d++) da = tir_array_push(da, R(dst->shape->items[d]));
    for (int d = 0; d < rank; d++) da = tir_array_push(da, tir_i32((int)box[d]));
    tir_Array *origin = tir_array_empty();
    for (int d = 0; d < extra; d++) origin = tir_array_push(origin, R(si[d]));
    for (int d = 0; d < rank; d++) origin = tir_array_push(origin, R(sbase[d]));
    tir_Array *args = tir_array_of(2, tir_call(TIR_HANDLE, "tma_descriptor", da),
                                   tir_address_of(tir_buffer_load((tir_Buffer *)R(&src->hdr), origin)));
    for (int d = 0; d < rank; d++) args = tir_array_push(args, tir_cast(TIR_INT32, R(gbase[d])));
    /* one store per box: the box loops' nest (outermost last) around the issue */
    tir_Node *stores = tir_evaluate(tir_call(TIR_VOID, "ptx_tma_store", args));
    for (int i = nrep - 1; i >= 0; i--)
      stores = tir_for((tir_Var *)R((tir_Node *)lv[i]), R(fl[i]->min), R(fl[i]->extent), TIR_FOR_SERIAL, NULL, NULL, stores);
    tir_Node *commit = tir_evaluate(tir_call(TIR_VOID, "ptx_bulk_commit_group", tir_array_empty()));
    tir_Node *fence = tir_evaluate(tir_call(TIR_VOID, "ptx_fence_proxy_async", tir_array_empty()));
    if (c->defer) {
      /* the wait for the tile's read (and the barrier after it) precede the tile's next writes (defer_seq) */
      out = tir_seq(tir_array_of(3, fence, barrier(c), leader(c, tir_seq(tir_array_of(2, stores, commit)))));
      c->deferred++;
      if (!c->bar_n) {
        c->loop_deferred++;
        for (int d = 1; d < 3; d++) c->store_in[d] |= c->in[d] > 0;
      }
    } else {
      out = tir_seq(tir_array_of(4, fence, barrier(c), leader(c, tir_seq(tir_array_of(3, stores, commit, wait_read()))), barrier(c)));
    }
  }
done:
  for (int d = 0; d < TIR_TMA_MAX_RANK; d++) tir_release(gbase[d]), tir_release(sbase[d]), tir_release(gi[d]);
  for (int d = 0; d < TIR_TMA_MAX_RANK + 2; d++) tir_release(si[d]);
  return out;
}

/* the data var of the source tile of the marked copy in n (NULL: none, or the mark says
 * tma_store = 2: wait right after the store) */
static int find_src(const tir_Node *n, void *p) {
  if (n->kind == TIR_BlockRealize) {
    const tir_Block *b = ((const tir_BlockRealize *)n)->block;
    const tir_Node *v = tir_ann_get(b->annotations, KEY);
    int64_t how = 1;
    if (v && (!tir_is_const_int(v, &how) || how != 2) && b->body->kind == TIR_BufferStore &&
        ((const tir_BufferStore *)b->body)->value->kind == TIR_BufferLoad)
      *(const tir_Var **)p = ((const tir_BufferLoad *)((const tir_BufferStore *)b->body)->value)->buffer->data;
  }
  return 0;
}

typedef struct {
  const tir_Var *data;
  int hit;
} Refs;

static int refs(const tir_Node *n, void *p) {
  Refs *r = p;
  if ((n->kind == TIR_BufferLoad && ((const tir_BufferLoad *)n)->buffer->data == r->data) ||
      (n->kind == TIR_BufferStore && ((const tir_BufferStore *)n)->buffer->data == r->data))
    r->hit = 1;
  return 0;
}

static tir_Node *mut(const tir_Node *n, void *arg);

/* A sequence holding a marked copy: where the wait for the store's read goes (the header's rule).
 * When an earlier statement of the sequence writes the copy's tile (wgmma_store) and runs again
 * after the store (the consumers' region of a warp-specialized kernel, or under a serial loop),
 * the wait moves from after the store to before that writer: [leader: wait_group_read 0;
 * barrier] writer ..; fence; barrier; leader: stores; commit, and the region ends with the
 * leaders' wait (mut).  The mark tma_store = 2 keeps the wait right after the store. */
static tir_Node *defer_seq(Ctx *c, const tir_SeqStmt *sq) {
  int n = sq->seq->size, at = -1, writer = -1;
  for (int k = 0; k < n && at < 0; k++) {
    int m = 0;
    tir_visit(sq->seq->items[k], has_mark, &m);
    if (m) at = k;
  }
  const tir_Var *data = NULL;
  tir_visit(sq->seq->items[at], find_src, &data);
  for (int k = at - 1; k >= 0 && writer < 0 && data && (c->bar_n || c->loops); k--) {
    Refs r = {data, 0};
    tir_visit(sq->seq->items[k], refs, &r);
    if (r.hit) writer = k;
  }
  tir_Array *out = tir_array_empty();
  for (int k = 0; k < n; k++) {
    if (k == writer) out = tir_array_push(tir_array_push(out, leader(c, wait_read())), barrier(c));
    int od = c->defer;
    c->defer = k == at && writer >= 0;
    tir_Node *m = tir_mutate(sq->seq->items[k], mut, c);
    c->defer = od;
    if (!m) {
      tir_release((tir_Node *)out);
      return TIR_MUTATE_ERROR;
    }
    out = tir_array_push(out, m);
  }
  return tir_seq(out);
}

static tir_Node *mut(const tir_Node *n, void *arg) {
  Ctx *c = arg;
  if (tir_is_expr(n)) return tir_retain(n);
  if (n->kind != TIR_For && n->kind != TIR_BlockRealize && n->kind != TIR_AttrStmt && n->kind != TIR_SeqStmt) return NULL;
  int marked = 0;
  tir_visit(n, has_mark, &marked);
  if (!marked) return tir_retain(n);
  if (n->kind == TIR_SeqStmt) return defer_seq(c, (const tir_SeqStmt *)n);
  if (n->kind == TIR_AttrStmt) {
    const tir_AttrStmt *a = (const tir_AttrStmt *)n;
    int64_t id, cnt;
    if (strcmp(a->key, "named_barrier") != 0) return NULL;
    if (!a->node || !tir_is_const_int(a->node, &cnt) || !tir_is_const_int(a->value, &id))
      return fail_at(c, n, "a tma_store copy inside a named_barrier region whose thread count and barrier id are not constants");
    int64_t oid = c->bar_id, on = c->bar_n;
    int od = c->deferred, ol = c->loops;
    c->bar_id = id, c->bar_n = cnt, c->loops = 0;
    tir_Node *body = tir_mutate(a->body, mut, arg);
    c->bar_id = oid, c->bar_n = on, c->loops = ol;
    if (!body) return TIR_MUTATE_ERROR;
    /* the last tile's stores read the tile until this wait: the CTA's shared memory must outlive it */
    if (c->deferred > od) body = tir_seq(tir_array_of(2, body, leader(c, wait_read())));
    return tir_attr_stmt(R(a->node), a->key, R(a->value), body);
  }
  if (n->kind == TIR_For) {
    const tir_For *f = (const tir_For *)n;
    if (f->kind == TIR_FOR_THREAD_BINDING) {
      int d = thread_dim(n);
      if (d >= 0) c->in[d]++;
      tir_Node *m = tir_mutate_children(n, mut, arg);
      if (d >= 0) c->in[d]--;
      return m ? m : TIR_MUTATE_ERROR;
    }
    /* a serial nest whose innermost statement is the marked block: the copy itself */
    const tir_Node *y = n;
    while (y->kind == TIR_For && ((const tir_For *)y)->kind != TIR_FOR_THREAD_BINDING) y = ((const tir_For *)y)->body;
    if (y->kind == TIR_BlockRealize && tir_ann_get(((const tir_BlockRealize *)y)->block->annotations, KEY)) return lower(c, n);
    if (c->bar_n) {
      tir_Node *m = tir_mutate_children(n, mut, arg);
      return m ? m : TIR_MUTATE_ERROR;
    }
    /* a serial loop outside the consumers' region: the outermost one that holds deferred copies
     * ends with their leaders' wait (in every warpgroup whose loop is inside it) */
    int od = c->loop_deferred;
    int oin[3] = {c->store_in[0], c->store_in[1], c->store_in[2]};
    if (!c->loops) memset(c->store_in, 0, sizeof c->store_in);
    c->loops++;
    tir_Node *m = tir_mutate_children(n, mut, arg);
    c->loops--;
    if (m && !c->loops && c->loop_deferred > od) m = tir_seq(tir_array_of(2, m, leader_of(c, c->store_in, wait_read())));
    if (!c->loops) memcpy(c->store_in, oin, sizeof oin);
    return m ? m : TIR_MUTATE_ERROR;
  }
  if (tir_ann_get(((const tir_BlockRealize *)n)->block->annotations, KEY)) return lower(c, n);
  tir_Node *m = tir_mutate_children(n, mut, arg);
  return m ? m : TIR_MUTATE_ERROR;
}

tir_PrimFunc *tir_pass_inject_tma_store(const tir_PrimFunc *f) {
  int marked = 0;
  tir_visit(f->body, has_mark, &marked);
  if (!marked) return (tir_PrimFunc *)tir_retain(&f->hdr);
  Ctx c = {f, {32, 1, 1}, {0, 0, 0}, 0, 0, 0, 0, 0, 0, {0, 0, 0}};
  tir_visit(f->body, scan_threads, c.cta);
  return pass_with_body(f, tir_mutate(f->body, mut, &c));
}
