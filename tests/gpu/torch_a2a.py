#!/usr/bin/env python3
"""torch_a2a.py - PyTorch's real call patterns under the shim on one GPU
(tests/gpu/run.sh steps "torch-*"): torch.distributed over NCCL with
world_size=1.

    torch_a2a.py nowait   all_to_all_single(async_op=True), then a consumer
                          kernel reads the output without work.wait()
                          -> stream.unsynced-output at this file's consumer line
    torch_a2a.py wait     the same with work.wait() first -> no finding
    torch_a2a.py plain    a training step: forward, all_to_all_single
                          through an autograd function (DeepSpeed MoE's
                          _AllToAll: the transpose all-to-all runs in the
                          backward, on autograd's own thread), all_reduce of
                          the gradients, optimizer step -> no finding
    torch_a2a.py nonblocking  TORCH_NCCL_USE_COMM_NONBLOCKING=1 with
                          device_id (torch's non-blocking communicators and
                          their splits), two subgroups from new_group, an
                          all_to_all_single on each and an all_reduce; data
                          checked -> no finding

Prints one JSON line: torch and NCCL versions, the consumer's line number
(CONSUMER_LINE, for the run.sh assertion) and whether the data was right.
"""
import inspect
import json
import os
import sys

import torch
import torch.distributed as dist


class AllToAll(torch.autograd.Function):
    """The all-to-all as DeepSpeed MoE's _AllToAll has it: forward exchanges
    the tokens, backward exchanges their gradients back."""

    @staticmethod
    def forward(ctx, inp):
        out = torch.empty_like(inp)
        dist.all_to_all_single(out, inp.contiguous())
        return out

    @staticmethod
    def backward(ctx, grad):
        out = torch.empty_like(grad)
        dist.all_to_all_single(out, grad.contiguous())
        return out


def line_here():
    return inspect.currentframe().f_back.f_lineno


def main(mode):
    if mode == "nonblocking":
        os.environ["TORCH_NCCL_USE_COMM_NONBLOCKING"] = "1"
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda:0"))
    n = 1 << 22
    x = torch.arange(n, device="cuda", dtype=torch.float32)
    out = torch.full_like(x, -1.0)
    consumer_line = None
    ok = True
    if mode in ("nowait", "wait"):
        # Keep the NCCL stream busy so a consumer that does not wait really
        # overtakes the collective.
        torch.cuda._sleep(100_000_000)
        work = dist.all_to_all_single(out, x, async_op=True)
        if mode == "wait":
            work.wait()
        consumer_line = line_here() + 1
        y = out * 2.0  # the consumer kernel on the current stream
        torch.cuda.synchronize()
        ok = bool(torch.equal(y, x * 2.0))
        if mode == "nowait":
            ok = True  # the race may or may not corrupt; the finding is the test
    elif mode == "plain":
        torch.manual_seed(0)
        model = torch.nn.Linear(1024, 1024).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for _ in range(3):
            inp = torch.randn(64, 1024, device="cuda")
            h = model(inp)
            routed = AllToAll.apply(h)
            loss = routed.square().mean()
            opt.zero_grad()
            loss.backward()
            for p in model.parameters():
                dist.all_reduce(p.grad)
            opt.step()
        torch.cuda.synchronize()
        ok = bool(torch.isfinite(loss).item())
    elif mode == "nonblocking":
        # Two subgroups: torch makes them one after the other, each split
        # waited for (NCCL refuses a second split of a parent in progress).
        sub = dist.new_group([0])
        sub2 = dist.new_group([0])
        for group in (sub, None, sub2, sub):
            out.fill_(-1.0)
            dist.all_to_all_single(out, x, group=group)
            ok = ok and bool(torch.equal(out, x))
        y = x * 2.0
        dist.all_reduce(y, group=sub)
        torch.cuda.synchronize()
        ok = ok and bool(torch.equal(y, x * 2.0))
    else:
        print("unknown mode %s" % mode, file=sys.stderr)
        return 2
    nccl = torch.cuda.nccl.version()
    print(json.dumps({"mode": mode, "torch": torch.__version__,
                      "nccl": ".".join(str(v) for v in nccl) if isinstance(nccl, tuple) else str(nccl),
                      "consumer_line": consumer_line, "data_ok": ok}))
    print("CONSUMER_LINE=%s" % consumer_line)
    dist.destroy_process_group()
    return 0 if ok else 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "plain"))
