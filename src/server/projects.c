/*
 * projects.c - the copy of the projects' ingest keys that ingest reads
 * (see fl_projects.h).
 */
#include "fl_projects.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fl_srvutil.h"

/* The store is read at most once a second (a client with a wrong key
 * must not turn every report into a query), again once the copy is
 * REFRESH_NS old, and a copy older than VALID_NS -- the store could not
 * be read since -- answers nothing: a revoked key must not live on
 * because the store is away. */
#define RETRY_NS 1000000000ull
#define VALID_NS (FL_PROJECTS_TTL_S * 1000000000ull)
#define REFRESH_NS (VALID_NS - RETRY_NS)

typedef struct entry {
    char *key;
    char project[FL_PROJECT_MAX];
} entry;

struct fl_projects {
    pthread_mutex_t mu;
    entry *v; /* under mu, as everything below */
    size_t n;
    uint64_t loaded_ns; /* when v was read; 0: never, or invalidated */
    uint64_t tried_ns;  /* the last read begun; 0: none since invalidated */
    unsigned gen;       /* invalidations: a read begun before one is stale */
    bool loading;       /* a thread is reading the store */
};

fl_projects *fl_projects_new(void)
{
    fl_projects *p = calloc(1, sizeof *p);
    if (p)
        pthread_mutex_init(&p->mu, NULL);
    return p;
}

static void free_entries(entry *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i].key);
    free(v);
}

void fl_projects_free(fl_projects *p)
{
    if (!p)
        return;
    free_entries(p->v, p->n);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

void fl_projects_invalidate(fl_projects *p)
{
    pthread_mutex_lock(&p->mu);
    p->loaded_ns = 0;
    p->tried_ns = 0;
    p->gen++;
    pthread_mutex_unlock(&p->mu);
}

/* Every key of the store, read on c (no lock held: other lookups go on
 * with the old copy meanwhile).  0 with *out and *n, or -1. */
static int read_keys(fl_store *s, fl_store_conn *c, entry **out, size_t *nout)
{
    json_t *j = c && s->list_projects ? s->list_projects(c) : NULL;
    json_t *arr = json_object_get(j, "projects");
    if (!json_is_array(arr)) {
        json_decref(j);
        return -1;
    }
    size_t total = 0, i, k;
    json_t *pr, *kv;
    json_array_foreach(arr, i, pr) total += json_array_size(json_object_get(pr, "keys"));
    entry *v = calloc(total ? total : 1, sizeof *v);
    size_t n = 0;
    bool ok = v != NULL;
    json_array_foreach(arr, i, pr)
    {
        const char *id = json_string_value(json_object_get(pr, "id"));
        json_array_foreach(json_object_get(pr, "keys"), k, kv)
        {
            const char *key = json_string_value(json_object_get(kv, "key"));
            if (!ok || !id || !key || strlen(id) >= FL_PROJECT_MAX)
                continue;
            if (!(v[n].key = strdup(key))) {
                ok = false;
                continue;
            }
            memcpy(v[n].project, id, strlen(id) + 1);
            n++;
        }
    }
    json_decref(j);
    if (!ok) {
        free_entries(v, n);
        return -1;
    }
    *out = v;
    *nout = n;
    return 0;
}

/* Every entry is compared (fl_secret_eq), so that the time taken says
 * nothing about which key, or how much of it, was right. */
static const entry *find(const fl_projects *p, const char *key)
{
    const entry *hit = NULL;
    for (size_t i = 0; i < p->n; i++)
        if (fl_secret_eq(p->v[i].key, key))
            hit = &p->v[i];
    return hit;
}

int fl_projects_lookup(fl_projects *p, fl_store *s, fl_projects_conn_fn conn, void *arg,
                       const char *key, char project[FL_PROJECT_MAX])
{
    if (!key || !*key)
        return 0;
    pthread_mutex_lock(&p->mu);
    uint64_t now = fl_mono_ns();
    uint64_t age = p->loaded_ns ? now - p->loaded_ns : UINT64_MAX;
    const entry *e = find(p, key);
    /* Read the store when the copy is due, or for a key it lacks (it may
     * be new, made on another server) -- once a second at most, and one
     * thread at a time. */
    bool read =
        (age > REFRESH_NS || !e) && !p->loading && (!p->tried_ns || now - p->tried_ns >= RETRY_NS);
    if (read) {
        p->loading = true;
        p->tried_ns = now;
        unsigned gen = p->gen;
        pthread_mutex_unlock(&p->mu);
        entry *v = NULL;
        size_t n = 0;
        int rc = read_keys(s, conn ? conn(arg) : NULL, &v, &n);
        pthread_mutex_lock(&p->mu);
        p->loading = false;
        if (rc == 0 && gen == p->gen) {
            free_entries(p->v, p->n);
            p->v = v;
            p->n = n;
            p->loaded_ns = now;
        } else {
            free_entries(v, n); /* failed, or invalidated meanwhile */
        }
        age = p->loaded_ns ? fl_mono_ns() - p->loaded_ns : UINT64_MAX;
        e = find(p, key);
    }
    /* A copy too old to trust answers neither yes nor no. */
    int rc = age > VALID_NS ? -1 : e ? 1 : 0;
    if (rc == 1)
        memcpy(project, e->project, FL_PROJECT_MAX);
    pthread_mutex_unlock(&p->mu);
    return rc;
}

bool fl_project_id_ok(const char *id)
{
    size_t n = id ? strlen(id) : 0;
    if (n == 0 || n >= FL_PROJECT_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = id[i];
        bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
        if (!alnum && (i == 0 || (ch != '-' && ch != '_')))
            return false;
    }
    return true;
}
