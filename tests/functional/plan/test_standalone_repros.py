"""Every standalone repro the example specs offer fails the way the spec expects.

For each cell of `specs/*.yaml` that expects a failure, the repro the report would
offer (plan/standalone.py) is run as a person would: the command line with `sh`
from the spec's folder, or `python repro.py` in an empty folder with the files it
needs. It must fail the same way: the expected signal, an error (with the expected
message), or still running at twice the spec's timeout. A repro that is not offered
must say why. Before, `specs/instances-shared-cache.yaml` offered one command line
(one rank 0 passes), `specs/segfault.yaml` offered a repro.py without its injected
fault (it passes), and `specs/workload-shm-exhaustion.yaml` one without its 64 MB
/dev/shm (it passes).

The workload repros import torch: on a loaded machine each takes up to a minute.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from reprospec import api
from reprospec.core.inputs import AttemptPlan
from reprospec.core.results import RunResult
from reprospec.plan.standalone import REPRO_PY, standalone_of
from tests.support.cli import SPECS


def _failing_cells() -> list[tuple[Path, AttemptPlan]]:
    found = []
    for path in sorted(SPECS.glob("*.yaml")):
        plan = api.plan_run(api.load_spec(path))
        seen: set[str] = set()
        for attempt in plan.attempts:
            if attempt.cell.id not in seen and attempt.expectation.outcome != "pass":
                seen.add(attempt.cell.id)
                found.append((path, attempt))
    return found


CELLS = _failing_cells()


def _run(argv: list[str], cwd: Path, timeout: float) -> tuple[int | None, str]:
    """(exit status, or None when still running at `timeout`; the output)."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        text=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return None, out
    return proc.returncode, out


@pytest.mark.parametrize(("spec", "plan"), CELLS, ids=[f"{s.stem}[{p.cell.id}]" for s, p in CELLS])
def test_an_offered_standalone_repro_fails_the_same_way(
    spec: Path, plan: AttemptPlan, tmp_path: Path
) -> None:
    standalone = standalone_of(plan, spec.parent)
    expect = plan.expectation
    if standalone.unavailable:
        # Not offered: the section says plainly why.
        assert re.search(r"no standalone (repro|script)", standalone.unavailable)
        return
    folder = spec.parent
    if standalone.script:
        folder = tmp_path
        (folder / REPRO_PY).write_text(standalone.script)
        for name in standalone.files:
            shutil.copy(spec.parent / standalone.workdir / name, folder / name)
    hang = expect.outcome == "hang"
    status, out = _run(["sh", "-c", standalone.run], folder, 2 * plan.timeout_s if hang else 240)
    if hang:
        assert status is None, out[-2000:]
        return
    assert status is not None, out[-2000:]
    assert status != 0, out[-2000:]
    signalled = status < 0 or status > 128
    if expect.outcome == "crash":
        number = -status if status < 0 else status - 128
        assert signalled, out[-2000:]
        assert not expect.signals or signal.Signals(number).name in expect.signals
    elif expect.outcome == "error":
        assert not signalled, out[-2000:]
        if expect.message:
            assert re.search(expect.message, out), out[-2000:]


def test_the_repro_is_the_command_line_of_the_cells_first_failed_attempt(tmp_path: Path) -> None:
    # Attempt 1 passes and attempt 2 fails, by a value of its own: the repro offered
    # was attempt 1's command line (`--seed 1`), which passes.
    import reprospec
    from reprospec.core.runoptions import RunOptions

    (tmp_path / "seeded.py").write_text("import sys\nsys.exit(3 if sys.argv[2] == '2' else 0)\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: seeded\ncommand: python seeded.py --seed ${{ attempt }}\n"
        "run: {repeat: 3}\nexpect: {outcome: error}\n"
    )
    result = reprospec.run(reprospec.load_spec(spec), RunOptions(out=tmp_path / "out"))
    assert [a.failed for a in result.cells[0].attempts] == [False, True, False]
    assert result.standalone is not None
    assert result.standalone.run == "python seeded.py --seed 2"
    ran = subprocess.run(["sh", "-c", result.standalone.run], cwd=tmp_path, timeout=60)
    assert ran.returncode == 3


