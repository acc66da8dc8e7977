"""When minimize suggests `--preload torch`: a torch program whose attempts a fork serves."""

from __future__ import annotations

from pathlib import Path

from reprospec.core.runoptions import RunOptions
from reprospec.minimize.preloadhint import preload_hint
from reprospec.minimize.program import Program
from reprospec.plan.run import plan_run
from reprospec.spec.load import load_spec

SPEC = """\
reprospec: 1
name: loader
command: python train.py
expect: {outcome: crash, signal: SIGSEGV}
"""
TORCH = "import ctypes\nfrom torch.utils.data import DataLoader\nctypes.string_at(0)\n"


def _hint(
    tmp_path: Path, spec: str = SPEC, source: str = TORCH, options: RunOptions | None = None
) -> str | None:
    (tmp_path / "s.yaml").write_text(spec)
    options = options or RunOptions(purpose="minimize")
    attempt = plan_run(load_spec(tmp_path / "s.yaml"), options).attempts[0]
    program = Program(("python", "train.py"), (), files=(("train.py", source),))
    return preload_hint(attempt, program, options, "reprospec minimize s.yaml -j 2", "s.yaml")


def test_a_torch_program_without_preload_is_told_the_exact_option(tmp_path: Path) -> None:
    hint = _hint(tmp_path)
    assert hint is not None
    assert "`reprospec minimize s.yaml -j 2 --preload torch` forks them" in hint
    assert "spec-format.md#preload-forked-attempts" in hint  # opt-in, and why


def test_no_hint_where_preload_is_set_off_unused_or_would_not_fork(tmp_path: Path) -> None:
    preloaded = SPEC.replace("expect:", "run: {preload: [torch]}\nexpect:")
    assert _hint(tmp_path, preloaded) is None
    assert _hint(tmp_path, options=RunOptions(preload=())) is None  # --preload none
    assert _hint(tmp_path, options=RunOptions(runner="docker")) is None  # no fork server
    assert _hint(tmp_path, source="import ctypes\nctypes.string_at(0)\n") is None
    # A failure at import cannot happen in a process that imported already: run fresh.
    at_import = SPEC.replace("signal: SIGSEGV}", "signal: SIGSEGV, phase: import}")
    assert _hint(tmp_path, at_import) is None
    # A shell line is no one Python program a fork can stand in for.
    shell = SPEC.replace("python train.py", "python train.py | tee log")
    assert _hint(tmp_path, shell) is None


def test_a_workload_is_told_too_its_harness_imports_torch(tmp_path: Path) -> None:
    spec = (
        "reprospec: 1\nname: w\nworkload:\n  model: {builtin: mlp}\n  data:\n"
        "    dataset: {builtin: synthetic, size: 8, shape: [4], classes: 2}\n"
        "    loader: {batch_size: 4}\n  phases: [{name: train, steps: 1}]\n"
        "expect: {outcome: pass}\n"
    )
    (tmp_path / "w.yaml").write_text(spec)
    options = RunOptions(purpose="minimize")
    attempt = plan_run(load_spec(tmp_path / "w.yaml"), options).attempts[0]
    program = Program((), (), workload=True)
    hint = preload_hint(attempt, program, options, "", "my specs/w.yaml")
    assert hint is not None
    assert "`reprospec minimize 'my specs/w.yaml' --preload torch`" in hint
