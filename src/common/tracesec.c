/*
 * tracesec.c - the .debug_faultline_trace section (fl_tracesec.h).
 *
 * The section comes from uploaded or downloaded files: every entry is
 * bounds-checked, and a cut one refuses the section rather than guess
 * where the next entry starts.  A site may have several entries (its
 * function inlined or cloned repeats the asm that makes them); they are
 * the same, and the first is kept.
 */
#include "fl_tracesec.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl_tracefmt.h"

typedef struct entry {
    uint64_t site;
    uint32_t fmt, file; /* offsets into data */
} entry;

struct fl_tracesec {
    unsigned refs; /* fl_tracesec_ref, fl_tracesec_free (atomic) */
    char *data;
    entry *e;
    size_t n;
};

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && errlen)
        vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static int cmp_entry(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    if (x->site != y->site)
        return x->site < y->site ? -1 : 1;
    return x->fmt < y->fmt ? -1 : x->fmt > y->fmt; /* stable: the first entry first */
}

int fl_tracesec_parse(const void *data, size_t len, fl_tracesec **out, char *err, size_t errlen)
{
    *out = NULL;
    if (len == 0)
        return fail(err, errlen, "the section is empty");
    if (len > UINT32_MAX)
        return fail(err, errlen, "the section is larger than 4 GiB");
    fl_tracesec *ts = calloc(1, sizeof *ts);
    if (ts)
        ts->refs = 1;
    /* An entry takes 10 bytes at least: the bound on their number. */
    size_t cap = len / 10 + 1;
    if (!ts || !(ts->data = malloc(len)) || !(ts->e = malloc(cap * sizeof *ts->e))) {
        fl_tracesec_free(ts);
        return fail(err, errlen, "out of memory");
    }
    memcpy(ts->data, data, len);
    const unsigned char *d = (const unsigned char *)ts->data;
    size_t pos = 0;
    while (pos < len) {
        if (len - pos < 8)
            break;
        uint64_t site = 0;
        for (int i = 7; i >= 0; i--)
            site = site << 8 | d[pos + (size_t)i];
        size_t f = pos + 8;
        const unsigned char *z1 = memchr(d + f, 0, len - f);
        const unsigned char *z2 = z1 ? memchr(z1 + 1, 0, len - (size_t)(z1 + 1 - d)) : NULL;
        if (!z2)
            break;
        ts->e[ts->n++] = (entry){site, (uint32_t)f, (uint32_t)(z1 + 1 - d)};
        pos = (size_t)(z2 + 1 - d);
    }
    if (pos < len) {
        size_t entry_no = ts->n + 1;
        fl_tracesec_free(ts);
        return fail(err, errlen, "entry %zu (byte %zu) is cut short", entry_no, pos);
    }
    qsort(ts->e, ts->n, sizeof *ts->e, cmp_entry);
    size_t k = 0;
    for (size_t i = 0; i < ts->n; i++)
        if (!k || ts->e[k - 1].site != ts->e[i].site)
            ts->e[k++] = ts->e[i];
    ts->n = k;
    *out = ts;
    return 0;
}

const char *fl_tracesec_find(const fl_tracesec *ts, uint64_t vaddr, const char **file)
{
    size_t lo = 0, hi = ts ? ts->n : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ts->e[mid].site < vaddr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!ts || lo >= ts->n || ts->e[lo].site != vaddr)
        return NULL;
    if (file)
        *file = ts->data + ts->e[lo].file;
    return ts->data + ts->e[lo].fmt;
}

size_t fl_tracesec_count(const fl_tracesec *ts)
{
    return ts ? ts->n : 0;
}

fl_tracesec *fl_tracesec_ref(fl_tracesec *ts)
{
    if (ts)
        __atomic_add_fetch(&ts->refs, 1, __ATOMIC_RELAXED);
    return ts;
}

void fl_tracesec_free(fl_tracesec *ts)
{
    if (!ts || __atomic_sub_fetch(&ts->refs, 1, __ATOMIC_ACQ_REL))
        return;
    free(ts->data);
    free(ts->e);
    free(ts);
}

size_t fl_trace_event_text(const fl_trace_event *e, const char *fmt, char *out, size_t cap)
{
    /* The record as the program had it: its header words and slots
     * (zeros: no string starts there) and then the bytes. */
    unsigned nargs = (unsigned)strlen(e->types);
    size_t head = (5 + (size_t)nargs) * 8;
    char *rec = calloc(1, head + e->nbytes + 1);
    if (!rec) {
        int n = snprintf(out, cap, "<out of memory>");
        return cap ? ((size_t)n < cap ? (size_t)n : cap - 1) : 0;
    }
    if (e->nbytes)
        memcpy(rec + head, e->bytes, e->nbytes);
    char raw[FL_LINE_MAX];
    size_t n =
        fl_trace_format(raw, sizeof raw, fmt, e->types, nargs, e->slots, rec, head + e->nbytes);
    free(rec);
    /* Escaped as the crash log's TRACE lines are: one line, NULs shown. */
    fl_line l;
    fl_line_start(&l, "");
    fl_line_strn(&l, raw, n);
    return (size_t)snprintf(out, cap, "%s", fl_line_cstr(&l)) < cap ? strlen(out)
                                                                    : (cap ? cap - 1 : 0);
}

const fl_object *fl_crashlog_object_at(const fl_crashlog *L, uint64_t addr, uint64_t *vaddr)
{
    for (size_t i = 0; i < L->nobjects; i++) {
        const fl_object *o = &L->objects[i];
        if (addr >= o->base && addr - o->base < o->size) {
            *vaddr = addr - (o->has_bias ? o->bias : o->base);
            return o;
        }
    }
    return NULL;
}
