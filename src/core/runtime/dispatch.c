/* dispatch.c -- kernel families dispatched by shape (include/tir/dispatch.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tir/dispatch.h"
#include "tir/error.h"
#include "tir/strbuf.h"

typedef struct {
  char *label, *note;
  tir_PrimFunc *func;
  tir_BuiltModule *mod;
  int n_ranges;
  tir_DispatchRange ranges[2 * TIR_DISPATCH_MAX_VARS]; /* given ones, then those the constants imply */
  int fallback;
  long calls;
} Entry;

struct tir_Dispatcher {
  char *name;
  char who[80]; /* "dispatch <name>": the errors' primitive */
  tir_PrimFunc *sig;
  int nvars;
  const tir_Var *vars[TIR_DISPATCH_MAX_VARS];
  int var_param[TIR_DISPATCH_MAX_VARS], var_dim[TIR_DISPATCH_MAX_VARS]; /* dim -1: a scalar parameter */
  Entry *entries;
  int n, cap;
};

static const char *param_name(const tir_Node *p) {
  return p->kind == TIR_Buffer ? ((const tir_Buffer *)p)->name : ((const tir_Var *)p)->name;
}

tir_Dispatcher *tir_dispatcher_new(const char *name, const tir_PrimFunc *sig) {
  tir_Dispatcher *d = calloc(1, sizeof *d);
  d->name = strdup(name && *name ? name : sig->name);
  snprintf(d->who, sizeof d->who, "dispatch %s", d->name);
  d->sig = (tir_PrimFunc *)tir_retain(sig);
  for (int i = 0; i < sig->params->size; i++) {
    const tir_Node *p = sig->params->items[i];
    const tir_Node *cand[TIR_MAX_NDIM + 1];
    int dims[TIR_MAX_NDIM + 1], nc = 0;
    if (p->kind == TIR_Var && tir_dtype_is_int(p->dtype)) {
      cand[nc] = p;
      dims[nc++] = -1;
    } else if (p->kind == TIR_Buffer) {
      const tir_Buffer *b = (const tir_Buffer *)p;
      for (int k = 0; k < b->shape->size && k < TIR_MAX_NDIM; k++)
        if (b->shape->items[k]->kind == TIR_Var) {
          cand[nc] = b->shape->items[k];
          dims[nc++] = k;
        }
    }
    for (int c = 0; c < nc; c++) {
      int seen = 0;
      for (int v = 0; v < d->nvars; v++) seen |= &d->vars[v]->hdr == cand[c];
      if (seen) continue;
      if (d->nvars == TIR_DISPATCH_MAX_VARS) {
        tir_error_set(TIR_ERR_VALUE, d->who, "the signature %s has more than %d symbolic dimensions", sig->name, TIR_DISPATCH_MAX_VARS);
        tir_dispatcher_free(d);
        return NULL;
      }
      d->vars[d->nvars] = (const tir_Var *)tir_retain(cand[c]);
      d->var_param[d->nvars] = i;
      d->var_dim[d->nvars++] = dims[c];
    }
  }
  return d;
}

void tir_dispatcher_free(tir_Dispatcher *d) {
  if (!d) return;
  for (int i = 0; i < d->n; i++) {
    free(d->entries[i].label);
    free(d->entries[i].note);
    tir_release(d->entries[i].func);
  }
  for (int v = 0; v < d->nvars; v++) tir_release(d->vars[v]);
  free(d->entries);
  tir_release(d->sig);
  free(d->name);
  free(d);
}

const char *tir_dispatcher_name(const tir_Dispatcher *d) { return d->name; }
const tir_PrimFunc *tir_dispatcher_signature(const tir_Dispatcher *d) { return d->sig; }
int tir_dispatcher_num_vars(const tir_Dispatcher *d) { return d->nvars; }
const tir_Var *tir_dispatcher_var(const tir_Dispatcher *d, int i) { return i >= 0 && i < d->nvars ? d->vars[i] : NULL; }
int tir_dispatcher_num_entries(const tir_Dispatcher *d) { return d->n; }

