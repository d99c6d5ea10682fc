/*
 * crashlog_read.c - parse a crash log into an fl_crashlog.
 *
 * How this works: the text is walked line by line once.  Each line is
 * trimmed, comments and blank lines are skipped, and the first word selects
 * a handler.  Strings are copied into an arena owned by the log so that one
 * fl_crashlog_free() releases everything; repeated fields go into arrays
 * that grow geometrically.  Lines that qualify an earlier line (ETC_VALUE,
 * OBJECT_PATH, THREAD_FRAME, ...) attach to the most recent one and are an
 * error when there is none, because a server must never guess which object a
 * build id belongs to.
 *
 * Every failure carries the 1-based line number and a reason, so that the
 * reporter and the server can say precisely why a log was refused.
 *
 * fl_crashlog_check() runs the same code with `check` set: strings then
 * stay where they are in the copy of the text (every one is a
 * NUL-terminated piece of a line by the time it is kept), repeated fields
 * are counted into one scratch element instead of arrays, and STACK bytes
 * are decoded in place.  The server's ingest needs only the verdict and a
 * few header fields, and this is most of the reader's allocation and
 * copying gone, with no second set of rules to keep in step.
 */
#include "fl_crashlog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- arena ---------------------------------------------------------- */

struct fl_arena {
    struct fl_arena *next;
    size_t used, cap;
    char data[];
};

/* n bytes and a NUL after them, uninitialized. */
static char *arena_alloc(fl_crashlog *log, size_t n)
{
    struct fl_arena *a = log->arena_;
    if (!a || a->cap - a->used < n + 1) {
        size_t cap = n + 1 > 16384 ? n + 1 : 16384;
        struct fl_arena *na = malloc(sizeof *na + cap);
        if (!na)
            return NULL;
        na->next = a;
        na->used = 0;
        na->cap = cap;
        log->arena_ = a = na;
    }
    char *p = a->data + a->used;
    p[n] = '\0';
    a->used += n + 1;
    return p;
}

static char *arena_copy(fl_crashlog *log, const char *s, size_t n)
{
    char *p = arena_alloc(log, n);
    if (p)
        memcpy(p, s, n);
    return p;
}

/* Grow *arr (of *n elements of size sz) by one zeroed element; returns it. */
static void *grow(void *arrp, size_t *n, size_t sz)
{
    void **arr = arrp;
    size_t cnt = *n;
    /* Capacity is implicit: powers of two from 8. */
    if (cnt == 0 || (cnt >= 8 && (cnt & (cnt - 1)) == 0)) {
        size_t cap = cnt < 8 ? 8 : cnt * 2;
        void *na = realloc(*arr, cap * sz);
        if (!na)
            return NULL;
        *arr = na;
    }
    void *e = (char *)*arr + cnt * sz;
    memset(e, 0, sz);
    *n = cnt + 1;
    return e;
}

/* ---- parser --------------------------------------------------------- */

/* ETC_KEY/ETC_VALUE and STATE_KEY/STATE_VALUE: a key line waits for the
 * value line that completes it. */
typedef struct kv_pair {
    const char *key_name, *value_name; /* for errors: "ETC_KEY", "ETC_VALUE" */
    char *key;                         /* the key waiting for its value, or NULL */
} kv_pair;

typedef struct parser {
    fl_crashlog *log;
    fl_crashlog_error *err;
    unsigned lineno;
    int header_state; /* 0: want producer, 1: want CRASHLOG_VERSION, 2: body */
    bool ended;
    kv_pair etc, state;
    bool check; /* fl_crashlog_check(): see the top of the file */
    bool ascii; /* the whole text is ASCII: kept strings need no UTF-8 pass */
    bool bytes_ok; /* the line before was TRACE_ID or TRACE_BYTES */
    /* check: what push() and last_*() hand out instead of array elements */
    union {
        fl_object o;
        fl_thread t;
        fl_kv kv;
        fl_register r;
        fl_stack_chunk c;
        fl_trace_event e;
        fl_breadcrumb b;
        uint64_t u;
    } scratch;
    fl_object scratch_object;
    fl_thread scratch_thread;
} parser;

/* A string of the log: s[0..n) is a NUL-terminated piece of the text's
 * copy, which check mode keeps instead of copying again. */
size_t fl_utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    size_t k = c < 0xC2 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF5 ? 4 : 0;
    if (k == 0 || k > n)
        return 0;
    for (size_t i = 1; i < k; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    if ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] >= 0xA0) || (c == 0xF0 && s[1] < 0x90) ||
        (c == 0xF4 && s[1] >= 0x90))
        return 0;
    return k;
}

/* '?' for every byte of s that starts no valid UTF-8 sequence.  Rare (a
 * log with a byte above 0x7f): out of line, so that keep() stays inline. */
__attribute__((noinline, cold)) static void utf8_fix(char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        if ((unsigned char)s[i] < 0x80) {
            i++;
            continue;
        }
        size_t k = fl_utf8_seq((const unsigned char *)s + i, n - i);
        if (k)
            i += k;
        else
            s[i++] = '?';
    }
}

/* A string of the log, kept: copied into the arena, or (check mode) left
 * in the parser's copy of the text; valid UTF-8 either way. */
