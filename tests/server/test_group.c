/*
 * Unit tests of the server's pure parts: versions, hashes, gzip limits,
 * frames and signatures (with and without a symbolizer), the skip lists,
 * and fl_process_log on the published example.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <zlib.h>

#include "fl_crashlog.h"
#include "fl_group.h"
#include "fl_serve.h"
#include "fl_srvsym.h"
#include "fl_srvutil.h"
#include "fl_tracesec.h"

static void test_vercmp(void **st)
{
    (void)st;
    assert_true(fl_vercmp("1.10", "1.9") > 0);
    assert_true(fl_vercmp("1.9", "1.10") < 0);
    assert_true(fl_vercmp("1.3", "1.2") > 0);
    assert_true(fl_vercmp("1.1", "1.2") < 0);
    assert_int_equal(fl_vercmp("1.2", "1.2"), 0);
    assert_int_equal(fl_vercmp("1.02", "1.2"), 0);
    assert_true(fl_vercmp("1.2.1", "1.2") > 0);
    assert_true(fl_vercmp("2.0", "1.99.99") > 0);
    assert_true(fl_vercmp("1.0.1", "1.0.beta") > 0);
    assert_true(fl_vercmp("1.0-rc2", "1.0-rc10") < 0);
    assert_true(fl_vercmp(NULL, "1") < 0);
    assert_true(fl_vercmp("12345678901234567890.1", "9.1") > 0);
}

static void test_sha256(void **st)
{
    (void)st;
    uint8_t h[32];
    char hex[65];
    fl_sha256("abc", 3, h);
    fl_hex(h, 32, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    /* Two blocks of padding (56..63 bytes). */
    fl_sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, h);
    fl_hex(h, 32, hex);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static size_t gz(const void *in, size_t n, uint8_t *out, size_t cap)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    assert_int_equal(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    size_t r = cap - z.avail_out;
    deflateEnd(&z);
    return r;
}

static void test_gunzip(void **st)
{
    (void)st;
    static uint8_t zeros[4 << 20], comp[1 << 16];
    char *out;
    size_t ol;
    size_t cl = gz("hello\n", 6, comp, sizeof comp);
    assert_int_equal(fl_gunzip(comp, cl, 1 << 20, 100, &out, &ol), FL_GZ_OK);
    assert_int_equal(ol, 6);
    assert_memory_equal(out, "hello\n", 6);
    free(out);
    /* Truncated stream and junk. */
    assert_int_equal(fl_gunzip(comp, cl - 4, 1 << 20, 100, &out, &ol), FL_GZ_BAD);
    assert_int_equal(fl_gunzip("junk!", 5, 1 << 20, 100, &out, &ol), FL_GZ_BAD);
    /* A bomb: 4 MiB of zeros is ~4 KiB compressed: over the ratio, and
     * over an absolute cap. */
    cl = gz(zeros, sizeof zeros, comp, sizeof comp);
    assert_int_equal(fl_gunzip(comp, cl, 64 << 20, 100, &out, &ol), FL_GZ_RATIO);
    assert_int_equal(fl_gunzip(comp, cl, 1 << 20, 0, &out, &ol), FL_GZ_TOO_BIG);
    assert_int_equal(fl_gunzip(comp, cl, 8 << 20, 0, &out, &ol), FL_GZ_OK);
    assert_int_equal(ol, sizeof zeros);
    free(out);
}

/* ---- logs for grouping */

typedef struct build {
    const char *build_id;
    uint64_t base, bias;
    uint64_t offs[8]; /* module-relative offsets of the frames */
} build;

/* A log whose frames are in one module "app" of build b. */
static fl_crashlog *make_log(const build *b, size_t n)
{
    char text[4096];
    int len = snprintf(text, sizeof text,
                       "FAULTLINE 0.1\nCRASHLOG_VERSION 2\nAPPLICATION_NAME app\n"
                       "APPLICATION_VERSION 1.0\nOBJECT /opt/app/bin/app/%llu/1048576/%llu\n"
                       "OBJECT_BUILD_ID %s\n",
                       (unsigned long long)b->base, (unsigned long long)b->bias, b->build_id);
    for (size_t i = 0; i < n; i++)
        len += snprintf(text + len, sizeof text - (size_t)len, "CALLSTACK %llu\n",
                        (unsigned long long)(b->bias + b->offs[i]));
    len += snprintf(text + len, sizeof text - (size_t)len, "END\n");
    fl_crashlog *L = NULL;
    fl_crashlog_error err;
    if (fl_crashlog_parse(text, (size_t)len, &L, &err))
        fail_msg("parse: line %u: %s", err.line, err.message);
    return L;
}

/* The fake symbolizer: per build id, offset -> name. */
typedef struct symtab {
    const char *build_id;
    uint64_t off;
    const char *name;
} symtab;

static const symtab SYMS[] = {
    /* build A */
    {"aaaa", 0x100, "raise"},
    {"aaaa", 0x200, "abort"},
    {"aaaa", 0x1000, "parse_config"},
    {"aaaa", 0x2000, "load_file"},
    {"aaaa", 0x3000, "main"},
    {"aaaa", 0x4000, "other_fn"},
    {"aaaa", 0x5000, "fl_crash_handler"},
    /* build B: same functions at other offsets */
    {"bbbb", 0x180, "raise"},
    {"bbbb", 0x280, "abort"},
    {"bbbb", 0x1800, "parse_config"},
    {"bbbb", 0x2800, "load_file"},
    {"bbbb", 0x3800, "main"},
    /* build C: gcc's clones of the same functions */
    {"cccc", 0x100, "raise"},
    {"cccc", 0x200, "abort"},
    {"cccc", 0x1000, "parse_config.constprop.0"},
    {"cccc", 0x2000, "load_file.isra.0.part.1"},
    {"cccc", 0x3000, "main.cold"},
    /* build D: names that only look like clones stay as they are */
    {"dddd", 0x1000, "parse_config.v2"},
    {"dddd", 0x2000, "load_file [clone .cold]"},
    {"dddd", 0x3000, "main"},
    /* build E: names with the symbol versions of a .symtab (libc's debug
     * file: "__libc_start_main@GLIBC_2.2.5") */
    {"eeee", 0x100, "raise@@GLIBC_2.2.5"},
    {"eeee", 0x200, "abort@GLIBC_2.2.5"},
    {"eeee", 0x1000, "parse_config@GLIBC_2.34"},
    {"eeee", 0x2000, "load_file@@APP_1.0"},
    {"eeee", 0x3000, "main"},
    /* a program "app" with its _start, and two builds of the C library:
     * glibc before 2.34 (main called by __libc_start_main) and after */
    {"ffff", 0x1000, "parse_config"},
    {"ffff", 0x3000, "main"},
    {"ffff", 0x50, "_start"},
    {"ffff", 0x6000, "worker_fn"},
    {"11bc231", 0x21000, "__libc_start_main"},
    {"11bc231", 0x9000, "start_thread"},
    {"11bc231", 0xa000, "clone"},
    {"11bc231", 0x500, "strlen"},
    {"11bc236", 0x271c0, "__libc_start_call_main"},
    {"11bc236", 0x27280, "__libc_start_main_impl"},
    {"11bc236", 0x89000, "start_thread"},
    {"11bc236", 0x10a000, "clone3"},
    {"11bc236", 0x700, "strlen"},
    /* a C++ program (-O2: parse_config's cold part split off), and
     * glibc's way into abort */
    {"c0de", 0x1000, "parse_config(std::string const&)"},
    {"c0de", 0x1100, "parse_config(std::string const&) (.cold)"},
    {"c0de", 0x1200, "parse_config(std::string const&) (.constprop.0) (.isra.0)"},
    {"c0de", 0x2000, "load(char const*)"},
    {"c0de", 0x3000, "main"},
    {"c0de", 0x4000, "std::__1::__throw_out_of_range[abi:ue170006](char const*)"},
    {"c0de", 0x5000, "f(int) (.cold) const"}, /* not a clone suffix: not at the end */
    {"11bc236", 0x8eebc, "__pthread_kill_implementation"},
    {"11bc236", 0x3cfb2, "raise"},
    {"11bc236", 0x27472, "abort"},
    /* glibc 2.36's debug file as it is: a thread's way in by its alias */
    {"11bc237", 0x89000, "start_thread"},
    {"11bc237", 0x10a000, "__GI___clone3"},
    {"11bc237", 0x4d000, "msort_with_tmp"},
    {"11bc237", 0x4d500, "qsort_r"},
    {"ffff", 0x7000, "recurse"},
    /* strlen as glibc picks it by CPU (its ifunc variants), on three
     * machines of one fleet; and a program's own function of that shape */
    {"11bc238", 0x9a000, "__strlen_avx2"},
    {"11bc238", 0x9b000, "__memmove_avx_unaligned_erms"},
    {"11bc238", 0x9c000, "__wcsnlen_sse4_1"},
    {"11bc238", 0x9d000, "__libc_start_main_impl"},
    {"11bc238", 0x9e000, "__strcasecmp_l_avx2"},
    {"11bc238", 0x9f000, "__nptl_no_back"},
    {"11bc238", 0xa0000, "__memcpy_chk_avx_unaligned"},
    {"11bc239", 0x9a000, "__strlen_sse2"},
    {"11bc239", 0x9b000, "__memmove_evex_unaligned_erms"},
    {"11bc239", 0x9c000, "__wcsnlen_generic"},
    {"11bc239", 0x9e000, "__strcasecmp_l_sse42"},
    {"11bc23a", 0x9a000, "__strlen_evex"},
    {"ffff", 0x8000, "__parse_avx2"},
    /* glibc's free by its alias, with the symbol version a .symtab gives */
    {"11bc237", 0x9a100, "cfree@GLIBC_2.2.5"},
    /* mutual recursion */
    {"ffff", 0x9000, "parse_expr"},
    {"ffff", 0x9100, "parse_term"},
    {"ffff", 0x9200, "parse_factor"},
    /* libstdc++'s way into a std::thread's function, at -O0 and inlined */
    {"ffff", 0xa000,
     "std::thread::_State_impl<std::thread::_Invoker<std::tuple<void (*)(int), int> > >::_M_run()"},
    {"ffff", 0xa100,
     "void std::__invoke_impl<void, void (*)(int), int>(std::__invoke_other, void (*&&)(int), "
     "int&&)"},
    {"ffff", 0xa200, "_M_invoke<0ul, 1ul>"},
    /* tail calls: via_a and via_b end by jumping to deref (their sites),
     * helper to via_a's callee in a chain of two */
    {"9999", 0x1000, "deref"},
    {"9999", 0x2000, "via_a"},
    {"9999", 0x2100, "via_b"},
    {"9999", 0x2200, "helper"},
    {"9999", 0x3000, "main"},
    {"9999", 0x3010, "main"},
    {"9999", 0x3020, "main"},
    {"9999", 0x3030, "main"},
    {"9999", 0x3040, "main"},
    /* a library's: lib_common, which api_a ends by jumping to */
    {"8888", 0x1000, "lib_common"},
    {"8888", 0x2000, "api_a"},
};

