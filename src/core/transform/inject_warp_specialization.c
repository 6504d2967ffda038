/* inject_warp_specialization.c -- a TMA-pipelined loop annotated
 * `warp_specialize = {producer warpgroups, producer registers, consumer registers}` runs its
 * copies on a producer warpgroup of its own and its computation on the CTA's warpgroups, the
 * consumers (CUTLASS's sm90 "warp-specialized cooperative" kernels: a producer warpgroup whose
 * one elected thread issues TMA, consumer warpgroups issuing wgmma, registers moved between
 * them with setmaxnreg; PTX ISA 9.7.17.1 setmaxnreg, 9.7.13.1 bar.sync).  Block-level IR, right
 * after inject_tma_pipeline, which has already split the pipeline (inject_tma_pipeline.c:
 * `init; __syncthreads; AttrStmt "warp_specialize_producer" {producer loop}; consumer loop`).
 *
 * The warpgroup loop W (the threadIdx.y loop around the pipeline; threadIdx.x must be one
 * warpgroup, 128 threads) of extent G becomes one of extent G + 1, and its body
 *
 *   block(the pipeline's tiles and mbarriers) {
 *     init; __syncthreads                                   (all G + 1 warpgroups)
 *     if W == G { setmaxnreg.dec Rp; if threadIdx.x == 0 { the producer loop } }
 *     (a gathering producer, the mark's value 2: the producer loop on all 128 threads of W == G)
 *     else AttrStmt "named_barrier" (128 G threads, barrier 1) {
 *       setmaxnreg.inc Rc; W's body with the pipeline block replaced by the consumer loop }
 *   }
 *
 * The pipeline's allocations move up to W's body (both roles use them); statements of W's body
 * around the pipeline (the accumulator's fill, the epilogue) run on the consumers only.  Inside
 * the consumers' branch a CTA barrier would wait for the producer warpgroup forever: existing
 * tvm_storage_sync become ptx_bar_sync(1, 128 G), and thread_sync emits the same there
 * (AttrStmt "named_barrier").
 *
 * Registers: setmaxnreg.dec / .inc (PTX ISA 9.7.17.1; multiples of 8 in 24 .. 256) move registers
 * within the CTA's allocation, and .inc blocks until other warps have released enough: a wrong
 * count hangs the kernel.  ptxas gives a kernel that uses setmaxnreg the most registers its
 * launch bounds allow, R0 = 65536 / T rounded down to a multiple of 8 for T = 128 (G + 1) threads
 * (seen with CUDA 12: 168 at 384 threads, 128 at 512, 96 at 640), so the rule is Rp <= R0 <= Rc
 * and 128 Rp + 128 G Rc <= T R0 (CUTLASS's 40 / 232 at 384 threads fill it exactly).  With T <=
 * 256 the launch bounds cap nothing (R0 would pass 255) and ptxas keeps the registers the code
 * needs, so {1, 0, 0} (no setmaxnreg) is the only register setting there.
 *
 * In a persistent kernel W sits in the tile loop(s): a chain of serial loops, each the only
 * statement of the one above.  W then moves above them and each role walks its own copy of the
 * loops (the producer with fresh loop variables), so the producer fills the next tile's stages
 * while the consumers finish this one (inject_tma_pipeline counts the steps across the tiles).
 *
 * Ping-pong (a fourth value T > 1, CUTLASS's KernelTmaWarpSpecializedPingpong): in a persistent
 * kernel with one consumer warpgroup a tile (G = 1), T consumer warpgroups take the tiles of the
 * tile loop in turn, their main loops ordered by a named-barrier chain (pingpong() below); W
 * becomes a loop of T + 1.
 *
 * Errors (LoweringError) name the loop: a malformed annotation, no TMA pipeline on the loop, no
 * threadIdx.y warpgroup loop around it or threadIdx.x other than 128, the pipeline inside a
 * loop or branch of W's body or W under loops that are not such a chain, registers that do not fit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pass_util.h"

#define PASS "inject_warp_specialization"
#define KEY_WS "warp_specialize"
#define MARK "warp_specialize_producer"
#define WG_THREADS 128
#define REGFILE 65536 /* 32-bit registers per SM and per CTA (CUDA C++ Programming Guide, compute capability 9.0) */
#define CONSUMER_BARRIER 1
/* ping-pong (teams T > 1): team w waits at ORDER_BARRIER + w for the previous team's main loop
 * and syncs its own threads at ORDER_BARRIER + T + w (named barriers 0 .. 15: PTX ISA bar.sync) */
