/*
 * fl_minidump.h - a Faultline crash log from a Breakpad/Crashpad minidump.
 *
 * Programs that use Breakpad or Crashpad leave minidumps (".dmp", the MDMP
 * format) when they crash.  This module reads a Linux one -- the system
 * info (CPU, OS), the threads with their registers and stacks, the
 * exception (signal, si_code, fault address, crashing thread), the
 * modules with their build ids, the dumped memory, Breakpad's Linux
 * streams, and Crashpad's CrashpadInfo (its annotations as ETC pairs,
 * "prod" and "ver" as the application's name and version, the report's
 * and client's UUIDs as CRASH_ID and INSTALL_ID, each only where the
 * caller's opts give none) -- and writes the version-2 crash log the client would have
 * written (CRASH_SOURCE minidump), so that the crash reaches the same
 * reporter, server and groups.  With `unwind`, each thread is unwound
 * with libdwfl from the module files found here (or by the caller's
 * find_module); without, each thread keeps its pc and the crashing one
 * its registers and raw stack.  fl_minidump_unwind gives every thread's
 * stack alone, for a server that kept the dump.
 *
 * Nothing here prints; every function returns a code from
 * FL_MINIDUMP_ERRORS and, for the caller to show, a message in the
 * caller's buffer.  Not signal-safe (it allocates); each call is
 * independent, so calls on different threads do not share state.
 */
#ifndef FL_MINIDUMP_H
#define FL_MINIDUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* X(name, value, message) */
#define FL_MINIDUMP_ERRORS(X)                                                                      \
    X(FL_MINIDUMP_OK, 0, "ok")                                                                     \
    X(FL_MINIDUMP_EIO, -1, "cannot read the file")                                                 \
    X(FL_MINIDUMP_ENOTMINIDUMP, -2, "not a minidump")                                              \
    X(FL_MINIDUMP_ETRUNC, -3, "truncated or malformed minidump")                                   \
    X(FL_MINIDUMP_EARCH, -4, "minidump of an architecture this build cannot read")                 \
    X(FL_MINIDUMP_ENOTHREADS, -5, "no threads in the minidump")                                    \
    X(FL_MINIDUMP_EOS, -6, "not a minidump of a Linux program")                                    \
    X(FL_MINIDUMP_EWRITE, -7, "cannot write the crash log")

enum {
#define FL_MINIDUMP_ENUM_(name, value, text) name = value,
    FL_MINIDUMP_ERRORS(FL_MINIDUMP_ENUM_)
#undef FL_MINIDUMP_ENUM_
};

/* The message of a code (static). */
const char *fl_minidump_strerror(int code);

typedef struct fl_minidump_opts {
    /* APPLICATION_NAME; NULL: CrashpadInfo's "prod", else the main module's file name */
    const char *app;
    const char *app_version; /* APPLICATION_VERSION; NULL: CrashpadInfo's "ver", else none */
    const char *install_id;  /* INSTALL_ID; NULL: CrashpadInfo's client id, else none */
    /* CRASH_ID; NULL: CrashpadInfo's report id, else a fresh version-4 UUID */
    const char *crash_id;
    int64_t crash_time;      /* CRASH_TIME; < 0: the dump's time stamp, else the file's mtime */
    const char *name;        /* the dump as messages name it; NULL: its path */
    /* Unwind every thread with libdwfl and the module files found here
     * (by the dump's path, kept only with the dump's build id; else by
     * build id under /usr/lib/debug).  false: each thread keeps its pc. */
    bool unwind;
    /* With unwind, a module's file is the file the dump names when its
     * build id matches, else /usr/lib/debug's by build id.  find_module
     * (may be NULL: a server's locator with uploads and debuginfod, the
     * command's --obj files) is asked first, for the modules that a
     * thread's pc or an aligned word of a thread's stack points into --
     * no other can hold a pc of a walk, and asking may cost a request --
     * by their whole build id (build_id_hex, lowercase) and the path the
     * dump names.  It writes the path of the loadable file (code and
     * .eh_frame, not a debug-only file) into path, cap bytes, and returns
     * 0; else -1.  The file is used only when its build id is the
     * dump's. */
    int (*find_module)(void *ctx, const char *build_id_hex, const char *dump_path, char *path,
                       size_t cap);
    void *find_ctx;
    /* netc ETC_KEY/ETC_VALUE pairs to add, etc[2i] and etc[2i + 1] (an
     * upload's other form fields: Breakpad's and Crashpad's annotations);
     * one with a blank key or value is left out.  May be NULL.  The dump's
     * CrashpadInfo annotations follow, but for one that repeats a pair
     * of these. */
    const char *const *etc;
    size_t netc;
} fl_minidump_opts;

/* Facts about the written log, for the caller to name the file or say. */
typedef struct fl_minidump_info {
    char crash_id[40];
    int signal;
    uint64_t pid; /* 0: the dump does not say */
    uint64_t tid;
    size_t nframes, nthreads, nobjects;
} fl_minidump_info;

/*
 * Read the minidump at `path` (borrowed) and write a complete crash log,
 * ending with END, to `out` (borrowed; not closed).  Every offset and size
 * in the file is checked against its size: a hostile file gets an error,
 * never a read outside it.  On failure nothing is guaranteed about what
 * reached `out` -- write to a temporary file -- and `err` (errcap bytes,
 * may be NULL) says why, naming the file.  `opts` and `info` may be NULL.
 * Returns FL_MINIDUMP_OK or a negative FL_MINIDUMP_* code.
 */
int fl_minidump_to_crashlog(const char *path, const fl_minidump_opts *opts, FILE *out,
                            fl_minidump_info *info, char *err, size_t errcap);

/* The same for a minidump held in memory (`data`, len bytes, borrowed: a
 * server's upload).  CRASH_TIME without opts->crash_time is the dump's
 * time stamp, else now. */
int fl_minidump_buf_to_crashlog(const void *data, size_t len, const fl_minidump_opts *opts,
                                FILE *out, fl_minidump_info *info, char *err, size_t errcap);

/* One thread's stack as fl_minidump_unwind gives it. */
typedef struct fl_minidump_stack {
    uint64_t tid;
    uint64_t *pcs; /* innermost first; at least the thread's pc */
    size_t n;
} fl_minidump_stack;

/*
 * Unwind every thread of the minidump held in memory (data, len bytes,
 * borrowed) as fl_minidump_buf_to_crashlog does with opts->unwind (which
 * is ignored: this always unwinds), without writing a log: a server that
 * kept a dump walks all of its threads with the files it has.  OUT:
 * *stacks (*n of them, the crashing thread first; release with
 * fl_minidump_stacks_free).  Returns FL_MINIDUMP_OK or a negative
 * FL_MINIDUMP_* code with err filled.
 */
int fl_minidump_unwind(const void *data, size_t len, const fl_minidump_opts *opts,
                       fl_minidump_stack **stacks, size_t *n, char *err, size_t errcap);
void fl_minidump_stacks_free(fl_minidump_stack *stacks, size_t n); /* NULL is harmless */

#endif /* FL_MINIDUMP_H */
