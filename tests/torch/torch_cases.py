"""torch_cases.py - what each torch test expects (tests/torch/torchtest.py
runs the job and calls CASES[name](job)). A case asserts torchrun's exit
status, the result lines the workers printed about their own data, and,
when the job ran under a2acheck, the findings by check name, rank and key
numbers (details fields, message text) and each worker's own exit status
from its a2acheck summary (torchrun reports a worker's 66 as its own 1).

Correct programs must produce no error and no warning finding (info is
fine). Bug programs must produce the findings of their bug and no other
error; their warnings are those the correct programs are held to already.
"""

import os
import re

CORRECT_PATTERNS = [
    "a2a_equal", "a2a_unequal", "a2a_zero", "a2a_async", "a2a_async_unequal", "a2a_list",
    "batch_p2p", "subgroup", "ep_dp_groups", "reduce_scatter", "all_gather", "loop200",
    "side_stream", "record_stream",
]
DS_PATTERNS = [
    "accelerator", "init_distributed", "groups", "moe_forward", "moe_backward", "expert_grads",
    "moe_steps",
]


# correct.py runs hundreds of collectives of a few bytes each on purpose
# (every pattern on tiny tensors, so each rank can check every element):
# perf.small-messages is right to name that (on a GPU each one costs its
# launch latency), and whether the estimated saving reaches
# A2ACHECK_PERF_MIN_GAIN of the measured communication time depends on the
# simulator's load. It is the one warning a correct program may get.
CORRECT_MAY_WARN = {"perf.small-messages"}


def line_of(program, text):
    """The 1-based number of the first line of tests/torch/PROGRAM that
    contains TEXT (sites are checked against the program as it is)."""
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), program)) as fh:
        for n, line in enumerate(fh, 1):
            if text in line:
                return n
    return -1



def correct(t, patterns=CORRECT_PATTERNS):
    t.torchrun_ok()
    t.all_patterns_ok(patterns)
    if t.shim:
        t.only(CORRECT_MAY_WARN)
        no_other_errors(t, set())
        t.worker_exit(range(t.nproc), 0, failed_now=False)


def deepspeed_moe(t):
    correct(t, DS_PATTERNS)


def no_other_errors(t, checks):
    if not t.shim:
        return
    bad = [f for f in t.findings if f.get("severity") == "error" and f.get("check") not in checks]
    t.expect(not bad, f"no error finding besides {', '.join(sorted(checks))}",
             "; ".join(f"rank {f.get('rank')} {f.get('check')}" for f in bad))


def split_mismatch(t):
    """bug_split.py on 4 ranks: rank 1 expects 3 float32 from rank 0, which
    sends 2 (ncclAlltoAll against a send/recv loop); rank 3 expects 5 int64
    from rank 2, which sends 3 (send/recv loops on both sides)."""
    t.torchrun_ok()
    t.results_are(["alltoall_vs_sendrecv"], "corrupt", ranks=[1])
    t.results_are(["alltoall_vs_sendrecv"], "ok", ranks=[0, 2, 3])
    t.results_are(["sendrecv_vs_sendrecv"], "corrupt", ranks=[3])
    t.results_are(["sendrecv_vs_sendrecv"], "ok", ranks=[0, 1, 2])
    if not t.shim:
        return
    split_mismatch_findings(t)
    t.worker_exit(range(4), 0, failed_now=False)


