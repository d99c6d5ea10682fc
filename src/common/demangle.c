/*
 * demangle.c - the C++ runtime's demangler, loaded on first use
 * (fl_demangle.h says why).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fl_demangle.h"

typedef char *(*demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);
static demangle_fn g_demangle;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void load(void)
{
    void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
    if (h)
        *(void **)&g_demangle = dlsym(h, "__cxa_demangle");
}

static char *run(const char *mangled)
{
    pthread_once(&g_once, load);
    int status = 0;
    char *d = g_demangle ? g_demangle(mangled, NULL, NULL, &status) : NULL;
    if (d && status == 0)
        return d;
    free(d);
    return NULL;
}

char *fl_demangle(const char *raw)
{
    return raw[0] == '_' && raw[1] == 'Z' ? run(raw) : NULL;
}

char *fl_demangle_type(const char *type)
{
    /* The demangler reads a type as the name of its type_info's name. */
    static const char pre[] = "typeinfo name for ";
    size_t n = strlen(type), k = sizeof pre - 1;
    char *z = malloc(n + 5);
    if (!z)
        return NULL;
    memcpy(z, "_ZTS", 4);
    memcpy(z + 4, type, n + 1);
    char *d = run(z);
    free(z);
    if (d && !strncmp(d, pre, k) && d[k]) {
        memmove(d, d + k, strlen(d + k) + 1);
        return d;
    }
    free(d);
    return NULL;
}
