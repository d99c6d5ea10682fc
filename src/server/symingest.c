/*
 * symingest.c - uploads and the watched directory; see fl_symingest.h.
 */
#define _GNU_SOURCE
#include "fl_symingest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fl_elffile.h"
#include "fl_srvutil.h"
#include "fl_symcache.h"
#include "fl_symcheck.h"
#include "fl_symdwp.h"
#include "fl_symstore.h"

#define DEFAULT_BACKFILL 100000
#define MAX_WATCHED 256 /* files of incoming/ remembered between polls */
#define MAX_PREBUILD 64 /* symcaches waiting to be built in the background */
#define MAX_TMP_SEEN 64 /* files of tmp/ remembered between sweeps */

struct fl_symingest {
    char dir[PATH_MAX / 2], cache[PATH_MAX / 2];
    char tmp[PATH_MAX / 2], incoming[PATH_MAX / 2], processed[PATH_MAX / 2],
        failed[PATH_MAX / 2];
    fl_symingest_config cfg;
    pthread_t th;
    bool running, stopping;
    bool watch_failing; /* the store refused the last watched file (watcher only) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* Stored files whose symcache the watcher thread builds ahead of the
     * first crash (a worker would build it on demand otherwise). */
    char (*prebuild)[PATH_MAX];
    size_t nprebuild;
    unsigned long ntmp; /* names the temporary links of packages (atomic) */
};

static int mk(const char *d)
{
    return mkdir(d, 0755) && errno != EEXIST ? -1 : 0;
}

int fl_symingest_new(const fl_symingest_config *cfg, fl_symingest **out, char *err,
                     size_t errlen)
{
    *out = NULL;
    fl_symingest *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    g->cfg = *cfg;
    if (!g->cfg.backfill_max)
        g->cfg.backfill_max = DEFAULT_BACKFILL;
    if ((size_t)snprintf(g->dir, sizeof g->dir, "%s", cfg->symbols_dir) >= sizeof g->dir ||
        (size_t)snprintf(g->cache, sizeof g->cache, "%s", cfg->cache_dir) >= sizeof g->cache) {
        snprintf(err, errlen, "data directory path too long");
        free(g);
        return -1;
    }
    snprintf(g->tmp, sizeof g->tmp, "%.*s/tmp", (int)(sizeof g->tmp - 16), g->dir);
    snprintf(g->incoming, sizeof g->incoming, "%.*s/incoming", (int)(sizeof g->tmp - 16), g->dir);
    snprintf(g->processed, sizeof g->processed, "%.*s/processed", (int)(sizeof g->tmp - 16),
             g->dir);
    snprintf(g->failed, sizeof g->failed, "%.*s/failed", (int)(sizeof g->tmp - 16), g->dir);
    g->cfg.symbols_dir = g->dir;
    g->cfg.cache_dir = g->cache;
    if (mk(g->dir) || mk(g->tmp) || mk(g->incoming) || mk(g->processed) || mk(g->failed) ||
        fl_symstore_mkdirs(g->cache)) {
        snprintf(err, errlen, "cannot create the directories under %s: %s", g->dir,
                 strerror(errno));
        free(g);
        return -1;
    }
    if (!(g->prebuild = calloc(MAX_PREBUILD, sizeof *g->prebuild))) {
        snprintf(err, errlen, "out of memory");
        free(g);
        return -1;
    }
    pthread_mutex_init(&g->mu, NULL);
    fl_cond_init_mono(&g->cv);
    *out = g;
    return 0;
}

const char *fl_symingest_tmpdir(const fl_symingest *g)
{
    return g->tmp;
}

const char *fl_symingest_processed_dir(const fl_symingest *g)
{
    return g->processed;
}

/* "executable" when the file carries code (a .text with bytes), else
 * "debuginfo" (objcopy --only-keep-debug leaves .text as NOBITS). */
static const char *file_kind(const char *path)
{
    const char *kind = "debuginfo";
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return kind;
    elf_version(EV_CURRENT);
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    size_t shstrndx;
    if (e && elf_getshdrstrndx(e, &shstrndx) == 0) {
        for (Elf_Scn *scn = elf_nextscn(e, NULL); scn; scn = elf_nextscn(e, scn)) {
            GElf_Shdr sh;
            if (!gelf_getshdr(scn, &sh))
                continue;
            const char *n = elf_strptr(e, shstrndx, sh.sh_name);
            if (n && !strcmp(n, ".text") && sh.sh_type == SHT_PROGBITS && sh.sh_size) {
                kind = "executable";
                break;
            }
        }
    }
    elf_end(e);
    close(fd);
    return kind;
}

