/*
 * dwp.c - .dwp packages of split DWARF: reading the unit index and
 * writing one unit's standalone .dwo file.
 *
 * dwp (binutils) and llvm-dwp pack the .dwo files of a program's units
 * into PROG.dwp: each .dwo section becomes one section holding every
 * unit's part one after the other (.debug_str.dwo merged), and
 * .debug_cu_index says, per DWO id, where its part of each section is.
 * The index (DWARF 5, section 7.3.5; GNU's DWARF 4 form is version 2 of
 * the same layout, with other section numbers):
 *
 *   header   version (v5: u16 5 + u16 padding; v2: u32 2), u32 N columns,
 *            u32 U units, u32 S slots (a power of two)
 *   S u64    hash table: the DWO ids (0 in an empty slot)
 *   S u32    parallel: the 1-based row of each id (0: empty)
 *   N u32    the section (DW_SECT_*) of each column
 *   U*N u32  offsets: row r's part of column c starts here in its section
 *   U*N u32  sizes
 *
 * Every number is checked before it is used -- the index is the
 * uploader's -- and so is every part against its section, once, when the
 * package is opened: fl_dwp_unit and fl_dwp_write then only copy.
 *
 * A unit's standalone .dwo is its part of each section, plus the strings
 * its .debug_str_offsets.dwo part names out of the merged .debug_str.dwo,
 * the offsets rewritten (fl_dwp_unit_strings): a big package's strings
 * are not written again for every unit.  Offsets inside a unit's parts are relative to
 * the part's start (that is what the index's per-unit bases are for), so
 * the parts read as whole sections of a .dwo file of their own.  Type
 * units (-fdebug-types-section: .debug_tu_index) are not taken: the
 * symbolizer reads no types, and a compile unit refers to a type unit
 * only for a type (DW_FORM_ref_sig8) -- the declaration a member
 * function's definition points at (DW_AT_specification, a reference
 * inside the unit) is in the unit's own stub of its class, with the
 * DW_AT_linkage_name the name comes from.
 *
 * fl_dwo_write_merged writes a plain .dwo file again with each section
 * once, for libdw: gcc's DWARF 5 type units come one .debug_info.dwo
 * section each.
 */
#define _GNU_SOURCE
#include "fl_symcache.h"
#include "fl_symdwp.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* More units than this in one index is taken for a damaged one. */
#define MAX_DWP_UNITS (1u << 24)

static int fail(char *why, size_t whylen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *why, size_t whylen, int code, const char *fmt, ...)
{
    if (why && whylen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, whylen, fmt, ap);
        va_end(ap);
    }
    return code;
}

static uint64_t rd(const unsigned char *p, size_t n, bool big)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[big ? n - 1 - i : i] << (8 * i);
    return v;
}

static int cmp_entry(const void *a, const void *b)
{
    uint64_t x = ((const struct fl_dwp_entry *)a)->id, y = ((const struct fl_dwp_entry *)b)->id;
    return x < y ? -1 : x > y;
}

