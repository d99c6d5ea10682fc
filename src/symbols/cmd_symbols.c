/*
 * cmd_symbols.c - `faultline symbolicate` and `faultline symbols add`.
 *
 * symbolicate prints exactly what `llvm-symbolizer --obj=FILE --inlines`
 * (LLVM 14) prints, including how it parses an input line: an optional
 * "CODE " prefix, the first token delimited by ' ', '\r' or '\n', read as
 * an integer with C-like radix prefixes (0x, 0b, 0o, leading 0 = octal);
 * a line that does not parse is echoed back as is.  Input is read the way
 * llvm reads it (fgets into 1024 bytes), and output is flushed whenever
 * the input runs dry, so an interactive pipe sees each answer at once
 * while a batch of addresses costs few write()s.
 *
 * Batches are the case to make fast (bench/symbols): the usual line
 * ("0x" + hex digits + '\n') is parsed in place in the read buffer, a
 * frame is formatted straight into the output buffer, and after
 * MEMOIZE_AFTER inputs the symcache keeps its decoded blocks
 * (fl_symcache_memoize), which more than halves the lookup.
 */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fl_elffile.h"
#include "fl_exit.h"
#include "fl_file.h"
#include "fl_hex.h"
#include "fl_symbols_cmd.h"
#include "fl_symcache.h"
#include "fl_symcheck.h"
#include "fl_symdwp.h"
#include "fl_symstore.h"
#include "fl_symupload.h"

static void warn_no_alt(const char *cmd, const char *file, const char *hex);
static void warn_missing_files(const char *cmd, const char *file, const fl_symcache *sc);

#define MAX_FRAMES 256
#define LLVM_INPUT_MAX 1024 /* llvm-symbolizer's fgets buffer */

/* ---- address parsing, as llvm::StringRef::getAsInteger(0, u64) ------- */

static int parse_u64(const char *s, size_t n, uint64_t *out)
{
    unsigned radix = 10;
    if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        radix = 16;
        s += 2, n -= 2;
    } else if (n >= 2 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) {
        radix = 2;
        s += 2, n -= 2;
    } else if (n >= 2 && s[0] == '0' && s[1] == 'o') {
        radix = 8;
        s += 2, n -= 2;
    } else if (n >= 2 && s[0] == '0' && s[1] >= '0' && s[1] <= '9') {
        radix = 8;
        s += 1, n -= 1;
    }
    if (n == 0)
        return -1;
    unsigned long long r = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned c = (unsigned char)s[i], v;
        if (c >= '0' && c <= '9')
            v = c - '0';
        else if (c >= 'a' && c <= 'z')
            v = c - 'a' + 10;
        else if (c >= 'A' && c <= 'Z')
            v = c - 'A' + 10;
        else
            return -1;
        if (v >= radix)
            return -1;
        unsigned long long prev = r;
        r = r * radix + v;
        if (r / radix < prev)
            return -1;
    }
    *out = r;
    return 0;
}

/* llvm-symbolizer's parseCommand with --obj given. */
static int parse_input(const char *in, uint64_t *addr)
{
    const char *p = in;
    /* Fast path: a bare hex number, the common case. */
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        uint64_t v = 0;
        size_t i = 2;
        for (; i < 18; i++) {
            unsigned d = (unsigned)fl_hex_digit((unsigned char)p[i]);
            if (d > 15)
                break;
            v = v << 4 | d;
        }
        if (i > 2 && (p[i] == '\0' || p[i] == ' ')) {
            *addr = v;
            return 0;
        }
    }
    if (strncmp(p, "CODE ", 5) == 0)
        p += 5;
    else if (strncmp(p, "DATA ", 5) == 0 || strncmp(p, "FRAME ", 6) == 0)
        return -1; /* not supported: echoed like an unparsable line */
    p += strspn(p, " \n\r");
    size_t n = strcspn(p, " \n\r");
    return parse_u64(p, n, addr);
}

/* ---- output ----------------------------------------------------------- */

/* Output goes through one buffer and write(2): stdio's per-call locking
 * was most of the cost per address. */
typedef struct obuf {
    char buf[1 << 16];
    size_t len;
    int fd;
    int failed; /* the errno of the write that failed, 0 while none did */
} obuf;

