/*
 * worker.c - the processing workers: claim tasks, turn raw logs into
 * processed crashes and group updates.
 *
 * A worker claims a batch of tasks (each leased for lease_s seconds),
 * processes every crash outside any transaction, then applies all results
 * and acknowledges all tasks in one transaction (one fsync per batch).  If
 * the process dies anywhere in between, the leases expire and another
 * worker redoes the batch; apply() skips crashes already processed, so
 * nothing is counted twice.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fl_demangle.h"
#include "fl_jsonout.h"
#include "fl_serve.h"
#include "fl_srvutil.h"
#include "fl_tracesec.h"

#define MAX_BATCH 256

struct fl_workers {
    fl_store *store;
    fl_queue *queue;
    fl_metrics *m;
    fl_workers_config cfg;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t wakeups;
    bool stopping;
    pthread_t *th;
    unsigned started;
    /* Held for reading while a batch is processed, for writing to swap
     * cfg.rules (fl_workers_set_rules). */
    pthread_rwlock_t rules_lock;
    /* FAULTLINE_TEST_CRASH_ON: the crash id whose processing aborts the
     * process -- how the tests make a report that kills processing. */
    const char *crash_on;
};

/* A watched report whose earlier starts never ended this many times is not
 * processed again (see processing_started in fl_store.h). */
#define FL_POISON_STARTS 2

/* ---- processing one crash */

static json_t *hex_json(uint64_t v)
{
    char b[24];
    snprintf(b, sizeof b, "0x%" PRIx64, v);
    return json_string(b);
}

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

/* A log's strings need not be UTF-8 (a thread's name, an exception's
 * message): such bytes become U+FFFD rather than losing the field. */
static void set_str(json_t *o, const char *k, const char *v)
{
    if (v)
        json_object_set_new(o, k, fl_json_text(v, strlen(v)));
}