int fl_dwp_index_parse(const void *buf, size_t len, bool big, fl_dwp_index *ix, char *why,
                       size_t whylen)
{
    const unsigned char *p = buf;
    memset(ix, 0, sizeof *ix);
    ix->big = big;
    if (!p || len < 16)
        return fail(why, whylen, FL_SYM_EDWARF, "the unit index is truncated (%zu bytes)", len);
    /* v2 is a u32; v5 a u16 and two bytes of padding (zero). */
    if (rd(p, 4, big) == 2)
        ix->version = 2;
    else if (rd(p, 2, big) == 5 && rd(p + 2, 2, big) == 0)
        ix->version = 5;
    else
        return fail(why, whylen, FL_SYM_EDWARF, "unit index version %" PRIu64 " is not read",
                    rd(p, 2, big));
    ix->ncols = (uint32_t)rd(p + 4, 4, big);
    ix->nunits = (uint32_t)rd(p + 8, 4, big);
    ix->nslots = (uint32_t)rd(p + 12, 4, big);
    if (ix->ncols == 0 || ix->ncols > FL_DWP_MAX_COLS)
        return fail(why, whylen, FL_SYM_EDWARF, "the unit index has %" PRIu32 " columns (1..%d)",
                    ix->ncols, FL_DWP_MAX_COLS);
    if (ix->nunits > MAX_DWP_UNITS || ix->nunits > ix->nslots ||
        (ix->nslots & (ix->nslots - 1)) != 0)
        return fail(why, whylen, FL_SYM_EDWARF,
                    "the unit index has %" PRIu32 " units in %" PRIu32
                    " slots (a power of two, at least one per unit)",
                    ix->nunits, ix->nslots);
    /* Every product below fits: S < 2^32, N <= 8, U <= 2^24. */
    uint64_t need = 16 + (uint64_t)ix->nslots * 12 + (uint64_t)ix->ncols * 4 +
                    (uint64_t)ix->nunits * ix->ncols * 8;
    if (need > len)
        return fail(why, whylen, FL_SYM_EDWARF,
                    "the unit index is truncated: its tables need %" PRIu64 " bytes, it has %zu",
                    need, len);
    const unsigned char *sigs = p + 16, *rows = sigs + (size_t)ix->nslots * 8,
                        *cols = rows + (size_t)ix->nslots * 4;
    bool info = false;
    for (uint32_t c = 0; c < ix->ncols; c++) {
        unsigned s = (unsigned)rd(cols + 4 * c, 4, big);
        /* 2 is DW_SECT_TYPES in v2 and reserved in v5. */
        if (s < 1 || s > 8 || (s == 2 && ix->version == 5))
            return fail(why, whylen, FL_SYM_EDWARF,
                        "the unit index names section number %u, which it has no section for", s);
        for (uint32_t k = 0; k < c; k++)
            if (ix->cols[k] == s)
                return fail(why, whylen, FL_SYM_EDWARF,
                            "the unit index has two columns for section number %u", s);
        ix->cols[c] = s;
        info |= s == 1;
    }
    if (!info)
        return fail(why, whylen, FL_SYM_EDWARF, "the unit index has no .debug_info.dwo column");
    ix->offs = cols + (size_t)ix->ncols * 4;
    ix->lens = ix->offs + (size_t)ix->nunits * ix->ncols * 4;
    size_t used = 0;
    for (uint32_t i = 0; i < ix->nslots; i++)
        used += rd(rows + 4 * (size_t)i, 4, big) != 0;
    if (used > ix->nunits)
        return fail(why, whylen, FL_SYM_EDWARF,
                    "the unit index fills %zu slots for %" PRIu32 " units", used, ix->nunits);
    if (used && !(ix->ent = malloc(used * sizeof *ix->ent)))
        return fail(why, whylen, FL_SYM_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < ix->nslots; i++) {
        uint32_t row = (uint32_t)rd(rows + 4 * (size_t)i, 4, big);
        if (!row)
            continue;
        if (row > ix->nunits) {
            fl_dwp_index_free(ix);
            return fail(why, whylen, FL_SYM_EDWARF,
                        "the unit index points at row %" PRIu32 " of %" PRIu32, row, ix->nunits);
        }
        ix->ent[ix->nent].id = rd(sigs + 8 * (size_t)i, 8, big);
        ix->ent[ix->nent++].row = row;
    }
    if (ix->nent)
        qsort(ix->ent, ix->nent, sizeof *ix->ent, cmp_entry);
    for (size_t i = 1; i < ix->nent; i++)
        if (ix->ent[i].id == ix->ent[i - 1].id) {
            uint64_t id = ix->ent[i].id;
            fl_dwp_index_free(ix);
            return fail(why, whylen, FL_SYM_EDWARF,
                        "the unit index has DWO id %016" PRIx64 " twice", id);
        }
    return 0;
}

void fl_dwp_index_free(fl_dwp_index *ix)
{
    if (!ix)
        return;
    free(ix->ent);
    ix->ent = NULL;
    ix->nent = 0;
}

static const struct fl_dwp_entry *find(const fl_dwp_index *ix, uint64_t id)
{
    struct fl_dwp_entry key = {.id = id};
    return ix->nent ? bsearch(&key, ix->ent, ix->nent, sizeof key, cmp_entry) : NULL;
}

