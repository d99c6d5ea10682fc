/*
 * trace_dump.c - the flight recorder read back: the printf-like formatter
 * that makes the text of a trace event from its recorded slots, and the
 * lines of the crash log and of faultline_trace_dump().  How records are
 * written and recognised is in trace.c.
 *
 * SIGNAL-SAFE ZONE: this runs in the crash handler, and in whatever
 * handler an application dumps from.  No heap, no locks, no stdio, no
 * libm.  Compiled for size (-Os): it runs once per dump, and the client
 * library's text has a budget (docs/client.md).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "fl_client.h"
#include "fl_safemem.h"
#include "fl_trace.h"

/* ---- the formatter: printf's conversions over the recorded slots */

typedef struct obuf {
    char *p;
    size_t len, cap;
} obuf;

static void oc(obuf *o, char c)
{
    if (o->len < o->cap)
        o->p[o->len++] = c;
}

static void os(obuf *o, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        oc(o, s[i]);
}

static void opad(obuf *o, char c, long n)
{
    for (; n > 0; n--)
        oc(o, c);
}

typedef struct spec {
    bool minus, plus, space, hash, zero;
    long width, prec; /* prec < 0: none */
    int lenbits;      /* 8 or 16 for hh / h, else 0 */
    char conv;
} spec;

/* The body of a field (sign/prefix, then digits) padded to the width. */
static void ofield(obuf *o, const spec *sp, const char *prefix, size_t plen, const char *body,
                   size_t blen, long zeros)
{
    long total = (long)plen + zeros + (long)blen;
    long pad = sp->width > total ? sp->width - total : 0;
    if (!sp->minus && !sp->zero)
        opad(o, ' ', pad);
    os(o, prefix, plen);
    if (!sp->minus && sp->zero)
        opad(o, '0', pad);
    opad(o, '0', zeros);
    os(o, body, blen);
    if (sp->minus)
        opad(o, ' ', pad);
}

static size_t utoa_base(char *end, uint64_t v, unsigned base, bool upper)
{
    const char *dig = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    size_t n = 0;
    do {
        *--end = dig[v % base];
        v /= base;
        n++;
    } while (v);
    return n;
}

static void ofmt_int(obuf *o, spec sp, uint64_t raw, char type)
{
    unsigned bits = type == 'i' || type == 'u' ? 32 : 64;
    if (sp.lenbits)
        bits = (unsigned)sp.lenbits;
    bool sgn = sp.conv == 'd' || sp.conv == 'i';
    uint64_t v = raw;
    bool neg = false;
    if (bits < 64) {
        uint64_t m = (1ull << bits) - 1;
        v &= m;
        if (sgn && (v >> (bits - 1)) & 1) {
            neg = true;
            v = ((~v) & m) + 1;
        }
    } else if (sgn && (int64_t)v < 0) {
        neg = true;
        v = -v;
    }
    char buf[32], *end = buf + sizeof buf;
    unsigned base = sp.conv == 'o' ? 8 : sp.conv == 'x' || sp.conv == 'X' ? 16 : 10;
    size_t n = sp.prec == 0 && v == 0 ? 0 : utoa_base(end, v, base, sp.conv == 'X');
    char pre[3];
    size_t pl = 0;
    if (sgn && neg)
        pre[pl++] = '-';
    else if (sgn && sp.plus)
        pre[pl++] = '+';
    else if (sgn && sp.space)
        pre[pl++] = ' ';
    long zeros = sp.prec > (long)n ? sp.prec - (long)n : 0;
    if (sp.hash && base == 16 && v) {
        pre[pl++] = '0';
        pre[pl++] = sp.conv;
    }
    if (sp.hash && base == 8 && zeros == 0 && (n == 0 || end[-(long)n] != '0'))
        zeros = 1;
    if (sp.prec >= 0)
        sp.zero = false;
    ofield(o, &sp, pre, pl, end - n, n, zeros);
}

/* Floating point, without libm.  The digits are an integer: round(v *
 * 10^k), rounded half to even on the exact product (as glibc rounds the
 * exact binary value), so 0.95 with %.1f gives 0.9 like printf: v * 10^k
 * is computed exactly as the sum of two doubles (Dekker's product; trace.c
 * is compiled with -ffp-contract=off so the compiler does not fuse it).
 * Exact while 10^|k| is (|k| <= 22) and the result fits 17 digits; beyond
 * that the digits are approximate (a %f of a number above 1.8e19 shows
 * its first 18 digits, then zeros). */
