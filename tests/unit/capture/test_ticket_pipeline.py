"""A log's bash report of a pipeline read as a live run of its command reads it: the
pipeline's first process is the command's program, a later one a child it fed."""

from __future__ import annotations

import pytest

from reprospec.capture.ticket import read_ticket


@pytest.mark.parametrize(
    ("report", "where"),
    [
        # `set -o pipefail; python3 crash.py 2>&1 | tee log.txt` (bash 5.2's words).
        (
            "run.sh: line 2: 25793 Segmentation fault      python3 crash.py 2>&1\n"
            "     25794 Done                    | tee log.txt\n",
            "main",
        ),
        # Its program no Python one: read as a child of the script, where the live run of
        # the command reads the main process (the pipeline's first).
        (
            "run.sh: line 2: 25793 Segmentation fault      ./train 2>&1\n"
            "     25794 Done                    | tee log.txt\n",
            "main",
        ),
        # `bash -c` of a pipeline: no `line N:` in its report, which no reader knew.
        (
            "bash: 20166 Segmentation fault      python3 crash.py 2>&1\n"
            "     20167 Done                    | tee log.txt\n",
            "main",
        ),
        # `set -o pipefail; seq 1 10 | python3 crash.py | cat`: the middle one died, a
        # child, whose line no reader knew ("no failure this reader knows").
        (
            "run.sh: line 2: 25853 Done                    seq 1 10\n"
            "     25854 Segmentation fault      | python3 crash.py\n"
            "     25855                       | cat\n",
            "child",
        ),
    ],
)
def test_a_pipelines_crash_in_a_log_is_read_as_a_live_run_reads_it(report: str, where: str) -> None:
    ticket = read_ticket(f"$ bash run.sh\n{report}")
    assert (ticket.failure.signal, ticket.failure.where) == ("SIGSEGV", where), ticket
