/*
 * ctxreal - calling contexts sampled from a real program, for
 * bench/context/real.sh to decode.
 *
 * The program is the project's own symcache builder and reader
 * (src/symbols/symcache_build.c and symcache_read.c), compiled into this
 * executable with -finstrument-functions and libfaultline's hooks
 * (faultline_static), together with this driver.  The driver samples the
 * calling context with a profiling timer while the real work runs:
 *
 *   - SIGPROF every PERIOD µs of the process's CPU time (setitimer
 *     ITIMER_PROF); the handler, not instrumented itself, stores
 *     faultline_context() in a fixed array (async-signal-safe: one load
 *     of thread-local memory and one store);
 *   - ROUNDS times: a symcache of DEBUGFILE built to a file
 *     (fl_symcache_build, as `faultline symbols add` does) and in memory
 *     (fl_symcache_build_mem); the file opened and LOOKUPS random
 *     addresses inside DEBUGFILE's functions looked up, then memoized and
 *     looked up again, and the in-memory one opened and looked up too;
 *   - the timer stopped, then the distinct nonzero values printed with how
 *     often each was sampled, most frequent first:
 *       SAMPLES <taken> <kept> <zero> <distinct>
 *       CTX <hex value> <count>
 *
 * usage: ctxreal DEBUGFILE [ROUNDS] [LOOKUPS] [PERIOD_US]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "faultline.h"
#include "fl_symcache.h"
#include "symcache_build_int.h"

#define NOINSTR __attribute__((no_instrument_function))

enum { MAX_SAMPLES = 1 << 16 };

/* Written only by the handler while the timer runs; read after it
 * stopped. */
static unsigned long long samples[MAX_SAMPLES];
static volatile size_t nsamples;

/* The profiling signal: not instrumented, so that the value is the
 * interrupted code's, not the handler's. */
NOINSTR static void on_prof(int sig)
{
    (void)sig;
    size_t i = nsamples;
    if (i < MAX_SAMPLES)
        samples[i] = faultline_context();
    nsamples = i + 1;
}

NOINSTR static int set_timer(long period_us)
{
    struct itimerval it = {{0, period_us}, {0, period_us}};
    return setitimer(ITIMER_PROF, &it, NULL);
}

static void *read_file(const char *path, size_t *size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    char *buf = malloc(st.st_size ? (size_t)st.st_size : 1);
    size_t got = 0;
    while (buf && got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR) /* SIGPROF */
            continue;
        if (n <= 0) {
            free(buf);
            buf = NULL;
            break;
        }
        got += (size_t)n;
    }
    close(fd);
    *size = got;
    return buf;
}

static uint64_t next_rand(uint64_t *x)
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * 2685821657736338717ull;
}

/* n random addresses inside the functions of the ELF image's symbol
 * table (as bench/symbols' symbench gen picks them). */
static uint64_t *random_addrs(const void *image, size_t size, size_t n, uint64_t seed)
{
    Elf *elf = elf_memory((char *)image, size);
    if (!elf)
        return NULL;
    uint64_t *lo = NULL, *len = NULL;
    size_t nf = 0, cap = 0;
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(elf, scn)) != NULL) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
            GElf_Sym sym;
            if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
                !sym.st_size || sym.st_shndx == SHN_UNDEF)
                continue;
            if (nf == cap) {
                cap = cap ? 2 * cap : 1024;
                uint64_t *a = realloc(lo, cap * sizeof *lo),
                         *b = a ? realloc(len, cap * sizeof *len) : NULL;
                if (!a || !b) {
                    free(a ? a : lo);
                    free(len);
                    elf_end(elf);
                    return NULL;
                }
                lo = a;
                len = b;
            }
            lo[nf] = sym.st_value;
            len[nf++] = sym.st_size;
        }
    }
    elf_end(elf);
    uint64_t *out = nf ? malloc(n * sizeof *out) : NULL;
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; out && i < n; i++) {
        size_t k = next_rand(&x) % nf;
        out[i] = lo[k] + next_rand(&x) % len[k];
    }
    free(lo);
    free(len);
    return out;
}

/* Looks every address up; the frames' count, so that nothing is elided. */
static size_t lookups(const fl_symcache *sc, const uint64_t *addrs, size_t n)
{
    fl_symframe fr[64];
    size_t frames = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = fl_symcache_lookup(sc, addrs[i], fr, 64);
        frames += k;
        for (size_t j = 0; j < k && j < 64; j++) /* what a symbolizer prints */
            frames += fr[j].function && fr[j].file ? fr[j].line & 1 : 0;
    }
    return frames;
}

static int build_file(const char *debug, const char *out, size_t *bytes)
{
    fl_symbuild_stats st;
    char err[512];
    int rc = fl_symcache_build(debug, out, &st, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "ctxreal: fl_symcache_build %s: %s\n", debug, err);
        return rc;
    }
    *bytes = (size_t)st.file_bytes;
    return 0;
}

