#!/usr/bin/env python3
"""client_check.py - run one real-client reproduction (tests/e2e/client_*.c)
under the preloaded a2acheck on the simulator and assert on its exit status,
its stderr, its logs and the consistency of every summary it printed.
Python 3, stdlib only. Used by tests/e2e/clients.cmake.

    client_check.py --shim SO --libdir DIR --logs DIR [options]
                    -- PROGRAM [ARG...] [:: CHECK_JSONL_ARGS...]

Options:
  --env K=V          extra environment for the program (repeatable)
  --status N         required exit status (default 0)
  --timeout S        wall-clock limit for the program (default 120)
  --stderr-has RE    the program's stderr matches RE (repeatable)
  --stderr-lacks RE  ... does not match RE (repeatable)
  --message CHECK=RE some CHECK finding's message matches RE (repeatable)
  --message-lacks CHECK=RE
                     no CHECK finding's message matches RE (repeatable)
After "::" come check_jsonl.py's assertions on the log directory (the
directory is passed for you).

Summary consistency (always checked): every summary a2acheck printed on
stderr names the process it is for ("summary for rank R, pid P" / "pid P,
rank unknown", or "...: no findings"); its counts add up to the rows of its
table; no perf.summary report is listed as a finding; and it agrees with
that process's JSONL: "no findings" only if the log has none, the distinct
findings by severity equal the log's summary record, and every check in the
table has findings in the log.

The program runs with A2ACHECK_LOG_STDERR=info unless --env sets it, so
every finding and the summary are on stderr.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_jsonl  # noqa: E402

SUMMARY = re.compile(r"^a2acheck: summary (?:\(amended[^)]*\) )?for (?P<who>[^:]+): "
                     r"(?P<total>\d+) distinct findings? \((?P<e>\d+) error, (?P<w>\d+) warning, "
                     r"(?P<i>\d+) info\), (?P<occ>\d+) occurrences?$")
NOFIND = re.compile(r"^a2acheck: (?P<who>[^:]+): no findings")
ROW = re.compile(r"^a2acheck:   (?P<check>[a-z0-9_-]+\.[a-z0-9_.-]+)\s+(?P<sev>error|warning|info)"
                 r"\s+(?P<logged>\d+)\s+(?P<supp>\d+)\s+(?P<occ>\d+)$")
WHO = re.compile(r"pid (?P<pid>\d+)")


def jsonl_of(logdir, pid):
    files = [p for p in glob.glob(os.path.join(logdir, "**", "*.jsonl"), recursive=True)
             if ".%d.rank" % pid in os.path.basename(p)]
    if len(files) != 1:
        return None
    recs = []
    for line in open(files[0], encoding="utf-8", errors="replace"):
        if line.strip():
            recs.append(json.loads(line))
    return recs


def check_summaries(stderr, logdir, errors):
    lines = stderr.splitlines()
    seen = 0
    for i, line in enumerate(lines):
        m = SUMMARY.match(line)
        n = NOFIND.match(line)
        if not m and not n:
            if line.startswith("a2acheck: summary") or line.startswith("a2acheck: no findings"):
                errors.append("a summary line that does not say whose it is: %r" % line)
            continue
        seen += 1
        who = (m or n).group("who")
        w = WHO.search(who)
        if not w:
            errors.append("summary without a pid: %r" % line)
            continue
        recs = jsonl_of(logdir, int(w.group("pid")))
        if recs is None:
            errors.append("no single JSONL log for %s" % who)
            continue
        findings = [r for r in recs if not r["check"].endswith(".summary")]
        if n:
            if findings:
                errors.append("%s printed 'no findings' but its log has %d: %s"
                              % (who, len(findings), sorted({f["check"] for f in findings})))
            continue
        total, occ = int(m.group("total")), int(m.group("occ"))
        by_sev = {"error": int(m.group("e")), "warning": int(m.group("w")),
                  "info": int(m.group("i"))}
        if sum(by_sev.values()) != total:
            errors.append("%s: %d distinct findings but %r by severity" % (who, total, by_sev))
        rows = []
        for row in lines[i + 1:]:
            r = ROW.match(row)
            if r:
                rows.append(r)
            elif not row.startswith("a2acheck:   "):
                break
        if any(r.group("check") == "perf.summary" for r in rows):
            errors.append("%s: perf.summary (a report, not a finding) is in the findings table"
                          % who)
        if sum(int(r.group("occ")) for r in rows) != occ:
            errors.append("%s: %d occurrences, but the table's rows add up to %d"
                          % (who, occ, sum(int(r.group("occ")) for r in rows)))
        if not line.startswith("a2acheck: summary (amended"):
            logged = [r for r in rows if int(r.group("supp")) == 0]
            for r in logged:
                n_log = sum(1 for f in findings if f["check"] == r.group("check"))
                if n_log != int(r.group("logged")):
                    errors.append("%s: the table says %s logged %s, the log has %d"
                                  % (who, r.group("check"), r.group("logged"), n_log))
        summ = [r for r in recs if r["check"] == "a2acheck.summary"]
        if summ:
            det = summ[-1].get("details", {}).get("findings", {})
            if det != by_sev:
                errors.append("%s: stderr says %r, the log's summary record %r" % (who, by_sev, det))
    if seen == 0:
        errors.append("no a2acheck summary on stderr")


def main(argv):
    if "--" not in argv:
        print("client_check.py: missing -- PROGRAM", file=sys.stderr)
        return 2
    k = argv.index("--")
    opts, rest = argv[:k], argv[k + 1:]
    jsonl_args = []
    if "::" in rest:
        j = rest.index("::")
        rest, jsonl_args = rest[:j], rest[j + 1:]
    ap = argparse.ArgumentParser()
    ap.add_argument("--shim", required=True)
    ap.add_argument("--libdir", required=True)
    ap.add_argument("--logs", required=True)
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--status", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--stderr-has", action="append", default=[])
    ap.add_argument("--stderr-lacks", action="append", default=[])
    ap.add_argument("--message", action="append", default=[])
    ap.add_argument("--message-lacks", action="append", default=[])
    a = ap.parse_args(opts)
    if not rest:
        ap.error("no program after --")

    import shutil
    shutil.rmtree(a.logs, ignore_errors=True)
    os.makedirs(a.logs)
    env = dict(os.environ)
    for key in list(env):
        if key.startswith("A2ACHECK_"):
            del env[key]
    env.update({"LD_PRELOAD": a.shim, "A2ACHECK_LOG_DIR": a.logs, "NCCL_SOCKET_IFNAME": "lo",
                "A2ACHECK_LOG_STDERR": "info",
                "LD_LIBRARY_PATH": a.libdir + (":" + env["LD_LIBRARY_PATH"]
                                               if env.get("LD_LIBRARY_PATH") else "")})
    for kv in a.env:
        key, _, val = kv.partition("=")
        env[key] = val
    try:
        p = subprocess.run(rest, env=env, capture_output=True, text=True, timeout=a.timeout)
    except subprocess.TimeoutExpired:
        print("FAIL: %s did not end within %s s" % (" ".join(rest), a.timeout))
        return 1
    print("$ %s -> %d" % (" ".join(rest), p.returncode))
    if p.stdout:
        print("stdout:\n" + p.stdout)
    if p.stderr:
        print("stderr:\n" + p.stderr)

    errors = []
    if p.returncode != a.status:
        errors.append("exit status %d, expected %d" % (p.returncode, a.status))
    for rx in a.stderr_has:
        if not re.search(rx, p.stderr, re.M):
            errors.append("stderr does not match %r" % rx)
    for rx in a.stderr_lacks:
        if re.search(rx, p.stderr, re.M):
            errors.append("stderr matches %r" % rx)
    try:
        _files, findings = check_jsonl.load(a.logs, ["*.summary"])
    except (check_jsonl.LogError, OSError) as e:
        errors.append("malformed log: %s" % e)
        findings = []
    for spec, want in ((s, True) for s in a.message):
        check, _, rx = spec.partition("=")
        if not any(f["check"] == check and re.search(rx, f.get("message", "")) for f in findings):
            errors.append("no %s finding's message matches %r" % (check, rx))
    for spec in a.message_lacks:
        check, _, rx = spec.partition("=")
        for f in findings:
            if f["check"] == check and re.search(rx, f.get("message", "")):
                errors.append("a %s finding's message matches %r: %s"
                              % (check, rx, f.get("message", "")[:300]))
    check_summaries(p.stderr, a.logs, errors)
    if jsonl_args and check_jsonl.main([a.logs] + jsonl_args) != 0:
        errors.append("check_jsonl.py %s failed" % " ".join(jsonl_args))
    for e in errors:
        print("FAIL: " + e)
    if errors:
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
