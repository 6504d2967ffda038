/* verify_memory_scope.c -- checks, after plan_buffer_allocation has placed every
 * allocation at the lowest common ancestor of its accesses, that the SPMD reading of the
 * kernels computes what the IR says (in the spirit of TVM's VerifyMemory / VerifyGPUCode,
 * which reject host or cross-thread uses of device memory).  Two rules:
 *
 * 1. No thread-private buffer is shared by thread indices in the IR.
 *
 * The IR reads as if every thread-bound loop ran serially, so a buffer allocated above
 * such a loop is one buffer for all its iterations.  On the GPU a "local" buffer exists
 * once per thread and a "shared" one once per thread block: a value written in one
 * iteration of a loop bound to threadIdx (local) or blockIdx (local, shared) and read in
 * another would be lost.  So a local buffer must be allocated inside every thread-bound
 * loop around its accesses, and a shared buffer inside every blockIdx loop (threadIdx
 * loops below a shared allocation are the point of shared memory).  Schedules get there
 * with compute_at / reverse_compute_at of the producers and consumers of the buffer.
 *
 * 2. No in-place update runs redundantly.  Every top-level statement of a function with
 * thread bindings is a kernel (lower_thread_binding, split_host_device; the whole body is
 * one when the root block allocates a non-global buffer), and code outside
 * its thread-bound loops runs in every thread.  That is harmless for a block that only
 * writes values computed from other buffers, but a block that reads what it writes (the
 * update of a reduction) into global or shared memory would apply its update once per
 * thread: it must be under a loop for every thread axis its kernel launches with more
 * than one thread.
 *
 * 3. Redundant and distributed writes do not meet.  In a kernel launching more than one
 * thread on an axis, a block outside that axis's loops writes what it writes in every
 * thread; if another block of the kernel writes the same buffer under a loop of the axis,
 * the copies overwrite each other's results (an init left outside blockIdx loops clears
 * what other thread blocks already accumulated).  For global buffers the same holds for a
 * redundant reader: nothing orders it after other threads' writes (thread_sync places
 * barriers for shared memory only).  Shared buffers count only threadIdx axes (each
 * thread block has its own) and only writers (barriers order the readers).
 *
 * 4. (check_warp_launch) A kernel with a tensorized block calling a warp-wide builtin has
 * blockDim.x a multiple of 32. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pass_util.h"
#include "tir/scope.h"
#include "tir/transform.h"

#define MAXD 512

typedef struct {
  const tir_Buffer *buf;
  int depth; /* index in the stack of the block that allocates it */
} Alloc;

#define N_AXES 6
static const char *const AXES[N_AXES] = {"blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z"};

typedef struct {
  const tir_PrimFunc *func;
  const tir_Node *stack[MAXD]; /* For and Block ancestors */
  int sp;
  const tir_For *launch[N_AXES]; /* per axis, a loop of the current kernel bound to it with extent > 1 */
  Alloc *allocs;
  int n, cap;
  int failed;
  int broadcast; /* inside a cross-thread reduction's write-back (every thread stores the same value) */
} V;

/* Whether the iterations of a loop bound to `tag` get separate copies of a buffer in
 * `scope`: any thread tag for local (and wmma fragments), blockIdx for shared, blockIdx
 * and threadIdx.y/z for warp, none for global. */
static int splits_storage(const char *scope, const char *tag) { return tir_scope_splits(scope, tag); }

