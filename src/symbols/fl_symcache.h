/*
 * fl_symcache.h - DWARF/ELF symbols turned into a compact, mmap-able file.
 *
 * A symcache answers "which function, file, line and column, with the full
 * chain of inlined calls, is at address A of this module?" with the same
 * answer `llvm-symbolizer --obj=FILE --inlines` (LLVM 14) gives, but from a
 * file that is opened with one mmap and queried with one binary search and
 * a walk of at most a few records, without allocating.
 *
 * The builder reads an ELF executable, shared object or separate debug file
 * with elfutils (libelf + libdw), follows the build-id path and
 * .gnu_debuglink to the debug file when the object has none, and writes the
 * file described in docs/symbols.md.  The reader validates every byte it
 * relies on: a corrupt or truncated file is an error, never a crash.
 *
 * Threads: a built fl_symcache is read-only; any number of threads may call
 * fl_symcache_lookup on it at once.  Nothing here is async-signal-safe.
 */
#ifndef FL_SYMCACHE_H
#define FL_SYMCACHE_H

#include <stddef.h>
#include <stdint.h>

/* Error codes: 0 is success, every failure is negative.  One list makes
 * both the enum and fl_sym_strerror(). */
#define FL_SYM_ERRORS(X)                                                                           \
    X(FL_SYM_OK, 0, "success")                                                                     \
    X(FL_SYM_EIO, -1, "cannot read or write a file")                                               \
    X(FL_SYM_ENOTELF, -2, "not a usable ELF file")                                                 \
    X(FL_SYM_EDWARF, -3, "malformed DWARF")                                                        \
    X(FL_SYM_ECORRUPT, -4, "corrupt or truncated symcache")                                        \
    X(FL_SYM_EVERSION, -5, "unsupported symcache version")                                         \
    X(FL_SYM_ENOMEM, -6, "out of memory")                                                          \
    X(FL_SYM_ETOOBIG, -7, "input exceeds a size limit")                                            \
    X(FL_SYM_EINVAL, -8, "invalid argument")

enum {
#define FL_SYM_ENUM_(name, value, text) name = value,
    FL_SYM_ERRORS(FL_SYM_ENUM_)
#undef FL_SYM_ENUM_
};

/* Static text for an error code (never NULL). */
const char *fl_sym_strerror(int code);

/* Longest GNU build id we keep (real ones are 20 bytes). */
#define FL_SYM_BUILD_ID_MAX 64

typedef struct fl_symcache fl_symcache;

/* One frame of a lookup.  Strings are borrowed from the open symcache and
 * stay valid until fl_symcache_close().  NULL means unknown (llvm prints
 * "??").  line/column 0 mean unknown. */
typedef struct fl_symframe {
    const char *function; /* demangled like llvm-symbolizer does */
    const char *file;     /* the path as llvm-symbolizer prints it */
    uint32_t line;
    uint32_t column;
    int inlined; /* 1: this frame was inlined into the next one */
} fl_symframe;

typedef struct fl_symbuild_stats {
    uint64_t compile_units;
    uint64_t records;     /* function + inline records */
    uint64_t ranges;      /* address breakpoints */
    uint64_t symbols;     /* ELF symbols kept */
    uint64_t string_bytes;
    uint64_t file_bytes;  /* size of the symcache written */
    int has_dwarf;        /* 0: built from the ELF symbol table only */
    char debug_path[1024]; /* the file the DWARF came from ("" if none) */
    /* The DWARF's dwz file (.gnu_debugaltlink): its build id in hex (""
     * when the DWARF has none), where it was found ("" when it was not:
     * then alt_missing is 1, and the names, types and inlined functions
     * dwz moved into it are missing from the symcache). */
    char alt_build_id[2 * FL_SYM_BUILD_ID_MAX + 1];
    char alt_path[1024];
    int alt_missing;
    /* Split DWARF (-gsplit-dwarf): skeleton units, and those whose .dwo
     * file (DW_AT_dwo_name, relative to DW_AT_comp_dir) was not found:
     * their functions and inlined frames are missing, their lines are
     * there (the line table stays in the skeleton's file). */
    size_t dwo_units, dwo_missing;
    /* Call sites kept (fl_symcache_call_at) and tail calls kept
     * (fl_symcache_tail_calls). */
    uint64_t call_sites, tail_calls;
} fl_symbuild_stats;

