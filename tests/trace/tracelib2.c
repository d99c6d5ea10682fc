/* Another library with the same function, a different format: loaded
 * where tracelib was after tracelib is dlclose()d, its sites sit where
 * tracelib's were, and tracelib's events must not take its format. */
#include <faultline.h>

__attribute__((visibility("default"))) void tracelib_trace(int n)
{
    FAULTLINE_TRACE("WRONG FORMAT of the second library %d", n);
}
