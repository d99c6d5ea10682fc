/*
 * symcheck.c - what an ELF file holds; the server's acceptance check of a
 * debug file.  See fl_symcheck.h.
 */
#define _GNU_SOURCE
#include "fl_symcheck.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <elfutils/libdwelf.h>
#include <inttypes.h>

#include "fl_symdwo.h"

const char *fl_symcheck_strerror(int code)
{
    switch (code) {
#define FL_SYMCHECK_STR_(name, value, text)                                                        \
    case value:                                                                                    \
        return text;
        FL_SYMCHECK_ERRORS(FL_SYMCHECK_STR_)
#undef FL_SYMCHECK_STR_
    }
    return "unknown error";
}

static pthread_once_t elf_once = PTHREAD_ONCE_INIT;
static void elf_init(void)
{
    elf_version(EV_CURRENT);
}

static void say(char *why, size_t whylen, const char *text)
{
    if (why && whylen)
        snprintf(why, whylen, "%s", text);
}

/* Whether a relocatable file is what dwz -m writes (the DWARF several
 * debug files share, which they link to): nothing loadable and nothing to
 * relocate, unlike a compiler's .o. */
static int is_dwz_file(Elf *elf)
{
    int dwarf = 0;
    size_t shstrndx;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0)
        return 0;
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh))
            return 0;
        if (sh.sh_type == SHT_REL || sh.sh_type == SHT_RELA || (sh.sh_flags & SHF_ALLOC))
            return 0;
        const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
        dwarf |= name && !strcmp(name, ".debug_info") && sh.sh_size > 0;
    }
    return dwarf;
}

/* Whether the check (read_info) or the symcache build reads section
 * number ndx of elf: the names, the notes (the build id), the symbol
 * tables and their strings, .text (when counted as code) and the DWARF. */
static int relied_on(Elf *elf, size_t shstrndx, size_t ndx, const GElf_Shdr *sh)
{
    if (ndx == shstrndx || sh->sh_type == SHT_NOTE || sh->sh_type == SHT_SYMTAB ||
        sh->sh_type == SHT_DYNSYM)
        return 1;
    const char *name = elf_strptr(elf, shstrndx, sh->sh_name);
    if (name &&
        (!strcmp(name, ".text") || !strncmp(name, ".debug_", 7) || !strncmp(name, ".zdebug_", 8)))
        return 1;
    /* The strings of a symbol table. */
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr t;
        if (gelf_getshdr(scn, &t) && (t.sh_type == SHT_SYMTAB || t.sh_type == SHT_DYNSYM) &&
            t.sh_link == ndx)
            return 1;
    }
    return 0;
}

/* The first section relied on whose bytes lie past the end of the file
 * (fsize bytes), said in buf; NULL when none.  libelf hands out such a
 * section's header as it is, and only fails when its data is asked for:
 * the check saw a .debug_info with bytes, and the build found none. */
static const char *section_past_end(Elf *elf, size_t fsize, char *buf, size_t cap)
{
    size_t shstrndx;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0)
        return NULL; /* no section is read by name either */
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || sh.sh_type == SHT_NULL)
            continue;
        if (sh.sh_offset <= fsize && sh.sh_size <= fsize - sh.sh_offset)
            continue;
        size_t ndx = elf_ndxscn(scn);
        if (!relied_on(elf, shstrndx, ndx, &sh))
            continue;
        /* The names themselves may be what lies past the end. */
        const char *name = ndx == shstrndx ? NULL : elf_strptr(elf, shstrndx, sh.sh_name);
        char num[32];
        snprintf(num, sizeof num, "number %zu", ndx);
        snprintf(buf, cap,
                 "damaged or truncated: its section %s (bytes %" PRIu64 " to %" PRIu64
                 ") lies past the end of the file (%zu bytes)",
                 name && *name ? name : num, (uint64_t)sh.sh_offset,
                 (uint64_t)sh.sh_offset + (uint64_t)sh.sh_size, fsize);
        return buf;
    }
    return NULL;
}