static int read_back(const char *path, const uint64_t *addrs, size_t n, size_t *frames)
{
    fl_symcache *sc;
    char err[512];
    if (fl_symcache_open(path, &sc, err, sizeof err) != 0) {
        fprintf(stderr, "ctxreal: fl_symcache_open: %s\n", err);
        return -1;
    }
    *frames += lookups(sc, addrs, n);
    if (fl_symcache_memoize(sc) == 0)
        *frames += lookups(sc, addrs, n);
    fl_symcache_close(sc);
    return 0;
}

static int build_mem(const void *image, size_t size, const uint64_t *addrs, size_t n,
                     size_t *frames)
{
    void *out;
    size_t len;
    fl_symbuild_stats st;
    char err[512];
    if (fl_symcache_build_mem(image, size, &out, &len, &st, err, sizeof err) != 0) {
        fprintf(stderr, "ctxreal: fl_symcache_build_mem: %s\n", err);
        return -1;
    }
    fl_symcache *sc;
    int rc = fl_symcache_open_mem(out, len, &sc, err, sizeof err);
    if (rc == 0) {
        *frames += lookups(sc, addrs, n);
        fl_symcache_close(sc);
    } else {
        fprintf(stderr, "ctxreal: fl_symcache_open_mem: %s\n", err);
    }
    free(out);
    return rc;
}

static int cmp_u64(const void *a, const void *b)
{
    unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
    return x < y ? -1 : x > y;
}

struct distinct {
    unsigned long long value;
    size_t count;
};

static int cmp_count(const void *a, const void *b)
{
    const struct distinct *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return x->value < y->value ? -1 : x->value > y->value;
}

/* The samples, counted per distinct nonzero value, most frequent first. */
static void report(size_t taken)
{
    size_t kept = taken < MAX_SAMPLES ? taken : MAX_SAMPLES, zero = 0, nd = 0;
    qsort(samples, kept, sizeof *samples, cmp_u64);
    struct distinct *d = malloc((kept ? kept : 1) * sizeof *d);
    if (!d)
        exit(1);
    for (size_t i = 0; i < kept; i++) {
        if (!samples[i]) {
            zero++;
            continue;
        }
        if (nd && d[nd - 1].value == samples[i])
            d[nd - 1].count++;
        else
            d[nd++] = (struct distinct){samples[i], 1};
    }
    qsort(d, nd, sizeof *d, cmp_count);
    printf("SAMPLES %zu %zu %zu %zu\n", taken, kept, zero, nd);
    for (size_t i = 0; i < nd; i++)
        printf("CTX %016llx %zu\n", d[i].value, d[i].count);
    free(d);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: ctxreal DEBUGFILE [ROUNDS] [LOOKUPS] [PERIOD_US]\n");
        return 2;
    }
    const char *debug = argv[1];
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    size_t nlook = argc > 3 ? strtoul(argv[3], NULL, 10) : 5000;
    long period = argc > 4 ? atol(argv[4]) : 1000;
    if (rounds < 1)
        rounds = 1;
    if (period < 1 || period > 999999)
        period = 1000;

    elf_version(EV_CURRENT);
    size_t size;
    void *image = read_file(debug, &size);
    if (!image) {
        fprintf(stderr, "ctxreal: cannot read %s\n", debug);
        return 1;
    }
    uint64_t *addrs = random_addrs(image, size, nlook ? nlook : 1, 1);
    if (!addrs) {
        fprintf(stderr, "ctxreal: %s: no function symbols\n", debug);
        return 1;
    }
    const char *tdir = getenv("TMPDIR");
    char out[4096];
    snprintf(out, sizeof out, "%s/ctxreal.XXXXXX", tdir && *tdir ? tdir : "/tmp");
    int ofd = mkstemp(out);
    if (ofd < 0) {
        perror("ctxreal: mkstemp");
        return 1;
    }
    close(ofd);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_prof;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGPROF, &sa, NULL) != 0 || set_timer(period) != 0) {
        perror("ctxreal: SIGPROF timer");
        unlink(out);
        return 1;
    }
    size_t frames = 0, bytes = 0;
    int rc = 0;
    for (int r = 0; r < rounds && rc == 0; r++) {
        rc = build_file(debug, out, &bytes);
        if (rc == 0)
            rc = read_back(out, addrs, nlook, &frames);
        if (rc == 0)
            rc = build_mem(image, size, addrs, nlook, &frames);
    }
    /* Stop the timer, then ignore a signal already on its way. */
    set_timer(0);
    signal(SIGPROF, SIG_IGN);
    size_t taken = nsamples;
    unlink(out);
    if (rc != 0)
        return 1;
    fprintf(stderr, "ctxreal: %d rounds: symcache of %zu bytes, %zu lookups, %zu frames\n", rounds,
            bytes, 3 * nlook * (size_t)rounds, frames);
    report(taken);
    free(addrs);
    free(image);
    return 0;
}
