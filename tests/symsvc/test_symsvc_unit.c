/*
 * test_symsvc_unit.c - unit tests of fl_symlocate, fl_remote_unwind's
 * stack choice and fl_xmlsym (request parsing, XXE refusal, malformed
 * input, annotation of a real crash log, CDATA splitting).
 *
 * The annotation tests crash svc_crash (SVC_CRASH) once in a child process
 * and symbolicate its log with the system debug files and the program's
 * own DWARF; no network is used (debuginfod off).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "fl_crashlog.h"
#include "fl_remote_unwind.h"
#include "fl_symlocate.h"
#include "fl_xmlsym.h"
#include "svc_resolver.h"

extern char **environ;

static char workdir[256];
static char *crash_text; /* the qsort crash log */
static size_t crash_len;
static fl_crashlog *crash_log;

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    return remove(p);
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    if (b)
        b[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return b;
}

static void copy_file(const char *from, const char *to)
{
    size_t n;
    char *b = read_file(from, &n);
    assert_non_null(b);
    FILE *f = fopen(to, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    fclose(f);
    free(b);
}

/* Runs svc_crash qsort once; keeps its log for every test. */
static int group_setup(void **state)
{
    snprintf(workdir, sizeof workdir, "%s/symsvc-unit.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(workdir))
        return -1;
    const char *prog = getenv("SVC_CRASH");
    if (!prog)
        return -1;
    char spool[300];
    snprintf(spool, sizeof spool, "%s/spool", workdir);
    mkdir(spool, 0700);
    setenv("FAULTLINE_SPOOL", spool, 1);
    unsetenv("DEBUGINFOD_URLS");
    /* Under ASan the child must let the SIGSEGV through to Faultline;
     * harmless otherwise. */
    setenv("ASAN_OPTIONS", "handle_segv=0:handle_sigbus=0:handle_abort=0:detect_leaks=0:"
                           "use_sigaltstack=0:allow_user_segv_handler=1", 1);
    pid_t pid;
    char *argv[] = {(char *)prog, "qsort", NULL};
    if (posix_spawn(&pid, prog, NULL, NULL, argv, environ) != 0)
        return -1;
    int st;
    waitpid(pid, &st, 0);
    if (!WIFSIGNALED(st))
        return -1;
    DIR *d = opendir(spool);
    struct dirent *e;
    char path[600] = "";
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".crashlog"))
            snprintf(path, sizeof path, "%s/%s", spool, e->d_name);
    if (d)
        closedir(d);
    if (!path[0] || !(crash_text = read_file(path, &crash_len)))
        return -1;
    fl_crashlog_error err;
    return fl_crashlog_parse(crash_text, crash_len, &crash_log, &err);
}

