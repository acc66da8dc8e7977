"""Expected failures, each with its exit code (CLI.md): anything else is a bug."""

from __future__ import annotations

EXIT_OK = 0
EXIT_NOT_REPRODUCED = 1
EXIT_USAGE = 2
EXIT_INFRA = 3
EXIT_UNDECIDED = 4
EXIT_INTERRUPTED = 130
# The reader of stdout went away (`reprospec plan SPEC | head`): 128 + SIGPIPE, the status a
# shell gives a program the signal ended, as `seq 1000000 | head` gives seq.
EXIT_CLOSED_PIPE = 141


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
