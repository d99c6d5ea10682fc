/*
 * Unit tests of fl_net_message: a failed transfer's message gets the
 * system's reason for a failed connection once, and only when there is
 * one.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fl_neterr.h"

static void test_message(void **st)
{
    (void)st;
    char out[256];
    /* libcurl 7.88's words for a refused connection: the reason added. */
    fl_net_message(out, sizeof out, "Failed to connect to 127.0.0.1 port 9: Couldn't connect",
                   ECONNREFUSED, "127.0.0.1", 9);
    assert_string_equal(out, "Failed to connect to 127.0.0.1 port 9: Couldn't connect "
                             "(Connection refused)");
    /* Newer libcurl says it itself (in any case): not twice. */
    fl_net_message(out, sizeof out, "Failed to connect to h port 9: connection refused",
                   ECONNREFUSED, NULL, 0);
    assert_string_equal(out, "Failed to connect to h port 9: connection refused");
    /* No system error (a timeout, TLS, an HTTP-level failure): as it was. */
    fl_net_message(out, sizeof out, "Operation timed out after 2000 milliseconds", 0, "", 0);
    assert_string_equal(out, "Operation timed out after 2000 milliseconds");
    /* Connected, then no answer: the address the message does not name
     * goes first, so the person knows which server it was. */
    fl_net_message(out, sizeof out, "Operation timed out after 2000 milliseconds", 0, "::1", 8080);
    assert_string_equal(out, "::1 port 8080: Operation timed out after 2000 milliseconds");
    /* https:// to a plain-http server: OpenSSL's words, and what they mean. */
    fl_net_message(out, sizeof out,
                   "OpenSSL/3.0: error:0A00010B:SSL routines::wrong version number", 0, "10.0.0.1",
                   80);
    assert_non_null(strstr(out, "10.0.0.1 port 80: OpenSSL/3.0: "));
    assert_non_null(strstr(out, "wrong version number (the server did not answer in TLS: is the "
                                "URL's scheme right?)"));
    /* Cut to the room there is, still a string. */
    char small[12];
    fl_net_message(small, sizeof small, "Couldn't connect", ECONNREFUSED, NULL, 0);
    assert_string_equal(small, "Couldn't co");
    fl_net_message(small, 0, "x", 0, "1.2.3.4", 1); /* no room: nothing written */
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_message)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
