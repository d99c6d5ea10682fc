/*
 * fl_unwind.c - a signal-safe stack unwinder (DWARF CFI from .eh_frame).
 *
 * SIGNAL-SAFE ZONE.  Everything here runs inside a signal handler of a
 * possibly corrupt process: no heap, no locks, no stdio, no dl_iterate_phdr,
 * no backtrace(), no libgcc/libunwind, no TLS-touching libc calls, only
 * async-signal-safe system calls (through the memory reader), every loop
 * bounded, fixed-size buffers on the stack.  No static mutable state.
 *
 * How this works.  A frame is a register set (fl_regs).  To get the
 * caller's register set we need the callee's call-frame information: the
 * rules "the CFA (the caller's stack pointer) is rsp+16; the return address
 * is saved at CFA-8; rbx at CFA-24 ...", valid for the callee's pc.  The
 * compiler writes them into .eh_frame as small bytecode programs: one CIE
 * (common to many functions: encodings, alignment factors, initial rules)
 * and one FDE per function (pc range and the instructions that change the
 * rules as the pc advances through the prologue and epilogue).  The linker
 * adds .eh_frame_hdr, a table of (function start, FDE address) sorted by
 * start, which we binary-search.  We run the CIE's and the FDE's
 * instructions up to the pc, which leaves one row of rules; applying the
 * row to the callee's registers yields the caller's.  For a caller frame the
 * pc is a return address, which may already belong to the next function
 * (after a call to a noreturn function), so the lookup uses pc-1 -- except
 * right after a signal frame (CIE augmentation "S"), whose "return address"
 * is the exact interrupted pc.
 *
 * Where there is no CFI (a module without .eh_frame, hand-written code) we
 * follow the frame-pointer chain while it looks sane; when frame 0's pc is
 * in no module at all (a call through a bad function pointer) we take the
 * return address at the stack pointer (x86-64) or in the link register
 * (aarch64).
 *
 * The CFI engine is generic over the register file (fl_regs, in the
 * architecture's DWARF numbering); the architecture parts are the ucontext
 * mapping, the frame-pointer step, the frame-0 guess and, on aarch64,
 * DW_CFA_AARCH64_negate_ra_state (pointer-authenticated return addresses).
 *
 * Every read of process memory goes through the fl_unwind_mem reader,
 * which fails instead of faulting.  CIE/FDE bytes are read through a small
 * window cursor (256 bytes per refill) so a 20-frame walk costs a few
 * dozen copies, not one read per byte.  Bounds: max_frames, a cap on CFA
 * instructions per FDE, on DWARF expression operations, on the
 * remember_state stack, on the linear .eh_frame scan, and a CFA that must
 * grow from frame to frame (except across a signal frame, at most a few).
 */
#define _GNU_SOURCE
#include "fl_unwind.h"

#include "fl_safemem.h"

#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <ucontext.h>

/* ------------------------------------------------------------------ */
/* Limits.                                                             */

#define MAX_SIGNAL_FRAMES 8      /* CFA may shrink only across these */
#define FP_MAX_FRAME (16u << 20) /* a frame-pointer step may not jump farther */

/* On aarch64 a call pushes nothing: a leaf function without a stack frame
 * (return address still in lr), or the frame-0 guess after a call through
 * a bad pointer, has the caller's stack pointer as its CFA.  Such a step is
 * allowed, but not two in a row (the caller made a call, so it saved lr and
 * has a frame): the CFA still grows at least every second frame. */
#if defined(__aarch64__)
#define CFA_MAY_STAY 1
#else
#define CFA_MAY_STAY 0
#endif

/* ------------------------------------------------------------------ */
/* Registers from a ucontext (architecture part).                      */

void fl_regs_from_ucontext(fl_regs *out, const void *ucontext)
{
    memset(out, 0, sizeof *out);
    if (!ucontext)
        return;
#if defined(__x86_64__)
    const ucontext_t *uc = ucontext;
    const greg_t *g = uc->uc_mcontext.gregs;
    static const unsigned char map[FL_REGS_N] = {
        REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI, REG_RBP, REG_RSP, REG_R8,
        REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP,
    };
    for (int i = 0; i < FL_REGS_N; i++)
        out->r[i] = (uint64_t)g[map[i]];
    out->valid = (1ull << FL_REGS_N) - 1;
#elif defined(__aarch64__)
    const ucontext_t *uc = ucontext;
    for (int i = 0; i < 31; i++)
        out->r[i] = uc->uc_mcontext.regs[i];
    out->r[FL_REG_SP] = uc->uc_mcontext.sp;
    out->r[FL_REG_PC] = uc->uc_mcontext.pc;
    out->valid = (1ull << FL_REGS_N) - 1;
#else
    (void)ucontext;
#endif
}

/* ------------------------------------------------------------------ */
/* Memory access.                                                      */

/* A return address signed by aarch64 pointer authentication carries the
 * signature in its top bits: keep the 48-bit user virtual address (the
 * kernel gives user space 48 bits unless it asks for more).  A mask needs
 * no ARMv8.3 instruction and works on a value that is not in x30. */
static inline uint64_t strip_pac(uint64_t ra)
{
#if defined(__aarch64__)
    return ra & 0x0000ffffffffffffull;
#else
    return ra;
#endif
}

typedef struct walk {
    const fl_unwind_mem *mem;
    const fl_unwind_module *mods;
    size_t nmods;
    size_t mod_hint;
    /* Work left for the whole walk (scanned .eh_frame entries and CFA
     * instructions): each frame is bounded, and so is their sum, so a
     * corrupt table cannot make every frame pay the per-frame maximum. */
    uint64_t *budget;
} walk;

#define WALK_BUDGET 1000000

/* Takes one unit of work; false when the walk's budget is spent. */
static inline bool spend(const walk *w)
{
    if (*w->budget == 0)
        return false;
    --*w->budget;
    return true;
}

static int rd(const walk *w, void *dst, uint64_t addr, size_t n)
{
    return w->mem->read(w->mem->ctx, dst, addr, n);
}

__attribute__((unused)) static int rd_u64(const walk *w, uint64_t addr, uint64_t *v)
{
    return rd(w, v, addr, 8);
}

static int safe_read_cb(void *ctx, void *dst, uint64_t addr, size_t n)
{
    (void)ctx;
    return fl_safe_read(dst, addr, n);
}

static const fl_unwind_module *find_module(walk *w, uint64_t pc)
{
    if (w->nmods == 0 || !w->mods)
        return NULL;
    if (w->mod_hint < w->nmods) {
        const fl_unwind_module *h = &w->mods[w->mod_hint];
        if (pc >= h->start && pc < h->end)
            return h;
    }
    for (size_t i = 0; i < w->nmods; i++) {
        if (pc >= w->mods[i].start && pc < w->mods[i].end) {
            w->mod_hint = i;
            return &w->mods[i];
        }
    }
    return NULL;
}

