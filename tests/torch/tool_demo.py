"""tool_demo.py - runs a standalone torch program (the README's tour:
examples/moe_split_bug.py) as a user would, `a2acheck run --sim [FLAGS] --
torchrun --nproc-per-node N PROGRAM`, and checks the exit status and the
merged report on stderr against regular expressions.

    tool_demo.py --tool BIN --status 66 --expect RE [--expect RE...]
                 [--flag F...] --nproc N -- PROGRAM [ARGS...]

Without a Python that has torch ($A2A_TORCH_PYTHON), it skips (77), and
fails under CI=true (tests/torch/CMakeLists.txt).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torchtest import torch_python  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--status", type=int, required=True)
    ap.add_argument("--expect", action="append", default=[])
    ap.add_argument("--flag", action="append", default=[])
    ap.add_argument("--nproc", type=int, default=4)
    ap.add_argument("program", nargs="+")
    a = ap.parse_args()
    py = torch_python()
    if not py:
        msg = "tool_demo: no Python with torch (A2A_TORCH_PYTHON; make it with .ci/torch-venv.sh)"
        if os.environ.get("CI") == "true":
            sys.exit(msg + ": required in CI")
        print(msg + "; skipped")
        sys.exit(77)
    env = dict(os.environ)
    for name in ("LD_PRELOAD", "A2ACHECK_LOG_DIR", "A2ACHECK_RUNS_DIR"):
        env.pop(name, None)
    # `torchrun` as the user types it: the venv's bin first on PATH.
    env["PATH"] = os.path.dirname(py) + os.pathsep + env.get("PATH", "")
    env["A2ASIM_DEVICES"] = str(a.nproc)
    with tempfile.TemporaryDirectory() as runs:
        cmd = [a.tool, "run", "--sim", "--runs-dir", runs] + a.flag + \
              ["--", "torchrun", "--nproc-per-node", str(a.nproc)] + a.program
        print("tool_demo: " + " ".join(cmd), flush=True)
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, errors="replace", timeout=240)
    print(p.stdout)
    print(p.stderr)
    bad = []
    if p.returncode != a.status:
        bad.append(f"exit status {p.returncode}, expected {a.status}")
    for rx in a.expect:
        if not re.search(rx, p.stderr, re.M):
            bad.append(f"not in the report: /{rx}/")
    for b in bad:
        print("tool_demo: FAIL: " + b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