static json_t *frames_json(const fl_frames *f)
{
    json_t *a = json_array();
    for (size_t i = 0; i < f->n; i++) {
        const fl_frame *fr = &f->v[i];
        json_t *o = json_object();
        json_object_set_new(o, "function", str_or_null(fr->function));
        json_object_set_new(o, "file", str_or_null(fr->file));
        json_object_set_new(o, "line", fr->line ? json_integer(fr->line) : json_null());
        json_object_set_new(o, "column", fr->column ? json_integer(fr->column) : json_null());
        json_object_set_new(o, "module", str_or_null(fr->module));
        json_object_set_new(o, "address", hex_json(fr->address));
        json_object_set_new(o, "offset", fr->module ? hex_json(fr->rel) : json_null());
        json_object_set_new(o, "inlined", json_boolean(fr->inlined));
        json_object_set_new(o, "name", json_string(fr->name));
        json_object_set_new(o, "in_signature", json_boolean(fr->in_signature));
        if (fr->raw_function)
            json_object_set_new(o, "raw_function", json_string(fr->raw_function));
        if (fr->tail_call)
            json_object_set_new(o, "tail_call", json_true());
        if (fr->at_entry)
            json_object_set_new(o, "at_entry", json_true());
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *kv_json(const fl_kv *kv, size_t n)
{
    json_t *o = json_object();
    for (size_t i = 0; i < n; i++)
        if (kv[i].key)
            json_object_set_new(o, kv[i].key, str_or_null(kv[i].value));
    return o;
}

static json_t *metadata_json(const fl_crashlog *L)
{
    json_t *m = json_object();
    set_str(m, "producer", L->producer);
    set_str(m, "producer_version", L->producer_version);
    json_object_set_new(m, "crashlog_version", json_integer(L->log_version));
    set_str(m, "app", L->app_name);
    set_str(m, "app_version", L->app_version);
    set_str(m, "platform", L->platform_name);
    set_str(m, "platform_version", L->platform_version);
    set_str(m, "cpuarch", L->cpuarch);
    set_str(m, "os_name", L->os_name);
    set_str(m, "os_version", L->os_version);
    set_str(m, "os_pretty_name", L->os_pretty_name);
    set_str(m, "kernel_version", L->kernel_version);
    set_str(m, "executable", L->executable);
    set_str(m, "crash_id", L->crash_id);
    set_str(m, "install_id", L->install_id);
    if (L->has_crash_signal)
        json_object_set_new(m, "signal", json_integer(L->crash_signal));
    set_str(m, "signal_name", L->signal_name);
    if (L->has_crash_code)
        json_object_set_new(m, "signal_code", json_integer(L->crash_code));
    if (L->has_crash_address)
        json_object_set_new(m, "fault_address", hex_json(L->crash_address));
    if (L->has_crash_time) {
        char b[32];
        fl_iso_time(L->crash_time, b);
        json_object_set_new(m, "crash_time", json_string(b));
    }
    if (L->has_uptime)
        json_object_set_new(m, "uptime_s", json_integer(L->uptime));
    if (L->has_pid)
        json_object_set_new(m, "pid", json_integer((json_int_t)L->pid));
    if (L->has_crash_tid)
        json_object_set_new(m, "crash_thread", json_integer((json_int_t)L->crash_tid));
    set_str(m, "crash_thread_name", L->crash_thread_name);
    if (L->handler_fault)
        json_object_set_new(m, "handler_fault", json_integer(L->handler_fault));
    if (L->threads_omitted)
        json_object_set_new(m, "threads_omitted", json_integer((json_int_t)L->threads_omitted));
    if (L->objects_omitted)
        json_object_set_new(m, "objects_omitted", json_integer((json_int_t)L->objects_omitted));
    if (L->vfork_parent)
        json_object_set_new(m, "vfork_parent", json_integer((json_int_t)L->vfork_parent));
    set_str(m, "abort_message", L->abort_message);
    if (L->exception_type) {
        /* An uncaught C++ exception: its type as C++ spells it, the
         * mangled name the log has, and what(). */
        json_t *e = json_object();
        char *type = fl_demangle_type(L->exception_type);
        set_str(e, "type", type ? type : L->exception_type);
        free(type);
        set_str(e, "mangled", L->exception_type);
        set_str(e, "message", L->exception_message);
        json_object_set_new(m, "exception", e);
    }
    json_object_set_new(m, "etc", kv_json(L->etc, L->netc));
    json_object_set_new(m, "state", kv_json(L->state, L->nstate));
    json_t *regs = json_object();
    for (size_t i = 0; i < L->nregisters; i++)
        if (L->registers[i].name)
            json_object_set_new(regs, L->registers[i].name, hex_json(L->registers[i].value));
    json_object_set_new(m, "registers", regs);
    json_t *objs = json_array();
    for (size_t i = 0; i < L->nobjects; i++) {
        const fl_object *o = &L->objects[i];
        json_t *j = json_pack("{s:s?,s:o,s:I}", "name", o->name, "base", hex_json(o->base),
                              "size", (json_int_t)o->size);
        if (o->has_bias)
            json_object_set_new(j, "bias", hex_json(o->bias));
        set_str(j, "build_id", o->build_id);
        set_str(j, "path", o->path);
        if (o->path_cut)
            json_object_set_new(j, "path_cut", json_integer((json_int_t)o->path_cut));
        json_array_append_new(objs, j);
    }
    json_object_set_new(m, "objects", objs);
    json_t *u = kv_json(L->unknown, L->nunknown);
    json_object_set_new(m, "other", u);
    return m;
}

void fl_processed_release(fl_processed_buf *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->nmissing; i++)
        free(b->missing[i]);
    free(b->missing);
    free(b->signature);
    free(b->frames_json);
    free(b->zprocessed);
    free(b->app);
    free(b->version);
    free(b->os);
    free(b->arch);
    free(b->install_id);
    memset(b, 0, sizeof *b);
}

/* The architecture breakdown's name for CPUARCH_NAME: MojoCrash spells
 * x86-64 so, other writers `uname -m` (x86_64) or Debian (amd64, arm64):
 * one machine, one row. */
static const char *arch_name(const char *a)
{
    if (!strcmp(a, "x86_64") || !strcmp(a, "amd64"))
        return "x86-64";
    if (!strcmp(a, "arm64"))
        return "aarch64";
    return a;
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* ---- what one crash may cost */

/* A log comes from whoever reaches the ingest port (the key ships with the
 * application), and nothing in its format bounds its lists: a report of
 * 800 KB gzip (8 MiB of log) with 180,000 OBJECTs and as many frames kept
 * a worker busy for 38 s (each frame looks for its object among all of
 * them), and one of 300,000 frames took 4 s and 500 MB.  libfaultline
 * writes at most 1024 objects, 256 frames, 256 threads of 64 frames, 500
 * trace events and 100 breadcrumbs; the caps leave room above that and
 * keep the innermost frames and the newest events. */
#define PROC_MAX_OBJECTS 1024
#define PROC_MAX_FRAMES 1024
#define PROC_MAX_THREADS 256
#define PROC_MAX_THREAD_FRAMES 128
#define PROC_MAX_TRACE 2048
#define PROC_MAX_BREADCRUMBS 1024

/* Cuts L's lists to the caps; what was cut goes into *omitted (a JSON
 * object, NULL when nothing was). */
static void cap_log(fl_crashlog *L, json_t **omitted)
{
    size_t objects = 0, frames = 0, threads = 0, trace = 0, crumbs = 0;
    *omitted = NULL;
    if (L->nobjects > PROC_MAX_OBJECTS) {
        objects = L->nobjects - PROC_MAX_OBJECTS;
        L->nobjects = PROC_MAX_OBJECTS;
    }
    if (L->ncallstack > PROC_MAX_FRAMES) {
        frames += L->ncallstack - PROC_MAX_FRAMES;
        L->ncallstack = PROC_MAX_FRAMES;
    }
    if (L->nthreads > PROC_MAX_THREADS) {
        threads = L->nthreads - PROC_MAX_THREADS;
        for (size_t i = PROC_MAX_THREADS; i < L->nthreads; i++)
            free(L->threads[i].frames); /* fl_crashlog_free frees the first nthreads */
        L->nthreads = PROC_MAX_THREADS;
    }
    for (size_t i = 0; i < L->nthreads; i++)
        if (L->threads[i].nframes > PROC_MAX_THREAD_FRAMES) {
            frames += L->threads[i].nframes - PROC_MAX_THREAD_FRAMES;
            L->threads[i].nframes = PROC_MAX_THREAD_FRAMES;
        }
    if (L->ntrace > PROC_MAX_TRACE) { /* the newest are last */
        trace = L->ntrace - PROC_MAX_TRACE;
        memmove(L->trace, L->trace + trace, PROC_MAX_TRACE * sizeof *L->trace);
        L->ntrace = PROC_MAX_TRACE;
    }
    if (L->nbreadcrumbs > PROC_MAX_BREADCRUMBS) {
        crumbs = L->nbreadcrumbs - PROC_MAX_BREADCRUMBS;
        memmove(L->breadcrumbs, L->breadcrumbs + crumbs,
                PROC_MAX_BREADCRUMBS * sizeof *L->breadcrumbs);
        L->nbreadcrumbs = PROC_MAX_BREADCRUMBS;
    }
    if (!objects && !frames && !threads && !trace && !crumbs)
        return;
    *omitted = json_object();
    const struct {
        const char *k;
        size_t n;
    } cut[] = {{"objects", objects},
               {"frames", frames},
               {"threads", threads},
               {"trace", trace},
               {"breadcrumbs", crumbs}};
    for (size_t i = 0; i < sizeof cut / sizeof cut[0]; i++)
        if (cut[i].n)
            json_object_set_new(*omitted, cut[i].k, json_integer((json_int_t)cut[i].n));
}

/* ---- symbol status: which modules had symbols, asked once per crash */

#define MAX_SYM_MODULES 256

typedef struct symwrap {
    const fl_workers_config *c;
    struct symmod {
        const char *module, *build_id; /* borrowed from the log */
        bool found;
        int gap;    /* fl_workers_config.symbols_gap's answer */
        char *wait; /* what would complete them, for gap 2 and 3 (malloc'ed) */
    } m[MAX_SYM_MODULES];
    size_t n;
} symwrap;

static bool same(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

static int wrap_symbolize(void *ctx, const char *module, const char *build_id, uint64_t rel,
                          fl_sym_frame *out, size_t cap)
{
    symwrap *w = ctx;
    struct symmod *m = NULL;
    for (size_t i = 0; i < w->n; i++)
        if (same(w->m[i].module, module) && same(w->m[i].build_id, build_id)) {
            m = &w->m[i];
            break;
        }
    if (m && !m->found)
        return -1;
    int n = w->c->symbolize(w->c->symbolize_ctx, module, build_id, rel, out, cap);
    if (!m && w->n < MAX_SYM_MODULES) {
        m = &w->m[w->n++];
        m->module = module;
        m->build_id = build_id;
        m->found = n >= 0;
        char wait[FL_SYMBOLS_WAIT_MAX] = "";
        m->gap = m->found && w->c->symbols_gap && build_id
                     ? w->c->symbols_gap(w->c->symbolize_ctx, build_id, wait, sizeof wait)
                     : 0;
        if ((m->gap == 2 || m->gap == 3) && (!wait[0] || !(m->wait = strdup(wait))))
            m->gap = 1;
    }
    return n;
}

static size_t wrap_tailcalls(void *ctx, const char *module, const char *build_id, uint64_t ret,
                             const char *callee, const char *callee_build_id, uint64_t callee_rel,
                             uint64_t *sites, bool *exact, bool *in_callee, size_t cap)
{
    symwrap *w = ctx;
    return w->c->tailcalls(w->c->symbolize_ctx, module, build_id, ret, callee, callee_build_id,
                           callee_rel, sites, exact, in_callee, cap);
}

static const char *base_of(const char *p)
{
    const char *s = p ? strrchr(p, '/') : NULL;
    return s ? s + 1 : p;
}

static void add_missing(fl_processed_buf *out, const char *id)
{
    char **nv = realloc(out->missing, (out->nmissing + 1) * sizeof *nv);
    if (nv) {
        out->missing = nv;
        if ((nv[out->nmissing] = strdup(id)))
            out->nmissing++;
    }
}

/* "symbols": {"status": complete|partial|missing|off, "modules": [...]},
 * and the build ids to backfill into out. */
/* Gap 3's list, "dwo-ID dwo-ID ... [DWZ-BUILD-ID]": each key waited for,
 * and the DWO ids into dwo (an array) and the dwz file into *dwz. */
static void split_wait(char *wait, fl_processed_buf *out, json_t *dwo, json_t **dwz)
{
    char *save = NULL;
    for (char *k = strtok_r(wait, " ", &save); k; k = strtok_r(NULL, " ", &save)) {
        add_missing(out, k);
        if (!strncmp(k, FL_DWO_KEY_PREFIX, strlen(FL_DWO_KEY_PREFIX)))
            json_array_append_new(dwo, json_string(k + strlen(FL_DWO_KEY_PREFIX)));
        else if (!*dwz)
            *dwz = json_string(k);
    }
}

static json_t *symbols_json(const symwrap *w, bool on, fl_processed_buf *out)
{
    json_t *mods = json_array();
    size_t found = 0, whole = 0;
    for (size_t i = 0; i < w->n; i++) {
        const struct symmod *m = &w->m[i];
        /* A module whose dwz file or some .dwo files are missing lacks
         * names and inlined frames: partial, not complete. */
        found += m->found;
        /* A stripped library's exports (gap 4) name its exported
         * functions, not the static ones between them: partial. */
        whole += m->found && m->gap < 2;
        json_t *j = json_pack("{s:s?,s:s?,s:b}", "module", base_of(m->module), "build_id",
                              m->build_id, "symbols", m->found);
        /* Names from a symbol table only: its DWARF, when it comes, gives
         * files, lines and inlined frames, and with them maybe another
         * signature, so the crash waits for it like one without symbols.
         * DWARF without its dwz file waits for that file; without some
         * .dwo files, for them (by DWO id) and for whole DWARF. */
        if (m->build_id && (!m->found || m->gap == 1 || m->gap == 3 || m->gap == 4))
            add_missing(out, m->build_id);
        if (m->gap == 4)
            json_object_set_new(j, "exports_only", json_true());
        if (m->gap == 2) {
            json_object_set_new(j, "dwz_missing", json_string(m->wait));
            add_missing(out, m->wait);
        } else if (m->gap == 3) {
            json_t *dwo = json_array(), *dwz = NULL;
            split_wait(m->wait, out, dwo, &dwz);
            json_object_set_new(j, "dwo_missing", dwo);
            if (dwz)
                json_object_set_new(j, "dwz_missing", dwz);
        }
        json_array_append_new(mods, j);
    }
    const char *st = !on                ? "off"
                     : whole == w->n    ? "complete"
                     : found == 0       ? "missing"
                                        : "partial";
    return json_pack("{s:s,s:o}", "status", st, "modules", mods);
}

/* The text of a crash's trace events whose formats were kept apart
 * (FAULTLINE_TRACE_APART), made from their objects' debug files: an
 * event whose format is not found says why, and its object's build id
 * waits like a module without symbols, so that the debug file, uploaded
 * later, formats the crash's events (the backfill). */
typedef struct apart_texts {
    char **text; /* per event; NULL for the others */
    bool *found;
    size_t n;
} apart_texts;

static void apart_free(apart_texts *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->n; i++)
        free(a->text[i]);
    free(a->text);
    free(a->found);
    free(a);
}

static bool is_missing(const fl_processed_buf *out, const char *id)
{
    for (size_t i = 0; i < out->nmissing; i++)
        if (!strcmp(out->missing[i], id))
            return true;
    return false;
}

static apart_texts *format_apart(fl_crashlog *L, const fl_workers_config *c, fl_processed_buf *out)
{
    apart_texts *a = calloc(1, sizeof *a);
    if (!a || !(a->text = calloc(L->ntrace + 1, sizeof *a->text)) ||
        !(a->found = calloc(L->ntrace + 1, sizeof *a->found))) {
        apart_free(a);
        return NULL;
    }
    a->n = L->ntrace;
    /* Each object's section, looked up once per crash. */
    struct sec {
        const fl_object *o;
        fl_tracesec *ts;
        bool damaged; /* the debug file's section is, not absent */
    } secs[32];
    size_t nsecs = 0;
    for (size_t i = 0; i < L->ntrace; i++) {
        const fl_trace_event *e = &L->trace[i];
        if (!e->apart)
            continue;
        uint64_t vaddr = 0;
        const fl_object *o = fl_crashlog_object_at(L, e->site, &vaddr);
        fl_tracesec *ts = NULL;
        bool damaged = false;
        size_t k = 0;
        while (k < nsecs && secs[k].o != o)
            k++;
        if (k < nsecs) {
            ts = secs[k].ts;
            damaged = secs[k].damaged;
        } else if (o && o->build_id) {
            const char *path = o->path && !o->path_cut ? o->path : NULL;
            int rc =
                c->trace_formats ? c->trace_formats(c->symbolize_ctx, o->build_id, path, &ts) : 0;
            damaged = rc < 0;
            if (rc != 1)
                ts = NULL;
            if (nsecs < sizeof secs / sizeof *secs)
                secs[nsecs++] = (struct sec){o, ts, damaged};
            if (!ts && !is_missing(out, o->build_id))
                add_missing(out, o->build_id);
        }
        const char *fmt = ts ? fl_tracesec_find(ts, vaddr, NULL) : NULL;
        char buf[FL_LINE_MAX];
        if (fmt)
            fl_trace_event_text(e, fmt, buf, sizeof buf);
        else if (!o || !o->build_id)
            snprintf(buf, sizeof buf,
                     "<trace format kept apart: the site 0x%" PRIx64
                     " is in no object with a build id>",
                     e->site);
        else if (!ts && damaged)
            snprintf(buf, sizeof buf,
                     "<trace format kept apart: the formats in the debug file of %s (build id "
                     "%s) are damaged>",
                     base_of(o->name), o->build_id);
        else if (!ts)
            snprintf(buf, sizeof buf,
                     "<trace format kept apart: no debug file of %s (build id %s) "
                     "with its formats yet>",
                     base_of(o->name), o->build_id);
        else
            snprintf(buf, sizeof buf,
                     "<trace format kept apart: the debug file of %s has no site "
                     "at 0x%" PRIx64 ">",
                     base_of(o->name), vaddr);
        a->found[i] = fmt != NULL;
        if (!(a->text[i] = strdup(buf))) {
            for (size_t j = 0; j < nsecs; j++)
                fl_tracesec_free(secs[j].ts);
            apart_free(a);
            return NULL;
        }
        /* A section not kept in secs (the 33rd object on): freed now. */
        if (k >= nsecs || secs[k].o != o)
            fl_tracesec_free(ts);
    }
    for (size_t j = 0; j < nsecs; j++)
        fl_tracesec_free(secs[j].ts);
    return a;
}

/* A log this large (thousands of modules, hundreds of threads) takes tens
 * of megabytes of parsed log and JSON to process: handed back to the
 * system afterwards, which a worker's heap keeps otherwise
 * (fl_release_heap). */
#define RELEASE_AFTER_LOG (256u << 10)

/* How many of pcs[0..n) lie in the log's objects, from the first: a walk
 * that left every object (libdwfl's frame-pointer fallback past a module
 * without a file) is cut there.  Return addresses are checked as pc - 1. */
static size_t in_objects(const fl_crashlog *L, const uint64_t *pcs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t pc = i ? pcs[i] - 1 : pcs[i];
        bool in = false;
        for (size_t k = 0; k < L->nobjects && !in; k++)
            in = pc - L->objects[k].base < L->objects[k].size;
        if (!in)
            return i;
    }
    return n;
}

/* The dump's stack of thread tid, when it is better than the one the
 * log gives (pcs[0..n)): it starts at the same pc and is longer within the
 * objects.  *keep: its frames to use, at most max (cap_log's bound).
 * NULL: keep the log's. */
static const fl_minidump_stack *dump_stack(const fl_crashlog *L, uint64_t tid, const uint64_t *pcs,
                                           size_t n, const fl_minidump_stack *st, size_t nst,
                                           size_t max, size_t *keep)
{
    for (size_t i = 0; i < nst; i++) {
        if (st[i].tid != tid || !st[i].n || (n && st[i].pcs[0] != pcs[0]))
            continue;
        *keep = in_objects(L, st[i].pcs, st[i].n);
        if (*keep > max)
            *keep = max;
        return *keep > n ? &st[i] : NULL;
    }
    return NULL;
}

int fl_process_log(const char *crash_id, const char *project, const char *raw, size_t len,
                   const void *dump, size_t dump_len, int64_t received, const fl_workers_config *c,
                   fl_processed_buf *out)
{
    memset(out, 0, sizeof *out);
    fl_crashlog *L = NULL;
    fl_crashlog_error err;
    if (fl_crashlog_parse(raw, len, &L, &err))
        return -1;
    if (c->crash_begin)
        c->crash_begin(c->symbolize_ctx);
    json_t *omitted = NULL;
    cap_log(L, &omitted);
    int rc = -1;
    json_t *doc = NULL;
    char *text = NULL;
    fl_frames crash = {0};
    fl_signature sig = {0};
    uint64_t *upcs = NULL;
    size_t nupcs = 0, ndst = 0;
    fl_minidump_stack *dst = NULL;
    apart_texts *apart = NULL;
    symwrap *sw = calloc(1, sizeof *sw);
    if (!sw)
        goto out;
    sw->c = c;
    fl_symbolize_fn sym = c->symbolize ? wrap_symbolize : NULL;
    fl_tailcall_fn tail = c->symbolize && c->tailcalls ? wrap_tailcalls : NULL;
    /* The server's own unwind replaces the client's stack when it is the
     * longer consistent one (fl_remote_unwind_pick). */
    const uint64_t *cs = L->callstack;
    size_t ncs = L->ncallstack;
    int ur = c->unwind ? c->unwind(c->symbolize_ctx, L, &upcs, &nupcs) : 0;
    if (ur < 0)
        goto out;
    if (ur > 0) {
        cs = upcs;
        ncs = nupcs;
    }
    /* A crash made from a minidump: its log has the other threads' pcs
     * only, and the crashing thread's first 32 KiB of stack; the dump,
     * when kept, has every thread's registers and whole stack. */
    if (dump && c->unwind_dump &&
        c->unwind_dump(c->symbolize_ctx, dump, dump_len, &dst, &ndst) != 1)
        dst = NULL, ndst = 0;
    size_t nd = 0;
    const fl_minidump_stack *ds =
        L->has_crash_tid ? dump_stack(L, L->crash_tid, cs, ncs, dst, ndst, PROC_MAX_FRAMES, &nd)
                         : NULL;
    if (ds) {
        cs = ds->pcs;
        ncs = nd;
        ur = 1;
    }
    if (fl_frames_build_tail(L, cs, ncs, c->rules, sym, tail, sw, &crash) ||
        fl_signature_compute(project, L->app_name, &crash, c->rules, &sig))
        goto out;

    doc = json_object();
    json_object_set_new(doc, "signature", json_string(sig.text));
    json_t *meta = metadata_json(L);
    if (omitted) {
        json_object_set_new(meta, "omitted", omitted);
        omitted = NULL;
    }
    json_object_set_new(doc, "metadata", meta);
    json_t *threads = json_array();
    json_t *t0 = json_object();
    if (L->has_crash_tid)
        json_object_set_new(t0, "tid", json_integer((json_int_t)L->crash_tid));
    json_object_set_new(t0, "name", str_or_null(L->crash_thread_name));
    json_object_set_new(t0, "crashed", json_true());
    if (L->has_crash_context)
        json_object_set_new(t0, "context", hex_json(L->crash_context));
    json_object_set_new(t0, "frames", frames_json(&crash));
    json_array_append_new(threads, t0);
    for (size_t i = 0; i < L->nthreads; i++) {
        const fl_thread *t = &L->threads[i];
        if (L->has_crash_tid && t->tid == L->crash_tid && L->ncallstack)
            continue; /* already there as the crashed thread */
        fl_frames tf = {0};
        ds = dump_stack(L, t->tid, t->frames, t->nframes, dst, ndst, PROC_MAX_THREAD_FRAMES, &nd);
        if (fl_frames_build_tail(L, ds ? ds->pcs : t->frames, ds ? nd : t->nframes, c->rules, sym,
                                 tail, sw, &tf))
            goto out;
        json_t *tj = json_object();
        if (ds)
            json_object_set_new(tj, "stack_source", json_string("server"));
        json_object_set_new(tj, "tid", json_integer((json_int_t)t->tid));
        json_object_set_new(tj, "name", str_or_null(t->name));
        json_object_set_new(tj, "crashed", json_false());
        if (t->has_context)
            json_object_set_new(tj, "context", hex_json(t->context));
        json_object_set_new(tj, "frames", frames_json(&tf));
        json_array_append_new(threads, tj);
        fl_frames_free(&tf);
    }
    json_object_set_new(doc, "threads", threads);
    if (!(apart = format_apart(L, c, out)))
        goto out;
    json_t *tr = json_array();
    for (size_t i = 0; i < L->ntrace; i++) {
        const fl_trace_event *e = &L->trace[i];
        json_t *ev = json_pack("{s:I,s:I,s:s?}", "time_ns", (json_int_t)e->time_ns, "tid",
                               (json_int_t)e->tid, "text", e->apart ? apart->text[i] : e->text);
        if (ev && e->has_context)
            json_object_set_new(ev, "context", hex_json(e->context));
        /* Formatted from the debug file, or not (yet): the text says why. */
        if (ev && e->apart)
            json_object_set_new(ev, "format",
                                json_string(apart->found[i] ? "debug file" : "missing"));
        json_array_append_new(tr, ev);
    }
    json_object_set_new(doc, "trace", tr);
    json_t *bc = json_array();
    for (size_t i = 0; i < L->nbreadcrumbs; i++)
        json_array_append_new(bc, json_pack("{s:I,s:s?,s:s?}", "time_ms",
                                            (json_int_t)L->breadcrumbs[i].time_ms, "category",
                                            L->breadcrumbs[i].category, "message",
                                            L->breadcrumbs[i].message));
    json_object_set_new(doc, "breadcrumbs", bc);
    json_object_set_new(doc, "stack_source", json_string(ur > 0 ? "server" : "client"));
    json_object_set_new(doc, "symbols", symbols_json(sw, c->symbolize != NULL, out));

    size_t tl, zl;
    if (!(text = fl_json_compact(doc, &tl)))
        goto out;
    if (fl_zstd(text, tl, 3, &out->zprocessed, &zl))
        goto out;
    json_t *fr = json_object_get(t0, "frames");
    out->frames_json = fl_json_compact(fr, NULL);
    out->signature = sig.text;
    sig.text = NULL;
    memcpy(out->group_id, sig.group_id, sizeof out->group_id);
    memcpy(out->stack_hash, sig.stack_hash, sizeof out->stack_hash);
    out->app = dup_or_null(L->app_name);
    out->version = dup_or_null(L->app_version);
    /* The OS breakdown: the pretty name when the log has one, else the
     * version-1 platform name and version. */
    char osb[256];
    const char *osv = L->os_version ? L->os_version : L->platform_version;
    if (L->os_pretty_name)
        snprintf(osb, sizeof osb, "%s", L->os_pretty_name);
    else if (L->os_name || L->platform_name)
        snprintf(osb, sizeof osb, "%s%s%s", L->os_name ? L->os_name : L->platform_name,
                 osv && *osv ? " " : "", osv ? osv : ""); /* no version: no trailing blank */
    else
        osb[0] = '\0';
    out->os = osb[0] ? strdup(osb) : NULL;
    out->arch = L->cpuarch && *L->cpuarch ? strdup(arch_name(L->cpuarch)) : NULL;
    out->install_id = dup_or_null(L->install_id);
    if (!out->frames_json)
        goto out;

    fl_processed *p = &out->p;
    p->crash_id = crash_id;
    p->project = project;
    p->group_id = out->group_id;
    p->signature = out->signature;
    p->stack_hash = out->stack_hash;
    p->app = out->app;
    p->version = out->version;
    p->os = out->os;
    p->arch = out->arch;
    p->install_id = out->install_id;
    p->received = received;
    p->frames_json = out->frames_json;
    p->zprocessed = out->zprocessed;
    p->zprocessed_len = zl;
    p->missing_build_ids = (const char *const *)out->missing;
    p->nmissing = out->nmissing;
    rc = 0;
out:
    if (rc)
        fl_processed_release(out);
    json_decref(omitted);
    free(upcs);
    fl_minidump_stacks_free(dst, ndst);
    apart_free(apart);
    for (size_t i = 0; sw && i < sw->n; i++)
        free(sw->m[i].wait);
    free(sw);
    free(text);
    json_decref(doc);
    free(sig.text);
    fl_frames_free(&crash);
    fl_crashlog_free(L);
    if (len > RELEASE_AFTER_LOG)
        fl_release_heap();
    return rc;
}

/* ---- the pool */

typedef struct slot {
    fl_task task;
    char id[FL_CRASH_ID_MAX]; /* the crash the task's report is */
    char project[FL_PROJECT_MAX]; /* its project, "" for the default */
    fl_processed_buf buf;
    bool ok, skip, again; /* again: a re-processing (backfill) */
    bool dropped;         /* a second copy of a crash already counted */
    bool requeue;         /* symbols arrived while it was processed */
} slot;

/* seen: the symbols_version read before the batch was processed;
 * watched: the reports were watched (processing_started), forget them. */
static int apply_batch(fl_workers *w, fl_store_conn *conn, slot *const *ord, size_t n, int64_t seen,
                       bool watched)
{
    fl_store *s = w->store;
    fl_queue *q = w->queue;
    if (s->begin(conn))
        goto fail;
    for (size_t i = 0; i < n; i++) {
        ord[i]->requeue = false;
        ord[i]->dropped = false;
        if (!ord[i]->skip) {
            int r =
                ord[i]->again ? s->reapply(conn, &ord[i]->buf.p) : s->apply(conn, &ord[i]->buf.p);
            if (r < 0)
                goto fail;
            ord[i]->dropped = r == 1;
            if (!ord[i]->dropped && seen >= 0 &&
                s->late_symbols(conn, &ord[i]->buf.p, seen, &ord[i]->requeue))
                goto fail;
        }
        if (q->in_store_txn && q->ack(q, conn, &ord[i]->task))
            goto fail;
        if (watched && s->processing_ended(conn, ord[i]->task.crash_id))
            goto fail;
        /* Re-processing names the crash by its id: the row the task named
         * (an inbox row) has moved into crashes by now. */
        if (ord[i]->requeue && q->in_store_txn && q->enqueue(q, conn, ord[i]->id))
            goto fail;
    }
    if (s->commit(conn))
        goto fail;
    fl_health_ok(&w->m->health, FL_HEALTH_PROCESSING);
    if (!q->in_store_txn)
        for (size_t i = 0; i < n; i++) {
            q->ack(q, conn, &ord[i]->task);
            if (ord[i]->requeue) {
                const char *id = ord[i]->id;
                fl_queue_publish(q, conn, &id, 1); /* or the sweep will */
            }
        }
    return 0;
fail:
    /* The tasks stay leased and come back when the lease expires.  A
     * transaction that met a concurrent one (a deadlock between two
     * workers' batches) is no failure of the store's: run_batch runs it
     * again at once, and /healthz and the log stay quiet. */
    if (s->conflict && s->conflict(conn))
        FL_M_ADD(w->m->apply_conflicts, 1);
    else
        fl_health_fail(&w->m->health, FL_HEALTH_PROCESSING, s->error(conn));
    s->rollback(conn);
    return -1;
}

/* Loads and processes the claimed tasks into sl (*ok, *failed: how many
 * crashes processed and failed).  A log that cannot be processed marks its
 * crash failed: ingest validated it, so that is a bug or a damaged row, and
 * trying again would not help.  Returns -1, with nothing left in sl to
 * release, when the store could not be read: that may pass. */
/* The line of a log made from a minidump (minidump.c). */
#define MINIDUMP_LINE "\nCRASH_SOURCE minidump\n"

static int process_batch(fl_workers *w, fl_store_conn *conn, const fl_task *tasks, size_t n,
                         slot *sl, size_t *ok, size_t *failed, bool poison)
{
    *ok = *failed = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t t0 = fl_mono_ns();
        sl[i].task = tasks[i];
        sl[i].skip = false;
        sl[i].again = false;
        memset(&sl[i].buf, 0, sizeof sl[i].buf);
        char *raw = NULL;
        size_t len = 0;
        int64_t received = 0;
        /* The task names the report (an inbox row, or a crash id); the
         * store says which crash it is. */
        snprintf(sl[i].id, sizeof sl[i].id, "%s", tasks[i].crash_id);
        int lr = w->store->load_raw(conn, tasks[i].crash_id, &raw, &len, &received, sl[i].id,
                                    sl[i].project);
        if (lr == FL_LOAD_UNAVAILABLE) {
            fl_health_fail(&w->m->health, FL_HEALTH_PROCESSING, w->store->error(conn));
            for (size_t j = 0; j < i; j++)
                fl_processed_release(&sl[j].buf);
            return -1;
        }
        if (lr == 1 || lr == 2) {
            sl[i].skip = true; /* gone or done: just ack */
            continue;
        }
        sl[i].again = lr == 3;
        if (poison && lr >= 0) {
            /* It stopped the server each time it was processed: fail it
             * rather than let it stop every server that claims it. */
            if (w->m->health.log) {
                fl_log(w->m->health.log,
                       "faultline serve: crash %s: the server stopped %u times while processing "
                       "it; marked failed and not processed again (its log is kept)",
                       sl[i].id, FL_POISON_STARTS);
            }
            lr = -1;
        }
        if (lr >= 0 && w->crash_on && !strcmp(sl[i].id, w->crash_on))
            abort();
        /* A crash made from a minidump: the dump, when it was kept, gives
         * its other threads' stacks.  Without it (not kept, or the store
         * cannot give it now) they keep their pcs. */
        char *dump = NULL;
        size_t dlen = 0;
        if (lr >= 0 && w->cfg.unwind_dump &&
            memmem(raw, len, MINIDUMP_LINE, strlen(MINIDUMP_LINE)) &&
            w->store->get_minidump(conn, sl[i].id, &dump, &dlen) != 0)
            dump = NULL, dlen = 0;
        if (lr < 0 || fl_process_log(sl[i].id, sl[i].project, raw, len, dump, dlen, received,
                                     &w->cfg, &sl[i].buf)) {
            memset(&sl[i].buf, 0, sizeof sl[i].buf);
            sl[i].buf.p.crash_id = sl[i].id;
            sl[i].buf.p.project = sl[i].project;
            sl[i].buf.p.failed = true;
            (*failed)++;
        } else {
            (*ok)++;
        }
        sl[i].buf.p.ref = sl[i].task.crash_id;
        free(dump);
        free(raw);
        FL_M_ADD(w->m->processing_ns, fl_mono_ns() - t0);
    }
    return 0;
}

