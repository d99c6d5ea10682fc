/*
 * remote_unwind.c - libdwfl's CFI unwinder fed from a crash log.
 *
 * How this works: a Dwfl session is built per call.  Each OBJECT whose
 * file can be found (see fl_remote_unwind.h) is reported with
 * dwfl_report_elf at its load bias, so libdwfl maps pcs to modules and
 * reads their .eh_frame.  dwfl_attach_state then installs three callbacks
 * that play the part a live process or a core file plays normally: one
 * thread (next_thread), its registers from the REGISTER lines
 * (set_initial_registers) and its memory (memory_read) from the STACK
 * chunks or the modules' read-only segments.  dwfl_getthread_frames walks
 * and hands every frame to frame_cb.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <elfutils/libdwfl.h>

#include "fl_remote_unwind.h"
#include "fl_symcache.h"

#define MAX_SEGS 8     /* read-only PT_LOADs kept per module */
#define RU_MAX_REGS 32 /* DWARF registers an architecture below names */

const char *fl_remote_unwind_strerror(int code)
{
    switch (code) {
#define FL_RU_STR_(name, value, text)                                                              \
    case value:                                                                                    \
        return text;
        FL_RU_ERRORS(FL_RU_STR_)
#undef FL_RU_STR_
    }
    return "unknown error";
}

typedef struct ro_seg {
    uint64_t lo, hi;  /* absolute addresses backed by file bytes */
    uint64_t offset;  /* file offset of lo */
} ro_seg;

typedef struct ru_module {
    int fd;
    ro_seg segs[MAX_SEGS];
    size_t nsegs;
    size_t exec_first, exec_end; /* its code: out->exec[exec_first .. exec_end) */
} ru_module;

typedef struct ru_ctx {
    const fl_crashlog *log;
    const fl_stack_chunk **chunks; /* sorted by address */
    size_t nchunks;
    ru_module *mods;
    size_t nmods;
    const struct ru_arch *arch;
    uint64_t regs[RU_MAX_REGS]; /* by DWARF number */
    bool have_reg[RU_MAX_REGS];
    uint64_t pc;
    pid_t tid;
    int thread_given;
    fl_ru_stack *out;
} ru_ctx;

/* The REGISTER names of an architecture in DWARF register order, and the
 * name of its pc (which has no DWARF number on aarch64, and whose number
 * on x86-64, 16, libdwfl takes through dwfl_thread_state_register_pc).
 * libdwfl unwinds any architecture it has a backend for, whatever the
 * host's: an aarch64 device's crash is unwound on an x86-64 server. */
typedef struct ru_arch {
    const char *log_name;
    const char *const *names;
    int nregs;
    int sp;
    const char *pc;
    int pc_dwarf; /* the pc's DWARF number, or -1 */
    /* Whether a call leaves its return address in a register (x30): see
     * frame_cb. */
    bool link_register;
} ru_arch;

static const char *const x86_64_names[] = {"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
                                           "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15"};
static const char *const aarch64_names[] = {"x0",  "x1",  "x2",  "x3",  "x4",  "x5",  "x6",  "x7",
                                            "x8",  "x9",  "x10", "x11", "x12", "x13", "x14", "x15",
                                            "x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23",
                                            "x24", "x25", "x26", "x27", "x28", "x29", "x30", "sp"};

