/*
 * modules.c - the table of loaded objects (executable, shared libraries,
 * vdso) with their address ranges, load bias, unwind tables and build ids.
 *
 * fl_modules_init() runs at install time and may use dl_iterate_phdr().
 *
 * SIGNAL-SAFE ZONE from fl_modules_refresh() down: on a crash the table is
 * reconciled with the dynamic linker's own list (_r_debug's link_map chain,
 * which is plain memory) so that libraries dlopen()ed after install are
 * reported and ones dlclose()d are dropped.  Every read of that list and of
 * the objects' headers goes through fl_safe_read_fresh(): the trace-ID dump
 * refreshes while other threads run, and one of them may dlclose() an
 * object between any two reads (a page proven readable once may be gone
 * by the next).  No heap, no locks, no stdio, no dl_iterate_phdr.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fl_client.h"
#include "fl_safemem.h"
#include "fl_trace.h"

fl_modtab fl_mods;
fl_ro_seg fl_ro_segs[FL_RO_MAX];
unsigned fl_ro_n;
static unsigned ro_fill;
static bool ro_building; /* the first fl_modules_init() */
/* Per object of fl_ro_segs: where its build id was in memory and what it
 * was, for fl_ro_alive(). */
static struct {
    uint64_t id_addr;
    uint8_t id[FL_BUILD_ID_MAX];
    uint8_t id_len;
} ro_objs[FL_MAX_MODULES];

#define MAX_SEGS 8
static struct {
    uint64_t lo[MAX_SEGS], hi[MAX_SEGS];
    uint8_t n;
    bool present;     /* seen in the link_map chain during this refresh */
    uint64_t id_addr; /* runtime address of the build id's bytes */
} segs[FL_MAX_MODULES];

/* Puts an object's path, the bytes of a then those of b, into the pool
 * as m's.  A path is kept to FL_PATH_MAX - 1 bytes and to the room the
 * pool has left; a longer one keeps its end, from a '/' when it can --
 * the file name, which names the module in the OBJECT line -- and
 * m->path_cut counts the bytes left out before it (precut of them before
 * a), for OBJECT_PATH_CUT: a cut path is never passed off as whole. */
static void pool_put(fl_module *m, const char *a, size_t alen, const char *b, size_t blen,
                     size_t precut)
{
    size_t total = alen + blen, room = sizeof fl_mods.pool - fl_mods.pool_used;
    size_t keep = total < FL_PATH_MAX - 1 ? total : FL_PATH_MAX - 1;
    if (keep >= room)
        keep = room ? room - 1 : 0;
    size_t cut = total - keep;
#define AT(i) ((i) < alen ? a[i] : b[(i)-alen])
    for (size_t i = cut; (precut || cut) && i + 1 < total; i++)
        if (AT(i) == '/') {
            cut = i;
            break;
        }
    m->path_cut = (uint16_t)(precut + cut);
    m->path_off = 0; /* offset 0 is the empty string */
    if (cut == total)
        return;
    char *d = fl_mods.pool + fl_mods.pool_used;
    m->path_off = (uint32_t)fl_mods.pool_used;
    for (size_t i = cut; i < total; i++)
        *d++ = AT(i);
#undef AT
    *d = '\0';
    fl_mods.pool_used += total - cut + 1;
}

/* An object's path for OBJECT_PATH: s, len bytes, whose first precut
 * bytes are already left out (first: its first byte).  The dynamic linker
 * keeps a relative name as it found it (dlopen("./plugin.so"),
 * LD_LIBRARY_PATH=lib): that is made absolute with the working directory
 * of now -- the one it was loaded from unless the program changed
 * directory since; whoever reads the file compares its build id first.
 * Signal-safe (the getcwd system call, not libc's, which may allocate). */
