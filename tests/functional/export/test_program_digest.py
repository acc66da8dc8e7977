"""The program a search's id hashes: its sources, from every cell's workdir."""

from __future__ import annotations

from pathlib import Path

from reprospec import api
from reprospec.export.tree import program_digest
from tests.support.files import written


def test_the_digest_follows_the_sources_of_every_workdir_and_not_what_the_command_writes(
    tmp_path: Path,
) -> None:
    # Cells with absolute workdirs of their own: through the bundle's tree this was refused
    # ("a bundle cannot place them"), and isolate with it. A log the command names changed
    # the id at every run, so an interrupted search started over instead of resuming.
    for name in ("a", "b"):
        written(tmp_path / name, {"app.py": "import helper\n", "helper.py": "X = 1\n"})
    spec = (
        written(
            tmp_path,
            {
                "spec.yaml": "reprospec: 1\nname: digest\nmatrix: {d: [a, b]}\n"
                f"environment: {{workdir: '{tmp_path}/${{{{ matrix.d }}}}'}}\n"
                "command: python app.py --log run.log\nexpect: {outcome: error}\n"
            },
        )
        / "spec.yaml"
    )
    attempts = api.plan_run(api.load_spec(spec)).attempts.variants().attempts
    before = program_digest(attempts)
    (tmp_path / "a" / "run.log").write_text("a log the run wrote\n")
    assert program_digest(attempts) == before
    (tmp_path / "b" / "helper.py").write_text("X = 2  # the bug fixed\n")
    assert program_digest(attempts) != before
