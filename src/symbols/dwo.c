/*
 * dwo.c - split DWARF's .dwo files: what one is, where a program's are,
 * and how libdw is made to read ones it would not find.
 *
 * A program built with -gsplit-dwarf keeps a skeleton unit per object
 * file (its address ranges and line table) and the DIEs -- functions,
 * inlined calls -- go to a .dwo file per object, written next to it at
 * build time.  The skeleton names it (DW_AT_dwo_name, GNU DWARF 4's
 * DW_AT_GNU_dwo_name) and both carry the same 64-bit DWO id.  A .dwo file
 * has no build id: the DWO id is its key.
 *
 * libdw (elfutils 0.188) opens a skeleton's .dwo by itself, the first
 * time the unit's split DIE is asked for: the name relative to the
 * directory of the file it read the skeleton from (the real path of its
 * descriptor, from /proc/self/fd), then relative to DW_AT_comp_dir, an
 * absolute name as it is; it takes the file when its split unit has the
 * skeleton's id.  It has no call to hand it a unit's file.  A server gets
 * the .dwo files as uploads, stored by id, nowhere near those paths.  So
 * fl_dwo_view_begin builds a private view of the DWARF file in which
 * libdw's first place holds the right file for every unit:
 *
 *  - the DWARF file is hard-linked (copied when it is on another file
 *    system) into a private directory, and opened from there: libdw's
 *    "directory of the skeleton's file" is then that directory (a
 *    symbolic link would not do, libdw resolves the descriptor's path);
 *  - the file is mapped copy-on-write (ELF_C_READ_MMAP_PRIVATE), and each
 *    unit's DW_AT_dwo_name is made, in memory -- never on disk -- a plain
 *    name (no directory) that is the unit's alone: the name it has when
 *    it is such, else another string of the section (naming each unit's
 *    .dwo, below);
 *  - that name in the private directory is a symbolic link to the unit's
 *    .dwo file (where libdw would have found it, or the upload), or to
 *    one written into the directory: a unit's part of a .dwp package
 *    (dwp.c), or a .dwo file of several .debug_info.dwo sections -- gcc's
 *    DWARF 5 type units, one section each before the compile unit's --
 *    with them in one (libdw 0.188 reads the first section of a name
 *    only, and would see no split compile unit).
 *
 * Naming every unit, not only those that moved, keeps the ones libdw
 * found near the original file (the directory changed).  Names relative
 * with "../" or absolute ones (-o /abs/path) are covered alike, and so
 * are units that share one name string (the same relative name under
 * several DW_AT_comp_dirs).  The directory goes when the build ends; one
 * a killed build left is removed later, and only once nobody uses it
 * (directories killed builds left, below).
 */
#define _GNU_SOURCE
#include "fl_symdwo.h"
#include "fl_symdwp.h"
#include "symcache_format.h"

#include <dirent.h>
#include <dwarf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_UNITS (1u << 20)

static void say(char *why, size_t whylen, const char *fmt, const char *arg)
{
    if (why && whylen)
        snprintf(why, whylen, fmt, arg);
}

/* A file's name and the system's reason. */
static void say_errno(char *why, size_t whylen, const char *path, int e)
{
    if (why && whylen)
        snprintf(why, whylen, "%.*s: %s", (int)(whylen / 2), path, strerror(e));
}

static int read_units(Elf *elf, uint64_t *id, char *why, size_t whylen);

/* fl_dwo_read, and *merged (may be NULL) set when the file must be
 * handed to libdw merged (fl_dwo_write_merged). */
static int dwo_read(Elf *elf, size_t size, uint64_t *id, char *why, size_t whylen, bool *merged)
{
    GElf_Ehdr eh;
    size_t shstrndx;
    if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
        return 0;
    uint64_t shnum = eh.e_shnum ? eh.e_shnum : 1, entsize = eh.e_shentsize ? eh.e_shentsize : 1;
    if (eh.e_shoff != 0 && (eh.e_shoff > size || (size - eh.e_shoff) / entsize < shnum))
        return 0; /* no section to read: the debug-file check says why */
    if (elf_getshdrstrndx(elf, &shstrndx) != 0)
        return 0;
    bool info = false, index = false;
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh))
            return 0;
        const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
        if (!name)
            continue;
        if (!strcmp(name, ".debug_info.dwo") && sh.sh_type != SHT_NOBITS && sh.sh_size > 0)
            info = true;
        index |= !strcmp(name, ".debug_cu_index");
    }
    if (!info)
        return 0;
    if (index) {
        /* Read as a package (dwp.c) by its callers, not as one .dwo. */
        say(why, whylen, "%s",
            "a .dwp package (the .dwo files of several units in one), not a single .dwo file");
        return -1;
    }
    bool several = fl_dwo_info_sections(elf) > 1;
    if (merged)
        *merged = several;
    if (!several)
        return read_units(elf, id, why, whylen);
    /* Several .debug_info.dwo sections (gcc's type units, each in its
     * own): libdw reads the first only, so the units are read from the
     * file with them in one, as the view hands it to libdw. */
    int fd = memfd_create("faultline-dwo", MFD_CLOEXEC);
    if (fd < 0) {
        say(why, whylen, "cannot read split DWARF: %s", strerror(errno));
        return -1;
    }
    char w[256];
    Elf *m = NULL;
    int rc;
    if (fl_dwo_write_merged(elf, fd, w, sizeof w) != 0) {
        say(why, whylen, "damaged split DWARF: %s", w);
        rc = -1;
    } else if (!(m = elf_begin(fd, ELF_C_READ_MMAP, NULL))) {
        say(why, whylen, "damaged split DWARF: %s", elf_errmsg(-1));
        rc = -1;
    } else {
        rc = read_units(m, id, why, whylen);
    }
    if (m)
        elf_end(m);
    close(fd);
    return rc;
}

