/* scope.c -- storage scopes parsed once (include/tir/scope.h). */
#include "tir/scope.h"

#include <ctype.h>
#include <string.h>

tir_Scope tir_scope_parse(const char *s) {
  static const struct {
    const char *name;
    tir_ScopeRank rank;
    const char *tag; /* the one tag that may follow the name (".dyn"), or NULL */
  } names[] = {{"global", TIR_SCOPE_GLOBAL, ".zeroed"}, {"shared", TIR_SCOPE_SHARED, ".dyn"},
               {"warp", TIR_SCOPE_WARP, NULL},             {"local", TIR_SCOPE_LOCAL, NULL},
               {"register", TIR_SCOPE_LOCAL, NULL},        {"wmma.matrix_a", TIR_SCOPE_WMMA_MATRIX_A, NULL},
               {"wmma.matrix_b", TIR_SCOPE_WMMA_MATRIX_B, NULL}, {"wmma.accumulator", TIR_SCOPE_WMMA_ACCUMULATOR, NULL},
               {"wgmma.accumulator", TIR_SCOPE_WGMMA_ACCUMULATOR, NULL},
               {"wgmma.matrix_a", TIR_SCOPE_WGMMA_MATRIX_A, NULL}};
  tir_Scope r = {TIR_SCOPE_UNKNOWN, ""};
  if (!s || !*s) return (tir_Scope){TIR_SCOPE_GLOBAL, ""};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    size_t n = strlen(names[i].name);
    if (strncmp(s, names[i].name, n) != 0) continue;
    if (s[n] == 0 || (names[i].tag && strcmp(s + n, names[i].tag) == 0)) return (tir_Scope){names[i].rank, s + n};
  }
  /* TVM's mma fragment scopes: m16n8k<digits>.matrixA|B|C */
  if (strncmp(s, "m16n8k", 6) == 0 && isdigit((unsigned char)s[6])) {
    const char *p = s + 6;
    while (isdigit((unsigned char)*p)) p++;
    if (strcmp(p, ".matrixA") == 0 || strcmp(p, ".matrixB") == 0 || strcmp(p, ".matrixC") == 0)
      return (tir_Scope){TIR_SCOPE_MMA_MATRIX, p};
  }
  return r;
}

int tir_scope_is_global(const char *s) { return tir_scope_parse(s).rank == TIR_SCOPE_GLOBAL; }
int tir_scope_is_zeroed(const char *s) {
  tir_Scope p = tir_scope_parse(s);
  return p.rank == TIR_SCOPE_GLOBAL && strcmp(p.tag, ".zeroed") == 0;
}
int tir_scope_is_shared(const char *s) { return tir_scope_parse(s).rank == TIR_SCOPE_SHARED; }
int tir_scope_is_local(const char *s) { return tir_scope_parse(s).rank == TIR_SCOPE_LOCAL; }
int tir_scope_is_warp(const char *s) { return tir_scope_parse(s).rank == TIR_SCOPE_WARP; }

int tir_scope_is_wmma(const char *s) {
  tir_ScopeRank r = tir_scope_parse(s).rank;
  return r == TIR_SCOPE_WMMA_MATRIX_A || r == TIR_SCOPE_WMMA_MATRIX_B || r == TIR_SCOPE_WMMA_ACCUMULATOR;
}

int tir_scope_is_wgmma(const char *s) {
  tir_ScopeRank r = tir_scope_parse(s).rank;
  return r == TIR_SCOPE_WGMMA_ACCUMULATOR || r == TIR_SCOPE_WGMMA_MATRIX_A;
}

int tir_scope_is_fragment(const char *s) { return tir_scope_is_wmma(s) || tir_scope_is_warp(s) || tir_scope_is_wgmma(s); }

int tir_scope_splits(const char *s, const char *tag) {
  int block = tag && strncmp(tag, "blockIdx.", 9) == 0;
  switch (tir_scope_parse(s).rank) {
    case TIR_SCOPE_GLOBAL: return 0;
    case TIR_SCOPE_SHARED: return block;
    case TIR_SCOPE_WARP:
    case TIR_SCOPE_WGMMA_ACCUMULATOR:
    case TIR_SCOPE_WGMMA_MATRIX_A:
      return block || (tag && (strcmp(tag, "threadIdx.y") == 0 || strcmp(tag, "threadIdx.z") == 0));
    default: return 1; /* local, wmma fragments, anything narrower */
  }
}

int tir_scope_lanes_per_element(const char *s) {
  switch (tir_scope_parse(s).rank) {
    case TIR_SCOPE_GLOBAL:
    case TIR_SCOPE_SHARED: return 0;
    case TIR_SCOPE_LOCAL: return 1;
    case TIR_SCOPE_WGMMA_ACCUMULATOR:
    case TIR_SCOPE_WGMMA_MATRIX_A: return 128;
    default: return 32;
  }
}

int tir_scope_valid(const char *s) {
  if (!s || !*s || strcmp(s, "register") == 0) return 0;
  return tir_scope_parse(s).rank != TIR_SCOPE_UNKNOWN;
}

const char *tir_scope_valid_list(void) {
  return "global, shared, shared.dyn, local, warp, wmma.matrix_a, wmma.matrix_b, wmma.accumulator, m16n8k<k>.matrixA|B|C, "
         "wgmma.accumulator, wgmma.matrix_a";
}
