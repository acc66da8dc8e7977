"""Where a Ctrl-C may be raised (reprospec/core/safepoint.py), judged on real frames."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from reprospec.core import safepoint


def _frames_of_an_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[FrameType]:
    """The frames of importlib's module-lock callback, as a first import of a module runs it
    (the place a raised KeyboardInterrupt left the global import lock held)."""
    (tmp_path / "freshly_loaded.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen: list[FrameType] = []

    def tracer(frame: FrameType, event: str, _arg: object) -> None:
        if event == "call" and frame.f_code.co_name == "cb":
            seen.append(frame)

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        importlib.import_module("freshly_loaded")
    finally:
        sys.settrace(previous)
        sys.modules.pop("freshly_loaded", None)
    return seen


def test_the_module_locks_callback_is_where_no_interrupt_is_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The file name is this Python's own: were it to change, the wait would silently end.
    callbacks = _frames_of_an_import(tmp_path, monkeypatch)
    assert callbacks, "no module lock's callback ran"
    assert all(frame.f_code.co_filename == safepoint.IMPORT_MACHINERY for frame in callbacks)
    assert not any(safepoint.can_raise_in(frame) for frame in callbacks)


def test_code_of_its_own_and_no_frame_at_all_can_take_an_interrupt() -> None:
    assert safepoint.can_raise_in(sys._getframe())
    assert safepoint.can_raise_in(None)


def test_a_handlers_own_frames_are_judged_by_the_frame_it_was_called_in() -> None:
    # A signal again while a handler runs is handled nested, in the handler's frame: it is
    # the frame the handler interrupted that says whether it may raise.
    def interrupted() -> FrameType:
        return handler()

    @safepoint.handling
    def handler() -> FrameType:
        return sys._getframe()

    in_ours = interrupted()
    assert safepoint.can_raise_in(in_ours)
    machinery = compile("frame = handler()\n", safepoint.IMPORT_MACHINERY, "exec")
    scope: dict[str, Any] = {"handler": handler}
    exec(machinery, scope)
    assert not safepoint.can_raise_in(scope["frame"])
