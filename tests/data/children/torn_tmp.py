"""A program that trusts a cache file in the temporary folder, as real ones do.

argv[1]: the cache's file name. The first run finds no cache, writes half of one
(a torn write: the JSON is cut off) and exits 0; a run that finds the torn cache
dies parsing it (exit 1, json.JSONDecodeError), as the incident did.
"""

import json
import os
import sys
import tempfile
from pathlib import Path

path = Path(tempfile.gettempdir()) / sys.argv[1]
print(f"cache: {path}", flush=True)
if path.exists():
    with path.open() as fh:
        json.load(fh)
else:
    with path.open("w") as fh:
        fh.write('{"kernels": [1, 2, ')  # the writer died here
# A cache folder of its own too, where the engine gave it one (a private XDG_CACHE_HOME);
# with the shared TMPDIR asked back there is none, and nothing is made outside the test's.
if os.environ.get("XDG_CACHE_HOME"):
    (Path(os.environ["XDG_CACHE_HOME"]) / "tool").mkdir(parents=True, exist_ok=True)
