/* inject_tma_pipeline.c -- a loop annotated `tma_pipeline_stages = N` whose body starts with
 * global -> shared tile copies marked `tma_copy` becomes an N-stage pipeline of TMA copies
 * ordered by mbarriers (CUTLASS's sm90 "TMA, not warp-specialized" mainloop; PTX ISA 9.7.9.25
 * cp.async.bulk.tensor, 9.7.13.15 mbarrier; include/tir/tma.h).  Block-level IR, run where
 * inject_software_pipeline runs (the shared tiles are allocated in the loop body).
 *
 * The body is a sequence: the marked copies first (each a nest of serial loops around one
 * block `dst[...] = src[...]`, dst a shared buffer allocated in the body, src a global tensor,
 * the box dense: dst's element (i_0, .., i_r) is src's (base_0 + i_0, ..)), then the
 * statements that use the tiles.  Each shared tile gets N versions (a leading dimension) and
 * two mbarrier arrays full[N], empty[N] are allocated with them; with E iterations, s = (k -
 * min) % N and parity p = ((k - min) / N) % 2:
 *
 *   leader: init full[*] with 1 arrival, empty[*] with one per thread of the CTA, fence.proxy.async;
 *           __syncthreads
 *   leader: for the first min(N, E) iterations: expect_tx(full[s], bytes); one TMA copy per tile
 *   for k:  wait(full[s], p); the statements, on version s; arrive(empty[s])
 *           leader, when iteration k + N exists: wait(empty[s], p) (every thread is done with
 *           stage s), fence.proxy.async (the generic-proxy reads before the async-proxy
 *           writes), expect_tx(full[s], bytes), the copies of iteration k + N into stage s
 *
 * The leader is thread 0 of the CTA (lane 0 of a `threadIdx.x` loop the pass adds -- 32 lanes, a
 * warpgroup's 128 when the kernel calls warpgroup-wide builtins -- and
 * 0 in the enclosing threadIdx loops).  No __syncthreads is left in the loop: thread_sync
 * leaves the TMA and mbarrier operands out (TIR_BUILTIN_ASYNC_PROXY).  The TMA swizzle is the
 * destination buffer's (storage_swizzle: a PTX mode; or none),
 * so the box lands in exactly the layout the buffer declares.  Errors (LoweringError) name
 * the loop and the copy that does not have the form above.
 *
 * Groups left in flight: when the statements end with wgmma_wait_group P (P wgmma groups still
 * reading their shared operands after the step, the wgmma_pending = 1 GEMM), step k releases
 * the stage of step k - P instead of its own (arrive(empty[(k - P - min) % N]) once k - min >=
 * P), and the leader refills that stage with step k - P + N; P < N.
 *
 * Warp specialization (the loop also carries `warp_specialize`, inject_warp_specialization.c
 * lowers it next): the copies leave the consumers' loop.  The body becomes
 *   init, __syncthreads,
 *   AttrStmt "warp_specialize_producer" { for kp in the range: if kp - min >= N:
 *     wait(empty[s], parity + 1); fence.proxy.async; expect_tx(full[s]); the copies of kp }
 *   for k: wait(full[s], p); the statements; the release above
 * with empty[*] expecting one arrival per thread of the CTA as it is (the consumers); the next
 * pass runs the marked statement on one thread of an added producer warpgroup and the rest on
 * the consumers (CUTLASS's sm90 warp-specialized mainloop: producer_acquire / consumer_wait /
 * consumer_release).  Inside serial loops (a persistent kernel's tile loop) the steps are
 * counted across the loops' iterations (g = linearized iteration * E + k - min replaces k - min
 * in every stage, parity and release), since the barriers are armed once: the producer then
 * fills the next tile's stages while the consumers finish this one.  With ping-pong consumers
 * (warp_specialize's fourth value T > 1: T warpgroups take the tiles in turn) a step releases
 * the stage of k - P only within its own tile (k - min >= P), and after the loop the tile's
 * last P stages are released once `wgmma_wait_group 0` has returned: the next step belongs to
 * another warpgroup.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pass_util.h"
#include "tir/swizzle.h"
#include "tir/arith.h"
#include "tir/scope.h"
#include "tir/tma.h"

#define PASS "inject_tma_pipeline"
#define KEY_STAGES "tma_pipeline_stages"
#define KEY_COPY "tma_copy"
#define KEY_GATHER "cp_async_gather"
#define KEY_IM2COL "tma_im2col" /* {pt, pl, sh, sw, dh, dw, P, Q, R, S}: a convolution's A tile by TMA im2col (parse_im2col) */
#define GATHER_THREADS 128 /* a gathering producer: the producer warpgroup's threads */
#define KEY_WS "warp_specialize"
#define KEY_CLUSTER "tma_cluster"
#define KEY_MC "tma_multicast"
#define MAX_CLUSTER 8 /* the portable thread-block cluster size (CUDA C++ Programming Guide, thread block clusters) */

typedef struct {
  const tir_PrimFunc *func;
  const tir_Var *threads[8]; /* enclosing threadIdx loops */
  int thread_x[8];           /* ... bound to threadIdx.x */
  int n_threads;
  int in_loop;               /* the pipeline sits in a serial loop (a persistent kernel's tile loop) */
  const tir_For *loops[8];   /* ... those loops, outermost first (the first 8) */
  int64_t cta_threads[3];    /* the launch extents of threadIdx.x/y/z over the function */
  int lanes;                 /* the leader loop's extent when threadIdx.x is narrower (tir_tma_leader_lanes) */
} Ctx;

typedef struct {
  const tir_Node *stmt;     /* the copy statement (borrowed) */
  const tir_Buffer *dst, *src;
  tir_Node *base[TIR_TMA_MAX_RANK]; /* src coordinates of box element 0 (owned; in terms of the loop var) */
  int64_t box[TIR_TMA_MAX_RANK];
  int rank;
  tir_Buffer *ver;          /* the versioned tile (owned) */
  int swizzle;
  int64_t mc_stride, mc_count; /* tma_multicast {stride, count}: shared by the count CTAs of ranks base + j stride (1, 1: none) */
  int gather;               /* a cp_async_gather copy: the statement runs as it is on the producer warpgroup */
  int im2col;               /* a tma_im2col copy: one ptx_tma_load_im2col of the A tile (parse_im2col) */
  tir_Node *m0, *k0;        /* ... the tile's first row and column (owned; in terms of the loop var) */
  int64_t geo[10];          /* ... KEY_IM2COL's {pt, pl, sh, sw, dh, dw, P, Q, R, S} */
} Copy;

/* a LoweringError naming the pass, showing the function with `where` marked */
#define fail_at(c, where, what, ...) pass_fail_at(PASS, (c)->func, (where), (what), __VA_ARGS__)

static int64_t thread_extent(const tir_For *f) {
  int64_t e;
  return tir_is_const_int(f->extent, &e) ? e : -1;
}

static int warpgroup_fn(const tir_Node *n, void *p) {
  if (n->kind == TIR_Call && tir_builtin_has(((const tir_Call *)n)->op, TIR_BUILTIN_WARPGROUP)) *(int *)p = 1;
  return 0;
}

int tir_tma_leader_lanes(const tir_Node *region) {
  int wg = 0;
  tir_visit(region, warpgroup_fn, &wg);
  return wg ? 128 : 32;
}

static int scan_threads(const tir_Node *n, void *p) {
  Ctx *c = p;
  if (n->kind != TIR_For) return 0;
  const tir_For *f = (const tir_For *)n;
  if (f->kind != TIR_FOR_THREAD_BINDING || strncmp(f->thread_tag, "threadIdx.", 10) != 0) return 0;
  int d = f->thread_tag[10] - 'x';
  int64_t e = thread_extent(f);
  if (d >= 0 && d < 3 && e > c->cta_threads[d]) c->cta_threads[d] = e;
  return 0;
}

/* ---- the copy statements ---- */
static int has_copy_mark(const tir_Node *n, void *p) {
  if (n->kind == TIR_Block && tir_ann_get(((const tir_Block *)n)->annotations, KEY_COPY)) *(int *)p |= 1;
  if (n->kind == TIR_Block && tir_ann_get(((const tir_Block *)n)->annotations, KEY_GATHER)) *(int *)p |= 2;
  if (n->kind == TIR_Block && tir_ann_get(((const tir_Block *)n)->annotations, KEY_IM2COL)) *(int *)p |= 4;
  return 0;
}

/* ---- tma_im2col copies ----
 * A tma_im2col copy: a nest of two serial loops (BM, BK) around one block of two iteration
 * variables (m, k) bound to m0 + i, k0 + j, storing dst[i, j] = X[n, h, w, c] or
 * if_then_else(cond, X[n, h, w, c], 0) into a shared [BM, BK] tile allocated in the loop body,
 * X a global NHWC tensor [N, H, W, C] -- the A tile of conv2d_tc's implicit GEMM.  The annotation
 * {pt, pl, sh, sw, dh, dw, P, Q, R, S} states the convolution (tma.h's im2col mode): A[m, k] =
 * X[n, p sh - pt + r dh, q sw - pl + s dw, c] (m = (n P + p) Q + q, k = (r S + s) C + c), zero
 * outside X; the pass checks that the block computes exactly that at sampled (m, k) (each row
 * position class and every filter tap), so the copy below means the block.  One copy moves the
 * tile: pixels = BM rows from pixel m0, channels = BK from c = k0 % C at filter tap k0 / C
 * (im2col offsets r dh, s dw), BK dividing C (a tile lies in one tap), m0 a multiple of BM and
 * N P Q of BM (whole tiles: the box walks rows of the next image past an image's end). */
typedef struct {
  const tir_Buffer *x;
  int n, other;
} XScan;

