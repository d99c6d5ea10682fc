/*
 * group.c - frames and signatures; see fl_group.h for how it works.
 */
#define _GNU_SOURCE
#include "fl_group.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl_srvutil.h"
#include "fl_store.h" /* FL_PROJECT_DEFAULT */

#define MAX_ENTRIES 1024 /* per list */
#define MAX_INLINE 16    /* inline frames per address */
#define MAX_TAIL_CHAIN 4 /* functions a chain of tail calls may have left off */
#define DEFAULT_TOP_N 5

typedef struct list {
    char **v;
    size_t n;
} list;

struct fl_group_rules {
    list skip;   /* exact function names, or "module:NAME" */
    list prefix; /* function-name prefixes, or "module:PREFIX" */
    unsigned top_n;
};

static const char *const default_skip[] = {
    "abort", "raise", "gsignal", "__assert_fail", "__assert_fail_base",
    "__assert_perror_fail", "pthread_kill", "__pthread_kill_implementation",
    "__pthread_kill_internal", "__restore_rt", "__kernel_rt_sigreturn",
    "__stack_chk_fail", "__fortify_fail", "__chk_fail", "__libc_message",
    "malloc_printerr", "__clang_call_terminate",
};
/* "std::__throw_" and "std::__1::__throw_": the C++ library's helpers
 * that throw its exceptions (std::__throw_out_of_range_fmt), inlined into
 * the application by libc++. */
static const char *const default_prefix[] = {
    "faultline", "fl_", "__GI_", "MOJOCRASH_", "mojocrash_", "module:libfaultline",
    "std::__throw_", "std::__1::__throw_",
};

