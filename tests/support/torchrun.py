"""torchrun's recorded ChildFailedError report, as the ticket reader (test_ticket.py) and the
child-outcome reader (test_children.py) are given it: one copy, so both read the same text."""

from __future__ import annotations

# The root cause's rank line, as torchrun writes it on one node: global rank 1 is local rank 1.
ROOT_RANK = "  rank      : 1 (local_rank: 1)\n"


def child_failed_report(script: str = "train.py", root_rank: str = ROOT_RANK) -> str:
    """torchrun's report alone (a real `torchrun --nproc_per_node=2` of gloo ranks, trimmed):
    rank 1 exited 1, then torchrun sent SIGTERM to rank 0, whose entry (exitcode -15) comes
    first, before the root cause's. `root_rank` is the root cause's rank line ("" for none)."""
    return (
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
        "============================================================\n"
        f"{script} FAILED\n"
        "------------------------------------------------------------\n"
        "Failures:\n"
        "[1]:\n"
        "  rank      : 0 (local_rank: 0)\n"
        "  exitcode  : -15 (pid: 3158)  (SIGTERM)\n"
        "------------------------------------------------------------\n"
        "Root Cause (first observed failure):\n"
        "[0]:\n"
        f"{root_rank}"
        "  exitcode  : 1 (pid: 3159) \n"
        "============================================================\n"
    )
