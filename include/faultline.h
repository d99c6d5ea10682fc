/*
 * faultline.h - the Faultline crash catcher, the whole client API.
 *
 * Link libfaultline (or LD_PRELOAD libfaultline-preload.so) and call
 * faultline_install() once, early in main().  From then on a crash
 * (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS) writes a crash
 * log to the spool directory using async-signal-safe code only, and the
 * process then ends with the original signal (so core dumps still happen).
 * faultline-report uploads the logs later.
 *
 * The hooks are those of MojoCrash (see mojocrash.h for the drop-in names):
 * every member may be NULL, and so may the whole struct; NULL means the
 * default documented on each member.  Order of calls on a crash:
 *
 *   preflight -> start_crashlog -> (built-in lines) -> get_objects ->
 *   get_callstack -> get_etc -> end_crashlog -> postflight -> die
 *
 * A hook returning 0 stops the sequence: the remaining hooks are skipped
 * (end_crashlog too) and die() runs.  Hooks run inside a signal handler on a
 * possibly corrupt process: no malloc, no locks, no stdio.
 *
 * The library depends on libc only and exports nothing but the names below.
 */
#ifndef FAULTLINE_H
#define FAULTLINE_H

#ifdef __cplusplus
extern "C" {
#endif

#define FAULTLINE_VERSION_MAJOR 0
#define FAULTLINE_VERSION_MINOR 1
#define FAULTLINE_VERSION_PATCH 0
#define FAULTLINE_VERSION_STRING "0.1.0"

/* The crash-log format version this library writes (docs/crashlog-format.md). */
#define FAULTLINE_CRASHLOG_VERSION 2

/* Longest application name / version accepted by faultline_install(). */
#define FAULTLINE_MAX_APPNAME 64
#define FAULTLINE_MAX_VERSION 64

/* The catcher: call it with a signal number (or any app-defined number) to
 * run the whole crash sequence.  Given to install_crash_catcher. */
typedef void (*faultline_catcher)(int sig);

/* Callbacks handed to the get_* hooks.  Each returns non-zero on success;
 * a hook should stop and return 0 when a callback fails.  Strings are
 * borrowed for the duration of the call. */
typedef int (*faultline_get_callstack_callback)(const void *addr);
typedef int (*faultline_get_objects_callback)(const char *fname, const void *addr,
                                              unsigned long len, unsigned long slide);
typedef int (*faultline_get_etc_callback)(const char *key, const char *value);

typedef struct faultline_hooks {
    /* Install the trigger; return non-zero on success.  Called once from
     * faultline_install().  If set, Faultline installs no signal handlers of
     * its own: you must call `catcher` on a crash.  Default: handlers for the
     * crash signals, on an alternate stack in every thread. */
    int (*install_crash_catcher)(faultline_catcher catcher);

    /* First call on a crash.  crash_count is 1 on the first entry, 2 when the
     * handler itself crashed, and so on (it drops again when a run of the
     * handler returns).  Return non-zero to go on with the crash log, 0 to
     * skip to die().  Default, by crash_count: 1 -> go on; 2 -> stop (the log
     * written so far is closed with END when Faultline owns it); 3 -> call
     * die(); 4 -> end the process by the signal's default action; 5 -> _exit();
     * then 0 for ever. */
    int (*preflight)(int sig, int crash_count);

    /* Open the crash log.  Default: a new file in the spool directory under a
     * temporary name; it gets its final *.crashlog name in end_crashlog. If
     * you override one of start_crashlog / new_crashlog_line / end_crashlog,
     * override all three.  Return 0 on failure. */
    int (*start_crashlog)(const char *appname);

    /* One line of the log, NUL-terminated UTF-8 without the newline.
     * Default: append it (and '\n') to the file opened by start_crashlog. */
    int (*new_crashlog_line)(const char *str);

    /* Report the crashing thread's frames, innermost first, through the
     * callback.  Default: Faultline's own CFI unwinder (works for
     * -fomit-frame-pointer code and through libc's abort path). */
    int (*get_callstack)(faultline_get_callstack_callback callback);

    /* Report the loaded objects (name, start address, size, load bias).
     * Default: every object the dynamic linker has loaded, vdso and later
     * dlopen()s included, each followed by its build id and path. */
    int (*get_objects)(faultline_get_objects_callback callback);

    /* Report application key/value pairs.  Default: nothing. */
    int (*get_etc)(faultline_get_etc_callback callback);

    /* Finish the log.  Default: write it out, fsync when FAULTLINE_FSYNC=1,
     * and rename it to its final name.  Only called when every step before
     * it succeeded. */
    int (*end_crashlog)(void);

    /* After a successful end_crashlog.  Default: start the reporter when
     * FAULTLINE_REPORTER is set.  The return value is ignored. */
    int (*postflight)(void);

    /* Last call.  If it returns, the crash handler returns.  Default: run the
     * signal handler that was installed before Faultline (if any), then
     * restore the default action and re-raise the signal, so the process ends
     * with the original signal; a PID 1 that survives that is _exit()ed. */
    void (*die)(void);
} faultline_hooks;

/*
 * Install the crash catcher.  Call once, from ordinary (not signal) context,
 * preferably early in main(); later calls fail.
 *
 * app, version: copied; at most FAULTLINE_MAX_APPNAME / _VERSION - 1 bytes.
 * hooks: copied; may be NULL.
 * Returns non-zero on success, 0 on failure (bad arguments, already
 * installed, or install_crash_catcher failed).  Not thread-safe against
 * a concurrent faultline_install().
 *
 * Environment read here: FAULTLINE_SPOOL (spool directory; default
 * $XDG_STATE_HOME/faultline, else ~/.local/state/faultline),
 * FAULTLINE_REPORTER (program started after a crash with the spool
 * directory as argument), FAULTLINE_FSYNC=1 (fsync each log),
 * FAULTLINE_STACK_BYTES (raw stack kept, default 32768, max 262144),
 * FAULTLINE_DUMP_SIGNAL (the real-time signal Faultline takes to reach the
 * other threads on a crash and to give threads that already exist an
 * alternate signal stack; default SIGRTMAX-3, 0 turns both off).
 *
 * Threads created after install get an alternate signal stack because the
 * library wraps pthread_create(); the wrapper only forwards until install.
 */
int faultline_install(const char *app, const char *version, const faultline_hooks *hooks);

/* The spool directory in use (borrowed; valid for the life of the process),
 * or NULL before a successful faultline_install(). */
const char *faultline_spool_dir(void);

/* Number of finished crash logs that were already waiting in the spool when
 * faultline_install() ran (crashes of earlier runs not yet reported), or -1
 * before install.  An application can offer to run the reporter when > 0. */
int faultline_pending_crashlogs(void);

/* Run the crash sequence now, as if `sig` had been raised, from ordinary
 * context: for an application's own fatal-error path.  Does not return when
 * die() ends the process. */
void faultline_crash_now(int sig);

#ifdef __cplusplus
}
#endif
#endif /* FAULTLINE_H */