#if FL_UNWIND_HAVE_CFI
/* ------------------------------------------------------------------ */
/* A byte cursor over [pos, end) of process memory, through a window.  */

#define CUR_WIN 256

typedef struct cur {
    const walk *w;
    uint64_t pos, end; /* next byte, limit (exclusive) */
    uint64_t wbase;    /* address of win[0] */
    size_t wlen;       /* valid bytes in win */
    bool err;          /* sticky: a read failed or ran past end */
    unsigned char win[CUR_WIN];
} cur;

static void cur_init(cur *c, const walk *w, uint64_t pos, uint64_t end)
{
    c->w = w;
    c->pos = pos;
    c->end = end < pos ? pos : end;
    c->wbase = 0;
    c->wlen = 0;
    c->err = false;
}

static bool cur_fill(cur *c)
{
    uint64_t want = c->end - c->pos;
    if (want == 0) {
        c->err = true;
        return false;
    }
    if (want > CUR_WIN)
        want = CUR_WIN;
    if (rd(c->w, c->win, c->pos, want) != 0) {
        /* The window may reach past the readable bytes the data needs (the
         * end of a mapping): retry with halves, down to one byte. */
        uint64_t to_page = 4096 - (c->pos & 4095);
        want = to_page < want ? to_page : want / 2;
        for (;;) {
            if (want == 0) {
                c->err = true;
                return false;
            }
            if (rd(c->w, c->win, c->pos, want) == 0)
                break;
            want /= 2;
        }
    }
    c->wbase = c->pos;
    c->wlen = want;
    return true;
}

static inline uint8_t cur_u8(cur *c)
{
    if (c->err)
        return 0;
    if (c->pos >= c->end) {
        c->err = true;
        return 0;
    }
    if (c->pos < c->wbase || c->pos - c->wbase >= c->wlen) {
        if (!cur_fill(c))
            return 0;
    }
    return c->win[c->pos++ - c->wbase];
}

static uint64_t cur_uN(cur *c, int bytes) /* little-endian */
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)cur_u8(c) << (8 * i);
    return v;
}

static uint64_t cur_uleb(cur *c)
{
    uint64_t v = 0;
    unsigned shift = 0;
    for (int i = 0; i < 16; i++) {
        uint8_t b = cur_u8(c);
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80) || c->err)
            return v;
    }
    c->err = true; /* absurdly long: corrupt */
    return 0;
}

static int64_t cur_sleb(cur *c)
{
    uint64_t v = 0;
    unsigned shift = 0;
    for (int i = 0; i < 16; i++) {
        uint8_t b = cur_u8(c);
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80) || c->err) {
            if (shift < 64 && (b & 0x40))
                v |= ~0ull << shift;
            return (int64_t)v;
        }
    }
    c->err = true;
    return 0;
}

static void cur_skip(cur *c, uint64_t n)
{
    if (n > c->end - c->pos) {
        c->err = true;
        return;
    }
    c->pos += n;
}

/* ------------------------------------------------------------------ */
/* Pointer encodings (DW_EH_PE_*).                                     */

enum {
    PE_absptr = 0x00,
    PE_uleb128 = 0x01,
    PE_udata2 = 0x02,
    PE_udata4 = 0x03,
    PE_udata8 = 0x04,
    PE_sleb128 = 0x09,
    PE_sdata2 = 0x0a,
    PE_sdata4 = 0x0b,
    PE_sdata8 = 0x0c,
    PE_pcrel = 0x10,
    PE_textrel = 0x20,
    PE_datarel = 0x30,
    PE_funcrel = 0x40,
    PE_aligned = 0x50,
    PE_indirect = 0x80,
    PE_omit = 0xff,
};

typedef struct pe_bases {
    uint64_t text, data, func; /* 0: not known, the encoding then fails */
} pe_bases;

/* Reads a pointer in encoding enc at the cursor.  Sets c->err on an
 * unsupported encoding or a failed read. */
static uint64_t cur_ptr(cur *c, uint8_t enc, const pe_bases *b)
{
    if (enc == PE_omit) {
        c->err = true;
        return 0;
    }
    if ((enc & 0x70) == PE_aligned) {
        uint64_t a = (c->pos + 7) & ~7ull;
        cur_skip(c, a - c->pos);
        enc = PE_absptr;
    }
    uint64_t at = c->pos, v;
    switch (enc & 0x0f) {
    case PE_absptr:
        v = cur_uN(c, 8);
        break;
    case PE_uleb128:
        v = cur_uleb(c);
        break;
    case PE_udata2:
        v = cur_uN(c, 2);
        break;
    case PE_udata4:
        v = cur_uN(c, 4);
        break;
    case PE_udata8:
        v = cur_uN(c, 8);
        break;
    case PE_sleb128:
        v = (uint64_t)cur_sleb(c);
        break;
    case PE_sdata2:
        v = (uint64_t)(int64_t)(int16_t)cur_uN(c, 2);
        break;
    case PE_sdata4:
        v = (uint64_t)(int64_t)(int32_t)cur_uN(c, 4);
        break;
    case PE_sdata8:
        v = cur_uN(c, 8);
        break;
    default:
        c->err = true;
        return 0;
    }
    if (c->err || v == 0) /* like libgcc: a zero value stays zero */
        return 0;
    switch (enc & 0x70) {
    case 0:
        break;
    case PE_pcrel:
        v += at;
        break;
    case PE_textrel:
        if (!b->text) {
            c->err = true;
            return 0;
        }
        v += b->text;
        break;
    case PE_datarel:
        if (!b->data) {
            c->err = true;
            return 0;
        }
        v += b->data;
        break;
    case PE_funcrel:
        if (!b->func) {
            c->err = true;
            return 0;
        }
        v += b->func;
        break;
    default:
        c->err = true;
        return 0;
    }
    if (enc & PE_indirect) {
        uint64_t t;
        if (rd_u64(c->w, v, &t) != 0) {
            c->err = true;
            return 0;
        }
        v = t;
    }
    return v;
}

/* ------------------------------------------------------------------ */
/* CIE and FDE.                                                        */

#define MAX_ENTRY_LEN (16u << 20) /* a CIE/FDE longer than 16 MiB is corrupt */

typedef struct cie_info {
    uint64_t addr; /* where it starts (the length field) */
    uint64_t code_align;
    int64_t data_align;
    uint64_t ra_reg;
    uint8_t fde_enc, lsda_enc;
    bool has_z, signal;
    uint64_t instr, instr_end;
} cie_info;

