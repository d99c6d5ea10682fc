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
#include <assert.h>
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
    const uint32_t *baddrs;
    const uint32_t *files;
    const uint8_t *rdata;
    const uint8_t *bstate, *records, *symbols; /* bit-packed */
    const uint32_t *saddrs;
    /* Version 4's call-site tables (count 0 in a version 3 file). */
    const uint8_t *calls, *tails;
    uint64_t calls_count, tails_count;
    /* Version 5's calls to other modules (count 0 before). */
    const uint8_t *xcalls;
    const uint32_t *xnames;
    size_t xcalls_size;
    uint32_t xcalls_count, xnames_count;
    const uint8_t *exports; /* FL_SC_F_EXPORTS: a bit per symbol; else NULL */
    uint64_t xcall_bits;
    uint8_t xcall_w[FL_SC_X_N];
    size_t bstate_size, records_size, symbols_size;
    uint64_t blk_bits, rec_bits, sym_bits; /* bits per entry */
    uint8_t blk_at[FL_SC_B_N], rec_at[FL_SC_R_N], sym_at[FL_SC_S_N]; /* bit offset of each field */
    const char *strings;
    /* fl_symcache_memoize(): NULL until then. */
    struct memo_blk *memo;
    uint8_t *memo_state; /* per block: MEMO_EMPTY / SEEN / BUSY / READY */
    struct bucket_index {
        uint32_t *lo; /* lo[b]: last element <= b << shift (0 if none) */
        uint64_t nb;  /* buckets; lo has nb + 1 entries */
        unsigned shift;
    } bidx, sidx; /* over baddrs and saddrs */
    /* Huffman decode tables, indexed by the next FL_SC_HUFF_BITS bits:
     * symbol << 4 | code length, HUFF_BAD = no such code. */
    uint16_t huff[FL_SC_HUFF_N][1u << FL_SC_HUFF_BITS];
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
    fl_sc_header4 h;
    memcpy(&h.base, file, sizeof h.base);
    size_t hs =
        h.base.version >= 4 && size >= FL_SC_HEADER_SIZE ? FL_SC_HEADER_SIZE : FL_SC_HEADER3_SIZE;
    memcpy(&h, file, hs);
    h.base.checksum = 0;
    uint64_t a = fl_sc_hash64(&h, hs);
    uint64_t b = fl_sc_hash64(file + hs, size - hs);
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
 * header (hsize bytes), aligned?  Written so that no multiplication or
 * addition can overflow. */
static int table_ok(uint64_t off, uint64_t count, uint64_t esize, uint64_t size, uint64_t hsize)
{
    if (off < hsize || off > size || (off & 7) != 0)
        return 0;
    if (count > (size - off) / esize)
        return 0;
    return 1;
}

/* Decode-table entry of a bit pattern that is no code: length 0 and the
 * top bit set, which no real entry has (symbols < 512), so the decoder ORs
 * its entries together and tests once per block instead of per code. */
#define HUFF_BAD 0xFFF0u
#define HUFF_BAD_BIT 0x8000u

static uint64_t packed_bytes(uint64_t count, uint64_t bits)
{
    return (count * bits + 7) / 8 + 8; /* count < 2^32, bits <= 160 */
}

/* Builds the decode table of one alphabet from its code lengths; -1 when
 * the lengths are not a prefix code (Kraft sum over 1). */
static int huff_table(const uint8_t *packed_len, unsigned nsyms, uint16_t *tab)
{
    uint8_t len[FL_SC_HUFF_SYMS];
    for (unsigned i = 0; i < nsyms; i++)
        len[i] = (packed_len[i / 2] >> (i & 1 ? 4 : 0)) & 15;
    const unsigned L = FL_SC_HUFF_BITS;
    unsigned count[FL_SC_HUFF_BITS + 1] = {0}, next[FL_SC_HUFF_BITS + 2];
    uint64_t kraft = 0;
    for (unsigned i = 0; i < nsyms; i++) {
        if (len[i] > L)
            return -1;
        count[len[i]]++;
        if (len[i])
            kraft += (uint64_t)1 << (L - len[i]);
    }
    if (kraft > ((uint64_t)1 << L))
        return -1;
    count[0] = 0;
    unsigned c = 0;
    for (unsigned l = 1; l <= L; l++) {
        c = (c + count[l - 1]) << 1;
        next[l] = c;
    }
    for (unsigned j = 0; j < (1u << L); j++)
        tab[j] = HUFF_BAD;
    for (unsigned i = 0; i < nsyms; i++) {
        unsigned l = len[i];
        if (!l)
            continue;
        unsigned v = next[l]++, r = 0;
        for (unsigned k = 0; k < l; k++)
            r |= ((v >> k) & 1u) << (l - 1 - k);
        for (unsigned j = r; j < (1u << L); j += 1u << l)
            tab[j] = (uint16_t)(i << 4 | l);
    }
    return 0;
}

/* Field (bit offset at, width w <= 32) of entry i of a packed table.
 * Callers pass i < the table's count only, and validate() checked that
 * the table has its 8 bytes of padding, so the 64-bit load stays inside
 * (size is kept for the assertion of that in debug builds). */
static inline uint32_t packed(const uint8_t *p, size_t size, uint64_t bits, size_t i, unsigned at,
                              unsigned w)
{
    uint64_t pos = (uint64_t)i * bits + at, v;
    assert((pos >> 3) + 8 <= size);
    (void)size;
    memcpy(&v, p + (pos >> 3), 8);
    return (uint32_t)((v >> (pos & 7)) & (((uint64_t)1 << w) - 1));
}

#define XCALL_F(sc, i, f)                                                                          \
    packed((sc)->xcalls, (sc)->xcalls_size, (sc)->xcall_bits, (i),                                 \
           (f) == FL_SC_X_SITE ? 0u : (sc)->xcall_w[FL_SC_X_SITE], (sc)->xcall_w[f])

static uint32_t rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* The call-site tables, once their place is checked: sorted and without
 * duplicates (the lookups binary-search them), and every name a string
 * of the table.  NULL when valid, else what is wrong. */
