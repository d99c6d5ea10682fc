/*
 * ctxgraph - how many instrumented functions `faultline decode --context`
 * finds in the files given (fl_ctxgraph_instrumented of the graph decode
 * builds): the size of the graph bench/context/real.sh searches.
 *
 * usage: ctxgraph PROGRAM [LIBRARY...]
 */
#include <fcntl.h>
#include <libelf.h>
#include <stdio.h>
#include <unistd.h>

#include "fl_ctxdecode.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: ctxgraph PROGRAM [LIBRARY...]\n");
        return 2;
    }
    elf_version(EV_CURRENT);
    fl_ctxgraph *g = fl_ctxgraph_new();
    int fds[64];
    Elf *elfs[64];
    int n = 0;
    for (int i = 1; i < argc && n < 64; i++, n++) {
        char err[512];
        fds[n] = open(argv[i], O_RDONLY);
        elfs[n] = fds[n] >= 0 ? elf_begin(fds[n], ELF_C_READ_MMAP, NULL) : NULL;
        if (!g || !elfs[n] || fl_ctxgraph_add(g, argv[i], elfs[n], NULL, err, sizeof err)) {
            fprintf(stderr, "ctxgraph: %s: %s\n", argv[i], elfs[n] ? err : "cannot read");
            return 1;
        }
    }
    fl_ctxgraph_link(g);
    printf("%zu\n", fl_ctxgraph_instrumented(g));
    fl_ctxgraph_free(g);
    for (int i = 0; i < n; i++) {
        elf_end(elfs[i]);
        close(fds[i]);
    }
    return 0;
}
