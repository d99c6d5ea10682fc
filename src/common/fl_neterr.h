/* fl_neterr.h - the message of a failed HTTP transfer, as the programs
 * that send (faultline-report, `faultline submit`, `faultline symbols
 * add`) say it. */
#ifndef FL_NETERR_H
#define FL_NETERR_H

#include <stddef.h>

/* msg (libcurl's error buffer, else its code's text) into out (cap
 * bytes), with the system's reason for a failed connection after it,
 * "(Connection refused)", when os_errno (CURLINFO_OS_ERRNO; 0: none) is
 * set and msg does not already say it: libcurl 7.88 says "Couldn't connect
 * to server" alike for a port nothing listens on, a host that does not
 * answer and a network out of reach, and the person needs to know which.
 * ip and port (CURLINFO_PRIMARY_IP/_PORT: NULL or "" and 0 when no
 * connection was made) go before msg when it does not name the address
 * itself ("127.0.0.1 port 8080: Operation timed out after ..."), and a TLS
 * handshake with a server that answered in plain HTTP says so.
 * Not signal safe (strerror). */
void fl_net_message(char *out, size_t cap, const char *msg, long os_errno, const char *ip,
                    long port);

#endif /* FL_NETERR_H */