static const ru_arch arches[] = {
    {"x86-64", x86_64_names, 16, 7, "rip", 16, false},
    {"x86_64", x86_64_names, 16, 7, "rip", 16, false},
    {"aarch64", aarch64_names, 32, 31, "pc", -1, true},
    {"arm64", aarch64_names, 32, 31, "pc", -1, true},
};

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int chunk_cmp(const void *a, const void *b)
{
    const fl_stack_chunk *x = *(const fl_stack_chunk *const *)a;
    const fl_stack_chunk *y = *(const fl_stack_chunk *const *)b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* One byte of stack memory, or -1 when the log has none there. */
static int stack_byte(const ru_ctx *c, uint64_t addr)
{
    size_t lo = 0, hi = c->nchunks;
    while (lo < hi) { /* last chunk with chunk->addr <= addr */
        size_t mid = lo + (hi - lo) / 2;
        if (c->chunks[mid]->addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return -1;
    const fl_stack_chunk *ch = c->chunks[lo - 1];
    if (addr - ch->addr >= ch->len)
        return -1;
    return ch->data[addr - ch->addr];
}

static bool module_read(const ru_ctx *c, uint64_t addr, uint8_t *buf, size_t n)
{
    for (size_t m = 0; m < c->nmods; m++) {
        const ru_module *mod = &c->mods[m];
        for (size_t s = 0; s < mod->nsegs; s++) {
            const ro_seg *sg = &mod->segs[s];
            if (addr < sg->lo || addr + n > sg->hi || addr + n < addr)
                continue;
            ssize_t r = pread(mod->fd, buf, n, (off_t)(sg->offset + (addr - sg->lo)));
            return r == (ssize_t)n;
        }
    }
    return false;
}

static int in_ranges(const fl_ru_range *r, size_t n, uint64_t pc);

/* A return address signed by aarch64 pointer authentication (pac-ret)
 * carries the signature in its top bits.  libdwfl 0.188 does not act on
 * DW_CFA_AARCH64_negate_ra_state, so it would take the signed value as
 * the caller's pc and stop there.  Every word it reads (a saved x30 among
 * them) and the crashing thread's x30 are given back without the
 * signature when that makes them an address in a module's code: the user
 * virtual address is 48 bits, as the client assumes too (fl_unwind.c). */
static uint64_t unsign(const ru_ctx *c, uint64_t w)
{
    const uint64_t va = 0x0000ffffffffffffull;
    if (!c->arch->link_register || (w & ~va) == 0)
        return w;
    uint64_t a = w & va;
    return in_ranges(c->out->exec, c->out->nexec, a) ? a : w;
}

static bool cb_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
    const ru_ctx *c = arg;
    uint8_t b[8];
    bool all = true;
    for (size_t i = 0; i < 8; i++) {
        int v = stack_byte(c, addr + i);
        if (v < 0) {
            all = false;
            break;
        }
        b[i] = (uint8_t)v;
    }
    if (!all && !module_read(c, addr, b, sizeof b))
        return false;
    uint64_t w = 0;
    for (int i = 7; i >= 0; i--) /* little-endian, as x86-64 and aarch64 Linux are */
        w = (w << 8) | b[i];
    *result = unsign(c, w);
    return true;
}

static pid_t cb_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
    ru_ctx *c = arg;
    if (c->thread_given)
        return 0;
    c->thread_given = 1;
    *thread_argp = c;
    return c->tid;
}

static bool cb_set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
    const ru_ctx *c = thread_arg;
    for (int i = 0; i < c->arch->nregs; i++) {
        if (!c->have_reg[i])
            continue;
        /* x30 holds the return address the prologue signed. */
        Dwarf_Word v = i == 30 ? unsign(c, c->regs[i]) : c->regs[i];
        if (!dwfl_thread_state_registers(thread, i, 1, &v))
            return false;
    }
    if (c->arch->pc_dwarf >= 0) {
        Dwarf_Word v = c->pc;
        if (!dwfl_thread_state_registers(thread, c->arch->pc_dwarf, 1, &v))
            return false;
    }
    dwfl_thread_state_register_pc(thread, c->pc);
    return true;
}

static int in_ranges(const fl_ru_range *r, size_t n, uint64_t pc)
{
    for (size_t i = 0; i < n; i++)
        if (pc >= r[i].lo && pc < r[i].hi)
            return 1;
    return 0;
}

/* Whether pc is in the code of a module with a file, whose CFI libdwfl
 * reads; elsewhere it falls back to the frame-pointer chain. */
static bool has_cfi(const ru_ctx *c, uint64_t pc)
{
    for (size_t m = 0; m < c->nmods; m++)
        for (size_t i = c->mods[m].exec_first; i < c->mods[m].exec_end; i++)
            if (pc >= c->out->exec[i].lo && pc < c->out->exec[i].hi)
                return true;
    return false;
}

/* A frame whose pc is in no module's code (the executable segments of the
 * modules with a file, the OBJECT range of the others) is where a walk
 * went astray: it ends there.
 *
 * On aarch64, libdwfl's fallback for a frame without CFI takes the caller's
 * pc from x30 before it follows the frame-pointer chain.  That is right for
 * the crashing frame, but a frame reached by a CFI step has x30 restored to
 * its own return address, its pc: the step repeats the frame.  Such a
 * repeat (the same pc, after a frame without CFI that a CFI step reached)
 * is dropped, so a stack through a system library with no file reads as
 * the client's does. */
