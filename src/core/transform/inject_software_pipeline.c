/* inject_software_pipeline.c -- software pipelining of annotated loops (TVM
 * src/tir/transforms/inject_software_pipeline.cc; RFC apache/tvm-rfcs#80).
 *
 * A serial loop annotated with
 *   software_pipeline_stage        {s_0, ..., s_n-1}  one per statement of the loop body
 *   software_pipeline_order        a permutation of 0..n-1 (optional; default: body order)
 *   software_pipeline_async_stages {a}                (optional)
 * is rewritten so that statement k of iteration i runs in iteration i + s_k: a prologue
 * (iterations [min, min + S), unrolled), a steady-state body and an epilogue (S more
 * iterations, unrolled), S the largest stage.  In each emitted iteration j the statements
 * run in `order`, statement k on original iteration j - s_k, under a predicate when that
 * iteration may be out of range (the loop's extent may be symbolic or smaller than S).
 *
 * The loop body is a sequence of statements, optionally inside opaque blocks that allocate
 * buffers (what plan_buffer_allocation makes).  Nested pipelines are rewritten inner first;
 * unlike TVM, which flattens a child block's statements into the outer pipeline (so outer
 * stages count an inner pipeline as prologue, body and epilogue), the rewritten inner loop
 * stays one statement: stages count the statements the schedule shows.
 * Buffers allocated there ("pipeline buffers") are fresh in every iteration, so they get
 * V versions: a new leading dimension indexed by (i - min) % V, where V is the fewest
 * versions such that iteration i + V never writes a version before iteration i is done
 * with it:  V = max over writers w and accessors a of  s_a - s_w + (o_w > o_a ? 0 : 1)
 * (order o; TVM's use - def + 1, with its "reader before writer" reduction generalized).
 * Double buffering (stages {0, 0, 1}) gives 2 versions, {0, 0, 2} three.
 * tirlua extension: software_pipeline_async_reads {e_0, ..} (optional, one per statement) says
 * that statement a's reads stay in flight e_a iterations after it (a wgmma group left pending
 * by wgmma_wait_group 1 reads its shared tiles until the next iteration's wait); the buffer
 * then needs s_a + e_a - s_w + (o_w > o_a ? 0 : 1) versions, so that no copy refills a version
 * an asynchronous reader may still read.
 *
 * Legality (checked, so a pipeline never changes the result): a dependence between two
 * statements through a pipeline buffer must keep its direction -- the earlier statement
 * has a smaller (stage, order) -- and statements of different stages may not both access
 * (one of them writing) a buffer allocated outside the loop, which cannot be versioned.
 * Stages must be non-negative, lists as long as the body, the order a permutation.
 *
 * Async stages (CUDA cp.async): every statement of the async stage must be a copy from
 * global to shared memory; it is wrapped in AttrStmt "async_scope" (inject_ptx_async_copy
 * turns its stores into ptx_cp_async).  After each run of consecutive async statements
 * (in emission order) the pass emits ptx_commit_group, unconditionally: a thread whose
 * copies are predicated off commits an empty group, so group counts are exact without
 * TVM's if_then_else(pred, n, 0) counts.  Before a statement reading a buffer the async
 * stage writes, ptx_wait_group(n) is emitted with n = the number of commit groups issued
 * after the one holding the data it reads (TVM async_wait_inflight_count): for copies
 * emitted before their consumer, n = s_consumer - s_copy in the steady state (1 for double
 * buffering, 2 for stages {0, 0, 2}) and n shrinks by one per epilogue iteration, where no
 * copies are issued.  Only one async stage is allowed (one group queue per thread; TVM's
 * CUDA codegen has the same limit).  thread_sync puts a barrier after every wait.
 * tirlua extension: software_pipeline_early_wait = 1 puts one wait at the start of each
 * iteration instead (n one smaller per group the iteration commits before the consumer: for
 * copies emitted first, n = s_consumer - s_copy - 1, CUTLASS's "stages - 2"); the barrier
 * after it then also orders the previous iteration's reads before this iteration's copies,
 * so a steady state needs one barrier, not two.
 *
 * tirlua extension: software_pipeline_early_wait = 2 puts the one wait of each iteration right
 * before the first statement (in emission order) of the lowest stage that reads what the async
 * stage wrote; consumers emitted before it must be in a later stage -- their data is the one
 * the previous iteration's wait already covered (groups complete in order).  With a nested
 * pipeline this is CUTLASS's main loop: the current tile's last fragments are read and their
 * multiply-accumulates issued around the wait and the barrier that admit the next tile.
 *
 * Nested pipelines the TVM way (software_pipeline_nested = 1, tirlua key): a child statement
 * that was a software-pipelined loop counts as the statements its rewrite emitted (its
 * prologue, steady state and epilogue instances, flattened, as TVM's nested pipelines do), and
 * the buffers it allocated (its fragments, already versioned) become buffers of this pipeline.
 * Stages and orders then list those statements.  For an inner {0, 0, 1} pipeline of KS >= 2
 * steps the parts are  load_a(0), load_b(0), [load_a(1), load_b(1), mma(0)] or the steady-state
 * loop, mma(KS - 1); staging the first two one stage earlier than the rest and ordering them
 * after the steady state prefetches the next tile's first fragments during this tile's last
 * multiply-accumulates (TVM's nested GEMM pipeline, stage [0, 0, 2, 3, 3], order [0, 1, 3, 2, 4]).
 * tirlua extension: software_pipeline_unroll = 1 (on a loop of constant bounds) emits the steady
 * state as one instance per iteration instead of a loop; as the child of a nested pipeline, each
 * instance's statements then count, so the parent can place its own statements between the
 * child's iterations -- CUTLASS's main loop issues the next stage's global -> shared copies after
 * the second k step's fragment loads, not before the first (ptxas keeps shared loads behind
 * earlier cp.async, so copies emitted first delay that step's ldmatrix until all are issued).
 * Two statements whose accesses of a buffer are all under constant, different
 * "pipeline_version" markers (the inner pipeline's versions) touch disjoint elements: that pair
 * needs no further versions (the next tile's version-0 fragments may be written while this
 * tile's version-1 fragments are still to be read).
 *
 * Each statement instance that touches a versioned buffer is wrapped in AttrStmt
 * "pipeline_version" (node: the buffer, value: the version it touches), so that thread_sync
 * knows two versions are disjoint and needs no barrier between, say, filling version
 * (i + 1) % 2 and reading version i % 2.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pass_util.h"
#include "tir/arith.h"
#include "tir/scope.h"

#define PASS "inject_software_pipeline"
#define KEY_STAGE "software_pipeline_stage"
#define KEY_ORDER "software_pipeline_order"
#define KEY_ASYNC "software_pipeline_async_stages"
#define KEY_EARLY "software_pipeline_early_wait"
#define KEY_AREADS "software_pipeline_async_reads"
#define KEY_NESTED "software_pipeline_nested"
#define KEY_UNROLL "software_pipeline_unroll"
#define KEY_EXPAND "software_pipeline_modulo_expand"
#define MAX_UNROLLED 64 /* software_pipeline_unroll: most steady-state instances emitted */

/* ---- sets of data variables ---- */
typedef struct {
  const tir_Node **v;
  int n, cap;
} VSet;

static void vs_add(VSet *s, const tir_Node *x) {
  for (int i = 0; i < s->n; i++)
    if (s->v[i] == x) return;
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 8;
    s->v = realloc(s->v, sizeof(*s->v) * (size_t)s->cap);
  }
  s->v[s->n++] = x;
}
static int vs_has(const VSet *s, const tir_Node *x) {
  for (int i = 0; i < s->n; i++)
    if (s->v[i] == x) return 1;
  return 0;
}
static int vs_meets(const VSet *a, const VSet *b) {
  for (int i = 0; i < a->n; i++)
    if (vs_has(b, a->v[i])) return 1;
  return 0;
}