/* ---- the package ------------------------------------------------------ */

/* The sections a package may have, and where each goes: the number of
 * the section (DW_SECT_*) in a version 2 and a version 5 index (0: none
 * there). */
static const struct {
    const char *name;
    unsigned v2, v5;
} SECTIONS[] = {
    {".debug_info.dwo", 1, 1},        {".debug_types.dwo", 2, 0},   {".debug_abbrev.dwo", 3, 3},
    {".debug_line.dwo", 4, 4},        {".debug_loc.dwo", 5, 0},     {".debug_loclists.dwo", 0, 5},
    {".debug_str_offsets.dwo", 6, 6}, {".debug_macinfo.dwo", 7, 0}, {".debug_macro.dwo", 8, 7},
    {".debug_rnglists.dwo", 0, 8},    {".debug_str.dwo", 0, 0},     {".debug_cu_index", 0, 0},
};
enum { NSECTIONS = sizeof SECTIONS / sizeof *SECTIONS, SEC_STR = NSECTIONS - 2, SEC_INDEX };

struct fl_dwp {
    int fd;
    void *image; /* the copy elf_memory reads (fl_dwp_open_mem) */
    Elf *elf;
    unsigned char cls, data;
    GElf_Half machine;
    const unsigned char *sec[NSECTIONS];
    size_t secsize[NSECTIONS];
    int of_col[FL_DWP_MAX_COLS]; /* the SECTIONS entry of each index column */
    fl_dwp_index ix;
};

void fl_dwp_close(fl_dwp *p)
{
    if (!p)
        return;
    fl_dwp_index_free(&p->ix);
    if (p->elf)
        elf_end(p->elf);
    if (p->fd >= 0)
        close(p->fd);
    free(p->image);
    free(p);
}

/* The section's bytes, decompressed when it is (SHF_COMPRESSED, or GNU's
 * .zdebug_ form); false when they cannot be had. */
static bool section_bytes(Elf_Scn *scn, const GElf_Shdr *sh, bool gnu, const unsigned char **d,
                          size_t *size)
{
    if (sh->sh_type == SHT_NOBITS)
        return false;
    if ((sh->sh_flags & SHF_COMPRESSED) ? elf_compress(scn, 0, 0) < 0
                                        : gnu && elf_compress_gnu(scn, 0, 0) < 0)
        return false;
    Elf_Data *data = elf_getdata(scn, NULL);
    if (!data)
        return false;
    *d = data->d_buf;
    *size = data->d_buf ? data->d_size : 0;
    return true;
}