static void pool_add_path(fl_module *m, const char *s, size_t len, size_t precut, char first)
{
    char cwd[FL_PATH_MAX];
    long n = 0;
    if (first != '/' && (precut || memchr(s, '/', len)) &&
        (n = syscall(SYS_getcwd, cwd, sizeof cwd)) >= 2) {
        while (!precut && len > 2 && s[0] == '.' && s[1] == '/')
            s += 2, len -= 2;
        cwd[n - 1] = '/'; /* over the NUL; "/" itself gives "//name" */
    } else {
        n = 0;
    }
    pool_put(m, cwd, (size_t)n, s, len, precut);
}

/* Parses NT_GNU_BUILD_ID out of a note segment already copied to buf;
 * returns the offset of its bytes in buf (0: none). */
static size_t parse_build_id(const uint8_t *buf, size_t len, fl_module *m)
{
    size_t off = 0;
    for (int guard = 0; guard < 64 && off + sizeof(Elf64_Nhdr) <= len; guard++) {
        Elf64_Nhdr nh;
        memcpy(&nh, buf + off, sizeof nh);
        size_t name_sz = (nh.n_namesz + 3u) & ~3u, desc_sz = (nh.n_descsz + 3u) & ~3u;
        size_t desc = off + sizeof nh + name_sz;
        if (nh.n_namesz > 64 || nh.n_descsz > 1024 || desc + nh.n_descsz > len)
            return 0;
        if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
            !memcmp(buf + off + sizeof nh, "GNU", 4) && nh.n_descsz > 0) {
            size_t n = nh.n_descsz > FL_BUILD_ID_MAX ? FL_BUILD_ID_MAX : nh.n_descsz;
            memcpy(m->build_id, buf + desc, n);
            m->build_id_len = (uint8_t)n;
            return desc;
        }
        off = desc + desc_sz;
    }
    return 0;
}

/* Fills m from an object's program headers (already in our memory). */
static void from_phdrs(fl_module *m, size_t idx, uint64_t bias, const ElfW(Phdr) *ph, size_t n)
{
    uint64_t lo = UINT64_MAX, hi = 0, xlo = UINT64_MAX, xhi = 0;
    m->bias = bias;
    segs[idx].n = 0;
    segs[idx].id_addr = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t a = bias + ph[i].p_vaddr, e = a + ph[i].p_memsz;
        if (ph[i].p_type == PT_LOAD) {
            if (a < lo)
                lo = a;
            if (e > hi)
                hi = e;
            if ((ph[i].p_flags & PF_X) && a < xlo)
                xlo = a;
            if ((ph[i].p_flags & PF_X) && e > xhi)
                xhi = e;
            if ((ph[i].p_flags & PF_R) && segs[idx].n < MAX_SEGS) {
                segs[idx].lo[segs[idx].n] = a;
                /* Up to p_memsz, to the end of its page: the loader maps
                 * the zero-filled rest (.bss) with the segment, and whole
                 * pages only, for as long as the object is loaded.  The
                 * dynamic linker's list head and its first entries live
                 * there (its early allocations use the tail of that page),
                 * so walking the list needs no probing system call. */
                segs[idx].hi[segs[idx].n] = (e + 4095) & ~(uint64_t)4095;
                segs[idx].n++;
            }
        } else if (ph[i].p_type == PT_GNU_EH_FRAME) {
            m->eh_frame_hdr = a;
        }
    }
    m->start = lo == UINT64_MAX ? 0 : lo;
    m->end = hi;
    m->exec_start = xlo == UINT64_MAX ? 0 : xlo;
    m->exec_end = xhi;
    for (size_t i = 0; i < n; i++) {
        if (ph[i].p_type != PT_NOTE || m->build_id_len)
            continue;
        uint8_t buf[2048];
        size_t len = ph[i].p_memsz < sizeof buf ? ph[i].p_memsz : sizeof buf;
        size_t at;
        if (fl_safe_read_fresh(buf, bias + ph[i].p_vaddr, len) == 0 &&
            (at = parse_build_id(buf, len, m)))
            segs[idx].id_addr = bias + ph[i].p_vaddr + at;
    }
}

