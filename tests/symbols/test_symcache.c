/*
 * test_symcache - the symcache builder and reader through the library API.
 *
 *   test_symcache PROGRAM WORKDIR [SEED_CORPUS_DIR]
 *
 * PROGRAM is tests/symbols/data/inline_heavy.c built with -O2 -g;
 * CALLSITES_DIR holds tests/symbols/data/callsites.{c,cpp} built by the
 * compilers there are (see CMakeLists.txt).  The
 * tests build its symcache, look addresses up, then feed the reader and
 * the builder damaged input (memoized lookups too): every truncation, byte flips, forged
 * checksums over broken indices, garbage and truncated ELF files.  The
 * point of the damage tests is "clean error, never a crash" (they run
 * under ASan+UBSan too).
 */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fl_symcache.h"
#include "fl_symdwo.h"
#include "fl_symdwp.h"
#include "fl_symstore.h"
#include "symcache_build_int.h"
#include "symcache_format.h"

static const char *g_prog;
static const char *g_work;
static const char *g_corpus; /* fuzz/corpus/symcache */

static void *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    /* 8-byte aligned, as the reader requires. */
    uint64_t *buf = malloc((size_t)n + 8);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void spit(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    fclose(f);
}

static void path_in_work(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", g_work, name);
}

/* Address of a symbol by name from the symcache itself: scan addresses
 * for a frame whose outermost function is `name`. */
static uint64_t find_function(const fl_symcache *sc, const char *name)
{
    for (uint64_t a = 0x1000; a < 0x4000; a++) {
        fl_symframe f[16];
        size_t n = fl_symcache_lookup(sc, a, f, 16);
        if (n >= 1 && n <= 16 && f[n - 1].function && !strcmp(f[n - 1].function, name))
            return a;
    }
    return 0;
}

static void test_build_and_lookup(void **state)
{
    (void)state;
    char out[512], err[256];
    path_in_work(out, sizeof out, "prog.symcache");
    fl_symbuild_stats st;
    int rc = fl_symcache_build(g_prog, out, &st, err, sizeof err);
    assert_int_equal(rc, 0);
    assert_true(st.has_dwarf);
    assert_true(st.records > 10);
    fl_symcache *sc = NULL;
    assert_int_equal(fl_symcache_open(out, &sc, err, sizeof err), 0);
    const uint8_t *id;
    assert_int_equal(fl_symcache_build_id(sc, &id), 20);

    uint64_t main_addr = find_function(sc, "main");
    assert_true(main_addr != 0);
    fl_symframe f[64];
    size_t n = fl_symcache_lookup(sc, main_addr, f, 64);
    assert_true(n >= 1);
    assert_string_equal(f[n - 1].function, "main");
    assert_non_null(f[n - 1].file);
    assert_non_null(strstr(f[n - 1].file, "inline_heavy.c"));
    assert_int_equal(f[n - 1].inlined, 0);

    /* Somewhere in run() there must be an inline chain of depth >= 3
     * (level1 -> level2 -> level3 -> ...), innermost first. */
    size_t deepest = 0;
    for (uint64_t a = 0x1000; a < 0x4000; a++) {
        n = fl_symcache_lookup(sc, a, f, 64);
        if (n > deepest && n <= 64)
            deepest = n;
        if (n >= 3 && n <= 64) {
            for (size_t i = 0; i + 1 < n; i++)
                assert_int_equal(f[i].inlined, 1);
            assert_int_equal(f[n - 1].inlined, 0);
        }
    }
    assert_true(deepest >= 3);

    /* max smaller than the chain: the count is still the full depth. */
    for (uint64_t a = 0x1000; a < 0x4000; a++) {
        size_t full = fl_symcache_lookup(sc, a, f, 64);
        if (full >= 2) {
            assert_int_equal(fl_symcache_lookup(sc, a, f, 1), full);
            assert_int_equal(fl_symcache_lookup(sc, a, NULL, 0), full);
            break;
        }
    }
    /* An address nothing covers: one all-unknown frame. */
    n = fl_symcache_lookup(sc, 0, f, 64);
    assert_int_equal(n, 1);
    assert_null(f[0].file);
    assert_int_equal(f[0].line, 0);
    fl_symcache_close(sc);
    fl_symcache_close(NULL);
}

/* Lookups on a memoized handle answer exactly as on a plain one: three
 * passes (a block's first visit, its fill, then the memo), addresses
 * before, inside and past the module, and four threads at once on a
 * fresh memoized handle (the fill races; under ASan too). */
typedef struct memo_job {
    const fl_symcache *memo, *plain;
    uint64_t from, to;
    int diffs;
} memo_job;

static int same_frames(const fl_symcache *a, const fl_symcache *b, uint64_t addr)
{
    fl_symframe fa[64], fb[64];
    size_t na = fl_symcache_lookup(a, addr, fa, 64), nb = fl_symcache_lookup(b, addr, fb, 64);
    if (na != nb || na > 64)
        return 0;
    for (size_t i = 0; i < na; i++)
        if (fa[i].function != fb[i].function || fa[i].file != fb[i].file ||
            fa[i].line != fb[i].line || fa[i].column != fb[i].column ||
            fa[i].inlined != fb[i].inlined)
            return 0;
    return 1;
}

static void *memo_worker(void *arg)
{
    memo_job *j = arg;
    for (int pass = 0; pass < 3; pass++)
        for (uint64_t a = j->from; a < j->to; a++)
            j->diffs += !same_frames(j->memo, j->plain, a);
    return NULL;
}

