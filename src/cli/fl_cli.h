/* The subcommands of `faultline`.  An area adds its command here: one
 * declaration and one FL_CLI_COMMANDS entry. */
#ifndef FL_CLI_H
#define FL_CLI_H

#define FL_VERSION_STRING "0.1.0"

int fl_cmd_version(int argc, char **argv);

/* { name, function, one-line summary } */
#define FL_CLI_COMMANDS                                                                            \
    {"version", fl_cmd_version, "print the version"},

#endif