static bool pause_ms(fl_workers *w, unsigned ms);

/* Slots are applied in the order of their groups' ids, then crash ids:
 * every worker then takes the row locks of a shared database (PostgreSQL,
 * several processes) in one order, and two batches touching the same
 * groups wait for each other instead of deadlocking.  Sorted by pointer:
 * a slot's fl_processed points into the slot itself. */
static int slot_order(const void *a, const void *b)
{
    const slot *x = *(slot *const *)a, *y = *(slot *const *)b;
    const char *gx = x->buf.p.group_id ? x->buf.p.group_id : "";
    const char *gy = y->buf.p.group_id ? y->buf.p.group_id : "";
    int c = strcmp(gx, gy);
    return c ? c : strcmp(x->id, y->id);
}

/* Processes tasks[0..n) into sl and records them in one transaction.  When
 * the store cannot be read or refuses the batch (a full disk...), tries the
 * same batch again, pausing longer each time, while half the lease since
 * claimed_ns is left -- rather than fail its crashes, or leave them to come
 * back only when the lease expires.  watched, poison: see apply_batch and
 * process_batch.  False when it gave up (the tasks are not acknowledged);
 * *ran says whether the reports were processed (only the store's refusal
 * to record them stopped it) rather than not loaded at all. */
static bool run_batch(fl_workers *w, fl_store_conn *conn, const fl_task *tasks, size_t n, slot *sl,
                      int64_t symver, uint64_t claimed_ns, bool watched, bool poison, bool *ran)
{
    size_t ok = 0, failed = 0;
    bool processed = false;
    *ran = false;
    int rc = -1;
    slot *ord[MAX_BATCH];
    for (unsigned pause = 100;; pause = pause < 2500 ? pause * 2 : 5000) {
        if (!processed) {
            pthread_rwlock_rdlock(&w->rules_lock);
            processed = !process_batch(w, conn, tasks, n, sl, &ok, &failed, poison);
            pthread_rwlock_unlock(&w->rules_lock);
            for (size_t i = 0; i < n; i++)
                ord[i] = &sl[i];
            qsort(ord, n, sizeof *ord, slot_order);
        }
        if (processed && !(rc = apply_batch(w, conn, ord, n, symver, watched)))
            break;
        if (fl_mono_ns() - claimed_ns + pause * 1000000ull >=
                (uint64_t)w->cfg.lease_s * 500000000ull ||
            !pause_ms(w, pause))
            break;
    }
    /* Given up (stopping, or half the lease gone): a queue that can takes
     * the tasks back now instead of when the lease expires. */
    if (rc && w->queue->release)
        w->queue->release(w->queue, conn, tasks, n);
    if (!processed)
        return false;
    *ran = true;
    size_t dropped = 0;
    for (size_t i = 0; i < n; i++) {
        fl_processed_release(&sl[i].buf);
        dropped += rc == 0 && sl[i].dropped;
    }
    if (rc == 0) {
        FL_M_ADD(w->m->processed, ok - dropped);
        FL_M_ADD(w->m->dropped_duplicates, dropped);
        FL_M_ADD(w->m->processing_failed, failed);
        FL_M_ADD(w->m->backlog, -(int64_t)n);
    }
    return rc == 0;
}