static int xscan_fn(const tir_Node *n, void *p) {
  XScan *s = p;
  if (n->kind != TIR_BufferLoad) return 0;
  const tir_Buffer *b = ((const tir_BufferLoad *)n)->buffer;
  if (!s->x) s->x = b;
  if (b != s->x) s->other = 1;
  s->n++;
  return 0;
}

/* v evaluated at iteration variables = vals (constants): 0 when it is not a constant */
static int eval_at(tir_Analyzer *an, const tir_Block *b, const tir_Node *e, const int64_t *vals, int64_t *out) {
  tir_Var *vars[2] = {((const tir_IterVar *)b->iter_vars->items[0])->var, ((const tir_IterVar *)b->iter_vars->items[1])->var};
  tir_Node *vv[2] = {tir_int_imm(vars[0]->hdr.dtype, vals[0]), tir_int_imm(vars[1]->hdr.dtype, vals[1])};
  tir_Node *x = tir_substitute(e, 2, vars, vv);
  int ok = tir_as_const_int(an, x, out);
  tir_release(x), tir_release(vv[0]), tir_release(vv[1]);
  return ok;
}

static int parse_im2col(Ctx *c, const tir_For *loop, const tir_Node *s, const tir_Array *allocs, Copy *cp) {
  const char *form = "a tma_im2col copy must be two serial loops (BM, BK) around one block (m, k) = (m0 + i, k0 + j) storing "
                     "dst[i, j] = if_then_else(cond, X[n, h, w, c], 0) (or X[n, h, w, c]) into a shared [BM, BK] tile allocated in "
                     "the pipelined loop, X a global 4-d NHWC tensor";
  const tir_Var *lv[2];
  int64_t ext[2];
  const tir_Node *x = s;
  for (int i = 0; i < 2; i++) {
    const tir_For *f = x->kind == TIR_For ? (const tir_For *)x : NULL;
    if (!f || (f->kind != TIR_FOR_SERIAL && f->kind != TIR_FOR_UNROLLED) || !tir_is_zero(f->min) || !tir_is_const_int(f->extent, &ext[i])) {
      fail_at(c, x, "this copy", "loop %s: %s", loop->loop_var->name, form);
      return -1;
    }
    lv[i] = f->loop_var;
    x = f->body;
  }
  const tir_BlockRealize *br = x->kind == TIR_BlockRealize ? (const tir_BlockRealize *)x : NULL;
  const tir_Block *b = br ? br->block : NULL;
  if (!br || !tir_is_one(br->predicate) || b->iter_vars->size != 2 || b->body->kind != TIR_BufferStore || b->init ||
      b->match_buffers->size || b->alloc_buffers->size) {
    fail_at(c, x, "not an im2col block", "loop %s: %s", loop->loop_var->name, form);
    return -1;
  }
  const tir_BufferStore *st = (const tir_BufferStore *)b->body;
  int in_body = 0;
  for (int i = 0; i < allocs->size; i++) in_body |= allocs->items[i] == &st->buffer->hdr;
  XScan xs = {NULL, 0, 0};
  tir_visit(st->value, xscan_fn, &xs);
  const tir_Buffer *X = xs.x;
  const tir_Node *v = st->value, *cond = NULL;
  if (v->kind == TIR_Call && strcmp(((const tir_Call *)v)->op, "if_then_else") == 0 && ((const tir_Call *)v)->args->size == 3) {
    const tir_Array *a = ((const tir_Call *)v)->args;
    const tir_Node *z = a->items[2];
    double zf = 1;
    if (z->kind == TIR_FloatImm) zf = ((const tir_FloatImm *)z)->value;
    else if (tir_is_zero(z)) zf = 0;
    cond = a->items[0];
    v = zf == 0 ? a->items[1] : NULL;
  }
  int64_t shp[4] = {0, 0, 0, 0}, tile[2] = {0, 0};
  int ok = X && !xs.other && v && v->kind == TIR_BufferLoad && ((const tir_BufferLoad *)v)->buffer == X && xs.n == 1 &&
           tir_scope_is_global(X->scope) && X->shape->size == 4 && !X->strides->size && tir_scope_is_shared(st->buffer->scope) && in_body &&
           st->buffer->shape->size == 2 && !st->buffer->strides->size && tir_is_zero(st->buffer->elem_offset) && st->indices->size == 2 &&
           tir_dtype_bytes(tir_dtype_element(X->hdr.dtype)) == tir_dtype_bytes(tir_dtype_element(st->buffer->hdr.dtype)) &&
           tir_tma_cuda_dtype(tir_dtype_element(X->hdr.dtype)) >= 0;
  for (int d = 0; ok && d < 4; d++) ok = tir_is_const_int(X->shape->items[d], &shp[d]);
  for (int d = 0; ok && d < 2; d++) ok = tir_is_const_int(st->buffer->shape->items[d], &tile[d]) && tile[d] == ext[d];
  if (!ok) {
    fail_at(c, &st->hdr, "this copy", "loop %s: %s (constant shapes)", loop->loop_var->name, form);
    return -1;
  }
  const tir_Node *an_v = tir_ann_get(b->annotations, KEY_IM2COL);
  const tir_Array *ga = an_v && an_v->kind == TIR_Array ? (const tir_Array *)an_v : NULL;
  ok = ga && ga->size == 10;
  for (int i = 0; ok && i < 10; i++) ok = tir_is_const_int(ga->items[i], &cp->geo[i]);
  const int64_t pt = cp->geo[0], pl = cp->geo[1], sh = cp->geo[2], sw = cp->geo[3], dh = cp->geo[4], dw = cp->geo[5], P = cp->geo[6],
                Q = cp->geo[7], R = cp->geo[8], S = cp->geo[9], N = shp[0], H = shp[1], W = shp[2], C = shp[3];
  if (!ok || sh < 1 || sw < 1 || dh < 1 || dw < 1 || P < 1 || Q < 1 || R < 1 || S < 1) {
    fail_at(c, x, "this copy", "loop %s: %s must be a list of 10 integers {pt, pl, sh, sw, dh, dw, P, Q, R, S} (paddings, strides, "
            "dilations, the output's P x Q, the filter's R x S)", loop->loop_var->name, KEY_IM2COL);
    return -1;
  }
  /* the tile: (i, j) = the two loops, (m, k) = (m0 + i, k0 + j) */
  tir_Analyzer *an = pass_loops_analyzer(lv, ext, 2);
  int rc = 0;
  for (int d = 0; d < 2 && !rc; d++) {
    tir_Node *di = pass_bind_iters(br, st->indices->items[d]);
    tir_Node *ds = tir_simplify(an, di);
    if (ds != &lv[d]->hdr) rc = -1;
    tir_release(di), tir_release(ds);
  }
  tir_Node *base[2] = {NULL, NULL};
  for (int d = 0; d < 2 && !rc; d++) {
    tir_Node *zeros[2] = {tir_int_imm(lv[0]->hdr.dtype, 0), tir_int_imm(lv[1]->hdr.dtype, 0)};
    tir_Node *b0 = tir_substitute(br->iter_values->items[d], 2, (tir_Var *const *)lv, zeros);
    base[d] = tir_simplify(an, b0);
    tir_Node *want = tir_add(R(base[d]), R((tir_Node *)lv[d]));
    if (!tir_can_prove_equal(an, want, br->iter_values->items[d])) rc = -1;
    tir_release(want), tir_release(b0), tir_release(zeros[0]), tir_release(zeros[1]);
  }
  tir_analyzer_free(an);
  const int64_t BM = ext[0], BK = ext[1], M = N * P * Q;
  if (rc || C % BK || M % BM) {
    fail_at(c, &st->hdr, "this copy", "loop %s: %s; and BK (%lld) must divide C (%lld), BM (%lld) divide N P Q (%lld)", loop->loop_var->name,
            form, (long long)BK, (long long)C, (long long)BM, (long long)M);
    tir_release(base[0]), tir_release(base[1]);
    return -1;
  }
  cp->m0 = base[0];
  cp->k0 = base[1];
  /* the block computes the convolution's A: sampled rows (the first and last pixels of rows,
   * images, the tensor, and a spread) at every filter tap and the first / last channel */
  tir_Analyzer *ev = tir_analyzer_new();
  const tir_Array *idx = ((const tir_BufferLoad *)v)->indices;
  int64_t ms[24];
  int nm = 0;
  int64_t cand[] = {0, 1, Q - 1, Q, P * Q - 1, P * Q, M - 1, M / 2, M / 3, Q / 2, (P / 2) * Q + Q - 1, M - Q};
  for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++)
    if (cand[i] >= 0 && cand[i] < M) ms[nm++] = cand[i];
  for (int a = 0; a < nm && !rc; a++)
    for (int64_t rs = 0; rs < R * S && !rc; rs++)
      for (int e = 0; e < 2 && !rc; e++) {
        int64_t m = ms[a], kk = rs * C + (e ? C - 1 : 0), n = m / (P * Q), p = m / Q % P, q = m % Q, r = rs / S, s2 = rs % S, ch = kk % C;
        int64_t h = p * sh - pt + r * dh, w = q * sw - pl + s2 * dw, vals[2] = {m, kk}, got;
        int inside = h >= 0 && h < H && w >= 0 && w < W;
        if (cond && (!eval_at(ev, b, cond, vals, &got) || (got != 0) != inside)) rc = -1;
        if (!cond && !inside) rc = -1;
        int64_t want[4] = {n, h, w, ch};
        for (int d = 0; d < 4 && !rc && inside; d++)
          if (!eval_at(ev, b, idx->items[d], vals, &got) || got != want[d]) rc = -1;
        if (rc) {
          tir_analyzer_free(ev);
          fail_at(c, &st->hdr, "this copy", "loop %s: the block is not the im2col of %s that %s states (pads %lld, %lld, strides %lld, "
                  "%lld, dilations %lld, %lld, output %lld x %lld, filter %lld x %lld): at m = %lld, k = %lld it should read %s[%lld, "
                  "%lld, %lld, %lld]%s", loop->loop_var->name, X->name, KEY_IM2COL, (long long)pt, (long long)pl, (long long)sh,
                  (long long)sw, (long long)dh, (long long)dw, (long long)P, (long long)Q, (long long)R, (long long)S, (long long)m,
                  (long long)kk, X->name, (long long)n, (long long)h, (long long)w, (long long)ch, inside ? "" : " (outside: zero)");
          return -1;
        }
      }
  tir_analyzer_free(ev);
  cp->dst = st->buffer;
  cp->src = X;
  cp->im2col = 1;
  cp->rank = 2;
  cp->box[0] = BM;
  cp->box[1] = BK;
  cp->mc_stride = cp->mc_count = 1;
  cp->swizzle = tir_swizzle_ptx_mode(st->buffer->swizzle);
  if (cp->swizzle < 0) {
    fail_at(c, &st->hdr, "this copy", "the TMA destination %s has a swizzle that is not one of TMA's modes", st->buffer->name);
    return -1;
  }
  tir_TmaDesc dd;
  memset(&dd, 0, sizeof dd);
  dd.dtype = tir_dtype_element(X->hdr.dtype);
  dd.rank = 4;
  dd.swizzle = cp->swizzle;
  dd.im2col = 1;
  for (int d = 0; d < 4; d++) dd.dims[d] = shp[d];
  dd.box[0] = BM, dd.box[1] = BK;
  dd.lower[0] = -pt, dd.lower[1] = -pl;
  /* the box's last position is exactly the last output's: lower + (P - 1) sh = H - 1 + upper */
  dd.upper[0] = -pt + (P - 1) * sh - H + 1, dd.upper[1] = -pl + (Q - 1) * sw - W + 1;
  dd.estride[0] = sh, dd.estride[1] = sw;
  char why[256];
  if (tir_tma_desc_check(&dd, why, sizeof why)) {
    fail_at(c, &st->hdr, "this copy", "loop %s: the TMA im2col copy of %s into %s: %s", loop->loop_var->name, X->name, st->buffer->name, why);
    return -1;
  }
  return 0;
}

