/*
 * minidump.c - a Faultline crash log from a Breakpad/Crashpad minidump
 * (fl_minidump.h).
 *
 * How this works: the file is mapped whole and read by offset, little-
 * endian, the way Breakpad's minidump_format.h lays it out: a 32-byte
 * header ("MDMP", version 0xa793), a directory of streams (type, size,
 * RVA), and the streams.  Every location is checked against the file's
 * size when it is first seen, so a read past the end is an error, never a
 * crash.  SystemInfo gives the CPU (AMD64 or ARM64) and the OS (Linux or
 * Android); ThreadList the threads, their stack memory and their register
 * contexts; Exception the crashing thread, its context, and -- on Linux,
 * where Breakpad and Crashpad both put them there -- the signal number
 * (exception_code), si_code (exception_flags) and the fault address;
 * ModuleList the loaded objects, their names (UTF-16) and CodeView
 * records; MemoryList further memory; ThreadNameList the threads' names;
 * MiscInfo (Crashpad) the pid and start time; Breakpad's Linux streams
 * the pid and process name (/proc/PID/status), the OS (/etc/lsb-release)
 * and the entry point (auxv), which names the main module.  CrashpadInfo
 * (0x43500001) gives the report's and client's UUIDs (CRASH_ID and
 * INSTALL_ID when the caller gives none) and the annotations: the
 * process's simple ones and the modules' simple, list and string-object
 * ones become ETC pairs (at most MD_MAX_NOTES), "prod" and "ver" the
 * application's name and version when the caller gives none.  Unlike the
 * other streams', a malformed part of this one (a count past its location,
 * a string or RVA past the end, the stream itself past the end) is left
 * out and the rest of the dump converted: it holds extras only.
 *
 * Build ids: Breakpad's and Crashpad's CodeView record "BpEL" carries the
 * whole GNU build id.  Older Breakpad wrote "RSDS", whose GUID is only the
 * first 16 bytes of it (or, for a file without one, a hash of its text):
 * no build id is written from it, unless the module's file is found here
 * and its build id starts with those 16 bytes -- then the file's.
 *
 * With `unwind`, libdwfl unwinds every thread: each module whose file is
 * here -- opened by the dump's path only as a regular file, kept only with
 * the dump's build id -- is reported with dwfl_report_elf at its bias;
 * the others by address and build id, for dwfl_build_id_find_elf to find
 * under /usr/lib/debug.  dwfl_attach_state takes this file's callbacks:
 * the threads and registers from the contexts, memory from the dump's
 * ranges, then from the module files.  An ELF header made here names the
 * machine, so that a dump without any file here still unwinds as far as
 * libdwfl's fallbacks (frame pointers) go; a thread keeps at least its pc.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>

#include "faultline.h" /* FAULTLINE_VERSION_STRING, FAULTLINE_CRASHLOG_VERSION */
#include "fl_core.h"   /* fl_core_uuid, the client's limits */
#include "fl_crashlog.h"
#include "fl_elffile.h"
#include "fl_logwrite.h"
#include "fl_minidump.h"

#ifndef EM_AARCH64
#define EM_AARCH64 183
#endif

#define MD_SIGNATURE 0x504d444du /* "MDMP" */
#define MD_VERSION 0xa793u
#define MD_MAX_STREAMS 4096

/* Stream types (minidump_format.h). */
#define MD_THREAD_LIST 3
#define MD_MODULE_LIST 4
#define MD_MEMORY_LIST 5
#define MD_EXCEPTION 6
#define MD_SYSTEM_INFO 7
#define MD_MISC_INFO 15
#define MD_THREAD_NAME_LIST 24
#define MD_LINUX_PROC_STATUS 0x47670004u
#define MD_LINUX_LSB_RELEASE 0x47670005u
#define MD_LINUX_AUXV 0x47670008u
#define MD_CRASHPAD_INFO 0x43500001u

#define MD_CPU_AMD64 9
#define MD_CPU_ARM64 12
#define MD_CPU_ARM64_OLD 0x8003
#define MD_OS_LINUX 0x8201
#define MD_OS_ANDROID 0x8203

#define MD_CONTEXT_AMD64 0x00100000u
#define MD_CONTEXT_ARM64 0x00400000u
#define MD_CONTEXT_ARM64_OLD 0x80000000u

#define CV_BPEL 0x4270454cu /* "LEpB": the whole ELF build id */
#define CV_RSDS 0x53445352u /* "RSDS": a GUID, 16 bytes of it */

#define MD_THREAD_SIZE 48
#define MD_MODULE_SIZE 108
#define MD_RANGE_SIZE 16
#define MD_MAX_NAME 4096    /* bytes of UTF-8 kept of a name */
#define MD_MAX_MODULES 1024 /* objects kept (the client's FL_MAX_MODULES) */
#define AT_ENTRY_ 9
#define AT_RANDOM_ 25
#define MD_CRASHPAD_INFO_SIZE 52 /* up to module_list: older writers stop there */
#define MD_MAX_NOTES 256         /* CrashpadInfo's annotations kept as ETC pairs */
#define MD_MAX_NOTE_READS 4096   /* their entries looked at, kept or not */
#define MD_ANNOTATION_STRING 1   /* Crashpad's Annotation::Type::kString */

const char *fl_minidump_strerror(int code)
{
    switch (code) {
#define FL_MD_STR_(name, value, text)                                                              \
    case value:                                                                                    \
        return text;
        FL_MINIDUMP_ERRORS(FL_MD_STR_)
#undef FL_MD_STR_
    }
    return "unknown error";
}

/* An architecture's REGISTER lines, as the client writes them (the same
 * names and order as core.c), where each is in the context (byte
 * offsets), and the DWARF numbers libdwfl takes them by. */
typedef struct md_arch {
    uint16_t machine;
    const char *cpuarch;
    size_t n;
    const char *const *names;
    const uint16_t *offset; /* in the context */
    size_t ctx_min;         /* bytes of context those need */
    size_t sp, pc;          /* indexes into names */
    size_t ndwarf;          /* names[0 .. ndwarf) are DWARF 0 .. ndwarf-1 */
} md_arch;

static const char *const x86_64_names[] = {"rax", "rdx", "rcx", "rbx", "rsi", "rdi",
                                           "rbp", "rsp", "r8",  "r9",  "r10", "r11",
                                           "r12", "r13", "r14", "r15", "rip"};
/* MDRawContextAMD64: rax rcx rdx rbx rsp rbp rsi rdi r8 .. r15 rip from
 * byte 120. */
static const uint16_t x86_64_offset[] = {120, 136, 128, 144, 168, 176, 160, 152, 184,
                                         192, 200, 208, 216, 224, 232, 240, 248};
static const char *const aarch64_names[] = {
    "x0",  "x1",  "x2",  "x3",  "x4",  "x5",  "x6",  "x7",  "x8",  "x9",  "x10",
    "x11", "x12", "x13", "x14", "x15", "x16", "x17", "x18", "x19", "x20", "x21",
    "x22", "x23", "x24", "x25", "x26", "x27", "x28", "x29", "x30", "sp",  "pc"};
/* MDRawContextARM64 (and the old layout alike): iregs[33] from byte 8,
 * x0 .. x28, fp, lr, sp, pc. */
static const uint16_t aarch64_offset[] = {8,   16,  24,  32,  40,  48,  56,  64,  72,  80,  88,
                                          96,  104, 112, 120, 128, 136, 144, 152, 160, 168, 176,
                                          184, 192, 200, 208, 216, 224, 232, 240, 248, 256, 264};

static const md_arch arch_x86_64 = {EM_X86_64, "x86-64", 17, x86_64_names, x86_64_offset, 256,
                                    7,         16,       16};
static const md_arch arch_aarch64 = {EM_AARCH64, "aarch64", 33, aarch64_names, aarch64_offset, 272,
                                     31,         32,        32};

typedef struct md_range {
    uint64_t start;
    uint32_t size, rva; /* checked: inside the file */
} md_range;

typedef struct md_ctx md_ctx;

/* Bytes of the image: an annotation's key or value (not NUL-terminated). */
typedef struct md_span {
    const uint8_t *p;
    size_t n;
} md_span;

