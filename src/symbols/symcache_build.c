/*
 * symcache_build.c - ELF + DWARF (through elfutils) -> symcache.
 *
 * How this works.  The goal is to give, for every address, exactly the
 * answer `llvm-symbolizer --obj=FILE --inlines` (LLVM 14) gives, and to
 * precompute it so that a lookup is a binary search.  llvm-symbolizer
 * answers an address in four steps, and the builder mirrors each:
 *
 *  1. Which compile unit?  llvm merges .debug_aranges (and, for units it
 *     does not list, the unit DIE's ranges) into disjoint intervals; where
 *     units overlap the interval goes to the unit with the smallest offset,
 *     except that an interval keeps extending the previous unit while that
 *     unit still covers it.  -> build_aranges().
 *  2. Which function DIE?  Per unit llvm fills an ordered map
 *     low_pc -> (high_pc, DIE) from every subprogram and inlined_subroutine
 *     range in DIE pre-order, splitting the entry an inner range falls in.
 *     The innermost DIE is the map entry at the address; the inline chain
 *     is that DIE and its inlined_subroutine ancestors up to the first
 *     subprogram.  -> die_map_add() during walk_die().
 *  3. Which line row?  The unit's line table row in effect at the address:
 *     the last row at or below it in its sequence.  -> cu_lines().
 *  4. Which name for the outermost frame?  The ELF symbol table wins when
 *     a symbol covers the address.  -> load_symbols().
 *
 * Steps 1-3 give, per address interval, a (record, file, line, column)
 * tuple; those intervals are the symcache's range table.  Paths are joined
 * the way LLVM 14 joins them (comp_dir + include dir + name, no
 * normalisation), names are demangled the way llvm-symbolizer demangles
 * them (Itanium `_Z` names only, here through the C++ runtime's
 * __cxa_demangle).  Every growable array has a cap.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "fl_demangle.h"
#include "fl_symcache.h"
#include "fl_symcheck.h"
#include "fl_symdwo.h"
#include "symcache_build_int.h"
#include "symcache_format.h"

/* Caps: inputs beyond these are refused rather than exhausting memory. */
#define CAP_ENTRIES (1u << 28) /* per growable array */
#define CAP_STRINGS (1u << 31) /* string table bytes */
#define CAP_DIE_DEPTH 512u     /* DIE nesting we follow */
#define CAP_CALLS (1u << 24)   /* call sites kept (direct and tail together) */
#define CAP_DEFS (1u << 24)    /* DIE -> entry address pairs for call targets */
#define CAP_LINK_HOPS 8u       /* abstract_origin/specification links followed */

/* ---- allocation: one place, so tests can make it fail ---------------- */

/* Test hook (not thread-safe, tests only): the Nth allocation from now
 * fails.  -1: none. */
static long g_fail_countdown = -1;
static int g_fail_hit;

void fl_symcache_test_fail_alloc(long n)
{
    g_fail_countdown = n;
    g_fail_hit = 0;
}

int fl_symcache_test_alloc_failed(void)
{
    return g_fail_hit;
}

static int alloc_should_fail(void)
{
    if (g_fail_countdown < 0)
        return 0;
    if (g_fail_countdown-- == 0) {
        g_fail_hit = 1;
        return 1;
    }
    return 0;
}

static void *sc_malloc(size_t n)
{
    return alloc_should_fail() ? NULL : malloc(n);
}

static void *sc_calloc(size_t n, size_t size)
{
    return alloc_should_fail() ? NULL : calloc(n, size);
}

static void *sc_realloc(void *p, size_t n)
{
    return alloc_should_fail() ? NULL : realloc(p, n);
}

/* ---- small growable arrays ----------------------------------------- */

typedef struct vec {
    void *data;
    size_t len, cap, esize;
} vec;

static void vec_init(vec *v, size_t esize)
{
    v->data = NULL;
    v->len = v->cap = 0;
    v->esize = esize;
}

static void vec_free(vec *v)
{
    free(v->data);
    v->data = NULL;
    v->len = v->cap = 0;
}

/* Returns a pointer to a new zeroed slot, or NULL (out of memory / cap). */
static void *vec_push(vec *v)
{
    if (v->len == v->cap) {
        size_t ncap = v->cap ? v->cap * 2 : 64;
        if (ncap > CAP_ENTRIES)
            ncap = CAP_ENTRIES;
        if (v->len >= ncap)
            return NULL;
        void *nd = sc_realloc(v->data, ncap * v->esize);
        if (!nd)
            return NULL;
        v->data = nd;
        v->cap = ncap;
    }
    void *slot = (char *)v->data + v->len * v->esize;
    memset(slot, 0, v->esize);
    v->len++;
    return slot;
}

#define VEC_AT(v, type, i) (((type *)(v).data)[i])

/* ---- string table with deduplication -------------------------------- */

typedef struct strtab {
    char *buf;
    size_t len, cap;
    uint32_t *slots; /* open addressing: offset + 1, 0 = empty */
    size_t nslots, used;
} strtab;

static uint64_t str_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    return h;
}

static int strtab_grow_slots(strtab *t)
{
    size_t n = t->nslots ? t->nslots * 2 : 4096;
    uint32_t *ns = sc_calloc(n, sizeof *ns);
    if (!ns)
        return -1;
    for (size_t i = 0; i < t->nslots; i++) {
        uint32_t v = t->slots[i];
        if (!v)
            continue;
        const char *s = t->buf + v - 1;
        size_t j = str_hash(s, strlen(s)) & (n - 1);
        while (ns[j])
            j = (j + 1) & (n - 1);
        ns[j] = v;
    }
    free(t->slots);
    t->slots = ns;
    t->nslots = n;
    return 0;
}

/* Interns s; returns its offset or FL_SC_NONE on failure. */
static uint32_t strtab_add(strtab *t, const char *s)
{
    size_t n = strlen(s);
    if ((t->used + 1) * 2 > t->nslots && strtab_grow_slots(t) != 0)
        return FL_SC_NONE;
    size_t j = str_hash(s, n) & (t->nslots - 1);
    while (t->slots[j]) {
        const char *o = t->buf + t->slots[j] - 1;
        if (strcmp(o, s) == 0)
            return t->slots[j] - 1;
        j = (j + 1) & (t->nslots - 1);
    }
    if (t->len + n + 1 > CAP_STRINGS)
        return FL_SC_NONE;
    if (t->len + n + 1 > t->cap) {
        size_t ncap = t->cap ? t->cap : 65536;
        while (ncap < t->len + n + 1)
            ncap *= 2;
        char *nb = sc_realloc(t->buf, ncap);
        if (!nb)
            return FL_SC_NONE;
        t->buf = nb;
        t->cap = ncap;
    }
    uint32_t off = (uint32_t)t->len;
    memcpy(t->buf + t->len, s, n + 1);
    t->len += n + 1;
    t->slots[j] = off + 1;
    t->used++;
    return off;
}

