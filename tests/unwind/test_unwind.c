/*
 * test_unwind.c - the unwinder on synthetic CFI (exact semantics: rbp
 * frames, remember/restore_state, the PLT CFA expression, expression and
 * val_offset rules, a signal frame, an undefined RA), on the live process
 * (fl_regs_from_current in a recursion), and on garbage: random register
 * sets, random stacks, unmapped stacks, corrupt unwind tables.  Every
 * garbage walk must end, within max_frames, without a fault.
 */
#define _GNU_SOURCE
#include <setjmp.h> /* cmocka.h needs these first */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cfi_image.h"
#include "fl_safemem.h"
#include "fl_unwind.h"

/* A real, separate frame: never inlined or cloned (clang has no noclone). */
#if defined(__clang__)
#define FRAME_FN __attribute__((noinline))
#else
#define FRAME_FN __attribute__((noinline, noclone))
#endif
#include "unw_testutil.h"

static fl_unwind_module g_mods[512];
static size_t g_nmods;
static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

static int group_setup(void **state)
{
    (void)state;
    fl_safemem_init();
    g_nmods = unw_fill_modules(g_mods, 512, UNW_TABLE_HDR, 1);
    return g_nmods > 0 ? 0 : -1;
}

/* ---- synthetic ---- */

static cfi_img g_img;
static unsigned char g_stk[STK_CAP];

static void run_scenario(const fl_unwind_module *m)
{
    fl_regs regs;
    uint64_t want[4], pcs[16];
    uint8_t how[16];
    ci_build_scenario(&g_img);
    ci_scenario_stack(g_stk, &regs, want);
    fake_mem fm = {g_img.b, g_img.n, g_stk, STK_CAP};
    fl_unwind_mem mem = {fake_read, &fm};
    size_t n = fl_unwind_ex(&regs, m, 1, &mem, pcs, how, 16);
    assert_int_equal(n, 4);
    for (int i = 0; i < 4; i++) {
        assert_true(pcs[i] == want[i]);
        assert_int_equal(how[i], i == 0 ? FL_FRAME_CONTEXT : FL_FRAME_CFI);
    }
}

static void test_synthetic_hdr(void **state)
{
    (void)state;
    fl_unwind_module m = {TEXT_BASE, TEXT_BASE + 0x1000, IMG_BASE, 0};
    run_scenario(&m);
}

static void test_synthetic_scan(void **state)
{
    (void)state;
    fl_unwind_module m = {TEXT_BASE, TEXT_BASE + 0x1000, 0, IMG_BASE + EHF_OFF};
    run_scenario(&m);
}

static void test_synthetic_max_frames(void **state)
{
    (void)state;
    fl_regs regs;
    uint64_t want[4], pcs[2];
    ci_build_scenario(&g_img);
    ci_scenario_stack(g_stk, &regs, want);
    fake_mem fm = {g_img.b, g_img.n, g_stk, STK_CAP};
    fl_unwind_mem mem = {fake_read, &fm};
    fl_unwind_module m = {TEXT_BASE, TEXT_BASE + 0x1000, IMG_BASE, 0};
    assert_int_equal(fl_unwind_ex(&regs, &m, 1, &mem, pcs, NULL, 2), 2);
    assert_int_equal(fl_unwind_ex(&regs, &m, 1, &mem, pcs, NULL, 0), 0);
    regs.valid &= ~(1ull << FL_REG_PC);
    assert_int_equal(fl_unwind_ex(&regs, &m, 1, &mem, pcs, NULL, 2), 0);
}

/* Every truncation and every single-byte corruption of the image: the walk
 * ends within max_frames. */
static void test_synthetic_corrupt(void **state)
{
    (void)state;
    fl_regs regs;
    uint64_t want[4], pcs[32];
    ci_build_scenario(&g_img);
    ci_scenario_stack(g_stk, &regs, want);
    static unsigned char copy[IMG_CAP];
    fl_unwind_module mods[2] = {{TEXT_BASE, TEXT_BASE + 0x1000, IMG_BASE, 0},
                                {TEXT_BASE, TEXT_BASE + 0x1000, 0, IMG_BASE + EHF_OFF}};
    for (int mi = 0; mi < 2; mi++) {
        for (size_t len = 0; len <= g_img.n; len++) {
            fake_mem fm = {g_img.b, len, g_stk, STK_CAP};
            fl_unwind_mem mem = {fake_read, &fm};
            size_t n = fl_unwind_ex(&regs, &mods[mi], 1, &mem, pcs, NULL, 32);
            assert_true(n >= 1 && n <= 32);
        }
        for (size_t at = 0; at < g_img.n; at++) {
            for (int v = 0; v < 4; v++) {
                memcpy(copy, g_img.b, g_img.n);
                static const unsigned char vals[4] = {0x00, 0xff, 0x80, 0x0b};
                copy[at] = copy[at] == vals[v] ? (unsigned char)~vals[v] : vals[v];
                fake_mem fm = {copy, g_img.n, g_stk, STK_CAP};
                fl_unwind_mem mem = {fake_read, &fm};
                size_t n = fl_unwind_ex(&regs, &mods[mi], 1, &mem, pcs, NULL, 32);
                assert_true(n >= 1 && n <= 32);
            }
        }
    }
}

