/*
 * neterr.c - the message of a failed HTTP transfer.  See fl_neterr.h.
 */
#define _GNU_SOURCE /* strcasestr */
#include "fl_neterr.h"

#include <stdio.h>
#include <string.h>

void fl_net_message(char *out, size_t cap, const char *msg, long os_errno)
{
    if (!cap)
        return;
    const char *why = os_errno > 0 ? strerror((int)os_errno) : NULL;
    if (why && !strcasestr(msg, why))
        snprintf(out, cap, "%s (%s)", msg, why);
    else
        snprintf(out, cap, "%s", msg);
}