def _run_envdep(tmp_path: Path, mode: str, *, public: bool) -> RunResult:
    """A run of envdep.py, which exits 3 where MODE is `mode` and API_TOKEN is tok-123: the
    spec sets both from the engine's NU9A_MODE and NU9A_TOKEN (NU9A_MODE in `public_env`
    where `public`), as the caller's environment has them."""
    import reprospec
    from reprospec.core.runoptions import RunOptions

    (tmp_path / "envdep.py").write_text(
        "import os, sys\n"
        f"if os.environ['MODE'] == {mode!r} and os.environ['API_TOKEN'] == 'tok-123':\n"
        "    sys.exit(3)\n"
    )
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: envdep\ncommand: python envdep.py\nenvironment:\n"
        + ("  public_env: [NU9A_MODE]\n" if public else "")
        + "  env:\n    MODE: ${{ env.NU9A_MODE }}\n    API_TOKEN: ${{ env.NU9A_TOKEN }}\n"
        "expect: {outcome: error}\n"
    )
    return reprospec.run(reprospec.load_spec(spec), RunOptions(out=tmp_path / "out"))


def test_a_variable_the_spec_reads_from_the_environment_is_read_so_by_the_repro(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `MODE: ${{ env.NU9A_MODE }}`: the value is masked in every report, and the line read
    # `MODE=*** python envdep.py`, which sets MODE to three asterisks and passes; a secret
    # was `API_TOKEN="$API_TOKEN"`, where the reader exports NU9A_TOKEN as the spec says.
    monkeypatch.setenv("NU9A_MODE", "strict")
    monkeypatch.setenv("NU9A_TOKEN", "tok-123")
    result = _run_envdep(tmp_path, "strict", public=False)
    assert result.cells[0].attempts[0].failed
    assert result.standalone is not None
    assert result.standalone.run == 'MODE="$NU9A_MODE" API_TOKEN="$NU9A_TOKEN" python envdep.py'
    assert result.standalone.notes[0] == (
        "the spec reads NU9A_MODE, NU9A_TOKEN from your environment: export them first"
    )
    report = (tmp_path / "out" / "runs" / result.run_id / "report.md").read_text()
    assert 'MODE="$NU9A_MODE" API_TOKEN="$NU9A_TOKEN" python envdep.py' in report
    assert "tok-123" not in report
    ran = subprocess.run(
        ["sh", "-c", result.standalone.run], cwd=tmp_path, timeout=60, env=dict(os.environ)
    )
    assert ran.returncode == 3


def test_the_note_on_what_to_export_gives_a_public_variable_with_the_value_the_run_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The note named NU9A_MODE alone: a reader who exported NU9A_MODE=lax ran another
    # program than the run's, which passes (as the bundle's README). A secret
    # stays a name.
    monkeypatch.setenv("NU9A_MODE", "very strict")
    monkeypatch.setenv("NU9A_TOKEN", "tok-123")
    result = _run_envdep(tmp_path, "very strict", public=True)
    assert result.standalone is not None
    note = (
        "the spec reads NU9A_MODE='very strict', NU9A_TOKEN from your environment: "
        "export them first"
    )
    assert result.standalone.notes[0] == note
    report = (tmp_path / "out" / "runs" / result.run_id / "report.md").read_text()
    assert "NU9A_MODE='very strict'" in report
    assert "tok-123" not in report


def test_a_variable_the_run_read_unset_is_left_unset_by_the_repro_as_its_note_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # NU9A_MODE was unset in the run (MODE read null: ''), and the note said "the spec reads
    # NU9A_MODE ...: export it first": a reader who did ran another program than the run's
    # (here one that passes), where the bundle's README says "unset in the run: leave it
    # unset".
    monkeypatch.delenv("NU9A_MODE", raising=False)
    monkeypatch.setenv("NU9A_TOKEN", "tok-123")
    result = _run_envdep(tmp_path, "", public=True)
    assert result.cells[0].attempts[0].failed
    assert result.standalone is not None
    assert result.standalone.notes[:2] == (
        "the spec reads NU9A_TOKEN from your environment: export it first",
        "the spec reads NU9A_MODE from your environment, unset in the run: leave it unset",
    )
    report = (tmp_path / "out" / "runs" / result.run_id / "report.md").read_text()
    assert "NU9A_MODE from your environment, unset in the run: leave it unset" in report
    # As the notes say: NU9A_TOKEN exported, NU9A_MODE left unset, it fails as the run did.
    ran = subprocess.run(
        ["sh", "-c", result.standalone.run], cwd=tmp_path, timeout=60, env=dict(os.environ)
    )
    assert ran.returncode == 3


def test_a_workloads_repro_py_reads_the_variable_from_the_environment_as_the_spec_does() -> None:
    # repro.py wrote `os.environ['MODE'] = '***'` (the masked value) beside a note that
    # told the reader to export NU9A_MODE.
    from reprospec.plan.standalone import env_reads

    spec = api.load_spec(
        SPECS / "workload-loss-exception.yaml",
        ("environment.env.MODE=${{ env.NU9A_MODE }}",),
    )
    attempt = api.plan_run(spec).attempts[0]
    found = standalone_of(attempt, SPECS, reads=env_reads(spec.document))
    assert found.script is not None, found.unavailable
    # Unset, the spec reads null, which the cell held as '': a KeyError where the run had ''.
    assert "os.environ['MODE'] = os.environ.get('NU9A_MODE', '')" in found.script
    assert found.notes[0] == "the spec reads NU9A_MODE from your environment: export it first"


@pytest.mark.parametrize(
    ("command", "env", "status", "run"),
    [
        (
            "cd sub && python3 envcrash.py",
            "{CRASH: '1'}",
            139,
            "CRASH=1 sh -c 'cd sub && python3 envcrash.py'",
        ),
        (
            'test "$MODE" = bad && exit 3; echo fine',
            "{MODE: bad}",
            3,
            "MODE=bad sh -c 'test \"$MODE\" = bad && exit 3; echo fine'",
        ),
        # One simple command keeps its readable form.
        ("python3 sub/envcrash.py", "{CRASH: '1'}", 139, "CRASH=1 python3 sub/envcrash.py"),
    ],
)
def test_the_variables_of_a_shell_line_reach_every_command_of_it(
    tmp_path: Path, command: str, env: str, status: int, run: str
) -> None:
    # `CRASH=1 cd sub && python3 envcrash.py` set CRASH for the `cd` alone: pasted, it said
    # "no crash"; `MODE=bad test "$MODE" = bad` expanded $MODE before the assignment, and
    # printed "fine". The runner runs the line as `/bin/sh -c LINE`: so does the repro.
    import reprospec
    from reprospec.core.runoptions import RunOptions

    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "envcrash.py").write_text(
        "import ctypes, os\nif os.environ.get('CRASH') == '1':\n    ctypes.string_at(0)\n"
        "print('no crash')\n"
    )
    spec = tmp_path / "spec.yaml"
    outcome = "crash" if status > 128 else "error"
    spec.write_text(
        f"reprospec: 1\nname: envline\ncommand: {json.dumps(command)}\n"
        f"environment: {{env: {env}}}\nexpect: {{outcome: {outcome}}}\n"
    )
    result = reprospec.run(reprospec.load_spec(spec), RunOptions(out=tmp_path / "out"))
    assert result.cells[0].failure_reproduced
    assert result.standalone is not None
    assert result.standalone.run == run
    report = (tmp_path / "out" / "runs" / result.run_id / "report.md").read_text()
    assert f"```sh\n{run}\n```" in report
    ran = subprocess.run(["bash", "-c", run], cwd=tmp_path, timeout=60, capture_output=True)
    assert ran.returncode in (status, -11 if status == 139 else status), ran
    assert b"no crash" not in ran.stdout
    assert b"fine" not in ran.stdout


