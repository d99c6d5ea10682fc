/*
 * client_driver.c - runs crash programs and checks how they die and what
 * they leave in the spool.
 *
 *   client_driver matrix  CRASHME CASE      one case of the fault matrix
 *   client_driver details CRASHME           the log's contents, in depth
 *   client_driver nomalloc CRASHME_NOMALLOC no heap use after the fault
 *   client_driver mojo    MOJO_APP          MojoCrash API: hook order
 *   client_driver efbig   CRASHME           failing writes leave no log
 *   client_driver refault CRASHME           a fault ends the process itself (core dumps)
 *   client_driver exit_early CRASHME        other threads are stopped before the log starts
 *   client_driver tmpfs   CRASHME           a full file system leaves no log
 *   client_driver spool_gone CRASHME        the spool was deleted after install
 *   client_driver dlclose CRASHME           an unloaded library is not reported
 *   client_driver many_objects CRASHME      more loaded objects than a log keeps
 *   client_driver long_path CRASHME         a library path longer than a log keeps
 *   client_driver pending CRASHME           faultline_pending_crashlogs()
 *   client_driver spool_max CRASHME         FAULTLINE_SPOOL_MAX: the oldest logs go
 *   client_driver reporter CRASHME          FAULTLINE_REPORTER runs
 *   client_driver fork    CRASHME           a crash in a child forked after install
 *   client_driver vfork   CRASHME           a crash in a vfork() or clone(CLONE_VM) child
 *   client_driver vfork_orphan CRASHME      a vfork() child crashing after its parent crashed
 *   client_driver vfork_trace  CRASHME      trace events around a vfork() child
 *   client_driver cxx     CXXTHROW          uncaught C++ exceptions: type and what()
 *   client_driver first_chance CRASHME      faults the program recovers from: no log
 *   client_driver first_chance_faults CRASHME  a first-chance handler that faults: logged
 *   client_driver crash_now_num CRASHME     crash_now(n) ends the process for any n
 *   client_driver fork_state CRASHME        fork() while another thread sets state
 *   client_driver fork_timers CRASHME       fork() while another thread creates timers
 *   client_driver static_preload CRASHME PRELOAD_SO  two copies of the library: one log
 *   client_driver install_id CRASHME        one installation id per spool, even in a race
 *   client_driver pid1    CRASHME           a crashing PID 1 does not hang
 *   client_driver no_proc CRASHME           without /proc the log still names the program
 *   client_driver preload VICTIM PRELOAD_SO zero-code integration
 *   client_driver preload_errors VICTIM PRELOAD_SO  one line on stderr when it cannot install
 *
 * Each child runs in a fresh scratch directory with its own spool
 * (FAULTLINE_SPOOL), core dumps off.  Frames are resolved without any
 * external tool: the address is matched to an OBJECT line (base, size,
 * bias), and the function looked up in that object's ELF symbol tables.
 *
 * Exit status: 0 pass, 1 fail, 77 skipped (ctest SKIP_RETURN_CODE).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fl_crashlog.h"

#ifndef FL_TEST_PLUGIN
#define FL_TEST_PLUGIN ""
#endif
#ifndef FL_TEST_CC
#define FL_TEST_CC "cc"
#endif

/* A crash must be over within this (the handler's own budget is far
 * smaller; this only catches hangs).  Children still running at
 * KILL_AFTER_MS are killed so the test itself never hangs. */
#define DEADLINE_MS 2000
#define KILL_AFTER_MS 10000

static int failures;
static char workdir[512], spool[600];

#define CHECK(cond, ...)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            failures++;                                                                    \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                \
            fprintf(stderr, __VA_ARGS__);                                                  \
            fputc('\n', stderr);                                                           \
        }                                                                                  \
    } while (0)

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "client_driver: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------------ */
/* Scratch directories. */

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static void cleanup(void)
{
    if (workdir[0]) {
        umount2(spool, MNT_DETACH); /* the tmpfs case; harmless otherwise */
        nftw(workdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    }
}

static void make_workdir(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(workdir, sizeof workdir, "%s/fl-client-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(workdir))
        die("mkdtemp: %s", strerror(errno));
    atexit(cleanup);
    snprintf(spool, sizeof spool, "%s/spool", workdir);
    if (mkdir(spool, 0700) != 0)
        die("mkdir %s: %s", spool, strerror(errno));
}

static void path_in(char *out, size_t cap, const char *dir, const char *name)
{
    snprintf(out, cap, "%s/%s", dir, name);
}

static bool file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* ------------------------------------------------------------------ */
/* Running a child. */

typedef struct run_result {
    int status;
    int64_t ms;
    bool timed_out;
    char out[4096]; /* stdout, when captured */
} run_result;

#define MAX_ENV 16

/* When set, run() sends the child's standard error into this file. */
static const char *stderr_to;

/* In a forked child: the settings every crash program runs with, then
 * the extra "K=V" settings (NULL-terminated list; "K=" removes K). */
static void child_env(const char *const *env)
{
    struct rlimit nocore = {0, 0};
    setrlimit(RLIMIT_CORE, &nocore);
    setenv("FAULTLINE_SPOOL", spool, 1);
    setenv("FL_TEST_WORKDIR", workdir, 1);
    unsetenv("FAULTLINE_REPORTER");
    unsetenv("FAULTLINE_STACK_BYTES");
    unsetenv("FAULTLINE_FSYNC");
    unsetenv("LD_PRELOAD");
#ifdef FL_TEST_ASAN
    /* ASan would catch the faults before Faultline does, print its own
     * report and exit with 1.  Let the signals through; keep the rest. */
    setenv("ASAN_OPTIONS",
           "handle_segv=0:handle_sigbus=0:handle_abort=0:handle_sigfpe=0:"
           "handle_sigill=0:detect_leaks=0:use_sigaltstack=0:"
           "allow_user_segv_handler=1:verify_asan_link_order=0",
           1);
    setenv("UBSAN_OPTIONS", "handle_segv=0:handle_sigbus=0:handle_abort=0:"
                            "handle_sigfpe=0:handle_sigill=0", 1);
#endif
    for (int i = 0; env && env[i]; i++) {
        char kv[8192];
        snprintf(kv, sizeof kv, "%s", env[i]);
        char *eq = strchr(kv, '=');
        if (!eq)
            continue;
        *eq = '\0';
        if (eq[1])
            setenv(kv, eq + 1, 1);
        else
            unsetenv(kv);
    }
}

/* A child still running KILL_AFTER_MS after t0 is killed (r->timed_out,
 * true returned); else a millisecond's wait before the next look. */
static bool killed_late(pid_t pid, int64_t t0, run_result *r)
{
    if (now_ms() - t0 > KILL_AFTER_MS) {
        kill(pid, SIGKILL);
        waitpid(pid, &r->status, 0);
        r->timed_out = true;
        return true;
    }
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
    return false;
}

/* Runs argv with extra "K=V" settings (NULL-terminated list), stdout
 * captured into r->out, stderr passed through.  "K=" removes K. */
static void run(char *const argv[], const char *const *env, run_result *r)
{
    int pfd[2];
    memset(r, 0, sizeof *r);
    if (pipe(pfd) != 0)
        die("pipe: %s", strerror(errno));
    int64_t t0 = now_ms();
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        child_env(env);
        dup2(pfd[1], 1);
        if (stderr_to) {
            int fd = open(stderr_to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
            if (fd < 0 || dup2(fd, 2) < 0)
                _exit(126);
            close(fd);
        }
        close(pfd[0]);
        close(pfd[1]);
        execv(argv[0], argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(pfd[1]);
    fcntl(pfd[0], F_SETFL, O_NONBLOCK);
    size_t got = 0;
    for (;;) {
        ssize_t n = read(pfd[0], r->out + got, sizeof r->out - 1 - got);
        if (n > 0)
            got += (size_t)n;
        pid_t w = waitpid(pid, &r->status, WNOHANG);
        if (w == pid || killed_late(pid, t0, r))
            break;
    }
    r->ms = now_ms() - t0;
    for (;;) { /* the rest of stdout, if any */
        ssize_t n = read(pfd[0], r->out + got, sizeof r->out - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    r->out[got] = '\0';
    close(pfd[0]);
}

static const char *describe(int status)
{
    static char buf[64];
    if (WIFSIGNALED(status))
        snprintf(buf, sizeof buf, "killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else if (WIFEXITED(status))
        snprintf(buf, sizeof buf, "exited with %d", WEXITSTATUS(status));
    else
        snprintf(buf, sizeof buf, "status 0x%x", status);
    return buf;
}

static void check_ended_by(const run_result *r, int sig)
{
    CHECK(!r->timed_out, "the child hung and was killed after %d ms", KILL_AFTER_MS);
    CHECK(WIFSIGNALED(r->status) && WTERMSIG(r->status) == sig,
          "expected death by signal %d (%s), got: %s", sig, strsignal(sig), describe(r->status));
    CHECK(r->ms <= DEADLINE_MS, "took %lld ms (limit %d)", (long long)r->ms, DEADLINE_MS);
}

/* ------------------------------------------------------------------ */
/* The spool. */

typedef struct spool_state {
    int logs, tmps, others;
    char names[8][300];
} spool_state;

static void scan_spool(spool_state *s)
{
    memset(s, 0, sizeof *s);
    DIR *d = opendir(spool);
    if (!d)
        die("opendir %s: %s", spool, strerror(errno));
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *n = e->d_name;
        size_t len = strlen(n);
        if (!strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, "installation-id") ||
            !strcmp(n, "reporter.log"))
            continue;
        if (n[0] == '.' && len > 4 && !strcmp(n + len - 4, ".tmp")) {
            s->tmps++;
        } else if (n[0] != '.' && len > 9 && !strcmp(n + len - 9, ".crashlog")) {
            if (s->logs < 8)
                snprintf(s->names[s->logs], sizeof s->names[0], "%s", n);
            s->logs++;
        } else {
            s->others++;
            fprintf(stderr, "note: unexpected file in spool: %s\n", n);
        }
    }
    closedir(d);
}

/* Empties the spool of logs and temporary files between two runs. */
static void remove_logs(void)
{
    DIR *d = opendir(spool);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strstr(e->d_name, ".crashlog") || (e->d_name[0] == '.' && strstr(e->d_name, ".tmp"))) {
            char p[1000];
            path_in(p, sizeof p, spool, e->d_name);
            unlink(p);
        }
    }
    if (d)
        closedir(d);
}

/* Last non-empty line of a file is END (a reader-independent check). */
static bool ends_with_end(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char line[8192], last[8192] = "";
    while (fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        if (n)
            memcpy(last, line, n + 1);
    }
    fclose(f);
    return !strcmp(last, "END");
}

/* Exactly one complete log and no temp files; returns it parsed (or NULL
 * after recording the failure). */
static fl_crashlog *the_one_log(char *path_out, size_t cap)
{
    spool_state s;
    scan_spool(&s);
    CHECK(s.logs == 1, "expected exactly one *.crashlog in %s, found %d", spool, s.logs);
    CHECK(s.tmps == 0, "%d temporary file(s) left in the spool", s.tmps);
    if (s.logs < 1)
        return NULL;
    char path[1000];
    path_in(path, sizeof path, spool, s.names[0]);
    if (path_out)
        snprintf(path_out, cap, "%s", path);
    CHECK(ends_with_end(path), "%s does not end with END", path);
    fl_crashlog *log = NULL;
    fl_crashlog_error err;
    int rc = fl_crashlog_parse_file(path, &log, &err);
    CHECK(rc == 0, "%s does not parse: line %u: %s", path, err.line, err.message);
    return rc == 0 ? log : NULL;
}

/* ------------------------------------------------------------------ */
/* ELF symbols, read straight from the files named by OBJECT_PATH. */

typedef struct elf_file {
    char path[1024];
    const uint8_t *map;
    size_t size;
    bool bad;
} elf_file;

static elf_file elves[64];
static int nelves;

static const elf_file *elf_open(const char *path)
{
    for (int i = 0; i < nelves; i++)
        if (!strcmp(elves[i].path, path))
            return elves[i].bad ? NULL : &elves[i];
    if (nelves == 64)
        return NULL;
    elf_file *e = &elves[nelves++];
    snprintf(e->path, sizeof e->path, "%s", path);
    e->bad = true;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) == 0 && st.st_size > (off_t)sizeof(Elf64_Ehdr)) {
        void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m != MAP_FAILED) {
            e->map = m;
            e->size = (size_t)st.st_size;
            const Elf64_Ehdr *eh = m;
            e->bad = memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
                     eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shoff == 0 ||
                     eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > e->size;
        }
    }
    close(fd);
    return e->bad ? NULL : e;
}

static const Elf64_Shdr *elf_sections(const elf_file *e, int *n)
{
    const Elf64_Ehdr *eh = (const void *)e->map;
    *n = eh->e_shnum;
    return (const void *)(e->map + eh->e_shoff);
}

/* The function symbol covering the link-time address vaddr, or NULL. */
static const char *elf_function_at(const elf_file *e, uint64_t vaddr)
{
    int n;
    const Elf64_Shdr *sh = elf_sections(e, &n);
    const char *best = NULL;
    for (int i = 0; i < n; i++) {
        if (sh[i].sh_type != SHT_SYMTAB && sh[i].sh_type != SHT_DYNSYM)
            continue;
        if (sh[i].sh_link >= (unsigned)n || sh[i].sh_offset + sh[i].sh_size > e->size)
            continue;
        const Elf64_Shdr *str = &sh[sh[i].sh_link];
        if (str->sh_offset + str->sh_size > e->size)
            continue;
        const Elf64_Sym *sym = (const void *)(e->map + sh[i].sh_offset);
        size_t count = sh[i].sh_size / sizeof *sym;
        for (size_t k = 0; k < count; k++) {
            int type = ELF64_ST_TYPE(sym[k].st_info);
            if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym[k].st_shndx == SHN_UNDEF)
                continue;
            if (vaddr >= sym[k].st_value && vaddr < sym[k].st_value + sym[k].st_size &&
                sym[k].st_name < str->sh_size) {
                best = (const char *)(e->map + str->sh_offset + sym[k].st_name);
                if (sh[i].sh_type == SHT_SYMTAB)
                    return best; /* the full table wins */
            }
        }
    }
    return best;
}