#define MAX_TEAMS 4
#define ORDER_BARRIER 2

typedef struct {
  const tir_PrimFunc *func;
  int64_t cta[3]; /* the largest threadIdx.x/y/z extents over the function */
  int depth;      /* enclosing loops that are not thread-bound */
} Ctx;

/* a LoweringError naming the pass, showing the function with `where` marked */
#define fail_at(c, where, what, ...) pass_fail_at(PASS, (c)->func, (where), (what), __VA_ARGS__)

static int is_thread_loop(const tir_Node *n, const char *tag) {
  return n->kind == TIR_For && ((const tir_For *)n)->kind == TIR_FOR_THREAD_BINDING && strcmp(((const tir_For *)n)->thread_tag, tag) == 0;
}

static int scan_threads(const tir_Node *n, void *p) {
  Ctx *c = p;
  if (n->kind != TIR_For || ((const tir_For *)n)->kind != TIR_FOR_THREAD_BINDING) return 0;
  const tir_For *f = (const tir_For *)n;
  int64_t e;
  if (strncmp(f->thread_tag, "threadIdx.", 10) == 0 && f->thread_tag[10] >= 'x' && f->thread_tag[10] <= 'z' &&
      tir_is_const_int(f->extent, &e) && e > c->cta[f->thread_tag[10] - 'x'])
    c->cta[f->thread_tag[10] - 'x'] = e;
  return 0;
}

static int is_mark(const tir_Node *n) { return n->kind == TIR_AttrStmt && strcmp(((const tir_AttrStmt *)n)->key, MARK) == 0; }

static int find_mark(const tir_Node *n, void *p) {
  if (is_mark(n) && !*(const tir_Node **)p) *(const tir_Node **)p = n;
  return 0;
}

static const tir_Node *mark_in(const tir_Node *n) {
  const tir_Node *m = NULL;
  tir_visit(n, find_mark, &m);
  return m;
}

static int find_ws_loop(const tir_Node *n, void *p) {
  if (n->kind == TIR_For && tir_ann_get(((const tir_For *)n)->annotations, KEY_WS) && !*(const tir_For **)p) *(const tir_For **)p = (const tir_For *)n;
  return 0;
}

static const tir_For *ws_loop_in(const tir_Node *n) {
  const tir_For *f = NULL;
  tir_visit(n, find_ws_loop, &f);
  return f;
}

static int is_plain_opaque(const tir_BlockRealize *br) {
  const tir_Block *b = br->block;
  return tir_is_one(br->predicate) && b->iter_vars->size == 0 && !b->init && b->match_buffers->size == 0;
}

static tir_Node *call_stmt(const char *op, tir_Array *args) { return tir_evaluate(tir_call(TIR_VOID, op, args)); }

/* ---- cutting the pipeline out of W's body ---- */
typedef struct {
  tir_Array *allocs; /* the pipeline block's allocations (owned) */
  tir_Array *prefix; /* its statements before the producer: the mbarrier init and the barrier (owned) */
  tir_Node *producer; /* the producer loop (owned) */
  const tir_Node *pre, *post; /* ping-pong: around the consumers' loop (the first statement after the mark; borrowed), or NULL */
} Parts;

/* n with the pipeline block (the block whose sequence holds the producer mark) replaced by the
 * statements after the mark (the consumers' loop); the other pieces go to pp.  Only sequences
 * and plain opaque blocks may lie on the way down. */
