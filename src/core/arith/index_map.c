/* index_map.c -- exact analysis of an index map (vars -> expressions) over a box domain, by
 * enumeration: the range of every output and whether the map is one-to-one.
 *
 * Why enumeration: layout maps are small integer programs (div/mod, XOR swizzles, shifts)
 * for which no general symbolic proof exists; TVM's transform_layout does not check them at
 * all, and a non-injective layout silently aliases elements.  To keep it cheap the outputs are
 * grouped into independent components (outputs that share an input variable); the map is a
 * product of the components' maps, so it is injective iff each component is, and each is
 * enumerated over only its own inputs.  A 4096 x 4096 buffer tiled per dimension costs two
 * enumerations of 4096 points. */
#include <stdlib.h>
#include <string.h>

#include <stdio.h>

#include "tir/arith.h"
#include "tir/error.h"

enum { OP_IMM, OP_VAR, OP_ADD, OP_SUB, OP_MUL, OP_FDIV, OP_FMOD, OP_TDIV, OP_TMOD, OP_MIN, OP_MAX, OP_AND, OP_OR, OP_XOR,
       OP_SHL, OP_SHR, OP_LT, OP_LE, OP_GT, OP_GE, OP_EQ, OP_NE, OP_LAND, OP_LOR, OP_NOT, OP_SEL };

typedef struct {
  int op;
  int64_t arg;
} Ins;

typedef struct {
  Ins *code;
  int n, cap;
  int depth, max_depth;
  const tir_Var *const *vars;
  int n_vars;
  const tir_Node *bad; /* first node that cannot be evaluated */
} Prog;

static void emit(Prog *p, int op, int64_t arg, int push) {
  if (p->n == p->cap) {
    p->cap = p->cap ? p->cap * 2 : 32;
    p->code = realloc(p->code, (size_t)p->cap * sizeof *p->code);
  }
  p->code[p->n].op = op;
  p->code[p->n].arg = arg;
  p->n++;
  p->depth += push;
  if (p->depth > p->max_depth) p->max_depth = p->depth;
}

static void compile(Prog *p, const tir_Node *e) {
  if (p->bad) return;
  if (e->dtype.lanes != 1 || !(tir_dtype_is_int(e->dtype) || tir_dtype_is_bool(e->dtype))) {
    p->bad = e;
    return;
  }
  static const struct {
    int kind, op;
  } bin[] = {{TIR_Add, OP_ADD}, {TIR_Sub, OP_SUB}, {TIR_Mul, OP_MUL}, {TIR_FloorDiv, OP_FDIV}, {TIR_FloorMod, OP_FMOD},
             {TIR_Div, OP_TDIV}, {TIR_Mod, OP_TMOD}, {TIR_Min, OP_MIN}, {TIR_Max, OP_MAX}, {TIR_LT, OP_LT}, {TIR_LE, OP_LE},
             {TIR_GT, OP_GT}, {TIR_GE, OP_GE}, {TIR_EQ, OP_EQ}, {TIR_NE, OP_NE}, {TIR_And, OP_LAND}, {TIR_Or, OP_LOR}};
  switch (e->kind) {
    case TIR_IntImm: emit(p, OP_IMM, ((const tir_IntImm *)e)->value, 1); return;
    case TIR_Var:
      for (int i = 0; i < p->n_vars; i++)
        if (&p->vars[i]->hdr == e) {
          emit(p, OP_VAR, i, 1);
          return;
        }
      p->bad = e;
      return;
    case TIR_Cast: compile(p, ((const tir_Cast *)e)->value); return;
    case TIR_Not:
      compile(p, ((const tir_Not *)e)->a);
      emit(p, OP_NOT, 0, 0);
      return;
    case TIR_Select: {
      const tir_Select *s = (const tir_Select *)e;
      compile(p, s->cond);
      compile(p, s->true_value);
      compile(p, s->false_value);
      emit(p, OP_SEL, 0, -2);
      return;
    }
    case TIR_Call: {
      const tir_Call *c = (const tir_Call *)e;
      static const struct {
        const char *name;
        int op;
      } calls[] = {{"bitwise_and", OP_AND}, {"bitwise_or", OP_OR}, {"bitwise_xor", OP_XOR}, {"shift_left", OP_SHL},
                   {"shift_right", OP_SHR}};
      for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++)
        if (strcmp(c->op, calls[i].name) == 0 && c->args->size == 2) {
          compile(p, c->args->items[0]);
          compile(p, c->args->items[1]);
          emit(p, calls[i].op, 0, -1);
          return;
        }
      p->bad = e;
      return;
    }
    default:
      for (size_t i = 0; i < sizeof bin / sizeof bin[0]; i++)
        if (bin[i].kind == e->kind) {
          const tir_Add *b = (const tir_Add *)e;
          compile(p, b->a);
          compile(p, b->b);
          emit(p, bin[i].op, 0, -1);
          return;
        }
      p->bad = e;
  }
}