static int frame_cb(Dwfl_Frame *state, void *arg)
{
    ru_ctx *c = arg;
    fl_ru_stack *o = c->out;
    Dwarf_Addr pc;
    bool act = false;
    if (!dwfl_frame_pc(state, &pc, &act))
        return DWARF_CB_ABORT;
    size_t n = o->nframes;
    if (c->arch->link_register && n >= 2 && pc == o->pcs[n - 1] && !o->activation[n - 1] &&
        !has_cfi(c, o->pcs[n - 1] - 1) &&
        has_cfi(c, o->activation[n - 2] ? o->pcs[n - 2] : o->pcs[n - 2] - 1))
        return DWARF_CB_OK;
    if (o->nframes >= FL_RU_MAX_FRAMES) {
        snprintf(o->stop_reason, sizeof o->stop_reason, "frame limit (%d) reached",
                 FL_RU_MAX_FRAMES);
        return DWARF_CB_ABORT;
    }
    if (o->nframes > 0) {
        uint64_t probe = act ? pc : pc - 1;
        if (!in_ranges(o->exec, o->nexec, probe)) {
            snprintf(o->stop_reason, sizeof o->stop_reason,
                     "pc 0x%llx is outside every known module", (unsigned long long)pc);
            return DWARF_CB_ABORT;
        }
    }
    o->pcs[o->nframes] = pc;
    o->activation[o->nframes] = act;
    o->nframes++;
    return DWARF_CB_OK;
}

static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                        const char *file_name, const char *debuglink_file,
                        GElf_Word debuglink_crc, char **debuginfo_file_name)
{
    /* The unwinder needs .eh_frame from the main file only; never let
     * libdwfl go looking (it could ask debuginfod behind our back). */
    return -1;
}

static const Dwfl_Callbacks dwfl_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = no_debuginfo,
    .section_address = dwfl_offline_section_address,
};

/* Picks the file of one OBJECT: the loadable file with the same build id
 * (OBJECT_PATH, an upload, debuginfod's executable).  A debug-only file
 * would not do: its .eh_frame and code are SHT_NOBITS, and its program
 * headers point at bytes it does not have. */
static int module_file(const fl_object *o, fl_symlocate *loc, char *path, size_t cap)
{
    if (!o->build_id)
        return -1;
    const char *opath = o->path_cut ? NULL : o->path; /* a cut path names no file */
    if (loc) {
        fl_symlocate_result r;
        if (fl_symlocate_find_executable(loc, o->build_id, opath, &r, NULL, 0) != 0)
            return -1;
        snprintf(path, cap, "%s", r.path);
        return 0;
    }
    char id[2 * FL_SYM_BUILD_ID_MAX + 1];
    if (opath && opath[0] == '/' &&
        fl_symlocate_read_build_id(opath, id, sizeof id, NULL, NULL) == 0 &&
        strcasecmp(id, o->build_id) == 0) {
        snprintf(path, cap, "%s", opath);
        return 0;
    }
    return -1;
}

/* Reads the PT_LOADs of the file at fd: read-only ones with file bytes go
 * to mod->segs, executable ones to out->exec.  0 or -1 (not ELF). */
static int scan_segments(int fd, uint64_t bias, ru_module *mod, fl_ru_stack *out)
{
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (!elf || elf_kind(elf) != ELF_K_ELF) {
        if (elf)
            elf_end(elf);
        return -1;
    }
    size_t phnum = 0;
    int rc = elf_getphdrnum(elf, &phnum) == 0 ? 0 : -1;
    struct stat sb;
    uint64_t fsize = fstat(fd, &sb) == 0 ? (uint64_t)sb.st_size : 0;
    for (size_t i = 0; rc == 0 && i < phnum; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
            continue;
        uint64_t lo = bias + ph.p_vaddr;
        if ((ph.p_flags & PF_X) && out->nexec < FL_RU_MAX_RANGES) {
            out->exec[out->nexec].lo = lo;
            out->exec[out->nexec].hi = lo + ph.p_memsz;
            out->nexec++;
        }
        if (!(ph.p_flags & PF_W) && ph.p_filesz > 0 && ph.p_offset <= fsize &&
            ph.p_filesz <= fsize - ph.p_offset && mod->nsegs < MAX_SEGS) {
            ro_seg *s = &mod->segs[mod->nsegs++];
            s->lo = lo;
            s->hi = lo + ph.p_filesz;
            s->offset = ph.p_offset;
        }
    }
    elf_end(elf);
    return rc;
}

/* The values the walk can meet as pcs: the pc, and the 8-byte words of the
 * STACK chunks (a return address is read from the stack), sorted. */
