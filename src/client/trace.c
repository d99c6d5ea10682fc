/*
 * trace.c - the flight recorder: the trace heap, breadcrumbs and state.
 *
 * SIGNAL-SAFE ZONE: everything here may run inside a signal handler (the
 * crash handler dumps the recorder; an application may trace from its own
 * handlers).  No heap, no locks, no stdio.
 *
 * Recording is cheap because it formats nothing (the "trace heap" of
 * ../shared/reference/economizing-trace-operations.txt): FAULTLINE_TRACE
 * stores a pointer to its call site -- format string, file, line and the
 * arguments' types, all fixed at compile time -- the time, the thread id
 * and the argument values.  A string argument is kept by address when it
 * is hard-coded -- it lies in a read-only segment of the object that
 * holds the trace site, so it lives exactly as long as the site does --
 * and copied otherwise, since it may be gone by the time of the dump.
 * The text is made when the heap is dumped, by the printf-like formatter
 * in trace_dump.c.
 *
 * The heap is a ring of 64-bit words that any thread appends to without a
 * lock: a record's space is claimed by a compare-and-swap on the ring's
 * head (an absolute word position that only grows; a record never wraps,
 * the words left at the end are skipped).  The record's first word, its
 * stamp, is a function of that absolute position and of a checksum of the
 * record's other words, and is written last, so a reader recognises a
 * complete record where the stamp matches the position it is read at and
 * the words it read: an unfinished record, stale words, the skipped end of
 * the ring (stale stamps belong to positions one lap earlier) and a record
 * that a writer who lost the CPU for a whole lap scribbled over late do
 * not.  A reader copies a record and then checks that no writer has
 * claimed space over it meanwhile (the head is still less than one lap
 * past it); otherwise the copy is dropped.  The newest events win: a
 * writer never waits for a reader.
 *
 * Breadcrumbs have a ring of their own, so that a flood of trace events
 * cannot push them out.  State is a table of key/value slots, each with a
 * sequence count (odd while it is written); setters take a spin flag among
 * themselves, readers retry a slot a few times and skip it if it stays
 * busy (a crash in the middle of faultline_set_state on the same thread).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fl_client.h"
#include "fl_trace.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "a string's last word is assembled little-endian (put)"
#endif

/* ---- the rings */

#define TRACE_WORDS (1u << 15) /* 256 KiB */
#define CRUMB_WORDS (1u << 12) /* 32 KiB */
static uint64_t trace_w[TRACE_WORDS];
static uint64_t crumb_w[CRUMB_WORDS];
fl_ring fl_traces = {trace_w, TRACE_WORDS - 1, 0};
fl_ring fl_crumbs = {crumb_w, CRUMB_WORDS - 1, 0};

/* Stale words, or a string that happens to hold a position, must not pass
 * for a stamp: the position is mixed with a per-process key, and with the
 * record's checksum. */
uint64_t fl_trace_stamp(uint64_t pos, uint64_t sum)
{
    uint64_t k = (uint64_t)(uintptr_t)&fl_traces ^ 0x9e3779b97f4a7c15ull;
    uint64_t x = ((pos + 1) * 0xff51afd7ed558ccdull ^ k) + (sum ^ (sum >> 31));
    return x ^ (x >> 29);
}

static uint64_t claim(fl_ring *r, uint64_t n)
{
    uint64_t h = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
    for (;;) {
        uint64_t off = h & r->mask;
        uint64_t start = off + n > r->mask + 1 ? h + (r->mask + 1 - off) : h;
        if (__atomic_compare_exchange_n(&r->head, &h, start + n, true, __ATOMIC_SEQ_CST,
                                        __ATOMIC_RELAXED))
            return start;
    }
}

static void fl_state_after_fork(void);
static __thread pid_t tl_tid __attribute__((tls_model("initial-exec")));

/* fork() copies the cache of the thread that forks: forget it in the
 * child.  Registered when the library is loaded, in ordinary context (the
 * first trace may come from a signal handler).  The child's memory is its
 * own: fl_g.pid names it now (a crash in a process that is not fl_g.pid
 * is one in a vfork() child, catcher.c). */
static void forget_tid(void)
{
    tl_tid = 0;
    fl_g.pid = fl_getpid();
    fl_state_after_fork();
}
/* fl-lint: install-time */
__attribute__((constructor)) static void trace_init(void)
{
    pthread_atfork(NULL, NULL, forget_tid);
    fl_g.pid = fl_getpid(); /* for records before faultline_install() */
}
/* fl-lint: signal-safe */

