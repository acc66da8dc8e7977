"""What a run says of the spec's `environment.python` and `packages` that it did not apply."""

from __future__ import annotations

import importlib.metadata
import platform
import textwrap
from pathlib import Path

from tests.support.cli import Cli

PYYAML = importlib.metadata.version("pyyaml")


def test_a_local_run_on_another_python_warns_and_its_report_says_checked(
    cli: Cli, tmp_path: Path
) -> None:
    """A local run on 3.11.7 of a spec naming 3.10 said nothing on the console, and
    its report said "the run gave the cell Python 3.10, packages ..." (it gave neither)."""
    ran = platform.python_version()
    wanted = "3.1" if not ran.startswith("3.1.") else "3.2"  # never the version that runs
    spec = tmp_path / "env.yaml"
    spec.write_text(
        textwrap.dedent(f"""\
        reprospec: 1
        name: other-python
        environment:
          python: "{wanted}"
          packages: ["pyyaml=={PYYAML}"]
        command: python -c "pass"
        expect: {{outcome: pass}}
        """)
    )
    done = cli("run", str(spec))
    assert done.code == 0, done.stderr
    assert f"reprospec: warning: the spec names Python {wanted}; this run had {ran}" in done.stderr
    report = (done.latest_run() / "report.md").read_text()
    assert "the run gave the cell" not in report
    assert (
        f"> the run checked that its interpreter had packages pyyaml=={PYYAML} (the local "
        "runner installs none)" in report
    )
    assert f"> the spec names Python {wanted}; this run had {ran}\n" in report


def test_a_local_run_on_the_named_python_does_not_warn(cli: Cli, tmp_path: Path) -> None:
    wanted = ".".join(platform.python_version_tuple()[:2])
    spec = tmp_path / "env.yaml"
    spec.write_text(
        f'reprospec: 1\nname: same\nenvironment: {{python: "{wanted}"}}\n'
        'command: python -c "pass"\nexpect: {outcome: pass}\n'
    )
    done = cli("run", str(spec))
    assert done.code == 0, done.stderr
    assert "the spec names Python" not in done.stderr
    report = (done.latest_run() / "report.md").read_text()
    assert f"> the spec names Python {wanted}; the local runner does not choose" in report
