/*
 * srcctx.c - source lines around a frame, from debuginfod, cached on disk
 * (fl_srcctx.h says what and why).
 */
#define _GNU_SOURCE
#include "fl_srcctx.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <elfutils/debuginfod.h>
#include <jansson.h>

#include "fl_srvutil.h"

#define HEADER_MAGIC "FLSRC1 "
#define NAME_LEN 64 /* hex of a SHA-256 */

struct fl_srcctx {
    char *dir;
    uint64_t bound;
    size_t max_file;
    pthread_mutex_t mu;
    uint64_t bytes; /* the cache's files, as counted (under mu) */
};

/* The size of the cache's files; leftovers of a writer killed before its
 * rename go. */
static uint64_t scan_bytes(const char *dir)
{
    uint64_t sum = 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
            continue;
        if (!strncmp(e->d_name, "tmp.", 4))
            unlinkat(dirfd(d), e->d_name, 0);
        else
            sum += (uint64_t)st.st_size;
    }
    closedir(d);
    return sum;
}

int fl_srcctx_new(const fl_srcctx_config *cfg, fl_srcctx **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!cfg || !cfg->cache_dir) {
        snprintf(err, errlen, "source cache: no directory");
        return -1;
    }
    if (mkdir(cfg->cache_dir, 0700) && errno != EEXIST) {
        snprintf(err, errlen, "source cache %s: %s", cfg->cache_dir, strerror(errno));
        return -1;
    }
    fl_srcctx *s = calloc(1, sizeof *s);
    if (!s || !(s->dir = strdup(cfg->cache_dir))) {
        free(s);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    s->bound = cfg->cache_bytes ? cfg->cache_bytes : FL_SRCCTX_CACHE_BYTES;
    s->max_file = cfg->max_file ? cfg->max_file : FL_SRCCTX_MAX_FILE;
    s->bytes = scan_bytes(s->dir);
    pthread_mutex_init(&s->mu, NULL);
    *out = s;
    return 0;
}

void fl_srcctx_free(fl_srcctx *s)
{
    if (!s)
        return;
    pthread_mutex_destroy(&s->mu);
    free(s->dir);
    free(s);
}

typedef struct entry {
    struct timespec mtime;
    uint64_t size;
    char name[NAME_LEN + 1];
} entry;

static int by_age(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec)
        return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
    if (x->mtime.tv_nsec != y->mtime.tv_nsec)
        return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
    return 0;
}

/* Over the bound: the files used least recently go until the cache holds
 * three quarters of it, so that the next few files do not each cost a
 * scan of the directory.  Under s->mu. */
static void evict_locked(fl_srcctx *s)
{
    DIR *d = opendir(s->dir);
    if (!d)
        return;
    entry *v = NULL;
    size_t n = 0, cap = 0;
    uint64_t sum = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat st;
        if (strlen(e->d_name) != NAME_LEN ||
            fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
            continue;
        if (n == cap) {
            entry *g = realloc(v, (cap = cap ? 2 * cap : 64) * sizeof *v);
            if (!g)
                break;
            v = g;
        }
        v[n].mtime = st.st_mtim;
        v[n].size = (uint64_t)st.st_size;
        memcpy(v[n].name, e->d_name, NAME_LEN + 1);
        sum += v[n++].size;
    }
    if (n) /* v is NULL when no file was seen or the first allocation failed */
        qsort(v, n, sizeof *v, by_age);
    uint64_t goal = s->bound / 4 * 3;
    for (size_t i = 0; i < n && sum > goal; i++)
        if (!unlinkat(dirfd(d), v[i].name, 0))
            sum -= v[i].size;
    closedir(d);
    free(v);
    s->bytes = sum;
}

/* The cache file's name: SHA-256 of build id, NUL, path. */
static void cache_name(const char *build_id, const char *path, char name[NAME_LEN + 1])
{
    size_t a = strlen(build_id), b = strlen(path);
    char *k = malloc(a + b + 1);
    uint8_t h[32];
    if (k) {
        memcpy(k, build_id, a + 1);
        memcpy(k + a + 1, path, b);
        fl_sha256(k, a + 1 + b, h);
        free(k);
    } else {
        memset(h, 0, sizeof h); /* a name that is never written */
    }
    fl_hex(h, sizeof h, name);
    name[NAME_LEN] = '\0';
}

