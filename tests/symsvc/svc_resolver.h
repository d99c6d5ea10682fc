/*
 * svc_resolver.h - the test side of the symbol services: fl_symlocate to
 * find a module's debug file, fl_symstore to build/open its symcache,
 * fl_symcache_lookup to answer.  The server plugs its own symcache lookup
 * into fl_xmlsym the same way.
 */
#ifndef SVC_RESOLVER_H
#define SVC_RESOLVER_H

#include "fl_symcache.h"
#include "fl_symlocate.h"
#include "fl_xmlsym.h"

#define SVC_MAX_MODULES 128

typedef struct svc_module {
    char build_id[2 * FL_SYM_BUILD_ID_MAX + 1];
    fl_symcache *sc; /* NULL when nothing was found */
    fl_symlocate_result where;
    char why[512];
} svc_module;

typedef struct svc_resolver {
    fl_symlocate *loc;      /* borrowed */
    char cache_dir[4096];   /* symcaches are built here */
    svc_module mods[SVC_MAX_MODULES];
    size_t n;
} svc_resolver;

/* The module entry for a build id (located and opened on first use);
 * NULL only when the table is full or build_id is NULL. */
svc_module *svc_resolver_module(svc_resolver *r, const char *build_id, const char *path);

/* fl_xmlsym_resolve_fn over svc_resolver. */
size_t svc_resolve(void *ctx, const fl_xmlsym_module *mod, uint64_t rel, fl_symframe *frames,
                   size_t max);

void svc_resolver_close(svc_resolver *r);

#endif
