"""Real runs recorded for report goldens: what varies from run to run and machine to machine
(run id, times, pids, addresses, where things are installed) replaced by fixed values.

A golden of a live run could not be compared byte for byte: a worker's pid, the
moment the main process notices, this machine's paths. So the tests run the spec
for real and check what the report must say; with REPROSPEC_UPDATE_GOLDEN=1 they
also record that run here (`record`), and the golden is the report of the
recording (`load`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reprospec.core.jsontypes import JsonValue
from reprospec.core.results import RunResult
from reprospec.store.resultsjson import run_from_dict, run_to_dict
from tests.support.runs import ENV, T0, T1

RECORDED = Path(__file__).resolve().parent.parent / "data" / "recorded" / "reports"

# Where the recorded run's paths are said to be: a user's machine, not this one.
FAKE_ROOTS = {
    "<venv>": "/home/alice/proj/.venv",
    "<python>": "/home/alice/.pyenv/versions/3.11.7",
    "<harness>": "/home/alice/proj/.venv/lib/python3.11/site-packages/reprospec/harness",
    "": "/home/alice/proj",
    "<home>": "/home/alice",
}
_PID = re.compile(r"\b(pid(?:\(s\))?|LWP|pids) (\d+)")
_HEX = re.compile(r"\b0x[0-9a-fA-F]{6,}\b")


def _strings(value: JsonValue, change: Callable[[str], str]) -> JsonValue:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, list):
        return [_strings(item, change) for item in value]
    if isinstance(value, dict):
        return {key: _strings(item, change) for key, item in value.items()}
    return value


def normalized(run: RunResult, spec_path: str) -> dict[str, Any]:
    """The run as results.json, with what differs between runs and machines made fixed."""
    raw = run_to_dict(run)
    roots = sorted(run.paths.items(), key=lambda item: len(item[0]), reverse=True)
    pids: dict[str, str] = {}

    def pid(match: re.Match[str]) -> str:
        fixed = pids.setdefault(match[2], str(4242 + len(pids)))
        return f"{match[1]} {fixed}"

    def change(text: str) -> str:
        for path, label in roots:
            text = text.replace(path, FAKE_ROOTS[label])
        return _HEX.sub("0x00007f0000001000", _PID.sub(pid, text))

    changed = _strings(raw, change)
    assert isinstance(changed, dict)
    data: dict[str, Any] = changed
    data["run_id"] = f"20261121-214512-{run.spec_name}-5e1f"
    data["started"], data["finished"] = T0, T1
    data["environment"] = ENV
    data["paths"] = {FAKE_ROOTS[label]: label for label in run.paths.values()}
    data["spec"]["path"] = spec_path
    data["command_line"] = f"reprospec run {spec_path}"
    for cell in data["cells"]:
        cell["environment"] = {}
        for attempt in cell["attempts"]:
            attempt["started"], attempt["finished"] = T0, T1
            attempt["duration_s"] = 4.2 if attempt["outcome"]["kind"] == "pass" else 3.1
            attempt["outcome"]["duration_s"] = attempt["duration_s"]
            if isinstance(attempt["outcome"].get("pid"), int):
                attempt["outcome"]["pid"] = int(pids.get(str(attempt["outcome"]["pid"]), 4242))
            # The engine's own notes (TMPDIR leftovers with random names) are not the child's.
            attempt["warnings"] = []
            if attempt.get("native_stacks"):
                # gdb's full stacks name this machine's build paths: the top frames stay.
                attempt["native_stacks"] = attempt["native_stacks"].split("<details>")[0]
    return data


def record(name: str, run: RunResult, spec_path: str) -> None:
    """Write the normalized run as `RECORDED/<name>.results.json`."""
    RECORDED.mkdir(parents=True, exist_ok=True)
    text = json.dumps(normalized(run, spec_path), indent=2, ensure_ascii=False) + "\n"
    (RECORDED / f"{name}.results.json").write_text(text, encoding="utf-8")


def load(name: str) -> RunResult:
    """A recorded run."""
    data = json.loads((RECORDED / f"{name}.results.json").read_text(encoding="utf-8"))
    return run_from_dict(data)
