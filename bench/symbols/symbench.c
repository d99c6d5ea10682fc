/*
 * symbench - helpers for bench/symbols/run.sh.
 *
 *   symbench gen OBJ COUNT SEED        random addresses inside OBJ's functions
 *   symbench first SYMCACHE ADDR REPS  open + first lookup, median over REPS (µs)
 *   symbench lookup SYMCACHE ADDRFILE [memo]
 *                                      in-process lookups only (ns/address);
 *                                      memo: after fl_symcache_memoize()
 *   symbench check SYMCACHE ADDRFILE   memoized lookups answer as plain ones
 *   symbench run CMD [ARG...]          runs CMD (output to /dev/null), prints
 *                                      "wall-seconds peak-RSS-KB" (ru_maxrss)
 */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fl_symcache.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int same_str(const char *a, const char *b) /* the two handles map apart */
{
    return a == b || (a && b && !strcmp(a, b));
}

static int gen(const char *obj, size_t count, unsigned long long seed)
{
    elf_version(EV_CURRENT);
    int fd = open(obj, O_RDONLY);
    Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
    if (!elf)
        return 1;
    unsigned long long *a = NULL, *s = NULL;
    size_t n = 0, cap = 0;
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
            if (n == cap) {
                cap = cap ? cap * 2 : 1024;
                a = realloc(a, cap * sizeof *a);
                s = realloc(s, cap * sizeof *s);
                if (!a || !s)
                    return 1;
            }
            a[n] = sym.st_value;
            s[n++] = sym.st_size;
        }
    }
    if (!n)
        return 1;
    unsigned long long x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < count; i++) {
        x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
        unsigned long long r = x * 2685821657736338717ull;
        size_t k = r % n;
        x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
        r = x * 2685821657736338717ull;
        printf("0x%llx\n", a[k] + r % s[k]);
    }
    return 0;
}

/* Peak RSS of a command, as /usr/bin/time -f %M gives it, without needing
 * GNU time: the child's ru_maxrss from wait4. */
static int run(char **argv)
{
    double t0 = now_us();
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        int fd = open("/dev/null", O_RDWR);
        if (fd >= 0) {
            dup2(fd, 0);
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid)
        return 1;
    printf("%.4f %ld\n", (now_us() - t0) / 1e6, ru.ru_maxrss);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[1], "run"))
        return run(argv + 2);
    if (argc >= 5 && !strcmp(argv[1], "gen"))
        return gen(argv[2], strtoul(argv[3], NULL, 10), strtoull(argv[4], NULL, 10));
    if (argc >= 5 && !strcmp(argv[1], "first")) {
        uint64_t addr = strtoull(argv[3], NULL, 0);
        int reps = atoi(argv[4]);
        if (reps < 1 || reps > 100000)
            reps = 1;
        double *t = malloc(sizeof(double) * (size_t)reps);
        for (int r = 0; r < reps; r++) {
            double t0 = now_us();
            fl_symcache *sc;
            char err[256];
            if (fl_symcache_open(argv[2], &sc, err, sizeof err) != 0) {
                fprintf(stderr, "%s\n", err);
                return 1;
            }
            fl_symframe f[64];
            fl_symcache_lookup(sc, addr, f, 64);
            fl_symcache_close(sc);
            t[r] = now_us() - t0;
        }
        qsort(t, (size_t)reps, sizeof *t, cmp_d);
        printf("%.1f\n", t[reps / 2]);
        free(t);
        return 0;
    }
    if (argc >= 4 && (!strcmp(argv[1], "lookup") || !strcmp(argv[1], "check"))) {
        fl_symcache *sc, *plain = NULL;
        char err[256];
        if (fl_symcache_open(argv[2], &sc, err, sizeof err) != 0 ||
            (!strcmp(argv[1], "check") &&
             fl_symcache_open(argv[2], &plain, err, sizeof err) != 0)) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        if ((plain || (argc >= 5 && !strcmp(argv[4], "memo"))) && fl_symcache_memoize(sc) != 0)
            return 1;
        FILE *f = fopen(argv[3], "r");
        if (!f)
            return 1;
        size_t n = 0, cap = 1 << 16;
        uint64_t *a = malloc(cap * sizeof *a);
        char line[64];
        while (fgets(line, sizeof line, f)) {
            if (n == cap)
                a = realloc(a, (cap *= 2) * sizeof *a);
            a[n++] = strtoull(line, NULL, 0);
        }
        fclose(f);
        if (plain) {
            size_t bad = 0;
            fl_symframe fa[64], fb[64];
            for (int pass = 0; pass < 2; pass++) /* cold, then warm blocks */
                for (size_t i = 0; i < n; i++) {
                    size_t na = fl_symcache_lookup(sc, a[i], fa, 64);
                    size_t nb = fl_symcache_lookup(plain, a[i], fb, 64);
                    int same = na == nb;
                    for (size_t k = 0; same && k < na && k < 64; k++)
                        same = same_str(fa[k].function, fb[k].function) &&
                               same_str(fa[k].file, fb[k].file) && fa[k].line == fb[k].line &&
                               fa[k].column == fb[k].column && fa[k].inlined == fb[k].inlined;
                    if (!same && bad++ < 5)
                        fprintf(stderr, "differs at 0x%llx\n", (unsigned long long)a[i]);
                }
            printf("%zu addresses, %zu differ\n", n, bad);
            fl_symcache_close(sc);
            fl_symcache_close(plain);
            free(a);
            return bad != 0;
        }
        volatile size_t sink = 0;
        fl_symframe fr[64];
        double t0 = now_us();
        for (size_t i = 0; i < n; i++)
            sink += fl_symcache_lookup(sc, a[i], fr, 64);
        double dt = now_us() - t0;
        printf("%.1f\n", n ? dt * 1000.0 / (double)n : 0.0);
        fl_symcache_close(sc);
        free(a);
        return sink == SIZE_MAX; /* reads sink: the lookups cannot be elided */
    }
    fprintf(stderr, "usage: symbench gen|first|lookup|check|run ...\n");
    return 2;
}
