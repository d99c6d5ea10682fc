/*
 * faultline.h - the Faultline crash catcher, the whole client API.
 *
 * Link libfaultline (or LD_PRELOAD libfaultline-preload.so) and call
 * faultline_install() once, early in main().  From then on a crash
 * (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS) writes a crash
 * log to the spool directory using async-signal-safe code only, and the
 * process then ends with the original signal (so core dumps still happen).
 * faultline-report uploads the logs later.
 *
 * The hooks are those of MojoCrash (see mojocrash.h for the drop-in names):
 * every member may be NULL, and so may the whole struct; NULL means the
 * default documented on each member.  Order of calls on a crash:
 *
 *   preflight -> start_crashlog -> (built-in lines) -> get_objects ->
 *   get_callstack -> get_etc -> end_crashlog -> postflight -> die
 *
 * A hook returning 0 stops the sequence: the remaining hooks are skipped
 * (end_crashlog too) and die() runs.  Hooks run inside a signal handler on a
 * possibly corrupt process: no malloc, no locks, no stdio.
 *
 * The library depends on libc only and exports nothing but the names below.
 */
#ifndef FAULTLINE_H
#define FAULTLINE_H

#ifdef __cplusplus
extern "C" {
#endif

#define FAULTLINE_VERSION_MAJOR 0
#define FAULTLINE_VERSION_MINOR 1
#define FAULTLINE_VERSION_PATCH 0
#define FAULTLINE_VERSION_STRING "0.1.0"

/* The crash-log format version this library writes (docs/crashlog-format.md). */
#define FAULTLINE_CRASHLOG_VERSION 2

/* Longest application name / version accepted by faultline_install(). */
#define FAULTLINE_MAX_APPNAME 64
#define FAULTLINE_MAX_VERSION 64

/* The catcher: call it with a signal number (or any app-defined number) to
 * run the whole crash sequence.  Given to install_crash_catcher. */
typedef void (*faultline_catcher)(int sig);

/* Callbacks handed to the get_* hooks.  Each returns non-zero on success;
 * a hook should stop and return 0 when a callback fails.  Strings are
 * borrowed for the duration of the call. */
typedef int (*faultline_get_callstack_callback)(const void *addr);
typedef int (*faultline_get_objects_callback)(const char *fname, const void *addr,
                                              unsigned long len, unsigned long slide);
typedef int (*faultline_get_etc_callback)(const char *key, const char *value);

typedef struct faultline_hooks {
    /* Install the trigger; return non-zero on success.  Called once from
     * faultline_install().  If set, Faultline installs no signal handlers of
     * its own: you must call `catcher` on a crash.  Default: handlers for the
     * crash signals, on an alternate stack in every thread. */
    int (*install_crash_catcher)(faultline_catcher catcher);

    /* First call on a crash.  crash_count is 1 on the first entry, 2 when the
     * handler itself crashed, and so on (it drops again when a run of the
     * handler returns).  Return non-zero to go on with the crash log, 0 to
     * skip to die().  Default, by crash_count: 1 -> go on; 2 -> stop (the log
     * written so far is closed with END when Faultline owns it); 3 -> call
     * die(); 4 -> end the process by the signal's default action; 5 -> _exit();
     * then 0 for ever. */
    int (*preflight)(int sig, int crash_count);

    /* Open the crash log.  Default: a new file in the spool directory under a
     * temporary name; it gets its final *.crashlog name in end_crashlog. If
     * you override one of start_crashlog / new_crashlog_line / end_crashlog,
     * override all three.  Return 0 on failure. */
    int (*start_crashlog)(const char *appname);

    /* One line of the log, NUL-terminated UTF-8 without the newline.
     * Default: append it (and '\n') to the file opened by start_crashlog. */
    int (*new_crashlog_line)(const char *str);

    /* Report the crashing thread's frames, innermost first, through the
     * callback.  Default: Faultline's own CFI unwinder (works for
     * -fomit-frame-pointer code and through libc's abort path). */
    int (*get_callstack)(faultline_get_callstack_callback callback);

    /* Report the loaded objects (name, start address, size, load bias).
     * Default: every object the dynamic linker has loaded, vdso and later
     * dlopen()s included, each followed by its build id and path. */
    int (*get_objects)(faultline_get_objects_callback callback);

    /* Report application key/value pairs.  Default: nothing. */
    int (*get_etc)(faultline_get_etc_callback callback);

    /* Finish the log.  Default: write it out, fsync when FAULTLINE_FSYNC=1,
     * and rename it to its final name.  Only called when every step before
     * it succeeded. */
    int (*end_crashlog)(void);

    /* After a successful end_crashlog.  Default: start the reporter when
     * FAULTLINE_REPORTER is set.  The return value is ignored. */
    int (*postflight)(void);

    /* Last call.  If it returns, the crash handler returns.  Default: run the
     * signal handler that was installed before Faultline (if any), then
     * restore the default action and re-raise the signal, so the process ends
     * with the original signal; a PID 1 that survives that is _exit()ed. */
    void (*die)(void);
} faultline_hooks;

/*
 * Install the crash catcher.  Call once, from ordinary (not signal) context,
 * preferably early in main(); later calls fail.
 *
 * app, version: copied; at most FAULTLINE_MAX_APPNAME / _VERSION - 1 bytes.
 * hooks: copied; may be NULL.
 * Returns non-zero on success, with errno as it was before the call; 0 on
 * failure, with errno saying why:
 *   EINVAL     app NULL or empty, version NULL, or either too long;
 *   EALREADY   a faultline_install() succeeded before;
 *   ENOENT     none of FAULTLINE_SPOOL, XDG_STATE_HOME and HOME is set;
 *   ENAMETOOLONG  the spool's path is too long (over 960 bytes, made
 *              absolute);
 *   EACCES, ENOENT, ENOTDIR, EROFS, ...  from mkdir() or realpath(): the
 *              spool directory cannot be made or found; EACCES or EROFS
 *              also when it is there but this process (its effective ids)
 *              may not create a file in it: every crash would be lost;
 *   ENOEXEC    the dynamic linker reported no loaded object;
 *   ECANCELED  install_crash_catcher returned 0 and left errno 0; any other
 *              errno it left, or that of a failed sigaction() or thread key
 *              of the default one, is passed on.
 * The spool errors are not failures when start_crashlog is your own.  Not
 * thread-safe against a concurrent faultline_install().
 *
 * Environment read here: FAULTLINE_SPOOL (spool directory; default
 * $XDG_STATE_HOME/faultline, else ~/.local/state/faultline),
 * FAULTLINE_REPORTER (the path of a program started after a crash with
 * the spool directory as argument; no PATH search), FAULTLINE_FSYNC=1
 * (fsync each log), FAULTLINE_SPOOL_MAX (finished logs the spool keeps:
 * after a crash the oldest beyond it are deleted; default 100, 0 no bound),
 * FAULTLINE_STACK_BYTES (raw stack kept, default 32768, max 262144),
 * FAULTLINE_TRACE_EVENTS (newest trace events written into a crash log,
 * default 500, max 2000, 0 for none: each costs ~0.4 us in the handler),
 * FAULTLINE_DUMP_SIGNAL (the real-time signal Faultline takes to reach the
 * other threads on a crash and to give threads that already exist an
 * alternate signal stack; default SIGRTMAX-3, 0 turns both off),
 * FAULTLINE_TRACE_SIGNAL (the real-time signal on which the process
 * writes its flight recorder into the spool when `faultline dump PID`
 * asks; default SIGRTMAX-4, taken only when nothing handles it yet; 0
 * or a signal that is not real-time: none).  The numeric variables take
 * numbers (a signal by its number: 60, not SIGRTMAX-4); anything else is
 * the default.
 *
 * Threads created after install get an alternate signal stack because the
 * library wraps pthread_create(); the wrapper only forwards until install.
 */
int faultline_install(const char *app, const char *version, const faultline_hooks *hooks);

/* The spool directory in use (borrowed; valid for the life of the process),
 * or NULL before a successful faultline_install(). */
const char *faultline_spool_dir(void);

/* Number of finished crash logs waiting in the spool (crashes of earlier
 * runs not yet reported), or -1 before install.  Counted at the first call
 * (reading the spool directory, which install does not do) and the same
 * number after that.  An application can offer to run the reporter when
 * > 0. */
int faultline_pending_crashlogs(void);

/* Run the crash sequence now, as if `sig` had been raised, from ordinary
 * context: for an application's own fatal-error path.  Does not return when
 * die() ends the process.  sig may be any number the application chooses:
 * the log says it in CRASH_SIGNAL (CRASH_SIGNAL_NAME only for the crash
 * signals above), and the default die() ends the process by it when it
 * is a signal whose default action ends a process, else (0, a number that
 * is no signal, one that would stop the process or be ignored: SIGSTOP,
 * SIGTSTP, SIGTTIN, SIGTTOU, SIGCHLD, SIGCONT, SIGURG, SIGWINCH, and the
 * C library's 32 and 33) with exit status 128 + (sig & 127). */
void faultline_crash_now(int sig);

/* A first look at each fault signal, before Faultline's: for a program
 * that expects some faults and recovers from them itself -- a probe of
 * memory it may not read, a guard page it grows, a JIT's traps.  handler
 * runs on the faulting thread inside the signal handler (async-signal-safe
 * calls only) with an SA_SIGINFO handler's arguments (info is a
 * siginfo_t *, ucontext a ucontext_t *: void here, so that this header
 * needs no feature macros).  Return non-zero
 * when the fault is yours: Faultline then does nothing and returns from
 * the signal (the faulting instruction runs again: fix its cause first),
 * or leave with siglongjmp(), which is safe here.  Return 0 for a crash,
 * which Faultline then logs.  NULL removes it; may be called before or
 * after faultline_install(), from any thread.  Not called for a fault
 * inside Faultline's own crash handling or inside the handler itself
 * (that crash is logged with HANDLER_FAULT), nor by faultline_crash_now()
 * or an install_crash_catcher hook's catcher (which take no signal). */
typedef int (*faultline_first_chance_fn)(int sig, void *info, void *ucontext);
void faultline_set_first_chance(faultline_first_chance_fn handler);

/* ---- The flight recorder --------------------------------------------
 *
 * FAULTLINE_TRACE(fmt, ...) records a trace event in the process's trace
 * heap, a fixed ring of memory that keeps the newest events and drops the
 * oldest.  Recording formats nothing: it stores a pointer to the call
 * site (format string, file, line and the arguments' types, known at
 * compile time), the time, the thread id and the arguments' values; a
 * string argument (char *) is copied, up to FAULTLINE_TRACE_MAX_STR bytes,
 * as it may be gone by then -- unless it is hard-coded (after
 * faultline_install(): in read-only memory of the object that holds the
 * call site), which is kept by its address.  The text is made only when
 * the heap is dumped:
 * into the crash log on a crash (the newest events, as TRACE lines), by
 * faultline_trace_dump_text(), or by `faultline decode` from the trace-ID
 * dump of faultline_trace_dump().  fmt must be a string literal with printf's
 * conversions (d i u o x X c s p f F e E g G a A %, with flags, width,
 * precision and length modifiers; %n writes nothing), and at most
 * FAULTLINE_TRACE_MAX_ARGS arguments.  Thread-safe and lock-free; it may
 * be used before faultline_install() and from signal handlers.
 *
 * Built with -DFAULTLINE_TRACE_APART, the formats and file names stay
 * out of the program's memory, in the section .debug_faultline_trace that
 * strip moves into the debug file; crash logs then carry such events as
 * TRACE_ID lines, formatted by the server and `faultline decode` from the
 * debug file (docs/client.md, "Formats kept apart").
 *
 * Breadcrumbs (faultline_breadcrumb) are kept in a ring of their own, so
 * a flood of trace events does not push them out; state
 * (faultline_set_state) is a small table of the latest value per key.
 * Both go into the crash log.  docs/client.md has the details and costs.
 */
#define FAULTLINE_TRACE_MAX_ARGS 8
#define FAULTLINE_TRACE_MAX_STR 256 /* bytes kept of a copied string */
#define FAULTLINE_STATE_MAX 32      /* keys faultline_set_state() keeps */

/* One per FAULTLINE_TRACE call site, made by the macro.  types: one code
 * per argument (i u l m q Q d D s p: int, unsigned, long, unsigned long,
 * long long, unsigned long long, double, long double, string, pointer),
 * NUL-terminated. */
struct faultline_trace_site {
    const char *fmt;
    const char *file;
    unsigned line;
    unsigned nargs;
    char types[FAULTLINE_TRACE_MAX_ARGS + 1];
};
/* Called by FAULTLINE_TRACE with the format again as the first variable
 * argument (so that a call without arguments needs no special case). */
void faultline__trace(const struct faultline_trace_site *site, ...);

/* Add a breadcrumb: a category (one word, e.g. "ui", "net"; blanks become
 * '_') and a message, both copied (category up to 32 bytes, message up to
 * FAULTLINE_TRACE_MAX_STR).  NULL is taken as "". */
void faultline_breadcrumb(const char *category, const char *message);

/* Set (value != NULL) or remove (value == NULL) an application state
 * value, written into the crash log as STATE_KEY / STATE_VALUE.  Keys up to
 * 63 bytes, values up to 255 (longer ones are cut).  Thread-safe, and safe
 * in a signal handler.  Returns non-zero on success, 0 when key is NULL or
 * empty, when the table already holds FAULTLINE_STATE_MAX other keys, or
 * when a signal handler calls it while the code it interrupted was inside
 * faultline_set_state (after a few milliseconds of trying). */
int faultline_set_state(const char *key, const char *value);

/* Write the flight recorder to fd as a trace-ID dump: no format string
 * is read or formatted; each event is its call site's module (by build id)
 * and address there, and its argument values.  `faultline decode DUMP`
 * turns it into text with the program's files (stripped ones do), on any
 * machine.  The modules are those faultline_install() found (and the
 * objects loaded since): before it, events name no module and cannot be
 * decoded.  Async-signal-safe (a handler for, say, SIGUSR1 can dump a hung
 * process).  Its buffers are on the caller's stack, so that threads may
 * dump at once: it needs about 24 KiB of it -- more than a thread made
 * with PTHREAD_STACK_MIN (16 KiB) or a small alternate signal stack has,
 * where it overflows.  `faultline dump PID` (the trace signal: static
 * buffers, ~7 KB of stack) is the way for such threads.  Returns the number of
 * lines written, or -1 when a write failed.  docs/client.md describes the
 * format. */
int faultline_trace_dump(int fd);

/* The same, as text: STATE_KEY/STATE_VALUE pairs, then "BREADCRUMB time_ms
 * category message", then "TRACE time_ns tid text", oldest first -- the
 * lines a crash log gets, and what `faultline decode` makes of the
 * trace-ID dump.  An event whose format was kept apart
 * (FAULTLINE_TRACE_APART) is a TRACE_ID line with its TRACE_BYTES, as in
 * a crash log.  Async-signal-safe, with the same need of the caller's
 * stack (about 24 KiB); returns the lines written, or -1. */
int faultline_trace_dump_text(int fd);

/* ---- calling context ----
 *
 * Code compiled with -finstrument-functions calls the hooks
 * __cyg_profile_func_enter/_exit, which this library provides: each thread
 * then keeps a 64-bit compressed calling context, updated on every entry
 * to and exit from an instrumented function.  faultline_context() returns
 * the calling thread's value (0: no instrumented function is active).
 * `faultline decode --context VALUE --obj FILE...` turns a value back into
 * the stacks of instrumented functions that give it, from the program's
 * files alone.  The same build gives the same value for the same stack in
 * every run and on every machine, so a log line can carry its calling
 * context in 8 bytes.  The crash log records the value of every thread
 * (CRASH_CONTEXT, THREAD_CONTEXT).  Async-signal-safe; costs nothing
 * unless code is instrumented.  docs/client.md has the details. */
#ifdef __GNUC__ /* long long, in C89 and C++98 too */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wlong-long"
#endif
unsigned long long faultline_context(void);
#ifdef __GNUC__
#pragma GCC diagnostic pop
#endif

/* The macro needs C99 variadic macros and _Generic (C11, or GCC and clang
 * in C99 mode), or C++11. */
#if (defined(__cplusplus) && __cplusplus >= 201103L) ||                                         \
    (!defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 199901L)
/* The argument type codes, picked at compile time. */
#ifndef __cplusplus
#define FAULTLINE__T(x)                                                                            \
    _Generic((x), _Bool: 'i', char: 'i', signed char: 'i', short: 'i', int: 'i',                \
             unsigned char: 'i', unsigned short: 'i', unsigned: 'u', long: 'l',                 \
             unsigned long: 'm', long long: 'q', unsigned long long: 'Q', float: 'd',           \
             double: 'd', long double: 'D', char *: 's', const char *: 's', default: 'p')
#else
} /* extern "C": the overloads below are C++ */
template <char C> struct faultline__tag {
    static const char value = C;
};
faultline__tag<'i'> faultline__code(bool);
faultline__tag<'i'> faultline__code(char);
faultline__tag<'i'> faultline__code(signed char);
faultline__tag<'i'> faultline__code(unsigned char);
faultline__tag<'i'> faultline__code(short);
faultline__tag<'i'> faultline__code(unsigned short);
faultline__tag<'i'> faultline__code(int);
faultline__tag<'u'> faultline__code(unsigned);
faultline__tag<'l'> faultline__code(long);
faultline__tag<'m'> faultline__code(unsigned long);
faultline__tag<'q'> faultline__code(long long);
faultline__tag<'Q'> faultline__code(unsigned long long);
faultline__tag<'d'> faultline__code(float);
faultline__tag<'d'> faultline__code(double);
faultline__tag<'D'> faultline__code(long double);
faultline__tag<'s'> faultline__code(const char *);
faultline__tag<'p'> faultline__code(decltype(nullptr));
template <class T> faultline__tag<'p'> faultline__code(const volatile T *);
#define FAULTLINE__T(x) decltype(faultline__code(x))::value
extern "C" {
#endif

/* Lets the compiler check the format against the arguments (-Wformat). */
static __inline__ __attribute__((format(printf, 1, 2))) void faultline__check(const char *f, ...)
{
    (void)f;
}

#define FAULTLINE__N(...) FAULTLINE__N_(__VA_ARGS__, 8, 7, 6, 5, 4, 3, 2, 1, 0, _)
#define FAULTLINE__N_(f, a1, a2, a3, a4, a5, a6, a7, a8, n, ...) n
#define FAULTLINE__CAT(a, b) FAULTLINE__CAT_(a, b)
#define FAULTLINE__CAT_(a, b) a##b
#define FAULTLINE__TY0(...) 0
#define FAULTLINE__TY1(a, ...) FAULTLINE__T(a)
#define FAULTLINE__TY2(a, ...) FAULTLINE__T(a), FAULTLINE__TY1(__VA_ARGS__)
#define FAULTLINE__TY3(a, ...) FAULTLINE__T(a), FAULTLINE__TY2(__VA_ARGS__)
#define FAULTLINE__TY4(a, ...) FAULTLINE__T(a), FAULTLINE__TY3(__VA_ARGS__)
#define FAULTLINE__TY5(a, ...) FAULTLINE__T(a), FAULTLINE__TY4(__VA_ARGS__)
#define FAULTLINE__TY6(a, ...) FAULTLINE__T(a), FAULTLINE__TY5(__VA_ARGS__)
#define FAULTLINE__TY7(a, ...) FAULTLINE__T(a), FAULTLINE__TY6(__VA_ARGS__)
#define FAULTLINE__TY8(a, ...) FAULTLINE__T(a), FAULTLINE__TY7(__VA_ARGS__)
#define FAULTLINE__FMT(f, ...) f
#define FAULTLINE__REST(f, ...) __VA_ARGS__
#define FAULTLINE__APPLY(m, args) m args

#ifndef FAULTLINE_TRACE_APART
#define FAULTLINE_TRACE(...)                                                                       \
    do {                                                                                           \
        static const struct faultline_trace_site faultline__site = {                               \
                "" FAULTLINE__FMT(__VA_ARGS__, _),                                                 \
                __FILE__,                                                                          \
                __LINE__,                                                                          \
                FAULTLINE__N(__VA_ARGS__),                                                         \
                {FAULTLINE__APPLY(FAULTLINE__CAT(FAULTLINE__TY, FAULTLINE__N(__VA_ARGS__)),        \
                                  (FAULTLINE__REST(__VA_ARGS__, _)))}};                            \
        if (0)                                                                                     \
            faultline__check(__VA_ARGS__);                                                         \
        faultline__trace(&faultline__site, __VA_ARGS__);                                           \
    } while (0)
#else
/* Built with -DFAULTLINE_TRACE_APART: the format and the file name stay
 * out of the program's memory.  The site keeps NULL for both; an entry of
 * the non-allocated section .debug_faultline_trace -- the site's address,
 * the format, the file, NUL-terminated -- holds them, and strip or
 * objcopy --only-keep-debug moves it into the debug file with the DWARF.
 * The crash log then carries such events as TRACE_ID lines, which the
 * server and `faultline decode` format from that debug file.  The two
 * asm statements stay together and in order (volatile, nothing between
 * them): the first needs an operand for the site's address (which LTO
 * may rename), the second must have none, since a format's '%' would
 * read as one.  clang's integrated assembler takes one string literal
 * only: a format made of several ("x=%" PRIu64) needs gcc, or clang's
 * -fno-integrated-as. */
#if defined(__aarch64__) /* a symbol's address as an operand: "S" there, "i" on x86-64 */
#define FAULTLINE__ADDR "S"
#else
#define FAULTLINE__ADDR "i"
#endif
#define FAULTLINE__STR(x) FAULTLINE__STR_(x)
#define FAULTLINE__STR_(x) #x
#define FAULTLINE__NOFMT0(f) (const char *)0
#define FAULTLINE__NOFMT1(f, ...) (const char *)0, __VA_ARGS__
#define FAULTLINE__NOFMT2 FAULTLINE__NOFMT1
#define FAULTLINE__NOFMT3 FAULTLINE__NOFMT1
#define FAULTLINE__NOFMT4 FAULTLINE__NOFMT1
#define FAULTLINE__NOFMT5 FAULTLINE__NOFMT1
#define FAULTLINE__NOFMT6 FAULTLINE__NOFMT1
#define FAULTLINE__NOFMT7 FAULTLINE__NOFMT1
#define FAULTLINE__NOFMT8 FAULTLINE__NOFMT1
#define FAULTLINE_TRACE(...)                                                                       \
    do {                                                                                           \
        static const struct faultline_trace_site faultline__site = {                               \
                0,                                                                                 \
                0,                                                                                 \
                __LINE__,                                                                          \
                FAULTLINE__N(__VA_ARGS__),                                                         \
                {FAULTLINE__APPLY(FAULTLINE__CAT(FAULTLINE__TY, FAULTLINE__N(__VA_ARGS__)),        \
                                  (FAULTLINE__REST(__VA_ARGS__, _)))}};                            \
        __asm__ __volatile__(".pushsection .debug_faultline_trace,\"\",%%progbits\n\t"             \
                             ".8byte %c0\n\t.popsection" ::FAULTLINE__ADDR(&faultline__site));     \
        __asm__ __volatile__(".pushsection .debug_faultline_trace,\"\",%progbits\n\t.asciz "       \
                             FAULTLINE__STR(FAULTLINE__FMT(__VA_ARGS__, _)) "\n\t.asciz "          \
                             FAULTLINE__STR(__FILE__) "\n\t.popsection");                           \
        if (0)                                                                                     \
            faultline__check(__VA_ARGS__);                                                         \
        faultline__trace(&faultline__site,                                                         \
                         FAULTLINE__APPLY(FAULTLINE__CAT(FAULTLINE__NOFMT, FAULTLINE__N(__VA_ARGS__)), \
                                          (__VA_ARGS__)));                                         \
    } while (0)
#endif
#endif /* C99 / C++11 */

#ifdef __cplusplus
}
#endif
#endif /* FAULTLINE_H */
