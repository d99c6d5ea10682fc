/*
 * idfilter.c - crash ids seen, as a growing chain of blocked Bloom filters.
 *
 * Blocked: the eight bits of an id lie in one 64-byte block, so a query
 * costs one cache miss per filter rather than eight (the filters are
 * megabytes: ~10 bits per id).  At 10 bits per id the false-positive rate
 * is ~1 % (a little above a classic Bloom filter's 0.8 %).
 *
 * Growing: a full filter stays as it is (its ids cannot be re-hashed: they
 * are not kept) and the next, twice as large, takes the new ids; a query
 * asks each, and each adds its ~1 % of false positives.  The first is sized
 * from the caller's estimate but holds 2^20 ids at least (1.3 MB): a
 * server restarted on a large database starts with one filter, and one
 * that grows from empty to 10 M ids has four (3 % false positives).
 */
#include "fl_idfilter.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define BITS_PER_ID 10
#define MIN_IDS (1u << 20)
#define MAX_FILTERS 40

typedef struct bloom {
    uint64_t (*blocks)[8]; /* 512 bits each */
    size_t nblocks, cap, n;
} bloom;

struct fl_idfilter {
    bloom f[MAX_FILTERS];
    size_t nf;
    bool broken; /* could not grow: answer "maybe" to everything */
};

/* Eight bytes at a time, each word multiplied in and folded, then a 64-bit
 * finaliser (splitmix64's).  A byte at a time (FNV-1a) was a chain of 36
 * dependent multiplies per UUID, as long as the cache miss it precedes. */
uint64_t fl_idfilter_hash(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325u ^ n, w;
    for (; n >= 8; s += 8, n -= 8) {
        memcpy(&w, s, 8);
        h = (h ^ w) * 0x100000001b3u;
        h ^= h >> 29;
    }
    if (n) {
        w = 0;
        memcpy(&w, s, n);
        h = (h ^ w) * 0x100000001b3u;
        h ^= h >> 29;
    }
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9u;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebu;
    h ^= h >> 31;
    return h;
}

static int bloom_init(bloom *b, size_t cap)
{
    size_t nblocks = (cap * BITS_PER_ID + 511) / 512;
    if (!(b->blocks = calloc(nblocks, sizeof *b->blocks)))
        return -1;
    b->nblocks = nblocks;
    b->cap = cap;
    b->n = 0;
    return 0;
}

/* The block from the high half of the hash; eight bit positions in it
 * (nine bits each: 0..511), seven from a second mix of the hash and one
 * from its low bits. */
static size_t block_of(const bloom *b, uint64_t h)
{
    /* (h >> 32) scaled to [0, nblocks): a multiply, not a division. */
    return (size_t)(((h >> 32) * (uint64_t)b->nblocks) >> 32);
}

static void probes(const bloom *b, uint64_t h, size_t *blk, unsigned pos[8])
{
    *blk = block_of(b, h);
    uint64_t g = h * 0x9e3779b97f4a7c15u;
    g ^= g >> 29;
    for (int i = 0; i < 7; i++)
        pos[i] = (unsigned)(g >> (9 * i)) & 511;
    pos[7] = (unsigned)(h ^ (h >> 17)) & 511;
}

fl_idfilter *fl_idfilter_new(size_t expected)
{
    fl_idfilter *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    if (bloom_init(&f->f[0], expected > MIN_IDS ? expected : MIN_IDS)) {
        free(f);
        return NULL;
    }
    f->nf = 1;
    return f;
}

void fl_idfilter_free(fl_idfilter *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->nf; i++)
        free(f->f[i].blocks);
    free(f);
}

int fl_idfilter_add(fl_idfilter *f, const char *id, size_t n)
{
    return fl_idfilter_add_h(f, fl_idfilter_hash(id, n));
}

bool fl_idfilter_maybe(const fl_idfilter *f, const char *id, size_t n)
{
    return fl_idfilter_maybe_h(f, fl_idfilter_hash(id, n));
}

void fl_idfilter_prefetch(const fl_idfilter *f, uint64_t h)
{
    for (size_t k = 0; k < f->nf; k++)
        __builtin_prefetch(f->f[k].blocks[block_of(&f->f[k], h)]);
}

int fl_idfilter_add_h(fl_idfilter *f, uint64_t h)
{
    if (f->broken)
        return -1;
    bloom *b = &f->f[f->nf - 1];
    if (b->n >= b->cap) {
        if (f->nf == MAX_FILTERS || bloom_init(&f->f[f->nf], b->cap * 2)) {
            f->broken = true;
            return -1;
        }
        b = &f->f[f->nf++];
    }
    size_t blk;
    unsigned pos[8];
    probes(b, h, &blk, pos);
    for (int i = 0; i < 8; i++)
        b->blocks[blk][pos[i] >> 6] |= (uint64_t)1 << (pos[i] & 63);
    b->n++;
    return 0;
}

