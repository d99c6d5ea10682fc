/*
 * fl_symstore.h - a directory of symcaches keyed by GNU build id.
 *
 * Layout: DIR/<buildid>.symcache.  When a second file with the same build
 * id but a different symbol table shows up (a stripped library next to its
 * debug file), its symcache is DIR/<buildid>.<fingerprint>.symcache, so
 * both stay cached.  Files without a build id get
 * DIR/nobuildid-<hash of path, size, mtime>.symcache.
 */
#ifndef FL_SYMSTORE_H
#define FL_SYMSTORE_H

#include <stddef.h>

#include "fl_symcache.h"

/* $XDG_CACHE_HOME/faultline/symcache, else ~/.cache/faultline/symcache.
 * Returns 0, or FL_SYM_EINVAL when neither variable is usable. */
int fl_symstore_default_dir(char *buf, size_t cap);

/* Creates dir and its parents (mode 0755).  Returns 0 or FL_SYM_EIO. */
int fl_symstore_mkdirs(const char *dir);

/* Removes what builds killed midway left in dir, as long as no live
 * build (of any process sharing dir) uses it: the private directories of
 * split-DWARF builds (<name>.symcache.dwo.<suffix>, see dwo.c) and the
 * unfinished files of symcaches (<name>.symcache.tmp.XXXXXX).  Safe to
 * call at any time; a server does at start, a build that makes such a
 * directory clears the stale ones first, and fl_symstore_get clears its
 * key's unfinished files before it builds.  OUT: how many directories
 * (*dirs) and files (*files) went; either may be NULL.  Returns 0, or
 * FL_SYM_EIO when dir cannot be read (a missing dir is empty). */
int fl_symstore_clean(const char *dir, size_t *dirs, size_t *files);

/* The symcache for the module at elf_path: opened from dir when a valid
 * one is there, else built into dir first (opts, may be NULL: where dwz
 * files are found; a cached symcache built without its dwz file is
 * rebuilt when the file can be found now).  force: rebuild even if cached.
 * OUT: *out (close with fl_symcache_close), *built (1 if it was built now),
 * stats (when built; may be NULL), path_out (the symcache's path; may be
 * NULL).  Returns 0 or a negative FL_SYM_ code with err filled. */
int fl_symstore_get(const char *dir, const char *elf_path, const fl_symbuild_opts *opts, int force,
                    fl_symcache **out, int *built, fl_symbuild_stats *stats, char *path_out,
                    size_t path_cap, char *err, size_t errlen);

#endif