static void strtab_free(strtab *t)
{
    free(t->buf);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

/* ---- builder state -------------------------------------------------- */

typedef struct line_bp {
    uint64_t addr;
    uint32_t file, line, column; /* file FL_SC_NONE: no row here */
} line_bp;

typedef struct die_bp {
    uint64_t addr;
    uint32_t record; /* FL_SC_NONE: no function here */
} die_bp;

typedef struct map_ent { /* llvm's AddrDieMap entry */
    uint64_t lo, hi;
    uint32_t record;
} map_ent;

/* llvm's AddrDieMap is an ordered map; a sorted array of these chunks
 * keeps an insertion's copying to one chunk (a function's cold part,
 * placed below every hot one, inserted near the front of one sorted
 * array: half the build time of a 300 MB program went to memmove). */
#define MAP_CHUNK 256

typedef struct map_chunk {
    size_t n;
    map_ent e[MAP_CHUNK];
} map_chunk;

typedef struct cu_info {
    Dwarf_Off off, next_off; /* unit header offset and the next one's */
    Dwarf_Off die_off;       /* its unit DIE */
    Dwarf_Die die;           /* only valid until the first unit is read */
    int version;
    int in_aranges;
    size_t ar_first, ar_count; /* its intervals: builder.ar_by_cu[first..] */
} cu_info;

typedef struct endpoint {
    uint64_t addr;
    uint32_t cu;
    uint32_t start;
} endpoint;

typedef struct arange {
    uint64_t lo, hi;
    uint32_t cu;
    size_t seg_off, seg_end; /* its range entries in builder.segs */
} arange;

/* A growable byte buffer (records, range segments, encoded range
 * entries). */
typedef struct bytes {
    uint8_t *p;
    size_t len, cap;
} bytes;

static int bytes_put(bytes *o, uint8_t c)
{
    if (o->len == o->cap) {
        size_t nc = o->cap ? o->cap * 2 : 65536;
        if (nc > ((size_t)1 << 34))
            return -1;
        uint8_t *np = sc_realloc(o->p, nc);
        if (!np)
            return -1;
        o->p = np;
        o->cap = nc;
    }
    o->p[o->len++] = c;
    return 0;
}

static uint64_t zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static int64_t unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static int put_varint(bytes *o, uint64_t v)
{
    for (; v >= 0x80; v >>= 7)
        if (bytes_put(o, (uint8_t)(v | 0x80)))
            return -1;
    return bytes_put(o, (uint8_t)v);
}

/* Only reads what put_varint wrote (segments are the builder's own). */
static uint64_t get_varint(const uint8_t **p)
{
    uint64_t v = 0;
    for (unsigned sh = 0;; sh += 7) {
        uint8_t c = *(*p)++;
        v |= (uint64_t)(c & 0x7f) << sh;
        if (!(c & 0x80))
            return v;
    }
}

/* A function with code, under one of the DIEs that stand for it: the
 * concrete DIE itself (direct 1) or one its DW_AT_abstract_origin /
 * DW_AT_specification chain reaches (direct 0).  key: die_key(). */
typedef struct def_ent {
    uint64_t key, entry;
    uint32_t name; /* direct and external: its record's name, else FL_SC_NONE */
    uint32_t direct;
} def_ent;

/* A call site, as read (target resolved after the walk: the callee's
 * definition may come later, in another unit): a direct call with a
 * known callee, a tail call (its callee perhaps unknown: key UINT64_MAX
 * and name FL_SC_NONE), or the marker of a function that may make tail
 * calls the DWARF does not describe (tail TAIL_MARKER; see note_call). */
typedef struct call_ent {
    uint64_t site;  /* return address, or an address inside the jump */
    uint64_t owner; /* tail call: entry of the function making it; else 0 */
    union {
        uint64_t key;    /* die_key() of the callee's DIE, until resolved */
        uint64_t target; /* then: entry of the callee, FL_SYMCALL_NONE */
    };
    uint32_t name;    /* string, or FL_SC_NONE */
    uint16_t tail;    /* 0: a direct call, 1: a tail call, TAIL_MARKER */
    uint16_t by_name; /* BY_NAME, BY_NAME_ELSEWHERE: the callee is an
                       * external declaration (else 0) */
} call_ent;
#define BY_NAME 1u           /* ... of a name the module's symbol table defines */
#define BY_NAME_ELSEWHERE 2u /* ... of a name it does not: another module's */
#define TAIL_MARKER 2u
/* A module holds millions of call sites: they are kept small. */
_Static_assert(sizeof(call_ent) == 32, "call_ent size");

typedef struct sym_in {
    uint64_t addr, size;
    uint32_t name, order;
    uint32_t file; /* STT_FILE before a local symbol (st_name, then string) */
    int has_file;
    int exported; /* a function a call through the PLT can reach (exports[]) */
} sym_in;

/* A unit's file table and the path ids its entries got so far. */
typedef struct ftab {
    Dwarf_Files *files;
    size_t nfiles;
    const char *const *dirs;
    size_t ndirs;
    uint32_t *ids; /* per file index: string id, FL_SC_NONE, or FILE_UNSET */
} ftab;

typedef struct builder {
    char *err;
    size_t errlen;
    int rc;
    strtab strs;
    bytes recs; /* function records, varint-coded (rec_put) */
    size_t nrecs;
    uint32_t recs_file1; /* the last record's call file + 1 */
    vec cus;             /* cu_info */
    vec aranges;         /* arange: step 1's intervals, in address order */
    uint32_t *ar_by_cu;  /* arange indices by unit, then address */
    bytes segs;          /* every interval's range entries, varint-coded */
    size_t nranges;      /* range entries, once encoded */
    size_t rows_held;    /* line rows libdw holds for us (see recycle_dwarf) */
    vec lines;           /* line_bp, current CU only */
    vec dbps;            /* die_bp, current CU only */
    map_chunk **mch;     /* the address map, current CU only: chunks in */
    size_t nmch, pmch;   /* key order [0, nmch), spare ones up to pmch */
    size_t capmch;
    vec syms; /* sym_in */
    vec defnames; /* uint64_t: sym_name_hash of every defined symbol, sorted */
    /* current CU: the file table of its DIEs (DW_AT_call_file) and, for
     * split DWARF, the one of its line table (the skeleton's) */
    ftab dies_ft, lines_ft;
    const char *comp_dir;
    int version;
    /* DIE walk stack */
    struct stack_ent {
        Dwarf_Die die;
        int tag;
        uint32_t record;
        uint64_t entry; /* a subprogram's entry address, or FL_SYMCALL_NONE */
        size_t def;     /* its own def_ent when external, or SIZE_MAX */
        uint32_t name;  /* its record's name, once the record is made */
        /* a subprogram: 1 when its DIE says all its (tail) calls are
         * described; 1 once its marker is made (note_call) */
        uint8_t all_tails, marked;
    } stack[CAP_DIE_DEPTH];
    size_t depth;
    uint64_t fingerprint;
    uint8_t build_id[FL_SYM_BUILD_ID_MAX];
    size_t build_id_len;
    int has_dwarf;
    /* split DWARF: skeleton units, and those whose .dwo was not found;
     * with a find_dwo, those whose .dwo is found nowhere (dwo_view) */
    size_t dwo_units, dwo_missing, dwo_nowhere;
    int dwo_scanned;
    /* the DWARF's dwz file */
    const fl_symbuild_opts *opts;
    /* the DWARF file's read-only mapping by libelf, or NULL */
    void *dmap;
    size_t dmap_len;
    int alt_missing;
    char alt_id[2 * FL_SYM_BUILD_ID_MAX + 1];
    char alt_path[1024];
    /* call sites (see "call sites" below) */
    vec defs;                      /* def_ent */
    vec calls;                     /* call_ent */
    int calls_seen;                /* the DWARF has call-site entries */
    int calls_capped;              /* CAP_CALLS or CAP_DEFS reached: some not kept */
    size_t ncalls_out, ntails_out; /* written to the file */
    Dwarf *dbg;                    /* the current handle (die_key) */
    Dwarf *split_dbg;              /* the current split unit's .dwo, or NULL */
    size_t cu_index;               /* the current unit */
} builder;

#define FILE_UNSET 0xFFFFFFFEu

static int berr(builder *b, int code, const char *fmt, ...)
{
    if (b->rc == 0) {
        b->rc = code;
        if (b->err && b->errlen) {
            int n = snprintf(b->err, b->errlen, "%s: ", fl_sym_strerror(code));
            if (n >= 0 && (size_t)n < b->errlen) {
                va_list ap;
                va_start(ap, fmt);
                vsnprintf(b->err + n, b->errlen - (size_t)n, fmt, ap);
                va_end(ap);
            }
        }
    }
    return code;
}

static uint32_t intern(builder *b, const char *s)
{
    uint32_t id = strtab_add(&b->strs, s);
    if (id == FL_SC_NONE) {
        if (b->strs.len + strlen(s) + 1 > CAP_STRINGS)
            berr(b, FL_SYM_ETOOBIG, "string table full");
        else
            berr(b, FL_SYM_ENOMEM, "string table");
    }
    return id;
}

/* Append n bytes of s to the bounded buffer o (cap bytes); 0 or -1. */
static int out_put(char *o, size_t cap, size_t *len, const char *s, size_t n)
{
    if (*len + n >= cap)
        return -1;
    memcpy(o + *len, s, n);
    *len += n;
    o[*len] = '\0';
    return 0;
}

/* Rewrites what GNU's demangler prints where LLVM's prints it differently:
 *   "operator< <T>"        -> "operator<<T>"   (GNU adds a space)
 *   " [clone .isra.0]"     -> " (.isra.0)"
 *   "{lambda(int)#1}"      -> "'lambda'(int)"  (#2 -> 'lambda0', ...)
 *   "{unnamed type#1}"     -> "'unnamed'"      (#2 -> 'unnamed0', ...)
 * Returns 0, or -1 when the result would not fit (then o is unusable). */
static int llvm_style(const char *g, char *o, size_t cap)
{
    size_t len = 0;
    o[0] = '\0';
    for (const char *p = g; *p;) {
        if (!strncmp(p, "operator< <", 11)) {
            if (out_put(o, cap, &len, "operator<<", 10))
                return -1;
            p += 11;
        } else if (!strncmp(p, "operator<< <", 12)) {
            if (out_put(o, cap, &len, "operator<<<", 11))
                return -1;
            p += 12;
        } else if (!strncmp(p, " [clone ", 8) && strchr(p + 8, ']')) {
            const char *e = strchr(p + 8, ']');
            if (out_put(o, cap, &len, " (", 2) ||
                out_put(o, cap, &len, p + 8, (size_t)(e - (p + 8))) || out_put(o, cap, &len, ")", 1))
                return -1;
            p = e + 1;
        } else if (!strncmp(p, "{lambda(", 8) || !strncmp(p, "{unnamed type#", 14)) {
            int lambda = p[1] == 'l';
            const char *q = p + (lambda ? 7 : 13), *params = q;
            if (lambda) { /* q at '(': find the matching ')' */
                int depth = 0;
                for (; *q; q++) {
                    if (*q == '(')
                        depth++;
                    else if (*q == ')' && --depth == 0)
                        break;
                }
                if (!*q)
                    goto plain;
                q++;
            }
            if (*q != '#' || q[1] < '0' || q[1] > '9')
                goto plain;
            char *end;
            unsigned long k = strtoul(q + 1, &end, 10);
            if (*end != '}' || k == 0)
                goto plain;
            char num[32] = "";
            if (k >= 2)
                snprintf(num, sizeof num, "%lu", k - 2);
            if (out_put(o, cap, &len, lambda ? "'lambda" : "'unnamed", lambda ? 7 : 8) ||
                out_put(o, cap, &len, num, strlen(num)) || out_put(o, cap, &len, "'", 1))
                return -1;
            if (lambda && out_put(o, cap, &len, params, (size_t)(q - params)))
                return -1;
            p = end + 1;
        } else {
        plain:
            if (out_put(o, cap, &len, p, 1))
                return -1;
            p++;
        }
    }
    return 0;
}

/* Does the mangled name hold an inheriting constructor ("CI1 <type>",
 * "CI2 <type>", or GCC's unified "CI4 <type>" found in DWARF
 * declarations)?  A digit before the "C" means it is the start of a
 * length-prefixed identifier instead. */
static int is_inheriting_ctor(const char *m)
{
    for (const char *p = strstr(m, "CI"); p; p = strstr(p + 1, "CI"))
        if (p[2] >= '1' && p[2] <= '5' && p > m && !(p[-1] >= '0' && p[-1] <= '9'))
            return 1;
    return 0;
}

/* GNU names an inheriting constructor after the base class
 * ("D<T>::Base(args)"), LLVM after the class it constructs
 * ("D<T>::D(args)").  Rewrites d in place (the result is never longer
 * than cap); leaves it alone when the shape is not the expected one. */
static void llvm_inheriting_ctor(char *d, size_t cap)
{
    int depth = 0;
    const char *open = NULL, *last_sep = NULL, *prev_sep = NULL;
    for (const char *p = d; *p; p++) {
        if (*p == '<')
            depth++;
        else if (*p == '>')
            depth--;
        else if (depth == 0 && p[0] == ':' && p[1] == ':') {
            prev_sep = last_sep;
            last_sep = p;
            p++;
        } else if (depth == 0 && *p == '(') {
            open = p;
            break;
        }
    }
    if (!open || !last_sep)
        return;
    const char *name = last_sep + 2;
    if (memchr(name, '<', (size_t)(open - name)))
        return;
    const char *cls = prev_sep ? prev_sep + 2 : d;
    size_t clen = (size_t)(last_sep - cls);
    const char *lt = memchr(cls, '<', clen);
    if (lt)
        clen = (size_t)(lt - cls);
    if (clen == 0 || clen > 512)
        return;
    char tmp[512];
    memcpy(tmp, cls, clen);
    size_t nlen = (size_t)(open - name), tail = strlen(open);
    if ((size_t)(name - d) + clen + tail + 1 > cap)
        return;
    memmove((char *)name + clen, open, tail + 1);
    memcpy((char *)name, tmp, clen);
    (void)nlen;
}

char *fl_sym_demangle(const char *raw)
{
    return fl_demangle(raw);
}

/* Names are demangled the way llvm-symbolizer does: Itanium "_Z" names;
 * anything the demangler rejects stays as it is. */
static uint32_t intern_name(builder *b, const char *raw)
{
    /* LLVM 14's demangler gives up on "sr St ..." (an unresolved name
     * qualified by std::) and llvm-symbolizer then prints the raw name. */
    if (raw[0] == '_' && raw[1] == 'Z' && !strstr(raw, "srSt")) {
        char *d = fl_demangle(raw);
        if (d) {
            size_t cap = strlen(d) + 64;
            char *l = sc_malloc(cap);
            uint32_t id;
            if (l && llvm_style(d, l, cap) == 0) {
                if (is_inheriting_ctor(raw))
                    llvm_inheriting_ctor(l, cap);
                id = intern(b, l);
            } else {
                id = intern(b, d);
            }
            free(l);
            free(d);
            return id;
        }
    }
    return intern(b, raw);
}

/* ---- paths, joined like LLVM 14's sys::path::append (posix) ---------- */

static int is_sep(char c)
{
    return c == '/';
}

static int path_is_abs(const char *p)
{
    if (p[0] == '/')
        return 1;
    /* llvm also treats Windows paths ("C:\x", "C:/x", "\\x") as absolute. */
    if (((p[0] >= 'a' && p[0] <= 'z') || (p[0] >= 'A' && p[0] <= 'Z')) && p[1] == ':' &&
        (p[2] == '\\' || p[2] == '/'))
        return 1;
    if (p[0] == '\\')
        return 1;
    return 0;
}

/* "//net" is a root name in llvm's posix style: no separator before it. */
static int has_root_name(const char *c)
{
    return is_sep(c[0]) && is_sep(c[1]) && c[2] && !is_sep(c[2]);
}

static int path_append(char *path, size_t cap, const char *comp)
{
    size_t len = strlen(path);
    size_t clen = strlen(comp);
    if (len > 0 && is_sep(path[len - 1])) {
        while (*comp && is_sep(*comp))
            comp++, clen--;
    } else if (!(clen > 0 && is_sep(comp[0])) && !(len == 0 || has_root_name(comp))) {
        if (len + 1 >= cap)
            return -1;
        path[len++] = '/';
        path[len] = '\0';
    }
    if (len + clen >= cap)
        return -1;
    memcpy(path + len, comp, clen + 1);
    return 0;
}

/* The path llvm prints for file index idx of the current unit's line
 * table (FileLineInfoKind::AbsoluteFilePath), or FL_SC_NONE where llvm
 * has none.  libdw only hands out the joined "dir/name"; the directory is
 * recovered by matching the unit's directory list as a prefix (if several
 * match, any relative candidate gives the same llvm path, and so does any
 * absolute one). */
static uint32_t file_id(builder *b, ftab *t, uint64_t idx)
{
    if (!t->files || idx >= t->nfiles)
        return FL_SC_NONE;
    /* DWARF < 5: entry 0 is libdw's placeholder; llvm counts from 1. */
    if (b->version < 5 && idx == 0)
        return FL_SC_NONE;
    if (t->ids[idx] != FILE_UNSET)
        return t->ids[idx];
    uint32_t id = FL_SC_NONE;
    const char *full = dwarf_filesrc(t->files, idx, NULL, NULL);
    if (full) {
        size_t best = 0;
        long bestk = -1;
        for (size_t k = 0; k < t->ndirs; k++) {
            const char *d = t->dirs[k];
            if (!d || !*d)
                continue;
            size_t dl = strlen(d);
            if (dl > best && strncmp(full, d, dl) == 0 && full[dl] == '/') {
                best = dl;
                bestk = (long)k;
            }
        }
        const char *name = bestk >= 0 ? full + best + 1 : full;
        const char *incdir = "";
        if (bestk > 0 || (bestk == 0 && b->version >= 5))
            incdir = t->dirs[bestk];
        char path[PATH_MAX * 2];
        path[0] = '\0';
        int ok = 0;
        if (path_is_abs(name)) {
            ok = path_append(path, sizeof path, name) == 0;
        } else {
            ok = 1;
            if (b->comp_dir && *b->comp_dir && !path_is_abs(incdir))
                ok = path_append(path, sizeof path, b->comp_dir) == 0;
            if (ok && *incdir)
                ok = path_append(path, sizeof path, incdir) == 0;
            if (ok)
                ok = path_append(path, sizeof path, name) == 0;
        }
        if (ok)
            id = intern(b, path);
    }
    t->ids[idx] = id;
    return id;
}

static void ftab_reset(ftab *t)
{
    free(t->ids);
    memset(t, 0, sizeof *t);
}

/* Reads the file table of unit die into t (empty when it has none). */
static int ftab_load(builder *b, ftab *t, Dwarf_Die *die)
{
    ftab_reset(t);
    if (dwarf_getsrcfiles(die, &t->files, &t->nfiles) != 0 || t->nfiles >= CAP_ENTRIES) {
        t->files = NULL;
        t->nfiles = 0;
        return 0;
    }
    if (dwarf_getsrcdirs(t->files, &t->dirs, &t->ndirs) != 0) {
        t->dirs = NULL;
        t->ndirs = 0;
    }
    if (!(t->ids = sc_malloc((t->nfiles ? t->nfiles : 1) * sizeof *t->ids)))
        return berr(b, FL_SYM_ENOMEM, "file table");
    for (size_t i = 0; i < t->nfiles; i++)
        t->ids[i] = FILE_UNSET;
    return 0;
}

/* ---- ELF symbol table ------------------------------------------------ */

/* The table llvm-symbolizer uses: .symtab when present, else .dynsym. */
static Elf_Scn *find_symtab(Elf *elf, GElf_Shdr *out)
{
    Elf_Scn *scn = NULL, *dyn = NULL;
    GElf_Shdr sh, dynsh;
    while ((scn = elf_nextscn(elf, scn)) != NULL) {
        if (!gelf_getshdr(scn, &sh))
            continue;
        if (sh.sh_type == SHT_SYMTAB) {
            *out = sh;
            return scn;
        }
        if (sh.sh_type == SHT_DYNSYM && !dyn) {
            dyn = scn;
            dynsh = sh;
        }
    }
    if (dyn)
        *out = dynsh;
    return dyn;
}

static uint64_t symtab_fingerprint(Elf *elf)
{
    GElf_Shdr sh;
    Elf_Scn *scn = find_symtab(elf, &sh);
    if (!scn)
        return 0;
    uint64_t fp = 0x5359u;
    Elf_Data *d = elf_rawdata(scn, NULL);
    if (d && d->d_buf)
        fp ^= fl_sc_hash64(d->d_buf, d->d_size);
    Elf_Scn *str = elf_getscn(elf, sh.sh_link);
    Elf_Data *sd = str ? elf_rawdata(str, NULL) : NULL;
    if (sd && sd->d_buf)
        fp = fp * 0x9E3779B185EBCA87ull ^ fl_sc_hash64(sd->d_buf, sd->d_size);
    return fp ? fp : 1;
}

static int sym_cmp(const void *a, const void *b)
{
    const sym_in *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    if (x->size != y->size)
        return x->size < y->size ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* A symbol's name as a call names its function, hashed: without the
 * version a .symtab gives a symbol defined with .symver
 * ("memcpy@@GLIBC_2.14"). */
static uint64_t sym_name_hash(const char *name)
{
    const char *at = strchr(name, '@');
    return fl_sc_hash64(name, at ? (size_t)(at - name) : strlen(name));
}

static int u64_cmp(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

static int u32_cmp(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return a < b ? -1 : a > b;
}

/* Whether the module's symbol table defines a symbol named name (by
 * hash: a collision only costs a call kept as this module's). */
static int defined_here(const builder *b, const char *name)
{
    uint64_t h = sym_name_hash(name);
    const uint64_t *v = b->defnames.data;
    size_t lo = 0, hi = b->defnames.len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < b->defnames.len && v[lo] == h;
}

/* Keeps what llvm's SymbolizableObjectFile keeps: defined FUNC, OBJECT,
 * IFUNC and NOTYPE symbols; per address the largest size, and among equal
 * sizes the last one in table order.  The names of all of them, aliases
 * too, go to b->defnames (defined_here). */
static int load_symbols(builder *b, Elf *elf)
{
    GElf_Shdr sh;
    Elf_Scn *scn = find_symtab(elf, &sh);
    if (!scn || sh.sh_entsize == 0)
        return 0;
    Elf_Data *d = elf_getdata(scn, NULL);
    if (!d)
        return 0;
    size_t n = sh.sh_size / sh.sh_entsize;
    /* llvm names the file of a local symbol after the STT_FILE symbol
     * before it in the table (shown when DWARF gives no file). */
    int have_file = 0;
    uint32_t file_name = 0;
    for (size_t i = 1; i < n; i++) {
        GElf_Sym s;
        if (!gelf_getsym(d, (int)i, &s))
            break;
        int type = GELF_ST_TYPE(s.st_info);
        if (type == STT_FILE && (s.st_shndx == SHN_UNDEF || s.st_shndx >= SHN_LORESERVE)) {
            have_file = 1;
            file_name = (uint32_t)s.st_name;
            continue;
        }
        if (type != STT_NOTYPE && type != STT_FUNC && type != STT_OBJECT && type != STT_GNU_IFUNC)
            continue;
        if (s.st_shndx == SHN_UNDEF || s.st_shndx >= SHN_LORESERVE)
            continue;
        const char *name = elf_strptr(elf, sh.sh_link, s.st_name);
        if (!name)
            continue;
        uint64_t *h = vec_push(&b->defnames);
        if (!h)
            return berr(b, FL_SYM_ENOMEM, "symbols");
        *h = sym_name_hash(name);
        /* Mapping symbols of ARM, AArch64 and RISC-V ($x, $d, $a, $t,
         * "$x.42"): they mark code and data, they name no function, and
         * llvm-symbolizer passes over them. */
        if (type == STT_NOTYPE && name[0] == '$' && name[1] && strchr("adtx", name[1]) &&
            (name[2] == '\0' || name[2] == '.'))
            continue;
        sym_in *e = vec_push(&b->syms);
        if (!e)
            return berr(b, FL_SYM_ENOMEM, "symbols");
        e->addr = s.st_value;
        e->size = s.st_size;
        e->order = (uint32_t)i;
        /* Names are interned later, only for the symbols kept. */
        e->name = (uint32_t)s.st_name;
        e->has_file = have_file && GELF_ST_BIND(s.st_info) == STB_LOCAL;
        e->file = file_name;
        /* A local or hidden symbol is no other module's to call, and an
         * ifunc's symbol is its resolver, which a call never runs: the
         * server matches another module's call by name against these
         * only (fl_symcache_symbol_named). */
        int bind = GELF_ST_BIND(s.st_info), vis = GELF_ST_VISIBILITY(s.st_other);
        e->exported = type == STT_FUNC && (bind == STB_GLOBAL || bind == STB_WEAK) &&
                      (vis == STV_DEFAULT || vis == STV_PROTECTED);
    }
    if (b->defnames.len)
        qsort(b->defnames.data, b->defnames.len, sizeof(uint64_t), u64_cmp);
    sym_in *v = b->syms.data;
    if (b->syms.len == 0)
        return 0;
    qsort(v, b->syms.len, sizeof *v, sym_cmp);
    size_t o = 0;
    for (size_t i = 0; i < b->syms.len; i++) {
        if (i + 1 < b->syms.len && v[i + 1].addr == v[i].addr)
            continue;
        v[o++] = v[i];
    }
    b->syms.len = o;
    for (size_t i = 0; i < o; i++) {
        const char *name = elf_strptr(elf, sh.sh_link, v[i].name);
        v[i].name = intern_name(b, name ? name : "");
        const char *file = v[i].has_file ? elf_strptr(elf, sh.sh_link, v[i].file) : NULL;
        v[i].file = file && *file ? intern(b, file) : FL_SC_NONE;
        if (b->rc)
            return b->rc;
    }
    return 0;
}

/* ---- per-unit: line table ------------------------------------------- */

static int push_line(builder *b, uint64_t addr, uint32_t file, uint32_t line, uint32_t col)
{
    vec *v = &b->lines;
    if (v->len > 0) {
        line_bp *last = &VEC_AT(*v, line_bp, v->len - 1);
        if (last->addr == addr) { /* the later row at an address wins */
            last->file = file;
            last->line = line;
            last->column = col;
            return 0;
        }
    }
    line_bp *e = vec_push(v);
    if (!e)
        return berr(b, FL_SYM_ENOMEM, "line table");
    e->addr = addr;
    e->file = file;
    e->line = line;
    e->column = col;
    return 0;
}

static int cu_lines(builder *b, Dwarf_Die *cudie)
{
    Dwarf_Lines *lines;
    size_t n;
    if (dwarf_getsrclines(cudie, &lines, &n) != 0)
        return 0; /* no line table: llvm has none either */
    b->rows_held += n;
    for (size_t i = 0; i < n; i++) {
        Dwarf_Line *l = dwarf_onesrcline(lines, i);
        Dwarf_Addr addr;
        bool end = false;
        if (!l || dwarf_lineaddr(l, &addr) != 0)
            continue;
        dwarf_lineendsequence(l, &end);
        if (end) {
            if (push_line(b, addr, FL_SC_NONE, 0, 0))
                return b->rc;
            continue;
        }
        int line = 0, col = 0;
        dwarf_lineno(l, &line);
        dwarf_linecol(l, &col);
        Dwarf_Files *files;
        size_t idx;
        uint32_t fid = FL_SC_NONE;
        if (dwarf_line_file(l, &files, &idx) == 0)
            fid = files == b->dies_ft.files    ? file_id(b, &b->dies_ft, idx)
                  : files == b->lines_ft.files ? file_id(b, &b->lines_ft, idx)
                                               : FL_SC_NONE;
        if (b->rc)
            return b->rc;
        if (fid == FL_SC_NONE)
            line = col = 0;
        if (push_line(b, addr, fid, (uint32_t)line, (uint32_t)col))
            return b->rc;
    }
    return 0;
}

/* ---- per-unit: llvm's address -> DIE map ---------------------------- */

/* The last entry with lo <= addr: chunk *ci, index *pi.  0: none. */
static int map_find(const builder *b, uint64_t addr, size_t *ci, size_t *pi)
{
    size_t lo = 0, hi = b->nmch;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (b->mch[mid]->e[0].lo <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return 0;
    const map_chunk *c = b->mch[lo - 1];
    size_t l = 1, h = c->n; /* e[0].lo <= addr */
    while (l < h) {
        size_t mid = l + (h - l) / 2;
        if (c->e[mid].lo <= addr)
            l = mid + 1;
        else
            h = mid;
    }
    *ci = lo - 1;
    *pi = l - 1;
    return 1;
}

/* A chunk (empty) put at position k of the map; NULL: out of memory. */
static map_chunk *map_new_chunk(builder *b, size_t k)
{
    map_chunk *c;
    if (b->nmch < b->pmch) {
        c = b->mch[b->nmch];
    } else {
        if (b->pmch == b->capmch) {
            size_t nc = b->capmch ? b->capmch * 2 : 16;
            map_chunk **nm = sc_realloc(b->mch, nc * sizeof *nm);
            if (!nm)
                return NULL;
            b->mch = nm;
            b->capmch = nc;
        }
        if (!(c = sc_malloc(sizeof *c)))
            return NULL;
        b->mch[b->pmch++] = c;
    }
    memmove(&b->mch[k + 1], &b->mch[k], (b->nmch - k) * sizeof *b->mch);
    b->mch[k] = c;
    b->nmch++;
    c->n = 0;
    return c;
}

/* map[key] = (hi, record): replace or insert keeping order. */
static int map_set(builder *b, uint64_t key, uint64_t hi, uint32_t record)
{
    size_t ci = 0, pi = 0, pos = 0;
    if (map_find(b, key, &ci, &pi)) {
        map_ent *e = &b->mch[ci]->e[pi];
        if (e->lo == key) {
            e->hi = hi;
            e->record = record;
            return 0;
        }
        pos = pi + 1;
    } else if (b->nmch == 0 && !map_new_chunk(b, 0)) {
        return berr(b, FL_SYM_ENOMEM, "address map");
    }
    map_chunk *c = b->mch[ci];
    if (c->n == MAP_CHUNK) { /* split, the upper half to a new chunk */
        map_chunk *d = map_new_chunk(b, ci + 1);
        if (!d)
            return berr(b, FL_SYM_ENOMEM, "address map");
        size_t half = MAP_CHUNK / 2;
        memcpy(d->e, &c->e[half], (MAP_CHUNK - half) * sizeof *d->e);
        d->n = MAP_CHUNK - half;
        c->n = half;
        if (pos > half) {
            c = d;
            pos -= half;
        }
    }
    memmove(&c->e[pos + 1], &c->e[pos], (c->n - pos) * sizeof *c->e);
    c->e[pos].lo = key;
    c->e[pos].hi = hi;
    c->e[pos].record = record;
    c->n++;
    return 0;
}

/* DWARFUnit::updateAddressDieMap for one range. */
static int die_map_add(builder *b, uint64_t lo, uint64_t hi, uint32_t record)
{
    if (lo == hi)
        return 0;
    size_t ci, pi;
    if (map_find(b, lo, &ci, &pi)) {
        map_ent B = b->mch[ci]->e[pi];
        if (lo < B.hi) {
            if (hi < B.hi && map_set(b, hi, B.hi, B.record))
                return b->rc;
            /* B is still the last entry at or below lo (hi > lo), though
             * a split may have moved it */
            if (lo > B.lo && map_find(b, lo, &ci, &pi))
                b->mch[ci]->e[pi].hi = lo;
        }
    }
    return map_set(b, lo, hi, record);
}

/* Address ranges of a DIE the way DWARFDie::getAddressRanges sees them:
 * low_pc/high_pc if both are there, else DW_AT_ranges. */
typedef int (*range_fn)(builder *b, uint64_t lo, uint64_t hi, void *arg);

static int die_ranges(builder *b, Dwarf_Die *die, range_fn fn, void *arg)
{
    Dwarf_Addr lo, hi;
    Dwarf_Attribute a;
    if (dwarf_attr(die, DW_AT_low_pc, &a) && dwarf_attr(die, DW_AT_high_pc, &a)) {
        if (dwarf_lowpc(die, &lo) == 0 && dwarf_highpc(die, &hi) == 0)
            return fn(b, lo, hi, arg);
        return 0;
    }
    if (!dwarf_attr(die, DW_AT_ranges, &a))
        return 0;
    Dwarf_Addr base;
    ptrdiff_t off = 0;
    unsigned guard = 0;
    while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
        if (++guard > (1u << 20))
            break;
        int rc = fn(b, lo, hi, arg);
        if (rc)
            return rc;
    }
    return 0;
}

static const char *die_string(Dwarf_Die *die, int attr)
{
    Dwarf_Attribute a;
    if (!dwarf_attr_integrate(die, attr, &a))
        return NULL;
    return dwarf_formstring(&a);
}

static uint32_t die_udata(Dwarf_Die *die, int attr)
{
    Dwarf_Attribute a;
    Dwarf_Word w;
    if (!dwarf_attr(die, attr, &a) || dwarf_formudata(&a, &w) != 0)
        return 0;
    return (uint32_t)w;
}

/* Records are only ever read in order (serialize), so they are kept
 * varint-coded: name + 1, distance to the parent (0: none), call file + 1
 * as a delta from the record before's, call line, call column -- ~8
 * bytes where fl_sc_record takes 20. */
static int rec_put(builder *b, const fl_sc_record *r)
{
    bytes *o = &b->recs;
    uint32_t file1 = r->call_file + 1u;
    if (put_varint(o, (uint32_t)(r->name + 1u)) ||
        put_varint(o, r->parent == FL_SC_NONE ? 0 : b->nrecs - r->parent) ||
        put_varint(o, zigzag((int64_t)file1 - (int64_t)b->recs_file1)) ||
        put_varint(o, r->call_line) || put_varint(o, r->call_column))
        return -1;
    b->recs_file1 = file1;
    return 0;
}

typedef struct rec_cursor {
    const uint8_t *p;
    size_t i;
    uint32_t file1;
} rec_cursor;

/* The next record; its parent as an index (FL_SC_NONE: none). */
static void rec_get(rec_cursor *c, fl_sc_record *r)
{
    r->name = (uint32_t)get_varint(&c->p) - 1u;
    uint64_t d = get_varint(&c->p);
    r->parent = d ? (uint32_t)(c->i - d) : FL_SC_NONE;
    c->file1 = (uint32_t)((int64_t)c->file1 + unzigzag(get_varint(&c->p)));
    r->call_file = c->file1 - 1u;
    r->call_line = (uint32_t)get_varint(&c->p);
    r->call_column = (uint32_t)get_varint(&c->p);
    c->i++;
}

/* The record of stack entry i, created (with its ancestors) on first use
 * so only functions that own an address are stored.  A parent is always
 * created before its child: parent index < child index. */
static uint32_t stack_record(builder *b, size_t i)
{
    struct stack_ent *s = &b->stack[i];
    if (s->record != FL_SC_NONE)
        return s->record;
    uint32_t parent = FL_SC_NONE;
    if (s->tag == DW_TAG_inlined_subroutine) {
        for (size_t j = i; j-- > 0;) {
            int t = b->stack[j].tag;
            if (t == DW_TAG_subprogram || t == DW_TAG_inlined_subroutine) {
                parent = stack_record(b, j);
                if (parent == FL_SC_NONE)
                    return FL_SC_NONE;
                break;
            }
        }
    }
    if (b->nrecs >= FL_SC_NONE - 1) {
        berr(b, FL_SYM_ETOOBIG, "too many functions");
        return FL_SC_NONE;
    }
    const char *name = die_string(&s->die, DW_AT_linkage_name);
    if (!name)
        name = die_string(&s->die, DW_AT_MIPS_linkage_name);
    if (!name)
        name = die_string(&s->die, DW_AT_name);
    uint32_t name_id = name ? intern_name(b, name) : FL_SC_NONE;
    s->name = name_id;
    uint32_t call_file = FL_SC_NONE, call_line = 0, call_col = 0;
    if (parent != FL_SC_NONE) {
        call_file = file_id(b, &b->dies_ft, die_udata(&s->die, DW_AT_call_file));
        call_line = die_udata(&s->die, DW_AT_call_line);
        call_col = die_udata(&s->die, DW_AT_call_column);
    }
    if (b->rc)
        return FL_SC_NONE;
    fl_sc_record r = {name_id, parent, call_file, call_line, call_col};
    if (b->nrecs >= CAP_ENTRIES || rec_put(b, &r)) {
        berr(b, FL_SYM_ENOMEM, "records");
        return FL_SC_NONE;
    }
    s->record = (uint32_t)b->nrecs++;
    return s->record;
}

static int add_die_range(builder *b, uint64_t lo, uint64_t hi, void *arg)
{
    (void)arg;
    uint32_t rec = stack_record(b, b->depth - 1);
    if (rec == FL_SC_NONE)
        return b->rc ? b->rc : berr(b, FL_SYM_EDWARF, "function record");
    return die_map_add(b, lo, hi, rec);
}

/* ---- call sites ------------------------------------------------------
 *
 * A tail call (`return free(p);` compiled to a jump) leaves its caller off
 * the stack, and the DWARF says where: at each call the compiler knows, a
 * DW_TAG_call_site (DWARF 5) or DW_TAG_GNU_call_site (before) names the
 * callee (DW_AT_call_origin, DW_AT_abstract_origin) and marks tail calls
 * (DW_AT_call_tail_call, DW_AT_GNU_tail_call).  The address differs by
 * producer: gcc gives the return address (DW_AT_call_return_pc; DW_AT_low_pc
 * for the GNU tag), which for a tail call is the address after the jump;
 * clang gives a tail call's own address (DW_AT_call_pc).  Kept are the
 * return address of a direct call (what an unwinder finds on the stack),
 * and an address inside the jump of a tail call with the entry of the
 * function making it (what a server asks for: "whose frame could be
 * missing above this function?").
 *
 * The callee's DIE is whatever the producer pointed at: the definition, a
 * declaration (its definition then has DW_AT_specification pointing back,
 * perhaps in another unit), or the abstract DIE of an inlined function
 * (its out-of-line copy then has DW_AT_abstract_origin pointing at it).
 * So the walk collects, for each function with code, the DIEs that stand
 * for it (def_ent), and the targets are resolved once every unit is read
 * (calls_resolve).  A C function defined in another unit is called
 * through a declaration nothing links to: an external declaration is
 * matched by name with the module's external definitions.  DIEs are
 * named by die_key(): offsets are per file, and a DIE may be in the dwz
 * file or a split unit's .dwo.
 *
 * A tail call the DWARF does not name must not be missed: a server that
 * saw only a function's named tail calls would take the one that reaches
 * the crashed function for the way the crash went, and insert frames of
 * a way it did not go.  So a tail call site without a known callee (an
 * indirect one: DW_AT_call_target, DW_AT_GNU_call_site_target, or no
 * origin at all, as gcc writes for `return fp(p);`) is kept with target
 * and name unknown.  And gcc writes no call site at all for some jumps
 * (`jmp *fp` in a function with other calls); it then leaves
 * DW_AT_call_all_calls (DW_AT_GNU_all_call_sites) off the function.  A
 * function with a tail call that carries none of DW_AT_call_all_calls,
 * DW_AT_call_all_tail_calls, DW_AT_call_all_source_calls (which implies
 * both), DW_AT_GNU_all_call_sites and DW_AT_GNU_all_tail_call_sites gets
 * a marker: one unknown tail call more, at its entry address
 * (markers_place).  gcc and clang put these attributes on the concrete
 * DIE, the one with the code, also when it has an abstract origin or a
 * specification; only that DIE is asked (an abstract DIE stands for
 * clones that may differ, and an attribute missing where it would be
 * costs a marker, never a wrong frame). */

/* The section offset of die, tagged with the file it is in: 0 the DWARF
 * file, 1 its dwz file, 2 + unit index a split unit's .dwo.  UINT64_MAX
 * when it cannot be named. */
static uint64_t die_key(const builder *b, Dwarf_Die *die)
{
    Dwarf_Off off = dwarf_dieoffset(die);
    if (off == (Dwarf_Off)-1 || off >= ((uint64_t)1 << 40))
        return UINT64_MAX;
    Dwarf *d = die->cu ? dwarf_cu_getdwarf(die->cu) : NULL;
    uint64_t file = d == b->dbg ? 0 : (b->split_dbg && d == b->split_dbg) ? 2 + b->cu_index : 1;
    if (file >= ((uint64_t)1 << 24))
        return UINT64_MAX;
    return file << 40 | off;
}

/* A function's entry address: DW_AT_low_pc, else DW_AT_entry_pc, else the
 * start of the first of its DW_AT_ranges; FL_SYMCALL_NONE when it has no
 * code (0 too: a function the linker dropped keeps a low_pc of 0). */
static uint64_t die_entry(Dwarf_Die *die)
{
    Dwarf_Attribute a;
    Dwarf_Addr pc = 0, base, hi;
    if (dwarf_attr(die, DW_AT_low_pc, &a)) {
        if (dwarf_lowpc(die, &pc) != 0)
            return FL_SYMCALL_NONE;
    } else if (dwarf_attr(die, DW_AT_entry_pc, &a)) {
        if (dwarf_entrypc(die, &pc) != 0)
            return FL_SYMCALL_NONE;
    } else if (!dwarf_attr(die, DW_AT_ranges, &a) || dwarf_ranges(die, 0, &base, &pc, &hi) <= 0) {
        return FL_SYMCALL_NONE;
    }
    return pc ? pc : FL_SYMCALL_NONE;
}

/* The DIE die refers to through attr (a reference form), into *out. */
static int die_ref(Dwarf_Die *die, int attr, Dwarf_Die *out)
{
    Dwarf_Attribute a;
    return dwarf_attr(die, attr, &a) && dwarf_formref_die(&a, out) ? 0 : -1;
}

static int flag_set(Dwarf_Die *die, int attr)
{
    Dwarf_Attribute a;
    bool v = false;
    return dwarf_attr(die, attr, &a) && dwarf_formflag(&a, &v) == 0 && v;
}

static int die_addr(Dwarf_Die *die, int attr, uint64_t *out)
{
    Dwarf_Attribute a;
    Dwarf_Addr v;
    if (!dwarf_attr(die, attr, &a) || dwarf_formaddr(&a, &v) != 0)
        return -1;
    *out = v;
    return 0;
}

/* The name a function's DIE gives it as the linker sees it (linkage
 * name, else name), following abstract_origin and specification. */
static const char *raw_name(Dwarf_Die *die)
{
    const char *name = die_string(die, DW_AT_linkage_name);
    if (!name)
        name = die_string(die, DW_AT_MIPS_linkage_name);
    if (!name)
        name = die_string(die, DW_AT_name);
    return name;
}

/* Is the function of die external (following its links)? */
static int is_external(Dwarf_Die *die)
{
    Dwarf_Attribute a;
    bool ext = false;
    return dwarf_attr_integrate(die, DW_AT_external, &a) && dwarf_formflag(&a, &ext) == 0 && ext;
}

static int push_def(builder *b, uint64_t key, uint64_t entry, uint32_t direct)
{
    if (key == UINT64_MAX)
        return 0;
    if (b->defs.len >= CAP_DEFS) {
        b->calls_capped = 1;
        return 0;
    }
    def_ent *d = vec_push(&b->defs);
    if (!d)
        return berr(b, FL_SYM_ENOMEM, "call targets");
    d->key = key;
    d->entry = entry;
    d->name = FL_SC_NONE;
    d->direct = direct;
    return 0;
}

/* Stack entry i is a subprogram: notes its entry address, and which DIEs
 * stand for it (itself, and along its abstract_origin / specification
 * links: its abstract DIE, its declaration). */
static int note_function(builder *b, size_t i)
{
    struct stack_ent *s = &b->stack[i];
    s->entry = die_entry(&s->die);
    if (s->entry == FL_SYMCALL_NONE)
        return 0;
    s->all_tails = flag_set(&s->die, DW_AT_call_all_calls) ||
                   flag_set(&s->die, DW_AT_call_all_tail_calls) ||
                   flag_set(&s->die, DW_AT_call_all_source_calls) ||
                   flag_set(&s->die, DW_AT_GNU_all_call_sites) ||
                   flag_set(&s->die, DW_AT_GNU_all_tail_call_sites);
    size_t n = b->defs.len;
    if (push_def(b, die_key(b, &s->die), s->entry, 1))
        return b->rc;
    if (b->defs.len > n && is_external(&s->die))
        s->def = n; /* named once its record is made (walk_die) */
    Dwarf_Die cur = s->die, next;
    for (unsigned hop = 0; hop < CAP_LINK_HOPS; hop++) {
        if (die_ref(&cur, DW_AT_abstract_origin, &next) != 0 &&
            die_ref(&cur, DW_AT_specification, &next) != 0)
            break;
        if (push_def(b, die_key(b, &next), s->entry, 0))
            return b->rc;
        cur = next;
    }
    return 0;
}

static call_ent *push_call(builder *b)
{
    if (b->calls.len >= CAP_CALLS) {
        b->calls_capped = 1;
        return NULL;
    }
    call_ent *c = vec_push(&b->calls);
    if (!c)
        berr(b, FL_SYM_ENOMEM, "call sites");
    return c;
}

/* Stack entry i is a call site: a direct call is kept when its callee is
 * known, a tail call always (an unknown callee: key UINT64_MAX, name
 * FL_SC_NONE), and with the first tail call of a function that does not
 * say all its tail calls are described, that function's marker. */
static int note_call(builder *b, size_t i)
{
    struct stack_ent *s = &b->stack[i];
    b->calls_seen = 1;
    Dwarf_Die callee;
    int known = (die_ref(&s->die, DW_AT_call_origin, &callee) == 0 ||
                 die_ref(&s->die, DW_AT_abstract_origin, &callee) == 0) &&
                dwarf_tag(&callee) == DW_TAG_subprogram;
    int tail = flag_set(&s->die, DW_AT_call_tail_call) || flag_set(&s->die, DW_AT_GNU_tail_call);
    if (!known && !tail)
        return 0; /* an indirect call: no callee to name */
    uint64_t ret = 0, pc = 0, site, owner = 0;
    int has_ret = die_addr(&s->die, DW_AT_call_return_pc, &ret) == 0 ||
                  die_addr(&s->die, DW_AT_low_pc, &ret) == 0;
    int has_pc = die_addr(&s->die, DW_AT_call_pc, &pc) == 0;
    size_t own = SIZE_MAX;
    if (!tail) {
        if (!has_ret || ret == 0)
            return 0;
        site = ret;
    } else {
        if (has_pc && pc != 0)
            site = pc;
        else if (has_ret && ret > 1)
            site = ret - 1; /* the return address a call would have: after the jump */
        else
            return 0;
        /* The out-of-line function it is in (an inlined subroutine's tail
         * call is its caller's). */
        for (size_t j = i; j-- > 0;)
            if (b->stack[j].tag == DW_TAG_subprogram) {
                own = j;
                break;
            }
        if (own == SIZE_MAX || b->stack[own].entry == FL_SYMCALL_NONE)
            return 0;
        owner = b->stack[own].entry;
    }
    const char *name = known ? raw_name(&callee) : NULL;
    uint32_t name_id = name ? intern_name(b, name) : FL_SC_NONE;
    if (b->rc)
        return b->rc;
    call_ent *c = push_call(b);
    if (!c)
        return b->rc;
    c->site = site;
    c->owner = owner;
    c->key = known ? die_key(b, &callee) : UINT64_MAX;
    /* A declaration: its definition may be in another unit, which has no
     * link to it (C has no DW_AT_specification there), or in another
     * module when the symbol table defines no such name (an assembler
     * function of the module is in the table without DWARF). */
    c->by_name = 0;
    if (known && name_id != FL_SC_NONE && dwarf_hasattr(&callee, DW_AT_declaration) &&
        is_external(&callee))
        c->by_name = !b->defnames.len || defined_here(b, name) ? BY_NAME : BY_NAME_ELSEWHERE;
    c->name = name_id;
    c->tail = (uint16_t)tail;
    if (tail && !b->stack[own].all_tails && !b->stack[own].marked) {
        if (!(c = push_call(b)))
            return b->rc;
        *c = (call_ent){.site = owner,
                        .owner = owner,
                        .key = UINT64_MAX,
                        .name = FL_SC_NONE,
                        .tail = TAIL_MARKER};
        b->stack[own].marked = 1;
    }
    return 0;
}

static int def_cmp(const void *x, const void *y)
{
    const def_ent *a = x, *b = y;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    if (a->direct != b->direct)
        return a->direct > b->direct ? -1 : 1; /* the DIE itself first */
    return a->entry < b->entry ? -1 : a->entry > b->entry;
}

/* Order of the output: direct calls by site, then tail calls (markers
 * among them) by owner and site; among calls at one site, one picked the
 * same way every time: a known target first, then a known name, a
 * marker last. */
static int call_cmp(const void *x, const void *y)
{
    const call_ent *a = x, *b = y;
    if (!a->tail != !b->tail)
        return !a->tail ? -1 : 1;
    if (a->owner != b->owner)
        return a->owner < b->owner ? -1 : 1;
    if (a->site != b->site)
        return a->site < b->site ? -1 : 1;
    if (a->target != b->target)
        return a->target < b->target ? -1 : 1;
    if (a->name != b->name)
        return a->name < b->name ? -1 : 1;
    return a->tail < b->tail ? -1 : a->tail > b->tail;
}

static int call_unknown(const call_ent *c)
{
    return c->target == FL_SYMCALL_NONE && c->name == FL_SC_NONE;
}

/* The calls sorted and resolved: a marker sits at its function's entry,
 * where calls_pack keeps the first (owner, site) entry in call_cmp order.
 * When that is an unknown tail call, the marker adds nothing and is
 * dropped there.  When it is a tail call with a target or a name (a
 * function that starts with its jump: clang's site is the jump's own
 * address), the marker moves to the lowest address above the entry where
 * no tail call of the function sits (entry + 1 in practice: a jump is at
 * least 2 bytes); an unknown entry or another marker already there makes
 * it superfluous and it stays behind, to be dropped. */
static void markers_place(builder *b)
{
    call_ent *c = b->calls.data;
    size_t n = b->calls.len;
    for (size_t i = 0; i < n; i++) {
        if (c[i].tail != TAIL_MARKER || c[i].site != c[i].owner)
            continue;
        size_t g = i; /* the first entry at (owner, entry) */
        while (g > 0 && c[g - 1].tail && c[g - 1].owner == c[i].owner && c[g - 1].site == c[i].site)
            g--;
        if (g == i || call_unknown(&c[g]))
            continue;
        uint64_t at = c[i].owner + 1;
        size_t p = i + 1;
        int superfluous = 0;
        for (; p < n && c[p].tail && c[p].owner == c[i].owner; p++) {
            if (c[p].site <= c[i].owner)
                continue;
            if (c[p].site > at)
                break;
            if (c[p].site == at) {
                if (call_unknown(&c[p])) {
                    superfluous = 1;
                    break;
                }
                at++;
            }
        }
        if (superfluous)
            continue;
        /* Into its place in call_cmp order: before c[p]. */
        call_ent m = c[i];
        m.site = at;
        memmove(&c[i], &c[i + 1], (p - i - 1) * sizeof *c);
        c[p - 1] = m;
        i--; /* c[i] is the next entry now */
    }
}

typedef struct name_def {
    uint64_t entry;
    uint32_t name;
} name_def;

static int name_def_cmp(const void *x, const void *y)
{
    const name_def *a = x, *b = y;
    if (a->name != b->name)
        return a->name < b->name ? -1 : 1;
    return a->entry < b->entry ? -1 : a->entry > b->entry;
}

/* The entry of the only function keyed k in the sorted d[0..n) (the DIE's
 * own definition first, else the ones its links reach, when all of those
 * agree on one entry), FL_SYMCALL_NONE when it is ambiguous; 0 and
 * *found 0 when there is none. */
static uint64_t def_lookup(const def_ent *d, size_t n, uint64_t k, int *found)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (d[mid].key < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < n && d[lo].key == k;
    if (!*found)
        return 0;
    /* The end of the run of (k, d[lo].direct), by binary search too: a
     * DIE that stands for many functions costs no more than one. */
    size_t first = lo;
    for (hi = n; lo < hi;) {
        size_t mid = lo + (hi - lo) / 2;
        if (d[mid].key == k && d[mid].direct == d[first].direct)
            lo = mid + 1;
        else
            hi = mid;
    }
    return d[lo - 1].entry == d[first].entry ? d[first].entry : FL_SYMCALL_NONE;
}

/* Every unit read: each call's target is the entry of the function its
 * callee's DIE stands for (def_lookup); failing that, for an external
 * declaration, the only external function of that name defined in the
 * module.  An abstract DIE with two out-of-line copies, a constructor's
 * complete and base variants at different addresses, two definitions of
 * one name: no single target, none.  Then sorted for output. */
static int calls_resolve(builder *b)
{
    def_ent *d = b->defs.data;
    size_t nd = b->defs.len, nn = 0;
    if (nd)
        qsort(d, nd, sizeof *d, def_cmp);
    /* The external definitions by name. */
    for (size_t i = 0; i < nd; i++)
        nn += d[i].name != FL_SC_NONE;
    name_def *byname = nn ? sc_malloc(nn * sizeof *byname) : NULL;
    if (nn && !byname)
        return berr(b, FL_SYM_ENOMEM, "call targets");
    nn = 0;
    for (size_t i = 0; i < nd; i++)
        if (d[i].name != FL_SC_NONE)
            byname[nn++] = (name_def){d[i].entry, d[i].name};
    if (nn)
        qsort(byname, nn, sizeof *byname, name_def_cmp);
    call_ent *c = b->calls.data;
    for (size_t i = 0; i < b->calls.len; i++) {
        int found;
        uint64_t t = def_lookup(d, nd, c[i].key, &found);
        if (found) {
            c[i].target = t;
            continue;
        }
        c[i].target = FL_SYMCALL_NONE;
        if (!c[i].by_name || nn == 0)
            continue;
        /* [first, last] of the name: one entry when they agree (sorted
         * by entry within a name). */
        size_t lo = 0, hi = nn;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (byname[mid].name < c[i].name)
                lo = mid + 1;
            else
                hi = mid;
        }
        size_t first = lo;
        for (hi = nn; lo < hi;) {
            size_t mid = lo + (hi - lo) / 2;
            if (byname[mid].name <= c[i].name)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo > first && byname[first].entry == byname[lo - 1].entry)
            c[i].target = byname[first].entry;
    }
    free(byname);
    vec_free(&b->defs); /* not needed any more: make room for the output */
    if (b->calls.len)
        qsort(c, b->calls.len, sizeof *c, call_cmp);
    markers_place(b);
    return 0;
}

static int walk_die(builder *b, Dwarf_Die *die)
{
    if (b->depth >= CAP_DIE_DEPTH)
        return 0; /* deeper nesting than any compiler emits: ignore */
    struct stack_ent *s = &b->stack[b->depth++];
    s->die = *die;
    s->tag = dwarf_tag(die);
    s->record = FL_SC_NONE;
    s->entry = FL_SYMCALL_NONE;
    s->def = SIZE_MAX;
    s->name = FL_SC_NONE;
    s->all_tails = 0;
    s->marked = 0;
    if ((s->tag == DW_TAG_subprogram && note_function(b, b->depth - 1)) ||
        ((s->tag == DW_TAG_call_site || s->tag == DW_TAG_GNU_call_site) &&
         note_call(b, b->depth - 1))) {
        b->depth--;
        return b->rc;
    }
    if (s->tag == DW_TAG_subprogram || s->tag == DW_TAG_inlined_subroutine) {
        if (die_ranges(b, die, add_die_range, NULL)) {
            b->depth--;
            return b->rc;
        }
        /* An external function is found by name too, by the name its
         * record got (demangled once). */
        if (s->def != SIZE_MAX && s->record != FL_SC_NONE)
            VEC_AT(b->defs, def_ent, s->def).name = s->name;
    }
    Dwarf_Die child;
    if (dwarf_child(die, &child) == 0) {
        do {
            if (walk_die(b, &child)) {
                b->depth--;
                return b->rc;
            }
        } while (dwarf_siblingof(&child, &child) == 0);
    }
    b->depth--;
    return 0;
}

static int cu_functions(builder *b, Dwarf_Die *cudie)
{
    b->nmch = 0;
    b->depth = 0;
    if (walk_die(b, cudie))
        return b->rc;
    for (size_t c = 0; c < b->nmch; c++)
        for (size_t k = 0; k < b->mch[c]->n; k++) {
            const map_ent *e = &b->mch[c]->e[k], *next = NULL;
            if (k + 1 < b->mch[c]->n)
                next = e + 1;
            else if (c + 1 < b->nmch)
                next = &b->mch[c + 1]->e[0];
            uint64_t end = e->hi;
            if (next && next->lo < end)
                end = next->lo;
            die_bp *d = vec_push(&b->dbps);
            if (!d)
                return berr(b, FL_SYM_ENOMEM, "ranges");
            d->addr = e->lo;
            d->record = end > e->lo ? e->record : FL_SC_NONE;
            if (end > e->lo && (!next || next->lo > end)) {
                d = vec_push(&b->dbps);
                if (!d)
                    return berr(b, FL_SYM_ENOMEM, "ranges");
                d->addr = end;
                d->record = FL_SC_NONE;
            }
        }
    return 0;
}

static int cu_segments(builder *b, const cu_info *c);

/* cudie: the unit in .debug_info (its ranges say which addresses are its);
 * die: where its DIEs are -- the same, or for split DWARF the unit of its
 * .dwo file (libdw reads lines and addresses through the skeleton). */
static int process_cu(builder *b, const cu_info *cu, Dwarf_Die *cudie, Dwarf_Die *die)
{
    b->lines.len = 0;
    b->dbps.len = 0;
    b->version = cu->version;
    b->comp_dir = NULL;
    Dwarf_Attribute a;
    if (dwarf_attr_integrate(die, DW_AT_comp_dir, &a))
        b->comp_dir = dwarf_formstring(&a);
    Dwarf_Die *skeleton = cudie;
    cudie = die;
    /* A split unit's lines and the files its DIEs name (DW_AT_call_file)
     * are the skeleton's table's, as llvm reads them: libdw would give the
     * .dwo's .debug_line.dwo, which gcc writes as a copy of the
     * skeleton's file table but clang writes for its type units only
     * (-fdebug-types-section), with other files at other indices. */
    if (ftab_load(b, &b->dies_ft, skeleton) ||
        (die != skeleton ? ftab_load(b, &b->lines_ft, skeleton) : (ftab_reset(&b->lines_ft), 0)))
        return b->rc;
    if (cu_lines(b, cudie) || cu_functions(b, cudie))
        return b->rc;
    return cu_segments(b, cu);
}

/* ---- step 1: which unit owns an address ----------------------------- */

static int ep_cmp(const void *a, const void *b)
{
    const endpoint *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int push_ep(builder *b, vec *eps, uint64_t lo, uint64_t hi, uint32_t cu)
{
    if (lo >= hi)
        return 0;
    endpoint *e = vec_push(eps);
    endpoint *f = e ? vec_push(eps) : NULL;
    if (!f)
        return berr(b, FL_SYM_ENOMEM, "aranges");
    e = &VEC_AT(*eps, endpoint, eps->len - 2);
    e->addr = lo;
    e->cu = cu;
    e->start = 1;
    f->addr = hi;
    f->cu = cu;
    f->start = 0;
    return 0;
}

typedef struct ep_arg {
    vec *eps;
    uint32_t cu;
} ep_arg;

static int add_cu_range(builder *b, uint64_t lo, uint64_t hi, void *arg)
{
    ep_arg *ea = arg;
    return push_ep(b, ea->eps, lo, hi, ea->cu);
}

static long cu_containing(builder *b, Dwarf_Off off)
{
    cu_info *c = b->cus.data;
    size_t lo = 0, hi = b->cus.len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c[mid].next_off <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < b->cus.len && c[lo].off <= off)
        return (long)lo;
    return -1;
}

/* Binary min-heap of unit indices (lazy deletion through counts[]). */
typedef struct heap {
    uint32_t *v;
    size_t n, cap;
} heap;

static int heap_push(heap *h, uint32_t x)
{
    if (h->n == h->cap) {
        size_t nc = h->cap ? h->cap * 2 : 64;
        uint32_t *nv = sc_realloc(h->v, nc * sizeof *nv);
        if (!nv)
            return -1;
        h->v = nv;
        h->cap = nc;
    }
    size_t i = h->n++;
    h->v[i] = x;
    while (i > 0 && h->v[(i - 1) / 2] > h->v[i]) {
        uint32_t t = h->v[i];
        h->v[i] = h->v[(i - 1) / 2];
        h->v[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
    return 0;
}

static void heap_pop(heap *h)
{
    h->v[0] = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && h->v[l] < h->v[m])
            m = l;
        if (r < h->n && h->v[r] < h->v[m])
            m = r;
        if (m == i)
            break;
        uint32_t t = h->v[i];
        h->v[i] = h->v[m];
        h->v[m] = t;
        i = m;
    }
}

static int build_aranges(builder *b, Dwarf *dbg, vec *out)
{
    vec eps;
    vec_init(&eps, sizeof(endpoint));
    Dwarf_Aranges *ar;
    size_t nar = 0;
    if (dwarf_getaranges(dbg, &ar, &nar) == 0) {
        for (size_t i = 0; i < nar; i++) {
            Dwarf_Arange *a = dwarf_onearange(ar, i);
            Dwarf_Addr addr;
            Dwarf_Word len;
            Dwarf_Off off;
            if (!a || dwarf_getarangeinfo(a, &addr, &len, &off) != 0)
                continue;
            long cu = cu_containing(b, off);
            if (cu < 0)
                continue;
            VEC_AT(b->cus, cu_info, cu).in_aranges = 1;
            if (addr + len < addr)
                continue;
            if (push_ep(b, &eps, addr, addr + len, (uint32_t)cu))
                goto fail;
        }
    }
    for (size_t i = 0; i < b->cus.len; i++) {
        cu_info *c = &VEC_AT(b->cus, cu_info, i);
        if (c->in_aranges)
            continue;
        ep_arg ea = {&eps, (uint32_t)i};
        if (die_ranges(b, &c->die, add_cu_range, &ea))
            goto fail;
    }
    if (eps.len)
        qsort(eps.data, eps.len, sizeof(endpoint), ep_cmp);
    uint32_t *counts = sc_calloc(b->cus.len ? b->cus.len : 1, sizeof *counts);
    heap h = {NULL, 0, 0};
    if (!counts) {
        berr(b, FL_SYM_ENOMEM, "aranges");
        goto fail;
    }
    uint64_t prev = UINT64_MAX;
    size_t valid = 0;
    for (size_t i = 0; i < eps.len; i++) {
        endpoint *e = &VEC_AT(eps, endpoint, i);
        if (prev < e->addr && valid > 0) {
            arange *last = out->len ? &VEC_AT(*out, arange, out->len - 1) : NULL;
            if (last && last->hi == prev && counts[last->cu] > 0) {
                last->hi = e->addr;
            } else {
                while (h.n && counts[h.v[0]] == 0)
                    heap_pop(&h);
                arange *n = vec_push(out);
                if (!n) {
                    berr(b, FL_SYM_ENOMEM, "aranges");
                    break;
                }
                n->lo = prev;
                n->hi = e->addr;
                n->cu = h.v[0];
            }
        }
        if (e->start) {
            if (counts[e->cu]++ == 0 && heap_push(&h, e->cu) != 0) {
                berr(b, FL_SYM_ENOMEM, "aranges");
                break;
            }
            valid++;
        } else if (counts[e->cu] > 0) {
            counts[e->cu]--;
            valid--;
        }
        prev = e->addr;
    }
    free(counts);
    free(h.v);
fail:
    vec_free(&eps);
    return b->rc;
}

/* Fills ar_by_cu: each unit's intervals (ar_first, ar_count), in address
 * order. */
static int index_aranges(builder *b)
{
    size_t n = b->aranges.len;
    cu_info *c = b->cus.data;
    const arange *a = b->aranges.data;
    if (!(b->ar_by_cu = sc_malloc((n ? n : 1) * sizeof *b->ar_by_cu)))
        return berr(b, FL_SYM_ENOMEM, "aranges");
    for (size_t k = 0; k < n; k++)
        c[a[k].cu].ar_count++;
    size_t pos = 0;
    for (size_t i = 0; i < b->cus.len; i++) {
        c[i].ar_first = pos;
        pos += c[i].ar_count;
        c[i].ar_count = 0;
    }
    for (size_t k = 0; k < n; k++)
        b->ar_by_cu[c[a[k].cu].ar_first + c[a[k].cu].ar_count++] = (uint32_t)k;
    return 0;
}

/* ---- per-unit answers -> range segments -> the range table ------------
 *
 * Step 1 gives every address interval its unit before any unit is read.
 * Once a unit's line rows and function ranges are known, its intervals'
 * range entries are computed and appended to builder.segs, varint-coded
 * (a few bytes an entry instead of 24), and the unit's rows and ranges are
 * dropped; only the segments stay.  The range table is those segments
 * replayed in address order (range_stream), so the builder never holds
 * every unit's rows nor the whole table decoded.
 *
 * Both the per-interval and the whole-table sequences go through the same
 * reduction (rwin_put): a later entry at the same address replaces the
 * earlier one, and an entry equal to the one before it is dropped.  That
 * reduction is a function of the stream's last-written value per address,
 * so reducing each interval first and then their concatenation gives the
 * same table as reducing the concatenation of the raw entries. */

static int same_row(const fl_sc_range *a, const fl_sc_range *b)
{
    return a->record == b->record && a->file == b->file && a->line == b->line &&
           a->column == b->column;
}

/* The tail of the reduced sequence: only its last two entries can still
 * change (the last replaced, then dropped as equal to the one before). */
typedef struct rwin {
    fl_sc_range prev, last;
    int has_prev, has_last;
} rwin;

/* Adds r; returns 1 when an entry became final (copied to *out). */
static int rwin_put(rwin *w, fl_sc_range r, fl_sc_range *out)
{
    if (r.file == FL_SC_NONE)
        r.line = r.column = 0;
    if (w->has_last) {
        if (w->last.addr == r.addr) {
            w->last = r;
            if (w->has_prev && same_row(&w->prev, &r)) {
                /* prev is final now: no later entry has its address */
                w->last = w->prev;
                w->has_prev = 0;
            }
            return 0;
        }
        if (same_row(&w->last, &r))
            return 0;
    }
    int done = w->has_prev;
    if (done)
        *out = w->prev;
    w->prev = w->last;
    w->has_prev = w->has_last;
    w->last = r;
    w->has_last = 1;
    return done;
}

/* The previous entry of a segment; a segment starts at its interval's lo
 * with record, file (both + 1, so FL_SC_NONE is 0), line and column 0. */
typedef struct segcur {
    uint64_t addr;
    uint32_t rec1, file1, line, column;
} segcur;

/* An entry is a head byte -- bit 0: record changed, 1: file changed,
 * 2: column changed, 3-7: zigzag line delta (31: escaped) -- then the
 * address delta and what changed, as varints: 3-4 bytes for most. */
#define SEG_REC 1u
#define SEG_FILE 2u
#define SEG_COL 4u
#define SEG_LINE_ESC 31u

static int seg_put(bytes *o, segcur *c, const fl_sc_range *r)
{
    uint32_t rec1 = r->record + 1u, file1 = r->file + 1u;
    uint64_t lz = zigzag((int64_t)r->line - (int64_t)c->line);
    unsigned head = (lz < SEG_LINE_ESC ? (unsigned)lz : SEG_LINE_ESC) << 3;
    head |= (rec1 != c->rec1 ? SEG_REC : 0) | (file1 != c->file1 ? SEG_FILE : 0) |
            (r->column != c->column ? SEG_COL : 0);
    if (bytes_put(o, (uint8_t)head) || put_varint(o, r->addr - c->addr) ||
        ((head & SEG_REC) && put_varint(o, zigzag((int64_t)rec1 - (int64_t)c->rec1))) ||
        ((head & SEG_FILE) && put_varint(o, zigzag((int64_t)file1 - (int64_t)c->file1))) ||
        (lz >= SEG_LINE_ESC && put_varint(o, lz)) || ((head & SEG_COL) && put_varint(o, r->column)))
        return -1;
    c->addr = r->addr;
    c->rec1 = rec1;
    c->file1 = file1;
    c->line = r->line;
    c->column = r->column;
    return 0;
}

static void seg_get(const uint8_t **p, segcur *c, fl_sc_range *r)
{
    unsigned head = *(*p)++;
    c->addr += get_varint(p);
    if (head & SEG_REC)
        c->rec1 = (uint32_t)((int64_t)c->rec1 + unzigzag(get_varint(p)));
    if (head & SEG_FILE)
        c->file1 = (uint32_t)((int64_t)c->file1 + unzigzag(get_varint(p)));
    uint64_t lz = head >> 3;
    if (lz == SEG_LINE_ESC)
        lz = get_varint(p);
    c->line = (uint32_t)((int64_t)c->line + unzigzag(lz));
    if (head & SEG_COL)
        c->column = (uint32_t)get_varint(p);
    r->addr = c->addr;
    r->record = c->rec1 - 1u;
    r->file = c->file1 - 1u;
    r->line = c->line;
    r->column = c->column;
}

typedef struct segw {
    rwin w;
    segcur cur;
} segw;

/* Adds one entry of an interval to its segment. */
static int emit(builder *b, segw *s, uint64_t addr, uint32_t rec, const line_bp *l)
{
    fl_sc_range r = {addr, rec, l ? l->file : FL_SC_NONE, l ? l->line : 0, l ? l->column : 0}, done;
    if (rwin_put(&s->w, r, &done) && seg_put(&b->segs, &s->cur, &done))
        return berr(b, FL_SYM_ENOMEM, "range table");
    return 0;
}

static int emit_end(builder *b, segw *s)
{
    if ((s->w.has_prev && seg_put(&b->segs, &s->cur, &s->w.prev)) ||
        (s->w.has_last && seg_put(&b->segs, &s->cur, &s->w.last)))
        return berr(b, FL_SYM_ENOMEM, "range table");
    return 0;
}

/* Index of the first breakpoint with addr > a in arr[0..count). */
#define FIRST_GT(arr, count, a, out)                                                               \
    do {                                                                                           \
        size_t lo_ = 0, hi_ = (count);                                                             \
        while (lo_ < hi_) {                                                                        \
            size_t mid_ = lo_ + (hi_ - lo_) / 2;                                                   \
            if ((arr)[mid_].addr <= (a))                                                           \
                lo_ = mid_ + 1;                                                                    \
            else                                                                                   \
                hi_ = mid_;                                                                        \
        }                                                                                          \
        (out) = lo_;                                                                               \
    } while (0)

/* The range entries of the current unit's intervals, from its line rows
 * (b->lines) and function ranges (b->dbps). */
static int cu_segments(builder *b, const cu_info *c)
{
    const line_bp *L = b->lines.data;
    const die_bp *D = b->dbps.data;
    size_t lend = b->lines.len, dend = b->dbps.len;
    for (size_t k = 0; k < c->ar_count; k++) {
        arange *a = &VEC_AT(b->aranges, arange, b->ar_by_cu[c->ar_first + k]);
        segw s;
        memset(&s, 0, sizeof s);
        s.cur.addr = a->lo;
        a->seg_off = b->segs.len;
        size_t li, di;
        FIRST_GT(L, lend, a->lo, li);
        FIRST_GT(D, dend, a->lo, di);
        /* li/di: first breakpoint > lo; the one before is in effect. */
        const line_bp *cl = li > 0 ? &L[li - 1] : NULL;
        uint32_t cr = di > 0 ? D[di - 1].record : FL_SC_NONE;
        if (emit(b, &s, a->lo, cr, cl))
            return b->rc;
        for (;;) {
            uint64_t na = UINT64_MAX;
            if (li < lend && L[li].addr < na)
                na = L[li].addr;
            if (di < dend && D[di].addr < na)
                na = D[di].addr;
            if (na >= a->hi)
                break;
            while (li < lend && L[li].addr == na)
                cl = &L[li++];
            while (di < dend && D[di].addr == na)
                cr = D[di++].record;
            if (emit(b, &s, na, cr, cl))
                return b->rc;
        }
        if (emit(b, &s, a->hi, FL_SC_NONE, NULL) || emit_end(b, &s))
            return b->rc;
        a->seg_end = b->segs.len;
    }
    return 0;
}

/* Calls fn on every entry of the range table, in address order. */
typedef int (*range_sink)(builder *b, void *ctx, const fl_sc_range *r);

static int range_stream(builder *b, range_sink fn, void *ctx)
{
    rwin w;
    memset(&w, 0, sizeof w);
    fl_sc_range r, done;
    for (size_t k = 0; k < b->aranges.len; k++) {
        const arange *a = &VEC_AT(b->aranges, arange, k);
        const uint8_t *p = b->segs.p + a->seg_off, *end = b->segs.p + a->seg_end;
        segcur cur = {a->lo, 0, 0, 0, 0};
        while (p < end) {
            seg_get(&p, &cur, &r);
            if (rwin_put(&w, r, &done) && fn(b, ctx, &done))
                return b->rc;
        }
    }
    if ((w.has_prev && fn(b, ctx, &w.prev)) || (w.has_last && fn(b, ctx, &w.last)))
        return b->rc;
    return 0;
}

/* ---- debug file lookup (as llvm-symbolizer does it) ------------------ */

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int crc_matches(const char *path, uint32_t want)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    uLong crc = crc32(0, NULL, 0);
    unsigned char buf[65536];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        crc = crc32(crc, buf, (uInt)n);
    close(fd);
    return n == 0 && (uint32_t)crc == want;
}

/* Nonzero when snprintf's result n did not fit in cap (or failed). */
static int fmt_trunc(int n, size_t cap)
{
    return n < 0 || (size_t)n >= cap;
}

static void set_out(char *out, size_t cap, const char *s)
{
    size_t n = strlen(s);
    if (n >= cap) {
        out[0] = '\0';
        return;
    }
    memcpy(out, s, n + 1);
}

/* Fills out with the debug file for elf_path, or "" to use the file
 * itself: /usr/lib/debug/.build-id/xx/rest.debug, then .gnu_debuglink
 * next to the file, in .debug/ and under /usr/lib/debug. */
static void find_debug_file(Elf *elf, const char *elf_path, const uint8_t *id, size_t idlen,
                            char *out, size_t cap)
{
    out[0] = '\0';
    if (idlen >= 2) {
        char hex[2 * FL_SYM_BUILD_ID_MAX + 1];
        fl_sym_hex(id + 1, idlen - 1, hex, sizeof hex);
        snprintf(out, cap, "/usr/lib/debug/.build-id/%02x/%s.debug", id[0], hex);
        if (file_exists(out))
            return;
    }
    out[0] = '\0';
    GElf_Word crc;
    const char *link = dwelf_elf_gnu_debuglink(elf, &crc);
    if (!link || !*link || strchr(link, '/'))
        return;
    char dir[PATH_MAX];
    if (fmt_trunc(snprintf(dir, sizeof dir, "%s", elf_path), sizeof dir))
        return;
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[1] = '\0';
    else
        dir[0] = '\0';
    char cand[PATH_MAX];
    if (!fmt_trunc(snprintf(cand, sizeof cand, "%s%s", dir, link), sizeof cand) &&
        strcmp(cand, elf_path) != 0 && crc_matches(cand, crc)) {
        set_out(out, cap, cand);
        return;
    }
    if (!fmt_trunc(snprintf(cand, sizeof cand, "%s.debug/%s", dir, link), sizeof cand) &&
        crc_matches(cand, crc)) {
        set_out(out, cap, cand);
        return;
    }
    char abs[PATH_MAX];
    if (dir[0] != '/') {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd) ||
            fmt_trunc(snprintf(abs, sizeof abs, "%s/%s", cwd, dir), sizeof abs))
            return;
    } else if (fmt_trunc(snprintf(abs, sizeof abs, "%s", dir), sizeof abs)) {
        return;
    }
    if (!fmt_trunc(snprintf(cand, sizeof cand, "/usr/lib/debug%s", abs), sizeof cand) &&
        !fmt_trunc(snprintf(abs, sizeof abs, "%s%s", cand, link), sizeof abs) &&
        crc_matches(abs, crc))
        set_out(out, cap, abs);
}

