"""Record real DataLoader worker-crash stderr into tests/data/recorded/ (run by hand).

Each variant runs several times; every distinct shape of its exception lines is
kept once, so the tests see the run-to-run variety the classifier must handle.
Usage: python tests/data/outcome_children/record_dataloader.py [RUNS]
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RECORDED = HERE.parent / "recorded"
CHILD = HERE / "dataloader_crash.py"

# name -> (child args, signal the classifier must report)
VARIANTS = {
    "segv": (["segv"], "SIGSEGV"),
    "segv-large": (["segv", "1", "100000", "9"], "SIGSEGV"),
    "bus": (["bus"], "SIGBUS"),
    "fpe": (["fpe"], "SIGFPE"),
    "abort": (["abort"], "SIGABRT"),
}
EXC_LINE = re.compile(rb"^[A-Za-z_][\w.]*(Error|Exception|Interrupt)\b.*$", re.M)


def shape(stderr: bytes) -> str:
    """The exception lines with numbers removed: what varies between runs."""
    lines = [re.sub(rb"\d+", b"N", m.group(0)).decode() for m in EXC_LINE.finditer(stderr)]
    return " | ".join(lines) or "(no exception line)"


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    manifest_path = RECORDED / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    env = {**os.environ, "PYTHONFAULTHANDLER": "1"}
    for name, (args, signal_name) in VARIANTS.items():
        seen = {v["shape"] for v in manifest.values() if v["variant"] == name}
        for _ in range(runs):
            proc = subprocess.run(
                [sys.executable, str(CHILD), *args], capture_output=True, env=env, timeout=120
            )
            key = shape(proc.stderr)
            if key in seen:
                continue
            seen.add(key)
            n = sum(v["variant"] == name for v in manifest.values()) + 1
            file = f"dataloader-{name}-{n}.stderr.log"
            (RECORDED / file).write_bytes(proc.stderr)
            manifest[file] = {
                "variant": name,
                "argv": ["python", "dataloader_crash.py", *args],
                "returncode": proc.returncode,
                "signal": signal_name,
                "shape": key,
            }
            print(f"{file}: rc={proc.returncode} {key}")
    manifest_path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
