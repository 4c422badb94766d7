#!/usr/bin/env python3
"""xrank_check.py - run one xrank_scenarios program under the preloaded
a2acheck on the simulator and assert on its ranks' exit statuses and times
and on the per-rank JSONL logs. Python 3, stdlib only.

    xrank_check.py --dir D --preload SO --libdir L --limit S --prog P --args "A B"
                   [assertions...]

With --killed-ok, ranks the program had to kill at its wait limit are
expected (A2ACHECK_ON_DEADLOCK=wait keeps deadlocked ranks alive).

The program prints "rank R exit S after T s" per rank (see
xrank_scenarios.c). Assertions (all must hold):
  --status 0,66          every rank exited with one of these statuses
  --rank-status R=S      rank R exited with S
  --within T             every rank that exited 66 did so within T s
  --after T              every rank that exited 66 did so after T s
  --expect CHECK[@RANK]  a finding of CHECK (in rank RANK's log)
  --forbid CHECK         no finding of CHECK
  --contains CHECK=TEXT  a finding of CHECK whose message/details has TEXT
  --contains-two-comms CHECK
                         a finding of CHECK naming two distinct comm hashes
  --earlier A<B          the first finding of check A was written at least
                         1 s before the first of check B (A comes early)
  --if-any-status S      the assertions after it apply only when some rank
                         exited with S
  --none                 no finding besides perf.* and *.summary
  --only-no-coordinator  no finding besides a2acheck.no-coordinator (which
                         every rank must have), perf.* and *.summary
  --signal-ok R          rank R may die from a signal (the fault tests kill it)
  --metric NAME<=V       the program printed "metric NAME X" with X <= V
  --metric NAME>=V       ... with X >= V
  --delay CHECK:METRIC<=S
                         the first CHECK finding was written at most S seconds
                         after the CLOCK_REALTIME epoch the program printed as
                         "metric METRIC" (time to detect a fault)
  --text-forbid TEXT     no line of the text logs (*.log) and of the program's
                         output contains TEXT (forged lines, escapes: Python
                         escapes such as \x1b are decoded)
  --stdout-contains TEXT the program's output (the ranks' stderr) has TEXT
  --every-rank CHECK     every rank's log has a CHECK finding (by the file's
                         rank, for findings made before the rank was known)
  --no-leftovers S       no process of the run (found by a tag in its
                         environment) is left S s after the program ended
                         (a lingering coordinator must end with its clients)
  --lingerer-clean       while the program runs, a lingering coordinator
                         (a2acheck-coord) appears, and holds no descriptor but
                         sockets and /dev/null and no /dev/* mapping
  --exit-delay R<=S      rank R's process ended at most S s after it called
                         exit() (the program prints "rank R calls exit after T s")

In --env values, {free_port} becomes a port free right now, {python} this
Python and {srcdir} the directory of this script (tests/e2e).
"""
import argparse
import datetime
import fnmatch
import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time

IGNORE = ("perf.*", "*.summary")


def load(d):
    out = []
    for path in glob.glob(os.path.join(d, "**", "*.jsonl"), recursive=True):
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                rec = json.loads(line)
                if any(fnmatch.fnmatch(rec.get("check", ""), p) for p in IGNORE):
                    continue
                rec["_file"] = os.path.basename(path)
                out.append(rec)
    return out


def text_of(f):
    return str(f.get("message", "")) + " " + json.dumps(f.get("details"))


def leftovers(tag, wait_s):
    """Processes whose environment carries the run's tag, waiting up to
    wait_s for them to end: ([(pid, comm)], seconds waited)."""
    needle = ("A2A_XRANK_RUN_TAG=" + tag).encode()
    t0 = time.monotonic()
    while True:
        found = []
        for d in os.listdir("/proc"):
            if not d.isdigit() or int(d) == os.getpid():
                continue
            try:
                with open("/proc/%s/environ" % d, "rb") as f:
                    if needle not in f.read().split(b"\0"):
                        continue
                with open("/proc/%s/stat" % d) as f:
                    st = f.read()
                if st[st.rfind(")") + 2:].startswith("Z"):
                    continue  # ended, not yet reaped by init
                with open("/proc/%s/comm" % d) as f:
                    found.append((int(d), f.read().strip()))
            except OSError:
                continue
        waited = time.monotonic() - t0
        if not found or waited >= wait_s:
            return found, waited
        time.sleep(0.05)


