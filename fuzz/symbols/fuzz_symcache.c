/*
 * fuzz_symcache - the symcache reader on arbitrary bytes.
 *
 * Each input is tried twice: as is (exercises the header checks and the
 * checksum), and with the checksum recomputed so that mutations reach the
 * structural checks and the lookups behind them.  Lookups walk the whole
 * range table plus addresses taken from the input, plain and memoized.
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

static void exercise(const uint8_t *buf, size_t size)
{
    fl_symcache *sc = NULL;
    if (fl_symcache_open_mem(buf, size, &sc, NULL, 0) != 0)
        return;
    const uint8_t *id;
    (void)fl_symcache_build_id(sc, &id);
    lookups(sc, buf, size);
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
    if (size >= FL_SC_HEADER_SIZE) {
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