static void list_free(list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

static int list_add(list *l, const char *s)
{
    if (l->n >= MAX_ENTRIES)
        return 0; /* a cap, silently: the lists are operator-written */
    char **nv = realloc(l->v, (l->n + 1) * sizeof *nv);
    if (!nv)
        return -1;
    l->v = nv;
    if (!(l->v[l->n] = strdup(s)))
        return -1;
    l->n++;
    return 0;
}

static int list_defaults(list *l, const char *const *d, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (list_add(l, d[i]))
            return -1;
    return 0;
}

fl_group_rules *fl_group_rules_new(void)
{
    fl_group_rules *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->top_n = DEFAULT_TOP_N;
    if (list_defaults(&r->skip, default_skip, sizeof default_skip / sizeof *default_skip) ||
        list_defaults(&r->prefix, default_prefix, sizeof default_prefix / sizeof *default_prefix)) {
        fl_group_rules_free(r);
        return NULL;
    }
    return r;
}

void fl_group_rules_set_top_n(fl_group_rules *r, unsigned n)
{
    r->top_n = n ? n : 1;
}

void fl_group_rules_free(fl_group_rules *r)
{
    if (!r)
        return;
    list_free(&r->skip);
    list_free(&r->prefix);
    free(r);
}

static int load_list(list *l, const char *path)
{
    if (!path)
        return 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return -1; /* a missing file too: not silently the built-in list */
    list nl = {0};
    char line[512];
    int rc = 0;
    while (fgets(line, sizeof line, f)) {
        char *s = line, *e;
        while (*s == ' ' || *s == '\t')
            s++;
        e = s + strlen(s);
        while (e > s && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
            *--e = '\0';
        if (!*s || *s == '#')
            continue;
        if (list_add(&nl, s)) {
            rc = -1;
            break;
        }
    }
    if (ferror(f))
        rc = -1;
    fclose(f);
    if (rc) {
        list_free(&nl);
        return -1;
    }
    list_free(l);
    *l = nl;
    return 0;
}

int fl_group_rules_load(fl_group_rules *r, const char *skip_path, const char *prefix_path)
{
    if (load_list(&r->skip, skip_path) || load_list(&r->prefix, prefix_path))
        return -1;
    return 0;
}

static int write_default(const char *path, const char *head, const char *const *d, size_t n)
{
    if (!path)
        return 0;
    FILE *f = fopen(path, "wx"); /* never overwrite an operator's edits */
    if (!f)
        return errno == EEXIST ? 0 : -1;
    fputs(head, f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s\n", d[i]);
    return fclose(f) ? -1 : 0;
}

int fl_group_rules_write_defaults(const char *skip_path, const char *prefix_path)
{
    if (write_default(skip_path,
                      "# Frames dropped from crash signatures: one function name per line,\n"
                      "# or module:NAME for every frame of a module.  Read at start-up and\n"
                      "# on SIGHUP.\n",
                      default_skip, sizeof default_skip / sizeof *default_skip))
        return -1;
    return write_default(prefix_path,
                         "# Frames dropped from crash signatures when the function name starts\n"
                         "# with one of these (module:PREFIX matches the module name).\n",
                         default_prefix, sizeof default_prefix / sizeof *default_prefix);
}

/* ---- frames */

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* unnamed: an unnamed frame's name (module+0xOFFSET), which only an exact
 * skip.txt entry matches: a prefix such as "fl_" or "faultline" names
 * functions, not a program whose file is called so. */
static bool matches(const fl_group_rules *r, const char *function, const char *module,
                    const char *unnamed)
{
    for (size_t i = 0; i < r->skip.n; i++) {
        const char *e = r->skip.v[i];
        if (!strncmp(e, "module:", 7)) {
            if (module && !strcmp(module, e + 7))
                return true;
        } else if ((function && !strcmp(function, e)) || (unnamed && !strcmp(unnamed, e))) {
            return true;
        } else if (function && !strchr(e, '(')) {
            /* A C++ name without its parameter list names every overload:
             * "load(char const*)" is skipped by "load". */
            size_t n = strlen(e);
            if (!strncmp(function, e, n) && function[n] == '(')
                return true;
        }
    }
    for (size_t i = 0; i < r->prefix.n; i++) {
        const char *e = r->prefix.v[i];
        if (!strncmp(e, "module:", 7)) {
            if (module && !strncmp(module, e + 7, strlen(e + 7)))
                return true;
        } else if (function && !strncmp(function, e, strlen(e))) {
            return true;
        }
    }
    return false;
}

/* The function's name without the compiler's clone suffixes, so that one
 * function groups as one across builds and compilers: gcc's
 * "f.constprop.0", "f.isra.0", "f.part.1", "f.cold", "f.lto_priv.0",
 * clang's "f.llvm.123456", and on demangled C++ names GNU's
 * " [clone .constprop.0]" and LLVM's " (.cold)", the form our symbolizer
 * prints (a -O2 build splits f(int)'s cold path into "f(int) (.cold)");
 * nor its symbol version ("f@GLIBC_2.2.5", "f@@V2"), which a .symtab
 * gives and DWARF or .dynsym do not. */
static void clone_base(const char *fn, char *out, size_t cap)
{
    static const char *const tags[] = {"constprop", "isra", "part", "cold", "lto_priv",
                                       "localalias", "llvm", "clone", "specialized", "str"};
    size_t n = 0;
    for (const char *p = fn; *p && n + 1 < cap;) {
        if (!strncmp(p, " [clone .", 9)) {
            const char *e = strchr(p, ']');
            if (e) {
                p = e + 1;
                continue;
            }
        }
        out[n++] = *p++;
    }
    out[n] = '\0';
    /* " (.suffix)" groups at the end: a parameter list never starts with
     * a dot, so nothing else ends that way. */
    for (;;) {
        size_t l = strlen(out);
        char *open = l > 4 && out[l - 1] == ')' ? strstr(out, " (.") : NULL;
        while (open) {
            char *next = strstr(open + 1, " (.");
            if (!next)
                break;
            open = next;
        }
        if (!open || strchr(open + 3, '(') || strchr(open + 3, ')') != out + l - 1)
            break;
        *open = '\0';
    }
    char *at = strchr(out, '@');
    if (at && at != out)
        *at = '\0';
    for (;;) {
        char *dot = strrchr(out, '.');
        if (!dot || dot == out)
            return;
        char *tag = dot + 1;
        bool digits = *tag != '\0';
        for (const char *q = tag; *q; q++)
            digits &= *q >= '0' && *q <= '9';
        if (digits) {
            /* f.constprop.0: the number belongs to the tag before it. */
            *dot = '\0';
            char *d2 = strrchr(out, '.');
            if (!d2 || d2 == out) {
                *dot = '.';
                return;
            }
            tag = d2 + 1;
            bool known = false;
            for (size_t i = 0; i < sizeof tags / sizeof *tags; i++)
                known |= !strcmp(tag, tags[i]);
            if (!known) {
                *dot = '.';
                return;
            }
            *d2 = '\0';
            continue;
        }
        bool known = false;
        for (size_t i = 0; i < sizeof tags / sizeof *tags; i++)
            known |= !strcmp(tag, tags[i]);
        if (!known)
            return;
        *dot = '\0';
    }
}

/* ---- C++ names in signatures */

static bool ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$';
}

/* The length of the operator name that starts at p ("operator<<=",
 * "operator()", "operator new[]", "operator bool", "operator
 * std::vector<int, std::allocator<int> >"), or 0 when p does not start
 * one.  Its brackets are not brackets: "operator<" opens nothing. */
static size_t operator_len(const char *s, const char *p)
{
    if (strncmp(p, "operator", 8) || (p > s && ident_char(p[-1])) || ident_char(p[8]))
        return 0;
    const char *q = p + 8;
    if (!strncmp(q, "()", 2) || !strncmp(q, "[]", 2))
        return (size_t)(q + 2 - p);
    if (strchr("<>=!+-*/%^&|~,", *q) && *q) {
        while (*q && strchr("<>=!+-*/%^&|~,", *q))
            q++;
        return (size_t)(q - p);
    }
    if (*q != ' ')
        return 0;
    q++;
    if (!strncmp(q, "new", 3) || !strncmp(q, "delete", 6)) {
        q += *q == 'n' ? 3 : 6;
        if (!strncmp(q, "[]", 2))
            q += 2;
        return (size_t)(q - p);
    }
    /* A conversion: its type, brackets balanced, up to the parameters. */
    int depth = 0;
    for (; *q; q++) {
        if (*q == '<')
            depth++;
        else if (*q == '>' && depth)
            depth--;
        else if (*q == '(' && !depth)
            break;
    }
    return (size_t)(q - p);
}

/* Whether what follows a C++ function's parameter list is only its
 * qualifiers (" const", " &&", " noexcept"): then the list was the
 * parameters, not "(anonymous namespace)" in front of a scope. */
static bool only_qualifiers(const char *p)
{
    static const char *const quals[] = {"const", "volatile", "&&", "&", "noexcept", "restrict"};
    for (;;) {
        while (*p == ' ')
            p++;
        if (!*p)
            return true;
        size_t i = 0;
        for (; i < sizeof quals / sizeof *quals; i++) {
            size_t n = strlen(quals[i]);
            if (!strncmp(p, quals[i], n) && (quals[i][0] == '&' || !ident_char(p[n]))) {
                p += n;
                break;
            }
        }
        if (i == sizeof quals / sizeof *quals)
            return false;
    }
}

/* Where a function template's name starts after its return type ("void
 * f<int>(int)": GNU's demangler prints one for templates), or fn itself:
 * the last space at the top level before the parameter list, and before
 * any operator's name, which may hold one ("operator new", "bool
 * operator< <T>(…)").  A name whose brackets do not balance (cut short)
 * or that ends in no parameter list is taken whole. */
static const char *after_return_type(const char *fn)
{
    const char *params = NULL;
    int depth = 0;
    for (const char *p = fn; *p; p++) {
        size_t op = depth ? 0 : operator_len(fn, p);
        if (op) {
            p += op - 1;
            continue;
        }
        if (strchr("(<[{", *p)) {
            if (*p == '(' && !depth && p[1] != '.') /* "(.cold)" is a clone's */
                params = p;
            depth++;
        } else if (strchr(")>]}", *p) && !depth--) {
            return fn;
        }
    }
    if (depth || !params)
        return fn;
    const char *close = params;
    for (int d = 0; *close; close++)
        if (*close == '(')
            d++;
        else if (*close == ')' && !--d)
            break;
    if (!*close || !only_qualifiers(close + 1))
        return fn; /* "(anonymous namespace)::f" */
    const char *begin = fn;
    depth = 0;
    for (const char *p = fn; p < params; p++) {
        if (!depth && operator_len(fn, p))
            break;
        if (strchr("(<[{", *p))
            depth++;
        else if (strchr(")>]}", *p))
            depth--;
        else if (*p == ' ' && !depth)
            begin = p + 1;
    }
    return begin;
}

/* The standard library's types as libstdc++'s names abbreviate them (its
 * mangling has short forms for these; libc++'s, in std::__1, has none). */
static const char *const std_short[][2] = {
    {"std::basic_string<char, std::char_traits<char>, std::allocator<char> >", "std::string"},
    {"std::basic_string<char, std::char_traits<char>, std::allocator<char>>", "std::string"},
    {"std::basic_ostream<char, std::char_traits<char> >", "std::ostream"},
    {"std::basic_ostream<char, std::char_traits<char>>", "std::ostream"},
    {"std::basic_istream<char, std::char_traits<char> >", "std::istream"},
    {"std::basic_istream<char, std::char_traits<char>>", "std::istream"},
    {"std::basic_iostream<char, std::char_traits<char> >", "std::iostream"},
    {"std::basic_iostream<char, std::char_traits<char>>", "std::iostream"},
};

/* A C++ function's name as the signature keys it: the same function
 * whichever toolchain built it.  g++ with libstdc++ and clang++ with
 * libc++ spell one function apart -- "f(std::__cxx11::basic_string<char,
 * std::char_traits<char>, std::allocator<char> > const&)" and
 * "f(std::__1::basic_string<char, std::__1::char_traits<char>,
 * std::__1::allocator<char> > const&)"; "g(std::ostream&)" and
 * "g(std::__1::basic_ostream<char, std::__1::char_traits<char> >&)";
 * "label[abi:cxx11]()" and "label()" -- and one crash made a group per
 * toolchain.  So: without ABI tags, without the standard library's
 * inline namespace (std::__cxx11::, std::__1::, std::__ndk1::), its
 * types in libstdc++'s short forms, and a function template without its
 * return type.  The parameter list stays: overloads of a name are other
 * functions, and two bugs in two overloads called from one place would
 * otherwise be one group.  Rewrites only shorten; a name cut short is
 * rewritten as far as it goes. */
void fl_group_function_key(const char *fn, char *out, size_t cap)
{
    if (!cap)
        return;
    if (!strchr(fn, '(') && !strchr(fn, '[') && !strstr(fn, "std::")) {
        snprintf(out, cap, "%s", fn); /* C, and most of the time */
        return;
    }
    size_t n = 0;
    for (const char *p = after_return_type(fn); *p && n + 1 < cap;) {
        if (!strncmp(p, "[abi:", 5)) {
            const char *e = strchr(p, ']');
            p = e ? e + 1 : p + strlen(p);
            continue;
        }
        bool std_here =
            !strncmp(p, "std::", 5) && (p == fn || (!ident_char(p[-1]) && p[-1] != ':'));
        if (std_here) {
            static const char *const inl[] = {"__cxx11::", "__1::", "__ndk1::"};
            for (size_t i = 0; i < sizeof inl / sizeof *inl; i++)
                if (!strncmp(p + 5, inl[i], strlen(inl[i]))) {
                    /* "std::" stays; the namespace after it goes. */
                    if (n + 5 >= cap)
                        break;
                    memcpy(out + n, "std::", 5);
                    n += 5;
                    p += 5 + strlen(inl[i]);
                    std_here = false;
                    break;
                }
            if (!std_here)
                continue;
        }
        out[n++] = *p++;
    }
    out[n] = '\0';
    /* The long spellings, once the namespaces are gone. */
    for (size_t i = 0; i < sizeof std_short / sizeof *std_short; i++) {
        size_t ll = strlen(std_short[i][0]), sl = strlen(std_short[i][1]);
        for (char *q = strstr(out, std_short[i][0]); q; q = strstr(q + sl, std_short[i][0])) {
            if (q > out && (ident_char(q[-1]) || q[-1] == ':'))
                continue;
            memcpy(q, std_short[i][1], sl);
            memmove(q + sl, q + ll, strlen(q + ll) + 1);
        }
    }
    if (!out[0])
        snprintf(out, cap, "%s", fn);
}

/* The C library and the dynamic loader (glibc, musl), by file name. */
static bool c_library(const char *module)
{
    static const char *const libs[] = {"libc.so",  "libc-2.", "libpthread.so", "libpthread-",
                                       "ld-linux", "ld-musl", "libc.musl",     "ld64.so"};
    for (size_t i = 0; module && i < sizeof libs / sizeof *libs; i++)
        if (!strncmp(module, libs[i], strlen(libs[i])))
            return true;
    return false;
}

/* Words of the names glibc gives the variants of a function it picks by
 * CPU at run time (its ifuncs): "__strlen_avx2", "__strlen_evex",
 * "__memmove_avx_unaligned_erms", "__wcslen_sse4_1", aarch64's
 * "__memcpy_thunderx2".  The ISA words name a variant; the others only
 * qualify one. */
static bool isa_word(const char *w, size_t n)
{
    static const char *const isa[] = {
        "sse2",    "sse3",     "ssse3",    "sse4", "sse42",   "avx",      "avx2",      "avx512",
        "avx512f", "avx512bw", "avx512vl", "evex", "evex256", "evex512",  "simd",      "asimd",
        "nosimd",  "sve",      "mops",     "mte",  "generic", "thunderx", "thunderx2", "falkor",
        "a64fx",   "kunpeng",  "emag",     "zva",  "zva64",   "oryon1",   "power7",    "power8",
        "power9",  "power10",  "z13",      "z15",  "vx",      "vxe2",     "rvv"};
    for (size_t i = 0; i < sizeof isa / sizeof *isa; i++)
        if (strlen(isa[i]) == n && !strncmp(w, isa[i], n))
            return true;
    return false;
}

static bool qualifier_word(const char *w, size_t n)
{
    /* Not "chk": __memcpy_chk_avx_unaligned is __memcpy_chk's variant. */
    static const char *const q[] = {"unaligned", "aligned", "erms", "rtm",        "movbe",
                                    "back",      "no",      "bsf",  "vzeroupper", "fsrm"};
    bool digits = n > 0;
    for (size_t i = 0; i < n; i++)
        digits &= w[i] >= '0' && w[i] <= '9';
    if (digits) /* sse4_1 */
        return true;
    for (size_t i = 0; i < sizeof q / sizeof *q; i++)
        if (strlen(q[i]) == n && !strncmp(w, q[i], n))
            return true;
    return false;
}

/* A C library function's name without the CPU variant glibc picked for
 * the machine that crashed ("__strlen_avx2" -> "strlen"): the same crash
 * in strlen would otherwise make one group per kind of CPU in the fleet.
 * Only a name of the form __STEM_WORDS where the words after the stem all
 * qualify a variant and one of them names an ISA; anything else is left
 * as it is (in place). */
static void ifunc_base(char *fn)
{
    if (strncmp(fn, "__", 2) || fn[2] == '_' || !fn[2])
        return;
    const char *p = fn + 2;
    /* Each '_' after the stem's first word may start the suffix. */
    for (const char *cut = strchr(p + 1, '_'); cut; cut = strchr(cut + 1, '_')) {
        bool isa = false, ok = true;
        for (const char *w = cut + 1; ok;) {
            const char *e = strchr(w, '_');
            size_t n = e ? (size_t)(e - w) : strlen(w);
            isa |= isa_word(w, n);
            ok = n > 0 && (isa_word(w, n) || qualifier_word(w, n));
            if (!e)
                break;
            w = e + 1;
        }
        if (ok && isa) {
            size_t n = (size_t)(cut - p);
            memmove(fn, p, n);
            fn[n] = '\0';
            return;
        }
    }
}

/* The C library's other names for one function: glibc's debug file gives
 * free's address as "cfree" (an alias of the same address, picked by the
 * symbol table's order), and its internal names as "__libc_free". */
static void c_alias_base(char *fn, size_t cap)
{
    static const char *const alias[][2] = {{"cfree", "free"},
                                           {"__libc_free", "free"},
                                           {"__free", "free"},
                                           {"__libc_malloc", "malloc"},
                                           {"__libc_calloc", "calloc"},
                                           {"__libc_realloc", "realloc"},
                                           {"__libc_memalign", "memalign"}};
    for (size_t i = 0; i < sizeof alias / sizeof *alias; i++)
        if (!strcmp(fn, alias[i][0])) {
            snprintf(fn, cap, "%s", alias[i][1]);
            return;
        }
}

/* A library's file name as the signature names it: up to ".so", without
 * the version after it.  The client names an object by the path it was
 * loaded by ("libz.so.1", the soname's link), a core by the file the link
 * points to ("libz.so.1.2.13"): one crash, one name. */
static void module_stem(const char *mod, char *out, size_t cap)
{
    snprintf(out, cap, "%s", mod);
    char *so = strstr(out, ".so.");
    if (so && so != out)
        so[3] = '\0';
}

static fl_frame *push_frame(fl_frames *f, size_t *cap)
{
    if (f->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        fl_frame *nv = realloc(f->v, nc * sizeof *nv);
        if (!nv)
            return NULL;
        f->v = nv;
        *cap = nc;
    }
    fl_frame *fr = &f->v[f->n++];
    memset(fr, 0, sizeof *fr);
    return fr;
}

void fl_frames_free(fl_frames *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->n; i++) {
        free(f->v[i].function);
        free(f->v[i].raw_function);
        free(f->v[i].file);
        free(f->v[i].module);
        free(f->v[i].name);
    }
    free(f->v);
    f->v = NULL;
    f->n = 0;
}

/* The name a frame's function is compared by: without clone suffixes,
 * the C library's aliases and an ifunc's variant, keyed. */
static void compare_name(const char *fn, char *out, size_t cap)
{
    char nb[FL_SYM_FUNCTION_MAX + 64];
    clone_base(fn, nb, sizeof nb);
    ifunc_base(nb);
    c_alias_base(nb, sizeof nb);
    fl_group_function_key(nb, out, cap);
}

bool fl_group_same_function(const char *a, const char *b)
{
    if (!a || !b)
        return false;
    char ka[FL_SYM_FUNCTION_MAX + 64], kb[FL_SYM_FUNCTION_MAX + 64];
    compare_name(a, ka, sizeof ka);
    compare_name(b, kb, sizeof kb);
    return !strcmp(ka, kb);
}

/* Pushes the frames of one address: ns symbolized frames from sf
 * (innermost first), or one unnamed frame when ns is 0.  0 or -1 (OOM). */
static int push_address(fl_frames *out, size_t *cap, const fl_group_rules *r,
                        const fl_sym_frame *sf, int ns, uint64_t pc, uint64_t rel, const char *mod,
                        bool tail_call)
{
    int count = ns ? ns : 1;
    for (int k = 0; k < count; k++) {
        fl_frame *fr = push_frame(out, cap);
        if (!fr)
            return -1;
        fr->address = pc;
        fr->rel = rel;
        fr->tail_call = tail_call;
        if (mod && !(fr->module = strdup(mod)))
            return -1;
        char nb[FL_SYM_FUNCTION_MAX + 64];
        if (ns) {
            if (sf[k].function[0]) {
                clone_base(sf[k].function, nb, sizeof nb);
                if (c_library(mod)) {
                    ifunc_base(nb);
                    c_alias_base(nb, sizeof nb);
                }
                if (!(fr->function = strndup(nb, FL_SYM_FUNCTION_MAX - 1)))
                    return -1;
                if (strcmp(nb, sf[k].function) &&
                    !(fr->raw_function = strndup(sf[k].function, FL_SYM_FUNCTION_MAX - 1)))
                    return -1;
            }
            if (sf[k].file[0] && !(fr->file = strndup(sf[k].file, 255)))
                return -1;
            fr->line = sf[k].line;
            fr->column = sf[k].column;
            fr->inlined = sf[k].inlined;
        }
        if (fr->function)
            fl_group_function_key(fr->function, nb, sizeof nb);
        else if (mod) {
            char stem[256];
            module_stem(mod, stem, sizeof stem);
            snprintf(nb, sizeof nb, "%.250s+0x%" PRIx64, stem, rel);
        } else
            snprintf(nb, sizeof nb, "0x%" PRIx64, pc);
        /* Keyed whole, then cut: two spellings of one long name cut
         * before keying would be cut in different places. */
        if (!(fr->name = strndup(nb, 255)))
            return -1;
        /* An unnamed frame by its name in the signature too (skip.txt's
         * "demo+0x117b", as the group shows it). */
        fr->noise = matches(r, fr->function, fr->module, fr->function ? NULL : fr->name);
    }
    return 0;
}

int fl_frames_build(const fl_crashlog *log, const uint64_t *addrs, size_t n,
                    const fl_group_rules *r, fl_symbolize_fn sym, void *symctx, fl_frames *out)
{
    return fl_frames_build_tail(log, addrs, n, r, sym, NULL, symctx, out);
}

int fl_frames_build_tail(const fl_crashlog *log, const uint64_t *addrs, size_t n,
                         const fl_group_rules *r, fl_symbolize_fn sym, fl_tailcall_fn tail,
                         void *symctx, fl_frames *out)
{
    size_t cap = 0;
    out->v = NULL;
    out->n = 0;
    out->signal = log->has_crash_signal ? log->crash_signal : 0;
    /* Room for an address's frames, and a tail call's after it. */
    fl_sym_frame *sf = sym ? malloc(2 * MAX_INLINE * sizeof *sf) : NULL;
    if (sym && !sf)
        return -1;
    /* The frame above's module and the address it was looked up at. */
    const fl_object *prev_obj = NULL;
    uint64_t prev_q = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t pc = addrs[i];
        const fl_object *obj = NULL;
        for (size_t k = 0; k < log->nobjects; k++) {
            const fl_object *o = &log->objects[k];
            if (pc >= o->base && pc - o->base < o->size) {
                obj = o;
                break;
            }
        }
        uint64_t rel = 0, bias = 0;
        const char *mod = NULL;
        if (obj) {
            bias = obj->has_bias ? obj->bias : obj->base;
            rel = pc - bias;
            mod = base_name(obj->name);
        }
        /* A path cut at its start (OBJECT_PATH_CUT) names no file. */
        const char *file = obj ? (obj->path && !obj->path_cut ? obj->path : obj->name) : NULL;
        int ns = 0;
        if (sym && obj) {
            /* A return address points after the call; look up pc-1 for every
             * frame but the innermost so that the line is the call's. */
            uint64_t q = (i > 0 && rel > 0) ? rel - 1 : rel;
            ns = sym(symctx, file, obj->build_id, q, sf, MAX_INLINE);
            if (ns < 0 || ns > MAX_INLINE)
                ns = 0;
        }
        /* The functions a tail call left off between this caller and the
         * callee above it (the innermost frame has no caller above). */
        if (tail && ns && i > 0 && out->n && out->v[out->n - 1].function) {
            uint64_t sites[MAX_TAIL_CHAIN];
            bool exact[MAX_TAIL_CHAIN], in_callee[MAX_TAIL_CHAIN];
            fl_sym_frame *tf = sf + MAX_INLINE;
            size_t nt = tail(symctx, file, obj->build_id, rel, out->v[out->n - 1].function,
                             prev_obj ? prev_obj->build_id : NULL, prev_q, sites, exact, in_callee,
                             MAX_TAIL_CHAIN);
            for (size_t t = 0; t < nt && t < MAX_TAIL_CHAIN; t++) {
                /* A frame of the caller's module, or of the callee's (the
                 * call went to another module's function). */
                const fl_object *tobj = in_callee[t] ? prev_obj : obj;
                if (!tobj)
                    continue;
                const char *tfile = tobj->path && !tobj->path_cut ? tobj->path : tobj->name;
                uint64_t tbias = tobj->has_bias ? tobj->bias : tobj->base;
                int nts = sym(symctx, tfile, tobj->build_id, sites[t], tf, MAX_INLINE);
                if (nts <= 0 || nts > MAX_INLINE)
                    continue;
                fl_sym_frame *from = tf;
                if (!exact[t]) {
                    /* Its entry: the function, not what was inlined at
                     * its start, and no line. */
                    from = &tf[nts - 1];
                    nts = 1;
                    from->file[0] = '\0';
                    from->line = from->column = 0;
                    from->inlined = false;
                }
                size_t first = out->n;
                if (push_address(out, &cap, r, from, nts, tbias + sites[t], sites[t],
                                 base_name(tobj->name), true))
                    goto fail;
                for (size_t k = first; k < out->n; k++)
                    out->v[k].at_entry = !exact[t];
            }
        }
        if (push_address(out, &cap, r, sf, ns, pc, rel, mod, false))
            goto fail;
        prev_obj = obj;
        prev_q = (i > 0 && rel > 0) ? rel - 1 : rel;
    }
    free(sf);
    return 0;
fail:
    free(sf);
    fl_frames_free(out);
    return -1;
}

