/* Fuzz target: the crash-log reader must accept or reject any input with a
 * reason, never crash, and a log it accepts must be self-consistent.
 * fl_crashlog_check() (what the server's ingest runs) must give the same
 * verdict and error, and the same header fields.  A log's TRACE_ID events
 * are formatted (with every conversion against their hostile slots and
 * bytes), and the input is read as a .debug_faultline_trace section too
 * (an uploaded debug file's): accepted with its sites found, or refused
 * with a reason. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fl_crashlog.h"
#include "fl_tracesec.h"

static void section(const uint8_t *data, size_t size)
{
    fl_tracesec *ts = NULL;
    char err[160] = "";
    if (fl_tracesec_parse(data, size, &ts, err, sizeof err)) {
        if (ts || !err[0])
            abort();
        return;
    }
    /* The first entry's site is there, with its format and file. */
    uint64_t site = 0;
    for (int i = 7; i >= 0; i--)
        site = site << 8 | data[i];
    const char *file = NULL, *fmt = fl_tracesec_find(ts, site, &file);
    if (!fmt || !file || !fl_tracesec_count(ts) || fl_tracesec_count(ts) > size / 10)
        abort();
    (void)strlen(fmt), (void)strlen(file);
    fl_tracesec_free(ts);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fl_crashlog *log = NULL;
    fl_crashlog_error err;
    int rc = fl_crashlog_parse((const char *)data, size, &log, &err);
    if (rc == 0) {
        if (!log || !log->app_name || !log->producer || log->log_version < 1)
            abort();
        for (size_t i = 0; i < log->nobjects; i++)
            if (!log->objects[i].name)
                abort();
        for (size_t i = 0; i < log->netc; i++)
            (void)strlen(log->etc[i].key), (void)strlen(log->etc[i].value);
        (void)fl_crashlog_etc(log, "x");
        for (size_t i = 0; i < log->ntrace; i++) {
            const fl_trace_event *e = &log->trace[i];
            if (!e->apart ? !e->text
                          : e->text || strlen(e->types) > 8 || e->nbytes > FL_TRACE_BYTES_MAX)
                abort();
            if (!e->apart)
                continue;
            char text[512];
            uint64_t vaddr;
            (void)fl_crashlog_object_at(log, e->site, &vaddr);
            size_t n = fl_trace_event_text(e, "%s|%d|%-9.3s|%g|%p|%c|%lld|%.20Lf %s %s %s %n %%",
                                           text, sizeof text);
            if (n >= sizeof text || strlen(text) != n)
                abort();
        }
    } else {
        if (log || err.message[0] == '\0')
            abort();
    }
    fl_crashlog *chk = NULL;
    fl_crashlog_error cerr;
    if (fl_crashlog_check((const char *)data, size, &chk, &cerr) != rc)
        abort();
    if (rc == 0) {
        if (!chk || strcmp(chk->app_name, log->app_name) || !chk->crash_id != !log->crash_id ||
            (chk->crash_id && strcmp(chk->crash_id, log->crash_id)) ||
            !chk->app_version != !log->app_version ||
            (chk->app_version && strcmp(chk->app_version, log->app_version)) ||
            chk->log_version != log->log_version || chk->nobjects || chk->netc)
            abort();
    } else if (cerr.line != err.line || strcmp(cerr.message, err.message)) {
        abort();
    }
    fl_crashlog_free(chk);
    fl_crashlog_free(log);
    section(data, size);
    return 0;
}