static inline char *keep(parser *p, char *s, size_t n)
{
    char *r = p->check ? s : arena_copy(p->log, s, n);
    if (__builtin_expect(r && !p->ascii, 0))
        utf8_fix(r, n);
    return r;
}

/* One more element of *arr: a new zeroed one, or in check mode the count
 * and a scratch element.  Inline, so that sz is a constant and the memset
 * a store or two: a check pushes on most lines of a log. */
static inline void *push(parser *p, void *arrp, size_t *n, size_t sz)
{
    if (!p->check)
        return grow(arrp, n, sz);
    ++*n;
    return memset(&p->scratch, 0, sz);
}

static int fail(parser *p, unsigned line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(parser *p, unsigned line, const char *fmt, ...)
{
    if (p->err) {
        va_list ap;
        va_start(ap, fmt);
        p->err->line = line;
        vsnprintf(p->err->message, sizeof p->err->message, fmt, ap);
        va_end(ap);
    }
    return -1;
}

#define OOM(p) fail((p), (p)->lineno, "out of memory")

static char *pdup(parser *p, char *s)
{
    return keep(p, s, strlen(s));
}

static int set_strn(parser *p, char **field, char *v, size_t n)
{
    if (!(*field = keep(p, v, n)))
        return OOM(p);
    return 0;
}

static int set_str(parser *p, char **field, char *v)
{
    if (!(*field = pdup(p, v)))
        return OOM(p);
    return 0;
}

static int num_u64(parser *p, const char *key, const char *v, uint64_t *out)
{
    if (fl_parse_u64(v, out))
        return fail(p, p->lineno, "%s: '%.40s' is not a number", key, v);
    return 0;
}

static int num_i64(parser *p, const char *key, const char *v, int64_t *out)
{
    if (fl_parse_i64(v, out))
        return fail(p, p->lineno, "%s: '%.40s' is not a number", key, v);
    return 0;
}

/* Byte classes as tables: a load per byte instead of a chain of compares,
 * on every line. */
static const bool blank[256] = {[' '] = true, ['\t'] = true};
static const bool trailing_blank[256] = {[' '] = true, ['\t'] = true, ['\r'] = true};
static const bool word_end[256] = {['\0'] = true, [' '] = true, ['\t'] = true};

static size_t word_len(const char *v)
{
    size_t n = 0;
    while (!word_end[(unsigned char)v[n]])
        n++;
    return n;
}

/* Ends the word v[0..n) (followed by a blank or the NUL) in place and
 * returns what follows it, leading blanks skipped ("" when nothing). */
static char *after_word(char *v, size_t n)
{
    v += n;
    if (*v) {
        *v++ = '\0';
        while (blank[(unsigned char)*v])
            v++;
    }
    return v;
}

/* Splits "first rest": returns first word in *a (NUL-terminated in place)
 * and the rest, with leading blanks skipped, in *b ("" when none).  Returns
 * the length of the first word. */
static size_t split_word(char *v, char **a, char **b)
{
    size_t n = word_len(v);
    *a = v;
    *b = after_word(v, n);
    return n;
}

static bool is_id(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++) {
        char c = s[n];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
              c == '-'))
            return false;
    }
    return n >= 8 && n <= 64;
}

static int parse_object(parser *p, char *v)
{
    /* name/base/size[/bias]: numbers are taken from the right so that a
     * version-1 name is anything before them. */
    char *slash[3] = {NULL, NULL, NULL};
    int nslash = 0;
    for (char *s = v + strlen(v); s > v && nslash < 3;) {
        s--;
        if (*s == '/')
            slash[nslash++] = s;
    }
    uint64_t n1, n2, n3;
    fl_object *o;
    if (nslash == 3 && slash[2] > v && !fl_parse_u64(slash[0] + 1, &n3)) {
        *slash[0] = '\0';
        if (!fl_parse_u64(slash[1] + 1, &n2)) {
            *slash[1] = '\0';
            if (!fl_parse_u64(slash[2] + 1, &n1)) {
                *slash[2] = '\0';
                if (!(o = push(p, &p->log->objects, &p->log->nobjects, sizeof *o)))
                    return OOM(p);
                o->base = n1;
                o->size = n2;
                o->bias = n3;
                o->has_bias = true;
                return (o->name = pdup(p, v)) ? 0 : OOM(p);
            }
            *slash[1] = '/';
        }
        *slash[0] = '/';
    }
    if (nslash >= 2 && slash[1] > v && !fl_parse_u64(slash[0] + 1, &n2)) {
        *slash[0] = '\0';
        if (!fl_parse_u64(slash[1] + 1, &n1)) {
            *slash[1] = '\0';
            if (!(o = push(p, &p->log->objects, &p->log->nobjects, sizeof *o)))
                return OOM(p);
            o->base = n1;
            o->size = n2;
            return (o->name = pdup(p, v)) ? 0 : OOM(p);
        }
    }
    return fail(p, p->lineno, "OBJECT: expected name/base/size[/bias], got '%.60s'", v);
}