/* GNU build id of a file, lowercase hex, or "" (from its note sections,
 * the same place `readelf -n` reads it). */
static void elf_build_id(const char *path, char *out, size_t cap)
{
    out[0] = '\0';
    const elf_file *e = elf_open(path);
    if (!e)
        return;
    int n;
    const Elf64_Shdr *sh = elf_sections(e, &n);
    for (int i = 0; i < n; i++) {
        if (sh[i].sh_type != SHT_NOTE || sh[i].sh_offset + sh[i].sh_size > e->size)
            continue;
        size_t off = 0;
        const uint8_t *p = e->map + sh[i].sh_offset;
        while (off + sizeof(Elf64_Nhdr) <= sh[i].sh_size) {
            const Elf64_Nhdr *nh = (const void *)(p + off);
            size_t name = off + sizeof *nh, desc = name + ((nh->n_namesz + 3u) & ~3u);
            if (desc + nh->n_descsz > sh[i].sh_size)
                break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                !memcmp(p + name, "GNU", 4)) {
                size_t o = 0;
                for (size_t k = 0; k < nh->n_descsz && o + 3 < cap; k++)
                    o += (size_t)snprintf(out + o, cap - o, "%02x", p[desc + k]);
                return;
            }
            off = desc + ((nh->n_descsz + 3u) & ~3u);
        }
    }
}

/* Resolves a runtime address through the log's OBJECT table. */
static const char *symbolize(const fl_crashlog *log, uint64_t addr, const fl_object **obj_out)
{
    for (size_t i = 0; i < log->nobjects; i++) {
        const fl_object *o = &log->objects[i];
        if (addr < o->base || addr - o->base >= o->size)
            continue;
        if (obj_out)
            *obj_out = o;
        if (!o->path || !o->has_bias)
            return NULL;
        const elf_file *e = elf_open(o->path);
        return e ? elf_function_at(e, addr - o->bias) : NULL;
    }
    return NULL;
}

/* The name of frame i: a return address beyond frame 0 points after the
 * call, which may already be the next function, so look one byte back. */
static const char *frame_name(const fl_crashlog *log, const uint64_t *frames, size_t i)
{
    return symbolize(log, i == 0 ? frames[0] : frames[i] - 1, NULL);
}

static bool frames_have(const fl_crashlog *log, const uint64_t *frames, size_t n,
                        const char *func)
{
    size_t len = strlen(func);
    for (size_t i = 0; i < n; i++) {
        /* GCC's local copies count as the function: "f.localalias",
         * "f.cold", "f.part.0". */
        const char *s = frame_name(log, frames, i);
        if (s && !strncmp(s, func, len) && (s[len] == '\0' || s[len] == '.'))
            return true;
    }
    return false;
}

static void print_frames(const fl_crashlog *log, const uint64_t *frames, size_t n)
{
    for (size_t i = 0; i < n && i < 40; i++) {
        const fl_object *o = NULL;
        const char *s = symbolize(log, i == 0 ? frames[0] : frames[i] - 1, &o);
        fprintf(stderr, "  #%-2zu 0x%012llx %s (%s)\n", i, (unsigned long long)frames[i],
                s ? s : "?", o ? o->name : "no object");
    }
}

static void check_frame(const fl_crashlog *log, const char *func)
{
    bool ok = frames_have(log, log->callstack, log->ncallstack, func);
    CHECK(ok, "function %s is not among the %zu CALLSTACK frames", func, log->ncallstack);
    if (!ok)
        print_frames(log, log->callstack, log->ncallstack);
}

/* ------------------------------------------------------------------ */
/* The fault matrix. */

static char *slurp(const char *path);

typedef struct fault_case {
    const char *name;
    int sig;
    const char *func;   /* must appear among the frames */
    const char *caller; /* must appear too (NULL: none checked): the unwinder got
                         * past the faulting frame, which a walk that only
                         * follows frame pointers does not at -O2 without them */
} fault_case;

static size_t stack_bytes(const fl_crashlog *log);

static const fault_case cases[] = {
    {"null_read", SIGSEGV, "crash_null_read", "main"},
    {"null_write", SIGSEGV, "crash_null_write", "main"},
    {"null_call", SIGSEGV, "crash_null_call", "main"},
    {"data_call", SIGSEGV, "crash_data_call", "main"},
    {"forged_fault", SIGSEGV, "crash_forged_fault", "main"},
    {"rodata_write", SIGSEGV, "crash_rodata_write", "main"},
    {"stack_overflow_main", SIGSEGV, "crash_stack_overflow", NULL},
    {"stack_overflow_thread_after", SIGSEGV, "crash_stack_overflow", NULL},
    {"stack_overflow_thread_before", SIGSEGV, "crash_stack_overflow", NULL},
    {"stack_overflow_c11_thread", SIGSEGV, "crash_stack_overflow", NULL},
    {"stack_overflow_timer_thread", SIGSEGV, "crash_stack_overflow", NULL},
    {"timer_thread", SIGSEGV, "crash_null_read", "timer_fault"},
    {"stack_overflow_mq_thread", SIGSEGV, "crash_stack_overflow", NULL},
    {"mq_thread", SIGSEGV, "crash_null_read", "timer_fault"},
    {"mq_close_thread", SIGSEGV, "crash_null_read", "timer_fault"},
    {"abort", SIGABRT, "crash_abort", "main"},
    {"assert", SIGABRT, "crash_assert", "main"},
    {"trap", SIGILL, "crash_trap", "main"},
    {"divzero", SIGFPE, "crash_divzero", "main"},
    {"sigbus", SIGBUS, "crash_sigbus", "main"},
    {"double_free", SIGABRT, "crash_double_free", "main"},
    {"four_threads", SIGSEGV, "crash_thread_fault", "fault_thread"},
    {"app_handler", SIGSEGV, "crash_null_read", "main"},
    {"app_handler_faults", SIGSEGV, "crash_null_read", "main"},
    {"hook_fault", SIGABRT, "crash_abort", "main"},
    {"plugin_crash", SIGSEGV, "plugin_crash_here", "main"},
    {"crash_now", SIGABRT, "crash_via_api", "main"},
    {"stack_overflow_plugin_thread", SIGSEGV, "plugin_recurse", NULL},
    {"fd_reuse", SIGSEGV, "crash_null_read", "main"},
    {"name_via_proc", SIGSEGV, "crash_null_read", "main"},
    {"name_by_copy", SIGSEGV, "crash_null_read", "main"},
    {"no_tmpfile", SIGSEGV, "crash_null_read", "main"},
    {"exit_race", SIGSEGV, "crash_null_read", "main"},
    {"emfile", SIGSEGV, "crash_null_read", "main"},
    {"signal_during_log", SIGSEGV, "crash_null_read", "main"},
    {"closed_stdio", SIGSEGV, "crash_null_read", "main"},
    {"relative_spool", SIGSEGV, "crash_null_read", "main"},
    {"ignored_kill", SIGSEGV, "crash_null_read", "main"},
    {"many_threads", SIGSEGV, "crash_null_read", "main"},
    {"blocked_main", SIGSEGV, "crash_null_read", "main"},
    {"blocked_thread", SIGSEGV, "crash_thread_fault", "blocked_fault_thread"},
};

static int cmd_matrix(const char *exe, const char *name)
{
    const fault_case *c = NULL;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (!strcmp(cases[i].name, name))
            c = &cases[i];
    if (!c)
        die("unknown case %s", name);

    char marker[700];
    path_in(marker, sizeof marker, workdir, "marker");
    char env_marker[800], env_plugin[1200];
    snprintf(env_marker, sizeof env_marker, "FL_TEST_MARKER=%s", marker);
    snprintf(env_plugin, sizeof env_plugin, "FL_TEST_PLUGIN=%s", FL_TEST_PLUGIN);
    const char *env[] = {env_marker, env_plugin, NULL};
    char *argv[] = {(char *)exe, (char *)c->name, NULL};
    run_result r;
    run(argv, env, &r);
    check_ended_by(&r, c->sig);

    if (!strcmp(c->name, "fd_reuse")) {
        char *app = slurp(marker);
        CHECK(app && !strcmp(app, "APPDATA\n"),
              "the application's file (reusing our descriptor's number) was written to: %.60s",
              app ? app : "(missing)");
    }
    fl_crashlog *log = the_one_log(NULL, 0);
    if (log) {
        CHECK(log->has_crash_signal && log->crash_signal == c->sig, "CRASH_SIGNAL %d, expected %d",
              log->crash_signal, c->sig);
        CHECK(log->app_name && !strcmp(log->app_name, "crashme"), "APPLICATION_NAME %s",
              log->app_name ? log->app_name : "(none)");
        CHECK(log->ncallstack > 0, "no CALLSTACK lines");
        check_frame(log, c->func);
        if (c->caller)
            check_frame(log, c->caller);
        if (getenv("FL_TEST_VERBOSE"))
            print_frames(log, log->callstack, log->ncallstack);
        if (!strcmp(name, "hook_fault")) {
            CHECK(log->handler_fault == SIGSEGV, "HANDLER_FAULT %d, expected %d",
                  log->handler_fault, SIGSEGV);
            const char *v = fl_crashlog_etc(log, "BEFORE_FAULT");
            CHECK(v && !strcmp(v, "yes"), "the ETC pair written before the fault is missing");
        } else {
            CHECK(log->handler_fault == 0, "unexpected HANDLER_FAULT %d", log->handler_fault);
        }
        if (c->sig == SIGSEGV && strcmp(name, "rodata_write") && strcmp(name, "data_call") &&
            strncmp(name, "stack", 5))
            CHECK(log->has_crash_address && log->crash_address == 0,
                  "CRASH_ADDRESS should be 0 for a NULL access");
        if (!strncmp(name, "stack_overflow", 14)) {
            /* The stack pointer (and its red zone below) is in the guard
             * page: the raw stack starts at the first readable page above
             * it, and is still all there for the server's own unwind. */
            CHECK(stack_bytes(log) == 32768,
                  "%zu bytes of STACK on a stack overflow, expected 32768", stack_bytes(log));
        }
        if (!strcmp(name, "emfile"))
            CHECK(log->nthreads == 1, "%zu THREADs, expected the one other thread", log->nthreads);
        if (!strcmp(name, "many_threads")) {
            /* 300 threads: the log keeps 256 and says how many it left out. */
            CHECK(log->nthreads == 256 && log->threads_omitted == 300 - 256,
                  "%zu THREADs and THREADS_OMITTED %llu for 300 threads", log->nthreads,
                  (unsigned long long)log->threads_omitted);
        }
        /* glibc's own message of the abort (__abort_msg): assert()'s and
         * malloc's; none for a plain abort() or a fault. */
        const char *am = log->abort_message;
        if (!strcmp(name, "assert"))
            CHECK(am && strstr(am, "crash_assert: Assertion `one == 0' failed."),
                  "ABORT_MESSAGE %s", am ? am : "(none)");
        else if (!strcmp(name, "double_free"))
            CHECK(am && !strcmp(am, "free(): double free detected in tcache 2"), "ABORT_MESSAGE %s",
                  am ? am : "(none)");
        else
            CHECK(!am, "ABORT_MESSAGE %s for %s", am, name);
        if (!strcmp(name, "plugin_crash")) {
            bool found = false;
            for (size_t i = 0; i < log->nobjects; i++)
                found |= strstr(log->objects[i].name, "fl_test_plugin") != NULL;
            CHECK(found, "the dlopen()ed plugin is not among the OBJECT lines");
        }
        fl_crashlog_free(log);
    }
    if (!strncmp(name, "app_handler", 11))
        CHECK(file_exists(marker), "the application's own SIGSEGV handler did not run");
    return failures ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* Everything else the log should say, on one deep crash. */

static bool is_uuid(const char *s)
{
    if (!s || strlen(s) != 36)
        return false;
    for (int i = 0; i < 36; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !strchr("0123456789abcdef", s[i]))
            return false;
    }
    return s[14] == '4'; /* version 4 */
}

static const fl_object *object_named(const fl_crashlog *log, const char *substr)
{
    for (size_t i = 0; i < log->nobjects; i++)
        if (log->objects[i].path && strstr(log->objects[i].path, substr))
            return &log->objects[i];
    return NULL;
}

static size_t stack_bytes(const fl_crashlog *log)
{
    size_t n = 0;
    for (size_t i = 0; i < log->nstack; i++)
        n += log->stack[i].len;
    return n;
}

static const fl_register *reg(const fl_crashlog *log, const char *name)
{
    for (size_t i = 0; i < log->nregisters; i++)
        if (!strcmp(log->registers[i].name, name))
            return &log->registers[i];
    return NULL;
}