int fl_dwo_read(Elf *elf, size_t size, uint64_t *id, char *why, size_t whylen)
{
    return dwo_read(elf, size, id, why, whylen, NULL);
}

/* The split units of elf, a .dwo file libdw reads as it is: 1 with *id,
 * or -1 with why, as fl_dwo_read. */
static int read_units(Elf *elf, uint64_t *id, char *why, size_t whylen)
{
    Dwarf *d = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
    if (!d) {
        say(why, whylen, "damaged split DWARF: %s", dwarf_errmsg(-1));
        return -1;
    }
    Dwarf_CU *cu = NULL, *next = NULL;
    uint8_t type = 0;
    Dwarf_Die cudie;
    size_t nsplit = 0, guard = 0;
    int r, rc = 1;
    while ((r = dwarf_get_units(d, cu, &next, NULL, &type, &cudie, NULL)) == 0 &&
           ++guard < MAX_UNITS) {
        cu = next;
        if (type != DW_UT_split_compile)
            continue;
        uint64_t uid = 0;
        if (dwarf_cu_info(cu, NULL, NULL, NULL, NULL, &uid, NULL, NULL) != 0 ||
            dwarf_tag(&cudie) != DW_TAG_compile_unit) {
            say(why, whylen, "damaged split DWARF: %s", "a split unit's DIE cannot be read");
            rc = -1;
            break;
        }
        if (nsplit++ && uid != *id) {
            say(why, whylen, "%s",
                "several split units with different DWO ids in one file (a .dwp package?); "
                "upload the .dwo file of each unit");
            rc = -1;
            break;
        }
        *id = uid;
    }
    if (rc == 1 && r < 0) {
        say(why, whylen, "damaged split DWARF: %s", dwarf_errmsg(-1));
        rc = -1;
    } else if (rc == 1 && nsplit == 0) {
        say(why, whylen, "%s",
            "not a usable split DWARF object: no split compile unit (DWO id) in .debug_info.dwo");
        rc = -1;
    }
    dwarf_end(d);
    return rc;
}

/* Whether the file at path is a .dwo file (a regular file: a name comes
 * from a debug file, a FIFO there must not hold the build) whose DWO id
 * is id: 0 no, 1 yes, 2 yes but libdw reads it only merged
 * (fl_dwo_write_merged). */
static int dwo_at(const char *path, uint64_t id)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return 0;
    int ok = 0;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        uint64_t got = 0;
        bool merged = false;
        if (e && dwo_read(e, (size_t)st.st_size, &got, NULL, 0, &merged) == 1 && got == id)
            ok = merged ? 2 : 1;
        if (e)
            elf_end(e);
    }
    close(fd);
    return ok;
}

/* libdw's __libdw_filepath: file as it is when absolute, else under dir
 * when dir is absolute, else under debugdir (+ dir).  malloc'ed, or NULL
 * when there is no such path. */
