/* Helpers that end up inlined from a header: a second file in the line
 * table and in DW_AT_call_file. */
static inline unsigned mix(unsigned x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    return x;
}

static inline unsigned mix2(unsigned a, unsigned b)
{
    return mix(a) + mix(b ^ 0x9e3779b9U);
}

#define SWAP(a, b)                                                                                 \
    do {                                                                                           \
        unsigned t_ = (a);                                                                         \
        (a) = (b);                                                                                 \
        (b) = t_;                                                                                  \
    } while (0)