typedef struct md_note {
    md_span key, value;
} md_note;

typedef struct md_thread {
    md_ctx *c;
    uint32_t tid;
    md_range stack;
    uint64_t regs[33]; /* by the arch's names */
    uint64_t *frames;
    size_t nframes;
    char *name; /* ThreadNameList's; owned */
} md_thread;

typedef struct md_module {
    uint64_t base, size;
    char *path; /* UTF-8; owned */
    uint32_t cv;
    unsigned char build_id[64];
    int build_id_len; /* 0: none written */
    unsigned char guid[16];
    bool main;
    bool reached; /* a thread's pc or stack word points into it (find_module) */
    bool has_bias;
    uint64_t bias;
} md_module;

struct md_ctx {
    const fl_minidump_opts *opts;
    char *err;
    size_t errcap;
    const char *shown;
    int fd;
    const uint8_t *image;
    size_t size;
    const md_arch *arch;

    uint32_t time_stamp;
    char platform_version[128], kernel_version[256];
    char os_name[128], os_version[64], os_pretty[256];
    bool have_pid;
    uint64_t pid;
    char proc_name[64];
    bool have_start;
    uint32_t start_time;
    uint64_t at_entry;
    uint64_t at_random; /* the bottom of the argument and environment strings */

    md_thread *threads; /* the crashing one first */
    size_t nthreads, threads_omitted;
    bool have_exception;
    uint32_t crash_tid;
    int sig_no, sig_code;
    uint64_t fault_addr;

    md_range *mem;
    size_t nmem;
    const md_range **ranges; /* the stacks and mem, by start: md_read's index */
    size_t nranges;
    md_module *mods;
    size_t nmods, mods_omitted;

    /* CrashpadInfo: its annotations (ETC pairs), "prod" and "ver" of the
     * process's, and the report's and client's ids as UUID strings ("":
     * none, or all zero). */
    md_note *notes;
    size_t nnotes, note_reads;
    char cp_app[256], cp_version[256];
    char report_id[37], client_id[37];

    Dwfl *dwfl;
    size_t next_thread;
};