/* A cp_async_gather copy: a nest (its loops bound as the schedule made them, threadIdx.x the
 * producer warpgroup's lanes) around one block writing a shared tile allocated in the loop body,
 * whatever its value (a gather, a zero fill).  The statement itself becomes the producer's copy.
 * 0, or -1 with the error set. */
typedef struct {
  const tir_BufferStore *st;
  int blocks;
} GatherScan;

static int gather_scan(const tir_Node *n, void *p) {
  GatherScan *g = p;
  if (n->kind == TIR_Block) {
    g->blocks++;
    const tir_Block *b = (const tir_Block *)n;
    if (b->body->kind == TIR_BufferStore) g->st = (const tir_BufferStore *)b->body;
  }
  return 0;
}

static int parse_gather(Ctx *c, const tir_For *loop, const tir_Node *s, const tir_Array *allocs, Copy *cp) {
  GatherScan g = {NULL, 0};
  tir_visit(s, gather_scan, &g);
  int in_body = 0;
  if (g.st)
    for (int i = 0; i < allocs->size; i++) in_body |= allocs->items[i] == &g.st->buffer->hdr;
  if (g.blocks != 1 || !g.st || !tir_scope_is_shared(g.st->buffer->scope) || !in_body) {
    fail_at(c, s, "this copy", "loop %s: a %s copy must be a loop nest around one block storing into a shared tile allocated in "
            "the pipelined loop", loop->loop_var->name, KEY_GATHER);
    return -1;
  }
  cp->dst = g.st->buffer;
  cp->src = NULL;
  cp->gather = 1;
  cp->mc_stride = cp->mc_count = 1;
  return 0;
}

/* Parses a marked copy: the nest, the box and its coordinates.  0, or -1 with the error set. */
static int parse_copy(Ctx *c, const tir_For *loop, const tir_Node *s, const tir_Array *allocs, Copy *cp) {
  const tir_Var *lv[TIR_TMA_MAX_RANK + 4];
  int64_t ext[TIR_TMA_MAX_RANK + 4];
  int nl = 0;
  const tir_Node *x = s;
  while (x->kind == TIR_For) {
    const tir_For *f = (const tir_For *)x;
    int64_t e;
    if ((f->kind != TIR_FOR_SERIAL && f->kind != TIR_FOR_UNROLLED) || !tir_is_zero(f->min) || !tir_is_const_int(f->extent, &e) ||
        nl == TIR_TMA_MAX_RANK + 4) {
      fail_at(c, x, "this loop", "loop %s: the TMA copy's loops must be serial, start at 0 and have constant extents (at most %d), "
              "one per box dimension: leave the cache_read's loops unbound and unsplit", loop->loop_var->name, TIR_TMA_MAX_RANK);
      return -1;
    }
    lv[nl] = f->loop_var;
    ext[nl++] = e;
    x = f->body;
  }
  const char *form = "the TMA copy must be one block dst[i, ..] = src[base + i, ..] (a dense box of a global tensor into a shared "
                     "tile allocated in the pipelined loop, no predicate)";
  if (x->kind != TIR_BlockRealize || !tir_is_one(((const tir_BlockRealize *)x)->predicate)) {
    fail_at(c, x, "not a copy block", "loop %s: %s", loop->loop_var->name, form);
    return -1;
  }
  const tir_BlockRealize *br = (const tir_BlockRealize *)x;
  const tir_Block *b = br->block;
  if (b->body->kind != TIR_BufferStore || b->init || b->match_buffers->size || b->alloc_buffers->size) {
    fail_at(c, x, "not a copy block", "loop %s: %s", loop->loop_var->name, form);
    return -1;
  }
  const tir_BufferStore *st = (const tir_BufferStore *)b->body;
  if (st->value->kind != TIR_BufferLoad) {
    fail_at(c, &st->hdr, "not a plain copy", "loop %s: %s", loop->loop_var->name, form);
    return -1;
  }
  const tir_BufferLoad *ld = (const tir_BufferLoad *)st->value;
  cp->dst = st->buffer;
  cp->src = ld->buffer;
  int in_body = 0;
  for (int i = 0; i < allocs->size; i++) in_body |= allocs->items[i] == &st->buffer->hdr;
  tir_DType et = tir_dtype_element(ld->buffer->hdr.dtype);
  if (!tir_scope_is_shared(st->buffer->scope) || !tir_scope_is_global(ld->buffer->scope) || !in_body ||
      tir_tma_cuda_dtype(et) < 0 || tir_dtype_bytes(et) != tir_dtype_bytes(tir_dtype_element(st->buffer->hdr.dtype)) ||
      ld->buffer->strides->size || st->buffer->strides->size || !tir_is_zero(st->buffer->elem_offset)) {
    fail_at(c, &st->hdr, "this copy", "loop %s: %s; here %s (scope %s) <- %s (scope %s)%s", loop->loop_var->name, form,
            st->buffer->name, st->buffer->scope, ld->buffer->name, ld->buffer->scope,
            in_body ? "" : ", and the tile is not allocated in the loop body");
    return -1;
  }
  int rank = ld->indices->size;
  if (rank < 1 || rank > TIR_TMA_MAX_RANK || st->indices->size != rank || nl > rank) {
    fail_at(c, &st->hdr, "this copy", "loop %s: %s; a TMA box has as many dimensions as the tile and the tensor (1 .. %d)",
            loop->loop_var->name, form, TIR_TMA_MAX_RANK);
    return -1;
  }
  tir_Analyzer *an = pass_loops_analyzer(lv, ext, nl);
  int rc = 0;
  int used[TIR_TMA_MAX_RANK + 4] = {0};
  for (int d = 0; d < rank && !rc; d++) {
    tir_Node *si = pass_bind_iters(br, ld->indices->items[d]);
    tir_Node *di = pass_bind_iters(br, st->indices->items[d]);
    tir_Node *dsim = tir_simplify(an, di);
    /* the box dimension: the loop the tile index is, or none (a box of 1) */
    int which = -1;
    for (int i = 0; i < nl; i++)
      if (dsim == &lv[i]->hdr) which = i;
    int64_t zc;
    int unit = tir_is_const_int(dsim, &zc) && zc == 0;
    if ((which < 0 && !unit) || (which >= 0 && used[which])) rc = -1;
    if (which >= 0) used[which] = 1;
    tir_Node *base = NULL;
    if (!rc) {
      tir_Node *off = which >= 0 ? tir_sub(R(si), R((tir_Node *)lv[which])) : R(si);
      base = tir_simplify(an, off);
      tir_release(off);
      /* the base may not depend on the copy's own loops */
      for (int i = 0; i < nl && !rc; i++) {
        tir_Node *z = tir_i32(0);
        tir_Node *b0 = tir_substitute(base, 1, (tir_Var *const *)&lv[i], &z);
        if (!tir_can_prove_equal(an, b0, base)) rc = -1;
        tir_release(b0), tir_release(z);
      }
    }
    cp->base[d] = base;
    cp->box[d] = which >= 0 ? ext[which] : 1;
    int64_t sh;
    if (!rc && (!tir_is_const_int(st->buffer->shape->items[d], &sh) || sh != cp->box[d])) rc = -1;
    tir_release(si), tir_release(di), tir_release(dsim);
  }
  /* every loop walks one box dimension */
  for (int i = 0; i < nl && !rc; i++)
    if (!used[i]) rc = -1;
  cp->rank = rank;
  tir_analyzer_free(an);
  if (rc) {
    fail_at(c, &st->hdr, "this copy", "loop %s: %s; here the tile %s is not the box of %s that the copy's loops walk in order "
            "(each tile index one loop, each tensor index base + that loop, the tile's shape the box)",
            loop->loop_var->name, form, st->buffer->name, ld->buffer->name);
    return -1;
  }
  /* the swizzle the TMA copy must write: the destination's storage_swizzle (the Buffer's swizzle
   * field, include/tir/swizzle.h), which must be one of the PTX modes TMA has */
  cp->swizzle = tir_swizzle_ptx_mode(st->buffer->swizzle);
  if (cp->swizzle < 0) {
    char sw[24];
    fail_at(c, &st->hdr, "this copy", "the TMA destination %s has swizzle %s, which is not one of TMA's modes (\"32B\", \"64B\", \"128B\")",
            st->buffer->name, tir_swizzle_str(st->buffer->swizzle, sw));
    return -1;
  }
  tir_TmaDesc dd;
  memset(&dd, 0, sizeof dd);
  dd.dtype = et;
  dd.rank = rank;
  dd.swizzle = cp->swizzle;
  for (int d = 0; d < rank; d++) {
    int64_t v;
    dd.dims[d] = tir_is_const_int(ld->buffer->shape->items[d], &v) ? v : 0;
    dd.box[d] = cp->box[d];
  }
  char why[256];
  if (tir_tma_desc_check(&dd, why, sizeof why)) {
    fail_at(c, &st->hdr, "this copy", "loop %s: the TMA copy of %s into %s: %s", loop->loop_var->name, ld->buffer->name,
            st->buffer->name, why);
    return -1;
  }
  /* tma_multicast = {stride, count}: the count CTAs of the cluster whose ranks differ from this
   * one's only in the digit (rank / stride) % count copy the same box; each copies 1 / count of
   * its rows (dimension 0) and multicasts them to all of them */
  cp->mc_stride = cp->mc_count = 1;
  const tir_Node *mc = tir_ann_get(b->annotations, KEY_MC);
  if (mc) {
    const tir_Array *ma = mc->kind == TIR_Array ? (const tir_Array *)mc : NULL;
    if (!ma || ma->size != 2 || !tir_is_const_int(ma->items[0], &cp->mc_stride) || !tir_is_const_int(ma->items[1], &cp->mc_count) ||
        cp->mc_stride < 1 || cp->mc_count < 1) {
      fail_at(c, x, "this copy", "loop %s: %s must be a list {stride, count} of positive integers (the count CTAs of ranks base + "
              "j * stride in the cluster share the box)", loop->loop_var->name, KEY_MC);
      return -1;
    }
    int64_t rows = cp->box[0] / cp->mc_count, rowbytes = tir_dtype_bytes(et);
    for (int d = 1; d < rank; d++) rowbytes *= cp->box[d];
    if (cp->box[0] % cp->mc_count || (rows * rowbytes) % TIR_TMA_SMEM_ALIGN) {
      fail_at(c, x, "this copy", "loop %s: %s = {%lld, %lld}: the box's %lld rows split into %lld slices of whole rows whose bytes "
              "are a multiple of %d (each slice lands where a TMA destination may start, keeping the swizzle's atoms whole)",
              loop->loop_var->name, KEY_MC, (long long)cp->mc_stride, (long long)cp->mc_count, (long long)cp->box[0],
              (long long)cp->mc_count, TIR_TMA_SMEM_ALIGN);
      return -1;
    }
  }
  return 0;
}