/* A vfork() child runs on its parent's thread, with that thread's TLS: it
 * must not leave its own id there for the parent's later records, so the
 * id is cached only in the process fl_g.pid names.  (A child on a thread
 * that has traced before labels its records with the parent thread's id:
 * knowing better would take a system call per record.) */
static uint64_t thread_id(void)
{
    if (tl_tid)
        return (uint64_t)tl_tid;
    pid_t t = fl_gettid();
    if (fl_getpid() == fl_g.pid)
        tl_tid = t;
    return (uint64_t)t;
}

/* Writes one record: header, n argument slots (strings: strs[i] with
 * lens[i] bytes, copied and zero-padded to whole words), then the stamp,
 * which covers the checksum of every word written. */
static void put(fl_ring *r, int kind, const void *site, unsigned n, uint64_t *slots,
                const char *const *strs, const size_t *lens, size_t strwords, unsigned statics)
{
    uint64_t ctx = kind == FL_KIND_TRACE ? fl_context_now() : 0;
    if (ctx)
        kind |= FL_KIND_CTX;
    uint64_t nw = FL_W_ARGS + n + strwords + (ctx != 0);
    uint64_t pos = claim(r, nw);
    uint64_t *w = r->w + (pos & r->mask);
    uint64_t hdr[FL_W_ARGS] = {0, nw | (uint64_t)n << 16 | (uint64_t)kind << 24 | pos << 32,
                               (uint64_t)fl_clock_ns(CLOCK_REALTIME),
                               (thread_id() & 0xffffffffu) | (uint64_t)statics << FL_STATIC_SHIFT,
                               (uint64_t)(uintptr_t)site};
    uint64_t sum = 0;
    for (unsigned i = FL_W_META; i < FL_W_ARGS; i++) {
        w[i] = hdr[i];
        sum = fl_trace_sum(sum, i, hdr[i]);
    }
    unsigned sw = FL_W_ARGS + n; /* the next string word */
    for (unsigned i = 0; i < n; i++) {
        if (strs[i]) {
            slots[i] = (uint64_t)sw * 8;
            const char *src = strs[i];
            size_t left = lens[i];
            for (; left >= 8; left -= 8, src += 8, sw++) {
                uint64_t v;
                memcpy(&v, src, 8); /* one load */
                w[sw] = v;
                sum = fl_trace_sum(sum, sw, v);
            }
            uint64_t v = 0; /* the tail, zero-padded: the NUL is in there */
            for (size_t k = 0; k < left; k++)
                v |= (uint64_t)(unsigned char)src[k] << (8 * k);
            w[sw] = v;
            sum = fl_trace_sum(sum, sw++, v);
        }
        w[FL_W_ARGS + i] = slots[i];
        sum = fl_trace_sum(sum, FL_W_ARGS + i, slots[i]);
    }
    if (ctx) {
        w[nw - 1] = ctx;
        sum = fl_trace_sum(sum, (unsigned)nw - 1, ctx);
    }
    __atomic_store_n(&w[FL_W_STAMP], fl_trace_stamp(pos, sum), __ATOMIC_RELEASE);
}

FL_EXPORT void faultline__trace(const struct faultline_trace_site *site, ...)
{
    uint64_t slots[FAULTLINE_TRACE_MAX_ARGS];
    const char *strs[FAULTLINE_TRACE_MAX_ARGS];
    size_t lens[FAULTLINE_TRACE_MAX_ARGS];
    size_t strwords = 0;
    unsigned statics = 0;
    unsigned n = site->nargs < FAULTLINE_TRACE_MAX_ARGS ? site->nargs : FAULTLINE_TRACE_MAX_ARGS;
    va_list ap;
    va_start(ap, site);
    (void)va_arg(ap, const char *); /* the format, passed again by the macro */
    for (unsigned i = 0; i < n; i++) {
        strs[i] = NULL;
        switch (site->types[i]) {
        case 'i':
            slots[i] = (uint64_t)(int64_t)va_arg(ap, int);
            break;
        case 'u':
            slots[i] = va_arg(ap, unsigned);
            break;
        case 'l':
            slots[i] = (uint64_t)(int64_t)va_arg(ap, long);
            break;
        case 'm':
            slots[i] = va_arg(ap, unsigned long);
            break;
        case 'q':
            slots[i] = (uint64_t)va_arg(ap, long long);
            break;
        case 'Q':
            slots[i] = va_arg(ap, unsigned long long);
            break;
        case 'd':
        case 'D': {
            double d = site->types[i] == 'd' ? va_arg(ap, double) : (double)va_arg(ap, long double);
            memcpy(&slots[i], &d, sizeof d);
            break;
        }
        case 's': {
            const char *s = va_arg(ap, const char *);
            slots[i] = 0;
            if (s && fl_ro_same_object(site, s)) {
                slots[i] = (uint64_t)(uintptr_t)s;
                statics |= 1u << i;
            } else if (s) {
                strs[i] = s;
                lens[i] = fl_strnlen(s, FAULTLINE_TRACE_MAX_STR);
                strwords += (lens[i] + 1 + 7) / 8;
            }
            break;
        }
        default:
            slots[i] = (uint64_t)(uintptr_t)va_arg(ap, void *);
            break;
        }
    }
    va_end(ap);
    put(&fl_traces, FL_KIND_TRACE, site, n, slots, strs, lens, strwords, statics);
}