/* A file name safe to use under failed/ and processed/: the last path
 * component, no leading dot, at most 200 bytes. */
static void safe_name(const char *name, char *out, size_t cap)
{
    const char *b = name ? strrchr(name, '/') : NULL;
    b = b ? b + 1 : name;
    if (!b || !*b || *b == '.')
        b = "upload";
    snprintf(out, cap, "%.200s", b);
}

static void record(fl_symingest *g, fl_store_conn *conn, const fl_symbol_rec *r)
{
    fl_store *s = g->cfg.store;
    if (s->begin(conn) == 0) {
        if (s->add_symbol(conn, r) || s->commit(conn))
            s->rollback(conn);
    }
}

/* The backfill of an ingested file, with its record. */
static int arrived(fl_symingest *g, fl_store_conn *conn, const fl_symbol_rec *r, size_t *nq,
                   char *err, size_t errlen)
{
    return fl_queue_backfill(g->cfg.queue, g->cfg.store, conn, r, r->build_id,
                             g->cfg.backfill_max ? g->cfg.backfill_max : DEFAULT_BACKFILL,
                             g->cfg.publish, g->cfg.publish_arg, nq, err, errlen);
}

/* A .dwp package (the .dwo files of many units in one, with a unit index):
 * kept once, under its first DWO id, and linked under every DWO id it
 * holds as that id's .dwo file (processed/dwo-ID/dwo), where find_dwo
 * looks (the builder reads a package there as it reads PROG.dwp).  Each
 * id is recorded (kind "dwp") and its waiting crashes re-queued as for a
 * .dwo upload.  Returns as fl_symingest_file; build_id: the first id's
 * key.  keep_failed (a watched file): a package the store cannot record
 * goes back to incoming/, to be tried again, as any watched file. */
static int ingest_package(fl_symingest *g, fl_store_conn *conn, const fl_dwp *pkg, const char *path,
                          const char *nm, long long size, bool keep_failed, char *build_id,
                          size_t cap, char *err, size_t errlen)
{
    size_t n = fl_dwp_count(pkg);
    char first[64], home[PATH_MAX + 8], dir[PATH_MAX], dest[PATH_MAX + 8], tmp[PATH_MAX + 48];
    fl_symbol_rec r = {
        .name = nm, .size = size, .uploaded = fl_now(), .status = "ok", .kind = "dwp"};
    if (n == 0) {
        snprintf(err, errlen, "not a usable .dwp package: its unit index holds no unit");
        r.status = "failed";
        r.error = err;
        unlink(path);
        record(g, conn, &r);
        return 1;
    }
    snprintf(first, sizeof first, FL_DWO_KEY_PREFIX "%016" PRIx64, fl_dwp_id(pkg, 0));
    snprintf(dir, sizeof dir, "%s/%s", g->processed, first);
    if ((size_t)snprintf(home, sizeof home, "%s/dwp", dir) >= sizeof home ||
        (mkdir(dir, 0755) && errno != EEXIST) || rename(path, home)) {
        snprintf(err, errlen, "cannot store the file as %s: %s", home, strerror(errno));
        unlink(path);
        return -1;
    }
    /* A watched package put back after the store refused it (below) is a
     * second link to home, and rename() leaves both names of one file. */
    struct stat sp, sh;
    if (!lstat(path, &sp) && !lstat(home, &sh) && sp.st_ino == sh.st_ino && sp.st_dev == sh.st_dev)
        unlink(path);
    int rc = 0;
    size_t queued = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        char key[64];
        snprintf(key, sizeof key, FL_DWO_KEY_PREFIX "%016" PRIx64, fl_dwp_id(pkg, i));
        snprintf(dir, sizeof dir, "%s/%s", g->processed, key);
        snprintf(dest, sizeof dest, "%s/dwo", dir);
        /* One file, a name per id (replacing a .dwo uploaded before),
         * linked through a temporary name of this call's own: uploads of
         * one package at once each link theirs, and once one has linked
         * the file another has just put at home, the other's rename() of
         * its link (a second name of the same file) does nothing and
         * leaves the temporary name -- removed after the rename.  In
         * tmp/ (the same file system), named as an upload's part: one
         * that a killed server left is swept away with those. */
        snprintf(tmp, sizeof tmp, "%s/upload.dwo.%ld.%lu", g->tmp, (long)getpid(),
                 __atomic_fetch_add(&g->ntmp, 1, __ATOMIC_RELAXED));
        if ((mkdir(dir, 0755) && errno != EEXIST) || link(home, tmp) || rename(tmp, dest)) {
            snprintf(err, errlen, "cannot store the file as %s: %s", dest, strerror(errno));
            unlink(tmp);
            rc = -1;
            break;
        }
        unlink(tmp); /* ENOENT unless dest was this file already */
        r.build_id = key;
        r.path = dest;
        size_t nq = 0;
        if (arrived(g, conn, &r, &nq, err, errlen))
            rc = 2; /* the uploader sends it again */
        queued += nq;
    }
    /* Unrecorded (some ids may be, the rest not): a watched package goes
     * back to incoming/ (a link: the ids stored so far stay usable) for a
     * later poll to record them all again, as a single file does. */
    if (rc == 2 && keep_failed && link(home, path) && rename(home, path)) {
        /* nothing to try again with: at least it is in processed/ */
    }
    fl_srvsym_flush(g->cfg.sym); /* it may complete any program's symcache */
    if (queued && g->cfg.notify)
        g->cfg.notify(g->cfg.notify_arg);
    snprintf(build_id, cap, "%s", first);
    return rc;
}

