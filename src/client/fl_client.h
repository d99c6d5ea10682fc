/*
 * fl_client.h - internals shared by the client library's modules.
 *
 * The client is split by the context code runs in:
 *   install.c            faultline_install(): ordinary context, may allocate
 *   catcher.c            the crash sequence: SIGNAL-SAFE
 *   modules.c            loaded-object table: built at install, topped up on
 *                        a crash from the dynamic linker's list (signal-safe part)
 *   spool.c              default log hooks (unnamed file + linkat): SIGNAL-SAFE,
 *                        plus the install-time spool set-up
 *   interpose.c          sigprocmask, pthread_sigmask, thrd_create, dlclose:
 *                        ours (ordinary context)
 *   threads.c            alternate signal stacks for every thread, and the
 *                        capture of other threads' registers on a crash
 *   sysinfo.c            uname, os-release, ids: read at install time
 *   trace.c, trace_dump.c  the flight recorder and its dumps
 *   context.c            the compressed calling context (-finstrument-functions
 *                        hooks): SIGNAL-SAFE
 *   fl_unwind.c, fl_safemem.c   the CFI unwinder and checked memory reads
 *
 * Everything the signal-safe files need is prepared at install time and
 * kept in the static state below; nothing there allocates.
 */
#ifndef FL_CLIENT_H
#define FL_CLIENT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "faultline.h"
#include "fl_crashlog.h"
#include "fl_unwind.h"

#define FL_PATH_MAX 1024
#define FL_MAX_MODULES 1024
#define FL_MODPATH_POOL (192 * 1024)
#define FL_MAX_FRAMES 256
#define FL_MAX_THREADS 256
#define FL_THREAD_FRAMES 64
#define FL_STACK_DEFAULT 32768
#define FL_STACK_MAX 262144
#define FL_SPOOL_MAX_DEFAULT 100 /* finished logs a spool keeps (spool.c) */
#define FL_BUILD_ID_MAX 40

#define FL_EXPORT __attribute__((visibility("default")))
#define FL_HIDDEN __attribute__((visibility("hidden")))

typedef struct fl_module {
    uint64_t start, end;       /* lowest / highest PT_LOAD address, runtime */
    uint64_t bias;             /* load bias (dlpi_addr / l_addr) */
    uint64_t exec_start, exec_end; /* executable segment(s), runtime */
    uint64_t eh_frame_hdr;     /* runtime address of PT_GNU_EH_FRAME, or 0 */
    uint64_t eh_frame;         /* runtime .eh_frame for a linear scan when
                                * there is no header (static programs), or 0 */
    uint64_t link_map;         /* identity in the dynamic linker's list, or 0 */
    uint32_t path_off;         /* offset of the path in the path pool */
    uint16_t path_cut;         /* bytes left out at the path's start (OBJECT_PATH_CUT) */
    uint8_t build_id[FL_BUILD_ID_MAX];
    uint8_t build_id_len;
} fl_module;

/* The loaded-object table.  Written at install (and by the crash handler
 * when the dynamic linker knows objects the table does not).  Paths are
 * kept to FL_PATH_MAX - 1 bytes (their end: path_cut says how much of
 * their start is gone), within the pool's FL_MODPATH_POOL bytes. */
typedef struct fl_modtab {
    fl_module mods[FL_MAX_MODULES];
    size_t count;
    size_t omitted; /* objects loaded past FL_MAX_MODULES (OBJECTS_OMITTED) */
    char pool[FL_MODPATH_POOL];
    size_t pool_used;
} fl_modtab;

/* Everything faultline_install() prepares. */
typedef struct fl_state {
    faultline_hooks hooks;
    bool custom_catcher;      /* install_crash_catcher hook was given */
    char app[FAULTLINE_MAX_APPNAME];
    char version[FAULTLINE_MAX_VERSION];
    char spool[FL_PATH_MAX];
    char install_id[40];
    char kernel_release[128], kernel_version[256], machine[64];
    char os_name[128], os_version[64], os_pretty[256];
    char exe[FL_PATH_MAX];
    char reporter[FL_PATH_MAX]; /* FAULTLINE_REPORTER, or "" */
    bool do_fsync;
    size_t stack_bytes;
    /* The lowest address of the program's argument and environment strings
     * on the main thread's stack (the kernel's AT_RANDOM bytes lie right
     * below them), or 0: the raw stack stops there (catcher.c). */
    uint64_t args_low;
    size_t trace_events; /* FAULTLINE_TRACE_EVENTS: trace events in a log */
    int64_t install_mono_ns;
    pid_t pid;                /* the process whose memory this is: kept across fork() (trace.c) */
    int pending_logs;         /* -1 until faultline_pending_crashlogs() counts */
    int dump_signal;          /* real-time signal used to reach other threads */
    struct sigaction prev[65]; /* handlers before ours, by signal number */
    bool have_prev[65];
    unsigned ignored; /* bit per crash signal the program ignored (SIG_IGN) */
    bool faults_open; /* sigprocmask() no longer blocks FL_FAULT_SIGS (interpose.c) */
    void *abort_msg;  /* &__abort_msg: glibc's message of an abort (catcher.c), or NULL */
    /* Why the last faultline_install() failed (errno has the rest), and the
     * spool it last tried with the variable that named it (NULL: none was
     * set): what the preload library, which has no caller to tell, prints. */
    int failed_at;
    char spool_tried[FL_PATH_MAX];
    const char *spool_from;
} fl_state;

