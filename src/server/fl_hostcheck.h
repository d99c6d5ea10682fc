/*
 * fl_hostcheck.h - the Host header values the HTTP front answers to.
 *
 * A page in a victim's browser can read a server on the victim's loopback
 * or private network by DNS rebinding: its own name is made to resolve to
 * that address, and the browser, taking the server for the page's origin,
 * lets the page read the answers -- of /metrics, /buildid/..., /healthz,
 * anything that needs no credentials.  The browser still sends the page's
 * name as Host, so a server that answers only to its own names is safe.
 *
 * What passes:
 *   - any Host, with `*` among the names, or with no names given and a
 *     listen address that is not loopback (0.0.0.0, a LAN or public IP:
 *     what the server's names are is the operator's to say);
 *   - always: the loopback names (localhost, *.localhost, 127.x.x.x,
 *     [::1]) and the listen address itself, with any port: no rebinding
 *     page can make a browser send those;
 *   - the names given (any port), a name "*.example.com" any name under
 *     example.com.
 * With no names given and a loopback listen address, then, only the
 * loopback names pass.
 *
 * Thread-safe once made: fl_hostcheck_ok() only reads.
 */
#ifndef FL_HOSTCHECK_H
#define FL_HOSTCHECK_H

#include <stdbool.h>
#include <stddef.h>

typedef struct fl_hostcheck fl_hostcheck;

/* A check for a server listening on listen_addr (an IPv4 or IPv6 address
 * as --listen gives it; "" or NULL: none, as a driven loop's), answering
 * to names: --allowed-host's values, comma-separated (NULL: none given).
 * NULL with err when a name is not one ("name:port", a space, an empty
 * one) or out of memory.  The caller frees it with fl_hostcheck_free
 * (NULL is fine). */
fl_hostcheck *fl_hostcheck_new(const char *listen_addr, const char *names, char *err,
                               size_t errlen);
void fl_hostcheck_free(fl_hostcheck *hc);

/* false: every Host passes, and the caller may skip the check. */
bool fl_hostcheck_active(const fl_hostcheck *hc);

/* Whether a request with this Host header value (borrowed, "name",
 * "name:port" or "[v6]:port") is answered.  No allocation: a few string
 * compares, on every request. */
bool fl_hostcheck_ok(const fl_hostcheck *hc, const char *host);

#endif
