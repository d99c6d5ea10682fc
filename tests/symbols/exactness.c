/*
 * exactness - `faultline symbolicate` against `llvm-symbolizer --inlines`,
 * side by side, on random addresses inside an object's functions.
 *
 *   exactness FAULTLINE OBJ COUNT SEED [MIN_PERMILLE [SYMFILE]]
 *
 * SYMFILE (default OBJ) is where the function symbols that pick the
 * addresses come from: for a stripped OBJ, its debug file.
 * OBJ "libc-debug" means libc6-dbg's debug file of the system's libc.
 * COUNT "text" means every address of OBJ's .text, 256 bytes around it.
 * Picks COUNT addresses (fixed seed: a function symbol with a size, then
 * an offset inside it), runs both programs on the same list, splits both
 * outputs into per-address blocks and fails when fewer than
 * MIN_PERMILLE/1000 (default 999) blocks are byte-identical.  The first
 * mismatches are printed for diagnosis.
 */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fl_symcache.h"

typedef struct fn {
    unsigned long long addr, size;
} fn;

static unsigned long long rng_state;
static unsigned long long rng(void)
{
    /* xorshift64*: deterministic across platforms. */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

static fn *load_funcs(const char *path, size_t *n)
{
    elf_version(EV_CURRENT);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return NULL;
    Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
    fn *v = NULL;
    size_t len = 0, cap = 0;
    for (int pass = 0; pass < 2 && len == 0; pass++) {
        Elf_Scn *scn = NULL;
        while (elf && (scn = elf_nextscn(elf, scn)) != NULL) {
            GElf_Shdr sh;
            if (!gelf_getshdr(scn, &sh) || sh.sh_type != (pass ? SHT_DYNSYM : SHT_SYMTAB) ||
                !sh.sh_entsize)
                continue;
            Elf_Data *d = elf_getdata(scn, NULL);
            for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
                GElf_Sym s;
                if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC ||
                    s.st_size == 0 || s.st_shndx == SHN_UNDEF)
                    continue;
                if (len == cap) {
                    cap = cap ? cap * 2 : 1024;
                    v = realloc(v, cap * sizeof *v);
                    if (!v)
                        exit(1);
                }
                v[len].addr = s.st_value;
                v[len].size = s.st_size;
                len++;
            }
        }
    }
    if (elf)
        elf_end(elf);
    close(fd);
    *n = len;
    return v;
}