/* Reads p->elf: 1, 0 or a negative code as fl_dwp_open. */
static int read_package(fl_dwp *p, char *why, size_t whylen)
{
    GElf_Ehdr eh;
    size_t shstrndx;
    if (elf_kind(p->elf) != ELF_K_ELF || !gelf_getehdr(p->elf, &eh) ||
        elf_getshdrstrndx(p->elf, &shstrndx) != 0)
        return 0;
    const char *ident = elf_getident(p->elf, NULL);
    p->cls = ident ? (unsigned char)ident[EI_CLASS] : ELFCLASS64;
    p->data = ident ? (unsigned char)ident[EI_DATA] : ELFDATA2LSB;
    p->machine = eh.e_machine;
    Elf_Scn *at[NSECTIONS] = {0};
    GElf_Shdr shs[NSECTIONS];
    bool gnu[NSECTIONS] = {0};
    for (Elf_Scn *scn = elf_nextscn(p->elf, NULL); scn; scn = elf_nextscn(p->elf, scn)) {
        GElf_Shdr sh;
        const char *nm;
        if (!gelf_getshdr(scn, &sh) || !(nm = elf_strptr(p->elf, shstrndx, sh.sh_name)))
            continue;
        bool z = !strncmp(nm, ".zdebug_", 8);
        for (int k = 0; k < NSECTIONS; k++)
            if (z ? !strcmp(nm + 2, SECTIONS[k].name + 1) : !strcmp(nm, SECTIONS[k].name)) {
                if (!at[k]) {
                    at[k] = scn;
                    shs[k] = sh;
                    gnu[k] = z;
                }
                break;
            }
    }
    if (!at[SEC_INDEX])
        return 0; /* a plain .dwo file, or no split DWARF at all */
    for (int k = 0; k < NSECTIONS; k++)
        if (at[k] && !section_bytes(at[k], &shs[k], gnu[k], &p->sec[k], &p->secsize[k]))
            return fail(why, whylen, FL_SYM_EDWARF, "%s cannot be read: %s", SECTIONS[k].name,
                        elf_errmsg(-1));
    int rc = fl_dwp_index_parse(p->sec[SEC_INDEX], p->secsize[SEC_INDEX], p->data == ELFDATA2MSB,
                                &p->ix, why, whylen);
    if (rc)
        return rc;
    for (uint32_t c = 0; c < p->ix.ncols; c++) {
        p->of_col[c] = -1;
        for (int k = 0; k < NSECTIONS; k++)
            if ((p->ix.version == 2 ? SECTIONS[k].v2 : SECTIONS[k].v5) == p->ix.cols[c])
                p->of_col[c] = k;
    }
    /* Every unit's part of every section inside that section. */
    for (size_t i = 0; i < p->ix.nent; i++) {
        size_t row = p->ix.ent[i].row - 1;
        for (uint32_t c = 0; c < p->ix.ncols; c++) {
            size_t at4 = (row * p->ix.ncols + c) * 4;
            uint64_t off = rd(p->ix.offs + at4, 4, p->ix.big),
                     len = rd(p->ix.lens + at4, 4, p->ix.big);
            int k = p->of_col[c];
            if (p->ix.cols[c] == 1 && len == 0)
                return fail(why, whylen, FL_SYM_EDWARF,
                            "unit %016" PRIx64 " has no part of .debug_info.dwo in the index",
                            p->ix.ent[i].id);
            if (len && (off > p->secsize[k] || len > p->secsize[k] - off))
                return fail(why, whylen, FL_SYM_EDWARF,
                            "the unit index puts unit %016" PRIx64 "'s part of %s at %" PRIu64
                            "+%" PRIu64 ", outside its %zu bytes",
                            p->ix.ent[i].id, SECTIONS[k].name, off, len, p->secsize[k]);
        }
    }
    return 1;
}

static int finish_open(fl_dwp *p, fl_dwp **out, char *why, size_t whylen)
{
    int rc = p->elf ? read_package(p, why, whylen) : 0;
    if (rc == 1)
        *out = p;
    else
        fl_dwp_close(p);
    return rc;
}

int fl_dwp_open(const char *path, fl_dwp **out, char *why, size_t whylen)
{
    *out = NULL;
    elf_version(EV_CURRENT);
    fl_dwp *p = calloc(1, sizeof *p);
    if (!p)
        return fail(why, whylen, FL_SYM_ENOMEM, "out of memory");
    struct stat st;
    /* Not blocking on a FIFO named like a package. */
    p->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (p->fd >= 0 && fstat(p->fd, &st) == 0 && S_ISREG(st.st_mode))
        p->elf = elf_begin(p->fd, ELF_C_READ_MMAP, NULL);
    return finish_open(p, out, why, whylen);
}

int fl_dwp_open_mem(const void *image, size_t size, fl_dwp **out, char *why, size_t whylen)
{
    *out = NULL;
    elf_version(EV_CURRENT);
    fl_dwp *p = calloc(1, sizeof *p);
    if (!p || !(p->image = malloc(size ? size : 1))) {
        free(p);
        return fail(why, whylen, FL_SYM_ENOMEM, "out of memory");
    }
    p->fd = -1;
    memcpy(p->image, image, size);
    p->elf = elf_memory(p->image, size);
    return finish_open(p, out, why, whylen);
}

size_t fl_dwp_count(const fl_dwp *p)
{
    return p ? p->ix.nent : 0;
}

uint64_t fl_dwp_id(const fl_dwp *p, size_t i)
{
    return p && i < p->ix.nent ? p->ix.ent[i].id : 0;
}

bool fl_dwp_has(const fl_dwp *p, uint64_t id)
{
    return p && find(&p->ix, id) != NULL;
}