static void test_memoize(void **state)
{
    (void)state;
    char path[512], err[256];
    path_in_work(path, sizeof path, "prog.symcache");
    size_t len;
    uint8_t *buf = slurp(path, &len);
    fl_symcache *plain = NULL, *memo = NULL;
    /* Both handles on the same bytes: equal answers are equal pointers. */
    assert_int_equal(fl_symcache_open_mem(buf, len, &plain, err, sizeof err), 0);
    assert_int_equal(fl_symcache_open_mem(buf, len, &memo, err, sizeof err), 0);
    assert_int_equal(fl_symcache_memoize(memo), 0);
    assert_int_equal(fl_symcache_memoize(memo), 0); /* again: a no-op */
    int diffs = 0, named = 0;
    for (int pass = 0; pass < 3; pass++)
        for (uint64_t a = 0; a < 0x6000; a++) {
            diffs += !same_frames(memo, plain, a);
            fl_symframe f[64];
            size_t n = fl_symcache_lookup(memo, a, f, 64);
            named += n >= 1 && n <= 64 && f[0].function != NULL;
        }
    assert_int_equal(diffs, 0);
    assert_true(named > 3 * 0x1000); /* the memo answered, not just "??" */
    for (int k = 0; k < 64; k++) {
        uint64_t a = UINT64_MAX - (uint64_t)k * 0x10000001ull;
        assert_true(same_frames(memo, plain, a));
        assert_true(same_frames(memo, plain, (uint64_t)1 << (32 + k % 32)));
    }
    fl_symcache_close(memo);

    memo = NULL;
    assert_int_equal(fl_symcache_open_mem(buf, len, &memo, err, sizeof err), 0);
    assert_int_equal(fl_symcache_memoize(memo), 0);
    pthread_t t[4];
    memo_job jobs[4];
    for (int i = 0; i < 4; i++) {
        /* Overlapping ranges, so threads meet on the same blocks. */
        jobs[i] = (memo_job){memo, plain, 0x1000 + (uint64_t)i * 0x400, 0x3000, 0};
        assert_int_equal(pthread_create(&t[i], NULL, memo_worker, &jobs[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_int_equal(jobs[i].diffs, 0);
    }
    fl_symcache_close(memo);
    fl_symcache_close(plain);
    assert_int_equal(fl_symcache_memoize(NULL), FL_SYM_EINVAL);
    free(buf);
}

/* Every prefix of a valid symcache is refused; so is every byte flip
 * (the checksum or a structural check catches it). */
static void test_truncated_and_flipped(void **state)
{
    (void)state;
    char path[512], err[256];
    path_in_work(path, sizeof path, "prog.symcache");
    size_t len;
    uint8_t *buf = slurp(path, &len);
    fl_symcache *sc;
    for (size_t cut = 0; cut < len; cut += (cut < 512 ? 1 : 97)) {
        sc = (fl_symcache *)1;
        int rc = fl_symcache_open_mem(buf, cut, &sc, err, sizeof err);
        assert_true(rc < 0);
        assert_null(sc);
    }
    char tpath[512];
    path_in_work(tpath, sizeof tpath, "truncated.symcache");
    spit(tpath, buf, len / 2);
    assert_int_equal(fl_symcache_open(tpath, &sc, err, sizeof err), FL_SYM_ECORRUPT);
    spit(tpath, buf, 10);
    assert_int_equal(fl_symcache_open(tpath, &sc, err, sizeof err), FL_SYM_ECORRUPT);
    assert_int_equal(fl_symcache_open("/nonexistent/x.symcache", &sc, err, sizeof err),
                     FL_SYM_EIO);

    uint8_t *copy = malloc(len + 8);
    for (size_t pos = 0; pos < len; pos += 13) {
        memcpy(copy, buf, len);
        copy[pos] ^= 0x5a;
        sc = NULL;
        int rc = fl_symcache_open_mem(copy, len, &sc, err, sizeof err);
        assert_true(rc == FL_SYM_ECORRUPT || rc == FL_SYM_EVERSION);
        assert_null(sc);
    }
    free(copy);
    free(buf);
}

/* Damage behind a valid checksum: the reader must bounds-check every index
 * and offset it follows. */
static void test_forged_checksum(void **state)
{
    (void)state;
    char path[512], err[256];
    path_in_work(path, sizeof path, "prog.symcache");
    size_t len;
    uint8_t *buf = slurp(path, &len);
    uint8_t *copy = malloc(len + 8);
    fl_sc_header h;
    memcpy(&h, buf, sizeof h);
    uint64_t seed = 88172645463325252ull;
    for (int iter = 0; iter < 400; iter++) {
        memcpy(copy, buf, len);
        /* Overwrite a few random 32-bit words in the body with extreme or
         * random values. */
        for (int k = 0; k < 4; k++) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            size_t pos = FL_SC_HEADER_SIZE + (seed % (len - FL_SC_HEADER_SIZE - 4));
            uint32_t v = (iter & 1) ? 0xFFFFFFF0u + (uint32_t)(seed >> 60) : (uint32_t)(seed >> 32);
            memcpy(copy + pos, &v, 4);
        }
        memcpy(copy, &h, sizeof h);
        h.checksum = fl_sc_file_checksum(copy, len);
        memcpy(copy, &h, sizeof h);
        fl_symcache *sc = NULL;
        int rc = fl_symcache_open_mem(copy, len, &sc, err, sizeof err);
        if (rc != 0) { /* e.g. the string table's final NUL was hit */
            assert_int_equal(rc, FL_SYM_ECORRUPT);
            continue;
        }
        for (uint64_t a = 0x1000; a < 0x4000; a += 7) {
            fl_symframe f[300];
            size_t n = fl_symcache_lookup(sc, a, f, 300);
            assert_true(n >= 1 && n <= FL_SC_MAX_INLINE_DEPTH);
        }
        /* The same through the memo: visit, fill, then memo. */
        assert_int_equal(fl_symcache_memoize(sc), 0);
        for (int pass = 0; pass < 3; pass++)
            for (uint64_t a = 0x1000; a < 0x4000; a += 7) {
                fl_symframe f[300];
                size_t n = fl_symcache_lookup(sc, a, f, 300);
                assert_true(n >= 1 && n <= FL_SC_MAX_INLINE_DEPTH);
            }
        fl_symcache_close(sc);
    }
    /* Header fields pointing outside the file are refused, even behind a
     * correct checksum. */
    memcpy(&h, buf, sizeof h);
    fl_sc_header bads[4];
    for (int i = 0; i < 4; i++)
        bads[i] = h;
    bads[0].records_count = UINT64_MAX / 8;
    bads[1].strings_off = len - 1;
    bads[2].baddrs_off = 3;
    bads[3].build_id_len = 200;
    for (int i = 0; i < 4; i++) {
        memcpy(copy, buf, len);
        memcpy(copy, &bads[i], sizeof bads[i]);
        bads[i].checksum = fl_sc_file_checksum(copy, len);
        memcpy(copy, &bads[i], sizeof bads[i]);
        fl_symcache *sc = NULL;
        assert_int_equal(fl_symcache_open_mem(copy, len, &sc, err, sizeof err), FL_SYM_ECORRUPT);
    }
    /* Huffman code lengths that are too long, or not a prefix code. */
    for (int i = 0; i < 2; i++) {
        memcpy(copy, buf, len);
        if (i == 0)
            copy[h.huff_off + 3] = (FL_SC_HUFF_BITS + 1) << 4;
        else
            memset(copy + h.huff_off, 0x11, 128); /* 256 one-bit codes */
        fl_sc_header hh = h;
        memcpy(copy, &hh, sizeof hh);
        hh.checksum = fl_sc_file_checksum(copy, len);
        memcpy(copy, &hh, sizeof hh);
        fl_symcache *sc = NULL;
        assert_int_equal(fl_symcache_open_mem(copy, len, &sc, err, sizeof err), FL_SYM_ECORRUPT);
    }
    fl_sc_header bad = h;
    bad.version = 99;
    memcpy(copy, &bad, sizeof bad);
    fl_symcache *sc = NULL;
    assert_int_equal(fl_symcache_open_mem(copy, len, &sc, err, sizeof err), FL_SYM_EVERSION);
    free(copy);
    free(buf);
}

/* Garbage, empty and truncated ELF input: a clean error (or, for a
 * truncation that still parses, a valid symcache), never a crash. */
static void test_bad_elf(void **state)
{
    (void)state;
    char in[512], out[512], err[256];
    path_in_work(in, sizeof in, "garbage.elf");
    path_in_work(out, sizeof out, "garbage.symcache");
    uint8_t junk[4096];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (uint8_t)(i * 131u + 7u);
    spit(in, junk, sizeof junk);
    assert_int_equal(fl_symcache_build(in, out, NULL, err, sizeof err), FL_SYM_ENOTELF);
    assert_true(strlen(err) > 0);
    struct stat st;
    assert_int_not_equal(stat(out, &st), 0); /* nothing left behind */

    spit(in, junk, 0);
    assert_int_equal(fl_symcache_build(in, out, NULL, err, sizeof err), FL_SYM_ENOTELF);
    assert_int_equal(fl_symcache_build("/nonexistent/file", out, NULL, err, sizeof err),
                     FL_SYM_EIO);

    /* An ELF header followed by junk. */
    size_t len;
    uint8_t *prog = slurp(g_prog, &len);
    memcpy(junk, prog, 64);
    spit(in, junk, sizeof junk);
    int rc = fl_symcache_build(in, out, NULL, err, sizeof err);
    assert_true(rc == 0 || rc == FL_SYM_ENOTELF || rc == FL_SYM_EDWARF);

    /* Truncations and corruptions of the real program, in memory. */
    for (size_t cut = 0; cut < len; cut += len / 61 + 1) {
        void *sc_buf = NULL;
        size_t sc_len = 0;
        rc = fl_symcache_build_mem(prog, cut, &sc_buf, &sc_len, NULL, err, sizeof err);
        if (rc == 0) {
            fl_symcache *sc = NULL;
            assert_int_equal(fl_symcache_open_mem(sc_buf, sc_len, &sc, err, sizeof err), 0);
            fl_symcache_close(sc);
        }
        free(sc_buf);
    }
    uint8_t *copy = malloc(len);
    uint64_t seed = 0x1234567;
    for (int iter = 0; iter < 60; iter++) {
        memcpy(copy, prog, len);
        for (int k = 0; k < 16; k++) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            copy[64 + seed % (len - 64)] ^= (uint8_t)(seed >> 56);
        }
        void *sc_buf = NULL;
        size_t sc_len = 0;
        rc = fl_symcache_build_mem(copy, len, &sc_buf, &sc_len, NULL, err, sizeof err);
        if (rc == 0) {
            fl_symcache *sc = NULL;
            assert_int_equal(fl_symcache_open_mem(sc_buf, sc_len, &sc, err, sizeof err), 0);
            fl_symframe f[16];
            fl_symcall c[4];
            for (uint64_t a = 0x1000; a < 0x3000; a += 3) {
                fl_symcache_lookup(sc, a, f, 16);
                /* Call sites from damaged DWARF: names inside the file. */
                if (fl_symcache_call_at(sc, a, c) && c[0].target_name)
                    assert_true(strlen(c[0].target_name) < sc_len);
                size_t n = fl_symcache_tail_calls(sc, a, c, 4);
                for (size_t k = 0; k < n && k < 4; k++)
                    if (c[k].target_name)
                        assert_true(strlen(c[k].target_name) < sc_len);
            }
            fl_symcache_close(sc);
        }
        free(sc_buf);
    }
    free(copy);
    free(prog);
}

/* Fail each allocation of a build in turn (curl's "torture" idea): every
 * run ends in success or a clean error, never a crash or (under ASan) a
 * leak, and a successful run still writes a valid symcache. */
static void test_alloc_failures(void **state)
{
    (void)state;
    size_t len;
    uint8_t *prog = slurp(g_prog, &len);
    char err[256];
    int completed = 0, failures = 0;
    for (long n = 0; n < 20000 && !completed; n++) {
        fl_symcache_test_fail_alloc(n);
        void *out = NULL;
        size_t outlen = 0;
        int rc = fl_symcache_build_mem(prog, len, &out, &outlen, NULL, err, sizeof err);
        int hit = fl_symcache_test_alloc_failed();
        fl_symcache_test_fail_alloc(-1);
        if (!hit) {
            assert_int_equal(rc, 0);
            completed = 1;
        }
        if (rc == 0) {
            fl_symcache *sc = NULL;
            assert_int_equal(fl_symcache_open_mem(out, outlen, &sc, err, sizeof err), 0);
            fl_symcache_close(sc);
        } else {
            assert_int_equal(rc, FL_SYM_ENOMEM);
            assert_null(out);
            failures++;
        }
        free(out);
    }
    assert_true(completed);
    assert_true(failures > 10);
    free(prog);
}

/* The builder drops libdw's data as it goes (a new Dwarf handle once the
 * units read hold enough line rows): doing so before every unit gives the
 * same bytes as the whole file read through one handle. */
static void test_dwarf_handle_recycled(void **state)
{
    (void)state;
    size_t len;
    uint8_t *prog = slurp(g_prog, &len);
    char err[256];
    void *a = NULL, *b = NULL;
    size_t alen = 0, blen = 0;
    fl_symcache_test_dwarf_rows(1L << 30);
    assert_int_equal(fl_symcache_build_mem(prog, len, &a, &alen, NULL, err, sizeof err), 0);
    fl_symcache_test_dwarf_rows(0);
    assert_int_equal(fl_symcache_build_mem(prog, len, &b, &blen, NULL, err, sizeof err), 0);
    fl_symcache_test_dwarf_rows(-1);
    assert_int_equal(alen, blen);
    assert_memory_equal(a, b, alen);
    free(a);
    free(b);
    free(prog);
}

/* The cache directory: a second get() opens instead of building, a
 * damaged cache file is rebuilt. */
static void test_store(void **state)
{
    (void)state;
    char dir[512], path[512], path2[512], err[256];
    path_in_work(dir, sizeof dir, "store/a/b");
    fl_symcache *sc = NULL;
    int built = 0;
    assert_int_equal(fl_symstore_get(dir, g_prog, NULL, 0, &sc, &built, NULL, path, sizeof path,
                                     err, sizeof err),
                     0);
    assert_int_equal(built, 1);
    fl_symcache_close(sc);
    assert_int_equal(fl_symstore_get(dir, g_prog, NULL, 0, &sc, &built, NULL, path2, sizeof path2,
                                     err, sizeof err),
                     0);
    assert_int_equal(built, 0);
    assert_string_equal(path, path2);
    fl_symcache_close(sc);
    /* A file of an older format version (same size, valid checksum) is
     * refused as such, and get() rebuilds it. */
    {
        size_t len;
        uint8_t *buf = slurp(path, &len);
        fl_sc_header h;
        memcpy(&h, buf, sizeof h);
        h.version = FL_SC_VERSION_MIN - 1;
        memcpy(buf, &h, sizeof h);
        h.checksum = fl_sc_file_checksum(buf, len);
        memcpy(buf, &h, sizeof h);
        spit(path, buf, len);
        free(buf);
        assert_int_equal(fl_symcache_open(path, &sc, err, sizeof err), FL_SYM_EVERSION);
        assert_int_equal(fl_symstore_get(dir, g_prog, NULL, 0, &sc, &built, NULL, path2,
                                         sizeof path2, err, sizeof err),
                         0);
        assert_int_equal(built, 1);
        fl_symcache_close(sc);
        assert_int_equal(fl_symcache_open(path, &sc, err, sizeof err), 0);
        fl_symcache_close(sc);
    }
    /* A file of the current format by an older builder (its builder field
     * 0, as every file before FL_SC_BUILDER, valid checksum) opens, but
     * get() rebuilds it: such a file from before split DWARF answered "??"
     * for a split program's functions, with no flag to say so, for good. */
    {
        size_t len;
        uint8_t *buf = slurp(path, &len);
        fl_sc_header h;
        memcpy(&h, buf, sizeof h);
        assert_int_equal(h.builder, FL_SC_BUILDER);
        h.builder = 0;
        h.checksum = 0;
        memcpy(buf, &h, sizeof h);
        h.checksum = fl_sc_file_checksum(buf, len);
        memcpy(buf, &h, sizeof h);
        spit(path, buf, len);
        free(buf);
        assert_int_equal(fl_symcache_open(path, &sc, err, sizeof err), 0);
        assert_int_equal(fl_symcache_builder(sc), 0);
        fl_symcache_close(sc);
        assert_int_equal(fl_symstore_get(dir, g_prog, NULL, 0, &sc, &built, NULL, path2,
                                         sizeof path2, err, sizeof err),
                         0);
        assert_int_equal(built, 1);
        assert_string_equal(path, path2);
        assert_int_equal(fl_symcache_builder(sc), FL_SC_BUILDER);
        fl_symcache_close(sc);
        assert_int_equal(
            fl_symstore_get(dir, g_prog, NULL, 0, &sc, &built, NULL, NULL, 0, err, sizeof err), 0);
        assert_int_equal(built, 0);
        fl_symcache_close(sc);
    }
    /* A version 3 file of builder revision 2 (before call sites: the
     * header of 256 bytes, the rest of the bytes as they were) opens,
     * without call sites, and get() rebuilds it into one with them. */
    {
        size_t len;
        uint8_t *buf = slurp(path, &len);
        fl_sc_header h;
        memcpy(&h, buf, sizeof h);
        assert_int_equal(h.version, FL_SC_VERSION);
        h.version = 3;
        h.header_size = FL_SC_HEADER3_SIZE;
        h.builder = 2;
        h.flags &= ~FL_SC_F_EXPORTS; /* a version 5 table */
        h.checksum = 0;
        memcpy(buf, &h, sizeof h);
        h.checksum = fl_sc_file_checksum(buf, len);
        memcpy(buf, &h, sizeof h);
        spit(path, buf, len);
        free(buf);
        assert_int_equal(fl_symcache_open(path, &sc, err, sizeof err), 0);
        assert_int_equal(fl_symcache_has_calls(sc), 0);
        fl_symcache_close(sc);
        assert_int_equal(fl_symstore_get(dir, g_prog, NULL, 0, &sc, &built, NULL, path2,
                                         sizeof path2, err, sizeof err),
                         0);
        assert_int_equal(built, 1);
        assert_int_equal(fl_symcache_builder(sc), FL_SC_BUILDER);
        assert_int_equal(fl_symcache_has_calls(sc), 1); /* gcc -O2 writes call sites */
        fl_symcache_close(sc);
    }
    /* Damage it: the next get() notices and rebuilds. */
    truncate(path, 100);
    assert_int_equal(
        fl_symstore_get(dir, g_prog, NULL, 0, &sc, &built, NULL, NULL, 0, err, sizeof err), 0);
    assert_int_equal(built, 1);
    fl_symcache_close(sc);
    assert_string_equal(fl_sym_strerror(FL_SYM_ECORRUPT), "corrupt or truncated symcache");
}

/* Threads asking a cache directory for the same module at once (a
 * server's workers and its upload thread, when an upload re-queues its
 * crashes): one builds, the others wait and open its symcache -- four
 * builds at once held four copies of a large module's debug information. */
struct store_job {
    pthread_barrier_t *start;
    const char *dir;
    int rc, built;
};

static void *store_worker(void *arg)
{
    struct store_job *j = arg;
    fl_symcache *sc = NULL;
    char err[256];
    pthread_barrier_wait(j->start);
    j->rc =
        fl_symstore_get(j->dir, g_prog, NULL, 0, &sc, &j->built, NULL, NULL, 0, err, sizeof err);
    fl_symcache_close(sc);
    return NULL;
}

static void test_store_concurrent(void **state)
{
    (void)state;
    char dir[512];
    path_in_work(dir, sizeof dir, "store-concurrent");
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 4);
    struct store_job jobs[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (struct store_job){&start, dir, -1, 0};
        assert_int_equal(pthread_create(&t[i], NULL, store_worker, &jobs[i]), 0);
    }
    int built = 0;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_int_equal(jobs[i].rc, 0);
        built += jobs[i].built;
    }
    pthread_barrier_destroy(&start);
    assert_int_equal(built, 1);
}

