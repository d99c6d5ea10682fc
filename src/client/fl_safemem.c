/*
 * fl_safemem.c - reading memory that may not be there, from a crash handler.
 *
 * SIGNAL-SAFE ZONE.  Everything reachable from fl_safe_read() runs inside a
 * signal handler of a possibly corrupt process: no heap, no locks, no stdio,
 * no dl_iterate_phdr, no backtrace(), no libgcc/libunwind, no TLS-touching
 * libc calls (errno is saved and restored), only async-signal-safe system
 * calls, every loop bounded, fixed-size buffers only.
 *
 * See fl_safemem.h for the three ways a read is served.  Two details:
 *
 * The range table is read without a lock while a normal-context writer may
 * be changing it.  A slot is valid when start != 0 and start < end.  The
 * writer fills a slot start-first and empties it end-first (both with
 * release stores); the reader loads start, end, start again (acquire) and
 * ignores the slot if the two starts differ, so it never pairs one
 * registration's start with another one's end.
 *
 * The page cache holds page numbers proven readable, one 64-bit word per
 * slot, written and read with relaxed atomics: a concurrent crash on another
 * thread can at worst replace an entry by another page that was also proven
 * readable.
 */
#define _GNU_SOURCE
#include "fl_safemem.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define PAGE_SHIFT 12 /* the smallest page size: correct for larger pages too */

typedef struct range_slot {
    uint64_t start, end;
} range_slot;

static range_slot g_ranges[FL_SAFEMEM_MAX_RANGES];
static size_t g_nranges;                        /* slots in use at the front (atomic) */
static size_t g_range_hint;                     /* last slot that answered (atomic, relaxed) */
static uint64_t g_pages[FL_SAFEMEM_PAGE_SLOTS]; /* (page << 1) | 1, or 0 */
static int g_method = -1;                       /* fl_safemem_method, -1 before init (atomic) */
static int g_pipe[2] = {-1, -1};
static uint64_t g_pipe_ino; /* the pipe's inode, to notice a closed and reused fd */

#define LOAD_ACQ(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define LOAD_RLX(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE_REL(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define STORE_RLX(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

/* Plain copy that neither the compiler (memcpy idiom) nor ASan (redzone
 * checks on stack memory of other frames, which the unwinder legitimately
 * reads) gets to interpose.  The caller has proven the source readable. */
__attribute__((no_sanitize_address)) static void raw_copy(void *dst, uint64_t addr, size_t n)
{
    typedef uint64_t u64u __attribute__((may_alias, aligned(1)));
    unsigned char *d = dst;
    const volatile unsigned char *s = (const volatile unsigned char *)(uintptr_t)addr;
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        *(u64u *)(d + i) = *(const volatile u64u *)(s + i);
    for (; i < n; i++)
        d[i] = s[i];
}

static int range_hit(size_t i, uint64_t a, uint64_t e)
{
    uint64_t s = LOAD_ACQ(&g_ranges[i].start);
    uint64_t en = LOAD_ACQ(&g_ranges[i].end);
    if (s == 0 || en <= s || a < s || e > en)
        return 0;
    return LOAD_ACQ(&g_ranges[i].start) == s;
}

static int in_ranges(uint64_t a, uint64_t e)
{
    size_t n = LOAD_ACQ(&g_nranges);
    size_t h = LOAD_RLX(&g_range_hint);
    if (n > FL_SAFEMEM_MAX_RANGES)
        n = FL_SAFEMEM_MAX_RANGES;
    if (h < n && range_hit(h, a, e)) /* most reads hit the slot that answered last */
        return 1;
    for (size_t i = 0; i < n; i++) {
        if (range_hit(i, a, e)) {
            STORE_RLX(&g_range_hint, i);
            return 1;
        }
    }
    return 0;
}

static size_t page_slot(uint64_t page)
{
    return (size_t)((page ^ (page >> 7)) % FL_SAFEMEM_PAGE_SLOTS);
}

static int pages_known(uint64_t a, uint64_t e)
{
    uint64_t first = a >> PAGE_SHIFT, last = (e - 1) >> PAGE_SHIFT;
    if (last - first > 4)
        return 0;
    for (uint64_t p = first; p <= last; p++)
        if (LOAD_RLX(&g_pages[page_slot(p)]) != ((p << 1) | 1))
            return 0;
    return 1;
}

static void pages_remember(uint64_t a, uint64_t e)
{
    uint64_t first = a >> PAGE_SHIFT, last = (e - 1) >> PAGE_SHIFT;
    if (last - first > 4)
        return;
    for (uint64_t p = first; p <= last; p++)
        STORE_RLX(&g_pages[page_slot(p)], (p << 1) | 1);
}

void fl_safemem_forget_pages(void)
{
    for (size_t i = 0; i < FL_SAFEMEM_PAGE_SLOTS; i++)
        STORE_RLX(&g_pages[i], 0);
}

