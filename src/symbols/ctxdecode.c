/*
 * ctxdecode.c - the call graph of a program's instrumented functions, and
 * the search for the stacks that give a calling-context value.
 *
 * What the files tell, per function (a FUNC symbol with a size):
 *  - instrumented: its code passes its own address to
 *    __cyg_profile_func_enter.  An instrumented function inlined into
 *    another shows up there as an enter call with the other address: GCC
 *    keeps the hooks of inlined functions, so the runtime value has them.
 *  - its direct calls (call rel32, tail jumps to other functions, calls
 *    through PLT stubs and GOT slots, named by their relocations);
 *  - whether it calls through a pointer, or calls code that is not in the
 *    files given (the C library): either may call back any function whose
 *    address the program takes;
 *  - which functions' addresses are taken: loaded by lea/mov other than as
 *    the hooks' argument, in RELATIVE or symbol relocations, or as words
 *    of a fixed-address executable's data.
 * Functions that are not instrumented are transparent, as at run time:
 * an instrumented caller's successors are found through them.
 *
 * Inlined instrumented functions are placed by where their hooks sit in
 * the host's code (spans); the host's other calls are weak edges of them.
 *
 * The search (bottom of the file) folds paths from the entry points
 * (main, exported functions, address-taken ones, ones nothing calls):
 * iterative deepening by a weight that makes guessed edges dear, then,
 * when that finds nothing cheaply, meeting in the middle.  The graph
 * over-approximates (an edge the program never takes costs time, not
 * answers); the 64-bit mix makes a wrong answer as likely as guessing the
 * value, so the first match is the answer.  The budget bounds the time on
 * a large graph, and the caller is told when it ran out. */
#define _GNU_SOURCE
#include <capstone/capstone.h>
#include <elfutils/libdwelf.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl_context.h"
#include "fl_ctxdecode.h"
#include "symcache_build_int.h"

typedef struct cfunc {
    uint64_t addr, size;
    char *name;    /* as in the symbol table: what calls resolve by */
    char *display; /* demangled, or NULL */
    uint32_t module;
    bool instrumented, exported, global;
    uint8_t calls_out; /* may call back: CB_POINTER, CB_EXTERNAL, or 0 */
    bool addr_taken;
    uint64_t id;
    uint32_t *callees; /* direct, function indices */
    size_t ncallees, ccallees;
    uint32_t *inl; /* instrumented functions inlined into this one */
    size_t ninl, cinl;
    char **ext; /* names called through the PLT/GOT, resolved at link */
    size_t next, cext;
    long *ext_to;  /* at link, per ext: the function, or -CB_* (not in the files) */
    struct csite { /* where each call of the body is */
        uint64_t at;
        uint8_t kind; /* 0 direct (func), 1 ext (index), 2 pointer */
        uint32_t ref;
    } * sites;
    size_t nsites, csites;
    struct ispan { /* an inlined instrumented function's hooks: [lo, hi] */
        uint32_t fn;
        uint64_t lo, hi;
    } * spans;
    size_t nspans, cspans;
} cfunc;

typedef struct cmodule {
    char *name;
    uint32_t first, count; /* its functions: funcs[first .. first+count) */
    /* Its own name (a library's DT_SONAME, else its file's name; "" for
     * a program), then its DT_NEEDED names: each ended by a NUL, the list
     * by an empty name. */
    char *dyn;
    bool library;
} cmodule;

struct fl_ctxgraph {
    cmodule *mods;
    size_t nmods;
    cfunc *funcs;
    size_t nfuncs, cfuncs;
    /* the instrumented graph, after link */
    uint32_t *nodes; /* instrumented function indices */
    size_t nnodes;
    uint32_t *succ_off, *succ; /* node -> successor nodes */
    uint32_t *weak_off, *weak; /* node -> successors only maybe (W_INLINE) */
    uint8_t *node_cb;          /* node may call back any address-taken node:
                                * the likelier reason (CB_*), or 0 */
    uint32_t *callbacks;       /* address-taken instrumented nodes */
    size_t ncallbacks;
    uint32_t *roots;
    size_t nroots;
    /* Memory ran out in an add or link: the graph keeps the modules added
     * before (so it can be freed) but refuses more, and has no nodes. */
    bool nomem;
};

/* Why a function may call back code whose address was taken: it calls
 * through a pointer (or into code the files do not describe), or it calls
 * a C library function known to take callbacks (qsort, pthread_create...);
 * or, less likely, it calls any other function outside the files given.
 * The second kind weighs more in the search: printf never calls back, and
 * letting every caller of printf reach every callback cheaply makes the
 * graph far wider. */
enum { CB_POINTER = 1, CB_EXTERNAL = 2 };

static bool takes_callbacks(const char *name)
{
    /* clang-format off */
    static const char *const known[] = {
        "qsort", "qsort_r", "bsearch", "lfind", "lsearch", "tsearch", "tfind", "tdelete",
        "twalk", "twalk_r", "tdestroy", "pthread_create", "pthread_once", "pthread_atfork",
        "pthread_key_create", "atexit", "at_quick_exit", "on_exit", "__cxa_atexit",
        "__cxa_thread_atexit_impl", "signal", "sigaction", "bsd_signal", "sigset",
        "dl_iterate_phdr", "ftw", "nftw", "nftw64", "ftw64", "scandir", "scandir64",
        "scandirat", "glob", "glob64", "__libc_start_main", "makecontext", "clone",
        "timer_create", "thrd_create", "call_once", "_Unwind_Backtrace", "g_thread_new",
        "uv_queue_work"};
    /* clang-format on */
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(known[i], name))
            return true;
    return false;
}

/* Appends v to arr (n elements, room for cap), growing it.  Evaluates to
 * false when memory ran out, arr left as it was: the scan of a module
 * notes it in the graph's nomem and is undone at its end; link stops at
 * once, as its indices refer to what was pushed. */
#define PUSH(arr, n, cap, v)                                                                       \
    ({                                                                                             \
        bool ok_ = true;                                                                           \
        if ((n) == (cap)) {                                                                        \
            size_t nc_ = (cap) ? 2 * (cap) : 4;                                                    \
            void *np_ = realloc((arr), nc_ * sizeof *(arr));                                       \
            if (np_) {                                                                             \
                (arr) = np_;                                                                       \
                (cap) = nc_;                                                                       \
            } else {                                                                               \
                ok_ = false;                                                                       \
            }                                                                                      \
        }                                                                                          \
        if (ok_)                                                                                   \
            (arr)[(n)++] = (v);                                                                    \
        ok_;                                                                                       \
    })

fl_ctxgraph *fl_ctxgraph_new(void)
{
    return calloc(1, sizeof(fl_ctxgraph));
}

static void free_func(cfunc *f)
{
    free(f->name);
    free(f->display);
    free(f->callees);
    free(f->inl);
    for (size_t k = 0; k < f->next; k++)
        free(f->ext[k]);
    free(f->ext);
    free(f->ext_to);
    free(f->sites);
    free(f->spans);
}

/* The instrumented graph link made, freed: after link ran out of memory. */
static void free_nodes(fl_ctxgraph *g)
{
    free(g->nodes);
    free(g->succ_off);
    free(g->succ);
    free(g->weak_off);
    free(g->weak);
    free(g->node_cb);
    free(g->callbacks);
    free(g->roots);
    g->nodes = g->succ_off = g->succ = g->weak_off = g->weak = g->callbacks = g->roots = NULL;
    g->node_cb = NULL;
    g->nnodes = g->ncallbacks = g->nroots = 0;
}

void fl_ctxgraph_free(fl_ctxgraph *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->nfuncs; i++)
        free_func(&g->funcs[i]);
    for (size_t i = 0; i < g->nmods; i++) {
        free(g->mods[i].name);
        free(g->mods[i].dyn);
    }
    free(g->mods);
    free(g->funcs);
    free_nodes(g);
    free(g);
}

/* ---- one module ---- */

/* A relocated slot: the GOT word (or data word) at `addr` names `sym`. */
typedef struct slot {
    uint64_t addr;
    const char *sym; /* in the ELF's string table; NULL: RELATIVE */
    uint64_t value;  /* RELATIVE addend, or the defined symbol's value */
} slot;

typedef struct modscan {
    fl_ctxgraph *g;
    Elf *elf;
    uint32_t first, count; /* this module's functions, sorted by address */
    slot *slots;
    size_t nslots, cslots;
    struct stub {
        uint64_t lo, hi; /* a PLT section */
    } plts[4];
    int nplts;
    struct { /* GOT sections: their slots are loaded by code, not data */
        uint64_t lo, hi;
    } gots[4];
    int ngots;
    /* The function being scanned: the addresses its code loads, and how
     * many of those loads were a hook's argument. */
    struct load {
        uint32_t func;
        int loads, hooks;
    } * body;
    size_t nbody, cbody;
    bool a64; /* aarch64, else x86-64 */
    unsigned r_relative, r_irelative, r_jump_slot, r_glob_dat, r_abs64;
    uint64_t *exported; /* addresses a library's dynsym exports */
    size_t nexported, cexported;
    csh cs;
    cs_insn *insn;
    uint64_t at; /* the address of the call being noted */
    /* PLT stubs already read: every call to printf goes through the same
     * one.  Direct-mapped by address; sym may be NULL (not a stub). */
    struct stubname {
        uint64_t addr;
        const char *sym;
    } stubs[256];
} modscan;

