/*
 * fuzz_remote_unwind.c - the server's own unwind of a crashing thread
 * (src/symbols/remote_unwind.c) on any crash log: its REGISTER and STACK
 * lines and its OBJECTs' addresses come from whoever reaches the ingest
 * port, and the worker hands them to libdwfl's CFI unwinder through the
 * memory and register callbacks of remote_unwind.c.
 *
 * Input: a crash log.  The module file is ru_module.elf next to this
 * source (a small static program, see ru_module.c): the first OBJECTs of
 * the log get its path and build id, so that the walk reads real call-frame
 * information wherever the log puts the module; no path of the log is
 * opened.  No crash, leak or hang; a stack found starts at the pc, holds at
 * most FL_RU_MAX_FRAMES pcs and only pcs inside the modules' code.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fl_crashlog.h"
#include "fl_remote_unwind.h"
#include "fl_symcache.h"
#include "fl_symlocate.h"

#define MODULES_WITH_FILE 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char id[2 * FL_SYM_BUILD_ID_MAX + 1];
    if (!id[0] && fl_symlocate_read_build_id(FL_RU_MODULE, id, sizeof id, NULL, NULL) != 0)
        abort(); /* the module file is part of the target */
    fl_crashlog *log = NULL;
    if (fl_crashlog_parse((const char *)data, size, &log, NULL) != 0)
        return 0;
    for (size_t i = 0; i < log->nobjects; i++) {
        /* Strings of the log live in its arena: these two are the
         * target's, and the log is freed before they are. */
        log->objects[i].path = i < MODULES_WITH_FILE ? (char *)FL_RU_MODULE : NULL;
        log->objects[i].build_id = i < MODULES_WITH_FILE ? id : NULL;
    }
    fl_ru_stack *st = malloc(sizeof *st);
    char err[256];
    if (st && fl_remote_unwind(log, NULL, st, err, sizeof err) == 0) {
        /* The pc register's name is the log's architecture's. */
        const char *pcname =
            log->cpuarch && (!strcmp(log->cpuarch, "aarch64") || !strcmp(log->cpuarch, "arm64"))
                ? "pc"
                : "rip";
        uint64_t rip = 0;
        for (size_t i = 0; i < log->nregisters; i++)
            if (!strcmp(log->registers[i].name, pcname))
                rip = log->registers[i].value;
        if (st->nframes < 1 || st->nframes > FL_RU_MAX_FRAMES || st->pcs[0] != rip ||
            st->nexec > FL_RU_MAX_RANGES || st->modules_with_file < 1 ||
            !memchr(st->stop_reason, '\0', sizeof st->stop_reason))
            abort();
        /* Frames after the first are kept only inside the modules' code
         * (a return address as pc - 1). */
        for (size_t i = 1; i < st->nframes; i++) {
            uint64_t probe = st->activation[i] ? st->pcs[i] : st->pcs[i] - 1;
            size_t k = 0;
            while (k < st->nexec && !(probe >= st->exec[k].lo && probe < st->exec[k].hi))
                k++;
            if (k == st->nexec)
                abort();
        }
        fl_ru_choice c = fl_remote_unwind_pick(log, st);
        if (c != FL_RU_PICK_CLIENT && c != FL_RU_PICK_SERVER)
            abort();
    } else if (st && !err[0]) {
        abort(); /* a failure says why */
    }
    free(st);
    fl_crashlog_free(log);
    return 0;
}
