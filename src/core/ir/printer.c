/* printer.c -- TIR as Lua script (the "T script"), readable by a TVMScript user and
 * loadable by lib/tir/script.lua.  One printer serves __tostring, error reports (with
 * underlined nodes), goldens, pass dumps and traces.  Names are made unique and valid
 * Lua identifiers; no addresses are printed, so output is deterministic.
 *
 * Shape of the output (cf. TVMScript, python/tvm/script/parser/tir):
 *   T.prim_func("main", {A = T.Buffer({128, 128}, "float32"), ...}, function(A, ...)
 *     for i, j, k in T.grid(128, 128, 128) do
 *       T.block("C", function()
 *         local vi, vj, vk = T.axis.remap("SSR", {i, j, k})
 *         T.reads(A[{vi, vk}], B[{vk, vj}])
 *         T.writes(C[{vi, vj}])
 *         T.init(function()
 *           C[{vi, vj}] = T.float32(0)
 *         end)
 *         C[{vi, vj}] = C[{vi, vj}] + A[{vi, vk}] * B[{vk, vj}]
 *       end)
 *     end
 *   end)
 * Lua turns ==, < into booleans, so comparisons print as T.lt(a, b) etc.; floordiv and
 * floormod print as // and %, which the Lua bindings map back to them.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tir/extern.h"
#include "tir/ir.h"
#include "tir/strbuf.h"
#include "tir/swizzle.h"

typedef struct {
  const tir_Node *node;
  char *name;
} NameEntry;

typedef struct {
  int start, end;
  const char *label;
} PendingMark;

typedef struct {
  tir_StrBuf out;
  size_t line_start; /* offset of the current line in out */
  NameEntry *names;
  int n_names, cap_names;
  const tir_Mark *marks;
  int n_marks;
  PendingMark pending[8];
  int n_pending;
  /* loop stack: for T.axis.remap detection */
  const tir_For *loops[256];
  int n_loops;
  int indent;
  /* buffers that own their data var (parameters, allocations): decl_buffer prints data = X.data */
  const tir_Buffer **owners;
  int n_owners, cap_owners;
} Printer;

static const char *lua_keywords[] = {"and", "break", "do", "else", "elseif", "end", "false", "for",
                                     "function", "goto", "if", "in", "local", "nil", "not", "or",
                                     "repeat", "return", "then", "true", "until", "while", "T", "te",
                                     "tir", NULL};

static const char *find_name(Printer *p, const tir_Node *n) {
  for (int i = 0; i < p->n_names; i++)
    if (p->names[i].node == n) return p->names[i].name;
  return NULL;
}

static int name_taken(Printer *p, const char *s) {
  for (int i = 0; i < p->n_names; i++)
    if (strcmp(p->names[i].name, s) == 0) return 1;
  for (int i = 0; lua_keywords[i]; i++)
    if (strcmp(lua_keywords[i], s) == 0) return 1;
  return 0;
}

/* Assigns (or returns) the printed name of a var/buffer. */
static const char *name_of(Printer *p, const tir_Node *n, const char *hint) {
  const char *have = find_name(p, n);
  if (have) return have;
  char base[128];
  size_t k = 0;
  for (const char *s = hint && *hint ? hint : "v"; *s && k < sizeof base - 8; s++)
    base[k++] = (isalnum((unsigned char)*s) || *s == '_') ? *s : '_';
  base[k] = 0;
  if (isdigit((unsigned char)base[0])) {
    memmove(base + 1, base, k + 1);
    base[0] = '_';
  }
  char cand[160];
  snprintf(cand, sizeof cand, "%s", base);
  for (int i = 1; name_taken(p, cand); i++) snprintf(cand, sizeof cand, "%s_%d", base, i);
  if (p->n_names == p->cap_names) {
    p->cap_names = p->cap_names ? p->cap_names * 2 : 64;
    p->names = realloc(p->names, sizeof(NameEntry) * (size_t)p->cap_names);
  }
  p->names[p->n_names].node = n;
  p->names[p->n_names].name = tir_strdup(cand);
  p->n_names++;
  return p->names[p->n_names - 1].name;
}

static const char *var_name(Printer *p, const tir_Var *v) { return name_of(p, &v->hdr, v->name); }
static const char *buf_name(Printer *p, const tir_Buffer *b) { return name_of(p, &b->hdr, b->name); }

static const tir_Mark *find_mark(Printer *p, const tir_Node *n) {
  for (int i = 0; i < p->n_marks; i++)
    if (p->marks[i].node == n) return &p->marks[i];
  return NULL;
}

/* A Lua string literal of s: user-given names and keys must not be able to end the literal
 * (printing and loading a function must never run code that was not in it). */
static void put_q(Printer *p, const char *s) {
  tir_sb_putc(&p->out, '"');
  for (; s && *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') {
      tir_sb_putc(&p->out, '\\');
      tir_sb_putc(&p->out, (char)ch);
    } else if (ch == '\n') {
      tir_sb_puts(&p->out, "\\n");
    } else if (ch < 32 || ch == 127) {
      tir_sb_printf(&p->out, "\\%03u", ch);
    } else {
      tir_sb_putc(&p->out, (char)ch);
    }
  }
  tir_sb_putc(&p->out, '"');
}

static int col(Printer *p) { return (int)(p->out.len - p->line_start); }

static void newline(Printer *p) {
  tir_sb_putc(&p->out, '\n');
  p->line_start = p->out.len;
  for (int i = 0; i < p->n_pending; i++) {
    PendingMark *m = &p->pending[i];
    int start = m->start < 2 ? 2 : m->start;
    tir_sb_puts(&p->out, "--");
    tir_sb_indent(&p->out, start - 2);
    int w = m->end - m->start;
    if (w < 1) w = 1;
    for (int j = 0; j < w; j++) tir_sb_putc(&p->out, '^');
    if (m->label) tir_sb_printf(&p->out, " %s", m->label);
    tir_sb_putc(&p->out, '\n');
    p->line_start = p->out.len;
  }
  p->n_pending = 0;
}

static void add_pending(Printer *p, int start, int end, const char *label) {
  if (p->n_pending < 8) {
    p->pending[p->n_pending].start = start;
    p->pending[p->n_pending].end = end;
    p->pending[p->n_pending].label = label;
    p->n_pending++;
  }
}