static bool is_dir(const char *p)
{
    struct stat st;
    return lstat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A split-DWARF build's private directory, as fl_symcache_build_with
 * makes one next to the symcache DIR/NAME.symcache (g_prog has no split
 * unit: the view holds the DWARF file alone). */
static int begin_view(fl_dwo_view *v, const char *dir, const char *name)
{
    fl_dwo_unit u = {.dwo_id = "0123456789abcdef", .found = FL_DWO_FOUND_FINDER};
    char near[600];
    snprintf(near, sizeof near, "%s/%s.symcache", dir, name);
    return fl_dwo_view_begin(v, g_prog, &u, 1, near, NULL, 0);
}

/* What killed builds left in a cache directory goes, at a server's start
 * (fl_symstore_clean) and before the next view is made; what a live
 * build of this or another process holds stays, and so does a directory
 * named like a view but holding something else. */
static void test_stale_views(void **state)
{
    (void)state;
    char dir[512], p[800];
    path_in_work(dir, sizeof dir, "views");
    assert_int_equal(mkdir(dir, 0755), 0);
    fl_dwo_view live;
    assert_int_equal(begin_view(&live, dir, "live"), 0);
    assert_true(is_dir(live.dir));
    /* Another process in the middle of a build: it made its view and
     * waits on a pipe (killed -9 below). */
    int path_pipe[2], hold[2];
    assert_int_equal(pipe(path_pipe), 0);
    assert_int_equal(pipe(hold), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        fl_dwo_view v;
        char c;
        close(hold[1]);
        if (begin_view(&v, dir, "other") != 0)
            _exit(1);
        (void)!write(path_pipe[1], v.dir, strlen(v.dir) + 1);
        (void)!read(hold[0], &c, 1);
        _exit(0);
    }
    close(hold[0]);
    close(path_pipe[1]);
    char theirs[sizeof live.dir] = "";
    assert_true(read(path_pipe[0], theirs, sizeof theirs) > 0);
    close(path_pipe[0]);
    assert_true(is_dir(theirs));
    /* One of a builder before the lock (mkdtemp's name), left behind. */
    char old[700];
    snprintf(old, sizeof old, "%s/1234.symcache.dwo.Ab3xYz", dir);
    assert_int_equal(mkdir(old, 0700), 0);
    snprintf(p, sizeof p, "%s/d", old);
    assert_int_equal(link(g_prog, p), 0);
    snprintf(p, sizeof p, "%s/0", old);
    assert_int_equal(symlink(g_prog, p), 0);
    /* A unit's .dwo written from a .dwp package (dwo.c's "d.<DWO id>"). */
    snprintf(p, sizeof p, "%s/d.0123456789abcdef", old);
    spit(p, "x", 1);
    /* Named like one, but not one. */
    char notours[700];
    snprintf(notours, sizeof notours, "%s/keep.symcache.dwo.Qw3rTy", dir);
    assert_int_equal(mkdir(notours, 0700), 0);
    snprintf(p, sizeof p, "%s/notes", notours);
    spit(p, "x", 1);

    size_t removed = 9;
    assert_int_equal(fl_symstore_clean(dir, &removed, NULL), 0);
    assert_int_equal(removed, 1);
    assert_false(is_dir(old));
    assert_true(is_dir(live.dir));
    assert_true(is_dir(theirs));
    assert_true(is_dir(notours));

    /* kill -9 in the middle of the build: its directory stays, and the
     * next build's view clears it away. */
    assert_int_equal(kill(child, SIGKILL), 0);
    int status = 0;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    close(hold[1]);
    assert_true(is_dir(theirs));
    fl_dwo_view next;
    assert_int_equal(begin_view(&next, dir, "next"), 0);
    assert_false(is_dir(theirs));
    assert_true(is_dir(live.dir));
    char mine[sizeof next.dir];
    snprintf(mine, sizeof mine, "%s", next.dir);
    assert_true(is_dir(mine));
    fl_dwo_view_end(&next);
    assert_false(is_dir(mine));

    fl_dwo_view_end(&live);
    assert_int_equal(fl_symstore_clean(dir, &removed, NULL), 0);
    assert_int_equal(removed, 0);
    assert_true(is_dir(notours));
}

static bool exists(const char *p)
{
    struct stat st;
    return lstat(p, &st) == 0;
}

/* The unfinished file of a symcache build that was killed before its
 * rename: fl_symstore_clean removes it unless a live build of another
 * process holds its key's lock, and fl_symstore_get removes its own key's
 * before it builds.  Other files stay. */
static void test_stale_tmp(void **state)
{
    (void)state;
    char dir[512], err[256], path[512];
    path_in_work(dir, sizeof dir, "tmps");
    assert_int_equal(mkdir(dir, 0755), 0);
    uint8_t id[FL_SYM_BUILD_ID_MAX];
    size_t idlen = 0;
    uint64_t fp = 0;
    assert_int_equal(fl_symcache_identify(g_prog, id, &idlen, &fp, err, sizeof err), 0);
    assert_true(idlen > 0);
    char key[2 * FL_SYM_BUILD_ID_MAX + 1];
    fl_sym_hex(id, idlen, key, sizeof key);
    char held[800], gone[800], mine[800], keep[800], keep2[800];
    snprintf(held, sizeof held, "%s/00held.symcache.tmp.Ab12Cd", dir);
    snprintf(gone, sizeof gone, "%s/11gone.0123456789abcdef.symcache.tmp.xY34zW", dir);
    snprintf(mine, sizeof mine, "%s/%s.symcache.tmp.Qq99Rr", dir, key);
    snprintf(keep, sizeof keep, "%s/notes.txt", dir);
    snprintf(keep2, sizeof keep2, "%s/22x.symcache.tmp.toolong1", dir);
    spit(held, "x", 1);
    spit(gone, "x", 1);
    spit(keep, "x", 1);
    spit(keep2, "x", 1);
    /* Another process building 00held: it holds the key's lock. */
    int ready[2], hold[2];
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(hold), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        char c;
        close(hold[1]);
        if (fl_sym_lock_byte(dir, ".lock", "00held", true) < 0)
            _exit(1);
        (void)!write(ready[1], "r", 1);
        (void)!read(hold[0], &c, 1);
        _exit(0);
    }
    close(hold[0]);
    close(ready[1]);
    char c = 0;
    assert_int_equal(read(ready[0], &c, 1), 1);
    close(ready[0]);
    size_t dirs = 9, files = 9;
    assert_int_equal(fl_symstore_clean(dir, &dirs, &files), 0);
    assert_int_equal(dirs, 0);
    /* 00held and 11gone may share a byte of the lock file: then both wait
     * for the holder.  At least the held one stays. */
    assert_true(exists(held));
    assert_true(files == 1 ? !exists(gone) : files == 0 && exists(gone));
    assert_true(exists(keep) && exists(keep2));
    close(hold[1]);
    int status = 0;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    size_t before = files;
    assert_int_equal(fl_symstore_clean(dir, NULL, &files), 0);
    assert_int_equal(before + files, 2);
    assert_false(exists(held));
    assert_false(exists(gone));
    assert_true(exists(keep) && exists(keep2));

    /* A build clears its own key's leftover first. */
    spit(mine, "x", 1);
    fl_symcache *sc = NULL;
    int built = 0;
    assert_int_equal(fl_symstore_get(dir, g_prog, NULL, 1, &sc, &built, NULL, path, sizeof path,
                                     err, sizeof err),
                     0);
    assert_int_equal(built, 1);
    fl_symcache_close(sc);
    assert_false(exists(mine));
    assert_true(exists(keep) && exists(keep2));
}

