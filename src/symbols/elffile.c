/*
 * elffile.c - opening a crashed process's files safely (fl_elffile.h).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <elfutils/libdwelf.h>
#include <linux/openat2.h>

#include "fl_elffile.h"
#include "fl_tracesec.h"

#ifndef SYS_openat2
#define SYS_openat2 437 /* the same on x86-64 and aarch64 */
#endif

/* Before Linux 5.6 (no openat2), a path in a root is looked up as it is
 * here. */
int fl_elf_open_regular(const char *path, bool have_root, int root_fd)
{
    int pfd = -1;
    if (have_root) {
        struct open_how how = {.flags = O_PATH | O_CLOEXEC,
                               .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
        pfd = (int)syscall(SYS_openat2, root_fd, path, &how, sizeof how);
        if (pfd < 0 && errno != ENOSYS)
            return -1;
    }
    if (pfd < 0)
        pfd = open(path, O_PATH | O_CLOEXEC);
    if (pfd < 0)
        return -1;
    struct stat st;
    int fd = -1;
    if (fstat(pfd, &st) == 0 && S_ISREG(st.st_mode)) {
        char proc[64];
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", pfd);
        fd = open(proc, O_RDONLY | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT && !have_root) {
            /* No /proc: opened by name, without waiting, and kept only
             * when it is still the file looked at. */
            struct stat st2;
            fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
            if (fd >= 0 &&
                (fstat(fd, &st2) != 0 || st2.st_dev != st.st_dev || st2.st_ino != st.st_ino)) {
                close(fd);
                fd = -1;
            }
        }
    }
    close(pfd);
    return fd;
}

/* Whether e has what want asks.  Code: a separate debug file (objcopy
 * --only-keep-debug, eu-strip -f) has the program's build id, but its
 * code sections are SHT_NOBITS, of no use to an unwinder.  Symbols:
 * DWARF (.debug_info, or zlib'd .zdebug_info) or a .symtab. */
static bool has_wanted(Elf *e, fl_elf_want want)
{
    size_t shstrndx;
    if (want == FL_ELF_WANT_ANY)
        return true;
    if (want == FL_ELF_WANT_SYMBOLS && elf_getshdrstrndx(e, &shstrndx) != 0)
        return false;
    GElf_Shdr sh;
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(e, scn));) {
        if (!gelf_getshdr(scn, &sh))
            continue;
        if (want == FL_ELF_WANT_CODE) {
            if (sh.sh_type == SHT_PROGBITS && (sh.sh_flags & SHF_EXECINSTR))
                return true;
            continue;
        }
        const char *name = elf_strptr(e, shstrndx, sh.sh_name);
        if (sh.sh_type == SHT_SYMTAB ||
            (sh.sh_type == SHT_PROGBITS && name &&
             (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info"))))
            return true;
    }
    return false;
}

/* The GNU build id of the ELF file on fd, as lowercase hex, into id, when
 * it has what want asks; else "" and why. */
static void fd_build_id(int fd, fl_elf_want want, char id[129], const char **why)
{
    id[0] = '\0';
    elf_version(EV_CURRENT);
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    bool is_elf = e && elf_kind(e) == ELF_K_ELF, has = is_elf && has_wanted(e, want);
    const void *bits = NULL;
    ssize_t n = has ? dwelf_elf_gnu_build_id(e, &bits) : -1;
    if (n > 0 && n <= 64)
        for (ssize_t i = 0; i < n; i++)
            snprintf(id + 2 * i, 3, "%02x", ((const unsigned char *)bits)[i]);
    if (e)
        elf_end(e);
    *why = !is_elf ? "not an ELF file"
           : has   ? "no GNU build id"
           : want == FL_ELF_WANT_CODE
               ? "no code in it (a separate debug file: give the program or library)"
               : "no DWARF and no symbol table in it (a stripped file)";
}

static int push(fl_elf_objs *l, const char *path, const char *id, bool given)
{
    if (l->n == l->cap) {
        size_t nc = l->cap ? 2 * l->cap : 16;
        fl_elf_obj *no = realloc(l->o, nc * sizeof *no);
        if (!no)
            return -1;
        l->o = no;
        l->cap = nc;
    }
    fl_elf_obj *o = &l->o[l->n];
    if (!(o->path = strdup(path)))
        return -1;
    snprintf(o->id, sizeof o->id, "%s", id);
    o->used = false;
    o->given = given;
    l->n++;
    return 0;
}

/* Whether name, a directory in parent, is where CMake builds its
 * compiler probes: CMakeFiles/<version>/ (CompilerIdC/a.out,
 * CMakeDetermineCompilerABI_C.bin) and the try_compile() scratch
 * directories CMakeFiles/CMakeTmp/ and CMakeFiles/CMakeScratch/.  Their
 * programs have build ids and DWARF, but are never the crashed program:
 * a build tree's walk would upload them.  The targets' objects, in
 * CMakeFiles/<target>.dir/, are walked as ever. */
static bool cmake_probe_dir(const char *parent, const char *name)
{
    const char *base = strrchr(parent, '/');
    base = base ? base + 1 : parent;
    if (strcmp(base, "CMakeFiles"))
        return false;
    if (!strcmp(name, "CMakeTmp") || !strcmp(name, "CMakeScratch"))
        return true;
    /* A version: 3.25.1, 3.31.0-rc2, 3.28.20231212-g1a2b3c4 (a
     * development build) -- not a target's <name>.dir. */
    size_t n = strlen(name);
    if (!(name[0] >= '0' && name[0] <= '9') || !strchr(name, '.') ||
        (n > 4 && !strcmp(name + n - 4, ".dir")))
        return false;
    return name[strspn(name, "0123456789.-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")] ==
           '\0';
}

/* Adds the ELF files with a build id under dir (depth levels down so
 * far); *seen counts the regular files looked at.  -1: out of memory. */
static int scan(fl_elf_objs *l, const char *dir, fl_elf_want want, int depth, size_t *seen)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0; /* unreadable: passed over, as a non-ELF file is */
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && *seen < FL_ELF_OBJS_MAX_SCAN && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (cmake_probe_dir(dir, e->d_name))
            continue; /* a directory given by name is still walked */
        char *path = NULL;
        if (asprintf(&path, "%s/%s", dir, e->d_name) < 0) {
            rc = -1;
            break;
        }
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && depth < FL_ELF_OBJS_MAX_DEPTH) {
            rc = scan(l, path, want, depth + 1, seen);
        } else if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && ++*seen && st.st_size >= 64) {
            int fd = fl_elf_open_regular(path, false, -1);
            unsigned char magic[4];
            if (fd >= 0 && pread(fd, magic, 4, 0) == 4 && !memcmp(magic, ELFMAG, SELFMAG)) {
                char id[129];
                const char *why;
                fd_build_id(fd, want, id, &why);
                if (id[0] && push(l, path, id, false) != 0)
                    rc = -1;
            }
            if (fd >= 0)
                close(fd);
        }
        free(path);
    }
    closedir(d);
    return rc;
}

