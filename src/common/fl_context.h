/*
 * fl_context.h - the arithmetic of the compressed calling context, shared
 * by the client library (which keeps the value) and `faultline decode`
 * (which searches the call graph for the paths that give a value).
 *
 * A thread's context starts at 0.  Entering an instrumented function f
 * (-finstrument-functions) does  ctx = rotl(ctx, 1) ^ id(f);  leaving it
 * undoes exactly that:  ctx = rotr(ctx ^ id(f), 1).  So the value depends
 * on the instrumented functions active now, in their order, and on nothing
 * that already returned.
 *
 * Why not the reference's plain XOR of function addresses:
 *  - XOR forgets order (main>a>b and main>b>a collide) and cancels
 *    recursion in pairs (f>f looks like nothing); the rotation keeps both.
 *  - Addresses change with every load (ASLR), so a value printed in a log
 *    would mean nothing without that run's load map.  id(f) is instead
 *    made from f's link-time address in its file and that file's build id,
 *    so one build gives the same value for the same context in every run,
 *    on every machine: values can be compared and counted across logs.
 *  - Raw addresses share most of their bits, so XORs of different sets
 *    collide often (the reference's own example does); a 64-bit mix makes
 *    two different contexts share a value with odds of about 2^-64.
 *
 * Header-only and free of libc calls: the client's hooks inline it.
 */
#ifndef FL_CONTEXT_H
#define FL_CONTEXT_H

#include <stddef.h>
#include <stdint.h>

/* A module's seed: FNV-1a over its GNU build id (no id: the bare offset
 * basis, so modules without one collide at equal offsets). */
static inline uint64_t fl_ctx_seed(const uint8_t *build_id, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        h ^= build_id[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* A function's id: its link-time address (runtime address minus the load
 * bias) mixed with the module's seed by a bijective 64-bit finalizer
 * (MurmurHash3's fmix64). */
static inline uint64_t fl_ctx_id(uint64_t seed, uint64_t link_addr)
{
    uint64_t k = seed ^ link_addr;
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return k;
}

static inline uint64_t fl_ctx_push(uint64_t ctx, uint64_t id)
{
    return ((ctx << 1) | (ctx >> 63)) ^ id;
}

static inline uint64_t fl_ctx_pop(uint64_t ctx, uint64_t id)
{
    ctx ^= id;
    return (ctx >> 1) | (ctx << 63);
}

#endif /* FL_CONTEXT_H */
