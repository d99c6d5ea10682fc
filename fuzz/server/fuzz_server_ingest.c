/*
 * fuzz_server_ingest - what the server does with untrusted bytes after the
 * HTTP layer: gzip decoding with its caps (when the input starts with the
 * gzip magic), then the worker's whole processing (parse, frames,
 * signature, processed JSON, zstd) and a version comparison.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fl_group.h"
#include "fl_serve.h"
#include "fl_srvutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fl_group_rules *rules;
    if (!rules && !(rules = fl_group_rules_new()))
        return 0;
    char *decoded = NULL;
    const char *text = (const char *)data;
    size_t len = size;
    if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
        if (fl_gunzip(data, size, 1u << 20, 100, &decoded, &len) != FL_GZ_OK)
            return 0;
        text = decoded;
    }
    fl_workers_config c = {.rules = rules};
    fl_processed_buf b;
    if (fl_process_log("fuzz", text, len, 0, &c, &b) == 0) {
        (void)fl_vercmp(b.p.version, "1.10.0-rc1");
        fl_processed_release(&b);
    }
    free(decoded);
    return 0;
}
