/*
 * ctxbench.c - what attaching a calling context to a log point costs.
 *
 * The same call tree (walk.c: 10 levels of three node functions, a log
 * point at each leaf) in four copies, run side by side in one process:
 *   plain  no instrumentation, the event alone (the baseline);
 *   hooks  -finstrument-functions with libfaultline's hooks, the event
 *          alone: what the instrumentation costs by itself;
 *   ctx    the same plus faultline_context() in the record (8 bytes);
 *   bt     no instrumentation, backtrace() in the record (8 bytes per
 *          frame): what one does without Faultline.
 * Medians of interleaved rounds, so that the two shared, noisy cores
 * treat every copy alike.  bt runs fewer trees per round: it is two
 * orders slower, and a round of it as long as the others' would make the
 * whole run minutes long.
 *
 * With the path of the faultline program as third argument, also times
 * `faultline decode --context` of one leaf's value against this program
 * (the real binary, a few runs, the median) and checks that it gives the
 * leaf's stack.
 *
 * `ctxbench --calls VARIANT TREES` runs one variant's walks alone and
 * prints how many calls they made: run.sh runs it under callgrind, for
 * instructions per call, which two busy cores do not blur.
 *
 * usage: ctxbench [TREES] [ROUNDS] [FAULTLINE]
 *        ctxbench --calls plain|hooks|ctx|bt TREES
 */
#define _GNU_SOURCE
#include <execinfo.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ctxbench.h"
#include "faultline.h"

extern char **environ;

enum { DEPTH = 10, BT_DIV = 16, DECODE_RUNS = 5, MAXR = 99 };
enum { PLAIN, HOOKS, CTX, BT, NVAR };

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t seed_of(long t)
{
    return (uint64_t)t * 0x9e3779b97f4a7c15ull + 12345;
}

/* The walks' results go here, so that they are used (file scope: clang
 * warns of a local that is only ever set). */
static volatile uint64_t sink;

/* Seconds for `trees` walks of variant v.  A switch, not a table of
 * function pointers: taking walk_ctx's address would make it a possible
 * callback target for `faultline decode`, a graph this bench does not
 * mean to measure. */
static double run(int v, long trees)
{
    double t0 = now();
    for (long t = 0; t < trees; t++) {
        uint64_t s = seed_of(t);
        switch (v) {
        case PLAIN:
            sink += walk_plain(s, DEPTH);
            break;
        case HOOKS:
            sink += walk_hooks(s, DEPTH);
            break;
        case CTX:
            sink += walk_ctx(s, DEPTH);
            break;
        default:
            sink += walk_bt(s, DEPTH);
            break;
        }
    }
    return now() - t0;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof v[0], cmp);
    return v[n / 2];
}

/* Runs `faultline decode --context VALUE --obj SELF` with its output in
 * `out`; returns the wall time in seconds, or -1 if it failed. */
static double decode_once(const char *fl, const char *self, uint64_t value, FILE *out)
{
    char hex[32];
    snprintf(hex, sizeof hex, "%llx", (unsigned long long)value);
    char *argv[] = {(char *)fl, "decode", "--context", hex, "--obj", (char *)self, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fileno(out), 1);
    rewind(out);
    if (ftruncate(fileno(out), 0))
        return -1;
    pid_t pid;
    int st;
    double t0 = now();
    int rc = posix_spawn(&pid, fl, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc || waitpid(pid, &st, 0) != pid)
        return -1;
    double t = now() - t0;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? t : -1;
}

/* Whether decode's output is exactly one stack and its names, innermost
 * first, are `want` (GCC's clone suffixes, .isra.0 and the like, set
 * aside). */
static int decoded_as(FILE *out, const char **want, int nwant)
{
    char line[512], name[256];
    int stacks = 0, n = 0, idx;
    rewind(out);
    while (fgets(line, sizeof line, out)) {
        if (!strncmp(line, "  stack ", 8))
            stacks++;
        else if (sscanf(line, " #%d %255s", &idx, name) == 2) {
            name[strcspn(name, ".")] = 0;
            if (n >= nwant || idx != n || strcmp(name, want[n]))
                return 0;
            n++;
        }
    }
    return stacks == 1 && n == nwant;
}

