/*
 * catcher.c - the crash sequence.
 *
 * SIGNAL-SAFE ZONE.  Everything here runs inside a signal handler of a
 * process in an unknown state: no heap, no locks, no stdio, no libc
 * formatting, no dl_iterate_phdr, no backtrace(); only async-signal-safe
 * system calls and the fl_line writer.  All inputs were prepared by
 * faultline_install() (install.c) in fl_g and fl_mods.
 *
 * How this works.  The signal handler claims the crash for its thread with
 * one compare-and-swap on fl_crash_owner; a second thread that faults meanwhile
 * parks until the owner has ended the process (or gives up after a bounded
 * wait and ends it itself), so concurrent crashes give exactly one log.  The
 * handler is installed with SA_NODEFER: a fault inside the handler or a hook
 * re-enters it on the same thread with crash_count 2, where the default
 * preflight closes the log written so far with HANDLER_FAULT and END, and
 * die() ends the process with the original signal.  Then the MojoCrash hook
 * sequence runs: preflight, start_crashlog, built-in lines, get_objects,
 * get_callstack, (registers, raw stack, other threads, the flight
 * recorder: state, breadcrumbs, trace events), get_etc, END,
 * end_crashlog, postflight, die.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/kcmp.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "fl_client.h"
#include "fl_safemem.h"

#if defined(__SANITIZE_ADDRESS__)
#define FL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FL_ASAN 1
#endif
#endif
#ifndef FL_ASAN
#define FL_ASAN 0
#endif
#if FL_ASAN
#include <sanitizer/asan_interface.h>
#endif

fl_state fl_g;
fl_crash fl_cur;

static volatile int crash_count;
volatile pid_t fl_crash_owner; /* the thread writing a crash log, or 0 */
static int first_sig;
static bool from_signal;      /* entered through our signal handler */
static void *cur_ucontext;    /* for chaining to a previous SA_SIGINFO handler */
static bool etc_half;         /* an ETC_KEY was written without its ETC_VALUE */
static bool log_started;
static int fc_fault;   /* a fault inside the first-chance handler: HANDLER_FAULT */
static bool refault;   /* die() returns for the fault to come back */
static bool xfsz_held; /* SIGXFSZ ignored while we write; xfsz_was is the program's */
static struct sigaction xfsz_was;

static fl_unwind_module umods[FL_MAX_MODULES];
static size_t n_umods;
static uint64_t frames[FL_MAX_FRAMES];
static fl_line line;          /* the one line being composed (static: small stack) */
static fl_line cbline;        /* lines composed by the callbacks */
static uint8_t stack_page[4096]; /* raw stack, one page at a time */
static uint64_t tframes[FL_THREAD_FRAMES];

int fl_write_line(const char *s)
{
    return fl_g.hooks.new_crashlog_line(s);
}

static int emit(fl_line *l)
{
    return fl_write_line(fl_line_cstr(l));
}

static int kv_str(const char *key, const char *v)
{
    if (!v || !*v)
        return 1;
    fl_line_start(&line, key);
    fl_line_str(&line, v);
    return emit(&line);
}

static int kv_u64(const char *key, uint64_t v)
{
    fl_line_start(&line, key);
    fl_line_u64(&line, v);
    return emit(&line);
}

static int kv_i64(const char *key, int64_t v)
{
    fl_line_start(&line, key);
    fl_line_i64(&line, v);
    return emit(&line);
}

static int kv_hex(const char *key, uint64_t v)
{
    fl_line_start(&line, key);
    fl_line_hex(&line, v);
    return emit(&line);
}

/* ---- callbacks handed to the get_* hooks ---- */

static int callstack_cb(const void *addr)
{
    fl_line_start(&cbline, "CALLSTACK");
    fl_line_u64(&cbline, (uint64_t)(uintptr_t)addr);
    return emit(&cbline);
}

/* "OBJECT name/base/size[/bias]".  Version 1 wants a file name here; the
 * full path follows in OBJECT_PATH from the default hook.  The 4th field is
 * the load bias, as MojoCrash's own code writes it. */
static int object_line(const char *fname, const void *addr, unsigned long len, bool has_slide,
                       unsigned long slide)
{
    const char *base = fname ? fname : "";
    for (const char *p = base; *p; p++)
        if (*p == '/' && p[1])
            base = p + 1;
    fl_line_start(&cbline, "OBJECT");
    fl_line_str(&cbline, *base ? base : "?");
    fl_line_char(&cbline, '/');
    fl_line_u64(&cbline, (uint64_t)(uintptr_t)addr);
    fl_line_char(&cbline, '/');
    fl_line_u64(&cbline, len);
    if (has_slide) {
        fl_line_char(&cbline, '/');
        fl_line_u64(&cbline, slide);
    }
    return emit(&cbline);
}