static const double pow10d[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                  1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                  1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static void split(double a, double *hi, double *lo)
{
    double c = 134217729.0 * a; /* 2^27 + 1 */
    double ab = c - a;
    *hi = c - ab;
    *lo = a - *hi;
}

/* a * b == *p + *e exactly (no overflow assumed). */
static void two_prod(double a, double b, double *p, double *e)
{
    double ah, al, bh, bl;
    *p = a * b;
    split(a, &ah, &al);
    split(b, &bh, &bl);
    *e = ((ah * bh - *p) + ah * bl + al * bh) + al * bl;
}

/* Rounds r + a + ef (a in [0, 1), ef in (-1, 1), exact doubles) to the
 * nearest integer, half to even.  Each comparison is the sign of a sum of
 * two doubles of which one is exact, which rounding cannot flip. */
static uint64_t round_parts(uint64_t r, double a, double ef)
{
    double d;
    if (a + ef < 0) {
        r--;
        d = (a + 0.5) + ef;
    } else if ((a - 1.0) + ef >= 0) {
        r++;
        d = (a - 1.5) + ef;
    } else {
        d = (a - 0.5) + ef;
    }
    if (d > 0 || (d == 0 && (r & 1)))
        r++;
    return r;
}

/* round(v * 10^k) for finite v >= 0; false when it would not fit 2^63. */
static bool scaled_round(double v, int k, uint64_t *out)
{
    double p, e;
    if (k >= 0 && k <= 22) {
        two_prod(v, pow10d[k], &p, &e); /* v * 10^k == p + e */
        if (p >= 9.2e18)
            return false;
        uint64_t r = (uint64_t)p;
        int64_t ei = (int64_t)e;
        *out = round_parts(r + (uint64_t)ei, p - (double)r, e - (double)ei);
        return true;
    }
    if (k < 0 && k >= -22) {
        double q = v / pow10d[-k];
        if (q >= 9.2e18)
            return false;
        uint64_t r = (uint64_t)q;
        if (q < 4503599627370496.0) { /* 2^52: r + 0.5 is exact */
            /* The sign of v - (r + 0.5) * 10^-k, computed exactly. */
            two_prod((double)r + 0.5, pow10d[-k], &p, &e);
            double s = (v - p) - e;
            if (s > 0 || (s == 0 && (r & 1)))
                r++;
        } else if (q - (double)r >= 0.5) {
            r++;
        }
        *out = r;
        return true;
    }
    if (k > 22 && k <= 44) {
        /* Twice: (p + e) * 10^(k-22), with e's product rounded (2^-106
         * of the value: it can only misplace an exact tie). */
        double p2, e2;
        two_prod(v, 1e22, &p, &e);
        two_prod(p, pow10d[k - 22], &p2, &e2);
        e2 += e * pow10d[k - 22];
        if (p2 >= 9.2e18)
            return false;
        uint64_t r = (uint64_t)p2;
        int64_t ei = (int64_t)e2;
        *out = round_parts(r + (uint64_t)ei, p2 - (double)r, e2 - (double)ei);
        return true;
    }
    double q = v;
    for (int i = 0; i < k; i++)
        q *= 10;
    for (int i = 0; i > k; i--)
        q /= 10;
    if (q >= 9.2e18)
        return false;
    uint64_t r = (uint64_t)q;
    *out = q - (double)r >= 0.5 ? r + 1 : r;
    return true;
}

static const uint64_t pow10u[] = {1ull,
                                  10ull,
                                  100ull,
                                  1000ull,
                                  10000ull,
                                  100000ull,
                                  1000000ull,
                                  10000000ull,
                                  100000000ull,
                                  1000000000ull,
                                  10000000000ull,
                                  100000000000ull,
                                  1000000000000ull,
                                  10000000000000ull,
                                  100000000000000ull,
                                  1000000000000000ull,
                                  10000000000000000ull,
                                  100000000000000000ull,
                                  1000000000000000000ull};

static size_t put_u64(char *buf, size_t n, size_t cap, uint64_t v)
{
    char t[24], *te = t + sizeof t;
    size_t tn = utoa_base(te, v, 10, false);
    for (size_t i = 0; i < tn && n < cap; i++)
        buf[n++] = te[(long)i - (long)tn];
    return n;
}

/* |v| with prec decimals: "123.45". */
static size_t fixed_digits(char *buf, size_t cap, double v, long prec, bool hash)
{
    size_t n = 0;
    long p = prec > 22 ? 22 : prec;
    uint64_t r = 0;
    while (!scaled_round(v, (int)p, &r) && p > 0)
        p--; /* the digits past a double's precision are zeros */
    char d[48];
    size_t dn;
    if (p == 0 && !scaled_round(v, 0, &r)) {
        /* Beyond 63 bits: 18 leading digits, then zeros. */
        int e = 0;
        while (v >= 1e18) {
            v /= 10;
            e++;
        }
        n = put_u64(buf, n, cap, (uint64_t)v);
        for (; e > 0 && n < cap; e--)
            buf[n++] = '0';
        dn = 0;
    } else {
        /* r's digits, zero-padded to p + 1: the last p are the decimals. */
        char t[24], *te = t + sizeof t;
        size_t tn = utoa_base(te, r, 10, false);
        dn = 0;
        for (; dn + tn < (size_t)p + 1; dn++)
            d[dn] = '0';
        memcpy(d + dn, te - tn, tn);
        dn += tn;
        for (size_t i = 0; i < dn - (size_t)p && n < cap; i++)
            buf[n++] = d[i];
    }
    if (prec > 0 || hash) {
        if (n < cap)
            buf[n++] = '.';
        for (size_t i = dn ? dn - (size_t)p : 0; i < dn && n < cap; i++)
            buf[n++] = d[i];
        for (long i = dn ? p : 0; i < prec && n < cap; i++)
            buf[n++] = '0';
    }
    return n;
}

/* |v| (> 0 or 0) as d.ddd (prec decimals) and its decimal exponent. */
static size_t exp_digits(char *buf, size_t cap, double v, long prec, bool hash, int *exp10)
{
    long p = prec > 17 ? 17 : prec;
    int e = 0;
    uint64_t m = 0;
    if (v != 0) {
        for (double t = v; t >= 10; t /= 10)
            e++;
        for (double t = v; t < 1; t *= 10)
            e--;
        /* The estimate may be one off either way, and rounding may carry
         * into another digit (9.99 -> 10.0): settle on m in
         * [10^p, 10^(p+1)). */
        for (int tries = 0; tries < 4; tries++) {
            if (!scaled_round(v, (int)(p - e), &m))
                m = pow10u[p + 1];
            if (m >= pow10u[p + 1])
                e++;
            else if (m < pow10u[p])
                e--;
            else
                break;
        }
    }
    size_t n = 0;
    char d[24], *de = d + sizeof d;
    size_t dn = utoa_base(de, m, 10, false);
    const char *digits = de - dn;
    if (n < cap)
        buf[n++] = digits[0];
    if (prec > 0 || hash) {
        if (n < cap)
            buf[n++] = '.';
        for (size_t i = 1; i < dn && n < cap; i++)
            buf[n++] = digits[i];
        for (long i = (long)dn - 1; i < prec && n < cap; i++)
            buf[n++] = '0';
    }
    *exp10 = e;
    return n;
}

static void ofmt_float(obuf *o, spec sp, double v)
{
    bool upper = sp.conv == 'F' || sp.conv == 'E' || sp.conv == 'G' || sp.conv == 'A';
    char c = (char)(sp.conv | 0x20);
    if (c == 'a') /* hexadecimal floats: printed as %e */
        c = 'e';
    char pre[1];
    size_t pl = 0;
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    bool neg = bits >> 63; /* -0.0 and -nan too, as printf shows them */
    if (neg) {
        pre[pl++] = '-';
        v = -v;
    } else if (sp.plus) {
        pre[pl++] = '+';
    } else if (sp.space) {
        pre[pl++] = ' ';
    }
    if (v != v || v > 1.7976931348623157e308) {
        sp.zero = false;
        ofield(o, &sp, pre, pl, v != v ? (upper ? "NAN" : "nan") : (upper ? "INF" : "inf"), 3, 0);
        return;
    }
    long prec = sp.prec < 0 ? 6 : sp.prec;
    char buf[1100];
    size_t n;
    int e = 0;
    if (c == 'f') {
        n = fixed_digits(buf, sizeof buf, v, prec, sp.hash);
    } else {
        bool strip = false;
        if (c == 'g') {
            long P = prec ? prec : 1;
            exp_digits(buf, sizeof buf, v, P - 1, false, &e);
            if (P > e && e >= -4) {
                n = fixed_digits(buf, sizeof buf, v, P - 1 - e, sp.hash);
                c = 'f';
            } else {
                n = exp_digits(buf, sizeof buf, v, P - 1, sp.hash, &e);
            }
            strip = !sp.hash;
        } else {
            n = exp_digits(buf, sizeof buf, v, prec, sp.hash, &e);
        }
        if (strip && memchr(buf, '.', n)) {
            while (n && buf[n - 1] == '0')
                n--;
            if (n && buf[n - 1] == '.')
                n--;
        }
        if (c != 'f' && n + 5 < sizeof buf) {
            buf[n++] = upper ? 'E' : 'e';
            buf[n++] = e < 0 ? '-' : '+';
            unsigned ae = (unsigned)(e < 0 ? -e : e);
            if (ae >= 100)
                buf[n++] = (char)('0' + ae / 100);
            buf[n++] = (char)('0' + ae / 10 % 10);
            buf[n++] = (char)('0' + ae % 10);
        }
    }
    ofield(o, &sp, pre, pl, buf, n, 0);
}

/* The text of one record: fmt applied to its slots. */
static void format_record(obuf *o, const char *fmt, const char *types, unsigned nargs,
                          const uint64_t *rec, size_t recbytes)
{
    unsigned ai = 0;
    for (const char *f = fmt; *f; f++) {
        if (*f != '%') {
            oc(o, *f);
            continue;
        }
        const char *start = f++;
        if (*f == '%') {
            oc(o, '%');
            continue;
        }
        spec sp = {.prec = -1};
        for (;; f++) {
            if (*f == '-')
                sp.minus = true;
            else if (*f == '+')
                sp.plus = true;
            else if (*f == ' ')
                sp.space = true;
            else if (*f == '#')
                sp.hash = true;
            else if (*f == '0')
                sp.zero = true;
            else if (*f != '\'' && *f != 'I')
                break;
        }
        if (*f == '*') {
            long w = ai < nargs ? (long)(int)rec[FL_W_ARGS + ai] : 0;
            ai++;
            if (w < 0) {
                sp.minus = true;
                w = -w;
            }
            sp.width = w;
            f++;
        } else {
            while (*f >= '0' && *f <= '9')
                sp.width = sp.width * 10 + (*f++ - '0');
        }
        if (*f == '.') {
            f++;
            sp.prec = 0;
            if (*f == '*') {
                long p = ai < nargs ? (long)(int)rec[FL_W_ARGS + ai] : 0;
                ai++;
                sp.prec = p < 0 ? -1 : p;
                f++;
            } else {
                while (*f >= '0' && *f <= '9')
                    sp.prec = sp.prec * 10 + (*f++ - '0');
            }
        }
        if (sp.width > 1024)
            sp.width = 1024;
        if (sp.prec > 1024)
            sp.prec = 1024;
        if (sp.minus)
            sp.zero = false;
        for (; *f && strchr("hlLqjzt", *f); f++)
            if (*f == 'h')
                sp.lenbits = sp.lenbits == 16 ? 8 : 16;
        sp.conv = *f;
        if (!*f || !strchr("diouxXcspfFeEgGaAn", *f)) {
            /* Not a conversion printf knows: the text as it stands. */
            os(o, start, (size_t)(f - start) + (*f != '\0'));
            if (!*f)
                return;
            continue;
        }
        if (ai >= nargs) {
            os(o, "<missing>", 9);
            continue;
        }
        char t = types[ai];
        uint64_t slot = rec[FL_W_ARGS + ai++];
        if (sp.conv == 'n')
            continue; /* writes nothing, here or later */
        if (sp.conv == 's' && t == 's') {
            bool in = slot && slot < recbytes;
            const char *s = in ? (const char *)rec + slot : "(null)";
            size_t max = in ? recbytes - slot : 6;
            size_t n =
                fl_trace_strnlen(s, sp.prec >= 0 && (size_t)sp.prec < max ? (size_t)sp.prec : max);
            sp.zero = false;
            ofield(o, &sp, "", 0, s, n, 0);
        } else if (t == 'd' || t == 'D') {
            double d;
            memcpy(&d, &slot, sizeof d);
            if (!strchr("fFeEgGaA", sp.conv))
                sp.conv = 'g';
            ofmt_float(o, sp, d);
        } else if (sp.conv == 'c') {
            char ch = (char)slot;
            sp.zero = false;
            ofield(o, &sp, "", 0, &ch, 1, 0);
        } else if (sp.conv == 'p' || sp.conv == 's' || t == 'p' || t == 's') {
            /* A pointer (or a string conversion given something else). */
            if (!slot) {
                sp.zero = false;
                ofield(o, &sp, "", 0, "(nil)", 5, 0);
            } else {
                sp.conv = 'x';
                sp.hash = true;
                sp.lenbits = 0;
                ofmt_int(o, sp, slot, 'Q');
            }
        } else if (strchr("fFeEgGaA", sp.conv)) {
            ofmt_float(o, sp, (double)(int64_t)slot);
        } else {
            ofmt_int(o, sp, slot, t);
        }
    }
}

size_t fl_trace_format(char *out, size_t cap, const char *fmt, const char *types, unsigned nargs,
                       const uint64_t *rec, size_t recbytes)
{
    obuf o = {out, 0, cap ? cap - 1 : 0};
    if (!cap)
        return 0;
    format_record(&o, fmt, types, nargs, rec, recbytes);
    out[o.len] = '\0';
    return o.len;
}

/* ---- reading the rings */

typedef int (*line_fn)(void *ctx, const char *line);

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
        pos += nw;
        seen++;
        if (want && fn(ctx, (const char *)rec) < 0)
            return -1;
    }
    return seen;
}

