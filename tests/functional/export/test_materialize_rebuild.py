"""A bundle's run.sh reuses an image of its tag only where that image was built from the same
content (a real run.sh; a `docker` of the test's own records what it is asked to build)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from reprospec.core.runoptions import RunOptions
from reprospec.export.materialize import write_bundle
from reprospec.plan.run import plan_run
from reprospec.spec.load import load_spec

# `image inspect` answers the label of the image the tag names (none before a build), `build`
# records its label, as the engine keeps one image per tag.
FAKE_DOCKER = """#!/bin/sh
case "$1" in
  image) cat "$FAKE_LABEL" 2>/dev/null; exit 0 ;;
  build)
    echo build >>"$FAKE_LOG"
    for word in "$@"; do
      case "$word" in org.reprospec.bundle=*) printf '%s' "${word#*=}" >"$FAKE_LABEL" ;; esac
    done
    exit 0 ;;
esac
exit 0
"""


def _bundle(tmp_path: Path, marker: str, name: str) -> Path:
    app = tmp_path / "app"
    app.mkdir(exist_ok=True)
    (app / "marker.txt").write_text(marker)
    (app / "Dockerfile").write_text("FROM reprospec-base:bookworm\nCOPY marker.txt /opt/\n")
    (app / "spec.yaml").write_text(
        "reprospec: 1\nname: own-copy\nenvironment: {dockerfile: Dockerfile}\n"
        "command: cat /opt/marker.txt\n"
    )
    spec = load_spec(app / "spec.yaml")
    return write_bundle(spec, plan_run(spec, RunOptions()).attempts, tmp_path / name).root


def test_a_bundle_written_again_after_its_context_changed_builds_its_image_again(
    tmp_path: Path,
) -> None:
    # The tag is reprospec-bundle/NAME:1 whatever the content: run.sh found the image an
    # earlier bundle of the spec had built and ran it, the old Dockerfile's or context's.
    first = _bundle(tmp_path, "one", "first")
    second = _bundle(tmp_path, "two", "second")
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "docker").write_text(FAKE_DOCKER)
    (fake / "docker").chmod(0o755)
    log = tmp_path / "builds"
    env = {
        **{k: v for k, v in os.environ.items() if k != "BASE"},
        "PATH": f"{fake}{os.pathsep}{os.environ['PATH']}",
        "FAKE_LABEL": str(tmp_path / "label"),
        "FAKE_LOG": str(log),
    }

    def builds(root: Path, **more: str) -> int:
        subprocess.run(
            ["bash", str(root / "run.sh")], env={**env, **more}, capture_output=True, timeout=60
        )
        return len(log.read_text().splitlines()) if log.exists() else 0

    assert builds(first) == 1
    assert builds(first) == 1, "the same content: the image is reused"
    assert builds(second) == 2, "another context: built again"
    assert builds(second, BASE="debian:bookworm") == 3, "another BASE: built again"
