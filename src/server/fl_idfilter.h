/*
 * fl_idfilter.h - a set of crash ids that answers "certainly not seen" in
 * memory: a blocked Bloom filter that grows.
 *
 * Ingest asks, for every report, whether its crash id was processed
 * before.  That is a lookup in the index of every crash ever stored: a
 * random page read, on the writer's serial path, and a disk read once the
 * index outgrows the page cache.  Nearly every report is new; the filter
 * lets ingest skip the lookup for those and look only when the id may
 * have been seen (a resend, or a false positive, ~1 %).  It must be a
 * superset of the ids it stands for: an id added is always "maybe".
 *
 * Not thread-safe: the caller serialises add() and maybe().
 */
#ifndef FL_IDFILTER_H
#define FL_IDFILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct fl_idfilter fl_idfilter;

/* A filter for about `expected` ids to begin with (it grows past that);
 * NULL when out of memory. */
fl_idfilter *fl_idfilter_new(size_t expected);
void fl_idfilter_free(fl_idfilter *f);

/* Adds an id (n bytes).  Returns -1 when the filter could not grow (out of
 * memory): it then no longer says "not seen" for anything. */
int fl_idfilter_add(fl_idfilter *f, const char *id, size_t n);
/* false: the id was certainly never added. */
bool fl_idfilter_maybe(const fl_idfilter *f, const char *id, size_t n);

/* The same for a batch: hash every id, prefetch each hash's blocks, then
 * ask or add by hash -- the batch's cache misses (one per id and filter)
 * overlap instead of following each other. */
uint64_t fl_idfilter_hash(const char *id, size_t n);
void fl_idfilter_prefetch(const fl_idfilter *f, uint64_t h);
bool fl_idfilter_maybe_h(const fl_idfilter *f, uint64_t h);
int fl_idfilter_add_h(fl_idfilter *f, uint64_t h);

/* Snapshots: writes the filter to fp (0, or -1; a broken one is not
 * written), and reads one back from fp, at the start of a regular file --
 * NULL when the file is not exactly a snapshot (truncated, damaged,
 * foreign) or out of memory. */
int fl_idfilter_write(const fl_idfilter *f, FILE *fp);
fl_idfilter *fl_idfilter_read(FILE *fp);

size_t fl_idfilter_count(const fl_idfilter *f); /* ids added */
size_t fl_idfilter_bytes(const fl_idfilter *f); /* memory held */

#endif
