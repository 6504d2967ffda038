/* embed.c -- a C host embedding tirlua (include/tir/tirlua.h):
**
**   embed scripts/examples/embed_kernel.lua
**
** Opens a Lua state with tir loaded, runs the script, calls its make_matmul(M, N, K) to
** get a scheduled function and a built module, then works from C alone: creates arrays
** (runtime.h), launches the module on the GPU when one exists or runs the function on
** the CPU interpreter otherwise (interp.h), and compares with the float64 reference GEMM.
** Prints "embed: ok ..." or the error, exit status 1 on failure.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "tir/codegen.h"
#include "tir/dlpack_interop.h"
#include "tir/error.h"
#include "tir/interp.h"
#include "tir/runtime.h"
#include "tir/tirlua.h"

enum { M = 40, N = 24, K = 20 };

static int fail_core(const char *what) {
  char *msg = tir_error_render(tir_error_get());
  fprintf(stderr, "embed: %s: %s\n", what, msg);
  free(msg);
  return EXIT_FAILURE;
}

/* Runs C = A @ B through the module (GPU) or the interpreter, compares with the reference. */
static int run_from_c(const tir_PrimFunc *func, tir_BuiltModule *mod) {
  const tir_Device cpu = {TIR_DEV_CPU, 0}, gpu = {TIR_DEV_CUDA, 0};
  int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
  int rc = EXIT_FAILURE, on_gpu = tir_cuda_available(NULL, 0);
  tir_NDArray *a = tir_nd_empty(sa, 2, TIR_FLOAT32, cpu), *b = tir_nd_empty(sb, 2, TIR_FLOAT32, cpu);
  tir_NDArray *c = tir_nd_empty(sc, 2, TIR_FLOAT32, cpu), *ref = tir_nd_empty(sc, 2, TIR_FLOAT64, cpu);
  tir_NDArray *da = NULL, *db = NULL, *dc = NULL;
  if (!a || !b || !c || !ref || tir_nd_fill_random(a, 1, -1, 1) || tir_nd_fill_random(b, 2, -1, 1)) {
    rc = fail_core("arrays");
    goto done;
  }
  if (on_gpu) {
    da = tir_nd_to(a, gpu), db = tir_nd_to(b, gpu), dc = tir_nd_to(c, gpu);
    tir_InterpArg args[3] = {{da, 0, 0}, {db, 0, 0}, {dc, 0, 0}};
    if (!da || !db || !dc || tir_module_run(mod, args, 3) || tir_nd_copy(c, dc)) {
      rc = fail_core("launch");
      goto done;
    }
  } else {
    tir_InterpArg args[3] = {{a, 0, 0}, {b, 0, 0}, {c, 0, 0}};
    if (tir_interpret(func, args, 3)) {
      rc = fail_core("interpret");
      goto done;
    }
  }
  if (tir_ref_gemm_host(a, b, ref, 0, 0)) {
    rc = fail_core("reference");
    goto done;
  }
  double max_err = 0;
  for (int64_t i = 0; i < (int64_t)M * N; i++) {
    double e = fabs(tir_nd_get_f(c, i) - tir_nd_get_f(ref, i));
    if (!(e <= max_err)) max_err = e; /* NaN propagates */
  }
  if (!(max_err < 1e-4)) {
    fprintf(stderr, "embed: result differs from the reference (max abs error %g)\n", max_err);
    goto done;
  }
  printf("embed: ok (%s, %dx%dx%d, max abs error %.3g, module %s)\n", on_gpu ? "GPU" : "CPU interpreter", M, N, K,
         max_err, tir_module_arch(mod));
  rc = EXIT_SUCCESS;
done:
  tir_nd_release(a), tir_nd_release(b), tir_nd_release(c), tir_nd_release(ref);
  tir_nd_release(da), tir_nd_release(db), tir_nd_release(dc);
  return rc;
}

/* DLPack: lends a host buffer to Lua's double_dlpack as a DLManagedTensor (no copy), checks
** that the values were doubled in place, reads the tensor it returns and calls its deleter. */
static int host_deleted;
static void host_deleter(DLManagedTensor *t) { host_deleted++; (void)t; }

static int dlpack_round_trip(lua_State *L) {
  static float buf[16] __attribute__((aligned(64)));
  static int64_t shape[1] = {16};
  for (int i = 0; i < 16; i++) buf[i] = (float)i;
  DLManagedTensor mt = {{buf, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, NULL, 0}, NULL, host_deleter};
  lua_getglobal(L, "double_dlpack");
  lua_pushlightuserdata(L, &mt);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
    fprintf(stderr, "embed: double_dlpack: %s\n", luaL_tolstring(L, -1, NULL));
    return -1;
  }
  DLManagedTensor *out = lua_touserdata(L, -1);
  lua_pop(L, 1);
  lua_gc(L, LUA_GCCOLLECT); /* the array viewing buf is collected: our deleter runs */
  int ok = out != NULL && host_deleted == 1 && out->dl_tensor.ndim == 1 && out->dl_tensor.shape[0] == 16;
  for (int i = 0; ok && i < 16; i++) ok = buf[i] == 2.0f * i && ((float *)out->dl_tensor.data)[i] == 2.0f * i;
  if (out) out->deleter(out);
  if (!ok) {
    fprintf(stderr, "embed: DLPack round trip gave wrong values or deleter calls (%d)\n", host_deleted);
    return -1;
  }
  printf("embed: DLPack ok (a host buffer doubled in place by tirlua, a tirlua tensor read by the host)\n");
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s embed_kernel.lua\n", argv[0]);
    return EXIT_FAILURE;
  }
  lua_State *L = luaL_newstate();
  if (!L) return EXIT_FAILURE;
  luaL_openlibs(L);
  int rc = EXIT_FAILURE;
  if (tirlua_openlibs(L) != 0 || tirlua_dofile(L, argv[1]) != 0) {
    fprintf(stderr, "embed: %s\n", lua_tostring(L, -1));
    goto done;
  }
  lua_getglobal(L, "make_matmul");
  lua_pushinteger(L, M);
  lua_pushinteger(L, N);
  lua_pushinteger(L, K);
  if (lua_pcall(L, 3, 2, 0) != LUA_OK) {
    fprintf(stderr, "embed: make_matmul: %s\n", luaL_tolstring(L, -1, NULL));
    goto done;
  }
  const tir_PrimFunc *func = tirlua_tofunc(L, -2);
  tir_BuiltModule *mod = tirlua_tomodule(L, -1);
  if (!func || !mod) {
    fprintf(stderr, "embed: make_matmul must return a function and a module\n");
    goto done;
  }
  rc = run_from_c(func, mod); /* the Lua values keep func and mod alive */
  if (rc == 0 && dlpack_round_trip(L) != 0) rc = EXIT_FAILURE;
done:
  lua_close(L);
  return rc;
}