bool fl_idfilter_maybe_h(const fl_idfilter *f, uint64_t h)
{
    if (f->broken)
        return true;
    for (size_t k = 0; k < f->nf; k++) {
        const bloom *b = &f->f[k];
        size_t blk;
        unsigned pos[8];
        probes(b, h, &blk, pos);
        bool all = true;
        for (int i = 0; i < 8 && all; i++)
            all = (b->blocks[blk][pos[i] >> 6] >> (pos[i] & 63)) & 1;
        if (all)
            return true;
    }
    return false;
}

size_t fl_idfilter_count(const fl_idfilter *f)
{
    size_t n = 0;
    for (size_t i = 0; i < f->nf; i++)
        n += f->f[i].n;
    return n;
}

size_t fl_idfilter_bytes(const fl_idfilter *f)
{
    size_t n = sizeof *f;
    for (size_t i = 0; i < f->nf; i++)
        n += f->f[i].nblocks * sizeof *f->f[i].blocks;
    return n;
}

/* ---- snapshots
 *
 * The filter as it is in memory, for a server that stops cleanly to hand
 * to the next start instead of reading every id stored again.  Native
 * byte order (the magic tells a foreign file), 64-bit words throughout:
 *   magic, nf, then nblocks, cap, n for each filter, then each filter's
 *   blocks, then a checksum of all the words before it.
 * A file that is not exactly that -- truncated by a crash while it was
 * written, or damaged -- is refused whole. */

#define SNAP_MAGIC 0x31305344494c4646u /* "FFLIDS01" read as a little-endian word */

static uint64_t mix(uint64_t h, const uint64_t *w, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h = (h ^ w[i]) * 0x100000001b3u;
        h ^= h >> 32;
    }
    return h;
}

int fl_idfilter_write(const fl_idfilter *f, FILE *fp)
{
    if (f->broken) {
        errno = EINVAL; /* it says "maybe" to everything: nothing to keep */
        return -1;
    }
    uint64_t head[2 + 3 * MAX_FILTERS], nh = 0;
    head[nh++] = SNAP_MAGIC;
    head[nh++] = f->nf;
    for (size_t k = 0; k < f->nf; k++) {
        head[nh++] = f->f[k].nblocks;
        head[nh++] = f->f[k].cap;
        head[nh++] = f->f[k].n;
    }
    uint64_t sum = mix(0, head, nh);
    if (fwrite(head, sizeof *head, nh, fp) != nh)
        return -1;
    for (size_t k = 0; k < f->nf; k++) {
        sum = mix(sum, f->f[k].blocks[0], f->f[k].nblocks * 8);
        if (fwrite(f->f[k].blocks, sizeof *f->f[k].blocks, f->f[k].nblocks, fp) !=
            f->f[k].nblocks)
            return -1;
    }
    return fwrite(&sum, sizeof sum, 1, fp) == 1 ? 0 : -1;
}

fl_idfilter *fl_idfilter_read(FILE *fp)
{
    struct stat st;
    uint64_t head[2 + 3 * MAX_FILTERS];
    if (fstat(fileno(fp), &st) || fread(head, sizeof *head, 2, fp) != 2 ||
        head[0] != SNAP_MAGIC || head[1] == 0 || head[1] > MAX_FILTERS ||
        fread(head + 2, sizeof *head, 3 * head[1], fp) != 3 * head[1])
        return NULL;
    size_t nf = (size_t)head[1], nh = 2 + 3 * nf;
    /* The sizes must add up to the file's before anything is allocated. */
    uint64_t words = nh + 1;
    for (size_t k = 0; k < nf; k++) {
        uint64_t nb = head[2 + 3 * k], cap = head[3 + 3 * k], n = head[4 + 3 * k];
        if (nb == 0 || nb > (UINT64_C(1) << 32) || n > cap || cap > nb * 512 ||
            words > (uint64_t)st.st_size)
            return NULL;
        words += nb * 8;
    }
    if (words * 8 != (uint64_t)st.st_size)
        return NULL;
    fl_idfilter *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    uint64_t sum = mix(0, head, nh), want;
    for (size_t k = 0; k < nf; k++) {
        bloom *b = &f->f[k];
        b->nblocks = (size_t)head[2 + 3 * k];
        b->cap = (size_t)head[3 + 3 * k];
        b->n = (size_t)head[4 + 3 * k];
        f->nf = k + 1;
        if (!(b->blocks = malloc(b->nblocks * sizeof *b->blocks)) ||
            fread(b->blocks, sizeof *b->blocks, b->nblocks, fp) != b->nblocks)
            goto bad;
        sum = mix(sum, b->blocks[0], b->nblocks * 8);
    }
    if (fread(&want, sizeof want, 1, fp) != 1 || want != sum)
        goto bad;
    return f;
bad:
    fl_idfilter_free(f);
    return NULL;
}
