#!/usr/bin/env python3
"""run_fuzz.py - run libFuzzer targets for a bounded time (tests/fuzz).

    run_fuzz.py --fuzzer BIN --corpus DIR --seconds S --work W
        Run BIN for S seconds from the seed corpus DIR (read only: new
        inputs go to W/corpus). A crash, leak, timeout or out-of-memory is
        a failure: the input is kept in W and the message says how to make
        it a regression test. Prints the inputs tried.
    run_fuzz.py --subbuild --source SRC --build B --seconds S
        Configure SRC with clang and A2A_FUZZ=ON under B (the fuzz targets
        only), build them and run its fuzz tests (ctest -L fuzz). Without
        clang/libFuzzer: exit 77 (skipped, said clearly), or 1 under CI=true.
Python 3, stdlib only.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile


def in_ci():
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def missing(why):
    if in_ci():
        print("FAIL: the fuzzers need clang with libFuzzer in CI: " + why)
        return 1
    print("SKIPPED (not run): the fuzzers need clang with libFuzzer (Debian: apt-get install "
          "clang libclang-rt-dev): " + why)
    return 77


def have_libfuzzer(clang):
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "t.c")
        with open(src, "w") as f:
            f.write("#include <stddef.h>\n#include <stdint.h>\n"
                    "int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return 0; }\n")
        r = subprocess.run([clang, "-fsanitize=fuzzer,address,undefined", src, "-o",
                            os.path.join(d, "t")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        return r.returncode == 0, r.stdout


def subbuild(a):
    clang = shutil.which("clang")
    if not clang:
        return missing("no clang in PATH")
    ok, out = have_libfuzzer(clang)
    if not ok:
        return missing("clang cannot link -fsanitize=fuzzer: " + out.strip()[-300:])
    jobs = os.environ.get("A2A_FUZZ_JOBS", "2")
    steps = [
        ["cmake", "-S", a.source, "-B", a.build, "-DCMAKE_C_COMPILER=" + clang, "-DA2A_FUZZ=ON",
         "-DA2A_BUILD_TESTS=OFF", "-DA2A_FUZZ_SECONDS=%d" % a.seconds],
        ["cmake", "--build", a.build, "--target", "a2a_fuzzers", "-j", jobs],
        ["ctest", "--test-dir", a.build, "-L", "fuzz", "--output-on-failure"],
    ]
    for st in steps:
        print("+ " + " ".join(st), flush=True)
        r = subprocess.run(st)
        if r.returncode != 0:
            print("FAIL: `%s` exited %d" % (" ".join(st[:3]), r.returncode))
            return 1
    return 0


def fuzz(a):
    work = a.work
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "corpus"))
    seeds = [f for f in os.listdir(a.corpus) if not f.startswith(".")]
    cmd = [a.fuzzer, "-max_total_time=%d" % a.seconds, "-timeout=10", "-rss_limit_mb=2048",
           "-max_len=65536", "-print_final_stats=1", "-artifact_prefix=" + work + "/",
           os.path.join(work, "corpus"), a.corpus]
    print("+ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       errors="replace")
    out = r.stdout
    runs = re.search(r"stat::number_of_executed_units:\s*(\d+)", out)
    print(out[-6000:])
    name = os.path.basename(a.fuzzer)
    print("%s: %s inputs tried in %d s from %d seeds" %
          (name, runs.group(1) if runs else "?", a.seconds, len(seeds)))
    arts = [f for f in os.listdir(work) if re.match(r"(crash|leak|timeout|oom|slow-unit)-", f)]
    if r.returncode != 0 or arts:
        print("FAIL: %s found a bug (exit %d); the input: %s" %
              (name, r.returncode, ", ".join(os.path.join(work, f) for f in arts) or "see above"))
        print("Make it a regression test: copy it to %s/regress-<what> (the unit tests replay "
              "every file there), fix the bug, and run this again." % a.corpus)
        return 1
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fuzzer")
    ap.add_argument("--corpus")
    ap.add_argument("--work")
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--subbuild", action="store_true")
    ap.add_argument("--source")
    ap.add_argument("--build")
    a = ap.parse_args()
    return subbuild(a) if a.subbuild else fuzz(a)


if __name__ == "__main__":
    sys.exit(main())