static int fail(md_ctx *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(md_ctx *c, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fl_lw_verror(c->err, c->errcap, c->shown, fl_minidump_strerror(code), fmt, ap);
    va_end(ap);
    return code;
}

static uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* Whether [rva, rva+size) lies inside the file. */
static bool inside(const md_ctx *c, uint64_t rva, uint64_t size)
{
    return rva <= c->size && size <= c->size - rva;
}

/* ---- streams ---- */

typedef struct md_stream {
    uint32_t type, size, rva;
} md_stream;

/* The first stream of a type, or NULL. */
static const md_stream *find_stream(const md_stream *s, size_t n, uint32_t type)
{
    for (size_t i = 0; i < n; i++)
        if (s[i].type == type)
            return &s[i];
    return NULL;
}

/* A list stream: a 32-bit count, maybe 4 bytes of padding (Windows'
 * writers align the entries to 8), then count entries of `each` bytes.
 * The first entry's offset, or 0 when the sizes do not agree. */
static uint32_t list_entries(const md_ctx *c, const md_stream *s, size_t each, uint32_t *count)
{
    if (s->size < 4)
        return 0;
    uint64_t n = rd32(c->image + s->rva);
    if (4 + n * each == s->size || (4 + n * each < s->size && s->size - 4 - n * each < 8)) {
        *count = (uint32_t)n;
        return s->rva + 4;
    }
    if (8 + n * each == s->size) {
        *count = (uint32_t)n;
        return s->rva + 8;
    }
    return 0;
}

/* A MINIDUMP_STRING (a 32-bit byte count, then UTF-16LE) as UTF-8, into
 * a fresh string; NULL when it is not inside the file (or no memory). */
static char *md_string(const md_ctx *c, uint64_t rva)
{
    if (!inside(c, rva, 4))
        return NULL;
    uint32_t bytes = rd32(c->image + rva);
    if (!inside(c, rva + 4, bytes))
        return NULL;
    const uint8_t *p = c->image + rva + 4;
    size_t units = bytes / 2, o = 0;
    char *out = malloc(MD_MAX_NAME + 1);
    if (!out)
        return NULL;
    for (size_t i = 0; i < units; i++) {
        uint32_t u = rd16(p + 2 * i);
        if (u == 0)
            break;
        if (u >= 0xd800 && u < 0xdc00 && i + 1 < units) {
            uint32_t lo = rd16(p + 2 * i + 2);
            if (lo >= 0xdc00 && lo < 0xe000) {
                u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
                i++;
            } else {
                u = 0xfffd;
            }
        } else if (u >= 0xd800 && u < 0xe000) {
            u = 0xfffd; /* an unpaired surrogate */
        }
        char b[4];
        size_t k;
        if (u < 0x80) {
            b[0] = (char)u;
            k = 1;
        } else if (u < 0x800) {
            b[0] = (char)(0xc0 | u >> 6);
            b[1] = (char)(0x80 | (u & 0x3f));
            k = 2;
        } else if (u < 0x10000) {
            b[0] = (char)(0xe0 | u >> 12);
            b[1] = (char)(0x80 | ((u >> 6) & 0x3f));
            b[2] = (char)(0x80 | (u & 0x3f));
            k = 3;
        } else {
            b[0] = (char)(0xf0 | u >> 18);
            b[1] = (char)(0x80 | ((u >> 12) & 0x3f));
            b[2] = (char)(0x80 | ((u >> 6) & 0x3f));
            b[3] = (char)(0x80 | (u & 0x3f));
            k = 4;
        }
        if (o + k > MD_MAX_NAME)
            break;
        memcpy(out + o, b, k);
        o += k;
    }
    out[o] = '\0';
    return out;
}

/* The value of a "KEY=value" (sep '=') or "Key:\tvalue" (sep ':') line of
 * text[0..n), unquoted, into out; false when there is none. */
static bool text_value(const uint8_t *text, size_t n, const char *key, char sep, char *out,
                       size_t cap)
{
    size_t klen = strlen(key);
    for (size_t i = 0; i < n;) {
        const uint8_t *nl = memchr(text + i, '\n', n - i);
        size_t end = nl ? (size_t)(nl - text) : n;
        if (end - i > klen && !memcmp(text + i, key, klen) && text[i + klen] == sep) {
            size_t v = i + klen + 1;
            while (v < end && (text[v] == ' ' || text[v] == '\t'))
                v++;
            size_t len = end - v;
            if (len >= 2 && (text[v] == '"' || text[v] == '\'') && text[end - 1] == text[v]) {
                v++;
                len -= 2;
            }
            if (len >= cap)
                len = cap - 1;
            memcpy(out, text + v, len);
            out[len] = '\0';
            /* Not a string of the log's: no control characters in it. */
            for (size_t k = 0; k < len; k++)
                if ((unsigned char)out[k] < 0x20)
                    out[k] = ' ';
            return true;
        }
        i = end + 1;
    }
    return false;
}

static int read_system_info(md_ctx *c, const md_stream *s)
{
    if (!s)
        return fail(c, FL_MINIDUMP_ETRUNC, "no SystemInfo stream");
    if (s->size < 32)
        return fail(c, FL_MINIDUMP_ETRUNC, "SystemInfo of %" PRIu32 " bytes", s->size);
    const uint8_t *p = c->image + s->rva;
    uint16_t cpu = rd16(p);
    uint32_t major = rd32(p + 8), minor = rd32(p + 12), build = rd32(p + 16);
    uint32_t platform = rd32(p + 20), csd = rd32(p + 24);
    if (cpu == MD_CPU_AMD64)
        c->arch = &arch_x86_64;
    else if (cpu == MD_CPU_ARM64 || cpu == MD_CPU_ARM64_OLD)
        c->arch = &arch_aarch64;
    else
        return fail(c, FL_MINIDUMP_EARCH, "processor architecture %u; AMD64 and ARM64 are read",
                    cpu);
    if (platform != MD_OS_LINUX && platform != MD_OS_ANDROID)
        return fail(c, FL_MINIDUMP_EOS, "platform id 0x%" PRIx32 "; Linux's is 0x8201", platform);
    if (major || minor || build)
        snprintf(c->platform_version, sizeof c->platform_version,
                 "%" PRIu32 ".%" PRIu32 ".%" PRIu32, major, minor, build);
    /* Breakpad's CSD version is uname's "sysname release version machine";
     * Crashpad's the same without the machine, or the kernel's version. */
    char *v = csd ? md_string(c, csd) : NULL;
    if (v && !strncmp(v, "Linux ", 6)) {
        char *rel = v + 6, *sp = strchr(rel, ' ');
        if (sp) {
            *sp = '\0';
            snprintf(c->platform_version, sizeof c->platform_version, "%s", rel);
            char *ver = sp + 1, *last = strrchr(ver, ' ');
            if (last && (!strcmp(last + 1, "x86_64") || !strcmp(last + 1, "aarch64")))
                *last = '\0';
            snprintf(c->kernel_version, sizeof c->kernel_version, "%s", ver);
        } else {
            snprintf(c->platform_version, sizeof c->platform_version, "%s", rel);
        }
    }
    free(v);
    return FL_MINIDUMP_OK;
}

/* A thread's registers from the context at loc, by the arch's layout. */
static int read_context(md_ctx *c, uint32_t size, uint32_t rva, uint64_t *regs, uint32_t tid)
{
    const md_arch *a = c->arch;
    if (!inside(c, rva, size))
        return fail(c, FL_MINIDUMP_ETRUNC,
                    "thread %" PRIu32 "'s context at %" PRIu32 ", %" PRIu32
                    " bytes, is past the end",
                    tid, rva, size);
    if (size < a->ctx_min)
        return fail(c, FL_MINIDUMP_ETRUNC, "thread %" PRIu32 "'s context is %" PRIu32 " bytes", tid,
                    size);
    const uint8_t *p = c->image + rva;
    bool ok = a == &arch_x86_64 ? (rd32(p + 48) & MD_CONTEXT_AMD64) != 0
                                : (rd32(p) & (MD_CONTEXT_ARM64 | MD_CONTEXT_ARM64_OLD)) != 0;
    if (!ok)
        return fail(c, FL_MINIDUMP_ETRUNC, "thread %" PRIu32 "'s context is not an %s one", tid,
                    a->cpuarch);
    for (size_t i = 0; i < a->n; i++)
        regs[i] = rd64(p + a->offset[i]);
    return FL_MINIDUMP_OK;
}

static int read_threads(md_ctx *c, const md_stream *s)
{
    uint32_t n = 0, at;
    if (!s)
        return fail(c, FL_MINIDUMP_ENOTHREADS, "no ThreadList stream");
    if (!(at = list_entries(c, s, MD_THREAD_SIZE, &n)))
        return fail(c, FL_MINIDUMP_ETRUNC, "a ThreadList of %" PRIu32 " bytes", s->size);
    if (n == 0)
        return fail(c, FL_MINIDUMP_ENOTHREADS, NULL);
    size_t keep = n < FL_CORE_MAX_THREADS ? n : FL_CORE_MAX_THREADS;
    c->threads_omitted = n - keep;
    if (!(c->threads = calloc(keep, sizeof *c->threads)))
        return fail(c, FL_MINIDUMP_EIO, "out of memory");
    for (size_t i = 0; i < keep; i++) {
        const uint8_t *p = c->image + at + i * MD_THREAD_SIZE;
        md_thread *t = &c->threads[c->nthreads++];
        t->c = c;
        t->tid = rd32(p);
        t->stack.start = rd64(p + 24);
        t->stack.size = rd32(p + 32);
        t->stack.rva = rd32(p + 36);
        if (!inside(c, t->stack.rva, t->stack.size))
            return fail(c, FL_MINIDUMP_ETRUNC,
                        "thread %" PRIu32 "'s stack at %" PRIu32 ", %" PRIu32
                        " bytes, is past the end",
                        t->tid, t->stack.rva, t->stack.size);
        int rc = read_context(c, rd32(p + 40), rd32(p + 44), t->regs, t->tid);
        if (rc)
            return rc;
    }
    return FL_MINIDUMP_OK;
}

static int read_exception(md_ctx *c, const md_stream *s)
{
    if (!s)
        return FL_MINIDUMP_OK; /* a dump written on request: no signal */
    if (s->size < 168)
        return fail(c, FL_MINIDUMP_ETRUNC, "an Exception stream of %" PRIu32 " bytes", s->size);
    const uint8_t *p = c->image + s->rva;
    c->have_exception = true;
    c->crash_tid = rd32(p);
    c->sig_no = (int)rd32(p + 8);
    c->sig_code = (int)rd32(p + 12);
    c->fault_addr = rd64(p + 24);
    /* The crashing thread first, with the exception's context (the
     * signal handler's view: the registers at the fault). */
    for (size_t i = 0; i < c->nthreads; i++) {
        if (c->threads[i].tid != c->crash_tid)
            continue;
        md_thread t = c->threads[i];
        memmove(c->threads + 1, c->threads, i * sizeof t);
        c->threads[0] = t;
        uint32_t size = rd32(p + 160), rva = rd32(p + 164);
        if (size)
            return read_context(c, size, rva, c->threads[0].regs, t.tid);
        return FL_MINIDUMP_OK;
    }
    return FL_MINIDUMP_OK; /* a thread not in the list: the first stands in */
}

static int read_memory(md_ctx *c, const md_stream *s)
{
    uint32_t n = 0, at;
    if (!s)
        return FL_MINIDUMP_OK;
    if (!(at = list_entries(c, s, MD_RANGE_SIZE, &n)))
        return fail(c, FL_MINIDUMP_ETRUNC, "a MemoryList of %" PRIu32 " bytes", s->size);
    if (n && !(c->mem = calloc(n, sizeof *c->mem)))
        return fail(c, FL_MINIDUMP_EIO, "out of memory");
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *p = c->image + at + (size_t)i * MD_RANGE_SIZE;
        md_range r = {rd64(p), rd32(p + 8), rd32(p + 12)};
        if (!inside(c, r.rva, r.size))
            return fail(c, FL_MINIDUMP_ETRUNC,
                        "memory range %" PRIu32 " at %" PRIu32 ", %" PRIu32
                        " bytes, is past the end",
                        i, r.rva, r.size);
        c->mem[c->nmem++] = r;
    }
    return FL_MINIDUMP_OK;
}

static int read_modules(md_ctx *c, const md_stream *s)
{
    uint32_t n = 0, at;
    if (!s)
        return FL_MINIDUMP_OK;
    if (!(at = list_entries(c, s, MD_MODULE_SIZE, &n)))
        return fail(c, FL_MINIDUMP_ETRUNC, "a ModuleList of %" PRIu32 " bytes", s->size);
    if (n > MD_MAX_MODULES) {
        c->mods_omitted = n - MD_MAX_MODULES;
        n = MD_MAX_MODULES;
    }
    if (n && !(c->mods = calloc(n, sizeof *c->mods)))
        return fail(c, FL_MINIDUMP_EIO, "out of memory");
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *p = c->image + at + (size_t)i * MD_MODULE_SIZE;
        md_module *m = &c->mods[c->nmods];
        m->base = rd64(p);
        m->size = rd32(p + 8);
        if (!(m->path = md_string(c, rd32(p + 20))))
            return fail(c, FL_MINIDUMP_ETRUNC, "module %" PRIu32 "'s name is past the end", i);
        c->nmods++;
        uint32_t cvsize = rd32(p + 76), cvrva = rd32(p + 80);
        if (cvsize == 0)
            continue;
        if (!inside(c, cvrva, cvsize))
            return fail(c, FL_MINIDUMP_ETRUNC,
                        "module %" PRIu32 "'s CodeView record is past the end", i);
        const uint8_t *cv = c->image + cvrva;
        if (cvsize >= 4)
            m->cv = rd32(cv);
        if (m->cv == CV_BPEL && cvsize > 4) {
            size_t len = cvsize - 4 < sizeof m->build_id ? cvsize - 4 : sizeof m->build_id;
            memcpy(m->build_id, cv + 4, len);
            m->build_id_len = (int)len;
        } else if (m->cv == CV_RSDS && cvsize >= 20) {
            memcpy(m->guid, cv + 4, 16);
        } else {
            m->cv = 0;
        }
    }
    return FL_MINIDUMP_OK;
}

