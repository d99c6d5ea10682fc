/*
 * fl_portal.h - the web portal's files (src/server/portal/), compiled into
 * the binary by cmake/embed.cmake and served by http.c at / (to
 * browsers), /portal.js and /portal.css.
 */
#ifndef FL_PORTAL_H
#define FL_PORTAL_H

#include <stddef.h>

typedef struct fl_portal_asset {
    const char *path; /* "/index.html", "/portal.js", ... */
    const unsigned char *bytes;
    size_t size;
} fl_portal_asset;

extern const fl_portal_asset fl_portal_assets[]; /* ends with path NULL */

#endif /* FL_PORTAL_H */
