/*
 * cxx.c - what an uncaught C++ exception was: its type and what().
 *
 * An uncaught exception ends in std::terminate(), whose handler aborts:
 * the crash log would show SIGABRT under __cxa_throw and nothing of the
 * exception.  At install, when the process has a C++ runtime, a terminate
 * handler of ours goes in front of the one set (the runtime's verbose
 * handler, or the program's own): it notes the current exception's
 * mangled type name and, for a std::exception, what() -- then calls the
 * handler it replaced, which aborts as before.  The crash handler writes
 * them (EXCEPTION_TYPE, EXCEPTION_MESSAGE) when the crash is on the thread
 * that noted them.
 *
 * Everything is reached through the Itanium C++ ABI, which GCC's and
 * clang's runtimes (libstdc++, libc++abi) share on Linux, and looked up
 * with dlsym() at install: this library links libc only.  The handler runs
 * in ordinary context, where std::terminate() calls it -- not in a signal
 * handler -- and calls what(), as the runtime's own verbose handler does.
 * A program that sets its terminate handler after install replaces ours:
 * its exceptions are then not noted.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fl_client.h"

typedef void (*terminate_fn)(void);

static terminate_fn (*set_terminate_p)(terminate_fn);
static const void *(*current_type)(void);
/* The thrown object: libc++abi lends it with __cxa_current_primary_exception
 * (given back with __cxa_decrement_exception_refcount); libstdc++ has
 * only std::current_exception(), whose std::exception_ptr -- one pointer,
 * the object -- is returned through memory the caller passes, as a C
 * struct over 16 bytes is (rdi on x86-64, x8 on aarch64), and released by
 * its destructor. */
struct exception_ptr {
    void *obj, *unused[3];
};
static void *(*current_primary)(void);
static void (*decrement_ref)(void *);
static struct exception_ptr (*current_exception)(void);
static void (*exception_ptr_dtor)(struct exception_ptr *);
static terminate_fn previous;
/* The vtables (address points) of the type_info classes of a class with
 * one public base at offset 0 (si) and of one with other bases (vmi). */
static const void *si_vtable, *vmi_vtable;

char fl_exc_type[FL_EXC_TYPE_MAX];
char fl_exc_message[FL_EXC_MESSAGE_MAX];
volatile pid_t fl_exc_tid;

/* The Itanium ABI's type_info: a vtable pointer and the mangled name
 * (GCC marks a type local to a translation unit with a leading '*'). */
struct type_info {
    const void *vptr;
    const char *name;
};

struct base_info {
    const struct type_info *type;
    long offset_flags; /* offset << 8 | 2 public | 1 virtual */
};

static const char *type_name(const struct type_info *t)
{
    return t->name[0] == '*' ? t->name + 1 : t->name;
}

/* The offset of the std::exception within an object of type t at obj, or
 * -1 when t does not derive from it publicly. */
static ptrdiff_t exception_base(const struct type_info *t, const char *obj, int depth)
{
    if (!strcmp(type_name(t), "St9exception"))
        return 0;
    if (depth > 16)
        return -1;
    if (si_vtable && t->vptr == si_vtable)
        return exception_base(((const struct type_info *const *)(t + 1))[0], obj, depth + 1);
    if (!vmi_vtable || t->vptr != vmi_vtable)
        return -1;
    const unsigned *counts = (const unsigned *)(t + 1); /* flags, base count */
    const struct base_info *b = (const struct base_info *)(counts + 2);
    for (unsigned i = 0; i < counts[1] && i < 64; i++) {
        if (!(b[i].offset_flags & 2))
            continue;
        ptrdiff_t off = b[i].offset_flags >> 8;
        if (b[i].offset_flags & 1) /* virtual: the vtable holds the offset */
            off = *(const ptrdiff_t *)(*(const char *const *)obj + off);
        ptrdiff_t in = exception_base(b[i].type, obj + off, depth + 1);
        if (in >= 0)
            return off + in;
    }
    return -1;
}

/* Named fl_*: the server's grouping skips the frames of Faultline. */
static void fl_on_terminate(void)
{
    /* what() that throws ends here again: then only abort. */
    static int busy;
    const struct type_info *t =
        __atomic_exchange_n(&busy, 1, __ATOMIC_ACQ_REL) ? NULL : current_type();
    if (t) {
        fl_strlcpy(fl_exc_type, type_name(t), sizeof fl_exc_type);
        fl_exc_message[0] = '\0';
        /* Noted before what() runs, which may fault or throw. */
        __atomic_store_n(&fl_exc_tid, fl_gettid(), __ATOMIC_RELEASE);
        struct exception_ptr ep = {NULL, {NULL}};
        if (current_primary)
            ep.obj = current_primary();
        else if (current_exception)
            ep = current_exception();
        char *obj = ep.obj;
        if (obj) {
            ptrdiff_t off = exception_base(t, obj, 0);
            if (off >= 0) {
                /* std::exception's vtable: two destructors, then what(). */
                char *e = obj + off;
                const char *(*what)(const void *) =
                    ((const char *(*const *)(const void *)) * (void **)e)[2];
                const char *w = what(e);
                if (w)
                    fl_strlcpy(fl_exc_message, w, sizeof fl_exc_message);
            } else if (!strcmp(fl_exc_type, "PKc") || !strcmp(fl_exc_type, "Pc")) {
                /* throw "text": the object is the pointer */
                const char *s = *(const char **)obj;
                if (s)
                    fl_strlcpy(fl_exc_message, s, sizeof fl_exc_message);
            }
            if (current_primary)
                decrement_ref(obj);
            else
                exception_ptr_dtor(&ep);
        }
    }
    if (previous)
        previous();
    abort();
}

/* fl-lint: install-time */
void fl_cxx_install(void)
{
    *(void **)&set_terminate_p = dlsym(RTLD_DEFAULT, "_ZSt13set_terminatePFvvE");
    *(void **)&current_type = dlsym(RTLD_DEFAULT, "__cxa_current_exception_type");
    if (!set_terminate_p || !current_type)
        return; /* no C++ runtime (yet) */
    *(void **)&current_primary = dlsym(RTLD_DEFAULT, "__cxa_current_primary_exception");
    *(void **)&decrement_ref = dlsym(RTLD_DEFAULT, "__cxa_decrement_exception_refcount");
    if (!decrement_ref)
        current_primary = NULL;
    *(void **)&current_exception = dlsym(RTLD_DEFAULT, "_ZSt17current_exceptionv");
    *(void **)&exception_ptr_dtor =
        dlsym(RTLD_DEFAULT, "_ZNSt15__exception_ptr13exception_ptrD1Ev");
    if (!exception_ptr_dtor)
        current_exception = NULL;
    const char *si = dlsym(RTLD_DEFAULT, "_ZTVN10__cxxabiv120__si_class_type_infoE");
    const char *vmi = dlsym(RTLD_DEFAULT, "_ZTVN10__cxxabiv121__vmi_class_type_infoE");
    /* A vtable's address point is past its offset-to-top and type_info. */
    si_vtable = si ? si + 2 * sizeof(void *) : NULL;
    vmi_vtable = vmi ? vmi + 2 * sizeof(void *) : NULL;
    previous = set_terminate_p(fl_on_terminate);
    if (previous == fl_on_terminate)
        previous = NULL;
}
