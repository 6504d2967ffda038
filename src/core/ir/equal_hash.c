/* equal_hash.c -- structural equality (with a readable first difference) and hashing,
 * driven by the field tables.  Variables and buffers compare up to a consistent
 * renaming: the first time a pair meets, it is recorded; later meetings must agree
 * (TVM's SEqualReducer with map_free_vars).  Block uids are ignored. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tir/ir.h"
#include "tir/strbuf.h"

typedef struct {
  const tir_Node **a, **b;
  int n, cap;
  /* path of field names to the current node, for the diff text */
  const char *path[256];
  int path_idx[256];
  int depth;
  char *diff;
  size_t diff_cap;
  int done;
  int identity_vars; /* compare vars by identity (no mapping) */
  int map_free;      /* map vars/buffers met outside a definition too */
  int defining;      /* the current node is at a definition site */
} EqCtx;

static int map_pair(EqCtx *c, const tir_Node *a, const tir_Node *b) {
  for (int i = 0; i < c->n; i++) {
    if (c->a[i] == a) return c->b[i] == b;
    if (c->b[i] == b) return 0;
  }
  if (c->n == c->cap) {
    c->cap = c->cap ? c->cap * 2 : 32;
    c->a = realloc(c->a, sizeof(*c->a) * (size_t)c->cap);
    c->b = realloc(c->b, sizeof(*c->b) * (size_t)c->cap);
  }
  c->a[c->n] = a;
  c->b[c->n] = b;
  c->n++;
  return 1;
}

static void report(EqCtx *c, const tir_Node *a, const tir_Node *b, const char *what) {
  if (c->done || !c->diff) return;
  c->done = 1;
  tir_StrBuf sb;
  tir_sb_init(&sb);
  tir_sb_puts(&sb, "at ");
  if (c->depth == 0) tir_sb_puts(&sb, "<root>");
  for (int i = 0; i < c->depth; i++) {
    if (c->path_idx[i] >= 0) tir_sb_printf(&sb, "[%d]", c->path_idx[i] + 1);
    else tir_sb_printf(&sb, "%s%s", i ? "." : "", c->path[i]);
  }
  tir_sb_printf(&sb, ": %s", what);
  if (a && b) {
    char *pa = tir_print(a), *pb = tir_print(b);
    /* keep it to the first line of each side */
    char *na = strchr(pa, '\n'), *nb = strchr(pb, '\n');
    if (na) *na = 0;
    if (nb) *nb = 0;
    tir_sb_printf(&sb, "\n  lhs: %s\n  rhs: %s", pa, pb);
    free(pa);
    free(pb);
  }
  snprintf(c->diff, c->diff_cap, "%s", sb.data);
  tir_sb_free(&sb);
}

static int eq(EqCtx *c, const tir_Node *a, const tir_Node *b);

/* Fields that define variables or buffers (TVM's SEqualReducer DefEqual sites). */
static int is_def_field(int kind, const char *name) {
  switch (kind) {
    case TIR_For: return strcmp(name, "loop_var") == 0;
    case TIR_IterVar: return strcmp(name, "var") == 0;
    case TIR_Let:
    case TIR_LetStmt: return strcmp(name, "var") == 0;
    case TIR_Allocate: return strcmp(name, "buffer") == 0;
    case TIR_DeclBuffer: return strcmp(name, "buffer") == 0;
    case TIR_MatchBufferRegion: return strcmp(name, "buffer") == 0;
    case TIR_PrimFunc: return strcmp(name, "params") == 0;
    case TIR_Block: return strcmp(name, "alloc_buffers") == 0;
    case TIR_Buffer: return strcmp(name, "data") == 0;
    case TIR_ComputeOp: return strcmp(name, "output") == 0;
    default: return 0;
  }
}

static int eq_field(EqCtx *c, const char *name, int idx, const tir_Node *a, const tir_Node *b, int def) {
  if (c->depth < 256) {
    c->path[c->depth] = name;
    c->path_idx[c->depth] = idx;
  }
  c->depth++;
  int saved = c->defining;
  c->defining = def;
  int r = eq(c, a, b);
  c->defining = saved;
  c->depth--;
  return r;
}