/* ---- lines */

typedef struct emit {
    int (*line)(void *, const char *);
    void *ctx;
    fl_line l;
    /* Pages of trace sites and formats checked readable during this dump:
     * checked afresh each dump, since a library may have been dlclose()d
     * (fl_safe_read's own cache and ranges could still trust its pages). */
    uint64_t pages[32];
    unsigned npages, next;
} emit;

static bool page_ok(emit *e, uint64_t page)
{
    for (unsigned i = 0; i < e->npages; i++)
        if (e->pages[i] == page)
            return true;
    return false;
}

/* Reads n bytes at addr (site or format memory) for this dump. */
static int dump_read(emit *e, void *dst, uint64_t addr, size_t n)
{
    uint64_t first = addr >> 12, last = (addr + n - 1) >> 12;
    if (n == 0 || addr + n < addr)
        return -1;
    if (page_ok(e, first) && page_ok(e, last)) {
        memcpy(dst, (const void *)(uintptr_t)addr, n);
        return 0;
    }
    if (fl_safe_read_fresh(dst, addr, n))
        return -1;
    for (uint64_t p = first; p <= last; p++) {
        if (page_ok(e, p))
            continue;
        e->pages[e->next] = p;
        e->next = (e->next + 1) % 32;
        if (e->npages < 32)
            e->npages++;
    }
    return 0;
}

