#!/usr/bin/env python3
"""run_nccltest.py - run one NVIDIA nccl-tests program on the CPU simulator,
with or without the preloaded a2acheck, and assert on its exit status, on
nccl-tests' own output and on the shim's JSONL logs. Python 3, stdlib only.

    run_nccltest.py --mode MODE --libdir L --logdir D [--shim SO] [options]
                    --app "PROG ARGS..." [--app ...]

Modes (how the ranks are laid out; the nccl-tests arguments are in --app):
  single  one process, the ranks given by the app's own -g/-t arguments
  mpi     Open MPI: every --app is an app context "-np N PROG ARGS" of one
          mpirun (several --app: MPMD, "A : B"); N from --np (default 4)
          split evenly over the --app given, or per app as "N:PROG ARGS"

Every run stays on this host and on loopback: NCCL_SOCKET_IFNAME=lo, Open
MPI's plm isolated (local launch, no ssh), btl self,tcp and its btl/oob TCP
interfaces lo (also set as OMPI_MCA_* in the environment, which an MPI
program started without mpirun reads too). As root,
Open MPI needs OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM), set here. In MPMD syntax
Open MPI's -x applies only to the app context it precedes: every context
gets the full list.

Prerequisites: --missing REASON says the build could not provide what this
test needs (nccl-tests not built: no tarball, no nvcc, no Open MPI...). The
test then prints REASON and exits 77 (ctest SKIP_RETURN_CODE) - unless CI is
true in the environment: in CI a missing prerequisite is a failure (exit 1).

Assertions (all must hold):
  --status S[,S...]   mpirun's / the program's exit status is one of these
                      (default 0); "nonzero" accepts any status but 0
  --within T          the run ended within T seconds (wall time)
  --after T           ... and not before T seconds
  --bench             nccl-tests' output is a complete, correct benchmark:
                      header, one "Rank" line per rank on a simulator device
                      (--ranks, default 4; --device-name), one result row per
                      size of -b/-e/-f (or -i) with numeric times, "#wrong"
                      N/A in every column when -c 0 (else 0), "Out of bounds
                      values : 0 OK", the average bus bandwidth, "test
                      concluded", no "Test ... failure" line and no
                      "a2asim:" warning (e.g. a kernel the simulator skipped)
  --no-pass-row       no result row claims a checked result ("#wrong" column
                      with a number): for runs that must fail loudly
  --output-has RE     nccl-tests' output (stdout+stderr) matches RE
  --output-lacks RE   ... does not match RE
  --jsonl "ARGS"      check_jsonl.py assertions on the shim's logs (quoted,
                      split like a shell; repeatable; --files defaults to the
                      number of processes when the expected status is 0); with
                      the shim, some log assertion is required (every shimmed
                      run states what it expects)
  --in-every-log SPEC every .jsonl file (one per process) has a finding
                      matching SPEC (check_jsonl's CHECK[:SEVERITY] syntax)
  --one-of SPEC,SPEC  some finding matches one of the SPECs
  --same-buffer CHECK every CHECK finding's ranges (details: send/recv or
                      ranges[], their "lo") start at one address: the send and
                      the receive are one buffer, nccl-tests' in-place call.
                      nccl-tests runs every out-of-place call of a size (and
                      all warm-up calls) before the in-place one and a2acheck
                      logs a finding's first occurrence, so this also shows
                      that no out-of-place call was reported
Without --shim the run must leave no a2acheck log and print no "a2acheck:"
line (the shim was really not loaded).

Exit status: 0 all assertions hold; 1 one failed (the output and findings
are printed); 77 a prerequisite is missing outside CI; 2 usage error.
"""
import argparse
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import check_jsonl  # noqa: E402  (tests/e2e/check_jsonl.py: the shared log reader)

SKIP = 77
# One host, loopback only: ranks started locally (plm isolated: no ssh/rsh
# needed, none of a batch system's launchers), TCP between them over lo.
LOCAL_MCA = {"plm": "isolated", "btl": "self,tcp", "btl_tcp_if_include": "lo",
             "oob_tcp_if_include": "lo"}


def in_ci():
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes", "on")


def parse_bytes(text):
    """nccl-tests' size syntax: a number with an optional K/M/G (powers of 1024)."""
    m = re.fullmatch(r"(\d+)([kKmMgG]?)[bB]?", text)
    if not m:
        raise ValueError("bad size %r" % text)
    return int(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]


