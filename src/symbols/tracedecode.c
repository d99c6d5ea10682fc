/*
 * tracedecode.c - `faultline decode`: a trace-ID dump back into text.
 *
 * faultline_trace_dump() writes each trace event as the module (build id)
 * and address of its call site, and its argument words; the format string
 * stays in the program's file.  Here the site is read from that file --
 * the program or library itself, stripped or not, found with --obj or at
 * the path the dump names (when the build id matches) -- and the event
 * formatted by the same code the client library uses in a crash log
 * (src/common/tracefmt.c), so the lines are the ones
 * faultline_trace_dump_text() would have written.
 *
 * Where neither has the file and DEBUGINFOD_URLS names servers, the
 * executable is asked of debuginfod by build id (libdebuginfod, which
 * caches it).
 *
 * A site's pointers (its format) are written by the dynamic linker at load
 * time in a position-independent file: their value is the addend of an
 * R_*_RELATIVE relocation in the file's SHT_RELA sections.  Without one
 * (a fixed-address executable, or packed RELR relocations) the word in the
 * file is the value.
 */
#define _GNU_SOURCE
#include <elfutils/debuginfod.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <getopt.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "faultline.h"
#include "fl_crashlog.h"
#include "fl_ctxdecode.h"
#include "fl_elffile.h"
#include "fl_hex.h"
#include "fl_tracedecode.h"
#include "fl_tracefmt.h"
#include "fl_tracesec.h"

/* The command the messages name: "decode", or "dump" when `faultline dump`
 * decodes what it fetched (fl_cmd_decode's argv[0]). */
static const char *g_cmd = "decode";

__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "faultline %s: ", g_cmd);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

/* An object file, open for reading sites. */
typedef struct object {
    char *path;
    char id[2 * 64 + 1]; /* build id, hex */
    int fd;
    Elf *elf;
    uint64_t *rel; /* RELATIVE relocations as (address, value) pairs, sorted */
    size_t nrel;
    bool from_dir; /* found in an --obj directory, not named */
} object;

typedef struct decoder {
    object *objs;
    size_t nobjs;
    struct module {
        char id[2 * 64 + 1];
        char *path;
        long obj; /* index in objs; -1: none found */
        bool tried;
    } * mods;
    size_t nmods;
    unsigned long events, unresolved;
    bool no_paths;          /* neither open the paths the dump names nor ask
                             * debuginfod (fuzzing) */
    bool logs_too;          /* a crash log would have been taken too (faultline
                             * decode FILE): a bad input is told so */
    debuginfod_client *dbg; /* made on the first request */
    /* The formats of FAULTLINE_TRACE_APART builds, by build id: looked
     * up once each (ts NULL: not found). */
    struct formats {
        char id[2 * 64 + 1];
        fl_tracesec *ts;
    } * fmts;
    size_t nfmts;
} decoder;

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The RELATIVE relocations of the file, sorted, for pointer_at(). */
static int load_relocs(object *o)
{
    GElf_Ehdr eh;
    if (!gelf_getehdr(o->elf, &eh))
        return -1;
    unsigned relative = eh.e_machine == EM_AARCH64 ? 1027 /* R_AARCH64_RELATIVE */
                                                   : 8;   /* R_X86_64_RELATIVE */
    size_t cap = 0;
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(o->elf, scn));) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        size_t n = d ? sh.sh_size / sh.sh_entsize : 0;
        for (size_t i = 0; i < n; i++) {
            GElf_Rela r;
            if (!gelf_getrela(d, (int)i, &r) || GELF_R_TYPE(r.r_info) != relative)
                continue;
            if (o->nrel == cap) {
                cap = cap ? 2 * cap : 1024;
                uint64_t *na = realloc(o->rel, cap * 2 * sizeof *na);
                if (!na)
                    return -1;
                o->rel = na;
            }
            o->rel[2 * o->nrel] = r.r_offset;
            o->rel[2 * o->nrel + 1] = (uint64_t)r.r_addend;
            o->nrel++;
        }
    }
    if (o->nrel) /* a fixed-address program has none */
        qsort(o->rel, o->nrel, 2 * sizeof *o->rel, cmp_u64);
    return 0;
}

static void close_object(object *o)
{
    if (o->elf)
        elf_end(o->elf);
    if (o->fd >= 0)
        close(o->fd);
    free(o->rel);
    free(o->path);
}

/* Opens path and reads its build id.  Returns 0, or -1 with a reason. */
static int open_object(object *o, const char *path, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    o->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (o->fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    o->elf = elf_begin(o->fd, ELF_C_READ_MMAP, NULL);
    if (!o->elf || elf_kind(o->elf) != ELF_K_ELF) {
        snprintf(err, errlen, "%s: not an ELF file", path);
        goto fail;
    }
    const void *id;
    ssize_t n = dwelf_elf_gnu_build_id(o->elf, &id);
    if (n <= 0 || n > 64) {
        snprintf(err, errlen, "%s: no GNU build id", path);
        goto fail;
    }
    for (ssize_t i = 0; i < n; i++)
        sprintf(o->id + 2 * i, "%02x", ((const unsigned char *)id)[i]);
    if (!(o->path = strdup(path)) || load_relocs(o)) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto fail;
    }
    return 0;
fail:
    close_object(o);
    o->fd = -1;
    o->elf = NULL;
    return -1;
}

/* Copies n bytes at address addr of the file's image.  Returns 0 or -1. */
static int read_at(object *o, uint64_t addr, void *dst, size_t n)
{
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(o->elf, scn));) {
        GElf_Shdr sh;
        /* .tbss takes no room in the image: its addresses are those of the
         * sections after it (.data.rel.ro, where the sites are). */
        if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) ||
            ((sh.sh_flags & SHF_TLS) && sh.sh_type == SHT_NOBITS) || addr < sh.sh_addr ||
            addr + n > sh.sh_addr + sh.sh_size || addr + n < addr)
            continue;
        if (sh.sh_type == SHT_NOBITS) {
            memset(dst, 0, n);
            return 0;
        }
        Elf_Data *d = elf_getdata(scn, NULL);
        if (!d || !d->d_buf || addr - sh.sh_addr + n > d->d_size)
            return -1;
        memcpy(dst, (const char *)d->d_buf + (addr - sh.sh_addr), n);
        return 0;
    }
    return -1;
}

/* The pointer the dynamic linker puts at addr (see the top). */
static int pointer_at(object *o, uint64_t addr, uint64_t *out)
{
    size_t lo = 0, hi = o->nrel;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (o->rel[2 * mid] < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < o->nrel && o->rel[2 * lo] == addr) {
        *out = o->rel[2 * lo + 1];
        return 0;
    }
    return read_at(o, addr, out, sizeof *out);
}