static int fake_sym(void *ctx, const char *module, const char *build_id, uint64_t rel,
                    fl_sym_frame *out, size_t cap)
{
    (void)module;
    /* ctx "app": a server with the program's symbols and not libc's. */
    if (ctx && build_id && !strncmp(build_id, "11bc", 4))
        return 0;
    for (size_t i = 0; i < sizeof SYMS / sizeof *SYMS; i++) {
        /* Frames other than the first are looked up at pc-1. */
        if (build_id && !strcmp(build_id, SYMS[i].build_id) &&
            (rel == SYMS[i].off || rel + 1 == SYMS[i].off) && cap > 0) {
            memset(out, 0, sizeof *out);
            snprintf(out->function, sizeof out->function, "%s", SYMS[i].name);
            snprintf(out->file, sizeof out->file, "%s.c", SYMS[i].name);
            out->line = 10;
            return 1;
        }
    }
    return 0;
}

/* The fake tail-call hook: at main's return addresses 0x3000 / 0x3010 a
 * call reached deref through via_a / via_b; at 0x3020 through via_a and
 * helper, which tail-calls deref; at 0x3030 through via_a by one of two
 * tail calls (no line). */
static unsigned g_tail_asked;
static size_t fake_tail(void *ctx, const char *module, const char *build_id, uint64_t ret,
                        const char *callee, const char *callee_build_id, uint64_t callee_rel,
                        uint64_t *sites, bool *exact, bool *in_callee, size_t cap)
{
    (void)ctx;
    (void)module;
    g_tail_asked++;
    in_callee[0] = in_callee[1] = false;
    /* main's call at 0x3040 went to the library's api_a: its entry, in
     * the callee's module. */
    if (ret == 0x3040 && callee_build_id && !strcmp(callee_build_id, "8888")) {
        assert_string_equal(callee, "lib_common");
        assert_int_equal(callee_rel, 0x1000);
        sites[0] = 0x2000;
        exact[0] = false;
        in_callee[0] = true;
        return 1;
    }
    assert_non_null(callee);
    /* The callee: deref, the innermost frame, looked up at its pc. */
    assert_string_equal(callee_build_id, "9999");
    assert_int_equal(callee_rel, 0x1000);
    exact[0] = exact[1] = true;
    if (!build_id || strcmp(build_id, "9999") || strcmp(callee, "deref") || cap < 2)
        return 0;
    switch (ret) {
    case 0x3000:
        sites[0] = 0x2000;
        return 1;
    case 0x3010:
        sites[0] = 0x2100;
        return 1;
    case 0x3020:
        sites[0] = 0x2200;
        sites[1] = 0x2000;
        return 2;
    case 0x3030:
        sites[0] = 0x2000;
        exact[0] = false;
        return 1;
    }
    return 0;
}

static void tail_sig(uint64_t ret, fl_tailcall_fn tail, const fl_group_rules *r, char *sig,
                     size_t cap, fl_frames *keep)
{
    build b = {"9999", 0x400000, 0x400000, {0x1000, ret}};
    fl_crashlog *L = make_log(&b, 2);
    fl_frames f;
    fl_signature s;
    assert_int_equal(
        fl_frames_build_tail(L, L->callstack, L->ncallstack, r, fake_sym, tail, NULL, &f), 0);
    assert_int_equal(fl_signature_compute(NULL, L->app_name, &f, r, &s), 0);
    snprintf(sig, cap, "%s", s.text);
    free(s.text);
    if (keep)
        *keep = f;
    else
        fl_frames_free(&f);
    fl_crashlog_free(L);
}

