/*
 * fuzz_elfsym - the ELF/DWARF ingestion path (libelf + libdw + the
 * builder) on arbitrary bytes, and the reader on whatever it produces;
 * the server's check of a split DWARF object (.dwo file: its DWO id); and
 * a .dwp package's unit index and each unit's parts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fl_symcache.h"
#include "fl_symcheck.h"
#include "fl_symdwp.h"
#include "symcache_build_int.h"

static volatile unsigned sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    void *out = NULL;
    size_t outlen = 0;
    if (fl_symcache_build_mem(data, size, &out, &outlen, NULL, NULL, 0) == 0) {
        fl_symcache *sc = NULL;
        if (fl_symcache_open_mem(out, outlen, &sc, NULL, 0) != 0)
            abort(); /* the builder must only write valid symcaches */
        fl_symframe f[16];
        for (uint64_t a = 0; a < 0x3000; a += 5)
            fl_symcache_lookup(sc, a, f, 16);
        /* Call sites of damaged DWARF: every address, both queries. */
        fl_symcall c[4];
        for (uint64_t a = 0; a < 0x3000; a++) {
            if (fl_symcache_call_at(sc, a, c) && c[0].target_name)
                (void)strlen(c[0].target_name);
            size_t n = fl_symcache_tail_calls(sc, a, c, 4);
            for (size_t k = 0; k < n && k < 4; k++)
                if (c[k].target_name)
                    (void)strlen(c[k].target_name);
        }
        fl_symcache_close(sc);
    }
    free(out);
    char dwo[17];
    if (fl_symcheck_dwo_mem(data, size, dwo, sizeof dwo) == 1 && strlen(dwo) != 16)
        abort(); /* a DWO id is 16 hex digits */
    fl_dwp *pkg = NULL;
    if (fl_dwp_open_mem(data, size, &pkg, NULL, 0) == 1) {
        /* Every part it hands out is read whole: out of its section,
         * ASan says so. */
        unsigned sum = 0;
        for (size_t i = 0; i < fl_dwp_count(pkg) && i < 64; i++) {
            fl_dwp_section s[FL_DWP_MAX_SECTIONS];
            int n = fl_dwp_unit(pkg, fl_dwp_id(pkg, i), s, FL_DWP_MAX_SECTIONS);
            if (n < 0)
                abort(); /* an id it lists is one it holds */
            for (int k = 0; k < n; k++)
                for (size_t b = 0; b < s[k].size; b++)
                    sum += s[k].data[b];
            /* And its own strings, as written into its .dwo. */
            void *buf = NULL;
            if (fl_dwp_unit_strings(pkg, s, n, &buf, NULL, 0) == 0)
                for (int k = 0; k < n; k++)
                    for (size_t b = 0; b < s[k].size; b++)
                        sum += s[k].data[b];
            free(buf);
        }
        fl_dwp_close(pkg);
        sink = sum;
    }
    fl_dwp_index ix;
    if (fl_dwp_index_parse(data, size, false, &ix, NULL, 0) == 0)
        fl_dwp_index_free(&ix); /* the index alone, from the first byte */
    return 0;
}
