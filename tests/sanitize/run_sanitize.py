#!/usr/bin/env python3
"""run_sanitize.py - a sanitizer build of a2acheck and its tests (tests/sanitize).

    run_sanitize.py --kind asan|tsan --source SRC --build B
                    --targets "T1 T2 ..." --tests REGEX [--jobs N]
        Configure SRC under B with -DA2A_SANITIZE=ON (asan: AddressSanitizer,
        LeakSanitizer and UndefinedBehaviorSanitizer) or -DA2A_TSAN=ON (tsan:
        ThreadSanitizer), build the targets the tests need, and run
        `ctest -R REGEX` there with every sanitizer report written to
        B/reports/<kind>.<pid> (log_path) and the suppression files of
        tests/sanitize. Passes only when every test passes AND no process
        wrote a report (a report in a forked rank or in a process whose exit
        status the test accepts still fails the run). Without the compiler's
        sanitizer runtime: exit 77 (skipped, said clearly), or 1 under CI=true.

Loading a sanitized liba2acheck.so: every program of such a build (the
simulator's libraries and the test programs) links the sanitizer runtime
itself (add_link_options in CMakeLists.txt), so the runtime is in the
process from the executable's DT_NEEDED list and the shim is preloaded as
usual. ASan (gcc 12) then refuses to start because a preloaded object comes
before libasan in the library list: verify_asan_link_order=0 says that is
intended (the runtime is loaded and initialized by the executable). For a
program that was not built with the sanitizer, preload the runtime first:
LD_PRELOAD=libasan.so.8:liba2acheck.so (or libtsan.so.2:...).
Python 3, stdlib only.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

KINDS = {
    "asan": {"cmake": "-DA2A_SANITIZE=ON", "flag": "-fsanitize=address,undefined"},
    "tsan": {"cmake": "-DA2A_TSAN=ON", "flag": "-fsanitize=thread"},
}


def in_ci():
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def missing(kind, why):
    if in_ci():
        print("FAIL: the %s build needs the compiler's sanitizer runtime in CI: %s" % (kind, why))
        return 1
    print("SKIPPED (not run): the %s build needs the compiler's sanitizer runtime "
          "(Debian: gcc's libasan8/libubsan1/libtsan2, installed with build-essential): %s"
          % (kind, why))
    return 77


def can_link(cc, flag):
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "t.c")
        with open(src, "w") as f:
            f.write("int main(void) { return 0; }\n")
        r = subprocess.run([cc, flag, src, "-o", os.path.join(d, "t")], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        return r.returncode == 0, r.stdout


def sanitizer_env(kind, reports):
    """The options of every process the tests start (ctest passes its
    environment down to the test scripts and they to the programs).
    exitcode 86: a report must not end a process with a status a test
    accepts (TSan's default, 66, is a2acheck's own failure status)."""
    env = dict(os.environ)
    # A previous sanitizer setting of the caller must not weaken these.
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS"):
        env.pop(k, None)
    common = "log_path=%s/%s:exitcode=86:halt_on_error=1" % (reports, kind)
    if kind == "asan":
        env["ASAN_OPTIONS"] = ":".join([
            common, "verify_asan_link_order=0", "detect_leaks=1", "abort_on_error=0",
            "allocator_may_return_null=1"])
        env["LSAN_OPTIONS"] = "suppressions=%s/lsan.supp:print_suppressions=0" % HERE
        # UBSan recovers (gcc builds without -fno-sanitize-recover): the
        # report file is what fails the run.
        env["UBSAN_OPTIONS"] = "log_path=%s/ubsan:print_stacktrace=1" % reports
    else:
        # die_after_fork=0: the ranks of the fork tests are forked by a
        # parent whose channel thread (and the simulator's) run, and then
        # start their own threads; TSan calls that unsupported (its runtime
        # may have been mid-operation in another thread at the fork) and
        # dies unless told otherwise. The shim's own fork handling is what
        # those tests check, so they run, knowing TSan may hang there.
        env["TSAN_OPTIONS"] = ":".join([
            common, "suppressions=%s/tsan.supp" % HERE, "die_after_fork=0",
            "second_deadlock_stack=1", "print_suppressions=0"])
    # Check's per-test timeouts (unit tests) were set for plain builds:
    # the sanitizers slow thread creation and allocation several times.
    env["CK_TIMEOUT_MULTIPLIER"] = "4"
    return env


def reports_in(d):
    if not os.path.isdir(d):
        return []
    return sorted(os.path.join(d, f) for f in os.listdir(d))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", choices=sorted(KINDS), required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--targets", required=True)
    ap.add_argument("--tests", required=True)
    ap.add_argument("--jobs", default=os.environ.get("A2A_SANITIZE_JOBS", "2"))
    a = ap.parse_args()
    k = KINDS[a.kind]
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return missing(a.kind, "no C compiler in PATH")
    ok, out = can_link(cc, k["flag"])
    if not ok:
        return missing(a.kind, "%s cannot link %s: %s" % (cc, k["flag"], out.strip()[-300:]))

    reports = os.path.join(os.path.abspath(a.build), "reports")
    shutil.rmtree(reports, ignore_errors=True)
    os.makedirs(reports)
    env = sanitizer_env(a.kind, reports)
    # The build itself runs without the sanitizer options (nothing there is
    # sanitized); the tests with them.
    steps = [
        (["cmake", "-S", a.source, "-B", a.build, k["cmake"], "-DA2A_TORCH_PYTHON="], None),
        (["cmake", "--build", a.build, "-j", a.jobs, "--target"] + a.targets.split(), None),
        (["ctest", "--test-dir", a.build, "-R", a.tests, "-j", a.jobs, "--output-on-failure"], env),
    ]
    fail = 0
    for cmd, e in steps:
        t0 = time.time()
        print("+ " + " ".join(cmd), flush=True)
        r = subprocess.run(cmd, env=e)
        print("  (%.0f s)" % (time.time() - t0), flush=True)
        if r.returncode != 0:
            print("FAIL: `%s` exited %d" % (" ".join(cmd[:3]), r.returncode))
            fail = 1
            if e is None:
                return 1
    got = []
    for p in reports_in(reports):
        with open(p, errors="replace") as f:
            text = f.read()
        # A report says ERROR (ASan, LSan), WARNING: ThreadSanitizer or
        # "runtime error" (UBSan); anything else in a log is a note of the
        # runtime (LSan: "Running thread N was not suspended" when a thread
        # exits during the leak check), shown but not a failure.
        bad = any(m in text for m in ("ERROR:", "WARNING: ThreadSanitizer", "runtime error", "SUMMARY:"))
        if bad:
            print("==== sanitizer report %s" % p)
            print(text[-8000:])
            got.append(p)
        else:
            print("(sanitizer note, not a report: %s: %s)" % (os.path.basename(p), text.strip()[:200]))
    if got:
        print("FAIL: %d sanitizer report(s) in %s (fix the bug; suppress only third-party code or a "
              "documented by-design leak, in tests/sanitize/*.supp with a comment)" % (len(got), reports))
        fail = 1
    if not fail:
        print("%s: no sanitizer report" % a.kind)
    return fail


if __name__ == "__main__":
    sys.exit(main())
