"""Write tests/durations.json, the record tests/support/schedule.py orders the suite by,
from the JUnit XML of a full run: seconds per module file, the modules of 5 s and more.

    .venv/bin/pytest -n 2 --dist worksteal tests --junitxml=/tmp/suite.xml
    .venv/bin/python scripts/test_durations.py /tmp/suite.xml

Take it from a run on a quiet machine: the order only needs which modules are long.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KEEP_S = 5.0


def module_file(classname: str) -> str | None:
    """`tests.functional.test_x` (or `...test_x.TestY`) -> `tests/functional/test_x.py`."""
    parts = classname.split(".")
    for end in range(len(parts), 0, -1):
        candidate = "/".join(parts[:end]) + ".py"
        if (ROOT / candidate).is_file():
            return candidate
    return None


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    seconds: dict[str, float] = {}
    for case in ET.parse(argv[0]).getroot().iter("testcase"):
        module = module_file(case.get("classname", ""))
        if module is not None:
            seconds[module] = seconds.get(module, 0.0) + float(case.get("time", "0"))
    kept = {
        m: round(s, 1) for m, s in sorted(seconds.items(), key=lambda kv: -kv[1]) if s >= KEEP_S
    }
    target = ROOT / "tests" / "durations.json"
    target.write_text(json.dumps(kept, indent=1) + "\n", encoding="utf-8")
    print(f"{target.relative_to(ROOT)}: {len(kept)} modules of {KEEP_S:g} s and more")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
