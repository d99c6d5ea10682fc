/*
 * fuzz_elfsym - the ELF/DWARF ingestion path (libelf + libdw + the
 * builder) on arbitrary bytes, and the reader on whatever it produces;
 * and the server's check of a split DWARF object (.dwo file: its DWO id).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fl_symcache.h"
#include "fl_symcheck.h"
#include "symcache_build_int.h"

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
        fl_symcache_close(sc);
    }
    free(out);
    char dwo[17];
    if (fl_symcheck_dwo_mem(data, size, dwo, sizeof dwo) == 1 && strlen(dwo) != 16)
        abort(); /* a DWO id is 16 hex digits */
    return 0;
}
