"""Released versions of a package, from the index the user's configuration points at.

`pip index versions NAME --json` does the asking: it applies the user's pip
configuration (pip.conf, PIP_* variables) itself, and reprospec passes uv's
settings as pip options when the user configured uv instead (see
`envs.IndexConfig.pip_args`). No index is ever hard-coded. Requires-Python is
ignored on purpose: a release that does not support this Python is listed, and
the bisect reports it as skipped ("no wheel for this Python") instead of hiding it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from datetime import date, datetime, timedelta, timezone

from reprospec.core.caller import said
from reprospec.errors import InfraError, UsageError
from reprospec.venvs import IndexConfig

TIMEOUT_S = 180.0


def list_versions(name: str, index: IndexConfig, *, pre: bool = False) -> tuple[str, ...]:
    """Every version of `name` the configured index offers, oldest first (yanked ones left out)."""
    from packaging.version import InvalidVersion, Version

    argv = [
        sys.executable,
        "-m",
        "pip",
        "index",
        "versions",
        name,
        "--json",
        "--ignore-requires-python",
        "--disable-pip-version-check",
        *index.pip_args(),
    ]
    if pre:
        argv.append("--pre")
    try:
        # pip's error may quote an index's page or a path in any bytes: replaced.
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        raise InfraError(f"listing the versions of {name} timed out after {TIMEOUT_S:g}s") from exc
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
        detail = (lines or done.stderr.strip().splitlines() or ["no output"])[-1]
        if "No matching distribution" in detail:
            raise UsageError(f"{name} is not on the configured package index ({detail})")
        if "no such option: --json" in done.stderr:
            raise InfraError(
                f"cannot list the versions of {name}: the pip of {sys.executable} is older than "
                "25.1 (no `pip index versions --json`); `python -m pip install -U pip` there"
            )
        raise InfraError(f"cannot list the versions of {name}: {detail}")
    try:
        versions = [str(v) for v in json.loads(done.stdout)["versions"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise InfraError(f"pip index versions {name} printed no usable JSON ({exc})") from exc
    parsed = []
    for text in versions:
        try:
            parsed.append((Version(text), text))
        except InvalidVersion:
            continue  # not PEP 440: cannot be ordered, cannot be bisected
    return tuple(text for _, text in sorted(parsed))


def prerelease(text: str) -> bool:
    """Whether `text` names a pre-release (`26.0rc1`); False for what is no version, which
    `between` refuses with its own words."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(text).is_prerelease
    except InvalidVersion:
        return False


def between(
    versions: Sequence[str], good: str, bad: str, *, pre: bool = False, name: str = "the package"
) -> tuple[str, ...]:
    """The versions from `good` to `bad`, both included, in that direction.

    `good` may be newer than `bad` (bisecting for the release that fixed something
    is the same search read the other way). Pre-releases in between are left out
    unless `pre`; an end that is a pre-release is kept, since it was asked for.
    """
    from packaging.version import InvalidVersion, Version

    try:
        low, high = Version(good), Version(bad)
    except InvalidVersion as exc:
        raise UsageError(f"not a version: {exc}") from None
    by_version = {Version(v): v for v in versions}
    for end, label in ((low, said("--good", "good")), (high, said("--bad", "bad"))):
        if end not in by_version:
            near = sorted(by_version, key=lambda v: abs(_distance(v, end)))[:3]
            hint = ", ".join(by_version[v] for v in sorted(near))
            raise UsageError(
                f"{label} {end} is not a released version of {name} on the "
                f"configured index; nearby: {hint or 'none'}"
            )
    if low == high:
        raise UsageError(f"{said('--good and --bad', 'good and bad')} are the same version")
    ascending = low < high
    lo, hi = (low, high) if ascending else (high, low)
    chosen = [
        v
        for v in sorted(by_version)
        if lo <= v <= hi and (pre or not v.is_prerelease or v in (low, high))
    ]
    if not ascending:
        chosen.reverse()
    return tuple(by_version[v] for v in chosen)


def _distance(a: object, b: object) -> float:
    from packaging.version import Version

    assert isinstance(a, Version)
    assert isinstance(b, Version)
    parts_a = [*a.release, 0, 0, 0][:3]
    parts_b = [*b.release, 0, 0, 0][:3]
    return sum(
        (x - y) * 1000.0 ** (2 - i) for i, (x, y) in enumerate(zip(parts_a, parts_b, strict=True))
    )


def _by_date() -> str:
    """How a refusal of the days names them: the CLI's `--by-date START..END`, or the
    API's `good` and `bad` with `by_date=True`, where its caller typed no `--by-date`."""
    return said("--by-date", "by_date=True's good..bad")


def days_between(start: str, end: str) -> tuple[str, ...]:
    """`2024-03-01..2024-03-20` as the days from start to end, both included (for --by-date)."""
    try:
        first, last = date.fromisoformat(start), date.fromisoformat(end)
    except ValueError as exc:
        raise UsageError(f"{_by_date()} expects START..END as YYYY-MM-DD: {exc}") from None
    if first == last:
        raise UsageError(f"{_by_date()}: START and END are the same day")
    # Each day is the index as it stood at its end (UTC): a day to come is today's index,
    # so a range past today tested the same environment again and again (a range wholly
    # to come answered "the good end reproduces too" after building one per day).
    today = datetime.now(timezone.utc).date()
    if (later := max(first, last)) > today:
        raise UsageError(
            f"{_by_date()}: {later.isoformat()} is after today ({today.isoformat()}, UTC): "
            "the index of a day to come is today's; end the range at today at the latest"
        )
    step = 1 if first < last else -1
    days = [first + timedelta(days=i * step) for i in range(abs((last - first).days) + 1)]
    return tuple(d.isoformat() for d in days)