static int string_at(object *o, uint64_t addr, char *dst, size_t cap)
{
    for (size_t n = 0; n + 1 < cap; n++) {
        if (read_at(o, addr + n, dst + n, 1))
            return -1;
        if (!dst[n])
            return 0;
    }
    dst[cap - 1] = '\0';
    return 0;
}

static bool elf_has(Elf *e, Elf64_Word type, uint64_t flags)
{
    GElf_Shdr sh;
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(e, scn));)
        if (gelf_getshdr(scn, &sh) && sh.sh_type == type && (sh.sh_flags & flags) == flags)
            return true;
    return false;
}

/* A separate debug file: symbols, but no code. */
static bool debug_only(Elf *e)
{
    return !elf_has(e, SHT_PROGBITS, SHF_EXECINSTR);
}

/* Adds the file at path as module m's object if it has m's build id. */
static void try_path(decoder *dc, struct module *m, const char *path)
{
    object o;
    char err[256];
    if (access(path, R_OK) || open_object(&o, path, err, sizeof err))
        return;
    object *no = strcmp(o.id, m->id) ? NULL : realloc(dc->objs, (dc->nobjs + 1) * sizeof *no);
    if (!no) {
        close_object(&o);
        return;
    }
    dc->objs = no;
    dc->objs[dc->nobjs] = o;
    m->obj = (long)dc->nobjs++;
}

/* Where the file a debuginfod server has for build id `id` (hex) was
 * cached -- the executable, or with `debuginfo` its debug file -- as a
 * malloc'd path; NULL when DEBUGINFOD_URLS names no server or none has
 * it. */
static char *debuginfod_path(decoder *dc, const char *id, bool debuginfo)
{
    const char *urls = getenv("DEBUGINFOD_URLS");
    if (dc->no_paths || !urls || !*urls || !id[0] || id[0] == '-')
        return NULL;
    if (!dc->dbg && !(dc->dbg = debuginfod_begin()))
        return NULL;
    char *path = NULL;
    int fd = debuginfo ? debuginfod_find_debuginfo(dc->dbg, (const unsigned char *)id, 0, &path)
                       : debuginfod_find_executable(dc->dbg, (const unsigned char *)id, 0, &path);
    if (fd < 0)
        return NULL;
    close(fd);
    return path;
}

/* The object of module m: an --obj file with its build id, else the file
 * at the path the dump names, if it has that build id, else what
 * debuginfod has for it. */
static object *module_object(decoder *dc, struct module *m)
{
    if (!m->tried) {
        m->tried = true;
        m->obj = -1;
        for (size_t i = 0; i < dc->nobjs && m->obj < 0; i++)
            if (!strcmp(dc->objs[i].id, m->id) && !debug_only(dc->objs[i].elf))
                m->obj = (long)i; /* a debug file with that id has no code */
        if (m->obj < 0 && m->path && !dc->no_paths)
            try_path(dc, m, m->path);
        char *path = m->obj < 0 ? debuginfod_path(dc, m->id, false) : NULL;
        if (path)
            try_path(dc, m, path);
        free(path);
    }
    return m->obj < 0 ? NULL : &dc->objs[m->obj];
}

/* The formats of the file at path into *ts: 1; 0 when it has none; -1
 * when its section is damaged, which is said (once per file: the caller
 * keeps what it found). */
static int formats_read(const char *path, fl_tracesec **ts)
{
    char err[512];
    int rc = fl_elf_tracesec(path, ts, err, sizeof err);
    if (rc < 0)
        say("warning: %s; its formats not used\n", err);
    return rc;
}

/* The file at path has build id id and .debug_faultline_trace: its
 * formats into *ts. */
static bool formats_at(const char *path, const char *id, fl_tracesec **ts)
{
    object o;
    char err[512];
    if (access(path, R_OK) || open_object(&o, path, err, sizeof err))
        return false;
    bool same = !strcmp(o.id, id);
    close_object(&o);
    return same && formats_read(path, ts) == 1;
}

/* The debug file the program at path names (.gnu_debuglink), where gdb
 * looks for it: beside it, in .debug/ there, under /usr/lib/debug. */
static bool formats_linked(const char *path, const char *id, fl_tracesec **ts)
{
    object o;
    char err[512], name[256] = "";
    if (access(path, R_OK) || open_object(&o, path, err, sizeof err))
        return false;
    GElf_Word crc;
    const char *link = dwelf_elf_gnu_debuglink(o.elf, &crc);
    if (link && !strchr(link, '/') && strlen(link) < sizeof name)
        memcpy(name, link, strlen(link) + 1);
    close_object(&o);
    if (!name[0])
        return false;
    const char *slash = strrchr(path, '/');
    int dl = slash ? (int)(slash - path) : 1;
    const char *dir = slash ? path : ".";
    char cand[3][4096];
    snprintf(cand[0], sizeof cand[0], "%.*s/%s", dl, dir, name);
    snprintf(cand[1], sizeof cand[1], "%.*s/.debug/%s", dl, dir, name);
    snprintf(cand[2], sizeof cand[2], "/usr/lib/debug%.*s/%s", dl, dir, name);
    for (int i = 0; i < 3; i++)
        if (formats_at(cand[i], id, ts))
            return true;
    return false;
}

/* The formats kept apart (FAULTLINE_TRACE_APART) of the object with
 * build id id, loaded from path (NULL: unknown): from an --obj file with
 * that build id (its debug file, or the program unstripped), else the
 * file at path, else the debug file it links to (.gnu_debuglink), else
 * /usr/lib/debug/.build-id, else a debuginfod server's debug file or
 * executable.  NULL when none has them. */