static uint64_t *code_candidates(const ru_ctx *c, size_t *n)
{
    size_t cap = 1;
    for (size_t i = 0; i < c->nchunks; i++)
        cap += c->chunks[i]->len / 8 + 1;
    uint64_t *v = malloc(cap * sizeof *v);
    if (!v)
        return NULL;
    size_t k = 0;
    v[k++] = c->pc;
    for (size_t i = 0; i < c->nchunks; i++) {
        const fl_stack_chunk *ch = c->chunks[i];
        /* Slots at 8-aligned addresses, as the ABI keeps them. */
        for (size_t off = (8 - ch->addr % 8) % 8; off + 8 <= ch->len; off += 8) {
            uint64_t w = 0;
            for (int b = 7; b >= 0; b--)
                w = (w << 8) | ch->data[off + (size_t)b];
            v[k++] = w;
        }
    }
    qsort(v, k, sizeof *v, u64_cmp);
    *n = k;
    return v;
}

/* Whether a candidate pc lies in the OBJECT's [base, base + size); one of
 * unknown size may hold any. */
static bool object_reached(const fl_object *o, const uint64_t *v, size_t n)
{
    if (o->size == 0)
        return true;
    size_t lo = 0, hi = n;
    while (lo < hi) { /* first value >= base */
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] < o->base)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && v[lo] - o->base < o->size;
}

static void add_object_range(fl_ru_stack *out, const fl_object *o)
{
    if (out->nexec < FL_RU_MAX_RANGES && o->size > 0) {
        out->exec[out->nexec].lo = o->base;
        out->exec[out->nexec].hi = o->base + o->size;
        out->nexec++;
    }
}

int fl_remote_unwind(const fl_crashlog *log, fl_symlocate *loc, fl_ru_stack *out, char *err,
                     size_t errlen)
{
#define FAIL(code, ...)                                                                            \
    do {                                                                                           \
        rc = (code);                                                                               \
        if (errlen)                                                                                \
            snprintf(err, errlen, __VA_ARGS__);                                                    \
        goto done;                                                                                 \
    } while (0)
    int rc = 0;
    Dwfl *dwfl = NULL;
    uint64_t *cand = NULL;
    size_t ncand = 0;
    ru_ctx c;
    memset(&c, 0, sizeof c);
    if (errlen)
        err[0] = '\0';
    if (!log || !out)
        return FL_RU_EINVAL;
    memset(out, 0, sizeof *out);
    c.log = log;
    c.out = out;
    /* A log without CPUARCH_NAME (MojoCrash's version 1) is x86-64's. */
    const char *arch = log->cpuarch ? log->cpuarch : "x86-64";
    for (size_t a = 0; a < sizeof arches / sizeof arches[0] && !c.arch; a++)
        if (strcmp(arch, arches[a].log_name) == 0)
            c.arch = &arches[a];
    if (!c.arch)
        FAIL(FL_RU_EUNSUPPORTED, "architecture %s is not supported", arch);
    bool have_pc = false;
    for (size_t i = 0; i < log->nregisters; i++) {
        const char *name = log->registers[i].name;
        if (!name)
            continue;
        if (strcmp(name, c.arch->pc) == 0) {
            c.pc = log->registers[i].value;
            have_pc = true;
            continue;
        }
        for (int r = 0; r < c.arch->nregs; r++)
            if (strcmp(name, c.arch->names[r]) == 0) {
                c.regs[r] = log->registers[i].value;
                c.have_reg[r] = true;
            }
    }
    if (!have_pc || !c.have_reg[c.arch->sp])
        FAIL(FL_RU_ENOREGS, "%s", fl_remote_unwind_strerror(FL_RU_ENOREGS));
    c.tid = (pid_t)(log->has_crash_tid ? log->crash_tid : log->has_pid ? log->pid : 1);
    if (c.tid <= 0)
        c.tid = 1;

    if (log->nstack) {
        c.chunks = calloc(log->nstack, sizeof *c.chunks);
        if (!c.chunks)
            FAIL(FL_RU_ENOMEM, "out of memory");
        for (size_t i = 0; i < log->nstack; i++)
            c.chunks[i] = &log->stack[i];
        c.nchunks = log->nstack;
        qsort(c.chunks, c.nchunks, sizeof *c.chunks, chunk_cmp);
    }
    if (log->nobjects) {
        c.mods = calloc(log->nobjects < FL_RU_MAX_MODULES ? log->nobjects : FL_RU_MAX_MODULES,
                        sizeof *c.mods);
        if (!c.mods || !(cand = code_candidates(&c, &ncand)))
            FAIL(FL_RU_ENOMEM, "out of memory");
    }

    dwfl = dwfl_begin(&dwfl_callbacks);
    if (!dwfl)
        FAIL(FL_RU_EDWFL, "dwfl_begin: %s", dwfl_errmsg(-1));
    dwfl_report_begin(dwfl);
    for (size_t i = 0; i < log->nobjects; i++) {
        const fl_object *o = &log->objects[i];
        uint64_t bias = o->has_bias ? o->bias : o->base;
        char path[PATH_MAX];
        /* Each module with a file holds two descriptors (ours and
         * libdwfl's) until the walk ends, and a log comes from whoever
         * reaches the ingest port: thousands of OBJECTs naming a file of
         * the server once took every descriptor of the process.  Only an
         * object that the pc or a stack word points into can hold a pc of
         * the walk, and at most FL_RU_MAX_MODULES get a file. */
        if (c.nmods == FL_RU_MAX_MODULES || !object_reached(o, cand, ncand) ||
            module_file(o, loc, path, sizeof path) != 0) {
            add_object_range(out, o);
            continue;
        }
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        if (fd < 0) {
            add_object_range(out, o);
            continue;
        }
        ru_module *m = &c.mods[c.nmods];
        size_t nexec_before = out->nexec;
        /* add_p_vaddr = true: `base` is the load bias, as OBJECT's 4th
         * field is, and libdwfl adds the first segment's p_vaddr. */
        if (scan_segments(fd, bias, m, out) != 0 ||
            !dwfl_report_elf(dwfl, o->name ? o->name : path, path, -1, bias, true)) {
            out->nexec = nexec_before;
            close(fd);
            memset(m, 0, sizeof *m);
            add_object_range(out, o);
            continue;
        }
        m->fd = fd;
        m->exec_first = nexec_before;
        m->exec_end = out->nexec;
        c.nmods++;
        out->modules_with_file++;
    }
    if (dwfl_report_end(dwfl, NULL, NULL) != 0)
        FAIL(FL_RU_EDWFL, "dwfl_report_end: %s", dwfl_errmsg(-1));
    if (c.nmods == 0)
        FAIL(FL_RU_EDWFL, "no module file found: nothing to read call-frame information from");

    static const Dwfl_Thread_Callbacks thread_callbacks = {
        .next_thread = cb_next_thread,
        .memory_read = cb_memory_read,
        .set_initial_registers = cb_set_initial_registers,
    };
    if (!dwfl_attach_state(dwfl, NULL, c.tid, &thread_callbacks, &c))
        FAIL(FL_RU_EDWFL, "dwfl_attach_state: %s", dwfl_errmsg(-1));
    int r = dwfl_getthread_frames(dwfl, c.tid, frame_cb, &c);
    if (r == -1 && !out->stop_reason[0])
        snprintf(out->stop_reason, sizeof out->stop_reason, "%s", dwfl_errmsg(-1));
    if (out->nframes == 0)
        FAIL(FL_RU_EDWFL, "unwinding produced no frame: %s", out->stop_reason);
    rc = 0;
done:
    if (dwfl)
        dwfl_end(dwfl);
    for (size_t i = 0; i < c.nmods; i++)
        close(c.mods[i].fd);
    free(cand);
    free(c.mods);
    free(c.chunks);
    return rc;
#undef FAIL
}

