/*
 * ctxsrv.c - calling contexts of stored crashes decoded on the server, on
 * demand, by one decoder thread, with the results and the call graphs
 * cached (fl_ctxsrv.h).
 */
#define _GNU_SOURCE
#include "fl_ctxsrv.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fl_crashlog.h"
#include "fl_ctxdecode.h"
#include "fl_srvsym.h"
#include "fl_store.h"

#define MAX_RESULTS 128 /* crashes whose answer is kept */
#define MAX_GRAPHS 4    /* call graphs kept (one per build of a program) */
/* What one crash may cost: a log is written by whoever reaches the ingest
 * port, and each value not found costs a whole search.  Values past the
 * first MAX_VALUES are counted, not decoded; all of a crash's searches
 * share twice the per-value budget; objects past MAX_OBJECTS are not
 * looked for. */
#define MAX_VALUES 256
#define MAX_OBJECTS 256
/* An answer with a value not decoded is made again after this, or at once
 * when a debug file arrives (the generation). */
#define MISS_TTL_NS (600ull * 1000000000ull)
/* A crash whose decoding ran out of memory is answered so (FL_CTXSRV_NOMEM)
 * for this long, then tried again: memory may be back by then, and a
 * client asking every second does not rebuild a large graph each time. */
#define NOMEM_TTL_NS (60ull * 1000000000ull)

typedef struct result {
    char id[FL_CRASH_ID_MAX];
    char *json;          /* the answer; NULL in a nomem result */
    bool nomem;          /* the decoding ran out of memory */
    uint64_t gen;        /* the symbolizer's generation it was made in */
    uint64_t expires_ns; /* 0: kept until evicted or the generation moves */
    uint64_t used;
} result;

typedef struct job {
    char id[FL_CRASH_ID_MAX];
    fl_crashlog *log;
    struct job *next;
} job;

/* Only the decoder thread touches the graphs. */
typedef struct graph {
    char *key; /* "build_id=file+debugfile;" of each module in it, in order */
    fl_ctxgraph *g;
    uint64_t used;
} graph;

struct fl_ctxsrv {
    fl_ctxsrv_config cfg;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    bool stop; /* under mu; read atomically by the decoder between steps */
    job *head, *tail;
    size_t njobs;
    char running[FL_CRASH_ID_MAX]; /* the crash being decoded, or "" */
    result res[MAX_RESULTS];
    uint64_t clock, gen;
    fl_ctxsrv_stats st;
    graph graphs[MAX_GRAPHS];
    uint64_t gclock; /* the graphs' LRU clock: the decoder's alone */
};

