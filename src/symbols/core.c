/*
 * core.c - a Faultline crash log from an ELF core file (fl_core.h).
 *
 * How this works: the core is opened with libelf and checked first (an
 * ELF ET_CORE of x86-64 or aarch64 whose segments all lie inside the
 * file), because libdwfl's own errors on a bad file say little.  The notes
 * are read here, not through libdwfl: NT_PRSTATUS gives each thread's id
 * and its general registers (the first one is the thread that took the
 * signal: the kernel and gdb's gcore both write it first), NT_SIGINFO the
 * signal, its code and fault address, NT_PRPSINFO the pid and command
 * name, NT_AUXV the entry point (which names the executable's module),
 * NT_FILE the files mapped.  libdwfl then reports the modules
 * (dwfl_core_file_report) and unwinds each thread (dwfl_core_file_attach +
 * dwfl_getthread_frames) with the modules' CFI and the core's memory.  The
 * raw stack is copied from the core's PT_LOAD segments.
 *
 * The file names in a core are the crashed process's to choose: the
 * dynamic linker's list is in its memory, and NT_FILE's names are paths it
 * can replace (a FIFO named "lib.so (deleted)" after the library is
 * unlinked).  libdwfl 0.188 open()s both with plain O_RDONLY -- a FIFO
 * waits forever, a device is opened, as root under `--from-kernel`.  So
 * libdwfl is shown the core with its NT_AUXV and NT_FILE notes renamed (in
 * a private copy of their pages): it finds the modules from the ELF
 * headers in the core's memory and opens nothing by a name from the core.
 * Each module's file is opened here instead (find_elf): by its NT_FILE
 * name, only when it is a regular file, and kept only when its build id is
 * the one in the core's memory.  Files whose headers the core lacks are
 * reported here from NT_FILE; debug files are found by build id only (a
 * .gnu_debuglink name is the program's to choose too).
 *
 * The register layout of the notes is read by offset, for the two
 * architectures the client writes, so that a core of either converts on a
 * machine of either.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <elfutils/libdwfl.h>

#include "faultline.h" /* FAULTLINE_VERSION_STRING, FAULTLINE_CRASHLOG_VERSION */
#include "fl_core.h"
#include "fl_crashlog.h"
#include "fl_elffile.h"
#include "fl_logwrite.h"

#ifndef NT_SIGINFO
#define NT_SIGINFO 0x53494749
#endif
#ifndef EM_AARCH64
#define EM_AARCH64 183
#endif
#ifndef NT_FILE
#define NT_FILE 0x46494c45
#endif
/* The type NT_AUXV and NT_FILE notes get in libdwfl's view: one no
 * reader knows ("FLhd"). */
#define NT_HIDDEN 0x64684c46

/* struct elf_prstatus on LP64 Linux (x86-64 and aarch64 alike): where
 * pr_info.si_code, pr_cursig, pr_pid and pr_reg sit. */
#define PRS_SI_CODE 4
#define PRS_CURSIG 12
#define PRS_PID 32
#define PRS_REG 112
/* struct elf_prpsinfo on LP64 Linux. */
#define PSI_PID 24
#define PSI_FNAME 40
#define PSI_FNAME_LEN 16
/* siginfo_t: si_signo, si_errno, si_code, then the union (8-aligned). */
#define SI_SIGNO 0
#define SI_CODE 8
#define SI_ADDR 16

const char *fl_core_strerror(int code)
{
    switch (code) {
#define FL_CORE_STR_(name, value, text)                                                            \
    case value:                                                                                    \
        return text;
        FL_CORE_ERRORS(FL_CORE_STR_)
#undef FL_CORE_STR_
    }
    return "unknown error";
}

/* An architecture's REGISTER lines: the client's names and order
 * (src/client/catcher.c), and where each is in pr_reg (in 8-byte words). */
typedef struct core_arch {
    uint16_t machine;
    const char *cpuarch; /* CPUARCH_NAME, as the client writes it */
    size_t nregs_note;   /* words in pr_reg */
    size_t n;            /* REGISTER lines */
    const char *const *names;
    const uint8_t *index;
    size_t sp; /* index into names of the stack pointer */
} core_arch;

static const char *const x86_64_names[] = {"rax", "rdx", "rcx", "rbx", "rsi", "rdi",
                                           "rbp", "rsp", "r8",  "r9",  "r10", "r11",
                                           "r12", "r13", "r14", "r15", "rip"};
/* struct user_regs_struct: r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx
 * rdx rsi rdi orig_rax rip cs eflags rsp ss fs_base gs_base ds es fs gs */
static const uint8_t x86_64_index[] = {10, 12, 11, 5, 13, 14, 4, 19, 9, 8, 7, 6, 3, 2, 1, 0, 16};
static const char *const aarch64_names[] = {
    "x0",  "x1",  "x2",  "x3",  "x4",  "x5",  "x6",  "x7",  "x8",  "x9",  "x10",
    "x11", "x12", "x13", "x14", "x15", "x16", "x17", "x18", "x19", "x20", "x21",
    "x22", "x23", "x24", "x25", "x26", "x27", "x28", "x29", "x30", "sp",  "pc"};
/* struct user_pt_regs: x0..x30 sp pc pstate */
static const uint8_t aarch64_index[] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10,
                                        11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
                                        22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};