typedef struct fde_info {
    uint64_t pc_begin, pc_end;
    uint64_t instr, instr_end;
} fde_info;

/* Reads an entry header at addr: returns the entry's end, sets *id_pos to
 * the address of the CIE id / CIE pointer field and *id to its value, *is64
 * to the format.  0 on error or on the zero terminator. */
static uint64_t entry_header(cur *c, uint64_t addr, uint64_t *id_pos, uint64_t *id, bool *is64)
{
    /* 64 bytes: most FDEs fit, so one read serves the whole entry. */
    cur_init(c, c->w, addr, addr + 64);
    uint64_t len = cur_uN(c, 4);
    *is64 = false;
    if (len == 0xffffffffu) {
        len = cur_uN(c, 8);
        *is64 = true;
    }
    if (c->err || len == 0 || len > MAX_ENTRY_LEN)
        return 0;
    uint64_t body = c->pos, end = body + len;
    if (end < body)
        return 0;
    c->end = end;
    *id_pos = c->pos;
    *id = *is64 ? cur_uN(c, 8) : cur_uN(c, 4);
    return c->err ? 0 : end;
}

static bool parse_cie(const walk *w, uint64_t addr, const pe_bases *b, cie_info *ci)
{
    cur c;
    c.w = w;
    uint64_t id_pos, id;
    bool is64;
    uint64_t end = entry_header(&c, addr, &id_pos, &id, &is64);
    if (!end || id != 0)
        return false;
    memset(ci, 0, sizeof *ci);
    ci->addr = addr;
    ci->fde_enc = PE_absptr;
    ci->lsda_enc = PE_omit;
    uint8_t version = cur_u8(&c);
    if (version != 1 && version != 3 && version != 4)
        return false;
    char aug[16];
    size_t na = 0;
    for (;;) {
        uint8_t ch = cur_u8(&c);
        if (c.err)
            return false;
        if (ch == 0)
            break;
        if (na + 1 >= sizeof aug)
            return false;
        aug[na++] = (char)ch;
    }
    aug[na] = 0;
    size_t ai = 0;
    if (na >= 2 && aug[0] == 'e' && aug[1] == 'h') { /* old GCC: an EH data pointer */
        cur_skip(&c, 8);
        ai = 2;
    }
    if (version == 4) {
        uint8_t asz = cur_u8(&c);
        cur_u8(&c); /* segment selector size */
        if (asz != 8)
            return false;
    }
    ci->code_align = cur_uleb(&c);
    ci->data_align = cur_sleb(&c);
    ci->ra_reg = version == 1 ? cur_u8(&c) : cur_uleb(&c);
    if (c.err)
        return false;
    if (ai < na && aug[ai] == 'z') {
        ci->has_z = true;
        uint64_t alen = cur_uleb(&c);
        uint64_t aend = c.pos + alen;
        if (c.err || aend < c.pos || aend > c.end)
            return false;
        for (ai++; ai < na && !c.err; ai++) {
            switch (aug[ai]) {
            case 'L':
                ci->lsda_enc = cur_u8(&c);
                break;
            case 'R':
                ci->fde_enc = cur_u8(&c);
                break;
            case 'P': {
                uint8_t penc = cur_u8(&c);
                /* The personality routine is not needed: decode to skip it,
                 * without following an indirect pointer. */
                (void)cur_ptr(&c, (uint8_t)(penc & 0x7f), b);
                c.err = false; /* unknown bases only make the value unknown */
                break;
            }
            case 'S':
                ci->signal = true;
                break;
            case 'B':
            case 'G':
                break; /* aarch64 BTI / MTE markers: no data */
            default:
                ai = na;
                break; /* unknown: 'z' lets us skip the rest */
            }
        }
        if (c.err)
            return false;
        c.pos = aend;
    } else if (ai < na) {
        return false; /* unknown augmentation without 'z': cannot find the instructions */
    }
    if (c.pos > end)
        return false;
    ci->instr = c.pos;
    ci->instr_end = end;
    return true;
}

/* Small per-walk cache of the last CIE parsed: most FDEs of an object
 * share one or two CIEs. */
typedef struct cie_cache {
    cie_info ci;
    bool ok;
} cie_cache;

static bool get_cie(const walk *w, uint64_t addr, const pe_bases *b, cie_cache *cc,
                    const cie_info **out)
{
    if (!(cc->ok && cc->ci.addr == addr)) {
        cc->ok = parse_cie(w, addr, b, &cc->ci);
        if (!cc->ok)
            return false;
    }
    *out = &cc->ci;
    return true;
}

/* Parses the FDE at addr (and its CIE).  Returns false on any error or if
 * addr is a CIE. */
static bool parse_fde(const walk *w, uint64_t addr, const pe_bases *b, cie_cache *cc, fde_info *fi,
                      const cie_info **ci)
{
    cur c;
    c.w = w;
    uint64_t id_pos, id;
    bool is64;
    uint64_t end = entry_header(&c, addr, &id_pos, &id, &is64);
    if (!end || id == 0 || id > id_pos)
        return false;
    if (!get_cie(w, id_pos - id, b, cc, ci))
        return false;
    uint8_t enc = (*ci)->fde_enc;
    fi->pc_begin = cur_ptr(&c, enc, b);
    uint64_t range = cur_ptr(&c, (uint8_t)(enc & 0x0f), b);
    if (c.err || enc == PE_omit)
        return false;
    fi->pc_end = fi->pc_begin + range;
    if (fi->pc_end < fi->pc_begin)
        return false;
    if ((*ci)->has_z) {
        uint64_t alen = cur_uleb(&c);
        cur_skip(&c, alen);
    }
    if (c.err)
        return false;
    fi->instr = c.pos;
    fi->instr_end = end;
    return true;
}

/* ------------------------------------------------------------------ */
/* Finding the FDE for a pc.                                           */

#define MAX_SCAN_ENTRIES 200000 /* linear .eh_frame scan bound */

static bool scan_eh_frame(const walk *w, uint64_t eh_frame, uint64_t pc, const pe_bases *b,
                          cie_cache *cc, fde_info *fi, const cie_info **ci)
{
    uint64_t at = eh_frame;
    for (int i = 0; i < MAX_SCAN_ENTRIES && spend(w); i++) {
        cur c;
        c.w = w;
        uint64_t id_pos, id;
        bool is64;
        uint64_t end = entry_header(&c, at, &id_pos, &id, &is64);
        if (!end)
            return false; /* terminator or unreadable */
        if (id != 0 && parse_fde(w, at, b, cc, fi, ci) && pc >= fi->pc_begin && pc < fi->pc_end)
            return true;
        at = end;
    }
    return false;
}

