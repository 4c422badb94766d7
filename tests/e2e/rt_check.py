#!/usr/bin/env python3
"""rt_check.py - end-to-end checks of the a2acheck runtime (ctest -R rt\\.).

usage: rt_check.py <case> --shim liba2acheck.so --work DIR [--prog P] [--arg A]

Each case runs a test program with liba2acheck.so preloaded (timeout 60 s),
then asserts on its exit status, its stderr and the log files it wrote
(JSON Lines parsed with the json module). Cases:
  group        one group.unbalanced error, stack top = the calling function,
               the program's own exit status, stderr echo line, summary
  repeat       dedup by call site: counts 5 and 1 patched into the JSONL
  failon       A2ACHECK_FAIL_ON=error -> exit status 66 (and EXITCODE=9 -> 9)
  badoption    A2ACHECK_FAIL_ON=bogus warns, keeps the default (status 3)
  unwritable   a log dir that cannot be created: one clear message, the
               finding on stderr, no crash, the program's status
  checks       A2ACHECK_CHECKS=-group suppresses the finding
  suppress     A2ACHECK_SUPPRESSIONS silences exactly the matching finding
  optranges    out-of-range numeric options rejected, the default in effect
  rank         file names: rank from RANK, or learned from the first
               communicator after the files were created (rename)
  help         A2ACHECK_HELP=1 prints the options table
  logdir       %h and %p in A2ACHECK_LOG_DIR, relative to the working dir
  fork         parent and children write their own complete logs
  threads      8 threads x 20 call sites at once: exact dedup/cap totals
  stall        the same finding from several threads while its first writer
               is stuck (the text log is a FIFO): every occurrence counted,
               the repeats never wait, a new finding counted but not written
  dlsym        a2acheck.not-intercepting (info) for NCCL called via dlsym
  static       a2acheck.not-intercepting (warning) for a static NCCL
  lasterror    the application's pending CUDA error survives a2acheck's own
               runtime queries (prog: rt_last_error)
  unresolved   a call whose real function is nowhere: ncclInternalError,
               one a2acheck.unresolved finding, no crash
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL: " + what)


def run(args, work, env_extra, shim):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("A2ACHECK_") or k in ("RANK", "OMPI_COMM_WORLD_RANK",
                                              "SLURM_PROCID", "PMI_RANK"):
            del env[k]
    env["LD_PRELOAD"] = shim
    env["NCCL_SOCKET_IFNAME"] = "lo"
    env.update(env_extra)
    p = subprocess.run(args, cwd=work, env=env, capture_output=True, text=True,
                       timeout=60)
    print("$ %s %s -> %d" % (" ".join("%s=%s" % kv for kv in env_extra.items()),
                             " ".join(args), p.returncode))
    if p.stdout:
        print("stdout:\n" + p.stdout)
    if p.stderr:
        print("stderr:\n" + p.stderr)
    return p


def logs(d):
    """{pid: (text, [records])} for every log pair in d."""
    out = {}
    for j in sorted(glob.glob(os.path.join(d, "a2acheck.*.jsonl"))):
        base = j[: -len(".jsonl")]
        pid = int(os.path.basename(base).split(".")[-2])
        with open(j) as f:
            lines = f.read().splitlines()
        recs = []
        for ln in lines:
            try:
                recs.append(json.loads(ln))
            except ValueError as e:
                check(False, "%s: invalid JSON line %r (%s)" % (j, ln, e))
        text = open(base + ".log").read() if os.path.exists(base + ".log") else None
        check(text is not None, "%s.log exists next to the .jsonl" % base)
        out[pid] = (text or "", recs)
    return out


def findings(recs, check_name):
    return [r for r in recs if r.get("check") == check_name]


def summary_of(recs):
    s = findings(recs, "a2acheck.summary")
    check(len(s) == 1, "exactly one summary record (got %d)" % len(s))
    return s[0] if s else {}


def one_process_logs(d, p):
    lg = logs(d)
    check(len(lg) == 1, "one log pair in %s (got %d)" % (d, len(lg)))
    if not lg:
        return "", []
    pid, (text, recs) = next(iter(lg.items()))
    return text, recs


def case_group(a):
    d = os.path.join(a.work, "logs")
    p = run([a.prog], a.work, {"A2ACHECK_LOG_DIR": d}, a.shim)
    check(p.returncode == 3, "the program's own exit status 3 (got %d)" % p.returncode)
    text, recs = one_process_logs(d, p)
    g = findings(recs, "group.unbalanced")
    check(len(g) == 1, "one group.unbalanced finding (got %d)" % len(g))
    if g:
        f = g[0]
        check(f["severity"] == "error", "severity error")
        for k in ("check", "severity", "rank", "host", "pid", "message", "details",
                  "stack", "count", "time"):
            check(k in f, "field %s present" % k)
        check(f["pid"] != os.getpid() and f["count"] == 1, "pid and count 1")
        check(isinstance(f["details"], dict), "details is an object")
        st = f.get("stack", [])
        check(bool(st) and st[0].startswith("unbalanced_caller+0x"),
              "stack top is the calling function (got %r)" % (st[:1],))
        check(any(s.startswith("main+0x") for s in st), "main is on the stack")
        check("liba2acheck" not in " ".join(st), "no frame of liba2acheck itself")
        check(bool(st) and " at rt_group_unbalanced.c:" in st[0],
              "the top frame has its source line (DWARF): %r" % (st[:1],))
        check("group.unbalanced" in text and "unbalanced_caller+0x" in text,
              "the text log has the finding and its stack")
    s = summary_of(recs)
    det = s.get("details", {})
    check(det.get("findings", {}).get("error") == 1, "summary counts one error")
    check(det.get("exit_status") == 3, "summary records the exit status 3")
    check(det.get("nccl_calls_seen") is True, "summary: NCCL calls were seen")
    check("A2ACHECK_FAIL_ON=deadlock  (default)" in text, "text header logs effective options")
    echo = [l for l in p.stderr.splitlines() if l.startswith("a2acheck: [rank ")]
    check(len(echo) == 1 and " error group.unbalanced: " in echo[0],
          "one stderr echo line 'a2acheck: [rank R] error group.unbalanced: ...'")
    check("a2acheck: summary for pid %d, rank unknown: 1 distinct finding (1 error, 0 warning, "
          "0 info), 1 occurrence" % f["pid"] in p.stderr if g else False,
          "summary on stderr, naming the process it is for")
    check("a2acheck 100: 1 error finding(s), 1 in all" in p.stdout,
          "include/a2acheck.h: version and finding count seen from the program")


def case_repeat(a):
    d = os.path.join(a.work, "logs")
    p = run([a.prog, "repeat"], a.work, {"A2ACHECK_LOG_DIR": d}, a.shim)
    check(p.returncode == 3, "exit status 3 (got %d)" % p.returncode)
    _, recs = one_process_logs(d, p)
    g = findings(recs, "group.unbalanced")
    counts = sorted((f["stack"][0].split("+")[0], f["count"]) for f in g if f.get("stack"))
    check(counts == [("other_site", 1), ("unbalanced_caller", 5)],
          "two entries, deduplicated by call site, final counts patched (got %r)" % counts)
    s = summary_of(recs)
    check(s.get("details", {}).get("occurrences") == 6, "summary: 6 occurrences")


def case_failon(a):
    d = os.path.join(a.work, "logs")
    p = run([a.prog], a.work, {"A2ACHECK_LOG_DIR": d, "A2ACHECK_FAIL_ON": "error"}, a.shim)
    check(p.returncode == 66, "A2ACHECK_FAIL_ON=error: exit status 66 (got %d)" % p.returncode)
    check("ncclGroupEnd -> " in p.stdout, "the program's stdout was flushed before _exit")
    check("application atexit handler ran" in p.stdout,
          "the application's own exit handlers still ran")
    _, recs = one_process_logs(d, p)
    s = summary_of(recs)
    check(s.get("details", {}).get("fail_matched") is True, "summary: fail_matched")
    shutil.rmtree(d, ignore_errors=True)
    p = run([a.prog], a.work, {"A2ACHECK_LOG_DIR": d, "A2ACHECK_FAIL_ON": "warning",
                               "A2ACHECK_EXITCODE": "9"}, a.shim)
    check(p.returncode == 9, "A2ACHECK_EXITCODE=9: exit status 9 (got %d)" % p.returncode)
    p = run([a.prog], a.work, {"A2ACHECK_LOG_DIR": d, "A2ACHECK_FAIL_ON": "never"}, a.shim)
    check(p.returncode == 3, "A2ACHECK_FAIL_ON=never: the program's status (got %d)" % p.returncode)


def case_badoption(a):
    p = run([a.prog], a.work, {"A2ACHECK_LOG_DIR": "x", "A2ACHECK_FAIL_ON": "bogus"}, a.shim)
    check(p.returncode == 3, "default policy kept: the program's status 3 (got %d)" % p.returncode)
    w = [l for l in p.stderr.splitlines() if "A2ACHECK_FAIL_ON" in l]
    check(len(w) == 1 and "bogus" in w[0] and "keeping the default \"deadlock\"" in w[0],
          "one warning naming A2ACHECK_FAIL_ON, the bad value and the default (got %r)" % w)
    text, recs = one_process_logs(os.path.join(a.work, "x"), p)
    check("A2ACHECK_FAIL_ON=deadlock  (default)" in text, "the log shows the default in effect")
    check("start-up warnings:" in text and "bogus" in text, "the log repeats the warning")
    p = run([a.prog], a.work, {"A2ACHECK_LOG_DIR": "x", "A2ACHECK_FAIL_ON": "error",
                               "A2ACHECK_EXITCODE": "12abc"}, a.shim)
    check(p.returncode == 66, "EXITCODE=12abc rejected, 66 kept (got %d)" % p.returncode)
    check("A2ACHECK_EXITCODE=\"12abc\"" in p.stderr, "warning names A2ACHECK_EXITCODE")


def case_suppress(a):
    """Two findings at two call sites; a suppression file silences exactly
    the one at unbalanced_caller (5 occurrences): it is neither logged nor
    echoed nor counted for A2ACHECK_FAIL_ON, and is counted in the summary;
    the other is still reported and still fails the run under
    --fail-on error. Silencing both: the program's own status. Bad lines
    are named with file:line and skipped; an unreadable file is said once."""
    sup = os.path.join(a.work, "supp.txt")
    with open(sup, "w") as f:
        f.write("# accepted: the legacy path\n\n"
                "group.unbalanced: ^unbalanced_caller$\n"
                "no-colon-here\n"
                "nosuch.check:x\n")
    d = os.path.join(a.work, "logs")
    p = run([a.prog, "repeat"], a.work, {"A2ACHECK_LOG_DIR": d, "A2ACHECK_FAIL_ON": "error",
                                         "A2ACHECK_SUPPRESSIONS": sup}, a.shim)
    check(p.returncode == 66, "the finding left still fails the run (got %d)" % p.returncode)
    bad = [l for l in p.stderr.splitlines() if "A2ACHECK_SUPPRESSIONS" in l and "line ignored" in l]
    check(len(bad) == 2 and "supp.txt:4:" in bad[0] and "supp.txt:5:" in bad[1],
          "one message per bad line, with file:line (got %r)" % bad)
    text, recs = one_process_logs(d, p)
    g = findings(recs, "group.unbalanced")
    tops = [f["stack"][0].split("+")[0] for f in g if f.get("stack")]
    check(tops == ["other_site"], "only other_site is logged (got %r)" % tops)
    check("unbalanced_caller" not in text.split("---- a2acheck summary")[0],
          "the silenced finding is not in the text log")
    echo = [l for l in p.stderr.splitlines() if l.startswith("a2acheck: [rank ")]
    check(len(echo) == 1 and "other_site" in echo[0], "only the other finding is echoed (%r)" % echo)
    det = summary_of(recs).get("details", {})
    row = [c for c in det.get("checks", []) if c.get("check") == "group.unbalanced"]
    check(det.get("suppressions") == 1, "summary: 1 finding silenced (%r)" % det.get("suppressions"))
    check(row and (row[0]["logged"], row[0]["suppressed"], row[0]["suppressed_by_file"]) == (1, 1, 1),
          "per check: logged 1, suppressed 1, by the file 1 (%r)" % row)
    check(det.get("findings", {}).get("error") == 1 and det.get("occurrences") == 1,
          "the headline counts only the finding left (%r)" % det.get("findings"))
    check("1 finding(s) silenced by A2ACHECK_SUPPRESSIONS=" + sup in p.stderr,
          "the stderr summary says what was silenced")
    check("a2acheck 100: 1 error finding(s), 1 in all" in p.stdout,
          "include/a2acheck.h counts only the finding left")

    # Both silenced (the category): no failure, the program's status.
    with open(sup, "w") as f:
        f.write("group:*\n")
    shutil.rmtree(d, ignore_errors=True)
    p = run([a.prog, "repeat"], a.work, {"A2ACHECK_LOG_DIR": d, "A2ACHECK_FAIL_ON": "error",
                                         "A2ACHECK_SUPPRESSIONS": sup}, a.shim)
    check(p.returncode == 3, "silenced findings do not fail the run (got %d)" % p.returncode)
    check("no findings (2 silenced by A2ACHECK_SUPPRESSIONS)" in p.stderr,
          "the one-line summary says 2 were silenced")
    _, recs = one_process_logs(d, p)
    check(not findings(recs, "group.unbalanced"), "nothing logged")
    check(summary_of(recs).get("details", {}).get("fail_matched") is False, "fail_matched false")

    # An unreadable file: one message, nothing silenced.
    shutil.rmtree(d, ignore_errors=True)
    p = run([a.prog], a.work, {"A2ACHECK_LOG_DIR": d, "A2ACHECK_SUPPRESSIONS": sup + ".missing"},
            a.shim)
    m = [l for l in p.stderr.splitlines() if "A2ACHECK_SUPPRESSIONS=" in l]
    check(len(m) == 1 and "cannot be opened" in m[0], "one message for a missing file (%r)" % m)
    check(p.returncode == 3 and " error group.unbalanced: " in p.stderr, "the finding is reported")
    text, _ = one_process_logs(d, p)
    check("A2ACHECK_SUPPRESSIONS=(unset)  (default)" in text,
          "the header does not show the unreadable file as in effect")


def case_optranges(a):
    """Out-of-range numeric options (issue 15): one message each naming the
    variable, the value and the default kept; the log header shows the
    default in effect, not the rejected value."""
    d = os.path.join(a.work, "logs")
    bad = {"A2ACHECK_HANG_CONFIRM": ("-1", "5"), "A2ACHECK_HANG_TIMEOUT": ("0", "300"),
           "A2ACHECK_XRANK_QUEUE": ("3000", "16384"), "A2ACHECK_LOW_BW_RATIO": ("2", "0.5"),
           "A2ACHECK_SMALL_MSG": ("-1", "1048576"), "A2ACHECK_PERF_MIN_OPS": ("0", "16")}
    env = {"A2ACHECK_LOG_DIR": d}
    env.update({k: v[0] for k, v in bad.items()})
    p = run([a.prog], a.work, env, a.shim)
    check(p.returncode == 3, "the program's status (got %d)" % p.returncode)
    text, _ = one_process_logs(d, p)
    for k, (v, kept) in bad.items():
        w = [l for l in p.stderr.splitlines() if l.find('%s="%s"' % (k, v)) >= 0]
        check(len(w) == 1 and "keeping the default %s" % kept in w[0],
              "one warning for %s=%s keeping %s (got %r)" % (k, v, kept, w))
        check("%s=%s  (default)" % (k, kept) in text, "the header shows %s=%s in effect" % (k, kept))


def case_unwritable(a):
    blocker = os.path.join(a.work, "not-a-dir")
    open(blocker, "w").close()
    d = os.path.join(blocker, "logs")
    p = run([a.prog], a.work, {"A2ACHECK_LOG_DIR": d}, a.shim)
    check(p.returncode == 3, "no crash, the program's status 3 (got %d)" % p.returncode)
    msg = [l for l in p.stderr.splitlines() if "cannot create the log directory" in l]
    check(len(msg) == 1 and blocker in msg[0], "one clear message naming the directory")
    check(any("group.unbalanced" in l and l.startswith("a2acheck: [rank ")
              for l in p.stderr.splitlines()), "the finding still reaches stderr")
    # Echo to stderr even with A2ACHECK_LOG_STDERR=none: there is no log.
    p = run([a.prog], a.work, {"A2ACHECK_LOG_DIR": d, "A2ACHECK_LOG_STDERR": "none"}, a.shim)
    check(any("group.unbalanced" in l for l in p.stderr.splitlines()),
          "findings go to stderr when the logs are unavailable, whatever LOG_STDERR says")


def case_checks(a):
    d = os.path.join(a.work, "logs")
    p = run([a.prog], a.work, {"A2ACHECK_LOG_DIR": d, "A2ACHECK_CHECKS": "-group",
                               "A2ACHECK_FAIL_ON": "error"}, a.shim)
    check(p.returncode == 3, "disabled check cannot fail the run (got %d)" % p.returncode)
    _, recs = one_process_logs(d, p)
    check(not findings(recs, "group.unbalanced"), "A2ACHECK_CHECKS=-group: no finding")
    # A misspelled check name is reported at start-up (with the closest
    # name) and changes nothing: the finding is still there.
    shutil.rmtree(d, ignore_errors=True)
    p = run([a.prog], a.work, {"A2ACHECK_LOG_DIR": d, "A2ACHECK_CHECKS": "-group.unbalnced"},
            a.shim)
    w = [l for l in p.stderr.splitlines() if "A2ACHECK_CHECKS" in l]
    check(len(w) == 1 and "group.unbalnced" in w[0] and "did you mean \"group.unbalanced\"" in w[0],
          "a misspelled check name gets one start-up warning with a suggestion (got %r)" % w)
    _, recs = one_process_logs(d, p)
    check(findings(recs, "group.unbalanced"), "the misspelled entry disabled nothing")
    # A2ACHECK_FAIL_ON can name a check: the error fails the run alone.
    p = run([a.prog], a.work, {"A2ACHECK_LOG_DIR": d, "A2ACHECK_FAIL_ON": "group.unbalanced"},
            a.shim)
    check(p.returncode == 66, "A2ACHECK_FAIL_ON=group.unbalanced -> 66 (got %d)" % p.returncode)
    p = run([a.prog], a.work, {"A2ACHECK_LOG_DIR": d, "A2ACHECK_FAIL_ON": "error,-group.unbalanced"},
            a.shim)
    check(p.returncode == 3, "A2ACHECK_FAIL_ON=error,-group.unbalanced keeps 3 (got %d)" % p.returncode)


def case_rank(a):
    d = os.path.join(a.work, "comm")
    p = run([a.prog, "comm"], a.work, {"A2ACHECK_LOG_DIR": d}, a.shim)
    check(p.returncode == 3 and "comm init 0 0" in p.stdout, "1-rank communicator created")
    names = sorted(os.listdir(d)) if os.path.isdir(d) else []
    check(len(names) == 2 and all(".rank0." in n for n in names),
          "files renamed to rank0 once the first communicator named the rank (%r)" % names)
    text, recs = one_process_logs(d, p)
    check("files renamed from rankunknown" in text, "the text log notes the rename")
    check(summary_of(recs).get("rank") == 0, "summary record has rank 0")
    d = os.path.join(a.work, "env")
    p = run([a.prog], a.work, {"A2ACHECK_LOG_DIR": d, "RANK": "5"}, a.shim)
    names = sorted(os.listdir(d)) if os.path.isdir(d) else []
    check(len(names) == 2 and all(".rank5." in n for n in names), "RANK=5 names the files")
    _, recs = one_process_logs(d, p)
    g = findings(recs, "group.unbalanced")
    check(len(g) == 1 and g[0]["rank"] == 5, "the finding carries rank 5")
    check("a2acheck: [rank 5] error group.unbalanced: " in p.stderr, "stderr echo has rank 5")
    d = os.path.join(a.work, "bad")
    p = run([a.prog], a.work, {"A2ACHECK_LOG_DIR": d, "RANK": "5x",
                               "OMPI_COMM_WORLD_RANK": "7"}, a.shim)
    check("RANK=\"5x\" is not a rank" in p.stderr, "a malformed RANK is reported")
    names = sorted(os.listdir(d)) if os.path.isdir(d) else []
    check(len(names) == 2 and all(".rank7." in n for n in names),
          "the next launcher variable is used (%r)" % names)


def case_logdir(a):
    p = run([a.prog], a.work, {"A2ACHECK_LOG_DIR": "sub/%h/run-%p"}, a.shim)
    check(p.returncode == 3, "status 3 (got %d)" % p.returncode)
    hosts = os.listdir(os.path.join(a.work, "sub")) if os.path.isdir(
        os.path.join(a.work, "sub")) else []
    check(len(hosts) == 1, "%%h expanded to one host directory (%r)" % hosts)
    if hosts:
        runs = os.listdir(os.path.join(a.work, "sub", hosts[0]))
        check(len(runs) == 1 and runs[0].startswith("run-"), "%%p expanded (%r)" % runs)
        if runs:
            pid = runs[0][4:]
            names = os.listdir(os.path.join(a.work, "sub", hosts[0], runs[0]))
            check(sorted(names) == ["a2acheck.%s.%s.rankunknown.%s" % (hosts[0], pid, x)
                                    for x in ("jsonl", "log")],
                  "files named with the same host and pid (%r)" % names)


def case_help(a):
    p = run([a.prog], a.work, {"A2ACHECK_LOG_DIR": os.path.join(a.work, "logs"),
                               "A2ACHECK_HELP": "1"}, a.shim)
    for var in ("A2ACHECK_DISABLE", "A2ACHECK_LOG_DIR", "A2ACHECK_CHECKS", "A2ACHECK_FAIL_ON",
                "A2ACHECK_EXITCODE", "A2ACHECK_STACK_DEPTH", "A2ACHECK_LOG_STDERR"):
        check(var in p.stderr, "help lists " + var)


def case_fork(a):
    d = os.path.join(a.work, "logs")
    p = run([a.prog], a.work, {"A2ACHECK_LOG_DIR": d, "A2ACHECK_LOG_STDERR": "none"}, a.shim)
    check(p.returncode == 0, "parent and children finished (status %d)" % p.returncode)
    check(p.stdout.count("done") == 4, "parent and 3 children printed 'done'")
    lg = logs(d)
    check(len(lg) == 4, "4 log pairs: parent + 3 children (got %d)" % len(lg))
    parents = [pid for pid, (_, recs) in lg.items()
               if any(s.startswith("reporter+") for f in findings(recs, "group.unbalanced")
                      for s in f["stack"][:1])]
    check(len(parents) == 1, "exactly one log has the reporter thread's finding")
    for pid, (text, recs) in lg.items():
        summary_of(recs)
        check(all(r.get("pid") == pid for r in recs if "pid" in r), "records carry pid %d" % pid)
        check("pid %d" % pid in text, "text header names pid %d" % pid)
        if pid not in parents:
            g = findings(recs, "group.unbalanced")
            check(len(g) == 1 and g[0]["stack"][0].startswith("child_site+"),
                  "child %d logged its own finding, and nothing of the parent's" % pid)


def case_threads(a):
    d = os.path.join(a.work, "logs")
    p = run([a.prog], a.work, {"A2ACHECK_LOG_DIR": d, "A2ACHECK_MAX_PER_CHECK": "5",
                               "A2ACHECK_LOG_STDERR": "none"}, a.shim)
    check(p.returncode == 0, "status 0 (got %d)" % p.returncode)
    _, recs = one_process_logs(d, p)
    g = findings(recs, "group.unbalanced")
    check(len(g) == 5, "A2ACHECK_MAX_PER_CHECK=5: 5 findings logged (got %d)" % len(g))
    check(all(f["count"] == 8 * 50 for f in g),
          "each logged site folded all 400 occurrences (%r)" % [f["count"] for f in g])
    check(len(set(f["stack"][0].split("+")[0] for f in g)) == 5, "5 distinct sites")
    check(sorted(f["id"] for f in g) == [1, 2, 3, 4, 5], "finding numbers 1..5")
    det = summary_of(recs).get("details", {})
    c = [x for x in det.get("checks", []) if x["check"] == "group.unbalanced"]
    check(len(c) == 1 and (c[0]["logged"], c[0]["suppressed"], c[0]["occurrences"]) ==
          (5, 15, 8 * 20 * 50), "summary: logged 5, suppressed 15, 8000 occurrences (%r)" % c)
    check(det.get("findings", {}).get("error") == 20, "summary: 20 distinct errors")
    check(det.get("dropped") == 0, "nothing dropped")


def case_stall(a):
    d = os.path.join(a.work, "logs")
    lib = os.path.join(a.work, "librt_stall_sites.so")   # a copy: it becomes a FIFO
    if os.path.lexists(lib):
        os.unlink(lib)
    shutil.copy(a.arg, lib)
    p = run([a.prog, "stall", lib], a.work, {"A2ACHECK_LOG_DIR": d, "RANK": "0",
                                             "A2ACHECK_LOG_STDERR": "none"}, a.shim)
    check(p.returncode == 0, "status 0: the repeats did not wait for the stuck writer (got %d)"
          % p.returncode)
    js = glob.glob(os.path.join(d, "a2acheck.*.rank0.jsonl"))
    check(len(js) == 1, "one JSONL file (got %r)" % js)
    recs = [json.loads(l) for l in open(js[0]).read().splitlines()] if js else []
    g = findings(recs, "group.unbalanced")
    check(len(g) == 1 and g[0]["stack"][0].startswith("stall_site_0+"),
          "site_0's finding written once, site_1's not (its writer gave up): %r"
          % [f["stack"][:1] for f in g])
    check(bool(g) and g[0]["count"] == 1 + 4 * 3,
          "site_0: every occurrence counted, 13 (got %r)" % [f["count"] for f in g])
    det = summary_of(recs).get("details", {})
    c = [x for x in det.get("checks", []) if x["check"] == "group.unbalanced"]
    check(len(c) == 1 and (c[0]["logged"], c[0]["unwritten"], c[0]["occurrences"]) == (1, 1, 14),
          "summary: 1 logged, 1 counted but not written, 14 occurrences (%r)" % c)
    check(det.get("findings", {}).get("error") == 2, "summary: 2 distinct errors")
    check(det.get("dropped") == 0 and det.get("unwritten") == 1,
          "nothing dropped, one finding not written (%r, %r)"
          % (det.get("dropped"), det.get("unwritten")))


def case_notint(a, kind):
    d = os.path.join(a.work, "logs")
    args = [a.prog, kind] + ([a.arg] if a.arg else [])
    p = run(args, a.work, {"A2ACHECK_LOG_DIR": d}, a.shim)
    check(p.returncode == 0, "program status 0 (got %d)" % p.returncode)
    _, recs = one_process_logs(d, p)
    f = findings(recs, "a2acheck.not-intercepting")
    check(len(f) == 1, "one a2acheck.not-intercepting finding (got %d)" % len(f))
    if f:
        want = ("info", "no-call-intercepted") if kind == "dlsym" else ("warning", "static-nccl")
        got = (f[0]["severity"], f[0]["details"].get("reason"))
        check(got == want, "severity and reason %r (got %r)" % (want, got))
        if kind == "static":
            check("librt_static_nccl" in f[0]["details"].get("object", ""),
                  "names the object that defines ncclSend")


def case_lasterror(a):
    env = dict(os.environ, NCCL_SOCKET_IFNAME="lo")
    env.pop("LD_PRELOAD", None)
    plain = subprocess.run([a.prog], cwd=a.work, env=env, capture_output=True, text=True,
                           timeout=60)
    print("plain:\n" + plain.stdout + plain.stderr)
    d = os.path.join(a.work, "logs")
    p = run([a.prog], a.work, {"A2ACHECK_LOG_DIR": d}, a.shim)
    check(plain.returncode == 0 and p.returncode == 0, "both runs succeed")
    check(plain.stdout == p.stdout, "identical output with and without a2acheck")
    check("cudaMalloc(huge) -> 2" in plain.stdout and
          "cudaPeekAtLastError -> 2\ncudaGetLastError -> 2\ncudaGetLastError -> 0" in p.stdout,
          "the pending cudaErrorMemoryAllocation is seen, then cleared, by the application")
    _, recs = one_process_logs(d, p)
    hm = findings(recs, "layout.host-memory")
    frames = [" ".join(f.get("stack", [])) for f in hm]
    check(any("site_a+" in fr for fr in frames),
          "site A (no error pending): the pointer query ran, layout.host-memory reported")
    check(not any("site_b+" in fr for fr in frames),
          "site B (error pending): no runtime query, so no finding there")


def case_unresolved(a):
    d = os.path.join(a.work, "logs")
    p = run([a.prog, "unresolved", "-"], a.work, {"A2ACHECK_LOG_DIR": d}, a.shim)
    check(p.returncode == 0, "no crash (status %d)" % p.returncode)
    check("ncclGetVersion -> 3, version -1" in p.stdout,
          "the call returned ncclInternalError and left the output alone")
    _, recs = one_process_logs(d, p)
    f = findings(recs, "a2acheck.unresolved")
    check(len(f) == 1 and f[0]["details"].get("symbol") == "ncclGetVersion",
          "one a2acheck.unresolved finding naming ncclGetVersion")
    check(bool(f) and f[0]["stack"] and f[0]["stack"][0].startswith("main+"),
          "its stack starts at the caller")
    check(not findings(recs, "a2acheck.not-intercepting"), "no not-intercepting finding")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--shim", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--arg")
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    cases = {"group": case_group, "repeat": case_repeat, "failon": case_failon,
             "badoption": case_badoption, "unwritable": case_unwritable,
             "checks": case_checks, "suppress": case_suppress, "optranges": case_optranges,
             "help": case_help, "logdir": case_logdir, "rank": case_rank,
             "threads": case_threads, "stall": case_stall, "unresolved": case_unresolved,
             "lasterror": case_lasterror, "fork": case_fork,
             "dlsym": lambda a: case_notint(a, "dlsym"),
             "static": lambda a: case_notint(a, "static")}
    cases[a.case](a)
    if FAILURES:
        print("%d check(s) failed" % len(FAILURES))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