/* ---- one statement of the pipeline body ---- */
typedef struct {
  const tir_Node *stmt; /* borrowed */
  int stage, order, async;
  int async_reads; /* iterations its reads stay in flight after it (software_pipeline_async_reads) */
  VSet rd, wr; /* data vars of the buffers it reads / writes */
} PStmt;

/* Buffers read and written by a statement: loads, stores, regions declared by nested blocks
 * and match_buffer sources (both), address_of operands (both: builtins may write them). */
static int access_fn(const tir_Node *n, void *p) {
  PStmt *s = p;
  switch (n->kind) {
    case TIR_BufferLoad: vs_add(&s->rd, &((const tir_BufferLoad *)n)->buffer->data->hdr); break;
    case TIR_BufferStore: vs_add(&s->wr, &((const tir_BufferStore *)n)->buffer->data->hdr); break;
    case TIR_Block: {
      const tir_Block *b = (const tir_Block *)n;
      for (int i = 0; i < b->reads->size; i++) vs_add(&s->rd, &((const tir_BufferRegion *)b->reads->items[i])->buffer->data->hdr);
      for (int i = 0; i < b->writes->size; i++) vs_add(&s->wr, &((const tir_BufferRegion *)b->writes->items[i])->buffer->data->hdr);
      for (int i = 0; i < b->match_buffers->size; i++) {
        const tir_Node *d = &((const tir_MatchBufferRegion *)b->match_buffers->items[i])->source->buffer->data->hdr;
        vs_add(&s->rd, d);
        vs_add(&s->wr, d);
      }
      break;
    }
    case TIR_Call: {
      const tir_BufferLoad *l = tir_address_of_load(n);
      if (l) vs_add(&s->wr, &l->buffer->data->hdr);
      break;
    }
    default: break;
  }
  return 0;
}

/* ---- pass state ---- */
typedef struct {
  const tir_PrimFunc *func; /* for error reports */
} Ctx;

typedef struct {
  const tir_Buffer *old;
  tir_Buffer *nb; /* owned */
  int versions;
} Remap;

typedef struct {
  Ctx *ctx;
  const tir_For *loop;      /* the annotated loop (original, for error marks) */
  const tir_For *cur;       /* the same loop with its children already rewritten */
  PStmt *st;                /* statements in body order */
  int n;
  int *ord;                 /* ord[pos] = statement emitted at position pos */
  int S;                    /* largest stage */
  int async_stage;          /* -1: none */
  int *commit_after;        /* per position: a commit group closes after it */
  int *run_of;              /* per position of an async statement: its commit group index */
  int R;                    /* commit groups per iteration */
  VSet async_written;       /* buffers the async stage writes */
  int early_wait;           /* software_pipeline_early_wait: 1 one wait at the start of each iteration,
                               2 one wait before the first consumer of the lowest consumer stage */
  int wait_pos;             /* early_wait 2: the emission position of that wait */
  int expand;               /* software_pipeline_modulo_expand: the steady state unrolled by this (0, 1: not) */
  Remap *remap;
  int n_remap;
  tir_Analyzer *an;
} Pipe;

