/*
 * logwrite.c - the lines of a converted crash log (fl_logwrite.h).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "fl_logwrite.h"

void fl_lw_verror(char *err, size_t errcap, const char *shown, const char *what, const char *fmt,
                  va_list ap)
{
    if (!err || !errcap)
        return;
    int n = snprintf(err, errcap, "%s: %s", shown, what);
    if (!fmt || n < 0 || (size_t)n >= errcap)
        return;
    strncat(err, " (", errcap - (size_t)n - 1);
    size_t m = strlen(err);
    vsnprintf(err + m, errcap - m, fmt, ap);
    m = strlen(err);
    if (m + 1 < errcap)
        strcat(err, ")");
}

bool fl_lw_line(FILE *out, fl_line *l)
{
    return fwrite(l->buf, 1, l->len, out) == l->len && fputc('\n', out) != EOF;
}

bool fl_lw_blank(const char *s)
{
    for (; s && *s; s++)
        if (*s != ' ' && *s != '\t')
            return false;
    return true;
}

bool fl_lw_str(FILE *out, const char *key, const char *v)
{
    fl_line l;
    if (fl_lw_blank(v))
        return true;
    fl_line_start(&l, key);
    fl_line_str(&l, v);
    return fl_lw_line(out, &l);
}

bool fl_lw_i64(FILE *out, const char *key, int64_t v)
{
    fl_line l;
    fl_line_start(&l, key);
    fl_line_i64(&l, v);
    return fl_lw_line(out, &l);
}

bool fl_lw_hex(FILE *out, const char *key, uint64_t v)
{
    fl_line l;
    fl_line_start(&l, key);
    fl_line_hex(&l, v);
    return fl_lw_line(out, &l);
}

bool fl_lw_stack(FILE *out, uint64_t addr, const uint8_t *bytes, size_t n)
{
    for (size_t o = 0; o < n; o += 64) {
        fl_line l;
        fl_line_start(&l, "STACK");
        fl_line_hex(&l, addr + o);
        fl_line_char(&l, ' ');
        fl_line_hexbytes(&l, bytes + o, n - o < 64 ? n - o : 64);
        if (!fl_lw_line(out, &l))
            return false;
    }
    return true;
}

bool fl_lw_object(FILE *out, const char *path, uint64_t start, uint64_t size, const uint64_t *bias,
                  const uint8_t *build_id, size_t build_id_len)
{
    const char *name = fl_lw_base_name(path);
    fl_line l;
    fl_line_start(&l, "OBJECT");
    /* Version 1 wants a file name; the numbers are read from the right,
     * so a '/' in it would do no harm anyway. */
    fl_line_str(&l, !fl_lw_blank(name) ? name : "unknown");
    fl_line_char(&l, '/');
    fl_line_u64(&l, start);
    fl_line_char(&l, '/');
    fl_line_u64(&l, size);
    if (bias) {
        fl_line_char(&l, '/');
        fl_line_u64(&l, *bias);
    }
    if (!fl_lw_line(out, &l))
        return false;
    if (build_id_len) {
        fl_line_start(&l, "OBJECT_BUILD_ID");
        fl_line_hexbytes(&l, build_id, build_id_len);
        if (!fl_lw_line(out, &l))
            return false;
    }
    return path[0] != '/' || fl_lw_str(out, "OBJECT_PATH", path);
}

bool fl_lw_callstack(FILE *out, const uint64_t *pcs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        fl_line l;
        fl_line_start(&l, "CALLSTACK");
        fl_line_u64(&l, pcs[i]);
        if (!fl_lw_line(out, &l))
            return false;
    }
    return true;
}

bool fl_lw_thread(FILE *out, uint64_t tid, const char *name, const uint64_t *pcs, size_t n)
{
    fl_line l;
    fl_line_start(&l, "THREAD");
    fl_line_u64(&l, tid);
    if (!fl_lw_blank(name)) {
        fl_line_char(&l, ' ');
        fl_line_str(&l, name);
    }
    if (!fl_lw_line(out, &l))
        return false;
    for (size_t k = 0; k < n; k++)
        if (!fl_lw_hex(out, "THREAD_FRAME", pcs[k]))
            return false;
    return true;
}

bool fl_lw_intro(FILE *out, const char *source)
{
    return fprintf(out,
                   "# This is a log of a program crash, made by Faultline from the program's\n"
                   "#  %s. It is meant to help the developers of the crashing program\n"
                   "#  find the problem. Faultline did not cause the crash; it only reports\n"
                   "#  it. Please contact the vendor of the program, not the Faultline "
                   "developers.\n\n",
                   source) >= 0;
}

const char *fl_lw_signal_name(int sig)
{
    static const struct {
        int sig;
        const char *name;
    } names[] = {
        {SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"},   {SIGILL, "SIGILL"}, {SIGFPE, "SIGFPE"},
        {SIGABRT, "SIGABRT"}, {SIGTRAP, "SIGTRAP"}, {SIGSYS, "SIGSYS"}, {SIGQUIT, "SIGQUIT"},
        {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].sig == sig)
            return names[i].name;
    return NULL;
}

const char *fl_lw_base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

typedef struct frames_acc {
    uint64_t *pcs;
    size_t n, max;
} frames_acc;

static int frame_cb(Dwfl_Frame *state, void *arg)
{
    frames_acc *f = arg;
    Dwarf_Addr pc;
    bool activation;
    if (!dwfl_frame_pc(state, &pc, &activation))
        return DWARF_CB_ABORT;
    /* Frames after the first are return addresses, as the client writes
     * them; libdwfl gives them unadjusted (activation false). */
    f->pcs[f->n++] = pc;
    return f->n < f->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

size_t fl_lw_thread_frames(Dwfl_Thread *thread, uint64_t *pcs, size_t max)
{
    frames_acc f = {pcs, 0, max};
    if (max)
        dwfl_thread_getframes(thread, frame_cb, &f);
    return f.n;
}
