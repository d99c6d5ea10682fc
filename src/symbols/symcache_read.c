/*
 * symcache_read.c - map, validate and query a symcache.
 *
 * Trust nothing in the file: open() checks the magic, version, sizes,
 * that every table lies inside the file and the checksum of the body;
 * lookup() bounds-checks every index and string offset it follows and only
 * walks from a record to a parent with a smaller index, so even a file
 * whose checksum was forged cannot make a lookup loop or read outside the
 * mapping.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fl_symcache.h"
#include "symcache_format.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the symcache reader assumes a little-endian host"
#endif

struct fl_symcache {
    const uint8_t *base;
    size_t size;
    int mapped; /* 1: base came from mmap and is ours to unmap */
    fl_sc_header hdr;
    const uint64_t *baddrs;
    const uint64_t *boffs;
    const uint32_t *files;
    const uint8_t *rdata;
    const fl_sc_record *records;
    const fl_sc_symbol *symbols;
    const uint32_t *symfiles;
    const char *strings;
};

const char *fl_sym_strerror(int code)
{
    switch (code) {
#define FL_SYM_CASE_(name, value, text)                                                            \
    case value:                                                                                    \
        return text;
        FL_SYM_ERRORS(FL_SYM_CASE_)
#undef FL_SYM_CASE_
    }
    return "unknown error";
}

void fl_sym_hex(const uint8_t *id, size_t len, char *buf, size_t cap)
{
    static const char digits[] = "0123456789abcdef";
    size_t o = 0;
    if (cap == 0)
        return;
    for (size_t i = 0; i < len && o + 2 < cap; i++) {
        buf[o++] = digits[id[i] >> 4];
        buf[o++] = digits[id[i] & 15];
    }
    buf[o] = '\0';
}

/* ---- checksum ------------------------------------------------------ */

#define P1 0x9E3779B185EBCA87ull
#define P2 0xC2B2AE3D27D4EB4Full
#define P3 0x165667B19E3779F9ull
#define P4 0x85EBCA77C2B2AE63ull
#define P5 0x27D4EB2F165667C5ull

static inline uint64_t rotl64(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

static inline uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline uint64_t round64(uint64_t acc, uint64_t in)
{
    return rotl64(acc + in * P2, 31) * P1;
}

static inline uint64_t merge64(uint64_t h, uint64_t v)
{
    return (h ^ round64(0, v)) * P1 + P4;
}

uint64_t fl_sc_hash64(const void *data, size_t len)
{
    const uint8_t *p = data, *end = p + len;
    uint64_t h;
    if (len >= 32) {
        uint64_t v1 = P1 + P2, v2 = P2, v3 = 0, v4 = 0 - P1;
        const uint8_t *limit = end - 32;
        do {
            v1 = round64(v1, rd64(p));
            v2 = round64(v2, rd64(p + 8));
            v3 = round64(v3, rd64(p + 16));
            v4 = round64(v4, rd64(p + 24));
            p += 32;
        } while (p <= limit);
        h = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18);
        h = merge64(h, v1);
        h = merge64(h, v2);
        h = merge64(h, v3);
        h = merge64(h, v4);
    } else {
        h = P5;
    }
    h += (uint64_t)len;
    for (; p + 8 <= end; p += 8)
        h = rotl64(h ^ round64(0, rd64(p)), 27) * P1 + P4;
    for (; p < end; p++)
        h = rotl64(h ^ (*p * P5), 11) * P1;
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= P3;
    h ^= h >> 32;
    return h;
}

uint64_t fl_sc_file_checksum(const uint8_t *file, size_t size)
{
    fl_sc_header h;
    memcpy(&h, file, sizeof h);
    h.checksum = 0;
    uint64_t a = fl_sc_hash64(&h, sizeof h);
    uint64_t b = fl_sc_hash64(file + FL_SC_HEADER_SIZE, size - FL_SC_HEADER_SIZE);
    return a * P1 ^ b;
}

/* ---- open ---------------------------------------------------------- */

static int fail(char *err, size_t errlen, int code, const char *what)
{
    if (err && errlen)
        snprintf(err, errlen, "%s: %s", fl_sym_strerror(code), what);
    return code;
}

/* Does the table [off, off + count * esize) lie inside the file after the
 * header, aligned?  Written so that no multiplication or addition can
 * overflow. */
