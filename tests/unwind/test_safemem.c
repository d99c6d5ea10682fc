/*
 * test_safemem.c - fl_safe_read: mapped memory reads correctly, unmapped
 * and PROT_NONE memory returns -1 without faulting, through every method
 * (process_vm_readv, the pipe fallback, registered ranges, page cache).
 */
#define _GNU_SOURCE
#include <setjmp.h> /* cmocka.h needs these first */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fl_safemem.h"

/* FIFOs open before any test (inherited, e.g. a make jobserver). */
static unsigned char g_fifo_at_start[1024];

/* Three pages: readable, PROT_NONE, unmapped. */
typedef struct fixture {
    unsigned char *base;
    size_t pg;
} fixture;

static int setup(void **state)
{
    static fixture f;
    f.pg = (size_t)sysconf(_SC_PAGESIZE);
    f.base = mmap(NULL, 3 * f.pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (f.base == MAP_FAILED)
        return -1;
    for (size_t i = 0; i < f.pg; i++)
        f.base[i] = (unsigned char)(i * 7 + 1);
    if (mprotect(f.base + f.pg, f.pg, PROT_NONE) != 0 || munmap(f.base + 2 * f.pg, f.pg) != 0)
        return -1;
    fl_safemem_clear_ranges();
    fl_safemem_forget_pages();
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    munmap(f->base, 2 * f->pg);
    fl_safemem_clear_ranges();
    fl_safemem_forget_pages();
    fl_safemem_force_method(FL_SAFEMEM_VM_READV);
    return 0;
}

static void check_reads(const fixture *f)
{
    unsigned char buf[256];
    uint64_t b = (uint64_t)(uintptr_t)f->base;
    /* Mapped: exact bytes, including at the very end of the page. */
    memset(buf, 0, sizeof buf);
    assert_int_equal(fl_safe_read(buf, b + 100, 200), 0);
    assert_memory_equal(buf, f->base + 100, 200);
    assert_int_equal(fl_safe_read(buf, b + f->pg - 8, 8), 0);
    assert_memory_equal(buf, f->base + f->pg - 8, 8);
    /* Straddling into PROT_NONE, inside PROT_NONE, unmapped, NULL, wrap. */
    assert_int_equal(fl_safe_read(buf, b + f->pg - 4, 8), -1);
    assert_int_equal(fl_safe_read(buf, b + f->pg + 16, 8), -1);
    assert_int_equal(fl_safe_read(buf, b + 2 * f->pg + 16, 8), -1);
    assert_int_equal(fl_safe_read(buf, 0, 8), -1);
    assert_int_equal(fl_safe_read(buf, 8, 8), -1);
    assert_int_equal(fl_safe_read(buf, UINT64_MAX - 3, 8), -1);
    assert_int_equal(fl_safe_read(buf, 0xffff800000000000ull, 8), -1); /* kernel */
    /* Zero bytes always succeed. */
    assert_int_equal(fl_safe_read(buf, 0, 0), 0);
    /* Reading again (now from the page cache) still gives the right bytes,
     * and the neighbours stay unreadable. */
    assert_int_equal(fl_safe_read(buf, b + 7, 16), 0);
    assert_memory_equal(buf, f->base + 7, 16);
    assert_int_equal(fl_safe_read(buf, b + f->pg + 16, 8), -1);
    uint64_t v = 0, want;
    memcpy(&want, f->base + 64, 8);
    assert_int_equal(fl_safe_read_u64(b + 64, &v), 0);
    assert_true(v == want);
}

static void test_init_picks_method(void **state)
{
    (void)state;
    assert_int_equal(fl_safemem_init(), 0);
    assert_true(fl_safemem_get_method() != FL_SAFEMEM_NONE);
}

static void test_vm_readv(void **state)
{
    fixture *f = *state;
    assert_int_equal(fl_safemem_force_method(FL_SAFEMEM_VM_READV), 0);
    fl_safemem_forget_pages();
    int before = errno = 1234;
    check_reads(f);
    assert_int_equal(errno, before); /* errno preserved */
}

/* The page probe: right bytes, unreadable pages refused, the signal mask
 * untouched (the probe is an rt_sigprocmask call that must change nothing). */
static void test_probe(void **state)
{
    fixture *f = *state;
    sigset_t before, after;
    memset(&before, 0, sizeof before); /* the kernel fills only its part */
    memset(&after, 0, sizeof after);
    assert_int_equal(fl_safemem_force_method(FL_SAFEMEM_PROBE), 0);
    fl_safemem_forget_pages();
    assert_int_equal(sigprocmask(SIG_SETMASK, NULL, &before), 0);
    int e = errno = 4321;
    check_reads(f);
    assert_int_equal(errno, e);
    assert_int_equal(sigprocmask(SIG_SETMASK, NULL, &after), 0);
    assert_memory_equal(&before, &after, sizeof before);
    fl_safemem_force_method(FL_SAFEMEM_VM_READV);
}

static void test_pipe(void **state)
{
    fixture *f = *state;
    assert_int_equal(fl_safemem_force_method(FL_SAFEMEM_PIPE), 0);
    fl_safemem_forget_pages();
    check_reads(f);
    /* A read longer than one pipe chunk. */
    static unsigned char big[20000], out[20000];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (unsigned char)(i ^ (i >> 8));
    fl_safemem_forget_pages();
    assert_int_equal(fl_safe_read(out, (uint64_t)(uintptr_t)big, sizeof big), 0);
    assert_memory_equal(out, big, sizeof big);
    fl_safemem_force_method(FL_SAFEMEM_VM_READV);
}

/* The application closed every fd and reopened one with the pipe's number:
 * the pipe method must refuse instead of writing into that file. */
static void test_pipe_fd_reused(void **state)
{
    (void)state;
    assert_int_equal(fl_safemem_force_method(FL_SAFEMEM_PIPE), 0);
    fl_safemem_forget_pages();
    static unsigned char src[64] = {1, 2, 3};
    unsigned char out[64];
    assert_int_equal(fl_safe_read(out, (uint64_t)(uintptr_t)src, sizeof src), 0);
    /* The pipe's fds: the FIFOs that were not open when main started. */
    int fds[2], nf = 0;
    for (int fd = 3; fd < 1024 && nf < 2; fd++) {
        struct stat st;
        if (!g_fifo_at_start[fd] && fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode))
            fds[nf++] = fd;
    }
    assert_int_equal(nf, 2);
    char path[] = "/tmp/fl_safemem_XXXXXX";
    int tmp = mkstemp(path);
    assert_true(tmp >= 0);
    unlink(path);
    for (int k = 0; k < 2; k++)
        assert_int_equal(dup2(tmp, fds[k]), fds[k]);
    fl_safemem_forget_pages();
    assert_int_equal(fl_safe_read(out, (uint64_t)(uintptr_t)src, sizeof src), -1);
    struct stat st;
    assert_int_equal(fstat(tmp, &st), 0);
    assert_int_equal(st.st_size, 0); /* nothing was written into the file */
    close(tmp);
    fl_safemem_force_method(FL_SAFEMEM_VM_READV);
}

