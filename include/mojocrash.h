/*
 * mojocrash.h - MojoCrash-compatible names for Faultline.
 *
 * A program written against MojoCrash's client API compiles against this
 * header unchanged and only relinks with libfaultline.  Every name maps onto
 * the Faultline implementation (see faultline.h for the semantics, which are
 * MojoCrash's).  Logs are written in Faultline's format, whose version-1
 * lines are exactly MojoCrash's.
 */
#ifndef MOJOCRASH_H
#define MOJOCRASH_H

#include "faultline.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MOJOCRASH_VERSION_MAJOR 0
#define MOJOCRASH_VERSION_MINOR 0
#define MOJOCRASH_VERSION_PATCH 1
#define MOJOCRASH_LOG_FORMAT_VERSION 1
#define MOJOCRASH_MAX_APPNAME_STRING FAULTLINE_MAX_APPNAME
#define MOJOCRASH_MAX_VERSION_STRING FAULTLINE_MAX_VERSION

typedef faultline_catcher MOJOCRASH_catcher;
typedef faultline_get_callstack_callback MOJOCRASH_get_callstack_callback;
/* As published by MojoCrash: no load bias.  Objects reported through it are
 * written as version-1 "OBJECT name/base/size" lines. */
typedef int (*MOJOCRASH_get_objects_callback)(const char *fname, const void *addr,
                                              unsigned long len);
typedef faultline_get_etc_callback MOJOCRASH_get_etc_callback;

/* MojoCrash's hooks, member for member (see faultline.h for each one's
 * default).  Only get_objects differs from faultline_hooks, by its
 * callback; MOJOCRASH_install() adapts it. */
typedef struct MOJOCRASH_hooks {
    int (*install_crash_catcher)(MOJOCRASH_catcher catcher);
    int (*preflight)(int sig, int crash_count);
    int (*start_crashlog)(const char *appname);
    int (*new_crashlog_line)(const char *str);
    int (*get_callstack)(MOJOCRASH_get_callstack_callback callback);
    int (*get_objects)(MOJOCRASH_get_objects_callback callback);
    int (*get_etc)(MOJOCRASH_get_etc_callback callback);
    int (*end_crashlog)(void);
    int (*postflight)(void);
    void (*die)(void);
} MOJOCRASH_hooks;

/* faultline_install() with MojoCrash's hook struct (copied; may be NULL). */
int MOJOCRASH_install(const char *appname, const char *version, const MOJOCRASH_hooks *hooks);

#ifdef __cplusplus
}
#endif
#endif /* MOJOCRASH_H */