def split_mismatch_findings(t):
    """bug_split.py's two mismatches, each in the logs of both its ranks."""
    t.finding("size.p2p-mismatch", [0, 1], sender=0, receiver=1, send_bytes=8, recv_bytes=12,
              send_count=2, recv_count=3, send_dtype="float32", recv_dtype="float32",
              send_api="ncclAlltoAll", recv_api="ncclRecv",
              text=["rank 0 sends 8 B (2 x float32) to rank 1",
                    "rank 1 receives 12 B (3 x float32) from rank 0"])
    t.finding("size.p2p-mismatch", [2, 3], sender=2, receiver=3, send_bytes=24, recv_bytes=40,
              send_count=3, recv_count=5, send_dtype="int64", send_api="ncclSend", recv_api="ncclRecv",
              text=["rank 2 sends 24 B (3 x int64) to rank 3", "rank 3 receives 40 B (5 x int64)"])
    t.expect(len(t.find("size.p2p-mismatch")) == 4,
             "exactly these two mismatches, each logged by both of its ranks",
             f"{len(t.find('size.p2p-mismatch'))} size.p2p-mismatch lines")
    no_other_errors(t, {"size.p2p-mismatch"})


def missing_rank(f):
    """The process a group.deadlock/group.hang verdict names as missing."""
    d = f.get("details") or {}
    return next((p for p in d.get("processes", []) if p.get("pid") == d.get("missing_pid")), {})


def deadlock_on(t, ranks, missing=None, cycle=None, text=(), check="group.deadlock"):
    """Each rank in ranks logged a verdict of check whose missing process is
    global rank `missing` (None: not asserted) and whose cycle flag is cycle."""
    for r in ranks:
        hits = t.find(check, rank=r, severity="error", text=text)
        t.expect(hits, f"rank {r}: error {check}" + (f" with {list(text)}" if text else ""),
                 "; ".join(f"{f.get('check')}: {f.get('message', '')[:300]}"
                           for f in t.findings if f.get("rank") == r) or "no findings")
        if not hits:
            continue
        f = hits[0]
        if missing is not None:
            m = missing_rank(f)
            t.expect(m.get("global_rank") == missing, f"rank {r}: {check} names global rank "
                     f"{missing} as the missing process", m or f.get("details"))
        if cycle is not None:
            t.expect(f["details"].get("cycle") is cycle, f"rank {r}: {check} cycle={cycle}",
                     f["details"].get("cycle"))
    return [t.find(check, rank=r) for r in ranks]


def skip_exit(t):
    """bug_skip.py exit 3 on 4 ranks: rank 3 leaves after step 0."""
    t.torchrun_failed()
    t.results_are(["step0"], "ok")
    for r in range(3):
        t.expect("step1" not in t.results.get(r, {}), f"rank {r} never finished step 1")
    t.expect(t.done.get(3) == (1, 0), "rank 3 finished after 1 step", t.done.get(3))
    if not t.shim:
        return
    deadlock_on(t, [0, 1, 2], missing=3, cycle=False,
                text=["global rank 3", "exited after posting 1 receive"])
    t.finding("size.unmatched-p2p", [0, 1, 2], text=["rank 3", "ncclAlltoAll(count 2, float32)"])
    no_other_errors(t, {"group.deadlock", "size.unmatched-p2p"})
    t.worker_exit([0, 1, 2], 66, failed_now=True)
    t.worker_exit([3], 0, failed_now=False)


def skip_abort(t):
    """bug_skip.py abort 1 on 2 ranks: rank 1 skips step 1 and exits 8 s
    later; rank 0's all-to-all times out after 3 s and torch's watchdog
    aborts the communicator (and, by default, the process: SIGABRT). The
    abort releases the deadlock a2acheck would prove, and rank 1 exits after
    rank 0: rank 0 is told at the abort which rank had not posted."""
    t.results_are(["step0"], "ok")
    t.expect("step1" not in t.results.get(1, {}), "rank 1 skipped step 1")
    if not t.shim:
        return
    t.finding("size.unmatched-p2p", [0],
              text=["rank 0 ended communicator", "with ncclCommAbort with an operation still unmatched",
                    "rank 1 had not posted the matching receive", "bug_skip.py"])
    no_other_errors(t, {"size.unmatched-p2p"})