static bool stopping(fl_ctxsrv *cs)
{
    return __atomic_load_n(&cs->stop, __ATOMIC_RELAXED);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* ---- the result cache (under mu) ---- */

static bool in_use(const result *r)
{
    return r->json || r->nomem;
}

/* Drops every result when a debug file arrived since they were made. */
static void check_generation_locked(fl_ctxsrv *cs)
{
    uint64_t g = fl_srvsym_generation(cs->cfg.sym);
    if (g == cs->gen)
        return;
    cs->gen = g;
    for (size_t i = 0; i < MAX_RESULTS; i++) {
        free(cs->res[i].json);
        cs->res[i] = (result){0};
    }
}

static result *find_result_locked(fl_ctxsrv *cs, const char *id)
{
    uint64_t now = now_ns();
    for (size_t i = 0; i < MAX_RESULTS; i++) {
        result *r = &cs->res[i];
        if (!in_use(r) || strcmp(r->id, id))
            continue;
        if (r->gen != cs->gen || (r->expires_ns && r->expires_ns <= now)) {
            free(r->json);
            *r = (result){0};
            return NULL;
        }
        r->used = ++cs->clock;
        return r;
    }
    return NULL;
}

/* Keeps json (owned) as id's answer, in the least recently used slot;
 * json NULL: the decoding ran out of memory. */
static void put_result_locked(fl_ctxsrv *cs, const char *id, char *json, bool complete,
                              uint64_t gen)
{
    check_generation_locked(cs);
    if (gen != cs->gen) {
        free(json); /* made with files from before an upload: make it again */
        return;
    }
    result *slot = &cs->res[0];
    for (size_t i = 0; i < MAX_RESULTS; i++) {
        result *r = &cs->res[i];
        if (in_use(r) && !strcmp(r->id, id)) {
            slot = r;
            break;
        }
        if (!in_use(r) || r->used < slot->used)
            slot = r;
        if (!in_use(r))
            break;
    }
    free(slot->json);
    snprintf(slot->id, sizeof slot->id, "%s", id);
    slot->json = json;
    slot->nomem = !json;
    slot->gen = gen;
    slot->expires_ns = !json ? now_ns() + NOMEM_TTL_NS : complete ? 0 : now_ns() + MISS_TTL_NS;
    slot->used = ++cs->clock;
}

static bool pending_locked(const fl_ctxsrv *cs, const char *id)
{
    if (!strcmp(cs->running, id))
        return true;
    for (const job *j = cs->head; j; j = j->next)
        if (!strcmp(j->id, id))
            return true;
    return false;
}

/* ---- decoding (the decoder thread) ---- */

typedef struct value {
    uint64_t v;
    bool crashed;
    json_t *threads; /* array of tids */
    size_t events;
} value;

typedef struct values {
    value *v;
    size_t n, cap;
    size_t omitted; /* threads and events whose value is past MAX_VALUES */
} values;

static value none; /* what add_value() gives for a value past the cap */

static value *add_value(values *vs, uint64_t v)
{
    for (size_t i = 0; i < vs->n; i++)
        if (vs->v[i].v == v)
            return &vs->v[i];
    if (vs->n == MAX_VALUES) {
        vs->omitted++;
        return &none;
    }
    if (vs->n == vs->cap) {
        size_t nc = vs->cap ? vs->cap * 2 : 8;
        value *nv = realloc(vs->v, nc * sizeof *nv);
        if (!nv)
            return NULL;
        vs->v = nv;
        vs->cap = nc;
    }
    json_t *t = json_array();
    if (!t)
        return NULL;
    vs->v[vs->n] = (value){.v = v, .threads = t};
    return &vs->v[vs->n++];
}

static void free_values(values *vs)
{
    for (size_t i = 0; i < vs->n; i++)
        json_decref(vs->v[i].threads);
    free(vs->v);
}

/* The log's distinct context values: the crashing thread's, the other
 * threads', the trace events', in that order.  -1 on OOM. */
static int collect(const fl_crashlog *L, values *vs)
{
    value *x;
    if (L->has_crash_context) {
        if (!(x = add_value(vs, L->crash_context)))
            return -1;
        x->crashed = true;
        if (L->has_crash_tid && x != &none)
            json_array_append_new(x->threads, json_integer((json_int_t)L->crash_tid));
    }
    for (size_t i = 0; i < L->nthreads; i++) {
        if (!L->threads[i].has_context)
            continue;
        if (!(x = add_value(vs, L->threads[i].context)))
            return -1;
        if (x != &none)
            json_array_append_new(x->threads, json_integer((json_int_t)L->threads[i].tid));
    }
    for (size_t i = 0; i < L->ntrace; i++) {
        if (!L->trace[i].has_context)
            continue;
        if (!(x = add_value(vs, L->trace[i].context)))
            return -1;
        if (x != &none)
            x->events++;
    }
    return 0;
}

typedef struct file {
    int fd;
    Elf *elf;
} file;

static void close_file(file *f)
{
    if (f->elf)
        elf_end(f->elf);
    if (f->fd >= 0)
        close(f->fd);
    *f = (file){.fd = -1};
}

/* Opens path as ELF with build id `id`; false (closed) otherwise. */
static bool open_file(file *f, const char *path, const char *id)
{
    *f = (file){.fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)};
    struct stat st;
    if (f->fd < 0 || fstat(f->fd, &st) || !S_ISREG(st.st_mode)) {
        close_file(f);
        return false;
    }
    f->elf = elf_begin(f->fd, ELF_C_READ_MMAP, NULL);
    const void *bid;
    ssize_t n = f->elf && elf_kind(f->elf) == ELF_K_ELF ? dwelf_elf_gnu_build_id(f->elf, &bid) : -1;
    char hex[129] = "";
    for (ssize_t i = 0; n > 0 && n <= 64 && i < n; i++)
        snprintf(hex + 2 * i, 3, "%02x", ((const unsigned char *)bid)[i]);
    if (!hex[0] || strcasecmp(hex, id)) {
        close_file(f);
        return false;
    }
    return true;
}