static const core_arch arches[] = {
    {EM_X86_64, "x86-64", 27, 17, x86_64_names, x86_64_index, 7},
    {EM_AARCH64, "aarch64", 34, 33, aarch64_names, aarch64_index, 31},
};

typedef struct core_thread {
    uint64_t tid;
    uint64_t regs[40]; /* pr_reg words */
    int cursig, si_code;
    uint64_t *frames;
    size_t nframes;
} core_thread;

typedef struct core_ctx {
    const fl_core_opts *opts;
    char crash_id[40]; /* drawn when opts has none */
    char *err;
    size_t errcap;
    const char *path;
    const char *shown; /* the core as messages name it */
    int fd;
    Elf *elf;
    const char *image; /* the whole file (libelf's mapping) */
    size_t size;
    const core_arch *arch;
    Dwfl *dwfl;

    core_thread *threads; /* the first took the signal */
    size_t nthreads, threads_omitted;
    bool have_siginfo;
    int sig_no, sig_code;
    uint64_t fault_addr;
    bool have_psinfo;
    uint64_t pid;
    char fname[PSI_FNAME_LEN + 1];
    uint64_t at_entry;
    uint64_t at_random; /* the bottom of the argument and environment strings */
    char *ntfile; /* a copy of the NT_FILE note's descriptor; owned */
    size_t ntfile_len;
    const char *ntfile_exe; /* NT_FILE's name of the mapping holding AT_ENTRY */

    /* objects */
    struct core_obj {
        char *path; /* file path or libdwfl's module name; owned */
        uint64_t start, end, bias;
        bool has_bias;
        unsigned char build_id[64];
        int build_id_len;
        bool main;
    } * objs;
    size_t nobjs, objs_cap;
} core_ctx;