int fl_dwp_unit(const fl_dwp *p, uint64_t id, fl_dwp_section *s, size_t cap)
{
    const struct fl_dwp_entry *e = p ? find(&p->ix, id) : NULL;
    if (!e || cap < FL_DWP_MAX_SECTIONS)
        return -1;
    size_t row = e->row - 1, n = 0;
    for (uint32_t c = 0; c < p->ix.ncols; c++) {
        size_t at4 = (row * p->ix.ncols + c) * 4;
        uint64_t off = rd(p->ix.offs + at4, 4, p->ix.big), len = rd(p->ix.lens + at4, 4, p->ix.big);
        if (!len)
            continue;
        int k = p->of_col[c]; /* checked by read_package */
        s[n++] = (fl_dwp_section){SECTIONS[k].name, p->sec[k] + off, (size_t)len};
    }
    if (p->sec[SEC_STR] && p->secsize[SEC_STR])
        s[n++] = (fl_dwp_section){SECTIONS[SEC_STR].name, p->sec[SEC_STR], p->secsize[SEC_STR]};
    return (int)n;
}

static int section_named(const fl_dwp_section *s, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s[i].name, name))
            return i;
    return -1;
}

static void wr(unsigned char *p, size_t n, bool big, uint64_t v)
{
    for (size_t i = 0; i < n; i++)
        p[big ? n - 1 - i : i] = (unsigned char)(v >> (8 * i));
}

int fl_dwp_unit_strings(const fl_dwp *p, fl_dwp_section *s, int n, void **buf, char *why,
                        size_t whylen)
{
    *buf = NULL;
    int info = section_named(s, n, ".debug_info.dwo"),
        offs = section_named(s, n, ".debug_str_offsets.dwo"),
        str = section_named(s, n, ".debug_str.dwo");
    /* Macros may name strings by offset (GNU's DWARF 4 forms): the whole
     * section then, as without offsets to go by. */
    if (info < 0 || offs < 0 || str < 0 || section_named(s, n, ".debug_macro.dwo") >= 0 ||
        section_named(s, n, ".debug_macinfo.dwo") >= 0 || s[info].size < 4)
        return 0;
    bool big = p->data == ELFDATA2MSB;
    size_t osz = rd(s[info].data, 4, big) == 0xffffffffu ? 8 : 4;
    /* DWARF 5's table has a header (its length, version, padding); GNU's
     * DWARF 4 one none. */
    size_t hdr = p->ix.version == 5 ? (osz == 4 ? 8 : 16) : 0;
    const unsigned char *o = s[offs].data, *strs = s[str].data;
    size_t olen = s[offs].size, slen = s[str].size, count, total = 0;
    if (olen < hdr)
        return fail(why, whylen, FL_SYM_EDWARF, "%s", "the unit's string offsets are truncated");
    count = (olen - hdr) / osz;
    for (size_t i = 0; i < count; i++) {
        uint64_t off = rd(o + hdr + i * osz, osz, big);
        const unsigned char *nul = off < slen ? memchr(strs + off, '\0', slen - off) : NULL;
        if (!nul)
            return fail(why, whylen, FL_SYM_EDWARF,
                        "the unit's string %zu is at %" PRIu64
                        ", outside .debug_str.dwo (%zu bytes)",
                        i, off, slen);
        total += (size_t)(nul - (strs + off)) + 1;
        if (total > slen)
            return 0; /* they overlap more than they save: the whole section */
    }
    unsigned char *b = malloc(total + olen + 1);
    if (!b)
        return fail(why, whylen, FL_SYM_ENOMEM, "out of memory");
    unsigned char *no = b + total;
    memcpy(no, o, olen);
    size_t at = 0;
    for (size_t i = 0; i < count; i++) {
        uint64_t off = rd(o + hdr + i * osz, osz, big);
        size_t len = strlen((const char *)strs + off) + 1; /* checked above */
        memcpy(b + at, strs + off, len);
        wr(no + hdr + i * osz, osz, big, at);
        at += len;
    }
    s[str].data = b;
    s[str].size = total;
    s[offs].data = no;
    *buf = b;
    return 0;
}

