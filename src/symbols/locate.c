/*
 * locate.c - find a module's debug information by build id.
 *
 * How this works: every candidate path is derived from the build id alone
 * (after checking that it is plain hex, so it can never climb out of a
 * root), opened with libelf and accepted only when its own build id
 * matches.  debuginfod is the only step that can be slow, so it is the only
 * one behind the miss cache: a small fixed-size table of build ids that a
 * debuginfod query did not find, each with an expiry time on the monotonic
 * clock.  A hit there skips the network; the entry expires so that a debug
 * file published later is still picked up.  A query no server answered is
 * not a miss of its build id but an outage: down_until stops every query
 * for a while (fl_symlocate.h).  So is a server's HTTP 5xx or 429, which
 * libdebuginfod returns as the same -ENOENT as a 404: the status comes
 * from the client's verbose output, written to a memfd (server_error).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <elfutils/debuginfod.h>

#include "fl_symcache.h"
#include "fl_symcheck.h"
#include "fl_symlocate.h"

#define MISS_SLOTS 1024 /* build ids remembered as missing; oldest replaced */
#define MISS_PROBE 8
#define ID_HEX_MAX (2 * FL_SYM_BUILD_ID_MAX)

typedef struct miss_entry {
    char id[ID_HEX_MAX + 3]; /* "d:" or "x:" + build id; "" = free */
    int64_t expires;         /* monotonic seconds */
} miss_entry;

struct fl_symlocate {
    char *upload_roots[FL_SYMLOC_MAX_ROOTS];
    size_t nupload;
    char *debug_roots[FL_SYMLOC_MAX_ROOTS];
    size_t ndebug;
    int use_debuginfod;
    int use_object;
    unsigned miss_ttl_s, outage_s;
    void (*log)(void *ctx, const char *line);
    void *log_ctx;

    pthread_mutex_t lock; /* guards misses, the outage and stats */
    miss_entry misses[MISS_SLOTS];
    int64_t down_until; /* monotonic seconds; no query before */
    bool down;          /* an outage was told and no answer came since */
    char down_why[64];  /* what the query that began it failed with */
    fl_symlocate_stats stats;
};

const char *fl_symlocate_strerror(int code)
{
    switch (code) {
#define FL_SYMLOC_STR_(name, value, text)                                                          \
    case value:                                                                                    \
        return text;
        FL_SYMLOC_ERRORS(FL_SYMLOC_STR_)
#undef FL_SYMLOC_STR_
    }
    return "unknown error";
}

const char *fl_symlocate_tier_name(fl_symloc_tier t)
{
    switch (t) {
    case FL_SYMLOC_TIER_APPLICATION:
        return "application";
    case FL_SYMLOC_TIER_SYSTEM:
        return "system";
    case FL_SYMLOC_TIER_OBJECT:
        return "object";
    default:
        return "none";
    }
}

const char *fl_symlocate_source_name(fl_symloc_source s)
{
    switch (s) {
    case FL_SYMLOC_SRC_UPLOAD:
        return "upload";
    case FL_SYMLOC_SRC_DEBUG_DIR:
        return "debug-dir";
    case FL_SYMLOC_SRC_DEBUGINFOD:
        return "debuginfod";
    case FL_SYMLOC_SRC_OBJECT:
        return "object";
    default:
        return "none";
    }
}

void fl_symlocate_config_init(fl_symlocate_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->use_debuginfod = 1;
    cfg->use_object_path = 1;
}

static int64_t mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec;
}

/* Build id and what the file holds (fl_symcheck_inspect).  has_code:
 * .text has its bytes (not a debug-only file, where it is SHT_NOBITS).
 * Returns -1 when the file is not ELF or has no build id. */
static int inspect(const char *path, char *hex, size_t cap, int *has_dwarf, int *has_symtab,
                   int *has_code, int *has_dynsym)
{
    fl_symcheck_info in;
    int rc = fl_symcheck_inspect(path, &in);
    if (has_dwarf)
        *has_dwarf = rc == 0 && in.has_dwarf;
    if (has_symtab)
        *has_symtab = rc == 0 && in.has_symtab;
    if (has_code)
        *has_code = rc == 0 && in.has_code;
    if (has_dynsym)
        *has_dynsym = rc == 0 && in.has_dynsym;
    if (rc != 0 || !in.build_id[0] || cap <= strlen(in.build_id))
        return -1;
    memcpy(hex, in.build_id, strlen(in.build_id) + 1);
    return 0;
}

