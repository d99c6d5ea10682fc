/*
 * context.c - the compressed calling context: the -finstrument-functions
 * hooks and faultline_context().
 *
 * Each thread keeps one 64-bit value (fl_context.h has the arithmetic and
 * why it is not the reference's plain XOR).  A function's id needs its
 * module's load bias and build id; a two-entry per-thread cache of
 * [start, end) -> (bias, seed) answers almost every call, since
 * instrumented code is one or two modules.  A miss asks the dynamic
 * linker with _dl_find_object() -- lock-free and async-signal-safe, made
 * for unwinders -- and reads the build id from the object's own headers.
 * An exit usually restores the value saved at the matching entry,
 * without computing the id.  Another library can be mapped where a
 * dlclose()d one was: the enter hook drops the cache when dlclose() ran
 * since (fl_ctx_unmaps, interpose.c).
 *
 * SIGNAL-SAFE ZONE: everything here.  The hooks run wherever instrumented
 * code runs, signal handlers included, and before faultline_install();
 * they touch only thread-local memory.  longjmp() out of instrumented
 * functions skips their exit hooks and leaves the value wrong for the
 * rest of that thread's life (docs/client.md).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <string.h>

#include "fl_client.h"
#include "fl_context.h"
#include "fl_trace.h"

#define NOINSTR __attribute__((no_instrument_function))
#define TLS __thread __attribute__((tls_model("initial-exec")))

struct ctx_module {
    uintptr_t start, end, bias;
    uint64_t seed;
};

/* All of a thread's state in one block: one %fs-relative base for every
 * access.  The ring remembers, for the last 8 depths, which function was
 * entered there and the value before it, so that an exit restores the
 * value instead of recomputing the function's id.  A slot's key is the
 * function's address with the depth in its top 16 bits (code addresses
 * have 47 bits, unless a program maps code into the 57-bit space), so a
 * slot that a deeper call or a signal handler has reused since does not
 * match, and that exit recomputes. */
#define RING 8
static TLS struct {
    uint64_t ctx;
    uint64_t depth;
    uintptr_t unmaps; /* fl_ctx_unmaps when mods was last known good */
    struct ctx_module mods[2];
    struct {
        uint64_t key, prev;
    } ring[RING];
} tl;

/* Whether any instrumented code ran: the crash log writes contexts only
 * then.  Set once, read by the crash handler. */
static volatile int used;

/* The build-id seed of the object whose ELF header is at `ehdr`, mapped
 * with load bias `bias`.  Headers and notes are in the first, readable
 * PT_LOAD of every object the linker produces. */
__attribute__((cold)) NOINSTR static uint64_t module_seed(const unsigned char *ehdr,
                                                          uintptr_t bias)
{
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)ehdr;
    if (!ehdr || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_phentsize != sizeof(ElfW(Phdr)))
        return fl_ctx_seed(NULL, 0);
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(ehdr + eh->e_phoff);
    for (unsigned i = 0; i < eh->e_phnum && i < 64; i++) {
        if (ph[i].p_type != PT_NOTE)
            continue;
        const unsigned char *p = (const unsigned char *)(bias + ph[i].p_vaddr);
        size_t off = 0, len = ph[i].p_memsz;
        while (off + sizeof(ElfW(Nhdr)) <= len) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)(p + off);
            size_t desc = off + sizeof *nh + ((nh->n_namesz + 3u) & ~3u);
            if (desc + nh->n_descsz > len)
                break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                !memcmp(p + off + sizeof *nh, "GNU", 4))
                return fl_ctx_seed(p + desc, nh->n_descsz);
            off = desc + ((nh->n_descsz + 3u) & ~3u);
        }
    }
    return fl_ctx_seed(NULL, 0);
}

/* The first cache entry missed: `a`'s id from the second one (which
 * becomes the first), or else from the object holding `a`, found and put
 * first.  An address no object holds (JIT code) gets an entry of its own
 * page, bias 0. */
__attribute__((noinline, cold)) NOINSTR static uint64_t lookup(uintptr_t a)
{
    struct ctx_module m = tl.mods[1];
    if (a - m.start < m.end - m.start) {
        tl.mods[1] = tl.mods[0];
        tl.mods[0] = m;
        return fl_ctx_id(m.seed, a - m.bias);
    }
    if (!used)
        used = 1;
#ifdef DLFO_STRUCT_HAS_EH_DBASE /* glibc 2.35 and later */
    struct dl_find_object r;
    if (_dl_find_object((void *)a, &r) == 0 && r.dlfo_link_map) {
        m.start = (uintptr_t)r.dlfo_map_start;
        m.end = (uintptr_t)r.dlfo_map_end;
        m.bias = r.dlfo_link_map->l_addr;
        m.seed = module_seed(r.dlfo_map_start, m.bias);
    } else
#endif
    {
        m.start = a & ~(uintptr_t)4095;
        m.end = m.start + 4096;
        m.bias = 0;
        m.seed = fl_ctx_seed(NULL, 0);
    }
    tl.mods[1] = tl.mods[0];
    tl.mods[0] = m;
    return fl_ctx_id(m.seed, a - m.bias);
}

/* A dlclose() began or ended since this thread's cache was last checked:
 * its entries may describe objects no longer mapped where they say.  The
 * count read again (no argument: none of the hook's registers to keep
 * for the call) may be newer still; what is cached from now on is.
 * Emptied before the count is stored: a signal handler's hooks that
 * interrupt this see the old count and empty it themselves. */
__attribute__((noinline, cold)) NOINSTR static void forget(void)
{
    memset(tl.mods, 0, sizeof tl.mods); /* [0, 0): every address misses */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    tl.unmaps = __atomic_load_n(&fl_ctx_unmaps, __ATOMIC_RELAXED);
}

__attribute__((always_inline)) NOINSTR static inline uint64_t func_id(uintptr_t a)
{
    if (__builtin_expect(a - tl.mods[0].start < tl.mods[0].end - tl.mods[0].start, 1))
        return fl_ctx_id(tl.mods[0].seed, a - tl.mods[0].bias);
    return lookup(a);
}

FL_EXPORT NOINSTR void __cyg_profile_func_enter(void *fn, void *site)
{
    (void)site;
    uintptr_t a = (uintptr_t)fn;
    /* Only here, not in the exit hook: a function's module stays mapped
     * from its entry to its exit, and an entry cached since that entry
     * was right when it was made, so none can cover the function's
     * address with another module. */
    if (__builtin_expect(tl.unmaps != __atomic_load_n(&fl_ctx_unmaps, __ATOMIC_RELAXED), 0))
        forget();
    uint64_t d = tl.depth, prev = tl.ctx;
    tl.ring[d % RING].key = a | d << 48;
    tl.ring[d % RING].prev = prev;
    tl.depth = d + 1;
    tl.ctx = fl_ctx_push(prev, func_id(a));
}

FL_EXPORT NOINSTR void __cyg_profile_func_exit(void *fn, void *site)
{
    (void)site;
    uintptr_t a = (uintptr_t)fn;
    uint64_t d = tl.depth - 1;
    tl.depth = d;
    if (__builtin_expect(tl.ring[d % RING].key == (a | d << 48), 1))
        tl.ctx = tl.ring[d % RING].prev;
    else
        tl.ctx = fl_ctx_pop(tl.ctx, func_id(a));
}

FL_EXPORT NOINSTR unsigned long long faultline_context(void)
{
    return tl.ctx;
}

uint64_t fl_context_now(void)
{
    return tl.ctx;
}

/* For the crash handler and the other threads' dump handler. */
int fl_context_get(uint64_t *out)
{
    *out = tl.ctx;
    return used;
}