static void put(Printer *p, const char *s) { tir_sb_puts(&p->out, s); }
static void putf(Printer *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(Printer *p, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tir_sb_vprintf(&p->out, fmt, ap);
  va_end(ap);
}
static void begin_line(Printer *p) { tir_sb_indent(&p->out, p->indent); }

/* ---- expressions ---- */
/* Lua 5.4 precedence: | < ~ < & < << >> < + - < * / // % < unary */
enum { PREC_ATOM = 100, PREC_UNARY = 30, PREC_MUL = 20, PREC_ADD = 10, PREC_SHIFT = 7, PREC_BAND = 6, PREC_BXOR = 5,
       PREC_BOR = 4, PREC_LOW = 0 };

/* True when the call prints as T.<op>(args) and T builds it back as it is: if_then_else of
 * two sides of the call's dtype; math builtins whose arguments have the call's float dtype
 * (isnan & co: a float argument and bool), abs of a signed integer. */
static int shorthand_call(const tir_Call *c) {
  tir_DType t = c->hdr.dtype;
  int n = c->args->size;
  if (t.lanes != 1) return 0;
  if (strcmp(c->op, "if_then_else") == 0)
    return n == 3 && tir_dtype_eq(c->args->items[0]->dtype, TIR_BOOL) && tir_dtype_eq(c->args->items[1]->dtype, t) &&
           tir_dtype_eq(c->args->items[2]->dtype, t);
  const tir_MathBuiltin *m = tir_math_builtin(c->op);
  if (!m || m->arity != n || m->kind == TIR_MATH_BITS) return 0;
  tir_DType want = t;
  if (m->kind == TIR_MATH_PRED) {
    if (t.code != TIR_DT_BOOL) return 0;
    want = c->args->items[0]->dtype;
  }
  if (m->kind == TIR_MATH_ABS ? t.code != TIR_DT_INT : !tir_dtype_is_float(want)) return 0;
  for (int i = 0; i < n; i++)
    if (!tir_dtype_eq(c->args->items[i]->dtype, want)) return 0;
  return 1;
}

static void print_expr(Printer *p, const tir_Node *e, int ctx_prec);

static void print_float(Printer *p, double v, tir_DType t) {
  if (isnan(v)) put(p, "0/0");
  else if (isinf(v)) put(p, v > 0 ? "math.huge" : "-math.huge");
  else {
    char buf[64];
    snprintf(buf, sizeof buf, t.bits == 64 ? "%.17g" : "%.9g", v);
    if (!strpbrk(buf, ".eE")) strcat(buf, ".0");
    put(p, buf);
  }
}

static void print_args(Printer *p, const tir_Array *a) {
  for (int i = 0; i < a->size; i++) {
    if (i) put(p, ", ");
    print_expr(p, a->items[i], PREC_LOW);
  }
}

static void print_indices(Printer *p, const tir_Array *idx) {
  put(p, "{");
  print_args(p, idx);
  put(p, "}");
}

static void print_region(Printer *p, const tir_BufferRegion *r) {
  put(p, buf_name(p, r->buffer));
  put(p, "[{");
  for (int i = 0; i < r->region->size; i++) {
    const tir_Range *rg = (const tir_Range *)r->region->items[i];
    if (i) put(p, ", ");
    if (tir_is_one(rg->extent)) {
      print_expr(p, rg->min, PREC_LOW);
    } else {
      put(p, "{");
      print_expr(p, rg->min, PREC_LOW);
      put(p, ", ");
      tir_Node *stop = tir_add(R(rg->min), R(rg->extent));
      print_expr(p, stop, PREC_LOW);
      tir_release(stop);
      put(p, "}");
    }
  }
  put(p, "}]");
}

static const char *binop_text(int kind, tir_DType t, int *prec) {
  switch (kind) {
    case TIR_Add: *prec = PREC_ADD; return " + ";
    case TIR_Sub: *prec = PREC_ADD; return " - ";
    case TIR_Mul: *prec = PREC_MUL; return " * ";
    case TIR_FloorDiv: *prec = PREC_MUL; return " // ";
    case TIR_FloorMod: *prec = PREC_MUL; return " % ";
    case TIR_Div:
      if (tir_dtype_is_float(t)) {
        *prec = PREC_MUL;
        return " / ";
      }
      return NULL;
    default: return NULL;
  }
}

static const char *call_name(int kind) {
  switch (kind) {
    case TIR_Div: return "T.truncdiv";
    case TIR_Mod: return "T.truncmod";
    case TIR_Min: return "T.min";
    case TIR_Max: return "T.max";
    case TIR_EQ: return "T.eq";
    case TIR_NE: return "T.ne";
    case TIR_LT: return "T.lt";
    case TIR_LE: return "T.le";
    case TIR_GT: return "T.gt";
    case TIR_GE: return "T.ge";
    case TIR_And: return "T.And";
    case TIR_Or: return "T.Or";
    default: return "?";
  }
}

static void print_expr_inner(Printer *p, const tir_Node *e, int ctx_prec) {
  char dt[32];
  if (!e) {
    put(p, "nil");
    return;
  }
  switch (e->kind) {
    case TIR_IntImm: {
      int64_t v = ((const tir_IntImm *)e)->value;
      if (e->dtype.code == TIR_DT_BOOL) putf(p, "T.bool(%s)", v ? "true" : "false");
      else if (tir_dtype_eq(e->dtype, TIR_INT32)) {
        if (v < 0 && ctx_prec > PREC_LOW) putf(p, "(%lld)", (long long)v);
        else putf(p, "%lld", (long long)v);
      } else if (e->dtype.code == TIR_DT_UINT && v < 0) {
        /* uint64 above INT64_MAX: Lua integers stop there; the cast folds back to this constant */
        putf(p, "T.cast(\"%s\", T.int64(%lld))", tir_dtype_str(e->dtype, dt), (long long)v);
      } else putf(p, "T.%s(%lld)", tir_dtype_str(e->dtype, dt), (long long)v);
      return;
    }
    case TIR_FloatImm:
      putf(p, "T.%s(", tir_dtype_str(e->dtype, dt));
      print_float(p, ((const tir_FloatImm *)e)->value, e->dtype);
      put(p, ")");
      return;
    case TIR_StringImm: put_q(p, ((const tir_StringImm *)e)->value); return;
    case TIR_Var: put(p, var_name(p, (const tir_Var *)e)); return;
    case TIR_Add: case TIR_Sub: case TIR_Mul: case TIR_Div: case TIR_FloorDiv: case TIR_FloorMod: {
      const tir_Add *b = (const tir_Add *)e;
      int prec;
      const char *op = binop_text(e->kind, e->dtype, &prec);
      if (op) {
        int paren = prec < ctx_prec;
        if (paren) put(p, "(");
        print_expr(p, b->a, prec);
        put(p, op);
        print_expr(p, b->b, prec + 1);
        if (paren) put(p, ")");
        return;
      }
    }
      /* printed as a call */
      __attribute__((fallthrough));
    case TIR_Mod: case TIR_Min: case TIR_Max: case TIR_EQ: case TIR_NE: case TIR_LT: case TIR_LE:
    case TIR_GT: case TIR_GE: case TIR_And: case TIR_Or: {
      const tir_Add *b = (const tir_Add *)e;
      putf(p, "%s(", call_name(e->kind));
      print_expr(p, b->a, PREC_LOW);
      put(p, ", ");
      print_expr(p, b->b, PREC_LOW);
      put(p, ")");
      return;
    }
    case TIR_Not:
      put(p, "T.Not(");
      print_expr(p, ((const tir_Not *)e)->a, PREC_LOW);
      put(p, ")");
      return;
    case TIR_Cast:
      putf(p, "T.cast(\"%s\", ", tir_dtype_str(e->dtype, dt));
      print_expr(p, ((const tir_Cast *)e)->value, PREC_LOW);
      put(p, ")");
      return;
    case TIR_Select: {
      const tir_Select *s = (const tir_Select *)e;
      put(p, "T.Select(");
      print_expr(p, s->cond, PREC_LOW);
      put(p, ", ");
      print_expr(p, s->true_value, PREC_LOW);
      put(p, ", ");
      print_expr(p, s->false_value, PREC_LOW);
      put(p, ")");
      return;
    }
    case TIR_BufferLoad: {
      const tir_BufferLoad *l = (const tir_BufferLoad *)e;
      put(p, buf_name(p, l->buffer));
      put(p, "[");
      print_indices(p, l->indices);
      put(p, "]");
      return;
    }
    case TIR_Call: {
      const tir_Call *c = (const tir_Call *)e;
      /* bitwise builtins print as Lua operators, which build them back (same dtype) */
      static const struct {
        const char *op, *sym;
        int prec;
      } bits[] = {{"bitwise_xor", " ~ ", PREC_BXOR}, {"bitwise_and", " & ", PREC_BAND}, {"bitwise_or", " | ", PREC_BOR},
                  {"shift_left", " << ", PREC_SHIFT}, {"shift_right", " >> ", PREC_SHIFT}};
      for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++)
        if (strcmp(c->op, bits[i].op) == 0 && c->args->size == 2 && e->dtype.lanes == 1 &&
            tir_dtype_eq(c->args->items[0]->dtype, e->dtype) && tir_dtype_eq(c->args->items[1]->dtype, e->dtype) &&
            (c->args->items[0]->kind != TIR_IntImm || c->args->items[1]->kind != TIR_IntImm)) {
          int paren = bits[i].prec < ctx_prec;
          if (paren) put(p, "(");
          print_expr(p, c->args->items[0], bits[i].prec);
          put(p, bits[i].sym);
          print_expr(p, c->args->items[1], bits[i].prec + 1);
          if (paren) put(p, ")");
          return;
        }
      if (shorthand_call(c)) {
        /* T.if_then_else(c, a, b), T.exp(x), ...: what T builds back (lib/tir/math.lua) */
        putf(p, "T.%s(", c->op);
        for (int i = 0; i < c->args->size; i++) {
          if (i) put(p, ", ");
          print_expr(p, c->args->items[i], PREC_LOW);
        }
        put(p, ")");
        return;
      }
      /* extern calls print as TVMScript writes them: T.call_extern(dtype, name, args...) */
      int ext = tir_extern_call_name(e) != NULL;
      if (ext) {
        putf(p, "T.%s(\"%s\"", c->op, tir_dtype_str(e->dtype, dt));
      } else {
        putf(p, "T.call(\"%s\", ", tir_dtype_str(e->dtype, dt));
        put_q(p, c->op);
      }
      for (int i = 0; i < c->args->size; i++) {
        put(p, ", ");
        print_expr(p, c->args->items[i], PREC_LOW);
      }
      put(p, ")");
      return;
    }
    case TIR_Ramp: {
      const tir_Ramp *r = (const tir_Ramp *)e;
      put(p, "T.Ramp(");
      print_expr(p, r->base, PREC_LOW);
      put(p, ", ");
      print_expr(p, r->stride, PREC_LOW);
      putf(p, ", %lld)", (long long)r->lanes);
      return;
    }
    case TIR_Broadcast: {
      const tir_Broadcast *b = (const tir_Broadcast *)e;
      put(p, "T.Broadcast(");
      print_expr(p, b->value, PREC_LOW);
      putf(p, ", %lld)", (long long)b->lanes);
      return;
    }
    case TIR_Let: {
      const tir_Let *l = (const tir_Let *)e;
      const char *nm = var_name(p, l->var);
      putf(p, "T.Let(\"%s\", ", nm);
      print_expr(p, l->value, PREC_LOW);
      putf(p, ", function(%s) return ", nm);
      print_expr(p, l->body, PREC_LOW);
      put(p, " end)");
      return;
    }
    case TIR_Reduce: {
      const tir_Reduce *r = (const tir_Reduce *)e;
      put(p, "T.reduce(");
      put_q(p, r->combiner);
      put(p, ", ");
      print_expr(p, r->source, PREC_LOW);
      put(p, ", {");
      for (int i = 0; i < r->axis->size; i++) {
        if (i) put(p, ", ");
        put(p, var_name(p, ((const tir_IterVar *)r->axis->items[i])->var));
      }
      put(p, "})");
      return;
    }
    default: putf(p, "<%s>", tir_kind_name(e->kind)); return;
  }
}

