/* sched_util.c -- scope, dependence and tree-editing helpers shared by the primitives
 * that move blocks around (compute_at, cache_read, decompose_reduction, ...). */
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"
#include "sched_util.h"
#include "tir/scope.h"

int sch_scope_index(const SchPath *p) {
  for (int i = p->n - 2; i >= 0; i--)
    if (p->nodes[i]->kind == TIR_Block) return i;
  return -1;
}

const tir_Block *sch_scope_block(const SchPath *p) {
  int i = sch_scope_index(p);
  return i >= 0 ? (const tir_Block *)p->nodes[i] : NULL;
}

int sch_block_writes(const tir_Block *b, const tir_Buffer *buf) {
  for (int i = 0; i < b->writes->size; i++)
    if (((const tir_BufferRegion *)b->writes->items[i])->buffer == buf) return 1;
  return 0;
}

int sch_block_reads(const tir_Block *b, const tir_Buffer *buf) {
  for (int i = 0; i < b->reads->size; i++)
    if (((const tir_BufferRegion *)b->reads->items[i])->buffer == buf) return 1;
  return 0;
}

int sch_is_producer_of(const tir_Block *p, const tir_Block *c) {
  for (int i = 0; i < p->writes->size; i++)
    if (sch_block_reads(c, ((const tir_BufferRegion *)p->writes->items[i])->buffer)) return 1;
  return 0;
}

tir_Buffer *sch_write_buffer(tir_Schedule *s, const char *P, const tir_BlockRealize *br, int index) {
  const tir_Block *blk = br->block;
  if (index < 0 || index >= blk->writes->size) {
    sch_error(s, P, &br->hdr, "this block", "write_buffer_index %d is out of range: block '%s' writes %d buffer(s)", index,
              blk->name, blk->writes->size);
    return NULL;
  }
  return ((const tir_BufferRegion *)blk->writes->items[index])->buffer;
}

int sch_is_param_buffer(const tir_PrimFunc *f, const tir_Buffer *b) {
  for (int i = 0; i < f->params->size; i++) {
    const tir_Node *p = f->params->items[i];
    if (p == &b->hdr || (p->kind == TIR_Buffer && ((const tir_Buffer *)p)->data == b->data)) return 1;
  }
  return 0;
}

int sch_contains_stmt(const tir_Node *root, const tir_Node *target) {
  SchPath p;
  return sch_path_to(root, target, &p);
}

/* ---- removal ---- */
typedef struct {
  const tir_Node *target;
} RemoveCtx;

static tir_Node *remove_fn(const tir_Node *n, void *p) {
  RemoveCtx *c = p;
  if (tir_is_expr(n) || n->kind == TIR_Buffer || n->kind == TIR_BufferRegion || n->kind == TIR_IterVar) return tir_retain(n);
  if (n->kind == TIR_SeqStmt) {
    const tir_Array *a = ((const tir_SeqStmt *)n)->seq;
    int hit = -1;
    for (int i = 0; i < a->size; i++)
      if (a->items[i] == c->target) hit = i;
    if (hit >= 0) {
      tir_Array *rest = tir_array_new(a->size - 1);
      for (int i = 0, k = 0; i < a->size; i++)
        if (i != hit) rest->items[k++] = tir_retain(a->items[i]);
      return tir_seq(rest);
    }
  }
  return NULL;
}

tir_Node *sch_remove_stmt(const tir_Node *root, const tir_Node *target) {
  RemoveCtx c = {target};
  return tir_mutate(root, remove_fn, &c);
}

const tir_Node *sch_removable_subtree(const SchPath *p, int idx) {
  /* climb while the parent is a loop whose only child is the current node */
  const tir_Node *cur = p->nodes[idx];
  for (int i = idx - 1; i >= 0; i--) {
    const tir_Node *par = p->nodes[i];
    if (par->kind != TIR_For || ((const tir_For *)par)->body != cur) break;
    cur = par;
  }
  return cur;
}

/* ---- insertion ---- */
tir_Node *sch_insert_into(const tir_Node *body, int pos, tir_Node *stmt) {
  int n = body->kind == TIR_SeqStmt ? ((const tir_SeqStmt *)body)->seq->size : 1;
  if (pos < 0 || pos > n) pos = n;
  tir_Array *out = tir_array_new(n + 1);
  for (int i = 0, k = 0; i <= n; i++) {
    if (i == pos) out->items[k++] = stmt;
    if (i < n) out->items[k++] = tir_retain(body->kind == TIR_SeqStmt ? ((const tir_SeqStmt *)body)->seq->items[i] : body);
  }
  return tir_seq(out);
}

