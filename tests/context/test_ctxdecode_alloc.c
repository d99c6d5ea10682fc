/*
 * test_ctxdecode_alloc - the calling-context decoder (src/symbols/ctxdecode.c)
 * with its allocations failed one at a time, curl's "torture" idea: the
 * server runs it on crashes from the network, so running out of memory
 * must be an error for that crash, never an abort, a leak (the ASan build
 * runs this with LeakSanitizer), a wrong answer, or a graph a later call
 * trips on.
 *
 *   test_ctxdecode_alloc CTX_APP CTX_LIB CTX_INLINE_LIB
 *
 * The files are tests/context's ctx_app_O2 and libfl_ctx_lib_O2 (the
 * program run.sh decodes) and libfl_ctx_inline (the inlining shapes of
 * ctx_inline.c, so that link's edge-building allocations are reached too).
 * ctxdecode.c is compiled into this file with malloc, calloc, realloc and
 * strdup redirected to wrappers that count the allocations and fail the
 * Nth one -- only it: the code must not go on with a hole where it was.
 *
 * Stacks looked for are ones the program has, their values folded from
 * the graph's own function ids as the hooks fold them at run time.
 *  - build: new, add each file, link and search, with the Nth allocation
 *    failing.  A run that hit its failure must say so (add -1 with "out of
 *    memory" and fl_ctxgraph_nomem, link -1, or the search's nomem) and
 *    find nothing; the dead graph must refuse adds and link, and answer
 *    searches with nomem.  A run past the last allocation finds the stack.
 *  - search: one graph, each search strategy alone, with the Nth
 *    allocation of the search failing: nomem, no match, and the next
 *    search on the same graph gives the clean run's answer.
 */
#define _GNU_SOURCE
#include <capstone/capstone.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- allocation failure injection ---- */

#define MAX_ALLOCS 200000 /* per run: far above what these files take */

static long fi_fail_at; /* the allocation (from 1) that fails; 0: none */
static long fi_count;   /* allocations since fi_arm */
static bool fi_hit;     /* the one that was to fail did */
/* Per allocation of a counting run, where it was made (the caller's
 * return address: the wrappers are not inlined), so that every call site
 * gets failed whatever its position. */
static const void **fi_site;
static bool fi_record;

/* From now, allocation n fails (0: none); fi_hit says whether it did. */
static void fi_arm(long n)
{
    fi_fail_at = n;
    fi_count = 0;
    fi_hit = false;
}

/* No more failures; fi_hit and fi_count stay. */
static void fi_disarm(void)
{
    fi_fail_at = 0;
}

static bool fi_fail(const void *site)
{
    fi_count++;
    if (fi_record && fi_count <= MAX_ALLOCS)
        fi_site[fi_count - 1] = site;
    if (fi_count != fi_fail_at)
        return false;
    fi_hit = true;
    return true;
}

__attribute__((noinline)) static void *fi_malloc(size_t n)
{
    return fi_fail(__builtin_return_address(0)) ? NULL : malloc(n);
}

__attribute__((noinline)) static void *fi_calloc(size_t n, size_t size)
{
    return fi_fail(__builtin_return_address(0)) ? NULL : calloc(n, size);
}

__attribute__((noinline)) static void *fi_realloc(void *p, size_t n)
{
    return fi_fail(__builtin_return_address(0)) ? NULL : realloc(p, n);
}

__attribute__((noinline)) static char *fi_strdup(const char *s)
{
    return fi_fail(__builtin_return_address(0)) ? NULL : strdup(s);
}

/* The decoder itself, with its allocations through the wrappers (the
 * system headers above are already in: only its own calls change). */
#define malloc(n) fi_malloc(n)
#define calloc(n, size) fi_calloc(n, size)
#define realloc(p, n) fi_realloc(p, n)
#define strdup(s) fi_strdup(s)
#include "../../src/symbols/ctxdecode.c"
#undef malloc
#undef calloc
#undef realloc
#undef strdup