def skip_abort_ar(t):
    """bug_skip.py abort_ar 1 on 2 ranks: skip_abort with all_reduce steps."""
    t.results_are(["step0"], "ok")
    t.expect("step1" not in t.results.get(1, {}), "rank 1 skipped step 1")
    if not t.shim:
        return
    t.finding("group.hang", [0],
              text=["rank 0 ended communicator", "with ncclCommAbort while its collective #2 ncclAllReduce",
                    "rank 1 had posted only 1 collective on it", "bug_skip.py"])
    no_other_errors(t, {"group.hang"})


def skip_continue(t):
    """bug_skip.py continue 1 on 2 ranks: rank 1 skips step 2 (3 elements per
    peer) and makes step 3 (4 elements) against rank 0's step 2."""
    t.torchrun_failed()
    t.results_are(["step0", "step1"], "ok")
    t.results_are(["step2"], "corrupt", ranks=[0])
    t.results_are(["step3"], "corrupt", ranks=[1])
    t.expect("step3" not in t.results.get(0, {}), "rank 0 never finished step 3")
    if not t.shim:
        return
    for r in (0, 1):
        hits = [f for f in t.find("size.collective-mismatch", rank=r, severity="error",
                                  send_api="ncclAlltoAll", recv_api="ncclAlltoAll")
                if {f["details"].get("send_count"), f["details"].get("recv_count")} == {3, 4}]
        t.expect(hits, f"rank {r}: size.collective-mismatch between ncclAlltoAll(count 4) of "
                 "rank 1 and ncclAlltoAll(count 3) of rank 0",
                 "; ".join(f.get("message", "")[:300] for f in t.find("size.collective-mismatch")))
        if hits:
            t.expect("rank 1 calls ncclAlltoAll(count 4, float32)" in hits[0]["message"] and
                     "rank 0 calls ncclAlltoAll(count 3, float32)" in hits[0]["message"],
                     f"rank {r}: the message names both calls", hits[0]["message"][:400])
    deadlock_on(t, [0], missing=1, cycle=False, text=["ncclAlltoAll(count 4, float32)"])
    no_other_errors(t, {"group.deadlock", "size.unmatched-p2p", "size.collective-mismatch"})
    t.worker_exit([0], 66, failed_now=True)
    t.worker_exit([1], 0, failed_now=False)


def sleep(t):
    """bug_skip.py sleep 1 3 600 on 2 ranks with A2ACHECK_STALL_WARNING=1 and
    A2ACHECK_HANG_TIMEOUT=8: a 3 s stall that ends, then a hang."""
    t.torchrun_failed()
    t.results_are(["step0", "step1"], "ok")
    t.expect("step2" not in t.results.get(0, {}), "rank 0 never finished step 2")
    if not t.shim:
        return
    stalls = t.find("group.stall", rank=0, severity="warning",
                    text=["global rank 1", "may still post it", "ncclAlltoAll(count 2, float32)"])
    t.expect(stalls, "rank 0: group.stall during rank 1's first sleep (step 1 then completed)",
             "; ".join(f.get("message", "")[:300] for f in t.find("group.stall")))
    for f in stalls:
        t.expect(missing_rank(f).get("global_rank") == 1 and missing_rank(f).get("alive"),
                 "group.stall names global rank 1, alive, as the awaited process", f.get("details"))
    # The second stall (step 2) is logged too, although rank 0 waits at the
    # same call site both times (the cudaStreamSynchronize of out.cpu()):
    # each stall is its own finding (docs/checks.md, group.stall).
    t.expect(len(t.find("group.stall", rank=0)) >= 2, "rank 0 logged both stalls",
             f"{len(t.find('group.stall', rank=0))} group.stall line(s) in rank 0's log")
    deadlock_on(t, [0], missing=1, cycle=False, check="group.hang",
                text=["no rank made progress for 8 s", "global rank 1", "may still post it"])
    t.no_finding("group.deadlock")
    no_other_errors(t, {"group.hang"})
    t.worker_exit([0], 66, failed_now=True)