def test_a_secret_the_command_reads_from_the_environment_is_read_so_by_the_repro(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `--token ${{ env.HF_TOKEN }}` was `--token ***` in the repro, which the shell expanded
    # as a glob: the program got the folder's file names.
    import reprospec
    from reprospec.core.runoptions import RunOptions

    token = "hf_" + "Ab1" * 12
    monkeypatch.setenv("HF_TOKEN", token)
    (tmp_path / "secret.py").write_text(
        f"import os, sys\nsys.exit(3 if sys.argv[2] == os.environ['MY_TOK'] == {token!r} else 0)\n"
    )
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: secretline\ncommand: python3 secret.py --token ${{ env.HF_TOKEN }}\n"
        "environment: {env: {MY_TOK: '${{ env.HF_TOKEN }}'}}\nexpect: {outcome: error}\n"
    )
    result = reprospec.run(reprospec.load_spec(spec), RunOptions(out=tmp_path / "out"))
    assert result.cells[0].failure_reproduced
    assert result.standalone is not None
    run = 'MY_TOK="$HF_TOKEN" python3 secret.py --token "$HF_TOKEN"'
    assert result.standalone.run == run
    assert result.standalone.notes[0] == (
        "the spec reads HF_TOKEN from your environment: export it first"
    )
    report = (tmp_path / "out" / "runs" / result.run_id / "report.md").read_text()
    assert f"```sh\n{run}\n```" in report
    assert token not in report
    ran = subprocess.run(["bash", "-c", run], cwd=tmp_path, timeout=60, env=dict(os.environ))
    assert ran.returncode == 3