static int objects_cb(const char *fname, const void *addr, unsigned long len,
                      unsigned long slide)
{
    return object_line(fname, addr, len, true, slide);
}

/* The callback MOJOCRASH_install() hands to a MojoCrash get_objects hook. */
int fl_objects_line_v1(const char *fname, const void *addr, unsigned long len)
{
    return object_line(fname, addr, len, false, 0);
}

static int etc_cb(const char *key, const char *value)
{
    fl_line_start(&cbline, "ETC_KEY");
    fl_line_str(&cbline, key ? key : "");
    if (!emit(&cbline))
        return 0;
    etc_half = true;
    fl_line_start(&cbline, "ETC_VALUE");
    fl_line_str(&cbline, value ? value : "");
    if (!emit(&cbline))
        return 0;
    etc_half = false;
    return 1;
}

/* ---- default hooks ---- */

static int def_install(faultline_catcher c)
{
    (void)c;
    return fl_signals_install() == 0;
}

static int def_preflight(int sig, int count)
{
    (void)sig;
    switch (count) {
    case 1:
        return 1;
    case 2:
        return 0;
    case 3:
        fl_g.hooks.die();
        return 0;
    case 4: {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = SIG_DFL;
        sigaction(first_sig, &sa, NULL);
        syscall(SYS_tgkill, fl_cur.pid, fl_gettid(), first_sig);
        return 0;
    }
    case 5:
        _exit(128 + (first_sig & 127));
    default:
        return 0;
    }
}

static int def_callstack(faultline_get_callstack_callback cb)
{
    size_t n;
    if (fl_cur.have_regs) {
        n = fl_unwind(&fl_cur.regs, umods, n_umods, frames, FL_MAX_FRAMES);
    } else {
        /* No signal context (faultline_crash_now or a custom catcher): walk
         * from here; the sequence's own frames come first and the server
         * skips them as crash-handler noise. */
        fl_regs here;
        fl_regs_from_current(&here);
        n = fl_unwind(&here, umods, n_umods, frames, FL_MAX_FRAMES);
    }
    for (size_t i = 0; i < n; i++)
        if (!cb((const void *)(uintptr_t)frames[i]))
            return 0;
    return 1;
}

static int def_objects(faultline_get_objects_callback cb)
{
    for (size_t i = 0; i < fl_mods.count; i++) {
        const fl_module *m = &fl_mods.mods[i];
        const char *path = fl_mods.pool + m->path_off;
        if (!cb(path, (const void *)(uintptr_t)m->start, (unsigned long)(m->end - m->start),
                (unsigned long)m->bias))
            return 0;
        if (m->build_id_len) {
            fl_line_start(&line, "OBJECT_BUILD_ID");
            fl_line_hexbytes(&line, m->build_id, m->build_id_len);
            if (!emit(&line))
                return 0;
        }
        if (*path && !kv_str("OBJECT_PATH", path))
            return 0;
        if (m->path_cut && !kv_u64("OBJECT_PATH_CUT", m->path_cut))
            return 0;
    }
    return !fl_mods.omitted || kv_u64("OBJECTS_OMITTED", fl_mods.omitted);
}

static int def_etc(faultline_get_etc_callback cb)
{
    (void)cb;
    return 1;
}

static int def_postflight(void)
{
    fl_spool_run_reporter();
    return 1;
}

/* Two copies of libfaultline in one process (a program linked with
 * libfaultline.a, run under the preload library): the later one to
 * install chains to the earlier one as to an application's handler.  The
 * copy that wrote the log marks the siginfo it hands on, in bytes past
 * every field a signal fills (the kernel and sigqueue() zero them), so
 * that the other writes no second log and only hands the signal on to the
 * handler before it. */
#define HANDED_ON 0x6e696c746c756166ull /* "faultlin" */
static bool handed_on(const siginfo_t *si)
{
    uint64_t v;
    memcpy(&v, (const char *)si + sizeof *si - sizeof v, sizeof v);
    return v == HANDED_ON;
}

/* The handler installed before ours for sig, if any, called: whether
 * there was one. */
static bool call_prev(int sig, siginfo_t *si, void *uc)
{
    if (sig <= 0 || sig >= 65 || !fl_g.have_prev[sig])
        return false;
    struct sigaction *p = &fl_g.prev[sig];
    if (p->sa_flags & SA_SIGINFO) {
        if (p->sa_sigaction)
            p->sa_sigaction(sig, si, uc);
    } else if (p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN) {
        p->sa_handler(sig);
    }
    return true;
}