/* ---- write ---------------------------------------------------------- */

/* File strings -> dense file indices for the range entries (small deltas
 * where string offsets would need two or three bytes). */
typedef struct file_map {
    uint32_t *keys, *vals; /* open addressing on string offset; key+1, 0 empty */
    size_t cap;
    uint32_t *files; /* index -> string offset */
    size_t n;
} file_map;

static uint32_t file_index(builder *b, file_map *m, uint32_t str)
{
    if (str == FL_SC_NONE)
        return FL_SC_NONE;
    /* A file already known is only looked up (the encoder's and the
     * record packer's second passes): no allocation, so no failure. */
    if (m->cap) {
        for (size_t j = ((str + 1u) * 2654435761u) & (m->cap - 1); m->keys[j];
             j = (j + 1) & (m->cap - 1))
            if (m->keys[j] == str + 1u)
                return m->vals[j];
    }
    if ((m->n + 1) * 2 > m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 1024;
        uint32_t *nk = sc_calloc(nc, sizeof *nk), *nv = sc_calloc(nc, sizeof *nv);
        uint32_t *nf = sc_realloc(m->files, nc * sizeof *nf);
        if (nf)
            m->files = nf;
        if (!nk || !nv || !nf) {
            free(nk);
            free(nv);
            berr(b, FL_SYM_ENOMEM, "file table");
            return FL_SC_NONE;
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->keys[i])
                continue;
            size_t j = (m->keys[i] * 2654435761u) & (nc - 1);
            while (nk[j])
                j = (j + 1) & (nc - 1);
            nk[j] = m->keys[i];
            nv[j] = m->vals[i];
        }
        free(m->keys);
        free(m->vals);
        m->keys = nk;
        m->vals = nv;
        m->cap = nc;
    }
    size_t j = ((str + 1u) * 2654435761u) & (m->cap - 1);
    while (m->keys[j]) {
        if (m->keys[j] == str + 1u)
            return m->vals[j];
        j = (j + 1) & (m->cap - 1);
    }
    m->keys[j] = str + 1u;
    m->vals[j] = (uint32_t)m->n;
    m->files[m->n] = str;
    return (uint32_t)m->n++;
}

