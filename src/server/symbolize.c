/*
 * symbolize.c - the server's symbolizer; see fl_srvsym.h for how it works.
 */
#define _GNU_SOURCE
#include "fl_srvsym.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "fl_elffile.h"
#include "fl_minidump.h"
#include "fl_remote_unwind.h"
#include "fl_srvutil.h"
#include "fl_store.h"
#include "fl_symlocate.h"
#include "fl_symstore.h"
#include "fl_tracesec.h"

#define DEFAULT_LRU 32
#define MAX_LRU 1024
#define MAX_INLINE_LOOKUP 32
#define ID_MAX (2 * FL_SYM_BUILD_ID_MAX + 1)
#define MAX_BROKEN 64          /* debug files whose symcache could not be built */
#define BROKEN_TTL_NS (600ull * 1000000000ull)
#define FORMATS_CACHED 16 /* debug files' .debug_faultline_trace sections kept */
#define MAX_FETCHED 64    /* debuginfod fetches waiting for their backfill */

typedef struct entry {
    char build_id[ID_MAX];
    fl_symcache *sc;
    uint64_t used;         /* LRU clock */
    char alt_wait[ID_MAX]; /* the dwz file the DWARF lacked, or "" */
    char *dwo_wait;        /* keys of the .dwo files it lacked (malloc'ed), or NULL */
    bool exports_only;     /* built from a stripped file's .dynsym */
    uint64_t recheck_ns;   /* when to look for what it lacked again; 0: never */
} entry;

struct fl_srvsym {
    fl_symlocate *loc;
    char *cache_dir;
    bool remote_unwind;
    pthread_mutex_t mu;
    entry *lru;
    size_t nlru, cap;
    uint64_t clock;
    fl_srvsym_stats st;
    /* A debug file that is found but cannot be turned into a symcache
     * (corrupt, over a limit) would otherwise be rebuilt for every crash:
     * remember the failure for 10 minutes, or until forget(). */
    struct broken {
        char build_id[ID_MAX];
        uint64_t until_ns;
    } broken[MAX_BROKEN];
    size_t nbroken_next;
    /* Build ids fetch() was asked for since the last flush: a module with
     * no debug file anywhere is looked up for every crash, and the store
     * is a network round trip away.  A flush (the store's symbols version
     * moved: a file arrived somewhere) asks again. */
    void (*fetch)(void *ctx, const char *build_id, const char *root);
    void *fetch_ctx;
    char *upload_root;
    char (*asked)[ID_MAX];
    size_t nasked;
    uint64_t generation; /* moved by forget() and flush() */
    uint64_t recheck_ns; /* an entry that lacks a file is dropped after this */
    int64_t flushed_version; /* the symbols version symbols_changed() last flushed for */
    /* Formats kept apart (FAULTLINE_TRACE_APART) read from debug files,
     * shared by the workers: a storm of one program's crashes reads its
     * debug file's section once, not once a crash.  Valid for the
     * generation they were read in (a new debug file may hold others). */
    struct formats {
        char build_id[ID_MAX];
        uint64_t generation, used;
        fl_tracesec *ts;
    } fmts[FORMATS_CACHED];
    /* Build ids whose symcache was built from a debuginfod answer, for the
     * workers' backfill (fl_srvsym_next_fetched); more between two
     * batches are dropped (counted), their crashes then wait for the
     * next fetch or POST .../reprocess. */
    char fetched[MAX_FETCHED][ID_MAX];
    size_t nfetched;
};

#define MAX_ASKED 4096

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct broken *broken_locked(fl_srvsym *s, const char *id)
{
    uint64_t now = now_ns();
    for (size_t i = 0; i < MAX_BROKEN; i++)
        if (s->broken[i].until_ns > now && !strcasecmp(s->broken[i].build_id, id))
            return &s->broken[i];
    return NULL;
}

/* The locator's few lines (debuginfod outages, refused answers) go to
 * the server's log: without them a debuginfod that stopped answering
 * showed only as crashes whose symbols were partial. */
static void locate_log(void *ctx, const char *line)
{
    (void)ctx;
    fl_log(stderr, "faultline serve: symbols: %s", line);
}

