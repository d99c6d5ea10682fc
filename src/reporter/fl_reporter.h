/*
 * fl_reporter.h - the two command-line front ends of the reporter library.
 *
 * fl_reporter_main() is all of `faultline-report` (docs/reporter.md);
 * fl_cmd_submit() is `faultline submit`.  Both print to stdout/stderr and
 * return the process exit code (fl_exit.h): FL_EXIT_OK, every log
 * delivered or rejected; FL_EXIT_ERROR; FL_EXIT_USAGE (64); FL_EXIT_TEMPFAIL
 * (75), some logs kept, try again later.
 */
#ifndef FL_REPORTER_H
#define FL_REPORTER_H

#include "fl_exit.h"

/* `faultline-report [options]`; argv[0] is the program name. */
int fl_reporter_main(int argc, char **argv);

/* `faultline submit FILE... --server URL [--key KEY]`; argv[0] is "submit". */
int fl_cmd_submit(int argc, char **argv);

#endif /* FL_REPORTER_H */