static tir_Node *pfail(Pipe *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static tir_Node *pfail(Pipe *p, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  tir_error_set(TIR_ERR_LOWER, PASS, "loop %s: %s", p->loop->loop_var->name, msg);
  tir_error_set_ir(&p->ctx->func->hdr);
  tir_error_mark(&p->loop->hdr, "pipelined loop");
  return NULL;
}

/* A buffer's name from its data var (which carries the buffer's name). */
static const char *data_name(const tir_Node *data) { return ((const tir_Var *)data)->name; }

/* Reads an annotation that must be a list of integers; returns the count, -1 if absent,
 * -2 if malformed. */
static int int_list(const tir_Array *anns, const char *key, int64_t **out) {
  const tir_Node *v = tir_ann_get(anns, key);
  *out = NULL;
  if (!v) return -1;
  if (v->kind != TIR_Array) {
    int64_t x;
    if (!tir_is_const_int(v, &x)) return -2;
    *out = malloc(sizeof(int64_t));
    (*out)[0] = x;
    return 1;
  }
  const tir_Array *a = (const tir_Array *)v;
  *out = malloc(sizeof(int64_t) * (size_t)(a->size + 1));
  for (int i = 0; i < a->size; i++)
    if (!a->items[i] || !tir_is_const_int(a->items[i], &(*out)[i])) {
      free(*out);
      *out = NULL;
      return -2;
    }
  return a->size;
}

/* Is every store of s a copy from a global buffer into a shared one (the value a load, or
 * if_then_else / select of a condition, a load -- or another such zero fill -- and zero)? */
typedef struct {
  int stores, bad;
  const tir_Node *why;
} CopyCheck;

static const tir_BufferLoad *copy_source(const tir_Node *v) {
  if (v->kind == TIR_BufferLoad) return (const tir_BufferLoad *)v;
  const tir_Node *a = NULL, *z = NULL;
  if (v->kind == TIR_Call && strcmp(((const tir_Call *)v)->op, "if_then_else") == 0 && ((const tir_Call *)v)->args->size == 3) {
    a = ((const tir_Call *)v)->args->items[1];
    z = ((const tir_Call *)v)->args->items[2];
  } else if (v->kind == TIR_Select) {
    a = ((const tir_Select *)v)->true_value;
    z = ((const tir_Select *)v)->false_value;
  }
  if (!a) return NULL;
  if (z->kind == TIR_Broadcast) z = ((const tir_Broadcast *)z)->value;
  double fz;
  int64_t iz;
  if (!((tir_is_const_float(z, &fz) && fz == 0.0) || (tir_is_const_int(z, &iz) && iz == 0))) return NULL;
  /* nested zero fills (a padding stage inlined into another) are one predicate after the
   * simplify pass, which runs before inject_ptx_async_copy */
  return a->kind == TIR_BufferLoad ? (const tir_BufferLoad *)a : copy_source(a);
}

static int copy_fn(const tir_Node *n, void *p) {
  CopyCheck *c = p;
  if (c->bad) return 1;
  if (n->kind == TIR_BufferStore) {
    const tir_BufferStore *s = (const tir_BufferStore *)n;
    const tir_BufferLoad *l = copy_source(s->value);
    c->stores++;
    if (!tir_scope_is_shared(s->buffer->scope) || !l || !tir_scope_is_global(l->buffer->scope) ||
        tir_dtype_bytes(tir_dtype_element(l->buffer->hdr.dtype)) != tir_dtype_bytes(tir_dtype_element(s->buffer->hdr.dtype))) {
      c->bad = 1;
      c->why = n;
    }
    return 0;
  }
  if (n->kind == TIR_Evaluate && ((const tir_Evaluate *)n)->value->kind != TIR_IntImm) {
    c->bad = 1;
    c->why = n;
  }
  return 0;
}

/* ---- rewriting accesses of pipeline buffers ---- */
static tir_Node *version_index(Pipe *p, const Remap *r) {
  /* (loop_var - min) % V; the loop var is substituted per instance afterwards */
  tir_DType t = p->cur->loop_var->hdr.dtype;
  return tir_floormod(tir_sub(R((tir_Node *)p->cur->loop_var), R(p->cur->min)), tir_int_imm(t, r->versions));
}

static const Remap *find_remap(Pipe *p, const tir_Buffer *b) {
  for (int i = 0; i < p->n_remap; i++)
    if (p->remap[i].old == b || p->remap[i].old->data == b->data) return &p->remap[i];
  return NULL;
}


static tir_Node *ver_mut(const tir_Node *n, void *arg) {
  Pipe *p = arg;
  switch (n->kind) {
    case TIR_BufferLoad: {
      tir_Node *m = tir_mutate_children(n, ver_mut, arg);
      if (!m) return TIR_MUTATE_ERROR;
      const tir_BufferLoad *l = (const tir_BufferLoad *)m;
      const Remap *r = find_remap(p, l->buffer);
      if (!r) return m;
      if (l->buffer != r->old) goto opaque;
      tir_Node *out = tir_buffer_load((tir_Buffer *)R(r->nb), pass_prepend(version_index(p, r), l->indices));
      tir_release(m);
      return out;
    opaque:
      tir_release(m);
      tir_error_set(TIR_ERR_LOWER, PASS, "buffer %s is accessed through another buffer object sharing its data", l->buffer->name);
      return TIR_MUTATE_ERROR;
    }
    case TIR_BufferStore: {
      tir_Node *m = tir_mutate_children(n, ver_mut, arg);
      if (!m) return TIR_MUTATE_ERROR;
      const tir_BufferStore *s = (const tir_BufferStore *)m;
      const Remap *r = find_remap(p, s->buffer);
      if (!r) return m;
      if (s->buffer != r->old) {
        tir_error_set(TIR_ERR_LOWER, PASS, "buffer %s is accessed through another buffer object sharing its data", s->buffer->name);
        tir_release(m);
        return TIR_MUTATE_ERROR;
      }
      tir_Node *out = tir_buffer_store((tir_Buffer *)R(r->nb), R(s->value), pass_prepend(version_index(p, r), s->indices));
      tir_release(m);
      return out;
    }
    case TIR_BufferRegion: {
      const tir_BufferRegion *br = (const tir_BufferRegion *)n;
      const Remap *r = find_remap(p, br->buffer);
      if (!r) return NULL;
      tir_Node *m = tir_mutate_children(n, ver_mut, arg);
      if (!m) return TIR_MUTATE_ERROR;
      const tir_BufferRegion *mb = (const tir_BufferRegion *)m;
      tir_Node *rg = &tir_range(version_index(p, r), tir_int_imm(p->cur->loop_var->hdr.dtype, 1))->hdr;
      tir_Node *out = &tir_buffer_region((tir_Buffer *)R(r->nb), pass_prepend(rg, mb->region))->hdr;
      tir_release(m);
      return out;
    }
    default: return NULL;
  }
}

/* After rewriting, no use of an old pipeline buffer's data may remain (an opaque use such
 * as a handle argument would read the wrong version). */
typedef struct {
  Pipe *p;
  const tir_Node *bad;
} StaleCheck;

static int stale_fn(const tir_Node *n, void *arg) {
  StaleCheck *c = arg;
  if (c->bad) return 1;
  if (n->kind == TIR_Var)
    for (int i = 0; i < c->p->n_remap; i++)
      if (n == &c->p->remap[i].old->data->hdr) c->bad = n;
  return 0;
}

/* ---- versions ---- */
/* The versions of buffer `data` a statement touches, from the enclosing "pipeline_version"
 * markers of an inner pipeline: a bit per constant version below 64, or ANY when some access
 * is not under a constant marker of that buffer. */
typedef struct {
  const tir_Node *data;
  const tir_Node *ver; /* the innermost enclosing marker's value for data, or NULL */
  uint64_t mask;
  int any;
} VerScan;

static void ver_touch(VerScan *v) {
  int64_t c;
  if (v->ver && tir_is_const_int(v->ver, &c) && c >= 0 && c < 64) v->mask |= (uint64_t)1 << c;
  else v->any = 1;
}

static int ver_fn(const tir_Node *n, void *arg) {
  VerScan *v = arg;
  if (v->any) return 1;
  switch (n->kind) {
    case TIR_AttrStmt: {
      const tir_AttrStmt *a = (const tir_AttrStmt *)n;
      if (strcmp(a->key, "pipeline_version") != 0 || !a->node || a->node->kind != TIR_Buffer ||
          &((const tir_Buffer *)a->node)->data->hdr != v->data)
        return 0;
      const tir_Node *saved = v->ver;
      v->ver = a->value;
      tir_visit(a->body, ver_fn, v);
      v->ver = saved;
      return 1;
    }
    /* an access: its buffer's data var is not an opaque use (the buffer itself is not visited) */
    case TIR_BufferLoad: {
      const tir_BufferLoad *l = (const tir_BufferLoad *)n;
      if (&l->buffer->data->hdr == v->data) ver_touch(v);
      tir_visit(&l->indices->hdr, ver_fn, v);
      return 1;
    }
    case TIR_BufferStore: {
      const tir_BufferStore *st = (const tir_BufferStore *)n;
      if (&st->buffer->data->hdr == v->data) ver_touch(v);
      tir_visit(st->value, ver_fn, v);
      tir_visit(&st->indices->hdr, ver_fn, v);
      return 1;
    }
    case TIR_BufferRegion: {
      const tir_BufferRegion *r = (const tir_BufferRegion *)n;
      if (&r->buffer->data->hdr == v->data) ver_touch(v);
      tir_visit(&r->region->hdr, ver_fn, v);
      return 1;
    }
    case TIR_Buffer: return 1; /* allocated or matched here: its data var is no use */
    case TIR_Var:
      if (n == v->data) v->any = 1; /* an opaque use of the data pointer (a handle argument) */
      return 0;
    default: return 0;
  }
}

/* Do statements x and y touch disjoint versions of `data` (both only under constant,
 * different inner-pipeline markers)? */
static int versions_disjoint(const PStmt *x, const PStmt *y, const tir_Node *data) {
  VerScan a = {data, NULL, 0, 0}, b = {data, NULL, 0, 0};
  tir_visit(x->stmt, ver_fn, &a);
  tir_visit(y->stmt, ver_fn, &b);
  return !a.any && !b.any && a.mask && b.mask && !(a.mask & b.mask);
}

static int versions_of(Pipe *p, const tir_Node *data) {
  int v = 1, any_writer = 0;
  for (int w = 0; w < p->n; w++) {
    if (!vs_has(&p->st[w].wr, data)) continue;
    any_writer = 1;
    for (int a = 0; a < p->n; a++) {
      if (!vs_has(&p->st[a].wr, data) && !vs_has(&p->st[a].rd, data)) continue;
      int need = p->st[a].stage + p->st[a].async_reads - p->st[w].stage + (p->st[w].order > p->st[a].order ? 0 : 1);
      if (need > v && a != w && versions_disjoint(&p->st[w], &p->st[a], data)) continue;
      if (need > v) v = need;
    }
  }
  return any_writer ? v : 1;
}


/* ---- fresh copies: every instance of a statement defines its own variables and buffers
 * (printing and structural equality map each definition once, as TVM's ConvertSSA) ---- */
typedef struct {
  tir_Var **vars;
  int nv, cv;
  tir_Buffer **bufs;
  int nb, cb;
} Defs;

static void def_var(Defs *d, const tir_Var *v) {
  for (int i = 0; i < d->nv; i++)
    if (d->vars[i] == v) return;
  if (d->nv == d->cv) {
    d->cv = d->cv ? d->cv * 2 : 16;
    d->vars = realloc(d->vars, sizeof(*d->vars) * (size_t)d->cv);
  }
  d->vars[d->nv++] = (tir_Var *)v;
}

static void def_buf(Defs *d, const tir_Buffer *b) {
  for (int i = 0; i < d->nb; i++)
    if (d->bufs[i] == b) return;
  if (d->nb == d->cb) {
    d->cb = d->cb ? d->cb * 2 : 8;
    d->bufs = realloc(d->bufs, sizeof(*d->bufs) * (size_t)d->cb);
  }
  d->bufs[d->nb++] = (tir_Buffer *)b;
}

static int defs_fn(const tir_Node *n, void *p) {
  Defs *d = p;
  switch (n->kind) {
    case TIR_For: def_var(d, ((const tir_For *)n)->loop_var); break;
    case TIR_LetStmt: def_var(d, ((const tir_LetStmt *)n)->var); break;
    case TIR_Let: def_var(d, ((const tir_Let *)n)->var); break;
    case TIR_Block: {
      const tir_Block *b = (const tir_Block *)n;
      for (int i = 0; i < b->iter_vars->size; i++) def_var(d, ((const tir_IterVar *)b->iter_vars->items[i])->var);
      for (int i = 0; i < b->alloc_buffers->size; i++) def_buf(d, (const tir_Buffer *)b->alloc_buffers->items[i]);
      for (int i = 0; i < b->match_buffers->size; i++) def_buf(d, ((const tir_MatchBufferRegion *)b->match_buffers->items[i])->buffer);
      break;
    }
    case TIR_Allocate: def_buf(d, ((const tir_Allocate *)n)->buffer); break;
    case TIR_DeclBuffer: def_buf(d, ((const tir_DeclBuffer *)n)->buffer); break;
    default: break;
  }
  return 0;
}

static tir_Node *fresh_copy(const tir_Node *s) {
  Defs d = {0};
  tir_visit(s, defs_fn, &d);
  tir_Node **nv = calloc((size_t)d.nv + 1, sizeof *nv);
  tir_Buffer **nb = calloc((size_t)d.nb + 1, sizeof *nb);
  for (int i = 0; i < d.nv; i++) nv[i] = &tir_var_new(d.vars[i]->name, d.vars[i]->hdr.dtype)->hdr;
  for (int i = 0; i < d.nb; i++) {
    nb[i] = (tir_Buffer *)tir_node_copy(&d.bufs[i]->hdr);
    tir_release(nb[i]->data);
    nb[i]->data = tir_var_new(d.bufs[i]->data->name, d.bufs[i]->data->hdr.dtype);
  }
  tir_Node *a = tir_substitute(s, d.nv, d.vars, nv);
  tir_Node *out = tir_substitute_buffers(a, d.nb, d.bufs, nb);
  tir_release(a);
  for (int i = 0; i < d.nv; i++) tir_release(nv[i]);
  for (int i = 0; i < d.nb; i++) tir_release(nb[i]);
  free(nv), free(nb), free(d.vars), free(d.bufs);
  return out;
}

/* ---- emission ---- */
enum { SEC_PROLOGUE, SEC_BODY, SEC_EPILOGUE };

static tir_Node *commit_stmt(void) { return tir_evaluate(tir_call(TIR_VOID, "ptx_commit_group", tir_array_empty())); }
static tir_Node *wait_stmt(tir_Node *n) { return tir_evaluate(tir_call(TIR_VOID, "ptx_wait_group", tir_array_of(1, n))); }

/* Commit groups that close before position pos (in the full emission order). */
static int commits_before(Pipe *p, int pos) {
  int c = 0;
  for (int q = 0; q < pos; q++) c += p->commit_after[q];
  return c;
}

/* Groups that may still be in flight when the statement at position pc (section sec,
 * emitted iteration j = start + v) reads what the async statement at position pq wrote;
 * `async_here`: copies are issued in this section.  See the file comment. */
static tir_Node *inflight(Pipe *p, int pc, int pq, int sec, int async_here, tir_Var *v) {
  int sc = p->st[p->ord[pc]].stage;
  int d = sc - p->async_stage;
  int r = p->run_of[pq];
  int cb = commits_before(p, pc);
  if (d < 0) return tir_i32(0); /* excluded by the legality check; waiting for all is safe */
  if (d == 0) return tir_i32(cb - r - 1);
  int64_t tail = p->R - 1 - r;
  if (sec != SEC_EPILOGUE || async_here) return tir_i32((int)(tail + (int64_t)p->R * (d - 1) + cb));
  /* epilogue without copies: iterations E0 .. j-1 issued none */
  tir_Node *k = v ? tir_sub(tir_i32(d - 1), tir_cast(TIR_INT32, R((tir_Node *)v))) : tir_i32(d - 1);
  k = tir_max(k, tir_i32(0));
  return tir_add(tir_i32((int)tail), tir_mul(tir_i32(p->R), k));
}

/* The in-flight count the statement at position pc needs (min over the copies it reads),
 * or NULL when it reads nothing the async stage writes.  Owned. */
static tir_Node *wait_need(Pipe *p, int pc, int sec, int async_here, tir_Var *v) {
  const PStmt *s = &p->st[p->ord[pc]];
  if (p->async_stage < 0 || s->async || !vs_meets(&s->rd, &p->async_written)) return NULL;
  tir_Node *need = NULL;
  for (int q = 0; q < p->n; q++) {
    const PStmt *a = &p->st[p->ord[q]];
    if (!a->async || !vs_meets(&a->wr, &s->rd)) continue;
    tir_Node *x = inflight(p, pc, q, sec, async_here, v);
    need = need ? tir_min(need, x) : x;
  }
  return need;
}

/* simplify(max(n, 0)): waiting for more groups than issued is a no-op, never an error. Steals n. */
static tir_Node *clamp0(Pipe *p, tir_Node *n) {
  tir_Node *ns = tir_simplify(p->an, n);
  tir_release(n);
  tir_Node *neg = tir_cmp(TIR_LT, R(ns), tir_i32(0));
  if (tir_can_prove(p->an, neg)) {
    tir_release(ns);
    ns = tir_i32(0);
  } else {
    tir_Node *ge = tir_cmp(TIR_GE, R(ns), tir_i32(0));
    if (!tir_can_prove(p->an, ge)) {
      tir_Node *m = tir_max(ns, tir_i32(0));
      ns = tir_simplify(p->an, m);
      tir_release(m);
    }
    tir_release(ge);
  }
  tir_release(neg);
  return ns;
}

/* One emitted iteration j (an expression of the section's loop var v, or a constant; v NULL
 * then): its statement instances, waits and commits, appended to items (returned). */
static tir_Array *emit_iter(Pipe *p, tir_Node *j, tir_Var *v, int sec, const tir_Node *extra_lb, int *err, tir_Array *items) {
  tir_DType lt = p->cur->loop_var->hdr.dtype;
  tir_Node *mn = p->cur->min;
  tir_Node *hi = tir_add(R(mn), R(p->cur->extent));
  /* which statements run in this section, and on which original iteration */
  tir_Node **skew = calloc((size_t)p->n, sizeof *skew), **pred = calloc((size_t)p->n, sizeof *pred);
  int *present = calloc((size_t)p->n, sizeof *present);
  int async_here = 0;
  for (int pos = 0; pos < p->n; pos++) {
    const PStmt *s = &p->st[p->ord[pos]];
    tir_Node *sk0 = tir_sub(R(j), tir_int_imm(lt, s->stage));
    skew[pos] = tir_simplify(p->an, sk0);
    tir_release(sk0);
    tir_Node *in = tir_and(tir_cmp(TIR_LE, R(mn), R(skew[pos])), tir_cmp(TIR_LT, R(skew[pos]), R(hi)));
    if (extra_lb) in = tir_and(in, tir_cmp(TIR_GE, R(j), R((tir_Node *)extra_lb)));
    pred[pos] = tir_simplify(p->an, in);
    tir_release(in);
    tir_Node *notin = tir_not(R(pred[pos]));
    present[pos] = !tir_can_prove(p->an, notin);
    tir_release(notin);
    if (present[pos] && s->async) async_here = 1;
  }
  tir_release(hi);
  tir_Node *last_wait = NULL; /* in-flight count of the last wait in this iteration */
  int commits_since = 0;
  if (p->early_wait == 1) {
    /* one wait at the start of the iteration, for every consumer in it: as many fewer
     * groups in flight as the iteration commits before each consumer */
    tir_Node *need = NULL;
    for (int pc = 0; pc < p->n; pc++) {
      if (!present[pc]) continue;
      tir_Node *x = wait_need(p, pc, sec, async_here, v);
      if (!x) continue;
      if (async_here) x = tir_sub(x, tir_i32(commits_before(p, pc)));
      need = need ? tir_min(need, x) : x;
    }
    if (need) items = tir_array_push(items, wait_stmt(clamp0(p, need)));
  }
  for (int pos = 0; pos < p->n && !*err; pos++) {
    const PStmt *s = &p->st[p->ord[pos]];
    if (p->early_wait == 2 && pos == p->wait_pos) {
      /* the one wait, for the consumers from here on (those before it read data the previous
       * iteration's wait covered): as many fewer groups in flight as the iteration commits
       * between here and each consumer */
      tir_Node *need = NULL;
      for (int pc = pos; pc < p->n; pc++) {
        if (!present[pc]) continue;
        tir_Node *x = wait_need(p, pc, sec, async_here, v);
        if (!x) continue;
        if (async_here) x = tir_sub(x, tir_i32(commits_before(p, pc) - commits_before(p, pos)));
        need = need ? tir_min(need, x) : x;
      }
      if (need) items = tir_array_push(items, wait_stmt(clamp0(p, need)));
    }
    if (!present[pos]) goto next;
    /* a wait before a statement that reads what the async stage wrote */
    if (!p->early_wait) {
      tir_Node *need = wait_need(p, pos, sec, async_here, v);
      if (need) {
        tir_Node *ns = clamp0(p, need);
        int covered = 0;
        if (last_wait) {
          tir_Node *c = tir_cmp(TIR_LE, tir_add(R(last_wait), tir_i32(commits_since)), R(ns));
          covered = tir_can_prove(p->an, c);
          tir_release(c);
        }
        if (!covered) {
          items = tir_array_push(items, wait_stmt(R(ns)));
          tir_release(last_wait);
          last_wait = R(ns);
          commits_since = 0;
        }
        tir_release(ns);
      }
    }
    {
      /* versions first, in terms of the loop var; then the instance's iteration */
      tir_Node *vr = p->n_remap ? tir_mutate(s->stmt, ver_mut, p) : tir_retain(s->stmt);
      if (!vr) {
        *err = 1;
        goto next;
      }
      StaleCheck sc = {p, NULL};
      tir_visit(vr, stale_fn, &sc);
      if (sc.bad) {
        tir_release(vr);
        pfail(p, "buffer %s is used opaquely (not through loads and stores) in statement %d, so its versions cannot be "
                 "selected", ((const tir_Var *)sc.bad)->name, p->ord[pos]);
        *err = 1;
        goto next;
      }
      tir_Node *sub = tir_substitute(vr, 1, (tir_Var *const *)&p->cur->loop_var, &skew[pos]);
      tir_release(vr);
      tir_Node *simp = tir_simplify_stmt(p->an, sub);
      tir_release(sub);
      tir_Node *inst = fresh_copy(simp);
      tir_release(simp);
      if (s->async) inst = tir_attr_stmt(NULL, "async_scope", tir_i32(1), inst);
      /* which version of each versioned buffer the instance touches, for thread_sync */
      for (int r = p->n_remap - 1; r >= 0; r--) {
        const tir_Node *d = &p->remap[r].old->data->hdr;
        if (!vs_has(&s->rd, d) && !vs_has(&s->wr, d)) continue;
        tir_DType lt2 = p->cur->loop_var->hdr.dtype;
        tir_Node *ver = tir_floormod(tir_sub(R(skew[pos]), R(p->cur->min)), tir_int_imm(lt2, p->remap[r].versions));
        tir_Node *vs = tir_simplify(p->an, ver);
        tir_release(ver);
        inst = tir_attr_stmt(tir_retain(&p->remap[r].nb->hdr), "pipeline_version", vs, inst);
      }
      if (!tir_can_prove(p->an, pred[pos])) inst = tir_if(R(pred[pos]), inst, NULL);
      items = tir_array_push(items, inst);
    }
  next:
    if (p->commit_after[pos] && async_here) {
      items = tir_array_push(items, commit_stmt());
      commits_since++;
    }
  }
  tir_release(last_wait);
  for (int pos = 0; pos < p->n; pos++) {
    tir_release(skew[pos]);
    tir_release(pred[pos]);
  }
  free(skew), free(pred), free(present);
  return items;
}

/* The loop's annotations without this pass's keys (for the loops it emits). */
static tir_Array *emitted_anns(Pipe *p) {
  static const char *const keys[] = {KEY_STAGE, KEY_ORDER, KEY_ASYNC, KEY_EARLY, KEY_NESTED, KEY_UNROLL, KEY_EXPAND};
  tir_Array *anns = (tir_Array *)tir_retain(p->cur->annotations);
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    tir_Array *x = tir_ann_remove(anns, keys[i]);
    tir_release(anns);
    anns = x;
  }
  return anns;
}