static int cmp_func(const void *a, const void *b)
{
    const cfunc *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    /* At one address, the global name first (aliases). */
    if (x->global != y->global)
        return x->global ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_slot(const void *a, const void *b)
{
    const slot *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The function starting exactly at addr, or -1. */
static long func_at(const modscan *m, uint64_t addr)
{
    size_t lo = m->first, hi = m->first + m->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->g->funcs[mid].addr < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->first + m->count && m->g->funcs[lo].addr == addr ? (long)lo : -1;
}

/* The function whose body holds addr, or -1. */
static long func_holding(const modscan *m, uint64_t addr)
{
    size_t lo = m->first, hi = m->first + m->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->g->funcs[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == m->first)
        return -1;
    const cfunc *f = &m->g->funcs[lo - 1];
    return addr < f->addr + f->size ? (long)(lo - 1) : -1;
}

static const slot *slot_at(const modscan *m, uint64_t addr)
{
    slot key = {.addr = addr};
    return m->nslots ? bsearch(&key, m->slots, m->nslots, sizeof key, cmp_slot) : NULL;
}

static void body_note(modscan *m, long k, bool hook)
{
    if (k < 0)
        return;
    for (size_t i = 0; i < m->nbody; i++)
        if (m->body[i].func == (uint32_t)k) {
            m->body[i].loads += !hook;
            m->body[i].hooks += hook;
            return;
        }
    struct load l = {(uint32_t)k, !hook, hook};
    if (!PUSH(m->body, m->nbody, m->cbody, l))
        m->g->nomem = true;
}

static bool in_got(const modscan *m, uint64_t addr)
{
    for (int i = 0; i < m->ngots; i++)
        if (addr >= m->gots[i].lo && addr < m->gots[i].hi)
            return true;
    return false;
}

static bool in_plt(const modscan *m, uint64_t addr)
{
    for (int i = 0; i < m->nplts; i++)
        if (addr >= m->plts[i].lo && addr < m->plts[i].hi)
            return true;
    return false;
}

/* The bytes of the loaded image at [addr, addr+*len) from the section
 * holding them, or NULL. */
static const uint8_t *code_at(const modscan *m, uint64_t addr, size_t *len)
{
    Elf_Scn *scn = NULL;
    GElf_Shdr sh;
    while ((scn = elf_nextscn(m->elf, scn))) {
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_ALLOC))
            continue;
        if (addr < sh.sh_addr || addr >= sh.sh_addr + sh.sh_size)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        if (!d || !d->d_buf || d->d_size != sh.sh_size)
            return NULL;
        uint64_t off = addr - sh.sh_addr;
        if (*len > sh.sh_size - off)
            *len = sh.sh_size - off;
        return (const uint8_t *)d->d_buf + off;
    }
    return NULL;
}

static const char *read_stub(modscan *m, uint64_t addr);

/* The name a PLT stub jumps to (through its GOT slot), or NULL. */
static const char *stub_target(modscan *m, uint64_t addr)
{
    struct stubname *c = &m->stubs[(addr >> 3) & 255];
    if (c->addr != addr || !addr) {
        c->addr = addr;
        c->sym = read_stub(m, addr);
    }
    return c->sym;
}

static const char *read_stub(modscan *m, uint64_t addr)
{
    size_t len = 32;
    const uint8_t *code = code_at(m, addr, &len);
    uint64_t a = addr;
    uint64_t page = 0; /* aarch64: adrp x16, page; ldr x17, [x16, #off]; br x17 */
    for (int i = 0; code && i < 4 && cs_disasm_iter(m->cs, &code, &len, &a, m->insn); i++) {
        if (m->a64) {
            cs_arm64 *y = &m->insn->detail->arm64;
            if (m->insn->id == ARM64_INS_ADRP && y->op_count == 2 &&
                y->operands[1].type == ARM64_OP_IMM)
                page = (uint64_t)y->operands[1].imm;
            else if (m->insn->id == ARM64_INS_LDR && y->op_count == 2 &&
                     y->operands[1].type == ARM64_OP_MEM && page) {
                const slot *s = slot_at(m, page + (uint64_t)(int64_t)y->operands[1].mem.disp);
                return s ? s->sym : NULL;
            }
            continue;
        }
        cs_x86 *x = &m->insn->detail->x86;
        if (m->insn->id == X86_INS_JMP && x->op_count == 1 && x->operands[0].type == X86_OP_MEM &&
            x->operands[0].mem.base == X86_REG_RIP) {
            const slot *s = slot_at(m, a + (uint64_t)x->operands[0].mem.disp);
            return s ? s->sym : NULL;
        }
    }
    return NULL;
}

/* The general-purpose register slot (0-15) of a 64- or 32-bit register. */
static int gpr(unsigned r)
{
    static const unsigned q[16] = {X86_REG_RAX, X86_REG_RBX, X86_REG_RCX, X86_REG_RDX,
                                   X86_REG_RSI, X86_REG_RDI, X86_REG_RBP, X86_REG_RSP,
                                   X86_REG_R8,  X86_REG_R9,  X86_REG_R10, X86_REG_R11,
                                   X86_REG_R12, X86_REG_R13, X86_REG_R14, X86_REG_R15};
    static const unsigned d[16] = {X86_REG_EAX,  X86_REG_EBX,  X86_REG_ECX,  X86_REG_EDX,
                                   X86_REG_ESI,  X86_REG_EDI,  X86_REG_EBP,  X86_REG_ESP,
                                   X86_REG_R8D,  X86_REG_R9D,  X86_REG_R10D, X86_REG_R11D,
                                   X86_REG_R12D, X86_REG_R13D, X86_REG_R14D, X86_REG_R15D};
    for (int i = 0; i < 16; i++)
        if (q[i] == r || d[i] == r)
            return i;
    return -1;
}

enum { R_RDI = 5 };

/* Appends v to the array unless it is there already.  False when memory
 * ran out. */
#define PUSH_ONCE(arr, n, cap, v)                                                                  \
    ({                                                                                             \
        size_t i_ = 0;                                                                             \
        while (i_ < (n) && (arr)[i_] != (v))                                                       \
            i_++;                                                                                  \
        i_ < (n) || PUSH(arr, n, cap, v);                                                          \
    })

static bool add_callee(cfunc *f, uint32_t c)
{
    return PUSH_ONCE(f->callees, f->ncallees, f->ccallees, c);
}

/* The scan's additions to a function: a failure is noted in the graph's
 * nomem, and fl_ctxgraph_add undoes the module. */
static void add_site(modscan *m, cfunc *f, uint64_t at, uint8_t kind, uint32_t ref)
{
    struct csite s = {at, kind, ref};
    if (!PUSH(f->sites, f->nsites, f->csites, s))
        m->g->nomem = true;
}

static void add_span(modscan *m, cfunc *f, uint32_t fn, uint64_t at)
{
    for (size_t i = 0; i < f->nspans; i++)
        if (f->spans[i].fn == fn) {
            if (at < f->spans[i].lo)
                f->spans[i].lo = at;
            if (at > f->spans[i].hi)
                f->spans[i].hi = at;
            return;
        }
    struct ispan sp = {fn, at, at};
    if (!PUSH(f->spans, f->nspans, f->cspans, sp))
        m->g->nomem = true;
}

/* The index of `name` in f's names called through the PLT/GOT, added if
 * new.  False when memory ran out. */
static bool add_ext(cfunc *f, const char *name, uint32_t *index)
{
    for (size_t i = 0; i < f->next; i++)
        if (!strcmp(f->ext[i], name)) {
            *index = (uint32_t)i;
            return true;
        }
    char *d = strdup(name);
    if (!d || !PUSH(f->ext, f->next, f->cext, d)) {
        free(d);
        return false;
    }
    *index = (uint32_t)(f->next - 1);
    return true;
}

/* A call (or a jump out of the function) to `target`, or through the
 * slot `sym` names. */
static void note_call(modscan *m, cfunc *f, uint64_t target, const char *sym, bool have_rdi,
                      uint64_t rdi)
{
    if (!sym && in_plt(m, target))
        sym = stub_target(m, target);
    if (!sym) { /* the hooks linked into this file (a static libfaultline) */
        long h = func_at(m, target);
        if (h >= 0 && !strncmp(m->g->funcs[h].name, "__cyg_profile_func_", 19))
            sym = m->g->funcs[h].name;
    }
    if (sym) {
        bool enter = !strcmp(sym, "__cyg_profile_func_enter");
        if (enter || !strcmp(sym, "__cyg_profile_func_exit")) {
            if (!have_rdi)
                return;
            long k = func_at(m, rdi);
            if (k < 0)
                return;
            body_note(m, k, true);
            if (&m->g->funcs[k] != f)
                add_span(m, f, (uint32_t)k, m->at);
            if (!enter)
                return;
            if (&m->g->funcs[k] == f)
                f->instrumented = true;
            else {
                m->g->funcs[k].instrumented = true;
                if (!PUSH_ONCE(f->inl, f->ninl, f->cinl, (uint32_t)k))
                    m->g->nomem = true;
            }
            return;
        }
        uint32_t x;
        if (add_ext(f, sym, &x))
            add_site(m, f, m->at, 1, x);
        else
            m->g->nomem = true;
        return;
    }
    long k = func_holding(m, target);
    if (k >= 0) {
        if (!add_callee(f, (uint32_t)k)) /* itself too: recursion */
            m->g->nomem = true;
        add_site(m, f, m->at, 0, (uint32_t)k);
    } else {
        f->calls_out = CB_POINTER; /* somewhere we do not know */
        add_site(m, f, m->at, 2, 0);
    }
}

/* After an instruction that wrote register dst (-1: none): it now holds a
 * function's address (kind 1, which counts as a load of it), a copy of a
 * known value (kind 2), or, when the instruction writes it, nothing known. */
static void track(modscan *m, uint64_t *val, uint32_t *known, int dst, int kind, uint64_t v,
                  bool writes)
{
    if (kind == 1)
        body_note(m, func_at(m, v), false);
    if (dst < 0)
        return;
    if (kind) {
        val[dst] = v;
        *known |= 1u << dst;
    } else if (writes) {
        *known &= ~(1u << dst);
    }
}

/* The end of a body: an address loaded more often than the hooks used it
 * is taken. */
static void body_done(modscan *m)
{
    for (size_t i = 0; i < m->nbody; i++)
        if (m->body[i].loads > m->body[i].hooks)
            m->g->funcs[m->body[i].func].addr_taken = true;
}

