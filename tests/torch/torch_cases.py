"""torch_cases.py - what each torch test expects (tests/torch/torchtest.py
runs the job and calls CASES[name](job)). A case asserts torchrun's exit
status, the result lines the workers printed about their own data, and,
when the job ran under a2acheck, the findings by check name, rank and key
numbers (details fields, message text) and each worker's own exit status
from its a2acheck summary (torchrun reports a worker's 66 as its own 1).

Correct programs must produce no error and no warning finding (info is
fine).
"""

CORRECT_PATTERNS = [
    "a2a_equal", "a2a_unequal", "a2a_zero", "a2a_async", "a2a_async_unequal", "a2a_list",
    "batch_p2p", "subgroup", "ep_dp_groups", "reduce_scatter", "all_gather", "loop200",
    "side_stream", "record_stream",
]
DS_PATTERNS = [
    "accelerator", "init_distributed", "groups", "moe_forward", "moe_backward", "expert_grads",
    "moe_steps",
]


def correct(t, patterns=CORRECT_PATTERNS):
    t.torchrun_ok()
    t.all_patterns_ok(patterns)
    if t.shim:
        t.clean()
        t.worker_exit(range(t.nproc), 0, failed_now=False)


def deepspeed_moe(t):
    correct(t, DS_PATTERNS)


CASES = {f.__name__: f for f in (correct, deepspeed_moe)}