static int read_thread_names(md_ctx *c, const md_stream *s)
{
    if (!s || s->size < 4)
        return FL_MINIDUMP_OK;
    uint64_t n = rd32(c->image + s->rva);
    if (4 + n * 12 > s->size)
        return fail(c, FL_MINIDUMP_ETRUNC, "a ThreadNameList of %" PRIu32 " bytes", s->size);
    for (uint64_t i = 0; i < n; i++) {
        const uint8_t *p = c->image + s->rva + 4 + i * 12;
        uint32_t tid = rd32(p);
        for (size_t k = 0; k < c->nthreads; k++) {
            md_thread *t = &c->threads[k];
            if (t->tid != tid || t->name)
                continue;
            /* An RVA64: a name past the end is no name, not an error. */
            t->name = md_string(c, rd64(p + 4));
            break;
        }
    }
    return FL_MINIDUMP_OK;
}

/* Breakpad's Linux streams, Crashpad's MiscInfo: what they say cheaply. */
static void read_process(md_ctx *c, const md_stream *dir, size_t nstreams)
{
    const md_stream *s;
    char v[64];
    if ((s = find_stream(dir, nstreams, MD_LINUX_PROC_STATUS))) {
        const uint8_t *p = c->image + s->rva;
        if (text_value(p, s->size, "Pid", ':', v, sizeof v)) {
            char *end;
            unsigned long long pid = strtoull(v, &end, 10);
            if (end != v && pid > 0 && pid <= 0xffffffffu) {
                c->have_pid = true;
                c->pid = pid;
            }
        }
        text_value(p, s->size, "Name", ':', c->proc_name, sizeof c->proc_name);
    }
    if ((s = find_stream(dir, nstreams, MD_MISC_INFO)) && s->size >= 16) {
        const uint8_t *p = c->image + s->rva;
        uint32_t flags = rd32(p + 4);
        if ((flags & 1) && !c->have_pid) {
            c->have_pid = true;
            c->pid = rd32(p + 8);
        }
        if (flags & 2) {
            c->have_start = true;
            c->start_time = rd32(p + 12);
        }
    }
    if ((s = find_stream(dir, nstreams, MD_LINUX_LSB_RELEASE))) {
        const uint8_t *p = c->image + s->rva;
        /* /etc/lsb-release, or (newer Breakpad) os-release's keys. */
        if (!text_value(p, s->size, "DISTRIB_ID", '=', c->os_name, sizeof c->os_name))
            text_value(p, s->size, "NAME", '=', c->os_name, sizeof c->os_name);
        if (!text_value(p, s->size, "DISTRIB_RELEASE", '=', c->os_version, sizeof c->os_version))
            text_value(p, s->size, "VERSION_ID", '=', c->os_version, sizeof c->os_version);
        if (!text_value(p, s->size, "DISTRIB_DESCRIPTION", '=', c->os_pretty, sizeof c->os_pretty))
            text_value(p, s->size, "PRETTY_NAME", '=', c->os_pretty, sizeof c->os_pretty);
    }
    if ((s = find_stream(dir, nstreams, MD_LINUX_AUXV)))
        for (uint32_t o = 0; o + 16 <= s->size; o += 16) {
            uint64_t type = rd64(c->image + s->rva + o), value = rd64(c->image + s->rva + o + 8);
            if (type == AT_ENTRY_)
                c->at_entry = value;
            else if (type == AT_RANDOM_)
                c->at_random = value;
        }
}

/* ---- CrashpadInfo ---- */

/* Crashpad's annotations are extras: a part of the stream that is not
 * inside the file, or whose count runs past its location, is left out and
 * the rest read; nothing here fails the conversion. */

/* A MinidumpUTF8String or MinidumpByteArray at rva (a 32-bit length, then
 * the bytes) as a span: up to its first NUL, at most MD_MAX_NAME bytes.
 * false when it is not inside the file. */
static bool counted_bytes(const md_ctx *c, uint32_t rva, md_span *s)
{
    if (!inside(c, rva, 4))
        return false;
    uint32_t len = rd32(c->image + rva);
    if (!inside(c, (uint64_t)rva + 4, len))
        return false;
    s->p = c->image + rva + 4;
    s->n = len < MD_MAX_NAME ? len : MD_MAX_NAME;
    const uint8_t *nul = memchr(s->p, 0, s->n);
    if (nul)
        s->n = (size_t)(nul - s->p);
    return true;
}

static bool span_blank(md_span s)
{
    for (size_t i = 0; i < s.n; i++)
        if (s.p[i] != ' ' && s.p[i] != '\t')
            return false;
    return true;
}

static bool span_is(md_span s, const char *str)
{
    return str && strlen(str) == s.n && !memcmp(s.p, str, s.n);
}

/* The list at the MINIDUMP_LOCATION_DESCRIPTOR loc: a 32-bit count, then
 * count entries of `each` bytes, all inside the location and the file.
 * The first entry's offset, or 0. */
static uint32_t location_entries(const md_ctx *c, const uint8_t *loc, size_t each, uint32_t *count)
{
    uint32_t size = rd32(loc), rva = rd32(loc + 4);
    if (size < 4 || !inside(c, rva, size))
        return 0;
    uint64_t n = rd32(c->image + rva);
    if (4 + n * each > size)
        return 0;
    *count = (uint32_t)n;
    return rva + 4;
}

/* A pair unless either half is blank, the caller gave the same one (a
 * server's upload carries the process's annotations as form fields too),
 * or MD_MAX_NOTES are kept. */
static void add_note(md_ctx *c, md_span key, md_span value)
{
    const fl_minidump_opts *o = c->opts;
    if (c->nnotes >= MD_MAX_NOTES || span_blank(key) || span_blank(value))
        return;
    for (size_t i = 0; o->etc && i < o->netc; i++)
        if (span_is(key, o->etc[2 * i]) && span_is(value, o->etc[2 * i + 1]))
            return;
    if (!c->notes && !(c->notes = calloc(MD_MAX_NOTES, sizeof *c->notes)))
        return;
    c->notes[c->nnotes++] = (md_note){key, value};
}

/* The first non-blank value of a key, into out. */
static void note_value(md_span key, md_span value, const char *want, char *out, size_t cap)
{
    if (out[0] || !span_is(key, want) || span_blank(value))
        return;
    size_t n = value.n < cap ? value.n : cap - 1;
    memcpy(out, value.p, n);
    out[n] = '\0';
}

/* A MinidumpSimpleStringDictionary: key and value UTF8String RVAs. */
static void read_dictionary(md_ctx *c, const uint8_t *loc, bool process)
{
    uint32_t n = 0, at = location_entries(c, loc, 8, &n);
    for (uint32_t i = 0; at && i < n && c->note_reads < MD_MAX_NOTE_READS; i++) {
        const uint8_t *e = c->image + at + (size_t)i * 8;
        md_span k, v;
        c->note_reads++;
        if (!counted_bytes(c, rd32(e), &k) || !counted_bytes(c, rd32(e + 4), &v))
            continue;
        if (process) { /* Chrome's (and most Crashpad clients') product and version */
            note_value(k, v, "prod", c->cp_app, sizeof c->cp_app);
            note_value(k, v, "ver", c->cp_version, sizeof c->cp_version);
        }
        add_note(c, k, v);
    }
}

/* A MinidumpRVAList of UTF8Strings: each a "list_annotations" pair. */
static void read_list(md_ctx *c, const uint8_t *loc)
{
    static const md_span key = {(const uint8_t *)"list_annotations", 16};
    uint32_t n = 0, at = location_entries(c, loc, 4, &n);
    for (uint32_t i = 0; at && i < n && c->note_reads < MD_MAX_NOTE_READS; i++) {
        md_span v;
        c->note_reads++;
        if (counted_bytes(c, rd32(c->image + at + (size_t)i * 4), &v))
            add_note(c, key, v);
    }
}

/* A MinidumpAnnotationList: name (UTF8String), type, value (ByteArray);
 * only the strings are read. */