static bool has_section(Elf *e, Elf64_Word type)
{
    GElf_Shdr sh;
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(e, scn));)
        if (gelf_getshdr(scn, &sh) && sh.sh_type == type)
            return true;
    return false;
}

typedef struct module {
    const fl_object *o;
    file code, syms;
    const char *source;
    char path[PATH_MAX];
} module;

/* The graph of the files for key (built now, or kept from an earlier
 * crash).  NULL when it could not be built (err says why; *nomem when
 * memory ran out). */
static fl_ctxgraph *get_graph(fl_ctxsrv *cs, const char *key, module *mods, size_t n, char *err,
                              size_t errlen, bool *nomem)
{
    *nomem = false;
    graph *slot = &cs->graphs[0];
    for (size_t i = 0; i < MAX_GRAPHS; i++) {
        graph *g = &cs->graphs[i];
        if (g->key && !strcmp(g->key, key)) {
            g->used = ++cs->gclock;
            return g->g;
        }
        if (!g->key || g->used < slot->used)
            slot = g;
    }
    fl_ctxgraph *g = fl_ctxgraph_new();
    char *k = strdup(key);
    if (!g || !k) {
        snprintf(err, errlen, "out of memory");
        *nomem = true;
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        const char *name = mods[i].o->path ? mods[i].o->path : mods[i].o->name;
        if (fl_ctxgraph_add(g, name ? name : "?", mods[i].code.elf, mods[i].syms.elf, err,
                            errlen)) {
            *nomem = fl_ctxgraph_nomem(g);
            goto fail;
        }
    }
    if (fl_ctxgraph_link(g)) {
        snprintf(err, errlen, "out of memory");
        *nomem = true;
        goto fail;
    }
    fl_ctxgraph_free(slot->g);
    free(slot->key);
    *slot = (graph){.key = k, .g = g, .used = ++cs->gclock};
    pthread_mutex_lock(&cs->mu);
    cs->st.graphs++;
    pthread_mutex_unlock(&cs->mu);
    return g;
fail:
    fl_ctxgraph_free(g);
    free(k);
    return NULL;
}

static int add_frames(const fl_ctxframe *fr, size_t n, void *arg)
{
    json_t *frames = arg;
    for (size_t i = 0; i < n; i++) {
        char addr[24];
        snprintf(addr, sizeof addr, "0x%" PRIx64, fr[i].address);
        json_array_append_new(frames,
                              json_pack("{s:s,s:s,s:s}", "function", fr[i].function, "module",
                                        base_name(fr[i].module), "address", addr));
    }
    return 0;
}

/* The answer for a crash log (JSON text), or NULL when memory ran out
 * (building the answer or the call graph) or the server stops.
 * *complete: every value was decoded (or is empty); a value whose search
 * alone ran out of memory is answered as not found. */