/* Why the last queue call failed: the queue's own reason when it has one
 * (a broker), else the store's (the embedded queue is the store's). */
static const char *queue_error(fl_workers *w, fl_store_conn *conn)
{
    const char *e = w->queue->error ? w->queue->error(w->queue) : NULL;
    return e ? e : w->store->error(conn);
}

/* Sleeps up to ms (less when notified).  False when stopping. */
static bool pause_ms(fl_workers *w, unsigned ms)
{
    pthread_mutex_lock(&w->mu);
    if (!w->stopping)
        fl_cond_wait_ms(&w->cv, &w->mu, ms);
    bool go_on = !w->stopping;
    pthread_mutex_unlock(&w->mu);
    return go_on;
}

/* Processing failing (the store was away, its disk full) and no task
 * coming to find out when it works again -- an idle worker, a queue whose
 * tasks went to other workers: /healthz would say 503 until the next
 * crash arrived, long after the store came back.  So an idle worker tries
 * the store's test write, at most every PROBE_EVERY_S (*next: when next). */
#define PROBE_EVERY_S 1

static void probe_if_failing(fl_workers *w, fl_store_conn *conn, uint64_t *next)
{
    if (!w->store->probe ||
        __atomic_load_n(&w->m->health.path[FL_HEALTH_PROCESSING].state, __ATOMIC_RELAXED) !=
            FL_HEALTH_FAILING)
        return;
    uint64_t now = fl_mono_ns();
    if (now < *next)
        return;
    *next = now + PROBE_EVERY_S * 1000000000ull;
    if (w->store->probe(conn) == 0)
        fl_health_ok(&w->m->health, FL_HEALTH_PROCESSING);
}