int fl_symlocate_read_build_id(const char *path, char *hex, size_t cap, int *has_dwarf,
                               int *has_symtab)
{
    return inspect(path, hex, cap, has_dwarf, has_symtab, NULL, NULL);
}

/* Lowercases src into dst; 0 when it is 2..ID_HEX_MAX hex digits, even. */
static int normalize_id(const char *src, char *dst)
{
    size_t n = 0;
    for (; src[n]; n++) {
        char c = src[n];
        if (n >= ID_HEX_MAX)
            return -1;
        if (c >= 'A' && c <= 'F')
            c = (char)(c - 'A' + 'a');
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return -1;
        dst[n] = c;
    }
    dst[n] = '\0';
    return (n >= 2 && n % 2 == 0) ? 0 : -1;
}

/* libdebuginfod remembers a failed query in its cache for cache_miss_s
 * seconds (default 600), and counts any HTTP error as one: a server's 503
 * during a restart kept a build id from being asked for 10 minutes more
 * after this locator's own memory of it (miss_ttl_s) had expired.  In a
 * cache of ours (the server's DATA/debuginfod-cache) it is set shorter
 * than that memory (60 s, less for a shorter memory: libdebuginfod's
 * check is "at most that many seconds ago"), so the memory decides; the
 * cache file only covers a restart.  Best effort: without it the default
 * stands. */
