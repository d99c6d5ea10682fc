/*
 * test_upload - `faultline symbols add --server URL` against a stand-in
 * server (libmicrohttpd on 127.0.0.1, a free port) that implements the
 * contract's POST /api/v1/symbols: 201 {"build_id":"..."}.
 *
 *   test_upload FAULTLINE PROGRAM
 *
 * Checks: the body arrives whole, the bearer token is sent (from
 * FAULTLINE_ADMIN_TOKEN or --token); --server takes the base URL or one of
 * the API's URLs (the ingest URL too); a 401 fails the command with one
 * line naming --token and FAULTLINE_ADMIN_TOKEN and stops it; no token, a
 * missing option value, a non-ELF file, a directory and a fully stripped
 * binary fail it without any request, naming the file.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fl_symcache.h"

static size_t g_bytes, g_requests;
static int g_auth_ok;
static char g_hex[2 * FL_SYM_BUILD_ID_MAX + 1];

typedef struct req {
    size_t bytes;
} req;

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *data,
                               size_t *size, void **state)
{
    (void)cls;
    (void)version;
    req *r = *state;
    if (!r) {
        r = calloc(1, sizeof *r);
        *state = r;
        return MHD_YES;
    }
    if (*size) {
        r->bytes += *size;
        *size = 0;
        return MHD_YES;
    }
    /* /other/...: a server that answers for another file; /silent/...:
     * one that takes 3 s to answer. */
    int other = !strncmp(url, "/other/", 7), silent = !strncmp(url, "/silent/", 8);
    if (other)
        url += 6;
    if (silent) {
        url += 7;
        sleep(3);
    }
    int ok_path = !strcmp(method, "POST") && !strcmp(url, "/api/v1/symbols");
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    int auth_ok = auth && !strcmp(auth, "Bearer sekrit");
    char body[256];
    unsigned status;
    if (!ok_path) {
        status = 404;
        snprintf(body, sizeof body, "{\"error\":\"not found\"}");
    } else if (!auth_ok) {
        status = 401;
        snprintf(body, sizeof body, "{\"error\":\"unauthorized\"}\n"); /* as the server's */
    } else {
        status = 201;
        snprintf(body, sizeof body, "{\"build_id\":\"%s\"}", other ? "deadbeef" : g_hex);
        g_bytes = r->bytes;
        g_auth_ok = 1;
    }
    g_requests++;
    free(r);
    *state = NULL;
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_COPY);
    enum MHD_Result rc = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return rc;
}

static int run(const char *cmd)
{
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char g_out[8192]; /* what the last run_out() printed, stdout and stderr */

/* Runs cmd with its output into g_out; returns its exit status. */
static int run_out(const char *cmd, const char *outfile)
{
    char full[4096];
    snprintf(full, sizeof full, "%s >'%s' 2>&1 </dev/null", cmd, outfile);
    int rc = run(full);
    g_out[0] = '\0';
    FILE *f = fopen(outfile, "r");
    if (f) {
        size_t n = fread(g_out, 1, sizeof g_out - 1, f);
        g_out[n] = '\0';
        fclose(f);
    }
    return rc;
}

static int g_fails;

static void expect(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "FAIL: %s\n--- output:\n%s---\n", what, g_out);
        g_fails++;
    }
}

