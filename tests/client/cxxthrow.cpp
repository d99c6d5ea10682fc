// cxxthrow: uncaught C++ exceptions of every shape the terminate handler
// reads (client_driver cxx).  Each mode ends the process; the log must
// name the exception's type and what() -- or, where there is none, say
// nothing of an exception.
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

#include "faultline.h"

namespace {

struct Base {
    virtual ~Base() {}
    long pad[3] = {1, 2, 3};
};

// std::exception is not the first base: its subobject is at an offset.
struct Derived : Base, std::logic_error {
    Derived() : std::logic_error("derived: second base") {}
};

// A virtual base: its offset is read from the object's vtable.
struct Virtual : virtual std::exception {
    const char *what() const noexcept override { return "virtual base"; }
};
struct Diamond : Base, Virtual {};

// Derives from std::exception only privately: not one to a catch, so
// what() is not called.
struct Hidden : private std::exception {};

// what() itself ends in std::terminate (an exception out of noexcept).
__attribute__((noinline)) const char *explode()
{
    throw 7;
}
struct Throws : std::exception {
    const char *what() const noexcept override { return explode(); }
};

__attribute__((noinline)) void raise_it(const char *mode)
{
    if (!strcmp(mode, "runtime_error"))
        throw std::runtime_error("disk \"full\"\n on /var");
    if (!strcmp(mode, "derived"))
        throw Derived();
    if (!strcmp(mode, "diamond"))
        throw Diamond();
    if (!strcmp(mode, "hidden"))
        throw Hidden();
    if (!strcmp(mode, "what_throws"))
        throw Throws();
    if (!strcmp(mode, "int"))
        throw 42;
    if (!strcmp(mode, "cstr"))
        throw "plain text";
    if (!strcmp(mode, "long")) {
        static std::string s(1500, 'x');
        throw std::length_error(s);
    }
    if (!strcmp(mode, "terminate"))
        std::terminate(); // no exception
    if (!strcmp(mode, "caught")) {
        try {
            throw std::runtime_error("handled");
        } catch (const std::exception &) {
        }
        volatile int *p = nullptr;
        *p = 1; // a plain crash later
    }
}

} // namespace

int main(int argc, char **argv)
{
    if (argc != 2)
        return 64;
    if (!faultline_install("cxxthrow", "1.0", nullptr))
        return 2;
    if (!strcmp(argv[1], "own_handler")) {
        // The program's own handler, set after install, replaces ours.
        std::set_terminate([] {
            fputs("own handler\n", stdout);
            fflush(stdout);
            std::abort();
        });
        raise_it("runtime_error");
    }
    raise_it(argv[1]);
    return 3;
}
