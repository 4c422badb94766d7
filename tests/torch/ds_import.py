"""ds_import.py - DeepSpeed on the simulator, run by torchrun
(tests/torch/run_torch.sh): `import deepspeed` (installed with no ops
built) finds the CUDA accelerator with the simulated devices, and
deepspeed.init_distributed() brings up the NCCL process group, through which
one all_to_all_single moves the right bytes.
"""
import os
import sys

import torch
import torch.distributed as dist

import deepspeed


def main():
    acc = deepspeed.get_accelerator()
    want_devices = int(os.environ["A2ASIM_DEVICES"])
    if acc.device_name() != "cuda" or acc.device_count() != want_devices:
        print(f"deepspeed sees accelerator {acc.device_name()!r} with {acc.device_count()} devices, "
              f"want 'cuda' with {want_devices}", flush=True)
        sys.exit(1)
    local = int(os.environ["LOCAL_RANK"])
    acc.set_device(local)
    deepspeed.init_distributed(dist_backend="nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    send = torch.tensor([rank * 100 + p for p in range(world)], dtype=torch.int64)
    out = torch.empty(world, dtype=torch.int64, device=f"cuda:{local}")
    dist.all_to_all_single(out, send.to(f"cuda:{local}"))
    want = torch.tensor([p * 100 + rank for p in range(world)], dtype=torch.int64)
    if not torch.equal(out.cpu(), want):
        print(f"rank {rank}: WRONG data {out.cpu().tolist()} want {want.tolist()}", flush=True)
        sys.exit(1)
    dist.destroy_process_group()
    print(f"rank {rank}/{world}: deepspeed {deepspeed.__version__}: init_distributed + all_to_all_single OK",
          flush=True)


if __name__ == "__main__":
    main()
