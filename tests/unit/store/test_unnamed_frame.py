"""compare and the run's signatures: a native frame one side could not name (`??@python3.11`,
an image's Python without symbols) is no evidence of another crash."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reprospec import native
from reprospec.core.results import CellResult
from reprospec.report.signatures import signatures_of
from reprospec.store.compare import _cell_change
from tests.support.runs import segfault_matrix

NAMED = "crash:SIGSEGV:main:os_kill_impl@libpython3.11"
UNNAMED = "crash:SIGSEGV:main:??@python3.11"


def _crashed(signature: str) -> CellResult:
    cell = segfault_matrix().cells[3]
    attempt = cell.attempts[0]
    assert attempt.ran is not None
    ran = replace(attempt.ran, signature=signature)
    return replace(cell, attempts=(replace(attempt, outcome=ran, native="#### native"),))


def test_an_unnamed_frame_against_a_named_one_is_no_changed_outcome() -> None:
    """It read `outcome changed: crash:SIGSEGV:main:os_kill_impl@libpython3.11 x1 ->
    crash:SIGSEGV:main:??@python3.11 x1`, a venv run against a docker run of one os.kill."""
    assert _cell_change(_crashed(NAMED), _crashed(UNNAMED)) is None
    assert _cell_change(_crashed(UNNAMED), _crashed(NAMED)) is None


@pytest.mark.parametrize(
    "other",
    [
        "crash:SIGABRT:main:os_kill_impl@libpython3.11",  # another signal
        "crash:SIGSEGV:worker:os_kill_impl@libpython3.11",  # another process
        "crash:SIGSEGV:main:validation:strlen@libc",  # a stage the unnamed one lacks
    ],
)
def test_an_unnamed_frame_still_tells_another_crash_apart(other: str) -> None:
    change = _cell_change(_crashed(UNNAMED), _crashed(other))
    assert change is not None
    assert change["change"] == "outcome changed"
    assert not native.agrees(UNNAMED, other, native_unknown=False, across_builds=True)


def test_unnamed_agrees_with_one_frame_only() -> None:
    assert native.agrees(UNNAMED, NAMED, native_unknown=False, across_builds=True)
    assert native.agrees(NAMED, UNNAMED, native_unknown=False, across_builds=True)
    # A C++ frame's `::` is no field of the signature; the GPU kernel's part must match.
    kernel = "crash:SIGSEGV:main:??@libtorch_cuda:kernel=k1"
    assert native.unnamed_agrees(
        kernel, "crash:SIGSEGV:main:at::native::f@libtorch_cuda:kernel=k1", across_builds=True
    )
    assert not native.unnamed_agrees(
        kernel, "crash:SIGSEGV:main:f@libtorch_cuda:kernel=k2", across_builds=True
    )
    assert not native.unnamed_agrees(NAMED, "crash:SIGSEGV:main:strlen@libc", across_builds=True)


def test_the_runs_signatures_count_an_unnamed_frame_under_the_named_one() -> None:
    cells = [
        _crashed(NAMED),
        replace(_crashed(UNNAMED), cell=replace(_crashed(NAMED).cell, id="b")),
    ]
    signature_of = signatures_of(cells)
    assert {signature_of(c.attempts[0]) for c in cells} == {NAMED}


@pytest.mark.parametrize(
    ("unnamed", "named"),
    [
        # Another library without symbols (cuDNN) is another crash site, not torch's frame.
        ("crash:SIGSEGV:main:??@libcudnn", "crash:SIGSEGV:main:foo@libtorch_cpu"),
        # The unnamed side's caller is known, and it is not the named side's.
        ("crash:SIGSEGV:main:??@python3.11<-a@liba", "crash:SIGSEGV:main:b@libb<-c@libc"),
        ("crash:SIGSEGV:main:??@python3.11<-a@liba", "crash:SIGSEGV:main:b@libpython3.11<-c@libc"),
        ("crash:SIGSEGV:main:??@python3.11<-??@liba", "crash:SIGSEGV:main:b@python3.11<-c@libc"),
        # The interpreter is not any library.
        ("crash:SIGSEGV:main:??@python3.11", "crash:SIGSEGV:main:strlen@libc"),
    ],
)
def test_an_unnamed_frame_in_another_library_or_under_another_caller_disagrees(
    unnamed: str, named: str
) -> None:
    assert not native.unnamed_agrees(unnamed, named, across_builds=True)
    assert not native.agrees(unnamed, named, native_unknown=False, across_builds=True)
    assert not native.agrees(named, unnamed, native_unknown=False, across_builds=True)


@pytest.mark.parametrize(
    "named",
    [
        "crash:SIGSEGV:main:os_kill_impl@libpython3.11<-a@liba",
        "crash:SIGSEGV:main:os_kill_impl@python3.11<-a@liba",
    ],
)
def test_an_unnamed_interpreter_frame_agrees_under_the_same_caller(named: str) -> None:
    for unnamed in (
        "crash:SIGSEGV:main:??@python3.11<-a@liba",
        "crash:SIGSEGV:main:??@libpython3.11<-??@liba",
        "crash:SIGSEGV:main:??@python3.11",  # its caller not read
    ):
        assert native.unnamed_agrees(unnamed, named, across_builds=True), unnamed


def _in(cell: CellResult, cell_id: str, native_text: str = "#### native") -> CellResult:
    attempt = replace(cell.attempts[0], native=native_text)
    return replace(cell, cell=replace(cell.cell, id=cell_id), attempts=(attempt,))


UNREAD = "_native stacks unavailable: no core file (another crash in the folder replaced it)_"


def test_an_unread_crash_counts_under_the_runs_unnamed_frame() -> None:
    """A docker run of an image's Python without symbols, its attempts in parallel: those
    whose core was read said `??@python3.11`, those whose core another replaced said
    `crash:SIGSEGV:main`; the report listed two failures of the one os.kill."""
    cells = [_in(_crashed(UNNAMED), "a"), _in(_crashed("crash:SIGSEGV:main"), "b", UNREAD)]
    signature_of = signatures_of(cells)
    assert {signature_of(c.attempts[0]) for c in cells} == {UNNAMED}
    # With a named frame in the run too, both count under the named one.
    cells.append(_in(_crashed(NAMED), "c"))
    signature_of = signatures_of(cells)
    assert {signature_of(c.attempts[0]) for c in cells} == {NAMED}


def test_the_runs_signatures_keep_unnamed_frames_of_two_libraries_apart() -> None:
    other = "crash:SIGSEGV:main:??@libcudnn"
    cells = [
        _in(_crashed(UNNAMED), "a"),
        _in(_crashed(other), "b"),
        # ??@libcudnn is another crash site than foo@libtorch_cpu: which was it is unknown
        _in(_crashed("crash:SIGSEGV:main"), "c", UNREAD),
        _in(_crashed("crash:SIGSEGV:main:foo@libtorch_cpu"), "d"),
    ]
    signature_of = signatures_of(cells)
    assert [signature_of(c.attempts[0]) for c in cells] == [
        UNNAMED,
        other,
        "crash:SIGSEGV:main",
        "crash:SIGSEGV:main:foo@libtorch_cpu",
    ]


def test_an_unread_crash_beside_an_unnamed_site_and_another_named_one_is_ambiguous() -> None:
    """Read `??@libcudnn` and `foo@libtorch_cpu`, two sites: an unread crash was counted
    under the named one, though it fits the unnamed one as well."""
    cells = [
        _in(_crashed("crash:SIGSEGV:main:??@libcudnn"), "a"),
        _in(_crashed("crash:SIGSEGV:main:foo@libtorch_cpu"), "b"),
        _in(_crashed("crash:SIGSEGV:main"), "c", UNREAD),
    ]
    signature_of = signatures_of(cells)
    assert signature_of(cells[2].attempts[0]) == "crash:SIGSEGV:main"
    # An unnamed frame that agrees with the named one is that one site.
    cells[0] = _in(_crashed(UNNAMED), "a")
    cells[1] = _in(_crashed(NAMED), "b")
    signature_of = signatures_of(cells)
    assert [signature_of(c.attempts[0]) for c in cells] == [NAMED, NAMED, NAMED]


def test_two_unnamed_frames_that_agree_do_not_take_each_others_signature() -> None:
    other = "crash:SIGSEGV:main:??@libpython3.11"
    cells = [_in(_crashed(UNNAMED), "a"), _in(_crashed(other), "b")]
    signature_of = signatures_of(cells)
    assert [signature_of(c.attempts[0]) for c in cells] == [UNNAMED, other]


NAMED_CALLER = "crash:SIGSEGV:main:strlen@libc<-inner_len@libcrash"


@pytest.mark.parametrize(
    "unnamed",
    [
        # A library stripped on one machine, built with symbols on another.
        "crash:SIGSEGV:main:strlen@libc<-??@libcrash",
        # Both unnamed at once (libc without its symbols too).
        "crash:SIGSEGV:main:??@libc<-??@libcrash",
    ],
)
def test_an_unnamed_caller_agrees_with_the_named_one_of_its_library(unnamed: str) -> None:
    """Only the top frame's lack of a name was unknown: `strlen@libc<-??@libcrash` read
    as another crash than `strlen@libc<-inner_len@libcrash`, in the run's report, compare
    and every rate (minimize, isolate, capture's verify)."""
    assert native.unnamed_frame(unnamed)
    assert native.unnamed_agrees(unnamed, NAMED_CALLER, across_builds=True)
    assert native.agrees(unnamed, NAMED_CALLER, native_unknown=False, across_builds=True)
    assert native.agrees(NAMED_CALLER, unnamed, native_unknown=False, across_builds=True)
    assert _cell_change(_crashed(NAMED_CALLER), _crashed(unnamed)) is None
    cells = [_in(_crashed(NAMED_CALLER), "a"), _in(_crashed(unnamed), "b")]
    signature_of = signatures_of(cells)
    assert {signature_of(c.attempts[0]) for c in cells} == {NAMED_CALLER}


@pytest.mark.parametrize(
    "other",
    [
        "crash:SIGSEGV:main:strlen@libc<-??@libother",  # another library's caller
        "crash:SIGSEGV:main:memcpy@libc<-??@libcrash",  # another top
        "crash:SIGSEGV:main:strlen@libc",  # no caller read
        "crash:SIGSEGV:main:validation:strlen@libc<-??@libcrash",  # another stage
        "crash:SIGSEGV:main:strlen@libc<-??@libcrash:kernel=k1",  # a kernel the other lacks
    ],
)
def test_an_unnamed_caller_still_tells_another_crash_apart(other: str) -> None:
    assert not native.unnamed_agrees(other, NAMED_CALLER, across_builds=True)
    assert not native.agrees(other, NAMED_CALLER, native_unknown=False, across_builds=True)
    assert not native.agrees(NAMED_CALLER, other, native_unknown=False, across_builds=True)


def test_an_unnamed_caller_in_a_cpp_frame_and_under_a_stage() -> None:
    unnamed = "crash:SIGSEGV:main:validation:at::native::f@libtorch_cpu<-??@libx:kernel=k1"
    named = "crash:SIGSEGV:main:validation:at::native::f@libtorch_cpu<-g@libx:kernel=k1"
    assert native.unnamed_agrees(unnamed, named, across_builds=True)
    assert not native.unnamed_agrees(unnamed, named.replace(":validation", ""), across_builds=True)
    # Each side unnamed at another depth: neither knows the other's name to differ.
    top = "crash:SIGSEGV:main:validation:??@libtorch_cpu<-g@libx:kernel=k1"
    assert native.unnamed_agrees(top, unnamed, across_builds=True)


@pytest.mark.parametrize(
    ("unnamed", "named"),
    [
        # A hidden function and an exported one of one libtorch_cpu: two crash sites.
        (
            "crash:SIGABRT:main:abort@libc<-??@libtorch_cpu",
            "crash:SIGABRT:main:abort@libc<-c10::detail::torchCheckFail@libtorch_cpu",
        ),
        ("crash:SIGSEGV:main:strlen@libc<-??@libcrash", NAMED_CALLER),
        ("crash:SIGSEGV:main:??@libc<-??@libcrash", NAMED_CALLER),
        ("crash:SIGSEGV:main:??@python3.11<-??@liba", "crash:SIGSEGV:main:f@python3.11<-a@liba"),
    ],
)
def test_an_unnamed_caller_is_another_crash_site_within_one_build(unnamed: str, named: str) -> None:
    """minimize's candidates, its DIR check and capture's verify run in the target's own
    environment, where one library file names a function in every attempt or in none:
    a candidate crashing at another site of the same library was counted the bug."""
    assert native.unnamed_agrees(unnamed, named, across_builds=True)
    assert not native.unnamed_agrees(unnamed, named, across_builds=False)
    for one, other in ((unnamed, named), (named, unnamed)):
        assert not native.agrees(one, other, native_unknown=False, across_builds=False)
        assert not native.attempt_agrees(_crashed(one).attempts[0], other)


def test_an_unnamed_top_still_agrees_within_one_build() -> None:
    """Only the callers must be equal: an unnamed top of the same library (or the
    interpreter), under the same caller or none read, is the same crash as before."""
    for unnamed, named in (
        (UNNAMED, NAMED),
        ("crash:SIGSEGV:main:??@python3.11<-a@liba", "crash:SIGSEGV:main:f@libpython3.11<-a@liba"),
        (UNNAMED, "crash:SIGSEGV:main:os_kill_impl@libpython3.11<-a@liba"),
    ):
        assert native.agrees(unnamed, named, native_unknown=False, across_builds=False)
        assert native.attempt_agrees(_crashed(named).attempts[0], unnamed)
