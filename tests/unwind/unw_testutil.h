/*
 * unw_testutil.h - module table for the unwinder tests, built with
 * dl_iterate_phdr in normal context (as the client's module code does at
 * install time).  Header-only: each test program includes it once.
 */
#ifndef UNW_TESTUTIL_H
#define UNW_TESTUTIL_H

#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>

#include "fl_safemem.h"
#include "fl_unwind.h"

typedef enum unw_table_mode {
    UNW_TABLE_HDR = 0, /* normal: .eh_frame_hdr binary search */
    UNW_TABLE_SCAN,    /* no hdr, only .eh_frame: linear scan */
    UNW_TABLE_NONE,    /* no CFI at all: frame-pointer walk only */
} unw_table_mode;

typedef struct unw_fill {
    fl_unwind_module *mods;
    size_t n, max;
    unw_table_mode mode;
    int add_ranges;
} unw_fill;

/* .eh_frame's address from .eh_frame_hdr's eh_frame_ptr (normal context;
 * only the encodings linkers use: pcrel|sdata4 or datarel|sdata4). */
static inline uint64_t unw_eh_frame_from_hdr(uint64_t hdr)
{
    const unsigned char *h = (const unsigned char *)(uintptr_t)hdr;
    int32_t v;
    memcpy(&v, h + 4, 4);
    if (h[0] != 1)
        return 0;
    if (h[1] == 0x1b)
        return hdr + 4 + (uint64_t)(int64_t)v;
    if (h[1] == 0x3b)
        return hdr + (uint64_t)(int64_t)v;
    return 0;
}

static inline int unw_fill_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    unw_fill *f = data;
    uint64_t hdr = 0;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
            hdr = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type != PT_LOAD)
            continue;
        uint64_t lo = info->dlpi_addr + p->p_vaddr, hi = lo + p->p_memsz;
        if (f->add_ranges && (p->p_flags & PF_R))
            fl_safemem_add_range(lo & ~(uint64_t)4095, hi);
        if (!(p->p_flags & PF_X) || f->n >= f->max)
            continue;
        fl_unwind_module *m = &f->mods[f->n++];
        m->start = lo;
        m->end = hi;
        m->eh_frame_hdr = f->mode == UNW_TABLE_HDR ? hdr : 0;
        m->eh_frame = f->mode == UNW_TABLE_NONE || !hdr ? 0 : unw_eh_frame_from_hdr(hdr);
    }
    return 0;
}

/* Fills mods (up to max) for every loaded object; with add_ranges, also
 * registers every readable PT_LOAD with fl_safemem_add_range.  Returns the
 * number of modules. */
static inline size_t unw_fill_modules(fl_unwind_module *mods, size_t max, unw_table_mode mode,
                                      int add_ranges)
{
    unw_fill f = {mods, 0, max, mode, add_ranges};
    dl_iterate_phdr(unw_fill_cb, &f);
    return f.n;
}

#endif
