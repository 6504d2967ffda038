/* sim.c -- tir_simulate: the launches of a lowered function's kernels on the simulator
 * (arguments, temporaries, launch dimensions, CTA selection), issue reports and errors, and
 * the comparison with an oracle's results.  See sim.h and docs/SIMULATOR.md. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"
#include "tir/arith.h"
#include "tir/runtime.h"
#include "tir/scope.h"
#include "tir/strbuf.h"

/* ---- pointer map ---- */
static uint64_t phash(const void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

static void map_grow(SimMap *m) {
  SimMap old = *m;
  m->cap = m->cap ? m->cap * 2 : 64;
  m->keys = calloc((size_t)m->cap, sizeof *m->keys);
  m->vals = calloc((size_t)m->cap, sizeof *m->vals);
  m->n = 0;
  for (int i = 0; i < old.cap; i++)
    if (old.keys[i]) *sim_map_slot(m, old.keys[i], 1) = old.vals[i];
  free(old.keys);
  free(old.vals);
}

int *sim_map_slot(SimMap *m, const void *k, int insert) {
  if (insert && (m->n + 1) * 2 > m->cap) map_grow(m);
  if (!m->cap) return NULL;
  uint64_t h = phash(k) & (uint64_t)(m->cap - 1);
  while (m->keys[h]) {
    if (m->keys[h] == k) return &m->vals[h];
    h = (h + 1) & (uint64_t)(m->cap - 1);
  }
  if (!insert) return NULL;
  m->keys[h] = k;
  m->vals[h] = -1;
  m->n++;
  return &m->vals[h];
}

void sim_map_free(SimMap *m) {
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}

/* ---- names ---- */
const char *sim_thread_name(const Sim *S, int tid, char *buf, size_t cap) {
  if (tid < 0) {
    snprintf(buf, cap, "no thread");
    return buf;
  }
  int bx = S->bdim[0], by = S->bdim[1];
  snprintf(buf, cap, "thread (%d, %d, %d) [warp %d, lane %d]", tid % bx, tid / bx % by, tid / (bx * by), tid / 32, tid % 32);
  return buf;
}

char *sim_stmt_text(const tir_Node *s) {
  if (!s) return NULL;
  char *t = tir_print(s);
  if (!t) return NULL;
  char *p = t;
  while (*p == ' ') p++;
  size_t n = strcspn(p, "\n");
  if (n > 200) n = 200;
  char *r = malloc(n + 4);
  memcpy(r, p, n);
  strcpy(r + n, n == 200 ? "..." : "");
  free(t);
  return r;
}

/* the path from root to target through statement bodies (depth-first); returns its length */
static int find_path(const tir_Node *root, const tir_Node *target, const tir_Node **path, int depth, int max) {
  if (!root || depth >= max) return 0;
  path[depth] = root;
  if (root == target) return depth + 1;
  const tir_Node *kids[2] = {NULL, NULL};
  switch (root->kind) {
    case TIR_SeqStmt: {
      const tir_Array *q = ((const tir_SeqStmt *)root)->seq;
      for (int i = 0; i < q->size; i++) {
        int n = find_path(q->items[i], target, path, depth + 1, max);
        if (n) return n;
      }
      return 0;
    }
    case TIR_For: kids[0] = ((const tir_For *)root)->body; break;
    case TIR_IfThenElse:
      kids[0] = ((const tir_IfThenElse *)root)->then_case;
      kids[1] = ((const tir_IfThenElse *)root)->else_case;
      break;
    case TIR_LetStmt: kids[0] = ((const tir_LetStmt *)root)->body; break;
    case TIR_AttrStmt: kids[0] = ((const tir_AttrStmt *)root)->body; break;
    case TIR_Allocate: kids[0] = ((const tir_Allocate *)root)->body; break;
    case TIR_DeclBuffer: kids[0] = ((const tir_DeclBuffer *)root)->body; break;
    default: return 0;
  }
  for (int i = 0; i < 2; i++) {
    int n = find_path(kids[i], target, path, depth + 1, max);
    if (n) return n;
  }
  return 0;
}

/* The IR shown with an error: the smallest statement holding the marked ones and a level of
 * context (the whole kernel when that is the kernel's body). */
static void error_context(Sim *S, const tir_Node *a, const tir_Node *b) {
  const tir_PrimFunc *f = S->K ? S->K->func : NULL;
  if (!f) return;
  enum { MAXD = 256 };
  const tir_Node *pa[MAXD], *pb[MAXD];
  int na = a ? find_path(f->body, a, pa, 0, MAXD) : 0;
  int nb = b ? find_path(f->body, b, pb, 0, MAXD) : 0;
  const tir_Node *ctx = &f->hdr;
  if (na && (nb || !b)) {
    int l = na;
    if (nb) {
      l = 0;
      while (l < na && l < nb && pa[l] == pb[l]) l++;
    }
    /* pa[l - 1] is the common ancestor (the statement itself when one is marked): shown from
     * the loop or if around it, or the whole kernel when that is the launch */
    int c = l - 1;
    if (pa[c] == a && (!b || b == a) && c > 0) c--;
    while (c > 0 && (pa[c]->kind == TIR_SeqStmt || pa[c]->kind == TIR_Allocate || pa[c]->kind == TIR_LetStmt)) c--;
    if (c > 0 && !(pa[c]->kind == TIR_AttrStmt && strcmp(((const tir_AttrStmt *)pa[c])->key, "thread_extent") == 0)) ctx = pa[c];
  }
  tir_error_set_ir(ctx);
  if (a) tir_error_mark(a, b ? "this access" : "here");
  if (b && b != a) tir_error_mark(b, "the other access");
}

static char *xstrdup(const char *s) { return s ? tir_strdup(s) : NULL; }

int sim_issue(Sim *S, const char *kind, const tir_Node *stmt, int tid, const tir_Node *other_stmt, int other_tid, const char *buffer,
              int64_t index, int64_t extent, const char *fmt, ...) {
  tir_SimReport *rep = S->rep;
  rep->n_issues++;
  if (!S->check && sim_reported_before(S, kind, stmt, other_stmt)) return 0;
  tir_StrBuf sb;
  tir_sb_init(&sb);
  va_list ap;
  va_start(ap, fmt);
  tir_sb_vprintf(&sb, fmt, ap);
  va_end(ap);
  char *st = sim_stmt_text(stmt), *ot = other_stmt && other_stmt != stmt ? sim_stmt_text(other_stmt) : NULL;
  tir_StrBuf full;
  tir_sb_init(&full);
  if (S->K && strcmp(kind, "mismatch") != 0)
    tir_sb_printf(&full, "in kernel %s, CTA (%lld, %lld, %lld): ", S->K->name, (long long)S->cta[0], (long long)S->cta[1],
                  (long long)S->cta[2]);
  tir_sb_puts(&full, sb.data ? sb.data : "");
  if (st) tir_sb_printf(&full, "\n  statement: %s", st);
  if (ot) tir_sb_printf(&full, "\n  other statement: %s", ot);
  if (S->issue_tail) tir_sb_puts(&full, S->issue_tail);
  tir_sb_free(&sb);
  if (rep->n_kept < S->max_issues) {
    rep->issues = realloc(rep->issues, sizeof *rep->issues * (size_t)(rep->n_kept + 1));
    tir_SimIssue *is = &rep->issues[rep->n_kept++];
    memset(is, 0, sizeof *is);
    snprintf(is->kind, sizeof is->kind, "%s", kind);
    is->message = xstrdup(full.data);
    is->kernel = xstrdup(S->K ? S->K->name : NULL);
    for (int d = 0; d < 3; d++) is->cta[d] = S->cta[d];
    int bx = S->bdim[0] ? S->bdim[0] : 1, by = S->bdim[1] ? S->bdim[1] : 1;
    int th[2] = {tid, other_tid};
    for (int w = 0; w < 2; w++) {
      int *out = w ? is->other_thread : is->thread;
      if (th[w] < 0) out[0] = out[1] = out[2] = -1;
      else out[0] = th[w] % bx, out[1] = th[w] / bx % by, out[2] = th[w] / (bx * by);
    }
    is->statement = xstrdup(st);
    is->other_statement = xstrdup(ot);
    is->buffer = xstrdup(buffer);
    is->index = index;
    is->extent = extent;
  }
  int rc = 0;
  if (S->check) {
    tir_error_set(TIR_ERR_SIMULATION, S->K ? S->K->name : "simulate", "%s", full.data);
    error_context(S, stmt, other_stmt);
    S->fatal = 1;
    rc = -1;
  }
  free(st);
  free(ot);
  tir_sb_free(&full);
  return rc;
}

void sim_hint(Sim *S, const tir_Node *stmt, const char *fmt, ...) {
  for (int i = 0; i < S->n_hinted; i++)
    if (S->hinted[i] == stmt) return;
  if (S->rep->n_hints >= 20) return;
  S->hinted = realloc(S->hinted, sizeof *S->hinted * (size_t)(S->n_hinted + 1));
  S->hinted[S->n_hinted++] = stmt;
  tir_StrBuf sb;
  tir_sb_init(&sb);
  va_list ap;
  va_start(ap, fmt);
  tir_sb_vprintf(&sb, fmt, ap);
  va_end(ap);
  char *st = sim_stmt_text(stmt);
  if (S->K) tir_sb_printf(&sb, " [kernel %s, CTA (%lld, %lld, %lld)]", S->K->name, (long long)S->cta[0], (long long)S->cta[1], (long long)S->cta[2]);
  if (st) tir_sb_printf(&sb, "\n    at: %s", st);
  free(st);
  S->rep->hints = realloc(S->rep->hints, sizeof *S->rep->hints * (size_t)(S->rep->n_hints + 1));
  S->rep->hints[S->rep->n_hints++] = tir_sb_take(&sb);
}

int sim_fail(Sim *S, const tir_Node *where, const char *fmt, ...) {
  if (S->fatal) return -1;
  S->fatal = 1;
  tir_StrBuf sb;
  tir_sb_init(&sb);
  va_list ap;
  va_start(ap, fmt);
  tir_sb_vprintf(&sb, fmt, ap);
  va_end(ap);
  tir_error_set(TIR_ERR_RUNTIME, S->K ? S->K->name : "simulate", "simulate: %s", sb.data ? sb.data : "");
  tir_sb_free(&sb);
  if (S->K) {
    tir_error_set_ir(&S->K->func->hdr);
    if (where) tir_error_mark(where, "here");
  }
  return -1;
}

/* ---- the run ---- */
static int bind_host(Sim *S, const tir_PrimFunc *host, const tir_InterpArg *args, int nargs, tir_Analyzer *an) {
  for (int i = 0; i < nargs; i++) {
    const tir_Node *p = host->params->items[i];
    if (p->kind == TIR_Var && tir_dtype_is_int(p->dtype)) {
      tir_Node *v = tir_int_imm(p->dtype, args[i].ival);
      tir_analyzer_bind_value(an, (const tir_Var *)p, v);
      tir_release(v);
    } else if (p->kind == TIR_Buffer) {
      const tir_Buffer *b = (const tir_Buffer *)p;
      const tir_NDArray *arr = args[i].array;
      for (int d = 0; d < b->shape->size; d++)
        if (b->shape->items[d]->kind == TIR_Var) {
          tir_Node *v = tir_int_imm(b->shape->items[d]->dtype, arr->shape[d]);
          tir_analyzer_bind_value(an, (const tir_Var *)b->shape->items[d], v);
          tir_release(v);
        }
      int *slot = sim_map_slot(&S->stmap, b->data, 0);
      if (slot && *slot >= 0) continue; /* two parameters sharing data: the first one */
      Store *st = sim_new_store(S, b->data);
      st->buf = b;
      st->kind = ST_GLOBAL;
      st->base = arr->data;
      st->dtype = tir_dtype_element(arr->dtype);
      st->esize = tir_dtype_bytes(st->dtype);
      st->n = tir_nd_numel(arr) * arr->dtype.lanes;
      st->inst_bytes = 0;
      if (S->opt->expected && S->opt->expected[i]) st->prov = calloc((size_t)(st->n ? st->n : 1), sizeof(Prov));
    }
  }
  return 0;
}

static int eval_dim(const tir_Node *e, tir_Analyzer *an, int64_t *out, const char *what) {
  if (!tir_as_const_int(an, e, out)) {
    char *s = tir_print_expr(e);
    tir_error_set(TIR_ERR_RUNTIME, "simulate", "cannot evaluate %s %s for these arguments", what, s);
    free(s);
    return -1;
  }
  return 0;
}

static int alloc_temps(Sim *S, const tir_DeviceSplit *split, tir_Analyzer *an) {
  for (int i = 0; i < split->host_allocs->size; i++) {
    const tir_Buffer *b = (const tir_Buffer *)split->host_allocs->items[i];
    int64_t n = 1, d;
    for (int k = 0; k < b->shape->size; k++) {
      if (eval_dim(b->shape->items[k], an, &d, "the size of temporary")) return -1;
      n *= d;
    }
    n *= b->hdr.dtype.lanes;
    if (n < 0 || n > ((int64_t)1 << 32)) return tir_error_set(TIR_ERR_RUNTIME, "simulate", "temporary %s is too large", b->name);
    Store *st = sim_new_store(S, b->data);
    st->buf = b;
    st->kind = ST_GLOBAL;
    st->dtype = tir_dtype_element(b->hdr.dtype);
    st->esize = tir_dtype_bytes(st->dtype);
    st->n = n;
    st->base = calloc((size_t)(n ? n : 1), (size_t)st->esize);
    st->owned = 1;
    if (!st->base) return tir_error_set(TIR_ERR_RUNTIME, "simulate", "out of memory allocating temporary %s", b->name);
    if (!tir_scope_is_zeroed(b->scope)) sim_poison(st->base, st->dtype, n); /* counters start at 0 */
  }
  return 0;
}

/* scalar parameters of a kernel: the host's scalars or symbolic shape variables */
static int bind_kernel_scalars(Sim *S, const tir_Kernel *K, const tir_PrimFunc *host, const tir_InterpArg *args, tir_Analyzer *an) {
  for (int j = 0; j < K->func->params->size; j++) {
    const tir_Node *p = K->func->params->items[j];
    if (p->kind == TIR_Buffer) {
      int *slot = sim_map_slot(&S->stmap, ((const tir_Buffer *)p)->data, 0);
      if (!slot || *slot < 0)
        return tir_error_set(TIR_ERR_INTERNAL, K->name, "kernel buffer %s has no storage", ((const tir_Buffer *)p)->name);
      continue;
    }
    SVal v = {0};
    int found = 0;
    for (int i = 0; i < host->params->size && !found; i++)
      if (host->params->items[i] == p) {
        if (tir_dtype_is_float(p->dtype)) v.f = tir_value_norm(p->dtype, (SVal){.f = args[i].fval}).f;
        else v = tir_value_norm(p->dtype, (SVal){.i = args[i].ival});
        found = 1;
      }
    if (!found) {
      int64_t x;
      if (!tir_as_const_int(an, p, &x))
        return tir_error_set(TIR_ERR_RUNTIME, K->name, "kernel parameter %s has no value", ((const tir_Var *)p)->name);
      v.i = x;
    }
    SVal *vec = sim_var(S, (const tir_Var *)p, 1);
    for (int t = 0; t < SIM_MAX_THREADS; t++) vec[t] = v;
  }
  return 0;
}

/* The CTAs of kernel K to run: the selections naming it (or naming no kernel), else all. */
static int pick_ctas(Sim *S, const tir_Kernel *K, int64_t (**out)[3], int64_t *n) {
  const tir_SimOptions *o = S->opt;
  int64_t cnt = 0;
  for (int i = 0; i < o->n_sel; i++)
    if (!o->sel[i].kernel || strcmp(o->sel[i].kernel, K->name) == 0) cnt += o->sel[i].n;
  int any = 0;
  for (int i = 0; i < o->n_sel; i++)
    if (!o->sel[i].kernel || strcmp(o->sel[i].kernel, K->name) == 0) any = 1;
  if (!any) cnt = S->gdim[0] * S->gdim[1] * S->gdim[2];
  if (cnt > ((int64_t)1 << 24))
    return tir_error_set(TIR_ERR_VALUE, "simulate", "kernel %s launches %lld CTAs, too many to simulate: pick some with opts.ctas",
                         K->name, (long long)cnt);
  *out = malloc(sizeof **out * (size_t)(cnt ? cnt : 1));
  *n = 0;
  if (!any) {
    for (int64_t z = 0; z < S->gdim[2]; z++)
      for (int64_t y = 0; y < S->gdim[1]; y++)
        for (int64_t x = 0; x < S->gdim[0]; x++) {
          (*out)[*n][0] = x, (*out)[*n][1] = y, (*out)[*n][2] = z;
          (*n)++;
        }
    return 0;
  }
  for (int i = 0; i < o->n_sel; i++) {
    if (o->sel[i].kernel && strcmp(o->sel[i].kernel, K->name) != 0) continue;
    for (int j = 0; j < o->sel[i].n; j++) {
      const int64_t *c = o->sel[i].cta[j];
      for (int d = 0; d < 3; d++)
        if (c[d] < 0 || c[d] >= S->gdim[d]) {
          free(*out);
          *out = NULL;
          return tir_error_set(TIR_ERR_VALUE, "simulate", "CTA (%lld, %lld, %lld) is outside kernel %s's grid (%lld, %lld, %lld)",
                               (long long)c[0], (long long)c[1], (long long)c[2], K->name, (long long)S->gdim[0],
                               (long long)S->gdim[1], (long long)S->gdim[2]);
        }
      memcpy((*out)[(*n)++], c, sizeof(int64_t) * 3);
    }
  }
  return 0;
}

static int run_kernel(Sim *S, const tir_DeviceSplit *split, int k, const tir_PrimFunc *host, const tir_InterpArg *args,
                      tir_Analyzer *an) {
  const tir_Kernel *K = &split->kernels[k];
  S->K = K;
  S->kernel_index = k;
  int64_t T = 1, g[3], b[3];
  for (int d = 0; d < 3; d++)
    if (eval_dim(K->grid[d], an, &g[d], "launch dimension") || eval_dim(K->block[d], an, &b[d], "launch dimension")) return -1;
  if (tir_check_launch_dims(TIR_ERR_RUNTIME, K->name, K->name, g, b, 0) ||
      tir_check_warp_launch(TIR_ERR_RUNTIME, K->name, K->name, K->warp_op, b))
    return -1;
  for (int d = 0; d < 3; d++) {
    S->gdim[d] = g[d];
    S->bdim[d] = (int)b[d];
    T *= b[d];
  }
  memcpy(S->kbdim[k], S->bdim, sizeof S->bdim);
  if (T > SIM_MAX_THREADS) return tir_error_set(TIR_ERR_RUNTIME, K->name, "%lld threads per block; CUDA allows at most 1024", (long long)T);
  if (tir_check_shared_memory(TIR_ERR_RUNTIME, "simulate", K->name, K->func->body, K->dyn_smem_bytes, S->opt->sm)) return -1;
  S->T = (int)T;
  /* a cluster's CTAs write each other's shared memory and mbarriers (TMA multicast, remote
   * arrivals): not modelled, since CTAs run here one after another */
  if (K->cluster[0] > 0)
    return tir_error_set(TIR_ERR_VALUE, "simulate", "kernel %s is launched as thread-block clusters of (%d, %d, %d) CTAs, which "
                         "tir.simulate does not model (it runs one CTA at a time; TMA multicast and remote mbarrier arrivals cross "
                         "CTAs): check it on an sm_90 GPU, or simulate the kernel built without a cluster", K->name, K->cluster[0],
                         K->cluster[1], K->cluster[2]);
  S->T = (int)T;
  if (bind_kernel_scalars(S, K, host, args, an)) return -1;
  int64_t (*ctas)[3] = NULL, n = 0;
  if (pick_ctas(S, K, &ctas, &n)) return -1;
  S->rep->kernels++;
  int rc = 0;
  Act all = {S->all_ids, S->T};
  for (int64_t c = 0; c < n && !rc; c++) {
    memcpy(S->cta, ctas[c], sizeof S->cta);
    S->cta_gen++;
    S->epoch++;
    S->rep->ctas++;
    S->vtop = S->itop = 0;
    S->n_reported = 0;
    sim_wgmma_cta_begin(S);
    sim_sync_cta_begin(S);
    rc = sim_exec(S, K->func->body, &all);
    if (!rc) rc = sim_async_cta_end(S);
    else sim_async_cta_end(S);
    if (!rc) rc = sim_mbarrier_cta_end(S);
    else sim_mbarrier_cta_end(S);
  }
  free(ctas);
  sim_free_stores(S, S->n_global);
  if (S->fatal) rc = -1;
  return rc;
}

/* Compares the arguments with the oracle's arrays; differences are one "mismatch" issue per array. */
static int compare(Sim *S, const tir_PrimFunc *host, const tir_InterpArg *args, int nargs, const tir_DeviceSplit *split) {
  const tir_SimOptions *o = S->opt;
  int rc = 0;
  for (int i = 0; i < nargs && !rc; i++) {
    const tir_NDArray *want = o->expected[i], *got = args[i].array;
    if (!want || !got) continue;
    const tir_Buffer *b = (const tir_Buffer *)host->params->items[i];
    if (want->ndim != got->ndim || !tir_dtype_eq(want->dtype, got->dtype) || tir_nd_numel(want) != tir_nd_numel(got))
      return tir_error_set(TIR_ERR_VALUE, "simulate", "the expected array for %s does not match its shape/dtype", b->name);
    int *slot = sim_map_slot(&S->stmap, b->data, 0);
    const Prov *prov = slot && *slot >= 0 ? S->st[*slot]->prov : NULL;
    int64_t n = tir_nd_numel(got), bad = 0, first = -1;
    int isf = tir_dtype_is_float(got->dtype);
    tir_StrBuf ex;
    tir_sb_init(&ex);
    const tir_Node *stmts[3] = {NULL, NULL, NULL};
    int nst = 0;
    for (int64_t e = 0; e < n; e++) {
      int same;
      double gf = 0, wf = 0;
      if (isf) {
        gf = tir_nd_get_f(got, e), wf = tir_nd_get_f(want, e);
        same = (isnan(gf) && isnan(wf)) || gf == wf || fabs(gf - wf) <= o->atol + o->rtol * fabs(wf);
      } else {
        same = tir_nd_get_i(got, e) == tir_nd_get_i(want, e);
      }
      if (same) continue;
      if (bad++ == 0) first = e;
      if (bad <= 3) {
        /* the multi-dimensional index of element e */
        int64_t coord[TIR_MAX_NDIM], rem = e;
        for (int d = got->ndim - 1; d >= 0; d--) {
          coord[d] = got->shape[d] ? rem % got->shape[d] : 0;
          rem = got->shape[d] ? rem / got->shape[d] : 0;
        }
        char idx[160] = "";
        size_t len = 0;
        for (int d = 0; d < got->ndim && len < sizeof idx - 24; d++)
          len += (size_t)snprintf(idx + len, sizeof idx - len, "%s%lld", d ? ", " : "", (long long)coord[d]);
        if (isf) tir_sb_printf(&ex, "%s%s[%s] = %.9g (oracle: %.9g)", bad > 1 ? "; " : "", b->name, idx, gf, wf);
        else
          tir_sb_printf(&ex, "%s%s[%s] = %lld (oracle: %lld)", bad > 1 ? "; " : "", b->name, idx, (long long)tir_nd_get_i(got, e),
                        (long long)tir_nd_get_i(want, e));
      }
      if (prov && prov[e].stmt && nst < 3) {
        int seen = 0;
        for (int s = 0; s < nst; s++) seen |= stmts[s] == prov[e].stmt;
        if (!seen) stmts[nst++] = prov[e].stmt;
      }
    }
    if (bad) {
      const Prov *p = prov ? &prov[first] : NULL;
      char who[160] = "";
      S->K = p && p->stmt ? &split->kernels[p->kernel] : NULL;
      if (p && p->stmt) {
        memcpy(S->cta, p->cta, sizeof S->cta);
        memcpy(S->bdim, S->kbdim[p->kernel], sizeof S->bdim);
        char th[96];
        snprintf(who, sizeof who, "%s of CTA (%lld, %lld, %lld) in kernel %s", sim_thread_name(S, p->tid, th, sizeof th),
                 (long long)p->cta[0], (long long)p->cta[1], (long long)p->cta[2], S->K->name);
      }
      tir_StrBuf more;
      tir_sb_init(&more);
      for (int s = 1; s < nst; s++) {
        char *t = sim_stmt_text(stmts[s]);
        tir_sb_printf(&more, "\n  also written by differing elements: %s", t ? t : "?");
        free(t);
      }
      for (int h = 0; h < S->rep->n_hints && h < 3; h++) tir_sb_printf(&more, "\n  hint: %s", S->rep->hints[h]);
      if (!(p && p->stmt)) S->cta[0] = S->cta[1] = S->cta[2] = -1;
      S->issue_tail = more.data;
      rc = sim_issue(S, "mismatch", p ? p->stmt : NULL, p && p->stmt ? p->tid : -1, NULL, -1, b->name, first, n,
                     "%s differs from the oracle (the interpreter) at %lld of %lld elements: %s; the first differing element was %s%s%s",
                     b->name, (long long)bad, (long long)n, ex.data ? ex.data : "",
                     p && p->stmt ? "last written by " : "never written by the simulated kernels", who,
                     "");
      S->issue_tail = NULL;
      tir_sb_free(&more);
    }
    tir_sb_free(&ex);
  }
  return rc;
}

int tir_simulate(const tir_PrimFunc *lowered, const tir_PrimFunc *host, const tir_InterpArg *args, int nargs,
                 const tir_SimOptions *opts, tir_SimReport *rep) {
  memset(rep, 0, sizeof *rep);
  tir_SimOptions dflt;
  memset(&dflt, 0, sizeof dflt);
  dflt.check = 1;
  if (!opts) opts = &dflt;
  if (tir_check_args(host, args, nargs, TIR_DEV_CPU, "simulate") != 0) return -1;
  tir_DeviceSplit split;
  if (tir_split_host_device(lowered, host, &split) != 0) return -1;
  Sim *S = calloc(1, sizeof *S);
  S->opt = opts;
  S->rep = rep;
  S->check = opts->check;
  S->max_issues = opts->max_issues > 0 ? opts->max_issues : 100;
  for (int i = 0; i < SIM_MAX_THREADS; i++) S->all_ids[i] = i;
  S->epoch = 1;
  S->cta[0] = S->cta[1] = S->cta[2] = -1;
  tir_Analyzer *an = tir_analyzer_new();
  int rc = bind_host(S, host, args, nargs, an);
  if (!rc) rc = alloc_temps(S, &split, an);
  S->n_global = S->n_st;
  S->kbdim = calloc((size_t)split.n_kernels + 1, sizeof *S->kbdim);
  for (int k = 0; k < split.n_kernels && !rc; k++) rc = run_kernel(S, &split, k, host, args, an);
  tir_analyzer_free(an);
  if (!rc && opts->expected) rc = compare(S, host, args, nargs, &split);
  sim_async_free(S);
  sim_mbarrier_free(S);
  sim_wgmma_free(S);
  sim_sync_free(S);
  sim_task_free(S);
  sim_map_free(&S->syncmap);
  sim_free_stores(S, 0);
  sim_map_free(&S->stmap);
  sim_map_free(&S->vars);
  for (int i = 0; i < S->n_vv; i++) free(S->vv[i]);
  free(S->vv);
  for (int i = 0; i < S->vcap; i++) free(S->vpool[i]);
  free(S->vpool);
  for (int i = 0; i < S->icap; i++) free(S->ipool[i]);
  free(S->ipool);
  free(S->st);
  free(S->reported);
  free(S->kbdim);
  free(S->hinted);
  free(S);
  tir_device_split_free(&split);
  return rc ? -1 : 0;
}

void tir_sim_report_free(tir_SimReport *rep) {
  if (!rep) return;
  for (int i = 0; i < rep->n_kept; i++) {
    tir_SimIssue *is = &rep->issues[i];
    free(is->message);
    free(is->kernel);
    free(is->statement);
    free(is->other_statement);
    free(is->buffer);
  }
  free(rep->issues);
  for (int i = 0; i < rep->n_hints; i++) free(rep->hints[i]);
  free(rep->hints);
  memset(rep, 0, sizeof *rep);
}