def watch_lingerers(tag, seen, stop):
    """Samples every a2acheck-coord process of the run until stop: what it
    holds besides sockets and /dev/null, and any /dev/* mapping but /dev/zero."""
    needle = ("A2A_XRANK_RUN_TAG=" + tag).encode()
    while not stop.is_set():
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open("/proc/%s/comm" % d) as f:
                    if f.read().strip() != "a2acheck-coord":
                        continue
                with open("/proc/%s/environ" % d, "rb") as f:
                    if needle not in f.read().split(b"\0"):
                        continue
                bad = seen.setdefault(int(d), set())
                for fd in os.listdir("/proc/%s/fd" % d):
                    t = os.readlink("/proc/%s/fd/%s" % (d, fd))
                    if not t.startswith("socket:") and t != "/dev/null":
                        bad.add("fd %s -> %s" % (fd, t))
                with open("/proc/%s/maps" % d) as f:
                    for line in f:
                        parts = line.split(None, 5)
                        path = parts[5].strip() if len(parts) > 5 else ""
                        if path.startswith("/dev/") and not path.startswith("/dev/zero"):
                            bad.add("mapping " + path)
            except OSError:
                continue
        time.sleep(0.05)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--preload", required=True)
    ap.add_argument("--libdir", required=True)
    ap.add_argument("--limit", type=int, required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--args", required=True)
    ap.add_argument("--env", action="append", default=[], help="VAR=VALUE for the program")
    ap.add_argument("--signal-ok", action="append", type=int, default=[],
                    help="rank R may die from a signal")
    ap.add_argument("--killed-ok", action="store_true",
                    help="ranks still running at the program's wait limit were killed: expected")
    args, rest = ap.parse_known_args()

    shutil.rmtree(args.dir, ignore_errors=True)
    os.makedirs(args.dir)
    env = dict(os.environ)
    env.update({"LD_PRELOAD": args.preload, "A2ACHECK_LOG_DIR": args.dir,
                "NCCL_SOCKET_IFNAME": "lo",
                "LD_LIBRARY_PATH": args.libdir + (":" + env["LD_LIBRARY_PATH"]
                                                  if env.get("LD_LIBRARY_PATH") else "")})
    # Every process of the run inherits this tag: --no-leftovers finds them.
    tag = "%d-%s" % (os.getpid(), os.urandom(6).hex())
    env["A2A_XRANK_RUN_TAG"] = tag
    free_port = None
    for kv in args.env:
        k, _, v = kv.partition("=")
        v = v.replace("{python}", sys.executable).replace(
            "{srcdir}", os.path.dirname(os.path.abspath(__file__)))
        if "{free_port}" in v:
            # A port free right now: a fixed one could be held by another run
            # (one port per test: every {free_port} is the same).
            if free_port is None:
                with socket.socket() as s:
                    s.bind(("127.0.0.1", 0))
                    free_port = s.getsockname()[1]
            v = v.replace("{free_port}", str(free_port))
        env[k] = v
    seen = {}  # lingering coordinators: pid -> what it held that it should not
    stop = threading.Event()
    watcher = threading.Thread(target=watch_lingerers, args=(tag, seen, stop), daemon=True)
    if "--lingerer-clean" in rest:
        watcher.start()
    try:
        p = subprocess.run([args.prog] + args.args.split(), env=env, timeout=args.limit,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except subprocess.TimeoutExpired as e:
        print((e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else e.stdout)
        print("FAIL: the program ran past %d s" % args.limit)
        return 1
    stop.set()
    if watcher.is_alive():
        watcher.join()
    print(p.stdout[-20000:])
    if p.returncode != 0 and not args.killed_ok:
        print("FAIL: the launcher exited %d (a rank hung or setup failed)" % p.returncode)
        return 1
    if args.killed_ok:
        killed = re.findall(r"^rank (\d+) still running after .* killed$", p.stdout, re.M)
        if not killed:
            print("FAIL: --killed-ok: no rank was still running at the wait limit")
            return 1
    ranks = {}
    for m in re.finditer(r"^rank (\d+) (exit|signal) (\d+) after ([\d.]+) s$", p.stdout, re.M):
        ranks[int(m.group(1))] = (m.group(2), int(m.group(3)), float(m.group(4)))
    if not ranks and not args.killed_ok:
        print("FAIL: no rank status lines")
        return 1
    metrics = {m.group(1): float(m.group(2))
               for m in re.finditer(r"^metric (\S+) (-?[\d.]+)$", p.stdout, re.M)}
    for r, (kind, st, _) in ranks.items():
        if kind != "exit" and not args.killed_ok and r not in args.signal_ok:
            print("FAIL: rank %d died from signal %d" % (r, st))
            return 1
    finds = load(args.dir)
    failures = []
    active = True
    i = 0
    while i < len(rest):
        a = rest[i]
        v = rest[i + 1] if i + 1 < len(rest) else None
        i += 1
        if a == "--if-any-status":
            active = any(st == int(v) for (_, st, _) in ranks.values())
            i += 1
            continue
        if a == "--lingerer-clean":
            print("lingering coordinators seen: %s" % (seen or "none"))
            if not seen:
                failures.append("--lingerer-clean: no lingering coordinator was seen")
            for pid, bad in sorted(seen.items()):
                if bad:
                    failures.append("lingering coordinator %d holds %s" % (pid, sorted(bad)))
            continue
        if a in ("--none", "--only-no-coordinator"):
            if not active:
                continue
            allowed = () if a == "--none" else ("a2acheck.no-coordinator",)
            bad = [f for f in finds if f["check"] not in allowed]
            if bad:
                failures.append("%s: unexpected findings: %s" % (a, [(f["check"], f.get("rank")) for f in bad]))
            if a == "--only-no-coordinator":
                have = {f.get("rank") for f in finds if f["check"] == "a2acheck.no-coordinator"}
                for r in ranks:
                    if r not in have:
                        failures.append("rank %d has no a2acheck.no-coordinator" % r)
            continue
        i += 1
        if not active:
            continue
        if a == "--status":
            ok = {int(x) for x in v.split(",")}
            for r, (_, st, _) in sorted(ranks.items()):
                if st not in ok:
                    failures.append("rank %d exited %d, expected one of %s" % (r, st, sorted(ok)))
        elif a == "--rank-status":
            r, s = (int(x) for x in v.split("="))
            if ranks.get(r, (None, None))[1] != s:
                failures.append("rank %d exited %s, expected %d" % (r, ranks.get(r), s))
        elif a == "--within":
            for r, (_, st, t) in sorted(ranks.items()):
                if st == 66 and t > float(v):
                    failures.append("rank %d exited 66 after %.1f s, limit %s s" % (r, t, v))
        elif a == "--forbid":
            if any(f["check"] == v for f in finds):
                failures.append("forbidden %s finding present" % v)
        elif a == "--after":
            for r, (_, st, t) in sorted(ranks.items()):
                if st == 66 and t < float(v):
                    failures.append("rank %d exited 66 after %.1f s, before %s s" % (r, t, v))
        elif a == "--expect":
            check, _, rank = v.partition("@")
            hit = [f for f in finds if f["check"] == check and (not rank or f.get("rank") == int(rank))]
            if not hit:
                failures.append("no %s finding%s" % (check, " in rank " + rank + "'s log" if rank else ""))
        elif a == "--contains":
            check, _, text = v.partition("=")
            if not any(f["check"] == check and text in text_of(f) for f in finds):
                failures.append("no %s finding containing %r" % (check, text))
        elif a == "--earlier":
            ca, _, cb = v.partition("<")
            ta = sorted(f["time"] for f in finds if f["check"] == ca)
            tb = sorted(f["time"] for f in finds if f["check"] == cb)
            def secs(t):
                h, m, x = t[11:23].split(":")
                return int(h) * 3600 + int(m) * 60 + float(x)
            if not ta or not tb:
                failures.append("--earlier %s: a check has no finding" % v)
            elif secs(tb[0]) - secs(ta[0]) < 1.0:
                failures.append("--earlier %s: %s at %s is not 1 s before %s at %s" % (v, ca, ta[0], cb, tb[0]))
        elif a == "--metric":
            m = re.match(r"(\S+?)(<=|>=)(-?[\d.]+)$", v)
            if not m:
                print("usage error: --metric %s" % v)
                return 2
            name, op, lim = m.group(1), m.group(2), float(m.group(3))
            if name not in metrics:
                failures.append("the program printed no metric %s" % name)
            elif (metrics[name] > lim) if op == "<=" else (metrics[name] < lim):
                failures.append("metric %s = %g, expected %s %g" % (name, metrics[name], op, lim))
        elif a == "--delay":
            m = re.match(r"([^:]+):(\S+?)<=([\d.]+)$", v)
            if not m:
                print("usage error: --delay %s" % v)
                return 2
            check, name, lim = m.group(1), m.group(2), float(m.group(3))
            ts = sorted(f["time"] for f in finds if f["check"] == check)
            if name not in metrics or not ts:
                failures.append("--delay %s: no metric %s or no %s finding" % (v, name, check))
            else:
                t = datetime.datetime.strptime(ts[0][:23], "%Y-%m-%dT%H:%M:%S.%f").replace(
                    tzinfo=datetime.timezone.utc).timestamp()
                d = t - metrics[name]
                print("delay: first %s %.3f s after %s" % (check, d, name))
                if d > lim:
                    failures.append("first %s came %.2f s after %s, limit %g s" % (check, d, name, lim))
        elif a == "--text-forbid":
            text = v.encode().decode("unicode_escape")
            texts = [p.stdout]
            for path in glob.glob(os.path.join(args.dir, "**", "*.log"), recursive=True):
                with open(path, encoding="utf-8", errors="replace") as f:
                    texts.append(f.read())
            if any(text in t for t in texts):
                failures.append("forbidden text %r in a text log or the output" % v)
        elif a == "--every-rank":
            for r in sorted(ranks):
                if not any(f["check"] == v and (f.get("rank") == r or ".rank%d." % r in f["_file"])
                           for f in finds):
                    failures.append("rank %d's log has no %s finding" % (r, v))
        elif a == "--no-leftovers":
            left, waited = leftovers(tag, float(v))
            print("leftover processes: %d, %.2f s after the program ended" % (len(left), waited))
            if left:
                failures.append("processes of the run still alive %.1f s after it ended: %s"
                                % (waited, left))
                for pid, _ in left:
                    try:
                        os.kill(pid, 9)
                    except OSError:
                        pass
        elif a == "--exit-delay":
            m = re.match(r"(\d+)<=([\d.]+)$", v)
            call = re.search(r"^rank %s calls exit after ([\d.]+) s$" % (m.group(1) if m else "x"),
                             p.stdout, re.M)
            if not m or not call or int(m.group(1)) not in ranks:
                failures.append("--exit-delay %s: no exit call or end line for the rank" % v)
            else:
                d = ranks[int(m.group(1))][2] - float(call.group(1))
                print("exit delay: rank %s ended %.3f s after calling exit()" % (m.group(1), d))
                if d > float(m.group(2)):
                    failures.append("rank %s ended %.2f s after calling exit(), limit %s s"
                                    % (m.group(1), d, m.group(2)))
        elif a == "--stdout-contains":
            if v not in p.stdout:
                failures.append("the program's output lacks %r" % v)
        elif a == "--contains-two-comms":
            ok = False
            for f in finds:
                if f["check"] == v and len(set(re.findall(r"comm ([0-9a-f]{16})", text_of(f)))) >= 2:
                    ok = True
            if not ok:
                failures.append("no %s finding naming two communicators" % v)
        else:
            print("usage error: unknown assertion %s" % a)
            return 2
    for f in finds:
        print("  %-26s %-7s rank=%s  %s" % (f["check"], f["severity"], f.get("rank"),
                                            str(f.get("message", ""))[:600].replace("\n", "\n      ")))
    if failures:
        for x in failures:
            print("FAIL: " + x)
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