static void check_details(const fl_crashlog *log, const char *exe)
{
    CHECK(is_uuid(log->crash_id), "CRASH_ID '%s' is not a v4 UUID",
          log->crash_id ? log->crash_id : "(none)");
    CHECK(is_uuid(log->install_id), "INSTALL_ID '%s' is not a v4 UUID",
          log->install_id ? log->install_id : "(none)");
    CHECK(log->os_name && *log->os_name, "no OS_NAME");
    CHECK(log->kernel_version && *log->kernel_version, "no KERNEL_VERSION");
    /* The crash is on the main thread, whose name is the program's file
     * name as the kernel keeps it (at most 15 bytes). */
    {
        const char *b = strrchr(exe, '/');
        b = b ? b + 1 : exe;
        char want[16];
        size_t n = strlen(b) < 15 ? strlen(b) : 15;
        memcpy(want, b, n);
        want[n] = '\0';
        CHECK(log->crash_thread_name && !strcmp(log->crash_thread_name, want),
              "CRASH_THREAD_NAME '%s', want '%s'",
              log->crash_thread_name ? log->crash_thread_name : "(none)", want);
    }
    CHECK(log->platform_version && *log->platform_version, "no PLATFORM_VERSION");
    CHECK(log->has_crash_time && log->crash_time > 1600000000, "CRASH_TIME missing or absurd");
    CHECK(log->executable && !strcmp(log->executable, exe), "EXECUTABLE %s, expected %s",
          log->executable ? log->executable : "(none)", exe);
    CHECK(log->has_pid && log->pid > 0, "no PROCESS_ID");
    CHECK(log->has_crash_tid && log->crash_tid == log->pid,
          "CRASH_THREAD should be the main thread");
    CHECK(log->signal_name && !strcmp(log->signal_name, "SIGSEGV"), "CRASH_SIGNAL_NAME");
    CHECK(log->has_crash_code && log->crash_code == 1 /* SEGV_MAPERR */, "CRASH_CODE");
    const char *v = fl_crashlog_etc(log, "TEST_KEY");
    CHECK(v && !strcmp(v, "test value"), "the get_etc hook's pair is missing");

    /* Objects and build ids. */
    const fl_object *self = object_named(log, exe);
    const fl_object *libc = object_named(log, "libc.so");
    char want[130];
    CHECK(self != NULL, "the executable is not among the OBJECTs");
    if (self) {
        elf_build_id(exe, want, sizeof want);
        CHECK(want[0] && self->build_id && !strcmp(self->build_id, want),
              "executable OBJECT_BUILD_ID %s, file says %s", self->build_id ? self->build_id : "-",
              want);
    }
    CHECK(libc != NULL, "libc is not among the OBJECTs");
    if (libc) {
        elf_build_id(libc->path, want, sizeof want);
        CHECK(want[0] && libc->build_id && !strcmp(libc->build_id, want),
              "libc OBJECT_BUILD_ID %s, file says %s", libc->build_id ? libc->build_id : "-",
              want);
    }
    CHECK(object_named(log, "fl_test_plugin") != NULL,
          "the library dlopen()ed after install is not among the OBJECTs");
    /* And once more against binutils, when it is installed. */
    for (int i = 0; i < 2; i++) {
        const fl_object *o = i == 0 ? self : libc;
        char cmd[1200], out[256] = "", *hit;
        if (!o || !o->path || access("/usr/bin/readelf", X_OK) != 0)
            continue;
        snprintf(cmd, sizeof cmd, "/usr/bin/readelf -n '%s' 2>/dev/null", o->path);
        FILE *p = popen(cmd, "r");
        while (p && fgets(out, sizeof out, p))
            if ((hit = strstr(out, "Build ID: ")))
                break;
        if (p)
            pclose(p);
        hit = strstr(out, "Build ID: ");
        CHECK(hit && o->build_id && !strncmp(hit + 10, o->build_id, strlen(o->build_id)),
              "readelf -n %s disagrees with OBJECT_BUILD_ID %s", o->path,
              o->build_id ? o->build_id : "-");
    }

    /* Frames, registers, stack. */
    check_frame(log, "crash_null_read");
    check_frame(log, "crash_deep_stack");
    check_frame(log, "main");
    const fl_register *pc = reg(log, "rip"), *sp = reg(log, "rsp");
    CHECK(pc && sp, "REGISTER rip / rsp missing (%zu registers)", log->nregisters);
    if (pc && log->ncallstack)
        CHECK(pc->value == log->callstack[0], "REGISTER rip differs from the first frame");
    CHECK(log->nstack > 0, "no STACK lines");
    if (sp && log->nstack) {
        CHECK(log->stack[0].addr <= sp->value && sp->value - log->stack[0].addr <= 256,
              "STACK does not start at the stack pointer");
        for (size_t i = 1; i < log->nstack; i++)
            CHECK(log->stack[i].addr == log->stack[i - 1].addr + log->stack[i - 1].len,
                  "STACK chunk %zu is not contiguous", i);
    }

    /* The other threads: one from before install, two from after, all
     * parked in thread_idle_loop. */
    CHECK(log->nthreads >= 3, "%zu THREAD lines, expected at least 3", log->nthreads);
    size_t idle = 0;
    for (size_t i = 0; i < log->nthreads; i++) {
        const fl_thread *t = &log->threads[i];
        CHECK(t->nframes > 0, "THREAD %llu has no THREAD_FRAME", (unsigned long long)t->tid);
        CHECK(t->tid != log->crash_tid, "the crashing thread is listed as another THREAD");
        if (frames_have(log, t->frames, t->nframes, "thread_idle_loop"))
            idle++;
    }
    CHECK(idle >= 3, "only %zu threads unwound into thread_idle_loop", idle);
    if (idle < 3)
        for (size_t i = 0; i < log->nthreads; i++) {
            fprintf(stderr, " thread %llu:\n", (unsigned long long)log->threads[i].tid);
            print_frames(log, log->threads[i].frames, log->threads[i].nframes);
        }
}

static int cmd_details(const char *exe)
{
    char env_plugin[1200];
    snprintf(env_plugin, sizeof env_plugin, "FL_TEST_PLUGIN=%s", FL_TEST_PLUGIN);
    const char *env[] = {env_plugin, NULL};
    char *argv[] = {(char *)exe, (char *)"details", NULL};
    char real_exe[PATH_MAX];
    if (!realpath(exe, real_exe))
        die("realpath %s", exe);

    /* First crash: the default 32 KiB of stack. */
    run_result r;
    run(argv, env, &r);
    check_ended_by(&r, SIGSEGV);
    char first_path[1000];
    fl_crashlog *a = the_one_log(first_path, sizeof first_path);
    if (!a)
        return 1;
    check_details(a, real_exe);
    CHECK(stack_bytes(a) == 32768, "%zu bytes of STACK, expected 32768 by default",
          stack_bytes(a));

    /* Second crash in the same spool: a new crash id, the same install id
     * (the one kept in the spool), and FAULTLINE_STACK_BYTES obeyed. */
    char keep[1100];
    snprintf(keep, sizeof keep, "%s.first", first_path);
    rename(first_path, keep); /* out of the way of the_one_log() */
    const char *env2[] = {env_plugin, "FAULTLINE_STACK_BYTES=8192", NULL};
    run(argv, env2, &r);
    check_ended_by(&r, SIGSEGV);
    fl_crashlog *b = the_one_log(NULL, 0);
    if (b) {
        CHECK(stack_bytes(b) == 8192, "%zu bytes of STACK with FAULTLINE_STACK_BYTES=8192",
              stack_bytes(b));
        CHECK(a->install_id && b->install_id && !strcmp(a->install_id, b->install_id),
              "INSTALL_ID changed between two crashes in one spool: %s / %s",
              a->install_id ? a->install_id : "-", b->install_id ? b->install_id : "-");
        CHECK(a->crash_id && b->crash_id && strcmp(a->crash_id, b->crash_id),
              "two crashes share CRASH_ID %s", a->crash_id ? a->crash_id : "-");
        char idpath[800], id[64] = "";
        path_in(idpath, sizeof idpath, spool, "installation-id");
        FILE *f = fopen(idpath, "r");
        if (f) {
            if (!fgets(id, sizeof id, f))
                id[0] = '\0';
            fclose(f);
        }
        id[strcspn(id, "\n")] = '\0';
        CHECK(b->install_id && !strcmp(id, b->install_id),
              "INSTALL_ID %s is not the spool's installation-id %s",
              b->install_id ? b->install_id : "-", id);
        fl_crashlog_free(b);
    }
    fl_crashlog_free(a);
    return failures ? 1 : 0;
}

/* ------------------------------------------------------------------ */

static int cmd_nomalloc(const char *exe)
{
    char marker[700], env_marker[800], env_plugin[1200];
    path_in(marker, sizeof marker, workdir, "heap-used");
    snprintf(env_marker, sizeof env_marker, "FL_TEST_MARKER=%s", marker);
    snprintf(env_plugin, sizeof env_plugin, "FL_TEST_PLUGIN=%s", FL_TEST_PLUGIN);
    /* FAULTLINE_FSYNC and the reporter: the longest path through the
     * handler, with every thread dumped and a late library to add. */
    const char *env[] = {env_marker, env_plugin, "FAULTLINE_FSYNC=1",
                         "FAULTLINE_REPORTER=/bin/true", NULL};
    run_result r;

    /* First the check itself: a hook that allocates must be caught. */
    char *self_test[] = {(char *)exe, (char *)"nomalloc_selftest", NULL};
    run(self_test, env, &r);
    CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 99 && file_exists(marker),
          "self-test: a malloc() in a hook went unnoticed (%s)", describe(r.status));
    unlink(marker);
    remove_logs(); /* the self-test's unfinished log */

    char *argv[] = {(char *)exe, (char *)"nomalloc", NULL};
    run(argv, env, &r);
    char what[64] = "";
    FILE *f = fopen(marker, "r");
    if (f) {
        if (!fgets(what, sizeof what, f))
            what[0] = '\0';
        fclose(f);
    }
    CHECK(!file_exists(marker), "the crash handler called %s()", what);
    CHECK(!(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 99), "heap use after the fault");
    check_ended_by(&r, SIGSEGV);
    fl_crashlog *log = the_one_log(NULL, 0);
    if (log) {
        CHECK(log->nthreads >= 3, "%zu THREAD lines", log->nthreads);
        CHECK(log->nstack > 0, "no STACK lines");
        check_frame(log, "crash_null_read");
        fl_crashlog_free(log);
    }
    return failures ? 1 : 0;
}

/* ------------------------------------------------------------------ */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    static char buf[512 * 1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static int cmd_mojo(const char *exe)
{
    char out[700], env_out[800];
    path_in(out, sizeof out, workdir, "mojo.out");
    snprintf(env_out, sizeof env_out, "FL_TEST_OUT=%s", out);
    const char *env[] = {env_out, NULL};

    /* Every hook, in MojoCrash's order, each once. */
    char *argv[] = {(char *)exe, (char *)"order", NULL};
    run_result r;
    run(argv, env, &r);
    CHECK(!r.timed_out && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 42,
          "the die hook did not end the process: %s", describe(r.status));
    char *text = slurp(out);
    CHECK(text != NULL, "the die hook wrote nothing");
    if (text) {
        const char *want = "preflight start_crashlog get_objects get_callstack get_etc "
                           "end_crashlog postflight die sig=11 count=1\n";
        CHECK(!strncmp(text, want, strlen(want)), "hook order:\n  got  %.*s  want %s",
              (int)strcspn(text, "\n") + 1, text, want);
        /* The lines handed to new_crashlog_line form a valid log. */
        const char *lines = strchr(text, '\n');
        fl_crashlog *log = NULL;
        fl_crashlog_error err;
        int rc = lines ? fl_crashlog_parse(lines + 1, strlen(lines + 1), &log, &err) : -1;
        CHECK(rc == 0, "the collected lines do not parse: line %u: %s", err.line, err.message);
        if (rc == 0) {
            CHECK(log->app_name && !strcmp(log->app_name, "MojoApp"), "APPLICATION_NAME");
            CHECK(log->app_version && !strcmp(log->app_version, "1.0"), "APPLICATION_VERSION");
            CHECK(log->has_crash_signal && log->crash_signal == SIGSEGV, "CRASH_SIGNAL");
            const char *v = fl_crashlog_etc(log, "GL_VERSION");
            CHECK(v && !strcmp(v, "2.1.1 NVIDIA 100.14.19"), "ETC GL_VERSION");
            v = fl_crashlog_etc(log, "LEVEL");
            CHECK(v && !strcmp(v, "e1m1"), "ETC LEVEL");
            CHECK(log->ncallstack == 2 && log->callstack[0] == 0x10123 &&
                      log->callstack[1] == 0x10456,
                  "CALLSTACK is not what get_callstack reported");
            CHECK(log->nobjects == 1 && !strcmp(log->objects[0].name, "libgame.so") &&
                      log->objects[0].base == 0x10000 && log->objects[0].size == 0x2000 &&
                      !log->objects[0].has_bias,
                  "OBJECT is not what get_objects reported (3-field MojoCrash callback)");
            fl_crashlog_free(log);
        }
    }
    spool_state s;
    scan_spool(&s);
    CHECK(s.logs == 0 && s.tmps == 0, "custom log hooks, yet files in the spool");

    /* A preflight that returns 0: nothing but die(). */
    unlink(out);
    char *argv0[] = {(char *)exe, (char *)"preflight0", NULL};
    run(argv0, env, &r);
    CHECK(!r.timed_out && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 42,
          "the die hook did not end the process: %s", describe(r.status));
    text = slurp(out);
    CHECK(text && !strcmp(text, "preflight die sig=11 count=1\n"),
          "preflight returning 0 should go straight to die; got: %s", text ? text : "(nothing)");
    return failures ? 1 : 0;
}

/* ------------------------------------------------------------------ */

static void check_no_log(const char *what)
{
    spool_state s;
    scan_spool(&s);
    CHECK(s.logs == 0, "%s: %d *.crashlog left behind", what, s.logs);
    CHECK(s.tmps == 0, "%s: %d temporary file(s) left behind", what, s.tmps);
}

static int cmd_efbig(const char *exe)
{
    /* SIGXFSZ ignored by the program, then left at its default: the
     * process still ends with its own signal, not SIGXFSZ. */
    static const char *const modes[] = {"efbig", "efbig_sigxfsz"};
    for (size_t i = 0; i < 2; i++) {
        char *argv[] = {(char *)exe, (char *)modes[i], NULL};
        run_result r;
        run(argv, NULL, &r);
        check_ended_by(&r, SIGSEGV);
        check_no_log(modes[i]);
    }
    return failures ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* How the process ends, seen by a tracer: a fault the CPU raised must be
 * what kills the process -- the same signal, code and address at the
 * same instruction as the first time -- not a re-raise from the handler
 * (SI_TKILL, no address), so that a core dump shows the crash. */

typedef struct fault_stop {
    int sig, code;
    uintptr_t addr;
} fault_stop;

/* Runs argv traced; records every signal-delivery stop of the signals
 * below and passes each signal on.  0, or 77 if tracing is refused. */
static int traced_run(char *const argv[], const char *const *env, fault_stop *stops, int cap,
                      int *nstops, run_result *r)
{
    memset(r, 0, sizeof *r);
    *nstops = 0;
    int64_t t0 = now_ms();
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        child_env(env);
        if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0)
            _exit(126);
        execv(argv[0], argv);
        _exit(127);
    }
    bool exec_seen = false;
    for (;;) {
        int st;
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == 0) {
            if (killed_late(pid, t0, r))
                break;
            continue;
        }
        if (w != pid)
            die("waitpid: %s", strerror(errno));
        if (!WIFSTOPPED(st)) {
            r->status = st;
            break;
        }
        int sig = WSTOPSIG(st);
        if (sig == SIGTRAP && !exec_seen) {
            exec_seen = true; /* the stop at execve() */
            sig = 0;
        } else if (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE ||
                   sig == SIGABRT) {
            siginfo_t si;
            if (ptrace(PTRACE_GETSIGINFO, pid, NULL, &si) == 0 && *nstops < cap)
                stops[(*nstops)++] = (fault_stop){sig, si.si_code, (uintptr_t)si.si_addr};
        }
        ptrace(PTRACE_CONT, pid, NULL, (void *)(uintptr_t)sig);
    }
    r->ms = now_ms() - t0;
    if (WIFEXITED(r->status) && WEXITSTATUS(r->status) == 126)
        return 77;
    return 0;
}