static tir_Node *cut(const Ctx *c, const tir_For *ws, const tir_Node *n, Parts *pp) {
  if (n->kind == TIR_SeqStmt) {
    const tir_Array *a = ((const tir_SeqStmt *)n)->seq;
    tir_Array *out = tir_array_empty();
    for (int i = 0; i < a->size; i++) {
      tir_Node *x = mark_in(a->items[i]) ? cut(c, ws, a->items[i], pp) : tir_retain(a->items[i]);
      if (x == TIR_MUTATE_ERROR) {
        tir_release(out);
        return x;
      }
      out = tir_array_push(out, x);
    }
    return tir_seq(out);
  }
  if (n->kind == TIR_BlockRealize && is_plain_opaque((const tir_BlockRealize *)n)) {
    const tir_Block *b = ((const tir_BlockRealize *)n)->block;
    const tir_Node *body = b->body;
    if (body->kind == TIR_SeqStmt) {
      const tir_Array *a = ((const tir_SeqStmt *)body)->seq;
      int at = -1;
      for (int i = 0; i < a->size; i++)
        if (is_mark(a->items[i])) at = i;
      if (at >= 0) {
        pp->allocs = (tir_Array *)tir_retain(&b->alloc_buffers->hdr);
        pp->prefix = tir_array_empty();
        for (int i = 0; i < at; i++) pp->prefix = tir_array_push(pp->prefix, tir_retain(a->items[i]));
        pp->producer = tir_retain(((const tir_AttrStmt *)a->items[at])->body);
        tir_Array *rest = tir_array_empty();
        for (int i = at + 1; i < a->size; i++) {
          if (i == at + 1 && pp->pre) rest = tir_array_push(rest, tir_retain(pp->pre));
          rest = tir_array_push(rest, tir_retain(a->items[i]));
          if (i == at + 1 && pp->post) rest = tir_array_push(rest, tir_retain(pp->post));
        }
        return tir_seq(rest);
      }
    }
    tir_Node *nb = cut(c, ws, body, pp);
    if (nb == TIR_MUTATE_ERROR) return nb;
    tir_Block *blk = (tir_Block *)tir_node_copy(&b->hdr);
    tir_release(blk->body);
    blk->body = nb;
    return tir_block_realize(tir_array_empty(), tir_bool_imm(1), blk);
  }
  return fail_at(c, n, "around the pipeline", "loop %s: %s: the TMA pipeline must sit in the warpgroup loop's body directly "
                 "(sequences and blocks only), not under this statement: a producer warpgroup cannot follow the consumers' "
                 "loops or branches (a persistent kernel's tile loop is not supported yet)", ws->loop_var->name, KEY_WS);
}

/* In the consumers' branch: tvm_storage_sync -> the consumers' named barrier; the loop loses
 * its warp_specialize annotation (done here). */
typedef struct {
  int64_t nthreads, id;
} Cons;

static tir_Node *cons_mut(const tir_Node *n, void *arg) {
  Cons *k = arg;
  if (tir_is_expr(n)) return tir_retain(n);
  if (n->kind == TIR_Evaluate && ((const tir_Evaluate *)n)->value->kind == TIR_Call) {
    const tir_Call *cl = (const tir_Call *)((const tir_Evaluate *)n)->value;
    if (tir_builtin_has(cl->op, TIR_BUILTIN_BARRIER))
      return call_stmt("ptx_bar_sync", tir_array_of(2, tir_i32((int)k->id), tir_i32((int)k->nthreads)));
    return NULL;
  }
  if (n->kind == TIR_For && tir_ann_get(((const tir_For *)n)->annotations, KEY_WS)) {
    const tir_For *f = (const tir_For *)n;
    tir_Node *body = tir_mutate(f->body, cons_mut, arg);
    if (!body) return TIR_MUTATE_ERROR;
    return tir_for(R(f->loop_var), R(f->min), R(f->extent), f->kind, f->thread_tag, tir_ann_remove(f->annotations, KEY_WS), body);
  }
  return NULL;
}

/* The annotation's three or four integers, checked (v[3]: the ping-pong teams, 1 when absent).
 * G: the consumer warpgroups of a tile.  0, or -1 with the error set. */