static void test_group_tail_calls(void **st)
{
    (void)st;
    fl_group_rules *r = fl_group_rules_new();
    char a[512], b[512];
    /* Without the hook both calls read deref | main: one group. */
    tail_sig(0x3000, NULL, r, a, sizeof a, NULL);
    tail_sig(0x3010, NULL, r, b, sizeof b, NULL);
    assert_string_equal(a, "deref | main");
    assert_string_equal(a, b);
    /* With it the function each went through is back: two groups. */
    g_tail_asked = 0;
    fl_frames f;
    tail_sig(0x3000, fake_tail, r, a, sizeof a, &f);
    tail_sig(0x3010, fake_tail, r, b, sizeof b, NULL);
    assert_string_equal(a, "deref | via_a | main");
    assert_string_equal(b, "deref | via_b | main");
    /* Asked once per caller frame: never for the innermost frame. */
    assert_int_equal(g_tail_asked, 2);
    assert_int_equal(f.n, 3);
    assert_false(f.v[0].tail_call);
    assert_true(f.v[1].tail_call);
    assert_string_equal(f.v[1].function, "via_a");
    assert_string_equal(f.v[1].file, "via_a.c");
    assert_int_equal(f.v[1].line, 10);
    assert_int_equal(f.v[1].rel, 0x2000);
    assert_int_equal(f.v[1].address, 0x400000 + 0x2000);
    assert_true(f.v[1].in_signature);
    assert_false(f.v[2].tail_call);
    fl_frames_free(&f);
    /* A chain of two, innermost first. */
    tail_sig(0x3020, fake_tail, r, a, sizeof a, NULL);
    assert_string_equal(a, "deref | helper | via_a | main");
    /* Functions certain, tail call not: no file or line. */
    tail_sig(0x3030, fake_tail, r, a, sizeof a, &f);
    assert_string_equal(a, "deref | via_a | main");
    assert_true(f.v[1].tail_call);
    assert_null(f.v[1].file);
    assert_int_equal(f.v[1].line, 0);
    assert_true(f.v[1].at_entry);
    fl_frames_free(&f);

    /* The call went to another module's function: its frame is that
     * module's, at the function's entry. */
    const char *text = "FAULTLINE 0.1\nCRASHLOG_VERSION 2\nAPPLICATION_NAME app\n"
                       "APPLICATION_VERSION 1.0\nOBJECT /opt/app/bin/app/4194304/1048576/4194304\n"
                       "OBJECT_BUILD_ID 9999\nOBJECT /opt/app/lib/libx.so/8388608/1048576/8388608\n"
                       "OBJECT_BUILD_ID 8888\nCALLSTACK 8392704\nCALLSTACK 4206656\nEND\n";
    fl_crashlog *L = NULL;
    fl_crashlog_error err;
    assert_int_equal(fl_crashlog_parse(text, strlen(text), &L, &err), 0);
    for (int with = 0; with < 2; with++) {
        fl_signature sg;
        assert_int_equal(fl_frames_build_tail(L, L->callstack, L->ncallstack, r, fake_sym,
                                              with ? fake_tail : NULL, NULL, &f),
                         0);
        assert_int_equal(fl_signature_compute(NULL, L->app_name, &f, r, &sg), 0);
        assert_string_equal(sg.text, with ? "lib_common | api_a | main" : "lib_common | main");
        free(sg.text);
        if (with) {
            assert_int_equal(f.n, 3);
            assert_true(f.v[1].tail_call);
            assert_true(f.v[1].at_entry);
            assert_string_equal(f.v[1].module, "libx.so");
            assert_int_equal(f.v[1].rel, 0x2000);
            assert_int_equal(f.v[1].address, 0x800000 + 0x2000);
            assert_null(f.v[1].file);
            assert_int_equal(f.v[1].line, 0);
            assert_false(f.v[2].tail_call);
            assert_string_equal(f.v[2].module, "app");
        }
        fl_frames_free(&f);
    }
    fl_crashlog_free(L);
    fl_group_rules_free(r);

    /* How the hook compares names. */
    assert_true(fl_group_same_function("free", "free"));
    assert_true(fl_group_same_function("cfree@GLIBC_2.2.5", "free"));
    assert_true(fl_group_same_function("__libc_free", "free"));
    assert_true(fl_group_same_function("f.constprop.0", "f"));
    assert_true(fl_group_same_function("label[abi:cxx11]()", "label()"));
    assert_false(fl_group_same_function("f", "g"));
    assert_false(fl_group_same_function("f(int)", "f(long)"));
    assert_false(fl_group_same_function(NULL, "f"));
}

static void sig_of(const build *b, size_t n, fl_symbolize_fn sym, const fl_group_rules *r,
                   fl_signature *out)
{
    fl_crashlog *L = make_log(b, n);
    fl_frames f;
    assert_int_equal(fl_frames_build(L, L->callstack, L->ncallstack, r, sym, NULL, &f), 0);
    assert_int_equal(fl_signature_compute(NULL, L->app_name, &f, r, out), 0);
    fl_frames_free(&f);
    fl_crashlog_free(L);
}

static void test_group_symbols(void **st)
{
    (void)st;
    fl_group_rules *r = fl_group_rules_new();
    assert_non_null(r);
    /* The same crash from two builds: other load bias, other offsets. */
    build a = {"aaaa", 0x555555554000, 0x555555554000, {0x100, 0x200, 0x1000, 0x2000, 0x3000}};
    build b = {"bbbb", 0x7f1234560000, 0x7f1234560000, {0x180, 0x280, 0x1800, 0x2800, 0x3800}};
    fl_signature sa, sb;
    sig_of(&a, 5, fake_sym, r, &sa);
    sig_of(&b, 5, fake_sym, r, &sb);
    assert_string_equal(sa.text, "parse_config | load_file | main"); /* raise/abort skipped */
    assert_string_equal(sa.group_id, sb.group_id);
    assert_string_equal(sa.stack_hash, sb.stack_hash);
    free(sb.text);
    /* gcc's .constprop/.isra/.part/.cold clones group with the plain names. */
    build cl = {"cccc", 0x555555554000, 0x555555554000, {0x100, 0x200, 0x1000, 0x2000, 0x3000}};
    fl_signature scl;
    sig_of(&cl, 5, fake_sym, r, &scl);
    assert_string_equal(scl.text, "parse_config | load_file | main");
    assert_string_equal(scl.group_id, sa.group_id);
    free(scl.text);
    /* Symbol versions are not part of a function's name either: a server
     * with libc's debug file groups as one without it. */
    build ve = {"eeee", 0x555555554000, 0x555555554000, {0x100, 0x200, 0x1000, 0x2000, 0x3000}};
    sig_of(&ve, 5, fake_sym, r, &scl);
    assert_string_equal(scl.text, "parse_config | load_file | main");
    assert_string_equal(scl.group_id, sa.group_id);
    free(scl.text);
    build dl = {"dddd", 0x555555554000, 0x555555554000, {0x1000, 0x2000, 0x3000}};
    sig_of(&dl, 3, fake_sym, r, &scl);
    assert_string_equal(scl.text, "parse_config.v2 | load_file | main");
    free(scl.text);
    /* Without symbols the two builds differ (module+offset). */
    sig_of(&b, 5, NULL, r, &sb);
    assert_string_not_equal(sa.group_id, sb.group_id);
    free(sb.text);
    /* Sharing only the top frame is not the same crash. */
    build c = {"aaaa", 0x555555554000, 0x555555554000, {0x100, 0x200, 0x1000, 0x4000, 0x3000}};
    fl_signature sc;
    sig_of(&c, 5, fake_sym, r, &sc);
    assert_string_equal(sc.text, "parse_config | other_fn | main");
    assert_string_not_equal(sa.group_id, sc.group_id);
    free(sc.text);
    /* The crash handler's own frame (fl_ prefix) is skipped too. */
    build d = {"aaaa", 0x1000000, 0x1000000, {0x5000, 0x100, 0x1000, 0x2000, 0x3000}};
    fl_signature sd;
    sig_of(&d, 5, fake_sym, r, &sd);
    assert_string_equal(sd.group_id, sa.group_id);
    free(sd.text);
    free(sa.text);
    fl_group_rules_free(r);
}

/* The signature of a log with the program at 0x400000 (build ffff) and
 * the C library at 0x7f0000000000 (build libc_id); frames: 'a' + offset
 * in the program, 'c' + offset in the C library. */
/* The last sig_with_libc()'s frames, '1' for each one marked in_signature
 * and '0' for the others. */
static char g_marks[64];

/* With extra lines after the objects: 's' + offset is a frame in the C++
 * runtime at 0x7f1000000000, when extra has its OBJECT. */
static fl_signature sig_with(const char *extra, const char *app_id, const char *libc_id,
                             const char *symbols, const char *frames)
{
    char text[4096];
    int len = snprintf(text, sizeof text,
                       "FAULTLINE 0.1\nCRASHLOG_VERSION 2\nAPPLICATION_NAME app\n"
                       "OBJECT /opt/app/bin/app/4194304/1048576/4194304\nOBJECT_BUILD_ID %s\n"
                       "OBJECT /lib/x86_64-linux-gnu/libc.so.6/139637976727552/2097152/"
                       "139637976727552\nOBJECT_BUILD_ID %s\n%s",
                       app_id, libc_id, extra);
    for (const char *p = frames; *p;) {
        char kind = *p++;
        char *e;
        unsigned long long off = strtoull(p, &e, 16);
        p = *e ? e + 1 : e;
        len += snprintf(text + len, sizeof text - (size_t)len, "CALLSTACK %llu\n",
                        (kind == 'a'   ? 0x400000ull
                         : kind == 's' ? 0x7f1000000000ull
                                       : 0x7f0000000000ull) +
                            off);
    }
    len += snprintf(text + len, sizeof text - (size_t)len, "END\n");
    fl_crashlog *L = NULL;
    fl_crashlog_error err;
    if (fl_crashlog_parse(text, (size_t)len, &L, &err))
        fail_msg("parse: line %u: %s", err.line, err.message);
    fl_group_rules *r = fl_group_rules_new();
    fl_frames f;
    fl_signature s;
    assert_int_equal(
        fl_frames_build(L, L->callstack, L->ncallstack, r, symbols ? fake_sym : NULL,
                        symbols && !strcmp(symbols, "app") ? (void *)"app" : NULL, &f),
        0);
    assert_int_equal(fl_signature_compute(NULL, L->app_name, &f, r, &s), 0);
    size_t k = 0;
    for (; k < f.n && k + 1 < sizeof g_marks; k++)
        g_marks[k] = f.v[k].in_signature ? '1' : '0';
    g_marks[k] = '\0';
    fl_frames_free(&f);
    fl_crashlog_free(L);
    fl_group_rules_free(r);
    return s;
}