static char *decode_log(fl_ctxsrv *cs, const char *id, const fl_crashlog *L, bool *complete)
{
    values vs = {0};
    module *mods = calloc(L->nobjects ? L->nobjects : 1, sizeof *mods);
    json_t *out =
        json_pack("{s:s,s:s,s:[],s:[]}", "crash_id", id, "status", "done", "contexts", "files");
    char *text = NULL, *key = NULL;
    size_t nmods = 0, keylen = 0;
    *complete = true;
    if (!mods || !out || collect(L, &vs))
        goto out;
    json_t *files = json_object_get(out, "files");
    /* Each object once (by build id), the program first as the log lists
     * it: the graph resolves a name to the first file that defines it, as
     * the dynamic linker does. */
    bool need = false;
    for (size_t i = 0; i < vs.n && !need; i++)
        need = vs.v[i].v != 0;
    size_t looked = 0;
    for (size_t i = 0; need && i < L->nobjects && looked < MAX_OBJECTS; i++) {
        const fl_object *o = &L->objects[i];
        if (stopping(cs))
            goto out;
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen = L->objects[k].build_id && o->build_id &&
                   !strcmp(L->objects[k].build_id, o->build_id);
        if (!o->build_id || seen)
            continue;
        looked++;
        const char *shown = base_name(o->path ? o->path : o->name ? o->name : "?");
        module *m = &mods[nmods];
        *m = (module){.o = o, .code = {.fd = -1}, .syms = {.fd = -1}};
        const char *status = "missing";
        /* A path cut at its start (OBJECT_PATH_CUT) names no file. */
        if (!fl_srvsym_find_file(cs->cfg.sym, o->build_id, o->path_cut ? NULL : o->path, true,
                                 m->path, sizeof m->path, &m->source) &&
            open_file(&m->code, m->path, o->build_id)) {
            if (!fl_ctx_elf_has_hooks(m->code.elf)) {
                status = "not instrumented";
                close_file(&m->code);
            } else {
                status = "used";
                /* A stripped file: the function names from its debug file. */
                char dpath[PATH_MAX] = "";
                if (!has_section(m->code.elf, SHT_SYMTAB) &&
                    !fl_srvsym_find_file(cs->cfg.sym, o->build_id, o->path, false, dpath,
                                         sizeof dpath, NULL) &&
                    open_file(&m->syms, dpath, o->build_id) &&
                    !has_section(m->syms.elf, SHT_SYMTAB))
                    close_file(&m->syms);
                /* The key names the files read: a debug file found
                 * later makes another graph. */
                const char *sp = m->syms.elf ? dpath : "";
                size_t add = strlen(o->build_id) + strlen(m->path) + strlen(sp) + 4;
                char *nk = realloc(key, keylen + add);
                if (!nk)
                    goto out;
                key = nk;
                keylen +=
                    (size_t)snprintf(key + keylen, add, "%s=%s+%s;", o->build_id, m->path, sp);
                nmods++;
            }
        }
        json_array_append_new(files, json_pack("{s:s,s:s,s:s,s:s?}", "module", shown, "build_id",
                                               o->build_id, "status", status, "source",
                                               strcmp(status, "missing") ? m->source : NULL));
    }
    fl_ctxgraph *g = NULL;
    char err[512] = "";
    bool nomem = false;
    if (nmods) {
        g = get_graph(cs, key, mods, nmods, err, sizeof err, &nomem);
        if (nomem) /* the crash's answer fails (FL_CTXSRV_NOMEM), not each value */
            goto out;
    } else if (need) {
        snprintf(err, sizeof err,
                 "none of the crash's objects built with -finstrument-functions was found: "
                 "upload its executable (POST /api/v1/symbols) or serve it from debuginfod");
    }
    if (g && !fl_ctxgraph_instrumented(g)) {
        snprintf(err, sizeof err,
                 "no function in the files found was built with "
                 "-finstrument-functions");
        g = NULL;
    }
    json_t *arr = json_object_get(out, "contexts");
    uint64_t decoded = 0, missed = 0, left = 2 * cs->cfg.max_paths;
    if (vs.omitted) {
        json_object_set_new(out, "omitted", json_integer((json_int_t)vs.omitted));
        *complete = false;
    }
    for (size_t i = 0; i < vs.n; i++) {
        if (stopping(cs))
            goto out;
        char hex[24];
        snprintf(hex, sizeof hex, "0x%" PRIx64, vs.v[i].v);
        json_t *c = json_pack("{s:s,s:b,s:O,s:I}", "value", hex, "crashed", vs.v[i].crashed,
                              "threads", vs.v[i].threads, "events", (json_int_t)vs.v[i].events);
        if (!c)
            goto out;
        json_array_append_new(arr, c);
        if (vs.v[i].v == 0) {
            json_object_set_new(c, "status", json_string("empty"));
            json_object_set_new(c, "message", json_string("no instrumented function was active"));
            continue;
        }
        if (!g) {
            json_object_set_new(c, "status", json_string("no_files"));
            json_object_set_new(c, "message", json_string(err));
            *complete = false;
            missed++;
            continue;
        }
        if (!left) {
            json_object_set_new(c, "status", json_string("not_found"));
            json_object_set_new(c, "message",
                                json_string("not searched: the crash's other values used up its "
                                            "search budget"));
            *complete = false;
            missed++;
            continue;
        }
        fl_ctxsearch s = {.max_depth = cs->cfg.max_depth,
                          .budget = left < cs->cfg.max_paths ? left : cs->cfg.max_paths,
                          .cancel = &cs->stop};
        json_t *frames = json_array();
        if (!frames)
            goto out;
        unsigned found = fl_ctxgraph_search(g, vs.v[i].v, &s, add_frames, frames);
        left -= s.steps < left ? s.steps : left;
        if (found) {
            json_object_set_new(c, "status", json_string("decoded"));
            json_object_set_new(c, "frames", frames);
            decoded++;
            continue;
        }
        json_decref(frames);
        char msg[256];
        if (s.nomem) /* the search freed its tables: the next value may fit */
            snprintf(msg, sizeof msg,
                     "the search stopped after %" PRIu64 " paths: the server ran out of memory",
                     s.steps);
        else if (s.complete)
            snprintf(msg, sizeof msg,
                     "no stack of the instrumented functions found gives this value (%" PRIu64
                     " paths tried, all up to %u deep): is a library missing?",
                     s.steps, cs->cfg.max_depth);
        else
            snprintf(msg, sizeof msg,
                     "no stack found in the first %" PRIu64 " paths (the search budget)", s.steps);
        json_object_set_new(c, "status", json_string("not_found"));
        json_object_set_new(c, "message", json_string(msg));
        *complete = false;
        missed++;
    }
    pthread_mutex_lock(&cs->mu);
    cs->st.decoded += decoded;
    cs->st.missed += missed;
    pthread_mutex_unlock(&cs->mu);
    text = json_dumps(out, JSON_COMPACT);
out:
    for (size_t i = 0; i < nmods; i++) {
        close_file(&mods[i].code);
        close_file(&mods[i].syms);
    }
    /* A module whose loop iteration ended early (OOM) may hold files. */
    if (mods && nmods < L->nobjects && mods[nmods].o) {
        close_file(&mods[nmods].code);
        close_file(&mods[nmods].syms);
    }
    free(mods);
    free(key);
    free_values(&vs);
    json_decref(out);
    return text;
}