static int table_ok(uint64_t off, uint64_t count, uint64_t esize, uint64_t size)
{
    if (off < FL_SC_HEADER_SIZE || off > size || (off & 7) != 0)
        return 0;
    if (count > (size - off) / esize)
        return 0;
    return 1;
}

static int validate(fl_symcache *sc, char *err, size_t errlen)
{
    if (sc->size < FL_SC_HEADER_SIZE)
        return fail(err, errlen, FL_SYM_ECORRUPT, "shorter than its header");
    if (((uintptr_t)sc->base & 7) != 0)
        return fail(err, errlen, FL_SYM_EINVAL, "buffer not 8-byte aligned");
    memcpy(&sc->hdr, sc->base, sizeof sc->hdr);
    const fl_sc_header *h = &sc->hdr;
    if (memcmp(h->magic, FL_SC_MAGIC, 8) != 0)
        return fail(err, errlen, FL_SYM_ECORRUPT, "bad magic");
    if (h->version != FL_SC_VERSION)
        return fail(err, errlen, FL_SYM_EVERSION, "format version is not 1");
    if (h->header_size != FL_SC_HEADER_SIZE)
        return fail(err, errlen, FL_SYM_ECORRUPT, "bad header size");
    if (h->file_size != sc->size)
        return fail(err, errlen, FL_SYM_ECORRUPT, "size does not match the header (truncated?)");
    if (h->build_id_len > FL_SYM_BUILD_ID_MAX)
        return fail(err, errlen, FL_SYM_ECORRUPT, "bad build id length");
    if (h->blocks_count != h->ranges_count / FL_SC_BLOCK + (h->ranges_count % FL_SC_BLOCK != 0))
        return fail(err, errlen, FL_SYM_ECORRUPT, "block count does not match");
    if (!table_ok(h->baddrs_off, h->blocks_count, sizeof(uint64_t), sc->size) ||
        !table_ok(h->boffs_off, h->blocks_count, sizeof(uint64_t), sc->size) ||
        !table_ok(h->files_off, h->files_count, sizeof(uint32_t), sc->size) ||
        !table_ok(h->rdata_off, h->rdata_size, 1, sc->size) ||
        !table_ok(h->records_off, h->records_count, sizeof(fl_sc_record), sc->size) ||
        !table_ok(h->symbols_off, h->symbols_count, sizeof(fl_sc_symbol), sc->size) ||
        !table_ok(h->symfiles_off, h->symbols_count, sizeof(uint32_t), sc->size) ||
        !table_ok(h->strings_off, h->strings_size, 1, sc->size))
        return fail(err, errlen, FL_SYM_ECORRUPT, "a table lies outside the file");
    /* Record and string references are 32-bit; more would be unaddressable. */
    if (h->records_count >= FL_SC_NONE || h->strings_size >= FL_SC_NONE)
        return fail(err, errlen, FL_SYM_ECORRUPT, "table too large");
    if (h->strings_size > 0 && sc->base[h->strings_off + h->strings_size - 1] != '\0')
        return fail(err, errlen, FL_SYM_ECORRUPT, "string table not terminated");
    if (fl_sc_file_checksum(sc->base, sc->size) != h->checksum)
        return fail(err, errlen, FL_SYM_ECORRUPT, "checksum mismatch");
    sc->baddrs = (const uint64_t *)(sc->base + h->baddrs_off);
    sc->boffs = (const uint64_t *)(sc->base + h->boffs_off);
    sc->files = (const uint32_t *)(sc->base + h->files_off);
    sc->rdata = sc->base + h->rdata_off;
    sc->records = (const fl_sc_record *)(sc->base + h->records_off);
    sc->symbols = (const fl_sc_symbol *)(sc->base + h->symbols_off);
    sc->symfiles = (const uint32_t *)(sc->base + h->symfiles_off);
    sc->strings = (const char *)(sc->base + h->strings_off);
    return 0;
}

int fl_symcache_open_mem(const void *data, size_t size, fl_symcache **out, char *err,
                         size_t errlen)
{
    if (!out || (!data && size))
        return fail(err, errlen, FL_SYM_EINVAL, "null argument");
    *out = NULL;
    fl_symcache *sc = calloc(1, sizeof *sc);
    if (!sc)
        return fail(err, errlen, FL_SYM_ENOMEM, "handle");
    sc->base = data;
    sc->size = size;
    int rc = validate(sc, err, errlen);
    if (rc != 0) {
        free(sc);
        return rc;
    }
    *out = sc;
    return 0;
}