static void scan_x86(modscan *m, uint32_t fi)
{
    cfunc *f = &m->g->funcs[fi];
    size_t len = f->size;
    const uint8_t *code = code_at(m, f->addr, &len);
    if (!code)
        return;
    uint64_t a = f->addr;
    uint64_t val[16] = {0}; /* val[r] means something only when known has bit r */
    uint32_t known = 0;
    m->nbody = 0;
    while (len > 0) {
        if (!cs_disasm_iter(m->cs, &code, &len, &a, m->insn)) {
            /* Not an instruction (data in text, or padding): step over a
             * byte, as a linear sweep does. */
            code++;
            len--;
            a++;
            continue;
        }
        f = &m->g->funcs[fi]; /* note_call may not move funcs, but be safe */
        cs_insn *in = m->insn;
        cs_x86 *x = &in->detail->x86;
        cs_x86_op *op = x->operands;
        unsigned id = in->id;
        uint64_t next = in->address + in->size;
        /* Conditional jumps too: GCC jumps to a function's .cold part
         * with one (je f.cold). */
        if (id == X86_INS_CALL || id == X86_INS_JMP ||
            (x->op_count == 1 && op[0].type == X86_OP_IMM &&
             cs_insn_group(m->cs, in, CS_GRP_JUMP))) {
            bool call = id == X86_INS_CALL;
            m->at = in->address;
            if (x->op_count == 1 && op[0].type == X86_OP_IMM) {
                uint64_t t = (uint64_t)op[0].imm;
                /* A jump is a call only to another function's start (a
                 * tail call, or into its .cold part); one into the middle
                 * of a function is a .cold part going back to its parent,
                 * and one inside the function is a branch. */
                if (call || ((t < f->addr || t >= f->addr + f->size) &&
                             (func_at(m, t) >= 0 || in_plt(m, t))))
                    note_call(m, f, t, NULL, (known >> R_RDI) & 1, val[R_RDI]);
            } else if (x->op_count == 1 && op[0].type == X86_OP_MEM &&
                       op[0].mem.base == X86_REG_RIP && op[0].mem.index == X86_REG_INVALID) {
                const slot *s = slot_at(m, next + (uint64_t)op[0].mem.disp);
                if (s && s->sym)
                    note_call(m, f, 0, s->sym, (known >> R_RDI) & 1, val[R_RDI]);
                else if (s)
                    note_call(m, f, s->value, NULL, false, 0);
                else if (call) {
                    f->calls_out = CB_POINTER;
                    add_site(m, f, in->address, 2, 0);
                }
            } else if (call) {
                f->calls_out = CB_POINTER; /* through a pointer */
                add_site(m, f, in->address, 2, 0);
            }
            if (call) /* the caller-saved registers are gone */
                known &= ~((1u << 0) | (1u << 2) | (1u << 3) | (1u << 4) | (1u << 5) | (1u << 8) |
                           (1u << 9) | (1u << 10) | (1u << 11));
            continue;
        }
        /* Track constants loaded into registers: the hooks' argument, and
         * addresses taken. */
        int dst = x->op_count >= 1 && op[0].type == X86_OP_REG ? gpr(op[0].reg) : -1;
        uint64_t v = 0;
        int kind = 0; /* 1: a constant address, 2: a register copy */
        if (id == X86_INS_LEA && x->op_count == 2 && op[1].type == X86_OP_MEM &&
            op[1].mem.base == X86_REG_RIP && op[1].mem.index == X86_REG_INVALID) {
            v = next + (uint64_t)op[1].mem.disp;
            kind = 1;
        } else if ((id == X86_INS_MOV || id == X86_INS_MOVABS) && x->op_count == 2 &&
                   op[1].type == X86_OP_IMM) {
            v = (uint64_t)op[1].imm;
            kind = 1;
        } else if (id == X86_INS_MOV && x->op_count == 2 && op[1].type == X86_OP_REG &&
                   gpr(op[1].reg) >= 0 && dst >= 0) {
            int src = gpr(op[1].reg);
            if ((known >> src) & 1) {
                v = val[src];
                kind = 2;
            }
        } else if (id == X86_INS_MOV && x->op_count == 2 && op[1].type == X86_OP_MEM &&
                   op[1].mem.base == X86_REG_RIP && op[1].mem.index == X86_REG_INVALID) {
            /* mov reg, [rip+GOT]: a function's address from its slot (a
             * preemptible one's, in a library, even for the hooks) */
            const slot *s = slot_at(m, next + (uint64_t)op[1].mem.disp);
            if (s && s->value) {
                v = s->value;
                kind = 1;
            }
        }
        track(m, val, &known, dst, kind, v, x->op_count >= 1 && (op[0].access & CS_AC_WRITE));
    }
    body_done(m);
}

/* The register number (0-30) of an aarch64 X or W register, or -1. */
static int a64_reg(unsigned r)
{
    if (r >= ARM64_REG_X0 && r <= ARM64_REG_X28)
        return (int)(r - ARM64_REG_X0);
    if (r >= ARM64_REG_W0 && r <= ARM64_REG_W30)
        return (int)(r - ARM64_REG_W0);
    return r == ARM64_REG_X29 ? 29 : r == ARM64_REG_X30 ? 30 : -1;
}

/* scan_x86's aarch64 twin: bl, b and the conditional branches out of the
 * function; blr/br through registers; addresses built with adrp + add, or
 * loaded from GOT slots with adrp + ldr, tracked into x0 (the hooks'
 * argument). */
static void scan_a64(modscan *m, uint32_t fi)
{
    cfunc *f = &m->g->funcs[fi];
    size_t len = f->size;
    const uint8_t *code = code_at(m, f->addr, &len);
    if (!code)
        return;
    uint64_t a = f->addr, val[31] = {0}; /* as in scan_x86 */
    uint32_t known = 0;
    m->nbody = 0;
    while (len >= 4) {
        if (!cs_disasm_iter(m->cs, &code, &len, &a, m->insn)) {
            code += 4; /* not an instruction: data in text */
            len -= 4;
            a += 4;
            continue;
        }
        cs_insn *in = m->insn;
        cs_arm64 *y = &in->detail->arm64;
        cs_arm64_op *op = y->operands;
        unsigned id = in->id;
        m->at = in->address;
        bool x0 = known & 1;
        if ((id == ARM64_INS_BL || id == ARM64_INS_B || id == ARM64_INS_CBZ ||
             id == ARM64_INS_CBNZ || id == ARM64_INS_TBZ || id == ARM64_INS_TBNZ) &&
            y->op_count >= 1 && op[y->op_count - 1].type == ARM64_OP_IMM) {
            uint64_t t = (uint64_t)op[y->op_count - 1].imm;
            bool call = id == ARM64_INS_BL;
            /* As on x86: a branch is a call only to another function's
             * start (a tail call, a .cold part) or a PLT stub. */
            if (call ||
                ((t < f->addr || t >= f->addr + f->size) && (func_at(m, t) >= 0 || in_plt(m, t))))
                note_call(m, f, t, NULL, x0, val[0]);
            if (call)
                known &= ~0x7ffffu; /* x0-x18 do not survive a call */
            continue;
        }
        if (id == ARM64_INS_BLR) {
            f->calls_out = CB_POINTER;
            add_site(m, f, in->address, 2, 0);
            known &= ~0x7ffffu;
            continue;
        }
        int dst = y->op_count >= 1 && op[0].type == ARM64_OP_REG ? a64_reg(op[0].reg) : -1;
        uint64_t v = 0;
        int kind = 0; /* 1: an address built or loaded, 2: a copy */
        if (id == ARM64_INS_ADRP && y->op_count == 2 && op[1].type == ARM64_OP_IMM) {
            v = (uint64_t)op[1].imm;
            kind = 2; /* a page: not an address taken yet */
        } else if (id == ARM64_INS_ADD && y->op_count == 3 && op[1].type == ARM64_OP_REG &&
                   op[2].type == ARM64_OP_IMM && a64_reg(op[1].reg) >= 0 &&
                   ((known >> a64_reg(op[1].reg)) & 1) && !op[2].shift.value) {
            v = val[a64_reg(op[1].reg)] + (uint64_t)op[2].imm;
            kind = 1;
        } else if (id == ARM64_INS_LDR && y->op_count == 2 && op[1].type == ARM64_OP_MEM &&
                   a64_reg(op[1].mem.base) >= 0 && ((known >> a64_reg(op[1].mem.base)) & 1) &&
                   op[1].mem.index == ARM64_REG_INVALID) {
            /* ldr xN, [xM, #off] with xM a GOT page: a function's address
             * from its slot */
            const slot *sl =
                slot_at(m, val[a64_reg(op[1].mem.base)] + (uint64_t)(int64_t)op[1].mem.disp);
            if (sl && sl->value) {
                v = sl->value;
                kind = 1;
            }
        } else if (id == ARM64_INS_MOV && y->op_count == 2 && op[1].type == ARM64_OP_REG &&
                   a64_reg(op[1].reg) >= 0 && ((known >> a64_reg(op[1].reg)) & 1)) {
            v = val[a64_reg(op[1].reg)];
            kind = 2;
        }
        track(m, val, &known, dst, kind, v, op[0].access & CS_AC_WRITE);
    }
    body_done(m);
}

static void scan_function(modscan *m, uint32_t fi)
{
    if (m->a64)
        scan_a64(m, fi);
    else
        scan_x86(m, fi);
}

/* Relocations: GOT slots by name, and RELATIVE / symbol words that hold
 * a function's address (taken).  Stops when memory ran out (nomem). */
static void scan_relocs(modscan *m)
{
    Elf_Scn *scn = NULL;
    GElf_Shdr sh;
    while (!m->g->nomem && (scn = elf_nextscn(m->elf, scn))) {
        if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_RELA && sh.sh_type != SHT_REL))
            continue;
        Elf_Scn *symscn = elf_getscn(m->elf, sh.sh_link);
        GElf_Shdr symsh;
        Elf_Data *syms = NULL;
        if (symscn && gelf_getshdr(symscn, &symsh) &&
            (symsh.sh_type == SHT_DYNSYM || symsh.sh_type == SHT_SYMTAB))
            syms = elf_getdata(symscn, NULL);
        Elf_Data *d = elf_getdata(scn, NULL);
        if (!d || !sh.sh_entsize)
            continue;
        size_t n = sh.sh_size / sh.sh_entsize;
        for (size_t i = 0; i < n; i++) {
            GElf_Rela r;
            if (sh.sh_type == SHT_RELA) {
                if (!gelf_getrela(d, (int)i, &r))
                    break;
            } else {
                GElf_Rel rl;
                if (!gelf_getrel(d, (int)i, &rl))
                    break;
                r.r_offset = rl.r_offset;
                r.r_info = rl.r_info;
                r.r_addend = 0;
            }
            unsigned type = GELF_R_TYPE(r.r_info);
            size_t si = GELF_R_SYM(r.r_info);
            slot s = {.addr = r.r_offset};
            if (type == m->r_relative || type == m->r_irelative) {
                s.value = (uint64_t)r.r_addend;
            } else if (type == m->r_jump_slot || type == m->r_glob_dat || type == m->r_abs64) {
                GElf_Sym sym;
                if (!syms || !si || !gelf_getsym(syms, (int)si, &sym))
                    continue;
                const char *name = elf_strptr(m->elf, symsh.sh_link, sym.st_name);
                if (!name || !*name)
                    continue;
                s.sym = name;
                if (sym.st_shndx != SHN_UNDEF)
                    s.value = sym.st_value + (uint64_t)r.r_addend;
            } else {
                continue;
            }
            /* A data word holding a function's address takes it; a GOT
             * slot is only loaded by code, counted where it is. */
            if (type != m->r_jump_slot && s.value && !in_got(m, s.addr)) {
                long k = func_at(m, s.value);
                if (k >= 0)
                    m->g->funcs[k].addr_taken = true;
            }
            if (!PUSH(m->slots, m->nslots, m->cslots, s)) {
                m->g->nomem = true;
                return;
            }
        }
    }
    if (m->nslots)
        qsort(m->slots, m->nslots, sizeof *m->slots, cmp_slot);
}

