#!/usr/bin/env python3
"""tool_e2e.py - end-to-end tests of the a2acheck command (ctest -L tool).

    tool_e2e.py --a2acheck BIN --fixtures DIR --source SRC --build BUILD
                --version V --work WORK GROUP [--examples DIR] [--xrank PROG]
                [--simlib DIR]

GROUP is one of:
  cli           --help/--version, `checks` and `options` against the tables
                in analyzers/ and README.md, usage errors
  report        every format on the fixture logs, validated with the standard
                library (json, xml.etree, html.parser); run-directory lookup;
                --fail-on; hostile lines
  run-findings  `a2acheck run` of simulator programs: a correct one (0, "no
                findings"), a silent mismatch (0 by default, 66 with
                --fail-on error, also when the ranks end with _exit()), the
                report files
  run-deadlock  deadlock programs end with 66 although their launcher exits
                0 or 1; the report and its HTML graph
  run-process   exit statuses, signal forwarding, leftover processes,
                LD_PRELOAD order, --sim through a wrapper, option flags
  install       cmake --install into a temporary prefix, then run from there
  screenshot    headless Chromium renders the HTML report of a deadlock
                (skipped, exit 77, without Chromium outside CI; fails in CI)

Python 3 standard library only. Exit 0 pass, 1 fail, 77 skipped.
"""
import argparse
import glob
import html.parser
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
import zlib

A = None
FAILS = []


def check(cond, what, detail=""):
    if cond:
        print("  ok: " + what)
    else:
        print("  FAIL: " + what + (("\n" + str(detail)[-4000:]) if detail else ""))
        FAILS.append(what)
    return cond


def run(args, cwd=None, env=None, timeout=120, input_=None):
    e = dict(os.environ)
    e.pop("A2ACHECK_LOG_DIR", None)
    e.pop("A2ACHECK_RUNS_DIR", None)
    e.setdefault("NCCL_SOCKET_IFNAME", "lo")
    # an ASan build of a2acheck started with LD_PRELOAD set (the tests that
    # keep an existing LD_PRELOAD) must not refuse to run
    e.setdefault("ASAN_OPTIONS", "verify_asan_link_order=0")
    if env:
        e.update(env)
    p = subprocess.run(args, cwd=cwd or A.work, env=e, timeout=timeout, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, errors="replace", input=input_)
    return p


def tool(*args, **kw):
    return run([A.a2acheck] + list(args), **kw)


def fixture(name):
    return os.path.join(A.fixtures, name)


# ---- validators ----------------------------------------------------------

def junit_ok(text, what):
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        check(False, what + ": junit is well-formed XML", e)
        return None
    cases = root.findall(".//testcase")
    fails = root.findall(".//testcase/failure")
    ok = (root.tag == "testsuites" and int(root.get("tests")) == len(cases)
          and int(root.get("failures")) == len(fails))
    for s in root.findall("testsuite"):
        ok = ok and int(s.get("tests")) == len(s.findall("testcase"))
        ok = ok and int(s.get("failures")) == len(s.findall("testcase/failure"))
    check(ok, what + ": junit counts match its testcases (%d tests, %d failures)"
          % (len(cases), len(fails)), text[:2000])
    return root


def sarif_ok(text, what):
    try:
        d = json.loads(text)
    except ValueError as e:
        check(False, what + ": sarif is JSON", e)
        return None
    run0 = d["runs"][0]
    rules = {r["id"] for r in run0["tool"]["driver"]["rules"]}
    ok = d.get("version") == "2.1.0" and d.get("$schema", "").endswith("sarif-2.1.0.json")
    for r in run0["results"]:
        ok = ok and r["ruleId"] in rules and r["level"] in ("error", "warning", "note")
        ok = ok and run0["tool"]["driver"]["rules"][r["ruleIndex"]]["id"] == r["ruleId"]
        for loc in r.get("locations", []) + r.get("relatedLocations", []):
            pl = loc.get("physicalLocation")
            if pl:
                ok = ok and pl["artifactLocation"]["uri"] and pl["region"]["startLine"] >= 1
    check(ok, what + ": sarif 2.1.0 with valid results and locations", text[:2000])
    return d