static int cmd_refault(const char *exe)
{
    static const struct {
        const char *mode;
        int sig;
        bool refaults; /* else re-raised: not a fault, or a handler of the program's ran */
    } rcases[] = {
        {"null_read", SIGSEGV, true}, {"divzero", SIGFPE, true}, {"trap", SIGILL, true},
        {"sigbus", SIGBUS, true},     {"abort", SIGABRT, false}, {"app_handler", SIGSEGV, false},
    };
    char marker[700], env_marker[800];
    path_in(marker, sizeof marker, workdir, "marker");
    snprintf(env_marker, sizeof env_marker, "FL_TEST_MARKER=%s", marker);
    const char *env[] = {env_marker, NULL};
    for (size_t i = 0; i < sizeof rcases / sizeof rcases[0]; i++) {
        char *argv[] = {(char *)exe, (char *)rcases[i].mode, NULL};
        fault_stop st[16];
        int n;
        run_result r;
        remove_logs();
        if (traced_run(argv, env, st, 16, &n, &r) == 77) {
            fprintf(stderr, "SKIP: ptrace(PTRACE_TRACEME) refused here\n");
            return 77;
        }
        check_ended_by(&r, rcases[i].sig);
        fl_crashlog *log = the_one_log(NULL, 0);
        fl_crashlog_free(log);
        CHECK(n >= 2, "%s: %d signal stops, expected the crash and the end", rcases[i].mode, n);
        if (n < 2)
            continue;
        const fault_stop *a = &st[0], *z = &st[n - 1];
        CHECK(a->sig == rcases[i].sig && z->sig == rcases[i].sig, "%s: signals %d ... %d",
              rcases[i].mode, a->sig, z->sig);
        if (rcases[i].refaults)
            CHECK(a->code > 0 && z->code == a->code && z->addr == a->addr,
                  "%s: the crash was code %d at %#lx, the end code %d at %#lx: re-raised, not "
                  "the fault itself",
                  rcases[i].mode, a->code, (unsigned long)a->addr, z->code, (unsigned long)z->addr);
        else
            CHECK(z->code == SI_TKILL, "%s: ended by code %d, expected a re-raise (SI_TKILL)",
                  rcases[i].mode, z->code);
    }
    return failures ? 1 : 0;
}

/* The other threads are stopped before anything of the log is written:
 * a thread woken by the first hook after the header (get_objects) and
 * then calling exit_group(3) must be parked already. */
static int cmd_exit_early(const char *exe)
{
    char *argv[] = {(char *)exe, (char *)"exit_early", NULL};
    run_result r;
    run(argv, NULL, &r);
    check_ended_by(&r, SIGSEGV);
    fl_crashlog *log = the_one_log(NULL, 0);
    if (log)
        CHECK(log->nthreads == 1, "%zu THREADs, expected the woken one", log->nthreads);
    fl_crashlog_free(log);
    return failures ? 1 : 0;
}

static int cmd_dlclose(const char *exe)
{
    char env_plugin[1200];
    snprintf(env_plugin, sizeof env_plugin, "FL_TEST_PLUGIN=%s", FL_TEST_PLUGIN);
    const char *env[] = {env_plugin, NULL};
    char *argv[] = {(char *)exe, (char *)"dlclose", NULL};
    run_result r;
    run(argv, env, &r);
    check_ended_by(&r, SIGSEGV);
    fl_crashlog *log = the_one_log(NULL, 0);
    if (log) {
        CHECK(object_named(log, "fl_test_plugin") == NULL,
              "a library dlclose()d before the crash is still among the OBJECTs");
        CHECK(object_named(log, "libc.so") != NULL, "libc is missing from the OBJECTs");
        check_frame(log, "crash_null_read");
        fl_crashlog_free(log);
    }
    return failures ? 1 : 0;
}

/* Runs argv to its end; true when it exited with 0. */
static bool run_tool(char *const argv[])
{
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        execvp(argv[0], argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int st;
    return waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void copy_file(const char *from, const char *to)
{
    char buf[65536];
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    ssize_t n = 0;
    while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)n) != n)
            n = -1;
    if (in < 0 || out < 0 || n < 0 || close(out) != 0)
        die("copy %s to %s: %s", from, to, strerror(errno));
    close(in);
}

/* dir/o0.so .. o<n-1>.so: one small library, built once by the compiler
 * that built the tests, copied: each copy is another file, which the
 * dynamic linker loads again. */
static void make_objects(const char *dir, int n)
{
    char src[PATH_MAX], so[PATH_MAX], to[PATH_MAX + 16];
    if (mkdir(dir, 0700) != 0)
        die("mkdir %s: %s", dir, strerror(errno));
    if (snprintf(src, sizeof src, "%s/o.c", dir) >= (int)sizeof src ||
        snprintf(so, sizeof so, "%s/o.so", dir) >= (int)sizeof so)
        die("%s: too long", dir);
    FILE *f = fopen(src, "w");
    if (!f || fputs("int fl_test_object(int x) { return x + 1; }\n", f) < 0 || fclose(f) != 0)
        die("write %s", src);
    char *cc[] = {(char *)FL_TEST_CC,
                  (char *)"-shared",
                  (char *)"-fPIC",
                  (char *)"-O1",
                  (char *)"-Wl,--build-id",
                  (char *)"-o",
                  so,
                  src,
                  NULL};
    if (!run_tool(cc))
        die("%s could not build %s", FL_TEST_CC, so);
    for (int i = 0; i < n; i++) {
        snprintf(to, sizeof to, "%s/o%d.so", dir, i);
        copy_file(so, to);
    }
}

/* A program with more loaded objects than a log keeps (1024) says how
 * many it left out (OBJECTS_OMITTED), so that frames in no object are
 * explained; the table made at install is full, and the crash finds the
 * rest in the dynamic linker's list.  Unloaded objects give their room
 * to the ones left out. */
static int cmd_many_objects(const char *exe)
{
    static const struct {
        const char *before, *after, *unload;
    } runs[] = {{"1040", "20", "0"}, {"1040", "0", "40"}};
    char dir[1024], env_dir[1100];
    path_in(dir, sizeof dir, workdir, "objects");
    make_objects(dir, 1060);
    snprintf(env_dir, sizeof env_dir, "FL_TEST_OBJDIR=%s", dir);
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
        char before[64], after[64], unload[64];
        snprintf(before, sizeof before, "FL_TEST_OBJS_BEFORE=%s", runs[k].before);
        snprintf(after, sizeof after, "FL_TEST_OBJS_AFTER=%s", runs[k].after);
        snprintf(unload, sizeof unload, "FL_TEST_OBJS_CLOSE=%s", runs[k].unload);
        const char *env[] = {env_dir, before, after, unload, NULL};
        char *argv[] = {(char *)exe, (char *)"many_objects", NULL};
        run_result r;
        run(argv, env, &r);
        /* Not check_ended_by: loading a thousand libraries is no part of
         * the crash, and may take longer than its deadline. */
        CHECK(!r.timed_out && WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGSEGV,
              "run %zu: expected SIGSEGV, got %s", k, describe(r.status));
        int loaded = atoi(r.out);
        fl_crashlog *log = the_one_log(NULL, 0);
        if (log) {
            if (k == 0) {
                CHECK(log->nobjects == 1024, "run 0: %zu OBJECTs, expected 1024", log->nobjects);
                CHECK(log->objects_omitted > 0 &&
                          log->nobjects + log->objects_omitted == (uint64_t)loaded,
                      "run 0: %zu OBJECTs and OBJECTS_OMITTED %llu, %d objects loaded",
                      log->nobjects, (unsigned long long)log->objects_omitted, loaded);
            } else {
                CHECK(loaded <= 1024 && log->nobjects == (size_t)loaded &&
                          log->objects_omitted == 0,
                      "run 1: %zu OBJECTs and OBJECTS_OMITTED %llu, %d objects loaded (after "
                      "40 dlclose()s all fit)",
                      log->nobjects, (unsigned long long)log->objects_omitted, loaded);
            }
            check_frame(log, "crash_null_read");
            fl_crashlog_free(log);
        }
        remove_logs();
    }
    return failures ? 1 : 0;
}

/* A library whose path is longer than a log keeps (1023 bytes): its
 * OBJECT_PATH is the path's end, from a '/', with OBJECT_PATH_CUT saying
 * how many bytes are left out before it, and the OBJECT's name is still
 * the file's.  Loaded after install (its name read by the crash handler
 * from the dynamic linker's list) and before it (from dl_iterate_phdr). */
static int cmd_long_path(const char *exe)
{
    char dir[2048], lib[2200], env_plugin[2300];
    const char *base = strrchr(FL_TEST_PLUGIN, '/');
    if (!base)
        die("FL_TEST_PLUGIN %s is not a path", FL_TEST_PLUGIN);
    snprintf(dir, sizeof dir, "%s", workdir);
    for (int i = 0; i < 6; i++) {
        size_t n = strlen(dir);
        dir[n++] = '/';
        memset(dir + n, 'a' + i, 200);
        dir[n + 200] = '\0';
        if (mkdir(dir, 0700) != 0)
            die("mkdir %s: %s", dir, strerror(errno));
    }
    snprintf(lib, sizeof lib, "%s%s", dir, base);
    copy_file(FL_TEST_PLUGIN, lib);
    snprintf(env_plugin, sizeof env_plugin, "FL_TEST_PLUGIN=%s", lib);
    const char *modes[] = {"plugin_crash", "plugin_crash_early"};
    for (size_t k = 0; k < 2; k++) {
        const char *env[] = {env_plugin, NULL};
        char *argv[] = {(char *)exe, (char *)modes[k], NULL};
        run_result r;
        run(argv, env, &r);
        check_ended_by(&r, SIGSEGV);
        fl_crashlog *log = the_one_log(NULL, 0);
        const fl_object *o = NULL;
        for (size_t i = 0; log && i < log->nobjects && !o; i++)
            if (log->objects[i].name && !strcmp(log->objects[i].name, base + 1))
                o = &log->objects[i];
        if (log) {
            CHECK(o != NULL, "%s: no OBJECT named %s", modes[k], base + 1);
            size_t len = strlen(lib);
            CHECK(!o ||
                      (o->path && o->path[0] == '/' && strlen(o->path) <= 1023 && o->path_cut > 0 &&
                       o->path_cut + strlen(o->path) == len && !strcmp(o->path, lib + o->path_cut)),
                  "%s: OBJECT_PATH %s, OBJECT_PATH_CUT %llu; expected the end of %s (%zu bytes)",
                  modes[k], o && o->path ? o->path : "-",
                  o ? (unsigned long long)o->path_cut : 0ull, lib, len);
            uint64_t pc = log->ncallstack ? log->callstack[0] : 0;
            CHECK(o && pc >= o->base && pc - o->base < o->size,
                  "%s: the faulting pc 0x%llx is not in the library's OBJECT", modes[k],
                  (unsigned long long)pc);
            for (size_t i = 0; i < log->nobjects; i++)
                CHECK(log->objects[i].path_cut == 0 || &log->objects[i] == o,
                      "%s: OBJECT_PATH_CUT on %s too", modes[k], log->objects[i].name);
            fl_crashlog_free(log);
        }
        remove_logs();
    }
    return failures ? 1 : 0;
}