/* fl_state.failed_at: the step of faultline_install() that failed. */
enum {
    FL_FAIL_NONE,
    FL_FAIL_ARGS,
    FL_FAIL_ALREADY,
    FL_FAIL_SPOOL,
    FL_FAIL_MODULES,
    FL_FAIL_CATCHER
};

extern fl_state fl_g;
extern fl_modtab fl_mods;

/* What the crash handler knows about the crash in progress. */
typedef struct fl_crash {
    int sig;
    bool have_siginfo;
    siginfo_t si;
    bool have_regs;
    fl_regs regs;             /* crashing thread, from the ucontext */
    pid_t pid, tid;           /* the crashing process (not fl_g.pid: a vfork child) */
    pid_t vfork_parent;       /* the process whose memory it runs in, or 0 */
    int64_t now_ns, mono_ns;
    char crash_id[40];
} fl_crash;

extern fl_crash fl_cur;

/* ---- install-time (ordinary context) ---- */
int fl_sysinfo_init(fl_state *st);           /* uname, os-release, exe, ids */
int fl_spool_init(fl_state *st);             /* resolve + create spool; errno */
int fl_spool_count_logs(const char *dir);    /* finished logs in dir */
/* The reporter to start after a crash when FAULTLINE_REPORTER is unset
 * (the preload library's, beside it); before faultline_install().  Copied. */
void fl_spool_default_reporter(const char *path);
int fl_modules_init(void);                   /* dl_iterate_phdr into fl_mods */
int fl_signals_install(void);                /* our handlers + altstacks */
int fl_threads_init(void);                   /* altstacks in existing threads */
void fl_make_uuid(char out[40]);             /* random v4 UUID (getrandom) */
void fl_prefault(void *p, size_t n);         /* make [p, p+n) resident and writable now */
/* open(path, flags, 0600) at a descriptor above 0, 1 and 2 (flags with
 * O_CLOEXEC): a program started with those closed would otherwise read its
 * input from, or write its output into, a file we keep open.  -1 and
 * errno when it fails. */
int fl_open_high(const char *path, int flags);

/* A directory read with getdents64 (no heap, no lock: readdir() has
 * both), into the caller's buffer: fl_dir_next() gives one entry after the
 * other, NULL at the end or on an error. */
typedef struct fl_dirent64 {
    uint64_t ino;
    int64_t off;
    unsigned short reclen;
    unsigned char type;
    char name[];
} fl_dirent64;
typedef struct fl_dir_reader {
    int fd;
    char *buf;
    long cap, len, at;
} fl_dir_reader;
const fl_dirent64 *fl_dir_next(fl_dir_reader *r);
void fl_catcher_prepare(void);               /* prefault the handler's scratch memory */
void fl_cxx_install(void);                   /* note uncaught C++ exceptions (cxx.c) */
/* The uncaught C++ exception that std::terminate() was called for, and the
 * thread that called it (0: none). */
#define FL_EXC_TYPE_MAX 256
#define FL_EXC_MESSAGE_MAX 1024
extern char fl_exc_type[FL_EXC_TYPE_MAX], fl_exc_message[FL_EXC_MESSAGE_MAX];
extern volatile pid_t fl_exc_tid;

/* ---- signal-safe ---- */
int64_t fl_clock_ns(int clock);
pid_t fl_gettid(void);
/* getpid(2) asked of the kernel, as every time: a raw fork or vfork() child
 * is not the process fl_g.pid names.
 * System calls that the C library only wraps (getpid, uname, nanosleep,
 * lseek, pread, fsync, fcntl, setsid, execve) are made through syscall(),
 * which the library imports anyway: each import costs ~55 bytes of the
 * text budget (its dynamic symbol, name, version and relocation). */
