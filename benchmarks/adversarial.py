"""Wall time, CPU time and peak RSS of `validate` + `plan` + `run` on each adversarial spec.

    python benchmarks/adversarial.py [--root CHECKOUT]

`--root` picks the reprospec checkout the child imports (default: this one), so
the same corpus can be measured against another branch. A spec that does not
exit 2 on all three verbs, or that ran its command, is flagged.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
SPECS = HERE / "tests" / "adversarial" / "specs"
DRIVER = HERE / "tests" / "adversarial" / "drive.py"


def measure(spec: Path, root: Path, limit_s: float) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shutil.copy(spec, work / spec.name)
        env = {**os.environ, "PYTHONPATH": str(root), "NO_COLOR": "1"}
        begin = time.monotonic()
        with (work / ".out").open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, str(DRIVER), spec.name, str(work / "out")],
                cwd=work,
                env=env,
                stdout=out,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            os.killpg(proc.pid, signal.SIGKILL)

        timer = threading.Timer(limit_s, kill)
        timer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - begin
        codes: object = "killed" if killed.is_set() else f"exit {proc.returncode}"
        if proc.returncode == 0:
            results = json.loads((work / ".out").read_text())
            codes = [results[v]["code"] for v in ("validate", "plan", "run")]
        return {
            "spec": spec.name,
            "codes": codes,
            "wall_s": round(wall, 2),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "rss_mb": usage.ru_maxrss // 1024,
            "executed": (work / "EXECUTED").exists(),
        }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", type=Path, default=HERE)
    parser.add_argument("--limit", type=float, default=60.0, help="kill a child after this")
    args = parser.parse_args()
    rows = [measure(spec, args.root, args.limit) for spec in sorted(SPECS.iterdir())]
    bad = [r for r in rows if r["codes"] != [2, 2, 2] or r["executed"]]
    for row in rows:
        flag = "" if row not in bad else "   <-- not refused"
        print(
            f"{row['spec']:45} {row['codes']!s:14} wall {row['wall_s']:6}s "
            f"cpu {row['cpu_s']:6}s rss {row['rss_mb']:5} MB{flag}"
        )
    print(
        f"{len(rows)} specs: {len(rows) - len(bad)} refused with exit 2 by all three verbs; "
        f"max wall {max(r['wall_s'] for r in rows)}s, max cpu {max(r['cpu_s'] for r in rows)}s, "
        f"max rss {max(r['rss_mb'] for r in rows)} MB"
    )


if __name__ == "__main__":
    main()
