"""The markdown bug report: a view of a RunResult, laid out by a sandboxed Jinja2 template."""

from __future__ import annotations

import json
import re
import shlex
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from reprospec.models import AttemptResult, CellResult, Expectation, Outcome, RunResult
from reprospec.report.logtext import clean_log, excerpt

MARKS = {"reproduced": "✅", "not-reproduced": "❌", "infra-error": "⚠️"}
_STACK_LINES = 300
# Sections of the captured environment (harness envinfo) that get rows of their own.
_ENV_SECTIONS = frozenset(
    {
        "format",
        "python",
        "os",
        "cpu",
        "memory",
        "shm",
        "torch",
        "nvidia",
        "nvcc",
        "multiprocessing",
        "packages",
        "env",
        "environment_mismatch",
    }
)


def fence_for(text: str, char: str = "`") -> str:
    """A code fence longer than any run of `char` inside `text`, so the text cannot close it."""
    longest = max((len(m) for m in re.findall(f"{re.escape(char)}+", text)), default=0)
    return char * max(3, longest + 1)


def table_cell(value: object) -> str:
    """Text safe inside a markdown table cell: pipes escaped, newlines made visible breaks."""
    text = str(value).strip().replace("\\|", "|").replace("|", "\\|")
    return re.sub(r"\r?\n", "<br>", text)