static int text_range(const char *path, unsigned long long *lo, unsigned long long *hi)
{
    int fd = open(path, O_RDONLY);
    Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
    size_t shstrndx;
    int rc = -1;
    if (elf && elf_getshdrstrndx(elf, &shstrndx) == 0) {
        Elf_Scn *scn = NULL;
        while ((scn = elf_nextscn(elf, scn)) != NULL) {
            GElf_Shdr sh;
            const char *name;
            if (gelf_getshdr(scn, &sh) && (name = elf_strptr(elf, shstrndx, sh.sh_name)) &&
                !strcmp(name, ".text") && sh.sh_size < (1u << 24)) {
                *lo = sh.sh_addr;
                *hi = sh.sh_addr + sh.sh_size;
                rc = 0;
            }
        }
    }
    if (elf)
        elf_end(elf);
    if (fd >= 0)
        close(fd);
    return rc;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 20, n = 0, r;
    char *b = malloc(cap + 1);
    while (b && (r = fread(b + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            cap *= 2;
            b = realloc(b, cap + 1);
        }
    }
    fclose(f);
    if (b)
        b[n] = '\0';
    *len = n;
    return b;
}

/* Splits on "\n\n" (every block ends with an empty line). */
static size_t split_blocks(char *s, size_t len, char ***out)
{
    size_t n = 0, cap = 1024;
    char **v = malloc(cap * sizeof *v);
    char *p = s, *end = s + len;
    while (p < end) {
        char *q = strstr(p, "\n\n");
        if (!q)
            break;
        q[1] = '\0';
        if (n == cap) {
            cap *= 2;
            v = realloc(v, cap * sizeof *v);
        }
        v[n++] = p;
        p = q + 2;
    }
    *out = v;
    return n;
}

/* "libc-debug": the libc6-dbg debug file of the running system's libc,
 * found through the build id of /lib/x86_64-linux-gnu/libc.so.6. */
static const char *resolve_obj(const char *obj, char *buf, size_t cap)
{
    if (strcmp(obj, "libc-debug") != 0)
        return obj;
    uint8_t id[FL_SYM_BUILD_ID_MAX];
    size_t idlen = 0;
    uint64_t fp;
    char err[256], hex[2 * FL_SYM_BUILD_ID_MAX + 1];
    const char *libc = "/lib/x86_64-linux-gnu/libc.so.6";
    if (fl_symcache_identify(libc, id, &idlen, &fp, err, sizeof err) != 0 || idlen < 2) {
        fprintf(stderr, "no build id for %s: %s\n", libc, err);
        return NULL;
    }
    fl_sym_hex(id + 1, idlen - 1, hex, sizeof hex);
    snprintf(buf, cap, "/usr/lib/debug/.build-id/%02x/%s.debug", id[0], hex);
    if (access(buf, R_OK) != 0) {
        fprintf(stderr, "%s missing (install libc6-dbg)\n", buf);
        return NULL;
    }
    return buf;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: exactness FAULTLINE OBJ COUNT SEED [MIN_PERMILLE [SYMFILE]]\n");
        return 2;
    }
    char objbuf[512];
    const char *fl = argv[1], *obj = resolve_obj(argv[2], objbuf, sizeof objbuf);
    if (!obj)
        return 1;
    size_t count = strtoul(argv[3], NULL, 10);
    rng_state = strtoull(argv[4], NULL, 10) * 0x9E3779B97F4A7C15ull + 1;
    unsigned long min = argc > 5 ? strtoul(argv[5], NULL, 10) : 999;
    const char *sym = getenv("LLVM_SYMBOLIZER") ? getenv("LLVM_SYMBOLIZER") : "llvm-symbolizer";

    size_t nf;
    fn *f = load_funcs(argc > 6 ? argv[6] : obj, &nf);
    if (!f || nf == 0) {
        fprintf(stderr, "no function symbols in %s\n", obj);
        return 1;
    }
    char dir[] = "/tmp/fl-exact-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char addrs[256], o1[256], o2[256], cache[256], cmd[2048];
    snprintf(addrs, sizeof addrs, "%s/addrs", dir);
    snprintf(o1, sizeof o1, "%s/llvm.out", dir);
    snprintf(o2, sizeof o2, "%s/fl.out", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    unsigned long long text_lo = 0, text_hi = 0;
    if (!strcmp(argv[3], "text")) {
        /* Every address of .text (and 256 bytes around it): also covers
         * padding, start-up code and addresses that only a symbol (or
         * nothing) describes. */
        if (text_range(argc > 6 ? argv[6] : obj, &text_lo, &text_hi) != 0) {
            fprintf(stderr, "no .text in %s\n", obj);
            return 1;
        }
        text_lo = text_lo > 256 ? text_lo - 256 : 0;
        text_hi += 256;
        count = (size_t)(text_hi - text_lo);
    }
    unsigned long long *av = malloc(count * sizeof *av);
    FILE *a = fopen(addrs, "w");
    for (size_t i = 0; i < count; i++) {
        if (text_hi) {
            av[i] = text_lo + i;
        } else {
            fn *k = &f[rng() % nf];
            av[i] = k->addr + rng() % k->size;
        }
        fprintf(a, "0x%llx\n", av[i]);
    }
    fclose(a);
    snprintf(cmd, sizeof cmd, "'%s' --obj='%s' --inlines < '%s' > '%s'", sym, obj, addrs, o1);
    int rc1 = system(cmd);
    snprintf(cmd, sizeof cmd, "'%s' symbolicate --obj '%s' --cache '%s' < '%s' > '%s'", fl, obj,
             cache, addrs, o2);
    int rc2 = system(cmd);
    if (rc1 != 0 || rc2 != 0) {
        fprintf(stderr, "a symbolizer failed (llvm %d, faultline %d)\n", rc1, rc2);
        return 1;
    }
    size_t l1, l2;
    char *s1 = slurp(o1, &l1), *s2 = slurp(o2, &l2);
    char **b1, **b2;
    size_t n1 = split_blocks(s1, l1, &b1), n2 = split_blocks(s2, l2, &b2);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
    if (n1 != count || n2 != count) {
        fprintf(stderr, "block count: llvm %zu, faultline %zu, addresses %zu\n", n1, n2, count);
        return 1;
    }
    size_t same = 0, shown = 0;
    for (size_t i = 0; i < count; i++) {
        if (strcmp(b1[i], b2[i]) == 0) {
            same++;
            continue;
        }
        if (shown++ < 5)
            printf("--- mismatch at 0x%llx\nllvm-symbolizer:\n%sfaultline:\n%s", av[i], b1[i],
                   b2[i]);
    }
    printf("%s: %zu/%zu blocks identical (%.3f%%), required %.1f%%\n", obj, same, count,
           100.0 * (double)same / (double)count, min / 10.0);
    free(av);
    free(b1);
    free(b2);
    free(s1);
    free(s2);
    free(f);
    return same * 1000 >= min * count ? 0 : 1;
}