/* A .dwp unit index (fl_dwp_index_parse) built here: version, N columns
 * (cols), U units, S slots; ids[i] in slot i with row rows[i]; offsets
 * and sizes of every row and column 16*r+c. */
static size_t make_index(unsigned char *b, bool big, unsigned version, uint32_t n,
                         const uint32_t *cols, uint32_t u, uint32_t slots, const uint64_t *ids,
                         const uint32_t *rows)
{
    size_t at = 0;
#define PUT(v, w)                                                                                  \
    do {                                                                                           \
        for (size_t k_ = 0; k_ < (w); k_++)                                                        \
            b[at + (big ? (w)-1 - k_ : k_)] = (unsigned char)((uint64_t)(v) >> (8 * k_));          \
        at += (w);                                                                                 \
    } while (0)
    if (version == 5) {
        PUT(5, 2);
        PUT(0, 2);
    } else {
        PUT(version, 4);
    }
    PUT(n, 4);
    PUT(u, 4);
    PUT(slots, 4);
    for (uint32_t i = 0; i < slots; i++)
        PUT(ids[i], 8);
    for (uint32_t i = 0; i < slots; i++)
        PUT(rows[i], 4);
    for (uint32_t c = 0; c < n; c++)
        PUT(cols[c], 4);
    for (int t = 0; t < 2; t++)
        for (uint32_t r = 0; r < u; r++)
            for (uint32_t c = 0; c < n; c++)
                PUT(16 * r + c + (t ? 1 : 0), 4);
#undef PUT
    return at;
}

/* The index parser takes both forms in both byte orders, and refuses
 * each kind of damage with a reason instead of reading past its bytes. */
static void test_dwp_index(void **state)
{
    (void)state;
    unsigned char b[1024];
    fl_dwp_index ix;
    char why[256];
    const uint32_t cols5[] = {1, 3, 6}, cols2[] = {1, 3, 5, 6};
    const uint64_t ids[] = {0, 0x1111, 0, 0xfedcba9876543210ull};
    const uint32_t rows[] = {0, 2, 0, 1};
    for (int big = 0; big < 2; big++) {
        size_t len = make_index(b, big, 5, 3, cols5, 2, 4, ids, rows);
        assert_int_equal(fl_dwp_index_parse(b, len, big, &ix, why, sizeof why), 0);
        assert_int_equal(ix.version, 5);
        assert_int_equal(ix.nent, 2);
        assert_true(ix.ent[0].id == 0x1111 && ix.ent[0].row == 2);
        assert_true(ix.ent[1].id == 0xfedcba9876543210ull && ix.ent[1].row == 1);
        fl_dwp_index_free(&ix);
        len = make_index(b, big, 2, 4, cols2, 2, 4, ids, rows);
        assert_int_equal(fl_dwp_index_parse(b, len, big, &ix, why, sizeof why), 0);
        assert_int_equal(ix.version, 2);
        assert_int_equal(ix.nent, 2);
        fl_dwp_index_free(&ix);
    }
    /* Every cut of a good index is refused (its tables lie past the end). */
    size_t len = make_index(b, false, 5, 3, cols5, 2, 4, ids, rows);
    for (size_t cut = 0; cut < len; cut++) {
        assert_true(fl_dwp_index_parse(b, cut, false, &ix, why, sizeof why) < 0);
        assert_non_null(strstr(why, "truncated"));
    }
    struct {
        unsigned version;
        uint32_t n, u, slots;
        uint32_t cols[4];
        uint32_t rows[4];
        uint64_t ids[4];
        const char *says;
    } bad[] = {
        {3, 3, 2, 4, {1, 3, 6}, {0, 2, 0, 1}, {0, 1, 0, 2}, "version 3"},
        {5, 0, 2, 4, {1}, {0, 2, 0, 1}, {0, 1, 0, 2}, "0 columns"},
        {5, 3, 2, 3, {1, 3, 6}, {0, 2, 0}, {0, 1, 0}, "power of two"},
        {5, 3, 4, 2, {1, 3, 6}, {2, 1}, {1, 2}, "4 units in 2 slots"},
        {5, 3, 2, 4, {1, 2, 6}, {0, 2, 0, 1}, {0, 1, 0, 2}, "section number 2"},
        {5, 3, 2, 4, {1, 9, 6}, {0, 2, 0, 1}, {0, 1, 0, 2}, "section number 9"},
        {5, 3, 2, 4, {1, 3, 3}, {0, 2, 0, 1}, {0, 1, 0, 2}, "two columns"},
        {5, 2, 2, 4, {3, 6}, {0, 2, 0, 1}, {0, 1, 0, 2}, "no .debug_info.dwo"},
        {5, 3, 2, 4, {1, 3, 6}, {0, 3, 0, 1}, {0, 1, 0, 2}, "row 3 of 2"},
        {5, 3, 2, 4, {1, 3, 6}, {0, 2, 0, 1}, {0, 7, 0, 7}, "DWO id 0000000000000007 twice"},
        {5, 3, 2, 4, {1, 3, 6}, {1, 2, 1, 1}, {1, 2, 3, 4}, "fills 4 slots for 2 units"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        len = make_index(b, false, bad[i].version, bad[i].n, bad[i].cols, bad[i].u, bad[i].slots,
                         bad[i].ids, bad[i].rows);
        why[0] = '\0';
        int rc = fl_dwp_index_parse(b, len, false, &ix, why, sizeof why);
        if (rc == 0 || !strstr(why, bad[i].says))
            fprintf(stderr, "case %zu: rc %d, %s\n", i, rc, why);
        assert_true(rc < 0);
        assert_non_null(strstr(why, bad[i].says));
        assert_null(ix.ent); /* nothing left to free */
    }
    /* Huge counts are refused before anything is sized by them. */
    memset(b, 0, 16);
    b[0] = 5;
    b[4] = 3;
    memset(b + 8, 0xff, 8);
    assert_true(fl_dwp_index_parse(b, 16, false, &ix, why, sizeof why) < 0);
}

/* ---- call sites ------------------------------------------------------
 *
 * The programs of tests/symbols/data/callsites.{c,cpp}, built by CMake
 * into g_calls: each test builds a symcache of one and checks its call
 * sites against the program's own code -- the return addresses of the
 * direct calls (e8 rel32) found in main's bytes, the entries and extents
 * of functions from .symtab.  x86-64 only (the byte scan). */

typedef struct elf_fn {
    uint64_t addr, size;
    uint8_t *code; /* its bytes (malloc'd), or NULL */
} elf_fn;

/* The function symbol of prog named name (or, with prefix, whose name
 * starts with it: "_ZN4Blob7releaseEv" finds a ".isra.0" clone too),
 * with its code.  0 when found. */
static int elf_function(const char *prog, const char *name, bool prefix, elf_fn *out)
{
    memset(out, 0, sizeof *out);
    elf_version(EV_CURRENT);
    int fd = open(prog, O_RDONLY);
    assert_true(fd >= 0);
    Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
    assert_non_null(elf);
    int found = -1;
    Elf_Scn *scn = NULL;
    while (found != 0 && (scn = elf_nextscn(elf, scn)) != NULL) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || sh.sh_entsize == 0)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        for (size_t i = 1; d && i < sh.sh_size / sh.sh_entsize; i++) {
            GElf_Sym s;
            const char *nm;
            if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC ||
                s.st_shndx == SHN_UNDEF || !(nm = elf_strptr(elf, sh.sh_link, s.st_name)))
                continue;
            if (prefix ? strncmp(nm, name, strlen(name)) != 0 : strcmp(nm, name) != 0)
                continue;
            out->addr = s.st_value;
            out->size = s.st_size;
            found = 0;
            break;
        }
    }
    /* Its bytes, from the section holding it. */
    for (scn = NULL; found == 0 && (scn = elf_nextscn(elf, scn)) != NULL;) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || out->addr < sh.sh_addr ||
            out->addr + out->size > sh.sh_addr + sh.sh_size)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        assert_non_null(d);
        out->code = malloc(out->size ? out->size : 1);
        memcpy(out->code, (const uint8_t *)d->d_buf + (out->addr - sh.sh_addr), out->size);
        break;
    }
    elf_end(elf);
    close(fd);
    return found;
}