static fl_signature sig_with_libc(const char *libc_id, const char *symbols, const char *frames)
{
    return sig_with("", "ffff", libc_id, symbols, frames);
}

/* The C library's start-up frames below main and below a thread's
 * function are not part of the signature: the same crash groups as one
 * whatever the build of the C library on the machine that crashed. */
static void test_group_startup_frames(void **st)
{
    (void)st;
    /* main called by glibc 2.31 and by glibc 2.36, named by their debug
     * files or not (offsets that differ between the two builds). */
    const char *old = "a1000 a3000 c21000 a50", *new = "a1000 a3000 c271c0 c27280 a50";
    /* The frames the signature takes are marked: not __libc_start_main
     * and _start (the API's in_signature). */
    fl_signature m = sig_with_libc("11bc231", "all", old);
    assert_string_equal(g_marks, "1100");
    free(m.text);
    fl_signature s1 = sig_with_libc("11bc231", "all", old),
                 s2 = sig_with_libc("11bc236", "app", new),
                 s3 = sig_with_libc("11bc231", NULL, old), s4 = sig_with_libc("11bc236", NULL, new);
    assert_string_equal(s1.text, "parse_config | main");
    assert_string_equal(s1.group_id, s2.group_id);
    /* The program unnamed too: its own frames by offset, its _start and
     * the C library's frames left out. */
    assert_string_equal(s3.text, "app+0x1000 | app+0x3000");
    assert_string_equal(s3.group_id, s4.group_id);
    /* The full-stack hash still tells the two apart. */
    assert_string_not_equal(s1.stack_hash, s2.stack_hash);
    free(s1.text), free(s2.text), free(s3.text), free(s4.text);

    /* A thread's function: start_thread and clone/clone3 left out. */
    s1 = sig_with_libc("11bc231", "all", "a1000 a6000 c9000 ca000");
    s2 = sig_with_libc("11bc236", "app", "a1000 a6000 c89000 c10a000");
    assert_string_equal(s1.text, "parse_config | worker_fn");
    assert_string_equal(s2.text, "parse_config | worker_fn");
    assert_string_equal(s1.group_id, s2.group_id);
    free(s1.text), free(s2.text);

    /* The C library inside the stack is kept: a crash in strlen is not a
     * crash in its caller. */
    s1 = sig_with_libc("11bc231", NULL, "c500 a1000 a3000 c21000 a50");
    assert_string_equal(s1.text, "libc.so+0x500 | app+0x1000 | app+0x3000");
    free(s1.text);
    s1 = sig_with_libc("11bc231", "all", "c500 a1000 a3000 c21000 a50");
    assert_string_equal(s1.text, "strlen | parse_config | main");
    assert_string_equal(g_marks, "11100");
    free(s1.text);
    /* Nothing but start-up frames: they are all there is to group by. */
    s1 = sig_with_libc("11bc236", "all", "c89000 c10a000");
    assert_string_equal(s1.text, "start_thread | clone3");
    free(s1.text);
    /* Frames below main that are not the C library's are not its
     * callers' business either (a static program's start-up). */
    s1 = sig_with_libc("11bc231", "all", "a1000 a3000 a6000");
    assert_string_equal(s1.text, "parse_config | main");
    free(s1.text);
}

static void test_group_offsets(void **st)
{
    (void)st;
    fl_group_rules *r = fl_group_rules_new();
    /* No symbols: the signature is module+offset, so two runs of the same
     * build at different load addresses (ASLR) group together. */
    build a = {"aaaa", 0x555555554000, 0x555555554000, {0x1000, 0x2000, 0x3000}};
    build b = {"aaaa", 0x560000000000, 0x560000000000, {0x1000, 0x2000, 0x3000}};
    fl_signature sa, sb;
    sig_of(&a, 3, NULL, r, &sa);
    sig_of(&b, 3, NULL, r, &sb);
    assert_string_equal(sa.text, "app+0x1000 | app+0x2000 | app+0x3000");
    assert_string_equal(sa.group_id, sb.group_id);
    free(sb.text);
    build c = {"aaaa", 0x555555554000, 0x555555554000, {0x1000, 0x2000, 0x3010}};
    sig_of(&c, 3, NULL, r, &sb);
    assert_string_not_equal(sa.group_id, sb.group_id);
    free(sb.text);
    free(sa.text);
    fl_group_rules_free(r);
}

/* An uncaught C++ exception: glibc's abort, then libstdc++ (std::terminate,
 * __cxa_throw, ... unnamed without its debug file), then the code that
 * threw.  The runtime's frames are not the crash's place. */
static void test_group_cxx_abort(void **st)
{
    (void)st;
    const char *stdcxx1 = "CRASH_SIGNAL 6\nOBJECT /usr/lib/x86_64-linux-gnu/libstdc++.so.6/"
                          "139706696204288/2201728/139706696204288\nOBJECT_BUILD_ID 5dc1\n";
    fl_signature s1 =
        sig_with(stdcxx1, "c0de", "11bc236", "all",
                 "c8eebc c3cfb2 c27472 s9d919 sa8e1a sa8e85 sa90d8 a1000 a2000 a3000");
    assert_string_equal(s1.text, "parse_config(std::string const&) | load(char const*) | main");
    assert_string_equal(g_marks, "0000000111");
    /* Another libstdc++ build (other offsets), the throw in the -O2 cold
     * part, no CRASH_SIGNAL: abort's frame says it. */
    const char *stdcxx2 = "OBJECT /usr/lib/x86_64-linux-gnu/libstdc++.so.6/139706696204288/"
                          "2201728/139706696204288\nOBJECT_BUILD_ID 5dc2\n";
    fl_signature s2 = sig_with(stdcxx2, "c0de", "11bc236", "all",
                               "c8eebc c3cfb2 c27472 s9a111 sa9222 a1100 a2000 a3000");
    assert_string_equal(s2.text, s1.text);
    assert_string_equal(s2.group_id, s1.group_id);
    free(s2.text);
    /* Without the C library's symbols SIGABRT says it; clones named the
     * GNU way and the LLVM way are one function. */
    s2 = sig_with(stdcxx1, "c0de", "11bc236", "app",
                  "c8eebc c3cfb2 c27472 s9d919 a1200 a2000 a3000");
    assert_string_equal(s2.group_id, s1.group_id);
    free(s2.text);
    /* libc++ inlines its throw helper into the program. */
    s2 = sig_with(stdcxx1, "c0de", "11bc236", "all", "c27472 s1234 a4000 a1000 a2000 a3000");
    assert_string_equal(s2.group_id, s1.group_id);
    free(s2.text);
    /* A segmentation fault in libstdc++ is a crash there: kept. */
    const char *segv = "CRASH_SIGNAL 11\nOBJECT /usr/lib/x86_64-linux-gnu/libstdc++.so.6/"
                       "139706696204288/2201728/139706696204288\nOBJECT_BUILD_ID 5dc1\n";
    s2 = sig_with(segv, "c0de", "11bc236", "all", "s9d919 a1000 a2000 a3000");
    assert_string_equal(s2.text, "libstdc++.so+0x9d919 | parse_config(std::string const&) | "
                                 "load(char const*) | main");
    free(s2.text);
    /* So is the C library's under an abort further down: only the top. */
    s2 = sig_with(stdcxx1, "c0de", "11bc236", "all", "c27472 a1000 c700 a2000 a3000");
    assert_string_equal(s2.text,
                        "parse_config(std::string const&) | strlen | load(char const*) | main");
    free(s2.text);
    /* At the top of an abort the C library's named frames stay: a crash
     * in free() is not one in its caller. */
    s2 = sig_with(stdcxx1, "c0de", "11bc236", "all", "c27472 c700 a1000 a2000 a3000");
    assert_string_equal(s2.text,
                        "strlen | parse_config(std::string const&) | load(char const*) | main");
    free(s2.text);
    /* Under the top, unnamed frames of the C library or the C++ runtime
     * (a qsort, a std::sort of libstdc++ calling back) are left out: their
     * offsets move with each build of the library. */
    s2 = sig_with(segv, "c0de", "11bc236", "app", "a1000 c4d9f0 c4da10 s9d919 a2000 a3000");
    assert_string_equal(s2.text, "parse_config(std::string const&) | load(char const*) | main");
    assert_string_equal(g_marks, "100011");
    fl_signature s3 = sig_with("", "c0de", "11bc231", "app", "a1000 c5f0a0 a2000 a3000");
    assert_string_equal(s3.group_id, s2.group_id);
    free(s3.text);
    free(s2.text);
    /* A thread's way in named by glibc's debug file: __GI___clone3. */
    s2 = sig_with_libc("11bc237", "all", "a1000 a6000 c89000 c10a000");
    assert_string_equal(s2.text, "parse_config | worker_fn");
    free(s2.text);
    /* Recursion: its depth is not part of the signature. */
    s2 = sig_with_libc("11bc237", "all", "a1000 c4d000 c4d000 c4d500 a3000");
    s3 = sig_with_libc("11bc237", "all", "a1000 c4d000 c4d000 c4d000 c4d000 c4d000 c4d500 a3000");
    assert_string_equal(s2.text, "parse_config | msort_with_tmp | qsort_r | main");
    assert_string_equal(s3.group_id, s2.group_id);
    free(s2.text), free(s3.text);
    s2 = sig_with_libc("11bc237", "all", "a7000 a7000 a7000 a7000 a7000 a7000 a7000 a7000");
    assert_string_equal(s2.text, "recurse");
    free(s2.text);
    /* A terminate handler of the program between the runtime's frames
     * (libfaultline's, linked statically, before the program's symbols
     * name it) is not where the exception came from. */
    s2 = sig_with(stdcxx1, "c0de", "11bc236", "all",
                  "c8eebc c3cfb2 c27472 s9d919 a7777 sa8e1a sa8e85 sa90d8 a1000 a2000 a3000");
    assert_string_equal(s2.group_id, s1.group_id);
    assert_string_equal(g_marks, "00000000111");
    free(s2.text);
    /* Under the top it is a frame like any other. */
    s2 = sig_with(segv, "c0de", "11bc236", "all", "a1000 a7777 s9d919 a2000 a3000");
    assert_string_equal(s2.text,
                        "parse_config(std::string const&) | app+0x7777 | load(char const*) | main");
    free(s2.text);
    /* A name with a " (.x)" inside, not at its end, is not a clone's. */
    s2 = sig_with("", "c0de", "11bc236", "all", "a5000 a3000");
    assert_string_equal(s2.text, "f(int) (.cold) const | main");
    free(s2.text);
    free(s1.text);
}

