/*
 * md_synth - minidumps made byte by byte for `faultline minidump`
 * (src/symbols/minidump.c) where no real one can be had here: Breakpad's
 * Linux dumper ptraces its own threads, which qemu-user does not emulate,
 * so an aarch64 program under qemu writes no dump.  The layouts are
 * Breakpad's minidump_format.h / minidump_cpu_arm64.h.
 *
 *   md_synth            the checks: ARM64 (the current context layout,
 *                       MD_CONTEXT_ARM64, and Breakpad's old one, 0x80000000
 *                       with processor 0x8003), registers from the exception's
 *                       context, signal, code, address, thread names from
 *                       ThreadNameList (UTF-16 with a surrogate pair), the OS
 *                       from Breakpad's lsb-release stream, pid and process
 *                       name from its /proc status stream, a BpEL build id
 *                       and none from RSDS, the raw stack clipped to the
 *                       dumped range, MiscInfo's uptime; an RSDS record of a
 *                       file that is here: the file's whole build id when it
 *                       begins with the GUID, none when not; a dump without an
 *                       Exception stream; Windows' and a bad RVA rejected;
 *                       Crashpad's CrashpadInfo: annotations as ETC pairs,
 *                       prod/ver, the report and client ids, the caller's
 *                       opts first, and broken ones (counts, RVAs, lengths
 *                       past the end) left out while the rest converts;
 *                       fl_minidump_unwind with a caller's find_module
 *                       (a server's): every thread, and only the modules
 *                       a pc or stack word reaches asked for
 *   md_synth DIR        writes the dumps into DIR (the fuzz seed corpus)
 *
 * Exit 0 when every check holds; each failed one is printed.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <elfutils/libdwelf.h>

#include "fl_crashlog.h"
#include "fl_minidump.h"

static int failures;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* ---- a growable little-endian image ---- */

typedef struct img {
    uint8_t *b;
    size_t n, cap;
} img;

static uint32_t put(img *m, const void *p, size_t n)
{
    if (m->n + n + 8 > m->cap) {
        m->cap = (m->n + n + 8) * 2;
        m->b = realloc(m->b, m->cap);
        if (!m->b)
            abort();
    }
    while (m->n % 4) /* every piece 4-aligned */
        m->b[m->n++] = 0;
    uint32_t at = (uint32_t)m->n;
    if (p)
        memcpy(m->b + m->n, p, n);
    else
        memset(m->b + m->n, 0, n);
    m->n += n;
    return at;
}

static void set16(img *m, size_t at, uint16_t v)
{
    m->b[at] = (uint8_t)v;
    m->b[at + 1] = (uint8_t)(v >> 8);
}

static void set32(img *m, size_t at, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        m->b[at + i] = (uint8_t)(v >> (8 * i));
}

static void set64(img *m, size_t at, uint64_t v)
{
    set32(m, at, (uint32_t)v);
    set32(m, at + 4, (uint32_t)(v >> 32));
}

/* A MINIDUMP_STRING of UTF-16 units. */
static uint32_t put_string16(img *m, const uint16_t *u, size_t n)
{
    uint32_t at = put(m, NULL, 4 + 2 * n + 2);
    set32(m, at, (uint32_t)(2 * n));
    for (size_t i = 0; i < n; i++)
        set16(m, at + 4 + 2 * i, u[i]);
    return at;
}

static uint32_t put_string(img *m, const char *ascii)
{
    uint16_t u[256];
    size_t n = strlen(ascii);
    for (size_t i = 0; i < n; i++)
        u[i] = (uint8_t)ascii[i];
    return put_string16(m, u, n);
}

#define NSTREAMS 10

typedef struct dump {
    img m;
    size_t dir, nstreams;
} dump;

static void begin(dump *d)
{
    memset(d, 0, sizeof *d);
    put(&d->m, NULL, 32);
    set32(&d->m, 0, 0x504d444d);
    set32(&d->m, 4, 0xa793);
    set32(&d->m, 20, 1700000000); /* time_date_stamp */
    d->dir = put(&d->m, NULL, NSTREAMS * 12);
    set32(&d->m, 12, (uint32_t)d->dir);
}

static void stream(dump *d, uint32_t type, uint32_t rva, uint32_t size)
{
    size_t e = d->dir + 12 * d->nstreams++;
    set32(&d->m, e, type);
    set32(&d->m, e + 4, size);
    set32(&d->m, e + 8, rva);
    set32(&d->m, 8, (uint32_t)d->nstreams);
}

static void text_stream(dump *d, uint32_t type, const char *text)
{
    uint32_t at = put(&d->m, text, strlen(text));
    stream(d, type, at, (uint32_t)strlen(text));
}

/* An AMD64 context (MDRawContextAMD64, 1232 bytes): rax .. r15 from
 * byte 120 are base + their index there, then rsp and rip as given. */
static uint32_t amd64_context(dump *d, uint64_t base, uint64_t sp, uint64_t pc)
{
    uint32_t at = put(&d->m, NULL, 1232);
    set32(&d->m, at + 48, 0x0010000bu);
    for (int i = 0; i < 16; i++)
        set64(&d->m, at + 120 + 8 * (size_t)i, base + (uint64_t)i);
    set64(&d->m, at + 152, sp);
    set64(&d->m, at + 248, pc);
    return at;
}