static void print_expr(Printer *p, const tir_Node *e, int ctx_prec) {
  const tir_Mark *m = e ? find_mark(p, e) : NULL;
  int start = col(p);
  print_expr_inner(p, e, ctx_prec);
  if (m) add_pending(p, start, col(p), m->label);
}

/* ---- buffers ---- */
static void print_shape(Printer *p, const tir_Array *shape) {
  put(p, "{");
  print_args(p, shape);
  put(p, "}");
}

/* Options table of a buffer: only fields that differ from the defaults. */
static void print_buffer_opts(Printer *p, const tir_Buffer *b, int with_scope, const char *data_name) {
  int any = 0;
#define SEP() (put(p, any++ ? ", " : ", {"))
  if (data_name) {
    SEP();
    putf(p, "data = %s", data_name);
  }
  if (b->strides->size) {
    SEP();
    put(p, "strides = ");
    print_shape(p, b->strides);
  }
  if (!tir_is_zero(b->elem_offset)) {
    SEP();
    put(p, "elem_offset = ");
    print_expr(p, b->elem_offset, PREC_LOW);
  }
  if (with_scope && strcmp(b->scope, "global") != 0) {
    SEP();
    put(p, "scope = ");
    put_q(p, b->scope);
  }
  if (b->align != 64) {
    SEP();
    putf(p, "align = %lld", (long long)b->align);
  }
  if (b->offset_factor != 1) {
    SEP();
    putf(p, "offset_factor = %lld", (long long)b->offset_factor);
  }
  if (b->swizzle) {
    char sw[24];
    SEP();
    tir_swizzle_str(b->swizzle, sw);
    if (sw[0] == '{') putf(p, "swizzle = %s", sw);
    else putf(p, "swizzle = \"%s\"", sw);
  }
#undef SEP
  if (any) put(p, "}");
}

