"""In a container, too, a shell told to `exit 139` exits with it of its own (`error` exit
139), and a shell's 139 for a process that died of SIGSEGV stays a crash (shellexit.py,
classify.py rule 4): the command's words and the workdir's scripts are read the same, an
`exit 139` counting only where they run no program."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.docker
pytest.importorskip("docker", reason="skipped: the docker package is not installed")

from reprospec.runners.docker import image  # noqa: E402
from tests.support.cli import Cli  # noqa: E402
from tests.support.docker import CLIENT, needs_engine, require_image  # noqa: E402


@needs_engine
def test_a_shells_own_exit_and_a_real_death_in_a_container(cli: Cli, tmp_path: Path) -> None:
    require_image(CLIENT, image.DEFAULT_IMAGE)
    ends = tmp_path / "ends.sh"
    # No program but a shell before the exit: a script that runs one may pass a death on.
    ends.write_text("#!/bin/sh\nsh -c : > /dev/null\nexit 139\n")
    ends.chmod(0o755)
    spec = tmp_path / "shexit.yaml"
    spec.write_text(
        "reprospec: 1\n"
        "name: shexit\n"
        f"environment: {{workdir: {tmp_path}}}\n"
        "matrix:\n"
        "  c: [\"sh -c 'exit 139'\", ./ends.sh, \"sh -c 'kill -SEGV $$'; exit $?\"]\n"
        "command: ${{ matrix.c }}\n"
        "run: {timeout: 60s}\n"
    )
    result = cli("run", str(spec), "--runner", "docker", "--observe")
    assert result.code == 0, result.stdout + result.stderr
    outcomes = [
        (o["kind"], o["exit_code"], o["signal"])
        for o in (c["attempts"][0]["outcome"] for c in result.results()["cells"])
    ]
    assert outcomes == [("error", 139, None), ("error", 139, None), ("crash", None, "SIGSEGV")]
