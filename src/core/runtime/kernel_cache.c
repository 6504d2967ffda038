/* kernel_cache.c -- the on-disk kernel cache (include/tir/kernel_cache.h).
 *
 * Entry file <dir>/<32 hex digits>.tkc, little-endian as this machine writes it:
 *   "TIRLUAKC"  magic (8 bytes)
 *   u32 format version, u32 reserved (0)
 *   u64 key bytes, u64 ptx bytes, u64 cubin bytes
 *   u64 FNV-1a 64 checksum of key || ptx || cubin
 *   key, ptx, cubin
 * A file whose size, magic, version or checksum disagree is damaged.
 */
#define _GNU_SOURCE
#include "tir/kernel_cache.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAGIC "TIRLUAKC"
#define FORMAT_VERSION 1u
#define HEADER_BYTES (8 + 4 + 4 + 4 * 8)
#define SUFFIX ".tkc"

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

long long tir_kcache_limit(void) {
  const char *v = getenv("TIRLUA_CACHE_MAX_MB");
  if (v && *v) {
    char *end;
    errno = 0;
    long long mb = strtoll(v, &end, 10);
    if (errno == 0 && *end == '\0' && mb >= 0 && mb <= (1LL << 40)) return mb * 1024 * 1024;
    static int warned;
    if (!warned) {
      warned = 1;
      fprintf(stderr, "kernel cache: TIRLUA_CACHE_MAX_MB=%s is not a number of MiB >= 0; using %d\n", v,
              TIR_KCACHE_DEFAULT_MAX_MB);
    }
  }
  return (long long)TIR_KCACHE_DEFAULT_MAX_MB * 1024 * 1024;
}

typedef struct {
  char name[64];
  long long bytes;
  struct timespec used;
} Entry;

static int older_first(const void *a, const void *b) {
  const Entry *x = a, *y = b;
  if (x->used.tv_sec != y->used.tv_sec) return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
  if (x->used.tv_nsec != y->used.tv_nsec) return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
  return strcmp(x->name, y->name);
}

long tir_kcache_evict(long long max_bytes) {
  char dir[PATH_MAX], path[PATH_MAX];
  if (tir_kcache_dir(dir, sizeof dir) < 0) return -1;
  DIR *d = opendir(dir);
  if (!d) return errno == ENOENT ? 0 : -1;
  Entry *es = NULL;
  size_t n = 0, cap = 0;
  long long total = 0;
  time_t now = time(NULL);
  long removed = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    struct stat st;
    if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) continue;
    if (strncmp(e->d_name, "tmp.", 4) == 0) {
      /* a temporary file a crashed writer left behind (a live writer renames within seconds) */
      if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && now - st.st_mtime > 3600 && unlink(path) == 0) removed++;
      continue;
    }
    if (!ends_with(e->d_name, SUFFIX) || strlen(e->d_name) >= sizeof es[0].name) continue;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (n == cap) {
      size_t nc = cap ? cap * 2 : 64;
      Entry *ne = realloc(es, nc * sizeof *ne);
      if (!ne) break;
      es = ne;
      cap = nc;
    }
    strcpy(es[n].name, e->d_name);
    es[n].bytes = st.st_size;
    es[n].used = st.st_mtim;
    total += st.st_size;
    n++;
  }
  closedir(d);
  if (total > max_bytes) {
    /* down to 90 % of the limit, so that every store does not evict again */
    long long target = max_bytes - max_bytes / 10;
    qsort(es, n, sizeof *es, older_first);
    for (size_t i = 0; i < n && total > target; i++) {
      if (snprintf(path, sizeof path, "%s/%s", dir, es[i].name) >= (int)sizeof path) continue;
      if (unlink(path) == 0) {
        total -= es[i].bytes;
        removed++;
      }
    }
  }
  free(es);
  return removed;
}