#ifdef FL_STATIC_ARCHIVE
/* Where the file at `path` puts its loaded .eh_frame (plus `bias`), or 0.
 * gcc asks the linker for .eh_frame_hdr, the unwinder's sorted table,
 * in every link but a -static one, so a static program has only
 * .eh_frame, which no program header names: the section headers do,
 * in the file.  Read here, at install; the crash handler then scans the
 * section linearly.  Only in libfaultline.a -- a program using the shared
 * or the preload library is dynamic and has its table -- so the two
 * libraries' text budget does not pay for it. */
static uint64_t eh_frame_from_file(const char *path, uint64_t bias)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    uint64_t found = 0;
    ElfW(Ehdr) eh;
    ElfW(Shdr) names, sh;
    if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh &&
        !memcmp(eh.e_ident, ELFMAG, SELFMAG) && eh.e_shentsize == sizeof sh &&
        eh.e_shstrndx < eh.e_shnum &&
        pread(fd, &names, sizeof names, (off_t)(eh.e_shoff + eh.e_shstrndx * sizeof sh)) ==
            (ssize_t)sizeof names) {
        for (unsigned i = 1; i < eh.e_shnum && i < 65536 && !found; i++) {
            char name[sizeof ".eh_frame"];
            if (pread(fd, &sh, sizeof sh, (off_t)(eh.e_shoff + i * sizeof sh)) !=
                (ssize_t)sizeof sh)
                break;
            if (sh.sh_type == SHT_PROGBITS && (sh.sh_flags & SHF_ALLOC) && sh.sh_size &&
                sh.sh_name < names.sh_size &&
                pread(fd, name, sizeof name, (off_t)(names.sh_offset + sh.sh_name)) ==
                    (ssize_t)sizeof name &&
                !memcmp(name, ".eh_frame", sizeof name))
                found = bias + sh.sh_addr;
        }
    }
    close(fd);
    return found;
}
#endif

/* fl-lint: install-time */
static int phdr_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    if (fl_mods.count >= FL_MAX_MODULES) {
        fl_mods.omitted++; /* OBJECTS_OMITTED */
        return 0;
    }
    size_t idx = fl_mods.count;
    fl_module *m = &fl_mods.mods[idx];
    memset(m, 0, sizeof *m);
    from_phdrs(m, idx, info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum);
    /* Only an object with a build id may keep strings by address: the dump
     * checks that it is still the one there (fl_ro_alive). */
    bool keeps = m->build_id_len && segs[idx].id_addr;
    for (size_t i = 0; i < info->dlpi_phnum && ro_fill < FL_RO_MAX; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && ph->p_memsz)
            fl_ro_segs[ro_fill++] = (fl_ro_seg){info->dlpi_addr + ph->p_vaddr,
                                                info->dlpi_addr + ph->p_vaddr + ph->p_memsz,
                                                (uint32_t)idx, keeps && !(ph->p_flags & PF_W)};
    }
    if (keeps && ro_building) {
        ro_objs[idx].id_addr = segs[idx].id_addr;
        memcpy(ro_objs[idx].id, m->build_id, m->build_id_len);
        ro_objs[idx].id_len = m->build_id_len;
    }
    const char *name = info->dlpi_name;
    if ((!name || !*name) && idx == 0)
        name = fl_g.exe; /* the main program has no name in the list */
    if (!name)
        name = "";
    pool_add_path(m, name, fl_strlen(name), 0, *name);
#ifdef FL_STATIC_ARCHIVE
    /* The vdso has its table; the program is the file /proc/self/exe
     * names even when it was started by a relative path. */
    if (!m->eh_frame_hdr && m->end > m->start)
        m->eh_frame =
            eh_frame_from_file(idx == 0 ? "/proc/self/exe" : fl_mods.pool + m->path_off, m->bias);
#endif
    if (m->end > m->start)
        fl_mods.count++;
    return 0;
}

