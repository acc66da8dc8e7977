"""Takes a lock it already holds while being imported, when asked to fork: a real deadlock."""

import os
import threading

_LOCK = threading.Lock()
if os.environ.get("PLUGIN_START_METHOD") == "fork":
    _LOCK.acquire()
    _LOCK.acquire()  # never returns


def process(items: int) -> str:
    return f"processed {items} item(s)"