int fl_symingest_file(fl_symingest *g, fl_store_conn *conn, const char *path, const char *name,
                      long long size, bool keep_failed, char *build_id, size_t cap, char *err,
                      size_t errlen)
{
    char hex[2 * FL_SYM_BUILD_ID_MAX + 1] = "", why[512] = "", nm[256];
    char dest[PATH_MAX], d2[PATH_MAX];
    safe_name(name, nm, sizeof nm);
    fl_symbol_rec r = {.name = nm, .size = size, .uploaded = fl_now()};
    /* The cheap checks run here (on an HTTP thread for uploads): an ELF
     * file with a GNU build id and something to symbolize with, the check
     * `faultline symbols add` runs before it uploads.  The symcache is
     * built in the background (prebuild), or by the first worker that
     * needs it. */
    fl_symcheck_info info;
    memset(&info, 0, sizeof info);
    /* A split DWARF object (.dwo) has no build id: it is kept under its
     * DWO id, which the program's skeleton unit names (fl_store.h). */
    char dwo[17];
    fl_dwp *pkg = NULL;
    char pwhy[400];
    int rc = fl_dwp_open(path, &pkg, pwhy, sizeof pwhy);
    if (rc == 1) {
        rc = ingest_package(g, conn, pkg, path, nm, size, keep_failed, build_id, cap, err, errlen);
        fl_dwp_close(pkg);
        return rc;
    }
    if (rc < 0) {
        snprintf(why, sizeof why, "not a usable .dwp package: %s", pwhy);
    } else {
        rc = fl_symcheck_dwo_file(path, dwo, sizeof dwo, why, sizeof why);
    }
    bool is_dwo = rc == 1;
    if (rc == 0)
        rc = fl_symcheck_debug_file(path, &info, why, sizeof why);
    if (is_dwo) {
        rc = 0;
        snprintf(hex, sizeof hex, FL_DWO_KEY_PREFIX "%s", dwo);
    } else {
        snprintf(hex, sizeof hex, "%s", info.build_id);
    }
    if (rc != 0) {
        snprintf(err, errlen, "%s", why[0] ? why : fl_symcheck_strerror(rc));
        r.status = "failed";
        r.error = err;
        r.build_id = hex[0] ? hex : NULL;
        if (keep_failed) {
            snprintf(dest, sizeof dest, "%s/%s", g->failed, nm);
            if (rename(path, dest) == 0) {
                snprintf(d2, sizeof d2, "%s/%s.error", g->failed, nm);
                FILE *f = fopen(d2, "w");
                if (f) {
                    fprintf(f, "%s\n", err);
                    fclose(f);
                }
            } else {
                unlink(path);
            }
        } else {
            unlink(path);
        }
        record(g, conn, &r);
        return 1;
    }
    const char *kind = is_dwo ? "dwo" : file_kind(path);
    snprintf(d2, sizeof d2, "%s/%s", g->processed, hex);
    if ((size_t)snprintf(dest, sizeof dest, "%s/%s", d2, kind) >= sizeof dest) {
        snprintf(err, errlen, "cannot store the file as %s/%s: the path is too long", d2, kind);
        unlink(path);
        return -1;
    }
    /* Of two files of one build id in one place, the more complete stays,
     * as `symbols add DIR` chooses among its own: a stripped copy sent
     * after the debug file would otherwise take its place, and every
     * frame its file and line.  Said to the uploader (err, on success). */
    struct stat had;
    int was = 0, now = 0;
    if (!is_dwo && lstat(dest, &had) == 0 &&
        (was = fl_elf_completeness(dest)) > (now = fl_elf_completeness(path))) {
        unlink(path);
        snprintf(err, errlen,
                 "the file stored before for this build id was kept: it is more complete "
                 "(%s) than this one (%s)",
                 was >= 2 ? "DWARF" : "code",
                 now >= 2 ? "DWARF"
                 : now    ? "code"
                          : "symbols only");
        r.build_id = hex;
        r.status = "ok";
        r.kind = kind;
        r.path = dest;
        record(g, conn, &r);
        snprintf(build_id, cap, "%s", hex);
        return 0;
    }
    if ((mkdir(d2, 0755) && errno != EEXIST) || rename(path, dest)) {
        snprintf(err, errlen, "cannot store the file as %s: %s", dest, strerror(errno));
        unlink(path);
        return -1;
    }
    /* A watched file put back after the store refused it (below) is a
     * second link to dest, and rename() leaves both names of one file. */
    struct stat sp, sd;
    if (!lstat(path, &sp) && !lstat(dest, &sd) && sp.st_ino == sd.st_ino && sp.st_dev == sd.st_dev)
        unlink(path);
    /* A .dwo file may complete any program's symcache: those open are
     * dropped (and rebuilt, fl_symstore_get, when they lacked it). */
    if (is_dwo)
        fl_srvsym_flush(g->cfg.sym);
    else
        fl_srvsym_forget(g->cfg.sym, hex);
    r.build_id = hex;
    r.status = "ok";
    r.kind = kind;
    r.path = dest;
    size_t nq = 0;
    if (arrived(g, conn, &r, &nq, err, errlen)) {
        /* A full disk, a database locked for longer than we wait: the
         * file is in processed/ (a worker may use it), but unrecorded, and
         * the crashes that lacked it are not re-queued.  A watched file
         * goes back to incoming/ (a link: an older copy of the build id
         * stays usable meanwhile) for a later poll to try again; an
         * uploader is told to send it again. */
        if (keep_failed && link(dest, path) && rename(dest, path)) {
            /* nothing to try again with: at least it is in processed/ */
        }
        return 2;
    }
    if (keep_failed && strcmp(nm, hex)) {
        /* processed/<name> shows the operator where the file went. */
        snprintf(d2, sizeof d2, "%s/%s", g->processed, nm);
        char rel[300];
        snprintf(rel, sizeof rel, "%s/%s", hex, kind);
        unlink(d2);
        if (symlink(rel, d2)) {
            /* cosmetic only */
        }
    }
    if (nq && g->cfg.notify)
        g->cfg.notify(g->cfg.notify_arg);
    pthread_mutex_lock(&g->mu);
    /* else a worker builds it on demand; a .dwo file is no module */
    if (!is_dwo && g->nprebuild < MAX_PREBUILD)
        snprintf(g->prebuild[g->nprebuild++], PATH_MAX, "%s", dest);
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    snprintf(build_id, cap, "%s", hex);
    return 0;
}

