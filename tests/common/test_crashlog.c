/* Reader and writer of the crash-log format. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl_crashlog.h"
#include "fl_tracesec.h"

static fl_crashlog *parse_ok(const char *text)
{
    fl_crashlog *log = NULL;
    fl_crashlog_error err;
    int rc = fl_crashlog_parse(text, strlen(text), &log, &err);
    if (rc != 0)
        fail_msg("unexpected parse error at line %u: %s", err.line, err.message);
    assert_non_null(log);
    return log;
}

static void expect_error(const char *text, unsigned line, const char *needle)
{
    fl_crashlog *log = (fl_crashlog *)1;
    fl_crashlog_error err;
    assert_int_equal(fl_crashlog_parse(text, strlen(text), &log, &err), -1);
    assert_null(log);
    if (line != err.line || !strstr(err.message, needle))
        fail_msg("want line %u '%s', got line %u '%s'", line, needle, err.line, err.message);
}

static void check_example(const char *file)
{
    fl_crashlog *log = NULL;
    fl_crashlog_error err;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", FL_TEST_DATA, file);
    if (fl_crashlog_parse_file(path, &log, &err))
        fail_msg("%s: line %u: %s", file, err.line, err.message);
    assert_string_equal(log->producer, "MOJOCRASH");
    assert_string_equal(log->producer_version, "0.0.1");
    assert_int_equal(log->log_version, 1);
    assert_string_equal(log->app_name, "TestApp");
    assert_string_equal(log->app_version, "1.0");
    assert_string_equal(log->platform_name, "linux");
    assert_string_equal(log->cpuarch, "x86-64");
    assert_string_equal(log->platform_version, "2.6.22.10");
    assert_int_equal(log->crash_signal, 11);
    assert_int_equal(log->uptime, 0);
    assert_int_equal(log->crash_time, 1199350192);
    assert_int_equal(log->nobjects, 3);
    assert_string_equal(log->objects[1].name, "libc.so.6");
    assert_true(log->objects[1].base == 47641679454208ULL);
    assert_int_equal(log->objects[1].size, 1381596);
    assert_false(log->objects[1].has_bias);
    assert_int_equal(log->ncallstack, 11);
    assert_int_equal(log->callstack[0], 4201103);
    assert_int_equal(log->callstack[10], 4196729);
    assert_int_equal(log->netc, 2);
    assert_string_equal(log->etc[1].key, "ThisIsAnotherKey");
    assert_string_equal(log->etc[1].value, "ThisIsAnotherValue");
    assert_string_equal(fl_crashlog_etc(log, "ThisIsMyKey"), "ThisIsMyValue");
    fl_crashlog_free(log);
}

static void published_example(void **state)
{
    (void)state;
    check_example("mojocrash-example.crashlog");
    check_example("mojocrash-example-indented.crashlog");
}

static const char *HDR = "MOJOCRASH 0.0.1\nCRASHLOG_VERSION 1\nAPPLICATION_NAME a\n";

static char *with_hdr(const char *body)
{
    static char buf[8192];
    snprintf(buf, sizeof buf, "%s%s", HDR, body);
    return buf;
}

static void object_fields(void **state)
{
    (void)state;
    fl_crashlog *log = parse_ok(with_hdr("OBJECT libx.so/4096/8192/4096\n"
                                         "OBJECT_BUILD_ID ABCDEF0123\n"
                                         "OBJECT_PATH /usr/lib/a b/libx.so\n"
                                         "OBJECT /opt/app/bin/tool/100/200\n"
                                         "END\n"));
    assert_int_equal(log->nobjects, 2);
    assert_string_equal(log->objects[0].name, "libx.so");
    assert_int_equal(log->objects[0].base, 4096);
    assert_int_equal(log->objects[0].size, 8192);
    assert_true(log->objects[0].has_bias);
    assert_int_equal(log->objects[0].bias, 4096);
    assert_string_equal(log->objects[0].build_id, "abcdef0123");
    assert_string_equal(log->objects[0].path, "/usr/lib/a b/libx.so");
    /* A name with '/' in it, three fields: numbers come from the right. */
    assert_string_equal(log->objects[1].name, "/opt/app/bin/tool");
    assert_int_equal(log->objects[1].base, 100);
    assert_int_equal(log->objects[1].size, 200);
    assert_false(log->objects[1].has_bias);
    fl_crashlog_free(log);
}