static void when_text(const tir_Dispatcher *d, const Entry *e, tir_StrBuf *sb) {
  if (e->fallback) {
    tir_sb_puts(sb, "fallback");
    return;
  }
  /* one condition per variable: the intersection of its ranges */
  int any = 0;
  for (int v = 0; v < d->nvars; v++) {
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    int has = 0;
    for (int r = 0; r < e->n_ranges; r++)
      if (e->ranges[r].var == v) {
        has = 1;
        if (e->ranges[r].lo > lo) lo = e->ranges[r].lo;
        if (e->ranges[r].hi < hi) hi = e->ranges[r].hi;
      }
    if (!has) continue;
    const char *n = d->vars[v]->name;
    if (any) tir_sb_puts(sb, ", ");
    any = 1;
    if (lo == hi) tir_sb_printf(sb, "%s = %lld", n, (long long)lo);
    else if (lo == INT64_MIN) tir_sb_printf(sb, "%s <= %lld", n, (long long)hi);
    else if (hi == INT64_MAX) tir_sb_printf(sb, "%s >= %lld", n, (long long)lo);
    else tir_sb_printf(sb, "%lld <= %s <= %lld", (long long)lo, n, (long long)hi);
  }
  if (!any) tir_sb_puts(sb, "any");
}

char *tir_dispatcher_entry_when(const tir_Dispatcher *d, int i) {
  tir_StrBuf sb;
  tir_sb_init(&sb);
  if (i >= 0 && i < d->n) when_text(d, &d->entries[i], &sb);
  return tir_sb_take(&sb);
}

void tir_dispatcher_entry(const tir_Dispatcher *d, int i, const char **label, const char **note, const tir_PrimFunc **func,
                          tir_BuiltModule **mod, long *calls) {
  const Entry *e = &d->entries[i];
  if (label) *label = e->label;
  if (note) *note = e->note ? e->note : "";
  if (func) *func = e->func;
  if (mod) *mod = e->mod;
  if (calls) *calls = e->calls;
}

static char *dims_text(const tir_Buffer *b) {
  tir_StrBuf sb;
  tir_sb_init(&sb);
  for (int k = 0; k < b->shape->size; k++) {
    char *e = tir_print_expr(b->shape->items[k]);
    tir_sb_printf(&sb, "%s%s", k ? ", " : "", e);
    free(e);
  }
  return tir_sb_take(&sb);
}

/* Does func take the signature's parameters?  Fills the ranges its constant dimensions imply. */
static int match_signature(tir_Dispatcher *d, const tir_PrimFunc *f, const char *label, Entry *e) {
  const tir_PrimFunc *s = d->sig;
  if (f->params->size != s->params->size)
    return tir_error_set(TIR_ERR_VALUE, d->who, "entry %s takes %d parameters, the signature %s takes %d", label, f->params->size,
                         s->name, s->params->size);
  for (int i = 0; i < s->params->size; i++) {
    const tir_Node *p = s->params->items[i], *q = f->params->items[i];
    char t1[32], t2[32];
    if (p->kind != q->kind)
      return tir_error_set(TIR_ERR_VALUE, d->who, "entry %s: parameter %d (%s) is a %s, in the signature a %s", label, i + 1,
                           param_name(q), q->kind == TIR_Buffer ? "buffer" : "scalar", p->kind == TIR_Buffer ? "buffer" : "scalar");
    if (!tir_dtype_eq(p->dtype, q->dtype))
      return tir_error_set(TIR_ERR_VALUE, d->who, "entry %s: parameter %d (%s) is %s, in the signature %s", label, i + 1, param_name(q),
                           tir_dtype_str(q->dtype, t1), tir_dtype_str(p->dtype, t2));
    if (p->kind != TIR_Buffer) continue;
    const tir_Buffer *pb = (const tir_Buffer *)p, *qb = (const tir_Buffer *)q;
    int bad = pb->shape->size != qb->shape->size;
    for (int k = 0; k < pb->shape->size && !bad; k++) {
      int64_t a, b;
      int ca = tir_is_const_int(pb->shape->items[k], &a), cb = tir_is_const_int(qb->shape->items[k], &b);
      if (ca) bad = !cb || a != b; /* a constant of the signature stays that constant */
      else if (pb->shape->items[k]->kind == TIR_Var && qb->shape->items[k]->kind == TIR_Var)
        continue; /* symbolic in both (the entry's own variable is bound from the same dimension) */
      else if (cb && pb->shape->items[k]->kind == TIR_Var) {
        for (int v = 0; v < d->nvars; v++)
          if (&d->vars[v]->hdr == pb->shape->items[k]) e->ranges[e->n_ranges++] = (tir_DispatchRange){v, b, b};
      } else if (!cb && !tir_structural_equal(pb->shape->items[k], qb->shape->items[k]))
        bad = 1;
    }
    if (bad) {
      char *x = dims_text(qb), *y = dims_text(pb);
      tir_error_set(TIR_ERR_VALUE, d->who, "entry %s: parameter %d (%s) has shape (%s), which does not fit the signature's (%s)", label,
                    i + 1, qb->name, x, y);
      free(x);
      free(y);
      return -1;
    }
  }
  return 0;
}