int sch_seq_size(const tir_Node *body) { return body->kind == TIR_SeqStmt ? ((const tir_SeqStmt *)body)->seq->size : 1; }

const tir_Node *sch_seq_item(const tir_Node *body, int i) {
  return body->kind == TIR_SeqStmt ? ((const tir_SeqStmt *)body)->seq->items[i] : body;
}

/* ---- blocks under a statement ---- */
int sch_subtree_has_block_if(const tir_Node *stmt, int (*pred)(const tir_Block *b, const void *ctx), const void *ctx) {
  const tir_BlockRealize **blocks;
  int n = sch_child_blocks(stmt, &blocks);
  int r = 0;
  for (int i = 0; i < n && !r; i++) r = pred(blocks[i]->block, ctx);
  /* the statement itself may be a block realize */
  free(blocks);
  return r;
}

/* ---- regions ---- */
tir_Array *sch_region_of(const tir_Array *regions, const tir_Buffer *buf) {
  for (int i = 0; i < regions->size; i++) {
    const tir_BufferRegion *r = (const tir_BufferRegion *)regions->items[i];
    if (r->buffer == buf) return r->region;
  }
  return NULL;
}

tir_Node *sch_substitute_bindings(const tir_BlockRealize *br, const tir_Node *x) {
  const tir_Block *b = br->block;
  int n = b->iter_vars->size;
  if (!n) return tir_retain(x);
  tir_Var **vars = calloc((size_t)n, sizeof *vars);
  for (int i = 0; i < n; i++) vars[i] = ((const tir_IterVar *)b->iter_vars->items[i])->var;
  tir_Node *r = tir_substitute(x, n, vars, br->iter_values->items);
  free(vars);
  return r;
}

void sch_doms_free(tir_DomEntry *d, int n) {
  for (int i = 0; i < n; i++) {
    tir_release(d[i].set.min);
    tir_release(d[i].set.max);
  }
}

int sch_loop_dom(const tir_For *f, tir_DomEntry *out) {
  out->var = f->loop_var;
  out->set.min = tir_retain(f->min);
  tir_Node *last = tir_sub(tir_add(R(f->min), R(f->extent)), tir_int_imm(f->min->dtype, 1));
  out->set.max = tir_simplify(NULL, last);
  tir_release(last);
  return 1;
}

tir_Array *sch_rebase_region(const tir_Array *region, const tir_Array *mins) {
  tir_Array *out = tir_array_new(region->size);
  for (int i = 0; i < region->size; i++) {
    const tir_Range *r = (const tir_Range *)region->items[i];
    tir_Node *m = tir_sub(R(r->min), R(mins->items[i]));
    tir_Node *sm = tir_simplify(NULL, m);
    tir_release(m);
    out->items[i] = &tir_range(sm, R(r->extent))->hdr;
  }
  return out;
}

/* ---- names ---- */
typedef struct {
  const char *name;
  int found;
} NameCtx;

static int name_fn(const tir_Node *n, void *p) {
  NameCtx *c = p;
  if (n->kind == TIR_Block && strcmp(((const tir_Block *)n)->name, c->name) == 0) c->found = 1;
  if (n->kind == TIR_Buffer && strcmp(((const tir_Buffer *)n)->name, c->name) == 0) c->found = 1;
  return tir_is_expr(n) ? 1 : 0;
}

char *sch_unique_name(const tir_PrimFunc *f, const char *base) {
  char *cand = tir_strdup(base);
  for (int i = 1;; i++) {
    NameCtx c = {cand, 0};
    tir_visit(&f->hdr, name_fn, &c);
    if (!c.found) return cand;
    free(cand);
    cand = tir_strprintf("%s_%d", base, i);
  }
}

/* ---- block realize rebuilding ---- */
tir_Node *sch_realize_with_block(const tir_BlockRealize *br, tir_Block *blk) {
  tir_BlockRealize *r = (tir_BlockRealize *)tir_node_copy(&br->hdr);
  tir_release(r->block);
  r->block = blk;
  return &r->hdr;
}

tir_Block *sch_block_with_regions(const tir_Block *b, tir_Array *reads, tir_Array *writes) {
  tir_Block *nb = (tir_Block *)tir_node_copy(&b->hdr);
  if (reads) {
    tir_release(nb->reads);
    nb->reads = reads;
  }
  if (writes) {
    tir_release(nb->writes);
    nb->writes = writes;
  }
  return nb;
}