/* dlopen("./plugin.so") leaves the name relative in the dynamic linker's
 * list: OBJECT_PATH is still the full path, so that a server on the same
 * machine (or `faultline decode`) can open the file. */
static int cmd_relative_plugin(const char *exe)
{
    char dir[1200], want[PATH_MAX + 64], env_plugin[1200];
    snprintf(dir, sizeof dir, "%s", FL_TEST_PLUGIN);
    char *slash = strrchr(dir, '/');
    if (!slash)
        die("FL_TEST_PLUGIN %s is not a path", FL_TEST_PLUGIN);
    *slash = '\0';
    if (chdir(dir) != 0 || !getcwd(want, PATH_MAX))
        die("chdir %s: %s", dir, strerror(errno));
    snprintf(want + strlen(want), sizeof want - strlen(want), "/%s", slash + 1);
    snprintf(env_plugin, sizeof env_plugin, "FL_TEST_PLUGIN=./%s", slash + 1);
    const char *env[] = {env_plugin, NULL};
    char *argv[] = {(char *)exe, (char *)"plugin_crash", NULL};
    run_result r;
    run(argv, env, &r);
    check_ended_by(&r, SIGSEGV);
    fl_crashlog *log = the_one_log(NULL, 0);
    if (log) {
        const fl_object *o = object_named(log, slash + 1);
        CHECK(o != NULL, "the plugin dlopen()ed as ./%s is not among the OBJECTs", slash + 1);
        CHECK(!o || !strcmp(o->path, want), "OBJECT_PATH %s, expected %s", o ? o->path : "",
              want);
        check_frame(log, "plugin_crash_here");
        fl_crashlog_free(log);
    }
    return failures ? 1 : 0;
}

static int cmd_spool_gone(const char *exe)
{
    char *argv[] = {(char *)exe, (char *)"spool_gone", NULL};
    run_result r;
    run(argv, NULL, &r);
    check_ended_by(&r, SIGSEGV);
    CHECK(!file_exists(spool), "the spool was removed, yet it exists again");
    return failures ? 1 : 0;
}

static int cmd_tmpfs(const char *exe)
{
    /* A 16 KiB file system: the spool set-up fits, a log does not. */
    if (mount("fl-test", spool, "tmpfs", MS_NOSUID | MS_NODEV, "size=16k,mode=0700") != 0) {
        printf("SKIP: cannot mount a tmpfs on the spool (%s); needs root\n", strerror(errno));
        return 77;
    }
    /* The details mode keeps 32 KiB of stack in the log, so the log is
     * always several times larger than the file system. */
    char env_plugin[1200];
    snprintf(env_plugin, sizeof env_plugin, "FL_TEST_PLUGIN=%s", FL_TEST_PLUGIN);
    const char *env[] = {env_plugin, NULL};
    char *argv[] = {(char *)exe, (char *)"details", NULL};
    run_result r;
    run(argv, env, &r);
    check_ended_by(&r, SIGSEGV);
    check_no_log("a full spool file system");
    umount2(spool, MNT_DETACH);
    return failures ? 1 : 0;
}

static int cmd_pending(const char *exe)
{
    char *count[] = {(char *)exe, (char *)"pending", NULL};
    char *crash[] = {(char *)exe, (char *)"null_read", NULL};
    run_result r;
    run(count, NULL, &r);
    CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0 && !strcmp(r.out, "0\n"),
          "a fresh spool should have 0 pending logs, got '%s'", r.out);
    for (int want = 1; want <= 2; want++) {
        run(crash, NULL, &r);
        check_ended_by(&r, SIGSEGV);
        run(count, NULL, &r);
        char exp[8];
        snprintf(exp, sizeof exp, "%d\n", want);
        CHECK(WIFEXITED(r.status) && !strcmp(r.out, exp), "after %d crash(es): pending '%s'",
              want, r.out);
    }
    /* Counted when first asked: 2 earlier logs + 1 made after install,
     * then the same number again after one more. */
    char *late[] = {(char *)exe, (char *)"pending_late", NULL};
    run(late, NULL, &r);
    CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0 && !strcmp(r.out, "3 3 \n"),
          "pending counted at install, or counted again: '%s'", r.out);
    return failures ? 1 : 0;
}

/* A fake finished log (any content: the bound reads names and ages only)
 * aged age_s seconds, and whether a file exists in the spool. */
static void fake_log(const char *name, int age_s)
{
    char p[1000];
    path_in(p, sizeof p, spool, name);
    FILE *f = fopen(p, "w");
    if (!f || fputs("FAULTLINE 0.1.0\nEND\n", f) < 0 || fclose(f))
        die("cannot write %s", p);
    struct timespec ts[2];
    clock_gettime(CLOCK_REALTIME, &ts[0]);
    ts[0].tv_sec -= age_s;
    ts[1] = ts[0];
    if (utimensat(AT_FDCWD, p, ts, 0))
        die("utimensat %s: %s", p, strerror(errno));
}

static bool in_spool(const char *name)
{
    char p[1000];
    struct stat sb;
    path_in(p, sizeof p, spool, name);
    return lstat(p, &sb) == 0;
}

static int count_spool_logs(void)
{
    spool_state s;
    scan_spool(&s);
    return s.logs;
}

/* FAULTLINE_SPOOL_MAX: after a crash the spool keeps at most that many
 * finished logs, the newest; the oldest go (at most 8 a crash), of any
 * program, and nothing else: not the new log, temporary files, a link, a
 * directory, a name too long to be a log.  0 keeps all; unset, 100. */
static int cmd_spool_max(const char *exe)
{
    char *crash[] = {(char *)exe, (char *)"null_read", NULL};
    run_result r;
    char name[64], p[1000], target[1000];
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "old-%d.crashlog", i);
        fake_log(name, 1000 - i); /* old-0 the oldest */
    }
    /* Not logs, or not ours to delete. */
    fake_log(".hidden.crashlog", 5000);
    fake_log(".partial.tmp", 5000);
    fake_log("notes.txt", 5000);
    fake_log("x1234567890123456789012345678901234567890123456789012345678901234567890123"
             "456789.crashlog",
             5000); /* 89 bytes: longer than any log's name */
    path_in(p, sizeof p, spool, "dir.crashlog");
    if (mkdir(p, 0700))
        die("mkdir %s", p);
    path_in(target, sizeof target, workdir, "target.crashlog");
    FILE *t = fopen(target, "w");
    if (!t || fclose(t))
        die("cannot write %s", target);
    path_in(p, sizeof p, spool, "link.crashlog");
    if (symlink(target, p))
        die("symlink %s", p);
    const char *env3[] = {"FAULTLINE_SPOOL_MAX=3", NULL};
    run(crash, env3, &r);
    check_ended_by(&r, SIGSEGV);
    CHECK(count_spool_logs() == 3 + 1 + 1 + 1, "FAULTLINE_SPOOL_MAX=3: %d files named *.crashlog",
          count_spool_logs()); /* 3 logs, the long name, the link, the directory */
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "old-%d.crashlog", i);
        CHECK(in_spool(name) == (i >= 3), "FAULTLINE_SPOOL_MAX=3: %s %s", name,
              i >= 3 ? "deleted (one of the newest)" : "kept (one of the oldest)");
    }
    const char *keep[] = {".hidden.crashlog",
                          ".partial.tmp",
                          "notes.txt",
                          "dir.crashlog",
                          "link.crashlog",
                          "x1234567890123456789012345678901234567890123456789012345678901234567890"
                          "123456789.crashlog"};
    for (size_t i = 0; i < sizeof keep / sizeof *keep; i++)
        CHECK(in_spool(keep[i]), "FAULTLINE_SPOOL_MAX=3: %s was deleted", keep[i]);
    CHECK(file_exists(target), "the link's target was deleted");
    /* 0: no bound. */
    const char *env0[] = {"FAULTLINE_SPOOL_MAX=0", NULL};
    run(crash, env0, &r);
    check_ended_by(&r, SIGSEGV);
    CHECK(in_spool("old-3.crashlog") && in_spool("old-4.crashlog") && count_spool_logs() == 7,
          "FAULTLINE_SPOOL_MAX=0 deleted logs: %d left", count_spool_logs());
    /* A bound far below the spool: 8 go a crash, the oldest. */
    for (int i = 0; i < 20; i++) {
        snprintf(name, sizeof name, "many-%02d.crashlog", i);
        fake_log(name, 3000 - i);
    }
    const char *env2[] = {"FAULTLINE_SPOOL_MAX=2", NULL};
    run(crash, env2, &r);
    check_ended_by(&r, SIGSEGV);
    for (int i = 0; i < 20; i++) {
        snprintf(name, sizeof name, "many-%02d.crashlog", i);
        CHECK(in_spool(name) == (i >= 8), "FAULTLINE_SPOOL_MAX=2 on 28 logs: %s %s", name,
              i >= 8 ? "deleted (not among the 8 oldest)" : "kept (among the 8 oldest)");
    }
    CHECK(count_spool_logs() == 20 + 7 + 1 - 8, "FAULTLINE_SPOOL_MAX=2 on 28 logs: %d left",
          count_spool_logs());
    /* Unset: 100.  100 logs; the crash makes 101, and the oldest goes. */
    remove_logs(); /* every name with .crashlog, the directory aside */
    for (int i = 0; i < 100; i++) {
        snprintf(name, sizeof name, "full-%03d.crashlog", i);
        fake_log(name, 2000 - i);
    }
    run(crash, NULL, &r);
    check_ended_by(&r, SIGSEGV);
    CHECK(!in_spool("full-000.crashlog") && in_spool("full-001.crashlog"),
          "default bound: the oldest of 101 logs should go, and only it");
    CHECK(count_spool_logs() == 100 + 1, "default bound: %d files named *.crashlog",
          count_spool_logs()); /* 100 logs, the directory */
    return failures ? 1 : 0;
}