/* ARM64 register values of a context: base + i for iregs[i] (x0 .. x30),
 * then sp and pc as given. */
static uint32_t arm64_context(dump *d, bool old, uint64_t base, uint64_t sp, uint64_t pc)
{
    uint32_t size = old ? 8 + 33 * 8 + 4 + 8 + 512 : 4 + 4 + 33 * 8 + 520 + 32 + 64 + 8 + 16;
    uint32_t at = put(&d->m, NULL, size);
    if (old)
        set64(&d->m, at, 0x80000002ull);
    else
        set32(&d->m, at, 0x00400002u);
    for (int i = 0; i < 31; i++)
        set64(&d->m, at + 8 + 8 * (size_t)i, base + (uint64_t)i);
    set64(&d->m, at + 8 + 8 * 31, sp);
    set64(&d->m, at + 8 + 8 * 32, pc);
    return at;
}

/* Where the threads' pcs lie (a test moves them out of the program). */
static uint64_t pc_base = 0x400000;

/* The second module's path and RSDS GUID (a test sets them). */
static const char *rsds_path = "/nonexistent/libx.so";
static const uint8_t *rsds_guid;

#define STACK_LO 0x7f0000001000ull
#define STACK_SIZE 0x800u
#define SP 0x7f0000001040ull /* 64 bytes into the dumped stack */

/* An aarch64 (or x86-64) Linux dump of a crash (SIGBUS, BUS_ADRERR at 0xdead0) in
 * thread 100 of process 100 "synthapp", with a second thread 101. */
static void make_dump(dump *d, bool amd64, bool old, bool exception)
{
    begin(d);
    img *m = &d->m;
    /* SystemInfo */
    uint32_t csd = put_string(m, "Linux 6.1.0-synth #1 SMP PREEMPT aarch64");
    uint32_t si = put(m, NULL, 56);
    set16(m, si, amd64 ? 9 : old ? 0x8003 : 12);
    set32(m, si + 20, 0x8201);
    set32(m, si + 24, csd);
    stream(d, 7, si, 56);
    /* two threads, the first one's stack dumped */
    uint32_t stack = put(m, NULL, STACK_SIZE);
    for (uint32_t i = 0; i < STACK_SIZE; i++)
        m->b[stack + i] = (uint8_t)(i * 7);
    uint32_t csize = amd64 ? 1232 : old ? 8 + 33 * 8 + 4 + 8 + 512 : 912;
    uint32_t ctx0 = amd64 ? amd64_context(d, 0x1000, SP, pc_base + 0x123)
                          : arm64_context(d, old, 0x1000, SP, pc_base + 0x123);
    uint32_t ctx1 = amd64 ? amd64_context(d, 0x2000, SP + 0x100000, pc_base + 0x456)
                          : arm64_context(d, old, 0x2000, SP + 0x100000, pc_base + 0x456);
    uint32_t tl = put(m, NULL, 4 + 2 * 48);
    set32(m, tl, 2);
    set32(m, tl + 4, 100);
    set64(m, tl + 4 + 24, STACK_LO);
    set32(m, tl + 4 + 32, STACK_SIZE);
    set32(m, tl + 4 + 36, stack);
    set32(m, tl + 4 + 40, csize);
    set32(m, tl + 4 + 44, ctx0);
    set32(m, tl + 52, 101);
    set32(m, tl + 52 + 40, csize);
    set32(m, tl + 52 + 44, ctx1);
    stream(d, 3, tl, 4 + 2 * 48);
    /* the exception, with a context of its own (the signal handler's) */
    if (exception) {
        uint32_t ectx = amd64 ? amd64_context(d, 0xe000, SP, pc_base + 0x124)
                              : arm64_context(d, old, 0xe000, SP, pc_base + 0x124);
        uint32_t ex = put(m, NULL, 168);
        set32(m, ex, 100);
        set32(m, ex + 8, 7);  /* SIGBUS */
        set32(m, ex + 12, 2); /* BUS_ADRERR */
        set64(m, ex + 24, 0xdead0);
        set32(m, ex + 160, csize);
        set32(m, ex + 164, ectx);
        stream(d, 6, ex, 168);
    }
    /* modules: BpEL with a 20-byte build id, RSDS with a GUID */
    uint32_t n0 = put_string(m, "/nonexistent/synthapp");
    uint32_t n1 = put_string(m, rsds_path);
    uint8_t bpel[24] = {0x4c, 0x45, 0x70, 0x42};
    for (int i = 0; i < 20; i++)
        bpel[4 + i] = (uint8_t)(0xa0 + i);
    uint8_t rsds[4 + 16 + 4 + 8] = {0x52, 0x53, 0x44, 0x53};
    for (int i = 0; i < 16; i++)
        rsds[4 + i] = rsds_guid ? rsds_guid[i] : (uint8_t)(0x10 + i);
    uint32_t cv0 = put(m, bpel, sizeof bpel), cv1 = put(m, rsds, sizeof rsds);
    uint32_t ml = put(m, NULL, 4 + 2 * 108);
    set32(m, ml, 2);
    set64(m, ml + 4, 0x400000);
    set32(m, ml + 4 + 8, 0x10000);
    set32(m, ml + 4 + 20, n0);
    set32(m, ml + 4 + 76, sizeof bpel);
    set32(m, ml + 4 + 80, cv0);
    set64(m, ml + 112, 0x7f1000000000ull);
    set32(m, ml + 112 + 8, 0x20000);
    set32(m, ml + 112 + 20, n1);
    set32(m, ml + 112 + 76, sizeof rsds);
    set32(m, ml + 112 + 80, cv1);
    stream(d, 4, ml, 4 + 2 * 108);
    /* ThreadNameList: thread 101 is "wörker😀" */
    static const uint16_t name[] = {'w', 0xf6, 'r', 'k', 'e', 'r', 0xd83d, 0xde00};
    uint32_t tn = put_string16(m, name, sizeof name / sizeof name[0]);
    uint32_t tnl = put(m, NULL, 4 + 12);
    set32(m, tnl, 1);
    set32(m, tnl + 4, 101);
    set64(m, tnl + 8, tn);
    stream(d, 24, tnl, 16);
    text_stream(d, 0x47670005,
                "DISTRIB_ID=Ubuntu\nDISTRIB_RELEASE=22.04\n"
                "DISTRIB_DESCRIPTION=\"Ubuntu 22.04.3 LTS\"\n");
    text_stream(d, 0x47670004, "Name:\tsynthapp\nUmask:\t0022\nState:\tR (running)\nPid:\t100\n");
    /* MiscInfo: pid (flag 1) and the process's start (flag 2), 42 s before */
    uint32_t mi = put(m, NULL, 24);
    set32(m, mi, 24);
    set32(m, mi + 4, 3);
    set32(m, mi + 8, 100);
    set32(m, mi + 12, 1700000000 - 42);
    stream(d, 15, mi, 24);
}

