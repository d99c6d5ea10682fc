/*
 * fl_ctxdecode.h - compressed calling contexts (faultline_context(), the
 * crash log's CRASH_CONTEXT / THREAD_CONTEXT) back into stacks.
 *
 * The value is a fold of the ids of the instrumented functions active on a
 * thread (src/common/fl_context.h).  It cannot be unfolded; instead the
 * call graph of the program's instrumented functions is rebuilt from its
 * files -- which functions call __cyg_profile_func_enter, which call
 * which, directly, through the PLT or GOT, or through function pointers
 * -- and its paths from the entry points are folded until one gives the
 * value.  A 64-bit mix makes a false match as likely as guessing the
 * value.  x86-64 and aarch64 (the graph comes from disassembly, with
 * capstone).
 */
#ifndef FL_CTXDECODE_H
#define FL_CTXDECODE_H

#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fl_ctxgraph fl_ctxgraph;

fl_ctxgraph *fl_ctxgraph_new(void);
void fl_ctxgraph_free(fl_ctxgraph *g);

/* Adds one program or library (already open with libelf; not kept after
 * the call), with its function symbols from `syms` when not NULL (its
 * separate debug file, for a stripped file).  The first one added wins
 * where two define the same exported name, as the dynamic linker's order
 * does: add the executable first.  Returns 0, or -1 with a message in
 * err; a file that fails is not in the graph.  When memory ran out
 * ("out of memory" in err, fl_ctxgraph_nomem), the graph refuses any
 * further add and link, and searches in it find nothing: free it. */
int fl_ctxgraph_add(fl_ctxgraph *g, const char *name, Elf *elf, Elf *syms, char *err,
                    size_t errlen);

/* Call after the last add: resolves calls between modules and finds the
 * entry points.  Returns 0, or -1 when memory ran out (now or in an add):
 * the graph then has no instrumented function, and is only good to free. */
int fl_ctxgraph_link(fl_ctxgraph *g);

/* Whether memory ran out in an add or link of g. */
int fl_ctxgraph_nomem(const fl_ctxgraph *g);

/* How many instrumented functions the graph has (0: nothing given was
 * built with -finstrument-functions, or memory ran out). */
size_t fl_ctxgraph_instrumented(const fl_ctxgraph *g);

/* One stack that gives the value: frames innermost first. */
typedef struct fl_ctxframe {
    const char *function; /* symbol name */
    const char *module;   /* the name given to fl_ctxgraph_add */
    uint64_t address;     /* the function's link-time address in it */
} fl_ctxframe;

typedef int (*fl_ctx_match_fn)(const fl_ctxframe *frames, size_t n, void *arg);

/* The search: deepening from the entry points, then (when a quarter of
 * the budget found nothing) meeting in the middle; or one of them alone. */
enum { FL_CTX_AUTO, FL_CTX_DEEPENING, FL_CTX_MITM };

typedef struct fl_ctxsearch {
    unsigned max_depth; /* longest stack tried */
    int strategy;       /* FL_CTX_AUTO, or one search alone (tests) */
    uint64_t budget;    /* most path steps tried */
    uint64_t steps;     /* out: steps taken */
    unsigned matches;   /* out: stacks found */
    int complete;       /* out: every path up to max_depth was tried
                         * (0: the budget ran out first) */
    int depth_cut;      /* out: some paths go on past max_depth
                         * (recursion, or a deep graph) */
    int nomem;          /* out: memory ran out (here, or building the
                         * graph): the search stopped, with no match and
                         * complete 0 */
    const bool *cancel; /* NULL, or read (atomically) every 4096 steps:
                         * true stops the search as a spent budget does --
                         * a server stopping does not wait for a search
                         * that takes long on a loaded machine */
} fl_ctxsearch;

/* Calls `fn` with the stack of instrumented functions (innermost first)
 * whose context is `value`, and stops there: another stack with the same
 * value is as likely as guessing a 64-bit number.  Returns the number of
 * matches (0 or 1).  What the search allocates (up to ~40 MB for the
 * meet-in-the-middle table) is freed before it returns, also when memory
 * ran out (s->nomem); g is not changed, so searches may run one after
 * another after such a failure. */
unsigned fl_ctxgraph_search(const fl_ctxgraph *g, uint64_t value, fl_ctxsearch *s,
                            fl_ctx_match_fn fn, void *arg);

/* Whether the file names the hooks: calls them in another file (built
 * with -finstrument-functions and linked to libfaultline.so), or has them
 * (libfaultline itself, or a program that linked its static archive) --
 * not the C library (DT_SONAME libc.so.*), whose empty hooks nothing
 * calls. */
int fl_ctx_elf_has_hooks(Elf *elf);

#endif /* FL_CTXDECODE_H */