def bench_options(argv):
    """The options of one nccl-tests command line that shape its output."""
    opts = {"b": 32 << 20, "e": 32 << 20, "f": 1, "i": 1 << 20, "c": 1}
    it = iter(argv[1:])
    for a in it:
        key = a.lstrip("-")[:1] if a.startswith("-") and len(a) == 2 else None
        if key in ("b", "e", "i"):
            opts[key] = parse_bytes(next(it))
        elif key in ("f", "c"):
            opts[key] = int(next(it))
    return opts


def expected_rows(opts):
    """How many sizes nccl-tests runs: its loop from -b to -e, times -f or plus -i."""
    n, size = 0, opts["b"]
    while size <= opts["e"]:
        n += 1
        size = size * opts["f"] if opts["f"] > 1 else size + opts["i"]
        if opts["f"] <= 1 and opts["i"] == 0:
            break
    return n


ROW = re.compile(r"^\s+(\d+)\s+(\d+)\s+\S+\s.*$")


def result_rows(out):
    """Result rows: '  size count type [redop] root  time algbw busbw #wrong  time algbw busbw #wrong'."""
    rows = []
    for line in out.splitlines():
        if not ROW.match(line):
            continue
        tok = line.split()
        if len(tok) < 11:
            continue
        rows.append({"size": int(tok[0]), "line": line,
                     "oop": tok[-8:-4], "ip": tok[-4:]})
    return rows


def is_number(s):
    try:
        float(s)
        return True
    except ValueError:
        return False


def check_bench(out, argv_list, ranks, device_name, errors):
    if "# nccl-tests version" not in out:
        errors.append("no '# nccl-tests version' header: the program did not start")
    dev = [l for l in out.splitlines() if re.match(r"^#\s+Rank\s+\d+\s", l)]
    if len(dev) != ranks:
        errors.append("%d 'Rank' lines, expected %d" % (len(dev), ranks))
    if not dev or not all(device_name in l for l in dev):
        errors.append("not every rank is on a %r device (simulator not loaded?)" % device_name)
    opts = bench_options(argv_list[0])
    want = expected_rows(opts)
    rows = result_rows(out)
    if len(rows) != want:
        errors.append("%d result rows, expected %d (sizes %d..%d, factor %d)"
                      % (len(rows), want, opts["b"], opts["e"], opts["f"]))
    sizes = [r["size"] for r in rows]
    if sizes != sorted(sizes) or len(set(sizes)) != len(sizes):
        errors.append("result sizes are not strictly increasing: %s" % sizes)
    for r in rows:
        for col in (r["oop"], r["ip"]):
            if not all(is_number(v) for v in col[:3]) or float(col[0]) <= 0:
                errors.append("row without a positive time and numeric bandwidths: %s" % r["line"])
            wrong = col[3]
            if opts["c"] == 0 and wrong != "N/A":
                errors.append("-c 0 but a '#wrong' column says %r: %s" % (wrong, r["line"]))
            if opts["c"] != 0 and wrong not in ("0", "N/A"):
                errors.append("'#wrong' is %r: %s" % (wrong, r["line"]))
    for needle in ("# Out of bounds values : 0 OK", "# Avg bus bandwidth",
                   "# Collective test concluded"):
        if needle not in out:
            errors.append("no %r line" % needle)
    fail = re.search(r"Test (NCCL |CUDA )?failure.*", out)
    if fail:
        errors.append("nccl-tests reports %r" % fail.group(0))
    sim = re.search(r"^a2asim: .*", out, re.M)
    if sim:
        errors.append("the simulator warns (it did not run everything asked): %r" % sim.group(0))


def jsonl_files(d):
    out = []
    for root, _dirs, names in os.walk(d):
        out += [os.path.join(root, n) for n in names if n.endswith(".jsonl")]
    return sorted(out)


def check_in_every_log(logdir, specs, errors):
    files = jsonl_files(logdir)
    for text in specs:
        sp = check_jsonl.Spec(text, allow_count=False)
        for path in files:
            findings = load_one(path)
            if not any(sp.matches(f) for f in findings):
                errors.append("%s has no finding matching %s" % (os.path.basename(path), text))


def load_one(path):
    """One log's findings (check_jsonl.load reads a directory: give it a view of one file)."""
    with tempfile.TemporaryDirectory() as tmp:
        os.symlink(os.path.abspath(path), os.path.join(tmp, os.path.basename(path)))
        _files, findings = check_jsonl.load(tmp, ["*.summary"])
    return findings


