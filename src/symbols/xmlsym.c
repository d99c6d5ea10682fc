/*
 * xmlsym.c - XML symbolication request -> annotated report -> response.
 *
 * How this works: the request is parsed by libxml2 into a tree with a
 * parser context made for this request alone; its SAX internalSubset hook
 * stops the parser at the first DOCTYPE, so no entity is ever declared, let
 * alone expanded.  The report text is then read line by line: a few PCRE2
 * patterns (compiled once) say which lines name modules (OBJECT...) and
 * which name code addresses.  The module table is built first (one pass),
 * then the lines are copied to the output with annotations added.  The
 * response is written by hand, not with libxml2's serializer, because the
 * report must travel in CDATA sections split around every "]]>", and
 * libxml2 would write a CDATA node's "]]>" verbatim.
 */
#define _GNU_SOURCE
#define PCRE2_CODE_UNIT_WIDTH 8
#include <limits.h>
#include <pcre2.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

#include "fl_crashlog.h"
#include "fl_hex.h"
#include "fl_xmlsym.h"

/* ------------------------------------------------------------------ */
/* Errors.                                                             */

const char *fl_xmlsym_strerror(int code)
{
    switch (code) {
#define FL_XMLSYM_STR_(name, value, tag, text)                                                     \
    case value:                                                                                    \
        return text;
        FL_XMLSYM_ERRORS(FL_XMLSYM_STR_)
#undef FL_XMLSYM_STR_
    }
    return "unknown error";
}

const char *fl_xmlsym_errtag(int code)
{
    switch (code) {
#define FL_XMLSYM_TAG_(name, value, tag, text)                                                     \
    case value:                                                                                    \
        return tag;
        FL_XMLSYM_ERRORS(FL_XMLSYM_TAG_)
#undef FL_XMLSYM_TAG_
    }
    return "unknown";
}