/* Runs a program; 0, or -1 on division by zero / bad shift (err set). */
static int run(const Prog *p, const int64_t *x, int64_t *stack, int64_t *out) {
  int sp = 0;
  for (int i = 0; i < p->n; i++) {
    const Ins *in = &p->code[i];
    int64_t a, b;
    switch (in->op) {
      case OP_IMM: stack[sp++] = in->arg; continue;
      case OP_VAR: stack[sp++] = x[in->arg]; continue;
      case OP_NOT: stack[sp - 1] = !stack[sp - 1]; continue;
      case OP_SEL:
        sp -= 2;
        stack[sp - 1] = stack[sp - 1] ? stack[sp] : stack[sp + 1];
        continue;
      default: break;
    }
    b = stack[--sp];
    a = stack[sp - 1];
    int64_t r = 0;
    switch (in->op) {
      case OP_ADD: r = (int64_t)((uint64_t)a + (uint64_t)b); break;
      case OP_SUB: r = (int64_t)((uint64_t)a - (uint64_t)b); break;
      case OP_MUL: r = (int64_t)((uint64_t)a * (uint64_t)b); break;
      case OP_FDIV:
      case OP_FMOD:
      case OP_TDIV:
      case OP_TMOD:
        if (b == 0 || (a == INT64_MIN && b == -1)) return -1;
        if (in->op == OP_TDIV) r = a / b;
        else if (in->op == OP_TMOD) r = a % b;
        else {
          int64_t q = a / b, m = a % b;
          if (m != 0 && ((m < 0) != (b < 0))) {
            q -= 1;
            m += b;
          }
          r = in->op == OP_FDIV ? q : m;
        }
        break;
      case OP_MIN: r = a < b ? a : b; break;
      case OP_MAX: r = a > b ? a : b; break;
      case OP_AND: r = a & b; break;
      case OP_OR: r = a | b; break;
      case OP_XOR: r = a ^ b; break;
      case OP_SHL:
      case OP_SHR:
        if (b < 0 || b >= 63) return -1;
        r = in->op == OP_SHL ? (int64_t)((uint64_t)a << b) : a >> b;
        break;
      case OP_LT: r = a < b; break;
      case OP_LE: r = a <= b; break;
      case OP_GT: r = a > b; break;
      case OP_GE: r = a >= b; break;
      case OP_EQ: r = a == b; break;
      case OP_NE: r = a != b; break;
      case OP_LAND: r = a && b; break;
      case OP_LOR: r = a || b; break;
      default: return -1;
    }
    stack[sp - 1] = r;
  }
  *out = stack[0];
  return 0;
}

#define MAX_POINTS (1LL << 26)