int fl_srvsym_new(const fl_srvsym_config *cfg, fl_srvsym **out, char *err, size_t errlen)
{
    *out = NULL;
    fl_srvsym *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    s->cap = cfg->lru ? (cfg->lru > MAX_LRU ? MAX_LRU : cfg->lru) : DEFAULT_LRU;
    s->remote_unwind = cfg->remote_unwind;
    s->flushed_version = -1;
    if (!(s->lru = calloc(s->cap, sizeof *s->lru)) || !(s->cache_dir = strdup(cfg->cache_dir))) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (fl_symstore_mkdirs(s->cache_dir)) {
        snprintf(err, errlen, "cannot create %s", s->cache_dir);
        goto fail;
    }
    /* Kept also without fetch: .dwo files are found there by key. */
    if (cfg->upload_root && !(s->upload_root = strdup(cfg->upload_root))) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (cfg->fetch && cfg->upload_root) {
        s->fetch = cfg->fetch;
        s->fetch_ctx = cfg->fetch_ctx;
        if (!(s->asked = calloc(MAX_ASKED, sizeof *s->asked))) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
    }
    fl_symlocate_config lc;
    fl_symlocate_config_init(&lc);
    if (cfg->upload_root)
        lc.upload_roots[lc.nupload_roots++] = cfg->upload_root;
    lc.debuginfod_cache = cfg->debuginfod_cache;
    lc.outage_s = cfg->debuginfod_outage_s;
    lc.miss_ttl_s = cfg->debuginfod_miss_s;
    s->recheck_ns =
        (uint64_t)(cfg->debuginfod_miss_s ? cfg->debuginfod_miss_s : 600) * 1000000000ull;
    lc.log = locate_log;
    int rc = fl_symlocate_new(&lc, &s->loc);
    if (rc) {
        snprintf(err, errlen, "symbol locator: %s", fl_symlocate_strerror(rc));
        goto fail;
    }
    pthread_mutex_init(&s->mu, NULL);
    *out = s;
    return 0;
fail:
    free(s->lru);
    free(s->cache_dir);
    free(s->upload_root);
    free(s->asked);
    free(s);
    return -1;
}

static void entry_clear(entry *e)
{
    fl_symcache_close(e->sc);
    e->sc = NULL;
    free(e->dwo_wait);
    e->dwo_wait = NULL;
}

void fl_srvsym_free(fl_srvsym *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nlru; i++)
        entry_clear(&s->lru[i]);
    free(s->lru);
    for (size_t i = 0; i < FORMATS_CACHED; i++)
        fl_tracesec_free(s->fmts[i].ts);
    fl_symlocate_free(s->loc);
    pthread_mutex_destroy(&s->mu);
    free(s->cache_dir);
    free(s->upload_root);
    free(s->asked);
    free(s);
}

static entry *find_locked(fl_srvsym *s, const char *id)
{
    for (size_t i = 0; i < s->nlru; i++)
        if (!strcasecmp(s->lru[i].build_id, id))
            return &s->lru[i];
    return NULL;
}

void fl_srvsym_forget(fl_srvsym *s, const char *build_id)
{
    if (!s || !build_id)
        return;
    pthread_mutex_lock(&s->mu);
    entry *e = find_locked(s, build_id);
    if (e) {
        entry_clear(e);
        *e = s->lru[--s->nlru];
    }
    struct broken *b = broken_locked(s, build_id);
    if (b)
        b->until_ns = 0;
    s->generation++;
    pthread_mutex_unlock(&s->mu);
}

void fl_srvsym_flush(void *arg)
{
    fl_srvsym *s = arg;
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->nlru; i++)
        entry_clear(&s->lru[i]);
    s->nlru = 0;
    for (size_t i = 0; i < MAX_BROKEN; i++)
        s->broken[i].until_ns = 0;
    s->nasked = 0;
    s->generation++;
    pthread_mutex_unlock(&s->mu);
}

void fl_srvsym_symbols_changed(void *arg, int64_t version)
{
    fl_srvsym *s = arg;
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    bool stale = version != s->flushed_version; /* moved, either way */
    if (stale)
        s->flushed_version = version;
    pthread_mutex_unlock(&s->mu);
    if (stale)
        fl_srvsym_flush(s);
}

/* Whether fetch() should be asked for id now; records that it was. */
static bool ask_locked(fl_srvsym *s, const char *id)
{
    if (!s->fetch || !s->asked)
        return false;
    for (size_t i = 0; i < s->nasked; i++)
        if (!strcasecmp(s->asked[i], id))
            return false;
    if (s->nasked == MAX_ASKED)
        s->nasked = 0; /* start over rather than grow */
    snprintf(s->asked[s->nasked++], ID_MAX, "%s", id);
    return true;
}

/* Asks the store for id's file, the first time since the last flush. */
static void fetch_once(fl_srvsym *s, const char *id)
{
    pthread_mutex_lock(&s->mu);
    bool ask = ask_locked(s, id);
    pthread_mutex_unlock(&s->mu);
    if (ask)
        s->fetch(s->fetch_ctx, id, s->upload_root);
}

