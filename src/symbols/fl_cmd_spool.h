/*
 * fl_cmd_spool.h - how the converting commands (`faultline core`,
 * `faultline minidump`) put a crash log where faultline-report finds it.
 *
 * The log goes into a spool directory the way the client puts one there:
 * written under a dot-name the reporter does not look at, then renamed to
 * "<crash id>.crashlog", so faultline-report never sees half a log.  These
 * functions print (they are the commands' own, not a library's).
 */
#ifndef FL_CMD_SPOOL_H
#define FL_CMD_SPOOL_H

#include <stddef.h>
#include <stdio.h>

/* The spool the client and the reporter default to ($FAULTLINE_SPOOL,
 * else $XDG_STATE_HOME/faultline, else $HOME/.local/state/faultline):
 * 0, or -1 when none is set or it does not fit in cap bytes. */
int fl_cmd_default_spool(char *out, size_t cap);

/* mkdir -p with mode 0700: 0, or -1 with errno. */
int fl_cmd_mkdirs(const char *dir);

/* The spool's installation id (36 characters and a NUL), read, or made
 * the way src/client/spool.c makes it: 0, or -1 with the reason in why. */
int fl_cmd_install_id(const char *spool, char id[40], char *why, size_t whycap);

/* Writes one log to `out`.  `install_id` is the spool's (NULL with -o);
 * on success the log's crash id goes to crash_id.  Returns 0, or nonzero
 * with the message (naming the input) in err. */
typedef int (*fl_cmd_log_writer)(void *arg, FILE *out, const char *install_id, char crash_id[40],
                                 char *err, size_t errcap);

/*
 * Writes a log by `write` into `spool` (as <crash id>.crashlog, with the
 * spool's installation id) or to `output` ("-": standard output), by way
 * of a temporary file (named `tmpname`.XXXXXX in the spool, or beside
 * FILE) renamed when whole, and prints its path.  Messages go to stderr
 * prefixed by `cmd` ("faultline core").  Returns an exit status from
 * fl_exit.h; a failure leaves nothing behind.
 */
int fl_cmd_write_log(const char *cmd, const char *spool, const char *output, const char *tmpname,
                     fl_cmd_log_writer write, void *arg);

#endif /* FL_CMD_SPOOL_H */