/* Factored offsets (operand * data alignment -8) that do not fit in 64
 * bits: each rule kind that multiplies, and the CFA.  They were computed
 * as int64_t products (undefined on overflow; found by fuzz_unwind,
 * fuzz/corpus/unwind/factored-offset-overflow) and wrap now, like the
 * addresses they are added to; the walk reads nothing there and ends. */
static size_t put_leb(unsigned char *p, uint64_t v, int sign)
{
    size_t n = 0;
    for (;;) {
        unsigned char b = v & 0x7f;
        v = sign ? (uint64_t)((int64_t)v >> 7) : v >> 7;
        bool done = sign ? (v == 0 && !(b & 0x40)) || (v == UINT64_MAX && (b & 0x40)) : v == 0;
        p[n++] = done ? b : (b | 0x80);
        if (done)
            return n;
    }
}

static void test_factored_offset_overflow(void **state)
{
    (void)state;
    static const uint64_t big[] = {0x1020304050607080ull, UINT64_MAX / 3, 1ull << 62,
                                   (uint64_t)INT64_MIN};
    for (size_t k = 0; k < sizeof big / sizeof *big; k++) {
        unsigned char f[128];
        size_t n = 0;
        f[n++] = 0x05, f[n++] = 3; /* offset_extended rbx */
        n += put_leb(f + n, big[k], 0);
        f[n++] = 0x11, f[n++] = 12; /* offset_extended_sf r12 */
        n += put_leb(f + n, big[k], 1);
        f[n++] = 0x2f, f[n++] = 15; /* GNU_negative_offset_extended r15 */
        n += put_leb(f + n, big[k], 0);
        f[n++] = 0x14, f[n++] = 14; /* val_offset r14 */
        n += put_leb(f + n, big[k], 0);
        f[n++] = 0x15, f[n++] = 13; /* val_offset_sf r13 */
        n += put_leb(f + n, big[k], 1);
        f[n++] = 0x80 | 16; /* offset ra: the return address far away */
        n += put_leb(f + n, big[k], 0);
        f[n++] = 0x12, f[n++] = 7; /* def_cfa_sf rsp */
        n += put_leb(f + n, big[k], 1);
        f[n++] = 0x13; /* def_cfa_offset_sf */
        n += put_leb(f + n, big[k], 1);
        ci_init(&g_img);
        size_t cie = ci_cie(&g_img, 0, ci_x86_init, sizeof ci_x86_init);
        ci_fde(&g_img, cie, TEXT_BASE + 0x100, 0x100, f, n);
        ci_finish(&g_img);
        memset(g_stk, 0, sizeof g_stk);
        fl_regs regs;
        memset(&regs, 0, sizeof regs);
        for (int i = 0; i < FL_REGS_N; i++)
            regs.r[i] = STK_BASE + 8u * (unsigned)i;
        regs.r[FL_REG_SP] = STK_BASE;
        regs.r[FL_REG_PC] = TEXT_BASE + 0x180;
        regs.valid = (1ull << FL_REGS_N) - 1;
        fl_unwind_module m = {TEXT_BASE, TEXT_BASE + 0x1000, IMG_BASE, 0};
        fake_mem fm = {g_img.b, g_img.n, g_stk, STK_CAP};
        fl_unwind_mem mem = {fake_read, &fm};
        uint64_t pcs[16];
        size_t got = fl_unwind_ex(&regs, &m, 1, &mem, pcs, NULL, 16);
        assert_true(got >= 1 && got <= 16);
        assert_true(pcs[0] == TEXT_BASE + 0x180);
    }
}

/* ---- the live process ---- */

volatile int g_sink;

