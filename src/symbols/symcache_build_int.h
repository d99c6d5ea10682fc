/* symcache_build_int.h - builder entry points for tests and fuzzing only. */
#ifndef FL_SYMCACHE_BUILD_INT_H
#define FL_SYMCACHE_BUILD_INT_H

#include <stddef.h>

#include "fl_symcache.h"

/* Build a symcache from an ELF image held in memory (no debug-file
 * lookup: the image is its own debug file).  On success *out is a malloc'd
 * buffer of *outlen bytes, 8-byte aligned, that the caller frees. */
int fl_symcache_build_mem(const void *elf_image, size_t size, void **out, size_t *outlen,
                          fl_symbuild_stats *stats, char *err, size_t errlen);

/* Test hook: make the Nth allocation of the builder from now fail (-1:
 * none); and whether that happened.  Not thread-safe. */
void fl_symcache_test_fail_alloc(long n);
int fl_symcache_test_alloc_failed(void);

/* Test hook: the builder ends and reopens its Dwarf handle before a unit
 * once the units read since hold this many line rows (0: before every
 * unit); -1: its own budget.  The output must not change.  Not
 * thread-safe. */
void fl_symcache_test_dwarf_rows(long rows);

/* The C++ demangler's reading of an Itanium "_Z" name (malloc'd), or NULL
 * when raw is not one or the C++ runtime is not there. */
char *fl_sym_demangle(const char *raw);

#endif