static void *decoder_main(void *arg)
{
    fl_ctxsrv *cs = arg;
    /* Decoding is for a person looking at a crash; ingest comes first. */
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
    pthread_setname_np(pthread_self(), "fl-ctxdecode");
    pthread_mutex_lock(&cs->mu);
    for (;;) {
        while (!cs->stop && !cs->head)
            pthread_cond_wait(&cs->cv, &cs->mu);
        if (cs->stop)
            break;
        job *j = cs->head;
        if (!(cs->head = j->next))
            cs->tail = NULL;
        cs->njobs--;
        memcpy(cs->running, j->id, sizeof cs->running);
        pthread_mutex_unlock(&cs->mu);
        /* Taken before the files are looked for: a file that arrives
         * during the decoding moves it, and the answer is then dropped at
         * the next look. */
        uint64_t gen = fl_srvsym_generation(cs->cfg.sym);

        bool complete = true;
        char *json = decode_log(cs, j->id, j->log, &complete);

        pthread_mutex_lock(&cs->mu);
        cs->running[0] = '\0';
        cs->st.crashes++;
        /* NULL: out of memory (kept as such for a while: asked again at
         * once, the crash would be queued and fail again), or stopping. */
        if (json || !stopping(cs))
            put_result_locked(cs, j->id, json, complete, gen);
        fl_crashlog_free(j->log);
        free(j);
    }
    pthread_mutex_unlock(&cs->mu);
    return NULL;
}

/* ---- the interface ---- */

fl_ctxsrv *fl_ctxsrv_new(const fl_ctxsrv_config *cfg, char *err, size_t errlen)
{
    fl_ctxsrv *cs = calloc(1, sizeof *cs);
    if (!cs || !cfg->sym) {
        snprintf(err, errlen, cs ? "no symbolizer" : "out of memory");
        free(cs);
        return NULL;
    }
    cs->cfg = *cfg;
    if (!cs->cfg.max_paths)
        cs->cfg.max_paths = 20000000;
    if (!cs->cfg.max_depth)
        cs->cfg.max_depth = 64;
    if (!cs->cfg.max_queue)
        cs->cfg.max_queue = 16;
    cs->gen = fl_srvsym_generation(cfg->sym);
    elf_version(EV_CURRENT);
    pthread_mutex_init(&cs->mu, NULL);
    pthread_cond_init(&cs->cv, NULL);
    int rc = pthread_create(&cs->thread, NULL, decoder_main, cs);
    if (rc) {
        snprintf(err, errlen, "cannot start the context decoder: %s", strerror(rc));
        pthread_mutex_destroy(&cs->mu);
        pthread_cond_destroy(&cs->cv);
        free(cs);
        return NULL;
    }
    return cs;
}