static const char *calls_invalid(const fl_symcache *sc)
{
    uint64_t nstr = sc->hdr.strings_size;
    for (uint64_t i = 0; i < sc->calls_count; i++) {
        const uint8_t *c = sc->calls + i * FL_SC_CALL_SIZE;
        if (i > 0 && rd32(c - FL_SC_CALL_SIZE) >= rd32(c))
            return "call sites not sorted";
        uint32_t name = rd32(c + 8);
        if (name != FL_SC_NONE && name >= nstr)
            return "call site name outside the string table";
    }
    for (uint64_t i = 0; i < sc->tails_count; i++) {
        const uint8_t *t = sc->tails + i * FL_SC_TAIL_SIZE;
        if (i > 0) {
            const uint8_t *p = t - FL_SC_TAIL_SIZE;
            uint64_t a = (uint64_t)rd32(p) << 32 | rd32(p + 4);
            uint64_t b = (uint64_t)rd32(t) << 32 | rd32(t + 4);
            if (a >= b)
                return "tail calls not sorted";
        }
        uint32_t name = rd32(t + 12);
        if (name != FL_SC_NONE && name >= nstr)
            return "tail call name outside the string table";
    }
    for (uint32_t i = 0; i < sc->xnames_count; i++)
        if (sc->xnames[i] >= nstr)
            return "call name outside the string table";
    for (uint32_t i = 0; i < sc->xcalls_count; i++) {
        if (i > 0 && XCALL_F(sc, i - 1, FL_SC_X_SITE) >= XCALL_F(sc, i, FL_SC_X_SITE))
            return "call sites to other modules not sorted";
        if ((uint32_t)XCALL_F(sc, i, FL_SC_X_NAME) >= sc->xnames_count)
            return "call to another module without a name";
    }
    return NULL;
}