tir_Array *sch_ann_tuples_without(const tir_Block *blk, const char *key, int width, int nkey, const int64_t *keyv) {
  tir_Node *old = tir_ann_get(blk->annotations, key);
  tir_Array *list = tir_array_empty();
  if (!old) return list;
  const tir_Array *a = old->kind == TIR_Array ? (const tir_Array *)old : NULL;
  for (int i = 0; a && i < a->size; i++) {
    const tir_Array *e = (const tir_Array *)a->items[i];
    int ok = e && e->hdr.kind == TIR_Array && e->size == width, same = 1;
    for (int k = 0; ok && k < width; k++) {
      int64_t v;
      ok = tir_is_const_int(e->items[k], &v);
      if (k < nkey && v != keyv[k]) same = 0;
    }
    if (!ok) a = NULL;
    else if (!same) list = tir_array_push(list, R(a->items[i]));
  }
  if (!a) {
    tir_release(list);
    return NULL;
  }
  return list;
}

void sch_set_ann_tuples(tir_Schedule *s, const tir_Block *blk, const char *key, tir_Array *list) {
  tir_Block *nb = (tir_Block *)tir_node_copy(&blk->hdr);
  tir_Array *anns;
  if (list->size) {
    anns = tir_ann_set(nb->annotations, key, &list->hdr); /* steals list */
  } else {
    anns = tir_ann_remove(nb->annotations, key);
    tir_release(list);
  }
  tir_release(nb->annotations);
  nb->annotations = anns;
  sch_replace(s, &blk->hdr, &nb->hdr);
}

int sch_block_is_reduction(const tir_Block *b) {
  for (int i = 0; i < b->iter_vars->size; i++)
    if (((const tir_IterVar *)b->iter_vars->items[i])->iter_type == TIR_ITER_COMM_REDUCE) return 1;
  return b->init != NULL;
}

/* ---- caches ---- */
int sch_check_scope(tir_Schedule *s, const char *P, const tir_Node *where, const char *scope) {
  if (tir_scope_valid(scope)) return 0;
  return sch_error(s, P, where, "this block", "invalid storage scope '%s' (%s)", scope, tir_scope_valid_list());
}

tir_Buffer *sch_cache_buffer(const tir_PrimFunc *f, const tir_Buffer *src, const char *scope) {
  char *base = tir_strprintf("%s_%s", src->name, scope);
  for (char *c = base; *c; c++)
    if (*c == '.') *c = '_';
  char *name = sch_unique_name(f, base);
  free(base);
  tir_Buffer *b = tir_buffer_new(name, src->hdr.dtype, (tir_Array *)R(src->shape), NULL, NULL, scope);
  free(name);
  return b;
}

int sch_top_child_index(const tir_Node *body, const tir_Node *target) {
  int n = sch_seq_size(body);
  for (int i = 0; i < n; i++)
    if (sch_contains_stmt(sch_seq_item(body, i), target)) return i;
  return -1;
}

typedef struct {
  const int64_t *uids;
  int n;
  tir_Node *(*fn)(const tir_BlockRealize *br, void *ctx);
  void *ctx;
} MapCtx;

static tir_Node *map_fn(const tir_Node *n, void *p) {
  MapCtx *c = p;
  if (tir_is_expr(n) || n->kind == TIR_Buffer) return tir_retain(n);
  if (n->kind == TIR_BlockRealize) {
    const tir_BlockRealize *br = (const tir_BlockRealize *)n;
    for (int i = 0; i < c->n; i++)
      if (br->block->uid == c->uids[i]) return c->fn(br, c->ctx);
  }
  return NULL;
}

tir_Node *sch_map_blocks(const tir_Node *root, const int64_t *uids, int n,
                         tir_Node *(*fn)(const tir_BlockRealize *br, void *ctx), void *ctx) {
  MapCtx c = {uids, n, fn, ctx};
  return tir_mutate(root, map_fn, &c);
}

tir_Node *sch_scope_with_body(const tir_Block *scope, tir_Node *body) {
  return &tir_block_with_body(scope, body)->hdr;
}

const tir_Block *sch_leaf_scope(tir_Schedule *s, const char *P, const tir_BlockRealize *br, const SchPath *pb) {
  const tir_Block *blk = br->block;
  int sidx = sch_scope_index(pb);
  if (sidx < 0) {
    sch_error(s, P, &br->hdr, "this block", "block '%s' has no enclosing scope", blk->name);
    return NULL;
  }
  const tir_BlockRealize **inner;
  int ni = sch_child_blocks(&blk->hdr, &inner);
  free(inner);
  if (ni) {
    sch_error(s, P, &br->hdr, "this block", "block '%s' is not a leaf block (it holds %d block(s))", blk->name, ni);
    return NULL;
  }
  return (const tir_Block *)pb->nodes[sidx];
}
