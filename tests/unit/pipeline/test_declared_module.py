"""`python -m` of a module of a package the spec declares (pipeline/attempt.py, setupfail.py)."""

from __future__ import annotations

from pathlib import Path

from reprospec.core.results import NotRun, Outcome
from reprospec.outcome.evidence import Evidence
from reprospec.pipeline.attempt import attempt_result
from tests.support.plans import attempt_plan, execution_in

NO_ATTRS = (
    b"/venv/bin/python: Error while finding module specification for 'attrs.x' "
    b"(ModuleNotFoundError: No module named 'attrs')\n"
)


def _outcome(tmp_path: Path, packages: list[str]) -> Outcome | NotRun:
    (tmp_path / "stderr.log").write_bytes(NO_ATTRS)
    (tmp_path / "stdout.log").write_bytes(b"")
    (tmp_path / "events.jsonl").write_text("")
    plan = attempt_plan(["python", "-m", "attrs.x"], tmp_path, environment={"packages": packages})
    execution = execution_in(tmp_path, 1)
    return attempt_result(plan, execution, Evidence.read(execution)).outcome


def test_a_declared_packages_module_missing_is_the_programs_error(tmp_path: Path) -> None:
    # attrs 21.2 has no `attrs` module (21.3 added it): what a version bisect looks for, as
    # `import attrs` in a script is. It was infra-error, and bisect refused its bad end.
    outcome = _outcome(tmp_path, ["Attrs==21.2.0"])
    assert isinstance(outcome, Outcome)
    assert outcome.kind == "error"


def test_an_undeclared_module_missing_never_started(tmp_path: Path) -> None:
    outcome = _outcome(tmp_path, ["six"])
    assert isinstance(outcome, NotRun)
    assert "no module named attrs in that interpreter" in outcome.reason