static void set_cache_miss(const char *dir, unsigned miss_ttl_s)
{
    char p[PATH_MAX];
    if ((size_t)snprintf(p, sizeof p, "%s/cache_miss_s", dir) >= sizeof p)
        return;
    (void)mkdir(dir, 0700);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    char v[16];
    int n = snprintf(v, sizeof v, "%u\n",
                     miss_ttl_s > 60  ? 60
                     : miss_ttl_s > 1 ? miss_ttl_s - 1
                                      : 0);
    (void)!write(fd, v, (size_t)n);
    close(fd);
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

int fl_symlocate_new(const fl_symlocate_config *cfg, fl_symlocate **out)
{
    *out = NULL;
    if (!cfg || cfg->nupload_roots > FL_SYMLOC_MAX_ROOTS || cfg->ndebug_roots > FL_SYMLOC_MAX_ROOTS)
        return FL_SYMLOC_EINVAL;
    fl_symlocate *loc = calloc(1, sizeof *loc);
    if (!loc)
        return FL_SYMLOC_ENOMEM;
    pthread_mutex_init(&loc->lock, NULL);
    for (size_t i = 0; i < cfg->nupload_roots; i++) {
        if (!cfg->upload_roots[i])
            continue;
        if (!(loc->upload_roots[loc->nupload++] = dup_or_null(cfg->upload_roots[i])))
            goto nomem;
    }
    for (size_t i = 0; i < cfg->ndebug_roots; i++) {
        if (!cfg->debug_roots[i])
            continue;
        if (!(loc->debug_roots[loc->ndebug++] = dup_or_null(cfg->debug_roots[i])))
            goto nomem;
    }
    if (cfg->ndebug_roots == 0 && !(loc->debug_roots[loc->ndebug++] = strdup("/usr/lib/debug")))
        goto nomem;
    loc->use_debuginfod = cfg->use_debuginfod;
    loc->use_object = cfg->use_object_path;
    loc->miss_ttl_s = cfg->miss_ttl_s ? cfg->miss_ttl_s : 600;
    loc->outage_s = cfg->outage_s ? cfg->outage_s : 60;
    loc->log = cfg->log;
    loc->log_ctx = cfg->log_ctx;

    /* libdebuginfod reads these on every query; see the header. */
    if (cfg->debuginfod_urls)
        setenv(DEBUGINFOD_URLS_ENV_VAR, cfg->debuginfod_urls, 1);
    if (cfg->debuginfod_cache) {
        setenv(DEBUGINFOD_CACHE_PATH_ENV_VAR, cfg->debuginfod_cache, 1);
        set_cache_miss(cfg->debuginfod_cache, loc->miss_ttl_s);
    }
    char tmo[16];
    snprintf(tmo, sizeof tmo, "%u", cfg->debuginfod_timeout_s ? cfg->debuginfod_timeout_s : 10);
    setenv(DEBUGINFOD_TIMEOUT_ENV_VAR, tmo, cfg->debuginfod_timeout_s != 0);
    setenv("DEBUGINFOD_RETRY_LIMIT", "0", 0);
    *out = loc;
    return 0;
nomem:
    fl_symlocate_free(loc);
    return FL_SYMLOC_ENOMEM;
}

void fl_symlocate_free(fl_symlocate *loc)
{
    if (!loc)
        return;
    for (size_t i = 0; i < loc->nupload; i++)
        free(loc->upload_roots[i]);
    for (size_t i = 0; i < loc->ndebug; i++)
        free(loc->debug_roots[i]);
    pthread_mutex_destroy(&loc->lock);
    free(loc);
}

void fl_symlocate_get_stats(fl_symlocate *loc, fl_symlocate_stats *out)
{
    pthread_mutex_lock(&loc->lock);
    *out = loc->stats;
    pthread_mutex_unlock(&loc->lock);
}

static void bump(fl_symlocate *loc, uint64_t *counter)
{
    pthread_mutex_lock(&loc->lock);
    (*counter)++;
    pthread_mutex_unlock(&loc->lock);
}

static uint32_t id_hash(const char *id)
{
    uint32_t h = 2166136261u;
    for (; *id; id++)
        h = (h ^ (uint8_t)*id) * 16777619u;
    return h;
}

/* 1 when id is a remembered, unexpired miss.  Caller holds the lock. */
static int miss_lookup_locked(fl_symlocate *loc, const char *id, int64_t now)
{
    uint32_t h = id_hash(id);
    for (unsigned p = 0; p < MISS_PROBE; p++) {
        miss_entry *e = &loc->misses[(h + p) % MISS_SLOTS];
        if (e->id[0] && e->expires > now && strcmp(e->id, id) == 0)
            return 1;
    }
    return 0;
}

static void miss_remember(fl_symlocate *loc, const char *id)
{
    int64_t now = mono_now();
    uint32_t h = id_hash(id);
    pthread_mutex_lock(&loc->lock);
    miss_entry *victim = NULL;
    for (unsigned p = 0; p < MISS_PROBE; p++) {
        miss_entry *e = &loc->misses[(h + p) % MISS_SLOTS];
        if (!e->id[0] || e->expires <= now || strcmp(e->id, id) == 0) {
            victim = e;
            break;
        }
        if (!victim || e->expires < victim->expires)
            victim = e; /* else replace the one closest to expiry */
    }
    snprintf(victim->id, sizeof victim->id, "%s", id);
    victim->expires = now + (int64_t)loc->miss_ttl_s;
    pthread_mutex_unlock(&loc->lock);
}

/* NEED_SYMBOLS: DWARF or a .symtab.  NEED_EXPORTS: those, or at least a
 * .dynsym -- the exported functions of a stripped library, named exactly
 * within their sizes (an address in a static function between them gets
 * no name, not its neighbour's). */
enum { NEED_SYMBOLS = 1, NEED_CODE = 2, NEED_DWARF = 4, NEED_EXPORTS = 8 };

/* Accepts path when it is an ELF file with build id `id` that has what
 * `need` asks for. */
static int try_file(const char *path, const char *id, fl_symlocate_result *res,
                    fl_symloc_tier tier, fl_symloc_source src, int need)
{
    char got[ID_HEX_MAX + 1];
    int dwarf = 0, symtab = 0, code = 0, dynsym = 0;
    if (access(path, R_OK) != 0)
        return -1;
    if (inspect(path, got, sizeof got, &dwarf, &symtab, &code, &dynsym) != 0 ||
        strcmp(got, id) != 0)
        return -1;
    if ((need & NEED_SYMBOLS) && !dwarf && !symtab)
        return -1;
    if ((need & NEED_EXPORTS) && !dwarf && !symtab && !dynsym)
        return -1;
    if ((need & NEED_CODE) && !code)
        return -1;
    if ((need & NEED_DWARF) && !dwarf)
        return -1;
    if ((size_t)snprintf(res->path, sizeof res->path, "%s", path) >= sizeof res->path)
        return -1;
    res->tier = tier;
    res->source = src;
    res->has_dwarf = dwarf;
    res->exports_only = !dwarf && !symtab;
    return 0;
}

static int try_upload_root(const char *root, const char *id, fl_symlocate_result *res, int need)
{
    static const char *const fmts[] = {"%s/%s.debug", "%s/%.2s/%s.debug",
                                       "%s/.build-id/%.2s/%s.debug", "%s/%s/debuginfo",
                                       "%s/%s/executable"};
    char p[PATH_MAX];
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
        int n;
        if (i == 0 || i >= 3)
            n = snprintf(p, sizeof p, fmts[i], root, id);
        else
            n = snprintf(p, sizeof p, fmts[i], root, id, id + 2);
        if (n < 0 || (size_t)n >= sizeof p)
            continue;
        if (try_file(p, id, res, FL_SYMLOC_TIER_APPLICATION, FL_SYMLOC_SRC_UPLOAD, need) == 0)
            return 0;
    }
    return -1;
}