/* The start-up frames at the bottom of every stack: the C library's way
 * into main or into a thread's function, and _start.  Their names change
 * between C library versions (__libc_start_main calls main itself before
 * glibc 2.34, through __libc_start_call_main since), and without the C
 * library's symbols they are offsets that move with every build of it:
 * left in the signature of a shallow stack, the same crash would make a
 * group per distribution update, and a crash in a thread's function
 * would carry start_thread and clone3 as offsets. */
static const char *const startup_names[] = {
    "_start",        "__libc_start_main", "__libc_start_main_impl", "__libc_start_call_main",
    "start_thread",  "clone",             "clone3",                 "__clone",
    "__clone3",      "thread_start",      "libc_start_main",        "libc_start_main_stage2",
    "_start_c",
};

static bool startup_frame(const fl_frame *fr)
{
    if (fr->function) {
        /* glibc's debug file names the outermost frame of a thread by its
         * internal alias, "__GI___clone3". */
        const char *fn = fr->function + (strncmp(fr->function, "__GI_", 5) ? 0 : 5);
        for (size_t i = 0; i < sizeof startup_names / sizeof *startup_names; i++)
            if (!strcmp(fn, startup_names[i]))
                return true;
        return false;
    }
    return c_library(fr->module);
}

/* The C++ runtime and the unwinder it throws with (GNU's and LLVM's). */
static bool cxx_runtime(const char *module)
{
    static const char *const libs[] = {"libstdc++.so", "libc++.so", "libc++abi.so", "libgcc_s.so",
                                       "libunwind.so"};
    for (size_t i = 0; module && i < sizeof libs / sizeof *libs; i++)
        if (!strncmp(module, libs[i], strlen(libs[i])))
            return true;
    return false;
}