void fl_die_default(void)
{
    int sig = first_sig;

    /* The application's own handler, installed before us, still runs. */
    bool chained = false;
    if (from_signal) {
        static const uint64_t mark = HANDED_ON;
        memcpy((char *)&fl_cur.si + sizeof fl_cur.si - sizeof mark, &mark, sizeof mark);
        chained = call_prev(sig, &fl_cur.si, cur_ucontext);
    }

    /* A number whose default action does not end the process (none,
     * ignore, stop, or glibc's internal 32 and 33), which only
     * faultline_crash_now() can bring: the status its contract names,
     * since a signal would leave the process stopped or running. */
    static const uint64_t keeps = 1ull << (SIGCHLD - 1) | 1ull << (SIGCONT - 1) |
                                  1ull << (SIGSTOP - 1) | 1ull << (SIGTSTP - 1) |
                                  1ull << (SIGTTIN - 1) | 1ull << (SIGTTOU - 1) |
                                  1ull << (SIGURG - 1) | 1ull << (SIGWINCH - 1) | 3ull << 31;
    if (sig <= 0 || sig > 64 || (keeps >> (sig - 1) & 1))
        _exit(128 + (sig & 127));

    /* End with the original signal so that the exit status and core dumps
     * are what they would have been without us. */
    struct sigaction sa, was;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigaction(sig, &sa, &was);
    /* Its bit in the kernel's mask word (a number that is no signal left
     * above). */
    uint64_t bit = 1ull << (sig - 1);
    fl_set_sigmask(SIG_UNBLOCK, (const sigset_t *)&bit, NULL);
#if FL_ASAN
    /* A vfork() child's handler ran on its parent's alternate stack, and
     * ASan's record of that stack's frames is the parent's memory too:
     * left poisoned by frames that never return, it would make the
     * parent's own crash look like a stack-use-after-scope. */
    stack_t ss;
    if (fl_cur.pid != fl_g.pid && sigaltstack(NULL, &ss) == 0 && !(ss.ss_flags & SS_DISABLE))
        __asan_unpoison_memory_region(ss.ss_sp, ss.ss_size);
#endif
    /* A fault the CPU raised comes back by itself when the handler
     * returns, and the kernel then ends the process with the fault's own
     * siginfo at the faulting instruction: a core dump shows the crash,
     * not a re-raise from in here (systemd-coredump, abrt and gdb would
     * otherwise see tgkill and SI_TKILL on top of every crash).  Only when
     * nothing can stand between the return and the fault: we were entered
     * by the kernel (our handler was the one installed, no application
     * handler chaining to us), the first fault of this crash (not one in
     * our own handling), no handler of the application's ran (one may
     * have fixed the fault), and a code that is raised again -- not
     * SI_KERNEL (also a signal frame the kernel could not build) or a
     * fault reported after the fact (BUS_MCEERR_AO, 5; SEGV_MTEAERR, 8).
     * The other threads stay parked until the process ends. */
    if (from_signal && fl_cur.have_siginfo && cur_ucontext && !chained && crash_count == 1 &&
        was.sa_sigaction == fl_on_crash_signal && fl_cur.si.si_code > 0 &&
        fl_cur.si.si_code != SI_KERNEL &&
        (sig == SIGILL || sig == SIGFPE || (sig == SIGSEGV && fl_cur.si.si_code != 8) ||
         (sig == SIGBUS && fl_cur.si.si_code != 5))) {
        /* A backstop: should the fault not come back -- its page mapped
         * again by a thread that could not be stopped, or a signal the
         * program sent itself with a fault's code -- a timer of this
         * thread's still ends the process with the signal 50 ms later.
         * Without one (timers refused), the signal is raised as below. */
        struct sigevent ev;
        memset(&ev, 0, sizeof ev);
        ev.sigev_notify = SIGEV_THREAD_ID;
        ev.sigev_signo = sig;
        ev._sigev_un._tid = fl_gettid();
        int timer;
        static const struct itimerspec soon = {{0, 0}, {0, 50000000}};
        if (syscall(SYS_timer_create, CLOCK_MONOTONIC, &ev, &timer) == 0 &&
            syscall(SYS_timer_settime, timer, 0, &soon, NULL) == 0) {
            /* Nothing else first: the program's signals held during the
             * log stay held through the return, until the fault (or the
             * timer) ends us. */
            uint64_t only = ~(1ull << (sig - 1));
            memcpy(&((ucontext_t *)cur_ucontext)->uc_sigmask, &only, sizeof only);
            refault = true;
            return;
        }
    }
    syscall(SYS_tgkill, fl_cur.pid, fl_gettid(), sig);

    /* Still here: PID 1 of a namespace ignores default-action signals sent
     * from inside.  A fault the CPU raised comes back when we return and the
     * kernel forces it; anything else must not hang, so exit. */
    if (from_signal && fl_cur.have_siginfo && fl_cur.si.si_code > 0 &&
        (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE))
        return;
    _exit(128 + (sig & 127));
}

