/*
 * cfi_image.h - builds synthetic .eh_frame_hdr + .eh_frame images in a
 * buffer that a fake memory reader maps at IMG_BASE, plus a fake stack at
 * STK_BASE.  Used by test_unwind (exact CFI semantics), the fuzz target's
 * input format and its seed generator.  Header-only, x86-64 DWARF numbers.
 */
#ifndef CFI_IMAGE_H
#define CFI_IMAGE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fl_unwind.h"

#define IMG_BASE 0x10000000ull /* .eh_frame_hdr at IMG_BASE, .eh_frame at +EHF_OFF */
#define EHF_OFF 0x100u
#define TEXT_BASE 0x10100000ull /* fake code addresses (no bytes behind them) */
#define STK_BASE 0x20000000ull
#define IMG_CAP 16384
#define STK_CAP 4096

typedef struct cfi_img {
    unsigned char b[IMG_CAP];
    size_t n; /* bytes used */
    struct {
        uint64_t pc, fde;
    } tab[64];
    size_t ntab;
} cfi_img;

typedef struct fake_mem {
    const unsigned char *img;
    size_t img_len;
    const unsigned char *stk;
    size_t stk_len;
} fake_mem;

static inline int fake_read(void *ctx, void *dst, uint64_t addr, size_t n)
{
    const fake_mem *m = ctx;
    if (addr >= IMG_BASE && addr - IMG_BASE <= m->img_len && n <= m->img_len - (addr - IMG_BASE)) {
        memcpy(dst, m->img + (addr - IMG_BASE), n);
        return 0;
    }
    if (addr >= STK_BASE && addr - STK_BASE <= m->stk_len && n <= m->stk_len - (addr - STK_BASE)) {
        memcpy(dst, m->stk + (addr - STK_BASE), n);
        return 0;
    }
    return -1;
}

static inline void ci_put(cfi_img *im, const void *p, size_t k)
{
    if (im->n + k <= IMG_CAP)
        memcpy(im->b + im->n, p, k);
    im->n += k;
}
static inline void ci_u8(cfi_img *im, uint8_t v)
{
    ci_put(im, &v, 1);
}
static inline void ci_u32(cfi_img *im, uint32_t v)
{
    ci_put(im, &v, 4);
}
static inline void ci_set32(cfi_img *im, size_t at, uint32_t v)
{
    if (at + 4 <= IMG_CAP)
        memcpy(im->b + at, &v, 4);
}
static inline void ci_uleb(cfi_img *im, uint64_t v)
{
    do {
        uint8_t b = v & 0x7f;
        v >>= 7;
        ci_u8(im, (uint8_t)(b | (v ? 0x80 : 0)));
    } while (v);
}
static inline void ci_sleb(cfi_img *im, int64_t v)
{
    for (;;) {
        uint8_t b = v & 0x7f;
        v >>= 7;
        if ((v == 0 && !(b & 0x40)) || (v == -1 && (b & 0x40))) {
            ci_u8(im, b);
            return;
        }
        ci_u8(im, b | 0x80);
    }
}

static inline void ci_init(cfi_img *im)
{
    memset(im, 0, sizeof *im);
    im->n = EHF_OFF;
}

/* A CIE with augmentation "zR" or "zRS" (signal), code align 1, data align
 * -8, RA column 16, FDE pointers pcrel|sdata4.  instr: initial
 * instructions.  Returns the CIE's offset. */
static inline size_t ci_cie(cfi_img *im, int signal, const unsigned char *instr, size_t ni)
{
    size_t at = im->n;
    ci_u32(im, 0); /* length, patched */
    ci_u32(im, 0); /* CIE id */
    ci_u8(im, 1);  /* version */
    ci_put(im, signal ? "zRS" : "zR", signal ? 4 : 3);
    ci_uleb(im, 1);
    ci_sleb(im, -8);
    ci_u8(im, 16);
    ci_uleb(im, 1);
    ci_u8(im, 0x1b);
    ci_put(im, instr, ni);
    while ((im->n - at) % 8)
        ci_u8(im, 0);
    ci_set32(im, at, (uint32_t)(im->n - at - 4));
    return at;
}

/* The standard x86-64 CIE instructions: CFA = rsp+8, RA at CFA-8. */
static const unsigned char ci_x86_init[] = {0x0c, 7, 8, 0x90, 1};

static inline size_t ci_fde(cfi_img *im, size_t cie_at, uint64_t pc, uint32_t range,
                            const unsigned char *instr, size_t ni)
{
    size_t at = im->n;
    ci_u32(im, 0);
    ci_u32(im, (uint32_t)(im->n - cie_at)); /* CIE pointer: back from this field */
    uint64_t field = IMG_BASE + im->n;
    ci_u32(im, (uint32_t)(int32_t)(int64_t)(pc - field));
    ci_u32(im, range);
    ci_uleb(im, 0); /* augmentation data length */
    ci_put(im, instr, ni);
    while ((im->n - at) % 8)
        ci_u8(im, 0);
    ci_set32(im, at, (uint32_t)(im->n - at - 4));
    if (im->ntab < 64) {
        im->tab[im->ntab].pc = pc;
        im->tab[im->ntab].fde = IMG_BASE + at;
        im->ntab++;
    }
    return at;
}

/* Terminates .eh_frame and writes .eh_frame_hdr (table sorted by pc, the
 * FDEs must have been added in pc order). */