static void read_annotation_objects(md_ctx *c, const uint8_t *loc)
{
    uint32_t n = 0, at = location_entries(c, loc, 12, &n);
    for (uint32_t i = 0; at && i < n && c->note_reads < MD_MAX_NOTE_READS; i++) {
        const uint8_t *e = c->image + at + (size_t)i * 12;
        md_span k, v;
        c->note_reads++;
        if (rd16(e + 4) == MD_ANNOTATION_STRING && counted_bytes(c, rd32(e), &k) &&
            counted_bytes(c, rd32(e + 8), &v))
            add_note(c, k, v);
    }
}

/* Crashpad's UUID (data1 32-bit, data2 and data3 16-bit, little-endian,
 * then 8 bytes) as Crashpad writes it; "" when all zero. */
static void crashpad_uuid(const uint8_t *p, char out[37])
{
    static const uint8_t zero[16];
    out[0] = '\0';
    if (!memcmp(p, zero, sizeof zero))
        return;
    snprintf(out, 37, "%08" PRIx32 "-%04x-%04x-%02x%02x-%02x%02x%02x%02x%02x%02x", rd32(p),
             rd16(p + 4), rd16(p + 6), p[8], p[9], p[10], p[11], p[12], p[13], p[14], p[15]);
}

/* MinidumpCrashpadInfo: version 1, report_id, client_id, the process's
 * simple annotations, the modules' annotations (MinidumpModuleCrashpadInfo:
 * version, list annotations, simple annotations, annotation objects --
 * the last missing from older writers). */
static void read_crashpad_info(md_ctx *c, const md_stream *s)
{
    if (!s || s->size < MD_CRASHPAD_INFO_SIZE)
        return;
    const uint8_t *p = c->image + s->rva;
    if (rd32(p) != 1)
        return;
    crashpad_uuid(p + 4, c->report_id);
    crashpad_uuid(p + 20, c->client_id);
    read_dictionary(c, p + 36, true);
    uint32_t n = 0, at = location_entries(c, p + 44, 12, &n);
    for (uint32_t i = 0; at && i < n && i < MD_MAX_MODULES; i++) {
        const uint8_t *loc = c->image + at + (size_t)i * 12 + 4;
        uint32_t size = rd32(loc), rva = rd32(loc + 4);
        if (size < 20 || !inside(c, rva, size))
            continue;
        const uint8_t *m = c->image + rva;
        read_dictionary(c, m + 12, false);
        if (size >= 28)
            read_annotation_objects(c, m + 20);
        read_list(c, m + 4);
    }
}

static int read_dump(md_ctx *c)
{
    if (c->size < 32 || rd32(c->image) != MD_SIGNATURE)
        return fail(c, FL_MINIDUMP_ENOTMINIDUMP, NULL);
    if ((rd32(c->image + 4) & 0xffff) != MD_VERSION)
        return fail(c, FL_MINIDUMP_ENOTMINIDUMP, "version 0x%" PRIx32, rd32(c->image + 4) & 0xffff);
    uint32_t nstreams = rd32(c->image + 8), dirrva = rd32(c->image + 12);
    c->time_stamp = rd32(c->image + 20);
    if (nstreams > MD_MAX_STREAMS)
        return fail(c, FL_MINIDUMP_ETRUNC, "%" PRIu32 " streams", nstreams);
    if (!inside(c, dirrva, (uint64_t)nstreams * 12))
        return fail(c, FL_MINIDUMP_ETRUNC, "the stream directory is past the end of the file");
    md_stream *dir = calloc(nstreams ? nstreams : 1, sizeof *dir);
    if (!dir)
        return fail(c, FL_MINIDUMP_EIO, "out of memory");
    int rc = FL_MINIDUMP_OK;
    for (uint32_t i = 0; i < nstreams; i++) {
        const uint8_t *p = c->image + dirrva + (size_t)i * 12;
        dir[i] = (md_stream){rd32(p), rd32(p + 4), rd32(p + 8)};
        if (dir[i].type == MD_CRASHPAD_INFO && !inside(c, dir[i].rva, dir[i].size)) {
            dir[i].type = 0; /* annotations only: the dump converts without them */
            continue;
        }
        if (dir[i].type != 0 && !inside(c, dir[i].rva, dir[i].size)) {
            rc = fail(c, FL_MINIDUMP_ETRUNC,
                      "stream %" PRIu32 " (type 0x%" PRIx32 ") at %" PRIu32 ", %" PRIu32
                      " bytes, ends past the file's %zu",
                      i, dir[i].type, dir[i].rva, dir[i].size, c->size);
            goto done;
        }
    }
    if ((rc = read_system_info(c, find_stream(dir, nstreams, MD_SYSTEM_INFO))) ||
        (rc = read_threads(c, find_stream(dir, nstreams, MD_THREAD_LIST))) ||
        (rc = read_exception(c, find_stream(dir, nstreams, MD_EXCEPTION))) ||
        (rc = read_memory(c, find_stream(dir, nstreams, MD_MEMORY_LIST))) ||
        (rc = read_modules(c, find_stream(dir, nstreams, MD_MODULE_LIST))) ||
        (rc = read_thread_names(c, find_stream(dir, nstreams, MD_THREAD_NAME_LIST))))
        goto done;
    read_process(c, dir, nstreams);
    read_crashpad_info(c, find_stream(dir, nstreams, MD_CRASHPAD_INFO));
    /* The main module: the one holding the entry point, else the first
     * (Breakpad and Crashpad list the executable first). */
    size_t main = 0;
    for (size_t i = 0; i < c->nmods; i++)
        if (c->at_entry >= c->mods[i].base && c->at_entry - c->mods[i].base < c->mods[i].size)
            main = i;
    if (c->nmods)
        c->mods[main].main = true;
done:
    free(dir);
    return rc;
}

/* ---- memory ---- */

static int range_cmp(const void *a, const void *b)
{
    const md_range *x = *(const md_range *const *)a, *y = *(const md_range *const *)b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* The index md_read searches: every dumped range (the threads' stacks,
 * the MemoryList's) by start address, so that a dump of many ranges costs
 * the unwinder a binary search per read. */
static int index_ranges(md_ctx *c)
{
    size_t n = c->nthreads + c->nmem;
    if (!(c->ranges = calloc(n ? n : 1, sizeof *c->ranges)))
        return fail(c, FL_MINIDUMP_EIO, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const md_range *r = i < c->nthreads ? &c->threads[i].stack : &c->mem[i - c->nthreads];
        if (r->size)
            c->ranges[c->nranges++] = r;
    }
    if (c->nranges > 1)
        qsort(c->ranges, c->nranges, sizeof *c->ranges, range_cmp);
    return FL_MINIDUMP_OK;
}

/* The range holding addr (the last starting at or below it), or NULL. */
static const md_range *range_of(const md_ctx *c, uint64_t addr)
{
    size_t lo = 0, hi = c->nranges;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->ranges[mid]->start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const md_range *r = c->ranges[lo - 1];
    return addr - r->start < r->size ? r : NULL;
}

/* Copies [addr, addr+n) from the dump's memory (thread stacks and the
 * MemoryList); false when any of it is not there. */
static bool md_read(const md_ctx *c, uint64_t addr, void *buf, size_t n)
{
    uint8_t *out = buf;
    while (n) {
        const md_range *r = range_of(c, addr);
        if (!r)
            return false;
        uint64_t off = addr - r->start, k = r->size - off;
        if (k > n)
            k = n;
        memcpy(out, c->image + r->rva + off, (size_t)k);
        out += k;
        addr += k;
        n -= (size_t)k;
    }
    return true;
}

/* 8 bytes at addr from a module's file, by its PT_LOAD segments. */
static bool module_read(Dwfl *dwfl, uint64_t addr, uint8_t *b)
{
    Dwfl_Module *m = dwfl_addrmodule(dwfl, addr);
    Dwarf_Addr bias = 0;
    Elf *e = m ? dwfl_module_getelf(m, &bias) : NULL;
    size_t np = 0, rawsize = 0;
    const char *raw = e ? elf_rawfile(e, &rawsize) : NULL;
    if (!raw || elf_getphdrnum(e, &np) != 0)
        return false;
    uint64_t va = addr - bias;
    for (size_t i = 0; i < np; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
            continue;
        if (va < ph.p_vaddr || va - ph.p_vaddr + 8 > ph.p_filesz)
            continue;
        uint64_t off = ph.p_offset + (va - ph.p_vaddr);
        if (off > rawsize || rawsize - off < 8)
            return false;
        memcpy(b, raw + off, 8);
        return true;
    }
    return false;
}

/* ---- libdwfl ---- */

static bool cb_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
    const md_ctx *c = arg;
    uint8_t b[8];
    if (!md_read(c, addr, b, sizeof b) && !module_read(dwfl, addr, b))
        return false;
    *result = rd64(b);
    return true;
}

static pid_t cb_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
    (void)dwfl;
    md_ctx *c = arg;
    while (c->next_thread < c->nthreads) {
        md_thread *t = &c->threads[c->next_thread++];
        if (t->tid == 0 || t->tid > 0x7fffffffu)
            continue; /* no id libdwfl takes: the thread keeps its pc */
        *thread_argp = t;
        return (pid_t)t->tid;
    }
    return 0;
}