/* T.allocate's scope argument: the scope, or {scope = ..., swizzle = ...} for a swizzled buffer */
static void print_alloc_scope(Printer *p, const tir_Buffer *b) {
  if (!b->swizzle) {
    put_q(p, b->scope);
    return;
  }
  char sw[24];
  tir_swizzle_str(b->swizzle, sw);
  put(p, "{scope = ");
  put_q(p, b->scope);
  if (sw[0] == '{') putf(p, ", swizzle = %s}", sw);
  else putf(p, ", swizzle = \"%s\"}", sw);
}

static void print_buffer_decl(Printer *p, const tir_Buffer *b, const char *data_name) {
  char dt[32];
  put(p, "T.Buffer(");
  print_shape(p, b->shape);
  putf(p, ", \"%s\"", tir_dtype_str(b->hdr.dtype, dt));
  print_buffer_opts(p, b, 1, data_name);
  put(p, ")");
}

/* ---- statements ---- */
static void print_stmt_t(Printer *p, const tir_Node *s, int tail);
static void print_stmt(Printer *p, const tir_Node *s) { print_stmt_t(p, s, 1); }

static void print_body(Printer *p, const tir_Node *s) {
  p->indent += 2;
  print_stmt(p, s);
  p->indent -= 2;
}

static void mark_header(Printer *p, const tir_Node *s, int start) {
  const tir_Mark *m = find_mark(p, s);
  if (m) add_pending(p, start, col(p), m->label);
}

static const char *for_kind_fn(int kind) {
  switch (kind) {
    case TIR_FOR_PARALLEL: return "T.parallel";
    case TIR_FOR_VECTORIZED: return "T.vectorized";
    case TIR_FOR_UNROLLED: return "T.unroll";
    case TIR_FOR_THREAD_BINDING: return "T.thread_binding";
    default: return "T.serial";
  }
}

static void print_ann_value(Printer *p, const tir_Node *v) {
  if (v && v->kind == TIR_Array) {
    const tir_Array *a = (const tir_Array *)v;
    put(p, "{");
    for (int i = 0; i < a->size; i++) {
      if (i) put(p, ", ");
      print_ann_value(p, a->items[i]);
    }
    put(p, "}");
  } else {
    print_expr(p, v, PREC_LOW);
  }
}

static void print_annotations(Printer *p, const tir_Array *anns) {
  put(p, "{");
  for (int i = 0; i < anns->size; i++) {
    const tir_Ann *a = (const tir_Ann *)anns->items[i];
    if (i) put(p, ", ");
    put(p, "[");
    put_q(p, a->key);
    put(p, "] = ");
    print_ann_value(p, a->value);
  }
  put(p, "}");
}

static int is_grid_loop(const tir_Node *s) {
  if (!s || s->kind != TIR_For) return 0;
  const tir_For *f = (const tir_For *)s;
  return f->kind == TIR_FOR_SERIAL && tir_is_zero(f->min) && f->annotations->size == 0;
}

static void print_for(Printer *p, const tir_For *f) {
  /* Collapse perfectly nested plain serial loops into T.grid, unless one is marked. */
  const tir_For *chain[64];
  int n = 0;
  const tir_Node *cur = &f->hdr;
  while (n < 64 && is_grid_loop(cur) && (n == 0 || !find_mark(p, cur))) {
    /* T.grid evaluates every extent before any loop variable exists */
    int inner_uses_outer = 0;
    for (int k = 0; k < n && !inner_uses_outer; k++)
      inner_uses_outer = tir_uses_var(((const tir_For *)cur)->extent, chain[k]->loop_var);
    if (inner_uses_outer) break;
    chain[n++] = (const tir_For *)cur;
    cur = ((const tir_For *)cur)->body;
  }
  begin_line(p);
  int start = col(p);
  if (n >= 2) {
    put(p, "for ");
    for (int i = 0; i < n; i++) putf(p, "%s%s", i ? ", " : "", var_name(p, chain[i]->loop_var));
    put(p, " in T.grid(");
    for (int i = 0; i < n; i++) {
      if (i) put(p, ", ");
      print_expr(p, chain[i]->extent, PREC_LOW);
    }
    put(p, ") do");
    mark_header(p, &f->hdr, start);
    newline(p);
    for (int i = 0; i < n; i++) p->loops[p->n_loops++] = chain[i];
    print_body(p, chain[n - 1]->body);
    p->n_loops -= n;
    begin_line(p);
    put(p, "end");
    newline(p);
    return;
  }
  putf(p, "for %s in %s(", var_name(p, f->loop_var), for_kind_fn((int)f->kind));
  if (tir_is_zero(f->min)) {
    print_expr(p, f->extent, PREC_LOW);
  } else {
    print_expr(p, f->min, PREC_LOW);
    put(p, ", ");
    tir_Node *stop = tir_add(R(f->min), R(f->extent));
    print_expr(p, stop, PREC_LOW);
    tir_release(stop);
  }
  if (f->kind == TIR_FOR_THREAD_BINDING) {
    put(p, ", ");
    put_q(p, f->thread_tag);
  }
  if (f->annotations->size) {
    put(p, ", {annotations = ");
    print_annotations(p, f->annotations);
    put(p, "}");
  }
  put(p, ") do");
  mark_header(p, &f->hdr, start);
  newline(p);
  if (p->n_loops < 256) p->loops[p->n_loops++] = f;
  print_body(p, f->body);
  p->n_loops--;
  begin_line(p);
  put(p, "end");
  newline(p);
}

static const tir_For *enclosing_loop_of(Printer *p, const tir_Node *v) {
  for (int i = p->n_loops - 1; i >= 0; i--)
    if (&p->loops[i]->loop_var->hdr == v) return p->loops[i];
  return NULL;
}

static char iter_code(int t) {
  switch (t) {
    case TIR_ITER_DATA_PAR: return 'S';
    case TIR_ITER_COMM_REDUCE: return 'R';
    default: return 0;
  }
}