static void access(V *v, const tir_Buffer *b) {
  if (v->failed) return;
  int a = -1;
  for (int i = v->n - 1; i >= 0; i--)
    if (v->allocs[i].buf == b) {
      a = i;
      break;
    }
  if (a < 0) return; /* a parameter */
  for (int k = v->allocs[a].depth + 1; k < v->sp; k++) {
    const tir_Node *s = v->stack[k];
    if (s->kind != TIR_For) continue;
    const tir_For *f = (const tir_For *)s;
    if (f->kind != TIR_FOR_THREAD_BINDING || !splits_storage(b->scope, f->thread_tag)) continue;
    tir_error_set(TIR_ERR_LOWER, "verify_memory_scope",
                  "buffer %s has scope '%s', so each %s has its own copy, but it is allocated outside loop %s, which is "
                  "bound to %s and accesses it: values cannot pass between the iterations of that loop. Compute its "
                  "producers and consumers under the same thread loops (compute_at / reverse_compute_at), or use a "
                  "wider scope",
                  b->name, b->scope, tir_scope_is_shared(b->scope) ? "thread block" : "thread",
                  f->loop_var->name, f->thread_tag);
    tir_error_set_ir(&v->func->hdr);
    tir_error_mark(s, "this loop");
    v->failed = 1;
    return;
  }
}

static int axis_of(const char *tag) {
  for (int i = 0; i < N_AXES; i++)
    if (strcmp(AXES[i], tag) == 0) return i;
  return -1;
}

/* Records the loops of a kernel that launch more than one thread per axis. */
static int launch_fn(const tir_Node *n, void *p) {
  V *v = p;
  if (tir_is_expr(n)) return 1;
  if (n->kind != TIR_For || ((const tir_For *)n)->kind != TIR_FOR_THREAD_BINDING) return 0;
  const tir_For *f = (const tir_For *)n;
  int a = axis_of(f->thread_tag);
  int64_t e;
  if (a >= 0 && !(tir_is_const_int(f->extent, &e) && e <= 1) && !v->launch[a]) v->launch[a] = f;
  return 0;
}

static int find_block(const tir_Node *n, void *p) {
  if (tir_is_expr(n) || *(int *)p) return 1;
  if (n->kind == TIR_BlockRealize) *(int *)p = 1;
  return 0;
}

/* Blocks holding other blocks (blockize's outer blocks, ...) only summarize what those
 * do: rules 2 and 3 look at the leaves, which do the accesses. */
static int is_leaf(const tir_Block *b) {
  int found = 0;
  if (b->init) tir_visit(b->init, find_block, &found);
  if (!found) tir_visit(b->body, find_block, &found);
  return !found;
}

static int warp_op_fn(const tir_Node *n, void *p);

/* Rule 2 for a block about to be entered (its ancestors are on the stack). */
static void check_redundant_update(V *v, const tir_Block *b) {
  if (v->failed || !is_leaf(b)) return;
  for (int w = 0; w < b->writes->size; w++) {
    const tir_Buffer *buf = ((const tir_BufferRegion *)b->writes->items[w])->buffer;
    if (!tir_scope_is_global(buf->scope) && !tir_scope_is_shared(buf->scope)) continue;
    int self = 0;
    for (int r = 0; r < b->reads->size && !self; r++) self = ((const tir_BufferRegion *)b->reads->items[r])->buffer == buf;
    if (!self) continue;
    /* a warp-wide builtin (mma_store's "add" mode: the warp's lanes each add their own
     * accumulators) covers threadIdx.x: each lane applies its part of the update once */
    const char *warp_op = NULL;
    tir_visit(b->body, warp_op_fn, &warp_op);
    for (int a = 0; a < N_AXES; a++) {
      if (!v->launch[a] || (a == 3 && warp_op)) continue;
      int under = 0;
      for (int k = 0; k < v->sp && k < MAXD && !under; k++) {
        const tir_Node *s = v->stack[k];
        under = s->kind == TIR_For && ((const tir_For *)s)->kind == TIR_FOR_THREAD_BINDING &&
                strcmp(((const tir_For *)s)->thread_tag, AXES[a]) == 0;
      }
      if (under) continue;
      tir_error_set(TIR_ERR_LOWER, "verify_memory_scope",
                    "block '%s' updates %s in place (it reads what it writes), but it is under no loop bound to %s while "
                    "its kernel runs loop %s on that axis: every %s would apply the update again. Bind one of its loops "
                    "to %s, or move it out of this kernel",
                    b->name, buf->name, AXES[a], v->launch[a]->loop_var->name, a < 3 ? "thread block" : "thread", AXES[a]);
      tir_error_set_ir(&v->func->hdr);
      tir_error_mark(&b->hdr, "this block");
      tir_error_mark(&v->launch[a]->hdr, "the kernel's loop");
      v->failed = 1;
      return;
    }
  }
}

