// A C++ consumer of the calling context, built with -finstrument-functions
// against the installed library: a method calls a template, which prints
// faultline_context(); the installed `faultline decode` must give that
// stack back, demangled.
#include <faultline.h>

#include <cstdio>

extern "C" __attribute__((no_instrument_function)) void report()
{
    std::printf("%llx\n", faultline_context());
}

template <class T> __attribute__((noinline)) T twice(T x)
{
    report();
    return x + x;
}

struct Widget {
    __attribute__((noinline)) int run(int x) { return twice(x) + 1; }
};

int main()
{
    if (!faultline_install("consumer_context", "1", nullptr))
        return 3;
    return Widget().run(2) == 5 ? 0 : 1;
}