/* Reads fd whole (at most max bytes) into a buffer (caller frees).
 * Returns 0, 1 when larger than max, -1 on a read error or OOM. */
static int slurp(int fd, size_t max, char **buf, size_t *len)
{
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode))
        return -1;
    if ((uint64_t)st.st_size > max)
        return 1;
    size_t n = (size_t)st.st_size, got = 0;
    char *b = malloc(n + 1);
    if (!b)
        return -1;
    while (got < n) {
        ssize_t r = pread(fd, b + got, n - got, (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    *buf = b;
    *len = got;
    return 0;
}

/* The text of a cached file for (build_id, path): 0 with *buf (caller
 * frees) and *text pointing into it after the header, 1 when not cached
 * (or another key's file: a hash collision). */
static int cache_read(fl_srcctx *s, const char *name, const char *build_id, const char *path,
                      char **buf, const char **text, size_t *len)
{
    char fn[PATH_MAX];
    if (snprintf(fn, sizeof fn, "%s/%s", s->dir, name) >= (int)sizeof fn)
        return 1;
    int fd = open(fn, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return 1;
    char *b = NULL;
    size_t n = 0;
    int r = slurp(fd, s->max_file + strlen(build_id) + strlen(path) + 64, &b, &n);
    if (r == 0)
        futimens(fd, NULL); /* used now: the last to be evicted */
    close(fd);
    if (r)
        return 1;
    /* "FLSRC1 BUILDID\nPATH\n" then the file. */
    size_t a = strlen(HEADER_MAGIC), bl = strlen(build_id), pl = strlen(path);
    if (n < a + bl + 1 + pl + 1 || memcmp(b, HEADER_MAGIC, a) || memcmp(b + a, build_id, bl) ||
        b[a + bl] != '\n' || memcmp(b + a + bl + 1, path, pl) || b[a + bl + 1 + pl] != '\n') {
        free(b);
        return 1;
    }
    size_t off = a + bl + 1 + pl + 1;
    *buf = b;
    *text = b + off;
    *len = n - off;
    return 0;
}

/* Writes the cache file (through a temporary file and rename(), so that a
 * reader never sees half of one), then keeps the bound.  A failure only
 * costs the next look a fetch. */
static void cache_write(fl_srcctx *s, const char *name, const char *build_id, const char *path,
                        const char *text, size_t len)
{
    char tmp[PATH_MAX], fn[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s/tmp.XXXXXX", s->dir) >= (int)sizeof tmp ||
        snprintf(fn, sizeof fn, "%s/%s", s->dir, name) >= (int)sizeof fn)
        return;
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        unlink(tmp);
        return;
    }
    fprintf(f, "%s%s\n%s\n", HEADER_MAGIC, build_id, path);
    fwrite(text, 1, len, f);
    long size = ftell(f);
    if (fclose(f) || size < 0 || rename(tmp, fn)) {
        unlink(tmp);
        return;
    }
    pthread_mutex_lock(&s->mu);
    s->bytes += (uint64_t)size;
    if (s->bytes > s->bound)
        evict_locked(s);
    pthread_mutex_unlock(&s->mu);
}

typedef struct fetch_cap {
    long max;
    bool over;
} fetch_cap;

/* libdebuginfod's progress callback: a download past the cap is
 * abandoned there, not read whole first. */
static int progress(debuginfod_client *c, long got, long total)
{
    fetch_cap *cap = debuginfod_get_user_data(c);
    if (got > cap->max || total > cap->max) {
        cap->over = true;
        return 1;
    }
    return 0;
}

/* Asks debuginfod.  0 with *buf (caller frees, *len bytes), FL_SRCCTX_NONE
 * with why. */
static int fetch_source(fl_srcctx *s, const char *build_id, const char *path, char **buf,
                        size_t *len, char *why, size_t whylen)
{
    debuginfod_client *c = debuginfod_begin();
    if (!c) {
        snprintf(why, whylen, "debuginfod: cannot create a client");
        return FL_SRCCTX_ERROR;
    }
    fetch_cap cap = {.max = (long)s->max_file};
    debuginfod_set_user_data(c, &cap);
    debuginfod_set_progressfn(c, progress);
    char *got = NULL;
    int fd = debuginfod_find_source(c, (const unsigned char *)build_id, 0, path, &got);
    debuginfod_end(c);
    if (fd < 0) {
        if (cap.over)
            snprintf(why, whylen, "%s is larger than %zu bytes", path, s->max_file);
        else if (fd == -ENOENT)
            snprintf(why, whylen, "debuginfod has no source for %s of build id %s", path, build_id);
        else
            snprintf(why, whylen, "debuginfod: %s (asking for %s of build id %s)", strerror(-fd),
                     path, build_id);
        free(got);
        return FL_SRCCTX_NONE;
    }
    int r = slurp(fd, s->max_file, buf, len);
    close(fd);
    /* Kept once, in our cache, whose size is bounded; libdebuginfod's
     * cache only ages its files out. */
    if (got)
        unlink(got);
    free(got);
    if (r == 1) {
        snprintf(why, whylen, "%s is larger than %zu bytes", path, s->max_file);
        return FL_SRCCTX_NONE;
    }
    if (r) {
        snprintf(why, whylen, "debuginfod's answer could not be read");
        return FL_SRCCTX_ERROR;
    }
    return FL_SRCCTX_OK;
}

/* The answer for lines around `line` of text[0..len). */
static int lines_json(const char *text, size_t len, const char *path, unsigned line,
                      unsigned context, const char *source, json_t **out, char *why, size_t whylen)
{
    unsigned first = line > context ? line - context : 1;
    uint64_t last = (uint64_t)line + context;
    json_t *arr = json_array(), *j = NULL;
    if (!arr)
        goto oom;
    unsigned no = 1, cut = 0;
    size_t i = 0;
    /* A file that does not end in a newline still has its last line; one
     * that does has no empty line after it. */
    while (i < len && no <= last) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - text) : len;
        if (no >= first) {
            size_t n = end - i;
            if (n && text[i + n - 1] == '\r')
                n--;
            if (n > FL_SRCCTX_MAX_LINE) {
                /* Cut at a character's start, not inside one. */
                n = FL_SRCCTX_MAX_LINE;
                for (size_t k = 0; k < 3 && ((unsigned char)text[i + n] & 0xc0) == 0x80; k++)
                    n--;
                cut++;
            }
            json_t *t = fl_json_text(text + i, n);
            if (!t || json_array_append_new(arr, t))
                goto oom;
        }
        no++;
        i = end + 1;
    }
    if (no <= line) {
        snprintf(why, whylen, "%s has %u lines: line %u is past its end", path, no - 1, line);
        json_decref(arr);
        return FL_SRCCTX_NONE;
    }
    j = json_pack("{s:s,s:I,s:I,s:o,s:s}", "path", path, "line", (json_int_t)line, "first",
                  (json_int_t)first, "lines", arr, "source", source);
    arr = NULL;
    if (!j)
        goto oom;
    if (cut)
        json_object_set_new(j, "lines_cut", json_integer(cut));
    *out = j;
    return FL_SRCCTX_OK;
oom:
    json_decref(arr);
    snprintf(why, whylen, "out of memory");
    return FL_SRCCTX_ERROR;
}

