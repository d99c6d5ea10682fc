#!/usr/bin/env bash
# cli_usage.sh FAULTLINE
# Every subcommand (the ones `faultline --help` lists, and `symbols add`)
# answers --help and -h with its usage on stdout and exit 0; usage errors
# exit 64 (EX_USAGE, faultline(1)) with a message that says what is wrong;
# `decode` and `dump` keep their documented 2.
set -uo pipefail
FL=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# The subcommands, from the top-level usage ("  NAME  summary" lines).
"$FL" --help >"$work/top" 2>"$work/top.err" || fail "faultline --help: exit $?"
mapfile -t cmds < <(awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1}' "$work/top")
[ "${#cmds[@]}" -ge 7 ] || fail "faultline --help lists ${#cmds[@]} commands: ${cmds[*]}"
cmds+=("symbols add")

for c in "${cmds[@]}"; do
  for h in --help -h; do
    # shellcheck disable=SC2086 # "symbols add" is two words
    "$FL" $c $h >"$work/out" 2>"$work/err"
    rc=$?
    [ $rc = 0 ] || fail "faultline $c $h: exit $rc"
    head -1 "$work/out" | grep -q "^usage: faultline $c\b" || fail "faultline $c $h: no usage on stdout: $(head -1 "$work/out")"
    [ -s "$work/err" ] && fail "faultline $c $h: wrote to stderr: $(cat "$work/err")"
  done
done

# usage_error WANT_RC WANT_TEXT ARGS...: exit WANT_RC, stderr says WANT_TEXT.
usage_error() {
  local want=$1 text=$2
  shift 2
  "$FL" "$@" >"$work/out" 2>"$work/err" </dev/null
  local rc=$?
  [ $rc = "$want" ] || fail "faultline $*: exit $rc, want $want"
  grep -qF -- "$text" "$work/err" || fail "faultline $*: stderr lacks '$text': $(head -3 "$work/err")"
}
# No command: a usage error as any other, one line (faultline(1)).
usage_error 64 'faultline: no command given; see faultline --help'
usage_error 64 "faultline: unknown command 'frob'; see faultline --help" frob
# A typo of a command (2 edits at most, a swap counted once) is named.
usage_error 64 "faultline: unknown command 'serv' (did you mean serve?); see faultline --help" serv
usage_error 64 "faultline: unknown command 'sevre' (did you mean serve?); see faultline --help" sevre
usage_error 64 "faultline: unknown command 'symbol' (did you mean symbols?); see faultline --help" symbol
usage_error 64 "faultline: unknown command 'minidmup' (did you mean minidump?); see faultline --help" minidmup
usage_error 64 "faultline: unknown command 'serv' (did you mean serve?); see faultline --help" help serv
usage_error 64 "faultline: unknown command 'up'; see faultline --help" up
usage_error 64 "faultline: unknown option '--frob'; see faultline --help" --frob
usage_error 64 "faultline: unknown command 'frob'; see faultline --help" help frob
usage_error 64 "unknown option '--frob'; see faultline serve --help" serve --frob
usage_error 64 "unexpected argument 'extra'; see faultline serve --help" serve extra
usage_error 64 "unknown option '--frob'; see faultline submit --help" submit f --frob
usage_error 64 '--listen wants ADDR:PORT' serve --listen foo
usage_error 64 '--data needs a value' serve --data
# Every usage error of serve ends as its unknown-option one does; a
# value that is not a number is quoted; a port that is too big is said.
usage_error 64 '--listen needs a value; see faultline serve --help' serve --listen
usage_error 64 "--listen wants ADDR:PORT, e.g. 127.0.0.1:8080 or [::1]:8080; see faultline serve --help" \
  serve --listen foo
usage_error 64 '--listen: port 99999 is out of range (0..65535); see faultline serve --help' \
  serve --listen 127.0.0.1:99999