static void def_die(void)
{
    fl_die_default();
}

void fl_hooks_fill(const faultline_hooks *h)
{
    faultline_hooks d = {
        def_install,  def_preflight, fl_spool_start, fl_spool_line, def_callstack,
        def_objects,  def_etc,       fl_spool_end,   def_postflight, def_die,
    };
    faultline_hooks *g = &fl_g.hooks, none = {0};
    /* One path for no hooks and some: the compiler would copy the
     * defaults' stores for each (~120 bytes of the text budget). */
    if (!h)
        h = &none;
#define HOOK(x) g->x = h->x ? h->x : d.x
    HOOK(install_crash_catcher);
    HOOK(preflight);
    HOOK(start_crashlog);
    HOOK(new_crashlog_line);
    HOOK(get_callstack);
    HOOK(get_objects);
    HOOK(get_etc);
    HOOK(end_crashlog);
    HOOK(postflight);
    HOOK(die);
#undef HOOK
}

/* ---- built-in lines ---- */

/* The log's first lines, each ended by its NUL, the empty last one by the
 * literal's own: one string, where a table of pointers would cost a
 * relocation each in the library's text budget. */
static const char intro[] =
    "# This is a log of a program crash, written by Faultline. It is meant\0"
    "#  to help the developers of the crashing program find the problem.\0"
    "#  Faultline did not cause the crash; it only reports it. Please\0"
    "#  contact the vendor of the program, not the Faultline developers.\0";

/* Names in place, not pointers: no relocations (as above). */
static const char regnames[][4] = {
#if defined(__x86_64__)
    "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8",
    "r9",  "r10", "r11", "r12", "r13", "r14", "r15", "rip",
#elif defined(__aarch64__)
    "x0",  "x1",  "x2",  "x3",  "x4",  "x5",  "x6",  "x7",  "x8",  "x9",  "x10",
    "x11", "x12", "x13", "x14", "x15", "x16", "x17", "x18", "x19", "x20", "x21",
    "x22", "x23", "x24", "x25", "x26", "x27", "x28", "x29", "x30", "sp",  "pc",
#else
    "pc",
    "sp",
    "fp",
#endif
};

/* The message glibc gives an abort: assert()'s, malloc's checks', the
 * fortify and stack-protector failures' ("free(): double free detected in
 * tcache 2").  They write it to stderr, which nobody may read, and keep it
 * in __abort_msg -- a struct abort_msg_s { unsigned size; char msg[]; }
 * in pages mapped for it -- just before they abort.  Read with fresh
 * checks: those pages are new since install. */
static int abort_message(void)
{
    uint64_t p = 0;
    uint32_t size = 0;
    char buf[1024];
    if (!fl_g.abort_msg || fl_safe_read_fresh(&p, (uintptr_t)fl_g.abort_msg, sizeof p) || !p ||
        fl_safe_read_fresh(&size, p, sizeof size) || size <= sizeof size)
        return 1;
    size_t n = size - sizeof size < sizeof buf ? size - sizeof size : sizeof buf;
    if (fl_safe_read_fresh(buf, p + sizeof size, n))
        return 1;
    n = fl_strnlen(buf, n);
    while (n && buf[n - 1] == '\n')
        n--;
    if (!n)
        return 1;
    fl_line_start(&line, "ABORT_MESSAGE");
    fl_line_strn(&line, buf, n);
    return emit(&line);
}

