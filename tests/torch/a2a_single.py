"""a2a_single.py - dist.all_to_all_single on the simulator, run by torchrun
(tests/torch/run_torch.sh). Every rank checks the bytes it received against
what each peer must have sent, for several patterns in one launch (PyTorch's
import and CUDA initialization cost seconds per rank, a pattern costs
milliseconds):

  equal      equal splits (ProcessGroupNCCL uses ncclAlltoAll)
  unequal    per-peer split sizes that differ in both directions
  zero       unequal splits where some pairs exchange nothing, and one rank
             receives nothing at all
  async      async_op=True, then work.wait() before the output is read
  subgroup   a new_group of the even ranks (ncclCommSplit with device_id,
             a lazily created communicator without)

Tensors are built on the CPU and moved with .to()/.cpu() (copies only: the
simulator cannot run PyTorch's device kernels). Usage (per rank, from
torchrun): a2a_single.py device_id|lazy. Exits 1 on the first wrong byte.
"""
import os
import sys

import torch
import torch.distributed as dist


def value(src, dst, i):
    """Element i of the chunk src sends to dst: unique per (src, dst, i)."""
    return src * 1_000_000 + dst * 1_000 + i


def chunk(src, dst, n, dtype):
    return torch.tensor([value(src, dst, i) for i in range(n)], dtype=dtype)


def check(name, got, want):
    if not torch.equal(got, want):
        bad = (got != want).nonzero().flatten()[:8].tolist()
        print(f"rank {dist.get_rank()}: {name}: WRONG data at elements {bad}: "
              f"got {got[bad].tolist()} want {want[bad].tolist()}", flush=True)
        sys.exit(1)


def exchange(name, group, counts, dtype, dev, async_op=False):
    """counts(src, dst): elements src sends to dst (ranks of the group)."""
    me, n = dist.get_rank(group), dist.get_world_size(group)
    send = torch.cat([chunk(me, p, counts(me, p), dtype) for p in range(n)])
    want = torch.cat([chunk(p, me, counts(p, me), dtype) for p in range(n)])
    inp = send.to(dev)
    out = torch.empty(want.numel(), dtype=dtype, device=dev)
    in_splits = [counts(me, p) for p in range(n)]
    out_splits = [counts(p, me) for p in range(n)]
    equal = len(set(in_splits)) == 1 and len(set(out_splits)) == 1
    work = dist.all_to_all_single(out, inp, None if equal else out_splits,
                                  None if equal else in_splits, group=group, async_op=async_op)
    if async_op:
        work.wait()
    check(name, out.cpu(), want)
    return want.numel()


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "lazy"
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=dev if mode == "device_id" else None)
    rank, world = dist.get_rank(), dist.get_world_size()
    world_group = dist.group.WORLD
    moved = 0
    moved += exchange("equal", world_group, lambda s, d: 4, torch.int64, dev)
    moved += exchange("unequal", world_group, lambda s, d: 1 + (3 * s + d) % 5, torch.int64, dev)
    # Rank world-1 receives nothing; pairs with s + d even exchange nothing.
    moved += exchange("zero", world_group,
                      lambda s, d: 0 if d == world - 1 or (s + d) % 2 == 0 else s + d, torch.int32, dev)
    moved += exchange("async", world_group, lambda s, d: 3, torch.float32, dev, async_op=True)
    moved += exchange("async_unequal", world_group, lambda s, d: 2 + s, torch.float64, dev, async_op=True)
    evens = list(range(0, world, 2))
    sub = dist.new_group(evens)
    if rank in evens:
        moved += exchange("subgroup", sub, lambda s, d: 2 + d, torch.int64, dev)
    dist.destroy_process_group()
    print(f"rank {rank}/{world} ({mode}): all_to_all_single data OK "
          f"(equal, unequal, zero, async, async_unequal{', subgroup' if rank in evens else ''}; "
          f"{moved} elements checked)", flush=True)


if __name__ == "__main__":
    main()