static void test_none_uses_ranges_only(void **state)
{
    fixture *f = *state;
    uint64_t b = (uint64_t)(uintptr_t)f->base;
    unsigned char buf[16];
    assert_int_equal(fl_safemem_force_method(FL_SAFEMEM_NONE), 0);
    fl_safemem_forget_pages();
    assert_int_equal(fl_safe_read(buf, b, 16), -1); /* not registered */
    assert_int_equal(fl_safemem_add_range(b, b + f->pg), 0);
    assert_int_equal(fl_safe_read(buf, b, 16), 0);
    assert_memory_equal(buf, f->base, 16);
    assert_int_equal(fl_safe_read(buf, b + f->pg - 8, 16), -1); /* crosses the range end */
    assert_int_equal(fl_safemem_remove_range(b, b + f->pg), 0);
    assert_int_equal(fl_safemem_remove_range(b, b + f->pg), -1);
    assert_int_equal(fl_safe_read(buf, b, 16), -1);
    fl_safemem_force_method(FL_SAFEMEM_VM_READV);
}

static void test_range_table_limits(void **state)
{
    (void)state;
    fl_safemem_clear_ranges();
    assert_int_equal(fl_safemem_add_range(0, 100), -1);
    assert_int_equal(fl_safemem_add_range(200, 100), -1);
    for (int i = 0; i < FL_SAFEMEM_MAX_RANGES; i++)
        assert_int_equal(fl_safemem_add_range(0x1000u * (uint64_t)(i + 1), 0x1000u * (i + 1) + 8),
                         0);
    assert_int_equal(fl_safemem_add_range(0x7000000, 0x7000008), -1); /* full */
    assert_int_equal(fl_safemem_remove_range(0x3000, 0x3008), 0);
    assert_int_equal(fl_safemem_add_range(0x7000000, 0x7000008), 0); /* slot reused */
    fl_safemem_clear_ranges();
}

