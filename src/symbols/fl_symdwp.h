/*
 * fl_symdwp.h - .dwp packages of split DWARF inside src/symbols: the
 * .dwo files of many units packed into one file (dwp, llvm-dwp), with a
 * .debug_cu_index saying where each unit's part of each section is.
 * libdw 0.188 cannot read them; dwo.c writes, per unit it needs, a
 * standalone .dwo file of the unit's parts (fl_dwp_write) and the usual
 * .dwo path takes over.  Internal to the symbols module.
 */
#ifndef FL_SYMDWP_H
#define FL_SYMDWP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libelf.h>

/* The unit index (.debug_cu_index) as read: the DWARF 5 form (version 5)
 * and GNU's DWARF 4 form (version 2) that binutils' dwp writes. */
#define FL_DWP_MAX_COLS 8
typedef struct fl_dwp_index {
    unsigned version;                 /* 2 or 5 */
    uint32_t ncols, nunits, nslots;   /* N, U, S of the header */
    unsigned cols[FL_DWP_MAX_COLS];   /* the DW_SECT_* id of each column */
    const unsigned char *offs, *lens; /* U rows of N u32 each, in the index's bytes */
    bool big;                         /* big-endian */
    struct fl_dwp_entry {
        uint64_t id;  /* the DWO id */
        uint32_t row; /* 1-based row of offs/lens */
    } * ent;          /* sorted by id; malloc'ed */
    size_t nent;
} fl_dwp_index;

/* Reads the index in buf[0..len) (borrowed: it must outlive ix).  Returns
 * 0, or a negative FL_SYM_ code with why filled (whylen may be 0): an
 * unknown version, tables past the end, a column twice or of no known
 * section, a row number past the unit count, one DWO id twice.  The
 * contributions are checked against the sections by fl_dwp_open*. */
int fl_dwp_index_parse(const void *buf, size_t len, bool big, fl_dwp_index *ix, char *why,
                       size_t whylen);
void fl_dwp_index_free(fl_dwp_index *ix); /* NULL and a zeroed ix are fine */

/* An open package: the file, its decompressed sections and its index. */
typedef struct fl_dwp fl_dwp;

/* Opens the file at path (a regular file only: the name may come from a
 * debug file) as a package.  Returns 1 with *out, 0 when it is no package
 * (not ELF, no .debug_cu_index, not a regular file, missing), or a
 * negative FL_SYM_ code with why filled when it is one but cannot be
 * used: a damaged index, a unit's part outside its section, a section
 * that does not decompress.  Close with fl_dwp_close. */
int fl_dwp_open(const char *path, fl_dwp **out, char *why, size_t whylen);
/* The same on an image in memory (copied). */
int fl_dwp_open_mem(const void *image, size_t size, fl_dwp **out, char *why, size_t whylen);
void fl_dwp_close(fl_dwp *p); /* NULL is fine */

/* The DWO ids the package holds: count, and the i-th (sorted). */
size_t fl_dwp_count(const fl_dwp *p);
uint64_t fl_dwp_id(const fl_dwp *p, size_t i);
bool fl_dwp_has(const fl_dwp *p, uint64_t id);

/* One section of a unit's standalone .dwo: its name and bytes (borrowed
 * from p). */
typedef struct fl_dwp_section {
    const char *name;
    const unsigned char *data;
    size_t size;
} fl_dwp_section;
#define FL_DWP_MAX_SECTIONS (FL_DWP_MAX_COLS + 1)

/* The sections of unit id's .dwo: its part of each indexed section, and
 * .debug_str.dwo whole (its string offsets point into it).  OUT: s[0..n)
 * (cap at least FL_DWP_MAX_SECTIONS).  Returns n, or -1 when p holds no
 * unit id. */
int fl_dwp_unit(const fl_dwp *p, uint64_t id, fl_dwp_section *s, size_t cap);

/* Replaces, in s[0..n) (from fl_dwp_unit), .debug_str.dwo by the strings
 * the unit's .debug_str_offsets.dwo part names, and that part by a copy
 * pointing into them: a unit's .dwo then holds its own strings, not the
 * whole package's times every unit.  Left as it is when there is nothing
 * to gain (no offsets, macros that may name strings by offset, strings
 * that overlap more than they save).  OUT: *buf (malloc'ed, holds the
 * new sections: free it once s is used; NULL when nothing changed).
 * Returns 0, or a negative FL_SYM_ code with why filled when an offset
 * points outside the strings. */
int fl_dwp_unit_strings(const fl_dwp *p, fl_dwp_section *s, int n, void **buf, char *why,
                        size_t whylen);

/* Writes unit id's standalone .dwo file at path (made, 0600; must not
 * exist), with its own strings (fl_dwp_unit_strings).  Returns 0, or a negative FL_SYM_ code with
 * why filled. */
int fl_dwp_write(const fl_dwp *p, uint64_t id, const char *path, char *why, size_t whylen);

/* A plain .dwo file that libdw 0.188 does not read as it is: gcc's DWARF
 * 5 -fdebug-types-section writes each type unit into a .debug_info.dwo
 * section of its own, then the compile unit's, and libdw takes only the
 * first section of a name (a type unit: the split unit is not seen).
 * Returns how many non-empty .debug_info.dwo sections elf has (0 when it
 * is no ELF file). */
int fl_dwo_info_sections(Elf *elf);

/* Writes to fd (left open) a .dwo file of elf's split DWARF sections,
 * each once: the several parts of .debug_info.dwo and of
 * .debug_types.dwo concatenated in file order (their units start with
 * their own headers and refer inside themselves by unit-relative
 * offsets), compressed ones inflated.  Returns 0, or a negative FL_SYM_
 * code with why filled (another section found twice: not merged). */
int fl_dwo_write_merged(Elf *elf, int fd, char *why, size_t whylen);

#endif
