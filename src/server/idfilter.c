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

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
