"""Expected failures, each with its exit code (CLI.md): anything else is a bug."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

EXIT_OK = 0
EXIT_NOT_REPRODUCED = 1
EXIT_USAGE = 2
EXIT_INFRA = 3
EXIT_UNDECIDED = 4
EXIT_INTERRUPTED = 130
# The reader of stdout went away (`reprospec plan SPEC | head`): 128 + SIGPIPE, the status a
# shell gives a program the signal ended, as `seq 1000000 | head` gives seq.
EXIT_CLOSED_PIPE = 141


def suggest(word: str, known: Sequence[str]) -> list[str]:
    """The known words nearest to a mistyped one (difflib's ratio, as cibuildwheel does),
    for a usage error's did-you-mean: the CLI's verbs and options, a spec's axes."""
    import difflib  # only to word a mistake

    return difflib.get_close_matches(word, known, n=3, cutoff=0.6)


class FatalError(Exception):
    """An expected failure: printed as its message, no traceback."""

    exit_code = EXIT_USAGE


class UsageError(FatalError):
    """Bad command-line usage."""

    exit_code = EXIT_USAGE


class SpecError(FatalError):
    """One or more problems in spec files, each already located.

    `problems` are fully formatted lines: `file:line:col: path: message`.
    """

    exit_code = EXIT_USAGE

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class InfraError(FatalError):
    """The engine could not run anything: runner unavailable, image build failed."""

    exit_code = EXIT_INFRA


class InterruptedBeforeRun(KeyboardInterrupt):
    """A stop (Ctrl-C, SIGTERM) while the runner got the cells' environments ready (a venv
    runner's builds, a docker runner's images): the run was not in the store yet, so no
    attempt ran and nothing of the run was stored, and there is nothing to resume
    (exit 130 read as `--resume RUN` would finish it, with no RUN). The environments already
    built are kept: the same command reuses them. `resume_id` and `out`: the run a
    `--resume` was to finish (still as it was) and its store, else None."""

    def __init__(self, resume_id: str | None = None, out: Path | None = None) -> None:
        super().__init__()
        self.resume_id = resume_id
        self.out = out