static fl_object *last_object(parser *p, const char *key)
{
    if (p->log->nobjects == 0) {
        fail(p, p->lineno, "%s before any OBJECT line", key);
        return NULL;
    }
    return p->check ? &p->scratch_object : &p->log->objects[p->log->nobjects - 1];
}

static fl_thread *last_thread(parser *p, const char *key)
{
    if (p->log->nthreads == 0) {
        fail(p, p->lineno, "%s before any THREAD line", key);
        return NULL;
    }
    return p->check ? &p->scratch_thread : &p->log->threads[p->log->nthreads - 1];
}

/* Hex digit values + 1 (0: not a digit): STACK lines are most of a log's
 * bytes, so decoding them is a table lookup. */
static const uint8_t hexlut[256] = {
    ['0'] = 1,  ['1'] = 2,  ['2'] = 3,  ['3'] = 4,  ['4'] = 5,  ['5'] = 6,  ['6'] = 7,  ['7'] = 8,
    ['8'] = 9,  ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
    ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

static int hexval(char c)
{
    return (int)hexlut[(unsigned char)c] - 1;
}

/* Inline: these run on half the lines of a typical log, and as one
 * ten-argument function they were more call than work. */
static inline int pair_key(parser *p, kv_pair *kp, char *v, size_t vn)
{
    if (kp->key)
        return fail(p, p->lineno, "%s without the %s it needs", kp->key_name, kp->value_name);
    return (kp->key = keep(p, v, vn)) ? 0 : OOM(p);
}

static inline int pair_value(parser *p, kv_pair *kp, fl_kv **arr, size_t *n, char *v, size_t vn)
{
    if (!kp->key)
        return fail(p, p->lineno, "%s without a preceding %s", kp->value_name, kp->key_name);
    fl_kv *kv = push(p, arr, n, sizeof *kv);
    if (!kv)
        return OOM(p);
    kv->key = kp->key;
    if (!(kv->value = keep(p, v, vn)))
        return OOM(p);
    kp->key = NULL;
    return 0;
}

/* Every key the reader knows, found by the line's first byte and then a
 * memcmp among the few keys starting with it: a log has about a hundred
 * lines, and a chain of forty strcmp() per line was a tenth of the server's
 * ingest CPU.  A key matches when the line starts with it and the word ends
 * there, which is the first word being the key; so a known key's line is
 * never scanned for the end of its first word (that byte loop was the
 * reader's hottest). */
enum key_id {
    K_UNKNOWN,
    K_STACK,
    K_CALLSTACK,
    K_THREAD_FRAME,
    K_REGISTER,
    K_APPLICATION_NAME,
    K_APPLICATION_VERSION,
    K_PLATFORM_NAME,
    K_CPUARCH_NAME,
    K_PLATFORM_VERSION,
    K_OS_NAME,
    K_OS_VERSION,
    K_OS_PRETTY_NAME,
    K_KERNEL_VERSION,
    K_EXECUTABLE,
    K_CRASH_SIGNAL_NAME,
    K_CRASH_THREAD_NAME,
    K_EXCEPTION_TYPE,
    K_EXCEPTION_MESSAGE,
    K_ABORT_MESSAGE,
    K_CRASH_SIGNAL,
    K_HANDLER_FAULT,
    K_THREADS_OMITTED,
    K_VFORK_PARENT,
    K_OBJECTS_OMITTED,
    K_APPLICATION_UPTIME,
    K_CRASH_TIME,
    K_CRASH_CODE,
    K_CRASH_ADDRESS,
    K_CRASH_CONTEXT,
    K_PROCESS_ID,
    K_CRASH_THREAD,
    K_CRASH_ID,
    K_INSTALL_ID,
    K_OBJECT,
    K_OBJECT_BUILD_ID,
    K_OBJECT_PATH,
    K_OBJECT_PATH_CUT,
    K_ETC_KEY,
    K_ETC_VALUE,
    K_STATE_KEY,
    K_STATE_VALUE,
    K_THREAD,
    K_THREAD_CONTEXT,
    K_TRACE,
    K_TRACE_ID,
    K_TRACE_BYTES,
    K_TRACE_CONTEXT,
    K_BREADCRUMB,
    K_CRASHLOG_VERSION,
    K_MOJOCRASH,
    K_FAULTLINE,
    K_END,
};

/* s[0..n) is a trimmed line, NUL at s[n].  Returns the key its first word
 * is, and that word's length in *kn; K_UNKNOWN (*kn unset) for any other
 * word.  The most frequent keys come first in each group. */
static enum key_id key_id(const char *s, size_t n, size_t *kn)
{
#define K(S, ID)                                                                                   \
    if (n >= sizeof S - 1 && word_end[(unsigned char)s[sizeof S - 1]] &&                           \
        !memcmp(s, S, sizeof S - 1)) {                                                             \
        *kn = sizeof S - 1;                                                                        \
        return ID;                                                                                 \
    }
    switch (s[0]) {
    case 'A':
        K("APPLICATION_NAME", K_APPLICATION_NAME)
        K("APPLICATION_VERSION", K_APPLICATION_VERSION)
        K("APPLICATION_UPTIME", K_APPLICATION_UPTIME)
        K("ABORT_MESSAGE", K_ABORT_MESSAGE)
        break;
    case 'B':
        K("BREADCRUMB", K_BREADCRUMB)
        break;
    case 'C':
        K("CALLSTACK", K_CALLSTACK)
        K("CPUARCH_NAME", K_CPUARCH_NAME)
        K("CRASH_SIGNAL", K_CRASH_SIGNAL)
        K("CRASH_SIGNAL_NAME", K_CRASH_SIGNAL_NAME)
        K("CRASH_THREAD", K_CRASH_THREAD)
        K("CRASH_THREAD_NAME", K_CRASH_THREAD_NAME)
        K("CRASH_TIME", K_CRASH_TIME)
        K("CRASH_CODE", K_CRASH_CODE)
        K("CRASH_ADDRESS", K_CRASH_ADDRESS)
        K("CRASH_CONTEXT", K_CRASH_CONTEXT)
        K("CRASH_ID", K_CRASH_ID)
        K("CRASHLOG_VERSION", K_CRASHLOG_VERSION)
        break;
    case 'E':
        K("ETC_KEY", K_ETC_KEY)
        K("ETC_VALUE", K_ETC_VALUE)
        K("END", K_END)
        K("EXECUTABLE", K_EXECUTABLE)
        K("EXCEPTION_TYPE", K_EXCEPTION_TYPE)
        K("EXCEPTION_MESSAGE", K_EXCEPTION_MESSAGE)
        break;
    case 'F':
        K("FAULTLINE", K_FAULTLINE)
        break;
    case 'H':
        K("HANDLER_FAULT", K_HANDLER_FAULT)
        break;
    case 'I':
        K("INSTALL_ID", K_INSTALL_ID)
        break;
    case 'K':
        K("KERNEL_VERSION", K_KERNEL_VERSION)
        break;
    case 'M':
        K("MOJOCRASH", K_MOJOCRASH)
        break;
    case 'O':
        K("OBJECT", K_OBJECT)
        K("OBJECT_BUILD_ID", K_OBJECT_BUILD_ID)
        K("OBJECT_PATH", K_OBJECT_PATH)
        K("OBJECT_PATH_CUT", K_OBJECT_PATH_CUT)
        K("OBJECTS_OMITTED", K_OBJECTS_OMITTED)
        K("OS_NAME", K_OS_NAME)
        K("OS_VERSION", K_OS_VERSION)
        K("OS_PRETTY_NAME", K_OS_PRETTY_NAME)
        break;
    case 'P':
        K("PLATFORM_NAME", K_PLATFORM_NAME)
        K("PLATFORM_VERSION", K_PLATFORM_VERSION)
        K("PROCESS_ID", K_PROCESS_ID)
        break;
    case 'R':
        K("REGISTER", K_REGISTER)
        break;
    case 'S':
        K("STACK", K_STACK)
        K("STATE_KEY", K_STATE_KEY)
        K("STATE_VALUE", K_STATE_VALUE)
        break;
    case 'T':
        K("THREAD_FRAME", K_THREAD_FRAME)
        K("THREAD", K_THREAD)
        K("THREAD_CONTEXT", K_THREAD_CONTEXT)
        K("TRACE", K_TRACE)
        K("TRACE_CONTEXT", K_TRACE_CONTEXT)
        K("TRACE_ID", K_TRACE_ID)
        K("TRACE_BYTES", K_TRACE_BYTES)
        K("THREADS_OMITTED", K_THREADS_OMITTED)
        break;
    case 'V':
        K("VFORK_PARENT", K_VFORK_PARENT)
        break;
    default:
        break;
    }
#undef K
    return K_UNKNOWN;
}

/* v is NUL-terminated and vn bytes long. */
static int body_line(parser *p, enum key_id id, char *key, char *v, size_t vn)
{
    fl_crashlog *L = p->log;
    uint64_t u;
    int64_t i;

    switch (id) {
    case K_STACK: {
        char *addr, *hex;
        split_word(v, &addr, &hex);
        if (num_u64(p, key, addr, &u))
            return -1;
        size_t n = strlen(hex);
        if (n == 0 || n % 2)
            return fail(p, p->lineno, "STACK: hex data of odd or zero length");
        /* Room for n/2 bytes; in check mode the hex itself (byte k is
         * written after digits 2k and 2k+1 are read). */
        uint8_t *bytes = p->check ? (uint8_t *)hex : (uint8_t *)arena_copy(L, hex, n / 2);
        if (!bytes)
            return OOM(p);
        for (size_t k = 0; k < n / 2; k++) {
            int hi = hexval(hex[2 * k]), lo = hexval(hex[2 * k + 1]);
            if (hi < 0 || lo < 0)
                return fail(p, p->lineno, "STACK: data is not hex");
            bytes[k] = (uint8_t)(hi << 4 | lo);
        }
        fl_stack_chunk *c = push(p, &L->stack, &L->nstack, sizeof *c);
        if (!c)
            return OOM(p);
        c->addr = u;
        c->data = bytes;
        c->len = n / 2;
        return 0;
    }
    case K_CALLSTACK: {
        if (num_u64(p, key, v, &u))
            return -1;
        uint64_t *f = push(p, &L->callstack, &L->ncallstack, sizeof *f);
        if (!f)
            return OOM(p);
        *f = u;
        return 0;
    }
    case K_THREAD_FRAME: {
        fl_thread *t = last_thread(p, key);
        if (!t || num_u64(p, key, v, &u))
            return -1;
        uint64_t *f = push(p, &t->frames, &t->nframes, sizeof *f);
        if (!f)
            return OOM(p);
        *f = u;
        return 0;
    }
    case K_REGISTER: {
        char *name, *val;
        split_word(v, &name, &val);
        if (!*name)
            return fail(p, p->lineno, "REGISTER: missing name");
        if (num_u64(p, key, val, &u))
            return -1;
        fl_register *r = push(p, &L->registers, &L->nregisters, sizeof *r);
        if (!r)
            return OOM(p);
        r->value = u;
        return (r->name = pdup(p, name)) ? 0 : OOM(p);
    }
    case K_APPLICATION_NAME:
        return set_strn(p, &L->app_name, v, vn);
    case K_APPLICATION_VERSION:
        return set_strn(p, &L->app_version, v, vn);
    case K_PLATFORM_NAME:
        return set_strn(p, &L->platform_name, v, vn);
    case K_CPUARCH_NAME:
        return set_strn(p, &L->cpuarch, v, vn);
    case K_PLATFORM_VERSION:
        return set_strn(p, &L->platform_version, v, vn);
    case K_OS_NAME:
        return set_strn(p, &L->os_name, v, vn);
    case K_OS_VERSION:
        return set_strn(p, &L->os_version, v, vn);
    case K_OS_PRETTY_NAME:
        return set_strn(p, &L->os_pretty_name, v, vn);
    case K_KERNEL_VERSION:
        return set_strn(p, &L->kernel_version, v, vn);
    case K_EXECUTABLE:
        return set_strn(p, &L->executable, v, vn);
    case K_CRASH_SIGNAL_NAME:
        return set_strn(p, &L->signal_name, v, vn);
    case K_CRASH_THREAD_NAME:
        return set_strn(p, &L->crash_thread_name, v, vn);
    case K_EXCEPTION_TYPE:
        return set_strn(p, &L->exception_type, v, vn);
    case K_EXCEPTION_MESSAGE:
        return set_strn(p, &L->exception_message, v, vn);
    case K_ABORT_MESSAGE:
        return set_strn(p, &L->abort_message, v, vn);
    case K_CRASH_SIGNAL:
    case K_HANDLER_FAULT:
        if (num_i64(p, key, v, &i))
            return -1;
        if (i < -1000000 || i > 1000000)
            return fail(p, p->lineno, "%s: %lld is out of range", key, (long long)i);
        if (id == K_CRASH_SIGNAL) {
            L->crash_signal = (int)i;
            L->has_crash_signal = true;
        } else {
            L->handler_fault = (int)i;
        }
        return 0;
    case K_THREADS_OMITTED:
        return num_u64(p, key, v, &L->threads_omitted);
    case K_VFORK_PARENT:
        return num_u64(p, key, v, &L->vfork_parent);
    case K_OBJECTS_OMITTED:
        return num_u64(p, key, v, &L->objects_omitted);
    case K_APPLICATION_UPTIME:
        L->has_uptime = true;
        return num_i64(p, key, v, &L->uptime);
    case K_CRASH_TIME:
        L->has_crash_time = true;
        return num_i64(p, key, v, &L->crash_time);
    case K_CRASH_CODE:
        L->has_crash_code = true;
        return num_i64(p, key, v, &L->crash_code);
    case K_CRASH_ADDRESS:
        L->has_crash_address = true;
        return num_u64(p, key, v, &L->crash_address);
    case K_CRASH_CONTEXT:
        L->has_crash_context = true;
        return num_u64(p, key, v, &L->crash_context);
    case K_PROCESS_ID:
        L->has_pid = true;
        return num_u64(p, key, v, &L->pid);
    case K_CRASH_THREAD:
        L->has_crash_tid = true;
        return num_u64(p, key, v, &L->crash_tid);
    case K_CRASH_ID:
    case K_INSTALL_ID:
        if (!is_id(v))
            return fail(p, p->lineno, "%s: '%.40s' is not an id (8-64 hex digits and '-')", key, v);
        return set_str(p, id == K_CRASH_ID ? &L->crash_id : &L->install_id, v);
    case K_OBJECT:
        return parse_object(p, v);
    case K_OBJECT_BUILD_ID: {
        fl_object *o = last_object(p, key);
        if (!o)
            return -1;
        if (!*v || strlen(v) > 128)
            return fail(p, p->lineno, "OBJECT_BUILD_ID: bad length");
        for (char *c = v; *c; c++) {
            if (hexval(*c) < 0)
                return fail(p, p->lineno, "OBJECT_BUILD_ID: '%.40s' is not hex", v);
            if (*c >= 'A' && *c <= 'F')
                *c = (char)(*c - 'A' + 'a');
        }
        return set_str(p, &o->build_id, v);
    }
    case K_OBJECT_PATH: {
        fl_object *o = last_object(p, key);
        return o ? set_str(p, &o->path, v) : -1;
    }
    case K_OBJECT_PATH_CUT: {
        fl_object *o = last_object(p, key);
        return o ? num_u64(p, key, v, &o->path_cut) : -1;
    }
    case K_ETC_KEY:
        return pair_key(p, &p->etc, v, vn);
    case K_ETC_VALUE:
        return pair_value(p, &p->etc, &L->etc, &L->netc, v, vn);
    case K_STATE_KEY:
        return pair_key(p, &p->state, v, vn);
    case K_STATE_VALUE:
        return pair_value(p, &p->state, &L->state, &L->nstate, v, vn);
    case K_THREAD: {
        char *tid, *name;
        split_word(v, &tid, &name);
        if (num_u64(p, key, tid, &u))
            return -1;
        fl_thread *t = push(p, &L->threads, &L->nthreads, sizeof *t);
        if (!t)
            return OOM(p);
        t->tid = u;
        if (*name && !(t->name = pdup(p, name)))
            return OOM(p);
        return 0;
    }
    case K_THREAD_CONTEXT: {
        fl_thread *t = last_thread(p, key);
        if (!t || num_u64(p, key, v, &t->context))
            return -1;
        t->has_context = true;
        return 0;
    }
    case K_TRACE: {
        char *ts, *rest, *tid, *text;
        split_word(v, &ts, &rest);
        split_word(rest, &tid, &text);
        fl_trace_event *e = push(p, &L->trace, &L->ntrace, sizeof *e);
        if (!e)
            return OOM(p);
        if (num_u64(p, key, ts, &e->time_ns) || num_u64(p, key, tid, &e->tid))
            return -1;
        return (e->text = pdup(p, text)) ? 0 : OOM(p);
    }
    case K_TRACE_ID: {
        /* "time tid site types slot...": see fl_trace_event. */
        char *w[4 + 8];
        size_t nw = 0;
        while (*v && nw < 4 + 8 + 1) {
            char *rest;
            if (nw == 4 + 8)
                return fail(p, p->lineno, "%s: more than 8 arguments", key);
            split_word(v, &w[nw], &rest);
            nw++;
            v = rest;
        }
        if (nw < 4)
            return fail(p, p->lineno, "%s: want time, thread, site and types", key);
        size_t nt = strcmp(w[3], "-") ? strlen(w[3]) : 0;
        if (nt > 8 || nt != nw - 4 || strspn(w[3], "iulmqQdDsp") != nt)
            return fail(p, p->lineno, "%s: types '%s' do not match %zu argument(s)", key, w[3],
                        nw - 4);
        fl_trace_event *e = push(p, &L->trace, &L->ntrace, sizeof *e);
        if (!e)
            return OOM(p);
        if (num_u64(p, key, w[0], &e->time_ns) || num_u64(p, key, w[1], &e->tid) ||
            num_u64(p, key, w[2], &e->site))
            return -1;
        for (size_t k = 0; k < nt; k++)
            if (num_u64(p, key, w[4 + k], &e->slots[k]))
                return -1;
        memcpy(e->types, w[3], nt);
        e->types[nt] = '\0';
        e->apart = true;
        return 0;
    }
    case K_TRACE_BYTES: {
        fl_trace_event *e = p->check ? &p->scratch.e : &L->trace[L->ntrace - 1];
        size_t n = strlen(v);
        if (n == 0 || n % 2)
            return fail(p, p->lineno, "%s: hex data of odd or zero length", key);
        if (e->nbytes + n / 2 > FL_TRACE_BYTES_MAX)
            return fail(p, p->lineno, "%s: more than %u bytes for one event", key,
                        FL_TRACE_BYTES_MAX);
        /* One block per event: a second line copies the first's bytes. */
        unsigned char *bytes = e->bytes;
        if (!p->check) {
            if (!(bytes = (unsigned char *)arena_alloc(L, e->nbytes + n / 2)))
                return OOM(p);
            if (e->nbytes)
                memcpy(bytes, e->bytes, e->nbytes);
        }
        for (size_t k = 0; k < n / 2; k++) {
            int hi = hexval(v[2 * k]), lo = hexval(v[2 * k + 1]);
            if (hi < 0 || lo < 0)
                return fail(p, p->lineno, "%s: data is not hex", key);
            if (!p->check)
                bytes[e->nbytes + k] = (unsigned char)(hi << 4 | lo);
        }
        e->bytes = bytes;
        e->nbytes += n / 2;
        return 0;
    }
    case K_TRACE_CONTEXT: {
        if (!L->ntrace)
            return fail(p, p->lineno, "%s before any TRACE line", key);
        fl_trace_event *e = p->check ? &p->scratch.e : &L->trace[L->ntrace - 1];
        if (num_u64(p, key, v, &e->context))
            return -1;
        e->has_context = true;
        return 0;
    }
    case K_BREADCRUMB: {
        char *ts, *rest, *cat, *msg;
        split_word(v, &ts, &rest);
        split_word(rest, &cat, &msg);
        fl_breadcrumb *b = push(p, &L->breadcrumbs, &L->nbreadcrumbs, sizeof *b);
        if (!b)
            return OOM(p);
        if (num_u64(p, key, ts, &b->time_ms))
            return -1;
        if (!(b->category = pdup(p, cat)) || !(b->message = pdup(p, msg)))
            return OOM(p);
        return 0;
    }
    case K_CRASHLOG_VERSION:
    case K_MOJOCRASH:
    case K_FAULTLINE:
        return fail(p, p->lineno, "%s may only appear at the top of the log", key);
    case K_END:
        if (*v)
            return fail(p, p->lineno, "END takes no value");
        p->ended = true;
        return 0;
    case K_UNKNOWN:
        break;
    }

    /* A key we do not know: kept so that the server can pass it through, as
     * the MojoCrash notes ask.  Keys are upper-case words. */
    for (const char *c = key; *c; c++)
        if (!((*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_'))
            return fail(p, p->lineno, "not a crash-log line: '%.40s'", key);
    fl_kv *kv = push(p, &L->unknown, &L->nunknown, sizeof *kv);
    if (!kv)
        return OOM(p);
    if (!(kv->key = pdup(p, key)) || !(kv->value = pdup(p, v)))
        return OOM(p);
    return 0;
}

/* The first two lines: "MOJOCRASH|FAULTLINE <version>", then
 * "CRASHLOG_VERSION <n>". */
static int header_line(parser *p, enum key_id id, char *key, char *v)
{
    fl_crashlog *L = p->log;
    if (p->header_state == 0) {
        if (id != K_MOJOCRASH && id != K_FAULTLINE)
            return fail(p, p->lineno,
                        "not a crash log: the first line that is not blank or a comment "
                        "must be 'MOJOCRASH <version>' or 'FAULTLINE <version>'");
        if (!*v)
            return fail(p, p->lineno, "%s: missing version", key);
        if (set_str(p, &L->producer, key) || set_str(p, &L->producer_version, v))
            return -1;
        p->header_state = 1;
        return 0;
    }
    uint64_t ver;
    if (id != K_CRASHLOG_VERSION)
        return fail(p, p->lineno, "second line must be 'CRASHLOG_VERSION <n>'");
    if (fl_parse_u64(v, &ver) || ver < 1 || ver > 1000)
        return fail(p, p->lineno, "CRASHLOG_VERSION: '%.20s' is not a version", v);
    L->log_version = (unsigned)ver;
    p->header_state = 2;
    return 0;
}

/* s[0..n) is a line without NUL bytes, NUL at s[n]. */
static int one_line(parser *p, char *s, size_t n)
{
    /* Trim: leading blanks (the published example is indented), trailing
     * blanks and a CR from a CRLF uploader.  The NUL at s[n] ends the
     * first loop. */
    char *start = s;
    while (blank[(unsigned char)*s])
        s++;
    n -= (size_t)(s - start);
    while (n > 0 && trailing_blank[(unsigned char)s[n - 1]])
        n--;
    s[n] = '\0'; /* what a kept string needs; the trimmed bytes after it are never read */
    if (n == 0 || s[0] == '#')
        return 0;
    if (p->ended)
        return fail(p, p->lineno, "text after END");

    size_t kn;
    enum key_id id = key_id(s, n, &kn);
    if (id == K_UNKNOWN)
        kn = word_len(s);
    char *key = s, *v = after_word(s, kn);
    if (p->header_state < 2)
        return header_line(p, id, key, v);
    /* TRACE_BYTES belong to the TRACE_ID line right above them. */
    bool bytes_ok = p->bytes_ok;
    p->bytes_ok = id == K_TRACE_ID || id == K_TRACE_BYTES;
    if (id == K_TRACE_BYTES && !bytes_ok)
        return fail(p, p->lineno, "TRACE_BYTES not right after a TRACE_ID line");
    return body_line(p, id, key, v, n - (size_t)(v - s));
}

static int parse(const char *buf, size_t len, fl_crashlog **out, fl_crashlog_error *err, bool check)
{
    parser p = {0};
    struct fl_arena *copy = NULL;
    char *text;
    int rc = -1;

    *out = NULL;
    if (err) {
        err->line = 0;
        err->message[0] = '\0';
    }
    p.err = err;
    p.etc = (kv_pair){"ETC_KEY", "ETC_VALUE", NULL};
    p.state = (kv_pair){"STATE_KEY", "STATE_VALUE", NULL};
    if (len > FL_CRASHLOG_MAX_BYTES)
        return fail(&p, 0, "log is larger than %u bytes", FL_CRASHLOG_MAX_BYTES);
    if (!(p.log = calloc(1, sizeof *p.log)))
        return fail(&p, 0, "out of memory");
    p.check = check;

    /* One writable copy of the whole log, cut into lines in place, and one
     * search for a NUL byte: per-line copies and searches were a good part
     * of the reader's time on the server's ingest path. */
    if (!(copy = malloc(sizeof *copy + len + 1))) {
        fail(&p, 0, "out of memory");
        goto out;
    }
    text = copy->data;
    memcpy(text, buf, len);
    text[len] = '\0';
    char *end = text + len;
    const char *nul = memchr(text, '\0', len);
    if (!nul)
        nul = end;
    /* Nearly every log is ASCII, which spares each kept string its own
     * UTF-8 pass.  Counted with callgrind on the bench's 4 KiB log: a
     * byte-by-byte pass over the kept strings cost 73 % more instructions
     * than the rest of the check; this scan costs 6 %. */
    typedef uint64_t v2 __attribute__((vector_size(16)));
    v2 any = {0, 0}; /* no early exit: 32 bytes a turn in vector registers */
    size_t i = 0;
    for (; i + 32 <= len; i += 32) {
        v2 a, b;
        memcpy(&a, text + i, 16);
        memcpy(&b, text + i + 16, 16);
        any |= a | b;
    }
    uint64_t tail = any[0] | any[1];
    for (; i < len; i++)
        tail |= (unsigned char)text[i];
    p.ascii = !(tail & 0x8080808080808080ull);

    /* Each line ends at its '\n' or, the last one, at the end. */
    for (char *line = text; line < end;) {
        char *nl = memchr(line, '\n', (size_t)(end - line));
        if (!nl)
            nl = end;
        size_t n = (size_t)(nl - line);
        p.lineno++;
        if (n > FL_CRASHLOG_MAX_LINE) {
            fail(&p, p.lineno, "line longer than %u bytes", FL_CRASHLOG_MAX_LINE);
            goto out;
        }
        if ((size_t)(nul - line) < n) { /* unsigned: false for a NUL before line */
            fail(&p, p.lineno, "NUL byte in the log");
            goto out;
        }
        *nl = '\0';
        if (one_line(&p, line, n))
            goto out;
        line = nl + 1;
    }

    if (p.header_state < 2) {
        fail(&p, p.lineno,
             p.header_state == 0 ? "empty log: no MOJOCRASH/FAULTLINE line"
                                 : "log ends before CRASHLOG_VERSION");
        goto out;
    }
    if (p.etc.key) {
        fail(&p, p.lineno, "ETC_KEY without the ETC_VALUE it needs");
        goto out;
    }
    if (p.state.key) {
        fail(&p, p.lineno, "STATE_KEY without the STATE_VALUE it needs");
        goto out;
    }
    if (!p.ended) {
        fail(&p, p.lineno, "incomplete log: no END line (truncated after line %u)", p.lineno);
        goto out;
    }
    if (!p.log->app_name || !*p.log->app_name) {
        fail(&p, 0, "missing APPLICATION_NAME");
        goto out;
    }
    rc = 0;
    if (check) {
        /* The strings point into the copy: it becomes the log's to free. */
        copy->next = p.log->arena_;
        copy->used = copy->cap = len + 1;
        p.log->arena_ = copy;
        copy = NULL;
    }
out:
    if (check) {
        /* The arrays were only counted: nothing for fl_crashlog_free(). */
        p.log->nobjects = p.log->ncallstack = p.log->netc = p.log->nregisters = 0;
        p.log->nstack = p.log->nthreads = p.log->ntrace = p.log->nbreadcrumbs = 0;
        p.log->nstate = p.log->nunknown = 0;
    }
    free(copy);
    if (rc == 0)
        *out = p.log;
    else
        fl_crashlog_free(p.log);
    return rc;
}

int fl_crashlog_parse(const char *buf, size_t len, fl_crashlog **out, fl_crashlog_error *err)
{
    return parse(buf, len, out, err, false);
}

int fl_crashlog_check(const char *buf, size_t len, fl_crashlog **out, fl_crashlog_error *err)
{
    return parse(buf, len, out, err, true);
}

int fl_crashlog_parse_file(const char *path, fl_crashlog **out, fl_crashlog_error *err)
{
    fl_crashlog_error dummy;
    if (!err)
        err = &dummy;
    *out = NULL;
    err->line = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err->message, sizeof err->message, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err->message, sizeof err->message, "%s: not a regular file", path);
        close(fd);
        return -1;
    }
    if ((uint64_t)st.st_size > FL_CRASHLOG_MAX_BYTES) {
        snprintf(err->message, sizeof err->message, "%s: larger than %u bytes", path,
                 FL_CRASHLOG_MAX_BYTES);
        close(fd);
        return -1;
    }
    size_t cap = (size_t)st.st_size, len = 0;
    char *buf = malloc(cap ? cap : 1);
    if (!buf) {
        close(fd);
        snprintf(err->message, sizeof err->message, "out of memory");
        return -1;
    }
    while (len < cap) {
        ssize_t r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    int rc = fl_crashlog_parse(buf, len, out, err);
    free(buf);
    return rc;
}

void fl_crashlog_free(fl_crashlog *log)
{
    if (!log)
        return;
    free(log->objects);
    free(log->callstack);
    free(log->etc);
    free(log->registers);
    free(log->stack);
    for (size_t i = 0; i < log->nthreads; i++)
        free(log->threads[i].frames);
    free(log->threads);
    free(log->trace);
    free(log->breadcrumbs);
    free(log->state);
    free(log->unknown);
    struct fl_arena *a = log->arena_;
    while (a) {
        struct fl_arena *n = a->next;
        free(a);
        a = n;
    }
    free(log);
}

const char *fl_crashlog_etc(const fl_crashlog *log, const char *key)
{
    for (size_t i = 0; log && i < log->netc; i++)
        if (!strcmp(log->etc[i].key, key))
            return log->etc[i].value;
    return NULL;
}