/* A format string, copied once its pages are checked: byte by byte up to
 * its NUL, never past it.  Returns its length, or -1. */
static long dump_cstr(emit *e, char *dst, size_t cap, uint64_t addr)
{
    size_t n = 0;
    while (n + 1 < cap) {
        uint64_t a = addr + n;
        char probe;
        if (!page_ok(e, a >> 12) && dump_read(e, &probe, a, 1))
            return -1;
        const char *src = (const char *)(uintptr_t)a;
        size_t room = 4096 - (a & 4095);
        for (size_t i = 0; i < room && n + 1 < cap; i++, n++)
            if (!(dst[n] = src[i]))
                return (long)n;
    }
    dst[n] = '\0';
    return (long)n;
}

static int emit_trace(void *arg, const char *recp)
{
    emit *e = arg;
    const uint64_t *rec = (const uint64_t *)(const void *)recp;
    unsigned nargs = (unsigned)(rec[FL_W_META] >> 16 & 0xff);
    size_t recbytes = (rec[FL_W_META] & 0xffff) * 8;
    struct faultline_trace_site site;
    char fmt[512], text[FL_LINE_MAX];
    obuf o = {text, 0, sizeof text};
    if (dump_read(e, &site, rec[FL_W_SITE], sizeof site) ||
        dump_cstr(e, fmt, sizeof fmt, (uint64_t)(uintptr_t)site.fmt) < 0) {
        os(&o, "<trace site unreadable>", 23);
    } else {
        site.types[FAULTLINE_TRACE_MAX_ARGS] = '\0';
        if (nargs > site.nargs)
            nargs = site.nargs;
        format_record(&o, fmt, site.types, nargs, rec, recbytes);
    }
    fl_line_start(&e->l, "TRACE");
    fl_line_u64(&e->l, rec[FL_W_TIME]);
    fl_line_char(&e->l, ' ');
    fl_line_u64(&e->l, rec[FL_W_TID]);
    fl_line_char(&e->l, ' ');
    fl_line_strn(&e->l, text, o.len);
    return e->line(e->ctx, fl_line_cstr(&e->l));
}