static int params(const Ctx *c, const tir_For *ws, int64_t G, int64_t v[4]) {
  const tir_Node *a = tir_ann_get(ws->annotations, KEY_WS);
  const char *form = "must be a list {producer warpgroups, producer registers, consumer registers}, e.g. {1, 40, 232} "
                     "({1, 0, 0}: no setmaxnreg), or with a fourth value, the ping-pong consumer warpgroups: {1, 40, 232, 2}";
  int na = a && a->kind == TIR_Array ? ((const tir_Array *)a)->size : 0;
  if (na != 3 && na != 4) {
    fail_at(c, &ws->hdr, "warp-specialized loop", "loop %s: %s %s", ws->loop_var->name, KEY_WS, form);
    return -1;
  }
  v[3] = 1;
  for (int i = 0; i < na; i++)
    if (!tir_is_const_int(((const tir_Array *)a)->items[i], &v[i])) {
      fail_at(c, &ws->hdr, "warp-specialized loop", "loop %s: %s %s", ws->loop_var->name, KEY_WS, form);
      return -1;
    }
  if (v[3] < 1 || v[3] > MAX_TEAMS || (v[3] > 1 && G != 1)) {
    fail_at(c, &ws->hdr, "warp-specialized loop", "loop %s: %s: %lld ping-pong consumer warpgroups (1 .. %d), each computing a whole "
            "tile: the warpgroup loop around the pipeline must have extent 1 (one warpgroup a tile, BM = 64), it has %lld",
            ws->loop_var->name, KEY_WS, (long long)v[3], MAX_TEAMS, (long long)G);
    return -1;
  }
  G *= v[3];
  if (v[0] != 1) {
    fail_at(c, &ws->hdr, "warp-specialized loop", "loop %s: %s: %lld producer warpgroups; one is supported (one thread issues every TMA copy)",
            ws->loop_var->name, KEY_WS, (long long)v[0]);
    return -1;
  }
  if (v[1] == 0 && v[2] == 0) return 0; /* no setmaxnreg */
  for (int i = 1; i < 3; i++)
    if (v[i] < 24 || v[i] > 256 || v[i] % 8) {
      fail_at(c, &ws->hdr, "warp-specialized loop", "loop %s: %s: %s registers %lld: setmaxnreg takes a multiple of 8 in 24 .. 256 "
              "(PTX ISA setmaxnreg), or both counts 0 for none", ws->loop_var->name, KEY_WS, i == 1 ? "producer" : "consumer",
              (long long)v[i]);
      return -1;
    }
  const int64_t T = WG_THREADS * (G + 1), R0 = REGFILE / T / 8 * 8;
  if (R0 > 255) {
    fail_at(c, &ws->hdr, "warp-specialized loop", "loop %s: %s: setmaxnreg with %lld threads: the launch bounds cap no register "
            "count, so ptxas keeps what the code needs and setmaxnreg.inc %lld could wait forever; use {1, 0, 0} (no setmaxnreg) "
            "with one consumer warpgroup", ws->loop_var->name, KEY_WS, (long long)T, (long long)v[2]);
    return -1;
  }
  if (v[1] > R0 || v[2] < R0 || WG_THREADS * v[1] + WG_THREADS * G * v[2] > T * R0) {
    fail_at(c, &ws->hdr, "warp-specialized loop", "loop %s: %s: the CTA's %lld threads start with %lld registers each (%lld in all); "
            "the producer's %lld must not exceed that, the consumers' %lld not fall below it, and 128 x %lld + %lld x 128 x %lld = "
            "%lld must fit in the %lld", ws->loop_var->name, KEY_WS, (long long)T, (long long)R0, (long long)(T * R0),
            (long long)v[1], (long long)v[2], (long long)v[1], (long long)G, (long long)v[2],
            (long long)(WG_THREADS * v[1] + WG_THREADS * G * v[2]), (long long)(T * R0));
    return -1;
  }
  return 0;
}