static int cmd_reporter(const char *exe)
{
    char script[700], marker[700], env_rep[800];
    path_in(script, sizeof script, workdir, "reporter.sh");
    path_in(marker, sizeof marker, workdir, "reporter.out");
    FILE *f = fopen(script, "w");
    if (!f)
        die("cannot write %s", script);
    /* Records its arguments, the logs it can see and where its standard
     * descriptors lead, writes a line to each of stdout and stderr, then
     * publishes the marker atomically. */
    fprintf(f,
            "#!/bin/sh\n"
            /* The mask first, with builtins: dash blocks every signal
             * around each fork it makes. */
            "while read -r k v; do case $k in SigBlk:) blk=$v;; SigIgn:) ign=$v;; esac; "
            "done </proc/$$/status\n"
            "in=$(readlink /proc/$$/fd/0) out=$(readlink /proc/$$/fd/1) "
            "err=$(readlink /proc/$$/fd/2)\n"
            "echo to-stdout; echo to-stderr >&2\n"
            "{ echo \"args: $*\"; ls \"$2\"; echo \"fd0 $in\"; echo \"fd1 $out\"; "
            "echo \"fd2 $err\"; echo \"SigBlk: $blk\"; echo \"SigIgn: $ign\"; } > '%s.tmp' && "
            "mv '%s.tmp' '%s'\n",
            marker, marker, marker);
    fclose(f);
    chmod(script, 0755);
    snprintf(env_rep, sizeof env_rep, "FAULTLINE_REPORTER=%s", script);
    const char *env[] = {env_rep, NULL};
    char *argv[] = {(char *)exe, (char *)"null_read", NULL};
    run_result r;
    run(argv, env, &r);
    check_ended_by(&r, SIGSEGV);
    int64_t t0 = now_ms();
    while (!file_exists(marker) && now_ms() - t0 < 5000)
        usleep(10000);
    char *text = slurp(marker);
    CHECK(text != NULL, "FAULTLINE_REPORTER did not run (no marker after 5 s)");
    if (text) {
        char want[800];
        snprintf(want, sizeof want, "args: --spool %s\n", spool);
        CHECK(!strncmp(text, want, strlen(want)), "reporter arguments: %s", text);
        CHECK(strstr(text, ".crashlog") != NULL,
              "the finished log was not in the spool when the reporter started:\n%s", text);
        /* Not the crashed program's terminal or pipes (its stdout here is
         * run()'s pipe): /dev/null in, SPOOL/reporter.log out. */
        char rlog[800], want_out[1700];
        path_in(rlog, sizeof rlog, spool, "reporter.log");
        CHECK(strstr(text, "fd0 /dev/null\n") != NULL, "the reporter's stdin:\n%s", text);
        snprintf(want_out, sizeof want_out, "fd1 %s\nfd2 %s\n", rlog, rlog);
        CHECK(strstr(text, want_out) != NULL, "the reporter's stdout/stderr:\n%s", text);
        /* Started with no signal blocked: not the crashed thread's mask,
         * which holds all but the faults while the log is written. */
        CHECK(strstr(text, "SigBlk: 0000000000000000\n") != NULL, "the reporter's mask:\n%s", text);
        /* Nor SIGXFSZ ignored, as it is in the handler while it writes. */
        const char *ign = strstr(text, "SigIgn: ");
        CHECK(ign && !(strtoull(ign + 8, NULL, 16) >> (SIGXFSZ - 1) & 1),
              "the reporter starts with SIGXFSZ ignored:\n%s", text);
        char *said = slurp(rlog);
        CHECK(said && !strcmp(said, "to-stdout\nto-stderr\n"), "reporter.log holds '%s'",
              said ? said : "(missing)");
    }
    CHECK(strstr(r.out, "to-stdout") == NULL, "the reporter wrote into the program's stdout");
    fl_crashlog *log = the_one_log(NULL, 0);
    fl_crashlog_free(log);

    /* A relative FAULTLINE_REPORTER is taken from the directory at
     * install: the program crashes after a chdir() elsewhere. */
    unlink(marker);
    char *rel[] = {(char *)exe, (char *)"relative_reporter", NULL};
    run(rel, env, &r);
    check_ended_by(&r, SIGSEGV);
    t0 = now_ms();
    while (!file_exists(marker) && now_ms() - t0 < 5000)
        usleep(10000);
    CHECK(file_exists(marker), "a relative FAULTLINE_REPORTER did not run after a chdir()");

    /* SPOOL/reporter.log as a symlink is not followed (its target is not
     * truncated), and as a FIFO does not hold the reporter's start: it
     * runs with /dev/null for its output instead. */
    char victim[700];
    path_in(victim, sizeof victim, workdir, "victim");
    f = fopen(victim, "w");
    if (!f)
        die("cannot write %s", victim);
    fputs("keep me\n", f);
    fclose(f);
    char rlog2[800];
    path_in(rlog2, sizeof rlog2, spool, "reporter.log");
    for (int kind = 0; kind < 2; kind++) {
        unlink(marker);
        unlink(rlog2);
        if (kind == 0 ? symlink(victim, rlog2) : mkfifo(rlog2, 0600))
            die("cannot make %s", rlog2);
        run(argv, env, &r);
        check_ended_by(&r, SIGSEGV);
        t0 = now_ms();
        while (!file_exists(marker) && now_ms() - t0 < 5000)
            usleep(10000);
        CHECK(file_exists(marker), "the reporter did not run with reporter.log a %s",
              kind == 0 ? "symlink" : "FIFO");
        char *m = slurp(marker);
        CHECK(m && strstr(m, "fd1 /dev/null\n"), "reporter.log a %s: the reporter's stdout:\n%s",
              kind == 0 ? "symlink" : "FIFO", m ? m : "(none)");
    }
    char *kept = slurp(victim);
    CHECK(kept && !strcmp(kept, "keep me\n"), "a symlink at reporter.log: its target holds '%s'",
          kept ? kept : "(missing)");
    unlink(rlog2);

    /* A FAULTLINE_REPORTER that cannot run says so in reporter.log (an
     * empty one would not tell why no report arrives). */
    char missing[800], env_missing[900], want_msg[1000];
    path_in(missing, sizeof missing, workdir, "no-such-reporter");
    snprintf(env_missing, sizeof env_missing, "FAULTLINE_REPORTER=%s", missing);
    snprintf(want_msg, sizeof want_msg, "faultline: cannot run FAULTLINE_REPORTER %s: errno %d\n",
             missing, ENOENT);
    const char *env2[] = {env_missing, NULL};
    run(argv, env2, &r);
    check_ended_by(&r, SIGSEGV);
    char *said = NULL; /* slurp()'s buffer */
    for (t0 = now_ms(); now_ms() - t0 < 5000; usleep(10000))
        if ((said = slurp(rlog2)) && *said)
            break;
    CHECK(said && !strcmp(said, want_msg), "reporter.log of a missing reporter holds '%s'",
          said ? said : "(missing)");
    return failures ? 1 : 0;
}

/* The id in the spool's installation-id file, "" if none. */
static void spool_install_id(char *id, size_t cap)
{
    char path[800];
    path_in(path, sizeof path, spool, "installation-id");
    char *text = slurp(path);
    size_t n = text ? strcspn(text, "\n") : 0;
    if (n >= cap)
        n = cap - 1;
    memcpy(id, text ? text : "", n); /* text: slurp()'s static buffer */
    id[n] = '\0';
}

/* Every log in the spool carries INSTALL_ID want; returns how many. */
static int check_logs_install_id(const char *want, const char *what)
{
    int logs = 0;
    DIR *d = opendir(spool);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n > 9 && !strcmp(e->d_name + n - 9, ".crashlog")) {
            char path[1000];
            path_in(path, sizeof path, spool, e->d_name);
            fl_crashlog *log = NULL;
            fl_crashlog_error err;
            if (fl_crashlog_parse_file(path, &log, &err) == 0) {
                CHECK(log->install_id && !strcmp(log->install_id, want),
                      "%s: a log has INSTALL_ID %s, the spool's file %s", what,
                      log->install_id ? log->install_id : "-", want);
                logs++;
                fl_crashlog_free(log);
            } else {
                CHECK(0, "%s: %s does not parse: %s", what, path, err.message);
            }
        } else if (e->d_name[0] == '.' && strncmp(e->d_name, ".installation-id", 16) == 0) {
            CHECK(0, "%s: %s left in the spool", what, e->d_name);
        }
    }
    if (d)
        closedir(d);
    return logs;
}

static int cmd_install_id(const char *exe)
{
    char *argv[] = {(char *)exe, (char *)"null_read", NULL};
    char path[800], id[64];
    path_in(path, sizeof path, spool, "installation-id");

    /* A file left empty (its creator killed between create and write) is
     * replaced, not taken as a reason for a private id per process. */
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        die("cannot create %s", path);
    close(fd);
    run_result r;
    for (int i = 0; i < 2; i++) {
        run(argv, NULL, &r);
        check_ended_by(&r, SIGSEGV);
    }
    spool_install_id(id, sizeof id);
    CHECK(strlen(id) == 36, "the empty installation-id was not replaced: '%s'", id);
    CHECK(check_logs_install_id(id, "empty installation-id") == 2, "expected 2 logs");

    /* Processes starting at once on a fresh spool agree on one id. */
    enum { ROUNDS = 8, PROCS = 12 };
    for (int round = 0; round < ROUNDS && !failures; round++) {
        remove_logs();
        unlink(path);
        pid_t kids[PROCS];
        for (int k = 0; k < PROCS; k++) {
            kids[k] = fork();
            if (kids[k] < 0)
                die("fork: %s", strerror(errno));
            if (kids[k] == 0) {
                child_env(NULL);
                execv(exe, argv);
                _exit(127);
            }
        }
        for (int k = 0; k < PROCS; k++) {
            int st;
            waitpid(kids[k], &st, 0);
            CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "round %d: a child %s", round,
                  describe(st));
        }
        spool_install_id(id, sizeof id);
        CHECK(strlen(id) == 36, "round %d: installation-id is '%s'", round, id);
        int logs = check_logs_install_id(id, "processes starting at once");
        CHECK(logs == PROCS, "round %d: %d logs of %d crashes", round, logs, PROCS);
    }
    return failures ? 1 : 0;
}

static int cmd_fork(const char *exe)
{
    /* The program installs, forks, and the child aborts: the child must end
     * by SIGABRT itself, and the log name the child. */
    char *argv[] = {(char *)exe, (char *)"forked_abort", NULL};
    run_result r;
    run(argv, NULL, &r);
    CHECK(!r.timed_out && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "parent: %s",
          describe(r.status));
    int child = 0, code = 0;
    char how[16] = "";
    CHECK(sscanf(r.out, "child %d %15s %d", &child, how, &code) == 3 &&
              !strcmp(how, "signal") && code == SIGABRT,
          "the forked child should die by SIGABRT; parent says: %s", r.out);
    fl_crashlog *log = the_one_log(NULL, 0);
    if (log) {
        CHECK(log->crash_signal == SIGABRT, "CRASH_SIGNAL %d", log->crash_signal);
        CHECK(log->has_pid && (int)log->pid == child, "PROCESS_ID %llu, the child was %d",
              (unsigned long long)log->pid, child);
        check_frame(log, "crash_abort");
        fl_crashlog_free(log);
    }
    return failures ? 1 : 0;
}

/* Reads the two logs of the vfork and clone_vm modes: the child's and the
 * parent's, told apart by PROCESS_ID. */
static void check_shared_vm_child(const char *exe, const char *mode, bool kcmp_works)
{
    char *argv[] = {(char *)exe, (char *)mode, NULL};
    run_result r;
    run(argv, NULL, &r);
    /* The parent's own crash, after the child's: not after a wait for a
     * crash state the child left taken (10 s), nor without a log. */
    check_ended_by(&r, SIGSEGV);
    int child = 0, code = 0, parent = 0;
    char how[16] = "", dump[8] = "";
    int got =
        sscanf(r.out, "child %d %15s %d parent %d dump %7s", &child, how, &code, &parent, dump);
    CHECK(got == 5 && !strcmp(how, "signal") && code == SIGSEGV,
          "%s: the child should die by SIGSEGV; the parent says: %s", mode, r.out);
    CHECK(!strcmp(dump, "yes"), "%s: the parent's trace dump after the child's crash: %s", mode,
          dump);
    spool_state s;
    scan_spool(&s);
    CHECK(s.logs == 2 && s.tmps == 0, "%s: %d logs and %d temporary files, expected 2 and 0", mode,
          s.logs, s.tmps);
    fl_crashlog *logs[2] = {NULL, NULL};
    for (int i = 0; i < 2 && i < s.logs; i++) {
        char path[1000];
        path_in(path, sizeof path, spool, s.names[i]);
        fl_crashlog_error err;
        CHECK(fl_crashlog_parse_file(path, &logs[i], &err) == 0, "%s: %s: line %u: %s", mode, path,
              err.line, err.message);
    }
    if (logs[0] && logs[1]) {
        if (logs[0]->pid != (uint64_t)child) {
            fl_crashlog *t = logs[0];
            logs[0] = logs[1];
            logs[1] = t;
        }
        const fl_crashlog *c = logs[0], *p = logs[1];
        CHECK(c->has_pid && c->pid == (uint64_t)child && p->has_pid && p->pid == (uint64_t)parent,
              "%s: PROCESS_ID %llu and %llu; the child was %d, the parent %d", mode,
              (unsigned long long)c->pid, (unsigned long long)p->pid, child, parent);
        CHECK(c->crash_tid == (uint64_t)child, "%s: the child's CRASH_THREAD %llu", mode,
              (unsigned long long)c->crash_tid);
        CHECK(c->crash_signal == SIGSEGV && p->crash_signal == SIGSEGV, "%s: CRASH_SIGNAL %d, %d",
              mode, c->crash_signal, p->crash_signal);
        CHECK(c->crash_id && p->crash_id && strcmp(c->crash_id, p->crash_id),
              "%s: the two logs have the same CRASH_ID", mode);
        /* The marker: the child shared the parent's memory.  Only where
         * the kernel answers kcmp(), as the library asks it. */
        if (kcmp_works)
            CHECK(c->vfork_parent == (uint64_t)parent, "%s: VFORK_PARENT %llu, expected %d", mode,
                  (unsigned long long)c->vfork_parent, parent);
        CHECK(p->vfork_parent == 0, "%s: VFORK_PARENT %llu in the parent's log", mode,
              (unsigned long long)p->vfork_parent);
        check_frame(c, "crash_null_write");
        check_frame(p, "crash_null_read");
        check_frame(p, "main");
        bool crumb = false;
        for (size_t i = 0; i < p->nbreadcrumbs; i++)
            crumb |= !strcmp(p->breadcrumbs[i].message, "the child is gone");
        CHECK(crumb, "%s: the parent's log lacks its breadcrumb", mode);
        CHECK(!p->handler_fault && !c->handler_fault, "%s: HANDLER_FAULT", mode);
    }
    fl_crashlog_free(logs[0]);
    fl_crashlog_free(logs[1]);
    remove_logs();
}

/* Can a process ask the kernel whether it shares its parent's memory? */
static bool kcmp_answers(void)
{
    pid_t pid = fork();
    if (pid == 0)
        _exit(syscall(SYS_kcmp, getpid(), getppid(), 0 /* KCMP_VM */, 0, 0) < 0 ? 1 : 0);
    int st = 0;
    return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static int cmd_vfork(const char *exe)
{
    bool kcmp_works = kcmp_answers();
    if (!kcmp_works)
        printf("note: kcmp() is refused here: VFORK_PARENT not checked\n");
    check_shared_vm_child(exe, "vfork", kcmp_works);
    check_shared_vm_child(exe, "clone_vm", kcmp_works);
    return failures ? 1 : 0;
}

/* Reads the spool's logs into logs[] (at most cap): how many. */
static int read_logs(fl_crashlog **logs, int cap, const char *what)
{
    spool_state s;
    scan_spool(&s);
    CHECK(s.tmps == 0, "%s: %d temporary files", what, s.tmps);
    int n = 0;
    for (int i = 0; i < s.logs && n < cap; i++) {
        char path[1000];
        path_in(path, sizeof path, spool, s.names[i]);
        fl_crashlog_error err;
        if (fl_crashlog_parse_file(path, &logs[n], &err) == 0)
            n++;
        else
            CHECK(0, "%s: %s: line %u: %s", what, path, err.line, err.message);
    }
    return n;
}

/* A vfork() child that crashes after a thread of its parent crashed and
 * ended the parent: the crash state that thread took stays in the memory
 * the child runs in.  The child must take it over and write its log, not
 * wait 10 s for an owner that is gone and end without one. */
static int cmd_vfork_orphan(const char *exe)
{
    /* The child outlives its parent: become its parent, to wait for it. */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
        die("PR_SET_CHILD_SUBREAPER: %s", strerror(errno));
    char *argv[] = {(char *)exe, "vfork_orphan", NULL};
    run_result r;
    run(argv, NULL, &r);
    check_ended_by(&r, SIGSEGV);
    int child = 0, st = 0;
    CHECK(sscanf(r.out, "child %d", &child) == 1 && child > 0, "no child pid: %s", r.out);
    if (child > 0) {
        CHECK(waitpid(child, &st, 0) == child, "waitpid %d: %s", child, strerror(errno));
        CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "the child %s, expected SIGSEGV",
              describe(st));
    }
    fl_crashlog *logs[3] = {NULL, NULL, NULL};
    int n = read_logs(logs, 3, "vfork_orphan");
    CHECK(n == 2, "%d logs, expected the parent's and the child's", n);
    int mine = 0;
    for (int i = 0; i < n; i++) {
        if (logs[i]->pid == (uint64_t)child) {
            mine++;
            CHECK(logs[i]->crash_tid == (uint64_t)child, "the child's CRASH_THREAD %llu",
                  (unsigned long long)logs[i]->crash_tid);
            check_frame(logs[i], "crash_null_write");
        } else {
            check_frame(logs[i], "crash_null_read");
            check_frame(logs[i], "crash_after_vfork");
        }
        CHECK(!logs[i]->handler_fault, "HANDLER_FAULT in a log");
        fl_crashlog_free(logs[i]);
    }
    CHECK(mine == 1, "%d logs of the child %d", mine, child);
    remove_logs();
    return failures ? 1 : 0;
}

