"""Child process of the adversarial tests: `validate`, `plan` and `run` one spec, print JSON.

Runs the real CLI entry point (`reprospec.cli.main`) three times in one process,
so that the parent can measure the three together (peak RSS, CPU time) with wait4.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

from reprospec.cli import main


def drive(spec: str, out: str) -> dict[str, dict[str, object]]:
    results: dict[str, dict[str, object]] = {}
    for argv in (["validate", spec], ["plan", spec], ["run", spec, "--out", out]):
        err, stdout = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(stdout):
            try:
                code: object = main(argv)
            except SystemExit as exc:  # argparse
                code = exc.code
        results[argv[0]] = {"code": code, "stderr": err.getvalue(), "stdout": stdout.getvalue()}
    return results


def peak_rss_bytes() -> int:
    """This process's own peak RSS (VmHWM).

    Not wait4's ru_maxrss: on Linux that also counts the pages the child shared with its
    parent between fork and exec, so a big pytest process would be charged to the child.
    """
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


if __name__ == "__main__":
    results: dict[str, object] = dict(drive(sys.argv[1], sys.argv[2]))
    results["peak_rss"] = peak_rss_bytes()
    json.dump(results, sys.stdout)