/* The range entry encoder's state (encode_ranges). */
typedef struct enc {
    bytes *o;
    bytes tmp;       /* stream 1 of the current block */
    uint64_t acc[2]; /* bits not yet written, LSB first, per stream */
    unsigned nacc[2];
    int writing, bad;
    uint64_t freq[FL_SC_HUFF_N][FL_SC_HUFF_SYMS];
    uint8_t len[FL_SC_HUFF_N][FL_SC_HUFF_SYMS];
    uint32_t code[FL_SC_HUFF_N][FL_SC_HUFF_SYMS]; /* bit-reversed */
} enc;

/* Stream 0 (AD, COL) goes straight to the output, stream 1 (HEAD, REC,
 * the other escapes) is appended after it when the block ends. */
static void put_bits(enc *e, int st, uint64_t v, unsigned n) /* n <= 32 */
{
    e->acc[st] |= (v & (((uint64_t)1 << n) - 1)) << e->nacc[st];
    e->nacc[st] += n;
    while (e->nacc[st] >= 8) {
        e->bad |= bytes_put(st ? &e->tmp : e->o, (uint8_t)e->acc[st]);
        e->acc[st] >>= 8;
        e->nacc[st] -= 8;
    }
}

/* Ends a block: both streams to whole bytes, stream 1 after stream 0.
 * Returns stream 0's length in bytes (from block_start). */