int fl_symcache_open(const char *path, fl_symcache **out, char *err, size_t errlen)
{
    if (!path || !out)
        return fail(err, errlen, FL_SYM_EINVAL, "null argument");
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fail(err, errlen, FL_SYM_EIO, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return fail(err, errlen, FL_SYM_EIO, "not a regular file");
    }
    if ((uint64_t)st.st_size < FL_SC_HEADER_SIZE) {
        close(fd);
        return fail(err, errlen, FL_SYM_ECORRUPT, "shorter than its header");
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return fail(err, errlen, FL_SYM_EIO, "mmap failed");
    fl_symcache *sc = calloc(1, sizeof *sc);
    if (!sc) {
        munmap(p, (size_t)st.st_size);
        return fail(err, errlen, FL_SYM_ENOMEM, "handle");
    }
    sc->base = p;
    sc->size = (size_t)st.st_size;
    sc->mapped = 1;
    int rc = validate(sc, err, errlen);
    if (rc != 0) {
        fl_symcache_close(sc);
        return rc;
    }
    *out = sc;
    return 0;
}

void fl_symcache_close(fl_symcache *sc)
{
    if (!sc)
        return;
    if (sc->mapped)
        munmap((void *)sc->base, sc->size);
    free(sc);
}

size_t fl_symcache_build_id(const fl_symcache *sc, const uint8_t **id)
{
    *id = sc->hdr.build_id;
    return sc->hdr.build_id_len;
}

uint64_t fl_symcache_fingerprint(const fl_symcache *sc)
{
    return sc->hdr.fingerprint;
}

/* ---- lookup -------------------------------------------------------- */

static const char *str_at(const fl_symcache *sc, uint32_t off)
{
    if (off == FL_SC_NONE || off >= sc->hdr.strings_size)
        return NULL;
    return sc->strings + off;
}

/* The symbol llvm-symbolizer takes the outermost frame's name from: the
 * last symbol starting at or before addr, unless it has a size and addr is
 * past its end.  NULL when none. */
static const fl_sc_symbol *find_symbol(const fl_symcache *sc, uint64_t addr)
{
    size_t n = sc->hdr.symbols_count;
    if (n == 0 || sc->symbols[0].addr > addr)
        return NULL;
    /* Branch-free binary search (the compiler turns the ?: into a cmov):
     * mispredicted branches were most of a lookup's cost. */
    const fl_sc_symbol *s = sc->symbols;
    while (n > 1) {
        size_t half = n / 2;
        s = s[half].addr <= addr ? s + half : s;
        n -= half;
    }
    if (s->size != 0 && addr - s->addr >= s->size)
        return NULL;
    return s;
}

/* Bounds-checked LEB128 readers: 0 on success, -1 past the end or when
 * longer than a 64-bit value can be.  The one-byte case (nearly every
 * value in practice) is inline. */
static int get_uleb_slow(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
    const uint8_t *p = *pp;
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (p >= end)
            return -1;
        uint8_t c = *p++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *pp = p;
            *out = v;
            return 0;
        }
    }
    return -1;
}

static int get_sleb_slow(const uint8_t **pp, const uint8_t *end, int64_t *out)
{
    const uint8_t *p = *pp;
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (p >= end)
            return -1;
        uint8_t c = *p++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            if (shift + 7 < 64 && (c & 0x40))
                v |= ~(uint64_t)0 << (shift + 7);
            *pp = p;
            *out = (int64_t)v;
            return 0;
        }
    }
    return -1;
}

static inline int get_uleb(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
    if (*pp < end && !(**pp & 0x80)) {
        *out = *(*pp)++;
        return 0;
    }
    return get_uleb_slow(pp, end, out);
}

static inline int get_sleb(const uint8_t **pp, const uint8_t *end, int64_t *out)
{
    if (*pp < end && !(**pp & 0x80)) {
        uint8_t c = *(*pp)++;
        *out = (c & 0x40) ? (int64_t)c - 128 : (int64_t)c;
        return 0;
    }
    return get_sleb_slow(pp, end, out);
}

/* The range entry in effect at addr: last block starting at or below
 * addr, then decode its entries while they start at or below addr.
 * Returns 0 when one was found. */
