"""bug_skip.py - one rank skips an all_to_all_single that the others make, in
a loop of steps (step s sends s+1 float32 elements to every peer, equal
splits: ncclAlltoAll). Run by torchrun on the simulator
(tests/torch/torchtest.py); every step that completes is checked and
reported ("ok", or "corrupt" with the wrong elements).

    bug_skip.py exit RANK      RANK leaves the loop after step 0 (as if it had
                               run out of data), destroys its process group
                               and exits 0; the others block in step 1
                               forever (a2acheck: group.deadlock, exit 66)
    bug_skip.py continue RANK  RANK skips step 2 and goes on: its step 3
                               (4 elements per peer) meets the others' step
                               2 (3 elements), and so on; at the end the
                               others wait for a last step it never makes
    bug_skip.py abort RANK     the process groups' timeout is 3 s; RANK skips
                               step 1, computes for 8 s and exits 0 without
                               destroying its process group: the others'
                               step 1 times out, torch's watchdog aborts the
                               communicator (ncclCommAbort), and they go on
                               with wrong data and exit 0 (a2acheck:
                               size.unmatched-p2p at the abort, naming RANK;
                               abort_ar: each step an all_reduce instead -
                               group.hang at the abort, naming RANK)
    bug_skip.py sleep RANK S1 S2
                               RANK sleeps S1 seconds before step 1 (a slow
                               data loader: a stall that ends), then S2
                               seconds before step 2 (a hang)
"""
import sys
import time

import torch
import torch.distributed as dist

from torch_worker import Rank, chunk, sentinel

STEPS = 4


def step(R, s):
    """Step s: s+1 elements to every peer; reports what arrived."""
    me, n, k = R.rank, R.world, s + 1
    inp = torch.cat([chunk(me, p, k, torch.float32, salt=s) for p in range(n)]).to(R.dev)
    out = sentinel(n * k, torch.float32, R.dev)
    dist.all_to_all_single(out, inp)
    got = out.cpu()  # blocks until the all-to-all is done
    want = torch.cat([chunk(p, me, k, torch.float32, salt=s) for p in range(n)])
    if torch.equal(got, want):
        R.report(f"step{s}", "ok", f"{want.numel()} elements")
        return
    bad = (got != want).nonzero().flatten().tolist()
    R.report(f"step{s}", "corrupt", f"{len(bad)} of {want.numel()} elements wrong, first {bad[:4]}: "
             f"got {got[bad[:4]].tolist()} want {want[bad[:4]].tolist()}")


def step_ar(R, s):
    """Step s as an all_reduce of s+1 ones (the abort_ar mode)."""
    x = torch.ones(s + 1).to(R.dev)
    dist.all_reduce(x)
    got = x.cpu()
    R.report(f"step{s}", "ok" if torch.equal(got, torch.full((s + 1,), float(R.world))) else "corrupt")


def main():
    mode, who = sys.argv[1], int(sys.argv[2])
    R = Rank(device_id=True, timeout_s=3 if mode.startswith("abort") else None)
    for s in range(STEPS):
        if R.rank == who:
            if mode == "exit" and s == 1:
                break
            if mode.startswith("abort") and s == 1:
                time.sleep(8)
                sys.exit(0)
            if mode == "continue" and s == 2:
                continue
            if mode == "sleep" and s in (1, 2):
                time.sleep(float(sys.argv[2 + s]))
        (step_ar if mode == "abort_ar" else step)(R, s)
    R.finish()


if __name__ == "__main__":
    main()