static int read_vm(void *dst, uint64_t addr, size_t n)
{
    /* getpid() is asked every time: a cached pid would be the parent's after
     * a fork and we would silently read the parent's memory. */
    long pid = syscall(SYS_getpid);
    struct iovec local = {dst, n};
    struct iovec remote = {(void *)(uintptr_t)addr, n};
    long r = syscall(SYS_process_vm_readv, pid, &local, 1UL, &remote, 1UL, 0UL);
    if (r >= 0 && r != (long)n)
        errno = EFAULT; /* a short copy: the rest is unreadable */
    return r == (long)n ? 0 : -1;
}

/* 0 if the page holding addr is readable.  rt_sigprocmask copies the new
 * mask in before it looks at `how`, so an invalid `how` turns it into a
 * side-effect-free probe: EFAULT if the kernel could not read the 8 (or
 * _NSIG/8) bytes, EINVAL if it could.  Page 0 is never readable here (a NULL
 * mask would mean "no change" and succeed). */
static int probe_page(uint64_t page)
{
    if (page == 0)
        return -1;
    long r = syscall(SYS_rt_sigprocmask, -1, (void *)(uintptr_t)(page << PAGE_SHIFT), NULL,
                     (unsigned long)(_NSIG / 8));
    return r == -1 && errno == EINVAL ? 0 : -1;
}

/* Probes every page of [addr, addr+n) that the page cache does not know yet
 * (no pinning, no copy: the cheapest proof), then copies directly.  With
 * fresh, every page: the cache may hold one unmapped since (a dlclose()d
 * library's build id, read at install). */
static int read_probe(void *dst, uint64_t addr, size_t n, bool fresh)
{
    uint64_t first = addr >> PAGE_SHIFT, last = (addr + n - 1) >> PAGE_SHIFT;
    if (last - first > (1u << 20))
        return -1;
    for (uint64_t p = first; p <= last; p++)
        if ((fresh || LOAD_RLX(&g_pages[page_slot(p)]) != ((p << 1) | 1)) && probe_page(p) != 0)
            return -1;
    raw_copy(dst, addr, n);
    return 0;
}

static int read_pipe(void *dst, uint64_t addr, size_t n)
{
    int wfd = LOAD_RLX(&g_pipe[1]), rfd = LOAD_RLX(&g_pipe[0]);
    if (wfd < 0 || rfd < 0)
        return -1;
    /* The application may have closed our fds (daemons close them all) and
     * the numbers may now name one of its files: never write into that. */
    struct stat sw, sr;
    if (fstat(wfd, &sw) != 0 || fstat(rfd, &sr) != 0 || !S_ISFIFO(sw.st_mode) ||
        (uint64_t)sw.st_ino != g_pipe_ino || sr.st_ino != sw.st_ino)
        return -1;
    unsigned char *d = dst;
    size_t done = 0;
    /* Chunks of at most 4096 bytes: within PIPE_BUF, so a write is all or
     * nothing unless it faults, and always below the pipe's capacity. */
    for (int guard = 0; done < n && guard < 1 << 20; guard++) {
        size_t c = n - done > 4096 ? 4096 : n - done;
        ssize_t w = write(wfd, (const void *)(uintptr_t)(addr + done), c);
        ssize_t got = 0;
        if (w > 0) {
            got = read(rfd, d + done, (size_t)w);
            /* Drain anything a short read left, so the pipe stays empty. */
            for (int k = 0; k < 8 && got >= 0 && got < w; k++) {
                ssize_t more = read(rfd, d + done + got, (size_t)(w - got));
                if (more <= 0)
                    break;
                got += more;
            }
        }
        if (w != (ssize_t)c || got != w)
            return -1;
        done += c;
    }
    return done == n ? 0 : -1;
}

static int read_slow(void *dst, uint64_t addr, size_t n, bool fresh)
{
    int m = LOAD_RLX(&g_method);
    if (m == FL_SAFEMEM_PROBE)
        return read_probe(dst, addr, n, fresh);
    if (m == FL_SAFEMEM_VM_READV || m == -1)
        return read_vm(dst, addr, n);
    if (m == FL_SAFEMEM_PIPE)
        return read_pipe(dst, addr, n);
    return -1;
}

int fl_safe_read(void *dst, uint64_t addr, size_t n)
{
    if (n == 0)
        return 0;
    uint64_t end = addr + n;
    if (end < addr || addr == 0)
        return -1;
    /* The page cache first: it answers the stack reads in two loads, the
     * range table answers the rest (tables and code). */
    if (pages_known(addr, end) || in_ranges(addr, end)) {
        raw_copy(dst, addr, n);
        return 0;
    }
    int saved = errno;
    int r = read_slow(dst, addr, n, false);
    errno = saved;
    if (r == 0)
        pages_remember(addr, end);
    return r;
}

