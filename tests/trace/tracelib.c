/* A library that traces and is then dlclose()d: its trace sites (and
 * their format strings) go away with it, and the dump must survive. */
#include <faultline.h>

__attribute__((visibility("default"))) void tracelib_trace(int n)
{
    FAULTLINE_TRACE("from the library %d", n);
}
