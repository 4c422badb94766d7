"""bug_ds_epsize.py - ranks that build DeepSpeed's expert groups with
different expert-parallel sizes (a per-node config, an ep_size derived from
the local GPU count), on 4 ranks. Run by torchrun on the simulator
(tests/torch/torchtest.py).

    bug_ds_epsize.py EP_LOW EP_HIGH

Ranks 0 and 1 call deepspeed.utils.groups._create_expert_and_data_parallel
(EP_LOW), ranks 2 and 3 with EP_HIGH. After deepspeed.init_distributed()
(which binds the device) every new_group is an ncclCommSplit of the world
communicator, a collective matched by call number: with 4 and 2, ranks 0-1
make 5 splits ([0], [1], [2], [3] and [0, 1, 2, 3]), ranks 2-3 only 4
([0, 2], [1, 3], [0, 1], [2, 3]). Ranks 2-3 go on to an all_to_all_single
in their expert group and an all_reduce in their expert-data-parallel
group, which wait for ranks that are still inside split #5, which waits for
them (a2acheck: group.deadlock). With 2 and 4 the roles are reversed: ranks
0-1 finish (their groups are communicators of the wrong size, so their
all_reduce silently sums fewer ranks) and exit while ranks 2-3 wait in
split #5 forever.
Each collective that completes is checked and reported.
"""
import os
import sys

import torch

import deepspeed
import deepspeed.comm as ds_dist
from deepspeed.utils import groups

from torch_worker import Rank, chunk, sentinel, value


def main():
    deepspeed.get_accelerator().set_device(int(os.environ["LOCAL_RANK"]))
    deepspeed.init_distributed(dist_backend="nccl")
    R = Rank(device_id=True, initialized=True)
    ep = int(sys.argv[1]) if R.rank < R.world // 2 else int(sys.argv[2])  # BUG: differs by rank
    groups._create_expert_and_data_parallel(ep)
    name = f"ep_size_{ep}"
    ep_group = groups._get_expert_parallel_group(name)
    edp_ranks = list(groups._get_expert_data_parallel_group_ranks(name))
    me, n = ds_dist.get_rank(ep_group), ds_dist.get_world_size(ep_group)
    inp = torch.cat([chunk(me, p, 2, torch.float32) for p in range(n)]).to(R.dev)
    out = sentinel(2 * n, torch.float32, R.dev)
    ds_dist.all_to_all_single(out, inp, group=ep_group)
    want = torch.cat([chunk(p, me, 2, torch.float32) for p in range(n)])
    R.report("expert_a2a", "ok" if torch.equal(out.cpu(), want) else "corrupt",
             f"ep_size {ep}, group of {n}")
    g = torch.tensor([value(R.rank, 0, 0)], dtype=torch.int64).to(R.dev)
    ds_dist.all_reduce(g, group=groups._get_expert_data_parallel_group(name))
    want = sum(value(q, 0, 0) for q in edp_ranks)
    got = int(g.cpu()[0])
    R.report("expert_grads", "ok" if got == want else "corrupt",
             f"sum over {edp_ranks}: got {got} want {want}")
    R.finish()


if __name__ == "__main__":
    main()