/* ---- versions ---- */
typedef struct {
  Copy *cp;
  int n;
  tir_Node *stage; /* (k - min) % N */
} Ver;

static const Copy *ver_of(const Ver *v, const tir_Buffer *b) {
  for (int i = 0; i < v->n; i++)
    if (v->cp[i].dst == b || v->cp[i].dst->data == b->data) return &v->cp[i];
  return NULL;
}


static tir_Node *ver_mut(const tir_Node *n, void *arg) {
  Ver *v = arg;
  const Copy *cp;
  switch (n->kind) {
    case TIR_BufferLoad: {
      if (!ver_of(v, ((const tir_BufferLoad *)n)->buffer)) return NULL;
      tir_Node *m = tir_mutate_children(n, ver_mut, arg);
      if (!m) return TIR_MUTATE_ERROR;
      const tir_BufferLoad *l = (const tir_BufferLoad *)m;
      cp = ver_of(v, l->buffer);
      tir_Node *out = tir_buffer_load(R(cp->ver), pass_prepend(R(v->stage), l->indices));
      tir_release(m);
      return out;
    }
    case TIR_BufferStore: {
      if (!ver_of(v, ((const tir_BufferStore *)n)->buffer)) return NULL;
      tir_Node *m = tir_mutate_children(n, ver_mut, arg);
      if (!m) return TIR_MUTATE_ERROR;
      const tir_BufferStore *s = (const tir_BufferStore *)m;
      cp = ver_of(v, s->buffer);
      tir_Node *out = tir_buffer_store(R(cp->ver), R(s->value), pass_prepend(R(v->stage), s->indices));
      tir_release(m);
      return out;
    }
    case TIR_BufferRegion: {
      const tir_BufferRegion *br = (const tir_BufferRegion *)n;
      if (!(cp = ver_of(v, br->buffer))) return NULL;
      tir_Node *m = tir_mutate_children(n, ver_mut, arg);
      if (!m) return TIR_MUTATE_ERROR;
      tir_Node *rg = &tir_range(R(v->stage), tir_int_imm(v->stage->dtype, 1))->hdr;
      tir_Node *out = &tir_buffer_region(R(cp->ver), pass_prepend(rg, ((const tir_BufferRegion *)m)->region))->hdr;
      tir_release(m);
      return out;
    }
    default: return NULL;
  }
}

/* ---- emission helpers ---- */
static tir_Node *call_stmt(const char *op, tir_Array *args) { return tir_evaluate(tir_call(TIR_VOID, op, args)); }
static tir_Node *bar_at(tir_Buffer *bar, tir_Node *i) { return tir_address_of(tir_buffer_load(R(bar), tir_array_of(1, i))); }

/* Runs body on the CTA's thread 0: a threadIdx.x loop of c->lanes (so a kernel without one gets whole
 * warps) and 0 in every enclosing threadIdx loop. */
static tir_Node *leader(Ctx *c, tir_Node *body) {
  int have_x = 0;
  for (int i = 0; i < c->n_threads; i++) have_x |= c->thread_x[i];
  tir_Var *tx = have_x ? NULL : tir_var_new("tma_leader", TIR_INT32);
  tir_Node *cond = tx ? tir_cmp(TIR_EQ, R((tir_Node *)tx), tir_i32(0)) : tir_bool_imm(1);
  for (int i = 0; i < c->n_threads; i++)
    cond = tir_and(cond, tir_cmp(TIR_EQ, R((tir_Node *)c->threads[i]), tir_int_imm(c->threads[i]->hdr.dtype, 0)));
  tir_Node *s = tir_if(cond, body, NULL);
  if (!tx) return s;
  return tir_for(tx, tir_i32(0), tir_i32((int)(c->cta_threads[0] > c->lanes ? c->cta_threads[0] : c->lanes)), TIR_FOR_THREAD_BINDING,
                 "threadIdx.x", NULL, s);
}

/* The CTA's rank in its cluster (%cluster_ctarank) and, for a multicast copy, its slice
 * (rank / stride) % count and the first rank of its group, rank - slice * stride. */
static tir_Node *cluster_rank(void) { return tir_call(TIR_INT32, "ptx_cluster_ctarank", tir_array_empty()); }
static tir_Node *mc_slice(const Copy *cp) {
  return tir_floormod(tir_floordiv(cluster_rank(), tir_i32((int)cp->mc_stride)), tir_i32((int)cp->mc_count));
}
static tir_Node *mc_base(const Copy *cp) { return tir_sub(cluster_rank(), tir_mul(mc_slice(cp), tir_i32((int)cp->mc_stride))); }

/* The tma_im2col copy of iteration `it` into stage `s` (parse_im2col): coordinates (n, h, w, c)
 * of the tile's first pixel and channel, im2col offsets (r dh, s dw) of its filter tap.  Owned. */
