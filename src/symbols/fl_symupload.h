/* fl_symupload.h - upload one debug file to a Faultline server
 * (POST SERVER/api/v1/symbols).  msg (always filled) is the line to show:
 * a success summary or the reason for the failure.  Progress goes to
 * stderr when show_progress.  Returns 0 or a negative FL_SYM_ code. */
#ifndef FL_SYMUPLOAD_H
#define FL_SYMUPLOAD_H

#include <stddef.h>

int fl_symupload(const char *server, const char *path, int show_progress, int index, int count,
                 char *msg, size_t msglen);

#endif
