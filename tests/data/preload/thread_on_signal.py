"""Starts a thread when sent SIGUSR2: a server that was safe to fork, and no longer is."""

import signal
import threading

_stop = threading.Event()


def _start(_signum: int, _frame: object) -> None:
    threading.Thread(target=_stop.wait, daemon=True).start()


signal.signal(signal.SIGUSR2, _start)
