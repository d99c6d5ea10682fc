/* A plugin built with -finstrument-functions for tests/context: ctx_app
 * dlopen()s it and calls its entry through the pointer dlsym() gives --
 * nothing in the files takes that function's address. */
#define NOINLINE __attribute__((noinline))

void ctx_report(const char *label, const char *expect); /* in the program */

NOINLINE static void plugin_leaf(void)
{
    ctx_report("plugin", "plugin_leaf ctx_plugin_entry call_plugin main");
    __asm__ volatile("" ::: "memory");
}

NOINLINE void ctx_plugin_entry(void)
{
    plugin_leaf();
    __asm__ volatile("" ::: "memory"); /* no tail call */
}