static int fail(core_ctx *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(core_ctx *c, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fl_lw_verror(c->err, c->errcap, c->shown, fl_core_strerror(code), fmt, ap);
    va_end(ap);
    return code;
}

static uint64_t rd64(const char *p)
{
    uint64_t v;
    memcpy(&v, p, 8); /* both architectures are little-endian, as is the host */
    return v;
}

static int32_t rd32(const char *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* ---- checks and notes ---- */

static int check_file(core_ctx *c)
{
    GElf_Ehdr eh;
    if (elf_kind(c->elf) != ELF_K_ELF || !gelf_getehdr(c->elf, &eh))
        return fail(c, FL_CORE_ENOTCORE, NULL);
    if (eh.e_type != ET_CORE)
        return fail(c, FL_CORE_ENOTCORE, "an ELF file of type %u, not ET_CORE", eh.e_type);
    for (size_t i = 0; i < sizeof arches / sizeof arches[0]; i++)
        if (arches[i].machine == eh.e_machine)
            c->arch = &arches[i];
    if (!c->arch || gelf_getclass(c->elf) != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
        return fail(c, FL_CORE_EARCH, "ELF machine %u; x86-64 and aarch64 are read", eh.e_machine);
    size_t n;
    if (elf_getphdrnum(c->elf, &n) != 0 || n == 0)
        return fail(c, FL_CORE_ETRUNC, "no program headers");
    /* A core the kernel cut at RLIMIT_CORE, or a copy that stopped short,
     * has segments that end past the file: its notes or stacks would be
     * read as zeros. */
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(c->elf, (int)i, &ph))
            return fail(c, FL_CORE_ETRUNC, "program header %zu unreadable", i);
        if ((ph.p_type == PT_LOAD || ph.p_type == PT_NOTE) &&
            (ph.p_offset > c->size || ph.p_filesz > c->size - ph.p_offset))
            return fail(c, FL_CORE_ETRUNC, "segment %zu ends at byte %" PRIu64 " of %zu", i,
                        (uint64_t)(ph.p_offset + ph.p_filesz), c->size);
    }
    return FL_CORE_OK;
}

static int add_thread(core_ctx *c, const char *d, size_t len)
{
    if (len < PRS_REG + c->arch->nregs_note * 8)
        return FL_CORE_OK; /* a note of another layout: not a thread we can read */
    if (c->nthreads >= FL_CORE_MAX_THREADS) {
        c->threads_omitted++;
        return FL_CORE_OK;
    }
    core_thread *t = realloc(c->threads, (c->nthreads + 1) * sizeof *t);
    if (!t)
        return fail(c, FL_CORE_EIO, "out of memory");
    c->threads = t;
    t = &c->threads[c->nthreads++];
    memset(t, 0, sizeof *t);
    t->tid = (uint64_t)(uint32_t)rd32(d + PRS_PID);
    t->si_code = rd32(d + PRS_SI_CODE);
    int16_t cursig;
    memcpy(&cursig, d + PRS_CURSIG, 2);
    t->cursig = cursig;
    for (size_t i = 0; i < c->arch->nregs_note; i++)
        t->regs[i] = rd64(d + PRS_REG + 8 * i);
    return FL_CORE_OK;
}

/* NT_FILE: count, page size, count (start, end, offset in pages)
 * triples, then count NUL-terminated names.  Walked entry by entry from a
 * zeroed cursor; false past the last or where the note is malformed. */
typedef struct ntfile_cursor {
    uint64_t i;
    const char *name; /* the next name */
} ntfile_cursor;

static bool ntfile_next(const core_ctx *c, ntfile_cursor *cur, uint64_t *lo, uint64_t *hi,
                        uint64_t *pgoff, const char **name)
{
    const char *d = c->ntfile;
    if (!d || c->ntfile_len < 16)
        return false;
    const char *end = d + c->ntfile_len;
    uint64_t count = rd64(d);
    if (count > (c->ntfile_len - 16) / 24 || cur->i >= count)
        return false;
    if (!cur->name)
        cur->name = d + 16 + count * 24;
    const char *z = cur->name < end ? memchr(cur->name, '\0', (size_t)(end - cur->name)) : NULL;
    if (!z)
        return false;
    const char *t = d + 16 + cur->i * 24;
    *lo = rd64(t);
    *hi = rd64(t + 8);
    *pgoff = rd64(t + 16);
    *name = cur->name;
    cur->name = z + 1;
    cur->i++;
    return true;
}

/* The name of the file mapped at addr, or NULL. */
static const char *ntfile_name(const core_ctx *c, uint64_t addr)
{
    ntfile_cursor cur = {0, NULL};
    uint64_t lo, hi, pgoff;
    const char *name;
    while (ntfile_next(c, &cur, &lo, &hi, &pgoff, &name))
        if (addr >= lo && addr < hi)
            return name;
    return NULL;
}

static int read_notes(core_ctx *c)
{
    size_t n;
    elf_getphdrnum(c->elf, &n);
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(c->elf, (int)i, &ph) || ph.p_type != PT_NOTE)
            continue;
        Elf_Data *data = elf_getdata_rawchunk(c->elf, (int64_t)ph.p_offset, ph.p_filesz,
                                              ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
        if (!data)
            return fail(c, FL_CORE_ETRUNC, "notes unreadable: %s", elf_errmsg(-1));
        size_t off = 0, name_off, desc_off;
        GElf_Nhdr nh;
        while (off < data->d_size &&
               (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
            const char *name = (const char *)data->d_buf + name_off;
            const char *d = (const char *)data->d_buf + desc_off;
            if (nh.n_namesz != 5 || memcmp(name, "CORE", 5) != 0)
                continue;
            if (nh.n_type == NT_PRSTATUS) {
                int rc = add_thread(c, d, nh.n_descsz);
                if (rc)
                    return rc;
            } else if (nh.n_type == NT_SIGINFO && nh.n_descsz >= SI_ADDR + 8 && !c->have_siginfo) {
                /* One per thread from gdb; the first is the signalled one's. */
                c->have_siginfo = true;
                c->sig_no = rd32(d + SI_SIGNO);
                c->sig_code = rd32(d + SI_CODE);
                c->fault_addr = rd64(d + SI_ADDR);
            } else if (nh.n_type == NT_PRPSINFO && nh.n_descsz >= PSI_FNAME + PSI_FNAME_LEN) {
                c->have_psinfo = true;
                c->pid = (uint64_t)(uint32_t)rd32(d + PSI_PID);
                memcpy(c->fname, d + PSI_FNAME, PSI_FNAME_LEN);
                c->fname[PSI_FNAME_LEN] = '\0';
            } else if (nh.n_type == NT_AUXV) {
                for (size_t a = 0; a + 16 <= nh.n_descsz; a += 16) {
                    if (rd64(d + a) == AT_ENTRY)
                        c->at_entry = rd64(d + a + 8);
                    else if (rd64(d + a) == AT_RANDOM)
                        c->at_random = rd64(d + a + 8);
                }
            } else if (nh.n_type == NT_FILE && !c->ntfile) {
                /* Copied: libdwfl's view of the note is renamed below. */
                if (!(c->ntfile = malloc(nh.n_descsz ? nh.n_descsz : 1)))
                    return fail(c, FL_CORE_EIO, "out of memory");
                memcpy(c->ntfile, d, nh.n_descsz);
                c->ntfile_len = nh.n_descsz;
            }
        }
    }
    if (c->nthreads == 0)
        return fail(c, FL_CORE_ENOTHREADS, "no NT_PRSTATUS note");
    if (c->at_entry)
        c->ntfile_exe = ntfile_name(c, c->at_entry);
    return FL_CORE_OK;
}

/* Renames the NT_AUXV and NT_FILE notes in the notes libdwfl will read
 * (see the top of the file).  The pages are libelf's private mapping of
 * the core (or its malloc'd copy), made writable here: the file itself is
 * never written. */
static int hide_names(core_ctx *c)
{
    size_t n;
    elf_getphdrnum(c->elf, &n);
    long page = sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(c->elf, (int)i, &ph) || ph.p_type != PT_NOTE || ph.p_filesz == 0)
            continue;
        /* libdwfl reads the notes as this type, by this (cached) chunk. */
        Elf_Data *data = elf_getdata_rawchunk(c->elf, (int64_t)ph.p_offset, ph.p_filesz,
                                              ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
        if (!data)
            return fail(c, FL_CORE_ETRUNC, "notes unreadable: %s", elf_errmsg(-1));
        char *buf = data->d_buf;
        if (buf >= c->image && buf < c->image + c->size) {
            uintptr_t lo = (uintptr_t)buf & ~(uintptr_t)(page - 1);
            uintptr_t hi = (uintptr_t)buf + data->d_size;
            if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE) != 0)
                return fail(c, FL_CORE_EIO, "cannot copy the notes' pages: %s", strerror(errno));
        }
        size_t off = 0, next, name_off, desc_off;
        GElf_Nhdr nh;
        while (off < data->d_size &&
               (next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
            if (nh.n_namesz == 5 && !memcmp(buf + name_off, "CORE", 5) &&
                (nh.n_type == NT_AUXV || nh.n_type == NT_FILE)) {
                uint32_t hidden = NT_HIDDEN; /* n_type: the third word of the header */
                memcpy(buf + off + 8, &hidden, 4);
            }
            off = next;
        }
    }
    return FL_CORE_OK;
}