static void print_block_realize(Printer *p, const tir_BlockRealize *br) {
  const tir_Block *b = br->block;
  begin_line(p);
  int start = col(p);
  put(p, "T.block(");
  put_q(p, b->name);
  put(p, ", function()");
  mark_header(p, &br->hdr, start);
  mark_header(p, &b->hdr, start);
  newline(p);
  p->indent += 2;
  /* iter vars: T.axis.remap when every binding is an enclosing loop's var over its range */
  int n = b->iter_vars->size;
  int remap = n > 0;
  for (int i = 0; i < n && remap; i++) {
    const tir_IterVar *iv = (const tir_IterVar *)b->iter_vars->items[i];
    const tir_Node *val = br->iter_values->items[i];
    const tir_For *lp = val->kind == TIR_Var ? enclosing_loop_of(p, val) : NULL;
    if (!iter_code((int)iv->iter_type) || !lp || !tir_is_zero(lp->min) || !tir_is_zero(iv->dom->min) ||
        !tir_expr_deep_equal(lp->extent, iv->dom->extent) || !tir_dtype_eq(val->dtype, iv->var->hdr.dtype))
      remap = 0;
    for (int j = 0; j < i && remap; j++)
      if (br->iter_values->items[j] == val) remap = 0;
  }
  if (remap) {
    begin_line(p);
    put(p, "local ");
    for (int i = 0; i < n; i++)
      putf(p, "%s%s", i ? ", " : "", var_name(p, ((const tir_IterVar *)b->iter_vars->items[i])->var));
    put(p, " = T.axis.remap(\"");
    for (int i = 0; i < n; i++) tir_sb_putc(&p->out, iter_code((int)((const tir_IterVar *)b->iter_vars->items[i])->iter_type));
    put(p, "\", {");
    for (int i = 0; i < n; i++) {
      if (i) put(p, ", ");
      print_expr(p, br->iter_values->items[i], PREC_LOW);
    }
    put(p, "})");
    newline(p);
  } else {
    for (int i = 0; i < n; i++) {
      const tir_IterVar *iv = (const tir_IterVar *)b->iter_vars->items[i];
      const char *kind = iv->iter_type == TIR_ITER_DATA_PAR      ? "spatial"
                         : iv->iter_type == TIR_ITER_COMM_REDUCE ? "reduce"
                         : iv->iter_type == TIR_ITER_ORDERED     ? "scan"
                                                                 : "opaque";
      begin_line(p);
      putf(p, "local %s = T.axis.%s(", var_name(p, iv->var), kind);
      if (tir_is_zero(iv->dom->min)) {
        print_expr(p, iv->dom->extent, PREC_LOW);
      } else {
        put(p, "{");
        print_expr(p, iv->dom->min, PREC_LOW);
        put(p, ", ");
        tir_Node *stop = tir_add(R(iv->dom->min), R(iv->dom->extent));
        print_expr(p, stop, PREC_LOW);
        tir_release(stop);
        put(p, "}");
      }
      put(p, ", ");
      print_expr(p, br->iter_values->items[i], PREC_LOW);
      if (!tir_dtype_eq(iv->var->hdr.dtype, TIR_INT32)) {
        char dt[32];
        putf(p, ", \"%s\"", tir_dtype_str(iv->var->hdr.dtype, dt));
      }
      put(p, ")");
      newline(p);
    }
  }
  if (!tir_is_one(br->predicate)) {
    begin_line(p);
    put(p, "T.where(");
    print_expr(p, br->predicate, PREC_LOW);
    put(p, ")");
    newline(p);
  }
  begin_line(p);
  put(p, "T.reads(");
  for (int i = 0; i < b->reads->size; i++) {
    if (i) put(p, ", ");
    print_region(p, (const tir_BufferRegion *)b->reads->items[i]);
  }
  put(p, ")");
  newline(p);
  begin_line(p);
  put(p, "T.writes(");
  for (int i = 0; i < b->writes->size; i++) {
    if (i) put(p, ", ");
    print_region(p, (const tir_BufferRegion *)b->writes->items[i]);
  }
  put(p, ")");
  newline(p);
  if (b->annotations->size) {
    begin_line(p);
    put(p, "T.block_attr(");
    print_annotations(p, b->annotations);
    put(p, ")");
    newline(p);
  }
  for (int i = 0; i < b->alloc_buffers->size; i++) {
    const tir_Buffer *ab = (const tir_Buffer *)b->alloc_buffers->items[i];
    char dt[32];
    begin_line(p);
    int s0 = col(p);
    putf(p, "local %s = T.alloc_buffer(", buf_name(p, ab));
    print_shape(p, ab->shape);
    putf(p, ", \"%s\"", tir_dtype_str(ab->hdr.dtype, dt));
    print_buffer_opts(p, ab, 1, NULL);
    put(p, ")");
    mark_header(p, &ab->hdr, s0);
    newline(p);
  }
  for (int i = 0; i < b->match_buffers->size; i++) {
    const tir_MatchBufferRegion *mb = (const tir_MatchBufferRegion *)b->match_buffers->items[i];
    char dt[32];
    /* symbolic strides / offset of the view are defined here (T.var) */
    for (int k = 0; k <= mb->buffer->strides->size; k++) {
      const tir_Node *v = k < mb->buffer->strides->size ? mb->buffer->strides->items[k] : mb->buffer->elem_offset;
      if (!v || v->kind != TIR_Var) continue;
      begin_line(p);
      putf(p, "local %s = T.var(\"%s\")", var_name(p, (const tir_Var *)v), tir_dtype_str(v->dtype, dt));
      newline(p);
    }
    begin_line(p);
    putf(p, "local %s = T.match_buffer(", buf_name(p, mb->buffer));
    print_region(p, mb->source);
    put(p, ", ");
    print_shape(p, mb->buffer->shape);
    putf(p, ", \"%s\"", tir_dtype_str(mb->buffer->hdr.dtype, dt));
    print_buffer_opts(p, mb->buffer, 1, NULL);
    put(p, ")");
    newline(p);
  }
  if (b->init) {
    begin_line(p);
    put(p, "T.init(function()");
    newline(p);
    print_body(p, b->init);
    begin_line(p);
    put(p, "end)");
    newline(p);
  }
  print_stmt(p, b->body);
  p->indent -= 2;
  begin_line(p);
  put(p, "end)");
  newline(p);
}

/* Scoped statements (let, launch_thread, allocate) print in the "rest of the scope" form
 * (local x = T.let(...)) when they end their sequence (tail), else with an explicit body
 * function, so that the printed script rebuilds the same nesting. */