def range_starts(obj):
    """Every "lo" address in a finding's details (send, recv, ranges[])."""
    if isinstance(obj, dict):
        out = [obj["lo"]] if isinstance(obj.get("lo"), str) else []
        for v in obj.values():
            if isinstance(v, (dict, list)):
                out += range_starts(v)
        return out
    if isinstance(obj, list):
        return [x for v in obj for x in range_starts(v)]
    return []


def check_same_buffer(logdir, checks, errors):
    _files, findings = check_jsonl.load(logdir, ["*.summary"])
    for check in checks:
        for f in findings:
            if f["check"] != check:
                continue
            starts = range_starts(f.get("details"))
            if len(starts) < 2 or len(set(starts)) != 1:
                errors.append("%s at %s is not about one buffer (range starts %s): %s"
                              % (check, f["_where"], starts, f.get("message", "")[:200]))


def check_one_of(logdir, groups, errors):
    _files, findings = check_jsonl.load(logdir, ["*.summary"])
    for text in groups:
        specs = [check_jsonl.Spec(s, allow_count=False) for s in text.split(",")]
        if not any(sp.matches(f) for f in findings for sp in specs):
            errors.append("no finding matches any of %s" % text)


def build_command(a, apps, env_pairs):
    """The argv to run, and the environment for it."""
    # The caller's own a2acheck/simulator settings must not change what a test
    # asserts: only --env sets them.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("A2ACHECK_", "A2ASIM_")) and k != "LD_PRELOAD"}
    env["LD_LIBRARY_PATH"] = a.libdir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    for k, v in LOCAL_MCA.items():
        env["OMPI_MCA_" + k] = v
    if os.geteuid() == 0:
        env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
        env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    rank_env = [("NCCL_SOCKET_IFNAME", "lo"), ("A2ACHECK_LOG_DIR", a.logdir),
                ("LD_LIBRARY_PATH", env["LD_LIBRARY_PATH"])]
    if a.shim:
        rank_env.append(("LD_PRELOAD", a.shim))
    rank_env += env_pairs
    if a.mode == "single":
        if len(apps) != 1:
            raise ValueError("--mode single takes exactly one --app")
        env.update(dict(rank_env))
        return apps[0][1], env
    cmd = [a.mpiexec]
    for k, v in LOCAL_MCA.items():
        cmd += ["--mca", k, v]
    cmd += ["--oversubscribe", "--bind-to", "none"]
    for i, (np_, argv) in enumerate(apps):
        if i:
            cmd.append(":")
        cmd += ["-np", str(np_)]
        for k, v in rank_env:
            cmd += ["-x", "%s=%s" % (k, v)]
        cmd += argv
    env["NCCL_SOCKET_IFNAME"] = "lo"
    return cmd, env


