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

/* After a miss, the store is asked again no sooner than this: a client
 * with a wrong key must not turn every report into a query. */
#define MISS_RETRY_NS 1000000000ull

typedef struct entry {
    char *key;
    char project[FL_PROJECT_MAX];
} entry;

struct fl_projects {
    pthread_mutex_t mu;
    entry *v; /* under mu */
    size_t n;
    uint64_t loaded_ns; /* when v was read; 0: never, or invalidated */
    uint64_t tried_ns;  /* the last attempt, successful or not */
    bool failed;        /* that attempt failed */
};

fl_projects *fl_projects_new(void)
{
    fl_projects *p = calloc(1, sizeof *p);
    if (p)
        pthread_mutex_init(&p->mu, NULL);
    return p;
}

static void clear(fl_projects *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->v[i].key);
    free(p->v);
    p->v = NULL;
    p->n = 0;
}

void fl_projects_free(fl_projects *p)
{
    if (!p)
        return;
    clear(p);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

void fl_projects_invalidate(fl_projects *p)
{
    pthread_mutex_lock(&p->mu);
    p->loaded_ns = 0;
    p->tried_ns = 0;
    p->failed = false;
    pthread_mutex_unlock(&p->mu);
}

/* Reads every key from the store into p (under mu).  On failure p keeps
 * what it had. */
static int reload(fl_projects *p, fl_store *s, fl_store_conn *c)
{
    json_t *j = s->list_projects ? s->list_projects(c) : NULL;
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
        for (i = 0; i < n; i++)
            free(v[i].key);
        free(v);
        return -1;
    }
    clear(p);
    p->v = v;
    p->n = n;
    return 0;
}

static void try_reload(fl_projects *p, fl_store *s, fl_store_conn *c, uint64_t now)
{
    p->tried_ns = now;
    p->failed = reload(p, s, c) != 0;
    if (!p->failed)
        p->loaded_ns = now;
}

/* Every entry is compared whole, so that the time taken says nothing
 * about how much of a key was right. */
static const entry *find(const fl_projects *p, const char *key)
{
    const entry *hit = NULL;
    size_t lk = strlen(key);
    for (size_t i = 0; i < p->n; i++) {
        const char *e = p->v[i].key;
        size_t le = strlen(e);
        unsigned char d = le != lk;
        for (size_t j = 0; j < le && j < lk; j++)
            d |= (unsigned char)(e[j] ^ key[j]);
        if (!d)
            hit = &p->v[i];
    }
    return hit;
}

int fl_projects_lookup(fl_projects *p, fl_store *s, fl_store_conn *c, const char *key,
                       char project[FL_PROJECT_MAX])
{
    if (!key || !*key)
        return 0;
    pthread_mutex_lock(&p->mu);
    uint64_t now = fl_mono_ns();
    bool may_try = c && (!p->tried_ns || now - p->tried_ns >= MISS_RETRY_NS);
    bool stale = !p->loaded_ns || now - p->loaded_ns > FL_PROJECTS_TTL_S * 1000000000ull;
    bool read_now = false;
    if (stale && may_try) {
        read_now = true;
        try_reload(p, s, c, now);
    }
    const entry *e = find(p, key);
    if (!e && !read_now && may_try) {
        /* It may have been created on another server since. */
        try_reload(p, s, c, now);
        e = find(p, key);
    }
    int rc = e ? 1 : p->failed ? -1 : 0;
    if (e)
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
