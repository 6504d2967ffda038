/* node.c -- kind tables, reference counting and the generic node operations that every
 * other part builds on (copy, free, arrays).  All of it is driven by ir_nodes.def. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tir/ir.h"
#include "tir/strbuf.h"

/* ---- field tables (offsets are filled in by init_kinds) ---- */
#define F_NODE(T, name) {#name, TIR_FT_NODE, 0, #T},
#define F_INT(name) {#name, TIR_FT_INT, 0},
#define F_UID(name) {#name, TIR_FT_UID, 0},
#define F_FLOAT(name) {#name, TIR_FT_FLOAT, 0},
#define F_STR(name) {#name, TIR_FT_STR, 0},
#define N(K, FAM, FIELDS) static tir_FieldInfo fields_##K[] = {FIELDS{NULL, 0, 0, NULL}};
#include "tir/ir_nodes.def"
#undef N
#undef F_NODE
#undef F_INT
#undef F_UID
#undef F_FLOAT
#undef F_STR

/* Offsets are filled once at start-up by a second expansion that knows each struct. */
#define F_NODE(T, name) fields[i++].offset = offsetof(S, name);
#define F_INT(name) fields[i++].offset = offsetof(S, name);
#define F_UID(name) fields[i++].offset = offsetof(S, name);
#define F_FLOAT(name) fields[i++].offset = offsetof(S, name);
#define F_STR(name) fields[i++].offset = offsetof(S, name);

static tir_KindInfo kind_table[TIR_NUM_KINDS];
static int kinds_ready = 0;

static void init_kinds(void) {
  int k = 0;
#define N(K, FAM, FIELDS)                                                          \
  {                                                                                \
    typedef struct tir_##K S;                                                      \
    tir_FieldInfo *fields = fields_##K;                                            \
    int i = 0;                                                                     \
    FIELDS                                                                         \
    kind_table[k].name = #K;                                                       \
    kind_table[k].family = TIR_FAM_##FAM;                                          \
    kind_table[k].size = sizeof(S);                                                \
    kind_table[k].n_fields = i;                                                    \
    kind_table[k].fields = fields;                                                 \
    (void)fields;                                                                  \
    k++;                                                                           \
  }
#include "tir/ir_nodes.def"
#undef N
  kind_table[TIR_Array].name = "Array";
  kind_table[TIR_Array].family = TIR_FAM_OTHER;
  kind_table[TIR_Array].size = sizeof(tir_Array);
  kind_table[TIR_Array].n_fields = 0;
  kind_table[TIR_Array].fields = NULL;
  kinds_ready = 1;
}
#undef F_NODE
#undef F_INT
#undef F_UID
#undef F_FLOAT
#undef F_STR

const tir_KindInfo *tir_kind_info(int kind) {
  if (!kinds_ready) init_kinds();
  return &kind_table[kind];
}

const char *tir_kind_name(int kind) {
  if (kind < 0 || kind >= TIR_NUM_KINDS) return "?";
  return tir_kind_info(kind)->name;
}

/* ---- allocation ---- */
static long live_nodes = 0;
long tir_node_live_count(void) { return live_nodes; }

static void *xcalloc(size_t n) {
  void *p = calloc(1, n);
  if (!p) {
    fputs("tirlua: out of memory\n", stderr);
    abort();
  }
  return p;
}

tir_Node *tir_node_alloc(int kind, tir_DType dtype) {
  const tir_KindInfo *ki = tir_kind_info(kind);
  tir_Node *n = xcalloc(ki->size);
  n->kind = (uint16_t)kind;
  n->refcount = 1;
  n->dtype = dtype;
  n->flags = 1;
  live_nodes++;
  if (kind != TIR_Array) {
    /* Strings are never NULL once a node exists. */
    for (int i = 0; i < ki->n_fields; i++)
      if (ki->fields[i].type == TIR_FT_STR) *(char **)((char *)n + ki->fields[i].offset) = tir_strdup("");
  }
  return n;
}

void tir_node_update_depth(tir_Node *n) {
  if (!n || n->kind == TIR_Array) return;
  int d = 0;
  const tir_KindInfo *ki = tir_kind_info(n->kind);
  for (int i = 0; i < ki->n_fields; i++) {
    if (ki->fields[i].type != TIR_FT_NODE) continue;
    const tir_Node *c = *(tir_Node *const *)((const char *)n + ki->fields[i].offset);
    if (!c) continue;
    if (c->kind == TIR_Array) {
      const tir_Array *a = (const tir_Array *)c;
      for (int k = 0; k < a->size; k++)
        if (a->items[k] && a->items[k]->flags > d) d = a->items[k]->flags;
    } else if (c->flags > d) {
      d = c->flags;
    }
  }
  n->flags = (uint16_t)(d + 1 > 65535 ? 65535 : d + 1);
}