static int group_teardown(void **state)
{
    fl_crashlog_free(crash_log);
    free(crash_text);
    nftw(workdir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}

static const fl_object *object_named(const char *name)
{
    for (size_t i = 0; i < crash_log->nobjects; i++)
        if (strcmp(crash_log->objects[i].name, name) == 0)
            return &crash_log->objects[i];
    return NULL;
}

/* ---------------------------------------------------------------- */
/* locate                                                             */

static fl_symlocate *new_locator(const char *upload, const char *debug_root, int object)
{
    fl_symlocate_config cfg;
    fl_symlocate_config_init(&cfg);
    cfg.use_debuginfod = 0;
    cfg.use_object_path = object;
    if (upload)
        cfg.upload_roots[cfg.nupload_roots++] = upload;
    if (debug_root)
        cfg.debug_roots[cfg.ndebug_roots++] = debug_root;
    fl_symlocate *loc = NULL;
    assert_int_equal(fl_symlocate_new(&cfg, &loc), 0);
    return loc;
}

static void test_locate_tiers(void **state)
{
    const fl_object *app = object_named("svc_crash");
    assert_non_null(app);
    assert_non_null(app->build_id);
    assert_non_null(app->path);
    char up[400], dbg[400], p[800];
    snprintf(up, sizeof up, "%s/upload", workdir);
    snprintf(dbg, sizeof dbg, "%s/debug", workdir);
    mkdir(up, 0755);
    mkdir(dbg, 0755);
    snprintf(p, sizeof p, "%s/.build-id", dbg);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/.build-id/%.2s", dbg, app->build_id);
    mkdir(p, 0755);

    fl_symlocate_result r;
    char err[512];
    /* Nothing anywhere, object path off: not found, and err says why. */
    fl_symlocate *loc = new_locator(up, dbg, 0);
    assert_int_equal(fl_symlocate_find(loc, app->build_id, app->path, &r, err, sizeof err),
                     FL_SYMLOC_ENOTFOUND);
    assert_non_null(strstr(err, app->build_id));
    fl_symlocate_free(loc);

    /* Object path on: the executable itself (it has DWARF). */
    loc = new_locator(up, dbg, 1);
    assert_int_equal(fl_symlocate_find(loc, app->build_id, app->path, &r, err, sizeof err), 0);
    assert_int_equal(r.tier, FL_SYMLOC_TIER_OBJECT);
    assert_string_equal(r.path, app->path);
    assert_int_equal(r.has_dwarf, 1);

    /* A debug root beats the object... */
    snprintf(p, sizeof p, "%s/.build-id/%.2s/%s.debug", dbg, app->build_id, app->build_id + 2);
    copy_file(app->path, p);
    assert_int_equal(fl_symlocate_find(loc, app->build_id, app->path, &r, err, sizeof err), 0);
    assert_int_equal(r.tier, FL_SYMLOC_TIER_SYSTEM);
    assert_int_equal(r.source, FL_SYMLOC_SRC_DEBUG_DIR);
    assert_string_equal(r.path, p);

    /* ...and an upload beats both; upper-case ids are accepted. */
    char up_file[800];
    snprintf(up_file, sizeof up_file, "%s/%s.debug", up, app->build_id);
    copy_file(app->path, up_file);
    char upper[200];
    snprintf(upper, sizeof upper, "%s", app->build_id);
    for (char *c = upper; *c; c++)
        if (*c >= 'a' && *c <= 'f')
            *c = (char)(*c - 'a' + 'A');
    assert_int_equal(fl_symlocate_find(loc, upper, NULL, &r, err, sizeof err), 0);
    assert_int_equal(r.tier, FL_SYMLOC_TIER_APPLICATION);
    assert_int_equal(r.source, FL_SYMLOC_SRC_UPLOAD);
    assert_string_equal(r.path, up_file);

    /* A file whose build id does not match is never returned: put libc
     * where the application's upload should be. */
    const fl_object *libc = object_named("libc.so.6");
    assert_non_null(libc);
    copy_file(libc->path, up_file);
    assert_int_equal(fl_symlocate_find(loc, app->build_id, NULL, &r, err, sizeof err), 0);
    assert_int_equal(r.source, FL_SYMLOC_SRC_DEBUG_DIR);

    /* Ids that are not plain hex cannot name a path. */
    assert_int_equal(fl_symlocate_find(loc, "../../etc/passwd", NULL, &r, err, sizeof err),
                     FL_SYMLOC_EINVAL);
    assert_int_equal(fl_symlocate_find(loc, "abc", NULL, &r, err, sizeof err), FL_SYMLOC_EINVAL);
    assert_int_equal(fl_symlocate_find(loc, "", NULL, &r, err, sizeof err), FL_SYMLOC_EINVAL);

    fl_symlocate_stats st;
    fl_symlocate_get_stats(loc, &st);
    assert_int_equal(st.found_object, 1);
    assert_int_equal(st.found_upload, 1);
    assert_int_equal(st.found_debug_dir, 2);
    assert_int_equal(st.debuginfod_queries, 0);
    fl_symlocate_free(loc);
}

/* A debug-only file answers fl_symlocate_find but never
 * fl_symlocate_find_executable; the stripped library is the other way
 * round. */
static void test_locate_executable(void **state)
{
    const char *so = getenv("SVC_SOLIB"), *dbgdir = getenv("SVC_SOLIB_DEBUG_DIR");
    assert_non_null(so);
    assert_non_null(dbgdir);
    char id[200], dbg[400], up[400], p[800];
    assert_int_equal(fl_symlocate_read_build_id(so, id, sizeof id, NULL, NULL), 0);
    snprintf(dbg, sizeof dbg, "%s/svc_solib.debug", dbgdir);
    snprintf(up, sizeof up, "%s/upload-exe", workdir);
    mkdir(up, 0755);
    snprintf(p, sizeof p, "%s/%s.debug", up, id);
    copy_file(dbg, p);

    fl_symlocate *loc = new_locator(up, "/nonexistent-debug-root", 1);
    fl_symlocate_result r;
    char err[512];
    assert_int_equal(fl_symlocate_find(loc, id, so, &r, err, sizeof err), 0);
    assert_string_equal(r.path, p);
    assert_int_equal(r.has_dwarf, 1);
    /* The loaded file itself is the executable. */
    assert_int_equal(fl_symlocate_find_executable(loc, id, so, &r, err, sizeof err), 0);
    assert_int_equal(r.source, FL_SYMLOC_SRC_OBJECT);
    /* Without it, the debug-only upload does not qualify... */
    assert_int_equal(fl_symlocate_find_executable(loc, id, NULL, &r, err, sizeof err),
                     FL_SYMLOC_ENOTFOUND);
    /* ...an uploaded executable does. */
    snprintf(p, sizeof p, "%s/%s", up, id);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/%s/executable", up, id);
    copy_file(so, p);
    assert_int_equal(fl_symlocate_find_executable(loc, id, NULL, &r, err, sizeof err), 0);
    assert_int_equal(r.source, FL_SYMLOC_SRC_UPLOAD);
    assert_string_equal(r.path, p);
    /* The stripped library has only its exports: debug lookups still pick
     * the .debug... */
    assert_int_equal(fl_symlocate_find(loc, id, so, &r, err, sizeof err), 0);
    assert_non_null(strstr(r.path, ".debug"));
    assert_int_equal(r.exports_only, 0);
    fl_symlocate_free(loc);

    /* ...and without one, the library's own .dynsym is the last resort. */
    loc = new_locator(NULL, "/nonexistent-debug-root", 1);
    assert_int_equal(fl_symlocate_find(loc, id, so, &r, err, sizeof err), 0);
    assert_string_equal(r.path, so);
    assert_int_equal(r.tier, FL_SYMLOC_TIER_OBJECT);
    assert_int_equal(r.has_dwarf, 0);
    assert_int_equal(r.exports_only, 1);
    fl_symlocate_stats st;
    fl_symlocate_get_stats(loc, &st);
    assert_int_equal(st.found_exports, 1);
    assert_int_equal(st.found_object, 0);
    /* Not without the object path (debuginfod is off here). */
    assert_int_equal(fl_symlocate_find(loc, id, NULL, &r, err, sizeof err), FL_SYMLOC_ENOTFOUND);
    fl_symlocate_free(loc);
    loc = new_locator(NULL, "/nonexistent-debug-root", 0);
    assert_int_equal(fl_symlocate_find(loc, id, so, &r, err, sizeof err), FL_SYMLOC_ENOTFOUND);
    fl_symlocate_free(loc);
}

static int log_lines;
static char log_last[512];
static void count_log(void *ctx, const char *line)
{
    (void)ctx;
    log_lines++;
    snprintf(log_last, sizeof log_last, "%s", line);
}

/* An object with full DWARF is taken before debuginfod is asked.  The
 * "server" is a closed port, refused at once: an outage, not a miss (a
 * real debuginfod's 404 is svc_debuginfod.sh's): one request, told to the
 * log once, then no request for any build id until the pause is over. */
static void test_locate_debuginfod_order_and_outage(void **state)
{
    const fl_object *app = object_named("svc_crash");
    fl_symlocate_config cfg;
    fl_symlocate_config_init(&cfg);
    cfg.debug_roots[cfg.ndebug_roots++] = "/nonexistent-debug-root";
    cfg.debuginfod_urls = "http://127.0.0.1:1";
    char cache[400];
    snprintf(cache, sizeof cache, "%s/dcache", workdir);
    cfg.debuginfod_cache = cache;
    cfg.debuginfod_timeout_s = 5;
    cfg.outage_s = 1;
    cfg.log = count_log;
    log_lines = 0;
    fl_symlocate *loc = NULL;
    assert_int_equal(fl_symlocate_new(&cfg, &loc), 0);
    fl_symlocate_result r;
    char err[512];
    assert_int_equal(fl_symlocate_find(loc, app->build_id, app->path, &r, err, sizeof err), 0);
    assert_int_equal(r.source, FL_SYMLOC_SRC_OBJECT);
    fl_symlocate_stats st;
    fl_symlocate_get_stats(loc, &st);
    assert_int_equal(st.debuginfod_queries, 0);

    const char *missing = "00112233445566778899aabbccddeeff00112233";
    const char *other = "ffeeddccbbaa99887766554433221100ffeeddcc";
    for (int i = 0; i < 3; i++)
        assert_int_equal(
            fl_symlocate_find(loc, i == 2 ? other : missing, NULL, &r, err, sizeof err),
            FL_SYMLOC_ENOTFOUND);
    assert_non_null(strstr(err, "no server answered lately"));
    /* The first lookup's debug file query was refused; its executable
     * query and the other lookups' four were not made. */
    fl_symlocate_get_stats(loc, &st);
    assert_int_equal(st.debuginfod_queries, 1);
    assert_int_equal(st.debuginfod_errors, 1);
    assert_int_equal(st.outage_skips, 5);
    assert_int_equal(st.miss_cache_hits, 0);
    assert_int_equal(log_lines, 1);
    assert_non_null(strstr(log_last, "no server answered (Connection refused)"));
    /* The remote unwinder's executable query waits too. */
    assert_int_equal(fl_symlocate_find_executable(loc, missing, NULL, &r, err, sizeof err),
                     FL_SYMLOC_ENOTFOUND);
    fl_symlocate_get_stats(loc, &st);
    assert_int_equal(st.debuginfod_queries, 1);
    /* After the pause the server is asked again (and refuses again: the
     * outage goes on, told once). */
    struct timespec ts = {2, 100000000};
    nanosleep(&ts, NULL);
    assert_int_equal(fl_symlocate_find(loc, missing, NULL, &r, err, sizeof err),
                     FL_SYMLOC_ENOTFOUND);
    fl_symlocate_get_stats(loc, &st);
    assert_int_equal(st.debuginfod_queries, 2);
    assert_int_equal(st.debuginfod_errors, 2);
    assert_int_equal(log_lines, 1);
    /* libdebuginfod's own memory of failed queries is kept shorter than
     * the locator's in a cache of ours (cache_miss_s). */
    char p[512], v[16] = "";
    snprintf(p, sizeof p, "%s/cache_miss_s", cache);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    assert_non_null(fgets(v, sizeof v, f));
    fclose(f);
    assert_int_equal(atoi(v), 60);
    fl_symlocate_free(loc);
    unsetenv("DEBUGINFOD_URLS");
}

/* A debuginfod stand-in on a free loopback port: every request is
 * answered with the status in `status` and counted. */
typedef struct status_server {
    int lfd, port;
    volatile int status;
    int requests; /* guarded by mu */
    pthread_mutex_t mu;
    pthread_t thr;
} status_server;

static void *status_serve(void *p)
{
    status_server *s = p;
    for (;;) {
        int c = accept(s->lfd, NULL, NULL);
        if (c < 0)
            return NULL; /* the listening socket was shut down */
        char req[4096];
        size_t n = 0;
        ssize_t r;
        while (n < sizeof req - 1 && (r = read(c, req + n, sizeof req - 1 - n)) > 0) {
            n += (size_t)r;
            req[n] = '\0';
            if (strstr(req, "\r\n\r\n"))
                break;
        }
        pthread_mutex_lock(&s->mu);
        s->requests++;
        pthread_mutex_unlock(&s->mu);
        char resp[128];
        int len = snprintf(resp, sizeof resp,
                           "HTTP/1.1 %d Whatever\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                           s->status);
        (void)!write(c, resp, (size_t)len);
        close(c);
    }
}

static void status_server_start(status_server *s, int status)
{
    memset(s, 0, sizeof *s);
    s->status = status;
    pthread_mutex_init(&s->mu, NULL);
    s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(s->lfd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(s->lfd, 16), 0);
    assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &al), 0);
    s->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&s->thr, NULL, status_serve, s), 0);
}

