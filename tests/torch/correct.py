"""correct.py - correct torch.distributed programs, run by torchrun on the
simulator (tests/torch/torchtest.py). Every rank checks every element it
received or computed against a CPU reference and prints one result line per
pattern (torch_worker.py). Under a2acheck these must produce no error and no
warning finding.

    correct.py device_id|lazy

device_id: init_process_group(device_id=...) creates the NCCL communicator
at once, and every new_group() is an ncclCommSplit of it; lazy: no device_id,
each communicator is created (ncclCommInitRank through the store) at its
first collective.

Patterns, in this order on every rank:
  a2a_equal          all_to_all_single, equal splits (ncclAlltoAll)
  a2a_unequal        per-peer split sizes differing in both directions
                     (ProcessGroupNCCL: a grouped ncclSend/ncclRecv loop)
  a2a_zero           unequal splits with empty pairs; the last rank
                     receives nothing at all
  a2a_async          async_op=True, then work.wait() before the output is read
  a2a_async_unequal  the same with unequal splits
  a2a_list           all_to_all with tensor lists of unequal sizes
  batch_p2p          batch_isend_irecv: a ring, then every pair
  subgroup           new_group of the even ranks, all_to_all_single in it
  ep_dp_groups       expert- and expert-data-parallel groups created in
                     DeepSpeed's order (all ranks create every group);
                     all_to_all_single in the expert group, all_reduce in
                     the data-parallel one
  reduce_scatter     reduce_scatter_tensor (sum)
  all_gather         all_gather_into_tensor
  loop200            200 MoE steps: an all-to-all of the token counts, the
                     dispatch all-to-all with those splits, and the combine
                     all-to-all back; every step checked
  side_stream        all_to_all_single on a torch.cuda.Stream ordered with
                     wait_stream both ways
  record_stream      the inputs of all-to-alls on a side stream are dropped
                     while the side stream still waits (rank 0 posts 0.5 s
                     late), protected by record_stream; a tensor of the same
                     size is allocated and written at once
"""
import sys
import time

import torch
import torch.distributed as dist

from torch_worker import Rank, a2a_buffers, check, chunk, sentinel, value


def exchange(R, name, counts, dtype, group=None, async_op=False, salt=0):
    """One all_to_all_single in group (ranks of the group) where src sends
    counts(src, dst) elements to dst; returns the elements checked."""
    me, n = dist.get_rank(group), dist.get_world_size(group)
    inp, want, in_splits, out_splits = a2a_buffers(me, n, counts, dtype, R.dev, salt)
    equal = len(set(in_splits)) == 1 and len(set(out_splits)) == 1
    out = sentinel(want.numel(), dtype, R.dev)
    work = dist.all_to_all_single(out, inp, None if equal else out_splits,
                                  None if equal else in_splits, group=group, async_op=async_op)
    if async_op:
        work.wait()
    return check(name, out, want)


def a2a_list(R):
    me, n = R.rank, R.world
    counts = lambda s, d: 1 + (s + 2 * d) % 4
    inputs = [chunk(me, p, counts(me, p)).to(R.dev) for p in range(n)]
    outputs = [sentinel(counts(p, me), torch.int64, R.dev) for p in range(n)]
    dist.all_to_all(outputs, inputs)
    return sum(check(f"a2a_list from {p}", outputs[p], chunk(p, me, counts(p, me)))
               for p in range(n))


