#!/usr/bin/env python3
"""rt_logfiles.py - the log files in hostile or broken places (ctest -R rt.logfiles).

usage: rt_logfiles.py <case> --shim liba2acheck.so --prog rt_group_unbalanced --work DIR
                      [--tool a2acheck]

The attacks of issue 15 (F5, F6) and the full disk, each run against
rt_group_unbalanced (one group.unbalanced error, exit status 3) with
liba2acheck.so preloaded. A name the attacker plants is predicted exactly:
the program is started by `sh -c 'plant; exec prog'`, so its pid is the
shell's $$. Cases:
  modes      umask 022 (and 0277): every directory a2acheck creates is 0700,
             files 0600;
             a root-owned 1777 directory above (like /tmp) is fine
  symlink    a2acheck.<host>.<pid>.rank5.log is a symlink to a file we own:
             the file is neither truncated nor written, the link stays
  fifo       the .log or the .jsonl name is a FIFO nobody reads: no hang
  precreated a 0666 .jsonl planted beforehand receives nothing
  dirmode    a 0777 log directory (ours) is refused: no file in it
  dirowner   a log directory owned by uid 65534 is refused (needs root to
             chown; skipped with a message otherwise, a failure under CI=true)
  rename     the rankunknown -> rank0 rename never replaces an existing file
  fsize      RLIMIT_FSIZE with SIGXFSZ ignored: EFBIG reported once, the
             summary says the log is incomplete, the JSONL stays valid
  fulldisk   a 64 KiB tmpfs filled up (root; else skipped, failing under
             CI=true): ENOSPC reported once on stderr and in the summary
  nocall     a process that made one CUDA call and no NCCL call leaves no
             files and prints nothing (a launcher process)
  perjob     no A2ACHECK_LOG_DIR: ./a2acheck-logs/<job> from TORCHELASTIC_RUN_ID,
             SLURM_JOB_ID.SLURM_STEP_ID or the process; `a2acheck report`
             with no argument reads the newest job only
Every case also checks that the program's exit status (3) is kept and that
the finding still reaches stderr when the log cannot take it.
"""
import argparse
import json
import os
import resource
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time

FAILURES = []
A = None
HOST = socket.gethostname().split(".")[0] or "unknown-host"


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        FAILURES.append(what)
    return cond


def env_for(extra):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith(("A2ACHECK_", "TORCHELASTIC_", "SLURM_", "PMIX_", "OMPI_")) or \
                k in ("RANK", "PMI_RANK"):
            del env[k]
    env["LD_PRELOAD"] = A.shim
    env["NCCL_SOCKET_IFNAME"] = "lo"
    env.update(extra)
    return env


def run(extra, plant="", cwd=None, args=(), preexec=None, timeout=30, prog=None):
    """Run the program (after the shell command `plant`, which sees the
    program's future pid as $$ and its host as $H)."""
    cmd = 'H="$1"; shift; %s\nexec "$@"' % plant
    e = env_for(extra)
    ld = e.pop("LD_PRELOAD")
    e["A2A_TEST_PRELOAD"] = ld
    # the shell itself runs without the shim; exec puts it back
    cmd = cmd.replace('exec "$@"', 'LD_PRELOAD="$A2A_TEST_PRELOAD" exec "$@"')
    t0 = time.monotonic()
    try:
        p = subprocess.run(["sh", "-c", cmd, "sh", HOST, prog or A.prog] + list(args),
                           cwd=cwd or A.work, env=e, capture_output=True, text=True,
                           timeout=timeout, preexec_fn=preexec)
    except subprocess.TimeoutExpired:
        check(False, "the program ended within %d s (a2acheck must never hang it)" % timeout)
        return None
    p.secs = time.monotonic() - t0
    print("  status %d in %.2f s; stderr:\n    %s" % (p.returncode, p.secs,
                                                      p.stderr.strip().replace("\n", "\n    ")))
    return p


def kept_status(p):
    return check(p is not None and p.returncode == 3,
                 "the program's exit status 3 is kept (got %r)" % (p and p.returncode))


def finding_on_stderr(p):
    return check(p is not None and any("group.unbalanced" in l and l.startswith("a2acheck: [rank ")
                                       for l in p.stderr.splitlines()),
                 "the finding reaches stderr")


def msgs(p, needle):
    return [l for l in p.stderr.splitlines() if needle in l] if p else []


