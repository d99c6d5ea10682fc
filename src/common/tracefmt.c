/*
 * tracefmt.c - the flight recorder's formatter: printf's conversions over
 * recorded argument slots, without libc formatting or libm.
 *
 * SIGNAL-SAFE ZONE: the client library runs it in the crash handler (the
 * crash log's TRACE lines); `faultline decode` runs it on a trace-ID dump,
 * so both give the same text.  No heap, no locks, no stdio.  Compiled for
 * size in the client (-Os, the library's text budget) and everywhere with
 * -ffp-contract=off (the exact products below must not be fused).
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fl_crashlog.h" /* fl_strnlen */
#include "fl_tracefmt.h"

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

/* A width or precision with one more digit d.  Both are cut to 1024
 * afterwards, so past that the number only has to stay above it: a format
 * string with twenty digits there must not overflow a long (undefined
 * behaviour, in the crash handler too). */
static long digit(long v, char d)
{
    return v > 1024 ? v : v * 10 + (d - '0');
}

/* The text of one record: fmt applied to its slots. */
static void format_record(obuf *o, const char *fmt, const char *types, unsigned nargs,
                          const uint64_t *slots, const char *strs, size_t strbytes)
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
            long w = ai < nargs ? (long)(int)slots[ai] : 0;
            ai++;
            if (w < 0) {
                sp.minus = true;
                w = -w;
            }
            sp.width = w;
            f++;
        } else {
            while (*f >= '0' && *f <= '9')
                sp.width = digit(sp.width, *f++);
        }
        if (*f == '.') {
            f++;
            sp.prec = 0;
            if (*f == '*') {
                long p = ai < nargs ? (long)(int)slots[ai] : 0;
                ai++;
                sp.prec = p < 0 ? -1 : p;
                f++;
            } else {
                while (*f >= '0' && *f <= '9')
                    sp.prec = digit(sp.prec, *f++);
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
        uint64_t slot = slots[ai++];
        if (sp.conv == 'n')
            continue; /* writes nothing, here or later */
        if (sp.conv == 's' && t == 's') {
            bool in = slot && slot < strbytes;
            const char *s = in ? strs + slot : "(null)";
            size_t max = in ? strbytes - slot : 6;
            size_t n = fl_strnlen(s, sp.prec >= 0 && (size_t)sp.prec < max ? (size_t)sp.prec : max);
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
                       const uint64_t *slots, const char *strs, size_t strbytes)
{
    obuf o = {out, 0, cap ? cap - 1 : 0};
    if (!cap)
        return 0;
    format_record(&o, fmt, types, nargs, slots, strs, strbytes);
    out[o.len] = '\0';
    return o.len;
}