FRAME_FN size_t self_recurse(int depth, uint64_t *pcs, size_t max)
{
    size_t n;
    if (depth == 0) {
        fl_regs regs;
        fl_regs_from_current(&regs);
        n = fl_unwind(&regs, g_mods, g_nmods, pcs, max);
    } else {
        n = self_recurse(depth - 1, pcs, max);
    }
    __asm__ volatile("" ::: "memory");
    g_sink += (int)n;
    return n;
}

static const char *name_of(uint64_t pc)
{
    Dl_info di;
    if (dladdr((void *)(uintptr_t)pc, &di) && di.dli_sname)
        return di.dli_sname;
    return "?";
}

void test_self_unwind(void **state); /* not static: dladdr names it */
void test_self_unwind(void **state)
{
    (void)state;
    uint64_t pcs[64];
    fl_safemem_forget_pages();
    size_t n = self_recurse(10, pcs, 64);
    assert_true(n >= 13);
    int rec = 0;
    size_t i = 0;
    for (; i < n && !strcmp(name_of(i ? pcs[i] - 1 : pcs[i]), "self_recurse"); i++)
        rec++;
    assert_int_equal(rec, 11);
    assert_string_equal(name_of(pcs[i] - 1), "test_self_unwind");
    int saw_main = 0;
    for (; i < n; i++)
        saw_main |= !strcmp(name_of(pcs[i] - 1), "main");
    assert_true(saw_main);
}

/* Through a signal frame: a handler walks its own stack, across the
 * kernel's signal frame (glibc's __restore_rt, CIE augmentation "S"), into
 * the function that raised the signal. */
#include <signal.h>

static uint64_t g_sig_pcs[64];
static volatile size_t g_sig_n; /* written by the signal handler */

static void on_usr1(int sig)
{
    (void)sig;
    fl_regs regs;
    fl_regs_from_current(&regs);
    g_sig_n = fl_unwind(&regs, g_mods, g_nmods, g_sig_pcs, 64);
}

FRAME_FN int raiser(void)
{
    raise(SIGUSR1);
    __asm__ volatile("" ::: "memory");
    return g_sink;
}

void test_through_signal_frame(void **state); /* not static: dladdr names it */
void test_through_signal_frame(void **state)
{
    (void)state;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
    g_sig_n = 0;
    raiser();
    sigaction(SIGUSR1, &old, NULL);
    for (size_t i = 0; i < g_sig_n; i++)
        printf("#%zu 0x%llx %s\n", i, (unsigned long long)g_sig_pcs[i], name_of(g_sig_pcs[i]));
    assert_true(g_sig_n >= 4);
    const char *want[] = {"raiser", "test_through_signal_frame", "main"};
    size_t at = 0;
    for (size_t k = 0; k < 3; k++) {
        while (at < g_sig_n && strcmp(name_of(g_sig_pcs[at] - 1), want[k]) != 0 &&
               strcmp(name_of(g_sig_pcs[at]), want[k]) != 0)
            at++;
        if (at == g_sig_n)
            fail_msg("%s not found after the signal frame", want[k]);
        at++;
    }
}

/* ---- garbage ---- */

static void test_random_regs(void **state)
{
    (void)state;
    uint64_t pcs[64];
    for (int it = 0; it < 20000; it++) {
        fl_regs regs;
        for (int i = 0; i < FL_REGS_N; i++)
            regs.r[i] = rnd();
        regs.valid = rnd() | (1ull << FL_REG_PC);
        size_t n = fl_unwind(&regs, g_mods, g_nmods, pcs, 64);
        assert_true(n >= 1 && n <= 64);
    }
}

/* Real pcs (anywhere in the loaded code) over a stack of random words,
 * some of them real code addresses. */
static void test_random_stack(void **state)
{
    (void)state;
    size_t len = 64 * 1024;
    unsigned char *stk =
        mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(stk != MAP_FAILED);
    uint64_t pcs[64], total = 0;
    const int iters = 5000;
    for (int it = 0; it < iters; it++) {
        for (size_t i = 0; i < len / 8; i++) {
            uint64_t v = rnd();
            if ((v & 7) == 0) { /* a code address */
                const fl_unwind_module *m = &g_mods[v % g_nmods];
                v = m->start + (rnd() % (m->end - m->start));
            } else if ((v & 7) == 1) { /* a pointer into the stack */
                v = (uint64_t)(uintptr_t)stk + (rnd() % len);
            }
            memcpy(stk + i * 8, &v, 8);
            if (i > 512 && it % 8)
                break; /* refresh the whole buffer only now and then: speed */
        }
        const fl_unwind_module *m = &g_mods[rnd() % g_nmods];
        fl_regs regs;
        memset(&regs, 0, sizeof regs);
        for (int i = 0; i < FL_REGS_N; i++)
            regs.r[i] = rnd();
        regs.r[FL_REG_PC] = m->start + rnd() % (m->end - m->start);
        regs.r[FL_REG_SP] = (uint64_t)(uintptr_t)stk + (rnd() % 256) * 8;
        regs.r[FL_REG_FP] = (uint64_t)(uintptr_t)stk + (rnd() % 512) * 8;
        regs.valid = (1ull << FL_REGS_N) - 1;
        fl_safemem_forget_pages();
        size_t n = fl_unwind(&regs, g_mods, g_nmods, pcs, 64);
        assert_true(n >= 1 && n <= 64);
        total += n;
    }
    printf("random stacks: %.2f frames per walk on average\n", (double)total / iters);
    munmap(stk, len);
    fl_safemem_forget_pages(); /* its pages may be reused by the next mmap */
}