static void long_lines_and_v2(void **state)
{
    (void)state;
    char big[2000];
    memset(big, 'v', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    char *text = malloc(4096 + sizeof big);
    snprintf(text, 4096 + sizeof big,
             "FAULTLINE 0.1.0\nCRASHLOG_VERSION 2\nAPPLICATION_NAME app\n"
             "ETC_KEY k\nETC_VALUE %s\n"
             "CRASH_ID 0a1b2c3d-0000-4000-8000-000000000001\n"
             "CRASH_CODE -6\nCRASH_ADDRESS 0xdeadBEEF\n"
             "REGISTER rip 0x401000\nSTACK 0x7ffc0000 00ff10\n"
             "THREAD 42 worker one\nTHREAD_FRAME 0x1234\nTHREAD_FRAME 4660\n"
             "BREADCRUMB 17 net connected to x\nTRACE 99 42 hello world\n"
             "STATE_KEY level\nSTATE_VALUE 3\nFUTURE_FIELD whatever it is\nEND\n",
             big);
    fl_crashlog *log = parse_ok(text);
    assert_int_equal(strlen(log->etc[0].value), sizeof big - 1);
    assert_string_equal(log->crash_id, "0a1b2c3d-0000-4000-8000-000000000001");
    assert_int_equal(log->crash_code, -6);
    assert_true(log->crash_address == 0xdeadbeefULL);
    assert_string_equal(log->registers[0].name, "rip");
    assert_int_equal(log->registers[0].value, 0x401000);
    assert_int_equal(log->nstack, 1);
    assert_int_equal(log->stack[0].len, 3);
    assert_int_equal(log->stack[0].data[1], 0xff);
    assert_int_equal(log->nthreads, 1);
    assert_string_equal(log->threads[0].name, "worker one");
    assert_int_equal(log->threads[0].nframes, 2);
    assert_int_equal(log->threads[0].frames[1], 0x1234);
    assert_string_equal(log->breadcrumbs[0].category, "net");
    assert_string_equal(log->breadcrumbs[0].message, "connected to x");
    assert_int_equal(log->trace[0].tid, 42);
    assert_string_equal(log->state[0].value, "3");
    assert_int_equal(log->nunknown, 1);
    assert_string_equal(log->unknown[0].key, "FUTURE_FIELD");
    fl_crashlog_free(log);
    free(text);
}

static void rejects(void **state)
{
    (void)state;
    expect_error("", 0, "empty log");
    expect_error("hello\n", 1, "not a crash log");
    /* Blank lines and comments before it are skipped, and the message says
     * so: the line it names need not be the file's first. */
    expect_error("# a comment\n\nhello\n", 3,
                 "not a crash log: the first line that is not blank or a comment must be "
                 "'MOJOCRASH <version>' or 'FAULTLINE <version>'");
    expect_error("MOJOCRASH 1\nAPPLICATION_NAME x\nEND\n", 2, "CRASHLOG_VERSION");
    expect_error("MOJOCRASH 1\nCRASHLOG_VERSION 1\nAPPLICATION_NAME x\nCALLSTACK 12\n", 4,
                 "no END");
    /* Truncated in the middle of a line. */
    expect_error("MOJOCRASH 1\nCRASHLOG_VERSION 1\nAPPLICATION_NAME x\nCALLSTACK 1", 4, "no END");
    expect_error(with_hdr("CALLSTACK 12x\nEND\n"), 4, "not a number");
    expect_error(with_hdr("CALLSTACK 99999999999999999999999\nEND\n"), 4, "not a number");
    expect_error(with_hdr("THREADS_OMITTED many\nEND\n"), 4, "not a number");
    expect_error(with_hdr("OBJECTS_OMITTED -3\nEND\n"), 4, "not a number");
    expect_error(with_hdr("VFORK_PARENT me\nEND\n"), 4, "not a number");
    expect_error(with_hdr("OBJECT_PATH_CUT 12\nEND\n"), 4, "before any OBJECT");
    expect_error(with_hdr("OBJECT a/1/2/3\nOBJECT_PATH_CUT x\nEND\n"), 5, "not a number");
    expect_error(with_hdr("ETC_VALUE v\nEND\n"), 4, "without a preceding ETC_KEY");
    expect_error(with_hdr("ETC_KEY a\nETC_KEY b\nEND\n"), 5, "ETC_VALUE");
    expect_error(with_hdr("ETC_KEY a\nEND\n"), 5, "ETC_VALUE");
    expect_error(with_hdr("OBJECT_PATH /x\nEND\n"), 4, "before any OBJECT");
    expect_error(with_hdr("OBJECT noslashes\nEND\n"), 4, "OBJECT");
    expect_error(with_hdr("THREAD_FRAME 1\nEND\n"), 4, "before any THREAD");
    expect_error(with_hdr("END\nCALLSTACK 1\n"), 5, "after END");
    expect_error(with_hdr("CRASH_ID ../../etc/passwd\nEND\n"), 4, "not an id");
    expect_error(with_hdr("STACK 0x10 abc\nEND\n"), 4, "odd");
    expect_error(with_hdr("lower case\nEND\n"), 4, "not a crash-log line");
    expect_error("MOJOCRASH 1\nCRASHLOG_VERSION 1\nEND\n", 0, "APPLICATION_NAME");
    const char nul[] = "MOJOCRASH 1\nCRASHLOG_VERSION 1\nAPPLICATION_NAME \0x\nEND\n";
    fl_crashlog *log;
    fl_crashlog_error err;
    assert_int_equal(fl_crashlog_parse(nul, sizeof nul - 1, &log, &err), -1);
    assert_int_equal(err.line, 3);
}

static void writer_escapes_and_numbers(void **state)
{
    (void)state;
    fl_line l;
    fl_line_start(&l, "ETC_VALUE");
    fl_line_str(&l, "a\nb\rc\x01");
    assert_string_equal(fl_line_cstr(&l), "ETC_VALUE a\\nb\\rc\\x01");
    fl_line_start(&l, "X");
    fl_line_u64(&l, 18446744073709551615ULL);
    fl_line_char(&l, ' ');
    fl_line_i64(&l, INT64_MIN);
    fl_line_char(&l, ' ');
    fl_line_hex(&l, 0);
    fl_line_char(&l, ' ');
    fl_line_hex(&l, 0xdeadbeefULL);
    fl_line_char(&l, ' ');
    unsigned char b[] = {0, 0xab, 0x10};
    fl_line_hexbytes(&l, b, sizeof b);
    assert_string_equal(fl_line_cstr(&l),
                        "X 18446744073709551615 -9223372036854775808 0x0 0xdeadbeef 00ab10");
    /* Overlong value: cut, flagged, never overrun. */
    char big[FL_LINE_MAX * 2];
    memset(big, 'z', sizeof big - 1);
    big[sizeof big - 1] = 0;
    fl_line_start(&l, "K");
    fl_line_str(&l, big);
    assert_true(l.truncated);
    assert_int_equal(strlen(fl_line_cstr(&l)), FL_LINE_MAX);
    /* Hex near the end of the line: filled up to the last byte, then cut
     * (the bulk paths must stop exactly where one character at a time would). */
    unsigned char raw[4] = {0x12, 0x34, 0x56, 0x78};
    fl_line_start(&l, NULL);
    memset(l.buf, 'y', FL_LINE_MAX - 3);
    l.len = FL_LINE_MAX - 3;
    fl_line_hexbytes(&l, raw, sizeof raw);
    assert_true(l.truncated);
    assert_int_equal(strlen(fl_line_cstr(&l)), FL_LINE_MAX);
    assert_string_equal(l.buf + FL_LINE_MAX - 3, "123");
    fl_line_start(&l, NULL);
    memset(l.buf, 'y', FL_LINE_MAX - 5);
    l.len = FL_LINE_MAX - 5;
    fl_line_hex(&l, 0xabcdef);
    assert_true(l.truncated);
    assert_string_equal(fl_line_cstr(&l) + FL_LINE_MAX - 5, "0xabc");
    fl_line_start(&l, NULL);
    fl_line_hex(&l, 0xabcdef);
    assert_false(l.truncated);
    assert_string_equal(fl_line_cstr(&l), "0xabcdef");
}

/* What the writer produces, the reader reads back. */
static void roundtrip(void **state)
{
    (void)state;
    char text[8192] = "";
    fl_line l;
    const char *vals[] = {"tab\there", "new\nline", "back\\slash", "ünïcödé"};
    strcat(text, "FAULTLINE 0.1.0\nCRASHLOG_VERSION 2\nAPPLICATION_NAME rt\n");
    for (size_t i = 0; i < 4; i++) {
        fl_line_start(&l, "ETC_KEY");
        fl_line_u64(&l, i);
        strcat(strcat(text, fl_line_cstr(&l)), "\n");
        fl_line_start(&l, "ETC_VALUE");
        fl_line_str(&l, vals[i]);
        strcat(strcat(text, fl_line_cstr(&l)), "\n");
    }
    fl_line_start(&l, "CRASH_ADDRESS");
    fl_line_hex(&l, 0xffffffffffffffffULL);
    strcat(strcat(text, fl_line_cstr(&l)), "\nEND\n");
    fl_crashlog *log = parse_ok(text);
    assert_int_equal(log->netc, 4);
    assert_string_equal(log->etc[0].value, "tab\there");
    assert_string_equal(log->etc[1].value, "new\\nline");
    assert_string_equal(log->etc[3].value, "ünïcödé");
    assert_true(log->crash_address == 0xffffffffffffffffULL);
    fl_crashlog_free(log);
}

/* fl_parse_u64/i64 at their limits (no division in the loop any more, so
 * the overflow checks are tested on their own). */
static void numbers(void **state)
{
    (void)state;
    uint64_t u = 1;
    int64_t i = 1;
    assert_int_equal(fl_parse_u64("18446744073709551615", &u), 0);
    assert_true(u == UINT64_MAX);
    assert_int_equal(fl_parse_u64("18446744073709551616", &u), -1); /* + overflows */
    assert_int_equal(fl_parse_u64("18446744073709551620", &u), -1);
    assert_int_equal(fl_parse_u64("99999999999999999999", &u), -1); /* * overflows */
    assert_int_equal(fl_parse_u64("184467440737095516150", &u), -1);
    assert_int_equal(fl_parse_u64("0", &u), 0);
    assert_true(u == 0);
    assert_int_equal(fl_parse_u64("007", &u), 0);
    assert_true(u == 7);
    assert_int_equal(fl_parse_u64("0xffffffffffffffff", &u), 0);
    assert_true(u == UINT64_MAX);
    assert_int_equal(fl_parse_u64("0x10000000000000000", &u), -1);
    assert_int_equal(fl_parse_u64("", &u), -1);
    assert_int_equal(fl_parse_u64("1a", &u), -1);
    assert_int_equal(fl_parse_u64("-1", &u), -1);
    assert_int_equal(fl_parse_i64("-9223372036854775808", &i), 0);
    assert_true(i == INT64_MIN);
    assert_int_equal(fl_parse_i64("-9223372036854775809", &i), -1);
    assert_int_equal(fl_parse_i64("9223372036854775807", &i), 0);
    assert_true(i == INT64_MAX);
    assert_int_equal(fl_parse_i64("9223372036854775808", &i), -1);
}

/* The digit counts where fl_parse_u64 changes how it checks: any 19
 * decimal or 16 hex digits fit, a 20th decimal digit may overflow, leading
 * zeros never count. */
static void number_edges(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        int rc;
        uint64_t v;
    } cases[] = {
        {"123456789012345678", 0, 123456789012345678ULL},     /* 18 digits */
        {"1234567890123456789", 0, 1234567890123456789ULL},   /* 19 */
        {"9999999999999999999", 0, 9999999999999999999ULL},   /* largest 19 */
        {"12345678901234567890", 0, 12345678901234567890ULL}, /* 20 */
        {"10000000000000000000", 0, 10000000000000000000ULL},
        {"18446744073709551615", 0, UINT64_MAX},
        {"18446744073709551616", -1, 0},
        {"28446744073709551615", -1, 0},
        {"123456789012345678901", -1, 0}, /* 21 */
        {"000000000000000000000042", 0, 42},
        {"000000000000000000000018446744073709551615", 0, UINT64_MAX},
        {"000000000000000000000018446744073709551616", -1, 0},
        {"00000000000000000000000", 0, 0},
        {"1", 0, 1},
        {"12", 0, 12},
        {"123", 0, 123},
        {"", -1, 0},
        {"0x", -1, 0},
        {"0X", -1, 0},
        {"x1", -1, 0},
        {"12a", -1, 0},
        {"1 ", -1, 0},
        {" 1", -1, 0},
        {"+1", -1, 0},
        {"1.5", -1, 0},
        {"123456789012345678x", -1, 0},
        {"1234567890123456789x", -1, 0},
        {"12345678901234567890x", -1, 0},
        {"12:", -1, 0},
        {"12/", -1, 0},
        {"0x0", 0, 0},
        {"0x00", 0, 0},
        {"0xAbCdEf", 0, 0xabcdef},
        {"0x0123456789abcdef", 0, 0x0123456789abcdefULL},
        {"0xFEDCBA9876543210", 0, 0xfedcba9876543210ULL},  /* 16 hex digits */
        {"0x1fedcba9876543210", -1, 0},                    /* 17 */
        {"0x0fedcba9876543210", 0, 0xfedcba9876543210ULL}, /* 17 with a leading 0 */
        {"0x000000000000000000000001", 0, 1},
        {"0xg", -1, 0},
        {"0x1g", -1, 0},
        {"0x1G", -1, 0},
        {"0x@", -1, 0},
        {"0x`", -1, 0},
        {"0x1 ", -1, 0},
        {"0xx1", -1, 0},
        {"00x1", -1, 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        uint64_t u = 7;
        int rc = fl_parse_u64(cases[k].s, &u);
        if (rc != cases[k].rc || (rc == 0 && u != cases[k].v) || (rc != 0 && u != 7))
            fail_msg("fl_parse_u64(\"%s\"): want %d %llu, got %d %llu", cases[k].s, cases[k].rc,
                     (unsigned long long)cases[k].v, rc, (unsigned long long)u);
    }
    assert_int_equal(fl_parse_u64(NULL, &(uint64_t){0}), -1);

    int64_t i = 0;
    assert_int_equal(fl_parse_i64("-000000000000000000000042", &i), 0);
    assert_true(i == -42);
    assert_int_equal(fl_parse_i64("-0", &i), 0);
    assert_true(i == 0);
    assert_int_equal(fl_parse_i64("-", &i), -1);
    assert_int_equal(fl_parse_i64("--1", &i), -1);
    assert_int_equal(fl_parse_i64("-0x10", &i), 0);
    assert_true(i == -16);
    assert_int_equal(fl_parse_i64("0x7fffffffffffffff", &i), 0);
    assert_true(i == INT64_MAX);
    assert_int_equal(fl_parse_i64("0x8000000000000000", &i), -1);
    assert_int_equal(fl_parse_i64("-0x8000000000000000", &i), 0);
    assert_true(i == INT64_MIN);
    assert_int_equal(fl_parse_i64("1234567890123456789", &i), 0);
    assert_true(i == 1234567890123456789LL);
    assert_int_equal(fl_parse_i64("12345678901234567890", &i), -1);
    assert_int_equal(fl_parse_i64("", &i), -1);
    assert_int_equal(fl_parse_i64(NULL, &i), -1);
}

static void same_str(const char *what, const char *a, const char *b)
{
    if ((a == NULL) != (b == NULL) || (a && strcmp(a, b)))
        fail_msg("check and parse differ on %s: '%s' vs '%s'", what, a ? a : "(null)",
                 b ? b : "(null)");
}

/* fl_crashlog_check() against fl_crashlog_parse() on one input: the same
 * verdict and error, and on success the same strings and scalars, and no
 * arrays. */
static void check_like_parse(const char *buf, size_t len)
{
    fl_crashlog *a = NULL, *b = NULL;
    fl_crashlog_error ea, eb;
    memset(&ea, 0, sizeof ea);
    memset(&eb, 0, sizeof eb);
    int ra = fl_crashlog_parse(buf, len, &a, &ea), rb = fl_crashlog_check(buf, len, &b, &eb);
    if (ra != rb || ea.line != eb.line || strcmp(ea.message, eb.message))
        fail_msg("verdicts differ on %zu bytes: parse %d line %u '%s', check %d line %u '%s'",
                 len, ra, ea.line, ea.message, rb, eb.line, eb.message);
    if (ra == 0) {
#define S(f) same_str(#f, a->f, b->f)
        S(producer), S(producer_version), S(app_name), S(app_version), S(platform_name);
        S(cpuarch), S(platform_version), S(crash_id), S(install_id), S(os_name), S(os_version);
        S(os_pretty_name), S(kernel_version), S(executable), S(signal_name);
        S(crash_thread_name), S(exception_type), S(exception_message), S(abort_message);
#undef S
#define N(f) assert_true(a->f == b->f)
        N(log_version), N(crash_signal), N(has_crash_signal), N(uptime), N(crash_time);
        N(has_uptime), N(has_crash_time), N(pid), N(crash_tid), N(has_pid), N(has_crash_tid);
        N(crash_code), N(has_crash_code), N(crash_address), N(has_crash_address);
        N(handler_fault), N(threads_omitted), N(objects_omitted), N(vfork_parent);
#undef N
        assert_null(b->objects), assert_null(b->callstack), assert_null(b->etc);
        assert_null(b->registers), assert_null(b->stack), assert_null(b->threads);
        assert_null(b->trace), assert_null(b->breadcrumbs), assert_null(b->state);
        assert_null(b->unknown);
        assert_int_equal(b->nobjects + b->ncallstack + b->netc + b->nregisters + b->nstack +
                             b->nthreads + b->ntrace + b->nbreadcrumbs + b->nstate + b->nunknown,
                         0);
    }
    fl_crashlog_free(a);
    fl_crashlog_free(b);
}

/* Every key of the format, then every cut of it and every position
 * replaced by each of a few bytes that matter to the reader. */
/* Strings come back as valid UTF-8 whatever the log holds: '?' for each
 * byte that starts no valid sequence (a Latin-1 byte, an overlong form, a
 * surrogate), valid sequences kept; in check mode as well.  The text given
 * to the reader is not touched. */
static void utf8_fields(void **state)
{
    (void)state;
    char log[] = "FAULTLINE 1\nCRASHLOG_VERSION 2\nAPPLICATION_NAME Caf\xe9 \xc3\xa9t\xc3\xa9\n"
                 "APPLICATION_VERSION 1\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80\n"
                 "CALLSTACK 4096\nTRACE 1 2 \x80ok\xe2\x82\xac\nEND\n";
    char copy[sizeof log];
    memcpy(copy, log, sizeof log);
    for (int mode = 0; mode < 2; mode++) {
        fl_crashlog *L = NULL;
        assert_int_equal(
            (mode ? fl_crashlog_check : fl_crashlog_parse)(log, sizeof log - 1, &L, NULL), 0);
        assert_string_equal(L->app_name, "Caf? \xc3\xa9t\xc3\xa9");
        assert_string_equal(L->app_version, "1?????????");
        if (!mode)
            assert_string_equal(L->trace[0].text, "?ok\xe2\x82\xac");
        fl_crashlog_free(L);
    }
    assert_memory_equal(log, copy, sizeof log);
    const unsigned char four[] = {0xf0, 0x9f, 0x98, 0x80};
    assert_int_equal(fl_utf8_seq(four, 4), 4);
    assert_int_equal(fl_utf8_seq(four, 3), 0); /* cut short */
    assert_int_equal(fl_utf8_seq((const unsigned char *)"a", 1), 1);
}

/* TRACE_ID lines: events whose formats were kept apart
 * (FAULTLINE_TRACE_APART), their bytes, and their text from the
 * .debug_faultline_trace section. */
static void trace_id_events(void **state)
{
    (void)state;
    fl_crashlog *L =
        parse_ok(with_hdr("OBJECT app/0x1000/0x2000/0x800\nOBJECT_BUILD_ID ab\n"
                          "TRACE_ID 7 8 0x1840 sdi 0x40 0x3ff8000000000000 0xffffffffffffffff\n"
                          "TRACE_BYTES 6869\nTRACE_BYTES 0a00\nTRACE 9 8 plain\n"
                          "TRACE_ID 10 8 0x2200 -\nEND\n"));
    assert_int_equal(L->ntrace, 3);
    const fl_trace_event *e = &L->trace[0];
    assert_true(e->apart);
    assert_null(e->text);
    assert_int_equal(e->time_ns, 7);
    assert_int_equal(e->tid, 8);
    assert_int_equal(e->site, 0x1840);
    assert_string_equal(e->types, "sdi");
    assert_int_equal(e->slots[2], UINT64_MAX);
    assert_int_equal(e->nbytes, 4);
    assert_memory_equal(e->bytes, "hi\n", 4);
    assert_string_equal(L->trace[1].text, "plain");
    assert_string_equal(L->trace[2].types, "");
    /* The site in its object: 0x1840 - bias 0x800. */
    uint64_t vaddr = 0;
    assert_ptr_equal(fl_crashlog_object_at(L, e->site, &vaddr), &L->objects[0]);
    assert_int_equal(vaddr, 0x1040);
    assert_null(fl_crashlog_object_at(L, 0x3000, &vaddr));

    /* The section: site, format, file; an inlined site's repeat kept once. */
    static const unsigned char sec[] = "\x40\x10\0\0\0\0\0\0%s=%.1f %d\0a.c\0"
                                       "\x00\x20\0\0\0\0\0\0two\0b.c\0"
                                       "\x40\x10\0\0\0\0\0\0%s=%.1f %d\0a.c";
    fl_tracesec *ts = NULL;
    char err[160];
    assert_int_equal(fl_tracesec_parse(sec, sizeof sec, &ts, err, sizeof err), 0);
    assert_int_equal(fl_tracesec_count(ts), 2);
    const char *file = NULL;
    const char *fmt = fl_tracesec_find(ts, 0x1040, &file);
    assert_non_null(fmt);
    assert_string_equal(fmt, "%s=%.1f %d");
    assert_string_equal(file, "a.c");
    assert_null(fl_tracesec_find(ts, 0x1041, NULL));
    assert_string_equal(fl_tracesec_find(ts, 0x2000, NULL), "two");
    /* The text as the TRACE line would have it: the newline escaped. */
    char text[64];
    assert_int_equal(fl_trace_event_text(e, fmt, text, sizeof text), strlen("hi\\n=1.5 -1"));
    assert_string_equal(text, "hi\\n=1.5 -1");
    assert_int_equal(fl_trace_event_text(e, fmt, text, 4), 3); /* cut, NUL-terminated */
    assert_string_equal(text, "hi\\");
    fl_tracesec_free(ts);
    fl_crashlog_free(L);
    /* A cut entry refuses the section; so does an empty one. */
    for (size_t cut = 1; cut < sizeof sec - 1; cut++) {
        int rc = fl_tracesec_parse(sec, cut, &ts, err, sizeof err);
        bool whole = cut == 23 || cut == 39; /* after entries 1 and 2 */
        if (whole ? rc != 0 : rc != -1)
            fail_msg("a section of %zu bytes: %d (%s)", cut, rc, err);
        if (!whole) {
            assert_null(ts);
            assert_non_null(strstr(err, "cut short"));
        }
        fl_tracesec_free(ts);
        ts = NULL;
    }
    assert_int_equal(fl_tracesec_parse(sec, 0, &ts, err, sizeof err), -1);
    assert_non_null(strstr(err, "empty"));

    expect_error(with_hdr("TRACE_ID 1 2 0x10 ii 0x1\nEND\n"), 4, "do not match");
    expect_error(with_hdr("TRACE_ID 1 2 0x10 x 0x1\nEND\n"), 4, "do not match");
    expect_error(with_hdr("TRACE_ID 1 2 0x10 - 0x1\nEND\n"), 4, "do not match");
    expect_error(with_hdr("TRACE_ID 1 2 0x10\nEND\n"), 4, "want time, thread, site");
    expect_error(with_hdr("TRACE_ID 1 2 0x10 iiiiiiiii 1 2 3 4 5 6 7 8 9\nEND\n"), 4,
                 "more than 8");
    expect_error(with_hdr("TRACE_ID 1 2 zz -\nEND\n"), 4, "not a number");
    expect_error(with_hdr("TRACE_BYTES 00\nEND\n"), 4, "not right after a TRACE_ID");
    expect_error(with_hdr("TRACE_ID 1 2 0x10 -\nTRACE 1 2 x\nTRACE_BYTES 00\nEND\n"), 6,
                 "not right after a TRACE_ID");
    expect_error(with_hdr("TRACE_ID 1 2 0x10 -\nTRACE_BYTES 0\nEND\n"), 5, "odd");
    expect_error(with_hdr("TRACE_ID 1 2 0x10 -\nTRACE_BYTES zz\nEND\n"), 5, "not hex");
    /* At most FL_TRACE_BYTES_MAX bytes an event: 8,192 take, one more not. */
    char *t = malloc(2 * FL_TRACE_BYTES_MAX + 400);
    assert_non_null(t);
    int n = sprintf(t, "%sTRACE_ID 1 2 0x10 -\nTRACE_BYTES ", HDR);
    memset(t + n, 'a', 2 * FL_TRACE_BYTES_MAX);
    strcpy(t + n + 2 * FL_TRACE_BYTES_MAX, "\nEND\n");
    fl_crashlog *ok = parse_ok(t);
    assert_int_equal(ok->trace[0].nbytes, FL_TRACE_BYTES_MAX);
    fl_crashlog_free(ok);
    strcpy(t + n + 2 * FL_TRACE_BYTES_MAX, "\nTRACE_BYTES 00\nEND\n");
    expect_error(t, 6, "more than 8192 bytes");
    free(t);
}

static void check_mode(void **state)
{
    (void)state;
    static const char full[] =
        "# comment\r\n  FAULTLINE 0.1.0\nCRASHLOG_VERSION 2\nAPPLICATION_NAME app\t \n"
        "APPLICATION_VERSION 1.2.3\nPLATFORM_NAME linux\nCPUARCH_NAME x86-64\n"
        "PLATFORM_VERSION 6.1\nOS_NAME debian\nOS_VERSION 12\nOS_PRETTY_NAME Debian 12\n"
        "KERNEL_VERSION 6.1.0\nEXECUTABLE /usr/bin/app\nCRASH_SIGNAL 11\n"
        "CRASH_SIGNAL_NAME SIGSEGV\nCRASH_THREAD_NAME main\nHANDLER_FAULT 7\n"
        "EXCEPTION_TYPE St13runtime_error\nEXCEPTION_MESSAGE disk full\\n on /var \n"
        "ABORT_MESSAGE free(): double free detected in tcache 2\n"
        "APPLICATION_UPTIME 12\nCRASH_TIME 1700000000\nCRASH_CODE -6\nCRASH_ADDRESS 0x10\n"
        "PROCESS_ID 42\nVFORK_PARENT 41\nCRASH_THREAD 43\nCRASH_ID "
        "0a1b2c3d-0000-4000-8000-000000000001\n"
        "INSTALL_ID 00112233445566778899AABBCCDDEEFF\nOBJECT /usr/bin/app/4096/8192/4096\n"
        "OBJECT_BUILD_ID ABCDef01\nOBJECT_PATH /usr/bin/app\nOBJECT lib x.so/0x7f00/0x1000\n"
        "OBJECT_PATH /deep/lib x.so\nOBJECT_PATH_CUT 1100\nOBJECTS_OMITTED 17\n"
        "CALLSTACK 4097\nCALLSTACK 0x7f10\nREGISTER rip 0x1000\nREGISTER rsp 4096\n"
        "STACK 0x10 00ff10Ab\nSTACK 32 cafe\nTHREAD 3 worker one\nTHREAD_FRAME 0x10\n"
        "THREAD_CONTEXT 0x1\nTHREAD 4\nTHREADS_OMITTED 9\nTRACE 1 2 text of the "
        "event\nTRACE_CONTEXT 0xabc\n"
        "TRACE_ID 3 4 0x1040 sid 0x68 0x5 0x3ff8000000000000\nTRACE_BYTES 6869\n"
        "TRACE_BYTES 00\nTRACE_CONTEXT 0x9\nTRACE_ID 5 6 0x1080 -\n"
        "CRASH_CONTEXT 0x5\nBREADCRUMB 1 cat msg\n"
        "STATE_KEY k\nSTATE_VALUE v w\nETC_KEY a\nETC_VALUE b\nFUTURE_KEY some value\n"
        "END\n\n";
    const size_t n = sizeof full - 1;
    check_like_parse(full, n);
    fl_crashlog *b = NULL;
    assert_int_equal(fl_crashlog_check(full, n, &b, NULL), 0);
    assert_string_equal(b->crash_id, "0a1b2c3d-0000-4000-8000-000000000001");
    assert_string_equal(b->app_version, "1.2.3");
    fl_crashlog_free(b);
    /* The calling contexts: the crashing thread's, a thread's, an event's. */
    assert_int_equal(fl_crashlog_parse(full, n, &b, NULL), 0);
    assert_true(b->has_crash_context);
    assert_int_equal(b->crash_context, 5);
    assert_true(b->threads[0].has_context);
    assert_int_equal(b->threads[0].context, 1);
    assert_false(b->threads[1].has_context);
    assert_int_equal(b->nthreads, 2); /* THREADS_OMITTED is no thread */
    assert_int_equal(b->threads_omitted, 9);
    assert_int_equal(b->vfork_parent, 41); /* a vfork() child's log */
    /* An uncaught C++ exception: the escape stays, blanks at the end go. */
    assert_string_equal(b->exception_type, "St13runtime_error");
    assert_string_equal(b->exception_message, "disk full\\n on /var");
    assert_string_equal(b->abort_message, "free(): double free detected in tcache 2");
    /* More objects than a log keeps, and a path cut at its start. */
    assert_int_equal(b->nobjects, 2); /* OBJECTS_OMITTED is no object */
    assert_int_equal(b->objects_omitted, 17);
    assert_int_equal(b->objects[0].path_cut, 0);
    assert_string_equal(b->objects[1].path, "/deep/lib x.so");
    assert_int_equal(b->objects[1].path_cut, 1100);
    assert_int_equal(b->ntrace, 3);
    assert_true(b->trace[0].has_context);
    assert_int_equal(b->trace[0].context, 0xabc);
    assert_false(b->trace[0].apart);
    assert_true(b->trace[1].apart && b->trace[2].apart);
    assert_true(b->trace[1].has_context);
    assert_int_equal(b->trace[1].nbytes, 3);
    assert_int_equal(b->trace[2].nbytes, 0);
    fl_crashlog_free(b);
    char *m = malloc(n);
    assert_non_null(m);
    for (size_t cut = 0; cut < n; cut++)
        check_like_parse(full, cut);
    static const char bytes[] = {' ', '\n', '\0', 'x', '/', '0', '\t', '#', '_', 'Z'};
    for (size_t pos = 0; pos < n; pos++)
        for (size_t k = 0; k < sizeof bytes; k++) {
            memcpy(m, full, n);
            m[pos] = bytes[k];
            check_like_parse(m, n);
        }
    free(m);
    /* The published example and the fuzz seeds. */
    const char *files[] = {FL_TEST_DATA "/mojocrash-example.crashlog",
                           FL_TEST_DATA "/mojocrash-example-indented.crashlog"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        FILE *fp = fopen(files[i], "rb");
        assert_non_null(fp);
        char buf[8192];
        size_t got = fread(buf, 1, sizeof buf, fp);
        fclose(fp);
        check_like_parse(buf, got);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(published_example),
        cmocka_unit_test(object_fields),
        cmocka_unit_test(long_lines_and_v2),
        cmocka_unit_test(rejects),
        cmocka_unit_test(writer_escapes_and_numbers),
        cmocka_unit_test(roundtrip),
        cmocka_unit_test(numbers),
        cmocka_unit_test(number_edges),
        cmocka_unit_test(check_mode),
        cmocka_unit_test(trace_id_events),
        cmocka_unit_test(utf8_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