void fl_srvsym_fetch(fl_srvsym *s, const char *build_id)
{
    if (s && s->fetch && build_id)
        fetch_once(s, build_id);
}

/* Records id for the workers' backfill (fl_srvsym_next_fetched), once
 * until they take it. */
static void note_fetched_locked(fl_srvsym *s, const char *id)
{
    for (size_t i = 0; i < s->nfetched; i++)
        if (!strcasecmp(s->fetched[i], id))
            return;
    if (s->nfetched < MAX_FETCHED)
        snprintf(s->fetched[s->nfetched++], ID_MAX, "%s", id);
    else
        s->st.fetched_dropped++;
}

/* fl_symbuild_opts.find_alt: a dwz file is looked for where debug files
 * are, the store's shared files and debuginfod included.  One that
 * debuginfod gave starts a backfill of its own, as a debug file does:
 * the crashes processed while it was missing are recorded with it
 * (dwz_missing), and the debug file that links to it may have come long
 * before (from an upload, or from debuginfod). */
static int find_alt(void *ctx, const char *build_id, const char *name, char *path, size_t cap)
{
    (void)name; /* a path on the machine that built it */
    fl_srvsym *s = ctx;
    fetch_once(s, build_id);
    fl_symlocate_result res;
    char err[512];
    if (fl_symlocate_find(s->loc, build_id, NULL, &res, err, sizeof err) || strlen(res.path) >= cap)
        return -1;
    memcpy(path, res.path, strlen(res.path) + 1);
    if (res.source == FL_SYMLOC_SRC_DEBUGINFOD) {
        pthread_mutex_lock(&s->mu);
        note_fetched_locked(s, build_id);
        pthread_mutex_unlock(&s->mu);
    }
    return 0;
}

/* fl_symbuild_opts.find_dwo: a .dwo file is looked for among the uploads
 * (ROOT/dwo-<id>/dwo), the store's shared files first. */