void fl_ctxsrv_free(fl_ctxsrv *cs)
{
    if (!cs)
        return;
    pthread_mutex_lock(&cs->mu);
    __atomic_store_n(&cs->stop, true, __ATOMIC_RELAXED);
    pthread_cond_signal(&cs->cv);
    pthread_mutex_unlock(&cs->mu);
    pthread_join(cs->thread, NULL);
    for (job *j = cs->head, *n; j; j = n) {
        n = j->next;
        fl_crashlog_free(j->log);
        free(j);
    }
    for (size_t i = 0; i < MAX_RESULTS; i++)
        free(cs->res[i].json);
    for (size_t i = 0; i < MAX_GRAPHS; i++) {
        fl_ctxgraph_free(cs->graphs[i].g);
        free(cs->graphs[i].key);
    }
    pthread_mutex_destroy(&cs->mu);
    pthread_cond_destroy(&cs->cv);
    free(cs);
}

int fl_ctxsrv_cached(fl_ctxsrv *cs, const char *id, char **json)
{
    *json = NULL;
    pthread_mutex_lock(&cs->mu);
    check_generation_locked(cs);
    result *r = find_result_locked(cs, id);
    if (r && r->json)
        *json = strdup(r->json);
    bool pending = !r && pending_locked(cs, id);
    pthread_mutex_unlock(&cs->mu);
    if (r)
        return *json ? FL_CTXSRV_DONE : FL_CTXSRV_NOMEM;
    return pending ? FL_CTXSRV_PENDING : FL_CTXSRV_UNKNOWN;
}

int fl_ctxsrv_get(fl_ctxsrv *cs, const char *id, const char *raw, size_t len, char **json)
{
    *json = NULL;
    if (strlen(id) >= FL_CRASH_ID_MAX)
        return FL_CTXSRV_BADLOG;
    int rc = fl_ctxsrv_cached(cs, id, json);
    if (rc != FL_CTXSRV_UNKNOWN)
        return rc;
    pthread_mutex_lock(&cs->mu);
    bool full = cs->njobs >= cs->cfg.max_queue;
    uint64_t gen = cs->gen;
    pthread_mutex_unlock(&cs->mu);
    if (full)
        return FL_CTXSRV_BUSY;
    fl_crashlog *L = NULL;
    fl_crashlog_error perr;
    if (fl_crashlog_parse(raw, len, &L, &perr))
        return FL_CTXSRV_BADLOG;
    bool any = L->has_crash_context;
    for (size_t i = 0; i < L->nthreads && !any; i++)
        any = L->threads[i].has_context;
    for (size_t i = 0; i < L->ntrace && !any; i++)
        any = L->trace[i].has_context;
    if (!any) {
        /* Nothing to decode: the answer is known now. */
        fl_crashlog_free(L);
        json_t *j =
            json_pack("{s:s,s:s,s:[],s:[]}", "crash_id", id, "status", "done", "contexts", "files");
        *json = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
        char *keep = *json ? strdup(*json) : NULL;
        if (keep) {
            pthread_mutex_lock(&cs->mu);
            put_result_locked(cs, id, keep, true, gen);
            pthread_mutex_unlock(&cs->mu);
        }
        return *json ? FL_CTXSRV_DONE : FL_CTXSRV_NOMEM;
    }
    job *j = calloc(1, sizeof *j);
    if (!j) {
        fl_crashlog_free(L);
        return FL_CTXSRV_NOMEM;
    }
    snprintf(j->id, sizeof j->id, "%s", id);
    j->log = L;
    pthread_mutex_lock(&cs->mu);
    if (pending_locked(cs, id) || cs->njobs >= cs->cfg.max_queue) {
        rc = pending_locked(cs, id) ? FL_CTXSRV_PENDING : FL_CTXSRV_BUSY;
        pthread_mutex_unlock(&cs->mu);
        fl_crashlog_free(L);
        free(j);
        return rc;
    }
    if (cs->tail)
        cs->tail->next = j;
    else
        cs->head = j;
    cs->tail = j;
    cs->njobs++;
    pthread_cond_signal(&cs->cv);
    pthread_mutex_unlock(&cs->mu);
    return FL_CTXSRV_PENDING;
}

void fl_ctxsrv_get_stats(fl_ctxsrv *cs, fl_ctxsrv_stats *out)
{
    pthread_mutex_lock(&cs->mu);
    *out = cs->st;
    out->queued = cs->njobs;
    pthread_mutex_unlock(&cs->mu);
}
