"""torch_worker.py - what every program of the torch suite (tests/torch) shares:
starting the rank, data that names its origin, checking it, and the result
lines that tests/torch/torchtest.py reads.

The simulator cannot run PyTorch's device kernels, so tensors are built on
the CPU and moved with .to()/.cpu() (copies), and every expected value is
computed on the CPU. An element of the chunk that rank `src` sends to rank
`dst` is `value(src, dst, i, salt)`: unique per (src, dst, index, salt), so a
wrong, shifted, stale or missing element is named exactly.

Result lines (stdout, one per pattern and rank, then one summary line):

    torchcheck: rank R/W pattern NAME: RESULT (DETAIL)
    torchcheck: rank R/W done: N patterns, F failed

RESULT is "ok" (every element checked and right), "WRONG" (a correct
program got wrong data: the test fails), or what a bug program observed
("race", "corrupt", ...). Pattern names must not contain spaces.
"""
import datetime
import os
import sys

import torch
import torch.distributed as dist

RESULT_PREFIX = "torchcheck:"


class Rank:
    """This process: global rank, world size, its device, and its results."""

    def __init__(self, device_id, initialized=False, timeout_s=None):
        """Sets the device of LOCAL_RANK and, unless the caller did it
        (initialized: deepspeed.init_distributed), init_process_group("nccl"),
        with device_id (eager communicator; new_group splits it) or without
        (each communicator created at its first collective), and with the
        process group's timeout (torch's watchdog) when timeout_s is given."""
        self.local = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(self.local)
        self.dev = torch.device("cuda", self.local)
        if not initialized:
            kw = {"timeout": datetime.timedelta(seconds=timeout_s)} if timeout_s else {}
            dist.init_process_group("nccl", device_id=self.dev if device_id else None, **kw)
        self.rank = dist.get_rank()
        self.world = dist.get_world_size()
        self.results = []

    def report(self, pattern, result, detail=""):
        self.results.append((pattern, result))
        tail = f" ({detail})" if detail else ""
        say(f"{RESULT_PREFIX} rank {self.rank}/{self.world} pattern {pattern}: {result}{tail}")

    def run(self, pattern, fn, *args, **kwargs):
        """Runs one pattern of a correct program: fn returns the number of
        elements it checked, or raises DataError at the first wrong one."""
        try:
            n = fn(*args, **kwargs)
        except DataError as e:
            self.report(pattern, "WRONG", str(e))
            return
        self.report(pattern, "ok", f"{n} elements checked")

    def finish(self):
        """Destroys the process groups, prints the summary line and exits 1
        if a pattern of a correct program got wrong data."""
        dist.destroy_process_group()
        failed = sum(1 for _, r in self.results if r == "WRONG")
        say(f"{RESULT_PREFIX} rank {self.rank}/{self.world} done: "
            f"{len(self.results)} patterns, {failed} failed")
        sys.exit(1 if failed else 0)


def say(line):
    """One line on stdout in one write: torchrun's workers share the pipe and
    run unbuffered (python -u), where print() writes the text and the newline
    separately and lines of different ranks interleave."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class DataError(Exception):
    """A received or computed element differs from the CPU reference."""


def value(src, dst, i, salt=0):
    """Element i of what src sends dst (as int64; exact in float32 while
    salt is 0 and i < 1000 on up to 16 ranks)."""
    return salt * 100_000_000 + src * 1_000_000 + dst * 1_000 + i


def chunk(src, dst, n, dtype=torch.int64, salt=0):
    """The n elements src sends dst, on the CPU."""
    return (torch.arange(n, dtype=torch.int64) + value(src, dst, 0, salt)).to(dtype)


def check(what, got, want):
    """Compares a result (any device) element by element with the CPU
    reference; raises DataError naming the first wrong elements."""
    got = got.cpu()
    if got.shape != want.shape:
        raise DataError(f"{what}: shape {tuple(got.shape)}, want {tuple(want.shape)}")
    if torch.equal(got, want):
        return want.numel()
    bad = (got != want).flatten().nonzero().flatten()[:6].tolist()
    g, w = got.flatten(), want.flatten()
    raise DataError(f"{what}: {int((got != want).sum())} of {want.numel()} elements wrong, "
                    f"first at {bad}: got {g[bad].tolist()} want {w[bad].tolist()}")


def sentinel(n, dtype, dev):
    """A device buffer of n elements that no correct exchange produces (-1),
    so an element the collective never wrote is seen as such."""
    return torch.full((n,), -1, dtype=dtype).to(dev)


def a2a_buffers(me, n, counts, dtype, dev, salt=0):
    """Send buffer, expected receive (CPU) and split lists of an
    all_to_all_single in which src sends counts(src, dst) elements to dst."""
    send = torch.cat([chunk(me, p, counts(me, p), dtype, salt) for p in range(n)])
    want = torch.cat([chunk(p, me, counts(p, me), dtype, salt) for p in range(n)])
    in_splits = [counts(me, p) for p in range(n)]
    out_splits = [counts(p, me) for p in range(n)]
    return send.to(dev), want, in_splits, out_splits
