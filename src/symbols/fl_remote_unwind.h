/*
 * fl_remote_unwind.h - redo the crashing thread's unwind on the server.
 *
 * The client unwinds in a signal handler with what it has; the server has
 * time and the objects' call-frame information.  From a crash log's
 * REGISTER lines (the thread's registers at the fault), its STACK lines
 * (raw stack memory from the stack pointer up) and the objects' files,
 * libdwfl's unwinder (dwfl_attach_state + dwfl_getthread_frames) walks the
 * stack with the CFI of each module (.eh_frame, else .debug_frame).
 *
 * Memory the unwinder asks for is served from the STACK chunks first, then
 * from the read-only PT_LOAD segments of the module files (a read-only
 * segment holds the same bytes in the file as in the process); anything
 * else is unknown and stops that path of the walk.  Module files are the
 * loadable files fl_symlocate_find_executable finds for the
 * OBJECT_BUILD_ID (the file at OBJECT_PATH when its build id matches, an
 * upload, debuginfod's executable), or without a locator the file at
 * OBJECT_PATH when its build id matches; a module without a usable file
 * has no CFI, and a walk that reaches it ends there.  Only the objects
 * that the pc or a word of the STACK points into are looked for (no other
 * can hold a pc of the walk), at most FL_RU_MAX_MODULES of them.
 *
 * Logs of x86-64 and aarch64 (CPUARCH_NAME; none means x86-64), on a
 * server of either: the REGISTER lines are read by name (rax..r15 and rip;
 * x0..x30, sp and pc).  Other architectures get FL_RU_EUNSUPPORTED.
 *
 * Threads: each call builds and frees its own libdwfl session; calls may
 * run concurrently.  Nothing here is async-signal-safe.
 */
#ifndef FL_REMOTE_UNWIND_H
#define FL_REMOTE_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fl_crashlog.h"
#include "fl_symlocate.h"

#define FL_RU_ERRORS(X)                                                                            \
    X(FL_RU_OK, 0, "success")                                                                      \
    X(FL_RU_EINVAL, -1, "invalid argument")                                                        \
    X(FL_RU_ENOREGS, -2,                                                                           \
      "the log has no usable REGISTER lines (the pc and stack pointer are needed)")                \
    X(FL_RU_EUNSUPPORTED, -3, "unsupported architecture")                                          \
    X(FL_RU_EDWFL, -4, "libdwfl failed")                                                           \
    X(FL_RU_ENOMEM, -5, "out of memory")

enum {
#define FL_RU_ENUM_(name, value, text) name = value,
    FL_RU_ERRORS(FL_RU_ENUM_)
#undef FL_RU_ENUM_
};

const char *fl_remote_unwind_strerror(int code);

#define FL_RU_MAX_FRAMES 256
#define FL_RU_MAX_RANGES 512
/* Module files one unwind opens at most: those of the OBJECTs that rip or
 * a word of the STACK points into, in log order; the others are treated
 * as modules without a file. */
#define FL_RU_MAX_MODULES 128

/* An executable address range [lo, hi) of a module, absolute. */
typedef struct fl_ru_range {
    uint64_t lo, hi;
} fl_ru_range;

typedef struct fl_ru_stack {
    uint64_t pcs[FL_RU_MAX_FRAMES]; /* innermost first, as unwound (not -1) */
    bool activation[FL_RU_MAX_FRAMES]; /* 1: pc is exact (frame 0, after a signal frame) */
    size_t nframes;
    /* Executable ranges of the modules that had a file, for
     * fl_remote_unwind_pick's consistency check. */
    fl_ru_range exec[FL_RU_MAX_RANGES];
    size_t nexec;
    size_t modules_with_file; /* how many OBJECTs got a file (and so CFI) */
    char stop_reason[160];    /* why the walk ended ("" = end of stack) */
} fl_ru_stack;

/*
 * Unwind the crashing thread of `log`.  loc (may be NULL) finds module
 * files by build id; without it only OBJECT_PATH is tried.  OUT: *out
 * (caller-provided, about 12 KiB).  Returns 0 when at least frame 0 was
 * produced, else a negative FL_RU_ code with err filled.  Thread-safe.
 */
int fl_remote_unwind(const fl_crashlog *log, fl_symlocate *loc, fl_ru_stack *out, char *err,
                     size_t errlen);

typedef enum fl_ru_choice { FL_RU_PICK_CLIENT = 0, FL_RU_PICK_SERVER = 1 } fl_ru_choice;

/*
 * Decide which stack to keep: the client's CALLSTACK or the server's
 * unwind.  A stack is consistent when it starts with the same pc as the
 * other (the faulting pc from the registers) and every pc lies inside a
 * known module's executable range (server->exec when it has ranges, else
 * the OBJECT [base, base+size) ranges).  The longer consistent one wins;
 * ties and "neither is consistent" keep the client's.  server may be NULL.
 */
fl_ru_choice fl_remote_unwind_pick(const fl_crashlog *log, const fl_ru_stack *server);

/* 1 when every pc of pcs[0..n) is inside a range of st (or of the log's
 * OBJECTs when st is NULL or has none).  Frame 0 and frames whose
 * activation[i] is true are checked as they are, the others (return
 * addresses) as pc - 1.  activation may be NULL.  For tests and the
 * server's diagnostics. */
int fl_remote_unwind_consistent(const fl_crashlog *log, const fl_ru_stack *st,
                                const uint64_t *pcs, const bool *activation, size_t n);

#endif
