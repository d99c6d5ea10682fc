/*
 * trace_dump.c - the flight recorder read back: records found in the
 * rings, their sites and formats read with checked reads, their text made
 * by the shared formatter (src/common/tracefmt.c), and the lines of the
 * crash log and of faultline_trace_dump().  How records are written and
 * recognised is in trace.c.
 *
 * SIGNAL-SAFE ZONE: this runs in the crash handler, and in whatever
 * handler an application dumps from.  No heap, no locks, no stdio, no
 * libm.  Compiled for size (-Os): it runs once per dump, and the client
 * library's text has a budget (docs/client.md).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h> /* rename() only: a system call wrapper */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fl_client.h"
#include "fl_safemem.h"
#include "fl_trace.h"

/* ---- reading the rings */

/* rec: a copy of the record, in a buffer of FL_REC_MAX_WORDS words (the
 * callee may use what the record leaves free). */
typedef int (*line_fn)(void *ctx, char *rec);

/* The length in words of the complete record at absolute position pos,
 * or 0 when there is none there.  With rec, also copies it, and answers 0
 * when a writer claimed the space over it while it was copied.  The
 * check after the copy is a seqlock reader's: an acquire fence (free on
 * x86), then the head. */
static uint64_t read_record(const fl_ring *r, uint64_t pos, uint64_t *rec)
{
    if ((pos & r->mask) + FL_W_ARGS > r->mask + 1)
        return 0; /* no room for a header before the ring's end */
    const uint64_t *w = r->w + (pos & r->mask);
    uint64_t stamp = __atomic_load_n(&w[FL_W_STAMP], __ATOMIC_ACQUIRE);
    uint64_t meta = __atomic_load_n(&w[FL_W_META], __ATOMIC_RELAXED);
    uint64_t nw = meta & 0xffff;
    if ((meta >> 32) != (pos & 0xffffffff) || nw < FL_W_ARGS || nw > FL_REC_MAX_WORDS ||
        (pos & r->mask) + nw > r->mask + 1)
        return 0;
    uint64_t sum = 0;
    for (unsigned i = FL_W_META; i < nw; i++) {
        uint64_t v = __atomic_load_n(&w[i], __ATOMIC_RELAXED);
        if (rec)
            rec[i] = v;
        sum = fl_trace_sum(sum, i, v);
    }
    if (stamp != fl_trace_stamp(pos, sum))
        return 0; /* no record starts here, or it is not whole */
    if (!rec)
        return nw;
    rec[FL_W_STAMP] = stamp;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    uint64_t head = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
    if (head > pos + r->mask + 1)
        return 0; /* claimed over while we copied */
    return nw;
}

/* Calls fn for each complete record, oldest first, skipping the first
 * `skip` (which are only recognised, not copied).  Returns the number of
 * records seen, or -1 when fn failed. */
static long walk(const fl_ring *r, long skip, line_fn fn, void *ctx)
{
    uint64_t rec[FL_REC_MAX_WORDS];
    uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
    uint64_t pos = head > r->mask + 1 ? head - (r->mask + 1) : 0;
    long seen = 0;
    while (pos < head) {
        bool want = fn && seen >= skip;
        uint64_t nw = read_record(r, pos, want ? rec : NULL);
        if (!nw) {
            pos++;
            continue;
        }
        /* The stamp has served: the callee gets the position instead. */
        if (want)
            rec[FL_W_STAMP] = pos;
        pos += nw;
        seen++;
        if (want && fn(ctx, (char *)rec) < 0)
            return -1;
    }
    return seen;
}

/* ---- lines */

typedef struct emit {
    int (*line)(void *, const char *);
    void *ctx;
    bool ids; /* trace events as TRACE_ID lines (the trace-ID dump) */
    fl_line l;
    /* A site's format, copied here for the formatter: as long as a line
     * (`faultline decode` reads as much), not on the stack of a thread
     * that dumps. */
    char fmt[FL_LINE_MAX];
} emit;

