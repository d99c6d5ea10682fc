/*
 * svc_tool.c - drives the symbol services from the test scripts.
 *
 *   svc_tool [OPTIONS] frames LOG     symbolicate the crashing thread
 *   svc_tool [OPTIONS] locate ID...   locate build ids, print where, then stats
 *   svc_tool [OPTIONS] xml FILE       answer an XML symbolication request
 *
 * OPTIONS: --upload DIR, --debug-root DIR (repeatable), --no-debuginfod,
 * --cache DIR (symcaches; required for frames/xml), --stack client|server
 * (frames: which stack to print; default: the one fl_remote_unwind_pick
 * keeps).
 *
 * frames prints, per stack frame i and per (inline) function at its pc:
 *   F i 0xPC MODULE TIER SOURCE FUNCTION FILE:LINE [inlined]
 * after "stack client|server N" and, when the server unwound,
 * "server_frames N", "client_frames M", "pick client|server".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl_crashlog.h"
#include "fl_remote_unwind.h"
#include "svc_resolver.h"

static int usage(void)
{
    fprintf(stderr, "usage: svc_tool [--upload DIR] [--debug-root DIR] [--no-debuginfod] "
                    "[--cache DIR] [--stack client|server] frames LOG | locate ID... | xml FILE\n");
    return 2;
}

static const char *base_name(const char *p)
{
    const char *s = p ? strrchr(p, '/') : NULL;
    return s ? s + 1 : p ? p : "?";
}

static const fl_object *object_of(const fl_crashlog *log, uint64_t pc)
{
    for (size_t i = 0; i < log->nobjects; i++)
        if (pc >= log->objects[i].base && pc - log->objects[i].base < log->objects[i].size)
            return &log->objects[i];
    return NULL;
}

static void print_frame(svc_resolver *r, const fl_crashlog *log, size_t i, uint64_t pc, int exact)
{
    const fl_object *o = object_of(log, exact ? pc : pc - 1);
    if (!o) {
        printf("F %zu 0x%llx ? none none ?? ??:0\n", i, (unsigned long long)pc);
        return;
    }
    svc_module *m = svc_resolver_module(r, o->build_id, o->path);
    uint64_t bias = o->has_bias ? o->bias : o->base;
    uint64_t rel = (exact ? pc : pc - 1) - bias;
    fl_symframe fr[32];
    size_t n = 0;
    if (m && m->sc)
        n = fl_symcache_lookup(m->sc, rel, fr, 32);
    if (n > 32)
        n = 32;
    const char *tier = m ? fl_symlocate_tier_name(m->where.tier) : "none";
    const char *src = m ? fl_symlocate_source_name(m->where.source) : "none";
    if (n == 0) {
        printf("F %zu 0x%llx %s %s %s ?? ??:0\n", i, (unsigned long long)pc, base_name(o->name),
               tier, src);
        if (m && m->why[0])
            printf("# %s\n", m->why);
    }
    for (size_t k = 0; k < n; k++)
        printf("F %zu 0x%llx %s %s %s %s %s:%u%s\n", i, (unsigned long long)pc, base_name(o->name),
               tier, src, fr[k].function ? fr[k].function : "??", fr[k].file ? fr[k].file : "??",
               fr[k].line, fr[k].inlined ? " inlined" : "");
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    for (size_t got; b && (got = fread(b + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            char *nb = cap < (64u << 20) ? realloc(b, cap *= 2) : NULL;
            if (!nb) {
                free(b);
                b = NULL;
            } else {
                b = nb;
            }
        }
    }
    fclose(f);
    *len = n;
    return b;
}

int main(int argc, char **argv)
{
    fl_symlocate_config cfg;
    fl_symlocate_config_init(&cfg);
    const char *cache = NULL, *stack = NULL;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--upload") && i + 1 < argc && cfg.nupload_roots < FL_SYMLOC_MAX_ROOTS)
            cfg.upload_roots[cfg.nupload_roots++] = argv[++i];
        else if (!strcmp(argv[i], "--debug-root") && i + 1 < argc &&
                 cfg.ndebug_roots < FL_SYMLOC_MAX_ROOTS)
            cfg.debug_roots[cfg.ndebug_roots++] = argv[++i];
        else if (!strcmp(argv[i], "--no-debuginfod"))
            cfg.use_debuginfod = 0;
        else if (!strcmp(argv[i], "--cache") && i + 1 < argc)
            cache = argv[++i];
        else if (!strcmp(argv[i], "--stack") && i + 1 < argc)
            stack = argv[++i];
        else
            return usage();
    }
    if (i >= argc)
        return usage();
    const char *cmd = argv[i++];
    fl_symlocate *loc = NULL;
    int rc = fl_symlocate_new(&cfg, &loc);
    if (rc) {
        fprintf(stderr, "svc_tool: %s\n", fl_symlocate_strerror(rc));
        return 1;
    }
    static svc_resolver r; /* large: not on the stack */
    r.loc = loc;
    snprintf(r.cache_dir, sizeof r.cache_dir, "%s", cache ? cache : "");
    int status = 0;

    if (!strcmp(cmd, "locate")) {
        for (; i < argc; i++) {
            fl_symlocate_result res;
            char err[512];
            if (fl_symlocate_find(loc, argv[i], NULL, &res, err, sizeof err) == 0)
                printf("found %s %s %s %s\n", argv[i], fl_symlocate_tier_name(res.tier),
                       fl_symlocate_source_name(res.source), res.path);
            else
                printf("miss %s %s\n", argv[i], err);
        }
        fl_symlocate_stats st;
        fl_symlocate_get_stats(loc, &st);
        printf("stats lookups=%llu debuginfod_queries=%llu debuginfod_misses=%llu "
               "miss_cache_hits=%llu\n",
               (unsigned long long)st.lookups, (unsigned long long)st.debuginfod_queries,
               (unsigned long long)st.debuginfod_misses, (unsigned long long)st.miss_cache_hits);
    } else if (!strcmp(cmd, "frames") && i < argc && cache) {
        fl_crashlog *log = NULL;
        fl_crashlog_error e;
        if (fl_crashlog_parse_file(argv[i], &log, &e) != 0) {
            fprintf(stderr, "svc_tool: %s: line %u: %s\n", argv[i], e.line, e.message);
            status = 1;
            goto out;
        }
        static fl_ru_stack st;
        char err[256] = "";
        int urc = fl_remote_unwind(log, loc, &st, err, sizeof err);
        fl_ru_choice pick = fl_remote_unwind_pick(log, urc == 0 ? &st : NULL);
        if (urc == 0) {
            printf("server_frames %zu modules_with_file %zu stop %s\n", st.nframes,
                   st.modules_with_file, st.stop_reason[0] ? st.stop_reason : "end");
        } else {
            printf("server_error %s\n", err);
        }
        printf("client_frames %zu\n", log->ncallstack);
        printf("pick %s\n", pick == FL_RU_PICK_SERVER ? "server" : "client");
        int use_server = stack ? !strcmp(stack, "server") : pick == FL_RU_PICK_SERVER;
        if (use_server && urc != 0) {
            fprintf(stderr, "svc_tool: no server stack: %s\n", err);
            status = 1;
        } else if (use_server) {
            printf("stack server %zu\n", st.nframes);
            for (size_t k = 0; k < st.nframes; k++)
                print_frame(&r, log, k, st.pcs[k], k == 0 || st.activation[k]);
        } else {
            printf("stack client %zu\n", log->ncallstack);
            for (size_t k = 0; k < log->ncallstack; k++)
                print_frame(&r, log, k, log->callstack[k], k == 0);
        }
        fl_crashlog_free(log);
    } else if (!strcmp(cmd, "xml") && i < argc && cache) {
        size_t len = 0;
        char *xml = slurp(argv[i], &len);
        if (!xml) {
            fprintf(stderr, "svc_tool: cannot read %s\n", argv[i]);
            status = 1;
            goto out;
        }
        char *resp = NULL, err[256] = "";
        size_t rlen = 0;
        int xrc = fl_xmlsym_handle(xml, len, svc_resolve, &r, &resp, &rlen, err, sizeof err);
        if (resp)
            fwrite(resp, 1, rlen, stdout);
        if (xrc) {
            fprintf(stderr, "svc_tool: %s\n", err);
            status = 1;
        }
        free(resp);
        free(xml);
    } else {
        status = usage();
    }
out:
    svc_resolver_close(&r);
    fl_symlocate_free(loc);
    return status;
}