/* A stack overflow through mutual recursion is one group whichever
 * function of the cycle hit the guard page; a std::thread's way in from
 * the C++ runtime is not part of its signature; glibc's free is free by
 * any of its names. */
static void test_group_cycles_threads_aliases(void **st)
{
    (void)st;
    /* The cycle to the end of the stack (no main: the client's frame
     * limit cut it), entered at each of its three functions. */
    fl_signature a = sig_with_libc("11bc237", "all",
                                   "a9100 a9200 a9000 a9100 a9200 a9000 a9100 a9200 a9000 a9100");
    fl_signature b = sig_with_libc("11bc237", "all",
                                   "a9200 a9000 a9100 a9200 a9000 a9100 a9200 a9000 a9100 a9200");
    fl_signature c = sig_with_libc("11bc237", "all",
                                   "a9000 a9100 a9200 a9000 a9100 a9200 a9000 a9100 a9200 a9000");
    assert_string_equal(a.text, "parse_expr | parse_term | parse_factor");
    assert_string_equal(b.group_id, a.group_id);
    assert_string_equal(c.group_id, a.group_id);
    free(a.text), free(b.text), free(c.text);
    /* A frame above the cycle (where it overflowed) stays in front. */
    a = sig_with_libc("11bc237", "all",
                      "c9a100 a9100 a9200 a9000 a9100 a9200 a9000 a9100 a9200 a9000 a9100");
    assert_string_equal(a.text, "free | parse_expr | parse_term | parse_factor");
    free(a.text);
    /* A crash at some depth of a recursion that returns to main is not a
     * cycle to the end: it keeps its frames, innermost first. */
    a = sig_with_libc("11bc237", "all", "a9100 a9200 a9000 a9100 a9200 a9000 a9100 a3000");
    assert_string_equal(a.text,
                        "parse_term | parse_factor | parse_expr | parse_term | parse_factor");
    free(a.text);
    /* Two cycles only: not enough to call it one. */
    a = sig_with_libc("11bc237", "all", "a9200 a9000 a9100 a9200 a9000 a9100");
    assert_string_equal(a.text,
                        "parse_factor | parse_expr | parse_term | parse_factor | parse_expr");
    free(a.text);

    /* A std::thread: its function, then libstdc++'s frames (named at -O0,
     * bare when inlined, unnamed in libstdc++.so), then glibc's. */
    const char *stdcxx = "OBJECT /usr/lib/x86_64-linux-gnu/libstdc++.so.6/139706696204288/"
                         "2201728/139706696204288\nOBJECT_BUILD_ID 5dc1\n";
    a = sig_with(stdcxx, "ffff", "11bc236", "all",
                 "a1000 a6000 aa100 aa200 aa000 sd6df4 c89000 c10a000");
    b = sig_with(stdcxx, "ffff", "11bc236", "all", "a1000 a6000 sd6df4 c89000 c10a000");
    assert_string_equal(a.text, "parse_config | worker_fn");
    assert_string_equal(b.group_id, a.group_id);
    free(a.text), free(b.text);
    /* Nothing but those frames: all of them, rather than nothing. */
    a = sig_with(stdcxx, "ffff", "11bc236", "all", "aa100 aa000 sd6df4");
    assert_non_null(strstr(a.text, "std::__invoke_impl"));
    free(a.text);

    /* glibc's free, named "cfree@GLIBC_2.2.5" by its debug file. */
    a = sig_with_libc("11bc237", "all", "c9a100 a1000 a3000");
    assert_string_equal(a.text, "free | parse_config | main");
    free(a.text);
}

/* C++ names key signatures without what changes between toolchains of
 * one function: ABI tags, the standard library's inline namespace and its
 * long spellings of std::string and the streams (libstdc++ abbreviates
 * them, libc++ does not), a template's return type.  Parameters stay:
 * overloads are other functions. */
