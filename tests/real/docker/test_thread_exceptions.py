"""In a container, too, the exception that ended the process decides the verdict.

A program whose threads die of an exception as its main thread does prints their
tracebacks and the main thread's on one stderr at once, interleaved. The local runner keeps
the program's own record of how its main thread ended (the stackdump sitecustomize's
raised-PID.txt, process/stacks.py keep_program_raised); the docker runner kept none, and
read the exception from stderr: a thread's TypeError, or none, in some attempts of a program
that dies of its RuntimeError every time. Its pids are the container's own: the program is
the command its init (launch.py `--init`) recorded, or the one child of a `/bin/sh -c` root.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.docker
pytest.importorskip("docker", reason="skipped: the docker package is not installed")

from reprospec.runners.docker import image  # noqa: E402
from tests.support.cli import Cli  # noqa: E402
from tests.support.docker import CLIENT, needs_engine, require_image  # noqa: E402
from tests.support.threadexc import PROGRAM, seen  # noqa: E402

REPEAT = 12
ENDED = ("error", "RuntimeError", "main failed", (("KeyError", "cause"), ("RuntimeError", None)))


@needs_engine
@pytest.mark.parametrize(
    ("command", "environment"),
    [
        ("python3 conc.py main", ""),  # the init's child is the program
        ('"cd . && python3 conc.py main"', ""),  # a shell that forks its one program
        # The same under `nice -n 5`, which execs the init (perturb/container.py).
        ('"cd . && python3 conc.py main"', ", perturb: {nice: 5}"),
    ],
)
def test_the_main_threads_exception_decides_in_a_container(
    cli: Cli, tmp_path: Path, command: str, environment: str
) -> None:
    require_image(CLIENT, image.DEFAULT_IMAGE)
    (tmp_path / "conc.py").write_text(PROGRAM)
    spec = tmp_path / "threads.yaml"
    spec.write_text(
        "reprospec: 1\n"
        "name: threads\n"
        f"environment: {{workdir: {tmp_path}{environment}}}\n"
        f"command: {command}\n"
        f"run: {{timeout: 60s, repeat: {REPEAT}}}\n"
        'expect: {outcome: error, exception: RuntimeError, message: "main failed"}\n'
    )
    result = cli("run", str(spec), "--runner", "docker", "-j", "2")
    cell = result.results()["cells"][0]
    assert seen(cell["attempts"]) == {ENDED: REPEAT}, result.stdout
    assert cell["verdict"] == "reproduced"
    assert result.code == 0, result.stdout + result.stderr
    # The program's record is the attempt's, as the local runner keeps it; the other
    # per-process records are gone.
    folders = [result.latest_run() / a["logs"] for a in cell["attempts"]]
    assert len(folders) == REPEAT
    for folder in folders:
        assert (folder / "raised.txt").is_file(), sorted(p.name for p in folder.iterdir())
        assert not list(folder.glob("raised-*.txt")), folder
