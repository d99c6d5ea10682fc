/*
 * install.c - faultline_install() and the rest of the public API.
 *
 * Ordinary context: this is where everything the crash handler will need is
 * prepared (strings, spool paths, the module table, alternate stacks), so
 * that the handler itself never allocates or formats.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "fl_client.h"
#include "mojocrash.h"
#include "fl_safemem.h"

void fl_hooks_fill(const faultline_hooks *h);
void fl_catcher_entry(int sig);

static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS};
static int installed;

int fl_signals_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = fl_on_crash_signal;
    /* SA_NODEFER: a fault inside the handler re-enters it (crash_count 2)
     * instead of the kernel killing us with a half-written log.
     * SA_ONSTACK: stack overflows are reported too.  SA_RESTART: a
     * kill(1) of a signal the program ignores returns here and must not
     * break the system call it came in (EINTR). */
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER | SA_RESTART; /* sa_mask: empty (memset) */
    for (size_t i = 0; i < sizeof crash_signals / sizeof crash_signals[0]; i++) {
        int sig = crash_signals[i];
        struct sigaction old;
        if (sigaction(sig, &sa, &old) != 0)
            return -1;
        if (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN) {
            fl_g.prev[sig] = old;
            fl_g.have_prev[sig] = true;
        }
        if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN)
            fl_g.ignored |= 1u << sig; /* kill(1) of it stays ignored */
    }
    return fl_threads_init();
}

static size_t env_size(const char *name, size_t def, size_t max)
{
    const char *v = getenv(name);
    uint64_t n;
    if (!v || fl_parse_u64(v, &n) != 0)
        return def;
    return n > max ? max : (size_t)n;
}

/* faultline_install() but for errno: FL_FAIL_NONE, or the step that
 * failed with errno set to why (the values faultline.h documents). */
static int install(const char *app, const char *version, const faultline_hooks *hooks)
{
    if (installed)
        return errno = EALREADY, FL_FAIL_ALREADY;
    if (!app || !version || !*app || strlen(app) >= sizeof fl_g.app ||
        strlen(version) >= sizeof fl_g.version)
        return errno = EINVAL, FL_FAIL_ARGS;
    fl_strlcpy(fl_g.app, app, sizeof fl_g.app);
    fl_strlcpy(fl_g.version, version, sizeof fl_g.version);
    fl_hooks_fill(hooks);
    fl_g.custom_catcher = hooks && hooks->install_crash_catcher;
    fl_g.pending_logs = -1; /* counted when first asked */

    fl_sysinfo_init(&fl_g);
    fl_safemem_init();
    /* The spool is only needed by the default log hooks; a program that
     * writes its logs elsewhere may have no writable home. */
    if (fl_spool_init(&fl_g) != 0 && fl_g.hooks.start_crashlog == fl_spool_start)
        return FL_FAIL_SPOOL;
    /* No object at all from dl_iterate_phdr(): nothing to name a frame by. */
    if (fl_modules_init() != 0)
        return errno = ENOEXEC, FL_FAIL_MODULES;
    fl_catcher_prepare();
    fl_g.stack_bytes = env_size("FAULTLINE_STACK_BYTES", FL_STACK_DEFAULT, FL_STACK_MAX);
    /* A crash in a shallow main thread would copy, with its frames, the
     * strings above them: the program's arguments and its whole
     * environment (tokens, passwords).  The kernel puts its 16 random
     * bytes (AT_RANDOM) right below those strings. */
    fl_g.args_low = getauxval(AT_RANDOM);
    fl_g.trace_events =
        env_size("FAULTLINE_TRACE_EVENTS", FL_TRACE_LOG_EVENTS, FL_TRACE_LOG_EVENTS_MAX);
    /* A real-time signal reaches the other threads; SIGRTMAX-3 keeps clear
     * of the low ones applications usually take.  0 disables. */
    /* Not clamped to a signal number: one out of range is none of them
     * (faultline dump reads the variable the same way). */
    fl_g.dump_signal = (int)env_size("FAULTLINE_DUMP_SIGNAL", (size_t)(SIGRTMAX - 3), 1u << 20);
    if (fl_g.dump_signal != 0 && (fl_g.dump_signal < SIGRTMIN || fl_g.dump_signal > SIGRTMAX))
        fl_g.dump_signal = SIGRTMAX - 3;

    /* An application's hook that fails may say why in errno, or not. */
    errno = 0;
    if (!fl_g.hooks.install_crash_catcher(fl_catcher_entry)) {
        if (!errno)
            errno = ECANCELED;
        return FL_FAIL_CATCHER;
    }
    fl_cxx_install();
    /* glibc's "abort message" pointer: dynamic programs only (a static one
     * has no dlsym() view of libc). */
    fl_g.abort_msg = dlsym(RTLD_DEFAULT, "__abort_msg");
    /* `faultline dump PID`: the flight recorder of a running process, on
     * a real-time signal (SIGRTMAX-4; 0, or one that is not real-time,
     * disables).  Taken only when nothing handles it yet, so an
     * application's own handler is never replaced. */
    static const struct sigaction tsa = {.sa_sigaction = fl_trace_signal,
                                         .sa_flags = SA_SIGINFO | SA_RESTART};
    int ts = (int)env_size("FAULTLINE_TRACE_SIGNAL", (size_t)(SIGRTMAX - 4), 1u << 20);
    struct sigaction old;
    if (ts >= SIGRTMIN && ts <= SIGRTMAX && ts != fl_g.dump_signal && fl_g.spool[0] &&
        sigaction(ts, NULL, &old) == 0 && old.sa_handler == SIG_DFL)
        sigaction(ts, &tsa, NULL);
    installed = 1;
    return FL_FAIL_NONE;
}