FL_EXPORT void faultline_breadcrumb(const char *category, const char *message)
{
    const char *strs[2] = {category ? category : "", message ? message : ""};
    size_t lens[2] = {fl_strnlen(strs[0], FL_CRUMB_CAT_MAX),
                      fl_strnlen(strs[1], FAULTLINE_TRACE_MAX_STR)};
    uint64_t slots[2];
    put(&fl_crumbs, FL_KIND_CRUMB, NULL, 2, slots, strs, lens,
        (lens[0] + 8) / 8 + (lens[1] + 8) / 8, 0);
}

/* ---- state */

fl_state_slot fl_trace_state[FAULTLINE_STATE_MAX];
static int state_flag;
/* The change the flag's holder makes, for a fork() child: another thread
 * of the parent may hold the flag at the fork, and none in the child will
 * ever let it go. */
static const char *pend_key, *pend_value;

/* In the child: the flag freed, its holder's change made again from the
 * start (the same slot: the key, or the first free one) -- the key keeps
 * its old value or gets the new one, never a mix of both -- and every
 * slot left busy made readable.  No other thread runs yet. */
__attribute__((cold)) static void fl_state_after_fork(void)
{
    if (!state_flag)
        return;
    for (int i = 0; i < FAULTLINE_STATE_MAX; i++)
        fl_trace_state[i].seq += fl_trace_state[i].seq & 1;
    const char *k = pend_key;
    pend_key = NULL;
    state_flag = 0;
    if (k)
        faultline_set_state(k, pend_value);
}

/* Cold: compiled for size (the library's text budget).  State changes are
 * rare next to trace events. */
FL_EXPORT __attribute__((cold)) int faultline_set_state(const char *key, const char *value)
{
    if (!key || !*key)
        return 0;
    /* A setter holds the flag for well under a microsecond.  Still held
     * after ~2^22 tries: a signal handler interrupted a setter on its own
     * thread, which cannot go on until the handler returns -- give up
     * rather than wait for ever. */
    for (unsigned long spins = 0; __atomic_exchange_n(&state_flag, 1, __ATOMIC_ACQUIRE);)
        if (++spins > (1ul << 22))
            return 0;
    /* Published before the slot is touched (the sequence count's update
     * below is a full barrier), withdrawn after. */
    pend_value = value;
    pend_key = key;
    size_t kl = fl_strnlen(key, FL_STATE_KEY_MAX - 1);
    int slot = -1, free_slot = -1;
    for (int i = 0; i < FAULTLINE_STATE_MAX; i++) {
        /* key's kl bytes hold no NUL: a shorter slot key differs at its NUL */
        if (fl_trace_state[i].used && !memcmp(fl_trace_state[i].key, key, kl) &&
            !fl_trace_state[i].key[kl]) {
            slot = i;
            break;
        }
        if (!fl_trace_state[i].used && free_slot < 0)
            free_slot = i;
    }
    int ok = 1;
    if (slot < 0 && value)
        slot = free_slot;
    if (slot < 0) {
        ok = !value; /* removing a key that is not there is fine */
    } else {
        __atomic_add_fetch(&fl_trace_state[slot].seq, 1, __ATOMIC_SEQ_CST);
        if (value) {
            memcpy(fl_trace_state[slot].key, key, kl);
            fl_trace_state[slot].key[kl] = '\0';
            size_t vl = fl_strnlen(value, FL_STATE_VALUE_MAX - 1);
            memcpy(fl_trace_state[slot].value, value, vl);
            fl_trace_state[slot].value[vl] = '\0';
        }
        fl_trace_state[slot].used = value != NULL;
        __atomic_add_fetch(&fl_trace_state[slot].seq, 1, __ATOMIC_SEQ_CST);
    }
    pend_key = NULL;
    __atomic_store_n(&state_flag, 0, __ATOMIC_RELEASE);
    return ok;
}
