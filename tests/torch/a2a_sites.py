"""a2a_sites.py - Python call sites of a2acheck findings under real PyTorch,
run by torchrun on the simulator (tests/torch/CMakeLists.txt: run_torch.sh
with a2acheck preloaded, then tests/py/check_sites.py on the logs). Two bugs
at known lines ("# SITE:<name>"):

  exchange  dist.all_to_all_single whose split sizes disagree: rank 1 sends
            9 elements to rank 0, which expects 8 - size.p2p-mismatch on both
            ranks (decided by the coordinator, reported on each rank's
            cross-rank thread from the site captured at its ncclSend /
            ncclRecv), each naming the other rank's Python line;
  gather    dist.all_gather_into_tensor with the input at the start of the
            output: the in-place layout NCCL defines only for rank 0
            (sendbuff == recvbuff + rank * count) - layout.overlap on every
            other rank, raised inside the call on the Python thread (the GIL
            released by torch).

The data is not checked (both bugs garble it); each rank prints one line
when it got through both. Usage (per rank, from torchrun): a2a_sites.py.
"""
import os

import torch
import torch.distributed as dist


def exchange(dev, rank, world):
    in_splits = [8] * world
    if rank == 1:
        in_splits[0] = 9
    inp = torch.arange(sum(in_splits), dtype=torch.float32).to(dev)
    out_splits = [8] * world
    out = torch.empty(sum(out_splits), dtype=torch.float32, device=dev)
    dist.all_to_all_single(out, inp, out_splits, in_splits)  # SITE:a2a
    torch.cuda.synchronize()


def gather(dev, world):
    out = torch.zeros(4 * world, dtype=torch.float32, device=dev)
    dist.all_gather_into_tensor(out, out[:4])  # SITE:gather
    torch.cuda.synchronize()


def main():
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=dev)
    rank, world = dist.get_rank(), dist.get_world_size()
    exchange(dev, rank, world)
    gather(dev, world)
    dist.destroy_process_group()
    print(f"rank {rank}/{world}: a2a_sites done", flush=True)


if __name__ == "__main__":
    main()