def nowait(t):
    """bug_nowait.py 0 on 2 ranks: rank 0 posts 2 s late."""
    t.torchrun_ok()
    t.results_are(["forgot_wait"], "race", ranks=[1])
    t.expect(t.results.get(0, {}).get("forgot_wait", ("",))[0] in ("race", "unobserved"),
             "rank 0 pattern forgot_wait: race or unobserved", t.results.get(0))
    t.results_are(["no_record_stream"], "corrupt")
    # What rank 1 sent is overwritten before the queued all-to-all reads it;
    # whether the late rank 0's own tensor is too depends on whether its
    # collective ran before its own upload (the docstring of bug_nowait.py).
    for r in (0, 1):
        d = t.results.get(r, {}).get("no_record_stream", ("", ""))[1]
        m = re.search(r"from ranks \[([\d, ]*)\]", d)
        srcs = {int(x) for x in m.group(1).split(",") if x.strip()} if m else set()
        t.expect(1 in srcs and srcs <= {0, 1}, f"rank {r}: what rank 1 sent was overwritten", d)
    if not t.shim:
        return
    # (.cpu() copies into pageable memory: the copy returns when it is done,
    # so the reader is the host, through it.)
    t.finding("stream.unsynced-output", [1], operation="ncclAlltoAll", buffer={"bytes": 64},
              later={"what": "the host through cudaMemcpyAsync", "access": "reads"},
              text=["the host through cudaMemcpyAsync on the legacy default stream (device 1) reads", "+64)",
                    "work.wait()"])
    t.finding("stream.free-in-flight", [1], operation="ncclAlltoAll", buffer={"bytes": 4096},
              later={"what": "cudaMemcpyAsync", "access": "writes"}, text=["cudaMemcpyAsync on the legacy default stream (device 1) writes", "+4096)",
                    "record_stream"])
    no_other_errors(t, {"stream.unsynced-output", "stream.free-in-flight"})
    t.worker_exit([0, 1], 0, failed_now=False)


def group_order(t):
    """bug_groups.py on 4 ranks: rank 1 creates Y = [0, 1, 3] before X = [0, 1, 2]."""
    t.torchrun_failed()
    t.expect(not any(t.results.values()), "no all-to-all completed", t.results)
    if not t.shim:
        return
    verdicts = deadlock_on(t, range(4), cycle=True, text=["wait-for cycle", "4 processes involved"])
    for r, hits in enumerate(verdicts):
        if hits:
            comms = {c["comm"] for p in hits[0]["details"].get("processes", []) for c in p.get("comms", [])}
            t.expect(len(comms) >= 2, f"rank {r}: the cycle runs through two communicators", comms)
    no_other_errors(t, {"group.deadlock"})
    t.worker_exit(range(4), 66, failed_now=True)


def ds_epsize(t):
    """bug_ds_epsize.py 4 2 on 4 ranks: ranks 0-1 make 5 splits, ranks 2-3 four."""
    t.torchrun_failed()
    t.results_are(["expert_a2a"], "ok", ranks=[2, 3])
    for r in range(4):
        t.expect("expert_grads" not in t.results.get(r, {}), f"rank {r} never finished its all_reduce")
    if not t.shim:
        return
    deadlock_on(t, range(4), cycle=True,
                text=["ncclCommSplit #5", "(it has made 4)", "ncclAllReduce(count 1, int64)"])
    no_other_errors(t, {"group.deadlock"})
    t.worker_exit(range(4), 66, failed_now=True)


def coordinator_outlived(t):
    """The host of the coordinator (rank 0) exited normally before the
    verdict, and nothing of the job was left behind (the lingering
    coordinator ended with its last client)."""
    t.worker_exit([0], 0, failed_now=False)
    t.expect(not re.search(r"^torchtest: killed processes the launcher left behind", t.out, re.M),
             "no process of the job was left behind",
             re.findall(r"^torchtest: .*(?:left behind|ended after).*$", t.out, re.M))


