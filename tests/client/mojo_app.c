/*
 * mojo_app.c - a program written against the MojoCrash API (mojocrash.h)
 * that overrides every hook, to check the order Faultline calls them in.
 *
 *   mojo_app order        all hooks, a real SIGSEGV
 *   mojo_app preflight0   preflight returns 0: straight to die()
 *
 * The hooks record their names and the log lines in static memory; die()
 * writes both to $FL_TEST_OUT (names on the first line, then the lines)
 * and ends the process with _exit(42), which the driver checks.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mojocrash.h>

static char order[512];
static size_t order_len;
static char lines[256 * 1024];
static size_t lines_len;
static int preflight_ret = 1;
static int seen_sig, seen_count;
static char out_path[4096];
static volatile uintptr_t zero_addr;

static void append(char *buf, size_t cap, size_t *len, const char *s)
{
    size_t n = strlen(s);
    if (*len + n + 1 < cap) {
        memcpy(buf + *len, s, n);
        *len += n;
        buf[*len] = '\0';
    }
}

static void note(const char *hook)
{
    if (order_len)
        append(order, sizeof order, &order_len, " ");
    append(order, sizeof order, &order_len, hook);
}

static int h_preflight(int sig, int crash_count)
{
    seen_sig = sig;
    seen_count = crash_count;
    note("preflight");
    return preflight_ret;
}

static int h_start(const char *appname)
{
    note("start_crashlog");
    return appname && !strcmp(appname, "MojoApp");
}

static int h_line(const char *s)
{
    append(lines, sizeof lines, &lines_len, s);
    append(lines, sizeof lines, &lines_len, "\n");
    return 1;
}

static int h_objects(MOJOCRASH_get_objects_callback cb)
{
    note("get_objects");
    /* MojoCrash's callback: three arguments, no load bias. */
    return cb("/opt/mojo/libgame.so", (const void *)(uintptr_t)0x10000, 0x2000);
}

static int h_callstack(MOJOCRASH_get_callstack_callback cb)
{
    note("get_callstack");
    return cb((const void *)(uintptr_t)0x10123) && cb((const void *)(uintptr_t)0x10456);
}

static int h_etc(MOJOCRASH_get_etc_callback cb)
{
    note("get_etc");
    return cb("GL_VERSION", "2.1.1 NVIDIA 100.14.19") && cb("LEVEL", "e1m1");
}

static int h_end(void)
{
    note("end_crashlog");
    return 1;
}

static int h_postflight(void)
{
    note("postflight");
    return 1;
}

static void put_u(char *buf, size_t cap, size_t *len, int v)
{
    char tmp[16];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v && n < 15);
    char s[17];
    for (int i = 0; i < n; i++)
        s[i] = tmp[n - 1 - i];
    s[n] = '\0';
    append(buf, cap, len, s);
}

static void h_die(void)
{
    note("die");
    append(order, sizeof order, &order_len, " sig=");
    put_u(order, sizeof order, &order_len, seen_sig);
    append(order, sizeof order, &order_len, " count=");
    put_u(order, sizeof order, &order_len, seen_count);
    append(order, sizeof order, &order_len, "\n");
    int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
        ssize_t w = write(fd, order, order_len);
        w = write(fd, lines, lines_len);
        (void)w;
        close(fd);
    }
    _exit(42);
}

int main(int argc, char **argv)
{
    const char *o = getenv("FL_TEST_OUT");
    if (argc < 2 || !o || strlen(o) >= sizeof out_path)
        return 2;
    memcpy(out_path, o, strlen(o) + 1);
    if (!strcmp(argv[1], "preflight0"))
        preflight_ret = 0;

    MOJOCRASH_hooks hooks;
    memset(&hooks, 0, sizeof hooks);
    hooks.preflight = h_preflight;
    hooks.start_crashlog = h_start;
    hooks.new_crashlog_line = h_line;
    hooks.get_objects = h_objects;
    hooks.get_callstack = h_callstack;
    hooks.get_etc = h_etc;
    hooks.end_crashlog = h_end;
    hooks.postflight = h_postflight;
    hooks.die = h_die;
    if (!MOJOCRASH_install("MojoApp", "1.0", &hooks))
        return 2;
    return *(volatile int *)zero_addr + 3;
}