static void print_stmt_t(Printer *p, const tir_Node *s, int tail) {
  if (!s) return;
  int start;
  switch (s->kind) {
    case TIR_SeqStmt: {
      const tir_Array *a = ((const tir_SeqStmt *)s)->seq;
      for (int i = 0; i < a->size; i++) print_stmt_t(p, a->items[i], tail && i == a->size - 1);
      return;
    }
    case TIR_For: print_for(p, (const tir_For *)s); return;
    case TIR_BlockRealize: print_block_realize(p, (const tir_BlockRealize *)s); return;
    case TIR_Block: {
      /* a block on its own (no realize): its iteration variables bound to themselves */
      const tir_Block *b = (const tir_Block *)s;
      tir_Array *vals = tir_array_new(b->iter_vars->size);
      for (int i = 0; i < b->iter_vars->size; i++) vals->items[i] = R(&((const tir_IterVar *)b->iter_vars->items[i])->var->hdr);
      tir_Node *br = tir_block_realize(vals, NULL, (tir_Block *)R(b));
      print_block_realize(p, (const tir_BlockRealize *)br);
      tir_release(br);
      return;
    }
    case TIR_BufferStore: {
      const tir_BufferStore *st = (const tir_BufferStore *)s;
      begin_line(p);
      start = col(p);
      put(p, buf_name(p, st->buffer));
      put(p, "[");
      print_indices(p, st->indices);
      put(p, "] = ");
      print_expr(p, st->value, PREC_LOW);
      mark_header(p, s, start);
      newline(p);
      return;
    }
    case TIR_IfThenElse: {
      const tir_IfThenElse *f = (const tir_IfThenElse *)s;
      begin_line(p);
      start = col(p);
      put(p, "T.If(");
      print_expr(p, f->cond, PREC_LOW);
      put(p, ", function()");
      mark_header(p, s, start);
      newline(p);
      print_body(p, f->then_case);
      if (f->else_case) {
        begin_line(p);
        put(p, "end, function()");
        newline(p);
        print_body(p, f->else_case);
      }
      begin_line(p);
      put(p, "end)");
      newline(p);
      return;
    }
    case TIR_LetStmt: {
      const tir_LetStmt *l = (const tir_LetStmt *)s;
      begin_line(p);
      start = col(p);
      const char *nm = var_name(p, l->var);
      if (!tail) {
        putf(p, "T.let(\"%s\", ", nm);
        print_expr(p, l->value, PREC_LOW);
        putf(p, ", function(%s)", nm);
        mark_header(p, s, start);
        newline(p);
        print_body(p, l->body);
        begin_line(p);
        put(p, "end)");
        newline(p);
        return;
      }
      putf(p, "local %s = T.let(\"%s\", ", nm, nm);
      print_expr(p, l->value, PREC_LOW);
      put(p, ")");
      mark_header(p, s, start);
      newline(p);
      print_stmt(p, l->body);
      return;
    }
    case TIR_AttrStmt: {
      const tir_AttrStmt *a = (const tir_AttrStmt *)s;
      begin_line(p);
      start = col(p);
      if (strcmp(a->key, "thread_extent") == 0 && a->node && a->node->kind == TIR_IterVar) {
        const tir_IterVar *iv = (const tir_IterVar *)a->node;
        if (!tail) {
          put(p, "T.launch_thread(");
          put_q(p, iv->thread_tag);
          put(p, ", ");
          print_expr(p, a->value, PREC_LOW);
          putf(p, ", function(%s)", var_name(p, iv->var));
          mark_header(p, s, start);
          newline(p);
          print_body(p, a->body);
          begin_line(p);
          put(p, "end)");
          newline(p);
          return;
        }
        putf(p, "local %s = T.launch_thread(", var_name(p, iv->var));
        put_q(p, iv->thread_tag);
        put(p, ", ");
        print_expr(p, a->value, PREC_LOW);
        put(p, ")");
        mark_header(p, s, start);
        newline(p);
        print_stmt(p, a->body);
        return;
      }
      put(p, "T.attr(");
      if (a->node && tir_is_expr(a->node)) print_expr(p, a->node, PREC_LOW);
      else if (a->node && a->node->kind == TIR_Buffer) put(p, buf_name(p, (const tir_Buffer *)a->node));
      else put(p, "nil");
      put(p, ", ");
      put_q(p, a->key);
      put(p, ", ");
      print_ann_value(p, a->value); /* (an expression, or a list: cluster_dims = {x, y, z}) */
      put(p, ", function()");
      mark_header(p, s, start);
      newline(p);
      print_body(p, a->body);
      begin_line(p);
      put(p, "end)");
      newline(p);
      return;
    }
    case TIR_Evaluate:
      begin_line(p);
      start = col(p);
      put(p, "T.evaluate(");
      print_expr(p, ((const tir_Evaluate *)s)->value, PREC_LOW);
      put(p, ")");
      mark_header(p, s, start);
      newline(p);
      return;
    case TIR_DeclBuffer: {
      const tir_DeclBuffer *d = (const tir_DeclBuffer *)s;
      const tir_Buffer *b = d->buffer;
      char dt[32], data[200];
      const tir_Buffer *own = NULL;
      for (int i = 0; i < p->n_owners && !own; i++)
        if (p->owners[i]->data == b->data && p->owners[i] != b) own = p->owners[i];
      if (own) snprintf(data, sizeof data, "%s.data", buf_name(p, own));
      else snprintf(data, sizeof data, "%s", var_name(p, b->data));
      begin_line(p);
      start = col(p);
      if (tail) putf(p, "local %s = ", buf_name(p, b));
      put(p, "T.decl_buffer(");
      print_shape(p, b->shape);
      putf(p, ", \"%s\"", tir_dtype_str(b->hdr.dtype, dt));
      print_buffer_opts(p, b, 1, data);
      if (!tail) {
        putf(p, ", function(%s)", buf_name(p, b));
        mark_header(p, s, start);
        newline(p);
        print_body(p, d->body);
        begin_line(p);
        put(p, "end)");
        newline(p);
        return;
      }
      put(p, ")");
      mark_header(p, s, start);
      newline(p);
      print_stmt(p, d->body);
      return;
    }
    case TIR_Allocate: {
      const tir_Allocate *a = (const tir_Allocate *)s;
      char dt[32];
      begin_line(p);
      start = col(p);
      if (!tail) {
        put(p, "T.allocate(");
        print_shape(p, a->buffer->shape);
        putf(p, ", \"%s\", ", tir_dtype_str(a->buffer->hdr.dtype, dt));
        print_alloc_scope(p, a->buffer);
        putf(p, ", function(%s)",
             buf_name(p, a->buffer));
        mark_header(p, s, start);
        newline(p);
        print_body(p, a->body);
        begin_line(p);
        put(p, "end)");
        newline(p);
        return;
      }
      putf(p, "local %s = T.allocate(", buf_name(p, a->buffer));
      print_shape(p, a->buffer->shape);
      putf(p, ", \"%s\", ", tir_dtype_str(a->buffer->hdr.dtype, dt));
      print_alloc_scope(p, a->buffer);
      put(p, ")");
      mark_header(p, s, start);
      newline(p);
      print_stmt(p, a->body);
      return;
    }
    default:
      begin_line(p);
      if (tir_is_expr(s)) print_expr(p, s, PREC_LOW);
      else putf(p, "<%s>", tir_kind_name(s->kind));
      newline(p);
      return;
  }
}