/* The backfill of the build ids the symbolizer fetched from debuginfod
 * (fl_workers_config.symbols_fetched).  A store that refuses it leaves
 * those crashes waiting for the next fetch or an upload. */
#define BACKFILL_MAX 100000 /* crashes re-queued per fetched build id, as an upload's */
static void backfill_fetched(fl_workers *w, fl_store_conn *conn)
{
    char id[160], err[256]; /* a build id: 128 hex digits at most */
    while (w->cfg.symbols_fetched && w->cfg.symbols_fetched(w->cfg.symbolize_ctx, id, sizeof id)) {
        size_t n = 0;
        if (fl_queue_backfill(w->queue, w->store, conn, NULL, id, BACKFILL_MAX, NULL, NULL, &n, err,
                              sizeof err)) {
            fl_health_fail(&w->m->health, FL_HEALTH_PROCESSING, err);
            continue;
        }
        if (n && w->m->health.log)
            fl_log(w->m->health.log,
                   "faultline serve: symbols: %s came from debuginfod: %zu crash(es) that lacked "
                   "it re-queued",
                   id, n);
    }
}

static void *worker_main(void *arg)
{
    fl_workers *w = arg;
    pthread_setname_np(pthread_self(), "fl-worker");
    fl_store_conn *conn = w->store->connect(w->store);
    size_t bmax = w->cfg.batch ? w->cfg.batch : 32;
    if (bmax > MAX_BATCH)
        bmax = MAX_BATCH;
    if (bmax < FL_QUEUE_BATCH_MAX)
        bmax = FL_QUEUE_BATCH_MAX; /* a stored task comes whole */
    fl_task *tasks = calloc(bmax, sizeof *tasks);
    slot *sl = calloc(bmax, sizeof *sl);
    uint64_t next_probe = 0;
    if (!conn || !tasks || !sl)
        goto out;
    for (;;) {
        pthread_mutex_lock(&w->mu);
        bool stop = w->stopping;
        uint64_t seen = w->wakeups;
        pthread_mutex_unlock(&w->mu);
        if (stop)
            break;
        backfill_fetched(w, conn);
        size_t n = 0;
        int cr = w->queue->claim(w->queue, conn, w->cfg.lease_s, bmax, tasks, &n);
        if (cr)
            fl_health_fail(&w->m->health, FL_HEALTH_PROCESSING, queue_error(w, conn));
        if (!cr && n == 0)
            probe_if_failing(w, conn, &next_probe);
        if (!cr && n == 0 && w->queue->claim_waits)
            continue; /* claim() waited for tasks itself */
        if (cr || n == 0) {
            /* Nothing to do: sleep until notified, or poll every 500 ms for
             * tasks whose lease expired. */
            pthread_mutex_lock(&w->mu);
            if (!w->stopping && w->wakeups == seen)
                fl_cond_wait_ms(&w->cv, &w->mu, 500);
            pthread_mutex_unlock(&w->mu);
            continue;
        }
        uint64_t claimed_ns = fl_mono_ns();
        /* Read before processing: a debug file ingested from now on is
         * newer, and late_symbols() re-queues the crashes that missed it. */
        int64_t symver = -1;
        if (w->cfg.symbolize && w->store->symbols_version(conn, &symver))
            symver = -1;
        /* Every batch says the version it read: the symbolizer, shared by
         * the threads, drops its caches once per version it has not seen.
         * A thread's own last version would miss the first move seen by a
         * thread that had not processed anything before it, after another
         * thread had cached the module's poorer symbols (measured: a
         * --role worker process kept a stripped program's exports after
         * its debug file came). */
        if (symver >= 0 && w->cfg.symbols_changed)
            w->cfg.symbols_changed(w->cfg.symbolize_ctx, symver);
        bool suspect = false;
        for (size_t i = 0; i < n; i++)
            suspect |= tasks[i].attempts > 1;
        if (!suspect) {
            bool ran;
            run_batch(w, conn, tasks, n, sl, symver, claimed_ns, false, false, &ran);
            continue;
        }
        /* Claimed before and never finished: a worker died (or overran its
         * lease) with them -- maybe because one of them stops the process
         * whenever it is processed.  One at a time then, each start
         * recorded durably: a report that started twice and never ended is
         * failed, not processed a third time, and the others go on. */
        bool all_done = true;
        for (size_t i = 0; i < n; i++) {
            unsigned before = 0;
            if (w->store->processing_started(conn, tasks[i].crash_id, &before)) {
                fl_health_fail(&w->m->health, FL_HEALTH_PROCESSING, w->store->error(conn));
                break; /* the rest come back when the lease expires */
            }
            /* The ack of a stored task's last entry completes the task: not
             * while an earlier entry of it is undone, which would never
             * come back (the entries done are skipped when it does). */
            fl_task one = tasks[i];
            if (i > 0 && tasks[i - 1].id != one.id)
                all_done = true; /* another stored task */
            if (!all_done)
                one.last = false;
            bool ran, poison = before >= FL_POISON_STARTS;
            bool done = run_batch(w, conn, &one, 1, sl, symver, claimed_ns, true, poison, &ran);
            /* Processed, but not recorded -- the store refused the batch
             * until half the lease was gone, or the server is stopping --:
             * the report did not stop the server, so its starts are
             * forgotten.  Else a store that fails now and then (a database
             * restarting, a full disk) would have a good report marked
             * failed after its third claim.  Its own write, as the start's
             * was; when the store refuses it too, the starts stay counted
             * (on the safe side of a report that does stop the server).
             * Not when the store could not even give the log: the report
             * was not processed, and what its earlier starts say stands;
             * nor when it was to be marked failed for them. */
            if (!done && ran && !poison)
                w->store->processing_ended(conn, tasks[i].crash_id);
            all_done &= done;
        }
    }
out:
    free(tasks);
    free(sl);
    w->store->disconnect(conn);
    return NULL;
}

