/*
 * symupload.c - `faultline symbols add --server URL`: upload debug files.
 *
 * Contract (docs/http-api.md): POST URL/api/v1/symbols with the file as the
 * body answers 201 {"build_id":"..."}.  The admin token, when
 * FAULTLINE_ADMIN_TOKEN is set, goes in "Authorization: Bearer".  Each file
 * is checked locally first (an ELF file; its build id is printed and
 * compared with the server's answer), then streamed from disk.
 */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fl_symcache.h"
#include "fl_symupload.h"

#define RESPONSE_CAP 4096 /* bytes of the server's answer we keep */

typedef struct resp {
    char buf[RESPONSE_CAP + 1];
    size_t len;
} resp;

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    resp *r = arg;
    size_t len = size * n, k = len;
    if (k > RESPONSE_CAP - r->len)
        k = RESPONSE_CAP - r->len;
    memcpy(r->buf + r->len, p, k);
    r->len += k;
    r->buf[r->len] = '\0';
    return len;
}

typedef struct progress {
    const char *name;
    int index, count;
} progress;

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    (void)dltotal;
    (void)dlnow;
    const progress *p = arg;
    if (ultotal > 0)
        fprintf(stderr, "\r[%d/%d] %s %3d%%\033[K", p->index, p->count, p->name,
                (int)(ulnow * 100 / ultotal));
    return 0;
}

int fl_symupload(const char *server, const char *path, int show_progress, int index, int count,
                 char *msg, size_t msglen)
{
    uint8_t id[FL_SYM_BUILD_ID_MAX];
    size_t idlen = 0;
    uint64_t fp;
    char err[512], hex[2 * FL_SYM_BUILD_ID_MAX + 1] = "";
    int rc = fl_symcache_identify(path, id, &idlen, &fp, err, sizeof err);
    if (rc != 0) {
        snprintf(msg, msglen, "%s", err);
        return rc;
    }
    if (idlen == 0) {
        snprintf(msg, msglen, "%s: no GNU build id, the server could not key it", path);
        return FL_SYM_ENOTELF;
    }
    fl_sym_hex(id, idlen, hex, sizeof hex);
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st) != 0) {
        snprintf(msg, msglen, "%s: %s", path, strerror(errno));
        if (f)
            fclose(f);
        return FL_SYM_EIO;
    }
    size_t ul = strlen(server);
    while (ul > 0 && server[ul - 1] == '/')
        ul--;
    char url[2048];
    if ((size_t)snprintf(url, sizeof url, "%.*s/api/v1/symbols", (int)ul, server) >= sizeof url) {
        fclose(f);
        snprintf(msg, msglen, "server URL too long");
        return FL_SYM_EINVAL;
    }
    CURL *c = curl_easy_init();
    if (!c) {
        fclose(f);
        snprintf(msg, msglen, "cannot initialise libcurl");
        return FL_SYM_ENOMEM;
    }
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/octet-stream");
    h = curl_slist_append(h, "Expect:");
    {
        /* The file's name, shown by GET /api/v1/symbols. */
        const char *base = strrchr(path, '/');
        char nh[300];
        if ((size_t)snprintf(nh, sizeof nh, "X-Faultline-Name: %s", base ? base + 1 : path) <
            sizeof nh)
            h = curl_slist_append(h, nh);
    }
    const char *token = getenv("FAULTLINE_ADMIN_TOKEN");
    if (token && *token) {
        char auth[1024];
        if ((size_t)snprintf(auth, sizeof auth, "Authorization: Bearer %s", token) < sizeof auth)
            h = curl_slist_append(h, auth);
    }
    static resp r;
    r.len = 0;
    r.buf[0] = '\0';
    progress pr = {path, index, count};
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_READDATA, f);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)st.st_size);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "faultline/0.1.0");
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    if (show_progress) {
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, &pr);
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    }
    CURLcode cc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    fclose(f);
    if (show_progress)
        fprintf(stderr, "\r\033[K");
    if (cc != CURLE_OK) {
        snprintf(msg, msglen, "%s: upload to %s failed: %s", path, url, curl_easy_strerror(cc));
        return FL_SYM_EIO;
    }
    if (status != 200 && status != 201) {
        snprintf(msg, msglen, "%s: server answered HTTP %ld: %.200s", path, status, r.buf);
        return FL_SYM_EIO;
    }
    if (!strstr(r.buf, hex)) {
        snprintf(msg, msglen, "%s %s: uploaded (HTTP %ld), but the server answered another build id: %.200s",
                 hex, path, status, r.buf);
        return 0;
    }
    snprintf(msg, msglen, "%s %s: uploaded (HTTP %ld, %lld bytes)", hex, path, status,
             (long long)st.st_size);
    return 0;
}
