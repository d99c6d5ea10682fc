// The split-DWARF type-unit tests' program (see types.h).
#include "types.h"

namespace shapes
{
struct Widget {
    int v;
    int get(const int *p) const
    {
        return *p + v;
    }
    __attribute__((noinline)) int poke(int *p);
};

int Widget::poke(int *p)
{
    return get(p) * 3;
}

__attribute__((noinline)) int measure(Shape &s, detail::Box<long> b, Counter &c)
{
    return s.area() + (int)b.twice() + c.bump("x") + s.side();
}
} // namespace shapes

int main(int argc, char **argv)
{
    shapes::Shape s(argc);
    shapes::detail::Box<long> b{argc};
    shapes::Counter c;
    shapes::Widget w{argc};
    return shapes::measure(s, b, c) + w.poke(&argc) + (argv[0][0] == 'x');
}
