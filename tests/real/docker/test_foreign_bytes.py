"""Bytes that are not UTF-8 on the docker runner: a program's output arrives as it was
written; a word or a variable the engine's API (JSON) cannot carry is the attempt's
infra-error, never a run of other bytes."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("docker", reason="skipped: the docker package is not installed")

from reprospec.runners.docker import image
from reprospec.runners.docker.runner import DockerRunner
from tests.support.docker import CLIENT, make_plan, needs_engine, py, require_image

GARBAGE = b"out \x80\xff \xe2\x82\n"


@pytest.fixture(scope="module")
def runner() -> DockerRunner:
    require_image(CLIENT, image.DEFAULT_IMAGE)
    return DockerRunner(client=CLIENT)


@needs_engine
def test_output_that_is_not_utf8_arrives_as_written(runner: DockerRunner, tmp_path: Path) -> None:
    code = f"import sys; sys.stdout.buffer.write({GARBAGE!r}); sys.stderr.buffer.write(b'\\xfe')"
    execution = runner.run(make_plan(py(code), tmp_path), tmp_path / "a")
    assert execution.infra_error is None
    assert execution.returncode == 0
    assert execution.stdout_path.read_bytes() == GARBAGE
    assert execution.stderr_path.read_bytes() == b"\xfe"


@needs_engine
def test_a_variable_that_is_not_utf8_is_an_infra_error_not_other_bytes(
    runner: DockerRunner, tmp_path: Path
) -> None:
    # `X: ${{ env.X }}` of X=$'\x80z' reached the program as b'\xef\xbf\xbdz' (U+FFFD, the
    # API's JSON), which failed in the container where it passed on the local runner.
    code = "import os, sys; sys.exit(os.environb[b'X'] != b'\\x80z')"
    plan = make_plan(py(code), tmp_path, env={"X": "\udc80z"})
    execution = runner.run(plan, tmp_path / "a")
    assert execution.infra_error is not None
    assert "environment.env.X is not UTF-8 (byte 0x80)" in execution.infra_error
    word = runner.run(make_plan([*py("pass"), "\udcffz"], tmp_path), tmp_path / "b")
    assert word.infra_error is not None
    assert "the command's word 3 is not UTF-8 (byte 0xff)" in word.infra_error
