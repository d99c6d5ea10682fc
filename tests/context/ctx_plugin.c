/*
 * A plugin for the calling-context test (tests/context/run.sh): ctx_app
 * opens it with dlopen() and calls plugin_run only through the pointer
 * dlsym() returns, so no code anywhere takes plugin_run's address -- the
 * decoder must still find the stacks through it.
 */
void ctx_report(const char *label, const char *expect);

__attribute__((noinline)) static void plugin_leaf(void)
{
    ctx_report("plugin", "plugin_leaf plugin_run call_plugin main");
    __asm__ volatile("" ::: "memory");
}

void plugin_run(void)
{
    plugin_leaf();
    __asm__ volatile("" ::: "memory");
}
