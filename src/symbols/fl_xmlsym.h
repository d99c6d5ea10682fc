/*
 * fl_xmlsym.h - the XML symbolication request and response.
 *
 * A client (or a script) posts a crash report wrapped in XML, the server
 * answers with the same report annotated: every line that names a code
 * address in a known module gets the function, file, line and column of
 * that address.  The schema (docs/symbolication-server.md):
 *
 *   <symbolicationRequest version="1">
 *     <crashReport><![CDATA[ ...the report, any text... ]]></crashReport>
 *     <binaryImages>                                   (optional)
 *       <image name="app" start="0x55d0c2a00000" size="0x4030"
 *              bias="0x55d0c2a00000" buildId="3c2f..." path="/opt/app"/>
 *     </binaryImages>
 *   </symbolicationRequest>
 *
 *   <symbolicationResponse version="1" candidates="N" annotated="N" unresolved="N">
 *     <annotatedReport><![CDATA[ ...annotated report... ]]></annotatedReport>
 *   </symbolicationResponse>
 *
 * Lines needing annotation are found with PCRE2: CALLSTACK and
 * THREAD_FRAME lines of a Faultline/MojoCrash log (followed by comment
 * lines "#   -> function at file:line:column in module+0xREL", one per
 * inline level, so the log stays parseable), and frame lines of a textual
 * backtrace ("#3 0x7f.. in ..", "12 0x7f..", "prog(+0x1139)[0x55..]"),
 * annotated at the end of the line (" => function at file:line:column
 * (module+0xREL)").
 * Modules come from the report's OBJECT / OBJECT_BUILD_ID / OBJECT_PATH
 * lines and from <binaryImages>.  module-relative address = absolute - bias
 * (the OBJECT's 4th field, an image's bias), or absolute - start address
 * when no bias is known; a return address (every frame but the first of a
 * stack) is looked up at address - 1.
 *
 * Parsing is libxml2 with a fresh parser context per request, XML_PARSE_NONET,
 * no entity substitution, no DTD loading; a document with a DOCTYPE is
 * rejected as soon as the parser meets it (before any entity is declared),
 * and the process-wide external entity loader is replaced by one that
 * refuses and counts (fl_xmlsym_external_loads), so no file or network
 * access can come from a request.
 *
 * Threads: every function may be called from any number of threads at once
 * (libxml2 is initialised once, internally).
 */
#ifndef FL_XMLSYM_H
#define FL_XMLSYM_H

#include <stddef.h>
#include <stdint.h>

#include "fl_symcache.h"

#define FL_XMLSYM_ERRORS(X)                                                                        \
    X(FL_XMLSYM_OK, 0, "ok", "success")                                                            \
    X(FL_XMLSYM_EMALFORMED, -1, "malformed", "the request is not well-formed XML")                 \
    X(FL_XMLSYM_EDOCTYPE, -2, "doctype", "DOCTYPE declarations are not accepted")                  \
    X(FL_XMLSYM_ESCHEMA, -3, "schema", "the request does not follow the symbolicationRequest schema") \
    X(FL_XMLSYM_ETOOBIG, -4, "too-big", "the request or its answer exceeds a size limit")          \
    X(FL_XMLSYM_ENOMEM, -5, "no-memory", "out of memory")                                          \
    X(FL_XMLSYM_EINTERNAL, -6, "internal", "internal error")

enum {
#define FL_XMLSYM_ENUM_(name, value, tag, text) name = value,
    FL_XMLSYM_ERRORS(FL_XMLSYM_ENUM_)
#undef FL_XMLSYM_ENUM_
};

const char *fl_xmlsym_strerror(int code);
/* Short tag of a code ("malformed", "doctype", ...), used in error responses. */
const char *fl_xmlsym_errtag(int code);

