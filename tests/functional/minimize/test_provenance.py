"""`reprospec minimize` of a spec capture wrote: minimized.yaml's header says where it came
from, the search and the spec, not capture's command, whose option the minimized command
no longer has (report._commented)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.cli import ROOT, json_verb

PROGRAM = """\
import argparse
p = argparse.ArgumentParser()
p.add_argument("--records", type=int, default=1)
a = p.parse_args()
raise ValueError("bad record")
"""


def test_a_minimized_capture_says_minimize_wrote_it_not_capture(tmp_path: Path) -> None:
    # minimized.yaml began `# Written by this command ...: reprospec capture -- python
    # job.py --records 5` over a command without --records.
    work = tmp_path / "work"
    work.mkdir()
    (work / "job.py").write_text(PROGRAM, encoding="utf-8")
    out = str(tmp_path / "out")
    capture = [sys.executable, "-m", "reprospec", "capture", "--no-verify", "-o", "job.yaml"]
    ran = subprocess.run(
        [*capture, "--out", out, "--", "python", "job.py", "--records", "5"],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "#   reprospec capture -- python job.py --records 5" in (work / "job.yaml").read_text()
    result = tmp_path / "result"
    argv = [
        sys.executable, "-m", "reprospec", "minimize", str(work / "job.yaml"),
        "--format", "json", "--out", out, "-o", str(result), "--budget", "20",
    ]  # fmt: skip
    code, data, stderr = json_verb(argv, timeout=300)
    assert code == 0, stderr
    assert data["command_after"] == "python job.py", data
    text = (result / "minimized.yaml").read_text(encoding="utf-8")
    assert "reprospec capture" not in text, text
    assert text.startswith(
        f"# Written by `reprospec minimize` (search {data['id']}) from {work / 'job.yaml'},\n"
        f"# its cell {data['cell']}; the original's capture command is in that spec.\n"
    ), text