static int status_server_requests(status_server *s)
{
    pthread_mutex_lock(&s->mu);
    int n = s->requests;
    pthread_mutex_unlock(&s->mu);
    return n;
}

static void status_server_stop(status_server *s)
{
    shutdown(s->lfd, SHUT_RDWR);
    pthread_join(s->thr, NULL);
    close(s->lfd);
    pthread_mutex_destroy(&s->mu);
}

/* A server's HTTP 503 is not a 404: libdebuginfod returns -ENOENT for
 * both, and the 503 was remembered 10 minutes as the build id's miss.
 * Now it is an outage like no answer: one request, the pause, told to
 * the log and counted apart; and libdebuginfod's cached failure is gone,
 * so after the pause the server is asked again -- and its 404 then is a
 * miss, remembered. */
static void test_locate_debuginfod_server_error(void **state)
{
    status_server srv;
    status_server_start(&srv, 503);
    fl_symlocate_config cfg;
    fl_symlocate_config_init(&cfg);
    cfg.debug_roots[cfg.ndebug_roots++] = "/nonexistent-debug-root";
    char urls[64], cache[400], p[600];
    snprintf(urls, sizeof urls, "http://127.0.0.1:%d", srv.port);
    cfg.debuginfod_urls = urls;
    snprintf(cache, sizeof cache, "%s/dcache-5xx", workdir);
    cfg.debuginfod_cache = cache;
    cfg.debuginfod_timeout_s = 30;
    cfg.outage_s = 1;
    cfg.log = count_log;
    log_lines = 0;
    fl_symlocate *loc = NULL;
    assert_int_equal(fl_symlocate_new(&cfg, &loc), 0);
    const char *id = "00112233445566778899aabbccddeeff00115033";
    fl_symlocate_result r;
    fl_symlocate_stats st;
    char err[512];
    assert_int_equal(fl_symlocate_find(loc, id, NULL, &r, err, sizeof err), FL_SYMLOC_ENOTFOUND);
    assert_non_null(strstr(err, "server error (HTTP 503)"));
    /* Its executable query waits for the pause. */
    fl_symlocate_get_stats(loc, &st);
    assert_int_equal(st.debuginfod_queries, 1);
    assert_int_equal(st.debuginfod_server_errors, 1);
    assert_int_equal(st.debuginfod_errors, 0);
    assert_int_equal(st.outage_skips, 1);
    assert_int_equal(status_server_requests(&srv), 1);
    assert_int_equal(log_lines, 1);
    assert_non_null(strstr(log_last, "a server answered HTTP 503 for debuginfo"));
    snprintf(p, sizeof p, "%s/%s/debuginfo", cache, id);
    assert_int_equal(access(p, F_OK), -1);

    struct timespec ts = {2, 100000000};
    nanosleep(&ts, NULL);
    srv.status = 404;
    assert_int_equal(fl_symlocate_find(loc, id, NULL, &r, err, sizeof err), FL_SYMLOC_ENOTFOUND);
    fl_symlocate_get_stats(loc, &st);
    assert_int_equal(st.debuginfod_queries, 3); /* debug file and executable */
    assert_int_equal(status_server_requests(&srv), 3);
    assert_int_equal(st.debuginfod_server_errors, 1);
    assert_int_equal(st.miss_cache_hits, 0);
    assert_int_equal(log_lines, 2);
    assert_non_null(strstr(log_last, "a server answers again"));
    /* A 404 is a miss: remembered, not asked again. */
    assert_int_equal(fl_symlocate_find(loc, id, NULL, &r, err, sizeof err), FL_SYMLOC_ENOTFOUND);
    fl_symlocate_get_stats(loc, &st);
    assert_int_equal(st.miss_cache_hits, 2);
    assert_int_equal(status_server_requests(&srv), 3);
    fl_symlocate_free(loc);
    unsetenv("DEBUGINFOD_URLS");
    status_server_stop(&srv);
}