static uint64_t end_block(enc *e, size_t block_start)
{
    for (int st = 0; st < 2; st++)
        if (e->nacc[st])
            put_bits(e, st, 0, 8 - e->nacc[st]);
    uint64_t split = e->o->len - block_start;
    for (size_t i = 0; i < e->tmp.len; i++)
        e->bad |= bytes_put(e->o, e->tmp.p[i]);
    e->tmp.len = 0;
    return split;
}

static void put_sym(enc *e, int st, int alpha, unsigned sym)
{
    if (e->writing)
        put_bits(e, st, e->code[alpha][sym], e->len[alpha][sym]);
    else
        e->freq[alpha][sym]++;
}

static void put_esc(enc *e, int st, uint64_t v)
{
    unsigned n = 0;
    while (n < 64 && (v >> n) != 0)
        n++;
    put_sym(e, st, FL_SC_HUFF_ESC, n);
    if (!e->writing || n < 2)
        return;
    n--; /* the top bit is implied */
    if (n > 32) {
        put_bits(e, st, v, 32);
        put_bits(e, st, v >> 32, n - 32);
    } else {
        put_bits(e, st, v, n);
    }
}

/* Huffman code lengths for freq[0..n) limited to FL_SC_HUFF_BITS: build
 * the tree by repeatedly joining the two lightest nodes (n <= 256, so the
 * quadratic search is cheap); if it is too deep, flatten the counts and
 * try again (all-equal counts give depth <= 8, so this ends). */
static void huff_lengths(const uint64_t *freq_in, size_t n, uint8_t *len)
{
    uint64_t f[FL_SC_HUFF_SYMS];
    memcpy(f, freq_in, n * sizeof *f);
    for (;;) {
        uint64_t w[2 * FL_SC_HUFF_SYMS];
        int parent[2 * FL_SC_HUFF_SYMS], alive[2 * FL_SC_HUFF_SYMS];
        size_t nodes = 0, used = 0;
        for (size_t i = 0; i < n; i++) {
            w[i] = f[i];
            alive[i] = f[i] > 0;
            parent[i] = -1;
            used += f[i] > 0;
        }
        nodes = n;
        memset(len, 0, n);
        if (used == 0)
            return;
        if (used == 1) {
            for (size_t i = 0; i < n; i++)
                if (f[i])
                    len[i] = 1;
            return;
        }
        for (size_t left = used; left > 1; left--) {
            long a = -1, c = -1;
            for (size_t i = 0; i < nodes; i++) {
                if (!alive[i])
                    continue;
                if (a < 0 || w[i] < w[a]) {
                    c = a;
                    a = (long)i;
                } else if (c < 0 || w[i] < w[c]) {
                    c = (long)i;
                }
            }
            w[nodes] = w[a] + w[c];
            alive[nodes] = 1;
            parent[nodes] = -1;
            alive[a] = alive[c] = 0;
            parent[a] = parent[c] = (int)nodes;
            nodes++;
        }
        unsigned maxd = 0;
        for (size_t i = 0; i < n; i++) {
            if (!f[i])
                continue;
            unsigned d = 0;
            for (int p = parent[i]; p >= 0; p = parent[p])
                d++;
            len[i] = (uint8_t)(d > 255 ? 255 : d);
            if (d > maxd)
                maxd = d;
        }
        if (maxd <= FL_SC_HUFF_BITS)
            return;
        for (size_t i = 0; i < n; i++)
            f[i] = f[i] ? (f[i] + 1) / 2 : 0;
    }
}

/* Canonical codes (deflate's assignment), stored bit-reversed because the
 * stream is read LSB first. */
static void huff_codes(const uint8_t *len, size_t n, uint32_t *code)
{
    unsigned count[FL_SC_HUFF_BITS + 1] = {0}, next[FL_SC_HUFF_BITS + 2];
    for (size_t i = 0; i < n; i++)
        count[len[i]]++;
    count[0] = 0;
    unsigned c = 0;
    for (unsigned l = 1; l <= FL_SC_HUFF_BITS; l++) {
        c = (c + count[l - 1]) << 1;
        next[l] = c;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned l = len[i];
        if (!l)
            continue;
        unsigned v = next[l]++, r = 0;
        for (unsigned k = 0; k < l; k++)
            r |= ((v >> k) & 1u) << (l - 1 - k);
        code[i] = r;
    }
}

typedef struct blockst { /* bstate[] entry, see symcache_format.h */
    uint64_t f[FL_SC_B_N];
} blockst;

/* One pass of the encoder over the range table (range_stream): the
 * first counts the Huffman symbols (and gives the files their indices,
 * checks the order and counts the entries), the second writes. */
typedef struct encpass {
    enc *e;
    file_map *fm;
    uint64_t base;
    blockst *bs;      /* second pass */
    uint32_t *baddrs; /* second pass */
    size_t i;
    uint64_t addr, rec, file, line, col; /* the previous entry */
} encpass;