static fl_tracesec *formats_of(decoder *dc, const char *id, const char *path)
{
    for (size_t i = 0; i < dc->nfmts; i++)
        if (!strcmp(dc->fmts[i].id, id))
            return dc->fmts[i].ts;
    if (strlen(id) >= sizeof dc->fmts->id)
        return NULL;
    struct formats *nf = realloc(dc->fmts, (dc->nfmts + 1) * sizeof *nf);
    if (!nf)
        return NULL;
    dc->fmts = nf;
    struct formats *f = &dc->fmts[dc->nfmts++];
    memcpy(f->id, id, strlen(id) + 1);
    f->ts = NULL;
    for (size_t i = 0; i < dc->nobjs && !f->ts; i++)
        if (!strcmp(dc->objs[i].id, id) && formats_read(dc->objs[i].path, &f->ts) != 1)
            f->ts = NULL;
    if (f->ts || dc->no_paths || id[0] == '-')
        return f->ts;
    if (path && (formats_at(path, id, &f->ts) || formats_linked(path, id, &f->ts)))
        return f->ts;
    char dbg[64 + 2 * 64 + 16];
    if (strlen(id) > 2) {
        snprintf(dbg, sizeof dbg, "/usr/lib/debug/.build-id/%.2s/%s.debug", id, id + 2);
        if (formats_at(dbg, id, &f->ts))
            return f->ts;
    }
    for (int debuginfo = 1; debuginfo >= 0 && !f->ts; debuginfo--) {
        char *p = debuginfod_path(dc, id, debuginfo);
        if (p && !formats_at(p, id, &f->ts))
            f->ts = NULL;
        free(p);
    }
    return f->ts;
}

/* The last line of a dump cut in the middle of a line: say so, not that
 * the line is bad. */
#define CUT_LINE "%s:%lu: cut short (the dump ends inside this line)\n"

/* The record being assembled: TRACE_ID, then its TRACE_BYTES lines. */
typedef struct pending {
    bool have;
    uint64_t time, tid, vaddr;
    long mod;
    unsigned nargs;
    uint64_t slots[FAULTLINE_TRACE_MAX_ARGS];
    /* A hard-coded string ("@MOD:VADDR"): where it is in which module. */
    bool fixed[FAULTLINE_TRACE_MAX_ARGS];
    long smod[FAULTLINE_TRACE_MAX_ARGS];
    char *bytes; /* the record's image: header and slots zero, then strings */
    size_t len, cap;
} pending;

static int grow(pending *p, size_t need)
{
    if (p->len + need <= p->cap)
        return 0;
    size_t nc = p->cap ? p->cap : 4096;
    while (nc < p->len + need)
        nc *= 2;
    char *nb = realloc(p->bytes, nc);
    if (!nb)
        return -1;
    p->bytes = nb;
    p->cap = nc;
    return 0;
}

/* The text of one event into out; returns its length.  Hard-coded strings
 * are read from their modules' files and added to the record's image
 * (p->bytes), where the formatter finds them by offset. */
static size_t event_text(decoder *dc, pending *p, char *out, size_t cap)
{
    long mod = p->mod;
    uint64_t vaddr = p->vaddr;
    unsigned nargs = p->nargs;
    uint64_t *slots = p->slots;
    dc->events++;
    object *o = mod >= 0 && (size_t)mod < dc->nmods ? module_object(dc, &dc->mods[mod]) : NULL;
    struct faultline_trace_site site;
    uint64_t fmtp;
    char fmt[4096];
    const char *apart = NULL; /* the format, kept apart (FAULTLINE_TRACE_APART) */
    bool bad = !o || read_at(o, vaddr, &site, sizeof site) ||
               pointer_at(o, vaddr + offsetof(struct faultline_trace_site, fmt), &fmtp);
    if (!bad && !fmtp) {
        fl_tracesec *ts = formats_of(dc, dc->mods[mod].id, dc->mods[mod].path);
        if (!ts || !(apart = fl_tracesec_find(ts, vaddr, NULL))) {
            dc->unresolved++;
            snprintf(out, cap,
                     ts ? "<trace format kept apart: not in its debug file>"
                        : "<trace format kept apart: no debug file of its module "
                          "(give it with --obj)>");
            return strlen(out);
        }
        snprintf(fmt, sizeof fmt, "%s", apart);
    }
    if (bad || (!apart && string_at(o, fmtp, fmt, sizeof fmt))) {
        dc->unresolved++;
        const char *why = mod < 0 ? "<trace site unreadable: the dump did not know its module "
                                    "(dumped before faultline_install(), or unloaded)>"
                          : !o    ? "<trace site unreadable: no file for its module>"
                                  : "<trace site unreadable: not in the module's file>";
        snprintf(out, cap, "%s", why);
        return strlen(out);
    }
    site.types[FAULTLINE_TRACE_MAX_ARGS] = '\0';
    if (nargs > site.nargs)
        nargs = site.nargs;
    bool missing = false; /* a string: the event is not wholly decoded */
    for (unsigned i = 0; i < nargs; i++) {
        if (!p->fixed[i] || site.types[i] != 's')
            continue;
        /* As the library reads it: at most FAULTLINE_TRACE_MAX_STR bytes. */
        char str[FAULTLINE_TRACE_MAX_STR + 1];
        long sm = p->smod[i];
        object *so = sm >= 0 && (size_t)sm < dc->nmods ? module_object(dc, &dc->mods[sm]) : NULL;
        if (!so || string_at(so, slots[i], str, sizeof str)) {
            snprintf(str, sizeof str, "<string unreadable>");
            missing = true;
        }
        size_t sl = strlen(str) + 1;
        if (grow(p, sl))
            return (size_t)snprintf(out, cap, "<out of memory>");
        memcpy(p->bytes + p->len, str, sl);
        slots[i] = p->len;
        p->len += sl;
    }
    dc->unresolved += missing;
    return fl_trace_format(out, cap, fmt, site.types, nargs, slots, p->bytes, p->len);
}

static int flush_event(decoder *dc, pending *p, FILE *out)
{
    if (!p->have)
        return 0;
    p->have = false;
    char text[FL_LINE_MAX + 1];
    size_t n = event_text(dc, p, text, sizeof text);
    fl_line l;
    fl_line_start(&l, "TRACE");
    fl_line_u64(&l, p->time);
    fl_line_char(&l, ' ');
    fl_line_u64(&l, p->tid);
    fl_line_char(&l, ' ');
    fl_line_strn(&l, text, n);
    return fprintf(out, "%s\n", fl_line_cstr(&l)) < 0 ? -1 : 0;
}

