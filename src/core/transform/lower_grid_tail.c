/* lower_grid_tail.c -- code after a loop bound to blockIdx, inside other blockIdx loops, runs once
 * after every iteration of that loop: the in-launch reduction of split-K (CUTLASS's "serial split-K"
 * semaphore; the stream-K fixup).
 *
 * TensorIR reads thread-bound loops as serial loops, so in
 *   for by in blockIdx.y: for bx in blockIdx.x: { for ks in blockIdx.z: S1(by, bx, ks); S2(by, bx) }
 * S2 runs once per (by, bx) after the S1 of every ks -- the partial sums of split-K's slices, then
 * their sum.  On the GPU every CTA (by, bx, ks) runs the whole body, so without this pass S2 would
 * run in all of them, before the other slices are done.  The pass makes the IR mean on the GPU what it
 * means serially:
 *   for ks in blockIdx.z: { S1; if (tir_grid_arrive_last(&grid_counter[by * nx + bx], nks)) S2 }
 * one int32 counter per iteration of the enclosing blockIdx loops, in a temporary of scope
 * "global.zeroed" (0 before the launch; the last CTA of each group sets it back to 0).  The CTA that
 * arrives last -- whichever ks it has -- runs S2 after a fence, so it sees the other CTAs' writes
 * (docs/BUILTINS.md tir_grid_arrive_last).  Statements before the inner loop stay as they are (they run
 * in every CTA, as before), except zero inits of "global.zeroed" buffers (only stores of 0 into such
 * buffers): they are a cross-CTA sum's init (tc_gemm's split_k_mode = "atomic", whose CTAs add into
 * the buffer with red.global.add -- the adds must be atomic), which in every CTA would race the other
 * CTAs' adds.  They move behind the tail, after a __syncthreads: the last CTA sets the buffer back to
 * 0 once the tail has read it, so each launch finds it 0, as the scope promises (serially the same
 * values: the buffer is 0 before the init).  Runs on block-level IR before plan_buffer_allocation, so the counter
 * lands among the root block's global allocations.
 *
 * Errors: the enclosing blockIdx loops need constant extents (the counter's size), and the inner loop
 * must be bound to a blockIdx axis none of them uses. */
#include <math.h>
#include <string.h>

#include "pass_util.h"
#include "tir/scope.h"

#define MAXB 8

typedef struct {
  const tir_PrimFunc *f;
  const tir_For *outer[MAXB]; /* the enclosing blockIdx loops, outermost first */
  int n_outer;
  tir_Buffer *counter; /* made on first use (owned) */
  int64_t counter_size;
  int failed;
} Ctx;

static int is_block_loop(const tir_Node *n) {
  if (n->kind != TIR_For) return 0;
  const tir_For *f = (const tir_For *)n;
  return f->kind == TIR_FOR_THREAD_BINDING && strncmp(f->thread_tag, "blockIdx.", 9) == 0;
}

static tir_Node *mut(const tir_Node *n, void *p);

/* the counter's element for the current enclosing loops: their row-major linear index */
static tir_Node *counter_index(Ctx *c, const tir_For *inner) {
  tir_Node *idx = tir_i32(0);
  int64_t size = 1;
  for (int i = 0; i < c->n_outer; i++) {
    const tir_For *o = c->outer[i];
    int64_t e;
    if (!tir_is_const_int(o->extent, &e)) {
      tir_release(idx);
      pass_fail_at("lower_grid_tail", c->f, &o->hdr, "this loop",
                   "the code after loop '%s' (bound to %s) runs once all its CTAs are done, counted per CTA of the enclosing "
                   "loops bound to blockIdx, which need constant extents; loop '%s' (%s) has none",
                   inner->loop_var->name, inner->thread_tag, o->loop_var->name, o->thread_tag);
      return NULL;
    }
    if (strcmp(o->thread_tag, inner->thread_tag) == 0) {
      tir_release(idx);
      pass_fail_at("lower_grid_tail", c->f, &inner->hdr, "this loop",
                   "loop '%s' is bound to %s inside loop '%s' bound to the same axis: a blockIdx axis can be bound once on a path",
                   inner->loop_var->name, inner->thread_tag, o->loop_var->name);
      return NULL;
    }
    tir_Node *v = tir_sub(tir_cast(TIR_INT32, R(&o->loop_var->hdr)), tir_cast(TIR_INT32, R(o->min)));
    idx = tir_add(tir_mul(idx, tir_i32(e)), v);
    size *= e;
  }
  if (c->counter && c->counter_size != size) {
    tir_release(idx);
    pass_fail_at("lower_grid_tail", c->f, &inner->hdr, "this loop",
                 "two kernels with code after a blockIdx loop count over different grids (%lld and %lld CTAs): not supported",
                 (long long)c->counter_size, (long long)size);
    return NULL;
  }
  if (!c->counter) {
    tir_Array *shape = tir_array_new(1);
    shape->items[0] = tir_i32(size);
    c->counter = tir_buffer_new("grid_counter", TIR_INT32, shape, NULL, NULL, "global.zeroed");
    c->counter_size = size;
  }
  return idx;
}