/* Rule 3: blocks of one kernel with the loops of each axis they are under. */
typedef struct {
  const tir_For *under[N_AXES]; /* innermost loop bound to AXES[a] above the block, or NULL */
  int after_arrival;            /* under if (tir_grid_arrive_last(...)): after a CTA-wide fence and barrier;
                                   * + 2 after each __syncthreads in the guarded code (a phase of its own) */
} Axes;

static int is_arrival(const tir_Node *n, void *p) {
  if (n->kind == TIR_Call) {
    const tir_BuiltinInfo *bi = tir_builtin_info(((const tir_Call *)n)->op);
    if (bi && bi->id == TIR_BI_TIR_GRID_ARRIVE_LAST) *(int *)p = 1;
  }
  return 0;
}

typedef struct {
  const tir_Block *b;
  Axes ax;
} KBlock;

typedef struct {
  KBlock *a;
  int n, cap;
} KBlocks;

static void collect_kblocks(const tir_Node *n, Axes ax, KBlocks *k) {
  if (!n) return;
  switch (n->kind) {
    case TIR_SeqStmt: {
      const tir_Array *a = ((const tir_SeqStmt *)n)->seq;
      for (int i = 0; i < a->size; i++) {
        const tir_Node *x = a->items[i];
        /* code after a barrier in the last CTA's tail (lower_grid_tail's reset of a zeroed sum) is
         * ordered after the tail's reads in every thread of the CTA */
        if (ax.after_arrival && x->kind == TIR_Evaluate && ((const tir_Evaluate *)x)->value->kind == TIR_Call &&
            tir_builtin_has(((const tir_Call *)((const tir_Evaluate *)x)->value)->op, TIR_BUILTIN_BARRIER))
          ax.after_arrival += 2;
        collect_kblocks(x, ax, k);
      }
      return;
    }
    case TIR_For: {
      const tir_For *f = (const tir_For *)n;
      int a = f->kind == TIR_FOR_THREAD_BINDING ? axis_of(f->thread_tag) : -1;
      if (a >= 0) ax.under[a] = f;
      collect_kblocks(f->body, ax, k);
      return;
    }
    case TIR_BlockRealize: {
      const tir_Block *b = ((const tir_BlockRealize *)n)->block;
      if (is_leaf(b)) {
        if (k->n == k->cap) {
          k->cap = k->cap ? k->cap * 2 : 16;
          k->a = realloc(k->a, sizeof(KBlock) * (size_t)k->cap);
        }
        k->a[k->n].b = b;
        k->a[k->n].ax = ax;
        k->n++;
      }
      collect_kblocks(b->init, ax, k);
      collect_kblocks(b->body, ax, k);
      return;
    }
    case TIR_IfThenElse: {
      /* the code lower_grid_tail guards: the CTA's writes before it are fenced and a barrier
       * passed, so its blocks may read what other threads of the CTA (and other CTAs) wrote */
      const tir_IfThenElse *f = (const tir_IfThenElse *)n;
      Axes then_ax = ax;
      tir_visit(f->cond, is_arrival, &then_ax.after_arrival);
      collect_kblocks(f->then_case, then_ax, k);
      collect_kblocks(f->else_case, ax, k);
      return;
    }
    case TIR_LetStmt: collect_kblocks(((const tir_LetStmt *)n)->body, ax, k); return;
    case TIR_AttrStmt: collect_kblocks(((const tir_AttrStmt *)n)->body, ax, k); return;
    case TIR_Allocate: collect_kblocks(((const tir_Allocate *)n)->body, ax, k); return;
    case TIR_DeclBuffer: collect_kblocks(((const tir_DeclBuffer *)n)->body, ax, k); return;
    default: return;
  }
}

