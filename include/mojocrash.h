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
typedef faultline_get_objects_callback MOJOCRASH_get_objects_callback;
typedef faultline_get_etc_callback MOJOCRASH_get_etc_callback;
typedef faultline_hooks MOJOCRASH_hooks;

/* Same as faultline_install(); a real function so that code calling
 * MOJOCRASH_install through a pointer or from another language works. */
int MOJOCRASH_install(const char *appname, const char *version, const MOJOCRASH_hooks *hooks);

#ifdef __cplusplus
}
#endif
#endif /* MOJOCRASH_H */