static int lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_upload FAULTLINE PROGRAM\n");
        return 2;
    }
    const char *fl = argv[1], *prog = argv[2];
    uint8_t id[FL_SYM_BUILD_ID_MAX];
    size_t idlen;
    uint64_t fp;
    char err[256];
    if (fl_symcache_identify(prog, id, &idlen, &fp, err, sizeof err) != 0 || !idlen) {
        fprintf(stderr, "identify: %s\n", err);
        return 1;
    }
    fl_sym_hex(id, idlen, g_hex, sizeof g_hex);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = 0;
    struct MHD_Daemon *d =
        MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, handler, NULL,
                         MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "cannot start the stand-in server\n");
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    unsigned port = info ? info->port : 0;
    struct stat st;
    stat(prog, &st);
    char cmd[2048];
    int fails = 0;

    snprintf(cmd, sizeof cmd,
             "FAULTLINE_ADMIN_TOKEN=sekrit '%s' symbols add '%s' --server http://127.0.0.1:%u/ "
             "</dev/null 2>&1",
             fl, prog, port);
    int rc = run(cmd);
    if (rc != 0 || !g_auth_ok || g_bytes != (size_t)st.st_size) {
        fprintf(stderr, "upload: rc %d, auth %d, %zu of %lld bytes\n", rc, g_auth_ok, g_bytes,
                (long long)st.st_size);
        fails++;
    }
    snprintf(cmd, sizeof cmd,
             "FAULTLINE_ADMIN_TOKEN=wrong '%s' symbols add '%s' --server http://127.0.0.1:%u "
             ">/dev/null 2>&1",
             fl, prog, port);
    if ((rc = run(cmd)) != 1) {
        fprintf(stderr, "401 should fail the command: rc %d\n", rc);
        fails++;
    }
    size_t before0 = g_requests;
    snprintf(cmd, sizeof cmd,
             "FAULTLINE_ADMIN_TOKEN=sekrit '%s' symbols add /etc/hostname --server "
             "http://127.0.0.1:%u >/dev/null 2>&1",
             fl, port);
    if ((rc = run(cmd)) != 1 || g_requests != before0) {
        fprintf(stderr, "non-ELF file: rc %d, requests %zu -> %zu\n", rc, before0, g_requests);
        fails++;
    }
    /* --server as the ingest URL (FAULTLINE_URL's, with its key), the
     * symbols URL or the base with a slash: all go to /api/v1/symbols
     * (the stand-in answers 404 anywhere else).  --token as the token. */
    char tmpl[] = "/tmp/fl-test-upload.XXXXXX";
    const char *tmp = mkdtemp(tmpl);
    if (!tmp) {
        perror("mkdtemp");
        return 1;
    }
    char out[600], stripped[600];
    snprintf(out, sizeof out, "%s/out", tmp);
    snprintf(stripped, sizeof stripped, "%s/stripped", tmp);
    static const char *const forms[] = {"/api/v1/crashes", "/api/v1/crashes/?key=k",
                                        "/api/v1/symbols", "/api/v1/symbols/", "/"};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        g_auth_ok = 0;
        snprintf(cmd, sizeof cmd,
                 "env -u FAULTLINE_ADMIN_TOKEN '%s' symbols add '%s' --server "
                 "'http://127.0.0.1:%u%s' %s",
                 fl, prog, port, forms[i], i % 2 ? "--token=sekrit" : "--token sekrit");
        rc = run_out(cmd, out);
        char what[200];
        snprintf(what, sizeof what, "--server URL%s --token: upload to /api/v1/symbols", forms[i]);
        expect(rc == 0 && g_auth_ok && strstr(g_out, g_hex), what);
    }

    /* No token: refused before anything is sent, naming both ways to
     * give it. */
    size_t before = g_requests;
    snprintf(cmd, sizeof cmd,
             "env -u FAULTLINE_ADMIN_TOKEN '%s' symbols add '%s' --server http://127.0.0.1:%u", fl,
             prog, port);
    rc = run_out(cmd, out);
    expect(rc == 64 && strstr(g_out, "--token") && strstr(g_out, "FAULTLINE_ADMIN_TOKEN") &&
               g_requests == before,
           "no token: exit 64 naming --token and FAULTLINE_ADMIN_TOKEN, no request");

    /* A wrong token: one clear line, and the second file is not sent. */
    snprintf(cmd, sizeof cmd,
             "FAULTLINE_ADMIN_TOKEN=wrong '%s' symbols add '%s' '%s' --server http://127.0.0.1:%u",
             fl, prog, prog, port);
    before = g_requests;
    rc = run_out(cmd, out);
    expect(rc == 1 && strstr(g_out, "HTTP 401") && strstr(g_out, "--token") &&
               strstr(g_out, "FAULTLINE_ADMIN_TOKEN") && !strstr(g_out, "\n\n"),
           "401: exit 1, one line naming --token and FAULTLINE_ADMIN_TOKEN, no blank line");
    expect(g_requests == before + 1, "401: the next file is not uploaded");
    snprintf(cmd, sizeof cmd,
             "FAULTLINE_ADMIN_TOKEN=wrong '%s' symbols add '%s' --server http://127.0.0.1:%u", fl,
             prog, port);
    rc = run_out(cmd, out);
    expect(rc == 1 && lines(g_out) == 1, "401 with one file: exactly one line");

    /* Files the server would refuse are refused here, naming them, before
     * any request: not ELF, a directory without one ELF file with symbols
     * (only the stripped binary), a fully stripped binary. */
    snprintf(cmd, sizeof cmd, "strip --strip-all -o '%s' '%s'", stripped, prog);
    if (run(cmd) != 0) {
        fprintf(stderr, "strip failed\n");
        return 1;
    }
    char dirsays[700], stripsays[700];
    snprintf(dirsays, sizeof dirsays,
             "%s: no ELF file with a build id and DWARF or a symbol table under it", tmp);
    snprintf(stripsays, sizeof stripsays, "%s: no debug information: neither DWARF", stripped);
    const struct {
        const char *file, *says;
    } bad[] = {{"/etc/hostname", "/etc/hostname: not a usable ELF file"},
               {tmp, dirsays},
               {stripped, stripsays}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        before = g_requests;
        snprintf(cmd, sizeof cmd,
                 "FAULTLINE_ADMIN_TOKEN=sekrit '%s' symbols add '%s' --server http://127.0.0.1:%u",
                 fl, bad[i].file, port);
        rc = run_out(cmd, out);
        char what[800];
        snprintf(what, sizeof what, "exit 1, says '%s', no request", bad[i].says);
        expect(rc == 1 && strstr(g_out, bad[i].says) && g_requests == before, what);
    }

    /* The same refusal without --server: the stripped binary has nothing
     * to symbolize with (its DWARF is nowhere to be found). */
    snprintf(cmd, sizeof cmd, "'%s' symbols add '%s' --cache '%s/cache'", fl, stripped, tmp);
    rc = run_out(cmd, out);
    expect(rc == 1 && strstr(g_out, "no debug information"),
           "stripped binary, local: exit 1, no debug information");

    /* An answer that does not name the file's build id is not an upload:
     * another service at that URL. */
    snprintf(cmd, sizeof cmd,
             "FAULTLINE_ADMIN_TOKEN=sekrit '%s' symbols add '%s' --server http://127.0.0.1:%u/other",
             fl, prog, port);
    rc = run_out(cmd, out);
    expect(rc == 1 && strstr(g_out, "does not name the file's build id"),
           "an answer for another build id: exit 1, said");
    /* A server that does not answer: given up after --timeout seconds of
     * nothing moving, not waited for forever; a temporary failure (75),
     * tried once with --retries 0. */
    snprintf(cmd, sizeof cmd,
             "FAULTLINE_ADMIN_TOKEN=sekrit '%s' symbols add '%s' --server "
             "http://127.0.0.1:%u/silent --timeout 1 --retries 0",
             fl, prog, port);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = run_out(cmd, out);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    expect(rc == 75 && strstr(g_out, "nothing moved for 1 s") &&
               strstr(g_out, "the server is unavailable") && !strstr(g_out, "trying again") &&
               t1.tv_sec - t0.tv_sec < 3,
           "a silent server: exit 75 after --timeout 1 and no retry, said");
    sleep(3); /* the stand-in's thread is still in its sleep */
    /* A port nothing listens on (bound here, never listened on: the
     * kernel refuses connections to it, and no one else takes it): each
     * retry said as it comes, with the reason and the wait, then the
     * exit 75; --retries 0: no such line. */
    int closed = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in ca = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t calen = sizeof ca;
    if (closed < 0 || bind(closed, (struct sockaddr *)&ca, sizeof ca) ||
        getsockname(closed, (struct sockaddr *)&ca, &calen)) {
        perror("a closed port");
        return 1;
    }
    snprintf(cmd, sizeof cmd,
             "FAULTLINE_ADMIN_TOKEN=sekrit '%s' symbols add '%s' --server http://127.0.0.1:%u "
             "--retries 1",
             fl, prog, ntohs(ca.sin_port));
    rc = run_out(cmd, out);
    char *retry = strstr(g_out, "(Connection refused); trying again in 2 s (try 2 of 2)\n");
    expect(rc == 75 && retry && !strstr(strchr(retry, '\n'), "trying again") &&
               strstr(g_out, "the server is unavailable; 1 file not uploaded"),
           "a closed port, --retries 1: the retry said with its reason, then exit 75");
    snprintf(cmd, sizeof cmd,
             "FAULTLINE_ADMIN_TOKEN=sekrit '%s' symbols add '%s' --server http://127.0.0.1:%u "
             "--retries 0",
             fl, prog, ntohs(ca.sin_port));
    rc = run_out(cmd, out);
    expect(rc == 75 && strstr(g_out, "(Connection refused)") && !strstr(g_out, "trying again"),
           "a closed port, --retries 0: said once, no retry");
    close(closed);
    /* Usage errors, before any request: not an http(s) URL, options of the
     * local cache with --server, a bad --timeout. */
    static const char *const misuse[] = {"--server 'not a url'",
                                         "--server ftp://127.0.0.1/",
                                         "--server file:///etc",
                                         "--server http://127.0.0.1:1 --force",
                                         "--server http://127.0.0.1:1 --cache /tmp",
                                         "--server http://127.0.0.1:1 --timeout 0",
                                         "--server http://127.0.0.1:1 --timeout 5x",
                                         "--timeout 5",
                                         "--server http://127.0.0.1:1 --retries -1",
                                         "--server http://127.0.0.1:1 --retries 101",
                                         "--server http://127.0.0.1:1 --retries x",
                                         "--retries 1"};
    for (size_t i = 0; i < sizeof misuse / sizeof misuse[0]; i++) {
        before = g_requests;
        snprintf(cmd, sizeof cmd, "FAULTLINE_ADMIN_TOKEN=sekrit '%s' symbols add '%s' %s", fl,
                 prog, misuse[i]);
        rc = run_out(cmd, out);
        char what[300];
        snprintf(what, sizeof what, "symbols add FILE %s: exit 64", misuse[i]);
        expect(rc == 64 && g_requests == before && lines(g_out) >= 1, what);
    }

    /* A missing value is said to be one, not an unknown option. */
    static const char *const last[] = {"--server", "--token", "--cache", "--retries"};
    for (size_t i = 0; i < sizeof last / sizeof last[0]; i++) {
        snprintf(cmd, sizeof cmd, "'%s' symbols add '%s' %s", fl, prog, last[i]);
        rc = run_out(cmd, out);
        char says[64], what[128];
        snprintf(says, sizeof says, "%s needs a value", last[i]);
        snprintf(what, sizeof what, "symbols add FILE %s: exit 64, '%s'", last[i], says);
        expect(rc == 64 && strstr(g_out, says) && !strstr(g_out, "unknown option"), what);
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    run(cmd);

    MHD_stop_daemon(d);
    fails += g_fails;
    printf("upload: %s\n", fails ? "FAILED" : "ok");
    return fails ? 1 : 0;
}