#include <cmocka.h>

/* ---- the files and the stacks looked for ---- */

typedef struct file {
    const char *path;
    int fd;
    Elf *elf;
} file;

#define NFILES 3
static file g_files[NFILES];

typedef struct target {
    const char *stack[32]; /* innermost first */
    size_t n;
    uint64_t value;
    char expect[1024]; /* the clean search's frames: "f g main" */
} target;

/* from_lib is called back through a pointer from the library: a path
 * across two files and through a guessed edge. */
static target g_callback = {{"from_lib", "lib_inner", "lib_entry", "main"}, 4, 0, ""};
/* deep(20) and main: too deep for meeting in the middle's forward table
 * alone, on a small budget (filled in main). */
static target g_deep = {{NULL}, 22, 0, ""};

/* Whether a symbol name is `want`, or a GCC clone of it (want.part.0). */
static bool same_function(const char *name, const char *want)
{
    size_t n = strlen(want);
    return !strncmp(name, want, n) && (name[n] == '\0' || name[n] == '.');
}

/* The value of t's stack, from the ids of the graph's instrumented
 * functions. */
static uint64_t stack_value(const fl_ctxgraph *g, const target *t)
{
    uint64_t v = 0;
    for (size_t k = t->n; k-- > 0;) {
        size_t i = 0;
        while (i < g->nfuncs &&
               !(g->funcs[i].instrumented && same_function(g->funcs[i].name, t->stack[k])))
            i++;
        if (i == g->nfuncs) {
            fprintf(stderr, "no instrumented function %s in the graph\n", t->stack[k]);
            exit(1);
        }
        v = fl_ctx_push(v, g->funcs[i].id);
    }
    return v;
}

/* What the search reported: the frames' functions, "a b c". */
typedef struct found {
    int calls;
    char names[1024];
} found;

static int on_match(const fl_ctxframe *fr, size_t n, void *arg)
{
    found *f = arg;
    f->calls++;
    f->names[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(f->names);
        snprintf(f->names + len, sizeof f->names - len, "%s%s", i ? " " : "", fr[i].function);
    }
    return 0;
}

/* ---- runs ---- */

/* A graph whose add or link failed: refuses another add, link and any
 * search, and is then freed (LeakSanitizer checks nothing stays). */
static void check_dead_graph(fl_ctxgraph *g, uint64_t value)
{
    char err[256];
    assert_true(fl_ctxgraph_nomem(g));
    assert_int_equal(fl_ctxgraph_add(g, g_files[0].path, g_files[0].elf, NULL, err, sizeof err),
                     -1);
    assert_non_null(strstr(err, "out of memory"));
    assert_int_equal(fl_ctxgraph_link(g), -1);
    assert_int_equal(fl_ctxgraph_instrumented(g), 0);
    fl_ctxsearch s = {.max_depth = 16};
    found f = {0};
    assert_int_equal(fl_ctxgraph_search(g, value, &s, on_match, &f), 0);
    assert_true(s.nomem);
    assert_false(s.complete);
    assert_int_equal(f.calls, 0);
    fl_ctxgraph_free(g);
}

/* The graph of the files, linked: NULL when memory ran out (checked to
 * be said so, and the dead graph checked and freed). */
static fl_ctxgraph *build(uint64_t value)
{
    char err[256];
    fl_ctxgraph *g = fl_ctxgraph_new();
    if (!g)
        return NULL;
    for (size_t i = 0; i < NFILES; i++) {
        err[0] = '\0';
        if (fl_ctxgraph_add(g, g_files[i].path, g_files[i].elf, NULL, err, sizeof err)) {
            assert_non_null(strstr(err, "out of memory"));
            check_dead_graph(g, value);
            return NULL;
        }
        assert_false(fl_ctxgraph_nomem(g));
    }
    if (fl_ctxgraph_link(g)) {
        check_dead_graph(g, value);
        return NULL;
    }
    assert_false(fl_ctxgraph_nomem(g));
    assert_true(fl_ctxgraph_instrumented(g) > 0);
    return g;
}

