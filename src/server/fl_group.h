/*
 * fl_group.h - from a parsed crash log to frames and a grouping signature.
 *
 * How grouping works: the crashing thread's CALLSTACK is turned into
 * frames.  Each address is mapped to the OBJECT that contains it; the
 * module-relative address is pc - load bias (pc - base when the OBJECT line
 * has no bias, as in version-1 logs).  When a symbolizer is installed
 * (fl_symbolize_fn: the hook for src/symbols) a frame gets its function,
 * file, line, column and the inline frames above it.  A frame's normalized
 * name is its function when known, else "module+0xrel".  Noise frames --
 * the crash handler, abort/raise/__assert_fail, signal trampolines -- are
 * dropped through two editable lists (exact names, and name prefixes);
 * the first top_n remaining names joined by " | " are the signature, and
 * the group id is a hash of (application, signature): one group per
 * application across versions.  A second hash over every frame (the exact
 * full stack) is kept per crash.
 */
#ifndef FL_GROUP_H
#define FL_GROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fl_crashlog.h"

/* One symbolized frame, filled in by a symbolizer. */
/* A C++ name of a class template instantiated with std::string runs past
 * 255 bytes; it is keyed whole (fl_group_function_key), then cut. */
#define FL_SYM_FUNCTION_MAX 1024

typedef struct fl_sym_frame {
    char function[FL_SYM_FUNCTION_MAX]; /* "" when unknown */
    char file[256];     /* "" when unknown */
    unsigned line, column;
    bool inlined; /* true for a frame inlined into the next one */
} fl_sym_frame;

/*
 * The symbolizer hook.  `module` is the OBJECT's path (OBJECT_PATH when
 * the log has one, else the OBJECT's file name; borrowed), `build_id` its
 * OBJECT_BUILD_ID or NULL, `rel` the module-relative address.  Fill
 * out[0..cap) innermost first (inline frames first, the real function
 * last, like llvm-symbolizer --inlines) and return how many, 0 when the
 * address is unknown, -1 when the module has no symbols at all (the
 * worker records it in the crash's symbol status).  Called from worker
 * threads concurrently.
 */
typedef int (*fl_symbolize_fn)(void *ctx, const char *module, const char *build_id, uint64_t rel,
                               fl_sym_frame *out, size_t cap);

/*
 * The tail-call hook: the functions a chain of tail calls left off the
 * stack between a caller and the callee above it.  `module`/`build_id`
 * name the caller's OBJECT (as for fl_symbolize_fn), `ret` is the
 * caller's return address (module-relative); `callee` is the function
 * the frame above is in, `callee_build_id` its OBJECT's build id (NULL
 * when none) and `callee_rel` the address it was looked up at.  When the
 * call at ret went to another function, which reached callee through
 * tail calls, fill sites[0..cap) with module-relative addresses,
 * innermost first, one per function left off, and return how many (0:
 * nothing is missing, or nothing certain).  in_callee[k] false: sites[k]
 * is in the caller's module; true: in the callee's (the call went to
 * another module's function, whose frames are that module's).  exact[k]
 * true: sites[k] is the tail call itself (its frames and line are the
 * answer); false: only the function is certain, and sites[k] is its
 * entry (its name is the answer, without a line, and the frame's
 * address is that entry: fl_frame.at_entry).  Called from worker
 * threads concurrently.
 */
typedef size_t (*fl_tailcall_fn)(void *ctx, const char *module, const char *build_id, uint64_t ret,
                                 const char *callee, const char *callee_build_id,
                                 uint64_t callee_rel, uint64_t *sites, bool *exact, bool *in_callee,
                                 size_t cap);

/* 1 when two function names name one function as signatures see it:
 * alike after clone suffixes, the C library's aliases ("cfree",
 * "__libc_free" for "free") and fl_group_function_key. */
bool fl_group_same_function(const char *a, const char *b);

/* Skip and prefix lists and the signature length. */
typedef struct fl_group_rules fl_group_rules;

