/*
 * fl_demangle.h - C++ names as C++ spells them.
 *
 * The C++ runtime's demangler (__cxa_demangle, extern "C" in libstdc++) is
 * loaded with dlopen() on first use: linking libstdc++ would cost every
 * program of ours the relocation of the whole C++ runtime at start-up.
 * Without it, both calls answer NULL and names stay mangled.  Thread-safe.
 */
#ifndef FL_DEMANGLE_H
#define FL_DEMANGLE_H

/* An Itanium "_Z" name demangled (malloc'd), or NULL when raw is not one
 * the demangler reads. */
char *fl_demangle(const char *raw);

/* A C++ type's mangled name, as a type_info holds it ("St13runtime_error",
 * "i", "PKc"), as C++ spells it ("std::runtime_error", "int",
 * "char const*"), malloc'd; or NULL. */
char *fl_demangle_type(const char *type);

#endif
