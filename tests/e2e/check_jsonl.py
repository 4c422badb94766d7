#!/usr/bin/env python3
"""check_jsonl.py - assert what an a2acheck JSONL log directory contains.

Used by the end-to-end tests (ctest) of every area. Python 3, stdlib only.

    check_jsonl.py DIR [assertions...]

DIR is searched recursively for *.jsonl files (one per process/rank). Every
line must be a JSON object with a string "check" and a "severity" in
error|warning|info, otherwise the log itself is broken and the script fails.
Records whose check is in the ignore list (by default "*.summary": the exit
summaries a2acheck.summary and perf.summary, which every run writes) are
skipped for all assertions below.

Assertions (all may be repeated; all must hold):
  --expect SPEC      at least one finding matches SPEC.
                     SPEC = CHECK[:SEVERITY][@RANK][=N]
                       CHECK    check name or fnmatch pattern ("layout.*")
                       SEVERITY error|warning|info
                       RANK     only findings whose "rank" field is RANK
                       =N       exactly N matching findings (JSON lines;
                                the per-line "count" field is not summed)
  --only             every finding matches some --expect or --allow SPEC
                     ("the buggy program yields exactly that check").
  --allow SPEC       findings tolerated by --only (same SPEC syntax, no =N).
  --no-other-errors  every error-severity finding matches an --expect/--allow
                     SPEC (other warnings/infos are tolerated).
  --none             no finding at all ("the fixed program is clean").
  --forbid SPEC      no finding matches SPEC.
  --contains CHECK=TEXT
                     some finding of CHECK has TEXT in its message or in its
                     serialized details (an ignored check named exactly,
                     e.g. perf.summary, is searched too).
  --matches CHECK=REGEX
                     as --contains, with a Python regular expression
                     (re.search) instead of a literal text.
  --stack-has CHECK=TEXT
                     some finding of CHECK has a stack frame containing TEXT
                     (e.g. the user function that made the call).
  --occurrences CHECK=N
                     the exit summaries (a2acheck.summary, one per file)
                     count N occurrences of CHECK in all: every report,
                     deduplicated repeats included (the per-line "count"
                     of a finding is only its count when it was written).
  --files N          exactly N .jsonl files (default: at least 1).
  --ignore CHECK     also skip this check (pattern); may be repeated.

Exit status: 0 all assertions hold; 1 an assertion failed (the findings are
printed); 2 usage error, no log, or a malformed log.

Examples:
  check_jsonl.py logs/ --expect layout.overlap:error --only
  check_jsonl.py logs/ --none
  check_jsonl.py logs/ --expect 'group.unbalanced:error=1' \\
      --stack-has group.unbalanced=main --no-other-errors
"""
import argparse
import fnmatch
import json
import re
import os
import sys

SEVERITIES = ("error", "warning", "info")


class LogError(Exception):
    """The log itself is malformed (exit status 2)."""


class Spec:
    def __init__(self, text, allow_count=True):
        self.text = text
        s = text
        self.count = None
        if "=" in s:
            if not allow_count:
                raise ValueError("=N is not allowed here: %r" % text)
            s, n = s.rsplit("=", 1)
            if not n.isdigit():
                raise ValueError("bad count in %r" % text)
            self.count = int(n)
        self.rank = None
        if "@" in s:
            s, r = s.rsplit("@", 1)
            try:
                self.rank = int(r)
            except ValueError:
                raise ValueError("bad rank in %r" % text)
        self.severity = None
        if ":" in s:
            s, sev = s.rsplit(":", 1)
            if sev not in SEVERITIES:
                raise ValueError("bad severity %r in %r" % (sev, text))
            self.severity = sev
        if not s:
            raise ValueError("empty check name in %r" % text)
        self.check = s

    def matches(self, f):
        if not fnmatch.fnmatchcase(f["check"], self.check):
            return False
        if self.severity and f["severity"] != self.severity:
            return False
        if self.rank is not None and f.get("rank") != self.rank:
            return False
        return True


def load(dirpath, ignore, summaries=None, ignored=None):
    """The .jsonl files under dirpath and their findings, less the ignored
    checks; the exit summaries (a2acheck.summary) appended to summaries
    when it is a list, and the ignored records to ignored."""
    files = []
    for root, _dirs, names in os.walk(dirpath):
        files += [os.path.join(root, n) for n in names if n.endswith(".jsonl")]
    files.sort()
    findings = []
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                where = "%s:%d" % (path, lineno)
                try:
                    rec = json.loads(line)
                except ValueError as e:
                    raise LogError("%s: invalid JSON: %s" % (where, e))
                if not isinstance(rec, dict) or not isinstance(rec.get("check"), str):
                    raise LogError("%s: not a finding object" % where)
                if rec.get("severity") not in SEVERITIES:
                    raise LogError("%s: bad severity %r" % (where, rec.get("severity")))
                if summaries is not None and rec["check"] == "a2acheck.summary":
                    summaries.append(rec)
                if any(fnmatch.fnmatchcase(rec["check"], p) for p in ignore):
                    if ignored is not None:
                        ignored.append(rec)
                    continue
                rec["_where"] = where
                findings.append(rec)
    return files, findings


def occurrences(summaries, check):
    """The occurrences of check the exit summaries count, in all."""
    n = 0
    for rec in summaries:
        details = rec.get("details") or {}
        for c in details.get("checks") or []:
            if c.get("check") == check:
                n += int(c.get("occurrences", 0))
    return n