static void test_forget_pages(void **state)
{
    /* A page proven readable, then unmapped: after forget_pages the read
     * must go back to the checked path and fail instead of faulting. */
    (void)state;
    fl_safemem_force_method(FL_SAFEMEM_VM_READV);
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char *p = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(p != MAP_FAILED);
    p[10] = 42;
    unsigned char c = 0;
    assert_int_equal(fl_safe_read(&c, (uint64_t)(uintptr_t)p + 10, 1), 0);
    assert_int_equal(c, 42);
    munmap(p, pg);
    fl_safemem_forget_pages();
    assert_int_equal(fl_safe_read(&c, (uint64_t)(uintptr_t)p + 10, 1), -1);
}

/* fl_safe_read_fresh trusts neither the page cache nor the ranges: a page
 * proven readable (cached by fl_safe_read), then unmapped -- a dlclose()d
 * library's build id, which the trace dump checks before it reads a kept
 * string there -- is refused, not read (the page probe faulted here). */
static void test_fresh_after_unmap(void **state)
{
    (void)state;
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    fl_safemem_method methods[] = {FL_SAFEMEM_PROBE, FL_SAFEMEM_VM_READV};
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        assert_int_equal(fl_safemem_force_method(methods[i]), 0);
        unsigned char *p =
            mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        assert_true(p != MAP_FAILED);
        p[10] = 42;
        unsigned char c = 0;
        assert_int_equal(fl_safe_read(&c, (uint64_t)(uintptr_t)p + 10, 1), 0);
        assert_int_equal(fl_safe_read_fresh(&c, (uint64_t)(uintptr_t)p + 10, 1), 0);
        assert_int_equal(c, 42);
        munmap(p, pg);
        assert_int_equal(fl_safe_read_fresh(&c, (uint64_t)(uintptr_t)p + 10, 1), -1);
        fl_safemem_forget_pages();
    }
    fl_safemem_force_method(FL_SAFEMEM_VM_READV);
}

int main(void)
{
    for (int fd = 0; fd < 1024; fd++) {
        struct stat st;
        g_fifo_at_start[fd] = fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_picks_method),
        cmocka_unit_test_setup_teardown(test_vm_readv, setup, teardown),
        cmocka_unit_test_setup_teardown(test_probe, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pipe, setup, teardown),
        cmocka_unit_test_setup_teardown(test_none_uses_ranges_only, setup, teardown),
        cmocka_unit_test(test_range_table_limits),
        cmocka_unit_test(test_forget_pages),
        cmocka_unit_test(test_fresh_after_unmap),
        cmocka_unit_test(test_pipe_fd_reused), /* last: it breaks the pipe */
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