/* Converts d with opts (NULL: none but the name) and parses the log: the
 * conversion's code; *log NULL unless it succeeded.  Through a file, as
 * the command does, or (buf) from a heap copy of exactly the dump's size,
 * as the server does, where ASan sees a read one byte past the end. */
static int convert_opts(const dump *d, const fl_minidump_opts *opts, bool buf, fl_crashlog **log,
                        char *err, size_t errcap, char **textp)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    fl_minidump_opts o = {.crash_time = -1, .unwind = true, .name = "synth.dmp"};
    if (opts)
        o = *opts;
    int rc;
    if (buf) {
        uint8_t *copy = malloc(d->m.n);
        if (!copy)
            abort();
        memcpy(copy, d->m.b, d->m.n);
        rc = fl_minidump_buf_to_crashlog(copy, d->m.n, &o, out, NULL, err, errcap);
        free(copy);
    } else {
        char path[] = "/tmp/md_synth.XXXXXX";
        int fd = mkstemp(path);
        if (fd < 0 || write(fd, d->m.b, d->m.n) != (ssize_t)d->m.n)
            abort();
        close(fd);
        rc = fl_minidump_to_crashlog(path, &o, out, NULL, err, errcap);
        unlink(path);
    }
    fclose(out);
    *log = NULL;
    if (rc == FL_MINIDUMP_OK) {
        fl_crashlog_error e;
        if (fl_crashlog_parse(text, len, log, &e) != 0) {
            fprintf(stderr, "FAIL: the reader rejects the log: line %u: %s\n%s", e.line, e.message,
                    text);
            failures++;
        }
    }
    if (textp)
        *textp = text;
    else
        free(text);
    return rc;
}

static int convert(const dump *d, fl_crashlog **log, char *err, size_t errcap, char **textp)
{
    return convert_opts(d, NULL, false, log, err, errcap, textp);
}

static uint64_t reg(const fl_crashlog *l, const char *name)
{
    for (size_t i = 0; i < l->nregisters; i++)
        if (!strcmp(l->registers[i].name, name))
            return l->registers[i].value;
    return 0xbad;
}

static const char *s(const char *v)
{
    return v ? v : "(none)";
}

