#!/usr/bin/env python3
"""torchtest.py - runs one torch program under torchrun on the CPU simulator
for ctest (label torch) and judges it: torchrun's exit status, the result
lines every worker prints about its own data (torch_worker.py), and - under
a2acheck - the findings and exit summaries in the per-rank JSONL logs,
against the expectations of one case (torch_cases.py). Python 3, standard
library only (the workers run in the torch venv; this script does not).

    torchtest.py --case CASE --nproc N --run A2ASIM_RUN --logs DIR
                 [--shim LIB | --tool A2ACHECK] [--env NAME=VALUE]... [--limit S]
                 -- PROGRAM [ARG...]

  --shim LIB   LD_PRELOAD=LIB in front of the simulator, logs in DIR
  --tool BIN   BIN run --sim --log-dir DIR -- python -m torch.distributed.run
               (the a2acheck command; its own exit status is judged too)
  --env        exported for the job (A2ACHECK_HANG_TIMEOUT=6, ...)
  --limit      seconds after which a job nothing ended is killed (default 240)

The Python is $A2A_TORCH_PYTHON, else ~/.cache/a2acheck/venv-torch/bin/python
(.ci/torch-venv.sh makes it). Without torch the test is skipped (exit 77)
with a message saying so - except in CI (CI=true), where it fails.

Exit status: 0 every expectation held; 1 one failed (each is listed, then
the findings); 2 usage error; 77 skipped.
"""
import argparse
import ctypes
import glob
import json
import os
import re
import signal
import shutil
import subprocess
import sys
import time

import torch_cases

RESULT_RE = re.compile(r"^torchcheck: rank (\d+)/(\d+) pattern (\S+): (\S+)(?: \((.*)\))?$")
DONE_RE = re.compile(r"^torchcheck: rank (\d+)/(\d+) done: (\d+) patterns, (\d+) failed$")
UNIMPL_RE = re.compile(r"a2asim: kernel .* has no host implementation")
# torchrun's failure report: "exitcode  : -15 (pid: 3384)" per failed worker
EXITCODE_RE = re.compile(r"exitcode\s*:\s*(-?\d+) \(pid: (\d+)\)")
LOG_RE = re.compile(r"a2acheck\.[^/]*\.(\d+)\.rank(\d+)\.jsonl$")