static void test_unmapped_stack(void **state)
{
    (void)state;
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char *p = mmap(NULL, 2 * pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(p != MAP_FAILED);
    munmap(p + pg, pg);
    fl_safemem_forget_pages();
    uint64_t pcs[16];
    for (int k = 0; k < 2; k++) {
        fl_regs regs;
        memset(&regs, 0, sizeof regs);
        regs.r[FL_REG_PC] = (uint64_t)(uintptr_t)&self_recurse + 4;
        regs.r[FL_REG_SP] = (uint64_t)(uintptr_t)p + (size_t)k * pg + 64;
        regs.r[FL_REG_FP] = regs.r[FL_REG_SP] + 32;
        regs.valid = (1ull << FL_REGS_N) - 1;
        assert_int_equal(fl_unwind(&regs, g_mods, g_nmods, pcs, 16), 1);
        /* pc itself unmapped and in no module: the guess reads sp, fails. */
        regs.r[FL_REG_PC] = 0x10;
        assert_int_equal(fl_unwind(&regs, g_mods, g_nmods, pcs, 16), 1);
    }
    munmap(p, pg);
}

/* Frame 0 at pc 0 (a call through NULL): the return address at sp. */
static void test_pc_zero_guess(void **state)
{
    (void)state;
    uint64_t stk[8] = {0};
    stk[0] = (uint64_t)(uintptr_t)&self_recurse + 8;
    fl_regs regs;
    memset(&regs, 0, sizeof regs);
    regs.r[FL_REG_PC] = 0;
    regs.r[FL_REG_SP] = (uint64_t)(uintptr_t)stk;
    regs.valid = (1ull << FL_REGS_N) - 1;
    uint64_t pcs[4];
    uint8_t how[4];
    size_t n = fl_unwind_ex(&regs, g_mods, g_nmods, NULL, pcs, how, 2);
    assert_int_equal(n, 2);
    assert_true(pcs[1] == stk[0]);
    assert_int_equal(how[1], FL_FRAME_GUESS);
}

/* A real code range whose "unwind table" is random bytes. */
static void test_corrupt_table(void **state)
{
    (void)state;
    static unsigned char junk[8192];
    uint64_t pcs[64];
    for (int it = 0; it < 3000; it++) {
        for (size_t i = 0; i < sizeof junk; i++)
            junk[i] = (unsigned char)rnd();
        junk[0] = 1; /* a valid version, so the table is used */
        if (it & 1)
            junk[3] = 0x3b;
        fl_unwind_module m = g_mods[rnd() % g_nmods];
        m.eh_frame_hdr = (it % 3 == 2) ? 0 : (uint64_t)(uintptr_t)junk;
        m.eh_frame = (uint64_t)(uintptr_t)junk + (it & 3) * 256;
        fl_regs regs;
        fl_regs_from_current(&regs);
        regs.r[FL_REG_PC] = m.start + rnd() % (m.end - m.start);
        size_t n = fl_unwind(&regs, &m, 1, pcs, 64);
        assert_true(n >= 1 && n <= 64);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_synthetic_hdr),
        cmocka_unit_test(test_synthetic_scan),
        cmocka_unit_test(test_synthetic_max_frames),
        cmocka_unit_test(test_synthetic_corrupt),
        cmocka_unit_test(test_self_unwind),
        cmocka_unit_test(test_through_signal_frame),
        cmocka_unit_test(test_random_regs),
        cmocka_unit_test(test_random_stack),
        cmocka_unit_test(test_unmapped_stack),
        cmocka_unit_test(test_pc_zero_guess),
        cmocka_unit_test(test_corrupt_table),
        cmocka_unit_test(test_factored_offset_overflow),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