const char *fl_symcheck_elf_problem(void *arg, char *buf, size_t cap)
{
    Elf *elf = arg;
    GElf_Ehdr eh;
    if (!gelf_getehdr(elf, &eh))
        return "bad ELF header";
    /* libelf reads section headers only when asked: a file whose headers
     * lie past its end would look like one without debug information (and
     * a truncated .dwo file, like a compiler's .o). */
    size_t fsize = 0;
    elf_rawfile(elf, &fsize);
    uint64_t shnum = eh.e_shnum ? eh.e_shnum : 1; /* 0: the count is in the first header */
    uint64_t entsize = eh.e_shentsize ? eh.e_shentsize : 1;
    if (eh.e_shoff != 0 && (eh.e_shoff > fsize || (fsize - eh.e_shoff) / entsize < shnum))
        return "damaged or truncated: its section headers lie past the end of the file";
    if (cap && section_past_end(elf, fsize, buf, cap))
        return buf;
    if (eh.e_type == ET_REL && !is_dwz_file(elf))
        return "a relocatable object file (.o): its addresses are not final; use the linked "
               "program or library";
    return NULL;
}

/* Opens path for reading: a regular file, else -1 with why filled.  The
 * path may come from a crash log (OBJECT_PATH), so anything else is not
 * even opened: opening a FIFO lets its blocked writer go on, a terminal
 * may become the controlling one, some devices act on open (a watchdog
 * starts).  The check is made again on the descriptor, in case the path
 * changed in between. */
static int open_regular(const char *path, char *why, size_t whylen)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        say(why, whylen, strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        say(why, whylen, S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
        return -1;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        say(why, whylen, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        say(why, whylen, "not a regular file");
        close(fd);
        return -1;
    }
    return fd;
}

/* Whether a .dynsym defines a function: a program's lists only what it
 * imports (unless linked -rdynamic), a library's what it exports. */
static int defines_function(Elf_Scn *scn, const GElf_Shdr *sh)
{
    Elf_Data *d = sh->sh_entsize ? elf_getdata(scn, NULL) : NULL;
    size_t n = d ? d->d_size / sh->sh_entsize : 0;
    for (size_t i = 1; i < n; i++) {
        GElf_Sym sym;
        if (!gelf_getsym(d, (int)i, &sym))
            break;
        int type = GELF_ST_TYPE(sym.st_info);
        if ((type == STT_FUNC || type == STT_GNU_IFUNC) && sym.st_shndx != SHN_UNDEF &&
            sym.st_shndx < SHN_LORESERVE && sym.st_value != 0)
            return 1;
    }
    return 0;
}

/* The build id and sections of an open ELF file into info. */
static void read_info(Elf *elf, fl_symcheck_info *info)
{
    const void *id = NULL;
    ssize_t n = dwelf_elf_gnu_build_id(elf, &id);
    if (n > 0 && n <= FL_SYM_BUILD_ID_MAX && id)
        fl_sym_hex(id, (size_t)n, info->build_id, sizeof info->build_id);
    size_t shstrndx;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0)
        return;
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_size == 0 || sh.sh_type == SHT_NOBITS)
            continue;
        const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
        if (name && strcmp(name, ".text") == 0)
            info->has_code = 1;
        if (sh.sh_type == SHT_SYMTAB)
            info->has_symtab = 1;
        if (sh.sh_type == SHT_DYNSYM && !info->has_dynsym)
            info->has_dynsym = defines_function(scn, &sh);
        if (name && (strcmp(name, ".debug_info") == 0 || strcmp(name, ".zdebug_info") == 0))
            info->has_dwarf = 1;
    }
}

