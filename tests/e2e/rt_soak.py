#!/usr/bin/env python3
"""rt_soak.py - N operations with findings firing constantly (issue 15 item 8).

usage: rt_soak.py --shim liba2acheck.so --prog rt_soak --work DIR --ops N

Runs rt_soak N under liba2acheck.so (every call a group.unbalanced error
over 256 call sites, A2ACHECK_MAX_PER_CHECK=100 by default) and checks, from
its checkpoints at 10^5, 10^6, ... N:
  - log size capped: the log files do not grow after the first checkpoint
    (100 findings written, the other 156 sites only counted, repeats patched
    in place) and stay under 512 KiB;
  - memory flat: VmRSS grows by at most 2 MiB from 10^5 to N;
  - threads and file descriptors flat: the same count at every checkpoint;
  - nothing lost: the summary counts exactly N occurrences, 100 logged,
    156 suppressed, nothing dropped or unwritten; every JSONL line parses.
Prints a table of the figures (docs/reliability.md, "Scale (soak)").
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys

FAILS = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        FAILS.append(what)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shim", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--ops", type=int, required=True)
    ap.add_argument("--timeout", type=int, default=900)
    a = ap.parse_args()
    a.shim, a.prog, a.work = (os.path.abspath(x) for x in (a.shim, a.prog, a.work))
    d = os.path.join(a.work, "logs")
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    env = {k: v for k, v in os.environ.items() if not k.startswith("A2ACHECK_")}
    env.update(LD_PRELOAD=a.shim, A2ACHECK_LOG_DIR=d, RANK="0", NCCL_SOCKET_IFNAME="lo",
               A2ACHECK_LOG_STDERR="none")
    p = subprocess.run([a.prog, str(a.ops)], cwd=a.work, env=env, capture_output=True, text=True,
                       timeout=a.timeout)
    print(p.stdout + p.stderr[-3000:])
    check(p.returncode == 0, "rt_soak %d exits 0 (got %d)" % (a.ops, p.returncode))
    pts = []
    for m in re.finditer(r"checkpoint ops=(\d+) rss_kb=(\d+) fds=(\d+) threads=(\d+) "
                         r"logbytes=(\d+) secs=([\d.]+)", p.stdout):
        pts.append(dict(ops=int(m[1]), rss=int(m[2]), fds=int(m[3]), threads=int(m[4]),
                        log=int(m[5]), secs=float(m[6])))
    want = [1000] + [10 ** k for k in range(5, 12) if 10 ** k <= a.ops]
    if a.ops not in want:
        want.append(a.ops)
    check([q["ops"] for q in pts] == want, "checkpoints at %r (got %r)" % (want, [q["ops"] for q in pts]))
    if len(pts) < 2:
        sys.exit(1)
    print("| operations | seconds | VmRSS KiB | fds | threads | log bytes |")
    print("|---:|---:|---:|---:|---:|---:|")
    for q in pts:
        print("| %d | %.1f | %d | %d | %d | %d |" % (q["ops"], q["secs"], q["rss"], q["fds"],
                                                   q["threads"], q["log"]))
    base, last = pts[1], pts[-1]   # 10^5 (every site seen many times) and N
    check(all(q["log"] == base["log"] for q in pts[1:]) and last["log"] < 512 * 1024,
          "log size capped: %d bytes at every checkpoint from 10^5 on" % base["log"])
    check(last["rss"] - base["rss"] <= 2048,
          "memory flat: VmRSS %d -> %d KiB" % (base["rss"], last["rss"]))
    check(all(q["threads"] == base["threads"] for q in pts[1:]), "threads flat (%r)"
          % [q["threads"] for q in pts])
    check(all(q["fds"] == base["fds"] for q in pts[1:]), "fds flat (%r)" % [q["fds"] for q in pts])
    js = glob.glob(os.path.join(d, "a2acheck.*.jsonl"))
    check(len(js) == 1, "one JSONL (%r)" % js)
    recs = []
    try:
        recs = [json.loads(l) for l in open(js[0]).read().splitlines()] if js else []
    except ValueError as e:
        check(False, "every JSONL line parses (%s)" % e)
    summ = [r for r in recs if r["check"] == "a2acheck.summary"]
    det = summ[-1]["details"] if summ else {}
    g = [c for c in det.get("checks", []) if c["check"] == "group.unbalanced"]
    check(len(g) == 1 and (g[0]["occurrences"], g[0]["logged"], g[0]["suppressed"],
                           g[0]["unwritten"]) == (a.ops, 100, 156, 0),
          "summary: %d occurrences, 100 logged, 156 suppressed, 0 unwritten (%r)" % (a.ops, g))
    check(det.get("dropped") == 0, "nothing dropped (%r)" % det.get("dropped"))
    fnd = [r for r in recs if r["check"] == "group.unbalanced"]
    check(len(fnd) == 100 and sum(r["count"] for r in fnd) <= a.ops,
          "100 findings in the JSONL with patched counts")
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
