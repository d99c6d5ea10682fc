/*
 * fuzz_core - `faultline core` (src/symbols/core.c) on arbitrary bytes:
 * the ELF header, program headers and notes of a core file (NT_PRSTATUS,
 * NT_SIGINFO, NT_AUXV, NT_FILE) and libdwfl's reading of it.  Under
 * --from-kernel the core comes from whatever crashed on the machine.
 * Each input goes through a memfd (the reader takes a path); the log is
 * written to a memory stream and, when the reader says it succeeded, must
 * be one the shared reader accepts.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fl_core.h"
#include "fl_crashlog.h"

/* libdw 0.188 leaks 16 bytes of a thread's state when its unwind stops
 * early (dwfl_getthreads; see core.c's unwind_threads): LeakSanitizer, when
 * it runs, leaves that one to libdw and reports the rest. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libdw.so\n";
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* libdwfl's standard debuginfo search would ask debuginfod. */
    unsetenv("DEBUGINFOD_URLS");
    int fd = memfd_create("fuzz-core", MFD_CLOEXEC);
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
    fl_core_opts o = {.crash_time = 1700000000,
                      .app = "fuzz",
                      .app_version = "1",
                      .crash_id = "00000000-0000-4000-8000-000000000000"};
    char err[512];
    int rc = fl_core_to_crashlog(path, &o, out, NULL, err, sizeof err);
    fclose(out);
    close(fd);
    if (rc == FL_CORE_OK) {
        fl_crashlog *log = NULL;
        fl_crashlog_error e;
        if (fl_crashlog_parse(text, len, &log, &e) != 0)
            abort(); /* a log it says it wrote must read back */
        fl_crashlog_free(log);
    } else if (!err[0]) {
        abort(); /* a failure says why */
    }
    free(text);
    return 0;
}
