/*
 * fl_symcheck.h - what an ELF file holds, and whether the server takes it
 * as a debug file.
 *
 * One acceptance check with two callers: the server, for every uploaded or
 * dropped debug file (src/server/symingest.c), and `faultline symbols add`,
 * which runs it before building or uploading, so that a file the server
 * would refuse is refused before a byte is sent, in the server's words.
 * The locator (locate.c) reads build ids and sections through
 * fl_symcheck_inspect too.
 *
 * Only the ELF header, the notes and the section headers are read: cheap
 * enough for an HTTP thread.  Threads: any number at once.
 */
#ifndef FL_SYMCHECK_H
#define FL_SYMCHECK_H

#include <stddef.h>

#include "fl_symcache.h"

/* Results of fl_symcheck_debug_file: 0 is acceptable, the rest negative.
 * The text of FL_SYMCHECK_ENOBUILDID and FL_SYMCHECK_ENODEBUG is the whole
 * reason the server gives. */
#define FL_SYMCHECK_ERRORS(X)                                                                      \
    X(FL_SYMCHECK_OK, 0, "a usable debug file")                                                    \
    X(FL_SYMCHECK_EFILE, -1, "cannot read the file")                                               \
    X(FL_SYMCHECK_ENOTELF, -2, "not a usable ELF file")                                            \
    X(FL_SYMCHECK_ENOBUILDID, -3, "no GNU build id (link with -Wl,--build-id)")                    \
    X(FL_SYMCHECK_ENODEBUG, -4,                                                                    \
      "no debug information: neither DWARF (.debug_info) nor a symbol table (.symtab); upload "    \
      "the unstripped file or its .debug file")                                                    \
    X(FL_SYMCHECK_EDWO, -5, "not a usable split DWARF object (.dwo)")

enum {
#define FL_SYMCHECK_ENUM_(name, value, text) name = value,
    FL_SYMCHECK_ERRORS(FL_SYMCHECK_ENUM_)
#undef FL_SYMCHECK_ENUM_
};

/* Static text for a result code (never NULL). */
const char *fl_symcheck_strerror(int code);

/* Why an ELF file, already opened with libelf (an Elf *, passed as void *
 * to keep libelf out of this header), cannot be symbolicated whatever its
 * contents: a relocatable object (.o; not the relocatable file dwz -m
 * writes, which holds DWARF shared by debug files), or section headers
 * past the end of the file, or the bytes of a section the check or the
 * symcache build reads (the section names, notes, symbol tables and their
 * strings, .text, .debug_*; not SHT_NOBITS) -- truncated or damaged.  buf
 * (cap bytes, 256 is enough) holds the text that names the section.
 * Returns static text, buf, or NULL when none of these. */
const char *fl_symcheck_elf_problem(void *elf, char *buf, size_t cap);

typedef struct fl_symcheck_info {
    char build_id[2 * FL_SYM_BUILD_ID_MAX + 1]; /* lowercase hex; "" when none */
    int has_dwarf;                              /* a .debug_info or .zdebug_info with bytes */
    int has_symtab;                             /* a .symtab with bytes */
    int has_code;                               /* a .text with bytes (not a debug-only file) */
    int has_dynsym;                             /* a .dynsym that defines a function */
} fl_symcheck_info;

/*
 * Reads what the ELF file at path holds.  The file is opened O_NONBLOCK
 * and must be a regular file (a path from a crash log may name a FIFO or
 * a device).  OUT: *info, zeroed first.  Returns 0 when path is an ELF
 * file (with or without a build id), else -1.
 */
int fl_symcheck_inspect(const char *path, fl_symcheck_info *info);

/*
 * The server's acceptance check of a debug file: a regular ELF file with a
 * GNU build id and DWARF or a .symtab.  OUT: *info (as far as it was
 * read: the sections are looked at even without a build id), why (whylen
 * may be 0): the reason for a refusal, without the path; for
 * FL_SYMCHECK_ENOBUILDID and FL_SYMCHECK_ENODEBUG it is
 * fl_symcheck_strerror(code).  Returns 0 or a negative FL_SYMCHECK_ code.
 */
int fl_symcheck_debug_file(const char *path, fl_symcheck_info *info, char *why, size_t whylen);

/*
 * Whether the file at path is a split DWARF object: the .dwo file that
 * -gsplit-dwarf writes next to each object file, which holds that unit's
 * DIEs.  It has no build id; its key is its DWO id (the DWARF 5 split
 * unit header's dwo_id, or GNU DWARF 4's DW_AT_GNU_dwo_id), which the
 * program's skeleton unit names too.  Opened as fl_symcheck_inspect does.
 * Returns 1 with the DWO id in dwo_id (16 lowercase hex digits; cap >=
 * 17), 0 when the file is no .dwo file (no .debug_info.dwo section: the
 * caller goes on with fl_symcheck_debug_file), FL_SYMCHECK_EFILE, or
 * FL_SYMCHECK_EDWO when it is one but unusable (damaged, truncated, a .dwp
 * package, no or several split units); why (whylen may be 0): the reason,
 * without the path.
 */
int fl_symcheck_dwo_file(const char *path, char *dwo_id, size_t cap, char *why, size_t whylen);
/* The same on an image in memory (for fuzzing); no reason given. */
int fl_symcheck_dwo_mem(const void *image, size_t size, char *dwo_id, size_t cap);

#endif