/* Looks up a pair: 1 = mapped consistently, 0 = mapped inconsistently, -1 = neither mapped. */
static int lookup_pair(EqCtx *c, const tir_Node *a, const tir_Node *b) {
  for (int i = 0; i < c->n; i++) {
    if (c->a[i] == a) return c->b[i] == b;
    if (c->b[i] == b) return 0;
  }
  return -1;
}

static int eq(EqCtx *c, const tir_Node *a, const tir_Node *b) {
  if (a == b) return 1;
  if (!a || !b) {
    report(c, a, b, a ? "rhs is missing" : "lhs is missing");
    return 0;
  }
  char s1[32], s2[32];
  if (a->kind != b->kind) {
    char buf[128];
    snprintf(buf, sizeof buf, "node kinds differ (%s vs %s)", tir_kind_name(a->kind), tir_kind_name(b->kind));
    report(c, a, b, buf);
    return 0;
  }
  if (!tir_dtype_eq(a->dtype, b->dtype)) {
    char buf[128];
    snprintf(buf, sizeof buf, "dtypes differ (%s vs %s)", tir_dtype_str(a->dtype, s1), tir_dtype_str(b->dtype, s2));
    report(c, a, b, buf);
    return 0;
  }
  if (a->kind == TIR_Var) {
    int m = c->identity_vars ? 0 : lookup_pair(c, a, b);
    if (m == -1 && (c->defining || c->map_free)) m = map_pair(c, a, b);
    if (m != 1) {
      report(c, a, b, m == -1 ? "free variables differ (not defined at matching places)" : "variables differ");
      return 0;
    }
    return 1;
  }
  if (a->kind == TIR_Buffer) {
    int m = lookup_pair(c, a, b);
    if (m == 1) return 1;
    /* a view of an already mapped allocation (e.g. the flat view of a parameter) is
     * defined by its data variable */
    int via_data = m == -1 && lookup_pair(c, &((const tir_Buffer *)a)->data->hdr, &((const tir_Buffer *)b)->data->hdr) == 1;
    if (m == 0 || !(c->defining || c->map_free || via_data)) {
      report(c, a, b, m == 0 ? "buffers differ" : "free buffers differ (not defined at matching places)");
      return 0;
    }
    map_pair(c, a, b);
    /* a definition: compare its fields (name, shape, scope, ...) below */
  }
  if (a->kind == TIR_Array) {
    const tir_Array *x = (const tir_Array *)a, *y = (const tir_Array *)b;
    if (x->size != y->size) {
      char buf[96];
      snprintf(buf, sizeof buf, "array lengths differ (%d vs %d)", x->size, y->size);
      report(c, NULL, NULL, buf);
      return 0;
    }
    for (int i = 0; i < x->size; i++)
      if (!eq_field(c, "", i, x->items[i], y->items[i], c->defining)) return 0;
    return 1;
  }
  const tir_KindInfo *ki = tir_kind_info(a->kind);
  /* a buffer being defined (allocation, match_buffer, parameter) also defines the symbolic
   * variables of its shape, strides and elem_offset (TVM: a parameter's match_buffer binds
   * the shape variables, MatchBufferRegion the strides and offset) */
  int buf_def = a->kind == TIR_Buffer && c->defining;
  for (int i = 0; i < ki->n_fields; i++) {
    const tir_FieldInfo *f = &ki->fields[i];
    const char *pa = (const char *)a + f->offset, *pb = (const char *)b + f->offset;
    switch (f->type) {
      case TIR_FT_NODE:
        if (!eq_field(c, f->name, -1, *(tir_Node *const *)pa, *(tir_Node *const *)pb,
                      is_def_field(a->kind, f->name) ||
                          (buf_def && (strcmp(f->name, "shape") == 0 || strcmp(f->name, "strides") == 0 ||
                                       strcmp(f->name, "elem_offset") == 0))))
          return 0;
        break;
      case TIR_FT_INT:
        if (*(const int64_t *)pa != *(const int64_t *)pb) {
          char buf[160];
          snprintf(buf, sizeof buf, "%s.%s differs (%lld vs %lld)", ki->name, f->name,
                   (long long)*(const int64_t *)pa, (long long)*(const int64_t *)pb);
          report(c, a, b, buf);
          return 0;
        }
        break;
      case TIR_FT_FLOAT: {
        double x = *(const double *)pa, y = *(const double *)pb;
        if (!(x == y || (x != x && y != y))) {
          report(c, a, b, "float values differ");
          return 0;
        }
        break;
      }
      case TIR_FT_STR:
        /* Names of variables and buffers are not compared (as in TVM); block names,
         * scopes, thread tags, keys and op names are. */
        if (a->kind == TIR_Buffer && strcmp(f->name, "name") == 0) break;
        if (strcmp(*(char *const *)pa, *(char *const *)pb) != 0) {
          char buf[256];
          snprintf(buf, sizeof buf, "%s.%s differs (\"%.80s\" vs \"%.80s\")", ki->name, f->name, *(char *const *)pa,
                   *(char *const *)pb);
          report(c, a, b, buf);
          return 0;
        }
        break;
      case TIR_FT_UID: break;
    }
  }
  return 1;
}