static void test_group_function_key(void **st)
{
    (void)st;
    static const char *const cases[][2] = {
        /* C names, and names left as they are */
        {"parse_config", "parse_config"},
        {"main", "main"},
        {"(anonymous namespace)::helper", "(anonymous namespace)::helper"},
        {"f(int) (.cold) const", "f(int) (.cold) const"},
        {"g)(int)", "g)(int)"},
        {"", ""},
        /* parameters and qualifiers stay: overloads are other functions */
        {"load(char const*)", "load(char const*)"},
        {"Foo::bar() const", "Foo::bar() const"},
        {"(anonymous namespace)::helper(int)", "(anonymous namespace)::helper(int)"},
        {"operator<<(std::ostream&, Point const&)", "operator<<(std::ostream&, Point const&)"},
        /* the two standard libraries' spelling of one function */
        {"crash_site(int volatile*, std::__cxx11::basic_string<char, std::char_traits<char>, "
         "std::allocator<char> > const&)",
         "crash_site(int volatile*, std::string const&)"},
        {"crash_site(int volatile*, std::__1::basic_string<char, std::__1::char_traits<char>, "
         "std::__1::allocator<char> > const&)",
         "crash_site(int volatile*, std::string const&)"},
        {"operator<<(std::__1::basic_ostream<char, std::__1::char_traits<char> >&, Point const&)",
         "operator<<(std::ostream&, Point const&)"},
        {"read(std::basic_istream<char, std::char_traits<char>>&)", "read(std::istream&)"},
        {"std::__1::vector<int, std::__1::allocator<int> >::at(unsigned long)",
         "std::vector<int, std::allocator<int> >::at(unsigned long)"},
        {"std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::size() "
         "const",
         "std::string::size() const"},
        {"std::__ndk1::__throw_out_of_range(char const*)",
         "std::__throw_out_of_range(char const*)"},
        {"mystd::__1::f(int)", "mystd::__1::f(int)"},
        {"my::std::__1::f(int)", "my::std::__1::f(int)"},
        {"g(mystd::basic_ostream<char, std::char_traits<char> >&)",
         "g(mystd::basic_ostream<char, std::char_traits<char> >&)"},
        /* ABI tags */
        {"name[abi:cxx11](int)", "name(int)"},
        {"std::__1::__throw_out_of_range[abi:ue170006](char const*)",
         "std::__throw_out_of_range(char const*)"},
        {"Widget::label[abi:cxx11]() const", "Widget::label() const"},
        /* a function template's return type */
        {"void process<int>(int)", "process<int>(int)"},
        {"std::enable_if<true, void>::type go<long>(long)", "go<long>(long)"},
        /* operators: their brackets and spaces are part of the name */
        {"Foo::operator()(int) const", "Foo::operator()(int) const"},
        {"bool operator< <int>(A<int> const&, A<int> const&)",
         "operator< <int>(A<int> const&, A<int> const&)"},
        {"operator new(unsigned long)", "operator new(unsigned long)"},
        {"Foo::operator bool() const", "Foo::operator bool() const"},
        {"Foo::operator std::__cxx11::basic_string<char, std::char_traits<char>, "
         "std::allocator<char> >() const",
         "Foo::operator std::string() const"},
        {"main::{lambda(int)#1}::operator()(int) const",
         "main::{lambda(int)#1}::operator()(int) const"},
        /* a name cut short (the symbolizer's 255 bytes) is rewritten as far
         * as it goes, its return type kept (nothing says where it ends) */
        {"void Cache<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> "
         ">, int>::get(std::__1::basic_str",
         "void Cache<std::string, int>::get(std::basic_str"},
        {"f[abi:cxx", "f"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char out[320];
        fl_group_function_key(cases[i][0], out, sizeof out);
        if (strcmp(out, cases[i][1]))
            fail_msg("key of \"%s\": \"%s\", want \"%s\"", cases[i][0], out, cases[i][1]);
    }
    /* Cut to fit, and terminated. */
    char small[8];
    fl_group_function_key("Foo::bar(int)", small, sizeof small);
    assert_string_equal(small, "Foo::ba");
    fl_group_function_key("parse_config", small, sizeof small);
    assert_string_equal(small, "parse_c");
}

/* The C library's CPU variants of one function are one function: a
 * fleet of mixed CPUs makes one group per bug, not one per CPU. */
/* frames on the C libraries of the builds ids (NULL-ended) give one
 * group, whose signature is want. */
static void one_group(const char *const *ids, const char *frames, const char *want)
{
    fl_signature first = sig_with_libc(ids[0], "all", frames);
    assert_string_equal(first.text, want);
    for (size_t i = 1; ids[i]; i++) {
        fl_signature other = sig_with_libc(ids[i], "all", frames);
        assert_string_equal(other.group_id, first.group_id);
        free(other.text);
    }
    free(first.text);
}

static void test_group_ifunc_variants(void **st)
{
    (void)st;
    const char *three[] = {"11bc238", "11bc239", "11bc23a", NULL},
               *two[] = {"11bc238", "11bc239", NULL};
    one_group(three, "c9a000 a1000 a3000", "strlen | parse_config | main");
    /* Qualifier words and a stem with '_' in it. */
    one_group(two, "c9b000 a1000 a3000", "memmove | parse_config | main");
    one_group(two, "c9c000 a1000 a3000", "wcsnlen | parse_config | main");
    one_group(two, "c9e000 a1000 a3000", "strcasecmp_l | parse_config | main");
    /* A fortified function's variant is that function's, not memcpy's. */
    const char *fortified[] = {"11bc238", NULL};
    one_group(fortified, "ca0000 a1000 a3000", "memcpy_chk | parse_config | main");
    /* Names that only look alike stay: no ISA word after the stem, and
     * the program's own functions (only the C library's are variants). */
    const char *one[] = {"11bc238", NULL};
    one_group(one, "c9f000 a1000 a3000", "__nptl_no_back | parse_config | main");
    one_group(one, "a8000 a1000 a3000", "__parse_avx2 | parse_config | main");
}

/* A library without symbols is named by its file up to ".so": the client
 * names it by the soname's link (libz.so.1), a core by the file the link
 * points to (libz.so.1.2.13). */
static void test_group_module_stem(void **st)
{
    (void)st;
    const char *client = "OBJECT /lib/x86_64-linux-gnu/libz.so.1/139706696204288/2201728/"
                         "139706696204288\nOBJECT_BUILD_ID 2a11\n";
    const char *core = "OBJECT /usr/lib/x86_64-linux-gnu/libz.so.1.2.13/139706696204288/"
                       "2201728/139706696204288\nOBJECT_BUILD_ID 2a11\n";
    fl_signature a = sig_with(client, "ffff", "11bc236", "all", "s3817 a1000 a3000");
    fl_signature b = sig_with(core, "ffff", "11bc236", "all", "s3817 a1000 a3000");
    assert_string_equal(a.text, "libz.so+0x3817 | parse_config | main");
    assert_string_equal(b.group_id, a.group_id);
    free(a.text), free(b.text);
}

static void test_skip_lists(void **st)
{
    (void)st;
    /* Version-1 logs: no bias, so offsets are pc - base; a module entry in
     * the skip list drops the frames of a module without symbols. */
    const char *log = "MOJOCRASH 0.0.1\nCRASHLOG_VERSION 1\nAPPLICATION_NAME t\n"
                      "OBJECT bin/4194304/65536\nOBJECT /lib/libc.so.6/8388608/65536\n"
                      "CALLSTACK 8388864\nCALLSTACK 8389120\nCALLSTACK 4198400\n"
                      "CALLSTACK 4202496\nEND\n";
    fl_crashlog *L = NULL;
    assert_int_equal(fl_crashlog_parse(log, strlen(log), &L, NULL), 0);
    fl_group_rules *r = fl_group_rules_new();
    fl_frames f;
    fl_signature s;
    assert_int_equal(fl_frames_build(L, L->callstack, L->ncallstack, r, NULL, NULL, &f), 0);
    assert_int_equal(fl_signature_compute(NULL, L->app_name, &f, r, &s), 0);
    /* The C library's unnamed frame under the top one is left out. */
    assert_string_equal(s.text, "libc.so+0x100 | bin+0x1000 | bin+0x2000");
    free(s.text);
    fl_frames_free(&f);

    char dir[] = "/tmp/fl-skip-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char sp[128], pp[128];
    snprintf(sp, sizeof sp, "%s/skip.txt", dir);
    snprintf(pp, sizeof pp, "%s/prefix.txt", dir);
    assert_int_equal(fl_group_rules_write_defaults(sp, pp), 0);
    FILE *fp = fopen(sp, "a");
    fputs("# libc frames are noise here\nmodule:libc.so.6\n", fp);
    fclose(fp);
    assert_int_equal(fl_group_rules_load(r, sp, pp), 0);
    fl_group_rules_set_top_n(r, 1);
    assert_int_equal(fl_frames_build(L, L->callstack, L->ncallstack, r, NULL, NULL, &f), 0);
    assert_int_equal(fl_signature_compute(NULL, L->app_name, &f, r, &s), 0);
    assert_string_equal(s.text, "bin+0x1000");
    assert_true(f.v[0].noise && f.v[1].noise && !f.v[2].noise);
    free(s.text);
    fl_frames_free(&f);
    /* write_defaults never overwrites an edited list. */
    assert_int_equal(fl_group_rules_write_defaults(sp, pp), 0);
    fp = fopen(sp, "r");
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    buf[n] = '\0';
    fclose(fp);
    assert_non_null(strstr(buf, "module:libc.so.6"));

    /* A C++ function named without its parameter list skips each of its
     * overloads ("load" for "load(char const*)"); part of a name does not. */
    fp = fopen(sp, "a");
    fputs("load\nparse_confi\nbin+0x2000\n", fp);
    fclose(fp);
    assert_int_equal(fl_group_rules_load(r, sp, pp), 0);
    fl_group_rules_set_top_n(r, 5);
    build cxx = {"c0de", 0x555555554000, 0x555555554000, {0x1000, 0x2000, 0x3000}};
    sig_of(&cxx, 3, fake_sym, r, &s);
    assert_string_equal(s.text, "parse_config(std::string const&) | main");
    free(s.text);
    /* An unnamed frame, by its name as the signature shows it (the C
     * library's are skipped by module:libc.so.6 above). */
    assert_int_equal(fl_frames_build(L, L->callstack, L->ncallstack, r, NULL, NULL, &f), 0);
    assert_int_equal(fl_signature_compute(NULL, L->app_name, &f, r, &s), 0);
    assert_string_equal(s.text, "bin+0x1000");
    assert_true(f.v[3].noise && !f.v[2].noise);
    free(s.text);
    fl_frames_free(&f);
    unlink(sp);
    unlink(pp);
    rmdir(dir);
    fl_group_rules_free(r);
    fl_crashlog_free(L);
}

/* A project other than the default has groups of its own; the default
 * project's group ids are those from before projects (app + signature). */
static void test_project_group_id(void **st)
{
    (void)st;
    const char *log = "MOJOCRASH 0.0.1\nCRASHLOG_VERSION 1\nAPPLICATION_NAME t\n"
                      "OBJECT bin/4194304/65536\nCALLSTACK 4198400\nCALLSTACK 4202496\nEND\n";
    fl_crashlog *L = NULL;
    assert_int_equal(fl_crashlog_parse(log, strlen(log), &L, NULL), 0);
    fl_group_rules *r = fl_group_rules_new();
    fl_frames f;
    assert_int_equal(fl_frames_build(L, L->callstack, L->ncallstack, r, NULL, NULL, &f), 0);
    const char *projects[] = {NULL, "", "default", "mobile", "desktop"};
    fl_signature s[5];
    for (int i = 0; i < 5; i++)
        assert_int_equal(fl_signature_compute(projects[i], L->app_name, &f, r, &s[i]), 0);
    /* The old id: the hash of "t\n" + signature. */
    char key[256];
    int kl = snprintf(key, sizeof key, "t\n%s", s[0].text);
    uint8_t h[32];
    char hex[33];
    fl_sha256(key, (size_t)kl, h);
    fl_hex(h, 16, hex);
    assert_string_equal(s[0].group_id, hex);
    assert_string_equal(s[1].group_id, hex);
    assert_string_equal(s[2].group_id, hex);
    assert_string_not_equal(s[3].group_id, hex);
    assert_string_not_equal(s[4].group_id, hex);
    assert_string_not_equal(s[3].group_id, s[4].group_id);
    for (int i = 1; i < 5; i++) { /* the signature and the stack are the crash's */
        assert_string_equal(s[i].text, s[0].text);
        assert_string_equal(s[i].stack_hash, s[0].stack_hash);
    }
    /* The NUL between project and app keeps project "mobil" with app "et"
     * apart from project "mobile" with app "t". */
    fl_signature o;
    assert_int_equal(fl_signature_compute("mobil", "et", &f, r, &o), 0);
    assert_string_not_equal(o.group_id, s[3].group_id);
    free(o.text);
    for (int i = 0; i < 5; i++)
        free(s[i].text);
    fl_frames_free(&f);
    fl_group_rules_free(r);
    fl_crashlog_free(L);
}

static void test_process_example(void **st)
{
    (void)st;
    FILE *f = fopen(FL_TEST_DATA "/mojocrash-example.crashlog", "rb");
    assert_non_null(f);
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    fl_group_rules *r = fl_group_rules_new();
    fl_workers_config c = {.rules = r};
    fl_processed_buf b;
    assert_int_equal(fl_process_log("id1", NULL, buf, n, NULL, 0, 1700000000, &c, &b), 0);
    /* 4201103 - 4194304 = 0x1a8f in test-bin; the fifth frame, in libc
     * (unnamed, so its offset moves with libc's build), is left out. */
    assert_string_equal(b.p.signature,
                        "test-bin+0x1a8f | test-bin+0x167f | test-bin+0x1498 | test-bin+0x1595 | "
                        "test-bin+0x20d5");
    assert_string_equal(b.p.app, "TestApp");
    assert_string_equal(b.p.version, "1.0");
    assert_string_equal(b.p.os, "linux 2.6.22.10");
    assert_null(b.p.install_id);
    assert_non_null(strstr(b.p.frames_json, "\"function\":null"));
    assert_non_null(strstr(b.p.frames_json, "\"address\":\"0x401a8f\""));
    fl_processed_release(&b);
    assert_int_equal(fl_process_log("id2", NULL, "garbage", 7, NULL, 0, 0, &c, &b), -1);
    fl_group_rules_free(r);
}

/* A kept minidump's stacks, as fl_srvsym_unwind_dump would give them:
 * the crashing thread 10 longer than its log's, thread 11 from its pc on
 * (and out of every object after four frames), thread 12 from another pc
 * than its log's, thread 13 no longer than its log's. */
static int fake_unwind_dump(void *ctx, const void *dump, size_t len, fl_minidump_stack **out,
                            size_t *n)
{
    int *calls = ctx;
    (*calls)++;
    assert_int_equal(len, 4);
    assert_memory_equal(dump, "MDMP", 4);
    static const uint64_t s10[] = {0x1010, 0x1020, 0x1030, 0x1040, 0x1050};
    static const uint64_t s11[] = {0x2010, 0x2020, 0x2030, 0x2040, 0x999999, 0x2050};
    static const uint64_t s12[] = {0x2999, 0x2020, 0x2030};
    static const uint64_t s13[] = {0x2100, 0x2110};
    const struct {
        uint64_t tid;
        const uint64_t *pcs;
        size_t n;
    } src[] = {{10, s10, 5}, {11, s11, 6}, {12, s12, 3}, {13, s13, 2}};
    *n = 4;
    *out = calloc(*n, sizeof **out);
    assert_non_null(*out);
    for (size_t i = 0; i < *n; i++) {
        (*out)[i].tid = src[i].tid;
        (*out)[i].n = src[i].n;
        (*out)[i].pcs = malloc(src[i].n * sizeof(uint64_t));
        assert_non_null((*out)[i].pcs);
        memcpy((*out)[i].pcs, src[i].pcs, src[i].n * sizeof(uint64_t));
    }
    return 1;
}

/* The addresses of a processed thread's frames, "a b c". */
static void thread_addresses(json_t *doc, uint64_t tid, char *out, size_t cap, bool *server)
{
    out[0] = '\0';
    *server = false;
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(doc, "threads"), i, t)
    {
        if ((uint64_t)json_integer_value(json_object_get(t, "tid")) != tid)
            continue;
        *server = json_is_string(json_object_get(t, "stack_source"));
        size_t k;
        json_t *f;
        json_array_foreach(json_object_get(t, "frames"), k, f)
        {
            size_t o = strlen(out);
            snprintf(out + o, cap - o, "%s%s", o ? " " : "",
                     json_string_value(json_object_get(f, "address")));
        }
        return;
    }
    fail_msg("no thread %llu", (unsigned long long)tid);
}