/* software_pipeline_modulo_expand: the steady state [start, start + ext) as a loop over w of U
 * instances j = start + U*w + u (u = 0 .. U-1; U the versions' least common multiple, so every
 * version index (j - c) % V is a constant), then ext % U instances.  ext must be constant. */
static tir_Node *emit_expanded(Pipe *p, tir_Node *start, tir_Node *ext, int *err) {
  tir_DType lt = p->cur->loop_var->hdr.dtype;
  int64_t n, U = p->expand;
  if (!tir_as_const_int(p->an, ext, &n)) {
    pfail(p, "%s = 1 needs a steady state of constant trip count (unrolled by the versions' common multiple, %lld)", KEY_EXPAND,
          (long long)U);
    *err = 1;
    return NULL;
  }
  int64_t q = n / U, rem = n % U;
  tir_Array *all = tir_array_empty();
  if (q > 0) {
    int mark = tir_analyzer_mark(p->an);
    tir_Var *w = NULL;
    if (q > 1) {
      w = tir_var_new(p->cur->loop_var->name, lt);
      tir_Node *z = tir_int_imm(lt, 0), *e = tir_int_imm(lt, q);
      tir_analyzer_bind_range(p->an, w, z, e);
      tir_release(z), tir_release(e);
    }
    tir_Array *items = tir_array_empty();
    for (int64_t u = 0; u < U && !*err; u++) {
      tir_Node *j0 = tir_add(R(start), tir_int_imm(lt, u));
      if (w) j0 = tir_add(j0, tir_mul(tir_int_imm(lt, U), R((tir_Node *)w)));
      tir_Node *j = tir_simplify(p->an, j0);
      tir_release(j0);
      items = emit_iter(p, j, w, SEC_BODY, NULL, err, items);
      tir_release(j);
    }
    tir_analyzer_reset(p->an, mark);
    if (*err || items->size == 0) {
      tir_release(items);
      tir_release(w);
    } else if (!w) {
      all = tir_array_push(all, tir_seq(items));
    } else {
      all = tir_array_push(all, tir_for(w, tir_int_imm(lt, 0), tir_int_imm(lt, q), (int)p->cur->kind, "", emitted_anns(p),
                                        tir_seq(items)));
    }
  }
  for (int64_t t = 0; t < rem && !*err; t++) {
    tir_Node *j0 = tir_add(R(start), tir_int_imm(lt, U * q + t));
    tir_Node *j = tir_simplify(p->an, j0);
    tir_release(j0);
    all = emit_iter(p, j, NULL, SEC_BODY, NULL, err, all);
    tir_release(j);
  }
  if (*err || all->size == 0) {
    tir_release(all);
    return NULL;
  }
  return tir_seq(all);
}