def ds_epsize_coordinator_exits(t):
    """bug_ds_epsize.py 2 4: ranks 0-1 finish and exit, ranks 2-3 wait in
    split #5 for them; rank 0's process hosted the coordinator (run with
    A2ACHECK_HANG_CONFIRM=8: the verdict comes after it exited)."""
    t.torchrun_failed()
    if not t.shim:
        return
    deadlock_on(t, [2, 3], text=["ncclCommSplit #5", "(it has made 4)"])
    t.worker_exit([2, 3], 66, failed_now=True)
    coordinator_outlived(t)


def skip_exit_rank0(t):
    """bug_skip.py exit 0 on 2 ranks: rank 0 (whose process hosts the
    coordinator) leaves after step 0 and exits (run with
    A2ACHECK_HANG_CONFIRM=8: the verdict comes after it exited)."""
    t.torchrun_failed()
    if not t.shim:
        return
    deadlock_on(t, [1], missing=0, cycle=False)
    t.worker_exit([1], 66, failed_now=True)
    coordinator_outlived(t)


def tool_deadlock(t):
    """a2acheck run --sim -- torchrun ... bug_skip.py exit 1 on 2 ranks."""
    t.expect(t.status == 66, f"a2acheck run exited 66 (got {t.status})")
    result = re.search(r"^result: .*$", t.out, re.M)
    line = result[0] if result else "no result line"
    t.expect(result and "errors (deadlock)" in line and "the command exited 1;" in line,
             "the report's result line: a deadlock, and torchrun exited 1", line)
    deadlock_on(t, [0], missing=1, cycle=False)
    # How long each thread has been blocked is measured from its call (the
    # blocking copy of .cpu() is a hot call whose event carries no time).
    blocked = [int(ms) for ms in re.findall(r"is blocked in .*? for (\d+) ms", t.out)]
    t.expect(blocked and all(0 < ms < 120000 for ms in blocked),
             "blocked threads: durations between 0 and the job's length", blocked)
    # ... and named by the Python line that blocks: `got = out.cpu()`.
    sites = re.findall(r"is blocked in \S+ at (.*?) for \d+ ms", t.out)
    cpu_line = line_of("bug_skip.py", "got = out.cpu()")
    t.expect(sites and all(re.search(r"bug_skip\.py:%d\)$" % cpu_line, x) for x in sites),
             f"the blocked thread's site is the .cpu() line of bug_skip.py ({cpu_line})", sites)
    t.worker_exit([0], 66, failed_now=True)
    t.worker_exit([1], 0, failed_now=False)


def tool_split(t):
    """a2acheck run --sim --fail-on error -- torchrun ... bug_split.py on 4
    ranks: the merged report names the check, both ranks of each pair and
    both Python lines (the all_to_all_single call in exchange(), reached
    from main()), and the run fails (66) although nothing hung: every
    worker's A2ACHECK_FAIL_ON=error turns its 0 into 66, torchrun reports
    that as 1, a2acheck run as 66."""
    t.expect(t.status == 66, f"a2acheck run --fail-on error exited 66 (got {t.status})")
    result = re.search(r"^result: .*$", t.out, re.M)
    line = result[0] if result else "no result line"
    t.expect(result and "the command exited 1;" in line and "A2ACHECK_FAIL_ON=error matched" in line,
             "the report's result line: the failure policy matched, torchrun exited 1", line)
    # One merged finding per pair, both ranks named, both sides' Python sites.
    blocks = re.split(r"\n(?=\[\d+\] )", t.out)
    for pair in ("ranks 0,1", "ranks 2,3"):
        b = next((x for x in blocks if "size.p2p-mismatch" in x.split("\n", 1)[0] and pair in x.split("\n", 1)[0]), "")
        t.expect(b, f"a merged size.p2p-mismatch finding for {pair}",
                 "finding headers: " + "; ".join(x.split("\n", 1)[0] for x in blocks if x.startswith("[")))
        if b:
            t.expect(re.search(r"bug_split\.py:\d+", b) and "exchange" in b,
                     f"{pair}: the finding names the Python call site (exchange in bug_split.py:LINE)",
                     b[:600])
    split_mismatch_findings(t)
    # Each worker's summary: the policy matched. torchrun SIGTERMs the others
    # when the first exits 66 at its end, so a rank still on its way out may
    # have written no summary: then it was killed (-15) with its finding logged.
    for r in range(4):
        s = t.summaries.get(r)
        if s is None:
            code = t.torchrun_exit.get(t.pid_of.get(r))
            t.expect(code == -15 and t.find("size.p2p-mismatch", rank=r),
                     f"rank {r}: no summary, so killed by torchrun after another worker's 66, "
                     "its finding logged", f"torchrun: exit {code}")
            continue
        t.expect(s.get("fail_matched") and s.get("exit_status") == 0,
                 f"rank {r}: the application's status 0, A2ACHECK_FAIL_ON=error matched (so 66)",
                 f"fail_matched {s.get('fail_matched')}, exit_status {s.get('exit_status')}")


