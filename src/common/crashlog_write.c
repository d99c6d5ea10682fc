/*
 * crashlog_write.c - compose crash-log lines without the heap.
 *
 * SIGNAL-SAFE ZONE.  The crash handler calls these functions, so they may
 * not allocate, lock, use stdio or libc formatting, or touch errno-setting
 * calls.  Everything works on the caller's fl_line buffer; a value that does
 * not fit is cut and the line marked truncated, never overrun.
 */
#include "fl_crashlog.h"
#include "fl_hex.h"

#include <string.h> /* memcpy of fixed size: compiled to plain stores */

size_t fl_strlen(const char *s)
{
    size_t n = 0;
    if (!s)
        return 0;
    while (s[n])
        n++;
    return n;
}

size_t fl_strnlen(const char *s, size_t max)
{
    size_t n = 0;
    while (n < max && s[n])
        n++;
    return n;
}

size_t fl_strlcpy(char *dst, const char *src, size_t cap)
{
    size_t n = 0;
    if (cap == 0)
        return 0;
    if (src)
        while (src[n] && n + 1 < cap) {
            dst[n] = src[n];
            n++;
        }
    dst[n] = '\0';
    return n;
}

size_t fl_fmt_u64(char *buf, uint64_t v)
{
    char tmp[21];
    size_t n = 0, i;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    buf[n] = '\0';
    return n;
}

void fl_line_char(fl_line *l, char c)
{
    if (l->len < FL_LINE_MAX)
        l->buf[l->len++] = c;
    else
        l->truncated = true;
}

void fl_line_raw(fl_line *l, const char *s)
{
    if (!s)
        return;
    while (*s && l->len < FL_LINE_MAX)
        l->buf[l->len++] = *s++;
    if (*s)
        l->truncated = true;
}

void fl_line_start(fl_line *l, const char *key)
{
    l->len = 0;
    l->truncated = false;
    if (key && *key) {
        fl_line_raw(l, key);
        fl_line_char(l, ' ');
    }
}

static const char hexdig[] = "0123456789abcdef";

/* "00".."ff": one 2-byte copy per byte of raw stack, most of a log's text. */
#define HX4(a) a "0", a "1", a "2", a "3", a "4", a "5", a "6", a "7", \
               a "8", a "9", a "a", a "b", a "c", a "d", a "e", a "f"
static const char hexpair[256][2] = {
    HX4("0"), HX4("1"), HX4("2"), HX4("3"), HX4("4"), HX4("5"), HX4("6"), HX4("7"),
    HX4("8"), HX4("9"), HX4("a"), HX4("b"), HX4("c"), HX4("d"), HX4("e"), HX4("f"),
};
#undef HX4

void fl_line_strn(fl_line *l, const char *s, size_t n)
{
    for (size_t i = 0; s && i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        /* Escapes keep a value on one line; they are the \n sequence the
         * MojoCrash notes ask for, extended to the other control bytes. */
        if (c == '\n') {
            fl_line_char(l, '\\');
            fl_line_char(l, 'n');
        } else if (c == '\r') {
            fl_line_char(l, '\\');
            fl_line_char(l, 'r');
        } else if ((c < 0x20 && c != '\t') || c == 0x7f) {
            fl_line_char(l, '\\');
            fl_line_char(l, 'x');
            fl_line_char(l, hexdig[c >> 4]);
            fl_line_char(l, hexdig[c & 15]);
        } else {
            fl_line_char(l, (char)c);
        }
    }
}

void fl_line_str(fl_line *l, const char *s)
{
    fl_line_strn(l, s, fl_strlen(s));
}

void fl_line_u64(fl_line *l, uint64_t v)
{
    char buf[21];
    fl_fmt_u64(buf, v);
    fl_line_raw(l, buf);
}

void fl_line_i64(fl_line *l, int64_t v)
{
    if (v < 0) {
        fl_line_char(l, '-');
        fl_line_u64(l, (uint64_t)0 - (uint64_t)v);
    } else {
        fl_line_u64(l, (uint64_t)v);
    }
}

void fl_line_hex(fl_line *l, uint64_t v)
{
    /* Composed right to left, then appended at once: frames, registers and
     * every raw-stack line carry one. */
    char tmp[18];
    size_t n = sizeof tmp;
    do {
        tmp[--n] = hexdig[v & 15];
        v >>= 4;
    } while (v);
    tmp[--n] = 'x';
    tmp[--n] = '0';
    size_t k = sizeof tmp - n, room = FL_LINE_MAX - l->len;
    if (k > room) {
        k = room;
        l->truncated = true;
    }
    memcpy(l->buf + l->len, tmp + n, k);
    l->len += k;
}

void fl_line_hexbytes(fl_line *l, const void *p, size_t n)
{
    const unsigned char *b = p;
    size_t i = 0;
    /* The raw stack is most of a log: convert what fits without a bounds
     * check per character, then the rest one character at a time (cut). */
    size_t room = (FL_LINE_MAX - l->len) / 2;
    size_t fast = n < room ? n : room;
    char *o = l->buf + l->len;
    for (; i < fast; i++)
        memcpy(o + 2 * i, hexpair[b[i]], 2);
    l->len += 2 * fast;
    for (; i < n; i++) {
        fl_line_char(l, hexdig[b[i] >> 4]);
        fl_line_char(l, hexdig[b[i] & 15]);
    }
}

const char *fl_line_cstr(fl_line *l)
{
    l->buf[l->len] = '\0';
    return l->buf;
}

/* ---- numbers ----------------------------------------------------------
 * The number syntax of the format.  It lives here, with the writer, because
 * the client parses a few numbers too (environment, /proc) and takes only
 * this file. */

/* The value of decimal digit c, or more than 9 when c is not one. */
static unsigned dec_digit(char c)
{
    return (unsigned)(unsigned char)c - '0';
}

/* Leading zeros aside, a u64 holds any 16 hex digits and any 19 decimal
 * ones, so only a 17th hex digit (always too many) and a 20th decimal one
 * need a check: an overflow-checked multiply per digit was most of the cost
 * of a CALLSTACK line on the server. */
int fl_parse_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    size_t i;
    if (!s || !*s)
        return -1;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        s += 2;
        if (!*s)
            return -1;
        while (*s == '0')
            s++;
        for (i = 0; s[i]; i++) {
            int d = fl_hex_digit(s[i]);
            if (d < 0 || i == 16)
                return -1;
            v = v << 4 | (uint64_t)d;
        }
    } else {
        while (*s == '0')
            s++;
        unsigned d;
        for (i = 0; i < 19 && (d = dec_digit(s[i])) <= 9; i++)
            v = v * 10 + d;
        /* Now s[i] is a digit only when it is the 20th. */
        if ((d = dec_digit(s[i])) <= 9) {
            if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, d, &v))
                return -1;
            i++;
        }
        if (s[i])
            return -1;
    }
    *out = v;
    return 0;
}

int fl_parse_i64(const char *s, int64_t *out)
{
    uint64_t v;
    if (s && *s == '-') {
        if (fl_parse_u64(s + 1, &v) || v > (uint64_t)INT64_MAX + 1)
            return -1;
        *out = (int64_t)(0 - v);
        return 0;
    }
    if (fl_parse_u64(s, &v) || v > (uint64_t)INT64_MAX)
        return -1;
    *out = (int64_t)v;
    return 0;
}