/* Reads n bytes at addr (site or format memory): every time with a
 * checked read that copies as it checks, never a plain copy after an
 * earlier check, since another thread may dlclose() the object that holds
 * them at any moment of the dump. */
static int dump_read(void *dst, uint64_t addr, size_t n)
{
    return fl_safe_read_fresh(dst, addr, n);
}

/* A NUL-terminated string at addr (a format, a hard-coded argument),
 * copied in chunks that end at its page's end (the next page may be
 * unmapped) and stop at its NUL.  Returns its length, or -1. */
static long dump_cstr(char *dst, size_t cap, uint64_t addr)
{
    size_t n = 0;
    while (n + 1 < cap) {
        uint64_t a = addr + n;
        size_t c = 4096 - (a & 4095);
        if (c > 256) /* most strings are shorter: one call each */
            c = 256;
        if (c > cap - 1 - n)
            c = cap - 1 - n;
        if (dump_read(dst + n, a, c))
            return -1;
        size_t l = fl_strnlen(dst + n, c);
        n += l;
        if (l < c)
            return (long)n;
    }
    dst[n] = '\0';
    return (long)n;
}

/* Hands the line composed in e->l to the dump's writer: 0, or -1 when
 * it failed. */
static int emit_line(emit *e)
{
    return e->line(e->ctx, fl_line_cstr(&e->l));
}

/* Starts an event's line: "key time tid ". */
static void event_start(emit *e, const char *key, const uint64_t *rec)
{
    fl_line_start(&e->l, key);
    fl_line_u64(&e->l, rec[FL_W_TIME]);
    fl_line_char(&e->l, ' ');
    fl_line_u64(&e->l, FL_TID(rec));
    fl_line_char(&e->l, ' ');
}

/* TRACE_BYTES lines with bytes [from, to) of the record, 1024 a line. */
static int emit_bytes(emit *e, const char *recp, size_t from, size_t to)
{
    for (size_t off = from; off < to; off += 1024) {
        fl_line_start(&e->l, "TRACE_BYTES");
        fl_line_hexbytes(&e->l, recp + off, to - off < 1024 ? to - off : 1024);
        if (emit_line(e) < 0)
            return -1;
    }
    return 0;
}

/* TRACE_CONTEXT after an event recorded with its calling context. */
static int emit_context(emit *e, const uint64_t *rec)
{
    if (!(rec[FL_W_META] >> 24 & FL_KIND_CTX))
        return 0;
    fl_line_start(&e->l, "TRACE_CONTEXT");
    fl_line_hex(&e->l, rec[(rec[FL_W_META] & 0xffff) - 1]);
    return emit_line(e);
}

/* An event whose site keeps its format apart (FAULTLINE_TRACE_APART): the
 * crash log's TRACE_ID line, "TRACE_ID time tid site types slot...", site
 * as the process had it (the reader finds its object by the OBJECT lines),
 * types the site's codes ("-": none), then TRACE_BYTES lines with the
 * strings, which start after the record's header words and slots: copied
 * ones where the record has them, hard-coded ones read here and put after
 * those (their slots rewritten to match), so that no reader needs this
 * process's memory. */
static int emit_apart(emit *e, const uint64_t *rec, const char *recp, const char *types,
                      unsigned nargs, const uint64_t *slots, size_t used)
{
    event_start(e, "TRACE_ID", rec);
    fl_line_hex(&e->l, rec[FL_W_SITE]);
    fl_line_char(&e->l, ' ');
    if (!nargs)
        fl_line_char(&e->l, '-');
    for (unsigned i = 0; i < nargs; i++) /* codes are letters; anything else would split */
        fl_line_char(&e->l, types[i] > ' ' && types[i] < 0x7f ? types[i] : '?');
    for (unsigned i = 0; i < nargs; i++) {
        fl_line_char(&e->l, ' ');
        fl_line_hex(&e->l, slots[i]);
    }
    if (emit_line(e) < 0)
        return -1;
    return emit_bytes(e, recp, (FL_W_ARGS + nargs) * 8, used);
}