/* A fixed-address executable's data holds function addresses as plain
 * words (no relocation says so). */
static void scan_data_words(modscan *m)
{
    Elf_Scn *scn = NULL;
    GElf_Shdr sh;
    while ((scn = elf_nextscn(m->elf, scn))) {
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_ALLOC) ||
            (sh.sh_flags & SHF_EXECINSTR))
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        if (!d || !d->d_buf || d->d_size != sh.sh_size)
            continue;
        for (size_t o = (8 - sh.sh_addr % 8) % 8; o + 8 <= d->d_size; o += 8) {
            uint64_t w;
            memcpy(&w, (const uint8_t *)d->d_buf + o, 8);
            long k = w ? func_at(m, w) : -1;
            if (k >= 0)
                m->g->funcs[k].addr_taken = true;
        }
    }
}

static Elf_Scn *section_of_type(Elf *e, Elf64_Word type)
{
    Elf_Scn *scn = NULL;
    GElf_Shdr sh;
    while ((scn = elf_nextscn(e, scn)))
        if (gelf_getshdr(scn, &sh) && sh.sh_type == type && sh.sh_entsize)
            return scn;
    return NULL;
}

/* The defined functions of symbol table `scn` of `e`: added to the graph,
 * or (exports) their global ones' addresses put on the exported list.
 * Stops when memory ran out (nomem). */
static void each_function(modscan *m, Elf *e, Elf_Scn *scn, uint32_t module, bool exports)
{
    GElf_Shdr sh;
    Elf_Data *d = gelf_getshdr(scn, &sh) ? elf_getdata(scn, NULL) : NULL;
    size_t n = d ? sh.sh_size / sh.sh_entsize : 0;
    for (size_t i = 1; i < n; i++) {
        GElf_Sym s;
        if (!gelf_getsym(d, (int)i, &s))
            break;
        int type = GELF_ST_TYPE(s.st_info), bind = GELF_ST_BIND(s.st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s.st_shndx == SHN_UNDEF || !s.st_value ||
            !s.st_size)
            continue;
        if (exports) {
            if (bind != STB_LOCAL && !PUSH(m->exported, m->nexported, m->cexported, s.st_value)) {
                m->g->nomem = true;
                return;
            }
            continue;
        }
        const char *name = elf_strptr(e, sh.sh_link, s.st_name);
        if (!name || !*name)
            continue;
        cfunc f = {
            .addr = s.st_value, .size = s.st_size, .module = module, .global = bind != STB_LOCAL};
        f.name = strdup(name);
        if (!f.name || !PUSH(m->g->funcs, m->g->nfuncs, m->g->cfuncs, f)) {
            free(f.name);
            m->g->nomem = true;
            return;
        }
    }
}

/* The functions: from the symbol table of `syms` (a separate debug file)
 * or of the file itself, else from the file's dynamic symbols; and the
 * ones a shared library exports. */
static void read_symbols(modscan *m, Elf *syms, uint32_t module, bool shared)
{
    Elf_Scn *symtab = syms ? section_of_type(syms, SHT_SYMTAB) : NULL;
    Elf *src = syms;
    if (!symtab) {
        symtab = section_of_type(m->elf, SHT_SYMTAB);
        src = m->elf;
    }
    Elf_Scn *dynsym = section_of_type(m->elf, SHT_DYNSYM);
    if (symtab)
        each_function(m, src, symtab, module, false);
    else if (dynsym)
        each_function(m, m->elf, dynsym, module, false);
    if (shared && dynsym && !m->g->nomem)
        each_function(m, m->elf, dynsym, module, true);
}

/* The dynamic names of a file (cmodule.dyn); *library when it is a
 * shared library, not a program (no interpreter, no DF_1_PIE).  NULL when
 * memory ran out.  A file without a dynamic section needs nothing. */
static char *dyn_names(Elf *elf, const char *name, bool shared, bool *library)
{
    size_t nph;
    GElf_Phdr ph;
    *library = shared;
    if (elf_getphdrnum(elf, &nph) == 0)
        for (size_t i = 0; i < nph; i++)
            if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_INTERP)
                *library = false;
    Elf_Scn *scn = NULL;
    GElf_Shdr sh;
    Elf_Data *d = NULL;
    while ((scn = elf_nextscn(elf, scn)))
        if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_DYNAMIC) {
            d = elf_getdata(scn, NULL);
            break;
        }
    size_t n = d && sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
    const char *own = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
    size_t len = 2;
    GElf_Dyn dyn;
    for (size_t i = 0; i < n; i++) {
        if (!gelf_getdyn(d, (int)i, &dyn))
            continue;
        const char *v = dyn.d_tag == DT_NEEDED || dyn.d_tag == DT_SONAME
                            ? elf_strptr(elf, sh.sh_link, dyn.d_un.d_val)
                            : NULL;
        if (dyn.d_tag == DT_FLAGS_1 && (dyn.d_un.d_val & DF_1_PIE))
            *library = false;
        else if (v && dyn.d_tag == DT_SONAME)
            own = v;
        else if (v)
            len += strlen(v) + 1;
    }
    len += strlen(own);
    char *out = malloc(len), *w = out;
    if (!out)
        return NULL;
    w = stpcpy(w, *library ? own : "") + 1;
    for (size_t i = 0; i < n; i++) {
        const char *v;
        if (gelf_getdyn(d, (int)i, &dyn) && dyn.d_tag == DT_NEEDED &&
            (v = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val)))
            w = stpcpy(w, v) + 1;
    }
    *w = '\0';
    return out;
}

int fl_ctxgraph_add(fl_ctxgraph *g, const char *name, Elf *elf, Elf *syms, char *err, size_t errlen)
{
    GElf_Ehdr eh;
    if (g->nomem) {
        snprintf(err, errlen, "%s: not added: the graph is out of memory", name);
        return -1;
    }
    if (!gelf_getehdr(elf, &eh) || elf_kind(elf) != ELF_K_ELF) {
        snprintf(err, errlen, "%s: not an ELF file", name);
        return -1;
    }
    if ((eh.e_machine != EM_X86_64 && eh.e_machine != EM_AARCH64) ||
        gelf_getclass(elf) != ELFCLASS64) {
        snprintf(err, errlen, "%s: calling contexts are decoded for x86-64 and aarch64 files only",
                 name);
        return -1;
    }
    modscan m = {.g = g, .elf = elf, .first = (uint32_t)g->nfuncs};
    m.a64 = eh.e_machine == EM_AARCH64;
    if (m.a64) {
        m.r_relative = R_AARCH64_RELATIVE;
        m.r_irelative = R_AARCH64_IRELATIVE;
        m.r_jump_slot = R_AARCH64_JUMP_SLOT;
        m.r_glob_dat = R_AARCH64_GLOB_DAT;
        m.r_abs64 = R_AARCH64_ABS64;
    } else {
        m.r_relative = R_X86_64_RELATIVE;
        m.r_irelative = R_X86_64_IRELATIVE;
        m.r_jump_slot = R_X86_64_JUMP_SLOT;
        m.r_glob_dat = R_X86_64_GLOB_DAT;
        m.r_abs64 = R_X86_64_64;
    }
    cs_err ce =
        cs_open(m.a64 ? CS_ARCH_ARM64 : CS_ARCH_X86, m.a64 ? CS_MODE_ARM : CS_MODE_64, &m.cs);
    if (ce != CS_ERR_OK) {
        g->nomem = ce == CS_ERR_MEM;
        if (g->nomem)
            snprintf(err, errlen, "%s: out of memory", name);
        else
            snprintf(err, errlen, "%s: cannot start the disassembler", name);
        return -1;
    }
    cs_option(m.cs, CS_OPT_DETAIL, CS_OPT_ON);
    m.insn = cs_malloc(m.cs);
    uint32_t module = (uint32_t)g->nmods;
    bool shared = eh.e_type == ET_DYN;
    if (!m.insn)
        g->nomem = true;
    else
        read_symbols(&m, syms, module, shared);
    m.count = (uint32_t)(g->nfuncs - m.first);
    if (g->nomem)
        goto fail;
    if (!m.count) {
        snprintf(err, errlen,
                 "%s: no function symbols (give the unstripped file, or its "
                 ".debug file is not enough: the code must be there)",
                 name);
        goto fail;
    }
    qsort(g->funcs + m.first, m.count, sizeof *g->funcs, cmp_func);
    /* Aliases: keep the first name at each address. */
    {
        size_t w = m.first;
        for (size_t r = m.first; r < g->nfuncs; r++) {
            if (w > m.first && g->funcs[w - 1].addr == g->funcs[r].addr) {
                g->funcs[w - 1].exported |= g->funcs[r].exported;
                free(g->funcs[r].name);
                continue;
            }
            g->funcs[w++] = g->funcs[r];
        }
        g->nfuncs = w;
        m.count = (uint32_t)(w - m.first);
    }
    for (size_t i = 0; i < m.nexported; i++) {
        long k = func_at(&m, m.exported[i]);
        if (k >= 0)
            g->funcs[k].exported = true;
    }
    {
        Elf_Scn *scn = NULL;
        GElf_Shdr sh;
        size_t shstr;
        if (elf_getshdrstrndx(elf, &shstr) == 0)
            while ((scn = elf_nextscn(elf, scn)) && m.nplts < 4) {
                const char *sn;
                if (!gelf_getshdr(scn, &sh) || !(sn = elf_strptr(elf, shstr, sh.sh_name)))
                    continue;
                if (!strncmp(sn, ".plt", 4)) {
                    m.plts[m.nplts].lo = sh.sh_addr;
                    m.plts[m.nplts++].hi = sh.sh_addr + sh.sh_size;
                } else if (!strncmp(sn, ".got", 4) && m.ngots < 4) {
                    m.gots[m.ngots].lo = sh.sh_addr;
                    m.gots[m.ngots++].hi = sh.sh_addr + sh.sh_size;
                }
            }
    }
    scan_relocs(&m);
    if (eh.e_type == ET_EXEC)
        scan_data_words(&m);
    for (uint32_t i = 0; i < m.count && !g->nomem; i++)
        scan_function(&m, m.first + i);
    if (g->nomem)
        goto fail;

    const void *bid = NULL;
    ssize_t blen = dwelf_elf_gnu_build_id(elf, &bid);
    uint64_t seed = fl_ctx_seed(blen > 0 ? bid : NULL, blen > 0 ? (size_t)blen : 0);
    for (uint32_t i = 0; i < m.count; i++) {
        cfunc *f = &g->funcs[m.first + i];
        f->id = fl_ctx_id(seed, f->addr);
        if (f->instrumented)
            f->display = fl_sym_demangle(f->name);
    }
    cmodule cm = {.name = strdup(name), .first = m.first, .count = m.count};
    cm.dyn = dyn_names(elf, name, shared, &cm.library);
    size_t cap = g->nmods;
    if (!cm.name || !cm.dyn || !PUSH(g->mods, g->nmods, cap, cm)) {
        free(cm.name);
        free(cm.dyn);
        g->nomem = true;
        goto fail;
    }
    free(m.slots);
    free(m.body);
    free(m.exported);
    cs_free(m.insn, 1);
    cs_close(&m.cs);
    return 0;
fail:
    /* Undone: the graph is left with the modules added before. */
    for (size_t i = m.first; i < g->nfuncs; i++)
        free_func(&g->funcs[i]);
    g->nfuncs = m.first;
    if (g->nomem)
        snprintf(err, errlen, "%s: out of memory", name);
    free(m.slots);
    free(m.body);
    free(m.exported);
    if (m.insn) /* cs_free does not take NULL */
        cs_free(m.insn, 1);
    cs_close(&m.cs);
    return -1;
}