/* A zero init of a "global.zeroed" temporary: stores of constant 0 into such buffers only (loops
 * and blocks around them), nothing else.  zero_store_fn counts the stores and sets bad. */
typedef struct {
  int stores, bad;
} ZeroScan;

static int zero_store_fn(const tir_Node *n, void *p) {
  ZeroScan *z = p;
  if (tir_is_expr(n)) return 1;
  if (n->kind == TIR_BufferStore) {
    const tir_BufferStore *st = (const tir_BufferStore *)n;
    int64_t iv;
    double fv;
    int zero = (tir_is_const_int(st->value, &iv) && iv == 0) || (tir_is_const_float(st->value, &fv) && fv == 0.0 && !signbit(fv));
    if (!tir_scope_is_zeroed(st->buffer->scope) || !zero) z->bad = 1;
    z->stores++;
    return 1;
  }
  if (n->kind == TIR_Evaluate) z->bad = 1; /* a call: more than a zero init */
  return 0;
}

static int is_zero_init(const tir_Node *n) {
  ZeroScan z = {0, 0};
  tir_visit(n, zero_store_fn, &z);
  return z.stores > 0 && !z.bad;
}

/* grid_last_waits: tir_grid_wait before the first statement of the loop's body that holds atomic adds
 * (mma_store's "add" mode) and nothing else, in the CTA of the loop's last iteration only. */
typedef struct {
  int adds, other;
} AddScan;

static int add_scan_fn(const tir_Node *n, void *p) {
  AddScan *z = p;
  if (n->kind == TIR_BufferStore) z->other++;
  if (n->kind == TIR_Evaluate) {
    const tir_Node *v = ((const tir_Evaluate *)n)->value;
    if (v->kind == TIR_Call && strcmp(((const tir_Call *)v)->op, "mma_store") == 0 && ((const tir_Call *)v)->args->size == 4) z->adds++;
    else z->other++;
    return 1;
  }
  return tir_is_expr(n);
}

typedef struct {
  tir_Node *wait; /* the guarded call (borrowed) */
  int done;
} WaitCtx;

static tir_Node *wait_mut(const tir_Node *n, void *p) {
  WaitCtx *w = p;
  if (tir_is_expr(n) || w->done) return tir_retain(n);
  AddScan z = {0, 0};
  tir_visit(n, add_scan_fn, &z);
  if (!z.adds) return tir_retain(n);
  if (z.other) return NULL; /* the adds are deeper: look inside */
  w->done = 1;
  return tir_seq2(R(w->wait), tir_retain(n));
}

/* seq's items from `at` (a blockIdx loop) on: the loop with the rest moved into its body, guarded.
 * The zero inits among the items before `at` (moved[]: a cross-CTA sum's init, e.g. atomic
 * split-K's C_init) go behind the tail: each CTA adds into the temporary, which is 0 when the
 * launch starts, and the last CTA sets it back to 0 after reading it. */
static tir_Node *fold_tail(Ctx *c, const tir_For *inner, const tir_Array *items, int at, const tir_Array *moved) {
  tir_Node *idx = counter_index(c, inner);
  if (!idx || idx == TIR_MUTATE_ERROR) return TIR_MUTATE_ERROR;
  tir_Node *addr = tir_address_of(tir_buffer_load(R(c->counter), tir_array_of(1, idx)));
  tir_Node *last = tir_call(TIR_INT32, "tir_grid_arrive_last", tir_array_of(2, addr, tir_cast(TIR_INT32, R(inner->extent))));
  tir_Array *tail = tir_array_slice(items, at + 1, items->size);
  if (moved->size) tail = tir_array_push(tail, tir_evaluate(tir_call(TIR_INT32, "syncthreads", tir_array_empty())));
  for (int k = 0; k < moved->size; k++) tail = tir_array_push(tail, R(moved->items[k]));
  tir_Node *guarded = tir_if(tir_cmp(TIR_NE, last, tir_i32(0)), tir_seq(tail), NULL);
  tir_Node *inner_body = R(inner->body);
  const tir_Node *lw = inner->annotations ? tir_ann_get(inner->annotations, "grid_last_waits") : NULL;
  int64_t lwv = 0;
  if (lw && tir_is_const_int(lw, &lwv) && lwv) {
    /* the CTA of the last iteration adds after the others have arrived (fenced: their adds performed) */
    tir_Node *lastv = tir_add(R(inner->min), tir_sub(R(inner->extent), tir_int_imm(inner->extent->dtype, 1)));
    tir_Node *waddr = tir_address_of(tir_buffer_load(R(c->counter), tir_array_of(1, R(idx))));
    tir_Node *call = tir_evaluate(tir_call(TIR_INT32, "tir_grid_wait", tir_array_of(2, waddr, tir_cast(TIR_INT32, tir_sub(R(inner->extent),
                                                                                                                   tir_int_imm(inner->extent->dtype, 1))))));
    tir_Node *wait = tir_if(tir_cmp(TIR_EQ, R(&inner->loop_var->hdr), lastv), call, NULL);
    WaitCtx w = {wait, 0};
    tir_Node *nb = tir_mutate(inner_body, wait_mut, &w);
    tir_release(wait);
    tir_release(inner_body);
    if (!nb) {
      tir_release(guarded);
      return TIR_MUTATE_ERROR;
    }
    if (!w.done) {
      tir_release(nb);
      tir_release(guarded);
      pass_fail_at("lower_grid_tail", c->f, &inner->hdr, "this loop",
                   "loop '%s' is annotated grid_last_waits (its last CTA adds after the others), but its body has no atomic add "
                   "(mma_store \"add\") to wait before", inner->loop_var->name);
      return TIR_MUTATE_ERROR;
    }
    inner_body = nb;
  }
  tir_Node *body = tir_seq2(inner_body, guarded);
  return tir_for(R(inner->loop_var), R(inner->min), R(inner->extent), (int)inner->kind, inner->thread_tag,
                 inner->annotations ? R(inner->annotations) : NULL, body);
}