def show(findings, out=sys.stderr):
    if not findings:
        print("  (no findings)", file=out)
    for f in findings:
        print("  %-28s %-7s rank=%s  %s" % (f["check"], f["severity"], f.get("rank"),
                                            str(f.get("message", ""))[:160]), file=out)
        print("      at %s" % f["_where"], file=out)


def split_kv(text, opt):
    if "=" not in text:
        raise ValueError("%s needs CHECK=TEXT, got %r" % (opt, text))
    return text.split("=", 1)


def main(argv):
    ap = argparse.ArgumentParser(
        description="Assert the findings of an a2acheck JSONL log directory.",
        epilog="See the top of this file for the SPEC syntax and examples.")
    ap.add_argument("dir")
    ap.add_argument("--expect", action="append", default=[])
    ap.add_argument("--allow", action="append", default=[])
    ap.add_argument("--forbid", action="append", default=[])
    ap.add_argument("--only", action="store_true")
    ap.add_argument("--none", action="store_true")
    ap.add_argument("--no-other-errors", action="store_true")
    ap.add_argument("--contains", action="append", default=[])
    ap.add_argument("--matches", action="append", default=[])
    ap.add_argument("--stack-has", action="append", default=[])
    ap.add_argument("--occurrences", action="append", default=[])
    ap.add_argument("--files", type=int)
    ap.add_argument("--ignore", action="append", default=["*.summary"])
    a = ap.parse_args(argv)

    try:
        expect = [Spec(s) for s in a.expect]
        allow = [Spec(s, allow_count=False) for s in a.allow]
        forbid = [Spec(s, allow_count=False) for s in a.forbid]
        contains = [split_kv(s, "--contains") for s in a.contains]
        matches = [split_kv(s, "--matches") for s in a.matches]
        for _check, rx in matches:
            try:
                re.compile(rx)
            except re.error as e:
                raise ValueError("--matches %r: %s" % (rx, e))
        stack_has = [split_kv(s, "--stack-has") for s in a.stack_has]
        occ = [split_kv(s, "--occurrences") for s in a.occurrences]
        for _check, n in occ:
            if not n.isdigit():
                raise ValueError("--occurrences needs CHECK=N, got %r" % n)
    except ValueError as e:
        ap.error(str(e))
    if a.none and (expect or a.only):
        ap.error("--none cannot be combined with --expect/--only")
    if not os.path.isdir(a.dir):
        print("check_jsonl: %s is not a directory (did the program run under the shim?)" % a.dir,
              file=sys.stderr)
        return 2

    try:
        summaries, ignored = [], []
        files, findings = load(a.dir, a.ignore, summaries, ignored)
    except (LogError, OSError) as e:
        print("check_jsonl: malformed log: %s" % e, file=sys.stderr)
        return 2
    if a.files is not None and len(files) != a.files:
        print("check_jsonl: expected %d .jsonl files in %s, found %d: %s"
              % (a.files, a.dir, len(files), files), file=sys.stderr)
        return 1
    if not files:
        print("check_jsonl: no .jsonl file in %s (did the program run under the shim?)" % a.dir,
              file=sys.stderr)
        return 2

    errors = []
    for sp in expect:
        n = sum(1 for f in findings if sp.matches(f))
        if sp.count is None and n == 0:
            errors.append("expected a finding matching %s, found none" % sp.text)
        elif sp.count is not None and n != sp.count:
            errors.append("expected exactly %d finding(s) matching %s, found %d"
                          % (sp.count, sp.text, n))
    known = expect + allow
    for f in findings:
        listed = any(sp.matches(f) for sp in known)
        if a.only and not listed:
            errors.append("unexpected finding %s (%s) at %s" % (f["check"], f["severity"], f["_where"]))
        elif a.no_other_errors and not listed and f["severity"] == "error":
            errors.append("unexpected error %s at %s" % (f["check"], f["_where"]))
        for sp in forbid:
            if sp.matches(f):
                errors.append("forbidden finding %s at %s" % (f["check"], f["_where"]))
    if a.none and findings:
        errors.append("expected no finding, found %d" % len(findings))
    for check, text in contains:
        # An ignored check named as such (perf.summary) is searched too.
        hits = [f for f in findings + [r for r in ignored if r["check"] == check]
                if fnmatch.fnmatchcase(f["check"], check)]
        if not any(text in str(f.get("message", "")) or text in json.dumps(f.get("details"))
                   for f in hits):
            errors.append("no %s finding mentions %r" % (check, text))
    for check, rx in matches:
        hits = [f for f in findings + [r for r in ignored if r["check"] == check]
                if fnmatch.fnmatchcase(f["check"], check)]
        if not any(re.search(rx, str(f.get("message", ""))) or re.search(rx, json.dumps(f.get("details")))
                   for f in hits):
            errors.append("no %s finding matches %r" % (check, rx))
    for check, n in occ:
        got = occurrences(summaries, check)
        if got != int(n):
            errors.append("expected %s occurrence(s) of %s in the exit summaries, found %d"
                          % (n, check, got))
    for check, text in stack_has:
        hits = [f for f in findings if fnmatch.fnmatchcase(f["check"], check)]
        if not any(any(text in str(fr) for fr in (f.get("stack") or [])) for f in hits):
            errors.append("no %s finding has a stack frame containing %r" % (check, text))

    if errors:
        for e in errors:
            print("check_jsonl: FAIL: " + e, file=sys.stderr)
        print("check_jsonl: findings in %s (%d file(s)):" % (a.dir, len(files)), file=sys.stderr)
        show(findings)
        return 1
    print("check_jsonl: OK: %d finding(s) in %d file(s) of %s" % (len(findings), len(files), a.dir))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
