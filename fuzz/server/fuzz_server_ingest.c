/*
 * fuzz_server_ingest - what the server does with untrusted bytes after the
 * HTTP layer: gzip decoding with its caps (when the input starts with the
 * gzip magic), then the worker's whole processing (parse, frames,
 * signature, processed JSON, zstd) and a version comparison.  Input that
 * starts with the zstd magic goes to fl_unzstd instead (a raw-log chunk
 * is one or more frames, read back from the database): it must refuse or
 * decode within its limit, and a decoded chunk goes on to processing.
 *
 * Names: a symbolizer that takes them from the log, so that mutations
 * reach what the worker does with the names debug files give (clone
 * suffixes, symbol versions, the C++ runtime's and the C library's frames,
 * main): an OBJECT_PATH holding '|' is that module's frames for every
 * address, innermost first; one starting with '-' is a module without
 * symbols; any other is unknown.
 *
 * Formats kept apart (TRACE_ID events): an object whose OBJECT_PATH holds
 * "fmt=" has a .debug_faultline_trace section with one site, at address
 * 0x1000 of its file, whose format is the rest of the path; the others
 * have none.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl_group.h"
#include "fl_serve.h"
#include "fl_srvutil.h"
#include "fl_tracesec.h"

static int names_from_log(void *ctx, const char *module, const char *build_id, uint64_t rel,
                          fl_sym_frame *out, size_t cap)
{
    (void)ctx;
    if (module[0] == '-')
        return -1;
    if (!strchr(module, '|'))
        return 0;
    size_t n = 0;
    for (const char *p = module; *p && n < cap; n++) {
        size_t l = strcspn(p, "|");
        fl_sym_frame *f = &out[n];
        snprintf(f->function, sizeof f->function, "%.*s", (int)l, p);
        snprintf(f->file, sizeof f->file, "%s", build_id ? build_id : "");
        f->line = (unsigned)(rel & 0xffff);
        f->column = (unsigned)n;
        p += l + (p[l] == '|');
        f->inlined = *p != '\0';
    }
    return (int)n;
}

static int formats_from_log(void *ctx, const char *build_id, const char *path,
                            struct fl_tracesec **out)
{
    (void)ctx, (void)build_id;
    const char *f = path ? strstr(path, "fmt=") : NULL;
    if (!f)
        return 0;
    f += 4;
    size_t n = strlen(f);
    char *sec = malloc(8 + n + 3);
    if (!sec)
        return 0;
    memcpy(sec, "\x00\x10\0\0\0\0\0\0", 8);
    memcpy(sec + 8, f, n + 1);
    memcpy(sec + 8 + n + 1, "f", 2); /* the file */
    char err[160];
    int rc = fl_tracesec_parse(sec, 8 + n + 3, out, err, sizeof err) == 0;
    free(sec);
    return rc;
}

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
    } else if (size >= 4 && !memcmp(data, "\x28\xb5\x2f\xfd", 4)) {
        if (fl_unzstd(data, size, 1u << 20, &decoded, &len))
            return 0;
        if (len > 1u << 20 || decoded[len] != '\0')
            abort();
        text = decoded;
    }
    fl_workers_config c = {
        .rules = rules, .symbolize = names_from_log, .trace_formats = formats_from_log};
    fl_processed_buf b;
    if (fl_process_log("fuzz", NULL, text, len, NULL, 0, 0, &c, &b) == 0) {
        (void)fl_vercmp(b.p.version, "1.10.0-rc1");
        fl_processed_release(&b);
    }
    free(decoded);
    return 0;
}
