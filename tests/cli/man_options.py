#!/usr/bin/env python3
"""man_options.py FAULTLINE FAULTLINE_REPORT MANDIR

Keeps the manual pages and the --help texts in step, both ways:

* every option a command's --help names (--long, and -x / -obj when it
  starts a word) appears in that command's entry of faultline(1) (its
  paragraph under COMMANDS), or in the OPTIONS of faultline-report(1);
* every option a manual page lists as an item (.TP then a line starting
  with an option) appears in the --help of its command;
* every command `faultline --help` lists has an entry in faultline(1);
* every option a command's usage lines (the "usage:" lines at the top of
  its --help) name appears in the SYNOPSIS of its manual page, but
  --help and --version, which a SYNOPSIS leaves out by custom.
"""
import re
import subprocess
import sys

FL, REPORT, MANDIR = sys.argv[1:4]
failures = []

# An option: at the start of the text or after a blank, '[', '(', ',' or
# '`', then - or --, letters, digits and inner dashes, and not followed by
# a letter, digit, '-' or '/' (so -Wl,--build-id and -finstrument-functions
# stay whole words that are not options of ours).
OPT = re.compile(r"(?:^|(?<=[\s\[(,`]))(--?[a-zA-Z][a-zA-Z0-9]*(?:-[a-zA-Z0-9]+)*)(?![a-zA-Z0-9/-])")
NOT_OPTIONS = {"-finstrument-functions"}  # a compiler flag decode's --help mentions


def options(text):
    return {o for o in OPT.findall(text) if o not in NOT_OPTIONS}


def help_text(argv):
    r = subprocess.run(argv + ["--help"], capture_output=True, text=True)
    if r.returncode != 0:
        failures.append("%s --help: exit %d" % (" ".join(argv), r.returncode))
    return r.stdout


def plain(roff):
    """The text of roff source: escapes undone, requests kept as lines."""
    t = roff.replace("\\-", "-").replace("\\&", "").replace("\\(lq", '"').replace("\\(rq", '"')
    return re.sub(r"\\f[BIRP]", "", t)


def items(entry):
    """Options that a page lists as items: the line after each .TP."""
    out = set()
    lines = entry.split("\n")
    for i, line in enumerate(lines[:-1]):
        if line.strip() == ".TP":
            nxt = re.sub(r"^\.(BR|BI|B|IR|I)\s+", "", lines[i + 1])
            if nxt.startswith("-"):
                out |= options(nxt.replace('"', " "))
    return out


def usage_lines(text):
    """The usage lines of a --help text: "usage: ..." and the lines
    continuing it (indented), up to the first blank or other line."""
    out, on = [], False
    for line in text.split("\n"):
        if line.startswith("usage:"):
            on = True
        elif not (on and line.startswith(" ") and line.strip().startswith(("[", "-", "faultline"))):
            on = False
        if on:
            out.append(line)
    return "\n".join(out)


def synopsis(page):
    """The options of each form in a manual page's SYNOPSIS (forms are
    separated by .br), by command: "faultline-report", "faultline
    serve", "faultline symbols add"...; a command with two forms gets
    the options of both."""
    syn = page.split("\n.SH SYNOPSIS\n", 1)[1].split("\n.SH ", 1)[0]
    out = {}
    for form in syn.split("\n.br\n"):
        first = re.sub(r"^\.(BR|BI|B|IR|I|RB|RI)\s+", "", form.strip().split("\n")[0])
        words = []
        for w in first.replace('"', " ").split():
            if not re.match(r"^[a-z][a-z-]*$", w):
                break
            words.append(w)
        out.setdefault(" ".join(words), set()).update(options(form.replace('"', " ")))
    return out


def check_synopsis(name, help_txt, forms):
    if name not in forms:
        failures.append("%s: not in the manual's SYNOPSIS" % name)
        return
    for o in sorted(options(usage_lines(help_txt)) - forms[name] - {"--help", "--version", "-h"}):
        failures.append("%s: its usage names %s, the manual's SYNOPSIS does not" % (name, o))


def check(name, help_opts, entry):
    page_opts = options(entry)
    for o in sorted(help_opts - page_opts):
        failures.append("%s: --help names %s, its manual entry does not" % (name, o))
    for o in sorted(items(entry) - help_opts):
        failures.append("%s: the manual lists %s, --help does not" % (name, o))


# faultline(1): one entry per command under COMMANDS, each starting with
# ".TP" and ".B NAME".
page = plain(open(MANDIR + "/faultline.1").read())
commands_sec = page.split("\n.SH COMMANDS\n", 1)[1].split("\n.SH ", 1)[0]
entries = {}
for m in re.finditer(r"^\.TP\n\.B ([a-z][a-z ]*)\n(.*?)(?=^\.TP\n\.B [a-z][a-z ]*\n|\Z)",
                     commands_sec, re.S | re.M):
    entries[m.group(1)] = m.group(2)

top = subprocess.run([FL, "--help"], capture_output=True, text=True).stdout
listed = re.findall(r"^  ([a-z]+) ", top.split("commands:", 1)[1], re.M)
if len(listed) < 7:
    failures.append("faultline --help lists %d commands" % len(listed))
for c in listed:
    name = "symbols add" if c == "symbols" else c
    if name not in entries:
        failures.append("faultline(1) has no entry for %s" % name)
        continue
    htxt = help_text([FL] + name.split())
    check("faultline " + name, options(htxt) - {"--help"}, entries[name])
    check_synopsis("faultline " + name, htxt, synopsis(page))

# faultline-report(1): its OPTIONS section against faultline-report --help.
rpage = plain(open(MANDIR + "/faultline-report.1").read())
ropts = rpage.split("\n.SH OPTIONS\n", 1)[1].split("\n.SH ", 1)[0]
rhelp = help_text([REPORT])
check("faultline-report", options(rhelp), ropts)
check_synopsis("faultline-report", rhelp, synopsis(rpage))

for f in failures:
    print("FAIL:", f)
print("man options: %s (%d commands)" % ("FAILED" if failures else "ok", len(listed) + 1))
sys.exit(1 if failures else 0)