/* fl_process_log with a kept minidump: each thread takes the dump's stack
 * when it starts at the pc the log has and is longer within the objects
 * (cut where it leaves them), marked stack_source "server"; otherwise the
 * log's stays.  Without a dump the hook is not called. */
static void test_process_dump(void **st)
{
    (void)st;
    static const char log[] = "FAULTLINE 0.1.0\nCRASHLOG_VERSION 2\nAPPLICATION_NAME dumpapp\n"
                              "CRASH_SIGNAL 11\nCRASH_THREAD 10\nCRASH_SOURCE minidump\n"
                              "OBJECT app/4096/8192\n"
                              "CALLSTACK 0x1010\n"
                              "THREAD 11\nTHREAD_FRAME 0x2010\n"
                              "THREAD 12\nTHREAD_FRAME 0x2010\n"
                              "THREAD 13\nTHREAD_FRAME 0x2100\nTHREAD_FRAME 0x2110\n"
                              "THREAD 14\nTHREAD_FRAME 0x2200\nEND\n";
    fl_group_rules *r = fl_group_rules_new();
    int calls = 0;
    fl_workers_config c = {.rules = r, .unwind_dump = fake_unwind_dump, .symbolize_ctx = &calls};
    fl_processed_buf b;
    char got[256];
    bool server;
    for (int with_dump = 1; with_dump >= 0; with_dump--) {
        calls = 0;
        assert_int_equal(fl_process_log("id", NULL, log, sizeof log - 1, with_dump ? "MDMP" : NULL,
                                        with_dump ? 4 : 0, 1700000000, &c, &b),
                         0);
        assert_int_equal(calls, with_dump);
        char *text = NULL;
        size_t tl = 0;
        assert_int_equal(fl_unzstd(b.p.zprocessed, b.p.zprocessed_len, 1u << 20, &text, &tl), 0);
        json_t *doc = json_loadb(text, tl, 0, NULL);
        assert_non_null(doc);
        assert_string_equal(json_string_value(json_object_get(doc, "stack_source")),
                            with_dump ? "server" : "client");
        thread_addresses(doc, 10, got, sizeof got, &server);
        assert_string_equal(got, with_dump ? "0x1010 0x1020 0x1030 0x1040 0x1050" : "0x1010");
        thread_addresses(doc, 11, got, sizeof got, &server);
        assert_string_equal(got, with_dump ? "0x2010 0x2020 0x2030 0x2040" : "0x2010");
        assert_true(server == with_dump);
        thread_addresses(doc, 12, got, sizeof got, &server); /* another pc: the log's */
        assert_string_equal(got, "0x2010");
        assert_false(server);
        thread_addresses(doc, 13, got, sizeof got, &server); /* not longer: the log's */
        assert_string_equal(got, "0x2100 0x2110");
        assert_false(server);
        thread_addresses(doc, 14, got, sizeof got, &server); /* not in the dump */
        assert_string_equal(got, "0x2200");
        assert_false(server);
        /* The signature follows the stack used. */
        assert_true((strstr(b.p.signature, "app+0x50") != NULL) == with_dump);
        json_decref(doc);
        free(text);
        fl_processed_release(&b);
    }
    fl_group_rules_free(r);
}