int tir_dispatcher_add(tir_Dispatcher *d, const char *label, const char *note, const tir_PrimFunc *func, tir_BuiltModule *mod,
                       int n_ranges, const tir_DispatchRange *ranges, int fallback) {
  if (!func && mod) func = tir_module_func(mod);
  if (!func) return tir_error_set(TIR_ERR_VALUE, d->who, "an entry needs a function or a built module");
  if (!label || !*label) label = func->name;
  if (mod && tir_module_func(mod)->params->size != func->params->size)
    return tir_error_set(TIR_ERR_VALUE, d->who, "entry %s: the module's function takes %d parameters, the entry's %d", label,
                         tir_module_func(mod)->params->size, func->params->size);
  if (n_ranges < 0 || n_ranges > TIR_DISPATCH_MAX_VARS)
    return tir_error_set(TIR_ERR_VALUE, d->who, "entry %s: at most %d ranges, got %d", label, TIR_DISPATCH_MAX_VARS, n_ranges);
  Entry e;
  memset(&e, 0, sizeof e);
  for (int r = 0; r < n_ranges; r++) {
    if (ranges[r].var < 0 || ranges[r].var >= d->nvars)
      return tir_error_set(TIR_ERR_VALUE, d->who, "entry %s: range %d names variable %d, the signature has %d", label, r + 1,
                           ranges[r].var + 1, d->nvars);
    if (ranges[r].lo > ranges[r].hi)
      return tir_error_set(TIR_ERR_VALUE, d->who, "entry %s: the range %lld <= %s <= %lld is empty", label, (long long)ranges[r].lo,
                           d->vars[ranges[r].var]->name, (long long)ranges[r].hi);
    /* a buffer dimension is at least 1 (tir_specialize refuses 0): a range reaching below is a mistake */
    if (d->var_dim[ranges[r].var] >= 0 && ranges[r].lo < 1)
      return tir_error_set(TIR_ERR_VALUE, d->who, "entry %s: the range %lld <= %s <= %lld starts below 1, but %s is a buffer dimension",
                           label, (long long)ranges[r].lo, d->vars[ranges[r].var]->name, (long long)ranges[r].hi,
                           d->vars[ranges[r].var]->name);
    e.ranges[e.n_ranges++] = ranges[r];
  }
  if (match_signature(d, func, label, &e)) return -1;
  if (fallback) {
    if (e.n_ranges)
      return tir_error_set(TIR_ERR_VALUE, d->who, "the fallback %s must take every value: it has conditions (ranges or specialized dimensions)",
                           label);
    for (int i = 0; i < d->n; i++)
      if (d->entries[i].fallback)
        return tir_error_set(TIR_ERR_VALUE, d->who, "%s: there is a fallback already (%s)", label, d->entries[i].label);
  }
  /* conditions that exclude each other (a range without the entry's constant) */
  for (int v = 0; v < d->nvars; v++) {
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    for (int r = 0; r < e.n_ranges; r++)
      if (e.ranges[r].var == v) {
        if (e.ranges[r].lo > lo) lo = e.ranges[r].lo;
        if (e.ranges[r].hi < hi) hi = e.ranges[r].hi;
      }
    if (lo > hi)
      return tir_error_set(TIR_ERR_VALUE, d->who, "entry %s can never be selected: its conditions on %s exclude each other", label,
                           d->vars[v]->name);
  }
  if (d->n == d->cap) {
    d->cap = d->cap ? 2 * d->cap : 8;
    d->entries = realloc(d->entries, sizeof *d->entries * (size_t)d->cap);
  }
  e.label = strdup(label);
  e.note = note && *note ? strdup(note) : NULL;
  e.func = (tir_PrimFunc *)tir_retain(func);
  e.mod = mod;
  e.fallback = fallback != 0;
  d->entries[d->n] = e;
  return d->n++;
}