static tir_Node *mut(const tir_Node *n, void *p) {
  Ctx *c = p;
  if (tir_is_expr(n)) return tir_retain(n);
  if (is_block_loop(n)) {
    const tir_For *f = (const tir_For *)n;
    if (c->n_outer == MAXB) return NULL;
    c->outer[c->n_outer++] = f;
    tir_Node *body = tir_mutate(f->body, mut, p);
    c->n_outer--;
    if (!body) return TIR_MUTATE_ERROR;
    if (body == f->body) {
      tir_release(body);
      return tir_retain(n);
    }
    return tir_for(R(f->loop_var), R(f->min), R(f->extent), (int)f->kind, f->thread_tag, f->annotations ? R(f->annotations) : NULL,
                   body);
  }
  if (n->kind != TIR_SeqStmt || c->n_outer == 0) return NULL;
  const tir_Array *items = ((const tir_SeqStmt *)n)->seq;
  tir_Array *out = tir_array_new(items->size);
  int changed = 0, m = 0;
  for (int i = 0; i < items->size; i++) {
    tir_Node *x = tir_mutate(items->items[i], mut, p);
    if (!x) {
      for (int k = 0; k < m; k++) tir_release(out->items[k]);
      out->size = 0;
      tir_release(out);
      return TIR_MUTATE_ERROR;
    }
    changed |= x != items->items[i];
    out->items[m++] = x;
  }
  /* the first blockIdx loop with statements after it takes them in */
  for (int i = 0; i < m - 1; i++)
    if (is_block_loop(out->items[i])) {
      tir_Array *keep = tir_array_empty(), *moved = tir_array_empty();
      for (int k = 0; k < i; k++) {
        if (is_zero_init(out->items[k])) moved = tir_array_push(moved, R(out->items[k]));
        else keep = tir_array_push(keep, R(out->items[k]));
      }
      tir_Node *folded = fold_tail(c, (const tir_For *)out->items[i], out, i, moved);
      tir_release(moved);
      if (folded == TIR_MUTATE_ERROR) {
        tir_release(keep);
        tir_release(out);
        return TIR_MUTATE_ERROR;
      }
      keep = tir_array_push(keep, folded);
      tir_release(out);
      return tir_seq(keep);
    }
  if (!changed) {
    tir_release(out);
    return tir_retain(n);
  }
  return tir_seq(out);
}

tir_PrimFunc *tir_pass_lower_grid_tail(const tir_PrimFunc *f) {
  Ctx c = {.f = f};
  tir_Node *body = tir_mutate(f->body, mut, &c);
  if (!body) {
    tir_release(c.counter);
    return NULL;
  }
  if (!c.counter) return pass_with_body(f, body);
  /* the counter joins the root block's allocations (global: split_host_device makes it a temporary) */
  if (body->kind != TIR_BlockRealize) {
    tir_release(body);
    tir_release(c.counter);
    tir_error_set(TIR_ERR_LOWER, "lower_grid_tail", "expected block-level IR (a root block) in function %s", f->name);
    return NULL;
  }
  const tir_BlockRealize *br = (const tir_BlockRealize *)body;
  tir_Block *root = (tir_Block *)tir_node_copy(&br->block->hdr);
  tir_Array *allocs = root->alloc_buffers ? tir_array_slice(root->alloc_buffers, 0, root->alloc_buffers->size) : tir_array_empty();
  allocs = tir_array_push(allocs, &c.counter->hdr);
  tir_release(root->alloc_buffers);
  root->alloc_buffers = allocs;
  tir_Node *nbr = tir_block_realize(br->iter_values ? R(br->iter_values) : NULL, br->predicate ? R(br->predicate) : NULL, root);
  tir_release(body);
  return pass_with_body(f, nbr);
}
