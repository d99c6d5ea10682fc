/* The subcommands of `faultline`.  An area adds its command here: one
 * declaration and one FL_CLI_COMMANDS entry. */
#ifndef FL_CLI_H
#define FL_CLI_H

#define FL_VERSION_STRING "0.1.0"

int fl_cmd_version(int argc, char **argv);
int fl_cmd_submit(int argc, char **argv);      /* src/reporter/submit.c */
int fl_cmd_symbolicate(int argc, char **argv); /* src/symbols/cmd_symbols.c */
int fl_cmd_symbols(int argc, char **argv);     /* src/symbols/cmd_symbols.c */
int fl_cmd_serve(int argc, char **argv);       /* src/server/cmd_serve.c */
int fl_cmd_decode(int argc, char **argv);      /* src/symbols/tracedecode.c */
int fl_cmd_dump(int argc, char **argv);        /* src/symbols/cmd_dump.c */
int fl_cmd_core(int argc, char **argv);        /* src/symbols/cmd_core.c */
int fl_cmd_minidump(int argc, char **argv);    /* src/symbols/cmd_minidump.c */

/* { name, function, one-line summary } */
#define FL_CLI_COMMANDS                                                                            \
    {"version", fl_cmd_version, "print the version"},                                              \
        {"serve", fl_cmd_serve, "run the server (HTTP ingest, workers, API)"},                     \
        {"submit", fl_cmd_submit, "send crash logs to a server (a scriptable reporter)"},          \
        {"symbolicate", fl_cmd_symbolicate,                                                        \
         "symbolicate addresses like llvm-symbolizer --inlines"},                                  \
        {"symbols", fl_cmd_symbols,                                                                \
         "symbols add FILE...: ingest debug files (locally or to a server)"},                      \
        {"decode", fl_cmd_decode,                                                                  \
         "turn trace-ID dumps into text and calling contexts into stacks"},                        \
        {"dump", fl_cmd_dump, "dump PID: the flight recorder of a running process, as text"},      \
        {"core", fl_cmd_core,                                                                      \
         "core CORE: a crash log from a core dump (programs without libfaultline)"},               \
        {"minidump", fl_cmd_minidump,                                                              \
         "minidump FILE: a crash log from a Breakpad/Crashpad minidump"},

#endif