static bool cb_set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
    md_thread *t = thread_arg;
    const md_arch *a = t->c->arch;
    Dwarf_Word regs[33];
    for (size_t i = 0; i < a->ndwarf; i++)
        regs[i] = t->regs[i];
    if (!dwfl_thread_state_registers(thread, 0, (unsigned)a->ndwarf, regs))
        return false;
    dwfl_thread_state_register_pc(thread, t->regs[a->pc]);
    return true;
}

static const Dwfl_Thread_Callbacks thread_cbs = {
    .next_thread = cb_next_thread,
    .memory_read = cb_memory_read,
    .set_initial_registers = cb_set_initial_registers,
};

/* A module's files come only from here (report_modules) or, by build id,
 * from the debug directories: nothing is opened by a name in the dump. */
static char *debuginfo_path;
static const Dwfl_Callbacks dwfl_cbs = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_build_id_find_debuginfo,
    .debuginfo_path = &debuginfo_path,
};

static int mod_base_cmp(const void *a, const void *b)
{
    const md_module *x = *(const md_module *const *)a, *y = *(const md_module *const *)b;
    return x->base < y->base ? -1 : x->base > y->base;
}

/* Marks the module holding v, if any (by[] sorted by base). */
static void reach(md_module **by, size_t n, uint64_t v)
{
    size_t lo = 0, hi = n;
    while (lo < hi) { /* the last module starting at or below v */
        size_t mid = lo + (hi - lo) / 2;
        if (by[mid]->base <= v)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo && v - by[lo - 1]->base < by[lo - 1]->size)
        by[lo - 1]->reached = true;
}

/* Marks the modules a walk can meet: those that a thread's pc or an
 * 8-aligned word of a thread's stack points into (a return address is
 * read from the stack).  Only these are asked of the caller's
 * find_module, which may go to the network. */
static int mark_reached(md_ctx *c)
{
    md_module **by = malloc((c->nmods ? c->nmods : 1) * sizeof *by);
    if (!by)
        return -1;
    for (size_t i = 0; i < c->nmods; i++)
        by[i] = &c->mods[i];
    qsort(by, c->nmods, sizeof *by, mod_base_cmp);
    for (size_t i = 0; i < c->nthreads; i++) {
        const md_thread *t = &c->threads[i];
        reach(by, c->nmods, t->regs[c->arch->pc]);
        const uint8_t *p = c->image + t->stack.rva;
        for (uint64_t off = (8 - t->stack.start % 8) % 8; off + 8 <= t->stack.size; off += 8)
            reach(by, c->nmods, rd64(p + off));
    }
    free(by);
    return 0;
}

/* The file the caller's find_module gives for m (only when the walk can
 * reach it, and by its whole build id), when it has m's build id: its
 * descriptor, else -1. */
static int find_module_file(const md_ctx *c, const md_module *m)
{
    if (!m->reached || m->build_id_len <= 0)
        return -1;
    char hex[2 * sizeof m->build_id + 1], path[4096];
    for (int i = 0; i < m->build_id_len; i++)
        snprintf(hex + 2 * i, 3, "%02x", m->build_id[i]);
    if (c->opts->find_module(c->opts->find_ctx, hex, m->path, path, sizeof path) != 0)
        return -1;
    int fd = fl_elf_open_regular(path, false, -1);
    if (fd >= 0 && !fl_elf_has_build_id(fd, m->build_id, (size_t)m->build_id_len)) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* The file of m: the caller's find_module's first, when it has one for
 * m; else the file the dump names, when it is a regular file with m's
 * build id (or, from an RSDS record, one starting with its GUID).  Its
 * descriptor, and m's full build id into m; else -1. */
static int open_module_file(const md_ctx *c, md_module *m)
{
    if (c->opts->find_module) {
        int fd = find_module_file(c, m);
        if (fd >= 0)
            return fd;
    }
    if (m->path[0] != '/' || (m->cv != CV_BPEL && m->cv != CV_RSDS))
        return -1;
    int fd = fl_elf_open_regular(m->path, false, -1);
    if (fd < 0)
        return -1;
    if (m->cv == CV_BPEL && m->build_id_len &&
        fl_elf_has_build_id(fd, m->build_id, (size_t)m->build_id_len))
        return fd;
    if (m->cv == CV_RSDS) {
        Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        const void *have = NULL;
        ssize_t hlen = e ? dwelf_elf_gnu_build_id(e, &have) : -1;
        bool same = hlen >= 16 && (size_t)hlen <= sizeof m->build_id && !memcmp(have, m->guid, 16);
        if (same) {
            memcpy(m->build_id, have, (size_t)hlen);
            m->build_id_len = (int)hlen;
        }
        if (e)
            elf_end(e);
        if (same)
            return fd;
    }
    close(fd);
    return -1;
}

/* The load bias of the ELF file on fd mapped from base: none for an
 * executable at fixed addresses, else base less its first PT_LOAD's page. */
static bool file_bias(int fd, const md_arch *a, uint64_t base, uint64_t *bias)
{
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    GElf_Ehdr eh;
    size_t np = 0;
    bool ok = e && gelf_getehdr(e, &eh) && eh.e_machine == a->machine &&
              (eh.e_type == ET_EXEC || eh.e_type == ET_DYN) && elf_getphdrnum(e, &np) == 0;
    *bias = 0;
    for (size_t i = 0; ok && eh.e_type == ET_DYN && i < np; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD) {
            *bias = base - (ph.p_vaddr & ~(uint64_t)4095);
            break;
        }
    }
    if (e)
        elf_end(e);
    return ok;
}

static int report_modules(md_ctx *c)
{
    if (c->opts->find_module && mark_reached(c) != 0)
        return -1;
    dwfl_report_begin(c->dwfl);
    for (size_t i = 0; i < c->nmods; i++) {
        md_module *m = &c->mods[i];
        if (m->size == 0 || m->base + m->size < m->base)
            continue;
        int fd = open_module_file(c, m);
        uint64_t bias;
        if (fd >= 0 && file_bias(fd, c->arch, m->base, &bias)) {
            /* fd is libdwfl's once the module is made. */
            if (dwfl_report_elf(c->dwfl, fl_lw_base_name(m->path), m->path, fd, bias, false))
                continue;
        }
        if (fd >= 0)
            close(fd);
        if (m->build_id_len == 0)
            continue;
        Dwfl_Module *dm =
            dwfl_report_module(c->dwfl, fl_lw_base_name(m->path), m->base, m->base + m->size);
        if (dm)
            dwfl_module_report_build_id(dm, m->build_id, (size_t)m->build_id_len, 0);
    }
    if (dwfl_report_end(c->dwfl, NULL, NULL) != 0)
        return -1;
    /* Each module's bias where its file was found. */
    for (size_t i = 0; i < c->nmods; i++) {
        md_module *m = &c->mods[i];
        Dwfl_Module *dm = dwfl_addrmodule(c->dwfl, m->base);
        Dwarf_Addr lo = 0, bias = 0;
        if (!dm || !dwfl_module_info(dm, NULL, &lo, NULL, NULL, NULL, NULL, NULL) || lo != m->base)
            continue;
        if (dwfl_module_getelf(dm, &bias)) {
            m->has_bias = true;
            m->bias = bias;
        }
    }
    return 0;
}