static void check_arm64(bool old)
{
    dump d;
    make_dump(&d, false, old, true);
    fl_crashlog *l;
    char err[512], *text;
    int rc = convert(&d, &l, err, sizeof err, &text);
    CHECK(rc == FL_MINIDUMP_OK, "old=%d: %s", old, err);
    if (!l)
        goto out;
    CHECK(!strcmp(s(l->cpuarch), "aarch64"), "%s", s(l->cpuarch));
    CHECK(l->nregisters == 33, "%zu registers", l->nregisters);
    /* the exception's context, not the thread list's */
    CHECK(reg(l, "x0") == 0xe000 && reg(l, "x28") == 0xe000 + 28, "x0 %" PRIx64, reg(l, "x0"));
    CHECK(reg(l, "x29") == 0xe000 + 29 && reg(l, "x30") == 0xe000 + 30, "fp/lr");
    CHECK(reg(l, "sp") == SP && reg(l, "pc") == 0x400124, "sp %" PRIx64 " pc %" PRIx64,
          reg(l, "sp"), reg(l, "pc"));
    CHECK(!strcmp(l->registers[31].name, "sp") && !strcmp(l->registers[32].name, "pc"),
          "the client's order");
    CHECK(l->crash_signal == 7 && l->crash_code == 2 && l->has_crash_address &&
              l->crash_address == 0xdead0,
          "signal %d code %" PRId64, l->crash_signal, l->crash_code);
    CHECK(l->has_crash_tid && l->crash_tid == 100 && l->has_pid && l->pid == 100, "tid/pid");
    CHECK(!strcmp(s(l->crash_thread_name), "synthapp"), "%s", s(l->crash_thread_name));
    CHECK(l->nthreads == 1 && l->threads[0].tid == 101, "threads");
    if (l->nthreads == 1) {
        CHECK(!strcmp(s(l->threads[0].name), "w\xc3\xb6rker\xf0\x9f\x98\x80"), "thread name %s",
              s(l->threads[0].name));
        /* no files: the pc */
        CHECK(l->threads[0].nframes >= 1 && l->threads[0].frames[0] == 0x400456, "other pc");
    }
    CHECK(l->ncallstack >= 1 && l->callstack[0] == 0x400124, "crash pc");
    CHECK(!strcmp(s(l->os_name), "Ubuntu") && !strcmp(s(l->os_version), "22.04") &&
              !strcmp(s(l->os_pretty_name), "Ubuntu 22.04.3 LTS"),
          "os %s %s %s", s(l->os_name), s(l->os_version), s(l->os_pretty_name));
    CHECK(!strcmp(s(l->platform_version), "6.1.0-synth"), "%s", s(l->platform_version));
    CHECK(!strcmp(s(l->kernel_version), "#1 SMP PREEMPT"), "%s", s(l->kernel_version));
    CHECK(l->has_crash_time && l->crash_time == 1700000000, "time");
    CHECK(l->has_uptime && l->uptime == 42, "uptime");
    CHECK(l->nobjects == 2, "%zu objects", l->nobjects);
    if (l->nobjects == 2) {
        CHECK(!strcmp(s(l->objects[0].name), "synthapp") &&
                  !strcmp(s(l->objects[0].build_id), "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3"),
              "BpEL: %s %s", s(l->objects[0].name), s(l->objects[0].build_id));
        CHECK(!strcmp(s(l->objects[1].name), "libx.so") && !l->objects[1].build_id,
              "RSDS gives no build id: %s", s(l->objects[1].build_id));
        CHECK(!strcmp(s(l->executable), "/nonexistent/synthapp"), "%s", s(l->executable));
    }
    /* STACK: from sp - 128, clipped to the range's start, to its end */
    size_t total = 0;
    uint64_t lo = UINT64_MAX;
    for (size_t i = 0; i < l->nstack; i++) {
        total += l->stack[i].len;
        if (l->stack[i].addr < lo)
            lo = l->stack[i].addr;
    }
    CHECK(lo == STACK_LO && total == STACK_SIZE, "stack %" PRIx64 " %zu", lo, total);
    CHECK(l->nstack && l->stack[0].data[5] == (uint8_t)(5 * 7), "stack bytes");
    CHECK(strstr(text, "\nCRASH_SOURCE minidump\n") != NULL, "CRASH_SOURCE");
    fl_crashlog_free(l);
out:
    free(text);
    free(d.m.b);
}

static void check_amd64(void)
{
    dump d;
    make_dump(&d, true, false, true);
    fl_crashlog *l;
    char err[512];
    int rc = convert(&d, &l, err, sizeof err, NULL);
    CHECK(rc == FL_MINIDUMP_OK, "%s", err);
    if (l) {
        CHECK(!strcmp(s(l->cpuarch), "x86-64") && l->nregisters == 17, "%s", s(l->cpuarch));
        /* MDRawContextAMD64 keeps rax rcx rdx rbx rsp rbp rsi rdi r8..: the
         * log the client's order, rax rdx rcx rbx rsi rdi rbp rsp */
        CHECK(reg(l, "rax") == 0xe000 && reg(l, "rcx") == 0xe001 && reg(l, "rdx") == 0xe002 &&
                  reg(l, "rbp") == 0xe005 && reg(l, "rsi") == 0xe006 && reg(l, "r15") == 0xe00f,
              "rcx %" PRIx64, reg(l, "rcx"));
        CHECK(reg(l, "rsp") == SP && reg(l, "rip") == 0x400124, "rsp/rip");
        CHECK(!strcmp(l->registers[16].name, "rip"), "rip last");
        fl_crashlog_free(l);
    }
    free(d.m.b);
}

/* What fl_minidump_unwind asked the caller's find_module. */
typedef struct finder {
    int calls;
    char id[128], dump_path[256];
} finder;

static int find_cb(void *ctx, const char *build_id, const char *dump_path, char *path, size_t cap)
{
    finder *f = ctx;
    f->calls++;
    snprintf(f->id, sizeof f->id, "%s", build_id);
    snprintf(f->dump_path, sizeof f->dump_path, "%s", dump_path ? dump_path : "(null)");
    snprintf(path, cap, "/proc/self/exe"); /* a file, but not of that build id */
    return 0;
}