def fresh(name):
    d = os.path.join(A.work, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    os.chmod(d, 0o700)
    return d


def in_ci():
    return os.environ.get("CI") == "true"


def skip(why):
    print("SKIP: " + why)
    if in_ci():
        check(False, "CI=true: a missing prerequisite fails: " + why)


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def valid_jsonl(path):
    try:
        with open(path) as f:
            return [json.loads(l) for l in f.read().splitlines() if l.strip()]
    except (OSError, ValueError):
        return None


def logs_in(d):
    return sorted(n for n in os.listdir(d) if n.startswith("a2acheck.")) if os.path.isdir(d) else []


# ---- cases -------------------------------------------------------------

def case_modes():
    base = fresh("modes")
    logs = os.path.join(base, "a", "b")
    old = os.umask(0o022)
    try:
        p = run({"A2ACHECK_LOG_DIR": logs})
    finally:
        os.umask(old)
    kept_status(p)
    for d in (os.path.join(base, "a"), logs):
        check(os.path.isdir(d) and mode(d) == 0o700, "%s created 0700 under umask 022 (got %s)"
              % (d, oct(mode(d)) if os.path.exists(d) else "nothing"))
    names = logs_in(logs)
    check(len(names) == 2, "two log files (%r)" % names)
    for n in names:
        check(mode(os.path.join(logs, n)) == 0o600, "%s is 0600 (got %s)"
              % (n, oct(mode(os.path.join(logs, n)))))
    # a umask that takes the owner's bits too: still 0700 and 0600
    logs2 = os.path.join(base, "c")
    old = os.umask(0o277)
    try:
        p = run({"A2ACHECK_LOG_DIR": logs2})
    finally:
        os.umask(old)
    names = logs_in(logs2) if os.access(logs2, os.X_OK) else []
    check(os.path.isdir(logs2) and mode(logs2) == 0o700 and len(names) == 2 and
          all(mode(os.path.join(logs2, n)) == 0o600 for n in names),
          "umask 0277: the directory 0700, files 0600 (%s, %r)"
          % (oct(mode(logs2)) if os.path.exists(logs2) else "nothing", names))
    # a sticky world-writable directory above, like /tmp, is fine
    sticky = os.path.join(base, "tmp")
    os.mkdir(sticky)
    os.chmod(sticky, 0o1777)
    p = run({"A2ACHECK_LOG_DIR": os.path.join(sticky, "logs")})
    kept_status(p)
    check(len(logs_in(os.path.join(sticky, "logs"))) == 2 and not msgs(p, "cannot"),
          "logs written below a 1777 directory, no complaint")


def case_symlink():
    d = fresh("symlink")
    victim = os.path.join(A.work, "victim")
    with open(victim, "w") as f:
        f.write("precious\n")
    os.chmod(victim, 0o600)
    link = 'ln -s "%s" "%s/a2acheck.$H.$$.rank5.log"' % (victim, d)
    p = run({"A2ACHECK_LOG_DIR": d, "RANK": "5"}, plant=link)
    kept_status(p)
    check(open(victim).read() == "precious\n", "the symlink's target is neither truncated nor written")
    links = [n for n in os.listdir(d) if os.path.islink(os.path.join(d, n))]
    check(len(links) == 1, "the symlink is still there (%r)" % os.listdir(d))
    check(len(msgs(p, "cannot create the log file")) == 1 and len(msgs(p, "exists already")) == 1,
          "one clear message: the name exists")
    check(not [n for n in os.listdir(d) if n.endswith(".jsonl")],
          "no half pair left behind (%r)" % os.listdir(d))
    finding_on_stderr(p)
    # the same with the .jsonl name
    d = fresh("symlink2")
    link = 'ln -s "%s" "%s/a2acheck.$H.$$.rank5.jsonl"' % (victim, d)
    p = run({"A2ACHECK_LOG_DIR": d, "RANK": "5"}, plant=link)
    kept_status(p)
    check(open(victim).read() == "precious\n", ".jsonl symlink: the target is untouched")
    check(logs_in(d) == sorted(n for n in os.listdir(d) if os.path.islink(os.path.join(d, n))),
          "only the planted link remains: the .log created first was removed (%r)" % os.listdir(d))
    finding_on_stderr(p)


def case_fifo():
    for ext in ("log", "jsonl"):
        d = fresh("fifo-" + ext)
        plant = 'mkfifo "%s/a2acheck.$H.$$.rank5.%s"' % (d, ext)
        p = run({"A2ACHECK_LOG_DIR": d, "RANK": "5"}, plant=plant, timeout=20)
        if p is None:
            continue
        kept_status(p)
        check(p.secs < 10, "a FIFO as the .%s: no hang (%.2f s)" % (ext, p.secs))
        check(len(msgs(p, "cannot create the log file")) == 1, "one clear message")
        finding_on_stderr(p)


def case_precreated():
    d = fresh("precreated")
    plant = 'f="%s/a2acheck.$H.$$.rank5.jsonl"; : > "$f"; chmod 0666 "$f"' % d
    p = run({"A2ACHECK_LOG_DIR": d, "RANK": "5"}, plant=plant)
    kept_status(p)
    js = [n for n in os.listdir(d) if n.endswith(".jsonl")]
    check(len(js) == 1 and os.path.getsize(os.path.join(d, js[0])) == 0,
          "the planted 0666 file received nothing (%r)" % js)
    check(len(msgs(p, "exists already")) == 1, "one clear message naming the file")
    finding_on_stderr(p)


def case_dirmode():
    d = fresh("dirmode")
    os.chmod(d, 0o777)
    p = run({"A2ACHECK_LOG_DIR": d})
    kept_status(p)
    m = msgs(p, "cannot use the log directory")
    check(len(m) == 1 and d in m[0] and "others may write" in m[0],
          "one message naming the directory and the reason (%r)" % m)
    check(logs_in(d) == [], "nothing written into it")
    finding_on_stderr(p)


def case_dirowner():
    if os.geteuid() != 0:
        skip("dirowner needs root to chown a directory to uid 65534")
        return
    d = fresh("dirowner")
    os.chmod(d, 0o755)
    os.chown(d, 65534, 65534)
    p = run({"A2ACHECK_LOG_DIR": d})
    kept_status(p)
    m = msgs(p, "cannot use the log directory")
    check(len(m) == 1 and d in m[0] and "owned by another user" in m[0] and "65534" in m[0],
          "one message naming the directory and its owner (%r)" % m)
    check(logs_in(d) == [], "nothing written into it")
    finding_on_stderr(p)


def case_rename():
    d = fresh("rename")
    plant = 'printf keep > "%s/a2acheck.$H.$$.rank0.log"' % d
    p = run({"A2ACHECK_LOG_DIR": d}, plant=plant, args=["comm"])
    kept_status(p)
    names = os.listdir(d)
    keep = [n for n in names if n.endswith(".rank0.log")]
    check(len(keep) == 1 and open(os.path.join(d, keep[0])).read() == "keep",
          "the existing rank0 file is not replaced (%r)" % names)
    unk = [n for n in names if ".rankunknown." in n]
    check(len(unk) == 2, "the pair keeps the name rankunknown (%r)" % names)
    txt = [n for n in unk if n.endswith(".log")]
    check(bool(txt) and "keep the name rankunknown" in open(os.path.join(d, txt[0])).read(),
          "the text log says why")
    js = [n for n in unk if n.endswith(".jsonl")]
    recs = valid_jsonl(os.path.join(d, js[0])) if js else None
    check(bool(recs) and recs[-1]["check"] == "a2acheck.summary", "the JSONL is complete")


def summary_says_incomplete(p, err):
    check(len(msgs(p, "cannot write the log file")) == 1 and len(msgs(p, err)) >= 1,
          "one message on stderr: cannot write the log file (%s)" % err)
    check(any("the log is incomplete" in l and err in l for l in p.stderr.splitlines()),
          "the summary on stderr says the log is incomplete (%s)" % err)


def case_fsize():
    d = fresh("fsize")

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1600, 1600))
    p = run({"A2ACHECK_LOG_DIR": d, "RANK": "0"}, preexec=limit)
    kept_status(p)
    summary_says_incomplete(p, "File too large")
    finding_on_stderr(p)
    js = [n for n in logs_in(d) if n.endswith(".jsonl")]
    recs = valid_jsonl(os.path.join(d, js[0])) if js else None
    check(recs is not None, "the JSONL holds complete lines only")
    summ = [r for r in recs or [] if r.get("check") == "a2acheck.summary"]
    check(len(summ) == 1 and summ[0]["details"].get("log_write_error") == "File too large",
          "the text log failed first: the JSONL summary record still came and names the error")