static uint64_t fnv1a(uint64_t h, const void *data, size_t len) {
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

#define FNV_BASIS 0xcbf29ce484222325ULL
#define FNV_BASIS2 0x84222325cbf29ce4ULL /* the second lane: another start, so the lanes differ */

void tir_kcache_hash(const char *data, size_t len, char out[33]) {
  uint64_t a = fnv1a(FNV_BASIS, data, len);
  uint64_t b = fnv1a(FNV_BASIS2, data, len);
  b = fnv1a(b, &a, sizeof a); /* mix the first lane in: b is not a function of a's bits alone */
  snprintf(out, 33, "%016llx%016llx", (unsigned long long)a, (unsigned long long)b);
}

static int env_off(void) {
  const char *v = getenv("TIRLUA_CACHE");
  if (v == NULL) return 0;
  return strcmp(v, "0") == 0 || strcasecmp(v, "off") == 0 || strcasecmp(v, "no") == 0 || strcasecmp(v, "false") == 0;
}

static pthread_mutex_t dir_lock = PTHREAD_MUTEX_INITIALIZER;
static char dir_override[PATH_MAX]; /* tir_kcache_set_dir's directory, "" when unset */
static int off_override;            /* 1: set_dir turned the cache off */

void tir_kcache_set_dir(const char *dir, int enabled) {
  pthread_mutex_lock(&dir_lock);
  if (dir == NULL || strlen(dir) >= sizeof dir_override) dir = "";
  strcpy(dir_override, dir);
  off_override = !enabled;
  pthread_mutex_unlock(&dir_lock);
}

int tir_kcache_dir(char *out, size_t cap) {
  char over[PATH_MAX];
  int off, n;
  const char *d;
  pthread_mutex_lock(&dir_lock);
  strcpy(over, dir_override);
  off = off_override;
  pthread_mutex_unlock(&dir_lock);
  if (over[0])
    n = snprintf(out, cap, "%s", over);
  else if ((d = getenv("TIRLUA_CACHE_DIR")) && *d)
    n = snprintf(out, cap, "%s", d);
  else if ((d = getenv("XDG_CACHE_HOME")) && *d)
    n = snprintf(out, cap, "%s/tirlua", d);
  else if ((d = getenv("HOME")) && *d)
    n = snprintf(out, cap, "%s/.cache/tirlua", d);
  else
    n = -1;
  if (n < 0 || (size_t)n >= cap) {
    if (cap) out[0] = '\0';
    return -1;
  }
  return off || env_off() ? 0 : 1;
}

/* mkdir -p of path (modifies a copy). */
static int make_dirs(const char *path) {
  char buf[PATH_MAX];
  if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return -1;
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
  return 0;
}

static int entry_path(const char *key, char *out, size_t cap) {
  char dir[PATH_MAX], h[33];
  if (tir_kcache_dir(dir, sizeof dir) != 1) return -1;
  tir_kcache_hash(key, strlen(key), h);
  int n = snprintf(out, cap, "%s/%s" SUFFIX, dir, h);
  return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* Damaged entries already reported by this process (by file name), so each is said once. */
static pthread_mutex_t reported_lock = PTHREAD_MUTEX_INITIALIZER;
static char reported[64][40];
static int n_reported;

static void report_damage(const char *path, const char *why) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  pthread_mutex_lock(&reported_lock);
  for (int i = 0; i < n_reported; i++)
    if (strncmp(reported[i], base, sizeof reported[i] - 1) == 0) {
      pthread_mutex_unlock(&reported_lock);
      return;
    }
  if (n_reported < 64) {
    size_t len = strlen(base);
    if (len >= sizeof reported[0]) len = sizeof reported[0] - 1; /* entry names are 36 bytes */
    memcpy(reported[n_reported], base, len);
    reported[n_reported++][len] = '\0';
  }
  pthread_mutex_unlock(&reported_lock);
  fprintf(stderr, "tirlua: kernel cache: entry %s is damaged (%s); not loaded, rebuilding it\n", path, why);
}

/* A directory the cache cannot write (a store that failed): said once per directory and process
 * with the reason, so that a build whose mod:cache_status() is "off" for this reason does not
 * leave the user guessing (the build itself goes on: the cache is an optimization). */
static void report_store_failure(const char *dir, const char *what, int err) {
  static char last[PATH_MAX];
  pthread_mutex_lock(&reported_lock);
  int seen = strcmp(last, dir) == 0;
  if (!seen) snprintf(last, sizeof last, "%s", dir);
  pthread_mutex_unlock(&reported_lock);
  if (!seen)
    fprintf(stderr, "tirlua: kernel cache: %s: cannot %s (%s); kernels are not cached (set TIRLUA_CACHE_DIR, or "
            "TIRLUA_CACHE=0)\n", dir, what, strerror(err));
}

static uint64_t get_u64(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

static uint32_t get_u32(const unsigned char *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

int tir_kcache_lookup(const char *key, char **ptx, char **cubin, size_t *cubin_len) {
  char path[PATH_MAX];
  *ptx = NULL;
  *cubin = NULL;
  *cubin_len = 0;
  if (entry_path(key, path, sizeof path) != 0) return 0;
  FILE *f = fopen(path, "rb");
  if (!f) return 0; /* a miss */
  unsigned char hdr[HEADER_BYTES];
  unsigned char *body = NULL;
  const char *why = NULL;
  struct stat st;
  int hit = 0;
  if (fstat(fileno(f), &st) != 0) goto done;
  if (fread(hdr, 1, sizeof hdr, f) != sizeof hdr) {
    why = "shorter than its header";
    goto done;
  }
  if (memcmp(hdr, MAGIC, 8) != 0) {
    why = "not a tirlua cache entry";
    goto done;
  }
  if (get_u32(hdr + 8) != FORMAT_VERSION) goto done; /* another format: a miss, overwritten */
  uint64_t nk = get_u64(hdr + 16), np = get_u64(hdr + 24), nc = get_u64(hdr + 32), sum = get_u64(hdr + 40);
  if (nk > (uint64_t)st.st_size || np > (uint64_t)st.st_size || nc > (uint64_t)st.st_size ||
      (uint64_t)st.st_size != HEADER_BYTES + nk + np + nc) {
    why = "its size does not match its header (truncated?)";
    goto done;
  }
  size_t total = (size_t)(nk + np + nc);
  body = malloc(total + 1);
  if (!body) goto done;
  if (fread(body, 1, total, f) != total) {
    why = "truncated";
    goto done;
  }
  if (fnv1a(FNV_BASIS, body, total) != sum) {
    why = "checksum mismatch";
    goto done;
  }
  if (nk != strlen(key) || memcmp(body, key, nk) != 0) goto done; /* a hash collision: a miss */
  *ptx = malloc(np + 1);
  *cubin = malloc(nc ? nc : 1);
  if (!*ptx || !*cubin) {
    free(*ptx);
    free(*cubin);
    *ptx = *cubin = NULL;
    goto done;
  }
  memcpy(*ptx, body + nk, np);
  (*ptx)[np] = '\0';
  memcpy(*cubin, body + nk + np, nc);
  *cubin_len = nc;
  hit = 1;
  futimens(fileno(f), NULL); /* the entry's mtime is its last use: eviction removes the oldest */
done:
  if (why) report_damage(path, why);
  free(body);
  fclose(f);
  return hit;
}

static int write_all(int fd, const void *data, size_t len) {
  const char *p = data;
  while (len) {
    ssize_t n = write(fd, p, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

int tir_kcache_store(const char *key, const char *ptx, const char *cubin, size_t cubin_len) {
  char dir[PATH_MAX], path[PATH_MAX], tmp[PATH_MAX];
  if (tir_kcache_dir(dir, sizeof dir) != 1) return -1;
  if (entry_path(key, path, sizeof path) != 0) return -1;
  if (make_dirs(dir) != 0) {
    report_store_failure(dir, "create the directory", errno);
    return -1;
  }
  if (snprintf(tmp, sizeof tmp, "%s/tmp.XXXXXX", dir) >= (int)sizeof tmp) return -1;
  int fd = mkstemp(tmp);
  if (fd < 0) {
    report_store_failure(dir, "create a file", errno);
    return -1;
  }
  uint64_t nk = strlen(key), np = strlen(ptx), nc = cubin_len;
  uint64_t sum = fnv1a(fnv1a(fnv1a(FNV_BASIS, key, nk), ptx, np), cubin, nc);
  unsigned char hdr[HEADER_BYTES];
  uint32_t ver = FORMAT_VERSION, zero = 0;
  memcpy(hdr, MAGIC, 8);
  memcpy(hdr + 8, &ver, 4);
  memcpy(hdr + 12, &zero, 4);
  memcpy(hdr + 16, &nk, 8);
  memcpy(hdr + 24, &np, 8);
  memcpy(hdr + 32, &nc, 8);
  memcpy(hdr + 40, &sum, 8);
  int bad = write_all(fd, hdr, sizeof hdr) || write_all(fd, key, nk) || write_all(fd, ptx, np) ||
            write_all(fd, cubin, nc);
  if (close(fd) != 0) bad = 1;
  if (bad || rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    report_store_failure(dir, "write an entry", e);
    return -1;
  }
  tir_kcache_evict(tir_kcache_limit());
  return 0;
}


int tir_kcache_info(long *entries, long long *bytes) {
  char dir[PATH_MAX], path[PATH_MAX];
  *entries = 0;
  *bytes = 0;
  if (tir_kcache_dir(dir, sizeof dir) < 0) return -1;
  DIR *d = opendir(dir);
  if (!d) return errno == ENOENT ? 0 : -1;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    struct stat st;
    if (!ends_with(e->d_name, SUFFIX)) continue;
    if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) continue;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
    (*entries)++;
    *bytes += st.st_size;
  }
  closedir(d);
  return 0;
}

long tir_kcache_clear(void) {
  char dir[PATH_MAX], path[PATH_MAX];
  long n = 0;
  if (tir_kcache_dir(dir, sizeof dir) < 0) return -1;
  DIR *d = opendir(dir);
  if (!d) return errno == ENOENT ? 0 : -1;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (!ends_with(e->d_name, SUFFIX) && strncmp(e->d_name, "tmp.", 4) != 0) continue;
    if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) continue;
    if (unlink(path) == 0) n++;
  }
  closedir(d);
  return n;
}