/* fl_minidump_unwind with the caller's find_module (a server's): every
 * thread's stack, the crashing one first, at least its pc; the module
 * asked for by its whole build id and the dump's path, and only when a
 * thread's pc (or stack word) points into it; the RSDS module, without
 * a whole build id, never.  A dump that does not read: an error and no
 * stacks. */
static void check_unwind(void)
{
    for (int reached = 1; reached >= 0; reached--) {
        pc_base = reached ? 0x400000 : 0x900000;
        dump d;
        make_dump(&d, true, false, true);
        finder f = {0};
        fl_minidump_opts o = {.find_module = find_cb, .find_ctx = &f};
        fl_minidump_stack *st = NULL;
        size_t n = 0;
        char err[256];
        int rc = fl_minidump_unwind(d.m.b, d.m.n, &o, &st, &n, err, sizeof err);
        CHECK(rc == FL_MINIDUMP_OK, "%s", err);
        CHECK(n == 2 && st && st[0].tid == 100 && st[1].tid == 101, "%zu stacks", n);
        if (n == 2 && st) {
            CHECK(st[0].n >= 1 && st[0].pcs[0] == pc_base + 0x124, "crashing thread's pc");
            CHECK(st[1].n >= 1 && st[1].pcs[0] == pc_base + 0x456, "other thread's pc");
        }
        if (reached)
            CHECK(f.calls == 1 && !strcmp(f.id, "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3") &&
                      !strcmp(f.dump_path, "/nonexistent/synthapp"),
                  "%d calls, last %s %s", f.calls, f.id, f.dump_path);
        else
            CHECK(f.calls == 0, "asked %d times for a module no pc reaches (%s)", f.calls, f.id);
        fl_minidump_stacks_free(st, n);
        free(d.m.b);
    }
    pc_base = 0x400000;
    fl_minidump_stack *st = (fl_minidump_stack *)1;
    size_t n = 1;
    char err[256];
    int rc = fl_minidump_unwind("MDMP", 4, NULL, &st, &n, err, sizeof err);
    CHECK(rc == FL_MINIDUMP_ENOTMINIDUMP && !st && n == 0 && strstr(err, "4 bytes"), "%d %s", rc,
          err);
}

/* An RSDS record naming a file that is here, whose build id begins with
 * the GUID: the file's whole build id is written (this program's own). */
static void check_rsds_file(void)
{
    static char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return;
    self[n] = '\0';
    elf_version(EV_CURRENT);
    int fd = open(self, O_RDONLY | O_CLOEXEC);
    Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
    const void *id = NULL;
    ssize_t len = e ? dwelf_elf_gnu_build_id(e, &id) : -1;
    char want[129] = "";
    for (ssize_t i = 0; i < len && i < 64; i++)
        snprintf(want + 2 * i, 3, "%02x", ((const uint8_t *)id)[i]);
    uint8_t guid[16];
    CHECK(len >= 16, "md_synth has no build id of 16 bytes or more (%zd)", len);
    if (len < 16)
        goto out;
    memcpy(guid, id, 16);
    for (int wrong = 0; wrong < 2; wrong++) {
        guid[15] ^= (uint8_t)wrong; /* then a GUID the file's id does not begin with */
        rsds_path = self;
        rsds_guid = guid;
        dump d;
        make_dump(&d, true, false, true);
        rsds_path = "/nonexistent/libx.so";
        rsds_guid = NULL;
        fl_crashlog *l;
        char err[512];
        int rc = convert(&d, &l, err, sizeof err, NULL);
        CHECK(rc == FL_MINIDUMP_OK, "%s", err);
        if (l && l->nobjects == 2) {
            const char *got = l->objects[1].build_id;
            if (wrong)
                CHECK(!got, "RSDS of another file: build id %s", s(got));
            else
                CHECK(got && !strcmp(got, want), "RSDS of this file: build id %s, want %s", s(got),
                      want);
        }
        if (l)
            fl_crashlog_free(l);
        free(d.m.b);
    }
out:
    if (e)
        elf_end(e);
    if (fd >= 0)
        close(fd);
}

static void check_no_exception(void)
{
    dump d;
    make_dump(&d, false, false, false);
    fl_crashlog *l;
    char err[512];
    int rc = convert(&d, &l, err, sizeof err, NULL);
    CHECK(rc == FL_MINIDUMP_OK, "%s", err);
    if (l) {
        CHECK(l->crash_signal == 0 && !l->has_crash_address, "signal %d", l->crash_signal);
        CHECK(l->crash_tid == 100 && reg(l, "x0") == 0x1000, "the first thread's own context");
        fl_crashlog_free(l);
    }
    free(d.m.b);
}

/* The aarch64 dump with the 32-bit word at byte `at` set to v: the
 * conversion fails with `want`, a message naming the file and saying msg. */
static void check_bad(const char *what, size_t at, uint32_t v, int want, const char *msg)
{
    dump d;
    make_dump(&d, false, false, true);
    set32(&d.m, at, v);
    fl_crashlog *l;
    char err[512];
    int rc = convert(&d, &l, err, sizeof err, NULL);
    CHECK(rc == want, "%s: code %d (%s)", what, rc, err);
    CHECK(strstr(err, "synth.dmp: ") == err && strstr(err, msg), "%s: message '%s'", what, err);
    if (l)
        fl_crashlog_free(l);
    free(d.m.b);
}