/* The event's site belonged to an object dlclose()d after it was
 * recorded (fl_unloads): what is at that address now is not its site. */
static bool site_gone(const uint64_t *rec)
{
    for (unsigned i = 0; i < FL_UNLOADS; i++) {
        const fl_unload *u = &fl_unloads[i];
        uint64_t h = __atomic_load_n(&u->head, __ATOMIC_ACQUIRE);
        uint64_t lo = __atomic_load_n(&u->lo, __ATOMIC_ACQUIRE);
        uint64_t hi = __atomic_load_n(&u->hi, __ATOMIC_ACQUIRE);
        if (h && __atomic_load_n(&u->head, __ATOMIC_ACQUIRE) == h && rec[FL_W_STAMP] + 1 < h &&
            rec[FL_W_SITE] >= lo && rec[FL_W_SITE] < hi)
            return true;
    }
    return false;
}

static int emit_trace(void *arg, char *recp)
{
    emit *e = arg;
    const uint64_t *rec = (const uint64_t *)(const void *)recp;
    unsigned nargs = (unsigned)(rec[FL_W_META] >> 16 & 0xff);
    size_t recbytes = (rec[FL_W_META] & 0xffff) * 8;
    struct faultline_trace_site site;
    char *fmt = e->fmt, text[FL_LINE_MAX];
    size_t len;
    if (site_gone(rec) || dump_read(&site, rec[FL_W_SITE], sizeof site) ||
        (site.fmt && dump_cstr(fmt, sizeof e->fmt, (uint64_t)(uintptr_t)site.fmt) < 0)) {
        len = fl_strlcpy(text, "<trace site unreadable>", sizeof text);
    } else {
        site.types[FAULTLINE_TRACE_MAX_ARGS] = '\0';
        if (nargs > site.nargs)
            nargs = site.nargs;
        /* Hard-coded strings are read where they are, into the buffer after
         * the record's own strings, where the formatter finds them by
         * offset as it finds the copied ones.  There is room: the buffer
         * has FAULTLINE_TRACE_MAX_STR + 1 bytes and more for every slot,
         * and a kept string took none of it. */
        uint64_t slots[FAULTLINE_TRACE_MAX_ARGS];
        size_t used = recbytes;
        memcpy(slots, rec + FL_W_ARGS, nargs * sizeof *slots);
        for (unsigned i = 0; i < nargs; i++) {
            if (!FL_STATIC(rec, i) || site.types[i] != 's')
                continue;
            long n = fl_ro_alive(slots[i])
                         ? dump_cstr(recp + used, FAULTLINE_TRACE_MAX_STR + 1, slots[i])
                         : -1;
            if (n < 0)
                n = (long)fl_strlcpy(recp + used, "<string unreadable>",
                                     FAULTLINE_TRACE_MAX_STR + 1);
            slots[i] = used;
            used += (size_t)n + 1;
        }
        if (!site.fmt) {
            if (emit_apart(e, rec, recp, site.types, nargs, slots, used) < 0)
                return -1;
            return emit_context(e, rec);
        }
        len = fl_trace_format(text, sizeof text, fmt, site.types, nargs, slots, recp, used);
    }
    event_start(e, "TRACE", rec);
    fl_line_strn(&e->l, text, len);
    if (emit_line(e) < 0)
        return -1;
    return emit_context(e, rec);
}