int main(int argc, char **argv)
{
    static const char *const names[NVAR] = {"plain", "hooks", "ctx", "bt"};
    if (argc == 4 && !strcmp(argv[1], "--calls")) {
        long n = atol(argv[3]);
        void *pc[4]; /* backtrace()'s first call loads libgcc_s: not in the count */
        backtrace(pc, 4);
        for (int v = 0; v < NVAR; v++)
            if (!strcmp(argv[2], names[v]) && n > 0) {
                run(v, n);
                printf("%ld\n", n * (2L << DEPTH));
                return 0;
            }
        fprintf(stderr, "usage: ctxbench --calls plain|hooks|ctx|bt TREES\n");
        return 64;
    }
    long trees = argc > 1 ? atol(argv[1]) : 4000;
    int rounds = argc > 2 ? atoi(argv[2]) : 7;
    const char *fl = argc > 3 ? argv[3] : NULL;
    if (trees < BT_DIV || rounds <= 0 || rounds > MAXR) {
        fprintf(stderr, "usage: ctxbench [TREES >= %d] [ROUNDS] [FAULTLINE]\n", BT_DIV);
        return 64;
    }
    long ntrees[NVAR] = {trees, trees, trees, trees / BT_DIV};
    const long leaves = 1L << DEPTH, calls = 2L << DEPTH;
    const double per_call = (double)leaves / (double)calls; /* ns per log point to per call */

    /* Out of the rounds: backtrace()'s first call loads libgcc_s, the
     * hooks' first calls fill their module cache. */
    for (int v = 0; v < NVAR; v++)
        run(v, 1);
    uint64_t logged0 = walk_stats_bt.logged, frames0 = walk_stats_bt.frames;

    double t[NVAR][MAXR], ns[NVAR];
    for (int r = 0; r < rounds; r++)
        for (int v = 0; v < NVAR; v++)
            t[v][r] = run(v, ntrees[v]) * 1e9 / (double)(ntrees[v] * leaves);
    for (int v = 0; v < NVAR; v++)
        ns[v] = median(t[v], rounds);
    double frames =
        (double)(walk_stats_bt.frames - frames0) / (double)(walk_stats_bt.logged - logged0);

    /* What was measured must be what was meant: every log point ran, the
     * contexts are there and main, which is not instrumented, is back at
     * 0 once every instrumented call returned. */
    if (walk_stats_ctx.logged != (uint64_t)((ntrees[CTX] * rounds + 1) * leaves) ||
        !walk_stats_ctx.ctx || faultline_context() != 0 || frames < DEPTH + 2 ||
        walk_stats_bt.uneven) {
        fprintf(stderr, "ctxbench: the walks did not run as meant (%llu log points, ctx %llx)\n",
                (unsigned long long)walk_stats_ctx.logged, faultline_context());
        return 1;
    }

    printf("# reproduce:");
    for (int i = 0; i < argc; i++)
        printf(" %s", argv[i]);
    printf("\n== context: a log point at each leaf of a %d-deep call tree (%ld calls, %ld log "
           "points),\n   %ld trees per round (backtrace: %ld), median of %d rounds, interleaved\n",
           DEPTH, calls, leaves, trees, ntrees[BT], rounds);
    printf("  %-50s %12s %10s %14s\n", "", "ns/log point", "ns/call", "bytes/context");
    printf("  %-50s %12.1f %10.2f %14d\n", "(a) plain build, no context", ns[PLAIN],
           ns[PLAIN] * per_call, 0);
    printf("  %-50s %12.1f %10.2f %14d\n", "(a') -finstrument-functions, no context", ns[HOOKS],
           ns[HOOKS] * per_call, 0);
    printf("  %-50s %12.1f %10.2f %14d\n", "(b) -finstrument-functions + faultline_context()",
           ns[CTX], ns[CTX] * per_call, 8);
    char bytes[32];
    snprintf(bytes, sizeof bytes, "%.0f (%.1f fr)", 8 * frames, frames);
    printf("  %-50s %12.1f %10.2f %14s\n", "(c) plain build + backtrace()", ns[BT],
           ns[BT] * per_call, bytes);
    printf("  %-50s %11.1fx\n", "backtrace / faultline, per log point: (c)/(b)", ns[BT] / ns[CTX]);
    printf("  %-50s %11.1fx\n", "added cost: ((c)-(a)) / ((b)-(a))",
           (ns[BT] - ns[PLAIN]) / (ns[CTX] - ns[PLAIN]));
    printf("  %-50s %9.2f ns\n", "hooks per instrumented call: ((b)-(a)) / calls",
           (ns[CTX] - ns[PLAIN]) * per_call);
    /* faultline_context() is paid on every call, backtrace() only at the
     * log point: with this many instrumented calls per log point the two
     * cost the same (hooks per call from (a'), the read from (b)-(a')). */
    double hook = (ns[HOOKS] - ns[PLAIN]) * per_call;
    printf("  %-50s %9.0f\n", "break-even: instrumented calls per log point",
           (ns[BT] - ns[PLAIN] - (ns[CTX] - ns[HOOKS])) / hook);

    if (!fl)
        return 0;
    /* One leaf's value, and the stack it must decode to. */
    const uint64_t seed = seed_of(7);
    walk_ctx(seed, DEPTH);
    const char *want[DEPTH + 2];
    int nwant = walk_path_ctx(seed, DEPTH, want, DEPTH + 2);
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    FILE *out = tmpfile();
    if (len <= 0 || nwant != DEPTH + 2 || !out) {
        fprintf(stderr, "ctxbench: cannot set up the decode\n");
        return 1;
    }
    self[len] = 0;
    double d[DECODE_RUNS];
    for (int r = 0; r < DECODE_RUNS; r++) {
        d[r] = decode_once(fl, self, walk_stats_ctx.ctx, out);
        if (d[r] < 0 || !decoded_as(out, want, nwant)) {
            fprintf(stderr, "ctxbench: faultline decode --context %llx did not give the stack\n",
                    (unsigned long long)walk_stats_ctx.ctx);
            return 1;
        }
    }
    char label[80];
    snprintf(label, sizeof label, "faultline decode --context, %d frames (median of %d)", nwant,
             DECODE_RUNS);
    printf("  %-50s %9.1f ms\n", label, median(d, DECODE_RUNS) * 1e3);
    fclose(out);
    return 0;
}
