/*
 * fl_elffile.h - opening the files a crashed process names, safely, for
 * the converters (core.c, minidump.c).
 *
 * The names in a core or a minidump are the crashed process's to choose:
 * a FIFO would make an open() wait forever, a device would be opened.  So
 * a file is opened only when it is a regular one, and kept only when its
 * build id is the one the dump recorded.
 */
#ifndef FL_ELFFILE_H
#define FL_ELFFILE_H

#include <stdbool.h>
#include <stddef.h>

/* Opens path for reading only when it names a regular file: looked up
 * first without opening (O_PATH), then that very file reopened through
 * /proc.  With have_root, path is looked up inside root_fd (a container's
 * root; openat2's RESOLVE_IN_ROOT).  A descriptor the caller closes, or
 * -1. */
int fl_elf_open_regular(const char *path, bool have_root, int root_fd);

/* 1 when the ELF file on fd has the GNU build id want[0..len), else 0
 * (also when it is no ELF file or has none). */
int fl_elf_has_build_id(int fd, const unsigned char *want, size_t len);

/* The files a user gives `faultline core` and `faultline minidump` with
 * --obj (a dump from another machine: the developer's build), used for
 * the module with their build id before the path the dump names. */
typedef struct fl_elf_obj {
    char *path;   /* owned */
    char id[129]; /* its GNU build id, lowercase hex */
    bool used;    /* fl_elf_objs_find gave it */
    bool given;   /* named by the user, not found in a directory */
} fl_elf_obj;

typedef struct fl_elf_objs {
    fl_elf_obj *o;
    size_t n, cap;
} fl_elf_objs; /* zero-initialised: empty */

/* Files a directory may hold: looked at, and ELF ones kept. */
#define FL_ELF_OBJS_MAX_SCAN 100000
#define FL_ELF_OBJS_MAX_DEPTH 16

/* What a file must have, besides a GNU build id, to be taken: code (an
 * unwinder's file: not a separate debug file), symbols (DWARF or a
 * symbol table: what `faultline symbols add` ingests), or nothing more
 * (`faultline decode`: programs and their debug files alike). */
typedef enum fl_elf_want { FL_ELF_WANT_CODE, FL_ELF_WANT_SYMBOLS, FL_ELF_WANT_ANY } fl_elf_want;

/* Adds path: a file must be ELF with a GNU build id and what `want`
 * asks; a directory adds every regular file under it that is one (others
 * are passed over, as symbolic links are, and so are CMake's compiler
 * probes: CMakeFiles/<version>/, CMakeFiles/CMakeTmp/ and
 * CMakeFiles/CMakeScratch/ below it; at most FL_ELF_OBJS_MAX_SCAN
 * files looked at, 16 levels deep), in the order of their paths.  0,
 * else -1 with the reason ("not an ELF file", "no GNU build id", "no code
 * in it ...", "no ELF file with a build id ... under it", strerror, out
 * of memory) in err. */
int fl_elf_objs_add(fl_elf_objs *l, const char *path, fl_elf_want want, char *err, size_t errcap);
void fl_elf_objs_free(fl_elf_objs *l);

/* The path of the file with build id build_id_hex (lowercase), marked
 * used; NULL when none has it. */
const char *fl_elf_objs_find(fl_elf_objs *l, const char *build_id_hex);

/* What the ELF file at path holds, for choosing among files with one
 * build id: 2 for DWARF (.debug_info), plus 1 for code; 0 when it cannot
 * be read. */
int fl_elf_completeness(const char *path);

/* The formats a FAULTLINE_TRACE_APART build keeps apart
 * (fl_tracesec.h), from the section .debug_faultline_trace of the ELF
 * file at path (a program or its debug file; compressed or not).
 * Returns 1 with *out (fl_tracesec_free), 0 when the file has no such
 * section, -1 with err filled when it cannot be read or the section is
 * bad. */
struct fl_tracesec;
int fl_elf_tracesec(const char *path, struct fl_tracesec **out, char *err, size_t errlen);

#endif /* FL_ELFFILE_H */