/* A thread that had not traced yet vforks and its child traces: the
 * child runs on the thread's TLS, and must not leave its own id there for
 * the thread's later trace events. */
static int cmd_vfork_trace(const char *exe)
{
    char *argv[] = {(char *)exe, "vfork_trace", NULL};
    run_result r;
    run(argv, NULL, &r);
    check_ended_by(&r, SIGSEGV);
    int child = 0, thread = 0;
    CHECK(sscanf(r.out, "child %d thread %d", &child, &thread) == 2, "output: %s", r.out);
    fl_crashlog *log = NULL;
    int n = read_logs(&log, 1, "vfork_trace");
    CHECK(n == 1, "%d logs", n);
    int seen = 0;
    for (size_t i = 0; n == 1 && i < log->ntrace; i++) {
        const fl_trace_event *e = &log->trace[i];
        if (strstr(e->text, "in the parent after child")) {
            seen |= 1;
            CHECK(e->tid == (uint64_t)thread, "the thread's event has thread id %llu, not %d",
                  (unsigned long long)e->tid, thread);
        } else if (strstr(e->text, "in the child")) {
            seen |= 2;
            CHECK(e->tid == (uint64_t)child, "the child's event has thread id %llu, not %d",
                  (unsigned long long)e->tid, child);
        }
    }
    CHECK(seen == 3, "trace events found: %d of 3", seen);
    if (n == 1)
        fl_crashlog_free(log);
    remove_logs();
    return failures ? 1 : 0;
}

/* Uncaught C++ exceptions (cxxthrow.cpp): the log names the exception's
 * type and what(), and says nothing of one where there is none. */
static int cmd_cxx(const char *exe)
{
    static const struct {
        const char *mode;
        int sig;
        const char *type, *message; /* NULL: no such line */
    } xc[] = {
        {"runtime_error", SIGABRT, "St13runtime_error", "disk \"full\"\\n on /var"},
        {"derived", SIGABRT, "N12_GLOBAL__N_17DerivedE", "derived: second base"},
        {"diamond", SIGABRT, "N12_GLOBAL__N_17DiamondE", "virtual base"},
        {"hidden", SIGABRT, "N12_GLOBAL__N_16HiddenE", NULL},
        {"what_throws", SIGABRT, "N12_GLOBAL__N_16ThrowsE", NULL},
        {"int", SIGABRT, "i", NULL},
        {"cstr", SIGABRT, "PKc", "plain text"},
        {"long", SIGABRT, "St12length_error", "x"},
        {"terminate", SIGABRT, NULL, NULL},
        {"caught", SIGSEGV, NULL, NULL},
        {"own_handler", SIGABRT, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof xc / sizeof xc[0]; i++) {
        char *argv[] = {(char *)exe, (char *)xc[i].mode, NULL};
        run_result r;
        run(argv, NULL, &r);
        check_ended_by(&r, xc[i].sig);
        fl_crashlog *log = NULL;
        if (read_logs(&log, 1, xc[i].mode) != 1) {
            CHECK(0, "%s: no log", xc[i].mode);
            remove_logs();
            continue;
        }
        const char *t = log->exception_type, *m = log->exception_message;
        if (!xc[i].type)
            CHECK(!t && !m, "%s: EXCEPTION_TYPE %s, EXCEPTION_MESSAGE %s", xc[i].mode, t ? t : "-",
                  m ? m : "-");
        else
            CHECK(t && !strcmp(t, xc[i].type), "%s: EXCEPTION_TYPE %s, expected %s", xc[i].mode,
                  t ? t : "(none)", xc[i].type);
        if (xc[i].type && !xc[i].message)
            CHECK(!m, "%s: EXCEPTION_MESSAGE %s", xc[i].mode, m);
        else if (!strcmp(xc[i].mode, "long"))
            CHECK(m && strlen(m) == 1023 && strspn(m, "x") == 1023,
                  "long: EXCEPTION_MESSAGE of %zu bytes, expected 1,023 x", m ? strlen(m) : 0);
        else if (xc[i].message)
            CHECK(m && !strcmp(m, xc[i].message), "%s: EXCEPTION_MESSAGE '%s', expected '%s'",
                  xc[i].mode, m ? m : "(none)", xc[i].message);
        if (!strcmp(xc[i].mode, "own_handler"))
            CHECK(strstr(r.out, "own handler") != NULL,
                  "own_handler: the program's handler did "
                  "not run: %s",
                  r.out);
        CHECK(!log->handler_fault, "%s: HANDLER_FAULT", xc[i].mode);
        fl_crashlog_free(log);
        remove_logs();
    }
    return failures ? 1 : 0;
}

static int cmd_first_chance(const char *exe)
{
    /* 100 probes left with siglongjmp() and a page made writable by the
     * program's first-chance handler: no log, nothing held (the real
     * crash after them is logged at once, not after a 10 s wait for a
     * crash state a probe left taken). */
    char *argv[] = {(char *)exe, (char *)"first_chance", NULL};
    run_result r;
    run(argv, NULL, &r);
    check_ended_by(&r, SIGSEGV);
    CHECK(strstr(r.out, "probed 100 fixed 7") != NULL, "the program says: %s", r.out);
    fl_crashlog *log = the_one_log(NULL, 0);
    if (log) {
        CHECK(log->crash_signal == SIGSEGV, "CRASH_SIGNAL %d", log->crash_signal);
        check_frame(log, "crash_null_read");
        fl_crashlog_free(log);
    }
    return failures ? 1 : 0;
}

/* A first-chance handler that faults itself is not asked again about its
 * own fault (it would fault again until the alternate stack overflows,
 * and leave no log): the crash is logged, with HANDLER_FAULT. */
static int cmd_first_chance_faults(const char *exe)
{
    char *argv[] = {(char *)exe, (char *)"first_chance_faults", NULL};
    run_result r;
    run(argv, NULL, &r);
    check_ended_by(&r, SIGSEGV);
    fl_crashlog *log = the_one_log(NULL, 0);
    if (log) {
        CHECK(log->crash_signal == SIGSEGV, "CRASH_SIGNAL %d", log->crash_signal);
        CHECK(log->handler_fault == SIGSEGV, "HANDLER_FAULT %d, expected %d", log->handler_fault,
              SIGSEGV);
        check_frame(log, "faulting_first_chance");
        fl_crashlog_free(log);
    }
    return failures ? 1 : 0;
}

/* faultline_crash_now() with numbers whose signal would stop the process
 * or be ignored, and with numbers that are no signal: the process still
 * ends after the log, with exit status 128 + (n & 127).  A signal that
 * ends a process by default still ends it by that signal. */
static int cmd_crash_now_num(const char *exe)
{
    static const int nums[] = {0,      SIGSTOP,  SIGTSTP, SIGTTIN, SIGTTOU, SIGCHLD, SIGCONT,
                               SIGURG, SIGWINCH, 32,      70,      -1,      SIGTERM, SIGUSR1};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        int n = nums[i];
        char arg[16];
        snprintf(arg, sizeof arg, "%d", n);
        char *argv[] = {(char *)exe, (char *)"crash_now_num", arg, NULL};
        run_result r;
        run(argv, NULL, &r);
        CHECK(!r.timed_out, "crash_now(%d): the child hung (or stopped) and was killed", n);
        if (n == SIGTERM || n == SIGUSR1)
            CHECK(WIFSIGNALED(r.status) && WTERMSIG(r.status) == n, "crash_now(%d): %s", n,
                  describe(r.status));
        else
            CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 128 + (n & 127),
                  "crash_now(%d): %s, expected exit status %d", n, describe(r.status),
                  128 + (n & 127));
        fl_crashlog *log = the_one_log(NULL, 0);
        if (log) {
            CHECK(log->crash_signal == n, "crash_now(%d): CRASH_SIGNAL %d", n, log->crash_signal);
            fl_crashlog_free(log);
        }
        remove_logs();
    }
    return failures ? 1 : 0;
}

/* fork() while another thread holds the state's flag: in the child,
 * faultline_set_state() works at once, and its crash log has both the
 * key it set and the one the parent's thread was setting. */
static int cmd_fork_state(const char *exe)
{
    char *argv[] = {(char *)exe, (char *)"fork_state", NULL};
    run_result r;
    run(argv, NULL, &r);
    CHECK(!r.timed_out && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "fork_state: %s",
          describe(r.status));
    CHECK(strstr(r.out, "fork_state 6 of 6") != NULL, "the program says: %s", r.out);
    fl_crashlog *logs[8];
    int n = read_logs(logs, 8, "fork_state");
    CHECK(n == 6, "%d logs, expected 6", n);
    for (int i = 0; i < n; i++) {
        bool busy = false, child = false;
        for (size_t k = 0; k < logs[i]->nstate; k++) {
            const fl_kv *kv = &logs[i]->state[k];
            if (!strcmp(kv->key, "busy"))
                busy = !strcmp(kv->value, "odd") || !strcmp(kv->value, "even");
            if (!strcmp(kv->key, "child"))
                child = !strcmp(kv->value, "set");
        }
        CHECK(busy && child, "log %d: state busy %d, child %d", i, busy, child);
        fl_crashlog_free(logs[i]);
    }
    remove_logs();
    return failures ? 1 : 0;
}

static int cmd_fork_timers(const char *exe)
{
    char *argv[] = {(char *)exe, (char *)"fork_timers", NULL};
    run_result r;
    run(argv, NULL, &r);
    CHECK(!r.timed_out && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "fork_timers: %s",
          describe(r.status));
    CHECK(strstr(r.out, "fork_timers 400 of 400") != NULL,
          "children hung or failed in timer_create (the wrappers' lock held at fork): %s", r.out);
    return failures ? 1 : 0;
}

static int cmd_pid1(const char *exe)
{
    /* Can this machine make a PID namespace at all? */
    char *probe[] = {(char *)"/usr/bin/unshare", (char *)"--pid", (char *)"--fork",
                     (char *)"--mount-proc", (char *)"/bin/true", NULL};
    run_result r;
    run(probe, NULL, &r);
    if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0) {
        printf("SKIP: unshare --pid --fork --mount-proc does not work here (%s)\n",
               describe(r.status));
        return 77;
    }
    static const struct {
        const char *mode;
        int sig;
    } modes[] = {{"null_read", SIGSEGV}, {"abort", SIGABRT}};
    for (size_t i = 0; i < 2; i++) {
        char *argv[] = {(char *)"/usr/bin/unshare", (char *)"--pid", (char *)"--fork",
                        (char *)"--mount-proc", (char *)exe, (char *)modes[i].mode, NULL};
        run(argv, NULL, &r);
        CHECK(!r.timed_out, "%s as PID 1 hung", modes[i].mode);
        CHECK(r.ms <= DEADLINE_MS, "%s as PID 1 took %lld ms", modes[i].mode, (long long)r.ms);
        /* unshare passes the child's end on either as the signal itself or
         * as 128+signal. */
        bool ok = (WIFSIGNALED(r.status) && WTERMSIG(r.status) == modes[i].sig) ||
                  (WIFEXITED(r.status) && WEXITSTATUS(r.status) == 128 + modes[i].sig);
        CHECK(ok, "%s as PID 1: %s", modes[i].mode, describe(r.status));
        fl_crashlog *log = the_one_log(NULL, 0);
        if (log) {
            CHECK(log->has_pid && log->pid == 1, "PROCESS_ID %llu, expected 1",
                  (unsigned long long)log->pid);
            CHECK(log->crash_signal == modes[i].sig, "CRASH_SIGNAL %d", log->crash_signal);
            fl_crashlog_free(log);
        }
        remove_logs();
    }
    return failures ? 1 : 0;
}