/* A search of t's value.  When memory ran out: checked to have said so
 * and found nothing, and returns -1.  Else its match (*f) and 0. */
static int search(const fl_ctxgraph *g, const fl_ctxsearch *proto, const target *t, found *f,
                  fl_ctxsearch *out)
{
    fl_ctxsearch s = *proto;
    *f = (found){0};
    unsigned n = fl_ctxgraph_search(g, t->value, &s, on_match, f);
    if (out)
        *out = s;
    if (s.nomem) {
        assert_int_equal(n, 0);
        assert_false(s.complete);
        assert_int_equal(f->calls, 0);
        return -1;
    }
    assert_int_equal(n, (unsigned)f->calls);
    return 0;
}

/* The allocations to fail, given a clean run's `total` and where each
 * was made: every one of the first DENSE; beyond, for every call site
 * its first two and its last (a site in a loop is where a half-built
 * state would show), and every stride-th, about SAMPLES of them.  The
 * runs here make a few hundred allocations, so all of them fail in turn;
 * the sampling keeps the test to seconds (also under ASan, each run
 * costing a whole graph) if the test programs grow.  Returns how many,
 * in order; *nsites: the distinct call sites. */
#define DENSE 2000
#define SAMPLES 200
#define MAX_SITES 4096
static size_t plan(long total, long *out, size_t *nsites)
{
    bool *pick = calloc((size_t)total + 1, sizeof *pick);
    const void **site = calloc(MAX_SITES, sizeof *site);
    long *seen = calloc(MAX_SITES, sizeof *seen), *last = calloc(MAX_SITES, sizeof *last);
    assert_true(pick && site && seen && last);
    size_t ns = 0;
    long stride = total / SAMPLES > 1 ? total / SAMPLES : 1;
    for (long i = 1; i <= total; i++) {
        size_t j = 0;
        while (j < ns && site[j] != fi_site[i - 1])
            j++;
        if (j == ns) {
            assert_true(ns < MAX_SITES);
            site[ns++] = fi_site[i - 1];
        }
        last[j] = i;
        if (++seen[j] <= 2 || i <= DENSE || i % stride == 0)
            pick[i] = true;
    }
    for (size_t j = 0; j < ns; j++)
        pick[last[j]] = true;
    size_t n = 0;
    for (long i = 1; i <= total; i++)
        if (pick[i])
            out[n++] = i;
    *nsites = ns;
    free(pick);
    free(site);
    free(seen);
    free(last);
    return n;
}

/* ---- the tests ---- */

/* New, add, link and search, with each planned allocation failing. */
static void test_build_failures(void **state)
{
    (void)state;
    const target *t = &g_callback;
    fl_ctxsearch proto = {.max_depth = 16, .budget = 1000000};
    found f;

    /* A clean run, counted and its allocation sites recorded. */
    fi_arm(0);
    fi_record = true;
    fl_ctxgraph *g = build(t->value);
    assert_non_null(g);
    assert_int_equal(search(g, &proto, t, &f, NULL), 0);
    fl_ctxgraph_free(g);
    fi_record = false;
    long total = fi_count;
    assert_true(total > 0 && total <= MAX_ALLOCS);
    assert_string_equal(f.names, t->expect);

    long *runs = malloc((size_t)total * sizeof *runs);
    assert_non_null(runs);
    size_t nsites, nruns = plan(total, runs, &nsites);
    size_t in_build = 0;
    for (size_t r = 0; r < nruns; r++) {
        fi_arm(runs[r]);
        g = build(t->value);
        int rc = g ? search(g, &proto, t, &f, NULL) : -1;
        fi_disarm();
        in_build += !g;
        fl_ctxgraph_free(g);
        /* Each run makes the clean run's allocations up to the one that
         * fails: it was hit, and the run failed. */
        assert_true(fi_hit);
        assert_int_equal(rc, -1);
    }
    /* One past the last: nothing fails, the stack is found. */
    fi_arm(total + 1);
    g = build(t->value);
    assert_non_null(g);
    assert_int_equal(search(g, &proto, t, &f, NULL), 0);
    fl_ctxgraph_free(g);
    fi_disarm();
    assert_false(fi_hit);
    assert_string_equal(f.names, t->expect);
    print_message("build, link, search: %ld allocations from %zu call sites; %zu failed in turn "
                  "(%zu in new/add/link)\n",
                  total, nsites, nruns, in_build);
    free(runs);
}

