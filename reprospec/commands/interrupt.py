"""How a verb that drives runs is stopped: SIGTERM (CI cancelling a job, a Slurm time limit)
and Ctrl-C alike, with the engine told first.

`run`, `isolate` and every verb that runs attempts install it before the first attempt.
"""

from __future__ import annotations

import signal
import threading


def install_stop_handlers(cancel: threading.Event) -> None:
    """SIGTERM and Ctrl-C stop the verb: partial results, exit 130. `cancel` is set first,
    in the handler, so an attempt that the same signal killed is known to have been
    stopped, not to have crashed."""

    def handler(_signum: int, _frame: object) -> None:
        cancel.set()
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)