/* Build the symcaches of freshly stored files (watcher thread). */
static void prebuild(fl_symingest *g)
{
    char p[PATH_MAX];
    for (;;) {
        pthread_mutex_lock(&g->mu);
        bool any = g->nprebuild > 0 && !g->stopping;
        if (any)
            memcpy(p, g->prebuild[--g->nprebuild], sizeof p);
        pthread_mutex_unlock(&g->mu);
        if (!any)
            return;
        fl_symcache *sc = NULL;
        int built = 0;
        char err[256];
        /* With the uploaded .dwo files, as the workers build it (else
         * they would build it again).  Not with the dwz-file finder,
         * which may ask debuginfod and hold up the watched directory: a
         * worker rebuilds what lacks one found so. */
        fl_symbuild_opts opts;
        fl_srvsym_build_opts(g->cfg.sym, &opts);
        opts.find_alt = NULL;
        int rc =
            fl_symstore_get(g->cache, p, &opts, 0, &sc, &built, NULL, NULL, 0, err, sizeof err);
        if (rc == 0)
            fl_symcache_close(sc);
        if (rc == 0 && built) /* faultline_symcache_built_total counts every build */
            fl_srvsym_count_built(g->cfg.sym);
        if (rc != 0 || built)
            fl_release_heap(); /* what the build freed */
    }
}