int tir_index_map_analyze(const tir_Var *const *vars, const int64_t *extents, int n_vars, const tir_Node *const *outputs,
                          int n_out, int64_t *out_min, int64_t *out_max, int *injective, char *why, int why_cap) {
  int rc = -1;
  Prog *progs = calloc((size_t)(n_out ? n_out : 1), sizeof *progs);
  int *comp = calloc((size_t)(n_out + n_vars + 1), sizeof *comp); /* component id of each output, then each var */
  int64_t *x = calloc((size_t)(n_vars + 1), sizeof *x);
  int64_t *stack = NULL;
  uint8_t *seen = NULL;
  *injective = 1;
  if (why && why_cap) why[0] = 0;
  int max_depth = 1;
  for (int i = 0; i < n_vars; i++)
    if (extents[i] <= 0) {
      tir_error_set(TIR_ERR_VALUE, "index_map", "input %d (%s) has extent %lld; extents must be positive", i, vars[i]->name,
                    (long long)extents[i]);
      goto done;
    }
  for (int o = 0; o < n_out; o++) {
    progs[o].vars = vars;
    progs[o].n_vars = n_vars;
    compile(&progs[o], outputs[o]);
    if (progs[o].bad) {
      tir_error_set(TIR_ERR_VALUE, "index_map", "output %d cannot be evaluated: it uses %s%s%s, but an index map may use only its "
                    "inputs, integer constants, + - * // %% min max, comparisons, select and bitwise operations",
                    o, tir_kind_name(progs[o].bad->kind), progs[o].bad->kind == TIR_Var ? " " : "",
                    progs[o].bad->kind == TIR_Var ? ((const tir_Var *)progs[o].bad)->name : "");
      goto done;
    }
    if (progs[o].max_depth > max_depth) max_depth = progs[o].max_depth;
  }
  stack = calloc((size_t)max_depth + 1, sizeof *stack);
  /* union-find over outputs via shared variables: comp[o] = smallest output index in its component */
  for (int o = 0; o < n_out; o++) comp[o] = o;
  for (int v = 0; v < n_vars; v++) {
    int first = -1;
    for (int o = 0; o < n_out; o++) {
      int uses = 0;
      for (int k = 0; k < progs[o].n; k++)
        if (progs[o].code[k].op == OP_VAR && progs[o].code[k].arg == v) uses = 1;
      if (!uses) continue;
      if (first < 0) first = o;
      else {
        int a = comp[first], b = comp[o];
        if (a != b) {
          int lo = a < b ? a : b, hi = a < b ? b : a;
          for (int q = 0; q < n_out; q++)
            if (comp[q] == hi) comp[q] = lo;
        }
      }
    }
    comp[n_out + v] = first < 0 ? -1 : first;
    if (first < 0 && extents[v] > 1) {
      *injective = 0;
      if (why) snprintf(why, (size_t)why_cap, "input %s (extent %lld) is not used by any output", vars[v]->name, (long long)extents[v]);
    }
  }
  for (int v = 0; v < n_vars; v++)
    if (comp[n_out + v] >= 0) comp[n_out + v] = comp[comp[n_out + v]];
  for (int o = 0; o < n_out; o++) {
    out_min[o] = INT64_MAX;
    out_max[o] = INT64_MIN;
  }
  for (int c = 0; c < n_out; c++) {
    if (comp[c] != c) continue;
    /* inputs of this component */
    int in_vars[64], n_in = 0;
    int64_t points = 1;
    for (int v = 0; v < n_vars; v++)
      if (comp[n_out + v] == c) {
        if (n_in == 64) {
          tir_error_set(TIR_ERR_VALUE, "index_map", "too many inputs in one component");
          goto done;
        }
        in_vars[n_in++] = v;
        if (points > MAX_POINTS / extents[v]) points = MAX_POINTS + 1;
        else points *= extents[v];
      }
    if (points > MAX_POINTS) {
      tir_error_set(TIR_ERR_VALUE, "index_map", "cannot check the map: its inputs that depend on each other span more than 2^26 "
                    "points; map dimensions separately where possible");
      goto done;
    }
    for (int pass = 0; pass < 2; pass++) {
      int64_t cells = 1;
      if (pass == 1) {
        for (int o = 0; o < n_out; o++)
          if (comp[o] == c) {
            if (out_min[o] < 0) break; /* reported by the caller; skip the injectivity check */
            int64_t e = out_max[o] + 1;
            if (cells > (MAX_POINTS * 2) / e) cells = MAX_POINTS * 2 + 1;
            else cells *= e;
          }
        if (cells > MAX_POINTS * 2) {
          tir_error_set(TIR_ERR_VALUE, "index_map", "cannot check the map: its outputs span more than 2^27 cells");
          goto done;
        }
        free(seen);
        seen = calloc((size_t)(cells / 8 + 1), 1);
      }
      for (int k = 0; k < n_in; k++) x[in_vars[k]] = 0;
      for (int64_t pt = 0; pt < points; pt++) {
        int64_t cell = 0;
        for (int o = 0; o < n_out; o++) {
          if (comp[o] != c) continue;
          int64_t val;
          if (run(&progs[o], x, stack, &val) != 0) {
            tir_error_set(TIR_ERR_VALUE, "index_map", "output %d divides by zero or shifts out of range at some input", o);
            goto done;
          }
          if (pass == 0) {
            if (val < out_min[o]) out_min[o] = val;
            if (val > out_max[o]) out_max[o] = val;
          } else {
            if (val < 0) goto next_component;
            cell = cell * (out_max[o] + 1) + val;
          }
        }
        if (pass == 1) {
          if (seen[cell >> 3] & (1u << (cell & 7))) {
            if (*injective && why) {
              int len = snprintf(why, (size_t)why_cap, "two inputs map to the same element; one of them is (");
              for (int v = 0; v < n_vars && len < why_cap; v++)
                len += snprintf(why + len, (size_t)(why_cap - len), "%s%s=%lld", v ? ", " : "", vars[v]->name,
                                (long long)(comp[n_out + v] == c ? x[v] : 0));
              if (len < why_cap) snprintf(why + len, (size_t)(why_cap - len), ")");
            }
            *injective = 0;
            goto next_component;
          }
          seen[cell >> 3] |= (uint8_t)(1u << (cell & 7));
        }
        /* odometer over this component's inputs (last fastest) */
        for (int k = n_in - 1; k >= 0; k--) {
          if (++x[in_vars[k]] < extents[in_vars[k]]) break;
          x[in_vars[k]] = 0;
        }
      }
    }
  next_component:;
  }
  for (int o = 0; o < n_out; o++)
    if (out_min[o] > out_max[o]) out_min[o] = out_max[o] = 0; /* constant output of an empty component */
  rc = 0;
done:
  for (int o = 0; o < n_out; o++) free(progs[o].code);
  free(progs);
  free(comp);
  free(x);
  free(stack);
  free(seen);
  return rc;
}