/* Where the builder finds a dwz file (the target of .gnu_debugaltlink,
 * which holds the DWARF that dwz -m moved out of several debug files).
 * find_alt, when set, is asked first with the file's build id (lowercase
 * hex) and the name the link gives; it fills path (cap bytes) and returns
 * 0, or returns -1.  Then libdw's own places: the name itself (relative to
 * the debug file) and /usr/lib/debug/.build-id/.  A file found must carry
 * the build id the link asks for. */
typedef struct fl_symbuild_opts {
    int (*find_alt)(void *ctx, const char *build_id_hex, const char *name, char *path, size_t cap);
    void *ctx;
    /* Where the builder finds a split unit's .dwo file that is not where
     * libdw looks (DW_AT_dwo_name relative to the debug file's directory,
     * then to DW_AT_comp_dir; an absolute name as it is): asked with the
     * unit's DWO id (16 lowercase hex digits) and that name; fills path
     * (cap bytes) and returns 0, or returns -1.  A file found must be a
     * .dwo file with that DWO id, or a .dwp package holding that id.  May
     * be NULL (libdw's places, then PROG.dwp, only). */
    int (*find_dwo)(void *ctx, const char *dwo_id_hex, const char *name, char *path, size_t cap);
} fl_symbuild_opts;

/* One split-DWARF skeleton unit of a module and where its .dwo file is. */
enum { FL_DWO_NOWHERE = 0, FL_DWO_FOUND_LIBDW = 1, FL_DWO_FOUND_FINDER = 2, FL_DWO_FOUND_DWP = 3 };
typedef struct fl_dwo_unit {
    char dwo_id[17]; /* the DWO id, lowercase hex */
    char *name;      /* DW_AT_dwo_name (DW_AT_GNU_dwo_name) as the compiler wrote it */
    char *path;      /* where its .dwo file is now (absolute), NULL when nowhere */
    int found;       /* FL_DWO_*: where libdw looks, through find_dwo, or in
                      * the .dwp package next to the program or its debug
                      * file (PROG.dwp, where gdb and llvm look) */
    int packed;      /* 1: path is a .dwp package holding the unit */
    int merged;      /* 1: path is a .dwo file of several .debug_info.dwo
                      * sections (gcc's DWARF 5 type units), which libdw
                      * reads only merged into one (dwo.c) */
} fl_dwo_unit;

/* What a module is, read cheaply (no DWARF): its GNU build id and a
 * fingerprint of the symbol table llvm-symbolizer would use for it.  Two
 * files with the same build id but different symbol tables (a stripped
 * library and its debug file) give different fingerprints.
 * OUT: build_id (FL_SYM_BUILD_ID_MAX bytes), *build_id_len (0 if none),
 * *fingerprint.  Returns 0 or a negative FL_SYM_ code. */
int fl_symcache_identify(const char *elf_path, uint8_t *build_id, size_t *build_id_len,
                         uint64_t *fingerprint, char *err, size_t errlen);

/* Build a symcache for the module at elf_path and write it to out_path
 * (through a temporary file and rename(), so readers never see half a
 * file).  stats may be NULL.  On failure nothing is left at out_path and
 * err (if errlen > 0) says why.  Returns 0 or a negative FL_SYM_ code. */
int fl_symcache_build(const char *elf_path, const char *out_path, fl_symbuild_stats *stats,
                      char *err, size_t errlen);
/* The same, with a dwz-file finder (opts may be NULL). */
int fl_symcache_build_with(const char *elf_path, const char *out_path, const fl_symbuild_opts *opts,
                           fl_symbuild_stats *stats, char *err, size_t errlen);

/* The dwz file the DWARF of the module at elf_path (or of its debug file,
 * found as the builder finds it) links to: build id into hex (cap >=
 * 2 * FL_SYM_BUILD_ID_MAX + 1), and, when path is not NULL, where it is
 * found now through opts and libdw's places (path "" when nowhere).
 * Returns 1 when there is such a link, 0 when there is none, or a
 * negative FL_SYM_ code. */