/* ---- the watched directory */

typedef struct seen {
    char name[256];
    off_t size;
    struct timespec mtime;
    uint64_t since_ns; /* fl_mono_ns() when this size and mtime were first seen */
} seen;

/* A writer that pauses (a slow copy, a network file system) leaves a file
 * unchanged for a poll half written: an ELF file's section headers come
 * last, so it looks truncated.  Such a file, unchanged for less than
 * PARTIAL_WAIT_S, is left where it is and looked at again, rather than
 * failed for good while it goes on growing.  Measured on the monotonic
 * clock from when this poll first saw it so, not from its mtime: the wall
 * clock stepped forward made a paused writer's file look a minute old and
 * failed it, stepped back kept a truncated one for the step. */
#define PARTIAL_WAIT_S 60
/* An empty file likewise: cp (and most copies) makes the file first and
 * writes into it after, so an empty file may be one whose writer has not
 * begun yet -- a slow source, a copy queued behind others.  Left for
 * EMPTY_WAIT_S unchanged, it fails as any unusable file then (see the
 * layout in fl_symingest.h). */
#define EMPTY_WAIT_S 60

static bool still_written(const char *path, off_t size, uint64_t unchanged_ns)
{
    if (size == 0)
        return unchanged_ns < (uint64_t)EMPTY_WAIT_S * 1000000000u;
    if (unchanged_ns >= (uint64_t)PARTIAL_WAIT_S * 1000000000u)
        return false;
    fl_symcheck_info info;
    char why[256] = "";
    return fl_symcheck_debug_file(path, &info, why, sizeof why) != 0 && strstr(why, "truncated");
}

static void poll_once(fl_symingest *g, fl_store_conn *conn, seen *prev, size_t *nprev)
{
    seen cur[MAX_WATCHED];
    size_t ncur = 0;
    DIR *d = opendir(g->incoming);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)) && ncur < MAX_WATCHED) {
        if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof cur[0].name)
            continue;
        char p[PATH_MAX];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", g->incoming, de->d_name);
        if (lstat(p, &st) || !S_ISREG(st.st_mode))
            continue;
        bool still = false;
        uint64_t now = fl_mono_ns(), since = now;
        for (size_t i = 0; i < *nprev; i++)
            if (!strcmp(prev[i].name, de->d_name)) {
                still = prev[i].size == st.st_size &&
                        prev[i].mtime.tv_sec == st.st_mtim.tv_sec &&
                        prev[i].mtime.tv_nsec == st.st_mtim.tv_nsec;
                if (still)
                    since = prev[i].since_ns;
                break;
            }
        if (still && !still_written(p, st.st_size, now - since)) {
            /* Unchanged for a whole poll: the writer is done with it. */
            char id[160], err[512];
            int rc = fl_symingest_file(g, conn, p, de->d_name, (long long)st.st_size, true, id,
                                       sizeof id, err, sizeof err);
            if (rc == 2 && !g->watch_failing)
                fl_log(stderr,
                       "faultline serve: symbols: cannot record incoming/%s: %s; it stays in "
                       "incoming/ and is tried again every second",
                       de->d_name, err);
            if (rc != 2 && g->watch_failing)
                fl_log(stderr, "faultline serve: symbols: recording debug files works again");
            g->watch_failing = rc == 2;
            if (rc != 2)
                continue;
            /* Back in incoming/: seen, so the next poll tries again. */
        }
        seen *s = &cur[ncur++];
        snprintf(s->name, sizeof s->name, "%s", de->d_name);
        s->size = st.st_size;
        s->mtime = st.st_mtim;
        s->since_ns = since;
    }
    closedir(d);
    memcpy(prev, cur, ncur * sizeof *cur);
    *nprev = ncur;
}