static char *filepath(const char *debugdir, const char *dir, const char *file)
{
    char *p = NULL;
    if (!file || !*file)
        return NULL;
    if (file[0] == '/')
        return strdup(file);
    if (dir && dir[0] == '/')
        return asprintf(&p, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", file) < 0 ? NULL
                                                                                             : p;
    if (!debugdir)
        return NULL;
    if (dir && *dir)
        return asprintf(&p, "%s/%s%s%s", debugdir, dir, dir[strlen(dir) - 1] == '/' ? "" : "/",
                        file) < 0
                   ? NULL
                   : p;
    return asprintf(&p, "%s/%s", debugdir, file) < 0 ? NULL : p;
}

/* The directory libdw takes for the file at path: that of its real path. */
static char *debugdir_of(const char *path)
{
    char *real = path ? realpath(path, NULL) : NULL;
    char *slash = real ? strrchr(real, '/') : NULL;
    if (!slash) {
        free(real);
        return NULL;
    }
    if (slash == real)
        slash[1] = '\0';
    else
        *slash = '\0';
    return real;
}

static const char *attr_string(Dwarf_Die *die, unsigned name, unsigned gnu_name)
{
    Dwarf_Attribute a;
    if (dwarf_attr(die, name, &a) || (gnu_name && dwarf_attr(die, gnu_name, &a)))
        return dwarf_formstring(&a);
    return NULL;
}

/* A package opened once for all the units that ask for it: path (NULL
 * before the first ask), the file it names (a server links one package
 * under each DWO id it holds: many names, one file) and the package (NULL
 * when it is none). */
typedef struct {
    char *path;
    dev_t dev;
    ino_t ino;
    fl_dwp *p;
} dwp_slot;

static fl_dwp *dwp_at(dwp_slot *s, const char *path)
{
    struct stat st;
    bool have = stat(path, &st) == 0;
    if (s->path && (!strcmp(s->path, path) || (have && st.st_dev == s->dev && st.st_ino == s->ino)))
        return s->p;
    fl_dwp_close(s->p);
    s->p = NULL;
    free(s->path);
    s->dev = have ? st.st_dev : 0;
    s->ino = have ? st.st_ino : 0;
    if ((s->path = strdup(path)) && fl_dwp_open(path, &s->p, NULL, 0) != 1)
        s->p = NULL;
    return s->p;
}

static void dwp_slot_free(dwp_slot *s)
{
    fl_dwp_close(s->p);
    free(s->path);
}

void fl_symcache_dwo_free(fl_dwo_unit *units, size_t n)
{
    for (size_t i = 0; units && i < n; i++) {
        free(units[i].name);
        free(units[i].path);
    }
    free(units);
}

int fl_dwo_scan(Dwarf *dbg, const char *dwarf_path, const char *elf_path,
                const fl_symbuild_opts *opts, fl_dwo_unit **units, size_t *n)
{
    *units = NULL;
    *n = 0;
    if (!dbg)
        return 0;
    char *debugdir = debugdir_of(dwarf_path);
    fl_dwo_unit *v = NULL;
    size_t len = 0, cap = 0, guard = 0;
    Dwarf_CU *cu = NULL, *next = NULL;
    uint8_t type = 0;
    Dwarf_Die cudie;
    int rc = 0;
    /* The packages next to the program and its debug file (gdb's and
     * llvm's places: the file's path + ".dwp"), and the finder's. */
    dwp_slot near[2] = {{0}}, found = {0};
    char *near_path[2] = {NULL, NULL};
    if (elf_path && asprintf(&near_path[0], "%s.dwp", elf_path) < 0)
        near_path[0] = NULL;
    if (dwarf_path && (!elf_path || strcmp(elf_path, dwarf_path)) &&
        asprintf(&near_path[1], "%s.dwp", dwarf_path) < 0)
        near_path[1] = NULL;
    /* No split DIE asked for: libdw would go and look for the file. */
    while (dwarf_get_units(dbg, cu, &next, NULL, &type, &cudie, NULL) == 0 && ++guard < MAX_UNITS) {
        cu = next;
        uint64_t id = 0;
        if (type != DW_UT_skeleton ||
            dwarf_cu_info(cu, NULL, NULL, NULL, NULL, &id, NULL, NULL) != 0)
            continue;
        if (len == cap) {
            size_t nc = cap ? cap * 2 : 16;
            fl_dwo_unit *nv = realloc(v, nc * sizeof *nv);
            if (!nv) {
                rc = FL_SYM_ENOMEM;
                break;
            }
            v = nv;
            cap = nc;
        }
        fl_dwo_unit *u = &v[len];
        memset(u, 0, sizeof *u);
        snprintf(u->dwo_id, sizeof u->dwo_id, "%016" PRIx64, id);
        const char *name = attr_string(&cudie, DW_AT_dwo_name, DW_AT_GNU_dwo_name);
        const char *comp_dir = attr_string(&cudie, DW_AT_comp_dir, 0);
        if (!(u->name = strdup(name ? name : ""))) {
            rc = FL_SYM_ENOMEM;
            break;
        }
        len++;
        /* libdw's places, in its order. */
        for (int k = 0; k < 2 && !u->path && name; k++) {
            char *p = filepath(debugdir, k ? comp_dir : NULL, name);
            int at = p ? dwo_at(p, id) : 0;
            if (at) {
                u->path = realpath(p, NULL);
                u->found = u->path ? FL_DWO_FOUND_LIBDW : FL_DWO_NOWHERE;
                u->merged = at == 2;
            }
            free(p);
            if (!k && !comp_dir)
                break;
        }
        char where[PATH_MAX];
        if (!u->path && opts && opts->find_dwo &&
            opts->find_dwo(opts->ctx, u->dwo_id, u->name, where, sizeof where) == 0) {
            int alone = dwo_at(where, id);
            bool packed = !alone && fl_dwp_has(dwp_at(&found, where), id);
            if ((alone || packed) && (u->path = realpath(where, NULL))) {
                u->found = FL_DWO_FOUND_FINDER;
                u->packed = packed;
                u->merged = alone == 2;
            }
        }
        /* Found nowhere else: a package's part (as gdb, which reads the
         * package only for the units whose .dwo it has not found). */
        for (int k = 0; k < 2 && !u->path; k++)
            if (near_path[k] && fl_dwp_has(dwp_at(&near[k], near_path[k]), id) &&
                (u->path = realpath(near_path[k], NULL))) {
                u->found = FL_DWO_FOUND_DWP;
                u->packed = 1;
            }
    }
    for (int k = 0; k < 2; k++) {
        dwp_slot_free(&near[k]);
        free(near_path[k]);
    }
    dwp_slot_free(&found);
    free(debugdir);
    if (rc) {
        fl_symcache_dwo_free(v, len);
        return rc;
    }
    *units = v;
    *n = len;
    return 0;
}

/* A copy of from at to (the private view's file when a hard link cannot
 * be made: another file system). */
static int copy_file(const char *from, const char *to)
{
    int in = open(from, O_RDONLY | O_CLOEXEC), out = -1, rc = -1;
    if (in < 0)
        return -1;
    if ((out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0)
        goto end;
    for (;;) {
        ssize_t k = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);
        if (k == 0) {
            rc = 0;
            break;
        }
        if (k > 0)
            continue;
        if (errno == EINTR)
            continue;
        /* Not offered here: plain reads and writes. */
        char buf[1 << 16];
        ssize_t r;
        while ((r = read(in, buf, sizeof buf)) > 0)
            for (ssize_t w = 0; w < r;) {
                ssize_t m = write(out, buf + w, (size_t)(r - w));
                if (m < 0 && errno == EINTR)
                    continue;
                if (m <= 0)
                    goto end;
                w += m;
            }
        rc = r == 0 ? 0 : -1;
        break;
    }
end:
    if (out >= 0 && close(out) != 0)
        rc = -1;
    close(in);
    return rc;
}

void fl_dwo_view_end(fl_dwo_view *v)
{
    if (v->elf)
        elf_end(v->elf);
    v->elf = NULL;
    if (v->fd >= 0)
        close(v->fd);
    v->fd = -1;
    if (!v->dir[0])
        goto unlock;
    DIR *d = opendir(v->dir);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)))
            if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
                unlinkat(dirfd(d), de->d_name, 0);
        closedir(d);
    }
    rmdir(v->dir);
    v->dir[0] = '\0';