static int by_lo(const void *a, const void *b)
{
    const fl_ro_seg *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

int fl_modules_init(void)
{
    fl_mods.count = 0;
    fl_mods.omitted = 0;
    fl_mods.pool_used = 1; /* offset 0: "" */
    fl_mods.pool[0] = '\0';
    /* The segments for trace.c once only: it may be reading them. */
    bool segs_done = __atomic_load_n(&fl_ro_n, __ATOMIC_ACQUIRE) != 0;
    ro_fill = segs_done ? FL_RO_MAX : 0;
    ro_building = !segs_done;
    dl_iterate_phdr(phdr_cb, NULL);
    if (!segs_done) {
        qsort(fl_ro_segs, ro_fill, sizeof *fl_ro_segs, by_lo);
        __atomic_store_n(&fl_ro_n, ro_fill, __ATOMIC_RELEASE);
    }
    for (size_t i = 0; i < fl_mods.count; i++)
        for (uint8_t s = 0; s < segs[i].n; s++)
            fl_safemem_add_range(segs[i].lo[s] & ~(uint64_t)4095, segs[i].hi[s]);
    return fl_mods.count > 0 ? 0 : -1;
}

/* fl-lint: signal-safe */
/* ---- signal-safe from here ---- */

/* The segment that holds addr, or NULL. */
static const fl_ro_seg *seg_of(uint64_t addr, unsigned n)
{
    unsigned lo = 0, hi = n; /* the last segment starting at or below addr */
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (fl_ro_segs[mid].lo <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo && addr < fl_ro_segs[lo - 1].hi ? &fl_ro_segs[lo - 1] : NULL;
}

/* An object listed at install may have been dlclose()d since, and
 * another mapped where it was: a kept string is read only while the
 * build id in memory at that place is still its object's. */
bool fl_ro_alive(uint64_t addr)
{
    unsigned n = __atomic_load_n(&fl_ro_n, __ATOMIC_ACQUIRE);
    const fl_ro_seg *sg = n ? seg_of(addr, n) : NULL;
    if (!sg || !sg->ro)
        return false;
    uint8_t id[FL_BUILD_ID_MAX];
    size_t len = ro_objs[sg->obj].id_len;
    return len && !fl_safe_read_fresh(id, ro_objs[sg->obj].id_addr, len) &&
           !memcmp(id, ro_objs[sg->obj].id, len);
}

/* Here, compiled for size: a string argument costs the recorder two
 * binary searches over a few dozen segments either way. */
bool fl_ro_same_object(const void *site, const char *s)
{
    unsigned n = __atomic_load_n(&fl_ro_n, __ATOMIC_ACQUIRE);
    const fl_ro_seg *ss = n ? seg_of((uint64_t)(uintptr_t)s, n) : NULL;
    if (!ss || !ss->ro)
        return false;
    const fl_ro_seg *st = seg_of((uint64_t)(uintptr_t)site, n);
    return st && st->obj == ss->obj;
}

static fl_module *find_by_bias(uint64_t bias, uint64_t lm, size_t *idx)
{
    for (size_t i = 0; i < fl_mods.count; i++) {
        fl_module *m = &fl_mods.mods[i];
        if (m->link_map == lm || (m->link_map == 0 && m->bias == bias)) {
            *idx = i;
            return m;
        }
    }
    return NULL;
}

/* A library loaded after install: read its ELF header from memory. */
static void add_from_memory(uint64_t bias, uint64_t lm, uint64_t name_addr)
{
    if (fl_mods.count >= FL_MAX_MODULES) {
        fl_mods.omitted++;
        return;
    }
    ElfW(Ehdr) eh;
    /* A shared object's first PT_LOAD is at vaddr 0, so the header sits at
     * the bias.  Prelinked objects that break this are skipped. */
    if (fl_safe_read_fresh(&eh, bias, sizeof eh) != 0 || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        eh.e_phentsize != sizeof(ElfW(Phdr)) || eh.e_phnum == 0 || eh.e_phnum > 64)
        return;
    ElfW(Phdr) ph[64];
    if (fl_safe_read_fresh(ph, bias + eh.e_phoff, eh.e_phnum * sizeof ph[0]) != 0)
        return;
    size_t idx = fl_mods.count;
    fl_module *m = &fl_mods.mods[idx];
    memset(m, 0, sizeof *m);
    from_phdrs(m, idx, bias, ph, eh.e_phnum);
    if (m->end <= m->start)
        return;
    m->link_map = lm;
    /* The name's length, a byte at a time: it may end near a page end.
     * Then its end, which pool_put would keep of a longer one. */
    char name[FL_PATH_MAX], first = 0;
    size_t n = 0, from;
    while (name_addr && n < 4 * FL_PATH_MAX) {
        char c;
        if (fl_safe_read_fresh(&c, name_addr + n, 1) != 0 || c == '\0')
            break;
        if (!n)
            first = c;
        n++;
    }
    from = n > sizeof name - 1 ? n - (sizeof name - 1) : 0;
    if (fl_safe_read_fresh(name, name_addr + from, n - from) != 0)
        n = from = 0;
    pool_add_path(m, name, n - from, from, first);
    segs[idx].present = true;
    fl_mods.count++;
}

/* One walk of the dynamic linker's list: marks the objects of the table
 * that are still there and adds the new ones while there is room (the
 * rest are counted in fl_mods.omitted).  Returns false when there is no
 * list (a static program). */
static bool walk_link_map(void)
{
    for (size_t i = 0; i < fl_mods.count; i++)
        segs[i].present = false;
    fl_mods.omitted = 0;

    /* _r_debug is the documented debugger interface; reading it needs no
     * lock (a dlopen racing with us can at worst make us miss or half-read
     * one entry, which a checked read turns into a skipped object). */
    uint64_t lm = 0;
    if (fl_safe_read_u64((uint64_t)(uintptr_t)&_r_debug.r_map, &lm) != 0 || !lm)
        return false;
    for (int guard = 0; lm && guard < 4096; guard++) {
        struct link_map l;
        if (fl_safe_read_fresh(&l, lm, sizeof l) != 0)
            break;
        size_t idx;
        if (find_by_bias(l.l_addr, lm, &idx) ||
            (guard == 0 && fl_mods.count > 0 && (idx = 0, true))) {
            segs[idx].present = true;
        } else {
            add_from_memory(l.l_addr, lm, (uint64_t)(uintptr_t)l.l_name);
        }
        lm = (uint64_t)(uintptr_t)l.l_next;
    }
    return true;
}

void fl_modules_refresh(void)
{
    /* Twice at most: the objects dlclose()d since install leave the table
     * after a walk, and their room may then take objects that the walk
     * had to leave out. */
    for (int pass = 0; pass < 2; pass++) {
        if (!walk_link_map())
            return; /* static program or no list: trust the install-time table */

        /* Objects that are gone (dlclose): stop trusting their memory.  The
         * vdso is not in the link_map list of every libc; it never goes away. */
        size_t out = 0, before = fl_mods.count;
        for (size_t i = 0; i < fl_mods.count; i++) {
            const char *path = fl_mods.pool + fl_mods.mods[i].path_off;
            bool vdso = !memcmp(path, "linux-vdso", 10) || !memcmp(path, "linux-gate", 10);
            if (!segs[i].present && !vdso) {
                for (uint8_t s = 0; s < segs[i].n; s++)
                    fl_safemem_remove_range(segs[i].lo[s] & ~(uint64_t)4095, segs[i].hi[s]);
                continue;
            }
            if (out != i) {
                fl_mods.mods[out] = fl_mods.mods[i];
                segs[out] = segs[i];
            }
            out++;
        }
        fl_mods.count = out;
        if (!fl_mods.omitted || out == before)
            return;
    }
}

size_t fl_modules_unwind_table(fl_unwind_module *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < fl_mods.count && n < max; i++) {
        const fl_module *m = &fl_mods.mods[i];
        out[n].start = m->start;
        out[n].end = m->end;
        out[n].eh_frame_hdr = m->eh_frame_hdr;
        out[n].eh_frame = m->eh_frame;
        n++;
    }
    return n;
}
