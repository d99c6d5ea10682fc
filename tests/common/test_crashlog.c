/* Reader and writer of the crash-log format. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl_crashlog.h"

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
    expect_error("MOJOCRASH 1\nAPPLICATION_NAME x\nEND\n", 2, "CRASHLOG_VERSION");
    expect_error("MOJOCRASH 1\nCRASHLOG_VERSION 1\nAPPLICATION_NAME x\nCALLSTACK 12\n", 4,
                 "no END");
    /* Truncated in the middle of a line. */
    expect_error("MOJOCRASH 1\nCRASHLOG_VERSION 1\nAPPLICATION_NAME x\nCALLSTACK 1", 4, "no END");
    expect_error(with_hdr("CALLSTACK 12x\nEND\n"), 4, "not a number");
    expect_error(with_hdr("CALLSTACK 99999999999999999999999\nEND\n"), 4, "not a number");
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(published_example), cmocka_unit_test(object_fields),
        cmocka_unit_test(long_lines_and_v2), cmocka_unit_test(rejects),
        cmocka_unit_test(writer_escapes_and_numbers), cmocka_unit_test(roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
