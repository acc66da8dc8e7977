"""A run of a spec held in a markdown file (an issue.md's fenced block) bundles into an
archive that reruns: the bundle holds the spec's YAML, so it is named as YAML, where it
kept issue.md's name and its rerun refused it ("no ```yaml block"). Real runs."""

from __future__ import annotations

import tarfile
from pathlib import Path

from tests.support.cli import Cli

ISSUE = """\
# It crashes

Seen on my machine.

```yaml
reprospec: 1
name: md-bundle
command: python boom.py
expect: {outcome: error, exception: RuntimeError}
```
"""


def test_a_bundle_of_a_run_of_a_markdown_spec_reruns_elsewhere(tmp_path: Path, cli: Cli) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "issue.md").write_text(ISSUE)
    (project / "boom.py").write_text("raise RuntimeError('boom')\n")
    store = tmp_path / "store"
    ran = cli("run", "issue.md", "--yes", "--out", str(store), cwd=project)
    assert ran.code == 0, ran.stderr
    archive = tmp_path / "issue.tar.gz"
    packed = cli("bundle", "latest", "-o", str(archive), "--out", str(store), cwd=project)
    assert packed.code == 0, packed.stderr
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert any(name.endswith("/tree/issue.md.yaml") for name in names), names
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    reran = cli("run", str(archive), "--yes", "--out", str(tmp_path / "again"), cwd=elsewhere)
    assert reran.code == 0, reran.stderr
    assert "1/1 cell reproduced" in reran.stdout