static int emit_crumb(void *arg, const char *recp)
{
    emit *e = arg;
    const uint64_t *rec = (const uint64_t *)(const void *)recp;
    size_t recbytes = (rec[FL_W_META] & 0xffff) * 8;
    if ((rec[FL_W_META] >> 16 & 0xff) != 2 || rec[FL_W_ARGS] >= recbytes ||
        rec[FL_W_ARGS + 1] >= recbytes)
        return 0;
    const char *cat = recp + rec[FL_W_ARGS], *msg = recp + rec[FL_W_ARGS + 1];
    size_t cl = fl_trace_strnlen(cat, recbytes - rec[FL_W_ARGS]);
    size_t ml = fl_trace_strnlen(msg, recbytes - rec[FL_W_ARGS + 1]);
    fl_line_start(&e->l, "BREADCRUMB");
    fl_line_u64(&e->l, rec[FL_W_TIME] / 1000000);
    fl_line_char(&e->l, ' ');
    if (!cl)
        fl_line_char(&e->l, '-');
    for (size_t i = 0; i < cl; i++) /* one word: the reader splits on blanks */
        fl_line_char(&e->l, (unsigned char)cat[i] <= ' ' || cat[i] == 0x7f ? '_' : cat[i]);
    fl_line_char(&e->l, ' ');
    fl_line_strn(&e->l, msg, ml);
    return e->line(e->ctx, fl_line_cstr(&e->l));
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
            if (e->line(e->ctx, fl_line_cstr(&e->l)) < 0)
                return -1;
        }
    }
    return 0;
}