static int basics(int sig)
{
    for (const char *l = intro; l < intro + sizeof intro; l += fl_strlen(l) + 1)
        if (!fl_write_line(l))
            return 0;
    if (!kv_str("FAULTLINE", FAULTLINE_VERSION_STRING) ||
        !kv_u64("CRASHLOG_VERSION", FAULTLINE_CRASHLOG_VERSION) ||
        !kv_str("APPLICATION_NAME", fl_g.app) || !kv_str("APPLICATION_VERSION", fl_g.version) ||
        !kv_str("PLATFORM_NAME", "linux") ||
        !kv_str("CPUARCH_NAME", strcmp(fl_g.machine, "x86_64") ? fl_g.machine : "x86-64") ||
        !kv_str("PLATFORM_VERSION", fl_g.kernel_release) || !kv_i64("CRASH_SIGNAL", sig) ||
        !kv_i64("APPLICATION_UPTIME", (fl_cur.mono_ns - fl_g.install_mono_ns) / 1000000000) ||
        !kv_i64("CRASH_TIME", fl_cur.now_ns / 1000000000))
        return 0;
    if (!kv_str("CRASH_ID", fl_cur.crash_id) || !kv_str("INSTALL_ID", fl_g.install_id) ||
        !kv_str("OS_NAME", fl_g.os_name) || !kv_str("OS_VERSION", fl_g.os_version) ||
        !kv_str("OS_PRETTY_NAME", fl_g.os_pretty) ||
        !kv_str("KERNEL_VERSION", fl_g.kernel_version) || !kv_str("EXECUTABLE", fl_g.exe) ||
        !kv_u64("PROCESS_ID", (uint64_t)fl_cur.pid) ||
        !kv_u64("CRASH_THREAD", (uint64_t)fl_cur.tid))
        return 0;
    if (fl_cur.vfork_parent && !kv_u64("VFORK_PARENT", (uint64_t)fl_cur.vfork_parent))
        return 0;

    /* The crashing thread is this one: its name is one system call away
     * (PR_GET_NAME fills at most 16 bytes), no /proc file to open. */
    char name[32] = "";
    if (syscall(SYS_prctl, PR_GET_NAME, (unsigned long)name, 0, 0, 0) == 0 && name[0] &&
        !kv_str("CRASH_THREAD_NAME", name))
        return 0;
    if (!kv_str("CRASH_SIGNAL_NAME", fl_signal_name(sig)))
        return 0;
    if (fl_cur.have_siginfo) {
        if (!kv_i64("CRASH_CODE", fl_cur.si.si_code))
            return 0;
        if (fl_cur.si.si_code > 0 && (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL ||
                                      sig == SIGFPE || sig == SIGTRAP) &&
            !kv_hex("CRASH_ADDRESS", (uint64_t)(uintptr_t)fl_cur.si.si_addr))
            return 0;
    }
    if (__atomic_load_n(&fl_exc_tid, __ATOMIC_ACQUIRE) == fl_cur.tid &&
        (!kv_str("EXCEPTION_TYPE", fl_exc_type) || !kv_str("EXCEPTION_MESSAGE", fl_exc_message)))
        return 0;
    if (sig == SIGABRT && !abort_message())
        return 0;
    uint64_t ctx;
    if (fl_context_get(&ctx) && !kv_hex("CRASH_CONTEXT", ctx))
        return 0;
    if (fl_cur.have_regs) {
        for (size_t i = 0; i < sizeof regnames / sizeof regnames[0] && i < FL_REGS_N; i++) {
            if (!(fl_cur.regs.valid & (1ull << i)))
                continue;
            fl_line_start(&line, "REGISTER");
            fl_line_raw(&line, regnames[i]);
            fl_line_char(&line, ' ');
            fl_line_hex(&line, fl_cur.regs.r[i]);
            if (!emit(&line))
                return 0;
        }
    }
    return 1;
}

/* Unreadable pages skipped before the raw stack starts: a stack overflow
 * leaves the stack pointer in the guard page (one page for a pthread,
 * glibc's default guard size) or just below the main stack, its red zone
 * below it.  Each costs a system call, and only when the start is not
 * readable. */
#define RAW_STACK_SKIP_PAGES 16

/* Raw stack memory from the stack pointer up, so the server can redo the
 * unwind with full CFI.  Unreadable pages at the start are skipped (a
 * stack overflow: the first readable page above holds the frames that
 * overflowed); after that, an unreadable page ends it (the top of the
 * stack), and so does the start of the program's argument and
 * environment strings (fl_g.args_low): no frame lies there, and they are
 * not the crash reporter's to send. */
static int raw_stack(void)
{
    uint8_t *page = stack_page;
    if (!fl_cur.have_regs || fl_g.stack_bytes == 0)
        return 1;
    uint64_t sp = fl_cur.regs.r[FL_REG_SP];
    uint64_t from = sp >= 128 ? (sp - 128) & ~(uint64_t)63 : 0; /* x86-64 red zone */
    uint64_t to = from + fl_g.stack_bytes;
    int skip = RAW_STACK_SKIP_PAGES;
    for (uint64_t a = from; a < to;) {
        if (a < fl_g.args_low && fl_g.args_low < to)
            to = fl_g.args_low;
        uint64_t chunk = 4096 - (a & 4095);
        if (chunk > to - a)
            chunk = to - a;
        if (fl_safe_read(page, a, chunk) != 0) {
            if (a != from || skip-- == 0 || to + chunk < to)
                break;
            from = a + chunk; /* still nothing read: the same bytes from higher up */
            to += chunk;
            a = from;
            continue;
        }
        for (uint64_t o = 0; o < chunk; o += 64) {
            uint64_t k = chunk - o < 64 ? chunk - o : 64;
            fl_line_start(&line, "STACK");
            fl_line_hex(&line, a + o);
            fl_line_char(&line, ' ');
            fl_line_hexbytes(&line, page + o, k);
            if (!emit(&line))
                return 0;
        }
        a += chunk;
    }
    return 1;
}

