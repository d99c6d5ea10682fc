/*
 * symstore.c - find or build the symcache of a module in a cache directory.
 *
 * The fast path is what makes a second `faultline symbolicate` start in
 * milliseconds: read the module's build id and symbol-table fingerprint
 * (a few pages of the ELF file), mmap the symcache, verify it.
 */
#define _GNU_SOURCE /* F_OFD_SETLKW */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fl_symdwo.h"
#include "fl_symstore.h"
#include "symcache_format.h"

int fl_symstore_default_dir(char *buf, size_t cap)
{
    const char *xdg = getenv("XDG_CACHE_HOME");
    int n;
    if (xdg && xdg[0] == '/') {
        n = snprintf(buf, cap, "%s/faultline/symcache", xdg);
    } else {
        const char *home = getenv("HOME");
        if (!home || !*home)
            return FL_SYM_EINVAL;
        n = snprintf(buf, cap, "%s/.cache/faultline/symcache", home);
    }
    return (n < 0 || (size_t)n >= cap) ? FL_SYM_EINVAL : 0;
}

int fl_symstore_mkdirs(const char *dir)
{
    char p[PATH_MAX];
    if ((size_t)snprintf(p, sizeof p, "%s", dir) >= sizeof p)
        return FL_SYM_EINVAL;
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST)
            return FL_SYM_EIO;
        *s = '/';
    }
    if (mkdir(p, 0755) != 0 && errno != EEXIST)
        return FL_SYM_EIO;
    return 0;
}

/* A symcache is written to NAME.tmp.XXXXXX and renamed into place
 * (symcache_build.c): a builder killed before the rename leaves that file
 * behind.  Its key (lock_key) is the name up to its first '.'.  With
 * only_key, the caller holds that key's build lock and the key's files
 * go; without, each goes when its key's lock can be had now, that is,
 * when no live build of any process writes it. */
static size_t clean_tmp(const char *dir, const char *only_key)
{
    static const char mark[] = ".symcache.tmp.";
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *name = de->d_name, *t = strstr(name, mark);
        size_t klen = strcspn(name, ".");
        if (!t || klen == 0 || strlen(t + sizeof mark - 1) != 6)
            continue;
        char key[NAME_MAX + 1];
        memcpy(key, name, klen);
        key[klen] = '\0';
        int lock = -1;
        if (only_key ? strcmp(key, only_key) != 0
                     : (lock = fl_sym_lock_byte(dir, ".lock", key, false)) < 0)
            continue;
        if (unlinkat(dirfd(d), name, 0) == 0)
            n++;
        if (lock >= 0)
            close(lock);
    }
    closedir(d);
    return n;
}

int fl_symstore_clean(const char *dir, size_t *dirs, size_t *files)
{
    int rc = fl_dwo_views_clean(dir, dirs);
    size_t n = clean_tmp(dir, NULL);
    if (files)
        *files = n;
    return rc;
}

/* Opens path if it is a valid symcache of this module, written by a
 * builder as good as this one; NULL otherwise.  An older builder's file
 * has the same layout and passes every check, but may answer worse than
 * a build now would (see FL_SC_BUILDER): it is rebuilt once. */
static fl_symcache *try_open(const char *path, const uint8_t *id, size_t idlen, uint64_t fp)
{
    fl_symcache *sc = NULL;
    if (fl_symcache_open(path, &sc, NULL, 0) != 0)
        return NULL;
    const uint8_t *cid;
    size_t clen = fl_symcache_build_id(sc, &cid);
    if (clen != idlen || memcmp(cid, id, idlen) != 0 || fl_symcache_fingerprint(sc) != fp ||
        fl_symcache_builder(sc) < FL_SC_BUILDER) {
        fl_symcache_close(sc);
        return NULL;
    }
    return sc;
}

/* A symcache built while its dwz file or some .dwo files were nowhere is
 * rebuilt once they can be found: checking costs reading the debug
 * file's section headers (and its unit headers, and the headers of the
 * .dwo files found, for split DWARF). */
static int files_arrived(fl_symcache *sc, const char *elf_path, const fl_symbuild_opts *opts)
{
    char hex[2 * FL_SYM_BUILD_ID_MAX + 1], where[PATH_MAX];
    size_t units = 0, missing = 0;
    if (fl_symcache_alt_missing(sc) &&
        fl_symcache_altlink(elf_path, opts, hex, sizeof hex, where, sizeof where) == 1 && where[0])
        return 1;
    if (!fl_symcache_dwo_missing(sc))
        return 0;
    /* Rebuilt as soon as one more unit's .dwo is found (through opts too:
     * a server's uploads), not only once all are: one lost for good must
     * not keep the others out. */
    fl_dwo_unit *u = NULL;
    if (fl_symcache_dwo_list(elf_path, opts, &u, &units) != 0)
        return 0;
    for (size_t i = 0; i < units; i++)
        missing += u[i].found == FL_DWO_NOWHERE;
    fl_symcache_dwo_free(u, units);
    unsigned then = fl_symcache_dwo_missing_count(sc);
    return units && (then ? missing + 1 < then : missing == 0);
}

/* The cached symcache of this module under primary or variant, when it is
 * valid and need not be rebuilt; NULL otherwise.  *chosen: its path. */