static int thread_cb(Dwfl_Thread *thread, void *arg)
{
    md_ctx *c = arg;
    pid_t tid = dwfl_thread_tid(thread);
    for (size_t i = 0; i < c->nthreads; i++) {
        md_thread *t = &c->threads[i];
        if (t->tid != (uint32_t)tid || t->frames)
            continue;
        if (!(t->frames = malloc(FL_CORE_MAX_FRAMES * sizeof(uint64_t))))
            return DWARF_CB_ABORT;
        t->nframes = fl_lw_thread_frames(thread, t->frames, FL_CORE_MAX_FRAMES);
        break;
    }
    return DWARF_CB_OK;
}

/* Unwinds every thread; a failure of libdwfl's leaves the pcs alone. */
static int unwind_threads(md_ctx *c)
{
    /* An ELF header of the dump's machine: libdwfl's backend for it. */
    Elf64_Ehdr eh;
    memset(&eh, 0, sizeof eh);
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = ET_CORE;
    eh.e_machine = c->arch->machine;
    eh.e_version = EV_CURRENT;
    eh.e_ehsize = sizeof eh;
    Elf *e = NULL;
    if (c->opts->unwind && (c->dwfl = dwfl_begin(&dwfl_cbs)) && report_modules(c) == 0 &&
        (e = elf_memory((char *)&eh, sizeof eh))) {
        pid_t pid = c->have_pid && c->pid <= 0x7fffffffu ? (pid_t)c->pid : (pid_t)c->threads[0].tid;
        if (dwfl_attach_state(c->dwfl, e, pid > 0 ? pid : 1, &thread_cbs, c))
            dwfl_getthreads(c->dwfl, thread_cb, c);
    }
    if (c->dwfl) {
        dwfl_end(c->dwfl);
        c->dwfl = NULL;
    }
    if (e)
        elf_end(e);
    for (size_t i = 0; i < c->nthreads; i++) {
        md_thread *t = &c->threads[i];
        if (!t->frames && !(t->frames = malloc(sizeof(uint64_t))))
            return fail(c, FL_MINIDUMP_EIO, "out of memory");
        if (t->nframes == 0) /* not even the pc: take it from the registers */
            t->frames[t->nframes++] = t->regs[c->arch->pc];
    }
    return FL_MINIDUMP_OK;
}

/* ---- writing ---- */

/* The raw stack as the client writes it (catcher.c raw_stack): from 128
 * bytes below the stack pointer (the x86-64 red zone), 64-byte aligned,
 * FL_CORE_STACK_BYTES up -- clipped to the dumped range holding the
 * stack pointer (Breakpad's starts at its page), and below the program's
 * argument and environment strings (the kernel's AT_RANDOM bytes lie
 * right below them): Breakpad dumps the main thread's stack up to its
 * top, but they are never copied into a log. */
static bool raw_stack(const md_ctx *c, FILE *out, uint64_t sp)
{
    const md_range *r = range_of(c, sp);
    if (!r)
        return true;
    uint64_t from = sp >= 128 ? (sp - 128) & ~(uint64_t)63 : 0;
    if (from < r->start)
        from = r->start;
    uint64_t to = r->start + r->size;
    if (to - from > FL_CORE_STACK_BYTES)
        to = from + FL_CORE_STACK_BYTES;
    if (from < c->at_random && c->at_random < to)
        to = c->at_random;
    return fl_lw_stack(out, from, c->image + r->rva + (from - r->start), (size_t)(to - from));
}

/* A thread's name: the dump's ThreadNameList, else the process's name
 * for its main thread. */
static const char *thread_name(const md_ctx *c, const md_thread *t)
{
    if (t->name && *t->name)
        return t->name;
    return c->have_pid && t->tid == c->pid && c->proc_name[0] ? c->proc_name : NULL;
}

static int obj_cmp(const void *a, const void *b)
{
    const md_module *x = a, *y = b;
    if (x->main != y->main)
        return x->main ? -1 : 1;
    return x->base < y->base ? -1 : x->base > y->base;
}

static bool write_log(md_ctx *c, FILE *out, const char *crash_id, fl_minidump_info *info)
{
    const fl_minidump_opts *o = c->opts;
    const md_thread *t0 = &c->threads[0];
    const md_module *mainmod = c->nmods && c->mods[0].main ? &c->mods[0] : NULL;
    const char *exe = mainmod && mainmod->path[0] == '/' ? mainmod->path : NULL;
    const char *app = o->app                        ? o->app
                      : c->cp_app[0]                ? c->cp_app
                      : mainmod && mainmod->path[0] ? fl_lw_base_name(mainmod->path)
                                                    : c->proc_name;
    int sig = c->have_exception ? c->sig_no : 0;
    int code = c->have_exception ? c->sig_code : 0;
    if (sig < 0 || sig > 128)
        sig = 0; /* not a signal Linux sends (a dump on request): unknown */
    int64_t when = o->crash_time;
    struct stat st;
    if (when < 0 && c->time_stamp)
        when = c->time_stamp;
    if (when < 0)
        when = fstat(c->fd, &st) == 0 ? (int64_t)st.st_mtime : (int64_t)time(NULL);

    if (!fl_lw_intro(out, "minidump"))
        return false;
    if (!fl_lw_str(out, "FAULTLINE", FAULTLINE_VERSION_STRING) ||
        !fl_lw_i64(out, "CRASHLOG_VERSION", FAULTLINE_CRASHLOG_VERSION) ||
        !fl_lw_str(out, "APPLICATION_NAME", !fl_lw_blank(app) ? app : "unknown") ||
        !fl_lw_str(out, "APPLICATION_VERSION", o->app_version ? o->app_version : c->cp_version) ||
        !fl_lw_str(out, "PLATFORM_NAME", "linux") ||
        !fl_lw_str(out, "CPUARCH_NAME", c->arch->cpuarch) ||
        !fl_lw_str(out, "PLATFORM_VERSION", c->platform_version) ||
        !fl_lw_i64(out, "CRASH_SIGNAL", sig) || !fl_lw_i64(out, "CRASH_TIME", when) ||
        !fl_lw_str(out, "CRASH_ID", crash_id) ||
        !fl_lw_str(out, "INSTALL_ID", o->install_id ? o->install_id : c->client_id) ||
        !fl_lw_str(out, "OS_NAME", c->os_name) || !fl_lw_str(out, "OS_VERSION", c->os_version) ||
        !fl_lw_str(out, "OS_PRETTY_NAME", c->os_pretty) ||
        !fl_lw_str(out, "KERNEL_VERSION", c->kernel_version) ||
        !fl_lw_str(out, "EXECUTABLE", exe) ||
        (c->have_pid && !fl_lw_i64(out, "PROCESS_ID", (int64_t)c->pid)) ||
        !fl_lw_i64(out, "CRASH_THREAD", (int64_t)t0->tid) ||
        !fl_lw_str(out, "CRASH_SOURCE", "minidump") ||
        (c->have_start && c->time_stamp >= c->start_time &&
         !fl_lw_i64(out, "APPLICATION_UPTIME", (int64_t)(c->time_stamp - c->start_time))))
        return false;
    if (!fl_lw_str(out, "CRASH_THREAD_NAME", thread_name(c, t0)))
        return false;
    if (!fl_lw_str(out, "CRASH_SIGNAL_NAME", fl_lw_signal_name(sig)) ||
        !fl_lw_i64(out, "CRASH_CODE", code))
        return false;
    if (c->have_exception && code > 0 &&
        (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP) &&
        !fl_lw_hex(out, "CRASH_ADDRESS", c->fault_addr))
        return false;
    for (size_t i = 0; o->etc && i < o->netc; i++) {
        const char *k = o->etc[2 * i], *v = o->etc[2 * i + 1];
        if (!fl_lw_blank(k) && !fl_lw_blank(v) &&
            (!fl_lw_str(out, "ETC_KEY", k) || !fl_lw_str(out, "ETC_VALUE", v)))
            return false;
    }
    for (size_t i = 0; i < c->nnotes; i++) { /* CrashpadInfo's: neither half blank */
        const md_note *n = &c->notes[i];
        fl_line l;
        fl_line_start(&l, "ETC_KEY");
        fl_line_strn(&l, (const char *)n->key.p, n->key.n);
        if (!fl_lw_line(out, &l))
            return false;
        fl_line_start(&l, "ETC_VALUE");
        fl_line_strn(&l, (const char *)n->value.p, n->value.n);
        if (!fl_lw_line(out, &l))
            return false;
    }
    for (size_t i = 0; i < c->arch->n; i++) {
        fl_line l;
        fl_line_start(&l, "REGISTER");
        fl_line_raw(&l, c->arch->names[i]);
        fl_line_char(&l, ' ');
        fl_line_hex(&l, t0->regs[i]);
        if (!fl_lw_line(out, &l))
            return false;
    }
    if (fputc('\n', out) == EOF)
        return false;

    for (size_t i = 0; i < c->nmods; i++) {
        const md_module *m = &c->mods[i];
        if (!fl_lw_object(out, m->path, m->base, m->size, m->has_bias ? &m->bias : NULL,
                          m->build_id, (size_t)m->build_id_len))
            return false;
    }
    if (fputc('\n', out) == EOF)
        return false;
    if (!fl_lw_callstack(out, t0->frames, t0->nframes) || !raw_stack(c, out, t0->regs[c->arch->sp]))
        return false;
    for (size_t i = 1; i < c->nthreads; i++) {
        const md_thread *t = &c->threads[i];
        if (!fl_lw_thread(out, t->tid, thread_name(c, t), t->frames, t->nframes))
            return false;
    }
    if (c->threads_omitted && !fl_lw_i64(out, "THREADS_OMITTED", (int64_t)c->threads_omitted))
        return false;
    if (c->mods_omitted && !fl_lw_i64(out, "OBJECTS_OMITTED", (int64_t)c->mods_omitted))
        return false;
    if (fputs("END\n", out) == EOF || fflush(out) != 0 || ferror(out))
        return false;
    if (info) {
        snprintf(info->crash_id, sizeof info->crash_id, "%s", crash_id);
        info->signal = sig;
        info->pid = c->have_pid ? c->pid : 0;
        info->tid = t0->tid;
        info->nframes = t0->nframes;
        info->nthreads = c->nthreads;
        info->nobjects = c->nmods;
    }
    return true;
}

