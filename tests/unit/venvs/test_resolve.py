"""venvs/resolve.py's reading of `uv pip compile`, uv itself stubbed: no process is started.

`run_uv` is stubbed as resolve calls it (`_answering`); its own stop of uv and the build
backends uv started, on a timeout or a Ctrl-C, is tested with a real uv in
tests/functional/venvs/test_uv_stopped.py."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import pytest

from reprospec.venvs import build
from reprospec.venvs import resolve as resolving
from reprospec.venvs.index import IndexConfig

Answer = Callable[..., subprocess.CompletedProcess[str]]


def _answering(monkeypatch: pytest.MonkeyPatch, ran: Answer) -> None:
    """resolve's `run_uv` answered by `ran`, called with uv's whole command line and
    run_uv's keywords but its timeout; `ran` raises UvTimeout where uv ran past it, as run_uv
    does (resolve reads its class, not its message: run_uv's own message and stop of uv are
    tested in tests/functional/venvs/test_uv_stopped.py)."""

    def run_uv(
        args: list[str], *, timeout: float, **kwargs: object
    ) -> subprocess.CompletedProcess[str]:
        del timeout  # (run_uv's own: resolve's answer says the timeout it gave)
        return ran(["/bin/uv", *args], **kwargs)

    monkeypatch.setattr(resolving, "run_uv", run_uv)


def test_uv_missing_is_not_read_as_a_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every EnvBuildError of run_uv was read as "took over 120s" of an index that did not
    # answer, which left every other list of doctor's venv-packages unasked. The real run_uv
    # and resolve run: only uv's lookup fails, inside run_uv's `try`.
    def missing() -> NoReturn:
        raise build.EnvBuildError("uv is not installed: pip install uv")

    def started(*_: object, **__: object) -> NoReturn:
        raise AssertionError("a process was started")

    monkeypatch.setattr(build, "uv_binary", missing)
    monkeypatch.setattr(subprocess, "Popen", started)
    answer = resolving.resolve("/py/bin/python", ["six==1"], IndexConfig())
    assert answer == resolving.Resolved("unknown", "uv is not installed: pip install uv")
    assert not answer.stopped


def test_uv_past_the_timeout_is_a_uv_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    def slow(*_: object, **__: object) -> NoReturn:
        raise build.UvTimeout("uv ran past its timeout")

    _answering(monkeypatch, slow)
    answer = resolving.resolve("/py/bin/python", ["six==1"], IndexConfig(), timeout_s=5.0)
    assert answer.state == "unknown"
    assert answer.said == "uv pip compile took over 5s"
    # A slow resolve as often as a silent index: not said to be the index's.
    assert answer.stopped == "timed_out"


def test_a_package_named_like_the_network_has_no_solution(monkeypatch: pytest.MonkeyPatch) -> None:
    # uv's output names the packages: "offline" among the network's words read this "No
    # solution found" as an index that did not answer, and doctor warned where the build
    # would fail (review).
    said = (
        "  × No solution found when resolving dependencies:\n"
        "  ╰─▶ Because offline-foo was not found in the package registry and you require\n"
        "      offline-foo==99, we can conclude that your requirements are unsatisfiable.\n"
    )

    def ran(argv: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(argv, 1, "", said)

    _answering(monkeypatch, ran)
    answer = resolving.resolve("/py/bin/python", ["offline-foo==99"], IndexConfig())
    assert (answer.state, answer.stopped) == ("unsatisfiable", "")
    # uv's own offline words still say the index was not reached.
    said = (
        "  × No solution found when resolving dependencies:\n"
        "  ╰─▶ Because six was not found in the cache and you require six==99, we can\n"
        "      conclude that your requirements are unsatisfiable.\n"
    )
    answer = resolving.resolve("/py/bin/python", ["six==99"], IndexConfig())
    assert (answer.state, answer.stopped) == ("unknown", "unreached")


def test_an_sdist_not_fetched_for_its_build_is_not_a_failed_build(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The list resolved and a distribution it picked has no wheel here, so doctor builds
    it: where that build's download timed out (its sdist, or what it requires to build, not
    fetched), the build never ran, and `could not build` failed doctor of the network's
    words. uv's answers are recorded ones, by step."""
    no_wheel = (
        "error: No solution found when resolving dependencies\n"
        "  cause: Because halfbuilt==1.0 has no usable wheels and you require halfbuilt==1.0,"
        " we can conclude that your requirements are unsatisfiable.\n"
    )
    unfetched = (
        "error: Failed to fetch: `http://127.0.0.1:9/simple/setuptools/`\n"
        "  cause: error sending request for url (http://127.0.0.1:9/simple/setuptools/)\n"
        "  cause: operation timed out\n"
    )

    def ran(argv: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        if "--only-binary" in argv:
            return subprocess.CompletedProcess(argv, 1, "", no_wheel)
        if argv[1:3] == ["pip", "install"]:
            return subprocess.CompletedProcess(argv, 1, "", unfetched)
        return subprocess.CompletedProcess(argv, 0, "halfbuilt==1.0\n", "")

    _answering(monkeypatch, ran)
    answer = resolving.resolve("/py/bin/python", ["halfbuilt==1.0"], IndexConfig())
    assert (answer.state, answer.stopped) == ("unknown", "unreached"), answer
    assert "operation timed out" in answer.said


def test_a_path_entrys_build_past_the_timeout_says_it_built_from_that_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `./mypkg` resolved, then its build ran past the timeout: it said "building ./mypkg
    # from its sdist took over 5s", of an entry that has no sdist. And a build still running
    # there is slow, not failed: it is said so, and how long it ran (`slow`: doctor's todo
    # was to run `uv pip compile` to see an error there is none of).
    def ran(argv: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        if argv[1:3] == ["pip", "install"]:
            raise build.UvTimeout("uv ran past its timeout")
        return subprocess.CompletedProcess(argv, 0, "mypkg @ file:///src/mypkg\n", "")

    _answering(monkeypatch, ran)
    answer = resolving.resolve("/py/bin/python", ["./mypkg"], IndexConfig(), timeout_s=5.0)
    assert (answer.state, answer.said, answer.slow) == (
        "unknown",
        "building ./mypkg from that path was still running after 5 s, where doctor stops (a "
        "slow build, not a failed one: the run's build waits 60 min for it)",
        True,
    ), answer


@pytest.mark.parametrize(
    ("slow_step", "said"),
    [
        ("--only-binary", "uv pip compile --only-binary (which have no wheel) took over 5s"),
        ("venv", "uv venv (to build in) took over 60s"),
    ],
)
def test_a_step_after_the_resolve_past_its_timeout_is_not_the_resolves(
    monkeypatch: pytest.MonkeyPatch, slow_step: str, said: str
) -> None:
    # The resolve answered; then `_no_wheel`'s own `pip compile` (or the venv to build in)
    # ran past its timeout: it was said as "uv pip compile took over 5s", stopped
    # `timed_out`, which doctor counts towards asking no more lists (review).
    no_wheel = "error: Because halfbuilt==1.0 has no usable wheels and you require it\n"

    def ran(argv: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        if slow_step in argv:
            raise build.UvTimeout("uv ran past its timeout")
        if "--only-binary" in argv:
            return subprocess.CompletedProcess(argv, 1, "", no_wheel)
        return subprocess.CompletedProcess(argv, 0, "halfbuilt==1.0\n", "")

    _answering(monkeypatch, ran)
    answer = resolving.resolve("/py/bin/python", ["halfbuilt==1.0"], IndexConfig(), timeout_s=5.0)
    assert answer == resolving.Resolved("unknown", said)


def test_the_builds_share_one_venv(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each distribution with no wheel, and each path entry, got a fresh folder and a fresh
    # `uv venv`, though every install is `--no-deps` into a venv thrown away (review).
    no_wheel = "error: Because {}==1.0 has no usable wheels and you require it\n"
    steps: list[str] = []

    def ran(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        steps.append(argv[1] if argv[1] == "venv" else " ".join(argv[1:3]))
        if "--only-binary" in argv:  # uv names the first of those left
            first = str(kwargs["input"]).split("==", 1)[0]
            return subprocess.CompletedProcess(argv, 1, "", no_wheel.format(first))
        return subprocess.CompletedProcess(argv, 0, "halfbuilt==1.0\nother==1.0\n", "")

    _answering(monkeypatch, ran)
    packages = ["halfbuilt==1.0", "other==1.0", "./mypkg"]
    answer = resolving.resolve("/py/bin/python", packages, IndexConfig())
    assert answer == resolving.Resolved("ok", built=("halfbuilt==1.0", "other==1.0", "./mypkg"))
    assert steps.count("venv") == 1, steps
    assert steps.count("pip install") == 3, steps


@pytest.mark.parametrize("failing_step", ["--only-binary", "venv", "install"])
def test_a_step_after_the_resolve_that_cannot_start_is_unknown(
    monkeypatch: pytest.MonkeyPatch, failing_step: str
) -> None:
    # The resolve answered; then a step of the sdists' build could not be started (ENOMEM
    # on fork): the OSError escaped `resolve`, and doctor died of a traceback (review).
    no_wheel = "error: Because halfbuilt==1.0 has no usable wheels and you require it\n"

    def ran(argv: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        if failing_step in argv:
            raise OSError(12, "Cannot allocate memory")
        if "--only-binary" in argv:
            return subprocess.CompletedProcess(argv, 1, "", no_wheel)
        return subprocess.CompletedProcess(argv, 0, "halfbuilt==1.0\n", "")

    _answering(monkeypatch, ran)
    answer = resolving.resolve("/py/bin/python", ["halfbuilt==1.0"], IndexConfig())
    assert answer.state == "unknown", answer
    assert "Cannot allocate memory" in answer.said, answer


def test_a_path_entry_keyed_in_part_is_said_unrecorded(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Past SOURCE_FILES_CAP files its key is partial: built, never recorded (Built.add), and
    # the answer says so, which doctor tells (it was rebuilt at every doctor, no word why).
    monkeypatch.setattr(build, "SOURCE_FILES_CAP", 2)
    for n in range(3):
        (tmp_path / "mypkg").mkdir(exist_ok=True)
        (tmp_path / "mypkg" / f"m{n}.py").write_text(f"N = {n}\n")

    def ran(argv: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(argv, 0, f"mypkg @ {tmp_path.as_uri()}/mypkg\n", "")

    _answering(monkeypatch, ran)
    kept = resolving.Built(
        tmp_path / "envs" / ".built", build.Interpreter("/py/bin/python", "3.11.7")
    )
    answer = resolving.resolve(
        "/py/bin/python", ["./mypkg"], IndexConfig(), cwd=tmp_path, kept=kept
    )
    assert answer == resolving.Resolved("ok", built=("./mypkg",), unrecorded=("./mypkg",)), answer