static int thread_status = 1;

static void emit_thread(pid_t tid, const char *name, const fl_regs *regs, const uint64_t *ctx)
{
    if (!thread_status)
        return;
    fl_line_start(&line, "THREAD");
    fl_line_u64(&line, (uint64_t)tid);
    if (name && *name) {
        fl_line_char(&line, ' ');
        fl_line_str(&line, name);
    }
    if (!emit(&line)) {
        thread_status = 0;
        return;
    }
    if (ctx && !kv_hex("THREAD_CONTEXT", *ctx)) {
        thread_status = 0;
        return;
    }
    if (!regs)
        return;
    size_t n = fl_unwind(regs, umods, n_umods, tframes, FL_THREAD_FRAMES);
    for (size_t i = 0; i < n; i++)
        if (!kv_hex("THREAD_FRAME", tframes[i])) {
            thread_status = 0;
            return;
        }
}

/* Closes a log that a fault inside the sequence interrupted, when the log is
 * ours: whatever was written is worth more than nothing. */
static void close_interrupted_log(int sig)
{
    if (!log_started || fl_g.hooks.start_crashlog != fl_spool_start || !fl_spool_is_open())
        return;
    if (etc_half)
        fl_spool_line("ETC_VALUE ");
    fl_line_start(&line, "HANDLER_FAULT");
    fl_line_i64(&line, sig);
    fl_spool_line(fl_line_cstr(&line));
    fl_spool_line("END");
    fl_spool_end();
    log_started = false;
}

static int sequence(int sig)
{
    const faultline_hooks *h = &fl_g.hooks;
    /* The other threads are stopped first, their lines written later in
     * the log: until they are, one that calls exit() ends the process
     * with its own status and no log (the objects, the stack and its raw
     * copy took ~150 us before them). */
    int omitted;
    bool threads = !fl_g.custom_catcher && fl_g.dump_signal;
    if (threads)
        fl_threads_stop(&omitted);
    if (!h->start_crashlog(fl_g.app))
        return 0;
    log_started = true;
    if (!basics(sig) || !fl_write_line(""))
        return 0;
    if (!h->get_objects(objects_cb) || !fl_write_line(""))
        return 0;
    if (!h->get_callstack(callstack_cb) || !fl_write_line(""))
        return 0;
    if (!raw_stack())
        return 0;
    if (threads) {
        thread_status = 1;
        fl_threads_emit(emit_thread);
        if (!thread_status || (omitted && !kv_u64("THREADS_OMITTED", (uint64_t)omitted)))
            return 0;
    }
    if (!fl_write_line("") || !fl_trace_crashlog())
        return 0;
    if (!fl_write_line("") || !h->get_etc(etc_cb) || !fl_write_line(""))
        return 0;
    if ((fc_fault && !kv_u64("HANDLER_FAULT", (uint64_t)fc_fault)) || !fl_write_line("END"))
        return 0;
    log_started = false;
    if (!h->end_crashlog())
        return 0;
    h->postflight();
    return 1;
}