pid_t fl_getpid(void);
void fl_catcher_run(int sig);                /* the MojoCrash sequence */
void fl_modules_refresh(void);               /* add objects loaded since install */
int fl_write_line(const char *s);            /* through the new_crashlog_line hook */
/* The flight recorder's lines (trace_dump.c): state, the newest
 * FL_TRACE_LOG_CRUMBS breadcrumbs and fl_g.trace_events trace events
 * (FAULTLINE_TRACE_EVENTS, default FL_TRACE_LOG_EVENTS, at most
 * FL_TRACE_LOG_EVENTS_MAX).  Returns 0 when writing a line failed. */
#define FL_TRACE_LOG_CRUMBS 100
#define FL_TRACE_LOG_EVENTS 500
#define FL_TRACE_LOG_EVENTS_MAX 2000 /* keeps a log within the server's limits */
int fl_trace_crashlog(void);
/* The handler of FAULTLINE_TRACE_SIGNAL: a trace-ID dump into the spool. */
void fl_trace_signal(int sig, siginfo_t *si, void *uc);
extern volatile pid_t fl_crash_owner;        /* catcher.c: the thread in the crash sequence, or 0 */
int fl_spool_start(const char *app);         /* default start_crashlog */
int fl_spool_line(const char *s);            /* default new_crashlog_line */
/* write() all n bytes (again after EINTR and a short write); 0 or -1. */
int fl_write_all(int fd, const void *buf, size_t n);
int fl_spool_end(void);                      /* default end_crashlog */
bool fl_spool_is_open(void);
void fl_spool_abandon(void);                 /* unlink an unfinished log */
bool fl_spool_take_crash_id(char out[40]);   /* the id chosen at install, once */
void fl_spool_run_reporter(void);            /* fork+exec FAULTLINE_REPORTER */
/* Lets the threads fl_threads_stop() parked go on (they give up by
 * themselves after 2 s): after die(), when the process is still there. */
void fl_threads_release(void);
/* Parks every other thread, the first FL_MAX_THREADS with their
 * registers taken; *omitted: how many more there were (parked, not in
 * the log).  Returns how many were taken. */
int fl_threads_stop(int *omitted);
/* Emits the threads fl_threads_stop() took. */
void fl_threads_emit(void (*emit)(pid_t tid, const char *name, const fl_regs *regs,
                                  const uint64_t *ctx));
/* The calling thread's compressed calling context (context.c) into *out;
 * returns non-zero when instrumented code has run in the process, i.e.
 * when the value means something. */
int fl_context_get(uint64_t *out);
void fl_ensure_altstack(void);               /* this thread */
/* The signals a fault raises, as bits of the kernel's signal mask word. */
#define FL_FAULT_SIGS                                                                     \
    (1ull << (SIGSEGV - 1) | 1ull << (SIGBUS - 1) | 1ull << (SIGILL - 1) |                \
     1ull << (SIGFPE - 1) | 1ull << (SIGTRAP - 1) | 1ull << (SIGSYS - 1))
/* rt_sigprocmask as the wrappers do it (interpose.c); returns 0 or -1. */
long fl_set_sigmask(int how, const sigset_t *set, sigset_t *old);
/* The C library's function `name`, past our wrapper of it (interpose.c):
 * from the dynamic linker, else `fallback`, kept in *cache; NULL with
 * errno ENOSYS when there is neither.  Ordinary context (dlsym).
 * FL_GLIBC_OWN(f): the fallback in a static program, glibc's own name of
 * the function in libc.a (a weak hidden reference: NULL unless the
 * program is linked with -Wl,-u,f), or none without glibc. */
void *fl_real_fn(void **cache, const char *name, void *fallback);
#ifdef __GLIBC__
#define FL_GLIBC_OWN(f) ((void *)(f))
#else
#define FL_GLIBC_OWN(f) NULL
#endif
/* How many dlclose() calls began and ended (interpose.c): the calling-
 * context hooks drop a thread's cache of modules when it changed
 * (context.c). */
extern FL_HIDDEN uintptr_t fl_ctx_unmaps;
size_t fl_modules_unwind_table(fl_unwind_module *out, size_t max);
const char *fl_signal_name(int sig);
void fl_die_default(void);
/* The handler of every crash signal (catcher.c). */
void fl_on_crash_signal(int sig, siginfo_t *si, void *uc);
int fl_objects_line_v1(const char *fname, const void *addr, unsigned long len);
int fl_read_small_file(const char *path, char *buf, size_t cap); /* open+read, NUL-term */

#endif
