/*
 * core_check LOG - parse a crash log with the shared reader
 * (fl_crashlog_parse_file) and print what the `faultline core` tests
 * check, one fact a line, so that the shell test compares the reader's
 * view of the log and not its text:
 *   signal N NAME / code N / address HEX / pid N / crash_thread N
 *   app NAME / version V / arch A / crash_id ID / install_id ID / exe PATH
 *   reg NAME HEX            (every REGISTER)
 *   frame HEX               (CALLSTACK, innermost first)
 *   object NAME BIAS BUILD_ID PATH   (BIAS "-" when absent, "-" for absent strings)
 *   stack FIRST_ADDR BYTES  (the STACK chunks: the lowest address, their total)
 *   thread TID NAME / tframe HEX   (other threads and their frames)
 *   time N / thread_name NAME       (CRASH_TIME, CRASH_THREAD_NAME)
 *   other KEY VALUE         (fields the reader keeps as unknown)
 * Exit 1 when the reader rejects the log (its message on stderr).
 */
#include <inttypes.h>
#include <stdio.h>

#include "fl_crashlog.h"

static const char *s(const char *v)
{
    return v && *v ? v : "-";
}

int main(int argc, char **argv)
{
    fl_crashlog *log;
    fl_crashlog_error err;
    if (argc != 2) {
        fprintf(stderr, "usage: core_check LOG\n");
        return 2;
    }
    if (fl_crashlog_parse_file(argv[1], &log, &err) != 0) {
        fprintf(stderr, "core_check: %s: line %u: %s\n", argv[1], err.line, err.message);
        return 1;
    }
    printf("signal %d %s\n", log->has_crash_signal ? log->crash_signal : -1, s(log->signal_name));
    if (log->has_crash_code)
        printf("code %" PRId64 "\n", log->crash_code);
    if (log->has_crash_address)
        printf("address 0x%" PRIx64 "\n", log->crash_address);
    if (log->has_pid)
        printf("pid %" PRIu64 "\n", log->pid);
    if (log->has_crash_tid)
        printf("crash_thread %" PRIu64 "\n", log->crash_tid);
    if (log->has_crash_time)
        printf("time %" PRId64 "\n", log->crash_time);
    if (log->has_uptime)
        printf("uptime %" PRId64 "\n", log->uptime);
    printf("thread_name %s\n", s(log->crash_thread_name));
    printf("app %s\nversion %s\narch %s\ncrash_id %s\ninstall_id %s\nexe %s\n", s(log->app_name),
           s(log->app_version), s(log->cpuarch), s(log->crash_id), s(log->install_id),
           s(log->executable));
    for (size_t i = 0; i < log->nregisters; i++)
        printf("reg %s 0x%" PRIx64 "\n", log->registers[i].name, log->registers[i].value);
    for (size_t i = 0; i < log->ncallstack; i++)
        printf("frame 0x%" PRIx64 "\n", log->callstack[i]);
    for (size_t i = 0; i < log->nobjects; i++) {
        const fl_object *o = &log->objects[i];
        if (o->has_bias)
            printf("object %s 0x%" PRIx64 " %s %s\n", s(o->name), o->bias, s(o->build_id),
                   s(o->path));
        else
            printf("object %s - %s %s\n", s(o->name), s(o->build_id), s(o->path));
    }
    if (log->nstack) {
        uint64_t lo = log->stack[0].addr;
        size_t total = 0;
        for (size_t i = 0; i < log->nstack; i++) {
            if (log->stack[i].addr < lo)
                lo = log->stack[i].addr;
            total += log->stack[i].len;
        }
        printf("stack 0x%" PRIx64 " %zu\n", lo, total);
    }
    for (size_t i = 0; i < log->nthreads; i++) {
        printf("thread %" PRIu64 " %s\n", log->threads[i].tid, s(log->threads[i].name));
        for (size_t k = 0; k < log->threads[i].nframes; k++)
            printf("tframe 0x%" PRIx64 "\n", log->threads[i].frames[k]);
    }
    for (size_t i = 0; i < log->nunknown; i++)
        printf("other %s %s\n", log->unknown[i].key, s(log->unknown[i].value));
    fl_crashlog_free(log);
    return 0;
}