/* ---- functions ---- */
typedef struct {
  const tir_Node **defined;
  int n_def, cap_def;
  const tir_Buffer **used;
  int n_used, cap_used;
  const tir_Buffer **owners;
  int n_own, cap_own;
} BufScan;

static void push_ptr(const void ***arr, int *n, int *cap, const void *x) {
  for (int i = 0; i < *n; i++)
    if ((*arr)[i] == x) return;
  if (*n == *cap) {
    *cap = *cap ? *cap * 2 : 16;
    *arr = realloc(*arr, sizeof(void *) * (size_t)*cap);
  }
  (*arr)[(*n)++] = x;
}

static int scan_fn(const tir_Node *n, void *ctx) {
  BufScan *s = ctx;
  switch (n->kind) {
    case TIR_Block: {
      const tir_Block *b = (const tir_Block *)n;
      for (int i = 0; i < b->alloc_buffers->size; i++) {
        push_ptr((const void ***)&s->defined, &s->n_def, &s->cap_def, b->alloc_buffers->items[i]);
        push_ptr((const void ***)&s->owners, &s->n_own, &s->cap_own, b->alloc_buffers->items[i]);
      }
      for (int i = 0; i < b->match_buffers->size; i++)
        push_ptr((const void ***)&s->defined, &s->n_def, &s->cap_def,
                 ((const tir_MatchBufferRegion *)b->match_buffers->items[i])->buffer);
      break;
    }
    case TIR_Allocate:
      push_ptr((const void ***)&s->defined, &s->n_def, &s->cap_def, ((const tir_Allocate *)n)->buffer);
      push_ptr((const void ***)&s->owners, &s->n_own, &s->cap_own, ((const tir_Allocate *)n)->buffer);
      break;
    case TIR_DeclBuffer:
      push_ptr((const void ***)&s->defined, &s->n_def, &s->cap_def, ((const tir_DeclBuffer *)n)->buffer);
      break;
    case TIR_BufferLoad:
      push_ptr((const void ***)&s->used, &s->n_used, &s->cap_used, ((const tir_BufferLoad *)n)->buffer);
      break;
    case TIR_BufferStore:
      push_ptr((const void ***)&s->used, &s->n_used, &s->cap_used, ((const tir_BufferStore *)n)->buffer);
      break;
    case TIR_BufferRegion:
      push_ptr((const void ***)&s->used, &s->n_used, &s->cap_used, ((const tir_BufferRegion *)n)->buffer);
      break;
    case TIR_Buffer: return 1;
    default: break;
  }
  return 0;
}

static int is_root_block(const tir_Node *body) {
  if (!body || body->kind != TIR_BlockRealize) return 0;
  const tir_BlockRealize *br = (const tir_BlockRealize *)body;
  const tir_Block *b = br->block;
  return strcmp(b->name, "root") == 0 && b->iter_vars->size == 0 && b->reads->size == 0 &&
         b->writes->size == 0 && !b->init && b->match_buffers->size == 0 && tir_is_one(br->predicate);
}

/* Variables in the parameters' shapes, strides and offsets (n in T.Buffer({n, 4})). */
typedef struct {
  const tir_Var **vars;
  int n, cap;
} VarScan;

static int var_scan_fn(const tir_Node *n, void *ctx) {
  if (n->kind == TIR_Var) {
    VarScan *s = ctx;
    push_ptr((const void ***)&s->vars, &s->n, &s->cap, n);
  }
  return 0;
}

static void print_func(Printer *p, const tir_PrimFunc *f) {
  char dt[32];
  /* A parameter buffer whose shape names a variable (a scalar parameter or a free shape
   * variable) is evaluated before the parameters exist: the function prints inside a closure
   * that declares those variables first, so that the text loads back (T.parse). */
  VarScan vs = {0};
  for (int i = 0; i < f->params->size; i++) {
    if (f->params->items[i]->kind != TIR_Buffer) continue;
    const tir_Buffer *b = (const tir_Buffer *)f->params->items[i];
    tir_visit(&b->shape->hdr, var_scan_fn, &vs);
    tir_visit(&b->strides->hdr, var_scan_fn, &vs);
    if (b->elem_offset) tir_visit(b->elem_offset, var_scan_fn, &vs);
  }
  begin_line(p);
  if (vs.n) {
    put(p, "(function()");
    for (int i = 0; i < vs.n; i++) {
      putf(p, " local %s = tir.var(", var_name(p, vs.vars[i]));
      put_q(p, var_name(p, vs.vars[i]));
      putf(p, ", \"%s\")", tir_dtype_str(vs.vars[i]->hdr.dtype, dt));
    }
    put(p, " return ");
  }
  put(p, "T.prim_func(");
  put_q(p, f->name);
  put(p, ", {");
  for (int i = 0; i < f->params->size; i++) {
    const tir_Node *prm = f->params->items[i];
    if (i) put(p, ", ");
    if (prm->kind == TIR_Buffer) {
      const tir_Buffer *b = (const tir_Buffer *)prm;
      putf(p, "%s = ", buf_name(p, b));
      /* the data var prints as <buffer>.data */
      print_buffer_decl(p, b, NULL);
    } else {
      const tir_Var *v = (const tir_Var *)prm;
      int declared = 0;
      for (int k = 0; k < vs.n; k++)
        if (vs.vars[k] == v) declared = 1;
      if (declared) putf(p, "%s = %s", var_name(p, v), var_name(p, v));
      else putf(p, "%s = T.%s()", var_name(p, v), tir_dtype_str(v->hdr.dtype, dt));
    }
  }
  put(p, "}, function(");
  for (int i = 0; i < f->params->size; i++) {
    const tir_Node *prm = f->params->items[i];
    if (i) put(p, ", ");
    put(p, prm->kind == TIR_Buffer ? buf_name(p, (const tir_Buffer *)prm) : var_name(p, (const tir_Var *)prm));
  }
  put(p, ")");
  newline(p);
  p->indent += 2;
  if (f->attrs->size) {
    begin_line(p);
    put(p, "T.func_attr(");
    print_annotations(p, f->attrs);
    put(p, ")");
    newline(p);
  }
  /* Buffers used but defined nowhere (e.g. flattened views of parameters). */
  BufScan scan = {0};
  for (int i = 0; i < f->params->size; i++)
    if (f->params->items[i]->kind == TIR_Buffer) {
      push_ptr((const void ***)&scan.defined, &scan.n_def, &scan.cap_def, f->params->items[i]);
      push_ptr((const void ***)&scan.owners, &scan.n_own, &scan.cap_own, f->params->items[i]);
    }
  tir_visit(f->body, scan_fn, &scan);
  free(p->owners);
  p->owners = scan.owners;
  p->n_owners = scan.n_own;
  p->cap_owners = scan.cap_own;
  for (int i = 0; i < scan.n_used; i++) {
    const tir_Buffer *b = scan.used[i];
    int def = 0;
    for (int j = 0; j < scan.n_def; j++)
      if (scan.defined[j] == &b->hdr) def = 1;
    if (def) continue;
    /* name the data var after a parameter that shares it */
    const char *data = NULL;
    char tmp[160];
    for (int j = 0; j < f->params->size; j++) {
      const tir_Node *prm = f->params->items[j];
      if (prm->kind == TIR_Buffer && ((const tir_Buffer *)prm)->data == b->data) {
        snprintf(tmp, sizeof tmp, "%s.data", buf_name(p, (const tir_Buffer *)prm));
        data = tmp;
      } else if (prm == &b->data->hdr) {
        data = var_name(p, b->data);
      }
    }
    begin_line(p);
    putf(p, "local %s = ", buf_name(p, b));
    print_buffer_decl(p, b, data);
    newline(p);
  }
  free(scan.defined);
  free(scan.used);
  const tir_Node *body = f->body;
  if (is_root_block(body)) {
    const tir_BlockRealize *br = (const tir_BlockRealize *)body;
    if (br->block->alloc_buffers->size == 0 && br->block->annotations->size == 0 && !find_mark(p, body) &&
        !find_mark(p, &br->block->hdr))
      body = br->block->body; /* implicit root block, as TVMScript prints it */
  }
  print_stmt(p, body);
  p->indent -= 2;
  begin_line(p);
  put(p, vs.n ? "end) end)()" : "end)");
  newline(p);
  free(vs.vars);
}