typedef struct thr_arg {
    fl_symlocate *loc;
    const char *id;
    const char *path;
    int bad;
} thr_arg;

static void *locate_thread(void *p)
{
    thr_arg *a = p;
    for (int i = 0; i < 200; i++) {
        fl_symlocate_result r;
        if (fl_symlocate_find(a->loc, a->id, a->path, &r, NULL, 0) != 0 ||
            r.tier != FL_SYMLOC_TIER_OBJECT)
            a->bad++;
    }
    return NULL;
}

static void test_locate_threads(void **state)
{
    const fl_object *app = object_named("svc_crash");
    fl_symlocate *loc = new_locator(NULL, "/nonexistent-debug-root", 1);
    pthread_t t[4];
    thr_arg a[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (thr_arg){loc, app->build_id, app->path, 0};
        assert_int_equal(pthread_create(&t[i], NULL, locate_thread, &a[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(a[i].bad, 0);
    }
    fl_symlocate_stats st;
    fl_symlocate_get_stats(loc, &st);
    assert_int_equal(st.lookups, 800);
    assert_int_equal(st.found_object, 800);
    fl_symlocate_free(loc);
}

/* ---------------------------------------------------------------- */
/* remote unwind                                                      */

static void test_remote_unwind_and_pick(void **state)
{
    fl_symlocate *loc = new_locator(NULL, NULL, 1);
    static fl_ru_stack st;
    char err[256];
    assert_int_equal(fl_remote_unwind(crash_log, loc, &st, err, sizeof err), 0);
    assert_true(st.nframes >= 10);
    assert_true(st.activation[0]);
    assert_int_equal(st.pcs[0], crash_log->callstack[0]);
    assert_true(st.modules_with_file >= 2);
    assert_true(fl_remote_unwind_consistent(crash_log, &st, st.pcs, st.activation, st.nframes));

    /* Same length as the client's: the client's is kept. */
    if (st.nframes == crash_log->ncallstack)
        assert_int_equal(fl_remote_unwind_pick(crash_log, &st), FL_RU_PICK_CLIENT);
    /* A client stack cut after 2 frames loses against the server's. */
    size_t saved = crash_log->ncallstack;
    crash_log->ncallstack = 2;
    assert_int_equal(fl_remote_unwind_pick(crash_log, &st), FL_RU_PICK_SERVER);
    /* A longer server stack with a pc outside every module is not consistent. */
    static fl_ru_stack bad;
    bad = st;
    bad.pcs[bad.nframes - 1] = 0x10;
    assert_false(fl_remote_unwind_consistent(crash_log, &bad, bad.pcs, bad.activation, bad.nframes));
    assert_int_equal(fl_remote_unwind_pick(crash_log, &bad), FL_RU_PICK_CLIENT);
    /* A server stack that does not start at the faulting pc is not used. */
    bad = st;
    bad.pcs[0] += 1;
    assert_int_equal(fl_remote_unwind_pick(crash_log, &bad), FL_RU_PICK_CLIENT);
    crash_log->ncallstack = saved;
    assert_int_equal(fl_remote_unwind_pick(crash_log, NULL), FL_RU_PICK_CLIENT);

    /* Without registers there is nothing to start from. */
    const char *v1 = "MOJOCRASH 1\nCRASHLOG_VERSION 1\nAPPLICATION_NAME a\n"
                     "OBJECT a/4096/4096\nCALLSTACK 4100\nEND\n";
    fl_crashlog *l1 = NULL;
    assert_int_equal(fl_crashlog_parse(v1, strlen(v1), &l1, NULL), 0);
    assert_int_equal(fl_remote_unwind(l1, loc, &st, err, sizeof err), FL_RU_ENOREGS);
    fl_crashlog_free(l1);
    /* Registers are read by the names of the log's architecture: x86-64's
     * rip and rsp mean nothing in an aarch64 log (its pc and sp are
     * needed), and an architecture with no table is refused by name. */
    const char *a64 = "FAULTLINE 0.1.0\nCRASHLOG_VERSION 2\nAPPLICATION_NAME a\n"
                      "CPUARCH_NAME aarch64\nREGISTER rip 0x1000\nREGISTER rsp 0x2000\n"
                      "REGISTER x30 0x1000\nOBJECT a/4096/4096\nCALLSTACK 4100\nEND\n";
    assert_int_equal(fl_crashlog_parse(a64, strlen(a64), &l1, NULL), 0);
    assert_int_equal(fl_remote_unwind(l1, loc, &st, err, sizeof err), FL_RU_ENOREGS);
    fl_crashlog_free(l1);
    const char *rv = "FAULTLINE 0.1.0\nCRASHLOG_VERSION 2\nAPPLICATION_NAME a\n"
                     "CPUARCH_NAME riscv64\nREGISTER pc 0x1000\nREGISTER sp 0x2000\n"
                     "OBJECT a/4096/4096\nCALLSTACK 4100\nEND\n";
    assert_int_equal(fl_crashlog_parse(rv, strlen(rv), &l1, NULL), 0);
    assert_int_equal(fl_remote_unwind(l1, loc, &st, err, sizeof err), FL_RU_EUNSUPPORTED);
    assert_non_null(strstr(err, "riscv64"));
    fl_crashlog_free(l1);
    fl_symlocate_free(loc);
}

/* A log names as many OBJECTs as its sender likes.  Each module with a
 * file held two descriptors until the walk ended: 2000 OBJECTs naming the
 * crashing program took 4000, every descriptor of a server run with the
 * usual limit.  Now only objects that rip or a stack word points into get
 * a file, at most FL_RU_MAX_MODULES of them, and the walk is the same. */
static void test_remote_unwind_hostile_objects(void **state)
{
    fl_symlocate *loc = new_locator(NULL, NULL, 1);
    static fl_ru_stack st, st2;
    char err[256];
    assert_int_equal(fl_remote_unwind(crash_log, loc, &st, err, sizeof err), 0);
    const fl_object *o = NULL;
    for (size_t i = 0; i < crash_log->nobjects && !o; i++)
        if (crash_log->objects[i].build_id && crash_log->objects[i].path &&
            crash_log->callstack[0] - crash_log->objects[i].base < crash_log->objects[i].size)
            o = &crash_log->objects[i];
    assert_non_null(o);
    const char *end = strstr(crash_text, "\nEND");
    assert_non_null(end);
    size_t head = (size_t)(end - crash_text) + 1, cap = crash_len + 3000 * 400;
    char *text = malloc(cap), *p = text;
    memcpy(p, crash_text, head);
    p += head;
    for (int i = 0; i < 3000; i++) {
        /* 2000 far from anything the stack holds, 1000 over the program
         * itself (each one reached). */
        uint64_t base = i < 2000 ? 0x100000000000ull + (uint64_t)i * 0x1000000 : o->base;
        p += sprintf(p, "OBJECT x%d/%llu/%llu/%llu\nOBJECT_BUILD_ID %s\nOBJECT_PATH %s\n", i,
                     (unsigned long long)base, (unsigned long long)o->size,
                     (unsigned long long)(o->has_bias ? o->bias : o->base), o->build_id, o->path);
    }
    p += sprintf(p, "END\n");
    fl_crashlog *big = NULL;
    assert_int_equal(fl_crashlog_parse(text, (size_t)(p - text), &big, NULL), 0);
    assert_int_equal(big->nobjects, crash_log->nobjects + 3000);
    assert_int_equal(fl_remote_unwind(big, loc, &st2, err, sizeof err), 0);
    assert_true(st2.modules_with_file <= FL_RU_MAX_MODULES);
    assert_int_equal(st2.nframes, st.nframes);
    assert_memory_equal(st2.pcs, st.pcs, st.nframes * sizeof st.pcs[0]);
    fl_crashlog_free(big);
    free(text);
    fl_symlocate_free(loc);
}

/* ---------------------------------------------------------------- */
/* XML                                                                */

/* The text of <annotatedReport> of a response, checked to be well-formed
 * XML (caller frees), or NULL. */
static char *response_report(const char *resp, size_t len)
{
    xmlDoc *doc = xmlReadMemory(resp, (int)len, "resp.xml", NULL, XML_PARSE_NONET);
    if (!doc)
        return NULL;
    xmlNode *root = xmlDocGetRootElement(doc);
    char *out = NULL;
    if (root && !strcmp((const char *)root->name, "symbolicationResponse"))
        for (xmlNode *c = root->children; c; c = c->next)
            if (c->type == XML_ELEMENT_NODE && !strcmp((const char *)c->name, "annotatedReport")) {
                xmlChar *t = xmlNodeGetContent(c);
                out = strdup((const char *)t);
                xmlFree(t);
            }
    xmlFreeDoc(doc);
    return out;
}

static char *make_request(const char *report, const char *images)
{
    size_t n = strlen(report) + (images ? strlen(images) : 0) + 256;
    char *x = malloc(n);
    snprintf(x, n,
             "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<symbolicationRequest version=\"1\">\n"
             "  <crashReport><![CDATA[%s]]></crashReport>\n%s</symbolicationRequest>\n",
             report, images ? images : "");
    return x;
}

typedef struct resolver_fixture {
    fl_symlocate *loc;
    svc_resolver r;
} resolver_fixture;

static resolver_fixture *new_resolver(void)
{
    resolver_fixture *f = calloc(1, sizeof *f);
    f->loc = new_locator(NULL, NULL, 1);
    f->r.loc = f->loc;
    snprintf(f->r.cache_dir, sizeof f->r.cache_dir, "%s/symcache", workdir);
    return f;
}

static void free_resolver(resolver_fixture *f)
{
    svc_resolver_close(&f->r);
    fl_symlocate_free(f->loc);
    free(f);
}

static void test_xml_annotates_crashlog(void **state)
{
    resolver_fixture *f = new_resolver();
    char *req = make_request(crash_text, NULL);
    char *resp = NULL, err[256];
    size_t rlen = 0;
    assert_int_equal(fl_xmlsym_handle(req, strlen(req), svc_resolve, &f->r, &resp, &rlen, err,
                                      sizeof err),
                     0);
    char *rep = response_report(resp, rlen);
    assert_non_null(rep);
    /* Every CALLSTACK line is followed by its functions, with file and line. */
    assert_non_null(strstr(rep, "#   -> crash_in_compare at /"));
    assert_non_null(strstr(rep, "svc_crash.c:"));
    assert_non_null(strstr(rep, "#   -> compare_ints at "));
    assert_non_null(strstr(rep, "#   -> main at "));
    assert_non_null(strstr(rep, "libc-start.c:")); /* libc, from libc6-dbg */
    assert_non_null(strstr(resp, "unresolved=\""));
    /* The annotated log is still a crash log, with the same frames. */
    fl_crashlog *again = NULL;
    assert_int_equal(fl_crashlog_parse(rep, strlen(rep), &again, NULL), 0);
    assert_int_equal(again->ncallstack, crash_log->ncallstack);
    fl_crashlog_free(again);
    free(rep);
    free(resp);
    free(req);
    free_resolver(f);
}

static void test_xml_text_backtrace_and_images(void **state)
{
    resolver_fixture *f = new_resolver();
    const fl_object *app = object_named("svc_crash");
    assert_non_null(app);
    /* A gdb-style textual backtrace with the module given as an image
     * (start/size/bias, build id and path) instead of OBJECT lines. */
    char report[1024], images[1024];
    snprintf(report, sizeof report,
             "Program received signal SIGSEGV\n"
             "#0  0x%016llx in ?? ()\n"
             "#1  0x%016llx in ?? ()\n"
             "#2  0x00000000deadbeef in ?? ()\n"
             "not a frame 0x%llx\n",
             (unsigned long long)crash_log->callstack[0],
             (unsigned long long)crash_log->callstack[1],
             (unsigned long long)crash_log->callstack[0]);
    snprintf(images, sizeof images,
             "  <binaryImages>\n    <image name=\"svc_crash\" start=\"0x%llx\" size=\"0x%llx\" "
             "bias=\"0x%llx\" buildId=\"%s\" path=\"%s\"/>\n  </binaryImages>\n",
             (unsigned long long)app->base, (unsigned long long)app->size,
             (unsigned long long)app->bias, app->build_id, app->path);
    char *req = make_request(report, images);
    char *resp = NULL, err[256];
    size_t rlen = 0;
    assert_int_equal(fl_xmlsym_handle(req, strlen(req), svc_resolve, &f->r, &resp, &rlen, err,
                                      sizeof err),
                     0);
    char *rep = response_report(resp, rlen);
    assert_non_null(rep);
    assert_non_null(strstr(rep, " in ?? () => crash_in_compare at "));
    assert_non_null(strstr(rep, " in ?? () => compare_ints at "));
    /* Not in a known module / not a frame line: left alone. */
    assert_non_null(strstr(rep, "#2  0x00000000deadbeef in ?? ()\n"));
    char plain[128];
    snprintf(plain, sizeof plain, "not a frame 0x%llx\n", (unsigned long long)crash_log->callstack[0]);
    assert_non_null(strstr(rep, plain));
    assert_non_null(strstr(resp, "candidates=\"2\" annotated=\"2\" unresolved=\"0\""));
    free(rep);
    free(resp);
    free(req);
    free_resolver(f);
}

static void expect_rejected(const char *xml, int code, const char *tag)
{
    unsigned long loads = fl_xmlsym_external_loads();
    char *resp = NULL, err[256] = "";
    size_t rlen = 0;
    int rc = fl_xmlsym_handle(xml, strlen(xml), NULL, NULL, &resp, &rlen, err, sizeof err);
    assert_int_equal(rc, code);
    assert_true(err[0] != '\0');
    assert_non_null(resp);
    char want[64];
    snprintf(want, sizeof want, "<error code=\"%s\">", tag);
    assert_non_null(strstr(resp, want));
    /* No content of /etc/passwd, and libxml2 was never asked to load
     * anything. */
    assert_null(strstr(resp, "root:"));
    assert_int_equal(fl_xmlsym_external_loads(), loads);
    /* The error response itself is well-formed XML. */
    xmlDoc *doc = xmlReadMemory(resp, (int)rlen, "e.xml", NULL, XML_PARSE_NONET);
    assert_non_null(doc);
    xmlFreeDoc(doc);
    free(resp);
}

static void test_xml_xxe_refused(void **state)
{
    expect_rejected("<?xml version=\"1.0\"?>\n<!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]>\n"
                    "<symbolicationRequest><crashReport>&e;</crashReport></symbolicationRequest>",
                    FL_XMLSYM_EDOCTYPE, "doctype");
    expect_rejected("<!DOCTYPE x [<!ENTITY % p SYSTEM \"http://127.0.0.1:9/x.dtd\"> %p;]>"
                    "<symbolicationRequest><crashReport>x</crashReport></symbolicationRequest>",
                    FL_XMLSYM_EDOCTYPE, "doctype");
    expect_rejected("<!DOCTYPE symbolicationRequest SYSTEM \"file:///etc/passwd\">"
                    "<symbolicationRequest><crashReport>x</crashReport></symbolicationRequest>",
                    FL_XMLSYM_EDOCTYPE, "doctype");
    /* Billion laughs never gets to declare its entities. */
    expect_rejected("<!DOCTYPE l [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;\">"
                    "<!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;\">]>"
                    "<symbolicationRequest><crashReport>&c;</crashReport></symbolicationRequest>",
                    FL_XMLSYM_EDOCTYPE, "doctype");
    /* An undeclared entity is simply malformed. */
    expect_rejected("<symbolicationRequest><crashReport>&e;</crashReport></symbolicationRequest>",
                    FL_XMLSYM_EMALFORMED, "malformed");
    /* XInclude is not processed: the include element is a child element. */
    expect_rejected("<symbolicationRequest><crashReport><xi:include "
                    "xmlns:xi=\"http://www.w3.org/2001/XInclude\" href=\"file:///etc/passwd\" "
                    "parse=\"text\"/></crashReport></symbolicationRequest>",
                    FL_XMLSYM_ESCHEMA, "schema");
}

static void test_xml_malformed(void **state)
{
    expect_rejected("", FL_XMLSYM_EMALFORMED, "malformed");
    expect_rejected("not xml at all", FL_XMLSYM_EMALFORMED, "malformed");
    expect_rejected("<symbolicationRequest><crashReport>abc</crashReport>", FL_XMLSYM_EMALFORMED,
                    "malformed");
    expect_rejected("<symbolicationRequest><crashReport><![CDATA[abc</crashReport></symbolicationRequest>",
                    FL_XMLSYM_EMALFORMED, "malformed");
    expect_rejected("<a><crashReport>x</crashReport></a>", FL_XMLSYM_ESCHEMA, "schema");
    expect_rejected("<symbolicationRequest/>", FL_XMLSYM_ESCHEMA, "schema");
    expect_rejected("<symbolicationRequest version=\"2\"><crashReport>x</crashReport>"
                    "</symbolicationRequest>",
                    FL_XMLSYM_ESCHEMA, "schema");
    expect_rejected("<symbolicationRequest><crashReport>x</crashReport><binaryImages>"
                    "<image name=\"a\" start=\"zz\"/></binaryImages></symbolicationRequest>",
                    FL_XMLSYM_ESCHEMA, "schema");
    /* The message names the line. */
    char *resp = NULL, err[256];
    const char *bad = "<symbolicationRequest>\n<crashReport>\n</oops>\n</symbolicationRequest>";
    assert_int_equal(fl_xmlsym_handle(bad, strlen(bad), NULL, NULL, &resp, NULL, err, sizeof err),
                     FL_XMLSYM_EMALFORMED);
    assert_non_null(strstr(err, "line 3"));
    free(resp);
}

static void test_xml_cdata_split(void **state)
{
    /* "]]>" in the report must survive the trip through CDATA; characters
     * XML cannot carry become '?'. */
    const char *text = "a ]]> b ]]]]> c\x01 ]]";
    char *resp = NULL;
    size_t rlen = 0;
    assert_int_equal(fl_xmlsym_response(text, strlen(text), NULL, &resp, &rlen), 0);
    assert_non_null(strstr(resp, "]]]]><![CDATA[>"));
    char *back = response_report(resp, rlen);
    assert_non_null(back);
    assert_string_equal(back, "a ]]> b ]]]]> c? ]]");
    free(back);
    free(resp);

    /* And through a whole request: text entities and several CDATA
     * sections in crashReport are joined. */
    const char *req = "<symbolicationRequest><crashReport>x &amp; y<![CDATA[ ]]]]><![CDATA[> z]]>"
                      "</crashReport></symbolicationRequest>";
    fl_xmlsym_request *r = NULL;
    char err[256];
    assert_int_equal(fl_xmlsym_parse_request(req, strlen(req), &r, err, sizeof err), 0);
    size_t n;
    assert_string_equal(fl_xmlsym_request_report(r, &n), "x & y ]]> z");
    fl_xmlsym_request_free(r);
}

/* An OBJECT line whose value is longer than the annotator reads (4 KiB)
 * in a report that is not a whole crash log: the line is skipped.  It
 * used to free the module name of the OBJECT line before it a second
 * time (the value was refused before the module was cleared). */
static void test_xml_object_value_too_long(void **state)
{
    static char req[8192];
    size_t n = (size_t)snprintf(req, sizeof req,
                                "<symbolicationRequest><crashReport><![CDATA[\n"
                                "OBJECT first/4096/4096\n"
                                "OBJECT ");
    memset(req + n, 'a', 5000);
    n += 5000;
    snprintf(req + n, sizeof req - n,
             "/8192/4096\nCALLSTACK 0x1010\n]]></crashReport></symbolicationRequest>");
    char *resp = NULL, err[256];
    size_t rlen = 0;
    assert_int_equal(fl_xmlsym_handle(req, strlen(req), NULL, NULL, &resp, &rlen, err, sizeof err),
                     0);
    assert_non_null(resp);
    free(resp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_locate_tiers),
        cmocka_unit_test(test_locate_executable),
        cmocka_unit_test(test_locate_debuginfod_order_and_outage),
        cmocka_unit_test(test_locate_debuginfod_server_error),
        cmocka_unit_test(test_locate_threads),
        cmocka_unit_test(test_remote_unwind_and_pick),
        cmocka_unit_test(test_remote_unwind_hostile_objects),
        cmocka_unit_test(test_xml_annotates_crashlog),
        cmocka_unit_test(test_xml_text_backtrace_and_images),
        cmocka_unit_test(test_xml_xxe_refused),
        cmocka_unit_test(test_xml_malformed),
        cmocka_unit_test(test_xml_cdata_split),
        cmocka_unit_test(test_xml_object_value_too_long),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