/* The serial loops from n down to the threadIdx.y loop W that holds the producer (a persistent
 * kernel's tile loop, each loop the only statement of the one above): W, with the loops in
 * path (outermost first, *np of them), or NULL when n does not start such a chain. */
#define MAX_OUTER 8
static const tir_For *chain(const tir_Node *n, const tir_For **path, int *np) {
  *np = 0;
  while (n->kind == TIR_For && *np < MAX_OUTER) {
    const tir_For *f = (const tir_For *)n;
    if (is_thread_loop(n, "threadIdx.y")) return *np ? f : NULL;
    if (f->kind != TIR_FOR_SERIAL) return NULL;
    path[(*np)++] = f;
    n = f->body;
  }
  return NULL;
}

/* body wrapped in copies of the loops path[0..np) (outermost first); with fresh, the copies get
 * new loop variables, substituted in body (the producer's walk over the tiles).  Steals body. */
static tir_Node *wrap(const tir_For *const *path, int np, tir_Node *body, int fresh) {
  if (fresh && np) {
    tir_Var *from[MAX_OUTER] = {0};
    tir_Node *to[MAX_OUTER] = {0};
    for (int i = 0; i < np; i++) {
      from[i] = path[i]->loop_var;
      to[i] = (tir_Node *)tir_var_new(path[i]->loop_var->name, path[i]->loop_var->hdr.dtype);
    }
    tir_Node *b = tir_substitute(body, np, from, to);
    tir_release(body);
    body = b;
    for (int i = np - 1; i >= 0; i--)
      body = tir_for((tir_Var *)to[i], R(path[i]->min), R(path[i]->extent), path[i]->kind, path[i]->thread_tag, NULL, body);
    return body;
  }
  for (int i = np - 1; i >= 0; i--)
    body = tir_for(R(path[i]->loop_var), R(path[i]->min), R(path[i]->extent), path[i]->kind, path[i]->thread_tag,
                   R(path[i]->annotations), body);
  return body;
}

static int uses_any(const tir_Node *n, const tir_For *const *path, int np) {
  for (int i = 0; i < np; i++)
    if (tir_uses_var(n, path[i]->loop_var)) return 1;
  return 0;
}

/* Ping-pong consumers (CUTLASS's KernelTmaWarpSpecializedPingpong): T warpgroups, one a tile,
 * take the E tiles of the tile loop `tl` in turn -- team w computes tiles t = T r + w -- so one
 * team's epilogue runs while the next team's main loop keeps the tensor cores busy.  Their main
 * loops run in tile order (a named-barrier chain: team w waits at ORDER_BARRIER + w for the
 * previous tile's main loop to end, then signals team w + 1): every stage's mbarrier phases are
 * then waited on in step order, which the parity waits need (a team running ahead would see
 * the parity of a phase two behind as complete).  Returns
 *   if W == 0 { named_barrier(128, id ORDER_BARRIER + T) { setmaxnreg.inc Rc; for r: [if t < E]
 *     { W's body (W = 0, t = T r) with the consumer loop as [t >= 1: bar.sync(ORDER_BARRIER, 256)];
 *       loop; [t + 1 < E: bar.arrive(ORDER_BARRIER + 1, 256)] } } } else if W == 1 { ... } ...
 * (a copy a team: the barrier ids must be constants). */