/* One strategy's search on a built graph, with each planned allocation
 * of it failing; after each failure the graph still answers as in the
 * clean run. */
static void search_failures(const char *what, const target *t, fl_ctxsearch proto, bool must_match)
{
    fi_disarm();
    fl_ctxgraph *g = build(t->value);
    assert_non_null(g);
    found clean, f;
    fl_ctxsearch cs;
    fi_arm(0);
    fi_record = true;
    assert_int_equal(search(g, &proto, t, &clean, &cs), 0);
    fi_record = false;
    long total = fi_count;
    assert_true(total > 0 && total <= MAX_ALLOCS);
    if (must_match)
        assert_string_equal(clean.names, t->expect);
    else /* the budget ran out first: nothing, and said so */
        assert_true(clean.calls == 0 && !cs.complete);

    long *runs = malloc((size_t)total * sizeof *runs);
    assert_non_null(runs);
    size_t nsites, nruns = plan(total, runs, &nsites);
    for (size_t r = 0; r < nruns; r++) {
        fi_arm(runs[r]);
        int rc = search(g, &proto, t, &f, NULL);
        fi_disarm();
        assert_true(fi_hit);
        assert_int_equal(rc, -1);
        /* g is untouched: the next search answers as the clean one. */
        fl_ctxsearch s;
        assert_int_equal(search(g, &proto, t, &f, &s), 0);
        assert_int_equal(f.calls, clean.calls);
        assert_string_equal(f.names, clean.names);
        assert_int_equal(s.complete, cs.complete);
    }
    print_message("%s: %ld allocations from %zu call sites, all failed in turn (%zu)\n", what,
                  total, nsites, nruns);
    free(runs);
    fl_ctxgraph_free(g);
}

static void test_search_deepening(void **state)
{
    (void)state;
    fl_ctxsearch s = {.max_depth = 16, .budget = 1000000, .strategy = FL_CTX_DEEPENING};
    search_failures("deepening", &g_callback, s, true);
}

/* Meeting in the middle alone: its tables (edges reversed, the forward
 * paths and their hash, rebuilt as the forward weight goes up), the
 * stack found in the forward table.  The budget caps that table at 10,000
 * paths (a few doublings of it): a larger one costs time, not coverage. */
static void test_search_mitm(void **state)
{
    (void)state;
    fl_ctxsearch s = {.max_depth = 16, .budget = 40000, .strategy = FL_CTX_MITM};
    search_failures("mitm, forward", &g_callback, s, true);
}

/* A forward table capped by a small budget (a quarter of it, 1,500
 * paths: too few for a stack 22 deep): the deep stack is found from the
 * top, by the backward search (its own allocation).  6,000 rather than
 * 5,000 since ctx_app calls dlsym: the decoder then takes ctx_inline,
 * which nothing given links, for a plugin, and its exports for pointer
 * targets -- enough wider under ASan's instrumentation that 5,000 ran out
 * before the stack was found. */
static void test_search_mitm_backward(void **state)
{
    (void)state;
    fl_ctxsearch s = {.max_depth = 32, .budget = 6000, .strategy = FL_CTX_MITM};
    search_failures("mitm, backward", &g_deep, s, true);
}

/* A budget that runs out before the stack is found: a failure is still
 * said as one, not as the budget (the clean run's answer). */