tir_Node *tir_retain(const void *p) {
  tir_Node *n = (tir_Node *)p;
  if (n) n->refcount++;
  return n;
}

static void destroy(tir_Node *n) {
  /* Iterative over the common long chains would be nicer; depth is bounded by IR depth. */
  live_nodes--;
  if (n->kind == TIR_Array) {
    tir_Array *a = (tir_Array *)n;
    for (int i = 0; i < a->size; i++) tir_release(a->items[i]);
    free(a->items);
    free(a);
    return;
  }
  const tir_KindInfo *ki = tir_kind_info(n->kind);
  for (int i = 0; i < ki->n_fields; i++) {
    void *slot = (char *)n + ki->fields[i].offset;
    if (ki->fields[i].type == TIR_FT_NODE)
      tir_release(*(tir_Node **)slot);
    else if (ki->fields[i].type == TIR_FT_STR)
      free(*(char **)slot);
  }
  free(n);
}

void tir_release(const void *p) {
  tir_Node *n = (tir_Node *)p;
  if (!n) return;
  if (--n->refcount == 0) destroy(n);
}

tir_Node *tir_node_copy(const tir_Node *n) {
  if (n->kind == TIR_Array) {
    const tir_Array *a = (const tir_Array *)n;
    tir_Array *b = tir_array_new(a->size);
    b->hdr.dtype = a->hdr.dtype;
    for (int i = 0; i < a->size; i++) b->items[i] = tir_retain(a->items[i]);
    return &b->hdr;
  }
  const tir_KindInfo *ki = tir_kind_info(n->kind);
  tir_Node *m = xcalloc(ki->size);
  memcpy(m, n, ki->size);
  m->refcount = 1;
  live_nodes++;
  for (int i = 0; i < ki->n_fields; i++) {
    void *slot = (char *)m + ki->fields[i].offset;
    if (ki->fields[i].type == TIR_FT_NODE)
      tir_retain(*(tir_Node **)slot);
    else if (ki->fields[i].type == TIR_FT_STR)
      *(char **)slot = tir_strdup(*(char **)slot);
  }
  return m;
}

void tir_node_set_str(char **slot, const char *s) {
  char *d = tir_strdup(s);
  free(*slot);
  *slot = d;
}

/* ---- arrays ---- */
tir_Array *tir_array_new(int size) {
  tir_Array *a = (tir_Array *)tir_node_alloc(TIR_Array, TIR_VOID);
  a->size = size;
  a->items = size > 0 ? xcalloc(sizeof(tir_Node *) * (size_t)size) : NULL;
  return a;
}

tir_Array *tir_array_empty(void) { return tir_array_new(0); }

tir_Array *tir_array_of(int n, ...) {
  tir_Array *a = tir_array_new(n);
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) a->items[i] = va_arg(ap, tir_Node *);
  va_end(ap);
  return a;
}

tir_Array *tir_array_push(tir_Array *a, tir_Node *x) {
  int n = a ? a->size : 0;
  tir_Array *b = tir_array_new(n + 1);
  for (int i = 0; i < n; i++) b->items[i] = tir_retain(a->items[i]);
  b->items[n] = x;
  tir_release(a);
  return b;
}

tir_Array *tir_array_slice(const tir_Array *a, int lo, int hi) {
  if (lo < 0) lo = 0;
  if (hi > a->size) hi = a->size;
  if (hi < lo) hi = lo;
  tir_Array *b = tir_array_new(hi - lo);
  for (int i = lo; i < hi; i++) b->items[i - lo] = tir_retain(a->items[i]);
  return b;
}

tir_Array *tir_array_concat(const tir_Array *a, const tir_Array *b) {
  int na = a ? a->size : 0, nb = b ? b->size : 0;
  tir_Array *c = tir_array_new(na + nb);
  for (int i = 0; i < na; i++) c->items[i] = tir_retain(a->items[i]);
  for (int i = 0; i < nb; i++) c->items[na + i] = tir_retain(b->items[i]);
  return c;
}