static tir_Node *pingpong(const Ctx *c, const tir_For *ws, const tir_For *W, const tir_For *tl, int64_t E, int64_t T, int64_t rc) {
  tir_Node *out = NULL;
  tir_DType dt = tl->loop_var->hdr.dtype;
  for (int64_t w = T - 1; w >= 0; w--) {
    tir_Node *t = R((tir_Node *)tl->loop_var);
    tir_Node *pre = tir_if(tir_cmp(TIR_GE, R(t), tir_int_imm(dt, 1)),
                           call_stmt("ptx_bar_sync", tir_array_of(2, tir_i32((int)(ORDER_BARRIER + w)), tir_i32(2 * WG_THREADS))), NULL);
    tir_Node *post = tir_if(tir_cmp(TIR_LT, tir_add(R(t), tir_int_imm(dt, 1)), tir_int_imm(dt, E)),
                            call_stmt("ptx_bar_arrive", tir_array_of(2, tir_i32((int)(ORDER_BARRIER + (w + 1) % T)), tir_i32(2 * WG_THREADS))), NULL);
    tir_release(t);
    Parts pw = {NULL, NULL, NULL, pre, post};
    tir_Node *rest = cut(c, ws, W->body, &pw);
    tir_release(pre), tir_release(post);
    tir_release(pw.allocs), tir_release(pw.prefix), tir_release(pw.producer);
    if (rest == TIR_MUTATE_ERROR) {
      tir_release(out);
      return rest;
    }
    tir_Var *r = tir_var_new(tl->loop_var->name, dt);
    tir_Node *tw = tir_add(tir_mul(R((tir_Node *)r), tir_int_imm(dt, T)), tir_int_imm(dt, w));
    tir_Var *from[2] = {W->loop_var, tl->loop_var};
    tir_Node *to[2] = {tir_int_imm(W->loop_var->hdr.dtype, 0), tw};
    tir_Node *sub = tir_substitute(rest, 2, from, to);
    tir_release(rest);
    const int id = (int)(ORDER_BARRIER + T + w);
    Cons k = {WG_THREADS, id};
    tir_Node *body = tir_mutate(sub, cons_mut, &k);
    tir_release(sub);
    if (!body) {
      tir_release(to[0]), tir_release(to[1]), tir_release(out);
      return TIR_MUTATE_ERROR;
    }
    if (E % T) body = tir_if(tir_cmp(TIR_LT, R(to[1]), tir_int_imm(dt, E)), body, NULL);
    tir_release(to[0]), tir_release(to[1]);
    body = tir_for(r, tir_int_imm(dt, 0), tir_int_imm(dt, (E + T - 1) / T), tl->kind, tl->thread_tag, R(tl->annotations), body);
    if (rc) body = tir_seq2(call_stmt("ptx_setmaxnreg_inc", tir_array_of(1, tir_i32((int)rc))), body);
    body = tir_attr_stmt(tir_i32(WG_THREADS), "named_barrier", tir_i32(id), body);
    out = out ? tir_if(tir_cmp(TIR_EQ, R((tir_Node *)W->loop_var), tir_int_imm(W->loop_var->hdr.dtype, w)), body, out) : body;
  }
  return out;
}

/* W, under the serial loops path[0..np) (nothing else between them), becomes the kernel's
 * warpgroup loop of G + 1 with the roles inside it, each role walking the loops. */
