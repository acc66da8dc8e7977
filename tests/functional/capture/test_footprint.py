"""What capture reads of the interpreter that ran a command: its packages, in a child."""

from __future__ import annotations

import re
import sys

from reprospec.capture.footprint import pins


def test_distributions_are_pinned_without_what_they_require() -> None:
    # yaml is PyYAML; regex and rich are reprospec's own dependencies, imported here. Read
    # in a child of the interpreter given (reprospec_harness.pins), as capture reads them.
    pinned = pins(["yaml", "json", "rich.console", "reprospec.cli", "_ctypes"], sys.executable)
    names = [pin.split("==")[0].lower() for pin in pinned.packages]
    assert names == ["pyyaml", "rich"]
    assert all(re.match(r"^[\w.-]+==\S+$", pin) for pin in pinned.packages)
    assert pinned.python == f"{sys.version_info.major}.{sys.version_info.minor}"
    missing = pins(["yaml"], "/nonexistent/python")
    assert (missing.packages, missing.python) == ((), "")
    assert "/nonexistent/python did not run" in missing.error
