"""bug_groups.py - process groups created in different orders on different
ranks, on 4 ranks. Run by torchrun on the simulator
(tests/torch/torchtest.py).

    bug_groups.py device_id|lazy

Groups X = [0, 1, 2] and Y = [0, 1, 3]; ranks 0, 2 and 3 call new_group(X)
then new_group(Y), rank 1 calls new_group(Y) first (its loop runs over a
set, or over "my groups first"). torch.distributed requires every rank to
call new_group in the same order: with device_id each new_group is an
ncclCommSplit of the world communicator (collective, matched by call
number); without, each group is named by a per-process counter and its
NCCL id is exchanged under that name. Either way rank 1's handle for X is
the communicator the others know as Y, and the reverse. Every member then
runs an all_to_all_single in X, then in Y: rank 1's first collective waits
for rank 3 in what is really Y, while ranks 0 and 2 wait for rank 1 in X -
a wait-for cycle through two communicators (a2acheck: group.deadlock).
Each exchange that completes is checked and reported.
"""
import sys

import torch
import torch.distributed as dist

from torch_worker import Rank, chunk, sentinel

X, Y = [0, 1, 2], [0, 1, 3]


def main():
    mode = sys.argv[1]
    R = Rank(device_id=mode == "device_id")
    if R.world != 4:
        raise SystemExit("bug_groups.py runs on 4 ranks")
    order = [Y, X] if R.rank == 1 else [X, Y]  # BUG: rank-dependent order
    pg = {tuple(g): dist.new_group(g) for g in order}
    for name, g in (("X", X), ("Y", Y)):
        if R.rank not in g:
            continue
        me, n = g.index(R.rank), len(g)
        inp = torch.cat([chunk(me, p, 2) for p in range(n)]).to(R.dev)
        out = sentinel(2 * n, torch.int64, R.dev)
        dist.all_to_all_single(out, inp, group=pg[tuple(g)])
        got = out.cpu()
        want = torch.cat([chunk(p, me, 2) for p in range(n)])
        R.report(f"a2a_{name}", "ok" if torch.equal(got, want) else "corrupt",
                 f"got {got.tolist()}")
    R.finish()


if __name__ == "__main__":
    main()