/* Writes a relocatable ELF file of class cls, data encoding data and
 * machine, holding s[0..n) (n <= FL_DWP_MAX_SECTIONS) and its section
 * names, to fd (which stays open).  Returns 0, or FL_SYM_EIO with *what
 * saying why. */
static int write_sections(int fd, unsigned char cls, unsigned char data, GElf_Half machine,
                          const fl_dwp_section *s, int n, const char **what)
{
    /* The section names' table: "\0" then each name and ".shstrtab". */
    char shstr[512];
    size_t len = 1, name_at[FL_DWP_MAX_SECTIONS + 1];
    shstr[0] = '\0';
    for (int i = 0; i <= n; i++) {
        const char *nm = i < n ? s[i].name : ".shstrtab";
        name_at[i] = len;
        memcpy(shstr + len, nm, strlen(nm) + 1); /* the names are ours: they fit */
        len += strlen(nm) + 1;
    }
    int rc = FL_SYM_EIO;
    *what = NULL;
    Elf *e = elf_begin(fd, ELF_C_WRITE, NULL);
    GElf_Ehdr eh;
    if (!e || !gelf_newehdr(e, cls) || !gelf_getehdr(e, &eh)) {
        *what = elf_errmsg(-1);
        goto end;
    }
    eh.e_ident[EI_DATA] = data;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = ET_REL;
    eh.e_machine = machine;
    eh.e_version = EV_CURRENT;
    for (int i = 0; i <= n; i++) {
        Elf_Scn *scn = elf_newscn(e);
        Elf_Data *d = scn ? elf_newdata(scn) : NULL;
        GElf_Shdr sh;
        if (!d || !gelf_getshdr(scn, &sh)) {
            *what = elf_errmsg(-1);
            goto end;
        }
        bool str = i == n || !strcmp(s[i].name, ".debug_str.dwo");
        d->d_buf = i < n ? (void *)s[i].data : shstr;
        d->d_size = i < n ? s[i].size : len;
        d->d_type = ELF_T_BYTE;
        d->d_align = 1;
        d->d_version = EV_CURRENT;
        sh.sh_name = (GElf_Word)name_at[i];
        sh.sh_type = i < n ? SHT_PROGBITS : SHT_STRTAB;
        sh.sh_flags = str && i < n ? SHF_MERGE | SHF_STRINGS : 0;
        sh.sh_entsize = str && i < n ? 1 : 0;
        sh.sh_addralign = 1;
        if (!gelf_update_shdr(scn, &sh)) {
            *what = elf_errmsg(-1);
            goto end;
        }
        if (i == n)
            eh.e_shstrndx = (GElf_Half)elf_ndxscn(scn);
    }
    if (!gelf_update_ehdr(e, &eh) || elf_update(e, ELF_C_WRITE) < 0) {
        *what = elf_errmsg(-1);
        goto end;
    }
    rc = 0;
end:
    if (e)
        elf_end(e);
    return rc;
}

int fl_dwp_write(const fl_dwp *p, uint64_t id, const char *path, char *why, size_t whylen)
{
    fl_dwp_section s[FL_DWP_MAX_SECTIONS];
    int n = fl_dwp_unit(p, id, s, FL_DWP_MAX_SECTIONS);
    if (n < 0)
        return fail(why, whylen, FL_SYM_EINVAL, "no unit %016" PRIx64 " in the package", id);
    /* The unit's own strings, not the package's (many units' worth). */
    void *strbuf = NULL;
    int src = fl_dwp_unit_strings(p, s, n, &strbuf, why, whylen);
    if (src)
        return src;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        free(strbuf);
        return fail(why, whylen, FL_SYM_EIO, "%s: %s", path, strerror(errno));
    }
    const char *what = NULL;
    int rc = write_sections(fd, p->cls, p->data, p->machine, s, n, &what);
    free(strbuf);
    if (close(fd) != 0 && rc == 0) {
        rc = FL_SYM_EIO;
        what = strerror(errno);
    }
    if (rc) {
        unlink(path);
        return fail(why, whylen, rc, "%s: %s", path, what ? what : "cannot be written");
    }
    return 0;
}