static void print_any(Printer *p, const tir_Node *n) {
  if (!n) {
    put(p, "nil");
    return;
  }
  if (n->kind == TIR_PrimFunc) {
    print_func(p, (const tir_PrimFunc *)n);
    return;
  }
  if (n->kind == TIR_IRModule) {
    const tir_IRModule *m = (const tir_IRModule *)n;
    put(p, "T.ir_module({");
    newline(p);
    p->indent += 2;
    for (int i = 0; i < m->functions->size; i++) {
      if (!m->functions->items[i] || m->functions->items[i]->kind != TIR_PrimFunc) continue;
      print_func(p, (const tir_PrimFunc *)m->functions->items[i]);
      /* turn the closing "end)" of each function into "end)," */
      if (p->out.len >= 2) {
        p->out.len -= 1;
        p->out.data[p->out.len] = 0;
        put(p, ",");
        newline(p);
      }
    }
    p->indent -= 2;
    put(p, "})");
    newline(p);
    return;
  }
  if (tir_is_stmt(n)) {
    print_stmt(p, n);
    return;
  }
  if (tir_is_expr(n)) {
    print_expr(p, n, PREC_LOW);
    return;
  }
  switch (n->kind) {
    case TIR_Buffer: print_buffer_decl(p, (const tir_Buffer *)n, NULL); return;
    case TIR_BufferRegion: print_region(p, (const tir_BufferRegion *)n); return;
    case TIR_Range: {
      const tir_Range *r = (const tir_Range *)n;
      put(p, "T.Range(");
      print_expr(p, r->min, PREC_LOW);
      put(p, ", ");
      tir_Node *stop = tir_add(R(r->min), R(r->extent));
      print_expr(p, stop, PREC_LOW);
      tir_release(stop);
      put(p, ")");
      return;
    }
    case TIR_IterVar: {
      const tir_IterVar *iv = (const tir_IterVar *)n;
      putf(p, "T.iter_var(%s, ", var_name(p, iv->var));
      print_any(p, &iv->dom->hdr);
      putf(p, ", %lld, ", (long long)iv->iter_type);
      put_q(p, iv->thread_tag);
      put(p, ")");
      return;
    }
    case TIR_Array: {
      const tir_Array *a = (const tir_Array *)n;
      put(p, "{");
      for (int i = 0; i < a->size; i++) {
        if (i) put(p, ", ");
        print_any(p, a->items[i]);
      }
      put(p, "}");
      return;
    }
    case TIR_Ann: {
      const tir_Ann *a = (const tir_Ann *)n;
      put(p, "[");
    put_q(p, a->key);
    put(p, "] = ");
      print_any(p, a->value);
      return;
    }
    case TIR_ComputeOp: {
      const tir_ComputeOp *c = (const tir_ComputeOp *)n;
      put(p, "te.compute(");
      put_q(p, c->name);
      put(p, ", {");
      for (int i = 0; i < c->axis->size; i++) {
        if (i) put(p, ", ");
        put(p, var_name(p, ((const tir_IterVar *)c->axis->items[i])->var));
      }
      put(p, "}, ");
      print_expr(p, c->body, PREC_LOW);
      put(p, ")");
      return;
    }
    default: putf(p, "<%s>", tir_kind_name(n->kind)); return;
  }
}

char *tir_print_marked(const tir_Node *n, const tir_Mark *marks, int n_marks) {
  Printer p;
  memset(&p, 0, sizeof p);
  tir_sb_init(&p.out);
  p.marks = marks;
  p.n_marks = n_marks;
  print_any(&p, n);
  if (p.n_pending) newline(&p);
  for (int i = 0; i < p.n_names; i++) free(p.names[i].name);
  free(p.names);
  free(p.owners);
  char *s = tir_sb_take(&p.out);
  /* drop one trailing newline for single-line things */
  size_t len = strlen(s);
  if (len && s[len - 1] == '\n' && !(n && (n->kind == TIR_PrimFunc || n->kind == TIR_IRModule))) {
    int lines = 0;
    for (size_t i = 0; i < len; i++) lines += s[i] == '\n';
    if (lines == 1) s[len - 1] = 0;
  }
  return s;
}

char *tir_print(const tir_Node *n) { return tir_print_marked(n, NULL, 0); }
char *tir_print_expr(const tir_Node *e) { return tir_print_marked(e, NULL, 0); }