static tir_Node *im2col_issue(const tir_For *loop, const Copy *cp, tir_Buffer *full, tir_Node *it, tir_Node *s) {
  const int64_t *g = cp->geo;
  const int64_t pt = g[0], pl = g[1], sh = g[2], sw = g[3], dh = g[4], dw = g[5], P = g[6], Q = g[7], S = g[9];
  int64_t C;
  tir_is_const_int(cp->src->shape->items[3], &C);
  tir_Node *m0 = tir_cast(TIR_INT32, tir_substitute(cp->m0, 1, (tir_Var *const *)&loop->loop_var, &it));
  tir_Node *k0 = tir_cast(TIR_INT32, tir_substitute(cp->k0, 1, (tir_Var *const *)&loop->loop_var, &it));
  tir_Node *n = tir_floordiv(R(m0), tir_i32((int)(P * Q)));
  tir_Node *h = tir_sub(tir_mul(tir_floormod(tir_floordiv(R(m0), tir_i32((int)Q)), tir_i32((int)P)), tir_i32((int)sh)), tir_i32((int)pt));
  tir_Node *w = tir_sub(tir_mul(tir_floormod(R(m0), tir_i32((int)Q)), tir_i32((int)sw)), tir_i32((int)pl));
  tir_Node *ch = tir_floormod(R(k0), tir_i32((int)C));
  tir_Node *tap = tir_floordiv(R(k0), tir_i32((int)C));
  tir_Node *oh = tir_mul(tir_floordiv(R(tap), tir_i32((int)S)), tir_i32((int)dh));
  tir_Node *ow = tir_mul(tir_floormod(tap, tir_i32((int)S)), tir_i32((int)dw));
  tir_release(m0), tir_release(k0);
  char ts[32];
  tir_DType et = tir_dtype_element(cp->src->hdr.dtype);
  int64_t H, W;
  tir_is_const_int(cp->src->shape->items[1], &H);
  tir_is_const_int(cp->src->shape->items[2], &W);
  tir_Array *da = tir_array_of(4, R((tir_Node *)cp->src->data), tir_string_imm(tir_dtype_str(et, ts)), tir_i32(cp->swizzle), tir_i32(4));
  for (int d = 0; d < 4; d++) da = tir_array_push(da, R(cp->src->shape->items[d]));
  int64_t fields[6] = {-pt, -pl, -pt + (P - 1) * sh - H + 1, -pl + (Q - 1) * sw - W + 1, sh, sw};
  for (int i = 0; i < 6; i++) da = tir_array_push(da, tir_i32((int)fields[i]));
  da = tir_array_push(da, tir_i32((int)cp->box[0]));
  da = tir_array_push(da, tir_i32((int)cp->box[1]));
  tir_Node *desc = tir_call(TIR_HANDLE, "tma_im2col_descriptor", da);
  tir_Array *zeros = tir_array_of(1, R(s));
  for (int d = 0; d < 2; d++) zeros = tir_array_push(zeros, tir_int_imm(cp->ver->shape->items[d + 1]->dtype, 0));
  tir_Array *args = tir_array_of(3, tir_address_of(tir_buffer_load(R(cp->ver), zeros)), desc, bar_at(full, R(s)));
  tir_Node *co[6] = {n, h, w, ch, oh, ow};
  for (int i = 0; i < 6; i++) args = tir_array_push(args, co[i]);
  return call_stmt("ptx_tma_load_im2col", args);
}

/* The copies of original iteration `it` (an expression) into stage `s`: expect_tx, then one
 * TMA copy per tile -- for a multicast copy its slice, to every CTA of its group (the
 * expect_tx counts the whole box: the other CTAs' slices land here too).  Owned. */
static tir_Node *issue(const tir_For *loop, Copy *cps, int n, tir_Buffer *full, tir_Node *it, tir_Node *s) {
  int64_t bytes = 0;
  tir_Array *items = tir_array_empty();
  for (int i = 0; i < n; i++) {
    Copy *cp = &cps[i];
    if (cp->gather) continue; /* (the producer warpgroup's own copies: see pipeline) */
    if (cp->im2col) {
      items = tir_array_push(items, im2col_issue(loop, cp, full, it, s));
      bytes += cp->box[0] * cp->box[1] * tir_dtype_bytes(tir_dtype_element(cp->src->hdr.dtype));
      continue;
    }
    tir_DType et = tir_dtype_element(cp->src->hdr.dtype);
    int64_t bb = tir_dtype_bytes(et);
    for (int d = 0; d < cp->rank; d++) bb *= cp->box[d];
    bytes += bb;
    char ts[32];
    tir_Array *da = tir_array_of(4, R((tir_Node *)cp->src->data), tir_string_imm(tir_dtype_str(et, ts)), tir_i32(cp->swizzle),
                                 tir_i32(cp->rank));
    const int mc = cp->mc_count > 1;
    const int64_t rows = cp->box[0] / cp->mc_count;
    for (int d = 0; d < cp->rank; d++) da = tir_array_push(da, R(cp->src->shape->items[d]));
    for (int d = 0; d < cp->rank; d++) da = tir_array_push(da, tir_i32((int)(d == 0 ? rows : cp->box[d])));
    tir_Node *desc = tir_call(TIR_HANDLE, "tma_descriptor", da);
    tir_Array *zeros = tir_array_of(1, R(s));
    for (int d = 0; d < cp->rank; d++)
      zeros = tir_array_push(zeros, d == 0 && mc ? tir_cast(cp->ver->shape->items[1]->dtype, tir_mul(mc_slice(cp), tir_i32((int)rows)))
                                                 : tir_int_imm(cp->ver->shape->items[d + 1]->dtype, 0));
    tir_Array *args = tir_array_of(3, tir_address_of(tir_buffer_load(R(cp->ver), zeros)), desc, bar_at(full, R(s)));
    if (mc) {
      /* ctaMask: bit base + j stride for j < count (16 bits: a cluster has at most 16 CTAs) */
      int64_t m0 = 0;
      for (int64_t j = 0; j < cp->mc_count; j++) m0 |= (int64_t)1 << (j * cp->mc_stride);
      args = tir_array_push(args, tir_call(TIR_INT32, "shift_left", tir_array_of(2, tir_i32((int)m0), mc_base(cp))));
    }
    for (int d = 0; d < cp->rank; d++) {
      tir_Node *cd = tir_substitute(cp->base[d], 1, (tir_Var *const *)&loop->loop_var, &it);
      if (d == 0 && mc) cd = tir_add(cd, tir_cast(cd->dtype, tir_mul(mc_slice(cp), tir_i32((int)rows))));
      args = tir_array_push(args, tir_cast(TIR_INT32, cd));
    }
    items = tir_array_push(items, call_stmt(mc ? "ptx_tma_load_multicast" : "ptx_tma_load", args));
  }
  tir_Array *all = tir_array_of(1, call_stmt("ptx_mbarrier_arrive_expect_tx", tir_array_of(2, bar_at(full, R(s)), tir_i32((int)bytes))));
  tir_Array *cat = tir_array_concat(all, items);
  tir_release(all), tir_release(items);
  tir_release(it), tir_release(s);
  return tir_seq(cat);
}

/* The wgmma groups the statements leave in flight: the argument of their last wgmma_wait_group
 * (0 without wgmma groups); -1 when a group is committed after the last wait (never waited). */
typedef struct {
  int64_t pending;
  int committed;
} Groups;

static int groups_fn(const tir_Node *n, void *p) {
  Groups *g = p;
  if (n->kind != TIR_Call) return 0;
  const tir_Call *c = (const tir_Call *)n;
  if (strcmp(c->op, "wgmma_commit_group") == 0) g->committed = 1;
  if (strcmp(c->op, "wgmma_wait_group") == 0 && c->args->size == 1 && tir_is_const_int(c->args->items[0], &g->pending)) g->committed = 0;
  return 0;
}

/* Whether the statements read the tiles only as wgmma operands (wgmma_operand / wgmma_desc):
 * reads of the whole warpgroup's wgmma, complete for all its threads once one thread's
 * wgmma_wait_group has returned (PTX ISA 9.7.15 wgmma.wait_group), so one thread of each
 * warpgroup may release the stage for all of them (CUTLASS's consumer_release in a cluster). */
typedef struct {
  const Copy *cps;
  int n, generic;
} TileReads;

static int tile_reads_fn(const tir_Node *n, void *p) {
  TileReads *t = p;
  if (n->kind == TIR_Call && (strcmp(((const tir_Call *)n)->op, "wgmma_operand") == 0 || strcmp(((const tir_Call *)n)->op, "wgmma_desc") == 0))
    return 1; /* (not its operands) */
  if (n->kind == TIR_BufferLoad)
    for (int i = 0; i < t->n; i++)
      if (((const tir_BufferLoad *)n)->buffer->data == t->cps[i].dst->data) t->generic = 1;
  return 0;
}

static int is_plain_opaque(const tir_BlockRealize *br) {
  const tir_Block *b = br->block;
  return tir_is_one(br->predicate) && b->iter_vars->size == 0 && !b->init && b->match_buffers->size == 0;
}