static tir_Node *specialize(Ctx *c, const tir_For *const *path, int np, const tir_For *W) {
  const tir_For *ws = ws_loop_in(W->body);
  const tir_Node *mark = mark_in(W->body);
  if (!ws) return fail_at(c, mark, "producer", "a warp-specialized TMA producer without its annotated loop");
  int64_t G;
  if (!tir_is_zero(W->min) || !tir_is_const_int(W->extent, &G) || G < 1)
    return fail_at(c, &W->hdr, "warpgroup loop", "loop %s: %s needs the threadIdx.y loop around it to start at 0 and have a constant "
                   "extent (the consumer warpgroups)", ws->loop_var->name, KEY_WS);
  if (c->cta[0] != WG_THREADS || c->cta[2] > 1)
    return fail_at(c, &ws->hdr, "warp-specialized loop", "loop %s: %s needs threadIdx.x to be one warpgroup (128 threads) and "
                   "threadIdx.y to count the warpgroups; here threadIdx.x has %lld threads%s", ws->loop_var->name, KEY_WS,
                   (long long)c->cta[0], c->cta[2] > 1 ? " and threadIdx.z is bound" : "");
  int64_t v[4];
  if (params(c, ws, G, v)) return TIR_MUTATE_ERROR;
  const int64_t T = v[3];
  int64_t E = 0;
  if (T > 1 && (np != 1 || !tir_is_zero(path[0]->min) || !tir_is_const_int(path[0]->extent, &E) || E < 1))
    return fail_at(c, np ? &path[0]->hdr : &W->hdr, "tile loop", "loop %s: %s: %lld ping-pong consumer warpgroups take the tiles of "
                   "a persistent kernel's tile loop in turn: the warpgroup loop must sit in exactly one serial loop from 0 with a "
                   "constant extent (tc_gemm.persistent_tiles's), here %d loop(s)", ws->loop_var->name, KEY_WS, (long long)T, np);
  Parts pp = {NULL, NULL, NULL, NULL, NULL};
  tir_Node *rest = cut(c, ws, W->body, &pp);
  if (rest == TIR_MUTATE_ERROR || !pp.producer) {
    tir_release(pp.allocs), tir_release(pp.prefix), tir_release(pp.producer);
    if (rest != TIR_MUTATE_ERROR) tir_release(rest);
    return rest == TIR_MUTATE_ERROR ? rest : fail_at(c, mark, "producer", "loop %s: the producer mark is not in the pipeline's block",
                                                     ws->loop_var->name);
  }
  /* the mbarrier init and its barrier run once, before the roles and their loops */
  for (int i = 0; i < pp.prefix->size || i < pp.allocs->size; i++)
    if ((i < pp.prefix->size && uses_any(pp.prefix->items[i], path, np)) || (i < pp.allocs->size && uses_any(pp.allocs->items[i], path, np))) {
      tir_release(pp.allocs), tir_release(pp.prefix), tir_release(pp.producer), tir_release(rest);
      return fail_at(c, &path[0]->hdr, "around the pipeline", "loop %s: %s: the pipeline's mbarrier init or tiles depend on the "
                     "loop %s around the warpgroup loop", ws->loop_var->name, KEY_WS, path[0]->loop_var->name);
    }
  const int64_t nc = WG_THREADS * G;
  tir_Node *cons;
  if (T == 1) {
    Cons k = {nc, CONSUMER_BARRIER};
    cons = wrap(path, np, tir_mutate(rest, cons_mut, &k), 0);
    if (v[2]) cons = tir_seq2(call_stmt("ptx_setmaxnreg_inc", tir_array_of(1, tir_i32((int)v[2]))), cons);
    cons = tir_attr_stmt(tir_i32((int)nc), "named_barrier", tir_i32(CONSUMER_BARRIER), cons);
  } else {
    cons = pingpong(c, ws, W, path[0], E, T, v[2]);
    if (cons == TIR_MUTATE_ERROR) {
      tir_release(pp.allocs), tir_release(pp.prefix), tir_release(pp.producer), tir_release(rest);
      return cons;
    }
  }
  tir_release(rest);
  /* the producer's tail (a cluster's last empty phases, inject_tma_pipeline) runs once, after
   * all the tiles: it stays out of the tile loops */
  tir_Node *ptail = NULL;
  if (pp.producer->kind == TIR_SeqStmt) {
    const tir_Array *pa = ((const tir_SeqStmt *)pp.producer)->seq;
    const tir_Node *last = pa->size ? pa->items[pa->size - 1] : NULL;
    if (last && last->kind == TIR_AttrStmt && strcmp(((const tir_AttrStmt *)last)->key, "warp_specialize_producer_tail") == 0) {
      ptail = tir_retain(((const tir_AttrStmt *)last)->body);
      tir_Array *rest = tir_array_empty();
      for (int i = 0; i + 1 < pa->size; i++) rest = tir_array_push(rest, tir_retain(pa->items[i]));
      tir_release(pp.producer);
      pp.producer = tir_seq(rest);
    }
  }
  pp.producer = wrap(path, np, pp.producer, 1);
  if (ptail) pp.producer = tir_seq2(pp.producer, ptail);
  tir_Node *consumer = cons;
  /* producer: fewer registers for the warpgroup, the loop on its first thread -- or, marked 2 (a
   * gathering producer, inject_tma_pipeline's cp_async_gather copies), on all of its threads,
   * the TMA issue inside already on lane 0 */
  int64_t mv = 1;
  (void)tir_is_const_int(((const tir_AttrStmt *)mark)->value, &mv);
  tir_Node *producer = pp.producer;
  if (mv != 2) {
    tir_Var *tx = tir_var_new("ws_producer", TIR_INT32);
    tir_Node *one = tir_if(tir_cmp(TIR_EQ, R((tir_Node *)tx), tir_i32(0)), pp.producer, NULL);
    producer = tir_for(tx, tir_i32(0), tir_i32(WG_THREADS), TIR_FOR_THREAD_BINDING, "threadIdx.x", NULL, one);
  }
  if (v[1]) producer = tir_seq2(call_stmt("ptx_setmaxnreg_dec", tir_array_of(1, tir_i32((int)v[1]))), producer);
  tir_Node *role = tir_if(tir_cmp(TIR_EQ, R((tir_Node *)W->loop_var), tir_int_imm(W->loop_var->hdr.dtype, G * T)), producer, consumer);
  tir_Array *items = pp.prefix;
  items = tir_array_push(items, role);
  tir_Block *blk = tir_block_new("", NULL, NULL, NULL, NULL, pp.allocs, NULL, NULL, tir_seq(items));
  tir_Node *body = tir_block_realize(tir_array_empty(), tir_bool_imm(1), blk);
  return tir_for(R(W->loop_var), R(W->min), tir_int_imm(W->extent->dtype, G * T + 1), W->kind, W->thread_tag, R(W->annotations), body);
}