/* The return addresses of fn's direct calls (e8 rel32) to target, in
 * address order; how many. */
static size_t calls_to(const elf_fn *fn, uint64_t target, uint64_t *rets, size_t max)
{
    size_t n = 0;
    for (uint64_t i = 0; fn->code && i + 5 <= fn->size; i++) {
        int32_t rel;
        memcpy(&rel, fn->code + i + 1, 4);
        if (fn->code[i] == 0xe8 && fn->addr + i + 5 + (uint64_t)(int64_t)rel == target) {
            if (n < max)
                rets[n] = fn->addr + i + 5;
            n++;
        }
    }
    return n;
}

/* The return addresses of fn's direct calls into prog's PLT (.plt,
 * .plt.sec): its calls to other modules' functions; how many. */
static size_t plt_calls(const char *prog, const elf_fn *fn, uint64_t *rets, size_t max)
{
    elf_version(EV_CURRENT);
    int fd = open(prog, O_RDONLY);
    assert_true(fd >= 0);
    Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
    assert_non_null(elf);
    size_t shstr, n = 0;
    assert_int_equal(elf_getshdrstrndx(elf, &shstr), 0);
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn)) != NULL;) {
        GElf_Shdr sh;
        const char *nm;
        if (!gelf_getshdr(scn, &sh) || !(nm = elf_strptr(elf, shstr, sh.sh_name)) ||
            (strcmp(nm, ".plt") && strcmp(nm, ".plt.sec")))
            continue;
        for (uint64_t i = 0; fn->code && i + 5 <= fn->size; i++) {
            int32_t rel;
            memcpy(&rel, fn->code + i + 1, 4);
            uint64_t to = fn->addr + i + 5 + (uint64_t)(int64_t)rel;
            if (fn->code[i] == 0xe8 && to >= sh.sh_addr && to < sh.sh_addr + sh.sh_size) {
                if (n < max)
                    rets[n] = fn->addr + i + 5;
                n++;
            }
        }
    }
    elf_end(elf);
    close(fd);
    return n;
}

/* Is addr inside a jump instruction (e9 rel32, eb rel8) of fn? */
static bool inside_jump(const elf_fn *fn, uint64_t addr)
{
    for (uint64_t i = 0; fn->code && i < fn->size; i++) {
        uint64_t len = fn->code[i] == 0xe9 ? 5 : fn->code[i] == 0xeb ? 2 : 0;
        if (len && i + len <= fn->size && addr >= fn->addr + i && addr < fn->addr + i + len)
            return true;
    }
    return false;
}

static const char *g_calls; /* the call-site programs' directory */

/* The symcache of g_calls/name, built and opened; NULL (the test is
 * skipped) when an optional compiler's program is not there. */
static fl_symcache *calls_symcache(const char *name, bool optional, char *prog, size_t cap)
{
    if (!g_calls)
        skip();
    snprintf(prog, cap, "%s/%s", g_calls, name);
    if (optional && access(prog, R_OK) != 0)
        return NULL;
    char out[512], err[256];
    snprintf(out, sizeof out, "%s/calls-%s.symcache", g_work, name);
    fl_symbuild_stats st;
    int rc = fl_symcache_build(prog, out, &st, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "%s: %s\n", prog, err);
    assert_int_equal(rc, 0);
    fl_symcache *sc = NULL;
    assert_int_equal(fl_symcache_open(out, &sc, err, sizeof err), 0);
    return sc;
}

/* The outermost function and the innermost line at addr. */
static void frame_at(const fl_symcache *sc, uint64_t addr, const char *function, uint32_t line)
{
    fl_symframe f[16];
    size_t n = fl_symcache_lookup(sc, addr, f, 16);
    assert_true(n >= 1 && n <= 16);
    assert_non_null(f[n - 1].function);
    assert_string_equal(f[n - 1].function, function);
    assert_int_equal(f[0].line, line);
}

/* callsites.c as a compiler built it.  free_tail: the DWARF has
 * blob_free's tail call to free (gcc's; clang 14 writes no call site for
 * a callee it has no DWARF of). */
static void check_c_calls(const char *name, bool optional, bool free_tail)
{
#if !defined(__x86_64__)
    skip();
#endif
    char prog[1024];
    fl_symcache *sc = calls_symcache(name, optional, prog, sizeof prog);
    if (!sc)
        skip();
    assert_int_equal(fl_symcache_has_calls(sc), 1);
    elf_fn mainf, bf, hop, leaf;
    assert_int_equal(elf_function(prog, "main", false, &mainf), 0);
    assert_int_equal(elf_function(prog, "blob_free", false, &bf), 0);
    assert_int_equal(elf_function(prog, "hop", false, &hop), 0);
    assert_int_equal(elf_function(prog, "leaf", false, &leaf), 0);

    /* main's second call to blob_free: its return address names it --
     * when blob_free makes a tail call the DWARF names (gcc: to free;
     * clang writes no call site for free), for only the calls to
     * functions that make tail calls are kept. */
    uint64_t rets[4];
    assert_int_equal(calls_to(&mainf, bf.addr, rets, 4), 2);
    fl_symcall c = {0, 0, NULL};
    if (free_tail) {
        assert_int_equal(fl_symcache_call_at(sc, rets[1], &c), 1);
        assert_int_equal(c.site, rets[1]);
        assert_int_equal(c.target, bf.addr);
        assert_non_null(c.target_name);
        assert_string_equal(c.target_name, "blob_free");
        assert_int_equal(fl_symcache_call_at(sc, rets[0], NULL), 1);
    } else {
        assert_int_equal(fl_symcache_call_at(sc, rets[1], &c), 0);
        assert_int_equal(fl_symcache_call_at(sc, rets[0], NULL), 0);
    }
    /* main's call to malloc, another module's function (through the
     * PLT): kept with its name, no target (builder 5).  clang 14 writes
     * no call site for it (a library builtin; it does for a call to a
     * program's own declaration: tests/e2e/tailcall_groups.sh). */
    uint64_t pret[4];
    assert_int_equal(plt_calls(prog, &mainf, pret, 4), 1);
    memset(&c, 0, sizeof c);
    assert_int_equal(fl_symcache_call_at(sc, pret[0], &c), free_tail);
    if (free_tail) {
        assert_int_equal(c.site, pret[0]);
        assert_true(c.target == FL_SYMCALL_NONE);
        assert_non_null(c.target_name);
        assert_string_equal(c.target_name, "malloc");
    }
    assert_int_equal(fl_symcache_call_at(sc, pret[0] - 1, &c), 0);
    /* main's call to hop, which makes a tail call: kept by both. */
    uint64_t hret[4];
    assert_int_equal(calls_to(&mainf, hop.addr, hret, 4), 1);
    memset(&c, 0, sizeof c);
    assert_int_equal(fl_symcache_call_at(sc, hret[0], &c), 1);
    assert_int_equal(c.target, hop.addr);
    assert_string_equal(c.target_name, "hop");
    /* Not return addresses: inside the call, main's entry, the jumps. */
    assert_int_equal(fl_symcache_call_at(sc, rets[1] - 1, &c), 0);
    assert_int_equal(fl_symcache_call_at(sc, mainf.addr, &c), 0);
    assert_int_equal(fl_symcache_call_at(sc, 0, &c), 0);
    assert_int_equal(fl_symcache_call_at(sc, UINT64_MAX, &c), 0);

    fl_symcall t[4];
    memset(t, 0, sizeof t);
    if (free_tail) {
        /* blob_free ends in `jmp free@plt`: free, which the module does
         * not define, at the line of the call. */
        assert_int_equal(fl_symcache_tail_calls(sc, bf.addr, t, 4), 1);
        assert_non_null(t[0].target_name);
        assert_string_equal(t[0].target_name, "free");
        assert_true(t[0].target == FL_SYMCALL_NONE);
        assert_true(inside_jump(&bf, t[0].site));
        frame_at(sc, t[0].site, "blob_free", 21);
        assert_int_equal(fl_symcache_call_at(sc, t[0].site, &c), 0);
        assert_int_equal(fl_symcache_call_at(sc, t[0].site + 1, &c), 0);
    }
    /* hop ends in a jump to leaf, which the module defines. */
    memset(t, 0, sizeof t);
    assert_int_equal(fl_symcache_tail_calls(sc, hop.addr, t, 4), 1);
    assert_int_equal(t[0].target, leaf.addr);
    assert_non_null(t[0].target_name);
    assert_string_equal(t[0].target_name, "leaf");
    assert_true(inside_jump(&hop, t[0].site));
    frame_at(sc, t[0].site, "hop", 33);
    /* The count even with no room; no tail calls of an address that is
     * no function's entry, nor of leaf (it returns). */
    assert_int_equal(fl_symcache_tail_calls(sc, hop.addr, NULL, 0), 1);
    assert_int_equal(fl_symcache_tail_calls(sc, hop.addr + 1, t, 4), 0);
    assert_int_equal(fl_symcache_tail_calls(sc, leaf.addr, t, 4), 0);
    assert_int_equal(fl_symcache_tail_calls(sc, UINT64_MAX, t, 4), 0);

    /* relay tail-calls far_away of the other unit, which it knows by a
     * declaration only: matched by name. */
    elf_fn relay, far, sumf;
    assert_int_equal(elf_function(prog, "relay", false, &relay), 0);
    assert_int_equal(elf_function(prog, "far_away", false, &far), 0);
    memset(t, 0, sizeof t);
    assert_int_equal(fl_symcache_tail_calls(sc, relay.addr, t, 4), 1);
    assert_int_equal(t[0].target, far.addr);
    assert_string_equal(t[0].target_name, "far_away");
    assert_true(inside_jump(&relay, t[0].site));
    frame_at(sc, t[0].site, "relay", 41);

    /* The recursive calls of sum (from main, where gcc inlined it once,
     * or from sum): the callee named by its abstract DIE, the target
     * its out-of-line copy. */
    assert_int_equal(elf_function(prog, "sum", false, &sumf), 0);
    size_t nsum = calls_to(&mainf, sumf.addr, rets, 4);
    if (nsum == 0)
        nsum = calls_to(&sumf, sumf.addr, rets, 4);
    assert_true(nsum >= 1);
    memset(&c, 0, sizeof c);
    if (fl_symcache_tail_calls(sc, sumf.addr, NULL, 0) > 0) {
        assert_int_equal(fl_symcache_call_at(sc, rets[0], &c), 1);
        assert_int_equal(c.target, sumf.addr);
        assert_string_equal(c.target_name, "sum");
    } else {
        /* sum makes no tail call: the calls to it are not kept. */
        assert_int_equal(fl_symcache_call_at(sc, rets[0], &c), 0);
    }
    free(relay.code);
    free(far.code);
    free(sumf.code);
    free(mainf.code);
    free(bf.code);
    free(hop.code);
    free(leaf.code);
    fl_symcache_close(sc);
}

