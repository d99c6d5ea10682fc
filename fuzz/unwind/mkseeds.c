/*
 * mkseeds.c - writes the seed corpus of fuzz_unwind (fuzz/corpus/unwind):
 * the synthetic scenario of tests/unwind/cfi_image.h with .eh_frame_hdr and
 * with the linear scan, starting in each function, plus one image using
 * the rarer CFA opcodes.  Run by hand: mkseeds DIR.
 */
#include <stdio.h>
#include <string.h>

#include "cfi_image.h"
#include "fuzz_unwind.h"

static cfi_img img;
static unsigned char stk[STK_CAP];
static unsigned char out[FUZZ_UNWIND_HDR + STK_CAP + IMG_CAP];

static int write_seed(const char *dir, const char *name, uint16_t pc_off, int flags, uint16_t rsp,
                      uint16_t rbp, size_t slen)
{
    memset(out, 0, FUZZ_UNWIND_HDR);
    out[0] = pc_off & 0xff, out[1] = (unsigned char)(pc_off >> 8);
    out[2] = (unsigned char)flags;
    out[4] = slen & 0xff, out[5] = (unsigned char)(slen >> 8);
    out[6] = rsp & 0xff, out[7] = (unsigned char)(rsp >> 8);
    out[8] = rbp & 0xff, out[9] = (unsigned char)(rbp >> 8);
    memcpy(out + FUZZ_UNWIND_HDR, stk, slen);
    memcpy(out + FUZZ_UNWIND_HDR + slen, img.b, img.n);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return 1;
    fwrite(out, 1, FUZZ_UNWIND_HDR + slen + img.n, f);
    return fclose(f) != 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: mkseeds DIR\n");
        return 2;
    }
    fl_regs regs;
    uint64_t want[4];
    int bad = 0;
    ci_build_scenario(&img);
    ci_scenario_stack(stk, &regs, want);
    /* The scenario stack only uses its first 0x100 bytes. */
    bad |= write_seed(argv[1], "scenario_hdr", 0x150, 0, 0, 0x20, 0x100);
    bad |= write_seed(argv[1], "scenario_scan", 0x150, FUZZ_UNWIND_NOHDR, 0, 0x20, 0x100);
    bad |= write_seed(argv[1], "scenario_f2", 0x21b, 0, 0x30, 0x20, 0x100);
    bad |= write_seed(argv[1], "scenario_f3", 0x30f, 0, 0x40, 0x20, 0x100);

    /* Rarer opcodes: set_loc, advance_loc2/4, offset_extended(_sf),
     * restore(_extended), same_value, undefined, def_cfa_sf,
     * def_cfa_offset_sf, val_offset_sf, val_expression, GNU_args_size,
     * negative_offset_extended, and an expression with bra/skip/pick. */
    ci_init(&img);
    size_t cie = ci_cie(&img, 0, ci_x86_init, sizeof ci_x86_init);
    /* clang-format off */
    static const unsigned char f[] = {
        0x03, 0x02, 0x00,       /* advance_loc2 2 */
        0x05, 3, 2,             /* offset_extended rbx, 2 */
        0x11, 12, 0x7d,         /* offset_extended_sf r12, -3 */
        0x04, 0x02, 0, 0, 0,    /* advance_loc4 2 */
        0x12, 7, 0x7e,          /* def_cfa_sf rsp, -2 (*-8 = 16) */
        0x13, 0x7c,             /* def_cfa_offset_sf -4 (= 32) */
        0x15, 14, 0x7f,         /* val_offset_sf r14, -1 */
        0x2e, 16,               /* GNU_args_size 16 */
        0x2f, 15, 3,            /* GNU_negative_offset_extended r15, 3 */
        0x08, 13,               /* same_value r13 */
        0x07, 11,               /* undefined r11 */
        0xc3,                   /* restore rbx */
        0x06, 12,               /* restore_extended r12 */
        0x16, 10, 12,           /* val_expression r10 len 12: */
        0x31, 0x28, 0x03, 0x00, /*   lit1 bra +3 */
        0x32, 0x2f, 0x01, 0x00, /*   lit2 skip +1 */
        0x96, 0x15, 0x00, 0x22, /*   nop pick 0 plus */
        0x41,                   /* advance_loc 1 */
        0x0e, 8,                /* def_cfa_offset 8 */
    };
    /* clang-format on */
    ci_fde(&img, cie, TEXT_BASE + 0x100, 0x100, f, sizeof f);
    ci_finish(&img);
    memset(stk, 0, sizeof stk);
    uint64_t ra = TEXT_BASE + 0x180;
    memcpy(stk + 0x18, &ra, 8);
    bad |= write_seed(argv[1], "opcodes", 0x104, 0, 0, 0x20, 0x100);
    bad |= write_seed(argv[1], "opcodes_scan", 0x106, FUZZ_UNWIND_NOHDR, 0, 0x20, 0x100);
    return bad;
}