void fl_workers_set_rules(fl_workers *w, const fl_group_rules *r)
{
    if (!w)
        return;
    pthread_rwlock_wrlock(&w->rules_lock);
    w->cfg.rules = r;
    pthread_rwlock_unlock(&w->rules_lock);
}

void fl_workers_notify(void *arg)
{
    fl_workers *w = arg;
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->wakeups++;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

fl_workers *fl_workers_start(fl_store *s, fl_queue *q, fl_metrics *m, const fl_workers_config *c,
                             char *err, size_t errlen)
{
    fl_workers *w = calloc(1, sizeof *w);
    if (!w || !(w->th = calloc(c->n ? c->n : 1, sizeof *w->th))) {
        free(w);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    w->store = s;
    w->queue = q;
    w->m = m;
    w->cfg = *c;
    const char *co = getenv("FAULTLINE_TEST_CRASH_ON");
    w->crash_on = co && *co ? co : NULL;
    pthread_mutex_init(&w->mu, NULL);
    pthread_rwlock_init(&w->rules_lock, NULL);
    fl_cond_init_mono(&w->cv);
    for (unsigned i = 0; i < (c->n ? c->n : 1); i++) {
        if (pthread_create(&w->th[i], NULL, worker_main, w)) {
            snprintf(err, errlen, "cannot start worker thread %u", i);
            fl_workers_stop(w);
            return NULL;
        }
        w->started++;
    }
    return w;
}

void fl_workers_stop(fl_workers *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stopping = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    for (unsigned i = 0; i < w->started; i++)
        pthread_join(w->th[i], NULL);
    pthread_mutex_destroy(&w->mu);
    pthread_rwlock_destroy(&w->rules_lock);
    pthread_cond_destroy(&w->cv);
    free(w->th);
    free(w);
}
