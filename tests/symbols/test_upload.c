/*
 * test_upload - `faultline symbols add --server URL` against a stand-in
 * server (libmicrohttpd on 127.0.0.1, a free port) that implements the
 * contract's POST /api/v1/symbols: 201 {"build_id":"..."}.
 *
 *   test_upload FAULTLINE PROGRAM
 *
 * Checks: the body arrives whole, the bearer token is sent, a 401 and a
 * non-ELF file make the command fail (the latter without any request).
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
        snprintf(body, sizeof body, "{\"error\":\"unauthorized\"}");
    } else {
        status = 201;
        snprintf(body, sizeof body, "{\"build_id\":\"%s\"}", g_hex);
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
    size_t before = g_requests;
    snprintf(cmd, sizeof cmd,
             "FAULTLINE_ADMIN_TOKEN=sekrit '%s' symbols add /etc/hostname --server "
             "http://127.0.0.1:%u >/dev/null 2>&1",
             fl, port);
    if ((rc = run(cmd)) != 1 || g_requests != before) {
        fprintf(stderr, "non-ELF file: rc %d, requests %zu -> %zu\n", rc, before, g_requests);
        fails++;
    }
    MHD_stop_daemon(d);
    printf("upload: %s\n", fails ? "FAILED" : "ok");
    return fails ? 1 : 0;
}