unlock:
    if (v->lock >= 0)
        close(v->lock); /* only now: a cleaner may take the directory */
    v->lock = -1;
}

/* ---- directories killed builds left ----------------------------------
 *
 * A view's directory is DIR/<symcache>.dwo.<16 hex digits>, and DIR/.dwo.lock
 * holds a lock for it while it exists: an open file description lock on
 * one byte of the file picked by the directory's name, taken before the
 * directory is made and let go after it is removed.  A build killed
 * (kill -9, a crash, the machine) leaves the directory but not the lock,
 * which the kernel drops with the process.  So whoever gets that byte
 * without waiting may remove the directory: nobody is using it.  That
 * holds for the threads of one process (each takes the lock through a
 * descriptor of its own) and for every process sharing DIR, in other pid
 * namespaces (containers) too, where a pid could not be checked.  Two
 * names on one byte only keep a stale directory a little longer.  A
 * directory of a builder before the lock (.dwo.XXXXXX, from mkdtemp) is
 * taken for stale: no server of this version uses one. */

#define VIEW_INFIX ".dwo."

int fl_sym_lock_byte(const char *dir, const char *file, const char *key, bool wait)
{
    char p[PATH_MAX];
    if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, file) >= sizeof p) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = (off_t)(fl_sc_hash64(key, strlen(key)) & 0x3fffffff);
    fl.l_len = 1;
    int rc;
    while ((rc = fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl)) != 0 && errno == EINTR)
        ;
    if (rc != 0) {
        int e = errno == EACCES ? EAGAIN : errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

static int lock_byte(const char *dir, const char *name)
{
    return fl_sym_lock_byte(dir, ".dwo.lock", name, false);
}

/* Whether name (an entry of a cache directory) is named like a view: the
 * suffix after its last VIEW_INFIX is 6 (mkdtemp) or 16 (ours)
 * letters and digits. */
static bool view_name(const char *name)
{
    const char *infix = NULL;
    for (const char *p = strstr(name, VIEW_INFIX); p; p = strstr(p + 1, VIEW_INFIX))
        infix = p;
    if (!infix || infix == name)
        return false;
    const char *sfx = infix + strlen(VIEW_INFIX);
    size_t len = strlen(sfx);
    if (len != 6 && len != 16)
        return false;
    for (const char *c = sfx; *c; c++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')))
            return false;
    return true;
}

/* A regular file of a view: the DWARF file "d", or a unit's .dwo written
 * from a package, "d." and its DWO id in 16 hex digits. */
static bool view_file(const char *name)
{
    if (!strcmp(name, "d"))
        return true;
    if (strncmp(name, "d.", 2) || strlen(name) != 18)
        return false;
    for (const char *c = name + 2; *c; c++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
            return false;
    return true;
}

/* Empties and removes the view directory name in dirfd, when it holds
 * nothing but what a view holds (the file "d", .dwo files written from a
 * package, and symbolic links): a
 * directory of someone else's named like one stays.  Returns whether it
 * is gone. */
static bool remove_view(int dfd, const char *name)
{
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return false;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return false;
    }
    bool ours = true;
    struct dirent *de;
    for (int pass = 0; pass < 2 && ours; pass++) {
        rewinddir(d);
        while ((de = readdir(d))) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                continue;
            struct stat st;
            if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
                continue; /* gone meanwhile */
            if (!S_ISLNK(st.st_mode) && !(S_ISREG(st.st_mode) && view_file(de->d_name))) {
                ours = false;
                break;
            }
            if (pass)
                unlinkat(fd, de->d_name, 0);
        }
    }
    closedir(d);
    return ours && unlinkat(dfd, name, AT_REMOVEDIR) == 0;
}

int fl_dwo_views_clean(const char *dir, size_t *removed)
{
    if (removed)
        *removed = 0;
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : FL_SYM_EIO;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!view_name(de->d_name) || (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
            continue;
        int lock = lock_byte(dir, de->d_name);
        if (lock < 0)
            continue; /* in use (or the lock file cannot be had: then kept) */
        if (remove_view(dirfd(d), de->d_name) && removed)
            ++*removed;
        close(lock);
    }
    closedir(d);
    return 0;
}

static int view_fail(fl_dwo_view *v, int code, char *err, size_t errlen, const char *what)
{
    if (err && errlen)
        snprintf(err, errlen, "%s: split DWARF view in %s: %s", fl_sym_strerror(code), v->dir,
                 what);
    fl_dwo_view_end(v);
    return code;
}

/* ---- naming each unit's .dwo in the view ------------------------------
 *
 * Every unit whose file is known gets a name of its own in the private
 * directory: a plain name (no '/', not "." or "..", at most NAME_MAX
 * bytes) that no other unit has.  A unit keeps the name it has when that
 * is plain and not taken yet, which needs no write.  Any other -- a name
 * with a directory, or one string that several units share -- is pointed
 * at another string: the linker merges equal strings in .debug_str and
 * .debug_line_str, so "obj/x.dwo" written by two units with different
 * DW_AT_comp_dirs is one string, and no name written into it could serve
 * both.  What changes is the unit's reference to its string (the offset
 * in its DIE for DW_FORM_strp/line_strp, its entry of .debug_str_offsets
 * for DW_FORM_strx*, both the unit's own), never string bytes: the linker
 * also merges a string into the tail of a longer one ("dwo", a function
 * of a whole-DWARF unit, may be the end of "split.dwo"), so writing into
 * a name could rename something else.  The new string is one already in
 * the section: the tail of a string after its last '/', or a shorter
 * tail of that ("split.dwo", "plit.dwo", ...), the first not taken:
 * the units' names and directories give far more of them than units
 * share a name in practice.  Only a name in the DIE itself
 * (DW_FORM_string), which nothing else can point into, is written over,
 * with a unique name no longer than it. */

typedef struct {
    const char **slot;
    size_t cap; /* a power of two */
} name_set;

static bool set_init(name_set *t, size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n + 2)
        cap *= 2;
    t->cap = cap;
    return (t->slot = calloc(cap, sizeof *t->slot)) != NULL;
}