/* ---- linking and the instrumented graph ---- */

/* The global functions by name, for resolving calls between modules. */
typedef struct byname {
    const char *name;
    uint32_t func;
} byname;

static int cmp_byname(const void *a, const void *b)
{
    const byname *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    /* Interposition order: the first module's definition first (funcs
     * are in module order). */
    return c ? c : (x->func > y->func) - (x->func < y->func);
}

static long resolve(const byname *idx, size_t n, const char *name)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(idx[mid].name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && !strcmp(idx[lo].name, name) ? (long)idx[lo].func : -1;
}

struct adj {
    uint32_t *v;
    size_t n, cap;
};

/* Walks what runs as part of node `to`'s code: the functions on `work`
 * (top of them) and, through those that are not instrumented, what they
 * call.  Instrumented callees, and the instrumented functions a walked
 * function enters (inlined there, or a clone's original), become `to`'s
 * successors; `home` is not walked for those (its own inlined ones are
 * placed by their spans).  vis and add are stamped with `stamp`.  False
 * when memory ran out. */
static bool walk_body(fl_ctxgraph *g, const long *node_of, uint32_t to, struct adj *a,
                      uint32_t *work, size_t top, uint32_t home, uint32_t *vis, uint32_t *add,
                      uint32_t stamp)
{
    while (top) {
        uint32_t u = work[--top];
        const cfunc *uf = &g->funcs[u];
        if (uf->calls_out && (!g->node_cb[to] || uf->calls_out < g->node_cb[to]))
            g->node_cb[to] = uf->calls_out;
        for (size_t k = 0; u != home && k < uf->ninl; k++) {
            uint32_t c = uf->inl[k];
            if (add[c] != stamp && !PUSH(a->v, a->n, a->cap, (uint32_t)node_of[c]))
                return false;
            add[c] = stamp;
        }
        for (size_t k = 0; k < uf->ncallees; k++) {
            uint32_t c = uf->callees[k];
            if (g->funcs[c].instrumented) {
                /* `to` itself too: recursion */
                if (add[c] != stamp && !PUSH(a->v, a->n, a->cap, (uint32_t)node_of[c]))
                    return false;
                add[c] = stamp;
            } else if (vis[c] != stamp) {
                vis[c] = stamp;
                work[top++] = c;
            }
        }
    }
    return true;
}

/* The instrumented functions inlined into u (its spans): under each sit
 * what u's code calls between that function's first and last hook call
 * (its inlined body, give or take block order), found through
 * transparent functions, and the functions inlined inside that span; its
 * out-of-line copy gives its other edges.  False when memory ran out. */
static bool inline_edges(fl_ctxgraph *g, uint32_t u, const long *node_of, struct adj *adj,
                         uint32_t *vis, uint32_t *add, uint32_t *walk, uint32_t *work)
{
    const cfunc *f = &g->funcs[u];
    for (size_t q = 0; q < f->nspans; q++) {
        const struct ispan *sp = &f->spans[q];
        if (node_of[sp->fn] < 0)
            continue;
        uint32_t in = (uint32_t)node_of[sp->fn];
        uint32_t w = ++*walk;
        size_t top = 0;
        for (size_t j = 0; j < f->nsites; j++) {
            const struct csite *cs = &f->sites[j];
            if (cs->at < sp->lo || cs->at > sp->hi)
                continue;
            long c = cs->kind == 0   ? (long)cs->ref
                     : cs->kind == 1 ? f->ext_to[cs->ref]
                                     : -CB_POINTER;
            uint8_t why = c < 0 ? (uint8_t)-c : 0;
            if (why && (!g->node_cb[in] || why < g->node_cb[in]))
                g->node_cb[in] = why;
            if (c < 0)
                continue;
            if (g->funcs[c].instrumented) {
                if (add[c] != w && !PUSH(adj[in].v, adj[in].n, adj[in].cap, (uint32_t)node_of[c]))
                    return false;
                add[c] = w;
            } else if (vis[c] != w) {
                vis[c] = w;
                work[top++] = (uint32_t)c;
            }
        }
        if (!walk_body(g, node_of, in, &adj[in], work, top, UINT32_MAX, vis, add, w))
            return false;
        for (size_t j = 0; j < f->nspans; j++) /* inlined inside this one */
            if (j != q && f->spans[j].lo > sp->lo && f->spans[j].hi < sp->hi &&
                node_of[f->spans[j].fn] >= 0 &&
                !PUSH(adj[in].v, adj[in].n, adj[in].cap, (uint32_t)node_of[f->spans[j].fn]))
                return false;
    }
    return true;
}

/* Whether the NUL-separated list (ended by an empty name) holds name. */
static bool in_names(const char *list, const char *name)
{
    for (; *list; list += strlen(list) + 1)
        if (!strcmp(list, name))
            return true;
    return false;
}

/* A plugin: a library that no file given needs was opened at run time
 * (dlopen), and when a file given calls dlsym, the plugin's exported
 * functions are called through the pointers dlsym returns -- though no
 * code takes their addresses, so without this they are callbacks of no
 * one and no stack through them is found.  Only such libraries: counting
 * every library's exports as pointer targets made every search through a
 * pointer wide enough to exhaust small budgets. */
static void mark_opened_exports(fl_ctxgraph *g)
{
    for (size_t i = 0; i < g->nmods; i++) {
        const cmodule *m = &g->mods[i];
        bool needed = !m->library;
        for (size_t j = 0; j < g->nmods && !needed; j++) {
            const char *d = g->mods[j].dyn;
            needed = j != i && in_names(d + strlen(d) + 1, m->dyn);
        }
        for (uint32_t k = 0; !needed && k < m->count; k++)
            if (g->funcs[m->first + k].exported)
                g->funcs[m->first + k].addr_taken = true;
    }
}

