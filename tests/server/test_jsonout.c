/*
 * test_jsonout.c - fl_json_compact() writes what json_dumps(JSON_COMPACT)
 * writes, byte for byte, and fails where it fails: the edge cases of string
 * escaping and UTF-8 by hand, then 20,000 random trees against jansson.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "fl_jsonout.h"

/* Both NULL, or the same text (and the length says so). */
static void same_as_jansson(const json_t *j)
{
    char *want = json_dumps(j, JSON_COMPACT);
    size_t len = 12345;
    char *got = fl_json_compact(j, &len);
    if (!want) {
        if (got)
            fail_msg("jansson refused, we wrote: %s", got);
    } else {
        if (!got)
            fail_msg("we refused, jansson wrote: %s", want);
        assert_string_equal(got, want);
        assert_int_equal(len, strlen(want));
    }
    free(want);
    free(got);
}

static void test_escapes(void **st)
{
    (void)st;
    json_t *o = json_object();
    /* Every byte below 0x20, the two that must be escaped, '/', DEL. */
    char all[40];
    size_t n = 0;
    for (int c = 1; c < 0x20; c++)
        all[n++] = (char)c;
    all[n++] = '"';
    all[n++] = '\\';
    all[n++] = '/';
    all[n++] = 0x7f;
    json_object_set_new(o, "ctl", json_stringn(all, n));
    json_object_set_new(o, "nul", json_stringn("a\0b", 3));
    json_object_set_new(o, "key \"quoted\"\n", json_string("v"));
    json_object_set_new(o, "utf8", json_string("\xc3\xa9 \xe2\x80\xa8 \xf0\x9f\x92\xa5 \xf4\x8f\xbf\xbf"));
    json_object_set_new(o, "empty_o", json_object());
    json_object_set_new(o, "empty_a", json_array());
    json_object_set_new(o, "empty_s", json_string(""));
    json_object_set_new(o, "ints", json_pack("[I,I,I]", (json_int_t)0, (json_int_t)-1,
                                             (json_int_t)INT64_MIN));
    json_object_set_new(o, "reals", json_pack("[f,f,f]", 1.0, 0.1, -2.5e300));
    json_object_set_new(o, "lits", json_pack("[b,b,n]", 1, 0));
    json_object_set_new(o, "nest", json_pack("{s:[{s:[]}]}", "a", "b"));
    same_as_jansson(o);
    json_decref(o);
    /* Not objects or arrays: refused by both. */
    json_t *s = json_string("x");
    same_as_jansson(s);
    json_decref(s);
    assert_null(fl_json_compact(NULL, NULL));
}

/* Strings that are not UTF-8 fail the whole dump, as in jansson. */
static void test_bad_utf8(void **st)
{
    (void)st;
    static const char *const bad[] = {
        "\x80",             /* stray continuation */
        "\xc0\x80",         /* overlong NUL */
        "\xc1\xbf",         /* overlong */
        "\xe0\x80\x80",     /* overlong */
        "\xed\xa0\x80",     /* surrogate */
        "\xf0\x80\x80\x80", /* overlong */
        "\xf4\x90\x80\x80", /* above U+10FFFF */
        "\xf5\x80\x80\x80", /* never valid */
        "\xc3",             /* cut short */
        "\xe2\x80",         /* cut short */
        "\xff",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *a = json_array();
        json_array_append_new(a, json_string("ok"));
        json_array_append_new(a, json_stringn_nocheck(bad[i], strlen(bad[i])));
        assert_null(fl_json_compact(a, NULL));
        same_as_jansson(a);
        json_decref(a);
        /* As a key (only an unchecked setter makes one): refused too.
         * Here jansson does not stop, and writes text that is not JSON. */
        json_t *o = json_object();
        json_object_setn_new_nocheck(o, bad[i], strlen(bad[i]), json_null());
        assert_null(fl_json_compact(o, NULL));
        char *broken = json_dumps(o, JSON_COMPACT);
        if (broken) {
            json_t *back = json_loads(broken, 0, NULL);
            assert_null(back);
            free(broken);
        }
        json_decref(o);
    }
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

/* Random bytes, biased toward the interesting ones; valid UTF-8 or not. */
static size_t rnd_bytes(char *b, size_t cap)
{
    static const unsigned char pick[] = {'a', 'Z', ' ', '"', '\\', '/', 0, 1, 0x1f, 0x7f,
                                         0x80, 0xbf, 0xc2, 0xc3, 0xe0, 0xe2, 0xed, 0xf0,
                                         0xf4, 0xa0, 0x9f, 0xff};
    size_t n = rnd((uint32_t)cap);
    for (size_t i = 0; i < n; i++)
        b[i] = (char)(rnd(3) ? 'a' + rnd(26) : pick[rnd(sizeof pick)]);
    return n;
}

static json_t *rnd_tree(int depth)
{
    char b[24];
    switch (depth > 3 ? 2 + rnd(5) : rnd(7)) {
    case 0: {
        json_t *o = json_object();
        for (uint32_t i = rnd(5); i > 0; i--) {
            size_t n = rnd_bytes(b, sizeof b);
            /* Checked: a key that is not UTF-8 is refused here (above). */
            json_object_setn_new(o, b, n, rnd_tree(depth + 1));
        }
        return o;
    }
    case 1: {
        json_t *a = json_array();
        for (uint32_t i = rnd(5); i > 0; i--)
            json_array_append_new(a, rnd_tree(depth + 1));
        return a;
    }
    case 2:
    case 3: {
        size_t n = rnd_bytes(b, sizeof b);
        return json_stringn_nocheck(b, n);
    }
    case 4:
        return json_integer((json_int_t)rnd(1u << 31) - (json_int_t)(1u << 30));
    case 5:
        return json_real((double)rnd(1000) / 7.0);
    default:
        return rnd(3) == 0 ? json_null() : json_boolean(rnd(2));
    }
}

static void test_random_trees(void **st)
{
    (void)st;
    size_t refused = 0;
    for (int i = 0; i < 20000; i++) {
        json_t *t = json_array();
        json_array_append_new(t, rnd_tree(0));
        char *want = json_dumps(t, JSON_COMPACT);
        refused += want == NULL;
        free(want);
        same_as_jansson(t);
        json_decref(t);
    }
    /* Both outcomes were exercised. */
    assert_true(refused > 100);
    assert_true(refused < 19900);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_bad_utf8),
        cmocka_unit_test(test_random_trees),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
