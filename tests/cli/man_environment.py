#!/usr/bin/env python3
"""man_environment.py SRCDIR

Keeps the documented environment variables and the ones the code reads
in step, both ways:

* every FAULTLINE_* variable the programs read (a "FAULTLINE_..." string
  in src/cli, src/reporter, src/server, src/symbols, src/common) is in
  the ENVIRONMENT section of faultline(1) or faultline-report(1), but the
  test and bench knobs of TEST_KNOBS, which docs/*.md name instead;
* every FAULTLINE_* variable the client library reads (src/client) is in
  docs/client.md;
* every FAULTLINE_* variable those ENVIRONMENT sections, or the first
  column of docs/client.md's tables, name is read somewhere in src/.
"""
import os
import re
import sys

SRC = sys.argv[1]
failures = []

# Not for users: a test's way to make processing crash, a bench's way to
# run one search alone.  Documented where their tests and benches are.
TEST_KNOBS = {"FAULTLINE_TEST_CRASH_ON", "FAULTLINE_DECODE_SEARCH"}

LITERAL = re.compile(r'"(FAULTLINE_[A-Z0-9_]+)"')
NAME = re.compile(r"FAULTLINE_[A-Z0-9_]*[A-Z0-9]")


def literals(*dirs):
    out = set()
    for d in dirs:
        for root, _, files in os.walk(os.path.join(SRC, d)):
            for f in files:
                if f.endswith((".c", ".h")):
                    with open(os.path.join(root, f), errors="replace") as fh:
                        out |= set(LITERAL.findall(fh.read()))
    return out


def read(path):
    with open(os.path.join(SRC, path), errors="replace") as fh:
        return fh.read()


def environment(page):
    """The names in a manual page's ENVIRONMENT section."""
    text = read("docs/man/" + page).replace("\\-", "-").replace("\\&", "")
    if "\n.SH ENVIRONMENT\n" not in text:
        failures.append("%s has no ENVIRONMENT section" % page)
        return set()
    sec = text.split("\n.SH ENVIRONMENT\n", 1)[1].split("\n.SH ", 1)[0]
    return set(NAME.findall(sec))


programs = literals("src/cli", "src/reporter", "src/server", "src/symbols", "src/common")
client = literals("src/client")
everything = literals("src")
man_env = environment("faultline.1") | environment("faultline-report.1")
docs = "".join(read("docs/" + f) for f in sorted(os.listdir(os.path.join(SRC, "docs")))
               if f.endswith(".md"))
client_md = read("docs/client.md")
# The variables docs/client.md lists as a table's rows: | `FAULTLINE_X` ...
client_rows = set()
for row in re.findall(r"^\|([^|\n]*)\|", client_md, re.M):
    client_rows |= set(NAME.findall(row))

for v in sorted(programs - TEST_KNOBS - man_env):
    failures.append("%s is read by the programs but in no manual page's ENVIRONMENT" % v)
for v in sorted(TEST_KNOBS & programs):
    if v not in docs:
        failures.append("%s (a test knob) is named nowhere in docs/" % v)
for v in sorted(client - set(NAME.findall(client_md))):
    failures.append("%s is read by libfaultline but not in docs/client.md" % v)
for v in sorted(man_env - everything):
    failures.append("the manual's ENVIRONMENT names %s, which nothing in src/ reads" % v)
for v in sorted(client_rows - everything):
    failures.append("docs/client.md's tables name %s, which nothing in src/ reads" % v)

for f in failures:
    print("FAIL:", f)
print("man environment: %s (%d variables read, %d in the manuals)" %
      ("FAILED" if failures else "ok", len(everything), len(man_env)))
sys.exit(1 if failures else 0)