/* ---- CrashpadInfo (Crashpad's minidump_extensions.h) ---- */

/* A MinidumpUTF8String: the length, the bytes, a NUL not counted. */
static uint32_t put_utf8(img *m, const char *str)
{
    size_t n = strlen(str);
    uint32_t at = put(m, NULL, 4 + n + 1);
    set32(m, at, (uint32_t)n);
    memcpy(m->b + at + 4, str, n);
    return at;
}

/* A MinidumpByteArray. */
static uint32_t put_bytes(img *m, const void *p, size_t n)
{
    uint32_t at = put(m, NULL, 4 + n);
    set32(m, at, (uint32_t)n);
    memcpy(m->b + at + 4, p, n);
    return at;
}

static void set_loc(img *m, size_t at, uint32_t size, uint32_t rva)
{
    set32(m, at, size);
    set32(m, at + 4, rva);
}

/* A MinidumpSimpleStringDictionary of n pairs kv[2i], kv[2i + 1], its
 * location written at loc. */
static uint32_t put_dict(img *m, const char *const *kv, size_t n, size_t loc)
{
    uint32_t k[8], v[8];
    for (size_t i = 0; i < n; i++) {
        k[i] = put_utf8(m, kv[2 * i]);
        v[i] = put_utf8(m, kv[2 * i + 1]);
    }
    uint32_t at = put(m, NULL, 4 + 8 * n);
    set32(m, at, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        set32(m, at + 4 + 8 * i, k[i]);
        set32(m, at + 8 + 8 * i, v[i]);
    }
    set_loc(m, loc, (uint32_t)(4 + 8 * n), at);
    return at;
}

/* How add_crashpad breaks its stream. */
enum {
    CP_GOOD,
    CP_OLD,      /* a 52-byte stream (no address_mask), module 0's info of 20 bytes */
    CP_COUNT,    /* the process's dictionary counts one entry more than its location
                  * holds; module 0's list 0x40000000 */
    CP_RVA,      /* module 0's value RVA 2 bytes before the end, an object's 0xffffffff */
    CP_LENGTH,   /* "channel"'s value a UTF8String 1 byte longer than the file;
                  * "ann_str"'s ByteArray 0xfffffffc bytes */
    CP_MODULES,  /* the module list counts 0xffffffff */
    CP_VERSION,  /* version 2 */
    CP_SHORT,    /* a stream of 51 bytes */
    CP_PAST_END, /* the stream's own location past the file's end */
};

/* Report id 01 02 .. 10 and client id a0 a1 .. af, as Crashpad's UUIDs
 * (data1 32-bit LE, data2 and data3 16-bit LE, data4[8]) print them. */
#define CP_REPORT_ID "04030201-0605-0807-090a-0b0c0d0e0f10"
#define CP_CLIENT_ID "a3a2a1a0-a5a4-a7a6-a8a9-aaabacadaeaf"

/* A CrashpadInfo stream, the last thing in d: the process's annotations
 * prod, ver, channel (and two blank ones), module 0 with a list, a simple
 * and three object annotations (a string, an int, a user type), module 1
 * with an old 20-byte info and one simple annotation. */
static void add_crashpad(dump *d, int mode)
{
    img *m = &d->m;
    uint32_t info = put(m, NULL, 64);
    set32(m, info, mode == CP_VERSION ? 2 : 1);
    for (int i = 0; i < 16; i++) {
        m->b[info + 4 + i] = (uint8_t)(1 + i);
        m->b[info + 20 + i] = (uint8_t)(0xa0 + i);
    }
    set64(m, info + 56, 0xffffffffffffull); /* address_mask */
    static const char *const proc[] = {"prod", "SynthApp", "ver", "3.1.4", "channel",
                                       "beta", "blank",    " \t", " ",     "blank key"};
    uint32_t pd = put_dict(m, proc, 5, info + 36);
    /* module 0 */
    uint32_t mi0 = put(m, NULL, 28);
    set32(m, mi0, 1);
    uint32_t l0 = put_utf8(m, "first line\nsecond");
    uint32_t list = put(m, NULL, 8);
    set32(m, list, 1);
    set32(m, list + 4, l0);
    set_loc(m, mi0 + 4, 8, list);
    static const char *const mod[] = {"module_key", "module_value"};
    uint32_t md0 = put_dict(m, mod, 1, mi0 + 12);
    static const uint8_t one[4] = {1, 0, 0, 0};
    uint32_t names[3] = {put_utf8(m, "ann_str"), put_utf8(m, "ann_int"), put_utf8(m, "ann_user")};
    uint32_t values[3] = {put_bytes(m, "string value", 12), put_bytes(m, one, 4),
                          put_bytes(m, "not text", 8)};
    static const uint16_t types[3] = {1, 2, 0x8001};
    uint32_t objs = put(m, NULL, 4 + 3 * 12);
    set32(m, objs, 3);
    for (size_t i = 0; i < 3; i++) {
        set32(m, objs + 4 + 12 * i, names[i]);
        set16(m, objs + 8 + 12 * i, types[i]);
        set32(m, objs + 12 + 12 * i, values[i]);
    }
    set_loc(m, mi0 + 20, 4 + 3 * 12, objs);
    /* module 1: an older writer's info, without annotation objects */
    uint32_t mi1 = put(m, NULL, 20);
    set32(m, mi1, 1);
    static const char *const old[] = {"old_key", "old_value"};
    put_dict(m, old, 1, mi1 + 12);
    uint32_t ml = put(m, NULL, 4 + 2 * 12);
    set32(m, ml, 2);
    set32(m, ml + 4, 0);
    set_loc(m, ml + 8, mode == CP_OLD ? 20 : 28, mi0);
    set32(m, ml + 16, 1);
    set_loc(m, ml + 20, 20, mi1);
    set_loc(m, info + 44, 4 + 2 * 12, ml);
    switch (mode) {
    case CP_COUNT:
        set32(m, pd, 6);
        set32(m, list, 0x40000000);
        break;
    case CP_RVA:
        set32(m, md0 + 8, (uint32_t)m->n - 2); /* its Length across the end */
        set32(m, objs + 12, 0xffffffffu);
        break;
    case CP_LENGTH: {
        uint32_t last = put(m, NULL, 4); /* the file ends here */
        set32(m, last, 1);
        set32(m, pd + 4 + 2 * 8 + 4, last);
        set32(m, values[0], 0xfffffffcu);
        break;
    }
    case CP_MODULES:
        set32(m, ml, 0xffffffffu);
        break;
    }
    uint32_t size = mode == CP_OLD ? 52 : mode == CP_SHORT ? 51 : 64;
    if (mode == CP_PAST_END)
        size = (uint32_t)m->n - info + 1;
    stream(d, 0x43500001, info, size);
}