static int encode_one(builder *b, void *ctx, const fl_sc_range *r)
{
    encpass *p = ctx;
    enc *e = p->e;
    size_t i = p->i++;
    uint32_t fidx = file_index(b, p->fm, r->file);
    if (b->rc)
        return b->rc;
    if (!e->writing) {
        if (r->addr < p->base || (i > 0 && r->addr < p->addr))
            return berr(b, FL_SYM_EDWARF, "ranges out of order");
        if (r->addr - p->base > 0xFFFFFFFFu)
            return berr(b, FL_SYM_ETOOBIG, "module spans more than 4 GiB");
    }
    uint64_t r1 = r->record == FL_SC_NONE ? 0 : (uint64_t)r->record + 1;
    uint64_t f1 = fidx == FL_SC_NONE ? 0 : (uint64_t)fidx + 1;
    blockst *bs = p->bs;
    if (i % FL_SC_BLOCK == 0) {
        if (e->writing) {
            if (i > 0)
                bs[i / FL_SC_BLOCK - 1].f[FL_SC_B_SPLIT] =
                    end_block(e, bs[i / FL_SC_BLOCK - 1].f[FL_SC_B_OFF]);
            blockst *B = &bs[i / FL_SC_BLOCK];
            B->f[FL_SC_B_OFF] = e->o->len;
            B->f[FL_SC_B_REC] = r1;
            B->f[FL_SC_B_FILE] = f1;
            B->f[FL_SC_B_LINE] = r->line;
            p->baddrs[i / FL_SC_BLOCK] = (uint32_t)(r->addr - p->base);
        }
        p->addr = r->addr;
        p->rec = r1;
        p->file = f1;
        p->line = r->line;
        p->col = 0;
    } else {
        uint64_t d = r->addr - p->addr;
        put_sym(e, 0, FL_SC_HUFF_AD, d <= FL_SC_AD_MAX ? (unsigned)d : 0);
        if (d > FL_SC_AD_MAX || d == 0)
            put_esc(e, 0, d);
    }
    uint64_t lz = zigzag((int64_t)r->line - (int64_t)p->line);
    unsigned head = lz < FL_SC_HEAD_LESC ? (unsigned)lz : FL_SC_HEAD_LESC;
    if (f1 != p->file)
        head |= FL_SC_H_FILE;
    if (r1 != p->rec)
        head |= FL_SC_H_REC;
    if (i % FL_SC_BLOCK != 0)
        put_sym(e, 1, FL_SC_HUFF_HEAD, head);
    if (r1 != p->rec) {
        uint64_t rz = zigzag((int64_t)r1 - (int64_t)p->rec);
        put_sym(e, 1, FL_SC_HUFF_REC, rz < FL_SC_SMALL_ESC ? (unsigned)rz : FL_SC_SMALL_ESC);
        if (rz >= FL_SC_SMALL_ESC)
            put_esc(e, 1, rz);
    }
    if (f1 != p->file) {
        uint64_t fz = zigzag((int64_t)f1 - (int64_t)p->file);
        put_sym(e, 1, FL_SC_HUFF_FILE, fz < FL_SC_FILE_ESC ? (unsigned)fz : FL_SC_FILE_ESC);
        if (fz >= FL_SC_FILE_ESC)
            put_esc(e, 1, fz);
    }
    if (lz >= FL_SC_HEAD_LESC) /* never for a block's first entry: lz is 0 */
        put_esc(e, 1, lz);
    if (r->column != p->col) {
        uint64_t c = r->column;
        put_sym(e, 0, FL_SC_HUFF_COL, c < FL_SC_COL_ESC ? (unsigned)c : FL_SC_COL_ESC);
        if (c >= FL_SC_COL_ESC)
            put_esc(e, 0, c);
    } else {
        put_sym(e, 0, FL_SC_HUFF_COL, FL_SC_COL_SAME);
    }
    p->addr = r->addr;
    p->rec = r1;
    p->file = f1;
    p->line = r->line;
    p->col = r->column;
    return 0;
}

/* Encodes the range table into block addresses, block states and rdata
 * (see symcache_format.h); file strings become indices into fm->files.
 * Two passes over the table: the first counts the Huffman symbols, the
 * second writes them with the codes built from those counts. */
static int encode_ranges(builder *b, uint64_t base, uint32_t **baddrs_out, blockst **bs_out,
                         size_t *nblocks_out, bytes *rd, file_map *fm,
                         uint8_t huff[FL_SC_HUFF_SIZE])
{
    uint32_t *baddrs = NULL;
    blockst *bst = NULL;
    enc *e = sc_calloc(1, sizeof *e);
    if (!e) {
        berr(b, FL_SYM_ENOMEM, "blocks");
        goto fail;
    }
    e->o = rd;
    encpass p = {.e = e, .fm = fm, .base = base};
    if (range_stream(b, encode_one, &p))
        goto fail;
    size_t n = p.i, nb = (n + FL_SC_BLOCK - 1) / FL_SC_BLOCK;
    baddrs = sc_calloc(nb ? nb : 1, sizeof *baddrs);
    bst = sc_calloc(nb ? nb : 1, sizeof *bst);
    if (!baddrs || !bst) {
        berr(b, FL_SYM_ENOMEM, "blocks");
        goto fail;
    }
    for (int a = 0; a < FL_SC_HUFF_N; a++) {
        static const unsigned nsyms[] = FL_SC_HUFF_ALPHA_SYMS, at[] = FL_SC_HUFF_ALPHA_AT;
        huff_lengths(e->freq[a], nsyms[a], e->len[a]);
        huff_codes(e->len[a], nsyms[a], e->code[a]);
        for (unsigned k = 0; k < nsyms[a]; k += 2)
            huff[at[a] + k / 2] = (uint8_t)(e->len[a][k] | e->len[a][k + 1] << 4);
    }
    e->writing = 1;
    memset(&p, 0, sizeof p);
    p.e = e;
    p.fm = fm;
    p.base = base;
    p.bs = bst;
    p.baddrs = baddrs;
    if (range_stream(b, encode_one, &p))
        goto fail;
    if (p.i != n) {
        berr(b, FL_SYM_EDWARF, "range table changed between passes");
        goto fail;
    }
    if (n > 0)
        bst[(n - 1) / FL_SC_BLOCK].f[FL_SC_B_SPLIT] =
            end_block(e, bst[(n - 1) / FL_SC_BLOCK].f[FL_SC_B_OFF]);
    for (int k = 0; k < 8; k++) /* padding: the reader loads 64 bits at a time */
        e->bad |= bytes_put(rd, 0);
    if (e->bad) {
        berr(b, FL_SYM_ENOMEM, "range data");
        goto fail;
    }
    if (rd->len > 0xFFFFFFFFu) {
        berr(b, FL_SYM_ETOOBIG, "range data over 4 GiB");
        goto fail;
    }
    free(e->tmp.p);
    free(e);
    b->nranges = n;
    *baddrs_out = baddrs;
    *bs_out = bst;
    *nblocks_out = nb;
    return 0;
fail:
    free(baddrs);
    free(bst);
    if (e)
        free(e->tmp.p);
    free(e);
    return b->rc;
}

/* Bit-packed fixed-width tables (records, symbols). */
static unsigned bit_width(uint64_t v)
{
    unsigned n = 0;
    while (v >> n)
        n++;
    return n;
}

static size_t packed_size(uint64_t count, const uint8_t *w, size_t nw)
{
    uint64_t bits = 0;
    for (size_t i = 0; i < nw; i++)
        bits += w[i];
    return (size_t)((count * bits + 7) / 8 + 8);
}

/* Writes v (which fits w bits) at bit offset pos of a zeroed buffer. */
static void pack_put(uint8_t *p, uint64_t pos, uint64_t v, unsigned w)
{
    for (unsigned k = 0; k < w; k++, pos++)
        if ((v >> k) & 1u)
            p[pos >> 3] |= (uint8_t)(1u << (pos & 7));
}

static uint64_t rec_field(const fl_sc_record *r, size_t i, int f)
{
    switch (f) {
    case FL_SC_R_NAME:
        return r->name == FL_SC_NONE ? 0 : (uint64_t)r->name + 1;
    case FL_SC_R_PARENT:
        return r->parent == FL_SC_NONE || r->parent >= i ? 0 : i - r->parent;
    case FL_SC_R_FILE:
        return r->call_file == FL_SC_NONE ? 0 : (uint64_t)r->call_file + 1; /* index by then */
    case FL_SC_R_LINE:
        return r->call_line;
    default:
        return r->call_column;
    }
}

static uint64_t sym_field(const sym_in *s, uint64_t base, int f)
{
    switch (f) {
    case FL_SC_S_ADDR: /* in saddrs[], not in the packed table */
        (void)base;
        return 0;
    case FL_SC_S_SIZE:
        return s->size > 0xFFFFFFFFu ? 0xFFFFFFFFu : s->size;
    case FL_SC_S_NAME:
        return s->name == FL_SC_NONE ? 0 : (uint64_t)s->name + 1;
    default:
        return s->file == FL_SC_NONE ? 0 : (uint64_t)s->file + 1; /* index by then */
    }
}

/* ---- string tail merging -------------------------------------------- */

/* A string that is the tail of another ("malloc" of "__libc_malloc",
 * "foo.c" of "dir/foo.c") is stored once, inside the longer one: sorted
 * by their reversed text, a string that is a tail of another comes right
 * before a string it is a tail of. */
typedef struct tstr {
    const char *s;
    uint32_t len, old, neu;
} tstr;

static int tstr_cmp_rev(const void *a, const void *b)
{
    const tstr *x = *(const tstr *const *)a, *y = *(const tstr *const *)b;
    uint32_t i = x->len, j = y->len;
    while (i > 0 && j > 0) {
        unsigned char c = (unsigned char)x->s[--i], d = (unsigned char)y->s[--j];
        if (c != d)
            return c < d ? -1 : 1;
    }
    return i > 0 ? 1 : (j > 0 ? -1 : 0);
}

/* Old string offset -> new one after tail_merge (ts in old-offset order);
 * no ts: the offsets stay. */
typedef struct str_remap {
    tstr *ts;
    size_t n;
} str_remap;

static uint32_t remap_str(const str_remap *m, uint32_t v)
{
    if (!m->ts || v == FL_SC_NONE)
        return v;
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->ts[mid].old < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->n && m->ts[lo].old == v ? m->ts[lo].neu : FL_SC_NONE;
}

/* Rebuilds b->strs.buf with tails merged and rewrites the symbol names
 * and the file table; record names (read in order when packed) are
 * remapped through *rm then (the caller frees rm->ts).  On failure
 * (memory) the table stays as it was, which is still correct. */
static void tail_merge(builder *b, file_map *fm, str_remap *rm)
{
    rm->ts = NULL;
    rm->n = 0;
    strtab *t = &b->strs;
    size_t n = 0;
    for (size_t i = 0; i < t->len; i++)
        n += t->buf[i] == '\0';
    if (n < 2)
        return;
    tstr *ts = sc_calloc(n, sizeof *ts);
    tstr **ord = sc_calloc(n, sizeof *ord);
    char *nb = sc_malloc(t->len);
    if (!ts || !ord || !nb)
        goto out;
    size_t k = 0;
    for (size_t i = 0; i < t->len && k < n;) {
        size_t l = strlen(t->buf + i);
        ts[k].s = t->buf + i;
        ts[k].len = (uint32_t)l;
        ts[k].old = (uint32_t)i;
        ord[k] = &ts[k];
        k++;
        i += l + 1;
    }
    qsort(ord, n, sizeof *ord, tstr_cmp_rev);
    size_t nlen = 0;
    for (size_t i = n; i-- > 0;) {
        tstr *x = ord[i], *y = i + 1 < n ? ord[i + 1] : NULL;
        if (y && y->len >= x->len && memcmp(y->s + y->len - x->len, x->s, x->len) == 0) {
            x->neu = y->neu + (y->len - x->len);
        } else {
            x->neu = (uint32_t)nlen;
            memcpy(nb + nlen, x->s, x->len + 1);
            nlen += x->len + 1;
        }
    }
    /* ts[] is in old-offset order: remap by binary search. */
    str_remap m = {ts, n};
    for (size_t i = 0; i < b->syms.len; i++)
        VEC_AT(b->syms, sym_in, i).name = remap_str(&m, VEC_AT(b->syms, sym_in, i).name);
    for (size_t i = 0; i < fm->n; i++)
        fm->files[i] = remap_str(&m, fm->files[i]);
    *rm = m;
    ts = NULL;
    free(t->buf);
    t->buf = nb;
    t->len = nlen;
    t->cap = t->len;
    nb = NULL;
out:
    free(ts);
    free(ord);
    free(nb);
}

/* Record i as packed: name after tail merging, call file as its index. */
static void rec_packed(builder *b, rec_cursor *c, file_map *fm, const str_remap *rm,
                       uint64_t v[FL_SC_R_N])
{
    size_t i = c->i;
    fl_sc_record r;
    rec_get(c, &r);
    r.name = remap_str(rm, r.name);
    r.call_file = file_index(b, fm, r.call_file); /* known: a lookup */
    for (int f = 0; f < FL_SC_R_N; f++)
        v[f] = rec_field(&r, i, f);
}

/* calls[] (tail 0) or tails[] (tail 1) as stored (symcache_format.h),
 * into out when not NULL; returns the entry count.  Addresses become
 * 32-bit offsets from base like the symbols' (a call outside that span is
 * dropped; a target outside it is "none"), names their strings after
 * tail merging, and of calls at one site (direct) or one (owner, site)
 * (tail) the first in call_cmp order is kept. */
/* Whether a function of the module with entry `target` makes a tail call
 * (has an entry among the tail calls, which follow the direct calls in
 * call_cmp order, by owner). */
static int makes_tail_calls(const call_ent *c, size_t first_tail, size_t n, uint64_t target)
{
    size_t lo = first_tail, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c[mid].owner < target)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && c[lo].owner == target;
}

static size_t calls_pack(const builder *b, uint64_t base, const str_remap *rm, uint32_t tail,
                         uint8_t *out)
{
    const call_ent *c = b->calls.data;
    size_t n = 0, first_tail = 0;
    while (first_tail < b->calls.len && !c[first_tail].tail)
        first_tail++;
    uint64_t last_owner = 0, last_site = 0;
    for (size_t i = 0; i < b->calls.len; i++) {
        if (!c[i].tail != !tail || c[i].site < base || c[i].site - base > 0xFFFFFFFFu ||
            (tail && (c[i].owner < base || c[i].owner - base > 0xFFFFFFFFu)))
            continue;
        /* A direct call matters only when it went to a function of the
         * module that makes tail calls: only then can a frame be missing
         * above it that the tail calls name.  The others are most of a
         * module's calls (libc: 12,726 of which ~2,000 are kept).  A call
         * to another module's function goes to xcalls[] (xcalls_pack). */
        if (!tail && (c[i].target == FL_SYMCALL_NONE ||
                      !makes_tail_calls(c, first_tail, b->calls.len, c[i].target)))
            continue;
        if (n > 0 && c[i].site == last_site && c[i].owner == last_owner)
            continue;
        last_site = c[i].site;
        last_owner = c[i].owner;
        if (out) {
            uint32_t v[4], k = 0;
            if (tail)
                v[k++] = (uint32_t)(c[i].owner - base);
            v[k++] = (uint32_t)(c[i].site - base);
            v[k++] = c[i].target != FL_SYMCALL_NONE && c[i].target >= base &&
                             c[i].target - base < 0xFFFFFFFFu
                         ? (uint32_t)(c[i].target - base + 1)
                         : 0;
            v[k++] = remap_str(rm, c[i].name);
            memcpy(out + n * (k * sizeof(uint32_t)), v, k * sizeof(uint32_t));
        }
        n++;
    }
    return n;
}

/* Whether c[i] goes to xcalls[]: a direct call to another module's
 * function, the first call at its site in call_cmp order (a call with a
 * target there comes first, and goes to calls[] or nowhere). */
static int is_xcall(const call_ent *c, size_t i)
{
    return !c[i].tail && (i == 0 || c[i - 1].site != c[i].site) && c[i].target == FL_SYMCALL_NONE &&
           c[i].by_name == BY_NAME_ELSEWHERE && c[i].name != FL_SC_NONE;
}

/* Another module's function can make tail calls the module's DWARF does
 * not say, so every call to one is kept -- and there are many (a program
 * calls its libraries' functions everywhere: 7,516 calls to 504 names in
 * the faultline binary), so packed: the site in as many bits as the
 * largest needs, the name as an index into xnames[] (each name once).
 * Fills x->names (sorted string refs after tail merging; the caller frees
 * it) and the header fields; with out, the packed entries too (call it
 * first without). */
typedef struct xcalls_out {
    uint32_t *names;
    size_t nnames, count;
    uint8_t w[FL_SC_X_N];
} xcalls_out;

static size_t xname_index(const xcalls_out *x, uint32_t name)
{
    size_t lo = 0, hi = x->nnames;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->names[mid] < name)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int xcalls_pack(builder *b, uint64_t base, const str_remap *rm, xcalls_out *x, uint8_t *out)
{
    const call_ent *c = b->calls.data;
    if (!out) {
        size_t n = 0;
        uint64_t maxsite = 0;
        for (size_t i = 0; i < b->calls.len; i++)
            if (is_xcall(c, i) && c[i].site >= base && c[i].site - base <= 0xFFFFFFFFu &&
                remap_str(rm, c[i].name) != FL_SC_NONE) {
                n++;
                maxsite = c[i].site - base;
            }
        x->names = n ? sc_malloc(n * sizeof *x->names) : NULL;
        if (n && !x->names)
            return berr(b, FL_SYM_ENOMEM, "call sites");
        x->count = n;
        n = 0;
        for (size_t i = 0; i < b->calls.len; i++)
            if (is_xcall(c, i) && c[i].site >= base && c[i].site - base <= 0xFFFFFFFFu &&
                remap_str(rm, c[i].name) != FL_SC_NONE)
                x->names[n++] = remap_str(rm, c[i].name);
        if (n)
            qsort(x->names, n, sizeof *x->names, u32_cmp);
        size_t u = 0;
        for (size_t i = 0; i < n; i++)
            if (u == 0 || x->names[u - 1] != x->names[i])
                x->names[u++] = x->names[i];
        x->nnames = u;
        x->w[FL_SC_X_SITE] = (uint8_t)bit_width(maxsite);
        x->w[FL_SC_X_NAME] = (uint8_t)bit_width(u ? u - 1 : 0);
        return 0;
    }
    uint64_t pos = 0;
    for (size_t i = 0; i < b->calls.len; i++) {
        if (!is_xcall(c, i) || c[i].site < base || c[i].site - base > 0xFFFFFFFFu)
            continue;
        uint32_t name = remap_str(rm, c[i].name);
        if (name == FL_SC_NONE)
            continue;
        pack_put(out, pos, c[i].site - base, x->w[FL_SC_X_SITE]);
        pos += x->w[FL_SC_X_SITE];
        pack_put(out, pos, xname_index(x, name), x->w[FL_SC_X_NAME]);
        pos += x->w[FL_SC_X_NAME];
    }
    return 0;
}