static int find_range(const fl_symcache *sc, uint64_t addr, fl_sc_range *out)
{
    size_t n = sc->hdr.blocks_count;
    if (n == 0 || sc->baddrs[0] > addr)
        return -1;
    const uint64_t *ba = sc->baddrs; /* branch-free, see find_symbol() */
    while (n > 1) {
        size_t half = n / 2;
        ba = ba[half] <= addr ? ba + half : ba;
        n -= half;
    }
    size_t bi = (size_t)(ba - sc->baddrs);
    uint64_t data_off = sc->boffs[bi];
    if (data_off >= sc->hdr.rdata_size)
        return -1;
    const uint8_t *p = sc->rdata + data_off, *end = sc->rdata + sc->hdr.rdata_size;
    uint64_t count = sc->hdr.ranges_count - (uint64_t)bi * FL_SC_BLOCK;
    if (count > FL_SC_BLOCK)
        count = FL_SC_BLOCK;
    uint64_t a = *ba, rec = 0, file = 0, line = 0, col = 0;
    int found = 0;
    for (uint64_t k = 0; k < count && p < end; k++) {
        uint8_t flags = *p++;
        uint64_t delta = flags & 15, u;
        int64_t d;
        if (!delta && get_uleb(&p, end, &delta))
            break;
        if (a + delta < a || a + delta > addr)
            break; /* this entry starts past addr: the previous one holds */
        if (flags & 0x10) {
            if (get_sleb(&p, end, &d))
                break;
            rec += (uint64_t)d;
        }
        if (flags & 0x20) {
            if (get_sleb(&p, end, &d))
                break;
            file += (uint64_t)d;
        }
        if (flags & 0x40) {
            if (get_sleb(&p, end, &d))
                break;
            line += (uint64_t)d;
        }
        if (flags & 0x80) {
            if (get_uleb(&p, end, &u))
                break;
            col = u;
        }
        a += delta;
        found = 1;
    }
    if (found) {
        out->addr = a;
        out->record = rec >= 1 && rec <= 0xFFFFFFFFull ? (uint32_t)(rec - 1) : FL_SC_NONE;
        out->file = file >= 1 && file <= 0xFFFFFFFFull ? (uint32_t)(file - 1) : FL_SC_NONE;
        out->line = (uint32_t)line;
        out->column = (uint32_t)col;
    }
    return found ? 0 : -1;
}

size_t fl_symcache_lookup(const fl_symcache *sc, uint64_t addr, fl_symframe *frames, size_t max)
{
    uint32_t rec = FL_SC_NONE;
    fl_symframe f = {NULL, NULL, 0, 0, 0};
    fl_sc_range r;
    if (find_range(sc, addr, &r) == 0) {
        rec = r.record < sc->hdr.records_count ? r.record : FL_SC_NONE;
        f.file = r.file < sc->hdr.files_count ? str_at(sc, sc->files[r.file]) : NULL;
        if (f.file) {
            f.line = r.line;
            f.column = r.column;
        }
    }
    size_t n = 0;
    for (;;) {
        const fl_sc_record *R = rec != FL_SC_NONE ? &sc->records[rec] : NULL;
        f.function = R ? str_at(sc, R->name) : NULL;
        uint32_t parent = R ? R->parent : FL_SC_NONE;
        /* Only walk to smaller indices: guarantees termination. */
        if (parent != FL_SC_NONE && (parent >= rec || n + 1 >= FL_SC_MAX_INLINE_DEPTH))
            parent = FL_SC_NONE;
        f.inlined = parent != FL_SC_NONE;
        if (n < max)
            frames[n] = f;
        n++;
        if (parent == FL_SC_NONE)
            break;
        f.file = str_at(sc, R->call_file);
        f.line = R->call_line;
        f.column = R->call_column;
        rec = parent;
    }
    /* llvm-symbolizer names the outermost frame from the symbol table
     * when a symbol covers the address (it gives linkage names). */
    const fl_sc_symbol *sym = find_symbol(sc, addr);
    if (sym && n <= max) {
        fl_symframe *last = &frames[n - 1];
        last->function = str_at(sc, sym->name);
        /* ...and, for a local symbol when DWARF gave no file, the file from
         * the STT_FILE symbol before it. */
        if (!last->file)
            last->file = str_at(sc, sc->symfiles[sym - sc->symbols]);
    }
    return n;
}
