"""cuda_graph.py - collectives inside torch.cuda.graph (ProcessGroupNCCL runs
them on its own stream, which joins the capture; NCCL makes them graph
nodes, and every replay is a new operation of the communicator). Run by
torchrun on the simulator (tests/torch/torchtest.py), eager communicator.

    cuda_graph.py ok        each pattern captures after a warm-up on a side
                            stream (torch's documented recipe) and checks
                            every replay's data:
                              graph_all_reduce  an all_reduce replayed 3 times
                              graph_all_to_all  an all_to_all_single replayed 3 times
                              graph_vs_eager    rank 0 replays a captured
                                                all_reduce 3 times, the
                                                others make the same call
                                                eagerly 3 times (correct:
                                                replays match eager calls)
                            then an eager all_reduce of another size
    cuda_graph.py short R   rank R replays its captured all_reduce (64
                            elements) once less than the others, then all
                            make an eager all_reduce of 32: R's meets the
                            others' last replay (a2acheck:
                            size.collective-mismatch naming the replay,
                            group.deadlock, exit 66)
    cuda_graph.py alive     every rank keeps its graph (a captured
                            all_reduce, replayed) alive at
                            destroy_process_group: NCCL's finalize waits
                            for the graph, so the call blocks until a
                            timer thread resets the graph 3 s later
                            (without it, forever; a2acheck:
                            group.use-after-destroy before the call)
"""
import sys
import threading

import torch
import torch.distributed as dist

from torch_worker import DataError, Rank

N = 64


def capture(fn):
    """torch.cuda.graph's recipe: warm up on a side stream, then capture."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g


def check(got, want):
    if not torch.equal(got, want):
        bad = (got != want).nonzero().flatten().tolist()
        raise DataError(f"{len(bad)} of {want.numel()} elements wrong, first {bad[:4]}: "
                        f"got {got[bad[:4]].tolist()} want {want[bad[:4]].tolist()}")
    return want.numel()


def graph_all_reduce(R):
    x = torch.zeros(N, device=R.dev)
    g = capture(lambda: dist.all_reduce(x))
    n = 0
    for i in range(3):
        x.copy_(torch.full((N,), float(R.rank + 1 + i)))
        g.replay()
        torch.cuda.synchronize()
        n += check(x.cpu(), torch.full((N,), float(sum(r + 1 + i for r in range(R.world)))))
    return n


def graph_all_to_all(R):
    k = 4
    x = torch.zeros(k * R.world, device=R.dev)
    y = torch.zeros(k * R.world, device=R.dev)
    g = capture(lambda: dist.all_to_all_single(y, x))
    n = 0
    for i in range(3):
        x.copy_(torch.arange(k * R.world, dtype=torch.float32) + 100 * R.rank + 1000 * i)
        g.replay()
        torch.cuda.synchronize()
        want = torch.cat([torch.arange(k * R.rank, k * R.rank + k, dtype=torch.float32) + 100 * p + 1000 * i
                          for p in range(R.world)])
        n += check(y.cpu(), want)
    return n


def graph_vs_eager(R):
    x = torch.zeros(N, device=R.dev)
    if R.rank == 0:
        g = capture(lambda: dist.all_reduce(x))  # (its warm-up: 2 eager calls)
        run = g.replay
    else:
        for _ in range(2):  # the same 2 calls as rank 0's warm-up
            dist.all_reduce(x)
        run = lambda: dist.all_reduce(x)
    n = 0
    for i in range(3):
        x.copy_(torch.full((N,), 1.0))
        run()
        torch.cuda.synchronize()
        n += check(x.cpu(), torch.full((N,), float(R.world)))
    return n


def eager_after(R):
    z = torch.ones(N // 2).to(R.dev)  # (made on the host: the simulator runs no fill kernel)
    dist.all_reduce(z)
    return check(z.cpu(), torch.full((N // 2,), float(R.world)))


def main():
    mode = sys.argv[1]
    R = Rank(device_id=True)
    if mode == "ok":
        for p in (graph_all_reduce, graph_all_to_all, graph_vs_eager, eager_after):
            R.run(p.__name__, p, R)
    elif mode == "alive":
        x = torch.ones(N).to(R.dev)
        g = capture(lambda: dist.all_reduce(x))
        for _ in range(3):
            g.replay()
        torch.cuda.synchronize()
        threading.Timer(3.0, g.reset).start()  # (the bug's hang, ended for the test)
        R.finish()
    else:  # short RANK
        who = int(sys.argv[2])
        x = torch.ones(N).to(R.dev)
        g = capture(lambda: dist.all_reduce(x))
        for _ in range(2 if R.rank == who else 3):
            g.replay()
        torch.cuda.synchronize()
        R.run("eager_after", eager_after, R)
    R.finish()


if __name__ == "__main__":
    main()