usage_error 64 '--listen: port 70000 is out of range' serve --listen '[::1]:70000'
usage_error 64 "--listen wants ADDR:PORT" serve --listen 127.0.0.1:99x
usage_error 64 "--workers: 'abc' is not a number; see faultline serve --help" serve --workers abc
usage_error 64 '--workers needs a value; see faultline serve --help' serve --workers
usage_error 64 "--rate-limit: 'x' is not a number; see faultline serve --help" serve --rate-limit x
# A number out of an option's range -- negative too -- is said so, with the range.
usage_error 64 "--workers: '-1' is out of range: 0..256; see faultline serve --help" serve --workers -1
usage_error 64 "--workers: '257' is out of range: 0..256; see faultline serve --help" serve --workers 257
usage_error 64 "--workers: '99999999999999999999' is out of range: 0..256" serve --workers 99999999999999999999
usage_error 64 "--http-threads: '0' is out of range: 1..256" serve --http-threads 0
usage_error 64 "--max-backlog: '-3' is out of range: at least 1" serve --max-backlog -3
usage_error 64 "--max-body: '-1' is out of range: 1024..2147483648" serve --max-body -1
usage_error 64 "--lease: '0' is out of range: 1..86400 seconds; see faultline serve --help" serve --lease 0
usage_error 64 "--timeout: '0' is out of range: 1..86400; see faultline serve --help" serve --timeout 0
usage_error 64 '--role must be all, api or worker; see faultline serve --help' serve --role x
usage_error 64 '--max-memory 3000 is below what one request may hold (--max-body + --max-decoded = 9437184)' serve --max-memory 3000
usage_error 64 'needs --notify-url; see faultline serve --help' serve --notify-digest 5
# serve takes --name=value as every other command does (getopt_long):
# the values reach their checks, a flag given one is refused.
usage_error 64 "--workers: '257' is out of range: 0..256; see faultline serve --help" serve --workers=257
usage_error 64 '--listen wants ADDR:PORT, e.g.' serve --listen=foo
usage_error 64 '--data needs a value; see faultline serve --help' serve --data=
usage_error 64 '--keyless-ingest takes no value; see faultline serve --help' serve --keyless-ingest=yes
usage_error 64 "unknown option '--frob'; see faultline serve --help" serve --frob=1
usage_error 64 '--max-memory 2047 is below what one request may hold (--max-body + --max-decoded = 2048)' \
  serve --listen=127.0.0.1:0 --max-body=1024 --max-decoded=1024 --max-memory=2047
usage_error 64 'no subcommand given (add); see faultline symbols --help' symbols
usage_error 64 "unknown subcommand 'frob'; see faultline symbols --help" symbols frob
usage_error 64 'no file given; see faultline symbols add --help' symbols add
usage_error 64 "unknown option '--frob'; see faultline symbols add --help" symbols add x --frob
usage_error 64 '--server needs a value; see faultline symbols add --help' symbols add x --server
usage_error 64 '--cache needs a value' symbols add x --cache
usage_error 64 '--token needs a value' symbols add x --token
usage_error 64 '--token is for uploads (--server)' symbols add x --token t
usage_error 64 'no --obj FILE given; see faultline symbolicate --help' symbolicate
usage_error 64 '--obj needs a value' symbolicate --obj
usage_error 64 '-e needs a value' symbolicate -e
usage_error 64 '--cache needs a value' symbolicate --obj x --cache
# An empty --opt= value names the option, not the option and its '='.
usage_error 64 '--cache needs a value; see' symbolicate --obj x --cache=
usage_error 64 '--obj needs a value; see' symbolicate --obj=
usage_error 64 "unknown option '--frob'" symbolicate --obj x --frob
# llvm-symbolizer's single-dash -obj is not taken (docs/symbols.md says so).
usage_error 64 "unknown option '-obj'" symbolicate -obj x 0x10
usage_error 64 'no crash log given' submit
usage_error 64 'option --server needs a value' submit f --server
usage_error 64 "faultline version: unexpected argument 'x'; see faultline version --help" version x
usage_error 64 "faultline version: unknown option '--frob'; see faultline version --help" version --frob
usage_error 64 'no core file given; see faultline core --help' core
usage_error 64 'one core file at a time (2 given); see faultline core --help' core a b
usage_error 64 "unknown option '--frob'; see faultline core --help" core c --frob
usage_error 64 '--spool needs a value; see faultline core --help' core c --spool
usage_error 64 '--spool and -o exclude each other' core c --spool d -o f
# Documented otherwise (faultline(1)): decode and dump exit 2.
usage_error 2 "faultline decode: unknown option '--frob'; see faultline decode --help" decode --frob
usage_error 2 "faultline decode: a value is missing after '--obj'; see faultline decode --help" decode --obj
# -o is core's and minidump's output file: decode has no short --obj.
usage_error 2 "faultline decode: unknown option '-o'; see faultline decode --help" decode -o x
usage_error 2 'faultline dump: --timeout 4000: seconds, above 0 and up to 3600' dump --timeout 4000 1
usage_error 2 'faultline decode: one file at a time (2 given); see faultline decode --help' decode a b
usage_error 2 "faultline decode: --context takes no file ('x'); see faultline decode --help" decode --context 1 x
usage_error 2 'faultline dump: no process id given; see faultline dump --help' dump
usage_error 2 'faultline dump: one process at a time (2 given); see faultline dump --help' dump 1 2
usage_error 2 "faultline dump: unknown option '--bogus'; see faultline dump --help" dump --bogus 1
usage_error 2 "faultline dump: a value is missing after '--spool'; see faultline dump --help" dump --spool

