#!/usr/bin/env python3
"""shim_exports.py - what liba2acheck.so exports and links, checked against
the headers and the real CUDA runtime.

usage: shim_exports.py MODE LIB [--nccl-h nccl.h] [--cudart libcudart.so.13]
  MODE nccl    every function declared in nccl.h is a defined dynamic symbol
               of LIB (nm -D --defined-only), and no pnccl* alias is;
  MODE cuda    the CUDA runtime entry points a2acheck must intercept are
               defined, and (when the real libcudart is given) each one is a
               symbol the real runtime exports too;
  MODE only    LIB exports nothing but NCCL API names, CUDA runtime names and
               the public a2acheck_* API (internals stay hidden);
  MODE needed  LIB has no DT_NEEDED on libnccl or libcudart.
"""
import argparse
import re
import subprocess
import sys

# The CUDA runtime functions the issue requires (device selection, streams,
# events, memory, copies/sets, host functions, launches, graphs, errors),
# with the per-thread-default-stream symbol names libcudart.so.13 exports.
REQUIRED_CUDA = """
cudaSetDevice cudaDeviceSynchronize
cudaStreamCreate cudaStreamCreateWithFlags cudaStreamCreateWithPriority cudaStreamDestroy
cudaStreamQuery cudaStreamQuery_ptsz cudaStreamSynchronize cudaStreamSynchronize_ptsz
cudaStreamGetPriority cudaStreamGetPriority_ptsz cudaStreamWaitEvent cudaStreamWaitEvent_ptsz
cudaEventCreate cudaEventCreateWithFlags cudaEventRecord cudaEventRecord_ptsz
cudaEventRecordWithFlags cudaEventRecordWithFlags_ptsz cudaEventQuery cudaEventSynchronize
cudaEventElapsedTime cudaEventDestroy
cudaMalloc cudaFree cudaMallocAsync cudaMallocAsync_ptsz cudaFreeAsync cudaFreeAsync_ptsz
cudaMallocHost cudaFreeHost cudaHostAlloc cudaMallocManaged cudaMallocPitch
cudaMemcpy cudaMemcpy_ptds cudaMemcpyAsync cudaMemcpyAsync_ptsz cudaMemset cudaMemset_ptds
cudaMemsetAsync cudaMemsetAsync_ptsz cudaMemcpy2D cudaMemcpy2D_ptds cudaMemcpy2DAsync
cudaMemcpy2DAsync_ptsz cudaMemset2D cudaMemset2D_ptds cudaMemset2DAsync cudaMemset2DAsync_ptsz
cudaMemcpyPeer cudaMemcpyPeerAsync
cudaLaunchHostFunc cudaLaunchHostFunc_ptsz
cudaLaunchKernel cudaLaunchKernel_ptsz __cudaLaunchKernel __cudaLaunchKernel_ptsz
cudaLaunchKernelExC cudaLaunchKernelExC_ptsz cudaLaunchCooperativeKernel
cudaLaunchCooperativeKernel_ptsz
cudaStreamBeginCapture cudaStreamBeginCapture_ptsz cudaStreamEndCapture cudaStreamEndCapture_ptsz
cudaGraphLaunch cudaGraphLaunch_ptsz
cudaGetLastError cudaPeekAtLastError
""".split()


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def defined_dynamic(lib):
    """Names of the defined dynamic symbols of lib (functions and data)."""
    names = set()
    for line in run(["nm", "-D", "--defined-only", lib]).splitlines():
        parts = line.split()
        if len(parts) >= 3:
            names.add(parts[2].split("@")[0])
    return names


def nccl_api(header):
    """Every function nccl.h declares (the ncclX names, not the pncclX aliases)."""
    text = open(header, encoding="utf-8").read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    names = set(re.findall(r"^\s*(?:ncclResult_t|const\s+char\s*\*)\s*(nccl\w+)\s*\(",
                           text, flags=re.M))
    return names


def fail(msg):
    print("FAIL: " + msg)
    return 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["nccl", "cuda", "only", "needed"])
    ap.add_argument("lib")
    ap.add_argument("--nccl-h")
    ap.add_argument("--cudart")
    a = ap.parse_args()
    rc = 0

    if a.mode == "needed":
        dyn = run(["readelf", "-d", a.lib])
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn)
        print("NEEDED:", " ".join(needed))
        if not needed:
            rc |= fail("readelf shows no NEEDED entries at all (parse error?)")
        for n in needed:
            if n.startswith("libnccl") or n.startswith("libcudart"):
                rc |= fail(f"liba2acheck.so must not link {n}")
        return rc

    exported = defined_dynamic(a.lib)
    if a.mode == "nccl":
        api = nccl_api(a.nccl_h)
        print(f"nccl.h declares {len(api)} functions; {a.lib} defines {len(exported)} dynamic symbols")
        # NCCL 2.28.9's nccl.h declares 40; far fewer means the parse broke.
        if len(api) < 35:
            rc |= fail(f"parsed only {len(api)} functions from {a.nccl_h}")
        for name in ("ncclAlltoAll", "ncclGather", "ncclScatter", "ncclGroupSimulateEnd",
                     "ncclCommShrink", "ncclCommRevoke", "ncclCommWindowRegister", "ncclGetErrorString"):
            if name not in api:
                rc |= fail(f"{name} not parsed from nccl.h")
        for name in sorted(api - exported):
            rc |= fail(f"{name} (declared in nccl.h) is not exported")
        for name in sorted(n for n in exported if n.startswith("pnccl")):
            rc |= fail(f"{name}: the shim must not define NCCL's profiling aliases")
        for name in sorted(n for n in exported if n.startswith("nccl") and n not in api):
            rc |= fail(f"{name} is exported but not declared in nccl.h")
    elif a.mode == "cuda":
        real = defined_dynamic(a.cudart) if a.cudart else None
        for name in REQUIRED_CUDA:
            if name not in exported:
                rc |= fail(f"{name} is not exported")
            if real is not None and name not in real:
                rc |= fail(f"{name} is not a symbol of {a.cudart}")
        print(f"{len(REQUIRED_CUDA)} required CUDA runtime symbols checked"
              + (f" against {a.cudart}" if real is not None else ""))
    elif a.mode == "only":
        for name in sorted(exported):
            ok = (name.startswith("nccl") or name.startswith("cuda") or name.startswith("__cuda")
                  or name.startswith("a2acheck_"))
            if not ok:
                rc |= fail(f"{name} is exported (internal symbols must be hidden)")
        print(f"{len(exported)} exported symbols checked")
    if rc == 0:
        print("PASS")
    return rc


if __name__ == "__main__":
    sys.exit(main())