static bool is_abort(const fl_frame *fr)
{
    return fr->function && (!strcmp(fr->function, "abort") || !strcmp(fr->function, "__GI_abort"));
}

/* The system libraries' frames that say nothing of where a crash was:
 *  - An abort (SIGABRT, or an abort frame among the noise at the top)
 *    comes down from the code that gave up through the C library and,
 *    for an uncaught C++ exception, the C++ runtime: std::terminate,
 *    __cxa_throw, std::__throw_out_of_range_fmt, the personality routine.
 *    Those frames say how the process ended, not where, and five of them
 *    filled the signature of every uncaught exception of an application,
 *    whatever threw it.  So at the top of an abort the C++ runtime's
 *    frames, and the C library's unnamed ones, are noise down to the
 *    first frame of other code.  The C library's named frames stay:
 *    "_int_free | free | f" is not "f" calling assert().
 *  - Under the first significant frame, an unnamed frame of the C library
 *    or the C++ runtime (no debug file for it, the common case for
 *    libstdc++) is an offset that moves with every build of the library:
 *    a qsort between a comparison function and its caller would make a
 *    group per distribution update of the machines that crash.  The
 *    first significant frame stays, named or not: a crash in strlen is
 *    not a crash in its caller. */
static void mark_runtime_noise(fl_frames *f, size_t nsig)
{
    bool aborted = f->signal == SIGABRT, top = true;
    for (size_t i = 0; i < nsig; i++) {
        fl_frame *fr = &f->v[i];
        if (fr->noise) {
            aborted |= is_abort(fr);
            continue;
        }
        bool cxx = cxx_runtime(fr->module);
        bool unnamed = !fr->function && (cxx || c_library(fr->module));
        /* An unnamed frame of the program between the runtime's frames at
         * the top of an abort is a terminate handler that std::terminate
         * called: libfaultline's own, linked statically, before the
         * program's symbols name it (fl_on_terminate, skipped then). */
        bool handler =
            top && aborted && !fr->function && i + 1 < nsig && cxx_runtime(f->v[i + 1].module);
        if (top ? aborted && (cxx || unnamed || handler) : unnamed) {
            fr->noise = true;
            continue;
        }
        top = false;
    }
}