/* ---- memory ---- */

/* Copies [addr, addr+n) from the core's dumped segments; false when any
 * of it was not dumped (a file-backed read-only mapping the kernel left
 * out, or no mapping at all). */
static bool core_read(core_ctx *c, uint64_t addr, void *buf, size_t n)
{
    size_t np;
    elf_getphdrnum(c->elf, &np);
    for (size_t i = 0; i < np; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(c->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
            continue;
        if (addr >= ph.p_vaddr && addr + n >= addr && addr + n <= ph.p_vaddr + ph.p_filesz) {
            memcpy(buf, c->image + ph.p_offset + (addr - ph.p_vaddr), n);
            return true;
        }
    }
    return false;
}

/* ---- libdwfl ---- */

/* Opens path as a regular file only, in the crashed process's root when
 * the caller gave one (fl_elffile.h). */
static int open_regular(const core_ctx *c, const char *path)
{
    return fl_elf_open_regular(path, c->opts->have_root, c->opts->root_fd);
}

/* 1 when the ELF file on fd has the build id mod has from the core's
 * memory (or mod has none to compare), else 0. */
static int same_build_id(Dwfl_Module *mod, int fd)
{
    const unsigned char *want;
    GElf_Addr vaddr;
    int wlen = dwfl_module_build_id(mod, &want, &vaddr);
    if (wlen <= 0)
        return 1;
    return fl_elf_has_build_id(fd, want, (size_t)wlen);
}

/* The conversion whose libdwfl calls find_elf: the callbacks have no
 * argument of their own. */
static __thread core_ctx *current;

static bool is_main(const core_ctx *c, uint64_t lo, uint64_t hi)
{
    return c->at_entry && c->at_entry >= lo && c->at_entry < hi;
}

/* The --obj file with the build id mod has from the core's memory, or
 * NULL. */
static const char *given_file(const core_ctx *c, Dwfl_Module *mod)
{
    const unsigned char *id;
    GElf_Addr vaddr;
    int len = c && c->opts->objs && c->opts->objs->n ? dwfl_module_build_id(mod, &id, &vaddr) : 0;
    char hex[129];
    if (len <= 0 || len > 64)
        return NULL;
    for (int i = 0; i < len; i++)
        snprintf(hex + 2 * i, 3, "%02x", id[i]);
    return fl_elf_objs_find(c->opts->objs, hex);
}

/* A module's file.  Its path: an --obj file with the module's build id,
 * else --exe for the program, else NT_FILE's name of the mapping at its
 * start -- opened only as a regular file with the module's build id (see
 * the top of the file).  Else, by build id, from the debug directories
 * (their paths are made of hex digits). */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                    char **file_name, Elf **elfp)
{
    core_ctx *c = current;
    Dwarf_Addr lo = base, hi = base;
    dwfl_module_info(mod, NULL, &lo, &hi, NULL, NULL, NULL, NULL);
    /* An --obj file is the user's, named here: not in the process's root. */
    const char *path = given_file(c, mod);
    int fd = path ? fl_elf_open_regular(path, false, -1) : -1;
    if (fd < 0) {
        path = !c ? NULL : is_main(c, lo, hi) && c->opts->exe ? c->opts->exe : ntfile_name(c, lo);
        fd = path ? open_regular(c, path) : -1;
    }
    if (fd >= 0 && same_build_id(mod, fd)) {
        char *copy = strdup(path);
        if (copy) {
            free(*file_name);
            *file_name = copy;
            *elfp = NULL;
            return fd;
        }
    }
    if (fd >= 0)
        close(fd);
    return dwfl_build_id_find_elf(mod, userdata, modname, base, file_name, elfp);
}

static char *debuginfo_path;
static const Dwfl_Callbacks dwfl_cbs = {
    .find_elf = find_elf,
    .find_debuginfo = dwfl_build_id_find_debuginfo,
    .debuginfo_path = &debuginfo_path,
};