static int serialize(builder *b, void **out, size_t *outlen)
{
    size_t nsym = b->syms.len, nrec = b->nrecs;
    str_remap rm = {NULL, 0};
    xcalls_out xo = {NULL, 0, 0, {0, 0}};
    uint32_t *baddrs = NULL;
    blockst *bst = NULL;
    size_t nblocks = 0;
    bytes rd = {NULL, 0, 0};
    file_map fm;
    memset(&fm, 0, sizeof fm);
    uint8_t huff[FL_SC_HUFF_SIZE];
    uint8_t *buf = NULL;
    fl_sc_header h;
    memset(&h, 0, sizeof h);
    /* Addresses are stored as 32-bit offsets from the lowest one. */
    uint64_t base = UINT64_MAX;
    if (b->aranges.len) /* the table's first entry is at the first interval's start */
        base = VEC_AT(b->aranges, arange, 0).lo;
    if (nsym && VEC_AT(b->syms, sym_in, 0).addr < base)
        base = VEC_AT(b->syms, sym_in, 0).addr;
    if (base == UINT64_MAX)
        base = 0;
    /* Call files and symbol files become file indices too (narrower
     * fields than string offsets). */
    rec_cursor rc = {b->recs.p, 0, 0};
    for (size_t i = 0; i < nrec && !b->rc; i++) {
        fl_sc_record r;
        rec_get(&rc, &r);
        file_index(b, &fm, r.call_file);
    }
    for (size_t i = 0; i < nsym && !b->rc; i++) {
        sym_in *s = &VEC_AT(b->syms, sym_in, i);
        s->file = file_index(b, &fm, s->file);
        if (s->addr - base > 0xFFFFFFFFu)
            berr(b, FL_SYM_ETOOBIG, "module spans more than 4 GiB");
    }
    if (b->rc || encode_ranges(b, base, &baddrs, &bst, &nblocks, &rd, &fm, huff))
        goto done;
    free(b->segs.p); /* encoded: the output takes its place */
    memset(&b->segs, 0, sizeof b->segs);
    tail_merge(b, &fm, &rm); /* every string reference is known by now */
    uint64_t rmax[FL_SC_R_N] = {0}, rv[FL_SC_R_N];
    rec_cursor rw = {b->recs.p, 0, 0};
    for (size_t i = 0; i < nrec; i++) {
        rec_packed(b, &rw, &fm, &rm, rv);
        for (int f = 0; f < FL_SC_R_N; f++)
            rmax[f] = rv[f] > rmax[f] ? rv[f] : rmax[f];
    }
    for (int f = 0; f < FL_SC_R_N; f++)
        h.rec_w[f] = (uint8_t)bit_width(rmax[f]);
    for (int f = 0; f < FL_SC_S_N; f++) {
        uint64_t mx = 0;
        for (size_t i = 0; i < nsym; i++) {
            uint64_t v = sym_field(&VEC_AT(b->syms, sym_in, i), base, f);
            mx = v > mx ? v : mx;
        }
        h.sym_w[f] = (uint8_t)bit_width(mx);
    }
    uint64_t off = FL_SC_HEADER_SIZE;
    memcpy(h.magic, FL_SC_MAGIC, 8);
    h.version = FL_SC_VERSION;
    h.header_size = FL_SC_HEADER_SIZE;
    h.builder = FL_SC_BUILDER;
    h.fingerprint = b->fingerprint;
    h.build_id_len = (uint32_t)b->build_id_len;
    memcpy(h.build_id, b->build_id, b->build_id_len);
    h.flags = b->has_dwarf ? FL_SC_F_DWARF : 0;
    if (b->has_dwarf && b->alt_missing)
        h.flags |= FL_SC_F_ALT_MISSING;
    if (b->has_dwarf && b->dwo_missing) {
        /* How many units had their .dwo file nowhere, + 1: a later check
         * rebuilds when fewer do (fl_symcache_dwo_missing_count).  Not
         * the units read without it: one whose file is found but that
         * the private view could not point at (dwo.c) would make that
         * check rebuild for good. */
        size_t nowhere = b->dwo_scanned ? b->dwo_nowhere : b->dwo_missing;
        h.flags |= FL_SC_F_DWO_MISSING | (uint32_t)(nowhere < 0xfffe ? nowhere + 1 : 0xffff)
                                             << FL_SC_F_DWO_COUNT_SHIFT;
    }
    /* The call-site tables say which calls there are only when every
     * call-site entry was read (no cap reached). */
    if (b->has_dwarf && b->calls_seen && !b->calls_capped)
        h.flags |= FL_SC_F_CALLS;
    h.flags |= FL_SC_F_EXPORTS;
    h.base_addr = base;
#define ALIGN8(x) (((x) + 7) & ~(uint64_t)7)
    h.ranges_count = b->nranges;
    h.baddrs_off = off;
    h.blocks_count = nblocks;
    off = ALIGN8(off + nblocks * sizeof(uint32_t));
    for (int f = 0; f < FL_SC_B_N; f++) {
        uint64_t mx = 0;
        for (size_t i = 0; i < nblocks; i++)
            mx = bst[i].f[f] > mx ? bst[i].f[f] : mx;
        h.blk_w[f] = (uint8_t)bit_width(mx);
    }
    h.bstate_off = off;
    off = ALIGN8(off + packed_size(nblocks, h.blk_w, FL_SC_B_N));
    h.huff_off = off;
    off = ALIGN8(off + FL_SC_HUFF_SIZE);
    h.rdata_off = off;
    h.rdata_size = rd.len;
    off = ALIGN8(off + rd.len);
    h.files_off = off;
    h.files_count = fm.n;
    off = ALIGN8(off + fm.n * sizeof(uint32_t));
    h.records_off = off;
    h.records_count = nrec;
    off = ALIGN8(off + packed_size(nrec, h.rec_w, FL_SC_R_N));
    h.symbols_off = off;
    h.symbols_count = nsym;
    off = ALIGN8(off + packed_size(nsym, h.sym_w, FL_SC_S_N));
    h.saddrs_off = off;
    off = ALIGN8(off + nsym * sizeof(uint32_t));
    fl_sc_header4 hx;
    memset(&hx, 0, sizeof hx);
    hx.calls_off = off;
    hx.calls_count = calls_pack(b, base, &rm, 0, NULL);
    off = ALIGN8(off + hx.calls_count * FL_SC_CALL_SIZE);
    hx.tails_off = off;
    hx.tails_count = calls_pack(b, base, &rm, 1, NULL);
    off = ALIGN8(off + hx.tails_count * FL_SC_TAIL_SIZE);
    if (xcalls_pack(b, base, &rm, &xo, NULL))
        goto done;
    hx.xcalls_off = off;
    hx.xcalls_count = (uint32_t)xo.count;
    memcpy(hx.xcall_w, xo.w, sizeof hx.xcall_w);
    off = ALIGN8(off + packed_size(xo.count, xo.w, FL_SC_X_N));
    hx.xnames_off = off;
    hx.xnames_count = (uint32_t)xo.nnames;
    off = ALIGN8(off + xo.nnames * sizeof(uint32_t));
    uint64_t exports_off = off; /* where the reader looks for it */
    off = ALIGN8(off + (nsym + 7) / 8);
    b->ncalls_out = hx.calls_count + hx.xcalls_count;
    b->ntails_out = hx.tails_count;
    h.strings_off = off;
    h.strings_size = b->strs.len;
    off = ALIGN8(off + b->strs.len);
    h.file_size = off;
    /* The output grows out of the range data, most of it, instead of
     * being allocated next to it and the data copied: one less copy of
     * the largest table at the builder's peak. */
    buf = sc_realloc(rd.p, off);
    if (!buf) {
        berr(b, FL_SYM_ENOMEM, "output");
        goto done;
    }
    rd.p = NULL;
    memmove(buf + h.rdata_off, buf, rd.len);
    memset(buf, 0, h.rdata_off);
    memset(buf + h.rdata_off + rd.len, 0, off - h.rdata_off - rd.len);
    if (nblocks) {
        memcpy(buf + h.baddrs_off, baddrs, nblocks * sizeof(uint32_t));
    }
    memcpy(buf + h.huff_off, huff, FL_SC_HUFF_SIZE);
    if (fm.n)
        memcpy(buf + h.files_off, fm.files, fm.n * sizeof(uint32_t));
    uint64_t pos = 0;
    for (size_t i = 0; i < nblocks; i++)
        for (int f = 0; f < FL_SC_B_N; f++) {
            pack_put(buf + h.bstate_off, pos, bst[i].f[f], h.blk_w[f]);
            pos += h.blk_w[f];
        }
    pos = 0;
    rec_cursor rp = {b->recs.p, 0, 0};
    for (size_t i = 0; i < nrec; i++) {
        rec_packed(b, &rp, &fm, &rm, rv);
        for (int f = 0; f < FL_SC_R_N; f++) {
            pack_put(buf + h.records_off, pos, rv[f], h.rec_w[f]);
            pos += h.rec_w[f];
        }
    }
    pos = 0;
    for (size_t i = 0; i < nsym; i++)
        for (int f = 0; f < FL_SC_S_N; f++) {
            pack_put(buf + h.symbols_off, pos, sym_field(&VEC_AT(b->syms, sym_in, i), base, f),
                     h.sym_w[f]);
            pos += h.sym_w[f];
        }
    for (size_t i = 0; i < nsym; i++) {
        uint32_t a = (uint32_t)(VEC_AT(b->syms, sym_in, i).addr - base); /* checked above */
        memcpy(buf + h.saddrs_off + i * sizeof a, &a, sizeof a);
    }
    calls_pack(b, base, &rm, 0, buf + hx.calls_off);
    calls_pack(b, base, &rm, 1, buf + hx.tails_off);
    xcalls_pack(b, base, &rm, &xo, buf + hx.xcalls_off);
    if (xo.nnames)
        memcpy(buf + hx.xnames_off, xo.names, xo.nnames * sizeof(uint32_t));
    for (size_t i = 0; i < nsym; i++)
        if (VEC_AT(b->syms, sym_in, i).exported)
            buf[exports_off + i / 8] |= (uint8_t)(1u << (i % 8));
    if (b->strs.len)
        memcpy(buf + h.strings_off, b->strs.buf, b->strs.len);
    hx.base = h;
    memcpy(buf, &hx, sizeof hx);
    hx.base.checksum = fl_sc_file_checksum(buf, off);
    memcpy(buf, &hx, sizeof hx);
    *out = buf;
    *outlen = off;
done:
    free(baddrs);
    free(bst);
    free(rd.p);
    free(fm.keys);
    free(fm.vals);
    free(fm.files);
    free(rm.ts);
    free(xo.names);
    return b->rc;
}

static void builder_free(builder *b)
{
    strtab_free(&b->strs);
    free(b->recs.p);
    memset(&b->recs, 0, sizeof b->recs);
    vec_free(&b->cus);
    vec_free(&b->aranges);
    free(b->ar_by_cu);
    b->ar_by_cu = NULL;
    free(b->segs.p);
    memset(&b->segs, 0, sizeof b->segs);
    vec_free(&b->lines);
    vec_free(&b->dbps);
    for (size_t i = 0; i < b->pmch; i++)
        free(b->mch[i]);
    free(b->mch);
    b->mch = NULL;
    b->nmch = b->pmch = b->capmch = 0;
    vec_free(&b->syms);
    vec_free(&b->defnames);
    vec_free(&b->defs);
    vec_free(&b->calls);
    ftab_reset(&b->dies_ft);
    ftab_reset(&b->lines_ft);
}

static void builder_init(builder *b, char *err, size_t errlen)
{
    memset(b, 0, sizeof *b);
    b->err = err;
    b->errlen = errlen;
    if (err && errlen)
        err[0] = '\0';
    vec_init(&b->cus, sizeof(cu_info));
    vec_init(&b->aranges, sizeof(arange));
    vec_init(&b->lines, sizeof(line_bp));
    vec_init(&b->dbps, sizeof(die_bp));
    vec_init(&b->syms, sizeof(sym_in));
    vec_init(&b->defnames, sizeof(uint64_t));
    vec_init(&b->defs, sizeof(def_ent));
    vec_init(&b->calls, sizeof(call_ent));
}

/* ---- dwz files ------------------------------------------------------
 *
 * dwz -m moves DWARF that several debug files share (types, inline
 * functions of common headers, strings) into one file and leaves in each
 * a .gnu_debugaltlink: the file's name and build id.  Attributes of forms
 * DW_FORM_GNU_ref_alt / GNU_strp_alt point into it, so without it the
 * names and inlined frames that went there are missing.  libdw reads the
 * file once dwarf_setalt gives it, or finds it itself (dwarf_getalt) in
 * the few places it knows; the server knows more (its uploads,
 * debuginfod), hence the find_alt hook. */

typedef struct alt_file {
    int fd;
    Elf *elf;
    Dwarf *dbg;
} alt_file;

static void alt_close(alt_file *a)
{
    if (a->dbg)
        dwarf_end(a->dbg);
    if (a->elf)
        elf_end(a->elf);
    if (a->fd >= 0)
        close(a->fd);
    a->dbg = NULL;
    a->elf = NULL;
    a->fd = -1;
}

/* Opens path as the dwz file of build id (id, n).  The name comes from the
 * debug file: nothing but a regular file is opened (a FIFO's writer would
 * be let go, a device may act on open). */
static int alt_open(alt_file *a, const char *path, const void *id, size_t n)
{
    const void *got = NULL;
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
        (a->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)) < 0 ||
        fstat(a->fd, &st) != 0 ||
        !S_ISREG(st.st_mode) ||
        !(a->elf = elf_begin(a->fd, ELF_C_READ_MMAP, NULL)) ||
        dwelf_elf_gnu_build_id(a->elf, &got) != (ssize_t)n || !got || memcmp(got, id, n) != 0 ||
        !(a->dbg = dwarf_begin_elf(a->elf, DWARF_C_READ, NULL))) {
        alt_close(a);
        return -1;
    }
    return 0;
}

enum { ALT_NONE, ALT_LINKED, ALT_MISSING };

/* Gives dbg (read from dwarf_path, may be NULL) its dwz file, opened into
 * a (close it after dbg).  Fills hex with the link's build id and path
 * with where the file was found.  Returns an ALT_ value. */
static int link_alt(Dwarf *dbg, const char *dwarf_path, const fl_symbuild_opts *opts, alt_file *a,
                    char *hex, size_t cap, char *path, size_t pcap)
{
    const char *name = NULL;
    const void *id = NULL;
    hex[0] = path[0] = '\0';
    ssize_t n = dwelf_dwarf_gnu_debugaltlink(dbg, &name, &id);
    if (n == 0)
        return ALT_NONE;
    if (n < 0 || !id || !name || (size_t)n > FL_SYM_BUILD_ID_MAX)
        return ALT_MISSING; /* a malformed link: nothing can be found */
    fl_sym_hex(id, (size_t)n, hex, cap);
    char cand[PATH_MAX];
    if (opts && opts->find_alt && opts->find_alt(opts->ctx, hex, name, cand, sizeof cand) == 0 &&
        alt_open(a, cand, id, (size_t)n) == 0)
        goto found;
    /* libdw's places, with the path known: the name (relative to the
     * debug file's directory), then the build-id tree. */
    if (name[0] == '/') {
        if (!fmt_trunc(snprintf(cand, sizeof cand, "%s", name), sizeof cand) &&
            alt_open(a, cand, id, (size_t)n) == 0)
            goto found;
    } else if (dwarf_path) {
        const char *slash = strrchr(dwarf_path, '/');
        int dl = slash ? (int)(slash - dwarf_path + 1) : 0;
        if (!fmt_trunc(snprintf(cand, sizeof cand, "%.*s%s", dl, dwarf_path, name), sizeof cand) &&
            alt_open(a, cand, id, (size_t)n) == 0)
            goto found;
    }
    if (n >= 2 &&
        !fmt_trunc(
            snprintf(cand, sizeof cand, "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2),
            sizeof cand) &&
        alt_open(a, cand, id, (size_t)n) == 0)
        goto found;
    return ALT_MISSING;
found:
    dwarf_setalt(dbg, a->dbg);
    set_out(path, pcap, cand);
    return ALT_LINKED;
}

/* libdw keeps every unit's line table (~50 bytes a row, more than the
 * DWARF it came from), abbreviations and split units until dwarf_end, and
 * offers no way to drop one unit's.  Once the units read hold this many
 * rows, the builder ends the Dwarf handle and opens a new one on the same
 * Elf (whose sections, decompressed or mapped, stay as they are): what it
 * keeps of a unit (records, strings, range segments) does not point into
 * libdw.  A new handle re-reads the headers of the units before the next
 * one (libdw finds a unit by walking them), so the budget grows with the
 * number of units read to keep that cost small against the rows'. */
#define LIBDW_ROWS_HELD (1u << 15)
#define LIBDW_ROWS_PER_UNIT 8u

static long g_rows_held = -1; /* test hook: fl_symcache_test_dwarf_rows */

void fl_symcache_test_dwarf_rows(long rows)
{
    g_rows_held = rows;
}

/* The pages of the DWARF file's mapping the builder has read count in its
 * RSS (up to the whole file: 300 MB for a large program) until unmapped.
 * libelf maps a file opened with ELF_C_READ_MMAP read-only, so none of
 * those pages was ever written: dropping them loses nothing, and what is
 * read again comes back from the page cache. */
static void drop_mapped(builder *b)
{
    if (b->dmap)
        madvise(b->dmap, b->dmap_len, MADV_DONTNEED);
}

/* Sets b->dmap to elf's image when libelf mapped it from its file
 * read-only (/proc/self/maps says so: libelf reads a file into memory
 * when it cannot map it, and memory is not to be dropped). */
static void find_mapped(builder *b, Elf *elf)
{
    size_t size = 0;
    char *raw = elf_rawfile(elf, &size);
    long page = sysconf(_SC_PAGESIZE);
    b->dmap = NULL;
    b->dmap_len = 0;
    if (!raw || size == 0 || page <= 0 || (uintptr_t)raw % (uintptr_t)page)
        return;
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        unsigned long long lo, hi, off, ino;
        char perms[8];
        unsigned maj, min;
        if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu", &lo, &hi, perms, &off, &maj, &min,
                   &ino) != 7 ||
            lo != (uintptr_t)raw)
            continue;
        if (ino != 0 && perms[0] == 'r' && perms[1] == '-' && off == 0 && hi > lo) {
            b->dmap = raw;
            b->dmap_len = (size_t)(hi - lo) < size ? (size_t)(hi - lo) : size;
        }
        break;
    }
    fclose(f);
}

