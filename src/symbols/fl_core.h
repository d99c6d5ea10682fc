/*
 * fl_core.h - a Faultline crash log from an ELF core file.
 *
 * A program that does not run libfaultline still leaves a core dump when
 * it crashes (or the kernel hands one to a core_pattern program).  This
 * module reads such a core with elfutils' libdwfl -- the threads and their
 * registers from the NT_PRSTATUS notes, the signal from NT_SIGINFO, the
 * loaded objects and their build ids, the memory of the dumped segments --
 * and writes the version-2 crash log the client would have written, so
 * that the crash reaches the same reporter, server and groups.
 *
 * Nothing here prints; every function returns a code from FL_CORE_ERRORS
 * and, for the caller to show, a message in the caller's buffer.  Not
 * signal-safe (it allocates); each call is independent, so calls on
 * different threads do not share state.
 */
#ifndef FL_CORE_H
#define FL_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fl_elffile.h" /* fl_elf_obj */

/* X(name, value, message) */
#define FL_CORE_ERRORS(X)                                                                          \
    X(FL_CORE_OK, 0, "ok")                                                                         \
    X(FL_CORE_EIO, -1, "cannot read the file")                                                     \
    X(FL_CORE_ENOTCORE, -2, "not an ELF core file")                                                \
    X(FL_CORE_ETRUNC, -3, "truncated core file")                                                   \
    X(FL_CORE_EARCH, -4, "core of an architecture this build cannot read")                         \
    X(FL_CORE_ENOTHREADS, -5, "no threads in the core")                                            \
    X(FL_CORE_EDWFL, -6, "libdwfl could not read the core")                                        \
    X(FL_CORE_EWRITE, -7, "cannot write the crash log")

enum {
#define FL_CORE_ENUM_(name, value, text) name = value,
    FL_CORE_ERRORS(FL_CORE_ENUM_)
#undef FL_CORE_ENUM_
};

/* The message of a code (static). */
const char *fl_core_strerror(int code);

/* Default and largest bytes of raw stack a log keeps (the client's). */
#define FL_CORE_STACK_BYTES (32u << 10)
/* Frames kept per thread, and threads kept (the client's limits). */
#define FL_CORE_MAX_FRAMES 256
#define FL_CORE_MAX_THREADS 256

/* A thread's name, taken from /proc while the process was still there
 * (the core keeps only the process's command name). */
typedef struct fl_core_thread_name {
    uint64_t tid;
    char name[32];
} fl_core_thread_name;

typedef struct fl_core_opts {
    const char *exe;         /* the crashed program's file; NULL: found from the core */
    const char *app;         /* APPLICATION_NAME; NULL: the executable's file name */
    const char *app_version; /* APPLICATION_VERSION; NULL: none written */
    const char *install_id;  /* INSTALL_ID; NULL: none written */
    const char *crash_id;    /* CRASH_ID; NULL: a fresh version-4 UUID */
    int64_t crash_time;      /* CRASH_TIME, seconds since the epoch; < 0: the core's mtime */
    const char *source;      /* CRASH_SOURCE value; NULL: "core" */
    const char *name;        /* the core as messages name it; NULL: its path */
    /* Thread names by the core's thread ids (borrowed; may be NULL): for
     * CRASH_THREAD_NAME and THREAD lines.  Without one, only the main
     * thread is named, with the core's command name. */
    const fl_core_thread_name *thread_names;
    size_t nthread_names;
    /* APPLICATION_UPTIME: seconds the process ran before the crash (the
     * core does not say; /proc does while it is dumped). */
    bool have_uptime;
    int64_t uptime;
    /* The crashed process's root directory, where the core's file names
     * are looked up (a container's); without it, here (borrowed). */
    bool have_root;
    int root_fd;
    /* Files given with --obj (borrowed; may be NULL): a module's file is
     * the one with the build id the core's memory has for it, before the
     * paths above (a core from another machine: the developer's build).
     * Each one used is marked so. */
    fl_elf_objs *objs;
} fl_core_opts;

/* Facts about the written log, for the caller to name the file or say. */
typedef struct fl_core_info {
    char crash_id[40];
    int signal;
    uint64_t pid, tid;
    size_t nframes, nthreads, nobjects;
} fl_core_info;

/*
 * Read the core file at `path` (borrowed) and write a complete crash log,
 * ending with END, to `out` (borrowed; not closed).  On failure nothing
 * is guaranteed about what reached `out` -- write to a temporary file --
 * and `err` (errcap bytes, may be NULL) says why, naming the file.  `info`
 * may be NULL.  Returns FL_CORE_OK or a negative FL_CORE_* code.
 */
int fl_core_to_crashlog(const char *path, const fl_core_opts *opts, FILE *out, fl_core_info *info,
                        char *err, size_t errcap);

/* A fresh version-4 UUID (36 characters and a NUL) in out: 0, or -1 when
 * the system gives no randomness. */
int fl_core_uuid(char out[40]);

#endif /* FL_CORE_H */