static tir_Node *pipeline(Ctx *c, const tir_For *f) {
  int64_t N;
  const tir_Node *an = tir_ann_get(f->annotations, KEY_STAGES);
  if (!tir_is_const_int(an, &N) || N < 1 || N > 32)
    return fail_at(c, &f->hdr, "pipelined loop", "loop %s: %s must be an integer 1 .. 32 (the number of shared-memory stages)",
                   f->loop_var->name, KEY_STAGES);
  if (f->kind != TIR_FOR_SERIAL && f->kind != TIR_FOR_UNROLLED)
    return fail_at(c, &f->hdr, "pipelined loop", "loop %s: only serial loops can be TMA-pipelined", f->loop_var->name);
  if (tir_ann_get(f->annotations, "software_pipeline_stage"))
    return fail_at(c, &f->hdr, "pipelined loop", "loop %s has both %s and software_pipeline_stage: one pipeline per loop",
                   f->loop_var->name, KEY_STAGES);
  tir_Array *allocs = tir_array_empty();
  const tir_Node *body = f->body;
  while (body->kind == TIR_BlockRealize && is_plain_opaque((const tir_BlockRealize *)body)) {
    const tir_Block *b = ((const tir_BlockRealize *)body)->block;
    tir_Array *x = tir_array_concat(allocs, b->alloc_buffers);
    tir_release(allocs);
    allocs = x;
    body = b->body;
  }
  const tir_Node *const *kids = &body;
  int nk = 1;
  if (body->kind == TIR_SeqStmt) {
    kids = (const tir_Node *const *)((const tir_SeqStmt *)body)->seq->items;
    nk = ((const tir_SeqStmt *)body)->seq->size;
  }
  Copy *cps = calloc((size_t)nk, sizeof *cps);
  int ncp = 0;
  tir_Node *result = TIR_MUTATE_ERROR;
  int ngather = 0, gfail = 0;
  while (ncp < nk) {
    int marked = 0;
    tir_visit(kids[ncp], has_copy_mark, &marked);
    if (!marked) break;
    if (marked != 1 && marked != 2 && marked != 4) {
      fail_at(c, kids[ncp], "this copy", "loop %s: a copy is one of %s (TMA), %s (the producer's cp.async) or %s (TMA im2col)",
              f->loop_var->name, KEY_COPY, KEY_GATHER, KEY_IM2COL);
      goto done;
    }
    if (marked == 2 ? parse_gather(c, f, kids[ncp], allocs, &cps[ncp])
        : marked == 4 ? parse_im2col(c, f, kids[ncp], allocs, &cps[ncp])
                      : parse_copy(c, f, kids[ncp], allocs, &cps[ncp]))
      goto done;
    ngather += marked == 2;
    cps[ncp].stmt = kids[ncp];
    ncp++;
  }
  if (ncp == 0) {
    fail_at(c, &f->hdr, "pipelined loop", "loop %s is annotated %s but its body does not start with copies marked %s "
            "(sch:annotate(copy_block, \"%s\", 1))", f->loop_var->name, KEY_STAGES, KEY_COPY, KEY_COPY);
    goto done;
  }
  for (int i = ncp; i < nk; i++) {
    int marked = 0;
    tir_visit(kids[i], has_copy_mark, &marked);
    if (marked) {
      fail_at(c, kids[i], "a later copy", "loop %s: the %s copies must come first in the loop body, before the statements "
              "that use the tiles", f->loop_var->name, KEY_COPY);
      goto done;
    }
  }
  Groups G = {0, 0};
  for (int i = ncp; i < nk; i++) tir_visit(kids[i], groups_fn, &G);
  if (G.committed || G.pending < 0 || G.pending >= N) {
    fail_at(c, &f->hdr, "pipelined loop", G.committed ? "loop %s: a wgmma group is committed after the body's last wgmma_wait_group, "
            "so no step of the TMA pipeline can tell when its stage is free" : "loop %s: the body leaves %lld wgmma groups in flight "
            "(wgmma_wait_group), which needs more than that many stages (%s = %lld)", f->loop_var->name, (long long)G.pending,
            KEY_STAGES, (long long)N);
    goto done;
  }
  int ws = tir_ann_get(f->annotations, KEY_WS) != NULL;
  /* ping-pong consumers (warp_specialize's 4th value T > 1, inject_warp_specialization.c): T
   * consumer warpgroups take the tiles in turn, so each releases its own tile's steps: none
   * across the tile boundary (the next step is another warpgroup's), the last P after the loop */
  int64_t teams = 1;
  if (ws) {
    const tir_Node *wa = tir_ann_get(f->annotations, KEY_WS);
    if (wa->kind == TIR_Array && ((const tir_Array *)wa)->size == 4 && !tir_is_const_int(((const tir_Array *)wa)->items[3], &teams)) teams = 1;
  }
  if (teams > 1 && (!c->in_loop || tir_ann_get(f->annotations, KEY_CLUSTER) || ngather)) {
    fail_at(c, &f->hdr, "pipelined loop", "loop %s: %s with %lld ping-pong consumer warpgroups needs the pipeline in a persistent "
            "kernel's tile loop (the warpgroups take its tiles in turn), without %s or %s copies", f->loop_var->name, KEY_WS,
            (long long)teams, KEY_CLUSTER, KEY_GATHER);
    goto done;
  }
  if (ngather && !ws) {
    fail_at(c, &f->hdr, "pipelined loop", "loop %s: %s copies are gathered by a producer warpgroup: the loop needs %s too",
            f->loop_var->name, KEY_GATHER, KEY_WS);
    goto done;
  }
  if (ngather && tir_ann_get(f->annotations, KEY_CLUSTER)) {
    fail_at(c, &f->hdr, "pipelined loop", "loop %s: %s copies with %s are not supported: a cluster's CTAs share a stage's TMA copies "
            "by multicast, but the producer's cp.async gather lands in its own CTA's shared memory only (build it without a cluster)",
            f->loop_var->name, KEY_GATHER, KEY_CLUSTER);
    goto done;
  }
  if (ws && c->in_loop > 8) {
    fail_at(c, &f->hdr, "pipelined loop", "loop %s: %s under more than 8 loops", f->loop_var->name, KEY_WS);
    goto done;
  }
  /* tma_cluster = {x, y, z}: the kernel runs as thread-block clusters of that shape */
  int64_t cdims[3] = {1, 1, 1}, csize = 1;
  const tir_Node *can = tir_ann_get(f->annotations, KEY_CLUSTER);
  if (can) {
    const tir_Array *ca = can->kind == TIR_Array ? (const tir_Array *)can : NULL;
    int ok = ca && ca->size == 3;
    for (int d = 0; ok && d < 3; d++) ok = tir_is_const_int(ca->items[d], &cdims[d]) && cdims[d] >= 1;
    csize = ok ? cdims[0] * cdims[1] * cdims[2] : 0;
    if (!ok || csize > MAX_CLUSTER) {
      fail_at(c, &f->hdr, "pipelined loop", "loop %s: %s must be a list {x, y, z} of positive integers, at most %d CTAs in all "
              "(the thread-block cluster's shape)", f->loop_var->name, KEY_CLUSTER, MAX_CLUSTER);
      goto done;
    }
    if (csize > 1 && c->in_loop && !ws) {
      fail_at(c, &f->hdr, "pipelined loop", "loop %s: %s inside a loop (a persistent kernel's tiles) needs %s: the pipeline re-armed "
              "per tile would need a cluster barrier per tile", f->loop_var->name, KEY_CLUSTER, KEY_WS);
      goto done;
    }
  }
  /* the multicast groups: each within the cluster, the digits of different groups apart (so
   * that two groups meet only in this CTA) */
  for (int i = 0; i < ncp; i++) {
    const Copy *a = &cps[i];
    if (a->mc_count == 1) continue;
    if (csize % (a->mc_stride * a->mc_count)) {
      fail_at(c, a->stmt, "this copy", "loop %s: %s = {%lld, %lld} reaches past the cluster's %lld CTAs (%s %s)", f->loop_var->name,
              KEY_MC, (long long)a->mc_stride, (long long)a->mc_count, (long long)csize, KEY_CLUSTER,
              can ? "does not divide by stride * count" : "is not set: no cluster");
      goto done;
    }
    for (int j = 0; j < i; j++) {
      const Copy *b = &cps[j];
      if (b->mc_count == 1 || (b->mc_stride == a->mc_stride && b->mc_count == a->mc_count)) continue;
      if (!(a->mc_stride * a->mc_count <= b->mc_stride || b->mc_stride * b->mc_count <= a->mc_stride)) {
        fail_at(c, a->stmt, "this copy", "loop %s: %s groups {%lld, %lld} and {%lld, %lld} overlap in more than this CTA (they must "
                "be different digits of the rank)", f->loop_var->name, KEY_MC, (long long)a->mc_stride, (long long)a->mc_count,
                (long long)b->mc_stride, (long long)b->mc_count);
        goto done;
      }
    }
  }
  /* the distinct groups (whose CTAs write into this CTA's stages, and it into theirs) and U, the
   * CTAs whose consumers release a stage of this one: itself and the others of every group */
  int ngroups = 0, grp[8];
  int64_t U = 1;
  for (int i = 0; i < ncp && ngroups < 8; i++) {
    int seen = cps[i].mc_count == 1;
    for (int j = 0; j < ngroups && !seen; j++) seen = cps[grp[j]].mc_stride == cps[i].mc_stride && cps[grp[j]].mc_count == cps[i].mc_count;
    if (!seen) {
      grp[ngroups++] = i;
      U += cps[i].mc_count - 1;
    }
  }
  /* in a cluster, where a release is also remote arrivals: one per warpgroup when the tiles are
   * read by wgmma only (the kernel's threadIdx.x one warpgroup, bound by no loop around) */
  int wg_release = 0;
  if (csize > 1 && c->lanes == 128 && c->cta_threads[0] <= 128) {
    TileReads tr = {cps, ncp, 0};
    int have_x = 0;
    for (int i = 0; i < c->n_threads; i++) have_x |= c->thread_x[i];
    for (int i = ncp; i < nk; i++) tir_visit(kids[i], tile_reads_fn, &tr);
    wg_release = !tr.generic && !have_x;
  }
  {
    const int64_t P = G.pending;
    tir_DType lt = f->loop_var->hdr.dtype;
    tir_Node *k0 = tir_sub(R((tir_Node *)f->loop_var), R(f->min));
    /* warp-specialized inside loops (a persistent kernel's tiles): the mbarriers are armed once
     * and the steps counted across the runs of the pipeline, g = (the enclosing loops'
     * iteration, linearized) * E + k - min; the producer walks the same loops */
    tir_Node *lin = NULL;
    for (int i = 0; ws && i < c->in_loop; i++) {
      const tir_For *o = c->loops[i];
      tir_Node *it0 = tir_sub(R((tir_Node *)o->loop_var), R(o->min));
      lin = lin ? tir_add(tir_mul(lin, tir_cast(lt, R(o->extent))), tir_cast(lt, it0)) : tir_cast(lt, it0);
    }
    if (lin) k0 = tir_add(tir_mul(R(lin), tir_cast(lt, R(f->extent))), k0);
    Ver V = {cps, ncp, tir_floormod(R(k0), tir_int_imm(lt, N))};
    tir_Node *parity = tir_floormod(tir_floordiv(k0, tir_int_imm(lt, N)), tir_int_imm(lt, 2));
    for (int i = 0; i < ncp; i++) {
      cps[i].ver = pass_versioned_buffer(cps[i].dst, (int)N);
    }
    tir_Buffer *full = tir_buffer_new("tma_full", tir_dtype(TIR_DT_UINT, 64, 1), tir_array_of(1, tir_i32((int)N)), NULL, NULL, "shared");
    tir_Buffer *empty = tir_buffer_new("tma_empty", tir_dtype(TIR_DT_UINT, 64, 1), tir_array_of(1, tir_i32((int)N)), NULL, NULL, "shared");
    int64_t T = (c->cta_threads[0] > c->lanes ? c->cta_threads[0] : c->lanes) * (c->cta_threads[1] > 0 ? c->cta_threads[1] : 1) *
                (c->cta_threads[2] > 0 ? c->cta_threads[2] : 1);
    /* init */
    tir_Var *si = tir_var_new("s", TIR_INT32);
    /* full[s]: the leader's arrive.expect_tx (when a TMA copy fills the stage) and, with gathers,
     * one cp.async.mbarrier.arrive.noinc per producer thread */
    const int ntma = ncp - ngather;
    tir_Node *init_body = tir_seq2(call_stmt("ptx_mbarrier_init", tir_array_of(2, bar_at(full, R((tir_Node *)si)),
                                                                              tir_i32((ntma ? 1 : 0) + (ngather ? GATHER_THREADS : 0)))),
                                   call_stmt("ptx_mbarrier_init", tir_array_of(2, bar_at(empty, R((tir_Node *)si)),
                                                                                tir_i32((int)((wg_release ? T / 128 : T) * U)))));
    /* the inits (generic-proxy writes) made visible to the TMA unit's complete_tx (async proxy),
     * in a cluster also to the other CTAs' multicasts and arrivals (fence.mbarrier_init, then a
     * cluster barrier before any of them) */
    tir_Node *fences = call_stmt("ptx_fence_proxy_async", tir_array_empty());
    if (csize > 1) fences = tir_seq2(fences, call_stmt("ptx_fence_mbarrier_init", tir_array_empty()));
    tir_Node *init = leader(c, tir_seq2(tir_for(si, tir_i32(0), tir_i32((int)N), TIR_FOR_SERIAL, "", NULL, init_body), fences));
    tir_Node *sync = call_stmt("tvm_storage_sync", tir_array_of(1, tir_string_imm("shared")));
    if (csize > 1) sync = tir_seq2(sync, call_stmt("ptx_cluster_sync", tir_array_empty()));
    /* prologue: iterations min .. min + N - 1 (those that exist) */
    tir_Var *pi = tir_var_new("p", lt);
    tir_Node *it = tir_add(R(f->min), R((tir_Node *)pi));
    tir_Node *pro_body = tir_if(tir_cmp(TIR_LT, R((tir_Node *)pi), R(f->extent)),
                                issue(f, cps, ncp, full, it, tir_cast(TIR_INT32, R((tir_Node *)pi))), NULL);
    tir_Node *pro = leader(c, tir_for(pi, tir_int_imm(lt, 0), tir_int_imm(lt, N), TIR_FOR_SERIAL, "", NULL, pro_body));
    /* the loop */
    tir_Array *items = tir_array_of(1, call_stmt("ptx_mbarrier_wait", tir_array_of(2, bar_at(full, tir_cast(TIR_INT32, R(V.stage))),
                                                                                    tir_cast(TIR_INT32, R(parity)))));
    /* gathered tiles were written by cp.async (the generic proxy) and wgmma reads them through the
     * async proxy: once the phase has made them visible here, a proxy fence orders them before
     * this thread's wgmma (PTX ISA, memory consistency model: proxies) */
    if (ngather) items = tir_array_push(items, call_stmt("ptx_fence_proxy_async", tir_array_empty()));
    for (int i = ncp; i < nk; i++) {
      tir_Node *x = tir_mutate(kids[i], ver_mut, &V);
      if (!x) {
        tir_release(items);
        goto emit_fail;
      }
      items = tir_array_push(items, x);
    }
    /* the step whose stage is released here: k - P (its wgmma groups are complete after this
     * step's wait), once it exists */
    tir_Node *rk = tir_sub(R(k0), tir_int_imm(lt, P));
    tir_Node *rstage = tir_cast(TIR_INT32, tir_floormod(R(rk), tir_int_imm(lt, N)));
    tir_Node *rpar = tir_cast(TIR_INT32, tir_floormod(tir_floordiv(R(rk), tir_int_imm(lt, N)), tir_int_imm(lt, 2)));
    tir_Node *arrive = call_stmt("ptx_mbarrier_arrive", tir_array_of(1, bar_at(empty, R(rstage))));
    /* in a cluster: also on the same stage's empty barrier of every other CTA of each group
     * (their multicasts write this CTA's stage: CUTLASS's consumer_release to each sender).
     * Released per warpgroup after wgmma_wait_group, the tiles' reads are complete, so the
     * arrival needs no cluster-scope release: .release.cta (as CUTLASS's ClusterBarrier::arrive
     * (cta_id)); a .release.cluster arrival is a MEMBAR.GPU per k step and arrival, which made
     * the cluster kernels 2.5x slower (stop 11, SASS of the {2, 1} kernel).  Generic reads
     * (ld.shared, ldmatrix) may still be in flight: those keep the cluster-scope release. */
    for (int gi = 0; gi < ngroups; gi++) {
      const Copy *g = &cps[grp[gi]];
      tir_Var *jv = tir_var_new("mc_j", TIR_INT32);
      tir_Node *dst = tir_add(mc_base(g), tir_mul(R((tir_Node *)jv), tir_i32((int)g->mc_stride)));
      tir_Node *one = tir_if(tir_cmp(TIR_NE, R((tir_Node *)jv), mc_slice(g)),
                             call_stmt("ptx_mbarrier_arrive_cluster", tir_array_of(3, bar_at(empty, R(rstage)), dst,
                                                                                    tir_string_imm(wg_release ? "cta" : "cluster"))), NULL);
      arrive = tir_seq2(arrive, tir_for(jv, tir_i32(0), tir_i32((int)g->mc_count), TIR_FOR_UNROLLED, "", NULL, one));
    }
    if (wg_release) {
      tir_Var *lane = tir_var_new("release_lane", TIR_INT32);
      arrive = tir_for(lane, tir_i32(0), tir_i32(128), TIR_FOR_THREAD_BINDING, "threadIdx.x", NULL,
                       tir_if(tir_cmp(TIR_EQ, R((tir_Node *)lane), tir_i32(0)), arrive, NULL));
    }
    /* (ping-pong: the step's place in its own tile, k - min, decides) */
    tir_Node *pingpong_tail = NULL;
    if (teams > 1 && P) {
      /* the tile's last P steps, released once its groups are complete: lin E + E - P + q */
      tir_Var *qv = tir_var_new("release_tail", lt);
      tir_Node *step = tir_add(tir_sub(tir_cast(lt, R(f->extent)), tir_int_imm(lt, P)), R((tir_Node *)qv));
      tir_Node *gstep = lin ? tir_add(tir_mul(R(lin), tir_cast(lt, R(f->extent))), R(step)) : R(step);
      tir_Node *one = tir_if(tir_cmp(TIR_GE, step, tir_int_imm(lt, 0)),
                             call_stmt("ptx_mbarrier_arrive", tir_array_of(1, bar_at(empty, tir_cast(TIR_INT32, tir_floormod(gstep,
                                                                                                 tir_int_imm(lt, N)))))), NULL);
      pingpong_tail = tir_seq2(call_stmt("wgmma_wait_group", tir_array_of(1, tir_i32(0))),
                               tir_for(qv, tir_int_imm(lt, 0), tir_int_imm(lt, P), TIR_FOR_UNROLLED, "", NULL, one));
    }
    items = tir_array_push(items, P ? tir_if(tir_cmp(TIR_GE, teams > 1 ? tir_sub(R((tir_Node *)f->loop_var), R(f->min)) : R(k0),
                                                     tir_int_imm(lt, P)), arrive, NULL) : arrive);
    tir_Node *end = tir_add(R(f->min), R(f->extent));
    tir_Node *producer = NULL;
    /* in a cluster the other CTAs' consumers arrive on this CTA's empty barriers until they are
     * done, and a CTA's shared memory is gone once it exits: the leader (the producer) waits for
     * those last phases (CUTLASS's producer tail) -- the acquires of the steps total .. total + N
     * - P - 1, i.e. the releases of every step but the last P, which nobody releases */
    tir_Node *tail = NULL;
    if (csize > 1) {
      tir_Node *total = tir_cast(lt, R(f->extent));
      for (int i = 0; ws && i < c->in_loop; i++) total = tir_mul(total, tir_cast(lt, R(c->loops[i]->extent)));
      tir_Var *qv = tir_var_new("tail", lt);
      tir_Node *kp = tir_add(total, R((tir_Node *)qv));
      tir_Node *ts = tir_cast(TIR_INT32, tir_floormod(R(kp), tir_int_imm(lt, N)));
      tir_Node *tp = tir_cast(TIR_INT32, tir_floormod(tir_add(tir_floordiv(R(kp), tir_int_imm(lt, N)), tir_int_imm(lt, 1)), tir_int_imm(lt, 2)));
      tir_Node *w = tir_if(tir_cmp(TIR_GE, kp, tir_int_imm(lt, N)), call_stmt("ptx_mbarrier_wait", tir_array_of(2, bar_at(empty, ts), tp)), NULL);
      tail = tir_for(qv, tir_int_imm(lt, 0), tir_int_imm(lt, N - P), TIR_FOR_SERIAL, "", NULL, w);
    }
    if (!ws) {
      tir_Node *nxt = tir_add(tir_add(R(f->min), R(rk)), tir_int_imm(lt, N));
      /* every thread's reads of stage s (generic proxy: ldmatrix, ld.shared) happen before the TMA
       * (async proxy) overwrites it: the empty phase orders them, a proxy fence carries that
       * order over to the async proxy */
      tir_Node *refill = tir_seq(tir_array_of(3, call_stmt("ptx_mbarrier_wait", tir_array_of(2, bar_at(empty, R(rstage)), R(rpar))),
                                               call_stmt("ptx_fence_proxy_async", tir_array_empty()),
                                               issue(f, cps, ncp, full, R(nxt), R(rstage))));
      tir_Node *cond = tir_cmp(TIR_LT, nxt, R(end));
      if (P) cond = tir_and(tir_cmp(TIR_GE, R(k0), tir_int_imm(lt, P)), cond);
      items = tir_array_push(items, leader(c, tir_if(cond, refill, NULL)));
    } else {
      /* the producer's own walk over the steps: stage kp's previous use (step kp - N) released
       * the phase ((kp - min) / N - 1) of empty[s] */
      tir_Var *pv = tir_var_new(f->loop_var->name, lt);
      tir_Node *p0 = tir_sub(R((tir_Node *)pv), R(f->min));
      if (lin) p0 = tir_add(tir_mul(R(lin), tir_cast(lt, R(f->extent))), p0);
      tir_Node *ps = tir_cast(TIR_INT32, tir_floormod(R(p0), tir_int_imm(lt, N)));
      tir_Node *pp = tir_cast(TIR_INT32, tir_floormod(tir_add(tir_floordiv(R(p0), tir_int_imm(lt, N)), tir_int_imm(lt, 1)), tir_int_imm(lt, 2)));
      Ver PV = {cps, ncp, ngather ? tir_floormod(R(p0), tir_int_imm(lt, N)) : NULL}; /* the gathers' stage */
      tir_Node *acquire = tir_if(tir_cmp(TIR_GE, p0, tir_int_imm(lt, N)),
                                 call_stmt("ptx_mbarrier_wait", tir_array_of(2, bar_at(empty, R(ps)), pp)), NULL);
      tir_Node *pbody;
      if (!ngather) {
        pbody = tir_seq(tir_array_of(3, acquire, call_stmt("ptx_fence_proxy_async", tir_array_empty()),
                                     issue(f, cps, ncp, full, R((tir_Node *)pv), ps)));
      } else {
        /* a gathering producer: every thread of the producer warpgroup waits for the stage, lane 0
         * issues the TMA copies, then each thread gathers its part of the other tiles (cp.async,
         * async_scope: inject_ptx_async_copy) and arrives on full[s] once its copies have landed */
        tir_Array *pit = tir_array_of(2, acquire, call_stmt("ptx_fence_proxy_async", tir_array_empty()));
        if (ntma) {
          tir_Var *l0 = tir_var_new("tma_lane", TIR_INT32);
          tir_Node *one = tir_if(tir_cmp(TIR_EQ, R((tir_Node *)l0), tir_i32(0)), issue(f, cps, ncp, full, R((tir_Node *)pv), R(ps)), NULL);
          pit = tir_array_push(pit, tir_for(l0, tir_i32(0), tir_i32(GATHER_THREADS), TIR_FOR_THREAD_BINDING, "threadIdx.x", NULL, one));
        }
        for (int i = 0; i < ncp; i++) {
          if (!cps[i].gather) continue;
          tir_Node *sub = tir_substitute(cps[i].stmt, 1, (tir_Var *const *)&f->loop_var, (tir_Node *const *)&pv);
          tir_Node *g = tir_mutate(sub, ver_mut, &PV);
          if (!g) g = tir_retain(sub);
          tir_release(sub);
          if (g == TIR_MUTATE_ERROR) {
            gfail = 1;
            continue;
          }
          pit = tir_array_push(pit, tir_attr_stmt(NULL, "async_scope", tir_i32(1), g));
        }
        pit = tir_array_push(pit, call_stmt("ptx_cp_async_mbarrier_arrive_noinc", tir_array_of(1, bar_at(full, ps))));
        pbody = tir_seq(pit);
      }
      tir_Node *ploop = tir_for(pv, R(f->min), R(f->extent), TIR_FOR_SERIAL, "", NULL, pbody);
      /* (the tail after all of the producer's steps: inject_warp_specialization puts it after
       * the tile loops it wraps the producer in) */
      if (tail) ploop = tir_seq2(ploop, tir_attr_stmt(NULL, "warp_specialize_producer_tail", tir_i32(1), tail));
      tail = NULL;
      tir_release(PV.stage);
      /* (2: the whole producer warpgroup runs the loop, 1: its first thread) */
      producer = tir_attr_stmt(NULL, "warp_specialize_producer", tir_i32(ngather ? 2 : 1), ploop);
    }
    tir_release(rk), tir_release(rstage), tir_release(rpar), tir_release(end), tir_release(lin);
    tir_Array *anns = tir_ann_remove(f->annotations, KEY_STAGES);
    if (can) {
      tir_Array *a2 = tir_ann_remove(anns, KEY_CLUSTER);
      tir_release(anns);
      anns = a2;
    }
    tir_Node *loop = tir_for(R(f->loop_var), R(f->min), R(f->extent), f->kind, f->thread_tag, anns, tir_seq(items));
    /* the block holding the versioned tiles, the barriers and the other buffers of the body */
    tir_Array *nallocs = tir_array_empty();
    for (int q = 0; q < allocs->size; q++) {
      const tir_Node *a = allocs->items[q];
      const Copy *cp = ver_of(&V, (const tir_Buffer *)a);
      nallocs = tir_array_push(nallocs, tir_retain(cp ? &cp->ver->hdr : a));
    }
    nallocs = tir_array_push(nallocs, &full->hdr);
    nallocs = tir_array_push(nallocs, &empty->hdr);
    /* inside a loop (a persistent kernel's tiles): the barriers are initialized again for each
     * run of the pipeline, once every thread is done with the previous one */
    tir_Array *parts = c->in_loop && !ws ? tir_array_of(1, call_stmt("tvm_storage_sync", tir_array_of(1, tir_string_imm("shared"))))
                                  : tir_array_empty();
    /* the kernel's cluster shape, for split_host_device (a launch attribute, no code) */
    if (csize > 1)
      parts = tir_array_push(parts, tir_attr_stmt(NULL, "cluster_dims", (tir_Node *)tir_array_of(3, tir_i32((int)cdims[0]), tir_i32((int)cdims[1]),
                                                                                              tir_i32((int)cdims[2])), tir_evaluate(tir_i32(0))));
    parts = tir_array_push(parts, init);
    parts = tir_array_push(parts, sync);
    if (producer) {
      tir_release(pro);
      parts = tir_array_push(parts, producer);
    } else {
      parts = tir_array_push(parts, pro);
    }
    parts = tir_array_push(parts, loop);
    if (pingpong_tail) parts = tir_array_push(parts, pingpong_tail);
    if (tail) parts = tir_array_push(parts, leader(c, tail));
    tir_Block *blk = tir_block_new("", NULL, NULL, NULL, NULL, nallocs, NULL, NULL, tir_seq(parts));
    result = tir_block_realize(tir_array_empty(), tir_bool_imm(1), blk);
    tir_release(V.stage), tir_release(parity);
    if (gfail) {
      tir_release(result);
      result = fail_at(c, &f->hdr, "pipelined loop", "loop %s: the %s copy could not be moved to its stage", f->loop_var->name, KEY_GATHER);
    }
    goto done;
  emit_fail:
    tir_release(V.stage), tir_release(parity), tir_release(lin);
    tir_release(full), tir_release(empty), tir_release(init), tir_release(sync), tir_release(pro);
    result = TIR_MUTATE_ERROR;
  }
done:
  for (int i = 0; i < nk; i++) {
    for (int d = 0; d < TIR_TMA_MAX_RANK; d++) tir_release(cps[i].base[d]);
    tir_release(cps[i].m0), tir_release(cps[i].k0);
    tir_release(cps[i].ver);
  }
  free(cps);
  tir_release(allocs);
  return result;
}