static int emit_crumb(void *arg, char *recp)
{
    emit *e = arg;
    const uint64_t *rec = (const uint64_t *)(const void *)recp;
    size_t recbytes = (rec[FL_W_META] & 0xffff) * 8;
    if ((rec[FL_W_META] >> 16 & 0xff) != 2 || rec[FL_W_ARGS] >= recbytes ||
        rec[FL_W_ARGS + 1] >= recbytes)
        return 0;
    const char *cat = recp + rec[FL_W_ARGS], *msg = recp + rec[FL_W_ARGS + 1];
    size_t cl = fl_strnlen(cat, recbytes - rec[FL_W_ARGS]);
    size_t ml = fl_strnlen(msg, recbytes - rec[FL_W_ARGS + 1]);
    fl_line_start(&e->l, "BREADCRUMB");
    fl_line_u64(&e->l, rec[FL_W_TIME] / 1000000);
    fl_line_char(&e->l, ' ');
    if (!cl)
        fl_line_char(&e->l, '-');
    for (size_t i = 0; i < cl; i++) /* one word: the reader splits on blanks */
        fl_line_char(&e->l, (unsigned char)cat[i] <= ' ' || cat[i] == 0x7f ? '_' : cat[i]);
    fl_line_char(&e->l, ' ');
    fl_line_strn(&e->l, msg, ml);
    return emit_line(e);
}

static int emit_state(emit *e)
{
    static const char *const keys[2] = {"STATE_KEY", "STATE_VALUE"};
    for (int i = 0; i < FAULTLINE_STATE_MAX; i++) {
        char key[FL_STATE_KEY_MAX], value[FL_STATE_VALUE_MAX];
        bool got = false;
        for (int tries = 0; tries < 100 && !got; tries++) {
            unsigned s0 = __atomic_load_n(&fl_trace_state[i].seq, __ATOMIC_ACQUIRE);
            if (s0 & 1)
                continue;
            bool used = __atomic_load_n(&fl_trace_state[i].used, __ATOMIC_RELAXED);
            memcpy(key, fl_trace_state[i].key, sizeof key);
            memcpy(value, fl_trace_state[i].value, sizeof value);
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
            if (__atomic_load_n(&fl_trace_state[i].seq, __ATOMIC_RELAXED) != s0)
                continue;
            if (!used)
                break;
            got = true;
        }
        if (!got)
            continue;
        key[sizeof key - 1] = value[sizeof value - 1] = '\0';
        const char *kv[2] = {key, value};
        for (int k = 0; k < 2; k++) {
            fl_line_start(&e->l, keys[k]);
            fl_line_str(&e->l, kv[k]);
            if (emit_line(e) < 0)
                return -1;
        }
    }
    return 0;
}

/* State, then the newest max_crumbs breadcrumbs and max_traces trace
 * events (< 0: all), oldest first. */
/* ---- the trace-ID dump: each event as its site's module and address in
 * that module, and its raw argument words; `faultline decode` makes the
 * text from the module's file.  No site or format is read here. */

/* The module of a runtime address: its index in fl_mods and the address
 * as the object's file has it; -1 when none (before install, or gone). */
static int module_of(uint64_t addr, uint64_t *vaddr)
{
    for (size_t i = 0; i < fl_mods.count; i++)
        if (addr >= fl_mods.mods[i].start && addr < fl_mods.mods[i].end) {
            *vaddr = addr - fl_mods.mods[i].bias;
            return (int)i;
        }
    *vaddr = addr;
    return -1;
}

