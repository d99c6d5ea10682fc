/* Fuzz target: the crash-log reader must accept or reject any input with a
 * reason, never crash, and a log it accepts must be self-consistent. */
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
    fl_crashlog_free(log);
    return 0;
}