static int add_bytes(pending *p, const char *hex)
{
    size_t n = strlen(hex);
    if (n % 2 || grow(p, n / 2))
        return -1;
    for (size_t i = 0; i < n; i += 2) {
        int hi = fl_hex_digit(hex[i]), lo = fl_hex_digit(hex[i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        p->bytes[p->len++] = (char)(hi << 4 | lo);
    }
    return 0;
}

/* "TRACE_ID time tid mod vaddr nargs slot...", a slot "@MOD:VADDR" for a
 * hard-coded string (MOD "-": its module was not known). */
static int start_event(pending *p, char *v)
{
    char *end;
    errno = 0;
    p->time = strtoull(v, &end, 10);
    p->tid = strtoull(end, &end, 10);
    while (*end == ' ')
        end++;
    if (*end == '-') {
        p->mod = -1;
        end++;
    } else {
        p->mod = strtol(end, &end, 10);
    }
    p->vaddr = strtoull(end, &end, 16);
    unsigned long n = strtoul(end, &end, 10);
    if (errno || n > FAULTLINE_TRACE_MAX_ARGS)
        return -1;
    p->nargs = (unsigned)n;
    for (unsigned i = 0; i < p->nargs; i++) {
        char *e2;
        while (*end == ' ')
            end++;
        p->fixed[i] = *end == '@';
        if (p->fixed[i]) {
            end++;
            if (*end == '-') {
                p->smod[i] = -1;
                e2 = end + 1;
            } else {
                p->smod[i] = strtol(end, &e2, 10);
                if (e2 == end)
                    return -1;
            }
            if (*e2 != ':')
                return -1;
            end = e2 + 1;
        }
        p->slots[i] = strtoull(end, &e2, 16);
        if (e2 == end)
            return -1;
        end = e2;
    }
    /* The strings' offsets count from the record's start: the header and
     * the slots come first, as zeros here. */
    p->len = 0;
    size_t head = (5 + (size_t)p->nargs) * 8;
    if (head > p->cap) {
        char *nb = realloc(p->bytes, 4096);
        if (!nb)
            return -1;
        p->bytes = nb;
        p->cap = 4096;
    }
    memset(p->bytes, 0, head);
    p->len = head;
    p->have = true;
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: faultline decode [--obj FILE|DIR]... [DUMP]\n"
               "       faultline decode --context VALUE... --obj FILE... [--max-depth N]\n"
               "                        [--max-paths N]\n"
               "       faultline decode [--obj FILE|DIR]... CRASHLOG\n"
               "\n"
               "Turns a trace-ID dump (faultline_trace_dump(), from DUMP or standard\n"
               "input) into text: the lines faultline_trace_dump_text() writes, with\n"
               "each event's text made from its call site in the program's files.\n"
               "\n"
               "  --obj FILE   a program or library the dump's events came from (its\n"
               "               build id is matched; stripped files do); repeatable.\n"
               "               Without one, the file at the path the dump names is\n"
               "               used when its build id matches (not a path marked\n"
               "               as cut at its start: MODULE_PATH_CUT), else, when\n"
               "               DEBUGINFOD_URLS is set, the executable debuginfod has\n"
               "               for that build id.  A directory (a build tree) gives\n"
               "               every ELF file with a build id under it.\n"
               "\n"
               "A program built with -DFAULTLINE_TRACE_APART keeps its formats in its\n"
               "debug file (.debug_faultline_trace), not in its memory: they are read\n"
               "from an --obj file with the build id that has them (the debug file, or\n"
               "the program unstripped), else the file at the path named or the debug\n"
               "file it links to (.gnu_debuglink), else /usr/lib/debug/.build-id, else\n"
               "debuginfod's debug file.\n"
               "\n"
               "With --context, turns calling-context values (faultline_context(), a\n"
               "crash log's CRASH_CONTEXT and THREAD_CONTEXT) into the stacks of\n"
               "instrumented functions that give them, innermost first, from the call\n"
               "graph of the files given with --obj (the program first, then its\n"
               "libraries built with -finstrument-functions; x86-64 or aarch64).\n"
               "\n"
               "Given a crash log, first prints its trace events as TRACE lines when\n"
               "some kept their formats apart (TRACE_ID lines), formatted as above;\n"
               "then decodes the contexts of its threads and trace events\n"
               "(TRACE_CONTEXT), with the files --obj gives, else those at the paths the\n"
               "log names (same build id), else what debuginfod has (DEBUGINFOD_URLS).\n"
               "A stripped file takes its symbols from its debug file: given with --obj,\n"
               "under /usr/lib/debug/.build-id, or from debuginfod.\n"
               "\n"
               "  --context VALUE  a value, hex (0x optional); repeatable\n"
               "  --max-depth N    longest stack tried (default 64, 1..4096)\n"
               "  --max-paths N    stop after trying N paths (default 100000000)\n"
               "\n"
               "Exit: 0 every event or value decoded (or a crash log with none to\n"
               "decode, which is said), 1 some could not be (their lines say why), 2\n"
               "usage, an unreadable dump or file, or out of memory.\n");
}

/* Decodes the dump in `in` (named `path` in messages) to `out`.  Returns
 * 0 (all decoded), 1 (some events not) or 2 (not a dump, or cut). */
static int decode_stream(decoder *dc, FILE *in, const char *path, FILE *out)
{
    int rc = 2;
    pending p = {0};
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    unsigned long lineno = 0;
    long last_mod = -1; /* the MODULE line a MODULE_PATH_CUT qualifies */
    bool header = false, ended = false, cut = false;
    while (!ended && (len = getline(&line, &lcap, in)) >= 0) {
        lineno++;
        cut = len > 0 && line[len - 1] != '\n';
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (!header) {
            if (strcmp(line, "FAULTLINE_TRACE_DUMP 1")) {
                say("%s: %s a trace-ID dump (it starts \"FAULTLINE_TRACE_DUMP 1\"; "
                    "faultline_trace_dump() writes one)\n",
                    path,
                    dc->logs_too ? "neither a crash log (\"FAULTLINE <version>\" or "
                                   "\"MOJOCRASH <version>\" first, after blank and # lines) nor"
                                 : "not");
                goto bad;
            }
            header = true;
            continue;
        }
        /* The dump ends inside this line: the event it belongs to (or the
         * one before, whose TRACE_BYTES it starts) lacks its bytes, and a
         * piece of a key ("TRACE_BY") is no line of text.  Neither is
         * printed. */
        if (cut && strcmp(line, "END")) {
            say(CUT_LINE, path, lineno);
            goto bad;
        }
        char *sp = strchr(line, ' ');
        char *v = sp ? sp + 1 : line + len;
        size_t klen = sp ? (size_t)(sp - line) : (size_t)len;
        if (klen == 11 && !strncmp(line, "TRACE_BYTES", 11)) {
            if (!p.have || add_bytes(&p, v)) {
                say(cut ? CUT_LINE : "%s:%lu: bad TRACE_BYTES line\n", path, lineno);
                goto bad;
            }
            continue;
        }
        if (flush_event(dc, &p, out))
            goto bad;
        if (klen == 8 && !strncmp(line, "TRACE_ID", 8)) {
            if (start_event(&p, v)) {
                say(cut ? CUT_LINE : "%s:%lu: bad TRACE_ID line\n", path, lineno);
                goto bad;
            }
        } else if (klen == 6 && !strncmp(line, "MODULE", 6)) {
            char *end;
            unsigned long idx = strtoul(v, &end, 10);
            char id[2 * 64 + 1] = "", *mpath = NULL;
            if (sscanf(end, " %128s", id) != 1 || idx > 100000) {
                say(cut ? CUT_LINE : "%s:%lu: bad MODULE line\n", path, lineno);
                goto bad;
            }
            char *rest = strstr(end, id) + strlen(id);
            mpath = *rest == ' ' ? rest + 1 : rest;
            if (idx >= dc->nmods) {
                struct module *nm = realloc(dc->mods, (idx + 1) * sizeof *nm);
                if (!nm)
                    goto bad;
                memset(nm + dc->nmods, 0, (idx + 1 - dc->nmods) * sizeof *nm);
                dc->mods = nm;
                dc->nmods = idx + 1;
            }
            memcpy(dc->mods[idx].id, id, sizeof id);
            free(dc->mods[idx].path);
            dc->mods[idx].path = *mpath ? strdup(mpath) : NULL;
            last_mod = (long)idx;
        } else if (klen == 15 && !strncmp(line, "MODULE_PATH_CUT", 15)) {
            /* The preceding MODULE's path lost its start: it names no
             * file (a file there is not the module's, even with its
             * build id) -- found by --obj or debuginfod only. */
            char *end;
            errno = 0;
            unsigned long long n = strtoull(v, &end, 10);
            if (last_mod < 0 || *v < '0' || *v > '9' || *end || errno) {
                say(cut ? CUT_LINE : "%s:%lu: bad MODULE_PATH_CUT line\n", path, lineno);
                goto bad;
            }
            if (n) { /* 0: the whole path */
                free(dc->mods[last_mod].path);
                dc->mods[last_mod].path = NULL;
            }
        } else if (klen == 3 && !strncmp(line, "END", 3)) {
            ended = true;
        } else if (len) {
            /* STATE_KEY, STATE_VALUE, BREADCRUMB: already text */
            if (fprintf(out, "%s\n", line) < 0)
                goto bad;
        }
    }
    if (flush_event(dc, &p, out))
        goto bad;
    if (header && !ended && cut) {
        say(CUT_LINE, path, lineno);
        goto bad;
    }
    if (!header || !ended) {
        say(header ? "%s: cut short (no END line)\n" : "%s is empty\n", path);
        goto bad;
    }
    if (fflush(out)) {
        say("writing: %s\n", strerror(errno));
        goto bad;
    }
    rc = 0;
    if (!dc->events) /* said, so that an empty output is not taken for a failure */
        say("%s: no trace events in the dump\n", path);
    if (dc->unresolved) {
        if (!strcmp(g_cmd, "dump")) /* the process's files, by the paths it loaded them from */
            say("%lu of %lu events not decoded: the files they came from are gone or "
                "changed since the process loaded them; decode the dump with faultline "
                "decode --obj FILE\n",
                dc->unresolved, dc->events);
        else
            say("%lu of %lu events not decoded: give the programs and libraries they came "
                "from with --obj\n",
                dc->unresolved, dc->events);
        rc = 1;
    }
bad:
    free(line);
    free(p.bytes);
    return rc;
}

int fl_trace_decode_stream_objs(FILE *in, FILE *out, const char *const *objs, size_t nobjs)
{
    decoder dc = {.no_paths = true};
    int rc = 2;
    elf_version(EV_CURRENT);
    if (nobjs && !(dc.objs = calloc(nobjs, sizeof *dc.objs)))
        return 2;
    for (size_t i = 0; i < nobjs; i++) {
        char err[512];
        if (open_object(&dc.objs[i], objs[i], err, sizeof err)) {
            say("%s\n", err);
            goto out;
        }
        dc.nobjs++;
    }
    rc = decode_stream(&dc, in, "<input>", out);
out:
    for (size_t i = 0; i < dc.nmods; i++)
        free(dc.mods[i].path);
    free(dc.mods);
    for (size_t i = 0; i < dc.nfmts; i++)
        fl_tracesec_free(dc.fmts[i].ts);
    free(dc.fmts);
    for (size_t i = 0; i < dc.nobjs; i++)
        close_object(&dc.objs[i]);
    free(dc.objs);
    return rc;
}

int fl_trace_decode_stream(FILE *in, FILE *out)
{
    return fl_trace_decode_stream_objs(in, out, NULL, 0);
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int print_stack(const fl_ctxframe *fr, size_t n, void *arg)
{
    unsigned *k = arg;
    printf("  stack %u:\n", ++*k);
    for (size_t i = 0; i < n; i++)
        printf("    #%zu %s (%s+0x%" PRIx64 ")\n", i, fr[i].function, base_name(fr[i].module),
               fr[i].address);
    return 0;
}

/* rc, or 2 when what was printed could not be written out. */
static int flush_stdout(int rc)
{
    if (fflush(stdout) == 0)
        return rc;
    say("writing: %s\n", strerror(errno));
    return 2;
}

/* Opens path into *o if it is a file with build id `id` and a symbol
 * table; otherwise leaves *o closed. */
static bool open_symbols(object *o, const char *path, const char *id)
{
    char err[256];
    if (access(path, R_OK) || open_object(o, path, err, sizeof err))
        return false;
    if (!strcmp(o->id, id) && elf_has(o->elf, SHT_SYMTAB, 0))
        return true;
    close_object(o);
    *o = (object){.fd = -1};
    return false;
}

/* The symbol table for stripped object o: an --obj file with its build
 * id and one (its debug file), the distribution's
 * /usr/lib/debug/.build-id/xx/rest.debug, or debuginfod's debuginfo.
 * NULL: none.  A file opened here is left in *opened for the caller to
 * close. */
static Elf *symbols_for(decoder *dc, const object *o, object *opened)
{
    if (elf_has(o->elf, SHT_SYMTAB, 0))
        return NULL; /* its own */
    for (size_t i = 0; i < dc->nobjs; i++)
        if (&dc->objs[i] != o && !strcmp(dc->objs[i].id, o->id) &&
            elf_has(dc->objs[i].elf, SHT_SYMTAB, 0))
            return dc->objs[i].elf;
    char path[4096];
    snprintf(path, sizeof path, "/usr/lib/debug/.build-id/%.2s/%s.debug", o->id, o->id + 2);
    if (open_symbols(opened, path, o->id))
        return opened->elf;
    char *dpath = debuginfod_path(dc, o->id, true);
    bool found = dpath && open_symbols(opened, dpath, o->id);
    free(dpath);
    return found ? opened->elf : NULL;
}

/* The call graph of the objects, the program first: debug files only lend
 * their symbols to the stripped file with their build id.  NULL (said
 * why) when one cannot be read or none was built with
 * -finstrument-functions. */
static fl_ctxgraph *ctx_graph(decoder *dc, object *const *objs, size_t n, const char *log)
{
    fl_ctxgraph *g = fl_ctxgraph_new();
    if (!g) {
        say("out of memory\n");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        char err[512];
        if (debug_only(objs[i]->elf))
            continue;
        object dbg = {.fd = -1};
        Elf *syms = symbols_for(dc, objs[i], &dbg);
        int rc = fl_ctxgraph_add(g, objs[i]->path, objs[i]->elf, syms, err, sizeof err);
        if (dbg.elf || dbg.fd >= 0)
            close_object(&dbg);
        if (rc) {
            say("%s\n", err);
            fl_ctxgraph_free(g);
            return NULL;
        }
    }
    if (fl_ctxgraph_link(g)) {
        say("out of memory\n");
        fl_ctxgraph_free(g);
        return NULL;
    }
    if (!fl_ctxgraph_instrumented(g)) {
        if (log) /* the files were the log's, found at its paths or by build id */
            say("%s: none of the crash log's objects that were "
                            "found was built with -finstrument-functions: is the program "
                            "itself missing? give it (and its libraries) with --obj\n",
                    log);
        else
            say("no function in the files given was built with "
                            "-finstrument-functions\n");
        fl_ctxgraph_free(g);
        return NULL;
    }
    return g;
}

/* Prints the stacks that give v.  Returns 0 when there was one, 2 when
 * memory ran out, else 1. */
static int ctx_decode_one(const fl_ctxgraph *g, uint64_t v, unsigned max_depth,
                          uint64_t max_paths)
{
    if (v == 0) {
        printf("  empty: no instrumented function was active\n");
        return 0;
    }
    /* FAULTLINE_DECODE_SEARCH=deepening|mitm runs one search alone: for
     * the tests, which check each finds every stack. */
    const char *only = getenv("FAULTLINE_DECODE_SEARCH");
    int how = !only                        ? FL_CTX_AUTO
              : !strcmp(only, "mitm")      ? FL_CTX_MITM
              : !strcmp(only, "deepening") ? FL_CTX_DEEPENING
                                           : FL_CTX_AUTO;
    fl_ctxsearch s = {.max_depth = max_depth, .budget = max_paths, .strategy = how};
    unsigned k = 0;
    fflush(stdout);
    if (!fl_ctxgraph_search(g, v, &s, print_stack, &k)) {
        if (s.nomem) {
            /* The search freed what it took: the next value may fit. */
            printf("  not decoded: out of memory\n");
            say("out of memory\n");
            return 2;
        }
        if (s.complete)
            printf("  no stack found (%" PRIu64 " paths tried: all up to %u deep)\n", s.steps,
                   max_depth);
        else
            printf("  no stack found in the first %" PRIu64 " paths (raise --max-paths)\n",
                   s.steps);
        return 1;
    }
    if (!s.complete)
        printf("  (search stopped after %" PRIu64 " paths: there may be more stacks)\n", s.steps);
    return 0;
}

/* --context: each value with the graph of the objects given.  0: every
 * value gave a stack; 1: some did not; 2: no graph, or memory ran out. */
static int decode_contexts(decoder *dc, char **values, size_t nvalues, unsigned max_depth,
                           uint64_t max_paths)
{
    if (!dc->nobjs) {
        say("--context needs the program's files: --obj FILE\n");
        return 2;
    }
    uint64_t *v = calloc(nvalues, sizeof *v);
    object **objs = calloc(dc->nobjs, sizeof *objs);
    fl_ctxgraph *g = NULL;
    int rc = 2;
    if (!v || !objs)
        goto out;
    for (size_t i = 0; i < nvalues; i++) {
        char *end;
        errno = 0;
        v[i] = strtoull(values[i], &end, 16);
        if (!*values[i] || *end || errno || values[i][0] == '-') {
            say("--context %s: not a hex value\n", values[i]);
            goto out;
        }
    }
    for (size_t i = 0; i < dc->nobjs; i++)
        objs[i] = &dc->objs[i];
    if (!(g = ctx_graph(dc, objs, dc->nobjs, NULL)))
        goto out;
    rc = 0;
    for (size_t i = 0; i < nvalues; i++) {
        printf("context 0x%" PRIx64 ":\n", v[i]);
        int r = ctx_decode_one(g, v[i], max_depth, max_paths);
        if (r > rc)
            rc = r;
    }
    rc = flush_stdout(rc);
out:
    fl_ctxgraph_free(g);
    free(objs);
    free(v);
    return rc;
}

/* A crash log: the contexts of its threads, with the files --obj gave or,
 * for the objects it lists that --obj did not, the file at the path it
 * names when the build id matches.  Of the latter, only those built with
 * -finstrument-functions join the graph (the C library adds nothing but
 * time).  0: every context decoded, or there were none; 1: some not; 2:
 * none could be, or memory ran out. */
/* A crash log's trace events, when some kept their formats apart
 * (TRACE_ID lines): every event as the TRACE line the program would have
 * written without FAULTLINE_TRACE_APART.  0: all formatted; 1: some
 * not (their lines say why); 2: output failed. */
static int decode_log_trace(decoder *dc, const fl_crashlog *L)
{
    int rc = 0;
    for (size_t i = 0; i < L->ntrace; i++) {
        const fl_trace_event *e = &L->trace[i];
        char buf[FL_LINE_MAX];
        const char *text = e->text;
        if (e->apart) {
            uint64_t vaddr = 0;
            const fl_object *o = fl_crashlog_object_at(L, e->site, &vaddr);
            const char *path = o && o->path && !o->path_cut && o->path[0] == '/' ? o->path : NULL;
            fl_tracesec *ts = o && o->build_id ? formats_of(dc, o->build_id, path) : NULL;
            const char *fmt = ts ? fl_tracesec_find(ts, vaddr, NULL) : NULL;
            if (fmt)
                fl_trace_event_text(e, fmt, buf, sizeof buf);
            else
                snprintf(buf, sizeof buf, "%s",
                         !o || !o->build_id ? "<trace format kept apart: its site is in no "
                                              "object with a build id>"
                         : !ts ? "<trace format kept apart: no debug file of its object "
                                 "(give it with --obj)>"
                               : "<trace format kept apart: not in its debug file>");
            rc |= !fmt;
            text = buf;
        }
        printf("TRACE %" PRIu64 " %" PRIu64 " %s\n", e->time_ns, e->tid, text ? text : "");
        if (e->has_context)
            printf("TRACE_CONTEXT 0x%" PRIx64 "\n", e->context);
    }
    return rc;
}

static int decode_crashlog(decoder *dc, const fl_crashlog *L, const char *path,
                           unsigned max_depth, uint64_t max_paths)
{
    size_t nctx = L->has_crash_context, napart = 0;
    for (size_t i = 0; i < L->nthreads; i++)
        nctx += L->threads[i].has_context;
    for (size_t i = 0; i < L->ntrace; i++) {
        nctx += L->trace[i].has_context;
        napart += L->trace[i].apart;
    }
    if (napart) {
        int r = flush_stdout(decode_log_trace(dc, L));
        if (r || !nctx)
            return r;
    }
    if (!nctx) {
        say("%s: nothing to decode: the crash log has no calling "
                        "contexts (the program was not built with -finstrument-functions)\n",
                path);
        return 0;
    }
    /* Indices into dc->objs, which grows as files are found. */
    size_t given = dc->nobjs, cap = L->nobjects + given + 1;
    size_t *pick = calloc(cap, sizeof *pick);
    object **objs = calloc(cap, sizeof *objs);
    bool *used = calloc(given + L->nobjects + 1, sizeof *used);
    size_t n = 0;
    fl_ctxgraph *g = NULL;
    int rc = 2;
    if (!pick || !objs || !used)
        goto out;
    for (size_t i = 0; i < L->nobjects; i++) {
        const fl_object *o = &L->objects[i];
        if (!o->build_id || strlen(o->build_id) >= sizeof dc->mods[0].id)
            continue;
        /* The vdso ("linux-vdso.so.1", no file): never instrumented, and
         * not worth a debuginfod query (90 s each against one that does
         * not answer). */
        if (o->path && o->path[0] != '/')
            continue;
        struct module m = {.path = o->path_cut ? NULL : o->path}; /* a cut path names no file */
        memcpy(m.id, o->build_id, strlen(o->build_id) + 1);
        /* An --obj file with its build id, else the file at its path with
         * that build id, else the executable debuginfod has for it. */
        if (!module_object(dc, &m) || used[m.obj])
            continue;
        /* Found by path or debuginfod: only files built with
         * -finstrument-functions add to the graph (not the C library). */
        if ((size_t)m.obj >= given && !fl_ctx_elf_has_hooks(dc->objs[m.obj].elf))
            continue;
        used[m.obj] = true;
        pick[n++] = (size_t)m.obj;
    }
    for (size_t k = 0; k < given; k++)
        if (!used[k] && !dc->objs[k].from_dir) /* a build tree's others: not the crash's */
            pick[n++] = k;
    for (size_t k = 0; k < n; k++)
        objs[k] = &dc->objs[pick[k]];
    if (!n) {
        say("%s: none of the crash log's objects was found: "
                        "give the program and its libraries with --obj\n", path);
        goto out;
    }
    if (!(g = ctx_graph(dc, objs, n, given ? NULL : path)))
        goto out;
    rc = 0;
    if (L->has_crash_context) {
        printf("crashed thread %" PRIu64 "%s%s%s: context 0x%" PRIx64 "\n", L->crash_tid,
               L->crash_thread_name ? " (" : "",
               L->crash_thread_name ? L->crash_thread_name : "",
               L->crash_thread_name ? ")" : "", L->crash_context);
        int r = ctx_decode_one(g, L->crash_context, max_depth, max_paths);
        if (r > rc)
            rc = r;
    }
    for (size_t i = 0; i < L->nthreads; i++) {
        const fl_thread *t = &L->threads[i];
        if (!t->has_context)
            continue;
        printf("thread %" PRIu64 "%s%s%s: context 0x%" PRIx64 "\n", t->tid, t->name ? " (" : "",
               t->name ? t->name : "", t->name ? ")" : "", t->context);
        int r = ctx_decode_one(g, t->context, max_depth, max_paths);
        if (r > rc)
            rc = r;
    }
    /* The trace events' contexts, each value once, in order of its first
     * event. */
    for (size_t i = 0; i < L->ntrace; i++) {
        const fl_trace_event *ev = &L->trace[i];
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen = L->trace[k].has_context && L->trace[k].context == ev->context;
        if (!ev->has_context || seen)
            continue;
        size_t events = 0;
        const char *last = NULL;
        for (size_t k = i; k < L->ntrace; k++)
            if (L->trace[k].has_context && L->trace[k].context == ev->context) {
                events++;
                last = L->trace[k].text;
            }
        printf("trace context 0x%" PRIx64 ": %zu event%s, the last \"%s\"\n", ev->context, events,
               events == 1 ? "" : "s", last ? last : "");
        int r = ctx_decode_one(g, ev->context, max_depth, max_paths);
        if (r > rc)
            rc = r;
    }
    rc = flush_stdout(rc);
out:
    fl_ctxgraph_free(g);
    free(pick);
    free(objs);
    free(used);
    return rc;
}

int fl_cmd_decode(int argc, char **argv)
{
    static const struct option opts[] = {{"obj", required_argument, NULL, 'o'},
                                         {"context", required_argument, NULL, 'c'},
                                         {"max-depth", required_argument, NULL, 'd'},
                                         {"max-paths", required_argument, NULL, 'p'},
                                         {"help", no_argument, NULL, 'h'},
                                         {0, 0, 0, 0}};
    g_cmd = argc > 0 && !strcmp(argv[0], "dump") ? "dump" : "decode";
    decoder dc = {0};
    int rc = 2, c;
    char **values = NULL;
    size_t nvalues = 0;
    unsigned long max_depth = 64;
    unsigned long long max_paths = 100000000ull;
    bool dir_objs = false;
    elf_version(EV_CURRENT);
    optind = 1;
    opterr = 0; /* our own words, named "faultline decode" */
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            rc = 0;
            goto out;
        }
        if (c == 'c') {
            char **nv = realloc(values, (nvalues + 1) * sizeof *nv);
            if (!nv)
                goto out;
            values = nv;
            values[nvalues++] = optarg;
            continue;
        }
        if (c == 'd' || c == 'p') {
            char *end;
            errno = 0;
            unsigned long long n = strtoull(optarg, &end, 10);
            if (!*optarg || *end || errno || !n || (c == 'd' && n > 4096)) {
                say("--%s %s: not a number%s\n",
                        c == 'd' ? "max-depth" : "max-paths", optarg,
                        c == 'd' ? " from 1 to 4096" : " above 0");
                goto out;
            }
            if (c == 'd')
                max_depth = (unsigned long)n;
            else
                max_paths = n;
            continue;
        }
        if (c != 'o') {
            say("%s '%s'; see faultline %s --help\n",
                c == ':' ? "a value is missing after" : "unknown option", argv[optind - 1], g_cmd);
            goto out;
        }
        /* A directory: every ELF file with a build id under it. */
        fl_elf_objs found = {0};
        struct stat st;
        bool dir = stat(optarg, &st) == 0 && S_ISDIR(st.st_mode);
        char err[512];
        if (dir && fl_elf_objs_add(&found, optarg, FL_ELF_WANT_ANY, err, sizeof err) != 0) {
            say("--obj %s: %s\n", optarg, err);
            fl_elf_objs_free(&found);
            goto out;
        }
        dir_objs |= dir;
        size_t add = dir ? found.n : 1;
        object *no = realloc(dc.objs, (dc.nobjs + add) * sizeof *no);
        if (!no) {
            say("out of memory\n");
            fl_elf_objs_free(&found);
            goto out;
        }
        dc.objs = no;
        for (size_t k = 0; k < add; k++) {
            if (open_object(&dc.objs[dc.nobjs], dir ? found.o[k].path : optarg, err, sizeof err)) {
                if (dir)
                    continue; /* changed under us: passed over */
                say("%s\n", err);
                goto out;
            }
            dc.objs[dc.nobjs++].from_dir = dir;
        }
        fl_elf_objs_free(&found);
    }
    if (nvalues && dir_objs) {
        say("--context wants the files themselves, the program first (--obj FILE), not a "
            "directory; see faultline %s --help\n",
            g_cmd);
        goto out;
    }
    if (nvalues) {
        if (optind < argc) {
            say("--context takes no file ('%s'); see faultline %s --help\n", argv[optind], g_cmd);
            goto out;
        }
        rc = decode_contexts(&dc, values, nvalues, (unsigned)max_depth, max_paths);
        goto out;
    }
    if (argc - optind > 1) {
        say("one file at a time (%d given); see faultline %s --help\n", argc - optind, g_cmd);
        goto out;
    }
    const char *path = optind < argc ? argv[optind] : "-";
    /* What messages call the input: "-" is no name to a person. */
    const char *name = strcmp(path, "-") ? path : "standard input";
    dc.logs_too = !strcmp(g_cmd, "decode");
    /* The input whole (a crash log is read whole anyway; a dump is a few
     * MB at most): a crash log, or else a trace-ID dump, from a file or
     * from standard input alike. */
    struct stat st;
    if (strcmp(path, "-") && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        say("%s: is a directory\n", name);
        goto out;
    }
    FILE *in = strcmp(path, "-") ? fopen(path, "r") : stdin;
    if (!in) {
        say("%s: %s\n", name, strerror(errno));
        goto out;
    }
    size_t len = 0, cap = 0;
    char *text = NULL;
    for (;;) {
        if (cap - len < 65536) {
            char *nt = cap < (64u << 20) ? realloc(text, cap ? cap * 2 : 65536) : NULL;
            if (!nt) {
                say("%s: %s\n", name, cap < (64u << 20) ? "out of memory" : "larger than 64 MiB");
                free(text);
                if (in != stdin)
                    fclose(in);
                goto out;
            }
            text = nt;
            cap = cap ? cap * 2 : 65536;
        }
        size_t n = fread(text + len, 1, cap - len, in);
        len += n;
        if (n == 0)
            break;
    }
    bool read_err = ferror(in);
    if (in != stdin)
        fclose(in);
    if (read_err) {
        say("%s: cannot read it\n", name);
        free(text);
        goto out;
    }
    /* The first line that is not blank or a comment, as the reader has it. */
    size_t lead = 0;
    for (;;) {
        while (lead < len && (text[lead] == ' ' || text[lead] == '\t' || text[lead] == '\n' ||
                              text[lead] == '\r'))
            lead++;
        if (lead >= len || text[lead] != '#')
            break;
        while (lead < len && text[lead] != '\n')
            lead++;
    }
    if (len - lead >= 10 &&
        (!memcmp(text + lead, "FAULTLINE ", 10) || !memcmp(text + lead, "MOJOCRASH ", 10))) {
        /* A crash log: decode its calling contexts; one that does not
         * parse is said to be a bad crash log, with the reader's reason. */
        fl_crashlog *L = NULL;
        fl_crashlog_error perr;
        if (fl_crashlog_parse(text, len, &L, &perr) == 0) {
            rc = decode_crashlog(&dc, L, name, (unsigned)max_depth, max_paths);
            fl_crashlog_free(L);
        } else {
            say("%s: not a valid crash log: line %u: %s\n", name, perr.line, perr.message);
        }
        free(text);
        goto out;
    }
    FILE *mem = fmemopen(text, len ? len : 1, "r");
    if (!mem) {
        say("%s: %s\n", name, strerror(errno));
        free(text);
        goto out;
    }
    if (len == 0)
        fgetc(mem); /* fmemopen needs a size of 1 or more: read it past */
    size_t given = dc.nobjs;
    rc = decode_stream(&dc, mem, name, stdout);
    fclose(mem);
    /* An --obj that is none of the dump's modules was of no use: a wrong
     * build of the program, most likely. */
    for (size_t i = 0; i < given && rc != 2; i++) {
        if (dc.objs[i].from_dir)
            continue; /* a build tree holds more than one program's files */
        bool used = false;
        for (size_t m = 0; m < dc.nmods && !used; m++)
            used = !strcmp(dc.mods[m].id, dc.objs[i].id);
        if (!used)
            say("warning: --obj %s: its build id %s is none of the dump's modules (another "
                "build?); not used\n",
                dc.objs[i].path, dc.objs[i].id[0] ? dc.objs[i].id : "(none)");
    }
    free(text);
out:
    free(values);
    if (dc.dbg)
        debuginfod_end(dc.dbg);
    for (size_t i = 0; i < dc.nfmts; i++)
        fl_tracesec_free(dc.fmts[i].ts);
    free(dc.fmts);
    for (size_t i = 0; i < dc.nobjs; i++)
        close_object(&dc.objs[i]);
    free(dc.objs);
    for (size_t i = 0; i < dc.nmods; i++)
        free(dc.mods[i].path);
    free(dc.mods);
    return rc;
}