/* What .eh_frame_hdr says, parsed once per module per walk. */
typedef struct hdr_cache {
    const fl_unwind_module *mod; /* NULL: empty */
    uint64_t eh_frame;           /* from eh_frame_ptr, else the module's */
    uint64_t count, table;       /* table usable iff count > 0 */
    uint8_t tenc;
    unsigned esz;
} hdr_cache;

static void parse_hdr(const walk *w, const fl_unwind_module *m, hdr_cache *hc)
{
    pe_bases b = {0, m->eh_frame_hdr, 0};
    hc->mod = m;
    hc->eh_frame = m->eh_frame;
    hc->count = 0;
    unsigned char h[4];
    if (!m->eh_frame_hdr || rd(w, h, m->eh_frame_hdr, 4) != 0 || h[0] != 1)
        return;
    cur c;
    cur_init(&c, w, m->eh_frame_hdr + 4, m->eh_frame_hdr + 4 + 32);
    uint64_t ef = h[1] == PE_omit ? 0 : cur_ptr(&c, h[1], &b);
    uint64_t count = h[2] == PE_omit ? 0 : cur_ptr(&c, h[2], &b);
    if (c.err)
        return;
    if (ef)
        hc->eh_frame = ef;
    uint8_t tenc = h[3];
    unsigned esz = (tenc & 0x0f) == PE_sdata4 || (tenc & 0x0f) == PE_udata4   ? 4
                   : (tenc & 0x0f) == PE_sdata8 || (tenc & 0x0f) == PE_udata8 ? 8
                                                                              : 0;
    bool rel_ok = (tenc & 0x70) == PE_datarel || (tenc & 0x70) == 0;
    if (count > 0 && esz && rel_ok && !(tenc & PE_indirect) && count < (1ull << 32)) {
        hc->count = count;
        hc->table = c.pos;
        hc->tenc = tenc;
        hc->esz = esz;
    }
}