static int cmd_no_proc(const char *exe)
{
    /* A mount namespace with an empty /proc: the program started by a
     * relative name from its directory, as a container without /proc
     * would run it. */
    char dir[1024], base[256];
    snprintf(dir, sizeof dir, "%s", exe);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return 2;
    *slash = '\0';
    snprintf(base, sizeof base, "./%s", slash + 1);
    char *probe[] = {(char *)"/usr/bin/unshare",
                     (char *)"--mount",
                     (char *)"--fork",
                     (char *)"/bin/sh",
                     (char *)"-c",
                     (char *)"mount -t tmpfs none /proc && ! test -e /proc/self",
                     NULL};
    run_result r;
    run(probe, NULL, &r);
    if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0) {
        printf("SKIP: no mount namespace with an empty /proc here (%s)\n", describe(r.status));
        return 77;
    }
    char *argv[] = {(char *)"/usr/bin/unshare",
                    (char *)"--mount",
                    (char *)"--fork",
                    (char *)"/bin/sh",
                    (char *)"-c",
                    (char *)"mount -t tmpfs none /proc && cd \"$0\" && exec \"$1\" null_read",
                    dir,
                    base,
                    NULL};
    run(argv, NULL, &r);
    bool ok = (WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGSEGV) ||
              (WIFEXITED(r.status) && WEXITSTATUS(r.status) == 128 + SIGSEGV);
    CHECK(ok, "without /proc: %s", describe(r.status));
    fl_crashlog *log = the_one_log(NULL, 0);
    if (log) {
        CHECK(log->executable && !strcmp(log->executable, exe), "EXECUTABLE %s, expected %s",
              log->executable ? log->executable : "(none)", exe);
        CHECK(object_named(log, slash + 1) != NULL, "no OBJECT named %s", slash + 1);
        check_frame(log, "crash_null_read");
        fl_crashlog_free(log);
    }
    return failures ? 1 : 0;
}

static int cmd_preload(const char *victim, const char *so)
{
    char env_pre[1200];
    snprintf(env_pre, sizeof env_pre, "LD_PRELOAD=%s", so);
    const char *env[] = {env_pre, "FAULTLINE_APP=victim", "FAULTLINE_VERSION=9.9", NULL};
    char *argv[] = {(char *)victim, NULL};
    run_result r;
    run(argv, env, &r);
    check_ended_by(&r, SIGSEGV);
    CHECK(strstr(r.out, "about to crash") != NULL, "the victim did not run normally first");
    fl_crashlog *log = the_one_log(NULL, 0);
    if (log) {
        CHECK(log->app_name && !strcmp(log->app_name, "victim"), "APPLICATION_NAME %s",
              log->app_name ? log->app_name : "-");
        CHECK(log->app_version && !strcmp(log->app_version, "9.9"), "APPLICATION_VERSION");
        CHECK(log->crash_signal == SIGSEGV, "CRASH_SIGNAL %d", log->crash_signal);
        CHECK(object_named(log, "libfaultline-preload") != NULL,
              "the preload library is not among the OBJECTs");
        check_frame(log, "victim_null_read");
        check_frame(log, "main");
        fl_crashlog_free(log);
    }
    /* Without the preload the same program leaves nothing. */
    remove_logs();
    const char *none[] = {NULL};
    run(argv, none, &r);
    check_ended_by(&r, SIGSEGV);
    check_no_log("no LD_PRELOAD");
    return failures ? 1 : 0;
}

/* A program linked with libfaultline.a, run under the preload library:
 * two copies of the library, each with its handlers, the later chaining
 * to the earlier.  One crash, one log (each wrote its own before). */
static int cmd_static_preload(const char *crashme, const char *so)
{
    char env_pre[1200];
    snprintf(env_pre, sizeof env_pre, "LD_PRELOAD=%s", so);
    const char *env[] = {env_pre, NULL};
    char *argv[] = {(char *)crashme, (char *)"null_read", NULL};
    run_result r;
    run(argv, env, &r);
    check_ended_by(&r, SIGSEGV);
    fl_crashlog *log = the_one_log(NULL, 0);
    if (log) {
        CHECK(object_named(log, "libfaultline-preload") != NULL,
              "the preload library is not among the OBJECTs: not loaded");
        CHECK(log->crash_signal == SIGSEGV, "CRASH_SIGNAL %d", log->crash_signal);
        check_frame(log, "main");
        fl_crashlog_free(log);
    }
    return failures ? 1 : 0;
}

/* The victim under the preload library with a spool it cannot use: the
 * program runs and crashes as it would without the library, and its
 * standard error holds exactly one line that names the reason (want),
 * and the spool and its variable when one was set (path, var). */
/* Runs the victim under env, its standard error into errfile (cap 700),
 * and checks it ended by its own SIGSEGV. */
static void run_victim_stderr(const char *victim, const char *const *env, char *errfile,
                              run_result *r)
{
    path_in(errfile, 700, workdir, "stderr");
    char *argv[] = {(char *)victim, NULL};
    stderr_to = errfile;
    run(argv, env, r);
    stderr_to = NULL;
    check_ended_by(r, SIGSEGV);
}

static void check_preload_refusal(const char *victim, const char *const *env, const char *path,
                                  const char *var, const char *want)
{
    char errfile[700];
    run_result r;
    run_victim_stderr(victim, env, errfile, &r);
    CHECK(strstr(r.out, "about to crash") != NULL, "the victim did not run normally first");
    check_no_log("no usable spool");
    const char *err = slurp(errfile);
    CHECK(err != NULL, "no %s", errfile);
    if (!err)
        return;
    const char *nl = strchr(err, '\n');
    CHECK(nl && nl[1] == '\0', "expected one line on stderr, got:\n%s", err);
    static const char head[] = "libfaultline-preload: crashes will not be recorded: ";
    CHECK(!strncmp(err, head, sizeof head - 1), "stderr: %s", err);
    CHECK(strstr(err, want) != NULL, "no \"%s\" in: %s", want, err);
    char spool_var[1200];
    if (path) {
        snprintf(spool_var, sizeof spool_var, "spool %s (%s): ", path, var);
        CHECK(strstr(err, spool_var) != NULL, "no \"%s\" in: %s", spool_var, err);
    }
}

static int cmd_preload_errors(const char *victim, const char *so)
{
    char env_pre[1200], file[700], under_file[800], env_spool[900], env_home[900];
    snprintf(env_pre, sizeof env_pre, "LD_PRELOAD=%s", so);
    path_in(file, sizeof file, workdir, "file");
    FILE *f = fopen(file, "w");
    if (!f || fclose(f) != 0)
        die("create %s: %s", file, strerror(errno));

    /* FAULTLINE_SPOOL where no directory can be made. */
    const char *proc[] = {env_pre, "FAULTLINE_SPOOL=/proc/nonexistent/x", NULL};
    check_preload_refusal(victim, proc, "/proc/nonexistent/x", "FAULTLINE_SPOOL", strerror(ENOENT));
    /* Under a regular file. */
    snprintf(under_file, sizeof under_file, "%s/spool", file);
    snprintf(env_spool, sizeof env_spool, "FAULTLINE_SPOOL=%s", under_file);
    const char *notdir[] = {env_pre, env_spool, NULL};
    check_preload_refusal(victim, notdir, under_file, "FAULTLINE_SPOOL", strerror(ENOTDIR));
    /* The default from HOME. */
    snprintf(env_home, sizeof env_home, "HOME=%s", file);
    snprintf(under_file, sizeof under_file, "%s/.local/state/faultline", file);
    const char *home[] = {env_pre, "FAULTLINE_SPOOL=", "XDG_STATE_HOME=", env_home, NULL};
    check_preload_refusal(victim, home, under_file, "HOME", strerror(ENOTDIR));
    /* No variable names a spool. */
    const char *none[] = {env_pre, "FAULTLINE_SPOOL=", "XDG_STATE_HOME=", "HOME=", NULL};
    check_preload_refusal(victim, none, NULL, NULL, "no FAULTLINE_SPOOL, XDG_STATE_HOME or HOME");

    /* A good spool: the log, and not a word on stderr. */
    char errfile[700];
    const char *good[] = {env_pre, NULL};
    run_result r;
    run_victim_stderr(victim, good, errfile, &r);
    fl_crashlog *log = the_one_log(NULL, 0);
    if (log)
        fl_crashlog_free(log);
    const char *err = slurp(errfile);
    CHECK(err && !*err, "with a good spool, stderr says: %s", err ? err : "(no file)");
    return failures ? 1 : 0;
}

/* A crash in a shallow main thread: its raw stack would reach, within
 * the default 32 KiB, the program's argument and environment strings
 * above its frames.  They are never in the log; the frames are. */
static int cmd_no_environment(const char *exe)
{
    char secret_env[128], secret_arg[128];
    snprintf(secret_env, sizeof secret_env, "FL_TEST_TOKEN=env-secret-%ld", (long)getpid());
    snprintf(secret_arg, sizeof secret_arg, "arg-secret-%ld", (long)getpid());
    const char *env[] = {secret_env, NULL};
    char *argv[] = {(char *)exe, (char *)"null_read", secret_arg, NULL};
    run_result r;
    run(argv, env, &r);
    check_ended_by(&r, SIGSEGV);
    fl_crashlog *log = the_one_log(NULL, 0);
    if (!log)
        return 1;
    check_frame(log, "crash_null_read");
    check_frame(log, "main");
    const fl_register *sp = reg(log, "rsp");
    if (!sp)
        sp = reg(log, "sp");
    CHECK(sp && log->nstack > 0 && log->stack[0].addr <= sp->value,
          "no STACK from the stack pointer up (%zu chunks)", log->nstack);
    size_t n = stack_bytes(log);
    CHECK(n > 0 && n < 32768, "%zu bytes of STACK: expected it to stop below the strings", n);
    const char *secrets[] = {secret_env + strlen("FL_TEST_TOKEN="), secret_arg, "FAULTLINE_SPOOL="};
    for (size_t s = 0; s < sizeof secrets / sizeof *secrets; s++)
        for (size_t i = 0; i < log->nstack; i++)
            CHECK(!memmem(log->stack[i].data, log->stack[i].len, secrets[s], strlen(secrets[s])),
                  "STACK at 0x%llx holds \"%s\": the program's arguments or environment",
                  (unsigned long long)log->stack[i].addr, secrets[s]);
    fl_crashlog_free(log);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: client_driver COMMAND PROGRAM [ARG]\n");
        return 2;
    }
    make_workdir();
    const char *cmd = argv[1];
    int rc = 1;
    if (!strcmp(cmd, "matrix") && argc == 4)
        rc = cmd_matrix(argv[2], argv[3]);
    else if (!strcmp(cmd, "details"))
        rc = cmd_details(argv[2]);
    else if (!strcmp(cmd, "no_environment"))
        rc = cmd_no_environment(argv[2]);
    else if (!strcmp(cmd, "nomalloc"))
        rc = cmd_nomalloc(argv[2]);
    else if (!strcmp(cmd, "mojo"))
        rc = cmd_mojo(argv[2]);
    else if (!strcmp(cmd, "efbig"))
        rc = cmd_efbig(argv[2]);
    else if (!strcmp(cmd, "refault"))
        rc = cmd_refault(argv[2]);
    else if (!strcmp(cmd, "exit_early"))
        rc = cmd_exit_early(argv[2]);
    else if (!strcmp(cmd, "dlclose"))
        rc = cmd_dlclose(argv[2]);
    else if (!strcmp(cmd, "relative_plugin"))
        rc = cmd_relative_plugin(argv[2]);
    else if (!strcmp(cmd, "many_objects"))
        rc = cmd_many_objects(argv[2]);
    else if (!strcmp(cmd, "long_path"))
        rc = cmd_long_path(argv[2]);
    else if (!strcmp(cmd, "spool_gone"))
        rc = cmd_spool_gone(argv[2]);
    else if (!strcmp(cmd, "tmpfs"))
        rc = cmd_tmpfs(argv[2]);
    else if (!strcmp(cmd, "pending"))
        rc = cmd_pending(argv[2]);
    else if (!strcmp(cmd, "spool_max"))
        rc = cmd_spool_max(argv[2]);
    else if (!strcmp(cmd, "reporter"))
        rc = cmd_reporter(argv[2]);
    else if (!strcmp(cmd, "fork"))
        rc = cmd_fork(argv[2]);
    else if (!strcmp(cmd, "vfork"))
        rc = cmd_vfork(argv[2]);
    else if (!strcmp(cmd, "vfork_orphan"))
        rc = cmd_vfork_orphan(argv[2]);
    else if (!strcmp(cmd, "vfork_trace"))
        rc = cmd_vfork_trace(argv[2]);
    else if (!strcmp(cmd, "cxx"))
        rc = cmd_cxx(argv[2]);
    else if (!strcmp(cmd, "first_chance"))
        rc = cmd_first_chance(argv[2]);
    else if (!strcmp(cmd, "first_chance_faults"))
        rc = cmd_first_chance_faults(argv[2]);
    else if (!strcmp(cmd, "crash_now_num"))
        rc = cmd_crash_now_num(argv[2]);
    else if (!strcmp(cmd, "static_preload") && argc > 3)
        rc = cmd_static_preload(argv[2], argv[3]);
    else if (!strcmp(cmd, "fork_timers"))
        rc = cmd_fork_timers(argv[2]);
    else if (!strcmp(cmd, "fork_state"))
        rc = cmd_fork_state(argv[2]);
    else if (!strcmp(cmd, "install_id"))
        rc = cmd_install_id(argv[2]);
    else if (!strcmp(cmd, "pid1"))
        rc = cmd_pid1(argv[2]);
    else if (!strcmp(cmd, "no_proc"))
        rc = cmd_no_proc(argv[2]);
    else if (!strcmp(cmd, "preload") && argc == 4)
        rc = cmd_preload(argv[2], argv[3]);
    else if (!strcmp(cmd, "preload_errors") && argc == 4)
        rc = cmd_preload_errors(argv[2], argv[3]);
    else
        die("bad command line");
    if (rc == 0)
        printf("PASS %s %s\n", cmd, argc > 3 ? argv[3] : "");
    return rc;
}
