"""A workdir file whose name holds a newline, carried by materialize and bundle: their
READMEs list it on one line, the newline written out, and carry the file itself."""

from __future__ import annotations

import tarfile
from pathlib import Path

from tests.support.cli import Cli

SPEC = """\
reprospec: 1
name: names
files: ["new\\nline.txt"]
command: python -c "import sys; open('new\\\\nline.txt').read(); sys.exit(3)"
expect: {outcome: error}
"""


def test_a_name_with_a_newline_is_one_line_of_each_readme(cli: Cli, tmp_path: Path) -> None:
    # `- `new` and `line.txt`` on two lines: a broken Markdown list item.
    (tmp_path / "new\nline.txt").write_text("x", encoding="utf-8")
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    made = cli("materialize", str(spec), "-o", str(tmp_path / "m"))
    assert made.code == 0, made.stderr
    assert (tmp_path / "m" / "workdirs" / "1" / "new\nline.txt").is_file()
    assert "- `new\\x0aline.txt`\n" in (tmp_path / "m" / "README.md").read_text(encoding="utf-8")
    ran = cli("run", str(spec))
    assert ran.code == 0, ran.stderr
    archive = tmp_path / "b.tar.gz"
    packed = cli("bundle", ran.latest_run().name, "-o", str(archive), "--out", str(ran.out))
    assert packed.code == 0, packed.stderr
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        (readme,) = (name for name in names if name.endswith("/README.md"))
        handle = tar.extractfile(readme)
        assert handle is not None
        assert "- `tree/new\\x0aline.txt`\n" in handle.read().decode("utf-8")
        assert any(name.endswith("/tree/new\nline.txt") for name in names)
