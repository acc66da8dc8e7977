"""Hangs in deep_hang() on the main thread while a second thread waits in other_thread_wait()."""

import os
import sys
import threading
import time
from pathlib import Path
from typing import NoReturn


def other_thread_wait(event: threading.Event) -> None:
    event.wait()


def deep_hang(ready: str) -> NoReturn:
    Path(ready).write_text(str(os.getpid()))
    while True:
        time.sleep(0.05)


if __name__ == "__main__":
    threading.Thread(target=other_thread_wait, args=(threading.Event(),), daemon=True).start()
    print("hanging", flush=True)
    deep_hang(sys.argv[1])