def batch_p2p(R):
    me, n = R.rank, R.world
    nxt, prv = (me + 1) % n, (me - 1) % n
    # A ring: send to the next rank, receive from the previous one.
    send = chunk(me, nxt, 5, torch.float32).to(R.dev)
    recv = sentinel(5, torch.float32, R.dev)
    reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, send, nxt),
                                   dist.P2POp(dist.irecv, recv, prv)])
    for q in reqs:
        q.wait()
    checked = check("batch_p2p ring", recv, chunk(prv, me, 5, torch.float32))
    # Every pair, sizes by pair.
    ops, recvs = [], {}
    for p in range(n):
        if p == me:
            continue
        ops.append(dist.P2POp(dist.isend, chunk(me, p, 2 + me + p).to(R.dev), p))
        recvs[p] = sentinel(2 + me + p, torch.int64, R.dev)
        ops.append(dist.P2POp(dist.irecv, recvs[p], p))
    for q in dist.batch_isend_irecv(ops):
        q.wait()
    for p, t in recvs.items():
        checked += check(f"batch_p2p from {p}", t, chunk(p, me, 2 + me + p))
    return checked


def subgroup(R):
    evens = list(range(0, R.world, 2))
    sub = dist.new_group(evens)
    if R.rank not in evens:
        return 0
    return exchange(R, "subgroup", lambda s, d: 2 + d, torch.int64, group=sub)