def run(cmd, env, limit):
    """Run cmd in its own session; past the limit, SIGTERM it (mpirun forwards
    that to its ranks and cleans up), then SIGKILL the session's group."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    timed_out = False
    try:
        out, _ = p.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(p.pid, signal.SIGTERM)
        try:
            out, _ = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
    return p.returncode, out.decode("utf-8", "replace"), time.monotonic() - t0, timed_out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 epilog="See the top of this file for the assertions.")
    ap.add_argument("--mode", choices=("single", "mpi"), required=True)
    ap.add_argument("--app", action="append", default=[], help='"[N:]PROG ARGS..." (repeatable in mpi mode)')
    ap.add_argument("--np", type=int, default=4, help="mpi mode: total processes (split over --app)")
    ap.add_argument("--mpiexec", default="mpirun")
    ap.add_argument("--libdir", required=True, help="the simulator's lib directory")
    ap.add_argument("--logdir", required=True)
    ap.add_argument("--shim", help="liba2acheck.so to preload into every rank")
    ap.add_argument("--env", action="append", default=[], help="VAR=VALUE for every rank")
    ap.add_argument("--limit", type=float, default=120, help="seconds before the run is killed")
    ap.add_argument("--missing", help="a prerequisite is missing: skip (77), fail in CI")
    ap.add_argument("--status", default="0")
    ap.add_argument("--within", type=float)
    ap.add_argument("--after", type=float)
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--device-name", default="A2ASIM")
    ap.add_argument("--no-pass-row", action="store_true")
    ap.add_argument("--output-has", action="append", default=[])
    ap.add_argument("--output-lacks", action="append", default=[])
    ap.add_argument("--jsonl", action="append", default=[])
    ap.add_argument("--in-every-log", action="append", default=[])
    ap.add_argument("--one-of", action="append", default=[])
    ap.add_argument("--same-buffer", action="append", default=[])
    a = ap.parse_args(argv)

    if a.missing:
        if in_ci():
            print("nccltests: FAIL: %s (CI is set: a missing prerequisite is a failure)" % a.missing)
            return 1
        print("nccltests: NOT RUN (skipped): %s" % a.missing)
        return SKIP
    if not a.app:
        ap.error("no --app")
    if a.shim and not (a.jsonl or a.in_every_log or a.one_of or a.same_buffer):
        ap.error("a run with --shim must state its expected findings (--jsonl ...)")
    try:
        env_pairs = [tuple(e.split("=", 1)) for e in a.env]
        apps = []
        for i, text in enumerate(a.app):
            np_ = a.np // len(a.app)
            m = re.match(r"^(\d+):(.*)$", text, re.S)
            if m:
                np_, text = int(m.group(1)), m.group(2)
            apps.append((np_, shlex.split(text)))
        if a.mode == "mpi" and sum(n for n, _ in apps) < 1:
            ap.error("no processes")
        cmd, env = build_command(a, apps, env_pairs)
    except ValueError as e:
        ap.error(str(e))
    for _np, app_argv in apps:
        if not os.access(app_argv[0], os.X_OK):
            print("nccltests: FAIL: %s is not built (run the build first: cmake --build build)"
                  % app_argv[0])
            return 1
    if a.mode == "mpi" and shutil.which(a.mpiexec) is None:
        print("nccltests: FAIL: %s not found" % a.mpiexec)
        return 1

    shutil.rmtree(a.logdir, ignore_errors=True)
    os.makedirs(os.path.dirname(a.logdir.rstrip("/")) or ".", exist_ok=True)
    shown_env = " ".join("%s=%s" % kv for kv in
                         ([("LD_PRELOAD", a.shim)] if a.shim and a.mode == "single" else []) +
                         [("LD_LIBRARY_PATH", a.libdir)] + (env_pairs if a.mode == "single" else []))
    print("nccltests: run: %s %s" % (shown_env, " ".join(shlex.quote(c) for c in cmd)))
    status, out, wall, timed_out = run(cmd, env, a.limit)
    print(out.rstrip())
    print("nccltests: exit status %s after %.2f s%s" % (status, wall,
          " (killed at the %g s limit)" % a.limit if timed_out else ""))

    errors = []
    if a.status == "nonzero":
        if status == 0:
            errors.append("exit status 0, expected a failure")
    elif status not in [int(s) for s in a.status.split(",")]:
        errors.append("exit status %s, expected %s" % (status, a.status))
    if timed_out:
        errors.append("killed at the %g s limit" % a.limit)
    if a.within is not None and wall > a.within:
        errors.append("ended after %.2f s, expected within %g s" % (wall, a.within))
    if a.after is not None and wall < a.after:
        errors.append("ended after %.2f s, expected not before %g s" % (wall, a.after))
    if a.bench:
        check_bench(out, [argv_ for _n, argv_ in apps], a.ranks, a.device_name, errors)
    if a.no_pass_row:
        for r in result_rows(out):
            if any(is_number(col[3]) for col in (r["oop"], r["ip"])):
                errors.append("a result row claims a checked result: %s" % r["line"])
    for rx in a.output_has:
        if not re.search(rx, out, re.M):
            errors.append("output does not match %r" % rx)
    for rx in a.output_lacks:
        m = re.search(rx, out, re.M)
        if m:
            errors.append("output matches %r: %r" % (rx, m.group(0)))

    if a.shim:
        procs = 1 if a.mode == "single" else sum(n for n, _ in apps)
        jargs = [a.logdir]
        for text in a.jsonl:
            jargs += shlex.split(text)
        # A run that must end cleanly leaves one log per process; one that fails
        # may not (mpirun kills the job: ranks without findings write nothing).
        if "--files" not in jargs and a.status == "0":
            jargs += ["--files", str(procs)]
        if check_jsonl.main(jargs) != 0:
            errors.append("check_jsonl %s failed (above)" % " ".join(shlex.quote(x) for x in jargs[1:]))
        check_in_every_log(a.logdir, a.in_every_log, errors)
        check_one_of(a.logdir, a.one_of, errors)
        check_same_buffer(a.logdir, a.same_buffer, errors)
    else:
        if jsonl_files(a.logdir):
            errors.append("a2acheck logs in %s although the shim was not preloaded" % a.logdir)
        if re.search(r"^a2acheck:", out, re.M):
            errors.append("'a2acheck:' lines although the shim was not preloaded")

    if errors:
        for e in errors:
            print("nccltests: FAIL: " + e)
        return 1
    print("nccltests: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
