"""isolate's sides are checked before anything runs: a field set on one side only that the
spec refuses is said at once, naming the option typed. Real isolate runs (the CLI)."""

from __future__ import annotations

from pathlib import Path

from tests.functional.commands.test_isolate import isolate


def test_a_sides_bad_field_is_refused_before_any_attempt(tmp_path: Path) -> None:
    # It was refused as that side's first probe loaded it: after the matrix run and the
    # failing side's attempts (a 5-minute attempt, then the typo), and named `--set`.
    marker = tmp_path / "ran"
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "reprospec: 1\n"
        "name: sides\n"
        "matrix: {n: [1, 2]}\n"
        f"command: touch {marker}; kill -SEGV $$\n"
        "expect: {outcome: crash, signal: SIGSEGV}\n"
    )
    for option in ("--passing-set", "--failing-set"):
        code, _, stderr = isolate(tmp_path, option, "run.timeout=abc", spec=spec)
        assert code == 2, stderr
        assert "run.timeout: expected a duration" in stderr
        assert f'(from {option} run.timeout="abc")' in stderr
        assert "Traceback" not in stderr
        assert not marker.exists()


def test_a_key_only_include_brings_is_isolated_as_absent(tmp_path: Path) -> None:
    # The failing cell has `note` (its include entry), the passing cell has not: the mixes
    # without it ran a one-cell matrix where `${{ matrix.note }}` was an unknown axis, and
    # isolate stopped halfway with a spec error (exit 2) under a `--set` no one typed.
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "reprospec: 1\n"
        "name: include-key\n"
        "matrix:\n"
        "  a: [0, 1]\n"
        "  b: [0, 1]\n"
        "  include: [{a: 1, b: 1, note: extra}]\n"
        'command: test "${{ matrix.a }}${{ matrix.b }}" != 11 || kill -SEGV $$; '
        "echo ${{ matrix.note }}\n"
        "expect:\n"
        "  outcome: crash\n"
        "  signal: SIGSEGV\n"
        "  cases: [{when: {note: null}, outcome: pass}]\n"
    )
    code, data, stderr = isolate(tmp_path, spec=spec)
    assert code == 0, stderr
    assert [(c["path"], c["value"]) for c in data["culprits"]] == [
        ("matrix.a", 1),
        ("matrix.b", 1),
    ]
    assert "Traceback" not in stderr