static int fits(const Entry *e, const int64_t *val) {
  for (int r = 0; r < e->n_ranges; r++) {
    int64_t x = val[e->ranges[r].var];
    if (x < e->ranges[r].lo || x > e->ranges[r].hi) return 0;
  }
  return 1;
}

static int no_entry(tir_Dispatcher *d, const int64_t *val) {
  tir_StrBuf sb;
  tir_sb_init(&sb);
  for (int v = 0; v < d->nvars; v++) tir_sb_printf(&sb, "%s%s = %lld", v ? ", " : "", d->vars[v]->name, (long long)val[v]);
  tir_sb_puts(&sb, ": the kernels take ");
  for (int i = 0; i < d->n; i++) {
    tir_sb_puts(&sb, i ? "; " : "");
    when_text(d, &d->entries[i], &sb);
    tir_sb_printf(&sb, " (%s)", d->entries[i].label);
  }
  if (!d->n) tir_sb_puts(&sb, "nothing (the dispatcher has no entries)");
  tir_error_set(TIR_ERR_RUNTIME, d->who, "no kernel for %s, and there is no fallback", sb.data);
  tir_sb_free(&sb);
  return -1;
}

int tir_dispatcher_select(tir_Dispatcher *d, const tir_InterpArg *args, int nargs, int64_t *values) {
  const tir_PrimFunc *s = d->sig;
  if (nargs != s->params->size) {
    tir_StrBuf sb;
    tir_sb_init(&sb);
    for (int i = 0; i < s->params->size; i++) tir_sb_printf(&sb, "%s%s", i ? ", " : "", param_name(s->params->items[i]));
    tir_error_set(TIR_ERR_RUNTIME, d->who, "takes %d argument(s) (%s), got %d", s->params->size, sb.data, nargs);
    tir_sb_free(&sb);
    return -1;
  }
  int64_t val[TIR_DISPATCH_MAX_VARS];
  for (int v = 0; v < d->nvars; v++) {
    int p = d->var_param[v], k = d->var_dim[v];
    if (k < 0) {
      val[v] = args[p].ival;
      continue;
    }
    const tir_NDArray *a = args[p].array;
    const tir_Buffer *b = (const tir_Buffer *)s->params->items[p];
    if (!a) return tir_error_set(TIR_ERR_RUNTIME, d->who, "argument %d (%s) must be an array", p + 1, b->name);
    if (a->ndim != b->shape->size) {
      char *t = dims_text(b);
      tir_error_set(TIR_ERR_RUNTIME, d->who, "argument %d (%s): expected %d dimensions (%s), got %d", p + 1, b->name, b->shape->size, t,
                    a->ndim);
      free(t);
      return -1;
    }
    val[v] = a->shape[k];
  }
  if (values) memcpy(values, val, sizeof(int64_t) * (size_t)d->nvars);
  int fb = -1;
  for (int i = 0; i < d->n; i++) {
    if (d->entries[i].fallback) {
      fb = i;
      continue;
    }
    if (fits(&d->entries[i], val)) {
      d->entries[i].calls++;
      return i;
    }
  }
  if (fb >= 0) {
    d->entries[fb].calls++;
    return fb;
  }
  return no_entry(d, val);
}

/* The entry's own errors name its function; say which dispatcher chose it. */
static int entry_failed(tir_Dispatcher *d, int i) {
  tir_Error *e = tir_error_get();
  char prim[160];
  snprintf(prim, sizeof prim, "%.70s -> %.70s", d->who, d->entries[i].label);
  if (e->kind == TIR_ERR_RUNTIME && strncmp(e->primitive, d->who, strlen(d->who)) != 0) tir_error_set_primitive(prim);
  return -1;
}

int tir_dispatcher_check(tir_Dispatcher *d, const tir_InterpArg *args, int nargs, int require_dev) {
  int i = tir_dispatcher_select(d, args, nargs, NULL);
  if (i < 0) return -1;
  if (tir_check_args(d->entries[i].func, args, nargs, require_dev, d->entries[i].label) != 0) return entry_failed(d, i);
  return i;
}