int fl_ctxgraph_link(fl_ctxgraph *g)
{
    if (g->nomem)
        return -1;
    /* Everything below that a failure must free, declared before the
     * first goto.  adj and wadj have nadj entries (the nodes). */
    size_t n = g->nfuncs, nidx = 0, nadj = 0;
    bool dlsym_called = false;
    long *node_of = NULL;
    uint32_t *vis = NULL, *add = NULL, *work = NULL, *indeg = NULL;
    struct adj *adj = NULL, *wadj = NULL, body = {0};
    int rc = 0;
    byname *idx = malloc((n ? n : 1) * sizeof *idx);
    if (!idx)
        goto nomem;
    for (size_t i = 0; i < n; i++)
        if (g->funcs[i].global)
            idx[nidx++] = (byname){g->funcs[i].name, (uint32_t)i};
    qsort(idx, nidx, sizeof *idx, cmp_byname);
    for (size_t i = 0; i < n; i++) {
        cfunc *f = &g->funcs[i];
        if (f->next && !(f->ext_to = malloc(f->next * sizeof *f->ext_to)))
            goto nomem;
        for (size_t k = 0; k < f->next; k++) {
            long t = resolve(idx, nidx, f->ext[k]);
            dlsym_called |= !strcmp(f->ext[k], "dlsym") || !strcmp(f->ext[k], "dlvsym");
            if (t < 0)
                t = takes_callbacks(f->ext[k]) ? -CB_POINTER : -CB_EXTERNAL;
            f->ext_to[k] = t;
            if (t >= 0) {
                if (!add_callee(f, (uint32_t)t))
                    goto nomem;
            } else if (!f->calls_out || f->calls_out > -t) {
                f->calls_out = (uint8_t)-t;
            }
        }
    }
    free(idx);
    idx = NULL;
    if (dlsym_called)
        mark_opened_exports(g);
    node_of = malloc((n ? n : 1) * sizeof *node_of);
    /* Per walk, whether a function was walked through (vis) or added as a
     * successor (add): stamped with the walk's number, so that no walk
     * clears an array as long as the program. */
    vis = calloc(n ? n : 1, sizeof *vis);
    add = calloc(n ? n : 1, sizeof *add);
    uint32_t walk = 0;
    work = malloc((n ? n : 1) * sizeof *work);
    if (!node_of || !vis || !add || !work)
        goto nomem;
    size_t cnodes = 0, csucc = 0, croots = 0, ccb = 0;
    for (size_t i = 0; i < n; i++) {
        node_of[i] = -1;
        if (g->funcs[i].instrumented) {
            node_of[i] = (long)g->nnodes;
            if (!PUSH(g->nodes, g->nnodes, cnodes, (uint32_t)i))
                goto nomem;
        }
    }
    /* Successor lists per node, flattened below. */
    nadj = g->nnodes;
    adj = calloc(nadj ? nadj : 1, sizeof *adj);
    g->succ_off = malloc((g->nnodes + 1) * sizeof *g->succ_off);
    g->node_cb = calloc(g->nnodes ? g->nnodes : 1, sizeof *g->node_cb);
    indeg = calloc(g->nnodes ? g->nnodes : 1, sizeof *indeg);
    if (!adj || !g->succ_off || !g->node_cb || !indeg)
        goto nomem;
    for (size_t ni = 0; ni < g->nnodes; ni++) {
        uint32_t fi = g->nodes[ni];
        /* Through transparent functions from fi's body. */
        walk++;
        work[0] = fi;
        vis[fi] = walk;
        if (!walk_body(g, node_of, (uint32_t)ni, &adj[ni], work, 1, fi, vis, add, walk))
            goto nomem;
    }
    /* Weak edges: an instrumented function inlined into a body may have
     * made any of that body's calls, and may sit under another function
     * inlined there -- the spans below place most calls, but blocks can
     * be moved out of a span.  Kept as edges that cost more, so that the
     * search tries them late instead of never. */
    wadj = calloc(nadj ? nadj : 1, sizeof *wadj);
    if (!wadj)
        goto nomem;
    for (size_t u = 0; u < n; u++) {
        const cfunc *uf = &g->funcs[u];
        if (!uf->ninl)
            continue;
        if (uf->instrumented) {
            const struct adj *a = &adj[node_of[u]];
            for (size_t j = 0; j < a->n; j++)
                if (!PUSH(body.v, body.n, body.cap, a->v[j]))
                    goto nomem;
        } else { /* a clone: its calls, through transparent functions */
            walk++;
            size_t top = 0;
            work[top++] = (uint32_t)u;
            vis[u] = walk;
            while (top) {
                const cfunc *wf = &g->funcs[work[--top]];
                for (size_t k = 0; k < wf->ncallees; k++) {
                    uint32_t c = wf->callees[k];
                    if (g->funcs[c].instrumented) {
                        if (!PUSH(body.v, body.n, body.cap, (uint32_t)node_of[c]))
                            goto nomem;
                    } else if (vis[c] != walk) {
                        vis[c] = walk;
                        work[top++] = c;
                    }
                }
            }
        }
        for (size_t k = 0; k < uf->ninl; k++) {
            struct adj *wa = &wadj[node_of[uf->inl[k]]];
            for (size_t j = 0; j < body.n; j++)
                if (!PUSH(wa->v, wa->n, wa->cap, body.v[j]))
                    goto nomem;
            for (size_t j = 0; j < uf->ninl; j++)
                if (j != k && !PUSH(wa->v, wa->n, wa->cap, (uint32_t)node_of[uf->inl[j]]))
                    goto nomem;
        }
        free(body.v);
        body = (struct adj){0};
    }
    /* Inlined instrumented functions, in instrumented bodies or not (a
     * clone f.part.0 enters f: f spans all of it). */
    for (size_t ni = 0; ni < g->nnodes; ni++) {
        const cfunc *f = &g->funcs[g->nodes[ni]];
        for (size_t k = 0; k < f->ninl; k++)
            if (!PUSH(adj[ni].v, adj[ni].n, adj[ni].cap, (uint32_t)node_of[f->inl[k]]))
                goto nomem;
    }
    for (size_t u = 0; u < n; u++)
        if (g->funcs[u].nspans &&
            !inline_edges(g, (uint32_t)u, node_of, adj, vis, add, &walk, work))
            goto nomem;
    size_t nsucc = 0, nweak = 0, cweak = 0;
    g->weak_off = malloc((g->nnodes + 1) * sizeof *g->weak_off);
    if (!g->weak_off)
        goto nomem;
    for (size_t ni = 0; ni < g->nnodes; ni++) {
        g->succ_off[ni] = (uint32_t)nsucc;
        walk++;
        for (size_t k = 0; k < adj[ni].n; k++) {
            uint32_t c = adj[ni].v[k];
            if (add[c] != walk && !PUSH(g->succ, nsucc, csucc, c))
                goto nomem;
            add[c] = walk;
        }
        g->weak_off[ni] = (uint32_t)nweak;
        for (size_t k = 0; k < wadj[ni].n; k++) {
            uint32_t c = wadj[ni].v[k];
            if (add[c] != walk && !PUSH(g->weak, nweak, cweak, c))
                goto nomem;
            add[c] = walk;
        }
        free(adj[ni].v);
        free(wadj[ni].v);
        adj[ni].v = wadj[ni].v = NULL;
    }
    g->succ_off[g->nnodes] = (uint32_t)nsucc;
    g->weak_off[g->nnodes] = (uint32_t)nweak;
    for (size_t ni = 0; ni < g->nnodes; ni++)
        for (uint32_t k = g->succ_off[ni]; k < g->succ_off[ni + 1]; k++)
            indeg[g->succ[k]]++;
    for (size_t ni = 0; ni < g->nnodes; ni++) {
        const cfunc *f = &g->funcs[g->nodes[ni]];
        /* main's address is taken (by _start), but nothing calls it back. */
        if (f->addr_taken && strcmp(f->name, "main") &&
            !PUSH(g->callbacks, g->ncallbacks, ccb, (uint32_t)ni))
            goto nomem;
        if ((!strcmp(f->name, "main") || f->addr_taken || f->exported || !indeg[ni]) &&
            !PUSH(g->roots, g->nroots, croots, (uint32_t)ni))
            goto nomem;
    }
    goto out;
nomem:
    /* Stopped at the first failure: what was built refers to arrays left
     * half filled.  The graph keeps no nodes (searches find nothing) and
     * refuses more adds; the functions' own arrays stay, for free. */
    rc = -1;
    g->nomem = true;
    free_nodes(g);
out:
    for (size_t i = 0; adj && i < nadj; i++)
        free(adj[i].v);
    for (size_t i = 0; wadj && i < nadj; i++)
        free(wadj[i].v);
    free(adj);
    free(wadj);
    free(body.v);
    free(idx);
    free(indeg);
    free(node_of);
    free(vis);
    free(add);
    free(work);
    return rc;
}

int fl_ctxgraph_nomem(const fl_ctxgraph *g)
{
    return g->nomem;
}

size_t fl_ctxgraph_instrumented(const fl_ctxgraph *g)
{
    return g->nnodes;
}

/* ---- search ---- */

/* The search ranks a path by its weight: 1 per function, and more for
 * each step that is only a guess -- a callback through a pointer or a
 * known callback-taking function (W_POINTER), or through any other call
 * out of the files (W_EXTERNAL).  Stacks are mostly direct calls with a
 * callback or two, so the lightest paths are the likely ones; and the
 * graph's fan-out lives in the guessed edges (any callback-calling
 * function to every address-taken one), which the weights keep for last. */
enum { W_POINTER = 4, W_EXTERNAL = 8, W_INLINE = 8 };

static unsigned cb_weight(uint8_t why)
{
    return why == CB_POINTER ? W_POINTER : W_EXTERNAL;
}

/* Successor i of node -- its direct successors, then its weak ones, then
 * every callback when it may call back -- into *c, with the weight the
 * step adds into *w.  Returns 0 past the last, -1 for a callback that is
 * also one of node's successors (tried as that already), else 1. */
static int succ_at(const fl_ctxgraph *g, uint32_t node, uint32_t i, uint32_t *c, uint32_t *w)
{
    uint32_t ndirect = g->succ_off[node + 1] - g->succ_off[node];
    uint32_t nweak = ndirect + g->weak_off[node + 1] - g->weak_off[node];
    uint8_t why = g->node_cb[node];
    if (i < ndirect) {
        *c = g->succ[g->succ_off[node] + i];
        *w = 1;
        return 1;
    }
    if (i < nweak) {
        *c = g->weak[g->weak_off[node] + i - ndirect];
        *w = W_INLINE;
        return 1;
    }
    if (!why || i - nweak >= g->ncallbacks)
        return 0;
    *c = g->callbacks[i - nweak];
    *w = cb_weight(why);
    for (uint32_t k = g->succ_off[node]; k < g->succ_off[node + 1]; k++)
        if (g->succ[k] == *c)
            return -1;
    for (uint32_t k = g->weak_off[node]; k < g->weak_off[node + 1]; k++)
        if (g->weak[k] == *c)
            return -1;
    return 1;
}

/* Whoever runs the search asked it to stop (fl_ctxsearch.cancel). */
static bool cancelled(const fl_ctxsearch *s)
{
    return s->cancel && __atomic_load_n(s->cancel, __ATOMIC_RELAXED);
}

/* Counts a step: true when the budget is spent or, every 4096 steps, the
 * search was asked to stop. */
static inline bool spent(fl_ctxsearch *s)
{
    ++s->steps;
    return (s->budget && s->steps > s->budget) || ((s->steps & 4095) == 0 && cancelled(s));
}

struct level {
    uint32_t node;
    uint32_t next;   /* the successor to try next: direct ones, then callbacks */
    uint32_t weight; /* of the path up to and with this node */
    uint64_t ctx;
};

/* One depth-first pass over the paths of weight up to `limit`, comparing
 * those of weight exactly `limit` (lighter ones were compared in earlier
 * passes).  Returns -1 when the budget ran out or `fn` asked to stop, else
 * whether the limit (not the depth) cut some path short. */