/* State, then the newest max_crumbs breadcrumbs and max_traces trace
 * events (< 0: all), oldest first. */
static int dump_all(emit *e, long max_crumbs, long max_traces)
{
    e->npages = e->next = 0;
    if (emit_state(e) < 0)
        return -1;
    long n = walk(&fl_crumbs, 0, NULL, NULL);
    if (walk(&fl_crumbs, max_crumbs >= 0 && n > max_crumbs ? n - max_crumbs : 0, emit_crumb, e) < 0)
        return -1;
    n = walk(&fl_traces, 0, NULL, NULL);
    if (walk(&fl_traces, max_traces >= 0 && n > max_traces ? n - max_traces : 0, emit_trace, e) < 0)
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
    return dump_all(&crash_emit, FL_TRACE_LOG_CRUMBS, (long)fl_g.trace_events) < 0 ? 0 : 1;
}

/* Lines for faultline_trace_dump(), gathered into writes of up to 8 KiB
 * (one write per line cost more than the formatting). */
typedef struct fdctx {
    int fd;
    int lines;
    size_t len;
    char buf[8192];
} fdctx;

static int flush_fd(fdctx *c)
{
    for (size_t off = 0; off < c->len;) {
        ssize_t w = write(c->fd, c->buf + off, c->len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        off += (size_t)w;
    }
    c->len = 0;
    return 0;
}

static int line_to_fd(void *ctx, const char *s)
{
    fdctx *c = ctx;
    size_t n = fl_trace_strnlen(s, FL_LINE_MAX + 1);
    if (c->len + n + 1 > sizeof c->buf && flush_fd(c))
        return -1;
    memcpy(c->buf + c->len, s, n);
    c->buf[c->len + n] = '\n';
    c->len += n + 1;
    c->lines++;
    return 0;
}

FL_EXPORT int faultline_trace_dump(int fd)
{
    /* On the stack, not static: two threads (or a handler and the code it
     * interrupted) may dump at once. */
    emit e;
    fdctx c;
    c.fd = fd;
    c.lines = 0;
    c.len = 0;
    e.line = line_to_fd;
    e.ctx = &c;
    int saved = errno;
    int rc = dump_all(&e, -1, -1);
    if (rc == 0 && c.len)
        rc = flush_fd(&c);
    errno = saved;
    return rc < 0 ? -1 : c.lines;
}