static tir_Node *emit_section(Pipe *p, tir_Node *start, tir_Node *end, int sec, const tir_Node *extra_lb, int *err) {
  tir_DType lt = p->cur->loop_var->hdr.dtype;
  tir_Node *ext0 = tir_sub(R(end), R(start));
  tir_Node *ext = tir_simplify(p->an, ext0);
  tir_release(ext0);
  tir_Node *zero = tir_int_imm(lt, 0), *one = tir_int_imm(lt, 1);
  tir_Node *le0 = tir_cmp(TIR_LE, R(ext), R(zero));
  int empty = tir_can_prove(p->an, le0);
  tir_release(le0);
  if (empty) {
    tir_release(ext), tir_release(zero), tir_release(one);
    return NULL;
  }
  int unit = tir_can_prove_equal(p->an, ext, one);
  if (sec == SEC_BODY && p->expand > 1 && !unit) {
    tir_release(zero), tir_release(one);
    tir_Node *r = emit_expanded(p, start, ext, err);
    tir_release(ext);
    return r;
  }
  int mark = tir_analyzer_mark(p->an);
  tir_Var *v = NULL;
  tir_Node *j; /* the emitted iteration */
  if (unit) {
    j = tir_simplify(p->an, start);
  } else {
    v = tir_var_new(p->cur->loop_var->name, lt);
    tir_analyzer_bind_range(p->an, v, zero, ext);
    tir_Node *j0 = tir_add(R((tir_Node *)v), R(start));
    j = tir_simplify(p->an, j0);
    tir_release(j0);
  }
  tir_release(zero), tir_release(one);
  tir_Array *items = emit_iter(p, j, v, sec, extra_lb, err, tir_array_empty());
  tir_release(j);
  tir_analyzer_reset(p->an, mark);
  if (*err || items->size == 0) {
    tir_release(items);
    tir_release(ext);
    tir_release(v);
    return NULL;
  }
  tir_Node *body = tir_seq(items);
  if (unit) {
    tir_release(ext);
    return body;
  }
  tir_Array *anns = emitted_anns(p);
  int kind = sec == SEC_BODY ? (int)p->cur->kind : TIR_FOR_UNROLLED;
  return tir_for(v, tir_int_imm(lt, 0), ext, kind, "", anns, body);
}

