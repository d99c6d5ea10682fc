/*
 * fl_symdwo.h - split DWARF (.dwo files) inside src/symbols: reading a
 * .dwo file's DWO id, listing a program's skeleton units with where
 * their .dwo files are, and pointing libdw at .dwo files it would not
 * find by itself (see dwo.c for how).  Internal to the symbols module;
 * the public face is fl_symcache_dwo_list (fl_symcache.h) and
 * fl_symcheck_dwo_file (fl_symcheck.h).
 */
#ifndef FL_SYMDWO_H
#define FL_SYMDWO_H

#include <elfutils/libdw.h>
#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fl_symcache.h"

/* What elf (opened by the caller; size: its file's size) is as a .dwo
 * file: 1 with *id when it is one (a .debug_info.dwo section whose single
 * split compile unit -- DWARF 5 DW_UT_split_compile, or GNU DWARF 4's
 * DW_AT_GNU_dwo_id -- carries the id), 0 when it is no .dwo file (no
 * .debug_info.dwo section), or -1 with why filled (whylen may be 0) when
 * it looks like one but cannot be used: damaged, truncated, a .dwp
 * package, no or several split units. */
int fl_dwo_read(Elf *elf, size_t size, uint64_t *id, char *why, size_t whylen);

/* An open file description lock on one byte, picked by key, of DIR/FILE
 * (made when missing): the descriptor holding it (close it to release),
 * or -1 with errno (EAGAIN: held elsewhere, when not wait).  Threads of
 * one process do not share such a lock; the kernel drops it when its
 * holder dies.  Here for symstore.c's build lock too. */
int fl_sym_lock_byte(const char *dir, const char *file, const char *key, bool wait);

/* The skeleton units of dbg (the DWARF of the file at dwarf_path; NULL for
 * an image in memory: then only absolute names are looked at) and where
 * their .dwo files are: where libdw looks, then opts->find_dwo, then the
 * package elf_path.dwp or dwarf_path.dwp (elf_path: the program; may be
 * NULL).  OUT: *units (NULL when there are none; fl_symcache_dwo_free),
 * *n.  Returns 0 or a negative FL_SYM_ code. */
int fl_dwo_scan(Dwarf *dbg, const char *dwarf_path, const char *elf_path,
                const fl_symbuild_opts *opts, fl_dwo_unit **units, size_t *n);

/* A private view of the DWARF file at dwarf_path in which libdw finds the
 * .dwo files of units[0..n) that only opts->find_dwo found.  See dwo.c. */
typedef struct fl_dwo_view {
    char dir[4096]; /* the private directory ("" when none) */
    int fd;         /* the DWARF file, opened through dir */
    int lock;       /* holds dir's lock (dwo.c); -1 when none */
    Elf *elf;       /* its image, mapped copy-on-write; NULL when none */
} fl_dwo_view;

/* Sets *v up when some unit's .dwo is known only through find_dwo or
 * from a package (FL_DWO_FOUND_FINDER, FL_DWO_FOUND_DWP; a packed unit's
 * .dwo is written into the view from the package), or is one libdw reads
 * only merged (fl_dwo_unit.merged: written into the view merged); else
 * leaves v->elf NULL.  near: a path
 * whose directory takes the private directory (the symcache being
 * built).  Returns 0, or a negative FL_SYM_ code (then nothing is left
 * behind).  Release with fl_dwo_view_end, also after a failure. */
int fl_dwo_view_begin(fl_dwo_view *v, const char *dwarf_path, const fl_dwo_unit *units, size_t n,
                      const char *near, char *err, size_t errlen);
/* Ends the image and removes the private directory. */
void fl_dwo_view_end(fl_dwo_view *v);

/* Removes the private directories in dir that builds killed before
 * fl_dwo_view_end left, and only those: one a live build of any process
 * holds stays (dwo.c says how that is known).  OUT: *removed (may be
 * NULL), how many went.  Returns 0 (also when dir does not exist) or
 * FL_SYM_EIO when dir cannot be read. */
int fl_dwo_views_clean(const char *dir, size_t *removed);

#endif
