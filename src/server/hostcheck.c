/*
 * hostcheck.c - the Host header values the HTTP front answers to (see
 * fl_hostcheck.h for what passes and why).
 *
 * The names are lowercased once, when made; a request's Host is split from
 * its port and lowercased into a buffer on the stack, then compared: no
 * allocation, on every request.
 */
#include "fl_hostcheck.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#define NAME_MAX_LEN 253 /* a DNS name's; an IPv6 literal is shorter */

struct fl_hostcheck {
    bool active;
    int listen_family; /* AF_INET, AF_INET6, or 0: none */
    struct in_addr l4;
    struct in6_addr l6;
    char *buf;          /* the names, lowercased, each NUL-ended */
    const char **names; /* into buf */
    size_t n;
};

static bool v4_loopback(const struct in_addr *a)
{
    return (ntohl(a->s_addr) >> 24) == 127;
}

static bool v6_loopback(const struct in6_addr *a)
{
    /* ::ffff:127.x.x.x is an IPv4 loopback address too. */
    return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
}

/* Whether s (n bytes, no port) is a host name or an IP literal as a Host
 * header or --allowed-host has it: letters, digits, '-', '_' and dots, or
 * "[IPv6]". */
static bool name_chars_ok(const char *s, size_t n)
{
    if (n == 0 || n > NAME_MAX_LEN)
        return false;
    if (s[0] == '[') {
        char a[INET6_ADDRSTRLEN + 8];
        struct in6_addr six;
        if (n < 3 || s[n - 1] != ']' || n - 2 >= sizeof a)
            return false;
        memcpy(a, s + 1, n - 2);
        a[n - 2] = '\0';
        return inet_pton(AF_INET6, a, &six) == 1;
    }
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return false;
    return true;
}

/* Host's name without its port, and without the one trailing dot a fully
 * qualified name may have.  false when it is no "name[:port]". */
static bool split_host(const char *host, const char **name, size_t *len)
{
    const char *rest;
    if (host[0] == '[') {
        const char *e = strchr(host, ']');
        if (!e)
            return false;
        rest = e + 1;
    } else {
        rest = host + strcspn(host, ":");
    }
    size_t n = (size_t)(rest - host);
    if (*rest && (*rest != ':' || rest[1 + strspn(rest + 1, "0123456789")]))
        return false;
    if (n > 1 && host[n - 1] == '.')
        n--;
    *name = host;
    *len = n;
    return n > 0;
}

fl_hostcheck *fl_hostcheck_new(const char *listen_addr, const char *names, char *err, size_t errlen)
{
    fl_hostcheck *hc = calloc(1, sizeof *hc);
    size_t len = names ? strlen(names) : 0;
    if (!hc || !(hc->buf = malloc(len + 1)) ||
        !(hc->names = calloc(len / 2 + 1, sizeof *hc->names))) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (listen_addr && inet_pton(AF_INET, listen_addr, &hc->l4) == 1)
        hc->listen_family = AF_INET;
    else if (listen_addr && inet_pton(AF_INET6, listen_addr, &hc->l6) == 1)
        hc->listen_family = AF_INET6;
    bool any = false;
    char *w = hc->buf;
    for (const char *p = names; p && *p;) {
        size_t k = strcspn(p, ",");
        const char *s = p;
        size_t n = k;
        while (n && *s == ' ')
            s++, n--;
        while (n && s[n - 1] == ' ')
            n--;
        p += k + (p[k] == ',');
        bool wild = n > 2 && s[0] == '*' && s[1] == '.';
        if (n == 1 && s[0] == '*') {
            any = true;
        } else if (n && s[0] != '[' && memchr(s, ':', n)) {
            snprintf(err, errlen,
                     "--allowed-host: '%.*s': give the name without a port (any port is "
                     "accepted)",
                     (int)(n > 80 ? 80 : n), s);
            goto fail;
        } else if (!name_chars_ok(wild ? s + 2 : s, wild ? n - 2 : n)) {
            snprintf(err, errlen,
                     "--allowed-host: '%.*s' is not a host name (e.g. crash.example.com, "
                     "*.example.com, 192.0.2.1, [2001:db8::1] or *)",
                     (int)(n > 80 ? 80 : n), s);
            goto fail;
        }
        if (n == 1 && s[0] == '*')
            continue;
        hc->names[hc->n++] = w;
        for (size_t i = 0; i < n; i++)
            *w++ = (char)tolower((unsigned char)s[i]);
        /* "example.com." is example.com, as split_host() takes it. */
        if (n > 1 && w[-1] == '.')
            w--;
        *w++ = '\0';
    }
    bool loopback = (hc->listen_family == AF_INET && v4_loopback(&hc->l4)) ||
                    (hc->listen_family == AF_INET6 && v6_loopback(&hc->l6));
    hc->active = !any && (names ? hc->n > 0 : loopback);
    if (names && !any && !hc->n) {
        snprintf(err, errlen, "--allowed-host: no name given");
        goto fail;
    }
    return hc;
fail:
    fl_hostcheck_free(hc);
    return NULL;
}

void fl_hostcheck_free(fl_hostcheck *hc)
{
    if (!hc)
        return;
    free(hc->names);
    free(hc->buf);
    free(hc);
}

bool fl_hostcheck_active(const fl_hostcheck *hc)
{
    return hc && hc->active;
}

bool fl_hostcheck_ok(const fl_hostcheck *hc, const char *host)
{
    if (!fl_hostcheck_active(hc))
        return true;
    const char *s;
    size_t n;
    if (!host || !split_host(host, &s, &n) || !name_chars_ok(s, n))
        return false;
    char b[NAME_MAX_LEN + 1];
    for (size_t i = 0; i < n; i++)
        b[i] = (char)tolower((unsigned char)s[i]);
    b[n] = '\0';

    /* The loopback names and the listen address. */
    if (!strcmp(b, "localhost") || (n > 10 && !strcmp(b + n - 10, ".localhost")))
        return true;
    if (b[0] == '[') {
        struct in6_addr a;
        b[n - 1] = '\0';
        int rc = inet_pton(AF_INET6, b + 1, &a);
        b[n - 1] = ']';
        if (rc == 1 &&
            (v6_loopback(&a) || (hc->listen_family == AF_INET6 && !memcmp(&a, &hc->l6, sizeof a))))
            return true;
    } else {
        struct in_addr a;
        if (inet_pton(AF_INET, b, &a) == 1 &&
            (v4_loopback(&a) || (hc->listen_family == AF_INET && a.s_addr == hc->l4.s_addr)))
            return true;
    }

    /* The names given. */
    for (size_t i = 0; i < hc->n; i++) {
        const char *m = hc->names[i];
        if (m[0] == '*') { /* "*.example.com": a name under example.com */
            size_t k = strlen(m + 1);
            if (n > k && !strcmp(b + n - k, m + 1))
                return true;
        } else if (!strcmp(b, m)) {
            return true;
        }
    }
    return false;
}
