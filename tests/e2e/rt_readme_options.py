#!/usr/bin/env python3
"""rt_readme_options.py - README.md's options table documents every option
the library knows (A2ACHECK_HELP=2 prints analyzers/a2a_options.inc as
Markdown). The check requires every variable of the library's table to have
a row in README.md's table (help wording may lag; a missing option fails).

usage: rt_readme_options.py --shim liba2acheck.so --prog P --readme README.md [--update]

Runs P (any program that makes an intercepted call) with A2ACHECK_HELP=2,
takes the Markdown table from its stderr and compares it with the text
between <!-- options:begin --> and <!-- options:end --> in README.md.
--update rewrites that part of README.md instead of comparing.
"""
import argparse
import os
import subprocess
import sys
import tempfile

BEGIN, END = "<!-- options:begin -->", "<!-- options:end -->"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shim", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--readme", required=True)
    ap.add_argument("--update", action="store_true")
    a = ap.parse_args()
    a.shim, a.prog = os.path.abspath(a.shim), os.path.abspath(a.prog)
    env = {k: v for k, v in os.environ.items() if not k.startswith("A2ACHECK_")}
    with tempfile.TemporaryDirectory() as d:
        env.update(LD_PRELOAD=a.shim, A2ACHECK_HELP="2", A2ACHECK_LOG_DIR=d,
                   A2ACHECK_LOG_STDERR="none")
        p = subprocess.run([a.prog], env=env, cwd=d, capture_output=True, text=True,
                           timeout=60)
    table = "\n".join(l for l in p.stderr.splitlines() if l.startswith("|")) + "\n"
    if table.count("\n") < 3:
        print("no options table on stderr:\n" + p.stderr)
        return 1
    text = open(a.readme).read()
    i, j = text.find(BEGIN), text.find(END)
    if i < 0 or j < i:
        print("README has no %s ... %s section" % (BEGIN, END))
        return 1
    new = text[: i + len(BEGIN)] + "\n" + table + text[j:]
    if a.update:
        open(a.readme, "w").write(new)
        return 0
    have = text[i:j]
    missing = [l.split("`")[1] for l in table.splitlines()
               if l.startswith("| `") and "| `%s` |" % l.split("`")[1] not in have]
    if missing:
        print("README.md's options table lacks %s (analyzers/a2a_options.inc)."
              % ", ".join(missing))
        print("Regenerate it: python3 tests/e2e/rt_readme_options.py --shim %s --prog %s "
              "--readme README.md --update" % (a.shim, a.prog))
        print("expected:\n" + table)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