static void test_search_mitm_budget(void **state)
{
    (void)state;
    fl_ctxsearch s = {.max_depth = 32, .budget = 8, .strategy = FL_CTX_MITM};
    search_failures("mitm, budget out", &g_deep, s, false);
}

/* A search asked to stop (fl_ctxsearch.cancel: a server stopping) ends
 * within 4096 steps of the flag, in each strategy, where its budget would
 * have let it try a hundred million paths for a value no stack has. */
static void test_search_cancel(void **state)
{
    (void)state;
    fl_ctxgraph *g = build(0);
    assert_non_null(g);
    static const int strategies[] = {FL_CTX_AUTO, FL_CTX_DEEPENING, FL_CTX_MITM};
    bool stop = true;
    for (size_t i = 0; i < sizeof strategies / sizeof strategies[0]; i++) {
        fl_ctxsearch s = {
            .max_depth = 32, .budget = 100000000, .strategy = strategies[i], .cancel = &stop};
        found f = {0};
        assert_int_equal(fl_ctxgraph_search(g, 0x0123456789abcdefull, &s, on_match, &f), 0);
        assert_false(s.complete);
        assert_false(s.nomem);
        assert_true(s.steps <= 2 * 4096);
    }
    fl_ctxgraph_free(g);
}

/* The value and clean answer of t, from a graph built with nothing
 * failing: the stack, clone suffixes aside. */
static void prepare(const fl_ctxgraph *g, target *t)
{
    t->value = stack_value(g, t);
    fl_ctxsearch s = {.max_depth = 32, .budget = 100000000};
    found f = {0};
    if (fl_ctxgraph_search(g, t->value, &s, on_match, &f) != 1) {
        fprintf(stderr, "the value 0x%llx of %s... is not found\n", (unsigned long long)t->value,
                t->stack[0]);
        exit(1);
    }
    snprintf(t->expect, sizeof t->expect, "%s", f.names);
    char *save = NULL, *p = strtok_r(f.names, " ", &save);
    for (size_t k = 0; k < t->n; k++, p = strtok_r(NULL, " ", &save))
        if (!p || !same_function(p, t->stack[k])) {
            fprintf(stderr, "0x%llx decoded to '%s'\n", (unsigned long long)t->value, t->expect);
            exit(1);
        }
}

int main(int argc, char **argv)
{
    if (argc != 1 + NFILES) {
        fprintf(stderr, "usage: test_ctxdecode_alloc CTX_APP CTX_LIB CTX_INLINE_LIB\n");
        return 2;
    }
    elf_version(EV_CURRENT);
    for (size_t i = 0; i < NFILES; i++) {
        file *f = &g_files[i];
        f->path = argv[1 + i];
        f->fd = open(f->path, O_RDONLY | O_CLOEXEC);
        f->elf = f->fd >= 0 ? elf_begin(f->fd, ELF_C_READ_MMAP, NULL) : NULL;
        if (!f->elf) {
            fprintf(stderr, "%s: cannot open as ELF\n", f->path);
            return 1;
        }
    }
    fi_site = calloc(MAX_ALLOCS, sizeof *fi_site);
    if (!fi_site)
        return 1;
    for (size_t k = 0; k < g_deep.n; k++)
        g_deep.stack[k] = k + 1 < g_deep.n ? "deep" : "main";
    fl_ctxgraph *g = build(0);
    prepare(g, &g_callback);
    prepare(g, &g_deep);
    fl_ctxgraph_free(g);

    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_build_failures),     cmocka_unit_test(test_search_deepening),
        cmocka_unit_test(test_search_mitm),        cmocka_unit_test(test_search_mitm_backward),
        cmocka_unit_test(test_search_mitm_budget), cmocka_unit_test(test_search_cancel),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    for (size_t i = 0; i < NFILES; i++) {
        elf_end(g_files[i].elf);
        close(g_files[i].fd);
    }
    free(fi_site);
    return rc;
}
