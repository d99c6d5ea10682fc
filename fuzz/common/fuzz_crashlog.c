/* Fuzz target: the crash-log reader must accept or reject any input with a
 * reason, never crash, and a log it accepts must be self-consistent.
 * fl_crashlog_check() (what the server's ingest runs) must give the same
 * verdict and error, and the same header fields. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fl_crashlog.h"

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
    return 0;
}