static int module_cb(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
                     void *arg)
{
    (void)userdata;
    core_ctx *c = arg;
    if (c->nobjs == c->objs_cap) {
        size_t cap = c->objs_cap ? 2 * c->objs_cap : 32;
        void *p = realloc(c->objs, cap * sizeof *c->objs);
        if (!p)
            return DWARF_CB_ABORT;
        c->objs = p;
        c->objs_cap = cap;
    }
    struct core_obj *o = &c->objs[c->nobjs];
    memset(o, 0, sizeof *o);
    Dwarf_Addr end = start, bias = 0;
    /* The file, found by build id and path: its bias, and its CFI for the
     * unwind (a module without a file unwinds only through the core's
     * own copy of its pages, when it has one). */
    Elf *e = dwfl_module_getelf(mod, &bias);
    const char *mainfile = NULL;
    dwfl_module_info(mod, NULL, &start, &end, NULL, NULL, &mainfile, NULL);
    o->start = start;
    o->end = end;
    if (e) {
        o->bias = bias;
        o->has_bias = true;
        /* The end its file's segments give, as the client writes it: a
         * module found from the core's memory ends at a page boundary. */
        size_t np = 0;
        uint64_t top = 0;
        for (size_t i = 0; elf_getphdrnum(e, &np) == 0 && i < np; i++) {
            GElf_Phdr ph;
            if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
                ph.p_vaddr + ph.p_memsz > top)
                top = ph.p_vaddr + ph.p_memsz;
        }
        if (top && bias + top > start && bias + top <= end)
            o->end = bias + top;
    }
    const unsigned char *bits;
    GElf_Addr vaddr;
    int len = dwfl_module_build_id(mod, &bits, &vaddr);
    if (len > 0 && len <= (int)sizeof o->build_id) {
        memcpy(o->build_id, bits, (size_t)len);
        o->build_id_len = len;
    }
    /* Named as the process had it: --exe, NT_FILE's name (also when the
     * file is not here), else the file found (maybe a debug directory's
     * link), else libdwfl's name (the SONAME, or [vdso: ...]). */
    o->main = is_main(c, start, end);
    const char *p = o->main && c->opts->exe ? c->opts->exe : ntfile_name(c, start);
    if (!p)
        p = mainfile && *mainfile ? mainfile : name;
    o->path = strdup(p ? p : "");
    if (!o->path)
        return DWARF_CB_ABORT;
    /* A file unlinked since it was mapped: the kernel's mark is not its
     * name (the client's log, from the dynamic linker, has none). */
    size_t pl = strlen(o->path);
    if (pl > 10 && !strcmp(o->path + pl - 10, " (deleted)"))
        o->path[pl - 10] = '\0';
    c->nobjs++;
    return DWARF_CB_OK;
}

/* Reports the ELF file at path (opened as a regular file) as a module
 * mapped from addr, where the core does not show libdwfl its header.  The
 * program, with a known entry point, is placed by it; any other file by
 * the page its first PT_LOAD starts on.  A file that is not there, or not
 * an ELF program or library of the core's machine, is no module: its
 * frames stay unnamed, as the docs say. */
static int report_file(core_ctx *c, const char *path, uint64_t addr, uint64_t page, bool entry)
{
    int fd = open_regular(c, path);
    if (fd < 0)
        return FL_CORE_OK;
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    GElf_Ehdr eh;
    size_t np = 0;
    int rc = FL_CORE_OK;
    if (!e || !gelf_getehdr(e, &eh) || (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) ||
        eh.e_machine != c->arch->machine || elf_getphdrnum(e, &np) != 0) {
        if (e)
            elf_end(e);
        close(fd);
        return FL_CORE_OK;
    }
    Dwarf_Addr bias = 0;
    if (eh.e_type == ET_DYN && entry) {
        bias = c->at_entry - eh.e_entry;
    } else if (eh.e_type == ET_DYN) {
        for (size_t i = 0; i < np; i++) {
            GElf_Phdr ph;
            if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD) {
                bias = addr - (ph.p_vaddr & ~(page - 1));
                break;
            }
        }
    }
    elf_end(e);
    const char *slash = strrchr(path, '/');
    dwfl_report_begin_add(c->dwfl);
    /* fd is libdwfl's once the module is made. */
    if (!dwfl_report_elf(c->dwfl, slash ? slash + 1 : path, path, fd, bias, false)) {
        close(fd);
        dwfl_report_end(c->dwfl, NULL, NULL);
        return FL_CORE_OK; /* overlapping a module libdwfl found: kept as found */
    }
    if (dwfl_report_end(c->dwfl, NULL, NULL) != 0)
        rc = fail(c, FL_CORE_EDWFL, "%s: %s", path, dwfl_errmsg(-1));
    return rc;
}

/* Whether addr is inside a module reported so far.  (dwfl_addrmodule
 * also answers for the address just past a module's end.) */
static bool in_module(core_ctx *c, uint64_t addr)
{
    Dwfl_Module *m = dwfl_addrmodule(c->dwfl, addr);
    Dwarf_Addr lo = 0, hi = 0;
    return m && dwfl_module_info(m, NULL, &lo, &hi, NULL, NULL, NULL, NULL) && addr >= lo &&
           addr < hi;
}

/* The modules whose first page the core lacks (qemu-user's cores leave
 * out every read-only mapping; a coredump_filter without bit 4 does too):
 * libdwfl sees no ELF header there.  The program by --exe or NT_FILE,
 * then every other file NT_FILE maps from its start. */