static int region_has(const tir_Array *regions, const tir_Buffer *buf) {
  for (int i = 0; i < regions->size; i++)
    if (((const tir_BufferRegion *)regions->items[i])->buffer == buf) return 1;
  return 0;
}

static void check_distributed_writes(V *v, const tir_Node *kernel) {
  KBlocks k = {NULL, 0, 0};
  Axes none;
  memset(&none, 0, sizeof none);
  collect_kblocks(kernel, none, &k);
  for (int i = 0; i < k.n && !v->failed; i++) {
    const tir_Block *w = k.a[i].b;
    for (int wi = 0; wi < w->writes->size && !v->failed; wi++) {
      const tir_Buffer *buf = ((const tir_BufferRegion *)w->writes->items[wi])->buffer;
      int shared = tir_scope_is_shared(buf->scope);
      if (!shared && !tir_scope_is_global(buf->scope)) continue;
      for (int a = 0; a < N_AXES && !v->failed; a++) {
        const tir_For *lw = k.a[i].ax.under[a];
        if (!v->launch[a] || !lw || (shared && a < 3)) continue;
        for (int j = 0; j < k.n; j++) {
          const tir_Block *o = k.a[j].b;
          const tir_For *lo = k.a[j].ax.under[a];
          if (j == i || lo == lw) continue;
          /* one before a tir_grid_arrive_last, the other in the code it guards: ordered */
          if (k.a[i].ax.after_arrival != k.a[j].ax.after_arrival) continue;
          int writes = region_has(o->writes, buf), reads = !writes && region_has(o->reads, buf);
          if (lo) {
            /* both distributed, by different loops: threads would hand values to each other
             * through global memory, which nothing synchronizes (shared: thread_sync does) */
            if (shared || (!writes && !reads)) continue;
            tir_error_set(TIR_ERR_LOWER, "verify_memory_scope",
                          "blocks '%s' and '%s' of one kernel %s %s under different loops bound to %s (%s and %s): "
                          "a thread would %s values another thread handles, through global memory that nothing "
                          "synchronizes. Bind them through one loop, or put them in separate kernels",
                          w->name, o->name, writes ? "both write" : "write and read", buf->name, AXES[a],
                          lw->loop_var->name, lo->loop_var->name, writes ? "overwrite" : "read");
            tir_error_set_ir(&v->func->hdr);
            tir_error_mark(&o->hdr, "this block");
            tir_error_mark(&w->hdr, "and this one");
            v->failed = 1;
            break;
          }
          if (!writes && !(reads && !shared)) continue;
          tir_error_set(TIR_ERR_LOWER, "verify_memory_scope",
                        "block '%s' %s %s in every %s of its kernel (it is under no loop bound to %s), while block '%s' "
                        "writes %s under loop %s, which is bound to %s: %s. Bind a loop of '%s' to %s too, or put the "
                        "two blocks in separate kernels",
                        o->name, writes ? "writes" : "reads", buf->name, a < 3 ? "thread block" : "thread", AXES[a],
                        w->name, buf->name, lw->loop_var->name, AXES[a],
                        writes ? "the copies would overwrite each other's results"
                               : "nothing makes it wait for the other threads' writes to global memory",
                        o->name, AXES[a]);
          tir_error_set_ir(&v->func->hdr);
          tir_error_mark(&o->hdr, "this block");
          tir_error_mark(&w->hdr, "the distributed writer");
          v->failed = 1;
          break;
        }
      }
    }
  }
  free(k.a);
}

static int expr_fn(const tir_Node *n, void *p) {
  V *v = p;
  if (n->kind == TIR_BufferLoad) access(v, ((const tir_BufferLoad *)n)->buffer);
  return v->failed;
}

static void walk(V *v, const tir_Node *n);

static void walk_expr(V *v, const tir_Node *e) {
  if (e) tir_visit(e, expr_fn, v);
}

