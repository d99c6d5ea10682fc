/*
 * fl_crashlog.h - the crash-log format: one reader, one line writer.
 *
 * The format is documented field by field in docs/crashlog-format.md.  In
 * short: UTF-8 text, '\n' line ends, '#' comments and blank lines ignored,
 * first line "MOJOCRASH <ver>" or "FAULTLINE <ver>", then
 * "CRASHLOG_VERSION N", then "KEY value" lines in any order, "END" last.
 *
 * The writer (fl_line_*) is async-signal-safe: no heap, no locks, no libc
 * formatting.  The crash handler uses it.  The reader allocates and is for
 * the reporter, the server and tools only.
 */
#ifndef FL_CRASHLOG_H
#define FL_CRASHLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------ */
/* Writer: composes one line at a time in a fixed buffer.              */

/* Longest line the writer composes (without '\n'); longer values are cut. */
#define FL_LINE_MAX 4096

typedef struct fl_line {
    char buf[FL_LINE_MAX + 1];
    size_t len;
    bool truncated; /* something did not fit */
} fl_line;

/* Start a line with `key` and, unless key is "", one space. */
void fl_line_start(fl_line *l, const char *key);
/* Append a string verbatim (no escaping): for keys and trusted text. */
void fl_line_raw(fl_line *l, const char *s);
/* Append a value string, escaping what would break the line format:
 * '\n' -> "\n", '\r' -> "\r", other control bytes but tab -> "\xHH". */
void fl_line_str(fl_line *l, const char *s);
/* Same for a byte range of known length (need not be NUL-terminated). */
void fl_line_strn(fl_line *l, const char *s, size_t n);
void fl_line_u64(fl_line *l, uint64_t v);         /* decimal */
void fl_line_i64(fl_line *l, int64_t v);          /* decimal, '-' if < 0 */
void fl_line_hex(fl_line *l, uint64_t v);         /* "0x" + lowercase hex */
void fl_line_hexbytes(fl_line *l, const void *p, size_t n); /* "00ff..." */
void fl_line_char(fl_line *l, char c);
/* The NUL-terminated line (borrowed from l). */
const char *fl_line_cstr(fl_line *l);

/* Signal-safe helpers also used outside the writer. */
size_t fl_strlen(const char *s);
/* The length of s, at most max (s need not be terminated within max). */
size_t fl_strnlen(const char *s, size_t max);
/* Copy at most cap-1 bytes and NUL-terminate; returns the bytes copied. */
size_t fl_strlcpy(char *dst, const char *src, size_t cap);
/* Formats v in decimal into buf (>= 21 bytes); returns the length. */
size_t fl_fmt_u64(char *buf, uint64_t v);

/* ------------------------------------------------------------------ */
/* Reader.                                                             */

typedef struct fl_object {
    char *name;        /* OBJECT's first field (a file name) */
    uint64_t base;     /* start address */
    uint64_t size;     /* bytes */
    uint64_t bias;     /* load bias (4th field); 0 when absent */
    bool has_bias;
    char *build_id;    /* OBJECT_BUILD_ID, lowercase hex, or NULL */
    char *path;        /* OBJECT_PATH, or NULL */
    uint64_t path_cut; /* OBJECT_PATH_CUT: bytes of the path left out before
                        * OBJECT_PATH (and the name), which is its end; 0: whole */
} fl_object;

typedef struct fl_kv {
    char *key;
    char *value; /* as written: escapes are not undone */
} fl_kv;

typedef struct fl_register {
    char *name;
    uint64_t value;
} fl_register;

typedef struct fl_stack_chunk {
    uint64_t addr;
    uint8_t *data;
    size_t len;
} fl_stack_chunk;

typedef struct fl_thread {
    uint64_t tid;
    char *name;          /* may be NULL */
    uint64_t *frames;    /* THREAD_FRAME values, innermost first */
    size_t nframes;
    uint64_t context;    /* THREAD_CONTEXT (compressed calling context) */
    bool has_context;
} fl_thread;

typedef struct fl_trace_event {
    uint64_t time_ns;
    uint64_t tid;
    char *text;       /* NULL for a TRACE_ID event (apart) */
    uint64_t context; /* TRACE_CONTEXT: the calling context at the event */
    bool has_context;
    /* TRACE_ID: an event whose site keeps its format apart, in the
     * .debug_faultline_trace section of its object's debug file
     * (FAULTLINE_TRACE_APART); fl_trace_event_format() makes its text. */
    bool apart;
    uint64_t site;        /* the site's address in the process */
    char types[9];        /* its arguments' type codes, NUL-terminated */
    uint64_t slots[8];    /* one per type; a string's: its offset in the record */
    unsigned char *bytes; /* TRACE_BYTES: the record from byte (5 + nargs) * 8 on */
    size_t nbytes;
} fl_trace_event;

typedef struct fl_breadcrumb {
    uint64_t time_ms;
    char *category;
    char *message;
} fl_breadcrumb;

/* A parsed crash log.  Every pointer is owned by the log and freed by
 * fl_crashlog_free(); strings are NUL-terminated; absent strings are NULL. */