static int report_unseen(core_ctx *c)
{
    const char *exe = c->opts->exe ? c->opts->exe : c->ntfile_exe;
    int rc;
    if (exe && c->at_entry && !in_module(c, c->at_entry) &&
        (rc = report_file(c, exe, c->at_entry, 1, true)))
        return rc;
    uint64_t lo, hi, pgoff, page = c->ntfile_len >= 16 ? rd64(c->ntfile + 8) : 0;
    const char *name;
    if (page == 0 || (page & (page - 1)))
        return FL_CORE_OK; /* no NT_FILE, or not a page size */
    ntfile_cursor cur = {0, NULL};
    while (ntfile_next(c, &cur, &lo, &hi, &pgoff, &name)) {
        if (pgoff != 0 || in_module(c, lo))
            continue;
        if ((rc = report_file(c, name, lo, page, false)))
            return rc;
    }
    return FL_CORE_OK;
}

static int obj_cmp(const void *a, const void *b)
{
    const struct core_obj *x = a, *y = b;
    if (x->main != y->main)
        return x->main ? -1 : 1;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* One thread libdwfl found in the core: unwind it into the core_thread
 * of the same id. */
static int thread_cb(Dwfl_Thread *thread, void *arg)
{
    core_ctx *c = arg;
    pid_t tid = dwfl_thread_tid(thread);
    for (size_t i = 0; i < c->nthreads; i++) {
        core_thread *t = &c->threads[i];
        if (t->tid != (uint64_t)tid || t->frames)
            continue;
        if (!(t->frames = malloc(FL_CORE_MAX_FRAMES * sizeof(uint64_t))))
            return DWARF_CB_ABORT;
        t->nframes = fl_lw_thread_frames(thread, t->frames, FL_CORE_MAX_FRAMES);
        break;
    }
    return DWARF_CB_OK;
}

static int unwind_threads(core_ctx *c)
{
    /* All threads in one pass: dwfl_getthread_frames() per thread walks
     * the notes from the start each time, and libdw 0.188 leaks the state
     * of every thread it passes on the way. */
    dwfl_getthreads(c->dwfl, thread_cb, c);
    for (size_t i = 0; i < c->nthreads; i++) {
        core_thread *t = &c->threads[i];
        if (!t->frames && !(t->frames = malloc(sizeof(uint64_t))))
            return fail(c, FL_CORE_EIO, "out of memory");
        if (t->nframes == 0) /* not even the pc: take it from the registers */
            t->frames[t->nframes++] = t->regs[c->arch->index[c->arch->n - 1]];
    }
    return FL_CORE_OK;
}

/* ---- writing ---- */

/* Value of KEY=value in os-release text, unquoted, into out. */
static void os_release_value(const char *text, const char *key, char *out, size_t cap)
{
    size_t klen = strlen(key);
    out[0] = '\0';
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, key, klen) || p[klen] != '=')
            continue;
        const char *v = p + klen + 1, *e = strchr(v, '\n');
        size_t n = e ? (size_t)(e - v) : strlen(v);
        if (n >= 2 && (v[0] == '"' || v[0] == '\'') && v[n - 1] == v[0]) {
            v++;
            n -= 2;
        }
        if (n >= cap)
            n = cap - 1;
        memcpy(out, v, n);
        out[n] = '\0';
        return;
    }
}

/* A fresh version-4 UUID, as libfaultline draws crash ids; the kernel's
 * own generator when getrandom(2) is missing (before Linux 3.17). */
int fl_core_uuid(char out[40])
{
    static const char hex[] = "0123456789abcdef";
    uint8_t b[16];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {
        FILE *r = fopen("/proc/sys/kernel/random/uuid", "r");
        bool ok = r && fgets(out, 40, r) && strlen(out) >= 36;
        if (r)
            fclose(r);
        if (!ok)
            return -1;
        out[36] = '\0';
        return 0;
    }
    b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
    int o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        out[o++] = hex[b[i] >> 4];
        out[o++] = hex[b[i] & 15];
    }
    out[o] = '\0';
    return 0;
}

/* The raw stack as the client writes it (catcher.c raw_stack): from 128
 * bytes below the stack pointer (the x86-64 red zone), 64-byte aligned,
 * FL_CORE_STACK_BYTES up; where that start was not dumped (the pointer in
 * a guard page: a stack overflow), from the first dumped page above it,
 * up to 16 pages up; then up to the first page not dumped, or to the
 * program's argument and environment strings (the kernel's AT_RANDOM
 * bytes lie right below them), which are never copied into a log. */
static bool raw_stack(core_ctx *c, FILE *out, uint64_t sp)
{
    uint8_t page[4096];
    uint64_t from = sp >= 128 ? (sp - 128) & ~(uint64_t)63 : 0;
    uint64_t to = from + FL_CORE_STACK_BYTES;
    int skip = 16;
    for (uint64_t a = from; a < to;) {
        if (a < c->at_random && c->at_random < to)
            to = c->at_random;
        uint64_t chunk = 4096 - (a & 4095);
        if (chunk > to - a)
            chunk = to - a;
        if (!core_read(c, a, page, chunk)) {
            if (a != from || skip-- == 0 || to + chunk < to)
                break;
            from = a + chunk;
            to += chunk;
            a = from;
            continue;
        }
        if (!fl_lw_stack(out, a, page, chunk))
            return false;
        a += chunk;
    }
    return true;
}

/* A thread's name: the caller's (from /proc), else the core's command
 * name for the main thread, else NULL. */