static tir_Node *mut(const tir_Node *n, void *arg) {
  Ctx *c = arg;
  if (tir_is_expr(n)) return tir_retain(n);
  if (n->kind != TIR_For || !mark_in(n)) return NULL;
  const tir_For *path[MAX_OUTER];
  int np;
  const tir_For *W = chain(n, path, &np);
  if (W) return specialize(c, path, np, W);
  if (is_thread_loop(n, "threadIdx.y")) {
    if (c->depth)
      return fail_at(c, n, "warpgroup loop", "%s: the threadIdx.y loop around the TMA pipeline sits in loops that are not a chain of "
                     "serial loops down to it (a persistent kernel's tile loop, nothing else around): the producer cannot walk them",
                     KEY_WS);
    return specialize(c, NULL, 0, (const tir_For *)n);
  }
  int serial = ((const tir_For *)n)->kind != TIR_FOR_THREAD_BINDING;
  c->depth += serial;
  tir_Node *m = tir_mutate_children(n, mut, arg);
  c->depth -= serial;
  return m ? m : TIR_MUTATE_ERROR;
}

tir_PrimFunc *tir_pass_inject_warp_specialization(const tir_PrimFunc *f) {
  const tir_For *ws = ws_loop_in(f->body);
  if (!ws) return (tir_PrimFunc *)tir_retain(f);
  Ctx c;
  memset(&c, 0, sizeof c);
  c.func = f;
  tir_visit(f->body, scan_threads, &c);
  tir_Node *body = tir_mutate(f->body, mut, &c);
  if (!body) return NULL;
  /* what is left: a warp_specialize loop that inject_tma_pipeline did not split, or a producer
   * outside any threadIdx.y loop */
  const tir_For *left = ws_loop_in(body);
  const tir_Node *mark = mark_in(body);
  if (left || mark) {
    tir_release(body);
    const tir_For *orig = ws_loop_in(f->body);
    if (left && !mark_in(f->body))
      fail_at(&c, &orig->hdr, "warp-specialized loop", "loop %s is annotated %s but is not a TMA pipeline (tma_pipeline_stages on "
              "the same loop, whose copies the producer warpgroup issues)", orig->loop_var->name, KEY_WS);
    else
      fail_at(&c, &orig->hdr, "warp-specialized loop", "loop %s: %s needs a threadIdx.y loop (the consumer warpgroups) around the "
              "pipeline, with threadIdx.x the 128 threads of a warpgroup", orig->loop_var->name, KEY_WS);
    return NULL;
  }
  return pass_with_body(f, body);
}