/* ---- the annotated loop ---- */
static int is_plain_opaque(const tir_BlockRealize *br) {
  const tir_Block *b = br->block;
  return tir_is_one(br->predicate) && b->iter_vars->size == 0 && !b->init && b->match_buffers->size == 0;
}

/* n without its enclosing plain opaque blocks (what plan_buffer_allocation makes, or an inner
 * pipeline's rewrite); their alloc_buffers are appended to *allocs unless allocs is NULL. */
static const tir_Node *peel_opaque(const tir_Node *n, tir_Array **allocs) {
  while (n->kind == TIR_BlockRealize && is_plain_opaque((const tir_BlockRealize *)n)) {
    const tir_Block *b = ((const tir_BlockRealize *)n)->block;
    if (allocs) {
      tir_Array *x = tir_array_concat(*allocs, b->alloc_buffers);
      tir_release(*allocs);
      *allocs = x;
    }
    n = b->body;
  }
  return n;
}

static tir_Node *pipeline(Ctx *ctx, const tir_For *orig, const tir_For *f) {
  Pipe P;
  memset(&P, 0, sizeof P);
  P.ctx = ctx;
  P.loop = orig;
  P.cur = f;
  P.async_stage = -1;
  tir_Node *result = NULL;
  int64_t *stages = NULL, *orders = NULL, *asyncs = NULL, *areads = NULL;
  tir_Array *allocs = tir_array_empty();
  const tir_Node **kids = NULL;
  int nk = 0;

  if (f->kind != TIR_FOR_SERIAL && f->kind != TIR_FOR_UNROLLED) {
    pfail(&P, "only serial loops can be software-pipelined (this one is %s)",
          f->kind == TIR_FOR_THREAD_BINDING ? "thread-bound" : f->kind == TIR_FOR_VECTORIZED ? "vectorized" : "parallel");
    goto done;
  }
  /* the statements of the body (inside the opaque blocks that allocate its buffers) */
  const tir_Node *body = peel_opaque(f->body, &allocs);
  if (body->kind != TIR_SeqStmt) {
    pfail(&P, "the body of a software-pipelined loop must be a sequence of statements (got a single %s)",
          tir_kind_name(body->kind));
    goto done;
  }
  {
    /* a child that is itself an opaque block (an inner pipeline already rewritten) stays one
     * statement: stages count the statements the schedule shows -- unless
     * software_pipeline_nested = 1: then an inner pipeline's rewrite counts as the statements
     * it emitted, and its buffers join this pipeline's (TVM's flattening; see the top) */
    const tir_Node *nv = tir_ann_get(f->annotations, KEY_NESTED);
    int64_t nested = 0;
    if (nv && (!tir_is_const_int(nv, &nested) || nested < 0 || nested > 1)) {
      pfail(&P, "%s must be 0 or 1", KEY_NESTED);
      goto done;
    }
    const tir_Array *seq = ((const tir_SeqStmt *)body)->seq;
    const tir_Array *oseq = NULL; /* the original loop's statements: which were pipelined loops */
    if (nested) {
      const tir_Node *ob = peel_opaque(orig->body, NULL);
      if (ob->kind == TIR_SeqStmt && ((const tir_SeqStmt *)ob)->seq->size == seq->size) oseq = ((const tir_SeqStmt *)ob)->seq;
    }
    int cap = seq->size, flattened = 0;
    kids = malloc(sizeof(*kids) * (size_t)cap);
    for (int i = 0; i < seq->size; i++) {
      const tir_Node *k = seq->items[i];
      int inner = 0;
      if (oseq) {
        const tir_Node *o = peel_opaque(oseq->items[i], NULL);
        inner = o->kind == TIR_For && tir_ann_get(((const tir_For *)o)->annotations, KEY_STAGE) != NULL;
      }
      if (inner) {
        k = peel_opaque(k, &allocs);
        flattened++;
        if (k->kind == TIR_SeqStmt) {
          const tir_Array *parts = ((const tir_SeqStmt *)k)->seq;
          cap += parts->size;
          kids = realloc(kids, sizeof(*kids) * (size_t)cap);
          for (int q = 0; q < parts->size; q++) kids[nk++] = parts->items[q];
          continue;
        }
      }
      kids[nk++] = k;
    }
    if (nested && !flattened) {
      pfail(&P, "%s = 1 but no statement of the body is a software-pipelined loop", KEY_NESTED);
      goto done;
    }
  }
  P.n = nk;
  int ns = int_list(f->annotations, KEY_STAGE, &stages);
  int no = int_list(f->annotations, KEY_ORDER, &orders);
  int na = int_list(f->annotations, KEY_ASYNC, &asyncs);
  int nr = int_list(f->annotations, KEY_AREADS, &areads);
  {
    const tir_Node *ew = tir_ann_get(f->annotations, KEY_EARLY);
    int64_t x = 0;
    if (ew && !tir_is_const_int(ew, &x)) {
      pfail(&P, "%s must be 0, 1 or 2", KEY_EARLY);
      goto done;
    }
    if (x < 0 || x > 2) {
      pfail(&P, "%s must be 0, 1 or 2", KEY_EARLY);
      goto done;
    }
    P.early_wait = (int)x;
  }
  int64_t unroll = 0, expand = 0;
  {
    const tir_Node *xv = tir_ann_get(f->annotations, KEY_EXPAND);
    if (xv && (!tir_is_const_int(xv, &expand) || expand < 0 || expand > 1)) {
      pfail(&P, "%s must be 0 or 1", KEY_EXPAND);
      goto done;
    }
  }
  {
    const tir_Node *uv = tir_ann_get(f->annotations, KEY_UNROLL);
    if (uv && (!tir_is_const_int(uv, &unroll) || unroll < 0 || unroll > 1)) {
      pfail(&P, "%s must be 0 or 1", KEY_UNROLL);
      goto done;
    }
  }
  if (ns == -2 || no == -2 || na == -2 || nr == -2) {
    pfail(&P, "%s must be a list of integers", ns == -2 ? KEY_STAGE : no == -2 ? KEY_ORDER : na == -2 ? KEY_ASYNC : KEY_AREADS);
    goto done;
  }
  if (ns == -1) {
    pfail(&P, "%s is given without %s", no >= 0 ? KEY_ORDER : na >= 0 ? KEY_ASYNC : KEY_EARLY, KEY_STAGE);
    goto done;
  }
  if (ns != nk) {
    pfail(&P, "%s has %d entries but the loop body has %d statements (one stage per statement, in body order%s)", KEY_STAGE,
          ns, nk, tir_ann_get(f->annotations, KEY_NESTED) ? "; an inner pipeline counts as the statements it emitted" : "");
    goto done;
  }
  if (no >= 0 && no != nk) {
    pfail(&P, "%s has %d entries but the loop body has %d statements", KEY_ORDER, no, nk);
    goto done;
  }
  if (nr >= 0 && nr != nk) {
    pfail(&P, "%s has %d entries but the loop body has %d statements", KEY_AREADS, nr, nk);
    goto done;
  }
  P.st = calloc((size_t)nk, sizeof *P.st);
  P.ord = calloc((size_t)nk, sizeof *P.ord);
  for (int i = 0; i < nk; i++) P.ord[i] = -1;
  for (int i = 0; i < nk; i++) {
    if (stages[i] < 0 || stages[i] > 64) {
      pfail(&P, "stage %lld of statement %d is out of range (stages are 0 .. 64)", (long long)stages[i], i);
      goto done;
    }
    int64_t o = no >= 0 ? orders[i] : i;
    if (o < 0 || o >= nk || P.ord[o] >= 0) {
      pfail(&P, "%s must be a permutation of 0 .. %d (entry %d is %lld)", KEY_ORDER, nk - 1, i, (long long)o);
      goto done;
    }
    P.ord[o] = i;
    P.st[i].stmt = kids[i];
    P.st[i].stage = (int)stages[i];
    P.st[i].order = (int)o;
    if (nr >= 0 && (areads[i] < 0 || areads[i] > 8)) {
      pfail(&P, "%s: entry %d is %lld (iterations a statement's reads stay in flight: 0 .. 8)", KEY_AREADS, i, (long long)areads[i]);
      goto done;
    }
    P.st[i].async_reads = nr >= 0 ? (int)areads[i] : 0;
    if (P.st[i].stage > P.S) P.S = P.st[i].stage;
    tir_visit(kids[i], access_fn, &P.st[i]);
  }
  for (int i = 0; i < (na > 0 ? na : 0); i++) {
    if (asyncs[i] < 0) {
      pfail(&P, "%s: stage %lld is negative", KEY_ASYNC, (long long)asyncs[i]);
      goto done;
    }
    if (P.async_stage >= 0 && P.async_stage != asyncs[i]) {
      pfail(&P, "%s lists stages %d and %lld: cp.async has one group queue per thread, so one async stage is supported",
            KEY_ASYNC, P.async_stage, (long long)asyncs[i]);
      goto done;
    }
    P.async_stage = (int)asyncs[i];
  }
  /* async statements must be global -> shared copies */
  for (int i = 0; i < nk && P.async_stage >= 0; i++) {
    if (P.st[i].stage != P.async_stage) continue;
    P.st[i].async = 1;
    CopyCheck cc = {0, 0, NULL};
    tir_visit(kids[i], copy_fn, &cc);
    if (cc.bad || cc.stores == 0) {
      pfail(&P, "statement %d is in async stage %d but is not a copy from global to shared memory (every store must be "
                "shared[...] = global[...], optionally if_then_else(cond, global[...], 0))", i, P.async_stage);
      if (cc.why) tir_error_mark(cc.why, "not a global -> shared copy");
      goto done;
    }
    for (int k = 0; k < P.st[i].wr.n; k++) vs_add(&P.async_written, P.st[i].wr.v[k]);
  }
  /* legality: dependences keep their direction; unversioned buffers stay within a stage */
  for (int a = 0; a < nk; a++)
    for (int b = a + 1; b < nk; b++) {
      const PStmt *x = &P.st[a], *y = &P.st[b];
      VSet dep = {0};
      for (int k = 0; k < x->wr.n; k++)
        if (vs_has(&y->rd, x->wr.v[k]) || vs_has(&y->wr, x->wr.v[k])) vs_add(&dep, x->wr.v[k]);
      for (int k = 0; k < x->rd.n; k++)
        if (vs_has(&y->wr, x->rd.v[k])) vs_add(&dep, x->rd.v[k]);
      const char *bad = NULL;
      int local = 0;
      for (int k = 0; k < dep.n && !bad; k++) {
        int in_pipe = 0;
        for (int q = 0; q < allocs->size; q++)
          if (&((const tir_Buffer *)allocs->items[q])->data->hdr == dep.v[k]) in_pipe = 1;
        if (in_pipe) {
          if (!(x->stage < y->stage || (x->stage == y->stage && x->order < y->order))) bad = data_name(dep.v[k]), local = 1;
        } else if (x->stage != y->stage || x->order > y->order) {
          bad = data_name(dep.v[k]);
        }
      }
      free(dep.v);
      if (bad && local) {
        pfail(&P, "statement %d depends on statement %d through %s, but would run before it (stages %d and %d, orders %d "
                  "and %d): a dependence needs a later stage, or the same stage and a later order",
              b, a, bad, y->stage, x->stage, y->order, x->order);
        goto done;
      }
      if (bad) {
        pfail(&P, "statements %d and %d (stages %d and %d, orders %d and %d) both access %s, which is allocated outside the "
                  "pipelined loop and so cannot get versions: they must be in the same stage, in body order",
              a, b, x->stage, y->stage, x->order, y->order, bad);
        goto done;
      }
    }
  /* commit groups: runs of consecutive async statements in emission order */
  P.commit_after = calloc((size_t)nk, sizeof(int));
  P.run_of = calloc((size_t)nk, sizeof(int));
  for (int pos = 0; pos < nk; pos++) {
    if (!P.st[P.ord[pos]].async) continue;
    P.run_of[pos] = P.R;
    if (pos == nk - 1 || !P.st[P.ord[pos + 1]].async) {
      P.commit_after[pos] = 1;
      P.R++;
    }
  }
  /* early_wait 2: the wait goes before the first consumer of the lowest consumer stage (every
   * consumer emitted before it is then in a later stage) */
  if (P.early_wait == 2) {
    int smin = -1;
    P.wait_pos = -1;
    for (int pos = 0; pos < nk; pos++) {
      const PStmt *c = &P.st[P.ord[pos]];
      if (P.async_stage < 0 || c->async || !vs_meets(&c->rd, &P.async_written)) continue;
      if (smin < 0 || c->stage < smin) smin = c->stage, P.wait_pos = pos;
    }
  }
  /* versions of the pipeline buffers */
  P.remap = calloc((size_t)(allocs->size + 1), sizeof *P.remap);
  for (int q = 0; q < allocs->size; q++) {
    const tir_Buffer *b = (const tir_Buffer *)allocs->items[q];
    int vv = versions_of(&P, &b->data->hdr);
    if (vv > 1) {
      P.remap[P.n_remap].old = b;
      P.remap[P.n_remap].nb = pass_versioned_buffer(b, vv);
      P.remap[P.n_remap].versions = vv;
      P.n_remap++;
    }
  }
  /* modulo variable expansion: unrolled by the versions' least common multiple */
  if (expand) {
    int64_t l = 1;
    for (int i = 0; i < P.n_remap; i++) {
      int64_t a = l, b = P.remap[i].versions;
      while (b) {
        int64_t t = a % b;
        a = b, b = t;
      }
      l = l / a * P.remap[i].versions;
    }
    if (l > 8) {
      pfail(&P, "%s = 1: the versions' common multiple is %lld (more than 8 copies of the steady state)", KEY_EXPAND, (long long)l);
      goto done;
    }
    if (unroll) {
      pfail(&P, "%s and %s are both set: choose one (unroll already makes every version index a constant)", KEY_EXPAND, KEY_UNROLL);
      goto done;
    }
    P.expand = (int)l;
  }
  /* prologue, body, epilogue */
  {
    P.an = tir_analyzer_new();
    tir_DType lt = f->loop_var->hdr.dtype;
    tir_Node *mn = f->min, *ex = f->extent;
    tir_Node *S = tir_int_imm(lt, P.S);
    tir_Node *pro_end = tir_add(R(mn), R(S));
    tir_Node *end = tir_add(R(mn), R(ex));
    tir_Node *epi_start = R(end), *extra_lb = NULL;
    tir_Node *ge = tir_cmp(TIR_GE, R(ex), R(S));
    if (P.S > 1 && !tir_can_prove(P.an, ge)) {
      int64_t c;
      if (tir_as_const_int(P.an, end, &c)) {
        tir_release(epi_start);
        epi_start = tir_max(R(end), R(pro_end));
      } else {
        extra_lb = R(pro_end);
      }
    }
    tir_release(ge);
    tir_Node *epi_end = tir_add(R(end), R(S));
    int err = 0;
    tir_Node *secs[3];
    secs[0] = emit_section(&P, (tir_Node *)mn, pro_end, SEC_PROLOGUE, NULL, &err);
    if (unroll) {
      /* software_pipeline_unroll: the steady state as one instance per iteration (a parent
       * pipeline with software_pipeline_nested then lists each instance's statements) */
      int64_t b0, b1;
      secs[1] = NULL;
      if (!err && (!tir_as_const_int(P.an, pro_end, &b0) || !tir_as_const_int(P.an, end, &b1))) {
        pfail(&P, "%s = 1 needs a loop of constant bounds (the steady state is emitted one instance per iteration)", KEY_UNROLL);
        err = 1;
      } else if (!err && b1 - b0 > MAX_UNROLLED) {
        pfail(&P, "%s = 1: the steady state has %lld iterations, more than the %d instances it may emit", KEY_UNROLL,
              (long long)(b1 - b0), MAX_UNROLLED);
        err = 1;
      }
      tir_Array *inst = tir_array_empty();
      for (int64_t j = b0; !err && j < b1; j++) {
        tir_Node *js = tir_int_imm(lt, j), *je = tir_int_imm(lt, j + 1);
        tir_Node *one = emit_section(&P, js, je, SEC_BODY, NULL, &err);
        tir_release(js), tir_release(je);
        if (one) inst = tir_array_push(inst, one);
      }
      if (err || inst->size == 0) tir_release(inst);
      else secs[1] = tir_seq(inst);
    } else {
      secs[1] = err ? NULL : emit_section(&P, pro_end, end, SEC_BODY, NULL, &err);
    }
    secs[2] = err ? NULL : emit_section(&P, epi_start, epi_end, SEC_EPILOGUE, extra_lb, &err);
    tir_release(S), tir_release(pro_end), tir_release(end), tir_release(epi_start), tir_release(extra_lb),
        tir_release(epi_end);
    if (err) {
      for (int i = 0; i < 3; i++) tir_release(secs[i]);
      if (!tir_error_occurred()) pfail(&P, "internal error while emitting the pipeline");
      goto done;
    }
    tir_Array *parts = tir_array_empty();
    for (int i = 0; i < 3; i++)
      if (secs[i]) parts = tir_array_push(parts, secs[i]);
    tir_Node *seq = parts->size ? tir_seq(parts) : (tir_release(parts), tir_evaluate(tir_i32(0)));
    if (allocs->size) {
      tir_Array *nallocs = tir_array_new(allocs->size);
      for (int q = 0; q < allocs->size; q++) {
        const Remap *r = find_remap(&P, (const tir_Buffer *)allocs->items[q]);
        nallocs->items[q] = tir_retain(r ? &r->nb->hdr : allocs->items[q]);
      }
      tir_Block *blk = tir_block_new("", NULL, NULL, NULL, NULL, nallocs, NULL, NULL, seq);
      result = tir_block_realize(tir_array_empty(), tir_bool_imm(1), blk);
    } else {
      result = seq;
    }
  }
done:
  for (int i = 0; P.st && i < nk; i++) {
    free(P.st[i].rd.v);
    free(P.st[i].wr.v);
  }
  for (int i = 0; i < P.n_remap; i++) tir_release(P.remap[i].nb);
  free(P.remap);
  free(P.st), free(P.ord), free(P.commit_after), free(P.run_of), free(P.async_written.v);
  free(stages), free(orders), free(asyncs), free(areads), free(kids);
  tir_release(allocs);
  if (P.an) tir_analyzer_free(P.an);
  return result;
}