int fl_symcache_altlink(const char *elf_path, const fl_symbuild_opts *opts, char *hex, size_t cap,
                        char *path, size_t path_cap);

/* Map and validate the symcache at path.  *out is set on success and must
 * be released with fl_symcache_close().  Returns 0 or a negative code. */
int fl_symcache_open(const char *path, fl_symcache **out, char *err, size_t errlen);

/* Validate a symcache held in memory.  The bytes are borrowed: they must
 * outlive the handle.  For tests and fuzzing. */
int fl_symcache_open_mem(const void *data, size_t size, fl_symcache **out, char *err,
                         size_t errlen);

/* Frees the handle and unmaps the file.  NULL is harmless. */
void fl_symcache_close(fl_symcache *sc);

/* Symbolize a module-relative address.  Fills at most max frames,
 * innermost first (the last one is the real, non-inlined function), and
 * returns the number of frames the address has (>= 1 when max >= 1; a
 * single all-unknown frame when nothing covers the address).  Never
 * allocates. */
size_t fl_symcache_lookup(const fl_symcache *sc, uint64_t addr, fl_symframe *frames, size_t max);

/* Call sites, for the frames a tail call leaves off a stack.  A function
 * that ends by jumping to another (`return free(p);` at -O2) is not on the
 * stack when the callee crashes: the callee returns straight to the
 * caller's caller.  The DWARF's call-site entries (DW_TAG_call_site of
 * DWARF 5, DW_TAG_GNU_call_site before) say, at each call, which function
 * is called and whether the call is a tail call; with them the missing
 * frame can be named again (as gdb's "tailcall frames" do).
 *
 * Addresses are module-relative, like fl_symcache_lookup's. */
#define FL_SYMCALL_NONE UINT64_MAX
typedef struct fl_symcall {
    /* A direct call: its return address.  A tail call: an address inside
     * its jump instruction (looking it up names the line of the jump). */
    uint64_t site;
    /* The entry address of the called function when this module defines
     * it and the DWARF says where, else FL_SYMCALL_NONE. */
    uint64_t target;
    /* The called function's name, demangled as fl_symframe.function
     * ("free", "Blob::~Blob()"); NULL when unknown.  Borrowed like
     * fl_symframe's strings. */
    const char *target_name;
} fl_symcall;

/* The direct (not tail) call whose return address is ret: 1 with *out
 * (out may be NULL), 0 when the symcache knows no call there.  Kept are
 * the calls to functions of the module that make tail calls (only above
 * those can a frame be missing that the tail calls name; a call to
 * another function of the module answers 0) and, from builder revision
 * 5 (format version 5) on, every call to another module's function (a
 * declaration the module's symbol table does not define: through the
 * PLT), with target FL_SYMCALL_NONE and the declaration's name -- that
 * function may end in a tail call its own module's DWARF says.  Never
 * allocates. */
int fl_symcache_call_at(const fl_symcache *sc, uint64_t ret, fl_symcall *out);

/* The tail calls made by the function whose entry address is entry (a
 * fl_symcall.target, or the function's DW_AT_low_pc: the address of its
 * ELF symbol), in address order: fills out[0..max) and returns how many
 * there are (may be more than max; out may be NULL when max is 0).  A
 * tail call made inside an inlined function counts as its out-of-line
 * caller's.  An entry with target FL_SYMCALL_NONE and target_name NULL:
 * a tail call to a function the DWARF does not name (an indirect one,
 * through a pointer or a virtual call; site inside its jump), or, for a
 * function the DWARF does not say all its calls are described, that it
 * may make one (site at the function's entry, or just above it when a
 * named tail call sits there).  Either way the named entries are not
 * all the ways the function can go.  Never allocates. */
size_t fl_symcache_tail_calls(const fl_symcache *sc, uint64_t entry, fl_symcall *out, size_t max);

/* The start address of the ELF symbol (function) the symcache's symbol
 * table says covers addr: the last one starting at or before addr, unless
 * it has a size and addr is past its end -- the symbol fl_symcache_lookup
 * names the outermost frame after.  FL_SYMCALL_NONE when none covers addr
 * (or sc is NULL).  Module-relative like the other addresses.  Never
 * allocates. */
uint64_t fl_symcache_symbol_at(const fl_symcache *sc, uint64_t addr);

