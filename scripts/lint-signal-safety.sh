#!/usr/bin/env bash
# Keeps calls that are not async-signal-safe out of the code the crash
# handler can reach.  Checked: every .c file of src/client (but install.c and
# preload.c, which only run in ordinary context), the crash-log writer and
# the trace formatter.
# Inside a checked file, a region between "/* fl-lint: install-time */" and
# "/* fl-lint: signal-safe */" (or the end of the file) runs only at install
# time and is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
banned='malloc|calloc|realloc|free|strdup|strndup|printf|fprintf|sprintf|snprintf|vsnprintf|vfprintf|puts|fputs|fopen|fdopen|fclose|fwrite|fread|fflush|syslog|backtrace|backtrace_symbols|dl_iterate_phdr|dlopen|dlsym|dladdr|pthread_mutex_lock|pthread_mutex_unlock|pthread_create|pthread_join|getenv|setenv|localtime|gmtime|strftime|strerror|exit|atexit|opendir|readdir|closedir|setlocale|qsort|fork|system|popen|sleep|usleep'
files=$(ls src/client/*.c | grep -v -e '/install\.c$' -e '/preload\.c$'; echo src/common/crashlog_write.c src/common/tracefmt.c)
status=0
for f in $files; do
  out=$(awk -v banned="$banned" -v file="$f" '
    /fl-lint: install-time/ { skip = 1; next }
    /fl-lint: signal-safe/  { skip = 0; next }
    skip { next }
    {
      line = $0
      sub(/\/\/.*/, "", line)                       # line comments
      gsub(/"([^"\\]|\\.)*"/, "\"\"", line)          # string literals
      if (line ~ /^[ \t]*\*/ || line ~ /^[ \t]*\/\*/) next   # comment lines
      if (match(line, "(^|[^A-Za-z0-9_.>])(" banned ")[ \t]*\\(")) {
        printf "%s:%d: not async-signal-safe: %s\n", file, NR, $0
      }
    }' "$f")
  if [ -n "$out" ]; then echo "$out"; status=1; fi
done
if [ $status -ne 0 ]; then
  echo "lint-signal-safety: forbidden calls in signal-safe code (see above)" >&2
else
  echo "lint-signal-safety: ok ($(echo $files | wc -w) files)"
fi
exit $status
