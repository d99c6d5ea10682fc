/*
 * ctxbench.h - the copies of walk.c that ctxbench runs side by side.
 *
 * walk.c is compiled once per variant (CMakeLists.txt), each copy with
 * its own WALK_SUFFIX so that their names do not clash and one process
 * can interleave them: same machine state, same seeds, same rounds.
 */
#ifndef CTXBENCH_H
#define CTXBENCH_H

#include <stdint.h>

/* What a copy's log points stored, read by the driver after the rounds. */
struct walk_stats {
    uint64_t logged; /* log points run */
    uint64_t frames; /* return addresses stored by backtrace() (variant bt) */
    uint64_t ctx;    /* the last faultline_context() stored (variant ctx) */
    int depth;       /* the last backtrace()'s frame count (variant bt) */
    int uneven;      /* whether two backtrace()s counted different frames */
};

#define WALK_DECLARE(s)                                                                            \
    uint64_t walk_##s(uint64_t seed, int depth);                                                   \
    int walk_path_##s(uint64_t seed, int depth, const char **names, int max);                      \
    extern struct walk_stats walk_stats_##s

/* plain: no instrumentation, no context (the baseline).
 * hooks: -finstrument-functions, no context stored (the hooks alone).
 * ctx:   -finstrument-functions, faultline_context() at each log point.
 * bt:    no instrumentation, backtrace() at each log point (the peer). */
WALK_DECLARE(plain);
WALK_DECLARE(hooks);
WALK_DECLARE(ctx);
WALK_DECLARE(bt);

#endif /* CTXBENCH_H */