typedef struct fl_crashlog {
    char *producer;          /* "MOJOCRASH" or "FAULTLINE" */
    char *producer_version;
    unsigned log_version;    /* CRASHLOG_VERSION */

    /* version 1 */
    char *app_name, *app_version, *platform_name, *cpuarch, *platform_version;
    int crash_signal;
    bool has_crash_signal;
    int64_t uptime;          /* APPLICATION_UPTIME, seconds */
    int64_t crash_time;      /* CRASH_TIME, seconds since the epoch */
    bool has_uptime, has_crash_time;
    fl_object *objects;
    size_t nobjects;
    uint64_t *callstack;     /* CALLSTACK, innermost first */
    size_t ncallstack;
    fl_kv *etc;              /* ETC_KEY/ETC_VALUE pairs */
    size_t netc;

    /* version 2 */
    char *crash_id, *install_id;
    char *os_name, *os_version, *os_pretty_name, *kernel_version;
    char *executable, *signal_name, *crash_thread_name;
    char *exception_type;    /* EXCEPTION_TYPE: an uncaught C++ exception's mangled type */
    char *exception_message; /* EXCEPTION_MESSAGE: its what() (control bytes escaped) */
    char *abort_message;     /* ABORT_MESSAGE: glibc's message of the abort (assert, malloc) */
    uint64_t pid, crash_tid;
    bool has_pid, has_crash_tid;
    int64_t crash_code;      /* si_code */
    bool has_crash_code;
    uint64_t crash_address;  /* si_addr */
    bool has_crash_address;
    uint64_t crash_context;  /* CRASH_CONTEXT: the crashing thread's calling context */
    bool has_crash_context;
    int handler_fault;       /* HANDLER_FAULT signal, 0 when absent */
    uint64_t threads_omitted; /* THREADS_OMITTED: threads past the log's limit */
    uint64_t objects_omitted; /* OBJECTS_OMITTED: loaded objects past the log's limit */
    uint64_t vfork_parent;    /* VFORK_PARENT: the process ran in this parent's memory
                               * (a vfork() child before exec); 0 when absent */
    fl_register *registers;
    size_t nregisters;
    fl_stack_chunk *stack;
    size_t nstack;
    fl_thread *threads;      /* other threads */
    size_t nthreads;
    fl_trace_event *trace;
    size_t ntrace;
    fl_breadcrumb *breadcrumbs;
    size_t nbreadcrumbs;
    fl_kv *state;            /* STATE_KEY/STATE_VALUE pairs */
    size_t nstate;
    fl_kv *unknown;          /* lines with keys this reader does not know */
    size_t nunknown;

    struct fl_arena *arena_; /* private */
} fl_crashlog;

typedef struct fl_crashlog_error {
    unsigned line;       /* 1-based line number; 0 when not about one line */
    char message[160];
} fl_crashlog_error;

/* Limits the reader enforces; fl_crashlog_parse() uses the defaults. */
#define FL_CRASHLOG_MAX_BYTES   (16u << 20) /* whole log */
#define FL_CRASHLOG_MAX_LINE    (1u << 20)  /* one line */
#define FL_TRACE_BYTES_MAX 8192u            /* TRACE_BYTES of one TRACE_ID event */

/*
 * Parse a crash log held in buf[0..len).  The text need not be
 * NUL-terminated.  On success returns 0 and sets *out (caller frees with
 * fl_crashlog_free).  On failure returns -1, leaves *out NULL, and fills
 * *err (may be NULL) with the line number and the reason: a log with no
 * END, a missing or bad header, a malformed number, an ETC_VALUE without
 * its ETC_KEY, an embedded NUL, and so on.
 */
int fl_crashlog_parse(const char *buf, size_t len, fl_crashlog **out, fl_crashlog_error *err);

/* Check a log as fl_crashlog_parse() does -- the same verdict, the same
 * error -- at a fraction of the cost, without building it: on success *out
 * has every string and scalar field, but no arrays (objects, callstack,
 * etc, threads, ...: NULL, counts 0).  For a server that only stores the
 * text. */
int fl_crashlog_check(const char *buf, size_t len, fl_crashlog **out, fl_crashlog_error *err);

/* Read and parse a file (at most FL_CRASHLOG_MAX_BYTES).  Same contract;
 * an I/O error is reported with line 0. */
int fl_crashlog_parse_file(const char *path, fl_crashlog **out, fl_crashlog_error *err);

void fl_crashlog_free(fl_crashlog *log); /* NULL is fine */

/* Find an ETC value by key (first match) or NULL.  Borrowed. */
const char *fl_crashlog_etc(const fl_crashlog *log, const char *key);

/* Parse one number as the format writes it: decimal, "-" decimal, or
 * "0x" hex.  Returns 0 on success, -1 on junk or overflow. */
int fl_parse_u64(const char *s, uint64_t *out);
int fl_parse_i64(const char *s, int64_t *out);

/* Length of the UTF-8 sequence at s (n > 0 bytes left): 1 for ASCII, 2-4,
 * or 0 when s does not start a valid one (a stray continuation byte, an
 * overlong form, a surrogate, above U+10FFFF).  The reader keeps every
 * string of a log as valid UTF-8 -- '?' for each byte that starts no valid
 * sequence -- so that what it returns can go into JSON and into a UTF-8
 * database as it is; the text a server stores is the log as received. */
size_t fl_utf8_seq(const unsigned char *s, size_t n);

#endif /* FL_CRASHLOG_H */