/* ---- a .dwo file of several .debug_info.dwo sections ------------------ */

/* The SECTIONS entry named nm (or its GNU-compressed .zdebug_ form), or
 * -1; *gnu says which form. */
static int section_index(const char *nm, bool *gnu)
{
    *gnu = !strncmp(nm, ".zdebug_", 8);
    for (int k = 0; k < SEC_INDEX; k++)
        if (*gnu ? !strcmp(nm + 2, SECTIONS[k].name + 1) : !strcmp(nm, SECTIONS[k].name))
            return k;
    return -1;
}

int fl_dwo_info_sections(Elf *elf)
{
    size_t shstrndx;
    int count = 0;
    if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx) != 0)
        return 0;
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        const char *nm;
        bool gnu;
        if (gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS && sh.sh_size > 0 &&
            (nm = elf_strptr(elf, shstrndx, sh.sh_name)) && section_index(nm, &gnu) == 0)
            count++;
    }
    return count;
}

int fl_dwo_write_merged(Elf *elf, int fd, char *why, size_t whylen)
{
    GElf_Ehdr eh;
    size_t shstrndx;
    if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
        elf_getshdrstrndx(elf, &shstrndx) != 0)
        return fail(why, whylen, FL_SYM_ENOTELF, "not an ELF file");
    const char *ident = elf_getident(elf, NULL);
    /* Per known section: its parts in file order, concatenated when there
     * are several (only .debug_info.dwo and .debug_types.dwo, whose units
     * each start with their own header and refer to their own unit by
     * unit-relative offsets: a unit reads the same at any place). */
    unsigned char *buf[NSECTIONS] = {0};
    size_t size[NSECTIONS] = {0}, parts[NSECTIONS] = {0};
    const unsigned char *one[NSECTIONS] = {0};
    int rc = 0;
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); rc == 0 && scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        const char *nm;
        bool gnu;
        int k;
        const unsigned char *d;
        size_t len;
        if (!gelf_getshdr(scn, &sh) || !(nm = elf_strptr(elf, shstrndx, sh.sh_name)) ||
            (k = section_index(nm, &gnu)) < 0 || sh.sh_type == SHT_NOBITS)
            continue;
        if (!section_bytes(scn, &sh, gnu, &d, &len)) {
            rc = fail(why, whylen, FL_SYM_EDWARF, "%s cannot be read: %s", nm, elf_errmsg(-1));
            break;
        }
        if (!len)
            continue;
        if (parts[k] && k != 0 && k != 1) {
            rc = fail(why, whylen, FL_SYM_EDWARF, "%s twice in one .dwo file", SECTIONS[k].name);
            break;
        }
        if (parts[k]++ == 0) {
            one[k] = d;
            size[k] = len;
            continue;
        }
        if (len > SIZE_MAX - size[k]) {
            rc = fail(why, whylen, FL_SYM_EDWARF, "%s", "sections too large");
            break;
        }
        unsigned char *nb = realloc(buf[k], size[k] + len);
        if (!nb) {
            rc = fail(why, whylen, FL_SYM_ENOMEM, "out of memory");
            break;
        }
        if (!buf[k])
            memcpy(nb, one[k], size[k]);
        memcpy(nb + size[k], d, len);
        buf[k] = nb;
        one[k] = nb;
        size[k] += len;
    }
    fl_dwp_section s[FL_DWP_MAX_SECTIONS];
    int n = 0;
    for (int k = 0; rc == 0 && k < SEC_INDEX; k++)
        if (parts[k] && n < FL_DWP_MAX_SECTIONS)
            s[n++] = (fl_dwp_section){SECTIONS[k].name, one[k], size[k]};
    const char *what = NULL;
    if (rc == 0 && (rc = write_sections(fd, ident ? (unsigned char)ident[EI_CLASS] : ELFCLASS64,
                                        ident ? (unsigned char)ident[EI_DATA] : ELFDATA2LSB,
                                        eh.e_machine, s, n, &what)) != 0)
        fail(why, whylen, rc, "%s", what ? what : "cannot be written");
    for (int k = 0; k < NSECTIONS; k++)
        free(buf[k]);
    return rc;
}
