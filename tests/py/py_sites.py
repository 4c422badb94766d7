"""py_sites.py - Python call sites in a2acheck findings, without torch: NCCL
and the CUDA runtime called through ctypes (the simulator's libraries, with
liba2acheck.so preloaded in front of them), on any CPython 3.9+. Run by
tests/py/run_py.sh; tests/py/check_sites.py then reads the logs.

Two ranks (the parent and one forked child, around one ncclUniqueId, as
tests/e2e/e2e_common.h does), each:
  - a grouped send/receive whose sizes disagree (rank 1 sends 9 floats, rank
    0 receives 8): size.p2p-mismatch, raised on the cross-rank background
    thread from the sites captured at the calls;
  - rank 1 only: an in-place ncclAllGather with sendbuff == recvbuff, which
    is right for rank 0 only: layout.overlap, raised in the call (PRE) on
    the calling thread; it runs on the legacy default stream, so both ranks
    also get stream.default-stream there.
The lines the findings must start at carry "# SITE:<name>" comments.

Usage: py_sites.py MODE
  released  ctypes.CDLL: the GIL is released during each foreign call (what
            torch's gil_scoped_release does around every collective)
  held      ctypes.PyDLL: the GIL is held during each call
  thread    as released, from a threading.Thread (frames of threading.py
            outside the user's function)
  deadlock  both ranks receive before they send and wait for the receive:
            group.deadlock, whose story names the receive and the
            synchronization by their Python lines; a2acheck ends both
            ranks with status 66
"""
import ctypes
import os
import sys
import threading

N = 256
NCCL_FLOAT = 7


class UniqueId(ctypes.Structure):
    """ncclUniqueId: 128 bytes, passed by value to ncclCommInitRank."""
    _fields_ = [("internal", ctypes.c_char * 128)]


def api(mode):
    # dlopen(NULL): the global scope, where the preloaded a2acheck wrappers
    # come first (a handle of libnccl itself would bypass them).
    lib = (ctypes.PyDLL if mode == "held" else ctypes.CDLL)(None)
    for name in ("ncclGetUniqueId", "ncclCommInitRank", "ncclSend", "ncclRecv",
                 "ncclAllGather", "ncclGroupStart", "ncclGroupEnd", "ncclCommDestroy",
                 "cudaSetDevice", "cudaMalloc", "cudaStreamCreate", "cudaStreamSynchronize",
                 "cudaDeviceSynchronize"):
        getattr(lib, name).restype = ctypes.c_int
    return lib


def ok(r, what):
    if r != 0:
        print(f"py_sites.py: {what} -> {r}", flush=True)
        sys.exit(1)


def dalloc(lib, nbytes):
    p = ctypes.c_void_p()
    ok(lib.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(nbytes)), "cudaMalloc")
    return p


def exchange(lib, rank, comm, stream):
    """The split sizes disagree: rank 1 sends 9 floats, rank 0 expects 8."""
    peer = 1 - rank
    send, recv = dalloc(lib, 4 * N), dalloc(lib, 4 * N)
    ok(lib.ncclGroupStart(), "ncclGroupStart")
    ok(lib.ncclSend(send, ctypes.c_size_t(9 if rank == 1 else 8), NCCL_FLOAT, peer, comm, stream), "ncclSend")  # SITE:send
    ok(lib.ncclRecv(recv, ctypes.c_size_t(8), NCCL_FLOAT, peer, comm, stream), "ncclRecv")  # SITE:recv
    ok(lib.ncclGroupEnd(), "ncclGroupEnd")
    ok(lib.cudaStreamSynchronize(stream), "cudaStreamSynchronize")


def gather_in_place(lib, rank, comm):
    """sendbuff == recvbuff: right for rank 0 only (nccl.h wants
    recvbuff + rank * sendcount)."""
    buf = dalloc(lib, 4 * 2 * N)
    ok(lib.ncclAllGather(buf, buf, ctypes.c_size_t(N), NCCL_FLOAT, comm, None), "ncclAllGather")  # SITE:allgather
    ok(lib.cudaDeviceSynchronize(), "cudaDeviceSynchronize")


def deadlock(lib, rank, comm, stream):
    """Both ranks receive first and send afterwards: neither receive can
    complete, each rank waits in the synchronization - group.deadlock."""
    buf = dalloc(lib, 4 * N)
    ok(lib.ncclRecv(buf, ctypes.c_size_t(N), NCCL_FLOAT, 1 - rank, comm, stream), "ncclRecv")  # SITE:dlrecv
    ok(lib.cudaStreamSynchronize(stream), "cudaStreamSynchronize")  # SITE:dlsync
    ok(lib.ncclSend(buf, ctypes.c_size_t(N), NCCL_FLOAT, 1 - rank, comm, stream), "ncclSend")


def rank_main(lib, rank, uid, mode):
    ok(lib.cudaSetDevice(rank), "cudaSetDevice")
    comm = ctypes.c_void_p()
    ok(lib.ncclCommInitRank(ctypes.byref(comm), 2, uid, rank), "ncclCommInitRank")
    stream = ctypes.c_void_p()
    ok(lib.cudaStreamCreate(ctypes.byref(stream)), "cudaStreamCreate")
    if mode == "deadlock":
        deadlock(lib, rank, comm, stream)   # a2acheck ends the process (66)
    exchange(lib, rank, comm, stream)
    gather_in_place(lib, rank, comm)
    ok(lib.ncclCommDestroy(comm), "ncclCommDestroy")


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "released"
    if mode not in ("released", "held", "thread", "deadlock"):
        print(__doc__)
        return 2
    lib = api(mode)
    uid = UniqueId()
    ok(lib.ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
    sys.stdout.flush()
    pid = os.fork()
    rank = 1 if pid == 0 else 0
    if mode == "thread":
        t = threading.Thread(target=rank_main, args=(lib, rank, uid, mode), name=f"rank{rank}")
        t.start()
        t.join()
    else:
        rank_main(lib, rank, uid, mode)
    if pid == 0:
        sys.exit(0)   # through exit(): the preloaded tool writes its logs
    _, status = os.waitpid(pid, 0)
    status = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128
    print(f"py_sites.py {mode}: done (rank 1 status {status})", flush=True)
    return 0 if status == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