def case_fulldisk():
    if os.geteuid() != 0:
        skip("fulldisk needs root to mount a tmpfs")
        return
    mnt = fresh("fulldisk")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", mnt],
                       capture_output=True, text=True)
    if r.returncode != 0:
        skip("cannot mount a tmpfs: " + r.stderr.strip())
        return
    try:
        logs = os.path.join(mnt, "logs")
        os.mkdir(logs, 0o700)
        # fill it up
        fd = os.open(os.path.join(mnt, "filler"), os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while os.write(fd, b"x" * 4096) > 0:
                pass
        except OSError:
            pass
        os.close(fd)
        p = run({"A2ACHECK_LOG_DIR": logs, "RANK": "0"})
        kept_status(p)
        summary_says_incomplete(p, "No space left on device")
        finding_on_stderr(p)
        js = [n for n in logs_in(logs) if n.endswith(".jsonl")]
        for n in js:
            check(valid_jsonl(os.path.join(logs, n)) is not None, "the JSONL holds complete lines")
        # some room: the header fits, the finding or the summary does not
        os.truncate(os.path.join(mnt, "filler"), os.path.getsize(os.path.join(mnt, "filler")) - 8192)
        shutil.rmtree(logs)
        os.mkdir(logs, 0o700)
        p = run({"A2ACHECK_LOG_DIR": logs, "RANK": "0"})
        kept_status(p)
        full = bool(msgs(p, "cannot write the log file"))
        print("  with 8 KiB free: %s" % ("a write failed" if full else "everything fitted"))
        for n in logs_in(logs):
            if n.endswith(".jsonl"):
                check(valid_jsonl(os.path.join(logs, n)) is not None,
                      "8 KiB free: the JSONL holds complete lines")
    finally:
        subprocess.run(["umount", mnt])


def case_perjob():
    w = fresh("perjob")
    root = os.path.join(w, "a2acheck-logs")
    p = run({"TORCHELASTIC_RUN_ID": "job-a", "RANK": "0"}, cwd=w)
    kept_status(p)
    check(len(logs_in(os.path.join(root, "torchrun-job-a"))) == 2,
          "TORCHELASTIC_RUN_ID=job-a -> ./a2acheck-logs/torchrun-job-a")
    time.sleep(0.05)
    p = run({"SLURM_JOB_ID": "77", "SLURM_STEP_ID": "3", "RANK": "1"}, cwd=w)
    check(len(logs_in(os.path.join(root, "slurm-77.3"))) == 2, "SLURM -> slurm-77.3")
    time.sleep(0.05)
    p = run({"RANK": "2"}, cwd=w, plant="echo $$ > pid")
    pid = open(os.path.join(w, "pid")).read().strip()
    mine = os.path.join(root, "proc-%s.%s" % (HOST, pid))
    check(len(logs_in(mine)) == 2, "no launcher identity -> proc-<host>.<pid> (%r)"
          % os.listdir(root))
    hdr = [n for n in logs_in(mine) if n.endswith(".log")]
    check(bool(hdr) and "run directory from no launcher job identity" in
          open(os.path.join(mine, hdr[0])).read(), "the header says how the directory was chosen")
    check(mode(root) == 0o700, "./a2acheck-logs created 0700")
    # an explicit A2ACHECK_LOG_DIR is used as is
    p = run({"A2ACHECK_LOG_DIR": os.path.join(w, "explicit"), "SLURM_JOB_ID": "9"}, cwd=w)
    check(len(logs_in(os.path.join(w, "explicit"))) == 2, "A2ACHECK_LOG_DIR used as is")
    if A.tool:
        e = env_for({})
        e.pop("LD_PRELOAD")
        r = subprocess.run([A.tool, "report", "--format", "json"], cwd=w, env=e,
                           capture_output=True, text=True, timeout=60)
        print("  a2acheck report: status %d\n%s" % (r.returncode, r.stderr))
        try:
            rep = json.loads(r.stdout)
        except ValueError:
            rep = None
        txt = json.dumps(rep) if rep is not None else ""
        check(rep is not None and '"rank": 2' in txt.replace('"rank":2', '"rank": 2') and
              "slurm-77" not in txt and "torchrun-job-a" not in txt,
              "`a2acheck report` with no argument reads the newest job only")
        check("holds 3 runs" in r.stderr, "and says it chose among 3 runs")


def case_nocall():
    if not A.cudaprog:
        skip("nocall needs --cudaprog")
        return
    d = os.path.join(fresh("nocall"), "logs")
    p = run({"A2ACHECK_LOG_DIR": d, "RANK": "0"}, prog=A.cudaprog)
    check(p is not None and p.returncode == 2, "the program's status 2 (got %r)" % (p and p.returncode))
    check(not os.path.exists(d), "a process that made no NCCL call and found nothing leaves no files")
    check(p is not None and "a2acheck" not in p.stderr, "and says nothing on stderr")


CASES = {n[5:]: f for n, f in globals().items() if n.startswith("case_")}


def main():
    global A
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=sorted(CASES) + ["all"])
    ap.add_argument("--shim", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--tool")
    ap.add_argument("--cudaprog", help="rt_not_intercepting: one CUDA call, no NCCL")
    A = ap.parse_args()
    for k in ("shim", "prog", "work", "tool", "cudaprog"):
        if getattr(A, k):
            setattr(A, k, os.path.abspath(getattr(A, k)))
    os.makedirs(A.work, exist_ok=True)
    for name in (sorted(CASES) if A.case == "all" else [A.case]):
        print("== " + name)
        CASES[name]()
    if FAILURES:
        print("%d failure(s)" % len(FAILURES))
        sys.exit(1)
    print("all passed")


if __name__ == "__main__":
    main()