/* The C++ runtime's way into a std::thread's function, under it at the
 * bottom of the thread's stack: libstdc++'s execute_native_thread_routine,
 * std::thread::_State_impl<...>::_M_run, _Invoker<...>::operator(),
 * _M_invoke, std::__invoke and std::__invoke_impl (named so at -O0, by
 * their bare names when gcc inlined them), libc++'s __thread_proxy and
 * __thread_execute -- or the runtime's unnamed frames.  Their template
 * arguments spell the thread function's parameter types, and at -O0
 * they filled four of a signature's five places. */
static bool cxx_thread_entry(const fl_frame *fr)
{
    static const char *const prefix[] = {"std::thread::",
                                         "std::__invoke",
                                         "std::__thread_proxy",
                                         "std::__thread_execute",
                                         "execute_native_thread_routine",
                                         "__invoke_impl<",
                                         "__invoke<",
                                         "_M_invoke<",
                                         "_M_run()",
                                         "__thread_proxy<",
                                         "__thread_execute<"};
    if (!fr->function)
        return cxx_runtime(fr->module);
    for (size_t i = 0; i < sizeof prefix / sizeof *prefix; i++)
        if (!strncmp(fr->name, prefix[i], strlen(prefix[i])))
            return true;
    return false;
}

/* How many frames, from the innermost, the signature may take: not main's
 * callers, nor the start-up frames below a thread's function (unnamed
 * ones in the C library count as such; so does an unnamed outermost frame
 * below them, the program's own _start).  All of them, when nothing else
 * is left. */