static int emit_trace_id(void *arg, char *recp)
{
    emit *e = arg;
    const uint64_t *rec = (const uint64_t *)(const void *)recp;
    unsigned nargs = (unsigned)(rec[FL_W_META] >> 16 & 0xff);
    size_t recbytes = (rec[FL_W_META] & 0xffff) * 8, strs = (FL_W_ARGS + nargs) * 8;
    if (rec[FL_W_META] >> 24 & FL_KIND_CTX)
        recbytes -= 8; /* the context: a line of its own */
    uint64_t vaddr;
    int mod = module_of(rec[FL_W_SITE], &vaddr);
    if (site_gone(rec)) { /* not the module there now */
        mod = -1;
        vaddr = rec[FL_W_SITE];
    }
    event_start(e, "TRACE_ID", rec);
    if (mod < 0)
        fl_line_char(&e->l, '-');
    else
        fl_line_u64(&e->l, (uint64_t)mod);
    fl_line_char(&e->l, ' ');
    fl_line_hex(&e->l, vaddr);
    fl_line_char(&e->l, ' ');
    fl_line_u64(&e->l, nargs);
    for (unsigned i = 0; i < nargs; i++) {
        fl_line_char(&e->l, ' ');
        if (FL_STATIC(rec, i)) {
            /* A hard-coded string: where it is in its object's file. */
            uint64_t sv;
            int sm = fl_ro_alive(rec[FL_W_ARGS + i]) ? module_of(rec[FL_W_ARGS + i], &sv) : -1;
            if (sm < 0)
                sv = rec[FL_W_ARGS + i];
            fl_line_char(&e->l, '@');
            if (sm < 0)
                fl_line_char(&e->l, '-');
            else
                fl_line_u64(&e->l, (uint64_t)sm);
            fl_line_char(&e->l, ':');
            fl_line_hex(&e->l, sv);
        } else {
            fl_line_hex(&e->l, rec[FL_W_ARGS + i]);
        }
    }
    /* The copied strings, as the record holds them (the slots are offsets
     * from the record's start), on lines of their own. */
    if (emit_line(e) < 0 || emit_bytes(e, recp, strs, recbytes) < 0)
        return -1;
    return emit_context(e, rec);
}

static int emit_modules(emit *e)
{
    for (size_t i = 0; i < fl_mods.count; i++) {
        const fl_module *m = &fl_mods.mods[i];
        fl_line_start(&e->l, "MODULE");
        fl_line_u64(&e->l, i);
        fl_line_char(&e->l, ' ');
        if (m->build_id_len)
            fl_line_hexbytes(&e->l, m->build_id, m->build_id_len);
        else
            fl_line_char(&e->l, '-');
        fl_line_char(&e->l, ' ');
        fl_line_str(&e->l, fl_mods.pool + m->path_off);
        if (emit_line(e) < 0)
            return -1;
        /* The path is its end only (OBJECT_PATH_CUT in a crash log): no
         * reader may take it for the file. */
        if (m->path_cut) {
            fl_line_start(&e->l, "MODULE_PATH_CUT");
            fl_line_u64(&e->l, m->path_cut);
            if (emit_line(e) < 0)
                return -1;
        }
    }
    return 0;
}

static int dump_all(emit *e, long max_crumbs, long max_traces)
{
    if (emit_state(e) < 0)
        return -1;
    long n = walk(&fl_crumbs, 0, NULL, NULL);
    if (walk(&fl_crumbs, max_crumbs >= 0 && n > max_crumbs ? n - max_crumbs : 0, emit_crumb, e) < 0)
        return -1;
    n = walk(&fl_traces, 0, NULL, NULL);
    if (walk(&fl_traces, max_traces >= 0 && n > max_traces ? n - max_traces : 0,
             e->ids ? emit_trace_id : emit_trace, e) < 0)
        return -1;
    return 0;
}

static int line_to_writer(void *ctx, const char *s)
{
    (void)ctx;
    return fl_write_line(s) ? 0 : -1;
}

/* Static: the crash handler's stack is small, and only one crash log is
 * written at a time. */
static emit crash_emit;

int fl_trace_crashlog(void)
{
    crash_emit.line = line_to_writer;
    crash_emit.ctx = NULL;
    crash_emit.ids = false;
    return dump_all(&crash_emit, FL_TRACE_LOG_CRUMBS, (long)fl_g.trace_events) < 0 ? 0 : 1;
}

/* Lines for faultline_trace_dump(), gathered into writes of up to 8 KiB
 * (one write per line cost more than the formatting). */
typedef struct fdctx {
    int fd;
    int lines;
    size_t len;
    char buf[8192];
    emit e;
} fdctx;

static int flush_fd(fdctx *c)
{
    if (fl_write_all(c->fd, c->buf, c->len) != 0)
        return -1;
    c->len = 0;
    return 0;
}