static void test_calls_gcc_dwarf5(void **state)
{
    (void)state;
    check_c_calls("gcc5", false, true);
}

/* DW_TAG_GNU_call_site: DW_AT_low_pc, DW_AT_GNU_tail_call,
 * DW_AT_abstract_origin. */
static void test_calls_gcc_dwarf4(void **state)
{
    (void)state;
    check_c_calls("gcc4", false, true);
}

/* clang: a tail call's DW_AT_call_pc (the jump's own address). */
static void test_calls_clang_dwarf5(void **state)
{
    (void)state;
    check_c_calls("clang5", true, false);
}

static void test_calls_clang_dwarf4(void **state)
{
    (void)state;
    check_c_calls("clang4", true, false);
}

/* C++: the callee's DIE is an abstract DIE (DW_AT_inline) whose
 * out-of-line copy (a clone perhaps) points at it with
 * DW_AT_abstract_origin, and which has DW_AT_specification to the
 * declaration in the class; names demangled. */
static void test_calls_cxx(void **state)
{
    (void)state;
#if !defined(__x86_64__)
    skip();
#endif
    char prog[1024];
    fl_symcache *sc = calls_symcache("gxx5", true, prog, sizeof prog);
    if (!sc)
        skip();
    assert_int_equal(fl_symcache_has_calls(sc), 1);
    elf_fn mainf, rel, dtor;
    assert_int_equal(elf_function(prog, "main", false, &mainf), 0);
    assert_int_equal(elf_function(prog, "_ZN4Blob7releaseEv", true, &rel), 0);
    assert_int_equal(elf_function(prog, "_ZN4BlobD2Ev", false, &dtor), 0);
    uint64_t rets[4];
    assert_true(calls_to(&mainf, rel.addr, rets, 4) >= 2);
    fl_symcall c = {0, 0, NULL};
    assert_int_equal(fl_symcache_call_at(sc, rets[1], &c), 1);
    assert_int_equal(c.target, rel.addr);
    assert_non_null(c.target_name);
    assert_string_equal(c.target_name, "Blob::release()");
    fl_symcall t[4];
    memset(t, 0, sizeof t);
    assert_int_equal(fl_symcache_tail_calls(sc, dtor.addr, t, 4), 1);
    assert_int_equal(t[0].target, rel.addr);
    assert_string_equal(t[0].target_name, "Blob::release()");
    assert_true(inside_jump(&dtor, t[0].site));
    frame_at(sc, t[0].site, "Blob::~Blob()", 16);
    memset(t, 0, sizeof t);
    assert_int_equal(fl_symcache_tail_calls(sc, rel.addr, t, 4), 1);
    assert_true(t[0].target == FL_SYMCALL_NONE);
    assert_string_equal(t[0].target_name, "free");
    assert_true(inside_jump(&rel, t[0].site));
    fl_symframe f[4];
    size_t n = fl_symcache_lookup(sc, t[0].site, f, 4);
    assert_true(n >= 1 && n <= 4);
    assert_int_equal(f[0].line, 10);
    free(mainf.code);
    free(rel.code);
    free(dtor.code);
    fl_symcache_close(sc);
}

/* Is addr inside an indirect jump (ff /4: `jmp *rel32(%rip)`, `jmp
 * *%reg`, perhaps with a REX prefix) of fn? */
static bool inside_indirect_jump(const elf_fn *fn, uint64_t addr)
{
    for (uint64_t i = 0; fn->code && i + 1 < fn->size; i++) {
        uint64_t at = i, len = 0;
        if ((fn->code[at] & 0xf0) == 0x40 && at + 2 < fn->size)
            at++; /* REX */
        if (fn->code[at] != 0xff)
            continue;
        uint8_t modrm = fn->code[at + 1];
        if (modrm == 0x25)
            len = at - i + 6;
        else if ((modrm & 0xf8) == 0xe0)
            len = at - i + 2;
        if (len && i + len <= fn->size && addr >= fn->addr + i && addr < fn->addr + i + len)
            return true;
    }
    return false;
}

static bool call_unknown(const fl_symcall *c)
{
    return c->target == FL_SYMCALL_NONE && c->target_name == NULL;
}

/* The tail calls of fn: n, of which how many are unknown (target and
 * name both unknown), and how many go to target (named name) from inside
 * one of fn's jumps. */
static void tails_of(const fl_symcache *sc, const elf_fn *fn, size_t n, size_t unknown,
                     const elf_fn *target, const char *name, size_t to_target)
{
    fl_symcall t[8];
    memset(t, 0, sizeof t);
    assert_int_equal(fl_symcache_tail_calls(sc, fn->addr, t, 8), n);
    size_t nu = 0, nt = 0;
    for (size_t i = 0; i < n && i < 8; i++) {
        if (i > 0)
            assert_true(t[i - 1].site < t[i].site);
        if (call_unknown(&t[i])) {
            /* Inside the jump through the pointer, or the marker at the
             * entry of a function the DWARF does not say all its calls
             * are described of. */
            assert_true(t[i].site == fn->addr || inside_indirect_jump(fn, t[i].site));
            nu++;
        } else if (target && t[i].target == target->addr) {
            assert_non_null(t[i].target_name);
            assert_string_equal(t[i].target_name, name);
            assert_true(inside_jump(fn, t[i].site));
            nt++;
        }
    }
    assert_int_equal(nu, unknown);
    assert_int_equal(nt, to_target);
}

/* Tail calls the DWARF does not name (callsites.c's mixed, only_direct,
 * through_ptr) as a compiler built them.  mixed: gcc writes no call site
 * for its jump through tail_fp and no DW_AT_call_all_calls, so a marker;
 * clang a call site with DW_AT_call_target.  Either way one unknown entry
 * besides the one to via_b.  only_direct: both its tail calls named, no
 * unknown one.  through_ptr: its only jump, unknown. */
static void check_unknown_tails(const char *name, bool optional)
{
#if !defined(__x86_64__)
    skip();
#endif
    char prog[1024];
    fl_symcache *sc = calls_symcache(name, optional, prog, sizeof prog);
    if (!sc)
        skip();
    assert_int_equal(fl_symcache_has_calls(sc), 1);
    elf_fn via, mixed, only, thr, hop, first;
    assert_int_equal(elf_function(prog, "via_b", false, &via), 0);
    assert_int_equal(elf_function(prog, "first_jump", false, &first), 0);
    assert_int_equal(elf_function(prog, "mixed", false, &mixed), 0);
    assert_int_equal(elf_function(prog, "only_direct", false, &only), 0);
    assert_int_equal(elf_function(prog, "through_ptr", false, &thr), 0);
    assert_int_equal(elf_function(prog, "hop", false, &hop), 0);
    tails_of(sc, &mixed, 2, 1, &via, "via_b", 1);
    /* clang jumps to via_b from one place (its own site), gcc from two. */
    fl_symcall t[4];
    size_t n = fl_symcache_tail_calls(sc, only.addr, t, 4);
    assert_true(n == 1 || n == 2);
    tails_of(sc, &only, n, 0, &via, "via_b", n);
    tails_of(sc, &thr, 1, 0 + 1, NULL, NULL, 0);
    tails_of(sc, &hop, 1, 0, NULL, NULL, 0);
    tails_of(sc, &first, 1, 0, &via, "via_b", 1);
    assert_int_equal(fl_symcache_tail_calls(sc, via.addr, t, 4), 0);
    free(via.code);
    free(mixed.code);
    free(only.code);
    free(thr.code);
    free(hop.code);
    free(first.code);
    fl_symcache_close(sc);
}

static void test_unknown_tails_gcc_dwarf5(void **state)
{
    (void)state;
    check_unknown_tails("gcc5", false);
}

static void test_unknown_tails_gcc_dwarf4(void **state)
{
    (void)state;
    check_unknown_tails("gcc4", false);
}

static void test_unknown_tails_clang_dwarf5(void **state)
{
    (void)state;
    check_unknown_tails("clang5", true);
}

static void test_unknown_tails_clang_dwarf4(void **state)
{
    (void)state;
    check_unknown_tails("clang4", true);
}

/* Markers where clang's sites are: callsites.c by clang with every
 * DW_AT_call_all_calls taken out (tests/symbols/CMakeLists.txt), so each
 * function with a tail call gets a marker at its entry.  first_jump
 * starts with its jump to via_b, whose site is the entry: the marker is
 * the address after it.  through_ptr starts with its jump through a
 * pointer, an unknown entry at the entry already: no marker besides.
 * mixed: the marker, the jump through the pointer, the one to via_b. */
static void test_markers_placed(void **state)
{
    (void)state;
#if !defined(__x86_64__)
    skip();
#endif
    char prog[1024];
    fl_symcache *sc = calls_symcache("clang5_noall", true, prog, sizeof prog);
    if (!sc)
        skip();
    elf_fn via, first, thr, mixed;
    assert_int_equal(elf_function(prog, "via_b", false, &via), 0);
    assert_int_equal(elf_function(prog, "first_jump", false, &first), 0);
    assert_int_equal(elf_function(prog, "through_ptr", false, &thr), 0);
    assert_int_equal(elf_function(prog, "mixed", false, &mixed), 0);
    fl_symcall t[4];
    memset(t, 0, sizeof t);
    assert_int_equal(fl_symcache_tail_calls(sc, first.addr, t, 4), 2);
    assert_true(t[0].site == first.addr && t[0].target == via.addr);
    assert_string_equal(t[0].target_name, "via_b");
    assert_true(call_unknown(&t[1]) && t[1].site == first.addr + 1);
    memset(t, 0, sizeof t);
    assert_int_equal(fl_symcache_tail_calls(sc, thr.addr, t, 4), 1);
    assert_true(call_unknown(&t[0]) && t[0].site == thr.addr);
    memset(t, 0, sizeof t);
    assert_int_equal(fl_symcache_tail_calls(sc, mixed.addr, t, 4), 3);
    assert_true(call_unknown(&t[0]) && t[0].site == mixed.addr);
    assert_true(call_unknown(&t[1]) && inside_indirect_jump(&mixed, t[1].site));
    assert_true(t[2].target == via.addr && inside_jump(&mixed, t[2].site));
    assert_int_equal(fl_symcache_tail_calls(sc, via.addr, t, 4), 0);
    free(via.code);
    free(first.code);
    free(thr.code);
    free(mixed.code);
    fl_symcache_close(sc);
}