static int recycle_dwarf(builder *b, Dwarf **dbg, Elf *delf, const alt_file *alt)
{
    ftab_reset(&b->dies_ft); /* they point into the old handle */
    ftab_reset(&b->lines_ft);
    dwarf_end(*dbg);
    drop_mapped(b);
    b->rows_held = 0;
    b->dbg = NULL;
    if (!(*dbg = dwarf_begin_elf(delf, DWARF_C_READ, NULL)))
        return berr(b, FL_SYM_ENOMEM, "reopening DWARF: %s", dwarf_errmsg(-1));
    b->dbg = *dbg;
    if (alt->dbg)
        dwarf_setalt(*dbg, alt->dbg);
    return 0;
}

static int build_dwarf(builder *b, Elf *delf, const char *dwarf_path)
{
    Dwarf *dbg = dwarf_begin_elf(delf, DWARF_C_READ, NULL);
    if (!dbg)
        return 0; /* no DWARF: symbol table only */
    b->has_dwarf = 1;
    b->dbg = dbg;
    alt_file alt = {.fd = -1};
    b->alt_missing = link_alt(dbg, dwarf_path, b->opts, &alt, b->alt_id, sizeof b->alt_id,
                              b->alt_path, sizeof b->alt_path) == ALT_MISSING;
    /* The units, then which addresses are whose (step 1), before any is
     * read, so that each unit's answer can be computed as it is read. */
    Dwarf_Off off = 0, next;
    size_t hsize;
    Dwarf_Half version;
    int guard = 0;
    while (dwarf_next_unit(dbg, off, &next, &hsize, &version, NULL, NULL, NULL, NULL, NULL) == 0) {
        if (next <= off || ++guard > (1 << 24))
            break;
        Dwarf_Die cudie;
        if (dwarf_offdie(dbg, off + hsize, &cudie)) {
            int tag = dwarf_tag(&cudie);
            if (tag == DW_TAG_compile_unit || tag == DW_TAG_partial_unit ||
                tag == DW_TAG_skeleton_unit) {
                cu_info *cu = vec_push(&b->cus);
                if (!cu) {
                    berr(b, FL_SYM_ENOMEM, "units");
                    break;
                }
                cu->off = off;
                cu->next_off = next;
                cu->die_off = off + hsize;
                cu->die = cudie;
                cu->version = version;
            }
        }
        off = next;
    }
    if (b->rc == 0 && build_aranges(b, dbg, &b->aranges) == 0)
        index_aranges(b);
    for (size_t i = 0; i < b->cus.len && b->rc == 0; i++) {
        size_t budget = g_rows_held >= 0 ? (size_t)g_rows_held
                                         : LIBDW_ROWS_HELD + (size_t)LIBDW_ROWS_PER_UNIT * i;
        if (b->rows_held >= budget && recycle_dwarf(b, &dbg, delf, &alt))
            break;
        const cu_info *cu = &VEC_AT(b->cus, cu_info, i);
        Dwarf_Die cudie;
        if (!dwarf_offdie(dbg, cu->die_off, &cudie)) {
            berr(b, FL_SYM_EDWARF, "unit at %#llx: %s", (unsigned long long)cu->off,
                 dwarf_errmsg(-1));
            break;
        }
        /* Split DWARF (-gsplit-dwarf): the skeleton here, the DIEs in the
         * .dwo file libdw finds from DW_AT_dwo_name + comp_dir. */
        Dwarf_Die split;
        memset(&split, 0, sizeof split);
        uint8_t type = 0;
        bool skel = dwarf_cu_info(cudie.cu, NULL, &type, NULL, &split, NULL, NULL, NULL) == 0 &&
                    type == DW_UT_skeleton;
        b->dwo_units += skel;
        if (skel && !split.cu) {
            b->dwo_missing++; /* llvm reads the skeleton alone then: so do we */
            skel = false;
        }
        b->cu_index = i;
        b->split_dbg = skel ? dwarf_cu_getdwarf(split.cu) : NULL;
        process_cu(b, cu, &cudie, skel ? &split : &cudie);
    }
    b->dbg = b->split_dbg = NULL;
    if (b->rc == 0)
        calls_resolve(b);
    ftab_reset(&b->dies_ft);
    ftab_reset(&b->lines_ft);
    if (dbg)
        dwarf_end(dbg);
    alt_close(&alt); /* after dbg, which borrowed it */
    drop_mapped(b);
    return b->rc;
}

static int read_identity(builder *b, Elf *elf)
{
    if (elf_kind(elf) != ELF_K_ELF)
        return berr(b, FL_SYM_ENOTELF, "not an ELF file");
    GElf_Ehdr eh;
    if (!gelf_getehdr(elf, &eh))
        return berr(b, FL_SYM_ENOTELF, "bad ELF header: %s", elf_errmsg(-1));
    char pbuf[256];
    const char *problem = fl_symcheck_elf_problem(elf, pbuf, sizeof pbuf);
    if (problem)
        return berr(b, FL_SYM_ENOTELF, "%s", problem);
    const void *id = NULL;
    ssize_t n = dwelf_elf_gnu_build_id(elf, &id);
    if (n > 0 && id) {
        b->build_id_len = (size_t)n > FL_SYM_BUILD_ID_MAX ? FL_SYM_BUILD_ID_MAX : (size_t)n;
        memcpy(b->build_id, id, b->build_id_len);
    }
    b->fingerprint = symtab_fingerprint(elf);
    return 0;
}

/* The debug file of the module elf (at elf_path) the builder reads DWARF
 * from, opened: NULL ("" in debug_path) when there is none or it is no
 * ELF file, as llvm would not use it either: the file itself then. */
static Elf *open_debug_file(const builder *b, Elf *elf, const char *elf_path, char *debug_path,
                            size_t cap, int *dfd)
{
    Elf *delf = NULL;
    find_debug_file(elf, elf_path, b->build_id, b->build_id_len, debug_path, cap);
    if (debug_path[0] && (*dfd = open(debug_path, O_RDONLY | O_CLOEXEC)) >= 0)
        delf = elf_begin(*dfd, ELF_C_READ_MMAP, NULL);
    if (!delf || elf_kind(delf) != ELF_K_ELF) {
        debug_path[0] = '\0';
        if (delf)
            elf_end(delf);
        delf = NULL;
    }
    return delf;
}

static void close_files(Elf *elf, int fd, Elf *delf, int dfd)
{
    if (delf)
        elf_end(delf);
    if (dfd >= 0)
        close(dfd);
    if (elf)
        elf_end(elf);
    if (fd >= 0)
        close(fd);
}

/* When some split unit's .dwo file is found only through opts->find_dwo
 * (a server's uploads) or in a .dwp package, or is one libdw reads only
 * merged (gcc's DWARF 5 type units), a private view of the DWARF file in
 * which libdw finds every unit's file (dwo.c); v->elf stays NULL
 * otherwise. */
static int dwo_view(builder *b, Elf *delf, const char *dwarf_path, const char *elf_path,
                    const char *out_path, fl_dwo_view *v)
{
    Dwarf *dbg = dwarf_begin_elf(delf, DWARF_C_READ, NULL);
    if (!dbg)
        return 0; /* no DWARF: nothing to point anywhere */
    fl_dwo_unit *units = NULL;
    size_t n = 0;
    int rc = fl_dwo_scan(dbg, dwarf_path, elf_path, b->opts, &units, &n);
    dwarf_end(dbg);
    b->dwo_scanned = rc == 0;
    for (size_t i = 0; i < n; i++)
        b->dwo_nowhere += units[i].found == FL_DWO_NOWHERE;
    if (rc == 0)
        rc = fl_dwo_view_begin(v, dwarf_path, units, n, out_path, b->err, b->errlen);
    fl_symcache_dwo_free(units, n);
    if (rc)
        return berr(b, rc, "split DWARF");
    return 0;
}

/* ---- entry points ----------------------------------------------------- */

int fl_symcache_identify(const char *elf_path, uint8_t *build_id, size_t *build_id_len,
                         uint64_t *fingerprint, char *err, size_t errlen)
{
    builder b;
    builder_init(&b, err, errlen);
    elf_version(EV_CURRENT);
    int fd = open(elf_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return berr(&b, FL_SYM_EIO, "%s: %s", elf_path, strerror(errno));
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    int rc = elf ? read_identity(&b, elf) : berr(&b, FL_SYM_ENOTELF, "%s", elf_errmsg(-1));
    if (rc == 0) {
        memcpy(build_id, b.build_id, b.build_id_len);
        *build_id_len = b.build_id_len;
        *fingerprint = b.fingerprint;
    }
    elf_end(elf);
    close(fd);
    return rc;
}

int fl_symcache_build_mem(const void *image, size_t size, void **out, size_t *outlen,
                          fl_symbuild_stats *stats, char *err, size_t errlen)
{
    builder b;
    builder_init(&b, err, errlen);
    *out = NULL;
    *outlen = 0;
    elf_version(EV_CURRENT);
    /* elf_memory wants a writable image; work on a copy. */
    char *copy = sc_malloc(size ? size : 1);
    if (!copy)
        return berr(&b, FL_SYM_ENOMEM, "image");
    memcpy(copy, image, size);
    Elf *elf = elf_memory(copy, size);
    if (!elf) {
        free(copy);
        return berr(&b, FL_SYM_ENOTELF, "%s", elf_errmsg(-1));
    }
    if (read_identity(&b, elf) == 0 && load_symbols(&b, elf) == 0 &&
        build_dwarf(&b, elf, NULL) == 0)
        serialize(&b, out, outlen);
    if (stats && b.rc == 0) {
        memset(stats, 0, sizeof *stats);
        stats->compile_units = b.cus.len;
        stats->records = b.nrecs;
        stats->ranges = b.nranges;
        stats->symbols = b.syms.len;
        stats->string_bytes = b.strs.len;
        stats->file_bytes = *outlen;
        stats->has_dwarf = b.has_dwarf;
        stats->call_sites = b.ncalls_out;
        stats->tail_calls = b.ntails_out;
    }
    int rc = b.rc;
    builder_free(&b);
    elf_end(elf);
    free(copy);
    return rc;
}

int fl_symcache_build(const char *elf_path, const char *out_path, fl_symbuild_stats *stats,
                      char *err, size_t errlen)
{
    return fl_symcache_build_with(elf_path, out_path, NULL, stats, err, errlen);
}

int fl_symcache_build_with(const char *elf_path, const char *out_path, const fl_symbuild_opts *opts,
                           fl_symbuild_stats *stats, char *err, size_t errlen)
{
    builder b;
    builder_init(&b, err, errlen);
    b.opts = opts;
    if (!elf_path || !out_path)
        return berr(&b, FL_SYM_EINVAL, "null path");
    elf_version(EV_CURRENT);
    int fd = -1, dfd = -1, ofd = -1;
    Elf *elf = NULL, *delf = NULL;
    void *buf = NULL;
    size_t len = 0;
    char debug_path[1024] = "";
    char tmp[PATH_MAX];
    tmp[0] = '\0';
    fl_dwo_view view = {.fd = -1, .lock = -1};

    fd = open(elf_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        berr(&b, FL_SYM_EIO, "%s: %s", elf_path, strerror(errno));
        goto done;
    }
    elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (!elf) {
        berr(&b, FL_SYM_ENOTELF, "%s: %s", elf_path, elf_errmsg(-1));
        goto done;
    }
    if (read_identity(&b, elf) || load_symbols(&b, elf))
        goto done;
    delf = open_debug_file(&b, elf, elf_path, debug_path, sizeof debug_path, &dfd);
    Elf *dw_elf = delf ? delf : elf;
    /* The split units' .dwo files are looked at first (a walk over the
     * unit headers, and each .dwo's): one may be elsewhere than libdw
     * looks (a finder's, a package's: libdw 0.188 reads no packages), or
     * where it looks but in a form libdw reads only merged (gcc's DWARF 5
     * type units); otherwise libdw finds them alone. */
    if (dwo_view(&b, dw_elf, delf ? debug_path : elf_path, elf_path, out_path, &view))
        goto done;
    if (view.elf)
        dw_elf = view.elf; /* the same DWARF, its .dwo names pointed at the files found */
    find_mapped(&b, dw_elf);
    /* The debug file's own path still: a dwz link is relative to it. */
    if (build_dwarf(&b, dw_elf, delf ? debug_path : elf_path))
        goto done;
    if (!b.has_dwarf)
        debug_path[0] = '\0';
    else if (!debug_path[0])
        set_out(debug_path, sizeof debug_path, elf_path);
    if (serialize(&b, &buf, &len))
        goto done;

    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", out_path) >= sizeof tmp) {
        tmp[0] = '\0';
        berr(&b, FL_SYM_EINVAL, "output path too long");
        goto done;
    }
    ofd = mkstemp(tmp);
    if (ofd < 0) {
        berr(&b, FL_SYM_EIO, "%s: %s", tmp, strerror(errno));
        tmp[0] = '\0';
        goto done;
    }
    for (size_t w = 0; w < len;) {
        ssize_t n = write(ofd, (char *)buf + w, len - w);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            berr(&b, FL_SYM_EIO, "write %s: %s", tmp, strerror(errno));
            goto done;
        }
        w += (size_t)n;
    }
    fchmod(ofd, 0644);
    if (close(ofd) != 0) {
        ofd = -1;
        berr(&b, FL_SYM_EIO, "close %s: %s", tmp, strerror(errno));
        goto done;
    }
    ofd = -1;
    if (rename(tmp, out_path) != 0) {
        berr(&b, FL_SYM_EIO, "rename to %s: %s", out_path, strerror(errno));
        goto done;
    }
    tmp[0] = '\0';
    if (stats) {
        memset(stats, 0, sizeof *stats);
        stats->compile_units = b.cus.len;
        stats->records = b.nrecs;
        stats->ranges = b.nranges;
        stats->symbols = b.syms.len;
        stats->string_bytes = b.strs.len;
        stats->file_bytes = len;
        stats->has_dwarf = b.has_dwarf;
        stats->call_sites = b.ncalls_out;
        stats->tail_calls = b.ntails_out;
        set_out(stats->debug_path, sizeof stats->debug_path, debug_path);
        set_out(stats->alt_build_id, sizeof stats->alt_build_id, b.alt_id);
        set_out(stats->alt_path, sizeof stats->alt_path, b.alt_path);
        stats->alt_missing = b.alt_missing;
        stats->dwo_units = b.dwo_units;
        stats->dwo_missing = b.dwo_missing;
    }
done:
    if (ofd >= 0)
        close(ofd);
    if (tmp[0])
        unlink(tmp);
    free(buf);
    fl_dwo_view_end(&view);
    close_files(elf, fd, delf, dfd);
    int rc = b.rc;
    builder_free(&b);
    return rc;
}

int fl_symcache_altlink(const char *elf_path, const fl_symbuild_opts *opts, char *hex, size_t cap,
                        char *path, size_t path_cap)
{
    builder b;
    builder_init(&b, NULL, 0);
    if (cap)
        hex[0] = '\0';
    if (path && path_cap)
        path[0] = '\0';
    elf_version(EV_CURRENT);
    int fd = open(elf_path, O_RDONLY | O_CLOEXEC), dfd = -1, rc = FL_SYM_EIO;
    Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL, *delf = NULL;
    char debug_path[1024] = "", where[1024];
    if (elf && read_identity(&b, elf) == 0) {
        delf = open_debug_file(&b, elf, elf_path, debug_path, sizeof debug_path, &dfd);
        Dwarf *dbg = dwarf_begin_elf(delf ? delf : elf, DWARF_C_READ, NULL);
        rc = 0;
        if (dbg) {
            const char *name;
            const void *id;
            ssize_t n = dwelf_dwarf_gnu_debugaltlink(dbg, &name, &id);
            if (n > 0 && (size_t)n <= FL_SYM_BUILD_ID_MAX && 2 * (size_t)n < cap) {
                fl_sym_hex(id, (size_t)n, hex, cap);
                rc = 1;
                if (path) {
                    alt_file a = {.fd = -1};
                    char h2[2 * FL_SYM_BUILD_ID_MAX + 1];
                    if (link_alt(dbg, delf ? debug_path : elf_path, opts, &a, h2, sizeof h2, where,
                                 sizeof where) == ALT_LINKED)
                        set_out(path, path_cap, where);
                    dwarf_end(dbg);
                    dbg = NULL;
                    alt_close(&a);
                }
            }
            if (dbg)
                dwarf_end(dbg);
        }
    }
    close_files(elf, fd, delf, dfd);
    builder_free(&b);
    return rc;
}

int fl_symcache_dwo_list(const char *elf_path, const fl_symbuild_opts *opts, fl_dwo_unit **units,
                         size_t *n)
{
    builder b;
    builder_init(&b, NULL, 0);
    *units = NULL;
    *n = 0;
    elf_version(EV_CURRENT);
    int fd = open(elf_path, O_RDONLY | O_CLOEXEC), dfd = -1, rc = FL_SYM_EIO;
    Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL, *delf = NULL;
    char debug_path[1024] = "";
    if (elf && read_identity(&b, elf) == 0) {
        delf = open_debug_file(&b, elf, elf_path, debug_path, sizeof debug_path, &dfd);
        Dwarf *dbg = dwarf_begin_elf(delf ? delf : elf, DWARF_C_READ, NULL);
        rc = fl_dwo_scan(dbg, delf ? debug_path : elf_path, elf_path, opts, units, n);
        if (dbg)
            dwarf_end(dbg);
    }
    close_files(elf, fd, delf, dfd);
    builder_free(&b);
    return rc;
}

int fl_symcache_split_units(const char *elf_path, size_t *units, size_t *missing)
{
    fl_dwo_unit *u = NULL;
    size_t n = 0;
    *units = *missing = 0;
    int rc = fl_symcache_dwo_list(elf_path, NULL, &u, &n);
    for (size_t i = 0; i < n; i++)
        *missing += u[i].found == FL_DWO_NOWHERE;
    *units = n;
    fl_symcache_dwo_free(u, n);
    return rc;
}