def tool_clean(t):
    """a2acheck run --sim -- torchrun ... correct.py lazy on 2 ranks."""
    t.expect(t.status == 0, f"a2acheck run exited 0 (got {t.status})")
    result = re.search(r"^result: .*$", t.out, re.M)
    line = result[0] if result else "no result line"
    t.expect(re.match(r"result: (no findings|\d+ findings?: 0 errors, \d+ warnings?, \d+ info);", line)
             and "the command exited 0;" in line,
             'the report\'s result line: "no findings" (or 0 errors), torchrun exited 0', line)
    t.all_patterns_ok(CORRECT_PATTERNS)
    t.only(CORRECT_MAY_WARN)
    no_other_errors(t, set())
    t.worker_exit(range(t.nproc), 0, failed_now=False)


GRAPH_PATTERNS = ["graph_all_reduce", "graph_all_to_all", "graph_vs_eager", "eager_after"]


def graphs(t):
    """cuda_graph.py ok: collectives captured by torch.cuda.graph and
    replayed, and replays against eager calls: correct, no finding."""
    correct(t, GRAPH_PATTERNS)


def graph_short(t):
    """cuda_graph.py short 1 on 2 ranks: rank 1 replays its captured
    all_reduce (64 elements) twice, rank 0 three times; rank 1's eager
    all_reduce of 32 meets rank 0's third replay."""
    t.torchrun_failed()
    t.expect(not any("eager_after" in r for r in t.results.values()),
             "no rank finished its eager all_reduce", t.results)
    if not t.shim:
        return
    t.finding("size.collective-mismatch", [0, 1],
              text=["rank 1 calls ncclAllReduce(count 32, float32, sum)",
                    "rank 0 calls ncclAllReduce(count 64, float32, sum; a cudaGraphLaunch's replay "
                    "of the captured call)", "cuda_graph.py"])
    deadlock_on(t, [0, 1], text=["known cause"])
    no_other_errors(t, {"group.deadlock", "size.collective-mismatch"})
    t.worker_exit([0, 1], 66, failed_now=True)


def graph_alive(t):
    """cuda_graph.py alive on 2 ranks: destroy_process_group while each
    rank's graph holding an all_reduce is alive (NCCL's finalize waits for
    it; a timer thread resets it 3 s later so the job ends)."""
    t.torchrun_ok()
    if not t.shim:
        return
    t.finding("group.use-after-destroy", [0, 1],
              text=["while 1 graph exec still holds its captured operations",
                    "the first an ncclAllReduce", "before destroy_process_group"])
    no_other_errors(t, {"group.use-after-destroy"})


CASES = {f.__name__: f for f in (
    correct, deepspeed_moe, split_mismatch, skip_exit, skip_abort, skip_abort_ar, skip_continue, sleep, nowait, group_order,
    ds_epsize, ds_epsize_coordinator_exits, skip_exit_rank0, tool_deadlock, tool_split, tool_clean,
    graphs, graph_short, graph_alive)}