/* An upload is received into tmp/upload.XXXXXX and moved or removed when
 * it ends -- unless the server is killed meanwhile (kill -9, a report that
 * crashes it, a power cut): its part stayed there for good, up to
 * --max-symbol-file (1 GiB) for each upload cut so.  A file of tmp/ whose
 * size and mtime did not change from one sweep to the next is not being
 * received by any server: a connection idle for --timeout is closed and
 * its file removed, so sweeps are twice that apart, plus a minute for the
 * check and the store's record of a complete upload (which may wait for a
 * locked database).  Compared by what was seen, not by the mtime's age:
 * a step of the wall clock would make a file just written look old. */
static void sweep_tmp(fl_symingest *g, seen *prev, size_t *nprev)
{
    seen cur[MAX_TMP_SEEN];
    size_t ncur = 0;
    DIR *d = opendir(g->tmp);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)) && ncur < MAX_TMP_SEEN) {
        if (strncmp(de->d_name, "upload.", 7) || strlen(de->d_name) >= sizeof cur[0].name)
            continue;
        char p[PATH_MAX];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", g->tmp, de->d_name);
        if (lstat(p, &st) || !S_ISREG(st.st_mode))
            continue;
        bool still = false;
        for (size_t i = 0; i < *nprev && !still; i++)
            still = !strcmp(prev[i].name, de->d_name) && prev[i].size == st.st_size &&
                    prev[i].mtime.tv_sec == st.st_mtim.tv_sec &&
                    prev[i].mtime.tv_nsec == st.st_mtim.tv_nsec;
        if (still && unlink(p) == 0) {
            fl_log(stderr,
                   "faultline serve: symbols: removed tmp/%s (%lld bytes): an upload that "
                   "ended with its server",
                   de->d_name, (long long)st.st_size);
            continue;
        }
        seen *c = &cur[ncur++];
        snprintf(c->name, sizeof c->name, "%s", de->d_name);
        c->size = st.st_size;
        c->mtime = st.st_mtim;
    }
    closedir(d);
    memcpy(prev, cur, ncur * sizeof *cur);
    *nprev = ncur;
}

static void *watch_main(void *arg)
{
    fl_symingest *g = arg;
    pthread_setname_np(pthread_self(), "fl-symwatch");
    fl_store_conn *conn = g->cfg.store->connect(g->cfg.store);
    seen *prev = calloc(MAX_WATCHED, sizeof *prev);
    seen *tmp_prev = calloc(MAX_TMP_SEEN, sizeof *tmp_prev);
    size_t nprev = 0, ntmp = 0;
    uint64_t sweep_every = (2 * (uint64_t)(g->cfg.upload_idle_s ? g->cfg.upload_idle_s : 30) + 60) *
                           1000000000ull,
             swept = 0;
    pthread_mutex_lock(&g->mu);
    while (!g->stopping) {
        pthread_mutex_unlock(&g->mu);
        if (conn && prev)
            poll_once(g, conn, prev, &nprev);
        uint64_t now = fl_mono_ns();
        if (tmp_prev && (!swept || now - swept >= sweep_every)) {
            sweep_tmp(g, tmp_prev, &ntmp);
            swept = now;
        }
        prebuild(g);
        pthread_mutex_lock(&g->mu);
        if (g->stopping)
            break;
        if (g->nprebuild)
            continue;
        fl_cond_wait_ms(&g->cv, &g->mu, 1000);
    }
    pthread_mutex_unlock(&g->mu);
    free(prev);
    free(tmp_prev);
    g->cfg.store->disconnect(conn);
    return NULL;
}

int fl_symingest_watch(fl_symingest *g)
{
    if (g->running)
        return 0;
    if (pthread_create(&g->th, NULL, watch_main, g))
        return -1;
    g->running = true;
    return 0;
}

void fl_symingest_free(fl_symingest *g)
{
    if (!g)
        return;
    if (g->running) {
        pthread_mutex_lock(&g->mu);
        g->stopping = true;
        pthread_cond_broadcast(&g->cv);
        pthread_mutex_unlock(&g->mu);
        pthread_join(g->th, NULL);
    }
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    free(g->prebuild);
    free(g);
}
