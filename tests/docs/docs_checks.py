#!/usr/bin/env python3
"""docs_checks.py - docs/checks.md and the checks table must agree.

The table (analyzers/a2a_checks.inc) is printed by the dump_checks program.
Every check must have exactly one section in docs/checks.md, introduced by
`<a id="NAME"></a>` and the heading "### `NAME` (SEVERITY...)", whose first
severity word is the table's default severity, under the "## CATEGORY"
heading of its category, in the table's category order; and every such
section must be a row of the table. Also checks that the source never
spells a check name as a string literal outside the table (emitters use
A2A_CK_* ids).

usage: docs_checks.py --dump PROG --doc docs/checks.md --src DIR...
"""
import argparse
import re
import subprocess
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--dump", required=True)
ap.add_argument("--doc", required=True)
ap.add_argument("--src", nargs="*", default=[])
a = ap.parse_args()

out = subprocess.run([a.dump], check=True, capture_output=True, text=True).stdout
cats, checks = [], {}
for line in out.splitlines():
    f = line.split("\t")
    if f[0] == "category":
        cats.append(f[1])
    else:
        checks[f[1]] = f[2]

doc = open(a.doc, encoding="utf-8").read().splitlines()
fails = []
seen = {}
cur_cat = None
cat_order = []
for i, line in enumerate(doc):
    m = re.match(r"^## ([a-z0-9]+)", line)
    if m:
        cur_cat = m.group(1)
        cat_order.append(cur_cat)
        continue
    m = re.match(r"^### `([a-z0-9]+\.[a-z0-9-]+)` \((\w+)", line)
    if not m:
        continue
    name, sev = m.group(1), m.group(2)
    prev = [l for l in doc[max(0, i - 3):i] if l.strip()]
    if not prev or prev[-1].strip() != '<a id="%s"></a>' % name:
        fails.append('%s: the heading is not introduced by <a id="%s"></a>' % (name, name))
    if name in seen:
        fails.append("%s: two sections" % name)
    seen[name] = True
    if name not in checks:
        fails.append("%s: documented but not in the checks table" % name)
        continue
    if sev != checks[name]:
        fails.append("%s: documented as %s, the table's default is %s" % (name, sev, checks[name]))
    if cur_cat != name.split(".")[0]:
        fails.append("%s: documented under '## %s'" % (name, cur_cat))
for name in checks:
    if name not in seen:
        fails.append("%s: in the checks table but has no section in %s" % (name, a.doc))
if [c for c in cat_order if c in cats] != cats:
    fails.append("category sections %s are not in the table's order %s" % (cat_order, cats))

# Emitters name checks by id: a string literal equal to a check name in C
# code is a second spelling that nothing keeps in sync.
lit = re.compile(r'"((?:%s)\.[a-z0-9-]+)"' % "|".join(cats))
import glob, os
for d in a.src:
    for path in glob.glob(os.path.join(d, "**", "*.[ch]"), recursive=True):
        if os.path.basename(path) in ("a2a_checks.h", "core_checks.c"):
            continue
        for n, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
            if line.lstrip().startswith(("/*", "*", "//")):
                continue  # comments may name checks
            for m in lit.finditer(line):
                if m.group(1) in checks:
                    fails.append("%s:%d: check name %s spelled as a string literal; use its A2A_CK_ id"
                                 % (path, n, m.group(1)))

for f in fails:
    print("FAIL:", f)
print("%d checks, %d documented, %d problem(s)" % (len(checks), len(seen), len(fails)))
sys.exit(1 if fails else 0)