static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
    if (!errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------------ */
/* A growable output buffer with a hard cap.                           */

typedef struct sbuf {
    char *p;
    size_t len, cap;
    size_t max;
    int failed; /* FL_XMLSYM_ENOMEM or FL_XMLSYM_ETOOBIG once something did not fit */
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (n > b->max - b->len) {
        b->failed = FL_XMLSYM_ETOOBIG;
        return;
    }
    if (b->len + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        while (nc < b->len + n + 1)
            nc *= 2;
        char *np = realloc(b->p, nc);
        if (!np) {
            b->failed = FL_XMLSYM_ENOMEM;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_str(sbuf *b, const char *s)
{
    sb_put(b, s, strlen(s));
}

static void sb_fmt(sbuf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    sb_put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* Decodes one UTF-8 character of s[0..n) that XML 1.0 allows; returns its
 * length, or 0 when the bytes are not one (bad UTF-8, control byte,
 * surrogate, U+FFFE/U+FFFF). */
static size_t xml_char_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    if (c < 0x80)
        return (c >= 0x20 || c == '\t' || c == '\n' || c == '\r') && c != 0x7f ? 1 : 0;
    size_t len;
    uint32_t cp;
    if ((c & 0xe0) == 0xc0) {
        len = 2;
        cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
        len = 3;
        cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
        len = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe ||
        cp == 0xffff)
        return 0;
    return len;
}

/* Appends text as XML-safe characters: anything XML cannot carry is '?'. */
static void sb_xml_safe(sbuf *b, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, run = 0;
    while (i < n) {
        size_t l = xml_char_len(u + i, n - i);
        if (l) {
            i += l;
            continue;
        }
        sb_put(b, s + run, i - run);
        sb_put(b, "?", 1);
        i++;
        run = i;
    }
    sb_put(b, s + run, n - run);
}

/* Text inside CDATA: every "]]>" becomes "]]" + "]]><![CDATA[" + ">", i.e.
 * the section is closed between "]]" and ">" and a new one opened. */
static void sb_cdata(sbuf *b, const char *s, size_t n)
{
    sb_str(b, "<![CDATA[");
    size_t start = 0;
    for (size_t i = 0; i + 2 < n; i++) {
        if (s[i] == ']' && s[i + 1] == ']' && s[i + 2] == '>') {
            sb_xml_safe(b, s + start, i + 2 - start);
            sb_str(b, "]]><![CDATA[");
            start = i + 2;
        }
    }
    sb_xml_safe(b, s + start, n - start);
    sb_str(b, "]]>");
}

/* Escaped attribute or element text. */
static void sb_escaped(sbuf *b, const char *s)
{
    size_t n = strlen(s), run = 0;
    for (size_t i = 0; i < n; i++) {
        const char *rep = NULL;
        switch (s[i]) {
        case '&':
            rep = "&amp;";
            break;
        case '<':
            rep = "&lt;";
            break;
        case '>':
            rep = "&gt;";
            break;
        case '"':
            rep = "&quot;";
            break;
        case '\'':
            rep = "&apos;";
            break;
        default:
            continue;
        }
        sb_xml_safe(b, s + run, i - run);
        sb_str(b, rep);
        run = i + 1;
    }
    sb_xml_safe(b, s + run, n - run);
}

/* ------------------------------------------------------------------ */
/* One-time setup: libxml2 and the patterns.                           */

static atomic_ulong external_loads;

/* Replaces libxml2's loader for the whole process: nothing a document
 * names (DTD, external entity, XInclude) is ever fetched. */
static xmlParserInputPtr deny_loader(const char *url, const char *id, xmlParserCtxtPtr ctxt)
{
    atomic_fetch_add(&external_loads, 1);
    return NULL;
}

unsigned long fl_xmlsym_external_loads(void)
{
    return atomic_load(&external_loads);
}

enum { P_KEYFRAME, P_THREAD, P_OBJECT, P_OBJID, P_OBJPATH, P_TEXTFRAME, P_GLIBC, P_COUNT };

static const char *const patterns[P_COUNT] = {
    /* CALLSTACK 94364374192441 / THREAD_FRAME 0x7f5a8c2e1f2a */
    [P_KEYFRAME] = "^([ \\t]*)(CALLSTACK|THREAD_FRAME)[ \\t]+(0[xX][0-9a-fA-F]{1,16}|[0-9]{1,20})"
                   "[ \\t]*$",
    [P_THREAD] = "^[ \\t]*THREAD[ \\t]",
    [P_OBJECT] = "^[ \\t]*OBJECT[ \\t]+(\\S.*?)[ \\t]*$",
    [P_OBJID] = "^[ \\t]*OBJECT_BUILD_ID[ \\t]+([0-9a-fA-F]{2,128})[ \\t]*$",
    [P_OBJPATH] = "^[ \\t]*OBJECT_PATH[ \\t]+(\\S.*?)[ \\t]*$",
    /* "#3  0x00007f.. in f () at x.c:1", "3 0x7f..", "frame 3: 0x.." */
    [P_TEXTFRAME] = "^[ \\t]*#?([0-9]{1,4})[ \\t:]+(?:.*?[^0-9A-Za-z_])?0[xX]([0-9a-fA-F]{1,16})"
                    "(?![0-9A-Za-z_])",
    /* backtrace_symbols_fd(): "./prog(main+0x1d)[0x55d0c2a01139]" */
    [P_GLIBC] = "\\[0[xX]([0-9a-fA-F]{1,16})\\][ \\t]*$",
};

static pcre2_code *compiled[P_COUNT];
static int init_ok;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void do_init(void)
{
    xmlInitParser();
    xmlSetExternalEntityLoader(deny_loader);
    for (int i = 0; i < P_COUNT; i++) {
        int ec;
        PCRE2_SIZE eo;
        compiled[i] = pcre2_compile((PCRE2_SPTR)patterns[i], PCRE2_ZERO_TERMINATED, 0, &ec, &eo,
                                    NULL);
        if (!compiled[i])
            return;
        /* JIT is an optimisation only; matching works without it. */
        (void)pcre2_jit_compile(compiled[i], PCRE2_JIT_COMPLETE);
    }
    init_ok = 1;
}

static int ensure_init(void)
{
    pthread_once(&init_once, do_init);
    return init_ok ? 0 : FL_XMLSYM_EINTERNAL;
}

/* ------------------------------------------------------------------ */
/* The request.                                                        */

struct fl_xmlsym_request {
    char *report;
    size_t report_len;
    fl_xmlsym_module *images;
    size_t nimages;
};

void fl_xmlsym_request_free(fl_xmlsym_request *req)
{
    if (!req)
        return;
    for (size_t i = 0; i < req->nimages; i++) {
        free((char *)req->images[i].name);
        free((char *)req->images[i].build_id);
        free((char *)req->images[i].path);
    }
    free(req->images);
    free(req->report);
    free(req);
}

const char *fl_xmlsym_request_report(const fl_xmlsym_request *req, size_t *len)
{
    if (len)
        *len = req->report_len;
    return req->report;
}

size_t fl_xmlsym_request_images(const fl_xmlsym_request *req, const fl_xmlsym_module **images)
{
    *images = req->images;
    return req->nimages;
}

typedef struct parse_state {
    int doctype_seen;
    int first_line;
    char first[200]; /* the first error: later ones are often its echo */
} parse_state;

/* Per-context structured error handler (data is ctxt->userData, the
 * context itself): keeps the first error, prints nothing. */
static void first_error(void *data, xmlErrorPtr e)
{
    xmlParserCtxtPtr ctxt = data;
    parse_state *ps = ctxt ? ctxt->_private : NULL;
    if (!ps || ps->first[0] || !e || !e->message || e->level < XML_ERR_ERROR)
        return;
    size_t ml = strlen(e->message);
    while (ml && (e->message[ml - 1] == '\n' || e->message[ml - 1] == ' '))
        ml--;
    snprintf(ps->first, sizeof ps->first, "%.*s", (int)(ml > 180 ? 180 : ml), e->message);
    ps->first_line = e->line;
}

static void deny_internal_subset(void *ctx, const xmlChar *name, const xmlChar *ext_id,
                                 const xmlChar *sys_id)
{
    xmlParserCtxtPtr ctxt = ctx;
    parse_state *ps = ctxt->_private;
    ps->doctype_seen = 1;
    xmlStopParser(ctxt);
}

static int is_elem(const xmlNode *n, const char *name)
{
    return n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0;
}

/* An attribute as a malloc'd string, or NULL. */
static char *attr_dup(xmlNode *n, const char *name)
{
    xmlChar *v = xmlGetProp(n, (const xmlChar *)name);
    if (!v)
        return NULL;
    char *s = strdup((const char *)v);
    xmlFree(v);
    return s;
}

static int attr_u64(xmlNode *n, const char *name, uint64_t *out, int *present)
{
    xmlChar *v = xmlGetProp(n, (const xmlChar *)name);
    *present = v != NULL;
    if (!v)
        return 0;
    int rc = fl_parse_u64((const char *)v, out);
    xmlFree(v);
    return rc;
}

static int parse_image(xmlNode *n, fl_xmlsym_module *m, char *err, size_t errlen)
{
    int have_start, have_size, have_end, have_bias;
    uint64_t end = 0;
    memset(m, 0, sizeof *m);
    if (attr_u64(n, "start", &m->base, &have_start) || !have_start ||
        attr_u64(n, "size", &m->size, &have_size) || attr_u64(n, "end", &end, &have_end) ||
        attr_u64(n, "bias", &m->bias, &have_bias)) {
        seterr(err, errlen, "line %d: <image> needs a numeric start and numeric size/end/bias",
               n->line);
        return FL_XMLSYM_ESCHEMA;
    }
    if (!have_size && have_end)
        m->size = end > m->base ? end - m->base : 0;
    m->has_bias = have_bias;
    m->name = attr_dup(n, "name");
    m->build_id = attr_dup(n, "buildId");
    m->path = attr_dup(n, "path");
    return 0;
}

static int request_from_doc(xmlDoc *doc, fl_xmlsym_request *req, char *err, size_t errlen)
{
    xmlNode *root = xmlDocGetRootElement(doc);
    if (!root || !is_elem(root, "symbolicationRequest")) {
        seterr(err, errlen, "the root element must be <symbolicationRequest>");
        return FL_XMLSYM_ESCHEMA;
    }
    xmlChar *ver = xmlGetProp(root, (const xmlChar *)"version");
    if (ver) {
        int ok = strcmp((const char *)ver, "1") == 0;
        xmlFree(ver);
        if (!ok) {
            seterr(err, errlen, "unsupported symbolicationRequest version (1 is known)");
            return FL_XMLSYM_ESCHEMA;
        }
    }
    xmlNode *report = NULL, *images = NULL;
    for (xmlNode *c = root->children; c; c = c->next) {
        if (is_elem(c, "crashReport") && !report)
            report = c;
        else if (is_elem(c, "binaryImages") && !images)
            images = c;
    }
    if (!report) {
        seterr(err, errlen, "<symbolicationRequest> has no <crashReport>");
        return FL_XMLSYM_ESCHEMA;
    }
    /* Only text and CDATA children make up the report: no DOCTYPE got
     * through, so there are no entity reference nodes to expand. */
    size_t total = 0;
    for (xmlNode *c = report->children; c; c = c->next) {
        if (c->type == XML_ELEMENT_NODE) {
            seterr(err, errlen, "line %d: <crashReport> must hold text only", c->line);
            return FL_XMLSYM_ESCHEMA;
        }
        if ((c->type == XML_TEXT_NODE || c->type == XML_CDATA_SECTION_NODE) && c->content)
            total += strlen((const char *)c->content);
    }
    if (total > FL_CRASHLOG_MAX_BYTES) {
        seterr(err, errlen, "the crash report exceeds %u bytes", FL_CRASHLOG_MAX_BYTES);
        return FL_XMLSYM_ETOOBIG;
    }
    if (!(req->report = malloc(total + 1)))
        return FL_XMLSYM_ENOMEM;
    for (xmlNode *c = report->children; c; c = c->next)
        if ((c->type == XML_TEXT_NODE || c->type == XML_CDATA_SECTION_NODE) && c->content) {
            size_t l = strlen((const char *)c->content);
            memcpy(req->report + req->report_len, c->content, l);
            req->report_len += l;
        }
    req->report[req->report_len] = '\0';

    if (images) {
        size_t n = 0;
        for (xmlNode *c = images->children; c; c = c->next)
            if (is_elem(c, "image"))
                n++;
        if (n > FL_XMLSYM_MAX_IMAGES) {
            seterr(err, errlen, "more than %d binary images", FL_XMLSYM_MAX_IMAGES);
            return FL_XMLSYM_ETOOBIG;
        }
        if (n && !(req->images = calloc(n, sizeof *req->images)))
            return FL_XMLSYM_ENOMEM;
        for (xmlNode *c = images->children; c; c = c->next) {
            if (!is_elem(c, "image"))
                continue;
            int rc = parse_image(c, &req->images[req->nimages], err, errlen);
            req->nimages++; /* counted even on failure, so free() sees its strings */
            if (rc)
                return rc;
        }
    }
    return 0;
}

int fl_xmlsym_parse_request(const char *xml, size_t len, fl_xmlsym_request **out, char *err,
                            size_t errlen)
{
    *out = NULL;
    if (errlen)
        err[0] = '\0';
    int rc = ensure_init();
    if (rc) {
        seterr(err, errlen, "cannot compile the annotation patterns");
        return rc;
    }
    if (!xml || len > FL_XMLSYM_MAX_REQUEST || len > INT_MAX) {
        seterr(err, errlen, "the request exceeds %u bytes", FL_XMLSYM_MAX_REQUEST);
        return FL_XMLSYM_ETOOBIG;
    }
    parse_state ps = {0};
    xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
    if (!ctxt)
        return FL_XMLSYM_ENOMEM;
    ctxt->_private = &ps;
    ctxt->sax->internalSubset = deny_internal_subset;
    ctxt->sax->serror = first_error;
    /* No XML_PARSE_NOENT (no entity substitution), no DTDLOAD/DTDATTR/
     * DTDVALID, no XINCLUDE, no HUGE (libxml2's own depth/size limits
     * stay on). */
    xmlDoc *doc = xmlCtxtReadMemory(ctxt, xml, (int)len, "request.xml", NULL,
                                    XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    if (ps.doctype_seen) {
        seterr(err, errlen, "%s", fl_xmlsym_strerror(FL_XMLSYM_EDOCTYPE));
        rc = FL_XMLSYM_EDOCTYPE;
        goto done;
    }
    if (!doc || !ctxt->wellFormed) {
        const xmlError *e = xmlCtxtGetLastError(ctxt);
        if (ps.first[0]) {
            seterr(err, errlen, "line %d: %s", ps.first_line, ps.first);
        } else if (e && e->message) {
            size_t ml = strlen(e->message);
            while (ml && (e->message[ml - 1] == '\n' || e->message[ml - 1] == ' '))
                ml--;
            seterr(err, errlen, "line %d: %.*s", e->line, (int)(ml > 200 ? 200 : ml), e->message);
        } else {
            seterr(err, errlen, "%s", fl_xmlsym_strerror(FL_XMLSYM_EMALFORMED));
        }
        rc = FL_XMLSYM_EMALFORMED;
        goto done;
    }
    fl_xmlsym_request *req = calloc(1, sizeof *req);
    if (!req) {
        rc = FL_XMLSYM_ENOMEM;
        goto done;
    }
    rc = request_from_doc(doc, req, err, errlen);
    if (rc)
        fl_xmlsym_request_free(req);
    else
        *out = req;
done:
    if (doc)
        xmlFreeDoc(doc);
    xmlFreeParserCtxt(ctxt);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Annotation.                                                         */

typedef struct modtab {
    fl_xmlsym_module *m; /* strings owned */
    size_t n, cap;
} modtab;

static void modtab_free(modtab *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free((char *)t->m[i].name);
        free((char *)t->m[i].build_id);
        free((char *)t->m[i].path);
    }
    free(t->m);
}

static char *dupn(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static int dup_field(const char **dst, const char *src)
{
    if (!src)
        return 0;
    return (*dst = strdup(src)) ? 0 : -1;
}

/* Appends a copy of m (strings duplicated).  0 or -1 (OOM / too many). */
static int modtab_add(modtab *t, const fl_xmlsym_module *m)
{
    if (t->n >= FL_XMLSYM_MAX_IMAGES * 2)
        return -1;
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 16;
        fl_xmlsym_module *nm = realloc(t->m, nc * sizeof *nm);
        if (!nm)
            return -1;
        t->m = nm;
        t->cap = nc;
    }
    fl_xmlsym_module *d = &t->m[t->n];
    memset(d, 0, sizeof *d);
    d->base = m->base;
    d->size = m->size;
    d->bias = m->bias;
    d->has_bias = m->has_bias;
    t->n++;
    if (dup_field(&d->name, m->name) || dup_field(&d->build_id, m->build_id) ||
        dup_field(&d->path, m->path))
        return -1;
    return 0;
}

/* The module whose [base, base+size) holds addr; modules of unknown size
 * cover everything above their start, the closest start winning. */
static const fl_xmlsym_module *modtab_find(const modtab *t, uint64_t addr)
{
    const fl_xmlsym_module *open_ended = NULL;
    for (size_t i = 0; i < t->n; i++) {
        const fl_xmlsym_module *m = &t->m[i];
        if (addr < m->base)
            continue;
        if (m->size) {
            if (addr - m->base < m->size)
                return m;
        } else if (!open_ended || m->base > open_ended->base) {
            open_ended = m;
        }
    }
    return open_ended;
}

typedef struct match {
    pcre2_match_data *md;
    const char *subject;
} match;

static int re_match(match *mt, int which, const char *s, size_t n)
{
    mt->subject = s;
    return pcre2_match(compiled[which], (PCRE2_SPTR)s, n, 0, 0, mt->md, NULL) > 0;
}

/* Capture group g of the last match (pointer into the subject) and its length. */
static const char *re_group(const match *mt, int g, size_t *len)
{
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(mt->md);
    if (ov[2 * g] == PCRE2_UNSET) {
        *len = 0;
        return NULL;
    }
    *len = ov[2 * g + 1] - ov[2 * g];
    return mt->subject + ov[2 * g];
}

/* "name/base/size[/bias]" as the crash-log reader reads it (numbers from
 * the right). */
static int parse_object_value(const char *v, size_t n, fl_xmlsym_module *m)
{
    char buf[4096];
    memset(m, 0, sizeof *m); /* the caller frees m->name on failure too */
    if (n >= sizeof buf)
        return -1;
    memcpy(buf, v, n);
    buf[n] = '\0';
    char *sl[3] = {NULL, NULL, NULL};
    int ns = 0;
    for (char *s = buf + n; s > buf && ns < 3;) {
        s--;
        if (*s == '/')
            sl[ns++] = s;
    }
    uint64_t a, b, c;
    if (ns == 3 && sl[2] > buf && !fl_parse_u64(sl[0] + 1, &c)) {
        *sl[0] = '\0';
        if (!fl_parse_u64(sl[1] + 1, &b)) {
            *sl[1] = '\0';
            if (!fl_parse_u64(sl[2] + 1, &a)) {
                *sl[2] = '\0';
                m->base = a;
                m->size = b;
                m->bias = c;
                m->has_bias = 1;
                return (m->name = strdup(buf)) ? 0 : -1;
            }
            *sl[1] = '/';
        }
        *sl[0] = '/';
    }
    if (ns >= 2 && sl[1] > buf && !fl_parse_u64(sl[0] + 1, &b)) {
        *sl[0] = '\0';
        if (!fl_parse_u64(sl[1] + 1, &a)) {
            *sl[1] = '\0';
            m->base = a;
            m->size = b;
            return (m->name = strdup(buf)) ? 0 : -1;
        }
    }
    return -1;
}

/* Pass 1: the report's modules.  A report that is a whole crash log is
 * read by the one crash-log reader; anything else (a log missing its END,
 * a textual backtrace with OBJECT lines pasted in) by the patterns. */
static int collect_modules(const char *report, size_t len, match *mt, modtab *t)
{
    fl_crashlog *log = NULL;
    if (fl_crashlog_parse(report, len, &log, NULL) == 0) {
        for (size_t i = 0; i < log->nobjects; i++) {
            const fl_object *o = &log->objects[i];
            /* A path cut at its start (OBJECT_PATH_CUT) names no file. */
            fl_xmlsym_module m = {o->name,
                                  o->base,
                                  o->size,
                                  o->bias,
                                  o->has_bias,
                                  o->build_id,
                                  o->path_cut ? NULL : o->path};
            if (modtab_add(t, &m)) {
                fl_crashlog_free(log);
                return FL_XMLSYM_ENOMEM;
            }
        }
        fl_crashlog_free(log);
        return 0;
    }
    fl_xmlsym_module *last = NULL;
    for (size_t pos = 0; pos < len;) {
        const char *line = report + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t ll = nl ? (size_t)(nl - line) : len - pos;
        pos += ll + (nl ? 1 : 0);
        if (ll && line[ll - 1] == '\r')
            ll--;
        size_t gl;
        const char *g;
        if (re_match(mt, P_OBJECT, line, ll)) {
            fl_xmlsym_module m;
            g = re_group(mt, 1, &gl);
            if (parse_object_value(g, gl, &m) != 0) {
                free((char *)m.name);
                last = NULL;
                continue;
            }
            int rc = modtab_add(t, &m);
            free((char *)m.name);
            if (rc)
                return FL_XMLSYM_ENOMEM;
            last = &t->m[t->n - 1];
        } else if (last && re_match(mt, P_OBJID, line, ll)) {
            g = re_group(mt, 1, &gl);
            free((char *)last->build_id);
            if (!(last->build_id = dupn(g, gl)))
                return FL_XMLSYM_ENOMEM;
            for (char *c = (char *)last->build_id; *c; c++)
                if (*c >= 'A' && *c <= 'F')
                    *c = (char)(*c - 'A' + 'a');
        } else if (last && re_match(mt, P_OBJPATH, line, ll)) {
            g = re_group(mt, 1, &gl);
            free((char *)last->path);
            if (!(last->path = dupn(g, gl)))
                return FL_XMLSYM_ENOMEM;
        }
    }
    return 0;
}

static const char *base_name(const char *p)
{
    if (!p)
        return "?";
    const char *s = strrchr(p, '/');
    return s && s[1] ? s + 1 : p;
}

/* Resolves pc and writes its frames in one of two styles.  exact: pc is
 * the faulting pc (frame 0), else a return address looked up at pc - 1. */
static void annotate_pc(sbuf *b, fl_xmlsym_stats *st, const fl_xmlsym_module *mod, uint64_t pc,
                        int exact, int comment_lines, const char *indent, size_t indent_len,
                        fl_xmlsym_resolve_fn fn, void *ctx)
{
    uint64_t bias = mod->has_bias ? mod->bias : mod->base;
    uint64_t rel = pc - bias;
    uint64_t probe = exact || rel == 0 ? rel : rel - 1;
    fl_symframe frames[FL_XMLSYM_MAX_FRAMES];
    size_t n = fn ? fn(ctx, mod, probe, frames, FL_XMLSYM_MAX_FRAMES) : 0;
    if (n > FL_XMLSYM_MAX_FRAMES)
        n = FL_XMLSYM_MAX_FRAMES;
    int known = 0;
    for (size_t i = 0; i < n; i++)
        if (frames[i].function || frames[i].file)
            known = 1;
    st->candidates++;
    if (known)
        st->annotated++;
    else
        st->unresolved++;
    const char *modname = mod->name ? base_name(mod->name) : base_name(mod->path);
    if (!known)
        n = 0;
    if (comment_lines) {
        if (n == 0) {
            sb_put(b, indent, indent_len);
            sb_fmt(b, "#   -> ?? in %s+0x%llx\n", modname, (unsigned long long)rel);
        }
        for (size_t i = 0; i < n; i++) {
            const fl_symframe *f = &frames[i];
            sb_put(b, indent, indent_len);
            sb_str(b, "#   -> ");
            sb_str(b, f->function ? f->function : "??");
            if (f->file) {
                sb_str(b, " at ");
                sb_str(b, f->file);
                if (f->line)
                    sb_fmt(b, ":%u", f->line);
                if (f->line && f->column)
                    sb_fmt(b, ":%u", f->column);
            }
            if (f->inlined)
                sb_str(b, " (inlined)");
            else
                sb_fmt(b, " in %s+0x%llx", modname, (unsigned long long)rel);
            sb_str(b, "\n");
        }
        return;
    }
    sb_str(b, " => ");
    if (n == 0)
        sb_str(b, "??");
    for (size_t i = 0; i < n; i++) {
        const fl_symframe *f = &frames[i];
        if (i)
            sb_str(b, ", inlined into ");
        sb_str(b, f->function ? f->function : "??");
        if (f->file) {
            sb_str(b, " at ");
            sb_str(b, f->file);
            if (f->line)
                sb_fmt(b, ":%u", f->line);
            if (f->line && f->column)
                sb_fmt(b, ":%u", f->column);
        }
    }
    sb_fmt(b, " (%s+0x%llx)", modname, (unsigned long long)rel);
}

static int parse_hex(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    if (n == 0 || n > 16)
        return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned)fl_hex_digit(s[i]);
        if (d > 15)
            return -1;
        v = (v << 4) | d;
    }
    *out = v;
    return 0;
}

int fl_xmlsym_annotate(const char *report, size_t len, const fl_xmlsym_module *images,
                       size_t nimages, fl_xmlsym_resolve_fn fn, void *ctx, char **out,
                       size_t *outlen, fl_xmlsym_stats *st, char *err, size_t errlen)
{
    *out = NULL;
    if (outlen)
        *outlen = 0;
    fl_xmlsym_stats local = {0};
    if (!st)
        st = &local;
    memset(st, 0, sizeof *st);
    int rc = ensure_init();
    if (rc) {
        seterr(err, errlen, "cannot compile the annotation patterns");
        return rc;
    }
    if (len > FL_CRASHLOG_MAX_BYTES) {
        seterr(err, errlen, "the crash report exceeds %u bytes", FL_CRASHLOG_MAX_BYTES);
        return FL_XMLSYM_ETOOBIG;
    }
    modtab t = {0};
    sbuf b = {.max = FL_XMLSYM_MAX_RESPONSE};
    match mt = {0};
    if (!(mt.md = pcre2_match_data_create(8, NULL))) {
        rc = FL_XMLSYM_ENOMEM;
        goto done;
    }
    for (size_t i = 0; i < nimages; i++)
        if (modtab_add(&t, &images[i])) {
            rc = FL_XMLSYM_ENOMEM;
            goto done;
        }
    if ((rc = collect_modules(report, len, &mt, &t)))
        goto done;

    size_t frame_index = 0; /* within the current stack (CALLSTACK, then each THREAD) */
    int in_threads = 0;
    size_t text_frames = 0;
    for (size_t pos = 0; pos < len;) {
        const char *line = report + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t full = nl ? (size_t)(nl - line) : len - pos;
        pos += full + (nl ? 1 : 0);
        size_t ll = full;
        if (ll && line[ll - 1] == '\r')
            ll--;
        st->lines++;
        size_t gl;
        const char *g;
        if (re_match(&mt, P_THREAD, line, ll)) {
            in_threads = 1;
            frame_index = 0;
        } else if (re_match(&mt, P_KEYFRAME, line, ll)) {
            size_t il;
            const char *indent = re_group(&mt, 1, &il);
            size_t kl;
            const char *key = re_group(&mt, 2, &kl);
            g = re_group(&mt, 3, &gl);
            char num[32];
            uint64_t pc;
            memcpy(num, g, gl);
            num[gl] = '\0';
            int is_cs = kl == 9 && memcmp(key, "CALLSTACK", 9) == 0;
            if (is_cs && in_threads) { /* CALLSTACK after THREADs: its own count */
                in_threads = 0;
                frame_index = 0;
            }
            sb_put(&b, line, full);
            sb_put(&b, "\n", 1);
            const fl_xmlsym_module *mod;
            if (fl_parse_u64(num, &pc) == 0 && (mod = modtab_find(&t, pc)))
                annotate_pc(&b, st, mod, pc, frame_index == 0, 1, indent ? indent : "", il, fn,
                            ctx);
            frame_index++;
            continue;
        } else {
            uint64_t pc;
            const fl_xmlsym_module *mod;
            int exact = -1;
            if (re_match(&mt, P_TEXTFRAME, line, ll)) {
                size_t nl2;
                const char *fno = re_group(&mt, 1, &nl2);
                g = re_group(&mt, 2, &gl);
                exact = nl2 == 1 && fno[0] == '0';
            } else if (re_match(&mt, P_GLIBC, line, ll)) {
                g = re_group(&mt, 1, &gl);
                exact = text_frames == 0;
            }
            if (exact >= 0 && parse_hex(g, gl, &pc) == 0 && (mod = modtab_find(&t, pc))) {
                text_frames++;
                sb_put(&b, line, ll);
                annotate_pc(&b, st, mod, pc, exact, 0, "", 0, fn, ctx);
                sb_put(&b, line + ll, full - ll); /* keep a '\r' */
                if (nl)
                    sb_put(&b, "\n", 1);
                continue;
            }
        }
        sb_put(&b, line, full);
        if (nl)
            sb_put(&b, "\n", 1);
    }
    if (!b.p)
        sb_put(&b, "", 0); /* an empty report still gets a string */
    if (b.failed) {
        rc = b.failed;
        seterr(err, errlen, "%s", fl_xmlsym_strerror(rc));
        goto done;
    }
    *out = b.p;
    if (outlen)
        *outlen = b.len;
    b.p = NULL;
    rc = 0;
done:
    if (rc && errlen && !err[0])
        seterr(err, errlen, "%s", fl_xmlsym_strerror(rc));
    free(b.p);
    pcre2_match_data_free(mt.md);
    modtab_free(&t);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Responses.                                                          */

int fl_xmlsym_response(const char *annotated, size_t len, const fl_xmlsym_stats *st, char **out,
                       size_t *outlen)
{
    sbuf b = {.max = FL_XMLSYM_MAX_RESPONSE + 4096};
    *out = NULL;
    sb_str(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<symbolicationResponse version=\"1\"");
    if (st)
        sb_fmt(&b, " candidates=\"%zu\" annotated=\"%zu\" unresolved=\"%zu\"", st->candidates,
               st->annotated, st->unresolved);
    sb_str(&b, ">\n  <annotatedReport>");
    sb_cdata(&b, annotated, len);
    sb_str(&b, "</annotatedReport>\n</symbolicationResponse>\n");
    if (b.failed) {
        free(b.p);
        return b.failed;
    }
    *out = b.p;
    if (outlen)
        *outlen = b.len;
    return 0;
}

int fl_xmlsym_error_response(int code, const char *message, char **out, size_t *outlen)
{
    sbuf b = {.max = 1 << 16};
    *out = NULL;
    sb_str(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<symbolicationResponse version=\"1\">\n"
               "  <error code=\"");
    sb_escaped(&b, fl_xmlsym_errtag(code));
    sb_str(&b, "\">");
    sb_escaped(&b, message && *message ? message : fl_xmlsym_strerror(code));
    sb_str(&b, "</error>\n</symbolicationResponse>\n");
    if (b.failed) {
        free(b.p);
        return FL_XMLSYM_ENOMEM;
    }
    *out = b.p;
    if (outlen)
        *outlen = b.len;
    return 0;
}

int fl_xmlsym_handle(const char *xml, size_t len, fl_xmlsym_resolve_fn fn, void *ctx, char **resp,
                     size_t *resplen, char *err, size_t errlen)
{
    char ebuf[256] = "";
    fl_xmlsym_request *req = NULL;
    char *annotated = NULL;
    size_t alen = 0;
    fl_xmlsym_stats st;
    *resp = NULL;
    int rc = fl_xmlsym_parse_request(xml, len, &req, ebuf, sizeof ebuf);
    if (rc == 0) {
        const fl_xmlsym_module *imgs;
        size_t nimg = fl_xmlsym_request_images(req, &imgs);
        rc = fl_xmlsym_annotate(req->report, req->report_len, imgs, nimg, fn, ctx, &annotated,
                                &alen, &st, ebuf, sizeof ebuf);
    }
    if (rc == 0)
        rc = fl_xmlsym_response(annotated, alen, &st, resp, resplen);
    if (rc) {
        if (!ebuf[0])
            snprintf(ebuf, sizeof ebuf, "%s", fl_xmlsym_strerror(rc));
        fl_xmlsym_error_response(rc, ebuf, resp, resplen);
        seterr(err, errlen, "%s", ebuf);
    }
    free(annotated);
    fl_xmlsym_request_free(req);
    return rc;
}