/* Adds name (not copied: it must outlive the set); false when it is in
 * already. */
static bool set_add(name_set *t, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = (size_t)fl_sc_hash64(name, len) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        if (!t->slot[i]) {
            t->slot[i] = name;
            return true;
        }
        if (!strcmp(t->slot[i], name))
            return false;
    }
}

static bool set_has(const name_set *t, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = (size_t)fl_sc_hash64(name, len) & (t->cap - 1); t->slot[i];
         i = (i + 1) & (t->cap - 1))
        if (!strcmp(t->slot[i], name))
            return true;
    return false;
}

/* A name the private directory can hold as it is. */
static bool plain(const char *s)
{
    size_t len = strnlen(s, NAME_MAX + 1);
    return len > 0 && len <= NAME_MAX && !memchr(s, '/', len) && strcmp(s, ".") && strcmp(s, "..");
}

/* One of the image's DWARF sections, as libdw reads it. */
typedef struct {
    Elf_Data *data;
    size_t off;             /* the next string to take names from */
    const char *tail, *end; /* the rest of the current one */
} str_section;

/* The next string of sec that is a plain name not in taken, or NULL. */
static const char *next_name(str_section *sec, const name_set *taken)
{
    const char *base = sec->data->d_buf;
    size_t size = sec->data->d_size;
    for (;;) {
        if (!sec->tail || sec->tail >= sec->end) {
            if (sec->off >= size)
                return NULL;
            const char *s = base + sec->off, *e = memchr(s, '\0', size - sec->off);
            if (!e) {
                sec->off = size;
                return NULL;
            }
            sec->off = (size_t)(e - base) + 1;
            const char *slash = memrchr(s, '/', (size_t)(e - s));
            sec->tail = slash ? slash + 1 : s;
            sec->end = e;
            continue;
        }
        const char *c = sec->tail++;
        if (plain(c) && !set_has(taken, c))
            return c;
    }
}

