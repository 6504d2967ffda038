/* tensor_intrin.c -- the registry of tensor intrinsics (TVM tir/function.cc, TensorIntrin).
 *
 * An intrinsic is a pair of PrimFuncs over the same buffer parameters: `desc` states the
 * semantics (loops and one block, e.g. a 16x16x16 multiply-accumulate), `impl` how it runs
 * (builtin calls the codegen knows).  tensorize matches a loop nest against desc and
 * replaces it with impl; the interpreter runs desc in its place.  The registry is global
 * and lives until tir_tensor_intrin_clear (called when the Lua module is collected). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tir/error.h"
#include "tir/schedule.h"

typedef struct {
  char *name;
  tir_PrimFunc *desc, *impl;
  tir_PrimFunc *desc_exec; /* desc with symbolic strides on every parameter (for the interpreter) */
} Entry;

/* desc whose parameters take the strides of whatever region they view: the interpreter binds
 * a view's symbolic strides to its source's, so desc runs on a tile of a larger buffer. */
static tir_PrimFunc *make_exec(const tir_PrimFunc *desc) {
  int n = desc->params->size;
  tir_Buffer **from = calloc((size_t)n + 1, sizeof *from), **to = calloc((size_t)n + 1, sizeof *to);
  tir_Array *params = tir_array_new(n);
  for (int i = 0; i < n; i++) {
    const tir_Buffer *b = (const tir_Buffer *)desc->params->items[i];
    tir_Array *strides = tir_array_new(b->shape->size);
    for (int d = 0; d < b->shape->size; d++) {
      char nm[64];
      snprintf(nm, sizeof nm, "%s_s%d", b->name, d);
      strides->items[d] = &tir_var_new(nm, TIR_INT32)->hdr;
    }
    from[i] = (tir_Buffer *)b;
    to[i] = tir_buffer_new(b->name, b->hdr.dtype, (tir_Array *)tir_retain(b->shape), strides, NULL, b->scope);
    params->items[i] = tir_retain(to[i]);
  }
  tir_Node *body = tir_substitute_buffers(desc->body, n, from, to);
  tir_PrimFunc *f = tir_prim_func(desc->name, params, body, (tir_Array *)tir_retain(desc->attrs));
  for (int i = 0; i < n; i++) tir_release(to[i]);
  free(from);
  free(to);
  return f;
}

static Entry *entries;
static int n_entries, cap_entries;

static int check_pair(const char *name, const tir_PrimFunc *desc, const tir_PrimFunc *impl) {
  const char *P = "TensorIntrin.register";
  if (desc->params->size != impl->params->size)
    return tir_error_set(TIR_ERR_VALUE, P, "intrinsic '%s': desc has %d parameters, impl %d", name, desc->params->size,
                         impl->params->size);
  for (int i = 0; i < desc->params->size; i++) {
    const tir_Node *d = desc->params->items[i], *m = impl->params->items[i];
    if (d->kind != TIR_Buffer || m->kind != TIR_Buffer)
      return tir_error_set(TIR_ERR_VALUE, P, "intrinsic '%s': parameter %d must be a buffer in desc and impl", name, i + 1);
    const tir_Buffer *bd = (const tir_Buffer *)d, *bm = (const tir_Buffer *)m;
    if (!tir_dtype_eq(bd->hdr.dtype, bm->hdr.dtype))
      return tir_error_set(TIR_ERR_VALUE, P, "intrinsic '%s': parameter %d (%s) has different dtypes in desc and impl", name,
                           i + 1, bd->name);
    if (strcmp(bd->scope, bm->scope) != 0)
      return tir_error_set(TIR_ERR_VALUE, P, "intrinsic '%s': parameter %d (%s) has scope '%s' in desc but '%s' in impl", name,
                           i + 1, bd->name, bd->scope, bm->scope);
    if (bd->shape->size != bm->shape->size)
      return tir_error_set(TIR_ERR_VALUE, P, "intrinsic '%s': parameter %d (%s) has different ranks in desc and impl", name,
                           i + 1, bd->name);
    for (int k = 0; k < bd->shape->size; k++) {
      int64_t a, b;
      if (!tir_is_const_int(bd->shape->items[k], &a) || !tir_is_const_int(bm->shape->items[k], &b) || a != b)
        return tir_error_set(TIR_ERR_VALUE, P, "intrinsic '%s': parameter %d (%s) needs the same constant shape in desc and impl",
                             name, i + 1, bd->name);
    }
  }
  return 0;
}

int tir_tensor_intrin_register(const char *name, const tir_PrimFunc *desc, const tir_PrimFunc *impl, int override) {
  if (!name || !*name) return tir_error_set(TIR_ERR_VALUE, "TensorIntrin.register", "the name must be a non-empty string");
  if (check_pair(name, desc, impl)) return -1;
  for (int i = 0; i < n_entries; i++)
    if (strcmp(entries[i].name, name) == 0) {
      if (!override)
        return tir_error_set(TIR_ERR_VALUE, "TensorIntrin.register",
                             "an intrinsic named '%s' is already registered (pass override = true to replace it)", name);
      tir_release(entries[i].desc);
      tir_release(entries[i].impl);
      tir_release(entries[i].desc_exec);
      entries[i].desc_exec = make_exec(desc);
      entries[i].desc = (tir_PrimFunc *)tir_retain(desc);
      entries[i].impl = (tir_PrimFunc *)tir_retain(impl);
      return 0;
    }
  if (n_entries == cap_entries) {
    cap_entries = cap_entries ? cap_entries * 2 : 16;
    entries = realloc(entries, (size_t)cap_entries * sizeof *entries);
  }
  entries[n_entries].name = strdup(name);
  entries[n_entries].desc = (tir_PrimFunc *)tir_retain(desc);
  entries[n_entries].impl = (tir_PrimFunc *)tir_retain(impl);
  entries[n_entries].desc_exec = make_exec(desc);
  n_entries++;
  return 0;
}

int tir_tensor_intrin_get(const char *name, const tir_PrimFunc **desc, const tir_PrimFunc **impl) {
  for (int i = 0; i < n_entries; i++)
    if (strcmp(entries[i].name, name) == 0) {
      if (desc) *desc = entries[i].desc;
      if (impl) *impl = entries[i].impl;
      return 1;
    }
  return 0;
}

const tir_PrimFunc *tir_tensor_intrin_desc_exec(const char *name) {
  for (int i = 0; i < n_entries; i++)
    if (strcmp(entries[i].name, name) == 0) return entries[i].desc_exec;
  return NULL;
}

int tir_tensor_intrin_count(void) { return n_entries; }
const char *tir_tensor_intrin_name(int i) { return i >= 0 && i < n_entries ? entries[i].name : NULL; }

void tir_tensor_intrin_clear(void) {
  for (int i = 0; i < n_entries; i++) {
    free(entries[i].name);
    tir_release(entries[i].desc);
    tir_release(entries[i].impl);
    tir_release(entries[i].desc_exec);
  }
  free(entries);
  entries = NULL;
  n_entries = cap_entries = 0;
}
