/*
 * fl_projects.h - which project an ingest key belongs to.
 *
 * The default project's key is the server's own (fl_http_config); the
 * others live in the store (add_project & co. in fl_store.h), which
 * several servers may share.  Ingest must not ask the store for every
 * report, so each server keeps a copy of the keys, read again when it is
 * FL_PROJECTS_TTL_S - 1 s old and when a key is not in it, at most once a
 * second: a key created on another server works here within a second,
 * and one revoked there stops working here within FL_PROJECTS_TTL_S --
 * a copy that old, the store away, answers "try later" rather than yes.
 * Thread-safe; the store is read with no lock held.
 */
#ifndef FL_PROJECTS_H
#define FL_PROJECTS_H

#include <stdbool.h>

#include "fl_store.h"

#define FL_PROJECTS_TTL_S 5

typedef struct fl_projects fl_projects;

fl_projects *fl_projects_new(void); /* NULL: out of memory */
void fl_projects_free(fl_projects *p);

/* A connection for reading the keys (not in a transaction), or NULL. */
typedef fl_store_conn *(*fl_projects_conn_fn)(void *arg);

/* The project of ingest key (not the default project's) into project:
 * 1 when it has one, 0 when no project has it, -1 when the copy is too
 * old to say and the store could not be read (answer "try later").
 * conn(arg) is called only to read the store, at most once a second. */
int fl_projects_lookup(fl_projects *p, fl_store *s, fl_projects_conn_fn conn, void *arg,
                       const char *key, char project[FL_PROJECT_MAX]);
/* The keys changed here (a key added or revoked): read them again at the
 * next lookup. */
void fl_projects_invalidate(fl_projects *p);

/* A project id: 1 to FL_PROJECT_MAX - 1 of [a-z0-9_-], the first a letter
 * or digit. */
bool fl_project_id_ok(const char *id);

#endif
