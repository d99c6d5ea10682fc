// A C++ consumer of the flight recorder, from the installed header: the
// macro in an inline function, a template and a method (call sites in
// COMDAT groups), argument types picked by overloads.
#include <faultline.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>

inline void in_inline(int x) { FAULTLINE_TRACE("inline %d", x); }
template <class T> void in_template(T x) { FAULTLINE_TRACE("template %g", (double)x); }
struct Widget {
    void method(const std::string &s) { FAULTLINE_TRACE("method %s %zu", s.c_str(), s.size()); }
};

int main(int argc, char **argv)
{
    /* The trace-ID dump names modules from the table install makes. */
    if (!faultline_install("consumer_trace", "1", nullptr))
        return 3;
    in_inline(1);
    in_template(2.5);
    in_template(3);
    Widget().method("hello");
    long l = -7;
    unsigned long long u = 18446744073709551615ull;
    FAULTLINE_TRACE("types %ld %llu %p %c", l, u, nullptr, 'x');
    faultline_breadcrumb("cpp", "done");
    /* With an argument: the trace-ID dump to that file as well. */
    if (argc > 1) {
        FILE *f = std::fopen(argv[1], "w");
        if (!f || faultline_trace_dump(fileno(f)) <= 0)
            return 2;
        std::fclose(f);
    }
#ifndef FAULTLINE_TRACE_APART
    return faultline_trace_dump_text(STDOUT_FILENO) == 6 ? 0 : 1;
#else /* the events as TRACE_ID lines, the method's string on a TRACE_BYTES line */
    return faultline_trace_dump_text(STDOUT_FILENO) == 7 ? 0 : 1;
#endif
}