/* Formats kept apart: the section of the object with build id "aa" has
 * one site, at 0x1040 of its file; "bb" has none (no debug file yet). */
static int fake_formats(void *ctx, const char *build_id, const char *path, struct fl_tracesec **out)
{
    (void)path;
    ++*(int *)ctx;
    static const char sec[] = "\x40\x10\0\0\0\0\0\0%s took %d ms\0a.c";
    *out = NULL;
    if (!strcmp(build_id, "cc"))
        return -1; /* its debug file's section is damaged */
    return !strcmp(build_id, "aa") && !fl_tracesec_parse(sec, sizeof sec, out, NULL, 0);
}

static void test_process_apart(void **st)
{
    (void)st;
    static const char log[] =
        "FAULTLINE 0.1.0\nCRASHLOG_VERSION 2\nAPPLICATION_NAME apart\nCRASH_SIGNAL 11\n"
        "OBJECT app/0x1000/0x2000/0x800\nOBJECT_BUILD_ID aa\n"
        "OBJECT lib/0x10000/0x1000\nOBJECT_BUILD_ID bb\n"
        "OBJECT dam/0x20000/0x1000\nOBJECT_BUILD_ID cc\nCALLSTACK 0x1010\n"
        "TRACE_ID 1 7 0x1840 si 0x38 0x2a\nTRACE_BYTES 6f70656e0a00\n" /* found */
        "TRACE 2 7 plain\n"
        "TRACE_ID 3 7 0x1900 -\n"        /* in aa, but no such site */
        "TRACE_ID 4 7 0x10010 -\n"       /* bb: no debug file */
        "TRACE_ID 5 7 0x10020 i 0x1\n"   /* bb again: asked once */
        "TRACE_ID 6 7 0x90000 -\n"       /* in no object */
        "TRACE_ID 7 7 0x20010 -\nEND\n"; /* cc: a damaged section */
    fl_group_rules *r = fl_group_rules_new();
    int calls = 0;
    fl_workers_config c = {.rules = r, .trace_formats = fake_formats, .symbolize_ctx = &calls};
    fl_processed_buf b;
    assert_int_equal(fl_process_log("id", NULL, log, sizeof log - 1, NULL, 0, 1700000000, &c, &b),
                     0);
    assert_int_equal(calls, 3); /* once an object */
    char *text = NULL;
    size_t tl = 0;
    assert_int_equal(fl_unzstd(b.p.zprocessed, b.p.zprocessed_len, 1u << 20, &text, &tl), 0);
    json_t *doc = json_loadb(text, tl, 0, NULL);
    assert_non_null(doc);
    json_t *tr = json_object_get(doc, "trace");
    assert_int_equal(json_array_size(tr), 7);
    static const char *const want[][2] = {
        {"open\\n took 42 ms", "debug file"},
        {"plain", NULL},
        {"<trace format kept apart: the debug file of app has no site at 0x1100>", "missing"},
        {"<trace format kept apart: no debug file of lib (build id bb) with its formats yet>",
         "missing"},
        {"<trace format kept apart: no debug file of lib (build id bb) with its formats yet>",
         "missing"},
        {"<trace format kept apart: the site 0x90000 is in no object with a build id>", "missing"},
        {"<trace format kept apart: the formats in the debug file of dam (build id cc) are "
         "damaged>",
         "missing"},
    };
    for (size_t i = 0; i < 7; i++) {
        json_t *e = json_array_get(tr, i);
        assert_string_equal(json_string_value(json_object_get(e, "text")), want[i][0]);
        const char *f = json_string_value(json_object_get(e, "format"));
        if (want[i][1])
            assert_string_equal(f, want[i][1]);
        else
            assert_null(f);
    }
    /* bb waits for its debug file (the backfill); aa has it. */
    bool bb = false;
    for (size_t i = 0; i < b.nmissing; i++) {
        assert_string_not_equal(b.missing[i], "aa");
        bb |= !strcmp(b.missing[i], "bb");
    }
    assert_true(bb);
    json_decref(doc);
    free(text);
    fl_processed_release(&b);
    fl_group_rules_free(r);
}

/* The workers' flush on a move of the store's symbols version: once per
 * version, not once per worker. */
static void test_symbols_changed_once(void **st)
{
    (void)st;
    char dir[] = "/tmp/fl-srvsym-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char up[64], cache[64], err[256];
    snprintf(up, sizeof up, "%s/up", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    fl_srvsym_config cfg = {.upload_root = up, .cache_dir = cache};
    fl_srvsym *s = NULL;
    assert_int_equal(fl_srvsym_new(&cfg, &s, err, sizeof err), 0);
    uint64_t g = fl_srvsym_generation(s);
    fl_srvsym_symbols_changed(s, 5);
    assert_int_equal(fl_srvsym_generation(s), g + 1);
    fl_srvsym_symbols_changed(s, 5); /* a second worker seeing the same move */
    assert_int_equal(fl_srvsym_generation(s), g + 1);
    fl_srvsym_symbols_changed(s, 6);
    assert_int_equal(fl_srvsym_generation(s), g + 2);
    fl_srvsym_symbols_changed(s, 4); /* back (rows gone): a move too */
    assert_int_equal(fl_srvsym_generation(s), g + 3);
    fl_srvsym_free(s);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vercmp),
        cmocka_unit_test(test_sha256),
        cmocka_unit_test(test_gunzip),
        cmocka_unit_test(test_group_symbols),
        cmocka_unit_test(test_group_offsets),
        cmocka_unit_test(test_skip_lists),
        cmocka_unit_test(test_group_ifunc_variants),
        cmocka_unit_test(test_group_module_stem),
        cmocka_unit_test(test_process_example),
        cmocka_unit_test(test_process_dump),
        cmocka_unit_test(test_project_group_id),
        cmocka_unit_test(test_group_startup_frames),
        cmocka_unit_test(test_group_cxx_abort),
        cmocka_unit_test(test_group_function_key),
        cmocka_unit_test(test_group_cycles_threads_aliases),
        cmocka_unit_test(test_group_tail_calls),
        cmocka_unit_test(test_process_apart),
        cmocka_unit_test(test_symbols_changed_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
