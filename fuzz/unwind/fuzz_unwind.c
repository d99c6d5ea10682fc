/*
 * fuzz_unwind.c - fuzz target for the CFI parser and unwinder: arbitrary
 * bytes become a fake .eh_frame_hdr + .eh_frame image and a fake stack,
 * read through a memory reader over the input (format in fuzz_unwind.h).
 * The walk must never crash, hang or read outside the input.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cfi_image.h"
#include "fl_unwind.h"
#include "fuzz_unwind.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint16_t u16at(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < FUZZ_UNWIND_HDR)
        return 0;
    size_t rest = size - FUZZ_UNWIND_HDR;
    size_t slen = u16at(data + 4);
    if (slen > STK_CAP)
        slen = STK_CAP;
    if (slen > rest)
        slen = rest;
    size_t ilen = rest - slen;
    if (ilen > IMG_CAP)
        ilen = IMG_CAP;
    fake_mem fm = {data + FUZZ_UNWIND_HDR + slen, ilen, data + FUZZ_UNWIND_HDR, slen};
    fl_unwind_mem mem = {fake_read, &fm};

    fl_regs regs;
    memset(&regs, 0, sizeof regs);
    for (int i = 0; i < FL_REGS_N; i++)
        regs.r[i] = STK_BASE + 8u * (unsigned)i; /* plausible values for expressions */
    regs.r[FL_REG_SP] = STK_BASE + u16at(data + 6);
    regs.r[FL_REG_FP] = STK_BASE + u16at(data + 8);
    regs.r[FL_REG_PC] = TEXT_BASE + u16at(data);
    regs.valid = (1ull << FL_REGS_N) - 1;

    fl_unwind_module m = {TEXT_BASE - 0x1000000, TEXT_BASE + 0x1000000, IMG_BASE, 0};
    if (data[2] & FUZZ_UNWIND_NOHDR) {
        m.eh_frame_hdr = 0;
        m.eh_frame = IMG_BASE + EHF_OFF;
    }
    uint64_t pcs[64];
    uint8_t how[64];
    size_t n = fl_unwind_ex(&regs, &m, 1, &mem, pcs, how, 64);
    if (n < 1 || n > 64)
        __builtin_trap();
    return 0;
}