/* C++: callsites.cpp's pick makes a virtual call on one branch (g++:
 * speculatively devirtualized, the jump through the vtable with no call
 * site and no DW_AT_call_all_calls; clang++: DW_AT_call_target) and
 * tail-calls run_direct on the other. */
static void check_virtual_tail(const char *name)
{
#if !defined(__x86_64__)
    skip();
#endif
    char prog[1024];
    fl_symcache *sc = calls_symcache(name, true, prog, sizeof prog);
    if (!sc)
        skip();
    elf_fn pick, direct;
    assert_int_equal(elf_function(prog, "_Z4pickP6RunnerPii", false, &pick), 0);
    assert_int_equal(elf_function(prog, "_Z10run_directPi", false, &direct), 0);
    tails_of(sc, &pick, 2, 1, &direct, "run_direct(int*)", 1);
    free(pick.code);
    free(direct.code);
    fl_symcache_close(sc);
}

static void test_calls_virtual_gxx(void **state)
{
    (void)state;
    check_virtual_tail("gxx5");
}

static void test_calls_virtual_clangxx(void **state)
{
    (void)state;
    check_virtual_tail("clangxx5");
}

/* fl_symcache_symbol_at: the start of the function symbol covering an
 * address (at its first byte, inside, at its last byte), none in the
 * padding after a function's size nor below every symbol; the same
 * answers memoized. */
static void test_symbol_at(void **state)
{
    (void)state;
    char prog[1024];
    fl_symcache *sc = calls_symcache("gcc5", false, prog, sizeof prog);
    const char *names[] = {"via_b", "mixed", "only_direct", "through_ptr", "hop", "blob_free"};
    for (int memo = 0; memo < 2; memo++) {
        if (memo)
            assert_int_equal(fl_symcache_memoize(sc), 0);
        size_t padded = 0;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            elf_fn fn;
            assert_int_equal(elf_function(prog, names[i], false, &fn), 0);
            assert_true(fn.size > 1);
            assert_true(fl_symcache_symbol_at(sc, fn.addr) == fn.addr);
            assert_true(fl_symcache_symbol_at(sc, fn.addr + 1) == fn.addr);
            assert_true(fl_symcache_symbol_at(sc, fn.addr + fn.size - 1) == fn.addr);
            /* -O2 starts functions 16-byte aligned: an end that is not
             * is padding, which no symbol covers. */
            if ((fn.addr + fn.size) % 16 != 0) {
                assert_true(fl_symcache_symbol_at(sc, fn.addr + fn.size) == FL_SYMCALL_NONE);
                padded++;
            }
            free(fn.code);
        }
        assert_true(padded > 0);
        assert_true(fl_symcache_symbol_at(sc, 0) == FL_SYMCALL_NONE);
        assert_true(fl_symcache_symbol_at(NULL, 0x1000) == FL_SYMCALL_NONE);
    }
    fl_symcache_close(sc);
}

/* Files that hold no call sites answer none: one built without DWARF,
 * version 3 files (the seeds), and a version 4 file rewritten as version
 * 3 -- its call tables still in the bytes, but not in a version 3 file's
 * header. */
/* Another module's call reaches exported functions only: global, weak
 * or protected ones, not a static or hidden function, nor an ifunc's
 * resolver -- a static function of the name called is not the function
 * the call went to.  A symcache that does not say which symbols are
 * exported (relabelled without FL_SC_F_EXPORTS) answers none. */
static void test_symbol_named_exports(void **state)
{
    (void)state;
    char prog[1024], err[256];
    fl_symcache *sc = calls_symcache("libexports.so", false, prog, sizeof prog);
    uint64_t g = fl_symcache_symbol_named(sc, "api_global");
    assert_true(g != FL_SYMCALL_NONE);
    assert_int_equal(fl_symcache_symbol_at(sc, g), g);
    fl_symframe gf[4];
    size_t gn = fl_symcache_lookup(sc, g, gf, 4);
    assert_true(gn >= 1 && gn <= 4 && gf[gn - 1].function);
    assert_string_equal(gf[gn - 1].function, "api_global");
    assert_true(fl_symcache_symbol_named(sc, "api_weak") != FL_SYMCALL_NONE);
    assert_true(fl_symcache_symbol_named(sc, "api_protected") != FL_SYMCALL_NONE);
    /* The static and the hidden function are in the table, by name. */
    uint64_t st = FL_SYMCALL_NONE, hid = FL_SYMCALL_NONE;
    for (uint64_t a = g & ~(uint64_t)0xfff; a < (g & ~(uint64_t)0xfff) + 0x1000; a++) {
        fl_symframe f[4];
        size_t n = fl_symcache_lookup(sc, a, f, 4);
        if (n >= 1 && n <= 4 && f[n - 1].function && fl_symcache_symbol_at(sc, a) == a) {
            if (!strcmp(f[n - 1].function, "api_static"))
                st = a;
            if (!strcmp(f[n - 1].function, "api_hidden"))
                hid = a;
        }
    }
    assert_true(st != FL_SYMCALL_NONE && hid != FL_SYMCALL_NONE);
    assert_int_equal(fl_symcache_symbol_named(sc, "api_static"), FL_SYMCALL_NONE);
    assert_int_equal(fl_symcache_symbol_named(sc, "api_hidden"), FL_SYMCALL_NONE);
    assert_int_equal(fl_symcache_symbol_named(sc, "api_ifunc"), FL_SYMCALL_NONE);
    assert_int_equal(fl_symcache_symbol_named(sc, "resolve_api_ifunc"), FL_SYMCALL_NONE);
    assert_int_equal(fl_symcache_symbol_named(sc, "api_glob"), FL_SYMCALL_NONE);
    fl_symcache_close(sc);

    char path[1024];
    snprintf(path, sizeof path, "%s/calls-libexports.so.symcache", g_work);
    size_t len;
    uint8_t *buf = slurp(path, &len);
    fl_sc_header h;
    memcpy(&h, buf, sizeof h);
    assert_true(h.flags & FL_SC_F_EXPORTS);
    h.flags &= ~FL_SC_F_EXPORTS;
    h.checksum = 0;
    memcpy(buf, &h, sizeof h);
    h.checksum = fl_sc_file_checksum(buf, len);
    memcpy(buf, &h, sizeof h);
    assert_int_equal(fl_symcache_open_mem(buf, len, &sc, err, sizeof err), 0);
    assert_int_equal(fl_symcache_symbol_named(sc, "api_global"), FL_SYMCALL_NONE);
    fl_symcache_close(sc);
    free(buf);
}

static void test_calls_absent(void **state)
{
    (void)state;
    char prog[1024], path[1024], err[256];
    fl_symcache *sc = calls_symcache("gcc5_nodebug", false, prog, sizeof prog);
    assert_int_equal(fl_symcache_has_dwarf(sc), 0);
    assert_int_equal(fl_symcache_has_calls(sc), 0);
    elf_fn bf, hop;
    assert_int_equal(elf_function(prog, "blob_free", false, &bf), 0);
    assert_int_equal(elf_function(prog, "hop", false, &hop), 0);
    fl_symcall t[2];
    assert_int_equal(fl_symcache_tail_calls(sc, bf.addr, t, 2), 0);
    assert_int_equal(fl_symcache_tail_calls(sc, hop.addr, t, 2), 0);
    fl_symcache_close(sc);

    sc = calls_symcache("gcc5", false, prog, sizeof prog);
    fl_symcache_close(sc);
    snprintf(path, sizeof path, "%s/calls-gcc5.symcache", g_work);
    size_t len;
    uint8_t *buf = slurp(path, &len);
    fl_sc_header h;
    memcpy(&h, buf, sizeof h);
    assert_int_equal(h.version, 5);
    h.version = 3;
    h.header_size = FL_SC_HEADER3_SIZE;
    h.flags &= ~FL_SC_F_EXPORTS; /* a version 5 table */
    h.checksum = 0;
    memcpy(buf, &h, sizeof h);
    h.checksum = fl_sc_file_checksum(buf, len);
    memcpy(buf, &h, sizeof h);
    assert_int_equal(fl_symcache_open_mem(buf, len, &sc, err, sizeof err), 0);
    assert_int_equal(fl_symcache_has_dwarf(sc), 1);
    assert_int_equal(fl_symcache_has_calls(sc), 0);
    assert_int_equal(fl_symcache_tail_calls(sc, bf.addr, t, 2), 0);
    assert_int_equal(fl_symcache_tail_calls(sc, hop.addr, t, 2), 0);
    fl_symframe f[4];
    assert_true(fl_symcache_lookup(sc, hop.addr, f, 4) >= 1);
    assert_string_equal(f[0].function, "hop");
    fl_symcache_close(sc);
    free(buf);
    free(bf.code);
    free(hop.code);

    if (g_corpus) {
        const char *v3[] = {"gcc-dwarf5.symcache", "symtab-only.symcache"};
        for (size_t i = 0; i < 2; i++) {
            snprintf(path, sizeof path, "%s/%s", g_corpus, v3[i]);
            assert_int_equal(fl_symcache_open(path, &sc, err, sizeof err), 0);
            assert_int_equal(fl_symcache_has_calls(sc), 0);
            for (uint64_t a = 0x1000; a < 0x1400; a++) {
                assert_int_equal(fl_symcache_call_at(sc, a, NULL), 0);
                assert_int_equal(fl_symcache_tail_calls(sc, a, NULL, 0), 0);
            }
            fl_symcache_close(sc);
        }
    }
}

