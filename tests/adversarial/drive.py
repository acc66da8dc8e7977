"""Child process of the adversarial tests: `validate`, `plan` and `run` one spec, print JSON.

Runs the real CLI entry point (`reprospec.cli.main`) three times in one process,
so that the parent can measure the three together (peak RSS, CPU time) with wait4.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys

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


if __name__ == "__main__":
    json.dump(drive(sys.argv[1], sys.argv[2]), sys.stdout)