static tir_Node *mut(const tir_Node *n, void *arg) {
  Ctx *c = arg;
  if (tir_is_expr(n)) return tir_retain(n);
  if (n->kind != TIR_For) return NULL;
  const tir_For *f = (const tir_For *)n;
  if (f->kind == TIR_FOR_THREAD_BINDING && strncmp(f->thread_tag, "threadIdx.", 10) == 0 && c->n_threads < 8) {
    c->thread_x[c->n_threads] = f->thread_tag[10] == 'x';
    c->threads[c->n_threads++] = f->loop_var;
    tir_Node *m = tir_mutate_children(n, mut, arg);
    c->n_threads--;
    return m ? m : TIR_MUTATE_ERROR;
  }
  if (!tir_ann_get(f->annotations, KEY_STAGES)) {
    if (f->kind == TIR_FOR_THREAD_BINDING) return NULL;
    if (c->in_loop < 8) c->loops[c->in_loop] = f;
    c->in_loop++;
    tir_Node *m = tir_mutate_children(n, mut, arg);
    c->in_loop--;
    return m ? m : TIR_MUTATE_ERROR;
  }
  return pipeline(c, f);
}

tir_PrimFunc *tir_pass_inject_tma_pipeline(const tir_PrimFunc *f) {
  Ctx c;
  memset(&c, 0, sizeof c);
  c.func = f;
  tir_visit(f->body, scan_threads, &c);
  c.lanes = tir_tma_leader_lanes(f->body);
  return pass_with_body(f, tir_mutate(f->body, mut, &c));
}