static int line_to_fd(void *ctx, const char *s)
{
    fdctx *c = ctx;
    size_t n = fl_strnlen(s, FL_LINE_MAX + 1);
    if (c->len + n + 1 > sizeof c->buf && flush_fd(c))
        return -1;
    memcpy(c->buf + c->len, s, n);
    c->buf[c->len + n] = '\n';
    c->len += n + 1;
    c->lines++;
    return 0;
}

/* Both dumps: ids selects the trace-ID form; c holds the output buffer. */
static int dump_fd(int fd, bool ids, fdctx *cp)
{
    /* The caller's, not static: two threads (or a handler and the code it
     * interrupted) may dump at once. */
    fdctx *c = cp;
    emit *e = &c->e;
    c->fd = fd;
    c->lines = 0;
    c->len = 0;
    e->line = line_to_fd;
    e->ctx = c;
    e->ids = ids;
    int saved = errno;
    int rc = 0;
    if (ids) {
        /* Objects loaded since install join the table; one dump at a time
         * refreshes it (the crash handler does the same, after it has
         * stopped the other threads). */
        static int refreshing;
        if (fl_mods.count && !__atomic_exchange_n(&refreshing, 1, __ATOMIC_ACQUIRE)) {
            fl_modules_refresh();
            __atomic_store_n(&refreshing, 0, __ATOMIC_RELEASE);
        }
        rc = line_to_fd(c, "FAULTLINE_TRACE_DUMP 1");
        if (rc == 0)
            rc = emit_modules(e);
    }
    if (rc == 0)
        rc = dump_all(e, -1, -1);
    if (rc == 0 && ids)
        rc = line_to_fd(c, "END");
    if (rc == 0 && c->len)
        rc = flush_fd(c);
    errno = saved;
    return rc < 0 ? -1 : c->lines;
}

FL_EXPORT int faultline_trace_dump(int fd)
{
    fdctx c;
    return dump_fd(fd, true, &c);
}

FL_EXPORT int faultline_trace_dump_text(int fd)
{
    fdctx c;
    return dump_fd(fd, false, &c);
}

/* Appends s at p; returns the new end. */
static char *put(char *p, const char *s)
{
    while (*s)
        *p++ = *s++;
    return p;
}

/* The trace trigger (FAULTLINE_TRACE_SIGNAL, installed by
 * faultline_install): `faultline dump PID` asks a running process for its
 * flight recorder.  It sends the signal with sigqueue()'s SI_QUEUE and a
 * number of its choosing, which names the file: the trace-ID dump goes
 * into the spool as trace-N.tracedump (written as .part, then renamed).
 * The signal from anyone else is ignored, and so is one during a crash
 * (the crash handler owns the module table then).  One dump at a time,
 * with static buffers, so that a thread with a small stack is not put at
 * risk.  Nothing is formatted here: a hung process is disturbed as little
 * as a dump can. */
void fl_trace_signal(int sig, siginfo_t *si, void *uc)
{
    static int busy;
    static fdctx out;
    static char fin[FL_PATH_MAX + 40], tmp[sizeof fin + 8];
    (void)sig;
    (void)uc;
    if (si->si_code != SI_QUEUE || fl_crash_owner ||
        __atomic_exchange_n(&busy, 1, __ATOMIC_ACQUIRE))
        return;
    int saved = errno;
    char *p = put(put(fin, fl_g.spool), "/trace-");
    p += fl_fmt_u64(p, (uint32_t)si->si_value.sival_int);
    *put(p, ".tracedump") = '\0';
    *put(put(tmp, fin), ".part") = '\0';
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
        int ok = dump_fd(fd, true, &out) > 0;
        /* rename() and unlinkat(), which the spool imports anyway: no
         * import of its own in a library with a budget */
        if ((close(fd) | !ok) || rename(tmp, fin))
            unlinkat(AT_FDCWD, tmp, 0);
    }
    errno = saved;
    __atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
}