static int run_eq(const tir_Node *a, const tir_Node *b, char *buf, size_t cap, int identity_vars, int map_free) {
  EqCtx c;
  memset(&c, 0, sizeof c);
  c.map_free = map_free;
  c.diff = buf;
  c.diff_cap = cap;
  c.identity_vars = identity_vars;
  if (buf && cap) buf[0] = 0;
  int r = eq(&c, a, b);
  free(c.a);
  free(c.b);
  return r;
}

int tir_structural_equal(const tir_Node *a, const tir_Node *b) { return run_eq(a, b, NULL, 0, 0, 0); }
int tir_structural_diff(const tir_Node *a, const tir_Node *b, char *buf, size_t cap, int map_free_vars) {
  return run_eq(a, b, buf, cap, 0, map_free_vars);
}
int tir_expr_deep_equal(const tir_Node *a, const tir_Node *b) { return run_eq(a, b, NULL, 0, 1, 0); }

/* ---- hash ---- */
typedef struct {
  const tir_Node **vars;
  int n, cap;
} HashCtx;

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static uint64_t hash(HashCtx *c, const tir_Node *n) {
  if (!n) return 0x51ed27;
  uint64_t h = mix((uint64_t)n->kind * 31 + 7, (uint64_t)n->dtype.code << 24 | (uint64_t)n->dtype.bits << 16 | n->dtype.lanes);
  if (n->kind == TIR_Var || n->kind == TIR_Buffer) {
    /* de Bruijn-like: order of first appearance */
    int idx = -1;
    for (int i = 0; i < c->n; i++)
      if (c->vars[i] == n) idx = i;
    if (idx >= 0) return mix(h, (uint64_t)idx + 1000);
    if (c->n == c->cap) {
      c->cap = c->cap ? c->cap * 2 : 32;
      c->vars = realloc(c->vars, sizeof(*c->vars) * (size_t)c->cap);
    }
    c->vars[c->n++] = n;
    if (n->kind == TIR_Var) return mix(h, (uint64_t)c->n + 1000);
  }
  if (n->kind == TIR_Array) {
    const tir_Array *a = (const tir_Array *)n;
    h = mix(h, (uint64_t)a->size);
    for (int i = 0; i < a->size; i++) h = mix(h, hash(c, a->items[i]));
    return h;
  }
  const tir_KindInfo *ki = tir_kind_info(n->kind);
  for (int i = 0; i < ki->n_fields; i++) {
    const tir_FieldInfo *f = &ki->fields[i];
    const char *p = (const char *)n + f->offset;
    switch (f->type) {
      case TIR_FT_NODE: h = mix(h, hash(c, *(tir_Node *const *)p)); break;
      case TIR_FT_INT: h = mix(h, (uint64_t)*(const int64_t *)p); break;
      case TIR_FT_FLOAT: {
        double d = *(const double *)p;
        uint64_t u;
        if (d == 0) d = 0; /* -0.0 == 0.0 */
        memcpy(&u, &d, 8);
        h = mix(h, u);
        break;
      }
      case TIR_FT_STR:
        if (n->kind != TIR_Var && !(n->kind == TIR_Buffer && strcmp(f->name, "name") == 0)) h = mix(h, hash_str(*(char *const *)p));
        break;
      case TIR_FT_UID: break;
    }
  }
  return h;
}

uint64_t tir_structural_hash(const tir_Node *n) {
  HashCtx c = {0};
  uint64_t h = hash(&c, n);
  free(c.vars);
  return h;
}