/* Sets the checksum of the len-byte file buf. */
static void fix_checksum(uint8_t *buf, size_t len)
{
    fl_sc_header h;
    memcpy(&h, buf, sizeof h);
    h.checksum = 0;
    memcpy(buf, &h, sizeof h);
    h.checksum = fl_sc_file_checksum(buf, len);
    memcpy(buf, &h, sizeof h);
}

/* Damage to the call tables behind a valid checksum is refused: entries
 * out of order or twice, a name outside the string table, a table
 * outside the file or not aligned, reserved bytes set, a version 4 file
 * with a version 3 header size.  Random damage behind a valid checksum
 * never makes a call query read outside the file (under ASan). */
static void test_calls_corrupt(void **state)
{
    (void)state;
    char prog[1024], path[1024], err[256];
    fl_symcache *sc = calls_symcache("gcc5", false, prog, sizeof prog);
    fl_symcache_close(sc);
    snprintf(path, sizeof path, "%s/calls-gcc5.symcache", g_work);
    size_t len;
    uint8_t *buf = slurp(path, &len);
    uint8_t *copy = malloc(len + 8);
    fl_sc_header4 hx;
    memcpy(&hx, buf, sizeof hx);
    assert_true(hx.calls_count >= 2);
    assert_true(hx.tails_count >= 2);
    assert_int_equal(fl_symcache_open_mem(buf, len, &sc, err, sizeof err), 0);
    fl_symcache_close(sc);
    enum {
        SWAP_CALLS,
        DUP_CALL,
        SWAP_TAILS,
        CALL_NAME,
        TAIL_NAME,
        CALLS_OFF,
        CALLS_ALIGN,
        CALLS_COUNT,
        TAILS_OFF,
        TAILS_COUNT,
        RESERVED,
        HEADER_SIZE,
        XCALL_WIDTH,
        XCALLS_COUNT,
        XNAME_INDEX,
        XNAME_STRING,
        XCALLS_IN_V4,
        NCASES
    };
    assert_true(hx.xcalls_count >= 1); /* main's call to malloc */
    assert_true(hx.xnames_count >= 1);
    for (int k = 0; k < NCASES; k++) {
        memcpy(copy, buf, len);
        fl_sc_header4 x = hx;
        uint8_t *calls = copy + hx.calls_off, *tails = copy + hx.tails_off, tmp[16];
        uint32_t v = (uint32_t)hx.base.strings_size;
        switch (k) {
        case SWAP_CALLS:
            memcpy(tmp, calls, 12);
            memcpy(calls, calls + 12, 12);
            memcpy(calls + 12, tmp, 12);
            break;
        case DUP_CALL:
            memcpy(calls + 12, calls, 4);
            break;
        case SWAP_TAILS:
            memcpy(tmp, tails, 16);
            memcpy(tails, tails + 16, 16);
            memcpy(tails + 16, tmp, 16);
            break;
        case CALL_NAME:
            memcpy(calls + 8, &v, 4);
            break;
        case TAIL_NAME:
            memcpy(tails + 16 + 12, &v, 4);
            break;
        case CALLS_OFF:
            x.calls_off = (len - 8) & ~(uint64_t)7;
            break;
        case CALLS_ALIGN:
            x.calls_off += 4;
            break;
        case CALLS_COUNT:
            x.calls_count = UINT64_MAX / 4;
            break;
        case TAILS_OFF:
            x.tails_off = (uint64_t)len + 8;
            break;
        case TAILS_COUNT:
            x.tails_count = len / 16;
            break;
        case RESERVED:
            x.reserved[5] = 1;
            break;
        case HEADER_SIZE:
            x.base.header_size = FL_SC_HEADER3_SIZE;
            break;
        case XCALL_WIDTH:
            x.xcall_w[FL_SC_X_NAME] = 33;
            break;
        case XCALLS_COUNT:
            x.xcalls_count = (uint32_t)len;
            break;
        case XNAME_INDEX:
            x.xnames_count = 0;
            break;
        case XNAME_STRING:
            memcpy(copy + hx.xnames_off, &v, 4);
            break;
        case XCALLS_IN_V4:
            x.base.version = 4;
            break;
        }
        memcpy(copy, &x, sizeof x);
        fix_checksum(copy, len);
        sc = NULL;
        int rc = fl_symcache_open_mem(copy, len, &sc, err, sizeof err);
        if (rc != FL_SYM_ECORRUPT)
            fprintf(stderr, "damage %d: %d %s\n", k, rc, err);
        assert_int_equal(rc, FL_SYM_ECORRUPT);
        assert_null(sc);
    }
    /* Random words in the tables, checksum fixed: open refuses or the
     * queries stay inside the file. */
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    size_t span = (size_t)(hx.base.strings_off - hx.calls_off);
    for (int iter = 0; iter < 300; iter++) {
        memcpy(copy, buf, len);
        for (int k = 0; k < 2; k++) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            size_t pos = (size_t)hx.calls_off + (size_t)(seed % (span - 4));
            uint32_t w = (iter & 1) ? 0xFFFFFFF0u + (uint32_t)(seed >> 60) : (uint32_t)(seed >> 32);
            memcpy(copy + pos, &w, 4);
        }
        fix_checksum(copy, len);
        sc = NULL;
        int rc = fl_symcache_open_mem(copy, len, &sc, err, sizeof err);
        if (rc != 0) {
            assert_int_equal(rc, FL_SYM_ECORRUPT);
            continue;
        }
        for (size_t i = 0; i < hx.calls_count + hx.tails_count; i++) {
            uint32_t a;
            memcpy(&a, copy + hx.calls_off + 4 * i, 4);
            fl_symcall c[4];
            uint64_t addr = hx.base.base_addr + a;
            if (fl_symcache_call_at(sc, addr, c) && c[0].target_name)
                assert_true(strlen(c[0].target_name) < len);
            size_t n = fl_symcache_tail_calls(sc, addr, c, 4);
            for (size_t j = 0; j < n && j < 4; j++)
                if (c[j].target_name)
                    assert_true(strlen(c[j].target_name) < len);
        }
        fl_symcache_close(sc);
    }
    free(copy);
    free(buf);
}

/* The fuzz seeds must be symcaches of a format the reader opens, or the
 * fuzzer starts from nothing but header rejections: version 3 ones (no
 * call sites) and version 4 ones with call sites, unknown tail calls
 * among them, so that mutations reach the call tables, and a version 5
 * one with calls to another module's functions (xcalls[]). */
static void test_seed_corpus_current(void **state)
{
    (void)state;
    if (!g_corpus)
        skip();
    const char *seeds[] = {"gcc-dwarf5.symcache",           "clang-dwarf4.symcache",
                           "inline-heavy.symcache",         "symtab-only.symcache",
                           "callsites-gcc-dwarf5.symcache", "callsites-clang-dwarf4.symcache",
                           "callsites-gxx.symcache",        "callsites-gcc-v5.symcache"};
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        char path[1024], err[256];
        snprintf(path, sizeof path, "%s/%s", g_corpus, seeds[i]);
        fl_symcache *sc = NULL;
        int rc = fl_symcache_open(path, &sc, err, sizeof err);
        if (rc != 0)
            fprintf(stderr, "%s: %s (regenerate with `faultline symbols add`)\n", path, err);
        assert_int_equal(rc, 0);
        if (!strncmp(seeds[i], "callsites-", 10)) {
            assert_int_equal(fl_symcache_has_calls(sc), 1);
            size_t len;
            uint8_t *b = slurp(path, &len);
            fl_sc_header4 x;
            memcpy(&x, b, sizeof x); /* opened: a version 4 header */
            assert_true(x.calls_count > 0 && x.tails_count > 0);
            /* ...and unknown tail calls (target 0, name FL_SC_NONE). */
            size_t unknown = 0;
            for (uint64_t k = 0; k < x.tails_count; k++) {
                uint32_t v[4];
                memcpy(v, b + x.tails_off + k * FL_SC_TAIL_SIZE, sizeof v);
                unknown += v[2] == 0 && v[3] == FL_SC_NONE;
            }
            assert_true(unknown > 0);
            if (!strcmp(seeds[i], "callsites-gcc-v5.symcache"))
                assert_true(x.base.version == 5 && x.xcalls_count > 0 && x.xnames_count > 0);
            free(b);
        }
        fl_symcache_close(sc);
    }
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_symcache PROGRAM WORKDIR [SEED_CORPUS_DIR [CALLSITES_DIR]]\n");
        return 2;
    }
    g_prog = argv[1];
    g_work = argv[2];
    g_corpus = argc > 3 ? argv[3] : NULL;
    g_calls = argc > 4 ? argv[4] : NULL;
    /* Start from an empty work directory: the store test counts builds. */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", g_work, g_work);
    if (strchr(g_work, '\'') || system(cmd) != 0) {
        fprintf(stderr, "cannot prepare %s\n", g_work);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_build_and_lookup),
        cmocka_unit_test(test_memoize),
        cmocka_unit_test(test_truncated_and_flipped),
        cmocka_unit_test(test_forged_checksum),
        cmocka_unit_test(test_bad_elf),
        cmocka_unit_test(test_store),
        cmocka_unit_test(test_store_concurrent),
        cmocka_unit_test(test_alloc_failures),
        cmocka_unit_test(test_dwarf_handle_recycled),
        cmocka_unit_test(test_seed_corpus_current),
        cmocka_unit_test(test_stale_views),
        cmocka_unit_test(test_stale_tmp),
        cmocka_unit_test(test_dwp_index),
        cmocka_unit_test(test_calls_gcc_dwarf5),
        cmocka_unit_test(test_calls_gcc_dwarf4),
        cmocka_unit_test(test_calls_clang_dwarf5),
        cmocka_unit_test(test_calls_clang_dwarf4),
        cmocka_unit_test(test_calls_cxx),
        cmocka_unit_test(test_unknown_tails_gcc_dwarf5),
        cmocka_unit_test(test_unknown_tails_gcc_dwarf4),
        cmocka_unit_test(test_unknown_tails_clang_dwarf5),
        cmocka_unit_test(test_unknown_tails_clang_dwarf4),
        cmocka_unit_test(test_markers_placed),
        cmocka_unit_test(test_calls_virtual_gxx),
        cmocka_unit_test(test_calls_virtual_clangxx),
        cmocka_unit_test(test_symbol_at),
        cmocka_unit_test(test_symbol_named_exports),
        cmocka_unit_test(test_calls_absent),
        cmocka_unit_test(test_calls_corrupt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
