"""ds_moe.py - the DeepSpeed APIs that MoE users call, run by torchrun on the
simulator (tests/torch/torchtest.py). DeepSpeed is installed without any op
built; every rank checks every element against a CPU reference and prints
one result line per pattern (torch_worker.py). Under a2acheck these must
produce no error and no warning finding.

Patterns:
  accelerator      deepspeed.get_accelerator() is CUDA with the simulated devices
  init_distributed deepspeed.init_distributed("nccl") (which binds the
                   device: every later new_group is an ncclCommSplit), then
                   an all_to_all_single through deepspeed.comm
  groups           deepspeed.utils.groups._create_expert_and_data_parallel(2):
                   the expert-parallel groups are consecutive ranks, the
                   expert-data-parallel ones strided, as its docstring says
  moe_forward      deepspeed.moe.sharded_moe._AllToAll (the MoE dispatch) on
                   a (ep, capacity, d_model) tensor in the expert group
  moe_backward     its backward: the gradient goes back through the inverse
                   all-to-all
  expert_grads     all_reduce of the expert gradients in the expert-data-
                   parallel group, as the engine does for expert parameters
  moe_steps        20 steps of dispatch, combine and backward
"""
import os

import torch

import deepspeed
import deepspeed.comm as ds_dist
from deepspeed.moe.sharded_moe import _AllToAll
from deepspeed.utils import groups

from torch_worker import DataError, Rank, check, chunk, sentinel, value

EP = 2
CAPACITY, D_MODEL = 3, 4


def tokens(src, dst, salt):
    """The (CAPACITY, D_MODEL) tokens rank src routes to expert rank dst."""
    return chunk(src, dst, CAPACITY * D_MODEL, torch.float32, salt).reshape(CAPACITY, D_MODEL)


def accelerator(R):
    acc = deepspeed.get_accelerator()
    want = int(os.environ["A2ASIM_DEVICES"])
    if acc.device_name() != "cuda" or acc.device_count() != want:
        raise DataError(f"accelerator {acc.device_name()!r} with {acc.device_count()} devices, "
                        f"want 'cuda' with {want}")
    return 1


def init_distributed(R):
    n = R.world
    send = torch.cat([chunk(R.rank, p, 2) for p in range(n)]).to(R.dev)
    out = sentinel(2 * n, torch.int64, R.dev)
    ds_dist.all_to_all_single(out, send)
    return check("deepspeed.comm all_to_all_single", out,
                 torch.cat([chunk(p, R.rank, 2) for p in range(n)]))


def create_groups(R):
    groups._create_expert_and_data_parallel(EP)
    name = f"ep_size_{EP}"
    ep_ranks = list(groups._get_expert_parallel_group_ranks(name))
    edp_ranks = list(groups._get_expert_data_parallel_group_ranks(name))
    first = R.rank - R.rank % EP
    want_ep = list(range(first, first + EP))
    want_edp = list(range(R.rank % EP, R.world, EP))
    if ep_ranks != want_ep or edp_ranks != want_edp:
        raise DataError(f"expert group {ep_ranks} (want {want_ep}), "
                        f"expert-data group {edp_ranks} (want {want_edp})")
    R.ep_group = groups._get_expert_parallel_group(name)
    R.edp_group = groups._get_expert_data_parallel_group(name)
    R.edp_ranks = edp_ranks
    if ds_dist.get_world_size(R.ep_group) != EP:
        raise DataError(f"expert group of size {ds_dist.get_world_size(R.ep_group)}, want {EP}")
    return len(ep_ranks) + len(edp_ranks)


def moe_step(R, salt, what):
    """Dispatch through _AllToAll in the expert group, check the received
    tokens and, after backward with a known gradient, the input's gradient."""
    me = ds_dist.get_rank(R.ep_group)
    x = torch.stack([tokens(me, e, salt) for e in range(EP)]).to(R.dev).requires_grad_()
    y = _AllToAll.apply(R.ep_group, x)
    checked = check(f"{what} forward", y.detach(), torch.stack([tokens(e, me, salt) for e in range(EP)]))
    # The gradient arriving at expert output y[e] (the tokens from rank e):
    # its backward all-to-all returns it to rank e.
    grad_y = torch.stack([tokens(e, me, salt + 1) for e in range(EP)])
    y.backward(grad_y.to(R.dev))
    want = torch.stack([tokens(me, e, salt + 1) for e in range(EP)])
    return checked + check(f"{what} backward", x.grad, want)


def moe_forward(R):
    me = ds_dist.get_rank(R.ep_group)
    x = torch.stack([tokens(me, e, 1) for e in range(EP)]).to(R.dev)
    y = _AllToAll.apply(R.ep_group, x)
    return check("moe_forward", y, torch.stack([tokens(e, me, 1) for e in range(EP)]))


def expert_grads(R):
    g = torch.tensor([value(R.rank, 0, i, 5) for i in range(6)], dtype=torch.float64).to(R.dev)
    ds_dist.all_reduce(g, group=R.edp_group)
    want = torch.tensor([sum(value(q, 0, i, 5) for q in R.edp_ranks) for i in range(6)],
                        dtype=torch.float64)
    return check("expert_grads", g, want)


def main():
    deepspeed.get_accelerator().set_device(int(os.environ["LOCAL_RANK"]))
    deepspeed.init_distributed(dist_backend="nccl")
    R = Rank(device_id=True, initialized=True)
    R.run("accelerator", accelerator, R)
    R.run("init_distributed", init_distributed, R)
    R.run("groups", create_groups, R)
    if not hasattr(R, "ep_group"):
        R.finish()
    R.run("moe_forward", moe_forward, R)
    R.run("moe_backward", moe_step, R, 2, "moe_backward")
    R.run("expert_grads", expert_grads, R)
    R.run("moe_steps", lambda: sum(moe_step(R, 10 + 2 * s, f"step {s}") for s in range(20)))
    R.finish()


if __name__ == "__main__":
    main()