static int need_module(tir_Dispatcher *d, int i) {
  if (d->entries[i].mod) return 0;
  return tir_error_set(TIR_ERR_RUNTIME, d->who, "entry %s was not built for the GPU (interpret or simulate it instead)", d->entries[i].label);
}

int tir_dispatcher_run(tir_Dispatcher *d, const tir_InterpArg *args, int nargs) {
  int i = tir_dispatcher_select(d, args, nargs, NULL);
  if (i < 0 || need_module(d, i)) return -1;
  if (tir_module_run(d->entries[i].mod, args, nargs) != 0) return entry_failed(d, i);
  return i;
}

int tir_dispatcher_launch(tir_Dispatcher *d, const tir_InterpArg *args, int nargs) {
  int i = tir_dispatcher_select(d, args, nargs, NULL);
  if (i < 0 || need_module(d, i)) return -1;
  if (tir_module_launch(d->entries[i].mod, args, nargs) != 0) return entry_failed(d, i);
  return i;
}

char *tir_dispatcher_describe(const tir_Dispatcher *d) {
  tir_StrBuf sb;
  tir_sb_init(&sb);
  tir_sb_printf(&sb, "tir.Dispatcher %s(", d->name);
  for (int i = 0; i < d->sig->params->size; i++) {
    const tir_Node *p = d->sig->params->items[i];
    char t[32];
    if (p->kind == TIR_Buffer) {
      char *x = dims_text((const tir_Buffer *)p);
      tir_sb_printf(&sb, "%s%s: %s[%s]", i ? ", " : "", param_name(p), tir_dtype_str(p->dtype, t), x);
      free(x);
    } else {
      tir_sb_printf(&sb, "%s%s: %s", i ? ", " : "", param_name(p), tir_dtype_str(p->dtype, t));
    }
  }
  tir_sb_printf(&sb, "): %d kernel(s) chosen by ", d->n);
  for (int v = 0; v < d->nvars; v++) tir_sb_printf(&sb, "%s%s", v ? ", " : "", d->vars[v]->name);
  if (!d->nvars) tir_sb_puts(&sb, "nothing (no symbolic dimensions)");
  tir_sb_puts(&sb, "\n");
  /* columns sized to their widest cell */
  const char *head[6] = {"#", "when", "kernel", "schedule", "built", "calls"};
  int n = d->n;
  char **cells = calloc((size_t)(n + 1) * 6, sizeof *cells);
  for (int c = 0; c < 6; c++) cells[c] = strdup(head[c]);
  for (int i = 0; i < n; i++) {
    const Entry *e = &d->entries[i];
    char buf[64];
    tir_StrBuf w;
    tir_sb_init(&w);
    when_text(d, e, &w);
    snprintf(buf, sizeof buf, "%d", i + 1);
    cells[(i + 1) * 6 + 0] = strdup(buf);
    cells[(i + 1) * 6 + 1] = tir_sb_take(&w);
    cells[(i + 1) * 6 + 2] = strdup(e->label);
    cells[(i + 1) * 6 + 3] = strdup(e->note ? e->note : "-");
    if (!e->mod) snprintf(buf, sizeof buf, "no (interpret)");
    else snprintf(buf, sizeof buf, "%s%s", tir_module_arch(e->mod), tir_module_source(e->mod, "ptx") ? "" : " (CUDA C only)");
    cells[(i + 1) * 6 + 4] = strdup(buf);
    snprintf(buf, sizeof buf, "%ld", e->calls);
    cells[(i + 1) * 6 + 5] = strdup(buf);
  }
  int width[6] = {0};
  for (int r = 0; r <= n; r++)
    for (int c = 0; c < 6; c++) {
      int l = (int)strlen(cells[r * 6 + c]);
      if (l > width[c]) width[c] = l;
    }
  for (int r = 0; r <= n; r++) {
    tir_sb_puts(&sb, "  ");
    for (int c = 0; c < 6; c++) tir_sb_printf(&sb, c == 5 ? "%*s" : "%-*s  ", width[c], cells[r * 6 + c]);
    tir_sb_puts(&sb, "\n");
  }
  for (int i = 0; i < (n + 1) * 6; i++) free(cells[i]);
  free(cells);
  tir_sb_puts(&sb, "  (the first entry whose condition holds is taken, the fallback last)");
  return tir_sb_take(&sb);
}