static int validate(fl_symcache *sc, char *err, size_t errlen)
{
    if (sc->size < FL_SC_HEADER3_SIZE)
        return fail(err, errlen, FL_SYM_ECORRUPT, "shorter than its header");
    if (((uintptr_t)sc->base & 7) != 0)
        return fail(err, errlen, FL_SYM_EINVAL, "buffer not 8-byte aligned");
    memcpy(&sc->hdr, sc->base, sizeof sc->hdr);
    const fl_sc_header *h = &sc->hdr;
    if (memcmp(h->magic, FL_SC_MAGIC, 8) != 0)
        return fail(err, errlen, FL_SYM_ECORRUPT, "bad magic");
    if (h->version < FL_SC_VERSION_MIN || h->version > FL_SC_VERSION)
        return fail(err, errlen, FL_SYM_EVERSION, "format version is not " FL_SC_VERSION_STR);
    uint64_t hs = h->version >= 4 ? FL_SC_HEADER_SIZE : FL_SC_HEADER3_SIZE;
    if (h->header_size != hs || sc->size < hs)
        return fail(err, errlen, FL_SYM_ECORRUPT, "bad header size");
    fl_sc_header4 x; /* the version 4 part; zero in a version 3 file */
    memset(&x, 0, sizeof x);
    if (h->version >= 4)
        memcpy(&x, sc->base, sizeof x);
    else
        x.calls_off = x.tails_off = hs; /* empty tables */
    if (h->version < 5) {
        /* Reserved then: zero, and empty tables. */
        for (const uint8_t *p = (const uint8_t *)&x.xcalls_off; p < (const uint8_t *)(&x + 1); p++)
            if (*p)
                return fail(err, errlen, FL_SYM_ECORRUPT, "reserved header bytes not zero");
        x.xcalls_off = x.xnames_off = hs;
    }
    uint64_t xbits = 0;
    for (int f = 0; f < FL_SC_X_N; f++) {
        if (x.xcall_w[f] > 32)
            return fail(err, errlen, FL_SYM_ECORRUPT, "bad call field width");
        xbits += x.xcall_w[f];
    }
    uint64_t xsz = packed_bytes(x.xcalls_count, xbits);
    if (h->file_size != sc->size)
        return fail(err, errlen, FL_SYM_ECORRUPT, "size does not match the header (truncated?)");
    if (h->build_id_len > FL_SYM_BUILD_ID_MAX)
        return fail(err, errlen, FL_SYM_ECORRUPT, "bad build id length");
    if (h->ranges_count > ((uint64_t)1 << 40)) /* keeps blocks_count < 2^32 */
        return fail(err, errlen, FL_SYM_ECORRUPT, "too many ranges");
    if (h->blocks_count != h->ranges_count / FL_SC_BLOCK + (h->ranges_count % FL_SC_BLOCK != 0))
        return fail(err, errlen, FL_SYM_ECORRUPT, "block count does not match");
    /* References are 32-bit; more would be unaddressable. */
    if (h->records_count >= FL_SC_NONE || h->strings_size >= FL_SC_NONE ||
        h->symbols_count >= FL_SC_NONE || h->files_count >= FL_SC_NONE ||
        h->rdata_size > FL_SC_NONE)
        return fail(err, errlen, FL_SYM_ECORRUPT, "table too large");
    sc->blk_bits = sc->rec_bits = sc->sym_bits = 0;
    for (int f = 0; f < FL_SC_B_N; f++) {
        if (h->blk_w[f] > 32)
            return fail(err, errlen, FL_SYM_ECORRUPT, "bad block field width");
        sc->blk_at[f] = (uint8_t)sc->blk_bits;
        sc->blk_bits += h->blk_w[f];
    }
    for (int f = 0; f < FL_SC_R_N; f++) {
        if (h->rec_w[f] > 32)
            return fail(err, errlen, FL_SYM_ECORRUPT, "bad record field width");
        sc->rec_at[f] = (uint8_t)sc->rec_bits;
        sc->rec_bits += h->rec_w[f];
    }
    for (int f = 0; f < FL_SC_S_N; f++) {
        if (h->sym_w[f] > 32)
            return fail(err, errlen, FL_SYM_ECORRUPT, "bad symbol field width");
        sc->sym_at[f] = (uint8_t)sc->sym_bits;
        sc->sym_bits += h->sym_w[f];
    }
    uint64_t bsz = packed_bytes(h->blocks_count, sc->blk_bits);
    uint64_t rsz = packed_bytes(h->records_count, sc->rec_bits);
    uint64_t ssz = packed_bytes(h->symbols_count, sc->sym_bits);
    if (!table_ok(h->baddrs_off, h->blocks_count, sizeof(uint32_t), sc->size, hs) ||
        !table_ok(h->bstate_off, bsz, 1, sc->size, hs) ||
        !table_ok(h->huff_off, FL_SC_HUFF_SIZE, 1, sc->size, hs) ||
        !table_ok(h->files_off, h->files_count, sizeof(uint32_t), sc->size, hs) ||
        !table_ok(h->rdata_off, h->rdata_size, 1, sc->size, hs) ||
        !table_ok(h->records_off, rsz, 1, sc->size, hs) ||
        !table_ok(h->symbols_off, ssz, 1, sc->size, hs) ||
        !table_ok(h->saddrs_off, h->symbols_count, sizeof(uint32_t), sc->size, hs) ||
        !table_ok(h->strings_off, h->strings_size, 1, sc->size, hs) ||
        !table_ok(x.calls_off, x.calls_count, FL_SC_CALL_SIZE, sc->size, hs) ||
        !table_ok(x.tails_off, x.tails_count, FL_SC_TAIL_SIZE, sc->size, hs) ||
        !table_ok(x.xcalls_off, xsz, 1, sc->size, hs) ||
        !table_ok(x.xnames_off, x.xnames_count, sizeof(uint32_t), sc->size, hs))
        return fail(err, errlen, FL_SYM_ECORRUPT, "a table lies outside the file");
    for (size_t i = 0; i < sizeof x.reserved; i++)
        if (x.reserved[i])
            return fail(err, errlen, FL_SYM_ECORRUPT, "reserved header bytes not zero");
    if (h->rdata_size < 8)
        return fail(err, errlen, FL_SYM_ECORRUPT, "range data lacks its padding");
    if (h->strings_size > 0 && sc->base[h->strings_off + h->strings_size - 1] != '\0')
        return fail(err, errlen, FL_SYM_ECORRUPT, "string table not terminated");
    if (fl_sc_file_checksum(sc->base, sc->size) != h->checksum)
        return fail(err, errlen, FL_SYM_ECORRUPT, "checksum mismatch");
    sc->calls = sc->base + x.calls_off;
    sc->calls_count = x.calls_count;
    sc->tails = sc->base + x.tails_off;
    sc->tails_count = x.tails_count;
    sc->xcalls = sc->base + x.xcalls_off;
    sc->xcalls_size = (size_t)xsz;
    sc->xcalls_count = x.xcalls_count;
    sc->xcall_bits = xbits;
    memcpy(sc->xcall_w, x.xcall_w, sizeof sc->xcall_w);
    sc->xnames = (const uint32_t *)(sc->base + x.xnames_off);
    sc->xnames_count = x.xnames_count;
    sc->exports = NULL;
    if (h->flags & FL_SC_F_EXPORTS) {
        uint64_t eo =
            (x.xnames_off + (uint64_t)x.xnames_count * sizeof(uint32_t) + 7) & ~(uint64_t)7;
        if (h->version < 5 || !table_ok(eo, (h->symbols_count + 7) / 8, 1, sc->size, hs))
            return fail(err, errlen, FL_SYM_ECORRUPT, "the exports table lies outside the file");
        sc->exports = sc->base + eo;
    }
    const char *why = calls_invalid(sc);
    if (why)
        return fail(err, errlen, FL_SYM_ECORRUPT, why);
    static const unsigned nsyms[] = FL_SC_HUFF_ALPHA_SYMS, at[] = FL_SC_HUFF_ALPHA_AT;
    for (int a = 0; a < FL_SC_HUFF_N; a++)
        if (huff_table(sc->base + h->huff_off + at[a], nsyms[a], sc->huff[a]) != 0)
            return fail(err, errlen, FL_SYM_ECORRUPT, "bad Huffman code lengths");
    sc->baddrs = (const uint32_t *)(sc->base + h->baddrs_off);
    sc->bstate = sc->base + h->bstate_off;
    sc->bstate_size = (size_t)bsz;
    sc->files = (const uint32_t *)(sc->base + h->files_off);
    sc->rdata = sc->base + h->rdata_off;
    sc->records = sc->base + h->records_off;
    sc->records_size = (size_t)rsz;
    sc->symbols = sc->base + h->symbols_off;
    sc->symbols_size = (size_t)ssz;
    sc->saddrs = (const uint32_t *)(sc->base + h->saddrs_off);
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
    if ((uint64_t)st.st_size < FL_SC_HEADER3_SIZE) {
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
    free(sc->memo);
    free(sc->memo_state);
    free(sc->bidx.lo);
    free(sc->sidx.lo);
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

unsigned fl_symcache_builder(const fl_symcache *sc)
{
    return sc->hdr.builder;
}

int fl_symcache_has_dwarf(const fl_symcache *sc)
{
    return (sc->hdr.flags & FL_SC_F_DWARF) != 0;
}

int fl_symcache_alt_missing(const fl_symcache *sc)
{
    return (sc->hdr.flags & FL_SC_F_ALT_MISSING) != 0;
}

int fl_symcache_dwo_missing(const fl_symcache *sc)
{
    return (sc->hdr.flags & FL_SC_F_DWO_MISSING) != 0;
}

unsigned fl_symcache_dwo_missing_count(const fl_symcache *sc)
{
    return fl_symcache_dwo_missing(sc) ? sc->hdr.flags >> FL_SC_F_DWO_COUNT_SHIFT : 0;
}

/* ---- lookup -------------------------------------------------------- */

static const char *str_at(const fl_symcache *sc, uint32_t off)
{
    if (off == FL_SC_NONE || off >= sc->hdr.strings_size)
        return NULL;
    return sc->strings + off;
}

/* File index + 1 (0: none) -> path. */
static const char *file_at(const fl_symcache *sc, uint64_t idx1)
{
    if (idx1 == 0 || idx1 > sc->hdr.files_count)
        return NULL;
    return str_at(sc, sc->files[idx1 - 1]);
}

/* The 57 or more bits of p[0..size) from bit pos on; bytes past the end
 * read as 0.  Valid tables end in 8 bytes of padding, so the fast path is
 * the one taken unless the file lies. */
static uint64_t load_bits(const uint8_t *p, uint64_t size, uint64_t pos)
{
    uint64_t byte = pos >> 3, v = 0;
    if (byte + 8 <= size) {
        memcpy(&v, p + byte, 8);
    } else {
        for (uint64_t i = 0; byte + i < size && i < 8; i++)
            v |= (uint64_t)p[byte + i] << (8 * i);
    }
    return v >> (pos & 7);
}

#define REC_F(sc, i, f)                                                                            \
    packed((sc)->records, (sc)->records_size, (sc)->rec_bits, (i), (sc)->rec_at[f],                \
           (sc)->hdr.rec_w[f])
#define BLK_F(sc, i, f)                                                                            \
    packed((sc)->bstate, (sc)->bstate_size, (sc)->blk_bits, (i), (sc)->blk_at[f],                  \
           (sc)->hdr.blk_w[f])
#define SYM_F(sc, i, f)                                                                            \
    packed((sc)->symbols, (sc)->symbols_size, (sc)->sym_bits, (i), (sc)->sym_at[f],                \
           (sc)->hdr.sym_w[f])
/* Index of the last element <= rel of the sorted a[0..n), given n >= 1
 * and a[0] <= rel.  With a bucket index (fl_symcache_memoize) the search
 * starts from the one or two candidates of rel's bucket.  The binary
 * search is branch-free (the compiler turns the ?: into a cmov):
 * mispredicted branches were most of a lookup's cost. */
static inline size_t last_le(const uint32_t *a, size_t n, uint64_t rel,
                             const struct bucket_index *ix)
{
    const uint32_t *s = a;
    if (ix->lo) {
        uint64_t b = rel >> ix->shift;
        if (b >= ix->nb)
            return n - 1; /* past every bucket: past every element */
        s = a + ix->lo[b];
        n = (size_t)(ix->lo[b + 1] - ix->lo[b]) + 1;
    }
    while (n > 1) {
        size_t half = n / 2;
        s = s[half] <= rel ? s + half : s;
        n -= half;
    }
    return (size_t)(s - a);
}

/* The symbol llvm-symbolizer takes the outermost frame's name from: the
 * last symbol starting at or before addr, unless it has a size and addr is
 * past its end.  Its index, or SIZE_MAX when none. */
static size_t find_symbol(const fl_symcache *sc, uint64_t addr)
{
    size_t n = sc->hdr.symbols_count;
    if (n == 0 || addr < sc->hdr.base_addr)
        return SIZE_MAX;
    uint64_t rel = addr - sc->hdr.base_addr;
    if (sc->saddrs[0] > rel)
        return SIZE_MAX;
    size_t i = last_le(sc->saddrs, n, rel, &sc->sidx);
    uint32_t size = SYM_F(sc, i, FL_SC_S_SIZE);
    if (size != 0 && rel - sc->saddrs[i] >= size)
        return SIZE_MAX;
    return i;
}

/* A bit stream inside rdata, read LSB first.  buf holds cnt unread bits
 * (and, above them, the same bits the next refill ORs in again); ptr is
 * the byte the next refill loads from.  The refill has no branch on the
 * bit count (F. Giesen's "variant 4"), so a Huffman code costs a table
 * load, a shift and an OR on the critical path.  Past the end of rdata
 * the stream reads zeros; the caller detects running off it.  The data
 * pointer and size live apart (bitsrc), shared by the two streams of a
 * block: fewer live registers keep the bit buffers out of the stack. */
typedef struct bitsrc {
    const uint8_t *p;
    uint64_t size;
} bitsrc;

typedef struct bitrd {
    uint64_t ptr, buf;
    unsigned cnt;
} bitrd;

/* The bit reader's functions are forced inline: taking a bitrd's address
 * in a call that is not inlined puts it in memory, and every bit
 * operation then goes through loads and stores. */
#define BR_INLINE static inline __attribute__((always_inline))

/* Afterwards cnt >= 56. */
BR_INLINE void br_refill(const bitsrc *src, bitrd *r)
{
    uint64_t v;
    if (r->ptr + 8 <= src->size)
        memcpy(&v, src->p + r->ptr, 8);
    else
        v = load_bits(src->p, src->size, r->ptr * 8); /* zero-padded */
    r->buf |= v << r->cnt;
    r->ptr += (63 - r->cnt) >> 3;
    r->cnt |= 56;
}

/* Bits consumed so far, from the start of rdata. */
BR_INLINE uint64_t br_pos(const bitrd *r)
{
    return r->ptr * 8 - r->cnt;
}

/* Next symbol from decode table tab (needs cnt >= FL_SC_HUFF_BITS).  A
 * bit pattern that is no code consumes nothing, gives symbol 0xFFF and
 * sets HUFF_BAD's bits in *chk: the caller checks once, not per code. */
BR_INLINE unsigned huff_get(const uint16_t *tab, bitrd *r, unsigned *chk)
{
    unsigned e = tab[r->buf & ((1u << FL_SC_HUFF_BITS) - 1)];
    unsigned l = e & 15u;
    r->buf >>= l;
    r->cnt -= l;
    *chk |= e;
    return e >> 4;
}

BR_INLINE uint64_t br_take(bitrd *r, unsigned n) /* n <= 32 <= cnt */
{
    uint64_t v = r->buf & (((uint64_t)1 << n) - 1);
    r->buf >>= n;
    r->cnt -= n;
    return v;
}

/* An escaped value (see symcache_format.h); a bad code sets HUFF_BAD in
 * *chk.  Leaves cnt >= 13, enough for one more code. */
BR_INLINE uint64_t esc_get(const bitsrc *src, const uint16_t *tab, bitrd *r, unsigned *chk)
{
    br_refill(src, r);
    unsigned n = huff_get(tab, r, chk); /* cnt >= 45 after it */
    unsigned m = n - 1; /* low bits below the implied top bit */
    if (__builtin_expect(n - 2u < 32u, 1)) /* 2..33: one take */
        return br_take(r, m) | (uint64_t)1 << m;
    if (n < 2 || n > 64) { /* 0 and 1 are the values themselves */
        *chk |= n > 64 ? HUFF_BAD : 0;
        return n == 1;
    }
    uint64_t v = br_take(r, 32);
    br_refill(src, r);
    return v | br_take(r, m - 32) << 32 | (uint64_t)1 << m;
}

static inline uint64_t unzigzag(uint64_t z)
{
    return (z >> 1) ^ (0 - (z & 1));
}

/* The range entry in effect at addr: last block starting at or below
 * addr, then decode its entries while they start at or below addr.
 * Returns 0 when one was found.
 *
 * Both streams are decoded in the same loop: they are two independent
 * dependency chains (table load, shift, next table load) the CPU runs side
 * by side.  No check per code: bad codes and running off the data are
 * checked once at the end, and a damaged block gives "not found".  The
 * escapes are marked unlikely so the compiler lays them out of the loop
 * and keeps the bit buffers in registers (~5 % of a lookup). */
BR_INLINE int find_range(const fl_symcache *sc, uint64_t addr, fl_sc_range *out)
{
    size_t n = sc->hdr.blocks_count;
    if (n == 0 || addr < sc->hdr.base_addr)
        return -1;
    uint64_t rel = addr - sc->hdr.base_addr;
    if (sc->baddrs[0] > rel)
        return -1;
    size_t bi = last_le(sc->baddrs, n, rel, &sc->bidx);
    const uint32_t *ba = sc->baddrs + bi;
    uint64_t off = BLK_F(sc, bi, FL_SC_B_OFF);
    const bitsrc src = {sc->rdata, sc->hdr.rdata_size};
    bitrd r0 = {off, 0, 0};
    bitrd r1 = {off + BLK_F(sc, bi, FL_SC_B_SPLIT), 0, 0};
    if (r0.ptr >= src.size || r1.ptr >= src.size)
        return -1;
    uint64_t count = sc->hdr.ranges_count - (uint64_t)bi * FL_SC_BLOCK;
    if (count > FL_SC_BLOCK)
        count = FL_SC_BLOCK;
    /* One base for all six decode tables (constant offsets from it). */
    const uint16_t *h = sc->huff[0];
#define T_(a) (h + (size_t)(a) * (1u << FL_SC_HUFF_BITS))
    unsigned chk = 0;
    /* rem: how far addr lies past the current entry's start. */
    uint64_t rem = rel - *ba;
    uint64_t rec = BLK_F(sc, bi, FL_SC_B_REC), file = BLK_F(sc, bi, FL_SC_B_FILE);
    uint64_t line = BLK_F(sc, bi, FL_SC_B_LINE);
    /* The first entry codes only its column (previous 0). */
    br_refill(&src, &r0);
    unsigned c = huff_get(T_(FL_SC_HUFF_COL), &r0, &chk);
    uint64_t col = c < FL_SC_COL_ESC     ? c
                   : c == FL_SC_COL_ESC ? esc_get(&src, T_(FL_SC_HUFF_ESC), &r0, &chk)
                                        : 0;
    for (uint64_t k = 1; k < count; k++) {
        /* Without escapes an entry takes at most 2 codes of stream 0 and
         * 3 of stream 1 (<= 33 bits), and an escape refills itself: one
         * refill per entry and stream. */
        br_refill(&src, &r0);
        br_refill(&src, &r1);
        unsigned s = huff_get(T_(FL_SC_HUFF_AD), &r0, &chk);
        uint64_t delta = __builtin_expect(s != 0, 1) ? s : esc_get(&src, T_(FL_SC_HUFF_ESC), &r0, &chk);
        if (delta > rem)
            break; /* this entry starts past addr: the previous one holds */
        rem -= delta;
        c = huff_get(T_(FL_SC_HUFF_COL), &r0, &chk);
        unsigned head = huff_get(T_(FL_SC_HUFF_HEAD), &r1, &chk);
        col = c < FL_SC_COL_ESC ? c : col; /* COL_SAME: a cmov, not a branch */
        if (__builtin_expect(c == FL_SC_COL_ESC, 0))
            col = esc_get(&src, T_(FL_SC_HUFF_ESC), &r0, &chk);
        if (head & FL_SC_H_REC) {
            s = huff_get(T_(FL_SC_HUFF_REC), &r1, &chk);
            rec += unzigzag(__builtin_expect(s < FL_SC_SMALL_ESC, 1) ? s
                                                : esc_get(&src, T_(FL_SC_HUFF_ESC), &r1, &chk));
        }
        if (head & FL_SC_H_FILE) {
            s = huff_get(T_(FL_SC_HUFF_FILE), &r1, &chk);
            file += unzigzag(__builtin_expect(s < FL_SC_FILE_ESC, 1) ? s
                                                : esc_get(&src, T_(FL_SC_HUFF_ESC), &r1, &chk));
        }
        uint64_t lz = head & FL_SC_H_LINE;
        if (__builtin_expect(lz == FL_SC_HEAD_LESC, 0))
            lz = esc_get(&src, T_(FL_SC_HUFF_ESC), &r1, &chk);
        line += unzigzag(lz);
    }
#undef T_
    if ((chk & HUFF_BAD_BIT) || br_pos(&r0) > src.size * 8 || br_pos(&r1) > src.size * 8)
        return -1; /* a bad code, or ran off the data: corrupt */
    out->addr = addr - rem;
    out->record = rec >= 1 && rec <= 0xFFFFFFFFull ? (uint32_t)(rec - 1) : FL_SC_NONE;
    out->file = file >= 1 && file <= 0xFFFFFFFFull ? (uint32_t)(file - 1) : FL_SC_NONE;
    out->line = (uint32_t)line;
    out->column = (uint32_t)col;
    return 0;
}

/* ---- memoized lookups ---------------------------------------------
 *
 * A batch of lookups (`faultline symbolicate` fed thousands of addresses)
 * comes back to the same blocks again and again, and most of a lookup is
 * decoding ~10 entries of its block plus two binary searches whose every
 * step waits for a load.  fl_symcache_memoize() keeps each block's
 * entries once decoded (memo_blk) and adds a bucket index over the
 * address space that leaves both searches one or two candidates.
 *
 * A block is filled on its second lookup (the first only marks it SEEN):
 * filling decodes all 20 entries where a plain lookup stops at the
 * address, ~10 on average, so a batch that visits most blocks once pays
 * about what it paid without the memo.
 *
 * Lookups stay safe to run concurrently: every state change is a
 * compare-and-swap; the thread that moves SEEN -> BUSY fills the slot and
 * publishes it (READY, with release order); a lookup that finds it BUSY
 * decodes on its own, so no lookup ever waits. */

enum { MEMO_EMPTY, MEMO_SEEN, MEMO_BUSY, MEMO_READY };

typedef uint32_t v4u32 __attribute__((vector_size(16)));
_Static_assert(FL_SC_BLOCK % 4 == 0, "memo scan takes four starts at a time");

typedef struct memo_blk {
    uint32_t addr[FL_SC_BLOCK]; /* start - base_addr; UINT32_MAX past valid */
    uint32_t rec[FL_SC_BLOCK], file[FL_SC_BLOCK], line[FL_SC_BLOCK], col[FL_SC_BLOCK];
    uint32_t valid; /* entries decoded without error, from the first */
    uint32_t count; /* entries in the block */
} memo_blk;

static uint32_t ref_of(uint64_t v1) /* stored index + 1 -> index or NONE */
{
    return v1 >= 1 && v1 <= 0xFFFFFFFFull ? (uint32_t)(v1 - 1) : FL_SC_NONE;
}

/* Decodes all of block bi into m: the loop of find_range() without its
 * stop at the address, checking after each entry so that m->valid counts
 * the entries before the first bad code / overrun (a damaged block then
 * answers only for those, and "not found" beyond them). */
static __attribute__((noinline)) void memo_fill(const fl_symcache *sc, size_t bi, memo_blk *m)
{
    uint64_t count = sc->hdr.ranges_count - (uint64_t)bi * FL_SC_BLOCK;
    if (count > FL_SC_BLOCK)
        count = FL_SC_BLOCK;
    m->count = (uint32_t)count;
    m->valid = 0;
    for (unsigned k = 0; k < FL_SC_BLOCK; k++)
        m->addr[k] = UINT32_MAX;
    uint64_t off = BLK_F(sc, bi, FL_SC_B_OFF);
    const bitsrc src = {sc->rdata, sc->hdr.rdata_size};
    bitrd r0 = {off, 0, 0};
    bitrd r1 = {off + BLK_F(sc, bi, FL_SC_B_SPLIT), 0, 0};
    if (r0.ptr >= src.size || r1.ptr >= src.size)
        return;
    const uint16_t *h = sc->huff[0];
#define T_(a) (h + (size_t)(a) * (1u << FL_SC_HUFF_BITS))
    unsigned chk = 0;
    uint64_t start = sc->baddrs[bi];
    uint64_t rec = BLK_F(sc, bi, FL_SC_B_REC), file = BLK_F(sc, bi, FL_SC_B_FILE);
    uint64_t line = BLK_F(sc, bi, FL_SC_B_LINE);
    br_refill(&src, &r0);
    unsigned c = huff_get(T_(FL_SC_HUFF_COL), &r0, &chk);
    uint64_t col = c < FL_SC_COL_ESC     ? c
                   : c == FL_SC_COL_ESC ? esc_get(&src, T_(FL_SC_HUFF_ESC), &r0, &chk)
                                        : 0;
    for (uint64_t k = 0;;) {
        if ((chk & HUFF_BAD_BIT) || br_pos(&r0) > src.size * 8 || br_pos(&r1) > src.size * 8 ||
            start >= UINT32_MAX)
            break;
        m->addr[k] = (uint32_t)start;
        m->rec[k] = ref_of(rec);
        m->file[k] = ref_of(file);
        m->line[k] = (uint32_t)line;
        m->col[k] = (uint32_t)col;
        m->valid = (uint32_t)++k;
        if (k == count)
            break;
        br_refill(&src, &r0);
        br_refill(&src, &r1);
        unsigned s = huff_get(T_(FL_SC_HUFF_AD), &r0, &chk);
        start += s != 0 ? s : esc_get(&src, T_(FL_SC_HUFF_ESC), &r0, &chk);
        c = huff_get(T_(FL_SC_HUFF_COL), &r0, &chk);
        unsigned head = huff_get(T_(FL_SC_HUFF_HEAD), &r1, &chk);
        col = c < FL_SC_COL_ESC ? c : col;
        if (c == FL_SC_COL_ESC)
            col = esc_get(&src, T_(FL_SC_HUFF_ESC), &r0, &chk);
        if (head & FL_SC_H_REC) {
            s = huff_get(T_(FL_SC_HUFF_REC), &r1, &chk);
            rec += unzigzag(s < FL_SC_SMALL_ESC ? s : esc_get(&src, T_(FL_SC_HUFF_ESC), &r1, &chk));
        }
        if (head & FL_SC_H_FILE) {
            s = huff_get(T_(FL_SC_HUFF_FILE), &r1, &chk);
            file += unzigzag(s < FL_SC_FILE_ESC ? s : esc_get(&src, T_(FL_SC_HUFF_ESC), &r1, &chk));
        }
        uint64_t lz = head & FL_SC_H_LINE;
        if (lz == FL_SC_HEAD_LESC)
            lz = esc_get(&src, T_(FL_SC_HUFF_ESC), &r1, &chk);
        line += unzigzag(lz);
    }
#undef T_
    /* A lookup past the last valid entry of a damaged block cannot know
     * where the bad entry starts: "not found" for all of it. */
}

/* find_range() inlined once more, out of the way of fl_symcache_lookup's
 * own copy (one copy shared by both paths was not inlined, and the plain
 * path got 3 % slower). */
static __attribute__((noinline)) int find_range_once(const fl_symcache *sc, uint64_t addr,
                                                     fl_sc_range *out)
{
    return find_range(sc, addr, out);
}

/* find_range() through the memo.  Same answers for a valid file. */
static __attribute__((noinline)) int find_range_memo(const fl_symcache *sc, uint64_t addr,
                                                     fl_sc_range *out)
{
    size_t n = sc->hdr.blocks_count;
    if (n == 0 || addr < sc->hdr.base_addr)
        return -1;
    uint64_t rel = addr - sc->hdr.base_addr;
    if (sc->baddrs[0] > rel)
        return -1;
    size_t bi = last_le(sc->baddrs, n, rel, &sc->bidx);
    memo_blk *m = &sc->memo[bi];
    uint8_t *st = &sc->memo_state[bi];
    uint8_t state = __atomic_load_n(st, __ATOMIC_ACQUIRE);
    if (state != MEMO_READY) {
        /* First visit: note it and decode as without the memo (a block
         * seen once costs no more than before); second: fill.  BUSY: another
         * thread is filling it. */
        uint8_t expect = state;
        if (state == MEMO_BUSY ||
            !__atomic_compare_exchange_n(st, &expect, state == MEMO_EMPTY ? MEMO_SEEN : MEMO_BUSY,
                                         0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED) ||
            state == MEMO_EMPTY)
            return find_range_once(sc, addr, out);
        memo_fill(sc, bi, m);
        __atomic_store_n(st, MEMO_READY, __ATOMIC_RELEASE);
    }
    /* Entry starts are ascending (deltas are unsigned, capped below
     * UINT32_MAX), the first is <= rel, the unused slots hold UINT32_MAX:
     * the entry is the count of starts <= rel after the first.  Clamping
     * rel keeps that true for addresses past 4 GiB. */
    uint32_t r32 = rel < UINT32_MAX - 1 ? (uint32_t)rel : UINT32_MAX - 1;
    /* Four at a time (SSE2 on x86-64): a compare gives -1 per start <=
     * rel, so the lanes sum to minus the count, the first included. */
    v4u32 acc = {0, 0, 0, 0}, rv = {r32, r32, r32, r32};
    for (unsigned i = 0; i < FL_SC_BLOCK; i += 4) {
        v4u32 x;
        memcpy(&x, m->addr + i, sizeof x);
        acc += (v4u32)(x <= rv);
    }
    unsigned k = (unsigned)(0u - (acc[0] + acc[1] + acc[2] + acc[3])) - 1;
    if (k >= m->valid || (k + 1 == m->valid && m->valid < m->count))
        return -1;
    out->addr = sc->hdr.base_addr + m->addr[k];
    out->record = m->rec[k];
    out->file = m->file[k];
    out->line = m->line[k];
    out->column = m->col[k];
    return 0;
}

/* Bucket index over the sorted a[0..n), n >= 1: about one element per
 * bucket. */
static int bucket_build(struct bucket_index *ix, const uint32_t *a, size_t n)
{
    uint64_t span = (uint64_t)a[n - 1] + 1;
    unsigned shift = 0;
    while ((span >> shift) > n)
        shift++;
    uint64_t nb = (span >> shift) + 1; /* nb << shift > a[n - 1] */
    uint32_t *lo = malloc((size_t)(nb + 1) * sizeof *lo);
    if (!lo)
        return -1;
    size_t i = 0;
    for (uint64_t b = 0; b <= nb; b++) {
        uint64_t start = b << shift;
        while (i + 1 < n && a[i + 1] <= start)
            i++;
        lo[b] = (uint32_t)i;
    }
    ix->lo = lo;
    ix->nb = nb;
    ix->shift = shift;
    return 0;
}

int fl_symcache_memoize(fl_symcache *sc)
{
    if (!sc)
        return FL_SYM_EINVAL;
    if (sc->memo)
        return 0;
    size_t nb = sc->hdr.blocks_count;
    if (nb > 0) {
        if (!sc->bidx.lo && bucket_build(&sc->bidx, sc->baddrs, nb) != 0)
            return FL_SYM_ENOMEM;
        sc->memo_state = calloc(nb, 1);
        /* calloc of this size maps zero pages: only the blocks looked
         * up cost memory. */
        sc->memo = calloc(nb, sizeof *sc->memo);
        if (!sc->memo || !sc->memo_state) {
            free(sc->memo);
            free(sc->memo_state);
            sc->memo = NULL;
            sc->memo_state = NULL;
            return FL_SYM_ENOMEM;
        }
    }
    if (sc->hdr.symbols_count > 0 && !sc->sidx.lo &&
        bucket_build(&sc->sidx, sc->saddrs, sc->hdr.symbols_count) != 0)
        return FL_SYM_ENOMEM;
    return 0;
}

size_t fl_symcache_lookup(const fl_symcache *sc, uint64_t addr, fl_symframe *frames, size_t max)
{
    uint32_t rec = FL_SC_NONE;
    fl_symframe f = {NULL, NULL, 0, 0, 0};
    fl_sc_range r;
    if ((sc->memo ? find_range_memo(sc, addr, &r) : find_range(sc, addr, &r)) == 0) {
        rec = r.record < sc->hdr.records_count ? r.record : FL_SC_NONE;
        f.file = r.file < sc->hdr.files_count ? str_at(sc, sc->files[r.file]) : NULL;
        if (f.file) {
            f.line = r.line;
            f.column = r.column;
        }
    }
    size_t n = 0;
    for (;;) {
        uint32_t parent = FL_SC_NONE;
        f.function = NULL;
        if (rec != FL_SC_NONE) {
            uint32_t name = REC_F(sc, rec, FL_SC_R_NAME);
            f.function = name ? str_at(sc, name - 1) : NULL;
            uint32_t d = REC_F(sc, rec, FL_SC_R_PARENT);
            /* Only walk to smaller indices: guarantees termination. */
            if (d != 0 && d <= rec && n + 1 < FL_SC_MAX_INLINE_DEPTH)
                parent = rec - d;
        }
        f.inlined = parent != FL_SC_NONE;
        if (n < max)
            frames[n] = f;
        n++;
        if (parent == FL_SC_NONE)
            break;
        f.file = file_at(sc, REC_F(sc, rec, FL_SC_R_FILE));
        f.line = REC_F(sc, rec, FL_SC_R_LINE);
        f.column = REC_F(sc, rec, FL_SC_R_COL);
        rec = parent;
    }
    /* llvm-symbolizer names the outermost frame from the symbol table
     * when a symbol covers the address (it gives linkage names). */
    size_t si = find_symbol(sc, addr);
    if (si != SIZE_MAX && n <= max) {
        fl_symframe *last = &frames[n - 1];
        uint32_t name = SYM_F(sc, si, FL_SC_S_NAME);
        last->function = name ? str_at(sc, name - 1) : NULL;
        /* ...and, for a local symbol when DWARF gave no file, the file from
         * the STT_FILE symbol before it. */
        if (!last->file)
            last->file = file_at(sc, SYM_F(sc, si, FL_SC_S_FILE));
    }
    return n;
}

/* ---- call sites ----------------------------------------------------- */

int fl_symcache_has_calls(const fl_symcache *sc)
{
    return sc->hdr.version >= 4 && (sc->hdr.flags & FL_SC_F_CALLS) != 0;
}

/* Stored target + 1 (0: none) and name -> the public form. */
static void call_out(const fl_symcache *sc, uint64_t site, uint32_t target1, uint32_t name,
                     fl_symcall *out)
{
    out->site = site;
    out->target = target1 ? sc->hdr.base_addr + target1 - 1 : FL_SYMCALL_NONE;
    out->target_name = str_at(sc, name);
}

/* The index of the first entry of a table sorted by its leading u32 whose
 * key is >= key (count when none is). */
static uint64_t first_at_least(const uint8_t *tab, uint64_t count, size_t stride, uint32_t key)
{
    uint64_t lo = 0, hi = count;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (rd32(tab + mid * stride) < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The call to another module's function at rel (xcalls[]), into out. */
static int xcall_at(const fl_symcache *sc, uint64_t ret, uint32_t rel, fl_symcall *out)
{
    uint32_t lo = 0, hi = sc->xcalls_count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (XCALL_F(sc, mid, FL_SC_X_SITE) < rel)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == sc->xcalls_count || XCALL_F(sc, lo, FL_SC_X_SITE) != rel)
        return 0;
    if (out)
        call_out(sc, ret, 0, sc->xnames[XCALL_F(sc, lo, FL_SC_X_NAME)], out);
    return 1;
}

int fl_symcache_call_at(const fl_symcache *sc, uint64_t ret, fl_symcall *out)
{
    if (!sc || ret < sc->hdr.base_addr || ret - sc->hdr.base_addr > UINT32_MAX)
        return 0;
    uint32_t rel = (uint32_t)(ret - sc->hdr.base_addr);
    uint64_t lo = first_at_least(sc->calls, sc->calls_count, FL_SC_CALL_SIZE, rel);
    const uint8_t *c = sc->calls + lo * FL_SC_CALL_SIZE;
    if (lo < sc->calls_count && rd32(c) == rel) {
        if (out)
            call_out(sc, ret, rd32(c + 4), rd32(c + 8), out);
        return 1;
    }
    return xcall_at(sc, ret, rel, out);
}

uint64_t fl_symcache_symbol_at(const fl_symcache *sc, uint64_t addr)
{
    size_t si = sc ? find_symbol(sc, addr) : SIZE_MAX;
    return si == SIZE_MAX ? FL_SYMCALL_NONE : sc->hdr.base_addr + sc->saddrs[si];
}

/* Does the symbol name sym name name (or name@VERSION)? */
static int sym_named(const char *sym, const char *name, size_t len)
{
    return sym && sym[0] == name[0] && !strncmp(sym, name, len) && (!sym[len] || sym[len] == '@');
}

uint64_t fl_symcache_symbol_named(const fl_symcache *sc, const char *name)
{
    /* Exported functions only: what a call through the PLT reaches.  A
     * symcache that does not say which symbols those are answers none. */
    if (!sc || !sc->exports || !name || !*name)
        return FL_SYMCALL_NONE;
    size_t len = strlen(name);
    uint64_t found = FL_SYMCALL_NONE;
    for (size_t i = 0; i < sc->hdr.symbols_count; i++) {
        if (!(sc->exports[i / 8] >> (i % 8) & 1))
            continue;
        uint32_t n1 = SYM_F(sc, i, FL_SC_S_NAME);
        if (!n1 || !sym_named(str_at(sc, n1 - 1), name, len))
            continue;
        uint64_t a = sc->hdr.base_addr + sc->saddrs[i];
        if (found != FL_SYMCALL_NONE && found != a)
            return FL_SYMCALL_NONE; /* two functions of that name */
        found = a;
    }
    return found;
}

size_t fl_symcache_tail_calls(const fl_symcache *sc, uint64_t entry, fl_symcall *out, size_t max)
{
    if (!sc || entry < sc->hdr.base_addr || entry - sc->hdr.base_addr > UINT32_MAX)
        return 0;
    uint32_t rel = (uint32_t)(entry - sc->hdr.base_addr);
    uint64_t lo = first_at_least(sc->tails, sc->tails_count, FL_SC_TAIL_SIZE, rel);
    size_t n = 0;
    for (uint64_t i = lo; i < sc->tails_count; i++, n++) {
        const uint8_t *t = sc->tails + i * FL_SC_TAIL_SIZE;
        if (rd32(t) != rel)
            break;
        if (out && n < max)
            call_out(sc, sc->hdr.base_addr + rd32(t + 4), rd32(t + 8), rd32(t + 12), &out[n]);
    }
    return n;
}