#define FL_XMLSYM_MAX_REQUEST (17u << 20) /* bytes of XML accepted */
#define FL_XMLSYM_MAX_RESPONSE (64u << 20)
#define FL_XMLSYM_MAX_IMAGES 4096
#define FL_XMLSYM_MAX_FRAMES 32 /* inline depth shown per address */

/* A module of the crashed process.  Strings may be NULL. */
typedef struct fl_xmlsym_module {
    const char *name;
    uint64_t base; /* start address */
    uint64_t size;
    uint64_t bias; /* load bias; used when has_bias */
    int has_bias;
    const char *build_id; /* lowercase hex */
    const char *path;
} fl_xmlsym_module;

/* The symbolication hook: fill at most max frames (innermost first, the
 * last the real function, as fl_symcache_lookup does) for module-relative
 * address rel of mod; return how many were filled, 0 when the module or
 * address is unknown.  The frames' strings need only stay valid until the
 * next call of the hook.  Called from the thread that called annotate. */
typedef size_t (*fl_xmlsym_resolve_fn)(void *ctx, const fl_xmlsym_module *mod, uint64_t rel,
                                       fl_symframe *frames, size_t max);

typedef struct fl_xmlsym_request fl_xmlsym_request;

/* Parse a request.  OUT: *out (free with fl_xmlsym_request_free).
 * Returns 0 or a negative FL_XMLSYM_ code with err (line and reason). */
int fl_xmlsym_parse_request(const char *xml, size_t len, fl_xmlsym_request **out, char *err,
                            size_t errlen);
void fl_xmlsym_request_free(fl_xmlsym_request *req); /* NULL is harmless */
/* The crash report text (borrowed from req, NUL-terminated). */
const char *fl_xmlsym_request_report(const fl_xmlsym_request *req, size_t *len);
/* The <binaryImages> entries (borrowed from req); returns their count. */
size_t fl_xmlsym_request_images(const fl_xmlsym_request *req, const fl_xmlsym_module **images);

typedef struct fl_xmlsym_stats {
    size_t lines;      /* lines of the report */
    size_t candidates; /* lines matching a frame pattern with an address in a known module */
    size_t annotated;  /* of those, resolved to at least a function or a file */
    size_t unresolved;
} fl_xmlsym_stats;

/*
 * Annotate a report.  images (may be NULL) adds modules to the report's own
 * OBJECT lines.  OUT: *out (NUL-terminated, caller frees), *outlen, *st
 * (may be NULL).  Returns 0 or a negative FL_XMLSYM_ code.
 */
int fl_xmlsym_annotate(const char *report, size_t len, const fl_xmlsym_module *images,
                       size_t nimages, fl_xmlsym_resolve_fn fn, void *ctx, char **out,
                       size_t *outlen, fl_xmlsym_stats *st, char *err, size_t errlen);

/* Build the response document around an annotated report.  "]]>" in the
 * text is split across two CDATA sections; characters XML cannot carry
 * become '?'.  OUT: *out (caller frees), *outlen.  0 or a negative code. */
int fl_xmlsym_response(const char *annotated, size_t len, const fl_xmlsym_stats *st, char **out,
                       size_t *outlen);

/* <symbolicationResponse version="1"><error code="TAG">message</error>...
 * for a failed request.  OUT: *out (caller frees).  0 or FL_XMLSYM_ENOMEM. */
int fl_xmlsym_error_response(int code, const char *message, char **out, size_t *outlen);

/*
 * The whole endpoint: parse, annotate, build the response.  On failure the
 * return is negative, err says why, and *resp is still an error response
 * document (unless memory ran out) that the server may send with a 4xx.
 */
int fl_xmlsym_handle(const char *xml, size_t len, fl_xmlsym_resolve_fn fn, void *ctx, char **resp,
                     size_t *resplen, char *err, size_t errlen);

/* How many times libxml2 tried to load an external entity or DTD since
 * the process started (every attempt is refused).  For tests. */
unsigned long fl_xmlsym_external_loads(void);

#endif