int fl_safe_read_fresh(void *dst, uint64_t addr, size_t n)
{
    uint64_t end = addr + n;
    if (n == 0)
        return 0;
    if (end < addr || addr == 0)
        return -1;
    int saved = errno;
    /* Copied and checked in one system call: another thread may dlclose()
     * the object between a probe and a copy, and the copy would fault.
     * Only where process_vm_readv is refused (not EFAULT: ENOSYS, EPERM
     * under seccomp) the method's own way, whose window the header names. */
    int r = read_vm(dst, addr, n);
    if (r && errno != EFAULT)
        r = read_slow(dst, addr, n, true);
    errno = saved;
    return r;
}

int fl_safe_read_u64(uint64_t addr, uint64_t *out)
{
    return fl_safe_read(out, addr, sizeof *out);
}

fl_safemem_method fl_safemem_get_method(void)
{
    int m = LOAD_RLX(&g_method);
    return m < 0 ? FL_SAFEMEM_NONE : (fl_safemem_method)m;
}

static int make_pipe(void)
{
    if (g_pipe[0] >= 0)
        return 0;
    int p[2];
    struct stat st;
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0)
        return -1;
    if (fstat(p[0], &st) != 0) {
        close(p[0]);
        close(p[1]);
        return -1;
    }
    g_pipe_ino = (uint64_t)st.st_ino;
    STORE_RLX(&g_pipe[0], p[0]);
    STORE_RLX(&g_pipe[1], p[1]);
    return 0;
}

int fl_safemem_force_method(fl_safemem_method m)
{
    if (m == FL_SAFEMEM_PIPE && make_pipe() != 0)
        return -1;
    STORE_RLX(&g_method, (int)m);
    return 0;
}

int fl_safemem_init(void)
{
    int m = LOAD_RLX(&g_method);
    if (m >= 0)
        return m == FL_SAFEMEM_NONE ? -1 : 0;
    /* Probe with a value on our stack: the syscall must copy it exactly. */
    volatile uint64_t probe = 0x466c7453616665ULL;
    uint64_t got = 0;
    int saved = errno;
    /* The page probe must tell a readable page (our stack) from an
     * unreadable one (the kernel's half of the address space). */
    int ok = probe_page((uint64_t)(uintptr_t)&probe >> PAGE_SHIFT) == 0 &&
             probe_page(0xffff800000000000ull >> PAGE_SHIFT) != 0;
    errno = saved;
    if (ok)
        return fl_safemem_force_method(FL_SAFEMEM_PROBE);
    ok = read_vm(&got, (uint64_t)(uintptr_t)&probe, sizeof got) == 0 && got == probe;
    errno = saved;
    if (ok)
        return fl_safemem_force_method(FL_SAFEMEM_VM_READV);
    if (make_pipe() == 0) {
        got = 0;
        STORE_RLX(&g_method, FL_SAFEMEM_PIPE);
        if (read_pipe(&got, (uint64_t)(uintptr_t)&probe, sizeof got) == 0 && got == probe)
            return 0;
    }
    STORE_RLX(&g_method, FL_SAFEMEM_NONE);
    return -1;
}

int fl_safemem_add_range(uint64_t start, uint64_t end)
{
    if (start == 0 || end <= start)
        return -1;
    size_t n = LOAD_RLX(&g_nranges);
    /* Reuse an emptied slot first so add/remove cycles do not fill the table. */
    for (size_t i = 0; i < n; i++) {
        if (LOAD_RLX(&g_ranges[i].start) == 0) {
            STORE_REL(&g_ranges[i].start, start);
            STORE_REL(&g_ranges[i].end, end);
            return 0;
        }
    }
    if (n >= FL_SAFEMEM_MAX_RANGES)
        return -1;
    STORE_REL(&g_ranges[n].start, start);
    STORE_REL(&g_ranges[n].end, end);
    STORE_REL(&g_nranges, n + 1);
    return 0;
}

int fl_safemem_remove_range(uint64_t start, uint64_t end)
{
    size_t n = LOAD_RLX(&g_nranges);
    for (size_t i = 0; i < n; i++) {
        if (LOAD_RLX(&g_ranges[i].start) == start && LOAD_RLX(&g_ranges[i].end) == end) {
            STORE_REL(&g_ranges[i].end, 0);
            STORE_REL(&g_ranges[i].start, 0);
            return 0;
        }
    }
    return -1;
}

void fl_safemem_clear_ranges(void)
{
    size_t n = LOAD_RLX(&g_nranges);
    for (size_t i = 0; i < n; i++) {
        STORE_REL(&g_ranges[i].end, 0);
        STORE_REL(&g_ranges[i].start, 0);
    }
    STORE_REL(&g_nranges, 0);
}