FL_EXPORT int faultline_install(const char *app, const char *version, const faultline_hooks *hooks)
{
    /* errno is the caller's again on success: the failed calls a working
     * install makes on its way (a spool without an installation id yet)
     * must not look like a reason. */
    int e = errno;
    fl_g.failed_at = install(app, version, hooks);
    if (fl_g.failed_at != FL_FAIL_NONE)
        return 0;
    errno = e;
    return 1;
}

/* MojoCrash's get_objects hook takes a three-argument callback: remember
 * the application's hook and give it one that writes version-1 lines. */
static int (*mojo_get_objects)(MOJOCRASH_get_objects_callback);

static int mojo_objects_adapter(faultline_get_objects_callback cb)
{
    (void)cb;
    return mojo_get_objects(fl_objects_line_v1);
}

FL_EXPORT int MOJOCRASH_install(const char *appname, const char *version,
                                const MOJOCRASH_hooks *mh)
{
    faultline_hooks h;
    memset(&h, 0, sizeof h);
    if (mh) {
        h.install_crash_catcher = mh->install_crash_catcher;
        h.preflight = mh->preflight;
        h.start_crashlog = mh->start_crashlog;
        h.new_crashlog_line = mh->new_crashlog_line;
        h.get_callstack = mh->get_callstack;
        h.get_etc = mh->get_etc;
        h.end_crashlog = mh->end_crashlog;
        h.postflight = mh->postflight;
        h.die = mh->die;
        if (mh->get_objects) {
            mojo_get_objects = mh->get_objects;
            h.get_objects = mojo_objects_adapter;
        }
    }
    return faultline_install(appname, version, &h);
}

FL_EXPORT const char *faultline_spool_dir(void)
{
    return installed && fl_g.spool[0] ? fl_g.spool : NULL;
}

FL_EXPORT int faultline_pending_crashlogs(void)
{
    if (!installed)
        return -1;
    int n = __atomic_load_n(&fl_g.pending_logs, __ATOMIC_RELAXED);
    if (n < 0) {
        n = fl_g.spool[0] ? fl_spool_count_logs(fl_g.spool) : 0;
        __atomic_store_n(&fl_g.pending_logs, n, __ATOMIC_RELAXED);
    }
    return n;
}

FL_EXPORT void faultline_crash_now(int sig)
{
    if (installed)
        fl_catcher_entry(sig);
}
