"""check_sites.py - asserts on the Python call sites in a2acheck's JSONL logs
(tests/py/run_py.sh, tests/torch/CMakeLists.txt). Lines are named by marker
comments in the program ("# SITE:<name>"), so the expectations follow the
source.

  check_sites.py --logs DIR --script PROGRAM.py [assertions...]
    --first CHECK@RANK=FUNC:MARK   the finding's first frame is exactly
                                   "FUNC (PROGRAM.py's path:line of MARK)"
    --frame CHECK@RANK=TEXT        some frame of it contains TEXT
    --names CHECK@RANK=MARK        its message names PROGRAM.py:line of MARK
                                   (the peer's site in a cross-rank finding)
    --native CHECK                 every finding of CHECK starts with a native
                                   frame (no Python frame anywhere)
    --sarif TOOL                   `TOOL report --format sarif DIR` has, for
                                   every --first, a result of that check whose
                                   location is PROGRAM.py at that line
Exit 0 when every assertion holds; each failure is printed with the
findings of that check.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys

PY_FRAME = re.compile(r"^(?P<func>.*) \((?P<file>.+\.py):(?P<line>\d+)\)$")


def markers(script):
    lines = {}
    with open(script) as f:
        for no, text in enumerate(f, 1):
            for m in re.finditer(r"# SITE:(\w+)", text):
                lines[m.group(1)] = no
    return lines


def load(logs):
    found = []
    for path in sorted(glob.glob(os.path.join(logs, "**", "*.jsonl"), recursive=True)):
        with open(path) as f:
            for line in f:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if not r.get("check", "").endswith(".summary"):
                    found.append(r)
    return found


def key(spec):
    what, _, want = spec.partition("=")
    check, _, rank = what.partition("@")
    return check, int(rank) if rank else None, want


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logs", required=True)
    ap.add_argument("--script", required=True)
    ap.add_argument("--first", action="append", default=[])
    ap.add_argument("--frame", action="append", default=[])
    ap.add_argument("--names", action="append", default=[])
    ap.add_argument("--native", action="append", default=[])
    ap.add_argument("--sarif")
    a = ap.parse_args()
    script = os.path.realpath(a.script)
    marks = markers(script)
    findings = load(a.logs)
    errors = []

    def of(check, rank):
        return [r for r in findings if r["check"] == check and (rank is None or r.get("rank") == rank)]

    def fail(msg, check, rank):
        errors.append(msg)
        for r in of(check, rank) or findings:
            errors.append(f"    {r['check']} rank {r.get('rank')}: {r.get('message', '')[:160]}")
            errors.extend(f"      {s}" for s in r.get("stack", [])[:8])

    def line_of(mark):
        if mark not in marks:
            sys.exit(f"check_sites.py: no '# SITE:{mark}' in {script}")
        return marks[mark]

    want_sarif = []
    for spec in a.first:
        check, rank, want = key(spec)
        func, _, mark = want.rpartition(":")
        frame = f"{func} ({script}:{line_of(mark)})"
        got = of(check, rank)
        if not got:
            fail(f"FAIL: no {check} finding on rank {rank}", check, None)
        elif not any(r.get("stack") and r["stack"][0] == frame for r in got):
            fail(f"FAIL: {check} on rank {rank} does not start at {frame}", check, rank)
        want_sarif.append((check, line_of(mark)))
    for spec in a.frame:
        check, rank, text = key(spec)
        if not any(text in s for r in of(check, rank) for s in r.get("stack", [])):
            fail(f"FAIL: no frame of {check} on rank {rank} contains {text!r}", check, rank)
    for spec in a.names:
        check, rank, mark = key(spec)
        where = f"{os.path.basename(script)}:{line_of(mark)})"
        if not any(where in r.get("message", "") for r in of(check, rank)):
            fail(f"FAIL: the message of {check} on rank {rank} does not name ...{where}", check, rank)
    for check in a.native:
        got = of(check, None)
        if not got:
            fail(f"FAIL: no {check} finding", check, None)
        for r in got:
            if any(PY_FRAME.match(s) for s in r.get("stack", [])) or not r.get("stack"):
                fail(f"FAIL: {check} on rank {r.get('rank')} has Python frames (or none)", check, r.get("rank"))
    if a.sarif:
        out = subprocess.run([a.sarif, "report", "--format", "sarif", a.logs], capture_output=True,
                             text=True)
        try:
            sarif = json.loads(out.stdout)
        except ValueError:
            sarif = None
            errors.append(f"FAIL: {a.sarif} report --format sarif printed no JSON: {out.stderr[:300]}")
        if sarif:
            if sarif.get("version") != "2.1.0":
                errors.append("FAIL: SARIF version is not 2.1.0")
            results = sarif["runs"][0]["results"]
            for check, line in want_sarif:
                ok = False
                for r in results:
                    if r.get("ruleId") != check:
                        continue
                    for loc in r.get("locations", []) + r.get("relatedLocations", []):
                        pl = loc.get("physicalLocation", {})
                        uri = pl.get("artifactLocation", {}).get("uri", "")
                        if uri.endswith("/" + os.path.basename(script)) and \
                                pl.get("region", {}).get("startLine") == line:
                            ok = True
                if not ok:
                    errors.append(f"FAIL: SARIF has no {check} result located at "
                                  f"{os.path.basename(script)}:{line}")
    if errors:
        print("\n".join(errors))
        return 1
    print(f"check_sites.py: {len(a.first)} first frames, {len(a.names)} peer sites, "
          f"{len(a.frame)} frames, {len(a.native)} native-only checks{', SARIF' if a.sarif else ''}: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
