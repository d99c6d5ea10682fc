/*
 * fl_jsonout.h - compact JSON text of a jansson tree: what
 * json_dumps(j, JSON_COMPACT) writes, faster (jsonout.c says why).
 */
#ifndef FL_JSONOUT_H
#define FL_JSONOUT_H

#include <stddef.h>

#include <jansson.h>

/* The text of object or array j (caller frees; its length in *len when len
 * is not NULL), or NULL: out of memory, a string that is not UTF-8, or j not
 * an object or array -- where json_dumps() returns NULL too. */
char *fl_json_compact(const json_t *j, size_t *len);

#endif
