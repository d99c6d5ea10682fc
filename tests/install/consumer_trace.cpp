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

int main()
{
    in_inline(1);
    in_template(2.5);
    in_template(3);
    Widget().method("hello");
    long l = -7;
    unsigned long long u = 18446744073709551615ull;
    FAULTLINE_TRACE("types %ld %llu %p %c", l, u, nullptr, 'x');
    faultline_breadcrumb("cpp", "done");
    return faultline_trace_dump(STDOUT_FILENO) == 6 ? 0 : 1;
}