int fl_remote_unwind_consistent(const fl_crashlog *log, const fl_ru_stack *st, const uint64_t *pcs,
                                const bool *activation, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        /* A return address may sit just past the end of its function. */
        uint64_t probe = (i == 0 || (activation && activation[i])) ? pcs[i] : pcs[i] - 1;
        int ok = 0;
        if (st && st->nexec)
            ok = in_ranges(st->exec, st->nexec, probe);
        else
            for (size_t k = 0; k < log->nobjects && !ok; k++)
                ok = probe >= log->objects[k].base &&
                     probe - log->objects[k].base < log->objects[k].size;
        if (!ok)
            return 0;
    }
    return 1;
}

fl_ru_choice fl_remote_unwind_pick(const fl_crashlog *log, const fl_ru_stack *server)
{
    if (!server || server->nframes == 0)
        return FL_RU_PICK_CLIENT;
    if (log->ncallstack == 0)
        return fl_remote_unwind_consistent(log, server, server->pcs, server->activation, server->nframes)
                   ? FL_RU_PICK_SERVER
                   : FL_RU_PICK_CLIENT;
    if (log->callstack[0] != server->pcs[0])
        return FL_RU_PICK_CLIENT;
    int server_ok = fl_remote_unwind_consistent(log, server, server->pcs, server->activation, server->nframes);
    int client_ok = fl_remote_unwind_consistent(log, server, log->callstack, NULL, log->ncallstack);
    if (server_ok && (!client_ok || server->nframes > log->ncallstack))
        return FL_RU_PICK_SERVER;
    return FL_RU_PICK_CLIENT;
}
