"""What an attempt's GPU diagnostics found, read from its folder once (Evidence.gpu).

`environment.debug` (core/gpudebug.py) makes an attempt leave: compute-sanitizer's
report in `compute-sanitizer.log`, the driver's core-dump progress on stderr (and the
core, `cuda-core.*.nvcudmp`), the flight recorder's dumps `nccl-trace-rank-N`. Each is
read by its own module (sanitizerlog, cudacore, flightrecorder); this one gathers them,
names the kernel they blame (the signature gains it), and words them for the report,
which leads a failure with them: a CUDA fault's Python stack is usually not where the
fault is.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from reprospec.core import capped
from reprospec.core.frozen import frozen
from reprospec.core.gpudebug import (
    CUDA_GDB_FILES,
    DRIVER_COREDUMP_MARK,
    FLIGHT_RECORDER_PREFIX,
    SANITIZER_LOG,
)
from reprospec.core.words import noun

# The readers are imported where a dump was found: every attempt of every run looks, and
# almost none finds one (their patterns were a tenth of a one-attempt run's imports).
if TYPE_CHECKING:
    from reprospec.outcome.cudacore import CoreReading
    from reprospec.outcome.flightrecorder import RankTrace
    from reprospec.outcome.sanitizerlog import SanitizerReport

SANITIZER_BYTES = 4 * 1024 * 1024
MAX_RANK_FILES = 64
SHOWN_RECORDS = 3


@frozen
class GpuFindings:
    """The diagnostics' findings for one attempt; each None when that one left nothing."""

    sanitizer: SanitizerReport | None = None
    core: CoreReading | None = None
    ranks: tuple[RankTrace, ...] = ()
    unread: tuple[str, ...] = ()  # dumps that could not be read, and why

    @property
    def kernel(self) -> str | None:
        """The kernel they blame (short name); None when none is named for sure."""
        if self.sanitizer is not None and self.sanitizer.kernels:
            return self.sanitizer.kernels[0]
        if self.core is not None:
            return self.core.kernel_name
        return None

    @property
    def errors_found(self) -> bool:
        return bool(self.sanitizer and (self.sanitizer.records or self.sanitizer.errors))

    def headline(self) -> str | None:
        """One phrase for an outcome's detail: what the diagnostics blame."""
        if self.sanitizer is not None and self.errors_found:
            return f"compute-sanitizer: {self.sanitizer.headline()}"
        if self.core is not None and (self.core.exception or self.core.kernel):
            return f"CUDA core dump: {self.core.describe()}"
        if self.ranks:
            from reprospec.outcome import flightrecorder

            said = flightrecorder.behind(self.ranks)
            if said:
                return f"NCCL flight recorder: {said}"
        return None

    def markdown(self) -> str:
        """The findings as the report shows them, first in a failure."""
        lines: list[str] = []
        if self.sanitizer is not None:
            lines.append(f"- compute-sanitizer: {self.sanitizer.summary()}")
            for n, record in enumerate(self.sanitizer.records[:SHOWN_RECORDS]):
                lines.append(f"  - {record.describe()}")
                if n:
                    continue  # the first record in full; the next ones say who and where
                for detail in record.details[:2]:
                    lines.append(f"    - {detail}")
                shown = [f for f in record.host_frames if not _interpreter_frame(f)][-4:]
                if shown:
                    lines.append(f"    - launched from: {' <- '.join(shown)}")
            more = len(self.sanitizer.records) - SHOWN_RECORDS
            if more > 0:
                lines.append(f"  - and {more} more {noun(more, 'record')} in the log")
        if self.core is not None:
            text = f"- CUDA core dump ({self.core.source}): {self.core.describe()}"
            if self.core.kernel_name is None and self.core.warp == "exited":
                text += " (the warp had exited: the driver names no kernel)"
            lines.append(text)
            if self.core.problem:
                lines.append(f"  - {self.core.problem}")
        if self.ranks:
            from reprospec.outcome import flightrecorder

            lines.append(
                "- NCCL flight recorder: " + (flightrecorder.behind(self.ranks) or "no rank behind")
            )
            for trace in self.ranks:
                lines.append(f"  - {trace.describe()}")
        for problem in self.unread:
            lines.append(f"- not read: {problem}")
        return "\n".join(lines)


def _interpreter_frame(frame: str) -> bool:
    """CPython's own frames (`_PyEval_EvalFrameDefault [0x1db2ed] in python3`): noise here."""
    return frame.endswith(" in python3") or " in libc.so" in frame or frame.startswith("[")


def read(
    log_dir: Path | None, stderr: str, *, names: Iterable[str] | None = None
) -> GpuFindings | None:
    """The findings in an attempt folder and its stderr; None when there are none.

    `names`: the folder's listing where the caller has one (evidence.py), else it is listed.
    """
    sanitizer = core = None
    ranks: list[RankTrace] = []
    unread: list[str] = []
    if log_dir is not None:
        # One listing for the three kinds of dump: every attempt looks, almost none has one.
        if names is None:
            try:
                names = os.listdir(log_dir)  # noqa: PTH208 (names, not a Path each)
            except OSError:
                names = []
        listed = sorted(names)
        data = b""
        if SANITIZER_LOG in listed:
            with contextlib.suppress(OSError):
                data = capped.head_tail(log_dir / SANITIZER_LOG, SANITIZER_BYTES, SANITIZER_BYTES)
        if data:
            from reprospec.outcome.sanitizerlog import parse

            report = parse(data.decode("utf-8", "replace"))
            sanitizer = report if report.seen else None
        core = _cuda_gdb(log_dir) if CUDA_GDB_FILES[0] in listed else None
        dumps = [log_dir / n for n in listed if n.startswith(FLIGHT_RECORDER_PREFIX)]
        del dumps[MAX_RANK_FILES:]
        for path in dumps:
            from reprospec.outcome import flightrecorder

            trace = flightrecorder.read(path)
            if isinstance(trace, str):
                unread.append(trace)
            else:
                ranks.append(trace)
    if core is None and DRIVER_COREDUMP_MARK in stderr:  # one scan of the text, not one per line
        from reprospec.outcome.cudacore import read_driver

        core = read_driver(stderr)
    if sanitizer is None and core is None and not ranks and not unread:
        return None
    ranks.sort(key=lambda t: t.rank)
    return GpuFindings(sanitizer, core, tuple(ranks), tuple(unread))


def _cuda_gdb(log_dir: Path) -> CoreReading | None:
    out, err, rc = (log_dir / name for name in CUDA_GDB_FILES)
    if not out.is_file():
        return None
    texts = []
    for path in (out, err, rc):
        try:
            texts.append(capped.head_tail(path, 1 << 20, 0).decode("utf-8", "replace"))
        except OSError:
            texts.append("")
    status = texts[2].strip()
    from reprospec.outcome.cudacore import read_cuda_gdb

    return read_cuda_gdb(texts[0], texts[1], int(status) if status.lstrip("-").isdigit() else None)


__all__ = ["GpuFindings", "read"]