def ep_dp_groups(R):
    """The groups of deepspeed.utils.groups._create_expert_and_data_parallel
    (E + D, no model parallelism), created with plain torch in its order."""
    w = R.world
    ep = 2 if w < 8 else 4
    ep_group = edp_group = None
    edp_ranks = []
    for i in range(ep):
        ranks = list(range(i, w, ep))
        g = dist.new_group(ranks)
        if R.rank in ranks:
            edp_group, edp_ranks = g, ranks
    for i in range(w // ep):
        ranks = list(range(i * ep, (i + 1) * ep))
        g = dist.new_group(ranks)
        if R.rank in ranks:
            ep_group = g
    checked = exchange(R, "ep all_to_all_single", lambda s, d: 1 + (s * 3 + d) % 4,
                       torch.float32, group=ep_group)
    x = torch.tensor([value(R.rank, 0, i) for i in range(3)], dtype=torch.int64).to(R.dev)
    dist.all_reduce(x, group=edp_group)
    want = torch.tensor([sum(value(q, 0, i) for q in edp_ranks) for i in range(3)],
                        dtype=torch.int64)
    return checked + check("edp all_reduce", x, want)


def reduce_scatter(R):
    me, n, k = R.rank, R.world, 6
    # Rank r contributes chunk(r, p, k) to the block of rank p.
    inp = torch.cat([chunk(me, p, k) for p in range(n)]).to(R.dev)
    out = sentinel(k, torch.int64, R.dev)
    dist.reduce_scatter_tensor(out, inp, op=dist.ReduceOp.SUM)
    want = sum(chunk(r, me, k) for r in range(n))
    return check("reduce_scatter", out, want)


def all_gather(R):
    me, n, k = R.rank, R.world, 5
    inp = chunk(me, 0, k, torch.float64).to(R.dev)
    out = sentinel(n * k, torch.float64, R.dev)
    dist.all_gather_into_tensor(out, inp)
    return check("all_gather", out, torch.cat([chunk(r, 0, k, torch.float64) for r in range(n)]))


def loop200(R, steps=200):
    """An MoE layer's communication: each step, every rank tells every other
    how many tokens it sends (an all-to-all of counts), sends them (dispatch)
    and gets them back (combine)."""
    me, n = R.rank, R.world
    checked = 0
    for step in range(steps):
        counts = lambda s, d: (7 * s + 3 * d + step) % 5
        inp, want, in_splits, out_splits = a2a_buffers(me, n, counts, torch.int64, R.dev, salt=step)
        cnt_send = torch.tensor(in_splits, dtype=torch.int64).to(R.dev)
        cnt_recv = sentinel(n, torch.int64, R.dev)
        dist.all_to_all_single(cnt_recv, cnt_send)
        got_splits = cnt_recv.cpu()
        checked += check(f"step {step} counts", got_splits, torch.tensor(out_splits, dtype=torch.int64))
        out = sentinel(want.numel(), torch.int64, R.dev)
        dist.all_to_all_single(out, inp, got_splits.tolist(), in_splits)
        checked += check(f"step {step} dispatch", out, want)
        back = sentinel(inp.numel(), torch.int64, R.dev)
        dist.all_to_all_single(back, out, in_splits, got_splits.tolist())
        checked += check(f"step {step} combine", back, inp.cpu())
    return checked


def side_stream(R):
    me, n = R.rank, R.world
    s = torch.cuda.Stream()
    inp, want, _, _ = a2a_buffers(me, n, lambda a, b: 4, torch.int32, R.dev, salt=3)
    s.wait_stream(torch.cuda.current_stream())  # the input's copy is done
    with torch.cuda.stream(s):
        out = torch.empty(want.numel(), dtype=torch.int32, device=R.dev)
        dist.all_to_all_single(out, inp)
    torch.cuda.current_stream().wait_stream(s)  # the output is complete
    return check("side_stream", out, want)


def record_stream(R, late_s=0.5):
    """The allocator-reuse hazard, made real: rank 0 posts late, so on the
    other ranks a first all-to-all on the side stream waits for it and a
    second one, queued behind it, has not read its input when the host drops
    that input and allocates a tensor of the same size, which it writes at
    once. record_stream makes the allocator keep the block until the side
    stream is done (bug_nowait.py's no_record_stream is the same without)."""
    me, n, k = R.rank, R.world, 64
    s = torch.cuda.Stream()
    first = torch.cat([chunk(me, p, k, salt=4) for p in range(n)]).to(R.dev)
    second = torch.cat([chunk(me, p, k, salt=5) for p in range(n)]).to(R.dev)
    out1 = torch.empty(n * k, dtype=torch.int64, device=R.dev)
    out2 = torch.empty(n * k, dtype=torch.int64, device=R.dev)
    s.wait_stream(torch.cuda.current_stream())
    if me == 0:
        time.sleep(late_s)
    with torch.cuda.stream(s):
        dist.all_to_all_single(out1, first)
        dist.all_to_all_single(out2, second)
    first.record_stream(s)
    second.record_stream(s)
    del first, second
    reuse = sentinel(n * k, torch.int64, R.dev)  # written at once on the current stream
    torch.cuda.current_stream().wait_stream(s)
    checked = check("record_stream first", out1, torch.cat([chunk(p, me, k, salt=4) for p in range(n)]))
    checked += check("record_stream second", out2, torch.cat([chunk(p, me, k, salt=5) for p in range(n)]))
    return checked + check("record_stream reuse", reuse, torch.full((n * k,), -1, dtype=torch.int64))


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "lazy"
    if mode not in ("device_id", "lazy"):
        sys.exit(f"usage: correct.py device_id|lazy (got {mode!r})")
    R = Rank(device_id=mode == "device_id")
    w = R.world
    R.run("a2a_equal", exchange, R, "a2a_equal", lambda s, d: 4, torch.int64)
    R.run("a2a_unequal", exchange, R, "a2a_unequal", lambda s, d: 1 + (3 * s + d) % 5, torch.int64)
    R.run("a2a_zero", exchange, R, "a2a_zero",
          lambda s, d: 0 if d == w - 1 or (s + d) % 2 == 0 else s + d, torch.int32)
    R.run("a2a_async", exchange, R, "a2a_async", lambda s, d: 3, torch.float32, async_op=True)
    R.run("a2a_async_unequal", exchange, R, "a2a_async_unequal", lambda s, d: 2 + s,
          torch.float64, async_op=True)
    R.run("a2a_list", a2a_list, R)
    R.run("batch_p2p", batch_p2p, R)
    R.run("subgroup", subgroup, R)
    R.run("ep_dp_groups", ep_dp_groups, R)
    R.run("reduce_scatter", reduce_scatter, R)
    R.run("all_gather", all_gather, R)
    R.run("loop200", loop200, R)
    R.run("side_stream", side_stream, R)
    R.run("record_stream", record_stream, R)
    R.finish()


if __name__ == "__main__":
    main()