static int path_cmp(const void *a, const void *b)
{
    return strcmp(((const fl_elf_obj *)a)->path, ((const fl_elf_obj *)b)->path);
}

int fl_elf_objs_add(fl_elf_objs *l, const char *path, fl_elf_want want, char *err, size_t errcap)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errcap, "%s", strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        size_t before = l->n, seen = 0;
        if (scan(l, path, want, 0, &seen) != 0) {
            snprintf(err, errcap, "out of memory");
            return -1;
        }
        if (l->n == before) {
            snprintf(err, errcap, "no ELF file with a build id%s under it (%zu files looked at)",
                     want == FL_ELF_WANT_CODE      ? " and code"
                     : want == FL_ELF_WANT_SYMBOLS ? " and DWARF or a symbol table"
                                                   : "",
                     seen);
            return -1;
        }
        qsort(l->o + before, l->n - before, sizeof *l->o, path_cmp);
        return 0;
    }
    errno = 0;
    int fd = fl_elf_open_regular(path, false, -1);
    if (fd < 0) {
        snprintf(err, errcap, "%s", errno ? strerror(errno) : "not a regular file");
        return -1;
    }
    char id[129];
    const char *why;
    fd_build_id(fd, want, id, &why);
    close(fd);
    if (!id[0]) {
        snprintf(err, errcap, "%s", why);
        return -1;
    }
    if (push(l, path, id, true) != 0) {
        snprintf(err, errcap, "out of memory");
        return -1;
    }
    return 0;
}

