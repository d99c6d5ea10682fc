/*
 * file.c - checks of files given on the command line; see fl_file.h.
 */
#include "fl_file.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *fl_file_problem(const char *path)
{
    struct stat st;
    if (stat(path, &st))
        return strerror(errno);
    if (!S_ISREG(st.st_mode))
        return "not a file";
    if (access(path, R_OK))
        return strerror(errno);
    return NULL;
}