void fl_catcher_run(int sig)
{
    int count = __atomic_add_fetch(&crash_count, 1, __ATOMIC_SEQ_CST);
    if (count == 1) {
        /* Asked, not fl_g.pid: a child made by vfork() or a raw fork
         * system call is another process than the one fl_g.pid names. */
        fl_cur.pid = fl_getpid();
        fl_cur.vfork_parent = 0;
        if (fl_cur.pid != fl_g.pid) {
            /* Such a child of vfork() (or of clone(CLONE_VM)) runs in its
             * parent's memory: the crash state it takes here is the
             * parent's, which goes on once the child is gone.  The kernel
             * zeroes the word set_tid_address() names when a process that
             * shares its memory ends, so the crash owner is free again
             * then -- however the child ends -- and the parent's next
             * owner resets crash_count.  In a child with a memory of its
             * own (a raw fork) that write does not happen and is not
             * needed.  kcmp() tells the two apart for the log. */
            syscall(SYS_set_tid_address, &fl_crash_owner);
            /* Through syscall(), which this file calls anyway: one C
             * library symbol less to import (~60 bytes of text). */
            pid_t parent = (pid_t)syscall(SYS_getppid);
            if (syscall(SYS_kcmp, fl_cur.pid, parent, KCMP_VM, 0, 0) == 0)
                fl_cur.vfork_parent = parent;
        }
        first_sig = sig;
        fl_cur.sig = sig;
        fl_cur.tid = fl_gettid();
        fl_cur.now_ns = fl_clock_ns(CLOCK_REALTIME);
        fl_cur.mono_ns = fl_clock_ns(CLOCK_MONOTONIC);
        if (!fl_spool_take_crash_id(fl_cur.crash_id))
            fl_make_uuid(fl_cur.crash_id);
        fl_safemem_forget_pages();
        fl_modules_refresh();
        n_umods = fl_modules_unwind_table(umods, FL_MAX_MODULES);
        etc_half = false;
        log_started = false;
        refault = false; /* a vfork() child's, in our memory */
        /* A log write past RLIMIT_FSIZE must fail with EFBIG (and the log
         * be abandoned), not end the process with SIGXFSZ instead of its
         * own signal: ignored until die(), which gives the program its
         * disposition back.  Nothing of the program's runs meanwhile. */
        struct sigaction ign;
        memset(&ign, 0, sizeof ign);
        ign.sa_handler = SIG_IGN;
        xfsz_held = sigaction(SIGXFSZ, &ign, &xfsz_was) == 0;
    }
    if (fl_g.hooks.preflight(sig, count)) {
        if (!sequence(sig) && fl_g.hooks.start_crashlog == fl_spool_start)
            fl_spool_abandon(); /* a failed log is never left half-written */
    } else if (count > 1) {
        close_interrupted_log(sig);
    }
    if (xfsz_held) {
        xfsz_held = false;
        sigaction(SIGXFSZ, &xfsz_was, NULL);
    }
    fl_g.hooks.die();
    if (refault)
        return;           /* the fault comes back and ends the process */
    fl_threads_release(); /* still here (a die hook that returns) */
    __atomic_sub_fetch(&crash_count, 1, __ATOMIC_SEQ_CST);
}

/* Claims the crash for thread self; *expected: the owner found.  A crash
 * that finds no owner is a new one: a vfork() child that crashed in our
 * memory left its crash_count behind (the kernel freed only the owner
 * word when it ended). */
static bool take_crash(pid_t self, pid_t *expected)
{
    if (!__atomic_compare_exchange_n(&fl_crash_owner, expected, self, false, __ATOMIC_SEQ_CST,
                                     __ATOMIC_SEQ_CST))
        return false;
    __atomic_store_n(&crash_count, 0, __ATOMIC_SEQ_CST);
    return true;
}

/* Whether the thread that owns the crash is gone from our memory.  Asked
 * only in a vfork() child (or one of clone(CLONE_VM)): a thread of its
 * parent that crashed and ended the parent leaves the owner word set in
 * the memory the child still runs in -- the kernel clears it only for the
 * child set_tid_address() names -- so the child's own crash would wait
 * for nothing.  A thread that has ended, is a zombie, or runs in another
 * memory no longer shares ours (kcmp() != 0). */
static bool owner_gone(pid_t self, pid_t owner)
{
    long r = syscall(SYS_kcmp, self, owner, KCMP_VM, 0, 0);
    return r > 0 || (r < 0 && errno == ESRCH);
}

/* faultline_set_first_chance(): the application's look at a fault
 * before ours. */
static faultline_first_chance_fn first_chance;
static __thread char *fc_frame __attribute__((tls_model("initial-exec")));

FL_EXPORT void faultline_set_first_chance(faultline_first_chance_fn handler)
{
    __atomic_store_n(&first_chance, handler, __ATOMIC_RELEASE);
}

