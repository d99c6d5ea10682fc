/*
 * A plugin for the calling-context test (tests/context/run.sh): ctx_app
 * opens it with dlopen() and calls plugin_run only through the pointer
 * dlsym() returns, so no code anywhere takes plugin_run's address -- the
 * decoder must still find the stacks through it.
 *
 * Built twice: the second copy (CTX_PLUGIN_SECOND) differs only in its
 * label, so it has another build id but the same size, and the loader
 * maps it where the first one was once that one is dlclose()d
 * (`ctx_app reload`); plugin_crash faults inside it.
 */
#ifdef CTX_PLUGIN_SECOND
#define LABEL "plugin2"
#else
#define LABEL "plugin"
#endif

void ctx_report(const char *label, const char *expect);

__attribute__((noinline)) static void plugin_leaf(void)
{
    ctx_report(LABEL, "plugin_leaf plugin_run call_plugin main");
    __asm__ volatile("" ::: "memory");
}

void plugin_run(void)
{
    plugin_leaf();
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void plugin_fault(void)
{
    /* Not NULL itself: UBSan would stop at a null store first. */
    volatile unsigned long bad = 16;
    *(volatile int *)bad = 1;
}

void plugin_crash(void)
{
    plugin_fault();
    __asm__ volatile("" ::: "memory");
}