class Job:
    """What one launch produced, and the expectation helpers of torch_cases."""

    def __init__(self, args, status, out, wall):
        self.nproc = args.nproc
        self.shim = bool(args.shim or args.tool)
        self.tool = bool(args.tool)
        self.status = status          # torchrun's status (or a2acheck run's with --tool)
        self.out = out
        self.wall = wall
        self.fails = []
        self.results = {}             # rank -> {pattern: (result, detail)}
        self.done = {}                # rank -> (patterns, failed)
        for line in out.splitlines():
            m = RESULT_RE.match(line)
            if m:
                self.results.setdefault(int(m[1]), {})[m[3]] = (m[4], m[5] or "")
                continue
            m = DONE_RE.match(line)
            if m:
                self.done[int(m[1])] = (int(m[3]), int(m[4]))
        self.torchrun_exit = {int(pid): int(code) for code, pid in EXITCODE_RE.findall(out)}
        self.findings, self.summaries, self.files, self.pid_of = [], {}, [], {}
        if self.shim:
            self._load(args.logs)

    def _load(self, logs):
        self.files = sorted(glob.glob(os.path.join(logs, "**", "*.jsonl"), recursive=True))
        for path in self.files:
            m = LOG_RE.search(path)
            if m:
                self.pid_of[int(m[2])] = int(m[1])
            with open(path, encoding="utf-8", errors="replace") as fh:
                for lineno, line in enumerate(fh, 1):
                    if not line.strip():
                        continue
                    try:
                        rec = json.loads(line)
                    except ValueError as e:
                        self.expect(False, f"{path}:{lineno} is valid JSON", e)
                        continue
                    rec["_where"] = f"{os.path.basename(path)}:{lineno}"
                    if rec.get("check") == "a2acheck.summary":
                        self.summaries[rec.get("rank")] = rec.get("details") or {}
                    elif rec.get("check") != "perf.summary":
                        self.findings.append(rec)

    # ---- primitives -------------------------------------------------------
    def expect(self, cond, what, detail=""):
        print(("  ok: " if cond else "  FAIL: ") + what +
              ("" if cond or not detail else "\n      " + str(detail)[:3000]))
        if not cond:
            self.fails.append(what)
        return cond

    def find(self, check, rank=None, severity=None, text=(), **details):
        """Findings of check (on rank, of severity) whose details hold every
        given key with that value and whose message contains every text."""
        hits = []
        for f in self.findings:
            if f.get("check") != check or (rank is not None and f.get("rank") != rank):
                continue
            if severity and f.get("severity") != severity:
                continue
            if not matches(f.get("details") or {}, details):
                continue
            if any(t not in f.get("message", "") for t in ([text] if isinstance(text, str) else text)):
                continue
            hits.append(f)
        return hits

    # ---- expectations -----------------------------------------------------
    def torchrun_ok(self):
        self.expect(self.status == 0, f"torchrun exited 0 (got {self.status})")

    def torchrun_failed(self):
        self.expect(self.status not in (0, None), f"torchrun failed (exit {self.status})")

    def results_are(self, patterns, result="ok", ranks=None):
        """Every rank in ranks (default all) reported each pattern with result."""
        for r in (range(self.nproc) if ranks is None else ranks):
            got = self.results.get(r, {})
            for p in patterns:
                res = got.get(p)
                self.expect(res is not None and res[0] == result,
                            f"rank {r} pattern {p}: {result}",
                            "not reported" if res is None else f"{res[0]} ({res[1]})")

    def all_patterns_ok(self, patterns):
        """A correct program: each rank reported exactly these patterns, all
        ok, and its summary line says none failed."""
        self.results_are(patterns)
        for r in range(self.nproc):
            extra = set(self.results.get(r, {})) - set(patterns)
            self.expect(not extra, f"rank {r} reported no pattern beyond the expected ones", extra)
            self.expect(self.done.get(r) == (len(patterns), 0),
                        f"rank {r} finished: {len(patterns)} patterns, 0 failed", self.done.get(r))

    def clean(self):
        """No finding of severity error or warning (info is fine)."""
        if not self.shim:
            return
        bad = [f for f in self.findings if f.get("severity") in ("error", "warning")]
        self.expect(not bad, "no error or warning finding",
                    "\n      ".join(describe(f) for f in bad))

    def only(self, checks):
        """Every error or warning finding is one of checks."""
        if not self.shim:
            return
        bad = [f for f in self.findings
               if f.get("severity") in ("error", "warning") and f.get("check") not in checks]
        self.expect(not bad, f"no error or warning finding besides {', '.join(sorted(checks))}",
                    "\n      ".join(describe(f) for f in bad))

    def finding(self, check, ranks, severity="error", text=(), **details):
        """Each rank in ranks logged a finding of check with these details;
        returns the first one (or None)."""
        first = None
        for r in ranks:
            hits = self.find(check, rank=r, severity=severity, text=text, **details)
            want = ", ".join([f"{k}={v}" for k, v in details.items()] +
                             [repr(t) for t in ([text] if isinstance(text, str) else text)])
            self.expect(hits, f"rank {r}: {severity} {check}" + (f" with {want}" if want else ""),
                        "its findings: " + "; ".join(describe(f) for f in self.findings
                                                     if f.get("rank") == r) or "none")
            first = first or (hits[0] if hits else None)
        return first

    def no_finding(self, check, ranks=None):
        hits = [f for f in self.findings if f.get("check") == check and
                (ranks is None or f.get("rank") in ranks)]
        self.expect(not hits, f"no {check} finding" + (f" on ranks {sorted(ranks)}" if ranks else ""),
                    "; ".join(describe(f) for f in hits))

    def worker_exit(self, ranks, status, failed_now):
        """Each rank's a2acheck summary: its exit status and whether a2acheck
        ended it (torchrun reports a worker's 66 as its own 1).

        When a2acheck ends the ranks of a deadlock, torchrun sends SIGTERM to
        the workers still running as soon as the first one exits 66; a rank
        that was still on its way out then writes no summary. That rank is
        accepted when it logged the verdict and torchrun's report shows it
        ended by SIGTERM (-15)."""
        for r in ranks:
            s = self.summaries.get(r)
            what = f"rank {r} exited {status}" + (" ended by a2acheck" if failed_now else "")
            if s is None and failed_now:
                code = self.torchrun_exit.get(self.pid_of.get(r))
                verdict = [f for f in self.findings if f.get("rank") == r and
                           f.get("check") in ("group.deadlock", "group.hang")]
                self.expect(code == -15 and verdict, what + " (or, with its verdict logged, was "
                            "killed by torchrun after another worker's 66)",
                            f"no summary record; torchrun: exit {code}; verdicts logged: {len(verdict)}")
                continue
            self.expect(s is not None and s.get("exit_status") == status and
                        bool(s.get("failed_now")) == failed_now, what,
                        "no summary record" if s is None else
                        f"exit_status {s.get('exit_status')}, failed_now {s.get('failed_now')}")


def matches(got, want):
    """want's keys hold equal values in got; a dict value matches as a subset."""
    if isinstance(want, dict):
        return isinstance(got, dict) and all(k in got and matches(got[k], v) for k, v in want.items())
    return got == want


def describe(f):
    return (f"rank {f.get('rank')} {f.get('severity')} {f.get('check')}: "
            f"{str(f.get('message', ''))[:400]} [{f.get('_where')}]")


def torch_python():
    py = os.environ.get("A2A_TORCH_PYTHON") or os.path.expanduser("~/.cache/a2acheck/venv-torch/bin/python")
    probe = 'import importlib.util as u, sys; sys.exit(u.find_spec("torch") is None)'
    ok = os.access(py, os.X_OK) and subprocess.run([py, "-c", probe], stdout=subprocess.DEVNULL,
                                                   stderr=subprocess.DEVNULL).returncode == 0
    return py if ok else None


