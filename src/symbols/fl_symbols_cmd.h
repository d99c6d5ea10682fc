/* fl_symbols_cmd.h - the `faultline symbolicate` and `faultline symbols`
 * subcommands (argv[0] is the subcommand's name).  Return the exit code. */
#ifndef FL_SYMBOLS_CMD_H
#define FL_SYMBOLS_CMD_H

int fl_cmd_symbolicate(int argc, char **argv);
int fl_cmd_symbols(int argc, char **argv);

#endif
