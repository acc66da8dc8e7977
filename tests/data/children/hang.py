"""Hangs in deep_hang() on the main thread while a second thread waits in other_thread_wait()."""

import os
import sys
import threading
import time


def other_thread_wait(event):
    event.wait()


def deep_hang(ready):
    with open(ready, "w") as f:
        f.write(str(os.getpid()))
    while True:
        time.sleep(0.05)


if __name__ == "__main__":
    threading.Thread(target=other_thread_wait, args=(threading.Event(),), daemon=True).start()
    print("hanging", flush=True)
    deep_hang(sys.argv[1])
