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

#define NOINSTR __attribute__((no_instrument_function))
#define TLS __thread __attribute__((tls_model("initial-exec")))

struct ctx_module {
    uintptr_t start, end, bias;
    uint64_t seed;
};

static TLS uint64_t tl_ctx;
static TLS struct ctx_module tl_mods[2];

/* Whether any instrumented code ran: the crash log writes contexts only
 * then.  Set once, read by the crash handler. */
static volatile int used;

/* The build-id seed of the object whose ELF header is at `ehdr`, mapped
 * with load bias `bias`.  Headers and notes are in the first, readable
 * PT_LOAD of every object the linker produces. */
__attribute__((cold)) NOINSTR static uint64_t module_seed(const unsigned char *ehdr, uintptr_t bias)
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

/* Fills the cache's second entry for the object holding `a` and returns
 * it; an address no object holds (JIT code) gets an entry of its own
 * page, bias 0. */
__attribute__((noinline, cold)) NOINSTR static struct ctx_module *lookup(uintptr_t a)
{
    struct ctx_module *m = &tl_mods[1];
#ifdef DLFO_STRUCT_HAS_EH_DBASE /* glibc 2.35 and later */
    struct dl_find_object r;
    if (_dl_find_object((void *)a, &r) == 0 && r.dlfo_link_map) {
        m->start = (uintptr_t)r.dlfo_map_start;
        m->end = (uintptr_t)r.dlfo_map_end;
        m->bias = r.dlfo_link_map->l_addr;
        m->seed = module_seed(r.dlfo_map_start, m->bias);
        return m;
    }
#endif
    {
        m->start = a & ~(uintptr_t)4095;
        m->end = m->start + 4096;
        m->bias = 0;
        m->seed = fl_ctx_seed(NULL, 0);
    }
    return m;
}

NOINSTR static uint64_t func_id(void *fn)
{
    uintptr_t a = (uintptr_t)fn;
    struct ctx_module *m = &tl_mods[0];
    if (__builtin_expect(a - m->start >= m->end - m->start, 0)) {
        m = &tl_mods[1];
        if (a - m->start >= m->end - m->start) {
            m = lookup(a);
            if (!used)
                used = 1;
        }
        /* Most recently used first. */
        struct ctx_module t = tl_mods[0];
        tl_mods[0] = *m;
        tl_mods[1] = t;
        m = &tl_mods[0];
    }
    return fl_ctx_id(m->seed, a - m->bias);
}

FL_EXPORT NOINSTR void __cyg_profile_func_enter(void *fn, void *site)
{
    (void)site;
    tl_ctx = fl_ctx_push(tl_ctx, func_id(fn));
}

FL_EXPORT NOINSTR void __cyg_profile_func_exit(void *fn, void *site)
{
    (void)site;
    tl_ctx = fl_ctx_pop(tl_ctx, func_id(fn));
}

FL_EXPORT NOINSTR unsigned long long faultline_context(void)
{
    return tl_ctx;
}

/* For the crash handler and the other threads' dump handler. */
int fl_context_get(uint64_t *out)
{
    *out = tl_ctx;
    return used;
}
