/* fl_exit.h - exit statuses shared by the command-line programs
 * (`faultline` and its subcommands, `faultline-report`).  Usage errors
 * exit 64, EX_USAGE of sysexits.h, everywhere; `decode` and `dump`
 * document their own statuses (2 for usage too) and keep them. */
#ifndef FL_EXIT_H
#define FL_EXIT_H

#define FL_EXIT_OK 0        /* success */
#define FL_EXIT_ERROR 1     /* an error a person must look at */
#define FL_EXIT_USAGE 64    /* EX_USAGE: bad command line */
#define FL_EXIT_TEMPFAIL 75 /* EX_TEMPFAIL: try again later */

#endif /* FL_EXIT_H */