class Html(html.parser.HTMLParser):
    VOID = {"meta", "br", "img", "input", "link", "hr", "col", "wbr", "area", "base", "source",
            "path", "line", "rect", "circle", "polyline", "stop", "use"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.stack, self.errors, self.external = [], [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for k, v in attrs:
            if k in ("src", "href") and v and not v.startswith("#"):
                self.external.append((tag, k, v))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append(tag)

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append("unbalanced </%s> (open: %s)" % (tag, self.stack[-3:]))
            if tag in self.stack:
                while self.stack and self.stack.pop() != tag:
                    pass
        else:
            self.stack.pop()


def html_ok(text, what, want_svg_class=None):
    p = Html()
    p.feed(text)
    p.close()
    check(not p.errors and not p.stack, what + ": html parses with balanced tags", p.errors[:5])
    check("script" not in p.tags and not p.external, what + ": html is self-contained", p.external)
    if want_svg_class:
        check(('class="%s"' % want_svg_class) in text and "svg" in p.tags,
              what + ": html holds the %s svg" % want_svg_class)
    return p


# ---- groups --------------------------------------------------------------

def group_cli():
    p = tool("--version")
    check(p.returncode == 0 and p.stdout.strip() == "a2acheck " + A.version, "--version", p.stdout)
    for sub in ([], ["run"], ["report"], ["checks"], ["options"]):
        p = tool(*(sub + ["--help"]))
        check(p.returncode == 0 and "usage: a2acheck" in p.stdout, "%s --help" % (sub or ["a2acheck"])[0])
    check(tool("frobnicate").returncode == 2, "unknown command: exit 2")

    inc = open(os.path.join(A.source, "analyzers", "a2a_checks.inc")).read()
    rows = re.findall(r'A2A_CHECK\(\s*\w+,\s*"([^"]+)",\s*(INFO|WARNING|ERROR)', inc)
    p = tool("checks", "--format", "json")
    d = json.loads(p.stdout)
    got = [(c["name"], c["severity"].upper()) for c in d["checks"]]
    check(got == rows and len(rows) > 20, "checks --format json lists every row of a2a_checks.inc", got)
    check(all(c["summary"] and c["category"] == c["name"].split(".")[0] for c in d["checks"]),
          "every check has a summary and its category")
    p = tool("checks")
    check(all(n in p.stdout for n, _ in rows), "checks (text) names every check")
    p = tool("checks", "size")
    check(p.returncode == 0 and "size.p2p-mismatch" in p.stdout and "layout." not in p.stdout,
          "checks CATEGORY selects")
    p = tool("checks", "size.p2p-mismach")
    check(p.returncode == 2 and "did you mean size.p2p-mismatch" in p.stderr, "checks: a typo is suggested",
          p.stderr)

    opts = open(os.path.join(A.source, "analyzers", "a2a_options.inc")).read()
    envs = re.findall(r'A2A_OPT_\w+\(\s*\w+,\s*"(A2ACHECK_\w+)"', opts)
    d = json.loads(tool("options", "--format", "json").stdout)
    check([o["variable"] for o in d["options"]] == envs, "options --format json lists a2a_options.inc")
    readme = open(os.path.join(A.source, "README.md")).read()
    m = re.search(r"<!-- options:begin -->\n(.*?)<!-- options:end -->", readme, re.S)
    md = tool("options", "--format", "markdown").stdout
    check(m and m.group(1) == md, "options --format markdown is README's options table", md[:500])

    check(tool("run").returncode == 2, "run without a command: exit 2")
    p = tool("run", "--fail-on", "sometimes", "--", "true")
    check(p.returncode == 2 and "--fail-on" in p.stderr, "run --fail-on checks its value")
    p = tool("run", "--checks", "layout,size.p2p-mismach", "--", "true")
    check(p.returncode == 2 and "did you mean size.p2p-mismatch" in p.stderr, "run --checks checks names")
    p = tool("run", "--hang-timeout", "soon", "--", "true")
    check(p.returncode == 2 and "A2ACHECK_HANG_TIMEOUT" in p.stderr, "table-derived flags check values")
    p = tool("run", "--on-deadlock", "pause", "--", "true")
    check(p.returncode == 2, "enum flags check their values")
    p = tool("run", "--no-such-flag", "--", "true")
    check(p.returncode == 2 and "unknown flag" in p.stderr, "run: unknown flag")
    p = tool("report", "--format", "pdf", fixture("p2p"))
    check(p.returncode == 2, "report: unknown format")


def group_report():
    dirs = ["p2p", "skip", "order", "killed", "python", "graph", "hostile"]
    docs = {}
    for d in dirs:
        path = fixture(d)
        for fmt in ("text", "json", "markdown", "junit", "sarif", "html"):
            p = tool("report", "--format", fmt, path)
            if not check(p.returncode == 0 and p.stdout, "report --format %s %s" % (fmt, d), p.stderr):
                continue
            out = p.stdout
            if fmt == "json":
                docs[d] = json.loads(out)
                check(docs[d]["schema"] == "a2acheck-report/1", d + ": json document")
            elif fmt == "junit":
                junit_ok(out, d)
            elif fmt == "sarif":
                s = sarif_ok(out, d)
                if s and d in docs:
                    check(len(s["runs"][0]["results"]) == len(docs[d]["findings"]),
                          d + ": one sarif result per merged finding")
            elif fmt == "html":
                html_ok(out, d, "wfg" if d in ("skip", "order", "killed", "graph") else None)
            elif fmt == "markdown":
                check(out.startswith("## ") and ("| # | Severity |" in out or "no findings" in out),
                      d + ": markdown job summary")
            else:
                check("result: " in out, d + ": text result line")

    j = docs["p2p"]
    f = j["findings"]
    check(len(f) == 1 and f[0]["check"] == "size.p2p-mismatch" and f[0]["ranks"] == [1, 2]
          and [s["role"] for s in f[0]["sides"]] == ["sender", "receiver"]
          and [s["location"]["line"] for s in f[0]["sides"]] == [67, 68],
          "p2p: one finding, both sides with their call sites", f)
    check(j["summary"]["processes"] == 5 and j["summary"]["ranks"] == 4, "p2p: 5 processes, 4 ranks")
    p = tool("report", "--format", "junit", fixture("p2p"))
    root = ET.fromstring(p.stdout)
    check(root.get("tests") == "7" and root.get("failures") == "2", "p2p junit: 7 tests, 2 failures")
    failing = sorted(c.get("classname") for c in root.iter("testcase") if c.find("failure") is not None)
    check(failing == ["a2acheck.rank1", "a2acheck.rank2"], "p2p junit: a failing case on ranks 1 and 2",
          failing)
    s = json.loads(tool("report", "--format", "sarif", fixture("python")).stdout)
    res = [r for r in s["runs"][0]["results"] if r["ruleId"] == "size.dtype-mismatch"]
    loc = res[0]["locations"][0]["physicalLocation"] if res else {}
    rel = res[0].get("relatedLocations", []) if res else []
    check(loc.get("artifactLocation", {}).get("uri") == "moe.py" and loc["region"]["startLine"] == 88
          and rel and rel[0]["physicalLocation"]["region"]["startLine"] == 91
          and rel[0]["physicalLocation"]["artifactLocation"]["uri"] == "file:///work/proj/moe.py",
          "sarif: Python file:line locations, the other side related", res)
    sk = docs["skip"]
    dl = sk["findings"][0]
    check(dl["check"] == "group.deadlock" and dl["ranks"] == [0, 1, 2] and dl["graph"]["source"] == "story"
          and len(dl["graph"]["edges"]) == 3, "skip: the deadlock once, its graph from the story", dl.get("graph"))
    check(sum(1 for x in sk["findings"] if x["check"] == "group.deadlock") == 1, "skip: one deadlock finding")
    g = docs["graph"]["findings"][0]["graph"]
    check(g["source"] == "details.graph" and g["cycle"], "graph: details.graph is drawn as given")
    h = docs["hostile"]
    check(h["summary"]["ignored_lines"] == 19 and len(h["warnings"]) == 19, "hostile: 19 ignored lines counted")
    p = tool("report", fixture("hostile"))
    check(p.returncode == 0 and p.stderr.count("warning:") >= 19, "hostile: warnings on stderr, exit 0")

    # --fail-on, outputs, colours
    check(tool("report", "-q", "--fail-on", "error", fixture("p2p")).returncode == 66, "report --fail-on error: 66")
    check(tool("report", "-q", "--fail-on", "deadlock", fixture("p2p")).returncode == 0,
          "report --fail-on deadlock without a deadlock: 0")
    check(tool("report", "-q", "--fail-on", "deadlock", "--exitcode", "9", fixture("order")).returncode == 9,
          "report --fail-on deadlock --exitcode 9: 9")
    check(tool("report", "-q", "--fail-on", "warning", fixture("python")).returncode == 66,
          "report --fail-on warning on warnings: 66")
    out = os.path.join(A.work, "r")
    os.makedirs(out, exist_ok=True)
    p = tool("report", "-q", "--report", "junit:" + out + "/j.xml", "--sarif", out + "/s.sarif",
             "--html", out + "/h.html", "--json", out + "/j.json", "--markdown", out + "/m.md", fixture("skip"))
    check(p.returncode == 0 and not p.stdout, "report -q with --report files", p.stderr)
    junit_ok(open(out + "/j.xml").read(), "--report junit file")
    sarif_ok(open(out + "/s.sarif").read(), "--sarif file")
    html_ok(open(out + "/h.html").read(), "--html file", "wfg")
    json.load(open(out + "/j.json"))
    p = tool("report", "-o", out + "/t.txt", fixture("p2p"))
    check(p.returncode == 0 and "size.p2p-mismatch" in open(out + "/t.txt").read(), "report -o FILE")
    check("\x1b[" in tool("report", "--color", "always", fixture("p2p")).stdout, "--color always colours")
    check("\x1b[" not in tool("report", fixture("p2p"), env={"NO_COLOR": "1"}).stdout,
          "no colour when not a terminal")

    # run directories: the newest run of a runs directory; nothing found
    runs = os.path.join(A.work, "cwd", "a2acheck-runs")
    old, new = os.path.join(runs, "20260101-000000-1"), os.path.join(runs, "20260102-000000-2")
    shutil.copytree(fixture("p2p"), old)
    shutil.copytree(fixture("order"), new)
    os.utime(old, (1, 1))
    p = tool("report", "--format", "json", cwd=os.path.join(A.work, "cwd"))
    check(p.returncode == 0 and json.loads(p.stdout)["dirs"] == ["./a2acheck-runs/20260102-000000-2"]
          and "reporting the newest" in p.stderr, "report without DIR: the newest run", p.stderr)
    p = tool("report", "--format", "json", runs)
    check(p.returncode == 0 and json.loads(p.stdout)["summary"]["deadlock"], "report RUNS: the newest run")
    p = tool("report", "--format", "json", fixture("p2p"), fixture("order"))
    check(json.loads(p.stdout)["summary"]["processes"] == 8, "report DIR DIR merges both")
    one = sorted(glob.glob(fixture("p2p") + "/*rank1.jsonl")) + sorted(glob.glob(fixture("p2p") + "/*rank2.jsonl"))
    p = tool("report", "--format", "json", *one)
    d = json.loads(p.stdout)
    check(d["summary"]["processes"] == 2 and d["findings"][0]["ranks"] == [1, 2], "report FILE FILE")
    empty = os.path.join(A.work, "empty")
    os.makedirs(empty, exist_ok=True)
    p = tool("report", empty)
    check(p.returncode == 1 and "no a2acheck logs" in p.stderr, "report of a directory without logs: exit 1")
    # a line longer than the reader's limit is skipped and counted
    big = os.path.join(A.work, "big")
    os.makedirs(big, exist_ok=True)
    with open(os.path.join(big, "a2acheck.h.1.rank0.jsonl"), "w") as fh:
        fh.write('{"check":"x","severity":"info","message":"' + "a" * (5 << 20) + '"}\n')
        fh.write('{"check":"y","severity":"error","message":"after"}\n')
    d = json.loads(tool("report", "--format", "json", big).stdout)
    check(d["summary"]["ignored_lines"] == 1 and [f["check"] for f in d["findings"]] == ["y"],
          "a line over 4 MiB is skipped, the next one read")


def examples(name):
    return os.path.join(A.examples, name)


def group_run_findings():
    p = tool("run", "--", examples("a2a_moe"), "4")
    check(p.returncode == 0 and "result: no findings" in p.stderr and "all tokens arrived" in p.stdout,
          "a correct program: exit 0, no findings", p.stderr)
    m = re.search(r"run directory (\S+)", p.stderr)
    check(m and os.path.isdir(m.group(1)) and glob.glob(m.group(1) + "/a2acheck.*.jsonl"),
          "the run directory is printed and holds the logs")
    rundir1 = m.group(1) if m else None

    p = tool("run", "--", examples("a2a_bug"), "4")
    err = p.stderr
    check(p.returncode == 0, "a silent mismatch under the default policy: the program's status 0", err)
    check("size.p2p-mismatch  ranks 1,2" in err and "rank 1 (sender)      run_rank at a2a_bug.c:67" in err
          and "rank 2 (receiver)    run_rank at a2a_bug.c:68" in err,
          "the merged report names the check, both ranks and both call sites", err[-3000:])
    m = re.search(r"run directory (\S+)", err)
    check(m and m.group(1) != rundir1, "every run gets a fresh run directory")

    out = A.work
    p = tool("run", "--fail-on", "error", "--junit", out + "/j.xml", "--sarif", out + "/s.sarif",
             "--html", out + "/h.html", "--json", out + "/j.json", "--", examples("a2a_bug"), "4")
    check(p.returncode == 66 and "A2ACHECK_FAIL_ON=error matched" in p.stderr,
          "--fail-on error: exit 66", p.stderr[-2000:])
    root = junit_ok(open(out + "/j.xml").read(), "run --junit")
    if root is not None:
        check(int(root.get("failures")) >= 2, "run --junit: the mismatch fails on both ranks")
    s = sarif_ok(open(out + "/s.sarif").read(), "run --sarif")
    if s:
        locs = [r["locations"][0]["physicalLocation"] for r in s["runs"][0]["results"]]
        check(any(l["artifactLocation"]["uri"] == "a2a_bug.c" and l["region"]["startLine"] in (67, 68)
                  for l in locs), "run --sarif: a2a_bug.c:67/68", locs)
    html_ok(open(out + "/h.html").read(), "run --html")
    d = json.load(open(out + "/j.json"))
    check(d["exit_status"] == 66 and d["command_status"] == 1, "run --json: statuses recorded",
          (d.get("exit_status"), d.get("command_status")))

    # ranks ending with _exit(): no summary, the finding still fails the job
    p = tool("run", "--", A.xrank, "p2p_exit")
    check(p.returncode == 0 and "size.p2p-mismatch" in p.stderr, "_exit() ranks: the mismatch is reported",
          p.stderr[-2000:])
    p = tool("run", "-q", "--fail-on", "error", "--", A.xrank, "p2p_exit")
    check(p.returncode == 66 and "without a summary" in p.stderr,
          "_exit() ranks without a summary still fail the job under --fail-on error", p.stderr[-1500:])
    p = tool("run", "--checks", "-size", "--", examples("a2a_bug"), "4")
    check(p.returncode == 0 and "result: no findings" in p.stderr, "--checks -size silences the mismatch")


def group_run_deadlock():
    p = tool("run", "--html", A.work + "/skip.html", "--", A.xrank, "skip")
    err = p.stderr
    check(p.returncode == 66, "a deadlock: 66 although the launcher exits 0", err[-2000:])
    check("group.deadlock  ranks 0-2" in err and "missing: rank 3" in err and err.count("ERROR group.deadlock") == 1,
          "the deadlock story once, with the missing rank", err[-3000:])
    html_ok(open(A.work + "/skip.html").read(), "skip html", "wfg")
    # a torchrun-like launcher that turns the failure into 1
    p = tool("run", "-q", "--", "sh", "-c", '"$0" order; exit 1', A.xrank)
    check(p.returncode == 66 and "ended by a2acheck on a group.deadlock verdict" in p.stderr,
          "66 even when the launcher exits 1", p.stderr[-1500:])
    p = tool("run", "-q", "--exitcode", "70", "--", A.xrank, "order")
    check(p.returncode == 70, "--exitcode 70: 70")
    # no cycle, one rank sleeping outside CUDA: group.hang after --hang-timeout
    p = tool("run", "--hang-timeout", "3", "--", A.xrank, "hang")
    check(p.returncode == 66 and "ERROR group.hang  ranks 0-3" in p.stderr and "awaited: rank 3" in p.stderr
          and "on the group.hang verdict" in p.stderr, "a hang: group.hang once, the awaited rank named, 66",
          p.stderr[-2500:])


def procs_matching(marker):
    n = 0
    for d in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            if marker.encode() in open(d, "rb").read():
                n += 1
        except OSError:
            pass
    return n


def group_run_process():
    check(tool("run", "--", "sh", "-c", "exit 3").returncode == 3, "the command's status is passed on")
    p = tool("run", "--", "sh", "-c", "kill -USR1 $$")
    check(p.returncode == 128 + signal.SIGUSR1, "a command killed by a signal: 128+N", p.returncode)
    p = tool("run", "--", "/no/such/program")
    check(p.returncode == 127 and "cannot run" in p.stderr, "command not found: 127")
    p = tool("run", "--", A.fixtures)
    check(p.returncode == 126, "not executable: 126")
    p = tool("run", "--", "true")
    check(p.returncode == 0 and "no process wrote a log" in p.stderr, "a command without NCCL calls: said so")

    # signals reach the job's process group; leftovers are terminated
    env = dict(os.environ, NCCL_SOCKET_IFNAME="lo")
    pr = subprocess.Popen([A.a2acheck, "run", "-q", "--grace", "1", "--", "sh", "-c",
                           'trap "exit 42" TERM; sleep 37.25 & wait'], cwd=A.work, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    t0 = time.time()
    pr.send_signal(signal.SIGTERM)
    try:
        out, err = pr.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        pr.kill()
        out, err = pr.communicate()
    check(pr.returncode == 42 and time.time() - t0 < 10, "SIGTERM is forwarded; the job's status (42) returned",
          (pr.returncode, err))
    check(procs_matching("sleep\x0037.25") == 0, "the job's leftover process was terminated")
    t0 = time.time()
    p = tool("run", "-q", "--grace", "1", "--", "sh", "-c", "sleep 38.5 & exit 0")
    check(p.returncode == 0 and time.time() - t0 < 10 and procs_matching("sleep\x0038.5") == 0,
          "a background process left by the command is terminated after --grace", p.stderr)
    t0 = time.time()
    p = tool("run", "-q", "--grace", "20", "--", "sh", "-c", "(sleep 1.5; exit 0) & exit 0")
    dt = time.time() - t0
    check(p.returncode == 0 and 1.2 < dt < 15, "an orphaned child is waited for (subreaper), not killed early", dt)

    # environment: option flags, --env, LD_PRELOAD order
    p = tool("run", "-q", "--hang-timeout", "30", "-e", "FOO=bar", "--stack-depth", "8", "--", "sh", "-c",
             'test "$A2ACHECK_HANG_TIMEOUT" = 30 && test "$FOO" = bar && test "$A2ACHECK_STACK_DEPTH" = 8 '
             '&& case "$LD_PRELOAD" in */liba2acheck.so) exit 0;; *) exit 5;; esac')
    check(p.returncode == 0, "flags set their A2ACHECK_* variables; the library is preloaded", p.returncode)
    sup = os.path.join(A.work, "supp.txt")
    open(sup, "w").write("size.p2p-mismatch:run_rank\n")
    check(tool("run", "-e", "A2ACHECK_LOG_DIR=/tmp", "--", "true").returncode == 2,
          "-e A2ACHECK_LOG_DIR is refused (--log-dir)")
    p = tool("run", "-q", "--suppressions", "supp.txt", "--", "sh", "-c", 'test "$A2ACHECK_SUPPRESSIONS" = "%s"' % sup)
    check(p.returncode == 0, "--suppressions passes an absolute path")
    nccl = os.path.join(A.simlib, "libnccl.so.2")
    p = tool("run", "--", examples("a2a_bug"), "4", env={"LD_PRELOAD": nccl})
    check("size.p2p-mismatch  ranks 1,2" in p.stderr, "an existing LD_PRELOAD keeps working: the checker first",
          p.stderr[-1500:])
    # --sim: through a wrapper that puts the simulator's libraries first
    fake = os.path.join(A.work, "fake-sim-run")
    with open(fake, "w") as fh:
        # the adversarial order: the simulator's libraries IN FRONT of what
        # LD_PRELOAD held (a2asim-run itself appends them)
        fh.write('#!/bin/sh\n[ "$1" = -- ] && shift\n'
                 'LD_PRELOAD="%s/libcudart.so.13:%s/libnccl.so.2${LD_PRELOAD:+:$LD_PRELOAD}" '
                 'exec "$@"\n' % (A.simlib, A.simlib))
    os.chmod(fake, 0o755)
    p = tool("run", "--sim", "--", examples("a2a_bug"), "4", env={"A2ACHECK_SIM_RUN": fake})
    check("size.p2p-mismatch  ranks 1,2" in p.stderr and "4 ranks finished" in p.stdout, "--sim: the checker still comes first in LD_PRELOAD",
          p.stderr[-1500:])
    p = tool("run", "--", fake, examples("a2a_bug"), "4")
    check("size.p2p-mismatch" not in p.stderr and "4 ranks finished" in p.stdout,
          "(control: without --sim's reordering the wrapper's libraries win and nothing is checked)",
          p.stdout + p.stderr[-1500:])
    real = os.path.join(A.build, "sim", "bin", "a2asim-run")
    if os.access(real, os.X_OK):
        p = tool("run", "--sim", "--", examples("a2a_bug"), "4")
        check("size.p2p-mismatch  ranks 1,2" in p.stderr and "4 ranks finished" in p.stdout,
              "--sim with the simulator's own a2asim-run", p.stderr[-1500:])
    else:
        print("  note: %s is not in this build tree: --sim with the real wrapper not run" % real)
    p = tool("run", "--sim", "--", "true", env={"A2ACHECK_SIM_RUN": "/no/a2asim-run"})
    check(p.returncode == 2 and "simulator" in p.stderr, "--sim without the wrapper: a clear error", p.stderr)
    d = os.path.join(A.work, "fixed")
    check(tool("run", "-q", "--log-dir", d, "--", examples("a2a_moe"), "4").returncode == 0, "--log-dir DIR")
    p = tool("run", "-q", "--log-dir", d, "--", "true")
    check(p.returncode == 2 and "already holds" in p.stderr, "--log-dir refuses a directory with logs")
    mpirun = os.path.join(A.work, "mpirun")
    open(mpirun, "w").write("#!/bin/sh\nexec \"$@\"\n")
    os.chmod(mpirun, 0o755)
    p = tool("run", "--", mpirun, "true")
    check("-x LD_PRELOAD -x A2ACHECK_LOG_DIR" in p.stderr, "mpirun: the -x note")


def group_install():
    prefix = os.path.join(A.work, "prefix")
    p = run(["cmake", "--install", A.build, "--prefix", prefix], timeout=120)
    if not check(p.returncode == 0, "cmake --install into a temporary prefix", p.stdout + p.stderr):
        return
    libs = glob.glob(os.path.join(prefix, "lib*", "liba2acheck.so")) + \
        glob.glob(os.path.join(prefix, "lib", "*", "liba2acheck.so"))
    binary = os.path.join(prefix, "bin", "a2acheck")
    check(os.access(binary, os.X_OK), "bin/a2acheck installed")
    check(len(libs) == 1, "lib/liba2acheck.so installed", libs)
    check(os.path.isfile(os.path.join(prefix, "include", "a2acheck.h")), "include/a2acheck.h installed")
    docs = os.path.join(prefix, "share", "doc", "a2acheck")
    check(all(os.path.isfile(os.path.join(docs, n)) for n in ("README.md", "checks.md", "report.md", "ci.md")),
          "the docs in share/doc/a2acheck", os.listdir(docs) if os.path.isdir(docs) else None)
    p = run([binary, "--version"])
    check(p.stdout.strip() == "a2acheck " + A.version, "the installed a2acheck runs")
    p = run([binary, "run", "-v", "--fail-on", "error", "--", examples("a2a_bug"), "4"])
    err = p.stderr
    check(("LD_PRELOAD=%s" % os.path.realpath(libs[0])) in err if libs else False,
          "it preloads the installed library", err[:1500])
    check(p.returncode == 66 and "size.p2p-mismatch  ranks 1,2" in err and "a2a_bug.c:67" in err
          and "a2a_bug.c:68" in err, "run from the prefix: the merged report and exit 66", err[-2500:])


def png_pixels(path):
    """Decode an 8-bit RGB/RGBA PNG (what Chromium writes) to rows of bytes."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, typ = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if typ == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6)
            bpp = 3 if ctype == 2 else 4
        elif typ == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    i = 0
    for _ in range(h):
        f = raw[i]
        line = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def group_screenshot():
    browser = None
    for name in ("chromium", "chromium-browser", "google-chrome", "headless_shell", "chrome"):
        browser = shutil.which(name)
        if browser:
            break
    if not browser:
        msg = "tool.screenshot: no chromium (apt-get install chromium); the HTML rendering was NOT checked"
        if os.environ.get("CI") == "true":
            print("FAIL: " + msg + " (CI=true: the CI image must provide it, see .ci/run)")
            return 1
        print("SKIP: " + msg)
        return 77
    pages = {}
    p = tool("run", "-q", "--html", A.work + "/order.html", "--", A.xrank, "order")
    check(p.returncode == 66 and os.path.isfile(A.work + "/order.html"), "a deadlock run writes its HTML report")
    pages["order"] = A.work + "/order.html"
    for d in ("graph", "python"):
        tool("report", "--format", "html", "-o", "%s/%s.html" % (A.work, d), fixture(d))
        pages[d] = "%s/%s.html" % (A.work, d)
    for name, page in pages.items():
        png = "%s/%s.png" % (A.work, name)
        args = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--hide-scrollbars", "--window-size=1280,2000", "--screenshot=" + png, "file://" + page]
        try:
            r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=90, text=True,
                               errors="replace")
        except subprocess.TimeoutExpired:
            check(False, name + ": chromium finished within 90 s")
            continue
        if not check(os.path.isfile(png), name + ": chromium wrote a screenshot", r.stdout[-2000:]):
            continue
        w, h, bpp, rows = png_pixels(png)
        colours = {}
        for y in range(0, h, 3):
            row = rows[y]
            for x in range(0, w * bpp, bpp * 3):
                c = row[x:x + 3]
                colours[c] = colours.get(c, 0) + 1
        total = sum(colours.values())
        white = colours.get(b"\xff\xff\xff", 0) + colours.get(b"\xf6\xf7\xf9", 0)
        check(w == 1280 and total - white > total * 0.03, name + ": the page has rendered content",
              (w, h, len(colours)))
        if name in ("order", "graph"):
            blocked = sum(n for c, n in colours.items() if abs(c[0] - 0xfd) < 3 and abs(c[1] - 0xe2) < 3
                          and abs(c[2] - 0xe1) < 3)
            check(blocked > 50, name + ": the wait-for graph's blocked nodes are drawn", blocked)
        print("  screenshot: " + png)
    return 0


def main():
    global A
    ap = argparse.ArgumentParser()
    ap.add_argument("--a2acheck", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--examples")
    ap.add_argument("--xrank")
    ap.add_argument("--simlib")
    ap.add_argument("group")
    A = ap.parse_args()
    A.a2acheck = os.path.abspath(A.a2acheck)
    shutil.rmtree(A.work, ignore_errors=True)
    os.makedirs(A.work)
    groups = {"cli": group_cli, "report": group_report, "run-findings": group_run_findings,
              "run-deadlock": group_run_deadlock, "run-process": group_run_process,
              "install": group_install, "screenshot": group_screenshot}
    rc = groups[A.group]()
    if rc == 77:
        return 77
    if FAILS or rc:
        print("tool_e2e %s: %d check(s) failed: %s" % (A.group, len(FAILS), FAILS))
        return 1
    print("tool_e2e %s: all checks passed" % A.group)
    return 0


if __name__ == "__main__":
    sys.exit(main())