static bool find_fde(const walk *w, const fl_unwind_module *m, uint64_t pc, cie_cache *cc,
                     hdr_cache *hc, fde_info *fi, const cie_info **ci)
{
    pe_bases b = {0, m->eh_frame_hdr, 0};
    if (hc->mod != m)
        parse_hdr(w, m, hc);
    uint64_t eh_frame = hc->eh_frame;
    if (hc->count > 0) {
        unsigned esz = hc->esz;
        uint64_t base = (hc->tenc & 0x70) == PE_datarel ? m->eh_frame_hdr : 0;
        bool sgn = (hc->tenc & 0x08) != 0;
        /* Last entry with start <= pc; log2(count) <= 32 probes. */
        uint64_t lo = 0, hi = hc->count, found_fde = 0;
        bool found = false;
        for (int guard = 0; lo < hi && guard < 64; guard++) {
            uint64_t mid = lo + (hi - lo) / 2;
            unsigned char e[16];
            if (rd(w, e, hc->table + mid * 2 * esz, 2 * esz) != 0)
                return false;
            uint64_t v0, v1;
            if (esz == 4) { /* little-endian, as on every target with CFI here */
                uint32_t a, b2;
                memcpy(&a, e, 4);
                memcpy(&b2, e + 4, 4);
                v0 = sgn ? (uint64_t)(int64_t)(int32_t)a : a;
                v1 = sgn ? (uint64_t)(int64_t)(int32_t)b2 : b2;
            } else {
                memcpy(&v0, e, 8);
                memcpy(&v1, e + 8, 8);
            }
            v0 += base;
            v1 += base;
            if (v0 <= pc) {
                found = true;
                found_fde = v1;
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if (!found)
            return false;
        /* The table is authoritative: no scan when the FDE does not cover
         * pc (a gap between functions). */
        return parse_fde(w, found_fde, &b, cc, fi, ci) && pc >= fi->pc_begin && pc < fi->pc_end;
    }
    if (!eh_frame)
        return false;
    return scan_eh_frame(w, eh_frame, pc, &b, cc, fi, ci);
}

/* ------------------------------------------------------------------ */
/* Rules and the CFA program.                                          */

enum {
    RULE_SAME = 0,
    RULE_UNDEF,
    RULE_OFFSET,
    RULE_VAL_OFFSET,
    RULE_REG,
    RULE_EXPR,
    RULE_VAL_EXPR
};
enum { CFA_REG_OFF = 0, CFA_EXPR = 1 };

/* RULE_OFFSET and RULE_VAL_OFFSET keep the operand as the CFI has it and
 * multiply it by the data alignment factor when applied, in wrapping
 * 64-bit arithmetic like the addresses it is added to: the operands come
 * from .eh_frame bytes that may be corrupt, and their product as an
 * int64_t could overflow, undefined behaviour in the crash handler (found
 * by fuzz_unwind, fuzz/corpus/unwind/factored-offset-overflow).  One
 * multiplication there instead of one per opcode here also keeps the
 * unwinder inside the library's text budget. */
typedef struct rule {
    uint8_t kind;
    int64_t val;   /* factored offset, register number, or expression length */
    uint64_t expr; /* address of the expression block */
} rule;

typedef struct row {
    uint8_t cfa_kind;
    /* aarch64: the return address is signed by pointer authentication
     * (toggled by DW_CFA_AARCH64_negate_ra_state; saved and restored with
     * the rest of the row by remember/restore_state). */
    uint8_t ra_signed;
    uint64_t cfa_reg;
    int64_t cfa_off;
    uint64_t cfa_expr, cfa_expr_len;
    rule r[FL_REGS_N];
} row;

#define REMEMBER_DEPTH 8
#define MAX_CFA_INSNS 100000

enum {
    CFA_nop = 0x00,
    CFA_set_loc = 0x01,
    CFA_advance_loc1 = 0x02,
    CFA_advance_loc2 = 0x03,
    CFA_advance_loc4 = 0x04,
    CFA_offset_extended = 0x05,
    CFA_restore_extended = 0x06,
    CFA_undefined = 0x07,
    CFA_same_value = 0x08,
    CFA_register = 0x09,
    CFA_remember_state = 0x0a,
    CFA_restore_state = 0x0b,
    CFA_def_cfa = 0x0c,
    CFA_def_cfa_register = 0x0d,
    CFA_def_cfa_offset = 0x0e,
    CFA_def_cfa_expression = 0x0f,
    CFA_expression = 0x10,
    CFA_offset_extended_sf = 0x11,
    CFA_def_cfa_sf = 0x12,
    CFA_def_cfa_offset_sf = 0x13,
    CFA_val_offset = 0x14,
    CFA_val_offset_sf = 0x15,
    CFA_val_expression = 0x16,
    CFA_GNU_window_save = 0x2d,
    CFA_GNU_args_size = 0x2e,
    CFA_GNU_negative_offset_extended = 0x2f,
    CFA_advance_loc = 0x40,
    CFA_offset = 0x80,
    CFA_restore = 0xc0,
};

static void set_rule(row *rw, uint64_t reg, uint8_t kind, int64_t val, uint64_t expr)
{
    if (reg >= FL_REGS_N)
        return; /* a register we do not track (vector registers): ignore */
    rw->r[reg].kind = kind;
    rw->r[reg].val = val;
    rw->r[reg].expr = expr;
}

/* Executes [start, end) for a function starting at loc0 until the location
 * passes pc.  init is the row after the CIE's instructions (for
 * DW_CFA_restore), NULL while running the CIE itself. */
static bool run_cfa(const walk *w, const cie_info *ci, uint64_t start, uint64_t end, uint64_t loc0,
                    uint64_t pc, const row *init, row *rw)
{
    row stack[REMEMBER_DEPTH];
    int depth = 0;
    uint64_t loc = loc0;
    pe_bases b = {0, 0, 0};
    cur c;
    cur_init(&c, w, start, end);
    for (int n = 0; n < MAX_CFA_INSNS && c.pos < c.end; n++) {
        if (!spend(w))
            return false;
        uint8_t op = cur_u8(&c);
        uint64_t reg, delta = 0;
        bool advance = false;
        switch (op & 0xc0) {
        case CFA_advance_loc:
            delta = op & 0x3f;
            advance = true;
            break;
        case CFA_offset:
            reg = op & 0x3f;
            set_rule(rw, reg, RULE_OFFSET, (int64_t)cur_uleb(&c), 0);
            break;
        case CFA_restore:
            reg = op & 0x3f;
            if (!init)
                return false;
            if (reg < FL_REGS_N)
                rw->r[reg] = init->r[reg];
            break;
        default:
            switch (op) {
            case CFA_nop:
                break;
            case CFA_set_loc: {
                uint64_t nl = cur_ptr(&c, ci->fde_enc, &b);
                if (c.err)
                    return false;
                if (nl > pc)
                    return true;
                loc = nl;
                break;
            }
            case CFA_advance_loc1:
                delta = cur_uN(&c, 1);
                advance = true;
                break;
            case CFA_advance_loc2:
                delta = cur_uN(&c, 2);
                advance = true;
                break;
            case CFA_advance_loc4:
                delta = cur_uN(&c, 4);
                advance = true;
                break;
            case CFA_offset_extended:
                reg = cur_uleb(&c);
                set_rule(rw, reg, RULE_OFFSET, (int64_t)cur_uleb(&c), 0);
                break;
            case CFA_offset_extended_sf:
                reg = cur_uleb(&c);
                set_rule(rw, reg, RULE_OFFSET, cur_sleb(&c), 0);
                break;
            case CFA_GNU_negative_offset_extended:
                reg = cur_uleb(&c);
                set_rule(rw, reg, RULE_OFFSET, (int64_t)(0 - cur_uleb(&c)), 0);
                break;
            case CFA_val_offset:
                reg = cur_uleb(&c);
                set_rule(rw, reg, RULE_VAL_OFFSET, (int64_t)cur_uleb(&c), 0);
                break;
            case CFA_val_offset_sf:
                reg = cur_uleb(&c);
                set_rule(rw, reg, RULE_VAL_OFFSET, cur_sleb(&c), 0);
                break;
            case CFA_restore_extended:
                reg = cur_uleb(&c);
                if (!init)
                    return false;
                if (reg < FL_REGS_N)
                    rw->r[reg] = init->r[reg];
                break;
            case CFA_undefined:
                set_rule(rw, cur_uleb(&c), RULE_UNDEF, 0, 0);
                break;
            case CFA_same_value:
                set_rule(rw, cur_uleb(&c), RULE_SAME, 0, 0);
                break;
            case CFA_register:
                reg = cur_uleb(&c);
                set_rule(rw, reg, RULE_REG, (int64_t)cur_uleb(&c), 0);
                break;
            case CFA_remember_state:
                if (depth >= REMEMBER_DEPTH)
                    return false;
                stack[depth++] = *rw;
                break;
            case CFA_restore_state: {
                if (depth == 0)
                    return false;
                /* The CFA rule is part of the saved state (DWARF 5 6.4.2.4). */
                *rw = stack[--depth];
                break;
            }
            /* def_cfa and def_cfa_sf are def_cfa_register followed by
             * def_cfa_offset(_sf): one copy of each step, which keeps the
             * unwinder inside the library's text budget. */
            case CFA_def_cfa:
            case CFA_def_cfa_sf:
            case CFA_def_cfa_register:
                rw->cfa_kind = CFA_REG_OFF;
                rw->cfa_reg = cur_uleb(&c);
                if (op == CFA_def_cfa_register)
                    break;
                if (op == CFA_def_cfa_sf)
                    goto offset_sf;
                /* fall through */
            case CFA_def_cfa_offset:
                rw->cfa_off = (int64_t)cur_uleb(&c);
                break;
            case CFA_def_cfa_offset_sf:
            offset_sf:
                rw->cfa_off = (int64_t)((uint64_t)cur_sleb(&c) * (uint64_t)ci->data_align);
                break;
            case CFA_def_cfa_expression: {
                uint64_t len = cur_uleb(&c);
                rw->cfa_kind = CFA_EXPR;
                rw->cfa_expr = c.pos;
                rw->cfa_expr_len = len;
                cur_skip(&c, len);
                break;
            }
            case CFA_expression:
            case CFA_val_expression: {
                reg = cur_uleb(&c);
                uint64_t len = cur_uleb(&c);
                set_rule(rw, reg, op == CFA_expression ? RULE_EXPR : RULE_VAL_EXPR, (int64_t)len,
                         c.pos);
                cur_skip(&c, len);
                break;
            }
            case CFA_GNU_args_size:
                (void)cur_uleb(&c);
                break;
            case CFA_GNU_window_save: /* same opcode as DW_CFA_AARCH64_negate_ra_state */
#if defined(__aarch64__)
                rw->ra_signed ^= 1;
#endif
                break; /* SPARC's meaning: nothing to do for us */
            default:
                return false; /* unknown opcode: the row is unknowable */
            }
        }
        if (c.err)
            return false;
        if (advance) {
            uint64_t nl = loc + delta * ci->code_align;
            if (nl > pc || nl < loc)
                return true;
            loc = nl;
        }
    }
    return !c.err;
}

/* ------------------------------------------------------------------ */
/* DWARF expressions (the subset CFI uses).                            */

#define EXPR_STACK 64
#define EXPR_MAX_OPS 1000

enum {
    OP_addr = 0x03,
    OP_deref = 0x06,
    OP_const1u = 0x08,
    OP_const1s = 0x09,
    OP_const2u = 0x0a,
    OP_const2s = 0x0b,
    OP_const4u = 0x0c,
    OP_const4s = 0x0d,
    OP_const8u = 0x0e,
    OP_const8s = 0x0f,
    OP_constu = 0x10,
    OP_consts = 0x11,
    OP_dup = 0x12,
    OP_drop = 0x13,
    OP_over = 0x14,
    OP_pick = 0x15,
    OP_swap = 0x16,
    OP_rot = 0x17,
    OP_abs = 0x19,
    OP_and = 0x1a,
    OP_div = 0x1b,
    OP_minus = 0x1c,
    OP_mod = 0x1d,
    OP_mul = 0x1e,
    OP_neg = 0x1f,
    OP_not = 0x20,
    OP_or = 0x21,
    OP_plus = 0x22,
    OP_plus_uconst = 0x23,
    OP_shl = 0x24,
    OP_shr = 0x25,
    OP_shra = 0x26,
    OP_xor = 0x27,
    OP_bra = 0x28,
    OP_eq = 0x29,
    OP_ge = 0x2a,
    OP_gt = 0x2b,
    OP_le = 0x2c,
    OP_lt = 0x2d,
    OP_ne = 0x2e,
    OP_skip = 0x2f,
    OP_lit0 = 0x30,
    OP_lit31 = 0x4f,
    OP_breg0 = 0x70,
    OP_breg31 = 0x8f,
    OP_bregx = 0x92,
    OP_deref_size = 0x94,
    OP_nop = 0x96,
};

/* Cold: DWARF expressions describe PLT entries and signal frames, rarely
 * an ordinary frame.  (Marked so when the rest of this file was built at
 * -O2, for 1.6 KB of the library's text budget; the whole file is compiled
 * for size now, src/client/CMakeLists.txt, and the mark still keeps this
 * out of the walk's hot code.) */
__attribute__((cold)) static bool eval_expr(const walk *w, const fl_regs *regs, uint64_t addr,
                                            uint64_t len, bool push_cfa, uint64_t cfa,
                                            uint64_t *out)
{
    uint64_t st[EXPR_STACK];
    int sp = 0;
    cur c;
    if (addr + len < addr)
        return false;
    cur_init(&c, w, addr, addr + len);
#define PUSH(v)                                                                                    \
    do {                                                                                           \
        uint64_t pv_ = (v);                                                                        \
        if (sp >= EXPR_STACK)                                                                      \
            return false;                                                                          \
        st[sp++] = pv_;                                                                            \
    } while (0)
#define NEED(k)                                                                                    \
    do {                                                                                           \
        if (sp < (k))                                                                              \
            return false;                                                                          \
    } while (0)
    if (push_cfa)
        PUSH(cfa);
    for (int n = 0; n < EXPR_MAX_OPS && c.pos < c.end; n++) {
        uint8_t op = cur_u8(&c);
        if (c.err)
            return false;
        if (op >= OP_lit0 && op <= OP_lit31) {
            PUSH((uint64_t)(op - OP_lit0));
            continue;
        }
        if (op >= OP_breg0 && op <= OP_breg31) {
            unsigned r = op - OP_breg0;
            int64_t off = cur_sleb(&c);
            if (r >= FL_REGS_N || !(regs->valid & (1ull << r)))
                return false;
            PUSH(regs->r[r] + (uint64_t)off);
            continue;
        }
        uint64_t a, bv;
        switch (op) {
        case OP_addr:
            PUSH(cur_uN(&c, 8));
            break;
        case OP_deref:
            NEED(1);
            if (rd_u64(w, st[sp - 1], &st[sp - 1]))
                return false;
            break;
        case OP_const1u:
            PUSH(cur_uN(&c, 1));
            break;
        case OP_const1s:
            PUSH((uint64_t)(int64_t)(int8_t)cur_uN(&c, 1));
            break;
        case OP_const2u:
            PUSH(cur_uN(&c, 2));
            break;
        case OP_const2s:
            PUSH((uint64_t)(int64_t)(int16_t)cur_uN(&c, 2));
            break;
        case OP_const4u:
            PUSH(cur_uN(&c, 4));
            break;
        case OP_const4s:
            PUSH((uint64_t)(int64_t)(int32_t)cur_uN(&c, 4));
            break;
        case OP_const8u:
        case OP_const8s:
            PUSH(cur_uN(&c, 8));
            break;
        case OP_constu:
            PUSH(cur_uleb(&c));
            break;
        case OP_consts:
            PUSH((uint64_t)cur_sleb(&c));
            break;
        case OP_dup:
            NEED(1);
            PUSH(st[sp - 1]);
            break;
        case OP_drop:
            NEED(1);
            sp--;
            break;
        case OP_over:
            NEED(2);
            PUSH(st[sp - 2]);
            break;
        case OP_pick: {
            uint8_t i = cur_u8(&c);
            NEED(i + 1);
            PUSH(st[sp - 1 - i]);
            break;
        }
        case OP_swap:
            NEED(2);
            a = st[sp - 1];
            st[sp - 1] = st[sp - 2];
            st[sp - 2] = a;
            break;
        case OP_rot:
            NEED(3);
            a = st[sp - 1];
            st[sp - 1] = st[sp - 2];
            st[sp - 2] = st[sp - 3];
            st[sp - 3] = a;
            break;
        case OP_abs:
            NEED(1);
            if ((int64_t)st[sp - 1] < 0)
                st[sp - 1] = -st[sp - 1];
            break;
        case OP_neg:
            NEED(1);
            st[sp - 1] = -st[sp - 1];
            break;
        case OP_not:
            NEED(1);
            st[sp - 1] = ~st[sp - 1];
            break;
        case OP_plus_uconst:
            NEED(1);
            st[sp - 1] += cur_uleb(&c);
            break;
        case OP_and:
        case OP_div:
        case OP_minus:
        case OP_mod:
        case OP_mul:
        case OP_or:
        case OP_plus:
        case OP_shl:
        case OP_shr:
        case OP_shra:
        case OP_xor:
        case OP_eq:
        case OP_ge:
        case OP_gt:
        case OP_le:
        case OP_lt:
        case OP_ne:
            NEED(2);
            bv = st[--sp];
            a = st[sp - 1];
            switch (op) {
            case OP_and:
                a &= bv;
                break;
            case OP_div:
                if (bv == 0 || ((int64_t)a == INT64_MIN && (int64_t)bv == -1))
                    return false;
                a = (uint64_t)((int64_t)a / (int64_t)bv);
                break;
            case OP_minus:
                a -= bv;
                break;
            case OP_mod:
                if (bv == 0)
                    return false;
                a %= bv;
                break;
            case OP_mul:
                a *= bv;
                break;
            case OP_or:
                a |= bv;
                break;
            case OP_plus:
                a += bv;
                break;
            case OP_shl:
                a = bv >= 64 ? 0 : a << bv;
                break;
            case OP_shr:
                a = bv >= 64 ? 0 : a >> bv;
                break;
            case OP_shra:
                a = (uint64_t)((int64_t)a >> (bv >= 64 ? 63 : bv));
                break;
            case OP_xor:
                a ^= bv;
                break;
            case OP_eq:
                a = a == bv;
                break;
            case OP_ge:
                a = (int64_t)a >= (int64_t)bv;
                break;
            case OP_gt:
                a = (int64_t)a > (int64_t)bv;
                break;
            case OP_le:
                a = (int64_t)a <= (int64_t)bv;
                break;
            case OP_lt:
                a = (int64_t)a < (int64_t)bv;
                break;
            case OP_ne:
                a = a != bv;
                break;
            }
            st[sp - 1] = a;
            break;
        case OP_bra:
        case OP_skip: {
            int16_t off = (int16_t)cur_uN(&c, 2);
            bool jump = true;
            if (op == OP_bra) {
                NEED(1);
                jump = st[--sp] != 0;
            }
            if (jump) {
                uint64_t to = c.pos + (uint64_t)(int64_t)off;
                if (to < addr || to > addr + len)
                    return false;
                c.pos = to;
            }
            break;
        }
        case OP_bregx: {
            uint64_t r = cur_uleb(&c);
            int64_t off = cur_sleb(&c);
            if (r >= FL_REGS_N || !(regs->valid & (1ull << r)))
                return false;
            PUSH(regs->r[r] + (uint64_t)off);
            break;
        }
        case OP_deref_size: {
            uint8_t size = cur_u8(&c);
            NEED(1);
            if (size == 0 || size > 8)
                return false;
            unsigned char buf[8] = {0};
            if (rd(w, buf, st[sp - 1], size))
                return false;
            uint64_t v = 0;
            for (int i = 0; i < size; i++)
                v |= (uint64_t)buf[i] << (8 * i);
            st[sp - 1] = v;
            break;
        }
        case OP_nop:
            break;
        default:
            return false; /* register locations, piece, call, ...: not CFI */
        }
        if (c.err)
            return false;
    }
#undef PUSH
#undef NEED
    if (c.err || sp < 1)
        return false;
    *out = st[sp - 1];
    return true;
}

/* ------------------------------------------------------------------ */
/* One CFI step: caller registers from callee registers.               */

typedef enum step_result { STEP_FAIL = 0, STEP_OK, STEP_END } step_result;

/* The row after the last CIE's initial instructions, reused while the
 * frames share that CIE (most do). */
typedef struct init_cache {
    uint64_t cie_addr; /* 0: empty */
    row r;
} init_cache;

static step_result cfi_step(const walk *w, const fl_unwind_module *m, const fl_regs *cur_regs,
                            uint64_t lookup_pc, cie_cache *cc, hdr_cache *hc, init_cache *ic,
                            fl_regs *out, uint64_t *cfa_out, bool *is_signal)
{
    fde_info fi;
    const cie_info *ci;
    if (!find_fde(w, m, lookup_pc, cc, hc, &fi, &ci))
        return STEP_FAIL;
    if (ic->cie_addr != ci->addr) {
        ic->cie_addr = 0;
        memset(&ic->r, 0, sizeof ic->r);
        ic->r.cfa_kind = CFA_REG_OFF;
        ic->r.cfa_reg = FL_REG_SP;
        if (!run_cfa(w, ci, ci->instr, ci->instr_end, 0, UINT64_MAX, NULL, &ic->r))
            return STEP_FAIL;
        ic->cie_addr = ci->addr;
    }
    row rw = ic->r;
    if (!run_cfa(w, ci, fi.instr, fi.instr_end, fi.pc_begin, lookup_pc, &ic->r, &rw))
        return STEP_FAIL;

    uint64_t cfa;
    if (rw.cfa_kind == CFA_REG_OFF) {
        if (rw.cfa_reg >= FL_REGS_N || !(cur_regs->valid & (1ull << rw.cfa_reg)))
            return STEP_FAIL;
        cfa = cur_regs->r[rw.cfa_reg] + (uint64_t)rw.cfa_off;
    } else if (!eval_expr(w, cur_regs, rw.cfa_expr, rw.cfa_expr_len, false, 0, &cfa)) {
        return STEP_FAIL;
    }

    if (ci->ra_reg >= FL_REGS_N || rw.r[ci->ra_reg].kind == RULE_UNDEF)
        return STEP_END; /* the outermost frame (_start, thread start) */

    *out = *cur_regs;
    for (int i = 0; i < FL_REGS_N; i++) {
        const rule *r = &rw.r[i];
        uint64_t v = 0;
        bool ok = true;
        switch (r->kind) {
        case RULE_SAME:
            continue;
        case RULE_UNDEF:
            ok = false;
            break;
        case RULE_OFFSET:
            ok = rd_u64(w, cfa + (uint64_t)r->val * (uint64_t)ci->data_align, &v) == 0;
            break;
        case RULE_VAL_OFFSET:
            v = cfa + (uint64_t)r->val * (uint64_t)ci->data_align;
            break;
        case RULE_REG:
            ok = r->val >= 0 && r->val < FL_REGS_N && (cur_regs->valid & (1ull << r->val));
            if (ok)
                v = cur_regs->r[r->val];
            break;
        case RULE_EXPR:
            ok = eval_expr(w, cur_regs, r->expr, (uint64_t)r->val, true, cfa, &v) &&
                 rd_u64(w, v, &v) == 0;
            break;
        case RULE_VAL_EXPR:
            ok = eval_expr(w, cur_regs, r->expr, (uint64_t)r->val, true, cfa, &v);
            break;
        }
        if (ok) {
            out->r[i] = v;
            out->valid |= 1ull << i;
        } else {
            out->valid &= ~(1ull << i);
        }
    }
    /* The caller's stack pointer is the CFA unless a rule said otherwise. */
    if (rw.r[FL_REG_SP].kind == RULE_SAME) {
        out->r[FL_REG_SP] = cfa;
        out->valid |= 1ull << FL_REG_SP;
    }
    if (!(out->valid & (1ull << ci->ra_reg)))
        return STEP_FAIL; /* the return address slot was unreadable */
    out->r[FL_REG_PC] = out->r[ci->ra_reg];
    if (rw.ra_signed)
        out->r[FL_REG_PC] = strip_pac(out->r[FL_REG_PC]);
    out->valid |= 1ull << FL_REG_PC;
    *cfa_out = cfa;
    *is_signal = ci->signal;
    return STEP_OK;
}
#endif /* FL_UNWIND_HAVE_CFI */

/* ------------------------------------------------------------------ */
/* Frame-pointer step and the frame-0 guess (architecture part).       */

static bool fp_step(const walk *w, const fl_regs *cr, fl_regs *out, uint64_t *cfa_out)
{
#if defined(__x86_64__) || defined(__aarch64__)
    const uint64_t need = (1ull << FL_REG_FP) | (1ull << FL_REG_SP);
    if ((cr->valid & need) != need)
        return false;
    uint64_t fp = cr->r[FL_REG_FP], sp = cr->r[FL_REG_SP];
    /* Sane only if the frame record is 8-aligned, on the stack above sp and
     * not absurdly far from it. */
    if ((fp & 7) || fp < sp || fp - sp > FP_MAX_FRAME)
        return false;
    uint64_t rec[2]; /* saved fp, return address */
    if (rd(w, rec, fp, sizeof rec) != 0)
        return false;
    *out = *cr;
    out->r[FL_REG_FP] = rec[0];
    /* No CFI tells whether it was signed; an unsigned one loses nothing. */
    out->r[FL_REG_PC] = strip_pac(rec[1]);
    /* Exact on x86-64.  On aarch64 the record usually sits at the bottom of
     * the frame, so this is at or below the true sp: a CFI step from here
     * with an sp-based CFA may read the wrong slots. */
    out->r[FL_REG_SP] = fp + 16;
    out->valid |= (1ull << FL_REG_FP) | (1ull << FL_REG_PC) | (1ull << FL_REG_SP);
    *cfa_out = fp + 16;
    return true;
#else
    (void)w, (void)cr, (void)out, (void)cfa_out;
    return false;
#endif
}

/* Frame 0's pc is in no module: most likely a call through a bad function
 * pointer, so the return address is the word at sp (x86-64) or in the link
 * register (aarch64).  Accepted only if it points into a module. */
static bool guess_step(walk *w, const fl_regs *cr, fl_regs *out, uint64_t *cfa_out)
{
#if defined(__x86_64__)
    if (!(cr->valid & (1ull << FL_REG_SP)))
        return false;
    uint64_t sp = cr->r[FL_REG_SP], ra;
    if (rd_u64(w, sp, &ra) != 0 || !find_module(w, ra))
        return false;
    *out = *cr;
    out->r[FL_REG_PC] = ra;
    out->r[FL_REG_SP] = sp + 8;
    out->valid |= (1ull << FL_REG_PC) | (1ull << FL_REG_SP);
    *cfa_out = sp + 8;
    return true;
#elif defined(__aarch64__)
    if (!(cr->valid & (1ull << FL_REG_LR)) || !find_module(w, cr->r[FL_REG_LR]))
        return false;
    *out = *cr;
    out->r[FL_REG_PC] = cr->r[FL_REG_LR];
    out->valid |= 1ull << FL_REG_PC;
    *cfa_out = cr->r[FL_REG_SP];
    return true;
#else
    (void)w, (void)cr, (void)out, (void)cfa_out;
    return false;
#endif
}

/* ------------------------------------------------------------------ */
/* The walk.                                                           */

size_t fl_unwind_ex(const fl_regs *start, const fl_unwind_module *mods, size_t nmods,
                    const fl_unwind_mem *mem, uint64_t *pcs, uint8_t *how, size_t max_frames)
{
    static const fl_unwind_mem safe_mem = {safe_read_cb, NULL};
    if (!start || !pcs || max_frames == 0 || !(start->valid & (1ull << FL_REG_PC)))
        return 0;
    uint64_t budget = WALK_BUDGET;
    walk w = {mem ? mem : &safe_mem, mods, nmods, 0, &budget};
    fl_regs regs = *start, next;
    size_t n = 0;
    pcs[n] = regs.r[FL_REG_PC];
    if (how)
        how[n] = FL_FRAME_CONTEXT;
    n++;
    bool exact = true; /* frame 0's pc is the faulting/current instruction */
    int signal_frames = 0;
    bool stayed = false; /* the last step kept the stack pointer */
#if FL_UNWIND_HAVE_CFI
    cie_cache cc;
    cc.ok = false;
    init_cache ic;
    ic.cie_addr = 0;
    hdr_cache hc = {NULL, 0, 0, 0, 0, 0};
#endif
    while (n < max_frames) {
        uint64_t pc = regs.r[FL_REG_PC];
        uint64_t lookup = exact || pc == 0 ? pc : pc - 1;
        uint64_t cfa = 0;
        bool is_signal = false, ok = false;
        uint8_t kind = FL_FRAME_CFI;
        const fl_unwind_module *m = find_module(&w, lookup);
#if FL_UNWIND_HAVE_CFI
        if (m && (m->eh_frame_hdr || m->eh_frame)) {
            step_result r = cfi_step(&w, m, &regs, lookup, &cc, &hc, &ic, &next, &cfa, &is_signal);
            if (r == STEP_END)
                break;
            ok = r == STEP_OK;
        }
#endif
        /* Frame 0 outside any object (a call through a bad pointer), or
         * where no CFI describes it (a call into an object's data): if a
         * call brought us there, its return address is on top of the
         * stack (x86-64) or in the link register (aarch64), untouched. */
        if (!ok && n == 1) {
            ok = guess_step(&w, &regs, &next, &cfa);
            kind = FL_FRAME_GUESS;
        }
        if (!ok) {
            ok = fp_step(&w, &regs, &next, &cfa);
            kind = FL_FRAME_FP;
        }
        if (!ok || next.r[FL_REG_PC] == 0)
            break;
        /* The stack grows down: each caller's frame lies above its callee's.
         * Only a signal frame may move to another stack (sigaltstack). */
        uint64_t sp = (regs.valid & (1ull << FL_REG_SP)) ? regs.r[FL_REG_SP] : 0;
        if (is_signal) {
            if (++signal_frames > MAX_SIGNAL_FRAMES)
                break;
        } else if (cfa < sp || (cfa == sp && (!CFA_MAY_STAY || stayed))) {
            break;
        }
        stayed = cfa == sp;
        regs = next;
        pcs[n] = regs.r[FL_REG_PC];
        if (how)
            how[n] = kind;
        n++;
        exact = is_signal;
    }
    return n;
}

size_t fl_unwind(const fl_regs *start, const fl_unwind_module *mods, size_t nmods, uint64_t *pcs,
                 size_t max_frames)
{
    return fl_unwind_ex(start, mods, nmods, NULL, pcs, NULL, max_frames);
}