static void ob_flush(obuf *o)
{
    size_t off = 0;
    while (off < o->len && !o->failed) {
        ssize_t n = write(o->fd, o->buf + off, o->len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            o->failed = n < 0 ? errno : EIO; /* keep going quietly; said at the end */
        else
            off += (size_t)n;
    }
    o->len = 0;
}

static void ob_put(obuf *o, const char *s, size_t n)
{
    while (n > 0) {
        if (o->len == sizeof o->buf)
            ob_flush(o);
        size_t k = sizeof o->buf - o->len;
        if (k > n)
            k = n;
        memcpy(o->buf + o->len, s, k);
        o->len += k;
        s += k;
        n -= k;
    }
}

static void ob_str(obuf *o, const char *s)
{
    ob_put(o, s, strlen(s));
}

/* Room for n more bytes at the end of the buffer (n <= its size). */
static inline char *ob_room(obuf *o, size_t n)
{
    if (sizeof o->buf - o->len < n)
        ob_flush(o);
    return o->buf + o->len;
}

/* Decimal digits of v at p (room for 10); returns the end.  Lines and
 * columns are mostly 1 to 4 digits: count them, then write backwards. */
static inline char *put_u32(char *p, uint32_t v)
{
    unsigned n = 1;
    if (v >= 10) {
        n = v < 100 ? 2 : v < 1000 ? 3 : v < 10000 ? 4 : 5;
        for (uint64_t t = 100000; v >= t; t *= 10)
            n++;
    }
    char *e = p + n;
    do {
        *--e = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return p + n;
}

/* Frames longer than this (a huge C++ name) go through ob_put(). */
#define FRAME_FAST_MAX 4096

static void print_frame(obuf *out, const char *fn, const char *file, uint32_t line,
                        uint32_t column)
{
    size_t fl = strlen(fn), pl = strlen(file);
    if (fl + pl > FRAME_FAST_MAX) {
        ob_put(out, fn, fl);
        ob_put(out, "\n", 1);
        ob_put(out, file, pl);
        char num[32], *q = num;
        *q++ = ':';
        q = put_u32(q, line);
        *q++ = ':';
        q = put_u32(q, column);
        *q++ = '\n';
        ob_put(out, num, (size_t)(q - num));
        return;
    }
    /* One room check and direct stores: this runs per frame. */
    char *p = ob_room(out, fl + pl + 32), *p0 = p;
    memcpy(p, fn, fl);
    p += fl;
    *p++ = '\n';
    memcpy(p, file, pl);
    p += pl;
    *p++ = ':';
    p = put_u32(p, line);
    *p++ = ':';
    p = put_u32(p, column);
    *p++ = '\n';
    out->len += (size_t)(p - p0);
}

static void print_block(obuf *out, const fl_symcache *sc, uint64_t addr)
{
    fl_symframe frames[MAX_FRAMES];
    size_t n = sc ? fl_symcache_lookup(sc, addr, frames, MAX_FRAMES) : 0;
    if (n > MAX_FRAMES)
        n = MAX_FRAMES;
    if (n == 0) {
        ob_str(out, "??\n??:0:0\n\n");
        return;
    }
    for (size_t i = 0; i < n; i++)
        print_frame(out, frames[i].function ? frames[i].function : "??",
                    frames[i].file ? frames[i].file : "??", frames[i].line, frames[i].column);
    *ob_room(out, 1) = '\n';
    out->len++;
}

/* After this many inputs the symcache is memoized (fl_symcache_memoize):
 * a batch pays up to ~20 bytes per range entry (~3 MB for libc) for
 * ~2.5x faster lookups; a few addresses skip the set-up. */
#define MEMOIZE_AFTER 64

/* One symbolicate run: its output, symcache (NULL: answer "??") and
 * count of inputs so far. */
typedef struct sym_run {
    obuf out;
    fl_symcache *sc;
    unsigned long inputs;
} sym_run;

static void count_input(sym_run *run)
{
    if (run->sc && ++run->inputs == MEMOIZE_AFTER)
        (void)fl_symcache_memoize(run->sc); /* on ENOMEM lookups just stay slower */
}

static void handle_input(sym_run *run, const char *in)
{
    uint64_t addr;
    count_input(run);
    if (parse_input(in, &addr) != 0) {
        ob_str(&run->out, in);
        ob_put(&run->out, "\n", 1);
        return;
    }
    print_block(&run->out, run->sc, addr);
}

/* The common line, "0x" and 1 to 16 hex digits then '\n', parsed in
 * place: what the general path (an fgets piece, CR/LF stripped,
 * parse_input) makes of it too.  Returns the line's length with its
 * '\n', or 0 for anything else (left to the general path). */
static size_t fast_hex_line(const char *p, size_t avail, uint64_t *addr)
{
    if (avail < 4 || p[0] != '0' || (p[1] | 0x20) != 'x')
        return 0;
    size_t lim = avail < 19 ? avail : 19, i = 2;
    uint64_t v = 0;
    for (; i < lim; i++) {
        unsigned d = (unsigned)fl_hex_digit((unsigned char)p[i]);
        if (d > 15)
            break;
        v = v << 4 | d;
    }
    if (i == 2 || i == lim || p[i] != '\n')
        return 0;
    *addr = v;
    return i + 1;
}

/* Reads stdin in llvm's fgets(1024) pieces, strips '\r' and '\n'. */
static void run_stdin(sym_run *run)
{
    obuf *out = &run->out;
    static char buf[1 << 16];
    size_t len = 0, pos = 0;
    int eof = 0;
    char piece[LLVM_INPUT_MAX];
    for (;;) {
        uint64_t addr;
        size_t used = fast_hex_line(buf + pos, len - pos, &addr);
        if (used) {
            pos += used;
            count_input(run);
            print_block(out, run->sc, addr);
            continue;
        }
        /* Collect one fgets piece: up to '\n' or LLVM_INPUT_MAX-1 bytes. */
        size_t pl = 0;
        int got_nl = 0;
        while (pl < LLVM_INPUT_MAX - 1 && !got_nl) {
            if (pos == len) {
                if (eof)
                    break;
                ob_flush(out); /* about to block: let a pipe peer see answers */
                ssize_t r = read(0, buf, sizeof buf);
                if (r < 0 && errno == EINTR)
                    continue;
                if (r <= 0) {
                    eof = 1;
                    break;
                }
                len = (size_t)r;
                pos = 0;
            }
            /* Copy up to the newline in one go. */
            size_t want = LLVM_INPUT_MAX - 1 - pl, avail = len - pos;
            size_t k = avail < want ? avail : want;
            const char *nl = memchr(buf + pos, '\n', k);
            if (nl) {
                k = (size_t)(nl - (buf + pos)) + 1;
                got_nl = 1;
            }
            memcpy(piece + pl, buf + pos, k);
            pl += k;
            pos += k;
        }
        if (pl == 0 && eof)
            break;
        size_t o = 0;
        for (size_t i = 0; i < pl; i++)
            if (piece[i] != '\r' && piece[i] != '\n')
                piece[o++] = piece[i];
        piece[o] = '\0';
        handle_input(run, piece);
    }
}

static int cache_dir_for(const char *opt, char *buf, size_t cap)
{
    if (opt) {
        if ((size_t)snprintf(buf, cap, "%s", opt) >= cap)
            return -1;
        return 0;
    }
    return fl_symstore_default_dir(buf, cap) == 0 ? 0 : -1;
}

static void symbolicate_usage(FILE *f)
{
    fprintf(f, "usage: faultline symbolicate --obj FILE [--cache DIR] [ADDR...]\n"
               "  Prints, for each address (from the arguments, else one per line on\n"
               "  stdin), the function, file:line:column and inlined callers, exactly\n"
               "  as `llvm-symbolizer --obj=FILE --inlines` does.\n"
               "  --obj FILE   the module (--exe and -e, also as -e<FILE>, are the same\n"
               "               option, as llvm-symbolizer and addr2line spell it)\n"
               "  --cache DIR  where the symcache is kept (default\n"
               "               $XDG_CACHE_HOME/faultline/symcache, else\n"
               "               ~/.cache/faultline/symcache; without a usable one, a\n"
               "               symcache for this run only in $TMPDIR)\n"
               "  -i, --inlines  accepted and ignored: inlined callers are always shown\n"
               "Exit: 0 done (an unreadable FILE answers ?? for every address, as\n"
               "llvm-symbolizer does), 1 output could not be written, 64 usage.\n");
}

/* A usage error of `faultline NAME`: one line that says what is wrong, as
 * serve and submit say it -- the whole usage after it would scroll it off
 * the screen.  hint: the command line's shape is wrong (an unknown option,
 * a value or a file missing), so "; see faultline NAME --help" follows; a
 * wrong value's message says what is wanted itself. */
static int usage_error(const char *name, bool hint, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int usage_error(const char *name, bool hint, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "faultline %s: ", name);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (hint)
        fprintf(stderr, "; see faultline %s --help", name);
    fputc('\n', stderr);
    return FL_EXIT_USAGE;
}

/* Is a the option (one of names, NULL-terminated), alone or as
 * "NAME=VALUE"?  OUT: *val, the value: after '=' or the next argument
 * (NULL when there is none, or it is empty).  Advances *i past a value
 * taken from the next argument. */
static int opt_value(const char *a, const char *const *names, int argc, char **argv, int *i,
                     const char **val)
{
    for (; *names; names++) {
        size_t n = strlen(*names);
        if (strncmp(a, *names, n) != 0)
            continue;
        if (a[n] == '=') {
            *val = a[n + 1] ? a + n + 1 : NULL;
            return 1;
        }
        if (a[n] == '\0') {
            *val = *i + 1 < argc ? argv[++*i] : NULL;
            if (*val && !**val)
                *val = NULL;
            return 1;
        }
    }
    return 0;
}

/* The reason an input file cannot be used, before any ELF reading: "" when
 * it may be; a directory says so (libelf would only say "invalid file
 * descriptor"). */
static void file_problem(const char *path, char *why, size_t cap)
{
    struct stat st;
    why[0] = '\0';
    if (stat(path, &st) != 0)
        snprintf(why, cap, "%s", strerror(errno));
    else if (S_ISDIR(st.st_mode))
        snprintf(why, cap, "is a directory");
}

/* err names path, as "PATH: err" unless it already does. */
static void print_file_error(const char *cmd, const char *path, const char *err)
{
    if (strstr(err, path))
        fprintf(stderr, "faultline %s: %s\n", cmd, err);
    else
        fprintf(stderr, "faultline %s: %s: %s\n", cmd, path, err);
}

int fl_cmd_symbolicate(int argc, char **argv)
{
    static const char *const obj_opts[] = {"--obj", "--exe", "-e", NULL};
    static const char *const cache_opts[] = {"--cache", NULL};
    const char *obj = NULL, *cache = NULL;
    /* Options anywhere, as llvm-symbolizer takes them; the other
     * arguments are the addresses, in order ("--": all that follow). */
    int naddrs = 0, only_addrs = 0;
    char **addrs = calloc((size_t)argc, sizeof *addrs);
    if (!addrs) {
        fprintf(stderr, "faultline symbolicate: out of memory\n");
        return FL_EXIT_ERROR;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (only_addrs) {
            addrs[naddrs++] = argv[i];
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            symbolicate_usage(stdout);
            free(addrs);
            return 0;
        } else if (a[0] == '-' && a[1] == 'e' && a[2] && a[2] != '=') {
            obj = a + 2; /* -eFILE */
        } else if (opt_value(a, obj_opts, argc, argv, &i, &v)) {
            if (!v) {
                free(addrs);
                return usage_error("symbolicate", true, "%.*s needs a value", (int)strcspn(a, "="),
                                   a); /* "--obj=": the option */
            }
            obj = v;
        } else if (opt_value(a, cache_opts, argc, argv, &i, &v)) {
            if (!v) {
                free(addrs);
                return usage_error("symbolicate", true, "%.*s needs a value", (int)strcspn(a, "="),
                                   a); /* "--obj=": the option */
            }
            cache = v;
        } else if (!strcmp(a, "--inlines") || !strcmp(a, "-i")) {
            /* the default and only mode */
        } else if (!strcmp(a, "--")) {
            only_addrs = 1;
        } else if (a[0] == '-' && a[1] && !(a[1] >= '0' && a[1] <= '9')) {
            free(addrs);
            return usage_error("symbolicate", true, "unknown option '%s'", a);
        } else {
            addrs[naddrs++] = argv[i];
        }
    }
    if (!obj) {
        free(addrs);
        return usage_error("symbolicate", true, "no --obj FILE given");
    }
    char dir[PATH_MAX], err[512];
    fl_symcache *sc = NULL;
    int built = 0, rc = FL_SYM_EINVAL;
    file_problem(obj, err, sizeof err);
    int bad_file = err[0] != '\0'; /* reported below; nothing to build from */
    if (bad_file)
        rc = FL_SYM_EIO;
    else if (cache_dir_for(cache, dir, sizeof dir) == 0)
        rc = fl_symstore_get(dir, obj, NULL, 0, &sc, &built, NULL, NULL, 0, err, sizeof err);
    else
        snprintf(err, sizeof err, "no cache directory (set HOME or --cache)");
    if (rc != 0) {
        /* No usable cache directory (read-only, no HOME...): build a
         * private symcache in TMPDIR, use it, drop it. */
        const char *tmpdir = getenv("TMPDIR");
        char tmp[PATH_MAX], err2[512];
        if (!tmpdir || !*tmpdir)
            tmpdir = "/tmp";
        int fd = -1;
        if (!bad_file &&
            (size_t)snprintf(tmp, sizeof tmp, "%s/faultline-XXXXXX", tmpdir) < sizeof tmp &&
            (fd = mkstemp(tmp)) >= 0) {
            close(fd);
            if (fl_symcache_build(obj, tmp, NULL, err2, sizeof err2) == 0 &&
                fl_symcache_open(tmp, &sc, err2, sizeof err2) == 0)
                rc = 0;
            unlink(tmp); /* the mapping stays valid */
        }
    }
    if (rc != 0) {
        /* Like llvm-symbolizer: report, then answer "??" for every input. */
        print_file_error("symbolicate", obj, err);
        sc = NULL;
    }
    if (sc)
        warn_missing_files("symbolicate", obj, sc);
    static sym_run run; /* 64 KB of output buffer: not on the stack */
    run.out.len = 0;
    run.out.fd = 1;
    run.out.failed = 0;
    run.sc = sc;
    run.inputs = 0;
    fflush(stdout);
    if (naddrs > 0) {
        for (int i = 0; i < naddrs; i++)
            handle_input(&run, addrs[i]);
    } else {
        run_stdin(&run);
    }
    free(addrs);
    ob_flush(&run.out);
    fl_symcache_close(sc);
    /* A reader that went away (| head) is no news; a full disk is. */
    if (run.out.failed && run.out.failed != EPIPE)
        fprintf(stderr, "faultline symbolicate: writing the output: %s\n",
                strerror(run.out.failed));
    return run.out.failed ? 1 : 0;
}

/* ---- symbols add ------------------------------------------------------- */

static void symbols_usage(FILE *f)
{
    fprintf(f, "usage: faultline symbols add FILE|DIR... [--cache DIR] [--force]\n"
               "       faultline symbols add FILE|DIR... --server URL [--token TOKEN]\n"
               "                                     [--timeout S] [--retries N] [--cacert FILE]\n"
               "  Ingests ELF files with DWARF (or separate .debug files) into the symcache\n"
               "  directory, keyed by GNU build id, one line per file; with --server,\n"
               "  uploads them to a Faultline server instead.  Each file is checked first as\n"
               "  the server checks it: a file with neither DWARF nor a .symtab (a fully\n"
               "  stripped binary) is refused, and so is one without a GNU build id for an\n"
               "  upload.  Locally, DWARF found through /usr/lib/debug/.build-id or\n"
               "  .gnu_debuglink counts.  With --server, a split-DWARF program's .dwo\n"
               "  files (-gsplit-dwarf) go too, found as libdw finds them (DW_AT_dwo_name\n"
               "  relative to the file's directory, then to DW_AT_comp_dir; else its\n"
               "  .dwp package, FILE.dwp), and so do the dwz files its DWARF links to; a\n"
               "  .dwo file given is uploaded by its DWO id, a .dwp package by the DWO ids\n"
               "  it holds.  A directory (a build tree) gives every ELF file under it with\n"
               "  a GNU build id and DWARF or a .symtab, in path order; the others\n"
               "  (stripped copies, object files, links, anything else) are passed over,\n"
               "  and of files with one build id only the most complete (DWARF with code,\n"
               "  then DWARF, then a symbol table) is taken.  CMake's compiler probes are\n"
               "  not walked: CMakeFiles/<version>/, CMakeFiles/CMakeTmp/ and\n"
               "  CMakeFiles/CMakeScratch/ (a target's CMakeFiles/<target>.dir/ is).\n"
               "  --cache DIR     the symcache directory (default\n"
               "                  $XDG_CACHE_HOME/faultline/symcache, else\n"
               "                  ~/.cache/faultline/symcache)\n"
               "  --force         build again files already in the cache\n"
               "  --server URL    upload to this server (POST BASE/api/v1/symbols): its base\n"
               "                  URL, or a URL of its API such as the ingest URL\n"
               "                  (.../api/v1/crashes, .../api/v1/symbols or .../)\n"
               "  --token TOKEN   the server's admin token, sent as the bearer token; needed\n"
               "                  with --server (default $FAULTLINE_ADMIN_TOKEN, which keeps\n"
               "                  it out of the process list)\n"
               "  --timeout S     with --server: give up on a file when nothing moves for S\n"
               "                  seconds, waiting for the server's answer included\n"
               "                  (default 60, 1..86400; a large file may take longer in\n"
               "                  all)\n"
               "  --retries N     with --server: after a temporary failure (no connection,\n"
               "                  a reset or stalled upload, HTTP 429, 502, 503, 504 or\n"
               "                  507), send the file again up to N more times, waiting as\n"
               "                  the server's Retry-After asks (at most 300 s), else 2, 4,\n"
               "                  8, 16, 32 s (default 5, at most 100; 0: once only).  HTTP\n"
               "                  413 (a file over the server's --max-symbol-file) fails\n"
               "                  that file for good\n"
               "  --cacert FILE   with --server: check an https server's certificate\n"
               "                  against the CA certificates (PEM) in FILE, as for a TLS\n"
               "                  proxy with a private CA (default $FAULTLINE_CACERT)\n"
               "Exit: 0 every file ingested or uploaded, 1 some failed, 64 usage, 75 (with\n"
               "--server) the server stayed unavailable through a file's retries: that\n"
               "file and the rest were not sent (and none failed for good before them);\n"
               "run the command again later.\n");
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* How `symbols add --server` sends. */
typedef struct upload_opts {
    const char *token;
    const char *cacert; /* --cacert: CA certificates (PEM), NULL: the system's */
    long stall_s;       /* --timeout */
    int retries;  /* --retries: further tries after a temporary failure */
} upload_opts;

static int symbols_upload_all(const char *base, const upload_opts *o, char **files, int n);

/* Warns that file's DWARF links to a dwz file found nowhere here. */
static void warn_no_alt(const char *cmd, const char *file, const char *hex)
{
    fprintf(stderr,
            "faultline %s: warning: %s: its DWARF links to a dwz file (build id %s) that is "
            "not found: the names and inlined functions dwz moved into it are missing until it "
            "is where the link names it or at /usr/lib/debug/.build-id/%.2s/%s.debug (for a "
            "server: uploaded too)\n",
            cmd, file, hex, hex, hex + 2);
}

/* Warns about the files the DWARF of sc (built from file) refers to that
 * were not found when it was built: its dwz file, its .dwo files. */
static void warn_missing_files(const char *cmd, const char *file, const fl_symcache *sc)
{
    char alt[2 * FL_SYM_BUILD_ID_MAX + 1];
    if (fl_symcache_alt_missing(sc) &&
        fl_symcache_altlink(file, NULL, alt, sizeof alt, NULL, 0) == 1)
        warn_no_alt(cmd, file, alt);
    size_t units = 0, missing = 0;
    if (fl_symcache_dwo_missing(sc) && fl_symcache_split_units(file, &units, &missing) == 0 &&
        missing)
        fprintf(stderr,
                "faultline %s: warning: %s: the .dwo files of %zu of its %zu split-DWARF units "
                "are not found (DW_AT_dwo_name, relative to DW_AT_comp_dir; nor in %s.dwp): their "
                "functions and inlined frames are missing (their lines are read)\n",
                cmd, file, missing, units, file);
}

/* The list of files to upload, growing: borrowed names and owned ones. */
typedef struct upload_list {
    char **all; /* the files, in upload order */
    int n, cap;
    char **owned; /* those the list allocated */
    int nowned;
} upload_list;

/* Appends file (own: a copy is made and kept; a file found, not given,
 * which goes once however many given files name it). */
static int list_add(upload_list *l, const char *file, int own)
{
    for (int j = 0; own && j < l->n; j++)
        if (!strcmp(l->all[j], file))
            return 0;
    if (l->n == l->cap) {
        int nc = l->cap ? l->cap * 2 : 16;
        char **na = realloc(l->all, (size_t)nc * sizeof *na);
        char **no = na ? realloc(l->owned, (size_t)nc * sizeof *no) : NULL;
        if (na)
            l->all = na;
        if (!no)
            return -1;
        l->owned = no;
        l->cap = nc;
    }
    char *f = own ? strdup(file) : (char *)file;
    if (!f)
        return -1;
    if (own)
        l->owned[l->nowned++] = f;
    l->all[l->n++] = f;
    return 0;
}

static void list_free(upload_list *l)
{
    for (int i = 0; i < l->nowned; i++)
        free(l->owned[i]);
    free(l->owned);
    free(l->all);
}

/* The .dwo files of file's split-DWARF units (-gsplit-dwarf leaves each
 * unit's DIEs there), found where libdw finds them on this machine (the
 * skeleton's DW_AT_dwo_name relative to the directory of the file, then
 * to its DW_AT_comp_dir), go into l before file itself: the server keeps
 * them by DWO id, and has them when the file's symcache is first built.
 * Those found nowhere are named in a warning. */
static int add_dwo_files(upload_list *l, const char *file)
{
    fl_dwo_unit *u = NULL;
    size_t n = 0, missing = 0;
    if (fl_symcache_dwo_list(file, NULL, &u, &n) != 0)
        return 0; /* the upload's own check says what is wrong with file */
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (u[i].path)
            rc = list_add(l, u[i].path, 1);
        else
            missing++;
    }
    if (missing) {
        fprintf(stderr,
                "faultline symbols add: warning: %s: the .dwo files of %zu of its %zu "
                "split-DWARF units are not found (DW_AT_dwo_name, relative to the file's "
                "directory, then to DW_AT_comp_dir; nor in %s.dwp), so not uploaded: their "
                "functions and inlined frames will be missing on the server; not found:",
                file, missing, n, file);
        size_t shown = 0;
        for (size_t i = 0; i < n && shown < 5; i++)
            if (!u[i].path) {
                fprintf(stderr, "%s %s (DWO id %s)", shown ? "," : "", u[i].name, u[i].dwo_id);
                shown++;
            }
        fprintf(stderr, "%s\n", missing > shown ? ", ..." : "");
    }
    fl_symcache_dwo_free(u, n);
    return rc;
}

/* The files to upload for files[0..n): each one's .dwo files, then the
 * file; then the dwz files their DWARF links to (dwz -m moves what several
 * debug files share into one file they all link to), once each, so that
 * the server gets everything the names need.  0, or -1 out of memory. */
static int upload_files(upload_list *l, char **files, int n)
{
    for (int i = 0; i < n; i++)
        if (add_dwo_files(l, files[i]) || list_add(l, files[i], 0))
            return -1;
    for (int i = 0; i < n; i++) {
        char hex[2 * FL_SYM_BUILD_ID_MAX + 1], where[PATH_MAX];
        if (fl_symcache_altlink(files[i], NULL, hex, sizeof hex, where, sizeof where) != 1)
            continue;
        if (!where[0])
            warn_no_alt("symbols add", files[i], hex);
        else if (list_add(l, where, 1))
            return -1;
    }
    return 0;
}

/* Upload files[0..n) to server.  Returns the exit status. */
static int symbols_upload(const char *server, const upload_opts *o, char **files, int n)
{
    char base[2048];
    if ((strncasecmp(server, "http://", 7) != 0 && strncasecmp(server, "https://", 8) != 0) ||
        fl_symupload_base_url(server, base, sizeof base) != 0)
        return usage_error("symbols add", false,
                           "--server %s: not a server URL (http://HOST:PORT or https://...)",
                           server);
    upload_list l = {0};
    int rc;
    if (upload_files(&l, files, n)) {
        fprintf(stderr, "faultline symbols add: out of memory\n");
        rc = FL_EXIT_ERROR;
    } else {
        rc = symbols_upload_all(base, o, l.all, l.n);
    }
    list_free(&l);
    return rc;
}

/* Waits s seconds (a signal ends the wait early; the next try follows). */
static void pause_s(long s)
{
    struct timespec ts = {s, 0};
    nanosleep(&ts, NULL);
}

/* Sends files[i] until it is uploaded, fails for good, or its temporary
 * failures have used up o->retries further tries: waiting what the
 * server's Retry-After asks (at most 5 minutes), else 2, 4, 8... seconds
 * (at most a minute) -- a server restarting, or whose database is busy,
 * does not fail a build's upload step.  OUT: *status, *temporary of the
 * last try, msg.  Returns fl_symupload's code of the last try. */
static int upload_with_retries(const char *base, const upload_opts *o, char **files, int i, int n,
                               int tty, fl_symupload_result *res, char *msg, size_t msglen)
{
    for (int attempt = 0;; attempt++) {
        int rc = fl_symupload(base, o->token, o->cacert, files[i], tty, i + 1, n, o->stall_s, res,
                              msg, msglen);
        if (rc == 0 || !res->temporary || attempt >= o->retries)
            return rc;
        long wait = res->retry_after >= 0 ? (res->retry_after > 300 ? 300 : res->retry_after)
                    : attempt < 5         ? 2L << attempt
                                          : 60;
        if (wait < 1)
            wait = 1;
        fprintf(stderr, "faultline symbols add: %s; trying again in %ld s (try %d of %d)\n", msg,
                wait, attempt + 2, o->retries + 1);
        pause_s(wait);
    }
}

static int symbols_upload_all(const char *base, const upload_opts *o, char **files, int n)
{
    int tty = isatty(2), failed = 0;
    for (int i = 0; i < n; i++) {
        char msg[1024];
        fl_symupload_result res;
        int rc = upload_with_retries(base, o, files, i, n, tty, &res, msg, sizeof msg);
        if (rc == 0) {
            printf("%s\n", msg);
            fflush(stdout);
            continue;
        }
        if (res.http_status == 401 || res.http_status == 403) {
            /* Every other file would get the same answer. */
            fprintf(stderr,
                    "faultline symbols add: %s: the server refused the admin token (HTTP %ld); "
                    "give the server's admin token with --token TOKEN or FAULTLINE_ADMIN_TOKEN\n",
                    files[i], res.http_status);
            if (i + 1 < n)
                fprintf(stderr, "faultline symbols add: %d more file%s not uploaded\n", n - i - 1,
                        n - i - 1 > 1 ? "s" : "");
            return FL_EXIT_ERROR;
        }
        fprintf(stderr, "faultline symbols add: %s\n", msg);
        if (res.temporary) {
            /* Still away or busy after the retries: the next files would
             * wait as long for the same answer. */
            fprintf(stderr,
                    "faultline symbols add: the server is unavailable; %d file%s not uploaded: "
                    "run the command again later\n",
                    n - i, n - i > 1 ? "s" : "");
            return failed ? FL_EXIT_ERROR : FL_EXIT_TEMPFAIL;
        }
        failed++;
    }
    return failed ? FL_EXIT_ERROR : FL_EXIT_OK;
}

/* Ingest one file into the symcache directory dir.  0, or -1 when it
 * failed (said on stderr). */
static int symbols_add_one(const char *dir, const char *file, int force, int tty, int index,
                           int count)
{
    char err[512], path[PATH_MAX], dwo[17];
    fl_symcheck_info info = {0}; /* read only after fl_symcheck_debug_file() */
    fl_dwp *pkg = NULL;
    int pk = fl_dwp_open(file, &pkg, err, sizeof err);
    if (pk == 1) {
        /* A package is read beside its program (PROG.dwp), for the units
         * whose .dwo files are not found: nothing of its own to cache. */
        size_t units = fl_dwp_count(pkg);
        printf("%s: a .dwp package of split DWARF (%zu unit%s, DWO id%s", file, units,
               units == 1 ? "" : "s", units == 1 ? "" : "s");
        for (size_t i = 0; i < units && i < 5; i++)
            printf("%s%016" PRIx64, i ? ", " : " ", fl_dwp_id(pkg, i));
        printf("%s): read beside its program (PROG.dwp); nothing to cache\n",
               units > 5 ? ", ..." : "");
        fl_dwp_close(pkg);
        return 0;
    }
    if (pk < 0) {
        char why[600];
        snprintf(why, sizeof why, "not a usable .dwp package: %s", err);
        print_file_error("symbols add", file, why);
        return -1;
    }
    int ck = fl_symcheck_dwo_file(file, dwo, sizeof dwo, err, sizeof err);
    if (ck == 1) {
        /* Read where its program names it (the builder follows
         * DW_AT_dwo_name): it has no addresses of its own to cache. */
        printf("%s %s: a split DWARF object (.dwo, DWO id %s): read where its program names it; "
               "nothing to cache (upload it with --server)\n",
               dwo, file, dwo);
        return 0;
    }
    if (ck == 0)
        ck = fl_symcheck_debug_file(file, &info, err, sizeof err);
    if (ck == FL_SYMCHECK_EDWO) {
        print_file_error("symbols add", file, err);
        return -1;
    }
    if (ck == FL_SYMCHECK_EFILE || ck == FL_SYMCHECK_ENOTELF) {
        print_file_error("symbols add", file, err);
        return -1;
    }
    if (tty)
        fprintf(stderr, "\r[%d/%d] %s ...\033[K", index, count, file);
    fl_symbuild_stats st;
    fl_symcache *sc = NULL;
    int built = 0;
    double t0 = now_s();
    int rc = fl_symstore_get(dir, file, NULL, force, &sc, &built, &st, path, sizeof path, err,
                             sizeof err);
    double dt = now_s() - t0;
    if (tty)
        fprintf(stderr, "\r\033[K");
    if (rc != 0) {
        print_file_error("symbols add", file, err);
        return -1;
    }
    /* The server's refusal, unless the builder found DWARF elsewhere (a
     * debug file by build id or debuglink) that the server would not.  A
     * refused file leaves nothing in the cache: its symcache would stand
     * for the same build id and symbol table with a debug file at hand. */
    if (!info.has_dwarf && !info.has_symtab && !fl_symcache_has_dwarf(sc)) {
        print_file_error("symbols add", file, fl_symcheck_strerror(FL_SYMCHECK_ENODEBUG));
        fl_symcache_close(sc);
        if (built)
            unlink(path);
        return -1;
    }
    const uint8_t *id;
    size_t idlen = fl_symcache_build_id(sc, &id);
    char hex[2 * FL_SYM_BUILD_ID_MAX + 1];
    fl_sym_hex(id, idlen, hex, sizeof hex);
    /* Call sites only where the DWARF has them (gcc and clang write
     * them at -O1 and above): their absence says tail-call frames cannot
     * be restored for this module. */
    char calls[96] = "";
    if (built && fl_symcache_has_calls(sc))
        snprintf(calls, sizeof calls, ", %llu call sites, %llu tail calls",
                 (unsigned long long)st.call_sites, (unsigned long long)st.tail_calls);
    if (built)
        printf("%s %s: %s, %llu records, %llu ranges%s, %llu bytes in %.3f s -> %s\n",
               idlen ? hex : "-", file, st.has_dwarf ? "DWARF" : "symbol table only",
               (unsigned long long)st.records, (unsigned long long)st.ranges, calls,
               (unsigned long long)st.file_bytes, dt, path);
    else
        printf("%s %s: already cached -> %s\n", idlen ? hex : "-", file, path);
    warn_missing_files("symbols add", file, sc);
    fl_symcache_close(sc);
    return 0;
}

/* A decimal number in lo..hi, the whole of s: 0 and *out, else -1. */
static int long_in(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* Of the files found from index `from` on that share a build id (a build
 * tree's program and its .debug file), keeps the most complete one, DWARF
 * and code before DWARF alone before a symbol table (what the server's
 * unwinder and context decoder also read), the first in path order on a
 * tie: the server would take them all, to keep one.  Returns how many
 * went. */
static int by_id(const void *a, const void *b, void *base)
{
    const fl_elf_obj *o = base;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    int c = strcmp(o[x].id, o[y].id);
    return c ? c : (x > y) - (x < y); /* path order within one id */
}

static size_t drop_duplicates(fl_elf_objs *l, size_t from)
{
    size_t n = l->n - from, dropped = 0;
    size_t *ord = malloc((n ? n : 1) * sizeof *ord);
    bool *gone = calloc(n ? n : 1, sizeof *gone);
    if (!ord || !gone)
        goto out; /* all kept: more uploads, nothing lost */
    for (size_t i = 0; i < n; i++)
        ord[i] = i;
    const fl_elf_obj *dup_base = l->o + from;
    qsort_r(ord, n, sizeof *ord, by_id, (void *)dup_base);
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && !strcmp(dup_base[ord[i]].id, dup_base[ord[j]].id))
            j++;
        if (j - i > 1) { /* twins: only they are opened again */
            size_t best = ord[i];
            int best_score = fl_elf_completeness(dup_base[best].path);
            for (size_t k = i + 1; k < j; k++) {
                int sc = fl_elf_completeness(dup_base[ord[k]].path);
                if (sc > best_score)
                    best = ord[k], best_score = sc;
            }
            for (size_t k = i; k < j; k++)
                gone[ord[k]] = ord[k] != best;
        }
        i = j;
    }
    size_t k = from;
    for (size_t i = 0; i < n; i++) {
        if (gone[i]) {
            free(l->o[from + i].path);
            dropped++;
        } else {
            l->o[k++] = l->o[from + i];
        }
    }
    l->n = k;
out:
    free(ord);
    free(gone);
    return dropped;
}

/* The files to add: files[0..n), each directory among them replaced by
 * the ELF files under it with a build id and DWARF or a symbol table (a
 * build tree: what would be refused is passed over), into *out (paths
 * borrowed from files and found).  *bad: directories that gave none, each
 * named on stderr.  -1: out of memory. */
static int expand_dirs(char **files, int n, fl_elf_objs *found, char ***out, int *nout, int *bad)
{
    char **all = NULL;
    size_t nall = 0, cap = 0;
    *bad = 0;
    for (int i = 0; i < n; i++) {
        struct stat st;
        size_t before = found->n;
        if (stat(files[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            char why[256];
            if (fl_elf_objs_add(found, files[i], FL_ELF_WANT_SYMBOLS, why, sizeof why) != 0) {
                fprintf(stderr, "faultline symbols add: %s: %s\n", files[i], why);
                (*bad)++;
                continue;
            }
            size_t dups = drop_duplicates(found, before);
            size_t nf = found->n - before;
            fprintf(stderr, "faultline symbols add: %s: %zu file%s with a build id and symbols",
                    files[i], nf, nf == 1 ? "" : "s");
            if (dups)
                fprintf(stderr, " (%zu more with the same build id as one of them passed over)",
                        dups);
            fputc('\n', stderr);
        }
        size_t add = found->n > before ? found->n - before : 1;
        if (nall + add > cap) {
            size_t nc = cap ? 2 * cap : 64;
            while (nc < nall + add)
                nc *= 2;
            char **na = realloc(all, nc * sizeof *na);
            if (!na) {
                free(all);
                return -1;
            }
            all = na;
            cap = nc;
        }
        if (found->n > before)
            for (size_t k = before; k < found->n; k++)
                all[nall++] = found->o[k].path;
        else
            all[nall++] = files[i];
    }
    if (nall > INT_MAX) {
        free(all);
        return -1;
    }
    *out = all;
    *nout = (int)nall;
    return 0;
}

int fl_cmd_symbols(int argc, char **argv)
{
    if (argc < 2)
        return usage_error("symbols", true, "no subcommand given (add)");
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        symbols_usage(stdout);
        return FL_EXIT_OK;
    }
    if (strcmp(argv[1], "add") != 0)
        return usage_error("symbols", true, "unknown subcommand '%s'", argv[1]);
    static const char *const cache_opts[] = {"--cache", NULL};
    static const char *const server_opts[] = {"--server", NULL};
    static const char *const token_opts[] = {"--token", NULL};
    static const char *const timeout_opts[] = {"--timeout", NULL};
    static const char *const retries_opts[] = {"--retries", NULL};
    static const char *const cacert_opts[] = {"--cacert", NULL};
    const char *cache = NULL, *server = NULL, *token = getenv("FAULTLINE_ADMIN_TOKEN");
    const char *timeout = NULL, *retries = NULL, *cacert = getenv("FAULTLINE_CACERT");
    int cacert_given = 0, token_given = 0;
    int force = 0;
    char **files = calloc((size_t)argc, sizeof *files), **all = NULL;
    int nfiles = 0, nall = 0, bad = 0, rc = FL_EXIT_USAGE;
    fl_elf_objs found = {0};
    if (!files) {
        fprintf(stderr, "faultline symbols add: out of memory\n");
        return FL_EXIT_ERROR;
    }
    int only_files = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        const char *const *names = NULL;
        if (only_files || a[0] != '-' || !a[1]) {
            files[nfiles++] = argv[i];
            continue;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            symbols_usage(stdout);
            rc = FL_EXIT_OK;
            goto out;
        } else if (!strcmp(a, "--")) {
            only_files = 1;
        } else if (!strcmp(a, "--force")) {
            force = 1;
        } else if (opt_value(a, names = cache_opts, argc, argv, &i, &v) ||
                   opt_value(a, names = server_opts, argc, argv, &i, &v) ||
                   opt_value(a, names = token_opts, argc, argv, &i, &v) ||
                   opt_value(a, names = timeout_opts, argc, argv, &i, &v) ||
                   opt_value(a, names = retries_opts, argc, argv, &i, &v) ||
                   opt_value(a, names = cacert_opts, argc, argv, &i, &v)) {
            if (!v) {
                usage_error("symbols add", true, "%s needs a value", names[0]);
                goto out;
            }
            if (names == cache_opts)
                cache = v;
            else if (names == server_opts)
                server = v;
            else if (names == timeout_opts)
                timeout = v;
            else if (names == retries_opts)
                retries = v;
            else if (names == cacert_opts) {
                cacert = v;
                cacert_given = 1;
            } else {
                token = v;
                token_given = 1;
            }
        } else {
            usage_error("symbols add", true, "unknown option '%s'", a);
            goto out;
        }
    }
    if (nfiles == 0) {
        usage_error("symbols add", true, "no file given");
        goto out;
    }
    long stall_s = 60, nretries = 5;
    if (timeout && long_in(timeout, 1, 86400, &stall_s)) {
        usage_error("symbols add", false, "--timeout: '%s' is not a number of seconds (1 to 86400)",
                    timeout);
        goto out;
    }
    if (retries && long_in(retries, 0, 100, &nretries)) {
        usage_error("symbols add", false, "--retries: '%s' is not a number of tries (0 to 100)",
                    retries);
        goto out;
    }
    if (server && (cache || force)) {
        usage_error("symbols add", false, "%s is for the local cache; not with --server",
                    cache ? "--cache" : "--force");
        goto out;
    }
    if (!server && (timeout || retries || cacert_given || token_given)) {
        usage_error("symbols add", false, "%s is for uploads (--server)",
                    timeout       ? "--timeout"
                    : retries     ? "--retries"
                    : token_given ? "--token"
                                  : "--cacert");
        goto out;
    }
    if (cacert && !*cacert) /* an empty FAULTLINE_CACERT counts as unset */
        cacert = NULL;
    /* After the usage checks, before any work: directories are read. */
    if (expand_dirs(files, nfiles, &found, &all, &nall, &bad) != 0) {
        fprintf(stderr, "faultline symbols add: out of memory\n");
        rc = FL_EXIT_ERROR;
        goto out;
    }
    if (server) {
        /* Before anything is uploaded: without it every upload is refused. */
        if (!token || !*token) {
            usage_error("symbols add", false,
                        "--server needs the server's admin token: give --token TOKEN or set "
                        "FAULTLINE_ADMIN_TOKEN");
            goto out;
        }
        if (strpbrk(token, "\r\n")) {
            usage_error("symbols add", false,
                        "the admin token (--token or FAULTLINE_ADMIN_TOKEN) contains a line break");
            goto out;
        }
        /* Before anything is uploaded, as faultline-report checks it: a
         * wrong path would otherwise fail every file as a TLS error. */
        const char *cabad = cacert ? fl_file_problem(cacert) : NULL;
        if (cabad) {
            usage_error("symbols add", false, "--cacert %.200s: %s", cacert, cabad);
            goto out;
        }
        upload_opts o = {token, cacert, stall_s, (int)nretries};
        rc = nall ? symbols_upload(server, &o, all, nall) : FL_EXIT_ERROR;
        if (bad && rc == FL_EXIT_OK)
            rc = FL_EXIT_ERROR;
        goto out;
    }
    char dir[PATH_MAX];
    if (cache_dir_for(cache, dir, sizeof dir) != 0) {
        fprintf(stderr, "faultline symbols add: no cache directory (set HOME or --cache)\n");
        rc = FL_EXIT_USAGE;
        goto out;
    }
    int tty = isatty(2), failed = bad;
    for (int i = 0; i < nall; i++)
        if (symbols_add_one(dir, all[i], force, tty, i + 1, nall) != 0)
            failed++;
    rc = failed ? FL_EXIT_ERROR : FL_EXIT_OK;
out:
    free(all);
    fl_elf_objs_free(&found);
    free(files);
    return rc;
}