static int find_dwo(void *ctx, const char *dwo_id, const char *name, char *path, size_t cap)
{
    (void)name; /* a path on the machine that built it */
    fl_srvsym *s = ctx;
    char key[64];
    struct stat st;
    if (!s->upload_root || strlen(dwo_id) != 16 || strspn(dwo_id, "0123456789abcdef") != 16)
        return -1;
    snprintf(key, sizeof key, FL_DWO_KEY_PREFIX "%s", dwo_id);
    fetch_once(s, key);
    if ((size_t)snprintf(path, cap, "%s/%s/dwo", s->upload_root, key) >= cap ||
        stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return -1;
    return 0;
}

void fl_srvsym_build_opts(fl_srvsym *s, fl_symbuild_opts *opts)
{
    memset(opts, 0, sizeof *opts);
    if (!s)
        return;
    opts->find_alt = find_alt;
    opts->find_dwo = find_dwo;
    opts->ctx = s;
}

/* The keys of the .dwo files the module at path lacks with opts,
 * space-separated (FL_DWO_KEY_PREFIX + DWO id, the first 64), malloc'ed;
 * NULL when none (or out of memory). */
static char *dwo_wait_of(const char *path, const fl_symbuild_opts *opts)
{
    fl_dwo_unit *u = NULL;
    size_t n = 0, len = 0, k = 0;
    if (fl_symcache_dwo_list(path, opts, &u, &n) != 0)
        return NULL;
    char *w = malloc(64 * 21 + 1);
    for (size_t i = 0; w && i < n && k < 64; i++)
        if (u[i].found == FL_DWO_NOWHERE) {
            len +=
                (size_t)sprintf(w + len, "%s" FL_DWO_KEY_PREFIX "%.16s", k ? " " : "", u[i].dwo_id);
            k++;
        }
    fl_symcache_dwo_free(u, n);
    if (w && !k) {
        free(w);
        w = NULL;
    }
    return w;
}

/* Insert sc for id, evicting the least recently used entry when full.
 * Takes ownership of sc (closes it when another thread was first) and of
 * dwo_wait.  alt_wait: the build id of the dwz file sc was built without,
 * or "". */
static entry *insert_locked(fl_srvsym *s, const char *id, fl_symcache *sc, const char *alt_wait,
                            char *dwo_wait)
{
    entry *e = find_locked(s, id);
    if (e) {
        fl_symcache_close(sc);
        free(dwo_wait);
        return e;
    }
    if (s->nlru < s->cap) {
        e = &s->lru[s->nlru++];
    } else {
        e = &s->lru[0];
        for (size_t i = 1; i < s->nlru; i++)
            if (s->lru[i].used < e->used)
                e = &s->lru[i];
        entry_clear(e);
        s->st.evicted++;
    }
    snprintf(e->build_id, sizeof e->build_id, "%s", id);
    snprintf(e->alt_wait, sizeof e->alt_wait, "%s", alt_wait);
    e->sc = sc;
    e->dwo_wait = dwo_wait;
    return e;
}

static void copy_frame(fl_sym_frame *d, const fl_symframe *f)
{
    snprintf(d->function, sizeof d->function, "%s", f->function ? f->function : "");
    snprintf(d->file, sizeof d->file, "%s", f->file ? f->file : "");
    d->line = f->line;
    d->column = f->column;
    d->inlined = f->inlined != 0;
}

int fl_srvsym_lookup(fl_srvsym *s, const char *build_id, const char *path, uint64_t rel,
                     fl_sym_frame *out, size_t cap)
{
    if (!s || !build_id || !*build_id || strlen(build_id) >= ID_MAX)
        return -1;
    fl_symframe fr[MAX_INLINE_LOOKUP];
    pthread_mutex_lock(&s->mu);
    s->st.lookups++;
    entry *e = find_locked(s, build_id);
    if (e && e->recheck_ns && now_ns() >= e->recheck_ns) {
        /* It lacks a file (its dwz file, its DWARF) that nothing but
         * debuginfod may bring, and the locator's memory of that miss is
         * over: look again, as for a module not seen before.  Kept, it
         * was never asked for again until an upload flushed the LRU. */
        entry_clear(e);
        *e = s->lru[--s->nlru];
        e = NULL;
    }
    if (!e && broken_locked(s, build_id)) {
        pthread_mutex_unlock(&s->mu);
        return -1;
    }
    if (!e) {
        pthread_mutex_unlock(&s->mu);
        fetch_once(s, build_id);
        fl_symlocate_result res;
        char err[512];
        if (fl_symlocate_find(s->loc, build_id, path, &res, err, sizeof err)) {
            pthread_mutex_lock(&s->mu);
            s->st.located_missing++;
            pthread_mutex_unlock(&s->mu);
            return -1;
        }
        fl_symcache *sc = NULL;
        int built = 0;
        fl_symbuild_opts opts;
        fl_srvsym_build_opts(s, &opts);
        char alt[ID_MAX] = "";
        int rc = fl_symstore_get(s->cache_dir, res.path, &opts, 0, &sc, &built, NULL, NULL, 0, err,
                                 sizeof err);
        if (rc != 0 || built)
            fl_release_heap(); /* what the build freed */
        if (rc) {
            pthread_mutex_lock(&s->mu);
            struct broken *b = &s->broken[s->nbroken_next++ % MAX_BROKEN];
            snprintf(b->build_id, sizeof b->build_id, "%s", build_id);
            b->until_ns = now_ns() + BROKEN_TTL_NS;
            s->st.broken++;
            pthread_mutex_unlock(&s->mu);
            return -1;
        }
        if (fl_symcache_alt_missing(sc) &&
            fl_symcache_altlink(res.path, NULL, alt, sizeof alt, NULL, 0) != 1)
            alt[0] = '\0';
        char *dwo_wait = fl_symcache_dwo_missing(sc) ? dwo_wait_of(res.path, &opts) : NULL;
        pthread_mutex_lock(&s->mu);
        s->st.opened++;
        s->st.built += built != 0;
        if (built && res.source == FL_SYMLOC_SRC_DEBUGINFOD)
            note_fetched_locked(s, build_id);
        bool fresh = !find_locked(s, build_id);
        e = insert_locked(s, build_id, sc, alt, dwo_wait);
        /* The same file for every thread: the locator's answer for this
         * build id does not change until a debug file comes, which starts
         * a new generation of entries. */
        e->exports_only = res.exports_only && !fl_symcache_has_dwarf(e->sc);
        if (fresh)
            e->recheck_ns = e->exports_only || !fl_symcache_has_dwarf(e->sc) ||
                                    (fl_symcache_alt_missing(e->sc) && alt[0])
                                ? now_ns() + s->recheck_ns
                                : 0;
    }
    e->used = ++s->clock;
    size_t n = fl_symcache_lookup(e->sc, rel, fr, MAX_INLINE_LOOKUP);
    if (n > MAX_INLINE_LOOKUP)
        n = MAX_INLINE_LOOKUP;
    /* The all-unknown answer: the module has symbols, the address none. */
    if (n == 1 && !fr[0].function && !fr[0].file)
        n = 0;
    /* When the chain is deeper than the caller takes, keep the outermost
     * (real) function: drop inline levels from the innermost end. */
    size_t skip = n > cap ? n - cap : 0;
    for (size_t i = skip; i < n; i++)
        copy_frame(&out[i - skip], &fr[i]);
    pthread_mutex_unlock(&s->mu);
    return (int)(n - skip);
}

/* ---- frames that tail calls left off
 *
 * The callee above a caller is not the function the caller's call went
 * to: that function ended in a jump to the callee, or to a function that
 * did so in turn.  The call site at the return address names the function
 * called, which is certain; its tail calls (and theirs, TAIL_DEPTH deep)
 * are searched for the ways to the callee.  A way may also end open: at a
 * tail call the DWARF does not name (through a pointer, or in a function
 * the DWARF does not say all its calls are described of), at a tail call
 * to another module's function, at the depth limit, or at a function
 * with more than TAIL_FANOUT tail calls -- the crash may have gone on
 * from there to anywhere.  A way that ends at a function of this module
 * that makes no tail call is no way.  What every way shares
 * from the caller's side is certain (as gdb decides its tail-call
 * frames): those functions are the answer, and a function's line only
 * when every way leaves it by the same tail call.  Under the LRU's lock,
 * so bounded: TAIL_VISITS functions and TAIL_WAYS ways; past either, only
 * the first function is certain. */
#define TAIL_DEPTH 4
#define TAIL_FANOUT 16
#define TAIL_VISITS 64
#define TAIL_WAYS 8
#define TAIL_SITE_UNKNOWN FL_SYMCALL_NONE

typedef struct tail_way {
    size_t n;
    uint64_t sites[TAIL_DEPTH], fns[TAIL_DEPTH]; /* outermost first */
} tail_way;

typedef struct tail_search {
    const fl_symcache *sc;
    const char *callee; /* the frame above's function */
    bool callee_here;   /* ... in this module */
    uint64_t callee_fn; /* ... whose symbol starts there (FL_SYMCALL_NONE: unknown) */
    unsigned visits;
    bool exhausted; /* a bound cut the search short */
    size_t nways;
    tail_way ways[TAIL_WAYS];
} tail_search;

static void tail_way_add(tail_search *t, const tail_way *w)
{
    if (t->nways == TAIL_WAYS)
        t->exhausted = true;
    else
        t->ways[t->nways++] = *w;
}

/* Whether call c is a tail call to the callee: a function of this module
 * by its entry (two static functions of one name are two functions, and
 * a library's function is not the program's of the same name), else by
 * name, to another module. */
static bool tail_reaches(const tail_search *t, const fl_symcall *c)
{
    if (c->target != FL_SYMCALL_NONE) {
        if (!t->callee_here)
            return false;
        if (t->callee_fn != FL_SYMCALL_NONE)
            return c->target == t->callee_fn;
        return fl_group_same_function(c->target_name, t->callee);
    }
    return !t->callee_here && fl_group_same_function(c->target_name, t->callee);
}

/* Follows fn's tail calls; w holds the way to fn (fn not in it yet). */
static void tail_walk(tail_search *t, tail_way *w, uint64_t fn)
{
    if (t->exhausted)
        return;
    if (++t->visits > TAIL_VISITS) {
        t->exhausted = true;
        return;
    }
    if (w->n == TAIL_DEPTH) {
        tail_way_add(t, w); /* open: fn and beyond unknown */
        return;
    }
    fl_symcall calls[TAIL_FANOUT];
    size_t n = fl_symcache_tail_calls(t->sc, fn, calls, TAIL_FANOUT);
    w->fns[w->n] = fn;
    w->n++;
    if (n > TAIL_FANOUT) {
        w->sites[w->n - 1] = TAIL_SITE_UNKNOWN; /* open: which of them, unknown */
        tail_way_add(t, w);
        w->n--;
        return;
    }
    for (size_t i = 0; i < n && !t->exhausted; i++) {
        w->sites[w->n - 1] = calls[i].site;
        if (calls[i].target == FL_SYMCALL_NONE && !calls[i].target_name) {
            w->sites[w->n - 1] = TAIL_SITE_UNKNOWN; /* open: to a function not named */
            tail_way_add(t, w);
        } else if (tail_reaches(t, &calls[i])) {
            tail_way_add(t, w);
        } else if (calls[i].target != FL_SYMCALL_NONE) {
            tail_walk(t, w, calls[i].target);
        } else {
            /* Open: to another module's function, which may go on from
             * there by tail calls of its own. */
            tail_way_add(t, w);
        }
    }
    w->n--;
}

/* The outermost (real) function's name at rel, or NULL. */
static const char *function_at(const fl_symcache *sc, uint64_t rel)
{
    fl_symframe fr[MAX_INLINE_LOOKUP];
    size_t n = fl_symcache_lookup(sc, rel, fr, MAX_INLINE_LOOKUP);
    if (n == 0 || n > MAX_INLINE_LOOKUP)
        return NULL;
    return fr[n - 1].function;
}

/* The search's answer: what every way shares from the caller's side,
 * innermost first, into sites/exact (at most cap); how many. */
static size_t tail_answer(const tail_search *t, uint64_t *sites, bool *exact, size_t cap)
{
    if (!t->nways)
        return 0;
    size_t n = t->ways[0].n;
    for (size_t k = 1; k < t->nways; k++) {
        size_t m = 0;
        while (m < n && m < t->ways[k].n && t->ways[k].fns[m] == t->ways[0].fns[m])
            m++;
        n = m;
    }
    if (t->exhausted && n > 1)
        n = 1;
    if (n > cap)
        n = cap;
    for (size_t m = 0; m < n; m++) {
        bool same = !t->exhausted && t->ways[0].sites[m] != TAIL_SITE_UNKNOWN;
        for (size_t k = 1; k < t->nways && same; k++)
            same = t->ways[k].sites[m] == t->ways[0].sites[m];
        /* Innermost first. */
        sites[n - 1 - m] = same ? t->ways[0].sites[m] : t->ways[0].fns[m];
        exact[n - 1 - m] = same;
    }
    return n;
}

/* The call at the caller's return address went to another module's
 * function, named c->target_name (through the PLT).  When the frame
 * above is not that function, the function was on the stack and jumped
 * on -- but a name is not an address: the frame above may be the same
 * function under an alias ("fopen" is glibc's _IO_new_fopen), an ifunc's
 * variant, or the dynamic linker resolving the call.  So the function
 * counts only when the frame above's module (e2, the one the call went
 * to, unless a third one's function jumped there in turn) exports a
 * function of that name (a static function of the same name is not the
 * one called: fl_symcache_symbol_named) at another address than the
 * frame above's function, and its tail calls reach the frame above
 * (tail_walk in e2, the same rules; a function that reaches it by none
 * is no way).  Without call sites in e2 nothing is put back: a name
 * alone, with no way seen to the frame above, is too little (an ifunc's
 * variant, a symbol table that names a static function after an
 * export).  Left: a preloaded library that defines the same function
 * and jumps into e2 is taken for e2's (the log does not say which
 * module the dynamic linker bound the call to).  Frames in e2. */
static size_t tail_other_module(tail_search *t, const entry *e2, const fl_symcall *c,
                                uint64_t callee_rel, uint64_t *sites, bool *exact, size_t cap)
{
    if (!c->target_name || fl_group_same_function(c->target_name, t->callee))
        return 0;
    uint64_t fn = fl_symcache_symbol_named(e2->sc, c->target_name);
    uint64_t above = fl_symcache_symbol_at(e2->sc, callee_rel);
    if (fn == FL_SYMCALL_NONE || above == FL_SYMCALL_NONE || fn == above)
        return 0;
    const char *a = function_at(e2->sc, fn), *b = function_at(e2->sc, callee_rel);
    if (a && b && fl_group_same_function(a, b))
        return 0;
    if (!fl_symcache_has_calls(e2->sc))
        return 0;
    t->sc = e2->sc;
    t->callee_here = true;
    t->callee_fn = above;
    tail_way w = {0};
    tail_walk(t, &w, fn);
    return tail_answer(t, sites, exact, cap);
}

size_t fl_srvsym_tailcalls(void *ctx, const char *module, const char *build_id, uint64_t ret,
                           const char *callee, const char *callee_build_id, uint64_t callee_rel,
                           uint64_t *sites, bool *exact, bool *in_callee, size_t cap)
{
    fl_srvsym *s = ctx;
    (void)module;
    if (!s || !build_id || !*build_id || !callee || strlen(build_id) >= ID_MAX)
        return 0;
    size_t out = 0;
    /* On the stack (~1 KB): asked for every caller frame of every crash,
     * mostly answered by the first lookup. */
    tail_search ts = {0}, *t = &ts;
    pthread_mutex_lock(&s->mu);
    /* Open: the caller's own frame was looked up just before. */
    entry *e = find_locked(s, build_id);
    fl_symcall c;
    if (!e || !fl_symcache_has_calls(e->sc) || !fl_symcache_call_at(e->sc, ret, &c))
        goto done;
    t->callee = callee;
    t->callee_here = callee_build_id && !strcmp(callee_build_id, build_id);
    if (c.target == FL_SYMCALL_NONE) {
        /* Another module's function: its tail calls are in its own
         * symcache, open since the frame above was looked up. */
        entry *e2 = t->callee_here || !callee_build_id || strlen(callee_build_id) >= ID_MAX
                        ? NULL
                        : find_locked(s, callee_build_id);
        if (e2)
            out = tail_other_module(t, e2, &c, callee_rel, sites, exact, cap);
        for (size_t k = 0; k < out; k++)
            in_callee[k] = true;
        goto counted;
    }
    t->sc = e->sc;
    t->callee_fn = t->callee_here ? fl_symcache_symbol_at(e->sc, callee_rel) : FL_SYMCALL_NONE;
    /* The frame above is the function called: nothing is missing (by its
     * entry; by name under an alias the symbol table prefers). */
    if (tail_reaches(t, &(fl_symcall){.target = c.target, .target_name = c.target_name}) ||
        fl_group_same_function(c.target_name, callee))
        goto done;
    if (t->callee_here) {
        const char *a = function_at(e->sc, c.target), *b = function_at(e->sc, callee_rel);
        if (a && b && !strcmp(a, b))
            goto done;
    }
    tail_way w = {0};
    tail_walk(t, &w, c.target);
    out = tail_answer(t, sites, exact, cap);
    for (size_t k = 0; k < out; k++)
        in_callee[k] = false;
counted:
    s->st.tail_frames += out;
done:
    pthread_mutex_unlock(&s->mu);
    return out;
}

void fl_srvsym_crash_begin(void *ctx)
{
    (void)ctx;
    fl_symlocate_budget(FL_SRVSYM_CRASH_MISSES, FL_SRVSYM_CRASH_SECONDS);
}

int fl_srvsym_gap(void *ctx, const char *build_id, char *wait, size_t cap)
{
    fl_srvsym *s = ctx;
    if (cap)
        wait[0] = '\0';
    if (!s || !build_id)
        return 0;
    pthread_mutex_lock(&s->mu);
    entry *e = find_locked(s, build_id);
    int r = 0;
    if (e && e->exports_only) {
        r = 4; /* its exports name its exported functions only */
    } else if (e && !fl_symcache_has_dwarf(e->sc)) {
        r = 1; /* a debug file with DWARF, uploaded later, would do */
    } else if (e && fl_symcache_dwo_missing(e->sc)) {
        /* The .dwo files, or a debug file with whole DWARF; without the
         * list (too many units' files found nowhere to look up?), only
         * the latter. */
        r = e->dwo_wait ? 3 : 1;
        if (e->dwo_wait)
            snprintf(wait, cap, "%s%s%s", e->dwo_wait,
                     fl_symcache_alt_missing(e->sc) && e->alt_wait[0] ? " " : "",
                     fl_symcache_alt_missing(e->sc) ? e->alt_wait : "");
    } else if (e && fl_symcache_alt_missing(e->sc)) {
        r = 2;
        snprintf(wait, cap, "%s", e->alt_wait);
    }
    pthread_mutex_unlock(&s->mu);
    return r;
}

uint64_t fl_srvsym_generation(fl_srvsym *s)
{
    pthread_mutex_lock(&s->mu);
    uint64_t g = s->generation;
    pthread_mutex_unlock(&s->mu);
    return g;
}

int fl_srvsym_find_file(fl_srvsym *s, const char *build_id, const char *path, bool code, char *out,
                        size_t cap, const char **source)
{
    if (!s || !build_id || !*build_id || strlen(build_id) >= ID_MAX)
        return -1;
    fetch_once(s, build_id);
    fl_symlocate_result res;
    char err[512];
    int rc = code ? fl_symlocate_find_executable(s->loc, build_id, path, &res, err, sizeof err)
                  : fl_symlocate_find(s->loc, build_id, path, &res, err, sizeof err);
    if (rc || strlen(res.path) >= cap)
        return -1;
    memcpy(out, res.path, strlen(res.path) + 1);
    if (source)
        *source = fl_symlocate_source_name(res.source);
    return 0;
}

int fl_srvsym_trace_formats(void *ctx, const char *build_id, const char *path,
                            struct fl_tracesec **out)
{
    fl_srvsym *s = ctx;
    *out = NULL;
    if (!s || !build_id || strlen(build_id) >= ID_MAX)
        return 0;
    pthread_mutex_lock(&s->mu);
    uint64_t gen = s->generation;
    for (size_t i = 0; i < FORMATS_CACHED && !*out; i++)
        if (s->fmts[i].ts && s->fmts[i].generation == gen &&
            !strcasecmp(s->fmts[i].build_id, build_id)) {
            s->fmts[i].used = ++s->clock;
            *out = fl_tracesec_ref(s->fmts[i].ts);
            s->st.formats_shared++;
        }
    pthread_mutex_unlock(&s->mu);
    if (*out)
        return 1;
    /* Not found is not kept: the locator keeps its own misses, and
     * debuginfod may have the file on the next crash. */
    char file[4096], err[512];
    fl_tracesec *ts = NULL;
    bool damaged = false;
    for (int code = 0; code < 2 && !ts; code++) {
        if (fl_srvsym_find_file(s, build_id, path, code, file, sizeof file, NULL))
            continue;
        int rc = fl_elf_tracesec(file, &ts, err, sizeof err);
        damaged |= rc < 0;
        if (rc != 1)
            ts = NULL;
    }
    if (!ts) {
        if (damaged) {
            pthread_mutex_lock(&s->mu);
            s->st.formats_damaged++;
            pthread_mutex_unlock(&s->mu);
        }
        return damaged ? -1 : 0;
    }
    pthread_mutex_lock(&s->mu);
    s->st.formats_read++;
    size_t k = 0; /* the oldest, or a free or stale slot */
    for (size_t i = 0; i < FORMATS_CACHED; i++) {
        struct formats *f = &s->fmts[i];
        if (!f->ts || f->generation != s->generation) {
            k = i;
            break;
        }
        if (f->used < s->fmts[k].used)
            k = i;
    }
    fl_tracesec_free(s->fmts[k].ts);
    snprintf(s->fmts[k].build_id, sizeof s->fmts[k].build_id, "%s", build_id);
    s->fmts[k].generation = gen; /* as of the lookup: a file since then reads again */
    s->fmts[k].used = ++s->clock;
    s->fmts[k].ts = fl_tracesec_ref(ts);
    pthread_mutex_unlock(&s->mu);
    *out = ts;
    return 1;
}

int fl_srvsym_symbolize(void *ctx, const char *module, const char *build_id, uint64_t rel,
                        fl_sym_frame *out, size_t cap)
{
    return fl_srvsym_lookup(ctx, build_id, module && module[0] == '/' ? module : NULL, rel, out,
                            cap);
}

int fl_srvsym_unwind(void *ctx, const fl_crashlog *log, uint64_t **pcs, size_t *n)
{
    fl_srvsym *s = ctx;
    *pcs = NULL;
    *n = 0;
    if (!s || !s->remote_unwind || !log->nregisters || !log->nstack)
        return 0;
    fl_ru_stack *st = malloc(sizeof *st); /* ~12 KiB: not on a worker's stack */
    if (!st)
        return -1;
    char err[256];
    int rc = 0;
    if (fl_remote_unwind(log, s->loc, st, err, sizeof err) == 0 &&
        fl_remote_unwind_pick(log, st) == FL_RU_PICK_SERVER && st->nframes) {
        if (!(*pcs = malloc(st->nframes * sizeof **pcs))) {
            rc = -1;
        } else {
            memcpy(*pcs, st->pcs, st->nframes * sizeof **pcs);
            *n = st->nframes;
            rc = 1;
        }
    }
    free(st);
    return rc;
}

static int dump_module(void *ctx, const char *build_id, const char *dump_path, char *path,
                       size_t cap)
{
    return fl_srvsym_find_file(ctx, build_id, dump_path && dump_path[0] == '/' ? dump_path : NULL,
                               true, path, cap, NULL);
}

int fl_srvsym_unwind_dump(void *ctx, const void *dump, size_t len, fl_minidump_stack **stacks,
                          size_t *n)
{
    fl_srvsym *s = ctx;
    *stacks = NULL;
    *n = 0;
    if (!s || !s->remote_unwind)
        return 0;
    fl_minidump_opts o = {.crash_time = 0, .find_module = dump_module, .find_ctx = s};
    char err[256];
    /* The dump was read at ingest: only memory can fail here now, and
     * then the crash keeps the threads' stacks its log has. */
    return fl_minidump_unwind(dump, len, &o, stacks, n, err, sizeof err) == FL_MINIDUMP_OK;
}

void fl_srvsym_count_built(fl_srvsym *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->st.built++;
    pthread_mutex_unlock(&s->mu);
}

void fl_srvsym_get_stats(fl_srvsym *s, fl_srvsym_stats *out)
{
    pthread_mutex_lock(&s->mu);
    *out = s->st;
    pthread_mutex_unlock(&s->mu);
    fl_symlocate_get_stats(s->loc, &out->locate);
}

bool fl_srvsym_next_fetched(void *ctx, char *id, size_t cap)
{
    fl_srvsym *s = ctx;
    bool got = false;
    pthread_mutex_lock(&s->mu);
    if (s->nfetched > 0) {
        snprintf(id, cap, "%s", s->fetched[--s->nfetched]);
        got = true;
    }
    pthread_mutex_unlock(&s->mu);
    return got;
}
