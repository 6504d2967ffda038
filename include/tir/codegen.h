/* codegen.h -- CUDA C from lowered TensorIR, NVRTC compilation, built modules.
 *
 * tir_build runs the whole chain: lower (transform.h), split host/device, emit CUDA C,
 * compile with NVRTC to PTX and CUBIN for the target architecture.  The module keeps
 * every stage (lowered IR, per-pass dumps, CUDA C, PTX, CUBIN) and launches its kernels
 * on CUDA arrays after checking them against the function's parameters.
 */
#ifndef TIR_CODEGEN_H
#define TIR_CODEGEN_H

#include "tir/interp.h"
#include "tir/runtime.h"
#include "tir/transform.h"

/* CUDA C for the kernels of a split function (malloc'd), or NULL with the error set. */
char *tir_codegen_cuda(const tir_DeviceSplit *split, const char *arch);

typedef struct {
  int dump_ir;        /* keep the IR after each pass */
  int skip_compile;   /* stop after codegen (no NVRTC) */
  int unroll_max_extent;
  char arch[32];      /* "" = the device's, else sm_90 */
  int no_cache;       /* do not look up or store the kernels in the on-disk cache (kernel_cache.h) */
} tir_BuildOptions;

typedef struct tir_BuiltModule tir_BuiltModule;

tir_BuiltModule *tir_build(const tir_PrimFunc *f, const tir_BuildOptions *opts);
void tir_module_free(tir_BuiltModule *m);
/* "cuda", "ptx", "ir" (the lowered function) or "host"; NULL when missing (no PTX when
 * skip_compile).  Borrowed strings valid while the module lives. */
const char *tir_module_source(tir_BuiltModule *m, const char *kind);
const char *tir_module_arch(const tir_BuiltModule *m);
const tir_PrimFunc *tir_module_func(const tir_BuiltModule *m);
const tir_PrimFunc *tir_module_lowered(const tir_BuiltModule *m);
int tir_module_num_dumps(const tir_BuiltModule *m);
void tir_module_dump(const tir_BuiltModule *m, int i, const char **pass, const char **ir);
int tir_module_num_kernels(const tir_BuiltModule *m);
const tir_Kernel *tir_module_kernel(const tir_BuiltModule *m, int i);
/* Runs all kernels on CUDA arrays (checked first) and synchronizes. */
int tir_module_run(tir_BuiltModule *m, const tir_InterpArg *args, int nargs);
/* The same without synchronizing: the kernels are queued on the default stream and may still
 * run when it returns (a module with global temporaries synchronizes before freeing them).
 * Errors of the kernels themselves show at the next synchronization. */
int tir_module_launch(tir_BuiltModule *m, const tir_InterpArg *args, int nargs);
/* Times the kernels with CUDA events (no per-call sync): median seconds per call. */
int tir_module_time(tir_BuiltModule *m, const tir_InterpArg *args, int nargs, int warmup, int number, int repeat,
                    double *median_s, double *samples_s);
/* Registers / local (spill) bytes / static shared bytes of kernel i, once loaded. */
/* Compiles a module built with skip_compile (no-op when it has PTX): cache lookup or NVRTC,
 * as tir_build does.  -1 with the error set. */
int tir_module_compile(tir_BuiltModule *m);
/* Compiles the modules of ms (NULL entries and compiled ones are skipped) on up to n_threads
 * threads (NVRTC is the slow part of a build: ~60-300 ms a kernel).  Returns how many failed
 * (each failure is kept with its module: tir_module_compile_error), or -1 with the error set
 * when NVRTC cannot be loaded at all. */
int tir_module_compile_many(tir_BuiltModule **ms, int n, int n_threads);
/* The same in the background: starts the threads and returns at once (NULL with the error set
 * when NVRTC cannot be loaded).  The modules must stay alive and must not be compiled, freed
 * or launched until tir_module_compile_wait(job) returns (other modules may be used meanwhile:
 * a tuner measures the last batch while the next one compiles).  wait returns how many failed
 * and frees the job. */
typedef struct tir_CompileJob tir_CompileJob;
tir_CompileJob *tir_module_compile_start(tir_BuiltModule **ms, int n, int n_threads);
int tir_module_compile_wait(tir_CompileJob *job);
/* 0 when the module's last tir_module_compile_many attempt did not fail; else sets this
 * thread's error to that failure and returns -1. */
int tir_module_compile_error(const tir_BuiltModule *m);
/* How the module's PTX/CUBIN were obtained: "hit" (the on-disk cache), "miss" (NVRTC, then
 * stored), "off" (NVRTC; cache disabled or not writable), "none" (not compiled). */
const char *tir_module_cache_status(const tir_BuiltModule *m);
int tir_module_kernel_resources(tir_BuiltModule *m, int i, int dev, int *regs, int *local_bytes, int *smem_bytes);

#endif
