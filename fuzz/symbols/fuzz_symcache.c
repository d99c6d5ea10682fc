/*
 * fuzz_symcache - the symcache reader on arbitrary bytes.
 *
 * Each input is tried twice: as is (exercises the header checks and the
 * checksum), and with the checksum recomputed so that mutations reach the
 * structural checks and the lookups behind them.  Lookups walk the whole
 * range table plus addresses taken from the input, plain and memoized,
 * each with the symbol covering it (fl_symcache_symbol_at); call-site
 * queries (version 4) take every address the call tables hold (version
 * 5's packed xcalls[] too) and addresses from the input, the symbols
 * covering their targets, and the symbols their names name.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fl_symcache.h"
#include "symcache_format.h"

static void lookups(const fl_symcache *sc, const uint8_t *buf, size_t size)
{
    fl_symframe f[32];
    fl_sc_header h;
    memcpy(&h, buf, sizeof h);
    for (size_t i = 0; i + 8 <= size && i < 4096; i += 4) {
        uint64_t a;
        memcpy(&a, buf + i, 8);
        /* Odd steps: a small offset from the lowest address, so lookups
         * land in the range table and not just anywhere in 2^64. */
        if (i % 8)
            a = h.base_addr + (a & 0xFFFF);
        /* (The reader does not check that symbol addresses are sorted:
         * in a damaged file the answer may be any symbol's, never a read
         * outside the file.) */
        uint64_t sym = fl_symcache_symbol_at(sc, a);
        if (sym != FL_SYMCALL_NONE)
            (void)fl_symcache_symbol_at(sc, sym);
        size_t n = fl_symcache_lookup(sc, a, f, 32);
        for (size_t k = 0; k < n && k < 32; k++) {
            /* Touch every string so ASan sees any out-of-bounds pointer. */
            if (f[k].function)
                (void)strlen(f[k].function);
            if (f[k].file)
                (void)strlen(f[k].file);
        }
    }
}

static void touch_calls(const fl_symcache *sc, const fl_symcall *c, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        if (c[k].target_name) {
            (void)strlen(c[k].target_name);
            /* What a server looks another module's function up by. */
            (void)fl_symcache_symbol_named(sc, c[k].target_name);
        }
        /* What a server compares a target with. */
        if (c[k].target != FL_SYMCALL_NONE)
            (void)fl_symcache_symbol_at(sc, c[k].target);
    }
}

/* Both call queries at addr and around it. */
static void call_queries(const fl_symcache *sc, uint64_t addr)
{
    fl_symcall c[8];
    for (uint64_t a = addr - 1; a != addr + 2; a++) {
        if (fl_symcache_call_at(sc, a, c))
            touch_calls(sc, c, 1);
        size_t n = fl_symcache_tail_calls(sc, a, c, 8);
        touch_calls(sc, c, n < 8 ? n : 8);
    }
}

/* The call tables' own addresses (when the header says where they are:
 * the reader has checked them by now), then addresses from the input. */
static void calls(const fl_symcache *sc, const uint8_t *buf, size_t size)
{
    (void)fl_symcache_has_calls(sc);
    fl_sc_header4 x;
    memset(&x, 0, sizeof x);
    memcpy(&x, buf, size < sizeof x ? size : sizeof x);
    if (x.base.version >= 4 && size >= sizeof x) {
        for (uint64_t i = 0; i < x.calls_count && i < 1024; i++) {
            uint32_t rel;
            memcpy(&rel, buf + x.calls_off + i * FL_SC_CALL_SIZE, 4);
            call_queries(sc, x.base.base_addr + rel);
        }
        /* xcalls[]: the packed sites, in bits as the header says. */
        uint64_t bits = (uint64_t)x.xcall_w[FL_SC_X_SITE] + x.xcall_w[FL_SC_X_NAME];
        for (uint64_t i = 0; x.base.version >= 5 && i < x.xcalls_count && i < 1024; i++) {
            uint64_t rel = 0, pos = i * bits;
            for (unsigned k = 0; k < x.xcall_w[FL_SC_X_SITE] && k < 32; k++, pos++)
                rel |= (uint64_t)((buf[x.xcalls_off + (pos >> 3)] >> (pos & 7)) & 1u) << k;
            call_queries(sc, x.base.base_addr + rel);
        }
        for (uint64_t i = 0; i < x.tails_count && i < 1024; i++) {
            uint32_t rel[2];
            memcpy(rel, buf + x.tails_off + i * FL_SC_TAIL_SIZE, 8);
            call_queries(sc, x.base.base_addr + rel[0]);
            call_queries(sc, x.base.base_addr + rel[1]);
        }
    }
    for (size_t i = 0; i + 8 <= size && i < 1024; i += 8) {
        uint64_t a;
        memcpy(&a, buf + i, 8);
        call_queries(sc, a);
        call_queries(sc, x.base.base_addr + (a & 0xFFFF));
    }
}

static void exercise(const uint8_t *buf, size_t size)
{
    fl_symcache *sc = NULL;
    if (fl_symcache_open_mem(buf, size, &sc, NULL, 0) != 0)
        return;
    const uint8_t *id;
    (void)fl_symcache_build_id(sc, &id);
    lookups(sc, buf, size);
    calls(sc, buf, size);
    /* Memoized, three passes: the first marks blocks seen, the second
     * fills them, the third reads the memo. */
    if (fl_symcache_memoize(sc) == 0)
        for (int pass = 0; pass < 3; pass++)
            lookups(sc, buf, size);
    fl_symcache_close(sc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The reader wants 8-byte alignment, as an mmap gives it. */
    uint64_t *buf = malloc(size + 8);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    exercise((const uint8_t *)buf, size);
    if (size >= FL_SC_HEADER3_SIZE) {
        fl_sc_header h;
        memcpy(&h, buf, sizeof h);
        h.checksum = 0;
        memcpy(buf, &h, sizeof h);
        h.checksum = fl_sc_file_checksum((const uint8_t *)buf, size);
        memcpy(buf, &h, sizeof h);
        exercise((const uint8_t *)buf, size);
    }
    free(buf);
    return 0;
}
