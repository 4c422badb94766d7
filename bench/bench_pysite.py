"""bench_pysite.py - what a Python call site costs an NCCL call
(shim/rt_python.c, a2a_rt_py_site; docs/performance.md, "Python call
sites"). Not a test: timings on a shared machine are noise.

Times N calls of ncclCommCount (intercepted, otherwise trivial) on a
one-rank communicator of the simulator, through bench/pysite_loop.c:
  native       from a native thread without Python state (no Python work)
  user         called from a user function (the walk stops at frame 0)
  lib3         through 3 frames of a package under site-packages/ (as
               torch's all_to_all_single + its logging wrapper)
  lib20        through 20 such frames
Usage (a2acheck preloaded, on the simulator):
  LD_PRELOAD=build/lib/liba2acheck.so build/sim/bin/a2asim-run \\
    python3 bench/bench_pysite.py build/bench/libpysite_loop.so [N] [REPEAT]
Prints one JSON object: median ns per call of each, and the differences
to "native".
"""
import ctypes
import json
import os
import statistics
import sys
import tempfile


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


def make_lib_package():
    """A package whose frames a2acheck classifies as library code."""
    root = tempfile.mkdtemp()
    pkg = os.path.join(root, "site-packages", "benchlib")
    os.makedirs(pkg)
    with open(os.path.join(pkg, "__init__.py"), "w") as f:
        f.write("def through(depth, fn, *a):\n"
                "    return fn(*a) if depth <= 1 else through(depth - 1, fn, *a)\n")
    sys.path.insert(0, os.path.join(root, "site-packages"))
    import benchlib
    return benchlib


def main():
    loop = ctypes.CDLL(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 200000
    repeat = int(sys.argv[3]) if len(sys.argv) > 3 else 7
    loop.pysite_loop.restype = ctypes.c_double
    loop.pysite_loop_native.restype = ctypes.c_double
    loop.pysite_loop.argtypes = loop.pysite_loop_native.argtypes = [ctypes.c_void_p, ctypes.c_long]
    nccl = ctypes.CDLL(None)
    uid = UniqueId()
    comm = ctypes.c_void_p()
    assert nccl.cudaSetDevice(0) == 0
    assert nccl.ncclGetUniqueId(ctypes.byref(uid)) == 0
    assert nccl.ncclCommInitRank(ctypes.byref(comm), 1, uid, 0) == 0
    benchlib = make_lib_package()
    cases = {
        "native": lambda: loop.pysite_loop_native(comm, n),
        "user": lambda: loop.pysite_loop(comm, n),
        "lib3": lambda: benchlib.through(3, loop.pysite_loop, comm, n),
        "lib20": lambda: benchlib.through(20, loop.pysite_loop, comm, n),
    }
    res = {k: [] for k in cases}
    for _ in range(repeat):
        for k, f in cases.items():
            res[k].append(f())
    med = {k: round(statistics.median(v), 1) for k, v in res.items()}
    out = {"calls": n, "repeat": repeat, "ns_per_call": med,
           "python_site_ns": {k: round(med[k] - med["native"], 1) for k in med if k != "native"}}
    print(json.dumps(out))
    nccl.ncclCommDestroy(comm)


if __name__ == "__main__":
    main()