/* The ETC pairs of l, "key=value;..." in order. */
static void etc_list(const fl_crashlog *l, char *out, size_t cap)
{
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < l->netc && o < cap; i++)
        o += (size_t)snprintf(out + o, cap - o, "%s=%s;", l->etc[i].key, l->etc[i].value);
}

/* Converts the arm64 dump with CrashpadInfo broken by `mode` (from a buffer
 * of its exact size): it converts, with exactly the ETC pairs `want`, the
 * application `app`, and the ids from the stream or not. */
static void check_crashpad_mode(int mode, const char *want, const char *app, bool ids)
{
    dump d;
    make_dump(&d, false, false, true);
    add_crashpad(&d, mode);
    fl_crashlog *l;
    char err[512], got[2048];
    int rc = convert_opts(&d, NULL, true, &l, err, sizeof err, NULL);
    CHECK(rc == FL_MINIDUMP_OK, "mode %d: %s", mode, err);
    if (l) {
        etc_list(l, got, sizeof got);
        CHECK(!strcmp(got, want), "mode %d: ETC %s, want %s", mode, got, want);
        CHECK(!strcmp(s(l->app_name), app), "mode %d: app %s", mode, s(l->app_name));
        if (ids)
            CHECK(!strcmp(s(l->crash_id), CP_REPORT_ID) && !strcmp(s(l->install_id), CP_CLIENT_ID),
                  "mode %d: ids %s %s", mode, s(l->crash_id), s(l->install_id));
        else
            CHECK(!l->install_id && l->crash_id && strcmp(l->crash_id, CP_REPORT_ID),
                  "mode %d: ids %s %s", mode, s(l->crash_id), s(l->install_id));
        /* the rest is converted */
        CHECK(l->crash_signal == 7 && l->nobjects == 2 && l->nthreads == 1, "mode %d: the rest",
              mode);
        fl_crashlog_free(l);
    }
    free(d.m.b);
}

#define CP_PROCESS "prod=SynthApp;ver=3.1.4;channel=beta;"
#define CP_MODULE0                                                                                 \
    "module_key=module_value;ann_str=string value;list_annotations=first line\\nsecond;"
#define CP_MODULE1 "old_key=old_value;"