static const char *thread_name(const core_ctx *c, uint64_t tid)
{
    for (size_t i = 0; i < c->opts->nthread_names; i++)
        if (c->opts->thread_names[i].tid == tid)
            return c->opts->thread_names[i].name;
    return c->have_psinfo && tid == c->pid ? c->fname : NULL;
}

static bool write_log(core_ctx *c, FILE *out, fl_core_info *info)
{
    const fl_core_opts *o = c->opts;
    const core_thread *t0 = &c->threads[0];
    const struct core_obj *mainobj = c->nobjs && c->objs[0].main ? &c->objs[0] : NULL;
    const char *exe = o->exe ? o->exe : mainobj ? mainobj->path : c->ntfile_exe;
    const char *app = o->app ? o->app : exe && *exe ? fl_lw_base_name(exe) : c->fname;
    int sig = c->have_siginfo ? c->sig_no : t0->cursig;
    int code = c->have_siginfo ? c->sig_code : t0->si_code;
    if (sig < 0 || sig > 128)
        sig = 0; /* not a signal Linux sends: unknown, as the reader takes it */

    char crash_id[40];
    snprintf(crash_id, sizeof crash_id, "%s", o->crash_id ? o->crash_id : c->crash_id);
    int64_t when = o->crash_time;
    struct stat st;
    if (when < 0)
        when = fstat(c->fd, &st) == 0 ? (int64_t)st.st_mtime : (int64_t)time(NULL);

    /* The machine that converts is the one that crashed, for a core from
     * the kernel's core_pattern pipe; for a copied core it is not, and the
     * docs say so. */
    struct utsname u;
    memset(&u, 0, sizeof u);
    uname(&u);
    char osr[4096] = "", os_name[128], os_version[64], os_pretty[256];
    FILE *f = fopen("/etc/os-release", "r");
    if (!f)
        f = fopen("/usr/lib/os-release", "r");
    if (f) {
        osr[fread(osr, 1, sizeof osr - 1, f)] = '\0';
        fclose(f);
    }
    os_release_value(osr, "NAME", os_name, sizeof os_name);
    os_release_value(osr, "VERSION_ID", os_version, sizeof os_version);
    os_release_value(osr, "PRETTY_NAME", os_pretty, sizeof os_pretty);

    if (!fl_lw_intro(out, "core dump"))
        return false;
    if (!fl_lw_str(out, "FAULTLINE", FAULTLINE_VERSION_STRING) ||
        !fl_lw_i64(out, "CRASHLOG_VERSION", FAULTLINE_CRASHLOG_VERSION) ||
        !fl_lw_str(out, "APPLICATION_NAME", !fl_lw_blank(app) ? app : "unknown") ||
        !fl_lw_str(out, "APPLICATION_VERSION", o->app_version) ||
        !fl_lw_str(out, "PLATFORM_NAME", "linux") ||
        !fl_lw_str(out, "CPUARCH_NAME", c->arch->cpuarch) ||
        !fl_lw_str(out, "PLATFORM_VERSION", u.release) || !fl_lw_i64(out, "CRASH_SIGNAL", sig) ||
        !fl_lw_i64(out, "CRASH_TIME", when) || !fl_lw_str(out, "CRASH_ID", crash_id) ||
        !fl_lw_str(out, "INSTALL_ID", o->install_id) || !fl_lw_str(out, "OS_NAME", os_name) ||
        !fl_lw_str(out, "OS_VERSION", os_version) || !fl_lw_str(out, "OS_PRETTY_NAME", os_pretty) ||
        !fl_lw_str(out, "KERNEL_VERSION", u.version) || !fl_lw_str(out, "EXECUTABLE", exe) ||
        !fl_lw_i64(out, "PROCESS_ID", (int64_t)(uint32_t)(c->have_psinfo ? c->pid : t0->tid)) ||
        !fl_lw_i64(out, "CRASH_THREAD", (int64_t)(uint32_t)t0->tid) ||
        !fl_lw_str(out, "CRASH_SOURCE", o->source ? o->source : "core") ||
        (o->have_uptime && !fl_lw_i64(out, "APPLICATION_UPTIME", o->uptime)))
        return false;
    /* The core names the process's command (its main thread's), not each
     * thread's: the others' names only come from the caller. */
    if (!fl_lw_str(out, "CRASH_THREAD_NAME", thread_name(c, t0->tid)))
        return false;
    if (!fl_lw_str(out, "CRASH_SIGNAL_NAME", fl_lw_signal_name(sig)) ||
        !fl_lw_i64(out, "CRASH_CODE", code))
        return false;
    if (c->have_siginfo && code > 0 &&
        (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP) &&
        !fl_lw_hex(out, "CRASH_ADDRESS", c->fault_addr))
        return false;
    for (size_t i = 0; i < c->arch->n; i++) {
        fl_line l;
        fl_line_start(&l, "REGISTER");
        fl_line_raw(&l, c->arch->names[i]);
        fl_line_char(&l, ' ');
        fl_line_hex(&l, t0->regs[c->arch->index[i]]);
        if (!fl_lw_line(out, &l))
            return false;
    }
    if (fputc('\n', out) == EOF)
        return false;

    for (size_t i = 0; i < c->nobjs; i++) {
        const struct core_obj *ob = &c->objs[i];
        if (!fl_lw_object(out, ob->path, ob->start, ob->end - ob->start,
                          ob->has_bias ? &ob->bias : NULL, ob->build_id, (size_t)ob->build_id_len))
            return false;
    }
    if (fputc('\n', out) == EOF)
        return false;
    if (!fl_lw_callstack(out, t0->frames, t0->nframes) ||
        !raw_stack(c, out, t0->regs[c->arch->index[c->arch->sp]]))
        return false;
    for (size_t i = 1; i < c->nthreads; i++) {
        const core_thread *t = &c->threads[i];
        if (!fl_lw_thread(out, (uint32_t)t->tid, thread_name(c, t->tid), t->frames, t->nframes))
            return false;
    }
    if (c->threads_omitted && !fl_lw_i64(out, "THREADS_OMITTED", (int64_t)c->threads_omitted))
        return false;
    if (fputs("END\n", out) == EOF || fflush(out) != 0 || ferror(out))
        return false;
    if (info) {
        memcpy(info->crash_id, crash_id, sizeof info->crash_id);
        info->signal = sig;
        info->pid = c->have_psinfo ? c->pid : t0->tid;
        info->tid = t0->tid;
        info->nframes = t0->nframes;
        info->nthreads = c->nthreads;
        info->nobjects = c->nobjs;
    }
    return true;
}

