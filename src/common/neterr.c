/*
 * neterr.c - the message of a failed HTTP transfer.  See fl_neterr.h.
 */
#define _GNU_SOURCE /* strcasestr */
#include "fl_neterr.h"

#include <stdio.h>
#include <string.h>

void fl_net_message(char *out, size_t cap, const char *msg, long os_errno, const char *ip,
                    long port)
{
    if (!cap)
        return;
    char where[80] = "";
    if (ip && *ip && port > 0 && !strstr(msg, ip))
        snprintf(where, sizeof where, "%.46s port %ld: ", ip, port);
    const char *why = os_errno > 0 ? strerror((int)os_errno) : NULL;
    if (why && strcasestr(msg, why))
        why = NULL;
    /* OpenSSL's words for a first answer that is no TLS record: most
     * often an https:// URL for a server that speaks plain http. */
    const char *hint = strstr(msg, "wrong version number") || strstr(msg, "packet length too long")
                           ? " (the server did not answer in TLS: is the URL's scheme right?)"
                           : "";
    snprintf(out, cap, "%s%s%s%s%s%s", where, msg, why ? " (" : "", why ? why : "", why ? ")" : "",
             hint);
}