static fl_symcache *open_cached(const char *primary, const char *variant, const uint8_t *id,
                                size_t idlen, uint64_t fp, const char *elf_path,
                                const fl_symbuild_opts *opts, const char **chosen)
{
    fl_symcache *sc = try_open(primary, id, idlen, fp);
    *chosen = primary;
    if (!sc) {
        sc = try_open(variant, id, idlen, fp);
        *chosen = variant;
    }
    if (sc && files_arrived(sc, elf_path, opts)) {
        fl_symcache_close(sc);
        sc = NULL;
    }
    return sc;
}

/* Builds of one symcache are made one at a time, by the threads of a
 * process and by the processes sharing the directory.  A build holds the
 * module's whole debug information in memory (about three times the size
 * of a large debug file) and takes seconds to minutes of CPU; on a server,
 * the upload thread and every worker ask for the symcache of a file just
 * uploaded at the same moment (its crashes are re-queued with it), and
 * each built its own copy: three builds' memory for one.  The ones that
 * wait open what the first one built.  The lock is an open file
 * description lock (threads of one process do not share it, as they share
 * a POSIX record lock) on one byte of DIR/.lock picked by the key: two
 * keys on the same byte only wait for each other.  Returns the descriptor
 * holding the lock (close it to release), or -1: build without it. */
static int lock_key(const char *dir, const char *key)
{
    return fl_sym_lock_byte(dir, ".lock", key, true);
}

int fl_symstore_get(const char *dir, const char *elf_path, const fl_symbuild_opts *opts, int force,
                    fl_symcache **out, int *built, fl_symbuild_stats *stats, char *path_out,
                    size_t path_cap, char *err, size_t errlen)
{
    uint8_t id[FL_SYM_BUILD_ID_MAX];
    size_t idlen = 0;
    uint64_t fp = 0;
    *out = NULL;
    *built = 0;
    int rc = fl_symcache_identify(elf_path, id, &idlen, &fp, err, errlen);
    if (rc)
        return rc;
    char key[2 * FL_SYM_BUILD_ID_MAX + 64];
    if (idlen) {
        fl_sym_hex(id, idlen, key, sizeof key);
    } else {
        /* No build id: key on where the file is and which version of it. */
        char real[PATH_MAX];
        struct stat st;
        if (!realpath(elf_path, real) || stat(real, &st) != 0) {
            if (err && errlen)
                snprintf(err, errlen, "%s: %s", elf_path, strerror(errno));
            return FL_SYM_EIO;
        }
        uint64_t h = fl_sc_hash64(real, strlen(real));
        h ^= (uint64_t)st.st_size * 0x9E3779B185EBCA87ull;
        h ^= (uint64_t)st.st_mtim.tv_sec * 0xC2B2AE3D27D4EB4Full + (uint64_t)st.st_mtim.tv_nsec;
        snprintf(key, sizeof key, "nobuildid-%016llx", (unsigned long long)h);
    }
    char primary[PATH_MAX], variant[PATH_MAX];
    if ((size_t)snprintf(primary, sizeof primary, "%s/%s.symcache", dir, key) >= sizeof primary ||
        (size_t)snprintf(variant, sizeof variant, "%s/%s.%016llx.symcache", dir, key,
                         (unsigned long long)fp) >= sizeof variant) {
        if (err && errlen)
            snprintf(err, errlen, "cache path too long");
        return FL_SYM_EINVAL;
    }
    const char *chosen = NULL;
    fl_symcache *sc =
        force ? NULL : open_cached(primary, variant, id, idlen, fp, elf_path, opts, &chosen);
    if (sc) {
        *out = sc;
        if (path_out && path_cap)
            snprintf(path_out, path_cap, "%s", chosen);
        return 0;
    }
    if (fl_symstore_mkdirs(dir) != 0) {
        if (err && errlen)
            snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
        return FL_SYM_EIO;
    }
    /* One build at a time (lock_key); whoever waited for another may find
     * its symcache made now. */
    int lock = lock_key(dir, key);
    if (lock >= 0 && !force &&
        (sc = open_cached(primary, variant, id, idlen, fp, elf_path, opts, &chosen)) != NULL) {
        close(lock);
        *out = sc;
        if (path_out && path_cap)
            snprintf(path_out, path_cap, "%s", chosen);
        return 0;
    }
    if (lock >= 0)
        clean_tmp(dir, key); /* of this key's builds killed before */
    /* Build.  The primary name goes to whoever comes first; a valid
     * symcache of the other variant already there keeps it. */
    chosen = primary;
    fl_symcache *other = NULL;
    if (fl_symcache_open(primary, &other, NULL, 0) == 0) {
        const uint8_t *cid;
        size_t clen = fl_symcache_build_id(other, &cid);
        if (clen == idlen && memcmp(cid, id, idlen) == 0 && fl_symcache_fingerprint(other) != fp)
            chosen = variant;
        fl_symcache_close(other);
    }
    rc = fl_symcache_build_with(elf_path, chosen, opts, stats, err, errlen);
    if (rc == 0)
        rc = fl_symcache_open(chosen, out, err, errlen);
    if (lock >= 0)
        close(lock);
    if (rc)
        return rc;
    *built = 1;
    if (path_out && path_cap)
        snprintf(path_out, path_cap, "%s", chosen);
    return 0;
}