int fl_core_to_crashlog(const char *path, const fl_core_opts *opts, FILE *out, fl_core_info *info,
                        char *err, size_t errcap)
{
    static const fl_core_opts defaults = {.crash_time = -1};
    core_ctx c = {
        .opts = opts ? opts : &defaults, .err = err, .errcap = errcap, .path = path, .fd = -1};
    c.shown = c.opts->name ? c.opts->name : path;
    int rc;
    if (err && errcap)
        err[0] = '\0';
    elf_version(EV_CURRENT);
    /* Not opened as anything but a regular file: a FIFO would wait. */
    c.fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (c.fd < 0) {
        rc = fail(&c, FL_CORE_EIO, "%s", strerror(errno));
        goto done;
    }
    struct stat st;
    if (fstat(c.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = fail(&c, FL_CORE_EIO, "not a regular file");
        goto done;
    }
    c.elf = elf_begin(c.fd, ELF_C_READ_MMAP, NULL);
    if (!c.elf) {
        rc = fail(&c, FL_CORE_ENOTCORE, "%s", elf_errmsg(-1));
        goto done;
    }
    c.image = elf_rawfile(c.elf, &c.size);
    if (!c.image) {
        rc = fail(&c, FL_CORE_ENOTCORE, NULL);
        goto done;
    }
    if ((rc = check_file(&c)) || (rc = read_notes(&c)))
        goto done;

    c.dwfl = dwfl_begin(&dwfl_cbs);
    if (!c.dwfl) {
        rc = fail(&c, FL_CORE_EDWFL, "%s", dwfl_errmsg(-1));
        goto done;
    }
    if ((rc = hide_names(&c)))
        goto done;
    current = &c;
    dwfl_report_begin(c.dwfl);
    /* No executable named: libdwfl would open() it by its path.  Each
     * module's file, the program's too, comes from find_elf. */
    int nmods = dwfl_core_file_report(c.dwfl, c.elf, NULL);
    if (nmods < 0 || dwfl_report_end(c.dwfl, NULL, NULL) != 0) {
        rc = fail(&c, FL_CORE_EDWFL, "%s", dwfl_errmsg(-1));
        goto done;
    }
    if ((rc = report_unseen(&c)))
        goto done;
    if (dwfl_core_file_attach(c.dwfl, c.elf) < 0) {
        /* What libdwfl lacks is a backend for the machine; the rest was
         * checked above. */
        rc = fail(&c, FL_CORE_EARCH, "%s", dwfl_errmsg(-1));
        goto done;
    }
    if (dwfl_getmodules(c.dwfl, module_cb, &c, 0) != 0) {
        rc = fail(&c, FL_CORE_EIO, "out of memory");
        goto done;
    }
    if (c.nobjs > 1) /* none at all is no array: qsort's pointer may not be NULL */
        qsort(c.objs, c.nobjs, sizeof *c.objs, obj_cmp);
    if ((rc = unwind_threads(&c)))
        goto done;
    if (!c.opts->crash_id && fl_core_uuid(c.crash_id)) {
        rc = fail(&c, FL_CORE_EIO, "cannot draw a crash id: no getrandom(2), no /proc");
        goto done;
    }
    if (!write_log(&c, out, info)) {
        rc = fail(&c, FL_CORE_EWRITE, "%s", strerror(errno));
        goto done;
    }
    rc = FL_CORE_OK;
done:
    if (c.dwfl)
        dwfl_end(c.dwfl);
    current = NULL;
    if (c.elf)
        elf_end(c.elf);
    if (c.fd >= 0)
        close(c.fd);
    for (size_t i = 0; i < c.nthreads; i++)
        free(c.threads[i].frames);
    free(c.threads);
    for (size_t i = 0; i < c.nobjs; i++)
        free(c.objs[i].path);
    free(c.objs);
    free(c.ntfile);
    return rc;
}