# A usage error of every command is the one line that says what is
# wrong, not that line followed by the whole --help text, which would
# scroll it away.
for args in "" "frob" "serv" "--frob" "help frob" "version x" "version --frob" "serve --frob" "serve extra" \
            "serve --data" "serve --workers x" "serve --workers -1" "serve --listen" "serve --listen 1.2.3.4:99999" \
            "serve --role x" "submit f --frob" "submit f --server" "symbols" \
            "symbols frob" "symbols add" "symbols add x --frob" \
            "symbols add x --server" "symbols add x --retries 1" "symbols add x --server u" \
            "symbols add x --server http://h --token t --timeout 0" "symbolicate" \
            "symbolicate --obj" "symbolicate --obj x --frob" "decode --frob" "decode --obj" \
            "decode a b" "decode --context 1 x" "decode --max-depth 0" "dump" "dump 1 2" \
            "dump --bogus 1" "dump --spool" "core" "core a b" "core c --frob" "core c --spool" \
            "core c --spool d -o f"; do
  # shellcheck disable=SC2086 # words on purpose
  "$FL" $args >/dev/null 2>"$work/err" </dev/null
  [ "$(wc -l <"$work/err")" = 1 ] || fail "faultline $args: $(wc -l <"$work/err") lines on stderr: $(head -3 "$work/err")"
done

# The aliases of symbolicate (llvm-symbolizer / addr2line spellings) name
# the same file as --obj: one unreadable file, one message naming it.
for o in --obj -e --exe; do
  "$FL" symbolicate $o "$work" --cache "$work/c" 0x10 >"$work/out" 2>"$work/err"
  rc=$?
  [ $rc = 0 ] || fail "symbolicate $o DIR: exit $rc"
  grep -qx "faultline symbolicate: $work: is a directory" "$work/err" ||
    fail "symbolicate $o DIR: $(cat "$work/err")"
  [ "$(head -2 "$work/out")" = $'??\n??:0:0' ] || fail "symbolicate $o DIR: answer $(cat "$work/out")"
done
"$FL" symbolicate --obj="$work/none" -i --inlines 0x10 >/dev/null 2>"$work/err" ||
  fail "symbolicate --obj= -i --inlines: exit $?"
grep -q "faultline symbolicate: $work/none: " "$work/err" || fail "symbolicate --obj=: $(cat "$work/err")"

# symbols add names each file it cannot use; a directory without one ELF
# file with symbols is named too.
printf 'text\n' >"$work/notelf.txt"
"$FL" symbols add "$work/notelf.txt" "$work" "$work/none" --cache "$work/c" >"$work/out" 2>"$work/err"
rc=$?
[ $rc = 1 ] || fail "symbols add bad files: exit $rc"
grep -qx "faultline symbols add: $work/notelf.txt: not a usable ELF file: not an ELF file" "$work/err" ||
  fail "symbols add non-ELF: $(cat "$work/err")"
grep -q "^faultline symbols add: $work: no ELF file with a build id and DWARF or a symbol table under it (" \
  "$work/err" || fail "symbols add DIR: $(cat "$work/err")"
grep -qx "faultline symbols add: $work/none: No such file or directory" "$work/err" ||
  fail "symbols add missing file: $(cat "$work/err")"

# faultline help COMMAND is the command's own help.
for c in "${cmds[@]}"; do
  [ "$c" = "symbols add" ] && continue
  "$FL" help "$c" >"$work/h1" 2>&1 && "$FL" "$c" --help >"$work/h2" 2>&1 && cmp -s "$work/h1" "$work/h2" ||
    fail "faultline help $c is not faultline $c --help"
done
# Output that cannot be written: said, and not exit 0.
for a in --version --help "help symbolicate"; do
  "$FL" $a >/dev/full 2>"$work/err" && fail "faultline $a >/dev/full: exit 0"
  grep -q 'No space left' "$work/err" || fail "faultline $a >/dev/full: $(cat "$work/err")"
done

[ $fails = 0 ] || { echo "cli usage: $fails failure(s)" >&2; exit 1; }
echo "cli usage: ok (${#cmds[@]} commands)"