static void push(V *v, const tir_Node *n) {
  if (v->sp < MAXD) v->stack[v->sp] = n;
  v->sp++;
}

static void walk(V *v, const tir_Node *n) {
  if (!n || v->failed) return;
  switch (n->kind) {
    case TIR_SeqStmt: {
      const tir_Array *a = ((const tir_SeqStmt *)n)->seq;
      for (int i = 0; i < a->size; i++) walk(v, a->items[i]);
      return;
    }
    case TIR_For: {
      const tir_For *f = (const tir_For *)n;
      walk_expr(v, f->min);
      walk_expr(v, f->extent);
      push(v, n);
      walk(v, f->body);
      v->sp--;
      return;
    }
    case TIR_BlockRealize: {
      const tir_BlockRealize *br = (const tir_BlockRealize *)n;
      for (int i = 0; i < br->iter_values->size; i++) walk_expr(v, br->iter_values->items[i]);
      walk_expr(v, br->predicate);
      const tir_Block *b = br->block;
      int saved = v->n;
      for (int i = 0; i < b->alloc_buffers->size; i++) {
        if (v->n == v->cap) {
          v->cap = v->cap ? v->cap * 2 : 16;
          v->allocs = realloc(v->allocs, sizeof(Alloc) * (size_t)v->cap);
        }
        v->allocs[v->n].buf = (const tir_Buffer *)b->alloc_buffers->items[i];
        v->allocs[v->n].depth = v->sp < MAXD ? v->sp : MAXD - 1;
        v->n++;
      }
      check_redundant_update(v, b);
      /* lower_cross_thread_reduction's write-back: after the allreduce every thread holds the
       * result, so a local output written by all threads is the same in each */
      int bc = tir_ann_get(b->annotations, "cross_thread_write_back") != NULL;
      v->broadcast += bc;
      push(v, &b->hdr);
      walk(v, b->init);
      walk(v, b->body);
      v->sp--;
      v->broadcast -= bc;
      v->n = saved;
      return;
    }
    case TIR_BufferStore: {
      const tir_BufferStore *s = (const tir_BufferStore *)n;
      if (!v->broadcast) access(v, s->buffer);
      walk_expr(v, s->value);
      for (int i = 0; i < s->indices->size; i++) walk_expr(v, s->indices->items[i]);
      return;
    }
    case TIR_IfThenElse:
      walk_expr(v, ((const tir_IfThenElse *)n)->cond);
      walk(v, ((const tir_IfThenElse *)n)->then_case);
      walk(v, ((const tir_IfThenElse *)n)->else_case);
      return;
    case TIR_LetStmt:
      walk_expr(v, ((const tir_LetStmt *)n)->value);
      walk(v, ((const tir_LetStmt *)n)->body);
      return;
    case TIR_AttrStmt:
      walk_expr(v, ((const tir_AttrStmt *)n)->value);
      walk(v, ((const tir_AttrStmt *)n)->body);
      return;
    case TIR_Allocate: walk(v, ((const tir_Allocate *)n)->body); return;
    case TIR_DeclBuffer: walk(v, ((const tir_DeclBuffer *)n)->body); return;
    case TIR_Evaluate: walk_expr(v, ((const tir_Evaluate *)n)->value); return;
    default: return;
  }
}

/* Rule 4: tensor-core intrinsics need whole warps of consecutive threadIdx.x lanes.  A warp
 * is 32 consecutive linear thread ids, x fastest (CUDA C++ Programming Guide, "SIMT
 * Architecture"), and a warp-wide builtin (TIR_BUILTIN_WARP) gives lanes 0..31 one tile: with
 * blockDim.x = 16 and threadIdx.y = 4 a warp holds two threadIdx.y values, i.e. two warp tiles.
 * The launch's blockDim.x is the largest extent bound to threadIdx.x in the kernel (a loop
 * annotated tma_pipeline_stages counts as tir_tma_leader_lanes: inject_tma_pipeline adds that loop) (as
 * lower_thread_binding takes it); symbolic extents are checked at launch (split_host_device
 * keeps the same rule on the lowered kernel for builtins written by hand). */