def become_subreaper():
    """Workers that torchrun leaves behind (a killed launcher) are reparented
    to this process, so they can be found and ended (prctl
    PR_SET_CHILD_SUBREAPER; Linux)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def children():
    """Pids of this process's direct children (from /proc)."""
    me, pids = os.getpid(), []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:
            pids.append(int(d))
    return pids


def end_leftovers(grace_s=3.0):
    """Reaps what ended of the job, waits up to grace_s for the rest to end
    (a2acheck's lingering coordinator, adopted by this subreaper, ends with
    its last client), then kills and reaps what is still left (leftover
    workers only exist when the launcher itself was killed or left them).
    Returns (pids killed, pids that ended within the grace, seconds)."""
    t0, late = time.monotonic(), []
    while True:
        left = []
        for pid in children():
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                continue
            if done:
                late.append(pid)
            else:
                left.append(pid)
        if not left or time.monotonic() - t0 >= grace_s:
            break
        time.sleep(0.05)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for pid in left:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
    return left, late, time.monotonic() - t0


def launch(args, py):
    torchrun = [py, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
                str(args.nproc), "--max-restarts", "0"] + args.program
    env = dict(os.environ)
    for name in ("LD_PRELOAD", "A2ACHECK_LOG_DIR", "A2ACHECK_RUNS_DIR"):
        env.pop(name, None)
    env.update(kv.split("=", 1) for kv in args.env)
    env["A2ASIM_DEVICES"] = str(args.nproc)
    if args.tool:
        cmd = [args.tool, "run", "--sim", "--log-dir", args.logs] + args.tool_arg + ["--"] + torchrun
        env["A2ACHECK_SIM_RUN"] = args.run
    else:
        cmd = [args.run] + torchrun
        if args.shim:
            os.makedirs(args.logs)
            env.update(LD_PRELOAD=args.shim, A2ACHECK_LOG_DIR=args.logs, A2ACHECK_LOG_STDERR="warning")
    print("torchtest: " + " ".join(cmd), flush=True)
    start = time.monotonic()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, errors="replace")
    try:
        out, _ = p.communicate(timeout=args.limit)
        status = p.returncode
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGTERM)  # torchrun and a2acheck end their workers
        try:
            out, _ = p.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
        out += f"\ntorchtest: the job ran past {args.limit} s and was killed\n"
        status = None
    left, late, waited = end_leftovers()
    if late:
        out += f"\ntorchtest: {len(late)} process(es) of the job ended after the launcher, " \
               f"within {waited:.2f} s: {late}\n"
    if left:
        out += f"\ntorchtest: killed processes the launcher left behind: {left}\n"
    return status, out, time.monotonic() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", required=True, choices=sorted(torch_cases.CASES))
    ap.add_argument("--nproc", type=int, required=True)
    ap.add_argument("--run", required=True, help="build/sim/bin/a2asim-run")
    ap.add_argument("--logs", required=True)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--shim")
    mode.add_argument("--tool")
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--tool-arg", action="append", default=[],
                    help="a flag for `a2acheck run` (with --tool), before --")
    ap.add_argument("--limit", type=int, default=240,
                    help="seconds before a job that nothing ended is killed (a hang fails here, "
                         "before ctest's TIMEOUT)")
    ap.add_argument("program", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    if args.program[:1] == ["--"]:
        args.program = args.program[1:]
    if not args.program or any("=" not in kv for kv in args.env):
        ap.error("need -- PROGRAM [ARG...] and NAME=VALUE for --env")

    py = torch_python()
    if not py:
        msg = ("no PyTorch in A2A_TORCH_PYTHON or ~/.cache/a2acheck/venv-torch "
               "(create it with .ci/torch-venv.sh)")
        if os.environ.get("CI") == "true":
            print(f"FAIL: {msg}; the torch suite is required in CI")
            return 1
        print(f"SKIPPED: {msg}: the torch tests were NOT run")
        return 77

    become_subreaper()
    shutil.rmtree(args.logs, ignore_errors=True)
    status, out, wall = launch(args, py)
    sys.stdout.write(out)
    print(f"torchtest: {args.nproc} ranks"
          f"{' under a2acheck run' if args.tool else ' under a2acheck' if args.shim else ''}: "
          f"exit {status} in {wall:.1f} s")

    job = Job(args, status, out, wall)
    print(f"torchtest: case {args.case}:")
    job.expect(not UNIMPL_RE.search(out), "no kernel was launched that the simulator cannot run")
    torch_cases.CASES[args.case](job)
    if job.shim:
        print(f"torchtest: {len(job.findings)} finding(s) in {len(job.files)} log(s) of {args.logs}:")
        for f in job.findings:
            print("  " + describe(f))
    if job.fails:
        print(f"FAIL: {len(job.fails)} expectation(s) failed")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
