// Types for the split-DWARF type-unit tests (-fdebug-types-section):
// classes in namespaces with inline member functions, so that the
// program's compile units refer to type units by signature and the
// inlined calls come from this header and from the source file.
#pragma once
#include <map>
#include <string>

namespace shapes
{
namespace detail
{
template <class T> struct Box {
    T v;
    T get() const
    {
        return v;
    }
    T twice() const
    {
        return get() + get();
    }
};
} // namespace detail

class Shape
{
  public:
    explicit Shape(int s) : s_(s) {}
    virtual ~Shape() {}
    virtual int area() const
    {
        return s_ * s_;
    }
    int side() const
    {
        return s_;
    }

  private:
    int s_;
};

struct Counter {
    std::map<std::string, int> m;
    int bump(const std::string &k)
    {
        return ++m[k];
    }
};

int measure(Shape &s, detail::Box<long> b, Counter &c);
} // namespace shapes
