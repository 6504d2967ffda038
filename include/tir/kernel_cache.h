/* kernel_cache.h -- the on-disk cache of compiled kernels (PTX + CUBIN).
 *
 * tir_build looks a module's kernels up here before calling NVRTC, and stores what NVRTC made.
 * An entry is keyed by its key text: the format version, the target arch, the NVRTC and CUDA
 * driver versions, the compile options, the structural hash of the lowered function and the
 * whole generated CUDA C.  The file name is a 128-bit hash of that text; the entry stores the
 * text itself and a lookup compares it byte for byte, so a hash collision is a miss, never a
 * wrong kernel.
 *
 * Where: $TIRLUA_CACHE_DIR, else $XDG_CACHE_HOME/tirlua, else $HOME/.cache/tirlua.
 * Off: TIRLUA_CACHE=0 (or off/no/false) in the environment, or tir.build's {cache = false}.
 * Concurrency: an entry is written to a temporary file in the cache directory and renamed
 * into place (rename(2) is atomic), so readers see a whole entry or none; several processes
 * building the same kernel at once each write a complete copy and the last rename wins.
 * Size: at most $TIRLUA_CACHE_MAX_MB MiB (default TIR_KCACHE_DEFAULT_MAX_MB); a store that
 * passes the limit removes the least recently used entries (a hit updates an entry's mtime)
 * down to 90 % of it, and temporary files older than an hour (a crashed writer's).
 * Damage: every entry carries its sizes and an FNV-1a checksum of its payload; a truncated or
 * corrupted entry is reported once per process on stderr, never loaded, and rebuilt.
 */
#ifndef TIR_KERNEL_CACHE_H
#define TIR_KERNEL_CACHE_H

#include <stddef.h>
#include <stdint.h>

/* The cache directory in out (cap bytes); returns 1 when the cache is enabled by the
 * environment, 0 when TIRLUA_CACHE turns it off (out is still filled), -1 when no directory
 * can be named (no HOME): then the cache is off. */
int tir_kcache_dir(char *out, size_t cap);

/* Overrides the directory for this process (dir NULL or "": back to the environment's) and
 * turns the cache on or off (enabled 0: off, whatever the environment says). */
void tir_kcache_set_dir(const char *dir, int enabled);

/* Looks key up.  Returns 1 on a hit with *ptx (NUL-terminated) and *cubin (*cubin_len bytes)
 * malloc'd for the caller, 0 on a miss (including a damaged entry, reported on stderr once).
 * Never fails otherwise: an unreadable cache is a miss. */
int tir_kcache_lookup(const char *key, char **ptx, char **cubin, size_t *cubin_len);

/* Stores an entry for key (best effort: returns 0 when written, -1 when the directory
 * cannot be created or written; the build goes on either way). */
int tir_kcache_store(const char *key, const char *ptx, const char *cubin, size_t cubin_len);

/* Entries (files named *.tkc) and their total bytes in the cache directory. */
int tir_kcache_info(long *entries, long long *bytes);

/* Removes every entry and leftover temporary file; returns how many files were removed,
 * or -1 when the directory cannot be read (a missing directory removes 0). */
long tir_kcache_clear(void);

#define TIR_KCACHE_DEFAULT_MAX_MB 1024

/* The size limit in bytes: $TIRLUA_CACHE_MAX_MB MiB, else TIR_KCACHE_DEFAULT_MAX_MB MiB (a value
 * that is not a whole number >= 0 is reported once on stderr and the default used). */
long long tir_kcache_limit(void);

/* Removes least-recently-used entries until the cache holds at most 90 % of max_bytes (nothing
 * when it holds max_bytes or less), and stale temporary files; returns the files removed, or -1
 * when the directory cannot be read.  tir_kcache_store calls it with tir_kcache_limit(). */
long tir_kcache_evict(long long max_bytes);

/* 128-bit hash of a byte string as 32 hex digits in out[33] (two FNV-1a 64 lanes with
 * different bases; not cryptographic: the stored key text settles equality). */
void tir_kcache_hash(const char *data, size_t len, char out[33]);

#endif
