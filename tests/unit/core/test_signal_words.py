"""torch's "DataLoader worker (pid N) is killed by signal: 11" (older torch, some wrappers:
the number, not torch's words) names SIGSEGV, as the live outcome reads it (a bundle's
run.sh reads the number too: tests/functional/export/test_run_sh_signals.py)."""

from __future__ import annotations

import pytest

from reprospec.core.signals import signal_from_words


@pytest.mark.parametrize(
    ("said", "signal"),
    [
        ("11", "SIGSEGV"),
        ("7", "SIGBUS"),
        ("SIGABRT", "SIGABRT"),
        ("Segmentation fault", "SIGSEGV"),
        ("Killed", "SIGKILL"),
        ("99", None),
        ("term", None),
        ("something else", None),
    ],
)
def test_signal_from_words(said: str, signal: str | None) -> None:
    assert signal_from_words(said) == signal
