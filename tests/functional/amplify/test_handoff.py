"""The amplify -> isolate/minimize hand-off: `--amplify DIR` on real programs.

A search run under an amplification works on the cell amplify measured, where its
perturbation is known to raise the rate; another cell is refused, not searched.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import Cli, CliResult


def _amplify(cli: Cli, spec: Path, out: Path, *args: str) -> tuple[CliResult, dict[str, object]]:
    result = cli("amplify", str(spec), "--out", str(out), "--format", "json", *args, timeout=300)
    assert result.code in (0, 1), result.stderr
    data: dict[str, object] = json.loads(result.stdout)
    return result, data


# Modes a and b fail under a short switch interval, c passes: amplify finds it at once.
SWITCHED = """\
reprospec: 1
name: two-fail
command: python -c "import sys; sys.exit(0) if sys.argv[1] == 'c' or sys.getswitchinterval() > 1e-3 else (_ for _ in ()).throw(RuntimeError(sys.argv[1]))" ${{ matrix.mode }}
matrix: {mode: [a, b, c]}
run: {timeout: 30s}
expect:
  outcome: error
  exception: RuntimeError
  cases:
    - {when: {mode: c}, outcome: pass}
"""  # noqa: E501


def test_isolate_and_minimize_under_an_amplification_take_its_cell(
    cli: Cli, tmp_path: Path
) -> None:
    """`amplify -m mode=b`, then `isolate --amplify DIR` took mode=a (the first cell expected
    to fail) and said it was amplified, of a cell whose rate nobody measured; `-m mode=a`
    did the same (minimize's and bisect's too). The cell amplify measured is taken, and one
    left out is refused."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(SWITCHED)
    out = tmp_path / "out"
    _, found = _amplify(
        cli, spec, out, "-m", "mode=b", "--try", "switch_interval=1e-6", "--budget", "20"
    )
    assert found["status"] == "amplified", found["sentence"]
    folder = str(found["folder"])
    isolated = cli(
        "isolate", str(spec), "--out", str(out), "--amplify", folder, "--budget", "20",
        "--format", "json",
    )  # fmt: skip
    assert isolated.code == 0, isolated.stderr
    assert json.loads(isolated.stdout)["failing"]["cell"] == "mode=b"
    assert f"cell mode=b: the cell --amplify {folder} measured" in isolated.stderr
    minimized = cli(
        "minimize", str(spec), "--out", str(out), "--amplify", folder, "--budget", "12",
        "--format", "json",
    )  # fmt: skip
    assert json.loads(minimized.stdout)["cell"] == "mode=b", minimized.stderr
    runs = len(list((out / "runs").iterdir()))
    for verb, choose in (("isolate", "-m"), ("minimize", "-m"), ("isolate", "--failing")):
        refused = cli(verb, str(spec), "--out", str(out), "--amplify", folder, choose, "mode=a")
        assert refused.code == 2, refused.stderr
        assert refused.stderr.startswith(
            f"reprospec: --amplify {folder}: the amplification measured cell mode=b, "
        ), refused.stderr
    # bisect too, before any environment is built or the index asked.
    bisect = ("--package", "nosuchpkg", "--good", "1.0", "--bad", "2.0", "--runner", "venv")
    refused = cli(
        "bisect", str(spec), "--out", str(out), "--amplify", folder, "-m", "mode=a", *bisect
    )
    assert refused.code == 2, refused.stderr
    assert "measured cell mode=b, which -m mode=a leaves out: " in refused.stderr
    assert "(bisect then works on cell mode=b)" in refused.stderr
    # A --set that leaves the spec without the cell amplify measured.
    gone = cli(
        "isolate", str(spec), "--out", str(out), "--amplify", folder, "--set", "matrix.mode=[a, c]"
    )
    assert gone.code == 2, gone.stderr
    assert "which " + str(spec) + " as given has not (its cells: mode=a, mode=c)" in gone.stderr
    assert len(list((out / "runs").iterdir())) == runs  # refused before anything ran
