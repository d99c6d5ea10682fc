/*
 * fuzz_ctxgraph.c - the calling-context call graph (src/symbols/ctxdecode.c)
 * on any bytes taken as an ELF file: symbols, relocations, PLT stubs and
 * the disassembly of every function, then a bounded search.  No crash, no
 * leak, no hang; a stack found must be as deep as asked at most.
 */
#include <gelf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fl_ctxdecode.h"

static int check(const fl_ctxframe *fr, size_t n, void *arg)
{
    (void)arg;
    if (n == 0 || n > 12)
        abort();
    for (size_t i = 0; i < n; i++)
        if (!fr[i].function || !fr[i].module)
            abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    elf_version(EV_CURRENT);
    char *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    Elf *elf = elf_memory(copy, size);
    fl_ctxgraph *g = fl_ctxgraph_new();
    char err[256];
    if (elf && g && fl_ctxgraph_add(g, "fuzz", elf, NULL, err, sizeof err) == 0) {
        fl_ctxgraph_link(g);
        (void)fl_ctx_elf_has_hooks(elf);
        /* A value the input picks, and one that no stack gives. */
        uint64_t v = 0;
        memcpy(&v, data, size < 8 ? size : 8);
        fl_ctxsearch s = {.max_depth = 12, .budget = 20000};
        fl_ctxgraph_search(g, v, &s, check, NULL);
        if (s.steps > s.budget + 1)
            abort();
        fl_ctxgraph_search(g, 0x0123456789abcdefull, &s, check, NULL);
    }
    fl_ctxgraph_free(g);
    if (elf)
        elf_end(elf);
    free(copy);
    return 0;
}