/* The image's DWARF sections as libdw reads them (loaded already): those
 * whose name starts with .debug_ (or .zdebug_), and .debug_str_offsets
 * among them. */
typedef struct {
    Elf_Data *data[64];
    size_t n;
    Elf_Data *str_offsets;
} dwarf_sections;

static void find_sections(Elf *elf, dwarf_sections *ds)
{
    size_t shstrndx;
    ds->n = 0;
    ds->str_offsets = NULL;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0)
        return;
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn && ds->n < 64; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        const char *nm;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
            !(nm = elf_strptr(elf, shstrndx, sh.sh_name)))
            continue;
        if (!strncmp(nm, ".zdebug_", 8))
            nm += 2; /* GNU's compressed sections, inflated by libdw */
        else if (strncmp(nm, ".debug_", 7))
            continue;
        else
            nm++;
        Elf_Data *d = elf_getdata(scn, NULL);
        if (!d || !d->d_buf)
            continue;
        ds->data[ds->n++] = d;
        if (!strcmp(nm, "debug_str_offsets"))
            ds->str_offsets = d;
    }
}

/* The section whose data holds p, or NULL. */
static Elf_Data *section_holding(const dwarf_sections *ds, const void *p)
{
    for (size_t i = 0; i < ds->n; i++)
        if ((const char *)p >= (const char *)ds->data[i]->d_buf &&
            (const char *)p < (const char *)ds->data[i]->d_buf + ds->data[i]->d_size)
            return ds->data[i];
    return NULL;
}

static uint64_t get_n(const unsigned char *p, size_t n, bool big)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[big ? n - 1 - i : i] << (8 * i);
    return v;
}

static void put_n(unsigned char *p, size_t n, bool big, uint64_t v)
{
    for (size_t i = 0; i < n; i++)
        p[big ? n - 1 - i : i] = (unsigned char)(v >> (8 * i));
}

/* Where the offset of at's string is kept (in the DIE, or in the unit's
 * entry of .debug_str_offsets), checked to give s in sec; NULL when it is
 * no form of that kind or the check fails. */
static unsigned char *string_ref(const dwarf_sections *ds, Dwarf_Attribute *at, Dwarf_Die *cudie,
                                 Dwarf_Half version, uint8_t osz, const char *s,
                                 const Elf_Data *sec, bool big)
{
    unsigned char *ref = NULL;
    uint64_t idx = 0;
    switch (at->form) {
    case DW_FORM_strp:
    case DW_FORM_line_strp:
        ref = at->valp;
        break;
    case DW_FORM_strx1:
    case DW_FORM_strx2:
    case DW_FORM_strx3:
    case DW_FORM_strx4:
        idx = get_n(at->valp, at->form - DW_FORM_strx1 + 1, big);
        break;
    case DW_FORM_strx:
    case DW_FORM_GNU_str_index:
        for (unsigned sh = 0, i = 0; i < 10; i++, sh += 7) {
            idx |= (uint64_t)(at->valp[i] & 0x7f) << sh;
            if (!(at->valp[i] & 0x80))
                break;
        }
        break;
    default:
        return NULL;
    }
    if (!ref) {
        /* The unit's table starts at DW_AT_str_offsets_base, else right
         * after the DWARF 5 table header (none before DWARF 5). */
        Elf_Data *offs = ds->str_offsets;
        Dwarf_Attribute b;
        Dwarf_Word base = version >= 5 ? 2u * osz : 0;
        if (!offs || (dwarf_attr(cudie, DW_AT_str_offsets_base, &b) && dwarf_formudata(&b, &base)))
            return NULL;
        if (idx >= offs->d_size / osz || base > offs->d_size - (idx + 1) * osz)
            return NULL;
        ref = (unsigned char *)offs->d_buf + base + idx * osz;
    }
    uint64_t off = get_n(ref, osz, big);
    return off < sec->d_size && (const char *)sec->d_buf + off == s ? ref : NULL;
}

/* A unit whose .dwo the view points at. */
typedef struct {
    Dwarf_Attribute at; /* its DW_AT_(GNU_)dwo_name */
    Dwarf_Die cudie;
    Dwarf_Half version;
    uint8_t osz;
    char *s;          /* the name string, as libdw will read it */
    const char *name; /* the name it gets in the view, or NULL */
    const char *path; /* its .dwo file, or the package holding it */
    uint64_t id;
    bool packed;  /* path is a package: its part is written at own */
    bool merged;  /* path is a .dwo libdw reads only merged: written at own */
    char own[20]; /* "d." + DWO id: the file written into the view */
} view_unit;

/* Gives each of vu[0..n) a name (see above); those it cannot keep
 * NULL (they count as missing, as a unit whose .dwo is nowhere). */
