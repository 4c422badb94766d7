"""bug_split.py - all_to_all_single with split sizes that disagree between
sender and receiver (the classic MoE bug: a stale or locally computed split
table), on 4 ranks. Run by torchrun on the simulator
(tests/torch/torchtest.py); each rank checks what it received against what
it believed it would receive and reports "ok" or "corrupt".

Patterns (float32 / int64 elements, one chunk-sized step each):
  alltoall_vs_sendrecv  every rank sends and receives 2 elements per peer
                        with equal splits (ProcessGroupNCCL: ncclAlltoAll),
                        except rank 1, which believes rank 0 sends it 3 and
                        passes split lists (a grouped ncclSend/ncclRecv
                        loop): rank 0 sends 8 B, rank 1 receives 12 B
  sendrecv_vs_sendrecv  unequal splits everywhere (send/recv loops on every
                        rank), but rank 3 believes rank 2 sends it 2
                        elements more than it does: 24 B (3 x int64)
                        sent, 40 B (5) received

NCCL receives a message smaller than the receive buffer into its first
bytes and leaves the rest as it was (the simulator: stale slot content), so
the receiving rank sees a wrong tail; nothing hangs.
"""
import torch
import torch.distributed as dist

from torch_worker import Rank, chunk, sentinel


def exchange(R, name, sends, believes, dtype, equal):
    """sends(s, d): what s really sends d; believes(s, d): what d thinks it
    receives from s (equal: call without split lists)."""
    me, n = R.rank, R.world
    inp = torch.cat([chunk(me, p, sends(me, p), dtype) for p in range(n)]).to(R.dev)
    out_splits = [believes(p, me) for p in range(n)]
    out = sentinel(sum(out_splits), dtype, R.dev)
    if equal:
        dist.all_to_all_single(out, inp)
    else:
        dist.all_to_all_single(out, inp, out_splits, [sends(me, p) for p in range(n)])
    got = out.cpu()
    want = torch.cat([chunk(p, me, out_splits[p], dtype) for p in range(n)])
    if torch.equal(got, want):
        R.report(name, "ok", f"{want.numel()} elements as expected")
        return
    bad = (got != want).nonzero().flatten().tolist()
    R.report(name, "corrupt", f"elements {bad} of {want.numel()}: got {got[bad].tolist()} "
             f"want {want[bad].tolist()}")


def main():
    R = Rank(device_id=True)
    if R.world != 4:
        raise SystemExit("bug_split.py runs on 4 ranks")
    believes = lambda s, d: 3 if (s, d) == (0, 1) else 2
    exchange(R, "alltoall_vs_sendrecv", lambda s, d: 2, believes, torch.float32,
             equal=R.rank != 1)
    sends = lambda s, d: 1 + (s + d) % 3
    believes = lambda s, d: sends(s, d) + (2 if (s, d) == (2, 3) else 0)
    exchange(R, "sendrecv_vs_sendrecv", sends, believes, torch.int64, equal=False)
    R.finish()


if __name__ == "__main__":
    main()
