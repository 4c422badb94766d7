"""bug_nowait.py - buffers touched while an asynchronous all-to-all may still
use them, on 2 ranks; rank LATE (argument, default 0) posts every exchange
2 s after the others, so on the other ranks the collective is still waiting
for it when they touch its buffers: the race happens, and is observed in
the data. Run by torchrun on the simulator (tests/torch/torchtest.py).

Patterns:
  forgot_wait       work = all_to_all_single(..., async_op=True), then the
                    output is read (out.cpu(), on the current stream)
                    without work.wait(): the copy runs while ProcessGroup-
                    NCCL's stream still waits for the late rank. Reports
                    "race" with the elements that still held the initial
                    -1, then waits and checks that the data did arrive.
  no_record_stream  an all-to-all on a side stream sends a tensor made on
                    the current stream, which is then dropped without
                    tensor.record_stream(side): the caching allocator
                    gives its block to the next tensor of that size on the
                    current stream, whose upload overwrites it before the
                    queued all-to-all (behind one waiting for the late
                    rank) reads it. The late rank receives the new
                    tensor's -1s and reports "corrupt".
The late rank's own accesses race too, but its peers are ready by then, so
whether its collective finished first is timing.
"""
import sys
import time

import torch
import torch.distributed as dist

from torch_worker import DataError, Rank, check, chunk, sentinel

DELAY_S = 2.0


def forgot_wait(R, late):
    me, n, k = R.rank, R.world, 8
    inp = torch.cat([chunk(me, p, k, torch.float32) for p in range(n)]).to(R.dev)
    out = sentinel(n * k, torch.float32, R.dev)
    want = torch.cat([chunk(p, me, k, torch.float32) for p in range(n)])
    if me == late:
        time.sleep(DELAY_S)
    work = dist.all_to_all_single(out, inp, async_op=True)
    early = out.cpu()  # BUG: no work.wait() before reading the output
    work.wait()
    try:
        check("forgot_wait after wait()", out, want)
    except DataError as e:
        R.report("forgot_wait", "WRONG", str(e))
        return
    stale = (early != want).nonzero().flatten().tolist()
    if stale:
        R.report("forgot_wait", "race", f"read before the all-to-all finished: {len(stale)} of "
                 f"{want.numel()} elements still -1: {sorted(set(early[stale].tolist()))}; "
                 f"right after wait()")
    else:
        R.report("forgot_wait", "unobserved", "the all-to-all had finished before the read")


def no_record_stream(R, late):
    me, n, k = R.rank, R.world, 256
    s = torch.cuda.Stream()
    first = torch.cat([chunk(me, p, k, salt=1) for p in range(n)]).to(R.dev)
    second = torch.cat([chunk(me, p, k, salt=2) for p in range(n)]).to(R.dev)
    out1 = sentinel(n * k, torch.int64, R.dev)
    out2 = sentinel(n * k, torch.int64, R.dev)
    s.wait_stream(torch.cuda.current_stream())
    if me == late:
        time.sleep(DELAY_S)
    with torch.cuda.stream(s):
        dist.all_to_all_single(out1, first)   # waits for the late rank
        dist.all_to_all_single(out2, second)  # queued behind it
    del second  # BUG: no second.record_stream(s) before dropping it
    reuse = sentinel(n * k, torch.int64, R.dev)  # likely gets second's block
    torch.cuda.current_stream().wait_stream(s)
    want1 = torch.cat([chunk(p, me, k, salt=1) for p in range(n)])
    want2 = torch.cat([chunk(p, me, k, salt=2) for p in range(n)])
    got1, got2 = out1.cpu(), out2.cpu()
    if not torch.equal(got1, want1):
        R.report("no_record_stream", "WRONG", "the first all-to-all got wrong data")
    elif torch.equal(got2, want2):
        R.report("no_record_stream", "ok", f"{2 * want2.numel()} elements right")
    else:
        bad = (got2 != want2).nonzero().flatten()
        src = sorted(set((bad // k).tolist()))
        R.report("no_record_stream", "corrupt", f"{bad.numel()} of {want2.numel()} elements from "
                 f"ranks {src} wrong: {sorted(set(got2[bad].tolist()))[:4]}")
    del reuse


def main():
    late = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    R = Rank(device_id=True)
    forgot_wait(R, late)
    no_record_stream(R, late)
    R.finish()


if __name__ == "__main__":
    main()
