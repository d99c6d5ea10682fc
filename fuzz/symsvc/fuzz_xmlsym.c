/* Fuzz target: the XML symbolication request parser and annotator.  Any
 * input is answered (a response or an error response) without crashing,
 * the answer is always well-formed XML, and libxml2 is never asked to load
 * anything from outside. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>

#include "fl_xmlsym.h"

/* A resolver that names every address, with text that stresses the
 * response writer ("]]>", control bytes, bad UTF-8). */
static size_t fake_resolve(void *ctx, const fl_xmlsym_module *mod, uint64_t rel,
                           fl_symframe *frames, size_t max)
{
    static const char *const names[] = {"f]]>g", "ctl\x01\x7f", "bad\xff\xfeutf8", "plain"};
    if (max < 2)
        return 0;
    frames[0] = (fl_symframe){names[rel % 4], "a]]>.c", (uint32_t)rel, 1, 1};
    frames[1] = (fl_symframe){rel & 1 ? NULL : "outer", rel & 2 ? NULL : "b.c", 7, 0, 0};
    return rel % 3; /* 0, 1 or 2 frames */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *resp = NULL, err[256];
    size_t rlen = 0;
    int rc = fl_xmlsym_handle((const char *)data, size, fake_resolve, NULL, &resp, &rlen, err,
                              sizeof err);
    if (!resp || rlen == 0 || (rc != 0 && err[0] == '\0'))
        abort();
    xmlDoc *doc = xmlReadMemory(resp, (int)rlen, "r.xml", NULL, XML_PARSE_NONET);
    if (!doc)
        abort();
    xmlFreeDoc(doc);
    if (fl_xmlsym_external_loads() != 0)
        abort();
    free(resp);
    return 0;
}