/* The calling thread's budget (fl_symlocate_budget). */
static __thread struct {
    bool on;
    unsigned misses_left; /* when misses_limited */
    bool misses_limited;
    uint64_t spent_ns, limit_ns; /* limit_ns 0: no limit */
} budget;

void fl_symlocate_budget(unsigned misses, unsigned seconds)
{
    budget.on = misses || seconds;
    budget.misses_limited = misses != 0;
    budget.misses_left = misses;
    budget.spent_ns = 0;
    budget.limit_ns = (uint64_t)seconds * 1000000000u;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Whether a failed query means no server answered (libdebuginfod's
 * errors for curl's timeouts, refused connections, unknown hosts, cut
 * transfers) rather than a server's no: any HTTP error comes back as
 * ENOENT. */
static bool is_outage(int err)
{
    switch (err) {
    case ETIME:
    case ETIMEDOUT:
    case ECONNREFUSED:
    case ECONNRESET:
    case ECONNABORTED:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case ENETDOWN:
    case EAGAIN:
        return true;
    default:
        return false;
    }
}

/* The HTTP status of a server's error answer among the lines
 * libdebuginfod's verbose output has (0.188: "header HTTP/1.1 503
 * Service Unavailable" for each status line received, "url 0 The
 * requested URL returned error: 503" for each failed server), when one
 * is a 5xx or a 429 (the server is in trouble or busy, and says nothing
 * about the build id); else 0.  libdebuginfod answers every HTTP error
 * but a 406 with -ENOENT, its answer for a 404, and remembers it in its
 * cache as a miss: its return code cannot tell them apart. */
static int server_error(int vfd)
{
    enum { CAP = 64 * 1024 }; /* the status lines come first */
    char *buf = vfd >= 0 ? malloc(CAP + 1) : NULL;
    if (!buf)
        return 0;
    ssize_t n = pread(vfd, buf, CAP, 0);
    buf[n > 0 ? n : 0] = '\0';
    int found = 0;
    for (char *line = buf; line && *line && !found;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        int code = 0;
        const char *e = strstr(line, "returned error: ");
        if (!strncmp(line, "header HTTP/", 12)) {
            const char *sp = strchr(line + 12, ' ');
            if (sp)
                code = atoi(sp + 1);
        } else if (!strncmp(line, "url ", 4) && e) {
            code = atoi(e + 16);
        }
        if ((code >= 500 && code <= 599) || code == 429)
            found = code;
        line = nl ? nl + 1 : NULL;
    }
    free(buf);
    return found;
}

/* Removes the empty file libdebuginfod left in its cache for a failed
 * query ($DEBUGINFOD_CACHE_PATH/<id>/debuginfo or executable): for a
 * server error it would answer -ENOENT from there, as for a 404, for
 * cache_miss_s without asking, and the first query after the pause would
 * be taken for a real miss.  Only an empty file of that shape goes. */
static void uncache_miss(const char *id, int executable)
{
    const char *dir = getenv(DEBUGINFOD_CACHE_PATH_ENV_VAR);
    char p[PATH_MAX];
    struct stat st;
    if (!dir || !*dir ||
        (size_t)snprintf(p, sizeof p, "%s/%s/%s", dir, id,
                         executable ? "executable" : "debuginfo") >= sizeof p)
        return;
    if (lstat(p, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0)
        (void)unlink(p);
}

static void tell(fl_symlocate *loc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tell(fl_symlocate *loc, const char *fmt, ...)
{
    if (!loc->log)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    loc->log(loc->log_ctx, line);
}

/* Why a file debuginfod handed out is not the build id's (static text). */
static const char *refusal(const char *path, const char *id, int need)
{
    char got[ID_HEX_MAX + 1];
    int dwarf = 0, symtab = 0, code = 0, dynsym = 0;
    if (!path)
        return "no file";
    if (inspect(path, got, sizeof got, &dwarf, &symtab, &code, &dynsym) != 0)
        return "not an ELF file with a build id (truncated or damaged?)";
    if (strcmp(got, id) != 0)
        return "the file has another build id";
    if ((need & NEED_CODE) && !code)
        return "a debug-only file where the executable was asked for";
    return "no symbols in it";
}

/* Removes a refused answer from libdebuginfod's cache, where it would be
 * served to every later query of the build id without asking a server.
 * Only a path of the cache's own shape, .../<id>/debuginfo or
 * .../<id>/executable, is removed: never a file of somebody else's. */
static void uncache(const char *path, const char *id)
{
    const char *slash = strrchr(path, '/');
    if (!slash || (strcmp(slash, "/debuginfo") && strcmp(slash, "/executable")))
        return;
    size_t n = strlen(id);
    if ((size_t)(slash - path) < n + 1 || strncmp(slash - n, id, n) || slash[-(long)n - 1] != '/')
        return;
    if (unlink(path) == 0) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
        (void)rmdir(dir); /* when empty: libdebuginfod makes it again */
    }
}

static int try_debuginfod(fl_symlocate *loc, const char *id, int executable,
                          fl_symlocate_result *res, char *why, size_t whylen)
{
    char key[ID_HEX_MAX + 3];
    snprintf(key, sizeof key, "%c:%s", executable ? 'x' : 'd', id);
    const char *urls = getenv(DEBUGINFOD_URLS_ENV_VAR);
    if (!urls || !*urls) {
        snprintf(why, whylen, "debuginfod: no DEBUGINFOD_URLS");
        return -1;
    }
    bool spent = budget.on && ((budget.misses_limited && budget.misses_left == 0) ||
                               (budget.limit_ns && budget.spent_ns >= budget.limit_ns));
    int64_t now = mono_now();
    pthread_mutex_lock(&loc->lock);
    int cached = miss_lookup_locked(loc, key, now);
    int64_t down_left = loc->down_until - now;
    if (cached)
        loc->stats.miss_cache_hits++;
    else if (down_left > 0)
        loc->stats.outage_skips++;
    else if (spent)
        loc->stats.budget_skips++;
    else
        loc->stats.debuginfod_queries++;
    pthread_mutex_unlock(&loc->lock);
    if (cached) {
        snprintf(why, whylen, "debuginfod: recent miss (cached)");
        return -1;
    }
    if (down_left > 0) {
        snprintf(why, whylen,
                 "debuginfod: not asked, no server answered lately (next try in %lld s)",
                 (long long)down_left);
        return -1;
    }
    if (spent) {
        snprintf(why, whylen, "debuginfod: not asked, this crash's requests are spent");
        return -1;
    }
    uint64_t t0 = mono_ns();
    /* One client per query: a debuginfod_client is not thread-safe and
     * creating one is cheap next to an HTTP request. */
    debuginfod_client *c = debuginfod_begin();
    if (!c) {
        snprintf(why, whylen, "debuginfod: cannot create a client");
        return -1;
    }
    /* Its verbose output says which HTTP status a failed query got
     * (server_error); without a memfd, a 5xx counts as a 404 did. */
    int vfd = memfd_create("fl-debuginfod", MFD_CLOEXEC);
    if (vfd >= 0)
        debuginfod_set_verbose_fd(c, vfd);
    char *path = NULL;
    int fd = executable ? debuginfod_find_executable(c, (const unsigned char *)id, 0, &path)
                        : debuginfod_find_debuginfo(c, (const unsigned char *)id, 0, &path);
    debuginfod_end(c);
    int http = fd == -ENOENT ? server_error(vfd) : 0;
    if (vfd >= 0)
        close(vfd);
    if (http)
        uncache_miss(id, executable);
    if (budget.on) {
        budget.spent_ns += mono_ns() - t0;
        if (fd < 0 && budget.misses_left)
            budget.misses_left--;
    }
    bool outage = fd < 0 && (is_outage(-fd) || http), was_down;
    pthread_mutex_lock(&loc->lock);
    was_down = loc->down;
    if (outage) {
        loc->down = true;
        loc->down_until = mono_now() + (int64_t)loc->outage_s;
        if (http) {
            loc->stats.debuginfod_server_errors++;
            snprintf(loc->down_why, sizeof loc->down_why, "HTTP %d", http);
        } else {
            loc->stats.debuginfod_errors++;
            snprintf(loc->down_why, sizeof loc->down_why, "%s", strerror(-fd));
        }
    } else if (fd >= 0 || fd == -ENOENT) {
        loc->down = false; /* a server answered */
    }
    pthread_mutex_unlock(&loc->lock);
    if (outage && !was_down && http)
        tell(loc, "debuginfod: a server answered HTTP %d for %s %s; no request for %u s", http,
             executable ? "executable" : "debuginfo", id, loc->outage_s);
    else if (outage && !was_down)
        tell(loc, "debuginfod: no server answered (%s) for %s %s; no request for %u s",
             strerror(-fd), executable ? "executable" : "debuginfo", id, loc->outage_s);
    else if (was_down && !outage && (fd >= 0 || fd == -ENOENT))
        tell(loc, "debuginfod: a server answers again");
    if (fd < 0) {
        if (http)
            snprintf(why, whylen, "debuginfod: server error (HTTP %d)", http);
        else
            snprintf(why, whylen, "debuginfod: %s", strerror(-fd));
        bump(loc, &loc->stats.debuginfod_misses);
        if (!outage)
            miss_remember(loc, key);
        free(path);
        return -1;
    }
    close(fd);
    int need = executable ? NEED_CODE : NEED_SYMBOLS;
    int rc =
        path ? try_file(path, id, res, FL_SYMLOC_TIER_SYSTEM, FL_SYMLOC_SRC_DEBUGINFOD, need) : -1;
    if (rc != 0) {
        const char *r = refusal(path, id, need);
        if (budget.on && budget.misses_left)
            budget.misses_left--;
        snprintf(why, whylen, "debuginfod: answer refused: %s", r);
        tell(loc,
             "debuginfod: the %s answered for build id %s was refused (%s) and removed from the "
             "cache",
             executable ? "executable" : "debuginfo", id, r);
        if (path)
            uncache(path, id);
        pthread_mutex_lock(&loc->lock);
        loc->stats.debuginfod_misses++;
        loc->stats.debuginfod_refused++;
        pthread_mutex_unlock(&loc->lock);
        miss_remember(loc, key);
    }
    free(path);
    return rc;
}

int fl_symlocate_find(fl_symlocate *loc, const char *build_id_hex, const char *object_path,
                      fl_symlocate_result *res, char *err, size_t errlen)
{
    char id[ID_HEX_MAX + 1];
    char why[256] = "debuginfod: off";
    memset(res, 0, sizeof *res);
    if (errlen)
        err[0] = '\0';
    if (!loc || !build_id_hex || normalize_id(build_id_hex, id) != 0) {
        if (errlen)
            snprintf(err, errlen, "%s", fl_symlocate_strerror(FL_SYMLOC_EINVAL));
        return FL_SYMLOC_EINVAL;
    }
    bump(loc, &loc->stats.lookups);

    for (size_t i = 0; i < loc->nupload; i++)
        if (try_upload_root(loc->upload_roots[i], id, res, NEED_SYMBOLS) == 0) {
            bump(loc, &loc->stats.found_upload);
            return 0;
        }
    for (size_t i = 0; i < loc->ndebug; i++) {
        char p[PATH_MAX];
        int n = snprintf(p, sizeof p, "%s/.build-id/%.2s/%s.debug", loc->debug_roots[i], id, id + 2);
        if (n > 0 && (size_t)n < sizeof p &&
            try_file(p, id, res, FL_SYMLOC_TIER_SYSTEM, FL_SYMLOC_SRC_DEBUG_DIR, NEED_SYMBOLS) == 0) {
            bump(loc, &loc->stats.found_debug_dir);
            return 0;
        }
    }
    /* The object itself, when it has full DWARF, is as good as any debug
     * file: no need to ask the network.  With only a .symtab it is the
     * last resort, after debuginfod. */
    int use_obj = loc->use_object && object_path && object_path[0] == '/';
    if (use_obj && try_file(object_path, id, res, FL_SYMLOC_TIER_OBJECT, FL_SYMLOC_SRC_OBJECT,
                            NEED_DWARF) == 0) {
        bump(loc, &loc->stats.found_object);
        return 0;
    }
    if (loc->use_debuginfod && try_debuginfod(loc, id, 0, res, why, sizeof why) == 0) {
        bump(loc, &loc->stats.found_debuginfod);
        return 0;
    }
    /* Last, the object with only a .symtab, or only its exports (a
     * stripped library's .dynsym: better names for its exported functions
     * than module+offset until a debug file comes, which the crash waits
     * for, fl_srvsym_gap); else the executable debuginfod has, asked under
     * the key the remote unwinder uses, so one request serves both. */
    if (use_obj && try_file(object_path, id, res, FL_SYMLOC_TIER_OBJECT, FL_SYMLOC_SRC_OBJECT,
                            NEED_EXPORTS) == 0) {
        bump(loc, res->exports_only ? &loc->stats.found_exports : &loc->stats.found_object);
        return 0;
    }
    char exe[PATH_MAX], why_exe[256];
    if (loc->use_debuginfod && try_debuginfod(loc, id, 1, res, why_exe, sizeof why_exe) == 0 &&
        (size_t)snprintf(exe, sizeof exe, "%s", res->path) < sizeof exe &&
        try_file(exe, id, res, res->tier, res->source, NEED_EXPORTS) == 0) {
        bump(loc, res->exports_only ? &loc->stats.found_exports : &loc->stats.found_debuginfod);
        return 0;
    }
    memset(res, 0, sizeof *res);
    if (errlen)
        snprintf(err, errlen, "build id %s: not in %zu upload root(s), not in %zu debug root(s), %s%s",
                 id, loc->nupload, loc->ndebug, why,
                 object_path ? ", object file unusable" : "");
    return FL_SYMLOC_ENOTFOUND;
}

int fl_symlocate_find_executable(fl_symlocate *loc, const char *build_id_hex,
                                 const char *object_path, fl_symlocate_result *res, char *err,
                                 size_t errlen)
{
    char id[ID_HEX_MAX + 1];
    char why[256] = "debuginfod: off";
    memset(res, 0, sizeof *res);
    if (errlen)
        err[0] = '\0';
    if (!loc || !build_id_hex || normalize_id(build_id_hex, id) != 0) {
        if (errlen)
            snprintf(err, errlen, "%s", fl_symlocate_strerror(FL_SYMLOC_EINVAL));
        return FL_SYMLOC_EINVAL;
    }
    /* The loaded file itself first: here it is the cheapest and surest. */
    int ok = object_path && object_path[0] == '/' &&
             try_file(object_path, id, res, FL_SYMLOC_TIER_OBJECT, FL_SYMLOC_SRC_OBJECT,
                      NEED_CODE) == 0;
    for (size_t i = 0; !ok && i < loc->nupload; i++)
        ok = try_upload_root(loc->upload_roots[i], id, res, NEED_CODE) == 0;
    if (!ok && loc->use_debuginfod)
        ok = try_debuginfod(loc, id, 1, res, why, sizeof why) == 0;
    if (ok) {
        bump(loc, &loc->stats.executables_found);
        return 0;
    }
    if (errlen)
        snprintf(err, errlen, "executable of build id %s: not at the object path, not in %zu upload root(s), %s",
                 id, loc->nupload, why);
    return FL_SYMLOC_ENOTFOUND;
}
