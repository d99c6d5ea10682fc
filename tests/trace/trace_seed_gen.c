/*
 * trace_seed_gen MODE OUT OBJ [OBJ2] - writes a trace-ID dump
 * (faultline_trace_dump) to OUT after tracing from the objects OBJ...
 * (fuzz/symbols/tracedecode_obj.c built as a library: dlopen()ed, their
 * tdo_* functions called), for fuzz_tracedecode's seed corpus
 * (fuzz/symbols/make_tracedecode_seeds.sh).  MODE:
 *   all        state, breadcrumbs, every argument type, hard-coded strings,
 *              a long format, events with a calling context (TRACE_CONTEXT)
 *   max        the largest records: eight strings longer than are kept
 *   noinstall  no faultline_install(): no MODULE lines, sites named "-"
 *   cutpath    OBJ loaded from a path longer than a module's path keeps
 *              (MODULE_PATH_CUT)
 *   dlclose    OBJ's hard-coded strings traced, then OBJ dlclose()d
 * Only trace_with_context() is built with -finstrument-functions' hooks
 * (the file is compiled with it, the rest opts out): its events alone
 * carry a calling context.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "faultline.h"

#define NOINST __attribute__((no_instrument_function))

typedef void (*str_int_fn)(const char *, int);
typedef void (*str_fn)(const char *);
typedef void (*int_fn)(int);

NOINST static void *need(void *h, const char *name)
{
    void *f = h ? dlsym(h, name) : NULL;
    if (!f) {
        fprintf(stderr, "trace_seed_gen: %s: %s\n", name, dlerror());
        exit(4);
    }
    return f;
}

NOINST static void *load(const char *path)
{
    void *h = dlopen(path, RTLD_NOW);
    if (!h) {
        fprintf(stderr, "trace_seed_gen: %s\n", dlerror());
        exit(4);
    }
    return h;
}

/* Instrumented: the events here carry the thread's calling context. */
static void trace_with_context(void *h)
{
    ((str_fn)need(h, "tdo_trace_static"))("in context");
    FAULTLINE_TRACE("context event %d", 1);
}

NOINST static void trace_everything(void *h)
{
    ((str_int_fn)need(h, "tdo_trace_types"))("copied\twith\ncontrol \x01 bytes", 3);
    ((str_fn)need(h, "tdo_trace_static"))("copied");
    ((int_fn)need(h, "tdo_trace_long_format"))(4);
}

/* OBJ copied under a directory path of more than FL_PATH_MAX (1024)
 * bytes; returns the copy's path (malloc'd), or exits. */
NOINST static char *deep_copy(const char *obj)
{
    char *path = malloc(4096);
    char seg[201];
    memset(seg, 'd', sizeof seg - 1);
    seg[sizeof seg - 1] = '\0';
    snprintf(path, 4096, "/tmp/trace_seed_gen.%ld", (long)getpid());
    if (mkdir(path, 0700))
        exit(5);
    for (int i = 0; i < 6; i++) {
        strcat(path, "/");
        strcat(path, seg);
        if (mkdir(path, 0700))
            exit(5);
    }
    strcat(path, "/libtdo.so");
    int in = open(obj, O_RDONLY), out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    char buf[65536];
    ssize_t n;
    while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)n) != n)
            exit(5);
    if (in < 0 || out < 0)
        exit(5);
    close(in);
    close(out);
    return path;
}

NOINST static void remove_deep(char *path)
{
    unlink(path);
    for (char *s; (s = strrchr(path, '/')) && strstr(path, "/trace_seed_gen.");) {
        *s = '\0';
        if (strstr(path, "/trace_seed_gen.") && rmdir(path))
            break;
    }
}

NOINST int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: trace_seed_gen all|max|noinstall|cutpath|dlclose OUT OBJ [OBJ2]\n");
        return 64;
    }
    const char *mode = argv[1];
    /* The objects are loaded before faultline_install(), which takes
     * their read-only segments: their hard-coded strings are then kept by
     * address ("@MOD:VADDR"), not copied. */
    char *deep = !strcmp(mode, "cutpath") ? deep_copy(argv[3]) : NULL;
    void *h = load(deep ? deep : argv[3]), *h2 = argc > 4 ? load(argv[4]) : NULL;
    if (strcmp(mode, "noinstall") && !faultline_install("seedgen", "1.0", NULL))
        return 3;
    if (!strcmp(mode, "all")) {
        faultline_set_state("mode", "seed corpus");
        faultline_set_state("escapes", "tab\there, newline\nthere, \x7f and \x01");
        faultline_set_state("empty", "");
        faultline_breadcrumb("start", "main entered");
        faultline_breadcrumb("two words", "a category with a blank");
        trace_everything(h);
        trace_with_context(h);
        if (h2) {
            trace_everything(h2);
            trace_with_context(h2);
        }
        faultline_breadcrumb("end", "about to dump");
    } else if (!strcmp(mode, "max")) {
        char s[300];
        memset(s, 's', sizeof s - 1);
        s[sizeof s - 1] = '\0';
        ((str_fn)need(h, "tdo_trace_max"))(s);
    } else if (!strcmp(mode, "noinstall")) {
        trace_everything(h);
    } else if (!strcmp(mode, "cutpath")) {
        ((str_fn)need(h, "tdo_trace_static"))("from a long path");
    } else if (!strcmp(mode, "dlclose")) {
        ((str_fn)need(h, "tdo_trace_static"))("before dlclose");
        dlclose(h);
    } else {
        fprintf(stderr, "trace_seed_gen: unknown mode %s\n", mode);
        return 64;
    }
    int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int rc = fd >= 0 && faultline_trace_dump(fd) > 0 && close(fd) == 0 ? 0 : 5;
    if (deep) {
        remove_deep(deep);
        free(deep);
    }
    return rc;
}