static int search_weight(const fl_ctxgraph *g, uint64_t value, unsigned limit, unsigned maxd,
                         fl_ctxsearch *s, fl_ctx_match_fn fn, void *arg, struct level *st,
                         fl_ctxframe *frames)
{
    int heavier = 0;
    for (size_t ri = 0; ri < g->nroots; ri++) {
        size_t d = 0;
        st[0].node = g->roots[ri];
        st[0].ctx = fl_ctx_push(0, g->funcs[g->nodes[st[0].node]].id);
        st[0].next = 0;
        st[0].weight = 1;
        for (;;) {
            struct level *L = &st[d];
            if (L->next == 0) { /* just entered */
                if (spent(s))
                    return -1;
                if (L->weight == limit && L->ctx == value) {
                    for (size_t k = 0; k <= d; k++) {
                        const cfunc *f = &g->funcs[g->nodes[st[d - k].node]];
                        frames[k].function = f->display ? f->display : f->name;
                        frames[k].module = g->mods[f->module].name;
                        frames[k].address = f->addr;
                    }
                    s->matches++;
                    if (fn)
                        fn(frames, d + 1, arg);
                    return -1; /* a second stack is as likely as a guess */
                }
            }
            uint32_t c, w;
            int r = d + 1 < maxd ? succ_at(g, L->node, L->next, &c, &w) : 0;
            if (!r && d + 1 >= maxd && succ_at(g, L->node, 0, &c, &w))
                s->depth_cut = 1;
            if (!r) {
                if (d == 0)
                    break;
                d--;
                continue;
            }
            L->next++;
            if (r < 0)
                continue;
            w += L->weight;
            if (w > limit) {
                heavier = 1;
                continue;
            }
            st[d + 1].node = c;
            st[d + 1].ctx = fl_ctx_push(L->ctx, g->funcs[g->nodes[c]].id);
            st[d + 1].next = 0;
            st[d + 1].weight = w;
            d++;
        }
    }
    return heavier;
}

/* ---- meet in the middle ----
 *
 * A push is undone exactly by a pop, so a value can be unfolded from the
 * top: guess the innermost function t, and pop(value, id(t)) is the value
 * of the stack below it; guess t's caller, and so on.  The search stores
 * the values of every path from the entry points up to some weight
 * (forward), then unfolds the value from every function through its
 * callers (backward) and looks each intermediate value up among the
 * stored ones: a stack as heavy as both halves together is found for
 * about the cost of each half, where deepening alone pays their product.
 * Used when deepening alone ran out of its share of the budget. */

typedef struct mitm {
    const fl_ctxgraph *g;
    unsigned maxd;
    /* forward paths: value, last node, parent entry (-1: a root), depth */
    uint64_t *fctx;
    uint32_t *fnode;
    int32_t *fparent;
    uint16_t *fdepth;
    size_t nf, capf;
    uint32_t *hash; /* value -> forward entry + 1; 0: empty */
    size_t hmask;
    /* predecessors: strong and weak edges reversed (with their extra
     * weight); callbacks' callers are the nodes that may call back */
    uint32_t *pred_off, *pred;
    uint8_t *pred_w;
    uint32_t *cbsrc;
    size_t ncbsrc;
    uint8_t *is_cb, *is_root;
    uint64_t *pairs; /* (a << 32 | b) of every strong and weak edge, sorted */
    size_t npairs;
    bool nomem; /* memory ran out: the search stops (fl_ctxsearch.nomem) */
} mitm;