def test_a_secret_inside_a_variables_value_is_read_from_the_variable_it_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `URL: https://me:${{ env.HF_TOKEN }}@db/x` was `URL="$URL"`: a variable the reader
    # was never told to export, empty in their shell, so the repro passed.
    import reprospec
    from reprospec.core.runoptions import RunOptions

    token = "hf_" + "Ab1" * 12
    monkeypatch.setenv("HF_TOKEN", token)
    monkeypatch.delenv("URL", raising=False)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        'reprospec: 1\nname: secretpart\ncommand: python3 -c "import os, sys; '
        "sys.exit(3 if os.environ['URL'] == 'https://me:' + os.environ['HF_TOKEN'] + '@db/x' "
        "else 0)\"\nenvironment: {env: {URL: 'https://me:${{ env.HF_TOKEN }}@db/x'}}\n"
        "expect: {outcome: error}\n"
    )
    result = reprospec.run(reprospec.load_spec(spec), RunOptions(out=tmp_path / "out"))
    assert result.cells[0].failure_reproduced
    assert result.standalone is not None
    assert result.standalone.run.startswith('URL=https://me:"$HF_TOKEN"@db/x python3 -c ')
    assert result.standalone.notes[0] == (
        "the spec reads HF_TOKEN from your environment: export it first"
    )
    ran = subprocess.run(
        ["bash", "-c", result.standalone.run], cwd=tmp_path, timeout=60, env=dict(os.environ)
    )
    assert ran.returncode == 3


def test_a_secret_a_variable_of_its_own_name_wraps_is_read_with_its_prefix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `MY_TOKEN: 'Bearer ${{ env.MY_TOKEN }}'` was `MY_TOKEN="$MY_TOKEN"`: the prefix lost,
    # no note to export it, and the pasted repro passed.
    import reprospec
    from reprospec.core.runoptions import RunOptions

    token = "hf_" + "Zq9" * 12
    monkeypatch.setenv("MY_TOKEN", token)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        'reprospec: 1\nname: bearer\ncommand: python3 -c "import os, sys; '
        "sys.exit(3 if os.environ['MY_TOKEN'].startswith('Bearer hf_') else 0)\"\n"
        "environment: {env: {MY_TOKEN: 'Bearer ${{ env.MY_TOKEN }}'}}\n"
        "expect: {outcome: error}\n"
    )
    result = reprospec.run(reprospec.load_spec(spec), RunOptions(out=tmp_path / "out"))
    assert result.cells[0].failure_reproduced
    assert result.standalone is not None
    assert "the spec reads MY_TOKEN from your environment: export it first" in (
        result.standalone.notes
    )
    ran = subprocess.run(
        ["bash", "-c", result.standalone.run], cwd=tmp_path, timeout=60, env=dict(os.environ)
    )
    assert ran.returncode == 3, result.standalone.run
    assert token not in result.standalone.run


@pytest.mark.parametrize(
    "line",
    ["if [ -f x.txt ]; then exit 3; fi", "while true; do exit 3; done", "true; ! exit 3"],
)
def test_an_exit_after_a_reserved_word_is_wrapped_too(tmp_path: Path, line: str) -> None:
    # `then exit 3` was pasted as it is: it closed the reader's shell.
    import reprospec
    from reprospec.core.runoptions import RunOptions

    (tmp_path / "x.txt").write_text("")
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        f"reprospec: 1\nname: leaves\ncommand: {json.dumps(line)}\nexpect: {{outcome: error}}\n"
    )
    result = reprospec.run(reprospec.load_spec(spec), RunOptions(out=tmp_path / "out"))
    assert result.standalone is not None
    assert result.standalone.run == f"sh -c {shlex.quote(line)}"