static int name_units(Elf *elf, view_unit *vu, size_t n)
{
    name_set taken;
    if (!set_init(&taken, n + 1))
        return FL_SYM_ENOMEM;
    set_add(&taken, "d"); /* the DWARF file */
    for (size_t i = 0; i < n; i++)
        if (vu[i].packed || vu[i].merged)
            set_add(&taken, vu[i].own); /* a file written into the view */
    for (size_t i = 0; i < n; i++)
        if (plain(vu[i].s) && set_add(&taken, vu[i].s))
            vu[i].name = vu[i].s;
    const unsigned char *id = (const unsigned char *)elf_getident(elf, NULL);
    bool big = id && id[EI_DATA] == ELFDATA2MSB;
    str_section secs[4];
    size_t nsecs = 0, gen = 0;
    dwarf_sections ds;
    find_sections(elf, &ds);
    for (size_t i = 0; i < n; i++) {
        view_unit *u = &vu[i];
        if (u->name)
            continue;
        if (u->at.form == DW_FORM_string) {
            /* In the DIE: only this unit reads it. */
            char nm[24];
            do
                snprintf(nm, sizeof nm, "%zx", gen++);
            while (set_has(&taken, nm));
            if (strlen(nm) > strlen(u->s))
                continue;
            memcpy(u->s, nm, strlen(nm) + 1);
            set_add(&taken, u->s);
            u->name = u->s;
            continue;
        }
        Elf_Data *d = section_holding(&ds, u->s);
        unsigned char *ref =
            d ? string_ref(&ds, &u->at, &u->cudie, u->version, u->osz, u->s, d, big) : NULL;
        if (!ref)
            continue;
        size_t k = 0;
        while (k < nsecs && secs[k].data != d)
            k++;
        if (k == nsecs) {
            if (nsecs == sizeof secs / sizeof *secs)
                continue;
            secs[nsecs++] = (str_section){.data = d};
        }
        const char *to = next_name(&secs[k], &taken);
        if (!to)
            continue;
        put_n(ref, u->osz, big, (uint64_t)(to - (const char *)d->d_buf));
        set_add(&taken, to);
        u->name = to;
    }
    free(taken.slot);
    return 0;
}

/* Writes the .dwo file at from, merged (fl_dwo_write_merged), at to (a
 * new file).  Returns 0, or a negative FL_SYM_ code with why filled. */
static int write_merged(const char *from, const char *to, char *why, size_t whylen)
{
    int in = open(from, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY), rc;
    if (in < 0) {
        say_errno(why, whylen, from, errno);
        return FL_SYM_EIO;
    }
    Elf *e = elf_begin(in, ELF_C_READ_MMAP, NULL);
    int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (out < 0) {
        say_errno(why, whylen, to, errno);
        rc = FL_SYM_EIO;
    } else {
        rc = fl_dwo_write_merged(e, out, why, whylen);
        if (close(out) != 0 && rc == 0) {
            say_errno(why, whylen, to, errno);
            rc = FL_SYM_EIO;
        }
        if (rc)
            unlink(to);
    }
    if (e)
        elf_end(e);
    close(in);
    return rc;
}