static tir_Node *mut(const tir_Node *n, void *arg) {
  Ctx *c = arg;
  if (tir_is_expr(n)) return tir_retain(n);
  if (n->kind != TIR_For) return NULL;
  const tir_For *f = (const tir_For *)n;
  if (!tir_ann_get(f->annotations, KEY_STAGE) && !tir_ann_get(f->annotations, KEY_ORDER) &&
      !tir_ann_get(f->annotations, KEY_ASYNC) && !tir_ann_get(f->annotations, KEY_EARLY) && !tir_ann_get(f->annotations, KEY_NESTED) &&
      !tir_ann_get(f->annotations, KEY_UNROLL) && !tir_ann_get(f->annotations, KEY_EXPAND))
    return NULL;
  /* inner pipelines first (TVM's post-order) */
  tir_Node *m = tir_mutate_children(n, mut, arg);
  if (!m) return TIR_MUTATE_ERROR;
  tir_Node *r = pipeline(c, f, (const tir_For *)m);
  tir_release(m);
  return r ? r : TIR_MUTATE_ERROR;
}

tir_PrimFunc *tir_pass_inject_software_pipeline(const tir_PrimFunc *f) {
  Ctx c = {f};
  return pass_with_body(f, tir_mutate(f->body, mut, &c));
}