static bool has_edge(const mitm *mm, uint32_t a, uint32_t b)
{
    if (mm->is_cb[b] && mm->g->node_cb[a])
        return true;
    uint64_t key = (uint64_t)a << 32 | b;
    size_t lo = 0, hi = mm->npairs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (mm->pairs[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < mm->npairs && mm->pairs[lo] == key;
}

static int cmp_u64p(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* False when memory ran out (then mitm_free what it made). */
static bool mitm_init(mitm *mm, const fl_ctxgraph *g, unsigned maxd)
{
    memset(mm, 0, sizeof *mm);
    mm->g = g;
    mm->maxd = maxd;
    size_t n = g->nnodes, ne = 0;
    mm->is_cb = calloc(n, 1);
    mm->is_root = calloc(n, 1);
    mm->pred_off = calloc(n + 1, sizeof *mm->pred_off);
    size_t nedges = g->succ_off[n] + g->weak_off[n];
    mm->pred = malloc((nedges ? nedges : 1) * sizeof *mm->pred);
    mm->pred_w = malloc(nedges ? nedges : 1);
    mm->pairs = malloc((nedges ? nedges : 1) * sizeof *mm->pairs);
    mm->cbsrc = malloc(n * sizeof *mm->cbsrc);
    if (!mm->is_cb || !mm->is_root || !mm->pred_off || !mm->pred || !mm->pred_w || !mm->pairs ||
        !mm->cbsrc)
        return false;
    for (size_t i = 0; i < g->ncallbacks; i++)
        mm->is_cb[g->callbacks[i]] = 1;
    for (size_t i = 0; i < g->nroots; i++)
        mm->is_root[g->roots[i]] = 1;
    for (size_t a = 0; a < n; a++) {
        if (g->node_cb[a])
            mm->cbsrc[mm->ncbsrc++] = (uint32_t)a;
        for (uint32_t k = g->succ_off[a]; k < g->succ_off[a + 1]; k++)
            mm->pairs[ne++] = (uint64_t)a << 32 | g->succ[k];
        for (uint32_t k = g->weak_off[a]; k < g->weak_off[a + 1]; k++)
            mm->pairs[ne++] = (uint64_t)a << 32 | g->weak[k];
    }
    mm->npairs = ne;
    if (ne)
        qsort(mm->pairs, ne, sizeof *mm->pairs, cmp_u64p);
    /* Reverse CSR: count, offset, fill. */
    for (size_t i = 0; i < ne; i++)
        mm->pred_off[(uint32_t)mm->pairs[i] + 1]++;
    for (size_t b = 0; b < n; b++)
        mm->pred_off[b + 1] += mm->pred_off[b];
    uint32_t *fill = malloc((n ? n : 1) * sizeof *fill);
    if (!fill)
        return false;
    memcpy(fill, mm->pred_off, n * sizeof *fill);
    for (size_t a = 0; a < n; a++) {
        for (uint32_t k = g->succ_off[a]; k < g->succ_off[a + 1]; k++) {
            uint32_t b = g->succ[k];
            mm->pred_w[fill[b]] = 1;
            mm->pred[fill[b]++] = (uint32_t)a;
        }
        for (uint32_t k = g->weak_off[a]; k < g->weak_off[a + 1]; k++) {
            uint32_t b = g->weak[k];
            mm->pred_w[fill[b]] = W_INLINE;
            mm->pred[fill[b]++] = (uint32_t)a;
        }
    }
    free(fill);
    return true;
}

static void mitm_free(mitm *mm)
{
    free(mm->fctx);
    free(mm->fnode);
    free(mm->fparent);
    free(mm->fdepth);
    free(mm->hash);
    free(mm->pred_off);
    free(mm->pred);
    free(mm->pred_w);
    free(mm->cbsrc);
    free(mm->is_cb);
    free(mm->is_root);
    free(mm->pairs);
}

/* False when memory ran out. */
static bool fwd_add(mitm *mm, uint64_t ctx, uint32_t node, int32_t parent, unsigned depth)
{
    if (mm->nf == mm->capf) {
        size_t nc = mm->capf ? 2 * mm->capf : 4096;
        uint64_t *a = realloc(mm->fctx, nc * sizeof *a);
        if (a)
            mm->fctx = a;
        uint32_t *b = realloc(mm->fnode, nc * sizeof *b);
        if (b)
            mm->fnode = b;
        int32_t *c = realloc(mm->fparent, nc * sizeof *c);
        if (c)
            mm->fparent = c;
        uint16_t *d = realloc(mm->fdepth, nc * sizeof *d);
        if (d)
            mm->fdepth = d;
        if (!a || !b || !c || !d) /* the ones that grew are kept, as large as capf at least */
            return false;
        mm->capf = nc;
    }
    mm->fctx[mm->nf] = ctx;
    mm->fnode[mm->nf] = node;
    mm->fparent[mm->nf] = parent;
    mm->fdepth[mm->nf] = (uint16_t)depth;
    mm->nf++;
    return true;
}

/* Every path from an entry point of weight up to `limit` into the forward
 * table.  Returns 0, or -1 when more than `cap` paths weigh that little or
 * memory ran out (mm->nomem). */
static int fwd_build(mitm *mm, unsigned limit, size_t cap)
{
    const fl_ctxgraph *g = mm->g;
    struct fstate {
        int32_t entry;
        uint32_t next, weight;
    } *st = malloc((size_t)mm->maxd * sizeof *st);
    if (!st) {
        mm->nomem = true;
        return -1;
    }
    mm->nf = 0;
    int rc = 0;
    for (size_t ri = 0; ri < g->nroots && !rc; ri++) {
        uint32_t root = g->roots[ri];
        if (!fwd_add(mm, fl_ctx_push(0, g->funcs[g->nodes[root]].id), root, -1, 1)) {
            mm->nomem = true;
            rc = -1;
            break;
        }
        size_t d = 0;
        st[0] = (struct fstate){(int32_t)(mm->nf - 1), 0, 1};
        for (;;) {
            struct fstate *L = &st[d];
            uint32_t c, w;
            int r = d + 1 < mm->maxd ? succ_at(g, mm->fnode[L->entry], L->next, &c, &w) : 0;
            if (!r) {
                if (d == 0)
                    break;
                d--;
                continue;
            }
            L->next++;
            w += L->weight;
            if (r < 0)
                continue;
            if (w > limit)
                continue;
            if (mm->nf >= cap) {
                rc = -1;
                break;
            }
            if (!fwd_add(mm, fl_ctx_push(mm->fctx[L->entry], g->funcs[g->nodes[c]].id), c, L->entry,
                         d + 2)) {
                mm->nomem = true;
                rc = -1;
                break;
            }
            st[++d] = (struct fstate){(int32_t)(mm->nf - 1), 0, w};
        }
    }
    free(st);
    if (rc)
        return -1;
    size_t hs = 1;
    while (hs < 2 * mm->nf)
        hs <<= 1;
    free(mm->hash);
    mm->hash = calloc(hs, sizeof *mm->hash);
    if (!mm->hash) {
        mm->nomem = true;
        return -1;
    }
    mm->hmask = hs - 1;
    for (size_t e = 0; e < mm->nf; e++) {
        size_t h = (size_t)(mm->fctx[e] ^ mm->fctx[e] >> 29) & mm->hmask;
        while (mm->hash[h] && mm->fctx[mm->hash[h] - 1] != mm->fctx[e])
            h = (h + 1) & mm->hmask;
        if (!mm->hash[h])
            mm->hash[h] = (uint32_t)e + 1;
    }
    return 0;
}

static long fwd_find(const mitm *mm, uint64_t ctx)
{
    size_t h = (size_t)(ctx ^ ctx >> 29) & mm->hmask;
    while (mm->hash[h]) {
        if (mm->fctx[mm->hash[h] - 1] == ctx)
            return (long)mm->hash[h] - 1;
        h = (h + 1) & mm->hmask;
    }
    return -1;
}

struct bstate {
    uint32_t node;
    uint32_t next; /* predecessor to try next: edges, then callers of a callback */
    uint32_t weight;
    uint64_t below; /* the value of the stack under node */
};

/* Reports the stack st[0..nb) (innermost first) on top of forward entry
 * e (-1: none, st[nb-1] is an entry point). */
static int bwd_report(const mitm *mm, const struct bstate *st, size_t nb, long e,
                      fl_ctxframe *frames, fl_ctxsearch *s, fl_ctx_match_fn fn, void *arg)
{
    const fl_ctxgraph *g = mm->g;
    size_t k = 0;
    for (size_t i = 0; i < nb; i++, k++) {
        const cfunc *f = &g->funcs[g->nodes[st[i].node]];
        frames[k] =
            (fl_ctxframe){f->display ? f->display : f->name, g->mods[f->module].name, f->addr};
    }
    for (; e >= 0; e = mm->fparent[e], k++) {
        const cfunc *f = &g->funcs[g->nodes[mm->fnode[e]]];
        frames[k] =
            (fl_ctxframe){f->display ? f->display : f->name, g->mods[f->module].name, f->addr};
    }
    s->matches++;
    return fn ? fn(frames, k, arg) : 0;
}

/* Unfolds `value` backwards from every function through callers, up to
 * weight `limit`, looking each value up in the forward table.  Returns
 * -1 (budget, or fn said stop), 1 when the limit cut some path, else 0. */
static int bwd_search(const mitm *mm, uint64_t value, unsigned limit, fl_ctxsearch *s,
                      fl_ctx_match_fn fn, void *arg, struct bstate *st, fl_ctxframe *frames)
{
    const fl_ctxgraph *g = mm->g;
    int heavier = 0;
    for (uint32_t t = 0; t < g->nnodes; t++) {
        size_t d = 0;
        st[0] = (struct bstate){t, 0, 1, fl_ctx_pop(value, g->funcs[g->nodes[t]].id)};
        for (;;) {
            struct bstate *L = &st[d];
            if (L->next == 0) { /* just entered */
                if (spent(s))
                    return -1;
                if (L->below == 0 && mm->is_root[L->node])
                    return bwd_report(mm, st, d + 1, -1, frames, s, fn, arg) ? -1 : 0;
                long e = fwd_find(mm, L->below);
                if (e >= 0 && mm->fdepth[e] + d + 1 <= mm->maxd &&
                    has_edge(mm, mm->fnode[e], L->node))
                    return bwd_report(mm, st, d + 1, e, frames, s, fn, arg) ? -1 : 0;
            }
            uint32_t b = L->node;
            uint32_t nedge = mm->pred_off[b + 1] - mm->pred_off[b];
            uint32_t total = nedge + (mm->is_cb[b] ? (uint32_t)mm->ncbsrc : 0);
            if (L->next >= total || d + 1 >= mm->maxd) {
                if (d == 0)
                    break;
                d--;
                continue;
            }
            uint32_t i = L->next++, p, w = L->weight;
            if (i < nedge) {
                p = mm->pred[mm->pred_off[b] + i];
                w += mm->pred_w[mm->pred_off[b] + i];
            } else {
                p = mm->cbsrc[i - nedge];
                w += cb_weight(g->node_cb[p]);
            }
            if (w > limit) {
                heavier = 1;
                continue;
            }
            st[d + 1] = (struct bstate){p, 0, w, fl_ctx_pop(L->below, g->funcs[g->nodes[p]].id)};
            d++;
        }
    }
    return heavier;
}

/* The forward table as large as `cap` allows, then backward deepening.
 * Returns -1 when the budget ran out, else 0 (a match, every path up to
 * the depth tried, or memory ran out: s->nomem). */
static int search_mitm(const fl_ctxgraph *g, uint64_t value, unsigned maxd, fl_ctxsearch *s,
                       fl_ctx_match_fn fn, void *arg, fl_ctxframe *frames)
{
    /* ~40 MB of forward paths at most, and half of what the budget has
     * left (the passes that find the limit cost about as much again). */
    size_t cap = 1u << 21;
    if (s->budget && (s->budget - s->steps) / 4 < cap)
        cap = (size_t)((s->budget - s->steps) / 4);
    mitm mm;
    int rc = 0;
    if (!mitm_init(&mm, g, maxd))
        goto nomem;
    /* The heaviest forward limit whose paths fit: built up one by one
     * (each pass costs at most cap), the last one that fit rebuilt. */
    unsigned fw = 0;
    bool current = false;
    /* Each pass may cost cap; leave room for the rebuild. */
    while (fw < W_EXTERNAL * maxd && (!s->budget || s->steps + 2 * cap <= s->budget) &&
           !cancelled(s)) {
        current = fwd_build(&mm, fw + 1, cap) == 0;
        s->steps += mm.nf;
        if (mm.nomem)
            goto nomem;
        if (!current)
            break;
        fw++;
        if (mm.nf >= cap / 2)
            break;
    }
    if (!current && fw > 0 && fwd_build(&mm, fw, cap) == 0) {
        s->steps += mm.nf;
        current = true;
    }
    if (mm.nomem)
        goto nomem;
    if (!current) {
        mm.nf = 0; /* not even the entry points fit: an empty table */
        free(mm.hash);
        mm.hash = calloc(1, sizeof *mm.hash);
        if (!mm.hash)
            goto nomem;
        mm.hmask = 0;
    }
    long e = fwd_find(&mm, value);
    if (e >= 0) { /* a stack wholly in the table */
        bwd_report(&mm, NULL, 0, e, frames, s, fn, arg);
    } else {
        struct bstate *st = malloc((size_t)maxd * sizeof *st);
        if (!st)
            goto nomem;
        for (unsigned limit = 1; !s->matches; limit++) {
            int r = bwd_search(&mm, value, limit, s, fn, arg, st, frames);
            if (r < 0)
                rc = s->budget && s->steps > s->budget ? -1 : 0;
            if (r <= 0)
                break;
        }
        free(st);
    }
    mitm_free(&mm);
    return rc;
nomem: /* before any match: none is reported after an allocation */
    s->nomem = 1;
    mitm_free(&mm);
    return 0;
}

/* Iterative deepening on the weight: every path of weight 1, then 2, and
 * so on.  The lightest stacks come first, and the work is about that of
 * the last pass.  Stops at the first match: a second stack with the same
 * value is as likely as guessing a 64-bit number.  When a quarter of the
 * budget found nothing, the meet-in-the-middle search gets the rest. */
unsigned fl_ctxgraph_search(const fl_ctxgraph *g, uint64_t value, fl_ctxsearch *s,
                            fl_ctx_match_fn fn, void *arg)
{
    unsigned maxd = s->max_depth ? s->max_depth : 64;
    s->steps = 0;
    s->matches = 0;
    s->complete = 1;
    s->depth_cut = 0;
    s->nomem = 0;
    if (g->nomem) { /* an add or link failed: the graph has nothing */
        s->nomem = 1;
        s->complete = 0;
        return 0;
    }
    if (!g->nnodes)
        return 0;
    struct level *st = malloc((size_t)maxd * sizeof *st);
    fl_ctxframe *frames = malloc((size_t)maxd * sizeof *frames);
    if (!st || !frames) {
        free(st);
        free(frames);
        s->nomem = 1;
        s->complete = 0;
        return 0;
    }
    uint64_t budget = s->budget;
    if (budget && s->strategy == FL_CTX_AUTO)
        s->budget = budget / 4 ? budget / 4 : 1;
    bool out_of_budget = s->strategy == FL_CTX_MITM;
    for (unsigned limit = 1; !s->matches && s->strategy != FL_CTX_MITM; limit++) {
        int r = search_weight(g, value, limit, maxd, s, fn, arg, st, frames);
        if (r < 0) {
            out_of_budget = s->budget && s->steps > s->budget;
            break;
        }
        if (!r)
            break; /* nothing heavier: every path up to maxd was tried */
    }
    s->budget = budget;
    bool exhausted = out_of_budget;
    if (out_of_budget && !s->matches && s->strategy != FL_CTX_DEEPENING) {
        if (s->strategy == FL_CTX_AUTO)
            s->steps = budget / 4;
        exhausted = search_mitm(g, value, maxd, s, fn, arg, frames) < 0;
    }
    s->complete = !exhausted && !s->nomem && !cancelled(s);
    free(st);
    free(frames);
    return s->matches;
}

/* Whether e is the C library: its DT_SONAME is libc.so.*. */
static bool is_libc(Elf *e)
{
    Elf_Scn *scn = NULL;
    GElf_Shdr sh;
    while ((scn = elf_nextscn(e, scn)))
        if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_DYNAMIC && sh.sh_entsize) {
            Elf_Data *d = elf_getdata(scn, NULL);
            size_t n = d ? sh.sh_size / sh.sh_entsize : 0;
            for (size_t i = 0; i < n; i++) {
                GElf_Dyn dyn;
                const char *name;
                if (gelf_getdyn(d, (int)i, &dyn) && dyn.d_tag == DT_SONAME &&
                    (name = elf_strptr(e, sh.sh_link, dyn.d_un.d_val)))
                    return !strncmp(name, "libc.so", 7);
            }
        }
    return false;
}

int fl_ctx_elf_has_hooks(Elf *elf)
{
    /* Calls them in another file (an undefined symbol), or has them:
     * libfaultline, or a program with its static archive -- stripped, such
     * a program may not export anything else.  Not the C library, which
     * defines empty hooks of its own and calls none: its 2 MB of code
     * would only slow the graph down. */
    bool defines = false;
    Elf_Scn *scn = NULL;
    GElf_Shdr sh;
    while ((scn = elf_nextscn(elf, scn))) {
        if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) ||
            !sh.sh_entsize)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        size_t n = d ? sh.sh_size / sh.sh_entsize : 0;
        for (size_t i = 1; i < n; i++) {
            GElf_Sym sym;
            const char *name;
            if (gelf_getsym(d, (int)i, &sym) && (name = elf_strptr(elf, sh.sh_link, sym.st_name)) &&
                !strcmp(name, "__cyg_profile_func_enter")) {
                if (sym.st_shndx == SHN_UNDEF)
                    return 1;
                defines = true;
            }
        }
    }
    return defines && !is_libc(elf);
}