/* The built-in defaults (see docs/operations.md).  NULL on OOM. */
fl_group_rules *fl_group_rules_new(void);
/* Replace the skip list and/or the prefix list by the contents of files
 * (one entry per line, '#' comments; an entry "module:NAME" matches the
 * module's base name instead of the function).  A NULL path keeps the
 * defaults.  Returns 0, or -1 (errno) when a file cannot be read -- a
 * missing one too. */
int fl_group_rules_load(fl_group_rules *r, const char *skip_path, const char *prefix_path);
/* Write the default lists to these paths unless the files exist. */
int fl_group_rules_write_defaults(const char *skip_path, const char *prefix_path);
void fl_group_rules_set_top_n(fl_group_rules *r, unsigned n);
void fl_group_rules_free(fl_group_rules *r);

/* A processed frame.  Strings owned by the frame array (see below). */
typedef struct fl_frame {
    char *function; /* NULL when unknown; without compiler clone suffixes */
    char *raw_function; /* the symbolizer's name when it had such a suffix
                           ("f.constprop.0"), else NULL */
    char *file;     /* NULL when unknown */
    unsigned line, column;
    char *module;     /* OBJECT base name, NULL when no object contains it */
    uint64_t address; /* absolute address from the log */
    uint64_t rel;     /* module-relative address (valid when module) */
    bool inlined;
    bool tail_call; /* restored: a tail call had left it off the stack */
    bool at_entry;  /* ... and only its function is known: address and rel
                       are the function's entry, not where it was */
    bool noise; /* dropped from the signature by the lists */
    bool in_signature; /* set by fl_signature_compute: its name is in the signature */
    char *name;        /* normalized name used in signatures: fl_group_function_key()
                        * of function, else "module+0xrel" */
} fl_frame;

/* A function's name as signatures key it (fr->name of a named frame):
 * a C++ name without ABI tags ("[abi:cxx11]"), the standard library's
 * inline namespace ("std::__cxx11::", "std::__1::") and a template's
 * return type, with the standard library's types in libstdc++'s short
 * forms ("std::string"), so that one function keys alike whichever
 * toolchain built it; its parameter list stays (overloads are other
 * functions).  A C name as it is.  Into out (cap bytes, NUL-terminated,
 * cut to fit). */
void fl_group_function_key(const char *function, char *out, size_t cap);

typedef struct fl_frames {
    fl_frame *v;
    size_t n;
    int signal; /* the log's CRASH_SIGNAL, 0 when it has none */
} fl_frames;

/* Turn addresses into frames (symbolizing when sym != NULL).  Returns 0 or
 * -1 on OOM.  Free with fl_frames_free. */
int fl_frames_build(const fl_crashlog *log, const uint64_t *addrs, size_t n,
                    const fl_group_rules *r, fl_symbolize_fn sym, void *symctx, fl_frames *out);
/* The same, and with tail != NULL the frames that tail calls left off
 * are put back (fl_frame.tail_call) where the hook finds them. */
int fl_frames_build_tail(const fl_crashlog *log, const uint64_t *addrs, size_t n,
                         const fl_group_rules *r, fl_symbolize_fn sym, fl_tailcall_fn tail,
                         void *symctx, fl_frames *out);
void fl_frames_free(fl_frames *f);

typedef struct fl_signature {
    char *text;         /* "f1 | f2 | ..." (caller frees) */
    char group_id[33];  /* hex hash of project, application and signature */
    char stack_hash[33]; /* hex hash of every frame's name */
} fl_signature;

/* Compute the signature of an already built frame list (the crashing
 * thread's), and its group id in project (NULL, "" or FL_PROJECT_DEFAULT:
 * the default one) and app; marks the frames whose names it took
 * (in_signature), and as noise the system libraries' frames that do not
 * place the crash (an abort's way down through the C++ runtime; unnamed
 * frames of the C library or the C++ runtime under the first significant
 * frame).  0 or -1 (OOM). */
int fl_signature_compute(const char *project, const char *app, fl_frames *f,
                         const fl_group_rules *r, fl_signature *out);

#endif