static size_t signature_frames(const fl_frames *f)
{
    size_t end = f->n;
    for (size_t i = f->n; i-- > 0;)
        if (f->v[i].function && !strcmp(f->v[i].function, "main")) {
            end = i + 1;
            break;
        }
    if (end == f->n && end >= 2 && !f->v[end - 1].function && startup_frame(&f->v[end - 2]))
        end--;
    while (end > 0 && startup_frame(&f->v[end - 1]))
        end--;
    while (end > 0 && cxx_thread_entry(&f->v[end - 1]))
        end--;
    return end ? end : f->n;
}

/* Mutual recursion (a stack overflow through f -> g -> h -> f ...): the
 * frames the signature may take, cand[0..n), innermost first, are a few
 * frames and then a cycle of 2 to 8 names repeated down to the end of the
 * stack the log kept -- no main under it, as the client's frame limit
 * cuts an overflow's stack.  Which function of the cycle hit the guard
 * page is chance, and each would make a group of its own.  So the cycle
 * is taken once, from its least name (strcmp), after the frames before
 * it: cand is rewritten to that order, and its new length returned.  A
 * crash at some depth of a recursion that returns to main is not a
 * cycle to the end, and keeps its frames. */
#define CYCLE_MAX 8
#define CYCLE_LEAD 2 /* frames above the cycle: where it overflowed */
static size_t recursion_cycle(const fl_frames *f, size_t *cand, size_t n)
{
    for (size_t k = 0; k <= CYCLE_LEAD; k++) {
        for (size_t p = 2; p <= CYCLE_MAX; p++) {
            if (n < k + 3 * p)
                break;
            size_t j = k;
            for (; j + p < n; j++)
                if (strcmp(f->v[cand[j]].name, f->v[cand[j + p]].name))
                    break;
            if (j + p < n)
                continue;
            size_t r = 0;
            for (size_t t = 1; t < p; t++)
                if (strcmp(f->v[cand[k + t]].name, f->v[cand[k + r]].name) < 0)
                    r = t;
            /* cand[k + r ...] runs through at least two more cycles. */
            memmove(cand + k, cand + k + r, p * sizeof *cand);
            return k + p;
        }
    }
    return n;
}

