/*
 * fl_projects.h - which project an ingest key belongs to.
 *
 * The default project's key is the server's own (fl_http_config); the
 * others live in the store (add_project & co. in fl_store.h), which
 * several servers may share.  Ingest must not ask the store for every
 * report, so each server keeps a copy of the keys: read again when it is
 * older than FL_PROJECTS_TTL_S, and at once (at most once a second) when
 * a key is not in it -- a key created on another server works here on its
 * first report, and one revoked there stops working here within the TTL.
 * Thread-safe.
 */
#ifndef FL_PROJECTS_H
#define FL_PROJECTS_H

#include <stdbool.h>

#include "fl_store.h"

#define FL_PROJECTS_TTL_S 5

typedef struct fl_projects fl_projects;

fl_projects *fl_projects_new(void); /* NULL: out of memory */
void fl_projects_free(fl_projects *p);

/* The project of ingest key (not the default project's) into project:
 * 1 when it has one, 0 when no project has it, -1 when the store could not
 * be read and the copy does not know the key.  c: a connection for
 * reading the keys again (not in a transaction). */
int fl_projects_lookup(fl_projects *p, fl_store *s, fl_store_conn *c, const char *key,
                       char project[FL_PROJECT_MAX]);
/* The keys changed here (a key added or revoked): read them again at the
 * next lookup. */
void fl_projects_invalidate(fl_projects *p);

/* A project id: 1 to FL_PROJECT_MAX - 1 of [a-z0-9_-], the first a letter
 * or digit. */
bool fl_project_id_ok(const char *id);

#endif
