"""An attempt's files are read once: classify, judge and the report work from one `Evidence`."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.support.cli import ROOT

SPEC = """\
reprospec: 1
name: evidence
matrix:
  mode: [segv, hang]
command: >-
  python -c "import os, signal, sys, time;
  print('working', flush=True); print('about to', sys.argv[1], file=sys.stderr, flush=True);
  os.kill(os.getpid(), signal.SIGSEGV) if sys.argv[1] == 'segv' else time.sleep(60)"
  ${{ matrix.mode }}
run: {timeout: 6s}  # the hang cell's bound; room for the segv cell to start on a loaded machine
expect:
  outcome: crash
  message: about to
  cases:
    - when: {mode: hang}
      outcome: hang
"""


# The engine in a child of its own: an audit hook cannot be removed once added.
CHILD = textwrap.dedent(
    """
    import json, os, sys
    from collections import Counter
    from pathlib import Path
    import reprospec

    out = Path(sys.argv[2]).resolve()
    FILES = ("stdout.log", "stderr.log", "events.jsonl", "stack.txt", "env.json")
    reads = Counter()

    def hook(event, args):
        if event != "open" or not isinstance(args[0], (str, bytes, os.PathLike)):
            return
        path = os.path.abspath(os.fsdecode(args[0]))
        name = os.path.basename(path)
        # The files of an attempt (the runner's own stack gathering reads stack-PID.txt).
        if not path.startswith(str(out / "runs")) or name not in FILES:
            return
        mode, flags = args[1], args[2]
        writes = any(c in mode for c in "wax+") if isinstance(mode, str) else bool(
            isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR))
        if not writes:
            reads[name] += 1

    spec = reprospec.load_spec(sys.argv[1])
    sys.addaudithook(hook)
    result = reprospec.run(spec, reprospec.RunOptions(out=out))
    report = reprospec.render(result, "md")
    print(json.dumps({
        "reads": reads,
        "verdicts": [c.verdict for c in result.cells],
        "report_has_excerpt": "about to segv" in report,
        "report_has_stack": "<details><summary>Stacks</summary>" in report,
    }))
    """
)


def test_each_attempt_file_is_read_once_by_the_engine(tmp_path: Path) -> None:
    spec = tmp_path / "evidence.yaml"
    spec.write_text(SPEC)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(spec), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["verdicts"] == ["reproduced", "reproduced"]  # the message came from the evidence
    # Two attempts: each log and events file read once each; the hang's stack dump once.
    assert seen["reads"] == {"stdout.log": 2, "stderr.log": 2, "events.jsonl": 2, "stack.txt": 1}
    assert seen["report_has_excerpt"]
    assert seen["report_has_stack"]
