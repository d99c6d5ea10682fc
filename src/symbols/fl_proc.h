/*
 * fl_proc.h - what /proc tells of another process, for the commands that
 * act on one (`faultline dump PID`, `faultline core --from-kernel`).
 */
#ifndef FL_PROC_H
#define FL_PROC_H

#include <sys/types.h>

/* Whether process pid runs libfaultline: a libfaultline*.so mapped, or a
 * program that defines faultline_install (the static library).  1, 0, or
 * -1 when /proc does not tell (errno says why).  In cmd_dump.c. */
int fl_proc_runs_libfaultline(pid_t pid);

#endif