int fl_srcctx_get(fl_srcctx *s, const char *build_id, const char *path, unsigned line,
                  unsigned context, bool fetch, json_t **json, char *why, size_t whylen)
{
    *json = NULL;
    if (context > FL_SRCCTX_MAX_CONTEXT)
        context = FL_SRCCTX_MAX_CONTEXT;
    char name[NAME_LEN + 1];
    cache_name(build_id, path, name);
    char *buf = NULL;
    const char *text = NULL;
    size_t len = 0;
    if (cache_read(s, name, build_id, path, &buf, &text, &len) == 0) {
        int r = lines_json(text, len, path, line, context, "cache", json, why, whylen);
        free(buf);
        return r;
    }
    const char *urls = getenv(DEBUGINFOD_URLS_ENV_VAR);
    if (!urls || !*urls) {
        snprintf(why, whylen, "no debuginfod configured (DEBUGINFOD_URLS): no source files");
        return FL_SRCCTX_NONE;
    }
    if (!fetch)
        return FL_SRCCTX_FETCH;
    int r = fetch_source(s, build_id, path, &buf, &len, why, whylen);
    if (r != FL_SRCCTX_OK)
        return r;
    cache_write(s, name, build_id, path, buf, len);
    r = lines_json(buf, len, path, line, context, "debuginfod", json, why, whylen);
    free(buf);
    return r;
}