void fl_elf_objs_free(fl_elf_objs *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->o[i].path);
    free(l->o);
    *l = (fl_elf_objs){0};
}

const char *fl_elf_objs_find(fl_elf_objs *l, const char *build_id_hex)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->o[i].id, build_id_hex)) {
            l->o[i].used = true;
            return l->o[i].path;
        }
    return NULL;
}

int fl_elf_has_build_id(int fd, const unsigned char *want, size_t len)
{
    elf_version(EV_CURRENT);
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    const void *have = NULL;
    ssize_t hlen = e ? dwelf_elf_gnu_build_id(e, &have) : -1;
    int same = hlen > 0 && (size_t)hlen == len && !memcmp(have, want, len);
    if (e)
        elf_end(e);
    return same;
}

int fl_elf_tracesec(const char *path, struct fl_tracesec **out, char *err, size_t errlen)
{
    *out = NULL;
    int fd = fl_elf_open_regular(path, false, -1);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno ? errno : EINVAL));
        return -1;
    }
    elf_version(EV_CURRENT);
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL); /* a large debug file: only its pages read */
    int rc = -1;
    size_t shstrndx;
    if (!e || elf_kind(e) != ELF_K_ELF || elf_getshdrstrndx(e, &shstrndx)) {
        snprintf(err, errlen, "%s: not an ELF file", path);
        goto out;
    }
    rc = 0;
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(e, scn));) {
        GElf_Shdr sh;
        const char *name;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
            !(name = elf_strptr(e, shstrndx, sh.sh_name)) || strcmp(name, FL_TRACESEC_NAME))
            continue;
        const unsigned char *ident = (const unsigned char *)elf_getident(e, NULL);
        if (!ident || ident[EI_DATA] != ELFDATA2LSB) {
            snprintf(err, errlen, "%s: %s: a big-endian file is not supported", path,
                     FL_TRACESEC_NAME);
            rc = -1;
            break;
        }
        /* Compressed by objcopy --compress-debug-sections, or not. */
        if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0) {
            snprintf(err, errlen, "%s: %s: cannot decompress it: %s", path, FL_TRACESEC_NAME,
                     elf_errmsg(-1));
            rc = -1;
            break;
        }
        Elf_Data *d = elf_rawdata(scn, NULL);
        char why[160];
        if (!d || !d->d_buf || fl_tracesec_parse(d->d_buf, d->d_size, out, why, sizeof why)) {
            snprintf(err, errlen, "%s: %s: %s", path, FL_TRACESEC_NAME,
                     d && d->d_buf ? why : "cannot read it");
            rc = -1;
            break;
        }
        rc = 1;
        break;
    }
out:
    if (e)
        elf_end(e);
    close(fd);
    return rc;
}

int fl_elf_completeness(const char *path)
{
    int fd = fl_elf_open_regular(path, false, -1);
    if (fd < 0)
        return 0;
    elf_version(EV_CURRENT);
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    int score = 0;
    if (e && elf_kind(e) == ELF_K_ELF) {
        score += has_wanted(e, FL_ELF_WANT_CODE);
        size_t shstrndx;
        GElf_Shdr sh;
        for (Elf_Scn *scn = NULL;
             score < 2 && !elf_getshdrstrndx(e, &shstrndx) && (scn = elf_nextscn(e, scn));) {
            const char *name = gelf_getshdr(scn, &sh) && sh.sh_type == SHT_PROGBITS
                                   ? elf_strptr(e, shstrndx, sh.sh_name)
                                   : NULL;
            if (name && (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")))
                score += 2;
        }
    }
    if (e)
        elf_end(e);
    close(fd);
    return score;
}