typedef struct {
  const tir_For *tx, *ty, *tz; /* the widest constant loop bound to each axis */
  int64_t ex, ey, ez;
  int symbolic_x;
  const tir_Block *block; /* the first tensorized block calling a warp-wide builtin */
  const char *intrin, *op;
  const tir_For *tma; /* a loop annotated tma_pipeline_stages */
} WarpLaunch;

static int warp_op_fn(const tir_Node *n, void *p) {
  if (n->kind == TIR_Call && !*(const char **)p && tir_builtin_has(((const tir_Call *)n)->op, TIR_BUILTIN_WARP))
    *(const char **)p = ((const tir_Call *)n)->op;
  return 0;
}

static int warp_launch_fn(const tir_Node *n, void *p) {
  WarpLaunch *w = p;
  if (tir_is_expr(n)) return 1;
  if (n->kind == TIR_For && ((const tir_For *)n)->kind == TIR_FOR_THREAD_BINDING) {
    const tir_For *f = (const tir_For *)n;
    int64_t e;
    int c = tir_is_const_int(f->extent, &e);
    const tir_For **slot = NULL;
    int64_t *ext = NULL;
    if (strcmp(f->thread_tag, "threadIdx.x") == 0) slot = &w->tx, ext = &w->ex, w->symbolic_x |= !c;
    else if (strcmp(f->thread_tag, "threadIdx.y") == 0) slot = &w->ty, ext = &w->ey;
    else if (strcmp(f->thread_tag, "threadIdx.z") == 0) slot = &w->tz, ext = &w->ez;
    if (slot && c && e > *ext) *slot = f, *ext = e;
  } else if (n->kind == TIR_For && tir_ann_get(((const tir_For *)n)->annotations, "tma_pipeline_stages") && !w->tma) {
    w->tma = (const tir_For *)n; /* inject_tma_pipeline binds its leader loop to tir_tma_leader_lanes threadIdx.x lanes */
  } else if (n->kind == TIR_BlockRealize && !w->block) {
    const tir_Block *b = ((const tir_BlockRealize *)n)->block;
    const tir_Node *intrin = tir_ann_get(b->annotations, "tensor_intrin");
    if (intrin && intrin->kind == TIR_StringImm) {
      const char *op = NULL;
      tir_visit(b->body, warp_op_fn, &op);
      if (op) {
        w->block = b;
        w->intrin = ((const tir_StringImm *)intrin)->value;
        w->op = op;
      }
    }
  }
  return 0;
}