/* Reads path into info; 0, or a negative FL_SYMCHECK_ code with why. */
static int check(const char *path, fl_symcheck_info *info, char *why, size_t whylen)
{
    pthread_once(&elf_once, elf_init);
    memset(info, 0, sizeof *info);
    int fd = open_regular(path, why, whylen);
    if (fd < 0)
        return FL_SYMCHECK_EFILE;
    int rc = 0;
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    GElf_Ehdr eh;
    char pbuf[256];
    const char *problem = NULL;
    if (!elf || elf_kind(elf) != ELF_K_ELF) {
        if (why && whylen)
            snprintf(why, whylen, "%s: not an ELF file", fl_symcheck_strerror(FL_SYMCHECK_ENOTELF));
        rc = FL_SYMCHECK_ENOTELF;
    } else if (!gelf_getehdr(elf, &eh)) {
        if (why && whylen)
            snprintf(why, whylen, "%s: bad ELF header: %s",
                     fl_symcheck_strerror(FL_SYMCHECK_ENOTELF), elf_errmsg(-1));
        rc = FL_SYMCHECK_ENOTELF;
    } else if ((problem = fl_symcheck_elf_problem(elf, pbuf, sizeof pbuf))) {
        if (why && whylen)
            snprintf(why, whylen, "%s: %s", fl_symcheck_strerror(FL_SYMCHECK_ENOTELF), problem);
        rc = FL_SYMCHECK_ENOTELF;
    } else {
        read_info(elf, info);
    }
    if (elf)
        elf_end(elf);
    close(fd);
    return rc;
}

int fl_symcheck_inspect(const char *path, fl_symcheck_info *info)
{
    return check(path, info, NULL, 0) == 0 ? 0 : -1;
}

int fl_symcheck_debug_file(const char *path, fl_symcheck_info *info, char *why, size_t whylen)
{
    int rc = check(path, info, why, whylen);
    if (rc == 0 && !info->build_id[0])
        rc = FL_SYMCHECK_ENOBUILDID;
    else if (rc == 0 && !info->has_dwarf && !info->has_symtab)
        rc = FL_SYMCHECK_ENODEBUG;
    if (rc == FL_SYMCHECK_ENOBUILDID || rc == FL_SYMCHECK_ENODEBUG)
        say(why, whylen, fl_symcheck_strerror(rc));
    return rc;
}

static int dwo_of(Elf *elf, size_t size, char *dwo_id, size_t cap, char *why, size_t whylen)
{
    uint64_t id = 0;
    char w[400] = "";
    int r = elf ? fl_dwo_read(elf, size, &id, w, sizeof w) : 0;
    if (r == 1)
        snprintf(dwo_id, cap, "%016" PRIx64, id);
    if (r >= 0)
        return r;
    if (why && whylen)
        snprintf(why, whylen, "%s: %s", fl_symcheck_strerror(FL_SYMCHECK_EDWO), w);
    return FL_SYMCHECK_EDWO;
}

int fl_symcheck_dwo_file(const char *path, char *dwo_id, size_t cap, char *why, size_t whylen)
{
    pthread_once(&elf_once, elf_init);
    if (cap)
        dwo_id[0] = '\0';
    int fd = open_regular(path, why, whylen);
    if (fd < 0)
        return FL_SYMCHECK_EFILE;
    struct stat st;
    Elf *elf = fstat(fd, &st) == 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
    int rc = dwo_of(elf, elf ? (size_t)st.st_size : 0, dwo_id, cap, why, whylen);
    if (elf)
        elf_end(elf);
    close(fd);
    return rc;
}

int fl_symcheck_dwo_mem(const void *image, size_t size, char *dwo_id, size_t cap)
{
    pthread_once(&elf_once, elf_init);
    if (cap)
        dwo_id[0] = '\0';
    /* elf_memory wants a writable image: a copy. */
    char *copy = malloc(size ? size : 1);
    if (!copy)
        return FL_SYMCHECK_EFILE;
    memcpy(copy, image, size);
    Elf *elf = elf_memory(copy, size);
    int rc = dwo_of(elf, size, dwo_id, cap, NULL, 0);
    if (elf)
        elf_end(elf);
    free(copy);
    return rc;
}
