/* schedule.c -- schedule state, tree navigation, replacement and error reporting. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"
#include "tir/strbuf.h"

tir_Schedule *tir_schedule_new(const tir_PrimFunc *func) {
  tir_Schedule *s = calloc(1, sizeof *s);
  s->func = (tir_PrimFunc *)tir_retain(func);
  return s;
}

tir_Schedule *tir_schedule_copy(const tir_Schedule *s) { return tir_schedule_new(s->func); }

void tir_schedule_free(tir_Schedule *s) {
  if (!s) return;
  tir_release(s->func);
  free(s);
}

const tir_PrimFunc *tir_schedule_func(const tir_Schedule *s) { return s->func; }

void tir_schedule_set_func(tir_Schedule *s, const tir_PrimFunc *f) {
  tir_retain(f);
  tir_release(s->func);
  s->func = (tir_PrimFunc *)f;
}

int sch_stmt_children(const tir_Node *s, const tir_Node **out, int max) {
  int n = 0;
#define ADD(x)                      \
  do {                              \
    if ((x) && n < max) out[n++] = (x); \
  } while (0)
  switch (s->kind) {
    case TIR_For: ADD(((const tir_For *)s)->body); break;
    case TIR_SeqStmt: {
      const tir_Array *a = ((const tir_SeqStmt *)s)->seq;
      for (int i = 0; i < a->size; i++) ADD(a->items[i]);
      break;
    }
    case TIR_IfThenElse:
      ADD(((const tir_IfThenElse *)s)->then_case);
      ADD(((const tir_IfThenElse *)s)->else_case);
      break;
    case TIR_LetStmt: ADD(((const tir_LetStmt *)s)->body); break;
    case TIR_AttrStmt: ADD(((const tir_AttrStmt *)s)->body); break;
    case TIR_Allocate: ADD(((const tir_Allocate *)s)->body); break;
    case TIR_DeclBuffer: ADD(((const tir_DeclBuffer *)s)->body); break;
    case TIR_BlockRealize: ADD(&((const tir_BlockRealize *)s)->block->hdr); break;
    case TIR_Block:
      ADD(((const tir_Block *)s)->init);
      ADD(((const tir_Block *)s)->body);
      break;
    default: break;
  }
#undef ADD
  return n;
}

typedef int (*MatchFn)(const tir_Node *n, const void *ctx);

static int dfs(const tir_Node *n, MatchFn match, const void *ctx, SchPath *p) {
  if (p->n >= SCH_MAX_DEPTH) return 0;
  p->nodes[p->n++] = n;
  if (match(n, ctx)) return 1;
  if (n->kind == TIR_SeqStmt) {
    const tir_Array *a = ((const tir_SeqStmt *)n)->seq;
    for (int i = 0; i < a->size; i++)
      if (dfs(a->items[i], match, ctx, p)) return 1;
  } else {
    const tir_Node *kids[2];
    int k = sch_stmt_children(n, kids, 2);
    for (int i = 0; i < k; i++)
      if (dfs(kids[i], match, ctx, p)) return 1;
  }
  p->n--;
  return 0;
}

static int match_identity(const tir_Node *n, const void *ctx) { return n == ctx; }
static int match_loop(const tir_Node *n, const void *ctx) {
  return n->kind == TIR_For && (const void *)((const tir_For *)n)->loop_var == ctx;
}
static int match_block(const tir_Node *n, const void *ctx) {
  return n->kind == TIR_BlockRealize && ((const tir_BlockRealize *)n)->block->uid == *(const int64_t *)ctx;
}

int sch_path_to(const tir_Node *root, const tir_Node *target, SchPath *p) {
  p->n = 0;
  return dfs(root, match_identity, target, p);
}

const tir_For *sch_find_loop(const tir_Node *root, const tir_Var *v, SchPath *p) {
  SchPath local;
  if (!p) p = &local;
  p->n = 0;
  return dfs(root, match_loop, v, p) ? (const tir_For *)p->nodes[p->n - 1] : NULL;
}

const tir_BlockRealize *sch_find_block(const tir_Node *root, int64_t uid, SchPath *p) {
  SchPath local;
  if (!p) p = &local;
  p->n = 0;
  return dfs(root, match_block, &uid, p) ? (const tir_BlockRealize *)p->nodes[p->n - 1] : NULL;
}

void sch_replace(tir_Schedule *s, const tir_Node *old, tir_Node *repl) {
  tir_Node *body = tir_replace_stmt(s->func->body, old, repl);
  tir_PrimFunc *f = (tir_PrimFunc *)tir_node_copy(&s->func->hdr);
  tir_release(f->body);
  f->body = body;
  tir_release(s->func);
  s->func = f;
}

int sch_error(tir_Schedule *s, const char *prim, const tir_Node *mark, const char *label, const char *fmt, ...) {
  tir_StrBuf sb;
  tir_sb_init(&sb);
  va_list ap;
  va_start(ap, fmt);
  tir_sb_vprintf(&sb, fmt, ap);
  va_end(ap);
  tir_error_set(TIR_ERR_SCHEDULE, prim, "%s", sb.data ? sb.data : "");
  tir_sb_free(&sb);
  tir_error_set_ir(&s->func->hdr);
  if (mark) tir_error_mark(mark, label);
  return -1;
}

static void collect_blocks(const tir_Node *n, const tir_BlockRealize ***out, int *cnt, int *cap) {
  if (n->kind == TIR_BlockRealize) {
    if (*cnt == *cap) {
      *cap = *cap ? *cap * 2 : 8;
      *out = realloc(*out, sizeof(**out) * (size_t)*cap);
    }
    (*out)[(*cnt)++] = (const tir_BlockRealize *)n;
    return;
  }
  if (n->kind == TIR_SeqStmt) {
    const tir_Array *a = ((const tir_SeqStmt *)n)->seq;
    for (int i = 0; i < a->size; i++) collect_blocks(a->items[i], out, cnt, cap);
    return;
  }
  const tir_Node *kids[2];
  int k = sch_stmt_children(n, kids, 2);
  for (int i = 0; i < k; i++) collect_blocks(kids[i], out, cnt, cap);
}

int sch_child_blocks(const tir_Node *stmt, const tir_BlockRealize ***out) {
  int cnt = 0, cap = 0;
  *out = NULL;
  if (stmt->kind == TIR_Block) {
    const tir_Block *b = (const tir_Block *)stmt;
    if (b->init) collect_blocks(b->init, out, &cnt, &cap);
    collect_blocks(b->body, out, &cnt, &cap);
  } else {
    collect_blocks(stmt, out, &cnt, &cap);
  }
  return cnt;
}

int sch_loops_above(const SchPath *p, const tir_For **out, int max) {
  int start = 0;
  for (int i = p->n - 2; i >= 0; i--)
    if (p->nodes[i]->kind == TIR_Block) {
      start = i + 1;
      break;
    }
  int n = 0;
  for (int i = start; i < p->n - 1 && n < max; i++)
    if (p->nodes[i]->kind == TIR_For) out[n++] = (const tir_For *)p->nodes[i];
  return n;
}

int sch_check_iter_types_under(tir_Schedule *s, const char *prim, const tir_For *loop, int allow_reduce) {
  const tir_BlockRealize **blocks;
  int n = sch_child_blocks(loop->body, &blocks);
  for (int i = 0; i < n; i++) {
    const tir_BlockRealize *br = blocks[i];
    for (int j = 0; j < br->block->iter_vars->size; j++) {
      const tir_IterVar *iv = (const tir_IterVar *)br->block->iter_vars->items[j];
      if (!tir_uses_var(br->iter_values->items[j], loop->loop_var)) continue;
      if (iv->iter_type == TIR_ITER_DATA_PAR) continue;
      if (iv->iter_type == TIR_ITER_COMM_REDUCE && allow_reduce) continue;
      const char *what = iv->iter_type == TIR_ITER_COMM_REDUCE ? "a reduction" : "not data-parallel";
      sch_error(s, prim, &loop->hdr, "this loop",
                "block '%s' binds its iteration variable %s (%s) to loop %s; only data-parallel "
                "iterations may be %s",
                br->block->name, iv->var->name, what, loop->loop_var->name,
                strcmp(prim, "bind") == 0 ? "bound to threads" : strcmp(prim, "parallel") == 0 ? "parallelized" : "vectorized");
      free(blocks);
      return -1;
    }
  }
  free(blocks);
  return 0;
}

int sch_set_loop_kind(tir_Schedule *s, const char *prim, const tir_Var *v, int kind, const char *tag) {
  const tir_For *f = tir_sched_loop(s, v, prim);
  if (!f) return -1;
  tir_For *nf = (tir_For *)tir_node_copy(&f->hdr);
  nf->kind = kind;
  tir_node_set_str(&nf->thread_tag, tag ? tag : "");
  sch_replace(s, &f->hdr, &nf->hdr);
  return 0;
}

typedef struct {
  tir_Analyzer *an;
} SimpCtx;

static tir_Node *simp_bind_fn(const tir_Node *n, void *p) {
  SimpCtx *c = p;
  if (tir_is_expr(n)) return tir_retain(n);
  switch (n->kind) {
    case TIR_For: {
      const tir_For *f = (const tir_For *)n;
      int mark = tir_analyzer_mark(c->an);
      tir_analyzer_bind_range(c->an, f->loop_var, f->min, f->extent);
      tir_Node *body = tir_mutate(f->body, simp_bind_fn, c);
      tir_analyzer_reset(c->an, mark);
      if (body == f->body) {
        tir_release(body);
        return tir_retain(n);
      }
      tir_For *nf = (tir_For *)tir_node_copy(n);
      tir_release(nf->body);
      nf->body = body;
      return &nf->hdr;
    }
    case TIR_BlockRealize: {
      const tir_BlockRealize *br = (const tir_BlockRealize *)n;
      tir_Array *vals = tir_array_new(br->iter_values->size);
      int changed = 0;
      for (int i = 0; i < br->iter_values->size; i++) {
        vals->items[i] = tir_simplify(c->an, br->iter_values->items[i]);
        if (vals->items[i] != br->iter_values->items[i]) changed = 1;
      }
      tir_Node *pred = tir_simplify(c->an, br->predicate);
      if (pred != br->predicate) changed = 1;
      if (!changed) {
        tir_release(vals);
        tir_release(pred);
        return tir_retain(n);
      }
      tir_BlockRealize *r = (tir_BlockRealize *)tir_node_copy(n);
      tir_release(r->iter_values);
      tir_release(r->predicate);
      r->iter_values = vals;
      r->predicate = pred;
      return &r->hdr;
    }
    default: return NULL;
  }
}

tir_Node *sch_simplify_bindings(const tir_Node *stmt, const SchPath *outer) {
  SimpCtx c = {tir_analyzer_new()};
  if (outer)
    for (int i = 0; i < outer->n; i++)
      if (outer->nodes[i]->kind == TIR_For) {
        const tir_For *f = (const tir_For *)outer->nodes[i];
        tir_analyzer_bind_range(c.an, f->loop_var, f->min, f->extent);
      }
  tir_Node *r = tir_mutate(stmt, simp_bind_fn, &c);
  tir_analyzer_free(c.an);
  return r;
}