static void check_warp_launch(V *v, const tir_Node *kernel) {
  WarpLaunch w = {NULL, NULL, NULL, 1, 1, 1, 0, NULL, NULL, NULL, NULL};
  tir_visit(kernel, warp_launch_fn, &w);
  if (!w.block || w.symbolic_x) return;
  if (w.tma && w.ex < tir_tma_leader_lanes(kernel)) w.tx = w.tma, w.ex = tir_tma_leader_lanes(kernel);
  if (tir_builtin_has(w.op, TIR_BUILTIN_WARPGROUP) && w.ex % 128 != 0) {
    /* wgmma: a warpgroup is 4 consecutive warps, the first of them a multiple of 4 (PTX ISA 9.7.15.1) */
    char bind[160];
    if (w.tx) snprintf(bind, sizeof bind, "threadIdx.x = %lld (loop %s)", (long long)w.ex, w.tx->loop_var->name);
    else snprintf(bind, sizeof bind, "no loop bound to threadIdx.x (blockDim.x = 1)");
    tir_error_set(TIR_ERR_LOWER, "verify_memory_scope",
                  "block '%s' (tensorized with %s) uses the warpgroup-wide builtin %s, but its kernel launches %s: a warpgroup is "
                  "128 consecutive threads (PTX ISA 9.7.15.1) and the intrinsic gives each warpgroup one tile, so blockDim.x must "
                  "be a multiple of 128 -- bind threadIdx.x to 128 threads and number the warpgroups with threadIdx.y/z",
                  w.block->name, w.intrin, w.op, bind);
    tir_error_set_ir(&v->func->hdr);
    tir_error_mark(&w.block->hdr, "this block");
    if (w.tx) tir_error_mark(&w.tx->hdr, "bound to threadIdx.x");
    v->failed = 1;
    return;
  }
  if (w.ex % 32 == 0) return;
  char bind[160];
  if (w.tx) snprintf(bind, sizeof bind, "threadIdx.x = %lld (loop %s)", (long long)w.ex, w.tx->loop_var->name);
  else snprintf(bind, sizeof bind, "no loop bound to threadIdx.x (blockDim.x = 1)");
  tir_error_set(TIR_ERR_LOWER, "verify_memory_scope",
                "block '%s' (tensorized with %s) uses the warp-wide builtin %s, but its kernel launches %s, "
                "threadIdx.y = %lld, threadIdx.z = %lld, not whole warps of consecutive threadIdx.x lanes: a warp is 32 "
                "consecutive threadIdx.x lanes (then y, z) and the intrinsic gives each warp lanes 0..31 of one tile, so "
                "blockDim.x must be a multiple of 32 -- bind threadIdx.x to 32 lanes (e.g. in the cooperative copies) and "
                "number the warps with threadIdx.y/z (docs/TENSOR_CORES.md)",
                w.block->name, w.intrin, w.op, bind, (long long)w.ey, (long long)w.ez);
  tir_error_set_ir(&v->func->hdr);
  tir_error_mark(&w.block->hdr, "this block");
  if (w.tx) tir_error_mark(&w.tx->hdr, "bound to threadIdx.x");
  v->failed = 1;
}

tir_PrimFunc *tir_pass_verify_memory_scope(const tir_PrimFunc *f) {
  V v;
  memset(&v, 0, sizeof v);
  v.func = f;
  int kernels = 0;
  tir_visit(f->body, launch_fn, &v);
  for (int a = 0; a < N_AXES; a++) kernels |= v.launch[a] != NULL;
  if (!kernels || f->body->kind != TIR_BlockRealize) {
    walk(&v, f->body);
  } else {
    /* the root block, then each top-level statement (a kernel) with its own launch axes */
    const tir_BlockRealize *root = (const tir_BlockRealize *)f->body;
    const tir_Node *body = root->block->body;
    /* a non-global buffer of the root block becomes an allocation around the whole body,
     * which lower_thread_binding then makes one kernel */
    int whole = 0;
    for (int a = 0; a < root->block->alloc_buffers->size; a++)
      whole |= !tir_scope_is_global(((const tir_Buffer *)root->block->alloc_buffers->items[a])->scope);
    const tir_Array *items = body->kind == TIR_SeqStmt && !whole ? ((const tir_SeqStmt *)body)->seq : NULL;
    int n = items ? items->size : 1;
    for (int a = 0; a < root->block->alloc_buffers->size; a++) {
      if (v.n == v.cap) {
        v.cap = v.cap ? v.cap * 2 : 16;
        v.allocs = realloc(v.allocs, sizeof(Alloc) * (size_t)v.cap);
      }
      v.allocs[v.n].buf = (const tir_Buffer *)root->block->alloc_buffers->items[a];
      v.allocs[v.n].depth = 0;
      v.n++;
    }
    push(&v, &root->block->hdr);
    for (int i = 0; i < n && !v.failed; i++) {
      const tir_Node *item = items ? items->items[i] : body;
      memset(v.launch, 0, sizeof v.launch);
      tir_visit(item, launch_fn, &v);
      walk(&v, item);
      if (!v.failed) check_distributed_writes(&v, item);
      if (!v.failed) check_warp_launch(&v, item);
    }
    v.sp--;
  }
  free(v.allocs);
  if (v.failed) return NULL;
  return (tir_PrimFunc *)tir_retain(f);
}