static void check_crashpad(void)
{
    /* No opts: the annotations name the application, the ids are the
     * report's and the client's; the int and user-typed objects and the
     * blank pairs are left out. */
    dump d;
    make_dump(&d, false, false, true);
    add_crashpad(&d, CP_GOOD);
    fl_crashlog *l;
    char err[512], got[2048];
    for (int buf = 0; buf < 2; buf++) {
        int rc = convert_opts(&d, NULL, buf, &l, err, sizeof err, NULL);
        CHECK(rc == FL_MINIDUMP_OK, "%s", err);
        if (!l)
            continue;
        etc_list(l, got, sizeof got);
        CHECK(!strcmp(got, CP_PROCESS CP_MODULE0 CP_MODULE1), "ETC %s", got);
        CHECK(!strcmp(s(fl_crashlog_etc(l, "ann_str")), "string value") &&
                  !fl_crashlog_etc(l, "ann_int") && !fl_crashlog_etc(l, "ann_user") &&
                  !fl_crashlog_etc(l, "blank"),
              "annotation objects");
        CHECK(!strcmp(s(l->app_name), "SynthApp") && !strcmp(s(l->app_version), "3.1.4"),
              "app %s %s", s(l->app_name), s(l->app_version));
        CHECK(!strcmp(s(l->crash_id), CP_REPORT_ID), "crash id %s", s(l->crash_id));
        CHECK(!strcmp(s(l->install_id), CP_CLIENT_ID), "install id %s", s(l->install_id));
        fl_crashlog_free(l);
    }
    /* The caller's opts win; its ETC pairs come first, and an annotation
     * that repeats one of them (an upload's form field) is not written
     * twice. */
    static const char *const etc[] = {"channel", "beta", "form", "field"};
    fl_minidump_opts o = {.crash_time = -1,
                          .name = "synth.dmp",
                          .app = "CallerApp",
                          .app_version = "9.9",
                          .install_id = "0badc0de-0000-4000-8000-000000000001",
                          .crash_id = "0badc0de-0000-4000-8000-000000000002",
                          .etc = etc,
                          .netc = 2};
    int rc = convert_opts(&d, &o, true, &l, err, sizeof err, NULL);
    CHECK(rc == FL_MINIDUMP_OK, "%s", err);
    if (l) {
        etc_list(l, got, sizeof got);
        CHECK(
            !strcmp(got, "channel=beta;form=field;prod=SynthApp;ver=3.1.4;" CP_MODULE0 CP_MODULE1),
            "ETC with opts %s", got);
        CHECK(!strcmp(s(l->app_name), "CallerApp") && !strcmp(s(l->app_version), "9.9"),
              "app %s %s", s(l->app_name), s(l->app_version));
        CHECK(!strcmp(s(l->install_id), o.install_id) && !strcmp(s(l->crash_id), o.crash_id),
              "ids %s %s", s(l->install_id), s(l->crash_id));
        fl_crashlog_free(l);
    }
    free(d.m.b);

    check_crashpad_mode(CP_OLD,
                        CP_PROCESS "module_key=module_value;list_annotations=first "
                                   "line\\nsecond;" CP_MODULE1,
                        "SynthApp", true);
    check_crashpad_mode(CP_COUNT, "module_key=module_value;ann_str=string value;" CP_MODULE1,
                        "synthapp", true);
    check_crashpad_mode(CP_RVA, CP_PROCESS "list_annotations=first line\\nsecond;" CP_MODULE1,
                        "SynthApp", true);
    check_crashpad_mode(CP_LENGTH,
                        "prod=SynthApp;ver=3.1.4;module_key=module_value;"
                        "list_annotations=first line\\nsecond;" CP_MODULE1,
                        "SynthApp", true);
    check_crashpad_mode(CP_MODULES, CP_PROCESS, "SynthApp", true);
    check_crashpad_mode(CP_VERSION, "", "synthapp", false);
    check_crashpad_mode(CP_SHORT, "", "synthapp", false);
    check_crashpad_mode(CP_PAST_END, "", "synthapp", false);
}

int main(int argc, char **argv)
{
    unsetenv("DEBUGINFOD_URLS");
    if (argc == 2) { /* the seed corpus */
        const struct {
            const char *name;
            bool amd64, old, exc;
            int crashpad; /* < 0: no CrashpadInfo stream */
        } seeds[] = {{"arm64", false, false, true, -1},
                     {"arm64_old", false, true, true, -1},
                     {"arm64_noexc", false, false, false, -1},
                     {"amd64", true, false, true, -1},
                     {"arm64_crashpad", false, false, true, CP_GOOD},
                     {"arm64_crashpad_old", false, false, false, CP_OLD}};
        for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
            dump d;
            make_dump(&d, seeds[i].amd64, seeds[i].old, seeds[i].exc);
            if (seeds[i].crashpad >= 0)
                add_crashpad(&d, seeds[i].crashpad);
            char path[4096];
            snprintf(path, sizeof path, "%s/%s.dmp", argv[1], seeds[i].name);
            FILE *f = fopen(path, "wb");
            if (!f || fwrite(d.m.b, 1, d.m.n, f) != d.m.n || fclose(f) != 0)
                return 1;
            free(d.m.b);
        }
        return 0;
    }
    check_arm64(false);
    check_arm64(true);
    check_amd64();
    check_rsds_file();
    check_no_exception();
    check_crashpad();
    check_unwind();
    /* The SystemInfo stream is the first after the header and directory:
     * its CSD string comes first, then the 56 bytes. */
    dump d;
    make_dump(&d, false, false, true);
    size_t si = 0;
    for (size_t i = 0; i < d.nstreams; i++)
        if (d.m.b[d.dir + 12 * i] == 7)
            si = d.m.b[d.dir + 12 * i + 8] | (size_t)d.m.b[d.dir + 12 * i + 9] << 8;
    free(d.m.b);
    check_bad("windows", si + 20, 2, FL_MINIDUMP_EOS, "platform id 0x2");
    check_bad("x86", si, 0, FL_MINIDUMP_EARCH, "processor architecture 0");
    check_bad("bad rva", 32 + 8, 0xfffffff0u, FL_MINIDUMP_ETRUNC, "stream 0 (type 0x7)");
    check_bad("bad signature", 0, 0x504d444e, FL_MINIDUMP_ENOTMINIDUMP, "not a minidump");
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("md_synth: all checks hold\n");
    return 0;
}
