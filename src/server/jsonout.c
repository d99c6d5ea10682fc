/*
 * jsonout.c - compact JSON text of a jansson tree, byte for byte what
 * json_dumps(j, JSON_COMPACT) writes, at a fraction of its cost.
 *
 * Why: a worker turns every crash into a processed JSON document, and
 * json_dumps() was 29 % of a worker's time (perf, the server bench): it
 * checks and copies strings a character at a time through a callback.  Here
 * runs of plain bytes are copied at once and UTF-8 is checked per sequence.
 * The output is the same -- the same escapes (\uXXXX in upper case for other
 * control characters, '/' and U+2028 not escaped), keys in the object's
 * order, and a string that is not valid UTF-8 fails the whole dump, as in
 * jansson -- so that what the store holds does not depend on which one wrote
 * it.  One difference: a key that is not UTF-8 (only jansson's unchecked
 * setters make one) fails here too, where jansson goes on and writes text
 * that is not JSON.  Reals (rare here) are written by jansson itself.
 */
#include "fl_jsonout.h"

#include "fl_crashlog.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct out {
    char *p;
    size_t len, cap;
    bool failed;
} out;

static bool grow(out *o, size_t more)
{
    if (o->failed)
        return false;
    if (o->len + more + 1 <= o->cap)
        return true;
    size_t nc = o->cap ? o->cap : 4096;
    while (nc < o->len + more + 1)
        nc *= 2;
    char *np = realloc(o->p, nc);
    if (!np) {
        o->failed = true;
        return false;
    }
    o->p = np;
    o->cap = nc;
    return true;
}

static void put(out *o, const char *s, size_t n)
{
    if (grow(o, n)) {
        memcpy(o->p + o->len, s, n);
        o->len += n;
    }
}

static void putc1(out *o, char c)
{
    if (grow(o, 1))
        o->p[o->len++] = c;
}

static void put_string(out *o, const char *str, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    const unsigned char *s = (const unsigned char *)str;
    putc1(o, '"');
    size_t run = 0; /* s[run_start .. i) is plain and not yet copied */
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            i++;
            continue;
        }
        put(o, (const char *)s + run, i - run);
        if (c >= 0x80) {
            size_t k = fl_utf8_seq(s + i, n - i);
            if (!k) {
                o->failed = true;
                return;
            }
            put(o, (const char *)s + i, k);
            i += k;
        } else {
            char e[6] = {'\\', 0};
            size_t el = 2;
            switch (c) {
            case '"': e[1] = '"'; break;
            case '\\': e[1] = '\\'; break;
            case '\b': e[1] = 'b'; break;
            case '\f': e[1] = 'f'; break;
            case '\n': e[1] = 'n'; break;
            case '\r': e[1] = 'r'; break;
            case '\t': e[1] = 't'; break;
            default:
                e[1] = 'u';
                e[2] = '0';
                e[3] = '0';
                e[4] = hex[c >> 4];
                e[5] = hex[c & 15];
                el = 6;
            }
            put(o, e, el);
            i++;
        }
        run = i;
    }
    put(o, (const char *)s + run, i - run);
    putc1(o, '"');
}

static void put_value(out *o, const json_t *j, int depth)
{
    if (o->failed)
        return;
    if (depth > 2048) { /* jansson's limit is lower; a tree this deep is a bug */
        o->failed = true;
        return;
    }
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        putc1(o, '{');
        bool first = true;
        const char *k;
        size_t kl;
        json_t *v;
        /* The iteration wants a non-const object; it only reads.  Keys may
         * hold NUL bytes: their length is the iterator's. */
        json_t *oj = (json_t *)j;
        json_object_keylen_foreach(oj, k, kl, v)
        {
            if (!first)
                putc1(o, ',');
            first = false;
            put_string(o, k, kl);
            putc1(o, ':');
            put_value(o, v, depth + 1);
        }
        putc1(o, '}');
        break;
    }
    case JSON_ARRAY: {
        putc1(o, '[');
        for (size_t i = 0; i < json_array_size(j); i++) {
            if (i)
                putc1(o, ',');
            put_value(o, json_array_get(j, i), depth + 1);
        }
        putc1(o, ']');
        break;
    }
    case JSON_STRING:
        put_string(o, json_string_value(j), json_string_length(j));
        break;
    case JSON_INTEGER: {
        char b[32];
        int n = snprintf(b, sizeof b, "%" JSON_INTEGER_FORMAT, json_integer_value(j));
        put(o, b, (size_t)n);
        break;
    }
    case JSON_REAL: {
        char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
        if (!s) {
            o->failed = true;
            return;
        }
        put(o, s, strlen(s));
        free(s);
        break;
    }
    case JSON_TRUE:
        put(o, "true", 4);
        break;
    case JSON_FALSE:
        put(o, "false", 5);
        break;
    case JSON_NULL:
        put(o, "null", 4);
        break;
    }
}

char *fl_json_compact(const json_t *j, size_t *len)
{
    out o = {0};
    if (!j || !(json_is_object(j) || json_is_array(j)))
        return NULL; /* as json_dumps() without JSON_ENCODE_ANY */
    put_value(&o, j, 0);
    if (o.failed || !grow(&o, 0)) {
        free(o.p);
        return NULL;
    }
    o.p[o.len] = '\0';
    if (len)
        *len = o.len;
    return o.p;
}