/* The start address of the one exported function the symbol table names
 * name (as fl_symframe.function spells it; a versioned "name@VER"
 * counts): what a call from another module through the PLT can reach --
 * global or weak, default or protected visibility, not an ifunc's
 * resolver.  FL_SYMCALL_NONE when none, when two at different addresses
 * do, or when the symcache does not say which symbols are exported (one
 * of a builder before 5, format 5 without FL_SC_F_EXPORTS).  Of
 * aliases at one address the table keeps one (the name
 * fl_symcache_lookup gives), so another alias is not found.  A scan of
 * the symbol table (~10,000 symbols for libc: tens of microseconds).
 * Never allocates. */
uint64_t fl_symcache_symbol_named(const fl_symcache *sc, const char *name);

/* 1 when the symcache holds call sites (built from DWARF that has them by
 * a builder that keeps them), else 0: a symcache of format version 3, one
 * built from the symbol table only, or from DWARF without call-site
 * entries (-O0), where finding no tail call means nothing. */
int fl_symcache_has_calls(const fl_symcache *sc);

/* Prepares sc for many lookups: each block of range entries is kept
 * decoded after its first lookup (about 20 bytes per range entry, ~3 MB
 * for libc, allocated now but only touched as blocks are used) and a
 * bucket index narrows the address searches; answers stay the same.
 * Call it before sharing sc between threads (it is not safe against
 * lookups running concurrently); lookups may run concurrently after it.
 * Returns 0, or FL_SYM_ENOMEM with sc still usable (perhaps unmemoized). */
int fl_symcache_memoize(fl_symcache *sc);

/* The build id stored in the symcache (borrowed); returns its length. */
size_t fl_symcache_build_id(const fl_symcache *sc, const uint8_t **id);
/* The symbol-table fingerprint stored in the symcache. */
uint64_t fl_symcache_fingerprint(const fl_symcache *sc);
/* The revision of the builder that wrote the symcache (FL_SC_BUILDER in
 * symcache_format.h; 0 for builders before revisions were kept). */
unsigned fl_symcache_builder(const fl_symcache *sc);
/* 1 when the symcache was built from DWARF, 0 when from the symbol table
 * only (fl_symbuild_stats.has_dwarf at build time). */
int fl_symcache_has_dwarf(const fl_symcache *sc);
/* 1 when the DWARF linked to a dwz file that was not found at build time
 * (fl_symbuild_stats.alt_missing): what dwz moved there is missing. */
int fl_symcache_alt_missing(const fl_symcache *sc);
/* 1 when a split unit's .dwo file was not found at build time. */
int fl_symcache_dwo_missing(const fl_symcache *sc);

/* 1 + how many split units' .dwo files were found nowhere at build time
 * (the header's flags bits 16-31, saturating at 65535); 0 when none was
 * missing, and in a flagged file of a builder that did not count them. */
unsigned fl_symcache_dwo_missing_count(const fl_symcache *sc);

/* The split-DWARF skeleton units of the module at elf_path (or of its
 * debug file) and how many of their .dwo files are not found now where
 * libdw looks.  Returns 0 or a negative FL_SYM_ code. */
int fl_symcache_split_units(const char *elf_path, size_t *units, size_t *missing);

/* The split-DWARF skeleton units of the module at elf_path (or of its
 * debug file, found as the builder finds it), in unit order, each with
 * where its .dwo file is now: where libdw looks, else through
 * opts->find_dwo (opts may be NULL), else in ELF.dwp or DEBUGFILE.dwp.  A
 * file counts only when it is a .dwo file with the unit's DWO id or a
 * .dwp package holding it.  OUT: *units (NULL when none; free
 * with fl_symcache_dwo_free), *n.  Returns 0 or a negative FL_SYM_ code. */
int fl_symcache_dwo_list(const char *elf_path, const fl_symbuild_opts *opts, fl_dwo_unit **units,
                         size_t *n);
void fl_symcache_dwo_free(fl_dwo_unit *units, size_t n); /* NULL is fine */

/* Writes the build id as lowercase hex into buf (cap >= 2*len+1). */
void fl_sym_hex(const uint8_t *id, size_t len, char *buf, size_t cap);

#endif
