"""moe_split_bug.py - the MoE dispatch bug a2acheck exists for, in PyTorch.

Each rank routes tokens to the experts (one expert per rank) and exchanges
them with all_to_all_single. The receive splits come from a routing table
every rank keeps; rank 2's entry for rank 1 is stale (one token too many).
Nothing fails: NCCL receives rank 1's 2 tokens into the first rows of rank
2's 3-row slot and leaves the third row as it was, so rank 2 silently
computes on garbage.

    torchrun --nproc-per-node 4 examples/moe_split_bug.py            # GPUs
    build/bin/a2acheck run --sim -- torchrun --nproc-per-node 4 examples/moe_split_bug.py

The second line runs it on a2acheck's CPU simulator (no GPU needed) under
a2acheck, which names the two call sites of the pair that disagree. Tensors
are built on the CPU and moved with .to() so that the program also runs on
the simulator, which executes no device kernels.
"""
import os

import torch
import torch.distributed as dist

HIDDEN = 4


def dispatch(tokens, send_splits, recv_splits):
    out = torch.zeros(sum(recv_splits), HIDDEN).to(tokens.device)
    dist.all_to_all_single(out, tokens, recv_splits, send_splits)
    return out


def main():
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=dev)
    rank, world = dist.get_rank(), dist.get_world_size()

    # tokens rank s routes to expert d: 2..4 of them
    routed = lambda s, d: (s + d) % 3 + 2
    send_splits = [routed(rank, d) for d in range(world)]
    recv_splits = [routed(s, rank) for s in range(world)]
    if rank == 2 and world > 2:
        recv_splits[1] += 1  # the bug: a stale routing-table entry

    tokens = torch.full((sum(send_splits), HIDDEN), float(rank)).to(dev)
    got = dispatch(tokens, send_splits, recv_splits).cpu()
    want = torch.cat([torch.full((n, HIDDEN), float(s)) for s, n in enumerate(recv_splits)])
    wrong = int((got != want).any(dim=1).sum())
    print(f"rank {rank}: received {got.shape[0]} tokens, {wrong} of them wrong", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