int fl_signature_compute(const char *project, const char *app, fl_frames *f,
                         const fl_group_rules *r, fl_signature *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < f->n; i++)
        f->v[i].in_signature = false;
    size_t nsig = signature_frames(f);
    mark_runtime_noise(f, nsig);
    size_t cap = 64, len = 0;
    char *s = malloc(cap);
    if (!s)
        return -1;
    s[0] = '\0';
    unsigned taken = 0;
    /* If every frame is noise, fall back to the raw top frames so that such
     * crashes still group by where they were. */
    bool any = false;
    for (size_t i = 0; i < nsig; i++)
        any |= !f->v[i].noise;
    /* A frame that repeats the one taken before it (recursion: a stack
     * overflow, glibc's msort_with_tmp under qsort) is not taken again:
     * else the depth of the recursion, which the data sets, would be part
     * of the signature. */
    size_t *cand = malloc((nsig ? nsig : 1) * sizeof *cand), nc = 0;
    if (!cand) {
        free(s);
        return -1;
    }
    const char *prev = NULL;
    for (size_t i = 0; i < nsig; i++) {
        if (any && f->v[i].noise)
            continue;
        if (prev && !strcmp(prev, f->v[i].name))
            continue;
        prev = f->v[i].name;
        cand[nc++] = i;
    }
    nc = recursion_cycle(f, cand, nc);
    for (size_t c = 0; c < nc && taken < r->top_n; c++) {
        size_t i = cand[c];
        const char *nm = f->v[i].name;
        size_t need = len + strlen(nm) + 4;
        if (need > cap) {
            while (cap < need)
                cap *= 2;
            char *ns = realloc(s, cap);
            if (!ns) {
                free(cand);
                free(s);
                return -1;
            }
            s = ns;
        }
        len += (size_t)snprintf(s + len, cap - len, "%s%s", taken ? " | " : "", nm);
        f->v[i].in_signature = true;
        taken++;
    }
    free(cand);
    if (!taken) {
        free(s);
        if (!(s = strdup("<empty stack>")))
            return -1;
    }
    out->text = s;

    /* The default project's groups keep the ids they had before projects:
     * the hash of app and signature.  Another project's start with its id
     * and a NUL, which no application name holds. */
    uint8_t h[32];
    if (project && (!project[0] || !strcmp(project, FL_PROJECT_DEFAULT)))
        project = NULL;
    size_t pl = project ? strlen(project) + 1 : 0;
    size_t al = app ? strlen(app) : 0, sl = strlen(s);
    char *key = malloc(pl + al + sl + 2);
    if (!key) {
        free(s);
        out->text = NULL;
        return -1;
    }
    if (project)
        memcpy(key, project, pl);
    memcpy(key + pl, app ? app : "", al);
    key[pl + al] = '\n';
    memcpy(key + pl + al + 1, s, sl + 1);
    fl_sha256(key, pl + al + 1 + sl, h);
    free(key);
    fl_hex(h, 16, out->group_id);

    /* The exact full stack: every frame's name, noise included. */
    size_t tl = 0;
    for (size_t i = 0; i < f->n; i++)
        tl += strlen(f->v[i].name) + 1;
    char *all = malloc(tl + 1);
    if (!all) {
        free(s);
        out->text = NULL;
        return -1;
    }
    size_t p = 0;
    for (size_t i = 0; i < f->n; i++) {
        size_t l = strlen(f->v[i].name);
        memcpy(all + p, f->v[i].name, l);
        p += l;
        all[p++] = '\n';
    }
    fl_sha256(all, p, h);
    free(all);
    fl_hex(h, 16, out->stack_hash);
    return 0;
}