def inline_code(value: object) -> str:
    """Inline code that survives backticks in the text."""
    text = str(value)
    ticks = "`" * (max((len(m) for m in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def show_value(value: Any) -> str:
    """A matrix value as the spec would spell it (YAML-ish scalars, compact JSON otherwise)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(", ", ": "), ensure_ascii=False)
    return str(value)


def location(phase: str | None, step: object) -> str:
    """`validation:7`, `validation`, `step 7` or ''."""
    if phase and step is not None:
        return f"{phase}:{step}"
    if phase:
        return phase
    return f"step {step}" if step is not None else ""


def outcome_text(outcome: Outcome) -> str:
    """`crash SIGSEGV (worker) @ validation:7`: one outcome in a table cell."""
    parts: list[str] = [outcome.kind]
    if outcome.signal:
        parts.append(outcome.signal)
    if outcome.kind == "error" and outcome.exit_code is not None:
        parts.append(f"exit {outcome.exit_code}")
    if outcome.exception and outcome.kind != "crash":
        # A worker crash surfaces as a RuntimeError in the main process: the signal is the news.
        parts.append(outcome.exception)
    if outcome.where == "worker":
        parts.append("(worker)")
    where = location(outcome.phase, outcome.step)
    if where:
        parts.append(f"@ {where}")
    return " ".join(parts)


def attempt_text(attempt: AttemptResult) -> str:
    """An attempt's outcome, or its infrastructure error."""
    if attempt.outcome is None:
        return f"infra-error: {attempt.infra_error or 'not run'}"
    return outcome_text(attempt.outcome)


def expectation_text(expected: Expectation) -> str:
    """`crash SIGSEGV @ validation:6..8`: what a cell was expected to do."""
    parts: list[str] = [expected.outcome]
    if expected.signal:
        parts.append(expected.signal)
    if expected.exit_code is not None:
        parts.append(f"exit {expected.exit_code}")
    if expected.exception:
        parts.append(expected.exception)
    if expected.message:
        parts.append(f"/{expected.message}/")
    where = location(expected.phase, expected.step)
    if where:
        parts.append(f"@ {where}")
    if expected.rate is not None:
        parts.append(f"rate {expected.rate}")
    return " ".join(parts)


def actual_text(cell: CellResult) -> str:
    """What a cell's attempts did: one outcome, or counts of each when they differ."""
    counts = Counter(attempt_text(a) for a in cell.attempts)
    if not counts:
        return "not run"
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{n}× {text}" for text, n in counts.most_common())


def rate_text(cell: CellResult) -> str:
    """`3/4 (95% CI 0.30–0.95)`; the interval only when there were several attempts."""
    rate = cell.rate
    text = f"{rate.matched}/{rate.attempts}"
    if rate.attempts > 1:
        text += f" (95% CI {rate.low:.2f}–{rate.high:.2f})"
    return text


def _failed(attempt: AttemptResult) -> bool:
    return attempt.outcome is not None and attempt.outcome.kind != "pass"


def _passed(attempt: AttemptResult) -> bool:
    return attempt.outcome is not None and attempt.outcome.kind == "pass"


def _failing_cells(run: RunResult) -> list[CellResult]:
    """Cells where the expected failure reproduced; else any cell that failed at all."""
    reproduced = [
        c for c in run.cells if c.verdict == "reproduced" and c.expected.outcome != "pass"
    ]
    return reproduced or [c for c in run.cells if any(_failed(a) for a in c.attempts)]


def first_failure(run: RunResult) -> tuple[CellResult, AttemptResult] | None:
    """The first failing attempt, preferring cells where the failure reproduced."""
    for cell in _failing_cells(run):
        for attempt in cell.attempts:
            if _failed(attempt):
                return cell, attempt
    return None


def _headline(outcome: Outcome) -> str:
    if outcome.kind == "crash":
        head = outcome.signal or "Crash"
        if outcome.where == "worker":
            head += " (worker)"
    elif outcome.kind == "error":
        head = outcome.exception or (
            f"Exit code {outcome.exit_code}" if outcome.exit_code is not None else "Error"
        )
    else:
        head = outcome.kind.capitalize()
    if outcome.phase and outcome.step is not None:
        return f"{head} in {outcome.phase} step {outcome.step}"
    if outcome.phase:
        return f"{head} in {outcome.phase}"
    return f"{head} at step {outcome.step}" if outcome.step is not None else head


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def summary_line(run: RunResult) -> str:
    """`SIGSEGV in validation step 7 in 1 of 4 cells; as expected in every cell (4/4 attempts)`."""
    failure = first_failure(run)
    s = run.summary
    # Two different facts: where the failure happened, and whether every cell did
    # what the spec expects ("reproduced"); a pass cell can be reproduced too.
    if failure and failure[1].outcome:
        signature = failure[1].outcome.signature
        failing = sum(
            any(a.outcome is not None and a.outcome.signature == signature for a in c.attempts)
            for c in run.cells
        )
        head = f"{_headline(failure[1].outcome)} in {failing} of {_plural(s['cells'], 'cell')}"
    else:
        head = "Could not run" if s["infra_error"] else "No failure"
    attempts = [a for c in run.cells for a in c.attempts]
    held = (
        "every cell"
        if s["reproduced"] == s["cells"]
        else f"{s['reproduced']} of {_plural(s['cells'], 'cell')}"
    )
    text = (
        f"{head}; as expected in {held} "
        f"({sum(a.matched for a in attempts)}/{len(attempts)} attempts)"
    )
    if s["infra_error"]:
        text += f", {s['infra_error']} infra-error"
    if run.interrupted:
        text += " (interrupted)"
    return text


def _bytes(n: Any) -> str:
    if not isinstance(n, (int, float)) or isinstance(n, bool):
        return ""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def _words(*parts: Any) -> str:
    """The non-empty parts joined by spaces; '(…)' parts whose inside is empty are dropped."""
    return " ".join(str(p) for p in parts if p not in (None, "", "()", []))


def env_value(value: Any) -> str:
    """Any environment value as readable text ('' when there is nothing to say)."""
    if value is None or value == "" or value == [] or value == {}:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Mapping):
        items = ((k, env_value(v)) for k, v in value.items())
        return ", ".join(f"{k} {v}" for k, v in items if v)
    if isinstance(value, (list, tuple)):
        sep = "; " if any(isinstance(v, Mapping) for v in value) else ", "
        return sep.join(t for t in (env_value(v) for v in value) if t)
    return str(value)


def _section(env: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = env.get(name)
    return value if isinstance(value, Mapping) else {}


def _torch_rows(torch: Mapping[str, Any], nvidia: Mapping[str, Any]) -> list[tuple[str, str]]:
    if not torch or torch.get("captured") is False:
        return []
    if torch.get("installed") is False:
        return [("torch", "not installed")]
    if torch.get("error"):
        return [("torch", f"import failed: {torch['error']}")]
    details = ", ".join(
        part
        for part in (
            f"CPU capability {torch['cpu_capability']}" if torch.get("cpu_capability") else "",
            "debug build" if torch.get("debug") else "",
            f"{torch['num_threads']} threads" if torch.get("num_threads") else "",
        )
        if part
    )
    if torch.get("cuda"):
        state = "available" if torch.get("cuda_available") else "not available"
        cuda = f"{torch['cuda']} ({state}, {torch.get('device_count') or 0} devices)"
    elif torch.get("hip"):
        cuda = f"none; ROCm {torch['hip']}"
    else:
        cuda = "none (CPU-only torch build)" if torch.get("version") else ""
    if nvidia.get("cuda_version"):
        cuda = _words(cuda, f"(driver supports CUDA {nvidia['cuda_version']})")
    return [
        ("torch", _words(torch.get("version"), f"({details})" if details else "")),
        ("CUDA", cuda),
        ("cuDNN", env_value(torch.get("cudnn"))),
        ("CUDA arch list", env_value(torch.get("arch_list"))),
    ]


def _gpus(torch: Mapping[str, Any], nvidia: Mapping[str, Any]) -> str:
    gpus = nvidia.get("gpus") or torch.get("gpus") or []
    texts = []
    for gpu in gpus:
        if not isinstance(gpu, Mapping):
            texts.append(str(gpu))
            continue
        memory = _bytes(gpu["memory_mib"] * 2**20) if gpu.get("memory_mib") else ""
        cc = f"cc {gpu['capability']}" if gpu.get("capability") else ""
        inside = ", ".join(p for p in (cc, memory) if p)
        texts.append(_words(f"{gpu.get('index', '?')}:", gpu.get("name"), f"({inside})"))
    if texts:
        return "; ".join(texts)
    return "none (no nvidia-smi)" if "nvidia_smi" in nvidia and not nvidia["nvidia_smi"] else ""


def environment_rows(env: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(label, value) rows for the environment table, from the harness capture; nothing empty."""
    py, system, cpu = _section(env, "python"), _section(env, "os"), _section(env, "cpu")
    memory, shm, torch = _section(env, "memory"), _section(env, "shm"), _section(env, "torch")
    nvidia, nvcc = _section(env, "nvidia"), _section(env, "nvcc")
    cores = cpu.get("cores")
    usable = cpu.get("usable_cores")
    memory_notes = ", ".join(
        f"{label} {_bytes(memory[key])}"
        for key, label in (
            ("available", "available:"),
            ("cgroup_limit", "cgroup limit"),
            ("rlimit_as", "RLIMIT_AS"),
        )
        if memory.get(key)
    )
    rows = [
        ("Python", _words(py.get("version"), f"({py.get('implementation') or ''})")),
        (
            "OS",
            _words(
                system.get("distribution") or system.get("system"),
                f"({system.get('machine') or ''})",
            ),
        ),
        ("Kernel", env_value(system.get("kernel"))),
        ("WSL", env_value(system.get("wsl"))),
        ("Container", env_value(system.get("container"))),
        ("CPU", _words(cpu.get("model"), f"({cpu.get('vendor') or ''})")),
        ("CPU flags", env_value(cpu.get("flags"))),
        ("Cores", _words(cores, f"({usable} usable)" if usable and usable != cores else "")),
        ("Memory", _words(_bytes(memory.get("total")), f"({memory_notes})")),
        (
            "/dev/shm",
            "missing"
            if shm.get("present") is False
            else _words(
                _bytes(shm.get("size")), f"({_bytes(shm['free'])} free)" if shm.get("free") else ""
            ),
        ),
        *_torch_rows(torch, nvidia),
        ("GPUs", _gpus(torch, nvidia)),
        ("Driver", env_value(nvidia.get("driver_version"))),
        ("nvcc", env_value(nvcc.get("version"))),
        ("Start method", env_value(_section(env, "multiprocessing").get("start_method"))),
        (
            "Packages",
            ", ".join(f"{k} {v or 'not installed'}" for k, v in _section(env, "packages").items()),
        ),
    ]
    rows += [(key, env_value(value)) for key, value in env.items() if key not in _ENV_SECTIONS]
    return [(label, value) for label, value in rows if value]


def _env_vars(env: Mapping[str, Any]) -> list[tuple[str, str]]:
    return [(str(k), str(v)) for k, v in sorted(_section(env, "env").items())]


def _mismatches(env: Mapping[str, Any]) -> list[str]:
    found = env.get("environment_mismatch")
    if not found:
        return []
    if isinstance(found, Mapping):
        return [f"{k}: {env_value(v)}" for k, v in found.items()]
    if isinstance(found, (list, tuple)):
        return [env_value(item) for item in found]
    return [str(found)]


def axes_of(cells: Iterable[CellResult]) -> list[str]:
    """Matrix axes in the order they first appear (include-only keys last)."""
    axes: dict[str, None] = {}
    for cell in cells:
        axes.update(dict.fromkeys(cell.cell.matrix))
    return list(axes)


def _grid(cells: Sequence[CellResult], axes: Sequence[str]) -> dict[str, Any] | None:
    """Rows = first axis, columns = second axis, for a two-axis matrix."""
    if len(axes) != 2 or not all(all(a in c.cell.matrix for a in axes) for c in cells):
        return None
    row_axis, col_axis = axes
    rows = list(dict.fromkeys(show_value(c.cell.matrix[row_axis]) for c in cells))
    cols = list(dict.fromkeys(show_value(c.cell.matrix[col_axis]) for c in cells))
    # What happened in each corner (the news), with the verdict mark beside it.
    marks = {
        (show_value(c.cell.matrix[row_axis]), show_value(c.cell.matrix[col_axis])): (
            f"{_cell_outcome(c)} {MARKS[c.verdict]}"
        )
        for c in cells
    }
    return {
        "row_axis": row_axis,
        "col_axis": col_axis,
        "cols": cols,
        "rows": [(r, [marks.get((r, c), "—") for c in cols]) for r in rows],
    }


def _cell_outcome(cell: CellResult) -> str:
    """`crash SIGSEGV`, `pass`, or `crash SIGSEGV 3/5` when the attempts differ."""
    kinds = [
        " ".join(p for p in (a.outcome.kind, a.outcome.signal or a.outcome.exception or "") if p)
        if a.outcome is not None
        else "not run"
        for a in cell.attempts
    ]
    if not kinds:
        return "not run"
    top = max(dict.fromkeys(kinds), key=kinds.count)
    return top if kinds.count(top) == len(kinds) else f"{top} {kinds.count(top)}/{len(kinds)}"


def separators(run: RunResult) -> list[str] | None:
    """Toggle values in every failing cell and in no passing cell (None: nothing to compare)."""
    failing = _failing_cells(run)
    passing = [c for c in run.cells if c.attempts and all(_passed(a) for a in c.attempts)]
    if not failing or not passing or not axes_of(run.cells):
        return None
    first = failing[0].cell.matrix
    common = {
        axis: value
        for axis, value in first.items()
        if all(axis in c.cell.matrix and c.cell.matrix[axis] == value for c in failing)
    }

    def has(cell: CellResult, axis: str, value: Any) -> bool:
        return axis in cell.cell.matrix and cell.cell.matrix[axis] == value

    singles = [
        f"{axis}={show_value(value)}"
        for axis, value in common.items()
        if not any(has(c, axis, value) for c in passing)
    ]
    if singles:
        return [f"{inline_code(s)}: in every failing cell, in no passing cell" for s in singles]
    if len(common) > 1 and not any(all(has(c, a, v) for a, v in common.items()) for c in passing):
        combo = ", ".join(f"{a}={show_value(v)}" for a, v in common.items())
        return [
            f"{inline_code(combo)} together: every failing cell has all of them, "
            "no passing cell has them all"
        ]
    return []


def _read(path: Path, limit: int = 1 << 20) -> str:
    """The last `limit` bytes of a file (the end of a log is where the failure is)."""
    try:
        with path.open("rb") as f:
            f.seek(max(0, path.stat().st_size - limit))
            return f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _log_excerpt(attempt: AttemptResult, run_dir: Path | None) -> str:
    if run_dir is None or not attempt.logs:
        return ""
    folder = run_dir / attempt.logs
    for name in ("stderr.log", "stdout.log"):
        text = excerpt(_read(folder / name))
        if text.strip():
            return text
    return ""


def _failure(run: RunResult, run_dir: Path | None) -> dict[str, Any] | None:
    found = first_failure(run)
    if found is None or found[1].outcome is None:
        return None
    cell, attempt = found
    outcome = found[1].outcome
    signatures = Counter(
        a.outcome.signature or outcome_text(a.outcome)
        for c in run.cells
        for a in c.attempts
        if a.outcome is not None and a.outcome.kind != "pass"
    )
    log = _log_excerpt(attempt, run_dir)
    message = clean_log(outcome.message or "").strip()
    return {
        "signatures": signatures.most_common(),
        "cell": cell.cell.id,
        "attempt": attempt.attempt,
        "outcome": outcome_text(outcome),
        "exception": outcome.exception,
        "message": message,
        "message_fence": fence_for(message),
        "detail": clean_log(outcome.detail or "").strip(),
        "excerpt": log,
        "fence": fence_for(log),
    }


def _attempt_rows(run: RunResult) -> list[dict[str, str]]:
    return [
        {
            "cell": cell.cell.id,
            "attempt": str(a.attempt),
            "outcome": attempt_text(a),
            "matched": "yes" if a.matched else "no",
            "duration": f"{a.duration_s:.2f} s",
            "gpu": ",".join(a.gpu_slot),
        }
        for cell in run.cells
        for a in cell.attempts
    ]


def _slot_rows(run: RunResult) -> list[tuple[str, int, int, int]]:
    """(slot, attempts, failed, matched) per GPU slot: a crash tied to one GPU shows here."""
    slots: dict[str, list[AttemptResult]] = {}
    for cell in run.cells:
        for a in cell.attempts:
            if a.gpu_slot:
                slots.setdefault(",".join(a.gpu_slot), []).append(a)
    return [
        (slot, len(group), sum(_failed(a) for a in group), sum(a.matched for a in group))
        for slot, group in slots.items()
    ]


def _stacks(run: RunResult, run_dir: Path | None) -> list[dict[str, Any]]:
    """The first hang of each cell with its stacks (from stack.txt when the folder is given)."""
    out = []
    for cell in run.cells:
        for a in cell.attempts:
            if a.outcome is None or a.outcome.kind != "hang":
                continue
            text = _read(run_dir / a.logs / "stack.txt") if run_dir and a.logs else ""
            lines = clean_log(text or a.stack or "").strip().split("\n")
            if len(lines) > _STACK_LINES:
                lines = [*lines[:_STACK_LINES], f"… ({len(lines) - _STACK_LINES} more lines)"]
            text = "\n".join(lines)
            if text:
                out.append(
                    {
                        "cell": cell.cell.id,
                        "attempt": a.attempt,
                        "text": text,
                        "fence": fence_for(text),
                    }
                )
                break
    return out


def _command(run: RunResult) -> str:
    if run.command_line:
        return run.command_line
    return f"reprospec run {shlex.quote(run.spec_path or run.spec_name + '.yaml')}"


def context(run: RunResult, run_dir: Path | None = None) -> dict[str, Any]:
    """Everything the template shows, computed here so the template only lays it out."""
    axes = axes_of(run.cells)
    cells = [
        {
            "mark": MARKS[c.verdict],
            "id": c.cell.id,
            "values": [show_value(c.cell.matrix[a]) if a in c.cell.matrix else "—" for a in axes],
            "expected": expectation_text(c.expected),
            "actual": actual_text(c),
            "rate": rate_text(c),
            "verdict": c.verdict,
            "reason": c.reason,
        }
        for c in run.cells
    ]
    spec_text = run.spec_text.rstrip("\n")
    return {
        "title": " ".join((run.title or run.spec_name).split()),  # a heading is one line
        "summary": summary_line(run),
        "description": run.description.strip(),
        "run": run,
        "warnings": list(run.warnings),
        "environment": environment_rows(run.environment),
        "env_vars": _env_vars(run.environment),
        "env_mismatch": _mismatches(run.environment),
        "command": _command(run),
        "spec_name": Path(run.spec_path).name if run.spec_path else f"{run.spec_name}.yaml",
        "spec_text": spec_text,
        "spec_path": run.spec_path,
        "spec_fence": fence_for(spec_text),
        "axes": axes,
        "cells": cells,
        "grid": _grid(run.cells, axes),
        "separators": separators(run),
        "failure": _failure(run, run_dir),
        "attempts": _attempt_rows(run) if any(len(c.attempts) > 1 for c in run.cells) else [],
        "show_gpu": any(a.gpu_slot for c in run.cells for a in c.attempts),
        "slots": _slot_rows(run),
        "stacks": _stacks(run, run_dir),
    }


def render_markdown(run: RunResult, run_dir: Path | None = None) -> str:
    """The filled bug report; spec strings reach the template only as data."""
    from jinja2 import FileSystemLoader, StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    env = SandboxedEnvironment(
        loader=FileSystemLoader(Path(__file__).parent / "templates"),
        autoescape=False,  # markdown, not HTML: escaping is per table cell, by the `cell` filter
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["cell"] = table_cell
    env.filters["code"] = inline_code
    text = env.get_template("report.md.j2").render(**context(run, run_dir))
    return text.strip("\n") + "\n"