/* Frees what reading and unwinding c's image made. */
static void release(md_ctx *c)
{
    for (size_t i = 0; i < c->nthreads; i++) {
        free(c->threads[i].frames);
        free(c->threads[i].name);
    }
    free(c->threads);
    for (size_t i = 0; i < c->nmods; i++)
        free(c->mods[i].path);
    free(c->mods);
    free(c->mem);
    free(c->ranges);
    free(c->notes);
}

/* The conversion of c's image, once it is there; frees what it made. */
static int convert(md_ctx *c, FILE *out, fl_minidump_info *info)
{
    char crash_id[40];
    int rc;
    if ((rc = read_dump(c)) || (rc = index_ranges(c)) || (rc = unwind_threads(c)))
        goto done;
    if (c->nmods > 1)
        qsort(c->mods, c->nmods, sizeof *c->mods, obj_cmp);
    if (c->opts->crash_id)
        snprintf(crash_id, sizeof crash_id, "%s", c->opts->crash_id);
    else if (c->report_id[0]) /* the same report converted twice: one id */
        snprintf(crash_id, sizeof crash_id, "%s", c->report_id);
    else if (fl_core_uuid(crash_id)) {
        rc = fail(c, FL_MINIDUMP_EIO, "cannot draw a crash id: no getrandom(2), no /proc");
        goto done;
    }
    if (!write_log(c, out, crash_id, info)) {
        rc = fail(c, FL_MINIDUMP_EWRITE, "%s", strerror(errno));
        goto done;
    }
    rc = FL_MINIDUMP_OK;
done:
    release(c);
    return rc;
}

static const fl_minidump_opts defaults = {.crash_time = -1, .unwind = true};

int fl_minidump_to_crashlog(const char *path, const fl_minidump_opts *opts, FILE *out,
                            fl_minidump_info *info, char *err, size_t errcap)
{
    md_ctx c = {.opts = opts ? opts : &defaults, .err = err, .errcap = errcap, .fd = -1};
    c.shown = c.opts->name ? c.opts->name : path;
    int rc;
    void *map = MAP_FAILED;
    if (err && errcap)
        err[0] = '\0';
    elf_version(EV_CURRENT);
    /* Not opened as anything but a regular file: a FIFO would wait. */
    c.fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (c.fd < 0) {
        rc = fail(&c, FL_MINIDUMP_EIO, "%s", strerror(errno));
        goto done;
    }
    struct stat st;
    if (fstat(c.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = fail(&c, FL_MINIDUMP_EIO, "not a regular file");
        goto done;
    }
    if (st.st_size < 32) {
        rc = fail(&c, FL_MINIDUMP_ENOTMINIDUMP, "%lld bytes", (long long)st.st_size);
        goto done;
    }
    /* Offsets in the file are 32-bit: what lies past 4 GiB is never read. */
    c.size = (uint64_t)st.st_size > 0xffffffffull ? 0xffffffffu : (size_t)st.st_size;
    map = mmap(NULL, c.size, PROT_READ, MAP_PRIVATE, c.fd, 0);
    if (map == MAP_FAILED) {
        rc = fail(&c, FL_MINIDUMP_EIO, "%s", strerror(errno));
        goto done;
    }
    c.image = map;
    rc = convert(&c, out, info);
done:
    if (map != MAP_FAILED)
        munmap(map, c.size);
    if (c.fd >= 0)
        close(c.fd);
    return rc;
}

/* c set up for a dump held in memory; FL_MINIDUMP_OK or a code with the
 * reason in err. */
static int from_buffer(md_ctx *c, const fl_minidump_opts *opts, const void *data, size_t len,
                       char *err, size_t errcap)
{
    *c = (md_ctx){.opts = opts, .err = err, .errcap = errcap, .fd = -1};
    c->shown = opts->name ? opts->name : "the minidump";
    if (err && errcap)
        err[0] = '\0';
    elf_version(EV_CURRENT);
    if (len < 32)
        return fail(c, FL_MINIDUMP_ENOTMINIDUMP, "%zu bytes", len);
    c->size = len > 0xffffffffu ? 0xffffffffu : len;
    c->image = data;
    return FL_MINIDUMP_OK;
}

int fl_minidump_buf_to_crashlog(const void *data, size_t len, const fl_minidump_opts *opts,
                                FILE *out, fl_minidump_info *info, char *err, size_t errcap)
{
    md_ctx c;
    int rc = from_buffer(&c, opts ? opts : &defaults, data, len, err, errcap);
    return rc ? rc : convert(&c, out, info);
}

int fl_minidump_unwind(const void *data, size_t len, const fl_minidump_opts *opts,
                       fl_minidump_stack **stacks, size_t *n, char *err, size_t errcap)
{
    fl_minidump_opts o = opts ? *opts : defaults;
    o.unwind = true;
    *stacks = NULL;
    *n = 0;
    md_ctx c;
    int rc = from_buffer(&c, &o, data, len, err, errcap);
    if (rc)
        return rc;
    if ((rc = read_dump(&c)) || (rc = index_ranges(&c)) || (rc = unwind_threads(&c)))
        goto done;
    fl_minidump_stack *s = calloc(c.nthreads, sizeof *s);
    if (!s) {
        rc = fail(&c, FL_MINIDUMP_EIO, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < c.nthreads; i++) { /* the frames change hands */
        s[i].tid = c.threads[i].tid;
        s[i].pcs = c.threads[i].frames;
        s[i].n = c.threads[i].nframes;
        c.threads[i].frames = NULL;
    }
    *stacks = s;
    *n = c.nthreads;
done:
    release(&c);
    return rc;
}

void fl_minidump_stacks_free(fl_minidump_stack *stacks, size_t n)
{
    for (size_t i = 0; stacks && i < n; i++)
        free(stacks[i].pcs);
    free(stacks);
}
