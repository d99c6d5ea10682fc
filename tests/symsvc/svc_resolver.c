#include <stdio.h>
#include <string.h>

#include "fl_symstore.h"
#include "svc_resolver.h"

svc_module *svc_resolver_module(svc_resolver *r, const char *build_id, const char *path)
{
    if (!build_id)
        return NULL;
    for (size_t i = 0; i < r->n; i++)
        if (strcasecmp(r->mods[i].build_id, build_id) == 0)
            return &r->mods[i];
    if (r->n >= SVC_MAX_MODULES)
        return NULL;
    svc_module *m = &r->mods[r->n++];
    memset(m, 0, sizeof *m);
    snprintf(m->build_id, sizeof m->build_id, "%s", build_id);
    if (fl_symlocate_find(r->loc, build_id, path, &m->where, m->why, sizeof m->why) != 0)
        return m;
    int built = 0;
    char err[256];
    if (fl_symstore_mkdirs(r->cache_dir) != 0 ||
        fl_symstore_get(r->cache_dir, m->where.path, NULL, 0, &m->sc, &built, NULL, NULL, 0, err,
                        sizeof err) != 0) {
        char why[sizeof m->why];
        snprintf(why, sizeof why, "symcache of %.200s: %s", m->where.path, err);
        memcpy(m->why, why, sizeof why);
        m->sc = NULL;
    }
    return m;
}

size_t svc_resolve(void *ctx, const fl_xmlsym_module *mod, uint64_t rel, fl_symframe *frames,
                   size_t max)
{
    svc_module *m = svc_resolver_module(ctx, mod->build_id, mod->path);
    if (!m || !m->sc)
        return 0;
    return fl_symcache_lookup(m->sc, rel, frames, max);
}

void svc_resolver_close(svc_resolver *r)
{
    for (size_t i = 0; i < r->n; i++)
        fl_symcache_close(r->mods[i].sc);
    r->n = 0;
}