static inline void ci_finish(cfi_img *im)
{
    ci_u32(im, 0); /* terminator */
    unsigned char *h = im->b;
    h[0] = 1;
    h[1] = 0x1b; /* eh_frame_ptr: pcrel sdata4 */
    h[2] = 0x03; /* fde_count: udata4 */
    h[3] = 0x3b; /* table: datarel sdata4 */
    int32_t ef = (int32_t)(EHF_OFF - 4);
    memcpy(h + 4, &ef, 4);
    uint32_t cnt = (uint32_t)im->ntab;
    memcpy(h + 8, &cnt, 4);
    for (size_t i = 0; i < im->ntab && 12 + 8 * i + 8 <= EHF_OFF; i++) {
        int32_t a = (int32_t)(im->tab[i].pc - IMG_BASE), b = (int32_t)(im->tab[i].fde - IMG_BASE);
        memcpy(h + 12 + 8 * i, &a, 4);
        memcpy(h + 16 + 8 * i, &b, 4);
    }
}

/* ---- The canonical scenario (used by test_unwind and as fuzz seeds) ---- */

#define F1 (TEXT_BASE + 0x100) /* rbp frame with remember/restore state */
#define F2 (TEXT_BASE + 0x200) /* PLT-style CFA expression, RA by expression */
#define F3 (TEXT_BASE + 0x300) /* signal frame: "zRS" */
#define F4 (TEXT_BASE + 0x400) /* outermost: RA undefined */

static inline void ci_build_scenario(cfi_img *im)
{
    ci_init(im);
    size_t cie = ci_cie(im, 0, ci_x86_init, sizeof ci_x86_init);
    size_t cie_s = ci_cie(im, 1, ci_x86_init, sizeof ci_x86_init);
    /* F1: push rbp (+1): CFA=rsp+16, rbp at CFA-16; mov rsp,rbp (+4): CFA=rbp+16;
     * remember; +0x60: CFA=rsp+8 (epilogue); restore at +0x61 (back to rbp). */
    static const unsigned char f1[] = {0x41, 0x0e, 16,   0x86, 2, 0x43, 0x0d, 6,
                                       0x0a, 0x02, 0x5b, 0x0c, 7, 8,    0x41, 0x0b};
    ci_fde(im, cie, F1, 0x100, f1, sizeof f1);
    /* F2: CFA = rsp + 8 + ((rip & 15) >= 11) << 3 (the PLT expression);
     * RA by DW_CFA_expression: [CFA - 8]; rbx val_offset CFA-16; r12 = r13. */
    static const unsigned char f2[] = {0x0f, 11,   0x77, 8,    0x80, 0,    0x3f, 0x1a,
                                       0x3b, 0x2a, 0x33, 0x24, 0x22, 0x10, 16,   2,
                                       0x38, 0x1c, 0x14, 3,    2,    0x09, 12,   13};
    ci_fde(im, cie, F2, 0x100, f2, sizeof f2);
    /* F3 (signal frame): CFA = rsp+64, RA at CFA-8, rbp at CFA-16. */
    static const unsigned char f3[] = {0x0e, 64, 0x86, 2};
    ci_fde(im, cie_s, F3, 0x100, f3, sizeof f3);
    /* F4: the RA is undefined: the outermost frame. */
    static const unsigned char f4[] = {0x07, 16};
    ci_fde(im, cie, F4, 0x100, f4, sizeof f4);
    ci_finish(im);
}

/* Fills stk (STK_CAP bytes) and regs for the scenario: frame 0 at F1+0x50
 * with rbp frame; F2 called it; F3 (signal frame) interrupted F2; F4 is
 * the interrupted code (pc exactly at F4's first byte, so a pc-1 lookup
 * would wrongly land in F3).  Returns the expected pcs in want[0..4). */
static inline void ci_scenario_stack(unsigned char *stk, fl_regs *regs, uint64_t want[4])
{
    memset(stk, 0, STK_CAP);
    memset(regs, 0, sizeof *regs);
    uint64_t w;
    /* Frame 0 (F1): rsp = S+0x00, rbp = S+0x20: [rbp]=saved rbp, [rbp+8]=RA. */
    uint64_t S = STK_BASE;
    w = S + 0x200;
    memcpy(stk + 0x20, &w, 8); /* caller's rbp */
    w = F2 + 0x1c;             /* RA into F2; (rip & 15) = 12 >= 11 -> CFA + 8 */
    memcpy(stk + 0x28, &w, 8);
    /* F2: rsp = S+0x30, CFA = rsp+16 = S+0x40, RA at S+0x38. */
    w = F3 + 0x10;
    memcpy(stk + 0x38, &w, 8);
    /* F3 (signal): rsp = S+0x40, CFA = S+0x80, RA at S+0x78, rbp at S+0x70. */
    w = S + 0x300;
    memcpy(stk + 0x70, &w, 8);
    w = F4;
    memcpy(stk + 0x78, &w, 8);
    regs->r[7] = S;
    regs->r[6] = S + 0x20;
    regs->r[13] = 0x1313;
    regs->r[16] = F1 + 0x50;
    regs->valid = (1ull << 17) - 1;
    want[0] = F1 + 0x50;
    want[1] = F2 + 0x1c;
    want[2] = F3 + 0x10;
    want[3] = F4;
}

#endif
