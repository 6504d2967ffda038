/* extern.c -- the registry of external device functions (include/tir/extern.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tir/error.h"
#include "tir/extern.h"

typedef struct {
  char *name, *source;
  tir_ExternModelFn model;
  void *ctx;
  void (*ctx_free)(void *);
} Entry;

static Entry *entries;
static int n_entries, cap_entries;

int tir_extern_name_valid(const char *s) {
  if (!s || !*s) return 0;
  for (;;) {
    if (!(isalpha((unsigned char)*s) || *s == '_')) return 0;
    while (isalnum((unsigned char)*s) || *s == '_') s++;
    if (!*s) return 1;
    if (s[0] != ':' || s[1] != ':') return 0;
    s += 2;
  }
}

static void entry_free(Entry *e) {
  if (e->ctx_free && e->ctx) e->ctx_free(e->ctx);
  free(e->name);
  free(e->source);
}

int tir_extern_register(const char *name, const char *cuda_source, tir_ExternModelFn model, void *ctx, void (*ctx_free)(void *)) {
  if (!tir_extern_name_valid(name))
    return tir_error_set(TIR_ERR_VALUE, "register_extern", "'%s' is not a C function name ([A-Za-z_][A-Za-z0-9_]*, parts joined by ::)",
                         name ? name : "(null)");
  Entry *e = NULL;
  for (int i = 0; i < n_entries; i++)
    if (strcmp(entries[i].name, name) == 0) {
      e = &entries[i];
      entry_free(e);
    }
  if (!e) {
    if (n_entries == cap_entries) {
      int cap = cap_entries ? 2 * cap_entries : 8;
      Entry *ne = realloc(entries, (size_t)cap * sizeof *ne);
      if (!ne) return tir_error_set(TIR_ERR_RUNTIME, "register_extern", "out of memory");
      entries = ne;
      cap_entries = cap;
    }
    e = &entries[n_entries++];
  }
  e->name = strdup(name);
  e->source = cuda_source ? strdup(cuda_source) : NULL;
  e->model = model;
  e->ctx = ctx;
  e->ctx_free = ctx_free;
  return 0;
}

int tir_extern_lookup(const char *name, const char **cuda_source, tir_ExternModelFn *model, void **ctx) {
  for (int i = 0; i < n_entries; i++)
    if (strcmp(entries[i].name, name) == 0) {
      if (cuda_source) *cuda_source = entries[i].source;
      if (model) *model = entries[i].model;
      if (ctx) *ctx = entries[i].ctx;
      return 1;
    }
  return 0;
}

void tir_extern_clear(void) {
  for (int i = 0; i < n_entries; i++) entry_free(&entries[i]);
  free(entries);
  entries = NULL;
  n_entries = cap_entries = 0;
}

const char *tir_extern_call_name(const tir_Node *n) {
  if (!n || n->kind != TIR_Call) return NULL;
  const tir_Call *c = (const tir_Call *)n;
  if (strcmp(c->op, "call_extern") != 0 && strcmp(c->op, "call_pure_extern") != 0) return NULL;
  if (c->args->size < 1 || c->args->items[0]->kind != TIR_StringImm) return NULL;
  return ((const tir_StringImm *)c->args->items[0])->value;
}

int tir_extern_prepare(const tir_Call *c, tir_ExternModelFn *model, void **ctx, char *err, size_t errlen) {
  const char *name = tir_extern_call_name(&c->hdr);
  if (!name) {
    snprintf(err, errlen, "%s takes the function's name (a string) as its first argument", c->op);
    return -1;
  }
  *model = NULL;
  if (!tir_extern_lookup(name, NULL, model, ctx) || !*model) {
    snprintf(err, errlen,
             "%s '%s' is device code that runs on the GPU only: register a CPU model for it to interpret or simulate it "
             "(tir.register_extern_model(\"%s\", function(...) return ... end), or tir_extern_register from C)",
             c->op, name, name);
    return -1;
  }
  int n = c->args->size - 1;
  if (n > TIR_EXTERN_MAX_ARGS) {
    snprintf(err, errlen, "%s '%s' has %d arguments; CPU models take at most %d", c->op, name, n, TIR_EXTERN_MAX_ARGS);
    return -1;
  }
  for (int i = 0; i < n; i++) {
    const tir_Node *x = c->args->items[i + 1];
    tir_DType t = x->dtype;
    if (x->kind == TIR_StringImm || t.lanes != 1 || t.code == TIR_DT_HANDLE || t.code == TIR_DT_VOID) {
      char ts[32];
      snprintf(err, errlen, "argument %d of %s '%s' is %s: CPU models take scalar numbers only", i + 1, c->op, name,
               x->kind == TIR_StringImm ? "a string" : tir_dtype_str(t, ts));
      return -1;
    }
  }
  return n;
}