/* The entry point of our signal handlers. */
void fl_on_crash_signal(int sig, siginfo_t *si, void *uc)
{
    int saved_errno = errno;
    pid_t self = fl_gettid();

    /* Logged by another copy of libfaultline, which ends the process. */
    if (si && handed_on(si)) {
        call_prev(sig, si, uc);
        errno = saved_errno;
        return;
    }

    /* A signal the program ignores, sent by another process: still
     * ignored.  Its own raise() and abort(), and faults, are crashes. */
    if ((fl_g.ignored >> sig & 1) && si && si->si_code <= 0 && si->si_pid != fl_getpid()) {
        errno = saved_errno;
        return;
    }

    /* A fault the application expects is its own: asked before anything
     * of the crash is taken, so that a siglongjmp() out of its handler
     * leaves nothing held -- but not for a fault inside our own handling
     * of a crash on this thread. */
    faultline_first_chance_fn fc = __atomic_load_n(&first_chance, __ATOMIC_ACQUIRE);
    char here;
    if (fc && __atomic_load_n(&fl_crash_owner, __ATOMIC_SEQ_CST) != self) {
        /* Nor about a fault inside the handler itself, which SA_NODEFER
         * brings back here deeper on the same stack (one left with
         * siglongjmp() leaves fc_frame behind, at the depth the next
         * fault arrives at on the alternate stack: not deeper): asked
         * again, it would fault again until the stack overflows. */
        char *was = fc_frame;
        if ((uintptr_t)&here < (uintptr_t)was) {
            fc_fault = sig;
        } else {
            fc_frame = &here;
            int mine = fc(sig, (void *)si, uc);
            fc_frame = was;
            if (mine) {
                errno = saved_errno;
                return;
            }
        }
    }

    for (;;) {
        pid_t expected = 0;
        if (take_crash(self, &expected) || expected == self)
            break; /* ours, or a fault inside our own handling (nested) */
        /* Another thread is writing the log and will end the process; wait
         * for that, bounded, so that one crash gives one log.  If it takes
         * too long (the owner is stuck), end the process ourselves. */
        struct timespec ts = {0, 1000000};
        bool child = fl_getpid() != fl_g.pid;
        int i;
        for (i = 0; i < 10000; i++) {
            pid_t owner = __atomic_load_n(&fl_crash_owner, __ATOMIC_SEQ_CST);
            if (owner == 0)
                break;
            /* A stale owner (above) is released, every 16 ms; the next
             * take_crash() then resets the count it left. */
            if (child && (i & 15) == 15 && owner_gone(self, owner)) {
                __atomic_compare_exchange_n(&fl_crash_owner, &owner, 0, false, __ATOMIC_SEQ_CST,
                                            __ATOMIC_SEQ_CST);
                break;
            }
            syscall(SYS_nanosleep, &ts, NULL);
        }
        if (i == 10000) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = SIG_DFL;
            sigaction(sig, &sa, NULL);
            syscall(SYS_tgkill, fl_getpid(), self, sig);
            _exit(128 + (sig & 127));
        }
    }

    if (crash_count == 0) {
        fl_cur.have_siginfo = si != NULL;
        if (si)
            fl_cur.si = *si;
        fl_cur.have_regs = uc != NULL;
        if (uc)
            fl_regs_from_ucontext(&fl_cur.regs, uc);
        cur_ucontext = uc;
        from_signal = true;
        /* The program's other signals wait until the process ends: a
         * handler of its own (a profiler's SIGPROF, a SIGUSR1 or SIGCHLD
         * handler) would otherwise run in the middle of the log, on the
         * crashed thread, and might end the process before the log is
         * named.  The faults (and abort) stay open for a fault in our own
         * handling; a die() that returns gives the mask back (sigreturn). */
        static const uint64_t others = ~(FL_FAULT_SIGS | 1ull << (SIGABRT - 1));
        fl_set_sigmask(SIG_BLOCK, (const sigset_t *)&others, NULL);
    }
    fl_catcher_run(sig);
    if (crash_count == 0)
        __atomic_store_n(&fl_crash_owner, 0, __ATOMIC_SEQ_CST);
    errno = saved_errno;
}

/* The catcher handed to an install_crash_catcher hook, and
 * faultline_crash_now(): no signal context, so no registers or siginfo. */
void fl_catcher_entry(int sig)
{
    pid_t self = fl_gettid(), expected = 0;
    if (!take_crash(self, &expected) && expected != self)
        return; /* another thread is already crashing */
    if (crash_count == 0) {
        fl_cur.have_siginfo = false;
        fl_cur.have_regs = false;
        from_signal = false;
    }
    fl_catcher_run(sig);
    if (crash_count == 0)
        __atomic_store_n(&fl_crash_owner, 0, __ATOMIC_SEQ_CST);
}

/* fl-lint: install-time */
/* Called by faultline_install(): the buffers above are written on every
 * crash, so their pages are made present now rather than faulted in by the
 * handler.  The unwind table gets room for the objects known now plus some
 * loaded later; the rest of it stays untouched until needed. */
void fl_catcher_prepare(void)
{
    size_t nmods = fl_mods.count + 64 < FL_MAX_MODULES ? fl_mods.count + 64 : FL_MAX_MODULES;
    fl_prefault(umods, nmods * sizeof umods[0]);
    fl_prefault(frames, sizeof frames);
    fl_prefault(tframes, sizeof tframes);
    fl_prefault(&line, sizeof line);
    fl_prefault(&cbline, sizeof cbline);
    fl_prefault(stack_page, sizeof stack_page);
    fl_prefault(&fl_cur, sizeof fl_cur);
}