int fl_dwo_view_begin(fl_dwo_view *v, const char *dwarf_path, const fl_dwo_unit *units, size_t n,
                      const char *near, char *err, size_t errlen)
{
    v->dir[0] = '\0';
    v->fd = -1;
    v->lock = -1;
    v->elf = NULL;
    bool any = false;
    for (size_t i = 0; i < n; i++)
        any |= units[i].found == FL_DWO_FOUND_FINDER || units[i].packed || units[i].merged;
    if (!any || !dwarf_path)
        return 0;
    /* What killed builds left next to it goes first (it is not in use). */
    char parent[PATH_MAX], file[PATH_MAX + 8];
    const char *slash = strrchr(near, '/');
    const char *base = slash ? slash + 1 : near;
    int plen = !slash ? 1 : slash == near ? 1 : (int)(slash - near);
    if ((size_t)snprintf(parent, sizeof parent, "%.*s", plen, slash ? near : ".") >= sizeof parent)
        return view_fail(v, FL_SYM_EINVAL, err, errlen, "path too long");
    fl_dwo_views_clean(parent, NULL);
    /* The directory's lock first, then the directory (see above). */
    int made = -1;
    for (int tries = 0; made != 0 && tries < 100; tries++) {
        uint64_t r = 0;
        if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            r = (uint64_t)ts.tv_nsec * 0x9E3779B185EBCA87ull ^ (uint64_t)getpid() << 32 ^
                (uint64_t)ts.tv_sec ^ (uint64_t)tries;
        }
        char name[NAME_MAX + 1];
        if ((size_t)snprintf(name, sizeof name, "%s" VIEW_INFIX "%016" PRIx64, base, r) >=
                sizeof name ||
            (size_t)snprintf(v->dir, sizeof v->dir, "%s/%s", parent, name) >= sizeof v->dir) {
            v->dir[0] = '\0';
            return view_fail(v, FL_SYM_EINVAL, err, errlen, "path too long");
        }
        if ((v->lock = lock_byte(parent, name)) < 0) {
            if (errno == EAGAIN)
                continue; /* the byte of a live view: another name */
            break;
        }
        if ((made = mkdir(v->dir, 0700)) != 0) {
            int e = errno;
            close(v->lock);
            v->lock = -1;
            errno = e;
            if (e != EEXIST)
                break;
        }
    }
    if (made != 0) {
        int e = errno;
        v->dir[0] = '\0';
        return view_fail(v, FL_SYM_EIO, err, errlen, strerror(e));
    }
    snprintf(file, sizeof file, "%s/d", v->dir);
    if (link(dwarf_path, file) != 0 && copy_file(dwarf_path, file) != 0)
        return view_fail(v, FL_SYM_EIO, err, errlen, strerror(errno));
    if ((v->fd = open(file, O_RDONLY | O_CLOEXEC)) < 0)
        return view_fail(v, FL_SYM_EIO, err, errlen, strerror(errno));
    /* Copy-on-write: the references are rewritten in this process's pages. */
    if (!(v->elf = elf_begin(v->fd, ELF_C_READ_MMAP_PRIVATE, NULL)))
        return view_fail(v, FL_SYM_ENOTELF, err, errlen, elf_errmsg(-1));
    Dwarf *dbg = dwarf_begin_elf(v->elf, DWARF_C_READ, NULL);
    if (!dbg)
        return view_fail(v, FL_SYM_EDWARF, err, errlen, dwarf_errmsg(-1));
    view_unit *vu = calloc(n, sizeof *vu);
    if (!vu) {
        dwarf_end(dbg);
        return view_fail(v, FL_SYM_ENOMEM, err, errlen, "out of memory");
    }
    Dwarf_CU *cu = NULL, *next = NULL;
    uint8_t type = 0;
    Dwarf_Die cudie;
    size_t k = 0, m = 0, guard = 0;
    while (k < n && dwarf_get_units(dbg, cu, &next, NULL, &type, &cudie, NULL) == 0 &&
           ++guard < MAX_UNITS) {
        cu = next;
        uint64_t id = 0;
        Dwarf_Half version = 0;
        uint8_t osz = 0;
        if (type != DW_UT_skeleton ||
            dwarf_cu_info(cu, &version, NULL, NULL, NULL, &id, NULL, &osz) != 0)
            continue;
        const fl_dwo_unit *u = &units[k++];
        char hex[17];
        snprintf(hex, sizeof hex, "%016" PRIx64, id);
        if (!u->path || strcmp(hex, u->dwo_id))
            continue;
        view_unit *w = &vu[m];
        w->cudie = cudie;
        w->version = version;
        w->osz = osz;
        w->path = u->path;
        w->id = id;
        w->merged = !u->packed && u->merged;
        if ((w->packed = u->packed != 0) || w->merged)
            snprintf(w->own, sizeof w->own, "d.%016" PRIx64, id);
        /* The string as libdw will read it, in the private mapping (or in
         * libelf's memory for a compressed section): writable. */
        if (!dwarf_attr(&w->cudie, DW_AT_dwo_name, &w->at) &&
            !dwarf_attr(&w->cudie, DW_AT_GNU_dwo_name, &w->at))
            continue;
        if (!(w->s = (char *)dwarf_formstring(&w->at)) || strcmp(w->s, u->name) ||
            (osz != 4 && osz != 8))
            continue;
        m++;
    }
    int rc = name_units(v->elf, vu, m);
    const char *why = rc ? "out of memory" : NULL;
    char pwhy[256];
    dwp_slot pkg = {0};
    for (size_t i = 0; rc == 0 && i < m; i++) {
        char link_at[PATH_MAX + NAME_MAX + 2], own[PATH_MAX + 24];
        if (!vu[i].name)
            continue;
        const char *to = vu[i].path;
        if (vu[i].packed) {
            /* The unit's standalone .dwo, written from the package (read
             * once for all its units). */
            fl_dwp *p = dwp_at(&pkg, vu[i].path);
            snprintf(own, sizeof own, "%s/%s", v->dir, vu[i].own);
            if (!p)
                continue; /* changed since the scan: the unit counts as missing */
            if ((rc = fl_dwp_write(p, vu[i].id, own, pwhy, sizeof pwhy)) != 0) {
                why = pwhy;
                break;
            }
            to = vu[i].own; /* beside the link: resolved in the view */
        } else if (vu[i].merged) {
            /* Its .debug_info.dwo sections in one (gcc's type units). */
            snprintf(own, sizeof own, "%s/%s", v->dir, vu[i].own);
            if ((rc = write_merged(vu[i].path, own, pwhy, sizeof pwhy)) != 0) {
                why = pwhy;
                break;
            }
            to = vu[i].own;
        }
        snprintf(link_at, sizeof link_at, "%s/%s", v->dir, vu[i].name);
        if (symlink(to, link_at) != 0) {
            rc = FL_SYM_EIO;
            why = strerror(errno);
        }
    }
    dwp_slot_free(&pkg);
    free(vu);
    dwarf_end(dbg);
    return rc ? view_fail(v, rc, err, errlen, why) : 0;
}
