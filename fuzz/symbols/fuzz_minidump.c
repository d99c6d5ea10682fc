/*
 * fuzz_minidump - `faultline minidump` (src/symbols/minidump.c) on
 * arbitrary bytes: the header, the stream directory and every stream it
 * reads (SystemInfo, ThreadList and the contexts, Exception, ModuleList
 * with its UTF-16 names and CodeView records, MemoryList, ThreadNameList,
 * MiscInfo, Breakpad's Linux text streams, CrashpadInfo and its
 * annotations), and libdwfl's unwinding from the dump's memory.
 * Minidumps come from other machines.  Each input goes through a memfd
 * (the reader takes a path); the log is written to a memory stream and,
 * when the reader says it succeeded, must be one the shared reader
 * accepts; fl_minidump_unwind (the server's unwind of a kept dump) must
 * read the same bytes alike.  The seeds are md_synth's (tests/minidump).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fl_crashlog.h"
#include "fl_minidump.h"

/* libdw 0.188 leaks 16 bytes of a thread's state when its unwind stops
 * early (as for fuzz_core): left to libdw, the rest is reported. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libdw.so\n";
}

static int no_module(void *ctx, const char *build_id, const char *dump_path, char *path, size_t cap)
{
    (void)ctx, (void)dump_path, (void)path, (void)cap;
    if (!build_id || !*build_id)
        abort(); /* asked only by a whole build id */
    return -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* libdwfl's build-id search would ask debuginfod. */
    unsetenv("DEBUGINFOD_URLS");
    int fd = memfd_create("fuzz-minidump", MFD_CLOEXEC);
    if (fd < 0)
        abort();
    if (size && write(fd, data, size) != (ssize_t)size)
        abort();
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out)
        abort();
    /* Fixed names and ids: nothing of the machine's in the log. */
    fl_minidump_opts o = {.crash_time = 1700000000,
                          .app_version = "1",
                          .crash_id = "00000000-0000-4000-8000-000000000000",
                          .unwind = true};
    char err[512];
    int rc = fl_minidump_to_crashlog(path, &o, out, NULL, err, sizeof err);
    fclose(out);
    close(fd);
    if (rc == FL_MINIDUMP_OK) {
        fl_crashlog *log = NULL;
        fl_crashlog_error e;
        if (fl_crashlog_parse(text, len, &log, &e) != 0) {
            fprintf(stderr, "fuzz_minidump: line %u: %s\n", e.line, e.message);
            abort(); /* a log it says it wrote must read back */
        }
        fl_crashlog_free(log);
    } else if (!err[0]) {
        abort(); /* a failure says why */
    }
    free(text);
    /* As the server's worker unwinds a kept dump: every thread, the
     * modules a pc or stack word reaches asked of the caller (here: none
     * found).  It reads the same dump: it succeeds exactly when the
     * conversion did, with the crashing thread's stack first. */
    fl_minidump_opts so = {.find_module = no_module};
    fl_minidump_stack *st = NULL;
    size_t n = 0;
    int urc = fl_minidump_unwind(data, size, &so, &st, &n, err, sizeof err);
    if ((urc == FL_MINIDUMP_OK) != (rc == FL_MINIDUMP_OK && size >= 32))
        abort();
    for (size_t i = 0; i < n; i++)
        if (!st[i].n)
            abort(); /* each keeps at least its pc */
    fl_minidump_stacks_free(st, n);
    return 0;
}
